/* The vector micro-kernels of cpu_sgemm.c, one width per inclusion. The
 * includer defines SK_SFX (the kernels are then kern_<SFX>, its full
 * tile, and kern_half_<SFX>, its left half), SK_ATTR (the target),
 * SK_BITS (the vector width: 256 or 512, the _mm256_ / _mm512_
 * intrinsics; W = SK_BITS / 32 lanes), SK_MR (rows) and SK_ROWS(X) (X(0)
 * ... X(SK_MR - 1)). The tile is SK_MR x 2W, its half SK_MR x W; both take
 * the same chain of fused multiply-adds per element in k order and the
 * same update, so every width (and each half) gives the same bits. */
#define SK_GLUE2(a, b) a##_##b
#define SK_GLUE(a, b) SK_GLUE2(a, b)
#define SK_CAT2(a, b, c) a##b##c
#define SK_CAT(a, b, c) SK_CAT2(a, b, c)
#define SK_W (SK_BITS / 32)
#define SK_V SK_CAT(__m, SK_BITS, )
#define SK_ZERO SK_CAT(_mm, SK_BITS, _setzero_ps)
#define SK_LOADU SK_CAT(_mm, SK_BITS, _loadu_ps)
#define SK_SET1 SK_CAT(_mm, SK_BITS, _set1_ps)
#define SK_MUL SK_CAT(_mm, SK_BITS, _mul_ps)
#define SK_FMA SK_CAT(_mm, SK_BITS, _fmadd_ps)
#define SK_STORE SK_CAT(_mm, SK_BITS, _storeu_ps)

/* One vector of the update: c = alpha * acc, fma(beta, c, alpha * acc) or
 * fma(alpha, acc, c). */
SK_ATTR static inline void SK_GLUE(upd, SK_SFX)(float *dst, SK_V acc, SK_V va, SK_V vb, int upd) {
    if (upd == UPD_SET) acc = SK_MUL(va, acc);
    else if (upd == UPD_BETA) acc = SK_FMA(vb, SK_LOADU(dst), SK_MUL(va, acc));
    else acc = SK_FMA(va, acc, SK_LOADU(dst));
    SK_STORE(dst, acc);
}

/* 2 * SK_MR accumulators in registers (named, so that the compiler keeps
 * them there), one fused multiply-add per product. */
SK_ATTR static void SK_GLUE(kern, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                          float alpha, float beta, int upd) {
#define SK_DECL(i) SK_V c##i##0 = SK_ZERO(), c##i##1 = c##i##0;
#define SK_ROW(i)                                                                                    \
    {                                                                                                \
        SK_V a = SK_SET1(ap[i]);                                                                     \
        c##i##0 = SK_FMA(a, b0, c##i##0), c##i##1 = SK_FMA(a, b1, c##i##1);                          \
    }
#define SK_UPD(i)                                                                                    \
    SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i##0, va, vb, upd);                               \
    SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc + SK_W, c##i##1, va, vb, upd);
    SK_ROWS(SK_DECL)
#pragma GCC unroll 4
    for (size_t p = 0; p < kc; p++, ap += SK_MR, bp += 2 * SK_W) {
        SK_V b0 = SK_LOADU(bp), b1 = SK_LOADU(bp + SK_W);
        SK_ROWS(SK_ROW)
    }
    SK_V va = SK_SET1(alpha), vb = SK_SET1(beta);
    SK_ROWS(SK_UPD)
}

/* The left half (columns 0 to W - 1 of the tile, the same operations lane
 * for lane), for edge tiles of at most W columns. */
SK_ATTR static void SK_GLUE(kern_half, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                               float alpha, float beta, int upd) {
#define SK_DECL1(i) SK_V c##i = SK_ZERO();
#define SK_ROW1(i) c##i = SK_FMA(SK_SET1(ap[i]), b0, c##i);
#define SK_UPD1(i) SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i, va, vb, upd);
    SK_ROWS(SK_DECL1)
    for (size_t p = 0; p < kc; p++, ap += SK_MR, bp += 2 * SK_W) {
        SK_V b0 = SK_LOADU(bp);
        SK_ROWS(SK_ROW1)
    }
    SK_V va = SK_SET1(alpha), vb = SK_SET1(beta);
    SK_ROWS(SK_UPD1)
}

#undef SK_DECL
#undef SK_ROW
#undef SK_UPD
#undef SK_DECL1
#undef SK_ROW1
#undef SK_UPD1
#undef SK_GLUE2
#undef SK_GLUE
#undef SK_CAT2
#undef SK_CAT
#undef SK_SFX
#undef SK_ATTR
#undef SK_BITS
#undef SK_W
#undef SK_MR
#undef SK_ROWS
#undef SK_V
#undef SK_ZERO
#undef SK_LOADU
#undef SK_SET1
#undef SK_MUL
#undef SK_FMA
#undef SK_STORE
