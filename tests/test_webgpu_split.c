#define _POSIX_C_SOURCE 200809L
/* WebGPU with operands larger than one storage binding, and an arena larger
 * than one buffer, forced small with the session options
 * gpu.max_binding_bytes and gpu.max_buffer_bytes. Every case runs once unforced and once forced, on
 * fresh random inputs, and:
 *  - stays on the GPU (the dispatch report shows no fallback), except the
 *    cases that must decline;
 *  - gives the same bits as the unforced run where the split keeps the
 *    order of every computation (elementwise, broadcast binary, copies,
 *    matmul split by batch, M and N, conv split by output channels), and
 *    agrees within rounding (rtol 1e-5, atol 1e-6; stated per case) where
 *    the matmul splits K;
 *  - lowers (checked directly, with caps of the forced limit) into more
 *    than one dispatch, none of whose windows exceeds the limit.
 * Shapes are small: lavapipe runs them. */
#include "test.h"

#include "backend/webgpu/webgpu.h"
#include "base/options.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "runtime/session.h"

#define LIMIT 4096 /* bytes: 961 f32 elements per window wherever it starts */

typedef struct op_case {
    const char *name; /* for messages */
    const char *op;
    int n_in;
    rlx_tensor *in[4];
    int konst[4];
    size_t n_attrs;
    rlx_attr attrs[4];
    int n_out;
    bool exact;    /* bit-equal to the unforced run; else within rtol/atol */
    bool declines; /* must fall back to the CPU under the limit */
} op_case;

static rlx_model *one_node_model(const op_case *c, const char **feed_names, const rlx_tensor **feeds, int *n_feeds) {
    rlx_model *m = NULL;
    if (rlx_model_create(17, &m)) return NULL;
    static char names[4][8];
    const char *ins[4], *outs[4] = { "y0", "y1", "y2", "y3" };
    *n_feeds = 0;
    for (int i = 0; i < c->n_in; i++) {
        snprintf(names[i], sizeof names[i], "in%d", i);
        ins[i] = names[i];
        if (c->konst[i]) {
            rlx_model_add_initializer(m, names[i], c->in[i]);
        } else {
            rlx_model_add_input(m, names[i], c->in[i]->dtype, c->in[i]->rank, c->in[i]->dims, NULL);
            feed_names[*n_feeds] = names[i];
            feeds[(*n_feeds)++] = c->in[i];
        }
    }
    if (rlx_model_add_node(m, c->op, "node0", (size_t)c->n_in, ins, (size_t)c->n_out, outs, c->n_attrs, c->attrs)) {
        fprintf(stderr, "%s: %s\n", c->name, rlx_last_error());
        rlx_model_destroy(m);
        return NULL;
    }
    for (int i = 0; i < c->n_out; i++) rlx_model_add_output(m, outs[i]);
    if (rlx_model_finish(m)) {
        fprintf(stderr, "%s: %s\n", c->name, rlx_last_error());
        rlx_model_destroy(m);
        return NULL;
    }
    return m;
}

/* Lowers every GPU step of p again with caps of `limit` bytes and returns
 * the most dispatches of a step; fails when a window exceeds the limit. */
static size_t check_lowering(const char *name, const rlx_program *p, uint64_t limit, const rlx_options *opts) {
#ifndef RLX_HAVE_WEBGPU
    (void)opts;
    (void)name;
    (void)p;
    (void)limit;
    return 2;
#else
    wg_caps caps;
    memset(&caps, 0, sizeof caps);
    caps.max_binding = limit;
    caps.max_buffer = (uint64_t)1 << 40;
    caps.max_groups_per_dim = 65535;
    caps.storage_align = 256;
    caps.uniform_align = 256;
    caps.max_storage_per_stage = 8;
    rlx_config *cfg = NULL; /* the options the session had */
    CHECK_OK(rlx_config_resolve(opts, NULL, &cfg));
    if (!cfg) return 0;
    caps.cfg = cfg;
    size_t most = 0;
    for (size_t s = 0; s < p->n_steps; s++) {
        if (p->step_on[s] != RLX_STEP_GPU) continue;
        wg_lower L;
        rlx_status st = wg_lower_node(p->g, &p->g->nodes[p->steps[s]], &caps, &L);
        CHECK_MSG(st == RLX_OK, "%s: lowering under %llu bytes: %s", name, (unsigned long long)limit,
                  st == RLX_ERR_UNSUPPORTED ? L.why : rlx_last_error());
        for (size_t k = 0; k < L.n_d; k++)
            for (int i = 0; i < L.d[k].n_bind; i++) {
                uint64_t b = wg_binding_bytes(&caps, L.d[k].bind[i].elem_off, L.d[k].bind[i].elems);
                CHECK_MSG(b <= limit, "%s: dispatch %zu binds %llu bytes", name, k, (unsigned long long)b);
            }
        if (L.n_d > most) most = L.n_d;
        wg_lower_free(&L);
    }
    rlx_config_destroy(cfg);
    return most;
#endif
}

/* The options of a run here: the arena starts as NaN (gpu.poison: an
 * element no block writes fails), bindings and buffers as large as the
 * device allows unless an item forces them; items "key=value" or NULL. */
static rlx_options *split_options(const char *a, const char *b) {
    rlx_options *o = test_options("gpu.poison=1", "gpu.max_binding_bytes=auto", "gpu.max_buffer_bytes=auto", NULL);
    if (o && a) CHECK_OK(rlx_options_parse(o, a));
    if (o && b) CHECK_OK(rlx_options_parse(o, b));
    return o;
}

/* Runs m on the GPU with split_options(opt_a, opt_b). */
static rlx_status run_model(const rlx_model *m, const char *opt_a, const char *opt_b, int n_feeds, const char **names,
                            const rlx_tensor **feeds, rlx_tensor ***out, size_t *n, char *report, size_t cap,
                            uint64_t *limit_seen, size_t *most_dispatches, const char *what) {
    rlx_session *s = NULL;
    rlx_session_options o = { .device = "gpu" };
    *out = NULL;
    *n = 0;
    rlx_options *opts = split_options(opt_a, opt_b);
    rlx_status st = rlx_session_create_with_options(m, &o, opts, &s);
    if (!st) st = rlx_session_run(s, (size_t)n_feeds, names, feeds, out, n);
    if (!st && report) snprintf(report, cap, "%s", rlx_session_dispatch_report(s));
    if (!st && most_dispatches) {
        const rlx_program *p = rlx_session_last_program(s);
        if (p) {
            *most_dispatches = check_lowering(what, p, LIMIT, opts);
            if (limit_seen) *limit_seen = p->mem.buffer_limit;
        }
    }
    rlx_session_destroy(s);
    rlx_options_destroy(opts);
    return st;
}

static void run_case(op_case *c) {
    const char *names[4];
    const rlx_tensor *feeds[4];
    int nf = 0;
    rlx_model *m = one_node_model(c, names, feeds, &nf);
    CHECK_MSG(m != NULL, "%s: model", c->name);
    if (!m) return;
    rlx_tensor **a = NULL, **b = NULL;
    size_t na = 0, nb = 0, most = 0;
    char rep[4096] = "";
    /* a lone Sum, Max, Min or Mean of two or more float inputs is one
     * rlx.FusedElementwise otherwise: the variadic lowering's own split is
     * tested with fuse_elementwise off */
    bool variadic = !strcmp(c->op, "Sum") || !strcmp(c->op, "Mean") || !strcmp(c->op, "Max") || !strcmp(c->op, "Min");
    const char *passes = variadic ? "passes.disable=fuse_elementwise" : NULL;
    CHECK_OK(run_model(m, passes, NULL, nf, names, feeds, &a, &na, NULL, 0, NULL, NULL, c->name));
    char lim[64];
    snprintf(lim, sizeof lim, "gpu.max_binding_bytes=%d", LIMIT);
    rlx_status st =
        run_model(m, passes, lim, nf, names, feeds, &b, &nb, rep, sizeof rep, NULL, c->declines ? NULL : &most, c->name);
    CHECK_MSG(st == RLX_OK, "%s under %d bytes: %s", c->name, LIMIT, rlx_last_error());
    char want[128];
    snprintf(want, sizeof want, "%-24s %7d %7d %9d", c->op, 1, c->declines ? 0 : 1, c->declines ? 1 : 0);
    CHECK_MSG(strstr(rep, want) != NULL, "%s: expected '%s' in the report:\n%s", c->name, want, rep);
    if (!c->declines) CHECK_MSG(most > 1, "%s: lowered into %zu dispatch(es) under the limit", c->name, most);
    for (size_t i = 0; i < na && i < nb; i++) {
        if (c->exact && !c->declines)
            CHECK_MSG(a[i]->nbytes == b[i]->nbytes && memcmp(a[i]->data, b[i]->data, a[i]->nbytes) == 0,
                      "%s: output %zu under the limit differs in bits (max abs diff %g)", c->name, i,
                      test_max_abs_diff(b[i], a[i]));
        else /* the CPU fallback or a K split sums in another order */
            CHECK_MSG(test_allclose(b[i], a[i], 1e-5, 1e-6), "%s: output %zu under the limit: max abs diff %g",
                      c->name, i, test_max_abs_diff(b[i], a[i]));
    }
    CHECK(na == nb && na == (size_t)c->n_out);
    test_free_outputs(a, (int)na);
    test_free_outputs(b, (int)nb);
    rlx_model_destroy(m);
    for (int i = 0; i < c->n_in; i++) rlx_tensor_destroy(c->in[i]);
}

static rlx_tensor *R(int rank, const int64_t *dims) { return test_tensor_random(RLX_DTYPE_F32, rank, dims, -1, 1); }
static rlx_tensor *Rp(int rank, const int64_t *dims) { return test_tensor_random(RLX_DTYPE_F32, rank, dims, 0.5f, 2); }

#define D(...) ((const int64_t[]){ __VA_ARGS__ })

static void test_elementwise(void) {
    op_case c1 = { "Exp [40,50]", "Exp", 1, { R(2, D(40, 50)) }, { 0 }, 0, { { 0 } }, 1, true, false };
    run_case(&c1);
    op_case c2 = { "Clip [3,20,30]", "Clip", 1, { R(3, D(3, 20, 30)) }, { 0 }, 0, { { 0 } }, 1, true, false };
    run_case(&c2);
    /* broadcast on both sides: a [6,1,50] * b [1,40,50] -> [6,40,50] */
    op_case c3 = { "Mul broadcast", "Mul", 2, { R(3, D(6, 1, 50)), R(3, D(1, 40, 50)) }, { 0, 0 }, 0, { { 0 } }, 1,
                   true, false };
    run_case(&c3);
    /* a constant operand larger than a binding: b [40,60] */
    op_case c4 = { "Sub const", "Sub", 2, { R(2, D(40, 1)), R(2, D(40, 60)) }, { 0, 1 }, 0, { { 0 } }, 1, true, false };
    run_case(&c4);
    op_case c5 = { "Pow", "Pow", 2, { Rp(2, D(30, 50)), R(1, D(50)) }, { 0, 0 }, 0, { { 0 } }, 1, true, false };
    run_case(&c5);
    op_case c6 = { "Sum of 3", "Sum", 3, { R(2, D(40, 50)), R(1, D(50)), R(2, D(40, 1)) }, { 0, 0, 0 }, 0, { { 0 } },
                   1, true, false };
    run_case(&c6);
    op_case c7 = { "Mean of 2", "Mean", 2, { R(2, D(40, 50)), R(2, D(40, 50)) }, { 0, 0 }, 0, { { 0 } }, 1, true, false };
    run_case(&c7);
}

static void test_copies(void) {
    int64_t perm[3] = { 2, 0, 1 };
    op_case c1 = { "Transpose", "Transpose", 1, { R(3, D(6, 20, 30)) }, { 0 }, 1, { RLX_ATTR_IS("perm", 3, perm) }, 1,
                   true, false };
    run_case(&c1);
    /* Slice with negative steps (5 inputs: built by hand) */
    {
        int64_t st[2] = { 38, 45 }, en[2] = { -100, 2 }, ax[2] = { 0, 1 }, sp[2] = { -1, -2 };
        rlx_tensor *x = R(2, D(40, 50)), *t[4] = { test_tensor_i64(1, D(2), st), test_tensor_i64(1, D(2), en),
                                                   test_tensor_i64(1, D(2), ax), test_tensor_i64(1, D(2), sp) };
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(17, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, D(40, 50), NULL));
        const char *tn[4] = { "st", "en", "ax", "sp" };
        for (int i = 0; i < 4; i++) CHECK_OK(rlx_model_add_initializer(m, tn[i], t[i]));
        CHECK_OK(rlx_model_add_node(m, "Slice", "s", 5, (const char *[]){ "x", "st", "en", "ax", "sp" }, 1,
                                    (const char *[]){ "y" }, 0, NULL));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        const char *names[1] = { "x" };
        const rlx_tensor *feeds[1] = { x };
        rlx_tensor **a = NULL, **b = NULL;
        size_t na = 0, nb = 0, most = 0;
        char rep[4096] = "";
        CHECK_OK(run_model(m, NULL, NULL, 1, names, feeds, &a, &na, NULL, 0, NULL, NULL, "slice"));
        CHECK_OK(run_model(m, "gpu.max_binding_bytes=4096", NULL, 1, names, feeds, &b, &nb, rep, sizeof rep, NULL,
                           &most, "slice"));
        CHECK_MSG(strstr(rep, "Slice                          1       1         0") != NULL, "slice: %s", rep);
        CHECK_MSG(most > 1, "slice: %zu dispatches", most);
        if (a && b) {
            CHECK(memcmp(a[0]->data, b[0]->data, a[0]->nbytes) == 0);
            /* and the elements themselves: y[i][j] = x[38 - i][45 - 2 j] */
            const float *px = x->data, *py = b[0]->data;
            CHECK(b[0]->dims[0] == 39 && b[0]->dims[1] == 22);
            bool ok = true;
            for (int i = 0; i < 39; i++)
                for (int j = 0; j < 22; j++) ok &= py[i * 22 + j] == px[(38 - i) * 50 + 45 - 2 * j];
            CHECK_MSG(ok, "slice with negative steps under the limit: wrong elements");
        }
        test_free_outputs(a, (int)na);
        test_free_outputs(b, (int)nb);
        rlx_model_destroy(m);
        rlx_tensor_destroy(x);
        for (int i = 0; i < 4; i++) rlx_tensor_destroy(t[i]);
    }
    op_case c3 = { "Concat", "Concat", 3, { R(2, D(20, 30)), R(2, D(20, 25)), R(2, D(20, 1)) }, { 0, 0, 0 }, 1,
                   { RLX_ATTR_I("axis", 1) }, 1, true, false };
    run_case(&c3);
    int64_t pads[4] = { 2, 3, 1, 4 };
    op_case c4 = { "Pad", "Pad", 2, { R(2, D(30, 40)), test_tensor_i64(1, D(4), pads) }, { 0, 1 }, 0, { { 0 } }, 1,
                   true, false };
    run_case(&c4);
    int64_t shape[2] = { 40, 50 };
    op_case c5 = { "Expand", "Expand", 2, { R(2, D(1, 50)), test_tensor_i64(1, D(2), shape) }, { 0, 1 }, 0, { { 0 } },
                   1, true, false };
    run_case(&c5);
    int64_t reps[2] = { 3, 2 };
    op_case c6 = { "Tile", "Tile", 2, { R(2, D(12, 25)), test_tensor_i64(1, D(2), reps) }, { 0, 1 }, 0, { { 0 } }, 1,
                   true, false };
    run_case(&c6);
    int64_t split[2] = { 15, 25 };
    op_case c7 = { "Split", "Split", 2, { R(2, D(40, 50)), test_tensor_i64(1, D(2), split) }, { 0, 1 }, 1,
                   { RLX_ATTR_I("axis", 0) }, 2, true, false };
    run_case(&c7);
    op_case c8 = { "DepthToSpace", "DepthToSpace", 1, { R(4, D(1, 16, 8, 10)) }, { 0 }, 1,
                   { RLX_ATTR_I("blocksize", 2) }, 1, true, false };
    run_case(&c8);
}

static void test_matmul(void) {
    /* M split: A [300,10] (3000 elements), y [300,20] */
    op_case c1 = { "MatMul M split", "MatMul", 2, { R(2, D(300, 10)), R(2, D(10, 20)) }, { 0, 1 }, 0, { { 0 } }, 1,
                   true, false };
    run_case(&c1);
    /* Gemm transB: B [300,10] split by rows (N), C [300] split with it */
    op_case c2 = { "Gemm transB", "Gemm", 3, { R(2, D(7, 10)), R(2, D(300, 10)), R(1, D(300)) }, { 0, 1, 1 }, 2,
                   { RLX_ATTR_I("transB", 1), RLX_ATTR_F("alpha", 0.5f) }, 1, true, false };
    run_case(&c2);
    /* batch split: [4,20,16] x [4,16,24] -> [4,20,24] */
    op_case c3 = { "MatMul batch split", "MatMul", 2, { R(3, D(4, 20, 16)), R(3, D(4, 16, 24)) }, { 0, 0 }, 0,
                   { { 0 } }, 1, true, false };
    run_case(&c3);
    /* broadcast batch dims: [3,2,20,10] x [10,14] -> [3,2,20,14] = 1680 elements */
    op_case c4 = { "MatMul broadcast batch", "MatMul", 2, { R(4, D(3, 2, 20, 10)), R(2, D(10, 14)) }, { 0, 1 }, 0,
                   { { 0 } }, 1, true, false };
    run_case(&c4);
    /* both M and N: A [100,8], B^T [100,8] -> y [100,100] = 10000 elements */
    op_case c5 = { "Gemm M and N", "Gemm", 2, { R(2, D(100, 8)), R(2, D(100, 8)) }, { 0, 1 }, 1,
                   { RLX_ATTR_I("transB", 1) }, 1, true, false };
    run_case(&c5);
    /* a MatMul weight B [100,30] stored row-major: its columns span all of
     * it, so K is split (4 chunks): rounding differs, rtol 1e-5 */
    op_case c6 = { "MatMul K split", "MatMul", 2, { R(2, D(5, 100)), R(2, D(100, 30)) }, { 0, 1 }, 0, { { 0 } }, 1,
                   false, false };
    run_case(&c6);
    /* transA: A stored [K=10, M=300]; a row of A spans it: K split */
    op_case c7 = { "Gemm transA", "Gemm", 3, { R(2, D(10, 300)), R(2, D(10, 6)), R(2, D(1, 6)) }, { 0, 1, 1 }, 2,
                   { RLX_ATTR_I("transA", 1), RLX_ATTR_F("beta", 2.0f) }, 1, false, false };
    run_case(&c7);
}

static void test_conv(void) {
    /* weights [64,4,3,3] = 2304 elements: the GEMM splits by output
     * channels; col per image 36 x 16 fits */
    int64_t pads[4] = { 1, 1, 1, 1 };
    op_case c1 = { "Conv big weights", "Conv", 3, { R(4, D(1, 4, 4, 4)), R(4, D(64, 4, 3, 3)), R(1, D(64)) },
                   { 0, 1, 1 }, 1, { RLX_ATTR_IS("pads", 4, pads) }, 1, true, false };
    run_case(&c1);
    /* depthwise (dwconv.wgsl unforced): x [2,6,10,10] = 1200 elements is
     * larger than a binding, so im2col chunks of one (image, group) take
     * over; the same bits */
    op_case c2 = { "Conv depthwise big input", "Conv", 3, { R(4, D(2, 6, 10, 10)), R(4, D(6, 1, 3, 3)), R(1, D(6)) },
                   { 0, 1, 1 }, 2, { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_I("group", 6) }, 1, true, false };
    run_case(&c2);
    /* pointwise (gemm.wgsl on x as it is): weights [64,40,1,1] = 2560
     * elements split by output channels */
    op_case c3 = { "Conv pointwise big weights", "Conv", 2, { R(4, D(1, 40, 4, 4)), R(4, D(64, 40, 1, 1)) }, { 0, 1 },
                   0, { { 0 } }, 1, true, false };
    run_case(&c3);
}

/* Lowerings that cannot split decline, and the model still runs. */
static void test_declines(void) {
    op_case c1 = { "Softmax declines", "Softmax", 1, { R(2, D(40, 50)) }, { 0 }, 0, { { 0 } }, 1, false, true };
    run_case(&c1);
    op_case c3 = { "GlobalAveragePool declines", "GlobalAveragePool", 1, { R(4, D(2, 8, 16, 16)) }, { 0 }, 0, { { 0 } },
                   1, false, true };
    run_case(&c3);
}

/* An arena larger than one buffer: a chain of 12 KB tensors with
 * gpu.max_buffer_bytes = 16 KiB splits the arena into several buffers; a
 * CPU step (LRN, no WGSL lowering) in the middle moves values between the
 * host mirror and the split arena. Same bits as the unforced run. */
static void test_arena_split(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, D(1, 3, 25, 40), NULL));
    rlx_tensor *w = R(4, D(1, 3, 25, 40));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    rlx_attr lrn[1] = { RLX_ATTR_I("size", 3) };
#define N1(op, a, o) CHECK_OK(rlx_model_add_node(m, op, NULL, 1, (const char *[]){ a }, 1, (const char *[]){ o }, 0, NULL))
#define N2(op, a, b, o) CHECK_OK(rlx_model_add_node(m, op, NULL, 2, (const char *[]){ a, b }, 1, (const char *[]){ o }, 0, NULL))
    N1("Relu", "x", "a");
    N2("Mul", "a", "w", "b");
    N2("Add", "b", "x", "c");
    CHECK_OK(rlx_model_add_node(m, "LRN", "lrn", 1, (const char *[]){ "c" }, 1, (const char *[]){ "d" }, 1, lrn));
    N1("Tanh", "d", "e");
    N2("Add", "e", "b", "f");
    N2("Mul", "f", "c", "g");
    N1("Sigmoid", "g", "h");
#undef N1
#undef N2
    CHECK_OK(rlx_model_add_output(m, "h"));
    CHECK_OK(rlx_model_add_output(m, "e"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = R(4, D(1, 3, 25, 40));
    const char *names[1] = { "x" };
    const rlx_tensor *feeds[1] = { x };
    rlx_tensor **a = NULL, **b = NULL;
    size_t na = 0, nb = 0;
    uint64_t limit_seen = 0;
    size_t most = 0;
    char rep[4096] = "";
    const char *lrn_off = "gpu.disable=LRN"; /* a CPU step between GPU steps (LRN has a WGSL lowering) */
    CHECK_OK(run_model(m, lrn_off, NULL, 1, names, feeds, &a, &na, NULL, 0, NULL, NULL, "arena"));
    rlx_status st = run_model(m, lrn_off, "gpu.max_buffer_bytes=16384", 1, names, feeds, &b, &nb, rep, sizeof rep,
                              &limit_seen, &most, "arena");
    CHECK_MSG(st == RLX_OK, "arena split: %s", rlx_last_error());
    CHECK_MSG(limit_seen == 16384, "the plan's buffer limit is %llu", (unsigned long long)limit_seen);
    CHECK_MSG(strstr(rep, "LRN                            1       0         1") != NULL, "LRN on the CPU: %s", rep);
    for (size_t i = 0; i < na && i < nb; i++)
        CHECK_MSG(memcmp(a[i]->data, b[i]->data, a[i]->nbytes) == 0, "arena split: output %zu differs in bits", i);
    CHECK(na == 2 && nb == 2);
    /* the plan really needs several buffers */
    {
        rlx_session *s = NULL;
        rlx_session_options o = { .device = "gpu" };
        rlx_options *opts = split_options("gpu.max_buffer_bytes=16384", NULL);
        CHECK_OK(rlx_session_create_with_options(m, &o, opts, &s));
        rlx_options_destroy(opts);
        CHECK_OK(rlx_session_prepare(s, 1, names, feeds));
        const rlx_program *p = rlx_session_last_program(s);
        if (p) {
            CHECK_MSG(p->mem.arena_bytes > 2 * 16384, "arena %llu bytes: not split into 3+ buffers",
                      (unsigned long long)p->mem.arena_bytes);
            for (size_t v = 0; v < p->g->n_values; v++)
                if (p->mem.offset[v] != RLX_NO_OFFSET && p->mem.bytes[v])
                    CHECK(p->mem.offset[v] / 16384 == (p->mem.offset[v] + p->mem.bytes[v] - 1) / 16384);
        }
        rlx_session_destroy(s);
    }
    test_free_outputs(a, (int)na);
    test_free_outputs(b, (int)nb);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed(test_seed_from_env());
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_split: skipped: no GPU adapter (lavapipe counts); set RLX_TEST_REQUIRE_GPU=1 to "
                        "make this a failure\n");
        return 0;
    }
    test_elementwise();
    test_copies();
    test_matmul();
    test_conv();
    test_declines();
    test_arena_split();
    TEST_MAIN_END();
}
