"""rlx.set_log_callback and rlx.version (python/rlx over librlx.so): a
warning of the library (an input that declares a dim as -5) reaches the
Python function with level "warning" and names the input and dim; at
level "error" it does not; None restores the default printer; version()
is the CMake project version. Skips (exit 77) while librlx.so is not built
or is built with the sanitizers."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

C = R.Checker("test_python_log")
tmp = tempfile.mkdtemp(prefix="rlx_py_log_")
path = os.path.join(tmp, "odd_dim.onnx")
g = helper.make_graph([helper.make_node("Relu", ["x_odd"], ["y"], name="the_relu")], "g",
                      [helper.make_tensor_value_info("x_odd", TensorProto.FLOAT, [-5])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1])])
import onnx  # noqa: E402
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)

got = []
rlx.set_log_callback(lambda level, msg: got.append((level, msg)), "warning")
m = rlx.Model(path)
C.check(len(got) == 1 and got[0][0] == "warning" and "x_odd" in got[0][1] and "-5" in got[0][1],
        "captured %r" % got)
y = rlx.Session(m, device="cpu").run({"x_odd": np.array([-1, 2], np.float32)})[0]
C.check(list(y) == [0, 2], "the model still runs: %r" % y)

got.clear()
rlx.set_log_callback(lambda level, msg: got.append((level, msg)), "error")
rlx.Model(path)
C.check(got == [], "level error still delivered %r" % got)
rlx.set_log_callback(None)
rlx.Model(path)  # the default printer: to stderr, nothing captured
C.check(got == [], "after set_log_callback(None): %r" % got)
try:
    rlx.set_log_callback(print, "loud")
    C.check(False, "an unknown level is accepted")
except ValueError:
    pass
# a function that cannot be called is refused at once (it was kept, and
# ctypes printed a TypeError for every message after)
for bad in (5, "print", [print]):
    try:
        rlx.set_log_callback(bad)
        C.check(False, "set_log_callback(%r) accepted" % (bad,))
    except TypeError as e:
        C.check("callable" in str(e), "set_log_callback(%r): %s" % (bad, e))
got.clear()
rlx.set_log_callback(lambda level, msg: got.append((level, msg)), "warning")
rlx.Model(path)
C.check(len(got) == 1, "a callback set after the refused ones gets messages: %r" % got)
rlx.set_log_callback(None)

with open(os.path.join(R.ROOT, "CMakeLists.txt")) as f:
    want = re.search(r"project\(rlx VERSION ([0-9.]+)", f.read()).group(1)
C.check(rlx.version() == want, "version() %r, want %r" % (rlx.version(), want))
C.done()
