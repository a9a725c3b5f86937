"""PRelu before opset 7 (PRelu-1 and PRelu-6) against the ONNX reference
implementation (onnx.reference.ReferenceEvaluator), on the CPU and the GPU.

The spec of PRelu-1/6 names no broadcasting rule (a slope of one element
is shared); the reference (one implementation for every version) and the
version converter (PRelu 6 -> 7 "compatible") give PRelu-7's: X and the
slope broadcast as numpy does, and where that fails a 1-D slope of d
values applies along the one axis of X of size d. The tester's finding
(tester13 f1): X [1, 3, 4, 3] with a slope [3] was applied per channel
(axis 1) where the reference takes the last axis (max diff 0.70), and X
[2, 3, 4, 5] with a slope [5] was refused. tester14: X [3, 1] with a slope
[3] gave X's shape [3, 1] (the slope along axis 0) where the reference's
numpy broadcast gives [3, 3], as PRelu-7+ does in rlx and in onnxruntime
1.22 (which has no PRelu-6 kernel); so the output may be larger than X
(X [3], slope [2, 3] -> [2, 3]), and the PRelu-6 results of those shapes
equal onnxruntime's PRelu-9.

Cases: slope as an initializer and as a graph input; X with static dims and
with symbolic ones (the axis is then chosen when the plan binds the shapes:
the same model fed W = 3 and W = 5 takes the last axis, then axis 1; also
in a plan that runs eagerly, a Loop beside it);
refusals where the reference raises (a 1-D slope whose size matches two
axes and not the last, a slope that fits nowhere). Values are copied or
multiplied once, so the comparison is exact (0 ulp) on both devices.

Skips (exit 77) while librlx.so is not built."""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_prelu_legacy_ref")
rng = R.seeded_rng(14)
DEVICES = ["cpu", "gpu"] if len(rlx.adapters()) > 0 else ["cpu"]
if DEVICES == ["cpu"]:
    print("no GPU adapter: CPU only")


def model(opset, x_dims, s_dims, slope=None):
    """PRelu(x, s); s an initializer when `slope` is given."""
    ins = [H.make_tensor_value_info("x", T.FLOAT, x_dims)]
    inits = []
    if slope is None:
        ins.append(H.make_tensor_value_info("s", T.FLOAT, s_dims))
    else:
        inits.append(NH.from_array(slope, "s"))
    g = H.make_graph([H.make_node("PRelu", ["x", "s"], ["y"], name="prelu")], "g", ins,
                     [H.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 3
    return m


def case(opset, x_shape, s_shape, x_dims=None, const=False, feeds_shapes=None):
    """Every feed shape in feeds_shapes (default: x_shape) on every device."""
    slope = rng.standard_normal(s_shape).astype(np.float32)
    m = model(opset, x_dims or list(x_shape), list(s_shape), slope if const else None)
    sess = {d: None for d in DEVICES}
    for d in DEVICES:
        try:
            sess[d] = rlx.Session(rlx.Model(m.SerializeToString()), device=d,
                                  options={"gpu.poison": True} if d == "gpu" else None)
        except rlx.Error as e:
            C.check(False, "PRelu-%d x%s s%s const=%s %s: load: %s" % (opset, x_shape, s_shape, const, d, e))
    for xs in feeds_shapes or [x_shape]:
        x = rng.standard_normal(xs).astype(np.float32)
        feeds = {"x": x} if const else {"x": x, "s": slope}
        want = ReferenceEvaluator(m).run(None, feeds)[0]
        for d in DEVICES:
            if sess[d] is None:
                continue
            what = "PRelu-%d x%s (fed %s) s%s const=%s %s" % (opset, x_shape, list(xs), s_shape, const, d)
            try:
                y = sess[d].run(feeds)[0]
            except rlx.Error as e:
                C.check(False, "%s: %s" % (what, e))
                continue
            ok = y.shape == want.shape and np.array_equal(y, want)
            C.check(ok, "%s: max diff %s" % (what, float(np.abs(y - want).max()) if y.shape == want.shape
                                               else "shape %s, want %s" % (y.shape, want.shape)))


def refused(opset, x_shape, s_shape, needle):
    """The reference raises; rlx refuses at load with a message naming the node."""
    m = model(opset, list(x_shape), list(s_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    s = rng.standard_normal(s_shape).astype(np.float32)
    try:
        ReferenceEvaluator(m).run(None, {"x": x, "s": s})
        C.check(False, "PRelu-%d x%s s%s: the reference accepts it" % (opset, x_shape, s_shape))
    except Exception:
        pass
    try:
        rlx.Session(rlx.Model(m.SerializeToString()), device="cpu").run({"x": x, "s": s})
        C.check(False, "PRelu-%d x%s s%s: accepted" % (opset, x_shape, s_shape))
    except rlx.Error as e:
        C.check(e.status == "RLX_ERR_INVALID_MODEL" and "'prelu'" in str(e) and needle in str(e),
                "PRelu-%d x%s s%s: %s %s" % (opset, x_shape, s_shape, e.status, e))


for opset in (1, 6):
    for const in (False, True):
        case(opset, (1, 3, 4, 3), (3,), const=const)  # the finding: the last axis, not the channels
        case(opset, (2, 3, 4, 5), (5,), const=const)  # the finding: was refused
        case(opset, (2, 3, 4, 5), (3,), const=const)  # numpy fails: the one axis of size 3
        case(opset, (2, 3, 4, 5), (4,), const=const)
        case(opset, (2, 3, 4, 5), (3, 1, 1), const=const)
        case(opset, (2, 3, 4, 5), (4, 5), const=const)
        case(opset, (2, 3, 4, 5), (2, 3, 4, 5), const=const)
        case(opset, (2, 3, 4, 5), (1,), const=const)
        case(opset, (2, 3, 4, 5), (), const=const)
        case(opset, (6, 7), (6,), const=const)
        case(opset, (3, 5, 17), (5,), const=const)
        # numpy broadcasting both ways (tester14): the output is larger than X
        case(opset, (3, 1), (3,), const=const)
        case(opset, (2, 3, 1), (3,), const=const)
        case(opset, (1, 3, 1, 1), (3, 1, 5), const=const)
        case(opset, (3,), (2, 3), const=const)
        case(opset, (3, 1), (3,), x_dims=["a", "b"], const=const, feeds_shapes=[(3, 1), (3, 5), (4, 3), (4, 1)])
        # symbolic dims: the plan's shapes choose the axis
        case(opset, (1, 3, 4, 3), (3,), x_dims=["n", 3, "h", "w"], const=const,
             feeds_shapes=[(1, 3, 4, 3), (2, 3, 4, 5), (1, 3, 3, 3)])
        case(opset, (2, 3, 4, 5), (5,), x_dims=["n", "c", 4, 5], const=const,
             feeds_shapes=[(2, 3, 4, 5), (1, 7, 4, 5)])
        case(opset, (2, 3, 4, 5), (3,), x_dims=["n", 3, 4, 5], const=const,
             feeds_shapes=[(2, 3, 4, 5), (1, 3, 4, 5)])
    refused(opset, (2, 3, 3, 5), (3,), "fits neither")  # two axes of size 3, neither the last
    refused(opset, (2, 3, 4, 5), (6,), "fits neither")
    refused(opset, (2, 3, 4, 5), (3, 4), "fits neither")

# an eager plan (a Loop beside it): the host interpreter chooses the axis per run
body = H.make_graph([H.make_node("Identity", ["cond"], ["cond_out"]), H.make_node("Identity", ["v"], ["v_out"])],
                    "body", [H.make_tensor_value_info("i", T.INT64, []), H.make_tensor_value_info("cond", T.BOOL, []),
                             H.make_tensor_value_info("v", T.FLOAT, [])],
                    [H.make_tensor_value_info("cond_out", T.BOOL, []), H.make_tensor_value_info("v_out", T.FLOAT, [])])
for const in (False, True):
    slope = rng.standard_normal(3).astype(np.float32)
    ins = [H.make_tensor_value_info("x", T.FLOAT, ["n", 3, "h", "w"])]
    inits = [NH.from_array(np.int64(2), "trips"), NH.from_array(np.float32(7), "v0")]
    if const:
        inits.append(NH.from_array(slope, "s"))
    else:
        ins.append(H.make_tensor_value_info("s", T.FLOAT, [3]))
    g = H.make_graph([H.make_node("PRelu", ["x", "s"], ["y"], name="prelu"),
                      H.make_node("Loop", ["trips", "", "v0"], ["z"], name="loop", body=body)],
                     "g", ins, [H.make_tensor_value_info("y", T.FLOAT, None), H.make_tensor_value_info("z", T.FLOAT, None)],
                     inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 6)])
    m.ir_version = 3
    for d in DEVICES:
        sess = rlx.Session(rlx.Model(m.SerializeToString()), device=d)
        for xs in ((1, 3, 4, 3), (2, 3, 4, 5), (1, 3, 4, 1)):
            feeds = {"x": rng.standard_normal(xs).astype(np.float32)}
            if not const:
                feeds["s"] = slope
            want = ReferenceEvaluator(m).run(None, feeds)
            what = "PRelu-6 in an eager plan, x fed %s const=%s %s" % (list(xs), const, d)
            try:
                got = sess.run(feeds)
                C.check(np.array_equal(got[0], want[0]) and float(got[1]) == float(want[1]),
                        "%s: max diff %s" % (what, float(np.abs(got[0] - want[0]).max())
                                             if got[0].shape == want[0].shape else "shape %s" % (got[0].shape,)))
            except rlx.Error as e:
                C.check(False, "%s: %s" % (what, e))

# where numpy broadcasting decides, PRelu-6 is PRelu-9: the same as onnxruntime's PRelu-9 (exact)
try:
    import onnxruntime as ort
    ort.set_default_logger_severity(4)
except ImportError:
    ort = None
for xs, ss in (((3, 1), (3,)), ((2, 3, 1), (3,)), ((1, 3, 1, 1), (3, 1, 5)), ((3,), (2, 3)), ((2, 3, 4, 5), (5,))):
    if ort is None:
        break
    x = rng.standard_normal(xs).astype(np.float32)
    slope = rng.standard_normal(ss).astype(np.float32)
    want = ort.InferenceSession(model(9, list(xs), list(ss)).SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x, "s": slope})[0]
    for d in DEVICES:
        try:
            y = rlx.Session(rlx.Model(model(6, list(xs), list(ss)).SerializeToString()), device=d).run(
                {"x": x, "s": slope})[0]
            C.check(y.shape == want.shape and np.array_equal(y, want),
                    "PRelu-6 x%s s%s %s: %s, onnxruntime's PRelu-9 %s" % (xs, ss, d, y.shape, want.shape))
        except rlx.Error as e:
            C.check(False, "PRelu-6 x%s s%s %s: %s" % (xs, ss, d, e))

# symbolic dims fed two axes of the slope's size (neither the last): refused at run time,
# as an input the model does not accept
m = model(6, ["n", "c", "h", "w"], [3])
s = rlx.Session(rlx.Model(m.SerializeToString()), device="cpu")
try:
    s.run({"x": np.zeros((1, 3, 3, 5), np.float32), "s": np.ones(3, np.float32)})
    C.check(False, "PRelu-6 x[n,c,h,w] fed [1,3,3,5] s[3]: accepted")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_INVALID_ARGUMENT" and "'prelu'" in str(e) and "fits neither" in str(e),
            "PRelu-6 x[n,c,h,w] fed [1,3,3,5] s[3]: %s %s" % (e.status, e))

C.done()
