#!/usr/bin/env python3
"""fp16 models on CPU plans before and after widen_f16, against onnxruntime
on the same fp16 models (and the f32 ones) in the same rounds.

Makes an fp16 MobileNetV2 (bench/make_mobilenet_v2.py), an fp16 small BERT
(scripts/make_minilm_onnx.py --random, default size, sequence 128) and the
fp16 PP-OCRv4 detector (models/ppocrv4_det.onnx, input 1x3x256x256), all
with onnxruntime's float16 converter (keep_io_types), then runs interleaved
rounds per thread count: rlx before (passes.disable=widen_f16: every f16
node on the reference kernels), rlx after, onnxruntime fp16 and f32
(bench/ort_time.py). Prints one line per measurement and the medians over
the rounds, with `uptime` before each round.

    bench/f16_cpu.py [--rounds 3] [--threads 1,2] [--dir /tmp/rlx_f16_cpu] [--models mnv2,minilm,ppocr]
                     [--rlx build/rlx] [--warmup 3] [--no-before]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
from onnxruntime.transformers import float16

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RLX = os.path.join(ROOT, "build", "rlx")


def sh(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(args), r.stderr))
    return r.stdout


def models(d):
    os.makedirs(d, exist_ok=True)
    out = {}
    mn, bert = os.path.join(d, "mnv2.onnx"), os.path.join(d, "minilm.onnx")
    if not os.path.exists(mn):
        sh([sys.executable, os.path.join(ROOT, "bench", "make_mobilenet_v2.py"), mn])
    if not os.path.exists(bert):
        sh([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random", "-o", bert])
    rng = np.random.default_rng(0)
    S = 128
    feeds = {
        "mnv2": {"input": rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)},
        "minilm": {"input_ids": rng.integers(0, 30000, (1, S)).astype(np.int64),
                   "attention_mask": np.ones((1, S), np.int64), "token_type_ids": np.zeros((1, S), np.int64)},
        "ppocr": {"x": rng.uniform(0, 1, (1, 3, 256, 256)).astype(np.float32)},
    }
    for name, f32 in [("mnv2", mn), ("minilm", bert), ("ppocr", os.path.join(ROOT, "models", "ppocrv4_det.onnx"))]:
        f16 = os.path.join(d, name + "_fp16.onnx")
        if not os.path.exists(f16):
            onnx.save(float16.convert_float_to_float16(onnx.load(f32), keep_io_types=True), f16)
        args = []
        for k, v in feeds[name].items():
            p = os.path.join(d, "%s_%s.npy" % (name, k))
            np.save(p, v)
            args.append("%s=%s" % (k, p))
        out[name] = (f32, f16, args)
    return out


def rlx_ms(model, inputs, threads, before, warmup=3):
    if before is None:  # --no-before
        return float("nan")
    cmd = [RLX, "bench", model, "--json", "--quiet", "--option", "cpu.threads=%d" % threads]
    cmd += ["--warmup", "0", "--iters", "2", "--option", "passes.disable=widen_f16"] if before else \
        ["--warmup", str(warmup), "--iters", "10"]
    for a in inputs:
        cmd += ["--input", a]
    return json.loads(sh(cmd))["wall_ms"]["median"]


def ort_ms(model, inputs, threads, warmup=3):
    out = sh([sys.executable, os.path.join(ROOT, "bench", "ort_time.py"), model] + inputs +
             ["--threads", str(threads), "--iters", "10", "--warmup", str(warmup)])
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    global RLX
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dir", default="/tmp/rlx_f16_cpu")
    ap.add_argument("--models", default="mnv2,minilm,ppocr")
    ap.add_argument("--rlx", default=None, help="the rlx binary (default build/rlx)")
    ap.add_argument("--warmup", type=int, default=3,
                    help="warm-up runs of the timed runners (the 16-core host needs ~15: BENCHMARKS.md)")
    ap.add_argument("--no-before", action="store_true", help="skip the slow 'before' runs (widen_f16 off)")
    a = ap.parse_args()
    RLX = a.rlx or RLX
    ms = models(a.dir)
    res = {}
    for r in range(a.rounds):
        print("round %d: %s" % (r + 1, sh(["uptime"]).strip()), flush=True)
        for t in [int(x) for x in a.threads.split(",")]:
            for name in a.models.split(","):
                f32, f16, inputs = ms[name]
                row = {"before": rlx_ms(f16, inputs, t, None if a.no_before else True),
                       "after": rlx_ms(f16, inputs, t, False, a.warmup),
                       "ort_fp16": ort_ms(f16, inputs, t, a.warmup), "ort_f32": ort_ms(f32, inputs, t, a.warmup)}
                print("  t%d %-7s " % (t, name) + "  ".join("%s %.2f ms" % kv for kv in row.items()), flush=True)
                for k, v in row.items():
                    res.setdefault((t, name, k), []).append(v)
    print("medians over %d rounds:" % a.rounds)
    for t in [int(x) for x in a.threads.split(",")]:
        for name in a.models.split(","):
            m = {k: statistics.median(res[(t, name, k)]) for k in ["before", "after", "ort_fp16", "ort_f32"]}
            print("  t%d %-7s before %.1f  after %.2f  ort fp16 %.2f  ort f32 %.2f  after/before %.4f  "
                  "after/ort fp16 %.2f  after/ort f32 %.2f" % (t, name, m["before"], m["after"], m["ort_fp16"],
                                                              m["ort_f32"], m["after"] / m["before"],
                                                              m["after"] / m["ort_fp16"], m["after"] / m["ort_f32"]))


if __name__ == "__main__":
    main()
