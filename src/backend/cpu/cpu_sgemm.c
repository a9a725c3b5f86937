/* f32 GEMM: rlx's own packed micro-kernel, split over the worker pool (see
 * cpu_sgemm.h for the contract and why it is not OpenBLAS's). */
#include "backend/cpu/cpu_sgemm.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel.h"
#include "base/options.h"

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

/* Register tile (rows x columns of C), and the blocks: KC steps of k per
 * packed panel, MC rows of A per packed block (a multiple of MR, in L2), NC
 * columns of B per packed block (a multiple of NR). Only KC changes the
 * arithmetic (where the k sum is cut); it depends on k alone. */
#define MR 6
#define NR 16
#define KC 256
#define MC 120
#define NC 2048

/* How a tile's sum over one KC panel (acc) lands in C: */
enum {
    UPD_SET = 0,  /* first panel, beta == 0: c = alpha * acc (c not read) */
    UPD_BETA = 1, /* first panel: c = beta * c + alpha * acc */
    UPD_ACC = 2   /* later panels: c = c + alpha * acc */
};

/* C tile [MR, NR] (row stride ldc) from packed panels: ap holds kc steps of
 * MR values of A, bp kc steps of NR values of B; every element's sum starts
 * at 0 and takes its kc products in order. */
typedef void sgemm_kernel_fn(size_t kc, const float *ap, const float *bp, float *c, size_t ldc, float alpha,
                             float beta, int upd);

/* The portable kernel: multiply then add (no fused multiply-add). */
static void kern_portable(size_t kc, const float *ap, const float *bp, float *c, size_t ldc, float alpha, float beta,
                          int upd) {
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (size_t p = 0; p < kc; p++, ap += MR, bp += NR)
        for (int i = 0; i < MR; i++) {
            float a = ap[i];
            for (int j = 0; j < NR; j++) acc[i][j] += a * bp[j];
        }
    for (int i = 0; i < MR; i++) {
        float *row = c + (size_t)i * ldc;
        for (int j = 0; j < NR; j++) {
            float t = alpha * acc[i][j];
            row[j] = upd == UPD_SET ? t : upd == UPD_BETA ? beta * row[j] + t : row[j] + t;
        }
    }
}

#if SGEMM_HAVE_AVX2
/* One row of the update: c = alpha * acc, fma(beta, c, alpha * acc) or
 * fma(alpha, acc, c), 16 columns. */
__attribute__((target("avx2,fma"))) static inline void avx2_row(float *dst, __m256 lo, __m256 hi, __m256 va,
                                                                __m256 vb, int upd) {
    if (upd == UPD_SET) {
        lo = _mm256_mul_ps(va, lo), hi = _mm256_mul_ps(va, hi);
    } else if (upd == UPD_BETA) {
        lo = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst), _mm256_mul_ps(va, lo));
        hi = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst + 8), _mm256_mul_ps(va, hi));
    } else {
        lo = _mm256_fmadd_ps(va, lo, _mm256_loadu_ps(dst));
        hi = _mm256_fmadd_ps(va, hi, _mm256_loadu_ps(dst + 8));
    }
    _mm256_storeu_ps(dst, lo);
    _mm256_storeu_ps(dst + 8, hi);
}

/* AVX2 + FMA: 12 accumulators of 8 lanes in registers (named, so that the
 * compiler keeps them there), one fused multiply-add per product. */
__attribute__((target("avx2,fma"))) static void kern_avx2(size_t kc, const float *ap, const float *bp, float *c,
                                                          size_t ldc, float alpha, float beta, int upd) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define AVX2_STEP(P)                                                                                 \
    do {                                                                                             \
        __m256 b0 = _mm256_load_ps(bp + (P) * NR), b1 = _mm256_load_ps(bp + (P) * NR + 8), a;       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 0);                                                  \
        c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);                       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 1);                                                  \
        c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);                       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 2);                                                  \
        c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);                       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 3);                                                  \
        c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);                       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 4);                                                  \
        c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);                       \
        a = _mm256_broadcast_ss(ap + (P) * MR + 5);                                                  \
        c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);                       \
    } while (0)
    size_t p = 0;
    for (; p + 4 <= kc; p += 4, ap += 4 * MR, bp += 4 * NR) {
        AVX2_STEP(0);
        AVX2_STEP(1);
        AVX2_STEP(2);
        AVX2_STEP(3);
    }
    for (; p < kc; p++, ap += MR, bp += NR) AVX2_STEP(0);
#undef AVX2_STEP
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    avx2_row(c, c00, c01, va, vb, upd);
    avx2_row(c + ldc, c10, c11, va, vb, upd);
    avx2_row(c + 2 * ldc, c20, c21, va, vb, upd);
    avx2_row(c + 3 * ldc, c30, c31, va, vb, upd);
    avx2_row(c + 4 * ldc, c40, c41, va, vb, upd);
    avx2_row(c + 5 * ldc, c50, c51, va, vb, upd);
}

/* kern_avx2's left half (columns 0-7 of the tile, the same operations lane
 * for lane, so the same bits), for edge tiles of at most 8 columns. */
__attribute__((target("avx2,fma"))) static void kern_avx2_8(size_t kc, const float *ap, const float *bp, float *c,
                                                            size_t ldc, float alpha, float beta, int upd) {
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    for (size_t p = 0; p < kc; p++, ap += MR, bp += NR) {
        __m256 b0 = _mm256_load_ps(bp);
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 0), b0, c0);
        c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 1), b0, c1);
        c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 2), b0, c2);
        c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 3), b0, c3);
        c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 4), b0, c4);
        c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + 5), b0, c5);
    }
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta), acc[MR] = { c0, c1, c2, c3, c4, c5 };
    for (int i = 0; i < MR; i++) {
        float *dst = c + (size_t)i * ldc;
        __m256 r;
        if (upd == UPD_SET) r = _mm256_mul_ps(va, acc[i]);
        else if (upd == UPD_BETA) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst), _mm256_mul_ps(va, acc[i]));
        else r = _mm256_fmadd_ps(va, acc[i], _mm256_loadu_ps(dst));
        _mm256_storeu_ps(dst, r);
    }
}
#endif

/* The kernel of this process: chosen once from what the CPU runs. */
static sgemm_kernel_fn *const g_kernels[2] = { kern_portable,
#if SGEMM_HAVE_AVX2
                                               kern_avx2
#else
                                               NULL
#endif
};
static atomic_int g_kernel = -1;

static bool cpu_has_avx2_fma(void) {
#if SGEMM_HAVE_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

static sgemm_kernel_fn *kernel_get(void) {
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k < 0) {
        k = cpu_has_avx2_fma() ? RLX_CPU_SGEMM_AVX2 : RLX_CPU_SGEMM_PORTABLE;
        atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    }
    return g_kernels[k];
}

rlx_cpu_sgemm_kernel rlx_cpu_sgemm_kernel_get(void) {
    (void)kernel_get();
    return (rlx_cpu_sgemm_kernel)atomic_load_explicit(&g_kernel, memory_order_relaxed);
}

bool rlx_cpu_sgemm_kernel_set(rlx_cpu_sgemm_kernel kernel) {
    if (kernel != RLX_CPU_SGEMM_PORTABLE && kernel != RLX_CPU_SGEMM_AVX2) return false;
    if (kernel == RLX_CPU_SGEMM_AVX2 && !cpu_has_avx2_fma()) return false;
    atomic_store_explicit(&g_kernel, (int)kernel, memory_order_relaxed);
    return true;
}

/* ------------------------------------------------------------ packing */

/* One micro-panel of w lanes (rows of A or columns of B) over kc steps of
 * k: dst[p * w + l] = src[l * ls + p * ps] for the first `lanes` lanes,
 * zeros after. */
static void pack_panel(const float *src, size_t ls, size_t ps, size_t lanes, size_t w, size_t kc, float *dst) {
    if (ls == 1) { /* lanes contiguous: one copy per step */
        for (size_t p = 0; p < kc; p++, dst += w) {
            memcpy(dst, src + p * ps, lanes * sizeof *dst);
            memset(dst + lanes, 0, (w - lanes) * sizeof *dst);
        }
    } else if (w == 6 && lanes == 6 && ps == 1) { /* six rows read side by side, written in order */
        const float *s0 = src, *s1 = s0 + ls, *s2 = s1 + ls, *s3 = s2 + ls, *s4 = s3 + ls, *s5 = s4 + ls;
        for (size_t p = 0; p < kc; p++, dst += 6) {
            dst[0] = s0[p], dst[1] = s1[p], dst[2] = s2[p];
            dst[3] = s3[p], dst[4] = s4[p], dst[5] = s5[p];
        }
    } else {
        for (size_t l = 0; l < w; l++)
            for (size_t p = 0; p < kc; p++) dst[p * w + l] = l < lanes ? src[l * ls + p * ps] : 0.0f;
    }
}

/* Rows [i0, i0 + mc) of op(A) (mc a multiple of MR), k steps [p0, p0 + kc),
 * as micro-panels of MR rows: dst[(r * kc + p) * MR + i]; rows past m are
 * zeros. */
static void pack_a(bool ta, const float *a, size_t lda, size_t m, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *dst) {
    for (size_t i = i0; i < i0 + mc; i += MR, dst += kc * MR)
        pack_panel(ta ? a + p0 * lda + i : a + i * lda + p0, ta ? 1 : lda, ta ? lda : 1, m - i < MR ? m - i : MR, MR,
                   kc, dst);
}

/* Columns [j0, j0 + nc) of op(B) (nc a multiple of NR), k steps
 * [p0, p0 + kc), as micro-panels of NR columns: dst[(s * kc + p) * NR + j];
 * columns past n are zeros. */
static void pack_b(bool tb, const float *b, size_t ldb, size_t n, size_t j0, size_t nc, size_t p0, size_t kc,
                   float *dst) {
    for (size_t j = j0; j < j0 + nc; j += NR, dst += kc * NR)
        pack_panel(tb ? b + j * ldb + p0 : b + p0 * ldb + j, tb ? ldb : 1, tb ? 1 : ldb, n - j < NR ? n - j : NR, NR,
                   kc, dst);
}

/* ------------------------------------------------------------ driver */

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* One tile of mr x nr (at most MR x NR) of C: in place when whole, else
 * through a whole tile on the stack, so that edge elements take the same
 * arithmetic as the others (at most 8 columns: kern_avx2_8, the same
 * operations lane for lane). */
static void tile(sgemm_kernel_fn *kern, size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                 size_t mr, size_t nr, float alpha, float beta, int upd) {
    if (mr == MR && nr == NR) {
        kern(kc, ap, bp, c, ldc, alpha, beta, upd);
        return;
    }
    size_t tw = NR; /* the kernel's width */
#if SGEMM_HAVE_AVX2
    if (kern == kern_avx2 && nr <= 8) kern = kern_avx2_8, tw = 8;
#endif
    float t[MR * NR]; /* rows of tw, written whole by the kernel; read first unless UPD_SET */
    if (upd != UPD_SET)
        for (size_t i = 0; i < MR; i++)
            for (size_t j = 0; j < tw; j++) t[i * tw + j] = i < mr && j < nr ? c[i * ldc + j] : 0.0f;
    kern(kc, ap, bp, t, tw, alpha, beta, upd);
    for (size_t i = 0; i < mr; i++) memcpy(c + i * ldc, t + i * tw, nr * sizeof *c);
}

/* The packed product on the calling thread; buf holds MC x KC + KC x NC
 * floats (or what m, n, k need of them), 64-byte aligned. */
static void sgemm_packed(sgemm_kernel_fn *kern, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                         const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                         float *apack, float *bpack) {
    for (size_t jc = 0; jc < n; jc += NC) {
        size_t nc = min_sz(NC, n - jc);
        for (size_t pc = 0; pc < k; pc += KC) {
            size_t kc = min_sz(KC, k - pc);
            int upd = pc > 0 ? UPD_ACC : beta == 0.0f ? UPD_SET : UPD_BETA;
            pack_b(tb, b, ldb, n, jc, round_up(nc, NR), pc, kc, bpack);
            for (size_t ic = 0; ic < m; ic += MC) {
                size_t mc = min_sz(MC, m - ic);
                pack_a(ta, a, lda, m, ic, round_up(mc, MR), pc, kc, apack);
                for (size_t jr = 0; jr < nc; jr += NR)
                    for (size_t ir = 0; ir < mc; ir += MR)
                        tile(kern, kc, apack + ir * kc, bpack + jr * kc, c + (ic + ir) * ldc + jc + jr, ldc,
                             min_sz(MR, mc - ir), min_sz(NR, nc - jr), alpha, beta, upd);
            }
        }
    }
}

static void sgemm_own(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    sgemm_kernel_fn *kern = kernel_get();
    size_t kc = min_sz(KC, k);
    size_t a_len = round_up(min_sz(MC, m), MR) * kc, b_len = round_up(min_sz(NC, n), NR) * kc;
    size_t a_pad = round_up(a_len, 16); /* keeps the B panels 64-byte aligned */
    float *buf = aligned_alloc(64, (a_pad + b_len) * sizeof(float));
    if (!buf) {
        /* no memory for the blocks: one tile at a time from panels on the
         * stack (the same kernel and the same sums, only slower) */
        _Alignas(64) float ap[MR * KC];
        _Alignas(64) float bp[KC * NR];
        for (size_t pc = 0; pc < k; pc += KC) {
            size_t kcc = min_sz(KC, k - pc);
            int upd = pc > 0 ? UPD_ACC : beta == 0.0f ? UPD_SET : UPD_BETA;
            for (size_t jr = 0; jr < n; jr += NR) {
                pack_b(tb, b, ldb, n, jr, NR, pc, kcc, bp);
                for (size_t ir = 0; ir < m; ir += MR) {
                    pack_a(ta, a, lda, m, ir, MR, pc, kcc, ap);
                    tile(kern, kcc, ap, bp, c + ir * ldc + jr, ldc, min_sz(MR, m - ir), min_sz(NR, n - jr), alpha,
                         beta, upd);
                }
            }
        }
        return;
    }
    sgemm_packed(kern, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, buf, buf + a_pad);
    free(buf);
}

void rlx_cpu_sgemm_serial(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) { /* empty products: C = beta * C */
        for (size_t i = 0; i < m; i++) {
            float *row = c + i * ldc;
            if (beta == 0.0f) memset(row, 0, n * sizeof *row);
            else
                for (size_t j = 0; j < n; j++) row[j] *= beta;
        }
        return;
    }
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                    (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
        return;
    }
    sgemm_own(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

typedef struct sgemm_job {
    bool ta, tb;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
    size_t n_mb, n_nb; /* blocks along m and n */
} sgemm_job;

/* Block i of n_blocks over [0, total) in whole units of `unit` (the last
 * unit may be short): extents differ by at most one unit. */
static void block_range(size_t total, size_t unit, size_t n_blocks, size_t i, size_t *b0, size_t *len) {
    size_t units = (total + unit - 1) / unit, q = units / n_blocks, r = units % n_blocks;
    size_t u0 = i * q + (i < r ? i : r), u1 = u0 + q + (i < r ? 1 : 0);
    *b0 = min_sz(u0 * unit, total);
    *len = min_sz(u1 * unit, total) - *b0;
}

static void sgemm_blocks(void *ctx, size_t t0, size_t t1) {
    const sgemm_job *j = ctx;
    for (size_t t = t0; t < t1; t++) {
        size_t i0, mi, c0, nj;
        block_range(j->m, MR, j->n_mb, t / j->n_nb, &i0, &mi);
        block_range(j->n, NR, j->n_nb, t % j->n_nb, &c0, &nj);
        if (mi == 0 || nj == 0) continue;
        const float *a = j->ta ? j->a + i0 : j->a + i0 * j->lda;
        const float *b = j->tb ? j->b + c0 * j->ldb : j->b + c0;
        rlx_cpu_sgemm_serial(j->ta, j->tb, mi, nj, j->k, j->alpha, a, j->lda, b, j->ldb, j->beta,
                             j->c + i0 * j->ldc + c0, j->ldc);
    }
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Below this many multiply-adds one thread does the whole product. */
#define SGEMM_SPLIT_MIN ((size_t)1 << 18)

void rlx_cpu_sgemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                   const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    size_t threads = (size_t)rlx_parallel_threads();
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS || threads == 1 || m == 0 || n == 0 ||
        (double)m * (double)n * (double)k < (double)SGEMM_SPLIT_MIN) {
        rlx_cpu_sgemm_serial(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* about two blocks per thread: columns first (at least 64 wide), then
     * rows (at least 16) when the columns run out; block edges fall on the
     * micro-kernel's tiles. Any split gives the same bits: every element's
     * arithmetic depends on k alone. */
    size_t want = 2 * threads;
    size_t n_nb = n / 64;
    if (n_nb > want) n_nb = want;
    if (n_nb < 1) n_nb = 1;
    size_t n_mb = ceil_div(want, n_nb), max_mb = m / 16;
    if (n_mb > max_mb) n_mb = max_mb;
    if (n_mb < 1) n_mb = 1;
    sgemm_job j = { ta, tb, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c, n_mb, n_nb };
    rlx_parallel_for(n_mb * n_nb, 1, sgemm_blocks, &j);
}
