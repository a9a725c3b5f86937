"""The rlx command line without models: --help and --version output, usage
errors (exit 2, "rlx: error: " messages), a missing model file, `rlx
devices`, `rlx ops`. Model-dependent paths are in test_cli_models.py."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
C = R.Checker("test_cli")

with open(os.path.join(R.ROOT, "CMakeLists.txt")) as f:
    version = re.search(r"project\(rlx VERSION ([0-9.]+)", f.read()).group(1)


def rlx(*args):
    return R.run([RLX, *args], timeout=120)


# ---------------------------------------------------------------- help, version
rc, so, se = rlx("--version")
C.check(rc == 0 and so == "rlx %s\n" % version, "--version: exit %d, %r (want 'rlx %s')" % (rc, so, version))

for args in (("--help",), ("-h",), ("help",)):
    rc, so, se = rlx(*args)
    C.check(rc == 0 and so.startswith("rlx %s" % version) and "usage: rlx COMMAND" in so and se == "",
            "%s: exit %d" % (args, rc))
    for word in ("run MODEL.onnx", "info MODEL.onnx", "devices", "ops [OP...]", "conformance ROOT", "--version",
                 "exit codes",
                 "rlx: error: ", "RLX_DISPATCH_REPORT"):
        C.check(word in so, "rlx %s does not mention %r" % (args[0], word))

# every option a command accepts is in its --help (and nothing undocumented
# is accepted: an unknown option is a usage error, checked below)
helps = {
    "run": ["--device", "cpu", "gpu:N", "--input NAME=FILE.npy", "--shape NAME=DIMS", "--seed", "--output-dir",
            "--check", "--warmup", "--iters", "--report", "--help", "median", "p10", "p90", "compile",
            "first run", "import", "Exit codes"],
    "info": ["--dump-ir", "--help", "opset", "initializer", "op type"],
    "devices": ["--help", "gpu:N", "backend", "driver", "limits", "features", "CPU"],
    "ops": ["--markdown", "--help", "opset", "since-version", "CPU", "WebGPU", "docs/ops.md", "ops_doc"],
}
for cmd, words in helps.items():
    for form in ((cmd, "--help"), (cmd, "-h"), ("help", cmd)):
        rc, so, se = rlx(*form)
        C.check(rc == 0 and so.startswith("usage: rlx %s" % cmd), "rlx %s: exit %d, %r" % (" ".join(form), rc, so[:80]))
    for w in words:
        C.check(w in so, "rlx %s --help does not mention %r" % (cmd, w))

for form in (("conformance", "--help"), ("help", "conformance")):
    rc, so, se = rlx(*form)
    C.check(rc == 0 and so.startswith("usage: rlx conformance"), "rlx %s: exit %d" % (" ".join(form), rc))

# ---------------------------------------------------------------- usage errors


def usage_error(args, needle, what):
    rc, so, se = rlx(*args)
    C.check(rc == 2, "%s: exit %d, want 2 (stderr %r)" % (what, rc, se))
    C.check(se.startswith("rlx: error: ") and needle in se, "%s: stderr %r lacks %r" % (what, se, needle))


usage_error([], "no command", "no arguments")
usage_error(["frobnicate"], "unknown command 'frobnicate'", "unknown command")
usage_error(["--frobnicate"], "unknown option '--frobnicate'", "unknown top-level option")
usage_error(["help", "nope"], "unknown command 'nope'", "help for an unknown command")
usage_error(["run"], "no model given", "run without a model")
usage_error(["run", "m.onnx", "--bogus"], "unknown option '--bogus'", "run with an unknown option")
usage_error(["run", "m.onnx", "--iters"], "--iters needs a value", "missing value")
usage_error(["run", "m.onnx", "--iters", "ten"], "bad --iters 'ten'", "non-numeric --iters")
usage_error(["run", "m.onnx", "--iters=-3"], "bad --iters '-3'", "negative --iters")
usage_error(["run", "m.onnx", "--warmup", "1.5"], "bad --warmup", "fractional --warmup")
usage_error(["run", "m.onnx", "--seed", "x"], "bad --seed", "bad --seed")
usage_error(["run", "m.onnx", "--device", "tpu"], "bad --device 'tpu'", "unknown device")
usage_error(["run", "m.onnx", "--device", "gpu:x"], "bad --device 'gpu:x'", "bad gpu index")
usage_error(["run", "m.onnx", "--input", "x"], "NAME=VALUE", "--input without '='")
usage_error(["run", "m.onnx", "--input", "=f.npy"], "NAME=VALUE", "--input without a name")
usage_error(["run", "m.onnx", "--input", "x=a.npy", "--input", "x=b.npy"], "given twice", "--input twice")
usage_error(["run", "m.onnx", "--shape", "x=1xz"], "bad --shape", "bad --shape dims")
usage_error(["run", "m.onnx", "--shape", "x=1x2x3x4x5x6x7x8x9"], "more than 8 dims", "--shape above the max rank")
# a dim above 2^40 is named as too large, not as a bad format, in every verb that takes --shape
for verb in (["run"], ["bench"], ["info", "--plan"]):
    usage_error([verb[0], "m.onnx"] + verb[1:] + ["--shape", "x=9223372036854775807x3x8x8"],
                "dim 0 (9223372036854775807) is too large (at most 2^40 = 1099511627776)", "%s: --shape dim 2^63-1" % verb[0])
usage_error(["bench", "m.onnx", "--top", "3"], "--top only applies with --profile", "bench --top without --profile")
usage_error(["run", "m.onnx", "--shape", "x=1x1099511627777"], "dim 1 (1099511627777) is too large", "--shape dim 2^40+1")
usage_error(["run", "m.onnx", "--output-dir="], "--output-dir is empty", "empty --output-dir")
usage_error(["run", "a.onnx", "b.onnx"], "unexpected argument 'b.onnx'", "two models")
usage_error(["info"], "no model given", "info without a model")
usage_error(["conformance"], "conformance: no ROOT given", "conformance without ROOT")  # printed the usage alone
usage_error(["info", "a.onnx", "b.onnx"], "unexpected argument", "info with two models")
usage_error(["info", "a.onnx", "--dump"], "unknown option '--dump'", "info with an unknown option")
usage_error(["devices", "extra"], "unexpected argument 'extra'", "devices with an argument")
usage_error(["devices", "--all"], "unknown option '--all'", "devices with an unknown option")
usage_error(["ops", "--all"], "unknown option '--all'", "ops with an unknown option")
usage_error(["ops", "--markdown", "Conv"], "give no OP names", "ops --markdown with op names")

# conformance's expected-pass list: refused before the run when it cannot be
# read (a folder read as an empty list, so that every check passed, exit 0),
# and --update-expected needs it (it was ignored without)
suite = os.path.join(R.ROOT, "third_party", "onnx", "backend-test-data")
if os.path.isdir(suite):
    conf = ["conformance", suite, "--device", "cpu", "--filter", "test_relu"]
    usage_error(conf + ["--expected", R.ROOT], "the expected-pass list '%s' is a directory" % R.ROOT,
                "conformance --expected DIR")
    usage_error(conf + ["--update-expected", "--expected", R.ROOT], "is a directory",
                "conformance --update-expected --expected DIR")
    usage_error(conf + ["--update-expected"], "--update-expected rewrites the --expected file",
                "conformance --update-expected alone")
    usage_error(conf + ["--expected", missing_list := os.path.join(R.ROOT, "no-such-list.txt")],
                "cannot read the expected-pass list '%s': No such file or directory" % missing_list,
                "conformance --expected MISSING")
    rc, so, se = rlx(*conf, "--expected", os.path.join(R.ROOT, "tests", "conformance_expected.txt"))
    C.check(rc == 0 and "cpu  pass " in so, "conformance with the tree's list: exit %d, %r" % (rc, se))
else:
    print("skip: the ONNX backend test data is not unpacked")

# ---------------------------------------------------------------- missing file
missing = os.path.join(R.ROOT, "no-such-dir", "missing.onnx")
for cmd in ("run", "info"):
    rc, so, se = rlx(cmd, missing)
    C.check(rc == 2, "rlx %s on a missing file: exit %d, want 2" % (cmd, rc))
    C.check(se.startswith("rlx: error: ") and "missing.onnx" in se,
            "rlx %s on a missing file: stderr %r should start with 'rlx: error: ' and name the file" % (cmd, se))

# ---------------------------------------------------------------- devices
rc, so, se = rlx("devices")
print(so, se, sep="")
C.check(rc in (0, 1), "rlx devices: exit %d" % rc)
C.check("CPU:" in so and "cpu" in so, "rlx devices does not list the CPU")
C.check(("GPU adapters: none found" in so) or re.search(r"^  gpu:0  ", so, re.M) is not None,
        "rlx devices neither lists adapters nor says there is none")
if "gpu:0" in so:
    for w in ("backend ", "type ", "driver ", "max buffer size", "max storage buffer binding size",
              "bytes", "features: shader-f16"):
        C.check(w in so, "rlx devices: adapter lines lack %r" % w)
if rc == 1:
    C.check(se.startswith("rlx: error: "), "rlx devices failed without an 'rlx: error: ' message")

# ---------------------------------------------------------------- ops
ROW = re.compile(r"^(\S+)\s+(\d+-\d+|\d+|-)\s+(\d+(?:, \d+)*)\s+(yes|no)\s+(yes|no|n/a)\b", re.M)
rc, so, se = rlx("ops")
C.check(rc == 0 and se == "", "rlx ops: exit %d, stderr %r" % (rc, se))
rows = {m.group(1): m.groups()[1:] for m in ROW.finditer(so)}
for op in ("Conv", "MatMul", "Relu", "Loop", "NonZero", "rlx.FusedElementwise"):
    C.check(op in rows, "rlx ops does not list %s" % op)
if "Conv" in rows:
    C.check(rows["Conv"][0] == "1-27" and rows["Conv"][1] == "1, 11, 22" and rows["Conv"][2] == "yes",
            "rlx ops: Conv row %r" % (rows["Conv"],))
m = re.search(r"^(\d+) ops of the default domain: (\d+) with a CPU kernel", so, re.M)
C.check(m is not None and int(m.group(1)) == len([k for k in rows if not k.startswith("rlx.")]),
        "rlx ops: the count line does not match the rows")

rc, so2, se = rlx("ops", "Relu", "Conv")
C.check(rc == 0 and sorted(ROW.findall(so2)) == sorted((k,) + rows[k] for k in ("Relu", "Conv") if k in rows),
        "rlx ops Relu Conv: exit %d, %r" % (rc, so2))
rc, so2, se = rlx("ops", "conv")
C.check(rc == 2 and "did you mean 'Conv'" in se, "rlx ops conv: exit %d, stderr %r" % (rc, se))
rc, so2, se = rlx("ops", "NoSuchOp", "Relu")
C.check(rc == 2 and "'NoSuchOp' is not in rlx's op table" in se and re.search(r"^Relu ", so2, re.M),
        "rlx ops NoSuchOp Relu: exit %d, stderr %r" % (rc, se))
# an unknown name is a usage error (exit 2) and says so: its JSON status was
# RLX_ERR_FAILURE, README's status of exit 1; the stderr line hints at --help
# as other usage errors. Under --json stdout is one document, the error.
rc, so2, se = rlx("ops", "Foo")
C.check(rc == 2 and se.startswith("rlx: error: ") and "(see 'rlx ops --help')" in se,
        "rlx ops Foo: exit %d, stderr %r" % (rc, se))
for names in (["Foo"], ["Foo", "Relu"], ["conv"]):
    rc, so2, se = rlx("ops", "--json", *names)
    try:
        doc = json.loads(so2)
    except ValueError:
        doc = None
    C.check(rc == 2 and isinstance(doc, dict) and doc.get("error", {}).get("status") == "RLX_ERR_USAGE",
            "rlx ops --json %s: exit %d, stdout %r" % (" ".join(names), rc, so2[:300]))

# the Markdown page has one table row per op of the plain listing, with the same facts
rc, md, se = rlx("ops", "--markdown")
C.check(rc == 0 and md.startswith("# Operators\n"), "rlx ops --markdown: exit %d, %r" % (rc, md[:40]))
md_rows = {}
for line in md.splitlines():
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    if line.startswith("| ") and len(cells) == 6 and cells[0] not in ("op",):
        md_rows[cells[0]] = tuple(cells[1:5])
C.check(set(md_rows) == set(rows), "rlx ops --markdown lists other ops than rlx ops: %r" %
        sorted(set(md_rows) ^ set(rows)))
for op, r in rows.items():
    if op in md_rows and r[3] != "n/a":
        C.check(md_rows[op] == r, "%s: markdown %r, text %r" % (op, md_rows[op], r))

C.done()
