#!/usr/bin/env python3
"""TFLOP/s of an f16 GEMM on the GPU (issue 12): one-node MatMul models
with f16 tensors (A an input, B a constant weight; the kernels sum in f32
and round once), timed with `rlx bench --device gpu --json` (GPU
timestamps, median), beside the same product in f32 and in f16 mode
(f32 tensors, weights stored as binary16).

  .venv/bin/python bench/f16_gemm.py [--device gpu] [--iters 20] [--small]

Shapes: 4096 x 4096 x 4096 and the GEMV 1 x 4096 x 4096 (M x N x K);
--small divides every dim by 16 (a correctness run on lavapipe). One line
per (shape, variant): milliseconds and TFLOP/s (2 M N K / time).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def matmul_model(M, N, K, f16):
    """y[M, N] = a[M, K] @ w[K, N], w a constant; every tensor f16 or f32."""
    dt, npdt = (TensorProto.FLOAT16, np.float16) if f16 else (TensorProto.FLOAT, np.float32)
    w = np.random.default_rng(0).uniform(-1, 1, (K, N)).astype(npdt)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "gemm",
                          [helper.make_tensor_value_info("a", dt, [M, K])],
                          [helper.make_tensor_value_info("y", dt, [M, N])], [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--small", action="store_true", help="every dim / 16 (lavapipe)")
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    a = ap.parse_args()
    div = 16 if a.small else 1
    shapes = [(4096 // div, 4096 // div, 4096 // div), (1, 4096 // div, 4096 // div)]
    variants = [("f16 tensors", True, []), ("f32", False, []), ("f32, f16 mode", False, ["--option", "gpu.f16=1"])]
    with tempfile.TemporaryDirectory() as tmp:
        for M, N, K in shapes:
            for name, f16, opts in variants:
                path = os.path.join(tmp, "mm.onnx")
                onnx.save(matmul_model(M, N, K, f16), path)
                cmd = [a.rlx, "bench", path, "--device", a.device, "--iters", str(a.iters), "--warmup", "3",
                       "--json"] + opts
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode:
                    print("%dx%dx%d %-14s error: %s" % (M, N, K, name, (p.stderr.strip().splitlines() or ["?"])[-1]))
                    continue
                r = json.loads(p.stdout)
                ms = (r.get("gpu_ms") or {}).get("median") or (r.get("wall_ms") or {}).get("median")
                src = "gpu" if (r.get("gpu_ms") or {}).get("median") else "wall"
                cpu_steps = r.get("cpu_steps")
                print("%dx%dx%d %-14s %9.3f ms (%s)  %8.3f TFLOP/s  cpu steps %s" %
                      (M, N, K, name, ms, src, 2.0 * M * N * K / (ms * 1e-3) / 1e12, cpu_steps))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
