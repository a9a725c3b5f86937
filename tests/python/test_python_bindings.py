"""The Python bindings (python/rlx, ctypes over librlx.so): model inputs and
outputs with symbolic dims, a session on the CPU (and on the GPU when there
is an adapter) against numpy on random inputs at two batch sizes, errors as
rlx.Error with the status name, the dispatch report; and the example of the
README's "Python" section, run as it is written (it needs the demo's model
and a GPU adapter; that part is skipped without them).

Skips (exit 77) while librlx.so is not built, or is built with the
sanitizers (ASan cannot be loaded into an uninstrumented Python)."""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()

C = R.Checker("test_python_bindings")
rng = R.seeded_rng(11)
tmp = tempfile.mkdtemp(prefix="rlx_py_bindings_")

# y = Relu(x W + b) (f32, symbolic batch), k = ids + ids (i64)
W = rng.standard_normal((5, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
g = H.make_graph(
    [H.make_node("MatMul", ["x", "W"], ["h"], name="mm"), H.make_node("Add", ["h", "b"], ["hb"], name="add"),
     H.make_node("Relu", ["hb"], ["y"], name="relu"), H.make_node("Add", ["ids", "ids"], ["k"], name="twice")],
    "bindings",
    [H.make_tensor_value_info("x", T.FLOAT, ["batch", 5]), H.make_tensor_value_info("ids", T.INT64, [3])],
    [H.make_tensor_value_info("y", T.FLOAT, ["batch", 4]), H.make_tensor_value_info("k", T.INT64, [3])],
    initializer=[NH.from_array(W, "W"), NH.from_array(b, "b")])
path = os.path.join(tmp, "bindings.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)]), path)

model = rlx.Model(path)
ins, outs = model.inputs, model.outputs
C.check([i["name"] for i in ins] == ["x", "ids"] and [o["name"] for o in outs] == ["y", "k"],
        "input/output names %r %r" % (ins, outs))
C.check(ins[0]["shape"] == ["batch", 5] and ins[0]["dtype"] == np.float32, "x: %r" % ins[0])
C.check(ins[1]["shape"] == [3] and ins[1]["dtype"] == np.int64, "ids: %r" % ins[1])
C.check(outs[0]["shape"] == ["batch", 4], "y: %r" % outs[0])


def check_device(device):
    sess = rlx.Session(model, device=device)
    C.check(sess.output_names == ["y", "k"], "%s: output names %r" % (device, sess.output_names))
    for batch in (3, 2):
        x = rng.uniform(-1, 1, (batch, 5)).astype(np.float32)
        ids = rng.integers(-1000, 1000, 3).astype(np.int64)
        y, k = sess.run({"x": x, "ids": ids})
        ref = np.maximum(x.astype(np.float64) @ W + b, 0)
        err = float(np.abs(y - ref).max())
        # f32 sums of 5 products of values below ~3 in magnitude: 1e-5 absolute
        C.check(y.shape == (batch, 4) and y.dtype == np.float32 and err <= 1e-5,
                "%s batch %d: y %s %s, max abs err %.3g (tolerance 1e-5)" % (device, batch, y.shape, y.dtype, err))
        C.check(k.dtype == np.int64 and np.array_equal(k, 2 * ids), "%s: k %r, want %r" % (device, k, 2 * ids))
    C.check("MatMul" in sess.dispatch_report, "%s: dispatch report lacks MatMul:\n%s" % (device, sess.dispatch_report))
    return sess


cpu = check_device("cpu")
C.check(cpu.device_name.startswith("cpu"), "cpu session device name %r" % cpu.device_name)

# errors: rlx.Error with the status name and the library's message
try:
    cpu.run({"nope": np.zeros((1, 5), np.float32), "ids": np.zeros(3, np.int64)})
    C.check(False, "an unknown input name did not raise")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_INVALID_ARGUMENT" and "nope" in str(e), "unknown input: %s (%s)" % (e, e.status))
try:
    rlx.Model(os.path.join(tmp, "missing.onnx"))
    C.check(False, "a missing model file did not raise")
except rlx.Error as e:
    C.check(e.status.startswith("RLX_ERR_") and "missing.onnx" in str(e), "missing file: %s" % e)
try:
    rlx.Session(model, device="tpu")
    C.check(False, "a bad device string did not raise")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_INVALID_ARGUMENT", "bad device: %s" % e)

# session options: two sessions of one process, one with the fusions off;
# both right, their dispatch reports differ
xo = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
ido = rng.integers(-1000, 1000, 3).astype(np.int64)
fused = rlx.Session(model, device="cpu")
unfused = rlx.Session(model, device="cpu", options={"passes.disable": "fuse_activation,fuse_elementwise",
                                                     "debug.dump_ir": False, "gpu.spin_us": 10})
yf, yu = fused.run({"x": xo, "ids": ido})[0], unfused.run({"x": xo, "ids": ido})[0]
ref = np.maximum(xo.astype(np.float64) @ W + b, 0)
# the same f32 sums, fused or not: 1e-5 absolute as above
C.check(float(np.abs(yf - ref).max()) <= 1e-5 and float(np.abs(yu - ref).max()) <= 1e-5,
        "options: outputs differ from numpy")
C.check(fused.dispatch_report != unfused.dispatch_report,
        "options: passes.disable changed nothing in the dispatch report:\n" + unfused.dispatch_report)
for bad, needle in (({"gpu.f61": 1}, "unknown option 'gpu.f61'"),
                    ({"gpu.conv_algo": "fft"}, "auto|direct|im2col|implicit"),
                    ({"gpu.spin_us": -1}, "gpu.spin_us='-1'")):
    try:
        rlx.Session(model, device="cpu", options=bad)
        C.check(False, "options %r did not raise" % bad)
    except rlx.Error as e:
        C.check(e.status == "RLX_ERR_INVALID_ARGUMENT" and needle in str(e), "options %r: %s (%s)" % (bad, e, e.status))
# values other than str, bool and int (and options that are not a dict) are a
# TypeError: str() of them used to pass 'None' or "['Conv']" as the value,
# which gpu.disable took silently
for bad in ({"gpu.disable": None}, {"gpu.disable": ["Conv"]}, {"gpu.f16": 1.0}, {"cpu.threads": {"n": 1}},
            {"gpu.f16": b"1"}, {1: "1"}, "gpu.f16=1", [("gpu.f16", "1")]):
    try:
        rlx.Session(model, device="cpu", options=bad)
        C.check(False, "options %r did not raise" % (bad,))
    except TypeError as e:
        C.check("option" in str(e), "options %r: %s" % (bad, e))
# a bool is an int in Python, yet True for cpu.threads is not a count (it
# passed as 1, a tester's find): every option of type int, enum or string
# refuses a bool with a TypeError naming the key, through Session's options
# and InferenceSession's provider options; bool options still take one
class OptionInfo(ctypes.Structure):  # rlx_option_info
    _fields_ = [(f, ctypes.c_char_p) for f in ("key", "type", "values", "default_value", "env", "doc")] + \
               [("per_process", ctypes.c_bool)]


lib, info, kinds = ctypes.CDLL(rlx.library_path()), OptionInfo(), {}
lib.rlx_option_count.restype = ctypes.c_size_t
lib.rlx_option_info_get.argtypes = [ctypes.c_size_t, ctypes.POINTER(OptionInfo)]
for i in range(lib.rlx_option_count()):
    C.check(lib.rlx_option_info_get(i, ctypes.byref(info)) == 0, "rlx_option_info_get(%d)" % i)
    kinds[info.key.decode()] = info.type.decode()
C.check(kinds.get("cpu.threads") == "int" and "bool" in kinds.values(), "option kinds: %r" % kinds)
for key, kind in sorted(kinds.items()):
    for value in ((True, False) if kind != "bool" else ()):
        try:
            rlx.Session(model, device="cpu", options={key: value})
            C.check(False, "%s option %s=%r did not raise" % (kind, key, value))
        except TypeError as e:
            C.check(key in str(e) and "bool" in str(e), "%s=%r: %s" % (key, value, e))
for opts in ({"cpu.threads": True}, {"gpu.conv_algo": False}):
    try:
        rlx.InferenceSession(path, providers=["CPUExecutionProvider"], provider_options=[opts])
        C.check(False, "provider options %r did not raise" % opts)
    except TypeError as e:
        C.check(list(opts)[0] in str(e), "provider options %r: %s" % (opts, e))
one = rlx.Session(model, device="cpu", options={"cpu.threads": 1, "debug.dump_ir": False})
C.check(float(np.abs(one.run({"x": xo, "ids": ido})[0] - ref).max()) <= 1e-5, "cpu.threads=1: outputs differ from numpy")
# a model that is neither a path nor bytes: a TypeError saying both are taken (rlx.Model said "path must be a str,
# got ndarray", InferenceSession "expected str, bytes or os.PathLike object", as if bytes were not welcome)
for bad in (np.frombuffer(open(path, "rb").read(), np.uint8), 5, None):
    for ctor in (rlx.Model, rlx.InferenceSession):
        try:
            ctor(bad)
            C.check(False, "%s(%s) did not raise" % (ctor.__name__, type(bad).__name__))
        except TypeError as e:
            C.check("a path (str or os.PathLike) or the model's bytes" in str(e) and type(bad).__name__ in str(e),
                    "%s(%s): %s" % (ctor.__name__, type(bad).__name__, e))
# numpy's integers and bools are ints and bools (a TypeError 'got int32' while SessionOptions.intra_op_num_threads
# and Session.set_run_timeout take them); a numpy bool is still no count, a numpy float no int
for opts in ({"cpu.threads": np.int32(1)}, {"cpu.threads": np.uint8(2)}, {"debug.dump_ir": np.bool_(False)}):
    try:
        npo = rlx.Session(model, device="cpu", options=opts)
        C.check(float(np.abs(npo.run({"x": xo, "ids": ido})[0] - ref).max()) <= 1e-5, "options %r: outputs" % opts)
    except Exception as e:  # noqa: BLE001
        C.check(False, "options %r: %s: %s" % (opts, type(e).__name__, e))
for opts in ({"cpu.threads": np.bool_(True)}, {"cpu.threads": np.float32(2)}):
    try:
        rlx.Session(model, device="cpu", options=opts)
        C.check(False, "options %r did not raise" % opts)
    except TypeError as e:
        C.check("cpu.threads" in str(e), "options %r: %s" % (opts, e))
# device None is "cpu", as the C API's NULL (it raised TypeError)
try:
    dflt = rlx.Session(model, device=None)
    C.check(dflt.device_name == one.device_name and float(np.abs(dflt.run({"x": xo, "ids": ido})[0] - ref).max()) <= 1e-5,
            "device=None: %r" % dflt.device_name)
except Exception as e:  # noqa: BLE001
    C.check(False, "device=None raised %s: %s" % (type(e).__name__, e))

adapters = rlx.adapters()
print("adapters:", [a["name"] for a in adapters])
if adapters:
    gpu = check_device("gpu")
    C.check(gpu.device_name.startswith(adapters[0]["name"]) or any(gpu.device_name.startswith(a["name"])
                                                                   for a in adapters),
            "gpu session device name %r" % gpu.device_name)
else:
    print("no GPU adapter: GPU part skipped")

# the README's example, as written
with open(os.path.join(R.ROOT, "README.md")) as f:
    readme = f.read()
m = re.search(r"^## Python\n.*?^```python\n(.*?)^```", readme, re.S | re.M)
C.check(m is not None, "README.md has no ```python block under '## Python'")
demo_model = os.path.join(R.ROOT, "models", "ppocrv4_det.onnx")
if m and os.path.exists(demo_model) and adapters:
    code = m.group(1)
    C.check(len(code.strip().splitlines()) == 5, "the README example is not 5 lines:\n" + code)
    env = dict(os.environ, PYTHONPATH=os.path.join(R.ROOT, "python"))
    p = subprocess.run([sys.executable, "-c", code], cwd=R.ROOT, env=env, capture_output=True, text=True, timeout=300)
    print("README example:", p.stdout.strip(), p.stderr.strip())
    C.check(p.returncode == 0 and p.stdout.rstrip().endswith("['sigmoid_0.tmp_0'] (1, 1, 64, 64) float32"),
            "README example: exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr[-500:]))
    printed = re.search(r"^```\n(.*)\n```", readme[m.end():], re.M)
    C.check(printed is not None and printed.group(1).endswith("['sigmoid_0.tmp_0'] (1, 1, 64, 64) float32"),
            "README: the example's printed line does not follow it")
elif m:
    print("README example skipped: it needs %s and a GPU adapter" % demo_model)

# a bfloat16 input takes ml_dtypes.bfloat16 arrays (onnx's numpy type for
# it; refused as 'numpy dtype bfloat16 is not supported' before), C order or
# not; outputs of bfloat16 come back as float32, exact
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
if ml_dtypes is not None:
    from onnx import TensorProto as TP
    gb = onnx.helper.make_graph(
        [onnx.helper.make_node("Cast", ["xb"], ["yf"], to=TP.FLOAT), onnx.helper.make_node("Identity", ["xb"], ["zb"])],
        "bf16", [onnx.helper.make_tensor_value_info("xb", TP.BFLOAT16, [2, 3])],
        [onnx.helper.make_tensor_value_info("yf", TP.FLOAT, [2, 3]),
         onnx.helper.make_tensor_value_info("zb", TP.BFLOAT16, [2, 3])])
    sb = rlx.Session(rlx.Model(onnx.helper.make_model(gb, opset_imports=[onnx.helper.make_opsetid("", 21)])
                               .SerializeToString()))
    xb = np.array([[1.5, -2.25, 3e38], [1e-40, np.inf, np.nan]], np.float32).astype(ml_dtypes.bfloat16)
    for label, feed in (("C order", xb), ("reversed columns", xb[:, ::-1])):
        try:
            yf, zb = sb.run({"xb": feed})
            want = feed.astype(np.float32)
            C.check(yf.dtype == np.float32 and np.array_equal(yf, want, equal_nan=True)
                    and np.array_equal(zb, want, equal_nan=True), "bfloat16 input (%s): %r %r" % (label, yf, zb))
        except rlx.Error as e:
            C.check(False, "bfloat16 input (%s): %s" % (label, e))
    try:
        sb.run({"xb": xb.astype(np.float32)})
        C.check(False, "a float32 array for a bfloat16 input was accepted")
    except rlx.Error as e:
        C.check("expects bf16" in str(e), "float32 for bfloat16: %s" % e)
else:
    print("ml_dtypes not installed: the bfloat16 input check skipped")

# names that are not UTF-8 (a model file may hold any bytes; rlx and its
# command line take them): bindings name them with surrogate escapes, and
# those names feed and select (Model.inputs raised UnicodeDecodeError)
gn = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["xQQ"], ["yQQ"])], "names",
                            [onnx.helper.make_tensor_value_info("xQQ", onnx.TensorProto.FLOAT, ["nQQ"])],
                            [onnx.helper.make_tensor_value_info("yQQ", onnx.TensorProto.FLOAT, ["nQQ"])])
raw_model = onnx.helper.make_model(gn, opset_imports=[onnx.helper.make_opsetid("", 13)]).SerializeToString()
raw_model = raw_model.replace(b"QQ", b"\xff\xfe")
try:
    mn = rlx.Model(raw_model)
    C.check(mn.inputs[0]["name"] == "x\udcff\udcfe" and mn.inputs[0]["shape"] == ["n\udcff\udcfe"],
            "non-UTF-8 input: %r" % mn.inputs)
    (yn,) = rlx.Session(mn).run({"x\udcff\udcfe": np.array([-1, 2], np.float32)})
    C.check(list(yn) == [0, 2], "non-UTF-8 names: run %r" % yn)
    isn = rlx.InferenceSession(raw_model)
    ia, oa = isn.get_inputs()[0], isn.get_outputs()[0]
    C.check(ia.name == "x\udcff\udcfe" and ia.shape == ["n\udcff\udcfe"] and oa.name == "y\udcff\udcfe",
            "InferenceSession metadata: %r %r" % (ia, oa))
    (yo,) = isn.run([oa.name], {ia.name: np.array([3, -4], np.float32)})
    C.check(list(yo) == [3, 0], "InferenceSession run by those names: %r" % yo)
except (UnicodeError, rlx.Error) as e:
    C.check(False, "a model with non-UTF-8 names: %s: %s" % (type(e).__name__, e))
try:
    rlx.Session(rlx.Model(raw_model)).run({"\ud800": np.zeros(2, np.float32)})
    C.check(False, "an input name with a lone surrogate was accepted")
except ValueError as e:
    C.check("input name" in str(e) and "UTF-8" in str(e), "lone surrogate name: %s" % e)

# a model's bytes through a strided memoryview load as the same bytes
# (np.frombuffer raised BufferError; InferenceSession copied them)
spread = np.zeros(2 * len(raw_model), np.uint8)
spread[::2] = np.frombuffer(raw_model, np.uint8)
try:
    C.check(rlx.Model(memoryview(spread[::2])).inputs[0]["name"] == "x\udcff\udcfe", "strided memoryview model")
except (BufferError, rlx.Error) as e:
    C.check(False, "a model from a strided memoryview: %s: %s" % (type(e).__name__, e))

# close() and `with`: a closed Model, Session or InferenceSession raises
# ValueError "... is closed" from every method and property (a tester's
# finding: after __del__, run raised 'RLX_ERR_INVALID_ARGUMENT: session or
# output pointer is NULL', output_names gave [], device_name '', a
# destroyed Model's inputs []); close() is idempotent, `closed` says so,
# and a with block closes at its end


def closed_raises(label, fn, who):
    try:
        r = fn()
        C.check(False, "%s on a closed %s: no error, got %r" % (label, who, r))
    except ValueError as e:
        C.check("%s is closed" % who in str(e), "%s on a closed %s: %s" % (label, who, e))
    except Exception as e:  # noqa: BLE001 (any other type is the finding)
        C.check(False, "%s on a closed %s: %s: %s" % (label, who, type(e).__name__, e))


feeds = {"x": np.ones((2, 5), np.float32), "ids": np.arange(3, dtype=np.int64)}
with rlx.Model(path) as mc:
    C.check(not mc.closed, "an open Model says closed")
    with rlx.Session(mc) as sc:
        C.check(not sc.closed and len(sc.run(feeds)) == 2, "a Session in a with block")
    C.check(sc.closed, "a Session is not closed after its with block")
    sd = rlx.Session(mc)
C.check(mc.closed, "a Model is not closed after its with block")
C.check(len(sd.run(feeds)) == 2, "a Session whose Model was closed no longer runs")
sd.__del__()  # as the tester did: the same as close()
sd.close()  # idempotent
mc.close()
C.check(sd.closed and mc.closed, "closed objects say they are not")
for label, fn in (("run", lambda: sd.run(feeds)), ("output_names", lambda: sd.output_names),
                  ("device_name", lambda: sd.device_name), ("dispatch_report", lambda: sd.dispatch_report),
                  ("terminate", lambda: sd.terminate()), ("set_terminate", lambda: sd.set_terminate(False)),
                  ("set_run_timeout", lambda: sd.set_run_timeout(10)), ("with", lambda: sd.__enter__())):
    closed_raises(label, fn, "rlx.Session")
for label, fn in (("inputs", lambda: mc.inputs), ("outputs", lambda: mc.outputs),
                  ("overridable_initializers", lambda: mc.overridable_initializers),
                  ("Session(model)", lambda: rlx.Session(mc)), ("with", lambda: mc.__enter__())):
    closed_raises(label, fn, "rlx.Model")
with rlx.InferenceSession(path) as ic:
    C.check(not ic.closed and len(ic.run(None, feeds)) == 2, "an InferenceSession in a with block")
    # the session is its model's only holder (cpu.release_packed may free the
    # plain weights it reads packed); .rlx_model loads it again, and
    # set_providers and the runs still work, with the same outputs
    r0 = ic.run(None, feeds)
    C.check(ic._model_dropped and ic._rlx_model.closed, "an InferenceSession keeps its model handle")
    ic.set_providers(["CPUExecutionProvider"])
    C.check(ic._model_dropped, "set_providers kept the model it loaded again")
    r1 = ic.run(None, feeds)
    C.check(all(np.array_equal(a, b) for a, b in zip(r0, r1)), "set_providers changed the outputs")
    C.check([i["name"] for i in ic.rlx_model.inputs] == [i.name for i in ic.get_inputs()] and not ic._model_dropped,
            ".rlx_model after the handle was released")
    taken = ic.rlx_model
    ic.set_providers(["CPUExecutionProvider"])
    C.check(not taken.closed, "set_providers closed the model the caller took")
C.check(ic.closed and ic.rlx_session.closed and ic.rlx_model.closed, "an InferenceSession after its with block")
# reloads read the file the session loaded, from any working folder, and
# refuse it once it was rewritten (the session keeps running)
moved = os.path.join(tempfile.mkdtemp(prefix="rlx_reload_"), "m.onnx")
shutil.copyfile(path, moved)
here = os.getcwd()
os.chdir(os.path.dirname(moved))
ir = rlx.InferenceSession("m.onnx")
os.chdir(here)
C.check(ir.rlx_model.inputs[0]["name"] == ir.get_inputs()[0].name, ".rlx_model from another working folder")
ir2 = rlx.InferenceSession(moved)
r0 = ir2.run(None, feeds)
st = os.stat(moved)
os.utime(moved, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
try:
    ir2.set_providers(["CPUExecutionProvider"])
    C.check(False, "set_providers loaded a model file that changed")
except rlx.Error as e:
    C.check("changed since this InferenceSession loaded it" in str(e), f"the changed-file message: {e}")
r1 = ir2.run(None, feeds)
C.check(all(np.array_equal(a, b) for a, b in zip(r0, r1)), "the session after a refused reload")
ir.close(), ir2.close()
ic.close()
for label, fn in (("run", lambda: ic.run(None, feeds)), ("get_inputs", ic.get_inputs), ("get_outputs", ic.get_outputs),
                  ("get_overridable_initializers", ic.get_overridable_initializers),
                  ("get_providers", ic.get_providers), ("get_provider_options", ic.get_provider_options),
                  ("get_session_options", ic.get_session_options), ("get_modelmeta", ic.get_modelmeta),
                  ("set_providers", lambda: ic.set_providers(["CPUExecutionProvider"])),
                  ("with", lambda: ic.__enter__())):
    closed_raises(label, fn, "rlx.InferenceSession")

# a library that cannot be loaded: the error says where its path came from
# (the loader's message named the file only)
env = dict(os.environ, PYTHONPATH=os.path.join(R.ROOT, "python"), RLX_LIBRARY=os.path.join(tempfile.gettempdir(),
                                                                                           "no-such-librlx.so"))
p = subprocess.run([sys.executable, "-c", "import rlx\ntry:\n    rlx.version()\nexcept OSError as e:\n    print(e)"],
                   env=env, capture_output=True, text=True, timeout=120)
C.check(p.returncode == 0 and "cannot load the library" in p.stdout and "RLX_LIBRARY names it" in p.stdout
        and "no-such-librlx.so" in p.stdout, "RLX_LIBRARY missing: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))

C.done()
