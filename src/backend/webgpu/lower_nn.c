/* WGSL lowerings of the nn family: Conv (direct, or im2col + matmul),
 * ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
 * BatchNormalization (inference), Gemm, MatMul, Resize, GridSample (Softmax and
 * LogSoftmax are in lower_reduce.c). f32 only. Conv/pool attributes are resolved by
 * src/ir/ops/conv_geom.h; semantics are the ONNX operators' (versions noted
 * per lowering). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/platform.h"
#include "ir/op.h"
#include "backend/webgpu/wg_codes.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/gridsample.h"
#include "ir/ops/resize_geom.h"

/* ------------------------------------------------------------ geometry */

/* Conv geometry padded to 3 spatial dims (unit leading dims). */
typedef struct geom3 {
    uint64_t n, c_in, c_out, group;
    uint64_t in[3], out[3], k[3], s[3], p[3], pe[3], dil[3];
} geom3;

static rlx_status resolve_geom(wg_lower *L, rlx_conv_kind kind, geom3 *o) {
    const rlx_value *x = wg_in(L, 0);
    const rlx_value *w = kind == RLX_GEOM_POOL ? NULL : wg_in(L, 1);
    if (!x || !rlx_value_is_static(x) || (kind != RLX_GEOM_POOL && (!w || !rlx_value_is_static(w))))
        return wg_decline(L, "input or weight shape is not static");
    rlx_conv_geom g;
    if (rlx_conv_geom_resolve(L->n, kind, x->dims, x->rank, w ? w->dims : NULL, w ? w->rank : 0, &g) != RLX_OK)
        return wg_decline(L, "geometry does not resolve");
    memset(o, 0, sizeof *o);
    o->n = (uint64_t)g.n;
    o->c_in = (uint64_t)g.c_in;
    o->c_out = (uint64_t)g.c_out;
    o->group = (uint64_t)g.group;
    int pad = 3 - g.nsp;
    for (int i = 0; i < 3; i++) {
        o->in[i] = o->out[i] = o->k[i] = o->s[i] = o->dil[i] = 1;
        o->p[i] = o->pe[i] = 0;
    }
    for (int i = 0; i < g.nsp; i++) {
        o->in[pad + i] = (uint64_t)g.in[i];
        o->out[pad + i] = (uint64_t)g.out[i];
        o->k[pad + i] = (uint64_t)g.k[i];
        o->s[pad + i] = (uint64_t)g.stride[i];
        o->p[pad + i] = (uint64_t)g.pad_begin[i];
        o->pe[pad + i] = (uint64_t)g.pad_end[i];
        o->dil[pad + i] = (uint64_t)g.dil[i];
    }
    /* the kernels index in u32 and i32: keep every product well inside */
    uint64_t big = (uint64_t)1 << 30;
    for (int i = 0; i < 3; i++)
        if (o->in[i] >= big || o->out[i] >= big || o->k[i] * o->dil[i] >= big || o->s[i] >= big || o->p[i] >= big)
            return wg_decline(L, "geometry too large for 32-bit indexing");
    return RLX_OK;
}

static uint64_t sp3(const uint64_t *d) { return d[0] * d[1] * d[2]; }

/* The geometry words of the conv, im2col and pool kernels: in, out, k, s,
 * p, dil, three of each. */
static void p_geom3(wg_lower *L, wg_dispatch *d, const geom3 *g) {
    const uint64_t *v[6] = { g->in, g->out, g->k, g->s, g->p, g->dil };
    static const char *const k_name[6][3] = { { "in_d", "in_h", "in_w" }, { "out_d", "out_h", "out_w" },
                                              { "k_d", "k_h", "k_w" },    { "s_d", "s_h", "s_w" },
                                              { "p_d", "p_h", "p_w" },    { "dil_d", "dil_h", "dil_w" } };
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < 3; i++) wg_p_u32(L, d, k_name[k][i], (uint32_t)v[k][i]);
}

/* The 2-D geometry words of dwconv.wgsl and pool2d.wgsl: in, out, s, p,
 * dil, two of each (the last two spatial dims). */
static void p_geom2(wg_lower *L, wg_dispatch *d, const geom3 *g) {
    const uint64_t *v[5] = { g->in, g->out, g->s, g->p, g->dil };
    static const char *const k_name[5][2] = { { "in_h", "in_w" }, { "out_h", "out_w" }, { "s_h", "s_w" },
                                              { "p_h", "p_w" },   { "d_h", "d_w" } };
    for (int k = 0; k < 5; k++)
        for (int i = 1; i < 3; i++) wg_p_u32(L, d, k_name[k][i - 1], (uint32_t)v[k][i]);
}

/* x, w, the bias (w's first element when absent) and y: the first four
 * operands of conv_direct.wgsl, dwconv.wgsl and conv_transpose.wgsl. */
/* The element-type gate of the lowerings below: every present input and
 * output is of a type that `kernel`'s //!elem line lists (f32, f16: the
 * product, convolution, pool and normalisation kernels are written for
 * T = f32 and T = f16, computing in f32) and all are of one dtype (the
 * ONNX type constraint T of these ops; BatchNormalization-15's other
 * types for scale and statistics decline). f16 needs shader-f16
 * (wg_check_io declines otherwise, and the dispatch report says so). */
static rlx_status check_float_io(wg_lower *L, const char *kernel, int n_out) {
    RLX_TRY(wg_check_io(L, wg_kernel_types(kernel) & (WG_F32 | WG_F16), n_out));
    rlx_dtype dt = wg_out(L, 0)->dtype;
    for (int i = 0; i < L->n->n_in; i++)
        if (wg_in(L, i) && wg_in(L, i)->dtype != dt)
            return wg_decline(L, "input %d is %s, the output %s", i, rlx_dtype_name(wg_in(L, i)->dtype),
                              rlx_dtype_name(dt));
    return RLX_OK;
}

/* The T of the node's kernels: its output's dtype (f32 or f16). Set before
 * binding: wg_bind_value binds an f16 value as halves in a T = f16
 * dispatch. */
static wg_elem out_elem(const wg_lower *L) { return wg_elem_of(wg_out(L, 0)->dtype); }

static void bind_conv(wg_lower *L, wg_dispatch *d, int x, int w, int b, int y) {
    wg_bind_value(L, d, "x_off", x);
    wg_bind_value(L, d, "w_off", w);
    wg_bind_or(L, d, "b_off", b, w);
    wg_bind_value(L, d, "y_off", y);
}

/* The Params of conv_direct.wgsl and conv_transpose.wgsl after the four
 * offsets. */
static void p_conv(wg_lower *L, wg_dispatch *d, const geom3 *g, bool has_bias, uint64_t total, const rlx_act *act) {
    WG_P(L, d, wg_pu("n", g->n), wg_pu("c_in", g->c_in), wg_pu("c_out", g->c_out), wg_pu("group", g->group));
    p_geom3(L, d, g);
    WG_P(L, d, wg_pu("has_bias", has_bias), wg_pu("total", total), wg_pf("act_alpha", act->alpha),
         wg_pf("act_beta", act->beta));
}

/* ------------------------------------------------------------ Conv */

/* Convolution algorithms. All of them sum each output over (ci, kz, kr, kc)
 * ascending with one f32 accumulator and fma, then add the bias, then the
 * activation: they give the same bits (tests/test_gpu_conv.c checks it) --
 * except when the GEMM of the implicit or pointwise path splits k (a long
 * k and a grid of output tiles x images x groups too small to fill the GPU,
 * e.g. ResNet-50's last stages at batch 1 to 8: lower_gemm.c emit_one;
 * RLX_GEMM_SPLITK=0 turns it off).
 * Direct and im2col + GEMM are the reference pair that always agree. */
typedef enum conv_algo {
    CONV_DIRECT,   /* conv_direct.wgsl: one invocation per output */
    CONV_IM2COL,   /* im2col.wgsl into the scratch, then gemm.wgsl */
    CONV_IMPLICIT, /* gemm.wgsl gathering the im2col operand itself (2-D) */
    CONV_POINTWISE,/* 1x1, stride 1, no padding: gemm.wgsl on x as it is */
    CONV_DEPTHWISE /* dwconv.wgsl (2-D, one input channel per group) */
} conv_algo;

/* r >= 0: the fused residual, added after the bias (RES). */
static rlx_status emit_conv_direct(wg_lower *L, const geom3 *g, int x, int w, int b, int y, int r,
                                   const rlx_act *act) {
    uint64_t total = g->n * g->c_out * sp3(g->out);
    wg_dispatch *d = wg_emit(L, "conv_direct");
    d->elem = out_elem(L);
    wg_spec(L, d, "ACT", act->kind);
    if (r >= 0) wg_spec(L, d, "RES", 1);
    bind_conv(L, d, x, w, b, y);
    p_conv(L, d, g, b >= 0, total, act);
    wg_bind_or(L, d, "r_off", r, w); /* binding 5 */
    return wg_grid_1d(L, d, total);
}

/* The depthwise kernel: 2-D, cin_g == 1; OWB outputs of a row per
 * invocation. dwconv_gen.c's straight-line form where the kernel is small
 * enough, else dwconv.wgsl (also with RLX_DWCONV_KERNEL=loop); same bits. */
static rlx_status emit_conv_dw(wg_lower *L, const geom3 *g, int x, int w, int b, int y, int r, const rlx_act *act) {
    uint32_t owb = g->out[2] >= 4 ? 4 : (uint32_t)g->out[2];
    uint64_t total = g->n * g->c_out * g->out[1] * ((g->out[2] + owb - 1) / owb);
    const char *kern = L->caps->cfg->dwconv_kernel;
    bool gen = !(kern && strcmp(kern, "loop") == 0) && g->k[1] * g->k[2] * owb <= WG_DWCONV_GEN_MAX;
    wg_dispatch *d;
    if (gen) {
        char *src = wg_gen_dwconv_source((uint32_t)g->k[1], (uint32_t)g->k[2], owb, (uint32_t)act->kind, r >= 0);
        if (!src) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory generating the depthwise kernel",
                                  rlx_node_desc(L->n));
        d = wg_emit_source(L, "dwconv", src);
        free(src);
    } else {
        d = wg_emit(L, "dwconv");
        wg_spec(L, d, "KH", (double)g->k[1]);
        wg_spec(L, d, "KW", (double)g->k[2]);
        wg_spec(L, d, "OWB", owb);
        wg_spec(L, d, "ACT", act->kind);
        if (r >= 0) wg_spec(L, d, "RES", 1);
    }
    d->elem = out_elem(L);
    bind_conv(L, d, x, w, b, y);
    WG_P(L, d, wg_pu("c_out", g->c_out), wg_pu("mult", (uint32_t)(g->c_out / g->c_in)));
    p_geom2(L, d, g);
    WG_P(L, d, wg_pu("has_bias", b >= 0), wg_pu("total", total), wg_pf("act_alpha", act->alpha),
         wg_pf("act_beta", act->beta));
    wg_bind_or(L, d, "r_off", r, w); /* binding 5 */
    return wg_grid_1d(L, d, total);
}

/* The GEMM of a chunk of (images n0.., n_cnt) x (groups g0.., g_cnt):
 * weight[cout_g, k_total] x B[k_total, spatial] -> y, where B is the
 * scratch (im2col), x itself (pointwise) or x gathered (implicit). */
static rlx_status emit_conv_gemm(wg_lower *L, const geom3 *g, conv_algo algo, int x, int w, int b, int y, int r,
                                 uint64_t n0, uint64_t n_cnt, uint64_t g0, uint64_t g_cnt, uint64_t col_n,
                                 const rlx_act *act) {
    uint64_t cin_g = g->c_in / g->group, cout_g = g->c_out / g->group;
    uint64_t k_total = cin_g * g->k[0] * g->k[1] * g->k[2];
    uint64_t spatial = sp3(g->out), in_sp = sp3(g->in);
    wg_gemm m;
    wg_gemm_init(&m, cout_g, spatial, k_total);
    m.bias_sm = 1;
    m.bias_sn = 0;
    m.nb = 2;
    m.bdims[0] = n_cnt;
    m.bdims[1] = g_cnt;
    m.a_bs[0] = 0;
    m.a_bs[1] = cout_g * k_total;
    m.y_bs[0] = g->c_out * spatial;
    m.y_bs[1] = cout_g * spatial;
    m.bias_bs[0] = 0;
    m.bias_bs[1] = cout_g;
    m.a = w;
    m.a_off = g0 * cout_g * k_total;
    m.a_n = g_cnt * cout_g * k_total;
    if (algo == CONV_IM2COL) {
        m.b_sk = spatial;
        m.b_sn = 1;
        m.b_bs[0] = g_cnt * k_total * spatial;
        m.b_bs[1] = k_total * spatial;
        m.b = WG_SCRATCH;
        m.b_off = 0;
        m.b_n = col_n;
    } else {
        /* B reads x directly: per (image, group) the channels of the group */
        m.b_sk = in_sp; /* pointwise: k = ci, in_sp == spatial */
        m.b_sn = 1;
        m.b_bs[0] = g->c_in * in_sp;
        m.b_bs[1] = cin_g * in_sp;
        m.b = x;
        m.b_off = (n0 * g->c_in + g0 * cin_g) * in_sp;
        m.b_n = n_cnt == 1 ? g_cnt * cin_g * in_sp : n_cnt * g->c_in * in_sp;
        if (algo == CONV_IMPLICIT) {
            m.conv = true;
            m.in_h = (uint32_t)g->in[1];
            m.in_w = (uint32_t)g->in[2];
            m.out_w = (uint32_t)g->out[2];
            m.k_h = (uint32_t)g->k[1];
            m.k_w = (uint32_t)g->k[2];
            m.s_h = (uint32_t)g->s[1];
            m.s_w = (uint32_t)g->s[2];
            m.p_h = (uint32_t)g->p[1];
            m.p_w = (uint32_t)g->p[2];
            m.d_h = (uint32_t)g->dil[1];
            m.d_w = (uint32_t)g->dil[2];
        }
    }
    m.bias = b;
    m.bias_off = g0 * cout_g;
    m.bias_n = g_cnt * cout_g;
    m.y = y;
    m.y_off = (n0 * g->c_out + g0 * cout_g) * spatial;
    m.y_n = n_cnt == 1 ? g_cnt * cout_g * spatial : n_cnt * g->c_out * spatial;
    m.act = *act;
    if (r >= 0) { /* the fused residual: y's layout, in the GEMM's epilogue */
        m.has_res = true;
        m.res = r;
        m.res_off = m.y_off;
        m.res_n = m.y_n;
    }
    /* the reference pair (direct, im2col + GEMM) keeps one summation order;
     * the fast paths may split k when few outputs leave the GPU idle */
    m.splitk_ok = algo != CONV_IM2COL;
    return wg_emit_gemm(L, &m);
}

/* im2col of a chunk (n0.., n_cnt images) x (g0.., g_cnt groups) into the
 * scratch buffer, then the batched GEMM weight x col into y. */
static rlx_status emit_conv_chunk(wg_lower *L, const geom3 *g, int x, int w, int b, int y, int r, uint64_t n0,
                                  uint64_t n_cnt, uint64_t g0, uint64_t g_cnt, const rlx_act *act) {
    uint64_t cin_g = g->c_in / g->group;
    uint64_t k_total = cin_g * g->k[0] * g->k[1] * g->k[2];
    uint64_t spatial = sp3(g->out), in_sp = sp3(g->in);
    uint64_t col_n = n_cnt * g_cnt * k_total * spatial;
    /* f16: the col holds halves (T = f16), two to a scratch word; the GEMM
     * reads them packed (B_F16), the same values as the direct kernel's */
    bool half = out_elem(L) == WG_ELEM_F16;
    wg_scratch(L, half ? (col_n + 1) / 2 : col_n);
    wg_dispatch *d = wg_emit(L, "im2col");
    d->elem = out_elem(L);
    /* the x window starts at (image n0, channel g0 * cin_g) */
    wg_bind(L, d, "x_off", x, (n0 * g->c_in + g0 * cin_g) * in_sp,
            n_cnt == 1 ? g_cnt * cin_g * in_sp : n_cnt * g->c_in * in_sp);
    wg_bind(L, d, "col_off", WG_SCRATCH, 0, col_n);
    if (half) d->bind[d->n_bind - 1].esize = 2;
    WG_P(L, d, wg_pu("n_cnt", n_cnt), wg_pu("g_cnt", g_cnt), wg_pu("c_in", g->c_in), wg_pu("cin_g", cin_g));
    p_geom3(L, d, g);
    wg_p_u32(L, d, "total", (uint32_t)col_n);
    RLX_TRY(wg_grid_1d(L, d, col_n));
    return emit_conv_gemm(L, g, CONV_IM2COL, x, w, b, y, r, n0, n_cnt, g0, g_cnt, col_n, act);
}

/* The algorithm for a convolution: RLX_CONV_ALGO=direct|im2col|implicit
 * forces one where it applies; auto (default): depthwise kernel for one
 * input channel per group (2-D), the direct kernel for fewer than 4 output
 * channels per group, GEMM on x for 1x1 stride-1 unpadded convolutions,
 * implicit GEMM for other 1-D/2-D ones, im2col + GEMM for 3-D. The session
 * option gpu_conv_direct selects the direct kernel. */
static conv_algo choose_conv(const wg_lower *L, const geom3 *g) {
    const char *env = L->caps->cfg->conv_algo;
    bool two_d = g->k[0] == 1 && g->in[0] == 1 && g->out[0] == 1;
    bool pointwise = true;
    for (int i = 0; i < 3; i++) pointwise &= g->k[i] == 1 && g->s[i] == 1 && g->p[i] == 0 && g->pe[i] == 0;
    if (L->caps->conv_direct || (env && strcmp(env, "direct") == 0)) return CONV_DIRECT;
    if (env && strcmp(env, "im2col") == 0) return CONV_IM2COL;
    if (two_d && g->c_in == g->group && g->group > 1) return CONV_DEPTHWISE;
    if (env && strcmp(env, "implicit") == 0) return two_d ? CONV_IMPLICIT : CONV_IM2COL;
    /* fewer than 4 output channels per group (e.g. a detection head's
     * 1-channel map): GEMM rows come in blocks of 4, the direct kernel
     * wastes nothing */
    if (g->c_out / g->group < 4) return CONV_DIRECT;
    if (pointwise) return CONV_POINTWISE;
    return two_d ? CONV_IMPLICIT : CONV_IM2COL;
}

/* Conv-1/11/22 with the fused activation and residual of act.h. See
 * choose_conv; a path whose input or output exceeds one binding falls back
 * to im2col chunks of (images, groups) that fit, and a single group's col
 * larger than a binding to the direct kernel; weights larger than a
 * binding split the GEMM by output channels (wg_emit_gemm). All paths give
 * the same bits. The residual (input 3) is added in every kernel's
 * epilogue, after the bias and before the activation. */
static rlx_status lower_conv(wg_lower *L) {
    RLX_TRY(check_float_io(L, "conv_direct", 1));
    rlx_act act = rlx_node_act(L->n);
    if (!wg_act_ok(&act)) return wg_decline(L, "fused activation %d", (int)act.kind);
    L->act_done = true; /* every kernel below applies it */
    geom3 g;
    RLX_TRY(resolve_geom(L, RLX_GEOM_CONV, &g));
    int x = wg_in_id(L, 0), w = wg_in_id(L, 1), b = wg_in(L, 2) ? wg_in_id(L, 2) : -1, y = wg_out_id(L, 0);
    const rlx_value *rv = rlx_node_residual(L->g, L->n);
    int r = rv ? wg_in_id(L, 3) : -1;
    if (rv && (!rlx_value_is_static(rv) || wg_numel(rv) != wg_numel(wg_out(L, 0))))
        return wg_decline(L, "the residual input does not have the output's shape");
    if (wg_numel(wg_out(L, 0)) == 0) return RLX_OK;
    if (g.group == 0 || g.c_in % g.group || g.c_out % g.group) return wg_decline(L, "bad groups");
    uint64_t cin_g = g.c_in / g.group;
    uint64_t k_total = cin_g * g.k[0] * g.k[1] * g.k[2];
    uint64_t per = k_total * sp3(g.out); /* col elements of one (image, group) */
    uint64_t cap = L->caps->max_binding / 4;
    conv_algo algo = choose_conv(L, &g);
    /* the direct and depthwise kernels bind x, w and y whole: when one is
     * larger than a binding, im2col chunks (below) take over unless the
     * direct kernel is forced (the same bits either way) */
    const char *env = L->caps->cfg->conv_algo;
    bool forced_direct = L->caps->conv_direct || (env && strcmp(env, "direct") == 0);
    bool whole = wg_numel(wg_in(L, 0)) <= cap && wg_numel(wg_in(L, 1)) <= cap && wg_numel(wg_out(L, 0)) <= cap;
    if (algo == CONV_DIRECT && (whole || forced_direct)) return emit_conv_direct(L, &g, x, w, b, y, r, &act);
    if (algo == CONV_DEPTHWISE && whole) return emit_conv_dw(L, &g, x, w, b, y, r, &act);
    if (algo == CONV_POINTWISE || algo == CONV_IMPLICIT) {
        /* x and y whole in one binding each: one dispatch */
        if (wg_numel(wg_in(L, 0)) <= cap && wg_numel(wg_out(L, 0)) <= cap)
            return emit_conv_gemm(L, &g, algo, x, w, b, y, r, 0, g.n, 0, g.group, 0, &act);
    }
    if (per == 0 || per > cap) return emit_conv_direct(L, &g, x, w, b, y, r, &act);
    if (g.group * per <= cap) {
        uint64_t n_cnt = cap / (g.group * per);
        if (n_cnt > g.n) n_cnt = g.n;
        for (uint64_t n0 = 0; n0 < g.n; n0 += n_cnt) {
            uint64_t cnt = g.n - n0 < n_cnt ? g.n - n0 : n_cnt;
            RLX_TRY(emit_conv_chunk(L, &g, x, w, b, y, r, n0, cnt, 0, g.group, &act));
        }
    } else {
        uint64_t g_cnt = cap / per;
        for (uint64_t n0 = 0; n0 < g.n; n0++)
            for (uint64_t g0 = 0; g0 < g.group; g0 += g_cnt) {
                uint64_t cnt = g.group - g0 < g_cnt ? g.group - g0 : g_cnt;
                RLX_TRY(emit_conv_chunk(L, &g, x, w, b, y, r, n0, 1, g0, cnt, &act));
            }
    }
    return RLX_OK;
}

/* ConvTranspose-1/11/22 with the fused activation of act.h: a GEMM per tap
 * when kernel == stride (below), else conv_transpose.wgsl (one invocation
 * per output; also with RLX_CONV_ALGO=direct or RLX_GEMM_KERNEL=ref). */
static rlx_status lower_conv_transpose(wg_lower *L) {
    RLX_TRY(check_float_io(L, "conv_transpose", 1));
    rlx_act act = rlx_node_act(L->n);
    if (!wg_act_ok(&act)) return wg_decline(L, "fused activation %d", (int)act.kind);
    L->act_done = true; /* every kernel below applies it */
    geom3 g;
    RLX_TRY(resolve_geom(L, RLX_GEOM_CONV_TRANSPOSE, &g));
    if (g.group == 0 || g.c_in % g.group || g.c_out % g.group) return wg_decline(L, "bad groups");
    const rlx_value *y = wg_out(L, 0);
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    if (total != g.n * g.c_out * sp3(g.out)) return wg_decline(L, "output shape differs from the geometry");
    int w = wg_in_id(L, 1), b = wg_in(L, 2) ? wg_in_id(L, 2) : -1;
    /* kernel == stride, no padding, no dilation, no output padding (the
     * upsampling layers of detection/segmentation heads): every output has
     * exactly one tap, so each tap (kr, kc) is one GEMM
     *   y[co, ih*s_h + kr, iw*s_w + kc] = sum_ci w[ci, co, kr, kc] x[ci, ih, iw]
     * batched over images and taps, the pixels spread by Y_PIX */
    const char *env = L->caps->cfg->conv_algo;
    const char *kern = L->caps->cfg->gemm_kernel;
    bool direct = L->caps->conv_direct || (env && strcmp(env, "direct") == 0) || (kern && strcmp(kern, "ref") == 0);
    bool tap_gemm = !direct && g.group == 1 && g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1;
    for (int i = 1; i < 3 && tap_gemm; i++)
        tap_gemm = g.k[i] == g.s[i] && g.p[i] == 0 && g.pe[i] == 0 && g.dil[i] == 1 && g.out[i] == g.in[i] * g.s[i];
    uint64_t cap = L->caps->max_binding / 4;
    if (tap_gemm && wg_numel(wg_in(L, 0)) <= cap && total <= cap && wg_numel(wg_in(L, 1)) <= cap) {
        uint64_t hw = g.in[1] * g.in[2], ohw = g.out[1] * g.out[2], khw = g.k[1] * g.k[2];
        wg_gemm m;
        wg_gemm_init(&m, g.c_out, hw, g.c_in);
        m.a_sm = khw;
        m.a_sk = g.c_out * khw;
        m.bias_sm = 1;
        m.bias_sn = 0;
        m.y_sm = ohw;
        m.nb = 3;
        m.bdims[0] = g.n, m.bdims[1] = g.k[1], m.bdims[2] = g.k[2];
        m.a_bs[0] = 0, m.a_bs[1] = g.k[2], m.a_bs[2] = 1;
        m.b_bs[0] = g.c_in * hw, m.b_bs[1] = 0, m.b_bs[2] = 0;
        m.y_bs[0] = g.c_out * ohw, m.y_bs[1] = g.out[2], m.y_bs[2] = 1;
        m.a = w;
        m.a_n = wg_numel(wg_in(L, 1));
        m.b = wg_in_id(L, 0);
        m.b_n = wg_numel(wg_in(L, 0));
        m.bias = b;
        m.bias_n = b >= 0 ? g.c_out : 0;
        m.y = wg_out_id(L, 0);
        m.y_n = total;
        m.act = act;
        m.y_pix = true;
        m.out_w = (uint32_t)g.in[2];
        m.s_h = (uint32_t)(g.s[1] * g.out[2]);
        m.s_w = (uint32_t)g.s[2];
        return wg_emit_gemm(L, &m);
    }
    wg_dispatch *d = wg_emit(L, "conv_transpose");
    d->elem = out_elem(L);
    wg_spec(L, d, "ACT", act.kind);
    bind_conv(L, d, wg_in_id(L, 0), w, b, wg_out_id(L, 0));
    p_conv(L, d, &g, b >= 0, total, &act);
    wg_p_u32(L, d, "r_off", 0); /* conv_transpose has no residual */
    return wg_grid_1d(L, d, total);
}

/* ------------------------------------------------------------ pools */

/* MaxPool-1..22 (without the Indices output), AveragePool-1..22: 1-D and
 * 2-D pools on pool2d.wgsl (taps unrolled, 4 outputs per invocation), 3-D
 * ones and RLX_POOL_KERNEL=ref on pool.wgsl; both take the taps in the same
 * order (the same bits). */
static rlx_status lower_pool(wg_lower *L) {
    bool avg = L->n->op == RLX_OP_AveragePool;
    RLX_TRY(check_float_io(L, "pool2d", 1));
    if (!avg && rlx_param_int(L->n, RLX_A_storage_order) != 0 && L->n->n_out > 1)
        return wg_decline(L, "storage_order");
    geom3 g;
    RLX_TRY(resolve_geom(L, RLX_GEOM_POOL, &g));
    const rlx_value *y = wg_out(L, 0);
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    if (total != g.n * g.c_in * sp3(g.out)) return wg_decline(L, "output shape differs from the geometry");
    if (wg_numel(wg_in(L, 0)) >= ((uint64_t)1 << 31) || total >= ((uint64_t)1 << 31))
        return wg_decline(L, "more than 2^31 elements (32-bit indexing)");
    const char *kern = L->caps->cfg->pool_kernel;
    bool two_d = g.k[0] == 1 && g.in[0] == 1 && g.out[0] == 1 && g.pe[0] == 0 && g.p[0] == 0;
    if (two_d && g.k[1] * g.k[2] <= 64 && !(kern && strcmp(kern, "ref") == 0)) {
        /* pool2d.wgsl: taps unrolled, OWB outputs of a row per invocation */
        uint32_t owb = g.out[2] >= 4 ? 4 : (uint32_t)g.out[2];
        uint64_t threads = g.n * g.c_in * g.out[1] * ((g.out[2] + owb - 1) / owb);
        wg_dispatch *d = wg_emit(L, "pool2d");
        d->elem = out_elem(L);
        wg_spec(L, d, "AVG", avg ? 1 : 0);
        wg_spec(L, d, "KH", (double)g.k[1]);
        wg_spec(L, d, "KW", (double)g.k[2]);
        wg_spec(L, d, "OWB", owb);
        wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
        wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
        WG_P(L, d, wg_pu("count_include_pad", avg && rlx_param_int(L->n, RLX_A_count_include_pad) != 0),
             wg_pu("total", threads));
        p_geom2(L, d, &g);
        WG_P(L, d, wg_pu("pe_h", g.pe[1]), wg_pu("pe_w", g.pe[2]));
        return wg_grid_1d(L, d, threads);
    }
    wg_dispatch *d = wg_emit(L, "pool");
    d->elem = out_elem(L);
    wg_spec(L, d, "AVG", avg ? 1 : 0);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    /* count_include_pad only means something for AveragePool */
    WG_P(L, d, wg_pu("nc", g.n * g.c_in), wg_pu("count_include_pad", avg && rlx_param_int(L->n, RLX_A_count_include_pad)));
    p_geom3(L, d, &g);
    WG_P(L, d, wg_pu("pe_d", g.pe[0]), wg_pu("pe_h", g.pe[1]), wg_pu("pe_w", g.pe[2]), wg_pu("total", total));
    return wg_grid_1d(L, d, total);
}

/* GlobalAveragePool-1, GlobalMaxPool-1: rows of 256 elements or more get a
 * workgroup each (global_pool_wg.wgsl), shorter ones an invocation each
 * (global_pool.wgsl, also with RLX_POOL_KERNEL=ref). */
static rlx_status lower_global_pool(wg_lower *L) {
    RLX_TRY(check_float_io(L, "global_pool", 1));
    const rlx_value *x = wg_in(L, 0);
    if (x->rank < 2) return wg_decline(L, "rank %d", x->rank);
    uint64_t nc = (uint64_t)x->dims[0] * (uint64_t)x->dims[1];
    uint64_t sp = nc ? wg_numel(x) / nc : 0;
    if (nc == 0) return RLX_OK;
    if (sp == 0) return wg_decline(L, "empty spatial dims");
    if (wg_numel(x) >= ((uint64_t)1 << 31) || wg_numel(wg_out(L, 0)) != nc)
        return wg_decline(L, "more than 2^31 elements, or an output of other than N x C elements");
    const char *kern = L->caps->cfg->pool_kernel;
    /* long rows: one workgroup per row, a tree of partial results */
    bool per_wg = sp >= 256 && !(kern && strcmp(kern, "ref") == 0);
    wg_dispatch *d = wg_emit(L, per_wg ? "global_pool_wg" : "global_pool");
    d->elem = out_elem(L);
    wg_spec(L, d, "MAX", L->n->op == RLX_OP_GlobalMaxPool ? 1 : 0);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("nc", nc), wg_pu("spatial", sp));
    return per_wg ? wg_grid_groups(L, d, nc) : wg_grid_1d(L, d, nc);
}

/* ------------------------------------------------------------ BatchNormalization */

/* BatchNormalization-1..15 in inference mode (training_mode = 0, only the
 * Y output, spatial = 1). */
static rlx_status lower_batchnorm(wg_lower *L) {
    if (rlx_param_int(L->n, RLX_A_training_mode) != 0) return wg_decline(L, "training_mode");
    if (rlx_param_int(L->n, RLX_A_spatial) != 1) return wg_decline(L, "spatial = 0");
    if (L->n->n_in != 5) return wg_decline(L, "expects 5 inputs");
    RLX_TRY(check_float_io(L, "batchnorm", 1));
    const rlx_value *x = wg_in(L, 0);
    if (x->rank < 2) return wg_decline(L, "rank %d", x->rank);
    uint64_t c = (uint64_t)x->dims[1];
    for (int i = 1; i < 5; i++)
        if (wg_numel(wg_in(L, i)) != c) return wg_decline(L, "input %d is not [C]", i);
    uint64_t inner = 1;
    for (int i = 2; i < x->rank; i++) inner *= (uint64_t)x->dims[i];
    uint64_t total = wg_numel(x);
    if (total == 0) return RLX_OK;
    if (wg_numel(wg_out(L, 0)) != total) return wg_decline(L, "output size differs from the input's");
    if (total >= ((uint64_t)1 << 31)) return wg_decline(L, "more than 2^31 elements (32-bit indexing)");
    wg_dispatch *d = wg_emit(L, "batchnorm");
    d->elem = out_elem(L);
    static const char *const k_in[5] = { "x_off", "s_off", "b_off", "m_off", "v_off" };
    for (int i = 0; i < 5; i++) wg_bind_value(L, d, k_in[i], wg_in_id(L, i));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("total", total), wg_pu("c", c), wg_pu("inner", inner),
         wg_pf("eps", rlx_param_float(L->n, RLX_A_epsilon)));
    return wg_grid_1d(L, d, total);
}

/* ------------------------------------------------------------ Gemm, MatMul */

/* Gemm-1..13: Y = act(alpha * A' B' + beta * C), C unidirectionally
 * broadcast, act the fused activation of act.h. */
static rlx_status lower_gemm(wg_lower *L) {
    RLX_TRY(check_float_io(L, "gemm", 1));
    rlx_act act = rlx_node_act(L->n);
    if (!wg_act_ok(&act)) return wg_decline(L, "fused activation %d", (int)act.kind);
    L->act_done = true; /* every kernel below applies it */
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *c = wg_in(L, 2), *y = wg_out(L, 0);
    if (a->rank != 2 || b->rank != 2 || y->rank != 2) return wg_decline(L, "Gemm needs 2-D A and B");
    if (L->n->version < 7 && !rlx_legacy_broadcast_set(L->n) && c &&
        !(c->rank == 2 && c->dims[0] == y->dims[0] && c->dims[1] == y->dims[1]))
        return wg_decline(L, "Gemm-6 without broadcast needs C of shape [M, N]");
    bool ta = rlx_param_int(L->n, RLX_A_transA) != 0, tb = rlx_param_int(L->n, RLX_A_transB) != 0;
    uint64_t M = (uint64_t)(ta ? a->dims[1] : a->dims[0]), K = (uint64_t)(ta ? a->dims[0] : a->dims[1]);
    uint64_t N = (uint64_t)(tb ? b->dims[0] : b->dims[1]);
    if ((uint64_t)(tb ? b->dims[1] : b->dims[0]) != K || (uint64_t)y->dims[0] != M || (uint64_t)y->dims[1] != N)
        return wg_decline(L, "shapes do not agree");
    if (M * N == 0) return RLX_OK;
    wg_gemm m;
    wg_gemm_init(&m, M, N, K);
    m.alpha = rlx_param_float(L->n, RLX_A_alpha);
    m.beta = rlx_param_float(L->n, RLX_A_beta);
    m.a_sm = ta ? 1 : K;
    m.a_sk = ta ? M : 1;
    m.b_sk = tb ? 1 : N;
    m.b_sn = tb ? K : 1;
    m.a = wg_in_id(L, 0);
    m.a_n = wg_numel(a);
    m.b = wg_in_id(L, 1);
    m.b_n = wg_numel(b);
    m.act = act;
    m.splitk_ok = true;
    if (c && wg_numel(c) > 0 && m.beta != 0.0f) { /* beta 0: C is not read (a NaN in it gave NaN) */
        uint64_t cm = 1, cn = 1;
        if (c->rank == 2) cm = (uint64_t)c->dims[0], cn = (uint64_t)c->dims[1];
        else if (c->rank == 1) cn = (uint64_t)c->dims[0];
        else if (c->rank != 0) return wg_decline(L, "C of rank %d", c->rank);
        if ((cm != 1 && cm != M) || (cn != 1 && cn != N)) return wg_decline(L, "C does not broadcast to [M, N]");
        m.bias = wg_in_id(L, 2);
        m.bias_n = wg_numel(c);
        m.bias_sm = cm == 1 ? 0 : cn;
        m.bias_sn = cn == 1 ? 0 : 1;
    }
    m.y = wg_out_id(L, 0);
    m.y_n = M * N;
    /* operands larger than one binding: wg_emit_gemm splits the product
     * (by rows of B with transB, i.e. by N; see lower_gemm.h) */
    return wg_emit_gemm(L, &m);
}

/* MatMul-1/9/13: numpy matmul with broadcast batch dims; 1-D operands are
 * promoted ([K] -> [1, K] for A, [K, 1] for B) and the dim dropped. With
 * the fusion pass's extension (act.h, passes/fuse_activation.c): an
 * optional third input, a bias [N] added to every row, and a fused
 * activation, both applied by the GEMM's epilogue (once, after the whole
 * sum: wg_emit_gemm adds the bias in the last K chunk or in the split-K
 * reduction only). */
static rlx_status lower_matmul(wg_lower *L) {
    RLX_TRY(check_float_io(L, "gemm", 1));
    rlx_act act = rlx_node_act(L->n);
    if (!wg_act_ok(&act)) return wg_decline(L, "fused activation %d", (int)act.kind);
    L->act_done = true; /* every kernel below applies it */
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *bias = wg_in(L, 2), *y = wg_out(L, 0);
    if (L->n->n_in > 3) return wg_decline(L, "%d inputs", L->n->n_in);
    if (a->rank < 1 || b->rank < 1) return wg_decline(L, "scalar operand");
    uint64_t M = a->rank == 1 ? 1 : (uint64_t)a->dims[a->rank - 2];
    uint64_t K = (uint64_t)a->dims[a->rank - 1];
    uint64_t Kb = b->rank == 1 ? (uint64_t)b->dims[0] : (uint64_t)b->dims[b->rank - 2];
    uint64_t N = b->rank == 1 ? 1 : (uint64_t)b->dims[b->rank - 1];
    if (K != Kb) return wg_decline(L, "inner dims differ");
    if (bias && wg_numel(bias) != N) return wg_decline(L, "bias of %llu elements, expected N = %llu",
                                                       (unsigned long long)wg_numel(bias), (unsigned long long)N);
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    int rbat = ra > rb ? ra : rb;
    /* per batch dim (outermost first): size and strides of a, b, y */
    uint64_t dims[RLX_MAX_RANK], sa[RLX_MAX_RANK], sb[RLX_MAX_RANK], sy[RLX_MAX_RANK];
    uint64_t ca = M * K, cb = K * N, cy = M * N;
    for (int i = rbat - 1; i >= 0; i--) {
        int ia = i - (rbat - ra), ib = i - (rbat - rb);
        uint64_t da = ia >= 0 ? (uint64_t)a->dims[ia] : 1, db = ib >= 0 ? (uint64_t)b->dims[ib] : 1;
        uint64_t d = da > db ? da : db;
        if ((da != 1 && da != d) || (db != 1 && db != d)) return wg_decline(L, "batch dims do not broadcast");
        dims[i] = d;
        sa[i] = da == 1 ? 0 : ca;
        sb[i] = db == 1 ? 0 : cb;
        sy[i] = cy;
        ca *= da;
        cb *= db;
        cy *= d;
    }
    /* merge batch dims (innermost first), dropping size-1 dims */
    uint64_t md[RLX_MAX_RANK], ma[RLX_MAX_RANK], mb[RLX_MAX_RANK], my[RLX_MAX_RANK];
    int r = 0;
    for (int i = rbat - 1; i >= 0; i--) {
        if (dims[i] == 1) continue;
        if (r > 0 && sa[i] == ma[r - 1] * md[r - 1] && sb[i] == mb[r - 1] * md[r - 1] && sy[i] == my[r - 1] * md[r - 1]) {
            md[r - 1] *= dims[i];
            continue;
        }
        md[r] = dims[i];
        ma[r] = sa[i];
        mb[r] = sb[i];
        my[r] = sy[i];
        r++;
    }
    if (r > 4) return wg_decline(L, "more than 4 batch dims after merging");
    if (cy != wg_numel(y)) return wg_decline(L, "output size differs");
    if (cy == 0) return RLX_OK;
    /* a batch of rows times one shared matrix is one taller GEMM: the rows
     * of consecutive batches are consecutive ([B, M, K] x [K, N]) */
    if (r == 1 && mb[0] == 0 && ma[0] == M * K && my[0] == M * N) {
        M *= md[0];
        r = 0;
    }
    wg_gemm m;
    wg_gemm_init(&m, M, N, K);
    m.nb = r;
    for (int i = 0; i < r; i++) {
        m.bdims[i] = md[r - 1 - i];
        m.a_bs[i] = ma[r - 1 - i];
        m.b_bs[i] = mb[r - 1 - i];
        m.y_bs[i] = my[r - 1 - i];
    }
    m.a = wg_in_id(L, 0);
    m.a_n = wg_numel(a);
    m.b = wg_in_id(L, 1);
    m.b_n = wg_numel(b);
    if (bias) {
        m.bias = wg_in_id(L, 2);
        m.bias_n = N;
        m.bias_sm = 0;
        m.bias_sn = 1;
    }
    m.y = wg_out_id(L, 0);
    m.y_n = cy;
    m.act = act;
    m.splitk_ok = true;
    return wg_emit_gemm(L, &m);
}

/* ------------------------------------------------------------ Resize */

/* Reads a constant f32 or f64 tensor into doubles (count 0 when v is
 * absent or empty); false when it is not constant, too long or of another
 * dtype. */
static bool konst_doubles(const rlx_value *v, double *out, size_t cap, size_t *count) {
    *count = 0;
    if (!v) return true;
    if (!v->konst) return false;
    const rlx_tensor *t = v->konst;
    size_t es = t->dtype == RLX_DTYPE_F32 ? 4 : t->dtype == RLX_DTYPE_F64 ? 8 : 0;
    if (!es || t->nbytes / es > cap) return false;
    *count = t->nbytes / es;
    for (size_t i = 0; i < *count; i++) {
        if (es == 4) {
            float f;
            memcpy(&f, (const char *)t->data + 4 * i, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], (const char *)t->data + 8 * i, 8);
        }
    }
    return true;
}

/* Most blended taps per output element (the product over the axes). */
#define RESIZE_MAX_CORNERS 4096

/* Resize-10/11/13/18/19, every mode, coordinate transform and nearest
 * mode, antialias, exclude_outside, axes, keep_aspect_ratio_policy, with
 * constant scales / sizes / roi; rank <= 4. The geometry and each axis's
 * taps are the CPU's (rlx_resize_geom_resolve, rlx_resize_taps_build: the
 * ONNX reference's f64 arithmetic) and travel to the GPU as a table
 * (wg_table), so GPU and CPU take the same source pixels, ties included;
 * kernels/resize.wgsl gathers (nearest: a copy, any 4-byte, f16 or 8-bit dtype) or blends
 * in f32 (linear, cubic). */
static rlx_status lower_resize(wg_lower *L) {
    const rlx_node *n = L->n;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    int r = x->rank;
    if (r < 1 || r > 4 || y->rank != r) return wg_decline(L, "rank %d", r);
    rlx_resize_attrs a;
    if (rlx_resize_attrs_read(n, r, &a) != RLX_OK) return wg_decline(L, "attributes (the CPU reports them)");
    bool linear = a.mode != RLX_RESIZE_NEAREST;
    /* f16: the kernel's f16 instance; 8-bit (nearest): BYTES */
    unsigned types = (linear ? WG_F32 : WG_ANY4 | WG_Q8) | WG_F16;
    if (!wg_value_held(L, x, types) || !wg_value_held(L, y, types) || x->dtype != y->dtype)
        return wg_decline(L, linear ? "f32 or f16 data only" : "4-byte, f16 or 8-bit data only");
    bool bytes = rlx_dtype_size(x->dtype) == 1;
    if (bytes && a.coord == RLX_COORD_TF_CROP_AND_RESIZE)
        return wg_decline(L, "tf_crop_and_resize of 8-bit data (its extrapolation value)");
    double scales[RLX_MAX_RANK], roi[2 * RLX_MAX_RANK];
    int64_t sizes[RLX_MAX_RANK];
    size_t n_scales = 0, n_sizes = 0, n_roi = 0;
    bool v11 = n->version >= 11;
    if (!konst_doubles(wg_in(L, v11 ? 2 : 1), scales, RLX_MAX_RANK, &n_scales))
        return wg_decline(L, "scales are not a constant f32/f64 tensor");
    if (v11 && wg_in(L, 3) && wg_numel(wg_in(L, 3)) > 0 && !rlx_konst_ints(wg_in(L, 3), sizes, RLX_MAX_RANK, &n_sizes))
        return wg_decline(L, "sizes are not constant");
    if (a.coord == RLX_COORD_TF_CROP_AND_RESIZE && !konst_doubles(wg_in(L, 1), roi, 2 * RLX_MAX_RANK, &n_roi))
        return wg_decline(L, "roi is not a constant f32/f64 tensor");
    if (!n_scales && !n_sizes) return wg_decline(L, "neither scales nor sizes");
    if (a.coord == RLX_COORD_TF_CROP_AND_RESIZE && !n_roi) return wg_decline(L, "tf_crop_and_resize without roi");
    rlx_resize_geom g;
    if (rlx_resize_geom_resolve(n, &a, x->dims, r, n_scales ? scales : NULL, n_scales, n_sizes ? sizes : NULL, n_sizes,
                                n_roi ? roi : NULL, n_roi, &g) != RLX_OK)
        return wg_decline(L, "scales or sizes (the CPU reports them)");
    g.roi_f32 = n_roi && wg_in(L, 1)->dtype == RLX_DTYPE_F32;
    for (int i = 0; i < r; i++)
        if (g.out[i] != y->dims[i]) return wg_decline(L, "output shape differs from the resolved sizes");
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    if (wg_numel(x) >= ((uint64_t)1 << 31) || total >= ((uint64_t)1 << 31)) return wg_decline(L, "too large");
    /* pad to rank 4 with leading unit axes (one tap each) */
    uint32_t ind[4] = { 1, 1, 1, 1 }, outd[4] = { 1, 1, 1, 1 }, taps[4] = { 1, 1, 1, 1 }, tbase[4] = { 0, 0, 0, 0 };
    uint32_t *words = NULL;
    size_t n_words = 0, cap_words = 0;
    uint64_t corners = 1;
    rlx_status st = RLX_OK;
    for (int i = 0; i < 4 && !st; i++) {
        int ax = i - (4 - r);
        rlx_resize_taps t = { 0 };
        if (ax >= 0) {
            if (rlx_resize_taps_build(n, &a, &g, ax, &t) != RLX_OK) {
                st = wg_decline(L, "axis %d's taps (the CPU reports them)", ax);
                break;
            }
            ind[i] = (uint32_t)g.in[ax];
            outd[i] = (uint32_t)g.out[ax];
            taps[i] = (uint32_t)t.n;
            corners *= (uint64_t)t.n;
        }
        tbase[i] = (uint32_t)n_words;
        size_t need = n_words + 2 * (size_t)taps[i] * outd[i];
        if (corners > RESIZE_MAX_CORNERS) st = wg_decline(L, "more than %d taps per output element", RESIZE_MAX_CORNERS);
        else if (RLX_GROW(words, cap_words, need + 1) != RLX_OK) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        for (uint32_t o = 0; o < outd[i] && !st; o++) {
            uint32_t *e = words + n_words + 2 * (size_t)taps[i] * o;
            for (uint32_t j = 0; j < taps[i]; j++) {
                float w = ax >= 0 ? (float)t.w[(size_t)o * taps[i] + j] : 1.0f;
                e[j] = ax >= 0 ? (uint32_t)t.idx[(size_t)o * taps[i] + j] : 0u;
                memcpy(&e[taps[i] + j], &w, 4);
            }
            if (ax >= 0 && t.extrap[o]) e[0] = 0xffffffffu;
        }
        n_words = need;
        rlx_resize_taps_free(&t);
    }
    if (st) {
        free(words);
        return st;
    }
    uint64_t t_off = wg_table(L, words, n_words);
    free(words);
    wg_dispatch *d = wg_emit(L, "resize");
    if (x->dtype == RLX_DTYPE_F16) d->elem = WG_ELEM_F16;
    wg_spec(L, d, "LINEAR", linear ? 1 : 0);
    wg_spec(L, d, "BYTES", bytes);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    wg_bind(L, d, "t_off", WG_TABLE, t_off, n_words);
    uint64_t inv = bytes ? (total + 3) / 4 : total; /* BYTES: a word of y per invocation */
    WG_P(L, d, wg_pu("total", inv), wg_pf("extrap", a.extrapolation_value), wg_pu("elems", total));
    wg_p_align16(L, d);
    const uint32_t *arrs[4] = { outd, ind, taps, tbase };
    static const char *const k_arr[4] = { "out_dims", "in_dims", "taps", "tbase" };
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 4; i++) wg_p_u32(L, d, k_arr[k], arrs[k][i]);
    return wg_grid_1d(L, d, inv);
}

/* ------------------------------------------------------------ GridSample */

/* GridSample-16/20/22 on X and grid of one type, f32 or f16 (computed in
 * f32, Y rounded once), 1 to 3 spatial dims, every mode (cubic: 2-D, as the
 * op allows), padding_mode and align_corners: kernels/gridsample.wgsl in
 * T, one invocation per output point. X and grid of two types, bf16 and
 * f64 data and more spatial dims run on the CPU. */
static rlx_status lower_gridsample(wg_lower *L) {
    RLX_TRY(check_float_io(L, "gridsample", 1));
    const rlx_value *x = wg_in(L, 0), *g = wg_in(L, 1), *y = wg_out(L, 0);
    int r = x->rank - 2;
    if (r < 1 || r > 3) return wg_decline(L, "%d spatial dims (the kernel takes 1 to 3)", r);
    rlx_gridsample_attrs a;
    if (rlx_gridsample_attrs_read(L->n, &a) != RLX_OK) return wg_decline(L, "attributes (the CPU reports them)");
    if (a.mode == RLX_GS_CUBIC && r != 2) return wg_decline(L, "cubic with %d spatial dims", r);
    if (g->rank != x->rank || g->dims[r + 1] != r || g->dims[0] != x->dims[0] || y->rank != x->rank)
        return wg_decline(L, "shapes (the CPU reports them)");
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    uint64_t len[4] = { 1, 1, 1, 1 }, stride[4] = { 1, 1, 1, 1 }, plane = 1, opts = 1;
    for (int d = r - 1; d >= 0; d--) {
        len[d] = (uint64_t)x->dims[2 + d];
        if (len[d] == 0) return wg_decline(L, "an empty spatial dim of X");
        if (len[d] >= ((uint64_t)1 << 29)) return wg_decline(L, "a spatial dim of 2^29 or more");
        stride[d] = plane;
        plane *= len[d];
        opts *= (uint64_t)y->dims[2 + d];
    }
    uint64_t lim = (uint64_t)1 << 31;
    if (wg_numel(x) >= lim || wg_numel(g) >= lim || total >= lim) return wg_decline(L, "too large for 32-bit indexing");
    static const int k_mode[] = { [RLX_GS_NEAREST] = GS_NEAREST, [RLX_GS_LINEAR] = GS_LINEAR, [RLX_GS_CUBIC] = GS_CUBIC };
    static const int k_pad[] = { [RLX_GS_ZEROS] = GS_ZEROS, [RLX_GS_BORDER] = GS_BORDER,
                                 [RLX_GS_REFLECTION] = GS_REFLECTION };
    wg_dispatch *d = wg_emit(L, "gridsample");
    d->elem = out_elem(L);
    wg_spec(L, d, "MODE", k_mode[a.mode]);
    wg_spec(L, d, "PAD", k_pad[a.pad]);
    wg_spec(L, d, "ALIGN", a.align_corners);
    wg_spec(L, d, "R", r);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "g_off", wg_in_id(L, 1));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    uint64_t npts = (uint64_t)x->dims[0] * opts;
    WG_P(L, d, wg_pu("npts", (uint32_t)npts), wg_pu("c", (uint32_t)x->dims[1]), wg_pu("opts", (uint32_t)opts),
         wg_pu("plane", (uint32_t)plane));
    wg_p_align16(L, d);
    for (int i = 0; i < 4; i++) wg_p_u32(L, d, "in_len", (uint32_t)len[i]);
    for (int i = 0; i < 4; i++) wg_p_u32(L, d, "in_stride", (uint32_t)stride[i]);
    return wg_grid_1d(L, d, npts);
}

const wg_lower_fn wg_lowerings_nn[RLX_OP_COUNT] = {
    [RLX_OP_Conv] = lower_conv,
    [RLX_OP_ConvTranspose] = lower_conv_transpose,
    [RLX_OP_MaxPool] = lower_pool,
    [RLX_OP_AveragePool] = lower_pool,
    [RLX_OP_GlobalAveragePool] = lower_global_pool,
    [RLX_OP_GlobalMaxPool] = lower_global_pool,
    [RLX_OP_BatchNormalization] = lower_batchnorm,
    [RLX_OP_Gemm] = lower_gemm,
    [RLX_OP_MatMul] = lower_matmul,
    [RLX_OP_Resize] = lower_resize,
    [RLX_OP_GridSample] = lower_gridsample,
};
