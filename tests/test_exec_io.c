/* Steady CPU runs read the caller's inputs and write the caller's outputs in
 * place (issue 13; runtime/exec.c, bind_io) with the results of the old
 * copies. One model holds every aliasing case:
 *
 *   x [n, 64] --Sigmoid--> s (output, also read by Add)
 *   a = Add(s, x)          (output)          f = Flatten(a) (output: a view of an output)
 *   x itself               (output: a graph input that is a graph output)
 *   xi = Identity(x)       (output: a view of an input)
 *   r = Relu(Flatten(x))   (output: an op reading a view of an input)
 *   s again                (the same value twice among the outputs)
 *
 * Each run is compared byte for byte with the run through the copies
 * (input and outputs at addresses that are not 16-byte aligned, which the
 * runtime does not bind) and with a double reference (1e-6 of max(1, |value|)), and
 * the input bytes are checked unchanged after every run. Cases: fresh
 * outputs (rlx_session_run), given outputs (run_into, poisoned), an output
 * given the input's own buffer and two outputs given one buffer (against
 * the same sharing through the copies), the input
 * freed and another given, two batch sizes (a plan each), an output shaped
 * only at run time (NonZero: an eager plan), and on the GPU (when there is
 * one) a plan whose Sigmoid falls back to the CPU. test_share: every way
 * outputs of the four sources (an input passed through, a constant, a CPU
 * step's, a GPU read-back) can share buffers with each other and with the
 * input, on the CPU and the GPU, against the documented order of writes.
 * test_bad_tensors: NULL tensors and data, wrong sizes (the messages), and
 * zero-size tensors with NULL data. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 64, N_OUT = 7 };
static const char *k_outs[N_OUT] = { "s", "a", "f", "x", "xi", "r", "s" };

static rlx_model *alias_model(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ -1, W }, (const char *[]){ "n", NULL }));
#define NODE(op, name, in0, in1, out)                                                                              \
    CHECK_OK(rlx_model_add_node(m, op, name, (in1) ? 2 : 1, (const char *[]){ in0, in1 }, 1, (const char *[]){ out }, \
                                0, NULL))
    NODE("Sigmoid", "sig", "x", NULL, "s");
    NODE("Add", "add", "s", "x", "a");
    NODE("Flatten", "flat_a", "a", NULL, "f");
    NODE("Identity", "id", "x", NULL, "xi");
    NODE("Flatten", "flat_x", "x", NULL, "fx");
    NODE("Relu", "relu", "fx", NULL, "r");
#undef NODE
    for (int i = 0; i < N_OUT; i++) CHECK_OK(rlx_model_add_output(m, k_outs[i]));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* A tensor header over caller memory (data may be misaligned on purpose). */
static rlx_tensor header(int64_t n, void *data) {
    rlx_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = RLX_DTYPE_F32;
    t.rank = 2;
    t.dims[0] = n;
    t.dims[1] = W;
    t.data = data;
    t.nbytes = (size_t)n * W * sizeof(float);
    return t;
}

/* 16-byte aligned when shift is 0, else `shift` bytes past an aligned address. */
static float *buffer(size_t floats, size_t shift, void **base) {
    unsigned char *b = NULL;
    if (posix_memalign((void **)&b, 64, floats * sizeof(float) + 64)) return NULL;
    *base = b;
    return (float *)(void *)(b + shift);
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Output k of the model for input x (double). */
static double expect(int k, const float *x, size_t i) {
    double v = x[i];
    switch (k) {
    case 0: case 6: return sigm(v);
    case 1: case 2: return sigm(v) + v;
    case 3: case 4: return v;
    default: return v > 0 ? v : 0;
    }
}

static void check_values(const char *what, float *const *outs, const float *x, size_t numel) {
    for (int k = 0; k < N_OUT; k++) {
        double worst = 0;
        for (size_t i = 0; i < numel; i++) {
            double e = expect(k, x, i), d = fabs(outs[k][i] - e) / (fabs(e) > 1 ? fabs(e) : 1);
            if (!(d <= worst)) worst = d; /* NaN too */
        }
        CHECK_MSG(worst <= 1e-6, "%s: output %d ('%s') off by %g (of max(1, |value|))", what, k, k_outs[k], worst);
    }
}

/* run_into with output buffers at `shift`; returns the outputs (malloc'd
 * copies) or NULL. */
static float **run_into(rlx_session *s, const rlx_tensor *in, int64_t n, size_t shift) {
    size_t numel = (size_t)n * W;
    void *bases[N_OUT] = { 0 };
    rlx_tensor hdr[N_OUT], *outs[N_OUT];
    for (int k = 0; k < N_OUT; k++) {
        float *d = buffer(numel, shift, &bases[k]);
        for (size_t i = 0; i < numel; i++) d[i] = NAN; /* poison */
        hdr[k] = header(n, d);
        outs[k] = &hdr[k];
    }
    const char *names[] = { "x" };
    bool ok = rlx_session_run_into(s, 1, names, &in, outs) == RLX_OK;
    CHECK_MSG(ok, "run_into: %s", rlx_last_error());
    float **res = calloc(N_OUT, sizeof *res);
    for (int k = 0; k < N_OUT; k++) {
        res[k] = malloc(numel * sizeof(float));
        memcpy(res[k], hdr[k].data, numel * sizeof(float));
        free(bases[k]);
    }
    return res;
}

static float **run_fresh(rlx_session *s, const rlx_tensor *in) {
    rlx_tensor **outs = NULL;
    size_t n = 0;
    const char *names[] = { "x" };
    bool ok = rlx_session_run(s, 1, names, &in, &outs, &n) == RLX_OK;
    CHECK_MSG(ok && n == N_OUT, "run: %s", rlx_last_error());
    if (!ok) return NULL;
    float **res = calloc(N_OUT, sizeof *res);
    for (int k = 0; k < N_OUT; k++) {
        res[k] = malloc(outs[k]->nbytes);
        memcpy(res[k], outs[k]->data, outs[k]->nbytes);
        rlx_tensor_destroy(outs[k]);
    }
    free(outs);
    return res;
}

static void free_outs(float **o) {
    for (int k = 0; o && k < N_OUT; k++) free(o[k]);
    free(o);
}

static void same_bytes(const char *what, float **got, float **ref, size_t numel) {
    for (int k = 0; got && ref && k < N_OUT; k++)
        CHECK_MSG(memcmp(got[k], ref[k], numel * sizeof(float)) == 0,
                  "%s: output %d ('%s') differs from the copies' run", what, k, k_outs[k]);
}

/* One run_into with shared buffers, every buffer `shift` bytes past a
 * 64-byte boundary (4: nothing is bound, the old copies). mode 0: output
 * 's' is given the input's buffer (holding x0); mode 1: outputs 'a' and 'r'
 * are given one buffer. Returns what each output's buffer holds after the
 * run (malloc'd copies). */
static float **shared_case(rlx_session *s, const float *x0, int64_t n, size_t shift, int mode) {
    size_t numel = (size_t)n * W, nb = numel * sizeof(float);
    void *bases[N_OUT + 1] = { 0 };
    float *x = buffer(numel, shift, &bases[N_OUT]);
    memcpy(x, x0, nb);
    rlx_tensor in = header(n, x), hdr[N_OUT], *outs[N_OUT];
    for (int k = 0; k < N_OUT; k++) {
        float *d = buffer(numel, shift, &bases[k]);
        for (size_t i = 0; i < numel; i++) d[i] = NAN;
        hdr[k] = header(n, d);
        outs[k] = &hdr[k];
    }
    if (mode == 0) hdr[0].data = x;
    else hdr[5].data = hdr[1].data;
    const rlx_tensor *inp = &in;
    float **res = NULL;
    if (rlx_session_run_into(s, 1, (const char *[]){ "x" }, &inp, outs) == RLX_OK) {
        res = calloc(N_OUT, sizeof *res);
        for (int k = 0; k < N_OUT; k++) {
            res[k] = malloc(nb);
            memcpy(res[k], hdr[k].data, nb);
        }
    } else {
        CHECK_MSG(0, "shared buffers (mode %d): %s", mode, rlx_last_error());
    }
    for (int k = 0; k <= N_OUT; k++) free(bases[k]);
    return res;
}

static void fill(float *x, size_t numel) {
    for (size_t i = 0; i < numel; i++) x[i] = test_rand_uniform(-4, 4);
}

static void test_batch(rlx_session *s, int64_t n, const char *dev) {
    size_t numel = (size_t)n * W, nb = numel * sizeof(float);
    char what[96];
    void *b_al = NULL, *b_mis = NULL;
    float *x = buffer(numel, 0, &b_al), *xm = buffer(numel, 4, &b_mis), *keep = malloc(nb);
    fill(x, numel);
    memcpy(xm, x, nb);
    memcpy(keep, x, nb);
    rlx_tensor in = header(n, x), in_mis = header(n, xm);

    /* the old behaviour: nothing bound (input and outputs misaligned) */
    float **ref = run_into(s, &in_mis, n, 4);
    snprintf(what, sizeof what, "%s n=%lld copies", dev, (long long)n);
    if (ref) check_values(what, ref, keep, numel);
    CHECK_MSG(memcmp(xm, keep, nb) == 0, "%s: the input changed", what);

    struct { const char *name; float **got; } runs[4];
    runs[0].name = "fresh outputs";
    runs[0].got = run_fresh(s, &in);
    runs[1].name = "given outputs";
    runs[1].got = run_into(s, &in, n, 0);
    runs[2].name = "given outputs, misaligned input";
    runs[2].got = run_into(s, &in_mis, n, 0);
    runs[3].name = "fresh outputs, again";
    runs[3].got = run_fresh(s, &in);
    for (int r = 0; r < 4; r++) {
        snprintf(what, sizeof what, "%s n=%lld %s", dev, (long long)n, runs[r].name);
        same_bytes(what, runs[r].got, ref, numel);
        free_outs(runs[r].got);
    }
    CHECK_MSG(memcmp(x, keep, nb) == 0 && memcmp(xm, keep, nb) == 0, "%s n=%lld: an input changed", dev, (long long)n);

    /* shared buffers, each against the same run through the copies (every
     * buffer misaligned): 's' given the input's own buffer, and 'a' and 'r'
     * given one buffer */
    for (int mode = 0; mode < 2; mode++) {
        float **in_place = shared_case(s, keep, n, 0, mode), **copies = shared_case(s, keep, n, 4, mode);
        snprintf(what, sizeof what, "%s n=%lld %s", dev, (long long)n,
                 mode ? "'a' and 'r' in one buffer" : "'s' in the input's buffer");
        same_bytes(what, in_place, copies, numel);
        /* on every device the outputs land in graph-output order from the
         * inputs as they were at the call (rlx.h): 'x' and 'xi' (the input
         * passed through) hold x although 's' went into the input's buffer
         * before them, and the buffer of 'a' and 'r' holds 'r' */
        for (int k = 0; k < N_OUT && ref && in_place; k++) {
            int want = mode == 0 ? k : (k == 1 ? 5 : k);
            CHECK_MSG(memcmp(in_place[k], ref[want], nb) == 0, "%s: output %d", what, k);
        }
        free_outs(in_place);
        free_outs(copies);
    }
    CHECK(memcmp(x, keep, nb) == 0);
    /* the caller frees its input and gives another: nothing of the old one is read */
    free(b_al);
    x = buffer(numel, 0, &b_al);
    fill(x, numel);
    memcpy(keep, x, nb);
    in = header(n, x);
    float **again = run_into(s, &in, n, 0);
    snprintf(what, sizeof what, "%s n=%lld after the input was freed", dev, (long long)n);
    if (again) check_values(what, again, keep, numel);
    CHECK_MSG(memcmp(x, keep, nb) == 0, "%s: the input changed", what);
    free_outs(again);
    free_outs(ref);
    free(b_al);
    free(b_mis);
    free(keep);
}

/* An output whose shape is known only at run time (NonZero: the plan runs
 * eagerly, with its own outputs): the input is read, not written, and the
 * outputs are right beside a Sigmoid of the same input. */
static void test_runtime_shape(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, (const int64_t[]){ 8 }, NULL));
    CHECK_OK(rlx_model_add_node(m, "NonZero", "nz", 1, (const char *[]){ "x" }, 1, (const char *[]){ "i" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Sigmoid", "sig", 1, (const char *[]){ "x" }, 1, (const char *[]){ "s" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "i"));
    CHECK_OK(rlx_model_add_output(m, "s"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    if (m) CHECK_OK(rlx_session_create(m, NULL, &s));
    const float xv[8] = { 0.5f, 0, -1.25f, 0, 0, 3, 0, -0.125f };
    const int64_t want[4] = { 0, 2, 5, 7 };
    rlx_tensor *x = test_tensor_f32(1, (const int64_t[]){ 8 }, xv);
    rlx_tensor **outs = NULL;
    size_t n = 0;
    if (s && x && rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *const *)&x, &outs, &n) == RLX_OK) {
        CHECK(n == 2 && outs[0]->rank == 2 && outs[0]->dims[0] == 1 && outs[0]->dims[1] == 4 &&
              memcmp(outs[0]->data, want, sizeof want) == 0);
        for (int i = 0; i < 8 && n == 2; i++)
            CHECK(fabs(((const float *)outs[1]->data)[i] - sigm(xv[i])) <= 1e-6);
        CHECK_MSG(memcmp(x->data, xv, sizeof xv) == 0, "NonZero model: the input changed");
        for (size_t i = 0; i < n; i++) rlx_tensor_destroy(outs[i]);
        free(outs);
    } else {
        CHECK_MSG(0, "NonZero model: %s", rlx_last_error());
    }
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* ---- every sharing of buffers among outputs of the four sources ----
 * Model outputs (in `order`): x (a graph input passed through), c
 * (Identity of a constant), s = Sigmoid(x) and r = Relu(x) (computed:
 * read back from the GPU, or a CPU step's). Each output gets one of four
 * places in one arena: its own buffer, the input's buffer X, a buffer B
 * shared with whichever other output picks it, or XH, 16 floats into X
 * (a partial overlap). Expected: the arena as if each output's value (from
 * the inputs as they were at the call, values from a run with separate
 * buffers) were written in graph-output order. */
enum { SH_N = 64, SH_OUT = 4, SH_PLACES = 4 };

static rlx_model *share_model(const char *const *order) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, (const int64_t[]){ SH_N }, NULL));
    float cv[SH_N];
    for (int i = 0; i < SH_N; i++) cv[i] = 1000.0f + (float)i;
    rlx_tensor c = { .dtype = RLX_DTYPE_F32, .rank = 1, .dims = { SH_N }, .data = cv, .nbytes = sizeof cv };
    CHECK_OK(rlx_model_add_initializer(m, "k", &c));
    CHECK_OK(rlx_model_add_node(m, "Identity", "id_k", 1, (const char *[]){ "k" }, 1, (const char *[]){ "c" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Sigmoid", "sig", 1, (const char *[]){ "x" }, 1, (const char *[]){ "s" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "x" }, 1, (const char *[]){ "r" }, 0, NULL));
    for (int i = 0; i < SH_OUT; i++) CHECK_OK(rlx_model_add_output(m, order[i]));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* Runs every assignment of places (4^4) with the arena `shift` bytes past a
 * 64-byte boundary; returns the number of mismatching assignments. */
static int share_all(rlx_session *s, const char *what, size_t shift) {
    enum { X_AT = 0, XH_AT = 16, B_AT = 2 * SH_N, OWN_AT = 3 * SH_N, TOTAL = OWN_AT + SH_OUT * SH_N };
    float x0[SH_N], *vals[SH_OUT] = { 0 };
    for (int i = 0; i < SH_N; i++) x0[i] = (float)test_rand_uniform(-4, 4);
    rlx_tensor in = { .dtype = RLX_DTYPE_F32, .rank = 1, .dims = { SH_N }, .data = x0, .nbytes = sizeof x0 };
    const rlx_tensor *inp = &in;
    rlx_tensor **ref = NULL;
    size_t n_ref = 0;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, &inp, &ref, &n_ref));
    if (!ref || n_ref != SH_OUT) return 1;
    for (int k = 0; k < SH_OUT; k++) vals[k] = ref[k]->data;
    unsigned char *base = malloc(TOTAL * sizeof(float) + 64 + shift);
    float *arena = (float *)(void *)(base + ((64 - (uintptr_t)base % 64) % 64) + shift);
    float want[TOTAL];
    int bad = 0;
    for (int code = 0; code < 256; code++) {
        const int at[SH_PLACES] = { X_AT, XH_AT, B_AT, 0 };
        rlx_tensor hdr[SH_OUT], *outs[SH_OUT];
        for (int i = 0; i < TOTAL; i++) arena[i] = NAN;
        memcpy(arena + X_AT, x0, sizeof x0);
        memcpy(want, arena, sizeof want);
        for (int k = 0; k < SH_OUT; k++) {
            int place = (code >> (2 * k)) & 3;
            size_t off = place == 3 ? (size_t)(OWN_AT + k * SH_N) : (size_t)at[place];
            hdr[k] = (rlx_tensor){ .dtype = RLX_DTYPE_F32, .rank = 1, .dims = { SH_N }, .data = arena + off,
                                   .nbytes = SH_N * sizeof(float) };
            outs[k] = &hdr[k];
            memcpy(want + off, vals[k], SH_N * sizeof(float));
        }
        rlx_tensor xin = in;
        xin.data = arena + X_AT;
        const rlx_tensor *xp = &xin;
        rlx_status st = rlx_session_run_into(s, 1, (const char *[]){ "x" }, &xp, outs);
        if (st != RLX_OK || memcmp(want, arena, sizeof want) != 0) {
            if (bad < 3) {
                int first = 0;
                while (first < TOTAL && !memcmp(&want[first], &arena[first], sizeof(float))) first++;
                CHECK_MSG(0, "%s, shift %zu: places %d%d%d%d (0 X, 1 X+16, 2 B, 3 own): status %d (%s); float %d is %g, want %g",
                          what, shift, code & 3, (code >> 2) & 3, (code >> 4) & 3, (code >> 6) & 3, (int)st,
                          st ? rlx_last_error() : "", first, first < TOTAL ? arena[first] : 0.0,
                          first < TOTAL ? want[first] : 0.0);
            }
            bad++;
        }
    }
    free(base);
    for (size_t k = 0; k < n_ref; k++) rlx_tensor_destroy(ref[k]);
    free(ref);
    return bad;
}

static void test_share(void) {
    static const char *const orders[2][SH_OUT] = { { "x", "c", "s", "r" }, { "r", "s", "c", "x" } };
    for (int o = 0; o < 2; o++) {
        rlx_model *m = share_model(orders[o]);
        if (!m) return;
        for (int cfg = 0; cfg < 3; cfg++) {
            if (cfg && !test_have_gpu()) break;
            rlx_options *opt = NULL;
            rlx_session *s = NULL;
            CHECK_OK(rlx_options_create(&opt));
            if (cfg == 2) CHECK_OK(rlx_options_set(opt, "gpu.disable", "Relu"));
            CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = cfg ? "gpu" : "cpu" }, opt, &s));
            char what[64];
            snprintf(what, sizeof what, "sharing, order %d, %s", o, cfg == 0 ? "cpu" : cfg == 1 ? "gpu" : "gpu (Relu on the CPU)");
            for (size_t shift = 0; s && shift <= 4; shift += 4) {
                int bad = share_all(s, what, shift);
                CHECK_MSG(bad == 0, "%s, shift %zu: %d of 256 assignments wrong", what, shift, bad);
            }
            rlx_session_destroy(s);
            rlx_options_destroy(opt);
        }
        rlx_model_destroy(m);
    }
}

/* Refused tensors (RLX_ERR_INVALID_ARGUMENT, the message naming the tensor
 * and what is wrong) and zero-size ones (NULL data allowed). */
static void test_bad_tensors(rlx_model *m) {
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    if (!s) return;
    enum { n = 2 };
    static float x[n * W], o[N_OUT][n * W];
    for (int i = 0; i < n * W; i++) x[i] = 0.5f;
    rlx_tensor in = header(n, x), hdr[N_OUT], *outs[N_OUT];
    const rlx_tensor *inp = &in;
    const char *nx = "x";
    for (int k = 0; k < N_OUT; k++) hdr[k] = header(n, o[k]), outs[k] = &hdr[k];
    CHECK_OK(rlx_session_run_into(s, 1, &nx, &inp, outs));
#define REFUSED(call, ...)                                                                                        \
    do {                                                                                                          \
        rlx_status st_ = (call);                                                                                  \
        const char *e_ = rlx_last_error();                                                                        \
        const char *want_[] = { __VA_ARGS__ };                                                                   \
        CHECK_MSG(st_ == RLX_ERR_INVALID_ARGUMENT, "%s: status %d", #call, (int)st_);                             \
        for (size_t w_ = 0; w_ < sizeof want_ / sizeof *want_; w_++)                                              \
            CHECK_MSG(strstr(e_, want_[w_]) != NULL, "%s: message '%s' lacks '%s'", #call, e_, want_[w_]);       \
    } while (0)
    hdr[2].data = NULL; /* output 'f' */
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 2 ('f')", "data is NULL");
    hdr[2].data = o[2];
    hdr[3].nbytes = 16;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 3 ('x')", "expected f32 shape [2,64] (512 bytes)",
            "given f32 shape [2,64] (nbytes 16)");
    hdr[3].nbytes = sizeof o[3];
    hdr[4].dims[1] = 32;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 4 ('xi')", "given f32 shape [2,32]");
    hdr[4].dims[1] = W;
    /* a rank out of range is said as such (the message showed "[]") */
    hdr[4].rank = 9;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 4 ('xi')", "given f32 shape of rank 9 (0 to 8)");
    hdr[4].rank = -3;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 4 ('xi')", "given f32 shape of rank -3");
    hdr[4].rank = 2;
    outs[5] = NULL;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "output 5 ('r')", "NULL");
    outs[5] = &hdr[5];
    in.data = NULL;
    REFUSED(rlx_session_run_into(s, 1, &nx, &inp, outs), "input 'x'", "data is NULL");
    rlx_tensor **got = NULL;
    size_t n_got = 0;
    REFUSED(rlx_session_run(s, 1, &nx, &inp, &got, &n_got), "input 'x'", "data is NULL");
    in.data = x;
    in.nbytes = 8;
    REFUSED(rlx_session_run(s, 1, &nx, &inp, &got, &n_got), "input 'x'", "nbytes 8");
    const rlx_tensor *none = NULL;
    REFUSED(rlx_session_run(s, 1, &nx, &none, &got, &n_got), "input 0");
    /* zero-size: NULL data is fine for 0 bytes */
    rlx_tensor z = header(0, NULL), zo[N_OUT], *zouts[N_OUT];
    const rlx_tensor *zp = &z;
    for (int k = 0; k < N_OUT; k++) zo[k] = header(0, NULL), zouts[k] = &zo[k];
    rlx_status st = rlx_session_run_into(s, 1, &nx, &zp, zouts);
    CHECK_MSG(st == RLX_OK, "zero-size run_into: %d %s", (int)st, rlx_last_error());
    st = rlx_session_run(s, 1, &nx, &zp, &got, &n_got);
    CHECK_MSG(st == RLX_OK, "zero-size run: %d %s", (int)st, rlx_last_error());
    for (size_t k = 0; k < n_got; k++) rlx_tensor_destroy(got[k]);
    free(got);
#undef REFUSED
    rlx_session_destroy(s);
}

int main(void) {
    test_seed_from_env();
    rlx_model *m = alias_model();
    if (!m) TEST_MAIN_END();
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    if (s) {
        test_batch(s, 4, "cpu");
        test_batch(s, 7, "cpu");
        test_batch(s, 4, "cpu"); /* the first plan again */
    }
    rlx_session_destroy(s);
    test_runtime_shape();
    test_share();
    test_bad_tensors(m);
    /* GPU plans with CPU steps: Sigmoid on the CPU reads the bound input and
     * its output s is uploaded for the GPU's Add (so s is not bound); with
     * Relu on the CPU too, r is a CPU step's final output (bound); with Add
     * on the CPU, the GPU's s is read back into the host arena for it and is
     * an output there (not bound) */
    const char *disable[] = { "Sigmoid", "Sigmoid,Relu", "Add" };
    for (int k = 0; k < 3 && test_have_gpu(); k++) {
        rlx_options *o = NULL;
        rlx_session *g = NULL;
        char what[48];
        snprintf(what, sizeof what, "gpu (%s on the CPU)", disable[k]);
        CHECK_OK(rlx_options_create(&o));
        CHECK_OK(rlx_options_set(o, "gpu.disable", disable[k]));
        CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = "gpu" }, o, &g));
        if (g) test_batch(g, 3, what);
        rlx_session_destroy(g);
        rlx_options_destroy(o);
    }
    rlx_model_destroy(m);
    TEST_MAIN_END();
}
