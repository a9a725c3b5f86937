#!/usr/bin/env python3
"""Times an ONNX model with onnxruntime (CPU) on inputs from .npy files:
median and p10/p90 of steady runs, in milliseconds, as one JSON line.

    bench/ort_time.py MODEL.onnx NAME=FILE.npy [...] [--iters 20] [--warmup 3]
                      [--threads N] [--save-output FILE.npy]
"""
import argparse
import json
import sys
import time

import numpy as np
import onnxruntime as ort


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("inputs", nargs="+", help="NAME=FILE.npy")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: onnxruntime's default)")
    ap.add_argument("--save-output", help="write output 0 as .npy")
    a = ap.parse_args()
    so = ort.SessionOptions()
    if a.threads:
        so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for spec in a.inputs:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)
    for _ in range(a.warmup):
        out = sess.run(None, feeds)
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        out = sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    if a.save_output:
        np.save(a.save_output, out[0])
    t = np.array(times)
    print(json.dumps({"runtime": "onnxruntime " + ort.__version__, "provider": "CPU", "threads": a.threads or "default",
                      "median_ms": float(np.median(t)), "p10_ms": float(np.percentile(t, 10)),
                      "p90_ms": float(np.percentile(t, 90)), "iters": a.iters}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
