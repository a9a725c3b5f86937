"""onnxruntime's quantized GEMM contrib ops that rlx expands at import
(src/import/onnx_contrib.c): QGemm, MatMulIntegerToFloat,
DynamicQuantizeMatMul (QAttention and fuse_qdq_conv's rewrite of the QDQ
Gemm: test_contrib_qattention_qdq.py; the QLinear pool, softmax, reduce
and where: test_contrib_qlinear.py). One small model per op and form (onnx.helper,
tests/python/qops_ref.py), run by onnxruntime 1.22 (CPU provider,
optimizations off) and by `rlx run` on the CPU and the GPU device
(lavapipe here) on random inputs; whole outputs compared.

Tolerances (stated per case, printed with the measured difference):
- QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul: bit-exact (integer
  codes equal, floats equal), since the expansions follow onnxruntime's
  arithmetic step by step: int32 sums, one f32 product by a multiplier
  computed in the same order (alpha * a_scale * b_scale / y_scale), the
  bias added after, round half to even then the zero point (qgemm_ties:
  every odd sum a tie).
Constant scales that are 0, NaN or inf (special_scales): what onnxruntime
gives where that is defined, equal whole (NaN equal to NaN): a float output
(MatMulIntegerToFloat, DynamicQuantizeMatMul, QGemm without y_zero_point)
takes any scale, IEEE arithmetic; a zero scale of an operand of an integer
output (QGemm's a_scale, QLinearAveragePool's x_scale, QLinearWhere's
x_scale, QLinearReduceMean's data_scale: onnxruntime has no kernel of it,
the reference is the zero point) gives the zero point. Refused at load,
naming the node, the scale and why: a zero or NaN output scale (y_scale,
z_scale: a division with no integer result, onnxruntime casts inf or NaN),
a NaN operand scale of an integer output, QLinearSoftmax's zero X_scale
(onnxruntime's table of exponentials is NaN) or negative X_scale (the table
overflows: zeros where the true softmax is not), QLinearGlobalAveragePool's
zero x_scale (onnxruntime refuses it). Also: zero points of the wrong shape
or type and a y_zero_point without y_scale fail the load naming the node;
`rlx info` lists QGemm nodes as the file writes them (text and --json), the
ops they became beside them; `rlx ops` lists the new ops.

RLX_CONTRIB_DEVICES=cpu limits the devices; RLX_CONTRIB_ONLY=prefix runs
the cases whose name starts with it. Skips (exit 77) while rlx is not
built."""
import json
import os
import sys

import numpy as np
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402
from qops_ref import (DEVICES, F, I8, NP2ONNX, ONLY, RLX, U8, case, model, node, ort_run, qdata, rng,  # noqa: E402
                      run_rlx, scale, start, zp)

C = start("test_contrib_qops")


# ---------------------------------------------------------------- QGemm
def qgemm(name, adt, bdt, M=5, K=24, N=7, ta=0, tb=0, alpha=1.0, c_shape=None, per_col=False, out=True,
          b_input=False, y_scale_only=False, scales=None):
    a = qdata(adt, *((K, M) if ta else (M, K)))
    b = qdata(bdt, *((N, K) if tb else (K, N)))
    inits = {"as": scale(), "az": zp(adt), "bs": scale(N) if per_col else scale(),
             "bz": zp(bdt, N if per_col else None)}
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


# onnxruntime's QGemm kernels: A uint8 with B uint8 or int8, A int8 with B int8; the
# forms (bias shapes, float output, per-column b) alternate over them
qgemm("qgemm_u8u8", np.uint8, np.uint8, c_shape=(7,))
qgemm("qgemm_float_out_u8s8", np.uint8, np.int8, out=False, c_shape=(5, 7))
qgemm("qgemm_per_col_s8s8", np.int8, np.int8, per_col=True, tb=1, c_shape=(1, 7))
qgemm("qgemm_per_col_u8s8", np.uint8, np.int8, per_col=True, c_shape=(7,))
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


# ---------------------------------------------------------------- special scales
def special(name, nodes, feeds, inits, outputs, ref=None):
    """One model whose constant scales are 0, NaN or inf where the result is
    defined: equal to onnxruntime (or ref) whole, NaN equal to NaN."""
    if ONLY and not name.startswith(ONLY):
        return
    path = model(name, nodes, feeds, outputs, inits)
    want = ref if ref is not None else ort_run(path, feeds, outputs)
    for dev in DEVICES:
        got, err = run_rlx(path, feeds, list(outputs), dev)
        if C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err if got is None else "")):
            for o, y, r in zip(outputs, got, want):
                same = y.dtype == r.dtype and y.shape == r.shape and np.array_equal(y, r, equal_nan=True)
                C.check(same, "%s on %s, %s: %s, onnxruntime %s" % (name, dev, o, y.ravel()[:8], r.ravel()[:8]))
                print("%-36s %-4s %-3s %s" % (name, dev, o, "equal (NaN = NaN)" if same else "DIFFERS"))


SP = np.array([0, np.nan, np.inf, -np.inf, 0.01, 0], np.float32)  # per column of N = 6
sA, sB = qdata(np.uint8, 3, 16), qdata(np.int8, 16, 6)
for nm, a_s, b_s in (("zero_a", 0.0, scale(6)), ("nan_a", np.nan, scale(6)), ("inf_a", np.inf, scale(6)),
                     ("cols", 0.01, SP)):
    ins = {"b": sB, "as": np.array(a_s, np.float32), "bs": b_s, "az": zp(np.uint8), "bz": np.zeros(6, np.int8)}
    special("special_mmitf_" + nm, [node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz"], ["y"])],
            {"a": sA}, ins, {"y": F})
    ins.update(bias=rng.uniform(-1, 1, 6).astype(np.float32))
    special("special_qgemm_float_" + nm, [node("QGemm", ["a", "as", "az", "b", "bs", "bz"], ["y"])], {"a": sA},
            {k: v for k, v in ins.items() if k != "bias"}, {"y": F})
special("special_dqmm_cols", [node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz"], ["y"])],
        {"a": rng.uniform(-2, 2, (3, 16)).astype(np.float32)}, {"b": sB, "bs": SP, "bz": np.zeros(6, np.int8)},
        {"y": F})
for nm, ys in (("zero", 0.0), ("nan", np.nan), ("inf", np.inf)):
    special("special_qgemm_y_scale_" + nm, [node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys"], ["y"])],
            {"a": sA}, {"as": scale(), "az": zp(np.uint8), "b": sB, "bs": scale(), "bz": np.array(0, np.int8),
                        "ys": np.array(ys, np.float32)}, {"y": F})
special("special_qgemm_u8_zero_a", [node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"], ["y"])],
        {"a": sA}, {"as": np.array(0, np.float32), "az": zp(np.uint8), "b": sB, "bs": scale(),
                    "bz": np.array(0, np.int8), "ys": scale(), "yz": np.array(77, np.uint8)}, {"y": U8})
special("special_qgemm_s8_zero_b_col", [node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"], ["y"])],
        {"a": qdata(np.int8, 3, 16)}, {"as": scale(), "az": np.array(3, np.int8), "b": sB,
                                       "bs": np.where(np.arange(6) % 2 == 0, 0, scale(6)).astype(np.float32),
                                       "bz": np.zeros(6, np.int8), "ys": scale(), "yz": np.array(-9, np.int8)},
        {"y": I8})
PX = qdata(np.uint8, 1, 2, 4, 4)
special("special_avgpool_zero_x", [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                                        kernel_shape=[2, 2])],
        {"x": PX}, {"xs": np.array(0, np.float32), "xz": zp(np.uint8), "ys": scale(), "yz": np.array(99, np.uint8)},
        {"y": U8})
special("special_where_zero_x", [node("QLinearWhere", ["c", "x", "xs", "xz", "x", "ys", "xz", "zs", "zz"], ["z"])],
        {"c": rng.integers(0, 2, (3, 5)).astype(np.bool_), "x": qdata(np.uint8, 3, 5)},
        {"xs": np.array(0, np.float32), "xz": zp(np.uint8), "ys": scale(lo=0.05, hi=0.1), "zs": scale(lo=0.05, hi=0.1),
         "zz": zp(np.uint8)}, {"z": U8})
special("special_reduce_mean_zero", [node("QLinearReduceMean", ["x", "xs", "xz", "ys", "yz"], ["y"], axes=[3],
                                          keepdims=0)],
        {"x": PX}, {"xs": np.array(0, np.float32), "xz": zp(np.uint8), "ys": scale(), "yz": np.array(42, np.uint8)},
        {"y": U8}, ref=[np.full((1, 2, 4), 42, np.uint8)])


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
bad("bad_zero_y_scale", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, ys=np.array(0, np.float32)),
    {"y": U8}, "'qgemm'", "y_scale", "finite and nonzero")
bad("bad_nan_scale", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, ys=np.array(np.nan, np.float32)),
    {"y": U8}, "'qgemm'", "y_scale")
bad("bad_nan_a_scale", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, **{"as": np.array(np.nan, np.float32)}),
    {"y": U8}, "'qgemm'", "a_scale", "must be finite (0 is fine")
bad("bad_zp_shape", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, bz=np.zeros(3, np.int8)), {"y": U8},
    "'qgemm'", "b_zero_point", "1-D")
bad("bad_zp_type", [node("QGemm", QG, ["y"])], {"a": A8}, dict(base, az=np.array(3, np.int8)), {"y": U8},
    "'qgemm'", "a_zero_point", "i8")
bad("bad_yzp_alone", [node("QGemm", QG[:7] + ["", "yz"], ["y"])], {"a": A8}, base, {"y": U8}, "'qgemm'",
    "y_zero_point without y_scale")
bad("bad_pool_scale", [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], kernel_shape=[2, 2])],
    {"x": qdata(np.uint8, 1, 1, 4, 4)}, {"xs": scale(), "xz": zp(np.uint8), "ys": np.array(-0.0, np.float32),
                                         "yz": zp(np.uint8)}, {"y": U8}, "'qlinearaveragepool'", "y_scale")
bad("bad_gap_zero_scale", [node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"])],
    {"x": qdata(np.uint8, 1, 2, 3, 3)}, {"xs": np.array(0, np.float32), "xz": zp(np.uint8), "ys": scale(),
                                         "yz": zp(np.uint8)}, {"y": U8}, "'qlinearglobalaveragepool'", "x_scale")
bad("bad_softmax_zero_scale", [node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], opset=13)],
    {"x": qdata(np.uint8, 2, 8)}, {"xs": np.array(0, np.float32), "xz": zp(np.uint8),
                                   "ys": np.array(1 / 256, np.float32), "yz": np.array(0, np.uint8)},
    {"y": U8}, "'qlinearsoftmax'", "X_scale", "finite and nonzero")
# a negative X_scale: onnxruntime's table overflows (zeros, where the true softmax is not); refused
bad("bad_softmax_negative_scale", [node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], opset=13)],
    {"x": qdata(np.uint8, 2, 8)}, {"xs": np.array(-0.1, np.float32), "xz": zp(np.uint8),
                                   "ys": np.array(1 / 256, np.float32), "yz": np.array(0, np.uint8)},
    {"y": U8}, "'qlinearsoftmax'", "X_scale is -0.1", "negative X_scale is not supported",
    "RLX_ERR_UNSUPPORTED")
bad("bad_where_z_scale", [node("QLinearWhere", ["c", "x", "xs", "xz", "x", "xs", "xz", "zs", "xz"], ["z"])],
    {"c": np.ones((2, 3), np.bool_), "x": qdata(np.uint8, 2, 3)},
    {"xs": scale(), "xz": zp(np.uint8), "zs": np.array(np.nan, np.float32)}, {"z": U8}, "'qlinearwhere'",
    "z_scale")
bad("bad_where_zp", [node("QLinearWhere", ["c", "x", "xs", "xz", "x", "xs", "xz", "xs", "zz"], ["z"])],
    {"c": np.ones((2, 3), np.bool_), "x": qdata(np.uint8, 2, 3)},
    {"xs": scale(), "xz": zp(np.uint8), "zz": np.zeros((2, 2), np.uint8)}, {"z": U8}, "'qlinearwhere'",
    "z_zero_point")

# ---------------------------------------------------------------- rlx info
# the nodes as the file writes them: two QGemm (com.microsoft) and an Identity count as such, each QGemm's
# expansion listed beside its row (issue 12.4: the list held only the ops they became)
if not ONLY:
    qg2 = dict(base, b2=qdata(np.int8, 5, 5))
    pi = model("info_qgemm", [node("QGemm", QG, ["h"]), H.make_node("Identity", ["h"], ["r"], name="identity"),
                              node("QGemm", ["r", "ys", "yz", "b2", "bs", "bz", "", "ys", "yz"], ["y"])],
               {"a": A8}, {"y": U8}, qg2)
    rc, so, se = R.run([RLX, "info", pi])
    rows = {ln.split()[0]: ln for ln in so.splitlines() if ln.startswith("  ") and len(ln.split()) >= 2}
    qrow = rows.get("com.microsoft.QGemm", "")
    C.check(rc == 0 and "nodes: 3 (2 op types) as the file writes them; imported as " in so and
            qrow.split()[1:2] == ["2"] and "(expanded at import into" in qrow and "MatMulInteger x2" in qrow and
            rows.get("Identity", "").split()[1:2] == ["1"] and "MatMulInteger" not in rows,
            "rlx info lists QGemm as the file writes it:\n" + so + se)
    rc, so, se = R.run([RLX, "info", pi, "--json"])
    d = json.loads(so) if rc == 0 else {}
    ops = {(o["domain"], o["op"]): o for o in d.get("ops", [])}
    q = ops.get(("com.microsoft", "QGemm"), {})
    C.check(d.get("nodes") == 3 and d.get("imported_nodes", 0) > 3 and q.get("count") == 2 and
            {(o["op"], o["count"]) for o in q.get("imported_as", [])} >= {("MatMulInteger", 2)} and
            ops.get(("", "Identity"), {}).get("count") == 1 and ("", "MatMulInteger") not in ops,
            "rlx info --json lists QGemm as the file writes it: %s" % so[:1500])

# ---------------------------------------------------------------- rlx ops
if not ONLY:
    rc, so, se = R.run([RLX, "ops"])
    for op in ("QGemm", "QAttention", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearAveragePool",
               "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere"):
        C.check(rc == 0 and ("com.microsoft.%s-1" % op) in so, "rlx ops lists com.microsoft.%s" % op)
C.done()
