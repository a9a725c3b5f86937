#!/usr/bin/env python3
"""Times the integer convolutions on the GPU (issue 12: QLinearConv and
ConvInteger through src/backend/webgpu/lower_qgemm.c) against rlx's CPU,
the same convolution in f32 on the GPU, and onnxruntime's CPU provider
(when installed), and checks that the GPU's output equals the CPU's bit
for bit. Models are written here with onnx.helper from seeded random data
(no quantizer, no download): single QLinearConv nodes (uint8 x, per-channel
int8 w, int32 bias, uint8 y), one ConvInteger, and their f32 Conv twins.
Extra models (e.g. make_quant_models.py's ppocrv4_det_qop.onnx) with
--model PATH=INPUT.npy.

    bench/qconv_gpu.py [--rlx build/rlx] [--small] [--iters 20] [--option KEY=VALUE ...]
                       [--vs KEY=VALUE[,KEY=VALUE] ...] [--gpu-only] [--only SUBSTRING ...]
                       [--model build/quant/ppocrv4_det_qop.onnx=build/quant/x_1x3x256x256.npy]

--option passes a session option to the GPU runs of the integer models (e.g.
gpu.qgemm_tile=0: one output per invocation; gpu.qgemm_tile=wg: the
integer workgroup tiles by lower_qgemm.c's tile rule (wgRxC: one tile);
gpu.qgemm_tile=gen: the generated int8 GEMM; gpu.gemm_tile=TMxTN,WGXxWGY,BK:
gen's tile; gpu.dot4=0).
--vs adds a column per value: the integer model's GPU time with those
options (on top of --option), its ratio to the first column, and its
bits checked against the CPU too; e.g. --vs gpu.qgemm_tile=legacy times
the kernels before the tile rule (no wg tiles for 8 <= m < 16, taps
gathered byte by byte, depthwise one output at a time) against today's in
one call.
--gpu-only skips the CPU, f32-twin and onnxruntime timings (the bits are
still checked against one CPU run). --only keeps the shapes whose name
contains one of the substrings.

Prints one line per model: GPU time (GPU timestamps and wall), the --vs
columns, CPU wall, f32 GPU time of the twin, onnxruntime wall, and whether
GPU == CPU (every column's)."""
import argparse
import json
import re
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, cin, cout, k, stride, pad, group, (h, w), ConvInteger: ResNet-50's and PP-OCRv4 det's (narrow: 16-64
# output channels at 184x368, the page at 736x1472 / 4) shapes (BENCHMARKS.md, issue 12)
SHAPES = [
    ("3x3 64->64 56x56", 64, 64, 3, 1, 1, 1, (56, 56), False),
    ("1x1 256->64 56x56", 256, 64, 1, 1, 0, 1, (56, 56), False),
    ("3x3 s2 32->64 112x112", 32, 64, 3, 2, 1, 1, (112, 112), False),
    ("dw3x3 96 112x112", 96, 96, 3, 1, 1, 96, (112, 112), False),
    ("dw3x3 s2 96 112x112", 96, 96, 3, 2, 1, 96, (112, 112), False),
    ("dw5x5 64 92x184", 64, 64, 5, 1, 2, 64, (92, 184), False),
    ("3x3 96->24 64x64", 96, 24, 3, 1, 1, 1, (64, 64), False),
    ("3x3 16->16 184x368", 16, 16, 3, 1, 1, 1, (184, 368), False),
    ("1x1 512->2048 7x7", 512, 2048, 1, 1, 0, 1, (7, 7), False),  # ResNet-50's last stage: rows of 49 bytes
    ("1x1 32->16 184x368", 32, 16, 1, 1, 0, 1, (184, 368), False),
    ("3x3 s2 16->32 184x368", 16, 32, 3, 2, 1, 1, (184, 368), False),
    ("ConvInteger 3x3 64->64 56x56", 64, 64, 3, 1, 1, 1, (56, 56), True),
]


def write_qmodel(d, name, cin, cout, k, s, p, g, hw, integer, rng):
    """The integer model (ConvInteger, or QLinearConv with uint8 x and y, per-channel int8 w, int32 bias) and its
    input (hw: (h, w), or one int for both: bench/qconv_cpu.py); returns (model path, input .npy path, input shape,
    weight shape, Conv attributes, file tag)."""
    h, w = hw if isinstance(hw, tuple) else (hw, hw)
    x = rng.integers(0, 256, (1, cin, h, w)).astype(np.uint8)
    w = rng.integers(-127, 128, (cout, cin // g, k, k)).astype(np.int8)
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, group=g)
    tag = name.replace(" ", "_").replace(">", "").replace("-", "")
    if integer:
        inits = [NH.from_array(w, "w"), NH.from_array(np.array(128, np.uint8), "zx"),
                 NH.from_array(np.zeros(cout, np.int8), "zw")]
        node = H.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], **attrs)
        yt = T.INT32
    else:
        sw = rng.uniform(0.002, 0.01, cout).astype(np.float32)
        inits = [NH.from_array(np.array(0.02, np.float32), "sx"), NH.from_array(np.array(128, np.uint8), "zx"),
                 NH.from_array(w, "w"), NH.from_array(sw, "sw"), NH.from_array(np.zeros(cout, np.int8), "zw"),
                 NH.from_array(np.array(0.05 * np.sqrt(cin // g * k * k) / 8, np.float32), "sy"),
                 NH.from_array(np.array(128, np.uint8), "zy"),
                 NH.from_array(rng.integers(-2000, 2000, cout).astype(np.int32), "b")]
        node = H.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"], ["y"], **attrs)
        yt = T.UINT8
    gr = H.make_graph([node], "q", [H.make_tensor_value_info("x", T.UINT8, list(x.shape))],
                      [H.make_tensor_value_info("y", yt, None)], inits)
    qp = os.path.join(d, tag + ".onnx")
    onnx.save(H.make_model(gr, opset_imports=[H.make_opsetid("", 13)], ir_version=8), qp)
    xp = os.path.join(d, tag + "_x.npy")
    np.save(xp, x)
    return qp, xp, x.shape, w.shape, attrs, tag


def write_models(d, name, cin, cout, k, s, p, g, hw, integer, rng):
    """The integer model and its f32 twin; returns (int path, f32 path, input .npy paths)."""
    qp, xp, x_shape, w_shape, attrs, tag = write_qmodel(d, name, cin, cout, k, s, p, g, hw, integer, rng)
    xf = rng.uniform(-1, 1, x_shape).astype(np.float32)
    gf = H.make_graph([H.make_node("Conv", ["x", "w"], ["y"], **attrs)], "f",
                      [H.make_tensor_value_info("x", T.FLOAT, list(x_shape))],
                      [H.make_tensor_value_info("y", T.FLOAT, None)],
                      [NH.from_array(rng.uniform(-1, 1, w_shape).astype(np.float32), "w")])
    fp = os.path.join(d, tag + "_f32.onnx")
    onnx.save(H.make_model(gf, opset_imports=[H.make_opsetid("", 13)], ir_version=8), fp)
    xfp = os.path.join(d, tag + "_xf.npy")
    np.save(xfp, xf)
    return qp, fp, xp, xfp


def rlx_bench(rlx, model, x, device, iters, opts=()):
    args = [rlx, "bench", model, "--device", device, "--input", "x=" + x, "--warmup", "3",
            "--iters", str(iters), "--json", "--quiet"]
    for o in opts:
        args += ["--option", o]
    if device == "cpu":
        args += ["--gpu-iters", "0"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None
    j = json.loads(r.stdout)
    return j["wall_ms"]["median"], (j["gpu_ms"] or {}).get("median"), j.get("cpu_steps")


def rlx_out(rlx, model, x, device, d, opts=()):
    out = os.path.join(d, "out_" + device)
    args = [rlx, "run", model, "--device", device, "--iters", "0", "--output-dir", out, "--input", "x=" + x]
    for o in opts:
        args += ["--option", o]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None
    return [np.load(os.path.join(out, f)) for f in sorted(os.listdir(out)) if f.endswith(".npy")]


def ort_session_ms(sess, feeds, iters):
    """Median ms of `iters` runs of an onnxruntime session after 3 warm-up runs
    (bench/qconv_cpu.py uses it too)."""
    import time
    for _ in range(3):
        sess.run(None, feeds)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def ort_ms(model, x, iters):
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        return ort_session_ms(sess, {"x": np.load(x)}, iters)
    except Exception:  # noqa: BLE001 (onnxruntime missing or the op combination not implemented)
        return None


def fmt(v):
    return "-" if v is None else "%.3g ms" % v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--small", action="store_true", help="spatial sizes / 4 (lavapipe)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--model", action="append", default=[], help="PATH=INPUT.npy (input name x)")
    ap.add_argument("--option", action="append", default=[], help="KEY=VALUE for the integer models' GPU runs")
    ap.add_argument("--vs", action="append", default=[],
                    help="KEY=VALUE[,KEY=VALUE]: another column of the integer models' GPU runs with these options")
    ap.add_argument("--gpu-only", action="store_true", help="skip the CPU, f32-twin and onnxruntime timings")
    ap.add_argument("--only", action="append", default=[], help="keep the shapes whose name contains this")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="rlx_qconv_")
    if a.option:
        print("GPU runs of the integer models with " + " ".join(a.option))
    rng = np.random.default_rng(1)
    # several options: separated by commas that start another KEY=VALUE
    # (a value such as gpu.gemm_tile=4x4,16x16,8 keeps its own commas)
    vs = [re.split(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)", v) for v in a.vs]
    print("| model | GPU int (GPU ts) | GPU int (wall) |" + "".join(" %s (GPU ts) | ratio |" % "+".join(v) for v in vs)
          + " CPU int (wall) | GPU f32 twin (GPU ts) | onnxruntime CPU | GPU == CPU | CPU steps on GPU plan |")
    print("|---|---:|---:|" + "---:|---:|" * len(vs) + "---:|---:|---:|---|---:|")
    rows = []
    for name, cin, cout, k, s, p, g, hw, integer in SHAPES:
        if a.small:
            name = name.replace("%dx%d" % hw, "%dx%d" % (hw[0] // 4, hw[1] // 4))
            hw = (hw[0] // 4, hw[1] // 4)
        if a.only and not any(o in name for o in a.only):
            continue
        qp, fp, xp, xfp = write_models(d, name, cin, cout, k, s, p, g, hw, integer, rng)
        rows.append((name, qp, xp, fp, xfp))
    for spec in a.model:
        path, _, x = spec.partition("=")
        if os.path.exists(path) and os.path.exists(x):
            rows.append((os.path.basename(path), path, x, None, None))
    for name, qp, xp, fp, xfp in rows:
        g = rlx_bench(a.rlx, qp, xp, "gpu", a.iters, a.option)
        gv = [rlx_bench(a.rlx, qp, xp, "gpu", a.iters, a.option + v) for v in vs]
        c = None if a.gpu_only else rlx_bench(a.rlx, qp, xp, "cpu", a.iters)
        f = rlx_bench(a.rlx, fp, xfp, "gpu", a.iters) if fp and not a.gpu_only else None
        oc = rlx_out(a.rlx, qp, xp, "cpu", d)
        sames = []
        for opts in [a.option] + [a.option + v for v in vs]:
            og = rlx_out(a.rlx, qp, xp, "gpu", d, opts)
            if og is None or oc is None or len(og) != len(oc):
                sames.append("run failed")
            elif all(np.array_equal(u, v) for u, v in zip(og, oc)):
                sames.append("yes")
            elif fp:
                sames.append("NO")
            else:  # a whole model: its f32 ops round differently on the two devices
                sames.append("max |d| %.3g" % max(float(np.abs(u.astype(np.float64) - v).max()) for u, v in zip(og, oc)))
        cols = ""
        for r in gv:
            ratio = "%.2f" % (r[1] / g[1]) if r and g and r[1] and g[1] else "-"
            cols += " %s | %s |" % (fmt(r[1] if r else None), ratio)
        same = sames[0] if len(set(sames)) == 1 else " / ".join(sames)
        print("| %s | %s | %s |%s %s | %s | %s | %s | %s |" % (
            name, fmt(g[1] if g else None), fmt(g[0] if g else None), cols, fmt(c[0] if c else None),
            fmt(f[1] if f else None), "-" if a.gpu_only else fmt(ort_ms(qp, xp, a.iters)), same,
            g[2] if g else "-"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
