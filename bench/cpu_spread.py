#!/usr/bin/env python3
"""Why a CPU runner's rounds spread: runs rlx and onnxruntime on the same
model in interleaved rounds, one process per runner and round, and beside
each round's wall median records what the process and the machine went
through while it ran:

  ivcsw   involuntary context switches of the process per forward pass
          (all its threads; getrusage of the child): the scheduler took a
          core from one of its threads
  cpu     CPU time of the process per pass (user + system, all threads), ms
  steal   the machine's steal time over the run (/proc/stat), % of all
          CPU time: a virtual machine's vCPUs waiting for the host
  busy    the machine's non-idle time over the run, % (this process's and
          anyone else's)

    python3 bench/cpu_spread.py [--rlx build/rlx] [--models mobilenet_v2,minilm]
        [--runners rlx:16,rlx:12,rlx:16:RLX_POOL_SPIN_US=2000,ort:16]
        [--rounds 4] [--iters 30] [--warmup 15]

A runner is rlx:THREADS[:KEY=VALUE[+KEY=VALUE...]] (environment for that
runner alone) or ort:THREADS. Models: bench/cpu_vs_ort.py's keys (its
generators make them). Prints each round's line, then a table: the median
and the best of the rounds' medians, and the medians of the per-round
figures above.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import cpu_vs_ort  # noqa: E402  (the models, their generators and inputs)


def proc_stat():
    """(total, idle + iowait, steal) jiffies of the machine."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    v += [0] * (8 - len(v))
    return sum(v[:8]), v[3] + v[4], v[7]


def parse_runner(spec):
    """rlx:16[:K=V+K=V] or ort:16 -> (kind, threads, env)"""
    parts = spec.split(":", 2)
    if len(parts) < 2 or parts[0] not in ("rlx", "ort") or not parts[1].isdigit():
        raise SystemExit(f"cpu_spread.py: bad runner '{spec}' (rlx:THREADS[:K=V+...] or ort:THREADS)")
    env = {}
    if len(parts) == 3:
        if parts[0] == "ort":
            raise SystemExit(f"cpu_spread.py: runner '{spec}': environment settings are for rlx runners")
        for kv in parts[2].split("+"):
            k, eq, v = kv.partition("=")
            if not eq:
                raise SystemExit(f"cpu_spread.py: runner '{spec}': '{kv}' is not KEY=VALUE")
            env[k] = v
    return parts[0], int(parts[1]), env


def run_once(a, kind, threads, env_extra, model, inputs):
    """One process: (wall median ms, dict of the figures per pass)."""
    env = dict(os.environ)
    if kind == "rlx":
        env["RLX_NUM_THREADS"] = str(threads)
        env.update(env_extra)
        cmd = [a.rlx, "bench", model, "--device", "cpu", "--quiet", "--json"]
        for spec in inputs:
            cmd += ["--input", spec]
        cmd += ["--iters", str(a.iters), "--warmup", str(a.warmup)]
    else:
        cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model, *inputs, "--iters", str(a.iters),
               "--warmup", str(a.warmup), "--threads", str(threads)]
    r0, s0 = resource.getrusage(resource.RUSAGE_CHILDREN), proc_stat()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout)
    r1, s1 = resource.getrusage(resource.RUSAGE_CHILDREN), proc_stat()
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])}: {p.stderr.strip()[-300:]}")
    out = p.stdout.strip()
    if kind == "rlx":
        ms = json.loads(out)["wall_ms"]["median"]
    else:
        ms = json.loads(out.splitlines()[-1])["median_ms"]
    passes = a.iters + a.warmup
    tot = max(s1[0] - s0[0], 1)
    return ms, {
        "ivcsw": (r1.ru_nivcsw - r0.ru_nivcsw) / passes,
        "cpu": ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1e3 / passes,
        "steal": 100.0 * (s1[2] - s0[2]) / tot,
        "busy": 100.0 * (tot - (s1[1] - s0[1])) / tot,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--models", default="mobilenet_v2,minilm")
    ap.add_argument("--runners", default="rlx:16,rlx:12,rlx:16:RLX_POOL_SPIN_US=2000,ort:16")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=120, help="each process's limit in seconds")
    ap.add_argument("--light-dir", default=cpu_vs_ort.LIGHT, help="the ONNX suite's light/ models")
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--work", default=os.path.join(cpu_vs_ort.tempfile.gettempdir(), "rlx_cpu_vs_ort"))
    a = ap.parse_args()
    runners = [(spec, *parse_runner(spec)) for spec in a.runners.split(",")]
    os.makedirs(a.work, exist_ok=True)
    table = cpu_vs_ort.models(a.work, a.ocr_model, a.light_dir)
    print(f"cpus {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}, load {cpu_vs_ort.load()}")
    rows = []
    for key in a.models.split(","):
        if key not in table:
            print(f"{key}: unknown model key", file=sys.stderr)
            continue
        path, shapes, gen = table[key]
        cpu_vs_ort.ensure_model(key, path, gen)
        inputs = cpu_vs_ort.write_inputs(a.work, key, shapes)
        got = {spec: [] for spec, *_ in runners}
        for r in range(a.rounds):
            line = []
            for spec, kind, threads, env in runners:
                try:
                    ms, f = run_once(a, kind, threads, env, path, inputs)
                except Exception as e:  # noqa: BLE001 (the round goes on)
                    line.append(f"{spec} error: {str(e)[-120:]}")
                    continue
                got[spec].append((ms, f))
                line.append(f"{spec} {ms:.2f} ms ivcsw {f['ivcsw']:.1f} cpu {f['cpu']:.1f} steal {f['steal']:.1f}% "
                            f"busy {f['busy']:.0f}%")
            print(f"{key} round {r + 1}: " + " | ".join(line), flush=True)
        for spec, *_ in runners:
            v = got[spec]
            if v:
                med = lambda name: statistics.median(f[name] for _, f in v)  # noqa: E731
                rows.append((key, spec, statistics.median(m for m, _ in v), min(m for m, _ in v), med("ivcsw"),
                             med("cpu"), med("steal"), med("busy")))
    print(f"\nload at the end {cpu_vs_ort.load()}; {a.rounds} rounds of {a.warmup} warm-up + {a.iters} timed passes; "
          "per-pass figures count warm-up and timed passes (and the compile)\n")
    print("| model | runner | median ms | best ms | ivcsw / pass | CPU ms / pass | steal % | busy % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for key, spec, m, b, iv, c, st, bu in rows:
        print(f"| {key} | {spec} | {m:.2f} | {b:.2f} | {iv:.1f} | {c:.1f} | {st:.1f} | {bu:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
