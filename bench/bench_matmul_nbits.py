#!/usr/bin/env python3
"""com.microsoft.MatMulNBits (4-bit blocked weights) on the CPU: rlx, which
keeps the weights packed (rlx.MatMulNBits, src/backend/cpu/cpu_nbits.c),
against onnxruntime's 4-bit kernel, same machine, same inputs, same thread
count; and, with --rlx-before, a second rlx build (one that dequantizes the
weights to f32 when the model loads) in the same rounds. Per shape:
milliseconds per run (the median over --rounds interleaved rounds of each
runner's median of --iters steady runs), rlx's load time (import) and peak
resident memory of the `rlx run` process (GNU time's %M, MiB), and the bytes
of the packed weights. Prints a markdown table.

    python3 bench/bench_matmul_nbits.py [--rlx build/rlx] [--rlx-before OLD/rlx] [--threads 2] [--rounds 3]
                                        [--iters 20] [--shapes 1x4096x4096,1x4096x11008] [--block 32]
Inputs: A uniform [-1, 1), seed 0; weights random 4-bit codes, scales in
[0.01, 0.1), packed zero points.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model(path, M, K, N, bs, rng):
    nb = (K + bs - 1) // bs
    q = rng.integers(0, 16, (N, nb, bs)).astype(np.uint8)
    B = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zq = rng.integers(0, 16, (N, (nb + 1) // 2 * 2)).astype(np.uint8)
    zp = (zq[:, 0::2] | (zq[:, 1::2] << 4)).reshape(-1)
    scales = rng.uniform(0.01, 0.1, N * nb).astype(np.float32)
    node = H.make_node("MatMulNBits", ["a", "B", "s", "z"], ["y"], domain="com.microsoft", K=K, N=N, bits=4,
                       block_size=bs)
    g = H.make_graph([node], "nbits", [H.make_tensor_value_info("a", T.FLOAT, [M, K])],
                     [H.make_tensor_value_info("y", T.FLOAT, [M, N])],
                     [NH.from_array(B, "B"), NH.from_array(scales, "s"), NH.from_array(zp, "z")])
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17), H.make_opsetid("com.microsoft", 1)], ir_version=8), path)
    return B.nbytes + scales.nbytes + zp.nbytes


def rlx_time(rlx, path, a_path, iters, threads):
    """(steady median ms, import ms, peak RSS MiB) of one `rlx run`. The peak
    comes from GNU time (%M): a child's own ru_maxrss would start at this
    Python process's, which Linux carries over the exec."""
    env = dict(os.environ, RLX_NUM_THREADS=str(threads))
    with tempfile.NamedTemporaryFile("r") as rss:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, rlx, "run", path, "--input", "a=" + a_path,
                            "--iters", str(iters), "--json", "--quiet"], capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit("rlx failed: " + p.stderr[-500:])
        kb = float(rss.read().split()[-1])
    t = json.loads(p.stdout)["timings_ms"]
    return t["steady_median"], t["import"], kb / 1024.0


def ort_time(sess, a, iters):
    for _ in range(3):
        sess.run(None, {"a": a})
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, {"a": a})
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--rlx-before", default="", help="a second rlx build measured in the same rounds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shapes", default="1x4096x4096,1x4096x11008")
    ap.add_argument("--block", type=int, default=32)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rlx_nbits_")
    rng = np.random.default_rng(0)
    runners = [("rlx", a.rlx)] + ([("before", a.rlx_before)] if a.rlx_before else [])
    head = "| M x K x N | block | threads | rlx ms | onnxruntime ms | rlx / ort |"
    if a.rlx_before:
        head += " before ms | before / ort |"
    head += " rlx load ms | rlx peak RSS MiB |"
    if a.rlx_before:
        head += " before load ms | before peak RSS MiB |"
    head += " packed bytes |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for shp in a.shapes.split(","):
        M, K, N = (int(v) for v in shp.split("x"))
        path = os.path.join(work, "nbits_%s.onnx" % shp)
        packed = model(path, M, K, N, a.block, rng)
        x = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        a_path = os.path.join(work, "a_%s.npy" % shp)
        np.save(a_path, x)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        res = {name: ([], [], []) for name, _ in runners}
        o = []
        for _ in range(a.rounds):
            for name, exe in runners:
                t, imp, rss = rlx_time(exe, path, a_path, a.iters, a.threads)
                res[name][0].append(t)
                res[name][1].append(imp)
                res[name][2].append(rss)
            o.append(ort_time(sess, x, a.iters))
        om = statistics.median(o)
        med = {name: [statistics.median(v) for v in res[name]] for name, _ in runners}
        row = "| %s | %d | %d | %.3f | %.3f | %.2f |" % (shp, a.block, a.threads, med["rlx"][0], om, med["rlx"][0] / om)
        if a.rlx_before:
            row += " %.3f | %.2f |" % (med["before"][0], med["before"][0] / om)
        row += " %.0f | %.0f |" % (med["rlx"][1], med["rlx"][2])
        if a.rlx_before:
            row += " %.0f | %.0f |" % (med["before"][1], med["before"][2])
        row += " %d |" % packed
        print(row, flush=True)

if __name__ == "__main__":
    main()
