#!/usr/bin/env python3
"""Where rlx's CPU time goes against onnxruntime's, node class by node
class, at several thread counts: the question "which nodes scale badly
from 1 to 16 cores" that the whole-model ratio of bench/cpu_vs_ort.py
cannot answer.

    python3 bench/cpu_node_scaling.py [--rlx build/rlx] --models resnet50,bert_base
                                      [--threads 1,16] [--iters 20] [--warmup 15]

Models and inputs are bench/cpu_vs_ort.py's (same keys, same files, same
.npy inputs). rlx: `rlx bench --device cpu --profile` (per-step host time,
the median of its 3 profiled runs) with RLX_NUM_THREADS. onnxruntime: the
CPU provider with intra_op_num_threads and its own profiler (the
per-kernel events of the last 3 runs, median per node), all graph
optimizations on (its NCHWc convolutions included).

Nodes are put in classes both runtimes can name alike: a convolution by
kernel, stride, group kind and output size ("Conv 3x3 s1 56x56 64->64"),
fused or not (rlx's Conv+Relu and onnxruntime's FusedConv are both
"Conv"; rlx's QLinearConv alike, "QLinearConv 1x1 s1 64x64 48->96", where
onnxruntime's NHWC QLinearConv, its weights prepacked, lists no weight
shape and stays one class); anything else by op type. Printed per model: a markdown table of
milliseconds per class at each thread count for rlx and onnxruntime, the
speed-up of each from the first thread count to the last, and the ratio
rlx / onnxruntime at the last; classes sorted by rlx's time at the last
thread count. Layout conversions that onnxruntime inserts (ReorderInput,
ReorderOutput) are a class of their own.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_vs_ort as cvo  # noqa: E402


def parse_shape(s):
    s = s.strip().strip("[]")
    return [int(v) for v in s.split(",") if v.strip()] if s else []


def conv_class(x, w, y, op="Conv"):
    """'Conv KHxKW sS HOxWO CIN->COUT' (+ ' dw' for depthwise, ' g' for
    other groups) from the input, weight and output shapes (NCHW)."""
    if len(w) != 4 or len(x) != 4 or len(y) != 4:
        return op
    cout, cin_g, kh, kw = w
    cin = x[1]
    stride = max(1, round(x[2] / y[2])) if y[2] else 1
    kind = " dw" if cin_g == 1 and cin == cout and cin > 1 else (" g" if cin_g != cin else "")
    return f"{op} {kh}x{kw} s{stride}{kind} {y[2]}x{y[3]} {cin}->{cout}"


def rlx_profile(rlx, model, inputs, threads, iters, warmup):
    """{class: microseconds per run} from rlx bench --profile."""
    env = dict(os.environ)
    env["RLX_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.json")
        cmd = [rlx, "bench", model, "--device", "cpu", "--quiet", "--iters", str(iters), "--warmup", str(warmup),
               "--profile", prof]
        for spec in inputs:
            cmd += ["--input", spec]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if r.returncode:
            raise RuntimeError(f"rlx bench: {r.stderr.strip()[-400:]}")
        with open(prof) as f:
            events = json.load(f)["traceEvents"]
    out = collections.defaultdict(float)
    for e in events:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        op = a.get("op") or e.get("name", "?")
        if op in ("Conv", "QLinearConv"):
            ins = [parse_shape(s) for s in a.get("inputs", "").split()]
            wi = 3 if op == "QLinearConv" else 1
            key = conv_class(ins[0], ins[wi], parse_shape(a.get("shape", "")), op) if len(ins) > wi else op
        else:
            key = op
        out[key] += e.get("dur", 0.0)
    return out


def ort_profile(model, feeds, threads, iters, warmup):
    """{class: microseconds per run} from onnxruntime's profiler: the
    median per node over the last 3 runs."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as tmp:
        so.profile_file_prefix = os.path.join(tmp, "ort")
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        for _ in range(warmup + iters):
            s.run(None, feeds)
        with open(s.end_profiling()) as f:
            events = json.load(f)
    runs = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    runs = runs[-3:]
    per_node = collections.defaultdict(list)
    cls = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        if not any(t0 <= e["ts"] <= t1 for t0, t1 in runs):
            continue
        a = e.get("args", {})
        op = a.get("op_name", "?")
        if op not in cls.get(e["name"], ""):
            shapes = [next(iter(d.values())) for d in a.get("input_type_shape", [])]
            outs = [next(iter(d.values())) for d in a.get("output_type_shape", [])]
            if op in ("Conv", "FusedConv") and len(shapes) >= 2 and outs:
                cls[e["name"]] = conv_class(shapes[0], shapes[1], outs[0])
            elif op == "QLinearConv" and len(shapes) >= 4 and outs:
                cls[e["name"]] = conv_class(shapes[0], shapes[3], outs[0], op)
            else:
                cls[e["name"]] = op
        per_node[e["name"]].append(e["dur"])
    out = collections.defaultdict(float)
    for name, durs in per_node.items():
        out[cls[name]] += statistics.median(durs)
    return out


def ort_feeds(inputs):
    import numpy as np
    feeds = {}
    for spec in inputs:
        name, path = spec.split("=", 1)
        feeds[name] = np.load(path)
    return feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(cvo.ROOT, "build", "rlx"))
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--threads", default="1,16", help="comma-separated thread counts (0: every core)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--top", type=int, default=25, help="classes to list (the rest summed)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_cpu_vs_ort"))
    ap.add_argument("--ocr-model", default=os.path.join(cvo.ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--light-dir", default=cvo.LIGHT)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    threads = [int(t) for t in a.threads.split(",")]
    table = cvo.models(a.work, a.ocr_model, a.light_dir)
    for key in a.models.split(","):
        if key not in table:
            sys.exit(f"cpu_node_scaling: unknown model '{key}' (known: {', '.join(sorted(table))})")
        path, shapes, gen = table[key]
        cvo.ensure_model(key, path, gen)
        if not os.path.exists(path):
            sys.exit(f"cpu_node_scaling: {path} is missing (bench/cpu_vs_ort.py --models {key} writes it)")
        inputs = cvo.write_inputs(a.work, key, shapes)
        feeds = ort_feeds(inputs)
        r = {t: rlx_profile(a.rlx, path, inputs, t, a.iters, a.warmup) for t in threads}
        o = {t: ort_profile(path, feeds, t, a.iters, a.warmup) for t in threads}
        t0, t1 = threads[0], threads[-1]
        classes = sorted(set().union(*r.values(), *o.values()), key=lambda c: -r[t1].get(c, 0.0))
        print(f"\n### {key}: per-class time (ms per run; rlx bench --profile, onnxruntime's profiler)\n")
        head = " | ".join([f"rlx {t}t" for t in threads] + [f"ort {t}t" for t in threads])
        print(f"| class | {head} | rlx {t0}->{t1} speed-up | ort {t0}->{t1} speed-up | rlx / ort at {t1}t |")
        print("|---|" + "---:|" * (2 * len(threads) + 3))

        def row(label, rr, oo):
            cells = [f"{rr[t] / 1e3:.3f}" for t in threads] + [f"{oo[t] / 1e3:.3f}" for t in threads]
            su_r = f"{rr[t0] / rr[t1]:.1f}x" if rr[t1] else "-"
            su_o = f"{oo[t0] / oo[t1]:.1f}x" if oo[t1] else "-"
            ratio = f"{rr[t1] / oo[t1]:.2f}" if oo[t1] else "-"
            print(f"| {label} | {' | '.join(cells)} | {su_r} | {su_o} | {ratio} |")

        for c in classes[:a.top]:
            row(c, {t: r[t].get(c, 0.0) for t in threads}, {t: o[t].get(c, 0.0) for t in threads})
        rest = classes[a.top:]
        if rest:
            row(f"({len(rest)} more)", {t: sum(r[t].get(c, 0.0) for c in rest) for t in threads},
                {t: sum(o[t].get(c, 0.0) for c in rest) for t in threads})
        row("**all nodes**", {t: sum(r[t].values()) for t in threads}, {t: sum(o[t].values()) for t in threads})


if __name__ == "__main__":
    main()
