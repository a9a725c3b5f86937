#define _POSIX_C_SOURCE 200809L
/* The fusion passes, one section each: fuse_activation, fuse_elementwise,
 * fuse_add_layernorm, fuse_attention; then the demo model and the BERT
 * encoder. Each fusion is checked where it must apply (node counts of the
 * compiled program) and where a precondition fails (a second user, a graph
 * output, a non-constant operand, a shape mismatch, unsupported
 * parameters); results are compared with the unfused graph (the passes
 * turned off with the option passes.disable) on random inputs, on the CPU and,
 * where an adapter exists, on the GPU. Tolerances are stated at each
 * comparison. */
#include "test.h"

#include <stdlib.h>

#include <unistd.h>

#include "backend/cpu/cpu.h"
#include "ir/graph.h"
#include "ir/ops/act.h"
#include "runtime/session.h"
#include "fusion_util.h"

#define ALL_FUSIONS "fuse_activation,fuse_attention,fuse_layernorm,fuse_add_layernorm,fuse_elementwise"

static int g_gpu;

/* ------------------------------------------------------------ helpers */

/* a node with a generated name */
static void add(rlx_model *m, const char *op, const char *ins, const char *outs, size_t na, const rlx_attr *a) {
    add_node(m, op, NULL, ins, outs, na, a);
}

static void scalar(rlx_model *m, const char *name, float v) { konst(m, name, test_tensor_f32(0, NULL, &v)); }

/* Dispatches of the fused GPU run of the last check_fused (-1 without a
 * GPU). */
static long g_gpu_dispatches = -1;

static int steps(const rlx_program *p) { return p ? (int)p->n_steps : -1; }

/* Fused on the CPU against unfused on the CPU (and fused GPU against the
 * unfused CPU when a GPU exists); returns the fused CPU run (caller frees). */
static run_t check_fused(const char *what, const rlx_model *m, size_t n_in, const char *const *names,
                         const rlx_tensor *const *in, double rtol, double atol, double gpu_rtol, double gpu_atol) {
    run_t on = run(m, "cpu", NULL, n_in, names, in);
    run_t off = run(m, "cpu", ALL_FUSIONS, n_in, names, in);
    agree(what, &on, &off, rtol, atol);
    g_gpu_dispatches = -1;
    if (g_gpu) {
        run_t gpu = run(m, "gpu", NULL, n_in, names, in);
        char w[256];
        snprintf(w, sizeof w, "%s (gpu fused vs cpu unfused)", what);
        agree(w, &gpu, &off, gpu_rtol, gpu_atol);
        /* the fused nodes run on the GPU: the program has no CPU step */
        int cpu_steps = 0;
        for (size_t i = 0; gpu.p && i < gpu.p->n_steps; i++) cpu_steps += gpu.p->step_on[i] == RLX_STEP_CPU;
        CHECK_MSG(cpu_steps == 0, "%s: %d steps fell back to the CPU on the GPU", what, cpu_steps);
        g_gpu_dispatches = dispatches(gpu.s);
        run_free(&gpu);
    }
    run_free(&off);
    return on;
}

/* ------------------------------------------------------------ fuse_activation */

/* A Conv followed by `act` (with attributes / constant bound inputs) fuses
 * into one Conv whose _rlx_act is `kind`. */
typedef struct act_case {
    const char *op;
    int opset;
    rlx_act_kind kind;
    size_t na;
    rlx_attr a[2];
    bool clip_inputs; /* Clip-11+: min 0, max 6 as constant inputs */
} act_case;

static void test_conv_activations(void) {
    static const act_case cases[] = {
        { "Relu", 13, RLX_ACT_RELU, 0, { { 0 } }, false },
        { "Clip", 13, RLX_ACT_CLIP, 0, { { 0 } }, true },
        { "Clip", 6, RLX_ACT_CLIP, 2, { RLX_ATTR_F("min", -0.25f), RLX_ATTR_F("max", 0.5f) }, false },
        { "HardSigmoid", 13, RLX_ACT_HARDSIGMOID, 2, { RLX_ATTR_F("alpha", 0.3f), RLX_ATTR_F("beta", 0.4f) }, false },
        { "HardSwish", 14, RLX_ACT_HARDSWISH, 0, { { 0 } }, false },
        { "Sigmoid", 13, RLX_ACT_SIGMOID, 0, { { 0 } }, false },
        { "LeakyRelu", 16, RLX_ACT_LEAKYRELU, 1, { RLX_ATTR_F("alpha", 0.125f) }, false },
        { "Tanh", 13, RLX_ACT_TANH, 0, { { 0 } }, false },
        { "Gelu", 20, RLX_ACT_GELU, 0, { { 0 } }, false },
        { "Gelu", 20, RLX_ACT_GELU_TANH, 1, { RLX_ATTR_S("approximate", "tanh") }, false },
    };
    int64_t xd[4] = { 1, 3, 7, 6 }, wd[4] = { 4, 3, 3, 3 }, bd[1] = { 4 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    for (size_t c = 0; c < RLX_ARRAY_LEN(cases); c++) {
        const act_case *ac = &cases[c];
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(ac->opset, &m));
        input(m, "x", RLX_DTYPE_F32, 4, xd);
        konst(m, "w", test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1));
        konst(m, "b", test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1));
        rlx_attr pads = RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 }));
        add(m, "Conv", "x,w,b", "c", 1, &pads);
        if (ac->clip_inputs) {
            scalar(m, "lo", 0.0f);
            scalar(m, "hi", 0.5f);
            add(m, ac->op, "c,lo,hi", "y", 0, NULL);
        } else {
            add(m, ac->op, "c", "y", ac->na, ac->a);
        }
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        char what[96];
        snprintf(what, sizeof what, "Conv + %s-%d", ac->op, ac->opset);
        /* the epilogue applies the activation to the same f32 sum: rtol
         * 1e-5 covers erff/tanhf against the double-based unfused kernels;
         * the GPU's transcendental functions: 1e-4 relative, 1e-6 absolute */
        run_t on = check_fused(what, m, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, 1e-5, 1e-6, 1e-4, 1e-6);
        CHECK_MSG(steps(on.p) == 1 && count(on.p, "Conv") == 1, "%s: %d steps", what, steps(on.p));
        const rlx_node *cv = first(on.p, "Conv");
        CHECK_MSG(cv && rlx_node_act(cv).kind == ac->kind, "%s: act %d, expected %d", what, cv ? (int)rlx_node_act(cv).kind : -1,
                  (int)ac->kind);
        /* the conv kernel applies the activation itself: one dispatch */
        if (g_gpu) CHECK_MSG(g_gpu_dispatches == 1, "%s: %ld GPU dispatches, expected 1", what, g_gpu_dispatches);
        run_free(&on);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(x);
}

/* The patterns exporters write: SiLU x * Sigmoid(x), GELU x * 0.5 * (1 +
 * Erf(x / sqrt 2)) in its three associations; and MatMul + bias + GELU. */
static void test_patterns(void) {
    int64_t ad[3] = { 2, 5, 8 }, bd[2] = { 8, 6 }, nd[1] = { 6 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 3, ad, -2, 2);
    for (int form = 0; form < 4; form++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        input(m, "a", RLX_DTYPE_F32, 3, ad);
        konst(m, "B", test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1));
        konst(m, "bias", test_tensor_random(RLX_DTYPE_F32, 1, nd, -1, 1));
        scalar(m, "sqrt2", 1.4142135623730951f);
        scalar(m, "half", 0.5f);
        scalar(m, "one", 1.0f);
        add(m, "MatMul", "a,B", "mm", 0, NULL);
        add(m, "Add", "bias,mm", "x", 0, NULL); /* the bias first: either order fuses */
        if (form == 0) { /* SiLU */
            add(m, "Sigmoid", "x", "s", 0, NULL);
            add(m, "Mul", "s,x", "y", 0, NULL);
        } else {
            add(m, "Div", "x,sqrt2", "d", 0, NULL);
            add(m, "Erf", "d", "e", 0, NULL);
            add(m, "Add", "e,one", "e1", 0, NULL);
            if (form == 1) { /* (x * 0.5) * (1 + erf) */
                add(m, "Mul", "x,half", "h", 0, NULL);
                add(m, "Mul", "h,e1", "y", 0, NULL);
            } else if (form == 2) { /* (x * (1 + erf)) * 0.5 */
                add(m, "Mul", "x,e1", "h", 0, NULL);
                add(m, "Mul", "h,half", "y", 0, NULL);
            } else { /* x * (0.5 * (1 + erf)) */
                add(m, "Mul", "half,e1", "h", 0, NULL);
                add(m, "Mul", "x,h", "y", 0, NULL);
            }
        }
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        char what[64];
        snprintf(what, sizeof what, "MatMul + bias + %s form %d", form ? "GELU" : "SiLU", form);
        /* GELU: erff in the epilogue vs erf in double unfused, rtol 1e-5 */
        run_t on = check_fused(what, m, 1, (const char *[]){ "a" }, (const rlx_tensor *[]){ a }, 1e-5, 1e-6, 1e-4, 1e-6);
        const rlx_node *mm = first(on.p, "MatMul");
        CHECK_MSG(steps(on.p) == 1 && mm && mm->n_in == 3 &&
                      rlx_node_act(mm).kind == (form ? RLX_ACT_GELU : RLX_ACT_SILU),
                  "%s: %d steps", what, steps(on.p));
        /* the GEMM adds the bias and applies the activation: one dispatch */
        if (g_gpu) CHECK_MSG(g_gpu_dispatches == 1, "%s: %ld GPU dispatches, expected 1", what, g_gpu_dispatches);
        run_free(&on);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(a);
}

/* ConvTranspose + Relu, Gemm + LeakyRelu, a depthwise Conv + HardSwish and
 * MatMul + bias [1, N] fuse; on the CPU the reference and fast paths agree
 * with the epilogue applied (each fused node run both ways, rtol 1e-5). */
static void test_other_producers(void) {
    int64_t xd[4] = { 2, 4, 5, 5 }, twd[4] = { 4, 3, 3, 3 }, dwd[4] = { 4, 1, 3, 3 };
    int64_t gad[2] = { 5, 7 }, gbd[2] = { 9, 7 }, gcd[1] = { 9 }, bd2[2] = { 1, 9 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(16, &m));
    input(m, "x", RLX_DTYPE_F32, 4, xd);
    input(m, "ga", RLX_DTYPE_F32, 2, gad);
    konst(m, "tw", test_tensor_random(RLX_DTYPE_F32, 4, twd, -1, 1));
    konst(m, "dw", test_tensor_random(RLX_DTYPE_F32, 4, dwd, -1, 1));
    konst(m, "gb", test_tensor_random(RLX_DTYPE_F32, 2, gbd, -1, 1));
    konst(m, "gc", test_tensor_random(RLX_DTYPE_F32, 1, gcd, -1, 1));
    konst(m, "mb", test_tensor_random(RLX_DTYPE_F32, 2, gbd, -1, 1));
    konst(m, "bias", test_tensor_random(RLX_DTYPE_F32, 2, bd2, -1, 1));
    rlx_attr st2 = RLX_ATTR_IS("strides", 2, ((int64_t[]){ 2, 2 }));
    add(m, "ConvTranspose", "x,tw", "t", 1, &st2);
    add(m, "Relu", "t", "y1", 0, NULL);
    rlx_attr dwa[2] = { RLX_ATTR_I("group", 4), RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 })) };
    add(m, "Conv", "x,dw", "d", 2, dwa);
    add(m, "HardSwish", "d", "y2", 0, NULL);
    rlx_attr tb = RLX_ATTR_I("transB", 1);
    add(m, "Gemm", "ga,gb,gc", "g", 1, &tb);
    rlx_attr lr = RLX_ATTR_F("alpha", 0.2f);
    add(m, "LeakyRelu", "g", "y3", 1, &lr);
    add(m, "Transpose", "mb", "mbt", 0, NULL);
    add(m, "MatMul", "ga,mbt", "mm", 0, NULL);
    add(m, "Add", "mm,bias", "y4", 0, NULL);
    const char *outs[] = { "y1", "y2", "y3", "y4" };
    for (int i = 0; i < 4; i++) CHECK_OK(rlx_model_add_output(m, outs[i]));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *ga = test_tensor_random(RLX_DTYPE_F32, 2, gad, -1, 1);
    const char *names[2] = { "x", "ga" };
    const rlx_tensor *in[2] = { x, ga };
    run_t on = check_fused("ConvTranspose/depthwise Conv/Gemm/MatMul epilogues", m, 2, names, in, 1e-5, 1e-6, 1e-4, 1e-6);
    CHECK_MSG(steps(on.p) == 4, "%d steps (4 expected)", steps(on.p));
    /* ConvTranspose (conv_transpose.wgsl), depthwise Conv (dwconv.wgsl),
     * Gemm and MatMul (gemm.wgsl) each apply their activation and bias in
     * their own kernel: one dispatch per node, no epilogue dispatch */
    if (g_gpu) CHECK_MSG(g_gpu_dispatches == 4, "%ld GPU dispatches, expected 4", g_gpu_dispatches);
    CHECK(first(on.p, "ConvTranspose") && rlx_node_act(first(on.p, "ConvTranspose")).kind == RLX_ACT_RELU);
    CHECK(first(on.p, "Conv") && rlx_node_act(first(on.p, "Conv")).kind == RLX_ACT_HARDSWISH);
    CHECK(first(on.p, "Gemm") && rlx_node_act(first(on.p, "Gemm")).kind == RLX_ACT_LEAKYRELU);
    const rlx_node *mm = first(on.p, "MatMul");
    CHECK_MSG(mm && mm->n_in == 3 && mm->in[2] >= 0 && on.p->g->values[mm->in[2]].rank == 1,
              "MatMul + Add([1, N]) should carry a [N] bias");
    /* reference vs fast CPU paths of each fused node */
    for (size_t i = 0; on.p && i < on.p->n_steps; i++) {
        const rlx_graph *g = on.p->g;
        const rlx_node *n = &g->nodes[on.p->steps[i]];
        const rlx_tensor *ins[4] = { NULL, NULL, NULL, NULL };
        rlx_tensor *made[4] = { NULL, NULL, NULL, NULL };
        for (int k = 0; k < n->n_in && k < 4; k++) {
            const rlx_value *v = rlx_node_input(g, n, k);
            if (!v) continue;
            if (v->konst) ins[k] = v->konst;
            else ins[k] = made[k] = test_tensor_random(RLX_DTYPE_F32, v->rank, v->dims, -1, 1);
        }
        const rlx_value *yv = rlx_node_output(g, n, 0);
        rlx_tensor *yr = test_tensor(RLX_DTYPE_F32, yv->rank, yv->dims), *yf = test_tensor(RLX_DTYPE_F32, yv->rank, yv->dims);
        CHECK_OK(rlx_cpu_run_node(g, n, ins, &yr, true));
        CHECK_OK(rlx_cpu_run_node(g, n, ins, &yf, false));
        CHECK_MSG(test_allclose(yf, yr, 1e-5, 1e-6), "%s: fast path vs reference with its epilogue (rtol 1e-5)",
                  rlx_node_desc(n));
        rlx_tensor_destroy(yr);
        rlx_tensor_destroy(yf);
        for (int k = 0; k < 4; k++) rlx_tensor_destroy(made[k]);
    }
    run_free(&on);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(ga);
}

/* Preconditions: no fusion when the producer's output has a second user,
 * is a graph output, the bias is not constant or not [N], Clip's bounds are
 * not constant, or the GELU pattern's constant is not sqrt 2. */
static void test_activation_preconditions(void) {
    int64_t ad[2] = { 4, 6 }, bd[2] = { 6, 5 }, nd[1] = { 5 }, fd[2] = { 4, 5 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *yin = test_tensor_random(RLX_DTYPE_F32, 1, nd, -1, 1);
    rlx_tensor *lo = test_tensor_f32(0, NULL, (const float[]){ -0.1f });
    for (int c = 0; c < 6; c++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        input(m, "a", RLX_DTYPE_F32, 2, ad);
        input(m, "u", RLX_DTYPE_F32, 1, nd);
        input(m, "lo", RLX_DTYPE_F32, 0, NULL);
        konst(m, "B", test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1));
        konst(m, "full", test_tensor_random(RLX_DTYPE_F32, 2, fd, -1, 1));
        scalar(m, "c15", 1.5f);
        scalar(m, "half", 0.5f);
        scalar(m, "one", 1.0f);
        add(m, "MatMul", "a,B", "x", 0, NULL);
        const char *what = "";
        switch (c) {
        case 0:
            what = "second user";
            add(m, "Relu", "x", "r", 0, NULL);
            add(m, "Neg", "x", "n", 0, NULL);
            add(m, "Add", "r,n", "y", 0, NULL);
            break;
        case 1:
            what = "graph output";
            add(m, "Relu", "x", "y", 0, NULL);
            CHECK_OK(rlx_model_add_output(m, "x"));
            break;
        case 2:
            what = "non-constant bias";
            add(m, "Add", "x,u", "y", 0, NULL);
            break;
        case 3:
            what = "bias of shape [M, N]";
            add(m, "Add", "x,full", "y", 0, NULL);
            break;
        case 4:
            what = "Clip with a non-constant bound";
            add(m, "Clip", "x,lo", "y", 0, NULL);
            break;
        case 5:
            what = "GELU pattern with 1.5 for sqrt 2";
            add(m, "Div", "x,c15", "d", 0, NULL);
            add(m, "Erf", "d", "e", 0, NULL);
            add(m, "Add", "e,one", "e1", 0, NULL);
            add(m, "Mul", "x,half", "h", 0, NULL);
            add(m, "Mul", "h,e1", "y", 0, NULL);
            break;
        }
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        const char *names[3] = { "a", "u", "lo" };
        const rlx_tensor *in[3] = { a, yin, lo };
        rlx_options *opts = test_options("passes.disable=fuse_elementwise", NULL);
        rlx_session *s = NULL;
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_create_with_options(m, NULL, opts, &s));
        rlx_options_destroy(opts);
        CHECK_OK(rlx_session_run(s, 3, names, in, &out, &n));
        const rlx_program *p = rlx_session_last_program(s);
        const rlx_node *mm = first(p, "MatMul");
        CHECK_MSG(mm && mm->n_in == 2 && rlx_node_act(mm).kind == RLX_ACT_NONE, "%s: the MatMul must stay unfused", what);
        test_free_outputs(out, (int)n);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(yin);
    rlx_tensor_destroy(lo);
}

/* Direct and im2col + GEMM convolution keep agreeing bit for bit on the GPU
 * with a fused activation. */
static void test_conv_direct_vs_gemm_epilogue(void) {
    if (!g_gpu) return;
    int64_t xd[4] = { 2, 4, 6, 5 }, wd[4] = { 6, 2, 3, 3 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 4, xd);
    konst(m, "w", test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1));
    rlx_attr at[2] = { RLX_ATTR_I("group", 2), RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 0, 1, 2 })) };
    add(m, "Conv", "x,w", "c", 2, at);
    add(m, "Sigmoid", "c", "y", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor **o[2] = { NULL, NULL };
    size_t n[2] = { 0, 0 };
    for (int direct = 0; direct < 2; direct++) {
        rlx_session_options opt = { .device = "gpu", .gpu_conv_direct = direct };
        rlx_session *s = NULL;
        rlx_options *all = test_options("passes.disable=", NULL); /* every pass on, whatever the environment says */
        CHECK_OK(rlx_session_create_with_options(m, &opt, all, &s));
        rlx_options_destroy(all);
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &o[direct], &n[direct]));
        const rlx_node *cv = first(rlx_session_last_program(s), "Conv");
        CHECK(cv && rlx_node_act(cv).kind == RLX_ACT_SIGMOID);
        rlx_session_destroy(s);
    }
    CHECK_MSG(o[0] && o[1] && o[0][0]->nbytes == o[1][0]->nbytes &&
                  memcmp(o[0][0]->data, o[1][0]->data, o[0][0]->nbytes) == 0,
              "conv + sigmoid: direct and im2col + GEMM differ (bit for bit expected)");
    test_free_outputs(o[0], (int)n[0]);
    test_free_outputs(o[1], (int)n[1]);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* The shared epilogue of wg_lower_node: a lowering that does not apply a
 * node's fused activation (here an Add carrying _rlx_act, which no pass
 * creates but which exercises the path) gets dispatches y = act(y) in place
 * after its own, exactly once: one more dispatch with the default limits,
 * blocks under 4 KiB bindings. Compared with tanh / HardSigmoid of x + c
 * in C on the GPU (CPU kernels of Add ignore the attribute). */
static void test_shared_epilogue(void) {
    if (!g_gpu) return;
    int64_t xd[2] = { 3, 1000 }, cd[1] = { 1000 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -2, 2), *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -2, 2);
    static const struct { rlx_act_kind kind; float alpha, beta; } acts[2] = {
        { RLX_ACT_TANH, 0.0f, 0.0f }, { RLX_ACT_HARDSIGMOID, 0.3f, 0.4f }
    };
    for (int k = 0; k < 2; k++)
        for (int small = 0; small < 2; small++) {
            long disp[2] = { -1, -1 };
            rlx_tensor *y = NULL;
            for (int with = 0; with < 2; with++) {
                rlx_model *m = NULL;
                CHECK_OK(rlx_model_create(13, &m));
                input(m, "x", RLX_DTYPE_F32, 2, xd);
                CHECK_OK(rlx_model_add_initializer(m, "c", c)); /* copied */
                rlx_attr at[3] = { RLX_ATTR_I("_rlx_act", acts[k].kind), RLX_ATTR_F("_rlx_act_alpha", acts[k].alpha),
                                   RLX_ATTR_F("_rlx_act_beta", acts[k].beta) };
                add(m, "Add", "x,c", "y", with ? 3 : 0, at);
                CHECK_OK(rlx_model_add_output(m, "y"));
                CHECK_OK(rlx_model_finish(m));
                run_t r = run_with(m, "gpu", ALL_FUSIONS, small ? "gpu.max_binding_bytes=4096" : NULL, 1,
                                   (const char *[]){ "x" }, (const rlx_tensor *[]){ x });
                disp[with] = dispatches(r.s);
                int cpu_steps = 0;
                for (size_t i = 0; r.p && i < r.p->n_steps; i++) cpu_steps += r.p->step_on[i] == RLX_STEP_CPU;
                CHECK_MSG(cpu_steps == 0, "shared epilogue: the Add fell back to the CPU");
                if (with && r.n == 1) {
                    y = r.out[0];
                    r.out[0] = NULL;
                }
                run_free(&r);
                rlx_model_destroy(m);
            }
            if (small) CHECK_MSG(disp[1] > disp[0] + 1, "act %d under 4 KiB bindings: %ld dispatches with the act, %ld without "
                                 "(the epilogue should run in blocks)", (int)acts[k].kind, disp[1], disp[0]);
            else CHECK_MSG(disp[1] == disp[0] + 1, "act %d: %ld dispatches with the act, %ld without (one epilogue expected)",
                           (int)acts[k].kind, disp[1], disp[0]);
            /* tanh_/exp in WGSL vs tanhf in C: 1e-5 absolute on values in [-1, 1] */
            rlx_act a = { acts[k].kind, acts[k].alpha, acts[k].beta };
            size_t bad = 0;
            const float *xv = x->data, *cv = c->data, *yv = y ? y->data : NULL;
            for (size_t i = 0; yv && i < 3000; i++) {
                float want = rlx_act_apply(&a, xv[i] + cv[i % 1000]);
                if (!(fabsf(yv[i] - want) <= 1e-5f)) bad++;
            }
            CHECK_MSG(y && bad == 0, "act %d%s: %zu of 3000 elements differ from act(x + c) (atol 1e-5)", (int)acts[k].kind,
                      small ? " under 4 KiB bindings" : "", bad);
            rlx_tensor_destroy(y);
        }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(c);
}

/* debug.fusion_report=1 prints one line per fusion, naming the pass. */
static void test_report(void) {
    int64_t d[2] = { 3, 4 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 2, d);
    konst(m, "w", test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 4, 4 }, -1, 1));
    add(m, "MatMul", "x,w", "a", 0, NULL);
    add(m, "Relu", "a", "b", 0, NULL);
    add(m, "Neg", "b", "c", 0, NULL);
    add(m, "Exp", "c", "y", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    char path[] = "/tmp/rlx_fusion_report_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    run_t r = run_with(m, "cpu", NULL, "debug.fusion_report=1", 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x });
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[4096] = "";
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, buf, sizeof buf - 1);
    buf[got > 0 ? got : 0] = 0;
    close(fd);
    unlink(path);
    CHECK_MSG(strstr(buf, "fusion: fuse_activation: MatMul") && strstr(buf, "Relu") && strstr(buf, "(act relu)"),
              "report: %s", buf);
    CHECK_MSG(strstr(buf, "fusion: fuse_elementwise: Neg") && strstr(buf, "rlx.FusedElementwise"), "report: %s", buf);
    int lines = 0;
    for (const char *p = buf; (p = strstr(p, "fusion: ")); p++) lines++;
    CHECK_MSG(lines == 2, "%d report lines, expected 2:\n%s", lines, buf);
    CHECK(steps(r.p) == 2);
    run_free(&r);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* ------------------------------------------------------------ fuse_elementwise */

/* The HardSwish-with-affine chain of the demo model: Add(3) -> Clip(0, 6)
 * -> Mul(x, .) -> Div(6) -> Mul(scale) -> Add(shift) on x, per-channel
 * scale: one node; and a broadcasting DAG of three inputs. CPU fused =
 * unfused bit for bit (the same f32 operations); GPU within 1e-5. */
static void test_ew_chains(void) {
    int64_t xd[4] = { 2, 3, 4, 5 }, cd[4] = { 1, 3, 1, 1 }, bd[3] = { 3, 1, 5 }, vd[1] = { 5 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 4, xd);
    input(m, "b", RLX_DTYPE_F32, 3, bd);
    input(m, "v", RLX_DTYPE_F32, 1, vd);
    scalar(m, "three", 3.0f);
    scalar(m, "zero", 0.0f);
    scalar(m, "six", 6.0f);
    scalar(m, "shift", 0.25f);
    konst(m, "scale", test_tensor_random(RLX_DTYPE_F32, 4, cd, 0.5f, 2));
    add(m, "Add", "x,three", "a1", 0, NULL);
    add(m, "Clip", "a1,zero,six", "c1", 0, NULL);
    add(m, "Mul", "x,c1", "m1", 0, NULL);
    add(m, "Div", "m1,six", "hs", 0, NULL);
    add(m, "Mul", "scale,hs", "m2", 0, NULL);
    add(m, "Add", "m2,shift", "y1", 0, NULL);
    /* DAG: Sigmoid(x * b) + Tanh(x - v) * Exp(-x) */
    add(m, "Mul", "x,b", "xb", 0, NULL);
    add(m, "Sigmoid", "xb", "sg", 0, NULL);
    add(m, "Sub", "x,v", "xv", 0, NULL);
    add(m, "Tanh", "xv", "th", 0, NULL);
    add(m, "Neg", "x", "nx", 0, NULL);
    add(m, "Exp", "nx", "ex", 0, NULL);
    add(m, "Mul", "th,ex", "te", 0, NULL);
    add(m, "Add", "sg,te", "y2", 0, NULL);
    /* Sin of tiny arguments, fused as unfused: relative accuracy near 0
     * (the NVIDIA driver's builtin sin is only absolutely accurate there:
     * 5e-4 relative at 3e-4, beyond this test's rtol) */
    scalar(m, "tiny", 1e-4f);
    scalar(m, "big", 1e4f);
    add(m, "Mul", "x,tiny", "xt", 0, NULL);
    add(m, "Sin", "xt", "sn", 0, NULL);
    add(m, "Mul", "sn,big", "y3", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "y1"));
    CHECK_OK(rlx_model_add_output(m, "y2"));
    CHECK_OK(rlx_model_add_output(m, "y3"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -5, 5), *b = test_tensor_random(RLX_DTYPE_F32, 3, bd, -1, 1);
    rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
    const char *names[3] = { "x", "b", "v" };
    const rlx_tensor *in[3] = { x, b, v };
    run_t on = check_fused("elementwise chain and DAG", m, 3, names, in, 0, 0, 1e-5, 1e-6);
    CHECK_MSG(steps(on.p) == 3 && count(on.p, "FusedElementwise") == 3, "%d steps, %d fused", steps(on.p),
              count(on.p, "FusedElementwise"));
    run_free(&on);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(v);
}

/* Per-channel chains (DenseNet's BatchNormalization + Mul + Add + Relu
 * over [1, C, H, W]: the fused kernel's rows, in AVX-512 registers where
 * the CPU has it): + - * / and Relu with per-channel operands on either
 * side, a scalar, a second full-size input; rows of 16, 17, 49, 196, 256,
 * 300 and 3136 elements (blocks of 256 and their tails), values with NaN,
 * -0, +-inf and a zero divisor. Fused = unfused bit for bit, at 1 and 3
 * threads; each session runs once on poison (NaN) inputs first, so an
 * element the second run leaves unwritten shows. */
static void test_ew_channel_rows(void) {
    static const int64_t hw[][2] = { { 4, 4 }, { 1, 17 }, { 7, 7 }, { 14, 14 }, { 16, 16 }, { 15, 20 }, { 56, 56 } };
    static const char *threads[] = { "1", "3" };
    for (size_t c = 0; c < RLX_ARRAY_LEN(hw); c++) {
        int64_t xd[4] = { 1, 5, hw[c][0], hw[c][1] }, cd[4] = { 1, 5, 1, 1 };
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        input(m, "x", RLX_DTYPE_F32, 4, xd);
        input(m, "x2", RLX_DTYPE_F32, 4, xd);
        rlx_tensor *dv = test_tensor_random(RLX_DTYPE_F32, 4, cd, 0.5f, 2);
        ((float *)dv->data)[3] = 0.0f; /* a channel divided by zero */
        konst(m, "s", test_tensor_random(RLX_DTYPE_F32, 4, cd, -2, 2));
        konst(m, "b", test_tensor_random(RLX_DTYPE_F32, 4, cd, -1, 1));
        konst(m, "d", dv);
        scalar(m, "k", 0.375f);
        add(m, "Mul", "x,s", "m1", 0, NULL);
        add(m, "Add", "m1,b", "a1", 0, NULL);
        add(m, "Relu", "a1", "r1", 0, NULL);
        add(m, "Sub", "b,r1", "s1", 0, NULL);
        add(m, "Div", "s1,d", "d1", 0, NULL);
        add(m, "Sub", "d1,k", "s2", 0, NULL);
        add(m, "Add", "s2,x2", "a2", 0, NULL);
        add(m, "Div", "s,a2", "d2", 0, NULL);
        add(m, "Relu", "d2", "y", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -3, 3), *x2 = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        rlx_tensor *px = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *px2 = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        size_t numel = rlx_tensor_numel(x);
        static const float special[] = { NAN, -0.0f, 0.0f, INFINITY, -INFINITY };
        for (size_t i = 0; i < numel; i += 5) ((float *)x->data)[i] = special[(i / 5) % 5];
        for (size_t i = 0; i < numel; i++) ((float *)px->data)[i] = ((float *)px2->data)[i] = NAN;
        const char *names[2] = { "x", "x2" };
        const rlx_tensor *in[2] = { x, x2 }, *poison[2] = { px, px2 };
        for (size_t t = 0; t < RLX_ARRAY_LEN(threads); t++) {
            char nt[32];
            snprintf(nt, sizeof nt, "cpu.threads=%s", threads[t]);
            run_t r[2];
            for (int fused = 0; fused < 2; fused++) {
                rlx_options *opts = test_options(nt, fused ? "passes.disable=" : "passes.disable=" ALL_FUSIONS, NULL);
                rlx_session_options o = { .device = "cpu" };
                memset(&r[fused], 0, sizeof r[fused]);
                CHECK_OK(rlx_session_create_with_options(m, &o, opts, &r[fused].s));
                rlx_options_destroy(opts);
                if (!r[fused].s) continue;
                CHECK_OK(rlx_session_run(r[fused].s, 2, names, poison, &r[fused].out, &r[fused].n));
                test_free_outputs(r[fused].out, (int)r[fused].n);
                r[fused].out = NULL;
                CHECK_OK(rlx_session_run(r[fused].s, 2, names, in, &r[fused].out, &r[fused].n));
                r[fused].p = rlx_session_last_program(r[fused].s);
            }
            char what[96];
            snprintf(what, sizeof what, "channel rows %lldx%lld, %s threads", (long long)hw[c][0], (long long)hw[c][1],
                     threads[t]);
            CHECK_MSG(count(r[1].p, "FusedElementwise") == 1 && steps(r[1].p) == 1, "%s: %d steps", what,
                      steps(r[1].p));
            CHECK_MSG(r[0].n == 1 && r[1].n == 1 && r[0].out && r[1].out &&
                          memcmp(r[0].out[0]->data, r[1].out[0]->data, numel * sizeof(float)) == 0,
                      "%s: fused and unfused differ", what);
            run_free(&r[0]);
            run_free(&r[1]);
        }
        rlx_model_destroy(m);
        rlx_tensor_destroy(x), rlx_tensor_destroy(x2), rlx_tensor_destroy(px), rlx_tensor_destroy(px2);
    }
}

/* A fused chain whose operands exceed one storage binding (forced with
 * gpu.max_binding_bytes = 4096: 961 f32 per window): the generated kernel
 * runs in blocks of the output (several dispatches, none on the CPU), each
 * input read through its window (x whole-shaped, s broadcast over rows and
 * the last dim, t over the first two dims), with the bits of the unsplit
 * GPU run. Also: a second session reuses the generated pipeline (counted
 * as reused, none created), and a session that leaves the driver's
 * compile to the first run (gpu.warm_pipelines=0) gives the same bits. */
static void test_ew_split(void) {
    if (!g_gpu) return;
    int64_t xd[3] = { 3, 40, 30 }, sd[2] = { 40, 1 }, td[1] = { 30 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 3, xd);
    input(m, "s", RLX_DTYPE_F32, 2, sd);
    konst(m, "t", test_tensor_random(RLX_DTYPE_F32, 1, td, -1, 1));
    add(m, "Mul", "x,s", "a", 0, NULL);
    add(m, "Add", "a,t", "b", 0, NULL);
    add(m, "Tanh", "b", "c", 0, NULL);
    add(m, "Mul", "c,x", "y", 0, NULL);
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, xd, -2, 2), *sv = test_tensor_random(RLX_DTYPE_F32, 2, sd, -2, 2);
    const char *names[2] = { "x", "s" };
    const rlx_tensor *in[2] = { x, sv };
    run_t whole = run(m, "gpu", NULL, 2, names, in);
    /* generated pipelines live in the shared device's cache: a second
     * session of the same model creates none */
    run_t again = run(m, "gpu", NULL, 2, names, in);
    {
        rlx_exec *e = rlx_session_last_exec(again.s);
        rlx_exe_stats es;
        memset(&es, 0, sizeof es);
        if (e) rlx_exec_stats(e, &es);
        CHECK_MSG(e && es.n_dispatches == 1 && es.n_pipelines_new == 0 && es.n_pipelines_reused == 1,
                  "second session: %zu dispatches, %zu new pipelines, %zu reused (the generated one should be cached)",
                  es.n_dispatches, es.n_pipelines_new, es.n_pipelines_reused);
        CHECK_MSG(es.driver_s >= 0 && es.driver_s <= es.pipelines_s, "driver's compile %g s of pipelines %g s",
                  es.driver_s, es.pipelines_s);
    }
    run_free(&again);
    run_t cold = run_with(m, "gpu", NULL, "gpu.warm_pipelines=0", 2, names, in);
    {
        rlx_exe_stats es;
        memset(&es, 0, sizeof es);
        rlx_exec *e = rlx_session_last_exec(cold.s);
        if (e) rlx_exec_stats(e, &es);
        CHECK_MSG(e && es.driver_s == 0, "gpu.warm_pipelines=0: the driver's compile is not forced (%g s)", es.driver_s);
        CHECK_MSG(cold.n == 1 && whole.n == 1 && memcmp(cold.out[0]->data, whole.out[0]->data, whole.out[0]->nbytes) == 0,
                  "gpu.warm_pipelines=0 changed the bits");
    }
    run_free(&cold);
    run_t split = run_with(m, "gpu", NULL, "gpu.max_binding_bytes=4096", 2, names, in);
    run_t ref = run(m, "cpu", ALL_FUSIONS, 2, names, in);
    CHECK_MSG(steps(split.p) == 1 && count(split.p, "FusedElementwise") == 1 && split.p->step_on[0] == RLX_STEP_GPU,
              "split chain: %d steps, %d fused, not on the GPU", steps(split.p), count(split.p, "FusedElementwise"));
    long d1 = dispatches(whole.s), d2 = dispatches(split.s);
    CHECK_MSG(d1 == 1 && d2 >= 4, "split chain: %ld dispatches unsplit (1 expected), %ld under 4 KiB (3600 outputs: >= 4)",
              d1, d2);
    CHECK_MSG(whole.n == 1 && split.n == 1 && memcmp(whole.out[0]->data, split.out[0]->data, whole.out[0]->nbytes) == 0,
              "split chain: blocks differ from the unsplit run (same bits expected)");
    /* WGSL tanh vs the CPU's: 1e-5 relative, 1e-6 absolute */
    agree("split chain (gpu vs cpu unfused)", &split, &ref, 1e-5, 1e-6);
    run_free(&whole);
    run_free(&split);
    run_free(&ref);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(sv);
}

/* Where with a bool condition from outside, and Cast f32 -> f16 -> f32
 * (the program rounds through f16): fused on the CPU, exact against the
 * unfused graph; the GPU keeps these on the CPU (bool and f16 operands). */
static void test_ew_where_cast(void) {
    int64_t d[2] = { 6, 7 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 2, d);
    input(m, "c", RLX_DTYPE_BOOL, 2, d);
    scalar(m, "k", 0.3f);
    add(m, "Mul", "x,k", "a", 0, NULL);
    add(m, "Neg", "x", "n", 0, NULL);
    add(m, "Where", "c,a,n", "w", 0, NULL);
    rlx_attr to16 = RLX_ATTR_I("to", RLX_DTYPE_F16), to32 = RLX_ATTR_I("to", RLX_DTYPE_F32);
    add(m, "Cast", "w", "h", 1, &to16);
    add(m, "Cast", "h", "y", 1, &to32);
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -100, 100), *c = test_tensor_random(RLX_DTYPE_BOOL, 2, d, 0, 1);
    const char *names[2] = { "x", "c" };
    const rlx_tensor *in[2] = { x, c };
    run_t on = run(m, "cpu", NULL, 2, names, in), off = run(m, "cpu", ALL_FUSIONS, 2, names, in);
    agree("Where + Cast through f16", &on, &off, 0, 0);
    CHECK_MSG(steps(on.p) == 1 && count(on.p, "FusedElementwise") == 1, "%d steps", steps(on.p));
    /* and it really rounded: some value differs from the f32 computation */
    if (on.out) {
        const float *px = x->data, *py = on.out[0]->data;
        const uint8_t *pc = c->data;
        int rounded = 0;
        for (int i = 0; i < 42; i++) rounded += py[i] != (pc[i] ? px[i] * 0.3f : -px[i]);
        CHECK_MSG(rounded > 0, "no value was rounded through f16");
    }
    run_free(&on);
    run_free(&off);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(c);
}

/* A chain with a Where on a bool condition from outside (the condition of
 * the output's shape [6,7], and broadcast: [7], [6,1]) runs on the GPU:
 * the fused kernel reads the bool bytes (it used to decline, and the whole
 * chain fell back to the CPU). Exact: one Mul, one Neg and a select. */
static void test_ew_where_bool_gpu(void) {
    static const int64_t cd[3][2] = { { 6, 7 }, { 7, 0 }, { 6, 1 } };
    static const int cr[3] = { 2, 1, 2 };
    int64_t d[2] = { 6, 7 };
    for (int k = 0; k < 3; k++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        input(m, "x", RLX_DTYPE_F32, 2, d);
        input(m, "c", RLX_DTYPE_BOOL, cr[k], cd[k]);
        scalar(m, "k", 0.3f);
        add(m, "Mul", "x,k", "a", 0, NULL);
        add(m, "Neg", "x", "n", 0, NULL);
        add(m, "Where", "c,a,n", "w", 0, NULL);
        add(m, "Abs", "w", "y", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -100, 100);
        rlx_tensor *c = test_tensor_random(RLX_DTYPE_BOOL, cr[k], cd[k], 0, 1);
        const char *names[2] = { "x", "c" };
        const rlx_tensor *in[2] = { x, c };
        char w[64];
        snprintf(w, sizeof w, "Where on a bool condition of rank %d, dim0 %lld", cr[k], (long long)cd[k][0]);
        run_t on = check_fused(w, m, 2, names, in, 0, 0, 0, 0);
        CHECK_MSG(steps(on.p) == 1 && count(on.p, "FusedElementwise") == 1, "%s: %d steps", w, steps(on.p));
        run_free(&on);
        rlx_model_destroy(m);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(c);
    }
}

/* Preconditions: an intermediate value with a second user outside the
 * group, or that is a graph output, ends a group there; a producer whose
 * output has another shape (a broadcast that widens) stays outside; more
 * than six inputs from outside split the chain. */
static void test_ew_preconditions(void) {
    int64_t d[2] = { 3, 4 }, sd[1] = { 4 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    input(m, "x", RLX_DTYPE_F32, 2, d);
    input(m, "s", RLX_DTYPE_F32, 1, sd);
    char nm[8][8];
    for (int i = 0; i < 8; i++) {
        snprintf(nm[i], sizeof nm[i], "i%d", i);
        input(m, nm[i], RLX_DTYPE_F32, 2, d);
    }
    /* group A ends at "a2": "a2" also feeds "side" (a second user) */
    add(m, "Neg", "x", "a1", 0, NULL);
    add(m, "Exp", "a1", "a2", 0, NULL);
    add(m, "Sigmoid", "a2", "side", 0, NULL);
    add(m, "Abs", "a2", "a3", 0, NULL);
    add(m, "Sqrt", "a3", "y1", 0, NULL);
    /* "b1" is a graph output: it ends its group */
    add(m, "Relu", "x", "b0", 0, NULL);
    add(m, "Neg", "b0", "b1", 0, NULL);
    add(m, "Abs", "b1", "b2", 0, NULL);
    add(m, "Floor", "b2", "y2", 0, NULL);
    /* widening: s [4] -> Neg -> [4], then Add with x [3,4]: the Neg (cheap)
     * joins, computed again for each of the 3 rows; s -> Exp, then Mul with
     * x: the Exp (a transcendental) stays alone, once per element of s */
    add(m, "Neg", "s", "sn", 0, NULL);
    add(m, "Add", "sn,x", "c1", 0, NULL);
    add(m, "Relu", "c1", "y3", 0, NULL);
    add(m, "Exp", "s", "se", 0, NULL);
    add(m, "Mul", "se,x", "c2", 0, NULL);
    add(m, "Abs", "c2", "y5", 0, NULL);
    /* eight inputs in one chain: at most six per fused node */
    add(m, "Add", "i0,i1", "d1", 0, NULL);
    add(m, "Add", "d1,i2", "d2", 0, NULL);
    add(m, "Add", "d2,i3", "d3", 0, NULL);
    add(m, "Add", "d3,i4", "d4", 0, NULL);
    add(m, "Add", "d4,i5", "d5", 0, NULL);
    add(m, "Add", "d5,i6", "d6", 0, NULL);
    add(m, "Add", "d6,i7", "y4", 0, NULL);
    const char *outs[] = { "y1", "side", "y2", "b1", "y3", "y4", "y5" };
    for (size_t i = 0; i < RLX_ARRAY_LEN(outs); i++) CHECK_OK(rlx_model_add_output(m, outs[i]));
    CHECK_OK(rlx_model_finish(m));
    const char *names[10] = { "x", "s" };
    rlx_tensor *ts[10];
    ts[0] = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    ts[1] = test_tensor_random(RLX_DTYPE_F32, 1, sd, -1, 1);
    for (int i = 0; i < 8; i++) {
        names[2 + i] = nm[i];
        ts[2 + i] = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    }
    run_t on = check_fused("elementwise preconditions", m, 10, names, (const rlx_tensor *const *)ts, 0, 0, 1e-5, 1e-6);
    const rlx_program *p = on.p;
    /* expected steps: [Neg Exp] Sigmoid [Abs Sqrt] | [Relu Neg] [Abs Floor] | [Neg Add Relu] | Exp [Mul Abs] |
     * two fused Add chains */
    CHECK_MSG(count(p, "FusedElementwise") == 8, "%d fused nodes, expected 8", count(p, "FusedElementwise"));
    CHECK_MSG(count(p, "Sigmoid") == 1 && count(p, "Neg") == 0 && count(p, "Exp") == 1,
              "Sigmoid %d, Neg %d, Exp %d left (1, 0 and 1 expected)", count(p, "Sigmoid"), count(p, "Neg"),
              count(p, "Exp"));
    CHECK_MSG(steps(p) == 10, "%d steps, expected 10", steps(p));
    run_free(&on);
    rlx_model_destroy(m);
    for (int i = 0; i < 10; i++) rlx_tensor_destroy(ts[i]);
}

/* ------------------------------------------------------------ fuse_add_layernorm */

/* Add + LayerNormalization: same shapes; position-embedding broadcast
 * [1, S, H] over [2, S, H]; either operand order. CPU fused = unfused bit
 * for bit; GPU within 1e-5 relative. Preconditions: a second user of the
 * sum, the sum as a graph output, the Mean output requested, B broadcasting
 * inside a row ([S, 1]): no fusion. */
static void test_add_layernorm(void) {
    int64_t ad[3] = { 2, 5, 16 }, pd[3] = { 1, 5, 16 }, rd[3] = { 2, 5, 1 }, hd[1] = { 16 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 3, ad, -2, 2), *b = test_tensor_random(RLX_DTYPE_F32, 3, ad, -2, 2);
    for (int c = 0; c < 6; c++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        input(m, "a", RLX_DTYPE_F32, 3, ad);
        input(m, "b", RLX_DTYPE_F32, 3, ad);
        konst(m, "pos", test_tensor_random(RLX_DTYPE_F32, 3, pd, -1, 1));
        konst(m, "row", test_tensor_random(RLX_DTYPE_F32, 3, rd, -1, 1));
        konst(m, "g", test_tensor_random(RLX_DTYPE_F32, 1, hd, 0.5f, 1.5f));
        konst(m, "be", test_tensor_random(RLX_DTYPE_F32, 1, hd, -1, 1));
        rlx_attr eps = RLX_ATTR_F("epsilon", 1e-5f);
        const char *what = "";
        bool fuse = c < 2;
        switch (c) {
        case 0: what = "same shapes"; add(m, "Add", "a,b", "s", 0, NULL); break;
        case 1: what = "position embedding first"; add(m, "Add", "pos,a", "s", 0, NULL); break;
        case 2: what = "second user of the sum";
            add(m, "Add", "a,b", "s", 0, NULL);
            add(m, "Relu", "s", "r", 0, NULL);
            CHECK_OK(rlx_model_add_output(m, "r"));
            break;
        case 3: what = "the sum is a graph output";
            add(m, "Add", "a,b", "s", 0, NULL);
            CHECK_OK(rlx_model_add_output(m, "s"));
            break;
        case 4: what = "B broadcasts inside the rows"; add(m, "Add", "a,row", "s", 0, NULL); break;
        case 5: what = "Mean output requested"; add(m, "Add", "a,b", "s", 0, NULL); break;
        }
        if (c == 5) {
            add(m, "LayerNormalization", "s,g,be", "y,mean", 1, &eps);
            CHECK_OK(rlx_model_add_output(m, "mean"));
        } else {
            add(m, "LayerNormalization", "s,g,be", "y", 1, &eps);
        }
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        const char *names[2] = { "a", "b" };
        const rlx_tensor *in[2] = { a, b };
        char w[96];
        snprintf(w, sizeof w, "add + layernorm: %s", what);
        run_t on;
        if (fuse) {
            on = check_fused(w, m, 2, names, in, 0, 0, 1e-5, 1e-5);
        } else {
            on = run(m, "cpu", NULL, 2, names, in);
            run_t off = run(m, "cpu", ALL_FUSIONS, 2, names, in);
            agree(w, &on, &off, 0, 0);
            run_free(&off);
        }
        CHECK_MSG(count(on.p, "AddLayerNormalization") == (fuse ? 1 : 0) && count(on.p, "LayerNormalization") == (fuse ? 0 : 1),
                  "%s: %d fused nodes", w, count(on.p, "AddLayerNormalization"));
        run_free(&on);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

/* ------------------------------------------------------------ fuse_attention */

/* Builds Softmax(Q K^T (*|/) scale (+ mask)) V. kmode 0: K^T given as an
 * input [B, H, D, Sk]; 1: Transpose(K, perm [0, 1, 3, 2]); 2: the same
 * Transpose with a second user (K^T also a graph output); 3: the exporter
 * layout: q, k, v inputs [B, S, H, D] through Transposes [0, 2, 1, 3] (K:
 * [0, 2, 3, 1]) and the result through [0, 2, 1, 3] back to [B, Sq, H, D].
 * bad: 0 none, 1 softmax over axis 2, 2 scores as a graph output, 3 the
 * scale is a graph input, 4 a second user of the probabilities. */
static rlx_model *attention_model(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int kmode, bool div,
                                  bool mask, int bad) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(17, &m));
    int64_t qd[4] = { b, h, sq, d }, ktd[4] = { b, h, d, sk }, kd[4] = { b, h, sk, d }, vd[4] = { b, h, sk, d };
    int64_t md[4] = { b, 1, 1, sk }, eq[4] = { b, sq, h, d }, ek[4] = { b, sk, h, d };
    input(m, kmode == 3 ? "q0" : "q", RLX_DTYPE_F32, 4, kmode == 3 ? eq : qd);
    input(m, kmode == 3 ? "k0" : "k", RLX_DTYPE_F32, 4, kmode == 3 ? ek : kmode ? kd : ktd);
    input(m, kmode == 3 ? "v0" : "v", RLX_DTYPE_F32, 4, kmode == 3 ? ek : vd);
    input(m, "mask", RLX_DTYPE_F32, 4, md);
    if (bad == 3) input(m, "sc", RLX_DTYPE_F32, 0, NULL);
    else scalar(m, "sc", div ? 2.8284271f : 0.35355339f);
    if (kmode == 3) {
        rlx_attr p0213 = RLX_ATTR_IS("perm", 4, ((int64_t[]){ 0, 2, 1, 3 })), p0231 = RLX_ATTR_IS("perm", 4, ((int64_t[]){ 0, 2, 3, 1 }));
        add(m, "Transpose", "q0", "q", 1, &p0213);
        add(m, "Transpose", "k0", "kt", 1, &p0231);
        add(m, "Transpose", "v0", "v", 1, &p0213);
        add(m, "MatMul", "q,kt", "qk", 0, NULL);
    } else if (kmode) {
        rlx_attr perm = RLX_ATTR_IS("perm", 4, ((int64_t[]){ 0, 1, 3, 2 }));
        add(m, "Transpose", "k", "kt", 1, &perm);
        add(m, "MatMul", "q,kt", "qk", 0, NULL);
        if (kmode == 2) CHECK_OK(rlx_model_add_output(m, "kt"));
    } else {
        add(m, "MatMul", "q,k", "qk", 0, NULL);
    }
    add(m, div ? "Div" : "Mul", div ? "qk,sc" : "sc,qk", "s", 0, NULL);
    if (mask) add(m, "Add", "mask,s", "sm", 0, NULL);
    rlx_attr ax = RLX_ATTR_I("axis", bad == 1 ? 2 : -1);
    add(m, "Softmax", mask ? "sm" : "s", "p", 1, &ax);
    if (kmode == 3) {
        rlx_attr p0213 = RLX_ATTR_IS("perm", 4, ((int64_t[]){ 0, 2, 1, 3 }));
        add(m, "MatMul", "p,v", "yh", 0, NULL);
        add(m, "Transpose", "yh", "y", 1, &p0213);
    } else {
        add(m, "MatMul", "p,v", "y", 0, NULL);
    }
    if (bad == 2) CHECK_OK(rlx_model_add_output(m, "s"));
    if (bad == 4) {
        add(m, "ReduceMax", "p", "pm", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "pm"));
    }
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* Sq 70: several blocks of 8 query rows on the GPU, the last partial; Sk
 * 150 > 64 keys per block: online-softmax rescaling across blocks; D 20: a
 * partial last group of the output columns that an invocation owns (8
 * invocations per row). */
static void test_attention_size(int64_t SK, int64_t D) {
    const int64_t B = 2, H = 3, SQ = 70;
    int64_t qd[4] = { B, H, SQ, D }, ktd[4] = { B, H, D, SK }, kd[4] = { B, H, SK, D }, md[4] = { B, 1, 1, SK };
    int64_t eq[4] = { B, SQ, H, D }, ek[4] = { B, SK, H, D };
    rlx_tensor *q = test_tensor_random(RLX_DTYPE_F32, 4, qd, -2, 2), *kt = test_tensor_random(RLX_DTYPE_F32, 4, ktd, -2, 2);
    rlx_tensor *k = test_tensor_random(RLX_DTYPE_F32, 4, kd, -2, 2), *v = test_tensor_random(RLX_DTYPE_F32, 4, kd, -2, 2);
    rlx_tensor *q0 = test_tensor_random(RLX_DTYPE_F32, 4, eq, -2, 2), *k0 = test_tensor_random(RLX_DTYPE_F32, 4, ek, -2, 2);
    rlx_tensor *v0 = test_tensor_random(RLX_DTYPE_F32, 4, ek, -2, 2);
    rlx_tensor *mask = test_tensor_random(RLX_DTYPE_F32, 4, md, -3, 0), *sc = test_tensor_f32(0, NULL, (const float[]){ 0.5f });
    /* a masked-out key, as BERT writes it (float32 lowest) */
    ((float *)mask->data)[3] = -3.4028234663852886e38f;
    /* cases: 0 K^T given; 1 K transposed (absorbed), Mul; 2 no mask; 3 K's
     * Transpose shared (read as K); 4 the exporter layout; 5-8 preconditions */
    static const int kmodes[9] = { 0, 1, 0, 2, 3, 0, 0, 0, 0 };
    for (int c = 0; c < 9; c++) {
        int kmode = kmodes[c], bad = c >= 5 ? c - 4 : 0;
        bool div = c != 1, with_mask = c != 2;
        rlx_model *m = attention_model(B, H, SQ, SK, D, kmode, div, with_mask, bad);
        const char *names[5] = { kmode == 3 ? "q0" : "q", kmode == 3 ? "k0" : "k", kmode == 3 ? "v0" : "v", "mask", "sc" };
        const rlx_tensor *in[5] = { kmode == 3 ? q0 : q, kmode == 3 ? k0 : kmode ? k : kt, kmode == 3 ? v0 : v, mask, sc };
        char w[128];
        snprintf(w, sizeof w, "attention case %d (K mode %d, %s, %s, bad %d)", c, kmode, div ? "Div" : "Mul",
                 with_mask ? "mask" : "no mask", bad);
        size_t n_in = bad == 3 ? 5 : 4;
        run_t on;
        if (!bad) {
            /* CPU: sgemm and a double softmax as unfused (K^T read through
             * sgemm's transpose instead of a copied Transpose): rtol 1e-5;
             * GPU: online softmax in f32: rtol 1e-4 */
            on = check_fused(w, m, n_in, names, in, 1e-5, 1e-6, 1e-4, 1e-5);
            const rlx_node *at = first(on.p, "Attention");
            /* one step, but the shared Transpose of case 3 stays */
            CHECK_MSG(at && steps(on.p) == (kmode == 2 ? 2 : 1), "%s: %d steps", w, steps(on.p));
            size_t np = 0;
            if (at) rlx_attr_ints(at, "k_perm", &np);
            CHECK_MSG(at && rlx_attr_int(at, "k_transposed", -1) == (kmode == 2 ? 0 : 1) &&
                          (np == 4) == (kmode == 1 || kmode == 3),
                      "%s: k_transposed %lld, k_perm of %zu", w, at ? (long long)rlx_attr_int(at, "k_transposed", -1) : -1LL, np);
            if (kmode == 3) {
                rlx_attr_ints(at, "y_perm", &np);
                CHECK_MSG(np == 4 && count(on.p, "Transpose") == 0, "%s: the output Transpose is absorbed", w);
            }
        } else {
            on = run(m, "cpu", NULL, n_in, names, in);
            CHECK_MSG(count(on.p, "Attention") == 0 && count(on.p, "Softmax") == 1, "%s: must not fuse", w);
        }
        run_free(&on);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(q0);
    rlx_tensor_destroy(k0);
    rlx_tensor_destroy(v0);
    rlx_tensor_destroy(q);
    rlx_tensor_destroy(kt);
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(v);
    rlx_tensor_destroy(mask);
    rlx_tensor_destroy(sc);
}

/* A constant mask shaped like a bias ([Sk], [1,Sk]) added straight after
 * MatMul(Q, K^T), no scale: fuse_activation (which runs first) folds it
 * into the MatMul's bias input, and fuse_attention takes that bias as the
 * mask (it used to leave the attention unfused). */
static void test_attention_bias_mask(void) {
    int64_t qd[3] = { 2, 5, 16 }, kd[3] = { 2, 16, 9 }, vd[3] = { 2, 9, 16 };
    for (int rank = 1; rank <= 2; rank++) {
        int64_t md[2] = { rank == 1 ? 9 : 1, 9 };
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        input(m, "q", RLX_DTYPE_F32, 3, qd);
        input(m, "kt", RLX_DTYPE_F32, 3, kd);
        input(m, "v", RLX_DTYPE_F32, 3, vd);
        rlx_tensor *mask = test_tensor_random(RLX_DTYPE_F32, rank, md, -2, 0.5);
        ((float *)mask->data)[4] = -3.4028234663852886e38f; /* a masked-out key */
        konst(m, "mask", mask);
        add(m, "MatMul", "q,kt", "qk", 0, NULL);
        add(m, "Add", rank == 1 ? "qk,mask" : "mask,qk", "s", 0, NULL);
        rlx_attr ax = RLX_ATTR_I("axis", -1);
        add(m, "Softmax", "s", "p", 1, &ax);
        add(m, "MatMul", "p,v", "y", 0, NULL);
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *q = test_tensor_random(RLX_DTYPE_F32, 3, qd, -1, 1), *kt = test_tensor_random(RLX_DTYPE_F32, 3, kd, -1, 1);
        rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, 3, vd, -1, 1);
        const char *names[3] = { "q", "kt", "v" };
        const rlx_tensor *in[3] = { q, kt, v };
        char w[64];
        snprintf(w, sizeof w, "attention with a constant mask of rank %d", rank);
        /* tolerances as test_attention_size */
        run_t on = check_fused(w, m, 3, names, in, 1e-5, 1e-6, 1e-4, 1e-5);
        CHECK_MSG(steps(on.p) == 1 && count(on.p, "Attention") == 1, "%s: %d steps, %d Attention", w, steps(on.p),
                  count(on.p, "Attention"));
        run_free(&on);
        rlx_model_destroy(m);
        rlx_tensor_destroy(q);
        rlx_tensor_destroy(kt);
        rlx_tensor_destroy(v);
    }
}

static void test_attention(void) {
    test_attention_size(150, 8);
    test_attention_size(40, 20);
    test_attention_bias_mask();
}

/* ------------------------------------------------------------ models */

/* max |a - b| <= tol * max |b| for each output: "unchanged within tol
 * relative" on the scale of the output. */
static void agree_scaled(const char *what, const run_t *a, const run_t *b, double tol) {
    CHECK_MSG(a->n == b->n && a->n > 0, "%s: outputs", what);
    for (size_t i = 0; a->out && b->out && i < a->n && i < b->n; i++) {
        const rlx_tensor *x = a->out[i], *y = b->out[i];
        size_t n = rlx_tensor_numel(y);
        double mb = 0, md = 0;
        for (size_t j = 0; j < n && x->dtype == RLX_DTYPE_F32; j++) {
            double vb = ((const float *)y->data)[j], vd = fabs(((const float *)x->data)[j] - vb);
            if (fabs(vb) > mb) mb = fabs(vb);
            if (vd > md || vd != vd) md = vd;
        }
        CHECK_MSG(md <= tol * mb, "%s: output %zu: max |diff| %g > %g * max |ref| %g", what, i, md, tol, mb);
        fprintf(stderr, "  %s: output %zu: max |diff| %.3g, max |ref| %.3g\n", what, i, md, mb);
    }
}

static void test_demo_model(void) {
    const char *path = "models/ppocrv4_det.onnx";
    rlx_model *m = NULL;
    if (rlx_model_load_onnx(path, &m) != RLX_OK) {
        fprintf(stderr, "  %s not found: demo model checks skipped (scripts/setup.sh)\n", path);
        return;
    }
    for (int dev = 0; dev < (g_gpu ? 2 : 1); dev++) {
        /* lavapipe is slow: a smaller page on the GPU */
        int64_t side = dev ? 64 : 320, xd[4] = { 1, 3, side, side };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        const char *devn = dev ? "gpu" : "cpu";
        run_t on = run(m, devn, NULL, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x });
        run_t off = run(m, devn, ALL_FUSIONS, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x });
        char w[64];
        snprintf(w, sizeof w, "ppocrv4_det on %s", devn);
        agree_scaled(w, &on, &off, 1e-5);
        fprintf(stderr, "  %s: %d steps unfused, %d fused\n", w, steps(off.p), steps(on.p));
        CHECK_MSG(steps(on.p) < steps(off.p) * 3 / 4, "%s: %d steps fused vs %d unfused", w, steps(on.p), steps(off.p));
        run_free(&on);
        run_free(&off);
        rlx_tensor_destroy(x);
    }
    rlx_model_destroy(m);
}

/* The BERT encoder (all-MiniLM-L6-v2 from scripts/setup.sh --models, or
 * RLX_MINILM=path): every layer's attention and residual layer norms fuse;
 * outputs unchanged within 1e-5 of their scale. */
static void test_minilm(void) {
    const char *path = getenv("RLX_MINILM") ? getenv("RLX_MINILM") : "models/minilm_l6.onnx";
    rlx_model *m = NULL;
    if (rlx_model_load_onnx(path, &m) != RLX_OK) {
        fprintf(stderr, "  %s not found: BERT checks skipped (scripts/setup.sh --models, or RLX_MINILM=path)\n", path);
        return;
    }
    for (int dev = 0; dev < (g_gpu ? 2 : 1); dev++) {
        int64_t s = dev ? 16 : 48, d[2] = { 1, s };
        rlx_tensor *ids = test_tensor(RLX_DTYPE_I64, 2, d), *mask = test_tensor(RLX_DTYPE_I64, 2, d);
        rlx_tensor *tt = test_tensor(RLX_DTYPE_I64, 2, d);
        for (int64_t i = 0; i < s; i++) {
            ((int64_t *)ids->data)[i] = 1000 + (int64_t)(test_rand_u64() % 20000);
            ((int64_t *)mask->data)[i] = i < s - 3; /* padding at the end */
            ((int64_t *)tt->data)[i] = 0;
        }
        const char *names[3] = { "input_ids", "attention_mask", "token_type_ids" };
        const rlx_tensor *in[3] = { ids, mask, tt };
        const char *devn = dev ? "gpu" : "cpu";
        run_t on = run(m, devn, NULL, 3, names, in), off = run(m, devn, ALL_FUSIONS, 3, names, in);
        char w[64];
        snprintf(w, sizeof w, "minilm on %s", devn);
        agree_scaled(w, &on, &off, 1e-5);
        fprintf(stderr, "  %s: %d steps unfused, %d fused\n", w, steps(off.p), steps(on.p));
        CHECK_MSG(count(on.p, "Attention") == 6 && count(on.p, "Softmax") == 0, "%s: %d attention nodes", w,
                  count(on.p, "Attention"));
        CHECK_MSG(count(on.p, "AddLayerNormalization") == 13 && count(on.p, "LayerNormalization") == 0,
                  "%s: %d add + layernorm nodes", w, count(on.p, "AddLayerNormalization"));
        run_free(&on);
        run_free(&off);
        rlx_tensor_destroy(ids);
        rlx_tensor_destroy(mask);
        rlx_tensor_destroy(tt);
    }
    rlx_model_destroy(m);
}

int main(void) {
    test_seed_from_env();
    /* nodes of compiled plans run again below on the plans' constants: keep
     * their plain copies (cpu.release_packed frees those read through packs) */
    setenv("RLX_CPU_RELEASE_PACKED", "0", 1);
    g_gpu = test_have_gpu();
    if (!g_gpu) fprintf(stderr, "no GPU adapter: the GPU comparisons are skipped\n");
    fprintf(stderr, "fuse_activation\n");
    test_conv_activations();
    test_patterns();
    test_other_producers();
    test_activation_preconditions();
    test_conv_direct_vs_gemm_epilogue();
    test_shared_epilogue();
    test_report();
    fprintf(stderr, "fuse_elementwise\n");
    test_ew_chains();
    test_ew_channel_rows();
    test_ew_split();
    test_ew_where_cast();
    test_ew_where_bool_gpu();
    test_ew_preconditions();
    fprintf(stderr, "fuse_add_layernorm\n");
    test_add_layernorm();
    fprintf(stderr, "fuse_attention\n");
    test_attention();
    fprintf(stderr, "models\n");
    test_demo_model();
    test_minilm();
    TEST_MAIN_END();
}
