"""QAttention (src/import/onnx_contrib.c) and fuse_qdq_conv's rewrite
of the QDQ Gemm (src/passes/fuse_qdq.c), against onnxruntime 1.22 on the
CPU and the GPU device (lavapipe here), random inputs, whole outputs
(tests/python/qops_ref.py).

Tolerances (stated per case, printed with the measured difference):
- QAttention: 1e-5 of max |y|: its QKV product is exact (MatMulInteger,
  one f32 product, the bias: onnxruntime's arithmetic), the attention after
  it f32 like com.microsoft.Attention's (other summation orders). The
  masked case failed before attn_mask stopped reading the mask's rank
  through a moved pointer.
- The QDQ Gemm of quantize_static (DQ(A), DQ(B const), DQ(bias int32 at
  a_scale * b_scale) -> Gemm -> Q): onnxruntime with its optimizations on
  (its QDQ rewrite runs QGemm) as the reference, bit-exact; the fusion
  report must show the integer form on both devices. With alpha != 1 and a
  bias the Gemm stays f32 (onnxruntime's rewrite scales the bias by alpha
  too: 24 of 32 codes moved): the f32 graph within 1 level.
- An MLP through onnxruntime's quantize_static, QOperator (QGemm,
  QLinearSoftmax) and QDQ: bit-exact (the softmax output's floats).
Skips (exit 77) while rlx is not built."""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qops_ref import (DEVICES, F, NP2ONNX, ONLY, case, compare, model, node, ort_run, qdata, rng,  # noqa: E402
                      run_rlx, scale, start, tmp, zp)

C = start("test_contrib_qattention_qdq")


# ---------------------------------------------------------------- QAttention
def qattention(name, wdt, Bt=2, S=5, D=16, nh=2, mask=False, uni=0, per_col=False):
    """The QKV product is bit-exact; the attention after it is f32 as
    com.microsoft.Attention: tolerance 1e-5 of max |y| (sums in another
    order)."""
    inits = {"w": qdata(wdt, D, 3 * D), "b": rng.uniform(-0.5, 0.5, 3 * D).astype(np.float32), "is": scale(),
             "ws": scale(3 * D) if per_col else scale(), "iz": zp(np.uint8),
             "wz": zp(wdt, 3 * D if per_col else None)}
    feeds = {"x": qdata(np.uint8, Bt, S, D)}
    ins = ["x", "w", "b", "is", "ws", "", "iz", "wz"]
    if mask:
        m = np.ones((Bt, S), np.int32)
        m[0, S - 2:] = 0
        feeds["m"], ins[5] = m, "m"
    case(name, [node("QAttention", ins, ["y"], num_heads=nh, unidirectional=uni)], feeds, {"y": F}, inits, tol=1e-5)


qattention("qattention_u8", np.uint8)
qattention("qattention_s8_mask", np.int8, mask=True)
qattention("qattention_s8_per_col_causal", np.int8, per_col=True, uni=1, nh=4, D=32)


# ---------------------------------------------------------------- the QDQ Gemm of quantize_static
def qdq_gemm(name, adt, bdt, per_col=False, tb=1, alpha=1.0, bias=True, relu=False, integer=True):
    """DQ(A), DQ(B const), DQ(bias int32, scale a_s * b_s) -> Gemm -> Q, as
    quantize_static writes a Linear layer; onnxruntime's QDQ transformer runs
    it as QGemm (the reference, optimizations on), rlx's fuse_qdq_conv as
    integer ops (fusion report)."""
    if ONLY and not name.startswith(ONLY):
        return
    M, K, N = 4, 32, 8
    a_s, b_s = scale(lo=0.01, hi=0.03), scale(N) if per_col else scale()
    inits = {"as": a_s, "az": zp(adt), "b": qdata(bdt, *((N, K) if tb else (K, N))), "bs": b_s,
             "bz": np.zeros(N if per_col else (), bdt), "ys": scale(lo=0.05, hi=0.2), "yz": zp(adt)}
    nodes = [H.make_node("DequantizeLinear", ["a", "as", "az"], ["af"], name="dq_a"),
             H.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], name="dq_b", axis=0 if tb else 1),
             H.make_node("Gemm", ["af", "bf"] + (["cf"] if bias else []), ["g"], name="gemm", transB=tb, alpha=alpha),
             H.make_node("QuantizeLinear", ["gr" if relu else "g", "ys", "yz"], ["y"], name="q")]
    if relu:  # a uint8 y zero point 0 makes the Relu a no-op after Q: it goes with the Gemm
        nodes.insert(-1, H.make_node("Relu", ["g"], ["gr"], name="relu"))
        inits["yz"] = np.array(0, adt)
    if bias:
        inits["c"] = rng.integers(-2000, 2000, N).astype(np.int32)
        inits["cs"] = (a_s * b_s).astype(np.float32)
        inits["cz"] = np.zeros(N if per_col else (), np.int32)
        nodes.insert(2, H.make_node("DequantizeLinear", ["c", "cs", "cz"], ["cf"], name="dq_c", axis=0))
    feeds = {"a": qdata(adt, M, K)}
    path = model(name, nodes, feeds, {"y": NP2ONNX[adt]}, inits, opset=13)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(["y"], feeds)
    # what the unfused f32 graph gives (onnxruntime without its QDQ rewrite)
    f32 = ort_run(path, feeds, ["y"])[0]
    print("%-36s ort    QGemm vs f32 graph: %d of %d codes differ" % (name, int((ref[0] != f32).sum()), f32.size))
    for dev in DEVICES:
        got, out = run_rlx(path, feeds, ["y"], dev, ["--option", "debug.fusion_report=1"])
        if not C.check(got is not None, "%s on %s runs (%s)" % (name, dev, out if got is None else "")):
            continue
        made = "QGemm's integer form" in out
        C.check(made == integer, "%s on %s: fuse_qdq_conv %s the Gemm integer (%s)" %
                (name, dev, "made" if integer else "left", out.strip()[-300:]))
        # left in f32: the f32 graph (onnxruntime without its rewrite) within 1 level
        compare(name, dev, "y", got[0], ref[0] if integer else f32, 0 if integer else 1, 0.0)


qdq_gemm("qdq_gemm_u8s8", np.uint8, np.int8)
qdq_gemm("qdq_gemm_s8s8_per_col", np.int8, np.int8, per_col=True)
qdq_gemm("qdq_gemm_u8u8_notrans_nobias_alpha", np.uint8, np.uint8, tb=0, bias=False, alpha=0.5)
qdq_gemm("qdq_gemm_u8s8_relu", np.uint8, np.int8, relu=True)
# alpha != 1 with a bias: alpha * (x W) + B is no single int32 sum; stays f32
qdq_gemm("qdq_gemm_alpha_bias_f32", np.uint8, np.int8, alpha=0.5, integer=False)



# ---------------------------------------------------------------- onnxruntime's quantizer, end to end
def quantized_mlp():
    """A Gemm -> Relu -> Gemm -> Softmax MLP through onnxruntime's
    quantize_static: QOperator (QGemm, QLinearSoftmax) against onnxruntime,
    QDQ against onnxruntime without optimizations (with them it runs its own
    QLinearSoftmax, one level apart); both devices, equal outputs."""
    if ONLY and not "quantized_mlp".startswith(ONLY):
        return
    import onnx
    from onnx import TensorProto as T
    from onnx import numpy_helper as NH
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    w1, b1 = rng.normal(0, 0.3, (32, 24)).astype(np.float32), rng.normal(0, 0.1, 32).astype(np.float32)
    w2, b2 = rng.normal(0, 0.3, (10, 32)).astype(np.float32), rng.normal(0, 0.1, 10).astype(np.float32)
    g = H.make_graph([H.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1), H.make_node("Relu", ["h"], ["r"]),
                      H.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1),
                      H.make_node("Softmax", ["y"], ["p"], axis=1)], "mlp",
                     [H.make_tensor_value_info("x", T.FLOAT, [4, 24])], [H.make_tensor_value_info("p", T.FLOAT, None)],
                     [NH.from_array(v, k) for k, v in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))])
    src = os.path.join(tmp, "mlp.onnx")
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)], ir_version=8), src)

    class Calib(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.normal(0, 1, (4, 24)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.it, None)

    for fmt, tag in ((QuantFormat.QOperator, "qop"), (QuantFormat.QDQ, "qdq")):
        name = "quantized_mlp_" + tag
        path = os.path.join(tmp, name + ".onnx")
        quantize_static(src, path, Calib(), quant_format=fmt, per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        feeds = {"x": rng.normal(0, 1, (4, 24)).astype(np.float32)}
        ops = {n.op_type for n in onnx.load(path).graph.node}
        C.check(("QGemm" in ops) == (tag == "qop"), "%s: onnxruntime wrote %s" % (name, sorted(ops)))
        ref = ort_run(path, feeds, ["p"])
        for dev in DEVICES:
            got, out = run_rlx(path, feeds, ["p"], dev, ["--option", "debug.fusion_report=1"])
            if C.check(got is not None, "%s on %s runs (%s)" % (name, dev, out if got is None else "")):
                if tag == "qdq":
                    C.check(out.count("QGemm's integer form") == 2, "%s on %s: both Gemms integer" % (name, dev))
                compare(name, dev, "p", got[0], ref[0], 0, 0.0)


quantized_mlp()
C.done()
