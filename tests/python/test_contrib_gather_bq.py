"""onnxruntime's com.microsoft.GatherBlockQuantized (src/import/onnx_contrib.c,
x_gather_bq): the quantized embedding table of LLM exports, uint8 data of
4-bit values two a byte (zero point 8) with block scales. One small model
per form, run by onnxruntime 1.22's CPU kernel and by `rlx run` on random
tables and indices; outputs compared as max abs difference over max(1,
max |ref|): 0 for f32 scales (both compute (q - 8) * scale in f32), 1e-3
for f16 (one rounding to f16 each). One case also runs on the GPU device
(lavapipe). Refused forms (zero points, other axes, a table fed at run
time, int4 data) fail the load naming the node or the tensor.

Skips (exit 77) while rlx is not built."""
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
tmp = tempfile.mkdtemp(prefix="rlx_gbq_")
rng = R.seeded_rng(13)
C = R.Checker("test_contrib_gather_bq")
NP2ONNX = {np.float32: T.FLOAT, np.float16: T.FLOAT16, np.int32: T.INT32, np.int64: T.INT64}


def table(shape, bs, sdt=np.float32):
    """Random 4-bit values of `shape` packed along the last axis, and scales
    per block of bs along it."""
    q = rng.integers(0, 16, shape).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    nb = (shape[-1] + bs - 1) // bs
    return packed, rng.uniform(0.01, 0.5, shape[:-1] + (nb,)).astype(sdt)


def build(name, data, idx, scales, feed_data=False, zp=None, sdt=np.float32, **attrs):
    inits = {"s": scales}
    if zp is not None:
        inits["z"] = zp
    feeds = {"i": idx}
    (feeds if feed_data else inits)["d"] = data
    ins = ["d", "i", "s"] + (["z"] if zp is not None else [])
    n = H.make_node("GatherBlockQuantized", ins, ["y"], domain="com.microsoft", name="gbq", **attrs)
    vis = [H.make_tensor_value_info(k, NP2ONNX.get(a.dtype.type, T.UINT8), list(a.shape)) for k, a in feeds.items()]
    g = H.make_graph([n], name, vis, [H.make_tensor_value_info("y", NP2ONNX[sdt], None)],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 21), H.make_opsetid("com.microsoft", 1)], ir_version=10)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path, feeds


def run_rlx(path, feeds, device):
    return R.run_output(RLX, path, feeds, device, tmp=tmp)


def case(name, shape, idx, bs, sdt=np.float32, tol=0.0, devices=("cpu",), **attrs):
    data, scales = table(shape, bs, sdt)
    path, feeds = build(name, data, idx, scales, sdt=sdt, block_size=bs, **attrs)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for dev in devices:
        y, err = run_rlx(path, feeds, dev)
        if not C.check(y is not None, "%s on %s runs (%s)" % (name, dev, err)):
            continue
        if y.shape == ref.shape and y.dtype == ref.dtype:
            d = float(np.abs(y.astype(np.float64) - ref).max() / max(1.0, float(np.abs(ref).max())))
            ok, what = d <= tol, "max diff %.3g (tol %.1g)" % (d, tol)
        else:
            ok, what = False, "shape %s %s, onnxruntime %s %s" % (y.shape, y.dtype, ref.shape, ref.dtype)
        C.check(ok, "%s on %s: %s" % (name, dev, what))
        print("%-26s %-4s %s" % (name, dev, what))


V = 50
case("gbq_2d", (V, 64), rng.integers(0, V, (2, 3)).astype(np.int64), 16, devices=("cpu", "gpu"))
case("gbq_int32_negative", (V, 64), np.array([[-1, 0, 7], [49, -50, 3]], np.int32), 32)
case("gbq_block128", (V, 256), rng.integers(0, V, (2, 5)).astype(np.int64), 128)
case("gbq_partial_block", (V, 40), rng.integers(0, V, (4,)).astype(np.int64), 16)
case("gbq_default_block", (V, 128), rng.integers(0, V, (1, 6)).astype(np.int64), 128, quantize_axis=-1)
case("gbq_f16", (V, 64), rng.integers(0, V, (2, 3)).astype(np.int64), 16, sdt=np.float16, tol=1e-3)
case("gbq_3d", (4, 6, 32), rng.integers(0, 4, (2, 2)).astype(np.int64), 16, quantize_axis=2)
case("gbq_scalar_index", (V, 32), np.array(5, np.int64), 16)


# ---------------------------------------------------------------- refused forms
def refused(name, want, data=None, idx=None, scales=None, **kw):
    d, s = table((8, 32), 16)
    path, feeds = build(name, d if data is None else data, np.array([1, 2], np.int64) if idx is None else idx,
                        s if scales is None else scales, **kw)
    args = [RLX, "run", path, "--iters", "0", "--quiet"]
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (name, k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    rc, so, se = R.run(args)
    C.check(rc > 0 and want[0] in se and want[1] in se,
            "%s fails the load naming %r and %r (rc %d: %s)" % (name, want[0], want[1], rc, se.strip()[-300:]))
    print("%-26s refused: %s" % (name, se.strip().splitlines()[-1][-160:] if se.strip() else "(nothing)"))


refused("bad_zero_points", ("'gbq'", "zero_points"), zp=np.full((8, 1), 0x88, np.uint8), block_size=16)
refused("bad_gather_axis", ("'gbq'", "gather_axis"), block_size=16, gather_axis=1)
refused("bad_quantize_axis", ("'gbq'", "quantize_axis"), block_size=16, quantize_axis=0)
refused("bad_block_size", ("'gbq'", "block_size"), block_size=8)
# a power of 2 past the limit was refused as "must be a power of 2, at least 16"
refused("bad_block_huge", ("'gbq'", "power of 2 from 16 to 2^30"), block_size=2 ** 40,
        scales=rng.uniform(0.01, 0.5, (8, 1)).astype(np.float32))
refused("bad_block_default", ("'gbq'", "scales"))  # block_size 128 against scales of blocks of 16
refused("bad_runtime_data", ("'gbq'", "constant"), feed_data=True, block_size=16)
refused("bad_index_float", ("'gbq'", "indices"), idx=np.array([1.0], np.float32), block_size=16)
# int4 data: the load refuses a 4-bit constant read by anything but DequantizeLinear,
# before the node is expanded
d4 = H.make_tensor("d", T.INT4, [8, 32], rng.integers(-8, 8, 8 * 32).tolist())
g = H.make_graph([H.make_node("GatherBlockQuantized", ["d", "i", "s"], ["y"], domain="com.microsoft", name="gbq",
                              block_size=16)], "int4", [H.make_tensor_value_info("i", T.INT64, [2])],
                 [H.make_tensor_value_info("y", T.FLOAT, None)], [d4, NH.from_array(table((8, 32), 16)[1], "s")])
path = os.path.join(tmp, "bad_int4.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 21), H.make_opsetid("com.microsoft", 1)], ir_version=10),
          path)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "'d'" in se and "int4" in se, "int4 data fails the load naming the tensor and its type (rc %d: %s)"
        % (rc, se.strip()[-300:]))
print("%-26s refused: %s" % ("bad_int4", se.strip().splitlines()[-1][-160:] if se.strip() else "(nothing)"))

rc, so, se = R.run([RLX, "ops"])
C.check(rc == 0 and "com.microsoft.GatherBlockQuantized-1" in so, "rlx ops lists com.microsoft.GatherBlockQuantized")
C.done()
