"""onnxruntime's com.microsoft.MultiHeadAttention (src/import/onnx_contrib.c,
x_mha), which rlx expands into default-domain ops at load: one small model
per form (B = 2, query and key lengths different, 2-4 heads of 8-16), run by
onnxruntime 1.22's CPU kernel and by `rlx run` on fresh random inputs;
outputs compared as max abs difference over max(1, max |ref|), tolerance
per case (f32 1e-5, f16 3e-3). Every case runs on the CPU; three of them
also on the GPU device (lavapipe here: slow).

References other than onnxruntime's output on the same model: onnxruntime's
CPU kernel implements neither packed KV nor packed QKV, so those run
onnxruntime on the same values unpacked into 3-D query, key and value; its
causal mask is off where the query is shorter than the total length (the
last query row is left unmasked, and with a past the past keys are masked
instead), so those cases compare with numpy in float64 (key j seen by query
s when j <= s + past length). Refused forms fail the load naming the node.

Skips (exit 77) while rlx is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_mha_")
rng = R.seeded_rng(11)
C = R.Checker("test_contrib_mha")
ONLY = os.environ.get("RLX_CONTRIB_ONLY", "")  # run the cases whose name starts with this
NP2ONNX = {np.float32: T.FLOAT, np.float16: T.FLOAT16, np.int32: T.INT32}


def f32(*shape):
    return rng.uniform(-2.0, 2.0, shape).astype(np.float32)


def build(name, ins, outs, feeds, dyn=None, dt=np.float32, **attrs):
    """One MultiHeadAttention node named 'mha' over graph inputs `feeds`;
    dyn: input name -> {axis: symbolic dim name}."""
    n = H.make_node("MultiHeadAttention", ins, outs, domain="com.microsoft", name="mha", **attrs)
    vis = []
    for k, a in feeds.items():
        shape = list(a.shape)
        for ax, s in (dyn or {}).get(k, {}).items():
            shape[ax] = s
        vis.append(H.make_tensor_value_info(k, NP2ONNX[a.dtype.type], shape))
    g = H.make_graph([n], name, vis, [H.make_tensor_value_info(o, NP2ONNX[dt], None) for o in outs if o])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17), H.make_opsetid("com.microsoft", 1)], ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def ort_run(path, outs, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(outs, feeds)


def run_rlx(path, feeds, outs, device):
    return R.run_output(RLX, path, feeds, device, tmp=tmp, output=list(outs))


def case(name, ins, feeds, outs=("y",), ref=None, ref_model=None, tol=1e-5, devices=("cpu",), dyn=None,
         dt=np.float32, **attrs):
    """ref: reference outputs (else onnxruntime on this model, or on
    ref_model = (ins, feeds) when given: the same values in a form that
    onnxruntime's CPU kernel runs)."""
    if ONLY and not name.startswith(ONLY):
        return
    outs = list(outs)
    path = build(name, ins, outs, feeds, dyn, dt, **attrs)
    if ref is None:
        if ref_model:
            ref = ort_run(build(name + "_ref", ref_model[0], outs, ref_model[1], None, dt, **attrs), outs, ref_model[1])
        else:
            ref = ort_run(path, outs, feeds)
    for dev in devices:
        got, err = run_rlx(path, feeds, outs, dev)
        if not C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err)):
            continue
        for o, r, y in zip(outs, ref, got):
            if y.shape == r.shape and y.dtype == r.dtype:
                d = float(np.abs(y.astype(np.float64) - r).max() / max(1.0, float(np.abs(r).max())))
                ok, what = d <= tol and bool(np.isfinite(y).all()), "max diff %.3g (tol %.1g)" % (d, tol)
            else:
                ok, what = False, "shape %s %s, expected %s %s" % (y.shape, y.dtype, r.shape, r.dtype)
            C.check(ok, "%s on %s, output %s: %s" % (name, dev, o, what))
            print("%-30s %-4s %-4s %s" % (name, dev, o, what))


def heads(x, n):  # [B, S, n H] -> [B, n, S, H]
    return x.reshape(x.shape[0], x.shape[1], n, -1).transpose(0, 2, 1, 3)


def np_mha(q, k, v, n, past=None, causal=False, scale=None, filt=-10000.0):
    """float64 reference of 3-D q, k, v (+ past (pk, pv)), the causal mask
    key j > s + past masked at filt."""
    Q, K, V = (heads(x.astype(np.float64), n) for x in (q, k, v))
    P = 0
    if past is not None:
        P = past[0].shape[2]
        K, V = np.concatenate([past[0], K], 2), np.concatenate([past[1], V], 2)
    s = Q @ K.transpose(0, 1, 3, 2) * (scale or 1.0 / np.sqrt(Q.shape[-1]))
    if causal:
        s = s + np.where(np.arange(K.shape[2])[None, :] > np.arange(Q.shape[2])[:, None] + P, filt, 0.0)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ V
    o = o.transpose(0, 2, 1, 3).reshape(o.shape[0], o.shape[2], -1)
    return o.astype(np.float32), K.astype(np.float32), V.astype(np.float32)


B, S, L = 2, 3, 5
# ---------------------------------------------------------------- 3-D query, key, value
N, Hd = 2, 8
q, k, v = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
case("mha_3d", ["q", "k", "v"], dict(q=q, k=k, v=v), num_heads=N, devices=("cpu", "gpu"))
N, Hd, Hv = 4, 8, 16
q, k, v, bias = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hv), f32(2 * N * Hd + N * Hv)
case("mha_bias_dv", ["q", "k", "v", "b"], dict(q=q, k=k, v=v, b=bias), num_heads=N)
case("mha_scale", ["q", "k", "v", "b"], dict(q=q, k=k, v=v, b=bias), num_heads=N, scale=0.2)
# symbolic batch and lengths: the expansion reads them at run time
case("mha_dynamic", ["q", "k", "v", "b"], dict(q=q, k=k, v=v, b=bias), num_heads=N,
     dyn={"q": {0: "B", 1: "S"}, "k": {0: "B", 1: "L"}, "v": {0: "B", 1: "L"}})

# ---------------------------------------------------------------- key_padding_mask, attention_bias
N, Hd = 2, 16
q, k, v = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
m2 = np.ones((B, L), np.int32)
m2[0, 3:] = 0
m2[1, 1] = 0
case("mha_mask_2d", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=m2), num_heads=N)
case("mha_mask_2d_filter", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=m2), num_heads=N, mask_filter_value=-3.0)
case("mha_mask_lengths", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=np.array([2, 5], np.int32)), num_heads=N)
case("mha_mask_lengths_dyn", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=np.array([4, 1], np.int32)),
     num_heads=N, dyn={"k": {1: "L"}, "v": {1: "L"}})
m3 = (rng.uniform(0, 1, (B, S, L)) > 0.4).astype(np.int32)
m3[:, :, 0] = 1
case("mha_mask_3d", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=m3), num_heads=N)
for i, sh in enumerate(((B, N, S, L), (1, N, S, L), (B, 1, S, L), (1, 1, S, L))):
    case("mha_attn_bias%d" % i, ["q", "k", "v", "", "", "ab"], dict(q=q, k=k, v=v, ab=f32(*sh)), num_heads=N)
case("mha_mask_and_bias", ["q", "k", "v", "", "m", "ab"], dict(q=q, k=k, v=v, m=m2, ab=f32(B, 1, S, L)),
     num_heads=N)

# ---------------------------------------------------------------- 4-D key and value (cached cross attention)
N, Hd = 3, 16
q, kb, vb, bias = f32(B, S, N * Hd), f32(B, N, L, Hd), f32(B, N, L, Hd), f32(3 * N * Hd)
case("mha_bnsh_kv", ["q", "k", "v", "b"], dict(q=q, k=kb, v=vb, b=bias), outs=("y", "pk", "pv"), num_heads=N,
     devices=("cpu", "gpu"))
case("mha_bnsh_kv_mask", ["q", "k", "v", "", "m"], dict(q=q, k=kb, v=vb, m=np.array([3, 5], np.int32)),
     num_heads=N)

# ---------------------------------------------------------------- past / present
N, Hd, P = 2, 8, 4
q, k, v = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
pk, pv = f32(B, N, P, Hd), f32(B, N, P, Hd)
case("mha_past", ["q", "k", "v", "", "", "", "pk", "pv"], dict(q=q, k=k, v=v, pk=pk, pv=pv),
     outs=("y", "ok", "ov"), num_heads=N)
mt = np.ones((B, P + L), np.int32)
mt[0, 0] = mt[1, P + L - 1] = 0
case("mha_past_mask", ["q", "k", "v", "", "m", "", "pk", "pv"], dict(q=q, k=k, v=v, m=mt, pk=pk, pv=pv),
     outs=("y", "ok", "ov"), num_heads=N)
case("mha_past_dynamic", ["q", "k", "v", "", "", "", "pk", "pv"], dict(q=q, k=k, v=v, pk=pk, pv=pv),
     outs=("y", "ok", "ov"), num_heads=N, dyn={"pk": {2: "P"}, "pv": {2: "P"}, "k": {1: "L"}, "v": {1: "L"}})
case("mha_present_only", ["q", "k", "v"], dict(q=q, k=k, v=v), outs=("y", "ok", "ov"), num_heads=N)

# ---------------------------------------------------------------- unidirectional
qs, ks, vs = f32(B, L, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
case("mha_causal_self", ["q", "k", "v"], dict(q=qs, k=ks, v=vs), num_heads=N, unidirectional=1)
# onnxruntime's CPU kernel differs here (see the docstring): numpy
y, K, V = np_mha(q, k, v, N, past=(pk, pv), causal=True)
case("mha_causal_past", ["q", "k", "v", "", "", "", "pk", "pv"], dict(q=q, k=k, v=v, pk=pk, pv=pv),
     outs=("y", "ok", "ov"), ref=[y, K, V], num_heads=N, unidirectional=1, devices=("cpu", "gpu"))
y, _, _ = np_mha(q, k, v, N, causal=True)
case("mha_causal_cross", ["q", "k", "v"], dict(q=q, k=k, v=v), ref=[y], num_heads=N, unidirectional=1)
y, _, _ = np_mha(q[:, :1], k, v, N, past=(pk, pv), causal=True)  # one decoding step
case("mha_causal_decode", ["q", "k", "v", "", "", "", "pk", "pv"], dict(q=q[:, :1].copy(), k=k, v=v, pk=pk, pv=pv),
     ref=[y], num_heads=N, unidirectional=1)

# ---------------------------------------------------------------- packed KV and QKV
N, Hd = 4, 8
q, k, v = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
kv = np.stack([k.reshape(B, L, N, Hd), v.reshape(B, L, N, Hd)], 3)
case("mha_packed_kv", ["q", "kv"], dict(q=q, kv=kv), ref_model=(["q", "k", "v"], dict(q=q, k=k, v=v)), num_heads=N)
ab = f32(1, N, S, L)
case("mha_packed_kv_bias_mask", ["q", "kv", "", "", "m", "ab"], dict(q=q, kv=kv, m=np.array([5, 2], np.int32), ab=ab),
     ref_model=(["q", "k", "v", "", "m", "ab"], dict(q=q, k=k, v=v, m=np.array([5, 2], np.int32), ab=ab)),
     num_heads=N)
k2, v2 = f32(B, S, N * Hd), f32(B, S, N * Hd)
qkv = np.stack([x.reshape(B, S, N, Hd) for x in (q, k2, v2)], 3)
case("mha_packed_qkv", ["qkv"], dict(qkv=qkv), ref_model=(["q", "k", "v"], dict(q=q, k=k2, v=v2)), num_heads=N,
     unidirectional=1)

# ---------------------------------------------------------------- f16
N, Hd = 2, 16
h = {x: f32(*sh).astype(np.float16) for x, sh in (("q", (B, S, N * Hd)), ("k", (B, L, N * Hd)),
                                                   ("v", (B, L, N * Hd)), ("b", (3 * N * Hd,)))}
case("mha_f16", ["q", "k", "v", "b", "m"], dict(h, m=m2), dt=np.float16, num_heads=N, tol=3e-3)


# ---------------------------------------------------------------- refused forms
def refused(name, ins, feeds, want, outs=("y",), code=None, dyn=None, **attrs):
    if ONLY and not name.startswith(ONLY):
        return
    attrs.setdefault("num_heads", 2)
    path = build(name, ins, list(outs), feeds, dyn, **attrs)
    rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
    ok = rc > 0 and "'mha'" in se and want in se and (code is None or code in se)
    C.check(ok, "%s fails the load naming the node and %r (rc %d: %s)" % (name, want, rc, se.strip()[-300:]))
    print("%-30s refused: %s" % (name, se.strip().splitlines()[-1][:150] if se.strip() else "(nothing)"))


N, Hd = 2, 8
q, k, v = f32(B, S, N * Hd), f32(B, L, N * Hd), f32(B, L, N * Hd)
qkv3 = dict(q=q, k=k, v=v)
U, I = "UNSUPPORTED", "INVALID_MODEL"
refused("bad_past_seq_len", ["q", "k", "v", "", "", "", "pk", "pv", "pl"],
        dict(qkv3, pk=f32(B, N, 4, Hd), pv=f32(B, N, 4, Hd), pl=np.array([2], np.int32)), "past_sequence_length", code=U)
refused("bad_cache_indirection", ["q", "k", "v", "", "", "", "", "", "", "ci"],
        dict(qkv3, ci=np.zeros((B, 1, 8), np.int32)), "cache_indirection", code=U)
refused("bad_qk_output", ["q", "k", "v"], qkv3, "output qk", outs=("y", "", "", "qk"), code=U)
refused("bad_mask_3b2", ["q", "k", "v", "", "m"], dict(qkv3, m=np.zeros(3 * B + 2, np.int32)), "key_padding_mask",
        code=U)
refused("bad_mask_4d", ["q", "k", "v", "", "m"], dict(qkv3, m=np.ones((B, 1, S, L), np.int32)), "key_padding_mask",
        code=U)
refused("bad_mask_len", ["q", "k", "v", "", "m", "", "pk", "pv"],
        dict(qkv3, m=np.ones((B, L), np.int32), pk=f32(B, N, 4, Hd), pv=f32(B, N, 4, Hd)), "total", code=I)
refused("bad_mask_float", ["q", "k", "v", "", "m"], dict(qkv3, m=np.ones((B, L), np.float32)), "int32", code=I)
refused("bad_packed_kv_bias", ["q", "kv", "", "b"],
        dict(q=q, kv=np.stack([k.reshape(B, L, N, Hd)] * 2, 3), b=f32(3 * N * Hd)), "bias with packed KV", code=U)
refused("bad_packed_qkv_key", ["qkv", "k"], dict(qkv=np.stack([q.reshape(B, S, N, Hd)] * 3, 3), k=k), "packed QKV",
        code=I)
refused("bad_no_key", ["q"], dict(q=q), "key is required", code=I)
refused("bad_key_rank", ["q", "k", "v"], dict(q=q, k=k[0], v=v), "key must have rank", code=I)
refused("bad_bnsh_past", ["q", "k", "v", "", "", "", "pk", "pv"],
        dict(q=q, k=heads(k, N).copy(), v=heads(v, N).copy(), pk=f32(B, N, 4, Hd), pv=f32(B, N, 4, Hd)), "past_key",
        code=U)
refused("bad_heads", ["q", "k", "v"], qkv3, "multiple of num_heads", num_heads=3)
refused("bad_no_value", ["q", "k"], dict(q=q, k=k), "needs a 3-D value", code=I)
refused("bad_value_4d", ["q", "k", "v"], dict(q=q, k=heads(k, N).copy(), v=v), "4-D value", code=I)
refused("bad_mask_scalar", ["q", "k", "v", "", "m"], dict(qkv3, m=np.array(3, np.int32)), "key_padding_mask of rank 0",
        code=U)
refused("bad_bias_rank", ["q", "k", "v", "", "", "ab"], dict(qkv3, ab=f32(N, S, L)), "attention_bias", code=I)
refused("bad_heads_huge", ["q", "k", "v"], qkv3, "num_heads", num_heads=2 ** 62, code=I)
refused("bad_key_dtype", ["q", "k", "v"], dict(qkv3, k=k.astype(np.float16)), "key has dtype f16", code=I)
refused("bad_packed_qkv_dyn", ["qkv"], dict(qkv=np.stack([q.reshape(B, S, N, Hd)] * 3, 3)), "static shape",
        dyn={"qkv": {2: "N"}}, code=U)
refused("bad_unidirectional", ["q", "k", "v"], qkv3, "unidirectional is 2", unidirectional=2, code=I)
refused("bad_bias_len", ["q", "k", "v", "b"], dict(qkv3, b=f32(2 * N * Hd)), "bias", code=I)
# batches and lengths that the expansion's Adds and MatMuls broadcast: a mask,
# attention_bias, key or value of batch 2 against a query of batch 1 gave an
# output of batch 2 (onnxruntime refuses them). Static: refused at load.
q1, k1, v1 = f32(1, S, N * Hd), f32(1, L, N * Hd), f32(1, L, N * Hd)
refused("bad_mask_batch", ["q", "k", "v", "", "m"], dict(q=q1, k=k1, v=v1, m=np.ones((2, L), np.int32)),
        "key_padding_mask's batch has 2", code=I)
refused("bad_bias_batch", ["q", "k", "v", "", "", "ab"], dict(q=q1, k=k1, v=v1, ab=f32(2, N, S, L)),
        "attention_bias's batch has 2 at axis 0, expected 1", code=I)
refused("bad_bias_seq", ["q", "k", "v", "", "", "ab"], dict(q=q1, k=k1, v=v1, ab=f32(1, N, 1, L)),
        "attention_bias's sequence has 1", code=I)
refused("bad_key_batch", ["q", "k", "v"], dict(q=f32(2, S, N * Hd), k=k1, v=v1), "key's batch has 1", code=I)


# dynamic: the first run fails, naming the shapes
def refused_at_run(name, ins, feeds, dyn):
    if ONLY and not name.startswith(ONLY):
        return
    got, err = run_rlx(build(name, ins, ["y"], feeds, dyn, num_heads=N), feeds, ["y"], "cpu")
    C.check(got is None and "does not accept the input shapes" in err,
            "%s fails its run (%s)" % (name, err if got is None else "ran: y %s" % (got[0].shape,)))
    print("%-30s refused at run: %s" % (name, err.splitlines()[-1][-150:] if err else "(nothing)"))


refused_at_run("bad_mask_lengths_dyn", ["q", "k", "v", "", "m"], dict(q=q1, k=k1, v=v1, m=np.array([1, 2, 3], np.int32)),
               {"m": {0: "M"}})
refused_at_run("bad_mask_batch_dyn", ["q", "k", "v", "", "m"], dict(q=q1, k=k1, v=v1, m=np.ones((2, L), np.int32)),
               {"m": {0: "M"}})
refused_at_run("bad_mask_3d_seq_dyn", ["q", "k", "v", "", "m"], dict(q=q1, k=k1, v=v1, m=np.ones((1, 1, L), np.int32)),
               {"m": {1: "M"}})
refused_at_run("bad_bias_batch_dyn", ["q", "k", "v", "", "", "ab"], dict(q=q1, k=k1, v=v1, ab=f32(2, N, S, L)),
               {"ab": {0: "X"}})
refused_at_run("bad_key_batch_dyn", ["q", "k", "v"], dict(q=f32(2, S, N * Hd), k=k1, v=v1),
               {"q": {0: "B"}, "k": {0: "B2"}, "v": {0: "B2"}})
# batches under two symbols that agree at run time still run
case("mha_two_batch_symbols", ["q", "k", "v", "", "m"], dict(q=q, k=k, v=v, m=np.array([2, 5], np.int32)), num_heads=N,
     dyn={"q": {0: "B"}, "k": {0: "B2"}, "v": {0: "B3"}, "m": {0: "B4"}})
path = build("bad_missing_heads", ["q", "k", "v"], ["y"], qkv3)
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet"])
C.check(rc > 0 and "'mha'" in se and "num_heads" in se,
        "MultiHeadAttention without num_heads fails naming the node (rc %d: %s)" % (rc, se.strip()[-300:]))

# ---------------------------------------------------------------- rlx ops
rc, so, se = R.run([RLX, "ops"])
C.check(rc == 0 and "com.microsoft.MultiHeadAttention-1" in so, "rlx ops lists com.microsoft.MultiHeadAttention")
C.done()
