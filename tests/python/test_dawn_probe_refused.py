"""bench/dawn_probe: a subgroup-matrix configuration that the library
refuses is one line (issue 12.6): "subgroup matrix M.. N.. K.. A -> R:
refused: <the first error>" with the follow-on errors of the objects made
from the refused shader counted, not printed (it read as a cascade of six
uncaptured errors per spelling, over 90 lines per configuration on Dawn).
Checked on wgpu-native, which has no subgroup matrices: RLX_DAWN_SM_FORCE=1
puts the RLX_DAWN_SM_CONFIGS shaders through it anyway, and it refuses
each (the unknown enable-extension). Skips (exit 77) while dawn_probe is
not built (Linux with the WebGPU backend)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

PROBE = R.built("dawn_probe")
C = R.Checker("test_dawn_probe_refused")
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
lib = os.path.join(root, "third_party", "wgpu", "lib", "libwgpu_native.so")
if not os.path.exists(lib):
    R.skip("%s is missing" % lib)
env = dict(os.environ, RLX_DAWN_SM_FORCE="1", RLX_DAWN_SM_CONFIGS="16,16,32,5,1;8,8,8,2,1")
p = subprocess.run([PROBE, lib], capture_output=True, text=True, timeout=300, env=env)
out = p.stdout + p.stderr
lines = out.splitlines()
start = [i for i, ln in enumerate(lines) if "(configurations from RLX_DAWN_SM_CONFIGS:)" in ln]
if C.check(p.returncode == 0 and start, "dawn_probe ran the configurations (exit %d):\n%s" % (p.returncode, out[-2000:])):
    tail = lines[start[0] + 1:]
    C.check(len(tail) == 2, "one line per configuration, got %d:\n%s" % (len(tail), "\n".join(tail)[-2000:]))
    for ln, cfg in zip(tail, ("M16 N16 K32 u8 -> f32", "M8 N8 K8 f16 -> f32")):
        C.check(ln.startswith("  subgroup matrix %s: refused: " % cfg) and "chromium_experimental_subgroup_matrix"
                in ln and "from objects made from it" in ln, "the refusal line of %s: %r" % (cfg, ln))
C.check("uncaptured error" not in out and "FAILED" not in out, "no cascade, no FAILED:\n%s" % out[-1500:])
sys.exit(C.done())
