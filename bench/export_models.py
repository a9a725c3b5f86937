#!/usr/bin/env python3
"""Writes the benchmark models as ONNX files (shared by bench/compare.py and
bench/sweep.py):

  resnet50, mobilenet_v2   torchvision, random weights (no download),
                           input "input" [batch, 3, 224, 224]
  bert_base                transformers BertModel from a BertConfig (12 layers,
                           hidden 768, 12 heads, intermediate 3072), random
                           weights; inputs input_ids, attention_mask,
                           token_type_ids [batch, seq] (int64)
  minilm                   the same with 6 layers, hidden 384, 12 heads,
                           intermediate 1536 (all-MiniLM-L6-v2's size)
  gemm_M_N_K               one MatMul y[M, N] = a[M, K] x w[K, N], w a constant
                           (numpy + onnx only)

  python3 bench/export_models.py --dest DIR [--only resnet50,bert_base,...]

torch models are exported with the TorchScript exporter (dynamo=False) at
opset 17 with a dynamic batch (and sequence) dim, else with the dynamo
exporter. Without torch (or when an export fails) the BERT encoders come from
scripts/make_minilm_onnx.py --random (same architecture, numpy weights) and
the torchvision models are skipped; models() says which source each file
has. Files that exist are reused (delete DIR to refresh).
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXPORT_TIMEOUT = 150  # seconds for one torch export

BERTS = {
    "bert_base": dict(layers=12, hidden=768, heads=12, intermediate=3072),
    "minilm": dict(layers=6, hidden=384, heads=12, intermediate=1536),
}


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


def torch_model(name):
    """The torch module of a benchmark model (eval mode, random weights), or None."""
    import torch
    torch.manual_seed(0)
    if name in ("resnet50", "mobilenet_v2"):
        import torchvision
        return getattr(torchvision.models, name)(weights=None).eval()
    if name in BERTS:
        from transformers import BertConfig, BertModel
        c = BERTS[name]
        cfg = BertConfig(num_hidden_layers=c["layers"], hidden_size=c["hidden"], num_attention_heads=c["heads"],
                         intermediate_size=c["intermediate"], vocab_size=30522, max_position_embeddings=512)
        try:
            cfg._attn_implementation = "eager"  # plain MatMul/Softmax attention in the ONNX graph
        except Exception:
            pass
        bert = BertModel(cfg).eval()

        class Encoder(torch.nn.Module):
            """BertModel with positional inputs and a tuple output (for the
            exporters and CUDA graphs, whatever the transformers version)."""

            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask, token_type_ids):
                o = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                               return_dict=True)
                return o.last_hidden_state, o.pooler_output

        return Encoder(bert).eval()
    return None


def torch_inputs(name, batch, seq=128, device="cpu"):
    """Example inputs of a benchmark model (a tuple) for torch."""
    import torch
    g = torch.Generator().manual_seed(1)
    if name in BERTS:
        ids = torch.randint(1000, 30000, (batch, seq), generator=g)
        ids[:, 0] = 101
        ids[:, -1] = 102
        mask = torch.ones(batch, seq, dtype=torch.int64)
        tt = torch.zeros(batch, seq, dtype=torch.int64)
        return tuple(t.to(device) for t in (ids, mask, tt))
    return (torch.rand(batch, 3, 224, 224, generator=g).to(device) * 2 - 1,)


def export_torch(name, path):
    import torch
    m = torch_model(name)
    args = torch_inputs(name, 1)
    if name in BERTS:
        names_in = ["input_ids", "attention_mask", "token_type_ids"]
        names_out = ["last_hidden_state", "pooler_output"]
        dyn = {n: {0: "batch", 1: "seq"} for n in names_in}
        dyn["last_hidden_state"] = {0: "batch", 1: "seq"}
        dyn["pooler_output"] = {0: "batch"}
    else:
        names_in, names_out = ["input"], ["output"]
        dyn = {"input": {0: "batch"}, "output": {0: "batch"}}
    last = None
    for dynamo in (False, True):
        try:
            with torch.no_grad():
                kw = dict(input_names=names_in, output_names=names_out, dynamic_axes=dyn, opset_version=17)
                try:
                    torch.onnx.export(m, args, path, dynamo=dynamo, **kw)
                except TypeError:  # an older torch without the dynamo argument
                    if dynamo:
                        raise
                    torch.onnx.export(m, args, path, **kw)
            return "torch.onnx (%s)" % ("dynamo" if dynamo else "torchscript")
        except Exception as e:  # try the other exporter
            last = e
            if os.path.exists(path):
                os.remove(path)
    raise RuntimeError("torch.onnx.export failed: %s" % last)


def export_bert_numpy(name, path):
    c = BERTS[name]
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_minilm_onnx.py"), "--random", "--layers",
                    str(c["layers"]), "--hidden", str(c["hidden"]), "--heads", str(c["heads"]), "--intermediate",
                    str(c["intermediate"]), "-o", path], check=True, stdout=subprocess.DEVNULL)
    return "scripts/make_minilm_onnx.py --random"


def export_gemm(M, N, K, path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(0).uniform(-1, 1, (K, N)).astype(np.float32)
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [M, K])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "gemm", [a], [y],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return "numpy + onnx"


def models(dest, names, log=print):
    """Exports (or reuses) each named model under dest; returns
    {name: {"path": ..., "source": ...}} for those that exist afterwards."""
    os.makedirs(dest, exist_ok=True)
    out = {}
    torch_ok = None
    for name in names:
        path = os.path.join(dest, name + ".onnx")
        src_file = path + ".source"
        if os.path.exists(path):
            src = open(src_file).read().strip() if os.path.exists(src_file) else "cached"
            out[name] = {"path": path, "source": src}
            continue
        t0 = time.time()
        src = None
        try:
            if name.startswith("gemm_"):
                M, N, K = (int(v) for v in name.split("_")[1:4])
                src = export_gemm(M, N, K, path)
            else:
                if torch_ok is None:
                    torch_ok = have_torch()
                if torch_ok:
                    # in a child process with a time limit: an exporter that
                    # hangs or crashes costs this model only
                    try:
                        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--dest", dest, "--one", name],
                                           capture_output=True, text=True, timeout=EXPORT_TIMEOUT)
                        if p.returncode == 0 and os.path.exists(path):
                            src = p.stdout.strip().splitlines()[-1]
                        else:
                            log("export %s: %s" % (name, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]))
                    except subprocess.TimeoutExpired:
                        log("export %s: no result after %d s" % (name, EXPORT_TIMEOUT))
                        if os.path.exists(path):
                            os.remove(path)
                if src is None and name in BERTS:
                    src = export_bert_numpy(name, path)
        except Exception as e:
            log("export %s failed: %s" % (name, str(e).splitlines()[0][:300]))
            src = None
        if src and os.path.exists(path):
            with open(src_file, "w") as f:
                f.write(src + "\n")
            out[name] = {"path": path, "source": src}
            log("exported %s (%s) in %.1f s" % (name, src, time.time() - t0))
        else:
            log("skipped %s: no exporter available (torch/torchvision missing?)" % name)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", required=True)
    ap.add_argument("--only", default="resnet50,mobilenet_v2,bert_base,minilm")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one torch export in this process
    a = ap.parse_args()
    if a.one:
        print(export_torch(a.one, os.path.join(a.dest, a.one + ".onnx")))
        return
    got = models(a.dest, [n for n in a.only.split(",") if n])
    for k, v in got.items():
        print("%-14s %s (%s)" % (k, v["path"], v["source"]))


if __name__ == "__main__":
    main()
