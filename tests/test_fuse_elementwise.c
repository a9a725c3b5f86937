#define _POSIX_C_SOURCE 200809L
/* fuse_elementwise (passes/fuse_elementwise.c) on producers smaller than
 * the chain's output and on the variadic ops (test_fusion.c has the rest):
 *
 * - a cheap op (HardSwish, Abs, Sub, Clip, Neg, Cast) whose output
 *   broadcasts into a larger output joins the group (one fused step;
 *   backend-ops seeds 2 and 3 found HardSwish then Max left unfused);
 * - an expensive one (Sigmoid, Div, Round) on such a value stays out;
 * - Sum, Max, Min, Mean of 1, 2, 3 and 4 broadcast inputs join chains
 *   (left folds; Mean the sum divided by the count);
 *
 * each against the unfused plan (the pass off, RLX_DISABLE_PASSES) bit for
 * bit on the CPU (the same f32 operations on the same values: a smaller
 * value computed per output element has the same bits; Mean divides the
 * f32 sum by the count as the CPU's Mean kernel does), and the fused GPU
 * plan against the unfused CPU one within rtol 1e-5, atol 1e-6 (WGSL's
 * division, in HardSwish and Mean, may be off by 2.5 ulp; Sigmoid 1e-4). */
#include "test.h"

#include "ir/graph.h"
#include "runtime/session.h"
#include "fusion_util.h"

#define PASS "fuse_elementwise"

static int g_gpu;
/* check(): the first input also holds NaN, -0, infinities and ties with
 * the chains' constants, and the GPU comparison is skipped */
static bool g_specials;

static void add(rlx_model *m, const char *op, const char *ins, const char *outs, size_t na, const rlx_attr *a) {
    add_node(m, op, NULL, ins, outs, na, a);
}

static void scalar(rlx_model *m, const char *name, float v) { konst(m, name, test_tensor_f32(0, NULL, &v)); }

static int steps(const rlx_program *p) { return p ? (int)p->n_steps : -1; }

static bool same_bits(const rlx_tensor *a, const rlx_tensor *b) {
    return a && b && a->nbytes == b->nbytes && a->dtype == b->dtype && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* A model's graph inputs: names and shapes (f32). */
typedef struct feed {
    int n;
    const char *name[6];
    int rank[6];
    int64_t dims[6][4];
} feed;

/* Runs model m fused and unfused: the fused CPU plan has `want_steps`
 * steps, `want_fused` of them FusedElementwise, and none of op `left_out`
 * unless `left` (its count); its outputs are the unfused CPU plan's bit for
 * bit; the fused GPU plan runs on the GPU and agrees with the unfused CPU
 * within rtol, atol. */
static void check(const char *what, rlx_model *m, const feed *f, int want_steps, int want_fused, const char *left_out,
                  int left, double rtol, double atol) {
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *t[6];
    for (int i = 0; i < f->n; i++) t[i] = test_tensor_random(RLX_DTYPE_F32, f->rank[i], f->dims[i], -3, 3);
    static const float k_special[] = { NAN, -NAN, -0.0f, 0.0f, INFINITY, -INFINITY, -3.0f, 3.0f, 6.0f, 0.25f };
    for (size_t e = 0; g_specials && e < rlx_tensor_numel(t[0]); e += 7)
        ((float *)t[0]->data)[e] = k_special[(e / 7) % RLX_ARRAY_LEN(k_special)];
    const rlx_tensor *const *in = (const rlx_tensor *const *)t;
    run_t on = run(m, "cpu", NULL, (size_t)f->n, f->name, in);
    run_t off = run(m, "cpu", PASS, (size_t)f->n, f->name, in);
    CHECK_MSG(steps(on.p) == want_steps && count(on.p, "FusedElementwise") == want_fused,
              "%s: %d steps, %d fused (expected %d, %d)", what, steps(on.p), count(on.p, "FusedElementwise"), want_steps,
              want_fused);
    if (left_out)
        CHECK_MSG(count(on.p, left_out) == left, "%s: %d %s steps left (expected %d)", what, count(on.p, left_out), left_out,
                  left);
    CHECK_MSG(count(off.p, "FusedElementwise") == 0, "%s: fused with the pass off", what);
    CHECK_MSG(on.n == off.n && on.n > 0, "%s: %zu and %zu outputs", what, on.n, off.n);
    for (size_t i = 0; i < on.n && i < off.n; i++)
        CHECK_MSG(same_bits(on.out[i], off.out[i]), "%s: output %zu: fused and unfused CPU differ (max abs %g)", what, i,
                  test_max_abs_diff(on.out[i], off.out[i]));
    if (g_gpu && !g_specials) {
        run_t gpu = run(m, "gpu", NULL, (size_t)f->n, f->name, in);
        int cpu = 0;
        for (size_t i = 0; gpu.p && i < gpu.p->n_steps; i++) cpu += gpu.p->step_on[i] == RLX_STEP_CPU;
        CHECK_MSG(cpu == 0, "%s: %d steps fell back to the CPU on the GPU", what, cpu);
        CHECK_MSG(count(gpu.p, "FusedElementwise") == want_fused, "%s: %d fused on the GPU (expected %d)", what,
                  count(gpu.p, "FusedElementwise"), want_fused);
        char w[160];
        snprintf(w, sizeof w, "%s (gpu fused vs cpu unfused)", what);
        agree(w, &gpu, &off, rtol, atol);
        run_free(&gpu);
    }
    run_free(&on);
    run_free(&off);
    for (int i = 0; i < f->n; i++) rlx_tensor_destroy(t[i]);
    rlx_model_destroy(m);
}

static rlx_model *model(const feed *f) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(17, &m));
    for (int i = 0; i < f->n; i++) input(m, f->name[i], RLX_DTYPE_F32, f->rank[i], f->dims[i]);
    return m;
}

/* Cheap ops on values smaller than the output join its group. */
static void test_cheap_joins(void) {
    /* the backend-ops case: HardSwish on x [5,1,5,3], Max with y [1,3,5,3] */
    feed f = { 2, { "x", "y" }, { 4, 4 }, { { 5, 1, 5, 3 }, { 1, 3, 5, 3 } } };
    rlx_model *m = model(&f);
    add(m, "HardSwish", "x", "h", 0, NULL);
    add(m, "Max", "h,y", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("HardSwish [5,1,5,3], Max with [1,3,5,3]", m, &f, 1, 1, "HardSwish", 0, 1e-5, 1e-6);

    /* Abs, Sub of a constant [1], Clip, Cast (to f32: a copy) on x [3,1];
     * Mul with y [2,3,4]; Neg on a row r [4], then Add; Relu */
    feed f2 = { 3, { "x", "y", "r" }, { 2, 3, 1 }, { { 3, 1 }, { 2, 3, 4 }, { 4 } } };
    m = model(&f2);
    konst(m, "k", test_tensor_f32(1, (const int64_t[]){ 1 }, (const float[]){ 0.75f }));
    scalar(m, "lo", -0.5f);
    scalar(m, "hi", 1.25f);
    add(m, "Abs", "x", "a", 0, NULL);
    add(m, "Sub", "a,k", "b", 0, NULL);
    add(m, "Clip", "b,lo,hi", "c", 0, NULL);
    rlx_attr to = RLX_ATTR_I("to", RLX_DTYPE_F32);
    add(m, "Cast", "c", "d", 1, &to);
    add(m, "Mul", "d,y", "e", 0, NULL);
    add(m, "Neg", "r", "rn", 0, NULL);
    add(m, "Add", "e,rn", "g", 0, NULL);
    add(m, "Relu", "g", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("Abs Sub Clip Cast on [3,1], Mul [2,3,4], Neg on [4], Add, Relu", m, &f2, 1, 1, "Neg", 0, 1e-5, 1e-6);
}

/* Per-channel and scalar producers (the CPU kernel hoists them: once per
 * row of 35 elements, once per call), with rows long enough for its rows
 * path, bit for bit as the unfused plan: HardSigmoid on s [1,8,1,1] and
 * Clip on a scalar t, into x [2,8,5,7]; Neg and Abs on s, Max with x. */
static void test_hoisted(void) {
    feed f = { 3, { "x", "s", "t" }, { 4, 4, 1 }, { { 2, 8, 5, 7 }, { 1, 8, 1, 1 }, { 1 } } };
    rlx_model *m = model(&f);
    scalar(m, "lo", -0.5f);
    scalar(m, "hi", 0.75f);
    rlx_attr hs[2] = { RLX_ATTR_F("alpha", 0.3f), RLX_ATTR_F("beta", 0.4f) };
    add(m, "HardSigmoid", "s", "a", 2, hs);
    add(m, "Clip", "t,lo,hi", "c", 0, NULL);
    add(m, "Mul", "x,a", "b", 0, NULL);
    add(m, "Add", "b,c", "e", 0, NULL);
    add(m, "Relu", "e", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("HardSigmoid on [1,8,1,1], Clip on [1], Mul, Add into [2,8,5,7], Relu", m, &f, 1, 1, "HardSigmoid", 0, 1e-5,
          1e-6);
    feed f2 = { 2, { "x", "s" }, { 4, 4 }, { { 2, 8, 5, 7 }, { 1, 8, 1, 1 } } };
    m = model(&f2);
    add(m, "Neg", "s", "a", 0, NULL);
    add(m, "Abs", "a", "b", 0, NULL);
    add(m, "Max", "x,b", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("Neg Abs on [1,8,1,1], Max with [2,8,5,7]", m, &f2, 1, 1, "Neg", 0, 1e-5, 1e-6);
}

/* A producer whose inputs would leave the group's tensor inputs of a lower
 * rank than its output (a constant scalar [1,1] widens x [3] to [1,3]: the
 * node's shape is the broadcast of its tensor inputs) stays out; the rest
 * fuses (with the Mul in, nothing fused before). */
static void test_rank_widening(void) {
    feed f = { 2, { "x", "y" }, { 1, 1 }, { { 3 }, { 3 } } };
    rlx_model *m = model(&f);
    konst(m, "c", test_tensor_f32(2, (const int64_t[]){ 1, 1 }, (const float[]){ 1.5f }));
    add(m, "Mul", "x,c", "a", 0, NULL);
    add(m, "Add", "a,y", "b", 0, NULL);
    add(m, "Relu", "b", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("Mul(x [3], c [1,1]), Add y [3], Relu", m, &f, 2, 1, "Mul", 1, 1e-5, 1e-6);
}

/* Expensive ops on values smaller than the output stay out (once per
 * element of their own output); what follows them still fuses. */
static void test_expensive_stays(void) {
    static const char *const k_ops[] = { "Sigmoid", "Div", "Round" };
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_ops); k++) {
        feed f = { 3, { "x", "w", "y" }, { 2, 2, 3 }, { { 3, 1 }, { 3, 1 }, { 2, 3, 4 } } };
        rlx_model *m = model(&f);
        add(m, k_ops[k], k == 1 ? "x,w" : "x", "s", 0, NULL);
        add(m, "Mul", "s,y", "e", 0, NULL);
        add(m, "Neg", "e", "z", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "z"));
        char w[96];
        snprintf(w, sizeof w, "%s on [3,1], Mul with [2,3,4], Neg", k_ops[k]);
        check(w, m, &f, 2, 1, k_ops[k], 1, 1e-4, 1e-5);
    }
    /* the same op with the output's shape joins */
    feed f = { 2, { "x", "y" }, { 3, 3 }, { { 2, 3, 4 }, { 2, 3, 4 } } };
    rlx_model *m = model(&f);
    add(m, "Sigmoid", "x", "s", 0, NULL);
    add(m, "Mul", "s,y", "e", 0, NULL);
    add(m, "Neg", "e", "z", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "z"));
    check("Sigmoid on [2,3,4], Mul, Neg", m, &f, 1, 1, "Sigmoid", 0, 1e-4, 1e-5);
}

/* Sum, Max, Min and Mean of one to four inputs (broadcast: [2,3,4], [3,1],
 * [4], a constant scalar) join chains; Mean of three divides the f32 sum by
 * 3 (the CPU kernel's bits; a product by 1/3 differs). */
static void test_variadic(void) {
    static const struct {
        const char *op, *ins, *what;
    } k_cases[] = {
        { "Sum", "aa,b,c", "Sum(3)" },   { "Max", "aa,b,c", "Max(3)" },     { "Min", "aa,b,c,h", "Min(4)" },
        { "Mean", "aa,b,c", "Mean(3)" }, { "Mean", "aa,b,c,h", "Mean(4)" }, { "Mean", "aa,b", "Mean(2)" },
        { "Sum", "aa", "Sum(1)" },       { "Max", "b", "Max(1) of [3,1]" }, { "Mean", "aa", "Mean(1)" },
    };
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_cases); k++) {
        feed f = { 3, { "a", "b", "c" }, { 3, 2, 1 }, { { 2, 3, 4 }, { 3, 1 }, { 4 } } };
        rlx_model *m = model(&f);
        scalar(m, "h", 0.5f);
        add(m, "Abs", "a", "aa", 0, NULL); /* a producer: the variadic op is inside the chain */
        add(m, k_cases[k].op, k_cases[k].ins, "v", 0, NULL);
        /* the variadic op's output [3,1] (Max(1) of b) broadcasts into [2,3,4] */
        add(m, "Add", "v,a", "w", 0, NULL);
        add(m, "Neg", "w", "z", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "z"));
        char w[96];
        snprintf(w, sizeof w, "Abs, %s, Add, Neg", k_cases[k].what);
        check(w, m, &f, 1, 1, k_cases[k].op, 0, 1e-5, 1e-6);
    }
}

/* The CPU kernel's AVX-512 form (row_v16) on the select-type functions
 * (Clip, Max, Min, Neg, Abs, HardSigmoid, HardSwish) beside + - * /: the
 * PP-OCR backbone's decomposed HardSwish (Add 3, Clip 0 6, Mul x, Div 6)
 * between scalar affine steps, by blocks (scalar operands only) and by rows
 * (a per-channel operand), on 9102 elements (not a multiple of 16) with
 * NaN, -0, infinities and ties: the unfused plan's bits. */
static void test_selects_v16(void) {
    for (int rows = 0; rows < 2; rows++) {
        feed f = { 2, { "x", "s" }, { 4, 4 }, { { 2, 3, 37, 41 }, { 1, 3, 1, 1 } } };
        rlx_model *m = model(&f);
        scalar(m, "w0", 1.25f);
        scalar(m, "w1", -0.5f);
        scalar(m, "three", 3.0f);
        scalar(m, "zero", 0.0f);
        scalar(m, "six", 6.0f);
        scalar(m, "lo", -0.75f);
        rlx_attr hs[2] = { RLX_ATTR_F("alpha", 0.3f), RLX_ATTR_F("beta", 0.4f) };
        add(m, "Mul", "w0,x", "a", 0, NULL);
        add(m, "Add", "a,w1", "b", 0, NULL);
        add(m, "Add", "b,three", "c", 0, NULL);
        add(m, "Clip", "c,zero,six", "d", 0, NULL);
        add(m, "Mul", "b,d", "e", 0, NULL);
        add(m, "Div", "e,six", "g", 0, NULL);
        add(m, "Max", rows ? "g,s" : "g,lo", "h", 0, NULL);
        add(m, "Min", "h,three", "i", 0, NULL);
        add(m, "Neg", "i", "j", 0, NULL);
        add(m, "Abs", "j", "k", 0, NULL);
        add(m, "HardSigmoid", "k", "l", 2, hs);
        add(m, "HardSwish", "x", "hw", 0, NULL);
        add(m, "Sub", "l,hw", "z", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "z"));
        g_specials = true;
        check(rows ? "PP-OCR's HardSwish and selects by rows" : "PP-OCR's HardSwish and selects by blocks", m, &f, 1,
              1, "Clip", 0, 1e-5, 1e-6);
        g_specials = false;
    }
}

int main(void) {
    test_seed_from_env();
    g_gpu = test_have_gpu();
    if (!g_gpu) fprintf(stderr, "no GPU adapter: the GPU comparisons are skipped\n");
    test_cheap_joins();
    test_rank_widening();
    test_hoisted();
    test_expensive_stays();
    test_variadic();
    test_selects_v16();
    TEST_MAIN_END();
}
