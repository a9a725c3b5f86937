"""Value operands of the wrong rank, and pools whose pads reach past the
kernel, against the ONNX spec and onnxruntime 1.22 (tester14's findings,
rebuilt: their files were lost).

Operand ranks. An operand that holds a shape, repeats, axes, pads, K,
sizes or scales has the rank its spec gives: 1-D for Reshape, Expand,
ConstantOfShape (not a scalar either), Tile, Slice's four, Pad's pads and
axes, Split, Squeeze-13, Reduce* axes (not a scalar either), Resize's
scales and sizes (and roi with tf_crop_and_resize, the one mode that reads
it: onnxruntime ignores a roi of any shape otherwise), Upsample-9 scales,
TopK's K (of one value); a scalar or 1-D for Unsqueeze-13 axes, OneHot's
depth, Range's three, Trilu's k and Clip's min and max (scalars by the
spec except Unsqueeze's and OneHot's; a 1-D tensor of one value as
onnxruntime's kernels take it). rlx took a 2-D shape [[2, 3]] as the list
[2, 3]. Now each wrong rank fails naming the node, the op and the operand:
RLX_ERR_INVALID_MODEL when the model fixes the rank (an initializer, a
graph input declared so), at load; RLX_ERR_INVALID_ARGUMENT when the
caller's feed does (a graph input of undeclared shape), at run, also in an
eager plan. onnxruntime refuses each too, except where its check is laxer
than the spec (the table's LAX origins: Expand and ConstantOfShape with a
2-D shape whose rank its shape inference does not see, Pad with a [1, 2n]
likewise, Resize / Upsample scales and Resize's roi of [1, n], Resize
sizes of [1, n] as an initializer); rlx follows the spec there. The same
models with a good operand run and match onnxruntime (the ONNX reference
where onnxruntime's shape inference cannot take a fed operand), exactly
but for ReduceSum's order (1e-6 relative).

Pool pads. MaxPool / AveragePool / LpPool with a pad >= the kernel extent
((k - 1) * dilation + 1) have a first or last window wholly in the padding
(-inf, 0 / 0). rlx ran them; onnxruntime refuses pads >= kernel_shape. rlx
refuses at load; with dilations, a pad in [kernel_shape, extent) reaches
the input, so rlx runs it and matches the ONNX reference (onnxruntime
refuses it).

Skips (exit 77) while librlx.so is not built."""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
ort.set_default_logger_severity(4)  # its refusals are expected here
C = R.Checker("test_shape_operands")
rng = R.seeded_rng(15)
MODEL, ARG = "RLX_ERR_INVALID_MODEL", "RLX_ERR_INVALID_ARGUMENT"
I64, F32 = np.int64, np.float32
ELEM = {np.dtype(I64): T.INT64, np.dtype(F32): T.FLOAT}


def rand(shape, dt=F32):
    return (rng.standard_normal(shape) + 0.1).astype(dt)


def build(op, x, operands, vi, v, origin, attrs, opset, n_out=1):
    """op(x, operands...) with operands[vi] replaced by v from `origin`:
    'init' (an initializer), 'decl' (a graph input declared with v's shape),
    'fed' (a graph input of undeclared shape). Returns (model, feeds)."""
    ins, inits, feeds, names = [], [], {}, []
    if x is not None:
        ins.append(H.make_tensor_value_info("x", ELEM[x.dtype], list(x.shape)))
        feeds["x"] = x
        names.append("x")
    for i, o in enumerate(operands):
        nm = "v%d" % i
        if o is None:
            names.append("")
            continue
        names.append(nm)
        if i != vi:
            inits.append(NH.from_array(o, nm))
        elif origin == "init":
            inits.append(NH.from_array(v, nm))
        else:
            ins.append(H.make_tensor_value_info(nm, ELEM[v.dtype], list(v.shape) if origin == "decl" else None))
            feeds[nm] = v
    outs = ["y%d" % k for k in range(n_out)]
    g = H.make_graph([H.make_node(op, names, outs, name="node_" + op.lower(), **attrs)], "g", ins,
                     [H.make_empty_tensor_value_info(o) for o in outs], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m, feeds


def rlx_run(m, feeds):
    """(outputs or None, status, message, stage)."""
    try:
        mod = rlx.Model(m.SerializeToString())
    except rlx.Error as e:
        return None, e.status, str(e), "load"
    try:
        return rlx.Session(mod, device="cpu").run(feeds), "OK", "", "run"
    except rlx.Error as e:
        return None, e.status, str(e), "run"


def ort_run(m, feeds):
    try:
        return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:  # noqa: BLE001 (any refusal)
        return None


X23 = rand((2, 3))
X13 = rand((1, 3))
X4 = rand((1, 1, 2, 3))
IDX = np.array([0, 2, 1], I64)


def a(*v, dt=I64):
    return np.array(v, dt)


# op, x, operands (None: omitted), index of the checked operand, its name in messages, a good value,
# bad values, attributes, opset, outputs, origins where onnxruntime (1.22) accepts the bad value (LAX)
CASES = [
    ("Reshape", X23, [a(3, 2)], 0, "shape", a(3, 2), [a(3, 2).reshape(1, 2), a(6).reshape(())], {}, 13, 1, {}),
    ("Expand", X23, [a(2, 3)], 0, "shape", a(2, 3), [a(2, 3).reshape(1, 2)], {}, 13, 1, {0: {"init", "fed"}}),
    ("Tile", X23, [a(2, 1)], 0, "repeats", a(2, 1), [a(2, 1).reshape(1, 2)], {}, 13, 1, {}),
    ("ConstantOfShape", None, [a(2, 3)], 0, "shape", a(2, 3), [a(2, 3).reshape(1, 2), a(3).reshape(())], {}, 13,
     1, {0: {"init", "fed"}}),
    ("TopK", X23, [a(2)], 0, "k", a(2), [a(2).reshape(1, 1), a(2).reshape(())], {}, 11, 2, {}),
    ("Unsqueeze", X23, [a(0)], 0, "axes", a(0), [a(0).reshape(1, 1)], {}, 13, 1, {}),
    ("Squeeze", X13, [a(0)], 0, "axes", a(0), [a(0).reshape(1, 1), a(0).reshape(())], {}, 13, 1, {}),
    ("Pad", X23, [a(0, 1, 0, 1)], 0, "pads", a(0, 1, 0, 1), [a(0, 1, 0, 1).reshape(1, 4), a(0, 1, 0, 1).reshape(2, 2)],
     {}, 13, 1, {0: {"decl", "fed"}}),
    ("Pad", X23, [a(0, 1), None, a(1)], 2, "axes", a(1), [a(1).reshape(1, 1)], {}, 18, 1, {}),
    ("Split", X23, [a(1, 2)], 0, "split", a(1, 2), [a(1, 2).reshape(1, 2)], {"axis": 1}, 13, 2, {}),
    ("Slice", X23, [a(0), a(1), a(1), a(1)], 0, "starts", a(0), [a(0).reshape(1, 1)], {}, 13, 1, {}),
    ("Slice", X23, [a(0), a(1), a(1), a(1)], 1, "ends", a(1), [a(1).reshape(1, 1)], {}, 13, 1, {}),
    ("Slice", X23, [a(0), a(1), a(1), a(1)], 2, "axes", a(1), [a(1).reshape(1, 1)], {}, 13, 1, {}),
    ("Slice", X23, [a(0), a(2), a(1), a(2)], 3, "steps", a(2), [a(2).reshape(1, 1)], {}, 13, 1, {}),
    ("ReduceSum", X23, [a(1)], 0, "axes", a(1), [a(1).reshape(1, 1), a(1).reshape(())], {}, 13, 1, {}),
    ("ReduceMax", X23, [a(1)], 0, "axes", a(1), [a(1).reshape(1, 1), a(1).reshape(())], {}, 18, 1, {}),
    ("Range", None, [a(0).reshape(()), a(5).reshape(()), a(1).reshape(())], 0, "start", a(0).reshape(()),
     [a(0).reshape(1, 1)], {}, 11, 1, {}),
    ("Range", None, [a(0).reshape(()), a(5).reshape(()), a(2).reshape(())], 2, "delta", a(2).reshape(()),
     [a(2).reshape(1, 1)], {}, 11, 1, {}),
    ("OneHot", None, [IDX, a(3), a(0, 1, dt=F32)], 1, "depth", a(3).reshape(()), [a(3).reshape(1, 1)], {}, 11, 1,
     {}),
    ("Resize", X4, [None, a(1, 1, 2, 2, dt=F32)], 1, "scales", a(1, 1, 2, 2, dt=F32),
     [a(1, 1, 2, 2, dt=F32).reshape(1, 4)], {}, 13, 1, {0: {"init", "decl", "fed"}}),
    ("Resize", X4, [a(0, 0, 0, 0, 1, 1, 1, 1, dt=F32), a(1, 1, 2, 2, dt=F32)], 0, "roi",
     a(0, 0, 0, 0, 1, 1, 1, 1, dt=F32), [a(0, 0, 0, 0, 1, 1, 1, 1, dt=F32).reshape(1, 8)],
     {"coordinate_transformation_mode": "tf_crop_and_resize", "mode": "linear"}, 13, 1, {0: {"init", "decl", "fed"}}),
    ("Resize", X4, [None, None, a(1, 1, 4, 6)], 2, "sizes", a(1, 1, 4, 6), [a(1, 1, 4, 6).reshape(1, 4)], {}, 13,
     1, {0: {"init"}}),
    ("Upsample", X4, [a(1, 1, 2, 2, dt=F32)], 0, "scales", a(1, 1, 2, 2, dt=F32),
     [a(1, 1, 2, 2, dt=F32).reshape(1, 4)], {}, 9, 1, {0: {"init", "decl", "fed"}}),
    # scalar operands beside them (scalars by the spec; 1-D of one value taken, as onnxruntime does)
    ("Trilu", X23, [a(1).reshape(())], 0, "k", a(1).reshape(()), [a(1).reshape(1, 1)], {}, 14, 1, {}),
    ("Clip", X23, [a(0.2, dt=F32).reshape(()), a(0.9, dt=F32).reshape(())], 1, "max", a(0.9, dt=F32).reshape(1),
     [a(0.9, dt=F32).reshape(1, 1)], {}, 13, 1, {}),
]

for op, x, operands, vi, what, good, bads, attrs, opset, n_out, lax in CASES:
    label = "%s-%d %s" % (op, opset, what)
    # OneHot's indices are the data input here (no x)
    if op == "OneHot":
        x, operands, vi = IDX, operands[1:], vi - 1
    for origin in ("init", "decl", "fed"):
        m, feeds = build(op, x, operands, vi, good, origin, attrs, opset, n_out)
        got, st, msg, stage = rlx_run(m, feeds)
        # onnxruntime's shape inference refuses a few good ones whose values it cannot see (Pad-18 with fed
        # axes, Resize with fed sizes): the ONNX reference then
        want, ref = ort_run(m, feeds), "onnxruntime"
        if want is None:
            want, ref = ReferenceEvaluator(m).run(None, feeds), "the ONNX reference"
        if not C.check(got is not None, "%s %s good %s: %s at %s: %s" % (label, origin, good.tolist(), st, stage, msg)):
            continue
        for k, (g_, w_) in enumerate(zip(got, want)):
            C.check(g_.shape == w_.shape and np.allclose(g_, w_, rtol=1e-6, atol=0),
                    "%s %s good %s: output %d %s, %s %s" % (label, origin, good.tolist(), k, g_.shape, ref, w_.shape))
        for bi, bad in enumerate(bads):
            m, feeds = build(op, x, operands, vi, bad, origin, attrs, opset, n_out)
            got, st, msg, stage = rlx_run(m, feeds)
            want_st, want_stage = (ARG, "run") if origin == "fed" else (MODEL, "load")
            what_ = "%s from %s of shape %s: %s at %s: %s" % (label, origin, list(bad.shape), st, stage, msg)
            print(what_)
            C.check(st == want_st and stage == want_stage, what_ + " (want %s at %s)" % (want_st, want_stage))
            C.check("'node_%s' (%s)" % (op.lower(), op) in msg and ("%s 'v%d' must be" % (what, vi)) in msg
                    and ("rank %d" % bad.ndim) in msg, what_ + " (the message names node, op, operand and rank)")
            ort_ok = ort_run(m, feeds) is not None
            C.check(ort_ok == (origin in lax.get(bi, set())),
                    "%s: onnxruntime %s it (the table says %s)" % (what_, "accepts" if ort_ok else "refuses",
                                                                  "LAX" if origin in lax.get(bi, set()) else "refused"))

# TopK's K: one value (a 1-D K of 2 or 0 values was refused only when constant)
for kv in (a(2, 1), np.zeros(0, I64)):
    for origin in ("init", "decl", "fed"):
        m, feeds = build("TopK", X23, [kv], 0, kv, origin, {}, 11, 2)
        got, st, msg, stage = rlx_run(m, feeds)
        want_st = ARG if origin == "fed" else MODEL
        C.check(st == want_st and "'node_topk' (TopK)" in msg and ("1-D tensor of one value" in msg or
                                                                   "at most 1" in msg),
                "TopK K %s from %s: %s at %s: %s (want %s)" % (kv.tolist(), origin, st, stage, msg, want_st))
        C.check(ort_run(m, feeds) is None, "TopK K %s from %s: onnxruntime accepts it" % (kv.tolist(), origin))

# a shape operand computed in the graph from a fed value (Identity of an undeclared input) and in an
# eager plan (a Loop beside it): the caller's, at run
for eager in (False, True):
    nodes = [H.make_node("Identity", ["s"], ["s2"], name="id"), H.make_node("Reshape", ["x", "s2"], ["y"],
                                                                          name="node_reshape")]
    ins = [H.make_tensor_value_info("x", T.FLOAT, [2, 3]), H.make_tensor_value_info("s", T.INT64, None)]
    outs = [H.make_empty_tensor_value_info("y")]
    inits = []
    if eager:
        body = H.make_graph([H.make_node("Identity", ["c"], ["co"]), H.make_node("Identity", ["v"], ["vo"])], "body",
                            [H.make_tensor_value_info("i", T.INT64, []), H.make_tensor_value_info("c", T.BOOL, []),
                             H.make_tensor_value_info("v", T.FLOAT, [])],
                            [H.make_tensor_value_info("co", T.BOOL, []), H.make_tensor_value_info("vo", T.FLOAT, [])])
        nodes.append(H.make_node("Loop", ["trips", "", "v0"], ["z"], name="loop", body=body))
        inits += [NH.from_array(np.array(2, I64), "trips"), NH.from_array(np.array(1, F32), "v0")]
        outs.append(H.make_empty_tensor_value_info("z"))
    m = H.make_model(H.make_graph(nodes, "g", ins, outs, inits), opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    for s, want_st in ((a(3, 2), "OK"), (a(3, 2).reshape(1, 2), ARG)):
        got, st, msg, stage = rlx_run(m, {"x": X23, "s": s})
        what_ = "Reshape(x, Identity(s)) eager=%s, s of shape %s: %s at %s: %s" % (eager, list(s.shape), st, stage,
                                                                                   msg)
        print(what_)
        C.check(st == want_st and (st == "OK" or "'node_reshape' (Reshape)" in msg), what_ + " (want %s)" % want_st)
        if st == "OK":
            C.check(np.array_equal(got[0], X23.reshape(3, 2)), what_ + ": values")

# ---------------------------------------------------------------- pools
XP = rand((1, 2, 6, 7))


def pool(op, opset, **kw):
    g = H.make_graph([H.make_node(op, ["x"], ["y"], name="node_pool", **kw)], "g",
                     [H.make_tensor_value_info("x", T.FLOAT, list(XP.shape))], [H.make_empty_tensor_value_info("y")])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m


POOLS = [("MaxPool", 12), ("MaxPool", 22), ("AveragePool", 11), ("AveragePool", 19), ("LpPool", 11),
         ("LpPool", 18)]
for op, opset in POOLS:
    # refused: a pad (begin or end, either spatial dim) at or above kernel_shape, no dilation
    for k, pads in (((2, 2), [2, 0, 0, 0]), ((2, 2), [0, 0, 0, 2]), ((3, 2), [0, 0, 3, 1]), ((1, 1), [0, 1, 0, 0])):
        m = pool(op, opset, kernel_shape=list(k), pads=pads)
        got, st, msg, stage = rlx_run(m, {"x": XP})
        what_ = "%s-%d kernel %s pads %s: %s at %s: %s" % (op, opset, list(k), pads, st, stage, msg)
        print(what_)
        C.check(st == MODEL and stage == "load" and "node 'node_pool' (%s)" % op in msg and
                "must be smaller than the kernel extent" in msg, what_ + " (want %s at load)" % MODEL)
        C.check(ort_run(m, {"x": XP}) is None, what_ + ": onnxruntime accepts it")
    # run: pads below the kernel, against onnxruntime
    for k, pads, extra in (((2, 2), [1, 1, 1, 1], {}), ((3, 3), [2, 0, 1, 2], {}), ((3, 2), [2, 1, 2, 1],
                                                                                      {"strides": [2, 2]})):
        m = pool(op, opset, kernel_shape=list(k), pads=pads, **extra)
        got, st, msg, stage = rlx_run(m, {"x": XP})
        want = ort_run(m, {"x": XP})
        what_ = "%s-%d kernel %s pads %s %s" % (op, opset, list(k), pads, extra)
        if C.check(got is not None and want is not None, "%s: %s %s" % (what_, st, msg)):
            C.check(got[0].shape == want[0].shape and np.allclose(got[0], want[0], rtol=1e-5, atol=1e-6),
                    "%s: %s, onnxruntime %s" % (what_, got[0].shape, want[0].shape))
    # dilations (MaxPool from 10, AveragePool from 19, LpPool from 18): the extent decides
    if (op, opset) in (("MaxPool", 12), ("MaxPool", 22), ("AveragePool", 19), ("LpPool", 18)):
        m = pool(op, opset, kernel_shape=[2, 2], pads=[2, 2, 2, 2], dilations=[2, 2])  # extent 3: runs
        got, st, msg, stage = rlx_run(m, {"x": XP})
        want = ReferenceEvaluator(m).run(None, {"x": XP})[0]
        what_ = "%s-%d kernel [2, 2] dilations [2, 2] pads 2" % (op, opset)
        if C.check(got is not None, "%s: %s %s" % (what_, st, msg)):
            C.check(got[0].shape == want.shape and np.allclose(got[0], want, rtol=1e-5, atol=1e-6),
                    "%s: %s, the ONNX reference %s" % (what_, got[0].shape, want.shape))
        C.check(ort_run(m, {"x": XP}) is None, what_ + ": onnxruntime accepts it (it compares with kernel_shape)")
        m = pool(op, opset, kernel_shape=[2, 2], pads=[0, 3, 0, 0], dilations=[2, 2])  # extent 3: refused
        got, st, msg, stage = rlx_run(m, {"x": XP})
        C.check(st == MODEL and "kernel extent 3 (kernel_shape 2, dilation 2)" in msg,
                "%s-%d kernel [2, 2] dilations [2, 2] pads 3: %s at %s: %s" % (op, opset, st, stage, msg))
# auto_pad SAME_* computes pads below the extent, VALID has none: unaffected
for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
    m = pool("MaxPool", 12, kernel_shape=[3, 3], strides=[3, 3], auto_pad=ap)
    got, st, msg, stage = rlx_run(m, {"x": XP})
    want = ort_run(m, {"x": XP})
    if C.check(got is not None and want is not None, "MaxPool auto_pad %s: %s %s" % (ap, st, msg)):
        C.check(np.array_equal(got[0], want[0]), "MaxPool auto_pad %s: values" % ap)

C.done()
