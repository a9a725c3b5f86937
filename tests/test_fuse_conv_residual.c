#define _POSIX_C_SOURCE 200809L
/* The residual fusion (passes/fuse_conv_residual.c): Conv + Add(r) (+ an
 * activation) -> Conv with the internal fourth input r.
 *
 * - every conv algorithm (gpu.conv_algo=direct|im2col|implicit, and the
 *   automatic pointwise and depthwise paths), both operand orders, no
 *   activation / Relu / Clip, split-K forced on (gpu.gemm_splitk=2) and off,
 *   batch 2, odd sizes, no bias, the identity residual Add(Conv(x), x):
 *   fused against unfused (passes.disable=fuse_conv_residual) on the
 *   CPU (rtol 1e-6: the same f32 additions) and on the GPU (bit for bit:
 *   the epilogue adds the same f32 values in the unfused order), fused GPU
 *   against unfused CPU (rtol 1e-4), and the GPU dispatch count;
 * - the reference pair: with residuals the direct kernel and im2col + GEMM
 *   (and the implicit and pointwise GEMMs with gpu.gemm_splitk=0) give the
 *   same bits, for several activations;
 * - the CPU reference and fast paths of the fused node agree (rtol 1e-5);
 * - Sum of two inputs in place of Add fuses alike;
 * - what must not fuse: a second user of the conv output, a conv output
 *   that is a graph output, a broadcast r, a conv with its own activation;
 *   and Add(Conv1, Conv2) fuses into the later Conv only;
 * - debug.fusion_report=1 names the fusion; the importer and the builder
 *   refuse a Conv with four inputs. */
#include "test.h"

#include <stdlib.h>

#include <unistd.h>

#include "backend/cpu/cpu.h"
#include "ir/graph.h"
#include "ir/ops/act.h"
#include "onnx_build.h"
#include "runtime/session.h"
#include "fusion_util.h"

#define PASS "fuse_conv_residual"

static int g_gpu;

/* ------------------------------------------------------------ helpers */

/* a node named after its outputs */
static void add(rlx_model *m, const char *op, const char *ins, const char *outs, size_t na, const rlx_attr *a) {
    add_node(m, op, outs, ins, outs, na, a);
}

static int cpu_steps(const rlx_program *p) {
    int n = 0;
    for (size_t i = 0; p && i < p->n_steps; i++) n += p->step_on[i] == RLX_STEP_CPU;
    return n;
}

/* Convs of the program that carry a residual. */
static int fused_convs(const rlx_program *p) {
    int n = 0;
    for (size_t i = 0; p && i < p->n_steps; i++) {
        const rlx_node *nd = &p->g->nodes[p->steps[i]];
        n += strcmp(nd->op_type, "Conv") == 0 && nd->n_in == 4;
    }
    return n;
}

static bool same_bits(const rlx_tensor *a, const rlx_tensor *b) {
    return a && b && a->nbytes == b->nbytes && a->dtype == b->dtype && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* ------------------------------------------------------------ the block */

typedef enum { ACT_NONE, ACT_RELU, ACT_CLIP, ACT_SIGMOID, ACT_GELU } act_t;

/* One residual block: c = Conv(x, w[, b]); s = Add(c, r) or Add(r, c) (or
 * Sum, with g_sum); y = act(s). r is the graph input "r" or, with identity, x itself. */
typedef struct block {
    int64_t n, cin, cout, h, w, k, stride, pad, group;
    bool bias, swap, identity;
    act_t act;
} block;

/* make_block writes Sum(c, r) (two inputs) in place of Add */
static bool g_sum;

static const char *act_op(act_t a) {
    static const char *const ops[] = { NULL, "Relu", "Clip", "Sigmoid", "Gelu" };
    return ops[a];
}

static int64_t out_dim(const block *b, int64_t in) { return (in + 2 * b->pad - b->k) / b->stride + 1; }

static rlx_model *make_block(const block *b, int64_t *yd) {
    int64_t xd[4] = { b->n, b->cin, b->h, b->w }, wd[4] = { b->cout, b->cin / b->group, b->k, b->k }, bd[1] = { b->cout };
    yd[0] = b->n, yd[1] = b->cout, yd[2] = out_dim(b, b->h), yd[3] = out_dim(b, b->w);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(20, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    if (!b->identity) CHECK_OK(rlx_model_add_input(m, "r", RLX_DTYPE_F32, 4, yd, NULL));
    konst(m, "w", test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1));
    if (b->bias) konst(m, "b", test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1));
    int64_t pads[4] = { b->pad, b->pad, b->pad, b->pad }, strides[2] = { b->stride, b->stride };
    rlx_attr ca[3] = { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_IS("strides", 2, strides), RLX_ATTR_I("group", b->group) };
    add(m, "Conv", b->bias ? "x,w,b" : "x,w", "c", 3, ca);
    const char *r = b->identity ? "x" : "r";
    char ins[16];
    snprintf(ins, sizeof ins, b->swap ? "%s,c" : "c,%s", r);
    add(m, g_sum ? "Sum" : "Add", ins, b->act ? "s" : "y", 0, NULL);
    if (b->act == ACT_CLIP) {
        konst(m, "lo", test_tensor_f32(0, NULL, (const float[]){ 0.0f }));
        konst(m, "hi", test_tensor_f32(0, NULL, (const float[]){ 0.75f }));
        add(m, "Clip", "s,lo,hi", "y", 0, NULL);
    } else if (b->act) {
        add(m, act_op(b->act), "s", "y", 0, NULL);
    }
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* ------------------------------------------------------------ fused vs unfused */

typedef struct fuse_case {
    const char *name;
    const char *algo;   /* gpu.conv_algo, NULL: automatic */
    const char *splitk; /* gpu.gemm_splitk, NULL: automatic */
    block b;
    long gpu_dispatches; /* expected, fused; 0: more than one (blocks) */
    const char *binding; /* gpu.max_binding_bytes, NULL: the device's */
} fuse_case;

static void check_case(const fuse_case *fc) {
    int64_t yd[4];
    rlx_model *m = make_block(&fc->b, yd);
    int64_t xd[4] = { fc->b.n, fc->b.cin, fc->b.h, fc->b.w };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *r = test_tensor_random(RLX_DTYPE_F32, 4, yd, -1, 1);
    const char *names[2] = { "x", "r" };
    const rlx_tensor *in[2] = { x, r };
    size_t n_in = fc->b.identity ? 1 : 2;
    char what[160];
    snprintf(what, sizeof what, "%s (algo %s, split-K %s, act %s, %s)", fc->name, fc->algo ? fc->algo : "auto",
             fc->splitk ? fc->splitk : "auto", fc->b.act ? act_op(fc->b.act) : "none",
             g_sum ? (fc->b.swap ? "Sum(r, c)" : "Sum(c, r)") : (fc->b.swap ? "Add(r, c)" : "Add(c, r)"));
    run_t on = run(m, "cpu", NULL, n_in, names, in);
    run_t off = run(m, "cpu", PASS, n_in, names, in);
    int adds = count(on.p, "Add") + count(on.p, "Sum");
    CHECK_MSG(fused_convs(on.p) == 1 && adds == 0 && on.p && on.p->n_steps == 1,
              "%s: expected one fused Conv step (%d fused, %d Add or Sum)", what, fused_convs(on.p), adds);
    CHECK_MSG(fused_convs(off.p) == 0, "%s: fused with the pass off", what);
    /* the same f32 additions in the same order: rtol 1e-6 */
    agree(what, &on, &off, 1e-6, 1e-7);
    if (g_gpu) {
        char opts[256];
        snprintf(opts, sizeof opts, "gpu.conv_algo=%s;gpu.gemm_splitk=%s;gpu.max_binding_bytes=%s",
                 fc->algo ? fc->algo : "auto", fc->splitk ? fc->splitk : "auto", fc->binding ? fc->binding : "auto");
        run_t gon = run_with(m, "gpu", NULL, opts, n_in, names, in);
        long nd = dispatches(gon.s);
        run_t goff = run_with(m, "gpu", PASS, opts, n_in, names, in);
        CHECK_MSG(cpu_steps(gon.p) == 0, "%s: %d steps on the CPU", what, cpu_steps(gon.p));
        CHECK_MSG(fused_convs(gon.p) == 1, "%s: GPU plan not fused", what);
        if (fc->gpu_dispatches)
            CHECK_MSG(nd == fc->gpu_dispatches, "%s: %ld GPU dispatches, expected %ld", what, nd, fc->gpu_dispatches);
        else
            CHECK_MSG(nd > 1, "%s: %ld GPU dispatches, expected blocks", what, nd);
        long nd_off = dispatches(goff.s);
        CHECK_MSG(nd_off > nd, "%s: unfused %ld dispatches, fused %ld", what, nd_off, nd);
        /* the GPU adds the same f32 values in the unfused order: same bits */
        CHECK_MSG(gon.n == 1 && goff.n == 1 && same_bits(gon.out[0], goff.out[0]),
                  "%s: GPU fused and unfused differ (max abs %g)", what,
                  gon.n && goff.n ? test_max_abs_diff(gon.out[0], goff.out[0]) : -1.0);
        /* against the CPU: f32 sums in another order, rtol 1e-4 */
        agree(what, &gon, &off, 1e-4, 1e-5);
        run_free(&gon);
        run_free(&goff);
    }
    /* the CPU reference and fast paths of the fused node (rtol 1e-5) */
    const rlx_node *cv = first(on.p, "Conv");
    if (cv && cv->n_in == 4) {
        const rlx_graph *g = on.p->g;
        const rlx_tensor *ins[4] = { NULL, NULL, NULL, NULL };
        for (int k = 0; k < 4; k++) {
            const rlx_value *v = rlx_node_input(g, cv, k);
            if (!v) continue;
            ins[k] = v->konst ? v->konst : (strcmp(v->name, "x") == 0 ? x : r);
        }
        rlx_tensor *yr = test_tensor(RLX_DTYPE_F32, 4, yd), *yf = test_tensor(RLX_DTYPE_F32, 4, yd);
        CHECK_OK(rlx_cpu_run_node(g, cv, ins, &yr, true));
        CHECK_OK(rlx_cpu_run_node(g, cv, ins, &yf, false));
        CHECK_MSG(test_allclose(yf, yr, 1e-5, 1e-6), "%s: CPU fast path vs reference (max abs %g, rtol 1e-5)", what,
                  test_max_abs_diff(yf, yr));
        if (on.n == 1) CHECK_MSG(test_allclose(yr, on.out[0], 1e-5, 1e-6), "%s: CPU reference vs session", what);
        rlx_tensor_destroy(yr);
        rlx_tensor_destroy(yf);
    }
    run_free(&on);
    run_free(&off);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(r);
    rlx_model_destroy(m);
}

static void test_fused(void) {
    /*                                    n  cin cout h  w  k  s  p  grp bias  swap   ident  act */
    static const fuse_case cases[] = {
        { "pointwise", NULL, "0", { 1, 8, 12, 5, 7, 1, 1, 0, 1, true, false, false, ACT_NONE }, 1, NULL },
        { "pointwise", NULL, "0", { 2, 6, 8, 3, 5, 1, 1, 0, 1, true, true, false, ACT_RELU }, 1, NULL },
        { "pointwise split-K", NULL, "2", { 1, 64, 8, 3, 3, 1, 1, 0, 1, true, false, false, ACT_CLIP }, 2, NULL },
        { "pointwise split-K", NULL, "2", { 1, 64, 6, 5, 3, 1, 1, 0, 1, false, true, false, ACT_RELU }, 2, NULL },
        { "implicit", "implicit", "0", { 2, 3, 5, 7, 6, 3, 1, 1, 1, true, false, false, ACT_RELU }, 1, NULL },
        { "implicit", "implicit", "0", { 1, 4, 6, 5, 5, 3, 2, 1, 2, false, true, false, ACT_CLIP }, 1, NULL },
        { "implicit split-K", "implicit", "2", { 1, 8, 5, 5, 7, 3, 1, 1, 1, true, true, false, ACT_NONE }, 2, NULL },
        { "implicit split-K", "implicit", "2", { 1, 8, 8, 6, 5, 3, 1, 1, 1, true, false, true, ACT_RELU }, 2, NULL },
        { "im2col", "im2col", "2", { 2, 3, 5, 7, 6, 3, 1, 1, 1, true, true, false, ACT_RELU }, 2, NULL },
        { "im2col", "im2col", NULL, { 1, 8, 8, 5, 5, 3, 1, 1, 1, false, false, true, ACT_CLIP }, 2, NULL },
        { "direct", "direct", NULL, { 2, 3, 5, 7, 6, 3, 1, 1, 1, true, false, false, ACT_NONE }, 1, NULL },
        { "direct", "direct", NULL, { 1, 4, 6, 5, 5, 3, 2, 1, 2, true, true, false, ACT_RELU }, 1, NULL },
        { "direct (3 outputs)", NULL, NULL, { 1, 4, 3, 5, 6, 3, 1, 1, 1, true, false, false, ACT_CLIP }, 1, NULL },
        { "depthwise", NULL, NULL, { 2, 6, 6, 7, 5, 3, 1, 1, 6, true, false, true, ACT_RELU }, 1, NULL },
        { "depthwise", NULL, NULL, { 1, 5, 5, 6, 7, 3, 2, 1, 5, true, true, false, ACT_NONE }, 1, NULL },
        { "depthwise x2", NULL, NULL, { 1, 4, 8, 5, 6, 3, 1, 1, 4, false, false, false, ACT_CLIP }, 1, NULL },
        /* bindings of 8 KiB: the 12 KiB weight splits the GEMM by output
         * channels (each block binds its rows of r) */
        { "pointwise, weight blocks", NULL, "0", { 1, 64, 48, 5, 5, 1, 1, 0, 1, true, true, false, ACT_RELU }, 0, "8192" },
        /* bindings of 1280 bytes: y (1536) does not fit, im2col chunks of
         * one image each (each chunk binds its image of r) */
        { "im2col chunks", NULL, NULL, { 3, 2, 8, 4, 4, 3, 1, 1, 1, true, false, false, ACT_CLIP }, 0, "1280" },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) check_case(&cases[i]);
}

/* Sum of two inputs in place of Add (Caffe2's residual blocks, the ONNX
 * zoo's ResNet-50: Sum(conv, r) + Relu) fuses the same way. */
static void test_sum(void) {
    static const fuse_case cases[] = {
        { "pointwise Sum", NULL, "0", { 1, 8, 12, 5, 7, 1, 1, 0, 1, true, false, false, ACT_RELU }, 1, NULL },
        { "im2col Sum", "im2col", NULL, { 1, 8, 8, 5, 5, 3, 1, 1, 1, true, true, true, ACT_RELU }, 2, NULL },
        { "direct Sum", "direct", NULL, { 2, 3, 5, 7, 6, 3, 1, 1, 1, false, true, false, ACT_NONE }, 1, NULL },
    };
    g_sum = true;
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) check_case(&cases[i]);
    g_sum = false;
}

/* ------------------------------------------------------------ the reference pair */

/* Direct and im2col + GEMM with residuals give the same bits (and so do
 * the implicit and pointwise GEMMs without split-K), for several
 * activations, batch 2, groups, stride and padding. */
static void test_bitwise_paths(void) {
    if (!g_gpu) return;
    static const block blocks[] = {
        { 2, 4, 6, 7, 5, 3, 1, 1, 2, true, false, false, ACT_RELU },
        { 2, 5, 7, 6, 7, 3, 2, 1, 1, true, true, false, ACT_SIGMOID },
        { 1, 6, 6, 5, 5, 3, 1, 1, 1, false, false, true, ACT_GELU },
        { 2, 6, 8, 5, 3, 1, 1, 0, 1, true, false, false, ACT_NONE },
        { 1, 64, 8, 3, 3, 1, 1, 0, 1, true, true, false, ACT_CLIP },
    };
    /* (gpu.conv_algo, gpu.gemm_kernel; NULL: auto), split-K off: loop is
     * gemm.wgsl, else the generated kernel */
    static const char *const algos[][2] = { { "direct", NULL }, { "im2col", NULL }, { "implicit", NULL },
                                            { NULL, NULL }, { "im2col", "loop" }, { NULL, "loop" } };
    for (size_t i = 0; i < RLX_ARRAY_LEN(blocks); i++) {
        const block *b = &blocks[i];
        int64_t yd[4], xd[4] = { b->n, b->cin, b->h, b->w };
        rlx_model *m = make_block(b, yd);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *r = test_tensor_random(RLX_DTYPE_F32, 4, yd, -1, 1);
        const char *names[2] = { "x", "r" };
        const rlx_tensor *in[2] = { x, r };
        size_t n_in = b->identity ? 1 : 2;
        run_t ref = { NULL, 0, NULL, NULL };
        for (size_t a = 0; a < RLX_ARRAY_LEN(algos); a++) {
            char opts[128];
            snprintf(opts, sizeof opts, "gpu.gemm_splitk=0;gpu.conv_algo=%s;gpu.gemm_kernel=%s",
                     algos[a][0] ? algos[a][0] : "auto", algos[a][1] ? algos[a][1] : "auto");
            run_t o = run_with(m, "gpu", NULL, opts, n_in, names, in);
            char alg[64];
            snprintf(alg, sizeof alg, "%s%s%s", algos[a][0] ? algos[a][0] : "auto", algos[a][1] ? " + " : "",
                     algos[a][1] ? algos[a][1] : "");
            CHECK_MSG(fused_convs(o.p) == 1 && cpu_steps(o.p) == 0, "block %zu, %s: not fused on the GPU", i, alg);
            if (a == 0) {
                ref = o;
                continue;
            }
            CHECK_MSG(o.n == 1 && ref.n == 1 && same_bits(o.out[0], ref.out[0]),
                      "block %zu: %s and direct differ with a residual (max abs %g)", i, alg,
                      o.n && ref.n ? test_max_abs_diff(o.out[0], ref.out[0]) : -1.0);
            run_free(&o);
        }
        run_free(&ref);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(r);
        rlx_model_destroy(m);
    }
}

/* ------------------------------------------------------------ preconditions */

/* No fusion: the conv output has a second user or is a graph output, r
 * broadcasts, the Conv has its own activation. Add(Conv1(x), Conv2(x))
 * fuses into Conv2 only (Conv1's output is ready before it). Results
 * match the unfused graph (rtol 1e-6 CPU, 1e-4 GPU). */
static void test_preconditions(void) {
    int64_t xd[4] = { 1, 4, 5, 6 }, wd[4] = { 4, 4, 3, 3 }, bd[1] = { 4 }, rbd[4] = { 1, 4, 1, 1 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *rb = test_tensor_random(RLX_DTYPE_F32, 4, rbd, -1, 1);
    for (int c = 0; c < 5; c++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
        CHECK_OK(rlx_model_add_input(m, "rb", RLX_DTYPE_F32, 4, rbd, NULL));
        konst(m, "w", test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1));
        konst(m, "w2", test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1));
        konst(m, "b", test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1));
        rlx_attr pads = RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 }));
        add(m, "Conv", "x,w,b", "c", 1, &pads);
        const char *what = "";
        int want_fused = 0;
        switch (c) {
        case 0:
            what = "second user";
            add(m, "Add", "c,x", "s", 0, NULL);
            add(m, "Sigmoid", "c", "t", 0, NULL);
            add(m, "Mul", "s,t", "y", 0, NULL);
            break;
        case 1:
            what = "graph output";
            add(m, "Add", "x,c", "y", 0, NULL);
            CHECK_OK(rlx_model_add_output(m, "c"));
            break;
        case 2:
            what = "broadcast residual";
            add(m, "Add", "c,rb", "y", 0, NULL);
            break;
        case 3:
            what = "conv with its own activation";
            add(m, "Relu", "c", "a", 0, NULL);
            add(m, "Add", "a,x", "y", 0, NULL);
            break;
        case 4:
            what = "two convs";
            add(m, "Conv", "x,w2,b", "c2", 1, &pads);
            add(m, "Add", "c,c2", "s", 0, NULL);
            add(m, "Relu", "s", "y", 0, NULL);
            want_fused = 1;
            break;
        }
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        const char *names[2] = { "x", "rb" };
        const rlx_tensor *in[2] = { x, rb };
        run_t on = run(m, "cpu", NULL, 2, names, in);
        run_t off = run(m, "cpu", PASS, 2, names, in);
        CHECK_MSG(fused_convs(on.p) == want_fused, "%s: %d fused convs, expected %d", what, fused_convs(on.p), want_fused);
        if (c == 4) {
            const rlx_node *n2 = NULL;
            for (size_t i = 0; on.p && i < on.p->n_steps; i++)
                if (on.p->g->nodes[on.p->steps[i]].n_in == 4) n2 = &on.p->g->nodes[on.p->steps[i]];
            CHECK_MSG(n2 && n2->name && strcmp(n2->name, "c2") == 0 && rlx_node_act(n2).kind == RLX_ACT_RELU &&
                          on.p->n_steps == 2,
                      "two convs: the later Conv should take the residual and the Relu");
        }
        agree(what, &on, &off, 1e-6, 1e-7);
        if (g_gpu) {
            run_t gon = run(m, "gpu", NULL, 2, names, in);
            CHECK_MSG(cpu_steps(gon.p) == 0, "%s: steps on the CPU", what);
            agree(what, &gon, &off, 1e-4, 1e-5);
            run_free(&gon);
        }
        run_free(&on);
        run_free(&off);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(rb);
}

/* ------------------------------------------------------------ report, import */

static void test_report(void) {
    block b = { 1, 4, 4, 5, 5, 3, 1, 1, 1, true, true, true, ACT_RELU };
    int64_t yd[4], xd[4] = { 1, 4, 5, 5 };
    rlx_model *m = make_block(&b, yd);
    char path[] = "/tmp/rlx_residual_report_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
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
    CHECK_MSG(strstr(buf, "fusion: fuse_conv_residual: Conv 'c' + Add 's' + Relu 'y' -> Conv 'c' (residual, act relu)"),
              "report: %s", buf);
    run_free(&r);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* A fourth Conv input comes only from the pass: the ONNX importer and the
 * builder refuse it. */
static void test_refused(void) {
    Onnx__GraphProto *g = graph_new("g");
    int64_t xd[4] = { 1, 2, 3, 3 }, wd[4] = { 2, 2, 1, 1 };
    graph_input(g, vi_new("x", 1, 4, xd, NULL));
    graph_input(g, vi_new("r", 1, 4, xd, NULL));
    float wv[4] = { 0.5f, -1.0f, 0.25f, 2.0f }, bv[2] = { 0.1f, -0.2f };
    graph_init(g, tensor_floats("w", 4, wd, wv, 4));
    graph_init(g, tensor_floats("b", 1, (const int64_t[]){ 2 }, bv, 2));
    graph_node(g, node_new("Conv", "conv", "x,w,b,r", "y"));
    graph_output(g, vi_new("y", 1, 4, xd, NULL));
    size_t size = 0;
    uint8_t *buf = model_pack_free(model_new(13, g), &size);
    rlx_model *m = NULL;
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, NULL, &m), RLX_ERR_INVALID_MODEL, "has 4 inputs");
    rlx_model_destroy(m);
    free(buf);

    m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    CHECK_OK(rlx_model_add_input(m, "r", RLX_DTYPE_F32, 4, xd, NULL));
    konst(m, "w", test_tensor_f32(4, wd, wv));
    konst(m, "b", test_tensor_f32(1, (const int64_t[]){ 2 }, bv));
    const char *ins[4] = { "x", "w", "b", "r" }, *outs[1] = { "y" };
    CHECK_FAILS(rlx_model_add_node(m, "Conv", "conv", 4, ins, 1, outs, 0, NULL), RLX_ERR_INVALID_MODEL, "has 4 inputs");
    rlx_model_destroy(m);
}

int main(void) {
    test_seed_from_env();
    /* nodes of compiled plans run again below on the plans' constants: keep
     * their plain copies (cpu.release_packed frees those read through packs) */
    setenv("RLX_CPU_RELEASE_PACKED", "0", 1);
    g_gpu = test_have_gpu();
    if (!g_gpu) fprintf(stderr, "no GPU adapter: the GPU comparisons are skipped\n");
    test_refused();
    test_report();
    test_preconditions();
    test_fused();
    test_sum();
    test_bitwise_paths();
    TEST_MAIN_END();
}
