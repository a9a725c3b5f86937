"""The rounding policy of f16 models (README's "f16 models"): a
LayerNorm written out as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div,
Mul, Add in f16, on rows with outliers of 795 and -600 (their squares pass
binary16's 65,504), must be as accurate as onnxruntime, which fuses the
pattern and computes its statistics in f32: rlx's fuse_layernorm does the
same on the CPU and the GPU. Compared with a float64 reference of the same
f16 inputs: normwise relative error below 1e-3 (onnxruntime: ~1.4e-4;
unfused, the variance is inf and every output collapses to the bias,
relative error ~1). CPU plans compute f16 models in f32 (widen_f16), so
there the written-out form is accurate even without the fusion; with both
passes off it overflows (the test can fail). Also the mixed-precision model
of the f16 work (f32 edges, Casts, f16 ops) runs on the GPU with no CPU
node, equal to the CPU's per-op binary16 rounding (widen_f16 off) and
within a few f16 ulps of its f32 computation (widen_f16 on).

Skips (exit 77) while rlx is not built."""
import os
import subprocess
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
tmp = tempfile.mkdtemp(prefix="rlx_f16_ln_")
rng = R.seeded_rng(7)
C = R.Checker("test_f16_layernorm")

N, H_ = 4, 64
x = rng.uniform(-2, 2, (N, H_)).astype(np.float16)
x[1, 5], x[2, 40] = 795, -600
gamma = rng.uniform(0.5, 1.5, H_).astype(np.float16)
beta = rng.uniform(-1, 1, H_).astype(np.float16)
nodes = [
    H.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
    H.make_node("Sub", ["x", "mean"], ["d"]),
    H.make_node("Pow", ["d", "two"], ["d2"]),
    H.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], keepdims=1),
    H.make_node("Add", ["var", "eps"], ["ve"]),
    H.make_node("Sqrt", ["ve"], ["sd"]),
    H.make_node("Div", ["d", "sd"], ["n"]),
    H.make_node("Mul", ["n", "gamma"], ["s"]),
    H.make_node("Add", ["s", "beta"], ["y"]),
]
inits = [NH.from_array(np.array(2, np.float16), "two"), NH.from_array(np.array(1e-5, np.float16), "eps"),
         NH.from_array(gamma, "gamma"), NH.from_array(beta, "beta")]
g = H.make_graph(nodes, "ln16", [H.make_tensor_value_info("x", T.FLOAT16, [N, H_])],
                 [H.make_tensor_value_info("y", T.FLOAT16, [N, H_])], inits)
model = os.path.join(tmp, "ln16.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 13)], ir_version=8), model)
xin = os.path.join(tmp, "x.npy")
np.save(xin, x)

xd = x.astype(np.float64)
mu = xd.mean(-1, keepdims=True)
ref = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + float(np.float16(1e-5))) * gamma + beta


def rel(y):
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


def rlx_run(device, *extra):
    out = os.path.join(tmp, "out_%s_%d" % (device.replace(":", ""), len(extra)))
    rc, so, se = R.run([RLX, "run", model, "--device", device, "--input", "x=" + xin, "--iters", "0",
                        "--output-dir", out, "--report"] + list(extra))
    if rc != 0:
        print(so, se)
        return None, so + se
    return np.load(os.path.join(out, "y.npy")), so + se


try:
    import onnxruntime as ort
    yo = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    print("onnxruntime: normwise relative error %.3g" % rel(yo))
except Exception as e:  # onnxruntime is a reference only
    print("onnxruntime unavailable:", e)

for dev in ["cpu", "gpu"]:
    y, log = rlx_run(dev)
    if not C.check(y is not None, "%s: rlx run failed" % dev):
        continue
    e = rel(y)
    print("rlx %s: normwise relative error %.3g" % (dev, e))
    C.check(e < 1e-3, "%s: error %.3g against float64 (want < 1e-3, onnxruntime ~1.4e-4)" % (dev, e))
    if dev == "gpu":  # the fused node, on the GPU (native 1): "LayerNormalization 1 1 0 0 0"
        row = [ln.split() for ln in log.splitlines() if ln.split()[:1] == ["LayerNormalization"]]
        C.check(row and row[0][1:4] == ["1", "1", "0"], "gpu: LayerNormalization is not one native node:\n" + log)

# the square written other ways: Pow by an int64 2 and Mul(d, d) (two edges
# from d, which fuse_layernorm once counted as a third user and left the
# pattern unfused); pow_exponent turns every Pow(d, 2) into the Mul, so all
# three reach the fusion the same way, on both devices
for form in ("pow_int64", "mul"):
    sq = (H.make_node("Pow", ["d", "two_i"], ["d2"]) if form == "pow_int64" else H.make_node("Mul", ["d", "d"], ["d2"]))
    nodes_f = [sq if nd.op_type == "Pow" else nd for nd in nodes]
    g_f = H.make_graph(nodes_f, "ln16_" + form, [H.make_tensor_value_info("x", T.FLOAT16, [N, H_])],
                       [H.make_tensor_value_info("y", T.FLOAT16, [N, H_])],
                       inits + [NH.from_array(np.array(2, np.int64), "two_i")])
    model_f = os.path.join(tmp, "ln16_%s.onnx" % form)
    onnx.save(H.make_model(g_f, opset_imports=[H.make_opsetid("", 13)], ir_version=8), model_f)
    for dev in ["cpu", "gpu"]:
        out = os.path.join(tmp, "out_%s_%s" % (form, dev))
        rc, so, se = R.run([RLX, "run", model_f, "--device", dev, "--input", "x=" + xin, "--iters", "0",
                            "--output-dir", out, "--report"])
        if not C.check(rc == 0, "%s on %s: rlx run failed: %s" % (form, dev, (so + se)[-400:])):
            continue
        e = rel(np.load(os.path.join(out, "y.npy")))
        print("rlx %s, square as %s: normwise relative error %.3g" % (dev, form, e))
        C.check(e < 1e-3, "%s on %s: error %.3g against float64 (want < 1e-3)" % (form, dev, e))
        row = [ln.split() for ln in (so + se).splitlines() if ln.split()[:1] == ["LayerNormalization"]]
        C.check(row and row[0][1] == "1", "%s on %s: the pattern is not one LayerNormalization:\n%s" % (form, dev, so + se))

# pow_exponent on both devices: f32 Pow(x, 2.0) runs as Mul(x, x), the
# correctly rounded square (x = 1 + 2^-12 squares to a tie that glibc's
# powf rounds the other way)
xs = np.concatenate([np.array([1 + 2 ** -12, 1 + 3 * 2 ** -12, -1.5, 0.0], np.float32),
                     rng.uniform(-3, 3, 60).astype(np.float32)])
g_p = H.make_graph([H.make_node("Pow", ["x", "two_f"], ["y"])], "pow2", [H.make_tensor_value_info("x", T.FLOAT, [64])],
                   [H.make_tensor_value_info("y", T.FLOAT, [64])], [NH.from_array(np.array(2.0, np.float32), "two_f")])
model_p = os.path.join(tmp, "pow2.onnx")
onnx.save(H.make_model(g_p, opset_imports=[H.make_opsetid("", 13)], ir_version=8), model_p)
xs_in = os.path.join(tmp, "xs.npy")
np.save(xs_in, xs)
for dev in ["cpu", "gpu"]:
    out = os.path.join(tmp, "out_pow2_" + dev)
    rc, so, se = R.run([RLX, "run", model_p, "--device", dev, "--input", "x=" + xs_in, "--iters", "0", "--output-dir", out,
                        "--report"])
    if not C.check(rc == 0, "pow2 on %s: rlx run failed: %s" % (dev, (so + se)[-400:])):
        continue
    row = [ln.split() for ln in (so + se).splitlines() if ln.split()[:1] == ["Mul"]]
    C.check(row and row[0][1:3] == ["1", "1"], "pow2 on %s: Pow(x, 2.0) is not one native Mul:\n%s" % (dev, so + se))
    y = np.load(os.path.join(out, "y.npy"))
    C.check(np.array_equal(y.view(np.uint32), (xs * xs).view(np.uint32)), "pow2 on %s: not the bits of x * x" % dev)

# the passes are what make it accurate: with both off, the written-out form
# overflows in binary16; on CPU plans widen_f16 alone keeps the squares in f32
y, _ = rlx_run("cpu", "--option", "passes.disable=fuse_layernorm,widen_f16")
C.check(y is not None and (not np.all(np.isfinite(y.astype(np.float64))) or rel(y) > 0.1),
        "without fuse_layernorm and widen_f16 the f16 squares should overflow (the test must be able to fail)")
y, _ = rlx_run("cpu", "--option", "passes.disable=fuse_layernorm")
C.check(y is not None and rel(y) < 1e-3, "cpu, fuse_layernorm off: widen_f16 computes in f32, want < 1e-3, got %s"
        % (None if y is None else "%.3g" % rel(y)))

# preconditions: an intermediate that leaves the pattern (d is also a graph
# output) keeps it unfused, with d computed as written
g2 = H.make_graph(nodes, "ln16_out", [H.make_tensor_value_info("x", T.FLOAT16, [N, H_])],
                  [H.make_tensor_value_info("y", T.FLOAT16, [N, H_]), H.make_tensor_value_info("d", T.FLOAT16, [N, H_])],
                  inits)
model2 = os.path.join(tmp, "ln16_out.onnx")
onnx.save(H.make_model(g2, opset_imports=[H.make_opsetid("", 13)], ir_version=8), model2)
out2 = os.path.join(tmp, "out2")
rc, so, se = R.run([RLX, "run", model2, "--input", "x=" + xin, "--iters", "0", "--output-dir", out2, "--report"])
C.check(rc == 0 and "LayerNormalization" not in so, "d used outside the pattern: it must stay unfused\n" + so + se)
if rc == 0:
    dd = np.load(os.path.join(out2, "d.npy")).astype(np.float64)
    C.check(np.abs(dd - (xd - xd.mean(-1, keepdims=True))).max() < 0.5, "d (x - mean) is wrong when unfused")

# a mixed-precision model: f32 edges, Cast to f16, f16 ops, Cast back; on a
# GPU with shader-f16 no node runs on the CPU
rc, devices, se = R.run([RLX, "devices"])
if "shader-f16 yes" in devices:
    w = NH.from_array(rng.uniform(-1, 1, (5,)).astype(np.float16), "b")
    nodes = [
        H.make_node("Cast", ["x"], ["xh"], to=T.FLOAT16),
        H.make_node("Transpose", ["xh"], ["xt"], perm=[0, 2, 1]),
        H.make_node("Mul", ["xt", "b"], ["m"]),
        H.make_node("Sigmoid", ["m"], ["s"]),
        H.make_node("Add", ["s", "xt"], ["a"]),
        H.make_node("Softmax", ["a"], ["sm"], axis=-1),
        H.make_node("ReduceMax", ["sm"], ["rm"], axes=[1], keepdims=1),
        H.make_node("Sub", ["sm", "rm"], ["c"]),
        H.make_node("Concat", ["c", "sm"], ["cc"], axis=1),
        H.make_node("Cast", ["cc"], ["y"], to=T.FLOAT),
    ]
    g = H.make_graph(nodes, "mixed", [H.make_tensor_value_info("x", T.FLOAT, [2, 5, 7])],
                     [H.make_tensor_value_info("y", T.FLOAT, None)], [w])
    mixed = os.path.join(tmp, "mixed.onnx")
    onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)]), mixed)
    # --check's CPU session has the same options: widen_f16 off there gives
    # the CPU's per-op rounding to binary16, the GPU's policy (the same bits)
    rc, so, se = R.run([RLX, "run", mixed, "--device", "gpu", "--iters", "0", "--check", "--report",
                        "--option", "passes.disable=widen_f16"])
    print(so)
    C.check(rc == 0, "mixed model: rlx run failed: " + se)
    rows = [ln.split() for ln in so.splitlines() if len(ln.split()) == 6 and ln.split()[1].isdigit()]
    C.check(rows and all(r[3] == "0" for r in rows), "mixed model: a node fell back to the CPU")
    C.check("max abs diff 0 " in so or "max abs diff 0 (" in so, "mixed model: GPU and CPU differ")
    # the CPU plan in f32 (widen_f16): a few f16 ulps from the GPU's rounding
    rc, so, se = R.run([RLX, "run", mixed, "--device", "gpu", "--iters", "0", "--check"])
    nw = [float(ln.split("normwise rel")[1]) for ln in so.splitlines() if "normwise rel" in ln]
    C.check(rc == 0 and nw and nw[0] < 2e-3, "mixed model: GPU vs the CPU's f32 computation: %r\n%s" % (nw, so + se))
else:
    print("no shader-f16 adapter: the mixed-precision GPU check is skipped")
# an adapter without shader-f16 (here the GL one): f16 nodes decline to the
# CPU, the results stay right, and the dispatch report says why, once
no16, cur = None, None
for ln in devices.splitlines():
    t = ln.split()
    if t and t[0].startswith("gpu:"):
        cur = t[0]
    if "shader-f16 no" in ln and cur and no16 is None:
        no16 = cur
if no16:
    y, log = rlx_run(no16)
    C.check(y is not None and rel(y) < 1e-3, "%s (no shader-f16): wrong or failed" % no16)
    C.check("with f16 values run on the CPU: this adapter has no shader-f16" in log,
            "%s (no shader-f16): the dispatch report does not say why f16 nodes run on the CPU:\n%s" % (no16, log))
else:
    print("no adapter without shader-f16: its check is skipped")
C.done()
