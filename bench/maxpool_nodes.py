#!/usr/bin/env python3
"""One-node MaxPool models of the CNNs' shapes (SqueezeNet, Inception,
ResNet), timed by `rlx bench` of several builds, interleaved: the median
wall time of 200 runs after 20, 1 thread, the minimum of those medians
over ROUNDS rounds (default 5), in µs.

usage: bench/maxpool_nodes.py LABEL=BUILD_DIR [LABEL=BUILD_DIR ...]
(each BUILD_DIR holds an `rlx` binary; models are written to $TMPDIR)"""
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto as T
from onnx import helper as H

SHAPES = [("SqueezeNet 64x111x111 3x3 s2", (1, 64, 111, 111), [3, 3], [2, 2], [0, 0, 0, 0]),
          ("SqueezeNet 128x55x55 3x3 s2", (1, 128, 55, 55), [3, 3], [2, 2], [0, 0, 0, 0]),
          ("SqueezeNet 256x27x27 3x3 s2", (1, 256, 27, 27), [3, 3], [2, 2], [0, 0, 0, 0]),
          ("Inception 192x56x56 3x3 s2 end pad", (1, 192, 56, 56), [3, 3], [2, 2], [0, 0, 1, 1]),
          ("Inception 512x13x13 3x3 s1 p1", (1, 512, 13, 13), [3, 3], [1, 1], [1, 1, 1, 1]),
          ("1024x7x7 3x3 s1 p1", (1, 1024, 7, 7), [3, 3], [1, 1], [1, 1, 1, 1]),
          ("ResNet 64x112x112 3x3 s2 p1", (1, 64, 112, 112), [3, 3], [2, 2], [1, 1, 1, 1])]


def main():
    builds = [a.split("=", 1) for a in sys.argv[1:]]
    if not builds:
        sys.exit(__doc__)
    tmp = tempfile.mkdtemp(prefix="rlx_maxpool_")
    paths = []
    for name, shape, k, s, p in SHAPES:
        g = H.make_graph([H.make_node("MaxPool", ["x"], ["y"], kernel_shape=k, strides=s, pads=p)], "g",
                         [H.make_tensor_value_info("x", T.FLOAT, list(shape))],
                         [H.make_tensor_value_info("y", T.FLOAT, None)])
        m = H.make_model(g, opset_imports=[H.make_opsetid("", 18)])
        m.ir_version = 8
        paths.append(os.path.join(tmp, "pool%d.onnx" % len(paths)))
        onnx.save(m, paths[-1])
    res = {}
    for _ in range(int(os.environ.get("ROUNDS", "5"))):
        for i, path in enumerate(paths):
            for label, build in builds:
                out = subprocess.run([os.path.join(build, "rlx"), "bench", path, "--json", "--quiet", "--iters", "200",
                                      "--warmup", "20"], capture_output=True, text=True, check=True,
                                     env=dict(os.environ, RLX_NUM_THREADS="1"))
                res.setdefault((i, label), []).append(json.loads(out.stdout)["wall_ms"]["median"])
    for i, (name, *_) in enumerate(SHAPES):
        print("%-36s " % name + "  ".join("%s %.1f" % (label, 1000 * min(res[(i, label)])) for label, _ in builds))


if __name__ == "__main__":
    main()
