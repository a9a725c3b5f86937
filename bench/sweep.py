#!/usr/bin/env python3
"""Sweep of rlx's GPU kernel variants on one machine (meant for the lent
H200): every variant is an environment setting that the WebGPU backend reads
when it compiles a plan, so one device run compares them all.

  python3 bench/sweep.py --rlx PATH/TO/rlx [--out sweep.json] [--txt sweep.txt]
                         [--models-dir DIR] [--budget 280] [--traces DIR] [--quick]

Workloads: an almost empty model (one Relu on 4 floats: the per-forward
overhead), resnet50 / mobilenet_v2 (batch 1), bert_base / minilm (batch 1,
seq 128), ppocrv4_det (1x3x736x1472, the RapidOCR preset of the demo page),
and single MatMuls (gemm_M_N_K: square,
BERT-like and GEMV-like shapes). Variants (see src/backend/webgpu/README.md):

  auto       defaults (tiles chosen per problem, implicit-GEMM convolution)
  baseline   RLX_GEMM_KERNEL=ref RLX_CONV_ALGO=im2col RLX_POOL_KERNEL=ref
             (the kernels before this work: 16x16 tiles, one output each)
  im2col / direct / implicit   RLX_CONV_ALGO
  tile:TMxTN,WGXxWGY,BK        RLX_GEMM_TILE
  loop       RLX_GEMM_KERNEL=loop (gemm.wgsl with loops over the register
             block, instead of the generated kernel that writes them out)
  nounroll   RLX_GEMM_UNROLL_K=0 (the generated kernel keeps its k-step loop)
  novec4     RLX_GEMM_VEC4=0
  prefetch   RLX_GEMM_PREFETCH=1 (register prefetch of the next k tile)
  nosplit / split4             RLX_GEMM_SPLITK=0 / 4
  wg128 / wg1024               RLX_GEMM_TARGET_WG
  f16        RLX_GPU_F16=1 RLX_GPU_COOP=0 (f16 weights, SIMT kernels)
  f16coop    RLX_GPU_F16=1 RLX_GPU_COOP=1 (tensor cores if the self-test passes)
  validate   RLX_GPU_VALIDATE=1 (error scopes on every run: their cost)

Jobs run in priority order until --budget seconds are spent; each is one
`rlx bench --json` process (a crash or a timeout costs one row). Writes JSON
with every result and prints, per workload, each variant's GPU time (median of
timestamp-timed runs) and wall time, best first. --traces DIR also writes
Chrome traces (--profile) of the default variant for resnet50 and bert_base.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (input helpers)
import export_models  # noqa: E402

T0 = time.time()

VARIANTS = {
    "auto": {},
    "baseline": {"RLX_GEMM_KERNEL": "ref", "RLX_CONV_ALGO": "im2col", "RLX_POOL_KERNEL": "ref"},
    "im2col": {"RLX_CONV_ALGO": "im2col"},
    "direct": {"RLX_CONV_ALGO": "direct"},
    "implicit": {"RLX_CONV_ALGO": "implicit"},
    "tile:4x4,16x16,16": {"RLX_GEMM_TILE": "4x4,16x16,16"},
    "tile:8x8,16x16,8": {"RLX_GEMM_TILE": "8x8,16x16,8"},
    "tile:8x8,16x16,16": {"RLX_GEMM_TILE": "8x8,16x16,16"},
    "tile:8x4,16x16,16": {"RLX_GEMM_TILE": "8x4,16x16,16"},
    "tile:4x8,16x16,16": {"RLX_GEMM_TILE": "4x8,16x16,16"},
    "tile:8x8,8x32,8": {"RLX_GEMM_TILE": "8x8,32x8,8"},
    "tile:4x4,32x1,16": {"RLX_GEMM_TILE": "4x4,32x1,16"},
    "loop": {"RLX_GEMM_KERNEL": "loop"},
    "nounroll": {"RLX_GEMM_UNROLL_K": "0"},
    "novec4": {"RLX_GEMM_VEC4": "0"},
    "prefetch": {"RLX_GEMM_PREFETCH": "1"},
    "nosplit": {"RLX_GEMM_SPLITK": "0"},
    "split4": {"RLX_GEMM_SPLITK": "4"},
    "wg128": {"RLX_GEMM_TARGET_WG": "128"},
    "wg1024": {"RLX_GEMM_TARGET_WG": "1024"},
    "f16": {"RLX_GPU_F16": "1", "RLX_GPU_COOP": "0"},
    "f16coop": {"RLX_GPU_F16": "1", "RLX_GPU_COOP": "1"},
    "validate": {"RLX_GPU_VALIDATE": "1"},
}

CONV_VARIANTS = ["im2col", "direct", "implicit"]
GEMM_VARIANTS = ["prefetch", "tile:4x4,16x16,16", "tile:8x8,16x16,8", "tile:8x8,16x16,16", "tile:8x4,16x16,16",
                 "tile:4x8,16x16,16", "tile:8x8,8x32,8", "novec4", "nosplit", "split4", "wg128", "wg1024"]


def log(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def tiny_model(path):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--out", default="sweep.json")
    ap.add_argument("--txt", default=None)
    ap.add_argument("--models-dir", default=os.path.join(tempfile.gettempdir(), "rlx_bench_models"))
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--budget", type=float, default=280.0)
    ap.add_argument("--traces", default=None, help="folder for Chrome traces of the default variant")
    ap.add_argument("--quick", action="store_true", help="small shapes, few variants (no real GPU)")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    quick = a.quick
    iters = 3 if quick else a.iters
    seq = 16 if quick else 128
    tmp = tempfile.mkdtemp(prefix="rlx_sweep_")
    os.makedirs(a.models_dir, exist_ok=True)

    # ---- workloads: name -> (path, input args)
    work = {}
    tiny = os.path.join(a.models_dir, "tiny_relu.onnx")
    if not os.path.exists(tiny):
        tiny_model(tiny)
    work["tiny_relu"] = (tiny, [])
    names = ["minilm"] if quick else ["resnet50", "mobilenet_v2", "bert_base", "minilm"]
    got = export_models.models(a.models_dir, names, log=log)
    import numpy as np
    for n in names:
        if n not in got:
            continue
        if n in export_models.BERTS:
            feeds = compare.bert_feeds(1, seq)
        else:
            s = 64 if quick else 224
            feeds = {"input": np.random.default_rng(0).uniform(-1, 1, (1, 3, s, s)).astype(np.float32)}
        d = tempfile.mkdtemp(dir=tmp)
        work[n] = (got[n]["path"], compare.write_npys(feeds, d))
    if os.path.exists(a.ocr_model):
        s = 64 if quick else 736
        d = tempfile.mkdtemp(dir=tmp)
        x = np.random.default_rng(0).uniform(-1, 1, (1, 3, s, 2 * s)).astype(np.float32)
        work["ppocrv4_det"] = (a.ocr_model, compare.write_npys({"x": x}, d))
    gemms = [(128, 128, 128)] if quick else [(4096, 4096, 4096), (1024, 1024, 1024), (128, 768, 768),
                                            (128, 3072, 768), (1, 4096, 4096), (8, 4096, 4096), (512, 512, 2048)]
    for (M, N, K) in gemms:
        gn = "gemm_%d_%d_%d" % (M, N, K)
        gm = export_models.models(a.models_dir, [gn], log=log)
        if gn in gm:
            work[gn] = (gm[gn]["path"], [])

    # ---- jobs in priority order
    conv_models = [m for m in ("resnet50", "mobilenet_v2", "ppocrv4_det") if m in work]
    all_models = [m for m in work if not m.startswith("gemm_") and m != "tiny_relu"]
    gemm_w = [m for m in work if m.startswith("gemm_")]
    jobs = []
    jobs += [("tiny_relu", v) for v in ("auto", "validate")]
    jobs += [(m, v) for m in gemm_w + all_models for v in ("auto", "loop", "nounroll", "baseline")]
    jobs += [(m, v) for m in gemm_w for v in GEMM_VARIANTS]
    jobs += [(m, v) for m in conv_models for v in CONV_VARIANTS]
    jobs += [(m, v) for m in all_models for v in GEMM_VARIANTS]
    jobs += [(m, v) for m in all_models + gemm_w for v in ("f16", "f16coop")]
    if quick:
        jobs = [j for j in jobs if j[1] in ("auto", "loop", "baseline", "f16", "tile:8x8,16x16,8", "im2col")]

    results = []
    traced = set()
    for (w, v) in jobs:
        left = a.budget - (time.time() - T0)
        if left < 5:
            log("budget of %.0f s spent: %d jobs not run" % (a.budget, len(jobs) - len(results)))
            break
        path, in_args = work[w]
        it = 200 if w == "tiny_relu" else (5 if w == "gemm_4096_4096_4096" else iters)
        prof = None
        if a.traces and v == "auto" and w in ("resnet50", "bert_base") and w not in traced:
            os.makedirs(a.traces, exist_ok=True)
            prof = os.path.join(a.traces, "trace_%s.json" % w)
            traced.add(w)
        r = compare.run_rlx(a.rlx, path, "gpu", in_args, VARIANTS[v], it, 3, min(120, max(10, int(left))), prof)
        results.append({"workload": w, "variant": v, "env": VARIANTS[v], "result": r})
        gm, wm = compare.med(r, "gpu_ms"), compare.med(r)
        log("%-22s %-20s GPU %s ms, wall %s ms%s" % (w, v, compare.fmt(gm), compare.fmt(wm),
                                                    ("  ! " + r["error"]) if "error" in r else ""))
    table = render(results)
    print(table)
    with open(a.out, "w") as f:
        json.dump({"results": results, "elapsed_s": time.time() - T0, "quick": quick}, f, indent=1)
    if a.txt:
        with open(a.txt, "w") as f:
            f.write(table)


def render(results):
    L = ["Sweep: GPU time (median of timestamp-timed runs) and wall time per forward, ms; best GPU time first"]
    by = {}
    for r in results:
        by.setdefault(r["workload"], []).append(r)
    for w, rows in by.items():
        L.append("")
        L.append(w)
        base = next((compare.med(x["result"], "gpu_ms") for x in rows if x["variant"] == "auto"), None)
        def key(x):
            g = compare.med(x["result"], "gpu_ms")
            return g if g is not None else 1e30
        for x in sorted(rows, key=key):
            g, wl = compare.med(x["result"], "gpu_ms"), compare.med(x["result"])
            err = x["result"].get("error")
            L.append("  %-20s GPU %10s  wall %10s  vs auto %6s%s" % (
                x["variant"], compare.fmt(g), compare.fmt(wl), compare.ratio(g, base), ("  ! " + err[:100]) if err else ""))
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
