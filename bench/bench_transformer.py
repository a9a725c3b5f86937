#!/usr/bin/env python3
"""Time one forward of a BERT encoder in rlx (`rlx run --iters`) and in
onnxruntime, in the same run, on the same inputs, and compare the outputs.

  .venv/bin/python bench/bench_transformer.py [MODEL.onnx] [--batch 1 --seq 128
      --iters 20 --warmup 3 --device cpu --ort-threads 0]

MODEL defaults to models/minilm_l6.onnx (scripts/setup.sh --models); with
--random L,H,HEADS (e.g. 12,768,12 for BERT-base) a model with seeded random
weights is made by scripts/make_minilm_onnx.py instead. Inputs: random token
ids in [1000, vocab) with [CLS]/[SEP] at the ends, mask all ones, token types 0.
Prints the median (and p10/p90) of the steady runs of each; rlx's come from
its own timer (`rlx run` prints them), onnxruntime's from time.perf_counter
around InferenceSession.run. --ort-threads 0 leaves onnxruntime's default
(one thread per core); rlx's CPU GEMM uses OpenBLAS's default threads.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unit_s(v, u):
    return float(v) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[u]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, "models", "minilm_l6.onnx"))
    ap.add_argument("--random", help="L,H,HEADS: make a random-weight model of that size")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="rlx device (cpu, gpu, gpu:N)")
    ap.add_argument("--ort-threads", type=int, default=0)
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")),
                                                  "rlx"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rlx_bench_bert_")
    model = a.model
    if a.random:
        layers, hidden, heads = (int(v) for v in a.random.split(","))
        model = os.path.join(tmp, "bert_random.onnx")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random",
                        "--layers", str(layers), "--hidden", str(hidden), "--heads", str(heads), "-o", model],
                       check=True)
    if not os.path.exists(model):
        sys.exit("bench_transformer: %s is missing (scripts/setup.sh --models, or --random L,H,HEADS)" % model)

    so = ort.SessionOptions()
    if a.ort_threads:
        so.intra_op_num_threads = a.ort_threads
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    import onnx
    vocab = next(t.dims[0] for t in onnx.load(model).graph.initializer
                 if t.name == "embeddings.word_embeddings.weight")
    rng = np.random.default_rng(0)
    ids = rng.integers(min(1000, vocab - 1), vocab, size=(a.batch, a.seq)).astype(np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(tmp, k + ".npy"), v)
        args += ["--input", "%s=%s" % (k, os.path.join(tmp, k + ".npy"))]

    # rlx
    od = os.path.join(tmp, "out")
    p = subprocess.run([a.rlx, "run", model, *args, "--device", a.device, "--iters", str(a.iters),
                        "--warmup", str(a.warmup), "--output-dir", od], capture_output=True, text=True)
    if p.returncode:
        sys.exit("bench_transformer: rlx run failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    m = re.search(r"steady\s+median ([\d.]+) (\w+), p10 ([\d.]+) (\w+), p90 ([\d.]+) (\w+)", p.stdout)
    dev = re.search(r"^device: (.*)$", p.stdout, re.M)
    rlx_t = [unit_s(m.group(i), m.group(i + 1)) for i in (1, 3, 5)]

    # onnxruntime
    for _ in range(a.warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        ref = sess.run(None, feeds)
        ts.append(time.perf_counter() - t0)
    ort_t = [float(np.median(ts)), float(np.percentile(ts, 10)), float(np.percentile(ts, 90))]

    print("model %s, batch %d, seq %d, %d iters after %d warm-up" % (model, a.batch, a.seq, a.iters, a.warmup))
    print("rlx (%s): median %.2f ms  p10 %.2f  p90 %.2f" % (dev.group(1) if dev else a.device,
                                                          *(t * 1e3 for t in rlx_t)))
    print("onnxruntime (cpu, %s threads): median %.2f ms  p10 %.2f  p90 %.2f"
          % (a.ort_threads or "default", *(t * 1e3 for t in ort_t)))
    print("rlx / onnxruntime: %.2fx" % (rlx_t[0] / ort_t[0]))
    for o, r in zip(sess.get_outputs(), ref):
        g = np.load(os.path.join(od, o.name + ".npy")).astype(np.float64)
        r = r.astype(np.float64)
        print("%-20s max abs %.3g  normwise rel %.3g" % (o.name, np.max(np.abs(g - r)),
                                                           np.linalg.norm(g - r) / np.linalg.norm(r)))


if __name__ == "__main__":
    main()
