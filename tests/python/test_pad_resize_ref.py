"""Pad and Resize on the CPU and the GPU against the ONNX reference
implementation (onnx.reference.ReferenceEvaluator), issue 11.

Pad: every mode (constant, edge, reflect, wrap) on every axis position,
rank 1..6, pads larger than half the axis, equal to n - 1, larger than n
(reflect and wrap repeat, as numpy.pad and the reference do), negative pads
(cropping: the reference refuses them, so those cases compare with numpy on
the cropped input, which is what ONNX specifies), several axes at once,
axes longer than a workgroup, and one output just over 65,535 * 64
elements (the kernel's grid folds into y). Values are copied, so the
comparison is exact.

Resize: nearest with every coordinate_transformation_mode x nearest_mode,
linear and cubic (also antialias, exclude_outside, tf_crop_and_resize with
its extrapolation), scales and sizes, up- and downsampling, odd sizes. The
nearest index must be the reference's exactly (ties such as 7 -> 4 rows,
asymmetric: row 2 maps to 3.5, round_prefer_ceil takes row 4); linear and
cubic: the CPU within 1e-6 of the output's range for linear (f64 sums
rounded once) and 1e-5 for cubic (the reference's cubic coefficients are
f32: its cubic_coeff_a is an np.float32), the GPU within 2e-5 (f32 sums).

GPU runs poison the arena (gpu.poison) and check in the dispatch report
that the node ran on the GPU; without an adapter only the CPU is checked.
Named cases: pad_reflect_576_128 (the issue's [1,576] pads 128: 256 wrong
values before the fix), pad_reflect_300_100, resize_7to4_asym_ceil.

Skips (exit 77) while librlx.so is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_pad_resize_ref")
rng = R.seeded_rng(11)
tmp = tempfile.mkdtemp(prefix="rlx_pad_resize_")
DEVICES = R.devices(rlx)
QUICK = os.environ.get("RLX_TEST_QUICK") == "1"


def save(nodes, inputs, outputs, inits, opset, name):
    g = H.make_graph(nodes, name, inputs, outputs, initializer=inits)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", opset)]), path)
    return path


def run_rlx(path, feeds, device, op):
    """Outputs of one session run; on the GPU also whether `op` ran there."""
    return R.run_session(rlx, path, feeds, device, op)


# ---------------------------------------------------------------- Pad

def pad_expected(x, pads, mode, value):
    """numpy.pad after cropping the negative pads (ONNX: negative pads
    remove elements); the reference itself for non-negative pads."""
    r = x.ndim
    sl = tuple(slice(max(-pads[i], 0), x.shape[i] - max(-pads[r + i], 0)) for i in range(r))
    xc = x[sl]
    width = [(max(pads[i], 0), max(pads[r + i], 0)) for i in range(r)]
    if mode == "constant":
        return np.pad(xc, width, mode="constant", constant_values=value)
    return np.pad(xc, width, mode=mode)


def pad_case(name, shape, pads, mode, dtype=np.float32, value=1.5, x=None):
    r = len(shape)
    if x is None:
        if dtype == np.float32:
            x = rng.uniform(-4, 4, shape).astype(np.float32)
            x[x == 0] = 0.25
        else:
            x = rng.integers(-1000, 1000, shape).astype(dtype)
    ty = T.FLOAT if dtype == np.float32 else (T.INT64 if dtype == np.int64 else T.INT32)
    inits = [NH.from_array(np.array(pads, np.int64), "pads")]
    ins = ["x", "pads"]
    if mode == "constant":
        inits.append(NH.from_array(np.array(value, dtype), "cv"))
        ins.append("cv")
    node = H.make_node("Pad", ins, ["y"], mode=mode, name="pad")
    path = save([node], [H.make_tensor_value_info("x", ty, list(shape))],
                [H.make_tensor_value_info("y", ty, None)], inits, 21, "pad_" + name)
    want = pad_expected(x, pads, mode, value)
    if min(pads) >= 0:  # the reference refuses negative pads
        ref = ReferenceEvaluator(path).run(None, {"x": x})[0]
        if not C.check(ref.shape == want.shape and np.array_equal(ref, want),
                       "pad %s: numpy model differs from the reference" % name):
            return
    for dev in DEVICES:
        try:
            got, on_gpu = run_rlx(path, {"x": x}, dev, "Pad")
        except rlx.Error as e:
            C.check(False, "pad %s %s: %s" % (name, dev, e))
            continue
        y = got[0]
        ok = y.shape == want.shape and np.array_equal(y, want)
        bad = int(np.sum(y != want)) if y.shape == want.shape else -1
        C.check(ok, "pad %s %s: %s wrong of %d (shape %s, want %s)" % (name, dev, bad, want.size, y.shape, want.shape))
        C.check(on_gpu, "pad %s: ran on the GPU" % name)


# the cases, named
x576 = np.arange(576, dtype=np.float32).reshape(1, 576)
pad_case("reflect_576_128", (1, 576), [0, 128, 0, 128], "reflect", x=x576)
pad_case("reflect_300_100", (1, 300), [0, 100, 0, 100], "reflect",
         x=np.arange(300, dtype=np.float32).reshape(1, 300))
pad_case("reflect_16_4", (1, 16), [0, 4, 0, 4], "reflect", x=np.arange(16, dtype=np.float32).reshape(1, 16))
pad_case("wrap_576_128", (1, 576), [0, 128, 0, 128], "wrap", x=x576)
pad_case("edge_576_128", (1, 576), [0, 128, 0, 128], "edge", x=x576)

# modes x axis position x rank, pads beyond half the axis, n - 1, > n
for mode in ("constant", "edge", "reflect", "wrap"):
    for r in range(1, 7):
        shape = [int(v) for v in rng.integers(2, 5, r)]
        for ax in range(r):
            n = shape[ax]
            for b, e in ((n - 1, 1), (1, n - 1), (n // 2 + 1, n), (2 * n + 1, 3), (-1, n + 2), (2, -1)):
                if n + b + e <= 0:
                    continue
                if mode != "constant" and n + min(b, 0) + min(e, 0) <= 0:
                    continue
                pads = [0] * (2 * r)
                pads[ax], pads[r + ax] = b, e
                pad_case("%s_r%d_ax%d_%d_%d" % (mode, r, ax, b, e), shape, pads, mode)
        # several axes at once, one of them cropped
        pads = [int(v) for v in rng.integers(0, 4, 2 * r)]
        pads[0] = -1 if shape[0] > 2 else pads[0]
        pad_case("%s_r%d_all" % (mode, r), shape, pads, mode)
    # long axes (more than a workgroup), pads larger than half of them
    pad_case("%s_long" % mode, (3, 200), [1, 150, 2, 199], mode)
    pad_case("%s_long_i64" % mode, (2, 130), [0, 129, 1, 100], mode, dtype=np.int64)
    pad_case("%s_long_i32" % mode, (130, 2), [129, 1, 70, 2], mode, dtype=np.int32)
# more than 65,535 workgroups of 64 in one dimension: 4,194,240 + elements
if not QUICK:
    pad_case("reflect_grid_y", (2, 2097200), [0, 300, 0, 300], "reflect")
    pad_case("wrap_grid_y", (1, 4194300), [0, 257, 0, 1000], "wrap")

# ---------------------------------------------------------------- Resize

COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_crop_and_resize"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def resize_case(name, x, mode, coord, nearest="round_prefer_floor", scales=None, sizes=None, roi=None,
                extra=None, opset=19):
    attrs = dict(mode=mode, coordinate_transformation_mode=coord, nearest_mode=nearest)
    attrs.update(extra or {})
    inits = []
    ins = ["x", "", "", ""]
    if roi is not None:
        inits.append(NH.from_array(np.array(roi, np.float32), "roi"))
        ins[1] = "roi"
    if scales is not None:
        inits.append(NH.from_array(np.array(scales, np.float32), "scales"))
        ins[2] = "scales"
    else:
        inits.append(NH.from_array(np.array(sizes, np.int64), "sizes"))
        ins[3] = "sizes"
    while ins[-1] == "":
        ins.pop()
    node = H.make_node("Resize", ins, ["y"], name="rs", **attrs)
    path = save([node], [H.make_tensor_value_info("x", T.FLOAT, list(x.shape))],
                [H.make_tensor_value_info("y", T.FLOAT, None)], inits, opset, "resize_" + name)
    ref = ReferenceEvaluator(path).run(None, {"x": x})[0]
    span = float(np.max(np.abs(ref))) + 1e-30 if ref.size else 1.0
    for dev in DEVICES:
        try:
            got, on_gpu = run_rlx(path, {"x": x}, dev, "Resize")
        except rlx.Error as e:
            C.check(False, "resize %s %s: %s" % (name, dev, e))
            continue
        y = got[0]
        if not C.check(y.shape == ref.shape, "resize %s %s: shape %s, want %s" % (name, dev, y.shape, ref.shape)):
            continue
        if mode == "nearest":
            ok = np.array_equal(y, ref)
            what = "%d of %d differ" % (int(np.sum(y != ref)), ref.size)
        else:
            # the reference computes cubic coefficients in f32 (its
            # cubic_coeff_a is an np.float32, which NumPy 2 keeps), rlx in f64
            tol = (1e-5 if mode == "cubic" else 1e-6) if dev == "cpu" else 2e-5
            err = float(np.max(np.abs(y.astype(np.float64) - ref))) / span if ref.size else 0.0
            ok = err <= tol
            what = "max error %.3g of the range (tolerance %g)" % (err, tol)
        C.check(ok, "resize %s %s: %s" % (name, dev, what))
        C.check(on_gpu, "resize %s: ran on the GPU" % name)


def ramp(*shape):
    """Distinct values: each output element tells which input it took."""
    return (np.arange(int(np.prod(shape)), dtype=np.float32) + 1).reshape(shape)


# the case: 7 -> 4 rows, asymmetric, round_prefer_ceil; row 2 maps to 3.5 -> row 4
resize_case("7to4_asym_ceil", ramp(1, 1, 7, 3), "nearest", "asymmetric", "round_prefer_ceil", sizes=[1, 1, 4, 3])
resize_case("7to4_asym_floor", ramp(1, 1, 7, 3), "nearest", "asymmetric", "round_prefer_floor", sizes=[1, 1, 4, 3])

pairs = [(7, 4), (4, 7), (5, 3), (3, 5), (9, 6), (6, 9), (8, 3), (2, 7), (7, 1), (1, 3), (10, 4), (13, 8)]
if QUICK:
    pairs = pairs[:4]
for coord in COORDS:
    roi = [0, 0, 0.125, 0.1, 1, 1, 0.875, 1.2] if coord == "tf_crop_and_resize" else None
    for (hi, ho) in pairs:
        for (wi, wo) in ((3, 5), (6, 4)):
            x = ramp(1, 2, hi, wi)
            for nm in NEAREST:
                resize_case("n_%s_%s_%dx%d_%dx%d_sizes" % (coord, nm, hi, wi, ho, wo), x, "nearest", coord, nm,
                            sizes=[1, 2, ho, wo], roi=roi)
                resize_case("n_%s_%s_%dx%d_scales" % (coord, nm, hi, wi), x, "nearest", coord, nm,
                            scales=[1, 1, ho / hi, wo / wi], roi=roi)
            xr = rng.uniform(-2, 2, (1, 2, hi, wi)).astype(np.float32)
            for mode in ("linear", "cubic"):
                resize_case("%s_%s_%dx%d_%dx%d" % (mode, coord, hi, wi, ho, wo), xr, mode, coord, sizes=[1, 2, ho, wo],
                            roi=roi)
                resize_case("%s_%s_%dx%d_scales" % (mode, coord, hi, wi), xr, mode, coord,
                            scales=[1, 1, ho / hi, wo / wi], roi=roi,
                            extra={"exclude_outside": 1} if mode == "cubic" else None)
# scales that are no ratio of the sizes (the unfloored output length differs)
x = rng.uniform(-2, 2, (1, 1, 7, 9)).astype(np.float32)
for coord in COORDS[:5]:
    for mode in ("nearest", "linear", "cubic"):
        resize_case("odd_scale_%s_%s" % (mode, coord), x, mode, coord, "round_prefer_ceil", scales=[1, 1, 0.6, 1.7])
# antialias (Resize-18), axes, keep_aspect_ratio_policy, Resize-10/13
for mode in ("linear", "cubic"):
    resize_case("aa_%s" % mode, rng.uniform(-2, 2, (1, 1, 12, 10)).astype(np.float32), mode, "half_pixel",
                scales=[1, 1, 0.4, 0.7], extra={"antialias": 1})
resize_case("axes_sizes", ramp(2, 7, 5), "nearest", "asymmetric", "round_prefer_ceil", sizes=[4, 3],
            extra={"axes": [1, 2]})
resize_case("not_larger", ramp(1, 1, 7, 5), "nearest", "half_pixel", "round_prefer_ceil", sizes=[1, 1, 4, 4],
            extra={"keep_aspect_ratio_policy": "not_larger"}, opset=18)
resize_case("opset13_7to4", ramp(1, 1, 7, 3), "nearest", "asymmetric", "round_prefer_ceil", sizes=[1, 1, 4, 3],
            opset=13)

C.done()
