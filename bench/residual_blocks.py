#!/usr/bin/env python3
"""Dispatch counts of CNN residual blocks with and without the residual
fusion (passes/fuse_conv_residual.c).

  .venv/bin/python bench/residual_blocks.py [--device gpu] [--rlx build/rlx]
      [--out DIR] [MODEL.onnx --shape NAME=DIMS ...]

Writes two models shaped like torchvision's blocks (random weights, batch 1,
BatchNormalization after every conv, which fold_conv_affine folds into it):
  resnet_blocks.onnx     two ResNet-50 bottlenecks at 56x56, the first with
                         the 1x1 stride-1 downsample branch (conv + BN), the
                         second with the identity: Add then Relu
  mobilenet_blocks.onnx  two MobileNetV2 inverted residuals at 28x28 (expand
                         6, ReLU6 as Clip(0, 6), depthwise 3x3), the second
                         with the identity residual Add
  resnet50_like.onnx     the whole ResNet-50 (torchvision v1.5), 1x3x224x224
  mobilenetv2_like.onnx  the whole MobileNetV2 (torchvision), 1x3x224x224
then runs `rlx bench --device DEV --warmup 0 --iters 1 --gpu-iters 0` on
each (and on any MODEL.onnx given, e.g. models/ppocrv4_det.onnx) with
RLX_DISABLE_PASSES=fuse_conv_residual and without, and prints the "plan: N
dispatches" of both. On the device, `--gpu-iters 20` and a larger
--iters give the time per forward too.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return "%s%d" % (p, self.n)

    def const(self, arr):
        nm = self.name("c")
        self.inits.append(numpy_helper.from_array(arr.astype(np.float32), nm))
        return nm

    def conv_bn(self, x, cin, cout, k, stride=1, group=1):
        w = self.const(self.rng.uniform(-1, 1, (cout, cin // group, k, k)) / np.sqrt(cin // group * k * k))
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, w], [y], name=y, kernel_shape=[k, k], strides=[stride, stride],
                                           pads=[k // 2] * 4, group=group))
        bn = [self.const(self.rng.uniform(0.5, 1.5, cout)), self.const(self.rng.uniform(-0.1, 0.1, cout)),
              self.const(self.rng.uniform(-0.1, 0.1, cout)), self.const(self.rng.uniform(0.5, 1.5, cout))]
        z = self.name("bn")
        self.nodes.append(helper.make_node("BatchNormalization", [y] + bn, [z], name=z, epsilon=1e-5))
        return z

    def op(self, op, ins, **attrs):
        y = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [y], name=y, **attrs))
        return y

    def model(self, x_shape, x, y, y_shape):
        g = helper.make_graph(self.nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def resnet_blocks():
    b = Builder(1)
    x, c = "x", 64
    for i in range(2):
        mid, cout = 64, 256
        t = b.op("Relu", [b.conv_bn(x, c, mid, 1)])
        t = b.op("Relu", [b.conv_bn(t, mid, mid, 3)])
        t = b.conv_bn(t, mid, cout, 1)
        sc = b.conv_bn(x, c, cout, 1) if i == 0 else x  # the downsample branch
        x = b.op("Relu", [b.op("Add", [t, sc])])
        c = cout
    return b.model([1, 64, 56, 56], "x", x, [1, 256, 56, 56])


def mobilenet_blocks():
    b = Builder(2)
    lo, hi = b.const(np.array(0.0)), b.const(np.array(6.0))
    x, c = "x", 24
    for i in range(2):
        e = c * 6
        t = b.op("Clip", [b.conv_bn(x, c, e, 1), lo, hi])
        t = b.op("Clip", [b.conv_bn(t, e, e, 3, group=e), lo, hi])
        t = b.conv_bn(t, e, 24, 1)
        x = b.op("Add", [x, t]) if i == 1 else t  # the first block changes nothing in shape but has no residual
        c = 24
    return b.model([1, 24, 28, 28], "x", x, [1, 24, 28, 28])


def resnet50():
    """torchvision's ResNet-50 (v1.5: stride in the 3x3 conv), random weights."""
    b = Builder(3)
    t = b.op("Relu", [b.conv_bn("x", 3, 64, 7, stride=2)])
    x = b.op("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for li, (mid, n) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        for i in range(n):
            s = 2 if (i == 0 and li > 0) else 1
            t = b.op("Relu", [b.conv_bn(x, c, mid, 1)])
            t = b.op("Relu", [b.conv_bn(t, mid, mid, 3, stride=s)])
            t = b.conv_bn(t, mid, mid * 4, 1)
            sc = b.conv_bn(x, c, mid * 4, 1, stride=s) if i == 0 else x
            x = b.op("Relu", [b.op("Add", [t, sc])])
            c = mid * 4
    return b.model([1, 3, 224, 224], "x", head(b, x, c), [1, 1000])


def mobilenetv2():
    """torchvision's MobileNetV2 (width 1.0), random weights."""
    b = Builder(4)
    lo, hi = b.const(np.array(0.0)), b.const(np.array(6.0))
    x = b.op("Clip", [b.conv_bn("x", 3, 32, 3, stride=2), lo, hi])
    c = 32
    for t_, cout, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                           (6, 320, 1, 1)):
        for i in range(n):
            st = s if i == 0 else 1
            e = c * t_
            t = x if t_ == 1 else b.op("Clip", [b.conv_bn(x, c, e, 1), lo, hi])
            t = b.op("Clip", [b.conv_bn(t, e, e, 3, stride=st, group=e), lo, hi])
            t = b.conv_bn(t, e, cout, 1)
            x = b.op("Add", [x, t]) if st == 1 and c == cout else t
            c = cout
    x = b.op("Clip", [b.conv_bn(x, c, 1280, 1), lo, hi])
    return b.model([1, 3, 224, 224], "x", head(b, x, 1280), [1, 1000])


def head(b, x, c):
    p = b.op("GlobalAveragePool", [x])
    f = b.op("Flatten", [p], axis=1)
    w, bias = b.const(b.rng.uniform(-1, 1, (1000, c)) / np.sqrt(c)), b.const(b.rng.uniform(-0.1, 0.1, 1000))
    return b.op("Gemm", [f, w, bias], transB=1)


def dispatches(rlx, model, device, shapes, off):
    env = dict(os.environ)
    env.pop("RLX_DISABLE_PASSES", None)
    if off:
        env["RLX_DISABLE_PASSES"] = "fuse_conv_residual"
    cmd = [rlx, "bench", model, "--device", device, "--warmup", "0", "--iters", "1", "--gpu-iters", "0"]
    for s in shapes:
        cmd += ["--shape", s]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("residual_blocks: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    m = re.search(r"plan: (\d+) dispatches", p.stdout)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--shape", action="append", default=[])
    a = ap.parse_args()
    paths = []
    for name, fn in (("resnet_blocks.onnx", resnet_blocks), ("mobilenet_blocks.onnx", mobilenet_blocks),
                     ("resnet50_like.onnx", resnet50), ("mobilenetv2_like.onnx", mobilenetv2)):
        p = os.path.join(a.out, name)
        onnx.save(fn(), p)
        paths.append((p, []))
    paths += [(m, a.shape) for m in a.models]
    print("| model | dispatches, residual fusion off | on |")
    print("|---|---|---|")
    for p, shapes in paths:
        off = dispatches(a.rlx, p, a.device, shapes, True)
        on = dispatches(a.rlx, p, a.device, shapes, False)
        print("| %s | %s | %s |" % (os.path.basename(p), off, on))


if __name__ == "__main__":
    main()
