"""NaN, infinities and out-of-range values where a tester found rlx
dropping or wrapping them, on the CPU (fast paths, and every pass off) and
on the GPU when there is an adapter:

- Sign(NaN) is NaN (numpy, onnxruntime), standalone and in a fused chain;
- MaxPool and GlobalMaxPool propagate NaN: a window holding a NaN gives NaN
  wherever the NaN sits in it, as ReduceMax and PyTorch's max_pool2d; the
  reference here is numpy's max over each window (onnxruntime 1.22 is
  recorded, not followed: it gives NaN only where the window's last tap is
  NaN); planes with and without NaN side by side, shapes that take the
  CPU's fast paths (column blocks, two planes per vector, small planes,
  rows of 600, dilation);
- ArgMax and ArgMin give onnxruntime's indices (ONNX is silent on NaN):
  a row whose element 0 is NaN gives 0, a NaN elsewhere never wins (numpy's
  argmax, the first NaN, is recorded, not followed); f32, f16 and f64,
  both select_last_index, rows with NaN at element 0, in the middle, at
  the end, everywhere, among ties; contiguous and strided rows, rows
  longer than a workgroup;
- Cast float -> integer saturates to the target's range (+-inf too), NaN
  gives 0 (docs/ops.md);
- Range with a NaN start, limit or delta is refused naming it; an infinite
  limit follows the ONNX formula (empty, or too long);
- an initializer of a narrow type whose int32_data value does not fit is
  refused (RLX_ERR_INVALID_MODEL naming it): onnxruntime refuses f16 and
  bf16 ("data overflow") and truncates 8- and 16-bit integers silently;
- Gemm with beta 0 does not read C (a NaN or inf there), as onnxruntime and
  PyTorch's addmm(beta=0), fed, constant and inside an If branch.

Inputs random (seed RLX_TEST_SEED, default 5). Skips (exit 77) while
librlx.so is not built."""
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_nan_semantics")
rng = R.seeded_rng(5)
GPU = len(rlx.adapters()) > 0
print("GPU adapter:", rlx.adapters()[0]["name"] if GPU else "none (GPU cases skipped)")
RUNS = [("cpu", {}), ("cpu", {"passes.disable": "fuse_activation,fuse_elementwise,fuse_conv_residual"})]
if GPU:
    RUNS += [("gpu", {})]


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = H.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def vi(name, et, shape):
    return H.make_tensor_value_info(name, et, shape)


def same(label, got, want):
    """NaN exactly where want has NaN, the same values elsewhere."""
    got = np.asarray(got)
    ok = C.check(got.shape == want.shape, "%s: shape %s, want %s" % (label, got.shape, want.shape))
    if not ok:
        return
    if np.issubdtype(want.dtype, np.floating):
        nw, ng = np.isnan(want), np.isnan(got)
        ok = C.check(np.array_equal(nw, ng), "%s: NaN at %d places, want %d (first differences %s)" % (
            label, int(ng.sum()), int(nw.sum()), np.argwhere(nw != ng).tolist()[:4]))
        m = ~nw & ~ng
        C.check(np.array_equal(got[m], want[m]), "%s: values differ at %s" % (
            label, np.argwhere(m & (got != want)).tolist()[:4]))
    else:
        C.check(np.array_equal(got, want), "%s: %s, want %s" % (label, got.ravel()[:8].tolist(), want.ravel()[:8].tolist()))


def run_all(label, b, feeds, want, runs=None):
    for dev, opts in runs or RUNS:
        got = rlx.Session(rlx.Model(b), device=dev, options=opts).run(feeds)[0]
        same("%s on %s %s" % (label, dev, opts or ""), got, want)


# ------------------------------------------------------------ Sign
x = rng.uniform(-3, 3, 64).astype(np.float32)
x[[0, 5, 17, 40, 63]] = [np.nan, -np.nan, np.inf, -np.inf, -0.0]
b = model([H.make_node("Sign", ["x"], ["y"])], [vi("x", T.FLOAT, [64])], [vi("y", T.FLOAT, None)])
want = np.sign(x)
ort = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
C.check(np.array_equal(np.isnan(ort), np.isnan(want)), "onnxruntime's Sign: NaN where numpy's is")
run_all("Sign", b, {"x": x}, want)
b = model([H.make_node("Mul", ["x", "s"], ["a"]), H.make_node("Sign", ["a"], ["c"]), H.make_node("Add", ["c", "s"], ["y"])],
          [vi("x", T.FLOAT, [64])], [vi("y", T.FLOAT, None)], [onnx.numpy_helper.from_array(np.array(2, np.float32), "s")])
run_all("Mul -> Sign -> Add chain", b, {"x": x}, np.sign(x * 2) + 2)


# ------------------------------------------------------------ MaxPool
def maxpool_ref(x, k, s, pads, d, ceil_mode):
    """numpy max over each window's taps inside the input (NaN propagates)."""
    sr = len(k)
    sp = x.shape[2:]
    out = []
    for j in range(sr):
        ext = (k[j] - 1) * d[j] + 1
        num = sp[j] + pads[j] + pads[sr + j] - ext
        o = (-(-num // s[j]) if ceil_mode else num // s[j]) + 1
        if ceil_mode and (o - 1) * s[j] >= sp[j] + pads[j]:
            o -= 1
        out.append(o)
    y = np.empty(x.shape[:2] + tuple(out), np.float32)
    for idx in np.ndindex(*out):
        sl = []
        for j in range(sr):
            taps = [idx[j] * s[j] - pads[j] + t * d[j] for t in range(k[j])]
            sl.append([q for q in taps if 0 <= q < sp[j]])
        win = x[(slice(None), slice(None)) + np.ix_(*sl)] if sr > 1 else x[:, :, sl[0]]
        y[(slice(None), slice(None)) + idx] = np.max(win.reshape(x.shape[0], x.shape[1], -1), axis=2)
    return y


def with_nans(shape, per_plane, rng):
    """Random values, planes alternating without NaN and with per_plane
    NaNs (one at the plane's last element), some -inf."""
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    planes = x.reshape(shape[0] * shape[1], -1)
    for p in range(planes.shape[0]):
        if p % 2 == 0:
            continue
        planes[p, rng.integers(0, planes.shape[1], per_plane)] = np.nan
        planes[p, -1] = np.nan
        planes[p, rng.integers(0, planes.shape[1], 3)] = -np.inf
    return planes.reshape(shape)


POOLS = [  # shape, kernel, strides, pads, dilations, ceil_mode
    ((1, 6, 27, 27), [3, 3], [2, 2], [0, 0, 0, 0], [1, 1], 0),    # column blocks, stride 2
    ((1, 6, 14, 14), [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 0),    # column blocks, stride 1
    ((1, 7, 8, 8), [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], 0),      # two planes per vector
    ((1, 4, 4, 4), [2, 2], [1, 1], [0, 0, 0, 0], [1, 1], 0),      # the tester's 4x4
    ((1, 4, 12, 20), [1, 9], [1, 1], [0, 0, 0, 0], [1, 1], 0),    # small planes in registers
    ((1, 4, 9, 600), [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 1),    # rows by the ring
    ((1, 4, 11, 10), [3, 2], [1, 2], [2, 0, 1, 1], [2, 1], 0),    # dilation: output by output
    ((1, 4, 40), [4], [3], [2, 1], [1], 1),                       # 1-D
    ((1, 4, 5, 6, 7), [2, 3, 2], [2, 1, 2], [1, 1, 0, 0, 1, 1], [1, 1, 1], 0),  # 3-D
]
for shape, k, s, pads, d, ceil_mode in POOLS:
    x = with_nans(shape, 2, rng)
    attrs = dict(kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil_mode)
    if any(v != 1 for v in d):
        attrs["dilations"] = d
    b = model([H.make_node("MaxPool", ["x"], ["y"], **attrs)], [vi("x", T.FLOAT, list(shape))], [vi("y", T.FLOAT, None)])
    run_all("MaxPool x%s k%s s%s" % (list(shape), k, s), b, {"x": x}, maxpool_ref(x, k, s, pads, d, ceil_mode))

# the tester's windows, and what onnxruntime 1.22 does with them (recorded)
for w in ([np.nan, 3, -np.inf, 0], [3, -2, 0, np.nan], [1, np.nan, np.nan, 2], [np.nan] * 4):
    x = np.array(w, np.float32).reshape(1, 1, 2, 2)
    b = model([H.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])], [vi("x", T.FLOAT, [1, 1, 2, 2])], [vi("y", T.FLOAT, None)])
    ort = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    print("MaxPool window %s: onnxruntime %s, rlx's rule NaN" % (w, ort.ravel().tolist()))
    run_all("MaxPool window %s" % w, b, {"x": x}, np.full((1, 1, 1, 1), np.nan, np.float32))

# ------------------------------------------------------------ GlobalMaxPool, ReduceMax, ArgMax
for shape in [(1, 6, 4, 4), (2, 4, 700), (1, 4, 20, 20)]:
    x = with_nans(shape, 1, rng)
    b = model([H.make_node("GlobalMaxPool", ["x"], ["y"])], [vi("x", T.FLOAT, list(shape))], [vi("y", T.FLOAT, None)])
    want = np.max(x.reshape(shape[0], shape[1], -1), axis=2).reshape(shape[:2] + (1,) * (len(shape) - 2))
    run_all("GlobalMaxPool x%s" % list(shape), b, {"x": x}, want)
    axes = list(range(2, len(shape)))
    b = model([H.make_node("ReduceMax", ["x"], ["y"], axes=axes)], [vi("x", T.FLOAT, list(shape))], [vi("y", T.FLOAT, None)],
              opset=13)
    run_all("ReduceMax x%s" % list(shape), b, {"x": x}, want)
    b = model([H.make_node("ArgMax", ["x"], ["y"], axis=len(shape) - 1, keepdims=0)], [vi("x", T.FLOAT, list(shape))],
              [vi("y", T.INT64, None)])
    ort = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    run_all("ArgMax x%s" % list(shape), b, {"x": x}, ort)

# ------------------------------------------------------------ ArgMax, ArgMin against onnxruntime
ARG_ROWS = [[np.nan, 1, 3, 2], [1, np.nan, 3, 2], [1, 3, 2, np.nan], [np.nan] * 4, [3, np.nan, 3, 1],
            [1, np.nan, 1, 3], [np.nan, 3, 3, 1], [3, 1, 3, np.nan], [-np.inf, np.nan, np.inf, 0]]
argmax_numpy = np.argmax(np.array(ARG_ROWS[:3]), axis=1).tolist()
for npt, et in [(np.float32, T.FLOAT), (np.float16, T.FLOAT16), (np.float64, T.DOUBLE)]:
    for shape, axis in [((9, 4), 1), ((4, 9), 0), ((6, 300), 1), ((2, 70, 3), 1)]:
        if shape == (9, 4):
            x = np.array(ARG_ROWS, npt)
        elif shape == (4, 9):
            x = np.array(ARG_ROWS, npt).T.copy()
        else:  # small integers (ties), NaN at element 0 of every third row, at random elsewhere
            x = rng.integers(-3, 4, shape).astype(npt)
            xm = np.moveaxis(x, axis, -1)
            xm[rng.random(xm.shape) < 0.05] = np.nan
            rows = xm.reshape(-1, shape[axis])
            rows[::3, 0] = np.nan
            rows[1::3, 0] = 5
            rows[2, :] = np.nan
            x = np.moveaxis(xm, -1, axis).copy()
        for op in ("ArgMax", "ArgMin"):
            for last in (0, 1):
                b = model([H.make_node(op, ["x"], ["y"], axis=axis, keepdims=0, select_last_index=last)],
                          [vi("x", et, list(shape))], [vi("y", T.INT64, None)], opset=13)
                ort = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
                if (npt, shape, op, last) == (np.float32, (9, 4), "ArgMax", 0):
                    argmax_ort = ort[:3].tolist()
                run_all("%s %s x%s axis %d select_last_index %d" % (op, np.dtype(npt).name, list(shape), axis, last),
                        b, {"x": x}, ort)
print("ArgMax of %s: numpy %s, onnxruntime (rlx's rule) %s" % (ARG_ROWS[:3], argmax_numpy, argmax_ort))

# ------------------------------------------------------------ Cast float -> integer
x = np.concatenate([np.array([np.inf, -np.inf, np.nan, 3e9, -3e9, 1.5, -1.5, 2147483520, -2147483648, 4294967040,
                              70000, -70000, 300, -300, 255.9, -0.9], np.float32),
                    rng.uniform(-5e9, 5e9, 16).astype(np.float32)])
for to, npt in [(T.INT32, np.int32), (T.UINT32, np.uint32), (T.INT16, np.int16), (T.UINT16, np.uint16),
                (T.INT8, np.int8), (T.UINT8, np.uint8), (T.UINT64, np.uint64)]:
    info = np.iinfo(npt)
    want = np.array([0 if np.isnan(v) else int(info.min) if v <= info.min else int(info.max) if v >= info.max
                     else int(np.trunc(v)) for v in x.astype(np.float64)], npt)
    b = model([H.make_node("Cast", ["x"], ["y"], to=to)], [vi("x", T.FLOAT, [x.size])], [vi("y", to, None)])
    runs = RUNS if to in (T.INT32, T.UINT32) else RUNS[:2]  # the GPU's Cast: 32-bit integers
    run_all("Cast to %s" % np.dtype(npt).name, b, {"x": x}, want, runs)
    # a constant folds at load through the same kernel
    b = model([H.make_node("Cast", ["k"], ["c"], to=to), H.make_node("Identity", ["c"], ["y"])],
              [vi("x", T.FLOAT, [1])], [vi("y", to, None)], [onnx.numpy_helper.from_array(x, "k")])
    run_all("Cast of a constant to %s" % np.dtype(npt).name, b, {"x": np.zeros(1, np.float32)}, want, RUNS[:1])

# ------------------------------------------------------------ Range
b = model([H.make_node("Range", ["a", "l", "d"], ["y"])], [vi(n, T.FLOAT, []) for n in "ald"], [vi("y", T.FLOAT, None)])
s = rlx.Session(rlx.Model(b))
for a, l_, d_, want in [(0, np.nan, 1, "limit is NaN"), (np.nan, 5, 1, "start is NaN"), (0, 5, np.nan, "delta is NaN"),
                        (0, np.inf, 1, "too long"), (np.inf, np.inf, 1, "no length"), (0, -np.inf, 1, 0), (0, 5, np.inf, 0),
                        (np.inf, 5, 1, 0), (0, 5, 1, 5)]:
    feeds = {"a": np.array(a, np.float32), "l": np.array(l_, np.float32), "d": np.array(d_, np.float32)}
    what = "Range(%s, %s, %s)" % (a, l_, d_)
    try:
        y = s.run(feeds)[0]
        C.check(want == y.size if isinstance(want, int) else False, "%s: %d elements, want %s" % (what, y.size, want))
    except rlx.Error as e:
        C.check(isinstance(want, str) and want in str(e) and "Range" in str(e),
                "%s: error '%s', want %s" % (what, e, want))

# ------------------------------------------------------------ narrow types in int32_data
for dt, vals, bad in [(T.FLOAT16, [15360, 70000], "70000"), (T.FLOAT16, [15360, -5], "-5"), (T.BFLOAT16, [16256, 65536], "65536"),
                      (T.INT8, [1, 128], "128"), (T.INT8, [-129, 0], "-129"), (T.UINT8, [255, 256], "256"),
                      (T.INT16, [40000, 0], "40000"), (T.UINT16, [-1, 0], "-1")]:
    t = onnx.TensorProto()
    t.name, t.data_type = "w_narrow", dt
    t.dims.extend([2])
    t.int32_data.extend(vals)
    b = model([H.make_node("Identity", ["w_narrow"], ["y"])], [vi("x", T.FLOAT, [1])], [vi("y", dt, None)], [t])
    what = "%s initializer with int32_data %s" % (onnx.TensorProto.DataType.Name(dt), vals)
    try:
        rlx.Session(rlx.Model(b)).run({"x": np.zeros(1, np.float32)})
        C.check(False, "%s: loaded, want RLX_ERR_INVALID_MODEL" % what)
    except rlx.Error as e:
        C.check(e.status == "RLX_ERR_INVALID_MODEL" and "w_narrow" in str(e) and bad in str(e),
                "%s: %s, want RLX_ERR_INVALID_MODEL naming w_narrow and %s" % (what, e, bad))
# values that fit still load; bool is any nonzero value (onnxruntime too)
t = onnx.TensorProto()
t.name, t.data_type = "w_bool", T.BOOL
t.dims.extend([3])
t.int32_data.extend([0, 1, 2])
b = model([H.make_node("Identity", ["w_bool"], ["y"])], [vi("x", T.FLOAT, [1])], [vi("y", T.BOOL, None)], [t])
y = rlx.Session(rlx.Model(b)).run({"x": np.zeros(1, np.float32)})[0]
C.check(np.array_equal(y, [False, True, True]), "bool int32_data [0, 1, 2]: %s" % y)
t = onnx.TensorProto()
t.name, t.data_type = "w_ok", T.FLOAT16
t.dims.extend([2])
t.int32_data.extend([15360, 0xC000])  # 1.0, -2.0
b = model([H.make_node("Identity", ["w_ok"], ["y"])], [vi("x", T.FLOAT, [1])], [vi("y", T.FLOAT16, None)], [t])
y = rlx.Session(rlx.Model(b)).run({"x": np.zeros(1, np.float32)})[0]
C.check(np.array_equal(y.astype(np.float32), [1.0, -2.0]), "f16 int32_data [1, -2]: %s" % y)

# ------------------------------------------------------------ Gemm with beta 0
# C is not read when beta is 0, as onnxruntime and PyTorch's addmm(beta=0)
# take it: a NaN or inf in C gave NaN (0 * NaN) on both devices. C fed,
# constant, and in an If branch (run by the CPU kernels on any device)
A = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
Bm = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
Cn = np.array([np.nan, np.inf, -np.inf, 1, 2], np.float32)
want = (0.5 * (A.astype(np.float64) @ Bm)).astype(np.float32)
for const in (False, True):
    ins = [vi("a", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [4, 5])] + ([] if const else [vi("c", T.FLOAT, [5])])
    b = model([H.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=0.0)], ins, [vi("y", T.FLOAT, None)],
              [onnx.numpy_helper.from_array(Cn, "c")] if const else [])
    feeds = {"a": A, "b": Bm} if const else {"a": A, "b": Bm, "c": Cn}
    ort = onnxruntime.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    C.check(np.allclose(ort, want, atol=1e-6), "onnxruntime's Gemm beta 0: %s" % ort)
    for dev, opts in RUNS:
        got = rlx.Session(rlx.Model(b), device=dev, options=opts).run(feeds)[0]
        C.check(got.shape == want.shape and np.allclose(got, want, atol=1e-6, rtol=1e-6),
                "Gemm beta 0, C %s, on %s %s: %s" % ("constant" if const else "fed", dev, opts or "", got))
branch = H.make_graph([H.make_node("Gemm", ["a", "b", "c"], ["t"], alpha=0.5, beta=0.0)], "then", [],
                      [vi("t", T.FLOAT, None)])
other = H.make_graph([H.make_node("Identity", ["a"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
b = model([H.make_node("If", ["k"], ["y"], then_branch=branch, else_branch=other)],
          [vi("a", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [4, 5]), vi("c", T.FLOAT, [5]), vi("k", T.BOOL, [])],
          [vi("y", T.FLOAT, None)])
for dev, opts in RUNS:
    got = rlx.Session(rlx.Model(b), device=dev, options=opts).run({"a": A, "b": Bm, "c": Cn, "k": np.array(True)})[0]
    C.check(got.shape == want.shape and np.allclose(got, want, atol=1e-6, rtol=1e-6),
            "Gemm beta 0 in an If branch on %s %s: %s" % (dev, opts or "", got))

C.done()
