#!/usr/bin/env python3
"""rlx's CPU backend against onnxruntime's CPU execution provider on whole
models (issue 13's table), same machine, same inputs, same thread count:
milliseconds per forward pass, the median over --rounds rounds of each
runner's median of --iters steady runs (rounds interleave the runners, so
that load from elsewhere hits them alike). Prints a markdown table.

    python3 bench/cpu_vs_ort.py [--rlx build/rlx] [--base-rlx OTHER/rlx]
                                [--base-env KEY=VALUE ...] [--threads N]
                                [--rounds 3] [--iters 20]
                                [--models ppocr640,resnet50,mobilenet_v2,shufflenet]
                                [--rss] [--cpu-time] [--time-per-run S]
                                [--budget S] [--timeout S] [--list]

    python3 bench/cpu_vs_ort.py --models issue13 --rss --time-per-run 3
        issue 13's whole table in one run (--models all is the same list)

--threads N sets RLX_NUM_THREADS for rlx and intra_op_num_threads for
onnxruntime (0: each one's default, one thread per core). --base-rlx adds a
column for another rlx binary (e.g. a build of main) run the same way;
--base-env sets environment variables for that column only (e.g.
--base-rlx build/rlx --base-env RLX_CPU_GEMM=blas compares the two thread
policies of one binary; --base-env RLX_NUM_THREADS=8 overrides --threads).
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

Issue 13's table (--models issue13, or all), in this order (the costliest
rows last, where --budget cuts first):
  ppocr640, ppocr_fp16, ppocr_qdq   the demo model (f32), its fp16 form and
                 its QDQ int8 form. ppocr_fp16: models/ppocrv4_det.onnx through
                 bench/model_dtypes.py's make_fp16 (onnxruntime's float16
                 converter, keep_io_types, after fold_wide_batchnorms), at
                 1x3x640x640 like ppocr640 (written to --work); ppocr_qdq is
                 made by bench/make_quant_models.py when build/quant lacks it
                 (--ocr-model, and the page beside it or data/page.png)
  lstm           bench/cpu_rows.py's lstm: one bidirectional LSTM, hidden
                 224, input 224, sequence 21, batch 30 (the issue's), weights
                 normal(0, 0.1) seed 1
  tiny30         bench/cpu_rows.py's tiny30: 30 small nodes on [1, 32]
                 (MatMul, Add, Sigmoid/Relu, Reshape, Transpose): per-node cost
  light_*        every light_*.onnx of --light-dir (the ONNX suite's models
                 with ConstantOfShape weights: AlexNet, DenseNet-121,
                 Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
                 ZFNet-512) at their declared 1x3x224x224; ResNet-50 and
                 ShuffleNet under their older keys resnet50 and shufflenet
  resnet50_b8    light ResNet-50 at batch 8 (input 8x3x224x224, the final
                 Reshape's [1, 2048] made [-1, 2048]; written to --work)
  mobilenet_v2, mobilenet_v2_b8, minilm, minilm_b8, bert_base, bert_base_b8
Any other key of bench/cpu_rows.py (gru, softmax_short, ...) runs as well.

A row that cannot be built or run prints its error in the row (per runner)
and the table goes on. --time-per-run S first times one pass of rlx (a
probe, compile included) and gives the row max(--min-iters, S / pass)
timed runs (at most --max-iters, default --iters) and as many warm-up
runs (at most --warmup, at least 1): a whole table at one thread in bounded
time, and enough runs of tiny rows for --cpu-time. --budget S starts
no row after S seconds (those rows say so); --timeout S bounds each process.
--list prints the keys of --models and what each is, and stops.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIGHT = os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light")
sys.path.insert(0, HERE)  # bench/cpu_rows.py, bench/model_dtypes.py


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
    # issue 13's rows (the generators: ensure_model)
    table["mobilenet_v2_b8"] = (mnv2, {"input": (8, 3, 224, 224)}, "mnv2")
    table["resnet50_b8"] = (os.path.join(work, "resnet50_b8.onnx"), {"gpu_0/data_0": (8, 3, 224, 224)},
                            ("batch8", os.path.join(light, "light_resnet50.onnx")))
    table["ppocr_fp16"] = (os.path.join(work, "ppocrv4_det_fp16.onnx"), {"x": (1, 3, 640, 640)}, ("fp16", ocr_model))
    table["ppocr_qdq"] = table["ppocr_qdq"][:2] + (("quant", ocr_model),)
    table["ppocr_qop"] = table["ppocr_qop"][:2] + (("quant", ocr_model),)
    for key, shape in ROWS_SHAPES.items():
        table[key] = (os.path.join(work, key + ".onnx"), {"x": shape}, "rows")
    for key in light_keys(light):
        if key not in LIGHT_ALIASES.values():
            table[key] = (os.path.join(light, key + ".onnx"), {light_input(os.path.join(light, key + ".onnx")):
                                                                (1, 3, 224, 224)}, None)
    return table


# bench/cpu_rows.py's models in issue 13's table and their input x's shape
ROWS_SHAPES = {"lstm": (21, 30, 224), "tiny30": (1, 32)}
# light/ files already under an older key
LIGHT_ALIASES = {"light_resnet50": "resnet50", "light_shufflenet": "shufflenet"}


def light_keys(light):
    """light_NAME for every light_NAME.onnx of the folder light (sorted)."""
    if not os.path.isdir(light):
        return []
    return sorted(f[:-5] for f in os.listdir(light) if f.startswith("light_") and f.endswith(".onnx"))


def light_input(path):
    """The one graph input of a light/ model (data_0 or gpu_0/data_0)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    return names[0] if names else "data_0"


def issue13_keys(light):
    """Every row of issue 13's table ("Measure"), in the docstring's order."""
    lights = [LIGHT_ALIASES.get(k, k) for k in light_keys(light)] or ["resnet50", "shufflenet"]
    rest = [k for k in lights if k not in ("resnet50", "shufflenet")]
    return (["ppocr640", "ppocr_fp16", "ppocr_qdq", "lstm", "tiny30"] + rest +
            ["shufflenet", "resnet50", "resnet50_b8", "mobilenet_v2", "mobilenet_v2_b8", "minilm", "minilm_b8",
             "bert_base", "bert_base_b8"])


DESCRIBE = {
    "ppocr640": "the demo model (PP-OCRv4 det, f32) at 1x3x640x640",
    "ppocr_fp16": "the demo model converted to fp16 (keep_io_types), 1x3x640x640",
    "ppocr_qdq": "the demo model as QDQ int8 (make_quant_models.py), 1x3x256x256",
    "ppocr_qop": "the demo model as QOperator int8 (make_quant_models.py), 1x3x256x256",
    "resnet50": "light/ ResNet-50, batch 1",
    "resnet50_b8": "light/ ResNet-50, batch 8",
    "shufflenet": "light/ ShuffleNet, batch 1",
    "mobilenet_v2": "MobileNetV2 (make_mobilenet_v2.py), batch 1",
    "mobilenet_v2_b8": "MobileNetV2 (make_mobilenet_v2.py), batch 8",
    "minilm": "MiniLM-L6-sized BERT, random weights, batch 1, seq 128",
    "minilm_b8": "MiniLM-L6-sized BERT, batch 8, seq 128",
    "bert_base": "BERT-base-sized, random weights, batch 1, seq 128",
    "bert_base_b8": "BERT-base-sized, batch 8, seq 128",
    "lstm": "bidirectional LSTM, hidden 224, seq 21, batch 30 (cpu_rows.py)",
    "tiny30": "30 tiny nodes on [1, 32] (cpu_rows.py): per-node cost",
}


def describe(key):
    if key in DESCRIBE:
        return DESCRIBE[key]
    if key.startswith("light_"):
        return f"light/ {key[6:]}, batch 1"
    if DW_KEY.match(key):
        return "one depthwise Conv + Clip"
    return "bench/cpu_rows.py's model"


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


def write_batch8(src, dst):
    """src (light/ ResNet-50: input [1, 3, 224, 224], a Reshape to [1, 2048]
    before the classifier) at batch 8: input and output batch 8, every
    Reshape constant whose first entry is 1 made -1."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(src)
    shapes = {n.input[1] for n in m.graph.node if n.op_type == "Reshape" and len(n.input) > 1}
    for i, t in enumerate(m.graph.initializer):
        if t.name in shapes:
            v = numpy_helper.to_array(t).copy()
            if v.ndim == 1 and v.size and v[0] == 1:
                v[0] = -1
                m.graph.initializer[i].CopyFrom(numpy_helper.from_array(v, t.name))
    inits = {t.name for t in m.graph.initializer}
    for vi in [i for i in m.graph.input if i.name not in inits] + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if dims and dims[0].dim_value == 1:
            dims[0].dim_value = 8
    onnx.save(m, dst)


def write_rows_model(key, path):
    """bench/cpu_rows.py's model `key` (its weights as cpu_rows.py writes
    them when that model is its first) at path; returns its input shape."""
    import onnx
    import cpu_rows
    cpu_rows.W_RNG = np.random.default_rng(1)
    model, shape = cpu_rows.MODELS[key]()
    model.ir_version = 8  # what onnxruntime 1.22 reads
    onnx.save(model, path)
    return tuple(shape)


def ensure_model(key, path, gen):
    """Writes the model of a generated key (MobileNetV2, the BERT encoders,
    dwCxHkKsS, issue 13's resnet50_b8, ppocr_fp16, ppocr_qdq / _qop, lstm,
    tiny30) to path if it is not there yet; raises if a generator fails."""
    if os.path.exists(path):
        return
    dw = DW_KEY.match(key)
    kind, src = gen if isinstance(gen, tuple) else (gen, None)
    if dw:
        write_depthwise(path, *(int(v) for v in dw.groups()))
    elif gen == "mnv2":
        subprocess.run([sys.executable, os.path.join(HERE, "make_mobilenet_v2.py"), path], check=True)
    elif gen in BERT_SIZES:
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random",
                        *BERT_SIZES[gen], "-o", path], check=True)
    elif gen == "rows":
        write_rows_model(key, path)
    elif kind == "batch8":
        write_batch8(src, path)
    elif kind == "fp16":
        import model_dtypes
        notes = model_dtypes.make_fp16(src, path)
        if notes:
            print(f"{key}: fold_wide_batchnorms rewrote {len(notes)} BatchNormalization(s) before the f16 "
                  "conversion", file=sys.stderr)
    elif kind == "quant":
        page = os.path.join(os.path.dirname(src), "page.png")
        if not os.path.exists(page):
            page = os.path.join(ROOT, "data", "page.png")
        r = subprocess.run([sys.executable, os.path.join(HERE, "make_quant_models.py"), "--out",
                            os.path.dirname(path), "--model", src, "--page", page], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("make_quant_models.py: " + r.stderr.strip()[-300:])


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


# The runners start through this small launcher (a bare interpreter: python -I
# -S), which forks, execs the command and writes the command's ru_maxrss (kB)
# to the pipe whose fd is its first argument: Linux carries a process's peak RSS over fork and exec, so a
# command forked from this script itself (numpy, onnx and the models' protos
# loaded) would report at least this script's peak, not its own.
LAUNCHER = """import os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    try:
        os.close(fd)
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, st, ru = os.wait4(pid, 0)
os.write(fd, str(ru.ru_maxrss).encode())
sys.exit(os.waitstatus_to_exitcode(st) % 256)
"""

TIMEOUT_S = 900  # each process's limit (--timeout)


def run_rss(cmd, env=None):
    """Runs cmd: (stdout, its peak resident MB); raises on failure or when
    it runs past TIMEOUT_S seconds (the command and its launcher are killed)."""
    rd, wr = os.pipe()
    try:
        p = subprocess.Popen([sys.executable, "-I", "-S", "-c", LAUNCHER, str(wr), *cmd], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(wr,),
                             start_new_session=True)
    finally:
        os.close(wr)
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
    except BaseException as e:  # the limit, or Stopped (SIGTERM): the launcher's session goes too
        os.killpg(p.pid, 9)
        p.communicate()
        os.close(rd)
        if isinstance(e, subprocess.TimeoutExpired):
            raise RuntimeError(f"{os.path.basename(cmd[0])}: ran past --timeout {TIMEOUT_S:g} s") from None
        raise
    kb = os.read(rd, 64)
    os.close(rd)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])}: {err.strip()[-400:]}")
    return out, int(kb or 0) / 1024.0  # kB on Linux


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
    if threads:
        env["RLX_NUM_THREADS"] = str(threads)
    env.update(extra_env or {})  # --base-env wins (e.g. RLX_NUM_THREADS=8 against onnxruntime's 16)
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


class Stopped(BaseException):
    """SIGTERM (e.g. from timeout(1)): the rows measured so far are printed."""


def _stop(signum, frame):
    raise Stopped()


def cell(msg, n=160):
    """An error message as one table cell: one line, no pipes, at most n characters."""
    msg = " ".join(str(msg).split()).replace("|", "/")
    return msg if len(msg) <= n else msg[:n - 3] + "..."


def main():
    global TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--base-env", action="append", default=[], help="KEY=VALUE for the --base-rlx runs")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", default="ppocr640,resnet50,mobilenet_v2,shufflenet",
                    help="comma-separated keys; issue13 (or all): issue 13's whole table")
    ap.add_argument("--cpu-time", action="store_true",
                    help="CPU time per pass instead of wall time (steadier on a loaded machine; see cpu_rows.py)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_cpu_vs_ort"))
    ap.add_argument("--ocr-model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"))
    ap.add_argument("--light-dir", default=LIGHT)
    ap.add_argument("--rss", action="store_true", help="add each runner's peak resident memory (MB)")
    ap.add_argument("--time-per-run", type=float, default=0.0,
                    help="seconds of timed passes per run: fewer --iters for slow rows (0: always --iters)")
    ap.add_argument("--min-iters", type=int, default=3, help="the fewest timed runs --time-per-run gives")
    ap.add_argument("--max-iters", type=int, default=0,
                    help="the most timed runs --time-per-run gives (0: --iters); with --cpu-time, tiny rows need "
                         "thousands (the CPU-time difference of two processes)")
    ap.add_argument("--budget", type=float, default=0.0, help="start no row after this many seconds (0: none)")
    ap.add_argument("--timeout", type=float, default=900, help="each process's limit in seconds")
    ap.add_argument("--list", action="store_true", help="print the keys of --models and stop")
    a = ap.parse_args()
    TIMEOUT_S = a.timeout
    t_start = time.time()
    os.makedirs(a.work, exist_ok=True)
    table = models(a.work, a.ocr_model, a.light_dir)
    keys = issue13_keys(a.light_dir) if a.models in ("issue13", "all") else a.models.split(",")
    if a.list:
        for key in keys:
            print(f"{key}: {describe(key)}")
        return 0
    print(f"load at the start: {load()}", file=sys.stderr)
    signal.signal(signal.SIGTERM, _stop)
    rows = []
    stopped = False
    for key in keys:
        t_row = time.time()
        if stopped:
            rows.append((key, None, None, None, {}, "not run: stopped by SIGTERM"))
            continue
        if a.budget and time.time() - t_start > a.budget:
            rows.append((key, None, None, None, {}, f"not run: --budget {a.budget:g} s spent"))
            continue
        try:
            rows.append(measure_row(a, table, key))
        except Stopped:
            stopped = True
            rows.append((key, None, None, None, {}, "not run: stopped by SIGTERM"))
        print(f"{key}: {time.time() - t_row:.1f} s (at {time.time() - t_start:.0f} s)", file=sys.stderr)
    print_table(a, rows)
    return 0


def measure_row(a, table, key):
    """One row of the table: (key, medians, best rounds, wall medians, peak
    RSS, errors) per runner and (timed runs, warm-up runs), or (key, None,
    None, None, {}, message) when the model could not be made."""
    try:
        dw = DW_KEY.match(key)
        if dw:
            c, h, k, st = (int(v) for v in dw.groups())
            table[key] = (os.path.join(a.work, key + ".onnx"), {"x": (1, c, h, h)}, "dw")
        if key not in table:
            import cpu_rows
            if key not in cpu_rows.MODELS:
                raise KeyError(f"unknown model key '{key}'")
            path = os.path.join(a.work, key + ".onnx")
            table[key] = (path, {"x": write_rows_model(key, path)}, "rows")
        path, shapes, gen = table[key]
        ensure_model(key, path, gen)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing")
        inputs = write_inputs(a.work, key, shapes)
    except Exception as e:  # noqa: BLE001 (any failure: the row says it, the table goes on)
        print(f"{key}: {e}", file=sys.stderr)
        return (key, None, None, None, {}, "error: " + cell(e))
    iters, warmup = a.iters, a.warmup
    base_env = dict(kv.split("=", 1) for kv in a.base_env)
    runners = {"rlx": lambda n, w: run_rlx(a.rlx, path, inputs, a.threads, n, w)}
    if a.base_rlx:
        runners["base"] = lambda n, w: run_rlx(a.base_rlx, path, inputs, a.threads, n, w, base_env)
    runners["ort"] = lambda n, w: run_ort(path, inputs, a.threads, n, w)
    errs = {}
    if a.time_per_run > 0:
        # one pass (after the compile) of the first runner that works
        for name, fn in runners.items():
            try:
                one = fn(1, 0)[0]
                break
            except Exception as e:  # noqa: BLE001
                errs[name] = cell(e)
        else:
            one = 0
        if one > 0:
            iters = max(a.min_iters, min(a.max_iters or a.iters, int(a.time_per_run * 1e3 / one)))
            warmup = max(1, min(a.warmup, int(a.time_per_run * 1e3 / one)))
    res = {k: [] for k in runners}
    wall = {k: [] for k in runners}
    rss = {k: 0.0 for k in runners}

    def timed(fn):
        """(ms, peak RSS, wall ms) of fn(iters, warmup): its wall median, or
        with --cpu-time the CPU time per pass (cpu_per_run: the difference
        of runs of iters and 3 x iters; wall: the longer run's median)"""
        if not a.cpu_time:
            t, m = fn(iters, warmup)
            return t, m, t
        got = []
        ms_ = cpu_per_run(lambda n: got.append(fn(n, warmup)), iters)
        return ms_, max(g[1] for g in got), got[-1][0]

    for r in range(a.rounds):
        for name, fn in runners.items():
            if name in errs:
                continue
            try:
                t, m, w = timed(fn)
            except Exception as e:  # noqa: BLE001
                errs[name] = cell(e)
                print(f"{key} {name}: {e}", file=sys.stderr)
                continue
            res[name].append(t), wall[name].append(w)
            rss[name] = max(rss[name], m)
        print(f"{key} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in res.items() if v),
              f"(iters {iters}, warmup {warmup})", file=sys.stderr)
    return (key, {k: statistics.median(v) for k, v in res.items() if v},
            {k: min(v) for k, v in res.items() if v}, {k: statistics.median(v) for k, v in wall.items() if v},
            rss, errs, (iters, warmup))


def print_table(a, rows):
    """The markdown table of rows (measure_row's tuples) and their legend."""
    thr = a.threads or f"default ({os.cpu_count()} cores)"
    what = ("CPU ms per forward pass (all threads; --cpu-time)" if a.cpu_time else "ms per forward pass")
    runs = f"{a.iters} runs" + (f" (fewer for slow rows: --time-per-run {a.time_per_run:g} s, at least "
                                f"{a.min_iters})" if a.time_per_run > 0 else "")
    print(f"\nthreads: {thr}; {what}: median over {a.rounds} rounds of each round's median of "
          f"{runs} (in brackets: the best round)" + ("; peak RSS in MB" if a.rss else "") +
          ("; wall: the median wall ms of the longer runs" if a.cpu_time else "") +
          f"; load average at the end {load()}\n")
    head = ("| model | " + ("rlx base | " if a.base_rlx else "") + "rlx | onnxruntime | rlx / ort |" +
            (" base / rlx |" if a.base_rlx else "") +
            (" wall rlx | wall ort | wall rlx / ort |" if a.cpu_time else "") +
            ((" RSS base |" if a.base_rlx else "") + " RSS rlx | RSS ort |" if a.rss else ""))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))

    def ms(v):  # sub-millisecond single ops keep three digits
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"

    def ratio(x, y):
        return f"{x / y:.2f}" if y > 0 else "n/a"  # CPU time below the clock's resolution

    for key, m, b, w, rss, errs, *_ in rows:
        if m is None:  # the row could not be built
            ncol = head.count("|") - 2
            print(f"| {key} | {errs} |" + " |" * (ncol - 1))
            continue

        def val(k):
            if k in m:
                return f"{ms(m[k])} ({ms(b[k])})"
            return "error: " + errs.get(k, "no result")

        have = "rlx" in m and "ort" in m
        base = f"{val('base')} | " if a.base_rlx else ""
        gain = (f" {ratio(m['base'], m['rlx'])} |" if "base" in m and "rlx" in m else " - |") if a.base_rlx else ""
        walls = ((f" {ms(w['rlx']) if 'rlx' in w else '-'} | {ms(w['ort']) if 'ort' in w else '-'} | " +
                  (f"{ratio(w['rlx'], w['ort'])} |" if have else "- |")) if a.cpu_time else "")
        mem = ((f" {rss['base']:.0f} |" if a.base_rlx else "") +
               f" {rss['rlx']:.0f} | {rss['ort']:.0f} |" if a.rss else "")
        print(f"| {key} | {base}{val('rlx')} | {val('ort')} | {ratio(m['rlx'], m['ort']) if have else '-'} |"
              f"{gain}{walls}{mem}")
    def runs(row):
        if len(row) < 7:
            return ""
        n, w = row[6]
        return f" ({n} runs after {w} warm-up" + (f"; --cpu-time: runs of {n} and {3 * n}" if a.cpu_time else "") + ")"

    print("\nrows: " + "; ".join(f"{row[0]}: {describe(row[0])}{runs(row)}" for row in rows))


def load():
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
