"""A variadic Sum / Mean fused into an elementwise chain (fuse_elementwise's
n-ary folds) must give the unfused plan's results, through `rlx run` on the
CPU device, with NaN where the unfused plan has NaN:

    t = Sum(a, b, s)   a = -inf, b = +inf (a + b is the default NaN,
                       0xffc00000 on x86), s = +NaN [1] (0x7fc00000)
    y = Neg(t)

Which of two NaN operands an addition passes on (and so the sign of the
NaN) is not part of the contract: IEEE 754 leaves it open, and the C
compiler may commute the operands of a vector add, so the fused chain and
the unfused Sum kernel can differ there (the fresh tester saw 0xffc00000
against 0x7fc00000; the GPU plan and onnxruntime give the latter). The test
checks NaN positions, and the bits of every non-NaN element, over three
orders of the operands, for Sum and Mean.

Skips (exit 77) while rlx is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_fuse_variadic_nan_")
rng = R.seeded_rng(3)
C = R.Checker("test_fuse_variadic_nan")


def model(path, op, order):
    vi = [H.make_tensor_value_info("a", T.FLOAT, [4]),
          H.make_tensor_value_info("b", T.FLOAT, [4]),
          H.make_tensor_value_info("s", T.FLOAT, [1])]
    g = H.make_graph([H.make_node(op, order, ["t"]), H.make_node("Neg", ["t"], ["y"])],
                     "g", vi, [H.make_tensor_value_info("y", T.FLOAT, [4])])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def run(path, feeds, options):
    return R.run_output(RLX, path, feeds, "cpu", options, tmp)


for op in ("Sum", "Mean"):
    for order in (["a", "b", "s"], ["s", "a", "b"], ["a", "s", "b"]):
        path = os.path.join(tmp, "%s_%s.onnx" % (op, "".join(order)))
        model(path, op, order)
        fin = (rng.standard_normal(3) * 3).astype(np.float32)
        feeds = {"a": np.concatenate([[-np.inf], fin]).astype(np.float32),
                 "b": np.concatenate([[np.inf], fin[::-1]]).astype(np.float32),
                 "s": np.array([np.nan], np.float32)}
        fused, e1 = run(path, feeds, [])
        unfused, e2 = run(path, feeds, ["passes.disable=fuse_elementwise"])
        what = "%s(%s) -> Neg" % (op, ", ".join(order))
        if not C.check(fused is not None and unfused is not None,
                       "%s runs: %s %s" % (what, e1, e2)):
            continue
        fb, ub = fused.view(np.uint32), unfused.view(np.uint32)
        fn, un = np.isnan(fused), np.isnan(unfused)
        C.check(np.array_equal(fn, un) and np.array_equal(fb[~fn], ub[~un]),
                "%s: fused bits %s, unfused %s" % (
                    what, [hex(v) for v in fb], [hex(v) for v in ub]))

C.done()
