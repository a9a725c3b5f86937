"""Attributes that a node's op version does not have are refused.

An opset-13 Clip carrying Clip-6's min and max attributes loaded and ran
unclipped on rlx (the attributes were ignored with a warning), while
onnxruntime refuses the model. Now a default-domain node whose op version
(at the model's opset) has no attribute of a name it carries fails the
load with RLX_ERR_INVALID_MODEL naming the node, the op, the attribute and
the opset, in the main graph, in If/Loop/Scan bodies and in model-local
functions. Valid old forms still run: a Clip-6 with min/max clips (against
numpy, random inputs), Cast-1's string `to`, opset-6 Add with broadcast and
axis, consumed_inputs. Contrib ops (com.microsoft) refuse an unknown
attribute as onnxruntime does. The completeness of rlx's attribute schemas
against ONNX's is test_attr_schemas."""
import os
import sys
import tempfile

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

RLX = R.built("rlx")
rlx = R.import_rlx()
C = R.Checker("test_unknown_attrs")
TMP = tempfile.mkdtemp(prefix="rlx_unknown_attrs_")
rng = R.seeded_rng(1306)


def model(nodes, opset, inputs=None, outputs=None, functions=None, extra_opsets=None, shape=(2, 3)):
    ins = inputs or [h.make_tensor_value_info("x", T.FLOAT, list(shape))]
    outs = outputs or [h.make_tensor_value_info("y", T.FLOAT, None)]
    ops = [h.make_opsetid("", opset)] + list(extra_opsets or [])
    m = h.make_model(h.make_graph(nodes, "g", ins, outs), opset_imports=ops, functions=functions or [])
    m.ir_version = 8 if opset <= 18 else 10
    return m


def save(m, name):
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


def load_error(m):
    """(status, message) of rlx.Model on m, or ('OK', '')."""
    try:
        rlx.Model(m.SerializeToString())
        return "OK", ""
    except rlx.Error as e:
        return e.status, str(e)


def ort_refuses(m):
    if ort is None:
        return None
    try:
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return False
    except Exception:
        return True


def run_rlx(m, feeds):
    return rlx.Session(rlx.Model(m.SerializeToString()), device="cpu").run(feeds)


def expect_refused(m, what, words):
    st, msg = load_error(m)
    C.check(st == "RLX_ERR_INVALID_MODEL" and all(w in msg for w in words),
            "%s: refused with INVALID_MODEL naming %s (%s: %s)" % (what, words, st, msg))
    return msg


# 1. the report: Clip-13 with Clip-6's attributes
clip13 = model([h.make_node("Clip", ["x"], ["y"], name="clip0", min=-0.5, max=0.5)], 13)
# (onnx's helper writes the attributes sorted: max comes first)
msg = expect_refused(clip13, "Clip-13 with min/max",
                     ["clip0", "Clip", "'max'", "opset 13", "Clip-13", "removed in Clip-11", "input"])
print("message:", msg)
r = ort_refuses(clip13)
if r is not None:
    C.check(r, "onnxruntime refuses the Clip-13 model too")
path = save(clip13, "clip13_attrs")
for cmd in (["info", path], ["run", path]):
    rc, out, err = R.run([RLX] + cmd)
    C.check(rc != 0 and "clip0" in err and "'max'" in err and "opset 13" in err and "Clip-13" in err,
            "rlx %s refuses it naming node, attribute, opset (rc %d: %s)" % (cmd[0], rc, err.strip()))

# 2. a valid Clip-6 with min/max still clips
clip6 = model([h.make_node("Clip", ["x"], ["y"], name="clip6", min=-0.25, max=0.5)], 6, shape=(4, 5))
x = rng.standard_normal((4, 5)).astype(np.float32) + 0.1
y = run_rlx(clip6, {"x": x})[0]
C.check(np.array_equal(y, np.clip(x, np.float32(-0.25), np.float32(0.5))),
        "Clip-6 min/max clips (max |diff| %g)" % float(np.max(np.abs(y - np.clip(x, -0.25, 0.5)))))
C.check(float(y.min()) == -0.25 and float(y.max()) == 0.5, "the clip bounds are reached (random input)")
# consumed_inputs of version 1 accepted
clip1 = model([h.make_node("Clip", ["x"], ["y"], name="clip1", min=-0.25, max=0.5, consumed_inputs=[0])], 1,
              shape=(4, 5))
y = run_rlx(clip1, {"x": x})[0]
C.check(np.array_equal(y, np.clip(x, np.float32(-0.25), np.float32(0.5))), "Clip-1 with consumed_inputs clips")

# 3. other valid old forms
a = rng.standard_normal((2, 3, 4)).astype(np.float32)
b = rng.standard_normal((3,)).astype(np.float32)
add6 = model([h.make_node("Add", ["x", "b"], ["y"], name="add6", broadcast=1, axis=1)], 6,
             inputs=[h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4]), h.make_tensor_value_info("b", T.FLOAT, [3])])
y = run_rlx(add6, {"x": a, "b": b})[0]
C.check(np.array_equal(y, a + b[None, :, None]), "Add-6 with broadcast=1, axis=1 broadcasts from axis 1")
cast1 = model([h.make_node("Cast", ["x"], ["y"], name="cast1", to="INT32")], 1,
              outputs=[h.make_tensor_value_info("y", T.INT32, None)])
xc = (rng.standard_normal((2, 3)) * 10).astype(np.float32)
st, msg = load_error(cast1)
if C.check(st == "OK", "Cast-1 with to='INT32' (a STRING then) loads (%s %s)" % (st, msg)):
    y = run_rlx(cast1, {"x": xc})[0]
    C.check(y.dtype == np.int32 and np.array_equal(y, xc.astype(np.int32)), "Cast-1 to 'INT32' casts")
bad_cast1 = model([h.make_node("Cast", ["x"], ["y"], name="cast1", to="FLOATY")], 1)
expect_refused(bad_cast1, "Cast-1 with to='FLOATY'", ["cast1", "'to'", "FLOATY"])
gl1 = model([h.make_node("GlobalLpPool", ["x"], ["y"], name="glp1", p=2.0)], 1, shape=(1, 2, 3, 3))
xg = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
st, msg = load_error(gl1)
if C.check(st == "OK", "GlobalLpPool-1 with p=2.0 (a FLOAT then) loads (%s %s)" % (st, msg)):
    y = run_rlx(gl1, {"x": xg})[0]
    ref = np.sqrt(np.sum(xg.astype(np.float64) ** 2, axis=(2, 3), keepdims=True))
    C.check(np.allclose(y, ref, rtol=1e-5), "GlobalLpPool-1 p=2.0 is the L2 pool")

# 4. more refusals: a misspelt name, an attribute of a later version, in bodies and functions
conv = model([h.make_node("Conv", ["x", "w"], ["y"], name="conv_s", stride=[2, 2])], 13,
             inputs=[h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4]),
                     h.make_tensor_value_info("w", T.FLOAT, [1, 1, 3, 3])])
expect_refused(conv, "Conv with 'stride'", ["conv_s", "Conv", "'stride'", "opset 13", "no version of Conv"])
rs = model([h.make_node("Resize", ["x", "", "s"], ["y"], name="rs11", antialias=1)], 11,
           inputs=[h.make_tensor_value_info("x", T.FLOAT, [1, 1, 2, 2]), h.make_tensor_value_info("s", T.FLOAT, [4])])
expect_refused(rs, "Resize-11 with antialias", ["rs11", "'antialias'", "opset 11", "added in Resize-18"])
r = ort_refuses(rs)
if r is not None:
    C.check(r, "onnxruntime refuses Resize-11 with antialias too")
red = model([h.make_node("ReduceMean", ["x"], ["y"], name="rm18", axes=[1])], 18)
expect_refused(red, "ReduceMean-18 with the axes attribute", ["rm18", "'axes'", "removed in ReduceMean-18"])

then_g = h.make_graph([h.make_node("Clip", ["x"], ["t"], name="clip_in_then", min=0.0)], "then", [],
                      [h.make_tensor_value_info("t", T.FLOAT, None)])
else_g = h.make_graph([h.make_node("Identity", ["x"], ["e"], name="id_else")], "else", [],
                      [h.make_tensor_value_info("e", T.FLOAT, None)])
if13 = model([h.make_node("If", ["c"], ["y"], name="if0", then_branch=then_g, else_branch=else_g)], 13,
             inputs=[h.make_tensor_value_info("x", T.FLOAT, [2, 3]), h.make_tensor_value_info("c", T.BOOL, [])])
expect_refused(if13, "Clip with min in an If branch", ["clip_in_then", "'min'", "opset 13"])

body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"], name="idc"),
                     h.make_node("Relu", ["v_in"], ["v_out"], name="relu_in_body", alpha=0.1)], "body",
                    [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                     h.make_tensor_value_info("v_in", T.FLOAT, None)],
                    [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.FLOAT, None)])
loop = model([h.make_node("Constant", [], ["n"], value=h.make_tensor("n", T.INT64, [], [2])),
              h.make_node("Loop", ["n", "", "x"], ["y"], name="loop0", body=body)], 13)
expect_refused(loop, "Relu with alpha in a Loop body", ["relu_in_body", "Relu", "'alpha'", "opset 13"])

fn = h.make_function("local", "MyClip", ["a"], ["b"],
                     [h.make_node("Clip", ["a"], ["b"], name="clip_in_fn", max=1.0)], [h.make_opsetid("", 13)])
fm = model([h.make_node("MyClip", ["x"], ["y"], name="call0", domain="local")], 13, functions=[fn],
           extra_opsets=[h.make_opsetid("local", 1)])
expect_refused(fm, "Clip with max in a model-local function", ["clip_in_fn", "'max'", "opset 13"])

# 5. contrib ops keep their own rule: an unknown attribute is refused, as onnxruntime refuses it
gelu = model([h.make_node("FastGelu", ["x"], ["y"], name="fg0", domain="com.microsoft", bogus=1)], 13,
             extra_opsets=[h.make_opsetid("com.microsoft", 1)])
st, msg = load_error(gelu)
C.check(st == "RLX_ERR_INVALID_MODEL" and "fg0" in msg and "bogus" in msg,
        "com.microsoft.FastGelu with an unknown attribute is refused (%s: %s)" % (st, msg))
r = ort_refuses(gelu)
if r is not None:
    C.check(r, "onnxruntime refuses the unknown contrib attribute too")
gelu_ok = model([h.make_node("FastGelu", ["x"], ["y"], name="fg0", domain="com.microsoft")], 13,
                extra_opsets=[h.make_opsetid("com.microsoft", 1)])
C.check(load_error(gelu_ok)[0] == "OK", "com.microsoft.FastGelu without it loads")
C.done()
