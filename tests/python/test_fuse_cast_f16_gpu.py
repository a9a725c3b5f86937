"""A Cast to f16 inside a fused elementwise chain on the GPU must round as
the Cast does unfused (README, "f16 models": only Casts to f16 round inside
a chain; beyond +-65,504 is +-inf, below the smallest subnormal is 0):

    f32 model:  y = x * Cast(Cast(s, f16), f32)
    f16 model:  y = x * Cast(s, f16)           (s f32, full-size or [2,1])

with s = 70000 (inf in binary16), 65519 (rounds to inf too), 1e-8 (0) and
x holding 0 (0 * inf = NaN). The CPU plan, the unfused GPU plan
(passes.disable=fuse_elementwise) and numpy agree; the fused GPU chain
(lavapipe) keeps 70000 finite (35000 for x = 0.5, 0 for x = 0) and 1e-8
nonzero. Compared with numpy, NaN where numpy has NaN, infinities equal,
finite elements within 1e-3 relative.

Skips (exit 77) while rlx is not built or without a GPU adapter."""
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
rc, so, se = R.run([RLX, "devices"])
if rc != 0 or "gpu:0" not in so:
    R.skip("no GPU adapter")
tmp = tempfile.mkdtemp(prefix="rlx_fuse_cast_f16_")
C = R.Checker("test_fuse_cast_f16_gpu")
warnings.filterwarnings("ignore")


def save(path, nodes, ins, out_type):
    g = H.make_graph(nodes, "g",
                     [H.make_tensor_value_info(n, t, list(a.shape)) for n, t, a in ins],
                     [H.make_tensor_value_info("y", out_type, None)])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def run(path, feeds, device, options=()):
    return R.run_output(RLX, path, feeds, device, options, tmp)


def agrees(got, want):
    g, w = got.astype(np.float64), want.astype(np.float64)
    if g.shape != w.shape or not np.array_equal(np.isnan(g), np.isnan(w)):
        return False
    inf = np.isinf(w)
    if not np.array_equal(g[inf], w[inf]):
        return False
    fin = ~np.isnan(w) & ~inf
    return bool(np.all(np.abs(g[fin] - w[fin]) <= 1e-3 * np.abs(w[fin]) + 1e-12))


cases = []
# f32 model, the f16 round trip inside an f32 chain
x = np.array([0.5, 0.0, 2.0, 1.0], np.float32)
s = np.array([70000.0, 70000.0, 65519.0, 1e-8], np.float32)
p = os.path.join(tmp, "f32_roundtrip.onnx")
save(p, [H.make_node("Cast", ["s"], ["h"], to=T.FLOAT16),
         H.make_node("Cast", ["h"], ["f"], to=T.FLOAT),
         H.make_node("Mul", ["x", "f"], ["y"])],
     [("x", T.FLOAT, x), ("s", T.FLOAT, s)], T.FLOAT)
cases.append(("f32 x * Cast(Cast(s, f16), f32)", p, {"x": x, "s": s},
              x * s.astype(np.float16).astype(np.float32)))
# f16 model, s full-size and broadcast
xh = np.array([[0.5, 0.0], [0.25, -0.0]], np.float16)
for sv in ([[70000.0, 70000.0], [-1e6, 1e-8]], [[70000.0], [-1e6]]):
    sf = np.array(sv, np.float32)
    p = os.path.join(tmp, "f16_%s.onnx" % "x".join(map(str, sf.shape)))
    save(p, [H.make_node("Cast", ["s"], ["h"], to=T.FLOAT16),
             H.make_node("Mul", ["x", "h"], ["y"])],
         [("x", T.FLOAT16, xh), ("s", T.FLOAT, sf)], T.FLOAT16)
    cases.append(("f16 x * Cast(s %s, f16)" % (sf.shape,), p, {"x": xh, "s": sf},
                  xh * sf.astype(np.float16)))

for what, path, feeds, want in cases:
    for label, device, opts in (("cpu", "cpu", ()),
                                ("gpu unfused", "gpu", ("passes.disable=fuse_elementwise",)),
                                ("gpu", "gpu", ())):
        got, err = run(path, feeds, device, opts)
        if not C.check(got is not None, "%s on %s runs: %s" % (what, label, err)):
            continue
        C.check(agrees(got, want), "%s on %s: %s, numpy %s" % (
            what, label, got.ravel().tolist(), want.ravel().tolist()))

C.done()
