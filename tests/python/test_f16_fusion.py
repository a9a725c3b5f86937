"""fp16 models fuse on the GPU as their f32 form does (issue 12): the
epilogue fusions (Conv + BatchNormalization folded, Conv + Clip, depthwise
Conv + Clip, Conv + residual Add, MatMul + bias + GELU, Add +
LayerNormalization, attention) take f16 values on GPU plans.

Models built here with onnx.helper (random non-zero weights and inputs),
converted with onnxruntime's float16 converter (keep_io_types: f32 edges,
one Cast in and one out):
 - a MobileNetV2-like net: Conv+BN+Clip stem, two inverted-residual blocks
   (1x1 expand + BN + Clip, depthwise 3x3 + BN + Clip, 1x1 project + BN,
   residual Add), GlobalAveragePool, Gemm;
 - a BERT-like layer: Q/K/V MatMul + bias, multi-head attention with an
   additive mask, output MatMul + bias, Add + LayerNormalization, MatMul +
   bias + GELU (erf form), MatMul + bias, Add + LayerNormalization.
Checked, on the GPU (lavapipe here):
 - the fp16 plan has the f32 plan's nodes (the dispatch report's native +
   fallback counts, the edge Casts, one per f32 graph input and output, aside) and nothing on the CPU;
 - its outputs are finite and within tolerance of the f32 model on
   onnxruntime: normwise relative error below 4e-3 and below 3x that of
   onnxruntime running the same fp16 model (plus 5e-4), within 4e-3 of
   rlx's CPU plan of the fp16 model (computed in f32, widen_f16) and
   within 1e-3 of the CPU plan with the GPU's policy (widen_f16 off: the
   same fused nodes, one rounding each; seen: 0 and 2e-4);
 - a mixed plan (gpu.disable=Conv,MatMul,rlx.AddLayerNormalization: the
   fused f16 nodes on the CPU) gives the same results within 2e-3.
Outputs come back as new arrays (the bindings allocate them); each is
checked to be finite. Skips (exit 77) while rlx is not built, without
onnxruntime's converter, or when the GPU has no shader-f16."""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as NH
    from onnxruntime.transformers import float16
except ImportError as e:
    R.skip(e)
if not any(a.get("shader_f16") for a in rlx.adapters()):
    R.skip("no GPU adapter with shader-f16: f16 nodes run on the CPU by design")
C = R.Checker("test_f16_fusion")
rng = R.seeded_rng(11)


def nz(*shape, scale=1.0):
    """Random values in +-[0.1, 1] * scale (no zeros)."""
    v = rng.uniform(0.1, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
    return (v * scale).astype(np.float32)


class Net:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, what):
        self.n += 1
        return "%s_%d" % (what, self.n)

    def const(self, arr, what="c"):
        nm = self.name(what)
        self.inits.append(NH.from_array(np.asarray(arr), nm))
        return nm

    def op(self, op, ins, **attrs):
        out = self.name(op.lower())
        self.nodes.append(H.make_node(op, ins, [out], name="n_" + out, **attrs))
        return out

    def conv(self, x, cin, cout, k, group=1, bn=True):
        w = nz(cout, cin // group, k, k, scale=(2.0 / (cin // group * k * k)) ** 0.5)
        y = self.op("Conv", [x, self.const(w, "w")], pads=[k // 2] * 4, group=group)
        if bn:
            y = self.op("BatchNormalization", [y, self.const(rng.uniform(0.5, 1.5, cout).astype(np.float32)),
                                               self.const(nz(cout, scale=0.1)), self.const(nz(cout, scale=0.1)),
                                               self.const(rng.uniform(0.5, 2.0, cout).astype(np.float32))])
        return y

    def clip(self, x):
        return self.op("Clip", [x, self.const(np.float32(0)), self.const(np.float32(6))])

    def linear(self, x, k, n):
        y = self.op("MatMul", [x, self.const(nz(k, n, scale=k ** -0.5), "w")])
        return self.op("Add", [y, self.const(nz(n, scale=0.1), "b")])

    def layernorm(self, x, h):
        return self.op("LayerNormalization", [x, self.const(rng.uniform(0.5, 1.5, h).astype(np.float32)),
                                              self.const(nz(h, scale=0.1))], axis=-1, epsilon=1e-5)

    def model(self, x_shape, outs, opset=17):
        g = H.make_graph(self.nodes, "net", [H.make_tensor_value_info("x", T.FLOAT, x_shape)],
                         [H.make_tensor_value_info(y, T.FLOAT, shape) for y, shape in outs], self.inits)
        return H.make_model(g, opset_imports=[H.make_opsetid("", opset)], ir_version=8)


def mobilenet_like():
    b = Net()
    y = b.clip(b.conv("x", 4, 16, 3))
    for _ in range(2):
        h = b.clip(b.conv(y, 16, 32, 1))
        h = b.clip(b.conv(h, 32, 32, 3, group=32))
        y = b.op("Add", [b.conv(h, 32, 16, 1), y])
    p = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    p = b.op("Gemm", [p, b.const(nz(10, 16, scale=0.25)), b.const(nz(10, scale=0.1))], transB=1)
    return b.model([1, 4, 12, 12], [(p, [1, 10]), (y, [1, 16, 12, 12])]), [1, 4, 12, 12]


def bert_like():
    S, Hd, NH_, D = 8, 32, 2, 16
    b = Net()
    shape4 = b.const(np.array([1, S, NH_, D], np.int64), "s4")

    def heads(t, perm):
        return b.op("Transpose", [b.op("Reshape", [t, shape4])], perm=perm)

    q = heads(b.linear("x", Hd, Hd), [0, 2, 1, 3])
    k = heads(b.linear("x", Hd, Hd), [0, 2, 3, 1])
    v = heads(b.linear("x", Hd, Hd), [0, 2, 1, 3])
    mask = np.zeros((1, 1, 1, S), np.float32)
    mask[..., 6:] = -10000.0
    sc = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.float32(D ** 0.5))])
    pr = b.op("Softmax", [b.op("Add", [sc, b.const(mask, "mask")])], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [pr, v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(np.array([1, S, Hd], np.int64), "s3")])
    a = b.layernorm(b.op("Add", [b.linear(ctx, Hd, Hd), "x"]), Hd)
    h = b.linear(a, Hd, 4 * Hd)
    erf = b.op("Erf", [b.op("Div", [h, b.const(np.float32(2 ** 0.5))])])
    g = b.op("Mul", [b.op("Mul", [h, b.const(np.float32(0.5))]), b.op("Add", [erf, b.const(np.float32(1))])])
    y = b.layernorm(b.op("Add", [b.linear(g, 4 * Hd, Hd), a]), Hd)
    return b.model([1, S, Hd], [(y, [1, S, Hd])]), [1, S, Hd]


def plan_nodes(report):
    """{op: native + fallback} and the fallback count from a dispatch report."""
    nodes, fallback = {}, 0
    for r in (ln.split() for ln in report.splitlines()):
        if len(r) == 6 and all(c.isdigit() for c in r[1:]):
            if int(r[2]) + int(r[3]):
                nodes[r[0]] = int(r[2]) + int(r[3])
            fallback += int(r[3])
    return nodes, fallback


def rel(a, ref):
    """The largest normwise relative error over the outputs."""
    return max(float(np.linalg.norm(np.asarray(u, np.float64) - np.asarray(r, np.float64)) /
                     np.linalg.norm(np.asarray(r, np.float64))) for u, r in zip(a, ref))


def run(path, x, device, options=None):
    t0 = time.time()
    s = rlx.Session(rlx.Model(path), device=device, options=options)
    y = s.run({"x": x})
    print("  %s on %s %s: %.1f s" % (os.path.basename(path), device, options or "", time.time() - t0))
    return y, s.dispatch_report


tmp = tempfile.mkdtemp(prefix="rlx_f16_fusion_")
for label, make in [("mobilenet", mobilenet_like), ("bert", bert_like)]:
    m32, xs = make()
    p32, p16 = os.path.join(tmp, label + ".onnx"), os.path.join(tmp, label + "16.onnx")
    onnx.save(m32, p32)
    onnx.save(float16.convert_float_to_float16(m32, keep_io_types=True), p16)
    x = nz(*xs)
    ref = ort.InferenceSession(p32, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    o16 = ort.InferenceSession(p16, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    e_ort = rel(o16, ref)
    y32, rep32 = run(p32, x, "gpu")
    y16, rep16 = run(p16, x, "gpu")
    c16, _ = run(p16, x, "cpu")
    cw, _ = run(p16, x, "cpu", {"passes.disable": "widen_f16"})
    ym, repm = run(p16, x, "gpu", {"gpu.disable": "Conv,MatMul,AddLayerNormalization"})
    n32, f32_fb = plan_nodes(rep32)
    n16, f16_fb = plan_nodes(rep16)
    casts = n16.pop("Cast", 0) - n32.pop("Cast", 0)
    print("%s: f32 plan %s\n%s: f16 plan %s (+%d Casts)" % (label, n32, label, n16, casts))
    C.check(n16 == n32 and casts == 1 + len(ref), "%s: the fp16 GPU plan's nodes differ from the f32 plan's" % label)
    C.check(f16_fb == 0, "%s: %d f16 nodes ran on the CPU:\n%s" % (label, f16_fb, rep16))
    C.check(plan_nodes(repm)[1] > 0, "%s: the mixed plan has no CPU node:\n%s" % (label, repm))
    e, ec, ew, em = rel(y16, ref), rel(y16, c16), rel(y16, cw), rel(ym, y16)
    print("%s: rlx gpu fp16 vs f32 %.3g (onnxruntime fp16 %.3g), vs rlx cpu fp16 %.3g (widen_f16 off: %.3g), "
          "mixed vs gpu %.3g, rlx gpu f32 vs f32 %.3g" % (label, e, e_ort, ec, ew, em, rel(y32, ref)))
    for nm, y in [("gpu", y16), ("cpu", c16), ("cpu widen_f16 off", cw), ("mixed", ym)]:
        C.check(len(y) == len(ref) and all(np.isfinite(u).all() and u.shape == r.shape for u, r in zip(y, ref)),
                "%s: %s outputs not finite or misshapen" % (label, nm))
    C.check(e < 4e-3 and e < 3 * e_ort + 5e-4, "%s: gpu fp16 error %.3g (onnxruntime %.3g)" % (label, e, e_ort))
    C.check(ec < 4e-3, "%s: gpu vs cpu fp16 %.3g" % (label, ec))
    C.check(ew < 1e-3, "%s: gpu vs cpu fp16 with the gpu's rounding policy %.3g" % (label, ew))
    C.check(em < 2e-3, "%s: mixed plan vs gpu %.3g" % (label, em))
C.done()
