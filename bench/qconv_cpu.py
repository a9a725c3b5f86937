#!/usr/bin/env python3
"""Times single QLinearConv nodes on rlx's CPU (one or more rlx binaries,
e.g. before / after a change) against onnxruntime's CPU provider, in
interleaved rounds: per round every binary, then onnxruntime; the cell is
the median over rounds of each run's median. Models come from seeded
random data (uint8 x with zero point 128, per-channel int8 w, int32 bias,
uint8 y), the shapes of PP-OCRv4 det (make_quant_models.py) and a few more.

    bench/qconv_cpu.py [--rlx build/rlx ...] [--threads 1] [--rounds 3] [--iters 20] [--only SUBSTR]

Also checks that every rlx binary's output equals onnxruntime's bit for bit
(onnxruntime requantizes with its own rounding of the f32 multiplier, so a
mismatch of one level can come from it; it prints the count)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qconv_gpu import ort_session_ms, write_qmodel  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, cin, cout, k, stride, pad, group, h (= w)
SHAPES = [
    ("3x3 96->24 64x64", 96, 24, 3, 1, 1, 1, 64),
    ("3x3 96->24 16x16", 96, 24, 3, 1, 1, 1, 16),
    ("3x3 s2 3->16 256x256", 3, 16, 3, 2, 1, 1, 256),
    ("1x1 12->96 64x64", 12, 96, 1, 1, 0, 1, 64),
    ("1x1 32->48 64x64", 32, 48, 1, 1, 0, 1, 64),
    ("1x1 48->96 32x32", 48, 96, 1, 1, 0, 1, 32),
    ("1x1 192->192 16x16", 192, 192, 1, 1, 0, 1, 16),
    ("1x1 384->384 8x8", 384, 384, 1, 1, 0, 1, 8),
    ("dw3x3 16 128x128", 16, 16, 3, 1, 1, 16, 128),
    ("dw3x3 s2 48 64x64", 48, 48, 3, 2, 1, 48, 64),
    ("dw5x5 192 16x16", 192, 192, 5, 1, 2, 192, 16),
    ("dw5x5 384 8x8", 384, 384, 5, 1, 2, 384, 8),
    ("3x3 g4 64->64 32x32", 64, 64, 3, 1, 1, 4, 32),
]


def rlx_ms(rlx, model, x, threads, iters):
    r = subprocess.run([rlx, "bench", model, "--device", "cpu", "--input", "x=" + x, "--warmup", "3", "--iters",
                        str(iters), "--json", "--quiet", "--option", "cpu.threads=%d" % threads],
                       capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stderr)
        return None
    return json.loads(r.stdout)["wall_ms"]["median"]


def rlx_out(rlx, model, x, threads, d):
    out = tempfile.mkdtemp(dir=d)
    r = subprocess.run([rlx, "run", model, "--device", "cpu", "--iters", "0", "--output-dir", out, "--input",
                        "x=" + x, "--option", "cpu.threads=%d" % threads], capture_output=True, text=True)
    if r.returncode:
        return None
    return np.load(os.path.join(out, sorted(f for f in os.listdir(out) if f.endswith(".npy"))[0]))




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", action="append", help="rlx binary (repeatable; default build/rlx)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", help="shapes whose name contains this")
    a = ap.parse_args()
    rlxs = a.rlx or [os.path.join(ROOT, "build", "rlx")]
    d = tempfile.mkdtemp(prefix="rlx_qconv_cpu_")
    rng = np.random.default_rng(0)
    print("uptime:", os.getloadavg())
    print("| shape | " + " | ".join(os.path.basename(os.path.dirname(os.path.dirname(r))) + "/" +
                                    os.path.basename(r) for r in rlxs) + " | onnxruntime | ratio(s) | exact |")
    for s in SHAPES:
        if a.only and a.only not in s[0]:
            continue
        mp, xp = write_qmodel(d, *s, False, rng)[:2]
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(mp, so, providers=["CPUExecutionProvider"])
        feeds = {"x": np.load(xp)}
        ref = sess.run(None, feeds)[0]
        times = [[] for _ in rlxs] + [[]]
        for _ in range(a.rounds):
            for i, r in enumerate(rlxs):
                times[i].append(rlx_ms(r, mp, xp, a.threads, a.iters))
            times[-1].append(ort_session_ms(sess, feeds, a.iters))
        med = [float(np.median([t for t in ts if t is not None])) if any(t is not None for t in ts) else None
               for ts in times]
        exact = []
        for r in rlxs:
            o = rlx_out(r, mp, xp, a.threads, d)
            exact.append("-" if o is None else str(int(np.count_nonzero(o.astype(int) != ref.astype(int)))))
        print("| %s | %s | %.3f ms | %s | %s |" % (
            s[0], " | ".join("%.3f ms" % m for m in med[:-1]), med[-1],
            " / ".join("%.2f" % (m / med[-1]) for m in med[:-1]), " ".join(exact)))
        sys.stdout.flush()
    print("uptime:", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
