/* cpu.release_packed (issue 13): after the CPU backend packs a plan's own
 * constant weights (here folded: w = Mul(w_raw, 1.5)), it frees their plain
 * copy where every step reads them through the pack alone. The outputs
 * must be the bits of a session that keeps both copies (cpu.release_packed=0),
 * on a second run, at other input shapes (a new plan, folded again from
 * the model's weights), and where the Winograd path declines an input (it
 * then reads the plain weights, which it must still have: with
 * rlx_nn_wino_force(2) w2's Conv takes it).
 *
 * The model, x [N, 16, H, W] with N, H, W symbolic:
 *   w1 [32, 16, 1, 1] feeds a 1x1 Conv (packed) and, as its input 1,
 *      Mul(mean(x), w1), a consumer that reads it plain at run time: w1
 *      must stay;
 *   w2 [32, 32, 3, 3] feeds a 3x3 Conv (implicit GEMM or Winograd);
 *   w3 [32, 32, 1, 1] feeds two 1x1 Convs (both packed): freed; w4, of
 *      w3's shape, a third (the model weights' restore reuses w3's probe);
 *   fcw [32, 10] is the B of a Gemm (packed), freed; fca [32, 10] is the B
 *      of a MatMul and also another MatMul's A (MatMul(fca, z), read
 *      plain): stays.
 * Then again with the AVX2 kernel's packs where the CPU runs it.
 * A plain copy freed that a kernel still reads would be a NULL read (a
 * crash); a kept one that should have gone fails the checks on the
 * program's constants. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "plan/program.h"
#include "runtime/model.h"
#include "runtime/session.h"

static void add_folded(rlx_model *m, const char *name, int rank, const int64_t *dims) {
    char raw[32];
    snprintf(raw, sizeof raw, "%s_raw", name);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, rank, dims, -1, 1);
    CHECK_OK(rlx_model_add_initializer(m, raw, w));
    rlx_tensor_destroy(w);
    CHECK_OK(rlx_model_add_node(m, "Mul", NULL, 2, (const char *[]){ raw, "k15" }, 1, (const char *[]){ name }, 0,
                                NULL));
}

/* direct: the weights are the model's initializers themselves (no Mul:
 * the plan reads the model's tensors), else folded from w_raw * 1.5. */
static void add_weight(rlx_model *m, bool direct, const char *name, int rank, const int64_t *dims) {
    if (!direct) {
        add_folded(m, name, rank, dims);
        return;
    }
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, rank, dims, -1, 1);
    CHECK_OK(rlx_model_add_initializer(m, name, w));
    rlx_tensor_destroy(w);
}

static rlx_model *model(bool direct) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, (const int64_t[]){ -1, 16, -1, -1 },
                                 (const char *const[]){ "n", NULL, "h", "w" }));
    rlx_tensor *k = test_tensor_f32(0, NULL, (const float[]){ 1.5f });
    CHECK_OK(rlx_model_add_initializer(m, "k15", k));
    rlx_tensor_destroy(k);
    add_weight(m, direct, "w1", 4, (const int64_t[]){ 32, 16, 1, 1 });
    add_weight(m, direct, "w2", 4, (const int64_t[]){ 32, 32, 3, 3 });
    add_weight(m, direct, "w3", 4, (const int64_t[]){ 32, 32, 1, 1 });
    add_weight(m, direct, "w4", 4, (const int64_t[]){ 32, 32, 1, 1 });
    add_weight(m, direct, "fcw", 2, (const int64_t[]){ 32, 10 });
    add_weight(m, direct, "fca", 2, (const int64_t[]){ 32, 10 });
    int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr pad = RLX_ATTR_IS("pads", 4, pads);
#define NODE(op, nin, ins, outn, na, at) \
    CHECK_OK(rlx_model_add_node(m, op, NULL, nin, (const char *[])ins, 1, (const char *[]){ outn }, na, at))
#define L(...) { __VA_ARGS__ }
    NODE("Conv", 2, L("x", "w1"), "c1", 0, NULL);
    NODE("Relu", 1, L("c1"), "r1", 0, NULL);
    NODE("Conv", 2, L("r1", "w2"), "c2", 1, &pad);
    NODE("Relu", 1, L("c2"), "r2", 0, NULL);
    NODE("Conv", 2, L("r2", "w3"), "c3", 0, NULL);
    NODE("Conv", 2, L("r1", "w3"), "c4", 0, NULL);
    NODE("Conv", 2, L("r1", "w4"), "c5", 0, NULL);
    NODE("Add", 2, L("c3", "c4"), "y0", 0, NULL);
    NODE("Add", 2, L("y0", "c5"), "y", 0, NULL);
    NODE("GlobalAveragePool", 1, L("y"), "gap", 0, NULL);
    NODE("Flatten", 1, L("gap"), "feat", 0, NULL);
    NODE("Gemm", 2, L("feat", "fcw"), "logits", 0, NULL);
    NODE("MatMul", 2, L("feat", "fca"), "mm", 0, NULL);
    NODE("Add", 2, L("logits", "mm"), "out", 0, NULL);
    /* the plain readers: mean(x) times w1, fca [32, 10] x out^T [10, N] */
    NODE("ReduceMean", 1, L("x"), "xm", 0, NULL);
    NODE("Mul", 2, L("xm", "w1"), "w1x", 0, NULL);
    NODE("Transpose", 1, L("out"), "outt", 0, NULL);
    NODE("MatMul", 2, L("fca", "outt"), "fo", 0, NULL);
#undef NODE
#undef L
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "out"));
    CHECK_OK(rlx_model_add_output(m, "w1x"));
    CHECK_OK(rlx_model_add_output(m, "fo"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* A CPU session of m with cpu.release_packed = release (and option
 * key = val where key is not NULL). */
static rlx_session *session_with(const rlx_model *m, const char *release, const char *key, const char *val) {
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "cpu.release_packed", release));
    if (key) CHECK_OK(rlx_options_set(o, key, val));
    rlx_session_options so = { .device = "cpu" };
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_options_destroy(o);
    return s;
}

static rlx_session *session(const rlx_model *m, const char *release) { return session_with(m, release, NULL, NULL); }

#define N_OUT 4

/* Runs s on x; the outputs in y[N_OUT] (NULL on failure). */
static void run(rlx_session *s, const rlx_tensor *x, rlx_tensor **y) {
    memset(y, 0, N_OUT * sizeof *y);
    rlx_tensor **out = NULL;
    size_t n = 0;
    const char *names[1] = { "x" };
    CHECK_OK(rlx_session_run(s, 1, names, &x, &out, &n));
    CHECK(n == N_OUT);
    for (size_t i = 0; i < n && i < N_OUT; i++) y[i] = out[i];
    free(out);
}

static void check_same(const char *what, rlx_tensor **a, rlx_tensor **b) {
    for (int i = 0; i < N_OUT; i++) {
        bool same = a[i] && b[i] && a[i]->nbytes == b[i]->nbytes && memcmp(a[i]->data, b[i]->data, a[i]->nbytes) == 0;
        CHECK_MSG(same, "%s: output %d differs with the plain weights released", what, i);
    }
}

static void drop(rlx_tensor **y) {
    for (int i = 0; i < N_OUT; i++) rlx_tensor_destroy(y[i]);
}

/* Whether the last plan of s holds constant `name` with its plain data;
 * -1 when it has no such constant. */
static int has_plain(const rlx_session *s, const char *name) {
    const rlx_program *p = rlx_session_last_program(s);
    int v = p ? rlx_graph_find(p->g, name) : -1;
    if (v < 0 || !p->g->values[v].konst) return -1;
    return p->g->values[v].konst->data != NULL;
}

/* wino: rlx_nn_wino_force's path for w2's Conv (2: Winograd F(2x2), whose
 * weights keep their plain copy for the inputs it declines; 0: by shape,
 * the implicit GEMM at these sizes, freed). */
static void test_release(const rlx_model *m, int wino) {
    rlx_nn_wino_force(wino);
    size_t wino_runs = rlx_nn_wino_runs();
    rlx_session *rel = session(m, "1"), *keep = session(m, "0");
    if (!rel || !keep) goto done;
    const int64_t shapes[3][4] = { { 1, 16, 12, 12 }, { 2, 16, 9, 7 }, { 1, 16, 12, 12 } };
    for (int k = 0; k < 3; k++) {
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, shapes[k], -1, 1);
        if (k == 2) /* past any Winograd limit: that path declines */
            for (int c = 0; c < 16; c++) ((float *)x->data)[c * 144 + 37] = c % 2 ? 3e30f : -3e30f;
        rlx_tensor *a[N_OUT], *a2[N_OUT], *b[N_OUT];
        run(rel, x, a);
        run(rel, x, a2); /* a second run of the same plan */
        run(keep, x, b);
        char what[64];
        snprintf(what, sizeof what, "Winograd %d, shape %d, run 1", wino, k);
        check_same(what, a, b);
        snprintf(what, sizeof what, "Winograd %d, shape %d, run 2", wino, k);
        check_same(what, a2, b);
        /* freed: the weights only packed steps read; kept: those read plain */
        CHECK_MSG(has_plain(rel, "w3") == 0, "shape %d: w3 (two packed Convs) kept its plain copy", k);
        CHECK_MSG(has_plain(rel, "fcw") == 0, "shape %d: fcw (a Gemm's packed B) kept its plain copy", k);
        CHECK_MSG(has_plain(rel, "w1") == 1, "shape %d: w1 (read plain by a Mul) lost its plain copy", k);
        CHECK_MSG(has_plain(rel, "fca") == 1, "shape %d: fca (read plain by a MatMul's A) lost its plain copy", k);
        bool wino_ran = rlx_nn_wino_runs() > wino_runs;
        CHECK_MSG(has_plain(rel, "w2") == wino_ran, "shape %d: w2 on %s, plain copy %d", k,
                  wino_ran ? "Winograd" : "the implicit GEMM", has_plain(rel, "w2"));
        CHECK_MSG(has_plain(keep, "w3") == 1 && has_plain(keep, "fcw") == 1,
                  "shape %d: cpu.release_packed=0 freed a plain copy", k);
        drop(a), drop(a2), drop(b);
        rlx_tensor_destroy(x);
    }
    /* a path switched after the packing (a test hook) would read the freed
     * weights: the run refuses, and runs again once it is back */
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, shapes[0], -1, 1), *y[N_OUT];
    rlx_tensor **out = NULL;
    size_t n = 0;
    const char *names[1] = { "x" };
    rlx_nn_pwt_force(1);
    CHECK_FAILS(rlx_session_run(rel, 1, names, (const rlx_tensor *const *)&x, &out, &n), RLX_ERR_INTERNAL,
                "freed their plain copy");
    rlx_nn_pwt_force(0);
    run(rel, x, y);
    CHECK(y[0] != NULL);
    drop(y);
    rlx_tensor_destroy(x);
done:
    rlx_session_destroy(rel);
    rlx_session_destroy(keep);
    rlx_nn_wino_force(0);
}

/* Runs s on x into outputs shaped like ref's, first poisoned with NaN (an
 * element no kernel writes stays NaN); y[N_OUT] owned by the caller. */
static void run_poisoned(rlx_session *s, const rlx_tensor *x, rlx_tensor *const *ref, rlx_tensor **y) {
    bool all = true;
    for (int i = 0; i < N_OUT; i++) {
        y[i] = ref[i] ? test_tensor(ref[i]->dtype, ref[i]->rank, ref[i]->dims) : NULL;
        if (!y[i]) {
            all = false;
            continue;
        }
        float *f = y[i]->data;
        for (size_t e = 0; e < y[i]->nbytes / sizeof *f; e++) f[e] = NAN;
    }
    const char *names[1] = { "x" };
    if (all) CHECK_OK(rlx_session_run_into(s, 1, names, &x, y));
}

/* Whether weight `name` of model m holds data, and the bits of ref's. */
static bool same_weight(const rlx_model *m, const rlx_model *ref, const char *name) {
    int v = rlx_graph_find(m->g, name), r = rlx_graph_find(ref->g, name);
    if (v < 0 || r < 0) return false;
    const rlx_tensor *a = m->g->values[v].konst, *b = ref->g->values[r].konst;
    return a && b && a->data && b->data && a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* cpu.release_packed on the model's own weights (direct initializers):
 * a session that is the model's only holder (the caller destroyed its
 * handle) frees the plain copy of those read through packs alone, as the
 * plan's own ones; the outputs are those of a session that keeps both
 * copies, at a second signature too (compiled after the release: the
 * weights come back, unpacked from the first plan's packs, bit for bit)
 * and back at the first; a session whose model the caller still holds
 * frees none. */
static void test_model_release(int wino) {
    rlx_nn_wino_force(wino);
    size_t wino_runs = rlx_nn_wino_runs();
    const uint64_t seed = 0x5eed0u + (uint64_t)wino;
    rlx_model *mr, *mk, *mh, *md; /* the same weights (same seed) */
    test_seed(seed), mr = model(true);
    test_seed(seed), mk = model(true);
    test_seed(seed), mh = model(true);
    test_seed(seed), md = model(true);
    rlx_session *rel = NULL, *keep = NULL, *held = NULL, *def = NULL;
    bool ours = true; /* mr and md still the test's */
    if (!mr || !mk || !mh || !md) goto done;
    rel = session(mr, "1"), keep = session(mk, "0"), held = session(mh, "1");
    def = session_with(md, "1", "plan.defer_backend", "1");
    if (!rel || !keep || !held || !def) goto done;
    /* rel and def are their models' only holders now (mr, md stay readable
     * here through the sessions' references: internal checks only) */
    rlx_model_destroy(mr);
    rlx_model_destroy(md);
    ours = false;
    const int64_t shapes[3][4] = { { 1, 16, 12, 12 }, { 2, 16, 9, 7 }, { 1, 16, 12, 12 } };
    for (int k = 0; k < 3; k++) {
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, shapes[k], -1, 1);
        if (k == 2)
            for (int c = 0; c < 16; c++) ((float *)x->data)[c * 144 + 37] = c % 2 ? 3e30f : -3e30f;
        rlx_tensor *b[N_OUT], *a[N_OUT], *a2[N_OUT], *h[N_OUT];
        run(keep, x, b);
        run_poisoned(rel, x, b, a);
        run_poisoned(rel, x, b, a2);
        run_poisoned(held, x, b, h);
        char what[80];
        snprintf(what, sizeof what, "model weights, Winograd %d, shape %d, run 1", wino, k);
        check_same(what, a, b);
        snprintf(what, sizeof what, "model weights, Winograd %d, shape %d, run 2", wino, k);
        check_same(what, a2, b);
        snprintf(what, sizeof what, "model weights held, Winograd %d, shape %d", wino, k);
        check_same(what, h, b);
        if (k == 1) { /* the second signature, against a session that never ran another */
            rlx_session *fresh = session(mk, "1");
            rlx_tensor *f[N_OUT];
            if (fresh) run(fresh, x, f), check_same("model weights, a fresh session", a, f), drop(f);
            rlx_session_destroy(fresh);
        }
        CHECK_MSG(has_plain(rel, "w3") == 0, "shape %d: model weight w3 (two packed Convs) kept its plain copy", k);
        CHECK_MSG(has_plain(rel, "fcw") == 0, "shape %d: model weight fcw (a Gemm's packed B) kept its plain copy", k);
        CHECK_MSG(has_plain(rel, "w4") == 0, "shape %d: model weight w4 (a packed Conv) kept its plain copy", k);
        CHECK_MSG(has_plain(rel, "w1") == 1, "shape %d: model weight w1 (read plain by a Mul) lost its plain copy", k);
        CHECK_MSG(has_plain(rel, "fca") == 1, "shape %d: model weight fca (a MatMul's A) lost its plain copy", k);
        bool wino_ran = rlx_nn_wino_runs() > wino_runs;
        CHECK_MSG(has_plain(rel, "w2") == wino_ran, "shape %d: model weight w2 on %s, plain copy %d", k,
                  wino_ran ? "Winograd" : "the implicit GEMM", has_plain(rel, "w2"));
        /* the plan's tensors are the model's: freed there */
        int v = rlx_graph_find(mr->g, "w3");
        CHECK_MSG(v >= 0 && mr->g->values[v].konst && !mr->g->values[v].konst->data,
                  "shape %d: the model's own w3 still has its data", k);
        const char *all[6] = { "w1", "w2", "w3", "w4", "fcw", "fca" };
        for (int i = 0; i < 6; i++) {
            CHECK_MSG(has_plain(held, all[i]) == 1, "shape %d: %s freed while the caller holds the model", k, all[i]);
            CHECK_MSG(same_weight(mh, mk, all[i]), "shape %d: held model's %s changed", k, all[i]);
        }
        drop(a), drop(a2), drop(h), drop(b);
        rlx_tensor_destroy(x);
    }
    /* the weights given back before a second plan's passes are the
     * original bits (def: its backend compile waits for the first run) */
    rlx_tensor *xa = test_tensor_random(RLX_DTYPE_F32, 4, shapes[0], -1, 1);
    rlx_tensor *xb = test_tensor_random(RLX_DTYPE_F32, 4, shapes[1], -1, 1);
    rlx_tensor *y[N_OUT], *b[N_OUT];
    const char *names[1] = { "x" };
    run(def, xa, y);
    drop(y);
    CHECK_MSG(!same_weight(md, mk, "w3") && !same_weight(md, mk, "fcw"), "the first plan freed no model weight");
    CHECK_OK(rlx_session_prepare(def, 1, names, (const rlx_tensor *const *)&xb));
    const char *packed[4] = { "w3", "w4", "fcw", "w2" };
    for (int i = 0; i < 4; i++)
        CHECK_MSG(same_weight(md, mk, packed[i]), "model weight %s not given back bit for bit", packed[i]);
    run(keep, xb, b);
    run_poisoned(def, xb, b, y);
    check_same("model weights, a second signature after a deferred compile", y, b);
    drop(y), drop(b);
    rlx_tensor_destroy(xa);
    rlx_tensor_destroy(xb);
done:
    rlx_session_destroy(rel);
    rlx_session_destroy(keep);
    rlx_session_destroy(held);
    rlx_session_destroy(def);
    if (ours) rlx_model_destroy(mr), rlx_model_destroy(md);
    rlx_model_destroy(mk);
    rlx_model_destroy(mh);
    rlx_nn_wino_force(0);
}

int main(void) {
    test_seed_from_env();
    rlx_model *m = model(false);
    if (m) test_release(m, 0);
    if (m) test_release(m, 2);
    test_model_release(0);
    test_model_release(2);
    /* the AVX2 kernel's packs (6-row panels; no channels-in-lanes path),
     * where this CPU runs it */
    rlx_cpu_sgemm_kernel was = rlx_cpu_sgemm_kernel_get();
    if (m && was == RLX_CPU_SGEMM_AVX512 && rlx_cpu_sgemm_kernel_set(RLX_CPU_SGEMM_AVX2)) {
        test_release(m, 0);
        test_model_release(0);
        rlx_cpu_sgemm_kernel_set(was);
    }
    rlx_model_destroy(m);
    TEST_MAIN_END();
}
