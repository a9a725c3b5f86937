"""Limits and load-time validation (issue 15): models and files from
strangers must fail fast with a clear error, before memory is committed.

- limits: a ~80-byte model that Expands a scalar to [2^32] f32 committed
  about 19 GB before failing; a model declaring a [2^31] f32 input made
  `rlx run` spend 2 minutes and 8 GB building random data (and `rlx info
  --plan` allocate its inputs before the limit refused the plan). Both must now
  fail in well under a second, naming limits.max_tensor_bytes and how to
  raise it, with a small peak RSS; the --max-*-bytes flags and
  limits.max_model_bytes work; the Python options={} reach them.
- validation: a node consuming its own output inside a Loop body or an If
  branch reached RLX_ERR_INTERNAL at run time; Pad-13 without its pads input
  too ("eager evaluation left output 'y' uncomputed").
- messages: a node name holding terminal escapes reached stderr raw; bench
  --json wrote invalid UTF-8 into its JSON.
- .npy: trailing bytes after the data were accepted silently."""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

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
C = R.Checker("test_limits")
TMP = tempfile.mkdtemp(prefix="rlx_limits_")
LIMIT_WORDS = ("limits.max_tensor_bytes", "--max-tensor-bytes", "RLX_MAX_TENSOR_BYTES", "nothing was allocated")


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


def fvi(name, dims, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, dims)


def expect(args, rc_want, needles, what, env=None, max_s=None):
    e = dict(os.environ)
    e.pop("RLX_MAX_TENSOR_BYTES", None)
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run([RLX, *args], capture_output=True, text=True, errors="replace", timeout=300, env=e)
    dt = time.monotonic() - t0
    rc, se = p.returncode, p.stderr
    C.check(rc == rc_want, "%s: exit %d, want %d; stderr: %s" % (what, rc, rc_want, se.strip()[-600:]))
    for n in needles:
        C.check(n in se, "%s: stderr does not mention %r: %s" % (what, n, se.strip()[-600:]))
    C.check("RLX_ERR_INTERNAL" not in se, "%s: an internal error from a model file: %s" % (what, se[-600:]))
    if max_s is not None:
        C.check(dt < max_s, "%s: took %.1f s, want < %.0f s" % (what, dt, max_s))
    return p


def max_rss_children_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


# ---------------------------------------------------------------- limits
# first, so that the children's peak RSS below is theirs alone
big = save("expand_2p32", [h.make_node("Expand", ["x", "s"], ["y"], name="exp")], [], [fvi("y", None)],
           [h.make_tensor("x", T.FLOAT, [], [1.0]), h.make_tensor("s", T.INT64, [1], [2**32])])
C.check(os.path.getsize(big) < 300, "the Expand model is tiny (%d bytes)" % os.path.getsize(big))
expect(["run", big, "--iters", "0", "--warmup", "0"], 1,
       ["node 'exp' (Expand)", "output 'y' (f32 [4294967296])", "17179869184 bytes"] + list(LIMIT_WORDS),
       "Expand of a scalar to [2^32]", max_s=10)
# a Resize to absurd sizes after a DequantizeLinear: fuse_qdq_ew commutes a nearest Resize before the
# DequantizeLinear (which then writes the Resize's output); the error names the Resize, the model's node,
# on both devices and with the pass off alike (it named the DequantizeLinear 'dq_rs')
dqrs = save("dq_resize_huge", [h.make_node("DequantizeLinear", ["q", "qs", "qz"], ["d"], name="dq_rs"),
                               h.make_node("Resize", ["d", "", "sc"], ["r"], mode="nearest", name="rs_huge")],
            [fvi("q", [1, 3, 8, 8], T.UINT8)], [fvi("r", None)],
            [h.make_tensor("qs", T.FLOAT, [], [0.1]), h.make_tensor("qz", T.UINT8, [], [128]),
             h.make_tensor("sc", T.FLOAT, [4], [1, 1, 1e6, 1e6])], opset=19)
for dev in ("cpu", "gpu"):
    for extra in ([], ["--option", "passes.disable=fuse_qdq_ew"]):
        expect(["run", dqrs, "--iters", "0", "--warmup", "0", "--device", dev] + extra, 1,
               ["node 'rs_huge' (Resize): output 'r' (f32 [1,3,8000000,8000000])"] + list(LIMIT_WORDS),
               "Resize of a DequantizeLinear to [1,3,8e6,8e6] on %s %s" % (dev, " ".join(extra)), max_s=10)
# the QDQ convolutions, MatMuls and Gemms: fuse_qdq_conv, which runs before the fold and so before the
# pipeline's check, rewrites DQ -> Conv -> Q as QLinearConv (MatMul: QLinearMatMul, Gemm: its integer form);
# a Conv output over the limit was named as "value 'c'" (orphaned, no node), a dequantized input as
# "value 'xd'": now their nodes, on both devices, with the pass on or off alike
rng = np.random.default_rng(2026)
QP = [h.make_tensor("xs", T.FLOAT, [], [0.05]), h.make_tensor("xz", T.UINT8, [], [128]),
      h.make_tensor("ws", T.FLOAT, [], [0.02]), h.make_tensor("wz", T.INT8, [], [0]),
      h.make_tensor("ys", T.FLOAT, [], [0.1]), h.make_tensor("yz", T.UINT8, [], [128])]


def qdq_model(name, op, xdims, wdims, attrs):
    w = onnx.numpy_helper.from_array(rng.integers(-100, 100, wdims).astype(np.int8), "w")
    nodes = [h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
             h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dq_w"),
             h.make_node(op, ["xd", "wd"], ["c"], name="my_" + op.lower(), **attrs),
             h.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"], name="q_y")]
    return save(name, nodes, [fvi("xq", xdims, T.UINT8)], [fvi("y", None, T.UINT8)], [w] + QP)


QDQ = [(qdq_model("qdq_conv", "Conv", [1, 3, 64, 64], [8, 3, 3, 3], {"pads": [1, 1, 1, 1]}), "Conv",
        "f32 [1,8,64,64]", 8 * 64 * 64 * 4, "f32 [1,3,64,64]", 3 * 64 * 64 * 4),
       (qdq_model("qdq_matmul", "MatMul", [64, 32], [32, 48], {}), "MatMul", "f32 [64,48]", 64 * 48 * 4,
        "f32 [64,32]", 64 * 32 * 4),
       (qdq_model("qdq_gemm", "Gemm", [64, 32], [48, 32], {"transB": 1}), "Gemm", "f32 [64,48]", 64 * 48 * 4,
        "f32 [64,32]", 64 * 32 * 4)]
for path, op, cshape, cbytes, xshape, xbytes in QDQ:
    for dev in ("cpu", "gpu"):
        for extra in ([], ["--option", "passes.disable=fuse_qdq"]):
            how = "QDQ %s on %s %s" % (op, dev, " ".join(extra))
            base = ["run", path, "--iters", "0", "--warmup", "0", "--device", dev] + extra
            expect(base + ["--max-tensor-bytes", str(cbytes - 1)], 1,
                   ["node 'my_%s' (%s): output 'c' (%s)" % (op.lower(), op, cshape)] + list(LIMIT_WORDS),
                   how + ": its output over the limit", max_s=10)
            expect(base + ["--max-tensor-bytes", str(xbytes - 1)], 1,
                   ["node 'dq_x' (DequantizeLinear): output 'xd' (%s)" % xshape] + list(LIMIT_WORDS),
                   how + ": the dequantized input over the limit", max_s=10)
            expect(base + ["--max-tensor-bytes", str(cbytes)], 0, [], how + ": at the limit", max_s=10)
# with a symbolic batch (bound to 1 by rlx run): the bound shape reaches the Conv's output only when the
# graph is inferred, which fuse_qdq_conv now does first (the check saw [N,8,64,64] and let it pass)
qdyn = qdq_model("qdq_conv_dyn", "Conv", ["N", 3, 64, 64], [8, 3, 3, 3], {"pads": [1, 1, 1, 1]})
for dev in ("cpu", "gpu"):
    expect(["run", qdyn, "--iters", "0", "--warmup", "0", "--device", dev, "--max-tensor-bytes", str(8 * 64 * 64 * 4 - 1)],
           1, ["node 'my_conv' (Conv): output 'c' (f32 [1,8,64,64])"] + list(LIMIT_WORDS),
           "QDQ Conv with a symbolic batch on %s" % dev, max_s=10)
# an f16 chain on the CPU: widen_f16 computes it in f32, fuse_elementwise then makes the whole chain (with
# its Casts) one f16 -> f16 FusedElementwise, so no f32 value is allocated; the check after the passes
# refused the orphaned f32 'r' as "value 'r'" (no node, and never allocated); unfused, 'r' is allocated
# in f32 and is named with its node
f16c = save("f16_chain", [h.make_node("Relu", ["x"], ["r"], name="my_relu"),
                          h.make_node("Neg", ["r"], ["y"], name="my_neg")],
            [fvi("x", [1024], T.FLOAT16)], [fvi("y", None, T.FLOAT16)])
expect(["run", f16c, "--iters", "0", "--warmup", "0", "--device", "cpu", "--max-tensor-bytes", "3000"], 0, [],
       "a fused f16 chain whose widened values exceed the limit", max_s=10)
expect(["run", f16c, "--iters", "0", "--warmup", "0", "--device", "cpu", "--max-tensor-bytes", "3000",
        "--option", "passes.disable=fuse_elementwise"], 1,
       ["node 'my_relu' (Relu): output 'r' (f32 [1024])"] + list(LIMIT_WORDS),
       "an unfused f16 chain whose widened values exceed the limit", max_s=10)
# a widened copy that the model has no value for: widen_f16's Cast of the f16 input to f32 before a
# ReduceSum is named after the model's value and the pass (it was "node 'Cast_1' (Cast)")
f16r = save("f16_reduce", [h.make_node("ReduceSum", ["x"], ["y"], name="my_rsum", keepdims=0)],
            [fvi("x", [1024], T.FLOAT16)], [fvi("y", None, T.FLOAT16)])
expect(["run", f16r, "--iters", "0", "--warmup", "0", "--device", "cpu", "--max-tensor-bytes", "3000"], 1,
       ["node 'x/widen_f16' (Cast): output", "(f32 [1024])"] + list(LIMIT_WORDS),
       "the f32 copy of an f16 input over the limit", max_s=10)
bigin = save("input_2p31", [h.make_node("Relu", ["a"], ["b"], name="r")], [fvi("a", [2**31])], [fvi("b", [2**31])])
expect(["run", bigin, "--iters", "0"], 1, ["generated input 'a' (f32 [2147483648])"] + list(LIMIT_WORDS),
       "rlx run with a declared [2^31] input", max_s=10)
# info --plan builds its inputs through the same check: refused before they are allocated, by the default limit,
# and by --max-tensor-bytes for a --shape
expect(["info", bigin, "--plan"], 1, ["generated input 'a' (f32 [2147483648])"] + list(LIMIT_WORDS),
       "rlx info --plan with a declared [2^31] input", max_s=10)
symin = save("input_sym", [h.make_node("Relu", ["a"], ["b"], name="r")], [fvi("a", ["n", 2])], [fvi("b", ["n", 2])])
expect(["info", symin, "--plan", "--shape", "a=20000000x2", "--max-tensor-bytes", "1M"], 1,
       ["generated input 'a' (f32 [20000000,2])", "limits.max_tensor_bytes = 1048576 bytes"],
       "rlx info --plan --shape over --max-tensor-bytes", max_s=10)
# the memory plan of shapes larger than the limits' defaults, the limits off: planned, nothing allocated (the
# input, 2 GiB, and the 4 GiB arena were allocated and zeroed; rlx_session_prepare's shapes-only inputs and
# the option plan.defer_backend)
p = expect(["info", symin, "--plan", "--shape", "a=268435456x2", "--max-tensor-bytes", "0", "--max-arena-bytes", "0"],
           0, [], "rlx info --plan of a 2 GiB input", max_s=20)
C.check("[268435456,2]" in p.stdout and "4 GiB" in p.stdout, "the plan's tensors and arena: %s" % p.stdout[-800:])
rss = max_rss_children_mb()
C.check(rss < 400, "peak RSS of the refused runs and the plan: %.0f MB, want < 400 MB (nothing committed)" % rss)

# an explicit limit, by flag, by --option and by variable; suffixes
mid = save("expand_1m", [h.make_node("Expand", ["x", "s"], ["y"], name="exp")], [], [fvi("y", None)],
           [h.make_tensor("x", T.FLOAT, [], [1.0]), h.make_tensor("s", T.INT64, [1], [1 << 18])])
expect(["run", mid, "--iters", "0", "--max-tensor-bytes", "512K"], 1,
       ["1048576 bytes", "limits.max_tensor_bytes = 524288 bytes"], "--max-tensor-bytes 512K")
expect(["run", mid, "--iters", "0", "--option", "limits.max_tensor_bytes=1M"], 0, [], "limit exactly the size")
expect(["run", mid, "--iters", "0"], 1, ["= 1000 bytes"], "RLX_MAX_TENSOR_BYTES", env={"RLX_MAX_TENSOR_BYTES": "1000"})
expect(["run", mid, "--iters", "0", "--max-tensor-bytes", "0"], 0, [], "0: no limit",
       env={"RLX_MAX_TENSOR_BYTES": "1000"})
expect(["run", mid, "--max-tensor-bytes", "12Q"], 2, ["limits.max_tensor_bytes", "suffixes K, M, G, T"],
       "a bad suffix")
# the arena: a graph input feeding an Expand (not foldable) plans its output in the arena
arena = save("expand_arena", [h.make_node("Expand", ["x", "s"], ["y"], name="exp")], [fvi("x", [1])],
             [fvi("y", None)], [h.make_tensor("s", T.INT64, [1], [1 << 18])])
expect(["run", arena, "--iters", "0", "--max-arena-bytes", "64K"], 1,
       ["activation arena", "limits.max_arena_bytes = 65536 bytes", "--max-arena-bytes"], "--max-arena-bytes")
expect(["run", mid, "--max-model-bytes", "16"], 1, ["the model file", "limits.max_model_bytes = 16 bytes"],
       "--max-model-bytes")
# com.microsoft.MatMulNBits with 8-bit weights: the import dequantizes B (K N bytes) into an f32 K x N
# constant, 4x the file's bytes (8x with 4-bit weights and float zero points); that constant went past
# limits.max_tensor_bytes unchecked (B of 1 MiB passed a 2 MiB limit, the f32 matrix of 4 MiB was made)
nb_k = nb_n = 1024
nb8 = h.make_model(h.make_graph(
    [h.make_node("MatMulNBits", ["a", "B", "S"], ["y"], name="nb8", domain="com.microsoft", K=nb_k, N=nb_n, bits=8,
                 block_size=32)], "nb8", [fvi("a", [1, nb_k])], [fvi("y", [1, nb_n])],
    [h.make_tensor("B", T.UINT8, [nb_n, nb_k // 32, 32], np.full(nb_k * nb_n, 0x81, np.uint8).tobytes(), raw=True),
     h.make_tensor("S", T.FLOAT, [nb_n * nb_k // 32], np.full(nb_n * nb_k // 32, 0.01, np.float32).tobytes(), raw=True)]),
    opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.microsoft", 1)])
nb8.ir_version = 8
nb8_path = os.path.join(TMP, "nb8.onnx")
onnx.save(nb8, nb8_path)
expect(["run", nb8_path, "--iters", "0", "--max-tensor-bytes", "2M"], 1,
       ["node 'nb8' (com.microsoft.MatMulNBits): B dequantized to f32 [1024,1024]", "4194304 bytes",
        "limits.max_tensor_bytes = 2097152 bytes"], "MatMulNBits bits=8 over --max-tensor-bytes")
expect(["run", nb8_path, "--iters", "0", "--max-tensor-bytes", "4M"], 0, [], "MatMulNBits bits=8 at the limit")

# Python: options={} reach the same checks
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:
    import rlx as rlxpy
    m = rlxpy.Model(mid)
    s = rlxpy.Session(m, options={"limits.max_tensor_bytes": "4K"})
    try:
        s.run({})
        C.check(False, "python: a run above limits.max_tensor_bytes succeeded")
    except rlxpy.Error as e:
        C.check("limits.max_tensor_bytes" in str(e), "python: the error names the limit: %s" % e)
except (ImportError, OSError) as e:
    print("note: python bindings not usable here (%s)" % e)

# ---------------------------------------------------------------- validation
body = h.make_graph([h.make_node("Add", ["v_in", "v_out"], ["v_out"], name="selfadd"),
                     h.make_node("Identity", ["c_in"], ["c_out"], name="c")], "body",
                    [fvi("i", [], T.INT64), fvi("c_in", [], T.BOOL), fvi("v_in", [1])],
                    [fvi("c_out", [], T.BOOL), fvi("v_out", [1])])
loop = save("loop_self", [h.make_node("Loop", ["M", "", "v0"], ["vf"], name="loop", body=body)], [fvi("v0", [1])],
            [fvi("vf", None)], [h.make_tensor("M", T.INT64, [], [3])])
for verb in ("info", "run"):
    expect([verb, loop], 2, ["node 'loop' (Loop)", "subgraph 'body'", "node 'selfadd' (Add)", "cycle"],
           "%s: a Loop body node consuming its own output" % verb)
thn = h.make_graph([h.make_node("Add", ["a", "t_out"], ["t_out"], name="selfadd_then")], "then", [],
                   [fvi("t_out", [1])])
els = h.make_graph([h.make_node("Identity", ["a"], ["e_out"], name="id_else")], "else", [], [fvi("e_out", [1])])
iff = save("if_self", [h.make_node("If", ["c"], ["y"], name="if0", then_branch=thn, else_branch=els)],
           [fvi("c", [], T.BOOL), fvi("a", [1])], [fvi("y", None)])
expect(["info", iff], 2, ["node 'if0' (If)", "subgraph 'then_branch'", "node 'selfadd_then' (Add)", "cycle"],
       "an If branch node consuming its own output")
pad = save("pad13_nopads", [h.make_node("Pad", ["a"], ["y"], name="pad0")], [fvi("a", [2])], [fvi("y", None)])
expect(["run", pad], 2, ["node 'pad0' (Pad)", "has 1 inputs", "(version 13)"], "Pad-13 without pads")
pad2 = save("pad13_emptypads", [h.make_node("Pad", ["a", ""], ["y"], name="pad1")], [fvi("a", [2])],
            [fvi("y", None)])
expect(["run", pad2], 2, ["node 'pad1' (Pad)", "required input 1 is missing"], "Pad-13 with pads ''")
sl = save("slice10_noends", [h.make_node("Slice", ["a", "st"], ["y"], name="sl")], [fvi("a", [4])], [fvi("y", None)],
          [h.make_tensor("st", T.INT64, [1], [1])])
expect(["run", sl], 2, ["node 'sl' (Slice)", "has 2 inputs"], "Slice-13 without ends")

# ---------------------------------------------------------------- messages
EVIL = "\x1b]0;pwned\x07\x1b[2J"
bad = save("escape_bad", [h.make_node("Relu", ["a", "a"], ["b"], name=EVIL)], [fvi("a", [2])], [fvi("b", [2])])
p = expect(["run", bad], 2, ["node '\\x1b]0;pwned\\x07\\x1b[2J' (Relu)"], "a node name with terminal escapes")
C.check("\x1b" not in p.stderr and "\x07" not in p.stderr, "escapes reached stderr raw: %r" % p.stderr[-300:])
# invalid UTF-8 in a value name, through bench --json and the report
ok = save("escape_ok", [h.make_node("Relu", ["a"], ["b\x9b\x1b[31m"], name=EVIL)], [fvi("a", [2])],
          [fvi("b\x9b\x1b[31m", [2])])
r = subprocess.run([RLX, "run", ok, "--iters", "0", "--report"], capture_output=True, timeout=300)
C.check(r.returncode == 0 and b"\x1b" not in r.stdout + r.stderr, "run --report: raw ESC in the output: %r" % r.stderr)
p = subprocess.run([RLX, "bench", ok, "--json", "--iters", "1", "--warmup", "0"], capture_output=True, timeout=300)
C.check(p.returncode == 0, "bench --json: exit %d: %r" % (p.returncode, p.stderr[-300:]))
C.check(b"\x1b" not in p.stdout + p.stderr, "bench: raw ESC in the output")
try:
    json.loads(p.stdout.decode("utf-8"))
except (UnicodeDecodeError, ValueError) as e:
    C.check(False, "bench --json is not valid UTF-8 JSON: %s: %r" % (e, p.stdout[:300]))
C.check(b"b\\u009b\\x1b[31m" in r.stdout, "run: the output name is printed escaped: %r" % r.stdout[-300:])

# ---------------------------------------------------------------- .npy
x = np.arange(4, dtype=np.float32)
npy = os.path.join(TMP, "trail.npy")
np.save(npy, x)
with open(npy, "ab") as f:
    f.write(b"\0\0\0\0junk")
relu = save("relu", [h.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", [4])], [fvi("y", [4])])
expect(["run", relu, "--input", "x=" + npy, "--iters", "0"], 2, ["trail.npy", "8 bytes after the .npy data"],
       ".npy with trailing bytes")
np.save(npy, x)
expect(["run", relu, "--input", "x=" + npy, "--iters", "0"], 0, [], "the same .npy without them")

# ---------------------------------------------------------------- limits inside kernels and bodies
# outputs whose size only the kernel knows (NonZero, Unique), Loop scan
# outputs accumulating over iterations, and nodes of eager Loop bodies (which
# ran without the session's options before) are checked before allocation
nz = save("nonzero_big", [h.make_node("NonZero", ["x"], ["y"], name="nz")], [fvi("x", [1 << 16])],
          [fvi("y", None, T.INT64)])
expect(["run", nz, "--iters", "0", "--max-tensor-bytes", "256K"], 1,
       ["node 'nz' (NonZero)", "output 'y' (i64 [1,", "limits.max_tensor_bytes = 262144 bytes"],
       "NonZero output above the limit")
expect(["run", nz, "--iters", "0", "--max-tensor-bytes", "1M"], 0, [], "NonZero output within the limit")
uq = save("unique_big", [h.make_node("Unique", ["x"], ["u", "idx", "inv", "cnt"], name="uq", sorted=1)],
          [fvi("x", [1 << 16])], [fvi("u", None), fvi("idx", None, T.INT64), fvi("inv", None, T.INT64),
                                  fvi("cnt", None, T.INT64)], opset=11)
expect(["run", uq, "--iters", "0", "--max-tensor-bytes", "256K"], 1,
       ["node 'uq' (Unique)", "limits.max_tensor_bytes = 262144 bytes", "bytes"], "Unique outputs above the limit")
# Loop: 100 iterations each stacking a [4096] f32 scan item (16 KiB): 1.6 MB
lbody = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"], name="c"),
                      h.make_node("Identity", ["big"], ["item"], name="it")], "body",
                     [fvi("i", [], T.INT64), fvi("c_in", [], T.BOOL)], [fvi("c_out", [], T.BOOL), fvi("item", [4096])])
lscan = save("loop_scan", [h.make_node("Loop", ["M", ""], ["stacked"], name="loop", body=lbody)], [],
             [fvi("stacked", None)], [h.make_tensor("M", T.INT64, [], [100]),
                                      h.make_tensor("big", T.FLOAT, [4096], np.ones(4096, np.float32))])
expect(["run", lscan, "--iters", "0", "--max-tensor-bytes", "512K"], 1,
       ["node 'loop' (Loop)", "output 'stacked' (f32 [", "limits.max_tensor_bytes = 524288 bytes"],
       "Loop scan output growing above the limit")
expect(["run", lscan, "--iters", "0", "--max-tensor-bytes", "2M"], 0, [], "Loop scan output within the limit")
# an eager Loop body runs under the session's options: its Expand is checked
ebody = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"], name="c"),
                      h.make_node("Expand", ["one", "shp"], ["e"], name="bexp"),
                      h.make_node("ReduceSum", ["e"], ["v_out"], name="rs", keepdims=0)], "body",
                     [fvi("i", [], T.INT64), fvi("c_in", [], T.BOOL), fvi("v_in", [])],
                     [fvi("c_out", [], T.BOOL), fvi("v_out", [])])
eloop = save("loop_body_expand", [h.make_node("Loop", ["M", "", "v0"], ["vf"], name="loop", body=ebody)],
             [fvi("v0", [])], [fvi("vf", None)],
             [h.make_tensor("M", T.INT64, [], [2]), h.make_tensor("one", T.FLOAT, [], [1.0]),
              h.make_tensor("shp", T.INT64, [1], [1 << 18])])
expect(["run", eloop, "--iters", "0", "--max-tensor-bytes", "512K"], 1,
       ["node 'loop' (Loop)", "node 'bexp' (Expand)", "1048576 bytes", "limits.max_tensor_bytes = 524288 bytes"],
       "an Expand inside an eager Loop body above the limit")
expect(["run", eloop, "--iters", "0", "--max-tensor-bytes", "2M"], 0, [], "the Loop body within the limit")

# ---------------------------------------------------------------- initializers and external data
rng = np.random.default_rng(5)
w1 = rng.standard_normal((128, 128)).astype(np.float32)  # 64 KiB each
w2 = rng.standard_normal((128, 128)).astype(np.float32)
ext_nodes = [h.make_node("MatMul", ["x", "w1"], ["t"], name="mm1"), h.make_node("MatMul", ["t", "w2"], ["y"], name="mm2")]
ext_dir = os.path.join(TMP, "ext")
os.makedirs(ext_dir, exist_ok=True)


def save_external(name, location="w.bin", offsets=None, lengths=None):
    g = h.make_graph(ext_nodes, name, [fvi("x", [2, 128])], [fvi("y", None)],
                     [onnx.numpy_helper.from_array(w1, "w1"), onnx.numpy_helper.from_array(w2, "w2")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    blob = w1.tobytes() + w2.tobytes()
    with open(os.path.join(ext_dir, "w.bin"), "wb") as f:
        f.write(blob)
    for i, t in enumerate(m.graph.initializer):
        t.ClearField("raw_data")
        t.data_location = T.EXTERNAL
        off = (offsets or [0, 65536])[i]
        ln = (lengths or [65536, 65536])[i]
        for k, v in (("location", location), ("offset", str(off)), ("length", str(ln))):
            e = t.external_data.add()
            e.key, e.value = k, v
    path = os.path.join(ext_dir, name + ".onnx")
    onnx.save(m, path)
    return path


ext = save_external("ext_ok")
expect(["run", ext, "--iters", "0"], 0, [], "external data within the limits")
expect(["run", ext, "--iters", "0", "--max-model-bytes", "100K"], 1,
       ["external data", "tensor 'w2'", "131072 bytes", "limits.max_model_bytes = 102400 bytes"],
       "the sum of external data above limits.max_model_bytes")
expect(["run", ext, "--iters", "0", "--max-tensor-bytes", "32K"], 1,
       ["tensor 'w1'", "65536 bytes", "limits.max_tensor_bytes = 32768 bytes"],
       "an initializer above limits.max_tensor_bytes")
expect(["run", save_external("ext_far", offsets=[0, 1 << 20]), "--iters", "0"], 2,
       ["tensor 'w2'", "too short"], "external data offset beyond the file")
expect(["run", save_external("ext_len", lengths=[65536, 100]), "--iters", "0"], 2,
       ["tensor 'w1'" if False else "tensor 'w2'", "length is 100 bytes"], "external data length that is not the shape's")
expect(["run", save_external("ext_up", location="../w.bin"), "--iters", "0"], 2, ["'../w.bin' is refused"],
       "external data location with '..'")
expect(["run", save_external("ext_abs", location=os.path.join(ext_dir, "w.bin")), "--iters", "0"], 2,
       ["is refused"], "external data location that is absolute")
outside = os.path.join(TMP, "outside.bin")
with open(outside, "wb") as f:
    f.write(w1.tobytes() + w2.tobytes())
link = os.path.join(ext_dir, "link.bin")
if not os.path.lexists(link):
    os.symlink(outside, link)
expect(["run", save_external("ext_link", location="link.bin"), "--iters", "0"], 2,
       ["'link.bin' is refused", "symbolic link"], "external data through a symbolic link out of the folder")
# a store of blobs with the model and its data linked from a snapshot folder
# (as the Hugging Face cache lays them out) stays readable
blobs, snap = os.path.join(TMP, "blobs"), os.path.join(TMP, "snap")
os.makedirs(blobs, exist_ok=True)
os.makedirs(snap, exist_ok=True)
os.replace(save_external("ext_hf"), os.path.join(blobs, "m1"))
os.replace(os.path.join(ext_dir, "w.bin"), os.path.join(blobs, "d1"))
for src, dst in (("m1", "model.onnx"), ("d1", "w.bin")):
    if not os.path.lexists(os.path.join(snap, dst)):
        os.symlink(os.path.join(blobs, src), os.path.join(snap, dst))
expect(["run", os.path.join(snap, "model.onnx"), "--iters", "0"], 0, [],
       "model and external data linked from one store (Hugging Face cache layout)")

# ---------------------------------------------------------------- weights read once
# A model whose initializers (48 MiB) are embedded, with initializer fields
# interleaved with node fields (protobuf allows any order): outputs equal
# numpy's, and the peak RSS of `rlx run` stays near the weights (before: the
# file, protobuf-c's copy and the tensors existed at once, 3x).
nw, dim = 12, 1024
ws = [rng.standard_normal((dim, dim)).astype(np.float32) * (1.0 / 32) for _ in range(nw)]
nodes = [h.make_node("MatMul", ["x" if i == 0 else "h%d" % (i - 1), "w%d" % i], ["h%d" % i], name="mm%d" % i)
         for i in range(nw)]
parts = []
for i in range(nw):
    gi = onnx.GraphProto()
    gi.node.extend([nodes[i]])
    gi.initializer.extend([onnx.numpy_helper.from_array(ws[i], "w%d" % i)])
    parts.append(gi.SerializeToString())
tail = h.make_graph([], "big", [fvi("x", [1, dim])], [fvi("h%d" % (nw - 1), [1, dim])])
gbytes = b"".join(parts) + tail.SerializeToString()
mm = h.make_model(h.make_graph([], "big", [], []), opset_imports=[h.make_opsetid("", 13)])
mm.ir_version = 8
mm.ClearField("graph")
mbytes = mm.SerializeToString()
field = b"\x3a"  # ModelProto.graph: field 7, length-delimited
n, lenv = len(gbytes), b""
while True:
    lenv += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
    n >>= 7
    if not n:
        break
bigm = os.path.join(TMP, "weights48.onnx")
with open(bigm, "wb") as f:
    f.write(mbytes + field + lenv + gbytes)
xin = rng.standard_normal((1, dim)).astype(np.float32)
np.save(os.path.join(TMP, "xin.npy"), xin)
want = xin.astype(np.float64)
for w in ws:
    want = want @ w.astype(np.float64)
outdir = os.path.join(TMP, "out48")
probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
         "sys.stderr.write(r.stderr.decode(errors='replace')); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")
# With cpu.prepack=0 the CPU uses the weights as loaded; by default it packs
# them once more for its GEMM kernels (a second copy, the option's help says).
for prepack, copies in (("0", 1), ("1", 2)):
    p = subprocess.run([sys.executable, "-c", probe, RLX, "run", bigm, "--input", "x=" + os.path.join(TMP, "xin.npy"),
                        "--iters", "0", "--warmup", "0", "--output-dir", outdir, "--option", "cpu.prepack=" + prepack],
                       capture_output=True, text=True, timeout=300)
    C.check(p.returncode == 0, "run of the 48 MiB model: %s" % p.stderr[-500:])
    if p.returncode == 0:
        got = np.load(os.path.join(outdir, "h%d.npy" % (nw - 1)))
        err = np.abs(got - want).max() / np.abs(want).max()
        C.check(err < 1e-5, "48 MiB model: rel. max error %.3g against float64 numpy (want < 1e-5)" % err)
        peak_mb = int(p.stdout.strip().splitlines()[-1]) / 1024.0
        weights_mb = nw * dim * dim * 4 / 2**20
        print("cpu.prepack=%s: weights %.0f MiB, peak RSS of rlx run %.0f MiB" % (prepack, weights_mb, peak_mb))
        C.check(peak_mb < copies * weights_mb + 40, "cpu.prepack=%s: peak RSS %.0f MiB, want < %d x weights %.0f MiB "
                "+ 40 MiB (weights read once)" % (prepack, peak_mb, copies, weights_mb))

# ---------------------------------------------------------------- debug dump
r = subprocess.run([RLX, "run", ok, "--iters", "0"], capture_output=True, timeout=300,
                   env=dict(os.environ, RLX_DUMP_IR="1"))
C.check(r.returncode == 0 and b"\x1b" not in r.stdout + r.stderr and b"IR after" in r.stderr,
        "RLX_DUMP_IR: names reach stderr escaped: %r" % r.stderr[-300:])
r = subprocess.run([RLX, "info", ok, "--dump-ir"], capture_output=True, timeout=300)
C.check(r.returncode == 0 and b"\x1b" not in r.stdout + r.stderr and b"\\x1b]0;pwned" in r.stdout,
        "info --dump-ir: names printed escaped: %r" % r.stdout[-300:])

C.done()
