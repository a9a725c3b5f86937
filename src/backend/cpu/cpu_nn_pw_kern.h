/* The vector strip of the pointwise convolution (cpu_nn_pw.c), one width
 * per inclusion. The includer defines:
 *
 *   PW_SFX            the instantiation's suffix (pw_strip_<SFX>)
 *   PW_ATTR           the target attribute of its functions
 *   PW_W              lanes per vector (16, 8)
 *   PW_MR             rows of the register tile (the sgemm kernel's mr:
 *                     the packed weights' panel height)
 *   PW_ROWS(X)        X(0) ... X(PW_MR - 1)
 *   PW_V              the vector type; PW_M a lane mask of it
 *   PW_ZERO(), PW_SET1(f), PW_LOAD(p), PW_STORE(p, v)
 *   PW_MASK(n)        the mask of the first n lanes (0 < n <= PW_W)
 *   PW_LOADM(p, m)    the lanes of m (the others 0, not read)
 *   PW_STOREM(p, m, v) the lanes of m only
 *   PW_FMA(a, b, c)   a * b + c, one rounding
 *   PW_ADD, PW_MAX(a, b) (a > b ? a : b), PW_MIN(a, b) (a < b ? a : b)
 *
 * The tile is PW_MR rows x 2 vectors; every element is a chain of fused
 * multiply-adds over k in order from 0, as the sgemm kernel's of the same
 * width (cpu_sgemm_kern.h), so the same bits. */
#define PW_GLUE2(a, b) a##_##b
#define PW_GLUE(a, b) PW_GLUE2(a, b)

/* The epilogue of one vector of row i: v (the sum), then as pw_epi says. */
PW_ATTR static inline PW_V PW_GLUE(pw_epi_vec, PW_SFX)(PW_V v, const pw_epi *e, size_t i, const float *r, bool full,
                                                      PW_M m) {
    if (!e->fused) return v;
    if (e->add_b[i]) v = PW_ADD(v, PW_SET1(e->bias[i]));
    if (r) v = PW_ADD(v, full ? PW_LOAD(r) : PW_LOADM(r, m));
    if (e->act == RLX_ACT_RELU) v = PW_MAX(PW_ZERO(), v);
    else if (e->act == RLX_ACT_CLIP) v = PW_MIN(PW_SET1(e->hi), PW_MAX(PW_SET1(e->lo), v));
    return v;
}

/* One tile at column j: full (2 * PW_W columns) or the last `left` (< 2 *
 * PW_W) columns with masks. */
PW_ATTR static inline __attribute__((always_inline)) void
PW_GLUE(pw_tile, PW_SFX)(size_t kt, const float *ap, const float *x, size_t ldx, float *y, size_t ldy, size_t rows,
                         const pw_epi *e, size_t j, bool full, size_t left) {
    PW_M m0 = PW_MASK(left > PW_W ? PW_W : left ? left : 1), m1 = PW_MASK(left > PW_W ? left - PW_W : 1);
    bool two = full || left > PW_W;
#define PW_DECL(i) PW_V c##i##0 = PW_ZERO(), c##i##1 = c##i##0;
    PW_ROWS(PW_DECL)
    const float *xp = x + j;
    if (two) {
#define PW_ROW(i)                                                                                     \
    {                                                                                                 \
        PW_V a = PW_SET1(ap[(i)]);                                                                    \
        c##i##0 = PW_FMA(a, b0, c##i##0), c##i##1 = PW_FMA(a, b1, c##i##1);                           \
    }
        for (size_t p = 0; p < kt; p++, ap += PW_MR, xp += ldx) {
            PW_V b0 = full ? PW_LOAD(xp) : PW_LOADM(xp, m0), b1 = full ? PW_LOAD(xp + PW_W) : PW_LOADM(xp + PW_W, m1);
            PW_ROWS(PW_ROW)
        }
    } else {
#define PW_ROW1(i) c##i##0 = PW_FMA(PW_SET1(ap[(i)]), b0, c##i##0);
        for (size_t p = 0; p < kt; p++, ap += PW_MR, xp += ldx) {
            PW_V b0 = PW_LOADM(xp, m0);
            PW_ROWS(PW_ROW1)
        }
    }
#define PW_OUT(i)                                                                                     \
    if ((i) < rows) {                                                                                 \
        float *yr = y + (size_t)(i) * ldy + j;                                                        \
        const float *rr = e->res ? e->res + (size_t)(i) * ldy + j : NULL;                             \
        PW_V v0 = PW_GLUE(pw_epi_vec, PW_SFX)(c##i##0, e, (i), rr, full, m0);                         \
        if (full) PW_STORE(yr, v0);                                                                   \
        else PW_STOREM(yr, m0, v0);                                                                   \
        if (two) {                                                                                    \
            PW_V v1 = PW_GLUE(pw_epi_vec, PW_SFX)(c##i##1, e, (i), rr ? rr + PW_W : NULL, full, m1);  \
            if (full) PW_STORE(yr + PW_W, v1);                                                        \
            else PW_STOREM(yr + PW_W, m1, v1);                                                        \
        }                                                                                             \
    }
    PW_ROWS(PW_OUT)
}

/* Rows [0, rows) (rows <= PW_MR) of y[:, 0 .. n) = W x, W the panel ap
 * (kt steps of PW_MR weights), x kt rows of row stride ldx; y and the
 * residual of e have row stride ldy. */
PW_ATTR static void PW_GLUE(pw_strip, PW_SFX)(size_t kt, const float *ap, const float *x, size_t ldx, float *y,
                                              size_t ldy, size_t n, size_t rows, const pw_epi *e) {
    size_t j = 0;
    for (; j + 2 * PW_W <= n; j += 2 * PW_W) PW_GLUE(pw_tile, PW_SFX)(kt, ap, x, ldx, y, ldy, rows, e, j, true, 0);
    if (j < n) PW_GLUE(pw_tile, PW_SFX)(kt, ap, x, ldx, y, ldy, rows, e, j, false, n - j);
}

#undef PW_DECL
#undef PW_ROW
#undef PW_ROW1
#undef PW_OUT
#undef PW_GLUE2
#undef PW_GLUE
#undef PW_SFX
#undef PW_ATTR
#undef PW_W
#undef PW_MR
#undef PW_ROWS
#undef PW_V
#undef PW_M
#undef PW_ZERO
#undef PW_SET1
#undef PW_LOAD
#undef PW_STORE
#undef PW_MASK
#undef PW_LOADM
#undef PW_STOREM
#undef PW_FMA
#undef PW_ADD
#undef PW_MAX
#undef PW_MIN
