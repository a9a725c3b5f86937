#!/usr/bin/env python3
"""Per-node GPU time of models under several kernel variants, side by side:
`rlx bench --profile` of each (model, variant), the slices of each node
summed (a GEMM and its split-K reduce count together), one row per node
whose GEMM/conv time differs between variants. Meant for choosing tile
rules on the lent GPU (bench/device_run.sh tiles).

  python3 bench/tile_compare.py --rlx PATH/TO/rlx [--models-dir DIR] [--seq 128]
        [--batch 1] [--variant NAME=ENV ...] [MODEL ...]

MODEL: as bench/export_models.py names them (resnet50, mobilenet_v2,
bert_base, minilm, gemm_M_N_K); the BERT models run at --batch (default 1) and --seq, the image models at
--batch x 3 x 224 x 224.

A variant is a name and space-separated VAR=VALUE settings, e.g.
--variant "t32x64=RLX_GEMM_TILE=4x4,16x8,16". The default variant (no
settings) is always first. Per-dispatch timestamps add a few microseconds
to every slice, the same for every variant.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_models  # noqa: E402


def node_times(trace_path):
    """{node: [total_us, shape, inputs, kernels]} in the trace's order."""
    with open(trace_path) as f:
        t = json.load(f)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    out = {}
    for e in ev:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        node = a.get("node", "?")
        r = out.setdefault(node, [0.0, a.get("shape", ""), a.get("inputs", ""), []])
        r[0] += e.get("dur", 0.0)
        if e["name"] not in r[3]:
            r[3].append(e["name"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(os.path.dirname(HERE), "build", "rlx"))
    ap.add_argument("--models-dir", default=os.path.join(tempfile.gettempdir(), "rlx_bench_models"))
    ap.add_argument("--variant", action="append", default=[], help="NAME=VAR=VALUE[ VAR=VALUE...]")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--seq", type=int, default=128, help="sequence length of the BERT models (default 128)")
    ap.add_argument("--batch", type=int, default=1, help="batch of every model (default 1)")
    ap.add_argument("models", nargs="*", default=["mobilenet_v2", "resnet50", "minilm"])
    a = ap.parse_args()
    variants = [("default", {})]
    for v in a.variant:
        name, _, settings = v.partition("=")
        env = {}
        for s in settings.split():
            k, _, val = s.partition("=")
            env[k] = val
        variants.append((name, env))
    got = export_models.models(a.models_dir, a.models, log=lambda *x: print(*x, file=sys.stderr))
    tmp = tempfile.mkdtemp(prefix="rlx_tiles_")
    for m in a.models:
        if m not in got:
            print("%s: not exported" % m)
            continue
        per = []
        for name, env in variants:
            trace = os.path.join(tmp, "%s_%s.json" % (m, name))
            cmd = [a.rlx, "bench", got[m]["path"], "--device", "gpu", "--warmup", "3", "--iters", str(a.iters),
                   "--profile", trace]
            if m in export_models.BERTS:
                for inp in ("input_ids", "attention_mask", "token_type_ids"):
                    cmd += ["--shape", "%s=%dx%d" % (inp, a.batch, a.seq)]
            elif a.batch != 1:
                cmd += ["--shape", "input=%dx3x224x224" % a.batch]
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env), timeout=300)
            if p.returncode or not os.path.exists(trace):
                print("%s %s: exit %d %s" % (m, name, p.returncode, p.stderr[-300:]))
                per.append({})
                continue
            gpu = [l for l in p.stdout.splitlines() if "GPU timestamps" in l]
            print("%s %s: %s" % (m, name, gpu[0].strip() if gpu else "?"))
            per.append(node_times(trace))
        base = per[0]
        print("== %s: per node, us (slices summed; * marks the fastest)" % m)
        print("%-44s %-22s %-36s %s" % ("node", "shape", "inputs", "  ".join("%9s" % n for n, _ in variants)))
        tot = [0.0] * len(variants)
        for node, (us, shape, inputs, kernels) in base.items():
            row = [p.get(node, [float("nan")])[0] for p in per]
            for i, v in enumerate(row):
                tot[i] += v if v == v else 0.0
            if not any(k.startswith("gemm") for k in kernels):
                continue
            best = min(range(len(row)), key=lambda i: row[i] if row[i] == row[i] else 1e30)
            cells = "  ".join("%8.1f%s" % (v, "*" if i == best else " ") for i, v in enumerate(row))
            print("%-44s %-22s %-36s %s" % (node[-44:], shape[:22], inputs[:36], cells))
        print("%-104s %s" % ("total (all nodes)", "  ".join("%8.1f " % v for v in tot)))


if __name__ == "__main__":
    main()
