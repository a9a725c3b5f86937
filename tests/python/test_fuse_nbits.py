"""passes/fuse_nbits.c: DequantizeLinear(constant INT4 / UINT4 weight [K, N]
blocked along K) -> MatMul becomes rlx.MatMulNBits on the weight repacked
into its 4-bit layout (what onnxruntime's MatMul4BitsQuantizer writes with
quant_format QDQ). Each fused model runs on the CPU (one small case and a
32-row one also on the GPU, lavapipe) and is compared with onnxruntime
1.22 running the unfused QDQ model (its graph optimizations off: they
fuse the pair into a MatMulNBits that quantizes A to int8), on fresh
random inputs: max |rlx -
ort| over max (|A| |W|) (the product's magnitude) within 1e-5. The fusion
report (debug.fusion_report) must show fuse_nbits firing, and rlx info
--plan --dump-ir the MatMulNBits node; with passes.disable=fuse_nbits the
same models give the same answers without it.

Two models come from onnxruntime's MatMulNBitsQuantizer itself (QDQ,
symmetric: int4; asymmetric: uint4 with zero points).

Declined forms (blocks along N, block_size 8, an 8-bit constant weight, a
weight fed at run time as int8, a dequantized weight read twice) must not
fire and must still give onnxruntime's answers.

Skips (exit 77) while rlx is not built."""
import os
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


def qdq_model(name, a_shape, K, N, bs, signed=True, zp=True, axis=0, raw=True, wtype=None, shared=False):
    """A [.., K] @ DequantizeLinear(W [K, N]); wtype: 'int8' for an 8-bit
    constant, 'input' for an int8 weight fed at run time."""
    sshape = ((K + bs - 1) // bs, N) if axis == 0 else (K, (N + bs - 1) // bs)
    q = levels((K, N), signed)
    s = rng.uniform(0.01, 0.2, sshape).astype(np.float32)
    inits = [NH.from_array(s, "s")]
    ins = [H.make_tensor_value_info("a", T.FLOAT, list(a_shape))]
    feeds = {"a": rng.standard_normal(a_shape).astype(np.float32)}
    z = levels(sshape, signed) if zp else None
    if wtype == "int8":
        inits.append(NH.from_array(q.astype(np.int8), "w"))
    elif wtype == "input":
        ins.append(H.make_tensor_value_info("w", T.INT8, [K, N]))
        feeds["w"] = q.astype(np.int8)
    else:
        inits.append(tensor4("w", q, signed, raw))
    dq_in = ["w", "s"]
    if zp:
        inits.append(NH.from_array(z.astype(np.int8), "z") if wtype else tensor4("z", z, signed, raw))
        dq_in.append("z")
    nodes = [H.make_node("DequantizeLinear", dq_in, ["b"], name="dq", axis=axis, block_size=bs),
             H.make_node("MatMul", ["a", "b"], ["y"], name="mm")]
    outs = [H.make_tensor_value_info("y", T.FLOAT, None)]
    if shared:
        nodes.append(H.make_node("ReduceSum", ["b"], ["r"], name="rs", keepdims=0))
        outs.append(H.make_tensor_value_info("r", T.FLOAT, None))
    g = H.make_graph(nodes, name, ins, outs, inits)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(H.make_model(g, opset_imports=OPS, ir_version=10), path)
    zz = 0 if z is None else z
    if axis == 0:
        w = (q - np.repeat(np.broadcast_to(zz, sshape), bs, 0)[:K]) * np.repeat(s, bs, 0)[:K]
    else:
        w = (q - np.repeat(np.broadcast_to(zz, sshape), bs, 1)[:, :N]) * np.repeat(s, bs, 1)[:, :N]
    return path, feeds, np.abs(w)


def run_rlx(path, feeds, device, options=()):
    """y and the run's stderr (which has the fusion report)."""
    return R.run_output(RLX, path, feeds, device, ("debug.fusion_report=1",) + tuple(options), tmp=tmp)


def case(name, a_shape, K, N, bs, fires=True, devices=("cpu",), **kw):
    path, feeds, wabs = qdq_model(name, a_shape, K, N, bs, **kw)
    # the QDQ model as it is: onnxruntime's own DequantizeLinear -> MatMul
    # fusion (graph optimizations) makes a MatMulNBits of accuracy level 4,
    # A quantized to int8 (0.2% off here)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mag = max(1e-30, float((np.abs(feeds["a"]).astype(np.float64) @ wabs).max()))
    for dev in devices:
        for opts in ((), ("passes.disable=fuse_nbits",)):
            y, se = run_rlx(path, feeds, dev, opts)
            tag = "%s on %s%s" % (name, dev, " (fuse_nbits off)" if opts else "")
            if not C.check(y is not None, "%s runs (%s)" % (tag, se)):
                continue
            fired = "fusion: fuse_nbits" in se
            C.check(fired == (fires and not opts), "%s: fuse_nbits %s (report: %s)"
                    % (tag, "fires" if fires and not opts else "does not fire", se.strip()[-300:]))
            if y.shape == ref.shape:
                d = float(np.abs(y.astype(np.float64) - ref).max()) / mag
                ok, what = d <= TOL, "max diff %.3g of the product's magnitude (tol %g)" % (d, TOL)
            else:
                ok, what = False, "shape %s, onnxruntime %s" % (y.shape, ref.shape)
            C.check(ok, "%s: %s" % (tag, what))
            print("%-40s %-6s %s" % (tag, "fused" if fired else "", what))
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
# declined forms: the same answers, no fusion
case("decline_axis1", (2, 32), 32, 32, 16, fires=False, axis=1)
case("decline_block8", (2, 32), 32, 4, 8, fires=False)
case("decline_int8_constant", (2, 64), 64, 4, 16, fires=False, wtype="int8")
case("decline_runtime_weight", (2, 64), 64, 4, 16, fires=False, wtype="input")
case("decline_shared", (2, 64), 64, 4, 16, fires=False, shared=True)

# models written by onnxruntime's own quantizer (MatMulNBitsQuantizer, quant_format QDQ): symmetric gives int4
# without zero points, asymmetric uint4 with them
def quantizer_case(sym, K=128, N=48, bs=32, a_shape=(3, 128)):
    import copy
    from onnxruntime.quantization import matmul_nbits_quantizer as MQ
    from onnxruntime.quantization.quant_utils import QuantFormat
    w = rng.standard_normal((K, N)).astype(np.float32)
    g = H.make_graph([H.make_node("MatMul", ["a", "w"], ["y"], name="mm")], "f32",
                     [H.make_tensor_value_info("a", T.FLOAT, list(a_shape))],
                     [H.make_tensor_value_info("y", T.FLOAT, None)], [NH.from_array(w, "w")])
    cfg = MQ.DefaultWeightOnlyQuantConfig(block_size=bs, is_symmetric=sym, quant_format=QuantFormat.QDQ)
    q = MQ.MatMulNBitsQuantizer(copy.deepcopy(H.make_model(g, opset_imports=OPS, ir_version=10)), algo_config=cfg)
    q.process()
    name = "ort_quantizer_%s" % ("symmetric" if sym else "asymmetric")
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(q.model.model, path)
    types = sorted(i.data_type for i in q.model.model.graph.initializer)
    C.check(types == ([T.FLOAT, T.INT4] if sym else [T.FLOAT, T.UINT4, T.UINT4]),
            "%s writes %s weights (initializer types %s)" % (name, "int4" if sym else "uint4 + zero points", types))
    feeds = {"a": rng.standard_normal(a_shape).astype(np.float32)}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    mag = float((np.abs(feeds["a"]) @ np.abs(w)).max())  # |W| within a quantum of the dequantized one
    y, se = run_rlx(path, feeds, "cpu")
    if C.check(y is not None, "%s runs (%s)" % (name, se)):
        d = float(np.abs(y.astype(np.float64) - ref).max()) / mag if y.shape == ref.shape else np.inf
        C.check("fusion: fuse_nbits" in se, "%s: fuse_nbits fires (%s)" % (name, se.strip()[-300:]))
        C.check(d <= TOL, "%s: max diff %.3g of the product's magnitude (tol %g)" % (name, d, TOL))
        print("%-40s %-6s max diff %.3g" % (name, "fused" if "fusion: fuse_nbits" in se else "", d))


quantizer_case(True)
quantizer_case(False)

# rlx info --plan --dump-ir shows the MatMulNBits node of the plan
path, _, _ = qdq_model("info_plan", (1, 64), 64, 8, 32)
rc, so, se = R.run([RLX, "info", path, "--plan", "--dump-ir"])
C.check(rc == 0 and "MatMulNBits" in so + se, "rlx info --plan --dump-ir lists MatMulNBits (rc %d: %s)"
        % (rc, (so + se).strip()[-400:]))
C.done()
