#!/usr/bin/env python3
"""GPU time of one product in each element kind rlx's GPU runs: f32 and f16
MatMul, int8 MatMulInteger (uint8 A x int8 B -> int32) and 4-bit
com.microsoft.MatMulNBits (f32 A, block 32; nbits4h: f16 A), at the GEMM shape 4096^3 and
the decoding GEMV shapes 1x4096x4096 and 1x4096x11008 (issue 12's list).
B is a constant of the model (random values, seed 0); A is the input. Per
row: `rlx bench --device gpu --json`'s GPU-timestamp median (ms) over --iters
runs, TFLOP/s (TOP/s for int8: 2*M*K*N operations), the weight bytes and
the rate they are read at (weight bytes / GPU time: what bounds a GEMV).
With --torch, PyTorch on CUDA in the same run as the peer: torch.matmul in
f32 (TF32 off) and f16 (cuBLAS), torch._int_mm for int8 (M > 16 only),
CUDA-event median over --iters.

    python3 bench/gpu_gemm_kinds.py [--rlx build/rlx] [--iters 50]
                                    [--kinds f32,f16,int8,nbits4] [--shapes 4096x4096x4096,1x4096x4096,1x4096x11008]
                                    [--work DIR] [--option KEY=VALUE ...] [--torch]

--option passes a session option to every run (e.g. gpu.dot4=0: the
integer GEMM without WGSL's packed dot product; gpu.qgemm_tile=wg: the
64 x 64 integer tiles that m >= 16 ran before the generated int8 GEMM,
gpu.qgemm_tile=gen, the default there; gpu.gemm_tile=8x8,16x16,16: the
generated kernels' tile). Needs numpy and onnx.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELEM = {"f32": T.FLOAT, "f16": T.FLOAT16}


def make(kind, M, K, N, path):
    """Writes the one-node model of `kind` at M x K x N; returns B's bytes."""
    rng = np.random.default_rng(0)
    opsets = [H.make_opsetid("", 17)]
    if kind in ELEM:
        np_t = np.float32 if kind == "f32" else np.float16
        b = rng.uniform(-1, 1, (K, N)).astype(np_t)
        node = H.make_node("MatMul", ["a", "b"], ["y"])
        a_t, y_t, inits = ELEM[kind], ELEM[kind], [NH.from_array(b, "b")]
        nbytes = b.nbytes
    elif kind == "int8":
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        node = H.make_node("MatMulInteger", ["a", "b"], ["y"])
        a_t, y_t, inits = T.UINT8, T.INT32, [NH.from_array(b, "b")]
        nbytes = b.nbytes
    elif kind in ("nbits4", "nbits4h"):
        bs = 32
        nb = (K + bs - 1) // bs
        q = rng.integers(0, 16, (N, nb, bs)).astype(np.uint8)
        B = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
        half = kind == "nbits4h"  # f16 A, Y and scales (the spec's T1)
        scales = rng.uniform(0.01, 0.1, N * nb).astype(np.float16 if half else np.float32)
        node = H.make_node("MatMulNBits", ["a", "B", "s"], ["y"], domain="com.microsoft", K=K, N=N, bits=4,
                           block_size=bs)
        a_t = y_t = T.FLOAT16 if half else T.FLOAT
        inits = [NH.from_array(B, "B"), NH.from_array(scales, "s")]
        opsets.append(H.make_opsetid("com.microsoft", 1))
        nbytes = B.nbytes + scales.nbytes
    else:
        sys.exit(f"gpu_gemm_kinds: unknown kind {kind!r} (f32, f16, int8, nbits4, nbits4h)")
    g = H.make_graph([node], kind, [H.make_tensor_value_info("a", a_t, [M, K])],
                     [H.make_tensor_value_info("y", y_t, [M, N])], inits)
    onnx.save(H.make_model(g, opset_imports=opsets, ir_version=8), path)
    return nbytes


def torch_ms(kind, M, K, N, iters):
    """PyTorch's CUDA time (ms, median of CUDA events) of the same product,
    or None where it has no such kernel."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    if kind in ("f32", "f16"):
        dt = torch.float32 if kind == "f32" else torch.float16
        x, w = torch.rand(M, K, device=dev, dtype=dt), torch.rand(K, N, device=dev, dtype=dt)
        fn = lambda: torch.matmul(x, w)  # noqa: E731
    elif kind == "int8" and M > 16:
        x = torch.randint(-128, 127, (M, K), device=dev, dtype=torch.int8)
        w = torch.randint(-128, 127, (K, N), device=dev, dtype=torch.int8)
        fn = lambda: torch._int_mm(x, w)  # noqa: E731
    else:
        return None
    for _ in range(5):
        fn()
    ts = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--kinds", default="f32,f16,int8,nbits4")
    ap.add_argument("--shapes", default="4096x4096x4096,1x4096x4096,1x4096x11008")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_gemm_kinds"))
    ap.add_argument("--option", action="append", default=[])
    ap.add_argument("--torch", action="store_true", help="PyTorch CUDA in the same run as the peer")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| kind | M x K x N | GPU ms (median) | wall ms | TFLOP/s (TOP/s) | weight MB | weight GB/s | CPU steps | torch ms | torch TFLOP/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape in a.shapes.split(","):
        M, K, N = (int(v) for v in shape.split("x"))
        for kind in a.kinds.split(","):
            path = os.path.join(a.work, f"{kind}_{shape}.onnx")
            nbytes = make(kind, M, K, N, path)
            cmd = [a.rlx, "bench", path, "--device", "gpu", "--quiet", "--json", "--warmup", "5",
                   "--iters", str(a.iters)]
            for o in a.option:
                cmd += ["--option", o]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(f"| {kind} | {shape} | failed: {p.stderr.strip()[-200:]} | | | | | | | |")
                continue
            d = json.loads(p.stdout)
            gpu = (d.get("gpu_ms") or {}).get("median")
            wall = d["wall_ms"]["median"]
            t = gpu if gpu else wall
            rate = 2.0 * M * K * N / (t * 1e-3) / 1e12
            tm = torch_ms(kind, M, K, N, a.iters) if a.torch else None
            peer = f"{tm:.3f} | {2.0 * M * K * N / (tm * 1e-3) / 1e12:.2f}" if tm else "- | -"
            print(f"| {kind} | {shape} | {gpu if gpu is None else f'{gpu:.4f}'} | {wall:.3f} | {rate:.2f} | "
                  f"{nbytes / 1e6:.1f} | {nbytes / (t * 1e-3) / 1e9:.0f} | {d.get('cpu_steps')} | {peer} |", flush=True)


if __name__ == "__main__":
    main()
