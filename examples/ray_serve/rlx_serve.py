"""Serving an ONNX model with rlx behind Ray Serve: one rlx session per
replica, requests batched along the model's first (batch) axis, one GPU or
a share of CPUs per replica.

    from rlx_serve import deployment
    from ray import serve
    handle = serve.run(deployment("model.onnx", device="cpu", replicas=2, cpus_per_replica=2))
    y = handle.predict.remote({"x": x}).result()        # x: (n, ...) numpy; y: the first output, (n, ...)

Or over HTTP (Ray Serve's proxy, port 8000 by default):
    POST /  {"inputs": {"x": [[...], ...]}}  ->  {"outputs": [[...], ...]}

Run as a script it starts Serve on the local Ray cluster (ray.init() joins
the one named by RAY_ADDRESS, or starts a one-node cluster) and serves until
interrupted:
    python examples/ray_serve/rlx_serve.py model.onnx --device gpu --replicas 4

Batching: @serve.batch gathers the requests that arrive within
batch_wait_timeout_s (up to max_batch_size of them), concatenates their
inputs along axis 0, runs them as one forward pass and hands each request its
rows back. The model's inputs must therefore have a free (symbolic) first
dim, and every request must agree on the other dims (rlx compiles one plan
per input-shape signature and keeps 8; a new batch size costs one compile).

Devices: device="cpu" reserves cpus_per_replica CPUs per replica in Ray and
sizes rlx's CPU threads to them (option cpu.threads, a session's; each
replica is its own process with its own pool). device="gpu" reserves
one GPU per replica (Ray's num_gpus) and opens the WebGPU adapter whose index
is the GPU id Ray assigned (gpu:N); rlx reaches GPUs through Vulkan, which
does not read CUDA_VISIBLE_DEVICES, so this relies on Vulkan listing the
GPUs in the order CUDA does (true for NVIDIA's driver with identical GPUs;
RLX_SERVE_ADAPTER=N overrides). On a machine whose GPUs Ray does not detect
(lavapipe, AMD without ROCm), start Ray with ray.init(num_gpus=K) /
`ray start --num-gpus=K` to declare them.
"""
from __future__ import annotations

import argparse
import os
from typing import Dict, List, Optional

import numpy as np
from ray import serve

try:
    from starlette.requests import Request
except ImportError:  # Serve without its HTTP extras: handles still work
    Request = object


class RlxModel:
    """A replica: one rlx.InferenceSession, batched calls."""

    def __init__(self, model_path: str, device: str = "cpu", cpus: int = 1, options: Optional[dict] = None,
                 max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005):
        import ray
        import rlx
        self.predict.set_max_batch_size(max_batch_size)
        self.predict.set_batch_wait_timeout_s(batch_wait_timeout_s)
        so = rlx.SessionOptions()
        for key, value in (options or {}).items():
            so.add_session_config_entry(key, str(value))
        if device == "cpu":
            so.intra_op_num_threads = cpus
            providers = ["CPUExecutionProvider"]
        else:
            ids = ray.get_gpu_ids()
            index = os.environ.get("RLX_SERVE_ADAPTER", str(int(ids[0])) if ids else "0")
            providers = [("WebGpuExecutionProvider", {"device_id": index})]
        self.session = rlx.InferenceSession(model_path, so, providers=providers)
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.device_name = self.session.rlx_session.device_name
        self.batches: List[int] = []  # calls per forward pass, the last 1000

    def info(self) -> dict:
        """Where this replica runs and how it batched (for logs and tests)."""
        return {"pid": os.getpid(), "device": self.device_name, "batches": list(self.batches)}

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def predict(self, requests: List[Dict[str, np.ndarray]]) -> List[np.ndarray]:
        """requests: one feeds dict per caller, each input (n_i, ...); returns
        the first output's rows of each caller, (n_i, ...)."""
        self.batches = self.batches[-999:] + [len(requests)]
        sizes = [int(np.shape(r[self.input_names[0]])[0]) for r in requests]
        feeds = {name: np.concatenate([np.asarray(r[name]) for r in requests], axis=0) for name in self.input_names}
        (y, *_) = self.session.run(None, feeds)
        return np.split(y, np.cumsum(sizes)[:-1], axis=0)

    async def __call__(self, request: Request) -> dict:
        body = await request.json()
        feeds = {name: np.asarray(body["inputs"][name], dtype=np.float32) for name in self.input_names}
        return {"outputs": (await self.predict(feeds)).tolist()}


def deployment(model_path: str, device: str = "cpu", replicas: int = 1, cpus_per_replica: int = 1,
               options: Optional[dict] = None, max_batch_size: int = 16, batch_wait_timeout_s: float = 0.005):
    """The bound Serve application for model_path (see the module docstring)."""
    actor = {"num_cpus": cpus_per_replica} if device == "cpu" else {"num_cpus": 1, "num_gpus": 1}
    dep = serve.deployment(RlxModel, name="rlx", num_replicas=replicas, ray_actor_options=actor,
                           max_ongoing_requests=4 * max_batch_size)
    return dep.bind(os.path.abspath(model_path), device, cpus_per_replica, options, max_batch_size,
                    batch_wait_timeout_s)


def main() -> None:
    import ray
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--cpus-per-replica", type=int, default=1)
    a = ap.parse_args()
    ray.init()
    serve.run(deployment(a.model, a.device, a.replicas, a.cpus_per_replica), blocking=True)


if __name__ == "__main__":
    main()
