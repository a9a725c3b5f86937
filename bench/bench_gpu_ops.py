#!/usr/bin/env python3
"""Time single ops on the GPU: each op's WGSL kernel against the same node
sent to the CPU fallback (RLX_GPU_DISABLE=<op>), at sizes real models use.

  .venv/bin/python bench/bench_gpu_ops.py [--device gpu --iters 50 --warmup 5
      --only LayerNorm,Softmax --small]

For each case a one-node ONNX model (inputs random, parameters constant) is
written to a temporary folder and run with `rlx run MODEL --device DEV
--iters N`; the line printed per case gives the median of the steady runs
with the GPU kernel, with the CPU fallback (including its transfers), and
their ratio, and checks in the dispatch report that the node ran natively.
--small shrinks every case 16-fold in one dim (for lavapipe).
The timings are whole forward passes (upload of the inputs, dispatch, one
read-back), so small cases measure mostly the fixed cost of a run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cases(small):
    """(name, op, opset, input shapes, constant inputs {index: array}, attributes, output count)"""
    def s(dims, k=0):
        """dims, or with dim k cut 16-fold under --small"""
        if not small:
            return dims
        return [d if i != k else max(1, d // 16) for i, d in enumerate(dims)]

    r = np.random.default_rng(0)
    f = lambda *d: r.uniform(0.5, 1.5, d).astype(np.float32)  # noqa: E731
    out = [
        ("LayerNorm 64x512x768", "LayerNormalization", 17, [s([64, 512, 768])], {1: f(768), 2: f(768)},
         {"axis": -1}, 1),
        ("Softmax 16x12x512x512", "Softmax", 13, [s([16, 12, 512, 512])], {}, {"axis": -1}, 1),
        ("Softmax axis 1 8x1000x4096", "Softmax", 13, [s([8, 1000, 4096])], {}, {"axis": 1}, 1),
        ("ReduceMean rows 32x512x4096", "ReduceMean", 13, [s([32, 512, 4096])], {}, {"axes": [-1]}, 1),
        ("ReduceSum axis 1 64x1024x256", "ReduceSum", 13, [s([64, 1024, 256])], {1: np.array([1], np.int64)},
         {}, 1),
        ("ReduceMax all 4x1024x1024", "ReduceMax", 13, [s([4, 1024, 1024])], {}, {"keepdims": 0}, 1),
        ("ArgMax 256x32000", "ArgMax", 13, [s([256, 32000])], {}, {"axis": -1}, 1),
        ("GroupNorm 2x320x64x64 g32", "GroupNormalization", 21, [s([2, 320, 64, 64], 2)], {1: f(320), 2: f(320)},
         {"num_groups": 32}, 1),
        ("InstanceNorm 1x64x256x256", "InstanceNormalization", 6, [s([1, 64, 256, 256], 2)], {1: f(64), 2: f(64)},
         {}, 1),
        ("Gather embedding 30522x768, 8x512 ids", "Gather", 13, [None, [8, 512]],
         {0: r.uniform(-1, 1, (30522, 768)).astype(np.float32)}, {}, 1),
        ("Where 16x12x512x512", "Where", 16, [s([16, 1, 512, 512]), s([16, 12, 512, 512]), [1]], {}, {}, 1),
        ("ScatterND add 65536x64, 16384 rows", "ScatterND", 18, [s([65536, 64]), s([16384, 1]), s([16384, 64])], {},
         {"reduction": "add"}, 1),
        ("Less 16x12x512x512", "Less", 13, [s([16, 12, 512, 512]), [1]], {}, {}, 1),
        ("Cast i64->f32 8x512x512", "Cast", 13, [s([8, 512, 512])], {}, {"to": TensorProto.FLOAT}, 1),
        ("CumSum 64x8192", "CumSum", 14, [s([64, 8192])], {1: np.array(1, np.int64)}, {}, 1),
    ]
    return out


def make_model(path, op, opset, shapes, konst, attrs):
    inputs, inits, names = [], [], []
    n_in = max([len(shapes)] + [k + 1 for k in konst])
    dtype_of = {"Where": [TensorProto.BOOL, TensorProto.FLOAT, TensorProto.FLOAT],
                "Cast": [TensorProto.INT64], "Gather": [TensorProto.FLOAT, TensorProto.INT64],
                "ScatterND": [TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT]}
    for i in range(n_in):
        name = "in%d" % i
        names.append(name)
        if i in konst:
            inits.append(numpy_helper.from_array(konst[i], name))
            continue
        dt = dtype_of[op][i] if op in dtype_of else TensorProto.FLOAT
        inputs.append(helper.make_tensor_value_info(name, dt, shapes[i]))
    node = helper.make_node(op, names, ["out0"], **attrs)
    out = helper.make_tensor_value_info("out0", TensorProto.UNDEFINED, None)
    g = helper.make_graph([node], "bench", inputs, [out], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, path)


def run(rlx, model, device, iters, warmup, disable):
    env = dict(os.environ)
    if disable:
        env["RLX_GPU_DISABLE"] = disable
    p = subprocess.run([rlx, "run", model, "--device", device, "--iters", str(iters), "--warmup", str(warmup),
                        "--report"], capture_output=True, text=True, env=env)
    if p.returncode:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    m = re.search(r"steady\s+median ([0-9.]+) (s|ms|us)", p.stdout + p.stderr)
    if not m:
        return None, "no timing"
    t = float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[m.group(2)]
    return t, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--only", help="comma-separated substrings of case names")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build")),
                                                  "rlx"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rlx_bench_ops_")
    print("%-40s %12s %12s %8s" % ("case", "gpu kernel", "cpu fallback", "ratio"))
    for name, op, opset, shapes, konst, attrs, _ in cases(a.small):
        if a.only and not any(k in name for k in a.only.split(",")):
            continue
        path = os.path.join(tmp, re.sub(r"[^A-Za-z0-9]+", "_", name) + ".onnx")
        make_model(path, op, opset, shapes, konst, attrs)
        tg, log = run(a.rlx, path, a.device, a.iters, a.warmup, None)
        native = tg is not None and re.search(r"\n\s+%s\s+1\s+1\s" % re.escape(op), log) is not None
        tc, _ = run(a.rlx, path, a.device, a.iters, a.warmup, op)
        if tg is None or tc is None:
            print("%-40s %s" % (name, log if tg is None else "fallback run failed"))
            continue
        print("%-40s %10.3f ms %10.3f ms %7.1fx%s" % (name, tg * 1e3, tc * 1e3, tc / tg,
                                                     "" if native else "  (NOT native on the GPU)"))


if __name__ == "__main__":
    sys.exit(main())
