/* f32 GEMM: rlx's own packed micro-kernel, split over the worker pool (see
 * cpu_sgemm.h for the contract and why it is not OpenBLAS's). */
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_qconv.h"
#include "backend/cpu/cpu_qgemm.h"

#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/options.h"
#include "base/parallel.h"
#include "base/scratch.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define SGEMM_HAVE_AVX2 1
#include <immintrin.h>
#else
#define SGEMM_HAVE_AVX2 0
#endif

/* 0: not decided yet; 1 + policy once decided */
static atomic_int g_policy;

/* Decides the policy once (racing first callers agree on the value). */
static rlx_cpu_gemm_policy decide(rlx_cpu_gemm_policy pol) {
    int expect = 0;
    if (atomic_compare_exchange_strong_explicit(&g_policy, &expect, (int)pol + 1, memory_order_acq_rel,
                                                memory_order_acquire))
        return pol;
    return (rlx_cpu_gemm_policy)(expect - 1);
}

rlx_cpu_gemm_policy rlx_cpu_gemm_policy_get(void) {
    int p = atomic_load_explicit(&g_policy, memory_order_acquire);
    if (p) return (rlx_cpu_gemm_policy)(p - 1);
    const char *env = rlx_config_env_enum("cpu.gemm", "pool");
    return decide(strcmp(env, "blas") == 0 ? RLX_CPU_GEMM_BLAS : RLX_CPU_GEMM_POOL);
}

rlx_status rlx_cpu_gemm_policy_set(rlx_cpu_gemm_policy pol) {
    rlx_cpu_gemm_policy now = decide(pol);
    if (now == pol) return RLX_OK;
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                    "cpu.gemm=%s: the CPU GEMM policy is per process and already '%s' (by an earlier session or "
                    "RLX_CPU_GEMM)",
                    pol == RLX_CPU_GEMM_BLAS ? "blas" : "pool", now == RLX_CPU_GEMM_BLAS ? "blas" : "pool");
}

/* ------------------------------------------------------------ micro-kernels */

/* Register tiles (rows x columns of C) of the kernels: 6 x 16 (portable,
 * AVX2) and for AVX-512 8 x 32 (default), 8 x 48, 12 x 32 or 14 x 32
 * (RLX_CPU_SGEMM_TILE); MR_MAX x NR_MAX bounds them. The blocks: KC
 * steps of k per packed panel, about MC rows of A per packed block (a
 * multiple of the tile's rows, in L2), NC columns of B per packed block (a
 * multiple of the tile's columns). Only KC changes the arithmetic (where
 * the k sum is cut); it depends on k alone. */
#define MR6 6
#define NR16 16
#define MR8 8
#define NR32 32
#define MR_MAX 14
#define NR_MAX 48
#define KC RLX_CPU_SGEMM_KC
#define MC 128
#define NC 2048

/* How a tile's sum over one KC panel (acc) lands in C: */
enum {
    UPD_SET = 0,  /* first panel, beta == 0: c = alpha * acc (c not read) */
    UPD_BETA = 1, /* first panel: c = beta * c + alpha * acc */
    UPD_ACC = 2   /* later panels: c = c + alpha * acc */
};

/* C tile [mr, nr] (row stride ldc) from packed panels: ap holds kc steps of
 * mr values of A, bp kc steps of nr values of B; every element's sum starts
 * at 0 and takes its kc products in order. */
typedef void sgemm_kernel_fn(size_t kc, const float *ap, const float *bp, float *c, size_t ldc, float alpha,
                             float beta, int upd);

/* The same with A's rows in place (row i at a + i * lda, k steps
 * contiguous) instead of a packed micro-panel: the same operations, so the
 * same bits. */
typedef void sgemm_rows_fn(size_t kc, const float *a, size_t lda, const float *bp, float *c, size_t ldc, float alpha,
                           float beta, int upd);

/* A kernel: its full tile (mr x nr), and a narrow one (mr x nr_narrow, the
 * same operations lane for lane, so the same bits) for edge tiles of at
 * most nr_narrow columns, or NULL; rows / rows_narrow: the same reading A
 * in place, or NULL. */
typedef struct sgemm_kernel {
    sgemm_kernel_fn *full, *narrow;
    size_t mr, nr, nr_narrow;
    sgemm_rows_fn *rows, *rows_narrow;
} sgemm_kernel;

/* The portable kernel: multiply then add (no fused multiply-add). */
static void kern_portable(size_t kc, const float *ap, const float *bp, float *c, size_t ldc, float alpha, float beta,
                          int upd) {
    float acc[MR6][NR16];
    memset(acc, 0, sizeof acc);
    for (size_t p = 0; p < kc; p++, ap += MR6, bp += NR16)
        for (int i = 0; i < MR6; i++) {
            float a = ap[i];
            for (int j = 0; j < NR16; j++) acc[i][j] += a * bp[j];
        }
    for (int i = 0; i < MR6; i++) {
        float *row = c + (size_t)i * ldc;
        for (int j = 0; j < NR16; j++) {
            float t = alpha * acc[i][j];
            row[j] = upd == UPD_SET ? t : upd == UPD_BETA ? beta * row[j] + t : row[j] + t;
        }
    }
}

#if SGEMM_HAVE_AVX2
/* AVX2 + FMA: a 6 x 16 tile, 12 accumulators of 8 lanes. */
#define SK_SFX avx2
#define SK_ATTR __attribute__((target("avx2,fma")))
#define RLX_VBITS 256
#define SK_MR MR6
#define SK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#include "backend/cpu/cpu_sgemm_kern.h"
/* AVX-512F: an 8 x 32 tile, 16 accumulators of 16 lanes, 2 loads of B and
 * 8 broadcasts of A per 16 fused multiply-adds. */
#define SK_SFX avx512
#define SK_ATTR __attribute__((target("avx512f")))
#define RLX_VBITS 512
#define SK_MR MR8
#define SK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#include "backend/cpu/cpu_sgemm_kern.h"
/* The larger AVX-512 tiles (rlx_cpu_sgemm_avx512_tile_set): 24 to 28
 * accumulators, fewer loads per fused multiply-add (8 x 48: 3 loads of B
 * and 8 broadcasts per 24; 12 x 32: 2 and 12 per 24; 14 x 32: 2 and 14
 * per 28, against 2 and 8 per 16 for 8 x 32). */
#define SK_SFX avx512_8x48
#define SK_ATTR __attribute__((target("avx512f")))
#define RLX_VBITS 512
#define SK_MR MR8
#define SK_NV 3
#define SK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#include "backend/cpu/cpu_sgemm_kern.h"
#define SK_SFX avx512_12x32
#define SK_ATTR __attribute__((target("avx512f")))
#define RLX_VBITS 512
#define SK_MR 12
#define SK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#include "backend/cpu/cpu_sgemm_kern.h"
#define SK_SFX avx512_14x32
#define SK_ATTR __attribute__((target("avx512f")))
#define RLX_VBITS 512
#define SK_MR 14
#define SK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#include "backend/cpu/cpu_sgemm_kern.h"
/* The one-row products (gemv_row) of the AVX2 and AVX-512 kernels. */
#define GV_SFX avx2
#define GV_ATTR __attribute__((target("avx2,fma")))
#define RLX_VBITS 256
#include "backend/cpu/cpu_sgemm_gemv.h"
#define GV_SFX avx512
#define GV_ATTR __attribute__((target("avx512f")))
#define RLX_VBITS 512
#include "backend/cpu/cpu_sgemm_gemv.h"

/* One vector of C (16 columns, `rows` of them real) of a one-row product
 * with an unpacked transposed B over kc steps: column j's values are row
 * j of b (b + j * ldb + p). Each 16 x 16 block of B (16 rows, 16 steps)
 * is transposed in registers into one vector per step, and the column's
 * sum is the same chain of fused multiply-adds in k order as gemv1's, so
 * the same bits. Rows past `rows` are not read (zeros); c holds 16
 * floats (the caller's tmp past n). */
/* how far ahead each of the 16 rows is prefetched, in floats (512 B: the
 * best of 0 / 128 / 256 / 1024 on the dev VM) */
#define GT_PF 128
__attribute__((target("avx512f"))) static void gemv_t16_avx512(size_t kc, const float *a, const float *b, size_t ldb,
                                                               size_t rows, float *c, float alpha, float beta,
                                                               int upd) {
    __m512 acc = _mm512_setzero_ps();
    size_t kc16 = kc / 16 * 16;
    for (size_t p = 0; p < kc16; p += 16) {
        __m512 r[16], u[16];
        for (size_t i = 0; i < 16; i++) r[i] = i < rows ? _mm512_loadu_ps(b + i * ldb + p) : _mm512_setzero_ps();
        for (size_t i = 0; i < rows; i++) _mm_prefetch((const char *)(b + i * ldb + p + GT_PF), _MM_HINT_T0);
        /* rows in pairs, then in fours: u[4 g + m]'s 128-bit lane L holds
         * rows 4g .. 4g + 3 at step 4L + m */
        for (size_t i = 0; i < 16; i += 2) {
            u[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
            u[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
        }
        for (size_t g = 0; g < 16; g += 4) {
            __m512d lo0 = _mm512_castps_pd(u[g]), hi0 = _mm512_castps_pd(u[g + 1]);
            __m512d lo1 = _mm512_castps_pd(u[g + 2]), hi1 = _mm512_castps_pd(u[g + 3]);
            r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
            r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
            r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
            r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
        }
        /* lanes across the groups: step 4L + m is lane L of r[m], r[4 + m],
         * r[8 + m], r[12 + m] */
        __m512 t[16];
        for (size_t m = 0; m < 4; m++) {
            __m512 c0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88), c1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
            __m512 c2 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
            __m512 c3 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
            t[m] = _mm512_shuffle_f32x4(c0, c2, 0x88);
            t[8 + m] = _mm512_shuffle_f32x4(c0, c2, 0xDD);
            t[4 + m] = _mm512_shuffle_f32x4(c1, c3, 0x88);
            t[12 + m] = _mm512_shuffle_f32x4(c1, c3, 0xDD);
        }
        for (size_t k = 0; k < 16; k++) acc = _mm512_fmadd_ps(_mm512_set1_ps(a[p + k]), t[k], acc);
    }
    for (size_t p = kc16; p < kc; p++) {
        _Alignas(64) float col[16] = { 0 };
        for (size_t i = 0; i < rows; i++) col[i] = b[i * ldb + p];
        acc = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), _mm512_load_ps(col), acc);
    }
    gv_upd_avx512(c, acc, alpha, beta, upd);
}
#endif

/* The kernels, indexed by rlx_cpu_sgemm_kernel; the one of this process is
 * chosen once from what the CPU runs. */
static const sgemm_kernel g_kernels[3] = {
    { kern_portable, NULL, MR6, NR16, 0, NULL, NULL },
#if SGEMM_HAVE_AVX2
    { kern_avx2, kern_half_avx2, MR6, NR16, 8, kern_rows_avx2, kern_rows_half_avx2 },
    { kern_avx512, kern_half_avx512, MR8, NR32, 16, kern_rows_avx512, kern_rows_half_avx512 },
#else
    { NULL, NULL, MR6, NR16, 0, NULL, NULL },
    { NULL, NULL, MR8, NR32, 0, NULL, NULL },
#endif
};
static atomic_int g_kernel = -1;

/* The AVX-512 tiles, indexed by rlx_cpu_sgemm_avx512_tile (entry 0 is
 * g_kernels[RLX_CPU_SGEMM_AVX512]). */
static const char *const g_tile_names[RLX_CPU_SGEMM_TILE_COUNT] = { "8x32", "8x48", "12x32", "14x32" };
/* The tiles option cpu.sgemm_tile offers: those of 8 rows, whose packed
 * weights (panels of 8 rows) the pointwise and implicit-GEMM convolutions
 * read as well; 12 x 32 and 14 x 32 are for benchmarks and tests only
 * (with them those paths would pack the weights again per run). */
#define TILE_OPTIONS 2
#if SGEMM_HAVE_AVX2
static const sgemm_kernel g_avx512_tiles[RLX_CPU_SGEMM_TILE_COUNT] = {
    { kern_avx512, kern_half_avx512, MR8, NR32, 16, kern_rows_avx512, kern_rows_half_avx512 },
    { kern_avx512_8x48, kern_half_avx512_8x48, MR8, 48, 16, kern_rows_avx512_8x48, kern_rows_half_avx512_8x48 },
    { kern_avx512_12x32, kern_half_avx512_12x32, 12, NR32, 16, kern_rows_avx512_12x32, kern_rows_half_avx512_12x32 },
    { kern_avx512_14x32, kern_half_avx512_14x32, 14, NR32, 16, kern_rows_avx512_14x32, kern_rows_half_avx512_14x32 },
};
#endif
/* -1: not read yet (RLX_CPU_SGEMM_TILE at the first use) */
static atomic_int g_tile = -1;

/* The index of the option's tile `name`, -1 for another name. */
static int tile_of_name(const char *name) {
    for (int i = 0; i < TILE_OPTIONS; i++)
        if (strcmp(name, g_tile_names[i]) == 0) return i;
    return -1;
}

static int tile_index(void) {
    int t = atomic_load_explicit(&g_tile, memory_order_relaxed);
    if (t < 0) {
        t = tile_of_name(rlx_config_env_enum("cpu.sgemm_tile", "8x32"));
        if (t < 0) t = 0;
        atomic_store_explicit(&g_tile, t, memory_order_relaxed);
    }
    return t;
}

/* The kernel of index k (an rlx_cpu_sgemm_kernel), AVX-512 with its tile. */
static const sgemm_kernel *kernel_of(int k) {
#if SGEMM_HAVE_AVX2
    if (k == RLX_CPU_SGEMM_AVX512) return &g_avx512_tiles[tile_index()];
#endif
    return &g_kernels[k];
}

rlx_cpu_sgemm_avx512_tile rlx_cpu_sgemm_avx512_tile_get(void) { return (rlx_cpu_sgemm_avx512_tile)tile_index(); }

const char *rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile t) {
    return (int)t >= 0 && (int)t < RLX_CPU_SGEMM_TILE_COUNT ? g_tile_names[t] : "?";
}

bool rlx_cpu_sgemm_avx512_tile_set(rlx_cpu_sgemm_avx512_tile t) {
    if ((int)t < 0 || (int)t >= RLX_CPU_SGEMM_TILE_COUNT || !SGEMM_HAVE_AVX2) return false;
    atomic_store_explicit(&g_tile, (int)t, memory_order_relaxed);
    return true;
}

/* Whether a session fixed the tile (a later one may not change it: its
 * GEMMs could be running, with packs of the tile in use). */
static atomic_bool g_tile_fixed;

rlx_status rlx_cpu_sgemm_avx512_tile_choose(const char *name) {
    if (!name) { /* not given: the process's tile, fixed from now on */
        bool was = false;
        atomic_compare_exchange_strong(&g_tile_fixed, &was, true);
        return RLX_OK;
    }
    int t = tile_of_name(name);
    if (t < 0) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "cpu.sgemm_tile=%s: not a tile (8x32, 8x48)", name);
    bool was = false;
    if (atomic_compare_exchange_strong(&g_tile_fixed, &was, true)) {
        atomic_store_explicit(&g_tile, t, memory_order_relaxed);
        return RLX_OK;
    }
    int now = tile_index();
    if (now == t) return RLX_OK;
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                    "cpu.sgemm_tile=%s: the AVX-512 GEMM tile is per process and already '%s' (by an earlier session "
                    "or RLX_CPU_SGEMM_TILE)",
                    name, g_tile_names[now]);
}

/* Whether this CPU (and the OS, which must save the wider registers: GCC's
 * __builtin_cpu_supports checks XCR0 too) runs the kernel. */
static bool cpu_runs(rlx_cpu_sgemm_kernel k) {
    if (k == RLX_CPU_SGEMM_PORTABLE) return true;
#if SGEMM_HAVE_AVX2
    __builtin_cpu_init();
    if (k == RLX_CPU_SGEMM_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (k == RLX_CPU_SGEMM_AVX512) return __builtin_cpu_supports("avx512f");
#endif
    return false;
}

static const sgemm_kernel *kernel_get(void) {
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k < 0) {
        k = cpu_runs(RLX_CPU_SGEMM_AVX512) ? RLX_CPU_SGEMM_AVX512
            : cpu_runs(RLX_CPU_SGEMM_AVX2) ? RLX_CPU_SGEMM_AVX2
                                           : RLX_CPU_SGEMM_PORTABLE;
        atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    }
    return kernel_of(k);
}

rlx_cpu_sgemm_kernel rlx_cpu_sgemm_kernel_get(void) {
    (void)kernel_get();
    return (rlx_cpu_sgemm_kernel)atomic_load_explicit(&g_kernel, memory_order_relaxed);
}

bool rlx_cpu_sgemm_kernel_set(rlx_cpu_sgemm_kernel kernel) {
    if ((int)kernel < 0 || (int)kernel > RLX_CPU_SGEMM_AVX512 || !cpu_runs(kernel)) return false;
    atomic_store_explicit(&g_kernel, (int)kernel, memory_order_relaxed);
    return true;
}

/* ------------------------------------------------------------ packing */

/* One micro-panel of w lanes (rows of A or columns of B) over kc steps of
 * k: dst[p * w + l] = src[l * ls + p * ps] for the first `lanes` lanes,
 * zeros after. */
#if SGEMM_HAVE_AVX2
/* pack_panel's contiguous case for whole panels of 32 lanes (the AVX-512
 * kernel's B): two vector copies per step in place of a memcpy call. */
__attribute__((target("avx512f"))) static void pack_rows32_avx512(const float *src, size_t ps, size_t kc,
                                                                  float *dst) {
    for (size_t p = 0; p < kc; p++, dst += 32) {
        const float *s = src + p * ps;
        _mm512_storeu_ps(dst, _mm512_loadu_ps(s));
        _mm512_storeu_ps(dst + 16, _mm512_loadu_ps(s + 16));
    }
}
#endif

#if SGEMM_HAVE_AVX2
/* pack_panel's transposing case (steps contiguous: ps 1, so the rows of A
 * or a transposed B's rows) for whole panels of w lanes, w a multiple of 8:
 * 8 x 8 blocks (8 lanes x 8 steps) transposed in registers, the last kc % 8
 * steps one by one. Pure data movement: the same panel as the scalar loop. */
__attribute__((target("avx2"))) static void pack_cols8_avx2(const float *src, size_t ls, size_t w, size_t kc,
                                                           float *dst) {
    size_t kc8 = kc / 8 * 8;
    for (size_t l0 = 0; l0 < w; l0 += 8) {
        const float *r = src + l0 * ls;
        for (size_t p = 0; p < kc8; p += 8) {
            __m256 x0 = _mm256_loadu_ps(r + p), x1 = _mm256_loadu_ps(r + ls + p);
            __m256 x2 = _mm256_loadu_ps(r + 2 * ls + p), x3 = _mm256_loadu_ps(r + 3 * ls + p);
            __m256 x4 = _mm256_loadu_ps(r + 4 * ls + p), x5 = _mm256_loadu_ps(r + 5 * ls + p);
            __m256 x6 = _mm256_loadu_ps(r + 6 * ls + p), x7 = _mm256_loadu_ps(r + 7 * ls + p);
            __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
            __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
            __m256 t4 = _mm256_unpacklo_ps(x4, x5), t5 = _mm256_unpackhi_ps(x4, x5);
            __m256 t6 = _mm256_unpacklo_ps(x6, x7), t7 = _mm256_unpackhi_ps(x6, x7);
            __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *d = dst + p * w + l0;
            _mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
            _mm256_storeu_ps(d + w, _mm256_permute2f128_ps(s1, s5, 0x20));
            _mm256_storeu_ps(d + 2 * w, _mm256_permute2f128_ps(s2, s6, 0x20));
            _mm256_storeu_ps(d + 3 * w, _mm256_permute2f128_ps(s3, s7, 0x20));
            _mm256_storeu_ps(d + 4 * w, _mm256_permute2f128_ps(s0, s4, 0x31));
            _mm256_storeu_ps(d + 5 * w, _mm256_permute2f128_ps(s1, s5, 0x31));
            _mm256_storeu_ps(d + 6 * w, _mm256_permute2f128_ps(s2, s6, 0x31));
            _mm256_storeu_ps(d + 7 * w, _mm256_permute2f128_ps(s3, s7, 0x31));
        }
        for (size_t p = kc8; p < kc; p++)
            for (size_t l = 0; l < 8; l++) dst[p * w + l0 + l] = r[l * ls + p];
    }
}

static bool has_avx2(void) {
    static atomic_int known; /* 0: not asked yet; 1: no; 2: yes */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (!v) {
        v = __builtin_cpu_supports("avx2") ? 2 : 1;
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v == 2;
}
#endif

static void pack_panel(const float *src, size_t ls, size_t ps, size_t lanes, size_t w, size_t kc, float *dst) {
#if SGEMM_HAVE_AVX2
    /* (w 32 only with the AVX-512 kernel, so only on CPUs that run it) */
    if (ls == 1 && lanes == 32 && w == 32) {
        pack_rows32_avx512(src, ps, kc, dst);
        return;
    }
    if (ps == 1 && lanes == w && w % 8 == 0 && kc >= 8 && has_avx2()) {
        pack_cols8_avx2(src, ls, w, kc, dst);
        return;
    }
#endif
    if (ls == 1) { /* lanes contiguous: one copy per step */
        for (size_t p = 0; p < kc; p++, dst += w) {
            memcpy(dst, src + p * ps, lanes * sizeof *dst);
            memset(dst + lanes, 0, (w - lanes) * sizeof *dst);
        }
    } else if (lanes == w && ps == 1 && w <= MR_MAX) { /* rows read side by side, written in order */
        const float *row[MR_MAX];
        for (size_t l = 0; l < w; l++) row[l] = src + l * ls;
        for (size_t p = 0; p < kc; p++, dst += w)
            for (size_t l = 0; l < w; l++) dst[l] = row[l][p];
    } else {
        for (size_t l = 0; l < w; l++)
            for (size_t p = 0; p < kc; p++) dst[p * w + l] = l < lanes ? src[l * ls + p * ps] : 0.0f;
    }
}

/* Rows [i0, i0 + mc) of op(A) (mc a multiple of mr), k steps [p0, p0 + kc),
 * as micro-panels of mr rows: dst[(r * kc + p) * mr + i]; rows past m are
 * zeros. */
static void pack_a(bool ta, const float *a, size_t lda, size_t m, size_t i0, size_t mc, size_t p0, size_t kc,
                   size_t mr, float *dst) {
    for (size_t i = i0; i < i0 + mc; i += mr, dst += kc * mr)
        pack_panel(ta ? a + p0 * lda + i : a + i * lda + p0, ta ? 1 : lda, ta ? lda : 1, m - i < mr ? m - i : mr, mr,
                   kc, dst);
}

/* Columns [j0, j0 + nc) of op(B) (nc a multiple of nr), k steps
 * [p0, p0 + kc), as micro-panels of nr columns: dst[(s * kc + p) * nr + j];
 * columns past n are zeros. */
static void pack_b(bool tb, const float *b, size_t ldb, size_t n, size_t j0, size_t nc, size_t p0, size_t kc,
                   size_t nr, float *dst) {
    for (size_t j = j0; j < j0 + nc; j += nr, dst += kc * nr)
        pack_panel(tb ? b + j * ldb + p0 : b + p0 * ldb + j, tb ? ldb : 1, tb ? 1 : ldb, n - j < nr ? n - j : nr, nr,
                   kc, dst);
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ------------------------------------------------------------ operands packed once */

/* Layout of a pack (w = mr for A, nr for B; L = lanes rounded up to w):
 * per group, per block of KC steps q (kc_q steps, the last one short),
 * the micro-panels of w lanes in order, each kc_q x w floats; so panel s
 * of block q of group g starts at g * L * k + q * KC * L + s * kc_q * w. */
static const float *pack_at(const rlx_cpu_sgemm_pack *pk, size_t group, size_t p0, size_t first) {
    size_t lanes = round_up(pk->lanes, pk->w), kc = min_sz(KC, pk->k - p0);
    return pk->data + group * lanes * pk->k + p0 * lanes + first / pk->w * kc * pk->w;
}

static rlx_status pack_new(bool is_b, bool t, size_t groups, size_t lanes, size_t k, const float *x, size_t ld,
                           size_t gstride, rlx_cpu_sgemm_pack *out) {
    memset(out, 0, sizeof *out);
    const sgemm_kernel *kd = kernel_get();
    size_t w = is_b ? kd->nr : kd->mr, padded = round_up(lanes, w), total;
    if (!rlx_mul_ok(padded, k, &total) || !rlx_mul_ok(total, groups, &total) || total > SIZE_MAX / 8)
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "packed GEMM operand of %zu x %zu x %zu floats too large", groups,
                        lanes, k);
    float *d = aligned_alloc(64, round_up(total * sizeof(float) + 1, 64));
    if (!d) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (packed GEMM operand of %zu floats)", total);
    out->data = d;
    out->kernel = (int)rlx_cpu_sgemm_kernel_get();
    out->is_b = is_b;
    out->groups = groups, out->lanes = lanes, out->k = k, out->w = w;
    for (size_t g = 0; g < groups; g++)
        for (size_t p0 = 0; p0 < k; p0 += KC) {
            float *dst = (float *)pack_at(out, g, p0, 0);
            if (is_b) pack_b(t, x + g * gstride, ld, lanes, 0, padded, p0, min_sz(KC, k - p0), w, dst);
            else pack_a(t, x + g * gstride, ld, lanes, 0, padded, p0, min_sz(KC, k - p0), w, dst);
        }
    return RLX_OK;
}

rlx_status rlx_cpu_sgemm_pack_a(bool ta, size_t groups, size_t m, size_t k, const float *a, size_t lda,
                                size_t gstride, rlx_cpu_sgemm_pack *out) {
    return pack_new(false, ta, groups, m, k, a, lda, gstride, out);
}

rlx_status rlx_cpu_sgemm_pack_b(bool tb, size_t k, size_t n, const float *b, size_t ldb, rlx_cpu_sgemm_pack *out) {
    return pack_new(true, tb, 1, n, k, b, ldb, 0, out);
}

bool rlx_cpu_sgemm_pack_holds(const rlx_cpu_sgemm_pack *pk) {
    return pk->data || pk->q8 || pk->q8conv || pk->wt || pk->rnn_r || pk->rnn_w || pk->wino || pk->ew;
}

void rlx_cpu_sgemm_pack_free(rlx_cpu_sgemm_pack *pk) {
    if (!pk) return;
    free(pk->data);
    free(pk->wt);
    free(pk->rnn_r);
    free(pk->rnn_w);
    free(pk->wino);
    free(pk->ew);
    if (pk->q8) rlx_cpu_qgemm_pack_free(pk->q8);
    free(pk->q8);
    if (pk->q8conv) rlx_cpu_qconv_pack_free(pk->q8conv);
    free(pk->q8conv);
    memset(pk, 0, sizeof *pk);
}

const float *rlx_cpu_sgemm_pack_a_panel(const rlx_cpu_sgemm_pack *pk, size_t group, size_t first) {
    if (!pk || !pk->data || pk->is_b || pk->kernel != (int)rlx_cpu_sgemm_kernel_get() || pk->k > KC ||
        group >= pk->groups || first % pk->w || first >= pk->lanes)
        return NULL;
    return pack_at(pk, group, 0, first);
}

const float *rlx_cpu_sgemm_pack_a_block(const rlx_cpu_sgemm_pack *pk, size_t group, size_t p0, size_t first) {
    if (!pk || !pk->data || pk->is_b || pk->kernel != (int)rlx_cpu_sgemm_kernel_get() || group >= pk->groups ||
        first % pk->w || first >= pk->lanes || p0 % KC || p0 >= pk->k)
        return NULL;
    return pack_at(pk, group, p0, first);
}

/* The pack of a reference when it serves a product of `lanes` lanes from
 * `first` over k steps with this kernel, else NULL (the caller packs). */
static const rlx_cpu_sgemm_packref *ref_usable(const rlx_cpu_sgemm_packref *r, const sgemm_kernel *kd,
                                               size_t lanes, size_t k, bool is_b) {
    if (!r || !r->pack || !r->pack->data || r->pack->is_b != is_b || kernel_of(r->pack->kernel) != kd) return NULL;
    const rlx_cpu_sgemm_pack *pk = r->pack;
    if (pk->w != (is_b ? kd->nr : kd->mr)) return NULL; /* packed for another AVX-512 tile */
    if (pk->k != k || r->group >= pk->groups || r->first % pk->w || r->first + lanes > pk->lanes) return NULL;
    return r;
}

/* ------------------------------------------------------------ driver */

/* One tile of mr x nr (at most the kernel's) of C: in place when whole,
 * else through a whole tile on the stack, so that edge elements take the
 * same arithmetic as the others (the narrow kernel when it is wide
 * enough: the same operations lane for lane). A is the packed micro-panel
 * ap, or, where ar is not NULL, its kd->mr rows in place (ar, row stride
 * lda: every row inside A, also when fewer than kd->mr are stored). */
static void tile(const sgemm_kernel *kd, size_t kc, const float *ap, const float *ar, size_t lda, const float *bp,
                 float *c, size_t ldc, size_t mr, size_t nr, float alpha, float beta, int upd) {
    if (mr == kd->mr && nr == kd->nr) {
        if (ar) kd->rows(kc, ar, lda, bp, c, ldc, alpha, beta, upd);
        else kd->full(kc, ap, bp, c, ldc, alpha, beta, upd);
        return;
    }
    bool narrow = kd->narrow && nr <= kd->nr_narrow;
    size_t tw = narrow ? kd->nr_narrow : kd->nr; /* the kernel's width */
    _Alignas(64) float t[MR_MAX * NR_MAX]; /* rows of tw, written whole by the kernel; read first unless UPD_SET */
    if (upd != UPD_SET)
        for (size_t i = 0; i < kd->mr; i++)
            for (size_t j = 0; j < tw; j++) t[i * tw + j] = i < mr && j < nr ? c[i * ldc + j] : 0.0f;
    if (ar) (narrow ? kd->rows_narrow : kd->rows)(kc, ar, lda, bp, t, tw, alpha, beta, upd);
    else (narrow ? kd->narrow : kd->full)(kc, ap, bp, t, tw, alpha, beta, upd);
    for (size_t i = 0; i < mr; i++) memcpy(c + i * ldc, t + i * tw, nr * sizeof *c);
}

/* One product on the calling thread. */
typedef struct sgemm_args {
    bool ta, tb;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
    const rlx_cpu_sgemm_packref *pa, *pb; /* usable packs, or NULL */
    rlx_cpu_sgemm_epi_fn *epi;            /* rlx_cpu_sgemm_serial_epi's, or NULL */
    void *epi_ctx;
} sgemm_args;

/* Whether the product reads A's rows in place instead of packing them:
 * A row-major and not packed beforehand, a kernel with the in-place form,
 * and few column panels of B (n at most 4 nr) to reuse a packed panel
 * over: attention's products (scores against 128 keys, P V at depth 32 or
 * 64), where packing A cost 3-5% of the node; a wide product amortises
 * the packing, and its in-place reads ran no faster (BENCHMARKS.md "BERT
 * encoders at batch 8"). The same bits either way (the same kernel
 * operations). */
static bool a_rows_ok(const sgemm_kernel *kd, const sgemm_args *g) {
    return kd->rows && !g->pa && !g->ta && g->n <= 4 * kd->nr;
}

/* The packed product; apack holds MC x KC floats, bpack KC x NC (or what m,
 * n, k need of them), 64-byte aligned (unused where the operand is
 * packed already). */
/* The blocking of sgemm_packed (rlx_cpu_sgemm_blocking_set): the order
 * of its two inner loops (cols: for each row panel of A, the column panels
 * of B, so A's micro-panel is reused from L1, B's stream from L2 and C's
 * tiles are visited along its rows; rows: the reverse; by default cols
 * for products of more than MC rows, where rows order missed the cache on
 * C, and rows for the others, which read B once where cols reads it per
 * panel of A) and the columns of B per packed block (at most NC, the
 * scratch's size). g_order: -1 the default, 0 cols, 1 rows. */
static atomic_int g_order = -1;
static atomic_size_t g_nc = NC;

bool rlx_cpu_sgemm_blocking_set(bool rows_inner, size_t nc) {
    if (nc < 64 || nc > NC) return false;
    atomic_store_explicit(&g_order, rows_inner ? 1 : 0, memory_order_relaxed);
    atomic_store_explicit(&g_nc, nc, memory_order_relaxed);
    return true;
}

void rlx_cpu_sgemm_blocking_reset(void) {
    atomic_store_explicit(&g_order, -1, memory_order_relaxed);
    atomic_store_explicit(&g_nc, NC, memory_order_relaxed);
}

static void sgemm_packed(const sgemm_kernel *kd, const sgemm_args *g, float *apack, float *bpack) {
    int order = atomic_load_explicit(&g_order, memory_order_relaxed);
    bool rows_inner = order < 0 ? g->m <= MC : order == 1;
    /* (a whole number of B's panels: a packed B is addressed by panel) */
    size_t mr = kd->mr, nr = kd->nr, mcb = MC / mr * mr;
    size_t ncb = atomic_load_explicit(&g_nc, memory_order_relaxed) / nr * nr;
    /* A's whole panels of mr rows read in place (a_rows_ok), only a last
     * panel of fewer rows packed */
    bool in_place = a_rows_ok(kd, g);
    size_t m_full = in_place ? g->m / mr * mr : 0;
    for (size_t jc = 0; jc < g->n; jc += ncb) {
        size_t nc = min_sz(ncb, g->n - jc);
        for (size_t pc = 0; pc < g->k; pc += KC) {
            size_t kc = min_sz(KC, g->k - pc);
            int upd = pc > 0 ? UPD_ACC : g->beta == 0.0f ? UPD_SET : UPD_BETA;
            const float *bp = bpack;
            if (g->pb) bp = pack_at(g->pb->pack, g->pb->group, pc, g->pb->first + jc);
            else pack_b(g->tb, g->b, g->ldb, g->n, jc, round_up(nc, nr), pc, kc, nr, bpack);
            for (size_t ic = 0; ic < g->m; ic += mcb) {
                size_t mc = min_sz(mcb, g->m - ic);
                const float *ap = apack;
                if (g->pa) ap = pack_at(g->pa->pack, g->pa->group, pc, g->pa->first + ic);
                else if (!in_place) pack_a(g->ta, g->a, g->lda, g->m, ic, round_up(mc, mr), pc, kc, mr, apack);
                else if (ic + mc > m_full) /* the short last panel, where the others would be */
                    pack_a(false, g->a, g->lda, g->m, m_full, mr, pc, kc, mr, apack + (m_full - ic) / mr * kc * mr);
#define SGEMM_TILE_AT(ir, jr)                                                                                  \
    tile(kd, kc, ap + (ir) * kc, ic + (ir) < m_full ? g->a + (ic + (ir)) * g->lda + pc : NULL, g->lda,          \
         bp + (jr) * kc, g->c + (ic + (ir)) * g->ldc + jc + (jr), g->ldc, min_sz(mr, mc - (ir)),               \
         min_sz(nr, nc - (jr)), g->alpha, g->beta, upd)
                if (rows_inner)
                    for (size_t jr = 0; jr < nc; jr += nr)
                        for (size_t ir = 0; ir < mc; ir += mr) SGEMM_TILE_AT(ir, jr);
                else
                    for (size_t ir = 0; ir < mc; ir += mr) {
                        /* A packed beforehand (a convolution's weights,
                         * read from memory once per product): the next
                         * row panel fetched into L2 while this one's tiles
                         * run, spread over them (its rows follow in the
                         * pack, also past this block) */
                        const char *nx = NULL;
                        size_t nb = 0, n_t = (nc + nr - 1) / nr, t = 0;
                        if (g->pa && ic + ir + mr < g->m)
                            nx = (const char *)(ap + (ir + mr) * kc), nb = mr * kc * sizeof(float);
                        for (size_t jr = 0; jr < nc; jr += nr, t++) {
                            if (nx)
                                for (size_t b = nb * t / n_t / 64 * 64; b < nb * (t + 1) / n_t; b += 64)
                                    __builtin_prefetch(nx + b, 0, 2);
                            SGEMM_TILE_AT(ir, jr);
                        }
                    }
#undef SGEMM_TILE_AT
                /* the block's sums are final after the last k panel */
                if (g->epi && pc + kc >= g->k) g->epi(g->epi_ctx, ic, mc, jc, nc);
            }
        }
    }
}

/* Without memory for the blocks: one tile at a time from panels on the
 * stack, or from the operands' packs (the same kernel and the same sums,
 * only slower; a packed operand's plain copy may be gone: cpu_backend.c);
 * apart, so that its 60 KiB of stack are not the hot path's frame. */
static __attribute__((noinline)) void sgemm_tiles_on_stack(const sgemm_kernel *kd, const sgemm_args *g) {
    size_t mr = kd->mr, nr = kd->nr;
    _Alignas(64) float ap[MR_MAX * KC];
    _Alignas(64) float bp[KC * NR_MAX];
    for (size_t pc = 0; pc < g->k; pc += KC) {
        size_t kcc = min_sz(KC, g->k - pc);
        int upd = pc > 0 ? UPD_ACC : g->beta == 0.0f ? UPD_SET : UPD_BETA;
        for (size_t jr = 0; jr < g->n; jr += nr) {
            const float *bq = bp;
            if (g->pb) bq = pack_at(g->pb->pack, g->pb->group, pc, g->pb->first + jr);
            else pack_b(g->tb, g->b, g->ldb, g->n, jr, nr, pc, kcc, nr, bp);
            for (size_t ir = 0; ir < g->m; ir += mr) {
                const float *aq = ap;
                if (g->pa) aq = pack_at(g->pa->pack, g->pa->group, pc, g->pa->first + ir);
                else pack_a(g->ta, g->a, g->lda, g->m, ir, mr, pc, kcc, mr, ap);
                tile(kd, kcc, aq, NULL, 0, bq, g->c + ir * g->ldc + jr, g->ldc, min_sz(mr, g->m - ir),
                     min_sz(nr, g->n - jr), g->alpha, g->beta, upd);
            }
        }
    }
}

/* Whether the blocks' epilogue ran (sgemm_packed: per block). */
static bool sgemm_own(const sgemm_args *g) {
    const sgemm_kernel *kd = kernel_get();
    size_t kc = min_sz(KC, g->k), mr = kd->mr, nr = kd->nr;
    size_t a_len = g->pa ? 0 : round_up(min_sz(MC / mr * mr, g->m), mr) * kc;
    size_t b_len = g->pb ? 0 : round_up(min_sz(NC, g->n), nr) * kc;
    size_t a_pad = round_up(a_len, 16); /* keeps the B panels 64-byte aligned */
    /* the blocks live in the thread's scratch (no allocation once it has
     * grown: at most (MC x KC + KC x NC) floats, 2.2 MB) */
    float *buf = a_pad + b_len ? rlx_scratch_get(RLX_SCRATCH_SGEMM, (a_pad + b_len) * sizeof(float)) : NULL;
    if (!buf && a_pad + b_len) {
        sgemm_tiles_on_stack(kd, g);
        return false;
    }
    sgemm_packed(kd, g, buf, buf ? buf + a_pad : NULL);
    return true;
}

/* The one row of op(A) at k steps [pc, pc + kc): in place when A is plain
 * and not transposed, else gathered into av (from A's pack: the row is
 * lane 0 of its panel, first a multiple of mr). */
static const float *gemv_a(const sgemm_kernel *kd, const sgemm_args *g, size_t pc, size_t kc, float *av) {
    if (g->pa) {
        const float *ap = pack_at(g->pa->pack, g->pa->group, pc, g->pa->first);
        for (size_t p = 0; p < kc; p++) av[p] = ap[p * kd->mr];
        return av;
    }
    if (!g->ta) return g->a + pc;
    for (size_t p = 0; p < kc; p++) av[p] = g->a[(pc + p) * g->lda];
    return av;
}

/* M = 1 (a GEMV: a classifier's Gemm, a decoder's MatMul at one token)
 * with the AVX2 or AVX-512 kernel, B packed or [k, n] row-major: the tile
 * kernels would compute mr rows for the one (and go through a tile on the
 * stack); this streams B once with eight vectors of columns in flight.
 * The same per-element arithmetic as the tiles (cpu_sgemm_gemv.h), so the
 * same bits. A is read from its pack when it has one (the caller's plain
 * A may then be stale: the conv tests poison it). An unpacked transposed
 * B (a classifier's Gemm with transB under cpu.prepack=0, or a B that is
 * not constant) is read 16 rows at a time, transposed in registers
 * (gemv_t16_avx512), or with AVX2 k block by k block through a panel of
 * eight vectors of columns in the thread's scratch (pack_panel: the same
 * values in the same order). Both are slower than a packed B (1.3x and
 * 2x on a 9216 x 4096 weight from memory: 16 rows are 16 streams), but
 * 3.5x and 2x faster than the tiles they replace. False (nothing done)
 * for the portable kernel, or without the scratch. */
static bool gemv_row(const sgemm_kernel *kd, const sgemm_args *g) {
#if SGEMM_HAVE_AVX2
    int kind = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (g->m != 1 || (kind != RLX_CPU_SGEMM_AVX2 && kind != RLX_CPU_SGEMM_AVX512)) return false;
    bool wide = kind == RLX_CPU_SGEMM_AVX512;
    size_t vw = wide ? 16 : 8, nr = kd->nr, n = g->n;
    bool tvec = wide && g->tb && !g->pb; /* gemv_t16_avx512 */
    float *panel = NULL; /* else an unpacked transposed B's columns, [kc][8 vw] */
    if (g->tb && !g->pb && !tvec &&
        !(panel = rlx_scratch_get(RLX_SCRATCH_SGEMM, KC * 8 * vw * sizeof *panel)))
        return false;
    /* vectors of columns: a packed B's panels are zero-padded to nr (a
     * multiple of vw), and the transposed B's panel to its width, so the
     * last one is read whole and stored through tmp; a plain B's last
     * columns (fewer than vw) are read one by one */
    size_t nv = g->pb || panel ? (n + vw - 1) / vw : n / vw;
    _Alignas(64) float av[KC], tmp[8 * 16];
    if (tvec) { /* 16 columns at a time over the whole k: 16 rows of B streamed */
        for (size_t j0 = 0; j0 < n; j0 += 16) {
            size_t rows = min_sz(16, n - j0);
            float *c = rows < 16 ? tmp : g->c + j0;
            if (c == tmp) { /* the lanes past n: zeros, read by the update and dropped */
                memcpy(tmp, g->c + j0, rows * sizeof *tmp);
                memset(tmp + rows, 0, (16 - rows) * sizeof *tmp);
            }
            for (size_t pc = 0; pc < g->k; pc += KC) {
                size_t kc = min_sz(KC, g->k - pc);
                int upd = pc > 0 ? UPD_ACC : g->beta == 0.0f ? UPD_SET : UPD_BETA;
                gemv_t16_avx512(kc, gemv_a(kd, g, pc, kc, av), g->b + j0 * g->ldb + pc, g->ldb, rows, c, g->alpha,
                                g->beta, upd);
            }
            if (c == tmp) memcpy(g->c + j0, tmp, rows * sizeof *tmp);
        }
        return true;
    }
    for (size_t pc = 0; pc < g->k; pc += KC) {
        size_t kc = min_sz(KC, g->k - pc);
        int upd = pc > 0 ? UPD_ACC : g->beta == 0.0f ? UPD_SET : UPD_BETA;
        const float *ak = gemv_a(kd, g, pc, kc, av);
        for (size_t v0 = 0; v0 < nv; v0 += 8) {
            size_t cnt = min_sz(8, nv - v0), j0 = v0 * vw;
            size_t bs = g->pb ? nr : panel ? cnt * vw : g->ldb;
            if (panel) pack_panel(g->b + j0 * g->ldb + pc, g->ldb, 1, min_sz(cnt * vw, n - j0), cnt * vw, kc, panel);
            const float *bv[8];
            for (size_t v = 0; v < cnt; v++) {
                size_t j = j0 + v * vw;
                if (panel) {
                    bv[v] = panel + v * vw;
                } else if (g->pb) {
                    size_t col = g->pb->first + j;
                    bv[v] = pack_at(g->pb->pack, g->pb->group, pc, col) + col % nr;
                } else {
                    bv[v] = g->b + pc * g->ldb + j;
                }
            }
            /* C's columns of this group past n: through tmp */
            size_t inside = min_sz(cnt * vw, n - j0);
            float *c = g->c + j0;
            if (inside < cnt * vw) {
                c = tmp;
                memcpy(tmp, g->c + j0, inside * sizeof *tmp);
                memset(tmp + inside, 0, (cnt * vw - inside) * sizeof *tmp);
            }
            if (cnt == 8) {
                if (wide) gemv8_avx512(kc, ak, bv, bs, c, g->alpha, g->beta, upd);
                else gemv8_avx2(kc, ak, bv, bs, c, g->alpha, g->beta, upd);
            } else {
                for (size_t v = 0; v < cnt; v++) {
                    if (wide) gemv1_avx512(kc, ak, bv[v], bs, c + v * vw, g->alpha, g->beta, upd);
                    else gemv1_avx2(kc, ak, bv[v], bs, c + v * vw, g->alpha, g->beta, upd);
                }
            }
            if (c == tmp) memcpy(g->c + j0, tmp, inside * sizeof *tmp);
        }
        /* a plain B's last n % vw columns: the same chain in scalar fmaf
         * (one rounding, as the vector instruction) */
        for (size_t j = nv * vw; j < n; j++) {
            float acc = 0.0f;
            for (size_t p = 0; p < kc; p++) acc = fmaf(ak[p], g->b[(pc + p) * g->ldb + j], acc);
            float *cj = g->c + j;
            *cj = upd == UPD_SET ? g->alpha * acc : upd == UPD_BETA ? fmaf(g->beta, *cj, g->alpha * acc)
                                                                    : fmaf(g->alpha, acc, *cj);
        }
    }
    return true;
#else
    (void)kd, (void)g;
    return false;
#endif
}

static void sgemm_serial(const sgemm_args *g) {
    if (g->m == 0 || g->n == 0) return;
    if (g->k == 0) { /* empty products: C = beta * C */
        for (size_t i = 0; i < g->m; i++) {
            float *row = g->c + i * g->ldc;
            if (g->beta == 0.0f) memset(row, 0, g->n * sizeof *row);
            else
                for (size_t j = 0; j < g->n; j++) row[j] *= g->beta;
        }
    } else if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS) {
        cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans, (int)g->m,
                    (int)g->n, (int)g->k, g->alpha, g->a, (int)g->lda, g->b, (int)g->ldb, g->beta, g->c, (int)g->ldc);
    } else if (!gemv_row(kernel_get(), g) && sgemm_own(g))
        return; /* the epilogue ran block by block */
    if (g->epi) g->epi(g->epi_ctx, 0, g->m, 0, g->n);
}

static sgemm_args args_of(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc,
                          const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb) {
    sgemm_args g = { ta, tb, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c, NULL, NULL, NULL, NULL };
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL) {
        const sgemm_kernel *kd = kernel_get();
        g.pa = ref_usable(pa, kd, m, k, false);
        g.pb = ref_usable(pb, kd, n, k, true);
    }
    return g;
}

void rlx_cpu_sgemm_serial(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    rlx_cpu_sgemm_serial_packed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}

void rlx_cpu_sgemm_serial_packed(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                                 size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                                 const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb) {
    sgemm_args g = args_of(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pa, pb);
    sgemm_serial(&g);
}

void rlx_cpu_sgemm_serial_epi(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                              size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                              const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb,
                              rlx_cpu_sgemm_epi_fn *epi, void *epi_ctx) {
    sgemm_args g = args_of(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pa, pb);
    g.epi = epi, g.epi_ctx = epi_ctx;
    sgemm_serial(&g);
}

typedef struct sgemm_job {
    sgemm_args g;
    size_t mr, nr;
    size_t n_mb, n_nb; /* blocks along m and n */
} sgemm_job;

void rlx_cpu_block_range(size_t total, size_t unit, size_t n_blocks, size_t i, size_t *b0, size_t *len) {
    size_t units = (total + unit - 1) / unit, q = units / n_blocks, r = units % n_blocks;
    size_t u0 = i * q + (i < r ? i : r), u1 = u0 + q + (i < r ? 1 : 0);
    *b0 = min_sz(u0 * unit, total);
    *len = min_sz(u1 * unit, total) - *b0;
}

void rlx_cpu_sgemm_tile(size_t *mr, size_t *nr) {
    const sgemm_kernel *kd = kernel_get();
    *mr = kd->mr;
    *nr = kd->nr;
}

/* Fixed cost of one block (a task taken, C's blocks set up), in
 * multiply-adds: about 0.2 us. */
#define SPLIT_BLOCK_COST 16384.0

rlx_cpu_split2d rlx_cpu_split2d_choose(const rlx_cpu_split2d_req *q) {
    rlx_cpu_split2d best = { 1, 1 };
    size_t m = q->m, n = q->n, outer = q->outer ? q->outer : 1, threads = q->threads;
    if (!m || !n || !q->m_unit || !q->n_unit) return best;
    size_t mu = (m + q->m_unit - 1) / q->m_unit, nu = (n + q->n_unit - 1) / q->n_unit;
    /* columns per block at most max_n (in whole units) */
    size_t max_cols = q->max_n ? (q->max_n >= q->n_unit ? q->max_n / q->n_unit : 1) : nu;
    size_t min_nb = (nu + max_cols - 1) / max_cols;
    best.n_blocks = min_nb;
    if (threads <= 1 || (double)outer * (double)m * (double)n * (double)q->k < q->min_work) return best;
    /* up to two blocks per thread along each side (beyond the columns'
     * minimum): enough for a balanced split, few enough to try them all */
    size_t max_mb = mu < 2 * threads ? mu : 2 * threads, max_nb = min_nb + 2 * threads;
    if (max_nb > nu) max_nb = nu;
    if (min_nb > max_nb) min_nb = max_nb;
    double best_t = -1.0, many_t = -1.0; /* many: the best of at least min_tasks blocks */
    rlx_cpu_split2d many = best;
    for (size_t bm = 1; bm <= max_mb; bm++) {
        size_t rows = (mu + bm - 1) / bm;
        if (bm > 1 && (mu + bm - 2) / (bm - 1) == rows) continue; /* same largest block as bm - 1, more blocks */
        double r = (double)min_sz(rows * q->m_unit, m);
        for (size_t bn = min_nb; bn <= max_nb; bn++) {
            size_t cols = (nu + bn - 1) / bn;
            if (bn > min_nb && (nu + bn - 2) / (bn - 1) == cols) continue;
            double c = (double)min_sz(cols * q->n_unit, n);
            size_t blocks = outer * bm * bn, waves = (blocks + threads - 1) / threads;
            double t = (double)waves * (r * c * (double)q->k + q->a_cost * r + q->b_cost * c + SPLIT_BLOCK_COST);
            if (best_t < 0.0 || t < best_t) best_t = t, best.m_blocks = bm, best.n_blocks = bn;
            if (q->min_tasks && blocks >= q->min_tasks && (many_t < 0.0 || t < many_t))
                many_t = t, many.m_blocks = bm, many.n_blocks = bn;
        }
    }
    return many_t >= 0.0 ? many : best;
}

static void sgemm_blocks(void *ctx, size_t t0, size_t t1) {
    const sgemm_job *j = ctx;
    for (size_t t = t0; t < t1; t++) {
        size_t i0, mi, c0, nj;
        rlx_cpu_block_range(j->g.m, j->mr, j->n_mb, t / j->n_nb, &i0, &mi);
        rlx_cpu_block_range(j->g.n, j->nr, j->n_nb, t % j->n_nb, &c0, &nj);
        if (mi == 0 || nj == 0) continue;
        sgemm_args g = j->g;
        rlx_cpu_sgemm_packref ra, rb; /* the packs from this block's first row / column */
        if (g.pa) ra = *g.pa, ra.first += i0, g.pa = &ra;
        if (g.pb) rb = *g.pb, rb.first += c0, g.pb = &rb;
        /* a packed operand's plain copy is not read (and may be gone: cpu_backend.c) */
        if (!g.pa) g.a = g.ta ? g.a + i0 : g.a + i0 * g.lda;
        if (!g.pb) g.b = g.tb ? g.b + c0 * g.ldb : g.b + c0;
        g.c = g.c + i0 * g.ldc + c0;
        g.m = mi, g.n = nj;
        sgemm_serial(&g);
    }
}

/* Below this many multiply-adds one thread does the whole product. */
#define SGEMM_SPLIT_MIN ((size_t)1 << 18)

void rlx_cpu_sgemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                   const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    rlx_cpu_sgemm_packed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}

void rlx_cpu_sgemm_packed(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc,
                          const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb) {
    sgemm_args g = args_of(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pa, pb);
    size_t threads = (size_t)rlx_parallel_threads();
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS || threads == 1 || m == 0 || n == 0 ||
        (double)m * (double)n * (double)k < (double)SGEMM_SPLIT_MIN) {
        sgemm_serial(&g);
        return;
    }
    /* a 2-D split over the threads (rlx_cpu_split2d_choose): block edges
     * fall on the micro-kernel's tiles; each block packs its rows of A and
     * its columns of B, unless they were packed once (constant weights).
     * Any split gives the same bits: every element's arithmetic depends
     * on k alone. */
    const sgemm_kernel *kd = kernel_get();
    /* a block packs its rows of A and columns of B (8 k each), or, where
     * they were packed at compile time, still streams them from memory
     * (6 k: a prepacked operand is not free; with 0 here, 16 threads
     * each took 8 rows of BERT's M = 128 and every thread read all of
     * the weights, which left the GEMM bound by memory at 16 threads) */
    rlx_cpu_split2d_req q = { 1, m, n, k, kd->mr, kd->nr, 0, (g.pa ? 6.0 : 8.0) * (double)k,
                              (g.pb ? 6.0 : 8.0) * (double)k, threads, (double)SGEMM_SPLIT_MIN, 0 };
    rlx_cpu_split2d sp = rlx_cpu_split2d_choose(&q);
    if (sp.m_blocks * sp.n_blocks == 1) {
        sgemm_serial(&g);
        return;
    }
    sgemm_job j = { g, kd->mr, kd->nr, sp.m_blocks, sp.n_blocks };
    rlx_parallel_for(sp.m_blocks * sp.n_blocks, 1, sgemm_blocks, &j);
}
