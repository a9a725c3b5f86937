/* The vector kernels of the recurrent product (cpu_rnn.c), one width per
 * inclusion. The includer defines RK_SFX (the kernels are then
 * rec_gemm_<SFX> and rec_gemv_<SFX>), RK_ATTR (the target), RK_BITS (the
 * vector width: 256 or 512, the _mm256_ / _mm512_ intrinsics), and
 * optionally RK_TAIL_GEMM, the narrower GEMM for the panels that do not
 * fill a tile. Column x of a run of packed panels (RF_NR columns each, P
 * floats apart) is at (x / RF_NR) * P + x % RF_NR: two vectors cover one
 * panel (W = 8) or two adjacent ones (W = 16). Each output is one chain of
 * fused multiply-adds in k order, so every width gives the same bits. */
#define RK_GLUE2(a, b) a##_##b
#define RK_GLUE(a, b) RK_GLUE2(a, b)
#define RK_CAT2(a, b, c) a##b##c
#define RK_CAT(a, b, c) RK_CAT2(a, b, c)
#define RK_W (RK_BITS / 32)
#define RK_V RK_CAT(__m, RK_BITS, )
#define RK_ZERO RK_CAT(_mm, RK_BITS, _setzero_ps)
#define RK_LOAD RK_CAT(_mm, RK_BITS, _loadu_ps)
#define RK_BCAST(p) RK_CAT(_mm, RK_BITS, _set1_ps)(*(p))
#define RK_FMA RK_CAT(_mm, RK_BITS, _fmadd_ps)
#define RK_STORE RK_CAT(_mm, RK_BITS, _storeu_ps)
#define RK_AT(x, P) ((size_t)(x) / RF_NR * (P) + (size_t)(x) % RF_NR)

/* c[tiles * 6 rows][2W columns at a time] as rec_gemm_c. */
RK_ATTR static void RK_GLUE(rec_gemm, RK_SFX)(size_t tiles, const float *a, size_t lda, const float *bp, size_t K,
                                              size_t panels, float *c, size_t ldc) {
    size_t q = 0, P = K * RF_NR, np = 2 * RK_W / RF_NR, o1 = RK_AT(RK_W, P);
    for (; q + np <= panels; q += np)
        for (size_t t = 0; t < tiles; t++) {
            const float *b = bp + q * P, *a0 = a + t * RF_MR * lda;
            RK_V c00 = RK_ZERO(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
                 c40 = c00, c41 = c00, c50 = c00, c51 = c00;
            for (size_t k = 0; k < K; k++, b += RF_NR) {
                RK_V b0 = RK_LOAD(b), b1 = RK_LOAD(b + o1), v;
#define RF_ROW(r, x0, x1)                \
    v = RK_BCAST(a0 + (r) * lda + k);    \
    x0 = RK_FMA(v, b0, x0);              \
    x1 = RK_FMA(v, b1, x1);
                RF_ROW(0, c00, c01) RF_ROW(1, c10, c11) RF_ROW(2, c20, c21)
                RF_ROW(3, c30, c31) RF_ROW(4, c40, c41) RF_ROW(5, c50, c51)
#undef RF_ROW
            }
            float *o = c + t * RF_MR * ldc + q * RF_NR;
            RK_STORE(o, c00), RK_STORE(o + RK_W, c01), o += ldc;
            RK_STORE(o, c10), RK_STORE(o + RK_W, c11), o += ldc;
            RK_STORE(o, c20), RK_STORE(o + RK_W, c21), o += ldc;
            RK_STORE(o, c30), RK_STORE(o + RK_W, c31), o += ldc;
            RK_STORE(o, c40), RK_STORE(o + RK_W, c41), o += ldc;
            RK_STORE(o, c50), RK_STORE(o + RK_W, c51);
        }
#ifdef RK_TAIL_GEMM
    if (q < panels) RK_TAIL_GEMM(tiles, a, lda, bp + q * P, K, panels - q, c + q * RF_NR, ldc);
#endif
}

/* The same product for `rows` single rows (batch 1 or 2): 8W columns at a
 * time (eight accumulators hide the latency of the FMAs), then one panel
 * at a time. */
RK_ATTR static void RK_GLUE(rec_gemv, RK_SFX)(size_t rows, const float *a, size_t lda, const float *bp, size_t K,
                                              size_t panels, float *c, size_t ldc) {
    size_t q = 0, P = K * RF_NR, np = 8 * RK_W / RF_NR;
    for (; q + np <= panels; q += np)
        for (size_t r = 0; r < rows; r++) {
            const float *ar = a + r * lda, *b = bp + q * P;
            RK_V x0 = RK_ZERO(), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0, x7 = x0;
#define RF_ACC(j, x) x = RK_FMA(v, RK_LOAD(b + RK_AT((j) * RK_W, P)), x);
            for (size_t k = 0; k < K; k++, b += RF_NR) {
                RK_V v = RK_BCAST(ar + k);
                RF_ACC(0, x0) RF_ACC(1, x1) RF_ACC(2, x2) RF_ACC(3, x3)
                RF_ACC(4, x4) RF_ACC(5, x5) RF_ACC(6, x6) RF_ACC(7, x7)
            }
#undef RF_ACC
            float *o = c + r * ldc + q * RF_NR;
            RK_STORE(o, x0), RK_STORE(o + RK_W, x1), RK_STORE(o + 2 * RK_W, x2), RK_STORE(o + 3 * RK_W, x3);
            RK_STORE(o + 4 * RK_W, x4), RK_STORE(o + 5 * RK_W, x5), RK_STORE(o + 6 * RK_W, x6);
            RK_STORE(o + 7 * RK_W, x7);
        }
    for (; q < panels; q++)
        for (size_t r = 0; r < rows; r++) {
            const float *ar = a + r * lda, *b = bp + q * P;
            RK_V x0 = RK_ZERO(), x1 = x0; /* x1: the panel's second half (W = 8) */
            for (size_t k = 0; k < K; k++, b += RF_NR) {
                RK_V v = RK_BCAST(ar + k);
                x0 = RK_FMA(v, RK_LOAD(b), x0);
                if (RK_W < RF_NR) x1 = RK_FMA(v, RK_LOAD(b + RK_W % RF_NR), x1);
            }
            RK_STORE(c + r * ldc + q * RF_NR, x0);
            if (RK_W < RF_NR) RK_STORE(c + r * ldc + q * RF_NR + RK_W % RF_NR, x1);
        }
}

#undef RK_GLUE2
#undef RK_GLUE
#undef RK_CAT2
#undef RK_CAT
#undef RK_AT
#undef RK_SFX
#undef RK_ATTR
#undef RK_BITS
#undef RK_W
#undef RK_V
#undef RK_ZERO
#undef RK_LOAD
#undef RK_BCAST
#undef RK_FMA
#undef RK_STORE
#undef RK_TAIL_GEMM
