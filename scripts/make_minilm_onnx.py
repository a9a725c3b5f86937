#!/usr/bin/env python3
"""Writes a BERT encoder (HuggingFace BertModel + sentence-transformers mean
pooling and L2 normalisation) as an ONNX model, opset 17.

Two sources of weights:

  make_minilm_onnx.py --safetensors model.safetensors [--config config.json] -o out.onnx
      the weights of a BertModel checkpoint in the safetensors format (read
      here with numpy alone), e.g. all-MiniLM-L6-v2 (6 layers, hidden 384,
      12 heads, intermediate 1536);
  make_minilm_onnx.py --random [--layers 12 --hidden 768 --heads 12
                      --intermediate 3072 --vocab 30522 --seed 0] -o out.onnx
      the same architecture with seeded random weights (no download), e.g.
      BERT-base-sized models for benchmarks or tiny ones for tests.

The graph (per HuggingFace BertModel, eval mode, absolute positions):

  inputs   input_ids, attention_mask, token_type_ids: int64 [batch, seq]
  emb      = LayerNorm(word[input_ids] + position[0:seq] + token_type[token_type_ids])
  mask     = (1 - float(attention_mask)[:, None, None, :]) * MASK_VALUE
  layer i  q, k, v = x Wq + bq, x Wk + bk, x Wv + bv, split into heads with
           Shape -> Gather -> Unsqueeze -> Concat -> Reshape and Transpose
           p = Softmax(q k^T / sqrt(head_dim) + mask)
           a = LayerNorm(merge_heads(p v) Wo + bo + x)
           f = gelu_erf(a W1 + b1) W2 + b2,  gelu_erf(y) = y * 0.5 * (1 + erf(y / sqrt 2))
           x = LayerNorm(f + a)
  outputs  last_hidden_state [batch, seq, hidden] = x
           sentence_embedding [batch, hidden]
               = normalize(sum_s(x * m) / max(sum_s(m), 1e-9)), m = float(mask)[..., None]
               normalize(e) = e / max(||e||_2, 1e-12)

Linear weights of the checkpoint are [out, in] (PyTorch); they are stored
transposed ([in, out]) for MatMul. MASK_VALUE is float32's lowest value
(as current HuggingFace versions use for float32 models) unless --mask-value
gives another.

Needs numpy and onnx; onnx.checker validates the result.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

OPSET = 17

# safetensors dtype names -> numpy dtypes (little-endian)
ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
             "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """Returns {name: numpy array} from a safetensors file: an 8-byte
    little-endian header length N, N bytes of JSON
    {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
    then the raw tensor bytes (offsets relative to the end of the header)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError("%s: header length %d exceeds the file" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = ST_DTYPES.get(info["dtype"])
        if dt is None:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, info["dtype"]))
        b, e = info["data_offsets"]
        shape = [int(d) for d in info["shape"]]
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= b <= e <= len(blob) - base) or e - b != count * np.dtype(dt).itemsize:
            raise ValueError("%s: tensor %s has bad data_offsets %r for shape %r" % (path, name, (b, e), shape))
        out[name] = np.frombuffer(blob, dtype=dt, count=count, offset=base + b).reshape(shape).copy()
    return out


def random_weights(cfg, seed):
    """BertModel weights with seeded random values. Scales keep activations of
    order 1 (1/sqrt(fan_in) for linear layers), so attention is far from
    uniform and every op's numerics matter."""
    rng = np.random.default_rng(seed)
    hid, inter, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]

    def lin(out_f, in_f):
        return (rng.standard_normal((out_f, in_f)) / math.sqrt(in_f)).astype(np.float32)

    def vec(n, scale=0.1, mean=0.0):
        return (mean + scale * rng.standard_normal(n)).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": vec((cfg["vocab_size"], hid), 0.5),
        "embeddings.position_embeddings.weight": vec((cfg["max_position_embeddings"], hid), 0.5),
        "embeddings.token_type_embeddings.weight": vec((cfg["type_vocab_size"], hid), 0.5),
        "embeddings.LayerNorm.weight": vec(hid, 0.1, 1.0),
        "embeddings.LayerNorm.bias": vec(hid),
    }
    for i in range(L):
        p = "encoder.layer.%d." % i
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            w[p + part + ".weight"] = lin(hid, hid)
            w[p + part + ".bias"] = vec(hid)
        w[p + "intermediate.dense.weight"] = lin(inter, hid)
        w[p + "intermediate.dense.bias"] = vec(inter)
        w[p + "output.dense.weight"] = lin(hid, inter)
        w[p + "output.dense.bias"] = vec(hid)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = vec(hid, 0.1, 1.0)
            w[p + ln + ".bias"] = vec(hid)
    return w


class Builder:
    """Collects nodes and initializers; names values uniquely."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, hint):
        self.n += 1
        return "%s_%d" % (hint, self.n)

    def const(self, arr, hint):
        nm = self.name(hint)
        self.inits.append(NH.from_array(np.asarray(arr), nm))
        return nm

    def weight(self, arr, name):
        self.inits.append(NH.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, op_type, inputs, hint=None, n_out=1, **attrs):
        hint = hint or op_type.lower()
        outs = [self.name(hint) for _ in range(n_out)]
        self.nodes.append(H.make_node(op_type, inputs, outs, name=self.name("n_" + hint), **attrs))
        return outs[0] if n_out == 1 else outs


def build(weights, cfg, mask_value):
    hid, heads, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    if hid % heads:
        raise ValueError("hidden %d is not a multiple of heads %d" % (hid, heads))
    hd = hid // heads
    b = Builder()
    W = lambda k: weights[k]  # noqa: E731

    def linear(x, prefix, hint):
        wt = b.weight(W(prefix + ".weight").T, prefix + ".weight_t")
        bias = b.weight(W(prefix + ".bias"), prefix + ".bias")
        return b.op("Add", [b.op("MatMul", [x, wt], hint + "_mm"), bias], hint)

    def layernorm(x, prefix, hint):
        return b.op("LayerNormalization", [x, b.weight(W(prefix + ".weight"), prefix + ".weight"),
                                           b.weight(W(prefix + ".bias"), prefix + ".bias")],
                    hint, axis=-1, epsilon=eps)

    i0 = b.const(np.array(0, np.int64), "c0")
    i1 = b.const(np.array(1, np.int64), "c1")
    ax0 = b.const(np.array([0], np.int64), "axes0")

    # ---- embeddings
    ids_shape = b.op("Shape", ["input_ids"], "ids_shape")
    seq_u = b.op("Unsqueeze", [b.op("Gather", [ids_shape, i1], "seq_len", axis=0), ax0], "seq_u")
    pos_ids = b.const(np.arange(cfg["max_position_embeddings"], dtype=np.int64)[None, :], "position_ids")
    pos = b.op("Slice", [pos_ids, b.const(np.array([0], np.int64), "zero1"), seq_u,
                         b.const(np.array([1], np.int64), "axes1")], "pos_ids")
    we = b.op("Gather", [b.weight(W("embeddings.word_embeddings.weight"), "embeddings.word_embeddings.weight"),
                         "input_ids"], "word_emb", axis=0)
    te = b.op("Gather", [b.weight(W("embeddings.token_type_embeddings.weight"),
                                  "embeddings.token_type_embeddings.weight"), "token_type_ids"], "type_emb", axis=0)
    pe = b.op("Gather", [b.weight(W("embeddings.position_embeddings.weight"),
                                  "embeddings.position_embeddings.weight"), pos], "pos_emb", axis=0)
    x = b.op("Add", [b.op("Add", [we, te], "emb_wt"), pe], "emb_sum")
    x = layernorm(x, "embeddings.LayerNorm", "emb_ln")

    # ---- additive attention mask [batch, 1, 1, seq]
    maskf = b.op("Cast", ["attention_mask"], "mask_f", to=T.FLOAT)
    m4 = b.op("Unsqueeze", [maskf, b.const(np.array([1, 2], np.int64), "axes12")], "mask4")
    inv = b.op("Sub", [b.const(np.array(1.0, np.float32), "one"), m4], "mask_inv")
    addmask = b.op("Mul", [inv, b.const(np.array(mask_value, np.float32), "mask_value")], "mask_add")

    c_heads = b.const(np.array([heads], np.int64), "n_heads")
    c_hd = b.const(np.array([hd], np.int64), "head_dim")
    c_hid = b.const(np.array([hid], np.int64), "hidden")
    scale = b.const(np.array(math.sqrt(hd), np.float32), "sqrt_hd")
    half = b.const(np.array(0.5, np.float32), "half")
    one = b.const(np.array(1.0, np.float32), "one_f")
    sqrt2 = b.const(np.array(math.sqrt(2.0), np.float32), "sqrt2")

    for i in range(L):
        p = "encoder.layer.%d." % i
        # shape arithmetic as exporters write it: Shape -> Gather -> Unsqueeze -> Concat
        xs = b.op("Shape", [x], "l%d_shape" % i)
        bu = b.op("Unsqueeze", [b.op("Gather", [xs, i0], "l%d_b" % i, axis=0), ax0], "l%d_bu" % i)
        su = b.op("Unsqueeze", [b.op("Gather", [xs, i1], "l%d_s" % i, axis=0), ax0], "l%d_su" % i)
        split_shape = b.op("Concat", [bu, su, c_heads, c_hd], "l%d_split_shape" % i, axis=0)
        merge_shape = b.op("Concat", [bu, su, c_hid], "l%d_merge_shape" % i, axis=0)

        def heads_of(t, perm, hint):
            return b.op("Transpose", [b.op("Reshape", [t, split_shape], hint + "_r")], hint, perm=perm)

        q = heads_of(linear(x, p + "attention.self.query", "l%d_q" % i), [0, 2, 1, 3], "l%d_qh" % i)
        k = heads_of(linear(x, p + "attention.self.key", "l%d_k" % i), [0, 2, 3, 1], "l%d_kt" % i)
        v = heads_of(linear(x, p + "attention.self.value", "l%d_v" % i), [0, 2, 1, 3], "l%d_vh" % i)
        sc = b.op("Div", [b.op("MatMul", [q, k], "l%d_qk" % i), scale], "l%d_scores" % i)
        pr = b.op("Softmax", [b.op("Add", [sc, addmask], "l%d_masked" % i)], "l%d_probs" % i, axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [pr, v], "l%d_ctx" % i)], "l%d_ctx_t" % i, perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_shape], "l%d_ctx_m" % i)
        ao = linear(ctx, p + "attention.output.dense", "l%d_ao" % i)
        a = layernorm(b.op("Add", [ao, x], "l%d_res1" % i), p + "attention.output.LayerNorm", "l%d_ln1" % i)
        h = linear(a, p + "intermediate.dense", "l%d_ff1" % i)
        erf = b.op("Erf", [b.op("Div", [h, sqrt2], "l%d_gdiv" % i)], "l%d_erf" % i)
        g = b.op("Mul", [b.op("Mul", [h, half], "l%d_ghalf" % i), b.op("Add", [erf, one], "l%d_g1" % i)],
                 "l%d_gelu" % i)
        f = linear(g, p + "output.dense", "l%d_ff2" % i)
        x = layernorm(b.op("Add", [f, a], "l%d_res2" % i), p + "output.LayerNorm", "l%d_ln2" % i)

    b.nodes.append(H.make_node("Identity", [x], ["last_hidden_state"], name="out_last_hidden_state"))

    # ---- mean pooling over the mask, then L2 normalisation
    m3 = b.op("Unsqueeze", [maskf, b.const(np.array([2], np.int64), "axes2")], "mask3")
    summed = b.op("ReduceSum", [b.op("Mul", [x, m3], "masked_hidden"), b.const(np.array([1], np.int64), "axes_s")],
                  "sum_hidden", keepdims=0)
    count = b.op("ReduceSum", [m3, b.const(np.array([1], np.int64), "axes_s2")], "mask_count", keepdims=0)
    count = b.op("Max", [count, b.const(np.array(1e-9, np.float32), "min_count")], "mask_count_c")
    mean = b.op("Div", [summed, count], "mean_pooled")
    norm = b.op("ReduceL2", [mean], "l2", axes=[1], keepdims=1)  # axes an attribute before opset 18
    norm = b.op("Max", [norm, b.const(np.array(1e-12, np.float32), "min_norm")], "l2_c")
    b.nodes.append(H.make_node("Div", [mean, norm], ["sentence_embedding"], name="out_sentence_embedding"))

    ins = [H.make_tensor_value_info(n, T.INT64, ["batch", "seq"])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    outs = [H.make_tensor_value_info("last_hidden_state", T.FLOAT, ["batch", "seq", hid]),
            H.make_tensor_value_info("sentence_embedding", T.FLOAT, ["batch", hid])]
    graph = H.make_graph(b.nodes, "bert_encoder", ins, outs, b.inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", OPSET)], producer_name="rlx make_minilm_onnx.py")
    model.ir_version = 8
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="ONNX file to write")
    ap.add_argument("--safetensors", help="BertModel weights (model.safetensors)")
    ap.add_argument("--config", help="HuggingFace config.json (default: beside --safetensors)")
    ap.add_argument("--random", action="store_true", help="seeded random weights instead of a checkpoint")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--intermediate", type=int, help="FFN size (default 4 * hidden)")
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--max-positions", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mask-value", type=float, default=float(np.finfo(np.float32).min),
                    help="additive mask of padded keys (default float32's lowest, as current HuggingFace; "
                         "older versions used -10000)")
    a = ap.parse_args(argv)

    if a.random == bool(a.safetensors):
        ap.error("give exactly one of --safetensors FILE or --random")
    if a.random:
        cfg = {"hidden_size": a.hidden, "num_attention_heads": a.heads, "num_hidden_layers": a.layers,
               "intermediate_size": a.intermediate or 4 * a.hidden, "vocab_size": a.vocab,
               "max_position_embeddings": a.max_positions, "type_vocab_size": 2, "layer_norm_eps": 1e-12}
        if min(cfg.values()) <= 0:
            ap.error("sizes must be positive")
        if a.hidden % a.heads:
            ap.error("--hidden must be a multiple of --heads")
        weights = random_weights(cfg, a.seed)
    else:
        cfg_path = a.config or os.path.join(os.path.dirname(os.path.abspath(a.safetensors)), "config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        if cfg.get("hidden_act", "gelu") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
            sys.exit("make_minilm_onnx: only hidden_act 'gelu' and absolute positions are supported")
        weights = read_safetensors(a.safetensors)
        for k in list(weights):  # some checkpoints prefix the names with "bert."
            if k.startswith("bert."):
                weights[k[5:]] = weights.pop(k)
        weights = {k: (v.astype(np.float32) if v.dtype.kind == "f" else v) for k, v in weights.items()}

    model = build(weights, cfg, a.mask_value)
    onnx.checker.check_model(model)
    out_dir = os.path.dirname(os.path.abspath(a.output))
    os.makedirs(out_dir, exist_ok=True)
    tmp = a.output + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, a.output)
    print("make_minilm_onnx: wrote %s (%d layers, hidden %d, %d heads, intermediate %d, vocab %d, %d nodes)"
          % (a.output, cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"],
             cfg["intermediate_size"], cfg["vocab_size"], len(model.graph.node)))


if __name__ == "__main__":
    main()
