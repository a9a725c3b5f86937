/* The vector micro-kernels of cpu_sgemm.c, one width per inclusion. The
 * includer defines SK_SFX (the kernels are then kern_<SFX>, its full
 * tile, and kern_<SFX>_half, its left half), SK_ATTR (the target), SK_W
 * (lanes), SK_MR (rows) and SK_ROWS(X) (X(0) ... X(SK_MR - 1)), the vector
 * type SK_V and its operations SK_ZERO(), SK_LOAD(p), SK_LOADU(p),
 * SK_SET1(x), SK_MUL(a, b), SK_FMA(a, b, c) (a * b + c, one rounding) and
 * SK_STORE(p, v). The tile is SK_MR x 2W, its half SK_MR x W; both take
 * the same chain of fused multiply-adds per element in k order and the
 * same update, so every width (and each half) gives the same bits. */
#define SK_GLUE2(a, b) a##_##b
#define SK_GLUE(a, b) SK_GLUE2(a, b)

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
        SK_V b0 = SK_LOAD(bp), b1 = SK_LOAD(bp + SK_W);
        SK_ROWS(SK_ROW)
    }
    SK_V va = SK_SET1(alpha), vb = SK_SET1(beta);
    SK_ROWS(SK_UPD)
#undef SK_DECL
#undef SK_ROW
#undef SK_UPD
}

/* The left half (columns 0 to W - 1 of the tile, the same operations lane
 * for lane), for edge tiles of at most W columns. */
SK_ATTR static void SK_GLUE(kern_half, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                               float alpha, float beta, int upd) {
#define SK_DECL(i) SK_V c##i = SK_ZERO();
#define SK_ROW(i) c##i = SK_FMA(SK_SET1(ap[i]), b0, c##i);
#define SK_UPD(i) SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i, va, vb, upd);
    SK_ROWS(SK_DECL)
    for (size_t p = 0; p < kc; p++, ap += SK_MR, bp += 2 * SK_W) {
        SK_V b0 = SK_LOAD(bp);
        SK_ROWS(SK_ROW)
    }
    SK_V va = SK_SET1(alpha), vb = SK_SET1(beta);
    SK_ROWS(SK_UPD)
#undef SK_DECL
#undef SK_ROW
#undef SK_UPD
}

#undef SK_GLUE2
#undef SK_GLUE
#undef SK_SFX
#undef SK_ATTR
#undef SK_W
#undef SK_MR
#undef SK_ROWS
#undef SK_V
#undef SK_ZERO
#undef SK_LOAD
#undef SK_LOADU
#undef SK_SET1
#undef SK_MUL
#undef SK_FMA
#undef SK_STORE
