"""scripts/model_check.py's own parts, offline: its error measure catches a
perturbed element, a wrong shape, a NaN and a differing integer; its idea
of the file names `rlx run --output-dir` writes matches the CLI's on names
with odd characters; and its table is consistent (unique names, every
wheel source pinned with a sha256).

Skips (exit 77) while the rlx CLI is not built."""
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

C = R.Checker("test_model_check")
spec = importlib.util.spec_from_file_location("model_check", os.path.join(R.ROOT, "scripts", "model_check.py"))
mc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mc)

rng = np.random.default_rng(int(os.environ.get("RLX_TEST_SEED", "5")))
ref = rng.uniform(-2, 2, (3, 7)).astype(np.float32)
e, _ = mc.compare([ref.copy()], [ref])
C.check(e == 0.0, "identical outputs: err %g, want 0" % e)
bad = ref.copy()
bad[1, 4] += 0.01 * np.abs(ref).max()
e, where = mc.compare([ref.copy(), bad], [ref, ref])
C.check(abs(e - 0.01) < 1e-4 and where == "output 1", "one element off by 1%% of max: err %g at %s" % (e, where))
e, _ = mc.compare([ref[:2]], [ref])
C.check(e == float("inf"), "a wrong shape: err %g, want inf" % e)
nan = ref.copy()
nan[0, 0] = np.nan
e, _ = mc.compare([nan], [ref])
C.check(e == float("inf"), "a NaN where the reference is finite: err %g, want inf" % e)
e, _ = mc.compare([nan], [nan])
C.check(e == 0.0, "NaN where the reference has NaN too: err %g, want 0" % e)
ints = rng.integers(0, 9, 8)
other = ints.copy()
other[3] += 1
e, _ = mc.compare([other], [ints])
C.check(e == 1 / 8, "one of 8 integers differs: err %g, want 0.125" % e)

names = [m.name for m in mc.MODELS]
C.check(len(names) == len(set(names)), "model names are unique: %r" % names)
for m in mc.MODELS:
    C.check(m.src in ("project", "onnx") or (m.src in mc.WHEELS and len(mc.WHEELS[m.src][2]) == 64),
            "%s: source %s is pinned" % (m.name, m.src))
C.check(any(m.quick for m in mc.MODELS), "a --quick subset exists")

rlx = R.built("rlx")
# outputs whose names need sanitising: rlx writes DIR/<safe name>.npy
odd = ["a/b:0", ".lead", "ok.name-1", "sp ace"]
g = H.make_graph([H.make_node("Neg", ["x"], [n], name="n%d" % i) for i, n in enumerate(odd)], "names",
                 [H.make_tensor_value_info("x", T.FLOAT, [2])],
                 [H.make_tensor_value_info(n, T.FLOAT, [2]) for n in odd])
tmp = tempfile.mkdtemp(prefix="rlx_model_check_test_")
path = os.path.join(tmp, "names.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)]), path)
x = np.array([1.5, -2.0], np.float32)
feeds = {"x": x}
outs, _, err = mc.run_rlx(rlx, path, feeds, odd, "cpu", tmp, 120, [])
C.check(outs is not None, "run_rlx on the odd names: %s (files: %r)" % (err, os.listdir(os.path.join(tmp, "out_cpu"))
                                                                        if os.path.isdir(os.path.join(tmp, "out_cpu"))
                                                                        else None))
if outs is not None:
    C.check(all(np.array_equal(o, -x) for o in outs), "outputs read back: %r" % outs)
# a model rlx refuses comes back as an error text naming the problem, not an exception
broken = os.path.join(tmp, "broken.onnx")
with open(broken, "wb") as f:
    f.write(b"not an onnx file")
outs, _, err = mc.run_rlx(rlx, broken, feeds, ["y"], "cpu", tmp, 120, [])
C.check(outs is None and "exited 2" in err, "a broken file: %r" % err)
C.done()
