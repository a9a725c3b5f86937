#!/usr/bin/env python3
"""Where a model's GPU time goes: `rlx bench --profile` of the benchmark
models, with the fusion report, printed as rlx's per-op and per-kernel
summaries (meant for the lent H200: the output is small, the traces stay
in --traces).

  python3 bench/profile_models.py --rlx PATH/TO/rlx [--models-dir DIR]
                                  [--traces DIR] [--batch 1] [MODEL ...]

MODEL: resnet50, mobilenet_v2, bert_base, minilm (default: minilm
bert_base mobilenet_v2), exported as bench/compare.py does. With --fp16
each model is profiled twice: as exported (f32) and in its fp16 form
(bench/model_dtypes.py's onnxruntime conversion, keep_io_types), to see
which kernels make the fp16 model slower or faster.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import export_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", default=os.path.join(os.path.dirname(HERE), "build", "rlx"))
    ap.add_argument("--models-dir", default=os.path.join(tempfile.gettempdir(), "rlx_bench_models"))
    ap.add_argument("--traces", default=None, help="folder for the Chrome traces")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--fp16", action="store_true", help="also profile each model's fp16 form")
    ap.add_argument("--top", type=int, default=0, help="rlx bench --top N (0: rlx's default)")
    ap.add_argument("models", nargs="*", default=["minilm", "bert_base", "mobilenet_v2"])
    a = ap.parse_args()
    got = export_models.models(a.models_dir, a.models, log=compare.log)
    tmp = tempfile.mkdtemp(prefix="rlx_profile_")
    for name in a.models:
        if name not in got:
            print("%s: not exported" % name)
            continue
        if name in export_models.BERTS:
            feeds = compare.bert_feeds(a.batch, 128)
        else:
            import numpy as np
            feeds = {"input": np.random.default_rng(0).uniform(-1, 1, (a.batch, 3, 224, 224)).astype(np.float32)}
        d = tempfile.mkdtemp(dir=tmp)
        in_args = compare.write_npys(feeds, d)
        forms = [("f32", got[name]["path"])]
        if a.fp16:
            import model_dtypes
            f16 = os.path.splitext(got[name]["path"])[0] + "_fp16.onnx"
            model_dtypes.make_fp16(got[name]["path"], f16)
            forms.append(("fp16", f16))
        for form, path in forms:
            trace = os.path.join(a.traces or d, "trace_%s%s.json" % (name, "" if form == "f32" else "_" + form))
            env = dict(os.environ, RLX_FUSION_REPORT="1", RLX_DISPATCH_REPORT="1")
            cmd = [a.rlx, "bench", path, "--device", "gpu", "--iters", str(a.iters), "--warmup", "3",
                   "--profile", trace] + (["--top", str(a.top)] if a.top else []) + in_args
            print("== %s %s (batch %d): %s" % (name, form, a.batch, " ".join(cmd[1:4])), flush=True)
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
            print(p.stdout[-6000:])
            if p.returncode:
                print("exit %d: %s" % (p.returncode, p.stderr[-2000:]))
            else:
                print(p.stderr[-3000:])

if __name__ == "__main__":
    main()
