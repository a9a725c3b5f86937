/* The f16 axis of the harness: the elementwise, logic, data-movement,
 * Softmax/LayerNorm, FusedElementwise and Attention lowerings on binary16 tensors,
 * and the epilogue fusions (Conv/Gemm/MatMul + activation or bias, Conv +
 * residual, BatchNormalization folded, Add + LayerNormalization)
 * (f16 instances of the kernels, shader-f16; Cast and the comparisons read
 * packed halves). The oracle is the CPU backend, which computes each op in
 * f32 (or f64) and rounds once to binary16, as the GPU kernels do: so data
 * movement, selects, comparisons and casts are exact, and arithmetic is
 * allowed one binary16 ulp (relative 2^-10) of difference where the f32
 * results differ in their last bits (built-ins) and round to neighbouring
 * halves. Shapes with odd counts put f16 windows at odd element offsets
 * (Slice starts, Concat slabs, Split outputs): two-byte offsets inside a
 * binding. */
#include <math.h>
#include <string.h>

#include "harness.h"

#define F16 RLX_DTYPE_F16
/* Tolerances in binary16 ulps: 2^-10 relative is one ulp at the top of a
 * binade; the absolute part covers results near 0 (built-ins' absolute
 * error, and subnormal halves). */
#define EXACT16 0, 0, "f16 data moved, selected, compared or converted: the same bits"
#define ULP16 9.8e-4, 1e-5, "f32 arithmetic rounded once to binary16 on both sides: 1 f16 ulp where the f32 results differ"
#define ROWS16 2e-3, 1e-4, "row statistics in f32 (the CPU: f64), rounded to binary16: 2 f16 ulps"
#define ADDLN16 2e-3, 4e-3, \
    "the unfused oracle rounds the sum to binary16 (inputs up to 3: an ulp of 2e-3), which moves the normalised row by that"
#define CHAIN16 4e-3, 1e-3, \
    "a fused f16 chain keeps f32 intermediates; the unfused oracle rounds each op to binary16: a few f16 ulps"

static const bo_shape k_shapes[] = { { 0, { 0 } }, { 1, { 1 } }, { 1, { 7 } }, { 2, { 3, 5 } }, { 3, { 2, 9, 33 } },
                                     { 4, { 2, 3, 1, 5 } }, { 1, { 301 } } };

/* Unary functions of the vocabulary on f16. */
static void gen_unary16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    bool pos = strcmp(op, "Sqrt") == 0 || strcmp(op, "Log") == 0;
    for (size_t i = 0; i < BO_LEN(k_shapes); i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        char sb[64];
        rlx_tensor *x = bo_rand(F16, k_shapes[i].rank, k_shapes[i].d, pos ? 0.01 : -4, 4);
        bo_desc(c, "%s f16 x%s", op, bo_shape_str(k_shapes[i].rank, k_shapes[i].d, sb, sizeof sb));
        bo_single(c, op, 1, &x, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
    /* the clamps (Relu, HardSigmoid, HardSwish) on special values: NaN
     * stays NaN as in f32 (the CPU's f16 path, through the double
     * reference, once gave HardSigmoid(NaN) = 1), -0 stays -0 in Relu */
    if (strcmp(op, "Relu") && strcmp(op, "HardSigmoid") && strcmp(op, "HardSwish")) return;
    bo_case *c = bo_next(ctx, 17);
    if (!c) return;
    int64_t d[2] = { 8, 37 };
    rlx_tensor *x = bo_rand(F16, 2, d, -4, 4);
    bo_specials(x, 37);
    if (!strcmp(op, "Relu")) c->flags |= BO_SAME_VALUE;
    bo_desc(c, "%s f16 x[8,37] special values", op);
    bo_single(c, op, 1, &x, NULL, 1, 0, NULL);
    bo_run(ctx, c);
}

/* Binary arithmetic on f16 with broadcasting (Pow on positive bases). */
static void gen_binary16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    bool pow = strcmp(op, "Pow") == 0;
    for (int k = 0; k < 6; k++) {
        bo_case *c = bo_next(ctx, 14);
        if (!c) continue;
        bo_shape out, in[2];
        bo_broadcast(1 + k % 4, 2, &out, in);
        rlx_tensor *t[2] = { bo_rand(F16, in[0].rank, in[0].d, pow ? 0.5 : -3, 3),
                             bo_rand(F16, in[1].rank, in[1].d, pow ? -2 : -3, pow ? 2 : 3) };
        char s0[64], s1[64];
        bo_desc(c, "%s f16 a%s b%s", op, bo_shape_str(in[0].rank, in[0].d, s0, sizeof s0),
                bo_shape_str(in[1].rank, in[1].d, s1, sizeof s1));
        bo_single(c, op, 2, t, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* Cast to and from f16: f32, i32, i64, bool sources and targets, odd counts
 * (a packed output's last word is half padding). */
static void gen_cast16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const rlx_dtype k_other[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };
    for (size_t o = 0; o < BO_LEN(k_other); o++)
        for (int dir = 0; dir < 2; dir++)
            for (int s = 2; s < 5; s++) {
                bo_case *c = bo_next(ctx, 19);
                if (!c) continue;
                const bo_shape *sh = &k_shapes[s == 4 ? 6 : s];
                rlx_dtype from = dir ? F16 : k_other[o], to = dir ? k_other[o] : F16;
                /* halves to integers: whole values in range; f32 beyond 65504 is left out (WGSL leaves
                 * the overflow of a conversion to the implementation) */
                rlx_tensor *x = from == F16 && to != RLX_DTYPE_F32 && to != RLX_DTYPE_BOOL
                                    ? bo_rand(F16, sh->rank, sh->d, -300, 300)
                                    : bo_rand_any(from, sh, -1000, 1000);
                rlx_attr a = RLX_ATTR_I("to", (int64_t)to);
                char sb[64];
                bo_desc(c, "Cast %s -> %s x%s", dir ? "f16" : "other", dir ? "other" : "f16",
                        bo_shape_str(sh->rank, sh->d, sb, sizeof sb));
                bo_desc(c, " (dtype %d -> %d)", (int)from, (int)to);
                bo_single(c, "Cast", 1, &x, NULL, 1, 1, &a);
                bo_run(ctx, c);
            }
}

/* Data movement on f16: windows at odd element offsets. */
static void gen_move16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    for (int k = 0; k < 3; k++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        int64_t d[3] = { 2 + k, 3, 5 + 2 * k }; /* odd inner extents */
        rlx_tensor *x = bo_rand(F16, 3, d, -100, 100);
        bo_desc(c, "%s f16 x[%lld,3,%lld] variant %d", op, (long long)d[0], (long long)d[2], k);
        if (strcmp(op, "Transpose") == 0) {
            static const int64_t perms[3][3] = { { 2, 0, 1 }, { 0, 2, 1 }, { 1, 2, 0 } };
            rlx_attr a = RLX_ATTR_IS("perm", 3, perms[k]);
            bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        } else if (strcmp(op, "Slice") == 0) { /* odd starts, a negative step */
            int64_t st[2] = { 1, k == 2 ? -2 : 1 }, en[2] = { 3, k == 2 ? -100 : 4 }, ax[2] = { 1, 2 },
                    sp[2] = { 1, k == 2 ? -1 : 2 };
            rlx_tensor *in[5] = { x, bo_i64s(2, st), bo_i64s(2, en), bo_i64s(2, ax), bo_i64s(2, sp) };
            bool kk[5] = { false, true, true, true, true };
            bo_single(c, op, 5, in, kk, 1, 0, NULL);
        } else if (strcmp(op, "Concat") == 0) { /* slabs at odd offsets along the last axis */
            int64_t d2[3] = { d[0], 3, 1 + 2 * k };
            rlx_tensor *in[3] = { x, bo_rand(F16, 3, d2, -100, 100), bo_rand(F16, 3, d, -100, 100) };
            rlx_attr a = RLX_ATTR_I("axis", 2);
            bo_single(c, op, 3, in, NULL, 1, 1, &a);
        } else if (strcmp(op, "Split") == 0) {
            int64_t sz[2] = { 1 + k, d[2] - 1 - k };
            rlx_tensor *in[2] = { x, bo_i64s(2, sz) };
            bool kk[2] = { false, true };
            rlx_attr a = RLX_ATTR_I("axis", 2);
            bo_single(c, op, 2, in, kk, 2, 1, &a);
        } else if (strcmp(op, "Expand") == 0) {
            int64_t sh[4] = { 3, d[0], 3, d[2] };
            rlx_tensor *in[2] = { x, bo_i64s(4, sh) };
            bool kk[2] = { false, true };
            bo_single(c, op, 2, in, kk, 1, 0, NULL);
        } else if (strcmp(op, "Pad") == 0) { /* a constant value, odd pads */
            int64_t pads[6] = { 0, 1, 1, 1, 0, 2 };
            rlx_tensor *in[3] = { x, bo_i64s(6, pads), bo_scalar(F16, 2.5) };
            bool kk[3] = { false, true, true };
            bo_single(c, op, 3, in, kk, 1, 0, NULL);
        } else if (strcmp(op, "Gather") == 0) {
            int64_t idx[4] = { 2, 0, -1, 1 };
            rlx_tensor *in[2] = { x, bo_i64s(4, idx) };
            bool kk[2] = { false, k == 0 };
            rlx_attr a = RLX_ATTR_I("axis", k == 0 ? 1 : 2);
            bo_single(c, op, 2, in, kk, 1, 1, &a);
        } else if (strcmp(op, "GatherElements") == 0) {
            int64_t id[3] = { d[0], 2, d[2] };
            rlx_tensor *in[2] = { x, bo_rand_int(RLX_DTYPE_I64, 3, id, -3, 2) };
            rlx_attr a = RLX_ATTR_I("axis", 1);
            bo_single(c, op, 2, in, NULL, 1, 1, &a);
        } else if (strcmp(op, "GatherND") == 0) { /* slices of d[2] (odd) halves */
            int64_t id[2] = { 3, 2 }, iv[6] = { 0, 1, 1, 2, d[0] - 1, 0 };
            rlx_tensor *in[2] = { x, bo_tensor(RLX_DTYPE_I64, 2, id, iv) };
            bo_single(c, op, 2, in, NULL, 1, 0, NULL);
        } else if (strcmp(op, "CumSum") == 0) {
            int64_t ax = k;
            rlx_tensor *in[2] = { x, bo_scalar(RLX_DTYPE_I64, (double)ax) };
            bool kk[2] = { false, true };
            rlx_attr a = RLX_ATTR_I("reverse", k == 1);
            bo_single(c, op, 2, in, kk, 1, 1, &a);
        } else { /* Tile */
            int64_t rep[3] = { 1, 2, 3 };
            rlx_tensor *in[2] = { x, bo_i64s(3, rep) };
            bool kk[2] = { false, true };
            bo_single(c, op, 2, in, kk, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

/* Resize of f16 NCHW images: nearest (the halves moved) and linear (f32
 * blend, one rounding). */
static void gen_resize16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const char *const k_modes[3] = { "nearest", "linear", "cubic" };
    for (int k = 0; k < 3; k++) {
        bo_case *c = bo_next(ctx, 19);
        if (!c) continue;
        int64_t d[4] = { 1, 3, 5, 7 };
        float sc[4] = { 1, 1, 2, 1.5f };
        int64_t four = 4;
        rlx_tensor *in[3] = { bo_rand(F16, 4, d, -8, 8), NULL, bo_tensor(RLX_DTYPE_F32, 1, &four, sc) };
        bool kk[3] = { false, true, true };
        rlx_attr a = RLX_ATTR_S("mode", k_modes[k]);
        bo_desc(c, "Resize f16 x[1,3,5,7] scales [1,1,2,1.5] %s", k_modes[k]);
        bo_single(c, "Resize", 3, in, kk, 1, 1, &a);
        bo_run(ctx, c);
    }
}

/* Comparisons and Where on f16 (broadcast). */
static void gen_logic16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    bool where = strcmp(op, "Where") == 0;
    for (int k = 0; k < 4; k++) {
        bo_case *c = bo_next(ctx, 16);
        if (!c) continue;
        bo_shape out, in[3];
        bo_broadcast(1 + k, where ? 3 : 2, &out, in);
        /* few distinct values, so equal halves occur */
        if (where) {
            rlx_tensor *t[3] = { bo_rand_int(RLX_DTYPE_BOOL, in[0].rank, in[0].d, 0, 1),
                                 bo_rand(F16, in[1].rank, in[1].d, -9, 9), bo_rand(F16, in[2].rank, in[2].d, -9, 9) };
            bo_single(c, op, 3, t, NULL, 1, 0, NULL);
        } else {
            rlx_tensor *t[2] = { bo_rand_any(F16, &in[0], -2, 2), bo_rand_any(F16, &in[1], -2, 2) };
            for (int j = 0; j < 2; j++) /* round to quarters: ties between a and b */
                for (int64_t e = 0; e < bo_numel(&in[j]); e++) {
                    uint16_t *h = t[j]->data;
                    h[e] = (uint16_t)(h[e] & 0xff00u);
                }
            bo_single(c, op, 2, t, NULL, 1, 0, NULL);
        }
        bo_desc(c, "%s f16 rank %d", op, out.rank);
        bo_run(ctx, c);
    }
}

/* IsNaN and IsInf of f16 with NaN, +-inf, +-65504 and subnormal halves. */
static void gen_isx16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    static const uint16_t k_edges[] = { 0x7e00, 0x7c00, 0xfc00, 0x7bff, 0xfbff, 0x0001, 0x8000, 0x7c01 };
    for (int k = 0; k < 2; k++) {
        bo_case *c = bo_next(ctx, 20);
        if (!c) continue;
        int64_t n = k ? 301 : 9;
        rlx_tensor *x = bo_rand(F16, 1, &n, -9, 9);
        uint16_t *h = x->data;
        for (int64_t i = 0; i < n; i += 3) h[i] = k_edges[(size_t)(i / 3) % BO_LEN(k_edges)];
        bo_desc(c, "%s f16 x[%lld] with NaN, +-inf, +-65504, subnormals", op, (long long)n);
        bo_single(c, op, 1, &x, NULL, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* Softmax, LogSoftmax, LayerNormalization on f16 rows (f32 statistics). */
static void gen_rows16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    bool ln = strcmp(op, "LayerNormalization") == 0;
    /* the last two: a single element, and 3 rows of 16,411 (LayerNormalization: split into chunks,
     * norm_split.wgsl; softmax: a workgroup of 256 per row reading vec4<f16> words) */
    static const int64_t k_dims[6][3] = { { 2, 3, 7 }, { 1, 5, 300 }, { 4, 1, 33 }, { 3, 17, 9 }, { 1, 1, 1 },
                                          { 1, 3, 16411 } };
    for (int k = 0; k < 6; k++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        rlx_tensor *x = bo_rand(F16, 3, k_dims[k], -6, 6);
        int64_t axis = k == 3 ? 1 : -1;
        bo_desc(c, "%s f16 x[%lld,%lld,%lld] axis %lld", op, (long long)k_dims[k][0], (long long)k_dims[k][1],
                (long long)k_dims[k][2], (long long)axis);
        rlx_attr a = RLX_ATTR_I("axis", axis);
        if (ln) {
            int r = axis == 1 ? 2 : 1;
            const int64_t *pd = &k_dims[k][3 - r];
            rlx_tensor *in[3] = { x, bo_rand(F16, r, pd, 0.5, 2), bo_rand(F16, r, pd, -1, 1) };
            bool kk[3] = { false, true, k % 2 == 0 };
            bo_single(c, op, k == 2 ? 2 : 3, in, kk, 1, 1, &a);
        } else {
            bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        }
        bo_run(ctx, c);
    }
}

/* Reductions of f16 (f32 accumulation, one rounding of the result; ArgMax
 * gives i64): rows long enough for the workgroup tree and the split into
 * chunks, strided axes, odd counts. */
static void gen_reduce16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const char *op = bo_op_name(ctx);
    bool arg_op = strcmp(op, "ArgMax") == 0;
    static const int64_t k_dims[4][3] = { { 2, 3, 7 }, { 1, 5, 301 }, { 3, 17, 9 }, { 1, 1, 20001 } };
    for (int k = 0; k < 4; k++) {
        bo_case *c = bo_next(ctx, arg_op ? 13 : 18);
        if (!c) continue;
        rlx_tensor *x = bo_rand(F16, 3, k_dims[k], -4, 4);
        int64_t axis = k == 2 ? 1 : -1;
        bo_desc(c, "%s f16 x[%lld,%lld,%lld] axis %lld", op, (long long)k_dims[k][0], (long long)k_dims[k][1],
                (long long)k_dims[k][2], (long long)axis);
        if (arg_op) {
            rlx_attr a = RLX_ATTR_I("axis", axis);
            bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        } else {
            rlx_tensor *in[2] = { x, bo_i64s(1, &axis) };
            bool kk[2] = { false, true };
            bo_single(c, op, 2, in, kk, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

/* A fused f16 chain (Mul, Add, Tanh, Sub with broadcasting) and a
 * mixed-precision one (f32 -> Cast f16 -> ops -> Cast f32): one
 * rlx.FusedElementwise on the GPU. */
static void gen_chain16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (int k = 0; k < 4; k++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        bool mixed = k >= 2;
        int64_t d[2] = { 3 + 2 * k, 17 }, r[1] = { 17 };
        rlx_tensor *x = bo_rand(mixed ? RLX_DTYPE_F32 : F16, 2, d, -3, 3);
        const char *xn = bo_input(c, x), *bn = bo_input(c, bo_rand(F16, 1, r, -1, 1));
        if (mixed) {
            rlx_attr to = RLX_ATTR_I("to", F16);
            xn = bo_node(c, "Cast", 1, &xn, 1, 1, &to);
        }
        const char *m_in[2] = { xn, bn };
        const char *m = bo_node(c, "Mul", 2, m_in, 1, 0, NULL);
        const char *a_in[2] = { m, xn };
        const char *a = bo_node(c, "Add", 2, a_in, 1, 0, NULL);
        const char *t = bo_node(c, "Tanh", 1, &a, 1, 0, NULL);
        const char *s_in[2] = { t, bn };
        const char *y = bo_node(c, "Sub", 2, s_in, 1, 0, NULL);
        if (mixed) {
            rlx_attr to = RLX_ATTR_I("to", RLX_DTYPE_F32);
            y = bo_node(c, "Cast", 1, &y, 1, 1, &to);
        }
        bo_output(c, y);
        c->fused = "rlx.FusedElementwise";
        bo_desc(c, "fused f16 chain Mul Add Tanh Sub x[%lld,17]%s", (long long)d[0], mixed ? " between Casts" : "");
        bo_run(ctx, c);
    }
}

/* The exporters' attention pattern on f16 (MatMul, Mul by the scale,
 * Add(mask), Softmax, MatMul; with and without the head-split Transposes):
 * one rlx.Attention on the GPU, computed in f32 and rounded once. */
static void gen_attention16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const int64_t k_dims[][4] = { /* B, H, Sq, Sk, with D below */
                                         { 1, 2, 5, 9 }, { 2, 3, 1, 17 }, { 1, 1, 33, 70 }, { 2, 2, 8, 8 } };
    static const int64_t k_d[] = { 16, 31, 64, 8 };
    for (int k = 0; k < (int)BO_LEN(k_dims); k++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        int64_t B = k_dims[k][0], H = k_dims[k][1], Sq = k_dims[k][2], Sk = k_dims[k][3], D = k_d[k];
        bool split = k % 2 == 1, mask = k != 2;
        const char *q, *kt, *v;
        if (split) { /* [B, S, H, D] -> Transpose, as exporters split heads */
            bo_heads_split(c, F16, (int64_t[5]){ B, H, Sq, Sk, D }, D, &q, &kt, &v);
        } else {
            int64_t qd[4] = { B, H, Sq, D }, kd[4] = { B, H, D, Sk }, vd[4] = { B, H, Sk, D };
            q = bo_input(c, bo_rand(F16, 4, qd, -1, 1));
            kt = bo_input(c, bo_rand(F16, 4, kd, -1, 1));
            v = bo_input(c, bo_rand(F16, 4, vd, -1, 1));
        }
        const char *qk_in[2] = { q, kt };
        const char *s = bo_node(c, "MatMul", 2, qk_in, 1, 0, NULL);
        const char *sc_in[2] = { s, bo_const(c, bo_scalar(F16, 0.25)) };
        s = bo_node(c, "Mul", 2, sc_in, 1, 0, NULL);
        if (mask) {
            int64_t md[4] = { B, 1, 1, Sk };
            const char *m_in[2] = { s, bo_input(c, bo_rand(F16, 4, md, -3, 0)) };
            s = bo_node(c, "Add", 2, m_in, 1, 0, NULL);
        }
        bo_attention_out(c, s, v, split);
        c->fused = "rlx.Attention";
        bo_desc(c, "f16 attention B=%lld H=%lld Sq=%lld Sk=%lld D=%lld%s%s", (long long)B, (long long)H, (long long)Sq,
                (long long)Sk, (long long)D, split ? " head-split transposes" : "", mask ? " mask [B,1,1,Sk]" : "");
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ f16 epilogues */

/* The epilogue fusions on f16 (fp16 models on GPU plans; README, "f16
 * models"): the fused kernel computes its chain in f32 and rounds once, the
 * unfused oracle rounds after each op, so results differ by a few f16 ulps;
 * the absolute part grows with the reduction length (bo's atol scaled by
 * sqrt(K)), as cases_fusion.c does for f32. */

/* Appends activation `which` (0 Relu, 1 Clip with f16 bounds, 2 HardSwish,
 * 3 Sigmoid, 4 the GELU erf pattern with f16 constants, 5 none) to x. */
static const char *act16(bo_case *c, int which, const char *x) {
    static const char *const k_names[] = { "Relu", "Clip", "HardSwish", "Sigmoid", "GELU pattern", "no act" };
    bo_desc(c, " + %s", k_names[which]);
    if (which == 1) {
        const char *ins[3] = { x, bo_const(c, bo_scalar(F16, 0.0)), bo_const(c, bo_scalar(F16, 6.0)) };
        return bo_node(c, "Clip", 3, ins, 1, 0, NULL);
    }
    if (which == 4) { /* x * 0.5 * (1 + erf(x / sqrt 2)), sqrt 2 as a binary16 constant */
        const char *d_in[2] = { x, bo_const(c, bo_scalar(F16, 1.4142135623730951)) };
        const char *e = bo_node(c, "Erf", 1, (const char *[]){ bo_node(c, "Div", 2, d_in, 1, 0, NULL) }, 1, 0, NULL);
        const char *a_in[2] = { e, bo_const(c, bo_scalar(F16, 1.0)) };
        const char *h_in[2] = { x, bo_const(c, bo_scalar(F16, 0.5)) };
        const char *m_in[2] = { bo_node(c, "Mul", 2, h_in, 1, 0, NULL), bo_node(c, "Add", 2, a_in, 1, 0, NULL) };
        return bo_node(c, "Mul", 2, m_in, 1, 0, NULL);
    }
    if (which == 5) return x;
    static const char *const k_ops[] = { "Relu", NULL, "HardSwish", "Sigmoid" };
    return bo_node(c, k_ops[which], 1, &x, 1, 0, NULL);
}

/* Conv (plain, depthwise, 1x1) + activation, Gemm + activation, MatMul +
 * bias + activation, ConvTranspose + activation, all f16. */
static void gen_act16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (int k = 0; k < 12; k++) {
        bo_case *c = bo_next(ctx, 20);
        if (!c) continue;
        int prod = k < 10 ? k % 4 : 4, which = k % 5; /* Conv, depthwise Conv, Gemm, MatMul + bias, ConvTranspose */
        const char *y;
        double red;
        if (prod == 4) { /* stride 2: the per-tap GEMMs when kernel == stride, else conv_transpose.wgsl */
            int64_t cin = 3, cout = 2 + k % 3, hw = 4, kk = k == 10 ? 2 : 3;
            int64_t xd[4] = { 1, cin, hw, hw + 1 }, wd[4] = { cin, cout, kk, kk };
            const char *ins[2] = { bo_input(c, bo_rand(F16, 4, xd, -2, 2)), bo_const(c, bo_rand(F16, 4, wd, -0.5, 0.5)) };
            rlx_attr s = RLX_ATTR_IS("strides", 2, ((const int64_t[]){ 2, 2 }));
            y = bo_node(c, "ConvTranspose", 2, ins, 1, 1, &s);
            c->fused = "ConvTranspose";
            red = (double)(cin * kk * kk);
            bo_desc(c, "f16 ConvTranspose x[1,%lld,%lld,%lld] C_out=%lld k=%lld stride 2", (long long)cin, (long long)hw,
                    (long long)hw + 1, (long long)cout, (long long)kk);
        } else if (prod <= 1) {
            int64_t cin = 2 + k % 3, cout = prod ? cin : 3 + k % 4, hw = 5 + k % 4, kk = k % 3 ? 3 : 1;
            int64_t xd[4] = { 1, cin, hw, hw + 1 }, wd[4] = { cout, prod ? 1 : cin, kk, kk }, co = cout;
            const char *ins[3] = { bo_input(c, bo_rand(F16, 4, xd, -2, 2)), bo_const(c, bo_rand(F16, 4, wd, -0.5, 0.5)),
                                   bo_const(c, bo_rand(F16, 1, &co, -0.5, 0.5)) };
            rlx_attr a[2] = { RLX_ATTR_IS("pads", 4, ((const int64_t[]){ kk / 2, kk / 2, kk / 2, kk / 2 })),
                              RLX_ATTR_I("group", prod ? cin : 1) };
            y = bo_node(c, "Conv", 3, ins, 1, 2, a);
            c->fused = "Conv";
            red = (double)(wd[1] * kk * kk);
            bo_desc(c, "f16 Conv%s x[1,%lld,%lld,%lld] C_out=%lld k=%lld", prod ? " depthwise" : "", (long long)cin,
                    (long long)hw, (long long)hw + 1, (long long)cout, (long long)kk);
        } else {
            bool gemm = prod == 2;
            int64_t M = 3 + k, K = 5 + 3 * k, N = 4 + 2 * k;
            int64_t ad[3] = { 2, M, K }, bd[2] = { K, N };
            const char *ins[3] = { bo_input(c, bo_rand(F16, gemm ? 2 : 3, gemm ? ad + 1 : ad, -1, 1)),
                                   bo_const(c, bo_rand(F16, 2, bd, -1, 1)), bo_const(c, bo_rand(F16, 1, &N, -1, 1)) };
            y = bo_node(c, gemm ? "Gemm" : "MatMul", gemm ? 3 : 2, ins, 1, 0, NULL);
            if (!gemm) { /* the bias folds into the MatMul's third input */
                const char *ins2[2] = { y, ins[2] };
                y = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
            }
            c->fused = gemm ? "Gemm" : "MatMul";
            red = (double)K;
            bo_desc(c, "f16 %s M=%lld K=%lld N=%lld", gemm ? "Gemm" : "MatMul + bias", (long long)M, (long long)K,
                    (long long)N);
        }
        if (prod == 2 && which == 5) which = 0; /* a Gemm alone has nothing to fuse */
        bo_output(c, act16(c, which, y));
        c->atol *= sqrt(red);
        bo_run(ctx, c);
    }
}

/* Conv + residual Add (+ Relu or Clip), f16, on each convolution path;
 * also BatchNormalization folded into the f16 weights first. */
static void gen_residual16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const char *const k_algo[] = { NULL, "gpu.conv_algo=direct", "gpu.conv_algo=im2col", "gpu.conv_algo=implicit" };
    for (int k = 0; k < 8; k++) {
        bo_case *c = bo_next(ctx, 15);
        if (!c) continue;
        bool dw = k % 4 == 3, bn = k % 2 == 1;
        int64_t cin = 2 + k % 5, cout = dw ? cin : 2 + (k * 3) % 7, hw = 4 + k % 5, kk = k % 3 == 0 ? 1 : 3;
        int64_t xd[4] = { 1 + k % 2, cin, hw, hw + 2 }, wd[4] = { cout, dw ? 1 : cin, kk, kk }, co = cout;
        int64_t rd[4] = { xd[0], cout, hw, hw + 2 };
        const char *ins[3] = { bo_input(c, bo_rand(F16, 4, xd, -2, 2)), bo_const(c, bo_rand(F16, 4, wd, -0.5, 0.5)),
                               bo_const(c, bo_rand(F16, 1, &co, -0.5, 0.5)) };
        rlx_attr a[2] = { RLX_ATTR_IS("pads", 4, ((const int64_t[]){ kk / 2, kk / 2, kk / 2, kk / 2 })),
                          RLX_ATTR_I("group", dw ? cin : 1) };
        const char *y = bo_node(c, "Conv", 3, ins, 1, 2, a);
        bo_desc(c, "f16 Conv%s x[%lld,%lld,%lld,%lld] C_out=%lld k=%lld", dw ? " depthwise" : "", (long long)xd[0],
                (long long)cin, (long long)hw, (long long)hw + 2, (long long)cout, (long long)kk);
        if (bn) {
            const char *b_in[5] = { y, bo_const(c, bo_rand(F16, 1, &co, 0.5, 1.5)), bo_const(c, bo_rand(F16, 1, &co, -0.5, 0.5)),
                                    bo_const(c, bo_rand(F16, 1, &co, -0.5, 0.5)), bo_const(c, bo_rand(F16, 1, &co, 0.5, 2)) };
            y = bo_node(c, "BatchNormalization", 5, b_in, 1, 0, NULL);
            bo_desc(c, " + BatchNormalization");
        }
        const char *r = k % 3 == 1 ? bo_const(c, bo_rand(F16, 4, rd, -1, 1)) : bo_input(c, bo_rand(F16, 4, rd, -1, 1));
        const char *a_in[2] = { k % 2 ? r : y, k % 2 ? y : r };
        y = bo_node(c, "Add", 2, a_in, 1, 0, NULL);
        bo_desc(c, " + residual");
        y = act16(c, k % 3 == 0 ? 5 : k % 3 == 1 ? 0 : 1, y);
        if (k_algo[k % 4]) bo_opt(c, k_algo[k % 4]), bo_desc(c, " %s", k_algo[k % 4]);
        c->fused = "Conv";
        c->atol *= sqrt((double)(wd[1] * kk * kk));
        bo_output(c, y);
        bo_run(ctx, c);
    }
}

/* Add + LayerNormalization (f16 values and parameters): one
 * rlx.AddLayerNormalization. */
static void gen_add_ln16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (int k = 0; k < 4; k++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        int64_t S = 1 + 3 * k, Hd = k == 3 ? 768 : 17 + 20 * k;
        int64_t ad[3] = { 2, S, Hd }, bd[3] = { 1, S, Hd }, wd[1] = { Hd };
        bool bcast = k % 2 == 1;
        const char *a_in[2] = { bo_input(c, bo_rand(F16, 3, ad, -2, 2)),
                                bcast ? bo_const(c, bo_rand(F16, 3, bd, -1, 1)) : bo_input(c, bo_rand(F16, 3, ad, -1, 1)) };
        const char *s = bo_node(c, "Add", 2, a_in, 1, 0, NULL);
        const char *l_in[3] = { s, bo_const(c, bo_rand(F16, 1, wd, 0.5, 1.5)), bo_const(c, bo_rand(F16, 1, wd, -1, 1)) };
        rlx_attr at[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_output(c, bo_node(c, "LayerNormalization", 3, l_in, 1, 2, at));
        c->fused = "rlx.AddLayerNormalization";
        bo_desc(c, "f16 Add a[2,%lld,%lld] b%s -> LayerNormalization(-1)", (long long)S, (long long)Hd,
                bcast ? "[1,S,H]" : "[2,S,H]");
        bo_run(ctx, c);
    }
}

/* f16 GEMMs with gpu.f16_accumulate=f16 (lower_gemm.h, hblock): the
 * products as f16 FMAs into f16 partial sums over blocks of L =
 * gpu.f16_block elements of k, each block added into f32 accumulators.
 * Shapes models use: M = 1 (the GEMV kernel, which keeps f32 sums, and
 * the tiled kernel forced), 7 (split-K) and 128; K up to 4096, some not a
 * multiple of the block or of the tile; N odd and multiples of 4; Gemm
 * transB with a bias, MatMul + bias, activations, batched MatMul, Conv
 * on the im2col and the implicit GEMM; blocks 8 (flushed inside a k
 * tile of 16), 16 (every tile), 32 (the default: every two tiles) and
 * 64, the k loop unrolled and not.
 *
 * Tolerance (stated from the f16 sums): each f16 FMA rounds its partial
 * sum s once, by at most u |s| with u = 2^-11, an error of rms at most
 * u |s| / sqrt(3). Operands uniform in [-1, 1) (Conv: x in [-2, 2), w
 * in [-0.5, 0.5)) give products of rms rho = 1/3 and random signs, so
 * the j-th partial sum of a block has rms rho sqrt(j), a block of L
 * products an error of rms u rho sqrt(sum_j j / 3) ~ u rho L / sqrt(6),
 * and the K / L independent blocks one of sigma = u rho sqrt(K L / 6);
 * the f32 sums of the blocks add ~2^-24 relative. atol is 6 sigma =
 * u rho sqrt(6 K L) (no case has 10^6 outputs, so a max past 6 sigma is
 * a bug, not chance), rtol the f16 output's rounding on both sides (2^-10
 * relative), 1e-4 for f16's subnormals. Summing a whole K in f16
 * (gpu.f16_block >= K: sigma ~ u rho K / sqrt(6)) exceeds it wherever K
 * is well past 6 L: run with RLX_F16_BLOCK=65536 and the cases of the
 * default block without split-K fail (checked 2026-12-04; split-K slices
 * bound the block by their length). */
typedef struct sums16 {
    const char *op; /* MatMul, Gemm (transB, bias), Conv */
    int64_t M, K, N, batch;
    int act;         /* act16's which (5: none); MatMul: + bias first when act < 5 */
    int64_t block;   /* gpu.f16_block (0: the default, 32) */
    const char *opt; /* another option (NULL: none) */
} sums16;

static const sums16 k_sums16[] = {
    { "MatMul", 1, 768, 769, 1, 5, 0, NULL },                          /* GEMV: f32 sums whatever the option */
    { "MatMul", 1, 768, 769, 1, 5, 0, "gpu.gemm_kernel=tiled" },       /* one row on the tiled kernel, split-K */
    { "MatMul", 7, 1000, 64, 1, 5, 0, NULL },                          /* split-K, K not a multiple of the block */
    { "MatMul", 7, 4096, 36, 1, 0, 16, "gpu.gemm_splitk=4" },          /* + bias + Relu, block = tile */
    { "MatMul", 128, 768, 768, 1, 5, 0, "gpu.gemm_splitk=0" },         /* BERT's projections, whole K per output */
    { "MatMul", 128, 3072, 100, 1, 4, 0, "gpu.gemm_splitk=0" },        /* + bias + GELU */
    { "MatMul", 128, 4096, 20, 1, 5, 8, "gpu.gemm_unroll_k=0" },       /* block inside a tile, k loop */
    { "MatMul", 7, 300, 33, 3, 5, 0, NULL },                           /* batched, N odd */
    { "Gemm", 7, 3072, 99, 1, 3, 64, NULL },                           /* transB + bias + Sigmoid, block of 4 tiles */
    { "Gemm", 128, 771, 128, 1, 1, 0, "gpu.gemm_splitk=0" },           /* transB + bias + Clip, K odd */
    { "Conv", 0, 0, 0, 1, 0, 0, "gpu.conv_algo=im2col" },              /* x [1,64,14,14] w [32,64,3,3]: K 576 */
    { "Conv", 0, 0, 0, 1, 5, 16, "gpu.conv_algo=implicit" },
    { "MatMul", 128, 4096, 64, 1, 5, 0, "gpu.gemm_splitk=0" },         /* K = 4096 in one sum */
};

static void gen_sums16(bo_ctx *ctx, const void *arg) {
    (void)arg;
    for (size_t i = 0; i < BO_LEN(k_sums16); i++) {
        const sums16 *g = &k_sums16[i];
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int64_t K = g->K;
        const char *y;
        if (strcmp(g->op, "Conv") == 0) {
            int64_t xd[4] = { 1, 64, 14, 14 }, wd[4] = { 32, 64, 3, 3 }, co = 32;
            const char *ins[3] = { bo_input(c, bo_rand(F16, 4, xd, -2, 2)), bo_const(c, bo_rand(F16, 4, wd, -0.5, 0.5)),
                                   bo_const(c, bo_rand(F16, 1, &co, -0.5, 0.5)) };
            rlx_attr a = RLX_ATTR_IS("pads", 4, ((const int64_t[]){ 1, 1, 1, 1 }));
            y = bo_node(c, "Conv", 3, ins, 1, 1, &a);
            K = 64 * 9;
            bo_desc(c, "f16 sums: Conv x[1,64,14,14] w[32,64,3,3] pads 1 (K=576)");
        } else if (strcmp(g->op, "Gemm") == 0) {
            int64_t ad[2] = { g->M, K }, bd[2] = { g->N, K }, cd[1] = { g->N };
            const char *ins[3] = { bo_input(c, bo_rand(F16, 2, ad, -1, 1)), bo_const(c, bo_rand(F16, 2, bd, -1, 1)),
                                   bo_const(c, bo_rand(F16, 1, cd, -1, 1)) };
            rlx_attr a = RLX_ATTR_I("transB", 1);
            y = bo_node(c, "Gemm", 3, ins, 1, 1, &a);
            bo_desc(c, "f16 sums: Gemm transB M=%lld K=%lld N=%lld + bias", (long long)g->M, (long long)K,
                    (long long)g->N);
        } else {
            int64_t ad[3] = { g->batch, g->M, K }, bd[2] = { K, g->N };
            bool batched = g->batch > 1;
            const char *ins[2] = { bo_input(c, bo_rand(F16, batched ? 3 : 2, batched ? ad : ad + 1, -1, 1)),
                                   bo_const(c, bo_rand(F16, 2, bd, -1, 1)) };
            y = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
            bo_desc(c, "f16 sums: MatMul a[%s%lld,%lld] b[%lld,%lld]", batched ? "3," : "", (long long)g->M,
                    (long long)K, (long long)K, (long long)g->N);
            if (g->act < 5) { /* the bias folds into the MatMul's third input */
                int64_t n = g->N;
                const char *b_in[2] = { y, bo_const(c, bo_rand(F16, 1, &n, -1, 1)) };
                y = bo_node(c, "Add", 2, b_in, 1, 0, NULL);
                bo_desc(c, " + bias");
            }
        }
        y = act16(c, g->act, y);
        bo_output(c, y);
        if (g->act < 5) c->fused = g->op;
        else c->expect_op = g->op;
        bo_opt(c, "gpu.f16_accumulate=f16");
        static const char *const k_blocks[] = { "gpu.f16_block=8", "gpu.f16_block=16", "gpu.f16_block=64" };
        int64_t L = g->block ? g->block : 32;
        if (g->block) bo_opt(c, k_blocks[g->block == 8 ? 0 : g->block == 16 ? 1 : 2]);
        if (g->opt) bo_opt(c, g->opt);
        bo_desc(c, " block %lld%s%s", (long long)L, g->opt ? " " : "", g->opt ? g->opt : "");
        c->rtol = 1e-3;
        c->atol = ldexp(1.0, -11) / 3.0 * sqrt(6.0 * (double)K * (double)L) + 1e-4;
        bo_run(ctx, c);
    }
}

static const bo_op k_ops[] = {
    { "Relu", gen_unary16, NULL, EXACT16 },
    { "Neg", gen_unary16, NULL, EXACT16 },
    { "Sigmoid", gen_unary16, NULL, ULP16 },
    { "Tanh", gen_unary16, NULL, ULP16 },
    { "Exp", gen_unary16, NULL, ULP16 },
    { "Sqrt", gen_unary16, NULL, ULP16 },
    { "HardSwish", gen_unary16, NULL, ULP16 },
    { "HardSigmoid", gen_unary16, NULL, ULP16 },
    { "Add", gen_binary16, NULL, EXACT16 },
    { "Sub", gen_binary16, NULL, EXACT16 },
    { "Mul", gen_binary16, NULL, EXACT16 },
    { "Div", gen_binary16, NULL, ULP16 },
    { "Pow", gen_binary16, NULL, ULP16 },
    { "Cast", gen_cast16, NULL, EXACT16 },
    { "Transpose", gen_move16, NULL, EXACT16 },
    { "Slice", gen_move16, NULL, EXACT16 },
    { "Concat", gen_move16, NULL, EXACT16 },
    { "Split", gen_move16, NULL, EXACT16 },
    { "Expand", gen_move16, NULL, EXACT16 },
    { "Pad", gen_move16, NULL, EXACT16 },
    { "Gather", gen_move16, NULL, EXACT16 },
    { "Tile", gen_move16, NULL, EXACT16 },
    { "GatherElements", gen_move16, NULL, EXACT16 },
    { "GatherND", gen_move16, NULL, EXACT16 },
    { "CumSum", gen_move16, NULL, ROWS16 },
    { "Resize", gen_resize16, NULL, ROWS16 },
    /* cases_nn.c's cases on f16 X and grid (the kernel's T = f16 instance: grid values widened
     * to f32 exactly, f32 coordinates, weights and sums, Y rounded once; the CPU sums in f64) */
    { "GridSample", bo_gen_gridsample, &(const rlx_dtype){ F16 }, ULP16 },
    { "Less", gen_logic16, NULL, EXACT16 },
    { "Equal", gen_logic16, NULL, EXACT16 },
    { "Where", gen_logic16, NULL, EXACT16 },
    { "IsNaN", gen_isx16, NULL, EXACT16 },
    { "IsInf", gen_isx16, NULL, EXACT16 },
    { "ReduceSum", gen_reduce16, NULL, ROWS16 },
    { "ReduceMean", gen_reduce16, NULL, ROWS16 },
    { "ReduceMax", gen_reduce16, NULL, EXACT16 },
    { "ArgMax", gen_reduce16, NULL, EXACT16 },
    { "Softmax", gen_rows16, NULL, ROWS16 },
    { "LogSoftmax", gen_rows16, NULL, ROWS16 },
    { "LayerNormalization", gen_rows16, NULL, ROWS16 },
    { "fuse:fuse_elementwise:f16", gen_chain16, NULL, CHAIN16 },
    { "rlx.Attention", gen_attention16, NULL, CHAIN16 },
    { "fuse:activation:f16", gen_act16, NULL, CHAIN16 },
    { "fuse:conv_residual:f16", gen_residual16, NULL, CHAIN16 },
    { "rlx.AddLayerNormalization", gen_add_ln16, NULL, ADDLN16 },
    { "gemm:f16_sums", gen_sums16, NULL, 1e-3, 1e-4,
      "gpu.f16_accumulate=f16: f16 partial sums over blocks of L: atol 2^-11 rho sqrt(6 K L) (6 sigma), rtol 1e-3" },
};

const bo_family bo_family_f16 = { "f16", k_ops, BO_LEN(k_ops) };
