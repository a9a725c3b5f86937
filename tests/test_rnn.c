/* Recurrent ops (RNN, GRU, LSTM): the CPU kernel against a step-by-step
 * loop over time written here from the ONNX equations, on random inputs, in
 * every direction and both layouts, with sequence_lens shorter than the
 * sequence, every activation function, clip, input_forget,
 * linear_before_reset, omitted inputs and outputs; shape inference with
 * symbolic dims; errors that name the node. */
#include "test.h"

/* ------------------------------------------------------------ the reference */

typedef struct ref_act {
    const char *name;
    double alpha, beta;
} ref_act;

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The activation list of the ONNX RNN operators, alpha/beta as given. */
static double ref_apply(const ref_act *a, double x) {
    const char *n = a->name;
    if (!strcmp(n, "Relu")) return x < 0 ? 0 : x;
    if (!strcmp(n, "Tanh")) return tanh(x);
    if (!strcmp(n, "Sigmoid")) return ref_sigmoid(x);
    if (!strcmp(n, "Affine")) return a->alpha * x + a->beta;
    if (!strcmp(n, "LeakyRelu")) return x < 0 ? a->alpha * x : x;
    if (!strcmp(n, "ThresholdedRelu")) return x < a->alpha ? 0 : x;
    if (!strcmp(n, "ScaledTanh")) return a->alpha * tanh(a->beta * x);
    if (!strcmp(n, "HardSigmoid")) {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    if (!strcmp(n, "Elu")) return x < 0 ? a->alpha * (exp(x) - 1) : x;
    if (!strcmp(n, "Softsign")) return x / (1 + fabs(x));
    if (!strcmp(n, "Softplus")) return log(1 + exp(x));
    fprintf(stderr, "ref_apply: unknown %s\n", n);
    exit(2);
}

typedef enum { K_RNN, K_GRU, K_LSTM } ref_kind;

typedef struct ref_cfg {
    ref_kind kind;
    const char *direction;
    int layout;
    double clip; /* 0: none */
    int input_forget, linear_before_reset;
    ref_act acts[2][3]; /* per direction: f (g, h) */
} ref_cfg;

static int n_gates(ref_kind k) { return k == K_RNN ? 1 : k == K_GRU ? 3 : 4; }

/* All arrays canonical (layout 0), doubles:
 * x [T][N][I], w [D][G*H][I], r [D][G*H][H], b [D][2*G*H] or NULL, seq [N]
 * or NULL, h0/c0 [D][N][H] or NULL, p [D][3H] or NULL;
 * y [T][D][N][H], yh/yc [D][N][H]. Time-major: each step updates every
 * batch row still inside its sequence. */
static void ref_run(const ref_cfg *cfg, int T, int N, int I, int H, const double *x, const double *w,
                    const double *r, const double *b, const int *seq, const double *h0, const double *c0,
                    const double *p, double *y, double *yh, double *yc) {
    int D = strcmp(cfg->direction, "bidirectional") == 0 ? 2 : 1, G = n_gates(cfg->kind);
    memset(y, 0, sizeof(double) * (size_t)(T * D * N * H));
    memset(yh, 0, sizeof(double) * (size_t)(D * N * H));
    memset(yc, 0, sizeof(double) * (size_t)(D * N * H));
    double *hs = calloc((size_t)(N * H), sizeof(double)), *cs = calloc((size_t)(N * H), sizeof(double));
    double *pre = calloc((size_t)(G * H), sizeof(double)), *hnew = calloc((size_t)H, sizeof(double));
#define CLIP(v) (cfg->clip > 0 ? ((v) < -cfg->clip ? -cfg->clip : (v) > cfg->clip ? cfg->clip : (v)) : (v))
    for (int d = 0; d < D; d++) {
        int rev = strcmp(cfg->direction, "reverse") == 0 || d == 1;
        const ref_act *f = &cfg->acts[d][0], *g = &cfg->acts[d][1], *hact = &cfg->acts[d][2];
        for (int i = 0; i < N * H; i++) {
            hs[i] = h0 ? h0[d * N * H + i] : 0;
            cs[i] = c0 ? c0[d * N * H + i] : 0;
        }
        for (int step = 0; step < T; step++) {
            for (int n = 0; n < N; n++) {
                int L = seq ? seq[n] : T;
                if (step >= L) continue;
                int t = rev ? L - 1 - step : step;
                double *hp = hs + n * H, *cp = cs + n * H;
                /* Wx + Wb and Rh + Rb per gate row, kept apart for GRU */
                double wx[64], rh[64];
                for (int row = 0; row < G * H; row++) {
                    double s1 = b ? b[d * 2 * G * H + row] : 0, s2 = b ? b[d * 2 * G * H + G * H + row] : 0;
                    for (int i = 0; i < I; i++) s1 += w[(d * G * H + row) * I + i] * x[(t * N + n) * I + i];
                    for (int k = 0; k < H; k++) s2 += r[(d * G * H + row) * H + k] * hp[k];
                    wx[row] = s1;
                    rh[row] = s2;
                    pre[row] = s1 + s2;
                }
                if (cfg->kind == K_RNN) {
                    for (int j = 0; j < H; j++) hnew[j] = ref_apply(f, CLIP(pre[j]));
                } else if (cfg->kind == K_GRU) {
                    for (int j = 0; j < H; j++) {
                        double z = ref_apply(f, CLIP(pre[j]));
                        double rg = ref_apply(f, CLIP(pre[H + j]));
                        double cand;
                        if (cfg->linear_before_reset) {
                            cand = ref_apply(g, CLIP(wx[2 * H + j] + rg * rh[2 * H + j]));
                        } else {
                            /* (r . h_prev) Rh^T + Rbh: the reset gate of every unit is needed */
                            double s = b ? b[d * 2 * G * H + G * H + 2 * H + j] : 0;
                            for (int k = 0; k < H; k++) {
                                double rk = ref_apply(f, CLIP(pre[H + k]));
                                s += r[(d * G * H + 2 * H + j) * H + k] * rk * hp[k];
                            }
                            cand = ref_apply(g, CLIP(wx[2 * H + j] + s));
                        }
                        hnew[j] = (1 - z) * cand + z * hp[j];
                    }
                } else {
                    for (int j = 0; j < H; j++) {
                        double pi = p ? p[d * 3 * H + j] : 0, po = p ? p[d * 3 * H + H + j] : 0,
                               pf = p ? p[d * 3 * H + 2 * H + j] : 0;
                        double ig = ref_apply(f, CLIP(pre[j] + pi * cp[j]));
                        double fg = cfg->input_forget ? 1 - ig : ref_apply(f, CLIP(pre[2 * H + j] + pf * cp[j]));
                        double cg = ref_apply(g, CLIP(pre[3 * H + j]));
                        double cnew = fg * cp[j] + ig * cg;
                        double og = ref_apply(f, CLIP(pre[H + j] + po * cnew));
                        hnew[j] = og * ref_apply(hact, cnew);
                        cp[j] = cnew;
                    }
                }
                for (int j = 0; j < H; j++) {
                    hp[j] = hnew[j];
                    y[((t * D + d) * N + n) * H + j] = hnew[j];
                }
            }
        }
        for (int n = 0; n < N; n++) {
            int L = seq ? seq[n] : T;
            for (int j = 0; j < H && L > 0; j++) {
                yh[(d * N + n) * H + j] = hs[n * H + j];
                yc[(d * N + n) * H + j] = cs[n * H + j];
            }
        }
    }
#undef CLIP
    free(hs);
    free(cs);
    free(pre);
    free(hnew);
}

/* ------------------------------------------------------------ helpers */

/* Runs one node; names "" in `outs_wanted` are omitted outputs; outs[i] is
 * NULL for those. Inputs flagged konst become initializers. */
static rlx_status run_node(const char *op, int64_t opset, int n_in, const rlx_tensor *const *in, const int *konst,
                           int n_out, const int *want, size_t n_attrs, const rlx_attr *attrs, rlx_tensor **outs) {
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_tensor **got = NULL;
    char names[16][16], onames[4][16];
    const char *in_ptrs[16], *out_ptrs[4], *feed_names[16];
    const rlx_tensor *feeds[16];
    int n_feeds = 0;
    rlx_status st;
    for (int i = 0; i < n_out; i++) outs[i] = NULL;
    if ((st = rlx_model_create(opset, &m))) return st;
    for (int i = 0; i < n_in; i++) {
        in_ptrs[i] = "";
        if (!in[i]) continue;
        snprintf(names[i], sizeof names[i], "in%d", i);
        in_ptrs[i] = names[i];
        if (konst && konst[i]) {
            st = rlx_model_add_initializer(m, names[i], in[i]);
        } else {
            st = rlx_model_add_input(m, names[i], in[i]->dtype, in[i]->rank, in[i]->dims, NULL);
            feed_names[n_feeds] = names[i];
            feeds[n_feeds++] = in[i];
        }
        if (st) goto done;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(onames[i], sizeof onames[i], "out%d", i);
        out_ptrs[i] = want[i] ? onames[i] : "";
    }
    if ((st = rlx_model_add_node(m, op, "rnn0", (size_t)n_in, in_ptrs, (size_t)n_out, out_ptrs, n_attrs, attrs)))
        goto done;
    for (int i = 0; i < n_out; i++)
        if (want[i] && (st = rlx_model_add_output(m, onames[i]))) goto done;
    if ((st = rlx_model_finish(m))) goto done;
    if ((st = rlx_session_create(m, NULL, &s))) goto done;
    size_t n_got = 0;
    if ((st = rlx_session_run(s, (size_t)n_feeds, feed_names, feeds, &got, &n_got))) goto done;
    for (int i = 0, j = 0; i < n_out; i++)
        if (want[i]) outs[i] = got[j++];
    free(got);
done:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return st;
}

static double *to_doubles(const rlx_tensor *t) {
    if (!t) return NULL;
    size_t n = rlx_tensor_numel(t);
    double *d = malloc((n + 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = t->dtype == RLX_DTYPE_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
    return d;
}

static double get_elem(const rlx_tensor *t, size_t i) {
    return t->dtype == RLX_DTYPE_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
}

/* Swaps the first two dims of a rank-3 (or rank-4 over dims 0,1 and 2 when
 * `y4` is set: [T,D,N,H] <-> [N,T,D,H]) tensor: layout 0 <-> 1. */
static rlx_tensor *swap01(const rlx_tensor *t) {
    int64_t d[3] = { t->dims[1], t->dims[0], t->dims[2] };
    rlx_tensor *o = test_tensor(t->dtype, 3, d);
    size_t es = t->dtype == RLX_DTYPE_F64 ? 8 : 4;
    for (int64_t a = 0; a < t->dims[0]; a++)
        for (int64_t b = 0; b < t->dims[1]; b++)
            memcpy((char *)o->data + ((b * t->dims[0] + a) * t->dims[2]) * (int64_t)es,
                   (const char *)t->data + ((a * t->dims[1] + b) * t->dims[2]) * (int64_t)es, (size_t)t->dims[2] * es);
    return o;
}

/* Compares a kernel output with the reference array (canonical layout),
 * mapping layout 1 indices. kind 0: Y, 1: Y_h / Y_c. |got-want| <= atol +
 * rtol*|want| per element. */
static int compare_out(const rlx_tensor *got, const double *want, int layout, int is_y, int T, int D, int N, int H,
                       double rtol, double atol, const char *what) {
    int bad = 0;
    for (int t = 0; t < (is_y ? T : 1); t++)
        for (int d = 0; d < D; d++)
            for (int n = 0; n < N; n++)
                for (int j = 0; j < H; j++) {
                    size_t wi = is_y ? (size_t)(((t * D + d) * N + n) * H + j) : (size_t)((d * N + n) * H + j);
                    size_t gi;
                    if (!layout) gi = wi;
                    else if (is_y) gi = (size_t)(((n * T + t) * D + d) * H + j);
                    else gi = (size_t)((n * D + d) * H + j);
                    double g = get_elem(got, gi), wv = want[wi];
                    if (!(fabs(g - wv) <= atol + rtol * fabs(wv))) {
                        if (bad < 3)
                            fprintf(stderr, "  %s[t=%d d=%d n=%d j=%d]: got %.9g want %.9g\n", what, t, d, n, j, g, wv);
                        bad++;
                    }
                }
    return bad;
}

/* ------------------------------------------------------------ one case */

typedef struct rnn_case {
    ref_cfg cfg;
    int T, N, I, H;
    rlx_dtype dt;
    int64_t opset;
    bool with_b, with_seq, with_h0, with_c0, with_p;
    const int *seq;             /* lengths when with_seq */
    const char *act_names[6];   /* activations attribute (NULL: not given) */
    int n_act_names;
    const float *alphas, *betas;
    int n_alphas, n_betas;
    bool hidden_attr;           /* give hidden_size */
    int want[3];                /* outputs requested */
    double tol;
} rnn_case;

static const char *op_name(ref_kind k) { return k == K_RNN ? "RNN" : k == K_GRU ? "GRU" : "LSTM"; }

static void run_case(const rnn_case *c, const char *label) {
    const ref_cfg *cfg = &c->cfg;
    int D = strcmp(cfg->direction, "bidirectional") == 0 ? 2 : 1, G = n_gates(cfg->kind);
    int T = c->T, N = c->N, I = c->I, H = c->H;
    float lo = -0.7f, hi = 0.7f;
    int64_t dx[3] = { T, N, I }, dw[3] = { D, G * H, I }, dr[3] = { D, G * H, H }, db[2] = { D, 2 * G * H },
            ds[1] = { N }, dh[3] = { D, N, H }, dp[2] = { D, 3 * H };
    rlx_tensor *x = test_tensor_random(c->dt, 3, dx, -1, 1);
    rlx_tensor *w = test_tensor_random(c->dt, 3, dw, lo, hi), *r = test_tensor_random(c->dt, 3, dr, lo, hi);
    rlx_tensor *b = c->with_b ? test_tensor_random(c->dt, 2, db, lo, hi) : NULL;
    rlx_tensor *sl = NULL;
    if (c->with_seq) {
        sl = test_tensor(RLX_DTYPE_I32, 1, ds);
        for (int n = 0; n < N; n++) ((int32_t *)sl->data)[n] = c->seq[n];
    }
    rlx_tensor *h0 = c->with_h0 ? test_tensor_random(c->dt, 3, dh, -1, 1) : NULL;
    rlx_tensor *c0 = c->with_c0 ? test_tensor_random(c->dt, 3, dh, -1, 1) : NULL;
    rlx_tensor *p = c->with_p ? test_tensor_random(c->dt, 2, dp, lo, hi) : NULL;

    /* reference on canonical arrays */
    double *xd = to_doubles(x), *wd = to_doubles(w), *rd = to_doubles(r), *bd = to_doubles(b), *h0d = to_doubles(h0),
           *c0d = to_doubles(c0), *pd = to_doubles(p);
    double *y = malloc(sizeof(double) * (size_t)(T * D * N * H)), *yh = malloc(sizeof(double) * (size_t)(D * N * H)),
           *yc = malloc(sizeof(double) * (size_t)(D * N * H));
    ref_run(cfg, T, N, I, H, xd, wd, rd, bd, c->with_seq ? c->seq : NULL, h0d, c0d, pd, y, yh, yc);

    /* the node's inputs in its layout */
    rlx_tensor *xl = cfg->layout ? swap01(x) : x, *h0l = (cfg->layout && h0) ? swap01(h0) : h0,
               *c0l = (cfg->layout && c0) ? swap01(c0) : c0;
    const rlx_tensor *in[8] = { xl, w, r, b, sl, h0l, c0l, p };
    int n_in = cfg->kind == K_LSTM ? 8 : 6;
    while (n_in > 3 && !in[n_in - 1]) n_in--;
    int konst[8] = { 0, 1, 1, 1, 0, 0, 0, 1 };
    rlx_attr at[10];
    size_t na = 0;
    at[na++] = RLX_ATTR_S("direction", cfg->direction);
    if (c->hidden_attr) at[na++] = RLX_ATTR_I("hidden_size", H);
    if (cfg->layout) at[na++] = RLX_ATTR_I("layout", 1);
    if (cfg->clip > 0) at[na++] = RLX_ATTR_F("clip", (float)cfg->clip);
    if (cfg->input_forget) at[na++] = RLX_ATTR_I("input_forget", 1);
    if (cfg->linear_before_reset) at[na++] = RLX_ATTR_I("linear_before_reset", 1);
    if (c->n_act_names)
        at[na++] = (rlx_attr){ .name = "activations", .type = RLX_ATTR_STRINGS, .n = (size_t)c->n_act_names,
                               .strings = c->act_names };
    if (c->n_alphas) at[na++] = RLX_ATTR_FS("activation_alpha", (size_t)c->n_alphas, c->alphas);
    if (c->n_betas) at[na++] = RLX_ATTR_FS("activation_beta", (size_t)c->n_betas, c->betas);
    int n_out = cfg->kind == K_LSTM ? 3 : 2;
    rlx_tensor *outs[3] = { 0 };
    rlx_status st = run_node(op_name(cfg->kind), c->opset, n_in, in, konst, n_out, c->want, na, at, outs);
    CHECK_MSG(st == RLX_OK, "%s: %s", label, rlx_last_error());
    if (st == RLX_OK) {
        /* tolerance: the kernel computes in double like the reference; the
         * output is rounded to the dtype, so c->tol covers one rounding */
        const double *want_arr[3] = { y, yh, yc };
        const char *nm[3] = { "Y", "Y_h", "Y_c" };
        for (int i = 0; i < n_out; i++) {
            if (!c->want[i]) {
                CHECK(outs[i] == NULL);
                continue;
            }
            CHECK_MSG(outs[i] != NULL, "%s: output %s missing", label, nm[i]);
            if (!outs[i]) continue;
            int64_t expect_dims[4];
            int er = i == 0 ? 4 : 3;
            if (i == 0 && !cfg->layout) expect_dims[0] = T, expect_dims[1] = D, expect_dims[2] = N, expect_dims[3] = H;
            else if (i == 0) expect_dims[0] = N, expect_dims[1] = T, expect_dims[2] = D, expect_dims[3] = H;
            else if (!cfg->layout) expect_dims[0] = D, expect_dims[1] = N, expect_dims[2] = H;
            else expect_dims[0] = N, expect_dims[1] = D, expect_dims[2] = H;
            int shape_ok = outs[i]->rank == er && outs[i]->dtype == c->dt;
            for (int k = 0; shape_ok && k < er; k++) shape_ok = outs[i]->dims[k] == expect_dims[k];
            CHECK_MSG(shape_ok, "%s: output %s has the wrong shape or dtype", label, nm[i]);
            if (!shape_ok) continue;
            int bad = compare_out(outs[i], want_arr[i], cfg->layout, i == 0, T, D, N, H, c->tol, c->tol, nm[i]);
            CHECK_MSG(bad == 0, "%s: %s: %d elements differ (rtol = atol = %g)", label, nm[i], bad, c->tol);
        }
    }
    for (int i = 0; i < 3; i++) rlx_tensor_destroy(outs[i]);
    if (xl != x) rlx_tensor_destroy(xl);
    if (h0l != h0) rlx_tensor_destroy(h0l);
    if (c0l != c0) rlx_tensor_destroy(c0l);
    rlx_tensor *all[] = { x, w, r, b, sl, h0, c0, p };
    for (size_t i = 0; i < 8; i++) rlx_tensor_destroy(all[i]);
    double *ds_[] = { xd, wd, rd, bd, h0d, c0d, pd, y, yh, yc };
    for (size_t i = 0; i < 10; i++) free(ds_[i]);
}

static void default_acts(ref_cfg *cfg) {
    for (int d = 0; d < 2; d++) {
        if (cfg->kind == K_RNN) cfg->acts[d][0] = (ref_act){ "Tanh", 0, 0 };
        else {
            cfg->acts[d][0] = (ref_act){ "Sigmoid", 0, 0 };
            cfg->acts[d][1] = (ref_act){ "Tanh", 0, 0 };
            cfg->acts[d][2] = (ref_act){ "Tanh", 0, 0 };
        }
    }
}

/* Every op, direction and layout with all optional inputs present and some
 * rows shorter than the sequence (one of length 0). */
static void test_directions_layouts(void) {
    static const int seq[4] = { 5, 2, 0, 4 };
    const char *dirs[3] = { "forward", "reverse", "bidirectional" };
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 3; d++)
            for (int layout = 0; layout < 2; layout++) {
                rnn_case c = { .T = 5, .N = 4, .I = 3, .H = 4, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true,
                               .with_seq = true, .with_h0 = true, .with_c0 = k == K_LSTM, .with_p = k == K_LSTM,
                               .seq = seq, .hidden_attr = true, .want = { 1, 1, 1 }, .tol = 2e-6 };
                c.cfg.kind = (ref_kind)k;
                c.cfg.direction = dirs[d];
                c.cfg.layout = layout;
                default_acts(&c.cfg);
                char label[96];
                snprintf(label, sizeof label, "%s %s layout %d", op_name(c.cfg.kind), dirs[d], layout);
                run_case(&c, label);
            }
}

/* Only X, W, R at opset 7, no hidden_size attribute (taken from R), f64. */
static void test_minimal_inputs(void) {
    const char *dirs[3] = { "forward", "reverse", "bidirectional" };
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < 3; d++) {
            rnn_case c = { .T = 4, .N = 2, .I = 5, .H = 3, .dt = RLX_DTYPE_F64, .opset = 7, .want = { 1, 1, 1 },
                           .tol = 1e-12 };
            c.cfg.kind = (ref_kind)k;
            c.cfg.direction = dirs[d];
            default_acts(&c.cfg);
            char label[96];
            snprintf(label, sizeof label, "%s %s minimal f64", op_name(c.cfg.kind), dirs[d]);
            run_case(&c, label);
        }
}

/* All eleven activation functions, with activation_alpha/activation_beta
 * consumed in order by the functions that take them, and defaults where the
 * lists run out. */
static void test_activations(void) {
    /* RNN bidirectional: pairs of activations per run */
    static const char *names[6][2] = { { "Relu", "Tanh" },          { "Sigmoid", "Affine" },
                                       { "LeakyRelu", "ThresholdedRelu" }, { "ScaledTanh", "HardSigmoid" },
                                       { "Elu", "Softsign" },       { "Softplus", "LeakyRelu" } };
    /* alphas/betas as the node receives them; the reference gets them spelled out */
    static const float al[6][2] = { { 0, 0 }, { 0.7f, 0 }, { 0.2f, 0.1f }, { 1.5f, 0.3f }, { 0.8f, 0 }, { 0, 0 } };
    static const float be[6][2] = { { 0, 0 }, { 0.25f, 0 }, { 0, 0 }, { 0.6f, 0.4f }, { 0, 0 }, { 0, 0 } };
    static const int n_al[6] = { 0, 1, 2, 2, 1, 0 }, n_be[6] = { 0, 1, 0, 2, 0, 0 };
    for (int i = 0; i < 6; i++) {
        rnn_case c = { .T = 4, .N = 3, .I = 3, .H = 4, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true,
                       .with_h0 = true, .hidden_attr = true, .want = { 1, 1, 0 }, .tol = 2e-6 };
        c.cfg.kind = K_RNN;
        c.cfg.direction = "bidirectional";
        c.act_names[0] = names[i][0];
        c.act_names[1] = names[i][1];
        c.n_act_names = 2;
        c.alphas = al[i];
        c.n_alphas = n_al[i];
        c.betas = be[i];
        c.n_betas = n_be[i];
        ref_act *a = c.cfg.acts[0];
        switch (i) {
        case 0: a[0] = (ref_act){ "Relu", 0, 0 }, c.cfg.acts[1][0] = (ref_act){ "Tanh", 0, 0 }; break;
        case 1: a[0] = (ref_act){ "Sigmoid", 0, 0 }, c.cfg.acts[1][0] = (ref_act){ "Affine", 0.7, 0.25 }; break;
        case 2: a[0] = (ref_act){ "LeakyRelu", 0.2f, 0 }, c.cfg.acts[1][0] = (ref_act){ "ThresholdedRelu", 0.1f, 0 }; break;
        case 3:
            a[0] = (ref_act){ "ScaledTanh", 1.5, 0.6f };
            c.cfg.acts[1][0] = (ref_act){ "HardSigmoid", 0.3f, 0.4f };
            break;
        case 4: a[0] = (ref_act){ "Elu", 0.8f, 0 }, c.cfg.acts[1][0] = (ref_act){ "Softsign", 0, 0 }; break;
        case 5: a[0] = (ref_act){ "Softplus", 0, 0 }, c.cfg.acts[1][0] = (ref_act){ "LeakyRelu", 0.01f, 0 }; break;
        }
        /* the parameters are floats on the node */
        for (int d = 0; d < 2; d++) {
            c.cfg.acts[d][0].alpha = (float)c.cfg.acts[d][0].alpha;
            c.cfg.acts[d][0].beta = (float)c.cfg.acts[d][0].beta;
        }
        char label[96];
        snprintf(label, sizeof label, "RNN activations %s, %s", names[i][0], names[i][1]);
        run_case(&c, label);
    }
    /* defaults of the parameterised activations when no lists are given */
    {
        rnn_case c = { .T = 3, .N = 2, .I = 3, .H = 3, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true,
                       .want = { 1, 1, 1 }, .tol = 2e-6 };
        c.cfg.kind = K_LSTM;
        c.cfg.direction = "bidirectional";
        static const char *n6[6] = { "HardSigmoid", "Elu", "ScaledTanh", "sigmoid", "LEAKYRELU", "Affine" };
        memcpy(c.act_names, n6, sizeof n6);
        c.n_act_names = 6;
        c.cfg.acts[0][0] = (ref_act){ "HardSigmoid", 0.2f, 0.5f };
        c.cfg.acts[0][1] = (ref_act){ "Elu", 1, 0 };
        c.cfg.acts[0][2] = (ref_act){ "ScaledTanh", 1, 1 };
        c.cfg.acts[1][0] = (ref_act){ "Sigmoid", 0, 0 };
        c.cfg.acts[1][1] = (ref_act){ "LeakyRelu", 0.01f, 0 };
        c.cfg.acts[1][2] = (ref_act){ "Affine", 1, 0 };
        run_case(&c, "LSTM default activation parameters");
    }
}

/* clip, input_forget, linear_before_reset, GRU activations. */
static void test_gate_options(void) {
    static const int seq[3] = { 3, 6, 1 };
    const char *dirs[3] = { "forward", "reverse", "bidirectional" };
    for (int d = 0; d < 3; d++) {
        for (int lbr = 0; lbr < 2; lbr++) {
            rnn_case c = { .T = 6, .N = 3, .I = 4, .H = 5, .dt = RLX_DTYPE_F32, .opset = 22, .with_b = true,
                           .with_seq = true, .with_h0 = true, .seq = seq, .hidden_attr = true, .want = { 1, 1, 0 },
                           .tol = 2e-6 };
            c.cfg.kind = K_GRU;
            c.cfg.direction = dirs[d];
            c.cfg.linear_before_reset = lbr;
            c.cfg.clip = 0.4;
            c.cfg.layout = d == 1;
            default_acts(&c.cfg);
            char label[96];
            snprintf(label, sizeof label, "GRU %s linear_before_reset %d clip 0.4", dirs[d], lbr);
            run_case(&c, label);
        }
        rnn_case c = { .T = 6, .N = 3, .I = 4, .H = 5, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true,
                       .with_seq = true, .with_h0 = true, .with_c0 = true, .with_p = true, .seq = seq,
                       .want = { 1, 1, 1 }, .tol = 2e-6 };
        c.cfg.kind = K_LSTM;
        c.cfg.direction = dirs[d];
        c.cfg.input_forget = 1;
        c.cfg.clip = 0.5;
        default_acts(&c.cfg);
        char label[96];
        snprintf(label, sizeof label, "LSTM %s input_forget clip 0.5", dirs[d]);
        run_case(&c, label);
    }
    /* GRU with non-default activations in both directions */
    rnn_case c = { .T = 4, .N = 2, .I = 3, .H = 3, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true, .with_h0 = true,
                   .want = { 1, 1, 0 }, .tol = 2e-6 };
    c.cfg.kind = K_GRU;
    c.cfg.direction = "bidirectional";
    static const char *n4[4] = { "HardSigmoid", "Softsign", "Sigmoid", "Relu" };
    static const float a4[1] = { 0.3f }, b4[1] = { 0.45f };
    memcpy(c.act_names, n4, sizeof n4);
    c.n_act_names = 4;
    c.alphas = a4, c.n_alphas = 1, c.betas = b4, c.n_betas = 1;
    c.cfg.acts[0][0] = (ref_act){ "HardSigmoid", 0.3f, 0.45f };
    c.cfg.acts[0][1] = (ref_act){ "Softsign", 0, 0 };
    c.cfg.acts[1][0] = (ref_act){ "Sigmoid", 0, 0 };
    c.cfg.acts[1][1] = (ref_act){ "Relu", 0, 0 };
    run_case(&c, "GRU custom activations");
}

/* Omitted outputs: only Y_c of an LSTM, only Y_h of a GRU. */
static void test_omitted_outputs(void) {
    rnn_case c = { .T = 4, .N = 2, .I = 3, .H = 3, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true, .with_h0 = true,
                   .with_c0 = true, .want = { 0, 0, 1 }, .tol = 2e-6 };
    c.cfg.kind = K_LSTM;
    c.cfg.direction = "reverse";
    default_acts(&c.cfg);
    run_case(&c, "LSTM only Y_c");
    rnn_case g = { .T = 4, .N = 2, .I = 3, .H = 3, .dt = RLX_DTYPE_F32, .opset = 14, .with_b = true,
                   .want = { 0, 1, 0 }, .tol = 2e-6 };
    g.cfg.kind = K_GRU;
    g.cfg.direction = "forward";
    default_acts(&g.cfg);
    run_case(&g, "GRU only Y_h");
}

/* Shape inference with symbolic seq and batch, both layouts. */
static void test_shape_inference(void) {
    for (int layout = 0; layout < 2; layout++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(14, &m));
        int64_t dx[3] = { -1, -1, 6 };
        const char *nx[3] = { layout ? "batch" : "seq", layout ? "seq" : "batch", NULL };
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 3, dx, nx));
        int64_t dw[3] = { 2, 4 * 5, 6 }, dr[3] = { 2, 4 * 5, 5 };
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 3, dw, -1, 1), *r = test_tensor_random(RLX_DTYPE_F32, 3, dr, -1, 1);
        CHECK_OK(rlx_model_add_initializer(m, "w", w));
        CHECK_OK(rlx_model_add_initializer(m, "r", r));
        rlx_attr at[2] = { RLX_ATTR_S("direction", "bidirectional"), RLX_ATTR_I("layout", layout) };
        CHECK_OK(rlx_model_add_node(m, "LSTM", "lstm0", 3, (const char *[]){ "x", "w", "r" }, 3,
                                    (const char *[]){ "y", "yh", "yc" }, 2, at));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_add_output(m, "yh"));
        CHECK_OK(rlx_model_finish(m));
        rlx_value_info vi;
        CHECK_OK(rlx_model_output_info(m, 0, &vi));
        CHECK(vi.rank == 4);
        if (vi.rank == 4) {
            if (!layout) {
                CHECK(vi.dims[0] == -1 && vi.dim_names[0] && !strcmp(vi.dim_names[0], "seq"));
                CHECK(vi.dims[1] == 2);
                CHECK(vi.dims[2] == -1 && vi.dim_names[2] && !strcmp(vi.dim_names[2], "batch"));
            } else {
                CHECK(vi.dims[0] == -1 && vi.dim_names[0] && !strcmp(vi.dim_names[0], "batch"));
                CHECK(vi.dims[1] == -1 && vi.dim_names[1] && !strcmp(vi.dim_names[1], "seq"));
                CHECK(vi.dims[2] == 2);
            }
            CHECK(vi.dims[3] == 5);
        }
        CHECK_OK(rlx_model_output_info(m, 1, &vi));
        CHECK(vi.rank == 3 && vi.dims[layout ? 1 : 0] == 2 && vi.dims[2] == 5 &&
              vi.dim_names[layout ? 0 : 1] && !strcmp(vi.dim_names[layout ? 0 : 1], "batch"));
        rlx_model_destroy(m);
        rlx_tensor_destroy(w);
        rlx_tensor_destroy(r);
    }
}

/* Builds X, W, R (+ sequence_lens) with the given shapes and expects the
 * model (or the run) to fail with `status` and `substr`. */
static void expect_error(const char *op, int64_t opset, const int64_t *dx, const int64_t *dw, const int64_t *dr,
                         const int32_t *seq, size_t n_attrs, const rlx_attr *attrs, rlx_status status,
                         const char *substr) {
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 3, dw, -1, 1),
               *r = test_tensor_random(RLX_DTYPE_F32, 3, dr, -1, 1), *sl = NULL;
    if (seq) {
        int64_t ds[1] = { dx[1] };
        sl = test_tensor(RLX_DTYPE_I32, 1, ds);
        memcpy(sl->data, seq, sl->nbytes);
    }
    const rlx_tensor *in[5] = { x, w, r, NULL, sl };
    rlx_tensor *outs[3];
    int want[3] = { 1, 1, 0 };
    CHECK_FAILS(run_node(op, opset, seq ? 5 : 3, in, NULL, 2, want, n_attrs, attrs, outs), status, substr);
    CHECK_MSG(strstr(rlx_last_error(), "node 'rnn0'") != NULL, "message does not name the node: %s", rlx_last_error());
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(r);
    rlx_tensor_destroy(sl);
}

static void test_errors(void) {
    int64_t dx[3] = { 4, 2, 3 }, dw[3] = { 1, 12, 3 }, dr[3] = { 1, 12, 3 };
    /* hidden_size disagrees with R */
    rlx_attr hs[1] = { RLX_ATTR_I("hidden_size", 4) };
    expect_error("GRU", 14, dx, dw, dr, NULL, 1, hs, RLX_ERR_INVALID_MODEL, "hidden_size 4");
    rlx_attr hs0[1] = { RLX_ATTR_I("hidden_size", 0) };
    expect_error("GRU", 14, dx, dw, dr, NULL, 1, hs0, RLX_ERR_INVALID_MODEL, "hidden_size 0 must be positive");
    /* W's input size differs from X's */
    int64_t dw_bad[3] = { 1, 12, 5 };
    expect_error("LSTM", 14, dx, dw_bad, dr, NULL, 0, NULL, RLX_ERR_INVALID_MODEL, "input W has shape [1,12,5]");
    /* W has 2 directions, the node 1 */
    int64_t dw2[3] = { 2, 12, 3 }, dr2[3] = { 2, 12, 3 };
    expect_error("GRU", 14, dx, dw2, dr2, NULL, 0, NULL, RLX_ERR_INVALID_MODEL, "input W has shape [2,12,3]");
    /* W rows not a multiple of the gates */
    int64_t dw3[3] = { 1, 10, 3 }, dr3[3] = { 1, 10, 2 };
    expect_error("GRU", 14, dx, dw3, dr3, NULL, 0, NULL, RLX_ERR_INVALID_MODEL, "input W has shape [1,10,3]");
    /* bad attributes */
    rlx_attr dir[1] = { RLX_ATTR_S("direction", "sideways") };
    expect_error("RNN", 14, dx, (int64_t[]){ 1, 3, 3 }, (int64_t[]){ 1, 3, 3 }, NULL, 1, dir, RLX_ERR_INVALID_MODEL,
                 "direction 'sideways'");
    const char *bad_act[1] = { "Swish" };
    rlx_attr act[1] = { { .name = "activations", .type = RLX_ATTR_STRINGS, .n = 1, .strings = bad_act } };
    expect_error("RNN", 14, dx, (int64_t[]){ 1, 3, 3 }, (int64_t[]){ 1, 3, 3 }, NULL, 1, act, RLX_ERR_INVALID_MODEL,
                 "unknown activation 'Swish'");
    const char *two_act[2] = { "Tanh", "Tanh" };
    rlx_attr act2[1] = { { .name = "activations", .type = RLX_ATTR_STRINGS, .n = 2, .strings = two_act } };
    expect_error("LSTM", 14, dx, (int64_t[]){ 1, 12, 3 }, (int64_t[]){ 1, 12, 3 }, NULL, 1, act2,
                 RLX_ERR_INVALID_MODEL, "2 activations given, expected 3");
    /* layout only from version 14 */
    rlx_attr lay[1] = { RLX_ATTR_I("layout", 1) };
    expect_error("RNN", 13, dx, (int64_t[]){ 1, 3, 3 }, (int64_t[]){ 1, 3, 3 }, NULL, 1, lay, RLX_ERR_INVALID_MODEL,
                 "attribute 'layout' is not an attribute of RNN-7 at opset 13 (it was added in RNN-14)");
    /* a sequence length beyond the sequence is caught at run time */
    int32_t seq[2] = { 2, 5 };
    expect_error("RNN", 14, dx, (int64_t[]){ 1, 3, 3 }, (int64_t[]){ 1, 3, 3 }, seq, 0, NULL, RLX_ERR_INVALID_ARGUMENT,
                 "sequence_lens[1] = 5 is outside [0, 4]");
}

/* Every input constant: the node is folded at compile time by the
 * reference kernel (double); a run with X fed at run time takes the f32
 * fast path (cpu_rnn.c): the two agree within f32 rounding (2e-6 on
 * values in (-1, 1) after 3 steps of 4 units). */
static void test_folded(void) {
    int64_t dx[3] = { 3, 2, 4 }, dw[3] = { 1, 4, 4 }, dr[3] = { 1, 4, 4 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 3, dw, -1, 1),
               *r = test_tensor_random(RLX_DTYPE_F32, 3, dr, -1, 1);
    const rlx_tensor *in[3] = { x, w, r };
    int all_const[3] = { 1, 1, 1 }, fed[3] = { 0, 1, 1 }, want[2] = { 1, 1 };
    rlx_tensor *a[2], *b[2];
    CHECK_OK(run_node("RNN", 14, 3, in, all_const, 2, want, 0, NULL, a));
    CHECK_OK(run_node("RNN", 14, 3, in, fed, 2, want, 0, NULL, b));
    if (a[0] && b[0]) CHECK(test_max_abs_diff(a[0], b[0]) <= 2e-6);
    if (a[1] && b[1]) CHECK(test_max_abs_diff(a[1], b[1]) <= 2e-6);
    for (int i = 0; i < 2; i++) {
        rlx_tensor_destroy(a[i]);
        rlx_tensor_destroy(b[i]);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(r);
}

int main(void) {
    test_seed_from_env();
    test_directions_layouts();
    test_minimal_inputs();
    test_activations();
    test_gate_options();
    test_omitted_outputs();
    test_shape_inference();
    test_errors();
    test_folded();
    TEST_MAIN_END();
}
