/* CPU kernel of rlx.MatMulNBits (contract in src/ir/ops/internal_ops.h):
 * Y = A W with W kept as 4-bit blocks (onnxruntime's MatMulNBits layout),
 * never dequantized whole.
 *
 * Reference: per output element, the weights (q - zp) * scale in f32 and
 * the sum over k in double, rounded once.
 *
 * Fast paths (f32 arithmetic; f16 A and Y converted at the edges):
 *  - M <= 8 rows (decoding, GEMV): A is copied once per call into a
 *    "deinterleaved" layout, per unit of U = min(block_size, 32) values of k
 *    the even k first, then the odd k, zero-padded to n_blocks *
 *    block_size; then the low and high nibbles of U / 2 weight bytes are
 *    the weights of the two halves of that unit. Per column and block the
 *    kernel converts the nibbles to f32 in registers, w = (q - zp) * s (the
 *    reference's weights: a code equal to the zero point is exactly 0, so
 *    an infinite A or scale gives NaN as onnxruntime's), and accumulates
 *    w * a for every row with fused multiply-adds into vector accumulators,
 *    summed across lanes at the end. Columns are shared out over the worker pool. Kernels: AVX-512F
 *    (block_size >= 32: 16 weight bytes per step), AVX2 + FMA (8 bytes per
 *    step), portable C (scalar); picked as
 *    the f32 GEMM's kernel is (rlx_cpu_sgemm_kernel_get, so tests can force
 *    one with rlx_cpu_sgemm_kernel_set).
 *  - M > 8 rows (prompt processing): per tile of 64 columns, W^T [64, kp]
 *    is dequantized (vector code as above) into a per-task buffer (256 kp
 *    bytes), k in A's deinterleaved order, and multiplied with
 *    rlx_cpu_sgemm_serial_packed by A (deinterleaved, packed once per
 *    call); tiles are shared out over the worker pool.
 * The results differ from the reference by f32 rounding of the sums (the
 * tests' tolerance: 1e-5 relative to sum |a w|). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "ir/ops/internal_ops.h"
#include "rlx/half.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define NBITS_X86 1
#include <immintrin.h>
#else
#define NBITS_X86 0
#endif

#define NBITS_GEMV_ROWS 8 /* rows handled in one pass over the weights */
#define NBITS_TILE 64     /* columns per dequantized tile (M > 8) */

typedef struct nbits_job {
    rlx_nbits_geom g;
    const uint8_t *b, *z; /* z: NULL for the default zero point 8 */
    const float *s;
    const float *a; /* deinterleaved [M, kp] */
    float *y;       /* [M, N] */
    size_t m, kp;   /* kp: padded row length of the deinterleaved A */
    int kernel;     /* rlx_cpu_sgemm_kernel */
    const rlx_cpu_sgemm_pack *apack; /* the deinterleaved A packed (M > 8), or NULL */
} nbits_job;

/* Zero point of column n, block blk (8 without zero points). */
static inline float nbits_zp(const nbits_job *j, size_t n, size_t blk) {
    if (!j->z) return 8.0f;
    uint8_t v = j->z[n * (size_t)j->g.zrow + blk / 2];
    return (float)((blk & 1) ? v >> 4 : v & 15);
}

/* ------------------------------------------------------------ reference */

static void nbits_reference(const nbits_job *j, const float *a) {
    const rlx_nbits_geom *g = &j->g;
    for (size_t m = 0; m < j->m; m++)
        for (size_t n = 0; n < (size_t)g->N; n++) {
            double acc = 0;
            for (size_t k = 0; k < (size_t)g->K; k++) {
                size_t blk = k / (size_t)g->bs, i = k % (size_t)g->bs;
                uint8_t byte = j->b[(n * (size_t)g->nb + blk) * (size_t)g->blob + i / 2];
                float q = (float)((i & 1) ? byte >> 4 : byte & 15);
                float w = (q - nbits_zp(j, n, blk)) * j->s[n * (size_t)g->nb + blk];
                acc += (double)a[m * (size_t)g->K + k] * (double)w;
            }
            j->y[m * (size_t)g->N + n] = (float)acc;
        }
}

/* ------------------------------------------------------------ GEMV (M <= 8) */

/* The deinterleaved copy of A (see the top of the file). */
static void nbits_deinterleave(const float *a, size_t m, size_t K, size_t kp, size_t u, float *out) {
    size_t h = u / 2;
    for (size_t r = 0; r < m; r++) {
        const float *ar = a + r * K;
        float *o = out + r * kp;
        for (size_t k0 = 0; k0 < kp; k0 += u)
            for (size_t i = 0; i < h; i++) {
                size_t ke = k0 + 2 * i, ko = ke + 1;
                o[k0 + i] = ke < K ? ar[ke] : 0.0f;
                o[k0 + h + i] = ko < K ? ar[ko] : 0.0f;
            }
    }
}

/* Portable: the same operation order as the vector kernels, one lane. */
static void gemv_portable(const nbits_job *j, size_t n0, size_t n1) {
    const rlx_nbits_geom *g = &j->g;
    size_t u = g->bs < 32 ? (size_t)g->bs : 32, h = u / 2;
    for (size_t n = n0; n < n1; n++) {
        float acc[NBITS_GEMV_ROWS] = { 0 };
        for (size_t blk = 0; blk < (size_t)g->nb; blk++) {
            float s = j->s[n * (size_t)g->nb + blk], z = nbits_zp(j, n, blk);
            const uint8_t *bb = j->b + (n * (size_t)g->nb + blk) * (size_t)g->blob;
            for (size_t k0 = 0; k0 < (size_t)g->bs; k0 += u) {
                const uint8_t *q = bb + k0 / 2;
                const float *ab = j->a + blk * (size_t)g->bs + k0;
                for (size_t i = 0; i < h; i++) {
                    float wl = ((float)(q[i] & 15) - z) * s, wh = ((float)(q[i] >> 4) - z) * s;
                    for (size_t r = 0; r < j->m; r++) {
                        acc[r] = fmaf(wl, ab[r * j->kp + i], acc[r]);
                        acc[r] = fmaf(wh, ab[r * j->kp + h + i], acc[r]);
                    }
                }
            }
        }
        for (size_t r = 0; r < j->m; r++) j->y[r * (size_t)g->N + n] = acc[r];
    }
}

#if NBITS_X86
/* The 16 weights of 8 bytes at p: low nibbles into *wl, high into *wh, each
 * (q - zp) * s (vs; vzs holds zp), as the reference rounds them. */
__attribute__((target("avx2,fma"), always_inline)) static inline void avx2_weights(const uint8_t *p, __m256 vs, __m256 vzs,
                                                                    __m256 *wl, __m256 *wh) {
    __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    *wl = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q, _mm256_set1_epi32(15))), vzs), vs);
    *wh = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(q, 4)), vzs), vs);
}

/* AVX2 + FMA: 8 weight bytes (16 weights) per step, any block_size. */
__attribute__((target("avx2,fma"), always_inline)) static inline void gemv_avx2_rows(const nbits_job *j, size_t n0, size_t n1,
                                                                      const size_t mr) {
    const rlx_nbits_geom *g = &j->g;
    size_t u = g->bs < 32 ? (size_t)g->bs : 32, h = u / 2;
    for (size_t n = n0; n < n1; n++) {
        __m256 acc[NBITS_GEMV_ROWS], acch[4]; /* acch: the high nibbles' sums, for up to 4 rows */
        for (size_t r = 0; r < mr; r++) acc[r] = _mm256_setzero_ps();
        for (size_t r = 0; r < mr && r < 4; r++) acch[r] = _mm256_setzero_ps();
        for (size_t blk = 0; blk < (size_t)g->nb; blk++) {
            float s = j->s[n * (size_t)g->nb + blk];
            __m256 vs = _mm256_set1_ps(s), vzs = _mm256_set1_ps(nbits_zp(j, n, blk));
            const uint8_t *bb = j->b + (n * (size_t)g->nb + blk) * (size_t)g->blob;
            for (size_t k0 = 0; k0 < (size_t)g->bs; k0 += u)
                for (size_t i = 0; i < h; i += 8) {
                    __m256 wl, wh;
                    avx2_weights(bb + k0 / 2 + i, vs, vzs, &wl, &wh);
                    const float *ab = j->a + blk * (size_t)g->bs + k0 + i;
                    for (size_t r = 0; r < mr; r++) {
                        acc[r] = _mm256_fmadd_ps(wl, _mm256_loadu_ps(ab + r * j->kp), acc[r]);
                        if (mr <= 4) acch[r] = _mm256_fmadd_ps(wh, _mm256_loadu_ps(ab + r * j->kp + h), acch[r]);
                        else acc[r] = _mm256_fmadd_ps(wh, _mm256_loadu_ps(ab + r * j->kp + h), acc[r]);
                    }
                }
        }
        for (size_t r = 0; r < mr; r++) {
            if (mr <= 4) acc[r] = _mm256_add_ps(acc[r], acch[r]);
            __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
            v = _mm_add_ps(v, _mm_movehl_ps(v, v));
            v = _mm_add_ss(v, _mm_movehdup_ps(v));
            j->y[r * (size_t)g->N + n] = _mm_cvtss_f32(v);
        }
    }
}

/* AVX-512F: 16 weight bytes (32 weights, one "unit") per step; block_size
 * >= 32. Separate accumulators for the low and high nibbles and, for up to
 * 4 rows, a second set for odd units: more independent FMA chains. k runs
 * in chunks of 4096 / mr values, each a pass over the task's columns, so
 * that the rows of A's copy that a chunk reads stay in L1. */
__attribute__((target("avx512f"), always_inline)) static inline void gemv_avx512_unit(const nbits_job *j, size_t n, size_t u,
                                                                       size_t upb, const size_t mr, __m512 *al,
                                                                       __m512 *ah) {
    const rlx_nbits_geom *g = &j->g;
    size_t blk = u / upb;
    float s = j->s[n * (size_t)g->nb + blk];
    __m512 vs = _mm512_set1_ps(s), vzs = _mm512_set1_ps(nbits_zp(j, n, blk));
    __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(j->b + n * (size_t)g->nb * (size_t)g->blob + u * 16)));
    __m512 wl = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, _mm512_set1_epi32(15))), vzs), vs);
    __m512 wh = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), vzs), vs);
    const float *ab = j->a + u * 32;
    for (size_t r = 0; r < mr; r++) {
        al[r] = _mm512_fmadd_ps(wl, _mm512_loadu_ps(ab + r * j->kp), al[r]);
        ah[r] = _mm512_fmadd_ps(wh, _mm512_loadu_ps(ab + r * j->kp + 16), ah[r]);
    }
}

__attribute__((target("avx512f"), always_inline)) static inline void gemv_avx512_rows(const nbits_job *j, size_t n0,
                                                                                      size_t n1, const size_t mr) {
    const rlx_nbits_geom *g = &j->g;
    size_t upb = (size_t)g->bs / 32, units = (size_t)g->nb * upb;
    /* units of k per pass over the columns: mr rows of A's copy stay in L1 (16 KiB) */
    size_t chunk = 128 / mr;
    for (size_t c0 = 0; c0 < units; c0 += chunk) {
        size_t c1 = c0 + chunk < units ? c0 + chunk : units;
        for (size_t n = n0; n < n1; n++) {
            __m512 al[NBITS_GEMV_ROWS], ah[NBITS_GEMV_ROWS], bl[4], bh[4];
            for (size_t r = 0; r < mr; r++) al[r] = ah[r] = _mm512_setzero_ps();
            for (size_t r = 0; r < mr && r < 4; r++) bl[r] = bh[r] = _mm512_setzero_ps();
            size_t u = c0;
            if (mr <= 4)
                for (; u + 1 < c1; u += 2) {
                    gemv_avx512_unit(j, n, u, upb, mr, al, ah);
                    gemv_avx512_unit(j, n, u + 1, upb, mr, bl, bh);
                }
            for (; u < c1; u++) gemv_avx512_unit(j, n, u, upb, mr, al, ah);
            for (size_t r = 0; r < mr; r++) {
                __m512 t = _mm512_add_ps(al[r], ah[r]);
                if (mr <= 4) t = _mm512_add_ps(t, _mm512_add_ps(bl[r], bh[r]));
                float v = _mm512_reduce_add_ps(t);
                float *y = j->y + r * (size_t)g->N + n;
                *y = c0 ? *y + v : v;
            }
        }
    }
}

/* One instance per row count, so that the accumulators stay in registers. */
#define NBITS_ROWS_SWITCH(fn, j, n0, n1)  \
    switch ((j)->m) {                     \
    case 1: fn(j, n0, n1, 1); break;      \
    case 2: fn(j, n0, n1, 2); break;      \
    case 3: fn(j, n0, n1, 3); break;      \
    case 4: fn(j, n0, n1, 4); break;      \
    case 5: fn(j, n0, n1, 5); break;      \
    case 6: fn(j, n0, n1, 6); break;      \
    case 7: fn(j, n0, n1, 7); break;      \
    default: fn(j, n0, n1, 8); break;     \
    }

__attribute__((target("avx2,fma"))) static void gemv_avx2(const nbits_job *j, size_t n0, size_t n1) {
    NBITS_ROWS_SWITCH(gemv_avx2_rows, j, n0, n1)
}
__attribute__((target("avx512f"))) static void gemv_avx512(const nbits_job *j, size_t n0, size_t n1) {
    NBITS_ROWS_SWITCH(gemv_avx512_rows, j, n0, n1)
}
#endif

static void gemv_task(void *ctx, size_t n0, size_t n1) {
    const nbits_job *j = ctx;
#if NBITS_X86
    if (j->kernel == RLX_CPU_SGEMM_AVX512 && j->g.bs >= 32) {
        gemv_avx512(j, n0, n1);
        return;
    }
    if (j->kernel != RLX_CPU_SGEMM_PORTABLE) {
        gemv_avx2(j, n0, n1);
        return;
    }
#endif
    gemv_portable(j, n0, n1);
}

/* ------------------------------------------------------------ tiles + GEMM (M > 8) */

/* W^T rows n0..n1 dequantized into wt ([n1 - n0, kp], row-major), k in
 * the deinterleaved order of A's copy; the pad of the last block holds
 * the pad's weights (finite), which multiply A's zeros. */
static void dequant_portable(const nbits_job *j, size_t n0, size_t n1, float *wt) {
    const rlx_nbits_geom *g = &j->g;
    size_t u = g->bs < 32 ? (size_t)g->bs : 32, h = u / 2;
    for (size_t n = n0; n < n1; n++) {
        float *o = wt + (n - n0) * j->kp;
        for (size_t blk = 0; blk < (size_t)g->nb; blk++) {
            float s = j->s[n * (size_t)g->nb + blk], z = nbits_zp(j, n, blk);
            const uint8_t *bb = j->b + (n * (size_t)g->nb + blk) * (size_t)g->blob;
            for (size_t k0 = 0; k0 < (size_t)g->bs; k0 += u)
                for (size_t i = 0; i < h; i++) {
                    o[blk * (size_t)g->bs + k0 + i] = ((float)(bb[k0 / 2 + i] & 15) - z) * s;
                    o[blk * (size_t)g->bs + k0 + h + i] = ((float)(bb[k0 / 2 + i] >> 4) - z) * s;
                }
        }
    }
}

#if NBITS_X86
__attribute__((target("avx2,fma"))) static void dequant_avx2(const nbits_job *j, size_t n0, size_t n1, float *wt) {
    const rlx_nbits_geom *g = &j->g;
    size_t u = g->bs < 32 ? (size_t)g->bs : 32, h = u / 2;
    for (size_t n = n0; n < n1; n++) {
        float *o = wt + (n - n0) * j->kp;
        for (size_t blk = 0; blk < (size_t)g->nb; blk++) {
            float s = j->s[n * (size_t)g->nb + blk];
            __m256 vs = _mm256_set1_ps(s), vzs = _mm256_set1_ps(nbits_zp(j, n, blk)), wl, wh;
            const uint8_t *bb = j->b + (n * (size_t)g->nb + blk) * (size_t)g->blob;
            for (size_t k0 = 0; k0 < (size_t)g->bs; k0 += u)
                for (size_t i = 0; i < h; i += 8) {
                    avx2_weights(bb + k0 / 2 + i, vs, vzs, &wl, &wh);
                    _mm256_storeu_ps(o + blk * (size_t)g->bs + k0 + i, wl);
                    _mm256_storeu_ps(o + blk * (size_t)g->bs + k0 + h + i, wh);
                }
        }
    }
}
#endif

static void nbits_dequant_rows(const nbits_job *j, size_t n0, size_t n1, float *wt) {
#if NBITS_X86
    if (j->kernel != RLX_CPU_SGEMM_PORTABLE) {
        dequant_avx2(j, n0, n1, wt);
        return;
    }
#endif
    dequant_portable(j, n0, n1, wt);
}

static void tile_task(void *ctx, size_t t0, size_t t1) {
    const nbits_job *j = ctx;
    size_t N = (size_t)j->g.N;
    float *wt = malloc(NBITS_TILE * j->kp * sizeof(float));
    rlx_cpu_sgemm_packref pa = { j->apack, 0, 0 };
    for (size_t t = t0; t < t1; t++) {
        size_t n0 = t * NBITS_TILE, n1 = n0 + NBITS_TILE < N ? n0 + NBITS_TILE : N;
        if (!wt) { /* no memory for a tile: the GEMV, 8 rows at a time */
            for (size_t r0 = 0; r0 < j->m; r0 += NBITS_GEMV_ROWS) {
                nbits_job sub = *j;
                sub.m = j->m - r0 < NBITS_GEMV_ROWS ? j->m - r0 : NBITS_GEMV_ROWS;
                sub.a = j->a + r0 * j->kp;
                sub.y = j->y + r0 * N;
                gemv_task(&sub, n0, n1);
            }
            continue;
        }
        nbits_dequant_rows(j, n0, n1, wt);
        rlx_cpu_sgemm_serial_packed(false, true, j->m, n1 - n0, j->kp, 1.0f, j->a, j->kp, wt, j->kp, 0.0f, j->y + n0,
                                    N, j->apack ? &pa : NULL, NULL);
    }
    free(wt);
}

/* ------------------------------------------------------------ kernel */

/* Runs the product on f32 A [m, K] into f32 Y [m, N]. */
static rlx_status nbits_f32(rlx_cpu_kctx *k, nbits_job *j, const float *a) {
    if (k->reference) {
        nbits_reference(j, a);
        return RLX_OK;
    }
    const rlx_nbits_geom *g = &j->g;
    j->kernel = (int)rlx_cpu_sgemm_kernel_get();
    size_t N = (size_t)g->N;
    j->kp = (size_t)(g->nb * g->bs);
    size_t u = g->bs < 32 ? (size_t)g->bs : 32;
    float *ad = malloc(j->m * j->kp * sizeof(float) + 64);
    if (!ad) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "no memory for A (%zu x %zu f32)", j->m, j->kp);
    nbits_deinterleave(a, j->m, (size_t)g->K, j->kp, u, ad);
    j->a = ad;
    if (j->m > NBITS_GEMV_ROWS) {
        /* A packed once for every tile's GEMM (without memory: packed per tile) */
        rlx_cpu_sgemm_pack pack;
        bool packed = rlx_cpu_sgemm_pack_a(false, 1, j->m, j->kp, ad, j->kp, 0, &pack) == RLX_OK;
        j->apack = packed ? &pack : NULL;
        rlx_parallel_for((N + NBITS_TILE - 1) / NBITS_TILE, 1, tile_task, j);
        if (packed) rlx_cpu_sgemm_pack_free(&pack);
    } else {
        /* about 64 K weights per chunk: enough work to share out */
        rlx_parallel_for(N, (size_t)(65536 / g->K) + 1, gemv_task, j);
    }
    free(ad);
    return RLX_OK;
}

rlx_status rlx_cpu_matmul_nbits(rlx_cpu_kctx *k) {
    const rlx_tensor *A = k->in[0], *B = k->in[1], *S = k->in[2], *Z = k->n->n_in > 3 ? k->in[3] : NULL;
    rlx_tensor *Y = k->out[0];
    nbits_job j;
    memset(&j, 0, sizeof j);
    RLX_TRY(rlx_nbits_geom_of(k->n, &j.g));
    if (!A || !B || !S) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "A, B and scales are required");
    RLX_TRY(rlx_nbits_check_inputs(k->n, &j.g, B->dtype, rlx_tensor_numel(B), S->dtype, rlx_tensor_numel(S),
                                   Z != NULL, Z ? Z->dtype : RLX_DTYPE_U8, Z ? rlx_tensor_numel(Z) : 0));
    if ((A->dtype != RLX_DTYPE_F32 && A->dtype != RLX_DTYPE_F16) || Y->dtype != A->dtype || A->rank < 1 ||
        A->dims[A->rank - 1] != j.g.K)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "A must be f32 or f16 [.., K = %lld]", (long long)j.g.K);
    j.m = rlx_tensor_numel(A) / (size_t)j.g.K;
    if (rlx_tensor_numel(Y) != j.m * (size_t)j.g.N)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "Y has %zu elements, expected %zu", rlx_tensor_numel(Y),
                            j.m * (size_t)j.g.N);
    j.b = B->data;
    j.s = S->data;
    j.z = Z ? Z->data : NULL;
    if (j.m == 0) return RLX_OK;
    if (A->dtype == RLX_DTYPE_F32) {
        j.y = Y->data;
        return nbits_f32(k, &j, A->data);
    }
    size_t na = rlx_tensor_numel(A), ny = rlx_tensor_numel(Y);
    float *a = malloc(na * sizeof(float)), *y = malloc(ny * sizeof(float));
    rlx_status st = RLX_OK;
    if (!a || !y) st = rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "no memory for the f32 copies of A and Y");
    if (!st) {
        const uint16_t *ah = A->data;
        for (size_t i = 0; i < na; i++) a[i] = rlx_f16_to_f32(ah[i]);
        j.y = y;
        st = nbits_f32(k, &j, a);
    }
    if (!st) {
        uint16_t *yh = Y->data;
        for (size_t i = 0; i < ny; i++) yh[i] = rlx_f32_to_f16(y[i]);
    }
    free(a);
    free(y);
    return st;
}
