"""String tensors through the Python bindings (python/rlx): a model with a
string initializer, Concat, Gather and StringNormalizer, fed numpy '<U',
'S' and object arrays, on the CPU (and the GPU when there is an adapter),
against onnxruntime on the same model and inputs (strings compare
exactly; the model says locale "C", as onnxruntime needs installed locales
for any other, and rlx maps case in ASCII whatever the locale). Also:
string outputs are object arrays of str, a graph input returned as an
output, and refusals (a non-string element in an object
array, a NUL character, an object array fed to a numeric input).

Skips (exit 77) while librlx.so is not built or is built with the
sanitizers."""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
import onnxruntime as ort  # noqa: E402

C = R.Checker("test_python_strings")
rng = R.seeded_rng(11)
tmp = tempfile.mkdtemp(prefix="rlx_py_strings_")

ALPHA = list("aAbBzZ09") + ["\u00e9", "\u00c9", "\u4e2d"]


def words(n):
    return ["".join(rng.choice(ALPHA, rng.integers(1, 6))) for _ in range(n)]


# cat = Concat(x, w) (axis 0), picked = Gather(cat, idx), y = StringNormalizer(picked)
w_vals = words(3)
w = H.make_tensor("w", T.STRING, [3], [s.encode() for s in w_vals])
idx = H.make_tensor("idx", T.INT64, [4], [4, 0, 2, 6])
g = H.make_graph(
    [H.make_node("Concat", ["x", "w"], ["cat"], axis=0, name="cat"),
     H.make_node("Gather", ["cat", "idx"], ["picked"], axis=0, name="gather"),
     H.make_node("StringNormalizer", ["picked"], ["y"], case_change_action="UPPER", is_case_sensitive=0,
                 stopwords=[w_vals[0].lower()], locale="C", name="norm")],
    "strings", [H.make_tensor_value_info("x", T.STRING, [4])],
    [H.make_tensor_value_info("y", T.STRING, [None]), H.make_tensor_value_info("cat", T.STRING, [7]),
     H.make_tensor_value_info("x", T.STRING, [4])],
    initializer=[w, idx])
path = os.path.join(tmp, "strings.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)], ir_version=8), path)

model = rlx.Model(path)
C.check(model.inputs[0]["dtype"] == np.dtype(object), "input dtype %r" % model.inputs[0])
ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
devices = ["cpu"] + (["gpu"] if rlx.adapters() else [])
for device in devices:
    sess = rlx.Session(model, device=device)
    for form in ("U", "S", "O"):
        xs = words(4)
        x = np.array(xs) if form == "U" else np.array([s.encode() for s in xs]) if form == "S" else \
            np.array(xs, dtype=object)
        outs = sess.run({"x": x})
        want = ref.run(None, {"x": np.array(xs, dtype=object)})
        for i, (got, exp) in enumerate(zip(outs, want)):
            exp = np.array([e.decode() if isinstance(e, bytes) else e for e in exp.reshape(-1)],
                           dtype=object).reshape(exp.shape)
            C.check(got.dtype == np.dtype(object) and got.shape == exp.shape and
                    all(isinstance(v, str) for v in got.reshape(-1)) and np.array_equal(got, exp),
                    "%s, %s input, output %d: %r, onnxruntime %r" % (device, form, i, got, exp))
    if device == "gpu":
        rep = sess.dispatch_report
        C.check("whole graph runs eagerly on the CPU" in rep, "gpu: report:\n%s" % rep)

# bytes that are not UTF-8 come back as surrogate escapes, and such a str
# fed back in gives the same bytes (it raised UnicodeEncodeError)
g2 = H.make_graph([H.make_node("Identity", ["s"], ["t"])], "id", [H.make_tensor_value_info("s", T.STRING, [2])],
                  [H.make_tensor_value_info("t", T.STRING, [2])])
ident = rlx.Session(rlx.Model(H.make_model(g2, opset_imports=[H.make_opsetid("", 13)]).SerializeToString()))
raw = np.array([b"\xff\xfeok", "caf\u00e9".encode()])
once = ident.run({"s": raw})[0]
C.check(list(once) == ["\udcff\udcfeok", "caf\u00e9"], "non-UTF-8 bytes out: %r" % (once,))
try:
    twice = ident.run({"s": once})[0]
    C.check(list(twice) == list(once), "fed back: %r, first %r" % (twice, once))
except (UnicodeEncodeError, ValueError) as e:
    C.check(False, "a string output fed back in: %s" % e)
try:
    ident.run({"s": np.array(["\ud800", "a"], dtype=object)})
    C.check(False, "a lone surrogate that escapes no byte was accepted")
except ValueError as e:
    C.check("input 's'" in str(e) and "UTF-8" in str(e), "lone surrogate: %s" % e)

sess = rlx.Session(model, device="cpu")
for bad, exc in ((np.array(["a", 3, "b", "c"], dtype=object), TypeError),
                 (np.array(["a", "b\0c", "d", "e"], dtype=object), ValueError)):
    try:
        sess.run({"x": bad})
        C.check(False, "%r was accepted" % bad)
    except exc as e:
        C.check("input 'x'" in str(e), "message %r names the input" % str(e))

# an object array fed to a numeric input is refused naming the input's
# type, on both APIs (it said "string tensor elements must be str or
# bytes"); onnxruntime refuses it too (it takes object arrays as strings)
for elem, np_name in ((T.FLOAT, "np.float32"), (T.INT64, "np.int64"), (T.BOOL, "np.bool_")):
    g3 = H.make_graph([H.make_node("Identity", ["x"], ["y"])], "id", [H.make_tensor_value_info("x", elem, [1, 4])],
                      [H.make_tensor_value_info("y", elem, [1, 4])])
    data = H.make_model(g3, opset_imports=[H.make_opsetid("", 13)], ir_version=8).SerializeToString()
    tname = "tensor(%s)" % {T.FLOAT: "float", T.INT64: "int64", T.BOOL: "bool"}[elem]
    feed = {"x": np.array([[1.0, 2, 3, 4]], dtype=object)}
    for api, run in (("rlx.Session", lambda: rlx.Session(rlx.Model(data)).run(feed)),
                     ("InferenceSession", lambda: rlx.InferenceSession(data).run(None, feed))):
        try:
            run()
            C.check(False, "%s: an object array was accepted for a %s input" % (api, tname))
        except rlx.Error as e:
            C.check(e.status == "RLX_ERR_INVALID_ARGUMENT" and "input 'x' takes %s" % tname in str(e) and
                    "object arrays feed string inputs only" in str(e) and np_name in str(e),
                    "%s, %s input: %s" % (api, tname, e))
    try:
        ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
        C.check(False, "onnxruntime took an object array for a %s input" % tname)
    except Exception as e:  # noqa: BLE001 (onnxruntime's own exception types)
        C.check("expected: (%s)" % tname in str(e), "onnxruntime: %s" % e)
C.done()
