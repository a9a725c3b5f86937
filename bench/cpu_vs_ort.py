#!/usr/bin/env python3
"""rlx's CPU backend against onnxruntime's CPU execution provider on the
convolutional models, same machine, same inputs, same thread count:
milliseconds per forward pass, the median over --rounds rounds of each
runner's median of --iters steady runs (rounds interleave the runners, so
that load from elsewhere hits them alike). Prints a markdown table.

    python3 bench/cpu_vs_ort.py [--rlx build/rlx] [--base-rlx OTHER/rlx]
                                [--base-env KEY=VALUE ...] [--threads N]
                                [--rounds 3] [--iters 20]
                                [--models ppocr640,resnet50,mobilenet_v2,shufflenet]

--threads N sets RLX_NUM_THREADS for rlx and intra_op_num_threads for
onnxruntime (0: each one's default, one thread per core). --base-rlx adds a
column for another rlx binary (e.g. a build of main) run the same way;
--base-env sets environment variables for that column only (e.g.
--base-rlx build/rlx --base-env RLX_CPU_GEMM=blas compares the two thread
policies of one binary).
Models: the demo's PP-OCRv4 detector at 1x3x640x640 (models/), the ONNX
suite's light/ ResNet-50 and ShuffleNet, and a MobileNetV2 with random
weights written by bench/make_mobilenet_v2.py (numpy + onnx only).
Inputs: uniform [-1, 1), seed 0, written as .npy to --work.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIGHT = os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light")


def models(work, ocr_model, light):
    mnv2 = os.path.join(work, "mobilenet_v2.onnx")
    return {
        "ppocr640": (ocr_model, "x", (1, 3, 640, 640), None),
        "resnet50": (os.path.join(light, "light_resnet50.onnx"), "gpu_0/data_0", (1, 3, 224, 224), None),
        "mobilenet_v2": (mnv2, "input", (1, 3, 224, 224), "mnv2"),
        "shufflenet": (os.path.join(light, "light_shufflenet.onnx"), "gpu_0/data_0", (1, 3, 224, 224), None),
    }


def run_rlx(rlx, model, name, npy, threads, iters, warmup, extra_env=None):
    env = dict(os.environ)
    env.update(extra_env or {})
    if threads:
        env["RLX_NUM_THREADS"] = str(threads)
    out = subprocess.run([rlx, "bench", model, "--device", "cpu", "--input", f"{name}={npy}", "--iters", str(iters),
                          "--warmup", str(warmup), "--json"], env=env, capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(f"{rlx} bench {model}: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)["wall_ms"]["median"]


def run_ort(model, name, npy, threads, iters, warmup):
    cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model, f"{name}={npy}", "--iters", str(iters),
           "--warmup", str(warmup)]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(f"ort_time {model}: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--base-env", action="append", default=[], help="KEY=VALUE for the --base-rlx runs")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", default="ppocr640,resnet50,mobilenet_v2,shufflenet")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_cpu_vs_ort"))
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--light-dir", default=LIGHT)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    table = models(a.work, a.ocr_model, a.light_dir)
    rows = []
    for key in a.models.split(","):
        path, name, shape, gen = table[key]
        if gen == "mnv2" and not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "make_mobilenet_v2.py"), path], check=True)
        if not os.path.exists(path):
            print(f"skipping {key}: {path} is missing", file=sys.stderr)
            continue
        npy = os.path.join(a.work, f"{key}_input.npy")
        np.save(npy, np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))
        res = {"rlx": [], "base": [], "ort": []}
        for r in range(a.rounds):
            res["rlx"].append(run_rlx(a.rlx, path, name, npy, a.threads, a.iters, a.warmup))
            if a.base_rlx:
                base_env = dict(kv.split("=", 1) for kv in a.base_env)
                res["base"].append(run_rlx(a.base_rlx, path, name, npy, a.threads, a.iters, a.warmup, base_env))
            res["ort"].append(run_ort(path, name, npy, a.threads, a.iters, a.warmup))
            print(f"{key} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in res.items() if v),
                  file=sys.stderr)
        rows.append((key, {k: statistics.median(v) for k, v in res.items() if v},
                     {k: min(v) for k, v in res.items() if v}))
    thr = a.threads or f"default ({os.cpu_count()} cores)"
    print(f"\nthreads: {thr}; ms per forward pass: median over {a.rounds} rounds of each round's median of "
          f"{a.iters} runs (in brackets: the best round)\n")
    head = ("| model | " + ("rlx base | " if a.base_rlx else "") + "rlx | onnxruntime | rlx / ort |" +
            (" base / rlx |" if a.base_rlx else ""))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for key, m, b in rows:
        base = f"{m['base']:.1f} ({b['base']:.1f}) | " if a.base_rlx else ""
        gain = f" {m['base'] / m['rlx']:.2f} |" if a.base_rlx else ""
        print(f"| {key} | {base}{m['rlx']:.1f} ({b['rlx']:.1f}) | {m['ort']:.1f} ({b['ort']:.1f}) | "
              f"{m['rlx'] / m['ort']:.2f} |{gain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
