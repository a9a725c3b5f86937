#!/usr/bin/env python3
"""TFLOP/s of an f16 GEMM on the GPU (issue 12): one-node MatMul models
with f16 tensors (A an input, B a constant weight; the kernels sum in f32
and round once), timed with `rlx bench --device gpu --json` (GPU
timestamps, median), beside the same product in f32 and in f16 mode
(f32 tensors, weights stored as binary16).

  .venv/bin/python bench/f16_gemm.py [--device gpu] [--iters 20] [--small] [--shapes LIST] [--variants LIST]
  .venv/bin/python bench/f16_gemm.py --f16math      # 4096^3, 1024x768x3072, 128x768x768: f32 vs f16 sums
  .venv/bin/python bench/f16_gemm.py --errors       # max error against float64, f32 and f16 sums
  .venv/bin/python bench/f16_gemm.py --option gpu.gemm_tile=8x8,16x16,8   # every variant on one tile

Shapes (M x N x K, --shapes picks by name, default all): sq4096 (4096^3),
gemv4096 (the GEMV 1 x 4096 x 4096), gemv11008 (1 x 11008 x 4096, an LLM's
up projection) and gemv11008k (1 x 4096 x 11008, its down projection),
gemv4096t (1 x 4096 x 4096 as Gemm transB: weights [N, K]), the BERT-base
linear layers at sequence 128, batch 1 (bert_qkv 128 x 768 x 768,
bert_ffn1 128 x 3072 x 768, bert_ffn2 128 x 768 x 3072) and batch 8
(bert8_*: M = 1024). --small divides every dim by 16 (a correctness run
on lavapipe). Variants (--variants, default all): f16 (f16 tensors), f32,
f16mode (f32 tensors, gpu.f16=1), f16tiled (f16 tensors on the tiled
kernel, gpu.gemm_kernel=tiled: the path before the GEMV kernel), f32tiled,
f16acc (f16 tensors, gpu.f16_accumulate=f16: packed f16 FMAs into f16
partial sums over gpu.f16_block = 32 elements of k), f16acc16, f16acc64
(blocks of 16, 64).
One line per (shape, variant): milliseconds, TFLOP/s (2 M N K / time) and
the weights' read rate in GB/s (what bounds a GEMV).
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


SHAPES = {
    "sq4096": (4096, 4096, 4096, False),
    "gemv4096": (1, 4096, 4096, False),
    "gemv11008": (1, 11008, 4096, False),
    "gemv11008k": (1, 4096, 11008, False),
    "gemv4096t": (1, 4096, 4096, True),
    "bert_qkv": (128, 768, 768, False),
    "bert_ffn1": (128, 3072, 768, False),
    "bert_ffn2": (128, 768, 3072, False),
    "bert8_qkv": (1024, 768, 768, False),
    "bert8_ffn1": (1024, 3072, 768, False),
    "bert8_ffn2": (1024, 768, 3072, False),
}
VARIANTS = {
    "f16": ("f16 tensors", True, []),
    "f32": ("f32", False, []),
    "f16mode": ("f32, f16 mode", False, ["--option", "gpu.f16=1"]),
    "f16tiled": ("f16, tiled", True, ["--option", "gpu.gemm_kernel=tiled"]),
    "f32tiled": ("f32, tiled", False, ["--option", "gpu.gemm_kernel=tiled"]),
    "f16acc": ("f16, f16 sums", True, ["--option", "gpu.f16_accumulate=f16"]),
    "f16acc16": ("f16, f16 sums/16", True, ["--option", "gpu.f16_accumulate=f16", "--option", "gpu.f16_block=16"]),
    "f16acc64": ("f16, f16 sums/64", True, ["--option", "gpu.f16_accumulate=f16", "--option", "gpu.f16_block=64"]),
}
# the BERT shapes of issue 12's f16 GEMM item (M x N x K): 1024 x 768 x 3072 is bert8_ffn2
F16MATH_SHAPES = "sq4096,bert8_ffn2,bert_qkv"


def matmul_model(M, N, K, f16, trans_b=False):
    """y[M, N] = a[M, K] @ w[K, N], w a constant; every tensor f16 or f32.
    trans_b: Gemm(a, w, transB=1) with w stored [N, K]."""
    dt, npdt = (TensorProto.FLOAT16, np.float16) if f16 else (TensorProto.FLOAT, np.float32)
    w = np.random.default_rng(0).uniform(-1, 1, (N, K) if trans_b else (K, N)).astype(npdt)
    node = (helper.make_node("Gemm", ["a", "w"], ["y"], transB=1) if trans_b
            else helper.make_node("MatMul", ["a", "w"], ["y"]))
    g = helper.make_graph([node], "gemm",
                          [helper.make_tensor_value_info("a", dt, [M, K])],
                          [helper.make_tensor_value_info("y", dt, [M, N])], [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def max_error(M, N, K, tb, opts, device, seed=1):
    """Max |y - ref| and max |y - ref| / sum_k |a||w| over the outputs of the
    f16 product (random a and w in [-1, 1), never 0) on `device` with the
    session options `opts` (a dict), against the float64 product of the
    same f16 values."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import rlx
    m = matmul_model(M, N, K, True, tb)
    w = numpy_helper.to_array(m.graph.initializer[0]).astype(np.float64)
    a = np.random.default_rng(seed).uniform(-1, 1, (M, K)).astype(np.float16)
    a[a == 0] = np.float16(0.5)
    wk = w.T if tb else w
    ref = a.astype(np.float64) @ wk
    scale = np.abs(a.astype(np.float64)) @ np.abs(wk)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mm.onnx")
        onnx.save(m, path)
        s = rlx.Session(rlx.Model(path), device=device, options=opts)
        y = s.run({"a": a})[0].astype(np.float64)
    err = np.abs(y - ref)
    return float(err.max()), float((err / scale).max())


def errors(a):
    """--errors: the max error of each accumulation mode against float64 at
    K = 768, 3072 and 4096 (M x N = a.err_m x a.err_n), without split-K
    (whose slices would shorten the f16 blocks: the worst case)."""
    nosplit = {"gpu.gemm_splitk": 0}
    modes = [("f32 sums", dict(nosplit))] + [
        ("f16 sums/%d" % b, dict(nosplit, **{"gpu.f16_accumulate": "f16", "gpu.f16_block": b})) for b in (16, 32, 64)]
    for K in (768, 3072, 4096):
        for name, opts in modes:
            e, r = max_error(a.err_m, a.err_n, K, False, opts, a.device)
            print("error M=%d N=%d K=%d %-12s max |y - ref| %.4g  max |y - ref| / sum|a||w| %.3g (2^%.1f)" %
                  (a.err_m, a.err_n, K, name, e, r, np.log2(r) if r > 0 else float("-inf")))
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--small", action="store_true", help="every dim / 16 (lavapipe)")
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated names: " + ",".join(SHAPES))
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    ap.add_argument("--f16math", action="store_true",
                    help="issue 12's f16 GEMM set: shapes %s, variants f32, f16 (f32 sums), f16acc16, f16acc, "
                         "f16acc64 (f16 sums over blocks of 16, 32, 64)" % F16MATH_SHAPES)
    ap.add_argument("--errors", action="store_true",
                    help="print the max error against float64 of f32 and f16 sums at K = 768, 3072, 4096 instead")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a session option added to every variant's run (e.g. gpu.gemm_tile=8x8,16x16,8 to force "
                         "one tile for all of them)")
    ap.add_argument("--err-m", type=int, default=128)
    ap.add_argument("--err-n", type=int, default=256)
    a = ap.parse_args()
    if a.errors:
        errors(a)
        return
    if a.f16math:
        a.shapes, a.variants = F16MATH_SHAPES, "f32,f16,f16acc16,f16acc,f16acc64"
    div = 16 if a.small else 1
    for n in a.shapes.split(",") + a.variants.split(","):
        if n not in SHAPES and n not in VARIANTS:
            sys.exit("unknown shape or variant '%s'" % n)
    with tempfile.TemporaryDirectory() as tmp:
        for sname in a.shapes.split(","):
            M, N, K, tb = SHAPES[sname]
            M, N, K = max(1, M // div), max(1, N // div), max(1, K // div)
            for vname in a.variants.split(","):
                name, f16, opts = VARIANTS[vname]
                path = os.path.join(tmp, "mm.onnx")
                onnx.save(matmul_model(M, N, K, f16, tb), path)
                cmd = [a.rlx, "bench", path, "--device", a.device, "--iters", str(a.iters), "--warmup", "3",
                       "--json"] + opts + [x for o in a.option for x in ("--option", o)]
                p = subprocess.run(cmd, capture_output=True, text=True)
                label = "%s %dx%dx%d%s" % (sname, M, N, K, " transB" if tb else "")
                if p.returncode:
                    print("%s %-14s error: %s" % (label, name, (p.stderr.strip().splitlines() or ["?"])[-1]))
                    continue
                r = json.loads(p.stdout)
                ms = (r.get("gpu_ms") or {}).get("median") or (r.get("wall_ms") or {}).get("median")
                src = "gpu" if (r.get("gpu_ms") or {}).get("median") else "wall"
                cpu_steps = r.get("cpu_steps")
                wbytes = N * K * (2 if f16 or "gpu.f16=1" in opts else 4)
                print("%s %-18s %9.3f ms (%s)  %8.3f TFLOP/s  %7.0f GB/s of weights  cpu steps %s" %
                      (label, name, ms, src, 2.0 * M * N * K / (ms * 1e-3) / 1e12, wbytes / (ms * 1e-3) / 1e9,
                       cpu_steps))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
