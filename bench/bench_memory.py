#!/usr/bin/env python3
"""Peak resident memory (the kernel's ru_maxrss of the child, as
/usr/bin/time -v reports it) of one `rlx run` against onnxruntime's, in the
same run, on a BERT-base-sized model with seeded random weights (~435 MB of
initializers), embedded and in the external-data form.

  .venv/bin/python bench/bench_memory.py [--dir DIR] [--device cpu] [--device gpu]
      [--repeat 3] [--seq 128]

DIR (default /tmp/rlx_bench_memory) keeps the models between runs:
bert_base.onnx from scripts/make_minilm_onnx.py --random --layers 12
--hidden 768 --heads 12 --seed 0, and ext/bert_base_ext.onnx + .data (onnx's
save_as_external_data, all tensors in one file). Each measurement runs in a
fresh child (rlx: `rlx run MODEL --iters 1 --warmup 0`, which loads,
creates a session, compiles and runs twice; onnxruntime: load, session,
two runs, default options); the median of --repeat runs is printed with the
weights' size and the ratio rlx / onnxruntime.
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_CHILD = r"""
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
seq = int(sys.argv[2])
rng = np.random.default_rng(0)
feed = {"input_ids": rng.integers(1000, 30000, (1, seq)).astype(np.int64),
        "attention_mask": np.ones((1, seq), np.int64), "token_type_ids": np.zeros((1, seq), np.int64)}
for _ in range(2):
    s.run(None, feed)
"""
PROBE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
         "stderr=subprocess.PIPE); sys.stderr.write(r.stderr.decode(errors='replace')[-2000:]) if r.returncode else 0; "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")


def peak_mb(cmd):
    p = subprocess.run([sys.executable, "-c", PROBE, *cmd], capture_output=True, text=True, timeout=1800)
    if p.returncode:
        sys.exit("bench_memory: %s failed: %s" % (" ".join(cmd[:3]), p.stderr))
    return int(p.stdout.split()[-1]) / 1024.0 * 1.048576  # KiB -> MB


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/rlx_bench_memory")
    ap.add_argument("--device", action="append", help="rlx devices (default: cpu)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")), "rlx"))
    a = ap.parse_args()
    os.makedirs(os.path.join(a.dir, "ext"), exist_ok=True)
    emb = os.path.join(a.dir, "bert_base.onnx")
    ext = os.path.join(a.dir, "ext", "bert_base_ext.onnx")
    if not os.path.exists(emb):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random", "--layers",
                        "12", "--hidden", "768", "--heads", "12", "--seed", "0", "-o", emb], check=True)
    if not os.path.exists(ext):
        import onnx
        onnx.save_model(onnx.load(emb), ext, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="bert_base_ext.data", size_threshold=1024)
    weights = os.path.getsize(os.path.join(a.dir, "ext", "bert_base_ext.data")) / 1e6
    print("model: BERT-base, random weights; weights %.0f MB; seq %d; median of %d runs; peak RSS in MB"
          % (weights, a.seq, a.repeat))
    shapes = []
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        shapes += ["--shape", "%s=1x%d" % (n, a.seq)]
    print("%-10s %-8s %10s %14s %8s" % ("form", "device", "rlx", "onnxruntime", "ratio"))
    for form, path in (("embedded", emb), ("external", ext)):
        ort_mb = statistics.median(peak_mb([sys.executable, "-c", ORT_CHILD, path, str(a.seq)])
                                   for _ in range(a.repeat))
        for dev in a.device or ["cpu"]:
            rlx_mb = statistics.median(peak_mb([a.rlx, "run", path, "--device", dev, "--iters", "1", "--warmup", "0",
                                                "--quiet", *shapes]) for _ in range(a.repeat))
            print("%-10s %-8s %10.0f %14.0f %8.2f" % (form, dev, rlx_mb, ort_mb, rlx_mb / ort_mb))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
