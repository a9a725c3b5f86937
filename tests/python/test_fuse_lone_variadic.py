"""A Sum, Max, Min or Mean of two or more inputs with no elementwise
neighbour is fused alone into one rlx.FusedElementwise: unfused, the CPU
kernel copies the first input and folds each other one into the output in
turn (a scalar broadcast loop: Sum of two 2^20 f32 took 3.4 ms against
Add's 0.6 ms) and the GPU lowering makes one binary dispatch per input
after the first (Mean one more: the division), so Sum of k inputs read
2k - 1 tensors and wrote k - 1; fused, one loop (one dispatch) reads k and
writes one.

Through `rlx run` on the CPU and on the GPU device (lavapipe here): the
fusion report names the node's fusion, the GPU trace shows one dispatch
for the step (it showed k - 1 binary dispatches), and the output's bits
equal the unfused plan's (passes.disable=fuse_elementwise), for f32 and
f16 (on the CPU, widen_f16's Casts fuse with any Sum), with broadcasting, with +-inf and NaN among the inputs (NaN at the
same places; which NaN an addition passes on is not part of the contract,
see test_fuse_variadic_nan.py). Sum of one input (a copy) stays as it is.

Skips (exit 77) while rlx is not built."""
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_fuse_lone_variadic_")
rng = R.seeded_rng(2112)
C = R.Checker("test_fuse_lone_variadic")
SHAPES = [[2, 3, 5], [3, 1], [5], [1], [2, 3, 5]]


def model(path, op, k, elem):
    names = ["x%d" % i for i in range(k)]
    vi = [H.make_tensor_value_info(n, elem, SHAPES[i]) for i, n in enumerate(names)]
    g = H.make_graph([H.make_node(op, names, ["y"], name="lone")], "g", vi,
                     [H.make_tensor_value_info("y", elem, None)])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return names


def run(path, feeds, device, options):
    return R.run_output(RLX, path, feeds, device, ["debug.fusion_report=1"] + list(options), tmp=tmp,
                        env=dict(os.environ, RLX_GPU_TRACE="1"))


def dispatches(stderr):
    """The kernels of the GPU trace's steps: 'step 0 node ...: binary[16,1] binary[16,1]' -> 2."""
    steps = [ln.split("): ", 1)[1] for ln in stderr.splitlines() if re.search(r"webgpu: step \d+ node", ln)]
    return sum(len(re.findall(r"\w+\[[\d,]+\]", s)) for s in steps)


cases = [(op, k) for op in ("Sum", "Max", "Min", "Mean") for k in (2, 3, 4)] + [("Sum", 1)]
for elem, dt in ((T.FLOAT, np.float32), (T.FLOAT16, np.float16)):
    for op, k in cases:
        path = os.path.join(tmp, "%s%d_%s.onnx" % (op, k, dt.__name__))
        names = model(path, op, k, elem)
        feeds = {}
        for i, n in enumerate(names):
            x = (rng.standard_normal(SHAPES[i]) * 4).astype(dt)
            x.reshape(-1)[0] = rng.uniform(0.5, 2)  # no zero (a sign of zero is a cheap difference to miss)
            feeds[n] = x
        feeds["x0"].reshape(-1)[1] = np.inf
        feeds["x0"].reshape(-1)[2] = np.nan
        if k > 1:
            feeds["x1"].reshape(-1)[2] = -np.inf
        want_fused = k >= 2
        for dev in ("cpu", "gpu"):
            what = "%s of %d %s inputs on %s" % (op, k, dt.__name__, dev)
            fused, e1 = run(path, feeds, dev, [])
            unfused, e2 = run(path, feeds, dev, ["passes.disable=fuse_elementwise"])
            if not C.check(fused is not None and unfused is not None, "%s runs: %s %s" % (what, e1, e2)):
                continue
            # (f16 on the CPU: widen_f16's Casts around the node fuse with it, whatever its arity)
            want = want_fused or (dev == "cpu" and dt == np.float16)
            got = re.search(r"fusion: fuse_elementwise: (Cast '[^']+' \+ )*%s 'lone'( \+ Cast '[^']+')* -> "
                            r"rlx\.FusedElementwise" % op, e1) is not None
            C.check(got == want, "%s: fused %s, want %s (%s)" % (what, got, want, e1.strip()[-300:]))
            if dev == "gpu" and dt == np.float32:
                d1, d2 = dispatches(e1), dispatches(e2)
                C.check(d2 == max(k - 1, 1) + (op == "Mean" and k > 1), "%s: unfused %d dispatches" % (what, d2))
                C.check(d1 == (1 if want_fused else d2), "%s: fused %d dispatches (%s)" % (what, d1, e1[-300:]))
            ub = unfused.view(np.uint32 if dt == np.float32 else np.uint16)
            fb = fused.view(ub.dtype)
            fn, un = np.isnan(fused), np.isnan(unfused)
            C.check(fused.shape == unfused.shape == (2, 3, 5) and np.array_equal(fn, un) and fn.any() and
                    np.array_equal(fb[~fn], ub[~un]),
                    "%s: fused and unfused bits differ: %s vs %s" % (what, fused.ravel()[:8], unfused.ravel()[:8]))
            # and the unfused plan is the op's reference (numpy, in f32: the README's rounding policy for f16)
            xs = [feeds[n].astype(np.float32) for n in names]
            ref = {"Sum": lambda a, b: a + b, "Mean": lambda a, b: a + b,
                   "Max": np.maximum, "Min": np.minimum}[op]
            acc = np.broadcast_to(xs[0], (2, 3, 5)).astype(np.float32)
            for x in xs[1:]:
                acc = ref(acc, x).astype(np.float32)
            if op == "Mean":
                acc = (acc / np.float32(k)).astype(np.float32)
            acc = acc.astype(dt)
            an = np.isnan(acc)
            C.check(np.array_equal(an, un) and np.array_equal(acc.view(ub.dtype)[~an], ub[~un]),
                    "%s: unfused differs from numpy: %s vs %s" % (what, unfused.ravel()[:8], acc.ravel()[:8]))

C.done()
