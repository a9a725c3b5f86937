#!/usr/bin/env python3
"""Per-process options (cpu.sgemm_tile, cpu.gemm, cpu.pool_spin_us,
cpu.qgemm_kernel): the first session that gives one fixes it for the
process; a later session that gives another value is refused naming the
key, and a later session that does not give the key takes the process's
value (a tester found that such a session was refused, "cpu.sgemm_tile=8x32
... already '8x48'", because the default counted as asked for).

Each key in its own process (the state is per process): a session with the
key set, then sessions without options (CPU, and through
InferenceSession), then one with another value, which must fail; the
sessions that exist must run and agree bit for bit. Exits 77 when the
Python bindings cannot load (ASan builds).
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

CHILD = r'''
import sys
import numpy as np
import rlx
key, value, other, path = sys.argv[1:5]
x = np.random.default_rng(0).uniform(-1, 1, (64, 96)).astype(np.float32)
first = rlx.Session(rlx.Model(path), options={key: value})
y0 = first.run({"x": x})[0]
for make in (lambda: rlx.Session(rlx.Model(path)),
             lambda: rlx.Session(rlx.Model(path), options={"cpu.threads": 1})):
    s = make()  # must not raise: the key is not given
    assert np.array_equal(s.run({"x": x})[0], y0), key
sess = rlx.InferenceSession(path)
assert np.array_equal(sess.run(None, {"x": x})[0], y0), key
try:
    rlx.Session(rlx.Model(path), options={key: other})
except rlx.Error as e:
    assert key in str(e) and ("per process" in str(e) or "cannot run it" in str(e)), str(e)
else:
    raise AssertionError(f"{key}={other} after {key}={value} was accepted")
print(f"{key}: {value} fixed; sessions without it run; {other} refused")
'''


def main():
    try:
        import rlx  # noqa: F401
        rlx.version()
    except Exception as e:  # the library cannot load (e.g. an ASan build)
        print(f"skipped: {e}")
        sys.exit(77)
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(1).uniform(-1, 1, (96, 80)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                          "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 96])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 80])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    cases = [("cpu.sgemm_tile", "8x48", "8x32"), ("cpu.gemm", "blas", "pool"), ("cpu.pool_spin_us", "10", "20"),
             ("cpu.qgemm_kernel", "portable", "avx2")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLX_CPU_") and k != "RLX_POOL_SPIN_US"}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mm.onnx")
        onnx.save(m, path)
        for key, value, other in cases:
            r = subprocess.run([sys.executable, "-c", CHILD, key, value, other, path], env=env, capture_output=True,
                               text=True, timeout=300)
            if r.returncode:
                failed += 1
                print(f"FAIL {key}: {(r.stderr or r.stdout).strip()[-600:]}")
            else:
                print(r.stdout.strip())
    print(f"test_process_options: {len(cases)} keys, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
