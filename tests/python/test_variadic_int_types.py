"""Sum, Max, Min and Mean on integer and bool tensors, through `rlx run`
on the CPU and the GPU device.

ONNX's type constraints: Sum and Mean take floats only (every version);
Max and Min floats before version 12, every integer type from 12. rlx
takes integer Sum at every opset and integer Max/Min before opset 12 too
(a runtime may accept more than the spec where the results are right):
the outputs must equal numpy's exactly for all eight integer types, with
the sum wrapping around (int8 127 + 127 + 127 = 125) and uint64 values of
2^63 and more compared unsigned (they were compared as negative numbers:
Max and Min of uint64 were wrong on both devices). Integer Mean (the sum
wrapped before the division, then truncated: Mean of three int8 127s was
41) and bool inputs (Sum gave a logical or) are refused when the model
loads, naming the node, the input and its dtype.

Skips (exit 77) while rlx is not built."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_variadic_int_")
rng = R.seeded_rng(1212)
C = R.Checker("test_variadic_int_types")
TYPES = {np.int8: T.INT8, np.uint8: T.UINT8, np.int16: T.INT16, np.uint16: T.UINT16, np.int32: T.INT32,
         np.uint32: T.UINT32, np.int64: T.INT64, np.uint64: T.UINT64}
SHAPES = [[4, 16], [16], [4, 1]]


def save(path, nodes, elem, outs, opset):
    g = H.make_graph(nodes, "g", [H.make_tensor_value_info("x%d" % i, elem, s) for i, s in enumerate(SHAPES)],
                     [H.make_tensor_value_info(o, elem, None) for o in outs])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)


def rlx_run(path, feeds, device, outs):
    d = tempfile.mkdtemp(dir=tmp)
    args = [RLX, "run", path, "--device", device, "--quiet", "--warmup", "0", "--iters", "1", "--output-dir", d]
    for name, arr in feeds.items():
        f = os.path.join(d, name + ".npy")
        np.save(f, arr)
        args += ["--input", "%s=%s" % (name, f)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, p.stdout + p.stderr
    return {o: np.load(os.path.join(d, o + ".npy")) for o in outs}, p.stderr


X = ["x0", "x1", "x2"]
for dt, elem in TYPES.items():
    info = np.iinfo(dt)
    for opset in (8, 13):
        path = os.path.join(tmp, "%s_%d.onnx" % (dt.__name__, opset))
        nodes = [H.make_node(op, X, [op.lower()], name="n_" + op.lower()) for op in ("Sum", "Max", "Min")]
        save(path, nodes, elem, ["sum", "max", "min"], opset)
        feeds = {}
        for i, s in enumerate(SHAPES):
            x = rng.integers(info.min, info.max, s, dtype=dt, endpoint=True)
            x.reshape(-1)[:3] = [info.max, info.min, info.max]  # the sum wraps; uint64 >= 2^63
            feeds["x%d" % i] = x
        xs = [np.broadcast_to(feeds[n], (4, 16)) for n in X]
        with np.errstate(over="ignore"):
            want = {"sum": (xs[0] + xs[1] + xs[2]).astype(dt), "max": np.maximum(np.maximum(xs[0], xs[1]), xs[2]),
                    "min": np.minimum(np.minimum(xs[0], xs[1]), xs[2])}
        C.check(not np.array_equal(want["sum"].astype(np.float64),
                                   sum(x.astype(np.float64) for x in xs)), "%s: no sum wraps" % dt.__name__)
        for dev in ("cpu", "gpu"):
            got, err = rlx_run(path, feeds, dev, want)
            what = "%s opset %d on %s" % (dt.__name__, opset, dev)
            if not C.check(got is not None, "%s: rlx run failed: %s" % (what, err.strip()[-400:])):
                continue
            for o, w in want.items():
                C.check(got[o].dtype == dt and np.array_equal(got[o], w),
                        "%s %s: got %s, want %s" % (what, o, got[o].ravel()[:6], w.ravel()[:6]))

# refused when the model loads: integer Mean, bool for all four
refusals = [("Mean", T.INT32, "i32", "expected a float type (ONNX Mean takes f32, f16, bf16 or f64)"),
            ("Mean", T.UINT8, "u8", "expected a float type"), ("Mean", T.INT64, "i64", "expected a float type"),
            ("Mean", T.BOOL, "bool", "expected a float type")] + \
           [(op, T.BOOL, "bool", "expected a float or integer type") for op in ("Sum", "Max", "Min")]
for op, elem, name, why in refusals:
    path = os.path.join(tmp, "refused_%s_%s.onnx" % (op, name))
    save(path, [H.make_node(op, X, ["y"], name="node_" + op.lower())], elem, ["y"], 13)
    for dev in ("cpu", "gpu"):
        p = subprocess.run([RLX, "run", path, "--device", dev, "--iters", "0", "--warmup", "0", "--quiet"],
                           capture_output=True, text=True, timeout=300)
        want = "node 'node_%s' (%s): input 'x0' has dtype %s, %s" % (op.lower(), op, name, why)
        C.check(p.returncode != 0 and want in p.stderr and "RLX_ERR_INTERNAL" not in p.stderr,
                "%s of %s on %s: rc %d, want %r in %r" % (op, name, dev, p.returncode, want, p.stderr.strip()[-300:]))

C.done()
