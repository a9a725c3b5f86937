"""Shared by test_contrib_qops.py and test_contrib_qlinear.py: small
models of onnxruntime's quantized contrib ops (onnx.helper), run by
onnxruntime (CPU provider, optimizations off) and by `rlx run` on each
device of RLX_CONTRIB_DEVICES (default cpu,gpu), compared whole: integer
outputs by their largest code difference, float outputs relative to
max(1, max |ref|). RLX_CONTRIB_ONLY=prefix runs the cases whose name
starts with it. Importing skips the test (exit 77) while rlx is not
built."""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_qops_")
rng = R.seeded_rng(11)
C = None  # the test's R.Checker, set by start()
DEVICES = os.environ.get("RLX_CONTRIB_DEVICES", "cpu,gpu").split(",")
ONLY = os.environ.get("RLX_CONTRIB_ONLY", "")
NP2ONNX = {np.float32: T.FLOAT, np.int8: T.INT8, np.uint8: T.UINT8, np.int32: T.INT32, np.bool_: T.BOOL}
F, U8, I8 = T.FLOAT, T.UINT8, T.INT8


def model(name, nodes, feeds, outputs, inits, opset=17):
    vis = [H.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape)) for k, v in feeds.items()]
    g = H.make_graph(nodes, name, vis, [H.make_tensor_value_info(o, t, None) for o, t in outputs.items()],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset), H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def run_rlx(path, feeds, outputs, device, extra=()):
    args = [RLX, "run", path, "--device", device, "--iters", "0", "--quiet"] + list(extra)
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (os.path.basename(path), k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    out = os.path.join(tmp, "out_%s_%s" % (os.path.basename(path), device))
    rc, so, se = R.run(args + ["--output-dir", out])
    if rc != 0:
        return None, (so + se).strip()[-600:]
    return [np.load(os.path.join(out, o + ".npy")) for o in outputs], so + se


def ort_run(path, feeds, outputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(list(outputs), feeds)


def compare(name, dev, o, y, r, qtol, tol):
    if y.shape != r.shape or y.dtype != r.dtype:
        C.check(False, "%s on %s, %s: shape %s %s, reference %s %s" % (name, dev, o, y.shape, y.dtype, r.shape,
                                                                        r.dtype))
        return
    if np.issubdtype(r.dtype, np.integer):
        d = int(np.abs(y.astype(np.int64) - r.astype(np.int64)).max()) if r.size else 0
        n = int((y != r).sum())
        ok, what = d <= qtol, "max code diff %d, %d of %d differ (tol %d)" % (d, n, r.size, qtol)
    else:
        d = float(np.abs(y.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max()))) if r.size else 0.0
        ok = d <= tol and bool(np.isfinite(y).all())
        what = ("bit-exact" if tol == 0 and ok else "max rel diff %.3g" % d) + " (tol %s)" % (tol or "0: bit-exact")
    C.check(ok, "%s on %s, %s: %s" % (name, dev, o, what))
    print("%-36s %-4s %-3s %s" % (name, dev, o, what))


def case(name, nodes, feeds, outputs, inits, qtol=0, tol=0.0, ref=None, opset=17):
    if ONLY and not name.startswith(ONLY):
        return
    path = model(name, nodes, feeds, outputs, inits, opset)
    if ref is None:
        ref = ort_run(path, feeds, outputs)
    for dev in DEVICES:
        got, err = run_rlx(path, feeds, list(outputs), dev)
        if C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err if got is None else "")):
            for o, y, r in zip(outputs, got, ref):
                compare(name, dev, o, y, r, qtol, tol)


def node(op, ins, outs, **kw):
    return H.make_node(op, ins, outs, domain="com.microsoft", name=op.lower(), **kw)


def qdata(dt, *shape):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return rng.integers(lo, hi, shape).astype(dt)


def zp(dt, n=None):
    lo, hi = (100, 156) if dt == np.uint8 else (-20, 20)
    return np.array(rng.integers(lo, hi), dt) if n is None else rng.integers(lo, hi, n).astype(dt)


def scale(n=None, lo=0.002, hi=0.02):
    return np.array(rng.uniform(lo, hi), np.float32) if n is None else rng.uniform(lo, hi, n).astype(np.float32)


def start(name):
    """The test's checker (module global C of this module too)."""
    global C
    C = R.Checker(name)
    return C

