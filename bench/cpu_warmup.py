#!/usr/bin/env python3
"""How rlx's CPU time per run evolves over the first runs of a process, on a
many-core host: for each warm-up count W, `rlx bench --warmup W --iters 10`
(median wall ms), with the child's minor page faults and context switches;
then the kernel's transparent-huge-page setting and the CPU topology. Used to
explain why short benchmarks of rlx on 16 threads were 2-5x slower than long
ones (BENCHMARKS.md).

    bench/cpu_warmup.py --rlx PATH/TO/rlx MODEL.onnx [--shape NAME=DIMS ...]
                        [--warmups 0,1,2,5,10,20,40] [--threads 0] [--env K=V ...]
"""
import argparse
import json
import os
import resource
import subprocess


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", required=True)
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--warmups", default="0,1,2,5,10,20,40")
    ap.add_argument("--threads", type=int, default=0, help="cpu.threads (0: every core)")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the rlx process")
    a = ap.parse_args()
    env = dict(os.environ)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    for w in [int(x) for x in a.warmups.split(",")]:
        cmd = [a.rlx, "bench", a.model, "--quiet", "--json", "--warmup", str(w), "--iters", "10",
               "--option", "cpu.threads=%d" % a.threads] + ["--shape=" + s for s in a.shape]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            d = json.loads(p.stdout)
            wm = d["wall_ms"]
            t = "median %.2f p10 %.2f p90 %.2f first_run %.1f" % (wm["median"], wm["p10"], wm["p90"], d["first_run_ms"])
        except (ValueError, KeyError):
            t = "failed: " + p.stderr[-200:]
        print("warmup %3d: %s ms | minor faults %d, vol ctx sw %d, invol %d, user %.2f s sys %.2f s" % (
            w, t, r1.ru_minflt - r0.ru_minflt, r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw,
            r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime), flush=True)
    for f in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag"):
        try:
            print(f, open(f).read().strip())
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
