#!/usr/bin/env python3
"""Writes the quantized models of the int8 benchmarks (issue 12) with
onnxruntime's quantization tools, from seeded random data (no download):

  OUT/ppocrv4_det_qdq.onnx   models/ppocrv4_det.onnx (its Constant weights made
                             initializers: OUT/ppocrv4_det_init.onnx) through quantize_static:
                             QDQ format, int8 per-channel weights (symmetric),
                             uint8 activations, MinMax calibration on
                             data/page.png (and its mirror) and --calib
                             deterministic random images of --shape
  OUT/ppocrv4_det_qop.onnx   the same through QOperator format (QLinearConv,
                             QLinearAdd, ...: the integer ops themselves)
  OUT/mlp_dyn.onnx           a 4-layer MLP (MatMul + Add + Relu, hidden
                             --hidden) through quantize_dynamic: MatMulInteger
                             + DynamicQuantizeLinear (uint8 activations, int8
                             weights), the pattern of a quantize_dynamic BERT
  OUT/mlp_f32.onnx           that MLP before quantization
  OUT/x_<shape>.npy          a random input (seed 1)
  OUT/x_page.npy             the page as the demo feeds it, [1, 3, 192, 384]

    bench/make_quant_models.py [--out build/quant] [--shape 1x3x256x256]
                               [--calib 4] [--hidden 256]
                               [--model models/ppocrv4_det.onnx] [--page data/page.png]

Then, e.g.:
    build/rlx bench build/quant/ppocrv4_det_qdq.onnx --device gpu --input x=build/quant/x_1x3x256x256.npy
    bench/ort_time.py build/quant/ppocrv4_det_qdq.onnx x=build/quant/x_1x3x256x256.npy
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def page_input(path=os.path.join(ROOT, "data", "page.png")):
    """The page (data/page.png) as the OCR demo feeds it (tests/python/ocr_ref.py:
    grey to RGB, longest side 384, ImageNet mean/std), [1, 3, 192, 384]."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import ocr_ref as R
    img = R.png_read_file(path)
    rgb = np.repeat(img[..., :1], 3, axis=2).astype(np.uint8) if img.shape[2] < 3 else img[..., :3]
    return R.preprocess(rgb, limit=384)


class Reader(CalibrationDataReader):
    """Calibration data: the page and its mirror image (when page is not
    None), and n deterministic random images of `shape` in the demo's
    normalised range [-1, 1)."""

    def __init__(self, name, shape, n, page=None):
        rng = np.random.default_rng(0)
        self.items = [] if page is None else [{name: page}, {name: np.ascontiguousarray(page[..., ::-1])}]
        for _ in range(n):
            x = rng.random(shape, dtype=np.float32)
            self.items.append({name: ((x - 0.5) / 0.5).astype(np.float32)})
        self.it = iter(self.items)

    def get_next(self):
        return next(self.it, None)


def constants_to_initializers(src, dst):
    """Writes src (an ONNX file) to dst with its Constant nodes' tensors and
    the outputs of Identity nodes of initializers as initializers, and its
    default-domain opset at least 13.

    The Paddle export of PP-OCRv4 holds its weights in Constant nodes, which
    the quantizer would treat as activations (Q -> DQ per tensor); most
    exporters write initializers. torch's exporter writes some of
    ResNet-50's conv biases as Identity nodes of another initializer (equal
    tensors shared), which quantize_static leaves in f32 ("Expected bias
    ... to be an initializer"), and the Conv with them. Per-axis
    DequantizeLinear needs opset 13; the model's ops (Conv, Clip, Resize,
    ...) mean the same at 13."""
    m = onnx.load(src)
    keep = []
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            m.graph.initializer.append(t)
            inits[t.name] = t
        elif n.op_type == "Identity" and n.input[0] in inits:
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = n.output[0]
            m.graph.initializer.append(t)
            inits[t.name] = t
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 13)
    onnx.save(m, dst)


def quantize_qdq(src, dst, reader):
    """quantize_static in the QDQ format: int8 per-channel (symmetric)
    weights, uint8 activations, MinMax calibration on reader's items."""
    quantize_static(src, dst, reader, quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def make_mlp(path, hidden, layers=4, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur = "x"
    for i in range(layers):
        w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
        b = (0.1 * rng.standard_normal(hidden)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        cur = f"a{i}"
        if i + 1 < layers:
            nodes.append(helper.make_node("Relu", [cur], [f"r{i}"]))
            cur = f"r{i}"
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64, hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64, hidden])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "quant"))
    ap.add_argument("--shape", default="1x3x256x256")
    ap.add_argument("--calib", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "ppocrv4_det.onnx"), help="the f32 PP-OCRv4 det")
    ap.add_argument("--page", default=os.path.join(ROOT, "data", "page.png"), help="the demo page (calibration)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shape = tuple(int(s) for s in a.shape.split("x"))

    src = os.path.join(a.out, "ppocrv4_det_init.onnx")
    constants_to_initializers(a.model, src)
    qdq = os.path.join(a.out, "ppocrv4_det_qdq.onnx")
    page = page_input(a.page)
    np.save(os.path.join(a.out, "x_page.npy"), page)
    quantize_qdq(src, qdq, Reader("x", shape, a.calib, page))
    quantize_static(src, os.path.join(a.out, "ppocrv4_det_qop.onnx"), Reader("x", shape, a.calib, page),
                    quant_format=QuantFormat.QOperator, per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    x = np.random.default_rng(1).random(shape, dtype=np.float32)
    np.save(os.path.join(a.out, f"x_{a.shape}.npy"), ((x - 0.5) / 0.5).astype(np.float32))

    f32 = os.path.join(a.out, "mlp_f32.onnx")
    make_mlp(f32, a.hidden)
    quantize_dynamic(f32, os.path.join(a.out, "mlp_dyn.onnx"), weight_type=QuantType.QInt8)
    xm = np.random.default_rng(2).standard_normal((1, 64, a.hidden)).astype(np.float32)
    np.save(os.path.join(a.out, f"xm_1x64x{a.hidden}.npy"), xm)

    for p in (qdq, os.path.join(a.out, "ppocrv4_det_qop.onnx"), os.path.join(a.out, "mlp_dyn.onnx")):
        m = onnx.load(p)
        from collections import Counter
        c = Counter(n.op_type for n in m.graph.node)
        print(os.path.basename(p), dict(sorted(c.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
