/* Cases of the GEMM lowerings (lower_gemm.c): Gemm with transA/transB,
 * alpha, beta and every C that broadcasts to [M, N]; MatMul with rank-1
 * operands and batch dims that broadcast, up to rank 6. Sizes: odd and
 * prime M, N, K, K longer than a workgroup, 1s; every GEMM kernel family
 * (gpu.gemm_kernel), split-K, scalar loads, f16 weights. Tolerance: K
 * products summed in another order (tiles, split-K), so a relative error
 * and an absolute one that grows with sqrt(K); f16 weights add 2^-11 per
 * weight. */
#include <math.h>
#include <string.h>

#include "base/tensor.h"
#include "harness.h"

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1)); }

/* M, N, K of case i: small, odd, prime, or past a workgroup or a tile; K
 * past a workgroup in every 7th case. */
static void pick_mnk(const bo_ctx *ctx, int i, int64_t *M, int64_t *N, int64_t *K) {
    static const int64_t k_sizes[] = { 1, 2, 3, 5, 7, 13, 16, 17, 31, 64, 67, 129, 257 };
    size_t n = bo_full(ctx) ? BO_LEN(k_sizes) : BO_LEN(k_sizes) - 2;
    *M = k_sizes[bo_rand_below(n)];
    *N = k_sizes[bo_rand_below(n)];
    *K = i % 7 == 3 ? 300 + rnd(0, 50) : k_sizes[bo_rand_below(n)];
}

/* GEMM options swept over cases i. */
static void gemm_opts(bo_case *c, int i) {
    static const char *const k_opt[] = { NULL, "gpu.gemm_kernel=tiled", "gpu.gemm_kernel=loop", "gpu.gemm_kernel=ref",
                                         "gpu.gemm_splitk=4", "gpu.gemm_vec4=0", "gpu.gemm_splitk=0", NULL };
    const char *o = k_opt[i % BO_LEN(k_opt)];
    if (o) bo_opt(c, o);
    if (i % 11 == 10) {
        bo_opt(c, "gpu.f16=1");
        c->rtol = 1e-2, c->atol = 1e-2;
    }
}

/* The f16 axis: after the f32 cases, cases with every tensor f16 (the
 * parameters of f32 case pick[t - n], so shapes, transposes, C forms and
 * kernel options are the f32 sweep's; f16 mode, a no-op there, is left
 * out). The GPU sums in f32 and rounds once, the CPU in double: the sqrt(K)
 * term of the order, then at most one f16 ULP (2^-10 relative at a binade's
 * lower end) where the sums round to neighbouring halves, and 1e-4 for
 * f16's subnormal range. */
static int f16_param(const bo_ctx *ctx, int t, int n, bool *half) {
    static const int k_pick[] = { 3, 10, 17, 1, 2, 5, 4, 6, 7, 13 }; /* K > 300, C [N] and [M, N] first */
    *half = t >= n;
    if (!*half) return t;
    return !bo_full(ctx) || t - n < (int)BO_LEN(k_pick) ? k_pick[(t - n) % BO_LEN(k_pick)] : t - n;
}
static int f16_count(const bo_ctx *ctx) { return bo_full(ctx) ? 40 : 6; }
static void f16_tol(bo_case *c) {
    c->rtol += 2e-3;
    c->atol += 1e-4;
}

/* One-row products (M = 1: the GEMV kernel, kernels/gemv.wgsl) in f16 and
 * f32, after the sweeps (their case numbers stay): B contiguous along n
 * (MatMul weights; 16-byte loads when N and the strides are multiples of
 * 8) or along k (Gemm transB; 16-byte loads when K is), element by element
 * otherwise (odd sizes, gpu.gemm_vec4=0), split-K when K is long (its f32
 * partial sums in the scratch, gemm_reduce rounds once), bias forms,
 * alpha/beta, f16 mode. Tolerance: the sweeps' (the order of the K
 * products differs from the CPU's), f16 the f16 sweep's. */
typedef struct gemv_case {
    bool half;
    int64_t K, N;
    int tb, ta; /* Gemm only */
    int cform;  /* Gemm: 0 none, 1 scalar, 2 [N], 5 [1, N]; MatMul: 1 fused bias + Relu */
    bool b_const;
    const char *opt;
} gemv_case;

static const gemv_case k_gemv_gemm[] = {
    { true, 2056, 20, 1, 0, 2, true, NULL },                 /* 16-byte loads along k, split into 3 slices */
    { true, 301, 9, 1, 0, 1, true, NULL },                   /* K not a multiple of 8: element by element */
    { false, 520, 33, 1, 0, 1, true, NULL },                 /* f32 along k */
    { true, 200, 24, 0, 1, 5, true, NULL },                  /* transA (a_sm = 1), B along n */
    { true, 1600, 16, 1, 0, 0, true, "gpu.gemm_splitk=0" },  /* one slice */
    { true, 1032, 264, 0, 0, 2, false, NULL },               /* B at run time, two column blocks, split */
};

static const gemv_case k_gemv_matmul[] = {
    { true, 1001, 264, 0, 0, 0, true, NULL },                /* odd K, 16-byte loads along n, split */
    { true, 77, 13, 0, 0, 0, true, NULL },                   /* odd N: element by element */
    { true, 640, 40, 0, 0, 0, true, "gpu.gemm_vec4=0" },     /* element by element, split */
    { false, 515, 96, 0, 0, 0, true, NULL },                 /* f32 */
    { true, 129, 16, 0, 0, 0, false, NULL },                 /* B at run time */
    { false, 900, 72, 0, 0, 1, true, NULL },                 /* fused bias + Relu (gemm_reduce's epilogue; f32:
                                                                fuse_activation takes f32 only) */
    { false, 96, 24, 0, 0, 1, true, "gpu.gemm_splitk=0" },   /* fused bias + Relu in the kernel */
    { false, 300, 64, 0, 0, 0, true, "gpu.f16=1" },          /* f16 mode: f32 tensors, f16 weights */
    { true, 700, 136, 0, 0, 0, true, "gpu.gemm_splitk=5" },  /* a forced slice count */
};

static void gemv_desc(bo_case *c, const gemv_case *g, const char *op) {
    bo_desc(c, "GEMV %s%s M=1 K=%lld N=%lld", g->half ? "f16 " : "", op, (long long)g->K, (long long)g->N);
    if (g->opt) {
        bo_opt(c, g->opt);
        bo_desc(c, " %s", g->opt);
    }
    c->atol *= sqrt((double)g->K);
    if (g->half) f16_tol(c);
    if (g->opt && strcmp(g->opt, "gpu.f16=1") == 0) c->rtol = 1e-2, c->atol = 1e-2;
}

static void gen_gemv_gemm(bo_ctx *ctx) {
    for (size_t i = 0; i < BO_LEN(k_gemv_gemm); i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const gemv_case *g = &k_gemv_gemm[i];
        rlx_dtype dt = g->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        bo_shape as = { 2, { g->ta ? g->K : 1, g->ta ? 1 : g->K } };
        bo_shape bs = { 2, { g->tb ? g->N : g->K, g->tb ? g->K : g->N } };
        bo_shape cs = g->cform == 2 ? (bo_shape){ 1, { g->N } } : (bo_shape){ 2, { 1, g->N } };
        if (g->cform == 1) cs = (bo_shape){ 0, { 0 } };
        rlx_tensor *in[3] = { bo_rand(dt, as.rank, as.d, -1, 1), bo_rand(dt, bs.rank, bs.d, -1, 1),
                              g->cform ? bo_rand(dt, cs.rank, cs.d, -1, 1) : NULL };
        bool k[3] = { false, g->b_const, true };
        rlx_attr a[4] = { RLX_ATTR_I("transA", g->ta), RLX_ATTR_I("transB", g->tb), RLX_ATTR_F("alpha", 0.5f),
                          RLX_ATTR_F("beta", -2.0f) };
        gemv_desc(c, g, "Gemm");
        bo_desc(c, " transA=%d transB=%d C form %d alpha=0.5 beta=-2%s", g->ta, g->tb, g->cform,
                g->b_const ? "" : " B at run time");
        bo_single(c, "Gemm", 3, in, k, 1, 4, a);
        bo_run(ctx, c);
    }
}

static void gen_gemv_matmul(bo_ctx *ctx) {
    for (size_t i = 0; i < BO_LEN(k_gemv_matmul); i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const gemv_case *g = &k_gemv_matmul[i];
        rlx_dtype dt = g->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t ad[2] = { 1, g->K }, bd[2] = { g->K, g->N }, n = g->N;
        /* a [1, K] where the bias folds (a rank-2 product), else a [K] */
        const char *ins[2] = { bo_input(c, g->cform == 1 ? bo_rand(dt, 2, ad, -1, 1) : bo_rand(dt, 1, ad + 1, -1, 1)), bo_value(c, bo_rand(dt, 2, bd, -1, 1), g->b_const) };
        gemv_desc(c, g, "MatMul");
        const char *y = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        if (g->cform == 1) { /* y + bias -> Relu: one MatMul with a bias input and a fused Relu */
            const char *ab[2] = { y, bo_const(c, bo_rand(dt, 1, &n, -1, 1)) };
            y = bo_node(c, "Add", 2, ab, 1, 0, NULL);
            y = bo_node(c, "Relu", 1, &y, 1, 0, NULL);
            c->fused = "MatMul";
            bo_desc(c, " + bias + Relu (fused)");
        }
        if (!g->b_const) bo_desc(c, " B at run time");
        bo_output(c, y);
        bo_run(ctx, c);
    }
}

/* Batched MatMuls whose GEMM splits k (lower_gemm.c emit_one: the grid of
 * tiles x batch items is small, k long), after the GEMV cases: one to
 * three batch dims, A or B broadcast or both batched (B broadcast with a
 * contiguous A folds the batch into M: no batch dim left), automatic and
 * forced slice
 * counts, a fused bias + Relu applied by gemm_reduce per item, f16 tensors
 * (f32 partial sums); four batch dims (no slot left for the slice: one
 * sum per output even when forced) and a grid already full (no split).
 * The partial sums are [slice][item][M][N] in the scratch and gemm_reduce
 * writes each item at y's batch strides: a wrong stride or a lost slice
 * leaves poisoned (NaN) or wrong outputs. Tolerance: the sweeps'. */
typedef struct splitk_mm {
    int ra, rb;
    int64_t a[6], b[6];
    bool bias, half;
    const char *opt;
} splitk_mm;

static const splitk_mm k_splitk_mm[] = {
    { 2, 3, { 64, 300 }, { 8, 300, 40 }, false, false, NULL },                       /* A broadcast, 4 slices */
    { 4, 4, { 2, 3, 33, 520 }, { 2, 3, 520, 17 }, false, false, "gpu.gemm_splitk=4" }, /* both batched, odd sizes */
    { 5, 5, { 2, 3, 2, 20, 300 }, { 2, 3, 2, 300, 36 }, false, false, NULL },        /* three batch dims */
    { 4, 3, { 3, 1, 24, 257 }, { 5, 257, 8 }, false, false, "gpu.gemm_splitk=3" },   /* broadcast both ways */
    { 3, 3, { 4, 50, 384 }, { 4, 384, 64 }, true, false, NULL },                     /* + bias + Relu in gemm_reduce */
    { 3, 3, { 3, 40, 512 }, { 3, 512, 24 }, false, true, NULL },                     /* f16, f32 partial sums */
    { 6, 6, { 2, 1, 2, 2, 20, 300 }, { 1, 2, 1, 2, 300, 24 }, false, false, "gpu.gemm_splitk=4" }, /* four batch dims */
    { 3, 3, { 160, 64, 256 }, { 160, 256, 64 }, false, false, NULL },                /* 160 tiles: no split */
    /* k >= 768 and >= 128 rows: 128 x 64 tiles (lower_gemm.c), whose grid
     * with its slices reaches 1.5 x gpu.gemm_target_wg */
    { 2, 2, { 128, 768 }, { 768, 1024 }, true, false, NULL },                        /* 16 tiles x 24 slices */
    { 3, 3, { 2, 136, 800 }, { 2, 800, 200 }, false, false, NULL },                 /* partial tiles both ways */
    { 2, 2, { 130, 768 }, { 768, 520 }, false, true, NULL },                         /* f16 */
};

static void gen_splitk_matmul(bo_ctx *ctx) {
    for (size_t i = 0; i < BO_LEN(k_splitk_mm); i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const splitk_mm *q = &k_splitk_mm[i];
        rlx_dtype dt = q->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t n = q->b[q->rb - 1], K = q->a[q->ra - 1];
        const char *ins[2] = { bo_input(c, bo_rand(dt, q->ra, q->a, -1, 1)), bo_const(c, bo_rand(dt, q->rb, q->b, -1, 1)) };
        char sa[96], sb[96];
        bo_desc(c, "MatMul%s A%s B%s batched split-K", q->half ? " f16" : "", bo_shape_str(q->ra, q->a, sa, 96),
                bo_shape_str(q->rb, q->b, sb, 96));
        const char *y = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        if (q->bias) { /* y + bias -> Relu: one MatMul with a bias input and a fused Relu */
            const char *ab[2] = { y, bo_const(c, bo_rand(dt, 1, &n, -1, 1)) };
            y = bo_node(c, "Add", 2, ab, 1, 0, NULL);
            y = bo_node(c, "Relu", 1, &y, 1, 0, NULL);
            c->fused = "MatMul";
            bo_desc(c, " + bias + Relu (fused)");
        }
        bo_output(c, y);
        if (q->opt) {
            bo_opt(c, q->opt);
            bo_desc(c, " %s", q->opt);
        }
        c->atol *= sqrt((double)K);
        if (q->half) f16_tol(c);
        bo_run(ctx, c);
    }
}

static void gen_gemm(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 200 : 16;
    for (int t = 0; t < n + f16_count(ctx); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        bool half;
        int i = f16_param(ctx, t, n, &half);
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t M, N, K;
        pick_mnk(ctx, i, &M, &N, &K);
        int ta = i % 2, tb = (i / 2) % 2;
        bo_shape as = { 2, { ta ? K : M, ta ? M : K } }, bs = { 2, { tb ? N : K, tb ? K : N } };
        int cform = (i / 4) % 6; /* 0 none, 1 scalar, 2 [N], 3 [M,1], 4 [M,N], 5 [1,N] */
        bo_shape cs = { 0, { 0 } };
        if (cform == 2) cs = (bo_shape){ 1, { N } };
        if (cform == 3) cs = (bo_shape){ 2, { M, 1 } };
        if (cform == 4) cs = (bo_shape){ 2, { M, N } };
        if (cform == 5) cs = (bo_shape){ 2, { 1, N } };
        float alpha = i % 3 == 1 ? 0.5f : 1.0f, beta = i % 5 == 2 ? -2.0f : 1.0f;
        rlx_tensor *in[3] = { bo_rand(dt, as.rank, as.d, -1, 1), bo_rand(dt, bs.rank, bs.d, -1, 1),
                              cform ? bo_rand(dt, cs.rank, cs.d, -1, 1) : NULL };
        bool k[3] = { false, i % 4 != 3, i % 2 == 0 };
        gemm_opts(c, half ? i % 10 : i);
        if (half) bo_desc(c, "f16 ");
        char sa[64], sb[64], sc[64];
        bo_desc(c, "Gemm A%s B%s C%s transA=%d transB=%d alpha=%g beta=%g%s", bo_shape_str(as.rank, as.d, sa, 64),
                bo_shape_str(bs.rank, bs.d, sb, 64), cform ? bo_shape_str(cs.rank, cs.d, sc, 64) : "(none)", ta, tb, alpha,
                beta, k[1] ? "" : " B at run time");
        for (int j = 0; j < c->n_opts; j++) bo_desc(c, " %s", c->opts[j]);
        c->atol *= sqrt((double)K);
        if (half) f16_tol(c);
        rlx_attr a[4] = { RLX_ATTR_I("transA", ta), RLX_ATTR_I("transB", tb), RLX_ATTR_F("alpha", alpha),
                          RLX_ATTR_F("beta", beta) };
        bo_single(c, "Gemm", 3, in, k, 1, 4, a);
        bo_run(ctx, c);
    }
    gen_gemv_gemm(ctx);
}

static void gen_matmul(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 200 : 16;
    for (int t = 0; t < n + f16_count(ctx); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        bool half;
        int i = f16_param(ctx, t, n, &half);
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t M, N, K;
        pick_mnk(ctx, i, &M, &N, &K);
        /* batch dims that broadcast: rank of each operand 1..6 */
        int ra = 1 + (int)bo_rand_below(i % 3 == 0 ? 2 : 6), rb = 1 + (int)bo_rand_below(i % 3 == 0 ? 2 : 6);
        bo_shape out, bat[2];
        int nb = (ra > rb ? ra : rb) - 2;
        if (nb < 0) nb = 0;
        bo_broadcast(nb, 2, &out, bat);
        bo_shape as = { ra, { 0 } }, bs = { rb, { 0 } };
        /* a's batch dims: the last ra-2 of bat[0] padded with the result's; likewise b */
        for (int j = 0; j < ra - 2; j++) as.d[j] = bo_rand_below(2) ? out.d[nb - (ra - 2) + j] : 1;
        for (int j = 0; j < rb - 2; j++) bs.d[j] = bo_rand_below(2) ? out.d[nb - (rb - 2) + j] : 1;
        if (ra == 1) as.d[0] = K;
        else as.d[ra - 2] = M, as.d[ra - 1] = K;
        if (rb == 1) bs.d[0] = K;
        else bs.d[rb - 2] = K, bs.d[rb - 1] = N;
        rlx_tensor *in[2] = { bo_rand(dt, as.rank, as.d, -1, 1), bo_rand(dt, bs.rank, bs.d, -1, 1) };
        bool k[2] = { false, i % 3 != 2 };
        gemm_opts(c, half ? i % 10 : i);
        if (half) bo_desc(c, "f16 ");
        char sa[96], sb[96];
        bo_desc(c, "MatMul A%s B%s%s", bo_shape_str(as.rank, as.d, sa, 96), bo_shape_str(bs.rank, bs.d, sb, 96),
                k[1] ? " (B constant)" : "");
        for (int j = 0; j < c->n_opts; j++) bo_desc(c, " %s", c->opts[j]);
        c->atol *= sqrt((double)K);
        if (half) f16_tol(c);
        bo_single(c, "MatMul", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
    bo_case *c;
    /* f16 tensors split into blocks by a small binding limit: each batch
     * item its own dispatch, at odd element offsets (21 j halves of A,
     * 35 j of B, 15 j of y), so windows start inside a 4-byte word */
    c = bo_next(ctx, 13);
    if (c) {
        int64_t ad[3] = { 6, 3, 7 }, bd[3] = { 6, 7, 5 };
        rlx_tensor *in[2] = { bo_rand(RLX_DTYPE_F16, 3, ad, -1, 1), bo_rand(RLX_DTYPE_F16, 3, bd, -1, 1) };
        bo_opt(c, "gpu.max_binding_bytes=512");
        f16_tol(c);
        bo_desc(c, "f16 MatMul A[6,3,7] B[6,7,5] gpu.max_binding_bytes=512 (blocks at odd element offsets)");
        bo_single(c, "MatMul", 2, in, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
    /* f16 weights beyond the f16 range: such a weight stays f32 (main, helper gpusafe) */
    c = bo_next(ctx, 13);
    if (c) {
        int64_t ad[2] = { 4, 8 }, bd[2] = { 8, 5 };
        rlx_tensor *b = bo_rand(RLX_DTYPE_F32, 2, bd, -1, 1);
        ((float *)b->data)[3] = 2e5f;
        rlx_tensor *in[2] = { bo_rand(RLX_DTYPE_F32, 2, ad, -1, 1), b };
        bool k[2] = { false, true };
        bo_opt(c, "gpu.f16=1");
        c->rtol = 1e-2, c->atol = 1e-1;
        bo_desc(c, "MatMul A[4,8] B[8,5] with a weight of 2e5 (beyond f16) gpu.f16=1");
        bo_single(c, "MatMul", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
    gen_gemv_matmul(ctx);
    gen_splitk_matmul(ctx);
}

/* ------------------------------------------------------------ kernel variants */

/* gemm:variants: the generated tiled GEMM's variants (gpu.gemm_pipeline,
 * gpu.gemm_conv_geometry; gemm_gen.c) give the default kernel's bits: each
 * case runs on the GPU as usual (against the CPU oracle with GEMM's
 * tolerance), then once per variant (bo_variant), whose outputs must
 * equal that run's bit for bit. MatMul and Gemm: partial tiles, scalar
 * and vec4 loads, transposes, batch dims that broadcast, split-K with the
 * fused bias + Relu in gemm_reduce, f16 tensors, f16 weights (gpu.f16),
 * 128 x 128 tiles (two copies: 32 KiB), the k loop not unrolled, f16 sums
 * (gpu.f16_accumulate=f16, a block inside a tile and one across tiles),
 * 128 x 64 tiles,
 * a 16-row product (its tile, split-K). Conv on the implicit GEMM: batch,
 * pads, strides, dilations, groups, fused bias + Relu and residual + Relu,
 * split-K, f16 tensors and f16 weights, 1-D, a kernel taller than 16 (its
 * size from Params), a tile whose invocations hold pixels of two columns
 * classes (gemm_gen.c pixel_class). */
static const char *const k_pipe_variants[] = {
    "gpu.gemm_pipeline=prefetch", "gpu.gemm_pipeline=double",
    "gpu.gemm_conv_geometry=hoist", "gpu.gemm_conv_geometry=constants",
    "gpu.gemm_pipeline=double gpu.gemm_conv_geometry=constants",
    "gpu.gemm_pipeline=prefetch gpu.gemm_conv_geometry=hoist",
};

typedef struct var_mm {
    const char *op;          /* MatMul or Gemm (transA, transB, C [N], alpha 0.5, beta -2) */
    bool half;               /* every tensor f16 */
    int64_t batch;           /* MatMul: > 0: A [batch, 3, M, K] x B [3, K, N] */
    int64_t M, K, N;
    int epi;                 /* MatMul: 1 bias + Relu (fused) */
    const char *opt;
    int64_t block;           /* gpu.f16_accumulate=f16 with this block (0: f32 sums) */
} var_mm;

static const var_mm k_var_mm[] = {
    { "MatMul", false, 0, 37, 67, 45, 0, NULL, 0 },                 /* scalar loads, partial tiles */
    { "MatMul", false, 0, 64, 96, 128, 0, NULL, 0 },                /* vec4 loads, 6 k tiles */
    { "MatMul", false, 2, 20, 40, 36, 0, NULL, 0 },                 /* batch dims: [2,3,..] x [3,..] */
    { "MatMul", false, 0, 24, 300, 40, 1, "gpu.gemm_splitk=3", 0 }, /* split-K + bias + Relu */
    { "Gemm", false, 0, 33, 50, 29, 0, NULL, 0 },                   /* transposes, C [N] */
    { "MatMul", true, 0, 40, 72, 36, 0, NULL, 0 },                  /* f16 tensors */
    { "MatMul", false, 0, 20, 48, 52, 0, "gpu.f16=1", 0 },          /* f16 weights */
    { "MatMul", false, 0, 130, 40, 140, 0, "gpu.gemm_tile=8x8,16x16,16", 0 },
    { "MatMul", false, 0, 70, 50, 70, 0, "gpu.gemm_tile=8x4,16x16,16", 0 }, /* 128 x 64 tiles */
    { "MatMul", false, 0, 70, 100, 66, 0, "gpu.gemm_unroll_k=0", 0 },
    { "MatMul", true, 0, 40, 200, 24, 0, NULL, 8 },                 /* f16 sums, block 8 */
    { "MatMul", true, 0, 8, 100, 40, 0, "gpu.gemm_splitk=0", 32 },  /* block of two tiles */
    { "MatMul", false, 0, 16, 260, 70, 0, NULL, 0 },                /* 16 rows: split-K */
};

typedef struct var_conv {
    bool half;
    int64_t x[4], w[4];      /* 1-D when x[3] == 0 */
    int64_t group, s[2], d[2], pads[4];
    int epi;                 /* 0 none, 1 bias + Relu (fused), 2 bias + residual + Relu (fused) */
    const char *opt;
} var_conv;

static const var_conv k_var_conv[] = {
    { false, { 2, 5, 9, 11 }, { 8, 5, 3, 3 }, 1, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, 1, NULL },
    { false, { 1, 6, 13, 10 }, { 8, 3, 3, 3 }, 2, { 2, 2 }, { 2, 2 }, { 1, 0, 2, 1 }, 0, NULL },
    { false, { 1, 4, 11, 7 }, { 6, 4, 5, 2 }, 1, { 2, 1 }, { 1, 1 }, { 2, 0, 1, 1 }, 2, NULL },
    { false, { 2, 40, 7, 7 }, { 36, 40, 3, 3 }, 1, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, 1, "gpu.gemm_splitk=3" },
    { true, { 2, 8, 9, 9 }, { 12, 8, 3, 3 }, 1, { 2, 2 }, { 1, 1 }, { 1, 1, 1, 1 }, 0, NULL },
    { false, { 2, 6, 30, 0 }, { 8, 6, 3, 0 }, 1, { 2, 0 }, { 2, 0 }, { 1, 1, 0, 0 }, 0, NULL },
    { false, { 1, 4, 20, 6 }, { 4, 4, 17, 1 }, 1, { 1, 1 }, { 1, 1 }, { 8, 0, 8, 0 }, 0, NULL },
    { false, { 1, 3, 15, 15 }, { 8, 3, 3, 3 }, 1, { 1, 1 }, { 1, 1 }, { 0, 0, 0, 0 }, 0, "gpu.f16=1" },
    { false, { 1, 5, 10, 30 }, { 16, 5, 3, 3 }, 1, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, 0, "gpu.gemm_tile=4x8,16x4,16" },
};

static void variants_all(bo_case *c, bool conv) {
    for (size_t v = 0; v < BO_LEN(k_pipe_variants); v++)
        if (conv || !strstr(k_pipe_variants[v], "conv_geometry")) bo_variant(c, k_pipe_variants[v]);
}

static void gen_variant_mm(bo_ctx *ctx, const var_mm *g) {
    bo_case *c = bo_next(ctx, 13);
    if (!c) return;
    rlx_dtype dt = g->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
    const char *y;
    char sa[64], sb[64];
    if (strcmp(g->op, "Gemm") == 0) {
        int64_t ad[2] = { g->K, g->M }, bd[2] = { g->N, g->K }, cd[1] = { g->N };
        rlx_tensor *in[3] = { bo_rand(dt, 2, ad, -1, 1), bo_rand(dt, 2, bd, -1, 1), bo_rand(dt, 1, cd, -1, 1) };
        bool k[3] = { false, true, true };
        rlx_attr a[4] = { RLX_ATTR_I("transA", 1), RLX_ATTR_I("transB", 1), RLX_ATTR_F("alpha", 0.5f),
                          RLX_ATTR_F("beta", -2.0f) };
        bo_desc(c, "Gemm A%s B%s C[%lld] transA=1 transB=1 alpha=0.5 beta=-2", bo_shape_str(2, ad, sa, 64),
                bo_shape_str(2, bd, sb, 64), (long long)g->N);
        bo_single(c, "Gemm", 3, in, k, 1, 4, a);
        c->expect_op = "Gemm";
    } else {
        /* batched: A [batch, 3, M, K] x B [3, K, N] (B an input), else A [M, K] x B [K, N] (B constant) */
        int64_t ad[4] = { g->batch, 3, g->M, g->K }, bd[3] = { 3, g->K, g->N };
        bool bat = g->batch > 0;
        int ra = bat ? 4 : 2, rb = bat ? 3 : 2;
        const int64_t *pa = bat ? ad : ad + 2, *pb = bat ? bd : bd + 1;
        const char *ins[2] = { bo_input(c, bo_rand(dt, ra, pa, -1, 1)), bo_value(c, bo_rand(dt, rb, pb, -1, 1), !bat) };
        y = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        bo_desc(c, "%sMatMul A%s B%s", g->half ? "f16 " : "", bo_shape_str(ra, pa, sa, 64), bo_shape_str(rb, pb, sb, 64));
        if (g->epi == 1) {
            int64_t n = g->N;
            const char *ab[2] = { y, bo_const(c, bo_rand(dt, 1, &n, -1, 1)) };
            y = bo_node(c, "Add", 2, ab, 1, 0, NULL);
            y = bo_node(c, "Relu", 1, &y, 1, 0, NULL);
            c->fused = "MatMul";
            bo_desc(c, " + bias + Relu (fused)");
        } else {
            c->expect_op = "MatMul";
        }
        bo_output(c, y);
    }
    if (g->opt) bo_opt(c, g->opt), bo_desc(c, " %s", g->opt);
    c->atol *= sqrt((double)g->K);
    if (g->half) c->rtol += 2e-3, c->atol += 1e-4;
    if (g->opt && strcmp(g->opt, "gpu.f16=1") == 0) c->rtol = 1e-2, c->atol = 1e-2;
    if (g->block) { /* gemm:f16_sums' tolerance */
        bo_opt(c, "gpu.f16_accumulate=f16");
        bo_opt(c, g->block == 8 ? "gpu.f16_block=8" : "gpu.f16_block=32");
        bo_desc(c, " gpu.f16_accumulate=f16 block %lld", (long long)g->block);
        c->rtol = 1e-3;
        c->atol = ldexp(1.0, -11) / 3.0 * sqrt(6.0 * (double)g->K * (double)g->block) + 1e-4;
    }
    variants_all(c, false);
    bo_run(ctx, c);
}

static void gen_variant_conv(bo_ctx *ctx, const var_conv *g) {
    bo_case *c = bo_next(ctx, 13);
    if (!c) return;
    rlx_dtype dt = g->half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
    bool one_d = g->x[3] == 0;
    int r = one_d ? 3 : 4, sp = one_d ? 1 : 2;
    int64_t co = g->w[0];
    const char *ins[3] = { bo_input(c, bo_rand(dt, r, g->x, -2, 2)), bo_const(c, bo_rand(dt, r, g->w, -0.5, 0.5)),
                           g->epi ? bo_const(c, bo_rand(dt, 1, &co, -0.5, 0.5)) : "" };
    int64_t pads[4] = { g->pads[0], g->pads[1], g->pads[2], g->pads[3] }; /* 1-D: [begin, end] */
    rlx_attr a[4] = { RLX_ATTR_IS("strides", sp, g->s), RLX_ATTR_IS("dilations", sp, g->d),
                      RLX_ATTR_IS("pads", 2 * sp, pads), RLX_ATTR_I("group", g->group) };
    const char *y = bo_node(c, "Conv", g->epi ? 3 : 2, ins, 1, 4, a);
    char sx[64], sw[64];
    char ss[32], sd[32], spd[48];
    bo_desc(c, "%sConv x%s w%s group=%lld strides=%s dilations=%s pads=%s", g->half ? "f16 " : "",
            bo_shape_str(r, g->x, sx, 64), bo_shape_str(r, g->w, sw, 64), (long long)g->group,
            bo_shape_str(sp, g->s, ss, 32), bo_shape_str(sp, g->d, sd, 32), bo_shape_str(2 * sp, pads, spd, 48));
    if (g->epi == 2) { /* + residual (a graph input of y's shape) */
        int64_t oh = (g->x[2] + g->pads[0] + g->pads[2] - g->d[0] * (g->w[2] - 1) - 1) / g->s[0] + 1;
        int64_t ow = (g->x[3] + g->pads[1] + g->pads[3] - g->d[1] * (g->w[3] - 1) - 1) / g->s[1] + 1;
        int64_t rd[4] = { g->x[0], co, oh, ow };
        const char *ab[2] = { y, bo_input(c, bo_rand(dt, 4, rd, -1, 1)) };
        y = bo_node(c, "Add", 2, ab, 1, 0, NULL);
        bo_desc(c, " + residual");
    }
    if (g->epi) {
        y = bo_node(c, "Relu", 1, &y, 1, 0, NULL);
        c->fused = "Conv";
        bo_desc(c, " + bias + Relu (fused)");
    } else {
        c->expect_op = "Conv";
    }
    bo_output(c, y);
    bo_opt(c, "gpu.conv_algo=implicit");
    if (g->opt) bo_opt(c, g->opt), bo_desc(c, " %s", g->opt);
    c->atol *= sqrt((double)(g->w[1] * g->w[2] * (one_d ? 1 : g->w[3])));
    if (g->half) c->rtol += 2e-3, c->atol += 1e-4;
    if (g->opt && strcmp(g->opt, "gpu.f16=1") == 0) c->rtol = 1e-2, c->atol = 1e-2;
    variants_all(c, true);
    bo_run(ctx, c);
}

static void gen_variants(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (size_t i = 0; i < BO_LEN(k_var_mm); i++) gen_variant_mm(ctx, &k_var_mm[i]);
    for (size_t i = 0; i < BO_LEN(k_var_conv); i++) gen_variant_conv(ctx, &k_var_conv[i]);
}

/* ------------------------------------------------------------ integer GEMM */

/* MatMulInteger (arg NULL) and QLinearMatMul (kernels/qgemm_body.wgsl):
 * int8 and uint8 operands in all four pairings; odd M, N, K, K not a
 * multiple of 4 and K past 300; zero points absent, scalar, per row of a
 * ([M]) and per column of b ([N]), constant or graph inputs; rank-1
 * operands and batch dims that broadcast; b a constant or an input.
 * QLinearMatMul: scales per tensor, per row and per column, random,
 * powers of two (sums at exact ties: round half to even) or at ties of
 * the f32 multiplier and product (cases i % 4 == 3 or i % 8 == 6), outputs that
 * saturate at both ends. Bit-exact with the CPU's integer kernel. Every
 * 5th case runs the unpacked products (gpu.dot4=0); the kernel variant
 * (gpu.qgemm_tile) cycles through auto, wg (workgroup tiles), gemv (k split
 * per workgroup), reg and 0 every 5 cases (against the forms), and every
 * 4th case has an M of 1, 2, 3 or 5 or past the 64 x 64 tile. */
static void qmatmul_rounding(bo_ctx *ctx, bo_case *c);
static void qmatmul_edges(bo_ctx *ctx, bool ql);
static void qmatmul_tiles(bo_ctx *ctx, bool ql);

static void gen_qmatmul(bo_ctx *ctx, const void *arg) {
    bool ql = arg != NULL;
    static const int64_t sizes[] = { 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 67 };
    int n_cases = bo_full(ctx) ? 64 : 24;
    for (int i = 0; i < n_cases; i++) {
        bo_case *c = bo_next(ctx, ql ? 21 : 10);
        if (!c) continue;
        int64_t M = sizes[bo_rand_below(BO_LEN(sizes))], N = sizes[bo_rand_below(BO_LEN(sizes))];
        int64_t K = i % 6 == 5 ? 300 + rnd(0, 40) : sizes[bo_rand_below(BO_LEN(sizes))];
        static const int64_t m_pick[] = { 1, 2, 3, 5, 70 };
        if (i % 4 == 3) M = m_pick[(i / 4) % BO_LEN(m_pick)], N = M == 70 ? 65 + 4 * rnd(0, 1) : N;
        bool as = i & 1, bs = (i >> 1) & 1;
        rlx_dtype at = as ? RLX_DTYPE_I8 : RLX_DTYPE_U8, bt = bs ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        int form = i % 5; /* 0: 2-D; 1: batch [2] x 2-D; 2: [3,1] x [2] broadcast; 3: rank-1 a; 4: [2] x [2], rank-1 b */
        bo_shape sa = { 2, { M, K } }, sb = { 2, { K, N } };
        if (form == 1) sa = (bo_shape){ 3, { 2, M, K } };
        if (form == 2) sa = (bo_shape){ 4, { 3, 1, M, K } }, sb = (bo_shape){ 3, { 2, K, N } };
        if (form == 3) sa = (bo_shape){ 1, { K } }, M = 1;
        if (form == 4 && i % 3 == 0) sa = (bo_shape){ 3, { 2, M, K } }, sb = (bo_shape){ 1, { K } }, N = 1;
        else if (form == 4) sa = (bo_shape){ 3, { 2, M, K } }, sb = (bo_shape){ 3, { 2, K, N } };
        int zmode = (i / 2) % 3; /* 0 none (MatMulInteger) / 0 (QLinearMatMul), 1 scalar, 2 per row / column */
        bool vec = zmode == 2 && sa.rank >= 2 && sb.rank >= 2;
        bool kb = i % 4 == 0, kz = i % 3 != 1;
        rlx_tensor *a = bo_rand_int(at, sa.rank, sa.d, as ? -128 : 0, as ? 127 : 255);
        rlx_tensor *b = bo_rand_int(bt, sb.rank, sb.d, bs ? -128 : 0, bs ? 127 : 255);
        rlx_tensor *za = NULL, *zb = NULL;
        if (zmode || ql) {
            za = vec ? bo_rand_int(at, 1, &M, as ? -128 : 0, as ? 127 : 255)
                     : bo_scalar(at, zmode ? (as ? -5.0 + (double)rnd(0, 10) : (double)rnd(100, 150)) : 0);
            zb = vec ? bo_rand_int(bt, 1, &N, bs ? -128 : 0, bs ? 127 : 255)
                     : bo_scalar(bt, zmode ? (bs ? -5.0 + (double)rnd(0, 10) : (double)rnd(100, 150)) : 0);
        }
        if (i % 5 == 2) bo_opt(c, "gpu.dot4=0");
        static const char *const variant[] = { NULL, "gpu.qgemm_tile=wg", "gpu.qgemm_tile=gemv", "gpu.qgemm_tile=reg",
                                                "gpu.qgemm_tile=0" };
        if (variant[(i / 5) % 5]) bo_opt(c, variant[(i / 5) % 5]);
        char s1[64], s2[64];
        bo_desc(c, "%s %s%s x %s%s zp %s%s%s", ql ? "QLinearMatMul" : "MatMulInteger", rlx_dtype_name(at),
                bo_shape_str(sa.rank, sa.d, s1, sizeof s1), rlx_dtype_name(bt), bo_shape_str(sb.rank, sb.d, s2, sizeof s2),
                zmode == 0 && !ql ? "none" : zmode == 0 ? "0" : vec ? "per row/column" : "scalar", kb ? " b constant" : "",
                (zmode || ql) && kz ? " zp constant" : "");
        if (!ql) {
            rlx_tensor *in[4] = { a, b, za, zb };
            bool k[4] = { false, kb, kz, kz };
            bo_single(c, "MatMulInteger", za ? 4 : 2, in, k, 1, 0, NULL);
            bo_run(ctx, c);
            continue;
        }
        /* scales: |acc| is about sqrt(K) * 74^2 for random levels; y spreads over about +-200 levels */
        bool pow2 = i % 4 == 1;
        double spread = pow2 ? 1 : 150.0 / (sqrt((double)K) * 5500.0 + 1);
        bool rows = i % 7 == 3 && sa.rank >= 2, cols = i % 3 == 2 && sb.rank >= 2;
        rlx_tensor *sc_a = rows ? bo_rand(RLX_DTYPE_F32, 1, &M, 0.5, 2) : bo_scalar(RLX_DTYPE_F32, pow2 ? 0.5 : bo_uniform(0.5, 2));
        rlx_tensor *sc_b = cols ? bo_rand(RLX_DTYPE_F32, 1, &N, 0.5, 2) : bo_scalar(RLX_DTYPE_F32, pow2 ? 0.25 : bo_uniform(0.5, 2));
        rlx_tensor *sc_y = bo_scalar(RLX_DTYPE_F32, pow2 ? ldexp(1.0, (int)K > 64 ? 4 : 1) : 1.0 / spread);
        rlx_dtype yt = i % 3 == 0 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        rlx_tensor *zy = bo_scalar(yt, yt == RLX_DTYPE_I8 ? (double)rnd(-20, 20) : (double)rnd(100, 150));
        bool tie = i % 4 == 3 || i % 8 == 6;
        if (tie) { /* ties (as gen_qconv's): a - za in [-3, 3], b - zb = +-50, the multiplier (0.05 * 0.02) /
                    * 0.1; odd sums / 50 land near half levels, where the f32 rounding decides */
            int64_t zav = as ? 0 : 3, zbv = bs ? 0 : 100;
            for (size_t e = 0; e < rlx_tensor_numel(za); e++) rlx_tensor_set_i64(za, e, zav);
            for (size_t e = 0; e < rlx_tensor_numel(zb); e++) rlx_tensor_set_i64(zb, e, zbv);
            for (size_t e = 0; e < rlx_tensor_numel(a); e++) rlx_tensor_set_i64(a, e, zav + rnd(-3, 3));
            for (size_t e = 0; e < rlx_tensor_numel(b); e++) rlx_tensor_set_i64(b, e, zbv + (rnd(0, 1) ? 50 : -50));
            for (size_t e = 0; e < rlx_tensor_numel(sc_a); e++) ((float *)sc_a->data)[e] = 0.05f;
            for (size_t e = 0; e < rlx_tensor_numel(sc_b); e++) ((float *)sc_b->data)[e] = 0.02f;
            ((float *)sc_y->data)[0] = 0.1f;
        }
        bo_desc(c, " scales %s%s%s y %s", tie ? "at ties" : pow2 ? "powers of two" : "random", rows ? " a per row" : "",
                cols ? " b per column" : "", rlx_dtype_name(yt));
        rlx_tensor *in[8] = { a, sc_a, za, b, sc_b, zb, sc_y, zy };
        bool k[8] = { false, true, kz, kb, true, kz, true, true };
        bo_single(c, "QLinearMatMul", 8, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
    if (ql) { /* sums past 2^24: 516 * 255^2 + 7 * 219 + r = 2^25 + r (row r - 1, r = 1 .. 8) times the
               * multiplier 2^-26 is 0.5 + r 2^-26; f32(acc) rounds r = 1, 2 to 2^25 (y 0, a tie to even),
               * the rest up (y 1); a double product gives 1 for all */
        bo_case *c = bo_next(ctx, 21);
        if (c) qmatmul_rounding(ctx, c);
    }
    qmatmul_edges(ctx, ql);
    qmatmul_tiles(ctx, ql);
}

/* QLinearMatMul's sums past 2^24 (gen_qmatmul's last case). */
static void qmatmul_rounding(bo_ctx *ctx, bo_case *c) {
    int64_t ad[2] = { 8, 518 }, bd[2] = { 518, 1 };
    rlx_tensor *a = bo_rand_int(RLX_DTYPE_U8, 2, ad, 0, 0), *b = bo_rand_int(RLX_DTYPE_U8, 2, bd, 0, 0);
    for (int64_t r = 0; r < 8; r++)
        for (int64_t kk = 0; kk < 518; kk++)
            rlx_tensor_set_i64(a, (size_t)(r * 518 + kk), kk < 516 ? 255 : kk == 516 ? 7 : r);
    for (int64_t kk = 0; kk < 518; kk++) rlx_tensor_set_i64(b, (size_t)kk, kk < 516 ? 255 : kk == 516 ? 219 : 1);
    rlx_tensor *in[8] = { a, bo_scalar(RLX_DTYPE_F32, ldexp(1.0, -13)), bo_scalar(RLX_DTYPE_U8, 0), b,
                          bo_scalar(RLX_DTYPE_F32, ldexp(1.0, -13)), bo_scalar(RLX_DTYPE_U8, 0),
                          bo_scalar(RLX_DTYPE_F32, 1.0), bo_scalar(RLX_DTYPE_U8, 0) };
    bool k[8] = { false, true, true, true, true, true, true, true };
    bo_desc(c, "QLinearMatMul u8[8,518] x u8[518,1] sums 2^25 + 1 .. 8, multiplier 2^-26 (f32(acc) rounds)");
    bo_single(c, "QLinearMatMul", 8, in, k, 1, 0, NULL);
    bo_run(ctx, c);
}

/* Edge shapes of the integer GEMM's variants (the //!audited claims of
 * qgemm.wgsl and qgemm_dp4.wgsl): a single element (u8 x i8, zero points
 * per row and column) on every variant, and [67, 5] x [5, 68] (tiles
 * partial in m and n, k neither a multiple of 4 nor of a tile step, n % 4
 * == 0 so that every variant serves an 8-bit y) on the workgroup tiles and
 * the split-k GEMV. */
static void qmatmul_edges(bo_ctx *ctx, bool ql) {
    /* the last: auto's 64 x 64 workgroup tiles from 2^24 outputs, [4100, 3]
     * x [3, 4096] (m partial in the last tile row) */
    static const char *const k_variant[] = { NULL, "gpu.qgemm_tile=wg", "gpu.qgemm_tile=gemv", "gpu.qgemm_tile=reg",
                                             "gpu.qgemm_tile=0", "gpu.qgemm_tile=wg", "gpu.qgemm_tile=gemv", NULL };
    for (size_t t = 0; t < BO_LEN(k_variant); t++) {
        bo_case *c = bo_next(ctx, ql ? 21 : 10);
        if (!c) continue;
        bool big = t == BO_LEN(k_variant) - 1;
        int64_t M = big ? 4100 : t < 5 ? 1 : 67, K = big ? 3 : t < 5 ? 1 : 5, N = big ? 4096 : t < 5 ? 1 : 68;
        int64_t ad[2] = { M, K }, bd[2] = { K, N };
        rlx_tensor *a = bo_rand_int(RLX_DTYPE_U8, 2, ad, 0, 255), *b = bo_rand_int(RLX_DTYPE_I8, 2, bd, -128, 127);
        rlx_tensor *za = bo_rand_int(RLX_DTYPE_U8, 1, &M, 100, 150), *zb = bo_rand_int(RLX_DTYPE_I8, 1, &N, -5, 5);
        if (k_variant[t]) bo_opt(c, k_variant[t]);
        bo_desc(c, "%s u8[%lld,%lld] x i8[%lld,%lld] zp per row/column %s (%s)",
                ql ? "QLinearMatMul" : "MatMulInteger", (long long)M, (long long)K, (long long)K, (long long)N,
                k_variant[t] ? k_variant[t] : "auto", big ? "2^24 outputs: 64 x 64 tiles" : "edge shape");
        if (!ql) {
            rlx_tensor *in[4] = { a, b, za, zb };
            bool k[4] = { false, t % 2 == 0, true, true };
            bo_single(c, "MatMulInteger", 4, in, k, 1, 0, NULL);
        } else {
            rlx_tensor *in[8] = { a, bo_scalar(RLX_DTYPE_F32, 0.5), za, b, bo_scalar(RLX_DTYPE_F32, 0.25), zb,
                                  bo_scalar(RLX_DTYPE_F32, 16.0), bo_scalar(RLX_DTYPE_U8, 128) };
            bool k[8] = { false, true, true, t % 2 == 0, true, true, true, true };
            bo_single(c, "QLinearMatMul", 8, in, k, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

/* qgemm:gen: the generated integer GEMM (gemm_gen.c's int8 instance,
 * gpu.qgemm_tile=gen, forced on every case) against the CPU's integer
 * kernel bit for bit, then (bo_variant) an older kernel (the 64 x 64
 * workgroup tiles wg, or the 4 x 4 blocks reg) and the unpacked 4x8
 * products (gpu.dot4=0) or another tile shape, each with the case's bits. Shapes:
 * M, N, K off the tiles and off 4, K < 4, M = 1 (forced past the GEMV),
 * batch dims that broadcast, b constant (packed on the host) or an input
 * (unaligned rows), uint8 and int8 operands in all pairings, zero points
 * absent, scalar and per row / column, QLinearMatMul scales per tensor,
 * row and column, y uint8 and int8; 128 x 128 and 128 x 64 tiles
 * (gpu.gemm_tile); two with a long k in k slices (gpu.gemm_splitk as the
 * variants). The convolutions: qconv:gen (cases_nn.c). */
typedef struct qgen_mm {
    bool ql;
    int64_t ba, bb; /* batch: a [ba, ...] (0: none), b [bb, ...] (0: none) */
    int64_t M, K, N;
    bool as, bs;    /* int8 operands (else uint8) */
    int zmode;      /* 0 none (QLinearMatMul: 0), 1 scalar, 2 per row / column */
    bool kb;        /* b a constant */
    bool rows, cols; /* QLinearMatMul: a_scale per row, b_scale per column */
    const char *tile; /* gpu.gemm_tile, or NULL */
    int split;        /* > 0: the variants are gpu.gemm_splitk=split and =64 (the slices' partial sums) */
} qgen_mm;

static const qgen_mm k_qgen_mm[] = {
    { false, 0, 0, 67, 5, 70, false, true, 0, true, false, false, NULL, 0 },
    { false, 0, 0, 17, 3, 9, true, false, 1, false, false, false, NULL, 0 },
    { false, 0, 0, 1, 9, 5, false, false, 2, true, false, false, NULL, 0 },
    { false, 2, 3, 20, 13, 21, false, false, 2, false, false, false, NULL, 0 }, /* [2,1,..] x [3,..] */
    { false, 0, 0, 130, 70, 132, false, true, 1, true, false, false, "gpu.gemm_tile=8x8,16x16,16", 0 },
    { false, 0, 0, 129, 21, 66, true, true, 2, false, false, false, "gpu.gemm_tile=8x4,16x16,16", 0 },
    { true, 0, 0, 70, 37, 68, false, true, 1, true, false, true, NULL, 0 },
    { true, 2, 0, 33, 130, 36, true, true, 2, false, true, false, NULL, 0 },
    { true, 0, 0, 16, 2, 4, false, false, 0, false, false, false, NULL, 0 },
    { true, 0, 0, 100, 50, 72, true, false, 2, true, true, true, "gpu.gemm_tile=8x8,16x16,16", 0 },
    { true, 0, 2, 19, 7, 8, false, true, 1, false, false, true, "gpu.gemm_tile=4x8,16x8,16", 0 },
    { false, 0, 0, 40, 701, 37, false, true, 2, false, false, false, NULL, 3 },
    { true, 2, 0, 24, 517, 40, true, false, 1, true, false, true, NULL, 5 },
    { true, 0, 0, 40, 37, 45, false, true, 2, true, true, false, NULL, 0 }, /* y rows not whole words: MODE 4 */
    { true, 0, 2, 20, 300, 23, true, true, 1, false, false, true, NULL, 3 }, /* ... after k slices */
};

static void gen_qgen_mm(bo_ctx *ctx, const qgen_mm *g) {
    bo_case *c = bo_next(ctx, g->ql ? 21 : 10);
    if (!c) return;
    int64_t M = g->M, K = g->K, N = g->N;
    rlx_dtype at = g->as ? RLX_DTYPE_I8 : RLX_DTYPE_U8, bt = g->bs ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
    bo_shape sa = { 2, { M, K } }, sb = { 2, { K, N } };
    if (g->ba && g->bb) sa = (bo_shape){ 4, { g->ba, 1, M, K } }, sb = (bo_shape){ 3, { g->bb, K, N } };
    else if (g->ba) sa = (bo_shape){ 3, { g->ba, M, K } };
    else if (g->bb) sb = (bo_shape){ 3, { g->bb, K, N } };
    rlx_tensor *a = bo_rand_int(at, sa.rank, sa.d, g->as ? -128 : 0, g->as ? 127 : 255);
    rlx_tensor *b = bo_rand_int(bt, sb.rank, sb.d, g->bs ? -128 : 0, g->bs ? 127 : 255);
    rlx_tensor *za = NULL, *zb = NULL;
    if (g->zmode || g->ql) {
        za = g->zmode == 2 ? bo_rand_int(at, 1, &M, g->as ? -128 : 0, g->as ? 127 : 255)
                           : bo_scalar(at, g->zmode ? (g->as ? (double)rnd(-5, 5) : (double)rnd(100, 150)) : 0);
        zb = g->zmode == 2 ? bo_rand_int(bt, 1, &N, g->bs ? -128 : 0, g->bs ? 127 : 255)
                           : bo_scalar(bt, g->zmode ? (g->bs ? (double)rnd(-5, 5) : (double)rnd(100, 150)) : 0);
    }
    c->expect_op = g->ql ? "QLinearMatMul" : "MatMulInteger";
    bo_opt(c, "gpu.qgemm_tile=gen");
    if (g->tile) bo_opt(c, g->tile);
    /* (lavapipe compiles each variant: about 10 s a session) */
    size_t i = (size_t)(g - k_qgen_mm);
    char sk[32];
    snprintf(sk, sizeof sk, "gpu.gemm_splitk=%d", g->split);
    if (g->split) {
        bo_variant(c, sk);
        bo_variant(c, "gpu.gemm_splitk=64"); /* as many slices as two k tiles each allow */
    } else {
        bo_variant(c, i % 2 ? "gpu.qgemm_tile=reg" : "gpu.qgemm_tile=wg");
        if (i % 3 == 0) bo_variant(c, "gpu.dot4=0");
        else bo_variant(c, g->tile ? "gpu.gemm_tile=4x4,16x16,16" : "gpu.gemm_tile=8x8,16x16,16");
    }
    char s1[64], s2[64];
    bo_desc(c, "%s %s%s x %s%s zp %s%s gpu.qgemm_tile=gen%s%s", g->ql ? "QLinearMatMul" : "MatMulInteger",
            rlx_dtype_name(at), bo_shape_str(sa.rank, sa.d, s1, sizeof s1), rlx_dtype_name(bt),
            bo_shape_str(sb.rank, sb.d, s2, sizeof s2),
            g->zmode == 0 ? (g->ql ? "0" : "none") : g->zmode == 1 ? "scalar" : "per row/column",
            g->kb ? " b constant" : "", g->tile ? " " : "", g->tile ? g->tile : "");
    if (g->split) bo_desc(c, " (variants %s, =64: k slices)", sk);
    if (!g->ql) {
        rlx_tensor *in[4] = { a, b, za, zb };
        bool k[4] = { false, g->kb, true, true };
        bo_single(c, "MatMulInteger", za ? 4 : 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
        return;
    }
    double spread = 150.0 / (sqrt((double)K) * 5500.0 + 1);
    rlx_tensor *sc_a = g->rows ? bo_rand(RLX_DTYPE_F32, 1, &M, 0.5, 2) : bo_scalar(RLX_DTYPE_F32, bo_uniform(0.5, 2));
    rlx_tensor *sc_b = g->cols ? bo_rand(RLX_DTYPE_F32, 1, &N, 0.5, 2) : bo_scalar(RLX_DTYPE_F32, bo_uniform(0.5, 2));
    rlx_tensor *sc_y = bo_scalar(RLX_DTYPE_F32, 1.0 / spread);
    rlx_dtype yt = g->as ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
    rlx_tensor *zy = bo_scalar(yt, yt == RLX_DTYPE_I8 ? (double)rnd(-20, 20) : (double)rnd(100, 150));
    bo_desc(c, " scales%s%s y %s", g->rows ? " a per row" : "", g->cols ? " b per column" : "", rlx_dtype_name(yt));
    rlx_tensor *in[8] = { a, sc_a, za, b, sc_b, zb, sc_y, zy };
    bool k[8] = { false, true, true, g->kb, true, true, true, true };
    bo_single(c, "QLinearMatMul", 8, in, k, 1, 0, NULL);
    bo_run(ctx, c);
}

static void gen_qgen(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (size_t i = 0; i < BO_LEN(k_qgen_mm); i++) gen_qgen_mm(ctx, &k_qgen_mm[i]);
}

/* The workgroup tiles (lower_qgemm.c's tile rule, gpu.qgemm_tile=wgRxC)
 * on products: M of 1 to 20, 33 and 70, N not a multiple of the tile (nor
 * of 4 for MatMulInteger's i32 y), K not a multiple of 4 nor of a tile
 * step, a batch of 2 (b broadcast or not), b constant (packed) or an input
 * (unpacked: its four columns' bytes of one k as one word); every tile
 * shape, the rule (wg) and legacy, zero points per tensor and per row /
 * column. */
static void qmatmul_tiles(bo_ctx *ctx, bool ql) {
    static const char *const k_opt[] = { "wg16x32", "wg16x64", "wg16x128", "wg32x32", "wg32x64", "wg32x128",
                                         "wg64x32", "wg64x64", "wg64x128", "wg", "legacy" };
    static const int64_t k_m[] = { 1, 2, 5, 8, 11, 16, 17, 20, 33, 70, 13 };
    static const int64_t k_n[] = { 36, 132, 20, 68, 200, 4, 72, 28, 140, 36, 260 };
    int nt = (int)BO_LEN(k_opt);
    int n = bo_full(ctx) ? 2 * nt : nt;
    for (int t = 0; t < n; t++) {
        bo_case *c = bo_next(ctx, ql ? 21 : 10);
        if (!c) continue;
        int v = t % nt;
        int64_t M = k_m[(t + t / nt * 3) % nt], N = k_n[(t + t / nt * 5) % nt] + (ql ? 0 : t % 3), K = 5 + 13 * (t % 4);
        bool batch = t % 3 == 1, kb = t % 2 == 0, vec = t % 4 >= 2;
        bool as = t & 1, bs = (t >> 2) & 1;
        rlx_dtype at = as ? RLX_DTYPE_I8 : RLX_DTYPE_U8, bt = bs ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        bo_shape sa = { 2, { M, K } }, sb = { 2, { K, N } };
        if (batch) sa = (bo_shape){ 3, { 2, M, K } }, sb = t % 2 ? (bo_shape){ 3, { 2, K, N } } : sb;
        rlx_tensor *a = bo_rand_int(at, sa.rank, sa.d, as ? -128 : 0, as ? 127 : 255);
        rlx_tensor *b = bo_rand_int(bt, sb.rank, sb.d, bs ? -128 : 0, bs ? 127 : 255);
        rlx_tensor *za = vec ? bo_rand_int(at, 1, &M, as ? -128 : 0, as ? 127 : 255)
                             : bo_scalar(at, as ? (double)rnd(-5, 5) : (double)rnd(100, 150));
        rlx_tensor *zb = vec ? bo_rand_int(bt, 1, &N, bs ? -128 : 0, bs ? 127 : 255)
                             : bo_scalar(bt, bs ? (double)rnd(-5, 5) : (double)rnd(100, 150));
        char o[48], s1[64], s2[64];
        snprintf(o, sizeof o, "gpu.qgemm_tile=%s", k_opt[v]);
        bo_opt(c, o);
        bo_desc(c, "%s %s%s x %s%s zp %s%s %s (tiles)", ql ? "QLinearMatMul" : "MatMulInteger", rlx_dtype_name(at),
                bo_shape_str(sa.rank, sa.d, s1, sizeof s1), rlx_dtype_name(bt), bo_shape_str(sb.rank, sb.d, s2, sizeof s2),
                vec ? "per row/column" : "scalar", kb ? " b constant" : "", o);
        if (!ql) {
            rlx_tensor *in[4] = { a, b, za, zb };
            bool k[4] = { false, kb, true, true };
            bo_single(c, "MatMulInteger", 4, in, k, 1, 0, NULL);
        } else {
            double sy = 150.0 / (sqrt((double)K) * 5500.0 + 1);
            rlx_dtype yt = t % 3 == 0 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            rlx_tensor *in[8] = { a, bo_scalar(RLX_DTYPE_F32, 0.5), za, b,
                                  vec ? bo_rand(RLX_DTYPE_F32, 1, &N, 0.5, 2) : bo_scalar(RLX_DTYPE_F32, 0.75), zb,
                                  bo_scalar(RLX_DTYPE_F32, 0.5 * 0.75 / sy),
                                  bo_scalar(yt, yt == RLX_DTYPE_I8 ? (double)rnd(-20, 20) : (double)rnd(100, 150)) };
            bool k[8] = { false, true, true, kb, true, true, true, true };
            bo_single(c, "QLinearMatMul", 8, in, k, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

/* rlx.MatMulNBits (com.microsoft.MatMulNBits, bits 4, as the contrib import
 * makes it; kernels/matmul_nbits.wgsl): block_size 16, 32, 64, 128, 256; K a
 * multiple of the block size and not; N odd and past a workgroup's 8
 * columns; with and without zero points (uint8, two blocks a byte); M = 1
 * (decoding), M past the kernel's 4 rows, a rank-3 A; f32 and f16 A. The
 * GEMV's paths: 16-byte pieces (K and block_size multiples of 32, also
 * with K not a multiple of block_size) and word by word; the weights
 * dequantized (f32) for the tiled GEMM (32 rows or more of A, f32 or f16,
 * or gpu.nbits=gemm, also with K % 4 != 0: B read element by element), and
 * gpu.nbits=gemv past 32 rows; the 16-byte pieces in matmul_nbits_gemv.wgsl
 * (the default, A staged; gpu.nbits=gemv_direct: A from the caches) and in
 * matmul_nbits.wgsl (gpu.nbits=gemv1). The CPU oracle runs its own kernel on the
 * same packed weights (cpu_nbits.c). */
typedef struct nbits_case {
    int64_t b, m, K, N, bs;
    bool zp, f16;
    const char *opt;
} nbits_case;

/* One com.microsoft.MatMulNBits case; inf: scale 0 is +inf and the last
 * -inf (onnxruntime and the CPU: each weight (q - zp) * scale, so a block
 * holding q == zp, or products of both signs, gives NaN, never +-inf). */
static void nbits_one(bo_ctx *ctx, const nbits_case *k, bool inf) {
    bo_case *c = bo_next(ctx, 17);
    if (!c) return;
    int64_t K = k->K, N = k->N, bs = k->bs, nb = (K + bs - 1) / bs;
    rlx_dtype dt = k->f16 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
    c->expect_op = "rlx.MatMulNBits";
    if (k->f16) c->rtol = 2e-3, c->atol = 1e-3; /* one f16 rounding of sums taken in another order */
    int64_t ad[3] = { k->b, k->m, K }, bd[3] = { N, nb, bs / 2 }, sd[1] = { N * nb }, zd[1] = { N * ((nb + 1) / 2) };
    bool r3 = k->b > 0;
    rlx_tensor *scales = bo_rand(dt, 1, sd, 0.01, 0.1);
    if (inf && scales) {
        rlx_tensor_set_f64(scales, 0, INFINITY);
        rlx_tensor_set_f64(scales, (size_t)(N * nb - 1), -INFINITY);
    }
    const char *ins[4] = { bo_input(c, bo_rand(dt, r3 ? 3 : 2, r3 ? ad : ad + 1, -1, 1)),
                           bo_const(c, bo_rand_int(RLX_DTYPE_U8, 3, bd, 0, 255)), bo_const(c, scales),
                           k->zp ? bo_const(c, bo_rand_int(RLX_DTYPE_U8, 1, zd, 0, 255)) : "" };
    rlx_attr at[4] = { RLX_ATTR_I("K", K), RLX_ATTR_I("N", N), RLX_ATTR_I("bits", 4), RLX_ATTR_I("block_size", bs) };
    bo_output(c, bo_node(c, "com.microsoft.MatMulNBits", k->zp ? 4 : 3, ins, 1, 4, at));
    bo_desc(c, "MatMulNBits %s A[%s%lld,%lld] N=%lld block_size=%lld%s", k->f16 ? "f16" : "f32", r3 ? "2," : "",
            (long long)k->m, (long long)K, (long long)N, (long long)bs, k->zp ? " zero points" : "");
    if (inf) bo_desc(c, " scales +-inf");
    if (k->opt) bo_opt(c, k->opt), bo_desc(c, " %s", k->opt);
    bo_run(ctx, c);
}

static void gen_matmul_nbits(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const nbits_case k_cases[] = {
        { 0, 1, 64, 7, 16, true, false, NULL },    { 0, 1, 100, 9, 32, false, false, NULL },
        { 0, 1, 200, 33, 64, true, false, NULL },  { 0, 1, 300, 17, 128, false, false, NULL },
        { 0, 5, 96, 11, 32, true, false, NULL },   { 0, 6, 40, 13, 16, false, false, NULL },
        { 2, 3, 130, 9, 64, true, false, NULL },   { 0, 9, 256, 5, 128, true, false, NULL },
        { 0, 1, 72, 15, 16, true, true, NULL },    { 0, 5, 80, 9, 32, false, true, NULL },
        { 0, 1, 512, 40, 32, true, false, NULL },  { 0, 3, 256, 9, 64, false, false, NULL },
        { 0, 4, 1024, 17, 128, true, false, NULL }, { 2, 2, 128, 10, 32, false, false, NULL },
        { 0, 1, 256, 12, 32, true, true, NULL },   { 0, 7, 512, 8, 256, false, true, NULL },
        { 0, 1, 96, 5, 64, true, false, NULL },    { 0, 40, 96, 11, 32, true, false, NULL },
        { 0, 33, 100, 6, 16, false, false, NULL }, { 2, 20, 256, 19, 64, true, false, NULL },
        { 0, 5, 64, 7, 16, true, false, "gpu.nbits=gemm" }, { 0, 64, 256, 33, 128, false, false, "gpu.nbits=gemv" },
        { 0, 2, 128, 9, 32, true, false, "gpu.gemm_vec4=0" }, { 0, 40, 256, 9, 32, true, true, NULL },
        { 0, 3, 64, 10, 32, false, true, "gpu.nbits=gemm" },
    };
    /* infinite scales: the GEMV's 16-byte pieces (K and block_size multiples
     * of 32) among others */
    static const nbits_case k_inf[] = {
        { 0, 1, 64, 9, 32, true, false, NULL },  { 0, 5, 256, 8, 128, false, false, NULL },
        { 0, 3, 64, 9, 64, false, true, NULL },  { 0, 2, 1056, 7, 32, true, false, "gpu.nbits=gemv" },
        { 0, 1, 48, 9, 16, true, false, NULL },  { 0, 40, 64, 9, 32, true, false, NULL },
    };
    /* matmul_nbits_gemv.wgsl (K and block_size multiples of 32, fewer than
     * 32 rows or gpu.nbits=gemv): K from one piece (32) to past one step of
     * 128 pieces (4096: exactly one; 4160, 4352: a partial second), K not a
     * multiple of the block size, N not a multiple of 16 nor of 4 (groups
     * of 4 columns partly or wholly past N), M 1 to 4 and past 4 (row tiles
     * with fewer rows than the ROWS the first has); A straight from the
     * caches (gpu.nbits=gemv_direct) and the older kernel (gemv1) */
    static const nbits_case k_gemv[] = {
        { 0, 1, 32, 9, 32, false, false, NULL },     { 0, 2, 4096, 37, 32, true, false, NULL },
        { 0, 1, 4160, 21, 64, false, false, NULL },  { 0, 3, 4352, 19, 128, true, false, NULL },
        { 0, 4, 2048, 23, 32, false, true, NULL },   { 0, 1, 4096, 13, 128, true, true, NULL },
        { 0, 4, 160, 70, 32, true, false, NULL },    { 0, 2, 96, 16, 64, false, false, NULL },
        { 0, 6, 1088, 11, 64, true, false, "gpu.nbits=gemv" }, { 2, 2, 384, 10, 128, true, true, NULL },
        { 0, 3, 128, 33, 32, true, false, "gpu.nbits=gemv1" }, { 0, 1, 1056, 9, 32, false, true, "gpu.nbits=gemv1" },
        { 0, 4, 4160, 19, 32, true, false, "gpu.nbits=gemv_direct" },
        { 0, 1, 1024, 21, 64, false, true, "gpu.nbits=gemv_direct" },
    };
    for (size_t i = 0; i < BO_LEN(k_cases); i++) nbits_one(ctx, &k_cases[i], false);
    for (size_t i = 0; i < BO_LEN(k_inf); i++) nbits_one(ctx, &k_inf[i], true);
    for (size_t i = 0; i < BO_LEN(k_gemv); i++) nbits_one(ctx, &k_gemv[i], false);
}

#define GEMM 1e-5, 2e-6, "K products in another order (tiles, split-K): relative 1e-5 plus 2e-6 sqrt(K); f16 weights 1e-2"
static const bo_op k_ops[] = {
    { "Gemm", gen_gemm, NULL, GEMM },
    { "MatMul", gen_matmul, NULL, GEMM },
    { "MatMulInteger", gen_qmatmul, NULL, 0, 0, "i32 sums: exact" },
    { "QLinearMatMul", gen_qmatmul, "ql", 0, 0,
      "exact: i32 sums, the CPU's f32 requantization reproduced (onnxruntime's; ties to even, saturation)" },
    { "rlx.MatMulNBits", gen_matmul_nbits, NULL, 1e-5, 2e-6,
      "K products summed in another order (lanes, vectors) than the CPU's: relative 1e-5 plus 2e-6; f16 2e-3" },
    { "qgemm:gen", gen_qgen, NULL, 0, 0,
      "exact: the generated integer GEMM (gpu.qgemm_tile=gen) against the CPU; the older kernels: its bits" },
    { "gemm:variants", gen_variants, NULL, 1e-5, 2e-6,
      "as MatMul, Gemm, Conv; each gpu.gemm_pipeline / gpu.gemm_conv_geometry variant: the default's bits" },
};

const bo_family bo_family_gemm = { "gemm", k_ops, BO_LEN(k_ops) };
