"""CPU runs read the caller's input arrays in place and write the outputs in
place (issue 13): through the Python bindings, every aliasing case of one
model against onnxruntime (1e-6 of max(1, |value|)), the input arrays
unchanged after each run, and an input at an address that is not 16-byte
aligned (which the runtime copies, the old behaviour) giving the same bytes.

  x [n, 64] -> s = Sigmoid(x) (output, also read by Add), a = Add(s, x)
  (output), f = Flatten(a) (a view of an output), x itself (a graph input
  that is a graph output), xi = Identity(x), r = Relu(Flatten(x)), s twice.

Two batch sizes (one plan each), then the first again; a read-only input
(np.frombuffer over bytes). Skips (77) while the bindings are not loadable."""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
try:
    import onnxruntime as ort
except ImportError:
    R.skip("onnxruntime is not installed")

C = R.Checker("test_exec_io")
rng = R.seeded_rng(13)
W = 64
OUTS = ["s", "a", "f", "x", "xi", "r", "s"]

nodes = [H.make_node("Sigmoid", ["x"], ["s"], name="sig"), H.make_node("Add", ["s", "x"], ["a"], name="add"),
         H.make_node("Flatten", ["a"], ["f"], name="flat_a"), H.make_node("Identity", ["x"], ["xi"], name="id"),
         H.make_node("Flatten", ["x"], ["fx"], name="flat_x"), H.make_node("Relu", ["fx"], ["r"], name="relu")]
outs = [H.make_tensor_value_info(n, T.FLOAT, None) for n in OUTS]
g = H.make_graph(nodes, "exec_io", [H.make_tensor_value_info("x", T.FLOAT, ["n", W])], outs)
m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
m.ir_version = 8
blob = m.SerializeToString()

# onnxruntime refuses a value listed twice among the outputs: its reference
# model lists each once
ref_g = H.make_graph(nodes, "exec_io_ref", [H.make_tensor_value_info("x", T.FLOAT, ["n", W])], outs[:6])
ref_m = H.make_model(ref_g, opset_imports=[H.make_opsetid("", 13)])
ref_m.ir_version = 8
ref = ort.InferenceSession(ref_m.SerializeToString(), providers=["CPUExecutionProvider"])

model = rlx.Model(blob)
sess = rlx.Session(model, "cpu")


def misaligned_copy(a):
    """a's bytes at an address 4 bytes past a 16-byte boundary."""
    buf = np.empty(a.nbytes + 32, np.uint8)
    start = (-buf.ctypes.data) % 16 + 4
    view = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    return view


for n in (4, 7, 4):
    x = rng.uniform(-4, 4, (n, W)).astype(np.float32)
    keep = x.copy()
    exp = ref.run(None, {"x": x})
    exp.append(exp[0])
    got = sess.run({"x": x})
    C.check(np.array_equal(x, keep), f"n={n}: the input array changed")
    C.check(len(got) == len(OUTS), f"n={n}: {len(got)} outputs")
    for k, (name, e, v) in enumerate(zip(OUTS, exp, got)):
        e = np.asarray(e, np.float64).reshape(v.shape)
        err = float(np.max(np.abs(v - e) / np.maximum(np.abs(e), 1.0)))
        C.check(err <= 1e-6, f"n={n}: output {k} ('{name}') off by {err:.3g} from onnxruntime")
    old = sess.run({"x": misaligned_copy(x)})
    for k, (a, b) in enumerate(zip(got, old)):
        C.check(a.tobytes() == b.tobytes(), f"n={n}: output {k} ('{OUTS[k]}') differs from the copies' run")
    ro = np.frombuffer(x.tobytes(), np.float32).reshape(n, W)  # read-only
    again = sess.run({"x": ro})
    for k, (a, b) in enumerate(zip(got, again)):
        C.check(a.tobytes() == b.tobytes(), f"n={n}: output {k} from a read-only input")
    C.check(np.array_equal(x, keep) and np.array_equal(ro, keep), f"n={n}: an input array changed")
    # outputs stay the caller's after later runs
    later = sess.run({"x": -x})
    C.check(got[0].tobytes() == old[0].tobytes() and not np.array_equal(later[0], got[0]),
            f"n={n}: an earlier run's output changed")

# a None feed names the input; a zero-size batch gives zero-size outputs as onnxruntime
try:
    sess.run({"x": None})
    C.check(False, "a None feed: no error")
except TypeError as e:
    C.check("'x'" in str(e) and "None" in str(e), f"a None feed: {e}")
z = np.zeros((0, W), np.float32)
zr, ze = sess.run({"x": z}), ref.run(None, {"x": z})
C.check([a.shape for a in zr[:6]] == [np.asarray(e).shape for e in ze], f"zero-size: {[a.shape for a in zr]}")

C.done()
