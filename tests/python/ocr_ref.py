"""Independent reimplementations of what examples/ocr_det.c does, for tests.

Written from the specifications (PNG: RFC 2083 / the W3C PNG spec; the
pre-processing as documented at the top of examples/ocr_det.c), in numpy and
plain Python, sharing no code with the C side:

- png_encode / png_decode: a small PNG writer (all colour types, bit depths
  1-16, optional tRNS and Adam7 interlacing) and reader (non-interlaced, all
  filters), on zlib;
- expected_rgb8: what png_read_rgb8 must return for given PNG samples;
- preprocess: resize + BGR + normalise as ocr_det;
- count_regions: 8-connected regions above a threshold with a minimum area;
- helpers to run programs and to find the build directory.
"""
import os
import struct
import subprocess
import tempfile
import sys
import zlib
from collections import deque

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("RLX_BUILD_DIR", os.path.join(ROOT, "build"))
SKIP = 77  # CTest SKIP_RETURN_CODE of the python tests


def exe(name):
    return os.path.join(BUILD, name)


def skip(why):
    """Prints why and exits with SKIP (CTest counts the test as skipped)."""
    print("SKIP: %s" % why)
    sys.exit(SKIP)


def built(name, why="is not built"):
    """exe(name), the path of a program of BUILD; exits with SKIP while it
    is not built."""
    path = exe(name)
    if not os.path.exists(path):
        skip("%s %s" % (path, why))
    return path


def test_seed(default):
    """RLX_TEST_SEED (else `default`), printed so that a failure can be
    replayed."""
    seed = int(os.environ.get("RLX_TEST_SEED", str(default)))
    print("seed", seed)
    return seed


def seeded_rng(default):
    """numpy's Generator seeded with test_seed(default)."""
    return np.random.default_rng(test_seed(default))


def bindings_unavailable():
    """Why the Python bindings cannot be loaded from BUILD (None when they
    can): no librlx.so, or one built with the sanitizers (it cannot be
    loaded into an uninstrumented Python)."""
    lib = os.path.join(BUILD, "librlx.so")
    if not os.path.exists(lib):
        return "%s is not built" % lib
    cache = os.path.join(BUILD, "CMakeCache.txt")
    if os.path.exists(cache) and "RLX_SANITIZE:BOOL=ON" in open(cache).read():
        return "%s is built with the sanitizers" % lib
    return None


def import_rlx():
    """The rlx package of python/ bound to BUILD's librlx.so; exits with
    SKIP when bindings_unavailable() says why not."""
    why = bindings_unavailable()
    if why:
        skip(why)
    os.environ["RLX_LIBRARY"] = os.path.join(BUILD, "librlx.so")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import rlx
    return rlx


def devices(rlx):
    """The devices a test runs on: ["cpu", "gpu"] where rlx sees a GPU
    adapter (lavapipe counts), else ["cpu"], saying so."""
    if len(rlx.adapters()) > 0:
        return ["cpu", "gpu"]
    print("no GPU adapter: CPU only")
    return ["cpu"]


def run_session(rlx, path, feeds, device, op=None):
    """Outputs of one run of the model at path on device (the GPU's arena
    poisoned: gpu.poison), and whether every node of op ran on the GPU's own
    kernels there (the dispatch report; printed when not; True on the CPU
    or without op)."""
    opts = {"gpu.poison": True} if device == "gpu" else None
    sess = rlx.Session(rlx.Model(path), device=device, options=opts)
    out = sess.run(feeds)
    on_gpu = True
    if device == "gpu" and op:
        rep = sess.dispatch_report
        # "  op  nodes native fallback removed view"
        rows = [ln.split() for ln in rep.splitlines() if ln.split()[:1] == [op]]
        on_gpu = len(rows) == 1 and int(rows[0][2]) >= 1 and int(rows[0][3]) == 0
        if not on_gpu:
            print(rep)
    return out, on_gpu


def run(args, timeout=600):
    """Runs a program; returns (exit code, stdout, stderr)."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- PNG writer

def run_output(rlx, path, feeds, device, options=(), tmp=None, output="y", env=None):
    """`rlx run` of the model at path once on device with the arrays of
    feeds (name -> numpy array) and --option strings (env: the process's
    environment, default ours); returns (output's array, or with a list of
    names a list of arrays; its stderr) or (None, the command's output)
    when it fails."""
    import numpy as np
    out = tempfile.mkdtemp(dir=tmp)
    args = [rlx, "run", path, "--device", device, "--quiet", "--warmup", "0", "--iters", "1", "--output-dir", out]
    for name, arr in feeds.items():
        f = os.path.join(out, "in_%s.npy" % name)
        np.save(f, arr)
        args += ["--input", "%s=%s" % (name, f)]
    for o in options:
        args += ["--option", o]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    if p.returncode != 0:
        return None, p.stdout + p.stderr
    if isinstance(output, (list, tuple)):
        return [np.load(os.path.join(out, o + ".npy")) for o in output], p.stderr
    return np.load(os.path.join(out, output + ".npy")), p.stderr


def _chunk(kind, data):
    c = kind + data
    return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)


def _pack_rows(samples, depth):
    """samples: (h, w*channels) unsigned ints -> list of packed row bytes."""
    rows = []
    for r in samples:
        if depth == 16:
            rows.append(r.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(r.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            n = (len(r) + per - 1) // per
            out = np.zeros(n, dtype=np.uint8)
            for i, v in enumerate(r):
                out[i // per] |= int(v) << (8 - depth * (i % per + 1))
            rows.append(out.tobytes())
    return rows


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png_encode(samples, color_type, depth, palette=None, trns=None, interlace=False):
    """samples: (h, w, channels) array of raw sample values (palette indices
    for colour type 3). Returns the PNG file bytes (filter type 0 rows)."""
    h, w, ch = samples.shape
    raw = b""
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        sub = samples[y0::dy, x0::dx, :]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        for row in _pack_rows(sub.reshape(sub.shape[0], -1), depth):
            raw += b"\x00" + row
    out = b"\x89PNG\r\n\x1a\n"
    out += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0))
    if palette is not None:
        out += _chunk(b"PLTE", bytes(np.asarray(palette, dtype=np.uint8).reshape(-1)))
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    out += _chunk(b"IDAT", zlib.compress(raw, 6))
    out += _chunk(b"IEND", b"")
    return out


# ---------------------------------------------------------------- PNG reader

def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_decode(data):
    """Decodes a non-interlaced 8-bit PNG (gray, gray+alpha, RGB, RGBA) into
    an (h, w, channels) uint8 array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, inter = hdr
    assert depth == 8 and inter == 0 and ctype in (0, 2, 4, 6), "png_decode handles 8-bit non-interlaced only"
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = [0] * stride
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = list(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 255
        out[y] = line
        prev = line
    return out.reshape(h, w, ch)


def png_read_file(path):
    with open(path, "rb") as f:
        return png_decode(f.read())


# ---------------------------------------------------------------- expected RGB

def scale_to_8bit(v, depth):
    """Sample of `depth` bits -> 8 bits: low depths replicate bits (v * 255 /
    (2^depth - 1), exact), 16 bits round(v / 257)."""
    v = np.asarray(v, dtype=np.int64)
    if depth == 16:
        return np.floor(v / 257.0 + 0.5).astype(np.int64)
    return v * 255 // ((1 << depth) - 1)


def composite_white(rgb, alpha):
    """(c * a + 255 * (255 - a) + 127) // 255, per channel."""
    a = alpha.astype(np.int64)[..., None]
    return ((rgb.astype(np.int64) * a + 255 * (255 - a) + 127) // 255).astype(np.uint8)


# ---------------------------------------------------------------- pre-processing

PRESETS = {
    "paddleocr": dict(limit=960, limit_max=True, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    "rapidocr": dict(limit=736, limit_max=False, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
}


def target_size(h, w, limit, limit_max):
    ratio = 1.0
    if limit_max:
        if max(h, w) > limit:
            ratio = float(limit) / h if h > w else float(limit) / w
    else:
        if min(h, w) < limit:
            ratio = float(limit) / h if h < w else float(limit) / w
    rh, rw = int(h * ratio), int(w * ratio)
    rh = max(int(round(rh / 32) * 32), 32)
    rw = max(int(round(rw / 32) * 32), 32)
    return rh, rw


def _coords(n_dst, n_src):
    d = np.arange(n_dst, dtype=np.float64)
    s = (d + 0.5) * (float(n_src) / float(n_dst)) - 0.5
    i = np.floor(s)
    f = s - i
    i = i.astype(np.int64)
    neg = i < 0
    f[neg], i[neg] = 0.0, 0
    hi = i >= n_src - 1
    f[hi], i[hi] = 0.0, n_src - 1
    return i, np.minimum(i + 1, n_src - 1), f


def resize_bilinear(img, dh, dw):
    """uint8 (h, w, 3) -> uint8 (dh, dw, 3), OpenCV INTER_LINEAR mapping,
    double arithmetic, floor(v + 0.5)."""
    h, w, _ = img.shape
    y0, y1, fy = _coords(dh, h)
    x0, x1, fx = _coords(dw, w)
    p = img.astype(np.float64)
    fx = fx[None, :, None]
    fy = fy[:, None, None]
    top = (1.0 - fx) * p[y0][:, x0] + fx * p[y0][:, x1]
    bot = (1.0 - fx) * p[y1][:, x0] + fx * p[y1][:, x1]
    v = np.floor((1.0 - fy) * top + fy * bot + 0.5)
    return np.clip(v, 0, 255).astype(np.uint8)


def preprocess(rgb, preset="paddleocr", limit=None, limit_max=None):
    """uint8 RGB (h, w, 3) -> float32 [1, 3, H, W] in BGR order."""
    p = dict(PRESETS[preset])
    if limit is not None:
        p["limit"] = limit
    if limit_max is not None:
        p["limit_max"] = limit_max
    dh, dw = target_size(rgb.shape[0], rgb.shape[1], p["limit"], p["limit_max"])
    rs = resize_bilinear(rgb, dh, dw)
    bgr = rs[..., ::-1].astype(np.float32)
    mean = np.array(p["mean"], dtype=np.float64).astype(np.float32)
    std = np.array(p["std"], dtype=np.float64).astype(np.float32)
    x = (bgr * np.float32(1.0 / 255.0) - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None].astype(np.float32))


# ---------------------------------------------------------------- regions

def count_regions(p, thresh=0.3, min_area=9):
    """8-connected regions of p > thresh with at least min_area pixels."""
    m = np.asarray(p) > thresh
    h, w = m.shape
    seen = np.zeros_like(m)
    n = 0
    for y in range(h):
        for x in range(w):
            if not m[y, x] or seen[y, x]:
                continue
            area = 0
            q = deque([(y, x)])
            seen[y, x] = True
            while q:
                cy, cx = q.popleft()
                area += 1
                for dy in (-1, 0, 1):
                    for dx in (-1, 0, 1):
                        yy, xx = cy + dy, cx + dx
                        if 0 <= yy < h and 0 <= xx < w and m[yy, xx] and not seen[yy, xx]:
                            seen[yy, xx] = True
                            q.append((yy, xx))
            if area >= min_area:
                n += 1
    return n


def parse_region_count(stdout):
    for line in stdout.splitlines():
        if line.startswith("text regions: "):
            return int(line.split()[2])
    raise AssertionError("no 'text regions:' line in:\n" + stdout)


class Checker:
    """Counts failed checks; each check prints what it compared."""

    def __init__(self, name):
        self.name, self.failed, self.total = name, 0, 0

    def check(self, cond, what):
        self.total += 1
        if not cond:
            self.failed += 1
            print("FAIL: " + what, flush=True)
        return cond

    def done(self):
        print("%s: %d checks, %d failed" % (self.name, self.total, self.failed))
        sys.exit(1 if self.failed else 0)
