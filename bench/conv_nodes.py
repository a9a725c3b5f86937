#!/usr/bin/env python3
"""Per-node times of one model on rlx's CPU backend against onnxruntime's,
grouped by convolution shape: where rlx loses time to onnxruntime.

    python3 bench/conv_nodes.py MODEL.onnx NAME=FILE.npy [NAME=FILE.npy ...]
                                [--rlx build/rlx] [--base-rlx OTHER/rlx]
                                [--threads 1] [--rounds 3] [--ort-runs 5]

Each round runs `rlx bench --profile` (per-step host clock, the median of
its 3 profiled runs) and then onnxruntime with enable_profiling
(intra_op_num_threads = --threads; each node's median over --ort-runs
runs), so that load from elsewhere hits both alike; a node's time is its
median over the rounds. Convolutions are matched by shape, not by name
(onnxruntime renames its fused NCHWc nodes): a group is (kernel, stride,
c_in, c_out, output H x W, group); its time is the sum over its nodes.
Other ops are grouped by op type. onnxruntime fuses a residual Sum + Relu
into the convolution that produces one operand; rlx fuses it only where
passes/fuse_conv_residual.c applies, else it is a FusedElementwise step
of its own (listed as such). GMAC/s: multiply-adds of the group over its
time. Prints a markdown table.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SHAPE = re.compile(r"\[([0-9,]*)\]")


def conv_key(in_shape, w_shape, out_shape):
    """(k, stride, c_in, c_out, HW, group) and the node's multiply-adds."""
    k = w_shape[2]
    stride = max(1, round(in_shape[2] / out_shape[2]))
    group = in_shape[1] // w_shape[1]
    macs = out_shape[1] * out_shape[2] * out_shape[3] * w_shape[1] * k * w_shape[3]
    return (k, stride, in_shape[1], out_shape[1], out_shape[2], group), macs


def rlx_nodes(rlx, model, inputs, threads, env_extra=None):
    """[(op, key or None, macs, us)] in step order, from one --profile run."""
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "p.json")
        cmd = [rlx, "bench", model, "--device", "cpu", "--option", f"cpu.threads={threads}", "--profile", trace,
               "--iters", "3", "--warmup", "2", "--quiet"]
        for spec in inputs:
            cmd += ["--input", spec]
        env = dict(os.environ)
        env.update(env_extra or {})
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        with open(trace) as f:
            ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    out = []
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") != "cpu":
            continue
        a = e["args"]
        op = a["op"]
        key, macs = None, 0
        if op == "Conv":
            ins = [[int(v) for v in s.split(",")] for s in SHAPE.findall(a["inputs"])]
            outs = [int(v) for v in SHAPE.findall(a["shape"])[0].split(",")]
            key, macs = conv_key(ins[0], ins[1], outs)
        out.append((op, key, macs, float(e["dur"])))
    return out


def ort_nodes(model, inputs, threads, runs):
    """[(op, key or None, macs, us)] of onnxruntime, each node's median."""
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    d = tempfile.mkdtemp()
    so.profile_file_prefix = os.path.join(d, "ort")
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feed = {}
    for spec in inputs:
        name, path = spec.split("=", 1)
        feed[name] = np.load(path)
    for _ in range(2 + runs):
        sess.run(None, feed)
    path = sess.end_profiling()
    with open(path) as f:
        ev = json.load(f)
    os.remove(path)
    os.rmdir(d)
    per_run = []
    cur = None
    for e in ev:
        if e.get("cat") == "Session" and e["name"] == "model_run":
            continue
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            nm = e["name"][: -len("_kernel_time")]
            if cur is None or nm in cur:
                cur = collections.OrderedDict()
                per_run.append(cur)
            cur[nm] = e
    per_run = per_run[2:]  # warm-up runs
    out = []
    for nm, e in per_run[0].items():
        a = e["args"]
        op = a.get("op_name", "?")
        key, macs = None, 0
        if op in ("Conv", "FusedConv"):
            ins = [list(d_.values())[0] for d_ in a["input_type_shape"]]
            key, macs = conv_key(ins[0], ins[1], list(a["output_type_shape"][0].values())[0])
            op = "Conv"
        us = statistics.median(float(r[nm]["dur"]) for r in per_run if nm in r)
        out.append((op, key, macs, us))
    return out


def group(nodes):
    """{label: [count, macs, us]}"""
    g = collections.OrderedDict()
    for op, key, macs, us in nodes:
        label = ("conv k%d s%d %d->%d %dx%d%s" % (key[0], key[1], key[2], key[3], key[4], key[4],
                                                   " g%d" % key[5] if key[5] > 1 else "")) if key else op
        r = g.setdefault(label, [0, 0, 0.0])
        r[0] += 1
        r[1] += macs
        r[2] += us
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("inputs", nargs="+", help="NAME=FILE.npy")
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ort-runs", type=int, default=5)
    args = ap.parse_args()
    runners = [("rlx", lambda: rlx_nodes(args.rlx, args.model, args.inputs, args.threads))]
    if args.base_rlx:
        runners.append(("base", lambda: rlx_nodes(args.base_rlx, args.model, args.inputs, args.threads)))
    runners.append(("ort", lambda: ort_nodes(args.model, args.inputs, args.threads, args.ort_runs)))
    rounds = {name: [] for name, _ in runners}
    for _ in range(args.rounds):
        for name, fn in runners:
            rounds[name].append(group(fn()))
    med = {}
    for name, rs in rounds.items():
        labels = list(rs[0].keys())
        med[name] = collections.OrderedDict(
            (lb, (rs[0][lb][0], rs[0][lb][1], statistics.median(r[lb][2] for r in rs if lb in r))) for lb in labels)
    labels = []
    for name in med:  # every runner's groups (main's FusedElementwise residuals too)
        labels += [lb for lb in med[name] if lb not in labels]
    names = [n for n, _ in runners]
    hdr = "| group | n | MMAC | " + " | ".join(f"{n} ms | {n} GMAC/s" for n in names) + " | rlx / ort |"
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    tot = {n: 0.0 for n in names}
    for lb in labels:
        row = [lb]
        cnt = macs = None
        cells = []
        for n in names:
            r = med[n].get(lb)
            if r is None:
                cells += ["-", "-"]
                continue
            cnt, macs = r[0], r[1]
            tot[n] += r[2]
            cells += [f"{r[2] / 1000:.2f}", f"{macs / r[2] / 1000:.1f}" if macs else "-"]
        ratio = "-"
        if lb in med["rlx"] and lb in med["ort"] and med["ort"][lb][2] > 0:
            ratio = f"{med['rlx'][lb][2] / med['ort'][lb][2]:.2f}"
        row += [str(cnt), f"{macs / 1e6:.0f}" if macs else "-"] + cells + [ratio]
        print("| " + " | ".join(row) + " |")
    print("| total | | | " + " | ".join(f"{tot[n] / 1000:.2f} | " for n in names) +
          f" {tot['rlx'] / tot['ort']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
