/* One elementwise vocabulary (src/ir/ew.h): on the GPU, a function gives the
 * same bits standalone (its ONNX op), inside a FusedElementwise chain and as
 * the fused activation (epilogue) of a MatMul and of a Conv; and the
 * standalone GPU result is within the stated tolerance of the CPU
 * reference. Random inputs; GPU arenas poisoned (gpu_open), so an unwritten
 * element fails. The epilogues see the input unchanged: MatMul [M, 1] x
 * ones [1, 1] and a 1x1 Conv with weight 1 compute acc = 0 + x * 1 = x. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_node.h"
#include "ir/ew.h"
#include "ir/ops/act.h"

static rlx_backend *g_be, *g_be16;

typedef struct ew_case {
    const char *label, *op; /* op NULL: the Silu pattern Mul(x, Sigmoid(x)) */
    int version;
    rlx_ew_fn fn;
    float alpha, beta;
    float lo, hi;
    double rtol, atol; /* GPU against the CPU reference */
} ew_case;

#define M 1024

/* The ONNX attributes / inputs of a case's standalone op. */
static int op_attrs(const ew_case *c, rlx_attr *at) {
    if (!c->op) return 0;
    if (strcmp(c->op, "HardSigmoid") == 0) {
        at[0] = RLX_ATTR_F("alpha", c->alpha);
        at[1] = RLX_ATTR_F("beta", c->beta);
        return 2;
    }
    if (strcmp(c->op, "LeakyRelu") == 0 || strcmp(c->op, "Elu") == 0) {
        at[0] = RLX_ATTR_F("alpha", c->alpha);
        return 1;
    }
    if (strcmp(c->op, "Gelu") == 0 && c->fn == RLX_EW_GELU_TANH) {
        at[0] = RLX_ATTR_S("approximate", "tanh");
        return 1;
    }
    return 0;
}

static rlx_node_attr to_node_attr(const rlx_attr *a) {
    return a->type == RLX_ATTR_FLOAT ? na_f(a->name, a->f) : na_s(a->name, a->s);
}

/* The standalone op (or the two ops of the Silu pattern) on the GPU. */
static rlx_tensor *run_standalone(const ew_case *c, rlx_tensor *x) {
    int64_t d[1] = { M };
    rlx_tensor *y = NULL, *s = NULL;
    if (!c->op) {
        const rlx_tensor *in[1] = { x };
        CHECK_OK(run_node(g_be, "Sigmoid", 13, 1, in, NULL, 1, d, 0, NULL, &s, NULL));
        const rlx_tensor *in2[2] = { x, s };
        if (s) CHECK_OK(run_node(g_be, "Mul", 14, 2, in2, NULL, 1, d, 0, NULL, &y, NULL));
        rlx_tensor_destroy(s);
        return y;
    }
    rlx_attr at[2];
    int na = op_attrs(c, at);
    rlx_node_attr nat[2];
    for (int i = 0; i < na; i++) nat[i] = to_node_attr(&at[i]);
    if (strcmp(c->op, "Clip") == 0) {
        int64_t sd[1] = { 1 };
        rlx_tensor *lo = test_tensor_f32(0, sd, &c->alpha), *hi = test_tensor_f32(0, sd, &c->beta);
        const rlx_tensor *in[3] = { x, lo, hi };
        int konst[3] = { 0, 1, 1 };
        CHECK_OK(run_node(g_be, "Clip", 13, 3, in, konst, 1, d, 0, NULL, &y, NULL));
        rlx_tensor_destroy(lo);
        rlx_tensor_destroy(hi);
        return y;
    }
    const rlx_tensor *in[1] = { x };
    CHECK_MSG(run_node(g_be, c->op, c->version, 1, in, NULL, 1, d, na, nat, &y, NULL) == RLX_OK, "%s: %s", c->label,
              rlx_last_error());
    return y;
}

/* The CPU reference: the standalone op(s) through a CPU session. */
static rlx_tensor *run_cpu(const ew_case *c, rlx_tensor *x) {
    rlx_tensor **o = NULL, *y = NULL;
    if (!c->op) {
        const rlx_tensor *in[1] = { x };
        CHECK_OK(test_run_op("Sigmoid", 13, "cpu", 1, in, NULL, 1, 0, NULL, &o));
        if (!o) return NULL;
        const rlx_tensor *in2[2] = { x, o[0] };
        rlx_tensor **o2 = NULL;
        CHECK_OK(test_run_op("Mul", 14, "cpu", 2, in2, NULL, 1, 0, NULL, &o2));
        test_free_outputs(o, 1);
        if (o2) y = o2[0], o2[0] = NULL;
        test_free_outputs(o2, 1);
        return y;
    }
    rlx_attr at[2];
    int na = op_attrs(c, at);
    if (strcmp(c->op, "Clip") == 0) {
        int64_t sd[1] = { 1 };
        rlx_tensor *lo = test_tensor_f32(0, sd, &c->alpha), *hi = test_tensor_f32(0, sd, &c->beta);
        const rlx_tensor *in[3] = { x, lo, hi };
        int konst[3] = { 0, 1, 1 };
        CHECK_OK(test_run_op("Clip", 13, "cpu", 3, in, konst, 1, 0, NULL, &o));
        rlx_tensor_destroy(lo);
        rlx_tensor_destroy(hi);
    } else {
        const rlx_tensor *in[1] = { x };
        CHECK_OK(test_run_op(c->op, c->version, "cpu", 1, in, NULL, 1, (size_t)na, at, &o));
    }
    if (o) y = o[0], o[0] = NULL;
    test_free_outputs(o, 1);
    return y;
}

/* The function as a one- (or, for Silu, two-) instruction FusedElementwise. */
static rlx_tensor *run_chain(const ew_case *c, rlx_tensor *x) {
    int64_t d[1] = { M };
    int64_t code1[5] = { c->fn, 0, -1, -1, 0 };
    int64_t code2[10] = { RLX_EW_SIGMOID, 0, -1, -1, 0, RLX_EW_MUL, 0, 1, -1, 0 };
    float fp[4] = { c->alpha, c->beta, 0, 0 };
    rlx_node_attr at[3];
    at[0] = c->op ? na_ints("code", 5, code1) : na_ints("code", 10, code2);
    at[1] = na_floats("fparams", c->op ? 2 : 4, fp);
    at[2] = na_int("dtype", RLX_DTYPE_F32);
    const rlx_tensor *in[1] = { x };
    rlx_tensor *y = NULL;
    CHECK_MSG(run_node_in(g_be, "rlx", "FusedElementwise", 1, 1, in, NULL, RLX_DTYPE_F32, 1, d, 3, at, &y, NULL) ==
                  RLX_OK,
              "%s chain: %s", c->label, rlx_last_error());
    return y;
}

/* The function as the fused activation of MatMul(x[M, 1], ones[1, 1]) or of
 * Conv(x[1, 1, M], w = 1[1, 1, 1]). */
static rlx_tensor *run_epilogue(const ew_case *c, rlx_tensor *x, bool conv) {
    rlx_ew_fn kind = c->op ? c->fn : RLX_EW_SILU;
    rlx_node_attr at[3];
    int na = 0;
    at[na++] = na_int("_rlx_act", kind);
    if (c->alpha != 0.0f) at[na++] = na_f("_rlx_act_alpha", c->alpha);
    if (c->beta != 0.0f) at[na++] = na_f("_rlx_act_beta", c->beta);
    float one = 1.0f;
    rlx_tensor *y = NULL, *xv = NULL, *w = NULL;
    rlx_status st;
    if (conv) {
        int64_t xd[3] = { 1, 1, M }, wd[3] = { 1, 1, 1 };
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, xd, 3, &xv));
        memcpy(xv->data, x->data, x->nbytes);
        w = test_tensor_f32(3, wd, &one);
        const rlx_tensor *in[2] = { xv, w };
        int konst[2] = { 0, 1 };
        st = run_node(g_be, "Conv", 11, 2, in, konst, 3, xd, na, at, &y, NULL);
    } else {
        int64_t xd[2] = { M, 1 }, wd[2] = { 1, 1 };
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, xd, 2, &xv));
        memcpy(xv->data, x->data, x->nbytes);
        w = test_tensor_f32(2, wd, &one);
        const rlx_tensor *in[2] = { xv, w };
        int konst[2] = { 0, 1 };
        st = run_node(g_be, "MatMul", 13, 2, in, konst, 2, xd, na, at, &y, NULL);
    }
    CHECK_MSG(st == RLX_OK, "%s %s epilogue: %s", c->label, conv ? "Conv" : "MatMul", rlx_last_error());
    rlx_tensor_destroy(xv);
    rlx_tensor_destroy(w);
    return y;
}

/* max |g - r| / |r| over the elements (|r| > 0), and whether every one is
 * within atol + rtol |r|. */
static double max_rel(const rlx_tensor *g, const rlx_tensor *r, double rtol, double atol, bool *ok) {
    double m = 0;
    *ok = g && r && g->nbytes == r->nbytes;
    if (!*ok) return INFINITY;
    const float *a = g->data, *b = r->data;
    for (size_t i = 0; i < g->nbytes / 4; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= atol + rtol * fabs((double)b[i]))) *ok = false;
        double q = b[i] != 0.0f ? e / fabs((double)b[i]) : e;
        if (q > m || q != q) m = q;
    }
    return m;
}

static void test_vocabulary_bits(void) {
    /* tolerances against the CPU reference, as test_webgpu.c's unary
     * cases: transcendental functions 1e-4 relative + 1e-7 absolute; + - *
     * / and comparisons 1e-6 relative */
    const double T = 1e-4, A = 1e-7;
    const ew_case cases[] = {
        { "Gelu", "Gelu", 20, RLX_EW_GELU, 0, 0, -5, 5, T, A },
        { "Gelu tanh", "Gelu", 20, RLX_EW_GELU_TANH, 0, 0, -5, 5, T, A },
        { "Tanh", "Tanh", 13, RLX_EW_TANH, 0, 0, -4, 4, T, A },
        { "Sigmoid", "Sigmoid", 13, RLX_EW_SIGMOID, 0, 0, -8, 8, T, A },
        { "HardSigmoid", "HardSigmoid", 6, RLX_EW_HARDSIGMOID, 0.3f, 0.4f, -5, 5, 1e-6, 1e-7 },
        { "LeakyRelu", "LeakyRelu", 16, RLX_EW_LEAKYRELU, 0.125f, 0, -3, 3, 0, 0 },
        { "Clip", "Clip", 13, RLX_EW_CLIP, -0.5f, 1.25f, -3, 3, 0, 0 },
        { "HardSwish", "HardSwish", 14, RLX_EW_HARDSWISH, 0, 0, -5, 5, 1e-6, 1e-7 },
        { "Silu pattern", NULL, 0, RLX_EW_SILU, 0, 0, -8, 8, T, A },
    };
    int64_t d[1] = { M };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        const ew_case *c = &cases[i];
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, c->lo, c->hi);
        float *xv = x->data;
        for (int k = 0; k < 16; k++) xv[k] = (float)(k - 8) * 1e-4f; /* near 0 */
        rlx_tensor *ref = run_cpu(c, x), *s = run_standalone(c, x), *ch = run_chain(c, x);
        rlx_tensor *mm = run_epilogue(c, x, false), *cv = run_epilogue(c, x, true);
        bool ok[4];
        double e_s = max_rel(s, ref, c->rtol, c->atol, &ok[0]), e_ch = max_rel(ch, ref, c->rtol, c->atol, &ok[1]);
        double e_mm = max_rel(mm, ref, c->rtol, c->atol, &ok[2]), e_cv = max_rel(cv, ref, c->rtol, c->atol, &ok[3]);
        fprintf(stderr, "  %-13s max |gpu - cpu| / |cpu|: standalone %.3g  chain %.3g  MatMul epilogue %.3g  Conv epilogue %.3g\n",
                c->label, e_s, e_ch, e_mm, e_cv);
        static const char *const what[4] = { "standalone", "chain", "MatMul epilogue", "Conv epilogue" };
        for (int k = 0; k < 4; k++)
            CHECK_MSG(ok[k], "%s %s: beyond rtol %g atol %g of the CPU reference", c->label, what[k], c->rtol,
                      c->atol);
        char label[96];
        snprintf(label, sizeof label, "%s: chain vs standalone", c->label);
        check_bits(label, ch, s);
        snprintf(label, sizeof label, "%s: MatMul epilogue vs standalone", c->label);
        if (mm) mm->rank = 1, mm->dims[0] = M;
        check_bits(label, mm, s);
        snprintf(label, sizeof label, "%s: Conv epilogue vs standalone", c->label);
        check_bits(label, cv, s);
        rlx_tensor_destroy(ref);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(ch);
        rlx_tensor_destroy(mm);
        rlx_tensor_destroy(cv);
        rlx_tensor_destroy(x);
    }
}

/* NaN and infinity policy (ew_funcs.h, ew_lib.wgsl): for NaN, +-inf, +-0,
 * the largest floats and arguments whose results overflow, the GPU gives
 * what the CPU reference gives: NaN exactly where the CPU has NaN, the same
 * infinity where it has one, else within rtol 1e-4 (+ 1e-30 absolute, so
 * that +-0 agree). Standalone and as a one-instruction chain; the binary
 * functions on every pair of edge values; Clip also with run-time bounds
 * (binary max and min dispatches). Each of these failed before the bit
 * tests: Tanh(NaN) = 1, HardSigmoid(NaN) = 1, Sinh(+-inf) and Sinh(800) =
 * NaN, Asinh(+-inf) = NaN, Acosh(-inf) = -inf, Max/Min of NaN = the other
 * operand, Clip of NaN with run-time bounds = a bound, Pow(1, inf) = NaN. */
#define N_EDGE 18
static const float k_edge[N_EDGE] = { NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1.0f, -1.0f, 3.4e38f, -3.4e38f,
                                      1e-3f, 100.0f, 800.0f, -800.0f, 0.5f, 2.0f, -2.0f, 3.0f, 1e30f };

static bool edge_agree(const char *label, const rlx_tensor *g, const rlx_tensor *r) {
    bool ok = g && r && g->nbytes == r->nbytes;
    CHECK_MSG(ok, "%s: no result or another size", label);
    if (!ok) return false;
    const float *a = g->data, *b = r->data;
    int bad = 0;
    for (size_t i = 0; i < g->nbytes / 4; i++) {
        bool same = isnan(b[i]) ? isnan(a[i])
                  : isinf(b[i]) ? a[i] == b[i]
                                : !isnan(a[i]) && fabs((double)a[i] - b[i]) <= 1e-30 + 1e-4 * fabs((double)b[i]);
        if (!same && bad++ < 4) fprintf(stderr, "  %s: element %zu: gpu %g, cpu %g\n", label, i, a[i], b[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d elements break the NaN/inf policy", label, bad);
    return bad == 0;
}

/* Log and Pow of subnormal arguments: ew_lib.wgsl's log_ and log2_ read a
 * positive subnormal's bits (lavapipe's log(1e-40) was -88.0, log of
 * 2^-127, where it is -92.1; Pow(1e-40, b) inherited it). WGSL lets a device
 * flush a subnormal operand, so a result for the flushed input (-inf; 0^b)
 * passes too. */
static void test_subnormal_logs(void) {
    static const float xs[] = { 1e-40f, -1e-40f, 1.4e-45f, 1.1754942e-38f, 5.9e-39f, 1e-3f, 3.0f };
    int64_t d[1] = { RLX_ARRAY_LEN(xs) };
    float bv[RLX_ARRAY_LEN(xs)];
    for (size_t i = 0; i < RLX_ARRAY_LEN(xs); i++) bv[i] = i % 2 ? -0.2f : 0.3f;
    rlx_tensor *x = test_tensor_f32(1, d, xs), *b = test_tensor_f32(1, d, bv);
    static const char *const ops[] = { "Log", "Pow" };
    for (size_t k = 0; k < RLX_ARRAY_LEN(ops); k++) {
        bool pw = k == 1;
        const rlx_tensor *in[2] = { x, b };
        rlx_tensor **o = NULL, *g = NULL;
        CHECK_OK(test_run_op(ops[k], pw ? 15 : 13, "cpu", pw ? 2 : 1, in, NULL, 1, 0, NULL, &o));
        CHECK_OK(run_node(g_be, ops[k], pw ? 15 : 13, pw ? 2 : 1, in, NULL, 1, d, 0, NULL, &g, NULL));
        if (!o || !g) {
            test_free_outputs(o, 1);
            rlx_tensor_destroy(g);
            continue;
        }
        const float *gv = g->data, *cv = o[0]->data;
        for (size_t i = 0; i < RLX_ARRAY_LEN(xs); i++) {
            bool sub = fabsf(xs[i]) < 1.17549435e-38f;
            float flushed = pw ? powf(copysignf(0.0f, xs[i]), bv[i]) : logf(copysignf(0.0f, xs[i]));
            bool ok = isnan(cv[i]) ? isnan(gv[i]) : fabs((double)gv[i] - cv[i]) <= 1e-4 * fabs((double)cv[i]);
            if (!ok && sub) ok = gv[i] == flushed || (flushed == 0 && fabsf(gv[i]) < 1.17549435e-38f);
            CHECK_MSG(ok, "%s(%g%s): gpu %g, cpu %g", ops[k], xs[i], pw ? (i % 2 ? ", -0.2" : ", 0.3") : "", gv[i], cv[i]);
        }
        test_free_outputs(o, 1);
        rlx_tensor_destroy(g);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(b);
}

static void test_edge_values(void) {
    int64_t d1[1] = { N_EDGE };
    rlx_tensor *x = test_tensor_f32(1, d1, k_edge);
    const ew_case unary[] = {
        { "Tanh", "Tanh", 13, RLX_EW_TANH, 0, 0, 0, 0, 0, 0 },
        { "HardSigmoid", "HardSigmoid", 6, RLX_EW_HARDSIGMOID, 0.3f, 0.4f, 0, 0, 0, 0 },
        { "HardSwish", "HardSwish", 14, RLX_EW_HARDSWISH, 0, 0, 0, 0, 0, 0 },
        { "Clip", "Clip", 13, RLX_EW_CLIP, -0.5f, 1.25f, 0, 0, 0, 0 },
        { "Sinh", "Sinh", 9, RLX_EW_SINH, 0, 0, 0, 0, 0, 0 },
        { "Asinh", "Asinh", 9, RLX_EW_ASINH, 0, 0, 0, 0, 0, 0 },
        { "Acosh", "Acosh", 9, RLX_EW_ACOSH, 0, 0, 0, 0, 0, 0 },
        { "Softsign", "Softsign", 1, RLX_EW_SOFTSIGN, 0, 0, 0, 0, 0, 0 },
        { "Mish", "Mish", 18, RLX_EW_MISH, 0, 0, 0, 0, 0, 0 },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(unary); i++) {
        const ew_case *c = &unary[i];
        rlx_tensor *ref = run_cpu(c, x), *s = NULL, *ch = NULL;
        const rlx_tensor *in[1] = { x };
        rlx_attr at[2];
        int na = op_attrs(c, at);
        rlx_node_attr nat[2];
        for (int k = 0; k < na; k++) nat[k] = to_node_attr(&at[k]);
        if (strcmp(c->op, "Clip") == 0) { /* constant bounds: the unary kernel */
            rlx_tensor *lo = test_tensor_f32(0, NULL, &c->alpha), *hi = test_tensor_f32(0, NULL, &c->beta);
            const rlx_tensor *in3[3] = { x, lo, hi };
            int konst[3] = { 0, 1, 1 };
            CHECK_OK(run_node(g_be, "Clip", 13, 3, in3, konst, 1, d1, 0, NULL, &s, NULL));
            rlx_tensor_destroy(lo);
            rlx_tensor_destroy(hi);
        } else {
            CHECK_OK(run_node(g_be, c->op, c->version, 1, in, NULL, 1, d1, na, nat, &s, NULL));
        }
        int64_t code[5] = { c->fn, 0, -1, -1, 0 };
        float fp[2] = { c->alpha, c->beta };
        rlx_node_attr ca[3] = { na_ints("code", 5, code), na_floats("fparams", 2, fp), na_int("dtype", RLX_DTYPE_F32) };
        CHECK_OK(run_node_in(g_be, "rlx", "FusedElementwise", 1, 1, in, NULL, RLX_DTYPE_F32, 1, d1, 3, ca, &ch, NULL));
        char label[64];
        snprintf(label, sizeof label, "%s standalone", c->label);
        edge_agree(label, s, ref);
        snprintf(label, sizeof label, "%s chain", c->label);
        edge_agree(label, ch, ref);
        rlx_tensor_destroy(ref);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(ch);
    }
    /* binary: a[i, j] = edge i, b[i, j] = edge j */
    int64_t d2[2] = { N_EDGE, N_EDGE };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, d2, 0, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, d2, 0, 1);
    for (int i = 0; i < N_EDGE; i++)
        for (int j = 0; j < N_EDGE; j++) ((float *)a->data)[i * N_EDGE + j] = k_edge[i], ((float *)b->data)[i * N_EDGE + j] = k_edge[j];
    static const char *const bin[] = { "Max", "Min", "Pow" };
    for (size_t k = 0; k < RLX_ARRAY_LEN(bin); k++) {
        const rlx_tensor *in[2] = { a, b };
        rlx_tensor **o = NULL, *g = NULL;
        int ver = strcmp(bin[k], "Pow") == 0 ? 15 : 13;
        CHECK_OK(test_run_op(bin[k], ver, "cpu", 2, in, NULL, 1, 0, NULL, &o));
        CHECK_OK(run_node(g_be, bin[k], ver, 2, in, NULL, 2, d2, 0, NULL, &g, NULL));
        if (o) edge_agree(bin[k], g, o[0]);
        test_free_outputs(o, 1);
        rlx_tensor_destroy(g);
    }
    /* Clip with run-time bounds: max(x, lo) then min(., hi) dispatches */
    float lo = -0.5f, hi = 1.25f;
    rlx_tensor *tlo = test_tensor_f32(0, NULL, &lo), *thi = test_tensor_f32(0, NULL, &hi);
    const rlx_tensor *cin[3] = { x, tlo, thi };
    rlx_tensor **o = NULL, *g = NULL;
    CHECK_OK(test_run_op("Clip", 13, "cpu", 3, cin, NULL, 1, 0, NULL, &o));
    CHECK_OK(run_node(g_be, "Clip", 13, 3, cin, NULL, 1, d1, 0, NULL, &g, NULL));
    if (o) edge_agree("Clip, run-time bounds", g, o[0]);
    test_free_outputs(o, 1);
    rlx_tensor_destroy(g);
    rlx_tensor_destroy(tlo);
    rlx_tensor_destroy(thi);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(x);
}

int main(void) {
    if (!gpu_open(&g_be, &g_be16, "test_gpu_ew")) return 0;
    double t0 = rlx_now_seconds();
    TIMED(test_vocabulary_bits, t0);
    TIMED(test_edge_values, t0);
    TIMED(test_subnormal_logs, t0);
    g_be->destroy(g_be);
    g_be16->destroy(g_be16);
    gpu_close();
    TEST_MAIN_END();
}
