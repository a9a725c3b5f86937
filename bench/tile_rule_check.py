#!/usr/bin/env python3
"""Offline check of the WebGPU GEMM tile rule against measured per-node
times: reads the output of `bench/device_run.sh tiles` (bench/tile_compare.py
with the variants t64x64, t64x128, t128x64, t128x128 = gpu.gemm_tile
4x4,16x16,16 / 4x8,16x16,16 / 8x4,16x16,16 / 8x8,16x16,16), rebuilds each
node's product (M, N, K, batch items) from its printed shapes, and sums per
model the time of the tile that each rule picks: the automatic choice as
measured ("default"), the rule of src/backend/webgpu/lower_gemm.c as
written here (keep the two in step), and the best tile per node.

  python3 bench/tile_rule_check.py TILES_TXT [--batches 8,1] [--target 256] [-v]

--batches: the batch of each section in order (default: 8 for the first
third of the sections, 1 for the rest, as TILE_BATCHES="8 1" writes them).
Nodes the rule gives to other kernels (GEMV, rows <= 16, 32 x 32 tiles)
count the default's time.
"""
import argparse
import re

TILES = {"t64x64": (64, 64), "t64x128": (64, 128), "t128x64": (128, 64), "t128x128": (128, 128)}


def cdiv(a, b):
    return (a + b - 1) // b


def parse(path):
    secs, cur, names = [], None, None
    for line in open(path).read().split("\n"):
        m = re.match(r"== (\S+): per node", line)
        if m:
            cur = {"model": m.group(1), "rows": []}
            secs.append(cur)
            continue
        if cur is None:
            continue
        if line.startswith("node "):
            names = line.split()[3:]
            continue
        if line.startswith("total"):
            cur = None
            continue
        mm = re.match(r"(.{44}) (\[[^\]]*\])\s+(.*?)\s{2,}([\d. *]+)$", line)
        if not mm:
            continue
        times = [float(x) for x in re.findall(r"(\d+\.\d)", mm.group(4))]
        ins = [[int(x) for x in s.split(",")] for s in re.findall(r"\[([\d,]+)\]", mm.group(3))]
        out = [int(x) for x in mm.group(2)[1:-1].split(",")]
        cur["rows"].append({"node": mm.group(1).strip(), "out": out, "ins": ins, "t": dict(zip(names, times))})
    return secs


def product(r):
    """(M, N, K, batch items) of a Conv or MatMul node, None otherwise."""
    out, ins = r["out"], r["ins"]
    if len(out) == 4 and len(ins) >= 2 and len(ins[1]) == 4:  # Conv: y[B, Co, OH, OW], w[Co, Ci, kh, kw]
        return out[1], out[2] * out[3], ins[1][1] * ins[1][2] * ins[1][3], out[0]
    if len(out) == 3:  # [B, S, K] x [K, N]: one taller GEMM
        return out[0] * out[1], out[2], ins[0][-1], 1
    return None


def splits(M, N, K, nb, tile, target):
    """Split-K slices of lower_gemm.c's split_plan (k step 16)."""
    bm, bn = TILES[tile]
    tiles = cdiv(M, bm) * cdiv(N, bn) * nb
    if K <= 32:
        return 1
    worth = K >= 256 and (nb * M * N * K >= 1 << 21 or tiles <= 16)
    want = cdiv(3 * target // 2, tiles) if worth and tiles <= target else 1
    return max(1, min(want, K // 32, 64))


def rule(M, N, K, nb, target):
    """lower_gemm.c's automatic tile (None: another kernel or tile)."""
    if M <= 16 or not (M > 32 or N > 32):
        return None
    if M >= 128 and N >= 128 and cdiv(M, 128) * cdiv(N, 128) * nb >= 2 * target:
        return "t128x128"
    if M >= 128 and K >= 768 and cdiv(M, 128) * cdiv(N, 64) * nb * splits(M, N, K, nb, "t128x64", target) >= 3 * target // 2:
        return "t128x64"
    return "t64x64"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tiles_txt")
    ap.add_argument("--batches", default=None)
    ap.add_argument("--target", type=int, default=256, help="gpu.gemm_target_wg (default 256)")
    ap.add_argument("-v", action="store_true", help="every node whose pick differs from the default's time")
    a = ap.parse_args()
    secs = parse(a.tiles_txt)
    batches = [int(b) for b in a.batches.split(",")] if a.batches else None
    print("%-14s %5s %10s %10s %10s  (GEMM/conv nodes, us)" % ("model", "batch", "default", "rule", "best"))
    for i, s in enumerate(secs):
        b = batches[i % len(batches)] if batches else (8 if i < len(secs) // 2 else 1)
        d = n = best = 0.0
        for r in s["rows"]:
            p = product(r)
            pick = rule(*p, a.target) if p else None
            t = r["t"]
            d += t["default"]
            n += t[pick] if pick else t["default"]
            best += min(t.values())
            if a.v and pick and abs(t[pick] - t["default"]) > 0.05 * t["default"]:
                print("   %-40s M %5d N %6d K %5d x%d: %s %.1f us, default %.1f" % (r["node"][-40:], *p, pick, t[pick], t["default"]))
        print("%-14s %5d %10.0f %10.0f %10.0f" % (s["model"], b, d, n, best))


if __name__ == "__main__":
    main()
