"""End to end: the PP-OCRv4 text detector on the scanned page, at a small
input size, through onnxruntime (the reference), `rlx run --device cpu`,
`rlx run --device gpu` and ocr_det itself.

Input: data/page.png resized by ocr_det to 64x128 (--limit-side-len 128),
saved with --save-input, and checked to equal the numpy pre-processing of
tests/python/ocr_ref.py exactly.

Tolerances, on the probability map [1, 1, 64, 128]:
  max abs difference               <= 1e-4
  normwise ||out - ref|| / ||ref|| <= 1e-5
  region count (p > 0.3, 8-connected, >= 9 px) equal across all runs and
  to the numpy count on the reference map. The reference map keeps every
  pixel at least ATOL away from the threshold (checked), so a map within
  the tolerance has the same text pixels and the count is deterministic.

Skips (exit 77) while rlx cannot load or run the model for want of a part
still being written (the ONNX importer, an op: RLX_ERR_UNSUPPORTED), after
checking the input; RLX_TEST_REQUIRE_E2E=1 makes that a failure. Wrong
numbers, crashes and device errors always fail. The GPU part is skipped
when no GPU adapter exists unless RLX_TEST_REQUIRE_GPU is set.
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

ATOL = 1e-4
NORM_RTOL = 1e-5
RLX, OCR = R.exe("rlx"), R.exe("ocr_det")
MODEL = os.path.join(R.ROOT, "models", "ppocrv4_det.onnx")
PAGE = os.path.join(R.ROOT, "data", "page.png")

for f in (RLX, OCR, MODEL, PAGE):
    if not os.path.exists(f):
        R.skip("%s is missing (build with libpng; run scripts/setup.sh)" % f)

C = R.Checker("test_ocr_demo")
tmp = tempfile.mkdtemp(prefix="rlx_ocr_e2e_")

# ---------------------------------------------------------------- the input
xpath = os.path.join(tmp, "x.npy")
rc, so, se = R.run([OCR, "--image", PAGE, "--limit-side-len", "128", "--preprocess-only", "--save-input", xpath])
if not C.check(rc == 0, "ocr_det --preprocess-only: exit %d\n%s%s" % (rc, so, se)):
    C.done()
x = np.load(xpath)
rgb = np.repeat(R.png_read_file(PAGE), 3, axis=2)
C.check(x.shape == (1, 3, 64, 128) and x.dtype == np.float32, "input is %s %s" % (x.shape, x.dtype))
C.check(np.array_equal(x, R.preprocess(rgb, limit=128)), "ocr_det's input differs from the numpy pre-processing")

# ---------------------------------------------------------------- reference
import onnxruntime as ort  # noqa: E402

sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
ref = sess.run(None, {sess.get_inputs()[0].name: x})[0]
out_name = sess.get_outputs()[0].name
ref_regions = R.count_regions(ref[0, 0])
margin = float(np.abs(ref[0, 0].astype(np.float64) - 0.3).min())
print("onnxruntime: output %s %s, %d regions, closest pixel to the threshold %.2e away" %
      (out_name, ref.shape, ref_regions, margin))
C.check(margin > ATOL, "reference map has a pixel within %g of the threshold: region counts may flip" % ATOL)


def sanitised(name):
    """The file name rlx run --output-dir uses (see rlx run --help)."""
    s = "".join(c if (c.isascii() and (c.isalnum() or c in "_-.")) else "_" for c in name)
    return "_" + s[1:] if s.startswith(".") else s


def compare(got, what):
    if not C.check(got.shape == ref.shape and got.dtype == ref.dtype,
                   "%s: %s %s, expected %s %s" % (what, got.shape, got.dtype, ref.shape, ref.dtype)):
        return
    d = got.astype(np.float64) - ref.astype(np.float64)
    max_abs = float(np.nanmax(np.abs(d))) if not np.isnan(d).all() else float("nan")
    norm_rel = float(np.linalg.norm(d) / np.linalg.norm(ref.astype(np.float64)))
    print("%s: max abs diff %.3g, normwise rel %.3g" % (what, max_abs, norm_rel))
    C.check(not np.isnan(got).any(), "%s: NaN in the output" % what)
    C.check(max_abs <= ATOL, "%s: max abs diff %.3g > %g" % (what, max_abs, ATOL))
    C.check(norm_rel <= NORM_RTOL, "%s: normwise rel %.3g > %g" % (what, norm_rel, NORM_RTOL))
    mp = os.path.join(tmp, "map_%s.npy" % what.replace(" ", "_"))
    np.save(mp, got)
    rc, so, se = R.run([OCR, "--count-regions-npy", mp])
    if C.check(rc == 0, "%s: ocr_det --count-regions-npy exit %d\n%s" % (what, rc, se)):
        n = R.parse_region_count(so)
        C.check(n == ref_regions, "%s: %d regions, onnxruntime's map has %d" % (what, n, ref_regions))


# ---------------------------------------------------------------- rlx run
missing_part = None  # why rlx cannot run the model yet
gpu_required = bool(os.environ.get("RLX_TEST_REQUIRE_GPU"))
e2e_required = bool(os.environ.get("RLX_TEST_REQUIRE_E2E"))
for device in ("cpu", "gpu"):
    od = os.path.join(tmp, "out_" + device)
    rc, so, se = R.run([RLX, "run", MODEL, "--device", device, "--input", "x=" + xpath, "--output-dir", od,
                        "--warmup", "0", "--iters", "1"])
    print(so, se, sep="")
    if rc == 2 and "(RLX_ERR_UNSUPPORTED)" in se and not e2e_required:
        missing_part = se.strip()
        break
    if device == "gpu" and rc == 1 and "RLX_ERR_NO_ADAPTER" in se and not gpu_required:
        print("SKIP: no GPU adapter (set RLX_TEST_REQUIRE_GPU=1 to make this a failure)")
        continue
    if not C.check(rc == 0, "rlx run --device %s: exit %d" % (device, rc)):
        continue
    f = os.path.join(od, sanitised(out_name) + ".npy")
    if C.check(os.path.exists(f), "rlx run --output-dir did not write %s" % f):
        compare(np.load(f), "rlx run " + device)

# ---------------------------------------------------------------- ocr_det itself
if missing_part is None:
    for device in ("cpu", "gpu"):
        op = os.path.join(tmp, "ocr_%s.npy" % device)
        png = os.path.join(tmp, "ocr_%s.png" % device)
        rc, so, se = R.run([OCR, "--model", MODEL, "--image", PAGE, "--limit-side-len", "128", "--device", device,
                            "--runs", "1", "--save-output", op, "--out", png])
        print(so, se, sep="")
        if device == "gpu" and rc == 1 and "RLX_ERR_NO_ADAPTER" in se and not gpu_required:
            print("SKIP: ocr_det on the GPU: no GPU adapter")
            continue
        if not C.check(rc == 0, "ocr_det --device %s: exit %d" % (device, rc)):
            continue
        compare(np.load(op), "ocr_det " + device)
        C.check(R.parse_region_count(so) == ref_regions, "ocr_det %s printed a different region count" % device)
        C.check("device: " in so and "timings: load " in so and "input: 1x3x64x128" in so,
                "ocr_det %s: output lacks the device, input size or timings lines" % device)
        C.check(os.path.exists(png) and R.png_read_file(png).shape == (64, 128, 1),
                "ocr_det %s: --out PNG missing or not 128x64 gray" % device)

if missing_part is not None:
    if C.failed:
        C.done()
    print("SKIP: rlx cannot run the model yet (%s); %d checks on the input passed" % (missing_part, C.total))
    sys.exit(R.SKIP)
C.done()
