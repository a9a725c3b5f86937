/* The GEMM emitter (see lower_gemm.h): kernel family, tile shape, load
 * modes and split-K chosen per problem, or forced by RLX_GEMM_* variables
 * for sweeps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/wg_split.h"
#include "base/options.h"
#include "base/platform.h"

typedef struct tile_cfg {
    uint32_t tm, tn, wgx, wgy, bk;
} tile_cfg;

bool wg_act_ok(const rlx_act *a) {
    const rlx_ew_info *r = rlx_ew_info_of(a->kind);
    return r && r->arity == 1 && r->wgsl && ((r->flags & RLX_EW_ACT) || a->kind == RLX_ACT_NONE);
}

/* The device's workgroup memory in bytes (16 KiB where it says nothing). */
static uint64_t wg_storage(const wg_caps *c) { return c->max_wg_storage ? c->max_wg_storage : 16384; }

/* Bytes of one copy of a tile shape's As and Bs of esize-byte elements. */
static uint64_t tile_bytes(const tile_cfg *t, uint64_t esize) {
    return (uint64_t)t->bk * ((uint64_t)t->wgy * t->tm + (uint64_t)t->wgx * t->tn) * esize;
}

/* Whether the device can run a tile shape. */
static bool tile_fits(const wg_caps *c, const tile_cfg *t) {
    if ((t->tm != 4 && t->tm != 8) || (t->tn != 4 && t->tn != 8)) return false;
    if (t->bk < 4 || t->bk % 4 || t->wgx == 0 || t->wgy == 0) return false;
    uint64_t nt = (uint64_t)t->wgx * t->wgy;
    if (c->max_wg_invocations && nt > c->max_wg_invocations) return false;
    if (c->max_wg_size_x && t->wgx > c->max_wg_size_x) return false;
    if (c->max_wg_size_y && t->wgy > c->max_wg_size_y) return false;
    return tile_bytes(t, 4) <= wg_storage(c);
}

/* The generated kernel's pipeline (gpu.gemm_pipeline, wg_gemm_kernel):
 * double only where two copies of the tiles (elements of esize bytes) fit
 * the workgroup memory, else prefetch. */
static uint32_t gemm_pipeline(const wg_caps *c, const tile_cfg *t, uint64_t esize) {
    const char *v = c->cfg->gemm_pipeline;
    if (!v || strcmp(v, "off") == 0) return WG_GEMM_PIPE_OFF;
    if (strcmp(v, "prefetch") == 0) return WG_GEMM_PIPE_PREFETCH;
    return 2 * tile_bytes(t, esize) <= wg_storage(c) ? WG_GEMM_PIPE_DOUBLE : WG_GEMM_PIPE_PREFETCH;
}

/* The implicit conv operand's form (gpu.gemm_conv_geometry): the geometry
 * of m copied into k for constants. */
static void gemm_conv_geometry(const wg_caps *c, const wg_gemm *m, wg_gemm_kernel *k) {
    const char *v = c->cfg->gemm_conv_geometry;
    k->conv_geo = WG_GEMM_GEO_PARAMS;
    if (!m->conv || !v || strcmp(v, "params") == 0) return;
    k->conv_geo = strcmp(v, "hoist") == 0 ? WG_GEMM_GEO_HOIST : WG_GEMM_GEO_CONSTANTS;
    if (k->conv_geo != WG_GEMM_GEO_CONSTANTS) return;
    k->in_h = m->in_h, k->in_w = m->in_w, k->out_w = m->out_w;
    k->s_h = m->s_h, k->s_w = m->s_w, k->p_h = m->p_h, k->p_w = m->p_w, k->d_h = m->d_h, k->d_w = m->d_w;
}

/* gpu.gemm_tile=TMxTN,WGXxWGY,BK; false when unset. */
static bool forced_tile(const wg_caps *caps, tile_cfg *t, bool *bad) {
    const char *v = caps->cfg->gemm_tile;
    *bad = false;
    if (!v || !*v) return false;
    unsigned a, b, c, d, e;
    if (sscanf(v, "%ux%u,%ux%u,%u", &a, &b, &c, &d, &e) != 5) {
        *bad = true;
        return true;
    }
    *t = (tile_cfg){ a, b, c, d, e };
    return true;
}

/* The 64 x 64 tile (4 x 4 per invocation, 16 x 16 invocations, k steps of
 * 16): the automatic choice's default, which emit_one may widen. */
static const tile_cfg k_tile_mid = { 4, 4, 16, 16, 16 };

/* The automatic choice, from sweeps of the generated kernel on an H200
 * (BENCHMARKS.md): 64 x 64 tiles (4 x 4 per invocation, 16 x 16
 * invocations, k steps of 16) are the best or within a few percent on
 * every model measured (ResNet-50 2.4x faster than 128 x 128 tiles, BERT
 * 10%); 128 x 128 tiles (8 x 8 per invocation) win only when even they
 * fill the GPU several times over (4096^3: 7%); 32 x 32 tiles for small
 * problems; 32 x 64 tiles for few rows (GEMV-like shapes, e.g. batch-1
 * transformer decoding). Split-K (emit_one) fills small grids. 128-wide
 * tiles only along dimensions of at least 128: a ResNet-50 stem at batch
 * 8 (M = 64 output channels) took 203 us in 128 x 128 tiles against 132 us
 * in 64 x 64 ones (H200, BENCHMARKS.md "GEMM tiles by shape"). */
static tile_cfg choose_tiles(const wg_caps *c, uint64_t M, uint64_t N, uint64_t nbatch) {
    static const tile_cfg large = { 8, 8, 16, 16, 16 }, small = { 4, 4, 8, 8, 16 };
    uint64_t target = (uint64_t)c->cfg->gemm_target_wg;
    /* a few rows (GEMV-like, classifier heads, batch-8 decoding): 32 x 64
     * tiles with split-K beat 4-row tiles 128 wide on the H200, 2.3x at
     * 1 x 4096 x 4096 (bench/tile_compare.py, BENCHMARKS.md) */
    if (M <= 16) {
        static const tile_cfg rows = { 4, 4, 16, 8, 16 };
        if (tile_fits(c, &rows)) return rows;
    }
    if (tile_fits(c, &large) && M >= 128 && N >= 128 && wg_cdiv(M, 128) * wg_cdiv(N, 128) * nbatch >= 2 * target)
        return large;
    if (tile_fits(c, &k_tile_mid) && (M > 32 || N > 32)) return k_tile_mid;
    return small;
}

bool wg_gemm_auto_tile(const wg_caps *c, uint64_t M, uint64_t N, uint64_t nbatch, wg_gemm_kernel *k) {
    tile_cfg t;
    bool bad;
    if (forced_tile(c, &t, &bad)) {
        if (bad || !tile_fits(c, &t)) return false;
    } else {
        t = choose_tiles(c, M, N, nbatch);
    }
    k->tm = t.tm, k->tn = t.tn, k->wgx = t.wgx, k->wgy = t.wgy, k->bk = t.bk;
    return true;
}

static bool all4(const uint64_t *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i] % 4) return false;
    return true;
}

void wg_gemm_init(wg_gemm *g, uint64_t M, uint64_t N, uint64_t K) {
    memset(g, 0, sizeof *g);
    g->M = M;
    g->N = N;
    g->K = K;
    g->alpha = 1.0f;
    g->beta = 1.0f;
    g->a_sm = K;
    g->a_sk = 1;
    g->b_sk = N;
    g->b_sn = 1;
    g->bias = -1;
}

/* Batch items of a product. */
static uint64_t gemm_nbatch(const wg_gemm *m) {
    uint64_t nbatch = 1;
    for (int i = 0; i < m->nb; i++) nbatch *= m->bdims[i];
    return nbatch;
}

/* Elements between rows of y. */
static uint64_t y_rows(const wg_gemm *m) { return m->y_sm ? m->y_sm : m->N; }

/* An f16 product (README.md, "Element types"): y, and so A, B, the bias
 * and the residual, are f16 (the lowerings check that the dtypes agree).
 * The kernels are instantiated for T = f16: C, Y and R are array<f16>
 * (windows and offsets in halves), A and B are read as packed halves
 * (A_F16, B_F16; also the im2col scratch, which im2col.wgsl wrote as
 * halves); products and sums in f32, one rounding at the store. */
static bool gemm_half(const wg_lower *L, const wg_gemm *m) {
    return m->y >= 0 && L->g->values[m->y].dtype == RLX_DTYPE_F16;
}

/* Operand A or B of m may be bound as binary16 (f16 mode): a constant f32
 * whose window survives the rounding (else it stays f32, reported). */
static bool f16_a(wg_lower *L, const wg_gemm *m) { return wg_f16_fits(L, m->a, m->a_off, m->a_n); }
static bool f16_b(wg_lower *L, const wg_gemm *m) { return !m->conv && wg_f16_fits(L, m->b, m->b_off, m->b_n); }
/* The cooperative kernel rounds every operand to binary16: only when each
 * constant one survives that (else the tiled kernel, with it in f32). */
static bool coop_weights_fit(wg_lower *L, const wg_gemm *m) {
    bool ka = L->g->values[m->a].konst, kb = L->g->values[m->b].konst;
    bool fa = !ka || wg_f16_fits(L, m->a, m->a_off, m->a_n), fb = !kb || wg_f16_fits(L, m->b, m->b_off, m->b_n);
    return fa && fb;
}

/* The Params that matmul.wgsl and the gemm_common kernels share after the
 * four offsets: sizes, scales, strides, grid, the batch slots and the
 * activation's parameters. */
static void p_gemm_head(wg_lower *L, wg_dispatch *d, const wg_gemm *m, uint64_t nbatch, uint64_t tiles_n,
                        uint64_t tiles_m, uint64_t y_sm, const uint64_t *bd, const uint64_t *abs_, const uint64_t *bbs,
                        const uint64_t *ybs, const uint64_t *cbs, bool has_bias) {
    WG_P(L, d, wg_pu("M", m->M), wg_pu("N", m->N), wg_pu("K", m->K), wg_pu("has_bias", has_bias),
         wg_pf("alpha", m->alpha), wg_pf("beta", m->beta), wg_pu("a_sm", m->a_sm), wg_pu("a_sk", m->a_sk),
         wg_pu("b_sk", m->b_sk), wg_pu("b_sn", m->b_sn), wg_pu("bias_sm", m->bias_sm), wg_pu("bias_sn", m->bias_sn),
         wg_pu("nbatch", nbatch), wg_pu("tiles_n", tiles_n), wg_pu("tiles_m", tiles_m), wg_pu("y_sm", y_sm));
    const uint64_t *arr[5] = { bd, abs_, bbs, ybs, cbs };
    static const char *const k_arr[5] = { "bdims", "a_bs", "b_bs", "y_bs", "bias_bs" };
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < 4; i++) wg_p_u32(L, d, k_arr[k], (uint32_t)arr[k][i]);
    WG_P(L, d, wg_pf("act_alpha", m->act.alpha), wg_pf("act_beta", m->act.beta));
}

/* The Params of the gemm_common kernels after the four offsets. */
static void p_gemm(wg_lower *L, wg_dispatch *d, const wg_gemm *m, uint64_t nbatch, uint64_t tiles_n, uint64_t tiles_m,
                   uint64_t y_sm, const uint64_t *bd, const uint64_t *abs_, const uint64_t *bbs, const uint64_t *ybs,
                   const uint64_t *cbs, uint64_t klen, uint32_t a_sub, uint32_t b_sub, bool has_bias) {
    p_gemm_head(L, d, m, nbatch, tiles_n, tiles_m, y_sm, bd, abs_, bbs, ybs, cbs, has_bias);
    WG_P(L, d, wg_pu("klen", klen), wg_pu("a_sub", a_sub), wg_pu("b_sub", b_sub), wg_pu("in_h", m->in_h),
         wg_pu("in_w", m->in_w), wg_pu("out_w", m->out_w), wg_pu("k_h", m->k_h), wg_pu("k_w", m->k_w),
         wg_pu("s_h", m->s_h), wg_pu("s_w", m->s_w), wg_pu("p_h", m->p_h), wg_pu("p_w", m->p_w), wg_pu("d_h", m->d_h),
         wg_pu("d_w", m->d_w));
}

/* Binds A and B of the gemm_common kernels (packed halves when a16/b16:
 * *a_sub, *b_sub receive the parity of their first half), then C (the
 * bias, or an unused placeholder) and Y; part_n > 0 (split-K): C and Y
 * are the scratch's partial sums [part_off, part_off + part_n) instead. */
static void bind_gemm(wg_lower *L, wg_dispatch *d, const wg_gemm *m, bool a16, bool b16, uint64_t part_n,
                      uint32_t *a_sub, uint32_t *b_sub) {
    *a_sub = *b_sub = 0;
    if (a16) wg_bind_f16(L, d, "a_off", m->a, m->a_off, m->a_n, a_sub);
    else wg_bind(L, d, "a_off", m->a, m->a_off, m->a_n);
    if (b16) wg_bind_f16(L, d, "b_off", m->b, m->b_off, m->b_n, b_sub);
    else wg_bind(L, d, "b_off", m->b, m->b_off, m->b_n);
    if (part_n) {
        wg_scratch(L, m->part_off + part_n);
        wg_bind(L, d, "c_off", WG_SCRATCH, m->part_off, 1); /* unused placeholder (no bias in the partial sums) */
        wg_bind(L, d, "y_off", WG_SCRATCH, m->part_off, part_n);
        return;
    }
    if (m->bias >= 0) wg_bind(L, d, "c_off", m->bias, m->bias_off, m->bias_n);
    else wg_bind(L, d, "c_off", m->y, m->y_off, 1); /* unused placeholder */
    wg_bind(L, d, "y_off", m->y, m->y_off, m->y_n);
}

/* Batch dims right-aligned into the kernels' four slots. */
static void batch_slots(const wg_gemm *m, uint64_t *bd, uint64_t *abs_, uint64_t *bbs, uint64_t *ybs, uint64_t *cbs) {
    for (int i = 0; i < 4; i++) bd[i] = 1, abs_[i] = bbs[i] = ybs[i] = cbs[i] = 0;
    for (int i = 0; i < m->nb; i++) {
        int j = 4 - m->nb + i;
        bd[j] = m->bdims[i];
        abs_[j] = m->a_bs[i];
        bbs[j] = m->b_bs[i];
        ybs[j] = m->y_bs[i];
        cbs[j] = m->bias_bs[i];
    }
}

/* The reference kernel (kernels/matmul.wgsl): 16 x 16 tiles, one output per
 * invocation; f32 operands only. */
static rlx_status emit_ref(wg_lower *L, const wg_gemm *m) {
    if (m->conv) return wg_decline(L, "the reference matmul kernel has no implicit convolution");
    uint64_t nbatch = gemm_nbatch(m);
    uint64_t tiles_n = wg_cdiv(m->N, 16), tiles_m = wg_cdiv(m->M, 16);
    uint64_t groups = tiles_n * tiles_m * nbatch;
    if (groups >= ((uint64_t)1 << 31)) return wg_decline(L, "matmul too large for 32-bit indexing");
    if (gemm_half(L, m) && m->b == WG_SCRATCH) return wg_decline(L, "the reference matmul kernel reads no f16 scratch");
    wg_dispatch *d = wg_emit(L, "matmul");
    if (gemm_half(L, m)) d->elem = WG_ELEM_F16;
    wg_spec(L, d, "ACT", (double)m->act.kind);
    wg_bind(L, d, "a_off", m->a, m->a_off, m->a_n);
    wg_bind(L, d, "b_off", m->b, m->b_off, m->b_n);
    if (m->bias >= 0) wg_bind(L, d, "c_off", m->bias, m->bias_off, m->bias_n);
    else wg_bind(L, d, "c_off", m->a, m->a_off, 1); /* unused placeholder */
    wg_bind(L, d, "y_off", m->y, m->y_off, m->y_n);
    uint64_t bd[4], abs_[4], bbs[4], ybs[4], cbs[4];
    batch_slots(m, bd, abs_, bbs, ybs, cbs);
    p_gemm_head(L, d, m, nbatch, tiles_n, tiles_m, y_rows(m), bd, abs_, bbs, ybs, cbs, m->bias >= 0);
    return wg_grid_groups(L, d, groups);
}

/* The cooperative-matrix kernel (gemm_coop_gen.c, in the form the
 * self-test chose): 64 x 64 tiles, four subgroups of caps->coop_sg
 * invocations, scalar loads. */
/* The scalar load modes (wg_codes.h) that follow the operands' strides. */
static int scalar_a_mode(const wg_gemm *m) { return m->a_sm == 1 && m->a_sk != 1 ? GA_SCALAR_M : GA_SCALAR; }
static int scalar_b_mode(const wg_gemm *m) {
    return m->conv ? GB_CONV : m->b_sk == 1 && m->b_sn != 1 ? GB_SCALAR_K : GB_SCALAR;
}

rlx_status wg_emit_gemm_coop(wg_lower *L, const wg_gemm *m) {
    uint64_t nbatch = gemm_nbatch(m);
    uint64_t tiles_m = wg_cdiv(m->M, 64), tiles_n = wg_cdiv(m->N, 64);
    uint64_t groups = tiles_m * tiles_n * nbatch;
    if (groups >= ((uint64_t)1 << 31)) return wg_decline(L, "GEMM grid too large for 32-bit indexing");
    /* an f16 product: the T = f16 instance (C and Y halves, A and B packed
     * halves, exact in the f16 fragments; f32 accumulators, one rounding) */
    bool half = gemm_half(L, m);
    bool a16 = half || f16_a(L, m), b16 = half || f16_b(L, m);
    int amode = scalar_a_mode(m), bmode = scalar_b_mode(m);
    uint64_t bd[4], abs_[4], bbs[4], ybs[4], cbs[4];
    batch_slots(m, bd, abs_, bbs, ybs, cbs);
    uint32_t sg = L->caps->coop_sg ? L->caps->coop_sg : 32;
    if (L->caps->max_wg_storage && L->caps->max_wg_storage < 32768)
        return wg_decline(L, "the cooperative GEMM needs 32 KiB of workgroup memory");
    if (L->caps->coop_form >= wg_coop_form_count) return wg_decline(L, "no cooperative-matrix form");
    char *src = wg_gen_coop_source(&wg_coop_forms[L->caps->coop_form]);
    if (!src) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory generating the cooperative GEMM");
    wg_dispatch *d = wg_emit_source(L, "gemm_coop", src);
    free(src);
    if (half) d->elem = WG_ELEM_F16;
    wg_spec(L, d, "A_F16", a16);
    wg_spec(L, d, "B_F16", b16);
    wg_spec(L, d, "A_MODE", amode);
    wg_spec(L, d, "B_MODE", bmode);
    wg_spec(L, d, "ACT", (double)m->act.kind);
    wg_spec(L, d, "WG", 4 * sg);
    wg_spec(L, d, "SG", sg);
    if (m->conv && m->k_h <= 16 && m->k_w <= 16) {
        wg_spec(L, d, "CKH", m->k_h);
        wg_spec(L, d, "CKW", m->k_w);
    }
    uint32_t a_sub, b_sub;
    bind_gemm(L, d, m, a16, b16, 0, &a_sub, &b_sub);
    p_gemm(L, d, m, nbatch, tiles_n, tiles_m, y_rows(m), bd, abs_, bbs, ybs, cbs, m->K, a_sub, b_sub,
           m->bias >= 0);
    wg_p_u32(L, d, "r_off", 0); /* no residual binding in this kernel */
    return wg_grid_groups(L, d, groups);
}

static rlx_status emit_reduce(wg_lower *L, const wg_gemm *m, uint64_t nsplit);

/* The tiled kernel. nsplit > 1 (m->nb <= 3): split-K into the scratch,
 * then the reduce kernel. */
static rlx_status emit_tiled(wg_lower *L, const wg_gemm *m, const tile_cfg *t, uint64_t nsplit, uint64_t klen) {
    const wg_caps *c = L->caps;
    bool vec = L->caps->cfg->gemm_vec4;
    bool half = gemm_half(L, m);
    bool a16 = half || (c->f16 && f16_a(L, m)), b16 = (half && !m->b_f32) || (c->f16 && f16_b(L, m));
    uint64_t nbatch = gemm_nbatch(m);
    uint64_t bm = (uint64_t)t->wgy * t->tm, bn = (uint64_t)t->wgx * t->tn;
    uint64_t tiles_m = wg_cdiv(m->M, bm), tiles_n = wg_cdiv(m->N, bn);
    uint64_t groups = tiles_m * tiles_n * nbatch * (nsplit > 1 ? nsplit : 1);
    if (groups >= ((uint64_t)1 << 31)) return wg_decline(L, "GEMM grid too large for 32-bit indexing");
    if (nsplit > 1 && m->nb > 3) return wg_decline(L, "split-K with more than three batch dims");
    uint64_t y_sm = y_rows(m);

    /* batch dims right-aligned into four slots. Split-K: the slice is slot
     * 0 (outermost; the kernel's tile_job takes the k range from it), the
     * partial sums [nsplit][nbatch][M][N] contiguous in the scratch (y
     * strides of that layout, no bias) */
    uint64_t bd[4], abs_[4], bbs[4], ybs[4], cbs[4];
    batch_slots(m, bd, abs_, bbs, ybs, cbs);
    if (nsplit > 1) {
        uint64_t stride = m->M * m->N;
        for (int i = 3; i >= 1; i--) {
            ybs[i] = stride;
            cbs[i] = 0;
            stride *= bd[i];
        }
        bd[0] = nsplit;
        abs_[0] = klen * m->a_sk;
        bbs[0] = m->conv ? 0 : klen * m->b_sk; /* the implicit operand offsets k itself */
        ybs[0] = stride; /* nbatch * M * N */
        cbs[0] = 0;
    }
    /* load modes */
    int amode = scalar_a_mode(m), bmode = scalar_b_mode(m);
    if (vec) {
        if (m->a_sk == 1 && m->K % 4 == 0 && m->a_sm % 4 == 0 && m->a_off % 4 == 0 && all4(abs_, 4)) amode = GA_VEC_K;
        else if (m->a_sm == 1 && m->M % 4 == 0 && m->a_sk % 4 == 0 && m->a_off % 4 == 0 && all4(abs_, 4)) amode = GA_VEC_M;
        if (!m->conv) {
            if (m->b_sn == 1 && m->N % 4 == 0 && m->b_sk % 4 == 0 && m->b_off % 4 == 0 && all4(bbs, 4)) bmode = GB_VEC_N;
            else if (m->b_sk == 1 && m->K % 4 == 0 && m->b_sn % 4 == 0 && m->b_off % 4 == 0 && all4(bbs, 4)) bmode = GB_VEC_K;
        }
    }
    bool yvec = vec && !m->y_pix && y_sm % 4 == 0 && m->N % 4 == 0 && (nsplit > 1 || m->y_off % 4 == 0) && all4(ybs, 4);

    wg_gemm_kernel kc = { .tm = t->tm, .tn = t->tn, .wgx = t->wgx, .wgy = t->wgy, .bk = t->bk,
                          .amode = (uint32_t)amode, .bmode = (uint32_t)bmode, .a16 = a16, .b16 = b16,
                          .yvec = yvec, .splitk = nsplit > 1, .ypix = m->y_pix,
                          .act = nsplit > 1 ? 0 : (uint32_t)m->act.kind, .res = m->has_res && nsplit <= 1 };
    if (m->conv && m->k_h <= 16 && m->k_w <= 16) { /* constant divisors for the implicit operand */
        kc.ckh = m->k_h;
        kc.ckw = m->k_w;
    }
    /* the generated kernel (default), or gemm.wgsl with overrides
     * (RLX_GEMM_KERNEL=loop) */
    const char *kern = L->caps->cfg->gemm_kernel;
    wg_dispatch *d;
    if (kern && strcmp(kern, "loop") == 0) {
        d = wg_emit(L, "gemm");
        /* the overrides in this order; those after ACT only where set */
        const struct { const char *name; uint32_t v; } spec[] = {
            { "TM", kc.tm }, { "TN", kc.tn }, { "WGX", kc.wgx }, { "WGY", kc.wgy },
            { "BK", kc.bk }, { "A_MODE", kc.amode }, { "B_MODE", kc.bmode }, { "A_F16", kc.a16 },
            { "B_F16", kc.b16 }, { "Y_VEC", kc.yvec }, { "SPLITK", kc.splitk }, { "ACT", kc.act },
            { "Y_PIX", kc.ypix }, { "RES", kc.res }, { "CKH", kc.ckh }, { "CKW", kc.ckw },
        };
        for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++)
            if (i < 12 || spec[i].v) wg_spec(L, d, spec[i].name, spec[i].v);
        /* RLX_GEMM_PREFETCH=1: register prefetch of the next k tile, where
         * each invocation holds at most 8 items of each tile (gemm.wgsl
         * PF_MAX) */
        uint64_t nt = (uint64_t)t->wgx * t->wgy;
        uint64_t na = bm * t->bk / (amode == GA_VEC_K || amode == GA_VEC_M ? 4 : 1),
                 nbi = bn * t->bk / (bmode == GB_VEC_N || bmode == GB_VEC_K ? 4 : 1);
        if (L->caps->cfg->gemm_prefetch && wg_cdiv(na, nt) <= 8 && wg_cdiv(nbi, nt) <= 8) wg_spec(L, d, "PREFETCH", 1);
    } else {
        kc.unroll_k = L->caps->cfg->gemm_unroll_k;
        /* gpu.f16_accumulate=f16: an f16 product's sums as packed f16 FMAs
         * over blocks of gpu.f16_block elements of k (f16 tiles; not with an
         * f32 B, b_f32, whose values f16 sums would round) */
        const rlx_config *cfg = L->caps->cfg;
        if (half && a16 && b16 && L->caps->shader_f16 && cfg->f16_accumulate &&
            strcmp(cfg->f16_accumulate, "f16") == 0) {
            uint64_t hb = (uint64_t)cfg->f16_block;
            if (!wg_gemm_hblock_fits(hb, t->bk))
                return wg_decline(L, "gpu.f16_block=%llu is not a multiple of 4 that divides the GEMM tile's k step "
                                  "%u or is a multiple of it", (unsigned long long)hb, t->bk);
            kc.hblock = (uint32_t)hb;
        }
        /* gpu.gemm_pipeline and gpu.gemm_conv_geometry: the same bits */
        kc.pipeline = gemm_pipeline(L->caps, t, kc.hblock ? 2 : 4);
        gemm_conv_geometry(L->caps, m, &kc);
        char *src = wg_gen_gemm_source(&kc);
        if (!src) return wg_decline(L, "no generated GEMM kernel for this configuration (tile %ux%u, k step %u)", kc.tm, kc.tn, kc.bk);
        d = wg_emit_source(L, "gemm", src);
        free(src);
    }
    /* an f16 product's split-K partial sums are f32 (the scratch): that
     * dispatch is the f32 instance (T types only C, Y and R, which it binds
     * to the scratch; A and B stay packed halves), and gemm_reduce rounds
     * once to f16 */
    if (half && nsplit <= 1) d->elem = WG_ELEM_F16;
    uint32_t a_sub, b_sub;
    bind_gemm(L, d, m, a16, b16, nsplit > 1 ? nsplit * nbatch * m->M * m->N : 0, &a_sub, &b_sub);
    p_gemm(L, d, m, nsplit > 1 ? nsplit * nbatch : nbatch, tiles_n, tiles_m, nsplit > 1 ? m->N : y_sm, bd, abs_, bbs, ybs, cbs,
           nsplit > 1 ? klen : m->K, a_sub, b_sub, m->bias >= 0 && nsplit <= 1);
    /* the residual, bound last (its offset word is r_off, after d_w) */
    if (kc.res) wg_bind(L, d, "r_off", m->res, m->res_off, m->res_n);
    else if (nsplit > 1) wg_bind(L, d, "r_off", WG_SCRATCH, 0, 1); /* unused placeholder */
    else wg_bind(L, d, "r_off", m->y, m->y_off, 1); /* unused placeholder */
    RLX_TRY(wg_grid_groups(L, d, groups));
    if (nsplit <= 1) return RLX_OK;
    return emit_reduce(L, m, nsplit);
}

/* The second pass of split-K (kernels/gemm_reduce.wgsl): adds the nsplit
 * f32 partial sums [nsplit][nbatch][M][N] of the scratch in slice order,
 * then the epilogue into y (and from the bias and the residual) at each
 * batch item's strides; the f16 instance for an f16 product (one
 * rounding). */
static rlx_status emit_reduce(wg_lower *L, const wg_gemm *m, uint64_t nsplit) {
    uint64_t mn = m->M * m->N, total = gemm_nbatch(m) * mn, part_n = nsplit * total, y_sm = y_rows(m);
    if (total >= ((uint64_t)1 << 32) || part_n >= ((uint64_t)1 << 32))
        return wg_decline(L, "split-K partial sums too large for 32-bit indexing");
    uint64_t bd[4], abs_[4], bbs[4], ybs[4], cbs[4];
    batch_slots(m, bd, abs_, bbs, ybs, cbs);
    wg_dispatch *r = wg_emit(L, "gemm_reduce");
    if (gemm_half(L, m)) r->elem = WG_ELEM_F16;
    wg_spec(L, r, "ACT", (double)m->act.kind);
    if (m->has_res) wg_spec(L, r, "RES", 1);
    if (total > mn) wg_spec(L, r, "BATCHED", 1);
    wg_bind(L, r, "p_off", WG_SCRATCH, m->part_off, part_n);
    if (m->bias >= 0) wg_bind(L, r, "c_off", m->bias, m->bias_off, m->bias_n);
    else wg_bind(L, r, "c_off", m->y, m->y_off, 1);
    wg_bind(L, r, "y_off", m->y, m->y_off, m->y_n);
    WG_P(L, r, wg_pu("M", m->M), wg_pu("N", m->N), wg_pu("nsplit", nsplit), wg_pu("has_bias", m->bias >= 0),
         wg_pf("alpha", m->alpha), wg_pf("beta", m->beta), wg_pu("bias_sm", m->bias_sm), wg_pu("bias_sn", m->bias_sn),
         wg_pu("y_sm", y_sm), wg_pf("act_alpha", m->act.alpha), wg_pf("act_beta", m->act.beta), wg_pu("total", total),
         wg_pu("mn", mn));
    for (int i = 0; i < 4; i++) wg_p_u32(L, r, "bdims", (uint32_t)bd[i]);
    for (int i = 0; i < 4; i++) wg_p_u32(L, r, "y_bs", (uint32_t)ybs[i]);
    for (int i = 0; i < 4; i++) wg_p_u32(L, r, "bias_bs", (uint32_t)cbs[i]);
    if (m->has_res) wg_bind(L, r, "r_off", m->res, m->res_off, m->res_n); /* the last word */
    else wg_bind(L, r, "r_off", m->y, m->y_off, 1);
    return wg_grid_1d(L, r, total);
}

/* The one-row product (kernels/gemv.wgsl): M == 1, one batch item, not
 * the implicit convolution; a MatMul or Gemm node (splitk_ok: its k order
 * may change). B contiguous along n (a MatMul weight) takes MODE_K false, along
 * k (Gemm transB) MODE_K true, anything else the element-by-element loads
 * (as do unaligned windows, or gpu.gemm_vec4=0). Split-K fills the GPU:
 * about 2 x gpu.gemm_target_wg workgroups, slices of at least 256 (MODE_K:
 * 512) elements of k, at most 64 slices, their f32 partial sums in the
 * scratch; gemm_reduce adds them in slice order and applies the epilogue.
 * f16 operands are read as packed halves (an f16 product, or f16 mode). */
static rlx_status emit_gemv(wg_lower *L, const wg_gemm *m) {
    const wg_caps *c = L->caps;
    bool half = gemm_half(L, m);
    bool a16 = half || (c->f16 && f16_a(L, m)), b16 = (half && !m->b_f32) || (c->f16 && f16_b(L, m));
    bool mode_k = m->b_sk == 1 && m->b_sn != 1;
    /* 16-byte loads: whole groups of 8 halves or 4 words */
    uint64_t va = a16 ? 8 : 4, vb = b16 ? 8 : 4;
    bool vec = c->cfg->gemm_vec4 && m->b_off % vb == 0 &&
               (mode_k ? m->K % 8 == 0 && m->b_sn % vb == 0 && m->a_sk == 1 && m->a_off % va == 0
                       : m->N % 8 == 0 && m->b_sk % vb == 0);
    uint64_t blocks = mode_k ? wg_cdiv(m->N, 8) : wg_cdiv(m->N, 256);
    /* slices: a multiple of `step` long, at least `least` (32 rows per k
     * lane along n, 2 chunks per lane along k); automatic: about 2 x
     * gpu.gemm_target_wg workgroups (the H200 sweep of BENCHMARKS.md: 16
     * slices of 1 x 4096 x 4096 take 0.020 ms, 64 slices 0.032; transB
     * 4096 x 4096, 512 blocks: one slice, 0.013 ms, two 0.019) */
    uint64_t step = mode_k ? 256 : 64, least = mode_k ? 512 : 256;
    uint64_t nsplit = 1, klen = m->K;
    int64_t forced = c->cfg->gemm_splitk;
    uint64_t want = forced >= 0 ? (uint64_t)forced : wg_cdiv(2 * (uint64_t)c->cfg->gemm_target_wg, blocks);
    uint64_t max_split = m->K / least;
    if (want > max_split) want = max_split;
    if (want > 64) want = 64;
    if (want > 1) {
        klen = wg_cdiv(wg_cdiv(m->K, want), step) * step;
        nsplit = wg_cdiv(m->K, klen);
    }
    if (nsplit > 1 && nsplit * m->N * 4 > c->max_binding) nsplit = 1, klen = m->K;
    uint64_t groups = blocks * nsplit;
    if (groups >= ((uint64_t)1 << 31)) return wg_decline(L, "GEMV grid too large for 32-bit indexing");
    wg_dispatch *d = wg_emit(L, "gemv");
    /* T types C, Y and R: the f32 scratch with split-K */
    if (half && nsplit <= 1) d->elem = WG_ELEM_F16;
    wg_spec(L, d, "A_F16", a16);
    wg_spec(L, d, "B_F16", b16);
    wg_spec(L, d, "MODE_K", mode_k);
    wg_spec(L, d, "VEC", vec);
    wg_spec(L, d, "SPLIT", nsplit > 1);
    wg_spec(L, d, "ACT", nsplit > 1 ? 0 : (double)m->act.kind);
    uint32_t a_sub, b_sub;
    bind_gemm(L, d, m, a16, b16, nsplit > 1 ? nsplit * m->N : 0, &a_sub, &b_sub);
    uint64_t bd[4] = { 1, 1, 1, 1 }, zero[4] = { 0, 0, 0, 0 };
    p_gemm(L, d, m, nsplit, blocks, 1, m->N, bd, zero, zero, zero, zero, klen, a_sub, b_sub,
           m->bias >= 0 && nsplit <= 1);
    wg_p_u32(L, d, "r_off", 0); /* the kernel has no residual and binds no R */
    RLX_TRY(wg_grid_groups(L, d, groups));
    return nsplit > 1 ? emit_reduce(L, m, nsplit) : RLX_OK;
}

uint64_t wg_gemm_split_count(const wg_caps *c, uint64_t M, uint64_t N, uint64_t K, uint64_t nbatch, uint64_t tiles,
                             uint64_t max_split) {
    /* split-K (products that allow it: MatMul, Gemm, the fast conv paths,
     * the integer GEMM) when the grid of tiles x batch items is small and k
     * long: the slices multiply the grid */
    uint64_t forced = (c->cfg->gemm_splitk < 0 ? UINT64_MAX : (uint64_t)c->cfg->gemm_splitk);
    uint64_t target = (uint64_t)c->cfg->gemm_target_wg;
    /* GEMV-like shapes are bound by reading B: more, smaller slices keep
     * more loads in flight (skinny tiles have 32..128 invocations) */
    if (M <= 16) target *= 4;
    /* automatic for enough work to pay for the second dispatch, or a
     * grid so small that most of the GPU idles (a classifier head with
     * one row: 1 x 1000 x 1280 took 190 us in 8 workgroups on an H200),
     * when the grid is at most `target` tiles x items: slices for about
     * 1.5 x target workgroups. The H200 sweep of BENCHMARKS.md
     * ("Split-K with batch dims") chose the pair: against splitting
     * grids of at most target / 2 into about target workgroups, BERT-base
     * batch 8 11.3 -> 9.5 ms, batch 1 2.68 -> 2.52, MiniLM batch 8 1.86
     * -> 1.68, ResNet-50 batch 8 5.60 -> 5.20, nothing slower; 2 x target
     * workgroups slowed ResNet-50 batch 1 by 4%. ResNet-50 at batch 8,
     * 64 x 64 tiles: the 7 x 7 stage's 3x3 convolutions are 8 images x 8
     * x 1 tiles = 64, 6 slices; the 14 x 14 stage's 8 x 4 x 4 = 128, 3
     * slices; BERT-base batch 8's FFN output product (1024 x 3072 x 768)
     * 192 tiles, 2 slices */
    bool worth = K >= 256 && (nbatch * M * N * K >= ((uint64_t)1 << 21) || tiles <= 16);
    uint64_t want = forced != UINT64_MAX ? forced : (worth && tiles <= target ? wg_cdiv(3 * target / 2, tiles) : 1);
    if (want > max_split) want = max_split;
    if (want > 64) want = 64;
    /* the partial sums [nsplit][nbatch][M][N] (4 bytes each) must fit one
     * binding: fewer slices, else none */
    uint64_t fit = c->max_binding / (4 * nbatch * M * N);
    if (want > fit) want = fit;
    return want < 1 ? 1 : want;
}

/* Split-K of a product in tiles t (nbatch batch items): the slices
 * (*nsplit, 1 for none) and the k elements of each (*klen); the slice in
 * batch slot 0, so at most three batch dims. */
static void split_plan(const wg_lower *L, const wg_gemm *m, const tile_cfg *t, uint64_t nbatch, uint64_t *nsplit,
                       uint64_t *klen) {
    uint64_t bm = (uint64_t)t->wgy * t->tm, bn = (uint64_t)t->wgx * t->tn;
    uint64_t tiles = wg_cdiv(m->M, bm) * wg_cdiv(m->N, bn) * nbatch;
    *nsplit = 1;
    *klen = m->K;
    if (m->splitk_ok && m->nb <= 3 && m->K > 2 * t->bk) {
        uint64_t want = wg_gemm_split_count(L->caps, m->M, m->N, m->K, nbatch, tiles, m->K / (2 * t->bk));
        if (want > 1) {
            *klen = wg_cdiv(wg_cdiv(m->K, want), t->bk) * t->bk;
            *nsplit = wg_cdiv(m->K, *klen);
        }
    }
}

/* One product as one GEMM (or GEMM + reduce with split-K): its operand
 * windows fit a binding each. */
static rlx_status emit_one(wg_lower *L, const wg_gemm *m) {
    if (!wg_act_ok(&m->act)) return wg_decline(L, "activation kind %d", (int)m->act.kind);
    uint64_t big = (uint64_t)1 << 31;
    if (m->M >= big || m->N >= big || m->K >= big || m->a_n >= big || m->b_n >= big || m->y_n >= big)
        return wg_decline(L, "GEMM too large for 32-bit indexing");
    if (m->y_pix && (m->conv || m->splitk_ok || m->has_res))
        return wg_decline(L, "pixel-grid output with conv, split-K or a residual");
    const char *kern = L->caps->cfg->gemm_kernel;
    /* only the tiled kernels store to a pixel grid and add a residual */
    bool tiled_only = m->y_pix || m->has_res;
    if (!tiled_only && kern && strcmp(kern, "ref") == 0) return emit_ref(L, m);
    /* tensor cores (f16 mode, probed at device open) for shapes that fill
     * 64 x 64 tiles reasonably */
    bool force_coop = kern && strcmp(kern, "coop") == 0;
    /* f16 products take its f16 instance when that passed the self-test
     * too (caps->coop16, whatever f16 mode says); f32 products need f16
     * mode (caps->coop) and weights that survive the rounding */
    bool half = gemm_half(L, m);
    bool coop_shape = !tiled_only && !(kern && (strcmp(kern, "tiled") == 0 || strcmp(kern, "loop") == 0)) &&
                      (force_coop || (m->M >= 32 && m->N >= 32 && m->K >= 32));
    if (coop_shape && !m->b_f32 && (half ? L->caps->coop16 : L->caps->coop && coop_weights_fit(L, m)))
        return wg_emit_gemm_coop(L, m);
    uint64_t nbatch = gemm_nbatch(m);
    tile_cfg t;
    bool bad;
    /* one row of a MatMul or Gemm (convolutions keep the tiled kernel, whose
     * order with gpu.gemm_splitk=0 is the direct conv's): the GEMV kernel,
     * unless a kernel family or a tile is forced */
    bool auto_kern = !kern || strcmp(kern, "auto") == 0;
    bool mm = L->n && (L->n->op == RLX_OP_MatMul || L->n->op == RLX_OP_Gemm);
    if (!tiled_only && auto_kern && mm && m->splitk_ok && m->M == 1 && nbatch == 1 && !m->conv &&
        !(L->caps->cfg->gemm_tile && *L->caps->cfg->gemm_tile))
        return emit_gemv(L, m);
    if (forced_tile(L->caps, &t, &bad)) {
        if (bad || !tile_fits(L->caps, &t))
            return wg_decline(L, "gpu.gemm_tile=%s does not fit the device (TM, TN 4 or 8; at most %u invocations, "
                              "%u bytes of workgroup memory)",
                              L->caps->cfg->gemm_tile, L->caps->max_wg_invocations,
                              L->caps->max_wg_storage ? L->caps->max_wg_storage : 16384);
    } else {
        t = choose_tiles(L->caps, m->M, m->N, nbatch);
        /* long products (k >= 768) with at least 128 rows: 128 x 64 tiles (8
         * x 4 per invocation: more products per shared-memory read) where
         * that grid, split-K slices included, still has 1.5 x target
         * workgroups. From per-node times of the four tiles on the H200
         * (BENCHMARKS.md "GEMM tiles by shape"): BERT-base batch 8's
         * products 8.6 -> 7.5 ms, ResNet-50 batch 8's convolutions 5.1 ->
         * 4.6 ms (with the rule above), batch 1 no slower. Shorter products
         * lost with these tiles (ResNet-50's k = 128..512 at 28 x 28: 15-50%,
         * mostly from the extra split-K pass that fewer tiles bring). */
        static const tile_cfg tall = { 8, 4, 16, 16, 16 };
        uint64_t target = (uint64_t)L->caps->cfg->gemm_target_wg;
        if (memcmp(&t, &k_tile_mid, sizeof t) == 0 && m->M >= 128 && m->K >= 768 &&
            tile_fits(L->caps, &tall)) {
            uint64_t ns, kl;
            split_plan(L, m, &tall, nbatch, &ns, &kl);
            if (wg_cdiv(m->M, 128) * wg_cdiv(m->N, 64) * nbatch * ns >= 3 * target / 2) t = tall;
        }
    }
    uint64_t nsplit, klen;
    split_plan(L, m, &t, nbatch, &nsplit, &klen);
    return emit_tiled(L, m, &t, nsplit, klen);
}

/* ------------------------------------------------ operands larger than one binding */

/* Windows (elements) of each operand of a block: bc items of the innermost
 * batch dim (the outer batch dims fixed), mc rows, nc columns. Every stride
 * is non-negative. The implicit conv operand of a block is the input
 * channels of its bc (image, group) items whatever its columns (b_sk and
 * b_sn do not describe it). */
static uint64_t ext_a(const wg_gemm *m, uint64_t bc, uint64_t mc) {
    uint64_t bs = m->nb ? m->a_bs[m->nb - 1] : 0;
    return 1 + (bc - 1) * bs + (mc - 1) * m->a_sm + (m->K ? m->K - 1 : 0) * m->a_sk;
}
static uint64_t ext_b(const wg_gemm *m, uint64_t bc, uint64_t nc) {
    uint64_t bs = m->nb ? m->b_bs[m->nb - 1] : 0;
    if (m->conv) {
        uint64_t taps = (uint64_t)m->k_h * m->k_w;
        uint64_t cin = taps ? m->K / taps : 0;
        return (bc - 1) * bs + (cin ? cin : 1) * m->in_h * m->in_w;
    }
    return 1 + (bc - 1) * bs + (m->K ? m->K - 1 : 0) * m->b_sk + (nc - 1) * m->b_sn;
}
static uint64_t ext_y(const wg_gemm *m, uint64_t bc, uint64_t mc, uint64_t nc) {
    uint64_t bs = m->nb ? m->y_bs[m->nb - 1] : 0;
    return 1 + (bc - 1) * bs + (mc - 1) * y_rows(m) + (nc - 1);
}
static uint64_t ext_bias(const wg_gemm *m, uint64_t bc, uint64_t mc, uint64_t nc) {
    if (m->bias < 0) return 1;
    uint64_t bs = m->nb ? m->bias_bs[m->nb - 1] : 0;
    return 1 + (bc - 1) * bs + (mc - 1) * m->bias_sm + (nc - 1) * m->bias_sn;
}

static bool block_fits(const wg_gemm *m, uint64_t bc, uint64_t mc, uint64_t nc, uint64_t room) {
    return ext_a(m, bc, mc) <= room && ext_b(m, bc, nc) <= room && ext_y(m, bc, mc, nc) <= room &&
           ext_bias(m, bc, mc, nc) <= room;
}

/* Largest x in [1, hi] with ok(x), 0 if none; ok is monotone (true up to a
 * point). */
#define LARGEST(hi, expr_of_x, out)                       \
    do {                                                  \
        uint64_t lo_ = 0, hi_ = (hi);                     \
        while (lo_ < hi_) {                               \
            uint64_t x = lo_ + (hi_ - lo_ + 1) / 2;       \
            if (expr_of_x) lo_ = x;                       \
            else hi_ = x - 1;                             \
        }                                                 \
        (out) = lo_;                                      \
    } while (0)

/* A block count below the whole rounded down to a multiple of 4 (when at
 * least 4): block offsets then stay multiples of 4 where the strides allow,
 * so that blocks keep the vec4 loads and stores (emit_tiled checks every
 * offset and falls back to scalar loads where one is not). */
static uint64_t round4(uint64_t c, uint64_t whole) { return c < whole && c >= 4 ? c / 4 * 4 : c; }

/* Most dispatches one product may be split into before the lowering
 * declines (the step then runs on the CPU). */
#define GEMM_MAX_BLOCKS 16384u

/* Blocks of a product whose every row of A and column of B fits a binding:
 * first by items of the innermost batch dim (the outer batch dims one at a
 * time), then by rows of A and y (M) and columns of B and y (N; not for the
 * implicit conv operand, whose columns are pixels). Each block is one
 * emit_one without split-K: every output is still summed over the whole K
 * in the same order, the same bits as one unsplit dispatch. */
static rlx_status emit_blocks(wg_lower *L, const wg_gemm *m) {
    uint64_t nbatch = gemm_nbatch(m);
    uint64_t room = wg_window_room(L->caps);
    uint64_t inner = m->nb ? m->bdims[m->nb - 1] : 1, outer = m->nb ? nbatch / inner : 1;
    uint64_t bc = 0, mc = m->M, nc = m->N;
    LARGEST(inner, block_fits(m, x, m->M, m->N, room), bc);
    if (bc == 0) { /* one batch item at a time, split M and N */
        bc = 1;
        LARGEST(m->M, ext_a(m, 1, x) <= room, mc);
        LARGEST(m->N, ext_b(m, 1, x) <= room, nc);
        if (mc == 0 || nc == 0) return wg_decline(L, "a row of A or a column of B exceeds one storage binding");
        if (!block_fits(m, 1, mc, nc, room)) {
            uint64_t mc2;
            LARGEST(mc, block_fits(m, 1, x, nc, room), mc2);
            if (mc2) {
                mc = mc2;
            } else {
                mc = 1;
                LARGEST(nc, block_fits(m, 1, 1, x, room), nc);
                if (nc == 0) return wg_decline(L, "no block of the GEMM fits one storage binding");
            }
        }
        mc = round4(mc, m->M);
        nc = round4(nc, m->N);
    }
    if (m->conv && nc < m->N) return wg_decline(L, "the implicit convolution's output exceeds one storage binding");
    uint64_t blocks = outer * ((inner + bc - 1) / bc) * ((m->M + mc - 1) / mc) * ((m->N + nc - 1) / nc);
    if (blocks > GEMM_MAX_BLOCKS)
        return wg_decline(L, "splitting the GEMM by the binding limit would take %llu dispatches",
                          (unsigned long long)blocks);
    for (uint64_t q = 0; q < outer; q++) {
        /* offsets of outer batch item q (batch dims 0 .. nb-2) */
        uint64_t a0 = m->a_off, b0 = m->b_off, y0 = m->y_off, c0 = m->bias_off, r = q;
        for (int i = m->nb - 2; i >= 0; i--) {
            uint64_t idx = r % m->bdims[i];
            r /= m->bdims[i];
            a0 += idx * m->a_bs[i];
            b0 += idx * m->b_bs[i];
            y0 += idx * m->y_bs[i];
            c0 += idx * m->bias_bs[i];
        }
        uint64_t ia = m->nb ? m->a_bs[m->nb - 1] : 0, ib = m->nb ? m->b_bs[m->nb - 1] : 0;
        uint64_t iy = m->nb ? m->y_bs[m->nb - 1] : 0, ic = m->nb ? m->bias_bs[m->nb - 1] : 0;
        for (uint64_t j0 = 0; j0 < inner; j0 += bc) {
            uint64_t bn = inner - j0 < bc ? inner - j0 : bc;
            for (uint64_t m0 = 0; m0 < m->M; m0 += mc)
                for (uint64_t n0 = 0; n0 < m->N; n0 += nc) {
                    wg_gemm blk = *m;
                    blk.M = m->M - m0 < mc ? m->M - m0 : mc;
                    blk.N = m->N - n0 < nc ? m->N - n0 : nc;
                    blk.y_sm = y_rows(m);
                    blk.nb = m->nb ? 1 : 0;
                    memset(blk.bdims, 0, sizeof blk.bdims);
                    memset(blk.a_bs, 0, sizeof blk.a_bs);
                    memset(blk.b_bs, 0, sizeof blk.b_bs);
                    memset(blk.y_bs, 0, sizeof blk.y_bs);
                    memset(blk.bias_bs, 0, sizeof blk.bias_bs);
                    if (m->nb) {
                        blk.bdims[0] = bn;
                        blk.a_bs[0] = ia;
                        blk.b_bs[0] = ib;
                        blk.y_bs[0] = iy;
                        blk.bias_bs[0] = ic;
                    }
                    blk.a_off = a0 + j0 * ia + m0 * m->a_sm;
                    blk.a_n = ext_a(m, bn, blk.M);
                    blk.b_off = b0 + j0 * ib + (m->conv ? 0 : n0 * m->b_sn);
                    blk.b_n = ext_b(m, bn, blk.N);
                    blk.y_off = y0 + j0 * iy + m0 * blk.y_sm + n0;
                    blk.y_n = ext_y(m, bn, blk.M, blk.N);
                    if (m->bias >= 0) {
                        blk.bias_off = c0 + j0 * ic + m0 * m->bias_sm + n0 * m->bias_sn;
                        blk.bias_n = ext_bias(m, bn, blk.M, blk.N);
                    }
                    if (m->has_res) { /* laid out like y */
                        blk.res_off = m->res_off + (blk.y_off - m->y_off);
                        blk.res_n = blk.y_n;
                    }
                    blk.splitk_ok = false;
                    RLX_TRY(emit_one(L, &blk));
                }
        }
    }
    return RLX_OK;
}

static bool window_fits(const wg_caps *c, uint64_t off, uint64_t n) { return wg_binding_bytes(c, off, n) <= c->max_binding; }

/* One product, split when an operand exceeds one storage binding (see
 * emit_blocks: the same bits as one dispatch). When one row of A or one
 * column of B is itself larger than a binding (a MatMul weight B [K, N]
 * stored row-major, whose columns span all of it), K is split too: chunk 0
 * computes y = alpha * A0 B0 (+ beta * C), each later chunk
 * y = alpha * Ak Bk + y (y bound again as the bias), and only the last
 * applies the activation. That changes the summation order: the result
 * then differs from the unsplit one by rounding only. */
rlx_status wg_emit_gemm(wg_lower *L, const wg_gemm *m) {
    uint64_t nbatch = gemm_nbatch(m);
    if (nbatch == 0 || m->M == 0 || m->N == 0) return RLX_OK;
    const wg_caps *c = L->caps;
    if (window_fits(c, m->a_off, m->a_n) && window_fits(c, m->b_off, m->b_n) && window_fits(c, m->y_off, m->y_n) &&
        (m->bias < 0 || window_fits(c, m->bias_off, m->bias_n)) && (!m->has_res || window_fits(c, m->res_off, m->res_n)))
        return emit_one(L, m);
    if (m->y_pix) return wg_decline(L, "a pixel-grid GEMM with an operand larger than one storage binding");
    uint64_t room = wg_window_room(c);
    if (ext_a(m, 1, 1) <= room && ext_b(m, 1, 1) <= room) return emit_blocks(L, m);
    if (m->conv) return wg_decline(L, "a row of the convolution's weights exceeds one storage binding");
    if (gemm_half(L, m)) return wg_decline(L, "an f16 GEMM whose K would be split by the binding limit (partial sums "
                                              "rounded to f16)");
    if (m->K == 0) return wg_decline(L, "K = 0 with operands larger than a binding");
    /* the largest K chunk whose row of A and column of B fit */
    uint64_t kc;
    LARGEST(m->K, 1 + (x - 1) * m->a_sk <= room && 1 + (x - 1) * m->b_sk <= room, kc);
    if (kc == 0) return wg_decline(L, "one element's strides exceed a binding");
    kc = round4(kc, m->K);
    uint64_t chunks = (m->K + kc - 1) / kc;
    if (chunks > GEMM_MAX_BLOCKS)
        return wg_decline(L, "K = %llu would take %llu chunks", (unsigned long long)m->K, (unsigned long long)chunks);
    for (uint64_t k0 = 0; k0 < m->K; k0 += kc) {
        wg_gemm sub = *m;
        sub.K = m->K - k0 < kc ? m->K - k0 : kc;
        sub.a_off = m->a_off + k0 * m->a_sk;
        sub.b_off = m->b_off + k0 * m->b_sk;
        if (k0 > 0) { /* accumulate onto y: bias = y, beta = 1 */
            sub.bias = m->y;
            sub.beta = 1.0f;
            sub.bias_off = m->y_off;
            sub.bias_n = m->y_n;
            sub.bias_sm = y_rows(m);
            sub.bias_sn = 1;
            memcpy(sub.bias_bs, m->y_bs, sizeof sub.bias_bs);
        }
        if (k0 + kc < m->K) { /* the residual and the activation on the last chunk only */
            sub.act = (rlx_act){ .kind = RLX_ACT_NONE };
            sub.has_res = false;
        }
        sub.y_sm = y_rows(m);
        sub.splitk_ok = false;
        RLX_TRY(emit_blocks(L, &sub)); /* sets every block's windows */
    }
    return RLX_OK;
}
