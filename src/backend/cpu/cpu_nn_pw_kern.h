/* The vector strip of the pointwise convolution (cpu_nn_pw.c), one width
 * per inclusion. The includer defines:
 *
 *   PW_SFX            the instantiation's suffix (pw_strip_<SFX>)
 *   PW_ATTR           the target attribute of its functions
 *   RLX_VBITS         the vector width (512, 256: cpu_vec_tmpl.h names
 *                     its intrinsics; RLX_VW = RLX_VW lanes)
 *   PW_MR             rows of the register tile (the sgemm kernel's mr:
 *                     the packed weights' panel height)
 *   PW_ROWS(X)        X(0) ... X(PW_MR - 1)
 *   PW_M              a lane mask of the vector
 *   PW_MASK(n)        the mask of the first n lanes (0 < n <= RLX_VW)
 *   PW_LOADM(p, m)    the lanes of m (the others 0, not read)
 *   PW_STOREM(p, m, v) the lanes of m only
 *
 * It defines pw_strip_<SFX> (step p's input row at x + p ldx) and
 * pw_strip_<SFX>o (at x + xo[p]: positions read in place from phase rows,
 * cpu_nn_pw.c).
 *
 * The tile is PW_MR rows x 2 vectors; every element is a chain of fused
 * multiply-adds over k in order from 0, as the sgemm kernel's of the same
 * width (cpu_sgemm_kern.h), so the same bits. */
#include "backend/cpu/cpu_vec_tmpl.h"

#define PW_GLUE2(a, b) a##_##b
#define PW_GLUE(a, b) PW_GLUE2(a, b)
/* step p's input row at column j (offs: a constant of each strip) */
#define PW_XQ (offs ? x + j + xo[p] : xp)
#define PW_XNEXT , xp += offs ? 0 : ldx

/* The epilogue of one vector of row i: v (the sum), then as pw_epi says. */
PW_ATTR static inline RLX_VT PW_GLUE(pw_epi_vec, PW_SFX)(RLX_VT v, const pw_epi *e, size_t i, const float *r,
                                                        bool full, PW_M m) {
    if (!e->fused) return v;
    if (e->add_b[i]) v = RLX_VADD(v, RLX_VSET1(e->bias[i]));
    if (r) v = RLX_VADD(v, full ? RLX_VLOADU(r) : PW_LOADM(r, m));
    if (e->act == RLX_ACT_RELU) v = RLX_VMAX(RLX_VZERO(), v);
    else if (e->act == RLX_ACT_CLIP) v = RLX_VMIN(RLX_VSET1(e->hi), RLX_VMAX(RLX_VSET1(e->lo), v));
    return v;
}

/* One tile at column j: full (2 * RLX_VW columns) or the last `left` (< 2 *
 * RLX_VW) columns with masks. */
PW_ATTR static inline __attribute__((always_inline)) void
PW_GLUE(pw_tile, PW_SFX)(size_t kt, const float *ap, const float *x, size_t ldx, bool offs, const int32_t *xo,
                         float *y, size_t ldy, size_t rows, const pw_epi *e, size_t j, bool full, size_t left) {
    PW_M m0 = PW_MASK(left > RLX_VW ? RLX_VW : left ? left : 1), m1 = PW_MASK(left > RLX_VW ? left - RLX_VW : 1);
    bool two = full || left > RLX_VW;
#define PW_DECL(i) RLX_VT c##i##0 = RLX_VZERO(), c##i##1 = c##i##0;
    PW_ROWS(PW_DECL)
    const float *xp = x + j;
    (void)xp, (void)xo, (void)ldx;
    /* the residual's lines of a whole tile, fetched while the sums run
     * (the residual of a stage's first layers comes from memory: 10-15%
     * of 64->256 at 56x56, BENCHMARKS.md "rn50b") */
    if (full && e->fused && e->res) {
#define PW_PF(i)                                                                                     \
    if ((i) < rows) {                                                                                \
        __builtin_prefetch(e->res + (size_t)(i) * ldy + j, 0, 3);                                    \
        __builtin_prefetch(e->res + (size_t)(i) * ldy + j + RLX_VW, 0, 3);                           \
    }
        PW_ROWS(PW_PF)
    }
    /* the output lines a few tiles ahead, for writing (pw_epi.pf_out) */
    if (full && e->pf_out) {
#define PW_PFW(i)                                                                                    \
    if ((i) < rows) {                                                                                \
        __builtin_prefetch(y + (size_t)(i) * ldy + j + e->pf_out, 1, 2);                            \
        __builtin_prefetch(y + (size_t)(i) * ldy + j + e->pf_out + RLX_VW, 1, 2);                   \
    }
        PW_ROWS(PW_PFW)
    }
    if (two) {
#define PW_ROW(i)                                                                                    \
    {                                                                                                \
        RLX_VT a = RLX_VSET1(ap[(i)]);                                                               \
        c##i##0 = RLX_VFMA(a, b0, c##i##0), c##i##1 = RLX_VFMA(a, b1, c##i##1);                      \
    }
        if (full && e->pf) { /* the input rows pw_epi.pf ahead, into L2 */
            for (size_t p = 0; p < kt; p++, ap += PW_MR PW_XNEXT) {
                const float *xq = PW_XQ;
                __builtin_prefetch(xq + e->pf, 0, 2);
                __builtin_prefetch(xq + e->pf + RLX_VW, 0, 2);
                RLX_VT b0 = RLX_VLOADU(xq), b1 = RLX_VLOADU(xq + RLX_VW);
                PW_ROWS(PW_ROW)
            }
        } else {
            for (size_t p = 0; p < kt; p++, ap += PW_MR PW_XNEXT) {
                const float *xq = PW_XQ;
                RLX_VT b0 = full ? RLX_VLOADU(xq) : PW_LOADM(xq, m0);
                RLX_VT b1 = full ? RLX_VLOADU(xq + RLX_VW) : PW_LOADM(xq + RLX_VW, m1);
                PW_ROWS(PW_ROW)
            }
        }
    } else {
#define PW_ROW1(i) c##i##0 = RLX_VFMA(RLX_VSET1(ap[(i)]), b0, c##i##0);
        for (size_t p = 0; p < kt; p++, ap += PW_MR PW_XNEXT) {
            const float *xq = PW_XQ;
            RLX_VT b0 = PW_LOADM(xq, m0);
            PW_ROWS(PW_ROW1)
        }
    }
#define PW_OUT(i)                                                                                    \
    if ((i) < rows) {                                                                                \
        float *yr = y + (size_t)(i) * ldy + j;                                                       \
        const float *rr = e->res ? e->res + (size_t)(i) * ldy + j : NULL;                            \
        RLX_VT v0 = PW_GLUE(pw_epi_vec, PW_SFX)(c##i##0, e, (i), rr, full, m0);                      \
        if (full) RLX_VSTOREU(yr, v0);                                                               \
        else PW_STOREM(yr, m0, v0);                                                                  \
        if (two) {                                                                                   \
            RLX_VT v1 = PW_GLUE(pw_epi_vec, PW_SFX)(c##i##1, e, (i), rr ? rr + RLX_VW : NULL, full, m1); \
            if (full) RLX_VSTOREU(yr + RLX_VW, v1);                                                  \
            else PW_STOREM(yr + RLX_VW, m1, v1);                                                     \
        }                                                                                            \
    }
    PW_ROWS(PW_OUT)
}

/* Rows [0, rows) (rows <= PW_MR) of y[:, 0 .. n) = W x, W the panel ap
 * (kt steps of PW_MR weights), x kt rows of row stride ldx (the strip
 * ending in o: row p at x + xo[p]); y and the residual of e have row
 * stride ldy. */
#define PW_STRIP(NAME, OFFS)                                                                                   \
    PW_ATTR static void NAME(size_t kt, const float *ap, const float *x, size_t ldx, const int32_t *xo, float *y, \
                             size_t ldy, size_t n, size_t rows, const pw_epi *e) {                             \
        size_t j = 0;                                                                                          \
        for (; j + 2 * RLX_VW <= n; j += 2 * RLX_VW)                                                           \
            PW_GLUE(pw_tile, PW_SFX)(kt, ap, x, ldx, OFFS, xo, y, ldy, rows, e, j, true, 0);                   \
        if (j < n) PW_GLUE(pw_tile, PW_SFX)(kt, ap, x, ldx, OFFS, xo, y, ldy, rows, e, j, false, n - j);       \
    }
PW_STRIP(PW_GLUE(pw_strip, PW_SFX), false)
PW_STRIP(PW_GLUE(pw_strip, PW_GLUE(PW_SFX, o)), true)
#undef PW_STRIP

#undef PW_DECL
#undef PW_PF
#undef PW_PFW
#undef PW_ROW
#undef PW_ROW1
#undef PW_OUT
#undef PW_GLUE2
#undef PW_GLUE
#undef PW_XQ
#undef PW_XNEXT
#undef PW_SFX
#undef PW_ATTR
#undef RLX_VBITS
#undef PW_MR
#undef PW_ROWS
#undef PW_M
#undef PW_MASK
#undef PW_LOADM
#undef PW_STOREM
