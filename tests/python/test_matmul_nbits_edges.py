"""com.microsoft.MatMulNBits (4-bit weights) at the edges of its arithmetic,
against onnxruntime, on the CPU and the GPU device (lavapipe here), through
`rlx run`:

- infinite scales: onnxruntime dequantizes each weight, (q - zp) * scale,
  so a block with scale +-inf holding q == zp (0 * inf), or whose products
  have both signs (inf - inf), gives NaN; the GPU's GEMV on 16-byte pieces
  (K and block_size multiples of 32) multiplies the block's sum by the scale
  once and gives +-inf;
- weights that are exactly zero (q == zp) against an A holding +-inf: NaN in
  onnxruntime (inf * 0); the CPU's kernels take w = q * s - zp * s (one fused
  multiply-add), a weight of the rounding error of zp * s instead of 0, and
  give +-inf (and, for a finite A, a tiny nonzero where onnxruntime has 0);
- gpu.f16_accumulate=f16 with an f16 A of 32 rows or more (the dequantize +
  tiled GEMM path, whose B is f32 words): the node must not report "out of
  memory" (the generated GEMM kernel refuses f32 B with f16 sums, and that
  refusal came back as RLX_ERR_OUT_OF_MEMORY).

Non-finite elements must sit where onnxruntime has them, with the same
sign for +-inf; finite ones within 1e-5 of sum |a w| (f32) or 2e-3 (f16).
Skips (exit 77) while rlx is not built or without a GPU adapter for the
GPU checks."""
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
tmp = tempfile.mkdtemp(prefix="rlx_nbits_edges_")
rng = R.seeded_rng(11)
C = R.Checker("test_matmul_nbits_edges")
NP2ONNX = {np.float32: T.FLOAT, np.float16: T.FLOAT16}

rc, so, se = R.run([RLX, "devices"])
HAVE_GPU = rc == 0 and "gpu:0" in so


def pack4(q):
    q = q.reshape(q.shape[:-1] + (-1, 2)).astype(np.uint8)
    return (q[..., 0] | (q[..., 1] << 4)).astype(np.uint8)


def model(name, K, N, bs, q, scales, zq, dt, arank_shape):
    """A MatMulNBits model; q [N, nb, bs] codes, zq [N, nb] or None."""
    nb = (K + bs - 1) // bs
    inits = {"B": pack4(q), "S": scales.astype(dt)}
    ins = ["a", "B", "S"]
    if zq is not None:
        zpad = np.zeros((N, (nb + 1) // 2 * 2), np.int64)
        zpad[:, :nb] = zq
        inits["Z"] = pack4(zpad).reshape(-1)
        ins.append("Z")
    node = H.make_node("MatMulNBits", ins, ["y"], domain="com.microsoft", name="nbits_" + name, K=K, N=N, bits=4,
                       block_size=bs)
    g = H.make_graph([node], name, [H.make_tensor_value_info("a", NP2ONNX[dt], list(arank_shape))],
                     [H.make_tensor_value_info("y", NP2ONNX[dt], None)],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17), H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def run_rlx(path, a, device, opts=()):
    f = path + ".a.npy"
    np.save(f, a)
    out = path + "_out_" + device + "_" + str(abs(hash(opts)))
    args = [RLX, "run", path, "--device", device, "--iters", "0", "--quiet", "--input", "a=" + f,
            "--output-dir", out]
    for o in opts:
        args += ["--option", o]
    rc, so, se = R.run(args)
    if rc != 0:
        return None, (so + se).strip()[-500:]
    return np.load(os.path.join(out, "y.npy")), so + se


def compare(what, got, ref, scale, f16):
    g, r = got.astype(np.float64), ref.astype(np.float64)
    if not C.check(g.shape == r.shape, "%s: shape %s, onnxruntime %s" % (what, g.shape, r.shape)):
        return
    odd = (np.isnan(g) != np.isnan(r)) | (np.isinf(g) != np.isinf(r)) | \
        (np.isinf(g) & np.isinf(r) & (np.sign(g) != np.sign(r)))
    fin = np.isfinite(g) & np.isfinite(r)
    lim = (2e-3 if f16 else 1e-5) * scale + (1e-3 * np.abs(r) if f16 else 0)
    err = float((np.abs(g - r)[fin] - lim[fin]).max()) if fin.any() else -1.0
    first = tuple(int(i) for i in np.argwhere(odd)[0]) if odd.any() else None
    ok = not odd.any() and err <= 0
    C.check(ok, "%s: %d elements non-finite on one side only or of the other sign (first %s: got %r, onnxruntime "
            "%r); finite elements past the tolerance by %.3g" % (
                what, int(odd.sum()), first, g[first] if first else None, r[first] if first else None, max(err, 0)))
    print("%-60s %s" % (what, "ok" if ok else "FAIL"))


def case(name, M, K, N, bs, dt, zp, q=None, zq=None, scales=None, a=None, devices=(("cpu", ()), ("gpu", ()))):
    nb = (K + bs - 1) // bs
    if q is None:
        q = rng.integers(0, 16, (N, nb, bs))
    if zp and zq is None:
        zq = rng.integers(0, 16, (N, nb))
    if scales is None:
        scales = rng.uniform(0.01, 0.1, (N * nb,)).astype(np.float32)
    if a is None:
        a = rng.uniform(-1, 1, (M, K)).astype(dt)
    path = model(name, K, N, bs, q, scales, zq if zp else None, dt, a.shape)
    so_ = ort.SessionOptions()
    so_.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(path, so_, providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    z = (np.full((N, nb), 8) if not zp else zq).astype(np.float64)
    s = np.nan_to_num(scales.astype(dt).astype(np.float64), nan=0, posinf=0, neginf=0).reshape(N, nb, 1)
    w = ((q - z[:, :, None]) * s).reshape(N, nb * bs)[:, :K].T
    scale = np.abs(np.nan_to_num(a.astype(np.float64), nan=0, posinf=0, neginf=0)) @ np.abs(w) + 1e-30
    for dev, opts in devices:
        if dev == "gpu" and not HAVE_GPU:
            continue
        got, msg = run_rlx(path, a, dev, opts)
        if C.check(got is not None, "%s on %s %s runs (%s)" % (name, dev, " ".join(opts), msg if got is None else "")):
            compare("%s on %s %s" % (name, dev, " ".join(opts)), got, ref, scale, dt == np.float16)


GPU_ALL = (("gpu", ()), ("gpu", ("gpu.nbits=gemv",)), ("gpu", ("gpu.nbits=gemm",)), ("gpu", ("gpu.gemm_vec4=0",)))

# ---------------------------------------------------------------- infinite scales
for dt in (np.float32, np.float16):
    for M, K, N, bs, zp in ((1, 32, 1, 32, False), (1, 64, 9, 32, True), (5, 256, 8, 128, False),
                            (3, 1056, 7, 32, True), (2, 48, 9, 16, True)):
        nb = (K + bs - 1) // bs
        sc = rng.uniform(0.01, 0.1, (N * nb,)).astype(np.float32)
        sc[0], sc[-1] = np.inf, -np.inf
        case("inf_scale_%s_m%d_k%d_n%d_b%d" % (np.dtype(dt).name, M, K, N, bs), M, K, N, bs, dt, zp, scales=sc,
             devices=(("cpu", ()),) + GPU_ALL)

# ---------------------------------------------------------------- exact zero weights
# q == zp == 11 with scale 0.06310229 (11 * scale is not exact in f32):
# every weight 0; rows of A finite (y = 0) and with +inf (y = NaN)
for M in (2, 10):
    for K, bs in ((32, 32), (1, 16), (64, 16)):
        N, nb = 3, (K + bs - 1) // bs
        q = np.full((N, nb, bs), 11)
        zq = np.full((N, nb), 11)
        sc = np.full((N * nb,), 0.06310229, np.float32)
        a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        a[1, K // 2] = np.inf
        case("zero_weights_m%d_k%d_b%d" % (M, K, bs), M, K, N, bs, np.float32, True, q=q, zq=zq, scales=sc, a=a,
             devices=(("cpu", ()),) + GPU_ALL)

# ---------------------------------------------------------------- gpu.f16_accumulate=f16
if HAVE_GPU:
    K, N, bs = 96, 33, 32
    nb = K // bs
    path = model("f16acc", K, N, bs, rng.integers(0, 16, (N, nb, bs)), rng.uniform(0.01, 0.1, (N * nb,)), None,
                 np.float16, (40, K))
    a = rng.uniform(-1, 1, (40, K)).astype(np.float16)
    got, msg = run_rlx(path, a, "gpu", ("gpu.f16_accumulate=f16", "gpu.trace=1"))
    C.check(got is not None and "out of memory" not in msg,
            "MatMulNBits f16 A[40,96] with gpu.f16_accumulate=f16: no 'out of memory' (%s)"
            % [ln for ln in msg.splitlines() if "MatMulNBits" in ln][:2])

C.done()
