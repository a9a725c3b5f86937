"""QDQ residual blocks and Linear layers on the GPU: a QLinearConv or
QLinearMatMul takes the 8-bit chain that alone reads its result
(passes/fuse_qlinear_ew.c; the chain applied where the integer kernels
store, kernels/qepi.wgsl) and gives the bits of the two nodes apart.

Models: small ResNet-like nets in f32 (a stem, an identity block, a block
whose projection shortcut comes after its last convolution in node order,
as torchvision's Bottleneck exports it), quantized by onnxruntime's
quantize_static (QDQ, per-channel int8 weights; uint8 or int8 activations),
on fresh random inputs. Shapes pick the integer kernels' store paths: 12 x 12
maps (whole words per row: the generated GEMM, its split-K reduce), 7 x 7
(49 columns: the flat requantizing pass), depthwise 3 x 3 blocks (qdwconv),
4 output channels (the small-m variants); and on one model every
gpu.qgemm_tile variant (gen, wg, reg, gemv, 0, legacy); a QDQ MLP block
(QLinearMatMul with its bias Add and residual), uint8 and int8; a 3-D
QLinearConv of the file, which the GPU declines (the CPU runs the fused
node within the GPU plan).

Checks, per model: the fusion report names fuse_qlinear_ew for each block
(two per model); with gpu.poison, the GPU's output equals bit for bit the
GPU plan with fuse_qlinear_ew off (the chain a dispatch of its own) and the
CPU plan (which keeps the nodes apart).

Skips (exit 77) while librlx.so or the rlx program is not built, or without
onnxruntime's quantizer."""
import os
import sys
import tempfile

import numpy as np
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
RLX = R.built("rlx")
try:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
except ImportError:
    R.skip("onnxruntime's quantizer is not installed")
if len(rlx.adapters()) == 0:
    R.skip("no GPU adapter")
C = R.Checker("test_qlinear_ew")
rng = R.seeded_rng(21)
TMP = tempfile.mkdtemp(prefix="rlx_qlinear_ew_")


def f32_model(path, c, hw, group, c2, nd=2):
    """stem 3 -> c; identity block (3x3 c -> c, then 3x3 c -> c in `group`
    groups, + stem, Relu); projection block (1x1 c -> c2, then the 1x1
    projection of the first block's output, made after it, +, Relu); nd
    spatial dims of hw each."""
    nodes, inits = [], []

    def conv(name, x, cin, cout, k, g=1, relu=False):
        w = (rng.standard_normal((cout, cin // g) + (k,) * nd) / np.sqrt(cin // g * k ** nd)).astype(np.float32)
        b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        inits.extend([NH.from_array(w, name + "_w"), NH.from_array(b, name + "_b")])
        nodes.append(H.make_node("Conv", [x, name + "_w", name + "_b"], [name], pads=[k // 2] * (2 * nd), group=g,
                                 name=name))
        if relu:
            nodes.append(H.make_node("Relu", [name], [name + "_r"], name=name + "_relu"))
            return name + "_r"
        return name

    s = conv("stem", "x", 3, c, 3, relu=True)
    a = conv("b0a", s, c, c, 3, relu=True)
    b = conv("b0b", a, c, c, 3, g=group)
    nodes += [H.make_node("Add", [b, s], ["s0"], name="add0"), H.make_node("Relu", ["s0"], ["o0"], name="relu0")]
    m = conv("b1a", "o0", c, c2, 1)
    p = conv("b1p", "o0", c, c2, 1)  # the projection, after the block's convolution
    nodes += [H.make_node("Add", [m, p], ["s1"], name="add1"), H.make_node("Relu", ["s1"], ["o1"], name="relu1")]
    y = conv("head", "o1", c2, c2, 1)
    g = H.make_graph(nodes, "res", [H.make_tensor_value_info("x", T.FLOAT, [1, 3] + [hw] * nd)],
                     [H.make_tensor_value_info(y, T.FLOAT, [1, c2] + [hw] * nd)], inits)
    md = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    md.ir_version = 8
    with open(path, "wb") as f:
        f.write(md.SerializeToString())
    return y


class Reader(CalibrationDataReader):
    def __init__(self, shape):
        self.items = [{"x": rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(4)]

    def get_next(self):
        return self.items.pop() if self.items else None


CASES = [  # name, channels, map, group of the identity block's second conv, projection channels, activations, dims
    ("c16_12x12_u8", 16, 12, 1, 32, QuantType.QUInt8, 2),
    ("c16_7x7_u8", 16, 7, 1, 32, QuantType.QUInt8, 2),
    ("dw16_12x12_u8", 16, 12, 16, 16, QuantType.QUInt8, 2),
    ("c4_12x12_s8", 4, 12, 1, 8, QuantType.QInt8, 2),
    ("c24_9x9_s8", 24, 9, 1, 24, QuantType.QInt8, 2),
]
TILES = ["gen", "wg", "reg", "gemv", "0", "legacy"]

for name, c, hw, group, c2, act, nd in CASES:
    f32 = os.path.join(TMP, name + "_f32.onnx")
    qdq = os.path.join(TMP, name + ".onnx")
    out = f32_model(f32, c, hw, group, c2, nd)
    shape = (1, 3) + (hw,) * nd
    quantize_static(f32, qdq, Reader(shape), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=act, weight_type=QuantType.QInt8)
    # the fusions (the fusion report of a GPU plan)
    rc, so, se = R.run([RLX, "run", qdq, "--device", "gpu", "--quiet", "--warmup", "0", "--iters", "0",
                        "--option", "debug.fusion_report=1"])
    n = se.count("fusion: fuse_qlinear_ew:")
    C.check(rc == 0 and n == 2, "%s: %d fuse_qlinear_ew fusions, expected 2 (rc %d) %s" % (name, n, rc, se[-300:] if rc else ""))
    feeds = {"x": rng.uniform(-1, 1, shape).astype(np.float32)}
    want, err = R.run_output(RLX, qdq, feeds, "cpu", output=out, tmp=TMP)
    C.check(want is not None, "%s: the CPU run failed: %s" % (name, err))
    if want is None:
        continue
    runs = [("gpu", ["gpu.poison=1"]), ("gpu, fuse_qlinear_ew off", ["gpu.poison=1", "passes.disable=fuse_qlinear_ew"])]
    if name == "c16_12x12_u8":
        runs += [("gpu, gpu.qgemm_tile=" + t, ["gpu.poison=1", "gpu.qgemm_tile=" + t]) for t in TILES]
    for what, opts in runs:
        y, err = R.run_output(RLX, qdq, feeds, "gpu", options=opts, tmp=TMP, output=out)
        if y is None:
            C.check(False, "%s %s: the run failed: %s" % (name, what, err))
            continue
        bad = int(np.sum(~((y == want) | (np.isnan(y) & np.isnan(want)))))
        C.check(y.shape == want.shape and bad == 0,
                "%s %s: %d of %d outputs differ from the CPU's (max |diff| %g)" %
                (name, what, bad, want.size, float(np.nanmax(np.abs(y - want))) if y.shape == want.shape else -1))

# QLinearMatMul: a QDQ MLP block with a residual (x [2, 8, 32] -> MatMul + bias
# -> Relu -> MatMul + bias -> + x): the bias Adds (a chain with one 8-bit
# input and a constant) and the residual go into the integer GEMM's stores.
def mlp_model(path):
    w1 = (rng.standard_normal((32, 48)) / np.sqrt(32)).astype(np.float32)
    w2 = (rng.standard_normal((48, 32)) / np.sqrt(48)).astype(np.float32)
    inits = [NH.from_array(w1, "w1"), NH.from_array((0.1 * rng.standard_normal(48)).astype(np.float32), "b1"),
             NH.from_array(w2, "w2"), NH.from_array((0.1 * rng.standard_normal(32)).astype(np.float32), "b2")]
    nodes = [H.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"), H.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
             H.make_node("Relu", ["a1"], ["r1"], name="relu1"), H.make_node("MatMul", ["r1", "w2"], ["m2"], name="mm2"),
             H.make_node("Add", ["m2", "b2"], ["a2"], name="bias2"), H.make_node("Add", ["a2", "x"], ["y"], name="res")]
    g = H.make_graph(nodes, "mlp", [H.make_tensor_value_info("x", T.FLOAT, [2, 8, 32])],
                     [H.make_tensor_value_info("y", T.FLOAT, [2, 8, 32])], inits)
    md = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    md.ir_version = 8
    with open(path, "wb") as f:
        f.write(md.SerializeToString())


for act in (QuantType.QUInt8, QuantType.QInt8):
    name = "mlp_" + ("u8" if act == QuantType.QUInt8 else "s8")
    f32, qdq = os.path.join(TMP, name + "_f32.onnx"), os.path.join(TMP, name + ".onnx")
    mlp_model(f32)
    quantize_static(f32, qdq, Reader((2, 8, 32)), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=act, weight_type=QuantType.QInt8)
    rc, so, se = R.run([RLX, "run", qdq, "--device", "gpu", "--quiet", "--warmup", "0", "--iters", "0",
                        "--option", "debug.fusion_report=1"])
    n = se.count("fusion: fuse_qlinear_ew:")
    C.check(rc == 0 and n >= 1 and "QLinearMatMul" in se.split("fusion: fuse_qlinear_ew:")[-1],
            "%s: %d fuse_qlinear_ew fusions of a QLinearMatMul (rc %d) %s" % (name, n, rc, se[-300:] if rc else ""))
    feeds = {"x": rng.uniform(-1, 1, (2, 8, 32)).astype(np.float32)}
    want, err = R.run_output(RLX, qdq, feeds, "cpu", tmp=TMP)
    for what, opts in (("gpu", ["gpu.poison=1"]), ("gpu, fuse_qlinear_ew off", ["gpu.poison=1", "passes.disable=fuse_qlinear_ew"])):
        y, err2 = R.run_output(RLX, qdq, feeds, "gpu", options=opts, tmp=TMP)
        C.check(want is not None and y is not None and np.array_equal(y, want),
                "%s %s: differs from the CPU plan: %s%s%s" % (name, what, err, err2, "" if want is None or y is None else
                                                              " %d of %d" % (int((y != want).sum()), want.size)))

# A chain input of higher rank than the product ([5, 12] + a [1, 1, 12] bias:
# the chain's output is [1, 5, 12]) is left apart: the model runs, as the
# pass off and the CPU (the fresh tester's finding: the GPU plan was refused,
# "QDQ chain input 1 does not broadcast to the product's output").
w = (rng.standard_normal((16, 12)) / 4).astype(np.float32)
w2 = (rng.standard_normal((12, 8)) / 4).astype(np.float32)
nodes = [H.make_node("MatMul", ["x", "w"], ["m"], name="mm"), H.make_node("Add", ["m", "b"], ["a"], name="bias"),
         H.make_node("Relu", ["a"], ["r"], name="relu"), H.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")]
g = H.make_graph(nodes, "rankup", [H.make_tensor_value_info("x", T.FLOAT, [5, 16])],
                 [H.make_tensor_value_info("y", T.FLOAT, [1, 5, 8])],
                 [NH.from_array(w, "w"), NH.from_array(w2, "w2"),
                  NH.from_array((0.1 * rng.standard_normal((1, 1, 12))).astype(np.float32), "b")])
md = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
md.ir_version = 8
f32r, qdqr = os.path.join(TMP, "rankup_f32.onnx"), os.path.join(TMP, "rankup.onnx")
with open(f32r, "wb") as f:
    f.write(md.SerializeToString())
quantize_static(f32r, qdqr, Reader((5, 16)), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
feeds = {"x": rng.uniform(-1, 1, (5, 16)).astype(np.float32)}
want, err = R.run_output(RLX, qdqr, feeds, "cpu", tmp=TMP)
y, err2 = R.run_output(RLX, qdqr, feeds, "gpu", options=["gpu.poison=1"], tmp=TMP)
C.check(want is not None and y is not None and np.array_equal(y, want),
        "a [1, 1, 12] bias after a [5, 12] QLinearMatMul: %s%s" % (err, err2))

# A QLinearConv of the file with a QDQ residual after it (hand-made):
# - 3-D: the GPU declines the fused node, and the CPU runs it (the
#   convolution, then the chain: cpu_quant.c) within the GPU plan;
# - 2-D with an int8 chain output after the uint8 convolution: the GPU runs
#   it (the convolution's own type is y_zero_point's, not the output's).
u8, i8, i32 = np.uint8, np.int8, np.int32


def hand_model(path, nd, out_t):
    shape = [1, 4] + [3, 5, 5][3 - nd:]
    oz = np.array(3, u8) if out_t == T.UINT8 else np.array(-5, i8)
    inits = [NH.from_array(np.array(0.02, np.float32), "xs"), NH.from_array(np.array(7, u8), "xz"),
             NH.from_array(rng.integers(-127, 128, (4, 4) + (3,) * nd).astype(i8), "w"),
             NH.from_array(rng.uniform(0.001, 0.01, 4).astype(np.float32), "ws"), NH.from_array(np.zeros(4, i8), "wz"),
             NH.from_array(np.array(0.05, np.float32), "ys"), NH.from_array(np.array(120, u8), "yz"),
             NH.from_array(rng.integers(-500, 500, 4).astype(i32), "b"),
             NH.from_array(np.array(0.04, np.float32), "ss"), NH.from_array(np.array(128, u8), "sz"),
             NH.from_array(np.array(0.07, np.float32), "os"), NH.from_array(oz, "oz")]
    nodes = [H.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1] * (2 * nd),
                         name="qc"),
             H.make_node("DequantizeLinear", ["y", "ys", "yz"], ["fy"], name="dqy"),
             H.make_node("DequantizeLinear", ["s", "ss", "sz"], ["fs"], name="dqs"),
             H.make_node("Add", ["fy", "fs"], ["t"], name="add"),
             H.make_node("QuantizeLinear", ["t", "os", "oz"], ["o"], name="q")]
    g = H.make_graph(nodes, "qc", [H.make_tensor_value_info("x", T.UINT8, shape), H.make_tensor_value_info("s", T.UINT8, shape)],
                     [H.make_tensor_value_info("o", out_t, shape)], inits)
    md = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    md.ir_version = 8
    with open(path, "wb") as f:
        f.write(md.SerializeToString())
    return shape


for what, nd, out_t, on_gpu in (("3-D", 3, T.UINT8, False), ("2-D, int8 output", 2, T.INT8, True)):
    path = os.path.join(TMP, "hand_%dd_%d.onnx" % (nd, out_t))
    shape = hand_model(path, nd, out_t)
    rc, so, se = R.run([RLX, "run", path, "--device", "gpu", "--quiet", "--warmup", "0", "--iters", "0",
                        "--option", "debug.fusion_report=1", "--option", "debug.dispatch_report=1"])
    row = [ln.split() for ln in se.splitlines() if ln.split()[:1] == ["QLinearConv"]]
    fallback = int(row[0][3]) if row and len(row[0]) > 3 else -1  # op, nodes, native, fallback
    C.check(rc == 0 and se.count("fusion: fuse_qlinear_ew:") == 1 and fallback == (0 if on_gpu else 1),
            "%s: fused %d times, the QLinearConv %s on the CPU (rc %d) %s" %
            (what, se.count("fusion: fuse_qlinear_ew:"), "ran" if fallback > 0 else "did not run", rc, se[-400:]))
    feeds = {"x": rng.integers(0, 256, shape).astype(u8), "s": rng.integers(0, 256, shape).astype(u8)}
    want, err = R.run_output(RLX, path, feeds, "cpu", output="o", tmp=TMP)
    y, err2 = R.run_output(RLX, path, feeds, "gpu", options=["gpu.poison=1"], tmp=TMP, output="o")
    C.check(want is not None and y is not None and np.array_equal(y, want),
            "%s: the GPU plan differs from the CPU plan: %s%s%s" %
            (what, "" if want is not None else err, "" if y is not None else err2,
             "" if want is None or y is None else " %d bytes" % int((y != want).sum())))

C.done()
