"""The Python package as a user installs it: `pip wheel .` builds the wheel
(scikit-build-core, pyproject.toml; the CMake build is kept in
BUILD/pywheel so that a second run is incremental), a fresh venv installs it
(pip fetches numpy), and a script run there, from a folder outside the source
tree, without PYTHONPATH, LD_LIBRARY_PATH or RLX_LIBRARY, imports rlx and runs
a model through InferenceSession on the CPU and, when an adapter exists, on
the GPU (from a path and from bytes). Its outputs must match onnxruntime's
(run here) within 1e-5, and the process must have loaded librlx.so,
libwgpu_native.so, OpenBLAS and protobuf-c from the installed package, not
from the build tree or the system (/proc/self/maps).

Needs PyPI (scikit-build-core, numpy; pip's cache serves later runs). Skips
(exit 77) while librlx.so is not built or is built with the sanitizers
(this test is about the wheel, and a sanitizer build is for the C tests)."""
import glob
import json
import os
import shutil
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

why = R.bindings_unavailable()
if why:
    print("SKIP: " + why)
    sys.exit(R.SKIP)
C = R.Checker("test_wheel")
tmp = tempfile.mkdtemp(prefix="rlx_wheel_")
cache = open(os.path.join(R.BUILD, "CMakeCache.txt")).read()
webgpu = "RLX_WEBGPU:BOOL=OFF" not in cache


def sh(args, **kw):
    print("$ " + " ".join(args), flush=True)
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode:
        print(p.stdout[-6000:] + p.stderr[-6000:])
    return p


# ---------------------------------------------------------------- build the wheel
wheels = os.path.join(tmp, "wheels")
p = sh([sys.executable, "-m", "pip", "wheel", R.ROOT, "--no-deps", "-w", wheels,
        "-C", "build-dir=" + os.path.join(R.BUILD, "pywheel"),
        "-C", "cmake.define.RLX_WEBGPU=" + ("ON" if webgpu else "OFF")], timeout=1800)
found = glob.glob(os.path.join(wheels, "rlx-*.whl"))
if not C.check(p.returncode == 0 and len(found) == 1, "pip wheel: exit %d, wheels %r" % (p.returncode, found)):
    C.done()
wheel = found[0]
print("wheel:", os.path.basename(wheel), "%.1f MB" % (os.path.getsize(wheel) / 1e6))

# ---------------------------------------------------------------- a fresh venv, outside the tree
venv = os.path.join(tmp, "venv")
base_python = getattr(sys, "_base_executable", sys.executable)  # not the project's .venv
p = sh([base_python, "-m", "venv", venv])
py = os.path.join(venv, "bin", "python")
p = p.returncode == 0 and sh([py, "-m", "pip", "install", "-q", wheel], timeout=900)
if not C.check(bool(p) and p.returncode == 0, "pip install of the wheel into a fresh venv failed"):
    C.done()

# the model: y = Tanh(x W + b) with a symbolic batch
rng = np.random.default_rng(int(os.environ.get("RLX_TEST_SEED", "3")))
W = rng.standard_normal((8, 5)).astype(np.float32)
b = rng.uniform(0.5, 1.5, 5).astype(np.float32)
g = H.make_graph([H.make_node("MatMul", ["x", "W"], ["h"]), H.make_node("Add", ["h", "b"], ["hb"]),
                  H.make_node("Tanh", ["hb"], ["y"])], "wheel",
                 [H.make_tensor_value_info("x", T.FLOAT, ["batch", 8])],
                 [H.make_tensor_value_info("y", T.FLOAT, ["batch", 5])],
                 initializer=[NH.from_array(W, "W"), NH.from_array(b, "b")])
work = os.path.join(tmp, "work")
os.makedirs(work)
model = os.path.join(work, "model.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)], ir_version=8), model)
x = rng.uniform(-2, 2, (3, 8)).astype(np.float32)
np.save(os.path.join(work, "x.npy"), x)

user_script = r'''
import json, os, sys
import numpy as np
import rlx
out = {"file": rlx.__file__, "version": rlx.__version__, "providers": rlx.get_available_providers(), "runs": {}}
x = np.load("x.npy")
for provs in (["CPUExecutionProvider"], ["WebGpuExecutionProvider"]):
    if provs[0] not in out["providers"]:
        continue
    for src in ("path", "bytes"):
        sess = rlx.InferenceSession("model.onnx" if src == "path" else open("model.onnx", "rb").read(),
                                    providers=provs)
        i = sess.get_inputs()[0]
        (y,) = sess.run(None, {i.name: x})
        np.save("y_%s_%s.npy" % (provs[0], src), y)
        out["runs"]["%s %s" % (provs[0], src)] = [i.name, i.shape, i.type, sess.rlx_session.device_name]
out["maps"] = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l})
print(json.dumps(out))
'''
env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "RLX_LIBRARY",
                                                         "PYTHONHOME", "VIRTUAL_ENV")}
p = sh([py, "-c", user_script], cwd=work, env=env, timeout=900)
if not C.check(p.returncode == 0, "the user's script failed in the fresh venv"):
    C.done()
res = json.loads(p.stdout.strip().splitlines()[-1])
pkg = os.path.dirname(res["file"])
C.check(pkg.startswith(venv), "rlx imported from %s, not the venv" % res["file"])
gpu_here = webgpu and len(R.import_rlx().adapters()) > 0  # the build tree's bindings, for comparison
C.check(("WebGpuExecutionProvider" in res["providers"]) == gpu_here, "providers in the venv %r, adapter here: %s"
        % (res["providers"], gpu_here))
want = ["CPUExecutionProvider"] + (["WebGpuExecutionProvider"] if gpu_here else [])
print("runs:", json.dumps(res["runs"]))
(ref,) = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
for prov in want:
    for src in ("path", "bytes"):
        key = "%s %s" % (prov, src)
        C.check(res["runs"].get(key, [None])[:3] == ["x", ["batch", 8], "tensor(float)"],
                "%s: input %r" % (key, res["runs"].get(key)))
        y = np.load(os.path.join(work, "y_%s_%s.npy" % (prov, src)))
        # an 8-term f32 dot product under tanh: 1e-5 absolute
        err = float(np.abs(y - ref).max())
        C.check(y.shape == ref.shape and err <= 1e-5, "%s: max abs diff %.3g vs onnxruntime (1e-5)" % (key, err))

# every bundled library's licence terms travel with it
lic = os.path.join(pkg, "licenses")
have = set(os.listdir(lic)) if os.path.isdir(lic) else set()
want_lic = {"rlx.LICENSE"} | ({"NOTICE.wgpu-native", "LICENSE.wgpu-py"} if webgpu else set())
C.check(want_lic <= have, "rlx/licenses/ lacks %r (has %r)" % (sorted(want_lic - have), sorted(have)))
for name in os.listdir(pkg):
    if ".so" in name and name not in ("librlx.so", "libwgpu_native.so"):
        C.check(name + ".copyright" in have, "%s is bundled without rlx/licenses/%s.copyright" % (name, name))

# where each library came from
maps = res["maps"]
for lib in ["librlx.so", "libopenblas.so.0", "libprotobuf-c.so.1"] + (["libwgpu_native.so"] if webgpu else []):
    hits = [m for m in maps if os.path.basename(m) == lib]
    C.check(hits == [os.path.join(pkg, lib)], "%s loaded from %r, want the package's %s" % (lib, hits, pkg))
trees = (R.ROOT + os.sep, os.path.realpath(os.path.join(R.ROOT, "third_party")) + os.sep)
C.check(not any(m.startswith(trees) for m in maps), "a library of the source tree was loaded: %r"
        % [m for m in maps if m.startswith(trees)])

shutil.rmtree(tmp, ignore_errors=True)
C.done()
