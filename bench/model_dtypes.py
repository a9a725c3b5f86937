#!/usr/bin/env python3
"""rlx on fp16-converted and QDQ int8 models against PyTorch f16 and
onnxruntime, in one run, on one machine (issue 12, "Measure").

  python3 bench/model_dtypes.py --rlx PATH/TO/rlx [--out dtypes.json] [--txt dtypes.txt]
                                [--models-dir DIR] [--budget 420] [--quick]
                                [--models resnet50,mobilenet_v2,bert_base,ppocrv4_det]
                                [--qdq resnet50,ppocrv4_det] [--skip torch,qdq,fp16,accuracy]

Models, in this order (bench/export_models.py: torchvision / transformers
with random weights, batch 1 and 8; without torch the BERT encoder comes
from scripts/make_minilm_onnx.py --random, MobileNetV2 from
bench/make_mobilenet_v2.py, and ResNet-50 is skipped with a message):
  ppocrv4_det              --ocr-model (models/ppocrv4_det.onnx) on the demo
                           page (--page) preprocessed with RapidOCR's preset:
                           1x3x736x1472 (random values of that shape without
                           the page); batch 1
  resnet50, mobilenet_v2   input [b, 3, 224, 224], uniform in [-1, 1)
  bert_base                seq 128, compare.py's token ids
  bert_tiny                (--quick) 2 layers, hidden 128, 4 heads, seq 16

Each model in three forms, written under --models-dir (reused when newer
than their source):
  f32    the exported model
  fp16   onnxruntime.transformers.float16.convert_float_to_float16(
         keep_io_types=True): f16 weights and activations inside, f32 graph
         inputs and outputs (Casts at the edges), as users get fp16 models.
         A BatchNormalization whose mean or variance exceeds f16's range
         is first rewritten as the same function with f16-safe constants
         (fold_wide_batchnorms; noted in the output): the converter clamps
         them to 65504, and PP-OCRv4 det's head has a variance of 1e7-1e8,
         which made its fp16 output wrong on onnxruntime too (normwise
         relative error 0.99 against the f32 model; 0.005 after the fold)
  qdq    (--qdq models only) onnxruntime.quantization.quantize_static:
         QDQ format, int8 per-channel symmetric weights, uint8 activations,
         MinMax calibration on --calib random inputs (and the page and its
         mirror for ppocrv4_det); every model's Constant nodes become
         initializers first (else quantize_static leaves a Constant bias in
         f32 and the convolution with it): bench/make_quant_models.py's
         recipe

Rows, one per model, batch and form (wall = whole pass: upload, dispatches,
read-back; GPU = timestamp queries; medians, p10/p90 in the JSON):
  rlx gpu        `rlx bench --device gpu --json` on that form's file
  GPU/f32        GPU time over the f32 form's GPU time (same model, batch)
  torch f16      (fp16 rows) PyTorch on CUDA, model.half(), f16 inputs on
                 the GPU: eager (synchronised after each forward) and one
                 CUDA graph replayed; wall/graph = rlx wall over the replay
  ort cpu        (qdq rows) onnxruntime CPUExecutionProvider on the QDQ
                 file, default threads; wall/ort = rlx wall over it
  cpu steps      the bench JSON's cpu_steps; each node that ran on the CPU
                 is listed under the table (from `rlx run --report`: the
                 dispatch report's fallback rows and notes and the
                 backend's "runs on the CPU: why" lines)
  err same       rlx GPU's outputs (`rlx run --device gpu --output-dir`)
                 against onnxruntime CPU on the same file: max abs / normwise
                 relative ||a-b||/||b|| (the worst output)
  ort spread     onnxruntime against itself: the worst of its first runs
                 against its last on the same file (the reference is the
                 last of 3 runs of one session). Its QDQ kernels are not
                 deterministic from run to run, and PP-OCRv4's QDQ output
                 turns that into normwise differences of ~0.1: read err
                 same of the QDQ rows against it
  err f32        the same against onnxruntime on the f32 file (the error of
                 the reduced precision itself)

Without torch (or CUDA) the torch columns are skipped with a message. The
checks do not change the exit status (0 unless the script itself fails).
--budget (seconds from the start, model export included) stops starting new
rows once spent; --quick uses bert_tiny and ppocrv4_det on the page at
1x3x96x192, batch 1, 3 iterations: a check on a machine without a real GPU
(lavapipe: the first run compiles every pipeline, minutes under load; Mesa's
shader disk cache makes later runs faster). Prints one table; writes JSON.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare as C  # noqa: E402
import export_models  # noqa: E402

T0 = time.time()
FULL_MODELS = "ppocrv4_det,resnet50,mobilenet_v2,bert_base"  # the ones that need no export first
QUICK_MODELS = "bert_tiny,ppocrv4_det"
TINY_BERT = dict(layers=2, hidden=128, heads=4, intermediate=512)


def log(msg):
    print("[%6.1fs] %s" % (time.time() - T0, msg), flush=True)


def fresh(dst, src):
    """True when dst exists and is newer than src."""
    return os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src)


# ------------------------------------------------------------ models

def export(name, a):
    """(path, source) of the f32 model `name`, or (None, why)."""
    if name == "ppocrv4_det":
        return (a.ocr_model, "onnx") if os.path.exists(a.ocr_model) else (None, "no %s" % a.ocr_model)
    if name == "bert_tiny":
        path = os.path.join(a.models_dir, "bert_tiny.onnx")
        if not os.path.exists(path):
            c = TINY_BERT
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random",
                            "--layers", str(c["layers"]), "--hidden", str(c["hidden"]), "--heads", str(c["heads"]),
                            "--intermediate", str(c["intermediate"]), "-o", path], check=True,
                           stdout=subprocess.DEVNULL)
        return path, "scripts/make_minilm_onnx.py --random (2 layers, hidden 128)"
    got = export_models.models(a.models_dir, [name], log=log)
    if name in got:
        return got[name]["path"], got[name]["source"]
    if name == "mobilenet_v2":  # the numpy fallback (same architecture, BN folded)
        path = os.path.join(a.models_dir, "mobilenet_v2_np.onnx")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "make_mobilenet_v2.py"), path], check=True,
                           stdout=subprocess.DEVNULL)
        return path, "bench/make_mobilenet_v2.py"
    return None, "not exported (torch/torchvision missing?)"


F16_MAX = 65504.0


def fold_wide_batchnorms(m):
    """Rewrites each BatchNormalization whose mean or variance lies outside
    f16's range as mean 0, variance 1 - epsilon, scale / sqrt(var + eps)
    and bias - mean * that (the same function; new initializers). The
    converter clamps constants to +-65504 (PP-OCRv4 det: a variance of 1e7
    to 1e8 in its head), which changes the model's output, on onnxruntime
    too; blocking the node does not help (its initializers are converted
    all the same). Returns the names of the nodes rewritten."""
    import numpy as np
    from onnx import numpy_helper
    vals = {i.name: i for i in m.graph.initializer}
    consts = {n.output[0]: n for n in m.graph.node
              if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value"}

    def get(name):
        if name in vals:
            return numpy_helper.to_array(vals[name])
        if name in consts:
            return numpy_helper.to_array(consts[name].attribute[0].t)
        return None

    done, replaced = [], set()
    for k, n in enumerate(m.graph.node):
        if n.op_type != "BatchNormalization" or len(n.input) != 5:
            continue
        p = [get(i) for i in n.input[1:]]
        if any(v is None for v in p) or max(float(np.abs(v).max()) for v in p[2:]) <= F16_MAX:
            continue
        eps = next((at.f for at in n.attribute if at.name == "epsilon"), 1e-5)
        scale, bias, mean, var = (v.astype(np.float64) for v in p)
        s = scale / np.sqrt(var + eps)
        new = [s, bias - mean * s, np.zeros_like(mean), np.full_like(var, 1.0 - eps)]
        tag = n.name or "bn%d" % k
        replaced.update(n.input[1:])
        for j, v in enumerate(new):
            name = "%s_f16safe_%d" % (tag, j)
            m.graph.initializer.append(numpy_helper.from_array(v.astype(p[j].dtype), name))
            n.input[j + 1] = name
        done.append("%s (|mean|, var up to %.3g)" % (tag, max(float(np.abs(v).max()) for v in p[2:])))
    # the replaced constants, where nothing else reads them
    used = set(i for n in m.graph.node for i in n.input) | set(o.name for o in m.graph.output) | \
        set(i.name for i in m.graph.input)
    dead = replaced - used
    for n in [n for n in m.graph.node if n.op_type == "Constant" and n.output[0] in dead]:
        m.graph.node.remove(n)
    for i in [i for i in m.graph.initializer if i.name in dead]:
        m.graph.initializer.remove(i)
    return done


def make_fp16(src, dst):
    """The fp16 form of src at dst (keep_io_types=True); returns the notes
    of fold_wide_batchnorms (cached beside dst)."""
    notes = dst + ".notes"
    if fresh(dst, src) and os.path.exists(notes):
        return [ln for ln in open(notes).read().splitlines() if ln]
    import onnx
    from onnxruntime.transformers import float16
    m = onnx.load(src)
    folded = fold_wide_batchnorms(m)
    onnx.save(float16.convert_float_to_float16(m, keep_io_types=True), dst)
    with open(notes, "w") as f:
        f.write("".join(x + "\n" for x in folded))
    return folded


def make_qdq(name, src, dst, a, page):
    """QDQ model of src (make_quant_models' recipe) at dst."""
    if fresh(dst, src):
        return
    import make_quant_models as Q
    # Constant nodes as initializers first: quantize_static quantizes only
    # initializer weights and biases (torch's export writes ResNet-50's conv
    # biases as Constants, which it left in f32 with "Expected bias ... to be
    # an initializer", so no DQ -> Conv -> Q became a QLinearConv)
    init = dst.replace("_qdq.onnx", "_init.onnx")
    Q.constants_to_initializers(src, init)
    src = init
    if name == "ppocrv4_det":
        reader = Q.Reader("x", (1, 3, 256, 256), a.calib, page)
    else:
        reader = Q.Reader("input", (1, 3, 224, 224), a.calib)
    Q.quantize_qdq(src, dst, reader)


def feeds_for(name, batch, a, page):
    import numpy as np
    if name in export_models.BERTS or name == "bert_tiny":
        return C.bert_feeds(batch, a.seq)
    if name == "ppocrv4_det":
        if page is not None:
            return {"x": page}
        return {"x": np.random.default_rng(0).uniform(-1, 1, a.ocr_shape).astype(np.float32)}
    return {"input": np.random.default_rng(0).uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32)}


# ------------------------------------------------------------ runs

def rlx_outputs(rlx, model, in_args, d, timeout):
    """`rlx run --device gpu --report --output-dir`: (outputs dir, CPU
    steps named by the report and the backend's log, error or None)."""
    out = os.path.join(d, "out")
    cmd = [rlx, "run", model, "--device", "gpu", "--iters", "0", "--warmup", "0", "--report", "--quiet",
           "--output-dir", out] + in_args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, [], "rlx run: timeout after %d s" % timeout
    if p.returncode != 0:
        return None, [], "rlx run: " + (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:400]
    return out, cpu_steps_named(p.stdout, p.stderr), None


def cpu_steps_named(stdout, stderr):
    """Lines that say what ran on the CPU: dispatch-report rows with a
    fallback count, its notes, and 'runs on the CPU' lines of the log."""
    found = []
    in_report = in_notes = False
    for ln in stdout.splitlines():
        if ln.startswith("dispatch report:"):
            in_report = True
            continue
        if not in_report:
            continue
        f = ln.split()
        if ln.strip() == "notes:":
            in_notes = True
        elif in_notes and ln.startswith("    "):
            found.append("note: " + ln.strip())
        elif len(f) == 6 and all(x.isdigit() for x in f[1:]) and f[3] != "0":
            found.append("%s: %s of %s nodes on the CPU" % (f[0], f[3], f[1]))
        elif "whole graph runs eagerly" in ln:
            found.append(ln.strip())
    for ln in stderr.splitlines():
        if "runs on the CPU" in ln or "run on the CPU" in ln:
            found.append(ln.strip())
    return found


def out_file(d, name):
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    if s.startswith("."):
        s = "_" + s[1:]
    return os.path.join(d, s + ".npy")


def errors(got_dir, names, ref):
    """Worst max abs and normwise relative error of the outputs that rlx
    wrote to got_dir against ref (arrays in the order of names), and per
    output; {"error": ...} when an output is missing or mismatched."""
    import numpy as np
    got = []
    for n in names:
        p = out_file(got_dir, n)
        if not os.path.exists(p):
            return {"error": "rlx wrote no %s" % p}
        got.append(np.load(p))
    return compare_arrays(got, names, ref)


def compare_arrays(got, names, ref):
    import numpy as np
    per = {}
    for n, g, r in zip(names, got, ref):
        g = np.asarray(g).astype(np.float64)
        r = np.asarray(r).astype(np.float64)
        if g.shape != r.shape:
            return {"error": "%s: shape %s, onnxruntime %s" % (n, g.shape, r.shape)}
        nan = int(np.count_nonzero(np.isnan(g) != np.isnan(r)))
        ok = ~(np.isnan(g) | np.isnan(r))
        diff = np.abs(g - r)[ok]
        den = float(np.linalg.norm(r[ok]))
        per[n] = {"max_abs": float(diff.max()) if diff.size else 0.0,
                  "normwise_rel": float(np.linalg.norm(diff)) / den if den > 0 else float(np.linalg.norm(diff)),
                  "nan_mismatch": nan}
    return {"max_abs": max(v["max_abs"] for v in per.values()),
            "normwise_rel": max(v["normwise_rel"] for v in per.values()),
            "nan_mismatch": sum(v["nan_mismatch"] for v in per.values()), "outputs": per}


class Ort:
    """onnxruntime CPU outputs, cached per (file, key): the last of RUNS
    runs of one session, and the spread between its runs (the worst error
    of a run against the last; onnxruntime's QDQ kernels are not
    deterministic from run to run, and PP-OCRv4's QDQ output amplifies
    that)."""
    RUNS = 3

    def __init__(self):
        self.cache = {}

    def outputs(self, path, feeds, key):
        """(output names, outputs of the last run, spread)."""
        if (path, key) not in self.cache:
            import onnxruntime as ort
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            names = [o.name for o in s.get_outputs()]
            runs = [s.run(names, feeds) for _ in range(self.RUNS)]
            spread = [compare_arrays(r, names, runs[-1]) for r in runs[:-1]]
            worst = max(spread, key=lambda e: e.get("normwise_rel", 0)) if spread else None
            self.cache[(path, key)] = (names, runs[-1], worst)
        return self.cache[(path, key)]


def keep(b):
    """The fields of a bench JSON the report keeps."""
    if not isinstance(b, dict) or "error" in b:
        return b
    out = {k: b.get(k) for k in ("wall_ms", "gpu_ms", "cpu_steps", "dispatches", "first_run_ms", "f16_mode",
                                 "nodes_fused", "gpu_segments", "weight_bytes", "arena_bytes")}
    out["pipelines_ms"] = (b.get("compile_ms") or {}).get("pipelines")
    return out


# ------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    C.common_args(ap, "dtypes.json", 420.0)
    ap.add_argument("--models", default=None, help="comma list (default %s; --quick: %s)" % (FULL_MODELS, QUICK_MODELS))
    ap.add_argument("--qdq", default="resnet50,ppocrv4_det", help="models that also get a QDQ int8 form")
    ap.add_argument("--batches", default=None, help="comma list (default 1,8; --quick: 1); ppocrv4_det: 1 only")
    ap.add_argument("--cpu-iters", type=int, default=5, help="timed onnxruntime CPU runs of the QDQ models")
    ap.add_argument("--calib", type=int, default=4, help="random calibration inputs of the QDQ models")
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--page", default=os.path.join(ROOT, "data", "page.png"))
    ap.add_argument("--skip", default="", help="comma list of: torch, fp16, qdq, accuracy")
    a = ap.parse_args()
    skip = set(s for s in a.skip.split(",") if s)
    quick = a.quick
    iters, warm = (3, 1) if quick else (a.iters, 5)
    cpu_iters = 2 if quick else a.cpu_iters
    a.seq = 16 if quick else 128
    a.ocr_shape = (1, 3, 96, 192) if quick else (1, 3, 736, 1472)
    names = [n for n in (a.models or (QUICK_MODELS if quick else FULL_MODELS)).split(",") if n]
    batches = [int(b) for b in (a.batches or ("1" if quick else "1,8")).split(",")]
    qdq_set = set() if "qdq" in skip else set(n for n in a.qdq.split(",") if n)
    have_cuda = "torch" not in skip and C.torch_cuda()
    if not have_cuda:
        log("torch columns skipped: %s" % ("--skip torch" if "torch" in skip else "no torch with CUDA here"))
    os.makedirs(a.models_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="rlx_dtypes_")
    res = {"rlx": a.rlx, "quick": quick, "rows": [], "notes": [], "versions": C.peer_versions(),
           "iters": iters, "warmup": warm}
    devs = subprocess.run([a.rlx, "devices"], capture_output=True, text=True)
    res["devices"] = devs.stdout
    log("rlx devices:\n" + devs.stdout)
    ort = Ort()

    def over():
        if time.time() - T0 > a.budget:
            if not res.get("budget_hit"):
                log("budget of %.0f s spent: no new rows" % a.budget)
                res["budget_hit"] = True
                res["notes"].append("budget of %.0f s spent: later rows not run" % a.budget)
            return True
        return False

    def timeout():
        return max(60, int(a.budget - (time.time() - T0)) + 60)

    page = None
    if "ppocrv4_det" in names:
        page = C.demo_input(a.page, "paddleocr", 192) if quick else C.demo_input(a.page, "rapidocr")
        if page is not None and tuple(page.shape) != a.ocr_shape:
            log("the page preprocessed is %s, not %s: random input instead" % (page.shape, a.ocr_shape))
            page = None
        if page is None:
            res["notes"].append("ppocrv4_det: no demo page (%s): random input %s" % (a.page, a.ocr_shape))

    for name in names:
        if over():
            break
        t = time.time()
        try:
            f32, src = export(name, a)
        except Exception as e:
            f32, src = None, "export failed: %s" % str(e).splitlines()[0][:300]
        if f32 is None:
            res["notes"].append("%s: %s" % (name, src))
            log("%s: %s" % (name, src))
            continue
        forms = [("f32", f32)]
        base = os.path.join(a.models_dir, name)
        if "fp16" not in skip:
            try:
                folded = make_fp16(f32, base + "_fp16.onnx")
                if folded:
                    res["notes"].append("%s fp16: BatchNormalization with constants beyond f16 folded before the "
                                        "conversion (fold_wide_batchnorms): %s" % (name, ", ".join(folded)))
                forms.append(("fp16", base + "_fp16.onnx"))
            except Exception as e:
                res["notes"].append("%s: fp16 conversion failed: %s" % (name, str(e).splitlines()[0][:300]))
        if name in qdq_set:
            try:
                make_qdq(name, f32, base + "_qdq.onnx", a, page)
                forms.append(("qdq", base + "_qdq.onnx"))
            except Exception as e:
                res["notes"].append("%s: quantization failed: %s" % (name, str(e).splitlines()[0][:300]))
        log("%s: %s; forms %s ready in %.1f s" % (name, src, ", ".join(f for f, _ in forms), time.time() - t))
        for b in ([1] if name == "ppocrv4_det" else batches):
            feeds = feeds_for(name, b, a, page)
            d = tempfile.mkdtemp(dir=tmp)
            in_args = C.write_npys(feeds, d)
            f32_row = None
            for form, path in forms:
                if over():
                    break
                row = {"model": name, "batch": b, "form": form, "source": src, "file": path,
                       "input_shapes": {k: list(v.shape) for k, v in feeds.items()}}
                row["rlx_gpu"] = keep(C.run_rlx(a.rlx, path, "gpu", in_args, {}, iters, warm, timeout()))
                # a second process for the outputs and the dispatch report
                # (the bench's compile again: a warm driver cache)
                got, cpu_named, err = rlx_outputs(a.rlx, path, in_args, tempfile.mkdtemp(dir=tmp), timeout())
                row["cpu_steps_named"] = cpu_named
                if err:
                    row["rlx_run"] = {"error": err}
                if got and "accuracy" not in skip:
                    try:
                        on, ref, row["ort_spread"] = ort.outputs(path, feeds, b)
                        row["err_same"] = errors(got, on, ref)
                        if form != "f32":
                            on32, ref32, _ = ort.outputs(f32, feeds, b)
                            row["err_f32"] = errors(got, on32, ref32)
                    except Exception as e:
                        row["err_same"] = {"error": "onnxruntime: %s" % str(e).splitlines()[0][:300]}
                if form == "qdq":
                    try:
                        row["ort_cpu"] = C.run_ort(path, feeds, cpu_iters, 1)
                    except Exception as e:
                        row["ort_cpu"] = {"error": str(e).splitlines()[0][:300]}
                if form == "fp16" and have_cuda and name in ("resnet50", "mobilenet_v2") + tuple(export_models.BERTS):
                    try:
                        tr = C.run_torch(name, b, iters, warm, a.seq, half=True)
                        row["torch_f16_eager"], row["torch_f16_graph"] = tr.get("eager"), tr.get("graph")
                    except Exception as e:
                        row["torch_f16_eager"] = {"error": str(e).splitlines()[0][:300]}
                if form == "f32":
                    f32_row = row
                elif f32_row is not None:
                    row["gpu_vs_f32"] = ratio_num(C.med(row["rlx_gpu"] or {}, "gpu_ms"),
                                                  C.med(f32_row["rlx_gpu"] or {}, "gpu_ms"))
                res["rows"].append(row)
                save(res, a, final=False)  # a run killed by its time limit keeps its rows
                log("%s b%d %s: rlx gpu %s ms (GPU %s), cpu steps %s, err same %s%s" % (
                    name, b, form, C.fmt(C.med(row["rlx_gpu"] or {})), C.fmt(C.med(row["rlx_gpu"] or {}, "gpu_ms")),
                    (row["rlx_gpu"] or {}).get("cpu_steps", "-"), errcell(row.get("err_same")),
                    (", torch f16 graph %s" % C.fmt(C.med(row.get("torch_f16_graph") or {})))
                    if form == "fp16" and have_cuda else ""))

    save(res, a, final=True)
    shutil.rmtree(tmp, ignore_errors=True)


def save(res, a, final):
    """Writes the JSON and the table (--txt); prints the table when final."""
    res["elapsed_s"] = time.time() - T0
    res["complete"] = final
    table = render(res)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    if a.txt:
        with open(a.txt, "w") as f:
            f.write(table)
    if final:
        print(table)
        log("wrote %s%s" % (a.out, (" and " + a.txt) if a.txt else ""))


def ratio_num(x, y):
    return None if x is None or y is None or y == 0 else x / y


def errcell(e):
    if not e:
        return "-"
    if "error" in e:
        return "error"
    return "%.2g/%.2g" % (e["max_abs"], e["normwise_rel"]) + ("!nan" if e.get("nan_mismatch") else "")


def render(res):
    L = []
    L.append("Peers: " + ", ".join("%s %s" % kv for kv in sorted((res.get("versions") or {}).items())))
    L.append("Milliseconds per forward (median). GPU/f32: rlx GPU time over the f32 form's; wall/graph: rlx wall "
             "over PyTorch f16 CUDA-graph replay; wall/ort: rlx wall over onnxruntime CPU on the QDQ file (ratios "
             "> 1: rlx slower). err: max abs / normwise rel against onnxruntime CPU on the same file (same) and on "
             "the f32 file (f32); ort spread: onnxruntime's own run-to-run difference on the same file (%d runs)"
             % Ort.RUNS)
    fmt_row = "%-13s %2s %-4s %9s %9s %7s %9s %9s %8s %9s %8s %4s %15s %15s %15s"
    hdr = fmt_row % ("model", "b", "form", "rlx wall", "rlx GPU", "GPU/f32", "t16 eager", "t16 graph", "wall/grph",
                     "ort cpu", "wall/ort", "cpu", "err same", "ort spread", "err f32")
    L.append(hdr)
    L.append("-" * len(hdr))
    details = []
    for r in res["rows"]:
        g = r.get("rlx_gpu") or {}
        w, gt = C.med(g), C.med(g, "gpu_ms")
        te, tg = C.med(r.get("torch_f16_eager") or {}), C.med(r.get("torch_f16_graph") or {})
        o = C.med(r.get("ort_cpu") or {})
        gv = r.get("gpu_vs_f32")
        L.append(fmt_row % (r["model"][:13], r["batch"], r["form"], C.fmt(w), C.fmt(gt),
                            "-" if gv is None else "%.2f" % gv, C.fmt(te), C.fmt(tg), C.ratio(w, tg), C.fmt(o),
                            C.ratio(w, o), g.get("cpu_steps", "-"), errcell(r.get("err_same")),
                            errcell(r.get("ort_spread")), errcell(r.get("err_f32"))))
        tag = "%s b%d %s" % (r["model"], r["batch"], r["form"])
        for k, v in r.items():
            if isinstance(v, dict) and "error" in v:
                details.append("  ! %s %s: %s" % (tag, k, v["error"]))
            if isinstance(v, dict) and "note" in v:
                details.append("  note %s %s: %s" % (tag, k, v["note"]))
        for c in r.get("cpu_steps_named") or []:
            details.append("  cpu %s: %s" % (tag, c))
    if details:
        L.append("")
        L.append("Errors and nodes on the CPU:")
        L.extend(details)
    for n in res["notes"]:
        L.append("note: " + n)
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
