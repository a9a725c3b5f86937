"""A BERT encoder (all-MiniLM-L6-v2 when `scripts/setup.sh --models` has
written models/minilm_l6.onnx, else a 2-layer, hidden-64 model with seeded
random weights made here by scripts/make_minilm_onnx.py) through onnxruntime
and `rlx run` on the CPU and the GPU, at batch 2, seq 16, the second sentence
padded (attention_mask 0 on its tail).

Checks:
- onnxruntime against a numpy implementation of BertModel + mean pooling +
  L2 normalisation written here from the weights (the model's initializers,
  by their HuggingFace names), both outputs: the graph computes that math;
- rlx (cpu, gpu) against onnxruntime, both outputs: max abs diff <= 1e-4 and
  normwise relative error ||a-b||/||b|| <= 1e-5;
- for the real model, one sentence pair tokenised here with its vocabulary
  (models/minilm_l6_vocab.txt): the numpy embedding and rlx's agree, and a
  paraphrase is closer than an unrelated sentence; the embedding of "This is
  an example sentence" starts with the values sentence-transformers gives.

Skips (exit 77) while rlx cannot load or run the model for want of a part
still being written (RLX_ERR_UNSUPPORTED), after the onnxruntime/numpy checks;
RLX_TEST_REQUIRE_E2E=1 makes that a failure. The GPU part is skipped when no
GPU adapter exists unless RLX_TEST_REQUIRE_GPU is set. RLX_MODELS_DIR names
another folder than models/ to look for minilm_l6.onnx in."""
import math
import os
import subprocess
import sys
import tempfile
import unicodedata

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

MAX_ABS = 1e-4    # rlx vs onnxruntime, every element
NORM_REL = 1e-5   # rlx vs onnxruntime, ||a-b|| / ||b||
REF_ABS = 2e-4    # onnxruntime vs the float64 numpy reference (float32 rounding over the layers)
REF_NORM = 2e-5
BATCH, SEQ, PAD_LEN = 2, 16, 9  # the second sentence has PAD_LEN real tokens

RLX = R.exe("rlx")
SCRIPT = os.path.join(R.ROOT, "scripts", "make_minilm_onnx.py")
MODELS = os.environ.get("RLX_MODELS_DIR", os.path.join(R.ROOT, "models"))
REAL = os.path.join(MODELS, "minilm_l6.onnx")
VOCAB = os.path.join(MODELS, "minilm_l6_vocab.txt")
seed = R.test_seed(7)
rng = np.random.default_rng(seed)
tmp = tempfile.mkdtemp(prefix="rlx_transformer_")
C = R.Checker("test_transformer")

R.built("rlx")

if os.path.exists(REAL):
    MODEL, real = REAL, True
else:
    MODEL, real = os.path.join(tmp, "bert_small.onnx"), False
    p = subprocess.run([sys.executable, SCRIPT, "--random", "--layers", "2", "--hidden", "64", "--heads", "4",
                        "--vocab", "1000", "--max-positions", "64", "--seed", str(seed), "-o", MODEL],
                       capture_output=True, text=True)
    print(p.stdout, p.stderr, sep="")
    if not C.check(p.returncode == 0, "make_minilm_onnx.py --random: exit %d" % p.returncode):
        C.done()
print("model:", MODEL, "(all-MiniLM-L6-v2)" if real else "(random weights)")

model = onnx.load(MODEL)
W = {t.name: NH.to_array(t) for t in model.graph.initializer}
hidden = W["embeddings.word_embeddings.weight"].shape[1]
vocab_size = W["embeddings.word_embeddings.weight"].shape[0]
n_layers = sum(1 for k in W if k.endswith("attention.self.query.weight_t"))
# the head count is the constant of the split-heads Concat (make_minilm_onnx.py names it n_heads_*)
n_heads = int(next(v for k, v in W.items() if k.startswith("n_heads_"))[0])
ln_eps = 1e-12
for n in model.graph.node:
    if n.op_type == "LayerNormalization":
        ln_eps = next(a.f for a in n.attribute if a.name == "epsilon")
        break


# ---------------------------------------------------------------- numpy reference (float64)
def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def bert_numpy(ids, mask, types):
    """BertModel (eval) + sentence-transformers mean pooling + normalisation,
    in float64 from the float32 weights."""
    w = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in W.items()}
    b, s = ids.shape
    hd = hidden // n_heads
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][types]
         + w["embeddings.position_embeddings.weight"][np.arange(s)][None])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], ln_eps)
    add_mask = (1.0 - mask.astype(np.float64))[:, None, None, :] * float(np.finfo(np.float32).min)

    def lin(t, name):
        return t @ w[name + ".weight_t"] + w[name + ".bias"]

    for i in range(n_layers):
        p = "encoder.layer.%d." % i

        def heads(t):
            return t.reshape(b, s, n_heads, hd).transpose(0, 2, 1, 3)
        q, k, v = (heads(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + add_mask
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        pr = sc / sc.sum(-1, keepdims=True)
        ctx = (pr @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        a = layer_norm(lin(ctx, p + "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], ln_eps)
        h = lin(a, p + "intermediate.dense")
        h = h * 0.5 * (1.0 + erf(h / math.sqrt(2.0)))
        x = layer_norm(lin(h, p + "output.dense") + a, w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"], ln_eps)
    m = mask.astype(np.float64)[..., None]
    mean = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    emb = mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
    return x, emb


def diffs(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want))), float(np.linalg.norm(got - want) / np.linalg.norm(want))


def compare(got, want, what, max_abs, norm_rel):
    if not C.check(got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape)):
        return
    if not C.check(np.all(np.isfinite(got)), "%s: non-finite values" % what):
        return
    a, r = diffs(got, want)
    print("%-44s max abs %.3g  normwise rel %.3g" % (what, a, r))
    C.check(a <= max_abs, "%s: max abs diff %.3g > %g" % (what, a, max_abs))
    C.check(r <= norm_rel, "%s: normwise rel %.3g > %g" % (what, r, norm_rel))


# ---------------------------------------------------------------- inputs: batch 2, seq 16, second padded
ids = rng.integers(1000, vocab_size, size=(BATCH, SEQ)) if real else rng.integers(1, vocab_size, size=(BATCH, SEQ))
ids = ids.astype(np.int64)
if real:
    ids[:, 0] = 101  # [CLS]
    ids[0, -1] = 102  # [SEP]
    ids[1, PAD_LEN - 1] = 102
mask = np.ones((BATCH, SEQ), np.int64)
mask[1, PAD_LEN:] = 0
ids[1, PAD_LEN:] = 0  # [PAD]
types = np.zeros((BATCH, SEQ), np.int64)
types[0, SEQ // 2:] = 1  # a sentence pair in the first row: both token types used
feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
out_names = [o.name for o in sess.get_outputs()]
C.check(out_names == ["last_hidden_state", "sentence_embedding"], "model outputs %r" % out_names)
ref = dict(zip(out_names, sess.run(None, feeds)))
np_hidden, np_emb = bert_numpy(ids, mask, types)
compare(ref["last_hidden_state"], np_hidden, "onnxruntime vs numpy: last_hidden_state", REF_ABS, REF_NORM)
compare(ref["sentence_embedding"], np_emb, "onnxruntime vs numpy: sentence_embedding", REF_ABS, REF_NORM)
# padding must not change the padded sentence's embedding (the mask works)
short = {k: v[1:2, :PAD_LEN] for k, v in feeds.items()}
emb_short = sess.run(["sentence_embedding"], short)[0]
compare(emb_short, ref["sentence_embedding"][1:2], "onnxruntime: unpadded vs padded embedding", 1e-5, 1e-5)

paths = []
for k, v in feeds.items():
    paths += ["--input", "%s=%s" % (k, os.path.join(tmp, k + ".npy"))]
    np.save(os.path.join(tmp, k + ".npy"), v)


# ---------------------------------------------------------------- rlx run
def rlx_run(feed_args, device, tag, extra=()):
    """Returns ({output: array}, None) or (None, why) for a skip."""
    od = os.path.join(tmp, "out_" + tag)
    rc, so, se = R.run([RLX, "run", MODEL, *feed_args, "--device", device, "--output-dir", od, *extra], timeout=900)
    print(so, se, sep="")
    if rc == 2 and "(RLX_ERR_UNSUPPORTED)" in se and not e2e_required:
        return None, "unsupported: " + se.strip()
    if device == "gpu" and rc == 1 and "RLX_ERR_NO_ADAPTER" in se and not gpu_required:
        return None, "no GPU adapter"
    if not C.check(rc == 0, "rlx run --device %s (%s): exit %d" % (device, tag, rc)):
        return None, "failed"
    outs = {}
    for n in out_names:
        f = os.path.join(od, n + ".npy")
        if C.check(os.path.exists(f), "rlx run --output-dir did not write %s" % f):
            outs[n] = np.load(f)
    return outs, None


missing_part = None
gpu_required = bool(os.environ.get("RLX_TEST_REQUIRE_GPU"))
e2e_required = bool(os.environ.get("RLX_TEST_REQUIRE_E2E"))
for device in ("cpu", "gpu"):
    got, why = rlx_run(paths, device, device, ("--warmup", "0", "--iters", "1"))
    if why and why.startswith("unsupported"):
        missing_part = why
        break
    if why:
        print("SKIP: rlx on %s: %s" % (device, why))
        continue
    for n in out_names:
        if n in got:
            compare(got[n], ref[n], "rlx %s vs onnxruntime: %s" % (device, n), MAX_ABS, NORM_REL)


# ---------------------------------------------------------------- the real model on a tokenised sentence pair
def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


def wordpiece(text, vocab):
    """BERT uncased tokenisation for plain ASCII text: lower case, split on
    whitespace and punctuation, greedy longest-match word pieces ('##')."""
    words, cur = [], ""
    for ch in text.lower():
        if ch.isspace() or unicodedata.category(ch).startswith("P"):
            if cur:
                words.append(cur)
            cur = ""
            if not ch.isspace():
                words.append(ch)
        else:
            cur += ch
    if cur:
        words.append(cur)
    out = []
    for wd in words:
        start, pieces = 0, []
        while start < len(wd):
            end = len(wd)
            while end > start and (wd[start:end] if start == 0 else "##" + wd[start:end]) not in vocab:
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[wd[start:end] if start == 0 else "##" + wd[start:end]])
            start = end
        out += pieces
    return [vocab["[CLS]"]] + out + [vocab["[SEP]"]]


if real and os.path.exists(VOCAB):
    vocab = load_vocab(VOCAB)
    sents = ["A man is playing a guitar on the stage.", "Someone performs music with a guitar.",
             "The quarterly report shows rising interest rates."]
    toks = [wordpiece(s, vocab) for s in sents]
    print("tokens:", toks)
    n = max(len(t) for t in toks)
    tid = np.zeros((len(sents), n), np.int64)
    tm = np.zeros((len(sents), n), np.int64)
    for i, t in enumerate(toks):
        tid[i, :len(t)], tm[i, :len(t)] = t, 1
    tt = np.zeros_like(tid)
    _, e_np = bert_numpy(tid, tm, tt)
    e_ort = sess.run(["sentence_embedding"], {"input_ids": tid, "attention_mask": tm, "token_type_ids": tt})[0]
    compare(e_ort, e_np, "onnxruntime vs numpy: sentence embeddings", REF_ABS, REF_NORM)
    cos = e_np @ e_np.T
    print("cosine similarities (numpy):\n", np.array2string(cos, precision=4))
    C.check(cos[0, 1] > 0.5 and cos[0, 1] > cos[0, 2] + 0.3,
            "paraphrase cosine %.3f vs unrelated %.3f" % (cos[0, 1], cos[0, 2]))
    # "This is an example sentence": the first values of the embedding that
    # sentence-transformers computes for it with all-MiniLM-L6-v2 (published
    # in the model's card); the tokens are [CLS] this is an example sentence [SEP]
    ex = [101, 2023, 2003, 2019, 2742, 6251, 102]
    C.check(wordpiece("This is an example sentence", vocab) == ex, "tokenisation of the example sentence")
    exf = {"input_ids": np.array([ex], np.int64), "attention_mask": np.ones((1, 7), np.int64),
           "token_type_ids": np.zeros((1, 7), np.int64)}
    e_ex = sess.run(["sentence_embedding"], exf)[0][0, :8]
    want = np.array([0.0676569, 0.0634960, 0.0487131, 0.0793050, 0.0374480, 0.0026528, 0.0393750, -0.0070984])
    print("example sentence embedding[:8]:", e_ex)
    C.check(np.max(np.abs(e_ex - want)) <= 2e-6,  # the published values have 6-7 digits
            "example sentence embedding differs from sentence-transformers' by %.3g" % np.max(np.abs(e_ex - want)))
    if missing_part is None:
        sp = []
        for k, v in (("input_ids", tid), ("attention_mask", tm), ("token_type_ids", tt)):
            np.save(os.path.join(tmp, "s_" + k + ".npy"), v)
            sp += ["--input", "%s=%s" % (k, os.path.join(tmp, "s_" + k + ".npy"))]
        got, why = rlx_run(sp, "cpu", "sentences", ("--warmup", "0", "--iters", "1"))
        if got and "sentence_embedding" in got:
            compare(got["sentence_embedding"], e_np, "rlx cpu vs numpy: sentence embeddings", MAX_ABS, NORM_REL)

if missing_part is not None:
    if C.failed:
        C.done()
    print("SKIP: rlx cannot run the model yet (%s); %d checks passed" % (missing_part, C.total))
    sys.exit(R.SKIP)
C.done()
