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
Clip with Clip-6's min and max ran unclipped). Types are compared too
(rlx refuses an attribute of another type than its row's: Cast-1's `to`
is a STRING, Cast-6's an INT), and so is which attributes are required
(rlx refuses a node without one: BatchNormalization-1's consumed_inputs).
Ops that the installed onnx package does not know are reported and
skipped."""
import json
import os
import re
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
        rows = [a for a in attrs if v >= a["since"] and (a["until"] == 0 or v < a["until"])]
        have = {a["name"]: a["type"] for a in rows}
        have_req = {a["name"] for a in rows if a["required"]}
        try:
            s = defs.get_schema(name, min(opset, newest), "")
        except Exception:
            continue
        want = {a.name: TYPE_NAMES.get(a.type, str(a.type)) for a in s.attributes.values()}
        want_req = {a.name for a in s.attributes.values() if a.required}
        n_pairs += 1
        missing = sorted(k for k in set(want) - set(have) if (name, k) not in REFUSED_BY_IMPORTER)
        extra = sorted(set(have) - set(want))
        wrong = sorted(k for k in set(want) & set(have) if want[k] != have[k])
        # required in ONNX and not in rlx: a node without it would load; the reverse refuses a valid one
        req = sorted("%s (onnx: %s)" % (k, "required" if k in want_req else "optional")
                     for k in (want_req ^ have_req) & set(want) & set(have))
        if missing or extra or wrong or req:
            gaps.append((name, opset, v, s.since_version, missing, extra,
                         ["%s %s/%s" % (k, have[k], want[k]) for k in wrong], req))

# one line per op and run of opsets with the same difference
last = None
for name, opset, v, sv, missing, extra, wrong, req in gaps:
    key = (name, v, sv, tuple(missing), tuple(extra), tuple(wrong), tuple(req))
    if key == last:
        continue
    last = key
    C.check(False, "%s at opset %d (rlx %s-%d, onnx %s-%d): missing %s, extra %s, wrong type %s, "
            "required or not unlike onnx %s"
            % (name, opset, name, v, name, sv, missing or "-", extra or "-", wrong or "-", req or "-"))
# The rows are enforced: for every default-domain op and every version rlx
# distinguishes (at the opset of that version), a node built from
# onnx.defs' schema (its minimum inputs, float graph inputs) loads past the
# attribute checks with every required attribute given in its type, and is
# refused (RLX_ERR_INVALID_MODEL, naming the attribute) with one attribute
# of another type, or without one required attribute. Checked on the
# Python bindings (in process); Constant is the importer's (checked in
# test_import).
SKIP_ENFORCE = {"Constant"}
# what rlx's attribute checks say (graph.c: check_attrs, check_unknown_attrs)
ATTR_REFUSAL = re.compile(r"attribute '[^']+' of [A-Za-z0-9_]+-\d+( at opset \d+)? must be|required attribute|"
                          r"is not an attribute of")
WRONG = {  # a value of another type for each type (an INT for an INTS is its scalar form: accepted)
    "INT": "x", "FLOAT": "x", "STRING": 1, "INTS": "x", "FLOATS": "x", "STRINGS": 1, "TENSOR": 1, "GRAPH": 1,
}


def right_value(t):
    if t == "INT":
        return 1
    if t == "FLOAT":
        return 1.0
    if t == "STRING":
        return "x"
    if t == "INTS":
        return [1]
    if t == "FLOATS":
        return [1.0]
    if t == "STRINGS":
        return ["x"]
    if t == "TENSOR":
        return h.make_tensor("t", T.FLOAT, [1], [1.0])
    return h.make_graph([h.make_node("Identity", ["gx"], ["gy"])], "body",
                        [h.make_tensor_value_info("gx", T.FLOAT, [1])], [h.make_tensor_value_info("gy", T.FLOAT, [1])])


def load_status(rlx_mod, name, s, opset, attrs):
    ins = ["x%d" % i for i in range(s.min_input)]
    outs = ["y%d" % i for i in range(max(s.min_output, 1))]
    node = h.make_node(name, ins, outs, name="n0", **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info(i, T.FLOAT, [1]) for i in ins],
                     [h.make_tensor_value_info(o, T.FLOAT, None) for o in outs])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 7
    try:
        rlx_mod.Model(m.SerializeToString())
        return "OK", ""
    except rlx_mod.Error as e:
        return e.status, str(e)


why = R.bindings_unavailable()
if why:
    print("note: the enforcement sweep needs the Python bindings: %s; skipped" % why)
else:
    rlx_mod = R.import_rlx()
    n_cases, bad = 0, []
    for op in cat["ops"]:
        if op["internal"] or op["domain"] != "" or op["name"] in SKIP_ENFORCE:
            continue
        name = op["name"]
        for v in op["versions"]:
            if v > newest:
                continue
            try:
                s = defs.get_schema(name, v, "")
            except Exception:
                continue
            types = {a.name: TYPE_NAMES.get(a.type, str(a.type)) for a in s.attributes.values()}
            req = sorted(a.name for a in s.attributes.values() if a.required)
            given = {k: right_value(types[k]) for k in req}
            # every required attribute, each in its type: no attribute check refuses it
            st, msg = load_status(rlx_mod, name, s, v, given)
            n_cases += 1
            if ATTR_REFUSAL.search(msg):
                bad.append("%s-%d with its required attributes %s refused: %s" % (name, v, req, msg))
            for k in sorted(types):
                wrong = dict(given)
                wrong[k] = WRONG[types[k]]
                st, msg = load_status(rlx_mod, name, s, v, wrong)
                n_cases += 1
                if not (st == "RLX_ERR_INVALID_MODEL" and ("attribute '%s' of %s-" % (k, name)) in msg and
                        ATTR_REFUSAL.search(msg)):
                    bad.append("%s-%d with %s '%s' (ONNX: %s) not refused as such: %s %s"
                               % (name, v, type(WRONG[types[k]]).__name__, k, types[k], st, msg))
            for k in req:
                without = {a: b for a, b in given.items() if a != k}
                st, msg = load_status(rlx_mod, name, s, v, without)
                n_cases += 1
                if not (st == "RLX_ERR_INVALID_MODEL" and ("required attribute '%s'" % k) in msg):
                    bad.append("%s-%d without its required '%s' not refused as such: %s %s" % (name, v, k, st, msg))
    for b in bad:
        C.check(False, b)
    C.check(n_cases > 1000, "enforcement sweep: %d models, %d not as expected" % (n_cases, len(bad)))
    print("enforcement sweep: %d models" % n_cases)

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
