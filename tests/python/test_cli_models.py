"""The rlx command line on small models made here with onnx.helper:
error paths of models (unknown op, unsupported opset, malformed and
truncated files: exit 2 with the op type, node name and opset named) and
of inputs, and a working model through `rlx info` and `rlx run` (outputs
checked against numpy, file names sanitised, seeded inputs reproducible,
timings, --check, --report).

Skips (exit 77) while the ONNX importer is not built."""
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_cli_models_")
rng = R.seeded_rng(7)


def rlx(*args):
    return R.run([RLX, *args], timeout=300)


def save(model, name):
    path = os.path.join(tmp, name)
    onnx.save(model, path)
    return path


# y = |x + w|, z = -(x + w); x [batch, 3] f32, w [3]; outputs named so that
# one needs sanitising
w = rng.uniform(-1, 1, size=3).astype(np.float32)
graph = H.make_graph(
    [H.make_node("Add", ["x", "w"], ["s"], name="add0"),
     H.make_node("Abs", ["s"], ["out/abs:0"], name="abs0"),
     H.make_node("Neg", ["s"], [".neg"], name="neg0")],
    "small", [H.make_tensor_value_info("x", T.FLOAT, ["batch", 3])],
    [H.make_tensor_value_info("out/abs:0", T.FLOAT, None), H.make_tensor_value_info(".neg", T.FLOAT, None)],
    [NH.from_array(w, "w")])
good = save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)]), "small.onnx")

rc, so, se = rlx("info", good)
if rc != 0 and "importer is not built yet" in se:
    R.skip("the ONNX importer is not built yet (src/import/onnx_stub.c)")
C = R.Checker("test_cli_models")

# ---------------------------------------------------------------- info
print(so, se, sep="")
C.check(rc == 0, "rlx info: exit %d" % rc)
for pat in (r"^opset: 17\b", r"^inputs: 1$", r"^  x +f32 +\[batch,3\]$", r"^outputs: 2$", r"^nodes: 3\b",
            r"^  Add +1$", r"^  Abs +1$", r"^  Neg +1$", r"^initializers: 1, 12 B$"):
    C.check(re.search(pat, so, re.M) is not None, "rlx info output lacks /%s/" % pat)
rc, so, se = rlx("info", good, "--dump-ir")
C.check(rc == 0 and "Add" in so and "add0" in so and "%x" in so, "rlx info --dump-ir: exit %d, no IR dump" % rc)

# ---------------------------------------------------------------- run with a file
x = rng.uniform(-2, 2, size=(4, 3)).astype(np.float32)
xp = os.path.join(tmp, "x.npy")
np.save(xp, x)
od = os.path.join(tmp, "out", "nested")  # created by rlx run
rc, so, se = rlx("run", good, "--input", "x=" + xp, "--output-dir", od, "--check", "--report", "--iters", "3",
                 "--warmup", "1")
print(so, se, sep="")
C.check(rc == 0, "rlx run: exit %d" % rc)
s = x + w
for fname, want in (("out_abs_0.npy", np.abs(s)), ("_neg.npy", -s)):
    f = os.path.join(od, fname)
    if C.check(os.path.exists(f), "rlx run --output-dir: %s missing (names sanitised)" % fname):
        got = np.load(f)
        # tolerance 0: one f32 add and a sign operation
        C.check(got.shape == (4, 3) and np.array_equal(got, want), "%s differs from numpy" % fname)
for pat in (r"^device: cpu", r"from .*x\.npy", r"^  import +[0-9.]+ (us|ms|s)\b", r"^  compile +[0-9.]+ (us|ms|s)",
            r"^  first run +[0-9.]+ (us|ms|s)", r"median [0-9.]+ (us|ms|s), p10 [0-9.]+ (us|ms|s), "
            r"p90 [0-9.]+ (us|ms|s) over 3 runs", r"^  out/abs:0 +f32 +\[4,3\]", r"min .* max .* mean ",
            r"first: ", r"^check against the CPU backend:", r"max abs diff 0\b", r"^dispatch report"):
    C.check(re.search(pat, so, re.M) is not None, "rlx run output lacks /%s/" % pat)
# the summary is right: min/max/mean of |x + w|
m = re.search(r"^  out/abs:0 .*\n    min (\S+)  max (\S+)  mean (\S+)", so, re.M)
if C.check(m is not None, "no summary line for out/abs:0"):
    a = np.abs(s).astype(np.float64)
    for got, want, name in zip(map(float, m.groups()), (a.min(), a.max(), a.mean()), ("min", "max", "mean")):
        # printed with 6 significant digits
        C.check(abs(got - want) <= 1e-5 * max(1.0, abs(want)), "summary %s %g, numpy %g" % (name, got, want))

# ---------------------------------------------------------------- random inputs
outs = []
for sd in ("5", "5", "6"):
    d = os.path.join(tmp, "rand" + sd + str(len(outs)))
    rc, so, se = rlx("run", good, "--seed", sd, "--output-dir", d, "--iters", "0")
    C.check(rc == 0, "random run seed %s: exit %d %s" % (sd, rc, se))
    C.check("random (seed %s)" % sd in so and "note: symbolic dims batch" in so and "[1,3]" in so,
            "random run: does not say the input is random or that 'batch' was set to 1:\n" + so)
    C.check("not measured (--iters 0)" in so, "--iters 0 not reported")
    outs.append(np.load(os.path.join(d, "out_abs_0.npy")) if rc == 0 else None)
if all(o is not None for o in outs):
    C.check(np.array_equal(outs[0], outs[1]), "same --seed gave different inputs")
    C.check(not np.array_equal(outs[0], outs[2]), "different --seed gave the same inputs")
    C.check(outs[0].shape == (1, 3), "symbolic batch not set to 1")
rc, so, se = rlx("run", good, "--shape", "x=5x3", "--output-dir", os.path.join(tmp, "shaped"), "--iters", "1")
C.check(rc == 0 and "[5,3]" in so and "note:" not in so, "--shape x=5x3: exit %d\n%s%s" % (rc, so, se))

# ---------------------------------------------------------------- integer and bool outputs, exactly
# (a tester's finding: min, max and the first values went through %.6g, so
# 2199023255554 printed as 2.19902e+12 and int32's -2147483648 as
# -2.14748e+09); floats keep %.6g (checked above)
for dt, np_dt, vals in ((T.INT64, np.int64, [2199023255554, 246913578, -(2 ** 63), 2 ** 63 - 1]),
                        (T.INT32, np.int32, [-(2 ** 31), 2 ** 31 - 1, 7, 0]),
                        (T.UINT64, np.uint64, [2 ** 64 - 1, 0, 9007199254740993, 1]),
                        (T.UINT8, np.uint8, [255, 0, 17, 1]),
                        (T.BOOL, np.bool_, [True, False, True, True])):
    name = onnx.helper.tensor_dtype_to_np_dtype(dt).name
    gi = H.make_graph([H.make_node("Identity", ["x"], ["y"])], "ints", [H.make_tensor_value_info("x", dt, [4])],
                      [H.make_tensor_value_info("y", dt, [4])])
    mi = save(H.make_model(gi, opset_imports=[H.make_opsetid("", 17)]), "ident_%s.onnx" % name)
    xi = os.path.join(tmp, "x_%s.npy" % name)
    a = np.array(vals, dtype=np_dt)
    np.save(xi, a)
    rc, so, se = rlx("run", mi, "--input", "x=" + xi, "--iters", "0")
    shown = [int(v) for v in a]
    want = "    min %d  max %d  mean " % (min(shown), max(shown))
    first = "    first: " + " ".join(str(v) for v in shown) + "\n"
    C.check(rc == 0 and want in so and first in so,
            "rlx run, %s output: exit %d, want %r and %r in\n%s%s" % (name, rc, want, first, so, se))

# ---------------------------------------------------------------- input errors


def fails(args, code, needles, what, patterns=()):
    """Expects exit `code`, stderr starting with "rlx: error: " and holding
    every needle (substring) and pattern (regex)."""
    rc, so, se = rlx(*args)
    ok = rc == code and se.startswith("rlx: error: ") and all(n in se for n in needles)
    ok = ok and all(re.search(p, se) for p in patterns)
    C.check(ok, "%s: exit %d (want %d), stderr %r should contain %s %s" % (what, rc, code, se, needles, patterns))


np.save(os.path.join(tmp, "x64.npy"), x.astype(np.float64))
fails(["run", good, "--input", "x=" + os.path.join(tmp, "x64.npy")], 2, ["'x'", "f64", "f32"], "f64 input file")
fails(["run", good, "--input", "y=" + xp], 2, ["'y'", "'x'"], "unknown input name")
fails(["run", good, "--shape", "y=1x3"], 2, ["'y'"], "--shape for an unknown input")
fails(["run", good, "--shape", "x=4x4"], 2, ["x=4x4", "[batch,3]"], "--shape against a static dim")
fails(["run", good, "--shape", "x=4"], 2, ["rank"], "--shape of the wrong rank")
fails(["run", good, "--input", "x=" + xp, "--shape", "x=4x3"], 2, ["both"], "--input and --shape together")
fails(["run", good, "--input", "x=" + os.path.join(tmp, "none.npy")], 2, ["none.npy"], "missing input file")
with open(os.path.join(tmp, "bad.npy"), "w") as f:
    f.write("not numpy")
fails(["run", good, "--input", "x=" + os.path.join(tmp, "bad.npy")], 2, ["bad.npy"], "corrupt input file")
afile = os.path.join(tmp, "a_file")
open(afile, "w").close()
fails(["run", good, "--output-dir", afile, "--iters", "0"], 1, ["a_file"], "--output-dir is a file")

# ---------------------------------------------------------------- model errors
g = H.make_graph([H.make_node("FooBarOp", ["x"], ["y"], name="mystery_node")], "g",
                 [H.make_tensor_value_info("x", T.FLOAT, [2])], [H.make_tensor_value_info("y", T.FLOAT, [2])])
unknown = save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)]), "unknown_op.onnx")
for cmd in ("run", "info"):
    fails([cmd, unknown], 2, ["FooBarOp", "mystery_node"], "rlx %s on an unknown op" % cmd, [r"\b17\b"])

g = H.make_graph([H.make_node("Abs", ["x"], ["y"], name="abs_node")], "g",
                 [H.make_tensor_value_info("x", T.FLOAT, [2])], [H.make_tensor_value_info("y", T.FLOAT, [2])])
g_erf = H.make_graph([H.make_node("Erf", ["x"], ["y"], name="erf_node")], "g",
                     [H.make_tensor_value_info("x", T.FLOAT, [2])], [H.make_tensor_value_info("y", T.FLOAT, [2])])
old = save(H.make_model(g_erf, opset_imports=[H.make_opsetid("", 3)]), "old.onnx")
fails(["run", old], 2, ["opset", "Erf", "erf_node"], "an op newer than the model's opset 3", [r"\b3\b"])
future = save(H.make_model(g, opset_imports=[H.make_opsetid("", 99)]), "future.onnx")
fails(["info", future], 2, ["opset"], "opset 99 (above the supported range)", [r"\b99\b"])

# an op that exists only from a later opset: GeLU is opset 20
g = H.make_graph([H.make_node("Gelu", ["x"], ["y"], name="gelu_node")], "g",
                 [H.make_tensor_value_info("x", T.FLOAT, [2])], [H.make_tensor_value_info("y", T.FLOAT, [2])])
early = save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)]), "gelu13.onnx")
fails(["run", early], 2, ["Gelu", "gelu_node"], "Gelu at opset 13", [r"\b13\b"])

# a DequantizeLinear of an int32 x with a nonzero constant zero point (ONNX: an int32 x has none; onnxruntime
# refuses it): a model error on either device, naming the node, the op and the zero point
g = H.make_graph([H.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dq32_node")], "g",
                 [H.make_tensor_value_info("x", T.INT32, [2, 3])], [H.make_tensor_value_info("y", T.FLOAT, [2, 3])],
                 [NH.from_array(np.array(np.float32(0.5)), "s"), NH.from_array(np.array(np.int32(5)), "z")])
dq32 = save(H.make_model(g, opset_imports=[H.make_opsetid("", 21)]), "dq32_zp.onnx")
for dev in ("cpu", "gpu"):
    fails(["run", dq32, "--device", dev], 2, ["dq32_node", "DequantizeLinear", "x_zero_point", "RLX_ERR_INVALID_MODEL"],
          "an int32 DequantizeLinear with zero point 5 on %s" % dev)

garbage = os.path.join(tmp, "garbage.onnx")
with open(garbage, "wb") as f:
    f.write(bytes(rng.integers(0, 256, size=300, dtype=np.uint8)))
fails(["run", garbage], 2, ["garbage.onnx"], "random bytes")
with open(good, "rb") as f:
    data = f.read()
trunc = os.path.join(tmp, "truncated.onnx")
with open(trunc, "wb") as f:
    f.write(data[:len(data) * 2 // 3])
fails(["info", trunc], 2, ["truncated.onnx"], "truncated model")
empty = os.path.join(tmp, "empty.onnx")
open(empty, "wb").close()
fails(["run", empty], 2, ["empty.onnx"], "empty file")

C.done()
