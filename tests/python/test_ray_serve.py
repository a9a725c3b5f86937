"""The Ray Serve recipe (examples/ray_serve/rlx_serve.py) on a local one-node
Ray cluster: two CPU replicas (one CPU each) and, when an adapter exists, one
GPU replica (the cluster declares one GPU, since Ray does not detect
lavapipe); 24 concurrent requests of 1 to 3 rows each through the deployment
handle and one over HTTP, every answer compared with a direct rlx run of the
same rows (CPU: within 1e-6, since a batched run may round a row's sums in
another order than a single-row one; GPU: within 1e-5 of the CPU); both CPU
replicas must have served, and some call must have been batched.

Skips (exit 77) when ray (with Serve) is not installed: it is a large
install, not part of the project's .venv (measured: ray[serve] 2.60.0 with
numpy, onnx and onnxruntime is a 718 MB venv of 86 packages, ray alone 240
MB; the install took 1.6 min of CPU, 24 min of wall time on this shared
2-core machine). This test takes about 2.5 min here. To run it:
    python3 -m venv /tmp/rayenv && /tmp/rayenv/bin/pip install "ray[serve]" numpy onnx
    RLX_BUILD_DIR=build /tmp/rayenv/bin/python tests/python/test_ray_serve.py
Also skips while librlx.so is not built or is built with the sanitizers."""
import json
import os
import socket
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

try:
    import onnx
    import ray
    from onnx import TensorProto as T
    from onnx import helper as H
    from onnx import numpy_helper as NH
    from ray import serve
except ImportError as e:
    R.skip("%s (this test needs ray[serve] and onnx: see its docstring)" % e)

rlx = R.import_rlx()
C = R.Checker("test_ray_serve")
EXAMPLE = os.path.join(R.ROOT, "examples", "ray_serve")
sys.path.insert(0, EXAMPLE)
import rlx_serve  # noqa: E402

rng = R.seeded_rng(9)
tmp = tempfile.mkdtemp(prefix="rlx_ray_")
W = rng.standard_normal((6, 4)).astype(np.float32)
b = rng.uniform(0.5, 1.5, 4).astype(np.float32)
g = H.make_graph([H.make_node("MatMul", ["x", "W"], ["h"]), H.make_node("Add", ["h", "b"], ["hb"]),
                  H.make_node("Tanh", ["hb"], ["y"])], "serve",
                 [H.make_tensor_value_info("x", T.FLOAT, ["batch", 6])],
                 [H.make_tensor_value_info("y", T.FLOAT, ["batch", 4])],
                 initializer=[NH.from_array(W, "W"), NH.from_array(b, "b")])
model = os.path.join(tmp, "serve.onnx")
onnx.save(H.make_model(g, opset_imports=[H.make_opsetid("", 17)], ir_version=8), model)
requests = [{"x": rng.uniform(-2, 2, (int(rng.integers(1, 4)), 6)).astype(np.float32)} for _ in range(24)]
direct = rlx.InferenceSession(model)
expect = [direct.run(None, r)[0] for r in requests]
gpu = len(rlx.adapters()) > 0

# the replicas are processes Ray starts: they find rlx and the recipe through the environment
os.environ["PYTHONPATH"] = os.pathsep.join([os.path.join(R.ROOT, "python"), EXAMPLE])
ray.init(num_cpus=3, num_gpus=1 if gpu else 0, include_dashboard=False, log_to_driver=False)
with socket.socket() as s:  # a free port for Serve's HTTP proxy (the machine is shared)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
serve.start(http_options={"host": "127.0.0.1", "port": port})


def check_app(name, handle, tol, replicas):
    with ThreadPoolExecutor(len(requests)) as pool:  # all in flight at once
        answers = list(pool.map(lambda r: handle.predict.remote(r).result(), requests))
    for i, (a, e) in enumerate(zip(answers, expect)):
        err = float(np.abs(a - e).max())
        C.check(a.shape == e.shape and err <= tol, "%s request %d: shape %s vs %s, max abs diff %.3g (tolerance %g)"
                % (name, i, a.shape, e.shape, err, tol))
    infos = [handle.info.remote().result() for _ in range(4)]
    batched = max(max(i["batches"] or [0]) for i in infos)
    states = serve.status().applications[name].deployments["rlx"].replica_states
    print("%s: replicas %r (%s), largest batch %d calls" % (name, states, infos[0]["device"], batched))
    C.check(states.get("RUNNING") == replicas, "%s: replica states %r, want %d running" % (name, states, replicas))
    return batched


cpu_handle = serve.run(rlx_serve.deployment(model, "cpu", replicas=2, cpus_per_replica=1), name="cpu",
                       route_prefix="/cpu")
batched = check_app("cpu", cpu_handle, 1e-6, 2)
if gpu:
    gpu_handle = serve.run(rlx_serve.deployment(model, "gpu", replicas=1), name="gpu", route_prefix="/gpu")
    batched = max(batched, check_app("gpu", gpu_handle, 1e-5, 1))
C.check(batched > 1, "no call was batched with another")

body = json.dumps({"inputs": {"x": requests[0]["x"].tolist()}}).encode()
req = urllib.request.Request("http://127.0.0.1:%d/cpu" % port, data=body, headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as resp:
    out = np.asarray(json.loads(resp.read())["outputs"], dtype=np.float32)
C.check(out.shape == expect[0].shape and float(np.abs(out - expect[0]).max()) <= 1e-6, "HTTP answer %r" % out)

serve.shutdown()
ray.shutdown()
C.done()
