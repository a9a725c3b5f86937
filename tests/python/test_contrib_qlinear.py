"""onnxruntime's QLinear contrib ops that rlx expands at import
(src/import/onnx_contrib.c): QLinearAveragePool, QLinearSoftmax,
QLinearReduceMean, QLinearWhere (QLinearGlobalAveragePool and the older
ones: test_contrib_ops.py; QGemm and its kin: test_contrib_qops.py). One
small model per op and form, onnxruntime 1.22 against `rlx run` on the CPU
and the GPU device (lavapipe here) on random inputs (tests/python/
qops_ref.py); whole outputs compared.

Tolerances (stated per case, printed with the measured difference):
- QLinearAveragePool, QLinearWhere: bit-exact. The pool adds y_zero_point
  before rounding as onnxruntime does (the ties cases exercise it: with the
  standard QuantizeLinear instead, 25 to 42 of 96 codes differ by 1), and
  takes onnxruntime's integer mean where the kernel covers the image;
  with count_include_pad and ceil_mode it divides by the kernel size also
  where a window reaches past the end padding, as onnxruntime does (rlx's
  AveragePool, ONNX, counts the taps inside the padding: 17 of 50 codes
  differed before).
- QLinearSoftmax: within 1 level: onnxruntime sums a table of exponentials
  computed in double and rounded to f32, rlx runs Softmax in f32.
- QLinearReduceMean: onnxruntime has no CPU kernel; the reference is numpy
  in float64 of the spec's Q(ReduceMean(DQ(x))), within 1 level (ties).
Skips (exit 77) while rlx is not built."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qops_ref import NP2ONNX, case, node, qdata, rng, scale, start, zp  # noqa: E402

C = start("test_contrib_qlinear")


# ---------------------------------------------------------------- QLinearAveragePool
def qavgpool(name, dt, shape, last=False, ties=False, **attrs):
    inits = {"xs": scale(lo=0.01, hi=0.05), "xz": zp(dt), "ys": scale(lo=0.01, hi=0.05), "yz": zp(dt)}
    if ties:  # x_scale = y_scale, pairs: half the means end in .5; an odd y_zero_point
        inits.update(ys=inits["xs"], yz=np.array(13 if dt == np.int8 else 129, dt))
    x = qdata(dt, *shape)
    case(name, [node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], channels_last=int(last), **attrs)],
         {"x": x}, {"y": NP2ONNX[dt]}, inits)


# uint8 and int8 alternate over the forms (the ties cases below take both)
qavgpool("qavgpool_3x3_s2_p1_u8", np.uint8, (2, 3, 9, 9), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
qavgpool("qavgpool_count_pad_s8", np.int8, (1, 3, 8, 7), kernel_shape=[3, 2], pads=[1, 0, 1, 1], count_include_pad=1)
qavgpool("qavgpool_ceil_u8", np.uint8, (1, 2, 8, 8), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
# windows past the end padding: onnxruntime divides them by the kernel size too
qavgpool("qavgpool_ceil_count_pad_u8", np.uint8, (1, 2, 8, 9), kernel_shape=[3, 3], strides=[2, 2],
         pads=[1, 1, 1, 0], ceil_mode=1, count_include_pad=1)
qavgpool("qavgpool_ceil_count_pad_last_s8", np.int8, (1, 7, 6, 3), last=True, kernel_shape=[2, 3], strides=[2, 2],
         pads=[0, 1, 1, 1], ceil_mode=1, count_include_pad=1)
qavgpool("qavgpool_last_s8", np.int8, (1, 6, 6, 4), last=True, kernel_shape=[2, 2], strides=[2, 2])
qavgpool("qavgpool_global_u8", np.uint8, (2, 3, 5, 6), kernel_shape=[5, 6])
# onnxruntime adds y_zero_point before rounding: ties round to even after it
qavgpool("qavgpool_ties_u8", np.uint8, (1, 4, 6, 8), ties=True, kernel_shape=[1, 2], strides=[1, 2])
qavgpool("qavgpool_ties_s8", np.int8, (1, 4, 6, 8), ties=True, kernel_shape=[2, 1], strides=[2, 1])
qavgpool("qavgpool_1d", np.uint8, (2, 3, 11), kernel_shape=[3], strides=[2], pads=[1, 1])
qavgpool("qavgpool_same_upper", np.uint8, (1, 2, 7, 7), kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
qavgpool("qavgpool_global_last", np.int8, (1, 4, 5, 3), last=True, kernel_shape=[4, 5])


# ---------------------------------------------------------------- QLinearSoftmax
def qsoftmax(name, dt, shape, opset=13, axis=None, ys=1.0 / 256):
    inits = {"xs": scale(lo=0.02, hi=0.1), "xz": zp(dt), "ys": np.array(ys, np.float32),
             "yz": np.array(0 if dt == np.uint8 else -128, dt)}
    attrs = {"opset": opset}
    if axis is not None:
        attrs["axis"] = axis
    case(name, [node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], **attrs)], {"x": qdata(dt, *shape)},
         {"y": NP2ONNX[dt]}, inits, qtol=1)


qsoftmax("qsoftmax_u8", np.uint8, (3, 4, 10))
qsoftmax("qsoftmax_s8_axis1", np.int8, (2, 5, 3), axis=1)
qsoftmax("qsoftmax_opset12_flatten", np.uint8, (2, 3, 4), opset=12, axis=1)
qsoftmax("qsoftmax_u8_scale", np.uint8, (4, 16), ys=0.0039)


# ---------------------------------------------------------------- QLinearReduceMean (numpy reference)
def qreduce_mean(name, dt, shape, axes, keepdims):
    xs, xz, ys, yz = scale(lo=0.01, hi=0.05), zp(dt), scale(lo=0.01, hi=0.05), zp(dt)
    x = qdata(dt, *shape)
    m = ((x.astype(np.float64) - float(xz)) * float(xs)).mean(axis=tuple(axes), keepdims=bool(keepdims))
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    ref = np.clip(np.rint(m / float(ys)) + float(yz), lo, hi).astype(dt)
    case(name, [node("QLinearReduceMean", ["x", "xs", "xz", "ys", "yz"], ["y"], axes=axes, keepdims=keepdims)],
         {"x": x}, {"y": NP2ONNX[dt]}, {"xs": xs, "xz": xz, "ys": ys, "yz": yz}, qtol=1, ref=[ref])


qreduce_mean("qreduce_mean_u8_hw", np.uint8, (2, 3, 4, 5), [2, 3], 1)
qreduce_mean("qreduce_mean_s8_axis1", np.int8, (2, 6, 5), [1], 0)


# ---------------------------------------------------------------- QLinearWhere
def qwhere(name, dt, cshape, xshape, yshape, same=False):
    inits = {"xs": scale(lo=0.01, hi=0.05), "xz": zp(dt), "ys": scale(lo=0.01, hi=0.05), "yz": zp(dt)}
    inits.update(zs=inits["xs"] if same else scale(lo=0.01, hi=0.05), zz=inits["xz"] if same else zp(dt))
    feeds = {"c": rng.uniform(0, 1, cshape) > 0.5, "x": qdata(dt, *xshape), "y": qdata(dt, *yshape)}
    case(name, [node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["z"])], feeds,
         {"z": NP2ONNX[dt]}, inits)


qwhere("qwhere_u8", np.uint8, (3, 8), (3, 8), (3, 8))
qwhere("qwhere_s8_broadcast", np.int8, (2, 1, 6), (3, 6), (2, 3, 1))
qwhere("qwhere_u8_x_copy", np.uint8, (4, 5), (4, 5), (1, 5), same=True)

C.done()
