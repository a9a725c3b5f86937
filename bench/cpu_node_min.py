#!/usr/bin/env python3
"""Per-node CPU step times of one model for several rlx binaries, robust to
load from other processes: each node's minimum over REPS processes x 3
profiled runs (`rlx bench --profile`), the binaries interleaved per rep.

    python3 bench/cpu_node_min.py MODEL.onnx REPS THREADS RLX [RLX ...]

Prints the 25 costliest classes (an op, or Conv with its weight shape) by
the first binary, the sum of the per-node minima per binary, and each
binary's median and minimum of the wall medians. THREADS sets
RLX_NUM_THREADS; a wrapper script that sets it again (or any other
variable) compares thread counts or options. PN=-v also prints every
node. On a shared machine, run it under `chrt -f 10` (SCHED_FIFO) so that
the other processes do not take the cores mid-run."""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    model, reps, threads, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    best = [dict() for _ in bins]
    info = {}
    walls = [[] for _ in bins]
    for _ in range(reps):
        for bi, b in enumerate(bins):
            env = dict(os.environ)
            env["RLX_NUM_THREADS"] = threads
            with tempfile.TemporaryDirectory() as tmp:
                prof = os.path.join(tmp, "p.json")
                out = subprocess.run([b, "bench", model, "--quiet", "--json", "--iters", "20", "--warmup", "3",
                                      "--profile", prof], env=env, check=True, capture_output=True, text=True).stdout
                walls[bi].append(json.loads(out)["wall_ms"]["median"])
                with open(prof) as f:
                    events = json.load(f)["traceEvents"]
            for e in events:
                if e.get("ph") != "X":
                    continue
                a = e["args"]
                n = a["node"]
                best[bi][n] = min(best[bi].get(n, 1e18), e["dur"])
                info[n] = (a["step"], a["op"], a["shape"], a.get("inputs", ""))
    total = [0.0] * len(bins)
    by_class = {}
    for n in sorted(info, key=lambda n: info[n][0]):
        _, op, shape, ins = info[n]
        v = [bb.get(n, 0.0) for bb in best]
        for i, x in enumerate(v):
            total[i] += x
        parts = ins.split(" ")
        c = op + " " + parts[1] if op == "Conv" and len(parts) > 1 else op
        acc = by_class.setdefault(c, [0.0] * len(bins))
        for i, x in enumerate(v):
            acc[i] += x
        if "-v" in os.environ.get("PN", ""):
            print(f"{n:6s} {op:12s} {shape:18s} {ins[:44]:44s} " + " ".join(f"{x:8.1f}" for x in v))
    for c, v in sorted(by_class.items(), key=lambda kv: -kv[1][0])[:25]:
        ratio = f"  {v[1] / v[0]:.2f}" if len(v) > 1 and v[0] else ""
        print(f"{c:40s} " + " ".join(f"{x:9.1f}" for x in v) + ratio)
    print("sum-of-min us", " ".join(f"{x:.1f}" for x in total))
    print("wall ms medians", " ".join(f"{statistics.median(w):.2f}" for w in walls),
          " mins", " ".join(f"{min(w):.2f}" for w in walls))


if __name__ == "__main__":
    main()
