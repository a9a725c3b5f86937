/* Convolution and pooling kernels of the WebGPU backend against double
 * references, on random inputs with poisoned outputs: the direct kernel,
 * im2col + GEMM, implicit GEMM, pointwise GEMM and the depthwise kernel
 * give the same bits (the conv contract of DESIGN.md), with the fused
 * activations of act.h, under a lowered binding limit (im2col chunks), and
 * in f16 mode (against a reference on the f16-rounded weights); pools
 * against C. Skips without a GPU adapter (unless RLX_TEST_REQUIRE_GPU=1). */
#define _POSIX_C_SOURCE 200809L
#include "gpu_node.h"

static rlx_backend *g_be;   /* f32 backend */
static rlx_backend *g_be16; /* f16 mode */

/* ------------------------------------------------------------ convolution */

typedef struct conv_case {
    int nsp;
    int64_t n, c_in, c_out, group;
    int64_t in[3], k[3], s[3], dil[3], pb[3], pe[3];
    bool bias;
    rlx_act_kind act;
} conv_case;

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/* Direct convolution in double (independent of the library's geometry),
 * then bias, then the activation in f32. */
static double *conv_ref(const conv_case *c, const rlx_tensor *x, const rlx_tensor *w, const rlx_tensor *b, size_t *n_out,
                        int64_t *osp) {
    int64_t in[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 }, s[3] = { 1, 1, 1 }, dl[3] = { 1, 1, 1 }, pb[3] = { 0 }, o[3] = { 1, 1, 1 };
    int off = 3 - c->nsp;
    for (int i = 0; i < c->nsp; i++) {
        in[off + i] = c->in[i];
        k[off + i] = c->k[i];
        s[off + i] = c->s[i];
        dl[off + i] = c->dil[i];
        pb[off + i] = c->pb[i];
        o[off + i] = osp[i] = conv_out(c->in[i], c->k[i], c->s[i], c->dil[i], c->pb[i], c->pe[i]);
    }
    int64_t cin_g = c->c_in / c->group, cout_g = c->c_out / c->group;
    size_t total = (size_t)(c->n * c->c_out * o[0] * o[1] * o[2]);
    double *y = calloc(total + 1, sizeof *y);
    const float *px = x->data, *pw = w->data, *pbias = b ? b->data : NULL;
    rlx_act act = { c->act, 0.05f, 0.6f };
    size_t idx = 0;
    for (int64_t nb = 0; nb < c->n; nb++)
        for (int64_t co = 0; co < c->c_out; co++)
            for (int64_t oz = 0; oz < o[0]; oz++)
                for (int64_t oh = 0; oh < o[1]; oh++)
                    for (int64_t ow = 0; ow < o[2]; ow++) {
                        int64_t g = co / cout_g;
                        double acc = 0;
                        for (int64_t ci = 0; ci < cin_g; ci++)
                            for (int64_t a = 0; a < k[0]; a++)
                                for (int64_t r = 0; r < k[1]; r++)
                                    for (int64_t q = 0; q < k[2]; q++) {
                                        int64_t iz = oz * s[0] - pb[0] + a * dl[0], ih = oh * s[1] - pb[1] + r * dl[1],
                                                iw = ow * s[2] - pb[2] + q * dl[2];
                                        if (iz < 0 || iz >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                                        acc += (double)pw[(((co * cin_g + ci) * k[0] + a) * k[1] + r) * k[2] + q] *
                                               px[(((nb * c->c_in + g * cin_g + ci) * in[0] + iz) * in[1] + ih) * in[2] + iw];
                                    }
                        if (pbias) acc += pbias[co];
                        y[idx++] = rlx_act_apply(&act, (float)acc);
                    }
    *n_out = total;
    return y;
}

/* The convolution of case c on backend be; every tensor (and y) of dtype
 * dt (f32, or f16). */
static rlx_status run_conv_dt(rlx_backend *be, const conv_case *c, const rlx_tensor *x, const rlx_tensor *w,
                              const rlx_tensor *b, rlx_dtype dt, rlx_tensor **out) {
    int64_t pads[6], strides[3], dil[3], osp[3];
    int64_t yd[5] = { c->n, c->c_out };
    for (int i = 0; i < c->nsp; i++) {
        pads[i] = c->pb[i];
        pads[c->nsp + i] = c->pe[i];
        strides[i] = c->s[i];
        dil[i] = c->dil[i];
        osp[i] = conv_out(c->in[i], c->k[i], c->s[i], c->dil[i], c->pb[i], c->pe[i]);
        yd[2 + i] = osp[i];
    }
    int64_t ks[3];
    for (int i = 0; i < c->nsp; i++) ks[i] = c->k[i];
    rlx_node_attr at[8];
    int na = 0;
    at[na++] = na_int("group", c->group);
    at[na++] = na_ints("strides", (size_t)c->nsp, strides);
    at[na++] = na_ints("dilations", (size_t)c->nsp, dil);
    at[na++] = na_ints("pads", (size_t)(2 * c->nsp), pads);
    at[na++] = na_ints("kernel_shape", (size_t)c->nsp, ks);
    if (c->act) {
        at[na++] = na_int("_rlx_act", c->act);
        at[na++] = na_f("_rlx_act_alpha", 0.05f);
        at[na++] = na_f("_rlx_act_beta", 0.6f);
    }
    const rlx_tensor *in[3] = { x, w, b };
    int konst[3] = { 0, 1, 1 };
    return run_node_dt(be, "Conv", 11, b ? 3 : 2, in, konst, dt, 2 + c->nsp, yd, na, at, out, NULL);
}

static rlx_status run_conv(rlx_backend *be, const conv_case *c, const rlx_tensor *x, const rlx_tensor *w,
                           const rlx_tensor *b, rlx_tensor **out) {
    return run_conv_dt(be, c, x, w, b, RLX_DTYPE_F32, out);
}

/* An f16 copy of f32 tensor t (NULL stays NULL), whose own values are
 * rounded to those halves (so a reference computed on t sees the f16
 * operands). */
static rlx_tensor *to_f16(rlx_tensor *t) {
    if (!t) return NULL;
    rlx_tensor *h = NULL;
    CHECK(rlx_tensor_create(RLX_DTYPE_F16, t->dims, t->rank, &h) == RLX_OK);
    if (!h) return NULL;
    float *f = t->data;
    uint16_t *q = h->data;
    for (size_t i = 0; i < rlx_tensor_numel(t); i++) {
        q[i] = rlx_f32_to_f16(f[i]);
        f[i] = rlx_f16_to_f32(q[i]);
    }
    return h;
}

/* The convolutions of the bit-contract tests. */
static const conv_case k_conv_cases[] = {
    /* 3x3 pad 1, channels no multiple of 4, relu */
    { 2, 1, 3, 8, 1, { 9, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, RLX_ACT_RELU },
    /* batch 2, stride 2, dilation, asymmetric pads, hardswish */
    { 2, 2, 4, 6, 1, { 10, 7 }, { 3, 2 }, { 2, 1 }, { 2, 1 }, { 1, 0 }, { 2, 1 }, true, RLX_ACT_HARDSWISH },
    /* depthwise, batch 2, stride 2, clip (ReLU6-like) */
    { 2, 2, 8, 8, 8, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, RLX_ACT_CLIP },
    /* depthwise with channel multiplier 2, 5x5, no bias */
    { 2, 1, 4, 8, 4, { 6, 13 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, false, RLX_ACT_NONE },
    /* two groups, batch 3, dilation along w, sigmoid */
    { 2, 3, 6, 4, 2, { 5, 9 }, { 1, 3 }, { 1, 1 }, { 1, 2 }, { 0, 2 }, { 0, 2 }, true, RLX_ACT_NONE },
    /* 1x1 (pointwise), 16 -> 24 channels, 8x8 (vec4 everywhere) */
    { 2, 2, 16, 24, 1, { 8, 8 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, true, RLX_ACT_NONE },
    /* 1x1 with groups, odd spatial */
    { 2, 1, 12, 6, 3, { 5, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, true, RLX_ACT_RELU },
    /* 1x1 stride 2 (not pointwise) */
    { 2, 1, 8, 8, 1, { 9, 9 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, false, RLX_ACT_NONE },
    /* 1-D, stride 3 */
    { 1, 2, 3, 5, 1, { 17 }, { 4 }, { 3 }, { 1 }, { 2 }, { 1 }, false, RLX_ACT_NONE },
    /* 3-D (im2col + GEMM) */
    { 3, 1, 2, 3, 1, { 4, 5, 6 }, { 2, 3, 2 }, { 1, 2, 1 }, { 1, 1, 2 }, { 0, 1, 1 }, { 1, 1, 0 }, true, RLX_ACT_NONE },
    /* 1x1 with 96 input channels (pointwise GEMM, split-K below) */
    { 2, 1, 96, 16, 1, { 6, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, true, RLX_ACT_NONE },
    /* more output channels than one tile, K = 3*5*5 = 75 */
    { 2, 1, 3, 70, 1, { 12, 12 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, true, RLX_ACT_SILU },
};

/* Random inputs of case c: x, w and (with c->bias) b in [-1, 1). */
static void conv_inputs(const conv_case *c, rlx_tensor **x, rlx_tensor **w, rlx_tensor **b) {
    int rank = 2 + c->nsp;
    int64_t xd[5] = { c->n, c->c_in }, wd[5] = { c->c_out, c->c_in / c->group }, bd[1] = { c->c_out };
    for (int j = 0; j < c->nsp; j++) xd[2 + j] = c->in[j], wd[2 + j] = c->k[j];
    *x = test_tensor_random(RLX_DTYPE_F32, rank, xd, -1, 1);
    *w = test_tensor_random(RLX_DTYPE_F32, rank, wd, -1, 1);
    *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
}

static void test_conv_algos(void) {
    static const char *const algos[] = { "direct", "im2col", "implicit", NULL };
    /* the bitwise contract: one summation order (no split-K) */
    gpu_option("gpu.gemm_splitk", "0");
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_conv_cases); i++) {
        const conv_case *c = &k_conv_cases[i];
        rlx_tensor *x, *w, *b;
        conv_inputs(c, &x, &w, &b);
        int64_t osp[3];
        size_t n_ref;
        double *ref = conv_ref(c, x, w, b, &n_ref, osp);
        rlx_tensor *outs[4] = { NULL, NULL, NULL, NULL };
        for (int a = 0; a < 4; a++) {
            gpu_option("gpu.conv_algo", algos[a]);
            /* a second tile shape for the GEMM paths */
            gpu_option("gpu.gemm_tile", a == 2 && i % 2 ? "4x4,8x8,8" : NULL);
            char label[96];
            snprintf(label, sizeof label, "conv case %zu (%s)", i, algos[a] ? algos[a] : "auto");
            CHECK_MSG(run_conv(g_be, c, x, w, b, &outs[a]) == RLX_OK, "%s: %s", label, rlx_last_error());
            /* f32 accumulation in another order than the double reference */
            check_close(label, outs[a], ref, n_ref, 1e-4, 2e-5);
            if (a > 0) {
                char l2[160];
                snprintf(l2, sizeof l2, "%s vs direct", label);
                check_bits(l2, outs[a], outs[0]);
            }
        }
        gpu_option("gpu.conv_algo", NULL);
        gpu_option("gpu.gemm_tile", NULL);
        /* split-K on the fast paths (a single image and group): close to the
         * reference, in another summation order */
        if (c->n == 1 && c->group == 1) {
            gpu_option("gpu.gemm_splitk", "3");
            rlx_tensor *o = NULL;
            char label[96];
            snprintf(label, sizeof label, "conv case %zu (split-K 3)", i);
            CHECK_MSG(run_conv(g_be, c, x, w, b, &o) == RLX_OK, "%s: %s", label, rlx_last_error());
            check_close(label, o, ref, n_ref, 1e-4, 2e-5);
            rlx_tensor_destroy(o);
            gpu_option("gpu.gemm_splitk", "0");
        }
        for (int a = 0; a < 4; a++) rlx_tensor_destroy(outs[a]);
        free(ref);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(w);
        rlx_tensor_destroy(b);
    }
    gpu_option("gpu.gemm_splitk", NULL);
}

/* The bit contract for f16 tensors (every input and the output f16; the
 * kernels instantiated for T = f16, f32 sums, one rounding at the store):
 * every algorithm gives the direct kernel's halves bit for bit, and they
 * are within one f16 ULP (plus f16's subnormal spacing) of the double
 * reference on the same f16 operands. Needs an adapter with shader-f16
 * (lavapipe has it); skipped elsewhere, where such nodes decline. */
static void test_conv_f16(void) {
#ifdef RLX_HAVE_WEBGPU
    if (!((wg_backend *)g_be)->caps.shader_f16) {
        fprintf(stderr, "  (no shader-f16: f16 convolutions decline, skipped)\n");
        return;
    }
#endif
    /* 3x3 relu; stride, dilation, asymmetric pads; depthwise; groups with
     * batch 3; pointwise (vec4 loads of halves); 1-D; 3-D; K = 75 (no
     * multiple of a k tile). Odd channel and pixel counts put images,
     * groups and rows at odd element offsets. */
    static const size_t k_f16[] = { 0, 1, 2, 4, 5, 8, 9, 11 };
    static const char *const algos[] = { "direct", "im2col", "implicit", NULL };
    gpu_option("gpu.gemm_splitk", "0");
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_f16); i++) {
        const conv_case *c = &k_conv_cases[k_f16[i]];
        rlx_tensor *x, *w, *b;
        conv_inputs(c, &x, &w, &b);
        rlx_tensor *xh = to_f16(x), *wh = to_f16(w), *bh = to_f16(b);
        int64_t osp[3];
        size_t n_ref;
        double *ref = conv_ref(c, x, w, b, &n_ref, osp);
        rlx_tensor *outs[4] = { NULL, NULL, NULL, NULL };
        for (int a = 0; a < 4; a++) {
            gpu_option("gpu.conv_algo", algos[a]);
            gpu_option("gpu.gemm_tile", a == 2 && i % 2 ? "4x4,8x8,8" : NULL);
            char label[96];
            snprintf(label, sizeof label, "f16 conv case %zu (%s)", k_f16[i], algos[a] ? algos[a] : "auto");
            CHECK_MSG(run_conv_dt(g_be, c, xh, wh, bh, RLX_DTYPE_F16, &outs[a]) == RLX_OK, "%s: %s", label,
                      rlx_last_error());
            if (!outs[a]) continue;
            const uint16_t *y = outs[a]->data;
            size_t bad = 0, first = 0;
            for (size_t e = 0; e < n_ref && rlx_tensor_numel(outs[a]) == n_ref; e++) {
                double g = rlx_f16_to_f32(y[e]);
                if (!(fabs(g - ref[e]) <= 1e-4 + 2e-3 * fabs(ref[e]))) bad += !bad ? (first = e, 1) : 1;
            }
            CHECK_MSG(rlx_tensor_numel(outs[a]) == n_ref && bad == 0, "%s: %zu of %zu halves differ from the reference "
                      "(first %zu: %.9g vs %.9g)", label, bad, n_ref, first, bad ? rlx_f16_to_f32(y[first]) : 0.0,
                      bad ? ref[first] : 0.0);
            if (a > 0 && outs[0])
                CHECK_MSG(outs[a]->nbytes == outs[0]->nbytes && memcmp(outs[a]->data, outs[0]->data, outs[0]->nbytes) == 0,
                          "%s: halves differ from the direct kernel's", label);
        }
        gpu_option("gpu.conv_algo", NULL);
        gpu_option("gpu.gemm_tile", NULL);
        for (int a = 0; a < 4; a++) rlx_tensor_destroy(outs[a]);
        free(ref);
        rlx_tensor *all[6] = { x, w, b, xh, wh, bh };
        for (int k = 0; k < 6; k++) rlx_tensor_destroy(all[k]);
    }
    gpu_option("gpu.gemm_splitk", NULL);
}

/* A binding limit lower than x forces im2col chunks (by image, then by
 * group); the bits stay those of the direct kernel. f16 mode: weights as
 * binary16, compared with a reference on rounded weights. */
static void test_conv_limits_f16(void) {
    conv_case c = { 2, 3, 8, 8, 2, { 12, 12 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, RLX_ACT_RELU };
    int64_t xd[4] = { 3, 8, 12, 12 }, wd[4] = { 8, 4, 3, 3 }, bd[1] = { 8 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    rlx_tensor *o_free = NULL, *o_lim = NULL, *o16 = NULL;
    gpu_option("gpu.conv_algo", "direct");
    CHECK_OK(run_conv(g_be, &c, x, w, b, &o_free));
    gpu_option("gpu.conv_algo", NULL);
    /* x is 13.5 KiB: 8 KiB bindings take one image and one group at a time
     * (the col of one (image, group) is 20 KiB: direct) -- 24 KiB: chunks */
    rlx_options *lim = gpu_options_with("gpu.max_binding_bytes=24576");
    rlx_backend *small = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, lim, &small));
    rlx_options_destroy(lim);
    if (small) {
        CHECK_MSG(run_conv(small, &c, x, w, b, &o_lim) == RLX_OK, "chunked conv: %s", rlx_last_error());
        check_bits("conv in im2col chunks vs direct", o_lim, o_free);
        small->destroy(small);
    }
    CHECK_MSG(run_conv(g_be16, &c, x, w, b, &o16) == RLX_OK, "f16 conv: %s", rlx_last_error());
    rlx_tensor *w16 = NULL;
    CHECK_OK(rlx_tensor_clone(w, &w16));
    for (size_t i = 0; w16 && i < rlx_tensor_numel(w16); i++) ((float *)w16->data)[i] = f16_round(((float *)w->data)[i]);
    size_t n_ref;
    int64_t osp[3];
    double *ref = conv_ref(&c, x, w16, b, &n_ref, osp);
    check_close("conv f16 weights vs rounded reference", o16, ref, n_ref, 1e-4, 2e-5);
    free(ref);
    rlx_tensor_destroy(w16);
    rlx_tensor_destroy(o_free);
    rlx_tensor_destroy(o_lim);
    rlx_tensor_destroy(o16);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
}

/* ------------------------------------------------------------ ConvTranspose */

/* ConvTranspose-11 with kernel == stride (one GEMM per tap, gemm.wgsl with
 * Y_PIX) and the direct kernel, against a double reference: batch 2, bias,
 * activation, kernel 2x2 and 3x2. */
static void test_conv_transpose(void) {
    static const int64_t shapes[2][6] = { { 2, 6, 5, 4, 7, 2 }, { 1, 8, 3, 5, 3, 3 } }; /* n, cin, cout, h, w, kh */
    for (int t = 0; t < 2; t++) {
        int64_t n = shapes[t][0], ci = shapes[t][1], co = shapes[t][2], h = shapes[t][3], wd = shapes[t][4];
        int64_t kh = shapes[t][5], kw = 2;
        int64_t xd[4] = { n, ci, h, wd }, wdims[4] = { ci, co, kh, kw }, bd[1] = { co };
        int64_t yd[4] = { n, co, h * kh, wd * kw };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 4, wdims, -1, 1);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
        size_t total = (size_t)(n * co * h * kh * wd * kw);
        double *ref = calloc(total, sizeof *ref);
        rlx_act act = { RLX_ACT_LEAKYRELU, 0.2f, 0 };
        const float *px = x->data, *pw = w->data, *pb = b->data;
        for (int64_t in = 0; in < n; in++)
            for (int64_t o = 0; o < co; o++)
                for (int64_t oh = 0; oh < h * kh; oh++)
                    for (int64_t ow = 0; ow < wd * kw; ow++) {
                        double s = pb[o];
                        for (int64_t c = 0; c < ci; c++)
                            s += (double)px[((in * ci + c) * h + oh / kh) * wd + ow / kw] *
                                 pw[((c * co + o) * kh + oh % kh) * kw + ow % kw];
                        ref[((in * co + o) * h * kh + oh) * wd * kw + ow] = rlx_act_apply(&act, (float)s);
                    }
        for (int a = 0; a < 2; a++) {
            gpu_option("gpu.conv_algo", a ? "direct" : NULL);
            int64_t k2[2] = { kh, kw }, pads[4] = { 0, 0, 0, 0 };
            rlx_node_attr at[5] = { na_ints("kernel_shape", 2, k2), na_ints("strides", 2, k2), na_ints("pads", 4, pads),
                                    na_int("_rlx_act", RLX_ACT_LEAKYRELU), na_f("_rlx_act_alpha", 0.2f) };
            const rlx_tensor *in[3] = { x, w, b };
            int konst[3] = { 0, 1, 1 };
            rlx_tensor *out = NULL;
            size_t nd = 0;
            char label[80];
            snprintf(label, sizeof label, "ConvTranspose %lldx%lld (%s)", (long long)kh, (long long)kw,
                     a ? "direct" : "GEMM per tap");
            CHECK_MSG(run_node(g_be, "ConvTranspose", 11, 3, in, konst, 4, yd, 5, at, &out, &nd) == RLX_OK, "%s: %s",
                      label, rlx_last_error());
            check_close(label, out, ref, total, 1e-5, 1e-5);
            rlx_tensor_destroy(out);
        }
        gpu_option("gpu.conv_algo", NULL);
        free(ref);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(w);
        rlx_tensor_destroy(b);
    }
}

/* ------------------------------------------------------------ pools */

typedef struct pool_case {
    bool avg;
    int64_t n, c, h, w;
    int64_t k[2], s[2], d[2], pb[2], pe[2];
    bool ceil_mode, count_include_pad;
    int64_t oh, ow; /* expected output extent */
} pool_case;

/* MaxPool-12 / AveragePool-19 in double (AveragePool divides in f32 like
 * the kernels; the sum is exact in double and rounded once). */
static double *pool_ref(const pool_case *c, const float *x) {
    double *y = calloc((size_t)(c->n * c->c * c->oh * c->ow) + 1, sizeof *y);
    for (int64_t nc = 0; nc < c->n * c->c; nc++)
        for (int64_t oh = 0; oh < c->oh; oh++)
            for (int64_t ow = 0; ow < c->ow; ow++) {
                double mx = -3.4028234663852886e38, sum = 0;
                int cnt = 0, cnt_pad = 0;
                for (int64_t kr = 0; kr < c->k[0]; kr++)
                    for (int64_t kc = 0; kc < c->k[1]; kc++) {
                        int64_t ih = oh * c->s[0] - c->pb[0] + kr * c->d[0], iw = ow * c->s[1] - c->pb[1] + kc * c->d[1];
                        if (ih < c->h + c->pe[0] && iw < c->w + c->pe[1]) cnt_pad++;
                        if (ih < 0 || iw < 0 || ih >= c->h || iw >= c->w) continue;
                        double v = x[(nc * c->h + ih) * c->w + iw];
                        mx = v > mx ? v : mx;
                        sum += v;
                        cnt++;
                    }
                int div = c->count_include_pad ? cnt_pad : cnt;
                y[(nc * c->oh + oh) * c->ow + ow] = c->avg ? sum / (div ? div : 1) : mx;
            }
    return y;
}

static void test_pools(void) {
    static const pool_case cases[] = {
        /* max 3x3 s2 p1 (ResNet stem) */
        { false, 1, 3, 13, 11, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, false, false, 7, 6 },
        /* max 2x2 s2, ceil_mode on odd input */
        { false, 2, 2, 9, 7, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, true, false, 5, 4 },
        /* max with dilation and asymmetric pads */
        { false, 1, 2, 10, 12, { 2, 3 }, { 1, 2 }, { 2, 1 }, { 1, 0 }, { 0, 2 }, false, false, 9, 6 },
        /* average 3x3 s1 p1, without and with count_include_pad */
        { true, 1, 3, 8, 9, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, false, false, 8, 9 },
        { true, 1, 3, 8, 9, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, false, true, 8, 9 },
        /* average 5x1 s 2x1 */
        { true, 2, 1, 11, 5, { 5, 1 }, { 2, 1 }, { 1, 1 }, { 2, 0 }, { 2, 0 }, false, true, 6, 5 },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        const pool_case *c = &cases[i];
        int64_t xd[4] = { c->n, c->c, c->h, c->w }, yd[4] = { c->n, c->c, c->oh, c->ow };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -2, 2);
        double *ref = pool_ref(c, x->data);
        rlx_tensor *o[2] = { NULL, NULL };
        for (int k = 0; k < 2; k++) {
            gpu_option("gpu.pool_kernel", k ? "ref" : NULL);
            int64_t pads[4] = { c->pb[0], c->pb[1], c->pe[0], c->pe[1] };
            rlx_node_attr at[6];
            int na = 0;
            at[na++] = na_ints("kernel_shape", 2, c->k);
            at[na++] = na_ints("strides", 2, c->s);
            at[na++] = na_ints("pads", 4, pads);
            at[na++] = na_int("ceil_mode", c->ceil_mode);
            if (c->avg) at[na++] = na_int("count_include_pad", c->count_include_pad);
            else at[na++] = na_ints("dilations", 2, c->d);
            const rlx_tensor *in[1] = { x };
            char label[80];
            snprintf(label, sizeof label, "%s case %zu (%s)", c->avg ? "AveragePool" : "MaxPool", i, k ? "ref" : "pool2d");
            CHECK_MSG(run_node(g_be, c->avg ? "AveragePool" : "MaxPool", c->avg ? 19 : 12, 1, in, NULL, 4, yd, na, at, &o[k],
                               NULL) == RLX_OK,
                      "%s: %s", label, rlx_last_error());
            check_close(label, o[k], ref, (size_t)(c->n * c->c * c->oh * c->ow), 1e-6, 1e-6);
        }
        gpu_option("gpu.pool_kernel", NULL);
        check_bits("pool2d vs pool", o[0], o[1]);
        rlx_tensor_destroy(o[0]);
        rlx_tensor_destroy(o[1]);
        free(ref);
        rlx_tensor_destroy(x);
    }
    /* global pools over short rows (an invocation each) and long rows (a
     * workgroup each) */
    static const int64_t sizes[3][4] = { { 2, 5, 3, 4 }, { 1, 3, 20, 19 }, { 1, 2, 64, 70 } };
    for (int t = 0; t < 3; t++)
        for (int mx = 0; mx < 2; mx++) {
            rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, sizes[t], -1, 1);
            int64_t yd[4] = { sizes[t][0], sizes[t][1], 1, 1 };
            const rlx_tensor *in[1] = { x };
            rlx_tensor *o = NULL;
            CHECK_OK(run_node(g_be, mx ? "GlobalMaxPool" : "GlobalAveragePool", 1, 1, in, NULL, 4, yd, 0, NULL, &o, NULL));
            int64_t nc = sizes[t][0] * sizes[t][1], sp = sizes[t][2] * sizes[t][3];
            double ref[16];
            for (int64_t r = 0; r < nc; r++) {
                double s = 0, m = -INFINITY;
                for (int64_t j = 0; j < sp; j++) {
                    double v = ((float *)x->data)[r * sp + j];
                    s += v;
                    m = v > m ? v : m;
                }
                ref[r] = mx ? m : s / (double)sp;
            }
            char label[64];
            snprintf(label, sizeof label, "Global%sPool %lld x %lld", mx ? "Max" : "Average", (long long)nc, (long long)sp);
            check_close(label, o, ref, (size_t)nc, 1e-5, 1e-6);
            rlx_tensor_destroy(o);
            rlx_tensor_destroy(x);
        }
}

int main(void) {
    if (!gpu_open(&g_be, &g_be16, "test_gpu_conv")) return 0;
    double t0 = rlx_now_seconds();
    TIMED(test_conv_algos, t0);
    TIMED(test_conv_f16, t0);
    TIMED(test_conv_limits_f16, t0);
    TIMED(test_conv_transpose, t0);
    TIMED(test_pools, t0);
#ifdef RLX_HAVE_WEBGPU
    /* the f32 and f16-mode backends share one device and its pipeline cache */
    fprintf(stderr, "  pipelines: %zu (both backends, one shared device)\n", ((wg_backend *)g_be)->sh->pipes_created);
#endif
    g_be->destroy(g_be);
    g_be16->destroy(g_be16);
    gpu_close();
    TEST_MAIN_END();
}
