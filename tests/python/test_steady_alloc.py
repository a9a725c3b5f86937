#!/usr/bin/env python3
"""Steady CPU runs allocate nothing (issue 13; docs/DEVELOPING.md).

For each model, build/steady_alloc (tests/alloc/steady_alloc.c) runs it on
the CPU device at 1 and 2 threads (cpu.threads): a first run, 5 warm-up
runs, then 10 steady runs into the same outputs, counting their heap
allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
memalign, valloc) with the LD_PRELOAD shim build/librlx_alloc_count.so
(tests/alloc/alloc_count.c), less the per-thread scratch's growths (a
pool thread that first takes a node's largest task on a later run grows
its grow-only buffer then, once: counted apart by base/scratch.c). Any
other allocation fails the test, naming the model and thread count; the
runner prints the callers ("alloc OBJECT+0xOFFSET", for addr2line). Models (onnx's
helper, seeded random weights):
  - convnet, encoder, recurrent: test_cpu_threads.py's (convolution splits
    and pooling; a BERT-like layer; bidirectional LSTM and GRU);
  - upsample: a 3x3 pad-1 convolution chain at 40 x 40 and 1x1 (the
    pointwise-tile paths), a strided 3x3, ConvTranspose, Resize (nearest:
    linear and cubic still take the double-precision reference, which
    allocates its working copies per call), Concat, ReduceMean over rows;
  - qconv: QuantizeLinear, QLinearConv (per-channel int8 weights, 3x3 and
    1x1), DequantizeLinear, a QDQ DequantizeLinear -> Conv ->
    QuantizeLinear -> DequantizeLinear group, QLinearMatMul with
    per-column weight scales;
  - wide: 67 graph inputs (a 32-layer decoder's count with a KV cache),
    a Concat of 65, a Split into 65 and a Sum of 100 (the arrays of wide
    nodes and graphs are sized at compile time), a Split into 260 by a
    constant split input, an f16 Sum (its f32 accumulator);
  - overridable: 130 overridable initializers (IR 8), all fed on every run
    (the runner feeds them): the sub-session cache's key is a bitset of
    three words, found without allocating;
  - the ONNX suite's light_squeezenet when present.
Also checks that the shim counts at all (a run whose first run allocates).
Exits 77 when the shim, the runner or onnx is missing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build"))
SHIM = os.path.join(BUILD, "librlx_alloc_count.so")
RUNNER = os.path.join(BUILD, "steady_alloc")
SQUEEZE = os.path.join(ROOT, "third_party", "onnx", "backend-test-data", "light", "light_squeezenet.onnx")

try:
    from onnx import TensorProto, helper, numpy_helper
    import test_cpu_threads as T
except (ImportError, SystemExit):
    sys.exit(77)


def upsample(path):
    b = T.Builder(4)
    x = b.conv("x", 8, 16, 3)                            # 40 x 40, pad 1
    x = b.conv(x, 16, 16, 3)
    y = b.conv(x, 16, 32, 3, stride=2)                   # 20
    y = b.conv(y, 32, 32, 1)
    t = b.op("ConvTranspose", [y, b.const((32, 16, 2, 2), 0.2), b.const((16,), 0.1)], strides=[2, 2])  # 40
    sc = b.name("scales")
    b.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), sc))
    r = b.op("Resize", [y, "", sc], mode="nearest")      # 40
    x = b.op("Concat", [x, t, r], axis=1)                # 16 + 16 + 32
    x = b.conv(x, 64, 8, 3, relu=False)
    x = b.op("Sub", [x, b.op("ReduceMean", [x], axes=[3])])  # 320 row reductions (partial results)
    b.model(path, [("x", [1, 8, 40, 40])], x, [1, 8, 40, 40])


def qconv(path):
    b = T.Builder(5)
    rng = b.rng

    def init(arr):
        n = b.name("q")
        b.inits.append(numpy_helper.from_array(arr, n))
        return n

    def qlconv(x, xs, xz, cin, cout, k, ys, yz):
        w = init(rng.integers(-127, 128, (cout, cin, k, k)).astype(np.int8))
        ws = init(rng.uniform(0.002, 0.01, cout).astype(np.float32))
        wz = init(np.zeros(cout, np.int8))
        bias = init(rng.integers(-500, 500, cout).astype(np.int32))
        return b.op("QLinearConv", [x, xs, xz, w, ws, wz, ys, yz, bias], kernel_shape=[k, k], pads=[k // 2] * 4)

    s0, z0 = init(np.array(0.02, np.float32)), init(np.array(128, np.uint8))
    s1, z1 = init(np.array(0.05, np.float32)), init(np.array(120, np.uint8))
    s2, z2 = init(np.array(0.08, np.float32)), init(np.array(128, np.uint8))
    q = b.op("QuantizeLinear", ["x", s0, z0])
    q = qlconv(q, s0, z0, 8, 16, 3, s1, z1)
    q = qlconv(q, s1, z1, 16, 16, 1, s2, z2)
    x = b.op("DequantizeLinear", [q, s2, z2])
    wq = init(rng.integers(-127, 128, (16, 16, 3, 3)).astype(np.int8))
    w = b.op("DequantizeLinear", [wq, init(rng.uniform(0.002, 0.01, 16).astype(np.float32)),
                                  init(np.zeros(16, np.int8))], axis=0)
    xq = b.op("DequantizeLinear", [b.op("QuantizeLinear", [x, s2, z2]), s2, z2])
    y = b.op("Conv", [xq, w, b.const((16,), 0.1)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    q = b.op("QuantizeLinear", [y, s1, z1])
    q = b.op("QLinearMatMul", [q, s1, z1, init(rng.integers(-127, 128, (32, 24)).astype(np.int8)),
                               init(rng.uniform(0.002, 0.01, 24).astype(np.float32)), init(np.zeros(24, np.int8)),
                               s2, z2])
    y = b.op("DequantizeLinear", [q, s2, z2])
    b.model(path, [("x", [1, 8, 32, 32])], y, [1, 16, 32, 24])


def wide(path):
    from onnx import helper as H, TensorProto as TP
    k, n = 67, 65
    fvi = lambda name, dims: H.make_tensor_value_info(name, TP.FLOAT, dims)  # noqa: E731
    nodes = [H.make_node("Neg", ["x%d" % i], ["n%d" % i]) for i in range(k)]
    nodes.append(H.make_node("Concat", ["n%d" % i for i in range(n)], ["cat"], axis=1))
    nodes.append(H.make_node("Split", ["cat"], ["s%d" % i for i in range(n)], axis=1))
    nodes.append(H.make_node("Sum", ["s%d" % (i % n) for i in range(100)] + ["n65", "n66"], ["sum"]))
    # a Split into 260 by a constant split input (sizes and split values
    # past 256: the kernel's scratch), an f16 Sum of three (its f32
    # accumulator: the kernel's scratch)
    w = ["w%d" % i for i in range(260)]
    nodes.append(H.make_node("Split", ["cat", "sizes"], w, axis=1))
    nodes.append(H.make_node("Sum", w, ["wsum"]))
    nodes += [H.make_node("Cast", [w[i]], ["h%d" % i], to=TP.FLOAT16) for i in range(3)]
    nodes.append(H.make_node("Sum", ["h0", "h1", "h2"], ["hsum"]))
    g = H.make_graph(nodes, "wide", [fvi("x%d" % i, [4, 8]) for i in range(k)],
                     [fvi("sum", None), fvi("cat", None), fvi("wsum", None),
                      H.make_tensor_value_info("hsum", TP.FLOAT16, None)],
                     [H.make_tensor("sizes", TP.INT64, [260], [2] * 260)])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def overridable(path):
    from onnx import helper as H, TensorProto as TP
    n = 130
    rng = np.random.default_rng(7)
    fvi = lambda name, dims: H.make_tensor_value_info(name, TP.FLOAT, dims)  # noqa: E731
    g = H.make_graph([H.make_node("Sum", ["x"] + ["w%d" % k for k in range(n)], ["y"])], "overridable",
                     [fvi("x", [4, 8])] + [fvi("w%d" % k, [4, 8]) for k in range(n)], [fvi("y", None)],
                     initializer=[numpy_helper.from_array(rng.uniform(-1, 1, (4, 8)).astype(np.float32), "w%d" % k)
                                  for k in range(n)])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def linear_resize(path):
    """Resize (linear, x2) alone: the double-precision reference path, which
    allocates its working copies on every call (the shim's positive control)."""
    b = T.Builder(6)
    sc = b.name("scales")
    b.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), sc))
    y = b.op("Resize", ["x", "", sc], mode="linear")
    b.model(path, [("x", [1, 4, 8, 8])], y, [1, 4, 16, 16])


def count(model, threads, env_extra=None):
    env = dict(os.environ, LD_PRELOAD=SHIM, RLX_ALLOC_COUNT_FILE=os.devnull, **(env_extra or {}))
    p = subprocess.run([RUNNER, model, str(threads)], capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, (p.stdout + p.stderr).strip()


def main():
    if not (os.path.exists(SHIM) and os.path.exists(RUNNER)):
        print("skip: build the targets rlx_alloc_count and steady_alloc first")
        return 77
    work = tempfile.mkdtemp(prefix="rlx_steady_alloc_")
    models = {}
    for name, make in (("convnet", T.convnet), ("encoder", T.encoder), ("recurrent", T.recurrent),
                       ("upsample", upsample), ("qconv", qconv), ("wide", wide),
                       ("overridable", overridable)):
        models[name] = os.path.join(work, name + ".onnx")
        make(models[name])
    if os.path.exists(SQUEEZE):
        models["light_squeezenet"] = SQUEEZE
    failed = 0
    # the counting must work: without the shim the runner skips (77), and
    # with it an allocation in the counted window is seen
    p = subprocess.run([RUNNER, models["convnet"], "1", "0", "1"], capture_output=True, text=True,
                       env=dict(os.environ, LD_PRELOAD=""))
    if p.returncode != 77:
        print(f"FAIL: the runner without the shim: exit {p.returncode}, not 77 (skip)")
        failed += 1
    control = os.path.join(work, "linear_resize.onnx")
    linear_resize(control)
    rc, out = count(control, 1)
    if rc != 1:
        print(f"FAIL: linear Resize's steady runs should allocate (the shim counts): exit {rc}: {out}")
        failed += 1
    for name, path in models.items():
        for threads in (1, 2):
            rc, out = count(path, threads)
            ok = rc == 0
            print(("ok   " if ok else "FAIL ") + f"{name} threads={threads}: {out}")
            failed += not ok
    print(f"{len(models) * 2 - failed} of {len(models) * 2} runs allocate nothing" if not failed else
          f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
