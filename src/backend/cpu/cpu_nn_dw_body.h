/* The channel-blocked depthwise convolution task (cpu_nn_conv_fast.c,
 * "depthwise, channel-blocked"), instantiated once per vector width:
 * included with these defined (it undefines them at its end):
 *
 *   DWB_CB            lanes: channels per block (16, 8)
 *   DWB_V             the vector type of DWB_CB floats
 *   DWB_FN(name)      the instantiation's name for `name`
 *   DWB_ATTR          attributes of its functions (target, static)
 *   DWB_LD(p), DWB_ST(p, v)        unaligned load / store of DWB_CB floats
 *   DWB_LDN(p, n), DWB_STN(p, v, n) the first n (1..DWB_CB) lanes only
 *                                  (the others load as 0 / are not written)
 *   DWB_FMA(a, b, c)  a * b + c
 *   DWB_ADD, DWB_MAX(a, b) (a > b ? a : b), DWB_MIN(a, b) (a < b ? a : b)
 *   DWB_SET1(f), DWB_ZERO()
 *   DWB_TRANSPOSE(r)  transposes DWB_CB vectors r[0..DWB_CB) in place
 *
 * The task (image, channel block, block of output rows) packs the input
 * rows it reads into a zero-padded tile [rows][tile width][DWB_CB],
 * channel-interleaved, then computes DWB_CB output points at a time (in
 * halves of 8 with one accumulator each), every point a DWB_CB-lane FMA
 * chain over the kernel taps in (k1, k2) order starting from the bias,
 * transposes the DWB_CB x DWB_CB block and stores it to the NCHW output.
 * Relu / Clip without a residual are applied in registers (max / min in
 * the comparison order of the epilogue: the same bits), anything else by
 * epilogue_row on the stored run of each channel. */

/* M(i) for i = n - 1 down to 0 (n <= DWB_CB), every i a constant: the
 * vectors of an array stay in registers (a loop to n would keep them in
 * memory and become a memcpy call). */
#define DWB_FALL __attribute__((fallthrough))
#if DWB_CB == 16
#define DWB_CASES_HI(M)                                                                            \
    case 16: M(15); DWB_FALL;                                                                      \
    case 15: M(14); DWB_FALL;                                                                      \
    case 14: M(13); DWB_FALL;                                                                      \
    case 13: M(12); DWB_FALL;                                                                      \
    case 12: M(11); DWB_FALL;                                                                      \
    case 11: M(10); DWB_FALL;                                                                      \
    case 10: M(9); DWB_FALL;                                                                       \
    case 9: M(8); DWB_FALL;
#else
#define DWB_CASES_HI(M)
#endif
#define DWB_FIRST_N(n, M)                                                                          \
    switch (n) {                                                                                   \
    default:                                                                                       \
    DWB_CASES_HI(M)                                                                                \
    case 8: M(7); DWB_FALL;                                                                        \
    case 7: M(6); DWB_FALL;                                                                        \
    case 6: M(5); DWB_FALL;                                                                        \
    case 5: M(4); DWB_FALL;                                                                        \
    case 4: M(3); DWB_FALL;                                                                        \
    case 3: M(2); DWB_FALL;                                                                        \
    case 2: M(1); DWB_FALL;                                                                        \
    case 1: M(0); DWB_FALL;                                                                        \
    case 0: break;                                                                                 \
    }

/* The tile's nrows rows [tile_w][DWB_CB] from input rows i0 .. i0 +
 * nrows - 1 (zero outside the input; input column c at tile column
 * c + pads-begin), channels [0, nc) of the block whose first plane is x.
 * pf, when not NULL: the first plane of the block the next task reads
 * (pf_nc channels) and pf_i0 its first row: the lines of its rows pf_i0
 * + t are fetched into L2 beside row i0 + t (a batch's planes come from
 * memory, not from the cache the layer before left them in). */
DWB_ATTR void DWB_FN(dwb_pack)(const dwb_job *j, const float *x, size_t nc, int64_t i0, int64_t nrows,
                               const float *pf, size_t pf_nc, int64_t pf_i0, float *tile) {
    const rlx_nn_sp3 *s = j->io.s;
    int64_t ih = s->in[1], iw = s->in[2], pw = s->pb[2];
    size_t row_floats = j->tile_w * DWB_CB;
    for (int64_t t = 0; t < nrows; t++) {
        float *tr = tile + (size_t)t * row_floats;
        int64_t i = i0 + t;
        if (i < 0 || i >= ih) {
            memset(tr, 0, row_floats * sizeof(float));
            continue;
        }
        memset(tr, 0, (size_t)pw * DWB_CB * sizeof(float));
        memset(tr + (size_t)(pw + iw) * DWB_CB, 0, (j->tile_w - (size_t)(pw + iw)) * DWB_CB * sizeof(float));
        const float *xr = x + (size_t)i * (size_t)iw;
        float *dst = tr + (size_t)pw * DWB_CB;
        int64_t pi = pf_i0 + t;
        const float *pr = pf && pi >= 0 && pi < ih ? pf + (size_t)pi * (size_t)iw : NULL;
        for (int64_t c = 0; c < iw; c += DWB_CB) {
            int n = iw - c < DWB_CB ? (int)(iw - c) : DWB_CB;
            if (pr)
                for (size_t l = 0; l < pf_nc; l++) __builtin_prefetch(pr + l * s->in_sp + c, 0, 2);
            DWB_V r[DWB_CB];
            DWB_UNROLL for (size_t l = 0; l < DWB_CB; l++)
                r[l] = l < nc ? DWB_LDN(xr + l * s->in_sp + c, n) : DWB_ZERO();
            DWB_TRANSPOSE(r);
#define DWB_PACK_ST(q) DWB_ST(dst + (size_t)(c + (q)) * DWB_CB, r[q])
            DWB_FIRST_N(n, DWB_PACK_ST)
#undef DWB_PACK_ST
        }
    }
}

/* The in-register activation of an output vector (RLX_ACT_NONE, RELU,
 * CLIP; the others are applied after the store). */
#define DWB_ACT(v)                                                                                  \
    do {                                                                                            \
        if (act_kind == RLX_ACT_RELU) v = DWB_MAX(vzero, v); /* v when NaN: NaN stays */            \
        else if (act_kind == RLX_ACT_CLIP) v = DWB_MIN(vhi, DWB_MAX(vlo, DWB_ADD(v, vzero)));        \
    } while (0)

/* Eight output points: accumulators a[h..h+8) start at the bias and sum
 * the taps of the points whose tile positions are q[0..8). */
#define DWB_HALF(h)                                                                                 \
    do {                                                                                            \
        const float *q0 = q[h + 0], *q1 = q[h + 1], *q2 = q[h + 2], *q3 = q[h + 3];                  \
        const float *q4 = q[h + 4], *q5 = q[h + 5], *q6 = q[h + 6], *q7 = q[h + 7];                  \
        DWB_V b0 = vb, b1 = vb, b2 = vb, b3 = vb, b4 = vb, b5 = vb, b6 = vb, b7 = vb;               \
        const float *wp = wpk;                                                                      \
        for (int64_t k1 = 0; k1 < kh; k1++) {                                                       \
            size_t ro = (size_t)k1 * rstep;                                                         \
            for (int64_t k2 = 0; k2 < kw; k2++, wp += DWB_CB) {                                     \
                size_t off = ro + (size_t)k2 * cstep;                                               \
                DWB_V wv = DWB_LD(wp);                                                              \
                b0 = DWB_FMA(DWB_LD(q0 + off), wv, b0);                                             \
                b1 = DWB_FMA(DWB_LD(q1 + off), wv, b1);                                             \
                b2 = DWB_FMA(DWB_LD(q2 + off), wv, b2);                                             \
                b3 = DWB_FMA(DWB_LD(q3 + off), wv, b3);                                             \
                b4 = DWB_FMA(DWB_LD(q4 + off), wv, b4);                                             \
                b5 = DWB_FMA(DWB_LD(q5 + off), wv, b5);                                             \
                b6 = DWB_FMA(DWB_LD(q6 + off), wv, b6);                                             \
                b7 = DWB_FMA(DWB_LD(q7 + off), wv, b7);                                             \
            }                                                                                       \
        }                                                                                           \
        a[h + 0] = b0, a[h + 1] = b1, a[h + 2] = b2, a[h + 3] = b3;                                 \
        a[h + 4] = b4, a[h + 5] = b5, a[h + 6] = b6, a[h + 7] = b7;                                 \
    } while (0)

/* One (image n, channel block, output rows [r0, r1)) of the task below:
 * wpk the packed weights and the bias, tile its scratch; the rows of the
 * unit after it are prefetched while the tile is packed (dwb_pack). */
DWB_ATTR void DWB_FN(dwb_unit)(const dwb_job *j, size_t n, size_t cb, size_t rb, int64_t r0, int64_t r1,
                               const float *wpk, float *tile) {
    const rlx_nn_sp3 *s = j->io.s;
    int64_t ow = s->out[2], kh = s->k[1], kw = s->k[2];
    size_t c0 = cb * DWB_CB, nc = j->io.c_out - c0 < DWB_CB ? j->io.c_out - c0 : DWB_CB;
    size_t taps = (size_t)(kh * kw);
    const float *bias = wpk + taps * DWB_CB;
    int64_t sh = s->s[1], sw = s->s[2];
    int64_t nrows = (r1 - 1 - r0) * sh + (kh - 1) * s->d[1] + 1;
    const float *xn = j->io.x + (n * j->io.c_out + c0) * s->in_sp;
    /* the next unit (images innermost): the next image's same rows, after
     * the last image image 0's next row block, after the last row block
     * image 0's next channel block from its first rows */
    const float *pf = NULL;
    size_t pf_nc = 0;
    int64_t pf_i0 = 0;
    if (n + 1 < j->n_img) {
        pf = xn + j->io.c_out * s->in_sp, pf_nc = nc, pf_i0 = r0 * sh - s->pb[1];
    } else if (rb + 1 < j->n_rb) {
        pf = j->io.x + c0 * s->in_sp, pf_nc = nc, pf_i0 = r1 * sh - s->pb[1];
    } else if (c0 + nc < j->io.c_out) {
        size_t left = j->io.c_out - (c0 + nc);
        pf = j->io.x + (c0 + nc) * s->in_sp, pf_nc = left < DWB_CB ? left : DWB_CB, pf_i0 = -s->pb[1];
    }
    DWB_FN(dwb_pack)(j, xn, nc, r0 * sh - s->pb[1], nrows, pf, pf_nc, pf_i0, tile);

    size_t rstep = (size_t)s->d[1] * j->tile_w * DWB_CB, cstep = (size_t)s->d[2] * DWB_CB;
    size_t orow = (size_t)sh * j->tile_w * DWB_CB, ocol = (size_t)sw * DWB_CB;
    rlx_ew_fn act_kind = j->act_in_reg ? j->io.act.kind : RLX_ACT_NONE;
    DWB_V vb = DWB_LD(bias), vzero = DWB_ZERO(), vlo = DWB_SET1(j->io.act.alpha), vhi = DWB_SET1(j->io.act.beta);
    size_t npts = (size_t)((r1 - r0) * ow), p0 = (size_t)(r0 * ow);
    float *yc = j->io.y + (n * j->io.c_out + c0) * s->out_sp + p0; /* channel l's run: yc + l * out_sp */
    int64_t pr = 0, pc = 0;                             /* the next point's row (in the task) and column */
    for (size_t p = 0; p < npts; p += DWB_CB) {
        size_t m = npts - p < DWB_CB ? npts - p : DWB_CB;
        /* the points' tile positions (a short last group repeats its last point) */
        const float *q[DWB_CB];
        DWB_UNROLL for (size_t i = 0; i < DWB_CB; i++) {
            q[i] = tile + (size_t)pr * orow + (size_t)pc * ocol;
            if (i + 1 < m && ++pc == ow) pc = 0, pr++;
        }
        if (++pc == ow) pc = 0, pr++;
        DWB_V a[DWB_CB];
        DWB_HALF(0);
#if DWB_CB == 16
        DWB_HALF(8);
#endif
        DWB_UNROLL for (size_t i = 0; i < DWB_CB; i++) DWB_ACT(a[i]);
        DWB_TRANSPOSE(a);
#define DWB_Y_ST(l) DWB_ST(yc + (size_t)(l) * s->out_sp + p, a[l])
#define DWB_Y_STN(l) DWB_STN(yc + (size_t)(l) * s->out_sp + p, a[l], (int)m)
        if (m == DWB_CB) {
            DWB_FIRST_N(nc, DWB_Y_ST)
        } else {
            DWB_FIRST_N(nc, DWB_Y_STN)
        }
#undef DWB_Y_ST
#undef DWB_Y_STN
    }
    if (!j->act_in_reg)
        for (size_t l = 0; l < nc; l++)
            epilogue_row(yc + l * s->out_sp, npts, 0.0f, j->io.res ? j->io.res + (yc - j->io.y) + l * s->out_sp : NULL,
                         &j->io.act);
}

/* Task `item` of job ctx (rlx_nn_item_fn): one channel block, one block
 * of output rows, j->ipt images (the weights packed once for them).
 * scratch (dwb_run's slot): the packed weights [taps][DWB_CB] and the
 * bias [DWB_CB], then the tile. */
DWB_ATTR void DWB_FN(dwb_task)(void *ctx, size_t item, float *scratch) {
    const dwb_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    size_t ig = item % j->n_ig, rest = item / j->n_ig, rb = rest % j->n_rb, cb = rest / j->n_rb;
    int64_t oh = s->out[1];
    int64_t r0 = (int64_t)((size_t)oh * rb / j->n_rb), r1 = (int64_t)((size_t)oh * (rb + 1) / j->n_rb);
    size_t n0 = ig * j->ipt, n1 = n0 + j->ipt < j->n_img ? n0 + j->ipt : j->n_img;
    if (r1 <= r0 || n0 >= n1) return;
    size_t c0 = cb * DWB_CB, nc = j->io.c_out - c0 < DWB_CB ? j->io.c_out - c0 : DWB_CB;
    size_t taps = (size_t)(s->k[1] * s->k[2]);
    float *wpk = scratch, *tile = scratch + (taps + 1) * DWB_CB;
    /* weights [tap][lane] (the channels' rows of taps transposed) and the
     * bias, 0 in the lanes past the channels */
    for (size_t t0 = 0; t0 < taps; t0 += DWB_CB) {
        int nt = taps - t0 < DWB_CB ? (int)(taps - t0) : DWB_CB;
        DWB_V r[DWB_CB];
        DWB_UNROLL for (size_t l = 0; l < DWB_CB; l++)
            r[l] = l < nc ? DWB_LDN(j->io.w + (c0 + l) * taps + t0, nt) : DWB_ZERO();
        DWB_TRANSPOSE(r);
#define DWB_W_ST(q) DWB_ST(wpk + (t0 + (size_t)(q)) * DWB_CB, r[q])
        DWB_FIRST_N(nt, DWB_W_ST)
#undef DWB_W_ST
    }
    /* weights below FLT_MIN in magnitude count as 0: their products are
     * under 2^-126 |x|, and one subnormal lane makes every FMA of the block
     * take a microcode assist (PP-OCRv4 det's p2o.Conv.31: 24 such weights,
     * 5x the node's time) */
    for (size_t i = 0; i < taps * DWB_CB; i++) wpk[i] = fabsf(wpk[i]) < FLT_MIN ? 0.0f : wpk[i];
    DWB_ST(wpk + taps * DWB_CB, j->io.b ? DWB_LDN(j->io.b + c0, (int)nc) : DWB_ZERO());
    for (size_t n = n0; n < n1; n++) DWB_FN(dwb_unit)(j, n, cb, rb, r0, r1, wpk, tile);
}

#undef DWB_ACT
#undef DWB_HALF
#undef DWB_FALL
#undef DWB_CASES_HI
#undef DWB_FIRST_N
/* the parameters */
#undef DWB_CB
#undef DWB_V
#undef DWB_FN
#undef DWB_ATTR
#undef DWB_LD
#undef DWB_ST
#undef DWB_LDN
#undef DWB_STN
#undef DWB_FMA
#undef DWB_ADD
#undef DWB_MAX
#undef DWB_MIN
#undef DWB_SET1
#undef DWB_ZERO
#undef DWB_TRANSPOSE
