#!/usr/bin/env python3
"""Writes a MobileNetV2 (the architecture of Sandler et al. 2018, width 1.0,
as torchvision exports it after batch-norm folding: Conv with bias, Clip(0, 6),
residual Add, GlobalAveragePool, Flatten, Gemm) with random weights, using
numpy and onnx only (no torch needed). Input "input" [1, 3, 224, 224] (batch
dim symbolic "N"), output "output" [N, 1000], opset 17.

    python3 bench/make_mobilenet_v2.py OUT.onnx [--seed 0]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (expansion t, output channels c, repeats n, first stride s)
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, arr, base):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32), n))
        return n

    def conv(self, x, cin, cout, k, stride, group, relu6):
        fan_in = cin // group * k * k
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        b = self.rng.normal(0.0, 0.05, (cout,))
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, self.const(w, "w"), self.const(b, "b")], [y],
                                           kernel_shape=[k, k], strides=[stride, stride], group=group,
                                           pads=[k // 2] * 4, name=y))
        if not relu6:
            return y
        z = self.name("clip")
        self.nodes.append(helper.make_node("Clip", [y, self.lo, self.hi], [z], name=z))
        return z


def build(seed):
    b = Builder(seed)
    b.lo = b.const(np.array(0.0), "lo")
    b.hi = b.const(np.array(6.0), "hi")
    x = b.conv("input", 3, 32, 3, 2, 1, True)
    cin = 32
    for t, c, n, s in BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            hid = cin * t
            y = x if t == 1 else b.conv(x, cin, hid, 1, 1, 1, True)
            y = b.conv(y, hid, hid, 3, stride, hid, True)
            y = b.conv(y, hid, c, 1, 1, 1, False)
            if stride == 1 and cin == c:
                z = b.name("add")
                b.nodes.append(helper.make_node("Add", [x, y], [z], name=z))
                y = z
            x, cin = y, c
    x = b.conv(x, cin, 1280, 1, 1, 1, True)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1, name="flat"))
    fc_w = b.const(b.rng.normal(0.0, 0.01, (1000, 1280)), "fc_w")
    fc_b = b.const(np.zeros(1000), "fc_b")
    b.nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["output"], transB=1, name="fc"))
    graph = helper.make_graph(b.nodes, "mobilenet_v2",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 1000])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    onnx.save(build(a.seed), a.out)


if __name__ == "__main__":
    main()
