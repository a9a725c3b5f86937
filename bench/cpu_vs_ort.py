#!/usr/bin/env python3
"""rlx's CPU backend against onnxruntime's CPU execution provider on the
convolutional models, same machine, same inputs, same thread count:
milliseconds per forward pass, the median over --rounds rounds of each
runner's median of --iters steady runs (rounds interleave the runners, so
that load from elsewhere hits them alike). Prints a markdown table.

    python3 bench/cpu_vs_ort.py [--rlx build/rlx] [--base-rlx OTHER/rlx]
                                [--base-env KEY=VALUE ...] [--threads N]
                                [--rounds 3] [--iters 20]
                                [--models ppocr640,resnet50,mobilenet_v2,shufflenet]
                                [--rss]

--threads N sets RLX_NUM_THREADS for rlx and intra_op_num_threads for
onnxruntime (0: each one's default, one thread per core). --base-rlx adds a
column for another rlx binary (e.g. a build of main) run the same way;
--base-env sets environment variables for that column only (e.g.
--base-rlx build/rlx --base-env RLX_CPU_GEMM=blas compares the two thread
policies of one binary).
Models: the demo's PP-OCRv4 detector at 1x3x640x640 (models/), the ONNX
suite's light/ ResNet-50 and ShuffleNet, and a MobileNetV2 with random
weights written by bench/make_mobilenet_v2.py (numpy + onnx only); also
ppocr_qdq and ppocr_qop, bench/make_quant_models.py's int8 PP-OCRv4 det
(build/quant/, at 1x3x256x256); also
(not by default) minilm and bert_base, BERT encoders with seeded random
weights written by scripts/make_minilm_onnx.py --random (all-MiniLM-L6-v2's
and BERT-base's sizes), at batch 1 and sequence 128 (minilm_b8,
bert_base_b8: batch 8); single depthwise convolutions dwCxHkKsS (C channels,
an H x H input, a K x K kernel, stride S, pads K // 2, bias, then Clip(0, 6)
as in MobileNetV2; seeded random weights), e.g. dw960x7k3s1,dw96x112k3s2.
Inputs: uniform [-1, 1), seed 0 (token ids: uniform in [0, 30522), mask
ones, token types zeros), written as .npy to --work.
--cpu-time reports CPU time (user + system, all threads) per pass instead of
wall time, as bench/cpu_rows.py --cpu-time does (the difference of runs of
--iters and 3 x --iters passes): on a loaded machine, where a process waits
for a core much of the time, the steadier measure; at one thread it is what
the wall time would be on an idle core (with --cpu-time the bracketed
figure is the best round of CPU time, "median of N runs" means the
difference method over N and 3N runs).
--rss adds each runner's peak resident memory (MB, the largest over the
rounds: the whole process, the interpreter and onnxruntime's Python
bindings included for onnxruntime, the compile for rlx).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIGHT = os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light")


BERT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# make_minilm_onnx.py --random arguments of the BERT-family models
BERT_SIZES = {"minilm": ["--layers", "6", "--hidden", "384", "--heads", "12", "--intermediate", "1536"],
              "bert_base": ["--layers", "12", "--hidden", "768", "--heads", "12", "--intermediate", "3072"]}


def models(work, ocr_model, light):
    """key: (model path, {input name: shape}, generator or None)"""
    mnv2 = os.path.join(work, "mobilenet_v2.onnx")
    table = {
        "ppocr640": (ocr_model, {"x": (1, 3, 640, 640)}, None),
        "resnet50": (os.path.join(light, "light_resnet50.onnx"), {"gpu_0/data_0": (1, 3, 224, 224)}, None),
        "mobilenet_v2": (mnv2, {"input": (1, 3, 224, 224)}, "mnv2"),
        "shufflenet": (os.path.join(light, "light_shufflenet.onnx"), {"gpu_0/data_0": (1, 3, 224, 224)}, None),
        # bench/make_quant_models.py's int8 PP-OCRv4 det (QDQ and QOperator forms), at 256 x 256
        "ppocr_qdq": (os.path.join(ROOT, "build", "quant", "ppocrv4_det_qdq.onnx"), {"x": (1, 3, 256, 256)}, None),
        "ppocr_qop": (os.path.join(ROOT, "build", "quant", "ppocrv4_det_qop.onnx"), {"x": (1, 3, 256, 256)}, None),
    }
    for name in BERT_SIZES:
        for batch, suffix in ((1, ""), (8, "_b8")):
            table[name + suffix] = (os.path.join(work, name + ".onnx"), {i: (batch, 128) for i in BERT_INPUTS}, name)
    return table


DW_KEY = re.compile(r"dw(\d+)x(\d+)k(\d+)s(\d+)$")


def write_depthwise(path, c, h, k, s):
    """One depthwise Conv (C channels, H x H input, K x K, stride S, pads
    K // 2, bias) and Clip(0, 6): input "x", output "y"."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (c, 1, k, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (c,)).astype(np.float32)
    o = (h + 2 * (k // 2) - k) // s + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], group=c, kernel_shape=[k, k], strides=[s, s],
                              pads=[k // 2] * 4),
             helper.make_node("Clip", ["t", "lo", "hi"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    g = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, o, o])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # onnxruntime 1.22 reads up to 10
    onnx.save(m, path)


def ensure_model(key, path, gen):
    """Writes the model of a generated key (MobileNetV2, the BERT encoders,
    dwCxHkKsS) to path if it is not there yet."""
    if os.path.exists(path):
        return
    dw = DW_KEY.match(key)
    if dw:
        write_depthwise(path, *(int(v) for v in dw.groups()))
    elif gen == "mnv2":
        subprocess.run([sys.executable, os.path.join(HERE, "make_mobilenet_v2.py"), path], check=True)
    elif gen in BERT_SIZES:
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random",
                        *BERT_SIZES[gen], "-o", path], check=True)


def write_inputs(work, key, shapes):
    """.npy files of the model's inputs: NAME=PATH arguments"""
    rng = np.random.default_rng(0)
    args = []
    for name, shape in shapes.items():
        if name == "input_ids":
            x = rng.integers(0, 30522, shape, dtype=np.int64)
        elif name == "attention_mask":
            x = np.ones(shape, np.int64)
        elif name == "token_type_ids":
            x = np.zeros(shape, np.int64)
        else:
            x = rng.uniform(-1, 1, shape).astype(np.float32)
        path = os.path.join(work, f"{key}_{name.replace('/', '_')}.npy")
        np.save(path, x)
        args.append(f"{name}={path}")
    return args


class _Popen(subprocess.Popen):
    """Popen that keeps the child's peak resident memory (wait4's rusage)."""
    maxrss_mb = 0.0

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self.maxrss_mb = ru.ru_maxrss / 1024.0  # kB on Linux
        return pid, sts


def run_rss(cmd, env=None):
    """Runs cmd: (stdout, the process's peak resident MB); raises on failure."""
    p = _Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=900)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])}: {err.strip()[-400:]}")
    return out, p.maxrss_mb


def cpu_per_run(fn, iters):
    """CPU seconds per pass of fn(n_iters) (a child process), by the
    difference of a run of iters and one of 3 * iters."""
    import resource
    used = []
    for n in (iters, 3 * iters):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        fn(n)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        used.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return max(used[1] - used[0], 0.0) / (2 * iters) * 1e3


def run_rlx(rlx, model, inputs, threads, iters, warmup, extra_env=None):
    env = dict(os.environ)
    env.update(extra_env or {})
    if threads:
        env["RLX_NUM_THREADS"] = str(threads)
    cmd = [rlx, "bench", model, "--device", "cpu"]
    for spec in inputs:
        cmd += ["--input", spec]
    cmd += ["--iters", str(iters), "--warmup", str(warmup), "--json"]
    out, rss = run_rss(cmd, env)
    return json.loads(out)["wall_ms"]["median"], rss


def run_ort(model, inputs, threads, iters, warmup):
    cmd = [sys.executable, os.path.join(HERE, "ort_time.py"), model, *inputs, "--iters", str(iters),
           "--warmup", str(warmup)]
    if threads:
        cmd += ["--threads", str(threads)]
    out, rss = run_rss(cmd)
    return json.loads(out.strip().splitlines()[-1])["median_ms"], rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--base-env", action="append", default=[], help="KEY=VALUE for the --base-rlx runs")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", default="ppocr640,resnet50,mobilenet_v2,shufflenet")
    ap.add_argument("--cpu-time", action="store_true",
                    help="CPU time per pass instead of wall time (steadier on a loaded machine; see cpu_rows.py)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_cpu_vs_ort"))
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--light-dir", default=LIGHT)
    ap.add_argument("--rss", action="store_true", help="add each runner's peak resident memory (MB)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    table = models(a.work, a.ocr_model, a.light_dir)
    rows = []
    for key in a.models.split(","):
        dw = DW_KEY.match(key)
        if dw:
            c, h, k, st = (int(v) for v in dw.groups())
            table[key] = (os.path.join(a.work, key + ".onnx"), {"x": (1, c, h, h)}, "dw")
        path, shapes, gen = table[key]
        ensure_model(key, path, gen)
        if not os.path.exists(path):
            print(f"skipping {key}: {path} is missing", file=sys.stderr)
            continue
        inputs = write_inputs(a.work, key, shapes)
        res = {"rlx": [], "base": [], "ort": []}
        rss = {"rlx": 0.0, "base": 0.0, "ort": 0.0}
        def timed(fn):
            """(ms, peak RSS) of fn(iters): its wall median, or with --cpu-time
            the CPU time per pass (cpu_per_run: the difference of
            runs of iters and 3 x iters)"""
            if not a.cpu_time:
                return fn(a.iters)
            peak = []
            ms_ = cpu_per_run(lambda n: peak.append(fn(n)[1]), a.iters)
            return ms_, max(peak)

        for r in range(a.rounds):
            t, m = timed(lambda n: run_rlx(a.rlx, path, inputs, a.threads, n, a.warmup))
            res["rlx"].append(t), rss.__setitem__("rlx", max(rss["rlx"], m))
            if a.base_rlx:
                base_env = dict(kv.split("=", 1) for kv in a.base_env)
                t, m = timed(lambda n: run_rlx(a.base_rlx, path, inputs, a.threads, n, a.warmup, base_env))
                res["base"].append(t), rss.__setitem__("base", max(rss["base"], m))
            t, m = timed(lambda n: run_ort(path, inputs, a.threads, n, a.warmup))
            res["ort"].append(t), rss.__setitem__("ort", max(rss["ort"], m))
            print(f"{key} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in res.items() if v),
                  file=sys.stderr)
        rows.append((key, {k: statistics.median(v) for k, v in res.items() if v},
                     {k: min(v) for k, v in res.items() if v}, rss))
    thr = a.threads or f"default ({os.cpu_count()} cores)"
    what = ("CPU ms per forward pass (all threads; --cpu-time)" if a.cpu_time else "ms per forward pass")
    print(f"\nthreads: {thr}; {what}: median over {a.rounds} rounds of each round's median of "
          f"{a.iters} runs (in brackets: the best round)" + ("; peak RSS in MB" if a.rss else "") + "\n")
    head = ("| model | " + ("rlx base | " if a.base_rlx else "") + "rlx | onnxruntime | rlx / ort |" +
            (" base / rlx |" if a.base_rlx else "") +
            ((" RSS base |" if a.base_rlx else "") + " RSS rlx | RSS ort |" if a.rss else ""))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    def ms(v):  # sub-millisecond single ops keep three digits
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"

    for key, m, b, rss in rows:
        base = f"{ms(m['base'])} ({ms(b['base'])}) | " if a.base_rlx else ""
        gain = f" {m['base'] / m['rlx']:.2f} |" if a.base_rlx else ""
        mem = ((f" {rss['base']:.0f} |" if a.base_rlx else "") + f" {rss['rlx']:.0f} | {rss['ort']:.0f} |"
               if a.rss else "")
        print(f"| {key} | {base}{ms(m['rlx'])} ({ms(b['rlx'])}) | {ms(m['ort'])} ({ms(b['ort'])}) | "
              f"{m['rlx'] / m['ort']:.2f} |{gain}{mem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
