"""rlx's attribute schemas against ONNX's, for every version.

A node of the default domain whose op version has no attribute of a name
it carries is refused when the model loads (src/ir/graph.c,
check_unknown_attrs), as onnxruntime refuses it. That is only safe if rlx
knows every attribute of every version it accepts: this test takes every
default-domain op of `rlx ops --json` (its "attributes": name, type, and
the since-versions [since, until) that have it), and for every opset from
the op's first version to the newest opset rlx accepts compares the names
rlx accepts at that opset (the node's version is rlx's largest
since-version <= the opset) with the names of onnx.defs.get_schema(op,
opset). A name ONNX has and rlx lacks would refuse a valid model; a name
rlx accepts that ONNX lacks would let a wrong model through (an opset-13
Clip with Clip-6's min and max ran unclipped). Types are compared too.
Ops that the installed onnx package does not know are reported and
skipped."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

try:
    import onnx
    from onnx import TensorProto as T
    from onnx import defs
    from onnx import helper as h
except ImportError:
    R.skip("the onnx package is not installed (run scripts/setup.sh)")

RLX = R.built("rlx")
C = R.Checker("test_attr_schemas")
TMP = tempfile.mkdtemp(prefix="rlx_attr_schemas_")

rc, out, err = R.run([RLX, "ops", "--json"])
if not C.check(rc == 0, "rlx ops --json exits 0 (%d: %s)" % (rc, err.strip())):
    C.done()
cat = json.loads(out)

TYPE_NAMES = {
    defs.OpSchema.AttrType.FLOAT: "FLOAT", defs.OpSchema.AttrType.INT: "INT",
    defs.OpSchema.AttrType.STRING: "STRING", defs.OpSchema.AttrType.TENSOR: "TENSOR",
    defs.OpSchema.AttrType.GRAPH: "GRAPH", defs.OpSchema.AttrType.FLOATS: "FLOATS",
    defs.OpSchema.AttrType.INTS: "INTS", defs.OpSchema.AttrType.STRINGS: "STRINGS",
}
newest = defs.onnx_opset_version()
# attributes that rlx's op table leaves out because the importer refuses them
# with their own message (checked below)
REFUSED_BY_IMPORTER = {("Constant", "sparse_value")}
print("onnx", onnx.__version__, "(opsets up to %d)" % newest)

gaps, n_ops, n_pairs = [], 0, 0
for op in cat["ops"]:
    if op["internal"] or op["domain"] != "":
        continue
    name, versions = op["name"], op["versions"]
    try:
        defs.get_schema(name, newest, "")
    except Exception:
        print("note: onnx %s does not know %s; skipped" % (onnx.__version__, name))
        continue
    n_ops += 1
    attrs = op["attributes"]
    # every opset the op exists at in rlx, up to the newest either knows
    for opset in range(versions[0], max(newest, versions[-1]) + 1):
        v = max(x for x in versions if x <= opset)
        have = {a["name"]: a["type"] for a in attrs
                if v >= a["since"] and (a["until"] == 0 or v < a["until"])}
        try:
            s = defs.get_schema(name, min(opset, newest), "")
        except Exception:
            continue
        want = {a.name: TYPE_NAMES.get(a.type, str(a.type)) for a in s.attributes.values()}
        n_pairs += 1
        missing = sorted(k for k in set(want) - set(have) if (name, k) not in REFUSED_BY_IMPORTER)
        extra = sorted(set(have) - set(want))
        wrong = sorted(k for k in set(want) & set(have) if want[k] != have[k])
        if missing or extra or wrong:
            gaps.append((name, opset, v, s.since_version, missing, extra,
                         ["%s %s/%s" % (k, have[k], want[k]) for k in wrong]))

# one line per op and run of opsets with the same difference
last = None
for name, opset, v, sv, missing, extra, wrong in gaps:
    key = (name, v, sv, tuple(missing), tuple(extra), tuple(wrong))
    if key == last:
        continue
    last = key
    C.check(False, "%s at opset %d (rlx %s-%d, onnx %s-%d): missing %s, extra %s, wrong type %s"
            % (name, opset, name, v, name, sv, missing or "-", extra or "-", wrong or "-"))
# a sparse Constant: refused, naming the attribute
sparse = h.make_sparse_tensor(h.make_tensor("v", T.FLOAT, [1], [1.0]), h.make_tensor("i", T.INT64, [1], [0]), [2])
g = h.make_graph([h.make_node("Constant", [], ["y"], name="c0", sparse_value=sparse)], "g", [],
                 [h.make_tensor_value_info("y", T.FLOAT, [2])])
path = os.path.join(TMP, "sparse.onnx")
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)
rc, out, err = R.run([RLX, "info", path])
C.check(rc != 0 and "sparse_value" in err, "a sparse Constant is refused naming sparse_value (%d: %s)" % (rc, err.strip()))

C.check(n_ops > 100, "compared %d default-domain ops (%d op/opset pairs)" % (n_ops, n_pairs))
print("compared %d ops, %d op/opset pairs" % (n_ops, n_pairs))
C.done()
