"""Feedback of the command line (issue 14, item 4):
 - --json on every verb that prints results (run, bench, info, info --plan,
   devices, ops, options, conformance) is one JSON document that json.loads accepts from
   stdout decoded as strict UTF-8; shapes are arrays of numbers, timings
   numbers; a model path that is not UTF-8 (bytes 0xff 0xfe) comes back
   with U+FFFD in its place and keeps the JSON valid;
 - bench --json lists the options given (--option or environment, also at
   their default), values typed as in `rlx options --json`;
 - bench --profile on the CPU exits 0, writes a trace and prints per-node
   lines (host-clock time per step), also under --json;
 - progress lines ("\\r...\\033[K") appear on stderr only when it is a
   terminal (run under `script`) or with --option progress=on, never when
   stderr is a pipe, and --quiet silences them even with progress=on; a run
   longer than a second says which step it is at (names escaped);
 - names from the file with control characters (ESC, BEL, C1 CSI) come out
   escaped in bench --profile's text, its trace, --json and error lines."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    R.skip(e)
C = R.Checker("test_cli_json")
tmp = tempfile.mkdtemp(prefix="rlx_cli_json_")


def save_model(path):
    """y = Relu(x W) + x W2 (two op types that stay separate nodes)."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "w")
    w2 = numpy_helper.from_array(np.linspace(1, -1, 12, dtype=np.float32).reshape(4, 3), "w2")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                           helper.make_node("Sigmoid", ["m"], ["r"], name="sig"),
                           helper.make_node("MatMul", ["x", "w2"], ["m2"], name="mm2"),
                           helper.make_node("Add", ["r", "m2"], ["y"], name="add")],
                          "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [w, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


model = os.path.join(tmp, "tiny.onnx")
save_model(model)
bad_name = os.path.join(os.fsencode(tmp), b"m\xff\xfe.onnx")  # not UTF-8
shutil.copy(model, bad_name)


def rlx(args, env=None):
    p = subprocess.run([os.fsencode(RLX)] + [a if isinstance(a, bytes) else a.encode() for a in args],
                       capture_output=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def load_json(args, what):
    rc, so, se = rlx(args + ["--json"])
    C.check(rc == 0, "%s: exit %d, stderr %r" % (what, rc, se[-300:]))
    try:
        return json.loads(so.decode("utf-8"))  # strict: invalid UTF-8 raises
    except (UnicodeDecodeError, ValueError) as e:
        C.check(False, "%s: stdout is not valid JSON in UTF-8: %s: %r" % (what, e, so[:300]))
        return None


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------- every verb
d = load_json(["run", model, "--iters", "2", "--shape", "x=2x4", "--check", "--report"], "run")
if d:
    C.check(d["inputs"][0]["shape"] == [2, 4], "run: input shape %r" % d["inputs"][0]["shape"])
    out = d["outputs"][0]
    C.check(out["name"] == "y" and out["shape"] == [2, 3] and all(is_num(v) for v in out["first"]),
            "run: output %r" % out)
    C.check(all(is_num(v) for v in d["timings_ms"].values()), "run: timings %r" % d["timings_ms"])
    C.check(d["check"][0]["max_abs"] == 0, "run --check: %r" % d["check"])
    C.check("Sigmoid" in d["dispatch_report"], "run --report: %r" % d["dispatch_report"])
# --check: an element NaN on one side only is a mismatch ("mismatch": true, the text says MISMATCH; the exit
# status stays 0 as for a shape mismatch). The GPU's f16 mode stores the weights 1e-9 as 0, so m / m is NaN there
# and 1 on the CPU. Skipped without a GPU.
nan_model = os.path.join(tmp, "f16nan.onnx")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Div", ["m", "m"], ["y"])],
                      "f16nan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])],
                      [numpy_helper.from_array(np.full((8, 8), 1e-9, np.float32), "w")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), nan_model)
nan_args = ["run", nan_model, "--device", "gpu", "--option", "gpu.f16=1", "--iters", "0", "--check"]
if rlx(["run", model, "--device", "gpu", "--iters", "0"])[0] == 0:
    d = load_json(nan_args, "run --check (NaN on one side)")
    if d:
        ck = d["check"][0]
        C.check(ck["nan_one_side"] > 0 and ck["mismatch"] is True, "run --check, NaN on one side: %r" % ck)
    rc, so, se = rlx(nan_args)
    C.check(rc == 0 and b"MISMATCH" in so and b"NaN on one side only" in so,
            "run --check text, NaN on one side: exit %d %r" % (rc, so[-300:]))
else:
    print("no GPU: the NaN-on-one-side --check case is skipped")
# --json when the command fails after its arguments are parsed: one JSON object {"error": {"status", "message"}}
# on stdout, the usual line on stderr, the usual exit status
missing = os.path.join(tmp, "missing.onnx")
for args in [["run", missing], ["bench", missing], ["info", missing], ["run", model, "--shape", "x=2x5"]]:
    rc, so, se = rlx(args + ["--json"])
    try:
        e = json.loads(so.decode("utf-8"))["error"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as ex:
        e = None
        C.check(False, "%s --json failing: stdout is not a JSON error object: %s %r" % (args[0], ex, so[:300]))
    if e is not None:
        C.check(rc == 2 and e["status"].startswith("RLX_ERR_") and e["message"] and b"rlx: error:" in se,
                "%s --json failing: exit %d, %r, stderr %r" % (args[0], rc, e, se[-200:]))
d = load_json(["bench", model, "--iters", "3", "--warmup", "1"], "bench")
if d:
    C.check(d["inputs"][0]["shape"] == [1, 4], "bench: input shape %r (an array)" % d["inputs"][0]["shape"])
    C.check(is_num(d["wall_ms"]["median"]) and d["wall_ms"]["n"] == 3, "bench: wall_ms %r" % d["wall_ms"])
# options given (by --option or the environment, also at their default value): by key under "options", the
# environment's by variable under "env"; values typed as in `rlx options --json`
env_seed = dict(os.environ, RLX_PROGRESS="off", RLX_GPU_F16="0")
rc, so, se = rlx(["bench", model, "--iters", "1", "--warmup", "0", "--option", "cpu.threads=1", "--option",
                  "gpu.f16=on", "--max-tensor-bytes", "4G", "--json"], env=env_seed)
try:
    d = json.loads(so.decode("utf-8"))
except (UnicodeDecodeError, ValueError) as e:
    d = None
    C.check(False, "bench --option --json: %s %r" % (e, so[:300]))
if d:
    C.check(d["options"] == {"cpu.threads": 1, "progress": "off", "gpu.f16": True, "limits.max_tensor_bytes": "4G"},
            "bench --json options: %r" % d["options"])
    C.check(d["env"] == {"RLX_PROGRESS": "off"}, "bench --json env: %r" % d["env"])
rc, so, se = rlx(["bench", model, "--iters", "1", "--warmup", "0", "--option", "cpu.threads=0", "--json"],
                 env=dict(env_seed, RLX_GPU_F16="0"))
d = json.loads(so.decode("utf-8")) if rc == 0 else None
C.check(d is not None and d["options"].get("cpu.threads") == 0 and d["options"].get("gpu.f16") is False
        and d["env"].get("RLX_GPU_F16") is False, "bench --json, options given at their defaults: %r" % (d or se))
for cmd in (["ops"], ["options"]):
    rc, so, se = rlx(cmd + ["--json", "--markdown"])
    C.check(rc == 2 and b"cannot be combined" in se, "%s --json --markdown: exit %d %r" % (cmd[0], rc, se[-200:]))
d = load_json(["info", model], "info")
if d:
    C.check(d["inputs"][0]["shape"] == ["n", 4] and d["opset"] == 13, "info: %r" % d["inputs"])
    C.check({o["op"]: o["count"] for o in d["ops"]} == {"MatMul": 2, "Sigmoid": 1, "Add": 1}, "info: ops %r" % d["ops"])
d = load_json(["info", model, "--plan", "--shape", "x=5x4"], "info --plan")
if d:
    C.check(d["plan"]["inputs"][0]["shape"] == [5, 4] and is_num(d["plan"]["arena_bytes"]), "info --plan: %r" % d["plan"])
# a failure after the result object began: its "error" member says why (a
# tester found the success object with "written": [] and no error, exit 1)
blocked = os.path.join(tmp, "blocked_out")
os.makedirs(os.path.join(blocked, "y.npy"), exist_ok=True)
rc, so, se = rlx(["run", model, "--iters", "0", "--output-dir", blocked, "--json"])
try:
    d = json.loads(so.decode("utf-8"))
except ValueError:
    d = None
C.check(rc == 1 and d is not None and d.get("error", {}).get("status") == "RLX_ERR_IO" and
        "y.npy" in d["error"].get("message", "") and d.get("written") == [],
        "run --output-dir onto a directory, --json: exit %d, %r" % (rc, so[-400:]))
rc, so, se = rlx(["info", model, "--plan", "--shape", "x=5x4x3", "--json"])
try:
    d = json.loads(so.decode("utf-8"))
except ValueError:
    d = None
C.check(rc != 0 and d is not None and "error" in d and "message" in d["error"],
        "info --plan with shapes that do not fit, --json: exit %d, %r" % (rc, so[-400:]))
d = load_json(["devices"], "devices")
if d:
    C.check(isinstance(d["adapters"], list) and d["cpu"]["device"] == "cpu", "devices: %r" % d)
d = load_json(["ops"], "ops")
if d:
    names = {o["name"] for o in d["ops"]}
    C.check({"Conv", "MatMul", "Relu"} <= names and all(isinstance(o["versions"], list) for o in d["ops"]), "ops")
d = load_json(["ops", "Relu"], "ops Relu")
if d:
    C.check([o["name"] for o in d["ops"]] == ["Relu"], "ops Relu: %r" % d["ops"])
d = load_json(["options"], "options")
if d:
    C.check(any(o["key"] == "progress" for o in d) and all(isinstance(o["per_process"], bool) for o in d), "options")
    # defaults typed: bool true/false, int numbers (an int's "auto" stays a string), the rest strings
    for o in d:
        dv, ty = o["default"], o["type"]
        ok = (isinstance(dv, bool) if ty == "bool" else
              (is_num(dv) or dv == "auto") if ty == "int" else is_num(dv) if ty == "float" else isinstance(dv, str))
        C.check(ok, "options --json: %s (%s) default %r is not typed" % (o["key"], ty, dv))
    C.check(any(o["key"] == "cpu.threads" and o["default"] == 0 for o in d), "options --json: cpu.threads default")

suite = os.path.join(R.ROOT, "third_party", "onnx", "backend-test-data")
if os.path.isdir(suite):
    d = load_json(["conformance", suite, "--device", "cpu", "--filter", "test_relu"], "conformance")
    if d:
        C.check(d["tests"] >= 1 and d["devices"][0]["pass"] == d["tests"] and d["results"][0]["cpu"]["result"] == "pass",
                "conformance: %r" % {k: d[k] for k in ("tests", "devices")})

# a test folder with model.onnx but no test_data_set_* has nothing to compare: a failure saying so, as the
# command's other unusable test folders (a model or .pb that does not load) are, not a pass (a tester's
# finding: it counted as one); the same model with a data set passes
croot = os.path.join(tmp, "conf")
for tname, with_data in (("test_nodata", False), ("test_withdata", True)):
    tdir = os.path.join(croot, "node", tname)
    os.makedirs(tdir)
    shutil.copy(model, os.path.join(tdir, "model.onnx"))
    if with_data:
        ds = os.path.join(tdir, "test_data_set_0")
        os.makedirs(ds)
        xin = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
        wv = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
        w2v = np.linspace(1, -1, 12, dtype=np.float32).reshape(4, 3)
        yv = (1 / (1 + np.exp(-(xin @ wv))) + xin @ w2v).astype(np.float32)
        for fname, arr in (("input_0.pb", xin), ("output_0.pb", yv)):
            with open(os.path.join(ds, fname), "wb") as f:
                f.write(numpy_helper.from_array(arr).SerializeToString())
d = load_json(["conformance", croot, "--device", "cpu"], "conformance without test data")
if d:
    res = {t["name"]: t["cpu"] for t in d["results"]}
    C.check(res.get("test_withdata", {}).get("result") == "pass", "conformance: test_withdata %r" % res)
    nd = res.get("test_nodata", {})
    C.check(nd.get("result") == "fail" and "test_data_set" in nd.get("detail", ""),
            "conformance: a test without data sets: %r" % nd)
    C.check(d["devices"][0]["pass"] == 1 and d["devices"][0]["fail"] == 1, "conformance counts %r" % d["devices"])
rc, so, se = rlx(["conformance", croot, "--device", "cpu", "-v"])
C.check(b"cpu  pass 1, fail 1," in so and re.search(rb"test_nodata +cpu:fail", se) is not None,
        "conformance text without test data: exit %d, %r %r" % (rc, so, se))

# a path that is not UTF-8, in every verb that echoes it
for verb in (["run", bad_name, "--iters", "1"], ["bench", bad_name, "--iters", "1"], ["info", bad_name]):
    d = load_json(verb, "%s with a non-UTF-8 path" % verb[0])
    if d:
        C.check(d["model"].endswith("m\ufffd\ufffd.onnx"), "%s: model %r" % (verb[0], d["model"]))

# ---------------------------------------------------------------- --profile on the CPU
trace = os.path.join(tmp, "trace.json")
unfused = ["--option", "passes.disable=fuse_activation,fuse_elementwise"]  # four steps, one per node
rc, so, se = rlx(["bench", model, "--iters", "2", "--warmup", "0", "--profile", trace] + unfused)
text = so.decode("utf-8", "replace")
C.check(rc == 0, "bench --profile on the CPU: exit %d, stderr %r" % (rc, se[-300:]))
C.check("costliest nodes:" in text and "node mm " in text and "node sig " in text,
        "bench --profile: no per-node lines in %r" % text[-600:])
if os.path.exists(trace):
    ev = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X"]
    C.check(len(ev) == 4 and all(e["cat"] == "cpu" and e["dur"] >= 0 for e in ev), "trace: %d slices" % len(ev))
else:
    C.check(False, "bench --profile wrote no trace")
d = load_json(["bench", model, "--iters", "2", "--profile", trace] + unfused, "bench --profile")
if d:
    nodes = {n["node"] for n in d["profile"]["nodes"]}
    C.check(nodes == {"mm", "sig", "mm2", "add"} and d["profile"]["clock"] == "host", "profile nodes %r" % nodes)

# names from the file (ESC, BEL and the C1 CSI U+009B) reach neither the terminal nor the trace raw: the
# "costliest" lines escape them (\\x1b), the trace and --json write them as JSON escapes, error lines escape them
evil = "r\x1b[2J\x07\u009b31m"
g = helper.make_graph([helper.make_node("Relu", [evil + "in"], ["y"], name=evil)], "evil",
                      [helper.make_tensor_value_info(evil + "in", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
evil_model = os.path.join(tmp, "evil.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), evil_model)
raw = (b"\x1b", b"\x07", b"\xc2\x9b")
rc, so, se = rlx(["bench", evil_model, "--iters", "1", "--warmup", "0", "--profile", trace, "--top", "2"])
C.check(rc == 0 and b"node r\\x1b[2J\\x07\\u009b31m " in so and not any(b in so + se for b in raw),
        "bench --profile with control characters in a node name: exit %d %r" % (rc, so[-300:]))
tb = open(trace, "rb").read() if os.path.exists(trace) else b"\x1b"
C.check(not any(b in tb for b in raw) and b"\\u001b" in tb and b"\\u009b" in tb, "trace: raw %r" % tb[-300:])
rc, so, se = rlx(["bench", evil_model, "--iters", "1", "--warmup", "0", "--profile", trace, "--json"])
C.check(rc == 0 and not any(b in so for b in raw) and json.loads(so)["profile"]["nodes"][0]["node"] == evil,
        "bench --profile --json with control characters: %r" % so[-300:])
rc, so, se = rlx(["run", evil_model, "--input", (evil + "in=" + missing).encode()])
C.check(rc != 0 and b"cannot read input 'r\\x1b[2J" in se and not any(b in se for b in raw),
        "error line with a name from the file: %r" % se[-300:])

# ---------------------------------------------------------------- bench on the GPU: gpu.f16 and the model's dtype
# the line said "f16 mode: off" for an fp16 model (issue 12.5): gpu.f16 is f16 storage for f32 models' weights,
# the model's own dtype is said apart (text and --json's model_float_dtypes)
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "h",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])])
f16_model = os.path.join(tmp, "f16.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f16_model)
for path, extra, want in ((f16_model, [], b"gpu.f16 (f16 storage for the weights of f32 models): off; "
                                          b"model inputs/outputs: f16;"),
                          (model, ["--option", "gpu.f16=1"], b"gpu.f16 (f16 storage for the weights of f32 models): "
                                                             b"on; model inputs/outputs: f32;")):
    rc, so, se = rlx(["bench", path, "--device", "gpu", "--iters", "1", "--warmup", "0"] + extra)
    C.check(rc == 0 and want in so and b"f16 mode" not in so, "bench --device gpu %s: %r" % (extra, so[-600:] + se[-300:]))
d = load_json(["bench", f16_model, "--device", "gpu", "--iters", "1", "--warmup", "0"], "bench f16 --json")
if d:
    C.check(d.get("model_float_dtypes") == ["f16"] and d.get("f16_mode") is False,
            "bench --json: model_float_dtypes %r, f16_mode %r" % (d.get("model_float_dtypes"), d.get("f16_mode")))

# ---------------------------------------------------------------- progress lines
env = dict(os.environ)
env.pop("RLX_PROGRESS", None)
rc, so, se = rlx(["run", model, "--iters", "1"], env=env)
C.check(rc == 0 and b"\r" not in se and b"\033[K" not in se, "progress on a pipe: %r" % se)
rc, so, se = rlx(["run", model, "--iters", "1", "--option", "progress=on"], env=env)
C.check(rc == 0 and b"\rrlx: loading" in se and b"compiling" in se, "progress=on: %r" % se)
rc, so, se = rlx(["run", model, "--iters", "1", "--option", "progress=on", "--quiet"], env=env)
C.check(rc == 0 and b"\r" not in se, "--quiet with progress=on: %r" % se)
# a run longer than a second (150 MatMuls of 1024x1024 sharing one weight, ~3e11
# flops, on one thread: 100 on two threads took about a second on the AVX-512 VM,
# and the check failed in its quiet minutes) shows which step it is at; names from
# the file arrive escaped
n_mm = 150
w = numpy_helper.from_array((np.random.default_rng(1).standard_normal((1024, 1024)) / 32).astype(np.float32), "w")
mm = [helper.make_node("MatMul", ["x" if i == 0 else "h%d" % (i - 1), "w"], ["h%d" % i], name="mm\x1b]0;t\x07%d" % i)
      for i in range(n_mm)]
g = helper.make_graph(mm, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024, 1024])],
                      [helper.make_tensor_value_info("h%d" % (n_mm - 1), TensorProto.FLOAT, [1024, 1024])], [w])
slow = os.path.join(tmp, "slow.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), slow)
rc, so, se = rlx(["run", slow, "--warmup", "0", "--iters", "0", "--option", "progress=on", "--option", "cpu.threads=1"],
                 env=env)
C.check(rc == 0 and b"\rrlx: running: step " in se and b"/%d (node 'mm\\x1b]0;t\\x07" % n_mm in se,
        "progress during a long run: %r" % se[-400:])
C.check(b"\x1b]" not in se and b"\x07" not in se, "a raw control character reached stderr: %r" % se[-400:])

script = shutil.which("script")
if script:  # a terminal for stderr: progress appears without asking
    cmd = "%s run %s --iters 1 >/dev/null" % (RLX, model)
    p = subprocess.run([script, "-qc", cmd, "/dev/null"], capture_output=True, timeout=300, env=env)
    C.check(b"\rrlx: loading" in p.stdout, "stderr a terminal: no progress line in %r" % p.stdout[:300])

shutil.rmtree(tmp, ignore_errors=True)
C.done()
