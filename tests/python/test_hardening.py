"""Bad inputs through the command line, ocr_det and the Python bindings: each
must give a clear error (naming the file, node or op), the documented exit
code (2 for model and input problems) and never a crash, an abort or a
sanitizer report. Every case here once misbehaved:

- models: Conv pads near INT64_MAX (built, then UBSan), MaxPool
  kernel_shape -1 (RLX_ERR_INTERNAL at run time), Scan num_scan_inputs
  2^31 (UBSan), an empty file (an "opset" message), an input declaring
  dim -3 (taken as dynamic without a word);
- .npy inputs claiming more data than the file has (exit 1, "out of
  memory"), a fortran_order that is neither True nor False (accepted);
- rlx run --output-dir that cannot be written (found only after the runs);
- rlx conformance with a wrong ROOT, device or suite (exit 0, "0 tests");
- environment: RLX_MAX_BINDING_BYTES=-1 (taken as no limit),
  RLX_DISABLE_PASSES with a typo (turned nothing off, silently);
- ocr_det with a folder as --image ("not a PNG file");
- the bindings: 0-d inputs (sent as shape (1,)), bfloat16 outputs
  (ValueError), big-endian arrays (refused), a path with a NUL (cut short),
  rlx_session_options without gpu_f16, one session shared by threads
  (segfault on the GPU).
Values are compared exactly (Relu, Identity and casts are exact)."""
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

try:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
except ImportError:
    R.skip("the onnx package is not installed (run scripts/setup.sh)")

RLX = R.built("rlx")
OCR = R.exe("ocr_det")
C = R.Checker("test_hardening")
TMP = tempfile.mkdtemp(prefix="rlx_hardening_")
SANITIZER_WORDS = ("Sanitizer", "runtime error:", "Segmentation", "Aborted", "core dumped")


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


def npy_raw(name, header, data):
    hb = header.encode("latin1")
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(hb).to_bytes(2, "little") + hb + data)
    return path


def expect(args, rc_want, needles, what, env=None, exe=RLX):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, env=e)
    rc, se = p.returncode, p.stderr
    C.check(rc == rc_want, "%s: exit %d, want %d; stderr: %s" % (what, rc, rc_want, se.strip()[-400:]))
    for n in needles:
        C.check(n in se, "%s: stderr does not mention %r: %s" % (what, n, se.strip()[-400:]))
    C.check(not any(w in se for w in SANITIZER_WORDS), "%s: crash or sanitizer report: %s" % (what, se[-800:]))
    return p


def fvi(name, dims, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, dims)


# ---------------------------------------------------------------- models
X4 = fvi("x", [1, 2, 5, 5])
W = h.make_tensor("w", T.FLOAT, [3, 2, 3, 3], np.random.default_rng(1).standard_normal(54).astype(np.float32))
m = save("conv_pads_max", [h.make_node("Conv", ["x", "w"], ["y"], name="c1", pads=[2**63 - 1] * 4)], [X4],
         [fvi("y", None)], [W])
for verb in ("info", "run"):
    expect([verb, m], 2, ["node 'c1' (Conv)", "pads"], "%s Conv pads INT64_MAX" % verb)
m = save("pool_k_neg", [h.make_node("MaxPool", ["x"], ["y"], name="p1", kernel_shape=[-1, -1])], [X4],
         [fvi("y", None)])
expect(["run", m], 2, ["node 'p1' (MaxPool)", "kernel_shape"], "MaxPool kernel_shape -1")
body = h.make_graph([h.make_node("Add", ["s", "xi"], ["s2"]), h.make_node("Identity", ["s2"], ["yo"])], "body",
                    [fvi("s", [2]), fvi("xi", [2])], [fvi("s2", [2]), fvi("yo", [2])])
m = save("scan_huge", [h.make_node("Scan", ["s0", "xs"], ["sf", "ys"], name="sc", body=body,
                                   num_scan_inputs=2**31)], [fvi("s0", [2]), fvi("xs", [3, 2])],
         [fvi("sf", None), fvi("ys", None)], opset=11)
expect(["run", m], 2, ["node 'sc' (Scan)", "num_scan_inputs"], "Scan num_scan_inputs 2^31")
empty = os.path.join(TMP, "empty.onnx")
open(empty, "wb").close()
expect(["info", empty], 2, ["empty.onnx is empty (0 bytes)"], "empty model file")
expect(["run", TMP], 2, ["is not a regular file"], "a folder as the model")
good = save("relu", [h.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", [2, 3])], [fvi("y", [2, 3])])
expect(["run", save("unknown_op", [h.make_node("NoSuchOp", ["x"], ["y"], name="nso")], [fvi("x", [2])],
                    [fvi("y", [2])])], 2, ["node 'nso' (NoSuchOp)", "not supported"], "unknown op")
# a declared negative dim runs as a dynamic one (as in onnxruntime); one other than -1 (what exporters write for
# "dynamic") was taken silently: one warning naming the value, none for the -1
neg = save("neg_dim", [h.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", [-3, 2])], [fvi("y", [-1, 2])])
p = expect(["run", neg, "--iters", "0", "--shape", "x=4x2"], 0,
           ["rlx: warning: graph input 'x' declares dim 0 as -3", "dynamic"], "a declared dim -3")
C.check(p.stderr.count("rlx: warning:") == 1, "a declared dim -3: one warning, none for -1: %r" % p.stderr[-400:])

# Add + LayerNormalization of zero rows (batch or sequence length 0): the
# fused rlx.AddLayerNormalization on the CPU refused its empty operands
aln = save("add_ln_rows0", [h.make_node("Add", ["x", "r"], ["s"], name="add"),
                            h.make_node("LayerNormalization", ["s", "g", "b"], ["y"], name="ln", axis=-1)],
           [fvi("x", ["n", 4]), fvi("r", ["n", 4])], [fvi("y", None)],
           [h.make_tensor("g", T.FLOAT, [4], [1, 2, 3, 4]), h.make_tensor("b", T.FLOAT, [4], [0, 1, 0, 1])], opset=17)
p = expect(["run", aln, "--shape", "x=0x4", "--shape", "r=0x4", "--iters", "0", "--output-dir",
            os.path.join(TMP, "aln")], 0, [], "Add + LayerNormalization of 0 rows")
if p.returncode == 0:
    C.check(np.load(os.path.join(TMP, "aln", "y.npy")).shape == (0, 4), "Add + LayerNormalization of 0 rows: shape")

# training optimizers (ai.onnx.preview.training): attributes of the wrong
# type were read as 0 (Adagrad epsilon="x" ran with epsilon 0), Momentum's
# required attributes defaulted to 0, an R of shape [2] failed inside the
# expansion naming an internal Mul
TR = h.make_opsetid("ai.onnx.preview.training", 1)


def optimizer(name, op, inputs, **attrs):
    n_out = 3 if op == "Adam" else 2
    ins = ["r", "t"] + [i.name for i in inputs[2:]]
    outs = ["o%d" % k for k in range(n_out)]
    g = h.make_graph([h.make_node(op, ins, outs, name="opt", domain="ai.onnx.preview.training", **attrs)], name,
                     inputs, [fvi(o, None) for o in outs])
    mm = h.make_model(g, opset_imports=[h.make_opsetid("", 17), TR])
    mm.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(mm, path)
    return path


ADA = [fvi("r", []), fvi("t", [], T.INT64), fvi("x", [3]), fvi("g", [3]), fvi("h", [3])]
TRN = "node 'opt' (ai.onnx.preview.training."
expect(["run", optimizer("adagrad_eps_str", "Adagrad", ADA, epsilon="x")], 2,
       [TRN + "Adagrad)", "attribute 'epsilon' must be a float"], "Adagrad epsilon as a string")
expect(["run", optimizer("adagrad_decay_int", "Adagrad", ADA, decay_factor=1)], 2,
       [TRN + "Adagrad)", "attribute 'decay_factor' must be a float"], "Adagrad decay_factor as an int")
expect(["run", optimizer("adagrad_r2", "Adagrad", [fvi("r", [2])] + ADA[1:])], 2,
       [TRN + "Adagrad)", "R ('r', f32 of rank 1) must be a floating-point scalar"], "Adagrad R of shape [2]")
expect(["run", optimizer("momentum_no_alpha", "Momentum", ADA, beta=0.1, mode="standard", norm_coefficient=0.0)],
       2, [TRN + "Momentum)", "attribute 'alpha' (a float) is required"], "Momentum without alpha")
expect(["run", optimizer("momentum_mode_int", "Momentum", ADA, alpha=0.9, beta=0.1, norm_coefficient=0.0, mode=1)],
       2, [TRN + "Momentum)", "attribute 'mode' must be a string"], "Momentum mode as an int")
expect(["run", optimizer("adagrad_ok", "Adagrad", ADA, epsilon=1e-3), "--iters", "0"], 0, [], "Adagrad good")

# rlx run's generated inputs for BERT-like names: token_type_ids were
# random in [0, 10), so a 2-row type embedding failed on the CPU (and gave
# zeros on the GPU), and masks of 0..9 made NaNs; now as rlx bench: 1 / 0
bert_like = save("bert_like_inputs", [h.make_node("Gather", ["emb", "token_type_ids"], ["y"], name="type_emb"),
                                      h.make_node("Cast", ["attention_mask"], ["m"], name="cm", to=T.FLOAT)],
                 [fvi("token_type_ids", [1, 4], T.INT64), fvi("attention_mask", [1, 4], T.INT64)],
                 [fvi("y", None), fvi("m", None)], [h.make_tensor("emb", T.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])])
p = expect(["run", bert_like, "--iters", "0", "--output-dir", os.path.join(TMP, "bert_like")], 0, [],
           "rlx run of BERT-like inputs")
if p.returncode == 0:
    C.check(np.array_equal(np.load(os.path.join(TMP, "bert_like", "y.npy")), np.tile([1.0, 2.0, 3.0], (1, 4, 1))),
            "rlx run: token_type_ids are not all 0")
    C.check(np.array_equal(np.load(os.path.join(TMP, "bert_like", "m.npy")), np.ones((1, 4))),
            "rlx run: attention_mask is not all 1")

# a sequence of tensors of different element types (invalid ONNX) loaded,
# and SequenceAt returned an i64 where the graph declares f32
mixed = save("seq_mixed", [h.make_node("SequenceConstruct", ["a", "b"], ["s"], name="mk"),
                           h.make_node("SequenceAt", ["s", "p"], ["y"], name="at")],
             [fvi("a", [2]), fvi("b", [2], T.INT64)], [fvi("y", [2])], [h.make_tensor("p", T.INT64, [], [1])])
expect(["run", mixed], 2, ["node 'mk' (SequenceConstruct)", "'b' has element type i64, but 'a' has f32"],
       "SequenceConstruct of f32 and i64")
mixed = save("seq_insert_mixed", [h.make_node("SequenceConstruct", ["a"], ["s"], name="mk"),
                                  h.make_node("SequenceInsert", ["s", "b"], ["t"], name="ins"),
                                  h.make_node("SequenceLength", ["t"], ["y"], name="len")],
             [fvi("a", [2]), fvi("b", [2], T.INT64)], [fvi("y", [], T.INT64)])
expect(["run", mixed], 2, ["node 'ins' (SequenceInsert)", "share one element type"], "SequenceInsert of an i64")

# ---------------------------------------------------------------- .npy inputs
huge = npy_raw("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }\n", b"\0" * 16)
expect(["run", good, "--input", "x=" + huge], 2, ["huge.npy", "truncated .npy data", "needs 40000000000 bytes"],
       ".npy claiming 40 GB")
fo = npy_raw("fo.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }\n", b"\0" * 24)
expect(["run", good, "--input", "x=" + fo], 2, ["fo.npy", "fortran_order"], ".npy fortran_order Maybe")
x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
np.save(os.path.join(TMP, "x.npy"), x)
p = expect(["run", good, "--input", "x=" + os.path.join(TMP, "x.npy"), "--output-dir", os.path.join(TMP, "out"),
            "--iters", "0"], 0, [], "rlx run with a good .npy")
y = np.load(os.path.join(TMP, "out", "y.npy"))
C.check(np.array_equal(y, np.maximum(x, 0)), "rlx run Relu output differs from numpy")
# np.save of a transposed array writes Fortran order, of a '>f4' array
# big-endian data: both read as np.load reads them (both were refused)
for tag, arr in (("xT", x.T.copy().T), ("xbe", x.astype(">f4"))):  # x.T.copy().T: [2, 3], F-contiguous
    np.save(os.path.join(TMP, tag + ".npy"), arr)
    expect(["run", good, "--input", "x=" + os.path.join(TMP, tag + ".npy"), "--output-dir",
            os.path.join(TMP, "out_" + tag), "--iters", "0"], 0, [], "rlx run with " + tag)
    y = np.load(os.path.join(TMP, "out_" + tag, "y.npy"))
    C.check(np.array_equal(y, np.maximum(x, 0)), "rlx run of %s: Relu output differs from numpy" % tag)

# ---------------------------------------------------------------- command line
notdir = os.path.join(TMP, "a_file")
open(notdir, "w").close()
p = expect(["run", good, "--output-dir", os.path.join(notdir, "sub"), "--iters", "0"], 1,
           ["cannot write to the output directory", "Not a directory"], "--output-dir under a file")
C.check("timings:" not in p.stdout, "--output-dir that cannot be written: the model ran first")
root = os.path.join(R.ROOT, "third_party", "onnx", "backend-test-data")
expect(["conformance", TMP], 2, ["no tests found"], "conformance of a folder without tests")
expect(["conformance", TMP, "--device", "tpu"], 2, ["bad device 'tpu'"], "conformance --device tpu")
expect(["conformance", TMP, "--suite", "ode"], 2, ["unknown suite 'ode'"], "conformance --suite ode")
# a device listed twice ran every test twice and listed it twice (exit 0)
expect(["conformance", TMP, "--device", "cpu,gpu,cpu"], 2, ["names 'cpu' twice"], "conformance --device cpu,gpu,cpu")
expect(["conformance", TMP, "--device"], 2, ["--device needs a value"], "conformance --device without a value")
if os.path.isdir(root):
    expect(["conformance", root, "--suite", "node", "--device", "cpu", "--filter", "no_such_test_zz"], 2,
           ["matches --filter"], "conformance --filter matching nothing")

# ---------------------------------------------------------------- environment
expect(["run", good, "--iters", "0"], 2, ["RLX_DISABLE_PASSES", "'fuse_elementwse' is not a pass"],
       "RLX_DISABLE_PASSES typo", env={"RLX_DISABLE_PASSES": "fuse_activation,fuse_elementwse"})
expect(["run", good, "--iters", "0"], 0, [], "RLX_DISABLE_PASSES ok", env={"RLX_DISABLE_PASSES": "cse,fuse_elementwise"})
# thread and spin counts that were ignored (atoi: "abc" and "-1" gave the
# default, "3x" gave 3) are refused, naming the variable; 0 and huge are fine
for var, val in (("RLX_NUM_THREADS", "abc"), ("RLX_NUM_THREADS", "-1"), ("RLX_NUM_THREADS", "3x"),
                 ("RLX_POOL_SPIN_US", "-5")):
    # named as the session's failure: the generated inputs' limit check once
    # resolved every variable first and said "cannot create input 'x'"
    expect(["run", good, "--iters", "0"], 2, ["%s='%s'" % (var, val), "cannot create a session"], "%s=%s" % (var, val),
           env={var: val})
for val in ("0", "1", "100000"):
    expect(["run", good, "--iters", "0"], 0, [], "RLX_NUM_THREADS=" + val, env={"RLX_NUM_THREADS": val})
rc, so, se = R.run([RLX, "devices"], timeout=120)
have_gpu = rc == 0 and "gpu:0" in so
if have_gpu:
    expect(["run", good, "--device", "gpu", "--iters", "0"], 2, ["RLX_MAX_BINDING_BYTES='-1'"],
           "RLX_MAX_BINDING_BYTES=-1", env={"RLX_MAX_BINDING_BYTES": "-1"})
    # GPU knobs whose bad values were silently replaced by defaults
    for var, val in (("RLX_GPU_SPIN_US", "-1"), ("RLX_GPU_SPIN_US", "fast"), ("RLX_GPU_SPIN_US", "99999999999"),
                     ("RLX_ATTENTION_TILE", "3x3"), ("RLX_ATTENTION_TILE", "16"), ("RLX_ATTENTION_KERNEL", "v3")):
        expect(["run", good, "--device", "gpu", "--iters", "0"], 2, ["%s='%s'" % (var, val)], "%s=%s" % (var, val),
               env={var: val})
    expect(["run", good, "--device", "gpu", "--iters", "1"], 0, [], "RLX_GPU_SPIN_US=0 RLX_GPU_PRERECORD=0",
           env={"RLX_GPU_SPIN_US": "0", "RLX_GPU_PRERECORD": "0"})

# ---------------------------------------------------------------- ocr_det
if os.path.exists(OCR):
    expect(["--model", good, "--image", TMP, "--device", "cpu"], 2, ["Is a directory"], "ocr_det --image FOLDER",
           exe=OCR)
    expect(["--model", good, "--image", huge, "--device", "cpu"], 2, ["not a PNG file"], "ocr_det --image NPY",
           exe=OCR)

# If's cond and Loop's M and cond of other than one element: a Loop read element 0 of an empty cond, fed or
# computed by its body (past the end of the tensor; it ran as if false), and a constant cond or M of two
# elements failed only when the plan ran, as RLX_ERR_INVALID_ARGUMENT; now the load refuses constants
# (RLX_ERR_INVALID_MODEL), a plan for a fed shape the caller's (RLX_ERR_INVALID_ARGUMENT), a body's the run.
one_t = h.make_tensor("one", T.FLOAT, [1], [1.0])
lbody = h.make_graph([h.make_node("Identity", ["ci"], ["co"]), h.make_node("Add", ["vi", "one"], ["vo"])], "lb",
                     [fvi("i", [], T.INT64), fvi("ci", [], T.BOOL), fvi("vi", [1])], [fvi("co", [], T.BOOL),
                                                                                      fvi("vo", [1])], [one_t])
v0 = h.make_tensor("v0", T.FLOAT, [1], [0.0])
m3 = h.make_tensor("m", T.INT64, [], [3])
loop_fed = save("loop_cond_fed", [h.make_node("Loop", ["m", "c", "v0"], ["v"], name="lp", body=lbody)],
                [fvi("c", ["n"], T.BOOL)], [fvi("v", None)], [m3, v0])
expect(["run", loop_fed, "--shape", "c=0", "--iters", "0"], 2,
       ["RLX_ERR_INVALID_ARGUMENT", "input shapes c=[0]", "node 'lp' (Loop): cond 'c' must have one element, got shape [0]"],
       "Loop fed cond of 0 elements")
loop_const = save("loop_m_const", [h.make_node("Loop", ["m2", "", "v0"], ["v"], name="lp", body=lbody)], [],
                  [fvi("v", None)], [h.make_tensor("m2", T.INT64, [2], [2, 3]), v0])
expect(["info", loop_const], 2, ["RLX_ERR_INVALID_MODEL", "node 'lp' (Loop): M 'm2' must have one element, got shape [2]"],
       "Loop constant M of 2 elements")
ebody = h.make_graph([h.make_node("ConstantOfShape", ["z"], ["co"], value=h.make_tensor("t", T.BOOL, [1], [1])),
                      h.make_node("Add", ["vi", "one"], ["vo"])], "eb",
                     [fvi("i", [], T.INT64), fvi("ci", [], T.BOOL), fvi("vi", [1])], [fvi("co", None, T.BOOL),
                                                                                      fvi("vo", [1])],
                     [one_t, h.make_tensor("z", T.INT64, [1], [0])])
loop_body = save("loop_cond_body", [h.make_node("Loop", ["m", "c1", "v0"], ["v"], name="lp", body=ebody)],
                 [fvi("x", [1])], [fvi("v", None)], [m3, v0, h.make_tensor("c1", T.BOOL, [], [1])])
expect(["run", loop_body, "--iters", "0"], 2,
       ["node 'lp' (Loop): iteration 0: the body's condition output must have one element, got shape [0]"],
       "Loop body cond of 0 elements")
then_g = h.make_graph([h.make_node("Identity", ["one"], ["a"])], "then", [], [fvi("a", [1])], [one_t])
if_const = save("if_cond_const", [h.make_node("If", ["c2"], ["y"], name="if1", then_branch=then_g,
                                              else_branch=then_g)], [], [fvi("y", None)],
                [h.make_tensor("c2", T.BOOL, [2], [1, 0])])
expect(["info", if_const], 2, ["RLX_ERR_INVALID_MODEL", "node 'if1' (If): cond 'c2' must have one element, got shape [2]"],
       "If constant cond of 2 elements")

# QLinearMatMul's y_scale / y_zero_point with no element: found only when the kernel ran, as the model's fault
# (RLX_ERR_INVALID_MODEL) even where the caller fed it; now the load (a constant's) or the plan for the fed shapes
qm_ins = [fvi("a", [2, 3], T.UINT8), fvi("as", [], T.FLOAT), fvi("az", [], T.UINT8), fvi("b", [3, 2], T.UINT8),
          fvi("bs", [], T.FLOAT), fvi("bz", [], T.UINT8), fvi("ys", [], T.FLOAT)]
qm_node = h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
qm_const = save("qmm_yzp_empty", [qm_node], qm_ins, [fvi("y", None, T.UINT8)], [h.make_tensor("yz", T.UINT8, [0], [])])
expect(["info", qm_const], 2, ["RLX_ERR_INVALID_MODEL", "node 'qmm' (QLinearMatMul): y_zero_point has shape [0]; it must "
                               "have one element"], "QLinearMatMul constant y_zero_point of 0 elements")
qm_fed = save("qmm_yzp_fed", [qm_node], qm_ins + [fvi("yz", ["n"], T.UINT8)], [fvi("y", None, T.UINT8)])
expect(["run", qm_fed, "--shape", "yz=0", "--iters", "0"], 2,
       ["RLX_ERR_INVALID_ARGUMENT", "input shapes", "node 'qmm' (QLinearMatMul): y_zero_point has shape [0]"],
       "QLinearMatMul fed y_zero_point of 0 elements")

# ---------------------------------------------------------------- bindings
# A sanitizer build's librlx.so cannot be loaded into an uninstrumented
# Python; the checks above cover it through the programs.
why = R.bindings_unavailable()
if why:
    print("note: Python binding checks skipped (%s)" % why)
    C.done()
rlx = R.import_rlx()


def raises(fn, exc, needle, what):
    try:
        fn()
    except exc as e:
        C.check(needle in str(e), "%s: %s does not mention %r" % (what, e, needle))
        return
    except Exception as e:  # noqa: BLE001
        C.check(False, "%s: raised %s: %s, want %s" % (what, type(e).__name__, e, exc.__name__))
        return
    C.check(False, "%s: no exception, want %s" % (what, exc.__name__))


# a 0-d input stays 0-d
scal = save("scalar", [h.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", [])], [fvi("y", [])])
s = rlx.Session(rlx.Model(scal))
for v in (np.float32(-2.5), np.array(3.25, np.float32)):
    out = s.run({"x": v})
    C.check(out[0].shape == () and out[0] == max(float(v), 0.0), "0-d input %r gave %r" % (v, out))
# bfloat16 outputs come back as float32, exactly (values exact in bf16)
castm = save("cast_bf16", [h.make_node("Cast", ["x"], ["y"], name="c", to=T.BFLOAT16)], [fvi("x", [4])],
             [fvi("y", [4], T.BFLOAT16)])
xv = np.array([1.5, -2.0, 3.25, -0.125], np.float32)
out = rlx.Session(rlx.Model(castm)).run({"x": xv})
C.check(out[0].dtype == np.float32 and np.array_equal(out[0], xv), "bf16 output: %r" % (out,))
# big-endian and non-contiguous arrays are converted
s = rlx.Session(rlx.Model(good))
xb = np.random.default_rng(3).standard_normal((2, 3)).astype(">f4")
C.check(np.array_equal(s.run({"x": xb})[0], np.maximum(xb.astype(np.float32), 0)), "big-endian input")
xs = np.random.default_rng(4).standard_normal((2, 6)).astype(np.float32)[:, ::2]
C.check(np.array_equal(s.run({"x": xs})[0], np.maximum(xs, 0)), "strided input")
# wrong Python types and NULs are refused before C sees them
raises(lambda: rlx.Model(good + "\0junk"), ValueError, "NUL", "path with a NUL")
raises(lambda: s.run({"x\0y": x}), ValueError, "NUL", "input name with a NUL")
raises(lambda: s.run([x]), TypeError, "dict", "feeds as a list")
# device None is the C API's NULL: the CPU
C.check(np.array_equal(rlx.Session(rlx.Model(good), device=None).run({"x": xs})[0], np.maximum(xs, 0)),
        "device None runs on the CPU")
raises(lambda: rlx.Session(None), TypeError, "rlx.Model", "model None")
raises(lambda: rlx.Session(rlx.Model(good), device="tpu"), rlx.Error, "unknown device 'tpu'", "device tpu")
raises(lambda: s.run({"x": x.astype(np.float64)}), rlx.Error, "the model expects f32", "f64 input")
raises(lambda: rlx.Model(empty), rlx.Error, "is empty", "empty model")
C.check([f[0] for f in rlx._SessionOptions._fields_] == ["device", "gpu_conv_direct", "gpu_f16"],
        "_SessionOptions does not match rlx_session_options")

# one session, four threads, batches of different sizes (several plans)
dyn = save("relu_dyn", [h.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", ["batch", 3])],
           [fvi("y", ["batch", 3])])
for dev in ["cpu"] + (["gpu"] if have_gpu else []):
    sess = rlx.Session(rlx.Model(dyn), device=dev)
    bad = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(40):
            xi = rng.standard_normal((int(rng.integers(1, 8)), 3)).astype(np.float32)
            try:
                yi = sess.run({"x": xi})[0]
            except Exception as e:  # noqa: BLE001
                bad.append(repr(e))
                continue
            if not np.array_equal(yi, np.maximum(xi, 0)):
                bad.append("wrong values")

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    C.check(not bad, "%s session shared by 4 threads: %d bad runs (%s)" % (dev, len(bad), bad[:2]))

C.done()
