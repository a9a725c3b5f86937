"""Graphs and nodes wider than 64 (tester 15): a model with more than 64
graph inputs loaded but every run failed ("more than 64 graph inputs"; `rlx
run`: "handles at most 64"), and the CPU executor refused any node with more
than 64 inputs or outputs (Concat of 65, Split into 65, Sum of 65, which the
GPU handed to the CPU (it now runs Sum / Max / Min / Mean of any count), Loop with 70 carried values, Scan with 70 scan
inputs), and Split refused more than 256 outputs (tester15b). onnxruntime
runs them. The wide-node models have at most 4 graph
inputs, so that they test the nodes, not the graph's inputs. A control
input (an If's scalar condition input) at index 66 specialises the plan on
its value as one below 64 does (the report shows no eager run).

Each model runs on the CPU and on the GPU (when an adapter exists) through
the Python bindings, against onnxruntime, with fresh random non-zero inputs
and outputs compared to 1e-5 of max(1, |value|); a second run with other
values (the plan cached, its arrays reused); `rlx run` of the 67-input model
(the CLI's generated inputs). Skips (77) while the bindings are not
loadable."""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
try:
    import onnxruntime as ort
except ImportError:
    R.skip("onnxruntime is not installed")

C = R.Checker("test_wide_io")
rng = R.seeded_rng(15)
TMP = tempfile.mkdtemp(prefix="rlx_wide_io_")


def model(name, nodes, inputs, outputs, opset=17):
    g = H.make_graph(nodes, name, inputs, outputs)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def fvi(name, dims):
    return H.make_tensor_value_info(name, T.FLOAT, dims)


def nonzero(shape):
    """Random values away from 0 (|v| in [0.5, 1.5])."""
    v = rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
    return v * np.where(rng.random(shape) < 0.5, -1, 1).astype(np.float32)


def gpu_session(m):
    try:
        return rlx.Session(m, "gpu")
    except rlx.Error as e:
        if "ADAPTER" in str(e) or "adapter" in str(e):
            return None
        raise


def compare(what, blob, make_feeds, gpu_native=None):
    """gpu_native: an op whose nodes must all run on the GPU's own kernels
    (the dispatch report's fallback column 0)."""
    ref = ort.InferenceSession(blob, providers=["CPUExecutionProvider"])
    m = rlx.Model(blob)
    sessions = [("cpu", rlx.Session(m, "cpu"))]
    g = gpu_session(m)
    if g is None:
        print("no GPU adapter: %s on the CPU only" % what)
    else:
        sessions.append(("gpu", g))
    for dev, s in sessions:
        for rep in range(2):
            feeds = make_feeds()
            want = ref.run(None, feeds)
            try:
                got = s.run(feeds)
            except rlx.Error as e:
                C.check(False, "%s on %s, run %d: %s" % (what, dev, rep, e))
                break
            C.check(len(got) == len(want), "%s on %s: %d outputs, want %d" % (what, dev, len(got), len(want)))
            bad = [i for i, (a, b) in enumerate(zip(got, want))
                   if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-5)]
            C.check(not bad, "%s on %s, run %d: outputs %s differ from onnxruntime" % (what, dev, rep, bad[:5]))
            print("%s on %s, run %d: %d outputs match onnxruntime" % (what, dev, rep, len(got)))
        if dev == "gpu" and gpu_native:
            rows = [ln.split() for ln in s.dispatch_report.splitlines() if ln.split()[:1] == [gpu_native]]
            C.check(len(rows) == 1 and rows[0][1] == rows[0][2] and rows[0][3] == "0",
                    "%s: %s runs on the GPU's own kernels, report %s" % (what, gpu_native, rows))


# ------------------------------------------------ 67 graph inputs, 65 outputs
# the shape of a 32-layer decoder with a KV cache: input_ids, attention
# mask, position ids and 64 past key / value tensors; 64 present tensors
# and one more output
K = 67
nodes = [H.make_node("Neg", ["x%d" % i], ["y%d" % i], name="neg%d" % i) for i in range(K - 1)]
nodes.append(H.make_node("Add", ["x%d" % (K - 1), "x0"], ["y%d" % (K - 1)], name="add"))
io67 = model("io67", nodes, [fvi("x%d" % i, [1, 4]) for i in range(K)], [fvi("y%d" % i, None) for i in range(K)])
compare("67 graph inputs", io67, lambda: {"x%d" % i: nonzero((1, 4)) for i in range(K)})

# the CLI: rlx run of the same model (generated inputs)
path = os.path.join(TMP, "io67.onnx")
with open(path, "wb") as f:
    f.write(io67)
for dev in ("cpu", "gpu"):
    p = subprocess.run([R.built("rlx"), "run", path, "--device", dev, "--iters", "1", "--quiet"], capture_output=True,
                       text=True, timeout=600)
    if dev == "gpu" and p.returncode != 0 and "ADAPTER" in p.stdout + p.stderr:
        print("no GPU adapter: rlx run --device gpu skipped")
        continue
    C.check(p.returncode == 0 and "y66" in p.stdout,
            "rlx run of 67 inputs on %s: exit %d: %s" % (dev, p.returncode, (p.stderr + p.stdout)[-400:]))

# ------------------------------------------------ wide nodes, few graph inputs
# each node's inputs are n different values computed from one graph input x
# (x * k_i, k_i constants), so that only the node is wide


def model_k(name, nodes, inputs, outputs, inits, opset=17):
    g = H.make_graph(nodes, name, inputs, outputs, inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def fan(x, n, shape, tag):
    """n Mul nodes x * k_i -> tag_i, and their constants."""
    nodes = [H.make_node("Mul", [x, "%s_k%d" % (tag, i)], ["%s%d" % (tag, i)], name="%s_mul%d" % (tag, i))
             for i in range(n)]
    inits = [H.make_tensor("%s_k%d" % (tag, i), T.FLOAT, shape, nonzero(shape).ravel().tolist()) for i in range(n)]
    return nodes, inits


N = 65
nodes, inits = fan("x", N, [2, 3], "c")
nodes.append(H.make_node("Concat", ["c%d" % i for i in range(N)], ["y"], name="cat", axis=1))
concat = model_k("concat65", nodes, [fvi("x", [2, 3])], [fvi("y", None)], inits)
compare("Concat of 65", concat, lambda: {"x": nonzero((2, 3))})

split = model("split65", [H.make_node("Split", ["x"], ["s%d" % i for i in range(N)], name="split", axis=1)],
              [fvi("x", [3, N * 2])], [fvi("s%d" % i, None) for i in range(N)])
compare("Split into 65", split, lambda: {"x": nonzero((3, N * 2))})

# Split into 65 and Concat of the 65 pieces, each negated: one node of 65
# outputs feeding one of 65 inputs
nodes = [H.make_node("Split", ["x"], ["p%d" % i for i in range(N)], name="split", axis=1)]
nodes += [H.make_node("Neg", ["p%d" % i], ["q%d" % i], name="neg%d" % i) for i in range(N)]
nodes.append(H.make_node("Concat", ["q%d" % (N - 1 - i) for i in range(N)], ["y"], name="cat", axis=1))
split_cat = model("split_cat65", nodes, [fvi("x", [2, N])], [fvi("y", None)])
compare("Split into 65 then Concat of 65", split_cat, lambda: {"x": nonzero((2, N))})

# Split into 300 (tester15b 04: "more than 256 outputs" on the CPU and the
# GPU): equal parts of [2, 600]; a constant split input [1, 3] * 150; the
# same split fed at run time (the CPU reads it per run)
NW = 300
outs = ["s%d" % i for i in range(NW)]
split300 = model("split300", [H.make_node("Split", ["x"], outs, name="split", axis=1)],
                 [fvi("x", [2, 2 * NW])], [fvi(o, None) for o in outs])
compare("Split into 300", split300, lambda: {"x": nonzero((2, 2 * NW))}, gpu_native="Split")
sizes = [1, 3] * (NW // 2)
split300k = model_k("split300k", [H.make_node("Split", ["x", "sizes"], outs, name="split", axis=1)],
                    [fvi("x", [3, sum(sizes)])], [fvi(o, None) for o in outs],
                    [H.make_tensor("sizes", T.INT64, [NW], sizes)])
compare("Split into 300 by a constant split input", split300k, lambda: {"x": nonzero((3, sum(sizes)))},
        gpu_native="Split")
split300f = model("split300f", [H.make_node("Split", ["x", "sizes"], outs, name="split", axis=1)],
                  [fvi("x", [3, sum(sizes)]), H.make_tensor_value_info("sizes", T.INT64, [NW])],
                  [fvi(o, None) for o in outs])
compare("Split into 300 by a fed split input", split300f,
        lambda: {"x": nonzero((3, sum(sizes))), "sizes": np.array(sizes, np.int64)})

# ------------------------------------------------ Sum / Max / Min / Mean of 100
for op in ("Sum", "Max", "Min", "Mean"):
    n = 100
    nodes, inits = fan("x", n, [2, 3], "a")
    nodes.append(H.make_node(op, ["a%d" % i for i in range(n)], ["y"], name=op.lower()))
    blob = model_k(op.lower() + "100", nodes, [fvi("x", [2, 3])], [fvi("y", None)], inits)
    compare("%s of %d" % (op, n), blob, lambda: {"x": nonzero((2, 3))}, gpu_native=op)

# ------------------------------------------------ Loop with 70 carried values
NC = 70
body = H.make_graph(
    [H.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")] +
    [H.make_node("Mul", ["v%d" % i, "f"], ["w%d" % i], name="mul%d" % i) for i in range(NC)],
    "body",
    [H.make_tensor_value_info("iter", T.INT64, []), H.make_tensor_value_info("cond_in", T.BOOL, [])] +
    [fvi("v%d" % i, [2]) for i in range(NC)],
    [H.make_tensor_value_info("cond_out", T.BOOL, [])] + [fvi("w%d" % i, [2]) for i in range(NC)])
nodes, inits = fan("x", NC, [2], "l")
nodes.append(H.make_node("Loop", ["trip", "cond"] + ["l%d" % i for i in range(NC)], ["o%d" % i for i in range(NC)],
                         name="loop", body=body))
loop = model_k("loop70", nodes,
               [H.make_tensor_value_info("trip", T.INT64, []), H.make_tensor_value_info("cond", T.BOOL, []),
                fvi("f", [2]), fvi("x", [2])],
               [fvi("o%d" % i, None) for i in range(NC)], inits)
compare("Loop with 70 carried values", loop,
        lambda: {"trip": np.array(3, np.int64), "cond": np.array(True), "f": nonzero((2,)), "x": nonzero((2,))})

# ------------------------------------------------ Scan with 70 scan inputs
NS = 70
body = H.make_graph(
    [H.make_node("Sum", ["acc_in"] + ["e%d" % i for i in range(NS)], ["acc_out"], name="add_all"),
     H.make_node("Identity", ["acc_out"], ["col"], name="col")],
    "scan_body", [fvi("acc_in", [2])] + [fvi("e%d" % i, [2]) for i in range(NS)],
    [fvi("acc_out", [2]), fvi("col", [2])])
nodes, inits = fan("x", NS, [3, 2], "s")
nodes.append(H.make_node("Scan", ["acc0"] + ["s%d" % i for i in range(NS)], ["acc", "cols"], name="scan", body=body,
                         num_scan_inputs=NS))
scan = model_k("scan70", nodes, [fvi("acc0", [2]), fvi("x", [3, 2])], [fvi("acc", None), fvi("cols", None)], inits)
compare("Scan with 70 scan inputs", scan, lambda: {"acc0": nonzero((2,)), "x": nonzero((3, 2))})

# ------------------------------------------------ a control input past the 64th
# y = If(sr == 16000, x0 + x1, x0 * x1) with sr graph input 66 of 67: the
# plan is specialised on sr's value (static, not eager; the session's
# control inputs were a 64-bit mask, so input 66 ran the whole graph
# eagerly)
KC = 67
then_g = H.make_graph([H.make_node("Add", ["x0", "x1"], ["t"], name="t_add")], "then", [], [fvi("t", [2, 3])])
else_g = H.make_graph([H.make_node("Mul", ["x0", "x1"], ["e"], name="e_mul")], "else", [], [fvi("e", [2, 3])])
nodes = [H.make_node("Equal", ["sr", "k16000"], ["is16k"], name="eq"),
         H.make_node("If", ["is16k"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
nodes += [H.make_node("Neg", ["x%d" % i], ["n%d" % i], name="neg%d" % i) for i in range(2, KC - 1)]
inputs = [fvi("x%d" % i, [2, 3]) for i in range(KC - 1)] + [H.make_tensor_value_info("sr", T.INT64, [])]
ctl = model_k("ctl66", nodes, inputs, [fvi("y", None)] + [fvi("n%d" % i, None) for i in range(2, KC - 1)],
              [H.make_tensor("k16000", T.INT64, [], [16000])])
for sr in (16000, 8000):
    compare("control input 66 = %d" % sr, ctl,
            lambda sr=sr: dict({"x%d" % i: nonzero((2, 3)) for i in range(KC - 1)}, sr=np.array(sr, np.int64)))
s_ctl = rlx.Session(rlx.Model(ctl), "cpu")
s_ctl.run(dict({"x%d" % i: nonzero((2, 3)) for i in range(KC - 1)}, sr=np.array(16000, np.int64)))
C.check("runs eagerly" not in s_ctl.dispatch_report,
        "control input 66: the plan is specialised on its value, not eager: %s" % s_ctl.dispatch_report[:600])

C.done()
