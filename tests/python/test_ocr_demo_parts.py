"""The pieces of examples/ocr_det that need no model, against independent
numpy / pure-Python reimplementations (tests/python/ocr_ref.py):

1. PNG reading: images of every colour type and bit depth (with tRNS and
   interlacing), written here from random samples, read by ocr_det and
   pre-processed; the network input must equal the numpy pre-processing of
   the samples exactly (same float32 and double operations in the same
   order: tolerance 0).
2. Pre-processing of the real page (data/page.png) under both presets and a
   small side limit, exactly as above.
3. PNG writing: a random map (values outside [0, 1] and NaN included)
   written by --count-regions-npy --out, decoded here, must equal
   round(clamp(p, 0, 1) * 255) computed in float32 (tolerance 0).
4. Region counting: hand-made maps with known answers (8-connectivity,
   strict threshold, minimum area) and random maps against a BFS in Python.
5. Error paths: missing / non-PNG / truncated image, bad flags, --help.
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

OCR = R.built("ocr_det", "not built (libpng missing?)")

seed = int(os.environ.get("RLX_TEST_SEED", "20240611"))
print("seed", seed)
rng = np.random.default_rng(seed)
C = R.Checker("test_ocr_demo_parts")
tmp = tempfile.mkdtemp(prefix="rlx_ocr_parts_")


def ocr_preprocess(png_path, *extra):
    out = os.path.join(tmp, "x.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = R.run([OCR, "--image", png_path, "--preprocess-only", "--save-input", out, *extra])
    if not C.check(rc == 0, "ocr_det --preprocess-only on %s: exit %d\n%s%s" % (png_path, rc, so, se)):
        return None
    return np.load(out)


def compare_exact(got, want, what):
    if got is None:
        return
    if not C.check(got.shape == want.shape and got.dtype == want.dtype,
                   "%s: shape/dtype %s %s, expected %s %s" % (what, got.shape, got.dtype, want.shape, want.dtype)):
        return
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    # tolerance 0: both sides do the same IEEE operations in the same order
    C.check(np.array_equal(got, want), "%s: %d of %d elements differ, max abs diff %g" %
            (what, int((diff > 0).sum()), diff.size, diff.max()))


# ---------------------------------------------------------------- 1. PNG formats
def make_case(kind, h, w, interlace):
    """Returns (png bytes, expected 8-bit RGB)."""
    enc = lambda *a, **k: R.png_encode(*a, interlace=interlace, **k)  # noqa: E731
    if kind.startswith("gray") and not kind.startswith("graya"):
        depth = int(kind[4:])
        v = rng.integers(0, 1 << depth, size=(h, w, 1))
        g = R.scale_to_8bit(v[..., 0], depth).astype(np.uint8)
        return enc(v, 0, depth), np.repeat(g[..., None], 3, axis=2)
    if kind in ("rgb8", "rgb16"):
        depth = int(kind[3:])
        v = rng.integers(0, 1 << depth, size=(h, w, 3))
        return enc(v, 2, depth), R.scale_to_8bit(v, depth).astype(np.uint8)
    if kind in ("graya8", "graya16"):
        depth = int(kind[5:])
        v = rng.integers(0, 1 << depth, size=(h, w, 2))
        g = R.scale_to_8bit(v[..., 0], depth)
        a = R.scale_to_8bit(v[..., 1], depth)
        return enc(v, 4, depth), R.composite_white(np.repeat(g[..., None], 3, axis=2), a)
    if kind in ("rgba8", "rgba16"):
        depth = int(kind[4:])
        v = rng.integers(0, 1 << depth, size=(h, w, 4))
        rgb = R.scale_to_8bit(v[..., :3], depth)
        a = R.scale_to_8bit(v[..., 3], depth)
        return enc(v, 6, depth), R.composite_white(rgb, a)
    if kind.startswith("palette"):
        depth = int(kind[7:9]) if kind[7:9].isdigit() else int(kind[7])
        n = 1 << depth
        pal = rng.integers(0, 256, size=(n, 3))
        idx = rng.integers(0, n, size=(h, w, 1))
        rgb = pal[idx[..., 0]]
        if kind.endswith("t"):  # tRNS: alpha for the first entries
            alpha = np.full(n, 255)
            k = max(1, n // 2)
            alpha[:k] = rng.integers(0, 256, size=k)
            png = enc(idx, 3, depth, palette=pal, trns=bytes(alpha[:k].astype(np.uint8)))
            return png, R.composite_white(rgb, alpha[idx[..., 0]])
        return enc(idx, 3, depth, palette=pal), rgb.astype(np.uint8)
    raise ValueError(kind)


kinds = ["gray1", "gray2", "gray4", "gray8", "gray16", "graya8", "graya16", "rgb8", "rgb16", "rgba8", "rgba16",
         "palette1", "palette4", "palette8", "palette8t", "palette4t"]
for kind in kinds:
    # 48 / 32 = 1.5 and 80 / 32 = 2.5 round half to even: to 64 both
    for (h, w), interlace in (((64, 96), False), ((23, 37), False), ((48, 80), False), ((80, 48), False),
                              ((64, 96), True)):
        png, rgb = make_case(kind, h, w, interlace)
        path = os.path.join(tmp, "%s_%dx%d%s.png" % (kind, w, h, "_i" if interlace else ""))
        with open(path, "wb") as f:
            f.write(png)
        # limit 960 type max leaves these sizes alone up to the rounding to 32
        got = ocr_preprocess(path)
        compare_exact(got, R.preprocess(rgb), "%s %dx%d%s" % (kind, w, h, " interlaced" if interlace else ""))


# interlaced files: the same samples written with and without Adam7 must read alike
for kind, ctype, depth, ch in (("gray8", 0, 8, 1), ("rgb16", 2, 16, 3), ("rgba8", 6, 8, 4)):
    h, w = 29, 45
    v = rng.integers(0, 1 << depth, size=(h, w, ch))
    a = os.path.join(tmp, "plain_%s.png" % kind)
    b = os.path.join(tmp, "adam7_%s.png" % kind)
    with open(a, "wb") as f:
        f.write(R.png_encode(v, ctype, depth))
    with open(b, "wb") as f:
        f.write(R.png_encode(v, ctype, depth, interlace=True))
    xa, xb = ocr_preprocess(a), ocr_preprocess(b)
    if xa is not None and xb is not None:
        C.check(np.array_equal(xa, xb), "interlaced %s reads differently from non-interlaced" % kind)

# ---------------------------------------------------------------- 2. the page
page = os.path.join(R.ROOT, "data", "page.png")
if os.path.exists(page):
    gray = R.png_read_file(page)
    C.check(gray.shape == (191, 384, 1), "data/page.png is %s, expected 191x384 gray" % (gray.shape,))
    rgb = np.repeat(gray, 3, axis=2)
    x = ocr_preprocess(page)
    compare_exact(x, R.preprocess(rgb), "page.png, paddleocr preset")
    C.check(x is not None and x.shape == (1, 3, 192, 384), "page input shape %s" % (None if x is None else x.shape,))
    x = ocr_preprocess(page, "--limit-side-len", "128")
    compare_exact(x, R.preprocess(rgb, limit=128), "page.png, side limit 128")
    C.check(x is not None and x.shape == (1, 3, 64, 128), "page 128 input shape")
    x = ocr_preprocess(page, "--preset", "rapidocr")
    compare_exact(x, R.preprocess(rgb, preset="rapidocr"), "page.png, rapidocr preset")
    C.check(R.target_size(48, 80, 960, True) == (64, 64), "numpy target_size rounds half to even")
    C.check(x is not None and x.shape == (1, 3, 736, 1472), "page rapidocr input shape")
    x = ocr_preprocess(page, "--limit-type", "min", "--limit-side-len", "100")
    compare_exact(x, R.preprocess(rgb, limit=100, limit_max=False), "page.png, type min 100 (no resize)")
else:
    C.check(False, "data/page.png is missing (run scripts/setup.sh)")

# ---------------------------------------------------------------- 3. PNG writing
pm = rng.uniform(-0.2, 1.2, size=(1, 1, 37, 53)).astype(np.float32)
pm[0, 0, 3, 4] = np.nan
pm[0, 0, 5, 6] = 0.5 / 255.0
npy = os.path.join(tmp, "map.npy")
outpng = os.path.join(tmp, "sub", "dir", "map.png")  # folders are created
np.save(npy, pm)
rc, so, se = R.run([OCR, "--count-regions-npy", npy, "--out", outpng])
if C.check(rc == 0 and os.path.exists(outpng), "--count-regions-npy --out: exit %d\n%s%s" % (rc, so, se)):
    img = R.png_read_file(outpng)
    p = pm[0, 0].copy()
    p[~(p > 0)] = 0  # NaN and negatives -> 0
    p = np.minimum(p, np.float32(1.0))
    want = np.floor(p * np.float32(255.0) + np.float32(0.5)).astype(np.uint8)
    C.check(img.shape == (37, 53, 1), "written PNG shape %s" % (img.shape,))
    C.check(img.shape == (37, 53, 1) and np.array_equal(img[..., 0], want),
            "written PNG differs from round(clamp(p)*255)")

# ---------------------------------------------------------------- 4. regions


def ocr_count(m, *extra):
    path = os.path.join(tmp, "cnt.npy")
    np.save(path, np.asarray(m, dtype=np.float32))
    rc, so, se = R.run([OCR, "--count-regions-npy", path, *extra])
    if not C.check(rc == 0, "--count-regions-npy: exit %d\n%s%s" % (rc, so, se)):
        return -1
    return R.parse_region_count(so)


m = np.zeros((20, 30), dtype=np.float32)
m[2:5, 2:5] = 0.9      # 3x3 = 9 px: counted (min area 9)
m[5:8, 5:8] = 0.9      # touches the first only at a corner: joined (8-connected)
m[10:13, 2:5] = 0.9    # separate block
m[10:12, 10:14] = 0.9  # 8 px: dropped at min area 9
m[15:18, 20:23] = 0.3  # exactly the threshold: not text (p > 0.3)
m[15:18, 25:28] = 0.30001
m[0:2, 27:29] = 0.9    # 4 px of text ...
m[0:2, 24:27] = 0.3    # ... beside 6 px exactly at the threshold: still 4 px, dropped
C.check(ocr_count(m) == 3, "hand-made map: expected 3 regions (got %d)" % ocr_count(m))
C.check(ocr_count(m, "--min-area", "8") == 4, "hand-made map, min area 8: expected 4")
C.check(ocr_count(m, "--thresh", "0.95") == 0, "hand-made map, thresh 0.95: expected 0")
C.check(ocr_count(m, "--thresh", "0.29") == 5, "hand-made map, thresh 0.29: expected 5")
C.check(ocr_count(m, "--min-area", "4") == 5, "hand-made map, min area 4: expected 5")
for k in range(6):
    rm = (rng.uniform(0, 1, size=(24 + k, 40 - k)) ** 3).astype(np.float32)
    for th, ma in ((0.3, 9), (0.1, 3), (0.5, 1)):
        want = R.count_regions(rm, th, ma)
        got = ocr_count(rm, "--thresh", str(th), "--min-area", str(ma))
        C.check(got == want, "random map %d thresh %g min area %d: ocr_det %d, python %d" % (k, th, ma, got, want))

# ---------------------------------------------------------------- 5. errors


def expect_fail(args, code, needle, what):
    rc, so, se = R.run([OCR] + args)
    C.check(rc == code and se.startswith("ocr_det: error: ") and needle in se,
            "%s: exit %d (want %d), stderr %r (want it to contain %r)" % (what, rc, code, se, needle))


expect_fail(["--image", os.path.join(tmp, "nope.png"), "--preprocess-only", "--save-input", npy], 2, "nope.png",
            "missing image")
notpng = os.path.join(tmp, "not.png")
with open(notpng, "w") as f:
    f.write("hello")
expect_fail(["--image", notpng, "--preprocess-only", "--save-input", npy], 2, "not a PNG", "not a PNG")
trunc = os.path.join(tmp, "trunc.png")
with open(trunc, "wb") as f:
    f.write(R.png_encode(rng.integers(0, 256, size=(40, 40, 3)), 2, 8)[:120])
expect_fail(["--image", trunc, "--preprocess-only", "--save-input", npy], 2, "trunc.png", "truncated PNG")
expect_fail(["--bogus"], 2, "unknown option '--bogus'", "unknown option")
expect_fail(["--image"], 2, "needs a value", "missing value")
expect_fail(["--image", page], 2, "--model", "no model")
expect_fail(["--image", page, "--preprocess-only"], 2, "--save-input", "preprocess-only without --save-input")
expect_fail(["--image", page, "--model", "m.onnx", "--device", "tpu"], 2, "--device", "bad device")
expect_fail(["--count-regions-npy", npy, "--thresh", "2"], 2, "--thresh", "bad threshold")
expect_fail(["--count-regions-npy", os.path.join(tmp, "none.npy")], 2, "none.npy", "missing map")
rc, so, se = R.run([OCR, "--help"])
C.check(rc == 0 and "usage: ocr_det" in so and all(o in so for o in (
    "--model", "--image", "--out", "--device", "--thresh", "--min-area", "--runs", "--save-input", "--save-output",
    "--preprocess-only", "--count-regions-npy", "--preset", "--limit-side-len", "--limit-type")),
    "--help lists every option")

C.done()
