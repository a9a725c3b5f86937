#!/usr/bin/env python3
"""Runs bench/dawn_probe's final-webgpu.h path on the Dawn inside the
`wgpudawn` wheel (PyPI; Dawn linked into a CFFI module, so its entry points
are reachable only through Python): adapters, limits, features by name,
subgroup-matrix configurations, and the checked shaders, subgroupMatrixMultiply
included where the adapter offers it (docs/dawn.md).

    python3 bench/dawn_probe.py [--lib build/libdawn_probe.so]

Needs `pip install cffi wgpudawn-*.whl` (wgpudawn 0.32.0.4 was tried) and
libdawn_probe.so (CMake target dawn_probe_lib). Exit status: the probe's (0:
the f32 add was right; 1: it was not, or no adapter; 2: an entry point is
missing), 3 when wgpudawn or the library cannot be loaded."""
import argparse
import ctypes
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default="build/libdawn_probe.so", help="libdawn_probe.so (CMake target dawn_probe_lib)")
    args = ap.parse_args()
    try:
        from wgpudawn._lib._wgpu_dawn import ffi, lib
    except ImportError as e:
        print(f"dawn_probe.py: cannot import wgpudawn's Dawn module: {e}", file=sys.stderr)
        return 3
    try:
        probe = ctypes.CDLL(args.lib)
    except OSError as e:
        print(f"dawn_probe.py: cannot load {args.lib}: {e}", file=sys.stderr)
        return 3
    sym_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)

    def sym(name):
        try:
            return int(ffi.cast("uintptr_t", ffi.addressof(lib, name.decode())))
        except Exception:  # noqa: BLE001 - cffi raises AttributeError or ffi.error for unknown names
            return None

    callback = sym_type(sym)
    probe.dawn_probe_run.argtypes = [sym_type]
    probe.dawn_probe_run.restype = ctypes.c_int
    import wgpudawn
    print(f"dawn_probe.py: wgpudawn {getattr(wgpudawn, '__version__', '?')} from {wgpudawn.__file__}", flush=True)
    return probe.dawn_probe_run(callback)


if __name__ == "__main__":
    sys.exit(main())
