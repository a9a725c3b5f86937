"""onnxruntime's contrib ops (com.microsoft, src/import/onnx_contrib.c), which
rlx expands into default-domain ops when a model loads: one small model per
op and form, built here with onnx.helper, run by onnxruntime (which
implements all of them) and by `rlx run` on the CPU and the GPU device
(lavapipe here) on fresh random inputs; outputs compared with the tolerance
stated per case (float ops: max abs difference over max(1, max |ref|);
quantized outputs: integer codes within 1, the rounding of a tie or of a
last-bit difference before QuantizeLinear; QLinearGlobalAveragePool, which
follows onnxruntime's integer mean: equal). The other quantized contrib ops
are in test_contrib_qops.py (QGemm, MatMulIntegerToFloat,
DynamicQuantizeMatMul), test_contrib_qattention_qdq.py (QAttention, the QDQ
Gemm) and test_contrib_qlinear.py (the QLinear pool, softmax, reduce and
where); MultiHeadAttention is in test_contrib_mha.py. A BERT that onnxruntime's
transformer optimizer fused (SkipLayerNormalization, BiasGelu) agrees with
onnxruntime within 1e-4 and fuses back on the GPU. Also: an unknown attribute, a
missing required one and a non-constant MatMulNBits weight fail the load
naming the node and op; `rlx ops` lists the contrib ops.

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
tmp = tempfile.mkdtemp(prefix="rlx_contrib_")
rng = R.seeded_rng(7)
C = R.Checker("test_contrib_ops")
DEVICES = os.environ.get("RLX_CONTRIB_DEVICES", "cpu,gpu").split(",")
ONLY = os.environ.get("RLX_CONTRIB_ONLY", "")  # run the cases whose name starts with this
NP2ONNX = {np.float32: T.FLOAT, np.float16: T.FLOAT16, np.int8: T.INT8, np.uint8: T.UINT8, np.int32: T.INT32,
           np.int64: T.INT64}


def vi(name, arr):
    return H.make_tensor_value_info(name, NP2ONNX[arr.dtype.type], list(arr.shape))


def build(name, nodes, feeds, outputs, inits=None, opset=17):
    """A model of `nodes` (com.microsoft imported at 1) fed by `feeds`
    (name -> array); `outputs` name -> onnx element type."""
    g = H.make_graph(nodes, name, [vi(k, v) for k, v in feeds.items()],
                     [H.make_tensor_value_info(o, t, None) for o, t in outputs.items()],
                     [NH.from_array(v, k) for k, v in (inits or {}).items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset), H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def run_rlx(path, feeds, outputs, device):
    args = [RLX, "run", path, "--device", device, "--iters", "0", "--quiet"]
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (os.path.basename(path), k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    out = os.path.join(tmp, "out_%s_%s" % (os.path.basename(path), device.replace(":", "")))
    rc, so, se = R.run(args + ["--output-dir", out])
    if rc != 0:
        return None, (so + se).strip()[-600:]
    return [np.load(os.path.join(out, o + ".npy")) for o in outputs], ""


def case(name, nodes, feeds, outputs, inits=None, tol=1e-5, opset=17, qtol=1, devices=None, ref=None):
    """ref: numpy reference outputs, for ops that onnxruntime has no CPU
    kernel of (BiasAdd: CUDA only)."""
    if ONLY and not name.startswith(ONLY):
        return
    path = build(name, nodes, feeds, outputs, inits, opset)
    if ref is None:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(list(outputs), feeds)
    for dev in devices or DEVICES:
        got, err = run_rlx(path, feeds, list(outputs), dev)
        if not C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err)):
            continue
        for o, r, y in zip(outputs, ref, got):
            ok = y.shape == r.shape and y.dtype == r.dtype
            if ok and np.issubdtype(r.dtype, np.integer):
                d = int(np.abs(y.astype(np.int64) - r.astype(np.int64)).max()) if r.size else 0
                ok, what = d <= qtol, "max code diff %d (tol %d)" % (d, qtol)
            elif ok:
                d = float(np.abs(y.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max()))) if r.size else 0
                ok, what = d <= tol and np.isfinite(y).all(), "max diff %.3g (tol %.1g)" % (d, tol)
            else:
                what = "shape %s %s, onnxruntime %s %s" % (y.shape, y.dtype, r.shape, r.dtype)
            C.check(ok, "%s on %s, output %s: %s" % (name, dev, o, what))
            print("%-34s %-4s %-14s %s" % (name, dev, o, what))


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def node(op, ins, outs, **kw):
    return H.make_node(op, ins, outs, domain="com.microsoft", name=op.lower(), **kw)


F = T.FLOAT
# ---------------------------------------------------------------- activations
x, b = f32(2, 3, 16), f32(16)
case("gelu", [node("Gelu", ["x"], ["y"])], {"x": x}, {"y": F})
case("bias_gelu", [node("BiasGelu", ["x", "b"], ["y"])], {"x": x, "b": b}, {"y": F})
case("fast_gelu", [node("FastGelu", ["x"], ["y"])], {"x": x}, {"y": F})
case("fast_gelu_bias", [node("FastGelu", ["x", "b"], ["y"])], {"x": x, "b": b}, {"y": F})
case("quick_gelu", [node("QuickGelu", ["x"], ["y"])], {"x": x}, {"y": F})
case("quick_gelu_alpha", [node("QuickGelu", ["x"], ["y"], alpha=0.8)], {"x": x}, {"y": F})
s = f32(2, 3, 16)
case("bias_add", [node("BiasAdd", ["x", "b", "s"], ["y"])], {"x": x, "b": b, "s": s}, {"y": F}, ref=[(x + b) + s])

# ---------------------------------------------------------------- normalizations
x, s, g, be, bi = f32(2, 5, 32), f32(2, 5, 32), f32(32, lo=0.5, hi=1.5), f32(32), f32(32)
case("skip_ln", [node("SkipLayerNormalization", ["x", "s", "g", "be", "bi"], ["y", "", "", "sum"], epsilon=1e-5)],
     {"x": x, "s": s}, {"y": F, "sum": F}, {"g": g, "be": be, "bi": bi}, tol=1e-5)
case("skip_ln_nobeta", [node("SkipLayerNormalization", ["x", "s", "g"], ["y"])], {"x": x, "s": s, "g": g}, {"y": F},
     tol=1e-5)
case("skip_sln", [node("SkipSimplifiedLayerNormalization", ["x", "s", "g", "bi"], ["y", "", "", "sum"], epsilon=1e-6)],
     {"x": x, "s": s}, {"y": F, "sum": F}, {"g": g, "bi": bi}, tol=1e-5)
case("sln_default_domain", [H.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], axis=-1, epsilon=1e-6)],
     {"x": x}, {"y": F}, {"g": g}, tol=1e-5)
x16 = x.astype(np.float16)
case("skip_ln_f16", [node("SkipLayerNormalization", ["x", "s", "g", "be"], ["y"])],
     {"x": x16, "s": s.astype(np.float16)}, {"y": T.FLOAT16}, {"g": g.astype(np.float16), "be": be.astype(np.float16)},
     tol=2e-3)

# contrib nodes between ordinary ones (their inputs are inferred at import):
# a transformer block's tail, Relu -> SkipLayerNormalization -> FastGelu ->
# QuickGelu, opset 13 (LayerNormalization and Gelu do not exist there)
x, s = f32(2, 5, 32), f32(2, 5, 32)
chain = [H.make_node("Relu", ["x"], ["r0"]), H.make_node("Mul", ["r0", "x"], ["r"]),
         node("SkipLayerNormalization", ["r", "s", "g", "be"], ["n"], epsilon=1e-6),
         node("FastGelu", ["n", "bi"], ["f"]), node("QuickGelu", ["f"], ["q"]), H.make_node("Add", ["q", "x"], ["y"])]
case("chain_opset13", chain, {"x": x, "s": s}, {"y": F}, {"g": g, "be": be, "bi": bi}, opset=13)
# the same nodes in reverse order (files need not be sorted; the expansion
# infers its inputs' producers depth first)
case("chain_unsorted", chain[::-1], {"x": x, "s": s}, {"y": F}, {"g": g, "be": be, "bi": bi}, opset=13)

# ---------------------------------------------------------------- GridSample (onnxruntime's contrib form)
# ONNX GridSample-16's semantics under the contrib name; grid values beyond
# [-1, 1] so that every padding mode matters
for mode, tol in (("bilinear", 2e-5), ("nearest", 0.0), ("bicubic", 2e-5)):
    for pad in ("zeros", "border", "reflection"):
        for ac in (0, 1):
            x, grid = f32(2, 3, 5, 7), f32(2, 4, 6, 2, lo=-1.4, hi=1.4)
            case("grid_sample_%s_%s_%d" % (mode, pad, ac),
                 [node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=pad, align_corners=ac)],
                 {"x": x, "grid": grid}, {"y": F}, tol=tol)
x, grid = f32(1, 2, 4, 4), f32(1, 3, 3, 2, lo=-1.2, hi=1.2)
case("grid_sample_defaults", [node("GridSample", ["x", "grid"], ["y"])], {"x": x, "grid": grid}, {"y": F})

# ---------------------------------------------------------------- quantized
U8, I8 = T.UINT8, T.INT8


def qcase(name, op, n_q, dt, extra=None, attrs=None, qtol=1):
    """op over n_q quantized operands of dtype dt, per-tensor scales."""
    feeds, ins, inits = {}, [], {}
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    for i in range(n_q):
        feeds["a%d" % i] = rng.integers(lo, hi, (2, 3, 4, 5)).astype(dt)
        inits["a%d_s" % i] = np.array(rng.uniform(0.01, 0.05), np.float32)
        inits["a%d_z" % i] = np.array(rng.integers(lo // 2 + 64, hi // 2 + 64) if dt == np.uint8 else
                                      rng.integers(-20, 20), dt)
        ins += ["a%d" % i, "a%d_s" % i, "a%d_z" % i]
    inits["y_s"] = np.array(rng.uniform(0.02, 0.08), np.float32)
    inits["y_z"] = np.array(128 if dt == np.uint8 else 3, dt)
    ins = (extra or (lambda i: i + ["y_s", "y_z"]))(ins)
    case(name, [node(op, ins, ["y"], **(attrs or {}))], feeds, {"y": NP2ONNX[dt]}, inits, qtol=qtol)


for dt, tag in ((np.uint8, "u8"), (np.int8, "i8")):
    qcase("qlinear_add_" + tag, "QLinearAdd", 2, dt)
    qcase("qlinear_mul_" + tag, "QLinearMul", 2, dt)
    qcase("qlinear_sigmoid_" + tag, "QLinearSigmoid", 1, dt)
    qcase("qlinear_leaky_relu_" + tag, "QLinearLeakyRelu", 1, dt, attrs={"alpha": 0.1})
    # onnxruntime's integer mean, reproduced: bit-exact
    qcase("qlinear_gap_" + tag, "QLinearGlobalAveragePool", 1, dt, qtol=0)
    qcase("qlinear_gap_last_" + tag, "QLinearGlobalAveragePool", 1, dt, attrs={"channels_last": 1}, qtol=0)
    qcase("qlinear_concat_" + tag, "QLinearConcat", 3, dt, extra=lambda i: ["y_s", "y_z"] + i, attrs={"axis": 1})
xq = f32(3, 8)
case("ms_quantize", [node("QuantizeLinear", ["x", "s", "z"], ["y"])], {"x": xq}, {"y": U8},
     {"s": np.array(0.02, np.float32), "z": np.array(120, np.uint8)}, qtol=0)
case("ms_quantize_axis", [node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)], {"x": xq}, {"y": I8},
     {"s": f32(8, lo=0.01, hi=0.03), "z": rng.integers(-5, 5, 8).astype(np.int8)}, qtol=0)
case("ms_dequantize", [node("DequantizeLinear", ["x", "s", "z"], ["y"])],
     {"x": rng.integers(0, 256, (3, 8)).astype(np.uint8)}, {"y": F}, {"s": np.array(0.02, np.float32),
                                                                       "z": np.array(120, np.uint8)})


# ---------------------------------------------------------------- MatMulNBits
def pack(q, bits):
    """Values q[..., n] (< 2^bits) packed LSB first into bytes."""
    per = 8 // bits
    q = q.reshape(q.shape[:-1] + (-1, per)).astype(np.uint8)
    out = np.zeros(q.shape[:-1], np.uint8)
    for i in range(per):
        out |= q[..., i] << (i * bits)
    return out


def nbits(name, M, K, N, bits, bs, zp="packed", bias=False, dt=np.float32, tol=1e-5, acc=0):
    nb = (K + bs - 1) // bs
    q = rng.integers(0, 1 << bits, (N, nb, bs))
    B = pack(q, bits)  # [N, nb, bs * bits / 8]
    scales = rng.uniform(0.01, 0.1, (N * nb,)).astype(dt)
    inits = {"B": B, "scales": scales}
    ins = ["a", "B", "scales"]
    if zp == "packed":
        zq = rng.integers(0, 1 << bits, (N, nb))
        zrow = (nb * bits + 7) // 8
        zpad = np.zeros((N, zrow * (8 // bits)), np.int64)
        zpad[:, :nb] = zq
        inits["zp"] = pack(zpad, bits).reshape(-1)
        ins.append("zp")
    elif zp == "float":
        inits["zp"] = rng.uniform(0, (1 << bits) - 1, (N * nb,)).astype(dt)
        ins.append("zp")
    if bias:
        inits["bias"] = f32(N).astype(dt)
        ins += ["", "bias"]
    a = f32(M, K).astype(dt) if M else f32(2, 3, K).astype(dt)
    nodes = [node("MatMulNBits", ins, ["y"], K=K, N=N, bits=bits, block_size=bs, accuracy_level=acc)]
    case(name, nodes, {"a": a}, {"y": NP2ONNX[dt]}, inits, tol=tol)
    if bits != 4 or zp == "float" or dt != np.float32 or (ONLY and not name.startswith(ONLY)):
        return
    # the same product by rlx's f32 MatMul of the weights dequantized as the
    # import did before rlx.MatMulNBits (W = (q - zp) * scale in f32): 1e-5
    z = (np.full((N, nb), 1 << (bits - 1)) if zp is None else zq).astype(np.float32)
    w = ((q.astype(np.float32) - z[:, :, None]) * scales.reshape(N, nb, 1)).reshape(N, nb * bs)[:, :K].T
    dense = {"W": np.ascontiguousarray(w, np.float32)}
    dn = [H.make_node("MatMul", ["a", "W"], ["y0" if bias else "y"])]
    if bias:
        dense["bias"] = inits["bias"]
        dn.append(H.make_node("Add", ["y0", "bias"], ["y"]))
    got, err = run_rlx(build(name + "_dense", dn, {"a": a}, {"y": F}, dense), {"a": a}, ["y"], "cpu")
    if C.check(got is not None, "%s: the dense MatMul runs (%s)" % (name, err)):
        case(name + "_vs_dequant", nodes, {"a": a}, {"y": F}, inits, tol=1e-5, ref=got)


nbits("matmul_nbits_4_b32", 3, 64, 24, 4, 32)
nbits("matmul_nbits_4_b16_gemv", 1, 48, 40, 4, 16, zp=None)
nbits("matmul_nbits_4_k_ragged", 2, 80, 16, 4, 64, bias=True)  # K not a multiple of block_size
nbits("matmul_nbits_4_b128_3d", 0, 256, 32, 4, 128)
nbits("matmul_nbits_4_odd_blocks", 2, 48, 8, 4, 16)  # 3 blocks: packed zero points padded per row
nbits("matmul_nbits_4_float_zp", 2, 64, 8, 4, 32, zp="float")
# onnxruntime runs 8-bit weights only with accuracy_level 4 (A quantized to int8 per block): ~1e-2
nbits("matmul_nbits_8_b32", 2, 64, 16, 8, 32, acc=4, tol=1e-2)
nbits("matmul_nbits_4_f16", 2, 64, 16, 4, 32, dt=np.float16, tol=3e-3)
nbits("matmul_nbits_4_f16_gemv", 1, 100, 9, 4, 16, zp=None, dt=np.float16, tol=3e-3)
# rlx.MatMulNBits' CPU paths: GEMV up to 8 rows (N odd, K ragged), dequantized tiles + GEMM beyond
nbits("matmul_nbits_4_b64_gemv_nodd", 1, 200, 33, 4, 64, zp=None)
nbits("matmul_nbits_4_b128_m8", 8, 300, 17, 4, 128)
nbits("matmul_nbits_4_b32_m12_tiles", 12, 96, 70, 4, 32, bias=True)
nbits("matmul_nbits_4_b16_m9_tiles", 9, 40, 65, 4, 16, zp=None)


# ---------------------------------------------------------------- RotaryEmbedding
def rotary(name, Bt, S, nh, hd, rd=0, interleaved=0, four_d=False, pos1=False, dt=np.float32, tol=1e-5):
    maxs = 32
    half = (rd or hd) // 2
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(maxs)[:, None] * inv[None, :]
    cos, sin = np.cos(ang).astype(dt), np.sin(ang).astype(dt)
    x = (f32(Bt, nh, S, hd) if four_d else f32(Bt, S, nh * hd)).astype(dt)
    pid = np.array([3], np.int64) if pos1 else rng.integers(0, maxs, (Bt, S)).astype(np.int64)
    attrs = {"interleaved": interleaved}
    if rd:
        attrs.update(rotary_embedding_dim=rd, num_heads=nh)
    elif not four_d:
        attrs["num_heads"] = nh
    case(name, [node("RotaryEmbedding", ["x", "pid", "cos", "sin"], ["y"], **attrs)], {"x": x, "pid": pid},
         {"y": NP2ONNX[dt]}, {"cos": cos, "sin": sin}, tol=tol)


rotary("rotary_halves", 2, 5, 3, 16)
rotary("rotary_interleaved", 2, 5, 3, 16, interleaved=1)
rotary("rotary_4d", 2, 5, 3, 16, four_d=True)
rotary("rotary_partial", 1, 4, 2, 16, rd=8)
rotary("rotary_partial_interleaved", 1, 4, 2, 16, rd=8, interleaved=1)
rotary("rotary_pos_offset", 1, 6, 2, 8, pos1=True)
rotary("rotary_f16", 2, 5, 3, 16, dt=np.float16, tol=2e-3)


# ---------------------------------------------------------------- GroupQueryAttention
def gqa(name, Bt, S, P, nh, kvh, hd, rotary_=False, interleaved=0, packed=False, softcap=0.0, lws=-1, smooth=False,
        dt=np.float32, tol=1e-5):
    maxs = 64
    feeds, inits = {}, {}
    if packed:
        feeds["q"] = f32(Bt, S, (nh + 2 * kvh) * hd).astype(dt)
        ins = ["q", "", ""]
    else:
        feeds.update(q=f32(Bt, S, nh * hd).astype(dt), k=f32(Bt, S, kvh * hd).astype(dt),
                     v=f32(Bt, S, kvh * hd).astype(dt))
        ins = ["q", "k", "v"]
    if P:
        feeds.update(pk=f32(Bt, kvh, P, hd).astype(dt), pv=f32(Bt, kvh, P, hd).astype(dt))
        ins += ["pk", "pv"]
    else:
        ins += ["", ""]
    feeds["seqlens"] = np.full((Bt,), P + S - 1, np.int32)
    feeds["total"] = np.array(P + S, np.int32)
    ins += ["seqlens", "total"]
    attrs = {"num_heads": nh, "kv_num_heads": kvh}
    if rotary_:
        half = hd // 2
        ang = np.arange(maxs)[:, None] * (1.0 / (10000 ** (np.arange(half) / half)))[None, :]
        inits.update(cos=np.cos(ang).astype(dt), sin=np.sin(ang).astype(dt))
        ins += ["cos", "sin"]
        attrs.update(do_rotary=1, rotary_interleaved=interleaved)
    if softcap:
        attrs["softcap"] = softcap
    if lws > 0:
        attrs["local_window_size"] = lws
    if smooth:
        attrs["smooth_softmax"] = 1
    t = NP2ONNX[dt]
    case(name, [node("GroupQueryAttention", ins, ["y", "pk_out", "pv_out"], **attrs)], feeds,
         {"y": t, "pk_out": t, "pv_out": t}, inits, tol=tol)


gqa("gqa_prompt", 2, 5, 0, 4, 2, 8)
# onnxruntime: batch 1 when S > 1 with a past
gqa("gqa_past", 1, 3, 4, 4, 2, 8)
gqa("gqa_decode_batch", 2, 1, 5, 4, 2, 8)
gqa("gqa_decode_mha", 1, 1, 6, 2, 2, 8)
gqa("gqa_rotary", 1, 4, 3, 4, 1, 16, rotary_=True)
gqa("gqa_rotary_interleaved", 2, 1, 3, 4, 2, 16, rotary_=True, interleaved=1)
gqa("gqa_rotary_prompt", 2, 4, 0, 2, 2, 16, rotary_=True)
gqa("gqa_packed", 1, 4, 2, 4, 2, 8, packed=True)
gqa("gqa_softcap", 1, 4, 2, 2, 1, 8, softcap=2.0)
gqa("gqa_local_window", 1, 6, 3, 2, 1, 8, lws=3)
gqa("gqa_smooth_softmax", 1, 4, 2, 2, 1, 8, smooth=True)
gqa("gqa_f16_rotary", 1, 3, 2, 4, 2, 16, rotary_=True, dt=np.float16, tol=3e-3)


# ---------------------------------------------------------------- Attention, EmbedLayerNormalization (BERT)
def attention(name, Bt, S, Din, sizes, nh, mask=None, uni=0):
    feeds = {"x": f32(Bt, S, Din, lo=-1, hi=1)}
    inits = {"w": f32(Din, sum(sizes), lo=-0.3, hi=0.3), "b": f32(sum(sizes), lo=-0.2, hi=0.2)}
    ins = ["x", "w", "b"]
    if mask == "raw":
        m = np.ones((Bt, S), np.int32)
        m[0, S - 2:] = 0
        feeds["m"], ins = m, ins + ["m"]
    elif mask == "raw3d":
        feeds["m"], ins = rng.integers(0, 2, (Bt, S, S)).astype(np.int32), ins + ["m"]
        feeds["m"][:, :, 0] = 1
    elif mask == "lengths":
        feeds["m"], ins = np.array([S - 2] + [S] * (Bt - 1), np.int32), ins + ["m"]
    attrs = {"num_heads": nh, "unidirectional": uni}
    if len(set(sizes)) > 1:
        attrs["qkv_hidden_sizes"] = list(sizes)
    case(name, [node("Attention", ins, ["y"], **attrs)], feeds, {"y": F}, inits, tol=1e-5)


attention("attention_bert_mask", 2, 5, 32, (32, 32, 32), 4, mask="raw")
attention("attention_lengths", 2, 6, 16, (16, 16, 16), 2, mask="lengths")
attention("attention_mask3d", 2, 4, 16, (16, 16, 16), 2, mask="raw3d")
attention("attention_causal", 1, 6, 16, (16, 16, 16), 4, uni=1)
attention("attention_qkv_sizes", 2, 4, 16, (16, 16, 24), 2)

Bt, S, Hd = 2, 6, 16
ids = rng.integers(0, 30, (Bt, S)).astype(np.int32)
seg = rng.integers(0, 2, (Bt, S)).astype(np.int32)
msk = np.ones((Bt, S), np.int32)
msk[1, 4:] = 0
inits = {"we": f32(30, Hd), "pe": f32(16, Hd), "se": f32(2, Hd), "g": f32(Hd, lo=0.5, hi=1.5), "be": f32(Hd)}
case("embed_ln", [node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "be", "m"],
                       ["y", "mi", "sum"], epsilon=1e-5)], {"ids": ids, "seg": seg, "m": msk},
     {"y": F, "mi": T.INT32, "sum": F}, inits, qtol=0)
# without segments onnxruntime 1.22 aborts (an assertion in its shape inference): numpy is the reference
e = inits["we"][ids] + inits["pe"][:S]
e64 = e.astype(np.float64)
ln = (e64 - e64.mean(-1, keepdims=True)) / np.sqrt(e64.var(-1, keepdims=True) + 1e-12) * inits["g"] + inits["be"]
case("embed_ln_noseg", [node("EmbedLayerNormalization", ["ids", "", "we", "pe", "", "g", "be"], ["y"])],
     {"ids": ids}, {"y": F}, inits, ref=[ln.astype(np.float32)], tol=1e-5)

# ---------------------------------------------------------------- DynamicQuantizeLSTM
def dq_lstm(name, direction="forward", per_channel=False, dt=np.int8):
    """onnxruntime takes int8 weights with zero points 0 only; uint8 with any."""
    D = 2 if direction == "bidirectional" else 1
    Sq, Bt, I, Hs = 4, 2, 6, 5
    lo, hi = (-128, 128) if dt == np.int8 else (0, 256)
    W = rng.integers(lo, hi, (D, I, 4 * Hs)).astype(dt)
    Rw = rng.integers(lo, hi, (D, Hs, 4 * Hs)).astype(dt)
    sh = (D, 4 * Hs) if per_channel else (D,)
    zp = (lambda: np.zeros(sh, dt)) if dt == np.int8 else (lambda: rng.integers(120, 136, sh).astype(dt))
    inits = {"W": W, "R": Rw, "B": f32(D, 8 * Hs, lo=-0.2, hi=0.2),
             "Ws": rng.uniform(0.002, 0.01, sh).astype(np.float32), "Wz": zp(),
             "Rs": rng.uniform(0.002, 0.01, sh).astype(np.float32), "Rz": zp()}
    ins = ["x", "W", "R", "B", "", "", "", "", "Ws", "Wz", "Rs", "Rz"]
    # onnxruntime quantizes X and h to 8 bits inside: agreement to ~1e-2
    case(name, [node("DynamicQuantizeLSTM", ins, ["y", "yh", "yc"], hidden_size=Hs, direction=direction)],
         {"x": f32(Sq, Bt, I, lo=-1, hi=1)}, {"y": F, "yh": F, "yc": F}, inits, tol=2e-2)


dq_lstm("dq_lstm")
dq_lstm("dq_lstm_bidi_per_channel", "bidirectional", per_channel=True)
dq_lstm("dq_lstm_u8_reverse", "reverse", dt=np.uint8)

# ---------------------------------------------------------------- a model onnxruntime's optimizer fused
# scripts/make_minilm_onnx.py's BERT (2 layers, hidden 64, random weights)
# through onnxruntime.transformers' optimizer, which writes
# SkipLayerNormalization and BiasGelu nodes; on the GPU the Add that
# SkipLayerNormalization becomes fuses with its LayerNormalization again.
def optimized_bert():
    if ONLY and not "ort_optimized_bert".startswith(ONLY):
        return
    try:
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError as e:
        print("onnxruntime.transformers unavailable (%s): the optimized BERT is not checked" % e)
        return
    src, opt = os.path.join(tmp, "bert.onnx"), os.path.join(tmp, "bert_opt.onnx")
    rc, so, se = R.run([sys.executable, os.path.join(R.ROOT, "scripts",
                        "make_minilm_onnx.py"), "--random", "--layers", "2", "--hidden", "64", "--heads", "4",
                        "--intermediate", "128", "--vocab", "100", "-o", src])
    if not C.check(rc == 0, "make_minilm_onnx.py writes the BERT (%s)" % se[-300:]):
        return
    optimize_model(src, model_type="bert", num_heads=4, hidden_size=64, opt_level=0).save_model_to_file(opt)
    ops = [(n.domain, n.op_type) for n in onnx.load(opt).graph.node]
    C.check(ops.count(("com.microsoft", "SkipLayerNormalization")) == 4 and ("com.microsoft", "BiasGelu") in ops,
            "the optimizer wrote SkipLayerNormalization and BiasGelu nodes")
    Bt, S = 2, 12
    feeds = {"input_ids": rng.integers(1, 100, (Bt, S)).astype(np.int64), "attention_mask": np.ones((Bt, S), np.int64),
             "token_type_ids": rng.integers(0, 2, (Bt, S)).astype(np.int64)}
    feeds["attention_mask"][1, 8:] = 0
    sess = ort.InferenceSession(opt, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = sess.run(None, feeds)
    for dev in DEVICES:
        got, err = run_rlx(opt, feeds, names, dev)
        if not C.check(got is not None, "optimized BERT on %s runs (%s)" % (dev, err)):
            continue
        for n, r, y in zip(names, ref, got):
            d = float(np.abs(y - r).max())
            C.check(d <= 1e-4, "optimized BERT on %s, %s: max abs diff %.3g (tol 1e-4)" % (dev, n, d))
            print("%-34s %-4s %-14s max abs diff %.3g (tol 1e-4)" % ("ort_optimized_bert", dev, n[:14], d))
    if "gpu" in DEVICES:
        args = [RLX, "run", opt, "--device", "gpu", "--iters", "0", "--quiet", "--report"]
        for k, v in feeds.items():
            args += ["--input", "%s=%s" % (k, os.path.join(tmp, "bert_opt.onnx_%s.npy" % k))]
        rc, so, se = R.run(args)
        C.check(rc == 0 and "rlx.AddLayerNormalization" in so,
                "on the GPU the SkipLayerNormalization Adds fuse into rlx.AddLayerNormalization (rc %d)" % rc)


optimized_bert()

# ---------------------------------------------------------------- bad input
x = f32(2, 4)
path = build("bad_attr", [node("FastGelu", ["x"], ["y"], approximate="tanh")], {"x": x}, {"y": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "fastgelu" in se and "FastGelu" in se and "approximate" in se,
        "an unknown contrib attribute fails naming node, op and attribute (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_missing", [node("GroupQueryAttention", ["x", "x", "x", "", "", "sl", "sl"], ["y", "k", "v"],
                                  num_heads=2)], {"x": f32(1, 2, 8), "sl": np.array([1], np.int32)},
             {"y": F, "k": F, "v": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "groupqueryattention" in se and "kv_num_heads" in se,
        "a missing required attribute fails naming node and attribute (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_nbits", [node("MatMulNBits", ["a", "B", "s"], ["y"], K=32, N=4, bits=4, block_size=32)],
             {"a": f32(1, 32), "B": np.zeros((4, 1, 16), np.uint8)}, {"y": F}, {"s": f32(4)})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "matmulnbits" in se and "constant" in se,
        "a MatMulNBits weight fed at run time fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_block", [node("MatMulNBits", ["a", "B", "s"], ["y"], K=32, N=4, bits=4, block_size=24)],
             {"a": f32(1, 32)}, {"y": F}, {"B": np.zeros((4, 2, 12), np.uint8), "s": f32(8)})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "matmulnbits" in se and "block_size" in se,
        "a block_size that is no power of 2 fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))

# block_size * bits past int64 once wrapped the size of B to 0 bytes: an empty B
# passed and the load read K bytes past it (K = 2^24 crashed the process)
for K, bits, bs in ((64, 8, 2 ** 61), (1 << 24, 8, 2 ** 61), (64, 4, 2 ** 62), (64, 4, 2 ** 41)):
    path = build("bad_block_huge", [node("MatMulNBits", ["a", "B", "s"], ["y"], K=K, N=8, bits=bits, block_size=bs)],
                 {"a": f32(1, 64)}, {"y": F}, {"B": np.zeros((8, 1, 0), np.uint8), "s": f32(8)})
    rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
    C.check(rc > 0 and "matmulnbits" in se and "block_size" in se and "INVALID_MODEL" in se,
            "MatMulNBits block_size %d x bits %d past int64 fails naming the node (rc %d: %s)"
            % (bs, bits, rc, se.strip()[-300:]))
# float zero points of another type than the scales (the message said "of the
# scales' type"; f16 zero points with f32 scales were taken)
path = build("bad_zp_type", [node("MatMulNBits", ["a", "B", "s", "z"], ["y"], K=32, N=4, bits=4, block_size=32)],
             {"a": f32(1, 32)}, {"y": F}, {"B": np.zeros((4, 1, 16), np.uint8), "s": f32(4),
                                          "z": np.full(4, 8, np.float16)})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "matmulnbits" in se and "zero_points" in se and "f16" in se,
        "MatMulNBits f16 zero points with f32 scales fail naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_scales", [node("MatMulNBits", ["a", "B", "s"], ["y"], K=64, N=4, bits=4, block_size=32)],
             {"a": f32(1, 64)}, {"y": F}, {"B": np.zeros((4, 2, 16), np.uint8), "s": f32(4)})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "matmulnbits" in se and "scales" in se and "8 elements" in se,
        "MatMulNBits scales of the wrong size fail naming the node and the size (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_attr_type", [node("QuickGelu", ["x"], ["y"], alpha=2)], {"x": f32(2, 4)}, {"y": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "quickgelu" in se and "'alpha' has type INT, expected FLOAT" in se,
        "a contrib attribute of the wrong type fails naming node and attribute (rc %d: %s)" % (rc, se.strip()[-300:]))
# a model that imports com.microsoft alone (onnxruntime runs it): its
# contrib nodes expand at the contrib opset; a default-domain node in such a
# model is refused (its domain is not imported)
x, grid = f32(1, 2, 5, 5), f32(1, 3, 4, 2)
for with_relu in (False, True):
    nodes = [node("GridSample", ["x", "g"], ["y" if not with_relu else "t"])]
    if with_relu:
        nodes.append(H.make_node("Relu", ["t"], ["y"]))
    gm = H.make_graph(nodes, "ms_only", [vi("x", x), vi("g", grid)], [H.make_tensor_value_info("y", F, None)])
    mm = H.make_model(gm, opset_imports=[H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, "ms_only_%d.onnx" % with_relu)
    onnx.save(mm, path)
    got, err = run_rlx(path, {"x": x, "g": grid}, ["y"], "cpu")
    if not with_relu:
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x, "g": grid})[0]
        C.check(got is not None and np.abs(got[0] - ref).max() < 1e-5,
                "a com.microsoft-only model loads and runs as onnxruntime (%s)" % err)
    else:
        C.check(got is None and "node '' (Relu) is of the default ONNX domain, which the model does not import" in err,
                "a default-domain node in a com.microsoft-only model is refused (%s)" % err)
path = build("grid_missing", [node("GridSample", ["x"], ["y"])], {"x": f32(1, 1, 3, 3)}, {"y": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "has 1 inputs, expected 2" in se and "2 to 2" not in se,
        "a missing contrib input names the count once (rc %d: %s)" % (rc, se.strip()[-300:]))
# GridSample-20's mode names are not the contrib op's
path = build("bad_grid_mode", [node("GridSample", ["x", "g"], ["y"], mode="linear")],
             {"x": f32(1, 1, 3, 3), "g": f32(1, 2, 2, 2)}, {"y": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "gridsample" in se and "linear" in se,
        "contrib GridSample with mode 'linear' fails naming the node and the mode (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_heads", [node("GroupQueryAttention", ["x", "k", "k", "", "", "sl", "t"], ["y", "pk", "pv"],
                                num_heads=3, kv_num_heads=2)],
             {"x": f32(1, 2, 24), "k": f32(1, 2, 16), "sl": np.array([1], np.int32), "t": np.array(2, np.int32)},
             {"y": F, "pk": F, "pv": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "groupqueryattention" in se and "multiple of kv_num_heads" in se,
        "num_heads not a multiple of kv_num_heads fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
# num_heads + 2 * kv_num_heads (the packed QKV's width) once overflowed int64
path = build("bad_heads_huge", [node("GroupQueryAttention", ["x", "", "", "", "", "sl", "t"], ["y", "pk", "pv"],
                                     num_heads=2 ** 62, kv_num_heads=2 ** 62)],
             {"x": f32(1, 2, 24), "sl": np.array([1], np.int32), "t": np.array(2, np.int32)},
             {"y": F, "pk": F, "pv": F})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "groupqueryattention" in se and "num_heads" in se and "INVALID_MODEL" in se,
        "num_heads of 2^62 fails as an invalid model naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
# unidirectional 2 ran causal; onnxruntime takes only 1 as causal
path = build("bad_unidirectional", [node("Attention", ["x", "w"], ["y"], num_heads=2, unidirectional=2)],
             {"x": f32(1, 3, 8)}, {"y": F}, {"w": f32(8, 24)})
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "attention" in se and "unidirectional is 2" in se and "INVALID_MODEL" in se,
        "Attention unidirectional 2 fails as an invalid model naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
# a mask_index or attention_bias of batch 2 against an input of batch 1 was
# broadcast into an output of batch 2 (onnxruntime refuses them): refused at
# load where static, the run fails where the mask's batch is dynamic
att_w = {"w": f32(8, 24)}
path = build("bad_mask_batch", [node("Attention", ["x", "w", "", "m"], ["y"], num_heads=2)],
             {"x": f32(1, 3, 8), "m": np.ones((2, 3), np.int32)}, {"y": F}, att_w)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "attention" in se and "mask_index's batch has 2 at axis 0, expected 1" in se,
        "Attention mask_index of batch 2 for batch 1 fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
path = build("bad_bias_batch", [node("Attention", ["x", "w", "", "", "", "ab"], ["y"], num_heads=2)],
             {"x": f32(1, 3, 8), "ab": f32(2, 2, 3, 3)}, {"y": F}, att_w)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "attention" in se and "attention_bias's batch has 2" in se,
        "Attention attention_bias of batch 2 for batch 1 fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))
feeds = {"x": f32(1, 3, 8), "m": np.array([1, 2, 3], np.int32)}
path = build("bad_mask_batch_dyn", [node("Attention", ["x", "w", "", "m"], ["y"], num_heads=2)], feeds, {"y": F}, att_w)
mdl = onnx.load(path)
mdl.graph.input[1].type.tensor_type.shape.dim[0].dim_param = "M"
onnx.save(mdl, path)
got, err = run_rlx(path, feeds, ["y"], "cpu")
C.check(got is None and "does not accept the input shapes" in err,
        "Attention dynamic mask_index of 3 lengths for batch 1 fails its run (%s)"
        % (err if got is None else "ran: y %s" % (got[0].shape,)))

# ---------------------------------------------------------------- ONNX Attention-23
# ONNX's own Attention (a function op), expanded like the contrib ops; the
# ONNX node tests cover its attribute forms at small sizes (conformance):
# here larger heads, grouped kv heads, a past, causal and a bool mask, f32
# and f16, against onnx's reference evaluator (onnxruntime 1.22 rejects
# opset 23) in float64 of the same inputs.
def onnx_attention(name, B, Sq, P, hq, hkv, D, three_d, causal, bool_mask, dt=np.float32, tol=2e-5):
    from onnx.reference import ReferenceEvaluator
    T_ = T.FLOAT16 if dt == np.float16 else T.FLOAT
    Skv = Sq
    q = rng.uniform(-1, 1, (B, hq, Sq, D)).astype(dt)
    k = rng.uniform(-1, 1, (B, hkv, Skv, D)).astype(dt)
    v = rng.uniform(-1, 1, (B, hkv, Skv, D)).astype(dt)
    feeds = {}
    if three_d:
        feeds["Q"] = q.transpose(0, 2, 1, 3).reshape(B, Sq, hq * D)
        feeds["K"] = k.transpose(0, 2, 1, 3).reshape(B, Skv, hkv * D)
        feeds["V"] = v.transpose(0, 2, 1, 3).reshape(B, Skv, hkv * D)
    else:
        feeds.update(Q=q, K=k, V=v)
    ins = ["Q", "K", "V", "", "", ""]
    if bool_mask:
        m = rng.uniform(0, 1, (Sq, P + Skv)) > 0.3
        m[:, 0] = True
        feeds["M"] = m
        ins[3] = "M"
    if P:
        feeds["PK"] = rng.uniform(-1, 1, (B, hkv, P, D)).astype(dt)
        feeds["PV"] = rng.uniform(-1, 1, (B, hkv, P, D)).astype(dt)
        ins[4], ins[5] = "PK", "PV"
    while ins and not ins[-1]:
        ins.pop()
    kw = dict(is_causal=int(causal))
    if three_d:
        kw.update(q_num_heads=hq, kv_num_heads=hkv)
    n = H.make_node("Attention", ins, ["Y", "present_key", "present_value"], name="attention", **kw)
    vis = [H.make_tensor_value_info(k_, T.BOOL if k_ == "M" else T_, list(a.shape)) for k_, a in feeds.items()]
    g = H.make_graph([n], name, vis, [H.make_tensor_value_info(o, T_, None) for o in ("Y", "present_key",
                                                                                       "present_value")])
    mdl = H.make_model(g, opset_imports=[H.make_opsetid("", 23)], ir_version=10)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(mdl, path)
    f64 = {k_: (a.astype(np.float64) if a.dtype != np.bool_ else a) for k_, a in feeds.items()}
    g64 = H.make_graph([n], name, [H.make_tensor_value_info(k_, T.BOOL if k_ == "M" else T.DOUBLE, list(a.shape))
                                   for k_, a in f64.items()],
                       [H.make_tensor_value_info(o, T.DOUBLE, None) for o in ("Y", "present_key", "present_value")])
    want = ReferenceEvaluator(H.make_model(g64, opset_imports=[H.make_opsetid("", 23)], ir_version=10)).run(None, f64)
    for dev in ("cpu", "gpu"):
        got, err = run_rlx(path, feeds, ["Y", "present_key", "present_value"], dev)
        if not C.check(got is not None, "%s %s: rlx failed: %s" % (name, dev, err)):
            continue
        for o, a, b in zip(("Y", "present_key", "present_value"), got, want):
            e = float(np.abs(a.astype(np.float64) - b).max()) if a.shape == b.shape else float("inf")
            C.check(e <= tol, "%s %s %s: max abs error %.3g (tolerance %.3g)" % (name, dev, o, e, tol))


onnx_attention("attn23_gqa_causal_past", 2, 7, 5, 8, 2, 64, True, True, False)
onnx_attention("attn23_4d_mask", 1, 33, 0, 4, 4, 32, False, False, True)
onnx_attention("attn23_f16", 1, 16, 3, 4, 1, 64, False, True, False, dt=np.float16, tol=2e-3)

# bad input: 3-D without head counts, heads that do not group
path = os.path.join(tmp, "attn23_bad.onnx")
g = H.make_graph([H.make_node("Attention", ["Q", "K", "V"], ["Y"], name="att")], "bad",
                 [H.make_tensor_value_info(k_, T.FLOAT, [1, 4, 16]) for k_ in "QKV"],
                 [H.make_tensor_value_info("Y", T.FLOAT, None)])
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 23)], ir_version=10), path)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "'att'" in se and "q_num_heads" in se,
        "3-D Attention without heads fails naming node and attribute (rc %d: %s)" % (rc, se.strip()[-300:]))
g = H.make_graph([H.make_node("Attention", ["Q", "K", "V"], ["Y"], name="att")], "bad",
                 [H.make_tensor_value_info("Q", T.FLOAT, [1, 3, 4, 8])] +
                 [H.make_tensor_value_info(k_, T.FLOAT, [1, 2, 4, 8]) for k_ in "KV"],
                 [H.make_tensor_value_info("Y", T.FLOAT, None)])
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 23)], ir_version=10), path)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc != 0 and "'att'" in se and "heads" in se,
        "3 query heads over 2 kv heads fail naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))

# ---------------------------------------------------------------- rlx ops
rc, so, se = R.run([RLX, "ops"])
for op in ("MatMulNBits", "GroupQueryAttention", "RotaryEmbedding", "SkipLayerNormalization", "QLinearConcat",
           "DynamicQuantizeLSTM", "Attention", "EmbedLayerNormalization"):
    C.check(rc == 0 and ("com.microsoft.%s-1" % op) in so, "rlx ops lists com.microsoft.%s" % op)
C.done()
