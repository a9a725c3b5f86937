"""NaN, +-inf and -0 through the activations, against onnxruntime (CPU
provider): Relu and the others whose formula is a max, min or select
(LeakyRelu, PRelu, Clip, HardSigmoid, HardSwish, Elu, Selu, Celu, Softplus,
ThresholdedRelu, Shrink, Max, Min), standalone, as a fused epilogue (Conv
depthwise and ordinary, Gemm) and inside a fused elementwise chain, on the
CPU (passes on, fuse_activation off, every fusion off) and on the GPU when
there is an adapter.

Checks: NaN exactly where onnxruntime has NaN, +-inf where it has them, a
-0 where it keeps -0 for Relu, the rest to 1e-5 relative + 1e-5 absolute
(Conv and Gemm: 1e-4, a different summation order). Inputs random, non-zero
(seed RLX_TEST_SEED, default 3), with the edge values written in. Skips
(exit 77) while librlx.so is not built or is built with the sanitizers."""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_nan_activations")
rng = R.seeded_rng(3)
tmp = tempfile.mkdtemp(prefix="rlx_nan_act_")
GPU = len(rlx.adapters()) > 0
print("GPU adapter:", rlx.adapters()[0]["name"] if GPU else "none (GPU cases skipped)")
EDGES = np.array([np.nan, -np.nan, -1, 1, -0.0, 0.0, np.inf, -np.inf, 0.3, -0.3, 5, -5], np.float32)
RUNS = [("cpu", {}), ("cpu", {"passes.disable": "fuse_activation"}), ("cpu", {"passes.disable": "fuse_activation,fuse_elementwise,fuse_conv_residual"})]
if GPU:
    RUNS += [("gpu", {}), ("gpu", {"passes.disable": "fuse_activation"})]


def save(name, nodes, x_shape, inits, opset=18):
    g = H.make_graph(nodes, name, [H.make_tensor_value_info("x", T.FLOAT, list(x_shape))],
                     [H.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def same(label, got, want, tol, relu_sign=False):
    """NaN and +-inf where onnxruntime has them, the rest within tol."""
    nan_w, nan_g = np.isnan(want), np.isnan(got)
    ok = C.check(np.array_equal(nan_w, nan_g), "%s: NaN at %d places, onnxruntime %d (first differences %s)" % (
        label, int(nan_g.sum()), int(nan_w.sum()), np.argwhere(nan_w != nan_g).tolist()[:4]))
    fin = ~nan_w & ~nan_g
    inf_w = np.isinf(want) & fin
    ok &= C.check(np.array_equal(got[inf_w], want[inf_w]), "%s: +-inf differ" % label)
    m = fin & ~np.isinf(want)
    err = np.abs(got[m].astype(np.float64) - want[m]) - tol * (1 + np.abs(want[m]))
    ok &= C.check(err.size == 0 or err.max() <= 0, "%s: max excess error %g" % (label, err.max() if err.size else 0))
    if relu_sign:
        z = m & (want == 0)
        ok &= C.check(np.array_equal(np.signbit(got[z]), np.signbit(want[z])), "%s: the sign of a zero differs" % label)
    return ok


def compare(label, path, x, tol=1e-5, relu_sign=False):
    want = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for dev, opts in RUNS:
        got = rlx.Session(rlx.Model(path), device=dev, options=opts).run({"x": x})[0]
        same("%s on %s %s" % (label, dev, opts or "(passes on)"), got, want, tol, relu_sign)


# ------------------------------------------------------------ standalone
x = np.concatenate([EDGES, rng.uniform(-3, 3, 28).astype(np.float32)]).reshape(2, 20)  # 40: vector forms run too
for n_models, (op, attrs, extra) in enumerate([("Relu", {}, []), ("LeakyRelu", {"alpha": 0.1}, []), ("PRelu", {}, [np.float32(0.25)]),
                         ("Clip", {}, [np.float32(0), np.float32(6)]), ("Clip", {}, [np.float32(-2), np.float32(2)]),
                         ("HardSigmoid", {"alpha": 0.2, "beta": 0.5}, []), ("HardSwish", {}, []),
                         ("Elu", {"alpha": 0.7}, []), ("Selu", {}, []), ("Celu", {"alpha": 1.3}, []),
                         ("Softplus", {}, []), ("ThresholdedRelu", {"alpha": 0.5}, []),
                         ("Shrink", {"lambd": 0.5, "bias": 0.1}, []), ("Max", {}, [np.float32(0)]),
                         ("Min", {}, [np.float32(0)])]):
    names = ["x"] + ["k%d" % i for i in range(len(extra))]
    inits = [NH.from_array(np.array(v, np.float32), n) for n, v in zip(names[1:], extra)]
    p = save("u%d_%s" % (n_models, op), [H.make_node(op, names, ["y"], **attrs)], x.shape, inits)
    # PRelu of +-inf: onnxruntime's NaN comes from its formula (0 * inf), not the ONNX definition
    xi = x.copy()
    if op == "PRelu":
        xi[np.isinf(xi)] = 7.0
    compare("%s%s" % (op, attrs or ""), p, xi, relu_sign=op in ("Relu", "LeakyRelu"))


# ------------------------------------------------------------ fused epilogues
def conv_relu(name, ch, group, h, w, act="Relu"):
    wt = rng.uniform(-0.5, 0.5, (ch, ch // group, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, ch).astype(np.float32)
    nodes = [H.make_node("Conv", ["x", "w", "b"], ["c"], group=group, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             H.make_node(act, ["c"], ["y"])]
    return save(name, nodes, (1, ch, h, w), [NH.from_array(wt, "w"), NH.from_array(b, "b")])


for ch, group, h, w in [(8, 8, 9, 11), (16, 16, 7, 12), (8, 1, 9, 11), (3, 1, 5, 6)]:
    p = conv_relu("conv_%d_%d" % (ch, group), ch, group, h, w)
    x = rng.uniform(-2, 2, (1, ch, h, w)).astype(np.float32)
    x[0, 0, h // 2, w // 2] = np.nan  # one NaN pixel: 9 NaN outputs depthwise, 9 * ch with group 1
    x[0, ch - 1, 0, 1] = -np.nan
    compare("Conv(C=%d, group=%d) + Relu, NaN pixels" % (ch, group), p, x, tol=1e-4)

M, K, N = 5, 7, 6
wt = rng.uniform(-1, 1, (K, N)).astype(np.float32)
b = rng.uniform(-1, 1, N).astype(np.float32)
for act in ["Relu", "LeakyRelu", "HardSwish", "Clip"]:
    extra = [NH.from_array(np.array(0, np.float32), "lo"), NH.from_array(np.array(6, np.float32), "hi")] if act == "Clip" else []
    nodes = [H.make_node("Gemm", ["x", "w", "b"], ["g"]),
             H.make_node(act, ["g", "lo", "hi"] if act == "Clip" else ["g"], ["y"])]
    p = save("gemm_" + act, nodes, (M, K), [NH.from_array(wt, "w"), NH.from_array(b, "b")] + extra)
    x = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    x[1, 3] = np.nan
    compare("Gemm + %s, a NaN in row 1" % act, p, x, tol=1e-4)

# ------------------------------------------------------------ a fused elementwise chain with Relu
nodes = [H.make_node("Mul", ["x", "s"], ["a"]), H.make_node("Relu", ["a"], ["r"]),
         H.make_node("Add", ["r", "o"], ["c"]), H.make_node("Celu", ["c"], ["e"]), H.make_node("Relu", ["e"], ["y"])]
p = save("chain", nodes, (3, 17), [NH.from_array(np.array(1.5, np.float32), "s"), NH.from_array(np.array(-0.25, np.float32), "o")])
x = rng.uniform(-2, 2, (3, 17)).astype(np.float32)
x.flat[: EDGES.size] = EDGES
compare("Mul -> Relu -> Add -> Celu -> Relu chain", p, x)

C.done()
