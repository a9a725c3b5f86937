/* The vector micro-kernels of cpu_sgemm.c, one width per inclusion. The
 * includer defines SK_SFX (the kernels are then kern_<SFX>, its full
 * tile, and kern_half_<SFX>, its left half), SK_ATTR (the target),
 * RLX_VBITS (the vector width, 256 or 512: cpu_vec_tmpl.h names its
 * intrinsics; W = RLX_VW lanes), SK_MR (rows) and SK_ROWS(X) (X(0)
 * ... X(SK_MR - 1)). The tile is SK_MR x 2W, its half SK_MR x W; both take
 * the same chain of fused multiply-adds per element in k order and the
 * same update, so every width (and each half) gives the same bits. */
#include "backend/cpu/cpu_vec_tmpl.h"

#define SK_GLUE2(a, b) a##_##b
#define SK_GLUE(a, b) SK_GLUE2(a, b)

/* One vector of the update: c = alpha * acc, fma(beta, c, alpha * acc) or
 * fma(alpha, acc, c). */
SK_ATTR static inline void SK_GLUE(upd, SK_SFX)(float *dst, RLX_VT acc, RLX_VT va, RLX_VT vb, int upd) {
    if (upd == UPD_SET) acc = RLX_VMUL(va, acc);
    else if (upd == UPD_BETA) acc = RLX_VFMA(vb, RLX_VLOADU(dst), RLX_VMUL(va, acc));
    else acc = RLX_VFMA(va, acc, RLX_VLOADU(dst));
    RLX_VSTOREU(dst, acc);
}

/* 2 * SK_MR accumulators in registers (named, so that the compiler keeps
 * them there), one fused multiply-add per product. */
SK_ATTR static void SK_GLUE(kern, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                          float alpha, float beta, int upd) {
#define SK_DECL(i) RLX_VT c##i##0 = RLX_VZERO(), c##i##1 = c##i##0;
#define SK_ROW(i)                                                                                    \
    {                                                                                                \
        RLX_VT a = RLX_VSET1(ap[i]);                                                                 \
        c##i##0 = RLX_VFMA(a, b0, c##i##0), c##i##1 = RLX_VFMA(a, b1, c##i##1);                      \
    }
#define SK_UPD(i)                                                                                    \
    SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i##0, va, vb, upd);                               \
    SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc + RLX_VW, c##i##1, va, vb, upd);
    SK_ROWS(SK_DECL)
#pragma GCC unroll 4
    for (size_t p = 0; p < kc; p++, ap += SK_MR, bp += 2 * RLX_VW) {
        RLX_VT b0 = RLX_VLOADU(bp), b1 = RLX_VLOADU(bp + RLX_VW);
        SK_ROWS(SK_ROW)
    }
    RLX_VT va = RLX_VSET1(alpha), vb = RLX_VSET1(beta);
    SK_ROWS(SK_UPD)
}

/* The left half (columns 0 to W - 1 of the tile, the same operations lane
 * for lane), for edge tiles of at most W columns. */
SK_ATTR static void SK_GLUE(kern_half, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                               float alpha, float beta, int upd) {
#define SK_DECL1(i) RLX_VT c##i = RLX_VZERO();
#define SK_ROW1(i) c##i = RLX_VFMA(RLX_VSET1(ap[i]), b0, c##i);
#define SK_UPD1(i) SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i, va, vb, upd);
    SK_ROWS(SK_DECL1)
    for (size_t p = 0; p < kc; p++, ap += SK_MR, bp += 2 * RLX_VW) {
        RLX_VT b0 = RLX_VLOADU(bp);
        SK_ROWS(SK_ROW1)
    }
    RLX_VT va = RLX_VSET1(alpha), vb = RLX_VSET1(beta);
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
#undef SK_SFX
#undef SK_ATTR
#undef RLX_VBITS
#undef SK_MR
#undef SK_ROWS
