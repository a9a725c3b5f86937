#!/usr/bin/env python3
"""Memory-plan numbers for BENCHMARKS.md ("Memory plan"): for each model,
the arena as planned, without reuse and the lower bound (rlx info --plan),
the work per forward pass (CPU steps; GPU dispatches and steps left on the
CPU, counted from RLX_GPU_TRACE), and the time per forward pass on the CPU
and on the GPU adapter (rlx run, median of steady runs).

usage: bench/memplan_bench.py [--rlx build/rlx] [--gpu-iters N] [--cpu-iters N]
                              [--no-gpu-time] [MODEL[:NAME=DIMS] ...]
Default models: the demo (models/ppocrv4_det.onnx at 1x3x192x384) and the
ONNX light models. Prints a Markdown table."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(args, capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def plan(rlx, model, shapes, device):
    args = [rlx, "info", model, "--plan", "--top", "0", "--device", device]
    for s in shapes:
        args += ["--shape", s]
    rc, so, se = run(args, {"RLX_GPU_TRACE": "1"})
    if rc != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), se.strip().splitlines()[-1:]))

    def grab(label):
        m = re.search(r"^  %s\s+.*?\((\d+) bytes\)" % re.escape(label), so, re.M)
        if m:
            return int(m.group(1))
        m = re.search(r"^  %s\s+(\d+) B" % re.escape(label), so, re.M)
        return int(m.group(1)) if m else None
    steps = re.search(r"^steps: (\d+) \((\d+) on the device, (\d+) on the CPU fallback, (\d+) views\)", so, re.M)
    dispatches = 0
    for line in se.splitlines():
        if line.startswith("webgpu: step "):
            dispatches += len(re.findall(r" [a-z_0-9]+\[\d+,\d+\]", line))
    return {
        "arena": grab("arena as planned:"), "noreuse": grab("without reuse (sum of tensors):"),
        "bound": grab("peak live (lower bound):"), "weights": grab("weights (outside the arena):"),
        "steps": int(steps.group(1)), "device_steps": int(steps.group(2)), "cpu_steps": int(steps.group(3)),
        "views": int(steps.group(4)), "dispatches": dispatches,
    }


def timing(rlx, model, shapes, device, warmup, iters):
    args = [rlx, "run", model, "--device", device, "--warmup", str(warmup), "--iters", str(iters)]
    for s in shapes:
        args += ["--shape", s]
    rc, so, se = run(args)
    if rc != 0:
        return None
    m = re.search(r"steady\s+median ([\d.]+) (us|ms|s)\b", so)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def mib(b):
    return "-" if b is None else "%.2f" % (b / 1048576.0)


def fmt_t(t):
    if t is None:
        return "-"
    return "%.1f ms" % (t * 1e3) if t < 1 else "%.2f s" % t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--gpu-iters", type=int, default=1)
    ap.add_argument("--cpu-iters", type=int, default=3)
    ap.add_argument("--no-gpu-time", action="store_true")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    models = a.models or (["%s/models/ppocrv4_det.onnx:x=1x3x192x384" % ROOT] + [
        os.path.join(ROOT, "third_party/onnx/backend-test-data/light", f)
        for f in sorted(os.listdir(os.path.join(ROOT, "third_party/onnx/backend-test-data/light")))
        if f.endswith(".onnx")])
    print("| model | input | arena planned (MiB) | no reuse (MiB) | lower bound (MiB) | planned / bound | "
          "weights (MiB) | CPU steps | GPU dispatches (+ CPU steps) | CPU time | GPU time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in models:
        parts = spec.split(":")
        model, shapes = parts[0], parts[1:]
        name = os.path.basename(model).replace(".onnx", "")
        try:
            c = plan(a.rlx, model, shapes, "cpu")
            g = plan(a.rlx, model, shapes, "gpu")
        except RuntimeError as e:
            print("| %s | error: %s |" % (name, e))
            continue
        tc = timing(a.rlx, model, shapes, "cpu", 1, a.cpu_iters)
        tg = None if a.no_gpu_time else timing(a.rlx, model, shapes, "gpu", 0, a.gpu_iters)
        ratio = "%.3f" % (c["arena"] / c["bound"]) if c["bound"] else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %d | %d (+ %d) | %s | %s |" % (
            name, ",".join(shapes) or "declared", mib(c["arena"]), mib(c["noreuse"]), mib(c["bound"]), ratio,
            mib(c["weights"]), c["device_steps"], g["dispatches"], g["cpu_steps"], fmt_t(tc), fmt_t(tg)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
