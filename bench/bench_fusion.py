#!/usr/bin/env python3
"""Measure what the fusion passes change for one model: program steps,
GPU dispatches and CPU-fallback steps per forward, and the wall time per
forward, with the passes off (RLX_DISABLE_PASSES) and on, in alternating
rounds of `rlx run --iters` in the same session of this script.

  .venv/bin/python bench/bench_fusion.py MODEL.onnx [--device cpu|gpu]
      [--rounds 5 --iters 10 --warmup 2] [-- extra `rlx run` arguments]

Prints one Markdown table row: model, device, steps off -> on, dispatches
off -> on (GPU), CPU-fallback steps (GPU), the median over rounds of each
round's median time off and on, and on/off. The time of one round is what
`rlx run` reports as the median of its steady runs (input upload and
output readback included).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUSIONS = "fuse_activation,fuse_attention,fuse_add_layernorm,fuse_elementwise"
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def rlx(args, off, extra_env=None):
    env = dict(os.environ)
    env.pop("RLX_DISABLE_PASSES", None)
    if off:
        env["RLX_DISABLE_PASSES"] = FUSIONS
    env.update(extra_env or {})
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_fusion: %s failed:\n%s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout + p.stderr


def steady_s(out):
    m = re.search(r"steady\s+median ([0-9.]+) (s|ms|us|ns)", out)
    if not m:
        sys.exit("bench_fusion: no steady time in:\n" + out)
    return float(m.group(1)) * UNITS[m.group(2)]


def plan_counts(args, off, gpu):
    """steps, dispatches and CPU-fallback steps of the compiled plan."""
    out = rlx(args + ["--iters", "0", "--warmup", "0", "--report"], off, {"RLX_GPU_TRACE": "1"} if gpu else None)
    steps = fallback = 0
    for m in re.finditer(r"^  (\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M):
        native, fb, view = int(m.group(3)), int(m.group(4)), int(m.group(6))
        steps += native + fb + view
        fallback += fb
    disp = None
    if gpu:
        disp = 0
        for line in out.splitlines():
            if line.startswith("webgpu: step "):
                disp += len(re.findall(r" \S+\[\d+,\d+\]", line))
    return steps, disp, fallback


def fmt_t(s):
    return "%.3g s" % s if s >= 1 else "%.3g ms" % (s * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=5, help="0: plan counts only")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")), "rlx"))
    ap.add_argument("--label", help="model name in the row (default: the file name)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.extra = extra
    gpu = a.device.startswith("gpu")
    base = [a.rlx, "run", a.model, "--device", a.device] + a.extra
    counts = {off: plan_counts(base, off, gpu) for off in (True, False)}
    times = {True: [], False: []}
    for _ in range(a.rounds):
        for off in (True, False):
            times[off].append(steady_s(rlx(base + ["--iters", str(a.iters), "--warmup", str(a.warmup)], off)))
    (s0, d0, f0), (s1, d1, f1) = counts[True], counts[False]
    label = a.label or os.path.basename(a.model)
    if a.rounds > 0:
        t_off, t_on = statistics.median(times[True]), statistics.median(times[False])
        timing = "%s | %s | %.2f" % (fmt_t(t_off), fmt_t(t_on), t_on / t_off)
    else:
        timing = "not timed | | "
    row = "| %s | %s | %d -> %d | %s | %s | %s |" % (
        label, a.device, s0, s1, "%d -> %d" % (d0, d1) if gpu else "-", "%d -> %d" % (f0, f1) if gpu else "-", timing)
    print(row, flush=True)
    print("  rounds off: %s" % ", ".join(fmt_t(t) for t in times[True]), file=sys.stderr)
    print("  rounds on:  %s" % ", ".join(fmt_t(t) for t in times[False]), file=sys.stderr)


if __name__ == "__main__":
    main()
