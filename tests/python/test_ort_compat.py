"""rlx.InferenceSession against onnxruntime.InferenceSession: one script
(`script` below), written against onnxruntime's API, runs with the module
`onnxruntime` and with the module `rlx`; their metadata (get_inputs,
get_outputs: name, shape, type; get_modelmeta) must be equal and their outputs
close, on small models built here with onnx.helper (symbolic and unnamed
dims, several dtypes, two outputs, metadata fields) and on the demo's real
OCR detector (models/ppocrv4_det.onnx, when present). rlx runs each on the
CPU provider and, when an adapter exists, on the WebGPU provider (onnxruntime
on its CPU provider). Also: construction from bytes, output_names subsets
and order, providers (fallback, device_id, unknown names), SessionOptions
(optimisation level, rlx config entries, refused settings), rlx.Model(bytes).

Inputs are random and non-zero (seed RLX_TEST_SEED, default 5); tolerances
are stated where each comparison is made. Skips (exit 77) while librlx.so is
not built or is built with the sanitizers."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

rlx = R.import_rlx()
C = R.Checker("test_ort_compat")
rng = R.seeded_rng(5)
tmp = tempfile.mkdtemp(prefix="rlx_ort_compat_")
GPU = len(rlx.adapters()) > 0
print("GPU adapter:", rlx.adapters()[0]["name"] if GPU else "none (WebGPU provider cases skipped)")


def script(ort, model, feeds, providers, sess_options=None):
    """What a user of onnxruntime writes; `ort` is onnxruntime or rlx."""
    so = sess_options if sess_options is not None else ort.SessionOptions()
    sess = ort.InferenceSession(model, so, providers=providers)
    meta = sess.get_modelmeta()
    info = {
        "inputs": [(i.name, list(i.shape), i.type) for i in sess.get_inputs()],
        "outputs": [(o.name, list(o.shape), o.type) for o in sess.get_outputs()],
        "meta": (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.graph_description,
                 meta.version, dict(meta.custom_metadata_map)),
    }
    outs = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    picked = sess.run(names[::-1], feeds)  # a subset/order of the caller's choosing
    return sess, info, outs, picked


def compare(label, model, feeds, atol, rtol, sess_options=None, rlx_options=None):
    _, ref_info, ref, _ = script(onnxruntime, model, feeds, ["CPUExecutionProvider"], sess_options)
    provs = [["CPUExecutionProvider"]] + ([["WebGpuExecutionProvider", "CPUExecutionProvider"]] if GPU else [])
    for p in provs:
        so = None
        if rlx_options is not None:
            so = rlx.SessionOptions()
            for k, v in rlx_options.items():
                so.add_session_config_entry(k, v)
        sess, info, outs, picked = script(rlx, model, feeds, p, so)
        tag = "%s [%s]" % (label, p[0])
        C.check(sess.get_providers() == p, "%s: get_providers %r" % (tag, sess.get_providers()))
        for key in ("inputs", "outputs", "meta"):
            C.check(info[key] == ref_info[key], "%s: %s\n  rlx %r\n  ort %r" % (tag, key, info[key], ref_info[key]))
        C.check(len(outs) == len(ref), "%s: %d outputs, onnxruntime %d" % (tag, len(outs), len(ref)))
        for i, (a, b) in enumerate(zip(outs, ref)):
            ok = a.shape == b.shape and a.dtype == b.dtype
            if ok and a.dtype.kind == "f":
                err = float(np.abs(a.astype(np.float64) - b).max()) if a.size else 0.0
                ok = bool(np.allclose(a, b, atol=atol, rtol=rtol))
                what = "max abs diff %.3g (atol %g, rtol %g)" % (err, atol, rtol)
            else:
                ok = ok and np.array_equal(a, b)
                what = "exact"
            C.check(ok, "%s: output %d %s %s vs onnxruntime %s %s: %s" % (tag, i, a.shape, a.dtype, b.shape,
                                                                          b.dtype, what))
        C.check(len(picked) == len(outs) and all(np.array_equal(x, y) for x, y in zip(picked, outs[::-1])),
                "%s: run(reversed names) does not return the outputs in that order" % tag)


def save(model, name):
    path = os.path.join(tmp, name)
    onnx.save(model, path)
    return path


# ---------------------------------------------------------------- model 1: two outputs, symbolic and unnamed dims
W = rng.standard_normal((6, 4)).astype(np.float32)
b = rng.uniform(0.5, 1.5, 4).astype(np.float32)
g1 = H.make_graph(
    [H.make_node("MatMul", ["x", "W"], ["h"], name="mm"), H.make_node("Add", ["h", "b"], ["hb"], name="add"),
     H.make_node("Tanh", ["hb"], ["y"], name="tanh"), H.make_node("Mul", ["ids", "ids"], ["k"], name="sq")],
    "two_outputs",
    [H.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 6]), H.make_tensor_value_info("ids", T.INT64, [None])],
    [H.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 4]), H.make_tensor_value_info("k", T.INT64, [None])],
    initializer=[NH.from_array(W, "W"), NH.from_array(b, "b")], doc_string="the graph's description")
m1 = H.make_model(g1, opset_imports=[H.make_opsetid("", 17)], ir_version=8, producer_name="rlx-test", producer_version="1",
                  domain="org.rlx.test", model_version=7, doc_string="a model with metadata")
H.set_model_props(m1, {"author": "rlx", "purpose": "ort compat"})
p1 = save(m1, "two_outputs.onnx")
f1 = {"x": rng.uniform(-2, 2, (2, 3, 6)).astype(np.float32), "ids": rng.integers(-3000, 3000, 5).astype(np.int64)}
# tanh of a 6-term f32 dot product: ~1e-6 absolute
compare("two_outputs (path)", p1, f1, atol=1e-5, rtol=1e-5)
compare("two_outputs (bytes)", m1.SerializeToString(), f1, atol=1e-5, rtol=1e-5)

# ---------------------------------------------------------------- model 2: f16, bool and f64 outputs, no metadata
g2 = H.make_graph(
    [H.make_node("Cast", ["h"], ["hf"], to=T.FLOAT, name="widen"),
     H.make_node("Greater", ["hf", "t"], ["gt"], name="gt"),
     H.make_node("Softmax", ["d"], ["sm"], axis=-1, name="softmax")],
    "dtypes",
    [H.make_tensor_value_info("h", T.FLOAT16, [2, 3]), H.make_tensor_value_info("t", T.FLOAT, [1, 3]),
     H.make_tensor_value_info("d", T.DOUBLE, ["n", 5])],
    [H.make_tensor_value_info("hf", T.FLOAT, [2, 3]), H.make_tensor_value_info("gt", T.BOOL, [2, 3]),
     H.make_tensor_value_info("sm", T.DOUBLE, ["n", 5])])
m2 = H.make_model(g2, opset_imports=[H.make_opsetid("", 17)], ir_version=8)
f2 = {"h": rng.uniform(-4, 4, (2, 3)).astype(np.float16), "t": rng.uniform(-4, 4, (1, 3)).astype(np.float32),
      "d": rng.uniform(-3, 3, (4, 5))}
# the f16 -> f32 cast is exact; softmax in f64: 1e-12
compare("dtypes", save(m2, "dtypes.onnx"), f2, atol=1e-12, rtol=1e-12)

# ---------------------------------------------------------------- model 2b: output declarations that disagree
# get_outputs merges a declared shape with the inferred one as onnxruntime
# does: a size beats a symbol, two sizes that differ give None (rlx showed the
# declared [5, 3] of an output that runs as [2, 3], and ['q', 5] for [2, 3])
g2b = H.make_graph(
    [H.make_node("Relu", ["x"], ["a"]), H.make_node("Neg", ["x"], ["b"]), H.make_node("Abs", ["v"], ["c"])],
    "declared", [H.make_tensor_value_info("x", T.FLOAT, [2, 3]), H.make_tensor_value_info("v", T.FLOAT, ["N", 3])],
    [H.make_tensor_value_info("a", T.FLOAT, [5, 3]), H.make_tensor_value_info("b", T.FLOAT, ["q", 5]),
     H.make_tensor_value_info("c", T.FLOAT, [4, "q"])])
f2b = {"x": rng.uniform(-1, 1, (2, 3)).astype(np.float32), "v": rng.uniform(-1, 1, (4, 3)).astype(np.float32)}
compare("declared shapes", save(H.make_model(g2b, opset_imports=[H.make_opsetid("", 17)], ir_version=8),
                                "declared.onnx"), f2b, atol=0, rtol=0)
# a negative dim_value (rlx takes it as dynamic, with a warning) showed as
# 2^64 - k, an empty dim_param as '': None for both, as onnxruntime (an
# output declared [5, -1] that runs as [2, 3] is not compared: rlx shows
# [None, 3], onnxruntime [None, None])
m2c = H.make_model(g2b, opset_imports=[H.make_opsetid("", 17)], ir_version=8)
m2c.graph.input[1].type.tensor_type.shape.dim[0].dim_param = ""
compare("an empty declared dim_param", save(m2c, "declared_neg.onnx"), f2b, atol=0, rtol=0)
m2c.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -5
shapes = [[list(i.shape) for i in S(save(m2c, "declared_neg2.onnx"), providers=["CPUExecutionProvider"]).get_inputs()]
          for S in (rlx.InferenceSession, onnxruntime.InferenceSession)]
C.check(shapes[0] == shapes[1] == [[None, 3], [None, 3]], "inputs declared [-5, 3] and ['', 3]: rlx %r, onnxruntime %r"
        % tuple(shapes))

# ---------------------------------------------------------------- model 3: a convolution network, optimisation levels
Wc = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
Bc = rng.uniform(0.1, 0.5, 8).astype(np.float32)
g3 = H.make_graph(
    [H.make_node("Conv", ["x", "Wc", "Bc"], ["c"], pads=[1, 1, 1, 1], name="conv"),
     H.make_node("Relu", ["c"], ["r"], name="relu"),
     H.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
     H.make_node("Sigmoid", ["p"], ["y"], name="sig")],
    "convnet", [H.make_tensor_value_info("x", T.FLOAT, ["N", 3, "H", "W"])],
    [H.make_tensor_value_info("y", T.FLOAT, ["N", 8, 1, 1])], initializer=[NH.from_array(Wc, "Wc"),
                                                                          NH.from_array(Bc, "Bc")])
m3 = H.make_model(g3, opset_imports=[H.make_opsetid("", 13)], ir_version=8)
p3 = save(m3, "convnet.onnx")
f3 = {"x": rng.uniform(-1, 1, (2, 3, 9, 7)).astype(np.float32)}
# 27-term f32 dot products averaged, then a sigmoid: 1e-5 absolute
reports = {}
for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_ALL"):
    so_ort = onnxruntime.SessionOptions()
    so_ort.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    _, _, ref, _ = script(onnxruntime, p3, f3, ["CPUExecutionProvider"], so_ort)
    so_rlx = rlx.SessionOptions()
    # onnxruntime's enum member, as user code passes it
    so_rlx.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    sess, _, outs, _ = script(rlx, p3, f3, ["CPUExecutionProvider"], so_rlx)
    C.check(np.allclose(outs[0], ref[0], atol=1e-5, rtol=1e-5), "convnet %s: output differs" % level)
    disabled = sess.get_session_options().rlx_options().get("passes.disable", "")
    C.check(("fuse_activation" in disabled) == (level != "ORT_ENABLE_ALL")
            and ("cse" in disabled) == (level == "ORT_DISABLE_ALL"), "convnet %s: passes.disable %r" % (level, disabled))
    reports[level] = sess.rlx_session.dispatch_report
C.check(reports["ORT_DISABLE_ALL"] != reports["ORT_ENABLE_ALL"], "the optimisation level changed nothing:\n"
        + reports["ORT_DISABLE_ALL"])
# a value that is no level is refused when set, as onnxruntime's setter
# refuses it (these ran with every pass on)
for bad in ("fast", 12345, 3, -1, 1.0, True, None):
    so_rlx = rlx.SessionOptions()
    try:
        so_rlx.graph_optimization_level = bad
        C.check(False, "graph_optimization_level = %r accepted" % (bad,))
    except TypeError as e:
        C.check("GraphOptimizationLevel" in str(e) and repr(bad) in str(e), "graph_optimization_level = %r: %s" % (bad, e))
    C.check(so_rlx.graph_optimization_level == rlx.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "a refused level changed the setting to %r" % so_rlx.graph_optimization_level)
so_rlx.graph_optimization_level = np.int64(1)
C.check(so_rlx.rlx_options().get("passes.disable", "").startswith("fuse_"), "np.int64(1): %r" % so_rlx.rlx_options())
compare("convnet (an rlx config entry)", p3, f3, atol=1e-5, rtol=1e-5, rlx_options={"debug.dump_ir": "0"})

# ---------------------------------------------------------------- the real model
ocr = os.path.join(R.ROOT, "models", "ppocrv4_det.onnx")
if os.path.exists(ocr):
    # a small page-like input; the probability map agrees with onnxruntime's
    # to ~3e-5 at 192x384 (README), 2e-4 leaves room for the GPU's order of sums
    compare("ppocrv4_det", ocr, {"x": rng.uniform(-2, 2, (1, 3, 64, 96)).astype(np.float32)}, atol=2e-4, rtol=0)
else:
    print("models/ppocrv4_det.onnx is absent: the real-model comparison is skipped")


# ---------------------------------------------------------------- providers, options, errors
def raises(fn, exc, needle, what):
    try:
        fn()
    except exc as e:
        return C.check(needle in str(e), "%s: %s %r lacks %r" % (what, type(e).__name__, str(e), needle))
    return C.check(False, "%s: no %s raised" % (what, exc.__name__))


raises(lambda: rlx.InferenceSession(p1, providers=["CUDAExecutionProvider"]), ValueError,
       "WebGpuExecutionProvider", "unknown provider")
raises(lambda: rlx.InferenceSession(p1, providers="CPUExecutionProvider"), TypeError, "list", "providers as a str")
raises(lambda: rlx.InferenceSession(p1, providers=[("WebGpuExecutionProvider", {"device_id": 0, "color": 1})]),
       ValueError, "'color'", "unknown provider option")
raises(lambda: rlx.InferenceSession(p1, onnxruntime.SessionOptions()), TypeError, "rlx.SessionOptions",
       "an onnxruntime SessionOptions")
raises(lambda: rlx.InferenceSession(p1, {"gpu.f16": "1"}), TypeError, "rlx.SessionOptions", "a dict as sess_options")
# output_names of the wrong type: a TypeError that says what is expected (a
# tester got "'int' object is not iterable" from inside the package)
for bad in (5, "y", [1], {"y": 1}):
    raises(lambda: rlx.InferenceSession(p1).run(bad, {}), TypeError, "output_names must be a list",
           "run(%r, ...)" % (bad,))
# an output asked for twice comes back as two arrays, as onnxruntime returns
# it (rlx returned one object twice: writing to one changed the other), and
# a 1-D numpy array of names selects as a list does (onnxruntime takes it)
sd = rlx.InferenceSession(p1)
dup = sd.run(["k", "y", "k"], f1)
C.check(dup[0] is not dup[2] and np.array_equal(dup[0], dup[2]), "run(['k', 'y', 'k']): one array twice")
dup[0][...] = 0
C.check(np.array_equal(dup[2], sd.run(["k"], f1)[0]), "run(['k', 'y', 'k']): writing the first changed the second")
arr = sd.run(np.array(["y", "k"]), f1)
C.check(len(arr) == 2 and np.array_equal(arr[0], dup[1]), "run(np.array(['y', 'k'])) gave %d outputs" % len(arr))
so = rlx.SessionOptions()
so.add_session_config_entry("gpu.f61", "1")
raises(lambda: rlx.InferenceSession(p1, so), rlx.Error, "gpu.f61", "unknown rlx option")
# onnxruntime's config keys: those with an rlx equivalent map onto it, the
# thread and allocator tuning ones are taken without effect, any other is
# refused listing the ones rlx takes (every one was an unknown rlx option)
ORT_ENTRIES = {"session.disable_prepacking": "1", "session.intra_op.allow_spinning": "1",
               "session.inter_op.allow_spinning": "0", "session.force_spinning_stop": "1",
               "session.dynamic_block_base": "4", "session.intra_op_thread_affinities": "1",
               "session.use_env_allocators": "0", "session.use_device_allocator_for_initializers": "1"}
C.check(set(ORT_ENTRIES) == set(rlx.ORT_CONFIG_MAPPED) | set(rlx.ORT_CONFIG_IGNORED),
        "the keys tested are the table's: %r" % sorted(set(rlx.ORT_CONFIG_MAPPED) | set(rlx.ORT_CONFIG_IGNORED)))
ort_so = onnxruntime.SessionOptions()
ort_so.intra_op_num_threads = 2  # onnxruntime checks the affinities: one per thread but the caller's
for k, v in ORT_ENTRIES.items():
    ort_so.add_session_config_entry(k, v)
compare("two_outputs (onnxruntime config keys)", p1, f1, atol=1e-5, rtol=1e-5, sess_options=ort_so,
        rlx_options=ORT_ENTRIES)
for entries, want in (({"session.disable_prepacking": "1"}, {"cpu.prepack": "0"}),
                      ({"session.disable_prepacking": "0"}, {"cpu.prepack": "1"}),
                      ({"session.disable_prepacking": "1", "cpu.prepack": "1"}, {"cpu.prepack": "1"}),
                      ({"session.intra_op.allow_spinning": "0"}, {"cpu.pool_spin_us": "0"}),
                      ({"session.intra_op.allow_spinning": "1", "session.dynamic_block_base": "2"}, {})):
    so = rlx.SessionOptions()
    for k, v in entries.items():
        so.add_session_config_entry(k, v)
    C.check(so.rlx_options() == want, "%r -> rlx options %r, expected %r" % (entries, so.rlx_options(), want))
for k, v, needle in (("session.set_denormal_as_zero", "1", "session.disable_prepacking (0/1)"),
                     ("session.set_denormal_as_zero", "1", "taken without effect: session.inter_op.allow_spinning"),
                     ("session.disable_prepacking", "yes", "expected '0' or '1'")):
    so = rlx.SessionOptions()
    so.add_session_config_entry(k, v)
    raises(lambda: rlx.InferenceSession(p1, so), rlx.Error, needle, "config entry %s=%s" % (k, v))
# the worker pool is per process: sessions of this one have fixed its spin,
# so allow_spinning "0" is refused naming the entry; in a fresh process the
# first session takes it
so = rlx.SessionOptions()
so.add_session_config_entry("session.intra_op.allow_spinning", "0")
raises(lambda: rlx.InferenceSession(p1, so), rlx.Error, "session config entry session.intra_op.allow_spinning='0' "
       "asks for rlx's cpu.pool_spin_us=0: the CPU worker pool is per process", "allow_spinning 0 after other sessions")
fresh = subprocess.run(
    [sys.executable, "-c", "import sys, rlx; so = rlx.SessionOptions(); "
     "so.add_session_config_entry('session.intra_op.allow_spinning', '0'); rlx.InferenceSession(sys.argv[1], so); "
     "print('ok')", p1], capture_output=True, text=True,
    env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(rlx.__file__))))
C.check(fresh.returncode == 0 and fresh.stdout.strip() == "ok",
        "allow_spinning 0 in a fresh process: %d %s%s" % (fresh.returncode, fresh.stdout, fresh.stderr[-2000:]))
so = rlx.SessionOptions()
so.enable_profiling = True
raises(lambda: rlx.InferenceSession(p1, so), rlx.Error, "enable_profiling", "profiling")
# every attribute of onnxruntime's SessionOptions and RunOptions can be set on
# rlx's (RunOptions' logid and only_execute_path_to_fetches were an
# AttributeError), and a name onnxruntime does not have is an AttributeError
# on both (SessionOptions kept a misspelt intra_op_num_thread, changing nothing)
for ort_cls, rlx_cls in ((onnxruntime.SessionOptions, rlx.SessionOptions), (onnxruntime.RunOptions, rlx.RunOptions)):
    ort_obj, rlx_obj = ort_cls(), rlx_cls()
    for name in dir(ort_obj):
        value = getattr(ort_obj, name)
        if name.startswith("_") or callable(value) or name in ("enable_profiling", "optimized_model_filepath"):
            continue
        try:
            setattr(rlx_obj, name, value)
        except (AttributeError, TypeError) as e:
            C.check(False, "%s.%s = %r (onnxruntime's default): %s" % (rlx_cls.__name__, name, value, e))
    for typo in ("intra_op_num_thread", "graph_optimisation_level", "terminat"):
        for obj in (ort_obj, rlx_obj):
            try:
                setattr(obj, typo, 1)
                C.check(False, "%s.%s = 1 accepted" % (type(obj).__module__ + "." + type(obj).__name__, typo))
            except AttributeError:
                pass
    if rlx_cls is rlx.SessionOptions:
        got = rlx.InferenceSession(p1, rlx_obj).run(None, f1)
    else:
        got = rlx.InferenceSession(p1).run(None, f1, rlx_obj)
    C.check(np.array_equal(got[0], rlx.InferenceSession(p1).run(None, f1)[0]), "%s with onnxruntime's defaults: "
            "another output" % rlx_cls.__name__)
# intra_op_num_threads: an int, as onnxruntime's setter (a float or str is a
# TypeError; rlx refuses bool too); counts above the pool's 256 run on 256
# (cpu.threads takes them too, with an info note)
for bad in (2.5, "2", True):
    def set_threads(v=bad):
        rlx.SessionOptions().intra_op_num_threads = v
    raises(set_threads, TypeError, "intra_op_num_threads", "intra_op_num_threads = %r" % (bad,))
# outside cpu.threads' range (0 to 2^20): a ValueError naming it (2^70 ran on 256)
for bad in (2**70, (1 << 20) + 1, -1):
    def set_threads(v=bad):
        rlx.SessionOptions().intra_op_num_threads = v
    raises(set_threads, ValueError, "expected 0 to 1048576", "intra_op_num_threads = %r" % (bad,))
so = rlx.SessionOptions()
so.intra_op_num_threads = 1 << 20
C.check(so.rlx_options().get("cpu.threads") == 256, "intra_op_num_threads 2^20: %r" % so.rlx_options())
notes = []
rlx.set_log_callback(lambda level, msg: notes.append(msg))
rlx.Session(rlx.Model(p1), "cpu", options={"cpu.threads": 257})
rlx.set_log_callback(None)
C.check(any("cpu.threads=257" in n and "at most 256" in n for n in notes), "cpu.threads 257: no note (%r)" % notes)
sess = rlx.InferenceSession(p1)
C.check(sess.get_providers() == ["CPUExecutionProvider"], "default provider %r" % sess.get_providers())
raises(lambda: sess.run(["y", "nope"], f1), rlx.Error, "nope", "unknown output name")
raises(lambda: sess.run(None, {"x": f1["x"]}), rlx.Error, "ids", "missing input")
raises(lambda: rlx.InferenceSession(b"\x08\x07junk"), rlx.Error, "<memory>", "corrupt bytes")
C.check(sess.run([], f1)[1].tolist() == (f1["ids"] ** 2).tolist(), "run([]) returns every output")
# provider_options must be a list of dicts, as onnxruntime says (a dict,
# None or a list of pairs raised KeyError, TypeError or dict()'s ValueError)
for po, needle in (({"cpu.threads": "1"}, "must be a list of dicts"), ([None], "provider_options[0] must be a dict"),
                   (["abc"], "provider_options[0] must be a dict"), ([[("cpu.threads", "1")]], "must be a dict"),
                   (5, "must be a list of dicts")):
    raises(lambda: rlx.InferenceSession(p1, providers=["CPUExecutionProvider"], provider_options=po), TypeError,
           needle, "provider_options=%r" % (po,))
s = rlx.InferenceSession(p1, providers=["CPUExecutionProvider"], provider_options=({"cpu.threads": 2},))
C.check(s.get_provider_options() == {"CPUExecutionProvider": {"cpu.threads": "2"}}, "a tuple of one dict: %r"
        % s.get_provider_options())
if GPU:
    s = rlx.InferenceSession(p1, providers=[("WebGpuExecutionProvider", {"device_id": 0, "gpu.f16": True})])
    C.check(s.get_provider_options()["WebGpuExecutionProvider"] == {"device_id": "0", "gpu.f16": "1"},
            "provider options %r" % s.get_provider_options())
    C.check(np.allclose(s.run(["k"], f1)[0], f1["ids"] ** 2), "device_id 0 + gpu.f16: k differs")
    # the README's claim: Python sets the f16 mode (here through the rlx API)
    f16 = rlx.Session(rlx.Model(p3), device="gpu", options={"gpu.f16": True})
    (y16,) = f16.run(f3)
    ref = onnxruntime.InferenceSession(p3).run(None, f3)[0]
    # binary16 weights (11-bit significands) in 27-term sums: 2e-3 absolute after the sigmoid
    C.check(np.allclose(y16, ref, atol=2e-3), "gpu.f16 session: max abs diff %.3g" % float(np.abs(y16 - ref).max()))
else:
    # no adapter: the WebGPU provider gives way to the next one, or fails when it is alone
    s = rlx.InferenceSession(p1, providers=["WebGpuExecutionProvider", "CPUExecutionProvider"])
    C.check(s.get_providers() == ["CPUExecutionProvider"], "fallback providers %r" % s.get_providers())
    raises(lambda: rlx.InferenceSession(p1, providers=["WebGpuExecutionProvider"]), rlx.Error, "", "no adapter")
C.check(rlx.get_available_providers()[-1] == "CPUExecutionProvider", "providers %r" % rlx.get_available_providers())

# ---------------------------------------------------------------- overridable initializers (IR 3 and IR 8)
# Initializers that the graph also lists as inputs. IR >= 4: onnxruntime
# lists them in get_overridable_initializers (not get_inputs), takes a fed
# value for them and uses the initializer when none is fed. IR 3: they are
# constants; feeding one is refused. y = x * Relu(w) (Relu(w) folds),
# z = MatMul(x, v) (v is packed), u = x + k (k a plain initializer).
Wo = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
Vo = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
Ko = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
go = H.make_graph(
    [H.make_node("Relu", ["w"], ["rw"], name="relu"), H.make_node("Mul", ["x", "rw"], ["y"], name="mul"),
     H.make_node("MatMul", ["x", "v"], ["z"], name="mm"), H.make_node("Add", ["x", "k"], ["u"], name="add")],
    "overridable",
    [H.make_tensor_value_info("x", T.FLOAT, [2, 3]), H.make_tensor_value_info("w", T.FLOAT, [2, 3]),
     H.make_tensor_value_info("v", T.FLOAT, [3, 4])],
    [H.make_tensor_value_info("y", T.FLOAT, [2, 3]), H.make_tensor_value_info("z", T.FLOAT, [2, 4]),
     H.make_tensor_value_info("u", T.FLOAT, [2, 3])],
    initializer=[NH.from_array(Wo, "w"), NH.from_array(Vo, "v"), NH.from_array(Ko, "k")])
fo = {"x": rng.uniform(-2, 2, (2, 3)).astype(np.float32)}
w_fed = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
v_fed = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
provs = [["CPUExecutionProvider"]] + ([["WebGpuExecutionProvider", "CPUExecutionProvider"]] if GPU else [])
for ir in (3, 8):
    mo = H.make_model(go, opset_imports=[H.make_opsetid("", 13)], ir_version=ir)
    po = save(mo, "overridable_ir%d.onnx" % ir)
    ref_s = onnxruntime.InferenceSession(po, providers=["CPUExecutionProvider"])
    ref_ov = [(i.name, list(i.shape), i.type) for i in ref_s.get_overridable_initializers()]
    for p in provs:
        tag = "overridable IR %d [%s]" % (ir, p[0])
        s = rlx.InferenceSession(po, providers=p)
        C.check([i.name for i in s.get_inputs()] == [i.name for i in ref_s.get_inputs()],
                "%s: get_inputs %r" % (tag, [i.name for i in s.get_inputs()]))
        ov = [(i.name, list(i.shape), i.type) for i in s.get_overridable_initializers()]
        C.check(ov == ref_ov, "%s: get_overridable_initializers\n  rlx %r\n  ort %r" % (tag, ov, ref_ov))
        feeds = [("none", {})] + ([("w", {"w": w_fed}), ("v", {"v": v_fed}), ("w, v", {"w": w_fed, "v": v_fed}),
                                  ("none again", {})] if ir >= 4 else [])
        for what, extra in feeds:
            f = dict(fo, **extra)
            ref = ref_s.run(None, f)
            got = s.run(None, f)
            # y and u: one f32 operation each (exact on the CPU); z: 3-term sums
            C.check(all(np.allclose(a, b, atol=1e-5, rtol=1e-5) for a, b in zip(got, ref)),
                    "%s: fed %s: max abs diff %s" % (tag, what, [float(np.abs(a - b).max()) for a, b in zip(got, ref)]))
        if ir < 4:  # onnxruntime: "Invalid input name: w"; rlx names it an initializer
            raises(lambda: s.run(None, dict(fo, w=w_fed)), rlx.Error, "'w' is an initializer", tag + ": feeding w")
        raises(lambda: s.run(None, dict(fo, k=Ko)), rlx.Error, "'k' is an initializer", tag + ": feeding k")
    if ir >= 4:
        C.check([i["name"] for i in rlx.Model(po).overridable_initializers] == ["w", "v"],
                "Model.overridable_initializers %r" % rlx.Model(po).overridable_initializers)
# the shape a fed value may have is the one the graph input declares (['M', 3]),
# not the initializer's ([1, 3]): onnxruntime lists it and takes a [2, 3]
gd = H.make_graph([H.make_node("Add", ["x", "w"], ["y"], name="add")], "overridable_dyn",
                  [H.make_tensor_value_info("x", T.FLOAT, ["N", 3]), H.make_tensor_value_info("w", T.FLOAT, ["M", 3])],
                  [H.make_tensor_value_info("y", T.FLOAT, None)], initializer=[NH.from_array(Wo[:1], "w")])
pd = save(H.make_model(gd, opset_imports=[H.make_opsetid("", 13)], ir_version=8), "overridable_dyn.onnx")
ref_s = onnxruntime.InferenceSession(pd, providers=["CPUExecutionProvider"])
s = rlx.InferenceSession(pd)
ov, ref_ov = ([(i.name, list(i.shape), i.type) for i in x.get_overridable_initializers()] for x in (s, ref_s))
C.check(ov == ref_ov, "overridable (declared ['M', 3]): get_overridable_initializers rlx %r, ort %r" % (ov, ref_ov))
for what, f in (("none", fo), ("w [2, 3]", dict(fo, w=w_fed)), ("none again", fo)):
    ref, got = ref_s.run(None, f)[0], s.run(None, f)[0]  # one f32 add: exact
    C.check(ref.shape == got.shape and np.array_equal(ref, got), "overridable (declared ['M', 3]) fed %s: rlx %r, ort %r"
            % (what, got, ref))

# a graph input whose declaration contradicts its initializer (w f32[3]):
# onnxruntime refuses the model at any IR version, and so does rlx, naming
# the input (was: loaded, the declaration dropped); an agreeing declaration
# (a dim_param, -1) loads in both
W3 = np.array([0.5, -1.5, 2.0], np.float32)
for ir in (3, 8):
    for et, decl, ok in ((T.FLOAT, [5], False), (T.FLOAT16, [3], False), (T.FLOAT, [1, 3], False), (T.FLOAT, [], False),
                         (T.FLOAT, ["n"], True), (T.FLOAT, [-1], True), (T.FLOAT, [3], True)):
        gm = H.make_graph([H.make_node("Add", ["x", "w"], ["y"], name="add")], "ov_mismatch",
                          [H.make_tensor_value_info("x", T.FLOAT, [3]), H.make_tensor_value_info("w", et, decl)],
                          [H.make_tensor_value_info("y", T.FLOAT, None)], initializer=[NH.from_array(W3, "w")])
        pm = save(H.make_model(gm, opset_imports=[H.make_opsetid("", 13)], ir_version=ir), "ov_mismatch.onnx")
        tag = "IR %d w declared %s %r, initializer f32 [3]" % (ir, "f16" if et == T.FLOAT16 else "f32", decl)
        try:
            onnxruntime.InferenceSession(pm, providers=["CPUExecutionProvider"])
            ort_ok = True
        except Exception:
            ort_ok = False
        C.check(ort_ok == ok, "%s: onnxruntime %s" % (tag, "loads it" if ort_ok else "refuses it"))
        if ok:
            xs = rng.uniform(-1, 1, 3).astype(np.float32)
            got = rlx.Session(rlx.Model(pm)).run({"x": xs})[0]
            C.check(np.array_equal(got, xs + W3), "%s: y %r" % (tag, got))
        else:
            raises(lambda: rlx.Model(pm), rlx.Error, "graph input 'w' is declared", tag)

# a graph input that declares a type but no shape takes a fed value of any
# shape, as onnxruntime does (was: pinned to the initializer's [3], "the
# model expects rank 1"); not fed, the initializer
gn = H.make_graph([H.make_node("Add", ["x", "w"], ["y"], name="add")], "ov_noshape",
                  [H.make_tensor_value_info("x", T.FLOAT, [2, 3]), H.make_tensor_value_info("w", T.FLOAT, None)],
                  [H.make_tensor_value_info("y", T.FLOAT, None)], initializer=[NH.from_array(W3, "w")])
pn = save(H.make_model(gn, opset_imports=[H.make_opsetid("", 13)], ir_version=8), "ov_noshape.onnx")
ref_s = onnxruntime.InferenceSession(pn, providers=["CPUExecutionProvider"])
mn = rlx.Model(pn)
C.check([(o["name"], o["shape"]) for o in mn.overridable_initializers] == [("w", None)],
        "ov_noshape: Model.overridable_initializers %r" % mn.overridable_initializers)
sn = rlx.Session(mn)
xn = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
for wshape in (None, (2, 3), (2, 1, 1), (), (3,), (1, 2, 1, 3)):
    f = {"x": xn} if wshape is None else {"x": xn, "w": rng.uniform(-1, 1, wshape).astype(np.float32)}
    ref = ref_s.run(None, f)[0]
    try:
        got = sn.run(f)[0]
    except rlx.Error as e:
        got = e
    C.check(isinstance(got, np.ndarray) and got.shape == ref.shape and np.array_equal(got, ref),  # one add: exact
            "ov_noshape fed w %s: rlx %r, ort %r" % (wshape, got, ref))

# overridable initializers past the 64th may be fed (was: "feeding one past
# the 64th is not supported"; old torch exports list every weight as an
# input): y = Sum(x, w0..w149); sets that cross word boundaries, more sets
# than the sub-session cache holds, a set again after it was evicted
NW = 150
Ws = [rng.uniform(-1, 1, 2).astype(np.float32) for _ in range(NW)]
gw = H.make_graph([H.make_node("Sum", ["x"] + ["w%d" % k for k in range(NW)], ["y"], name="sum")], "ov_many",
                  [H.make_tensor_value_info("x", T.FLOAT, [2])] +
                  [H.make_tensor_value_info("w%d" % k, T.FLOAT, [2]) for k in range(NW)],
                  [H.make_tensor_value_info("y", T.FLOAT, None)],
                  initializer=[NH.from_array(Ws[k], "w%d" % k) for k in range(NW)])
pw = save(H.make_model(gw, opset_imports=[H.make_opsetid("", 13)], ir_version=8), "ov_many.onnx")
ref_s = onnxruntime.InferenceSession(pw, providers=["CPUExecutionProvider"])
sw = rlx.Session(rlx.Model(pw))
sets = [[64], [149], [0, 63, 64, 127, 128], [149], [1, 65], [2, 66, 130], [100], [64], [0, 63, 64, 127, 128], []]
for fed in sets:
    f = {"x": rng.uniform(-1, 1, 2).astype(np.float32)}
    f.update({"w%d" % k: rng.uniform(-1, 1, 2).astype(np.float32) for k in fed})
    ref = ref_s.run(None, f)[0]
    try:
        got = sw.run(f)[0]
    except rlx.Error as e:
        got = e
    C.check(isinstance(got, np.ndarray) and np.allclose(got, ref, atol=1e-5, rtol=1e-5),
            "ov_many fed %s: rlx %r, ort %r" % (["w%d" % k for k in fed], got, ref))

# rlx's own API takes bytes too
mb = rlx.Model(m1.SerializeToString())
C.check([i["name"] for i in mb.inputs] == ["x", "ids"] and mb.inputs[0]["shape"] == ["batch", "seq", 6],
        "Model(bytes) inputs %r" % mb.inputs)
y_b = rlx.Session(mb).run(f1)[0]
C.check(np.array_equal(y_b, rlx.Session(rlx.Model(p1)).run(f1)[0]), "Model(bytes) and Model(path) differ")
raises(lambda: rlx.Model(b""), rlx.Error, "", "Model(b'')")

# a model with external data given as bytes: InferenceSession reads the data
# from the current folder, as onnxruntime does (rlx refused it, naming
# rlx_model_load_onnx_memory); rlx.Model(data) without base_dir still
# refuses it and says how to give the folder from Python
ext_dir = os.path.join(tmp, "ext")
os.makedirs(ext_dir)
We = rng.standard_normal((6, 4)).astype(np.float32)
me = H.make_model(H.make_graph([H.make_node("MatMul", ["x", "We"], ["y"])], "ext",
                               [H.make_tensor_value_info("x", T.FLOAT, [2, 6])],
                               [H.make_tensor_value_info("y", T.FLOAT, [2, 4])], [NH.from_array(We, "We")]),
                  opset_imports=[H.make_opsetid("", 17)], ir_version=8)
onnx.save(me, os.path.join(ext_dir, "ext.onnx"), save_as_external_data=True, location="ext.bin", size_threshold=0)
with open(os.path.join(ext_dir, "ext.onnx"), "rb") as f:
    ext_bytes = f.read()
fe = {"x": rng.standard_normal((2, 6)).astype(np.float32)}
cwd = os.getcwd()
os.chdir(ext_dir)
try:
    want = onnxruntime.InferenceSession(ext_bytes, providers=["CPUExecutionProvider"]).run(None, fe)[0]
    got = rlx.InferenceSession(ext_bytes).run(None, fe)[0]
    C.check(np.allclose(got, want, atol=1e-5, rtol=1e-5), "InferenceSession(bytes) with external data: %r" % got)
    raises(lambda: rlx.Model(ext_bytes), rlx.Error, "rlx.Model(data, base_dir=FOLDER)", "Model(bytes) of external data")
finally:
    os.chdir(cwd)

# feeds given as Python lists take the inputs' declared types, as
# onnxruntime converts them (numpy alone would make float64: "has dtype f64")
sl = rlx.InferenceSession(p1)
got = sl.run(None, {"x": f1["x"].tolist(), "ids": f1["ids"].tolist()})
want = sl.run(None, f1)
C.check(all(np.array_equal(a, b) for a, b in zip(got, want)), "list feeds differ from the arrays' outputs")
raises(lambda: sl.run(None, {"x": [[["a"] * 6] * 3] * 2, "ids": f1["ids"].tolist()}), rlx.Error,
       "input 'x'", "a list of strings for a float input")

# the passes SessionOptions may disable are the ones the option accepts
rc, out, _ = R.run([R.exe("rlx"), "options"])
text = out.split("passes.disable", 1)[-1].split("\n")[1]  # the line that describes it
named = set(re.findall(r"\b(cse|fold_\w+|fuse_\w+)\b", text))
C.check(named == set(rlx._ort.OPTIONAL_PASSES), "passes.disable names %r, rlx._ort lists %r"
        % (sorted(named), rlx._ort.OPTIONAL_PASSES))

C.done()
