/* rlx's CPU f32 GEMM (src/backend/cpu/cpu_sgemm.c): equal inputs give
 * equal outputs, and the products are right.
 *
 * For each shape (M, N, K: ones, primes, odd sizes, and the edges of the
 * 6 x 16 register tile, of the 120-row, 2048-column and 256-step blocks,
 * plus random ones), each transpose of A and B, padded leading dimensions,
 * and each micro-kernel this CPU runs (portable; AVX2 + FMA):
 *  - A with all rows equal, B random: every row of C is bitwise row 0
 *    (the OpenBLAS Haswell / Zen kernels failed this: groups of 6 rows
 *    rounded differently); B with all columns equal, A random, beta != 0
 *    on a C of equal columns: every column is bitwise column 0.
 *  - rlx_cpu_sgemm (split over the worker pool) equals
 *    rlx_cpu_sgemm_serial (one thread) bit for bit; ctest runs this
 *    program with 1, 3 and 5 worker threads and the default (one per core).
 *  - The epilogue of rlx_cpu_sgemm_serial_epi (test_epilogue): called on
 *    blocks that cover C once, each when its sums are final.
 *  - Packed operands (test_packs): the same bits as plain ones, and the
 *    AVX2 and AVX-512 kernels the same bits as each other.
 *  - Each AVX-512 register tile (test_tiles: 8 x 32, 8 x 48, 12 x 32,
 *    14 x 32) on shapes with every kind of edge tile and K across the
 *    256-step panels, each shape with one of the four transposes (the
 *    packing's vector transposes of A's rows and a transposed B's rows,
 *    K both a multiple of 8 and not): bitwise the scalar oracle of one fmaf chain per
 *    element, plain, with packed operands and with packs of another tile,
 *    in both loop orders and blocks of 96 columns (rlx_cpu_sgemm_blocking_set).
 *  - The 2-D split of BERT's and MiniLM's MatMuls over 16 threads
 *    (test_bert_splits: block counts and balance, no timing).
 *  - Against a double-precision reference (alpha 0.75, beta 1.5 on a random
 *    C; alpha 1, beta 0 on a C of NaNs, which must not leak): inputs in
 *    [-1, 1), float accumulation of K products is off by about K * 6e-8 in
 *    practice (K * 2^-24 * K worst case); allowed: 1e-5 * |ref| + 2e-6 * K.
 *    A wrong index or a missing term is off by ~0.1 or more. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"

typedef struct mat {
    float *v;
    size_t ld;
} mat;

/* op(X)[r, c] of a matrix stored [rows, cols] or, transposed, [cols, rows]. */
static float at(const mat *x, bool t, size_t r, size_t c) { return t ? x->v[c * x->ld + r] : x->v[r * x->ld + c]; }

/* Storage for op(X) of rows x cols: padded leading dimension, random. */
static mat mat_new(bool t, size_t rows, size_t cols) {
    mat x;
    size_t outer = t ? cols : rows, inner = t ? rows : cols;
    x.ld = inner + 3;
    x.v = malloc(outer * x.ld * sizeof(float));
    for (size_t i = 0; i < outer * x.ld; i++) x.v[i] = test_rand_uniform(-1.0f, 1.0f);
    return x;
}

static void mat_set(mat *x, bool t, size_t r, size_t c, float v) {
    if (t) x->v[c * x->ld + r] = v;
    else x->v[r * x->ld + c] = v;
}

static const char *kernel_name(rlx_cpu_sgemm_kernel k) {
    return k == RLX_CPU_SGEMM_AVX512 ? "avx512" : k == RLX_CPU_SGEMM_AVX2 ? "avx2" : "portable";
}

/* C [m, n] (ldc n + 5) by the pool and by one thread: bitwise equal? */
static bool run_both(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const mat *a, const mat *b,
                     float beta, const float *c0, size_t ldc, float *c, float *c_serial) {
    memcpy(c, c0, m * ldc * sizeof *c);
    memcpy(c_serial, c0, m * ldc * sizeof *c);
    rlx_cpu_sgemm(ta, tb, m, n, k, alpha, a->v, a->ld, b->v, b->ld, beta, c, ldc);
    rlx_cpu_sgemm_serial(ta, tb, m, n, k, alpha, a->v, a->ld, b->v, b->ld, beta, c_serial, ldc);
    return memcmp(c, c_serial, m * ldc * sizeof *c) == 0;
}

static void test_shape(rlx_cpu_sgemm_kernel kern, bool ta, bool tb, size_t m, size_t n, size_t k) {
    char what[128];
    snprintf(what, sizeof what, "%s ta %d tb %d m %zu n %zu k %zu", kernel_name(kern), ta, tb, m, n, k);
    mat a = mat_new(ta, m, k), b = mat_new(tb, k, n);
    size_t ldc = n + 5;
    float *c0 = malloc(m * ldc * sizeof(float)), *c = malloc(m * ldc * sizeof(float));
    float *cs = malloc(m * ldc * sizeof(float));
    for (size_t i = 0; i < m * ldc; i++) c0[i] = test_rand_uniform(-1.0f, 1.0f);

    /* against the double reference: alpha 0.75, beta 1.5; then beta 0 on NaNs */
    for (int pass = 0; pass < 2; pass++) {
        float alpha = pass ? 1.0f : 0.75f, beta = pass ? 0.0f : 1.5f;
        float *init = c0;
        float *nan_c = NULL;
        if (pass) {
            nan_c = malloc(m * ldc * sizeof(float));
            for (size_t i = 0; i < m * ldc; i++) nan_c[i] = NAN;
            init = nan_c;
        }
        CHECK_MSG(run_both(ta, tb, m, n, k, alpha, &a, &b, beta, init, ldc, c, cs), "%s: pool != serial (pass %d)",
                  what, pass);
        int bad = 0;
        double worst = 0.0;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0.0;
                for (size_t p = 0; p < k; p++) s += (double)at(&a, ta, i, p) * (double)at(&b, tb, p, j);
                double ref = alpha * s + (pass ? 0.0 : beta * (double)c0[i * ldc + j]);
                double err = fabs((double)c[i * ldc + j] - ref);
                if (!(err <= 1e-5 * fabs(ref) + 2e-6 * (double)k)) bad++;
                if (!(err <= worst)) worst = err;
            }
        for (size_t i = 0; i < m; i++) /* the padding past n is not written */
            for (size_t j = n; j < ldc; j++)
                if (memcmp(&c[i * ldc + j], &init[i * ldc + j], sizeof(float)) != 0) bad++;
        CHECK_MSG(bad == 0, "%s: %d elements off the reference (worst %g, pass %d)", what, bad, worst, pass);
        free(nan_c);
    }

    /* all rows of A equal (beta 0): every row of C is row 0 */
    for (size_t i = 1; i < m; i++)
        for (size_t p = 0; p < k; p++) mat_set(&a, ta, i, p, at(&a, ta, 0, p));
    CHECK_MSG(run_both(ta, tb, m, n, k, 1.0f, &a, &b, 0.0f, c0, ldc, c, cs), "%s: equal rows: pool != serial", what);
    int rows_differ = 0;
    for (size_t i = 1; i < m; i++)
        if (memcmp(c + i * ldc, c, n * sizeof *c) != 0) rows_differ++;
    CHECK_MSG(rows_differ == 0, "%s: %d of %zu rows differ from row 0", what, rows_differ, m);

    /* all columns of B equal, A random again, beta 1.5 on a C of equal
     * columns: every column of C is column 0 */
    free(a.v);
    a = mat_new(ta, m, k);
    for (size_t j = 1; j < n; j++)
        for (size_t p = 0; p < k; p++) mat_set(&b, tb, p, j, at(&b, tb, p, 0));
    for (size_t i = 0; i < m; i++)
        for (size_t j = 1; j < n; j++) c0[i * ldc + j] = c0[i * ldc];
    CHECK_MSG(run_both(ta, tb, m, n, k, 0.75f, &a, &b, 1.5f, c0, ldc, c, cs), "%s: equal columns: pool != serial",
              what);
    int cols_differ = 0;
    for (size_t j = 1; j < n; j++)
        for (size_t i = 0; i < m; i++)
            if (memcmp(&c[i * ldc + j], &c[i * ldc], sizeof *c) != 0) {
                cols_differ++;
                break;
            }
    CHECK_MSG(cols_differ == 0, "%s: %d of %zu columns differ from column 0", what, cols_differ, n);

    free(a.v), free(b.v), free(c0), free(c), free(cs);
}

static const size_t g_shapes[][3] = {
    { 1, 1, 1 },      { 1, 16, 1 },     { 6, 16, 256 },   { 5, 15, 255 },   { 7, 17, 257 },  { 2, 3, 5 },
    { 13, 31, 7 },    { 11, 97, 513 },  { 119, 33, 64 },  { 120, 16, 300 }, { 121, 131, 257 }, { 127, 200, 129 },
    { 250, 37, 19 },  { 7, 2049, 33 },  { 3, 2048, 2 },   { 97, 61, 1031 }, { 64, 1000, 27 }, { 1000, 7, 64 },
    { 241, 67, 131 }, { 12, 32, 1 },    { 18, 48, 512 },  { 37, 1, 300 },   { 1, 523, 77 },  { 200, 96, 9 },
};

/* Packed operands (rlx_cpu_sgemm_pack_a / _b, made under the default
 * kernel): for each kernel, each transpose, groups of A and sub-products
 * starting inside the packs (rows / columns from a panel boundary), the
 * packed product (pool and serial) equals the plain one bitwise; a kernel
 * other than the pack's ignores the pack (also bitwise). And the AVX2 and
 * AVX-512 kernels give the same bits (both one fused multiply-add chain per
 * element). */
static void test_packs(const rlx_cpu_sgemm_kernel *kernels, int n_kernels, rlx_cpu_sgemm_kernel def) {
    static const size_t shapes[][3] = { { 37, 75, 300 }, { 64, 49, 576 }, { 1, 1000, 70 }, { 130, 33, 1 }, { 8, 32, 257 } };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], groups = 3;
            mat a = mat_new(ta, m * groups, k), b = mat_new(tb, k, n);
            size_t ldc = n + 2;
            float *c[2], *cs[2], *ref = malloc(m * ldc * sizeof(float));
            for (int i = 0; i < 2; i++) c[i] = malloc(m * ldc * sizeof(float)), cs[i] = malloc(m * ldc * sizeof(float));
            CHECK(rlx_cpu_sgemm_kernel_set(def));
            rlx_cpu_sgemm_pack pa, pb;
            /* group g: rows [g m, (g + 1) m) of op(A) */
            size_t gstride = ta ? m : m * a.ld;
            CHECK_OK(rlx_cpu_sgemm_pack_a(ta, groups, m, k, a.v, a.ld, gstride, &pa));
            CHECK_OK(rlx_cpu_sgemm_pack_b(tb, k, n, b.v, b.ld, &pb));
            float *prev = NULL;
            for (int kk = 0; kk < n_kernels; kk++) {
                if (!rlx_cpu_sgemm_kernel_set(kernels[kk])) continue;
                for (size_t g = 0; g < groups; g++) {
                    const float *ag = a.v + g * gstride;
                    /* rows from `first` (a multiple of 8 and of 6 when it fits) */
                    size_t first = m > 24 ? 24 : 0, mm = m - first, nn = n > 48 ? n - 48 : n, c0 = n - nn;
                    const float *asub = ta ? ag + first : ag + first * a.ld;
                    const float *bsub = tb ? b.v + c0 * b.ld : b.v + c0;
                    rlx_cpu_sgemm_packref ra = { &pa, g, first }, rb = { &pb, 0, c0 };
                    for (size_t i = 0; i < m * ldc; i++) ref[i] = c[0][i] = c[1][i] = cs[0][i] = cs[1][i] = 0.5f;
                    rlx_cpu_sgemm(ta, tb, mm, nn, k, 0.75f, asub, a.ld, bsub, b.ld, 1.5f, ref, ldc);
                    rlx_cpu_sgemm_packed(ta, tb, mm, nn, k, 0.75f, asub, a.ld, bsub, b.ld, 1.5f, c[0], ldc, &ra, NULL);
                    rlx_cpu_sgemm_packed(ta, tb, mm, nn, k, 0.75f, asub, a.ld, bsub, b.ld, 1.5f, c[1], ldc, &ra, &rb);
                    rlx_cpu_sgemm_serial_packed(ta, tb, mm, nn, k, 0.75f, asub, a.ld, bsub, b.ld, 1.5f, cs[0], ldc,
                                                NULL, &rb);
                    rlx_cpu_sgemm_serial_packed(ta, tb, mm, nn, k, 0.75f, asub, a.ld, bsub, b.ld, 1.5f, cs[1], ldc,
                                                &ra, &rb);
                    size_t bytes = m * ldc * sizeof(float);
                    bool same = !memcmp(ref, c[0], bytes) && !memcmp(ref, c[1], bytes) && !memcmp(ref, cs[0], bytes) &&
                                !memcmp(ref, cs[1], bytes);
                    CHECK_MSG(same, "%s: packs ta %d tb %d m %zu n %zu k %zu group %zu: not the plain bits",
                              kernel_name(kernels[kk]), ta, tb, m, n, k, g);
                    if (g == 0 && kernels[kk] != RLX_CPU_SGEMM_PORTABLE) { /* the FMA kernels agree */
                        if (prev)
                            CHECK_MSG(!memcmp(prev, ref, bytes), "%s: not the bits of the other FMA kernel",
                                      kernel_name(kernels[kk]));
                        else {
                            prev = malloc(bytes);
                            memcpy(prev, ref, bytes);
                        }
                    }
                }
            }
            rlx_cpu_sgemm_pack_free(&pa), rlx_cpu_sgemm_pack_free(&pb);
            free(prev), free(ref), free(a.v), free(b.v);
            for (int i = 0; i < 2; i++) free(c[i]), free(cs[i]);
        }
    CHECK(rlx_cpu_sgemm_kernel_set(def));
}

/* The scalar oracle of the FMA kernels' arithmetic: per element, each
 * panel of 256 k steps summed from 0 as a chain of fmaf in k order, the
 * panel's sum s landing as c = fmaf(beta, c, alpha * s) (first panel;
 * alpha * s when beta is 0) or fmaf(alpha, s, c) (later panels). */
static void fma_oracle_t(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const mat *a, const mat *b,
                         float beta, float *c, size_t ldc) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float *d = &c[i * ldc + j];
            for (size_t p0 = 0; p0 < k; p0 += RLX_CPU_SGEMM_KC) {
                float s = 0.0f;
                size_t p1 = p0 + RLX_CPU_SGEMM_KC < k ? p0 + RLX_CPU_SGEMM_KC : k;
                for (size_t p = p0; p < p1; p++) s = fmaf(at(a, ta, i, p), at(b, tb, p, j), s);
                if (p0 > 0) *d = fmaf(alpha, s, *d);
                else *d = beta == 0.0f ? alpha * s : fmaf(beta, *d, alpha * s);
            }
        }
}

/* One-row products (M = 1, cpu_sgemm.c's gemv_row) with each FMA kernel
 * and AVX-512 tile: N around the vector widths (8, 16), the tiles' panels
 * (16, 32, 48) and groups of 8 vectors, K across the 256-step panels, each
 * transpose, beta 0 and 1.5, B plain and packed (from column 0 and from a
 * later panel), A plain and packed: pool and one thread bitwise the scalar FMA oracle (so also
 * the bits of the same row inside a larger product), the columns past N
 * untouched. */
static void test_gemv(void) {
    static const size_t ns[] = { 1, 7, 8, 9, 15, 16, 17, 31, 33, 47, 49, 100, 129, 200, 1000, 2100 };
    static const size_t ks[] = { 1, 3, 255, 256, 257, 600 };
    rlx_cpu_sgemm_kernel keep = rlx_cpu_sgemm_kernel_get();
    rlx_cpu_sgemm_avx512_tile keep_tile = rlx_cpu_sgemm_avx512_tile_get();
    int runs = 0;
    for (int kern = RLX_CPU_SGEMM_AVX2; kern <= RLX_CPU_SGEMM_AVX512 + RLX_CPU_SGEMM_TILE_COUNT - 1; kern++) {
        if (!rlx_cpu_sgemm_kernel_set(kern >= RLX_CPU_SGEMM_AVX512 ? RLX_CPU_SGEMM_AVX512 : RLX_CPU_SGEMM_AVX2)) continue;
        if (kern >= RLX_CPU_SGEMM_AVX512)
            CHECK(rlx_cpu_sgemm_avx512_tile_set((rlx_cpu_sgemm_avx512_tile)(kern - RLX_CPU_SGEMM_AVX512)));
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                size_t n = ns[ni], k = ks[ki], ldc = n + 7;
                if (kern > RLX_CPU_SGEMM_AVX512 && (ki % 2 || ni % 2)) continue; /* the other tiles: fewer shapes */
                int t = (int)((ni + ki) % 4);
                bool ta = t & 1, tb = t & 2;
                mat a = mat_new(ta, 1, k), b = mat_new(tb, k, n);
                float *c0 = malloc(ldc * sizeof(float)), *want = malloc(ldc * sizeof(float));
                float *got = malloc(ldc * sizeof(float)), *got1 = malloc(ldc * sizeof(float));
                for (size_t j = 0; j < ldc; j++) c0[j] = test_rand_uniform(-1.0f, 1.0f);
                rlx_cpu_sgemm_pack pb, pa;
                CHECK_OK(rlx_cpu_sgemm_pack_b(tb, k, n, b.v, b.ld, &pb));
                CHECK_OK(rlx_cpu_sgemm_pack_a(ta, 1, 1, k, a.v, a.ld, 0, &pa));
                size_t a_len = (ta ? k : 1) * a.ld;
                float *a_keep = malloc(a_len * sizeof(float));
                memcpy(a_keep, a.v, a_len * sizeof(float));
                size_t nr, mr;
                rlx_cpu_sgemm_tile(&mr, &nr);
                for (int pass = 0; pass < 8; pass++) {
                    /* passes 2-3 from the pack's column 0, 4-5 from its second
                     * panel, 6-7 with A packed too (the plain A poisoned
                     * meanwhile: the product must read the pack) */
                    float beta = pass % 2 ? 1.5f : 0.0f;
                    size_t first = pass >= 4 && n > nr ? nr : 0, nn = n - first;
                    rlx_cpu_sgemm_packref rb = { &pb, 0, first };
                    const float *bsub = tb ? b.v + first * b.ld : b.v + first;
                    memcpy(want, c0, ldc * sizeof(float));
                    mat bs = { (float *)bsub, b.ld };
                    fma_oracle_t(ta, tb, 1, nn, k, 0.75f, &a, &bs, beta, want, ldc);
                    memcpy(got, c0, ldc * sizeof(float));
                    memcpy(got1, c0, ldc * sizeof(float));
                    const rlx_cpu_sgemm_packref *prb = pass >= 2 ? &rb : NULL;
                    rlx_cpu_sgemm_packref ra = { &pa, 0, 0 };
                    const rlx_cpu_sgemm_packref *pra = pass >= 6 ? &ra : NULL;
                    if (pra)
                        for (size_t i = 0; i < a_len; i++) a.v[i] = NAN;
                    rlx_cpu_sgemm_packed(ta, tb, 1, nn, k, 0.75f, a.v, a.ld, bsub, b.ld, beta, got, ldc, pra, prb);
                    rlx_cpu_sgemm_serial_packed(ta, tb, 1, nn, k, 0.75f, a.v, a.ld, bsub, b.ld, beta, got1, ldc, pra,
                                                prb);
                    memcpy(a.v, a_keep, a_len * sizeof(float));
                    size_t bad = 0;
                    for (size_t j = 0; j < ldc; j++)
                        bad += memcmp(&got[j], &want[j], sizeof(float)) != 0 || memcmp(&got1[j], &want[j], sizeof(float)) != 0;
                    CHECK_MSG(bad == 0, "gemv %s tile %s ta %d tb %d n %zu k %zu pass %d: %zu elements not the FMA oracle's",
                              kernel_name(rlx_cpu_sgemm_kernel_get()),
                              rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile_get()), ta, tb, nn, k, pass, bad);
                    runs++;
                }
                rlx_cpu_sgemm_pack_free(&pb), rlx_cpu_sgemm_pack_free(&pa);
                free(a.v), free(a_keep), free(b.v), free(c0), free(want), free(got), free(got1);
            }
    }
    CHECK(rlx_cpu_sgemm_avx512_tile_set(keep_tile));
    CHECK(rlx_cpu_sgemm_kernel_set(keep));
    fprintf(stderr, "gemv: %d runs\n", runs);
}

/* Each AVX-512 register tile (8 x 32, 8 x 48, 12 x 32, 14 x 32) on shapes
 * with edge tiles of every kind (M not a multiple of 8, 12 or 14; N of at
 * most 16, 17 to 32, 33 to 47 columns past the last whole tile; K across
 * the 256-step panels): the product (pool and one thread, beta 0 and 1.5)
 * equals the scalar FMA oracle bit for bit; with operands packed under the
 * tile, and with packs made under another tile (which the product must
 * ignore), the same bits again. */
static void test_tiles(void) {
    if (!rlx_cpu_sgemm_kernel_set(RLX_CPU_SGEMM_AVX512)) {
        fprintf(stderr, "AVX-512 tiles: not on this CPU, skipped\n");
        return;
    }
    static const size_t shapes[][3] = { { 8, 32, 256 },  { 12, 48, 257 }, { 14, 96, 513 }, { 13, 49, 100 },
                                        { 29, 81, 300 }, { 41, 17, 31 },  { 57, 113, 768 }, { 1, 1, 1 },
                                        { 130, 47, 255 }, { 100, 200, 64 }, { 9, 2100, 40 } };
    rlx_cpu_sgemm_avx512_tile keep = rlx_cpu_sgemm_avx512_tile_get();
    for (int t = 0; t < RLX_CPU_SGEMM_TILE_COUNT; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], ldc = n + 3;
            /* each shape with one of the four transposes (the packing's
             * transposing cases: rows of A, a transposed B's rows) */
            bool ta = (si + (size_t)t) & 1, tb = (si + (size_t)t) & 2;
            const char *tn = rlx_cpu_sgemm_avx512_tile_name((rlx_cpu_sgemm_avx512_tile)t);
            mat a = mat_new(ta, m, k), b = mat_new(tb, k, n);
            size_t bytes = m * ldc * sizeof(float);
            float *c0 = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes), *got1 = malloc(bytes);
            for (size_t i = 0; i < m * ldc; i++) c0[i] = test_rand_uniform(-1.0f, 1.0f);
            /* packs under another tile (t + 1), then under this one */
            CHECK(rlx_cpu_sgemm_avx512_tile_set((rlx_cpu_sgemm_avx512_tile)((t + 1) % RLX_CPU_SGEMM_TILE_COUNT)));
            rlx_cpu_sgemm_pack opa, opb, pa, pb;
            CHECK_OK(rlx_cpu_sgemm_pack_a(ta, 1, m, k, a.v, a.ld, 0, &opa));
            CHECK_OK(rlx_cpu_sgemm_pack_b(tb, k, n, b.v, b.ld, &opb));
            CHECK(rlx_cpu_sgemm_avx512_tile_set((rlx_cpu_sgemm_avx512_tile)t));
            CHECK_OK(rlx_cpu_sgemm_pack_a(ta, 1, m, k, a.v, a.ld, 0, &pa));
            CHECK_OK(rlx_cpu_sgemm_pack_b(tb, k, n, b.v, b.ld, &pb));
            rlx_cpu_sgemm_packref ra = { &pa, 0, 0 }, rb = { &pb, 0, 0 }, ora = { &opa, 0, 0 }, orb = { &opb, 0, 0 };
            for (int pass = 0; pass < 2; pass++) {
                float beta = pass ? 1.5f : 0.0f;
                memcpy(want, c0, bytes);
                fma_oracle_t(ta, tb, m, n, k, 0.75f, &a, &b, beta, want, ldc);
                for (int way = 0; way < 7; way++) {
                    /* ways 4, 5: the other loop order (B's panels outside A's), blocks of 96 columns;
                     * way 6: the default blocking */
                    if (way == 6) rlx_cpu_sgemm_blocking_reset();
                    else CHECK(rlx_cpu_sgemm_blocking_set(way >= 4, way < 4 ? 2048 : 100));
                    memcpy(got, c0, bytes);
                    memcpy(got1, c0, bytes);
                    const rlx_cpu_sgemm_packref *pra =
                        way == 1 || way == 2 || way == 5 || way == 6 ? &ra : way == 3 ? &ora : NULL;
                    const rlx_cpu_sgemm_packref *prb = way == 2 || way == 5 ? &rb : way == 3 ? &orb : NULL;
                    rlx_cpu_sgemm_packed(ta, tb, m, n, k, 0.75f, a.v, a.ld, b.v, b.ld, beta, got, ldc, pra, prb);
                    rlx_cpu_sgemm_serial_packed(ta, tb, m, n, k, 0.75f, a.v, a.ld, b.v, b.ld, beta, got1, ldc, pra,
                                                prb);
                    size_t bad = 0;
                    for (size_t i = 0; i < m * ldc; i++)
                        bad += memcmp(&got[i], &want[i], sizeof(float)) != 0 || memcmp(&got1[i], &want[i], sizeof(float)) != 0;
                    CHECK_MSG(bad == 0,
                              "tile %s m %zu n %zu k %zu ta %d tb %d beta %g packs %d: %zu elements not the FMA "
                              "oracle's bits",
                              tn, m, n, k, (int)ta, (int)tb, (double)beta, way, bad);
                }
            }
            rlx_cpu_sgemm_pack_free(&opa), rlx_cpu_sgemm_pack_free(&opb);
            rlx_cpu_sgemm_pack_free(&pa), rlx_cpu_sgemm_pack_free(&pb);
            free(a.v), free(b.v), free(c0), free(want), free(got), free(got1);
        }
    CHECK(rlx_cpu_sgemm_avx512_tile_set(keep));
    rlx_cpu_sgemm_blocking_reset();
    /* names and bad input */
    CHECK(!rlx_cpu_sgemm_blocking_set(true, 4096) && !rlx_cpu_sgemm_blocking_set(true, 8));
    CHECK(!rlx_cpu_sgemm_avx512_tile_set(RLX_CPU_SGEMM_TILE_COUNT));
    CHECK_FAILS(rlx_cpu_sgemm_avx512_tile_choose("9x9"), RLX_ERR_INVALID_ARGUMENT, "cpu.sgemm_tile=9x9");
    CHECK_FAILS(rlx_cpu_sgemm_avx512_tile_choose("12x32"), RLX_ERR_INVALID_ARGUMENT, "cpu.sgemm_tile=12x32");
    /* the first choice fixes the tile; the same again is fine, another fails */
    const char *now = rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile_get());
    const char *other = strcmp(now, "8x48") == 0 ? "8x32" : "8x48";
    CHECK_OK(rlx_cpu_sgemm_avx512_tile_choose(now));
    CHECK_OK(rlx_cpu_sgemm_avx512_tile_choose(now));
    CHECK_FAILS(rlx_cpu_sgemm_avx512_tile_choose(other), RLX_ERR_INVALID_ARGUMENT, "per process");
    CHECK(strcmp(rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile_get()), now) == 0);
    CHECK(strcmp(rlx_cpu_sgemm_avx512_tile_name(RLX_CPU_SGEMM_TILE_12X32), "12x32") == 0);
}

/* How rlx_cpu_sgemm splits BERT-base's and MiniLM's MatMuls (B packed
 * beforehand) at batch 1 (M = 128) and 8 (M = 1024) over 16 threads (the
 * 16-core host's count; counts, no timing): at least one block per thread,
 * and the largest block's multiply-adds within 10% of an even share of the
 * product (a split whose blocks cannot feed every thread, or that leaves
 * one thread twice the work of the others, fails). */
static void test_bert_splits(void) {
    static const size_t shapes[][3] = { { 128, 768, 768 },  { 128, 768, 3072 },  { 128, 3072, 768 },
                                        { 1024, 768, 768 }, { 1024, 768, 3072 }, { 1024, 3072, 768 },
                                        { 128, 384, 384 },  { 128, 384, 1536 },  { 128, 1536, 384 },
                                        { 1024, 384, 384 }, { 1024, 384, 1536 }, { 1024, 1536, 384 } };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t m = shapes[si][0], k = shapes[si][1], n = shapes[si][2], t = 16;
        rlx_cpu_split2d_req q = { 1, m, n, k, 8, 32, 0, 8.0 * (double)k, 6.0 * (double)k, t, (double)(1 << 18), 0 };
        rlx_cpu_split2d sp = rlx_cpu_split2d_choose(&q);
        size_t blocks = sp.m_blocks * sp.n_blocks, r0, rows, c0, cols;
        rlx_cpu_block_range(m, 8, sp.m_blocks, 0, &r0, &rows); /* block 0 is the largest */
        rlx_cpu_block_range(n, 32, sp.n_blocks, 0, &c0, &cols);
        size_t waves = (blocks + t - 1) / t;
        double over = (double)waves * (double)rows * (double)cols / ((double)m * (double)n / (double)t);
        CHECK_MSG(blocks >= t && over <= 1.1,
                  "MatMul %zu x %zu x %zu on %zu threads: %zu x %zu blocks, the slowest thread %.2f of an even share",
                  m, k, n, t, sp.m_blocks, sp.n_blocks, over);
    }
}

/* rlx_cpu_sgemm_serial_epi's epilogue (test_epilogue): each call's block
 * must be inside C, its sums final (the bits of the product without an
 * epilogue) and seen once; the epilogue then writes 2 c + 1. */
typedef struct epi_check {
    const float *ref; /* the product without an epilogue */
    float *c;
    size_t m, n, ldc;
    unsigned char *seen; /* [m * n] */
    bool ok;
    int calls;
} epi_check;

static void epi_visit(void *ctx, size_t i0, size_t m, size_t j0, size_t n) {
    epi_check *e = ctx;
    e->calls++;
    if (i0 + m > e->m || j0 + n > e->n || !m || !n) {
        e->ok = false;
        return;
    }
    for (size_t i = i0; i < i0 + m; i++)
        for (size_t j = j0; j < j0 + n; j++) {
            float *v = e->c + i * e->ldc + j;
            if (e->seen[i * e->n + j]++ || memcmp(v, e->ref + i * e->ldc + j, sizeof *v)) e->ok = false;
            *v = 2.0f * *v + 1.0f;
        }
}

/* The epilogue of rlx_cpu_sgemm_serial_epi on each kernel, over several
 * row blocks (m past 128), column blocks (n past 2048), k panels (k past
 * 256), with packed A, the one-row product (m 1), an empty k, and the
 * blocks of C from a row and column inside a larger matrix (ldc). */
static void test_epilogue(const rlx_cpu_sgemm_kernel *kernels, int n_kernels, rlx_cpu_sgemm_kernel def) {
    static const size_t shapes[][3] = { { 300, 70, 40 }, { 20, 2100, 9 }, { 37, 75, 600 }, { 1, 300, 70 },
                                        { 130, 33, 0 }, { 256, 196, 256 } };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int kk = 0; kk < n_kernels; kk++) {
            if (!rlx_cpu_sgemm_kernel_set(kernels[kk])) continue;
            size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], ldc = n + 7;
            bool ta = si % 2, tb = si % 3 == 0;
            mat a = mat_new(ta, m, k ? k : 1), b = mat_new(tb, k ? k : 1, n);
            rlx_cpu_sgemm_pack pa;
            memset(&pa, 0, sizeof pa);
            if (k) CHECK_OK(rlx_cpu_sgemm_pack_a(ta, 1, m, k, a.v, a.ld, 0, &pa));
            float *ref = malloc(m * ldc * sizeof(float)), *c = malloc(m * ldc * sizeof(float));
            unsigned char *seen = malloc(m * n);
            for (int packed = 0; packed < (k ? 2 : 1); packed++) {
                for (size_t i = 0; i < m * ldc; i++) ref[i] = c[i] = test_rand_uniform(-1.0f, 1.0f);
                rlx_cpu_sgemm_packref ra = { &pa, 0, 0 };
                rlx_cpu_sgemm_serial_packed(ta, tb, m, n, k, 0.75f, a.v, a.ld, b.v, b.ld, 0.0f, ref, ldc,
                                            packed ? &ra : NULL, NULL);
                memset(seen, 0, m * n);
                epi_check e = { ref, c, m, n, ldc, seen, true, 0 };
                rlx_cpu_sgemm_serial_epi(ta, tb, m, n, k, 0.75f, a.v, a.ld, b.v, b.ld, 0.0f, c, ldc,
                                         packed ? &ra : NULL, NULL, epi_visit, &e);
                bool all = true;
                for (size_t i = 0; i < m * n; i++) all = all && seen[i] == 1;
                for (size_t i = 0; i < m && all; i++)
                    for (size_t j = 0; j < n; j++) {
                        float want = 2.0f * ref[i * ldc + j] + 1.0f;
                        if (memcmp(&want, c + i * ldc + j, sizeof want)) all = false;
                    }
                CHECK_MSG(e.ok && all, "%s: epilogue m %zu n %zu k %zu packed %d: blocks wrong (%d calls)",
                          kernel_name(kernels[kk]), m, n, k, packed, e.calls);
            }
            if (k) rlx_cpu_sgemm_pack_free(&pa);
            free(ref), free(c), free(seen), free(a.v), free(b.v);
        }
    CHECK(rlx_cpu_sgemm_kernel_set(def));
}

int main(void) {
    test_seed(test_seed_from_env());
    fprintf(stderr, "worker threads: %d, default kernel: %s\n", rlx_parallel_threads(),
            kernel_name(rlx_cpu_sgemm_kernel_get()));
    rlx_cpu_sgemm_kernel kernels[3] = { RLX_CPU_SGEMM_PORTABLE, RLX_CPU_SGEMM_AVX2, RLX_CPU_SGEMM_AVX512 };
    rlx_cpu_sgemm_kernel def = rlx_cpu_sgemm_kernel_get();
    test_bert_splits();
    int shapes = 0;
    for (int kk = 0; kk < 3; kk++) {
        if (!rlx_cpu_sgemm_kernel_set(kernels[kk])) {
            fprintf(stderr, "kernel %s: not on this CPU, skipped\n", kernel_name(kernels[kk]));
            continue;
        }
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            for (size_t s = 0; s < sizeof g_shapes / sizeof g_shapes[0]; s++, shapes++)
                test_shape(kernels[kk], ta, tb, g_shapes[s][0], g_shapes[s][1], g_shapes[s][2]);
            for (int r = 0; r < 6; r++, shapes++)
                test_shape(kernels[kk], ta, tb, 1 + test_rand_u64() % 150, 1 + test_rand_u64() % 150,
                           1 + test_rand_u64() % 600);
        }
    }
    CHECK(rlx_cpu_sgemm_kernel_set(def));
    test_packs(kernels, 3, def);
    test_epilogue(kernels, 3, def);
    test_tiles();
    CHECK(rlx_cpu_sgemm_kernel_set(def));
    test_gemv();
    fprintf(stderr, "shapes: %d\n", shapes);
    TEST_MAIN_END();
}
