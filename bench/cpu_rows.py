#!/usr/bin/env python3
"""rlx's CPU backend against onnxruntime's CPU execution provider on
one-op (or few-op) models built here with onnx.helper: the recurrent ops,
row-wise ops over many short rows and over long rows, large reductions,
elementwise ops, and a model of 30 tiny ops (per-node overhead).
Same machine, same inputs, same thread count; milliseconds per forward
pass, the median over --rounds rounds of each runner's median of --iters
steady runs (rounds interleave the runners). Prints a markdown table.

    python3 bench/cpu_rows.py [--rlx build/rlx] [--base-rlx OTHER/rlx]
                              [--threads N] [--rounds 3] [--iters 20]
                              [--models lstm,softmax_short,...] [--list]

--threads N sets RLX_NUM_THREADS for rlx and intra_op_num_threads for
onnxruntime. --cpu-time reports CPU time (user + system, all threads) per
forward pass instead of wall time: each runner runs twice, with --iters and
3 x --iters timed runs, and the difference of the two processes' CPU time
(getrusage of the children) over 2 x --iters runs is the cost of a pass
without start-up and compilation. On a machine shared with other work,
where a process waits for a core much of the time, this is the steadier
measure (at one thread it is what the wall time would be on an idle core). --base-rlx adds a column for another rlx binary (a build of
main: the "before"). Weights: normal(0, 0.1), seed 1; inputs uniform
[-1, 1), seed 0 (written as .npy to --work).

Models (name: graph):
  lstm            bidirectional LSTM, hidden 224, input 224, sequence 21,
                  batch 30 (the issue's LSTM), output Y
  gru             bidirectional GRU (linear_before_reset 1), same sizes
  lstm_b1         unidirectional LSTM, hidden 64, input 64, sequence 32,
                  batch 1 (a streaming model's)
  lstm_fwd        lstm's sizes in one direction (forward): at 2 threads its
                  hidden units split over both (one barrier per step)
  softmax_short   Softmax over the last axis of [70000, 8]
  logsoftmax_long LogSoftmax over the last axis of [64, 32000]
  softmax_long    Softmax over the last axis of [256, 4096]
  argmax_short    ArgMax over the last axis of [70000, 8] (keepdims 0)
  layernorm_short LayerNormalization over the last axis of [70000, 8]
  layernorm_768   LayerNormalization over the last axis of [4096, 768]
  reduce_sum_16m  ReduceSum of [4096, 4096] over all axes (keepdims 0)
  reduce_mean_rows ReduceMean of [4096, 1024] over axis 1
  reduce_sum_cols ReduceSum of [1024, 4096] over axis 0
  ew_add          Add of [1M] and [1M]      (elementwise, part 4)
  ew_add_4m       Add of [4M] and a constant [4M] (the runtime's input and
                  output copies, issue 13)
  ew_sigmoid      Sigmoid of [1M]
  ew_gelu         Gelu (erf) as the ONNX function of opset 20, [1M]
  ew_chain        Mul, Add, Tanh, Mul on [1M] (a fusable chain)
  ew_sigmoid_4m   Sigmoid of [1, 4M]; ew_tanh_4m, ew_exp_4m, ew_erf_4m the
                  same with Tanh, Exp, Erf; ew_gelu_4m Gelu-20 (erf) of [1, 4M]
  ew_chain_4m     Mul, Add, Tanh, Mul on [1, 4M] (one FusedElementwise)
  softmax_32k     Softmax over the last axis of [64, 32768]
  tiny30          30 tiny ops on [1, 32] (MatMul, Add, Relu, Sigmoid,
                  Transpose, Reshape, ReduceMean, Concat, Slice, Softmax,
                  ...): per-node overhead
  maxpool_rn50    MaxPool 3x3 stride 2 pad 1 of [1, 64, 112, 112] (ResNet-50's)
  maxpool_2x2     MaxPool 2x2 stride 2 of [1, 64, 112, 112] (VGG's, U-Net's)
  maxpool_3x3s1   MaxPool 3x3 stride 1 pad 1 of [1, 192, 28, 28] (Inception's)
  maxpool_5x5s1   MaxPool 5x5 stride 1 pad 2 of [1, 256, 20, 20] (YOLOv5's SPPF)
  maxpool_3x3s2c  MaxPool 3x3 stride 2 ceil_mode of [1, 64, 112, 112]
                  (Inception v1's, SqueezeNet's)
  gemm_fc2048     Gemm transB 1 of [1, 2048] and [1000, 2048] + bias (ResNet-50's
                  classifier); gemm_fc1280 the same from 1280 (MobileNetV2's)
  matmul_gemv     MatMul of [1, 768] and [768, 3072] (a transformer's MLP at
                  batch 1, one token)
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cpu_vs_ort import cpu_per_run, run_ort, run_rlx  # noqa: E402

W_RNG = np.random.default_rng(1)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=arr.dtype), name)


def weights(*shape):
    return W_RNG.normal(0, 0.1, shape).astype(np.float32)


def one_op(op, shape, out_shape, attrs=None, inits=(), extra_inputs=(), opset=17, out_type=TensorProto.FLOAT):
    nodes = [helper.make_node(op, ["x", *extra_inputs], ["y"], **(attrs or {}))]
    g = helper.make_graph(nodes, op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", out_type, out_shape)], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), shape


def rnn(kind, T, N, I, H, dirs, extra=None):
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    D = 2 if dirs == "bidirectional" else 1
    inits = [init("W", weights(D, G * H, I)), init("R", weights(D, G * H, H)), init("B", weights(D, 2 * G * H))]
    node = helper.make_node(kind, ["x", "W", "R", "B"], ["y"], hidden_size=H, direction=dirs, **(extra or {}))
    g = helper.make_graph([node], kind.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, N, I])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [T, D, N, H])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), [T, N, I]


def layernorm(rows, cols):
    inits = [init("s", weights(cols) + 1), init("b", weights(cols))]
    return one_op("LayerNormalization", [rows, cols], [rows, cols], {"axis": -1}, inits, ["s", "b"])


def tiny30():
    """30 small nodes of the kinds small models chain: every value is [1, 32]
    or a reshape of it; no two elementwise ops in a row, so fusion passes
    leave most nodes apart."""
    n = 32
    nodes, inits = [], []
    cur = "x"
    k = 0

    def nm(tag):
        nonlocal k
        k += 1
        return f"{tag}{k}"

    for i in range(5):
        w = nm("w")
        inits.append(init(w, weights(n, n)))
        b = nm("b")
        inits.append(init(b, weights(n)))
        t1, t2, t3, t4, t5, t6 = (nm("t") for _ in range(6))
        nodes.append(helper.make_node("MatMul", [cur, w], [t1]))
        nodes.append(helper.make_node("Add", [t1, b], [t2]))
        nodes.append(helper.make_node("Relu" if i % 2 else "Sigmoid", [t2], [t3]))
        shp = nm("shape")
        inits.append(init(shp, np.array([1, 4, n // 4], dtype=np.int64)))
        nodes.append(helper.make_node("Reshape", [t3, shp], [t4]))
        nodes.append(helper.make_node("Transpose", [t4], [t5], perm=[0, 2, 1]))
        shp2 = nm("shape")
        inits.append(init(shp2, np.array([1, n], dtype=np.int64)))
        nodes.append(helper.make_node("Reshape", [t5, shp2], [t6]))
        cur = t6
    out = "y"
    nodes[-1].output[0] = out
    g = helper.make_graph(nodes, "tiny30", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, n])], initializer=inits)
    assert len(nodes) == 30
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), [1, n]


def ew_chain(n):
    inits = [init("a", np.array([0.7], np.float32)), init("c", np.array([0.1], np.float32))]
    nodes = [helper.make_node("Mul", ["x", "a"], ["t1"]), helper.make_node("Add", ["t1", "c"], ["t2"]),
             helper.make_node("Tanh", ["t2"], ["t3"]), helper.make_node("Mul", ["t3", "x"], ["y"])]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), [n]


def gemm_fc(k, n):
    inits = [init("w", weights(n, k)), init("b", weights(n))]
    return one_op("Gemm", [1, k], [1, n], {"transB": 1}, inits, ["w", "b"], opset=13)


def maxpool(c, h, k, s, p, ceil=0):
    out = (h + 2 * p - k + ((s - 1) if ceil else 0)) // s + 1
    attrs = {"kernel_shape": [k, k], "strides": [s, s], "pads": [p] * 4, "ceil_mode": ceil}
    return one_op("MaxPool", [1, c, h, h], [1, c, out, out], attrs, opset=12)


def ew_add(n):
    inits = [init("b", W_RNG.uniform(-1, 1, n).astype(np.float32))]
    return one_op("Add", [n], [n], inits=inits, extra_inputs=["b"])


MODELS = {
    "lstm": lambda: rnn("LSTM", 21, 30, 224, 224, "bidirectional"),
    "gru": lambda: rnn("GRU", 21, 30, 224, 224, "bidirectional", {"linear_before_reset": 1}),
    "lstm_b1": lambda: rnn("LSTM", 32, 1, 64, 64, "forward"),
    "lstm_fwd": lambda: rnn("LSTM", 21, 30, 224, 224, "forward"),
    "softmax_short": lambda: one_op("Softmax", [70000, 8], [70000, 8], {"axis": -1}),
    "logsoftmax_long": lambda: one_op("LogSoftmax", [64, 32000], [64, 32000], {"axis": -1}),
    "softmax_long": lambda: one_op("Softmax", [256, 4096], [256, 4096], {"axis": -1}),
    "argmax_short": lambda: one_op("ArgMax", [70000, 8], [70000], {"axis": -1, "keepdims": 0},
                                   out_type=TensorProto.INT64),
    "layernorm_short": lambda: layernorm(70000, 8),
    "layernorm_768": lambda: layernorm(4096, 768),
    "reduce_sum_16m": lambda: one_op("ReduceSum", [4096, 4096], [], {"keepdims": 0}, opset=13),
    "reduce_mean_rows": lambda: one_op("ReduceMean", [4096, 1024], [4096], {"axes": [1], "keepdims": 0}, opset=13),
    "reduce_sum_cols": lambda: one_op("ReduceSum", [1024, 4096], [4096], {"keepdims": 0}, opset=13,
                                      inits=[init("axes", np.array([0], np.int64))], extra_inputs=["axes"]),
    "ew_add": lambda: ew_add(1 << 20),
    "ew_add_4m": lambda: ew_add(1 << 22),
    "ew_sigmoid": lambda: one_op("Sigmoid", [1 << 20], [1 << 20]),
    "ew_gelu": lambda: one_op("Gelu", [1 << 20], [1 << 20], opset=20),
    "ew_chain": lambda: ew_chain(1 << 20),
    "tiny30": tiny30,
    "ew_sigmoid_4m": lambda: one_op("Sigmoid", [1, 1 << 22], [1, 1 << 22]),
    "ew_tanh_4m": lambda: one_op("Tanh", [1, 1 << 22], [1, 1 << 22]),
    "ew_exp_4m": lambda: one_op("Exp", [1, 1 << 22], [1, 1 << 22]),
    "ew_erf_4m": lambda: one_op("Erf", [1, 1 << 22], [1, 1 << 22]),
    "ew_gelu_4m": lambda: one_op("Gelu", [1, 1 << 22], [1, 1 << 22], opset=20),
    "ew_chain_4m": lambda: ew_chain(1 << 22),
    "softmax_32k": lambda: one_op("Softmax", [64, 32768], [64, 32768], {"axis": -1}),
    "maxpool_rn50": lambda: maxpool(64, 112, 3, 2, 1),
    "maxpool_2x2": lambda: maxpool(64, 112, 2, 2, 0),
    "maxpool_3x3s1": lambda: maxpool(192, 28, 3, 1, 1),
    "maxpool_5x5s1": lambda: maxpool(256, 20, 5, 1, 2),
    "maxpool_3x3s2c": lambda: maxpool(64, 112, 3, 2, 0, ceil=1),
    "gemm_fc2048": lambda: gemm_fc(2048, 1000),
    "gemm_fc1280": lambda: gemm_fc(1280, 1000),
    "matmul_gemv": lambda: one_op("MatMul", [1, 768], [1, 3072], inits=[init("w", weights(768, 3072))],
                                  extra_inputs=["w"], opset=13),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "rlx"))
    ap.add_argument("--base-rlx", default=None)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rlx_cpu_rows"))
    ap.add_argument("--list", action="store_true", help="write the models to --work and stop")
    ap.add_argument("--cpu-time", action="store_true", help="CPU ms per pass instead of wall ms (see above)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for key in a.models.split(","):
        model, shape = MODELS[key]()
        model.ir_version = 8  # what onnxruntime 1.22 reads
        path = os.path.join(a.work, f"{key}.onnx")
        onnx.save(model, path)
        npy = os.path.join(a.work, f"{key}_x.npy")
        np.save(npy, np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))
        if a.list:
            print(path)
            continue
        res = {"rlx": [], "base": [], "ort": []}
        spec = [f"x={npy}"]  # cpu_vs_ort's runners take name=path specs and return (ms, peak RSS)
        runners = {"rlx": lambda n: run_rlx(a.rlx, path, spec, a.threads, n, a.warmup)[0],
                   "ort": lambda n: run_ort(path, spec, a.threads, n, a.warmup)[0]}
        if a.base_rlx:
            runners["base"] = lambda n: run_rlx(a.base_rlx, path, spec, a.threads, n, a.warmup)[0]
        for r in range(a.rounds):
            for name in ("rlx", "base", "ort"):
                if name not in runners:
                    continue
                fn = runners[name]
                res[name].append(cpu_per_run(fn, a.iters) if a.cpu_time else fn(a.iters))
            print(f"{key} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in res.items() if v),
                  file=sys.stderr)
        rows.append((key, {k: statistics.median(v) for k, v in res.items() if v}))
    if a.list:
        return 0
    thr = a.threads or f"default ({os.cpu_count()} cores)"
    what = (f"CPU ms per forward pass (user + system, from runs of {a.iters} and {3 * a.iters} passes)"
            if a.cpu_time else f"ms per forward pass: each round's median of {a.iters} runs")
    print(f"\nthreads: {thr}; {what}; the median over {a.rounds} rounds\n")
    head = ("| model | " + ("rlx before | before / ort | " if a.base_rlx else "") + "rlx | onnxruntime | rlx / ort |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    def ratio(x, y):
        return f"{x / y:.2f}" if y > 0 else "n/a"  # CPU time below the clock's resolution

    for key, m in rows:
        base = f"{m['base']:.3f} | {ratio(m['base'], m['ort'])} | " if a.base_rlx else ""
        print(f"| {key} | {base}{m['rlx']:.3f} | {m['ort']:.3f} | **{ratio(m['rlx'], m['ort'])}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
