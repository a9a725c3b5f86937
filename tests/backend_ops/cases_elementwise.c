/* Cases of the elementwise lowerings (lower_elementwise.c): the unary
 * functions with their parameters, Clip, the binary arithmetic with every
 * broadcasting pattern up to rank 6, and the variadic Sum, Max, Min, Mean.
 * Each op: the standard shapes (scalar to rank 6, > 256, empty), values at
 * the edges where the function defines them, each dtype it accepts. */
#include <math.h>
#include <string.h>

#include "harness.h"

/* ------------------------------------------------------------ unary */

typedef struct unary_row {
    int opset;
    double lo, hi;       /* the domain sampled */
    bool edges;          /* +-inf, NaN, -0, denormals are meaningful */
    bool keeps_nan;      /* NaN in, NaN out (onnxruntime): BO_KEEPS_NAN */
    const char *pa, *pb; /* float attributes swept (NULL: none) */
    float va[2], vb[2];  /* two values each */
    const char *sattr, *sval; /* a string attribute (Gelu approximate) */
    double mlo, mhi;          /* mhi > 0: a case of magnitudes in [mlo, mhi), either sign (log-uniform when mhi /
                                 mlo > 1e3), where the GPU's formula is hardest (a finding's inputs) */
    bool specials;            /* a selecting function, exact in f32: a case on bo_specials (-0 and +0 among
                                 them) compared value for value (BO_SAME_VALUE; README.md, "Signed zeros") */
} unary_row;

/* Sin, Cos, Tan of large arguments (WGSL's built-ins lost them: Sin(2^31)
 * = -1, CPU -0.971): every binade from 1 to FLT_MAX, through ew_lib.wgsl's
 * argument reduction. Sinh, Cosh next to their overflow (e^|x| overflows
 * from 88.7 on, sinh and cosh from 89.4). */
#define TRIG_HARD .mlo = 1, .mhi = 3.4e38
#define EXP_HARD .mlo = 88, .mhi = 89.6

static void gen_unary(bo_ctx *ctx, const void *arg);

/* Tolerances: functions WGSL computes exactly as C does (selects,
 * multiplies by a constant, rounding) are exact; transcendental
 * functions: the WGSL built-ins are allowed a few ULP plus an absolute
 * error near zero (Vulkan's precision rules), and formulas like sinh =
 * (e^x - e^-x) / 2 lose bits near 0, hence 1e-4 relative + 1e-5 absolute. */
#define EXACT 0, 0, "computed with the same f32 operations on both sides"
#define ULP 2e-6, 1e-7, "a correctly rounded or 1-ULP built-in (sqrt, division) on the GPU"
#define TRANS 1e-4, 1e-5, "WGSL transcendental built-ins: a few ULP, absolute error near 0"


/* One unary case: shape sh, optional edges, parameter set p (-1: the
 * row's hard magnitudes, the first parameter set). */
static void unary_case(bo_ctx *ctx, const char *op, const unary_row *r, const bo_shape *sh, bool edges, int p) {
    bo_case *c = bo_next(ctx, r->opset);
    if (!c) return;
    char sb[96];
    rlx_tensor *x = bo_rand(RLX_DTYPE_F32, sh->rank, sh->d, r->lo, r->hi);
    if (edges) bo_edges(x, 8);
    if (r->keeps_nan) c->flags |= BO_KEEPS_NAN;
    bool hard = r->mhi > 0 && p < 0;
    if (hard) {
        float *v = x->data;
        bool lg = r->mhi > 1e3 * r->mlo;
        for (size_t i = 0; i < rlx_tensor_numel(x); i++) {
            double m = lg ? exp(bo_uniform(log(r->mlo), log(r->mhi))) : bo_uniform(r->mlo, r->mhi);
            v[i] = (float)(bo_rand_below(2) ? -m : m);
        }
        p = 0;
    }
    rlx_attr a[3];
    size_t na = 0;
    if (r->pa) a[na++] = RLX_ATTR_F(r->pa, r->va[p]);
    if (r->pb) a[na++] = RLX_ATTR_F(r->pb, r->vb[p]);
    if (r->sattr && p == 1) a[na++] = RLX_ATTR_S(r->sattr, r->sval);
    if (hard)
        bo_desc(c, "%s x%s with |x| in [%g, %g)", op, bo_shape_str(sh->rank, sh->d, sb, sizeof sb), r->mlo, r->mhi);
    else
        bo_desc(c, "%s x%s in [%g, %g)%s", op, bo_shape_str(sh->rank, sh->d, sb, sizeof sb), r->lo, r->hi,
                edges ? " with edge values" : "");
    for (size_t i = 0; i < na; i++) {
        if (a[i].type == RLX_ATTR_FLOAT) bo_desc(c, " %s=%g", a[i].name, a[i].f);
        else bo_desc(c, " %s=%s", a[i].name, a[i].s);
    }
    if (bo_numel(sh) == 0) c->expect_op = "";
    bo_single(c, op, 1, &x, NULL, 1, na, a);
    bo_run(ctx, c);
}

static void gen_unary(bo_ctx *ctx, const void *arg) {
    const unary_row *r = arg;
    const char *op = bo_op_name(ctx);
    const bo_shape *sh;
    size_t n = bo_std_shapes(ctx, &sh);
    int n_par = (r->pa || r->sattr) ? 2 : 1;
    for (size_t i = 0; i < n; i++) unary_case(ctx, op, r, &sh[i], false, (int)(i % (size_t)n_par));
    if (!bo_full(ctx) && strcmp(op, "Relu") == 0) { /* the quick sweep's grid beyond 65,535 workgroups */
        bo_shape big = { 1, { 65535 * 64 + 67 } };
        unary_case(ctx, op, r, &big, false, 0);
    }
    if (r->edges) {
        bo_shape s = { 1, { 97 } };
        for (int p = 0; p < n_par; p++) unary_case(ctx, op, r, &s, true, p);
    }
    if (r->specials) {
        for (int p = 0; p < n_par; p++) {
            bo_case *c = bo_next(ctx, r->opset);
            if (!c) continue;
            int64_t d[2] = { 8, 37 };
            rlx_tensor *x = bo_rand(RLX_DTYPE_F32, 2, d, r->lo, r->hi);
            bo_specials(x, 37);
            c->flags |= BO_SAME_VALUE;
            rlx_attr a[2];
            size_t na = 0;
            if (r->pa) a[na++] = RLX_ATTR_F(r->pa, r->va[p]);
            if (r->pb) a[na++] = RLX_ATTR_F(r->pb, r->vb[p]);
            bo_desc(c, "%s x[8,37] special values", op);
            for (size_t i = 0; i < na; i++) bo_desc(c, " %s=%g", a[i].name, a[i].f);
            bo_single(c, op, 1, &x, NULL, 1, na, a);
            bo_run(ctx, c);
        }
    }
    if (r->mhi > 0) {
        bo_shape s = { 1, { bo_full(ctx) ? 4099 : 257 } };
        unary_case(ctx, op, r, &s, false, -1);
    }
    if (bo_full(ctx)) {
        /* the parameters again on a mid-size tensor, and a domain 100x wider */
        bo_shape s = { 2, { 33, 31 } };
        for (int p = 0; p < n_par; p++) unary_case(ctx, op, r, &s, false, p);
        unary_row wide = *r;
        wide.lo *= 100, wide.hi *= 100;
        if (r->edges) unary_case(ctx, op, &wide, &s, false, 0);
    }
}

/* ------------------------------------------------------------ Clip */

/* Clip on special values (bo_specials), f32 and f16, with bounds from
 * attributes, constants and run-time inputs: bounds of either zero (x's
 * -0 and +0 meet lo or hi = +-0), infinite bounds, a NaN bound, lo > hi.
 * The CPU computes y = x < lo ? lo : x, then y > hi ? hi : y
 * (rlx_ew_clampf): a NaN x stays, a NaN bound is ignored, a tie keeps x;
 * compared value for value (BO_SAME_VALUE). */
static void clip_specials(bo_ctx *ctx) {
    static const double k_bounds[][2] = { { 0.0, 1.0 }, { -1.0, -0.0 }, { -0.0, 0.0 }, { NAN, 0.5 }, { -0.5, NAN },
                                          { -INFINITY, INFINITY }, { 1.0, -1.0 }, { 0.0, INFINITY } };
    int nb = (int)BO_LEN(k_bounds);
    for (int t = 0; t < 5 * nb; t++) {
        /* f32 in each form (0: Clip-6 attributes, without NaN; 1: constant
         * inputs; 2: run-time inputs), f16 in forms 1 and 2 */
        int form = t / nb % 3;
        bool half = t >= 3 * nb;
        const double *b = k_bounds[t % nb];
        if (half) form = 1 + (t / nb) % 2;
        if (form == 0 && (b[0] != b[0] || b[1] != b[1])) continue;
        bo_case *c = bo_next(ctx, form == 0 ? 6 : 13);
        if (!c) continue;
        rlx_dtype dt = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t d[2] = { 8, 37 };
        rlx_tensor *x = bo_rand(dt, 2, d, -3, 3);
        bo_specials(x, 37);
        c->flags |= BO_SAME_VALUE;
        bo_desc(c, "Clip-%d%s x[8,37] special values min=%g max=%g (%s)", form == 0 ? 6 : 13, half ? " f16" : "", b[0],
                b[1], form == 0 ? "attributes" : form == 1 ? "constant" : "run-time");
        if (form == 0) {
            rlx_attr a[2] = { RLX_ATTR_F("min", (float)b[0]), RLX_ATTR_F("max", (float)b[1]) };
            bo_single(c, "Clip", 1, &x, NULL, 1, 2, a);
        } else {
            rlx_tensor *in[3] = { x, bo_scalar(dt, b[0]), bo_scalar(dt, b[1]) };
            bool k[3] = { false, form == 1, form == 1 };
            bo_single(c, "Clip", 3, in, k, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

static void gen_clip(bo_ctx *ctx, const void *arg) {
    (void)arg;
    const bo_shape *sh;
    size_t n = bo_std_shapes(ctx, &sh);
    static const float k_bounds[][2] = { { -0.5f, 1.25f }, { 0.5f, 0.25f } /* lo > hi: hi wins */, { -1, -1 } };
    for (size_t i = 0; i < n; i++) {
        for (int form = 0; form < 5; form++) {
            /* 0: Clip-6 attributes; 1: Clip-13 constant bounds; 2: run-time bounds; 3: only min; 4: i32 */
            if (!bo_full(ctx) && form != (int)(i % 5)) continue;
            bo_case *c = bo_next(ctx, form == 0 ? 6 : 13);
            if (!c) continue;
            const float *b = k_bounds[i % 3];
            char sb[96];
            bo_shape_str(sh[i].rank, sh[i].d, sb, sizeof sb);
            bool edges = bo_numel(&sh[i]) > 16;
            /* edges: Clip(NaN) is NaN (the H200's driver gave lo before clamp_ tested the bits) */
            if (bo_numel(&sh[i]) == 0) c->expect_op = "";
            if (form == 0) {
                rlx_tensor *x = bo_rand(RLX_DTYPE_F32, sh[i].rank, sh[i].d, -3, 3);
                if (edges) bo_edges(x, 8), c->flags |= BO_KEEPS_NAN;
                rlx_attr a[2] = { RLX_ATTR_F("min", b[0]), RLX_ATTR_F("max", b[1]) };
                bo_desc(c, "Clip-6 x%s min=%g max=%g%s", sb, b[0], b[1], edges ? " edges" : "");
                bo_single(c, "Clip", 1, &x, NULL, 1, 2, a);
            } else if (form == 4) {
                rlx_tensor *in[3] = { bo_rand_int(RLX_DTYPE_I32, sh[i].rank, sh[i].d, -100, 100),
                                      bo_scalar(RLX_DTYPE_I32, -7), bo_scalar(RLX_DTYPE_I32, 42) };
                bool k[3] = { false, true, false };
                bo_desc(c, "Clip i32 x%s [-7, 42] (max at run time)", sb);
                bo_single(c, "Clip", 3, in, k, 1, 0, NULL);
            } else {
                rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, sh[i].rank, sh[i].d, -3, 3), bo_scalar(RLX_DTYPE_F32, b[0]),
                                      form == 3 ? NULL : bo_scalar(RLX_DTYPE_F32, b[1]) };
                if (edges) bo_edges(in[0], 8);
                bool k[3] = { false, form != 2, form != 2 };
                bo_desc(c, "Clip-13 x%s min=%g max=%s %s%s", sb, b[0], form == 3 ? "(none)" : "", form == 2 ? "run-time" : "constant",
                        edges ? " edges" : "");
                if (form != 3) bo_desc(c, " (max %g)", b[1]);
                bo_single(c, "Clip", 3, in, k, 1, 0, NULL);
            }
            bo_run(ctx, c);
        }
    }
    clip_specials(ctx);
}

/* ------------------------------------------------------------ binary */

typedef struct binary_row {
    int opset;
    bool i32;           /* also i32 */
    double lo, hi;      /* f32 operand range */
    double blo, bhi;    /* second operand's range (divisor, exponent) */
} binary_row;

/* One binary case; a NULL: random shapes that broadcast, of rank rand_rank. */
static void binary_case(bo_ctx *ctx, const char *op, const binary_row *r, rlx_dtype dt, const bo_shape *a,
                        const bo_shape *b, int special, bool konst_b, int rand_rank) {
    bo_case *c = bo_next(ctx, r->opset);
    if (!c) return;
    bo_shape out, ins[2];
    if (!a) {
        bo_broadcast(rand_rank, 2, &out, ins);
        if (strcmp(op, "PRelu") == 0) ins[0] = out; /* the slope broadcasts to x */
        a = &ins[0];
        b = &ins[1];
    }
    char sa[96], sb[96];
    rlx_tensor *x, *y;
    if (dt == RLX_DTYPE_I32) {
        bool div = strcmp(op, "Div") == 0;
        x = bo_rand_int(dt, a->rank, a->d, -1000, 1000);
        y = bo_rand_int(dt, b->rank, b->d, div ? 1 : -1000, 1000);
        if (special) { /* values near the i32 limits: wrap-around like numpy */
            int32_t *xv = x->data;
            size_t n = rlx_tensor_numel(x);
            for (size_t i = 0; i < n; i += 2) xv[i] = (i & 2) ? INT32_MAX - (int32_t)i : INT32_MIN + (int32_t)i;
        }
    } else {
        x = bo_rand(dt, a->rank, a->d, r->lo, r->hi);
        y = bo_rand(dt, b->rank, b->d, r->blo, r->bhi);
        if (special == 1) {
            bo_edges(x, 6);
            bo_edges(y, 6);
            /* Pow of a subnormal base (bo_edges' 1e-40) once took log2 of a flushed operand
             * (lavapipe: 2.2e8 for 5.4e8); ew_lib.wgsl's log2_ reads its bits */
        } else if (special == 4) { /* special values (-0 and +0 among them), value for value */
            bo_specials(x, 13);
            bo_specials(y, 7);
            c->flags |= BO_SAME_VALUE;
        } else if (special == 2) { /* Pow: negative bases with integer exponents (x^2 of any x is common) */
            float *yv = y->data;
            for (size_t i = 0; i < rlx_tensor_numel(y); i++) yv[i] = (float)floor(yv[i]);
        }
    }
    bo_desc(c, "%s %s a%s b%s%s%s", op, rlx_dtype_name(dt), bo_shape_str(a->rank, a->d, sa, sizeof sa),
            bo_shape_str(b->rank, b->d, sb, sizeof sb), konst_b ? " (b constant)" : "",
            special == 1   ? " edges"
            : special == 2 ? " integer exponents"
            : special == 3 ? " i32 limits"
            : special == 4 ? " special values"
                           : "");
    if (bo_numel(a) == 0 || bo_numel(b) == 0) c->expect_op = "";
    rlx_tensor *in[2] = { x, y };
    bool k[2] = { false, konst_b };
    bo_single(c, op, 2, in, k, 1, 0, NULL);
    bo_run(ctx, c);
}

static void gen_binary(bo_ctx *ctx, const void *arg) {
    const binary_row *r = arg;
    const char *op = bo_op_name(ctx);
    bool prelu = strcmp(op, "PRelu") == 0;
    int n_dt = r->i32 ? 2 : 1;
    for (int t = 0; t < n_dt; t++) {
        rlx_dtype dt = t ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
        /* same shapes */
        const bo_shape *sh;
        size_t n = bo_std_shapes(ctx, &sh);
        for (size_t i = 0; i < n; i++) {
            if (t && !bo_full(ctx) && i % 2) continue;
            binary_case(ctx, op, r, dt, &sh[i], &sh[i], 0, false, 0);
        }
        /* fixed broadcasting patterns */
        static const bo_shape k_pairs[][2] = {
            { { 2, { 4, 1 } }, { 2, { 1, 5 } } },             /* outer */
            { { 2, { 3, 300 } }, { 1, { 300 } } },            /* bias row, > 256 */
            { { 4, { 2, 3, 4, 5 } }, { 0, { 0 } } },          /* scalar */
            { { 4, { 2, 3, 4, 5 } }, { 3, { 3, 1, 1 } } },    /* per channel */
            { { 1, { 1 } }, { 3, { 2, 3, 4 } } },             /* a smaller than b */
            { { 6, { 2, 1, 3, 1, 2, 1 } }, { 6, { 1, 2, 1, 3, 1, 2 } } },
            { { 2, { 0, 3 } }, { 1, { 3 } } },               /* empty */
        };
        for (size_t i = 0; i < BO_LEN(k_pairs); i++) {
            if (prelu && (k_pairs[i][1].rank > k_pairs[i][0].rank)) continue; /* PRelu's slope broadcasts to x */
            binary_case(ctx, op, r, dt, &k_pairs[i][0], &k_pairs[i][1], 0, i % 2 == 1, 0);
        }
        /* random patterns up to rank 6 */
        int n_rand = bo_full(ctx) ? 36 : 6;
        for (int i = 0; i < n_rand; i++) {
            binary_case(ctx, op, r, dt, NULL, NULL, 0, i % 3 == 2, 1 + i % 6);
        }
        if (!bo_full(ctx) && strcmp(op, "Add") == 0 && t == 0) { /* a grid beyond 65,535 workgroups */
            bo_shape big = { 2, { 2, 65535 * 32 + 67 } }, row = { 1, { 65535 * 32 + 67 } };
            binary_case(ctx, op, r, dt, &big, &row, 0, false, 0);
        }
        /* edge values */
        bo_shape e = { 2, { 7, 13 } };
        if (dt == RLX_DTYPE_F32) binary_case(ctx, op, r, dt, &e, &e, 1, false, 0);
        if (dt == RLX_DTYPE_I32 && strcmp(op, "Div") != 0) binary_case(ctx, op, r, dt, &e, &e, 3, false, 0);
        if (strcmp(op, "Pow") == 0) binary_case(ctx, op, r, dt, &e, &e, 2, false, 0);
        if (prelu && dt == RLX_DTYPE_F32) binary_case(ctx, op, r, dt, &e, &e, 4, false, 0);
    }
}

/* Pow by a constant integer exponent (int64 or int32; Pow(x, 2) of exported LayerNorms): GPU plans take it
 * as a float exponent (passes/pow_exponent.c), 2 as Mul(x, x). The oracle is the CPU's double pow of the
 * integer exponent rounded to x's type. Exponent 2: x * x rounded once, exact (rtol = atol = 0; special values
 * too, value for value); other exponents (negative, 0, 1, 3, per column): the GPU's pow, the row's tolerance;
 * f16 x: computed in f32 and rounded once to f16, where the CPU rounds its double once: within an f16 ULP
 * (rtol 1e-3). An exponent fed at run time stays on the CPU (a decline, BO_FALLBACK_OK). */
typedef struct pow_int_case {
    rlx_dtype xdt, edt;
    bo_shape x, e;
    int64_t e_lo, e_hi; /* the exponent's values: uniform in [e_lo, e_hi] */
    int special;        /* 1: bo_specials in x (exponent 2) */
    bool fed;           /* the exponent a graph input */
} pow_int_case;

static void gen_pow_int(bo_ctx *ctx, const void *arg) {
    (void)arg;
    static const pow_int_case k_cases[] = {
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 7, 13 } }, { 0, { 0 } }, 2, 2, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I32, { 3, { 2, 5, 37 } }, { 0, { 0 } }, 2, 2, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 4, 300 } }, { 2, { 1, 1 } }, 2, 2, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 8, 37 } }, { 0, { 0 } }, 2, 2, 1, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 7, 13 } }, { 0, { 0 } }, 3, 3, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 4, { 2, 3, 4, 5 } }, { 0, { 0 } }, -2, -2, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I32, { 2, { 7, 13 } }, { 1, { 13 } }, -3, 4, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 6, 1 } }, { 2, { 1, 9 } }, 0, 1, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 1, { 5 } }, { 3, { 2, 1, 5 } }, 2, 2, 0, false }, /* e larger than x */
        { RLX_DTYPE_F16, RLX_DTYPE_I64, { 2, { 7, 13 } }, { 0, { 0 } }, 2, 2, 0, false },
        { RLX_DTYPE_F16, RLX_DTYPE_I64, { 2, { 7, 13 } }, { 0, { 0 } }, 3, 3, 0, false },
        { RLX_DTYPE_F32, RLX_DTYPE_I64, { 2, { 7, 13 } }, { 0, { 0 } }, 2, 2, 0, true },
    };
    for (size_t i = 0; i < BO_LEN(k_cases); i++) {
        const pow_int_case *pc = &k_cases[i];
        bo_case *c = bo_next(ctx, 15);
        if (!c) continue;
        rlx_tensor *x = bo_rand(pc->xdt, pc->x.rank, pc->x.d, -3, 3); /* negative bases: odd powers keep the sign */
        if (pc->special) bo_specials(x, 13);
        rlx_tensor *e = bo_rand_int(pc->edt, pc->e.rank, pc->e.d, pc->e_lo, pc->e_hi);
        bool square = pc->e_lo == 2 && pc->e_hi == 2 && bo_numel(&pc->e) == 1 && pc->e.rank <= pc->x.rank;
        char sa[96], sb[96];
        bo_desc(c, "Pow %s a%s by %s b%s in [%lld, %lld]%s%s", rlx_dtype_name(pc->xdt),
                bo_shape_str(pc->x.rank, pc->x.d, sa, sizeof sa), rlx_dtype_name(pc->edt),
                bo_shape_str(pc->e.rank, pc->e.d, sb, sizeof sb), (long long)pc->e_lo, (long long)pc->e_hi,
                pc->fed ? " (b fed: the CPU runs it)" : " (b constant)", pc->special ? " special values" : "");
        if (square && !pc->fed) {
            c->expect_op = "Mul";
            c->rtol = c->atol = 0;
            if (pc->special) c->flags |= BO_SAME_VALUE;
        }
        if (pc->xdt == RLX_DTYPE_F16) c->rtol = 1e-3;
        if (pc->fed) c->flags |= BO_FALLBACK_OK, c->expect_op = "";
        rlx_tensor *in[2] = { x, e };
        bool k[2] = { false, !pc->fed };
        bo_single(c, "Pow", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ variadic */

typedef struct variadic_row {
    int opset;
    bool i32;
} variadic_row;

static void gen_variadic(bo_ctx *ctx, const void *arg) {
    const variadic_row *r = arg;
    const char *op = bo_op_name(ctx);
    int n_dt = r->i32 ? 2 : 1;
    int n_rep = bo_full(ctx) ? 8 : 2;
    for (int t = 0; t < n_dt; t++)
        for (int n_in = 1; n_in <= (bo_full(ctx) ? 9 : 4); n_in++)
            for (int rep = 0; rep < n_rep; rep++) {
                bo_case *c = bo_next(ctx, r->opset);
                if (!c) continue;
                rlx_dtype dt = t ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
                bo_shape out, ins[9];
                bo_broadcast(rep == 0 ? 2 : 1 + (int)bo_rand_below(6), n_in, &out, ins);
                if (rep == 1 && n_in > 1) ins[n_in - 1].rank = 0; /* a scalar operand */
                rlx_tensor *in[9];
                bool k[9];
                bo_desc(c, "%s %s %d inputs:", op, rlx_dtype_name(dt), n_in);
                for (int j = 0; j < n_in; j++) {
                    char sb[96];
                    in[j] = dt == RLX_DTYPE_I32 ? bo_rand_int(dt, ins[j].rank, ins[j].d, -1000, 1000)
                                                : bo_rand(dt, ins[j].rank, ins[j].d, -4, 4);
                    if (dt == RLX_DTYPE_F32 && rep == n_rep - 1) bo_edges(in[j], 5);
                    k[j] = j == 1;
                    bo_desc(c, " %s", bo_shape_str(ins[j].rank, ins[j].d, sb, sizeof sb));
                }
                if (dt == RLX_DTYPE_F32 && rep == n_rep - 1) bo_desc(c, " edges");
                bo_single(c, op, n_in, in, k, 1, 0, NULL);
                bo_run(ctx, c);
            }
    if (strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0) {
        /* f16, 100 inputs: one of values in [1, 2), 99 small ones in
         * [2e-4, 4.5e-4), under half an f16 ULP of the sum: summed in f32
         * and rounded once (README, f16 policy) they add about 2%; a running
         * f16 sum rounds each of them away. Input 0 fed, one input [1, 37]
         * broadcast, the rest initializers. CPU and GPU sum in the same order
         * in f32, so the tolerance allows an f16 ULP (Mean: the GPU's f32
         * division) and not the running sum's error. */
        enum { N_WIDE = 100 };
        for (int rep = 0; rep < 2; rep++) {
            bo_case *c = bo_next(ctx, r->opset);
            if (!c) continue;
            c->rtol = 2e-3;
            c->atol = 0;
            int64_t d[2] = { 3, 37 }, db[2] = { 1, 37 };
            const char *names[N_WIDE];
            for (int j = 0; j < N_WIDE; j++) {
                bool big = j == rep * 50;
                rlx_tensor *t = bo_rand(RLX_DTYPE_F16, 2, j == 7 ? db : d, big ? 1 : 2e-4, big ? 2 : 4.5e-4);
                names[j] = bo_value(c, t, j != 0);
            }
            bo_desc(c, "%s f16 %d inputs [3, 37] (one [1, 37]), one of [1, 2) and small ones: f32 accumulation", op,
                    N_WIDE);
            bo_node(c, op, N_WIDE, names, 1, 0, NULL);
            bo_output(c, bo_out_name(c, 0));
            bo_run(ctx, c);
        }
        return;
    }
    if (strcmp(op, "Max") && strcmp(op, "Min")) return;
    /* special values (bo_specials, blocks of 5 of the first operand, 3 of
     * the others: every pair of specials meets): NaN on either side gives
     * NaN, -0 against +0 gives the later operand (x > y ? x : y), f32 and
     * f16, 2 to 4 inputs; compared value for value */
    for (int t = 0; t < 6; t++) {
        bo_case *c = bo_next(ctx, r->opset);
        if (!c) continue;
        int n_in = 2 + t % 3;
        rlx_dtype dt = t >= 3 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        int64_t d[1] = { 8 * 5 * 8 * 3 };
        rlx_tensor *in[4];
        bool k[4] = { false, false, true, false };
        for (int j = 0; j < n_in; j++) {
            in[j] = bo_rand(dt, 1, d, -2, 2);
            bo_specials(in[j], j == 0 ? 5 : 3);
        }
        c->flags |= BO_SAME_VALUE;
        bo_desc(c, "%s %s %d inputs [%lld] special values", op, rlx_dtype_name(dt), n_in, (long long)d[0]);
        bo_single(c, op, n_in, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ table */

static const bo_op k_ops[] = {
    { "Abs", gen_unary, &(const unary_row){ .opset = 13, .lo = -4, .hi = 4, .edges = true , .specials = true }, EXACT },
    { "Acos", gen_unary, &(const unary_row){ .opset = 7, .lo = -0.999, .hi = 0.999, .edges = true }, TRANS },
    { "Acosh", gen_unary, &(const unary_row){ .opset = 9, .lo = 1.001, .hi = 8, .edges = true }, TRANS },
    { "Asin", gen_unary, &(const unary_row){ .opset = 7, .lo = -0.999, .hi = 0.999, .edges = true }, TRANS },
    { "Asinh", gen_unary, &(const unary_row){ .opset = 9, .lo = -8, .hi = 8, .edges = true }, TRANS },
    { "Atan", gen_unary, &(const unary_row){ .opset = 7, .lo = -8, .hi = 8, .edges = true }, TRANS },
    { "Atanh", gen_unary, &(const unary_row){ .opset = 9, .lo = -0.999, .hi = 0.999, .edges = true }, TRANS },
    { "Ceil", gen_unary, &(const unary_row){ .opset = 13, .lo = -40, .hi = 40, .edges = true }, EXACT },
    { "Celu", gen_unary, &(const unary_row){ .opset = 12, .lo = -4, .hi = 4, .edges = true, .keeps_nan = true, .pa = "alpha", .va = { 1.0f, 0.7f } }, TRANS },
    { "Cos", gen_unary, &(const unary_row){ .opset = 7, .lo = -6, .hi = 6, .edges = true, TRIG_HARD }, TRANS },
    { "Cosh", gen_unary, &(const unary_row){ .opset = 9, .lo = -8, .hi = 8, .edges = true, EXP_HARD }, TRANS },
    { "Elu", gen_unary, &(const unary_row){ .opset = 6, .lo = -4, .hi = 4, .edges = true, .keeps_nan = true, .pa = "alpha", .va = { 1.0f, 0.3f } }, TRANS },
    { "Erf", gen_unary, &(const unary_row){ .opset = 13, .lo = -3, .hi = 3, .edges = true }, TRANS },
    { "Exp", gen_unary, &(const unary_row){ .opset = 13, .lo = -20, .hi = 20, .edges = true }, TRANS },
    { "Floor", gen_unary, &(const unary_row){ .opset = 13, .lo = -40, .hi = 40, .edges = true }, EXACT },
    { "Gelu", gen_unary, &(const unary_row){ .opset = 20, .lo = -6, .hi = 6, .edges = true, .sattr = "approximate", .sval = "tanh" }, TRANS },
    { "HardSigmoid", gen_unary, &(const unary_row){ .opset = 6, .lo = -6, .hi = 6, .edges = true, .keeps_nan = true, .pa = "alpha", .pb = "beta", .va = { 0.2f, 0.3f }, .vb = { 0.5f, 0.4f } }, ULP },
    { "HardSwish", gen_unary, &(const unary_row){ .opset = 14, .lo = -6, .hi = 6, .edges = true, .keeps_nan = true }, ULP },
    { "LeakyRelu", gen_unary, &(const unary_row){ .opset = 16, .lo = -4, .hi = 4, .edges = true, .keeps_nan = true, .pa = "alpha", .va = { 0.01f, 0.125f } , .specials = true }, EXACT },
    { "Log", gen_unary, &(const unary_row){ .opset = 13, .lo = 0.001, .hi = 100, .edges = true }, TRANS },
    { "Mish", gen_unary, &(const unary_row){ .opset = 18, .lo = -8, .hi = 8, .edges = true }, TRANS },
    { "Neg", gen_unary, &(const unary_row){ .opset = 13, .lo = -4, .hi = 4, .edges = true , .specials = true }, EXACT },
    { "Reciprocal", gen_unary, &(const unary_row){ .opset = 13, .lo = 0.01, .hi = 10, .edges = true }, ULP },
    { "Relu", gen_unary, &(const unary_row){ .opset = 14, .lo = -4, .hi = 4, .edges = true, .keeps_nan = true , .specials = true }, EXACT },
    { "Round", gen_unary, &(const unary_row){ .opset = 11, .lo = -10, .hi = 10, .edges = true }, EXACT },
    { "Selu", gen_unary, &(const unary_row){ .opset = 6, .lo = -4, .hi = 4, .edges = true, .keeps_nan = true, .pa = "alpha", .pb = "gamma", .va = { 1.67326f, 2.0f }, .vb = { 1.0507f, 0.5f } }, TRANS },
    { "Shrink", gen_unary, &(const unary_row){ .opset = 9, .lo = -4, .hi = 4, .edges = true, .pa = "bias", .pb = "lambd", .va = { 0.0f, 0.25f }, .vb = { 0.5f, 1.5f }, .specials = true }, EXACT },
    { "Sigmoid", gen_unary, &(const unary_row){ .opset = 13, .lo = -12, .hi = 12, .edges = true }, TRANS },
    { "Sign", gen_unary, &(const unary_row){ .opset = 13, .lo = -4, .hi = 4, .edges = true , .specials = true }, EXACT },
    { "Sin", gen_unary, &(const unary_row){ .opset = 7, .lo = -6, .hi = 6, .edges = true, TRIG_HARD }, TRANS },
    { "Sinh", gen_unary, &(const unary_row){ .opset = 9, .lo = -8, .hi = 8, .edges = true, EXP_HARD }, TRANS },
    { "Softplus", gen_unary, &(const unary_row){ .opset = 1, .lo = -12, .hi = 12, .edges = true, .keeps_nan = true }, TRANS },
    { "Softsign", gen_unary, &(const unary_row){ .opset = 1, .lo = -8, .hi = 8, .edges = true }, ULP },
    { "Sqrt", gen_unary, &(const unary_row){ .opset = 13, .lo = 0.0, .hi = 100, .edges = true }, ULP },
    { "Swish", gen_unary, &(const unary_row){ .opset = 24, .lo = -8, .hi = 8, .edges = true, .pa = "alpha", .va = { 1.0f, 1.702f } }, TRANS },
    { "Tan", gen_unary, &(const unary_row){ .opset = 7, .lo = -1.5, .hi = 1.5, .edges = true, TRIG_HARD }, TRANS },
    { "Tanh", gen_unary, &(const unary_row){ .opset = 13, .lo = -8, .hi = 8, .edges = true }, TRANS },
    { "ThresholdedRelu", gen_unary, &(const unary_row){ .opset = 10, .lo = -4, .hi = 4, .edges = true, .pa = "alpha", .va = { 1.0f, 0.25f } , .specials = true }, EXACT },
    { "Clip", gen_clip, NULL, 0, 0, "selects only: exact" },
    { "Add", gen_binary, &(const binary_row){ 14, true, -4, 4, -4, 4 }, 0, 0, "one f32 operation: exact" },
    { "Sub", gen_binary, &(const binary_row){ 14, true, -4, 4, -4, 4 }, 0, 0, "one f32 operation: exact" },
    { "Mul", gen_binary, &(const binary_row){ 14, true, -4, 4, -4, 4 }, 0, 0, "one f32 operation: exact" },
    { "Div", gen_binary, &(const binary_row){ 14, false, -4, 4, 0.05, 4 }, 2e-6, 1e-30,
      "WGSL f32 division is 2.5 ULP (Vulkan)" },
    { "Pow", gen_binary, &(const binary_row){ 15, false, 0.05, 4, -3, 3 }, 1e-4, 1e-6,
      "pow is exp2(y log2 x) on the GPU: a few ULP of the result" },
    { "Pow", gen_pow_int, NULL, 1e-4, 1e-6,
      "integer exponents (constants) as floats on GPU plans: pow is exp2(y log2 abs(x)) on the GPU, a few ULP of the "
      "CPU's double pow; exponent 2 is x * x, exact (the case sets 0); f16 x within an f16 ULP" },
    { "PRelu", gen_binary, &(const binary_row){ 16, false, -4, 4, -1, 1 }, 0, 0, "one multiply: exact" },
    { "Sum", gen_variadic, &(const variadic_row){ 13, true }, 1e-6, 1e-6, "the same additions in the same order" },
    { "Max", gen_variadic, &(const variadic_row){ 13, true }, 0, 0, "selects: exact" },
    { "Min", gen_variadic, &(const variadic_row){ 13, true }, 0, 0, "selects: exact" },
    { "Mean", gen_variadic, &(const variadic_row){ 13, false }, 1e-6, 1e-6, "sum then one division" },
};

const bo_family bo_family_elementwise = { "elementwise", k_ops, BO_LEN(k_ops) };
