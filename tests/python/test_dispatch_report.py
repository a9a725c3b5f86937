"""The dispatch report (`rlx run --report`, debug.dispatch_report) adds up:
on each row nodes = native + fallback + removed + view, also where passes
made more nodes of a model's op than the model has (issue 12.3: the GPU's
rewrite of DynamicQuantizeLinear and MatMulInteger adds a Cast, and the row
read "Cast 1 node, 2 native"), and the total line holds the column sums,
its nodes being the model's plus what the passes added. Models made here
with onnx.helper: DynamicQuantizeMatMul (com.microsoft, expanded at import;
on the GPU fuse_qdq rewrites its integer GEMM) and a QDQ Conv -> Gemm chain
(fuse_qdq_conv: QLinearConv and QGemm's integer form), on the CPU and the
GPU device (lavapipe here). Skips (exit 77) while rlx is not built."""
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as H
from onnx import numpy_helper as NH

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

RLX = R.built("rlx")
tmp = tempfile.mkdtemp(prefix="rlx_report_")
rng = R.seeded_rng(5)
C = R.Checker("test_dispatch_report")


def save(name, nodes, inputs, inits, domains=()):
    g = H.make_graph(nodes, name, inputs, [H.make_tensor_value_info("y", T.FLOAT, None)],
                     [NH.from_array(v, k) for k, v in inits.items()])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)] + [H.make_opsetid(d, 1) for d in domains],
                     ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


a = np.array
dqmm = save("dqmm", [H.make_node("DynamicQuantizeMatMul", ["x", "b", "bs", "bz", "bias"], ["y"],
                                 domain="com.microsoft")],
            [H.make_tensor_value_info("x", T.FLOAT, [3, 16])],
            {"b": rng.integers(-127, 128, (16, 6)).astype(np.int8), "bs": a(np.float32(0.01)),
             "bz": a(np.int8(0)), "bias": rng.uniform(-1, 1, 6).astype(np.float32)}, ["com.microsoft"])
qdq = save("qdq", [H.make_node("QuantizeLinear", ["x", "s0", "z0"], ["q0"]),
                   H.make_node("DequantizeLinear", ["q0", "s0", "z0"], ["d0"]),
                   H.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"]),
                   H.make_node("Conv", ["d0", "wf"], ["c"], pads=[1, 1, 1, 1]),
                   H.make_node("QuantizeLinear", ["c", "s1", "z1"], ["q1"]),
                   H.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
                   H.make_node("Flatten", ["d1"], ["f"]),
                   H.make_node("QuantizeLinear", ["f", "s1", "z1"], ["q2"]),
                   H.make_node("DequantizeLinear", ["q2", "s1", "z1"], ["d2"]),
                   H.make_node("DequantizeLinear", ["g", "sw", "zw"], ["gf"]),
                   H.make_node("DequantizeLinear", ["gb", "sb", "zb"], ["gbf"]),
                   H.make_node("Gemm", ["d2", "gf", "gbf"], ["m"], transB=1),
                   H.make_node("QuantizeLinear", ["m", "s2", "z2"], ["q3"]),
                   H.make_node("DequantizeLinear", ["q3", "s2", "z2"], ["y"])],
           [H.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 3])],
           {"s0": a(np.float32(0.05)), "z0": a(np.uint8(128)), "w": rng.integers(-127, 128, (2, 2, 3, 3)).astype(np.int8),
            "sw": a(np.float32(0.01)), "zw": a(np.int8(0)), "s1": a(np.float32(0.04)), "z1": a(np.uint8(120)),
            "g": rng.integers(-127, 128, (4, 18)).astype(np.int8), "gb": rng.integers(-99, 99, 4).astype(np.int32),
            "sb": a(np.float32(0.04 * 0.01)), "zb": a(np.int32(0)), "s2": a(np.float32(0.03)),
            "z2": a(np.uint8(100))})

ROW = re.compile(r"^  (\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$")
TOTAL = re.compile(r"^  total: (\d+) nodes = (\d+) native \+ (\d+) fallback \+ (\d+) removed \+ (\d+) view "
                   r"\(the model has (\d+); passes added (-?\d+)\)$")
for path in (dqmm, qdq):
    for dev in ("cpu", "gpu"):
        what = "%s on %s" % (os.path.basename(path), dev)
        rc, so, se = R.run([RLX, "run", path, "--device", dev, "--iters", "0", "--report"])
        if not C.check(rc == 0, "%s runs: %s" % (what, (so + se)[-500:])):
            continue
        rep = so[so.find("dispatch report"):]
        rows = [tuple(int(v) for v in m.groups()[1:]) for m in map(ROW.match, rep.splitlines()) if m]
        tot = [tuple(int(v) for v in m.groups()) for m in map(TOTAL.match, rep.splitlines()) if m]
        C.check(len(rows) >= 3, "%s: report rows:\n%s" % (what, rep))
        bad = [r for r in rows if r[0] != r[1] + r[2] + r[3] + r[4]]
        C.check(not bad, "%s: rows whose nodes != native + fallback + removed + view: %s\n%s" % (what, bad, rep))
        if C.check(len(tot) == 1, "%s: one total line:\n%s" % (what, rep)):
            t = tot[0]
            sums = tuple(sum(r[c] for r in rows) for c in range(5))
            C.check(t[:5] == sums, "%s: total %s, the column sums %s" % (what, t[:5], sums))
            C.check(t[0] == t[5] + t[6] and t[6] >= 0, "%s: total nodes %d != the model's %d + added %d"
                    % (what, t[0], t[5], t[6]))
        print("%-12s %-4s %d rows, total %s" % (os.path.basename(path), dev, len(rows), tot[0] if tot else None))
sys.exit(C.done())
