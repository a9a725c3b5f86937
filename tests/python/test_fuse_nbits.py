"""passes/fuse_nbits.c: DequantizeLinear(constant INT4 / UINT4 weight
blocked along K) read by MatMuls or Gemms becomes one rlx.MatMulNBits per
reader on the weight repacked once into its 4-bit layout (what
onnxruntime's MatMulNBitsQuantizer writes with quant_format QDQ). Each
fused model runs on the CPU (some also on the GPU, lavapipe) and is
compared with onnxruntime 1.22 running the unfused QDQ model (its graph
optimizations off: they fuse the pair into a MatMulNBits that quantizes A
to int8), on fresh random inputs: max |rlx - ort| over max (|A| |W| + |C|)
(the product's magnitude) within 1e-6 for f32 models, 2e-3 for f16 ones
(onnxruntime rounds each weight to binary16, rlx.MatMulNBits keeps them
f32; both round the sum once). The fusion report (debug.fusion_report)
must show fuse_nbits firing once per reader, and rlx info --plan --dump-ir
the MatMulNBits node; with passes.disable=fuse_nbits the same models give
the same answers without it.

Fused forms: MatMul of f32 or f16 (f16 A, scales and Y); Gemm with transB
0 (weight [K, N] blocked along axis 0) or 1 ([N, K] along axis 1), alpha
1, with or without a bias C (beta 1); one weight read by two MatMuls or
three Gemms. Four models come from onnxruntime's MatMulNBitsQuantizer
itself (QDQ, symmetric: int4; asymmetric: uint4 with zero points; from an
f32 and an f16 model).

Declined forms (blocks along N for a MatMul or either Gemm form, block_size
8, an 8-bit constant weight, a weight fed at run time as int8, a
dequantized weight with a non-matrix reader, alone or beside MatMuls,
Gemm with transA 1, alpha or beta other than 1, an f16 weight whose
dequantized value overflows to inf, a weight that an If's branch reads by
name) must not fire and must still give
onnxruntime's answers.

Skips (exit 77) while rlx is not built."""
import os
import re
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_nbits_")
rng = R.seeded_rng(4)
C = R.Checker("test_fuse_nbits")
OPS = [H.make_opsetid("", 21)]
TOL = 1e-6
# f16: onnxruntime rounds every weight to binary16 and the sum once, rlx.MatMulNBits keeps the f32 weights
# (2^-11 relative apart) and rounds the sum once: at most about 3 half-ulps of the product's magnitude
TOL16 = 2e-3


def packed(q):
    f = (np.asarray(q).reshape(-1) & 15).astype(np.uint8)
    if f.size % 2:
        f = np.concatenate([f, np.zeros(1, np.uint8)])
    return (f[0::2] | (f[1::2] << 4)).astype(np.uint8)


def tensor4(name, q, signed, raw=True):
    dt = T.INT4 if signed else T.UINT4
    if raw:
        return H.make_tensor(name, dt, list(np.shape(q)), packed(q).tobytes(), raw=True)
    return H.make_tensor(name, dt, list(np.shape(q)), np.asarray(q).reshape(-1).tolist())


def levels(shape, signed):
    return rng.integers(-8, 8, shape) if signed else rng.integers(0, 16, shape)


def expand(a, bs, axis, n):
    """Per-block a repeated over its block_size elements along axis (n of them)."""
    return np.take(np.repeat(a, bs, axis), np.arange(n), axis=axis)


def qdq_model(name, a_shape, K, N, bs, signed=True, zp=True, axis=0, raw=True, wtype=None, other_reader=False,
              f16=False, op="MatMul", trans_b=0, bias=False, readers=1, gemm_attrs=None):
    """A [.., K] @ DequantizeLinear(W) in f32 or f16 (f16: A, scales, bias
    and Y), by `readers` MatMuls or Gemms (op) of the one weight; W is
    stored [K, N], or [N, K] for a Gemm with transB 1, blocked along axis;
    wtype: 'int8' for an 8-bit constant, 'input' for an int8 weight fed at
    run time. Returns the path, the feeds, the outputs' names and the
    magnitude of the product, max(|A| |W| + |C|)."""
    ft, npf = (T.FLOAT16, np.float16) if f16 else (T.FLOAT, np.float32)
    wshape = (N, K) if trans_b else (K, N)
    sshape = list(wshape)
    sshape[axis] = (wshape[axis] + bs - 1) // bs
    q = levels(wshape, signed)
    s = rng.uniform(0.01, 0.2, sshape).astype(npf)
    inits = [NH.from_array(s, "s")]
    ins = [H.make_tensor_value_info("a", ft, list(a_shape))]
    feeds = {"a": rng.standard_normal(a_shape).astype(npf)}
    z = levels(sshape, signed) if zp else None
    if wtype == "int8":
        inits.append(NH.from_array(q.astype(np.int8), "w"))
    elif wtype == "input":
        ins.append(H.make_tensor_value_info("w", T.INT8, list(wshape)))
        feeds["w"] = q.astype(np.int8)
    else:
        inits.append(tensor4("w", q, signed, raw))
    dq_in = ["w", "s"]
    if zp:
        inits.append(NH.from_array(z.astype(np.int8), "z") if wtype else tensor4("z", z, signed, raw))
        dq_in.append("z")
    nodes = [H.make_node("DequantizeLinear", dq_in, ["b"], name="dq", axis=axis, block_size=bs)]
    c = rng.standard_normal(N).astype(npf) if bias else None
    if bias:
        inits.append(NH.from_array(c, "c"))
    outs = []
    for r in range(readers):
        if op == "Gemm":
            nodes.append(H.make_node("Gemm", ["a", "b"] + (["c"] if bias else []), ["y%d" % r], name="gemm%d" % r,
                                     transB=trans_b, **(gemm_attrs or {})))
        else:
            nodes.append(H.make_node("MatMul", ["a", "b"], ["y%d" % r], name="mm%d" % r))
        outs.append(H.make_tensor_value_info("y%d" % r, ft, None))
    if other_reader:
        nodes.append(H.make_node("ReduceSum", ["b"], ["r"], name="rs", keepdims=0))
        outs.append(H.make_tensor_value_info("r", ft, None))
    g = H.make_graph(nodes, name, ins, outs, inits)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(H.make_model(g, opset_imports=OPS, ir_version=10), path)
    zz = np.zeros(sshape) if z is None else z
    w = np.abs((q - expand(zz, bs, axis, wshape[axis])) * expand(s.astype(np.float64), bs, axis, wshape[axis]))
    wkn = w.T if trans_b else w
    ta = (gemm_attrs or {}).get("transA", 0)
    aa = np.abs(feeds["a"].astype(np.float64))
    prod = (aa.T if ta else aa) @ wkn + (np.abs(c.astype(np.float64)) if bias else 0)
    return path, feeds, ["y%d" % r for r in range(readers)], max(1e-30, float(prod.max()))


def run_rlx(path, feeds, device, options=(), output="y0"):
    """The outputs and the run's stderr (which has the fusion report)."""
    return R.run_output(RLX, path, feeds, device, ("debug.fusion_report=1",) + tuple(options), tmp=tmp,
                        output=output)


def ort_unfused(path, feeds):
    # the QDQ model as it is: onnxruntime's own DequantizeLinear -> MatMul
    # fusion (graph optimizations) makes a MatMulNBits of accuracy level 4,
    # A quantized to int8 (0.2% off here)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def compare(tag, ys, refs, mag, tol):
    """max |rlx - ort| over the product's magnitude for every output."""
    worst = 0.0
    for y, ref in zip(ys, refs):
        if y.shape != ref.shape or y.dtype != ref.dtype:
            C.check(False, "%s: %s %s, onnxruntime %s %s" % (tag, y.dtype, y.shape, ref.dtype, ref.shape))
            return "shape"
        worst = max(worst, float(np.abs(y.astype(np.float64) - ref.astype(np.float64)).max()) / mag)
    what = "max diff %.3g of the product's magnitude (tol %g)" % (worst, tol)
    C.check(worst <= tol, "%s: %s" % (tag, what))
    return what


def case(name, a_shape, K, N, bs, fires=True, devices=("cpu",), **kw):
    path, feeds, outs, mag = qdq_model(name, a_shape, K, N, bs, **kw)
    refs = ort_unfused(path, feeds)[:len(outs)]
    tol = TOL16 if kw.get("f16") else TOL
    want = len(outs) if fires else 0  # one report line per fused reader
    for dev in devices:
        for opts in ((), ("passes.disable=fuse_nbits",)):
            # outputs poisoned before GPU runs: an unwritten element fails
            ys, se = run_rlx(path, feeds, dev, opts + (("gpu.poison=1",) if dev == "gpu" else ()), outs)
            tag = "%s on %s%s" % (name, dev, " (fuse_nbits off)" if opts else "")
            if not C.check(ys is not None, "%s runs (%s)" % (tag, se)):
                continue
            fired = se.count("fusion: fuse_nbits")
            C.check(fired == (0 if opts else want), "%s: fuse_nbits fires %d times, expected %d (report: %s)"
                    % (tag, fired, 0 if opts else want, se.strip()[-300:]))
            if kw.get("f16") and dev == "cpu" and fired:
                # widen_f16 computes the MatMulNBits (and the bias Add) in f32, as the unfused MatMul / Gemm
                wide = re.search(r"widen_f16: (\d+) nodes", se)
                nw = len(outs) * (2 if kw.get("bias") else 1)
                C.check(wide is not None and int(wide.group(1)) == nw, "%s: widen_f16 widens the %d fused nodes (%s)"
                        % (tag, nw, wide.group(0) if wide else "no widen_f16 report"))
            what = compare(tag, ys, refs, mag, tol)
            print("%-44s %-6s %s" % (tag, "fused" if fired else "", what))
    return path, feeds


case("int4_zp_gemv", (1, 64), 64, 24, 32, devices=("cpu", "gpu"))
case("int4_zp_32rows", (32, 64), 64, 16, 16, devices=("cpu", "gpu"))
case("int4_no_zp", (3, 128), 128, 10, 64)
case("uint4_zp", (2, 64), 64, 9, 16, signed=False)
case("uint4_no_zp", (4, 96), 96, 7, 32, signed=False, zp=False)
case("int4_partial_block", (5, 40), 40, 6, 16)
case("uint4_partial_block_odd", (2, 3, 45), 45, 5, 16, signed=False)
case("int4_int32_data", (2, 48), 48, 3, 16, raw=False)
case("int4_block128_3d", (2, 2, 256), 256, 12, 128)
case("int4_block4096", (2, 4096), 4096, 2, 4096, zp=False)
# f16 models: A, scales and Y f16
case("f16_int4_zp_gemv", (1, 64), 64, 24, 32, f16=True, devices=("cpu", "gpu"))
case("f16_uint4_no_zp_3d", (2, 3, 96), 96, 10, 32, f16=True, signed=False, zp=False)
case("f16_int4_partial_block_40rows", (40, 72), 72, 9, 16, f16=True)
# Gemm readers: transB 0 ([K, N], blocks along axis 0) and 1 ([N, K], along axis 1), with or without C
case("gemm_transb0", (3, 64), 64, 12, 16, op="Gemm", devices=("cpu", "gpu"))
case("gemm_transb1_bias", (2, 96), 96, 10, 32, op="Gemm", trans_b=1, axis=1, bias=True, devices=("cpu", "gpu"))
case("gemm_transb0_bias_uint4", (4, 48), 48, 7, 16, op="Gemm", bias=True, signed=False)
case("gemm_transb1_partial_block", (2, 40), 40, 5, 16, op="Gemm", trans_b=1, axis=1, zp=False)
case("gemm_beta1_explicit", (2, 32), 32, 6, 16, op="Gemm", bias=True, gemm_attrs={"alpha": 1.0, "beta": 1.0})
case("f16_gemm_transb1_bias", (3, 64), 64, 8, 32, op="Gemm", trans_b=1, axis=1, bias=True, f16=True,
     devices=("cpu", "gpu"))
# one weight, several readers: repacked once, one MatMulNBits each
case("shared_two_matmuls", (2, 64), 64, 8, 16, readers=2, devices=("cpu", "gpu"))
case("shared_three_gemms_bias", (2, 64), 64, 8, 32, op="Gemm", trans_b=1, axis=1, bias=True, readers=3)
# declined forms: the same answers, no fusion
case("decline_axis1", (2, 32), 32, 32, 16, fires=False, axis=1)
case("decline_block8", (2, 32), 32, 4, 8, fires=False)
case("decline_int8_constant", (2, 64), 64, 4, 16, fires=False, wtype="int8")
case("decline_runtime_weight", (2, 64), 64, 4, 16, fires=False, wtype="input")
case("decline_other_reader", (2, 64), 64, 4, 16, fires=False, other_reader=True)
case("decline_shared_other_reader", (2, 64), 64, 4, 16, fires=False, other_reader=True, readers=2)
case("decline_gemm_transb1_axis0", (2, 32), 32, 32, 16, fires=False, op="Gemm", trans_b=1, axis=0)
case("decline_gemm_transb0_axis1", (2, 32), 32, 32, 16, fires=False, op="Gemm", axis=1)
case("decline_gemm_transa", (32, 3), 32, 8, 16, fires=False, op="Gemm", gemm_attrs={"transA": 1})
case("decline_gemm_alpha", (2, 32), 32, 8, 16, fires=False, op="Gemm", gemm_attrs={"alpha": 0.5})
case("decline_gemm_beta", (2, 32), 32, 8, 16, fires=False, op="Gemm", bias=True, gemm_attrs={"beta": 0.5})
case("decline_f16_gemm_alpha", (2, 32), 32, 8, 16, fires=False, op="Gemm", f16=True, gemm_attrs={"alpha": 2.0})


def f16_overflow_case():
    """An f16 scale that puts a dequantized weight past binary16's range:
    DequantizeLinear gives inf there, so the fusion (finite f32 weights)
    declines and the model keeps onnxruntime's inf / NaN outputs."""
    K, N, bs = 32, 4, 16
    q = levels((K, N), True)
    q[:bs, 0] = 0  # the block of scale 9000: 0 but q[0, 0] = -8, -72000: inf in binary16
    q[0, 0] = -8
    s = rng.uniform(0.01, 0.2, (K // bs, N)).astype(np.float16)
    s[0, 0] = 9000
    g = H.make_graph([H.make_node("DequantizeLinear", ["w", "s"], ["b"], name="dq", axis=0, block_size=bs),
                      H.make_node("MatMul", ["a", "b"], ["y0"], name="mm")], "f16_overflow",
                     [H.make_tensor_value_info("a", T.FLOAT16, [2, K])],
                     [H.make_tensor_value_info("y0", T.FLOAT16, None)], [tensor4("w", q, True), NH.from_array(s, "s")])
    path = os.path.join(tmp, "decline_f16_overflow.onnx")
    onnx.save(H.make_model(g, opset_imports=OPS, ir_version=10), path)
    # |y| <= 72000 * 0.8 + 16 * 1.6 * 0.8 < 65504 from finite weights: the fused node would give finite values
    feeds = {"a": rng.uniform(0.3, 0.8, (2, K)).astype(np.float16)}
    ref = ort_unfused(path, feeds)[0]
    y, se = run_rlx(path, feeds, "cpu")
    if C.check(y is not None, "decline_f16_overflow runs (%s)" % se):
        C.check("fusion: fuse_nbits" not in se, "decline_f16_overflow: fuse_nbits does not fire (%s)" % se.strip()[-300:])
        same = np.array_equal(np.isinf(y[:, 0]), np.isinf(ref[:, 0])) and np.isinf(ref[:, 0]).all()
        C.check(same, "decline_f16_overflow: column 0 inf as onnxruntime's (rlx %s, ort %s)" % (y[:, 0], ref[:, 0]))
        print("%-44s        column 0 %s (onnxruntime %s)" % ("decline_f16_overflow on cpu", y[:, 0], ref[:, 0]))


f16_overflow_case()


def if_branch_case(cond):
    """A weight that an If's branch also reads by name (an outer-scope
    reference, not a node input): a plan fixes the condition from its graph
    input and the fold inlines the branch after fuse_nbits ran, so the pass
    must see the If as a reader and decline; it had taken the
    DequantizeLinear away from the branch's MatMul (a segfault on the CPU,
    'value has no arena offset' on the GPU). Either condition declines (the
    If reads the weight until the fold inlines a branch)."""
    K, N, bs = 32, 4, 16
    q = levels((K, N), True)
    s = rng.uniform(0.01, 0.2, (K // bs, N)).astype(np.float32)
    f32 = lambda n: H.make_tensor_value_info(n, T.FLOAT, None)  # noqa: E731
    then_g = H.make_graph([H.make_node("MatMul", ["a", "b"], ["t"], name="then_mm")], "then", [], [f32("t")])
    else_g = H.make_graph([H.make_node("Neg", ["a"], ["e"], name="else_neg")], "else", [], [f32("e")])
    g = H.make_graph([H.make_node("DequantizeLinear", ["w", "s"], ["b"], name="dq", axis=0, block_size=bs),
                      H.make_node("MatMul", ["a", "b"], ["y0"], name="mm"),
                      H.make_node("If", ["c"], ["y1"], name="if", then_branch=then_g, else_branch=else_g)],
                     "if_branch",
                     [H.make_tensor_value_info("a", T.FLOAT, [2, K]), H.make_tensor_value_info("c", T.BOOL, [])],
                     [f32("y0"), f32("y1")], [tensor4("w", q, True), NH.from_array(s, "s")])
    name = "if_branch_reads_weight_%s" % ("then" if cond else "else")
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(H.make_model(g, opset_imports=OPS, ir_version=10), path)
    feeds = {"a": rng.standard_normal((2, K)).astype(np.float32), "c": np.array(cond)}
    refs = ort_unfused(path, feeds)
    mag = float((np.abs(feeds["a"].astype(np.float64)) @ np.abs(q * np.repeat(s, bs, 0))).max())
    for dev in ("cpu", "gpu"):
        ys, se = run_rlx(path, feeds, dev, output=["y0", "y1"])
        tag = "%s on %s" % (name, dev)
        if not C.check(ys is not None, "%s runs (%s)" % (tag, se.strip()[-300:])):
            continue
        fired = se.count("fusion: fuse_nbits")
        C.check(fired == 0, "%s: fuse_nbits fires %d times, expected none" % (tag, fired))
        print("%-44s %-6s %s" % (tag, "fused" if fired else "", compare(tag, ys, refs, mag, TOL)))


if_branch_case(True)
if_branch_case(False)

# models written by onnxruntime's own quantizer (MatMulNBitsQuantizer, quant_format QDQ): symmetric gives int4
# without zero points, asymmetric uint4 with them; from an f16 model, f16 scales (and A, Y f16)
def quantizer_case(sym, f16=False, K=128, N=48, bs=32, a_shape=(3, 128)):
    import copy
    from onnxruntime.quantization import matmul_nbits_quantizer as MQ
    from onnxruntime.quantization.quant_utils import QuantFormat
    ft, npf = (T.FLOAT16, np.float16) if f16 else (T.FLOAT, np.float32)
    w = rng.standard_normal((K, N)).astype(npf)
    g = H.make_graph([H.make_node("MatMul", ["a", "w"], ["y"], name="mm")], "fp",
                     [H.make_tensor_value_info("a", ft, list(a_shape))],
                     [H.make_tensor_value_info("y", ft, None)], [NH.from_array(w, "w")])
    cfg = MQ.DefaultWeightOnlyQuantConfig(block_size=bs, is_symmetric=sym, quant_format=QuantFormat.QDQ)
    q = MQ.MatMulNBitsQuantizer(copy.deepcopy(H.make_model(g, opset_imports=OPS, ir_version=10)), algo_config=cfg)
    q.process()
    name = "ort_quantizer_%s%s" % ("f16_" if f16 else "", "symmetric" if sym else "asymmetric")
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(q.model.model, path)
    types = sorted(i.data_type for i in q.model.model.graph.initializer)
    want = sorted([ft, T.INT4] if sym else [ft, T.UINT4, T.UINT4])
    C.check(types == want, "%s writes %s weights, %s scales (initializer types %s)"
            % (name, "int4" if sym else "uint4 + zero points", "f16" if f16 else "f32", types))
    feeds = {"a": rng.standard_normal(a_shape).astype(npf)}
    ref = ort_unfused(path, feeds)[0]
    mag = float((np.abs(feeds["a"].astype(np.float64)) @ np.abs(w.astype(np.float64))).max())  # |W| within a quantum
    y, se = run_rlx(path, feeds, "cpu", output="y")
    if C.check(y is not None, "%s runs (%s)" % (name, se)):
        C.check("fusion: fuse_nbits" in se, "%s: fuse_nbits fires (%s)" % (name, se.strip()[-300:]))
        what = compare(name, [y], [ref], mag, TOL16 if f16 else TOL)
        print("%-44s %-6s %s" % (name, "fused" if "fusion: fuse_nbits" in se else "", what))


quantizer_case(True)
quantizer_case(False)
quantizer_case(True, f16=True)
quantizer_case(False, f16=True)

# rlx info --plan --dump-ir shows the MatMulNBits node of the plan
path = qdq_model("info_plan", (1, 64), 64, 8, 32)[0]
rc, so, se = R.run([RLX, "info", path, "--plan", "--dump-ir"])
C.check(rc == 0 and "MatMulNBits" in so + se, "rlx info --plan --dump-ir lists MatMulNBits (rc %d: %s)"
        % (rc, (so + se).strip()[-400:]))
C.done()
