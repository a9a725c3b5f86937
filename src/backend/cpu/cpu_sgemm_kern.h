/* The vector micro-kernels of cpu_sgemm.c, one tile per inclusion. The
 * includer defines SK_SFX (the kernels are then kern_<SFX>, its full
 * tile, and kern_half_<SFX>, its first W columns), SK_ATTR (the target),
 * RLX_VBITS (the vector width, 256 or 512: cpu_vec_tmpl.h names its
 * intrinsics; W = RLX_VW lanes), SK_MR (rows), SK_ROWS(X) (X(0)
 * ... X(SK_MR - 1)) and optionally SK_NV (vectors per row, 2 or 3;
 * default 2). The tile is SK_MR x SK_NV * W, its half SK_MR x W; both take
 * the same chain of fused multiply-adds per element in k order and the
 * same update, so every width and tile (and each half) gives the same
 * bits. */
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

#ifndef SK_NV
#define SK_NV 2
#endif
#if SK_NV == 2
#define SK_COLS(X, i) X(i, 0) X(i, 1)
#define SK_LOADB RLX_VT b0 = RLX_VLOADU(bp), b1 = RLX_VLOADU(bp + RLX_VW);
#elif SK_NV == 3
#define SK_COLS(X, i) X(i, 0) X(i, 1) X(i, 2)
#define SK_LOADB RLX_VT b0 = RLX_VLOADU(bp), b1 = RLX_VLOADU(bp + RLX_VW), b2 = RLX_VLOADU(bp + 2 * RLX_VW);
#else
#error "SK_NV must be 2 or 3"
#endif

/* SK_NV * SK_MR accumulators in registers (named, so that the compiler
 * keeps them there), one fused multiply-add per product; A's value is
 * broadcast once per row and step (a load on x86, no shuffle port). A's
 * value of row i at step p is a[i * rs + p * ps]: a packed micro-panel (rs
 * 1, ps SK_MR) or A's rows where they lie (rs lda, ps 1: no packing); the
 * wrappers below pass constants, so each compiles to its own addressing. */
SK_ATTR static inline __attribute__((always_inline)) void SK_GLUE(kern_body, SK_SFX)(
    size_t kc, const float *a, size_t rs, size_t ps, const float *bp, float *c, size_t ldc, float alpha, float beta,
    int upd) {
#define SK_DECL_J(i, j) RLX_VT c##i##j = RLX_VZERO();
#define SK_DECL(i) SK_COLS(SK_DECL_J, i)
#define SK_FMA_J(i, j) c##i##j = RLX_VFMA(av, b##j, c##i##j);
#define SK_ROW(i)                                                                                    \
    {                                                                                                \
        RLX_VT av = RLX_VSET1(a[(size_t)(i) * rs]);                                                  \
        SK_COLS(SK_FMA_J, i)                                                                         \
    }
#define SK_UPD_J(i, j) SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc + (j) * RLX_VW, c##i##j, va, vb, upd);
#define SK_UPD(i) SK_COLS(SK_UPD_J, i)
    SK_ROWS(SK_DECL)
#pragma GCC unroll 4
    for (size_t p = 0; p < kc; p++, a += ps, bp += SK_NV * RLX_VW) {
        SK_LOADB
        SK_ROWS(SK_ROW)
    }
    RLX_VT va = RLX_VSET1(alpha), vb = RLX_VSET1(beta);
    SK_ROWS(SK_UPD)
}

/* The left half (columns 0 to W - 1 of the tile, the same operations lane
 * for lane), for edge tiles of at most W columns; A as above. */
SK_ATTR static inline __attribute__((always_inline)) void SK_GLUE(kern_half_body, SK_SFX)(
    size_t kc, const float *a, size_t rs, size_t ps, const float *bp, float *c, size_t ldc, float alpha, float beta,
    int upd) {
#define SK_DECL1(i) RLX_VT c##i = RLX_VZERO();
#define SK_ROW1(i) c##i = RLX_VFMA(RLX_VSET1(a[(size_t)(i) * rs]), b0, c##i);
#define SK_UPD1(i) SK_GLUE(upd, SK_SFX)(c + (size_t)(i) * ldc, c##i, va, vb, upd);
    SK_ROWS(SK_DECL1)
    for (size_t p = 0; p < kc; p++, a += ps, bp += SK_NV * RLX_VW) {
        RLX_VT b0 = RLX_VLOADU(bp);
        SK_ROWS(SK_ROW1)
    }
    RLX_VT va = RLX_VSET1(alpha), vb = RLX_VSET1(beta);
    SK_ROWS(SK_UPD1)
}

/* The full tile and its half from a packed micro-panel ap of A. */
SK_ATTR static void SK_GLUE(kern, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                          float alpha, float beta, int upd) {
    SK_GLUE(kern_body, SK_SFX)(kc, ap, 1, SK_MR, bp, c, ldc, alpha, beta, upd);
}
SK_ATTR static void SK_GLUE(kern_half, SK_SFX)(size_t kc, const float *ap, const float *bp, float *c, size_t ldc,
                                               float alpha, float beta, int upd) {
    SK_GLUE(kern_half_body, SK_SFX)(kc, ap, 1, SK_MR, bp, c, ldc, alpha, beta, upd);
}

/* The same from A's rows in place: row i at a + i * lda, its k steps
 * contiguous (a row-major A, not packed). */
SK_ATTR static void SK_GLUE(kern_rows, SK_SFX)(size_t kc, const float *a, size_t lda, const float *bp, float *c,
                                               size_t ldc, float alpha, float beta, int upd) {
    SK_GLUE(kern_body, SK_SFX)(kc, a, lda, 1, bp, c, ldc, alpha, beta, upd);
}
SK_ATTR static void SK_GLUE(kern_rows_half, SK_SFX)(size_t kc, const float *a, size_t lda, const float *bp, float *c,
                                                    size_t ldc, float alpha, float beta, int upd) {
    SK_GLUE(kern_half_body, SK_SFX)(kc, a, lda, 1, bp, c, ldc, alpha, beta, upd);
}

#undef SK_DECL_J
#undef SK_DECL
#undef SK_FMA_J
#undef SK_UPD_J
#undef SK_COLS
#undef SK_LOADB
#undef SK_NV
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
