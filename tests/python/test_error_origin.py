"""Which status a bad shape-like value gets: the one of where it comes from.

include/rlx/rlx.h: RLX_ERR_INVALID_MODEL is "the model file or graph is
malformed", RLX_ERR_INVALID_ARGUMENT "a caller passed something wrong"
(rlx_session_run: wrong inputs). So a bad value that comes from the model
(an initializer, or a constant computed from initializers only) fails with
INVALID_MODEL, when the model loads or when the plan folds it; one that
comes from the caller's feed (a graph input's data, or its shape through
Shape) fails with INVALID_ARGUMENT when the session runs. Either message
names the node and its op. The tester's finding (tester13 f4): Expand's
shape fed as a graph input ([4, 3] for x [2, 3]) failed with INVALID_MODEL.

Each op whose output shape comes from a tensor (Expand, Reshape, Tile,
Slice, ConstantOfShape, Range, Pad, Unsqueeze, TopK, OneHot) gets a bad
value from four origins: an initializer, Identity of an initializer
(folded when the plan compiles), a graph input, and arithmetic on
Shape(x) of a graph input. A value that fails against x's shape (x's dims
are symbolic: the caller's) is the caller's whatever its origin, as an
input shape the model does not accept; with x's dims static it fails when
the model loads. Good values from the same models run (so each check can
fail both ways).

Skips (exit 77) while librlx.so is not built."""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_error_origin")

MODEL, ARG = "RLX_ERR_INVALID_MODEL", "RLX_ERR_INVALID_ARGUMENT"
NP2T = {np.dtype(np.int64): T.INT64, np.dtype(np.float32): T.FLOAT, np.dtype(np.int32): T.INT32}


def build(op, x, v, vin, origin, attrs, opset):
    """op(x, ..., v at input vin, ...), v from `origin`. x None: no data input.
    Returns (model bytes, feeds)."""
    nodes, ins, inits, feeds = [], [], [], {}
    if x is not None:
        ins.append(H.make_tensor_value_info("x", NP2T[x.dtype], ["d%d" % i for i in range(x.ndim)]))
        feeds["x"] = x
    if origin == "initializer":
        inits.append(NH.from_array(v, "v"))
    elif origin == "constant":  # computed from an initializer: folded with the plan
        inits.append(NH.from_array(v, "v0"))
        nodes.append(H.make_node("Identity", ["v0"], ["v"], name="id"))
    elif origin == "input":
        ins.append(H.make_tensor_value_info("v", NP2T[v.dtype], list(v.shape)))
        feeds["v"] = v
    elif origin == "input_shape":  # v = Shape(z) - 100 with z fed of shape v + 100 (int64 1-D v only)
        ins.append(H.make_tensor_value_info("z", T.FLOAT, ["z%d" % i for i in range(v.size)]))
        inits.append(NH.from_array(np.int64(100), "hundred"))
        nodes += [H.make_node("Shape", ["z"], ["zs"], name="shape"),
                  H.make_node("Sub", ["zs", "hundred"], ["v"], name="sub")]
        feeds["z"] = np.zeros([int(d) + 100 for d in v], np.float32)
    names = ["x"] if x is not None else []
    names += ["k%d" % i for i in range(vin - len(names))] + ["v"]
    for i, nm in enumerate(names):
        if nm.startswith("k"):  # other constant operands (Range's start and limit, Slice's starts and ends)
            inits.append(NH.from_array(attrs.pop("_in%d" % i), nm))
    outs = ["y", "y_indices"] if op == "TopK" else ["y"]
    nodes.append(H.make_node(op, names, outs, name="node_" + op.lower(), **attrs))
    g = H.make_graph(nodes, "g", ins, [H.make_empty_tensor_value_info("y")], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString(), feeds


def outcome(model, feeds):
    """(status or 'OK', message, stage)."""
    try:
        mod = rlx.Model(model)
    except rlx.Error as e:
        return e.status, str(e), "load"
    try:
        rlx.Session(mod, device="cpu").run(feeds)
        return "OK", "", "run"
    except rlx.Error as e:
        return e.status, str(e), "run"


X23 = np.zeros((2, 3), np.float32)
I64 = np.int64
# op, x, good value, bad values, index of the value input, attributes, opset
CASES = [
    ("Expand", X23, np.array([2, 3], I64), [np.array([4, 3], I64), np.array([-2, 3], I64)], 1, {}, 13),
    ("Reshape", X23, np.array([3, 2], I64), [np.array([7, 5], I64), np.array([-1, -1], I64)], 1, {}, 13),
    ("Tile", X23, np.array([2, 1], I64), [np.array([-1, 2], I64), np.array([2], I64)], 1, {}, 13),
    ("ConstantOfShape", None, np.array([2, 3], I64), [np.array([-3], I64)], 0, {}, 13),
    ("Pad", X23, np.array([0, 1, 0, 1], I64), [np.array([0, -5, 0, 0], I64), np.array([1, 1], I64)], 1, {}, 13),
    ("Unsqueeze", X23, np.array([0], I64), [np.array([5], I64), np.array([1, 1], I64)], 1, {}, 13),
    ("TopK", X23, np.array([2], I64), [np.array([4], I64), np.array([-1], I64)], 1, {}, 11),
    ("Slice", X23, np.array([1], I64), [np.array([5], I64), np.array([1, 1], I64)], 3,
     {"_in1": np.array([0], I64), "_in2": np.array([1], I64)}, 13),
    ("Range", None, np.array(1, I64), [np.array(0, I64)], 2, {"_in0": np.array(0, I64), "_in1": np.array(5, I64)}, 11),
]

AGAINST_X = {"Expand": [np.array([4, 3], I64)], "Reshape": [np.array([7, 5], I64)],
             "Pad": [np.array([0, -5, 0, 0], I64)], "TopK": [np.array([4], I64)]}

for op, x, good, bads, vin, attrs, opset in CASES:
    origins = ["initializer", "constant", "input"]
    if good.ndim == 1 and all(int(d) >= 0 for d in good):
        origins.append("input_shape")
    for origin in origins:
        m, feeds = build(op, x, good, vin, origin, dict(attrs), opset)
        st, msg, stage = outcome(m, feeds)
        C.check(st == "OK", "%s %s good value %s: %s %s" % (op, origin, good.tolist(), st, msg))
        for bad in bads:
            if origin == "input_shape" and (bad.ndim != 1 or any(int(d) < 0 for d in bad)):
                continue
            m, feeds = build(op, x, bad, vin, origin, dict(attrs), opset)
            st, msg, stage = outcome(m, feeds)
            # a value that fails against x's shape, which the caller feeds (x's dims are
            # symbolic), is the caller's whatever its origin; one that fails alone (or against
            # x's rank, which the model fixes) is of its origin
            against_x = any(np.array_equal(bad, b) for b in AGAINST_X.get(op, []))
            want = MODEL if origin in ("initializer", "constant") and not against_x else ARG
            what = "%s value %s from %s: %s at %s: %s" % (op, bad.tolist(), origin, st, stage, msg)
            print(what)
            C.check(st == want, what + " (want %s)" % want)
            C.check("'node_%s' (%s)" % (op.lower(), op) in msg, what + " (the message names the node and op)")

# x with static dims: the same values fail against the model's own shape, when it loads
for op, v in (("Expand", np.array([4, 3], I64)), ("Reshape", np.array([7, 5], I64))):
    g = H.make_graph([H.make_node(op, ["x", "v"], ["y"], name="node_" + op.lower())], "g",
                     [H.make_tensor_value_info("x", T.FLOAT, [2, 3])], [H.make_empty_tensor_value_info("y")],
                     [NH.from_array(v, "v")])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    st, msg, stage = outcome(m.SerializeToString(), {"x": X23})
    C.check(st == MODEL and stage == "load" and "'node_%s'" % op.lower() in msg,
            "%s value %s for a static x [2, 3]: %s at %s: %s" % (op, v.tolist(), st, stage, msg))

# An output too large for its byte size (tester15b 09): an int64 Range to 2^62, a Resize by scales of 1e9.
# The dims come from the values: the model's (an initializer, a constant) fail as INVALID_MODEL, the
# caller's (a graph input, an overridable initializer fed at run time) as INVALID_ARGUMENT.


def range_model(origin, limit):
    vals = {"s": np.array(0, I64), "l": np.array(limit, I64), "d": np.array(1, I64)}
    nodes, ins, inits, feeds = [], [], [], {}
    for nm, v in vals.items():
        if nm != "l" or origin == "initializer":
            inits.append(NH.from_array(v, nm))
        elif origin == "constant":
            inits.append(NH.from_array(v, "l0"))
            nodes.append(H.make_node("Identity", ["l0"], ["l"], name="id"))
        else:
            ins.append(H.make_tensor_value_info("l", T.INT64, []))
            feeds["l"] = v
    nodes.append(H.make_node("Range", ["s", "l", "d"], ["y"], name="node_range"))
    g = H.make_graph(nodes, "g", ins, [H.make_empty_tensor_value_info("y")], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 11)])
    m.ir_version = 8
    return m.SerializeToString(), feeds


def resize_model(origin, scale):
    sc = np.array([1, 1, scale, scale], np.float32)
    ins = [H.make_tensor_value_info("x", T.FLOAT, [1, 1, 3, 3])]
    inits, feeds = [], {"x": np.ones((1, 1, 3, 3), np.float32)}
    if origin in ("initializer", "overridable"):
        inits.append(NH.from_array(np.array([1, 1, 2, 2], np.float32) if origin == "overridable" else sc, "sc"))
    if origin in ("input", "overridable"):
        ins.append(H.make_tensor_value_info("sc", T.FLOAT, [4]))
        feeds["sc"] = sc
    g = H.make_graph([H.make_node("Resize", ["x", "", "sc"], ["y"], name="node_resize", mode="nearest")], "g", ins,
                     [H.make_empty_tensor_value_info("y")], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString(), feeds


for op, make, origins, good, bad in (
        ("Range", range_model, ("initializer", "constant", "input"), 5, 2 ** 62),
        ("Resize", resize_model, ("initializer", "input", "overridable"), 2.0, 1e9)):
    for origin in origins:
        st, msg, stage = outcome(*make(origin, good))
        C.check(st == "OK", "%s %s good value %s: %s %s" % (op, origin, good, st, msg))
        st, msg, stage = outcome(*make(origin, bad))
        want = MODEL if origin in ("initializer", "constant") else ARG
        what = "%s value %s from %s: %s at %s: %s" % (op, bad, origin, st, stage, msg)
        print(what)
        C.check(st == want and "too large" in msg, what + " (want %s, 'too large')" % want)
        C.check("'node_%s' (%s)" % (op.lower(), op) in msg, what + " (the message names the node and op)")

# Inside a Loop body or an If branch (eager plans): the subgraph's node decides, as at top level, and the
# Loop / If does not make the model's value the caller's (tester14 f6: a body's or the outer graph's
# initializer [-4, 3] gave INVALID_ARGUMENT). Expand(acc, v), acc carried from the fed x [2, 3].
XS = H.make_tensor_value_info("x", T.FLOAT, ["a", "b"])


def loop_model(v_where, v):
    body_nodes = [H.make_node("Identity", ["cin"], ["cout"]),
                  H.make_node("Expand", ["acc", "v"], ["acc_o"], name="node_expand")]
    body_ins = [H.make_tensor_value_info("i", T.INT64, []), H.make_tensor_value_info("cin", T.BOOL, []),
                H.make_tensor_value_info("acc", T.FLOAT, None)]
    body = H.make_graph(body_nodes, "body", body_ins,
                        [H.make_tensor_value_info("cout", T.BOOL, []), H.make_tensor_value_info("acc_o", T.FLOAT, None)],
                        [NH.from_array(v, "v")] if v_where == "body" else [])
    inits = [NH.from_array(np.array(2, I64), "trip"), NH.from_array(np.array(True), "cond")]
    ins, feeds = [XS], {"x": X23}
    if v_where == "outer":
        inits.append(NH.from_array(v, "v"))
    elif v_where == "input":
        ins.append(H.make_tensor_value_info("v", T.INT64, [2]))
        feeds["v"] = v
    g = H.make_graph([H.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body, name="loop")], "g", ins,
                     [H.make_empty_tensor_value_info("y")], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString(), feeds


for v_where in ("body", "outer", "input"):
    for v, bad in ((np.array([2, 3], I64), False), (np.array([-4, 3], I64), True)):
        m, feeds = loop_model(v_where, v)
        st, msg, stage = outcome(m, feeds)
        want = ("OK" if not bad else ARG if v_where == "input" else MODEL)
        what = "Loop body's Expand, value %s from the %s: %s at %s: %s" % (v.tolist(), v_where, st, stage, msg)
        print(what)
        C.check(st == want, what + " (want %s)" % want)
        if bad:
            C.check("'node_expand' (Expand)" in msg, what + " (the message names the body's node and op)")

then_g = H.make_graph([H.make_node("Expand", ["x", "v"], ["t"], name="node_expand")], "then", [],
                      [H.make_tensor_value_info("t", T.FLOAT, None)], [NH.from_array(np.array([-4, 3], I64), "v")])
else_g = H.make_graph([H.make_node("Identity", ["x"], ["e"])], "else", [], [H.make_tensor_value_info("e", T.FLOAT, None)])
g = H.make_graph([H.make_node("ReduceSum", ["x"], ["s"], keepdims=0), H.make_node("Greater", ["s", "zero"], ["c"]),
                  H.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
                 "g", [XS], [H.make_empty_tensor_value_info("y")], [NH.from_array(np.float32(-1), "zero")])
m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
m.ir_version = 8
st, msg, stage = outcome(m.SerializeToString(), {"x": X23})
C.check(st == MODEL and "'node_expand' (Expand)" in msg,
        "If branch's Expand, value [-4, 3] from the branch: %s at %s: %s (want %s)" % (st, stage, msg, MODEL))

C.done()
