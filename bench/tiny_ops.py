#!/usr/bin/env python3
"""Per-node cost of rlx's CPU executor against onnxruntime's: a chain of
--nodes small Adds (y = x + c1 + c2 + ..., each on [1, --width] floats,
every constant different), microseconds per forward pass and per node,
the median over --rounds rounds of each runner's median of --iters runs
(rounds interleave the runners). rlx runs twice: as it is (its
fuse_elementwise pass turns the chain into one node) and with
passes.disable=fuse_elementwise (one step per Add: the executor's per-node
cost, which is what this measures). onnxruntime's time includes its
Python binding's call (about 10 us per run, spread over the nodes).

    python3 bench/tiny_ops.py [--rlx build/rlx] [--base-rlx OTHER/rlx]
                              [--nodes 200] [--width 16] [--threads 1]
                              [--rounds 5] [--iters 2000]

--threads N sets RLX_NUM_THREADS and onnxruntime's intra_op_num_threads
(0: each one's default).
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
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_model(path, nodes, width):
    rng = np.random.default_rng(0)
    inits, ops = [], []
    prev = "x"
    for i in range(nodes):
        c = f"c{i}"
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, (1, width)).astype(np.float32), c))
        out = "y" if i == nodes - 1 else f"t{i}"
        ops.append(helper.make_node("Add", [prev, c], [out], name=f"add{i}"))
        prev = out
    g = helper.make_graph(ops, "tiny_adds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def run_rlx(rlx, model, inp, threads, iters, extra_env):
    env = dict(os.environ)
    env.update(extra_env)
    if threads:
        env["RLX_NUM_THREADS"] = str(threads)
    out = subprocess.run([rlx, "bench", model, "--device", "cpu", "--input", f"x={inp}", "--iters", str(iters),
                          "--warmup", "50", "--json"], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["wall_ms"]["median"] * 1e3


def run_ort(model, inp, threads, iters):
    cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model, f"x={inp}", "--iters", str(iters),
           "--warmup", "50"]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_tiny_ops"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, f"adds_{a.nodes}x{a.width}.onnx")
    make_model(model, a.nodes, a.width)
    inp = os.path.join(a.work, f"x_{a.width}.npy")
    np.save(inp, np.random.default_rng(1).uniform(-1, 1, (1, a.width)).astype(np.float32))
    unfused = {"RLX_DISABLE_PASSES": "fuse_elementwise"}
    runners = [("rlx unfused", lambda: run_rlx(a.rlx, model, inp, a.threads, a.iters, unfused)),
               ("rlx fused", lambda: run_rlx(a.rlx, model, inp, a.threads, a.iters, {}))]
    if a.base_rlx:
        runners.insert(0, ("base rlx unfused", lambda: run_rlx(a.base_rlx, model, inp, a.threads, a.iters, unfused)))
    runners.append(("onnxruntime", lambda: run_ort(model, inp, a.threads, a.iters)))
    res = {k: [] for k, _ in runners}
    for r in range(a.rounds):
        for k, fn in runners:
            res[k].append(fn())
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} us" for k, v in res.items()), file=sys.stderr)
    print(f"\n{a.nodes} Adds on [1, {a.width}], threads {a.threads or 'default'}: us per forward pass (median over "
          f"{a.rounds} rounds of {a.iters}-run medians), us per node\n")
    print("| runner | us / run | us / node | / onnxruntime |")
    print("|---|---|---|---|")
    ort_us = statistics.median(res["onnxruntime"])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"| {k} | {m:.1f} | {m / a.nodes:.3f} | {m / ort_us:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
