/* Cases of the fusion passes (src/passes/fuse_*.c, fold_conv_affine.c): each
 * builds the pattern a pass rewrites, and the harness runs it with the
 * passes on and off on both backends, all against the unfused CPU, and
 * checks that the fused plan has fewer steps. The internal ops that only
 * passes create (rlx.FusedElementwise, rlx.AddLayerNormalization) are
 * covered here. Tolerances: fusion changes rounding only where a
 * transcendental epilogue or a folded affine map is computed differently. */
#include <math.h>
#include <string.h>

#include "harness.h"

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1)); }

/* ------------------------------------------------------------ activations */

typedef struct act_t {
    const char *op;     /* NULL: the SiLU pattern x * Sigmoid(x) */
    const char *attr;   /* a float attribute, or "approximate" */
    float v;
} act_t;

static const act_t k_acts[] = {
    { "Relu", NULL, 0 },          { "Clip", NULL, 0 },          { "HardSigmoid", "alpha", 0.3f },
    { "HardSwish", NULL, 0 },     { "Sigmoid", NULL, 0 },       { "LeakyRelu", "alpha", 0.1f },
    { "Tanh", NULL, 0 },          { "Gelu", NULL, 0 },          { "Gelu", "approximate", 0 },
    { NULL, NULL, 0 },
};

/* Appends the activation a to value x; returns its output. */
static const char *act(bo_case *c, const act_t *a, const char *x) {
    if (!a->op) {
        const char *sg = bo_node(c, "Sigmoid", 1, &x, 1, 0, NULL);
        const char *ins[2] = { x, sg };
        bo_desc(c, " act=SiLU pattern");
        return bo_node(c, "Mul", 2, ins, 1, 0, NULL);
    }
    bo_desc(c, " act=%s", a->op);
    if (!strcmp(a->op, "Clip")) {
        const char *ins[3] = { x, bo_const(c, bo_scalar(RLX_DTYPE_F32, -0.5)), bo_const(c, bo_scalar(RLX_DTYPE_F32, 0.75)) };
        return bo_node(c, "Clip", 3, ins, 1, 0, NULL);
    }
    rlx_attr at;
    size_t na = 0;
    if (a->attr && !strcmp(a->attr, "approximate")) at = RLX_ATTR_S("approximate", "tanh"), na = 1, bo_desc(c, "(tanh)");
    else if (a->attr) at = RLX_ATTR_F(a->attr, a->v), na = 1;
    return bo_node(c, a->op, 1, &x, 1, na, &at);
}

/* A random Conv (2-D) on x [N, C, H, W]; returns its output and C_out. */
static const char *conv(bo_case *c, const char *x, int64_t cin, int64_t cout, int64_t k, bool bias) {
    int64_t wd[4] = { cout, cin, k, k }, co = cout;
    const char *ins[3] = { x, bo_const(c, bo_rand(RLX_DTYPE_F32, 4, wd, -0.5, 0.5)),
                           bias ? bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &co, -0.5, 0.5)) : "" };
    int64_t p = k / 2, pads[4] = { p, p, p, p };
    rlx_attr a = RLX_ATTR_IS("pads", 4, pads);
    return bo_node(c, "Conv", bias ? 3 : 2, ins, 1, 1, &a);
}

/* Half the cases: one NaN element of t (every activation of k_acts keeps
 * NaN, as onnxruntime: the product's NaN outputs must stay NaN through the
 * epilogue, BO_SPREADS_NAN); returns t. */
static rlx_tensor *nan_one(bo_case *c, rlx_tensor *t) {
    size_t n = rlx_tensor_numel(t);
    if (n && bo_rand_below(2)) {
        ((float *)t->data)[bo_rand_below(n)] = NAN;
        c->flags |= BO_SPREADS_NAN;
        bo_desc(c, "one NaN ");
    }
    return t;
}

/* A tensor of +-1 (exact sums: a zero output is a cancellation, +0 in
 * any order of the sums, on either device). */
static rlx_tensor *ones(int rank, const int64_t *d) {
    rlx_tensor *t = bo_rand(RLX_DTYPE_F32, rank, d, -1, 1);
    float *v = t->data;
    for (size_t i = 0; i < rlx_tensor_numel(t); i++) v[i] = v[i] < 0 ? -1.0f : 1.0f;
    return t;
}

/* Epilogues that select (Clip with a bound -0 or +0, Relu, LeakyRelu) on
 * products of +-1 operands: exact integer sums, many of them +0, so the
 * outputs must be the CPU's value for value (BO_SAME_VALUE): Clip(+0,
 * lo = -0) is +0 and Clip(+0, hi = -0) is +0 (x < lo, x > hi are false:
 * x stays), which a driver's min/max of -0 and +0 may get wrong (the H200
 * did, for the elementwise kernels: README.md, "Signed zeros"; and
 * fuse_activation once dropped a bound of -0, taking it for the default
 * 0). Conv
 * (2x2 taps, the direct, im2col and implicit paths by size), Gemm with
 * a bias (an even count of terms), MatMul. */
static void fuse_activation_zeros(bo_ctx *ctx) {
    static const struct { const char *op; double lo, hi; float alpha; } k_sel[] = {
        { "Clip", -0.0, 1.0, 0 }, { "Clip", -1.0, -0.0, 0 }, { "Relu", 0, 0, 0 }, { "LeakyRelu", 0, 0, 0.125f },
    };
    for (size_t ai = 0; ai < BO_LEN(k_sel); ai++)
        for (int prod = 0; prod < 3; prod++) { /* Conv, Gemm (+ bias), MatMul */
            bo_case *c = bo_next(ctx, 20);
            if (!c) continue;
            c->fused = prod == 0 ? "Conv" : prod == 1 ? "Gemm" : "MatMul";
            c->flags |= BO_SAME_VALUE;
            const char *y;
            if (prod == 0) {
                int64_t cin = 2, hw = 6, cout = 3; /* one shape: pipelines shared across the cases */
                int64_t xd[4] = { 1, cin, hw, hw + 1 }, wd[4] = { cout, cin, 2, 2 };
                const char *ins[2] = { bo_input(c, ones(4, xd)), bo_const(c, ones(4, wd)) };
                y = bo_node(c, "Conv", 2, ins, 1, 0, NULL);
                bo_desc(c, "Conv of +-1 x[1,%lld,%lld,%lld] w[3,%lld,2,2]", (long long)cin, (long long)hw,
                        (long long)hw + 1, (long long)cin);
            } else {
                bool gemm = prod == 1;
                int64_t M = 8, K = gemm ? 5 : 4, N = 9;
                int64_t ad[2] = { M, K }, bd[2] = { K, N };
                const char *ins[3] = { bo_input(c, ones(2, ad)), bo_const(c, ones(2, bd)), gemm ? bo_const(c, ones(1, &N)) : "" };
                y = bo_node(c, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2, ins, 1, 0, NULL);
                bo_desc(c, "%s of +-1 M=%lld K=%lld N=%lld%s", c->fused, (long long)M, (long long)K, (long long)N,
                        gemm ? " + bias" : "");
            }
            if (!strcmp(k_sel[ai].op, "Clip")) {
                const char *ins[3] = { y, bo_const(c, bo_scalar(RLX_DTYPE_F32, k_sel[ai].lo)),
                                       bo_const(c, bo_scalar(RLX_DTYPE_F32, k_sel[ai].hi)) };
                y = bo_node(c, "Clip", 3, ins, 1, 0, NULL);
                bo_desc(c, " act=Clip(%s, %s)", signbit(k_sel[ai].lo) && k_sel[ai].lo == 0 ? "-0" : k_sel[ai].lo == 0 ? "+0" : "-1",
                        signbit(k_sel[ai].hi) && k_sel[ai].hi == 0 ? "-0" : k_sel[ai].hi == 1 ? "1" : "0.5");
            } else {
                rlx_attr at = RLX_ATTR_F("alpha", k_sel[ai].alpha);
                y = bo_node(c, k_sel[ai].op, 1, &y, 1, k_sel[ai].alpha ? 1 : 0, &at);
                bo_desc(c, " act=%s", k_sel[ai].op);
            }
            bo_output(c, y);
            bo_run(ctx, c);
        }
}

static void gen_fuse_activation(bo_ctx *ctx, const void *arg) {
    int reps = bo_full(ctx) ? 4 : 1;
    for (int rep = 0; rep < reps; rep++)
        for (size_t ai = 0; ai < BO_LEN(k_acts); ai++)
            for (int prod = 0; prod < 4; prod++) { /* Conv, ConvTranspose, Gemm, MatMul (+ bias) */
                if (!bo_full(ctx) && (int)(ai % 4) != prod) continue;
                bo_case *c = bo_next(ctx, 20);
                if (!c) continue;
                c->fused = prod == 0 ? "Conv" : prod == 1 ? "ConvTranspose" : prod == 2 ? "Gemm" : "MatMul";
                const char *y;
                if (prod <= 1) {
                    int64_t n = 1, cin = rnd(1, 4), cout = rnd(1, 5), hw = rnd(3, 9);
                    int64_t xd[4] = { n, cin, hw, hw + 1 };
                    const char *x = bo_input(c, nan_one(c, bo_rand(RLX_DTYPE_F32, 4, xd, -2, 2)));
                    if (prod == 0) y = conv(c, x, cin, cout, 3, rep % 2 == 0);
                    else {
                        int64_t wd[4] = { cin, cout, 3, 3 };
                        const char *ins[2] = { x, bo_const(c, bo_rand(RLX_DTYPE_F32, 4, wd, -0.5, 0.5)) };
                        rlx_attr s = RLX_ATTR_IS("strides", 2, ((const int64_t[]){ 2, 2 }));
                        y = bo_node(c, "ConvTranspose", 2, ins, 1, 1, &s);
                    }
                    bo_desc(c, "%s x[1,%lld,%lld,%lld] C_out=%lld", c->fused, (long long)cin, (long long)hw,
                            (long long)hw + 1, (long long)cout);
                } else {
                    int64_t M = rnd(1, 19), K = rnd(1, 40), N = rnd(1, 21);
                    int64_t ad[3] = { 2, M, K }, bd[2] = { K, N };
                    bool gemm = prod == 2;
                    const char *a = bo_input(c, nan_one(c, bo_rand(RLX_DTYPE_F32, gemm ? 2 : 3, gemm ? ad + 1 : ad, -1, 1)));
                    const char *ins[3] = { a, bo_const(c, bo_rand(RLX_DTYPE_F32, 2, bd, -1, 1)),
                                           bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &N, -1, 1)) };
                    y = bo_node(c, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2, ins, 1, 0, NULL);
                    if (!gemm && rep % 2 == 0) { /* the bias after a MatMul folds into its third input */
                        const char *ins2[2] = { y, ins[2] };
                        y = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
                        bo_desc(c, "MatMul + bias");
                    } else {
                        bo_desc(c, "%s", c->fused);
                    }
                    bo_desc(c, " M=%lld K=%lld N=%lld", (long long)M, (long long)K, (long long)N);
                    c->atol *= sqrt((double)K);
                }
                bo_output(c, act(c, &k_acts[ai], y));
                bo_run(ctx, c);
            }
    fuse_activation_zeros(ctx);
}

/* ------------------------------------------------------------ Conv + residual */

static void gen_fuse_conv_residual(bo_ctx *ctx, const void *arg) {
    static const char *const k_algo[] = { NULL, "gpu.conv_algo=direct", "gpu.conv_algo=im2col", "gpu.conv_algo=implicit" };
    int n = bo_full(ctx) ? 40 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 20);
        if (!c) continue;
        c->fused = "Conv";
        int64_t cin = rnd(1, 8), cout = rnd(1, 9), hw = rnd(2, 12), k = i % 3 == 0 ? 1 : 3;
        bool dw = i % 5 == 4;
        if (dw) cout = cin;
        int64_t xd[4] = { rnd(1, 2), cin, hw, hw + 2 }, rd[4] = { xd[0], cout, hw, hw + 2 };
        const char *x = bo_input(c, bo_rand(RLX_DTYPE_F32, 4, xd, -2, 2));
        const char *y;
        if (dw) {
            int64_t wd[4] = { cout, 1, 3, 3 };
            const char *ins[2] = { x, bo_const(c, bo_rand(RLX_DTYPE_F32, 4, wd, -0.5, 0.5)) };
            rlx_attr a[2] = { RLX_ATTR_IS("pads", 4, ((const int64_t[]){ 1, 1, 1, 1 })), RLX_ATTR_I("group", cin) };
            y = bo_node(c, "Conv", 2, ins, 1, 2, a);
        } else {
            y = conv(c, x, cin, cout, k, i % 2 == 0);
        }
        const char *r = i % 3 == 1 ? bo_const(c, bo_rand(RLX_DTYPE_F32, 4, rd, -1, 1)) : bo_input(c, bo_rand(RLX_DTYPE_F32, 4, rd, -1, 1));
        const char *ins[2] = { i % 2 ? r : y, i % 2 ? y : r };
        y = bo_node(c, "Add", 2, ins, 1, 0, NULL);
        bo_desc(c, "Conv%s x[%lld,%lld,%lld,%lld] C_out=%lld k=%lld + residual", dw ? " depthwise" : "", (long long)xd[0],
                (long long)cin, (long long)hw, (long long)hw + 2, (long long)cout, (long long)k);
        if (i % 2) y = act(c, &k_acts[i % BO_LEN(k_acts)], y);
        const char *o = k_algo[i % 4];
        if (o) bo_opt(c, o), bo_desc(c, " %s", o);
        c->atol *= sqrt((double)(cin * k * k));
        bo_output(c, y);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Conv + affine */

static void gen_fold_conv_affine(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 24 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 15);
        if (!c) continue;
        c->fused = "Conv";
        int64_t cin = rnd(1, 6), cout = rnd(1, 8), hw = rnd(3, 10);
        int64_t xd[4] = { 1, cin, hw, hw }, co = cout;
        const char *y = conv(c, bo_input(c, bo_rand(RLX_DTYPE_F32, 4, xd, -2, 2)), cin, cout, 3, i % 2 == 0);
        bo_desc(c, "Conv x[1,%lld,%lld,%lld] C_out=%lld ->", (long long)cin, (long long)hw, (long long)hw, (long long)cout);
        int kind = i % 3;
        if (kind == 0 || i >= 3) { /* BatchNormalization */
            const char *ins[5] = { y, bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &co, -2, 2)), bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &co, -1, 1)),
                                   bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &co, -1, 1)), bo_const(c, bo_rand(RLX_DTYPE_F32, 1, &co, 0.2, 2)) };
            y = bo_node(c, "BatchNormalization", 5, ins, 1, 0, NULL);
            bo_desc(c, " BatchNormalization");
        }
        if (kind == 1 || i >= 3) { /* Mul by [C,1,1] */
            int64_t kd[3] = { cout, 1, 1 };
            const char *ins[2] = { y, bo_const(c, bo_rand(RLX_DTYPE_F32, 3, kd, -2, 2)) };
            y = bo_node(c, "Mul", 2, ins, 1, 0, NULL);
            bo_desc(c, " Mul[C,1,1]");
        }
        if (kind == 2 || i >= 3) { /* Add of [1,C,1,1] */
            int64_t kd[4] = { 1, cout, 1, 1 };
            const char *ins[2] = { y, bo_const(c, bo_rand(RLX_DTYPE_F32, 4, kd, -2, 2)) };
            y = bo_node(c, "Add", 2, ins, 1, 0, NULL);
            bo_desc(c, " Add[1,C,1,1]");
        }
        c->atol *= sqrt((double)(cin * 9));
        bo_output(c, y);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Add + LayerNormalization */

static void gen_add_layernorm(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 30 : 8;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.AddLayerNormalization";
        int64_t N = rnd(1, 3), S = rnd(1, 9), Hd = i % 4 == 3 ? 768 : rnd(1, 70);
        int64_t ad[3] = { N, S, Hd }, bd[3] = { 1, S, Hd }, wd[1] = { Hd };
        bool bcast = i % 3 == 1; /* position embeddings [1, S, H] */
        const char *a = bo_input(c, bo_rand(RLX_DTYPE_F32, 3, ad, -2, 2));
        const char *b = bcast ? bo_const(c, bo_rand(RLX_DTYPE_F32, 3, bd, -1, 1)) : bo_input(c, bo_rand(RLX_DTYPE_F32, 3, ad, -1, 1));
        const char *ins[2] = { i % 2 ? b : a, i % 2 ? a : b };
        const char *s = bo_node(c, "Add", 2, ins, 1, 0, NULL);
        const char *ins2[3] = { s, bo_const(c, bo_rand(RLX_DTYPE_F32, 1, wd, -2, 2)),
                                i % 4 == 2 ? "" : bo_const(c, bo_rand(RLX_DTYPE_F32, 1, wd, -1, 1)) };
        rlx_attr at[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", i % 2 ? 1e-5f : 1e-12f) };
        bo_output(c, bo_node(c, "LayerNormalization", 3, ins2, 1, 2, at));
        bo_desc(c, "Add a[%lld,%lld,%lld] b%s -> LayerNormalization(-1)%s", (long long)N, (long long)S, (long long)Hd,
                bcast ? "[1,S,H]" : "[N,S,H]", i % 4 == 2 ? " no B" : "");
        bo_run(ctx, c);
    }
    /* rows of huge values (row_scale.wgsl): |a + b| up to 6e20 and 6e30,
     * and rows in [1e38, 3e38) with element 0 at -3e38, whose deviations
     * pass f32's range */
    for (int i = 0; i < 3; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.AddLayerNormalization";
        double m = i == 2 ? 5e37 : i ? 1e30 : 1e20;
        int64_t ad[3] = { 2, 3, i ? 64 : 768 }, wd[1] = { ad[2] };
        rlx_tensor *ta = bo_rand(RLX_DTYPE_F32, 3, ad, i == 2 ? 1e38 : -3 * m, i == 2 ? 2.5e38 : 5 * m);
        for (int64_t r = 0; i == 2 && r < ad[0] * ad[1]; r++) bo_set(ta, (size_t)(r * ad[2]), -2.5e38);
        const char *ins[2] = { bo_input(c, ta), bo_input(c, bo_rand(RLX_DTYPE_F32, 3, ad, -m, m)) };
        const char *s = bo_node(c, "Add", 2, ins, 1, 0, NULL);
        const char *ins2[3] = { s, bo_const(c, bo_rand(RLX_DTYPE_F32, 1, wd, -2, 2)),
                                bo_const(c, bo_rand(RLX_DTYPE_F32, 1, wd, -1, 1)) };
        rlx_attr at[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_output(c, bo_node(c, "LayerNormalization", 3, ins2, 1, 2, at));
        if (i == 2)
            bo_desc(c, "Add a[2,3,64] in [1e38, 2.5e38) with a[., ., 0] = -2.5e38, b in [-5e37, 5e37) -> "
                       "LayerNormalization(-1) (huge values, deviations beyond f32)");
        else
            bo_desc(c, "Add a[2,3,%lld] b[2,3,%lld] in [-%g, %g] -> LayerNormalization(-1) (huge values)",
                    (long long)ad[2], (long long)ad[2], 4 * m, 6 * m);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ elementwise chains */

/* The numpy broadcast of shapes a and b (they broadcast). */
static bo_shape bshape(const bo_shape *a, const bo_shape *b) {
    bo_shape r;
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int d = 0; d < r.rank; d++) {
        int da = d - (r.rank - a->rank), db = d - (r.rank - b->rank);
        int64_t x = da >= 0 ? a->d[da] : 1, y = db >= 0 ? b->d[db] : 1;
        r.d[d] = x == 1 ? y : x;
    }
    return r;
}

/* Whether op (of the chain generator's lists) is cheap in fuse_elementwise's
 * sense (RLX_EW_CHEAP: recomputed for every element of a larger output). */
static bool cheap_op(const char *op) {
    static const char *const k_cheap[] = { "Neg", "Abs", "Floor", "Relu", "Sign", "HardSwish", "Add", "Sub",
                                           "Mul", "Max", "Min", "Sum", "Mean" };
    for (size_t i = 0; i < BO_LEN(k_cheap); i++)
        if (!strcmp(op, k_cheap[i])) return true;
    return false;
}

static void gen_fused_elementwise(bo_ctx *ctx, const void *arg) {
    static const char *const k_un[] = { "Neg", "Abs", "Exp", "Sqrt", "Floor", "Erf", "Sin", "Tanh", "Sigmoid", "Relu",
                                        "Softplus", "Softsign", "Sign", "Round", "HardSwish", "Reciprocal", "Log" };
    static const char *const k_bin[] = { "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow" };
    static const char *const k_cheap_un[] = { "Neg", "Abs", "Floor", "Relu", "Sign", "HardSwish" };
    static const char *const k_cheap_bin[] = { "Add", "Sub", "Mul", "Max", "Min" };
    static const char *const k_var[] = { "Sum", "Max", "Min", "Mean" }; /* variadic: 1 or 3 inputs */
    int n = bo_full(ctx) ? 120 : 20;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.FusedElementwise";
        bo_shape out, ins[8];
        int n_in = 1 + (int)bo_rand_below(i % 4 == 3 ? 7 : 4); /* up to 7 tensor inputs */
        bo_broadcast(1 + (int)bo_rand_below(5), n_in, &out, ins);
        if (i % 6 == 5) { /* a row past a workgroup */
            out.d[out.rank - 1] = 300;
            for (int j = 0; j < n_in; j++)
                if (ins[j].rank && (ins[j].d[ins[j].rank - 1] != 1 || j == 0)) ins[j].d[ins[j].rank - 1] = 300;
            if (ins[0].rank < out.rank) ins[0] = out;
        }
        bo_desc(c, "chain:");
        const char *vals[16];
        bo_shape vs[16];
        int nv = 0;
        for (int j = 0; j < n_in; j++) {
            rlx_tensor *t = bo_rand(RLX_DTYPE_F32, ins[j].rank, ins[j].d, 0.2, 2); /* positive: Sqrt, Log, Pow */
            vs[nv] = ins[j];
            vals[nv++] = j % 3 == 2 ? bo_const(c, t) : bo_input(c, t);
            char sb[96];
            bo_desc(c, " in%s", bo_shape_str(ins[j].rank, ins[j].d, sb, 96));
        }
        /* a program: a unary op on the first input, then binary ops folding in the others,
         * unary ops in between, a scalar constant, and a Where. The values smaller than
         * the output (before the last inputs are folded in): a cheap op there joins the
         * output's group (fuse_elementwise recomputes it per output element); an
         * expensive one stays out by design, so it is replaced by a cheap one, or (every
         * third case) kept and followed by a Neg (cheap), which joins: the plan always
         * has a fused node */
        const char *acc = vals[0];
        bo_shape as = vs[0];
        int64_t n_out = bo_numel(&out);
        int steps = 2 + (int)bo_rand_below(5);
        for (int s = 0; s < steps || nv > 1; s++) {
            bool small = false;
            const char *op;
            if (nv > 1 && (s % 2 || s >= steps)) {
                size_t pick = bo_rand_below(BO_LEN(k_bin) + 2);
                bool var = pick >= BO_LEN(k_bin);
                op = var ? k_var[(pick + (size_t)s) % BO_LEN(k_var)] : k_bin[pick];
                bo_shape rs = bshape(&as, &vs[nv - 1]);
                if (var && nv > 2) rs = bshape(&rs, &vs[nv - 2]);
                small = bo_numel(&rs) < n_out;
                if (small && !cheap_op(op) && i % 3) op = k_cheap_bin[pick % BO_LEN(k_cheap_bin)];
                if (!strcmp(op, "Pow") || !strcmp(op, "Div")) { /* keep them finite: positive operands */
                    const char *ab = bo_node(c, "Abs", 1, &acc, 1, 0, NULL);
                    const char *ins2[2] = { ab, bo_const(c, bo_scalar(RLX_DTYPE_F32, 0.25)) };
                    acc = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
                }
                const char *ins3[3] = { acc, vals[--nv], NULL };
                int k = 2;
                if (var && nv > 1) ins3[k++] = vals[--nv]; /* three inputs */
                acc = bo_node(c, op, k, ins3, 1, 0, NULL);
                as = rs;
                bo_desc(c, " %s%s", op, k == 3 ? "(3)" : "");
            } else {
                size_t pick = bo_rand_below(BO_LEN(k_un) + 1);
                bool var = pick == BO_LEN(k_un); /* a variadic op of one input: a copy */
                op = var ? k_var[(size_t)s % BO_LEN(k_var)] : k_un[pick];
                small = bo_numel(&as) < n_out;
                if (small && !cheap_op(op) && i % 3) op = k_cheap_un[pick % BO_LEN(k_cheap_un)];
                if (!strcmp(op, "Sqrt") || !strcmp(op, "Log") || !strcmp(op, "Reciprocal")) {
                    const char *ab = bo_node(c, "Abs", 1, &acc, 1, 0, NULL);
                    const char *ins2[2] = { ab, bo_const(c, bo_scalar(RLX_DTYPE_F32, 0.5)) };
                    acc = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
                }
                if (!strcmp(op, "Exp")) { /* bounded */
                    acc = bo_node(c, "Tanh", 1, &acc, 1, 0, NULL);
                }
                acc = bo_node(c, op, 1, &acc, 1, 0, NULL);
                bo_desc(c, " %s%s", op, var ? "(1)" : "");
            }
            if (small) bo_desc(c, "[small]");
            if (small && !cheap_op(op)) { /* kept (see above) */
                acc = bo_node(c, "Neg", 1, &acc, 1, 0, NULL);
                bo_desc(c, " Neg");
            }
        }
        if (i % 5 == 2) { /* Where with a bool condition from outside (one byte per element on the GPU) */
            const char *neg = bo_node(c, "Neg", 1, &acc, 1, 0, NULL);
            bo_shape cs = out; /* the condition's shape: the output's, or broadcast (a 1 inside, a row) */
            if (i % 3 == 1 && cs.rank > 1) cs.d[cs.rank - 2] = 1;
            if (i % 3 == 2) cs.rank = 1, cs.d[0] = out.d[out.rank - 1];
            const char *ins3[3] = { bo_input(c, bo_rand_int(RLX_DTYPE_BOOL, cs.rank, cs.d, 0, 1)), acc, neg };
            acc = bo_node(c, "Where", 3, ins3, 1, 0, NULL);
            char sb[96];
            bo_desc(c, " Where(bool%s)", bo_shape_str(cs.rank, cs.d, sb, 96));
        }
        if (steps < 2) acc = bo_node(c, "Relu", 1, &acc, 1, 0, NULL);
        bo_output(c, acc);
        bo_run(ctx, c);
    }
    /* chains of selects on special values (bo_specials): Max, Min, Clip
     * with bounds +-0, Relu, Neg; fused (the generated chain kernel, the
     * CPU's chain) and unfused, f32 and f16, compared value for value */
    for (int t = 0; t < 3; t++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.FusedElementwise";
        c->flags |= BO_SAME_VALUE;
        rlx_dtype dt = t == 2 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t d[2] = { 6, 35 };
        rlx_tensor *in[3];
        for (int j = 0; j < 3; j++) {
            in[j] = bo_rand(dt, 2, d, -2, 2);
            bo_specials(in[j], j == 0 ? 35 : j == 1 ? 5 : 7);
        }
        const char *ins[2] = { bo_input(c, in[0]), bo_input(c, in[1]) };
        const char *acc = bo_node(c, t == 1 ? "Min" : "Max", 2, ins, 1, 0, NULL);
        const char *cl[3] = { acc, bo_const(c, bo_scalar(dt, t == 1 ? 0.0 : -0.0)), bo_const(c, bo_scalar(dt, 1.5)) };
        acc = bo_node(c, "Clip", 3, cl, 1, 0, NULL);
        const char *ins2[2] = { acc, bo_input(c, in[2]) };
        acc = bo_node(c, t == 1 ? "Max" : "Min", 2, ins2, 1, 0, NULL);
        acc = bo_node(c, "Neg", 1, &acc, 1, 0, NULL);
        acc = bo_node(c, "Relu", 1, &acc, 1, 0, NULL);
        bo_output(c, acc);
        bo_desc(c, "chain %s x[6,35] special values: %s(a, b) Clip(%s, 1.5) %s(., c) Neg Relu", rlx_dtype_name(dt),
                t == 1 ? "Min" : "Max", t == 1 ? "+0" : "-0", t == 1 ? "Max" : "Min");
        bo_run(ctx, c);
    }

    /* fixed cases (quick and full): cheap ops on values smaller than the
     * output, which broadcast into it, join its group (fuse_elementwise
     * recomputes them per element); an expensive one (Sigmoid) stays out;
     * Sum, Max, Min and Mean of 1, 2, 3 and 4 inputs as left folds */
    for (int t = 0; t < 7; t++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.FusedElementwise";
        rlx_dtype dt = t == 6 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        if (dt == RLX_DTYPE_F16) /* the fused chain keeps f32 intermediates; the unfused oracle rounds each op (f16 ops' CHAIN16) */
            c->rtol = 4e-3, c->atol = 1e-3;
        int64_t a[4] = { 5, 1, 5, 3 }, b[4] = { 1, 3, 5, 3 }, d3[3] = { 2, 3, 4 }, d2[2] = { 3, 1 }, d1[1] = { 4 };
        const char *acc = NULL;
        if (t == 0) { /* the regression: HardSwish on x[5,1,5,3], then Max into [5,3,5,3] */
            const char *x = bo_input(c, bo_rand(dt, 4, a, -2, 2));
            const char *ins[2] = { bo_node(c, "HardSwish", 1, &x, 1, 0, NULL), bo_input(c, bo_rand(dt, 4, b, -2, 2)) };
            acc = bo_node(c, "Max", 2, ins, 1, 0, NULL);
            bo_desc(c, "chain: in[5,1,5,3] HardSwish, Max with in[1,3,5,3]");
        } else if (t == 1) { /* Abs, Sub of a constant row, Clip on [3,1]; Mul into [2,3,4]; Relu */
            const char *x = bo_input(c, bo_rand(dt, 2, d2, -2, 2));
            x = bo_node(c, "Abs", 1, &x, 1, 0, NULL);
            const char *sub[2] = { x, bo_const(c, bo_rand(dt, 1, (const int64_t[]){ 1 }, -1, 1)) };
            x = bo_node(c, "Sub", 2, sub, 1, 0, NULL);
            const char *cl[3] = { x, bo_const(c, bo_scalar(dt, -0.25)), bo_const(c, bo_scalar(dt, 1.0)) };
            x = bo_node(c, "Clip", 3, cl, 1, 0, NULL);
            const char *mul[2] = { bo_input(c, bo_rand(dt, 3, d3, -2, 2)), x };
            acc = bo_node(c, "Mul", 2, mul, 1, 0, NULL);
            acc = bo_node(c, "Relu", 1, &acc, 1, 0, NULL);
            bo_desc(c, "chain: in[3,1] Abs Sub[1] Clip, Mul with in[2,3,4], Relu");
        } else if (t == 2) { /* Sigmoid on [3,1] stays out; Mul into [2,3,4], Neg fused */
            const char *x = bo_input(c, bo_rand(dt, 2, d2, -2, 2));
            const char *mul[2] = { bo_node(c, "Sigmoid", 1, &x, 1, 0, NULL), bo_input(c, bo_rand(dt, 3, d3, -2, 2)) };
            acc = bo_node(c, "Mul", 2, mul, 1, 0, NULL);
            acc = bo_node(c, "Neg", 1, &acc, 1, 0, NULL);
            bo_desc(c, "chain: in[3,1] Sigmoid (not fused), Mul with in[2,3,4], Neg");
        } else { /* variadic ops of broadcast inputs: [2,3,4], [3,1], [4], a constant scalar */
            static const char *const k_v[] = { "Sum", "Max", "Min", "Mean" };
            const char *op = k_v[t - 3], *op2 = k_v[(t - 2) % 4];
            const char *ins[4] = { bo_input(c, bo_rand(dt, 3, d3, -2, 2)), bo_input(c, bo_rand(dt, 2, d2, -2, 2)),
                                   bo_const(c, bo_rand(dt, 1, d1, -2, 2)), bo_const(c, bo_scalar(dt, 0.5)) };
            int k = t == 4 ? 4 : 3;
            const char *one = bo_node(c, op2, 1, &ins[1], 1, 0, NULL); /* one input: a copy, on [3,1] */
            const char *v[4] = { ins[0], one, ins[2], ins[3] };
            acc = bo_node(c, op, k, v, 1, 0, NULL);
            const char *two[2] = { acc, ins[1] };
            acc = bo_node(c, t == 5 ? "Mean" : "Sum", 2, two, 1, 0, NULL);
            acc = bo_node(c, "Relu", 1, &acc, 1, 0, NULL);
            bo_desc(c, "chain %s: %s(1) of in[3,1], %s(%d) with in[2,3,4], [4]%s, %s(2) Relu", rlx_dtype_name(dt), op2, op, k,
                    k == 4 ? ", 0.5" : "", t == 5 ? "Mean" : "Sum");
        }
        bo_output(c, acc);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ QDQ fake quantization */

/* QuantizeLinear -> DequantizeLinear on an activation (fuse_qdq makes it
 * rlx.QuantizeDequantize): standalone, inside an elementwise chain, and as
 * a Conv epilogue. uint8 or int8, zero points over the whole range or
 * absent, x spread past both ends of the range (saturation), with edges
 * (inf, NaN, -0, denormals) and exact ties (k + 0.5) * scale. Power-of-two
 * scales make x / scale exact on any GPU, so those cases must match the
 * CPU's Q then DQ bit for bit (round half to even at the ties); other
 * scales may differ by one quantization step where x / scale lies within a
 * division's rounding of a tie (WGSL's division is not correctly rounded
 * everywhere), and the Conv cases by one step where the sums round
 * differently: atol is one step there. */
static void gen_qdq(bo_ctx *ctx, const void *arg) {
    (void)arg;
    int n = bo_full(ctx) ? 48 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int form = i % 3; /* 0 standalone, 1 in a chain, 2 Conv epilogue */
        bool i8 = (i / 3) % 2 == 1, pow2 = (i / 6) % 2 == 0 || form == 0, has_zp = i % 5 != 4;
        double scale = pow2 ? ldexp(1.0, -(int)rnd(2, 8)) : bo_uniform(0.003, 0.2);
        int64_t zp = has_zp ? (i8 ? rnd(-128, 127) : rnd(0, 255)) : 0;
        rlx_dtype qt = i8 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        double lo = (i8 ? -128.0 : 0.0) - (double)zp; /* lowest level less the zero point */
        double span = 300 * scale;                     /* past both ends of the 256 levels */
        const char *x;
        int64_t cin = rnd(1, 4), hw = rnd(3, 9);
        if (form == 2) {
            int64_t xd[4] = { 1, cin, hw, hw + 1 };
            x = conv(c, bo_input(c, bo_rand(RLX_DTYPE_F32, 4, xd, -2, 2)), cin, rnd(1, 5), 3, i % 2 == 0);
            c->fused = "Conv";
            bo_desc(c, "Conv x[1,%lld,%lld,%lld] ->", (long long)cin, (long long)hw, (long long)hw + 1);
        } else {
            int64_t d[3] = { rnd(1, 3), rnd(1, 9), i % 4 == 3 ? 300 : rnd(1, 40) };
            rlx_tensor *t = bo_rand(RLX_DTYPE_F32, 3, d, (lo - 20) * scale, (lo + 275) * scale);
            float *p = t->data;
            size_t ne = rlx_tensor_numel(t);
            for (size_t e = 0; e < ne; e += 3) /* exact ties: (k + 0.5) scale */
                p[e] = (float)((floor(bo_uniform(lo - 4, lo + 259)) + 0.5) * scale);
            if (i % 4 == 1) bo_edges(t, 17);
            x = bo_input(c, t);
            if (form == 1) {
                x = bo_node(c, "Tanh", 1, &x, 1, 0, NULL);
                const char *ins[2] = { x, bo_const(c, bo_scalar(RLX_DTYPE_F32, span)) };
                x = bo_node(c, "Mul", 2, ins, 1, 0, NULL);
                c->fused = "rlx.FusedElementwise";
                bo_desc(c, "Tanh * %g ->", span);
            } else {
                c->fused = "rlx.QuantizeDequantize";
            }
            char sb[64];
            bo_desc(c, "x%s", bo_shape_str(3, d, sb, sizeof sb));
        }
        const char *s = bo_const(c, bo_scalar(RLX_DTYPE_F32, scale));
        const char *z = has_zp ? bo_const(c, bo_scalar(qt, (double)zp)) : "";
        const char *qin[3] = { x, s, z };
        const char *q = bo_node(c, "QuantizeLinear", has_zp ? 3 : 2, qin, 1, 0, NULL);
        const char *dqin[3] = { q, s, z };
        const char *y = bo_node(c, "DequantizeLinear", has_zp ? 3 : 2, dqin, 1, 0, NULL);
        if (form == 1) {
            const char *ins[2] = { y, bo_const(c, bo_scalar(RLX_DTYPE_F32, 0.5)) };
            y = bo_node(c, "Add", 2, ins, 1, 0, NULL);
        }
        bo_output(c, y);
        bo_desc(c, " Q -> DQ %s scale %g%s zp %lld%s", i8 ? "int8" : "uint8", scale, pow2 ? " (2^k)" : "",
                (long long)zp, has_zp ? "" : " (absent)");
        c->rtol = 0;
        c->atol = pow2 && form != 2 ? 0 : scale * 1.0001;
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ QDQ chains */

/* fuse:qdq_ew (passes/fuse_qdq_ew.c, on GPU plans too: the generated
 * FusedElementwise kernel reads the 8-bit inputs and writes the 8-bit
 * output itself, lower_internal.c): DequantizeLinear of one to three
 * 8-bit inputs (u8 or i8, each its own per-tensor scale and zero point,
 * broadcast shapes, an odd element count for the last word) -> Add, Sub,
 * Mul, Max or Min folding them in -> Relu or Clip (every eighth case
 * neither: one op alone) -> (a third of the
 * cases) a QuantizeLinear -> DequantizeLinear pair -> QuantizeLinear (u8
 * or i8: one word of four levels per invocation), or (a quarter) the f32
 * output. Exact: the chain's constants, scales and zero points are Params
 * words (lower_internal.c), which no shader compiler folds into the
 * arithmetic (with literals lavapipe's moved levels: the eighteenth
 * session's tester). */
static void gen_qdq_ew(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const char *const k_bin[] = { "Add", "Sub", "Mul", "Max", "Min" };
    int n = bo_full(ctx) ? 40 : 8;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.FusedElementwise";
        bool qout = i % 4 != 3;
        int n_in = 1 + (i + 1) % 3;
        bo_shape out, ins[3];
        bo_broadcast(1 + (int)bo_rand_below(4), n_in, &out, ins);
        if (i % 2) out.d[out.rank - 1] = ins[0].d[ins[0].rank - 1] = 7 + 2 * (int64_t)bo_rand_below(20); /* odd */
        for (int j = 1; j < n_in; j++) /* the others broadcast to ins[0]'s */
            for (int d = 0; d < ins[j].rank; d++)
                if (ins[j].d[d] != 1) ins[j].d[d] = ins[0].d[ins[0].rank - ins[j].rank + d];
        bo_desc(c, "QDQ chain:");
        const char *acc = NULL;
        for (int j = 0; j < n_in; j++) {
            bool i8 = (i + j) % 2;
            rlx_dtype qt = i8 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            const char *x = bo_input(c, bo_rand_int(qt, ins[j].rank, ins[j].d, i8 ? -128 : 0, i8 ? 127 : 255));
            const char *dq[3] = { x, bo_const(c, bo_scalar(RLX_DTYPE_F32, bo_uniform(0.005, 0.1))),
                                  bo_const(c, bo_scalar(qt, (double)(i8 ? rnd(-20, 20) : rnd(100, 150)))) };
            const char *v = bo_node(c, "DequantizeLinear", 3, dq, 1, 0, NULL);
            char sb[96];
            bo_desc(c, " DQ(%s%s)", i8 ? "i8" : "u8", bo_shape_str(ins[j].rank, ins[j].d, sb, sizeof sb));
            if (!acc) {
                acc = v;
                continue;
            }
            const char *op = k_bin[bo_rand_below(BO_LEN(k_bin))];
            const char *two[2] = { acc, v };
            acc = bo_node(c, op, 2, two, 1, 0, NULL);
            bo_desc(c, " %s", op);
        }
        /* every eighth case one op alone (a QDQ ResNet's residual Add, its
         * Relu in the Q): fuse_elementwise makes it a chain of one for
         * fuse_qdq_ew */
        bool lone = i % 8 == 0;
        if (lone) {
            bo_desc(c, " (one op)");
        } else if (i % 2) {
            acc = bo_node(c, "Relu", 1, &acc, 1, 0, NULL);
            bo_desc(c, " Relu");
        } else {
            const char *cl[3] = { acc, bo_const(c, bo_scalar(RLX_DTYPE_F32, -0.75)), bo_const(c, bo_scalar(RLX_DTYPE_F32, 1.5)) };
            acc = bo_node(c, "Clip", 3, cl, 1, 0, NULL);
            bo_desc(c, " Clip");
        }
        if (n_in == 1) { /* a chain of two ops at least (of one: the Neg alone) */
            acc = bo_node(c, "Neg", 1, &acc, 1, 0, NULL);
            bo_desc(c, " Neg");
        }
        if (i % 3 == 1) { /* an inner pair (rlx.QuantizeDequantize in the chain) */
            const char *s = bo_const(c, bo_scalar(RLX_DTYPE_F32, 0.02)), *z = bo_const(c, bo_scalar(RLX_DTYPE_U8, 128));
            const char *qi[3] = { acc, s, z };
            const char *q = bo_node(c, "QuantizeLinear", 3, qi, 1, 0, NULL);
            const char *di[3] = { q, s, z };
            acc = bo_node(c, "DequantizeLinear", 3, di, 1, 0, NULL);
            bo_desc(c, " Q->DQ");
        }
        if (qout) {
            bool i8 = i % 3 == 2;
            rlx_dtype qt = i8 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            const char *qi[3] = { acc, bo_const(c, bo_scalar(RLX_DTYPE_F32, bo_uniform(0.004, 0.03))),
                                  bo_const(c, bo_scalar(qt, i8 ? (double)rnd(-10, 10) : (double)rnd(0, 140))) };
            acc = bo_node(c, "QuantizeLinear", 3, qi, 1, 0, NULL);
            bo_desc(c, " Q(%s)", i8 ? "i8" : "u8");
            c->rtol = 0, c->atol = 0;
        } else {
            bo_desc(c, " (f32 out)");
            c->rtol = 0, c->atol = 0;
        }
        bo_output(c, acc);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ CSE */

static void gen_cse(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 10 : 3;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "fuse:cse";
        bo_shape s = { 2, { rnd(1, 9), rnd(1, 40) } };
        const char *x = bo_input(c, bo_rand(RLX_DTYPE_F32, 2, s.d, -2, 2));
        rlx_attr ax = RLX_ATTR_I("axis", -1);
        const char *a = bo_node(c, "Softmax", 1, &x, 1, 1, &ax), *b = bo_node(c, "Softmax", 1, &x, 1, 1, &ax);
        const char *ins[2] = { a, bo_node(c, "Transpose", 1, &b, 1, 0, NULL) };
        bo_output(c, bo_node(c, "MatMul", 2, ins, 1, 0, NULL));
        bo_desc(c, "two equal Softmax(x[%lld,%lld]) -> MatMul(a, b^T)", (long long)s.d[0], (long long)s.d[1]);
        c->atol *= sqrt((double)s.d[1]);
        bo_run(ctx, c);
    }
}

static const bo_op k_ops[] = {
    { "fuse:activation", gen_fuse_activation, NULL, 1e-5, 1e-5,
      "the activation as an epilogue (act.wgsl) rounds like the op: transcendental ones a few ULP" },
    { "fuse:conv_residual", gen_fuse_conv_residual, NULL, 1e-5, 2e-6, "convolution sums (see Conv)" },
    { "fuse:conv_affine", gen_fold_conv_affine, NULL, 1e-4, 1e-5, "the affine map folded into the weights: rounding" },
    { "rlx.AddLayerNormalization", gen_add_layernorm, NULL, 1e-4, 1e-5, "a mean and variance in another order" },
    { "rlx.FusedElementwise", gen_fused_elementwise, NULL, 1e-4, 1e-5,
      "transcendental built-ins (see the unary ops) chained" },
    { "fuse:cse", gen_cse, NULL, 1e-5, 1e-6, "softmax and K products" },
    { "fuse:qdq_ew", gen_qdq_ew, NULL, 0, 0,
      "exact: the DequantizeLinear, chain and QuantizeLinear arithmetic of the CPU, constants as Params words" },
    { "rlx.QuantizeDequantize", gen_qdq, NULL, 0, 0,
      "exact with power-of-two scales (ties, saturation, NaN); one quantization step with other scales (a division "
      "near a tie) and after a Conv (its sums)" },
};

const bo_family bo_family_fusion = { "fusion", k_ops, BO_LEN(k_ops) };
