#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/,
docs/ROBUSTNESS.md "Fuzzing") into OUT/<harness>/, one file per seed named by
its sha1 (so reruns and duplicates collapse). Standard library only.

  onnx       the ONNX backend test models (third_party/onnx/backend-test-data,
             every model.onnx up to --max-bytes)
  tensor_pb  their test_data_set_*/*.pb TensorProto files (up to --max-bytes)
  npy        .npy files written here: every dtype the reader knows, format
             versions 1.0/2.0/3.0, ranks 0-3, empty dims, and a few broken ones
             (bad magic, truncated header or data, Fortran order, big-endian,
             unknown dtype, trailing bytes)

Every harness also gets tests/fuzz/regress/<harness>/ (the findings, kept
as regression inputs).

  scripts/fuzz_seeds.py OUT [--max-bytes N] [--limit N]
"""
import argparse
import hashlib
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(ROOT, "third_party", "onnx", "backend-test-data")
REGRESS = os.path.join(ROOT, "tests", "fuzz", "regress")


def put(out, harness, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def npy_bytes(descr, shape, payload, version=1, fortran=False, magic=b"\x93NUMPY"):
    shape_s = "(" + "".join("%d, " % d for d in shape)[:-2] + ("," if len(shape) == 1 else "") + ")"
    hdr = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_s)
    pre = 10 if version == 1 else 12
    hdr += " " * ((64 - (pre + len(hdr) + 1) % 64) % 64) + "\n"
    h = hdr.encode("latin1")
    size = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return magic + bytes([version, 0]) + size + h + payload


def npy_seeds(out):
    sizes = {"f4": 4, "f2": 2, "f8": 8, "i1": 1, "i2": 2, "i4": 4, "i8": 8,
             "u1": 1, "u2": 2, "u4": 4, "u8": 8, "b1": 1}
    shapes = [(), (0,), (3,), (2, 3), (1, 2, 2), (2, 0, 3)]
    for code, es in sizes.items():
        for shape in shapes:
            n = 1
            for d in shape:
                n *= d
            payload = bytes((i * 37 + 1) & (1 if code == "b1" else 0xFF) for i in range(n * es))
            endian = "|" if es == 1 else "<"
            for v in (1, 2, 3):
                put(out, "npy", npy_bytes(endian + code, shape, payload, version=v))
    good = npy_bytes("<f4", (2, 2), bytes(16))
    put(out, "npy", b"\x93NUMPX" + good[6:])                  # bad magic
    put(out, "npy", good[:9])                                 # truncated header size
    put(out, "npy", good[:40])                                # truncated header
    put(out, "npy", good[:-3])                                # truncated data
    put(out, "npy", good + b"\0\0\0\0")                       # trailing bytes
    put(out, "npy", npy_bytes("<f4", (2, 2), bytes(16), fortran=True))
    put(out, "npy", npy_bytes(">f4", (2, 2), bytes(16)))
    put(out, "npy", npy_bytes("<c8", (2,), bytes(16)))
    put(out, "npy", npy_bytes("<f4", (2, 2), bytes(16), version=4))
    put(out, "npy", npy_bytes("<f4", (1 << 40, 1 << 30), b""))  # size overflows
    # strings: bytes ('S'), UTF-32 ('U', both byte orders), bytes that are
    # no UTF-8 (written back as 'S'), NUL padding, Fortran order
    put(out, "npy", npy_bytes("|S3", (2, 2), b"ab\0cde\xff \0x\0\0"))
    put(out, "npy", npy_bytes("|S2", (3,), b"hi\xff\x20 \n", fortran=True))
    u = "".join(["a\0", "\u00e9z", "\U0001f600\0"]).encode("utf-32-le")
    put(out, "npy", npy_bytes("<U2", (3,), u))
    put(out, "npy", npy_bytes(">U2", (3,), "".join(["a\0", "\u00e9z", "xy"]).encode("utf-32-be")))
    put(out, "npy", npy_bytes("<U1", (2, 2), "abcd".encode("utf-32-le"), fortran=True))


def testdata_seeds(out, max_bytes, limit):
    n_model = n_pb = 0
    for dirpath, dirnames, filenames in sorted(os.walk(TESTDATA)):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            if os.path.getsize(p) > max_bytes:
                continue
            if fn == "model.onnx" and n_model < limit:
                put(out, "onnx", open(p, "rb").read())
                n_model += 1
            elif fn.endswith(".pb") and n_pb < limit:
                put(out, "tensor_pb", open(p, "rb").read())
                n_pb += 1
    return n_model, n_pb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--max-bytes", type=int, default=32768, help="largest test-data file taken (default 32768)")
    ap.add_argument("--limit", type=int, default=100000, help="at most this many models and .pb files")
    a = ap.parse_args()
    npy_seeds(a.out)
    if os.path.isdir(TESTDATA):
        n_model, n_pb = testdata_seeds(a.out, a.max_bytes, a.limit)
    else:
        n_model = n_pb = 0
        print("fuzz_seeds: %s is missing (scripts/setup.sh): onnx and tensor_pb get only the regression inputs"
              % TESTDATA, file=sys.stderr)
    for h in ("onnx", "npy", "tensor_pb"):
        d = os.path.join(REGRESS, h)
        for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if not fn.startswith("."):
                put(a.out, h, open(os.path.join(d, fn), "rb").read())
    counts = {h: len(os.listdir(os.path.join(a.out, h))) if os.path.isdir(os.path.join(a.out, h)) else 0
              for h in ("onnx", "npy", "tensor_pb")}
    print("fuzz_seeds: %s (from %d models, %d .pb files)" %
          (", ".join("%s %d" % kv for kv in counts.items()), n_model, n_pb))


if __name__ == "__main__":
    main()
