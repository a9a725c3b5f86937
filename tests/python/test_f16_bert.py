"""An fp16 transformer as users get one (issue 12): a small BERT encoder
(scripts/make_minilm_onnx.py --random: 2 layers, hidden 128, 4 heads)
converted with onnxruntime's float16 converter (keep_io_types: f32 at the
edges, Casts, f16 inside), run on the GPU:
 - no node runs on the CPU (attention fuses into one f16 rlx.Attention per
   layer, the LayerNorms into rlx.AddLayerNormalization), checked in the
   dispatch report;
 - its outputs against the f32 model on onnxruntime: normwise relative
   error below 3e-3 and below 3x that of onnxruntime running the same fp16
   model (~7e-4 here; rlx computes attention scores and probabilities in
   f32, as its rounding policy says);
 - the CPU backend likewise.
Skips (exit 77) while rlx is not built, without onnxruntime's converter, or
when the GPU has no shader-f16 (then f16 nodes run on the CPU by design)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
try:
    import onnx
    import onnxruntime as ort
    from onnxruntime.transformers import float16
except ImportError as e:
    R.skip(e)
C = R.Checker("test_f16_bert")
tmp = tempfile.mkdtemp(prefix="rlx_f16_bert_")
f32 = os.path.join(tmp, "bert.onnx")
f16 = os.path.join(tmp, "bert16.onnx")
rc, so, se = R.run([sys.executable, os.path.join(R.ROOT, "scripts", "make_minilm_onnx.py"), "--random", "--layers", "2",
                    "--hidden", "128", "--heads", "4", "--intermediate", "512", "--vocab", "1000", "-o", f32])
if not C.check(rc == 0, "make_minilm_onnx failed: %s" % se):
    C.done()
onnx.save(float16.convert_float_to_float16(onnx.load(f32), keep_io_types=True), f16)

rng = np.random.default_rng(int(os.environ.get("RLX_TEST_SEED", "3")))
S = 16
feeds = {"input_ids": rng.integers(0, 1000, (1, S)).astype(np.int64), "attention_mask": np.ones((1, S), np.int64),
         "token_type_ids": np.zeros((1, S), np.int64)}
feeds["attention_mask"][0, 12:] = 0  # padding: the mask matters
names = ["last_hidden_state", "sentence_embedding"]
ref = ort.InferenceSession(f32, providers=["CPUExecutionProvider"]).run(names, feeds)
o16 = ort.InferenceSession(f16, providers=["CPUExecutionProvider"]).run(names, feeds)


def rel(a, b):
    b = b.astype(np.float64)
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


args = []
for k, v in feeds.items():
    p = os.path.join(tmp, k + ".npy")
    np.save(p, v)
    args += ["--input", "%s=%s" % (k, p)]
rc, devices, _ = R.run([RLX, "devices"])
gpu = "shader-f16 yes" in devices
if not gpu:
    print("no GPU with shader-f16: the CPU only")
for dev in ["cpu", "gpu"] if gpu else ["cpu"]:
    out = os.path.join(tmp, "out_" + dev)
    rc, so, se = R.run([RLX, "run", f16, "--device", dev, "--iters", "0", "--report", "--output-dir", out] + args)
    if not C.check(rc == 0, "%s: rlx run failed:\n%s%s" % (dev, so, se)):
        continue
    for i, name in enumerate(names):
        e, eo = rel(np.load(os.path.join(out, name + ".npy")), ref[i]), rel(o16[i], ref[i])
        print("%s %s: rlx fp16 vs f32 %.3g, onnxruntime fp16 vs f32 %.3g" % (dev, name, e, eo))
        C.check(e < 3e-3 and e < 3 * eo, "%s %s: relative error %.3g (onnxruntime fp16: %.3g)" % (dev, name, e, eo))
    if dev == "gpu":
        rows = [r for r in (ln.split() for ln in so.splitlines()) if len(r) == 6 and all(x.isdigit() for x in r[1:])]
        fallback = [r for r in rows if r[3] != "0"]
        C.check(len(rows) > 10, "gpu: no dispatch report rows in:\n" + so)
        C.check(not fallback, "gpu: nodes ran on the CPU: %r\n%s" % (fallback, so))
        att = [r for r in rows if r[0] == "rlx.Attention"]
        C.check(att and att[0][1:3] == ["2", "2"], "gpu: the two layers' attention is not fused on the GPU:\n" + so)
C.done()
