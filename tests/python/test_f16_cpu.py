"""fp16 models on CPU plans (issue 13): the pass widen_f16 computes them in
f32 on the CPU's fast kernels, as onnxruntime's CPU provider does, under
the policy of README's "f16 models".

Models converted with onnxruntime's float16 converter (keep_io_types: f32
edges, Casts, f16 weights and values inside):
 - a small CNN (Conv + Relu, depthwise Conv, residual Add, Clip,
   GlobalAveragePool, Gemm) and a small BERT (scripts/make_minilm_onnx.py
   --random, 2 layers, hidden 64): rlx's outputs within a normwise relative
   2e-3 of onnxruntime's on the same fp16 model, and their error against
   the f32 model (onnxruntime) below 5e-3 and below 2x onnxruntime's;
 - every Conv, Gemm and MatMul (or rlx.Attention) of the compiled plan
   reads and writes f32 (debug.dump_ir, the graph after the last pass): the
   f32 fast kernels; with passes.disable=widen_f16 (main's behaviour
   before the pass) they are f16 and this check fails, which the test
   checks too.
The overflow policy, on a model of f16 ops (f16 graph input and output):
 y = MatMul(x, 1000 I) * 0.001 with x = 100: the intermediate 1e5 passes
 binary16's 65,504; on CPU plans it is f32, so y = 100 (onnxruntime's CPU
 gives 100 too); a Cast to f16 of the intermediate (the model's own
 rounding) gives inf; a graph output that overflows is inf (rounded at the
 edge); on a GPU with shader-f16 the MatMul stores f16, so y is inf there
 (the documented difference between the devices).
Skips (exit 77) while rlx is not built or without onnxruntime's converter."""
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as NH
    from onnxruntime.transformers import float16
except ImportError as e:
    R.skip(e)
C = R.Checker("test_f16_cpu")
tmp = tempfile.mkdtemp(prefix="rlx_f16_cpu_")
rng = R.seeded_rng(5)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def save_inputs(feeds):
    args = []
    for k, v in feeds.items():
        p = os.path.join(tmp, k + ".npy")
        np.save(p, v)
        args += ["--input", "%s=%s" % (k, p)]
    return args


def rlx_run(model, feeds, names, *extra):
    out = os.path.join(tmp, "out_%d" % rlx_run.count)
    rlx_run.count += 1
    rc, so, se = R.run([RLX, "run", model, "--iters", "0", "--output-dir", out, "--option", "debug.dump_ir=1"] +
                       save_inputs(feeds) + list(extra))
    if rc != 0:
        print(so, se)
        return None, so + se
    return [np.load(os.path.join(out, n + ".npy")) for n in names], se


rlx_run.count = 0


def final_ir(log):
    """The graph after the last pass, from debug.dump_ir."""
    parts = log.split("=== IR after ")
    return parts[-1] if len(parts) > 1 else ""


def compute_dtypes(log, ops):
    """(op, dtype of its first output) for the nodes of ops in the final graph."""
    rows = []
    for ln in final_ir(log).splitlines():
        m = re.match(r"\s*%\S+: (\w+)\[[^\]]*\] = ([\w.]+)-\d+\(", ln)
        if m and m.group(2) in ops:
            rows.append((m.group(2), m.group(1)))
    return rows


def check_model(tag, f32, feeds, names, fast_ops):
    f16 = f32.replace(".onnx", "_fp16.onnx")
    onnx.save(float16.convert_float_to_float16(onnx.load(f32), keep_io_types=True), f16)
    ref = ort.InferenceSession(f32, providers=["CPUExecutionProvider"]).run(names, feeds)
    o16 = ort.InferenceSession(f16, providers=["CPUExecutionProvider"]).run(names, feeds)
    ys, log = rlx_run(f16, feeds, names, "--option", "cpu.threads=1")
    if not C.check(ys is not None, "%s: rlx run failed:\n%s" % (tag, log)):
        return
    for n, y, r, o in zip(names, ys, ref, o16):
        e, eo, eort = rel(y, r), rel(o, r), rel(y, o)
        print("%s %s: rlx fp16 vs f32 %.3g, onnxruntime fp16 vs f32 %.3g, rlx vs onnxruntime fp16 %.3g"
              % (tag, n, e, eo, eort))
        C.check(y.dtype == np.float32 and y.shape == r.shape, "%s %s: dtype %s shape %s" % (tag, n, y.dtype, y.shape))
        C.check(eort < 2e-3, "%s %s: rlx vs onnxruntime on the fp16 model: %.3g (want < 2e-3)" % (tag, n, eort))
        C.check(e < 5e-3 and e < 2 * eo, "%s %s: vs f32 %.3g (want < 5e-3 and < 2x onnxruntime's %.3g)" % (tag, n, e, eo))
    rows = compute_dtypes(log, fast_ops)
    print("%s: compute nodes after the passes: %s" % (tag, sorted(set(rows))))
    C.check(rows and all(dt == "f32" for _, dt in rows),
            "%s: Conv/Gemm/MatMul not all f32 (not on the fast kernels): %r" % (tag, rows))
    # main's behaviour (no widen_f16): the same nodes in f16; the check above
    # then fails
    _, log0 = rlx_run(f16, feeds, names, "--option", "passes.disable=widen_f16")
    rows0 = compute_dtypes(log0, fast_ops)
    C.check(rows0 and any(dt == "f16" for _, dt in rows0),
            "%s: with widen_f16 off the compute nodes should be f16 (the check must be able to fail): %r"
            % (tag, rows0))


# ------------------------------------------------------------ a small CNN
def cnn():
    def w(name, shape, scale):
        return NH.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name)
    inits = [w("w1", (16, 3, 3, 3), 0.3), w("b1", (16,), 0.1), w("w2", (16, 1, 3, 3), 0.3), w("b2", (16,), 0.1),
             w("w3", (16, 16, 1, 1), 0.3), w("b3", (16,), 0.1), w("wg", (10, 16), 0.3), w("bg", (10,), 0.1)]
    nodes = [
        H.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        H.make_node("Relu", ["c1"], ["r1"]),
        H.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16),
        H.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
        H.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
        H.make_node("Add", ["c3", "r1"], ["a"]),
        H.make_node("GlobalAveragePool", ["a"], ["p"]),
        H.make_node("Flatten", ["p"], ["f"]),
        H.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1),
    ]
    inits += [NH.from_array(np.array(0, np.float32), "lo"), NH.from_array(np.array(6, np.float32), "hi")]
    g = H.make_graph(nodes, "cnn", [H.make_tensor_value_info("x", T.FLOAT, [1, 3, 32, 32])],
                     [H.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits)
    p = os.path.join(tmp, "cnn.onnx")
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)], ir_version=8), p)
    return p


check_model("cnn", cnn(), {"x": rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)}, ["y"], {"Conv", "Gemm"})

# ------------------------------------------------------------ a small BERT
bert = os.path.join(tmp, "bert.onnx")
rc, so, se = R.run([sys.executable, os.path.join(R.ROOT, "scripts", "make_minilm_onnx.py"), "--random", "--layers", "2",
                    "--hidden", "64", "--heads", "4", "--intermediate", "256", "--vocab", "500", "-o", bert])
if C.check(rc == 0, "make_minilm_onnx failed: %s" % se):
    S = 16
    feeds = {"input_ids": rng.integers(0, 500, (1, S)).astype(np.int64), "attention_mask": np.ones((1, S), np.int64),
             "token_type_ids": np.zeros((1, S), np.int64)}
    feeds["attention_mask"][0, 12:] = 0
    check_model("bert", bert, feeds, ["last_hidden_state", "sentence_embedding"],
                {"MatMul", "Gemm", "rlx.Attention"})

# ------------------------------------------------------------ overflow
# f16 graph input and output; k1 = 1000 I, k2 = 0.001 (f16 constants)
def overflow_model(name, cast_mid, out_big):
    nodes = [H.make_node("MatMul", ["x", "k1"], ["big"])]
    mid = "big"
    if cast_mid:  # the model rounds the intermediate to f16 itself: f16 -> f32 -> f16
        nodes += [H.make_node("Cast", ["big"], ["big32"], to=T.FLOAT),
                  H.make_node("Cast", ["big32"], ["big16"], to=T.FLOAT16)]
        mid = "big16"
    nodes += [H.make_node("Mul", [mid, "k2"], ["y"])]
    outs = [H.make_tensor_value_info("y", T.FLOAT16, [1, 4])]
    if out_big:
        outs.append(H.make_tensor_value_info("big", T.FLOAT16, [1, 4]))
    inits = [NH.from_array((1000 * np.eye(4)).astype(np.float16), "k1"), NH.from_array(np.array(0.001, np.float16), "k2")]
    g = H.make_graph(nodes, name, [H.make_tensor_value_info("x", T.FLOAT16, [1, 4])], outs, inits)
    p = os.path.join(tmp, name + ".onnx")
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)], ir_version=8), p)
    return p


x = np.array([[100, -100, 1, 0.5]], np.float16)
p = overflow_model("ovf", False, True)
ys, log = rlx_run(p, {"x": x}, ["y", "big"])
if C.check(ys is not None, "overflow model: rlx run failed:\n" + log):
    y, big = ys[0][0], ys[1][0]
    print("overflow: y", y, "big", big)
    C.check(y.dtype == np.float16 and big.dtype == np.float16, "overflow: the f16 outputs must stay f16")
    want = (x.astype(np.float32) * np.float32(np.float16(1000))) * np.float32(np.float16(0.001))
    C.check(np.all(np.isfinite(y)) and np.abs(y.astype(np.float32) - want).max() <= 0.1,
            "overflow: the f32 intermediate (1e5) should not overflow on CPU plans: y = %r, want %r" % (y, want))
    C.check(np.isinf(big[0]) and big[0] > 0 and np.isinf(big[1]) and big[1] < 0 and np.isfinite(big[2:]).all(),
            "overflow: an f16 graph output past 65,504 is +-inf: %r" % big)
    try:
        yo = ort.InferenceSession(p, providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
        print("onnxruntime CPU: y", yo)
    except Exception as e:  # a reference only
        print("onnxruntime unavailable for the overflow model:", e)
# the model's own Cast to f16 keeps rounding: inf there, inf * 0.001 = inf
p = overflow_model("ovf_cast", True, False)
ys, log = rlx_run(p, {"x": x}, ["y"])
if C.check(ys is not None, "overflow model with a Cast: rlx run failed:\n" + log):
    y = ys[0]
    print("overflow, Cast to f16 between: y", y)
    y = y[0]
    C.check(np.isinf(y[0]) and np.isinf(y[1]) and abs(float(y[2]) - 1) < 0.01,
            "overflow: a Cast to f16 of the intermediate must round it (inf): %r" % y)
# with widen_f16 off (main, and the GPU's per-op rounding) the intermediate overflows
p = overflow_model("ovf", False, True)
ys, _ = rlx_run(p, {"x": x}, ["y", "big"], "--option", "passes.disable=widen_f16")
C.check(ys is not None and np.isinf(ys[0][0, 0]), "widen_f16 off: the f16 intermediate should overflow (the check must "
        "be able to fail): %r" % (None if ys is None else ys[0]))
# the GPU's policy: the MatMul's f16 store overflows (README's "f16 models")
rc, devices, _ = R.run([RLX, "devices"])
if "shader-f16 yes" in devices:
    ys, log = rlx_run(p, {"x": x}, ["y", "big"], "--device", "gpu")
    C.check(ys is not None and np.isinf(ys[0][0, 0]) and np.isfinite(ys[0][0, 2]),
            "gpu: the f16 MatMul result past 65,504 should be inf there: %r\n%s" % (None if ys is None else ys[0], log))
else:
    print("no GPU with shader-f16: its overflow check is skipped")
C.done()
