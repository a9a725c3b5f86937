"""`rlx info MODEL --plan`: the memory plan of a small chain made here with
onnx.helper (symbolic batch), whose sizes are known exactly:

  x [batch, 1000] f32 -> Relu -> a -> Neg -> b -> Exp -> c -> Abs -> y

Every tensor is batch * 4000 bytes (rounded up to 256). Without reuse the
arena holds all five; the lower bound is two (an input and its consumer's
output; the output y lives to the end, next to c); the plan must reach it.
Also: --shape scales the numbers, symbolic dims default to 1 (and it says
so), and the usage errors.

Skips (exit 77) while rlx is not built."""
import os
import re
import sys
import tempfile

import onnx
from onnx import TensorProto as T
from onnx import helper as H

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
# the chain's five tensors are the subject: fuse_elementwise would make it
# one node of two tensors (the rlx calls below inherit the environment)
os.environ["RLX_DISABLE_PASSES"] = "fuse_elementwise"
tmp = tempfile.mkdtemp(prefix="rlx_cli_plan_")
C = R.Checker("test_cli_plan")


def rlx(*args):
    return R.run([RLX, *args], timeout=300)


graph = H.make_graph(
    [H.make_node("Relu", ["x"], ["a"], name="relu"),
     H.make_node("Neg", ["a"], ["b"], name="neg"),
     H.make_node("Exp", ["b"], ["c"], name="exp"),
     H.make_node("Abs", ["c"], ["y"], name="abs")],
    "chain", [H.make_tensor_value_info("x", T.FLOAT, ["batch", 1000])],
    [H.make_tensor_value_info("y", T.FLOAT, None)])
path = os.path.join(tmp, "chain.onnx")
onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)]), path)


def plan_numbers(out):
    """(planned, no reuse, lower bound) in bytes from the --plan output."""
    def grab(label):
        m = re.search(r"^  %s\s+\S+ \S+ \((\d+) bytes\)" % re.escape(label), out, re.M)
        return int(m.group(1)) if m else None
    return grab("arena as planned:"), grab("without reuse (sum of tensors):"), grab("peak live (lower bound):")


def align(n):
    return (n + 255) // 256 * 256


for batch, args in ((1, []), (1, ["--shape", "x=1x1000"]), (8, ["--shape", "x=8x1000"])):
    rc, so, se = rlx("info", path, "--plan", *args)
    C.check(rc == 0, "info --plan %s: exit %d, %s" % (args, rc, se))
    planned, noreuse, bound = plan_numbers(so)
    t = align(batch * 4000)
    C.check(noreuse == 5 * t, "batch %d: no reuse %s, want %d" % (batch, noreuse, 5 * t))
    C.check(bound == 2 * t, "batch %d: lower bound %s, want %d" % (batch, bound, 2 * t))
    C.check(planned == 2 * t, "batch %d: planned %s, want the bound %d" % (batch, planned, 2 * t))
    # units next to the numbers
    C.check(re.search(r"arena as planned:\s+[\d.]+ (KiB|MiB) \(\d+ bytes\)", so) is not None,
            "planned arena printed without a unit: %r" % so)
    C.check("placement order by " in so, "no placement order named")
    C.check("largest tensors in the arena" in so and re.search(r"^  y\s+f32\s+\[%d,1000\]" % batch, so, re.M),
            "largest tensors do not list y [%d,1000]: %s" % (batch, so))
    C.check(("set to 1" in so) == (not args), "the note about symbolic dims set to 1 is %s"
            % ("missing" if not args else "printed although --shape was given"))

# --top limits the list
rc, so, se = rlx("info", path, "--plan", "--top", "2")
rows = re.findall(r"^  [abcxy]\s+f32\s+\[", so.split("largest tensors")[-1], re.M)
C.check(rc == 0 and len(rows) == 2, "--top 2 listed %d tensors" % len(rows))

# RLX_NO_REUSE: planned == no reuse
env = dict(os.environ, RLX_NO_REUSE="1")
import subprocess  # noqa: E402
p = subprocess.run([RLX, "info", path, "--plan"], capture_output=True, text=True, env=env, timeout=300)
planned, noreuse, bound = plan_numbers(p.stdout)
C.check(p.returncode == 0 and planned == noreuse == 5 * align(4000),
        "RLX_NO_REUSE: planned %s, no reuse %s" % (planned, noreuse))

# usage errors
for args, needle in ((["--shape", "x=2x1000"], "only apply with --plan"),
                     (["--top", "5"], "only apply with --plan"),
                     (["--plan", "--shape", "q=2x1000"], "not a graph input"),
                     (["--plan", "--shape", "x=2xz"], "bad --shape"),
                     (["--plan", "--top", "-1"], "bad --top"),
                     # the second shape of an input won silently (rlx run refuses it)
                     (["--plan", "--shape", "x=2x1000", "--shape", "x=8x1000"], "--shape given twice for 'x'"),
                     # a name past 255 bytes was cut short to look up
                     (["--plan", "--shape", "x" * 300 + "=2x1000"], "input of 300 bytes")):
    rc, so, se = rlx("info", path, *args)
    C.check(rc == 2 and se.startswith("rlx: error: ") and needle in se, "%s: exit %d, %r" % (args, rc, se))
# a shape that contradicts the model's static dim
rc, so, se = rlx("info", path, "--plan", "--shape", "x=2x999")
C.check(rc == 2 and "'x'" in se and "1000" in se, "contradicting --shape: exit %d, %r" % (rc, se))

C.done()
