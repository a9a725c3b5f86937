"""Invalid models that rlx used to accept, and model-local functions
resolved at their own opset.

A tester found five holes, each a model that the onnx checker and
onnxruntime refuse and rlx loaded:
1. an attribute of another type than its op version's schema gives it:
   Cast at opset <= 5 (Cast-1, whose `to` is a STRING naming the type) with
   an INT `to`, LpPool-1 with an INT p (a FLOAT then); the valid forms run;
2. a required attribute missing (BatchNormalization-1's consumed_inputs);
3. an AttributeProto without its `type` field (IR version >= 2 requires
   it);
4. an attribute named "_rlx..." (rlx's internal ones) in a model file,
   dropped or ignored silently: now refused as an unknown attribute;
5. a model-local function's nodes were resolved at the model's opset, not
   at the function's own opset_import: an opset-13 function's Softmax ran
   as Softmax-11 (over the flattened trailing dims) in an opset-11 model.
   Now a function's nodes are resolved at its own opset, and a function
   whose opset_import gives an op another version than the model's is
   refused, as the onnx checker refuses it (onnxruntime 1.22 loads such a
   model and runs the function's nodes at the model's opset, against the
   IR spec: a Softmax-13 function in an opset-11 model computes Softmax-11
   there; rlx refuses rather than differ silently from one or the other);
   a function whose opset_import lacks the domain of one of its nodes is
   refused, as both refuse it.
Each refusal is RLX_ERR_INVALID_MODEL naming the node, the op and what is
wrong; the same models are checked against onnx.checker and onnxruntime
where those are installed. The per-op sweep over every schema is in
test_attr_schemas."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

try:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
except ImportError:
    R.skip("the onnx package is not installed (run scripts/setup.sh)")
try:
    import onnxruntime as ort
except ImportError:
    ort = None

rlx = R.import_rlx()
C = R.Checker("test_invalid_attrs")
rng = R.seeded_rng(1707)


def model(nodes, opset, inputs, outputs, functions=None, extra_opsets=None, ir=None):
    ops = [h.make_opsetid("", opset)] + list(extra_opsets or [])
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs), opset_imports=ops, functions=functions or [])
    m.ir_version = ir or (8 if opset <= 18 else 10)
    return m


def vi(name, t, shape):
    return h.make_tensor_value_info(name, t, shape)


def load_error(m):
    """(status, message) of rlx.Model on m, or ('OK', '')."""
    try:
        rlx.Model(m.SerializeToString())
        return "OK", ""
    except rlx.Error as e:
        return e.status, str(e)


def checker_refuses(m):
    try:
        onnx.checker.check_model(m)
        return False
    except Exception:  # noqa: BLE001
        return True


def ort_refuses(m):
    """True or False; None without onnxruntime."""
    if ort is None:
        return None
    try:
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return False
    except Exception:  # noqa: BLE001
        return True


def run_rlx(m, feeds):
    return rlx.Session(rlx.Model(m.SerializeToString()), device="cpu").run(feeds)


def expect_refused(m, what, words, checker=True, by_ort=True):
    st, msg = load_error(m)
    C.check(st == "RLX_ERR_INVALID_MODEL" and all(w in msg for w in words),
            "%s: refused with INVALID_MODEL naming %s (%s: %s)" % (what, words, st, msg))
    if checker:
        C.check(checker_refuses(m), "%s: onnx.checker refuses it too" % what)
    r = ort_refuses(m) if by_ort else None
    if r is not None:
        C.check(r, "%s: onnxruntime refuses it too" % what)
    print("%s: %s" % (what, msg))


# ---------------------------------------------------------------- 1. attribute types
x23 = [vi("x", T.FLOAT, [2, 3])]
for opset in (1, 5):
    cast_int = model([h.make_node("Cast", ["x"], ["y"], name="cast_i", to=T.INT32)], opset, x23,
                     [vi("y", T.INT32, [2, 3])])
    # onnxruntime implements no opset below 7: the checker is the reference here
    expect_refused(cast_int, "Cast-1 (opset %d) with an INT to" % opset,
                   ["cast_i", "Cast", "'to'", "Cast-1", "must be a STRING", "got an INT (6)"], by_ort=False)
cast6_str = model([h.make_node("Cast", ["x"], ["y"], name="cast_s", to="INT32")], 9, x23, [vi("y", T.INT32, [2, 3])])
expect_refused(cast6_str, "Cast-9 with a STRING to", ["cast_s", "'to'", "Cast-9", "must be an INT", "got STRING"])
x4 = [vi("x", T.FLOAT, [1, 2, 4, 4])]
lp_int = model([h.make_node("LpPool", ["x"], ["y"], name="lp_i", kernel_shape=[2, 2], p=2)], 1, x4,
               [vi("y", T.FLOAT, None)])
expect_refused(lp_int, "LpPool-1 with an INT p", ["lp_i", "LpPool", "'p'", "LpPool-1", "must be a FLOAT"],
               by_ort=False)
glp_int = model([h.make_node("GlobalLpPool", ["x"], ["y"], name="glp_i", p=3)], 1, x4, [vi("y", T.FLOAT, None)])
expect_refused(glp_int, "GlobalLpPool-1 with an INT p", ["glp_i", "'p'", "GlobalLpPool-1", "must be a FLOAT"],
               by_ort=False)
lp2_float = model([h.make_node("LpPool", ["x"], ["y"], name="lp_f", kernel_shape=[2, 2], p=2.0)], 11, x4,
                  [vi("y", T.FLOAT, None)])
expect_refused(lp2_float, "LpPool-11 with a FLOAT p", ["lp_f", "'p'", "LpPool-11", "must be an INT", "FLOAT (2)"])

# the valid forms load and compute (random inputs; outputs compared with numpy)
xc = (rng.standard_normal((2, 3)) * 10).astype(np.float32)
for opset, to in ((1, "INT32"), (5, "INT32"), (6, T.INT32), (13, T.INT32)):
    m = model([h.make_node("Cast", ["x"], ["y"], name="cast_ok", to=to)], opset, x23, [vi("y", T.INT32, [2, 3])])
    st, msg = load_error(m)
    if C.check(st == "OK", "Cast at opset %d with to=%r loads (%s %s)" % (opset, to, st, msg)):
        y = run_rlx(m, {"x": xc})[0]
        C.check(y.dtype == np.int32 and np.array_equal(y, xc.astype(np.int32)), "Cast at opset %d casts" % opset)
    C.check(not checker_refuses(m), "the checker accepts Cast at opset %d with to=%r" % (opset, to))
xp = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
for opset, p in ((1, 2.0), (2, 2), (11, 2)):
    m = model([h.make_node("LpPool", ["x"], ["y"], name="lp_ok", kernel_shape=[2, 2], strides=[2, 2], p=p)], opset,
              x4, [vi("y", T.FLOAT, None)])
    st, msg = load_error(m)
    if C.check(st == "OK", "LpPool at opset %d with p=%r loads (%s %s)" % (opset, p, st, msg)):
        y = run_rlx(m, {"x": xp})[0]
        ref = np.sqrt((xp.astype(np.float64) ** 2).reshape(1, 2, 2, 2, 2, 2).sum(axis=(3, 5)))
        C.check(np.allclose(y, ref, rtol=1e-5), "LpPool at opset %d with p=%r is the L2 pool" % (opset, p))

# ---------------------------------------------------------------- 2. required attributes
xb = [vi("x", T.FLOAT, [2, 3, 4])] + [vi(n, T.FLOAT, [3]) for n in ("s", "b", "mean", "var")]
bn_ins = ["x", "s", "b", "mean", "var"]
bn1 = model([h.make_node("BatchNormalization", bn_ins, ["y"], name="bn1", is_test=1)], 5, xb, [vi("y", T.FLOAT, None)])
expect_refused(bn1, "BatchNormalization-1 without consumed_inputs",
               ["bn1", "BatchNormalization", "required attribute 'consumed_inputs'", "BatchNormalization-1"],
               by_ort=False)
bn1_ok = model([h.make_node("BatchNormalization", bn_ins, ["y"], name="bn1", is_test=1,
                            consumed_inputs=[0, 0, 0, 1, 1])], 5, xb, [vi("y", T.FLOAT, None)])
st, msg = load_error(bn1_ok)
if C.check(st == "OK", "BatchNormalization-1 with consumed_inputs loads (%s %s)" % (st, msg)):
    f = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    for n in ("s", "b", "mean"):
        f[n] = rng.standard_normal(3).astype(np.float32)
    f["var"] = rng.uniform(0.5, 2.0, 3).astype(np.float32)
    y = run_rlx(bn1_ok, f)[0]
    sh = (1, 3, 1)
    ref = (f["x"] - f["mean"].reshape(sh)) / np.sqrt(f["var"].reshape(sh) + 1e-5) * f["s"].reshape(sh) + \
        f["b"].reshape(sh)
    C.check(np.allclose(y, ref, rtol=1e-4, atol=1e-5), "BatchNormalization-1 normalises")
# a required attribute of a current op
cast_none = model([h.make_node("Cast", ["x"], ["y"], name="cast_n")], 13, x23, [vi("y", T.INT32, [2, 3])])
expect_refused(cast_none, "Cast-13 without to", ["cast_n", "required attribute 'to'", "Cast-13"])

# ---------------------------------------------------------------- 3. an attribute without its type
untyped = model([h.make_node("Softmax", ["x"], ["y"], name="sm_untyped", axis=0)], 13, x23, [vi("y", T.FLOAT, [2, 3])])
untyped.graph.node[0].attribute[0].ClearField("type")
UNTYPED_WORDS = ["sm_untyped", "Softmax", "'axis'", "no type"]
expect_refused(untyped, "an attribute without its type (IR 8)", UNTYPED_WORDS)
untyped.ir_version = 3
expect_refused(untyped, "an attribute without its type (IR 3)", UNTYPED_WORDS)
# in a function's node and in a Loop body
fn_untyped = h.make_function("local", "F", ["a"], ["b"], [h.make_node("Softmax", ["a"], ["b"], name="sm_fn", axis=0)],
                             [h.make_opsetid("", 13)])
fn_untyped.node[0].attribute[0].ClearField("type")
expect_refused(model([h.make_node("F", ["x"], ["y"], domain="local")], 13, x23, [vi("y", T.FLOAT, [2, 3])],
                     functions=[fn_untyped], extra_opsets=[h.make_opsetid("local", 1)]),
               "an untyped attribute in a function", ["sm_fn", "function 'F'", "'axis'", "no type"])
body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]),
                     h.make_node("Softmax", ["acc"], ["acc_out"], name="sm_body", axis=0)], "body",
                    [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("acc", T.FLOAT, [2, 3])],
                    [vi("c_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 3])])
body.node[1].attribute[0].ClearField("type")
expect_refused(model([h.make_node("Constant", [], ["n"], value=h.make_tensor("n", T.INT64, [], [2])),
                      h.make_node("Loop", ["n", "", "x"], ["y"], name="loop0", body=body)], 13, x23,
                     [vi("y", T.FLOAT, [2, 3])]),
               "an untyped attribute in a Loop body", ["sm_body", "'axis'", "no type"])
# a type that the value's field contradicts: an INT attribute holding a float (it read as 0)
mixed = model([h.make_node("Softmax", ["x"], ["y"], name="sm_mixed", axis=0)], 13, x23, [vi("y", T.FLOAT, [2, 3])])
mixed.graph.node[0].attribute[0].ClearField("i")
mixed.graph.node[0].attribute[0].f = 1.0
expect_refused(mixed, "an INT attribute holding a FLOAT", ["sm_mixed", "'axis'", "of type INT", "value of type FLOAT"])
typed = model([h.make_node("Softmax", ["x"], ["y"], name="sm_typed", axis=0)], 13, x23, [vi("y", T.FLOAT, [2, 3])])
C.check(load_error(typed)[0] == "OK", "the same attribute with its type loads")

# ---------------------------------------------------------------- 4. rlx's internal attribute names
xw = [vi("x", T.FLOAT, [1, 1, 4, 4]), vi("w", T.FLOAT, [1, 1, 3, 3])]
for an, v in (("_rlx_act", 1), ("_rlx_act_alpha", 0.5), ("_rlxfoo", 1)):
    conv = model([h.make_node("Conv", ["x", "w"], ["y"], name="conv_int", **{an: v})], 13, xw,
                 [vi("y", T.FLOAT, None)])
    expect_refused(conv, "Conv with attribute %s" % an, ["conv_int", "Conv", "'%s'" % an, "internal"])
conv_ok = model([h.make_node("Conv", ["x", "w"], ["y"], name="conv_ok")], 13, xw, [vi("y", T.FLOAT, None)])
C.check(load_error(conv_ok)[0] == "OK", "the Conv without it loads")

# ---------------------------------------------------------------- 5. model-local functions at their own opset
x234 = [vi("x", T.FLOAT, [2, 3, 4])]
xs = rng.standard_normal((2, 3, 4)).astype(np.float32)


def softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def fn_model(fn_opsets, model_opset, op="Softmax", extra_model=None, name="sm_in_fn"):
    f = h.make_function("local", "F", ["a"], ["b"], [h.make_node(op, ["a"], ["b"], name=name)], fn_opsets)
    return model([h.make_node("F", ["x"], ["y"], name="call_f", domain="local")], model_opset, x234,
                 [vi("y", T.FLOAT, [2, 3, 4])], functions=[f],
                 extra_opsets=[h.make_opsetid("local", 1)] + list(extra_model or []))


# a function of opset 13 (Softmax-13, over the last axis) in an opset-11 model (Softmax-11): refused
mism = fn_model([h.make_opsetid("", 13)], 11)
expect_refused(mism, "Softmax-13 in a function of an opset-11 model",
               ["call_f", "sm_in_fn", "function 'F'", "Softmax-13", "Softmax-11", "opset 13", "opset 11",
                "not compatible"], by_ort=False)
if ort is not None and not ort_refuses(mism):
    y = ort.InferenceSession(mism.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": xs})[0]
    print("note: onnxruntime %s loads it and computes Softmax-%s" %
          (ort.__version__, "11 (the model's)" if np.allclose(y, softmax(xs.reshape(2, 12), -1).reshape(2, 3, 4),
                                                              rtol=1e-5) else "13 (the function's)"))
# and the reverse; and an op whose version differs though the opsets are near (Relu-13 vs Relu-14)
expect_refused(fn_model([h.make_opsetid("", 11)], 13), "Softmax-11 in a function of an opset-13 model",
               ["sm_in_fn", "Softmax-11", "Softmax-13", "not compatible"], by_ort=False)
expect_refused(fn_model([h.make_opsetid("", 13)], 17, op="Relu", name="relu_in_fn"),
               "Relu-13 in a function of an opset-17 model (Relu-14)",
               ["relu_in_fn", "Relu-13", "Relu-14", "not compatible"], by_ort=False)
# the same op version at both opsets: loads, computed at the function's version
for fo, mo in ((13, 13), (13, 17), (17, 13), (11, 12)):
    m = fn_model([h.make_opsetid("", fo)], mo)
    st, msg = load_error(m)
    axis = -1 if fo >= 13 else None
    want = softmax(xs, -1) if fo >= 13 else softmax(xs.reshape(2, 12), -1).reshape(2, 3, 4)
    if C.check(st == "OK", "a function of opset %d in an opset-%d model loads (%s %s)" % (fo, mo, st, msg)):
        y = run_rlx(m, {"x": xs})[0]
        C.check(np.allclose(y, want, rtol=1e-5, atol=1e-6),
                "a function of opset %d in an opset-%d model: Softmax over %s" % (fo, mo, "the last axis" if axis
                                                                                   else "the flattened dims"))
    C.check(not checker_refuses(m), "the checker accepts a function of opset %d in an opset-%d model" % (fo, mo))
    if ort is not None:
        C.check(not ort_refuses(m), "onnxruntime accepts a function of opset %d in an opset-%d model" % (fo, mo))
# a function without an opset_import of the default domain it uses, or of the domain of a function it calls
expect_refused(fn_model([], 13), "a function that imports no default-domain opset",
               ["sm_in_fn", "function 'F'", "opset_import does not list"])
g_fn = h.make_function("local", "G", ["a"], ["b"], [h.make_node("Neg", ["a"], ["b"])], [h.make_opsetid("", 13)])
f_fn = h.make_function("local", "F", ["a"], ["b"], [h.make_node("G", ["a"], ["b"], domain="local", name="call_g")],
                       [h.make_opsetid("", 13)])
nested = model([h.make_node("F", ["x"], ["y"], name="call_f", domain="local")], 13, x234,
               [vi("y", T.FLOAT, [2, 3, 4])], functions=[f_fn, g_fn], extra_opsets=[h.make_opsetid("local", 1)])
expect_refused(nested, "a function calling another of a domain it does not import",
               ["call_g", "local.G", "function 'F'", "domain 'local'", "opset_import does not list"])
f_fn.opset_import.extend([h.make_opsetid("local", 1)])
nested_ok = model([h.make_node("F", ["x"], ["y"], name="call_f", domain="local")], 13, x234,
                  [vi("y", T.FLOAT, [2, 3, 4])], functions=[f_fn, g_fn], extra_opsets=[h.make_opsetid("local", 1)])
st, msg = load_error(nested_ok)
if C.check(st == "OK", "the same with the domain imported loads (%s %s)" % (st, msg)):
    C.check(np.array_equal(run_rlx(nested_ok, {"x": xs})[0], -xs), "the nested call negates")
# a function of an opset rlx does not implement (onnxruntime refuses it too)
st, msg = load_error(fn_model([h.make_opsetid("", 40)], 17))
C.check(st == "RLX_ERR_UNSUPPORTED" and "opset 40" in msg and "function 'F'" in msg,
        "a function of opset 40 is unsupported (%s: %s)" % (st, msg))
# an error inside a function names the function's opset
clip_f = fn_model([h.make_opsetid("", 13)], 14, op="Clip", name="clip_in_fn")
clip_f.functions[0].node[0].attribute.extend([h.make_attribute("min", 0.0)])
expect_refused(clip_f, "Clip-13 with Clip-6's min in a function (model opset 14)",
               ["clip_in_fn", "'min'", "Clip-13 at opset 13"])
C.done()
