/* The AMX-INT8 tile product shared by the int8 GEMM (cpu_qgemm.c) and the
 * int8 convolution (cpu_qconv.c); internal to the CPU backend. Only where
 * RLX_CPU_HAVE_AMX (cpu_qgemm.h), and only called once
 * rlx_cpu_qgemm_kernel_set / _get chose RLX_CPU_QGEMM_AMX (which checks the
 * CPU and asks Linux for the tile state). */
#ifndef RLX_BACKEND_CPU_CPU_AMX_H
#define RLX_BACKEND_CPU_CPU_AMX_H

#include "backend/cpu/cpu_qgemm.h"

#if RLX_CPU_HAVE_AMX
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tile configuration: palette 1, all eight tiles 16 rows x 64 bytes
 * (0-3 the accumulators, 4-5 A's two row halves, 6-7 B's two column
 * halves). */
typedef struct rlx_cpu_amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} rlx_cpu_amx_cfg;

/* Loads the configuration on the calling thread (before rlx_cpu_amx_tile;
 * a worker's task does it at its start). */
__attribute__((target("amx-tile"))) static inline void rlx_cpu_amx_begin(void) {
    static const rlx_cpu_amx_cfg cfg __attribute__((aligned(64))) = {
        .palette = 1,
        .colsb = { 64, 64, 64, 64, 64, 64, 64, 64 },
        .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
    };
    _tile_loadconfig(&cfg);
}

/* Releases the tile state (at a task's end: the thread's context stays small). */
__attribute__((target("amx-tile"))) static inline void rlx_cpu_amx_end(void) { _tile_release(); }

/* One 32 x 32 tile of raw sums t[i, j] = sum_k Au[i, k] * Bs[k, j]
 * (u8 x s8, wrapping 32-bit sums: TDPBUSD) into t (row-major, 32 int32 per
 * row), over kb blocks of 64 k. A: rows of lda bytes (row i's k values
 * contiguous, 16 rows per A tile, the second at 16 * lda); B: groups of 4
 * k for 32 columns, 128 bytes a group (columns 0-15 in its first 64 bytes),
 * 16 groups per block. rows2 / cols2: rows 16-31 / columns 16-31 wanted
 * (else those parts of t are left as they were and their operands not
 * read). */
__attribute__((target("amx-tile,amx-int8"))) static inline void rlx_cpu_amx_tile(size_t kb, const uint8_t *ap,
                                                                                  size_t lda, const int8_t *bp,
                                                                                  bool rows2, bool cols2,
                                                                                  uint32_t *t) {
    const size_t bs = 16 * 128; /* B's bytes per 64 k */
    const long sa = (long)lda;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (rows2 && cols2) {
        for (size_t b = 0; b < kb; b++, ap += 64, bp += bs) {
            _tile_loadd(4, ap, sa);
            _tile_loadd(6, bp, 128);
            _tile_loadd(7, bp + 64, 128);
            _tile_loadd(5, ap + 16 * lda, sa);
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(1, 4, 7);
            _tile_dpbusd(2, 5, 6);
            _tile_dpbusd(3, 5, 7);
        }
    } else if (cols2) {
        for (size_t b = 0; b < kb; b++, ap += 64, bp += bs) {
            _tile_loadd(4, ap, sa);
            _tile_loadd(6, bp, 128);
            _tile_loadd(7, bp + 64, 128);
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(1, 4, 7);
        }
    } else if (rows2) {
        for (size_t b = 0; b < kb; b++, ap += 64, bp += bs) {
            _tile_loadd(4, ap, sa);
            _tile_loadd(6, bp, 128);
            _tile_loadd(5, ap + 16 * lda, sa);
            _tile_dpbusd(0, 4, 6);
            _tile_dpbusd(2, 5, 6);
        }
    } else {
        for (size_t b = 0; b < kb; b++, ap += 64, bp += bs) {
            _tile_loadd(4, ap, sa);
            _tile_loadd(6, bp, 128);
            _tile_dpbusd(0, 4, 6);
        }
    }
    const long ts = 32 * sizeof(uint32_t);
    _tile_stored(0, t, ts);
    if (cols2) _tile_stored(1, t + 16, ts);
    if (rows2) _tile_stored(2, t + 16 * 32, ts);
    if (rows2 && cols2) _tile_stored(3, t + 16 * 32 + 16, ts);
}
#endif

#endif
