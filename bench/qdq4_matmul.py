#!/usr/bin/env python3
"""A 4-bit QDQ MatMul (fuse_nbits) on the CPU: one row through a K x N
weight that onnxruntime's MatMulNBitsQuantizer wrote in QDQ format (int4,
symmetric, DequantizeLinear-21 of a constant INT4 initializer -> MatMul),
from an f32 and from an f16 model. Per model, `rlx bench --iters ITERS` of
this rlx with fuse_nbits (default) and with passes.disable=fuse_nbits (the
DequantizeLinear folded into a float weight), and of a second build given
by --rlx-before, in --rounds interleaved rounds: the median over rounds of
the median wall ms, the plan's passes ms, whether the pass fired, and the
peak RSS of the process (GNU time's %M). Prints a markdown table.

    python3 bench/qdq4_matmul.py [--rlx build/rlx] [--rlx-before OLD/rlx] [--k 4096] [--n 4096]
                                 [--block 32] [--rounds 3] [--iters 20] [--threads N]
Weights standard normal x 0.05 (seed 0); A is rlx bench's generated input.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(path, K, N, bs, f16):
    from onnxruntime.quantization import matmul_nbits_quantizer as MQ
    from onnxruntime.quantization.quant_utils import QuantFormat
    ft, npf = (T.FLOAT16, np.float16) if f16 else (T.FLOAT, np.float32)
    w = (np.random.default_rng(0).standard_normal((K, N)) * 0.05).astype(npf)
    g = H.make_graph([H.make_node("MatMul", ["a", "w"], ["y"], name="mm")], "qdq4",
                     [H.make_tensor_value_info("a", ft, [1, K])], [H.make_tensor_value_info("y", ft, None)],
                     [NH.from_array(w, "w")])
    cfg = MQ.DefaultWeightOnlyQuantConfig(block_size=bs, is_symmetric=True, quant_format=QuantFormat.QDQ)
    q = MQ.MatMulNBitsQuantizer(H.make_model(g, opset_imports=[H.make_opsetid("", 21)], ir_version=10),
                                algo_config=cfg)
    q.process()
    onnx.save(q.model.model, path)


def bench(rlx, path, iters, opts, env):
    """(median wall ms, passes ms, nodes fused, peak RSS MiB) of one `rlx bench`."""
    with tempfile.NamedTemporaryFile("r") as rss:
        args = ["/usr/bin/time", "-f", "%M", "-o", rss.name, rlx, "bench", path, "--iters", str(iters), "--json",
                "--quiet"]
        for o in opts:
            args += ["--option", o]
        p = subprocess.run(args, capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit("rlx bench failed: " + (p.stdout + p.stderr)[-500:])
        kb = float(rss.read().split()[-1])
    d = json.loads(p.stdout)
    return d["wall_ms"]["median"], d["compile_ms"]["passes"], d["nodes_fused"], kb / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--rlx-before", default="", help="a second rlx build measured in the same rounds")
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="RLX_NUM_THREADS (0: rlx's default)")
    a = ap.parse_args()
    env = dict(os.environ)
    if a.threads:
        env["RLX_NUM_THREADS"] = str(a.threads)
    tmp = tempfile.mkdtemp(prefix="rlx_qdq4_")
    runs = []
    for f16 in (False, True):
        path = os.path.join(tmp, "qdq4_%s.onnx" % ("f16" if f16 else "f32"))
        make(path, a.k, a.n, a.block, f16)
        kind = "f16" if f16 else "f32"
        runs.append((kind, "rlx", a.rlx, path, ()))
        runs.append((kind, "rlx, passes.disable=fuse_nbits", a.rlx, path, ("passes.disable=fuse_nbits",)))
        if a.rlx_before:
            runs.append((kind, "before (%s)" % a.rlx_before, a.rlx_before, path, ()))
    res = {i: [] for i in range(len(runs))}
    for _ in range(a.rounds):
        for i, (_, _, rlx, path, opts) in enumerate(runs):
            res[i].append(bench(rlx, path, a.iters, opts, env))
    print("| model | build | wall ms (median) | passes ms | fuse_nbits | peak RSS MiB |")
    print("|---|---|---:|---:|---|---:|")
    for i, (kind, what, _, _, _) in enumerate(runs):
        r = res[i]
        print("| %s %dx%d, block %d | %s | %.2f | %.0f | %s | %.0f |"
              % (kind, a.k, a.n, a.block, what, statistics.median(x[0] for x in r),
                 statistics.median(x[1] for x in r), "fired" if r[0][2] else "declined",
                 statistics.median(x[3] for x in r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
