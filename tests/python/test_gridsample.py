"""GridSample (ONNX GridSample-16/20/22) on the CPU and the GPU against
onnxruntime's CPU kernel (1.22).

Every mode x padding_mode x align_corners on 2-D inputs (nearest, linear,
cubic) and 3-D ones (nearest, linear; cubic is 2-D only); 1-D and 4-D
ones (nearest, linear) against ONNX's reference implementation (the GPU
runs 1-D, the CPU 4-D); several shapes
(odd sizes, C > 4, N = 2, a spatial dim of 1), grid values uniform in
[-1.3, 1.3] and, for a second grid, in [-3.5, 3.5] (reflection several
periods away), fresh random data. Opsets 16 (bilinear / bicubic), 20 and
22. Tolerances: nearest must be exact on both devices (the same pixel
copied); linear and cubic within 2e-5 + 1e-5 |y| on the CPU (rlx sums in
f64, onnxruntime in f32) and 5e-5 + 2e-5 |y| on the GPU (f32 weights and
sums). f16 X and grid (onnxruntime has no f16 kernel: compared with its
f32 result on the same values) within 4e-3 + 4e-3 |y|; f64 against its
double kernel within 1e-10.

rlx's choices where onnxruntime is undefined (ir/ops/gridsample.h): a NaN
grid value gives NaN in every channel, an infinite one reads 0 (zeros),
the edge pixel (border) or NaN (reflection); huge finite values reflect
into range. Checked on both devices, as is that no run crashes on them.

Bad models are refused when they load, naming the node and the op:
grid rank, grid's last dim, batch, unknown mode or padding, align_corners
not 0/1, cubic on 3-D, integer X, a 5-D X at GridSample-16; a batch that
only the run reveals fails that run (no crash).

GPU runs poison the arena (gpu.poison) and check in the dispatch report
that GridSample ran on the GPU (f16 too where the adapter has
shader-f16; without it the CPU runs f16). Skips (exit
77) while librlx.so is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_gridsample")
rng = R.seeded_rng(16)
tmp = tempfile.mkdtemp(prefix="rlx_gridsample_")
DEVICES = R.devices(rlx)
counter = [0]


def model(mode, pad, ac, opset, xt=T.FLOAT, gt=T.FLOAT, xshape=None, gshape=None, attrs=None):
    kw = {"padding_mode": pad, "align_corners": ac}
    if mode is not None:
        kw["mode"] = mode
    if attrs is not None:
        kw = attrs
    node = H.make_node("GridSample", ["x", "grid"], ["y"], name="gs", **kw)
    g = H.make_graph([node], "gs", [H.make_tensor_value_info("x", xt, xshape), H.make_tensor_value_info("grid", gt, gshape)],
                     [H.make_tensor_value_info("y", xt, None)])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)], ir_version=8)
    counter[0] += 1
    path = os.path.join(tmp, "gs%d.onnx" % counter[0])
    onnx.save(m, path)
    return path, m


def run_ort(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def run_rlx(path, feeds, device, want_gpu=True):
    """Output of one run; on the GPU also whether GridSample ran there."""
    out, on_gpu = R.run_session(rlx, path, feeds, device, "GridSample" if want_gpu else None)
    return out[0], on_gpu


def mode_name(mode, opset):
    if opset >= 20:
        return mode
    return {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}[mode]


def close(y, want, atol, rtol):
    if y.shape != want.shape:
        return False, "shape %s, want %s" % (y.shape, want.shape)
    yd, wd = y.astype(np.float64), want.astype(np.float64)
    bad = ~(np.abs(yd - wd) <= atol + rtol * np.abs(wd))
    if atol == 0:
        bad = yd != wd
    if bad.any():
        i = np.argwhere(bad)[0]
        return False, "%d of %d differ, first at %s: %r vs %r" % (bad.sum(), y.size, tuple(i), y[tuple(i)], want[tuple(i)])
    return True, ""


def case(tag, xs, gs, mode, pad, ac, opset, lo, hi):
    x = rng.standard_normal(xs).astype(np.float32)
    grid = rng.uniform(lo, hi, gs).astype(np.float32)
    path, m = model(mode_name(mode, opset), pad, ac, opset)
    want = run_ort(m, {"x": x, "grid": grid})
    for dev in DEVICES:
        try:
            y, on_gpu = run_rlx(path, {"x": x, "grid": grid}, dev)
        except rlx.Error as e:
            C.check(False, "%s %s: %s" % (tag, dev, e))
            continue
        if mode == "nearest":
            atol = rtol = 0
        elif dev == "cpu":
            atol, rtol = 2e-5, 1e-5
        else:
            atol, rtol = 5e-5, 2e-5
        ok, why = close(y, want, atol, rtol)
        C.check(ok, "%s %s vs onnxruntime: %s" % (tag, dev, why))
        C.check(on_gpu, "%s: ran on the GPU" % tag)


SHAPES2 = [((2, 5, 7, 6), (2, 4, 9, 2)), ((1, 3, 5, 3), (1, 3, 4, 2)), ((2, 6, 1, 4), (2, 5, 3, 2))]
SHAPES3 = [((2, 5, 3, 4, 5), (2, 2, 3, 4, 3)), ((1, 3, 2, 5, 3), (1, 3, 2, 2, 3))]
for r, shapes, modes in ((2, SHAPES2, ("nearest", "linear", "cubic")), (3, SHAPES3, ("nearest", "linear"))):
    for mode in modes:
        for pad in ("zeros", "border", "reflection"):
            for ac in (0, 1):
                for si, (xs, gs) in enumerate(shapes):
                    # onnxruntime reads outside a dim of 1 under reflection with align_corners
                    # (its reflection divides by len - 1 = 0): rlx reads the one pixel, checked below
                    if ac == 1 and pad == "reflection" and 1 in xs[2:]:
                        continue
                    opset = (20, 16, 22)[si % 3] if r == 2 else (20, 22)[si % 2]
                    lo, hi = (-1.3, 1.3) if si != 1 else (-3.5, 3.5)
                    case("%dd %s %s ac=%d %s grid[%g,%g] opset %d" % (r, mode, pad, ac, xs, lo, hi, opset),
                         xs, gs, mode, pad, ac, opset, lo, hi)

# a dim of 1 under reflection with align_corners 1: every tap of that axis reads its one pixel
for mode in ("nearest", "linear", "cubic"):
    x = rng.standard_normal((1, 3, 1, 5)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (1, 4, 6, 2)).astype(np.float32)
    grid[..., 1] = rng.uniform(-3, 3, (1, 4, 6))  # y: the dim of 1
    path, m = model(mode, "reflection", 1, 20)
    g1 = grid.copy()
    g1[..., 1] = 0.0  # y = 0 exactly: the one row, weights (1, 0) / cubic (0, 1, 0, 0)
    xw = np.concatenate([x, x, x, x], axis=2)  # rows that all equal the one row: no reflection question
    _, m4 = model(mode, "reflection", 1, 20)
    want = run_ort(m4, {"x": xw, "grid": grid})
    for dev in DEVICES:
        y, on_gpu = run_rlx(path, {"x": x, "grid": grid}, dev)
        ok, why = close(y, want, 0 if mode == "nearest" else 5e-5, 2e-5)
        C.check(ok, "reflection ac=1 height 1 %s %s: %s" % (mode, dev, why))

# f16 X and grid: onnxruntime's f32 result on the same values; on the GPU's f16 kernel where the
# adapter has shader-f16
F16_GPU = any(a.get("shader_f16") for a in rlx.adapters())
for mode, pad, ac in (("linear", "zeros", 0), ("nearest", "border", 1), ("cubic", "reflection", 0)):
    x = rng.standard_normal((2, 5, 6, 7)).astype(np.float16)
    grid = rng.uniform(-1.3, 1.3, (2, 3, 4, 2)).astype(np.float16)
    path, _ = model(mode, pad, ac, 20, xt=T.FLOAT16, gt=T.FLOAT16)
    _, m32 = model(mode, pad, ac, 20)
    want = run_ort(m32, {"x": x.astype(np.float32), "grid": grid.astype(np.float32)})
    for dev in DEVICES:
        try:
            y, on_gpu = run_rlx(path, {"x": x, "grid": grid}, dev, want_gpu=F16_GPU)
        except rlx.Error as e:
            C.check(False, "f16 %s %s: %s" % (mode, dev, e))
            continue
        C.check(y.dtype == np.float16, "f16 %s %s: dtype %s" % (mode, dev, y.dtype))
        C.check(on_gpu, "f16 %s %s ac=%d: ran on the GPU (shader-f16)" % (mode, pad, ac))
        ok, why = close(y, want, 4e-3, 4e-3)
        C.check(ok, "f16 %s %s ac=%d %s vs onnxruntime f32: %s" % (mode, pad, ac, dev, why))

# f64 X and grid (onnxruntime's double kernel; the CPU's f64 coordinates and sums, the GPU declines): 1e-10
for mode, pad, ac in (("linear", "reflection", 1), ("nearest", "zeros", 0), ("cubic", "border", 0)):
    x = rng.standard_normal((2, 5, 6, 7))
    grid = rng.uniform(-1.3, 1.3, (2, 3, 4, 2))
    path, m = model(mode, pad, ac, 20, xt=T.DOUBLE, gt=T.DOUBLE)
    want = run_ort(m, {"x": x, "grid": grid})
    for dev in DEVICES:
        y, _ = run_rlx(path, {"x": x, "grid": grid}, dev, want_gpu=False)
        ok, why = close(y, want, 0 if mode == "nearest" else 1e-10, 1e-10)
        C.check(ok and y.dtype == np.float64, "f64 %s %s ac=%d %s vs onnxruntime: %s" % (mode, pad, ac, dev, why))

# 1 and 4 spatial dims (onnxruntime takes 2 and 3): ONNX's reference implementation, whose
# coordinate padding gives the same pixels and weights as the taps' for nearest and linear
for r, xs, gs in ((1, (2, 5, 7), (2, 6, 1)), (4, (1, 2, 3, 2, 4, 3), (1, 2, 2, 3, 2, 4))):
    for mode in ("nearest", "linear"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (0, 1):
                x = rng.standard_normal(xs).astype(np.float32)
                grid = rng.uniform(-1.3, 1.3, gs).astype(np.float32)
                path, m = model(mode, pad, ac, 20)
                want = ReferenceEvaluator(m).run(None, {"x": x, "grid": grid})[0]
                for dev in DEVICES:
                    y, on_gpu = run_rlx(path, {"x": x, "grid": grid}, dev, want_gpu=(r == 1))
                    ok, why = close(y, want, 0 if mode == "nearest" else 2e-5, 1e-5)
                    C.check(ok, "%d-D %s %s ac=%d %s vs the ONNX reference: %s" % (r, mode, pad, ac, dev, why))
                    C.check(on_gpu, "%d-D %s %s ac=%d: ran on the GPU" % (r, mode, pad, ac))

# the same bits at any thread count (one sum per output in a fixed order), blocks of 64 points split
x = rng.standard_normal((2, 9, 17, 19)).astype(np.float32)
grid = rng.uniform(-1.3, 1.3, (2, 23, 21, 2)).astype(np.float32)
for mode in ("nearest", "linear", "cubic"):
    path, _ = model(mode, "reflection", 0, 20)
    outs = [rlx.Session(rlx.Model(path), device="cpu", options={"cpu.threads": t}).run({"x": x, "grid": grid})[0]
            for t in (1, 2, 3)]
    C.check(all(o.tobytes() == outs[0].tobytes() for o in outs), "%s: the same bits on 1, 2 and 3 threads" % mode)

# special grid values: NaN, +-inf, huge finite
x = (np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) + 1) * 0.5
for mode in ("nearest", "linear", "cubic"):
    for pad in ("zeros", "border", "reflection"):
        vals = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, 0.25]
        grid = np.zeros((2, 2, len(vals), 2), np.float32)
        grid[..., 1] = 0.3
        grid[:, 0, :, 0] = vals          # x special, y ordinary
        grid[:, 1, :, 1] = vals          # y special, x ordinary
        grid[:, 1, :, 0] = -0.4
        path, m = model(mode, pad, 1, 20)
        outs = {}
        for dev in DEVICES:
            try:
                outs[dev], on_gpu = run_rlx(path, {"x": x, "grid": grid}, dev)
                C.check(on_gpu, "specials %s %s: ran on the GPU" % (mode, pad))
            except rlx.Error as e:
                C.check(False, "specials %s %s %s: %s" % (mode, pad, dev, e))
        if "cpu" not in outs:
            continue
        y = outs["cpu"]
        C.check(bool(np.isnan(y[:, :, :, 0]).all()), "specials %s %s: NaN coordinate gives NaN in every channel" % (mode, pad))
        for k, v in ((1, 1.0), (2, -1.0)):  # +-inf: as the grid value that reaches the edge (align_corners 1)
            for row, comp in ((0, 0), (1, 1)):
                got = y[:, :, row, k]
                if pad == "zeros":
                    C.check(bool((got == 0).all()), "specials %s zeros: inf reads 0, got %s" % (mode, got.ravel()))
                elif pad == "reflection":
                    C.check(bool(np.isnan(got).all()), "specials %s reflection: inf gives NaN, got %s" % (mode, got.ravel()))
                else:
                    g1 = grid[:, row:row + 1, k:k + 1, :].copy()
                    g1[..., comp] = v
                    want = run_ort(m, {"x": x, "grid": g1})[:, :, 0, 0]
                    ok, why = close(got, want, 1e-5, 1e-6)
                    C.check(ok, "specials %s border: inf at the edge: %s" % (mode, why))
        C.check(bool(np.isfinite(y[:, :, :, 3:]).all()), "specials %s %s: huge finite values give finite outputs" % (mode, pad))
        if pad != "zeros":  # a huge coordinate reads pixels of the input, whose values are all > 0
            C.check(bool((y[:, :, :, 3:5] != 0).all() or mode == "cubic"), "specials %s %s: huge values read pixels" % (mode, pad))
        ok, why = close(y[:, :, :, 6], run_ort(m, {"x": x, "grid": grid})[:, :, :, 6], 1e-5, 1e-6)
        C.check(ok, "specials %s %s: the ordinary column: %s" % (mode, pad, why))
        if "gpu" in outs:
            g = outs["gpu"]
            same_nan = np.array_equal(np.isnan(g), np.isnan(y))
            C.check(same_nan, "specials %s %s: GPU NaN where the CPU has NaN" % (mode, pad))
            fin = ~np.isnan(y)
            ok = np.allclose(g[fin], y[fin], atol=5e-5, rtol=2e-5)  # huge values reflect exactly on both
            C.check(ok, "specials %s %s: GPU as the CPU" % (mode, pad))

# nearest at huge coordinates, reflection: the pixel of the exact remainder (Python integers),
# on axes whose periods are no powers of 2 (7 and 5: 14 / 12 and 10 / 8)
def reflect_int(i, n, ac):
    if ac:
        if n == 1:
            return 0
        p = 2 * (n - 1)
        m = abs(i) % p
        return m if m <= n - 1 else p - m
    p = 2 * n
    m = (-1 - i if i < 0 else i) % p
    return m if m < n else p - 1 - m


def denorm32(g, n, ac):
    g1 = np.float32(g) + np.float32(1)
    if ac:
        return np.float32(np.float32(g1 / np.float32(2)) * np.float32(n - 1))
    return np.float32(np.float32(np.float32(g1 * np.float32(n)) - np.float32(1)) / np.float32(2))


x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
big = np.array([1e12, -1e12, 3.3e9, -7.7e10, 1e30, -2.5e25, 0.5], np.float32)
grid = np.stack(np.meshgrid(big, big[::-1], indexing="xy"), axis=-1)[None].astype(np.float32)
for ac in (0, 1):
    path, _ = model("nearest", "reflection", ac, 20)
    want = np.empty((1, 2) + grid.shape[1:3], np.float32)
    for a in range(grid.shape[1]):
        for b in range(grid.shape[2]):
            xi = int(np.rint(denorm32(grid[0, a, b, 0], 7, ac)))
            yi = int(np.rint(denorm32(grid[0, a, b, 1], 5, ac)))
            want[0, :, a, b] = x[0, :, reflect_int(yi, 5, ac), reflect_int(xi, 7, ac)]
    for dev in DEVICES:
        y, _ = run_rlx(path, {"x": x, "grid": grid}, dev)
        ok, why = close(y, want, 0, 0)
        C.check(ok, "nearest reflection ac=%d at huge coordinates %s: %s" % (ac, dev, why))

# ---------------------------------------------------------------- bad models

def refused(tag, path, feeds=None, at_run=False):
    try:
        sess = rlx.Session(rlx.Model(path), device="cpu")
        if not at_run:
            C.check(False, "%s: loaded" % tag)
            return
        sess.run(feeds)
        C.check(False, "%s: ran" % tag)
    except rlx.Error as e:
        msg = str(e)
        C.check("'gs'" in msg and "GridSample" in msg, "%s: message names node and op: %s" % (tag, msg))
        print("refused %s: %s" % (tag, msg))


refused("grid rank 3", model("linear", "zeros", 0, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2])[0])
refused("grid last dim 3", model("linear", "zeros", 0, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 3])[0])
refused("batch 2 vs 3", model("linear", "zeros", 0, 20, xshape=[2, 2, 3, 4], gshape=[3, 3, 2, 2])[0])
refused("mode bogus", model("bogus", "zeros", 0, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("mode bilinear at 20", model("bilinear", "zeros", 0, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("mode linear at 16", model("linear", "zeros", 0, 16, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("padding wrap", model("linear", "wrap", 0, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("align_corners 2", model("linear", "zeros", 2, 20, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("cubic 3-D", model("cubic", "zeros", 0, 20, xshape=[1, 2, 3, 4, 5], gshape=[1, 3, 2, 2, 3])[0])
refused("5-D at 16", model("bilinear", "zeros", 0, 16, xshape=[1, 2, 3, 4, 5], gshape=[1, 3, 2, 2, 3])[0])
refused("int32 X", model("linear", "zeros", 0, 20, xt=T.INT32, xshape=[1, 2, 3, 4], gshape=[1, 3, 2, 2])[0])
refused("X rank 2", model("linear", "zeros", 0, 20, xshape=[2, 3], gshape=[2, 3])[0])
refused("border on an empty dim", model("linear", "border", 0, 20, xshape=[1, 2, 0, 4], gshape=[1, 3, 2, 2])[0])
# shapes known only at the run
dyn = model("linear", "zeros", 0, 20, xshape=["n", "c", "h", "w"], gshape=["m", "a", "b", "k"])[0]
refused("batch at the run", dyn, {"x": rng.standard_normal((2, 2, 3, 4)).astype(np.float32),
                                  "grid": rng.uniform(-1, 1, (3, 3, 2, 2)).astype(np.float32)}, at_run=True)
refused("last dim at the run", dyn, {"x": rng.standard_normal((2, 2, 3, 4)).astype(np.float32),
                                     "grid": rng.uniform(-1, 1, (2, 3, 2, 3)).astype(np.float32)}, at_run=True)
# the zeros padding of an empty input dim is defined: every tap reads 0
p0 = model("linear", "zeros", 0, 20)[0]
y, _ = run_rlx(p0, {"x": np.ones((1, 2, 0, 4), np.float32), "grid": rng.uniform(-1, 1, (1, 3, 2, 2)).astype(np.float32)}, "cpu")
C.check(y.shape == (1, 2, 3, 2) and bool((y == 0).all()), "zeros padding of an empty dim gives 0: %s" % (y.ravel(),))

C.done()
