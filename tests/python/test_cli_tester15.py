"""Findings of the fifteenth session's tester.

- An unknown passes.disable value listed the passes that can be turned off
  cut mid-word ("... fuse_elemen") by a 200-byte buffer; every option error
  that lists choices (passes.disable, each enum option; `rlx options`'
  value column) now shows them all.
- rlx run --output-dir with a string output wrote nothing ("dtype string
  has no .npy code", exit 1), not even the other outputs. Strings are now
  written as NumPy unicode ('<U<n>'), bytes ('|S<n>') where one is not
  UTF-8, and np.load reads them back; an output that cannot be written no
  longer stops the others. --check compares string outputs as strings.
- A node calling a model-local function (ModelProto.functions) was "not
  supported": the importer now inlines them (nested calls, ref_attr_name
  from the call or the function's defaults, calls in Loop bodies),
  checked against onnxruntime. The second tester's findings: inlined
  names no longer collide (long nested names, graph values named like
  inlined ones), depth and recursion errors say why first, a function
  output that is an input names the function and call, and inlining is
  capped at 1,000,000 nodes.
- --timeout on a GPU plan stopped only after the whole backend compile
  (40 s of pipelines with a cold shader cache): the limit is now checked
  between pipeline creations.
- Minor: --seed's error gives the range; usage errors found while parsing
  the arguments print the JSON error object under --json like the later
  ones; a bad unrelated RLX_* variable (RLX_GPU_F16=maybe) no longer stops
  `rlx info` without --plan (loading reads only the limits.* options)."""

import json
import os
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
C = R.Checker("test_cli_tester15")
TMP = tempfile.mkdtemp(prefix="rlx_tester15_")


def rlx(*args, env=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("RLX_") and k != "RLX_LIBRARY":
            del e[k]
    e.update(env or {})
    return subprocess.run([RLX, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=300, env=e)


def save(name, nodes, inputs, outputs, inits=()):
    m = h.make_model(h.make_graph(nodes, name, inputs, outputs, list(inits)), opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


vi = h.make_tensor_value_info
add = save("add", [h.make_node("Add", ["a", "b"], ["y"])], [vi("a", T.FLOAT, [2, 3]), vi("b", T.FLOAT, [2, 3])],
           [vi("y", T.FLOAT, [2, 3])])

# ---------------------------------------------------------------- a: option errors list every choice
PASSES = ["cse", "fuse_nbits", "fuse_qdq", "fuse_qdq_conv", "fold_conv_affine", "fuse_activation", "fuse_conv_residual",
          "fuse_attention", "fuse_layernorm", "fuse_add_layernorm", "fuse_elementwise", "fuse_qdq_ew", "fuse_qlinear_ew", "widen_f16",
          "pow_exponent"]
for how, args, env in (("--option", ["--option", "passes.disable=nosuchpass"], None),
                       ("RLX_DISABLE_PASSES", [], {"RLX_DISABLE_PASSES": "bogus"}),
                       ("a 64-character name", ["--option", "passes.disable=" + "q" * 64], None)):
    p = rlx("run", add, "--iters", "0", "--quiet", *args, env=env)
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    listed = line[line.find("turned off (") + len("turned off ("):line.find(")", line.find("turned off ("))]
    C.check(p.returncode == 2 and [w.strip() for w in listed.split(",")] == PASSES,
            "passes.disable by %s: rc %d, the list %r (%r)" % (how, p.returncode, listed, line))

p = rlx("options", "--json")
opts = json.loads(p.stdout) if p.returncode == 0 else []
opts = opts.get("options", opts) if isinstance(opts, dict) else opts
enums = [o for o in opts if o.get("type") == "enum"]
C.check(len(enums) >= 3, "rlx options --json: %d enum options (%r)" % (len(enums), p.stderr))
for o in enums:
    words = o["values"].split("|")
    # a word that is not one, and a word in capitals (values are exact, case and all, as keys and --device)
    for bad in ["nosuchword"] + [w.upper() for w in words if w.upper() != w][:1]:
        p = rlx("run", add, "--iters", "0", "--quiet", "--option", o["key"] + "=" + bad)
        msg = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        tail = msg[msg.find("expected one of ") + len("expected one of "):].split(" ")[0]
        C.check(p.returncode == 2 and "%s='%s'" % (o["key"], bad) in msg and tail.split("|") == words and
                len(words) >= 2, "%s=%s: rc %d, choices %r, want %r" % (o["key"], bad, p.returncode, tail, words))

# ---------------------------------------------------------------- b: string outputs as .npy
STRS = ["abc", "h\u00e9llo w\u00f6rld", "", "\u65e5\u672c\U0001f600x"]
spath = save("strout", [h.make_node("Identity", ["s"], ["y"]), h.make_node("Relu", ["x"], ["z"])],
             [vi("x", T.FLOAT, [2, 3])], [vi("y", T.STRING, [2, 2]), vi("z", T.FLOAT, [2, 3])],
             [h.make_tensor("s", T.STRING, [2, 2], [s.encode() for s in STRS])])
rng = R.seeded_rng(1515)
x = (rng.uniform(0.5, 2.0, (2, 3)) * np.where(rng.uniform(size=(2, 3)) < 0.5, -1, 1)).astype(np.float32)
np.save(os.path.join(TMP, "x.npy"), x)
out = os.path.join(TMP, "out")
p = rlx("run", spath, "--iters", "0", "--quiet", "--input", "x=" + os.path.join(TMP, "x.npy"), "--output-dir", out)
C.check(p.returncode == 0, "string output --output-dir: rc %d (%s)" % (p.returncode, p.stderr.strip()))
try:
    y = np.load(os.path.join(out, "y.npy"))
    C.check(y.dtype == np.dtype("<U%d" % max(len(s) for s in STRS)) and y.shape == (2, 2)
            and y.reshape(-1).tolist() == STRS, "y.npy: %r %r" % (y.dtype, y))
except Exception as ex:  # noqa: BLE001
    C.check(False, "y.npy cannot be read: %r" % ex)
try:
    z = np.load(os.path.join(out, "z.npy"))
    C.check(np.array_equal(z, np.maximum(x, 0)), "z.npy: %r" % z)
except Exception as ex:  # noqa: BLE001
    C.check(False, "z.npy cannot be read: %r" % ex)

# bytes that are not UTF-8: '|S' (np.save's form for bytes)
RAW = [b"\xff\xfeab", b"ok", b"", b"\xc3"]
bpath = save("bytesout", [h.make_node("Identity", ["s"], ["y"])], [], [vi("y", T.STRING, [4])],
             [h.make_tensor("s", T.STRING, [4], RAW)])
out2 = os.path.join(TMP, "out2")
p = rlx("run", bpath, "--iters", "0", "--quiet", "--output-dir", out2)
try:
    y = np.load(os.path.join(out2, "y.npy"))
    C.check(p.returncode == 0 and y.dtype == np.dtype("S4") and y.tolist() == RAW, "bytes y.npy: %r %r" % (y.dtype, y))
except Exception as ex:  # noqa: BLE001
    C.check(False, "bytes y.npy cannot be read: %r (rc %d, %s)" % (ex, p.returncode, p.stderr.strip()))

# --check: strings are equal or not, no numeric differences
p = rlx("run", spath, "--iters", "0", "--quiet", "--check")
check_part = p.stdout[p.stdout.find("check against"):]
line = next((ln for ln in check_part.splitlines() if ln.strip().startswith("y ")), "")
C.check(p.returncode == 0 and "strings equal (4)" in line and "diff" not in line, "--check on strings: %r" % line)
p = rlx("run", spath, "--iters", "0", "--quiet", "--check", "--json")
try:
    chk = {c["name"]: c for c in json.loads(p.stdout)["check"]}
    C.check(chk["y"].get("strings_differ") == 0 and chk["y"].get("close") is True and "max_abs" not in chk["y"]
            and "max_abs" in chk["z"], "--check --json on strings: %r" % chk)
except Exception as ex:  # noqa: BLE001
    C.check(False, "--check --json: %r (%s)" % (ex, p.stdout[-400:]))

# ---------------------------------------------------------------- c: model-local functions are inlined
# ScaledLeaky(x; alpha, scale default 2.0) = LeakyRelu(x, alpha) * scale (a Constant made from the attribute);
# Twice(x; alpha) calls ScaledLeaky twice (nested, alpha passed on, scale left to its default once)
sl = h.make_function(
    "local", "ScaledLeaky", ["a"], ["b"],
    [h.make_node("LeakyRelu", ["a"], ["t"], name="leaky"),
     h.make_node("Constant", [], ["s"], name="scale"),
     h.make_node("Mul", ["t", "s"], ["b"], name="mul")],
    [h.make_opsetid("", 17)], attributes=["alpha"],
    attribute_protos=[h.make_attribute("scale", 2.0)])
sl.node[0].attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
sl.node[1].attribute.append(onnx.AttributeProto(name="value_float", ref_attr_name="scale",
                                                type=onnx.AttributeProto.FLOAT))
tw = h.make_function(
    "local", "Twice", ["a"], ["b", "mid"],
    [h.make_node("ScaledLeaky", ["a"], ["mid"], domain="local", name="first"),
     h.make_node("ScaledLeaky", ["mid"], ["b"], domain="local", name="second", scale=-0.5)],
    [h.make_opsetid("", 17), h.make_opsetid("local", 1)], attributes=["alpha"])
for n in tw.node:
    n.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
fm = h.make_model(h.make_graph(
    [h.make_node("Twice", ["x"], ["y", "m"], domain="local", name="call", alpha=0.25),
     h.make_node("ScaledLeaky", ["x"], ["z"], domain="local", name="call2", alpha=0.1, scale=3.0),
     h.make_node("Add", ["y", "z"], ["w"])], "fn",
    [vi("x", T.FLOAT, [2, 3])], [vi("w", T.FLOAT, [2, 3]), vi("m", T.FLOAT, [2, 3])]),
    opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)], functions=[sl, tw])
fm.ir_version = 8
onnx.checker.check_model(fm)
fpath = os.path.join(TMP, "local_fn.onnx")
onnx.save(fm, fpath)
outf = os.path.join(TMP, "outf")
p = rlx("run", fpath, "--iters", "0", "--quiet", "--input", "x=" + os.path.join(TMP, "x.npy"), "--output-dir", outf)
C.check(p.returncode == 0, "model-local functions: rc %d %r" % (p.returncode, p.stderr))
want_m = np.where(x > 0, x, 0.25 * x) * 2.0
want = np.where(want_m > 0, want_m, 0.25 * want_m) * -0.5 + np.where(x > 0, x, 0.1 * x) * 3.0
try:
    import onnxruntime as ort
    ow, om = ort.InferenceSession(fpath, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    C.check(np.allclose(ow, want, rtol=1e-6, atol=1e-6) and np.allclose(om, want_m), "onnxruntime differs from numpy")
    want, want_m = ow, om
except ImportError:
    pass
if p.returncode == 0:
    gw, gm = np.load(os.path.join(outf, "w.npy")), np.load(os.path.join(outf, "m.npy"))
    C.check(np.allclose(gw, want, rtol=1e-6, atol=1e-6) and np.allclose(gm, want_m, rtol=1e-6, atol=1e-6),
            "model-local functions: w %r vs %r, m %r vs %r" % (gw, want, gm, want_m))
# a function called inside a Loop body is inlined there too
body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]),
                     h.make_node("ScaledLeaky", ["acc"], ["acc_out"], domain="local", name="inner", alpha=0.5)],
                    "body", [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("acc", T.FLOAT, [2, 3])],
                    [vi("c_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 3])])
lm = h.make_model(h.make_graph(
    [h.make_node("Constant", [], ["M"], value=h.make_tensor("M", T.INT64, [], [2])),
     h.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="loop")], "loopfn",
    [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])]),
    opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)], functions=[sl])
lm.ir_version = 8
lpath = os.path.join(TMP, "loop_fn.onnx")
onnx.save(lm, lpath)
outl = os.path.join(TMP, "outl")
p = rlx("run", lpath, "--iters", "0", "--quiet", "--input", "x=" + os.path.join(TMP, "x.npy"), "--output-dir", outl)
want_l = x.copy()
for _ in range(2):
    want_l = np.where(want_l > 0, want_l, 0.5 * want_l) * 2.0
try:
    import onnxruntime as ort
    want_l = ort.InferenceSession(lpath, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
except ImportError:
    pass
C.check(p.returncode == 0 and np.allclose(np.load(os.path.join(outl, "y.npy")), want_l, rtol=1e-6, atol=1e-6),
        "a function in a Loop body: rc %d %r" % (p.returncode, p.stderr))
# a function whose body holds a Loop is refused, saying why
fl = h.make_function("local", "Looped", ["a"], ["b"],
                     [h.make_node("Constant", [], ["M"], value=h.make_tensor("M", T.INT64, [], [1])),
                      h.make_node("Loop", ["M", "", "a"], ["b"], body=h.make_graph(
                          [h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Relu", ["acc"], ["acc_out"])],
                          "b2", [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("acc", T.FLOAT, [2, 3])],
                          [vi("c_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 3])]))],
                     [h.make_opsetid("", 17)])
flm = h.make_model(h.make_graph([h.make_node("Looped", ["x"], ["y"], domain="local", name="callloop")], "fl",
                                [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])]),
                   opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)], functions=[fl])
flm.ir_version = 8
flpath = os.path.join(TMP, "fn_loop.onnx")
onnx.save(flm, flpath)
p = rlx("run", flpath, "--iters", "0", "--quiet")
C.check(p.returncode == 2 and "node 'callloop'" in p.stderr and "subgraph attribute 'body'" in p.stderr,
        "a function with a Loop inside: rc %d %r" % (p.returncode, p.stderr))

# ---------------------------------------------------------------- c2: inlining, the second tester's findings
FN_OPS = [h.make_opsetid("", 17), h.make_opsetid("local", 1)]


def fn_model(name, nodes, functions, outputs=("y",), extra_outputs=()):
    m = h.make_model(h.make_graph(nodes, name, [vi("x", T.FLOAT, [2, 3])],
                                  [vi(o, T.FLOAT, [2, 3]) for o in outputs] + list(extra_outputs)),
                     opset_imports=FN_OPS, functions=functions)
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


def fn_run(path, outputs=("y",)):
    d = os.path.join(TMP, "out_" + os.path.basename(path))
    p = rlx("run", path, "--iters", "0", "--quiet", "--input", "x=" + os.path.join(TMP, "x.npy"), "--output-dir", d)
    got = [np.load(os.path.join(d, o + ".npy")) for o in outputs] if p.returncode == 0 else None
    return p, got


# long (PyTorch-style) function and node names, nested 6 deep, each calling the one below twice: the inlined
# names were cut at 300 characters with the call's counter last, and two calls' values collided
names = ["torch_nn_modules_container_Sequential_model_encoder_layers_%d_self_attn_block" % i for i in range(6)]
fs = [h.make_function("local", names[0], ["a"], ["b"], [h.make_node("Neg", ["a"], ["t"], name="node_neg"),
                                                        h.make_node("Sin", ["t"], ["b"], name="node_sin")],
                      [h.make_opsetid("", 17)])]
for i in range(1, 6):
    fs.append(h.make_function("local", names[i], ["a"], ["b"], [
        h.make_node(names[i - 1], ["a"], ["t"], domain="local", name=names[i - 1] + "_call_0"),
        h.make_node(names[i - 1], ["t"], ["b"], domain="local", name=names[i - 1] + "_call_1")], FN_OPS))
p, got = fn_run(fn_model("fn_long_names", [h.make_node(names[5], ["x"], ["y"], domain="local", name="top_call")], fs))
want = x.copy()
for _ in range(32):
    want = np.sin(-want)
C.check(p.returncode == 0 and np.allclose(got[0], want, rtol=1e-5, atol=1e-6),
        "long nested function names: rc %d %r" % (p.returncode, p.stderr[-300:]))
# a 300-character function name called twice, and two calls whose names share 300 characters
L = "F" * 300
fl2 = h.make_function("local", L, ["a"], ["b"], [h.make_node("Neg", ["a"], ["t"]), h.make_node("Exp", ["t"], ["b"])],
                      [h.make_opsetid("", 17)])
for tag, n1, n2, f in (("fn", "", "", fl2), ("node", "n" * 300 + "A", "n" * 300 + "B", fl2)):
    p, got = fn_run(fn_model("fn_long_" + tag, [h.make_node(L, ["x"], ["u"], domain="local", name=n1),
                                                h.make_node(L, ["u"], ["y"], domain="local", name=n2)], [f]))
    C.check(p.returncode == 0 and np.allclose(got[0], np.exp(-np.exp(-x)), rtol=1e-5),
            "300-character %s names: rc %d %r" % (tag, p.returncode, p.stderr[-300:]))
# graph values named like inlined values, in the old scheme and the new one: no collision
n2 = h.make_function("local", "N2", ["a"], ["b"], [h.make_node("Neg", ["a"], ["t"]), h.make_node("Exp", ["t"], ["b"])],
                     [h.make_opsetid("", 17)])
p, got = fn_run(fn_model("fn_name_like_inlined", [
    h.make_node("Relu", ["x"], ["call/N2#0/t"]), h.make_node("Relu", ["x"], ["#0/call/N2/t"]),
    h.make_node("Sigmoid", ["x"], ["#1/"]),
    h.make_node("N2", ["x"], ["u"], domain="local"),
    h.make_node("Add", ["u", "call/N2#0/t"], ["v"]), h.make_node("Add", ["v", "#0/call/N2/t"], ["w"]),
    h.make_node("Add", ["w", "#1/"], ["y"])], [n2]))
want = np.exp(-x) + 2 * np.maximum(x, 0) + 1 / (1 + np.exp(-x))
C.check(p.returncode == 0 and np.allclose(got[0], want, rtol=1e-5, atol=1e-6),
        "graph values named like inlined ones: rc %d %r" % (p.returncode, p.stderr[-300:]))
# 40 nested functions and a function that calls itself: the reason comes first, the message stays short
fs = [h.make_function("local", "F0", ["a"], ["b"], [h.make_node("Neg", ["a"], ["b"])], [h.make_opsetid("", 17)])]
for i in range(1, 40):
    fs.append(h.make_function("local", "F%d" % i, ["a"], ["b"],
                              [h.make_node("F%d" % (i - 1), ["a"], ["b"], domain="local")], FN_OPS))
rf = h.make_function("local", "R", ["a"], ["b"], [h.make_node("R", ["a"], ["b"], domain="local", name="again")],
                     FN_OPS)
for tag, path, top, inner in (
        ("40 deep", fn_model("fn_deep40", [h.make_node("F39", ["x"], ["y"], domain="local", name="deep")], fs),
         "node 'deep' (local.F39)", "function 'F7'"),
        ("recursion", fn_model("fn_recursion", [h.make_node("R", ["x"], ["y"], domain="local", name="rec")], [rf]),
         "node 'rec' (local.R)", "function 'R'")):
    p, _ = fn_run(path)
    C.check(p.returncode == 2 and "nest more than 32 deep" in p.stderr and top in p.stderr and inner in p.stderr and
            "depth 33" in p.stderr and len(p.stderr) < 800, "%s: rc %d %r" % (tag, p.returncode, p.stderr[-600:]))
# a function whose output is its input, and one without nodes: the function and the call are named
pt = h.make_function("local", "PassOn", ["a"], ["b", "a"], [h.make_node("Neg", ["a"], ["b"])],
                     [h.make_opsetid("", 17)])
em = h.make_function("local", "Empty", ["a"], ["a"], [], [h.make_opsetid("", 17)])
for tag, path, fname in (
        ("output is input", fn_model("fn_out_is_in", [h.make_node("PassOn", ["x"], ["y", "y1"], domain="local",
                                                                  name="pcall")], [pt], outputs=("y", "y1")),
         "PassOn"),
        ("no nodes", fn_model("fn_empty", [h.make_node("Empty", ["x"], ["y"], domain="local", name="pcall")], [em]),
         "Empty")):
    p, _ = fn_run(path)
    C.check(p.returncode == 2 and "node 'pcall'" in p.stderr and "function '%s' output" % fname in p.stderr and
            "one of its inputs" in p.stderr and "graph output" not in p.stderr,
            "%s: rc %d %r" % (tag, p.returncode, p.stderr[-400:]))
# 22 functions each calling the one below twice (2^21 nodes): refused at once, naming the function
fs = [h.make_function("local", "G0", ["a"], ["b"], [h.make_node("Neg", ["a"], ["b"])], [h.make_opsetid("", 17)])]
for i in range(1, 22):
    fs.append(h.make_function("local", "G%d" % i, ["a"], ["b"],
                              [h.make_node("G%d" % (i - 1), ["a"], ["t"], domain="local"),
                               h.make_node("G%d" % (i - 1), ["t"], ["b"], domain="local")], FN_OPS))
t0 = time.time()
p, _ = fn_run(fn_model("fn_bomb", [h.make_node("G21", ["x"], ["y"], domain="local", name="bomb")], fs))
dt = time.time() - t0
C.check(p.returncode == 2 and "more than 1000000 nodes" in p.stderr and "node 'bomb' (local.G21)" in p.stderr and dt < 20,
        "2^21 inlined nodes: rc %d in %.1f s %r" % (p.returncode, dt, p.stderr[-400:]))
# 2^10 nodes (under the cap) load
p, got = fn_run(fn_model("fn_2p10", [h.make_node("G10", ["x"], ["y"], domain="local")], fs[:11]))
C.check(p.returncode == 0 and np.allclose(got[0], x), "2^10 inlined nodes: rc %d %r" % (p.returncode, p.stderr[-300:]))
# functions told apart by their overload (IR 10): each call runs its own body; a repeated (domain, name,
# overload) is refused
f_neg = h.make_function("local", "F", ["a"], ["b"], [h.make_node("Neg", ["a"], ["b"])], [h.make_opsetid("", 17)],
                        overload="neg")
f_sin = h.make_function("local", "F", ["a"], ["b"], [h.make_node("Sin", ["a"], ["b"])], [h.make_opsetid("", 17)],
                        overload="sin")
f_none = h.make_function("local", "F", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"])], [h.make_opsetid("", 17)])


def ov_model(name, functions):
    m = h.make_model(h.make_graph(
        [h.make_node("F", ["x"], ["u"], domain="local", overload="sin", name="c_sin"),
         h.make_node("F", ["x"], ["v"], domain="local", name="c_none"),
         h.make_node("F", ["u"], ["w"], domain="local", overload="neg", name="c_neg"),
         h.make_node("Add", ["v", "w"], ["y"])], name, [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])]),
        opset_imports=FN_OPS, functions=functions)
    m.ir_version = 10
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(m, path)
    return path


p, got = fn_run(ov_model("fn_overload", [f_neg, f_sin, f_none]))
C.check(p.returncode == 0 and np.allclose(got[0], np.maximum(x, 0) - np.sin(x), rtol=1e-6, atol=1e-6),
        "functions by overload: rc %d %r" % (p.returncode, p.stderr[-300:]))
p, _ = fn_run(ov_model("fn_overload_dup", [f_neg, f_sin, f_none, f_sin]))
C.check(p.returncode == 2 and "function 'F' of domain 'local' (overload 'sin') twice" in p.stderr,
        "a repeated (domain, name, overload): rc %d %r" % (p.returncode, p.stderr[-300:]))
p, _ = fn_run(ov_model("fn_overload_missing", [f_neg, f_none]))
C.check(p.returncode == 2 and "node 'c_sin'" in p.stderr and "with overload 'sin', which ModelProto.functions does "
        "not define (its overloads: 'neg', '')" in p.stderr,
        "a call to an overload that is not defined: rc %d %r" % (p.returncode, p.stderr[-300:]))

# ---------------------------------------------------------------- e-g: minor
p = rlx("run", add, "--seed", "18446744073709551615")
C.check(p.returncode == 2 and "from 0 to 9223372036854775807" in p.stderr, "--seed 2^64-1: %r" % p.stderr)
p = rlx("run", add, "--seed", "9223372036854775807", "--iters", "0", "--quiet")
C.check(p.returncode == 0, "--seed 2^63-1 refused: %r" % p.stderr)

for args in (["run", add, "--json", "--option", "cpu.threads=-1"], ["run", add, "--json", "--bogus"],
             ["run", add, "--iters", "-1", "--json"], ["run", add, "--json", "--device", "tpu"],
             ["bench", add, "--json", "--warmup", "x"], ["info", add, "--json", "--bogus"],
             ["run", add, "--json", "--shape", "q=1x2"], ["run", "--json"]):
    p = rlx(*args)
    try:
        err = json.loads(p.stdout)["error"]
        ok = err["status"] == "RLX_ERR_USAGE" and err["message"] in p.stderr
    except Exception:  # noqa: BLE001
        ok = False
    C.check(p.returncode == 2 and ok, "%s: rc %d, stdout %r" % (" ".join(args[:1] + args[2:]), p.returncode, p.stdout))

p = rlx("info", add, env={"RLX_GPU_F16": "maybe"})
C.check(p.returncode == 0 and "model:" in p.stdout, "RLX_GPU_F16=maybe broke rlx info: %r" % p.stderr)
p = rlx("info", add, "--plan", env={"RLX_GPU_F16": "maybe"})
C.check(p.returncode == 2 and "RLX_GPU_F16" in p.stderr, "rlx info --plan with RLX_GPU_F16=maybe: %r" % p.stderr)
p = rlx("info", add, env={"RLX_MAX_MODEL_BYTES": "10"})
C.check(p.returncode != 0 and "max_model_bytes" in p.stderr, "RLX_MAX_MODEL_BYTES=10 ignored by info: %r" % p.stderr)

# ---------------------------------------------------------------- d: the time limit while GPU pipelines compile
if rlx("run", add, "--device", "gpu", "--iters", "0", "--quiet").returncode == 0:
    # many distinct kernels, shader cache off: the pipelines take far longer than the limit
    nodes, prev = [], "x"
    for i, op in enumerate(["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Erf", "Softplus", "Sin",
                            "Cos", "Floor", "Ceil", "Round", "Reciprocal", "Softsign", "Atan", "Sinh", "Log"] * 2):
        nodes.append(h.make_node(op, [prev], ["t%d" % i]))
        nodes.append(h.make_node("Add" if i % 2 else "Mul", ["t%d" % i, "x"], ["u%d" % i]))
        prev = "u%d" % i
    nodes.append(h.make_node("Identity", [prev], ["y"]))
    gpath = save("many_kernels", nodes, [vi("x", T.FLOAT, [4, 8])], [vi("y", T.FLOAT, [4, 8])])
    env = {"MESA_SHADER_CACHE_DISABLE": "true"}
    t0 = time.monotonic()
    p = rlx("run", gpath, "--device", "gpu", "--timeout", "30", "--iters", "0", "--quiet",
            "--option", "passes.disable=fuse_elementwise", env=env)
    dt = time.monotonic() - t0
    C.check(p.returncode != 0 and "RLX_ERR_CANCELLED" in p.stderr and "compiling a plan (GPU pipelines, before kernel"
            in p.stderr and "constant folding" not in p.stderr, "GPU compile past --timeout 30: rc %d in %.1f s: %r" % (p.returncode, dt, p.stderr.strip()))
    p = rlx("run", gpath, "--device", "gpu", "--iters", "0", "--quiet", "--option",
            "passes.disable=fuse_elementwise", "--check")
    C.check(p.returncode == 0 and "close" in p.stdout, "the same model without a limit: %r" % p.stderr)
else:
    print("no GPU: the compile time limit is not tested")

C.done()
