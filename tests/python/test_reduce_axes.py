"""Reduce* axes lists that give an axis twice (1 and -2 of rank 3) count it
once, as onnxruntime reads them (the ONNX spec is silent; its numpy
reference refuses them), in every form a model can give them:

- the axes attribute (ReduceMean-13) and a constant axes input
  (ReduceSum-13, ReduceMean-18), keepdims 0 and 1;
- an axes input fed at run time (a tester's finding: with keepdims 0 and a
  list as long as the input's rank, shape inference had taken the output
  rank as rank - len(axes): RLX_ERR_INTERNAL "output 0 has 1 elements, the
  kernel computes 3", or a rank-0 output where onnxruntime gives [2]); one
  session fed lists of every length, repeats included, run after run;
- lists longer than the rank (up to RLX_REDUCE_MAX_AXES = 64 entries, [1]
  * 64); 65 and more are refused naming the node.

Each result against onnxruntime (CPU), on the CPU and on the GPU when
there is an adapter. Inputs random (seed RLX_TEST_SEED, default 7).
Skips (exit 77) while librlx.so is not built."""
import os
import sys

import numpy as np
import onnxruntime
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_reduce_axes")
rng = R.seeded_rng(7)
DEVICES = ["cpu"] + (["gpu"] if len(rlx.adapters()) > 0 else [])
print("devices:", ", ".join(DEVICES))


def model(op, opset, shape, keepdims, axes=None, axes_input=None):
    """axes: an attribute (list); axes_input: 'const' (with axes) or 'fed' (a graph input of len(axes))."""
    ins, inits, attrs = ["x"], [], {"keepdims": keepdims}
    inputs = [H.make_tensor_value_info("x", T.FLOAT, shape)]
    if axes_input == "const":
        ins.append("axes")
        inits.append(H.make_tensor("axes", T.INT64, [len(axes)], axes))
    elif axes_input == "fed":
        ins.append("axes")
        inputs.append(H.make_tensor_value_info("axes", T.INT64, [len(axes)]))
    else:
        attrs["axes"] = axes
    g = H.make_graph([H.make_node(op, ins, ["y"], name="red", **attrs)], "g", inputs,
                     [H.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def check(label, b, feeds, dev):
    want = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    try:
        got = rlx.Session(rlx.Model(b), device=dev).run(feeds)[0]
    except rlx.Error as e:
        C.check(False, "%s on %s: %s" % (label, dev, e))
        return
    C.check(got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6),
            "%s on %s: shape %s %s, onnxruntime %s %s" % (label, dev, got.shape, got.ravel()[:4], want.shape,
                                                         want.ravel()[:4]))


x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
x112 = rng.standard_normal((1, 1, 2)).astype(np.float32)
for dev in DEVICES:
    for keepdims in (0, 1):
        for op, opset, form in (("ReduceMean", 13, None), ("ReduceSum", 13, "const"), ("ReduceMean", 18, "const"),
                                ("ReduceMax", 18, "fed"), ("ReduceL1", 18, "fed"), ("ReduceSumSquare", 18, "fed")):
            for axes in ([1, -2], [0, 2, -1, 0], [2, 2, 2, 2, 2]):
                b = model(op, opset, [2, 3, 4], keepdims, axes, form)
                feeds = {"x": x3}
                if form == "fed":
                    feeds["axes"] = np.array(axes, np.int64)
                check("%s-%d axes %s (%s) keepdims %d" % (op, opset, axes, form or "attribute", keepdims), b, feeds,
                      dev)
    # the tester's inputs: as many entries as the rank, fed, keepdims 0
    for op, axes in (("ReduceSum", [0, 0, 0]), ("ReduceL1", [0, -1, 0]), ("ReduceSumSquare", [-2, 0, 0])):
        check("%s fed %s keepdims 0 on [1,1,2]" % (op, axes), model(op, 18, [1, 1, 2], 0, axes, "fed"),
              {"x": x112, "axes": np.array(axes, np.int64)}, dev)
    # a session per list length (fixed in the model), fed random lists with repeats run after run
    for n in (1, 2, 3, 4):
        bn = model("ReduceSum", 18, [2, 3, 4], 0, [0] * n, "fed")
        s = rlx.Session(rlx.Model(bn), device=dev)
        ref = onnxruntime.InferenceSession(bn, providers=["CPUExecutionProvider"])
        for trial in range(12):
            axes = rng.integers(-3, 3, size=n).astype(np.int64)
            want = ref.run(None, {"x": x3, "axes": axes})[0]
            try:
                got = s.run({"x": x3, "axes": axes})[0]
            except rlx.Error as e:
                C.check(False, "ReduceSum fed %s on %s: %s" % (axes.tolist(), dev, e))
                continue
            C.check(got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6),
                    "ReduceSum fed %s on %s: %s, onnxruntime %s" % (axes.tolist(), dev, got.shape, want.shape))
    # 64 entries: accepted; 65: refused naming the node
    check("ReduceMean axes [1] * 64", model("ReduceMean", 13, [2, 3, 4], 1, [1] * 64), {"x": x3}, dev)
    try:
        rlx.Session(rlx.Model(model("ReduceMean", 13, [2, 3, 4], 1, [1] * 65)), device=dev).run({"x": x3})
        C.check(False, "ReduceMean axes [1] * 65 on %s: accepted" % dev)
    except rlx.Error as e:
        C.check("'red'" in str(e) and "65" in str(e), "ReduceMean axes [1] * 65 on %s: %s" % (dev, e))

C.done()
