#!/usr/bin/env python3
"""Convolution by convolution: two per-dispatch GPU traces of the same network
(`rlx bench --profile`), e.g. ResNet-50 in f32 and in QDQ int8 (bench/
device_run.sh q8prof writes both), side by side.

    bench/q8prof_compare.py F32_TRACE.json INT8_TRACE.json [--top N]

The convolutions of each trace (Conv / QLinearConv / ConvInteger nodes, with
their split-K or second-pass dispatches) are taken in trace order and paired
one to one (both plans keep the graph's order); a row gives each side's
dispatches and GPU microseconds and the ratio. The other nodes are summed per
op type. Prints a Markdown table, costliest int8 / f32 gaps first.
"""
import argparse
import json
import sys

CONV_OPS = {"Conv", "QLinearConv", "ConvInteger", "FusedConv"}


def load(path):
    ev = json.load(open(path))["traceEvents"]
    nodes = []  # [node, op, shape, dispatches, us, kernels]
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") != "gpu":
            continue
        a = e.get("args", {})
        node, op = a.get("node", "?"), a.get("op", "?")
        if nodes and nodes[-1][0] == node:
            nodes[-1][3] += 1
            nodes[-1][4] += float(a.get("gpu_us", e.get("dur", 0)))
            nodes[-1][5].append(e.get("name", "?"))
        else:
            nodes.append([node, op, a.get("shape", "?"), 1, float(a.get("gpu_us", e.get("dur", 0))), [e.get("name", "?")]])
    return nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("f32")
    ap.add_argument("int8")
    ap.add_argument("--top", type=int, default=60)
    a = ap.parse_args()
    f, q = load(a.f32), load(a.int8)
    fc = [n for n in f if n[1] in CONV_OPS]
    qc = [n for n in q if n[1] in CONV_OPS]
    print("f32: %d dispatches, %.1f us; int8: %d dispatches, %.1f us" %
          (sum(n[3] for n in f), sum(n[4] for n in f), sum(n[3] for n in q), sum(n[4] for n in q)))
    print("convolutions: f32 %d (%.1f us, %d dispatches), int8 %d (%.1f us, %d dispatches)" %
          (len(fc), sum(n[4] for n in fc), sum(n[3] for n in fc), len(qc), sum(n[4] for n in qc), sum(n[3] for n in qc)))
    rows = []
    for i, (x, y) in enumerate(zip(fc, qc)):
        rows.append((y[4] - x[4], i, x, y))
    rows.sort(reverse=True)
    print()
    print("| # | output | f32 us (disp.) | int8 us (disp.) | int8 / f32 | int8 kernels |")
    print("|---:|---|---:|---:|---:|---|")
    for d, i, x, y in rows[:a.top]:
        print("| %d | %s | %.1f (%d) | %.1f (%d) | %.2f | %s |" %
              (i, y[2], x[4], x[3], y[4], y[3], y[4] / x[4] if x[4] else 0, " ".join(sorted(set(y[5])))))
    print()
    for name, nodes in (("f32", f), ("int8", q)):
        by = {}
        for n in nodes:
            if n[1] in CONV_OPS:
                continue
            s = by.setdefault(n[1], [0, 0.0])
            s[0] += n[3]
            s[1] += n[4]
        print("%s other ops: %s" % (name, ", ".join("%s %d x %.1f us" % (k, v[0], v[1])
                                                     for k, v in sorted(by.items(), key=lambda kv: -kv[1][1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
