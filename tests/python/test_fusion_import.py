"""The fusion passes' internal contract never comes from a file: the
importer refuses nodes of the internal domain "rlx" (exit 2, the op and
domain named) and refuses "_rlx..." attributes (a Conv that claims a fused
Sigmoid fails to load naming the attribute, as onnxruntime refuses an
unknown attribute; it was dropped silently before; without the attribute
it computes the plain Conv, checked against numpy). And RLX_FUSION_REPORT
names the fusion of a Conv + Relu model made here.

Skips (exit 77) while rlx is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_fusion_import_")
rng = R.seeded_rng(7)
C = R.Checker("test_fusion_import")


def save(graph, name, extra_opsets=()):
    path = os.path.join(tmp, name)
    m = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)] + [H.make_opsetid(d, 1) for d in extra_opsets])
    onnx.save(m, path)
    return path


# 1. a node of domain "rlx" is refused
g = H.make_graph([H.make_node("FusedElementwise", ["x"], ["y"], domain="rlx", name="fe", code=[1, 0, -1, -1, 0],
                              fparams=[0.0, 0.0], dtype=1)],
                 "internal", [H.make_tensor_value_info("x", T.FLOAT, [4])], [H.make_tensor_value_info("y", T.FLOAT, [4])])
rc, so, se = R.run([RLX, "run", save(g, "internal.onnx", ["rlx"])])
C.check(rc == 2 and "FusedElementwise" in se and "'rlx'" in se,
        "an rlx-domain node is refused with exit 2 naming op and domain (rc %d: %s)" % (rc, se.strip()[-200:]))

# 2. "_rlx_act" on a Conv from a file is refused; without it the output is the
# plain convolution (a 1x1 conv: y[o] = sum_i w[o, i] x[i])
x = rng.uniform(-1, 1, size=(1, 3, 4, 5)).astype(np.float32)
w = rng.uniform(-1, 1, size=(2, 3, 1, 1)).astype(np.float32)
g = H.make_graph([H.make_node("Conv", ["x", "w"], ["y"], name="conv", _rlx_act=5)], "conv",
                 [H.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 5])], [H.make_tensor_value_info("y", T.FLOAT, None)],
                 [NH.from_array(w, "w")])
path = save(g, "conv_act.onnx")
np.save(os.path.join(tmp, "x.npy"), x)
out = os.path.join(tmp, "out")
rc, so, se = R.run([RLX, "run", path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", out, "--iters", "0"])
C.check(rc == 2 and "'conv'" in se and "'_rlx_act'" in se and "internal" in se,
        "conv with a _rlx_act attribute is refused naming node and attribute (rc %d: %s)" % (rc, se.strip()[-200:]))
g = H.make_graph([H.make_node("Conv", ["x", "w"], ["y"], name="conv")], "conv",
                 [H.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 5])], [H.make_tensor_value_info("y", T.FLOAT, None)],
                 [NH.from_array(w, "w")])
path = save(g, "conv_plain.onnx")
rc, so, se = R.run([RLX, "run", path, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", out, "--iters", "0"])
if C.check(rc == 0, "the conv without it runs (rc %d: %s)" % (rc, se.strip()[-200:])):
    y = np.load(os.path.join(out, "y.npy"))
    want = np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x)
    C.check(np.allclose(y, want, rtol=1e-5, atol=1e-6),
            "plain conv (max abs diff %g, rtol 1e-5)" % np.abs(y - want).max())

# 3. RLX_FUSION_REPORT: Conv + Relu fuses, one line naming pass, nodes, result
g = H.make_graph([H.make_node("Conv", ["x", "w"], ["c"], name="conv"), H.make_node("Relu", ["c"], ["y"], name="relu")],
                 "conv_relu", [H.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 5])],
                 [H.make_tensor_value_info("y", T.FLOAT, None)], [NH.from_array(w, "w")])
env = dict(os.environ, RLX_FUSION_REPORT="1")
p = __import__("subprocess").run([RLX, "run", save(g, "conv_relu.onnx"), "--iters", "0"], capture_output=True,
                                 text=True, env=env, timeout=300)
lines = [l for l in p.stderr.splitlines() if l.startswith("fusion: ")]
C.check(p.returncode == 0 and lines == ["fusion: fuse_activation: Conv 'conv' + Relu 'relu' -> Conv 'conv' (act relu)"],
        "the fusion report: %r" % lines)
C.done()
