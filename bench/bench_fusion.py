#!/usr/bin/env python3
"""Measure what the fusion passes change for one model: program steps,
GPU dispatches and CPU-fallback steps per forward, and the wall time per
forward with the passes off (RLX_DISABLE_PASSES) and on.

  .venv/bin/python bench/bench_fusion.py MODEL.onnx [--device cpu|gpu]
      [--runs 30 --warmup 3] [--shape NAME=1x3x224x224] [--input NAME=FILE.npy]
      [--label TEXT]

Timing: one process holds both sessions (through the Python binding,
python/rlx, on build/librlx.so) and alternates single forwards, off, on,
off, on, ..., so that whatever else loads the machine meets both alike;
each is the median over --runs forwards (input upload and output readback
included, numpy conversion too: negligible next to a forward here). The
plan counts come from `rlx run --report` (RLX_GPU_TRACE=1 lists each GPU
step's dispatches). Prints one Markdown table row: model, device, steps
off -> on, GPU dispatches off -> on, CPU-fallback steps off -> on, median
off, median on, on/off, and the p10-p90 ranges on stderr.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
FUSIONS = "fuse_activation,fuse_conv_residual,fuse_attention,fuse_add_layernorm,fuse_elementwise"


def plan_counts(rlx_bin, model, device, args, off):
    """steps, dispatches and CPU-fallback steps of the compiled plan."""
    env = dict(os.environ)
    env.pop("RLX_DISABLE_PASSES", None)
    if off:
        env["RLX_DISABLE_PASSES"] = FUSIONS
    gpu = device.startswith("gpu")
    if gpu:
        env["RLX_GPU_TRACE"] = "1"
    cmd = [rlx_bin, "run", model, "--device", device, "--iters", "0", "--warmup", "0", "--report"] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_fusion: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    out = p.stdout + p.stderr
    steps = fallback = 0
    for m in re.finditer(r"^  (\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M):
        steps += int(m.group(3)) + int(m.group(4)) + int(m.group(6))
        fallback += int(m.group(4))
    disp = None
    if gpu:
        disp = sum(len(re.findall(r" \S+\[\d+,\d+\]", l)) for l in out.splitlines() if l.startswith("webgpu: step "))
    return steps, disp, fallback


def make_inputs(model, shapes, files, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in model.inputs:
        name = info["name"]
        if name in files:
            feeds[name] = np.load(files[name])
            continue
        dims = shapes.get(name) or [d if isinstance(d, int) else 1 for d in info["shape"]]
        dt = np.dtype(info["dtype"])
        if dt.kind == "f":
            feeds[name] = rng.uniform(-1, 1, dims).astype(dt)
        elif dt.kind == "b":
            feeds[name] = rng.integers(0, 2, dims).astype(dt)
        else:
            feeds[name] = rng.integers(0, 10, dims).astype(dt)
    return feeds


def fmt_t(s):
    return "%.3g s" % s if s >= 1 else "%.3g ms" % (s * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=30, help="timed forwards of each; 0: plan counts only")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--shape", action="append", default=[], help="NAME=AxBxC for a generated input")
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--label", help="model name in the row (default: the file name)")
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")), "rlx"))
    a = ap.parse_args()
    shapes = {k: [int(d) for d in v.split("x")] for k, v in (s.split("=", 1) for s in a.shape)}
    files = dict(s.split("=", 1) for s in a.input)
    run_args = []
    for s in a.shape:
        run_args += ["--shape", s]
    for s in a.input:
        run_args += ["--input", s]
    counts = {off: plan_counts(a.rlx, a.model, a.device, run_args, off) for off in (True, False)}
    label = a.label or os.path.basename(a.model)
    gpu = a.device.startswith("gpu")
    (s0, d0, f0), (s1, d1, f1) = counts[True], counts[False]
    timing = "not timed | | "
    if a.runs > 0:
        import rlx
        model = rlx.Model(a.model)
        feeds = make_inputs(model, shapes, files, a.seed)
        sess = {}
        for off in (True, False):  # plans compile on the first run, reading RLX_DISABLE_PASSES then
            if off:
                os.environ["RLX_DISABLE_PASSES"] = FUSIONS
            else:
                os.environ.pop("RLX_DISABLE_PASSES", None)
            sess[off] = rlx.Session(model, a.device)
            sess[off].run(feeds)
        os.environ.pop("RLX_DISABLE_PASSES", None)
        for _ in range(a.warmup):
            for off in (True, False):
                sess[off].run(feeds)
        times = {True: [], False: []}
        for _ in range(a.runs):
            for off in (True, False):
                t0 = time.perf_counter()
                sess[off].run(feeds)
                times[off].append(time.perf_counter() - t0)
        t_off, t_on = statistics.median(times[True]), statistics.median(times[False])
        timing = "%s | %s | %.2f" % (fmt_t(t_off), fmt_t(t_on), t_on / t_off)
        for off in (True, False):
            q = np.percentile(times[off], [10, 90])
            print("  %s: median %s, p10 %s, p90 %s over %d forwards" % ("off" if off else "on ", fmt_t(
                statistics.median(times[off])), fmt_t(q[0]), fmt_t(q[1]), a.runs), file=sys.stderr)
    row = "| %s | %s | %d -> %d | %s | %s | %s |" % (
        label, a.device, s0, s1, "%d -> %d" % (d0, d1) if gpu else "-", "%d -> %d" % (f0, f1) if gpu else "-", timing)
    print(row, flush=True)


if __name__ == "__main__":
    main()
