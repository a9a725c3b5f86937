"""onnxruntime's quantized contrib ops that rlx expands at import
(src/import/onnx_contrib.c): QGemm, MatMulIntegerToFloat,
DynamicQuantizeMatMul, QAttention, QLinearAveragePool, QLinearSoftmax,
QLinearReduceMean, QLinearWhere. One small model per op and form (built
with onnx.helper), run by onnxruntime 1.22 (CPU provider, optimizations
off) and by `rlx run` on the CPU and the GPU device (lavapipe here) on
random non-zero inputs; poisoned nothing: every output is compared whole.

Tolerances (stated per case, printed with the measured difference):
- QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul, QLinearWhere and
  QLinearAveragePool: bit-exact (integer codes equal, floats equal), since
  the expansions follow onnxruntime's arithmetic step by step (int32 sums,
  one f32 product by a multiplier computed in the same order, the bias added
  after, round half to even; the pools add the zero point before rounding).
- QAttention: 1e-5 of max |y|: its QKV product is exact, the attention
  after it f32 like com.microsoft.Attention's (other summation orders).
- QLinearSoftmax: within 1 level: onnxruntime sums a table of exponentials
  computed in double and rounded to f32, rlx runs Softmax in f32.
- QLinearReduceMean: onnxruntime has no CPU kernel; the reference is numpy
  in float64 of the spec's Q(ReduceMean(DQ(x))), within 1 level (ties).
Also: zero and NaN scales, zero points of the wrong shape or type and a
y_zero_point without y_scale fail the load naming the node; the QDQ Gemm
of quantize_static (DQ -> Gemm with an int32 bias -> Q) runs as integer
ops (the fusion report says so) with QGemm's bits.

RLX_CONTRIB_DEVICES=cpu limits the devices; RLX_CONTRIB_ONLY=prefix runs
the cases whose name starts with it. Skips (exit 77) while rlx is not
built."""
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
tmp = tempfile.mkdtemp(prefix="rlx_qops_")
rng = R.seeded_rng(11)
C = R.Checker("test_contrib_qops")
DEVICES = os.environ.get("RLX_CONTRIB_DEVICES", "cpu,gpu").split(",")
ONLY = os.environ.get("RLX_CONTRIB_ONLY", "")
NP2ONNX = {np.float32: T.FLOAT, np.int8: T.INT8, np.uint8: T.UINT8, np.int32: T.INT32, np.bool_: T.BOOL}
F, U8, I8 = T.FLOAT, T.UINT8, T.INT8


def model(name, nodes, feeds, outputs, inits, opset=17):
    vis = [H.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape)) for k, v in feeds.items()]
    g = H.make_graph(nodes, name, vis, [H.make_tensor_value_info(o, t, None) for o, t in outputs.items()],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset), H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def run_rlx(path, feeds, outputs, device, extra=()):
    args = [RLX, "run", path, "--device", device, "--iters", "0", "--quiet"] + list(extra)
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (os.path.basename(path), k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    out = os.path.join(tmp, "out_%s_%s" % (os.path.basename(path), device))
    rc, so, se = R.run(args + ["--output-dir", out])
    if rc != 0:
        return None, (so + se).strip()[-600:]
    return [np.load(os.path.join(out, o + ".npy")) for o in outputs], so + se


def ort_run(path, feeds, outputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(list(outputs), feeds)


def compare(name, dev, o, y, r, qtol, tol):
    if y.shape != r.shape or y.dtype != r.dtype:
        C.check(False, "%s on %s, %s: shape %s %s, reference %s %s" % (name, dev, o, y.shape, y.dtype, r.shape,
                                                                        r.dtype))
        return
    if np.issubdtype(r.dtype, np.integer):
        d = int(np.abs(y.astype(np.int64) - r.astype(np.int64)).max()) if r.size else 0
        n = int((y != r).sum())
        ok, what = d <= qtol, "max code diff %d, %d of %d differ (tol %d)" % (d, n, r.size, qtol)
    else:
        d = float(np.abs(y.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max()))) if r.size else 0.0
        ok = d <= tol and bool(np.isfinite(y).all())
        what = ("bit-exact" if tol == 0 and ok else "max rel diff %.3g" % d) + " (tol %s)" % (tol or "0: bit-exact")
    C.check(ok, "%s on %s, %s: %s" % (name, dev, o, what))
    print("%-36s %-4s %-3s %s" % (name, dev, o, what))


def case(name, nodes, feeds, outputs, inits, qtol=0, tol=0.0, ref=None, opset=17):
    if ONLY and not name.startswith(ONLY):
        return
    path = model(name, nodes, feeds, outputs, inits, opset)
    if ref is None:
        ref = ort_run(path, feeds, outputs)
    for dev in DEVICES:
        got, err = run_rlx(path, feeds, list(outputs), dev)
        if C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err if got is None else "")):
            for o, y, r in zip(outputs, got, ref):
                compare(name, dev, o, y, r, qtol, tol)


def node(op, ins, outs, **kw):
    return H.make_node(op, ins, outs, domain="com.microsoft", name=op.lower(), **kw)


def qdata(dt, *shape):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return rng.integers(lo, hi, shape).astype(dt)


def zp(dt, n=None):
    lo, hi = (100, 156) if dt == np.uint8 else (-20, 20)
    return np.array(rng.integers(lo, hi), dt) if n is None else rng.integers(lo, hi, n).astype(dt)


def scale(n=None, lo=0.002, hi=0.02):
    return np.array(rng.uniform(lo, hi), np.float32) if n is None else rng.uniform(lo, hi, n).astype(np.float32)


# ---------------------------------------------------------------- QGemm
def qgemm(name, adt, bdt, M=5, K=24, N=7, ta=0, tb=0, alpha=1.0, c_shape=None, per_col=False, out=True,
          b_input=False, y_scale_only=False, scales=None):
    a = qdata(adt, *((K, M) if ta else (M, K)))
    b = qdata(bdt, *((N, K) if tb else (K, N)))
    inits = {"as": scale(), "az": zp(adt), "bs": scale(N) if per_col else scale(), "bz": zp(bdt, N if per_col else None)}
    if scales:  # (a_scale, b_scale, y_scale)
        inits.update(dict(zip(("as", "bs"), (np.array(v, np.float32) for v in scales[:2]))))
    feeds = {"a": a}
    if b_input:
        feeds["b"] = b
    else:
        inits["b"] = b
    ins = ["a", "as", "az", "b", "bs", "bz"]
    if c_shape is not None:
        inits["c"] = rng.integers(-3000, 3000, c_shape).astype(np.int32)
    ins.append("c" if c_shape is not None else "")
    ydt = adt
    if out or y_scale_only:
        inits["ys"] = np.array(scales[2], np.float32) if scales else scale(lo=0.1, hi=0.4)
        ins.append("ys")
    if out:
        inits["yz"] = zp(ydt)
        ins.append("yz")
    while ins[-1] == "":
        ins.pop()
    attrs = {"transA": ta, "transB": tb}
    if alpha != 1.0:
        attrs["alpha"] = alpha
    case(name, [node("QGemm", ins, ["y"], **attrs)], feeds, {"y": NP2ONNX[ydt] if out else F}, inits)


# onnxruntime's QGemm kernels: A uint8 with B uint8 or int8, A int8 with B int8
for adt, bdt, tag in ((np.uint8, np.uint8, "u8u8"), (np.uint8, np.int8, "u8s8"), (np.int8, np.int8, "s8s8")):
    qgemm("qgemm_" + tag, adt, bdt, c_shape=(7,))
    qgemm("qgemm_float_out_" + tag, adt, bdt, out=False, c_shape=(5, 7))
    qgemm("qgemm_per_col_" + tag, adt, bdt, per_col=True, tb=1, c_shape=(1, 7))
qgemm("qgemm_transA_alpha", np.uint8, np.int8, ta=1, alpha=0.37, c_shape=(5, 1))
qgemm("qgemm_transAB_nobias", np.int8, np.int8, ta=1, tb=1)
qgemm("qgemm_scalar_c_per_col_float", np.uint8, np.uint8, c_shape=(1,), per_col=True, out=False, alpha=1.5)
qgemm("qgemm_b_runtime", np.uint8, np.int8, tb=1, b_input=True, c_shape=(7,))
qgemm("qgemm_y_scale_only", np.uint8, np.int8, out=False, y_scale_only=True, c_shape=(7,))
# multiplier 0.5: every odd sum is a tie, rounded to even before y_zero_point is added
qgemm("qgemm_ties", np.uint8, np.uint8, c_shape=(7,), scales=(0.25, 2.0, 1.0))
qgemm("qgemm_big_k", np.uint8, np.int8, M=3, K=300, N=9, c_shape=(9,))


# ---------------------------------------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul
def mm_int_to_float(name, bdt, shape_a=(2, 3, 16), N=6, per_col=False, bias=True, zps=True):
    K = shape_a[-1]
    inits = {"b": qdata(bdt, K, N), "as": scale(), "bs": scale(N) if per_col else scale()}
    ins = ["a", "b", "as", "bs"]
    if zps:
        inits.update(az=zp(np.uint8), bz=zp(bdt, N if per_col else None))
        ins += ["az", "bz"]
    else:
        ins += ["", ""]
    if bias:
        inits["bias"] = rng.uniform(-1, 1, N).astype(np.float32)
        ins.append("bias")
    while ins[-1] == "":
        ins.pop()
    case(name, [node("MatMulIntegerToFloat", ins, ["y"])], {"a": qdata(np.uint8, *shape_a)}, {"y": F}, inits)


mm_int_to_float("mmitf_u8", np.uint8)
mm_int_to_float("mmitf_s8_per_col", np.int8, per_col=True)
mm_int_to_float("mmitf_2d_nozp_nobias", np.int8, shape_a=(4, 16), bias=False, zps=False)
mm_int_to_float("mmitf_s8_3d", np.int8, shape_a=(2, 5, 16))
mm_int_to_float("mmitf_s8_2d", np.int8, shape_a=(10, 16))


def dq_matmul(name, bdt, shape_a=(2, 4, 16), N=6, per_col=False, bias=True, zpb=True):
    K = shape_a[-1]
    inits = {"b": qdata(bdt, K, N), "bs": scale(N) if per_col else scale()}
    ins = ["a", "b", "bs"]
    if zpb:
        inits["bz"] = zp(bdt, N if per_col else None) if bdt == np.uint8 else np.zeros(N if per_col else (), bdt)
        ins.append("bz")
    else:
        ins.append("")
    if bias:
        inits["bias"] = rng.uniform(-1, 1, N).astype(np.float32)
        ins.append("bias")
    while ins[-1] == "":
        ins.pop()
    a = rng.uniform(-3, 2, shape_a).astype(np.float32)
    case(name, [node("DynamicQuantizeMatMul", ins, ["y"])], {"a": a}, {"y": F}, inits)


dq_matmul("dqmm_s8", np.int8)
dq_matmul("dqmm_u8_per_col", np.uint8, per_col=True)
dq_matmul("dqmm_2d_nobias", np.int8, shape_a=(5, 16), bias=False, zpb=False)


# ---------------------------------------------------------------- QLinearAveragePool
def qavgpool(name, dt, shape, last=False, ties=False, **attrs):
    inits = {"xs": scale(lo=0.01, hi=0.05), "xz": zp(dt), "ys": scale(lo=0.01, hi=0.05), "yz": zp(dt)}
    if ties:  # x_scale = y_scale, pairs: half the means end in .5; an odd y_zero_point
        inits.update(ys=inits["xs"], yz=np.array(13 if dt == np.int8 else 129, dt))
    x = qdata(dt, *shape)
    case(name, [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], channels_last=int(last), **attrs)],
         {"x": x}, {"y": NP2ONNX[dt]}, inits)


for dt, tag in ((np.uint8, "u8"), (np.int8, "s8")):
    qavgpool("qavgpool_3x3_s2_p1_" + tag, dt, (2, 3, 9, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    qavgpool("qavgpool_count_pad_" + tag, dt, (1, 3, 8, 7), kernel_shape=[3, 2], pads=[1, 0, 1, 1],
             count_include_pad=1)
    qavgpool("qavgpool_ceil_" + tag, dt, (1, 2, 8, 8), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    qavgpool("qavgpool_last_" + tag, dt, (1, 6, 6, 4), last=True, kernel_shape=[2, 2], strides=[2, 2])
    qavgpool("qavgpool_global_" + tag, dt, (2, 3, 5, 6), kernel_shape=[5, 6])
# onnxruntime adds y_zero_point before rounding: ties round to even after it
qavgpool("qavgpool_ties_u8", np.uint8, (1, 4, 6, 8), ties=True, kernel_shape=[1, 2], strides=[1, 2])
qavgpool("qavgpool_ties_s8", np.int8, (1, 4, 6, 8), ties=True, kernel_shape=[2, 1], strides=[2, 1])
qavgpool("qavgpool_1d", np.uint8, (2, 3, 11), kernel_shape=[3], strides=[2], pads=[1, 1])
qavgpool("qavgpool_same_upper", np.uint8, (1, 2, 7, 7), kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
qavgpool("qavgpool_global_last", np.int8, (1, 4, 5, 3), last=True, kernel_shape=[4, 5])


# ---------------------------------------------------------------- QLinearSoftmax
def qsoftmax(name, dt, shape, opset=13, axis=None, ys=1.0 / 256):
    inits = {"xs": scale(lo=0.02, hi=0.1), "xz": zp(dt), "ys": np.array(ys, np.float32),
             "yz": np.array(0 if dt == np.uint8 else -128, dt)}
    attrs = {"opset": opset}
    if axis is not None:
        attrs["axis"] = axis
    case(name, [node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], **attrs)], {"x": qdata(dt, *shape)},
         {"y": NP2ONNX[dt]}, inits, qtol=1)


qsoftmax("qsoftmax_u8", np.uint8, (3, 4, 10))
qsoftmax("qsoftmax_s8_axis1", np.int8, (2, 5, 3), axis=1)
qsoftmax("qsoftmax_opset12_flatten", np.uint8, (2, 3, 4), opset=12, axis=1)
qsoftmax("qsoftmax_u8_scale", np.uint8, (4, 16), ys=0.0039)


# ---------------------------------------------------------------- QLinearReduceMean (numpy reference)
def qreduce_mean(name, dt, shape, axes, keepdims):
    xs, xz, ys, yz = scale(lo=0.01, hi=0.05), zp(dt), scale(lo=0.01, hi=0.05), zp(dt)
    x = qdata(dt, *shape)
    m = ((x.astype(np.float64) - float(xz)) * float(xs)).mean(axis=tuple(axes), keepdims=bool(keepdims))
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    ref = np.clip(np.rint(m / float(ys)) + float(yz), lo, hi).astype(dt)
    case(name, [node("QLinearReduceMean", ["x", "xs", "xz", "ys", "yz"], ["y"], axes=axes, keepdims=keepdims)],
         {"x": x}, {"y": NP2ONNX[dt]}, {"xs": xs, "xz": xz, "ys": ys, "yz": yz}, qtol=1, ref=[ref])


qreduce_mean("qreduce_mean_u8_hw", np.uint8, (2, 3, 4, 5), [2, 3], 1)
qreduce_mean("qreduce_mean_s8_axis1", np.int8, (2, 6, 5), [1], 0)


# ---------------------------------------------------------------- QLinearWhere
def qwhere(name, dt, cshape, xshape, yshape, same=False):
    inits = {"xs": scale(lo=0.01, hi=0.05), "xz": zp(dt), "ys": scale(lo=0.01, hi=0.05), "yz": zp(dt)}
    inits.update(zs=inits["xs"] if same else scale(lo=0.01, hi=0.05), zz=inits["xz"] if same else zp(dt))
    feeds = {"c": rng.uniform(0, 1, cshape) > 0.5, "x": qdata(dt, *xshape), "y": qdata(dt, *yshape)}
    case(name, [node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["z"])], feeds,
         {"z": NP2ONNX[dt]}, inits)


qwhere("qwhere_u8", np.uint8, (3, 8), (3, 8), (3, 8))
qwhere("qwhere_s8_broadcast", np.int8, (2, 1, 6), (3, 6), (2, 3, 1))
qwhere("qwhere_u8_x_copy", np.uint8, (4, 5), (4, 5), (1, 5), same=True)


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
def qdq_gemm(name, adt, bdt, per_col=False, tb=1, alpha=1.0, bias=True, relu=False):
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
             H.make_node("QuantizeLinear", ["g", "ys", "yz"], ["y"], name="q")]
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
        C.check("MatMulInteger" in out or "integer" in out, "%s on %s: fuse_qdq_conv made the Gemm integer (%s)" %
                (name, dev, out.strip()[-300:]))
        compare(name, dev, "y", got[0], ref[0], 0, 0.0)


qdq_gemm("qdq_gemm_u8s8", np.uint8, np.int8)
qdq_gemm("qdq_gemm_s8s8_per_col", np.int8, np.int8, per_col=True)
qdq_gemm("qdq_gemm_u8u8_notrans_nobias", np.uint8, np.uint8, tb=0, bias=False)


# ---------------------------------------------------------------- bad input
def bad(name, nodes, feeds, inits, outputs, *needles):
    if ONLY and not name.startswith(ONLY):
        return
    path = model(name, nodes, feeds, outputs, inits)
    rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
    C.check(rc != 0 and all(n in se for n in needles),
            "%s fails naming %s (rc %d: %s)" % (name, ", ".join(needles), rc, se.strip()[-300:]))


A8, B8 = qdata(np.uint8, 3, 4), qdata(np.int8, 4, 5)
base = {"as": scale(), "az": zp(np.uint8), "b": B8, "bs": scale(), "bz": np.array(0, np.int8),
        "ys": scale(), "yz": zp(np.uint8)}
QG = ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"]
bad("bad_zero_scale", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, **{"as": np.array(0, np.float32)}),
    {"y": U8}, "'qgemm'", "a_scale", "finite and nonzero")
bad("bad_nan_scale", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, ys=np.array(np.nan, np.float32)),
    {"y": U8}, "'qgemm'", "y_scale")
bad("bad_zp_shape", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, bz=np.zeros(3, np.int8)), {"y": U8},
    "'qgemm'", "b_zero_point", "1-D")
bad("bad_zp_type", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, az=np.array(3, np.int8)), {"y": U8},
    "'qgemm'", "a_zero_point", "i8")
bad("bad_yzp_alone", [node("QGemm", QG[:7] + ["", "yz"], ["y"])], {"a": A8}, base, {"y": U8}, "'qgemm'",
    "y_zero_point without y_scale")
bad("bad_pool_scale", [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], kernel_shape=[2, 2])],
    {"x": qdata(np.uint8, 1, 1, 4, 4)}, {"xs": np.array(-0.0, np.float32), "xz": zp(np.uint8), "ys": scale(),
                                         "yz": zp(np.uint8)}, {"y": U8}, "'qlinearaveragepool'", "x_scale")
bad("bad_where_zp", [node("QLinearWhere", ["c", "x", "xs", "xz", "x", "xs", "xz", "xs", "zz"], ["z"])],
    {"c": np.ones((2, 3), np.bool_), "x": qdata(np.uint8, 2, 3)},
    {"xs": scale(), "xz": zp(np.uint8), "zz": np.zeros((2, 2), np.uint8)}, {"z": U8}, "'qlinearwhere'",
    "z_zero_point")

# ---------------------------------------------------------------- rlx ops
if not ONLY:
    rc, so, se = R.run([RLX, "ops"])
    for op in ("QGemm", "QAttention", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearAveragePool", "QLinearSoftmax",
               "QLinearReduceMean", "QLinearWhere"):
        C.check(rc == 0 and ("com.microsoft.%s-1" % op) in so, "rlx ops lists com.microsoft.%s" % op)
C.done()
