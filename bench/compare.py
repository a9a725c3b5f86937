#!/usr/bin/env python3
"""rlx against PyTorch and onnxruntime, in one run, on one machine.

  python3 bench/compare.py --rlx PATH/TO/rlx [--out compare.json] [--txt compare.txt]
                           [--models-dir DIR] [--budget 450] [--quick]

Rows (each timed in this run; medians with p10/p90 in the JSON):
  models   resnet50, mobilenet_v2 (torchvision, random weights), bert_base and
           minilm (transformers BertConfig, random weights, seq 128), each at
           batch 1 and batch 8; models/ppocrv4_det.onnx (the demo page, 1x3x192x384,
           and 1x3x736x1472 as in BENCHMARKS.md) and the
           ONNX suite's light/ models (their own input shapes; ONNX only)
    rlx gpu        `rlx bench --device gpu --json`: wall clock of a whole pass
                   (input upload, dispatches, read-back) and the GPU time from
                   timestamp queries
    rlx gpu f16    the same with RLX_GPU_F16=1 (f16 weights, tensor cores where
                   the cooperative-matrix self-test passes)
    rlx cpu        `rlx bench --device cpu --json` (fewer iterations)
    torch eager    PyTorch on CUDA, inputs already on the GPU, synchronised
                   after each forward (TF32 off)
    torch graph    the same forward captured once in torch.cuda.CUDAGraph and
                   replayed
    ort cpu        onnxruntime CPUExecutionProvider, default threads
  gemm     y = a x w for M = N = K in 1024..8192 (and BERT-like shapes), f32
           and f16: rlx's GPU time (w a constant; f16 = RLX_GPU_F16=1) against
           torch.matmul timed with CUDA events (cuBLAS, TF32 off; f16 operands)
  accuracy `rlx run --device gpu --check` (GPU against the CPU backend) in f32
           and in f16 mode on ppocrv4_det (the demo page, and a random
           640x640 input) and minilm: max abs and normwise relative error

Without torch (or without CUDA) the torch rows are skipped with a message and
the BERT models come from scripts/make_minilm_onnx.py; the rlx and
onnxruntime rows still run. --budget (seconds) stops starting new rows once
spent; --quick uses small shapes and few iterations (for a check on a
machine without a real GPU). Prints one table with ratios; writes JSON.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import export_models  # noqa: E402

T0 = time.time()


def log(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def stats(v):
    v = sorted(v)
    if not v:
        return None
    n = len(v)
    med = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    return {"median": med, "p10": v[max(0, -(-n // 10) - 1)], "p90": v[min(n - 1, -(-9 * n // 10) - 1)],
            "min": v[0], "n": n}


# ------------------------------------------------------------ inputs

def bert_feeds(batch, seq):
    import numpy as np
    rng = np.random.default_rng(1)
    ids = rng.integers(1000, 30000, (batch, seq), dtype=np.int64)
    ids[:, 0] = 101
    ids[:, -1] = 102
    return {"input_ids": ids, "attention_mask": np.ones((batch, seq), np.int64),
            "token_type_ids": np.zeros((batch, seq), np.int64)}


def model_feeds(path, overrides):
    """Random feeds for every graph input (dynamic dims 1 unless given)."""
    import numpy as np
    import onnx
    m = onnx.load(path, load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in m.graph.input:
        if vi.name in init:
            continue
        if vi.name in overrides:
            feeds[vi.name] = overrides[vi.name]
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dt, np.floating):
            feeds[vi.name] = rng.uniform(-1, 1, shape).astype(dt)
        else:
            feeds[vi.name] = np.zeros(shape, dt)
    return feeds


def demo_input(png, preset="paddleocr", limit=None):
    """The demo page preprocessed as ocr_det does (PaddleOCR preset:
    1x3x192x384; preset "rapidocr": 1x3x736x1472; limit overrides the
    preset's side limit), or None without the page or tests/python/ocr_ref.py."""
    try:
        import numpy as np
        sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
        import ocr_ref
        if not os.path.exists(png):
            return None
        img = ocr_ref.png_read_file(png)
        if img.shape[2] == 1:
            rgb = np.repeat(img, 3, axis=2)
        elif img.shape[2] == 2:
            rgb = ocr_ref.composite_white(np.repeat(img[..., :1], 3, axis=2), img[..., 1])
        elif img.shape[2] == 4:
            rgb = ocr_ref.composite_white(img[..., :3], img[..., 3])
        else:
            rgb = img[..., :3]
        return ocr_ref.preprocess(rgb.astype(np.uint8), preset=preset, limit=limit)
    except Exception as e:
        log("demo page: %s" % e)
        return None


def write_npys(feeds, d):
    import numpy as np
    args = []
    for k, v in feeds.items():
        p = os.path.join(d, "in_%s.npy" % re.sub(r"[^A-Za-z0-9_]", "_", k))
        np.save(p, v)
        args += ["--input", "%s=%s" % (k, p)]
    return args


# ------------------------------------------------------------ runners

def run_rlx(rlx, model, device, in_args, env, iters, warmup, timeout, profile=None):
    cmd = [rlx, "bench", model, "--device", device, "--json", "--iters", str(iters), "--warmup", str(warmup)] + in_args
    if profile:
        cmd += ["--profile", profile]
    e = dict(os.environ)
    e.update(env)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        return {"error": "timeout after %d s" % timeout}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:400]}
    try:
        return json.loads(p.stdout)
    except Exception as ex:
        return {"error": "bad JSON: %s" % ex}


def run_ort(model, feeds, iters, warmup):
    import onnxruntime as ort
    so = ort.SessionOptions()
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        s.run(None, feeds)
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        s.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return {"wall_ms": stats(t)}


def peer_versions():
    """Versions of the peers (for BENCHMARKS.md rows)."""
    v = {}
    for mod in ("torch", "onnxruntime", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception as e:
            v[mod] = "not available (%s)" % type(e).__name__
    try:
        import torch
        if torch.cuda.is_available():
            v["cuda_device"] = torch.cuda.get_device_name(0)
            v["cuda"] = torch.version.cuda
    except Exception:
        pass
    return v


def torch_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def run_torch(name, batch, iters, warmup, seq=128, half=False):
    """Eager and CUDA-graph wall ms of a benchmark model; half: the model
    in f16 (model.half()) and its floating-point inputs f16 too."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = export_models.torch_model(name).cuda()
    args = export_models.torch_inputs(name, batch, seq, device="cuda")
    if half:
        m = m.half()
        args = tuple(t.half() if t.is_floating_point() else t for t in args)
    res = {}
    with torch.inference_mode():
        for _ in range(warmup):
            m(*args)
        torch.cuda.synchronize()
        t = []
        for _ in range(iters):
            t0 = time.perf_counter()
            m(*args)
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
        res["eager"] = {"wall_ms": stats(t)}
        res["graph"] = torch_graph(m, args, iters, warmup)
        if "error" in res["graph"] and name in export_models.BERTS:
            # transformers' mask preparation copies a CPU tensor inside
            # forward, which capture forbids; without the (all-ones) mask
            # the encoder does the same work less one Add per layer
            err = res["graph"]["error"]
            res["graph"] = torch_graph(m, (args[0], None, args[2]), iters, warmup)
            res["graph"]["note"] = "captured without attention_mask (with it: %s)" % err[:120]
            if "error" in res["graph"]:
                # BertModel.forward itself cannot be captured: capture its
                # parts with the additive mask made beforehand (same math)
                err2 = res["graph"]["error"]
                try:
                    d = BertParts(m.inner, args[1])
                    with torch.inference_mode():
                        ref, got = m(*args)[0], d(args[0], args[2])[0]
                        diff = float((ref.float() - got.float()).abs().max())
                    res["graph"] = torch_graph(d, (args[0], args[2]), iters, warmup)
                    res["graph"]["note"] = ("captured as embeddings + encoder + pooler with the additive mask made "
                                            "before capture (max |diff| against the model's forward %.3g; forward "
                                            "with the mask: %s; without: %s)" % (diff, err[:80], err2[:80]))
                except Exception as e:  # another transformers version's module layout
                    res["graph"] = {"error": "by parts: %s (forward with the mask: %s; without: %s)" %
                                    (str(e).splitlines()[0][:120] if str(e) else type(e).__name__, err[:80], err2[:80])}
    del m
    torch.cuda.empty_cache()
    return res


def BertParts(bert, mask):
    """transformers' BertModel run as its parts (embeddings, encoder,
    pooler) with the additive attention mask of `mask` ([batch, seq] of 0/1)
    computed here, outside any capture: what BertModel.forward computes
    with eager attention, without its mask preparation (which copies a
    host tensor, so CUDA-graph capture fails on it)."""
    import torch

    class Parts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert
            dt = next(bert.parameters()).dtype
            self.ext = (1.0 - mask[:, None, None, :].to(dt)) * torch.finfo(dt).min

        def forward(self, input_ids, token_type_ids):
            h = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
            e = self.bert.encoder(h, attention_mask=self.ext)
            s = e[0] if isinstance(e, (tuple, list)) else e.last_hidden_state
            return s, self.bert.pooler(s)

    return Parts().eval()


def torch_graph(m, args, iters, warmup):
    """Replays of m(*args) captured in one CUDA graph: wall ms per replay."""
    import torch
    try:
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3):
                m(*args)
        torch.cuda.current_stream().wait_stream(st)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m(*args)
        for _ in range(warmup):
            g.replay()
        torch.cuda.synchronize()
        t = []
        for _ in range(iters):
            t0 = time.perf_counter()
            g.replay()
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
        return {"wall_ms": stats(t)}
    except Exception as e:
        return {"error": str(e).splitlines()[0][:300]}


def torch_gemm(M, N, K, f16, iters):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = torch.float16 if f16 else torch.float32
    a = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
    b = torch.rand(K, N, device="cuda", dtype=dt) * 2 - 1
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    t = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.matmul(a, b)
        e1.record()
        e1.synchronize()
        t.append(e0.elapsed_time(e1))
    return {"gpu_ms": stats(t)}


def rlx_check(rlx, model, in_args, env, timeout):
    """`rlx run --device gpu --check`: per output max abs / normwise rel vs the CPU."""
    e = dict(os.environ)
    e.update(env)
    cmd = [rlx, "run", model, "--device", "gpu", "--check", "--iters", "0", "--warmup", "0"] + in_args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]}
    out = {}
    for line in p.stdout.splitlines():
        mm = re.match(r"\s+(\S+)\s+max abs diff (\S+) .*max rel diff ([^\s,]+).*normwise rel (\S+)", line)
        if mm:
            out[mm.group(1)] = {"max_abs": float(mm.group(2)), "max_rel": float(mm.group(3)),
                                "normwise_rel": float(mm.group(4))}
    return out or {"error": "no --check lines in the output"}


# ------------------------------------------------------------ main

def fmt(x, unit="ms"):
    return "-" if x is None else ("%.3f" % x if x < 10 else "%.1f" % x)


def med(r, key="wall_ms"):
    try:
        return r[key]["median"]
    except Exception:
        return None


def common_args(ap, out, budget):
    """The options that bench/model_dtypes.py shares: --rlx, --out (default
    out), --txt, --models-dir, --budget (default budget s), --quick, --iters."""
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--out", default=out)
    ap.add_argument("--txt", default=None, help="also write the table here")
    ap.add_argument("--models-dir", default=os.path.join(tempfile.gettempdir(), "rlx_bench_models"))
    ap.add_argument("--budget", type=float, default=budget, help="seconds after which no new row starts")
    ap.add_argument("--quick", action="store_true", help="small shapes, few iterations (no real GPU)")
    ap.add_argument("--iters", type=int, default=20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_args(ap, "compare.json", 450.0)
    ap.add_argument("--cpu-iters", type=int, default=3)
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--page", default=os.path.join(ROOT, "data", "page.png"),
                    help="the demo page: ppocrv4_det rows and accuracy use it, preprocessed as the demo does")
    ap.add_argument("--light-dir", default=os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light"))
    ap.add_argument("--skip", default="", help="comma list of row groups to skip: overhead,models,light,gemm,accuracy,torch,cpu")
    a = ap.parse_args()
    skip = set(s for s in a.skip.split(",") if s)
    quick = a.quick
    iters, warm = (3, 1) if quick else (a.iters, 5)
    cpu_iters = 1 if quick else a.cpu_iters
    seq = 16 if quick else 128
    batches = [1] if quick else [1, 8]
    have_cuda = "torch" not in skip and torch_cuda()
    if not have_cuda:
        log("torch rows skipped: %s" % ("--skip torch" if "torch" in skip else "no torch with CUDA here"))
    tmp = tempfile.mkdtemp(prefix="rlx_compare_")
    res = {"rlx": a.rlx, "quick": quick, "rows": [], "gemm": [], "accuracy": {}, "notes": [],
           "versions": peer_versions()}

    def over():
        if time.time() - T0 > a.budget:
            if not res.get("budget_hit"):
                log("budget of %.0f s spent: no new rows" % a.budget)
                res["budget_hit"] = True
            return True
        return False

    def timeout():
        return max(30, int(a.budget - (time.time() - T0)) + 30)

    devs = subprocess.run([a.rlx, "devices"], capture_output=True, text=True)
    res["devices"] = devs.stdout
    log("rlx devices:\n" + devs.stdout)

    # ---- per-forward overhead: one Relu on 4 floats (bench/sweep.py's model)
    if "overhead" not in skip:
        import sweep
        tiny = os.path.join(a.models_dir, "tiny_relu.onnx")
        os.makedirs(a.models_dir, exist_ok=True)
        if not os.path.exists(tiny):
            sweep.tiny_model(tiny)
        n = 200 if quick else 2000
        r = run_rlx(a.rlx, tiny, "gpu", ["--gpu-iters", "0"], {}, n, 100, timeout())
        res["overhead"] = r
        log("overhead (one Relu on 4 floats): %s ms per forward" % fmt(med(r)))

    names = [] if "models" in skip else (["minilm"] if quick else ["resnet50", "mobilenet_v2", "bert_base", "minilm"])
    got = export_models.models(a.models_dir, names, log=log)

    # ---- models
    for name in names:
        if name not in got:
            res["notes"].append("%s: not exported" % name)
            continue
        path = got[name]["path"]
        for b in batches:
            if over():
                break
            if name in export_models.BERTS:
                feeds = bert_feeds(b, seq)
            else:
                import numpy as np
                s = 64 if quick else 224
                feeds = {"input": np.random.default_rng(0).uniform(-1, 1, (b, 3, s, s)).astype(np.float32)}
            d = tempfile.mkdtemp(dir=tmp)
            in_args = write_npys(feeds, d)
            row = {"model": name, "batch": b, "source": got[name]["source"]}
            row["rlx_gpu"] = run_rlx(a.rlx, path, "gpu", in_args, {}, iters, warm, timeout())
            row["rlx_gpu_f16"] = run_rlx(a.rlx, path, "gpu", in_args, {"RLX_GPU_F16": "1"}, iters, warm, timeout())
            if "cpu" not in skip:
                row["rlx_cpu"] = run_rlx(a.rlx, path, "cpu", in_args, {}, cpu_iters, 1, timeout())
                try:
                    row["ort_cpu"] = run_ort(path, feeds, cpu_iters, 1)
                except Exception as e:
                    row["ort_cpu"] = {"error": str(e).splitlines()[0][:300]}
            if have_cuda and not quick:
                try:
                    t = run_torch(name, b, iters, warm, seq)
                    row["torch_eager"], row["torch_graph"] = t.get("eager"), t.get("graph")
                except Exception as e:
                    row["torch_eager"] = {"error": str(e).splitlines()[0][:300]}
            res["rows"].append(row)
            log("%s batch %d: rlx gpu %s ms (GPU %s), f16 %s, torch graph %s" % (
                name, b, fmt(med(row["rlx_gpu"])), fmt(med(row["rlx_gpu"], "gpu_ms")), fmt(med(row["rlx_gpu_f16"])),
                fmt(med(row.get("torch_graph") or {}))))

    # ---- ONNX-only models
    onnx_only = []
    if "light" not in skip:
        ocr = a.ocr_model
        if os.path.exists(ocr):
            # the shapes of BENCHMARKS.md: the demo page with PaddleOCR's
            # preset (192x384) and RapidOCR's (736x1472)
            page = demo_input(a.page)
            if page is not None and not quick:
                onnx_only.append(("ppocrv4_det page", ocr, {"x": page}))
            onnx_only.append(("ppocrv4_det", ocr, {"x": (1, 3, 64, 64) if quick else (1, 3, 736, 1472)}))
        else:
            res["notes"].append("no %s" % ocr)
        light = a.light_dir
        if not os.path.isdir(light):
            res["notes"].append("no light/ models at %s" % light)
        else:
            for f in sorted(os.listdir(light)):
                if f.endswith(".onnx"):
                    onnx_only.append((f[:-5], os.path.join(light, f), {}))
        if quick:
            onnx_only = onnx_only[:3]
    for name, path, shapes in onnx_only:
        if over():
            break
        import numpy as np
        over_feeds = {k: (v if isinstance(v, np.ndarray) else np.random.default_rng(0).uniform(-1, 1, v).astype(np.float32))
                      for k, v in shapes.items()}
        try:
            feeds = model_feeds(path, over_feeds)
        except Exception as e:
            res["notes"].append("%s: %s" % (name, e))
            continue
        d = tempfile.mkdtemp(dir=tmp)
        in_args = write_npys(feeds, d)
        row = {"model": name, "batch": 1, "source": "onnx"}
        row["rlx_gpu"] = run_rlx(a.rlx, path, "gpu", in_args, {}, iters, warm, timeout())
        row["rlx_gpu_f16"] = run_rlx(a.rlx, path, "gpu", in_args, {"RLX_GPU_F16": "1"}, iters, warm, timeout())
        if "cpu" not in skip:
            row["rlx_cpu"] = run_rlx(a.rlx, path, "cpu", in_args, {}, cpu_iters, 1, timeout())
            try:
                row["ort_cpu"] = run_ort(path, feeds, cpu_iters, 1)
            except Exception as e:
                row["ort_cpu"] = {"error": str(e).splitlines()[0][:300]}
        res["rows"].append(row)
        log("%s: rlx gpu %s ms (GPU %s), rlx cpu %s, ort cpu %s" % (
            name, fmt(med(row["rlx_gpu"])), fmt(med(row["rlx_gpu"], "gpu_ms")), fmt(med(row.get("rlx_cpu") or {})),
            fmt(med(row.get("ort_cpu") or {}))))

    # ---- GEMM
    if "gemm" not in skip:
        sizes = [(256, 256, 256)] if quick else [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                                                (8192, 8192, 8192), (128, 768, 768), (128, 3072, 768), (1, 4096, 4096),
                                                (8, 4096, 4096)]
        for (M, N, K) in sizes:
            name = "gemm_%d_%d_%d" % (M, N, K)
            gm = export_models.models(a.models_dir, [name], log=log)
            if name not in gm:
                continue
            for f16 in (False, True):
                if over():
                    break
                gi = 3 if M * N * K >= 8192 ** 3 else max(3, iters // 2)
                r = run_rlx(a.rlx, gm[name]["path"], "gpu", [], {"RLX_GPU_F16": "1"} if f16 else {}, gi, 2, timeout())
                row = {"M": M, "N": N, "K": K, "dtype": "f16" if f16 else "f32", "rlx": r}
                if have_cuda and not quick:
                    try:
                        row["torch"] = torch_gemm(M, N, K, f16, max(gi, 10))
                    except Exception as e:
                        row["torch"] = {"error": str(e).splitlines()[0][:300]}
                res["gemm"].append(row)
                log("GEMM %dx%dx%d %s: rlx %s ms (GPU), torch %s ms" % (
                    M, N, K, row["dtype"], fmt(med(r, "gpu_ms")), fmt(med(row.get("torch") or {}, "gpu_ms"))))
            if M * N * K >= 4096 ** 3:
                try:  # large weight files are not kept
                    os.remove(gm[name]["path"])
                except OSError:
                    pass

    # ---- accuracy of f16 mode (and of f32) against the CPU backend
    if "accuracy" not in skip:
        acc_models = []
        ocr = a.ocr_model
        if os.path.exists(ocr):
            import numpy as np
            page = demo_input(a.page)
            if page is not None:
                acc_models.append(("ppocrv4_det page", ocr, {"x": page}))
            s = 64 if quick else 640
            acc_models.append(("ppocrv4_det rand", ocr, {"x": np.random.default_rng(0).uniform(-1, 1, (1, 3, s, s))
                                                        .astype(np.float32)}))
        mg = export_models.models(a.models_dir, ["minilm"], log=log)
        if "minilm" in mg:
            acc_models.append(("minilm", mg["minilm"]["path"], bert_feeds(1, seq)))
        for name, path, feeds in acc_models:
            if over():
                break
            d = tempfile.mkdtemp(dir=tmp)
            in_args = write_npys(feeds, d)
            res["accuracy"][name] = {
                "f32": rlx_check(a.rlx, path, in_args, {"RLX_GPU_F16": "0"}, timeout()),
                "f16": rlx_check(a.rlx, path, in_args, {"RLX_GPU_F16": "1"}, timeout()),
            }
            log("accuracy %s: %s" % (name, json.dumps(res["accuracy"][name])))

    res["elapsed_s"] = time.time() - T0
    table = render(res)
    print(table)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    if a.txt:
        with open(a.txt, "w") as f:
            f.write(table)
    log("wrote %s%s" % (a.out, (" and " + a.txt) if a.txt else ""))


def ratio(x, y):
    return "-" if x is None or y is None or y == 0 else "%.2f" % (x / y)


def render(res):
    L = []
    L.append("Peers: " + ", ".join("%s %s" % kv for kv in sorted((res.get("versions") or {}).items())))
    L.append("Models: milliseconds per forward (median); ratios > 1 mean rlx is slower")
    hdr = ("%-18s %3s %9s %9s %9s %9s %9s %8s %9s %9s %8s" %
           ("model", "b", "rlx gpu", "rlx GPUt", "rlx f16", "t.eager", "t.graph", "gpu/grph", "rlx cpu", "ort cpu",
            "cpu/ort"))
    L.append(hdr)
    L.append("-" * len(hdr))
    for r in res["rows"]:
        g, gt, f = med(r.get("rlx_gpu") or {}), med(r.get("rlx_gpu") or {}, "gpu_ms"), med(r.get("rlx_gpu_f16") or {})
        te, tg = med(r.get("torch_eager") or {}), med(r.get("torch_graph") or {})
        c, o = med(r.get("rlx_cpu") or {}), med(r.get("ort_cpu") or {})
        L.append("%-18s %3d %9s %9s %9s %9s %9s %8s %9s %9s %8s" % (
            r["model"][:18], r["batch"], fmt(g), fmt(gt), fmt(f), fmt(te), fmt(tg), ratio(g, tg), fmt(c), fmt(o),
            ratio(c, o)))
        errs = ["%s: %s" % (k, v["error"]) for k, v in r.items() if isinstance(v, dict) and "error" in v]
        for e in errs:
            L.append("    ! " + e)
        for k, v in r.items():
            if isinstance(v, dict) and "note" in v:
                L.append("    note %s: %s" % (k, v["note"]))
    if res.get("overhead"):
        L.append("")
        L.append("Per-forward overhead, one Relu on 4 floats on the GPU (wall clock, median): %s ms" %
                 fmt(med(res["overhead"])))
    if res["gemm"]:
        L.append("")
        L.append("GEMM y[M,N] = a[M,K] w[K,N]: GPU milliseconds (TFLOP/s); rlx f16 = f16 weights (+ tensor cores "
                 "where available), torch f16 = f16 operands")
        hdr = "%-18s %5s %18s %18s %8s" % ("M x N x K", "dtype", "rlx", "torch", "rlx/t")
        L.append(hdr)
        L.append("-" * len(hdr))
        for r in res["gemm"]:
            fl = 2.0 * r["M"] * r["N"] * r["K"]
            x, y = med(r.get("rlx") or {}, "gpu_ms"), med(r.get("torch") or {}, "gpu_ms")
            def cell(t):
                return "-" if t is None else "%s (%.1f)" % (fmt(t), fl / (t * 1e-3) / 1e12)
            L.append("%-18s %5s %18s %18s %8s" % ("%dx%dx%d" % (r["M"], r["N"], r["K"]), r["dtype"], cell(x), cell(y),
                                                  ratio(x, y)))
            if isinstance(r.get("rlx"), dict) and "error" in r["rlx"]:
                L.append("    ! rlx: " + r["rlx"]["error"])
    if res["accuracy"]:
        L.append("")
        L.append("Accuracy against the CPU backend (rlx run --check): max abs / normwise relative")
        for name, modes in res["accuracy"].items():
            for mode, outs in modes.items():
                if "error" in outs:
                    L.append("  %-14s %-4s error: %s" % (name, mode, outs["error"]))
                    continue
                for o, v in outs.items():
                    L.append("  %-14s %-4s %-24s %.3g / %.3g" % (name, mode, o[:24], v["max_abs"], v["normwise_rel"]))
    for n in res["notes"]:
        L.append("note: " + n)
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
