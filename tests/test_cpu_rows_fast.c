/* The CPU fast paths of the recurrent ops (cpu_rnn.c), the row-wise ops
 * (cpu_rows.c: Softmax, LogSoftmax, ArgMax, ArgMin, LayerNormalization)
 * and the f32 reductions (cpu_reduce.c) against the reference kernels, and
 * the vocabulary's vector Exp, Sigmoid, Tanh (cpu_ew_vec.h; the RNN gates
 * and Softmax rows use them) against double.
 *
 * Each node runs twice through rlx_cpu_run_node (reference = false, then
 * true) on random inputs (never zeros), outputs poisoned with NaN first, so
 * an element the fast path forgets to write fails. The recurrent ops run
 * once per instruction set this CPU has (portable C, AVX2, AVX-512:
 * rlx_cpu_isa_cap). ctest runs this program
 * with the default thread count and with RLX_NUM_THREADS=1, 2, 5, 7 and 16
 * (tests/CMakeLists.txt): the work splits (directions x slices of hidden
 * units, blocks of rows) change with it; the recurrent ops' splits must
 * give the 1-thread run's bytes (rnn_split_check).
 *
 * Tolerances, stated at each comparison:
 *  - vector math (the vocabulary's, about 1 and 2.5 ulps: test_cpu_ew_vec
 *    states them): exp of x <= 0 and sigmoid within 2^-22 and 2^-21
 *    relative where the result is a normal float, 1.2e-38 absolute below;
 *    tanh within 2^-21 relative; NaN stays NaN, +-inf and +-0 exact.
 *  - RNN, GRU, LSTM: the fast path sums I + H products per gate in f32
 *    (the reference in double), uses the vector math above, and carries
 *    the differences through T steps; values are in (-1, 1): |fast - ref|
 *    <= 2e-5 + 2e-5 |ref|. A missing bias, peephole or clip is off by
 *    0.01 or more.
 *  - Softmax, LogSoftmax: 4 ulps of f32 relative plus 1e-7 absolute (LogSoftmax
 *    values of up to ~12 in magnitude: 1e-6).
 *  - LayerNormalization: 1e-5 relative + 1e-5 absolute on outputs of O(3).
 *  - ArgMax, ArgMin: equal, NaNs (at a row's index 0, elsewhere, rows of
 *    NaN) and ties included.
 *  - Reduce*: relative 1e-6 (both sum in double; the fast path in another
 *    order, so the f32 results may differ by one rounding), Max / Min
 *    exact, over rows of up to 100K elements (several blocks). */
#include "test.h"
#include "test_node.h"

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/op.h"

/* ------------------------------------------------------------ one node */

typedef struct node_attrs {
    rlx_node_attr a[16];
    int n;
} node_attrs;

static rlx_node_attr *attr_new(node_attrs *s, const char *name, rlx_attr_type t) {
    rlx_node_attr *a = &s->a[s->n++];
    memset(a, 0, sizeof *a);
    a->name = (char *)name;
    a->type = t;
    return a;
}
static void attr_int(node_attrs *s, const char *name, int64_t v) { attr_new(s, name, RLX_ATTR_INT)->i = v; }
static void attr_float(node_attrs *s, const char *name, float v) { attr_new(s, name, RLX_ATTR_FLOAT)->f = v; }
static void attr_str(node_attrs *s, const char *name, const char *v) { attr_new(s, name, RLX_ATTR_STRING)->s = (char *)v; }
static void attr_ints(node_attrs *s, const char *name, size_t n, int64_t *v) {
    rlx_node_attr *a = attr_new(s, name, RLX_ATTR_INTS);
    a->n = n;
    a->ints = v;
}
static void attr_strs(node_attrs *s, const char *name, size_t n, const char **v) {
    rlx_node_attr *a = attr_new(s, name, RLX_ATTR_STRINGS);
    a->n = n;
    a->strings = (char **)v;
}
static void attr_floats(node_attrs *s, const char *name, size_t n, float *v) {
    rlx_node_attr *a = attr_new(s, name, RLX_ATTR_FLOATS);
    a->n = n;
    a->floats = v;
}

/* A node of op at since-version `version` with n_in inputs, n_out outputs
 * and the attributes of s (borrowed); its parameter block lives until the
 * next call. */
static rlx_node make_node(const char *op, int version, int n_in, int n_out, node_attrs *s) {
    return test_make_node(op, version, n_in, n_out, s->a, s->n);
}

static void poison(rlx_tensor *t) {
    if (!t) return;
    if (t->dtype == RLX_DTYPE_F32)
        for (size_t i = 0; i < rlx_tensor_numel(t); i++) ((float *)t->data)[i] = NAN;
    else
        memset(t->data, 0x5a, t->nbytes);
}

/* Runs n on both paths into fresh outputs of the given shapes (NULL dims:
 * an omitted output) and compares every output: |fast - ref| <= atol +
 * rtol |ref| (f32; NaN equals NaN), or equality (int64). Returns 1 on a
 * pass. */
static int fast_vs_ref(const char *what, const rlx_node *n, const rlx_tensor *const *in, int n_out,
                       const rlx_dtype *dts, const int *ranks, const int64_t *const *dims, double rtol, double atol) {
    rlx_tensor *fast[4] = { 0 }, *ref[4] = { 0 };
    for (int i = 0; i < n_out; i++) {
        if (!dims[i]) continue;
        fast[i] = test_tensor(dts[i], ranks[i], dims[i]);
        ref[i] = test_tensor(dts[i], ranks[i], dims[i]);
        poison(fast[i]), poison(ref[i]);
    }
    rlx_status sf = rlx_cpu_run_node(NULL, n, in, fast, false);
    CHECK_MSG(sf == RLX_OK, "%s: fast path: %s", what, rlx_last_error());
    rlx_status sr = rlx_cpu_run_node(NULL, n, in, ref, true);
    CHECK_MSG(sr == RLX_OK, "%s: reference: %s", what, rlx_last_error());
    int ok = sf == RLX_OK && sr == RLX_OK;
    for (int o = 0; ok && o < n_out; o++) {
        if (!fast[o]) continue;
        size_t numel = rlx_tensor_numel(ref[o]);
        for (size_t i = 0; ok && i < numel; i++) {
            if (dts[o] == RLX_DTYPE_I64) {
                int64_t a = ((int64_t *)fast[o]->data)[i], b = ((int64_t *)ref[o]->data)[i];
                if (a != b) {
                    fprintf(stderr, "%s: output %d element %zu: fast %lld, reference %lld\n", what, o, i, (long long)a,
                            (long long)b);
                    ok = 0;
                }
                continue;
            }
            float a = ((float *)fast[o]->data)[i], b = ((float *)ref[o]->data)[i];
            if ((isnan(a) && isnan(b)) || a == b) continue;
            if (!(fabs((double)a - (double)b) <= atol + rtol * fabs((double)b))) {
                fprintf(stderr, "%s: output %d element %zu of %zu: fast %.9g, reference %.9g (rtol %g, atol %g)\n",
                        what, o, i, numel, a, b, rtol, atol);
                ok = 0;
            }
        }
    }
    for (int i = 0; i < n_out; i++) rlx_tensor_destroy(fast[i]), rlx_tensor_destroy(ref[i]);
    CHECK_MSG(ok, "%s: fast path differs from the reference", what);
    return ok;
}

/* ------------------------------------------------------------ vector math */

#if RLX_HAVE_AVX2_BUILD
typedef enum { VM_EXP, VM_SIGMOID, VM_TANH } vm_fn;

RLX_AVX2 static void vm_apply(vm_fn f, const float *x, float *y) {
    __m256 v = _mm256_loadu_ps(x);
    __m256 r = f == VM_EXP ? rlx_ewm_exp_v8(v) : f == VM_SIGMOID ? rlx_ewm_sigmoid_v8(v) : rlx_ewm_tanh_v8(v);
    _mm256_storeu_ps(y, r);
}

static double vm_ref(vm_fn f, double x) {
    return f == VM_EXP ? exp(x) : f == VM_SIGMOID ? 1.0 / (1.0 + exp(-x)) : tanh(x);
}

/* Max relative error over [lo, hi] in `steps` points; fails when above
 * bound (exp and sigmoid: absolute 1.2e-38 where the result is below the
 * smallest normal float). */
static void vm_sweep(vm_fn f, const char *name, double lo, double hi, int steps, double bound) {
    double worst = 0, at = 0;
    float x[8], y[8];
    for (int i = 0; i < steps; i += 8) {
        for (int l = 0; l < 8; l++) x[l] = (float)(lo + (hi - lo) * (double)(i + l) / (double)(steps - 1));
        vm_apply(f, x, y);
        for (int l = 0; l < 8; l++) {
            double want = vm_ref(f, x[l]), got = y[l];
            if (f != VM_TANH && want < 1.1754943508222875e-38) {
                CHECK_MSG(fabs(got - want) < 1.2e-38, "%s(%g) = %g, want %g", name, x[l], got, want);
                continue;
            }
            double rel = want == 0 ? fabs(got) : fabs(got - want) / fabs(want);
            if (rel > worst) worst = rel, at = x[l];
        }
    }
    CHECK_MSG(worst <= bound, "%s: relative error %.3g at x = %.9g exceeds %.3g", name, worst, at, bound);
    printf("  %s on [%g, %g]: max relative error %.3g (2^%.1f), bound %.3g\n", name, lo, hi, worst,
           worst > 0 ? log2(worst) : -99.0, bound);
}

static void test_vmath(void) {
    if (!rlx_cpu_has_avx2()) {
        printf("  vector math: no AVX2 + FMA on this CPU, skipped (the fast paths fall back)\n");
        return;
    }
    vm_sweep(VM_EXP, "exp", -104.0, 0.0, 2000000, 0x1p-22);
    vm_sweep(VM_EXP, "exp", -1.0, 0.0, 400000, 0x1p-22);
    vm_sweep(VM_SIGMOID, "sigmoid", -90.0, 30.0, 2000000, 0x1p-21);
    vm_sweep(VM_SIGMOID, "sigmoid", -1.0, 1.0, 400000, 0x1p-21);
    vm_sweep(VM_TANH, "tanh", -12.0, 12.0, 2000000, 0x1p-21);
    vm_sweep(VM_TANH, "tanh", -0.7, 0.7, 400000, 0x1p-21);
    vm_sweep(VM_TANH, "tanh", 1e-30, 1e-3, 400000, 0x1p-21);
    /* specials */
    float x[8] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 0.625f }, y[8];
    vm_apply(VM_SIGMOID, x, y);
    CHECK(y[0] == 0.5f && y[1] == 0.5f && y[2] == 1.0f && y[3] == 0.0f && isnan(y[4]));
    vm_apply(VM_TANH, x, y);
    CHECK(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]) && y[2] == 1.0f && y[3] == -1.0f &&
          isnan(y[4]) && y[5] == 1e-40f && y[6] == -1e-40f);
    float xe[8] = { 0.0f, -0.0f, -INFINITY, NAN, -87.0f, -88.0f, -200.0f, -1e-30f };
    vm_apply(VM_EXP, xe, y);
    CHECK(y[0] == 1.0f && y[1] == 1.0f && y[2] == 0.0f && isnan(y[3]) && y[6] == 0.0f && y[7] == 1.0f);
}
#else
static void test_vmath(void) { printf("  vector math: not an x86 build, skipped\n"); }
#endif

/* ------------------------------------------------------------ RNN, GRU, LSTM */

typedef struct rnn_case {
    const char *op; /* "RNN", "GRU", "LSTM" */
    const char *dir;
    int layout, T, N, I, H;
    bool b, seq, h0, c0, p, clip, input_forget, lbr, acts, want_y, want_yh, want_yc;
    bool split; /* also rnn_split_check */
} rnn_case;

/* The recurrent fast path splits each direction's hidden units into slices
 * over the threads (cpu_rnn.c) and packs R per slice (at run time, or once
 * by rlx_cpu_prepare_node); no split may change a bit. The node runs on
 * the fast path at 1 thread (the reference bits), then at the pool's
 * count without packs, with the packs made at that count, and with packs
 * made for 1 thread (their split differs: R is packed at run time, W's pack
 * still serves). Every output must equal the 1-thread run's bytes. */
static void rnn_split_check(const char *what, const rlx_node *n, const rlx_tensor *const *in, int n_out,
                            const int *ranks, const int64_t *const *dims) {
    rlx_tensor *one[3] = { 0 }, *all[3] = { 0 };
    rlx_cpu_sgemm_pack pk_one, pk_all;
    for (int o = 0; o < n_out; o++)
        if (dims[o]) one[o] = test_tensor(RLX_DTYPE_F32, ranks[o], dims[o]), all[o] = test_tensor(RLX_DTYPE_F32, ranks[o], dims[o]);
    int prev = rlx_parallel_set_limit(1);
    CHECK(rlx_cpu_prepare_node(NULL, n, in, &pk_one) == RLX_OK);
    for (int o = 0; o < n_out; o++) poison(one[o]);
    rlx_status st = rlx_cpu_run_node(NULL, n, in, one, false);
    rlx_parallel_set_limit(prev);
    CHECK_MSG(st == RLX_OK, "%s: 1 thread: %s", what, rlx_last_error());
    CHECK(rlx_cpu_prepare_node(NULL, n, in, &pk_all) == RLX_OK);
    CHECK_MSG(pk_all.rnn_r && (pk_all.data || pk_all.rnn_w), "%s: R and W not packed by rlx_cpu_prepare_node", what);
    static const char *how[3] = { "no packs", "packs of this count", "packs of 1 thread" };
    const rlx_cpu_sgemm_pack *pks[3] = { NULL, &pk_all, &pk_one };
    for (int v = 0; v < 3 && st == RLX_OK; v++) {
        for (int o = 0; o < n_out; o++) poison(all[o]);
        st = rlx_cpu_run_node_packed(NULL, n, in, all, pks[v]);
        CHECK_MSG(st == RLX_OK, "%s, %d threads, %s: %s", what, rlx_parallel_threads(), how[v], rlx_last_error());
        for (int o = 0; o < n_out && st == RLX_OK; o++) {
            if (!one[o]) continue;
            const uint32_t *a = one[o]->data, *b = all[o]->data;
            size_t numel = rlx_tensor_numel(one[o]), i = 0;
            while (i < numel && a[i] == b[i]) i++;
            CHECK_MSG(i == numel, "%s, %d threads, %s: output %d element %zu: %a at 1 thread, %a here", what,
                      rlx_parallel_threads(), how[v], o, i, i < numel ? (double)((float *)one[o]->data)[i] : 0.0,
                      i < numel ? (double)((float *)all[o]->data)[i] : 0.0);
        }
    }
    rlx_cpu_sgemm_pack_free(&pk_one);
    rlx_cpu_sgemm_pack_free(&pk_all);
    for (int o = 0; o < 3; o++) rlx_tensor_destroy(one[o]), rlx_tensor_destroy(all[o]);
}

static void run_rnn(const rnn_case *c) {
    int G = !strcmp(c->op, "LSTM") ? 4 : !strcmp(c->op, "GRU") ? 3 : 1;
    bool lstm = G == 4;
    int D = !strcmp(c->dir, "bidirectional") ? 2 : 1;
    int64_t T = c->T, N = c->N, I = c->I, H = c->H;
    int64_t dx[3] = { c->layout ? N : T, c->layout ? T : N, I }, dw[3] = { D, G * H, I }, dr[3] = { D, G * H, H };
    int64_t db[2] = { D, 2 * G * H }, ds[1] = { N }, dh[3] = { c->layout ? N : D, c->layout ? D : N, H },
            dp[2] = { D, 3 * H };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 3, dw, -0.6f, 0.6f);
    rlx_tensor *r = test_tensor_random(RLX_DTYPE_F32, 3, dr, -0.6f, 0.6f);
    rlx_tensor *b = c->b ? test_tensor_random(RLX_DTYPE_F32, 2, db, -0.5f, 0.5f) : NULL;
    rlx_tensor *sl = NULL;
    if (c->seq) {
        sl = test_tensor(RLX_DTYPE_I32, 1, ds);
        for (int64_t n = 0; n < N; n++) ((int32_t *)sl->data)[n] = (int32_t)((n * 7 + 3) % (T + 1)); /* 0..T */
    }
    rlx_tensor *h0 = c->h0 ? test_tensor_random(RLX_DTYPE_F32, 3, dh, -1, 1) : NULL;
    rlx_tensor *c0 = c->c0 && lstm ? test_tensor_random(RLX_DTYPE_F32, 3, dh, -1, 1) : NULL;
    rlx_tensor *p = c->p && lstm ? test_tensor_random(RLX_DTYPE_F32, 2, dp, -0.5f, 0.5f) : NULL;
    const rlx_tensor *in[8] = { x, w, r, b, sl, h0, c0, p };
    int n_in = lstm ? 8 : 6;
    while (n_in > 3 && !in[n_in - 1]) n_in--;
    node_attrs st = { .n = 0 };
    attr_str(&st, "direction", c->dir);
    attr_int(&st, "hidden_size", H);
    if (c->layout) attr_int(&st, "layout", 1);
    if (c->clip) attr_float(&st, "clip", 0.4f);
    if (c->input_forget && lstm) attr_int(&st, "input_forget", 1);
    if (c->lbr && G == 3) attr_int(&st, "linear_before_reset", 1);
    /* activations other than the defaults: vectorised (Relu, Tanh,
     * Sigmoid) and lane by lane (HardSigmoid, LeakyRelu, ScaledTanh) */
    static const char *a_lstm[6] = { "HardSigmoid", "Tanh", "ScaledTanh", "Sigmoid", "LeakyRelu", "Tanh" };
    static const char *a_gru[4] = { "Sigmoid", "Relu", "HardSigmoid", "ScaledTanh" };
    static const char *a_rnn[2] = { "Relu", "LeakyRelu" };
    static float alphas[4] = { 0.3f, 0.9f, 0.05f, 0.2f }, betas[3] = { 0.45f, 1.1f, 0.5f };
    if (c->acts) {
        const char **a = lstm ? a_lstm : G == 3 ? a_gru : a_rnn;
        size_t na = (size_t)(lstm ? 3 : G == 3 ? 2 : 1) * (size_t)D;
        attr_strs(&st, "activations", na, a);
        attr_floats(&st, "activation_alpha", 4, alphas);
        attr_floats(&st, "activation_beta", 3, betas);
    }
    rlx_node n = make_node(c->op, 14, n_in, lstm ? 3 : 2, &st);
    int64_t dy[4] = { c->layout ? N : T, c->layout ? T : D, c->layout ? D : N, H };
    const int64_t *dims[3] = { c->want_y ? dy : NULL, c->want_yh ? dh : NULL, c->want_yc && lstm ? dh : NULL };
    rlx_dtype dts[3] = { RLX_DTYPE_F32, RLX_DTYPE_F32, RLX_DTYPE_F32 };
    int ranks[3] = { 4, 3, 3 };
    char what[256];
    snprintf(what, sizeof what,
             "%s %s layout %d T %d N %d I %d H %d%s%s%s%s%s%s%s%s%s", c->op, c->dir, c->layout, c->T, c->N, c->I,
             c->H, c->b ? " B" : "", c->seq ? " seq" : "", c->h0 ? " h0" : "", c->c0 ? " c0" : "", c->p ? " P" : "",
             c->clip ? " clip" : "", c->input_forget ? " input_forget" : "", c->lbr ? " lbr" : "",
             c->acts ? " acts" : "");
    fast_vs_ref(what, &n, in, lstm ? 3 : 2, dts, ranks, dims, 2e-5, 2e-5);
    if (c->split) rnn_split_check(what, &n, in, lstm ? 3 : 2, ranks, dims);
    for (int i = 0; i < 8; i++) rlx_tensor_destroy((rlx_tensor *)in[i]);
}

static void test_rnn(void) {
    /* the LSTM, smaller in T */
    rnn_case big = { "LSTM", "bidirectional", 0, 5, 30, 224, 224, true, false, false, false, false, false, false,
                     false, false, true, true, true, false };
    run_rnn(&big);
    static const char *ops[3] = { "RNN", "GRU", "LSTM" };
    static const char *dirs[3] = { "forward", "reverse", "bidirectional" };
    static const int hs[6] = { 1, 7, 8, 16, 17, 40 }, ns[5] = { 1, 5, 6, 13, 2 };
    int cases = 0;
    for (int o = 0; o < 3; o++)
        for (int d = 0; d < 3; d++)
            for (int v = 0; v < 8; v++) {
                rnn_case c = { .op = ops[o], .dir = dirs[d], .layout = v & 1, .T = 1 + (v * 3 + d) % 6,
                               .N = ns[(v + o) % 5], .I = 3 + (v * 5) % 9, .H = hs[(v + d + o) % 6] };
                c.b = v != 3;
                c.seq = v % 3 == 1;
                c.h0 = v % 2 == 0 || v == 5;
                c.c0 = v % 3 != 0;
                c.p = v >= 4;
                c.clip = v == 2 || v == 7;
                c.input_forget = v == 5;
                c.lbr = v % 2 == 1;
                c.acts = v == 6 || v == 7;
                c.want_y = v != 4;
                c.want_yh = v != 1;
                c.want_yc = v % 2 == 0;
                run_rnn(&c);
                cases++;
            }
    printf("  RNN/GRU/LSTM: %d cases\n", cases + 1);
}

/* The splits of the hidden units over the threads (rnn_split_check), with
 * slices as small as the thread count allows (rlx_cpu_rnn_min_slice(1)):
 * hidden sizes that split unevenly (13, 57, 257) and the 224,
 * batch 1 and 2 (the GEMV) and larger, both directions, both layouts,
 * sequence_lens from 0 to T, initial states, peepholes, clip,
 * input_forget, GRU with and without linear_before_reset, other
 * activations, batches below 12 rows (one GEMM projects every step's X)
 * and of 12 or more (step by step); each case also against the reference
 * (fast_vs_ref). */
static void test_rnn_split(void) {
    rlx_cpu_rnn_min_slice(1);
    static const rnn_case cases[] = {
        { "LSTM", "bidirectional", 0, 4, 30, 24, 224, true, true, true, true, true, true, false, false, false, true, true,
          true, true },
        { "LSTM", "forward", 0, 7, 1, 5, 13, true, false, true, true, true, false, true, false, false, true, true, true,
          true },
        { "LSTM", "reverse", 1, 3, 7, 19, 257, true, true, true, false, false, false, false, false, true, true, true, true,
          true },
        { "LSTM", "bidirectional", 1, 5, 2, 9, 64, false, true, false, true, true, true, false, false, false, true, false,
          true, true },
        { "GRU", "bidirectional", 0, 4, 5, 11, 57, true, true, true, false, false, true, false, false, false, true, true,
          false, true },
        { "GRU", "forward", 1, 3, 1, 8, 224, true, false, true, false, false, false, false, true, false, true, true, false,
          true },
        { "GRU", "reverse", 0, 5, 13, 7, 40, true, true, false, false, false, false, false, true, true, true, true, false,
          true },
        { "RNN", "bidirectional", 1, 6, 13, 6, 40, true, true, true, false, false, true, false, false, true, true, true,
          false, true },
        { "RNN", "forward", 0, 3, 3, 4, 257, false, false, true, false, false, false, false, false, false, true, true,
          false, true },
        /* 12 rows and more: the input projection step by step, each slice
         * its columns of W^T, the X rows staged by the slices in turn */
        { "GRU", "bidirectional", 1, 5, 14, 9, 37, true, true, true, false, false, true, false, false, false, true, true,
          false, true },
        { "LSTM", "reverse", 0, 6, 13, 11, 29, true, true, true, true, true, false, true, false, true, true, true, true,
          true },
        { "LSTM", "bidirectional", 1, 3, 12, 40, 70, true, true, false, true, false, true, false, false, false, false,
          true, true, true },
        { "RNN", "reverse", 1, 4, 19, 5, 21, true, true, false, false, false, false, false, false, false, true, false,
          false, true },
    };
    /* the rule's batch groups, then 2 and 3 forced (as many as the
     * threads and the batch's tiles of 6 rows allow: batch 13 or 14 in 3,
     * 30 rows in 2 of 3 tiles and 2) */
    for (int groups = 0; groups <= 3; groups += groups ? 1 : 2) {
        rlx_cpu_rnn_groups(groups);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_rnn(&cases[i]);
    }
    rlx_cpu_rnn_groups(0);
    rlx_cpu_rnn_min_slice(0);
    printf("  RNN/GRU/LSTM split over %d threads: %zu cases, batch groups by rule, 2 and 3\n", rlx_parallel_threads(),
           sizeof cases / sizeof cases[0]);
}

/* ------------------------------------------------------------ row-wise ops */

static void test_softmax(void) {
    static const int64_t shapes[][3] = { { 70000, 8, 0 }, { 333, 1, 0 }, { 50, 3, 0 }, { 17, 9, 0 }, { 5, 31, 0 },
                                         { 4, 4096, 0 }, { 2, 32001, 0 }, { 3, 4, 5 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int log = 0; log < 2; log++)
            for (int ver = 0; ver < 2; ver++) {
                int rank = shapes[s][2] ? 3 : 2;
                rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, rank, shapes[s], -6, 6);
                if (s == 3) { /* -inf (masked), a NaN row, +inf */
                    float *px = x->data;
                    px[4] = -INFINITY, px[9 + 2] = NAN, px[18 + 5] = INFINITY;
                    for (int j = 0; j < 9; j++) px[27 + j] = -INFINITY;
                }
                node_attrs st = { .n = 0 };
                attr_int(&st, "axis", ver ? -1 : 1); /* version 11, axis 1: the 2-D view */
                rlx_node n = make_node(log ? "LogSoftmax" : "Softmax", ver ? 13 : 11, 1, 1, &st);
                const rlx_tensor *in[1] = { x };
                const int64_t *dims[1] = { shapes[s] };
                rlx_dtype dt[1] = { RLX_DTYPE_F32 };
                int ranks[1] = { rank };
                char what[128];
                snprintf(what, sizeof what, "%s-%d [%lld, %lld%s]", log ? "LogSoftmax" : "Softmax", ver ? 13 : 11,
                         (long long)shapes[s][0], (long long)shapes[s][1], rank == 3 ? ", 5" : "");
                fast_vs_ref(what, &n, in, 1, dt, ranks, dims, 4 * 0x1p-24, log ? 1e-6 : 1e-7);
                rlx_tensor_destroy(x);
            }
}

static void test_arg(void) {
    static const int64_t shapes[][2] = { { 70000, 8 }, { 100, 1 }, { 64, 3 }, { 9, 1000 }, { 3, 33 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = 0; mode < 4; mode++) {
            rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, shapes[s], -1, 1);
            float *px = x->data;
            size_t n = rlx_tensor_numel(x);
            for (size_t i = 0; i < n; i += 5) px[i] = (float)((int)(px[i] * 4)) / 4; /* ties */
            if (n > 40) px[3] = NAN, px[20] = NAN, px[25] = -NAN;
            /* NaN at a row's index 0 (the answer there), and a row of NaN */
            size_t len = (size_t)shapes[s][1], rows = (size_t)shapes[s][0];
            if (rows > 4) px[2 * len] = NAN, px[3 * len + len / 2] = NAN;
            if (rows > 4) for (size_t j = 0; j < len; j++) px[4 * len + j] = NAN;
            node_attrs st = { .n = 0 };
            attr_int(&st, "axis", 1);
            attr_int(&st, "keepdims", 0);
            attr_int(&st, "select_last_index", mode >> 1);
            rlx_node nd = make_node(mode & 1 ? "ArgMin" : "ArgMax", 13, 1, 1, &st);
            const rlx_tensor *in[1] = { x };
            const int64_t *dims[1] = { shapes[s] };
            rlx_dtype dt[1] = { RLX_DTYPE_I64 };
            int ranks[1] = { 1 };
            char what[128];
            snprintf(what, sizeof what, "%s select_last %d [%lld, %lld]", mode & 1 ? "ArgMin" : "ArgMax", mode >> 1,
                     (long long)shapes[s][0], (long long)shapes[s][1]);
            fast_vs_ref(what, &nd, in, 1, dt, ranks, dims, 0, 0);
            rlx_tensor_destroy(x);
        }
}

static void test_layernorm(void) {
    static const int64_t shapes[][2] = { { 70000, 8 }, { 100, 1 }, { 64, 3 }, { 9, 768 }, { 33, 13 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int v = 0; v < 3; v++) {
            int64_t len = shapes[s][1];
            rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, shapes[s], -3, 5); /* mean away from 0 */
            rlx_tensor *sc = test_tensor_random(RLX_DTYPE_F32, 1, &len, 0.5f, 1.5f);
            rlx_tensor *b = v != 1 ? test_tensor_random(RLX_DTYPE_F32, 1, &len, -1, 1) : NULL;
            node_attrs st = { .n = 0 };
            attr_int(&st, "axis", -1);
            attr_float(&st, "epsilon", v == 2 ? 1e-2f : 1e-5f);
            int n_out = v == 0 ? 3 : 1;
            rlx_node nd = make_node("LayerNormalization", 17, b ? 3 : 2, n_out, &st);
            const rlx_tensor *in[3] = { x, sc, b };
            int64_t md[2] = { shapes[s][0], 1 };
            const int64_t *dims[3] = { shapes[s], md, md };
            rlx_dtype dt[3] = { RLX_DTYPE_F32, RLX_DTYPE_F32, RLX_DTYPE_F32 };
            int ranks[3] = { 2, 2, 2 };
            char what[128];
            snprintf(what, sizeof what, "LayerNormalization [%lld, %lld] variant %d", (long long)shapes[s][0],
                     (long long)len, v);
            fast_vs_ref(what, &nd, in, n_out, dt, ranks, dims, 1e-5, 1e-5);
            rlx_tensor_destroy(x), rlx_tensor_destroy(sc), rlx_tensor_destroy(b);
        }
}

/* ------------------------------------------------------------ reductions */

static void test_reduce(void) {
    static const char *ops[7] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2",
                                  "ReduceL1" };
    /* [a, b, c]: reduce axes {1} and {0, 1}, {2}, {1, 2} */
    static const int64_t shapes[][3] = { { 3, 100000, 1 }, { 2, 70001, 3 }, { 4096, 7, 1 }, { 5, 33, 300 }, { 1, 1, 17 } };
    static int64_t axsets[4][2] = { { 1, 1 }, { 0, 1 }, { 2, 2 }, { 1, 2 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int o = 0; o < 7; o++)
            for (int a = 0; a < 4; a++) {
                rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, shapes[s], -2, 3);
                float *px = x->data;
                if (o >= 2 && o <= 3 && a == 2 && s == 3) px[40] = NAN, px[41] = -0.0f; /* first NaN wins */
                node_attrs st = { .n = 0 };
                int64_t *ax = axsets[a];
                size_t nax = ax[0] == ax[1] ? 1 : 2;
                attr_ints(&st, "axes", nax, ax);
                attr_int(&st, "keepdims", 1);
                rlx_node nd = make_node(ops[o], 11, 1, 1, &st); /* axes as an attribute */
                int64_t yd[3] = { shapes[s][0], shapes[s][1], shapes[s][2] };
                for (size_t i = 0; i < nax; i++) yd[ax[i]] = 1;
                const rlx_tensor *in[1] = { x };
                const int64_t *dims[1] = { yd };
                rlx_dtype dt[1] = { RLX_DTYPE_F32 };
                int ranks[1] = { 3 };
                char what[128];
                snprintf(what, sizeof what, "%s [%lld, %lld, %lld] axes set %d", ops[o], (long long)shapes[s][0],
                         (long long)shapes[s][1], (long long)shapes[s][2], a);
                bool ext = o == 2 || o == 3;
                fast_vs_ref(what, &nd, in, 1, dt, ranks, dims, ext ? 0 : 1e-6, 0);
                rlx_tensor_destroy(x);
            }
}

int main(void) {
    test_seed_from_env();
    printf("threads: %d, AVX2 + FMA: %s\n", rlx_parallel_threads(), rlx_cpu_has_avx2() ? "yes" : "no");
    test_vmath();
    /* the recurrence has a kernel per instruction set: each one this CPU runs */
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (int isa = RLX_CPU_ISA_C; isa <= (int)top; isa++) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        printf("  instruction set %d of %d:\n", isa, (int)top);
        test_rnn();
        test_rnn_split();
    }
    rlx_cpu_isa_cap(top);
    test_softmax();
    test_arg();
    test_layernorm();
    test_reduce();
    TEST_MAIN_END();
}
