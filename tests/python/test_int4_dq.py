"""4-bit constants (ONNX INT4 = 22, UINT4 = 21) read by DequantizeLinear-21
(src/import/onnx.c, tensor_from_proto and check_4bit_uses): the constants
load widened to a byte a value (i8 / u8) and DequantizeLinear gives what
onnxruntime 1.22 gives, exactly: per tensor, per axis and blocked
(block_size), with and without 4-bit zero points, odd element counts (the
last byte's high nibble unused), raw_data, int32_data (two values an
entry), a Constant node and external data. Each model outputs the
dequantized weight and x + weight for a random input x.

Refused forms: a 4-bit constant read by anything but DequantizeLinear's x
and x_zero_point (QuantizeLinear's y_zero_point, Cast, a graph output, a
subgraph's Identity) fails the load naming the node and saying 4-bit
outputs are not supported; 4-bit graph inputs and 4-bit initializers
listed as graph inputs are refused; x and x_zero_point of different types
are an invalid model; limits.max_tensor_bytes applies to the widened size;
a packed size that disagrees with the shape is an invalid model.

Skips (exit 77) while rlx is not built."""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_int4_")
rng = R.seeded_rng(21)
C = R.Checker("test_int4_dq")
OPS = [H.make_opsetid("", 21)]


def levels(shape, signed):
    return rng.integers(-8, 8, shape) if signed else rng.integers(0, 16, shape)


def packed(q):
    """The bytes of 4-bit values q (flattened): the first in the low nibble."""
    f = (np.asarray(q).reshape(-1) & 15).astype(np.uint8)
    if f.size % 2:
        f = np.concatenate([f, np.zeros(1, np.uint8)])
    return (f[0::2] | (f[1::2] << 4)).astype(np.uint8)


def tensor4(name, q, signed, raw):
    dt = T.INT4 if signed else T.UINT4
    if raw:
        return H.make_tensor(name, dt, list(np.shape(q)), packed(q).tobytes(), raw=True)
    return H.make_tensor(name, dt, list(np.shape(q)), np.asarray(q).reshape(-1).tolist())


def save(m, name, external=False):
    path = os.path.join(tmp, name + ".onnx")
    if external:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=name + ".bin",
                        size_threshold=0)
    else:
        onnx.save(m, path)
    return path


def run_rlx(path, feeds, device, outs, options=()):
    return R.run_output(RLX, path, feeds, device, options, tmp=tmp, output=list(outs))


def case(name, shape, signed, scale_shape, zp=True, raw=True, constant_node=False, external=False, devices=("cpu",),
         **attrs):
    q = levels(shape, signed)
    s = rng.uniform(0.01, 0.5, scale_shape).astype(np.float32)
    inits = [NH.from_array(s, "s")]
    nodes = []
    wt = tensor4("w", q, signed, raw)
    if constant_node:
        nodes.append(H.make_node("Constant", [], ["w"], value=wt, name="wconst"))
    else:
        inits.append(wt)
    ins = ["w", "s"]
    if zp:
        inits.append(tensor4("z", levels(scale_shape, signed), signed, raw))
        ins.append("z")
    nodes += [H.make_node("DequantizeLinear", ins, ["y"], name="dq", **attrs),
              H.make_node("Add", ["x", "y"], ["xy"], name="add")]
    g = H.make_graph(nodes, name, [H.make_tensor_value_info("x", T.FLOAT, list(shape))],
                     [H.make_tensor_value_info("y", T.FLOAT, None), H.make_tensor_value_info("xy", T.FLOAT, None)],
                     inits)
    path = save(H.make_model(g, opset_imports=OPS, ir_version=10), name, external)
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    for dev in devices:
        got, err = run_rlx(path, feeds, dev, ["y", "xy"])
        if not C.check(got is not None, "%s on %s runs (%s)" % (name, dev, err)):
            continue
        same = all(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, ref))
        d = max(float(np.abs(a.astype(np.float64) - b).max()) if a.shape == b.shape else np.inf
                for a, b in zip(got, ref))
        C.check(same, "%s on %s: equal to onnxruntime (max diff %.3g)" % (name, dev, d))
        print("%-28s %-4s %s" % (name, dev, "equal" if same else "max diff %.3g" % d))


for signed in (True, False):
    t = "int4" if signed else "uint4"
    case(t + "_per_tensor_odd", (5, 3), signed, (), devices=("cpu", "gpu") if signed else ("cpu",))
    case(t + "_per_tensor_no_zp", (7,), signed, (), zp=False)
    case(t + "_per_axis", (4, 5), signed, (5,), axis=1)
    case(t + "_per_axis0_odd_int32", (3, 3), signed, (3,), raw=False, axis=0)
    case(t + "_blocked_axis0", (64, 6), signed, (4, 6), axis=0, block_size=16)
    case(t + "_blocked_axis1_partial", (3, 21), signed, (3, 3), axis=1, block_size=8)
    case(t + "_blocked_no_zp", (32, 5), signed, (2, 5), zp=False, axis=0, block_size=16)
    case(t + "_blocked_int32_data", (33, 3), signed, (3, 3), raw=False, axis=0, block_size=16)
    case(t + "_constant_node", (3, 5), signed, (5,), constant_node=True, axis=1)
    case(t + "_constant_node_int32", (9,), signed, (), raw=False, constant_node=True)
case("int4_external_data", (16, 7), True, (1, 7), axis=0, block_size=16, external=True)


# ---------------------------------------------------------------- refused forms
def refused(name, m, want, code=None, options=()):
    path = save(m, name)
    args = [RLX, "run", path, "--iters", "0", "--quiet"]
    for o in options:
        args += ["--option", o]
    for vi in m.graph.input:
        if vi.type.tensor_type.elem_type == T.FLOAT:
            f = os.path.join(tmp, "%s_%s.npy" % (name, vi.name))
            np.save(f, np.zeros([d.dim_value for d in vi.type.tensor_type.shape.dim], np.float32))
            args += ["--input", "%s=%s" % (vi.name, f)]
    rc, so, se = R.run(args)
    ok = rc > 0 and all(w in se for w in want) and (code is None or code in se)
    C.check(ok, "%s fails the load naming %r (rc %d: %s)" % (name, want, rc, se.strip()[-400:]))
    print("%-28s refused: %s" % (name, se.strip().splitlines()[-1][-200:] if se.strip() else "(nothing)"))


def model(nodes, inits, outs=("y",), ins=(), name="m"):
    g = H.make_graph(nodes, name, [H.make_tensor_value_info(n, T.FLOAT, [2]) for n in ins],
                     [H.make_tensor_value_info(o, T.FLOAT, None) for o in outs], inits)
    return H.make_model(g, opset_imports=OPS, ir_version=10)


S = NH.from_array(np.array(0.5, np.float32), "s")
W4 = tensor4("w", [1, -2, 3], True, True)
Z4 = tensor4("z", 3, True, True)
# QuantizeLinear's 4-bit y_zero_point: its output would have to saturate to [-8, 7]
refused("quantize_int4_zero_point", model([H.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
                                           H.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq")],
                                          [S, Z4], ins=("x",)),
        ("node 'quant' (QuantizeLinear)", "'z'", "int4", "4-bit outputs are not supported"))
# 4-bit results without a 4-bit constant: QuantizeLinear's output_dtype, Cast's to
refused("quantize_output_dtype_int4", model([H.make_node("QuantizeLinear", ["x", "s"], ["q"], name="quant",
                                                         output_dtype=T.INT4),
                                             H.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq")],
                                            [S], ins=("x",)),
        ("node 'quant' (QuantizeLinear)", "output_dtype", "int4"), "RLX_ERR_UNSUPPORTED")
refused("cast_to_uint4", model([H.make_node("Cast", ["x"], ["q"], name="cast", to=T.UINT4),
                                H.make_node("Cast", ["q"], ["y"], name="back", to=T.FLOAT)], [], ins=("x",)),
        ("node 'cast' (Cast)", "21 (uint4)"), "RLX_ERR_UNSUPPORTED")
refused("cast_int4", model([H.make_node("Cast", ["w"], ["y"], name="cast", to=T.FLOAT)], [W4]),
        ("node 'cast' (Cast)", "'w'", "4-bit outputs are not supported"))
refused("dq_scale_int4", model([H.make_node("DequantizeLinear", ["w", "w"], ["y"], name="dq2")], [W4]),
        ("node 'dq2' (DequantizeLinear)", "'w'", "4-bit outputs are not supported"))
m = model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [W4, S])
m.graph.output.append(H.make_tensor_value_info("w", T.INT4, [3]))
refused("graph_output_declared_int4", m, ("graph output 'w'", "int4"))
m = model([H.make_node("Constant", [], ["c"], value=tensor4("cv", [1, 2, 3], False, True), name="k"),
           H.make_node("DequantizeLinear", ["c", "s"], ["y"], name="dq")], [S])
m.graph.output.append(onnx.ValueInfoProto(name="c"))
refused("graph_output_untyped_uint4", m, ("graph output 'c'", "uint4", "4-bit outputs are not supported"))
m = model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [W4, S])
m.graph.input.append(H.make_tensor_value_info("w", T.INT4, [3]))
refused("initializer_as_input_int4", m, ("graph input 'w'", "int4", "not supported"))
m = model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [S])
m.graph.input.append(H.make_tensor_value_info("w", T.UINT4, [3]))
refused("graph_input_uint4", m, ("graph input 'w'", "uint4"))
refused("zero_point_int8_for_int4", model([H.make_node("DequantizeLinear", ["w", "s", "z8"], ["y"], name="dqz")],
                                          [W4, S, NH.from_array(np.array(1, np.int8), "z8")]),
        ("node 'dqz' (DequantizeLinear)", "x_zero_point", "same type"))
# a subgraph's Identity reading the outer 4-bit constant
then_g = H.make_graph([H.make_node("Identity", ["w"], ["t"], name="inner")], "then", [],
                      [onnx.ValueInfoProto(name="t")])
else_g = H.make_graph([H.make_node("Identity", ["w"], ["e"], name="inner2")], "else", [],
                      [onnx.ValueInfoProto(name="e")])
m = model([H.make_node("If", ["c"], ["wi"], name="if", then_branch=then_g, else_branch=else_g),
           H.make_node("DequantizeLinear", ["wi", "s"], ["y"], name="dq")],
          [W4, S, NH.from_array(np.array(True), "c")])
refused("subgraph_identity_int4", m, ("node 'inner", "(Identity)", "'w'", "int4", "4-bit outputs are not supported"))
# limits.max_tensor_bytes on the widened size: 1001 values, 501 bytes in the
# file, 1001 loaded: a limit of 600 refuses the initializer itself
big = model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")],
            [tensor4("w", levels((1001,), True), True, True), S])
refused("limit_widened", big, ("limits.max_tensor_bytes", "initializer tensor 'w'", "1001 bytes"),
        options=("limits.max_tensor_bytes=600",))
path = save(big, "limit_widened_ok")
rc, so, se = R.run([RLX, "run", path, "--iters", "0", "--quiet", "--option", "limits.max_tensor_bytes=4004"])
C.check(rc == 0, "limits.max_tensor_bytes=4004 (the f32 output) loads 1001 4-bit values (rc %d: %s)"
        % (rc, se.strip()[-300:]))
# packed sizes that disagree with the shape
bad = tensor4("w", [1, 2, 3], True, True)
bad.dims[0] = 5  # 5 values need 3 bytes, raw_data has 2
refused("raw_too_short", model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [bad, S]),
        ("'w'", "needs 3 bytes of raw_data, but has 2"))
bad = tensor4("w", [1, 2, 3], True, False)
bad.int32_data[0] = 300
refused("int32_data_not_a_byte", model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [bad, S]),
        ("'w'", "int32_data[0] = 300"))
# INT4 / UINT4 came with DequantizeLinear-21: a model importing opset 19 or 20 (onnxruntime refuses it too)
for ver in (19, 20):
    m = model([H.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")], [W4, S])
    m.opset_import[0].version = ver
    refused("dq_int4_opset%d" % ver, m, ("node 'dq'", "int4", "from opset 21", "opset %d" % ver))
C.done()
