/* Cases of the neural-network lowerings (lower_nn.c): Conv over 1-3
 * spatial dims with groups (grouped, depthwise), strides, dilations,
 * asymmetric pads and auto_pad, every GPU algorithm (gpu.conv_algo,
 * gpu.dwconv_kernel) and f16 weights; ConvTranspose; MaxPool and
 * AveragePool (ceil_mode, count_include_pad, dilations, both kernel
 * families); the global pools; BatchNormalization; Resize (nearest with
 * each rounding mode, linear, each coordinate transformation, scales and
 * sizes). Tolerances: a convolution sums K = C/g * prod(kernel) products in
 * another order than the CPU, hence a relative error and an absolute one
 * that grows with sqrt(K); f16 weights add their rounding (2^-11). Each
 * op also has f16 cases (every tensor f16: f16_param, F16_RTOL). */
#include <math.h>
#include <string.h>

#include "base/tensor.h"
#include "harness.h"

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1)); }

/* Geometry of a conv-like case: spatial rank, kernel, strides, dilations,
 * pads (begin..., end...), input spatial dims. */
typedef struct geom {
    int sr;
    int64_t k[3], s[3], d[3], p[6], in[3];
    const char *auto_pad; /* NULL: explicit pads */
} geom;

static void rand_geom(geom *g, int sr, bool big, bool dil) {
    g->sr = sr;
    g->auto_pad = NULL;
    for (int i = 0; i < sr; i++) {
        g->k[i] = rnd(1, sr == 3 ? 3 : 5);
        g->s[i] = rnd(1, 3);
        g->d[i] = dil ? rnd(1, 2) : 1;
        int64_t ext = (g->k[i] - 1) * g->d[i] + 1;
        g->p[i] = rnd(0, ext - 1);
        g->p[sr + i] = rnd(0, ext - 1); /* asymmetric */
        g->in[i] = rnd(ext > 3 ? ext : 3, sr == 3 ? 6 : 13);
    }
    if (big) g->in[sr - 1] = 300; /* a row longer than a workgroup */
}

static void geom_attrs(const geom *g, rlx_attr *a, size_t *na, bool strides, bool dilations) {
    a[(*na)++] = RLX_ATTR_IS("kernel_shape", (size_t)g->sr, g->k);
    if (strides) a[(*na)++] = RLX_ATTR_IS("strides", (size_t)g->sr, g->s);
    if (dilations) a[(*na)++] = RLX_ATTR_IS("dilations", (size_t)g->sr, g->d);
    if (g->auto_pad) a[(*na)++] = RLX_ATTR_S("auto_pad", g->auto_pad);
    else a[(*na)++] = RLX_ATTR_IS("pads", (size_t)(2 * g->sr), g->p);
}

static void geom_desc(bo_case *c, const geom *g) {
    char b1[64], b2[64], b3[64], b4[96];
    bo_desc(c, " kernel=%s strides=%s dilations=%s", bo_shape_str(g->sr, g->k, b1, 64), bo_shape_str(g->sr, g->s, b2, 64),
            bo_shape_str(g->sr, g->d, b3, 64));
    if (g->auto_pad) bo_desc(c, " auto_pad=%s", g->auto_pad);
    else bo_desc(c, " pads=%s", bo_shape_str(2 * g->sr, g->p, b4, 96));
}

/* The f16 axis: after a generator's f32 cases, cases that take every
 * tensor in f16 (the parameters of f32 case k_pick[j], so the geometry and
 * the algorithm sweep are the f32 ones). The GPU computes in f32 and rounds
 * once at the store, the CPU in double: the results differ by the f32
 * sums' order (the op's sqrt(K) term) and then by at most one f16 ULP
 * where the two sums round to neighbouring halves: rtol 2e-3 (2^-10 is one
 * ULP relative to the lower end of a binade), and atol 1e-4 for results in
 * f16's subnormal range (below 6.1e-5). Cases past `quick` run with --full
 * only. */
#define F16_RTOL 2e-3
#define F16_ATOL 1e-4
static int f16_cases(const bo_ctx *ctx, int quick, int full) { return bo_full(ctx) ? full : quick; }
static void f16_tol(bo_case *c) {
    c->rtol += F16_RTOL;
    c->atol += F16_ATOL;
}
/* Parameter index of case t of a generator with n f32 cases: t itself, or
 * for the f16 cases (t >= n) pick[t - n] (the quick ones first), else
 * t - n. */
static int f16_param(int t, int n, const int *pick, int n_pick, bool *half) {
    *half = t >= n;
    if (!*half) return t;
    return t - n < n_pick ? pick[t - n] : t - n;
}

/* ------------------------------------------------------------ Conv */

/* Channels of a conv case by kind: 1 depthwise (groups = input channels
 * in [dw_lo, dw_hi], channel multiplier 1 or 2), 2 grouped (2 or 3 groups
 * of 1-3 channels each side), else one group of 1..cin_hi inputs and
 * 1..cout_hi outputs. */
static void rand_channels(int kind, int64_t dw_lo, int64_t dw_hi, int64_t cin_hi, int64_t cout_hi, int64_t *grp,
                          int64_t *cin, int64_t *cout) {
    *grp = 1;
    if (kind == 1) {
        *grp = *cin = rnd(dw_lo, dw_hi);
        *cout = *cin * rnd(1, 2);
    } else if (kind == 2) {
        *grp = rnd(2, 3);
        *cin = *grp * rnd(1, 3);
        *cout = *grp * rnd(1, 3);
    } else {
        *cin = rnd(1, cin_hi);
        *cout = rnd(1, cout_hi);
    }
}

/* Batched convolutions whose GEMM splits k (lower_gemm.c emit_one: the
 * grid of tiles x images is small, k long): implicit (3x3, strided, two
 * groups) and pointwise (1x1) paths at N = 2..8, bias, the fused residual
 * and Relu (Conv + Add + Relu, the fusion pass), automatic and forced
 * slice counts, f16 tensors (f32 partial sums), fewer slices where the
 * partial sums would exceed a binding, and one case with the split off. The partial sums are [slice][image][M][N] in the scratch and
 * gemm_reduce writes each image at its stride: a wrong stride or a lost
 * slice leaves poisoned (NaN) or wrong outputs. Tolerance: the op's (the
 * slices change the summation order), f16 the f16 axis'. */
typedef struct splitk_conv {
    int64_t n, cin, cout, hw, k, s, group;
    bool bias, res; /* res: + residual [N, cout, oh, ow] then Relu, fused into the Conv */
    bool half;
    const char *opt;
} splitk_conv;

static const splitk_conv k_splitk_conv[] = {
    { 8, 64, 64, 7, 3, 1, 1, true, false, false, NULL },                /* ResNet's layer4 shape, narrowed: 18 slices */
    { 2, 40, 36, 14, 3, 2, 1, true, false, false, "gpu.gemm_splitk=3" }, /* strided, M not a tile multiple */
    { 4, 300, 20, 5, 1, 1, 1, false, false, false, NULL },              /* pointwise, N = 25 (scalar stores) */
    { 3, 256, 64, 8, 1, 1, 1, true, false, false, "gpu.gemm_splitk=5" }, /* pointwise, N = 64 (vec4 stores) */
    { 5, 48, 24, 6, 3, 1, 1, true, true, false, NULL },                 /* + residual + Relu in gemm_reduce */
    { 8, 256, 16, 4, 1, 1, 1, false, true, false, "gpu.gemm_splitk=2" }, /* pointwise + residual + Relu */
    { 3, 64, 32, 5, 3, 1, 2, true, false, false, NULL },                /* two groups: images x groups x slices */
    { 2, 64, 24, 6, 3, 1, 1, true, true, true, NULL },                  /* f16 tensors, f32 partial sums */
    { 8, 64, 64, 7, 3, 1, 1, true, false, false, "gpu.gemm_splitk=0" }, /* the split off: one sum per output */
    /* 18 slices' partial sums (1.8 MB) exceed the binding: 5 slices */
    { 8, 64, 64, 7, 3, 1, 1, true, false, false, "gpu.max_binding_bytes=524288" },
    /* k >= 768, >= 128 output channels: 128 x 64 tiles (lower_gemm.c) */
    { 4, 96, 128, 16, 3, 1, 1, true, true, false, NULL },    /* 16 tiles x 24 slices, + residual + Relu */
    { 8, 800, 136, 10, 1, 1, 1, true, false, false, NULL },  /* pointwise, partial tiles: 32 tiles x 12 slices */
};

static void gen_conv_splitk(bo_ctx *ctx) {
    for (size_t i = 0; i < BO_LEN(k_splitk_conv); i++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        const splitk_conv *q = &k_splitk_conv[i];
        rlx_dtype dt = q->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t p = q->k / 2, oh = (q->hw + 2 * p - q->k) / q->s + 1;
        int64_t xd[4] = { q->n, q->cin, q->hw, q->hw }, wd[4] = { q->cout, q->cin / q->group, q->k, q->k }, co = q->cout;
        int64_t rd[4] = { q->n, q->cout, oh, oh };
        const char *ins[3] = { bo_input(c, bo_rand(dt, 4, xd, -1, 1)), bo_const(c, bo_rand(dt, 4, wd, -1, 1)),
                               q->bias ? bo_const(c, bo_rand(dt, 1, &co, -1, 1)) : "" };
        rlx_attr a[4] = { RLX_ATTR_IS("kernel_shape", 2, ((const int64_t[]){ q->k, q->k })),
                          RLX_ATTR_IS("strides", 2, ((const int64_t[]){ q->s, q->s })),
                          RLX_ATTR_IS("pads", 4, ((const int64_t[]){ p, p, p, p })), RLX_ATTR_I("group", q->group) };
        const char *y = bo_node(c, "Conv", q->bias ? 3 : 2, ins, 1, 4, a);
        bo_desc(c, "Conv%s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] stride=%lld group=%lld%s", q->half ? " f16" : "",
                (long long)q->n, (long long)q->cin, (long long)q->hw, (long long)q->hw, (long long)q->cout,
                (long long)(q->cin / q->group), (long long)q->k, (long long)q->k, (long long)q->s, (long long)q->group,
                q->bias ? " bias" : "");
        if (q->res) {
            const char *ab[2] = { y, bo_input(c, bo_rand(dt, 4, rd, -1, 1)) };
            y = bo_node(c, "Add", 2, ab, 1, 0, NULL);
            y = bo_node(c, "Relu", 1, &y, 1, 0, NULL);
            c->fused = "Conv";
            bo_desc(c, " + residual + Relu (fused)");
        }
        bo_output(c, y);
        bo_desc(c, " batched split-K");
        if (q->opt) {
            bo_opt(c, q->opt);
            bo_desc(c, " %s", q->opt);
        }
        double kk = (double)(q->cin / q->group * q->k * q->k);
        c->atol *= sqrt(kk);
        if (q->half) f16_tol(c);
        /* f16 with the residual: the unfused reference rounds the conv's
         * sum (|sum| up to ~5 sqrt(K) / 3 for uniform [-1, 1) inputs) to a
         * half before adding the residual, the fused path rounds once after:
         * where the two cancel the difference is about one ULP of the sum
         * (the harness compares fused with unfused; seed 1 --full on the
         * H200 and lavapipe: 0.0156 at K = 576) */
        if (q->half && q->res) c->atol += ldexp(5.0 * sqrt(kk) / 3.0, -10);
        bo_run(ctx, c);
    }
}

static void gen_conv(bo_ctx *ctx, const void *arg) {
    static const char *const k_algo[] = { NULL, "gpu.conv_algo=direct", "gpu.conv_algo=im2col", "gpu.conv_algo=implicit" };
    int n = bo_full(ctx) ? 240 : 20;
    /* f16: every kind (plain, depthwise, grouped, 1x1) by each algorithm,
     * K > 256 (7, 15) */
    static const int k_pick[] = { 0, 1, 2, 3, 6, 7, 9, 11, 14, 15, 4, 5, 8, 10, 12, 13 };
    int n16 = f16_cases(ctx, 10, 48);
    for (int t = 0; t < n + n16; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bool half;
        int i = f16_param(t, n, k_pick, BO_LEN(k_pick), &half);
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int sr = i % 7 == 6 ? 3 : i % 5 == 4 ? 1 : 2;
        geom g;
        rand_geom(&g, sr, i % 9 == 8, true);
        int kind = i % 4; /* 0 plain, 1 depthwise, 2 grouped, 3 1x1 */
        int64_t nb = rnd(1, 2), grp, cin, cout;
        rand_channels(kind, 1, 8, 9, 17, &grp, &cin, &cout);
        if (kind == 3)
            for (int j = 0; j < sr; j++) g.k[j] = 1, g.d[j] = 1, g.p[j] = g.p[sr + j] = 0;
        if (i % 6 == 5) g.auto_pad = i % 12 == 5 ? "SAME_UPPER" : "SAME_LOWER";
        if (i % 10 == 7) g.auto_pad = "VALID";
        if (i % 8 == 7) cin = 67, grp = 1, kind = 0, cout = rnd(3, 9); /* K > 256 */
        bo_shape xs = { 2 + sr, { nb, cin } }, ws = { 2 + sr, { cout, cin / grp } };
        for (int j = 0; j < sr; j++) xs.d[2 + j] = g.in[j], ws.d[2 + j] = g.k[j];
        bool bias = i % 3 != 1;
        int64_t co = cout;
        rlx_tensor *in[3] = { bo_rand(dt, xs.rank, xs.d, -1, 1), bo_rand(dt, ws.rank, ws.d, -1, 1),
                              bias ? bo_rand(dt, 1, &co, -1, 1) : NULL };
        bool k[3] = { false, i % 11 != 10, true }; /* weights at run time once in a while */
        const char *algo = k_algo[(i / 4) % 4];
        if (algo) bo_opt(c, algo);
        bool f16 = i % 13 == 12 && !half;
        if (f16) {
            bo_opt(c, "gpu.f16=1");
            c->rtol = 1e-2, c->atol = 1e-2;
        }
        if (kind == 1 && i % 8 == 5) bo_opt(c, "gpu.dwconv_kernel=loop");
        char sx[96], sw[96];
        bo_desc(c, "Conv%s x%s w%s group=%lld%s", half ? " f16" : "", bo_shape_str(xs.rank, xs.d, sx, 96),
                bo_shape_str(ws.rank, ws.d, sw, 96), (long long)grp, bias ? " bias" : "");
        geom_desc(c, &g);
        for (int j = 0; j < c->n_opts; j++) bo_desc(c, " %s", c->opts[j]);
        int64_t kk = ws.d[1];
        for (int j = 0; j < sr; j++) kk *= g.k[j];
        c->atol *= sqrt((double)kk);
        if (half) f16_tol(c);
        rlx_attr a[6];
        size_t na = 0;
        geom_attrs(&g, a, &na, true, true);
        a[na++] = RLX_ATTR_I("group", grp);
        bo_single(c, "Conv", 3, in, k, 1, na, a);
        bo_run(ctx, c);
    }
    /* f16 weights beyond the f16 range must not turn into inf: such a weight stays f32 */
    bo_case *c = bo_next(ctx, 22);
    if (c) {
        int64_t xd[4] = { 1, 3, 5, 5 }, wd[4] = { 4, 3, 3, 3 };
        rlx_tensor *w = bo_rand(RLX_DTYPE_F32, 4, wd, -1, 1);
        ((float *)w->data)[0] = 1e5f;
        ((float *)w->data)[7] = -7e4f;
        rlx_tensor *in[2] = { bo_rand(RLX_DTYPE_F32, 4, xd, -1, 1), w };
        bool k[2] = { false, true };
        bo_opt(c, "gpu.f16=1");
        c->rtol = 1e-2, c->atol = 1e-1;
        bo_desc(c, "Conv x[1,3,5,5] w[4,3,3,3] with weights 1e5 and -7e4 (beyond f16) gpu.f16=1");
        rlx_attr a = RLX_ATTR_IS("pads", 4, ((const int64_t[]){ 1, 1, 1, 1 }));
        bo_single(c, "Conv", 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    gen_conv_splitk(ctx);
}

/* ------------------------------------------------------------ integer convolution */

/* One integer convolution case: x [xsh] of xt, w [wsh] of wt, geometry g,
 * group grp; zmode 0: no zero points (ConvInteger), 1: scalar ones, 2: w's
 * per output channel, 3: at their types' extremes (x's 0 or 255, -128 or
 * 127 by i; w's per output channel, alternating) with x's elements at
 * its extremes half the time (the largest products); w a constant when kw. QLinearConv (ql): the scales,
 * y's type, the bias and powers of two picked by i (below). Builds the
 * single-node model and runs it. */
static void qconv_case(bo_ctx *ctx, bo_case *c, bool ql, int i, rlx_dtype xt, rlx_dtype wt, const bo_shape *xsh,
                       const bo_shape *wsh, const geom *g, int64_t grp, int zmode, bool kw) {
    bool xs_ = xt == RLX_DTYPE_I8, ws_ = wt == RLX_DTYPE_I8;
    int sr = g->sr;
    int64_t co = wsh->d[0], cin = xsh->d[1];
    rlx_tensor *x = bo_rand_int(xt, xsh->rank, xsh->d, xs_ ? -128 : 0, xs_ ? 127 : 255);
    rlx_tensor *w = bo_rand_int(wt, wsh->rank, wsh->d, ws_ ? -128 : 0, ws_ ? 127 : 255);
    rlx_tensor *zx = NULL, *zw = NULL;
    if (zmode == 3) {
        int64_t xlo = xs_ ? -128 : 0, wlo = ws_ ? -128 : 0;
        zx = bo_scalar(xt, (double)(xlo + (i % 2 ? 255 : 0)));
        zw = bo_rand_int(wt, 1, &co, wlo, wlo + 255);
        for (int64_t m = 0; m < co; m++) rlx_tensor_set_i64(zw, (size_t)m, wlo + ((m + i / 2) % 2 ? 255 : 0));
        for (size_t e = 0; e < rlx_tensor_numel(x); e++)
            if (rnd(0, 1)) rlx_tensor_set_i64(x, e, xlo + (rnd(0, 1) ? 255 : 0));
    } else if (zmode) {
        zx = bo_scalar(xt, xs_ ? (double)rnd(-5, 5) : (double)rnd(100, 150));
        zw = zmode == 2 ? bo_rand_int(wt, 1, &co, ws_ ? -128 : 0, ws_ ? 127 : 255)
                        : bo_scalar(wt, ws_ ? (double)rnd(-5, 5) : (double)rnd(100, 150));
    }
    char s1[96], s2[96];
    bo_desc(c, "%s x %s%s w %s%s group=%lld zp %s%s", ql ? "QLinearConv" : "ConvInteger", rlx_dtype_name(xt),
            bo_shape_str(xsh->rank, xsh->d, s1, 96), rlx_dtype_name(wt), bo_shape_str(wsh->rank, wsh->d, s2, 96),
            (long long)grp, zmode == 0 ? "none" : zmode == 1 ? "scalar" : zmode == 2 ? "w per channel" : "at the extremes",
            kw ? " w constant" : "");
    geom_desc(c, g);
    rlx_attr a[6];
    size_t na = 0;
    geom_attrs(g, a, &na, true, true);
    a[na++] = RLX_ATTR_I("group", grp);
    if (!ql) {
        rlx_tensor *in[4] = { x, w, zx, zw };
        bool k[4] = { false, kw, true, true };
        bo_single(c, "ConvInteger", zx ? 4 : 2, in, k, 1, na, a);
        bo_run(ctx, c);
        return;
    }
    int64_t K = cin / grp;
    for (int j = 0; j < sr; j++) K *= g->k[j];
    bool pow2 = i % 4 == 1, tie = zmode != 3 && (i % 4 == 3 || i % 8 == 6), chan = i % 3 != 0, bias = i % 4 != 2;
    double spread = pow2 ? 1 : 150.0 / (sqrt((double)K) * 5500.0 + 1);
    rlx_tensor *sx = bo_scalar(RLX_DTYPE_F32, tie ? 0.05 : pow2 ? 0.5 : bo_uniform(0.5, 2));
    rlx_tensor *sw = chan ? bo_rand(RLX_DTYPE_F32, 1, &co, 0.5, 2)
                          : bo_scalar(RLX_DTYPE_F32, tie ? 0.02 : pow2 ? 0.25 : bo_uniform(0.5, 2));
    for (int64_t m = 0; chan && (pow2 || tie) && m < co; m++)
        ((float *)sw->data)[m] = tie ? 0.02f : (float)ldexp(1.0, -(int)rnd(1, 3));
    rlx_tensor *sy = bo_scalar(RLX_DTYPE_F32, tie ? 0.1 : pow2 ? ldexp(1.0, K > 64 ? 4 : 1) : 1.0 / spread);
    rlx_dtype yt = i % 3 == 0 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
    rlx_tensor *zy = bo_scalar(yt, yt == RLX_DTYPE_I8 ? (double)rnd(-20, 20) : (double)rnd(100, 150));
    rlx_tensor *b = bias ? bo_rand_int(RLX_DTYPE_I32, 1, &co, -20000, 20000) : NULL;
    if (tie) { /* ties: w - zw = +-50, x - zx in [-3, 3], the bias a multiple of 50, the multiplier
                * (0.05 * 0.02) / 0.1 (f32 just above 0.01, double just below): every sum is 50 S and
                * odd S give near-half levels where the multiplier's and the product's f32 rounding
                * decide (issue 12: onnxruntime's rule) */
        int64_t zxv = zx ? rlx_tensor_get_i64(zx, 0) : xs_ ? 0 : 3;
        for (size_t e = 0; e < rlx_tensor_numel(x); e++) rlx_tensor_set_i64(x, e, zxv + rnd(-3, 3));
        for (size_t e = 0; zw && e < rlx_tensor_numel(zw); e++) rlx_tensor_set_i64(zw, e, ws_ ? 0 : 100);
        for (size_t e = 0; e < rlx_tensor_numel(w); e++) /* unsigned w without a zero point: 50 or 150 */
            rlx_tensor_set_i64(w, e, (ws_ ? 0 : 100) + (rnd(0, 1) ? 50 : -50));
        for (int64_t m = 0; b && m < co; m++) ((int32_t *)b->data)[m] = (int32_t)(50 * rnd(-20, 20));
    }
    bo_desc(c, " scales %s%s y %s%s", tie ? "at ties" : pow2 ? "powers of two" : "random", chan ? " w per channel" : "",
            rlx_dtype_name(yt), bias ? " bias" : "");
    rlx_tensor *in[9] = { x, sx, zx, w, sw, zw, sy, zy, b };
    bool k[9] = { false, true, true, kw, true, true, true, true, true };
    bo_single(c, "QLinearConv", bias ? 9 : 8, in, k, 1, na, a);
    bo_run(ctx, c);
}

/* The convolutions of real models (ResNet / MobileNet / PP-OCRv4 det
 * layers: the stem's 7x7 stride 2, 3x3 stride 1 and 2, 1x1 pointwise and
 * strided, grouped, dilated, a 5x5), spatially small in the quick sweep
 * and larger with more channels (several 64 x 64 workgroup tiles) in
 * --full: cin, cout, group, kernel, stride, pad (all sides), dilation,
 * input height and width (quick), then (full). */
typedef struct qconv_shape {
    int64_t cin, cout, grp, k, s, p, d, h, w, h_full, w_full, full_mult;
} qconv_shape;
static const qconv_shape k_qconv_shapes[] = {
    { 32, 24, 1, 1, 1, 0, 1, 6, 6, 32, 32, 4 },    /* pointwise: no gather */
    { 16, 16, 1, 3, 1, 1, 1, 8, 8, 40, 40, 4 },    /* 3x3 s1 pad 1 */
    { 8, 16, 1, 3, 2, 1, 1, 9, 9, 41, 33, 4 },     /* 3x3 s2 pad 1, odd input */
    { 3, 8, 1, 7, 2, 3, 1, 15, 15, 64, 64, 8 },    /* the ResNet stem */
    { 8, 8, 2, 3, 1, 2, 2, 7, 7, 30, 30, 4 },      /* groups, dilation 2 */
    { 16, 8, 1, 1, 2, 0, 1, 7, 7, 30, 30, 8 },     /* 1x1 stride 2 (a gather of one tap) */
    { 6, 12, 1, 5, 1, 2, 1, 8, 9, 32, 32, 4 },     /* 5x5: rows of four taps as one word */
    { 24, 16, 1, 3, 1, 0, 1, 5, 6, 17, 22, 4 },    /* 3x3 unpadded, n % 4 != 0 */
};

/* The variants each model shape runs with (option, "" for auto). */
static const char *const k_qconv_variants[] = { "", "gpu.qgemm_tile=reg", "gpu.qgemm_tile=0", "gpu.qgemm_tile=wg",
                                                "gpu.qgemm_tile=gemv", "gpu.dot4=0", "gpu.qgemm_tile=gen" };

static void gen_qconv_models(bo_ctx *ctx, bool ql) {
    bool full = bo_full(ctx);
    int ns = (int)BO_LEN(k_qconv_shapes), nv = (int)BO_LEN(k_qconv_variants);
    /* quick: each shape once, the variant rotating; full: every variant */
    int n = full ? ns * nv : ns;
    for (int t = 0; t < n; t++) {
        bo_case *c = bo_next(ctx, 10);
        if (!c) continue;
        int si = full ? t / nv : t, vi = full ? t % nv : t % nv;
        const qconv_shape *sh = &k_qconv_shapes[si];
        const char *opt = k_qconv_variants[vi];
        if (opt[0]) bo_opt(c, opt);
        geom g = { .sr = 2, .auto_pad = NULL };
        for (int j = 0; j < 2; j++) {
            g.k[j] = sh->k, g.s[j] = sh->s, g.d[j] = sh->d, g.p[j] = g.p[2 + j] = sh->p;
        }
        g.in[0] = full ? sh->h_full : sh->h, g.in[1] = full ? sh->w_full : sh->w;
        int64_t m = full ? sh->full_mult : 1;
        int64_t cin = sh->cin * (sh->cin > 3 ? m : 1), cout = sh->cout * m;
        bo_shape xsh = { 4, { 1, cin, g.in[0], g.in[1] } }, wsh = { 4, { cout, cin / sh->grp, sh->k, sh->k } };
        /* x uint8 with w int8 per channel (onnxruntime's QDQ default), then the other pairings */
        rlx_dtype xt = t % 3 == 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8, wt = t % 4 == 3 ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
        int zmode = ql ? (t % 5 == 4 ? 1 : 2) : t % 3;
        bo_desc(c, "model shape %d%s%s: ", si, opt[0] ? " " : "", opt);
        qconv_case(ctx, c, ql, t, xt, wt, &xsh, &wsh, &g, sh->grp, zmode, t % 6 != 5);
    }
}

/* The integer GEMM's workgroup tiles on convolutions (lower_qgemm.c's
 * tile rule and gpu.qgemm_tile=wgRxC): output channels per group (m) of
 * 1 to 20, 33 and 70, output pixels (n) not multiples of the tile (and
 * not of 4: ConvInteger's i32 y keeps the tiles), strides 1 and 2, pads,
 * dilation 2, groups, a 3x5 kernel, 1x1 gathers and the pointwise plain
 * b; every tile shape, the rule (wg), auto and legacy, rotating over the
 * geometries; x and w u8/i8, zero points per tensor and per channel. */
typedef struct qtile_geom {
    int64_t cin, cout, grp, kh, kw, s, p, d, h, w;
} qtile_geom;
static const qtile_geom k_qtile_geoms[] = {
    { 5, 1, 1, 3, 3, 1, 1, 1, 9, 11 },    /* m 1, n 99 */
    { 6, 3, 1, 3, 3, 2, 1, 1, 13, 10 },   /* m 3, stride 2, n 35 */
    { 8, 7, 1, 1, 1, 1, 0, 1, 7, 9 },     /* pointwise (plain b), m 7, n 63 */
    { 4, 9, 1, 3, 3, 1, 2, 2, 10, 12 },   /* dilation 2, pad 2, m 9, n 120 */
    { 12, 12, 2, 3, 3, 1, 1, 1, 9, 14 },  /* groups 2 (m 6 each), n 126 */
    { 16, 16, 1, 3, 3, 1, 1, 1, 12, 17 }, /* m 16, n 204 */
    { 3, 17, 1, 5, 5, 2, 2, 1, 17, 13 },  /* m 17, 5x5 stride 2, n 63 */
    { 10, 20, 1, 3, 3, 1, 0, 1, 11, 23 }, /* m 20 unpadded, n 189 */
    { 16, 33, 1, 1, 1, 2, 0, 1, 15, 15 }, /* m 33, 1x1 stride 2 (a gather), n 64 */
    { 8, 70, 1, 3, 3, 1, 1, 1, 10, 13 },  /* m 70 (past 64), n 130 */
    { 7, 24, 1, 3, 5, 1, 1, 1, 9, 21 },   /* 3x5 kernel, m 24, n 171 */
    { 32, 16, 1, 3, 3, 1, 1, 1, 20, 36 }, /* m 16, n 720: several column tiles */
};
static const char *const k_qtile_opts[] = {
    "gpu.qgemm_tile=wg16x32", "gpu.qgemm_tile=wg16x64",  "gpu.qgemm_tile=wg16x128", "gpu.qgemm_tile=wg32x32",
    "gpu.qgemm_tile=wg32x64", "gpu.qgemm_tile=wg32x128", "gpu.qgemm_tile=wg64x32",  "gpu.qgemm_tile=wg64x64",
    "gpu.qgemm_tile=wg64x128", "gpu.qgemm_tile=wg",      "",                        "gpu.qgemm_tile=legacy",
};

static void gen_qconv_tiles(bo_ctx *ctx, bool ql) {
    int ng = (int)BO_LEN(k_qtile_geoms), nv = (int)BO_LEN(k_qtile_opts);
    /* quick: each geometry twice and each variant twice; full: every pair */
    int n = bo_full(ctx) ? ng * nv : 2 * ng;
    for (int t = 0; t < n; t++) {
        bo_case *c = bo_next(ctx, 10);
        if (!c) continue;
        const qtile_geom *q = &k_qtile_geoms[t % ng];
        const char *opt = k_qtile_opts[bo_full(ctx) ? t / ng : (t + t / ng * 5) % nv];
        if (opt[0]) bo_opt(c, opt);
        geom g = { .sr = 2, .auto_pad = NULL };
        g.k[0] = q->kh, g.k[1] = q->kw;
        for (int j = 0; j < 2; j++) g.s[j] = q->s, g.d[j] = q->d, g.p[j] = g.p[2 + j] = q->p;
        g.in[0] = q->h, g.in[1] = q->w;
        bo_shape xsh = { 4, { 1 + (t % 5 == 4), q->cin, q->h, q->w } }, wsh = { 4, { q->cout, q->cin / q->grp, q->kh, q->kw } };
        rlx_dtype xt = t % 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8, wt = (t / 2) % 2 ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
        int zmode = ql ? 1 + (t / 3) % 2 : t % 3;
        bo_desc(c, "tiles %s: ", opt[0] ? opt : "auto");
        qconv_case(ctx, c, ql, t, xt, wt, &xsh, &wsh, &g, q->grp, zmode, t % 4 != 3);
    }
}

/* The depthwise integer convolution (qdwconv_body.wgsl: four outputs of
 * one row per invocation, x's taps as words for strides 1 and 2 inside
 * the row, byte by byte at the edges and for stride 3; with dot4I8Packed
 * (qdwconv_dp4) a kernel row of up to 5 taps at stride 1 or 2 in one or
 * two dot products per output; rows whose four outputs straddle two
 * output rows one by one): output widths multiples of 4 and not, strides
 * 1, 2, 3, asymmetric pads, dilation 2, kernels 1x1, 1x2, 3x3, 3x4, 5x5,
 * 7x7, 3x1 and 2x4, a channel multiplier of 2, a 1-D case, two images;
 * auto, the product per tap (gpu.dot4=0) and legacy (every output alone);
 * x and w u8/i8, zero points per tensor, per channel and at their types'
 * extremes (with x at its extremes). */
typedef struct qdw_geom {
    int sr;
    int64_t c, mult, kh, kw, s, pb, pe, d, h, w;
} qdw_geom;
static const qdw_geom k_qdw_geoms[] = {
    { 2, 5, 1, 3, 3, 1, 1, 1, 1, 6, 16 },  /* out_w 16 */
    { 2, 4, 1, 3, 3, 2, 1, 1, 1, 9, 17 },  /* stride 2, out_w 9 */
    { 2, 3, 1, 3, 3, 1, 0, 0, 2, 8, 13 },  /* dilation 2, unpadded, out_w 9 */
    { 2, 3, 2, 5, 5, 1, 2, 2, 1, 7, 12 },  /* channel multiplier 2, 5x5 */
    { 2, 4, 1, 3, 3, 3, 1, 1, 1, 8, 26 },  /* stride 3 (bytes), out_w 9 */
    { 1, 6, 1, 1, 3, 1, 1, 1, 1, 1, 30 },  /* 1-D, out_w 30 */
    { 2, 5, 1, 3, 3, 2, 0, 1, 1, 10, 16 }, /* stride 2, pads 0 / 1, out_w 8 */
    { 2, 7, 1, 1, 1, 1, 0, 0, 1, 5, 11 },  /* 1x1 */
    { 2, 2, 1, 3, 3, 1, 1, 1, 1, 3, 4 },   /* out_w 4 */
    { 2, 3, 1, 7, 7, 1, 3, 3, 1, 9, 23 },  /* 7x7, out_w 23 */
    { 2, 4, 1, 3, 1, 2, 1, 0, 1, 11, 21 }, /* 3x1 stride 2, out_w 11 */
    { 2, 6, 1, 3, 3, 2, 1, 1, 2, 12, 24 }, /* stride 2 dilation 2, out_w 11 */
    { 2, 4, 1, 5, 5, 1, 2, 2, 1, 6, 21 },  /* 5x5, out_w 21: the row window's fifth tap (kc 4) */
    { 2, 3, 1, 2, 4, 1, 0, 1, 1, 5, 19 },  /* 2x4, pads 0 / 1, out_w 17: windows of 7 bytes */
    { 2, 4, 1, 5, 5, 2, 2, 1, 1, 9, 30 },  /* 5x5 stride 2, out_w 15: windows of 11 bytes (four words) */
    { 2, 5, 1, 1, 2, 1, 0, 1, 1, 4, 18 },  /* 1x2, out_w 18 */
    { 2, 3, 1, 3, 4, 2, 1, 2, 1, 7, 27 },  /* 3x4 stride 2, pads 1 / 2, out_w 14 */
    { 2, 4, 1, 3, 3, 1, 1, 1, 1, 7, 40 },  /* 3x3, out_w 40: mostly inner rows */
};

static void gen_qdwconv(bo_ctx *ctx, bool ql) {
    int ng = (int)BO_LEN(k_qdw_geoms);
    int n = bo_full(ctx) ? 4 * ng : ng;
    for (int t = 0; t < n; t++) {
        bo_case *c = bo_next(ctx, 10);
        if (!c) continue;
        const qdw_geom *q = &k_qdw_geoms[t % ng];
        bool legacy = bo_full(ctx) ? (t / ng) % 2 == 1 : t % 4 == 3;
        bool nodot = !legacy && (bo_full(ctx) ? t / ng == 2 : t % 6 == 1);
        if (legacy) bo_opt(c, "gpu.qgemm_tile=legacy");
        if (nodot) bo_opt(c, "gpu.dot4=0");
        geom g = { .sr = q->sr, .auto_pad = NULL };
        int o = q->sr == 2 ? 0 : -1;
        if (o == 0) g.k[0] = q->kh, g.s[0] = q->s, g.d[0] = q->d, g.p[0] = g.p[2] = q->pb, g.in[0] = q->h;
        g.k[o + 1] = q->kw, g.s[o + 1] = q->s, g.d[o + 1] = q->d, g.in[o + 1] = q->w;
        g.p[o + 1] = q->pb, g.p[q->sr + o + 1] = q->pe;
        int64_t nb = 1 + (t % 3 == 2), co = q->c * q->mult;
        bo_shape xsh = { 2 + q->sr, { nb, q->c } }, wsh = { 2 + q->sr, { co, 1 } };
        for (int j = 0; j < q->sr; j++) xsh.d[2 + j] = g.in[j], wsh.d[2 + j] = g.k[j];
        rlx_dtype xt = t % 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8, wt = (t / 2) % 2 ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
        int zmode = t % 7 == 5 || t % 11 == 2 ? 3 : ql ? 1 + (t / 4) % 2 : t % 3;
        bo_desc(c, "depthwise%s: ", legacy ? " legacy" : nodot ? " gpu.dot4=0" : "");
        qconv_case(ctx, c, ql, t, xt, wt, &xsh, &wsh, &g, q->c, zmode, t % 5 != 4);
    }
}

/* ConvInteger (arg NULL) and QLinearConv (arg non-NULL) on the GPU (the
 * integer GEMM of qgemm_body.wgsl gathering x's taps itself, CONV;
 * depthwise: qdwconv.wgsl): x and
 * w uint8/int8 in all four pairings; zero points absent (ConvInteger),
 * scalar, w's per output channel; group 1, 2 or 3, depthwise (with a
 * channel multiplier); kernels 1x1, 3x3, 5x5 and random, strides 1-2,
 * dilations 1-2, asymmetric pads and auto_pad, 1-D and 2-D, odd channel
 * counts, K past 256, pointwise (1x1 stride 1, unpadded: x itself is b); w a
 * constant or an input. QLinearConv: w_scale per
 * tensor or per channel, random, powers of two (sums at exact ties:
 * round half to even) or at ties of the f32 multiplier and product
 * (cases i % 4 == 3 or i % 8 == 6), the int32 bias present or absent, y uint8/int8,
 * outputs that saturate. Bit-exact with the CPU's integer convolution.
 * Every 5th case runs the unpacked products (gpu.dot4=0), every 7th one
 * output per invocation (gpu.qgemm_tile=0), every 7th from the 2nd the
 * workgroup tiles (wg), from the 3rd k split per workgroup (gemv). Then
 * the model shapes (gen_qconv_models), the workgroup tiles
 * (gen_qconv_tiles) and the depthwise kernel (gen_qdwconv). */
static void gen_qconv(bo_ctx *ctx, const void *arg) {
    bool ql = arg != NULL;
    int n = bo_full(ctx) ? 96 : 24;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 10);
        if (!c) continue;
        bool xs_ = i & 1, ws_ = (i >> 1) & 1;
        rlx_dtype xt = xs_ ? RLX_DTYPE_I8 : RLX_DTYPE_U8, wt = ws_ ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        int sr = i % 7 == 6 ? 1 : 2;
        geom g;
        rand_geom(&g, sr, false, true);
        static const int64_t k_sq[] = { 1, 3, 5 };
        if (i % 3 != 2) /* square kernels 1x1, 3x3, 5x5; else random */
            for (int j = 0; j < sr; j++) {
                g.k[j] = k_sq[(i / 3) % 3];
                int64_t ext = (g.k[j] - 1) * g.d[j] + 1;
                g.p[j] = rnd(0, ext - 1), g.p[sr + j] = rnd(0, ext - 1);
                if (g.in[j] < ext) g.in[j] = ext + rnd(0, 3);
            }
        if (i % 4 == 1) g.s[0] = 2, g.s[sr - 1] = 2;
        else if (g.k[0] == 1 && g.k[sr - 1] == 1) /* pointwise: the GEMM reads x itself */
            for (int j = 0; j < sr; j++) g.s[j] = 1;
        int kind = (i / 2) % 4; /* 0 plain, 1 depthwise, 2 grouped, 3 plain K > 256 */
        int64_t nb = rnd(1, 2), grp, cin, cout;
        rand_channels(kind, 2, 7, 7, 9, &grp, &cin, &cout);
        if (kind == 3) cin = 31;
        if (i % 6 == 5) g.auto_pad = i % 12 == 5 ? "SAME_UPPER" : "SAME_LOWER";
        if (i % 10 == 7) g.auto_pad = "VALID";
        bo_shape xsh = { 2 + sr, { nb, cin } }, wsh = { 2 + sr, { cout, cin / grp } };
        for (int j = 0; j < sr; j++) xsh.d[2 + j] = g.in[j], wsh.d[2 + j] = g.k[j];
        int zmode = ql ? 1 + i % 2 : (i / 3) % 3; /* 0 none, 1 scalar, 2 w's per channel */
        bool kw = i % 5 != 3; /* w a constant, else an input */
        if (i % 5 == 2) bo_opt(c, "gpu.dot4=0");
        if (i % 7 == 4) bo_opt(c, "gpu.qgemm_tile=0");
        if (i % 7 == 1) bo_opt(c, "gpu.qgemm_tile=wg");
        if (i % 7 == 2) bo_opt(c, "gpu.qgemm_tile=gemv");
        qconv_case(ctx, c, ql, i, xt, wt, &xsh, &wsh, &g, grp, zmode, kw);
    }
    gen_qconv_models(ctx, ql);
    gen_qconv_tiles(ctx, ql);
    gen_qdwconv(ctx, ql);
}

/* qconv:gen: the integer convolutions on the generated integer GEMM
 * (gemm_gen.c's int8 instance, gpu.qgemm_tile=gen forced) against the CPU
 * bit for bit, then (bo_variant) on the older 64 x 64 workgroup tiles
 * (wg) with the case's bits: pointwise (x itself is b, a GEMM per image),
 * 1x1 stride 2 and 3x3 / 5x5 (the implicit im2col's gathered words),
 * groups, dilation, batch 2, odd channel counts, x / w in the four
 * pairings, zero points absent, scalar and per channel, QLinearConv with
 * and without bias (n % 4 == 0: the 8-bit y in whole words); two with a
 * long k also split into k slices (gpu.gemm_splitk, a variant: the
 * unsplit kernel's bits); two QLinearConv with output planes of 49 and
 * 63 pixels (rows of y that do not fill whole words: the sums go through
 * the scratch and MODE 4 requantizes them word by word). */
typedef struct qgen_conv {
    bool ql;
    int64_t nb, cin, cout, grp, k, s, p, d, h, w;
    bool xs, ws;
    int zmode;
    int split; /* > 0: also a variant with gpu.gemm_splitk=split (the slices' partial sums, MODE 3) */
} qgen_conv;

static const qgen_conv k_qgen_conv[] = {
    { false, 2, 20, 24, 1, 1, 1, 0, 1, 5, 5, false, true, 1, 0 },  /* pointwise */
    { true, 1, 8, 18, 1, 3, 1, 1, 1, 7, 8, false, true, 2, 0 },    /* 3x3 pad 1 */
    { true, 2, 12, 20, 2, 3, 2, 1, 1, 9, 7, true, false, 1, 0 },   /* groups, stride 2 */
    { false, 1, 16, 17, 1, 1, 2, 0, 1, 7, 7, true, true, 0, 0 },   /* 1x1 stride 2 */
    { false, 1, 6, 33, 1, 5, 1, 2, 2, 9, 10, false, false, 2, 0 }, /* 5x5 dilation 2 */
    { true, 1, 32, 40, 1, 1, 1, 0, 1, 6, 6, false, true, 1, 0 },   /* pointwise, requantized */
    { true, 2, 64, 24, 1, 3, 1, 1, 1, 6, 5, false, true, 2, 4 }, /* k 576 in slices, requantized */
    { false, 1, 90, 18, 2, 3, 2, 1, 1, 7, 9, true, true, 1, 7 }, /* k 405 per group in slices, i32 y */
    { true, 1, 48, 40, 1, 1, 1, 0, 1, 7, 7, false, true, 2, 0 },  /* 7 x 7 = 49 columns: the flat reduce (MODE 4) */
    { true, 2, 40, 20, 1, 3, 1, 1, 1, 9, 7, true, true, 1, 3 },   /* 63 columns in k slices, then MODE 4 */
};

static void gen_qgen_conv(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (size_t i = 0; i < BO_LEN(k_qgen_conv); i++) {
        const qgen_conv *q = &k_qgen_conv[i];
        bo_case *c = bo_next(ctx, 10);
        if (!c) continue;
        geom g = { .sr = 2, .auto_pad = NULL };
        for (int j = 0; j < 2; j++) g.k[j] = q->k, g.s[j] = q->s, g.d[j] = q->d, g.p[j] = g.p[2 + j] = q->p;
        g.in[0] = q->h, g.in[1] = q->w;
        bo_shape xsh = { 4, { q->nb, q->cin, q->h, q->w } }, wsh = { 4, { q->cout, q->cin / q->grp, q->k, q->k } };
        c->expect_op = q->ql ? "QLinearConv" : "ConvInteger";
        bo_opt(c, "gpu.qgemm_tile=gen");
        bo_variant(c, "gpu.qgemm_tile=wg");
        char sk[32];
        snprintf(sk, sizeof sk, "gpu.gemm_splitk=%d", q->split);
        if (q->split) bo_variant(c, sk);
        bo_desc(c, "gpu.qgemm_tile=gen%s%s: ", q->split ? ", variant " : "", q->split ? sk : "");
        qconv_case(ctx, c, q->ql, (int)i, q->xs ? RLX_DTYPE_I8 : RLX_DTYPE_U8, q->ws ? RLX_DTYPE_I8 : RLX_DTYPE_U8,
                   &xsh, &wsh, &g, q->grp, q->zmode, i % 2 == 0);
    }
}

/* ------------------------------------------------------------ ConvTranspose */

static void gen_convt(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 80 : 10;
    static const int k_pick[] = { 0, 2, 4, 6 }; /* 2-D, grouped, 1-D, 3-D */
    int n16 = f16_cases(ctx, 4, 16);
    for (int t = 0; t < n + n16; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bool half;
        int i = f16_param(t, n, k_pick, BO_LEN(k_pick), &half);
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int sr = i % 7 == 6 ? 3 : i % 5 == 4 ? 1 : 2;
        geom g;
        rand_geom(&g, sr, false, true);
        int64_t grp = i % 4 == 2 ? rnd(2, 3) : 1, nb = rnd(1, 2);
        int64_t cin = grp * rnd(1, 4), coutg = rnd(1, 4);
        for (int j = 0; j < sr; j++) g.in[j] = rnd(1, 7);
        int64_t op[3] = { 0, 0, 0 };
        if (i % 3 == 1)
            for (int j = 0; j < sr; j++) op[j] = g.s[j] > g.d[j] ? rnd(0, g.s[j] - 1) : rnd(0, g.d[j] > 1 ? g.d[j] - 1 : 0);
        for (int j = 0; j < sr; j++) /* output_padding < stride or dilation */
            if (op[j] >= g.s[j] && op[j] >= g.d[j]) op[j] = 0;
        for (int j = 0; j < sr; j++) { /* pads that leave an output */
            int64_t full = g.s[j] * (g.in[j] - 1) + op[j] + (g.k[j] - 1) * g.d[j] + 1;
            if (g.p[j] + g.p[sr + j] >= full) g.p[j] = g.p[sr + j] = 0;
        }
        bo_shape xs = { 2 + sr, { nb, cin } }, ws = { 2 + sr, { cin, coutg } };
        for (int j = 0; j < sr; j++) xs.d[2 + j] = g.in[j], ws.d[2 + j] = g.k[j];
        int64_t co = coutg * grp;
        bool bias = i % 2;
        rlx_tensor *in[3] = { bo_rand(dt, xs.rank, xs.d, -1, 1), bo_rand(dt, ws.rank, ws.d, -1, 1),
                              bias ? bo_rand(dt, 1, &co, -1, 1) : NULL };
        bool k[3] = { false, true, true };
        char sx[96], sw[96], so[64];
        if (half) bo_desc(c, "f16 ");
        bo_desc(c, "ConvTranspose x%s w%s group=%lld output_padding=%s%s", bo_shape_str(xs.rank, xs.d, sx, 96),
                bo_shape_str(ws.rank, ws.d, sw, 96), (long long)grp, bo_shape_str(sr, op, so, 64), bias ? " bias" : "");
        if (i % 8 == 7) g.auto_pad = "SAME_UPPER";
        geom_desc(c, &g);
        int64_t kk = cin / grp;
        for (int j = 0; j < sr; j++) kk *= g.k[j];
        c->atol *= sqrt((double)kk);
        if (half) f16_tol(c);
        rlx_attr a[7];
        size_t na = 0;
        geom_attrs(&g, a, &na, true, true);
        a[na++] = RLX_ATTR_I("group", grp);
        a[na++] = RLX_ATTR_IS("output_padding", (size_t)sr, op);
        bo_single(c, "ConvTranspose", 3, in, k, 1, na, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ pools */

static void pool_specials(bo_ctx *ctx);

/* Describes (op, dtype, x's shape, `what`, the attributes, the options)
 * and runs pool case c on x: MaxPool (cip < 0, with dilations) or
 * AveragePool with count_include_pad cip. */
static void pool_case(bo_ctx *ctx, bo_case *c, const char *op, rlx_tensor *x, const geom *g, int ceil_mode, int cip,
                      const char *what) {
    char sx[96];
    bo_desc(c, "%s%s x%s%s ceil_mode=%d", op, x->dtype == RLX_DTYPE_F16 ? " f16" : "",
            bo_shape_str(x->rank, x->dims, sx, 96), what, ceil_mode);
    if (cip >= 0) bo_desc(c, " count_include_pad=%d", cip);
    geom_desc(c, g);
    for (int j = 0; j < c->n_opts; j++) bo_desc(c, " %s", c->opts[j]);
    rlx_attr a[7];
    size_t na = 0;
    bool dilated = false;
    for (int j = 0; j < g->sr; j++) dilated |= g->d[j] != 1;
    geom_attrs(g, a, &na, true, cip < 0 || dilated);
    a[na++] = RLX_ATTR_I("ceil_mode", ceil_mode);
    if (cip >= 0) a[na++] = RLX_ATTR_I("count_include_pad", cip);
    bo_single(c, op, 1, &x, NULL, 1, na, a);
    bo_run(ctx, c);
}

/* Pools on edge shapes (the //!audited claims of pool2d.wgsl and
 * pool.wgsl): a single element in 1-D, 2-D and 3-D, a 2-D output row of 6
 * (pool2d's 4 outputs per invocation: the second group half past the row's
 * end), taps past both ends (pads of k - 1, ceil_mode) on 67 planes (a grid
 * not a multiple of 64), a 3-D pool with strides, pads and ceil_mode,
 * windows with no tap inside the input (dilation 3 over a row of 2 with
 * pads of 1): AveragePool's average of no element is 0 on both devices, as
 * onnxruntime gives (the CPU gave NaN), and pads of 2 around a kernel of 2
 * dilated by 2 (extent 3: pads at or above the extent are refused when the
 * model loads, conv_geom.c). */
static void pool_edges(bo_ctx *ctx) {
    static const struct {
        int sr;
        int64_t nc[2], in[3], k[3], s[3], p[6];
        int ceil_mode;
        int64_t d[3]; /* 0: 1 */
    } k_cases[] = {
        { 1, { 1, 1 }, { 1 }, { 1 }, { 1 }, { 0, 0 }, 0, { 0 } },
        { 2, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0, 0, 0 }, 0, { 0 } },
        { 3, { 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, { 0, 0, 0, 0, 0, 0 }, 0, { 0 } },
        { 2, { 1, 2 }, { 3, 7 }, { 2, 2 }, { 1, 1 }, { 0, 0, 0, 0 }, 0, { 0 } },
        { 2, { 1, 67 }, { 5, 9 }, { 3, 3 }, { 2, 2 }, { 2, 2, 2, 2 }, 1, { 0 } },
        { 3, { 2, 3 }, { 5, 9, 11 }, { 2, 3, 3 }, { 2, 2, 3 }, { 1, 0, 1, 0, 1, 2 }, 1, { 0 } },
        { 2, { 1, 1 }, { 2, 2 }, { 1, 2 }, { 1, 1 }, { 0, 1, 0, 1 }, 0, { 1, 3 } },
        { 2, { 1, 1 }, { 2, 2 }, { 1, 2 }, { 1, 1 }, { 0, 1, 0, 1 }, 0, { 1, 3 } },
        { 2, { 2, 3 }, { 4, 5 }, { 2, 2 }, { 1, 1 }, { 2, 2, 2, 2 }, 0, { 2, 2 } },
        { 2, { 2, 3 }, { 4, 5 }, { 2, 2 }, { 1, 1 }, { 2, 2, 2, 2 }, 0, { 2, 2 } },
    };
    const char *op = bo_op_name(ctx);
    bool max = strcmp(op, "MaxPool") == 0;
    for (size_t t = 0; t < BO_LEN(k_cases); t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        geom g = { .sr = k_cases[t].sr };
        bo_shape xs = { 2 + g.sr, { k_cases[t].nc[0], k_cases[t].nc[1] } };
        for (int j = 0; j < g.sr; j++) {
            g.k[j] = k_cases[t].k[j];
            g.s[j] = k_cases[t].s[j];
            g.d[j] = k_cases[t].d[j] ? k_cases[t].d[j] : 1;
            g.in[j] = xs.d[2 + j] = k_cases[t].in[j];
            g.p[j] = k_cases[t].p[j];
            g.p[g.sr + j] = k_cases[t].p[g.sr + j];
        }
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, xs.rank, xs.d, -4, 4);
        pool_case(ctx, c, op, x, &g, k_cases[t].ceil_mode, max ? -1 : (int)(t % 2), " (edge shape)");
    }
}

static void gen_pool(bo_ctx *ctx, const void *arg) {
    bool max = strcmp(bo_op_name(ctx), "MaxPool") == 0;
    int n = bo_full(ctx) ? 120 : 24;
    static const int k_pick[] = { 0, 1, 3, 4, 6, 8 }; /* 2-D, ref kernel, 1-D, 3-D, a long row */
    int n16 = f16_cases(ctx, 3, 12);
    for (int t = 0; t < n + n16; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bool half;
        int i = f16_param(t, n, k_pick, BO_LEN(k_pick), &half);
        int sr = i % 7 == 6 ? 3 : i % 5 == 4 ? 1 : 2;
        geom g;
        rand_geom(&g, sr, i % 9 == 8, max);
        for (int j = 0; j < sr; j++) { /* pads smaller than the kernel */
            int64_t ext = (g.k[j] - 1) * g.d[j] + 1;
            if (g.p[j] >= ext / 2 + 1) g.p[j] = ext / 2;
            if (g.p[sr + j] >= ext / 2 + 1) g.p[sr + j] = ext / 2;
            if (g.p[j] >= g.k[j]) g.p[j] = g.k[j] - 1;
            if (g.p[sr + j] >= g.k[j]) g.p[sr + j] = g.k[j] - 1;
        }
        if (i % 6 == 5) g.auto_pad = "SAME_UPPER";
        int ceil_mode = i % 2, cip = (i / 2) % 2;
        bo_shape xs = { 2 + sr, { rnd(1, 2), rnd(1, 5) } };
        for (int j = 0; j < sr; j++) xs.d[2 + j] = g.in[j];
        rlx_tensor *x = bo_rand(half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, xs.rank, xs.d, -4, 4);
        if (i % 4 == 3) bo_opt(c, "gpu.pool_kernel=ref");
        if (half) f16_tol(c);
        pool_case(ctx, c, bo_op_name(ctx), x, &g, ceil_mode, max ? -1 : cip, "");
    }
    if (max) pool_specials(ctx);
    pool_edges(ctx);
}

/* MaxPool with a few NaNs among random values (and -inf), at chosen
 * places of the windows: a plane's first and last element, a row's first
 * and last, the middle, two side by side, and random ones; planes without
 * NaN beside them (the CPU's fast paths run those; a plane with a NaN runs
 * output by output). Each window holding a NaN must give NaN, wherever the
 * NaN sits in it (bo_nan_windows): the CPU and both GPU kernel families
 * dropped a NaN that was not the window's first tap. */
static void pool_nan_places(bo_ctx *ctx) {
    static const struct {
        int sr;
        int64_t k[3], s[3], d[3], p[6], in[3];
        int ceil_mode;
        bool ref, half;
    } k_cases[] = {
        { 2, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, { 9, 10 }, 0, false, false },
        { 2, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0, 0, 0 }, { 13, 13 }, 1, false, false },
        { 2, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0, 0, 0 }, { 8, 8 }, 0, false, false },
        { 2, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 0, 0, 0 }, { 4, 4 }, 0, false, false },
        { 2, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, { 6, 40 }, 0, true, false },
        { 2, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 2, 0, 1, 1 }, { 8, 11 }, 0, false, false },
        { 1, { 4 }, { 3 }, { 1 }, { 2, 1 }, { 20 }, 1, false, false },
        { 3, { 2, 3, 2 }, { 2, 1, 2 }, { 1, 1, 1 }, { 1, 1, 0, 1, 0, 1 }, { 4, 6, 7 }, 0, false, false },
        { 2, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, { 9, 10 }, 0, false, true },
    };
    for (size_t t = 0; t < BO_LEN(k_cases); t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        geom g = { .sr = k_cases[t].sr };
        int64_t plane = 1;
        for (int j = 0; j < g.sr; j++) {
            g.k[j] = k_cases[t].k[j], g.s[j] = k_cases[t].s[j], g.d[j] = k_cases[t].d[j];
            g.p[j] = k_cases[t].p[j], g.p[g.sr + j] = k_cases[t].p[g.sr + j], g.in[j] = k_cases[t].in[j];
            plane *= g.in[j];
        }
        int64_t w = g.in[g.sr - 1];
        bo_shape xs = { 2 + g.sr, { 1, 6 } };
        for (int j = 0; j < g.sr; j++) xs.d[2 + j] = g.in[j];
        rlx_tensor *x = bo_rand(k_cases[t].half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, xs.rank, xs.d, -4, 4);
        /* plane 0 none; 1: first and last; 2: a row's ends; 3: the middle and
         * two side by side; 4: three at random among -inf; 5: none */
        bo_set(x, (size_t)plane, NAN);
        bo_set(x, (size_t)(2 * plane - 1), NAN);
        bo_set(x, (size_t)(2 * plane + w), NAN);
        bo_set(x, (size_t)(2 * plane + 2 * w - 1), NAN);
        bo_set(x, (size_t)(3 * plane + plane / 2), NAN);
        bo_set(x, (size_t)(3 * plane + plane / 3), NAN);
        bo_set(x, (size_t)(3 * plane + plane / 3 + 1), NAN);
        for (int64_t i = 0; i < plane; i += 3) bo_set(x, (size_t)(4 * plane + i), -INFINITY);
        for (int r = 0; r < 3; r++) bo_set(x, (size_t)(4 * plane) + bo_rand_below((size_t)plane), NAN);
        c->flags |= BO_SAME_VALUE;
        bo_nan_windows(c, g.sr, g.k, g.s, g.d, g.p);
        if (k_cases[t].ref) bo_opt(c, "gpu.pool_kernel=ref");
        pool_case(ctx, c, "MaxPool", x, &g, k_cases[t].ceil_mode, -1, " NaN places");
    }
}

/* MaxPool on special values (bo_specials by plane: NaN first and in the
 * middle of windows, windows of -inf or +inf only, -0 tied with +0, NaN
 * planes), with windows entirely in the padding (dilation 3 over a row of 2:
 * the taps skip the input; pads at or above the kernel extent are refused
 * when the model loads) and past the end (ceil_mode), on both kernel families (pool2d.wgsl and
 * pool.wgsl: 1-D, 2-D, 3-D, gpu.pool_kernel=ref), f32 and f16. The CPU
 * folds a window from its first tap inside the input (cpu_nn_pool.c: NaN
 * propagates, the window's first NaN; of equal values the first stays; no
 * tap inside: the dtype's lowest finite value), compared value for value
 * (BO_SAME_VALUE), and NaN exactly where a window holds one
 * (bo_nan_windows). The full sweep adds random geometries. */
static void pool_specials(bo_ctx *ctx) {
    static const struct {
        int sr;
        int64_t k[3], s[3], d[3], p[6], in[3];
        int ceil_mode;
        bool ref, half;
    } k_cases[] = {
        { 2, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, { 9, 10 }, 0, false, false },
        { 2, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0, 0, 0 }, { 7, 9 }, 1, false, false },
        { 2, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 2, 0, 1, 1 }, { 8, 11 }, 0, false, false },
        { 2, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 2, 2, 2, 2 }, { 2, 2 }, 0, false, false }, /* windows in the padding */
        { 2, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1, 1, 1 }, { 9, 10 }, 1, true, false },
        { 2, { 2, 2 }, { 2, 1 }, { 3, 3 }, { 3, 2, 3, 3 }, { 2, 2 }, 1, true, false },
        { 1, { 4 }, { 3 }, { 1 }, { 2, 3 }, { 20 }, 1, false, false },
        { 3, { 2, 3, 2 }, { 2, 1, 2 }, { 1, 1, 1 }, { 1, 1, 0, 1, 0, 1 }, { 5, 6, 7 }, 0, false, false },
        { 3, { 1, 2, 2 }, { 1, 1, 1 }, { 1, 3, 1 }, { 0, 3, 0, 0, 3, 0 }, { 2, 2, 4 }, 0, false, false },
        { 2, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, { 9, 10 }, 0, false, true },
        { 2, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 2, 2, 2, 2 }, { 2, 2 }, 0, false, true },
        { 3, { 2, 2, 2 }, { 1, 2, 1 }, { 3, 1, 1 }, { 2, 0, 1, 2, 1, 0 }, { 2, 5, 4 }, 1, false, true },
    };
    int n_rand = bo_full(ctx) ? 24 : 0;
    for (int t = 0; t < (int)BO_LEN(k_cases) + n_rand; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        geom g = { 0 };
        int ceil_mode;
        bool ref, half;
        if (t < (int)BO_LEN(k_cases)) {
            g.sr = k_cases[t].sr;
            for (int j = 0; j < g.sr; j++) {
                g.k[j] = k_cases[t].k[j], g.s[j] = k_cases[t].s[j], g.d[j] = k_cases[t].d[j];
                g.p[j] = k_cases[t].p[j], g.p[g.sr + j] = k_cases[t].p[g.sr + j], g.in[j] = k_cases[t].in[j];
            }
            ceil_mode = k_cases[t].ceil_mode, ref = k_cases[t].ref, half = k_cases[t].half;
        } else {
            int i = t - (int)BO_LEN(k_cases);
            rand_geom(&g, i % 7 == 6 ? 3 : i % 5 == 4 ? 1 : 2, false, true);
            for (int j = 0; j < g.sr && i % 3 == 0; j++) { /* the largest pads (extent - 1), a short input */
                g.p[j] = g.p[g.sr + j] = (g.k[j] - 1) * g.d[j];
                g.in[j] = 1 + g.in[j] % 3;
            }
            ceil_mode = i % 2, ref = i % 4 == 3, half = i % 5 == 2;
        }
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        bo_shape xs = { 2 + g.sr, { 1 + t % 2, 8 } };
        int64_t plane = 1;
        for (int j = 0; j < g.sr; j++) xs.d[2 + j] = g.in[j], plane *= g.in[j];
        rlx_tensor *x = bo_rand(dt, xs.rank, xs.d, -4, 4);
        bo_specials(x, (size_t)plane);
        c->flags |= BO_SAME_VALUE;
        bo_nan_windows(c, g.sr, g.k, g.s, g.d, g.p);
        if (ref) bo_opt(c, "gpu.pool_kernel=ref");
        pool_case(ctx, c, "MaxPool", x, &g, ceil_mode, -1, " special values");
    }
    pool_nan_places(ctx);
}

/* GlobalMaxPool on special values (bo_specials by plane), short planes
 * (global_pool.wgsl, one invocation each) and long ones (global_pool_wg.wgsl:
 * a workgroup's 64 strided partials, then a tree; global_pool.wgsl with
 * gpu.pool_kernel=ref), f32 and f16. The CPU folds a plane from its first
 * element (cpu_nn_pool.c): NaN propagates (the plane's first NaN), of
 * equal values the first stays; compared value for value (BO_SAME_VALUE),
 * NaN exactly in the planes that hold one (bo_nan_windows). Chosen
 * positions on long planes: NaN as element 0 of plane 0 (which then holds
 * no other NaN), NaN as the last element of plane 1 (outside invocation
 * 0's share), and in each plane of zeros tied at the maximum (k % 8 == 3)
 * -1 at 0, -0 at 1 and +0 at 64, where the first zero is not in
 * invocation 0's share but a zero of the other sign is. */
static void global_max_specials(bo_ctx *ctx) {
    static const bo_shape k_shapes[] = {
        { 4, { 1, 8, 5, 7 } }, { 3, { 2, 8, 700 } }, { 4, { 1, 16, 20, 20 } }, { 3, { 1, 8, 13 } }, { 3, { 1, 8, 300 } },
    };
    for (size_t t = 0; t < BO_LEN(k_shapes) + 3; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bool half = t >= BO_LEN(k_shapes) && t < BO_LEN(k_shapes) + 2, ref = t == BO_LEN(k_shapes) + 2;
        const bo_shape *xs = &k_shapes[t >= BO_LEN(k_shapes) ? (t - BO_LEN(k_shapes)) * 3 % 6 + 1 : t];
        if (ref) bo_opt(c, "gpu.pool_kernel=ref"); /* long planes on global_pool.wgsl */
        size_t plane = (size_t)(bo_numel(xs) / (xs->d[0] * xs->d[1])), planes = (size_t)(xs->d[0] * xs->d[1]);
        rlx_tensor *x = bo_rand(half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, xs->rank, xs->d, -4, 4);
        bo_specials(x, plane);
        if (plane >= 256) {
            bo_set(x, 0, NAN);
            for (size_t i = 1; i < plane; i++) bo_set(x, i, (double)(i % 5) - 2);
            if (planes > 1) {
                for (size_t i = 0; i < plane; i++) bo_set(x, plane + i, (double)(i % 7) - 3);
                bo_set(x, 2 * plane - 1, NAN);
            }
            for (size_t p = 3; p < planes; p += 8) {
                bo_set(x, p * plane, -1.0);
                bo_set(x, p * plane + 1, -0.0);
                bo_set(x, p * plane + 64, 0.0);
            }
        }
        c->flags |= BO_SAME_VALUE;
        int64_t k[3] = { 1, 1, 1 }, one[3] = { 1, 1, 1 }, zero[3] = { 0, 0, 0 };
        for (int j = 2; j < xs->rank; j++) k[j - 2] = xs->d[j];
        bo_nan_windows(c, xs->rank - 2, k, one, one, zero);
        char sx[96];
        bo_desc(c, "GlobalMaxPool%s x%s special values%s", half ? " f16" : "", bo_shape_str(xs->rank, xs->d, sx, 96),
                ref ? " gpu.pool_kernel=ref" : "");
        bo_single(c, "GlobalMaxPool", 1, &x, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

static void gen_global_pool(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 24 : 6;
    static const int k_pick[] = { 0, 1, 2 }; /* short rows, a row past a workgroup, rank 5 */
    int n16 = f16_cases(ctx, 2, 6);
    for (int t = 0; t < n + n16; t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bool half;
        int i = f16_param(t, n, k_pick, BO_LEN(k_pick), &half);
        int r = 3 + i % 3;
        bo_shape xs = { r, { rnd(1, 2), rnd(1, 9) } };
        for (int j = 2; j < r; j++) xs.d[j] = rnd(1, r == 5 ? 5 : 13);
        if (i % 3 == 1) xs.d[r - 1] = 700; /* a spatial size beyond a workgroup */
        if (bo_full(ctx) && i == 5) xs = (bo_shape){ 4, { 1, 2, 300, 300 } };
        rlx_tensor *x = bo_rand(half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, xs.rank, xs.d, -4, 4);
        char sx[96];
        bo_desc(c, "%s%s x%s", bo_op_name(ctx), half ? " f16" : "", bo_shape_str(xs.rank, xs.d, sx, 96));
        int64_t sp = 1;
        for (int j = 2; j < r; j++) sp *= xs.d[j];
        c->atol *= sqrt((double)sp);
        if (half) f16_tol(c);
        bo_single(c, bo_op_name(ctx), 1, &x, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
    if (strcmp(bo_op_name(ctx), "GlobalMaxPool") == 0) global_max_specials(ctx);
    /* edge shapes: a single element, 67 rows of 5 (one invocation per row:
     * a grid not a multiple of 64), 67 rows of 300 and 3 of 70,001 (a
     * workgroup per row, rows not a multiple of 64 elements) */
    static const bo_shape k_edges[] = { { 3, { 1, 1, 1 } }, { 3, { 67, 1, 5 } }, { 3, { 1, 67, 300 } },
                                        { 3, { 1, 3, 70001 } } };
    for (size_t t = 0; t < BO_LEN(k_edges); t++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        const bo_shape *xs = &k_edges[t];
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, xs->rank, xs->d, -4, 4);
        char sx[96];
        bo_desc(c, "%s x%s (edge shape)", bo_op_name(ctx), bo_shape_str(xs->rank, xs->d, sx, 96));
        c->atol *= sqrt((double)xs->d[2]);
        bo_single(c, bo_op_name(ctx), 1, &x, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ BatchNormalization */

static void gen_bn(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 20 : 5;
    static const int k_pick[] = { 0, 2, 3 };
    int n16 = f16_cases(ctx, 2, 6);
    for (int t = 0; t < n + n16; t++) {
        bo_case *c = bo_next(ctx, 15);
        if (!c) continue;
        bool half;
        int i = f16_param(t, n, k_pick, BO_LEN(k_pick), &half);
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int r = 2 + i % 4;
        bo_shape xs = { r, { rnd(1, 3), rnd(1, 9) } };
        for (int j = 2; j < r; j++) xs.d[j] = rnd(1, 9);
        if (i % 3 == 2) xs.d[r - 1] = 300;
        int64_t ch = xs.d[1];
        rlx_tensor *in[5] = { bo_rand(dt, xs.rank, xs.d, -4, 4), bo_rand(dt, 1, &ch, -2, 2), bo_rand(dt, 1, &ch, -1, 1),
                              bo_rand(dt, 1, &ch, -1, 1), bo_rand(dt, 1, &ch, 0.1, 3) };
        if (half) f16_tol(c);
        bool k[5] = { false, true, true, i % 2 == 0, true };
        char sx[96];
        float eps = i % 2 ? 1e-5f : 1e-3f;
        bo_desc(c, "BatchNormalization%s x%s epsilon=%g", half ? " f16" : "", bo_shape_str(xs.rank, xs.d, sx, 96), eps);
        rlx_attr a = RLX_ATTR_F("epsilon", eps);
        bo_single(c, "BatchNormalization", 5, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Resize */

static void gen_resize(bo_ctx *ctx, const void *arg) {
    static const char *const k_ctm[] = { "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                         "half_pixel_symmetric" };
    static const char *const k_near[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    static const float k_scales[] = { 2.0f, 0.5f, 1.5f, 3.0f, 0.75f, 1.0f, 0.6f, 2.5f };
    int n = bo_full(ctx) ? 160 : 32;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 19);
        if (!c) continue;
        bool linear = i % 2;
        const char *ctm = k_ctm[(i / 2) % BO_LEN(k_ctm)];
        const char *nm = k_near[(i / 3) % BO_LEN(k_near)];
        int r = 2 + (i / 5) % 3;
        bo_shape xs = { r, { 0 } };
        for (int j = 0; j < r; j++) xs.d[j] = j < r - 2 ? rnd(1, 3) : rnd(1, 9);
        if (i % 9 == 8) xs.d[r - 1] = 130;
        bool sizes = i % 4 == 3;
        float sc[4];
        int64_t sz[4];
        for (int j = 0; j < r; j++) {
            sc[j] = j < r - 2 ? 1.0f : k_scales[bo_rand_below(BO_LEN(k_scales))];
            sz[j] = j < r - 2 ? xs.d[j] : rnd(1, 2 * xs.d[j] + 1);
        }
        /* every fourth case (nearest, scales) 8-bit data: the kernel's
         * BYTES form, four elements to a word of y (fuse_qdq_ew moves a
         * QDQ model's DequantizeLinear after such a Resize) */
        bool q8 = i % 4 == 2;
        rlx_dtype qt = i % 8 == 2 ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
        rlx_tensor *x = q8 ? bo_rand_int(qt, xs.rank, xs.d, qt == RLX_DTYPE_U8 ? 0 : -128, qt == RLX_DTYPE_U8 ? 255 : 127)
                           : bo_rand(RLX_DTYPE_F32, xs.rank, xs.d, -4, 4);
        rlx_tensor *in[4] = { x, NULL, sizes ? NULL : bo_tensor(RLX_DTYPE_F32, 1, &(int64_t){ r }, sc),
                              sizes ? bo_i64s(r, sz) : NULL };
        bool k[4] = { false, true, true, true };
        char sx[96], ss[96];
        bo_desc(c, "Resize x%s%s mode=%s ctm=%s", q8 ? rlx_dtype_name(qt) : "", bo_shape_str(xs.rank, xs.d, sx, 96),
                linear ? "linear" : "nearest", ctm);
        if (!linear) bo_desc(c, " nearest_mode=%s", nm);
        if (sizes) bo_desc(c, " sizes=%s", bo_shape_str(r, sz, ss, 96));
        else {
            bo_desc(c, " scales=[");
            for (int j = 0; j < r; j++) bo_desc(c, "%s%g", j ? "," : "", sc[j]);
            bo_desc(c, "]");
        }
        /* linear: the source coordinate is f32 on the GPU, double on the CPU: an error of about one
         * ULP of the input length, times the data's slope (values in [-4, 4)) */
        int64_t maxd = 1;
        for (int j = 0; j < r; j++) maxd = xs.d[j] > maxd ? xs.d[j] : maxd;
        if (linear) c->atol = 8 * 2.4e-7 * (double)maxd;
        rlx_attr a[3] = { RLX_ATTR_S("mode", linear ? "linear" : "nearest"), RLX_ATTR_S("coordinate_transformation_mode", ctm),
                          RLX_ATTR_S("nearest_mode", nm) };
        bo_single(c, "Resize", 4, in, k, 1, linear ? 2 : 3, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ GridSample */

/* Every mode x padding_mode x align_corners on 2-D inputs, nearest and
 * linear on 3-D (and a few 1-D), odd sizes, C > 4, N = 2, grid values in
 * [-1.3, 1.3] ([-3.5, 3.5] every third case: reflection several periods
 * out); every fifth case puts NaN, +-inf and far finite values (1e12: past
 * 2^30 pixels, where both devices reflect by the exact remainder; +inf in
 * f16) into the grid. Nearest copies a pixel: exact. arg: the dtype of X
 * and grid (NULL: f32; the f16 family's row passes f16). */
void bo_gen_gridsample(bo_ctx *ctx, const void *arg) {
    rlx_dtype dt = arg ? *(const rlx_dtype *)arg : RLX_DTYPE_F32;
    static const char *const k_mode[] = { "nearest", "linear", "cubic" };
    static const char *const k_pad[] = { "zeros", "border", "reflection" };
    int n = bo_full(ctx) ? 144 : 36;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 20);
        if (!c) continue;
        int mode = i % 3, pad = (i / 3) % 3, ac = (i / 9) % 2;
        int r = i % 11 == 10 ? 1 : (i / 18) % 2 ? 3 : 2;
        if (mode == 2) r = 2; /* cubic: 2-D only */
        bo_shape xs = { r + 2, { 0 } }, gs = { r + 2, { 0 } };
        xs.d[0] = gs.d[0] = rnd(1, 2);
        xs.d[1] = rnd(1, 7);
        for (int d = 0; d < r; d++) {
            xs.d[2 + d] = rnd(1, r == 3 ? 4 : 7);
            gs.d[1 + d] = rnd(1, r == 3 ? 4 : 6);
        }
        gs.d[r + 1] = r;
        double far = i % 3 == 2 ? 3.5 : 1.3;
        rlx_tensor *x = bo_rand(dt, xs.rank, xs.d, -4, 4);
        rlx_tensor *g = bo_rand(dt, gs.rank, gs.d, -far, far);
        size_t ng = (size_t)bo_numel(&gs);
        if (i % 5 == 4) {
            static const double k_special[] = { NAN, INFINITY, -INFINITY, 1e12, -1e12, 1e6 };
            for (size_t k = 0; k < ng && k < BO_LEN(k_special) * 3; k += 3) bo_set(g, k, k_special[k / 3]);
        }
        char sx[96], sg[96];
        bo_desc(c, "GridSample%s x%s grid%s mode=%s padding_mode=%s align_corners=%d%s",
                dt == RLX_DTYPE_F32 ? "" : dt == RLX_DTYPE_F16 ? " f16" : " ?", bo_shape_str(xs.rank, xs.d, sx, 96),
                bo_shape_str(gs.rank, gs.d, sg, 96), k_mode[mode], k_pad[pad], ac, i % 5 == 4 ? " specials" : "");
        if (mode == 0) c->rtol = c->atol = 0;
        rlx_tensor *in[2] = { x, g };
        rlx_attr a[3] = { RLX_ATTR_S("mode", k_mode[mode]), RLX_ATTR_S("padding_mode", k_pad[pad]),
                          RLX_ATTR_I("align_corners", ac) };
        bo_single(c, "GridSample", 2, in, NULL, 1, 3, a);
        bo_run(ctx, c);
    }
}

#define CONV 1e-5, 2e-6, "sums of K products in another order: relative 1e-5 plus 2e-6 sqrt(K); f16 weights 1e-2"
static const bo_op k_ops[] = {
    { "Conv", gen_conv, NULL, CONV },
    { "ConvTranspose", gen_convt, NULL, CONV },
    { "ConvInteger", gen_qconv, NULL, 0, 0, "i32 sums: exact" },
    { "QLinearConv", gen_qconv, "ql", 0, 0,
      "exact: i32 sums plus the bias, the CPU's f32 requantization reproduced (onnxruntime's; ties to even, saturation)" },
    { "qconv:gen", gen_qgen_conv, NULL, 0, 0,
      "exact: the integer convolutions on the generated integer GEMM (gpu.qgemm_tile=gen); wg: its bits" },
    { "MaxPool", gen_pool, NULL, 0, 0, "selects: exact" },
    { "AveragePool", gen_pool, NULL, 1e-6, 1e-6, "a window sum and one division" },
    { "GlobalMaxPool", gen_global_pool, NULL, 0, 0, "selects: exact" },
    { "GlobalAveragePool", gen_global_pool, NULL, 1e-5, 1e-7, "a tree sum in another order" },
    { "BatchNormalization", gen_bn, NULL, 1e-5, 1e-6, "scale and shift folded differently (a few ULP)" },
    { "Resize", gen_resize, NULL, 1e-5, 1e-6, "nearest exact; linear: f32 source coordinates (an ULP of the input length times the data's slope)" },
    { "GridSample", bo_gen_gridsample, NULL, 1e-5, 2e-5,
      "nearest exact; linear and cubic: the CPU's f32 coordinates, f32 weights and sums of at most 16 taps (the CPU's f64)" },
};

const bo_family bo_family_nn = { "nn", k_ops, BO_LEN(k_ops) };
