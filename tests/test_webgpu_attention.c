/* The WebGPU kernels of rlx.Attention (src/backend/webgpu/lower_attention.c)
 * against a double reference written here from the op's contract
 * (src/ir/ops/internal_ops.h: Softmax(Q K^T * or / scale + Mask) V, ONNX
 * MatMul-13, Softmax-13), and against the CPU backend: one-node programs
 * on random inputs with poisoned outputs, through three layouts (plain,
 * K^T given, the exporter layout of absorbed Transposes), rank 2 to 4,
 * masks broadcast over keys, rows or nothing, head dims 1 to 256, sequence
 * lengths 1 to 133 (partial query blocks and key tiles), a row masked out
 * with float32's lowest value (uniform weights) and one with -inf (NaN, as
 * on the CPU). Each case runs the tiled kernel (RLX_ATTENTION_KERNEL=v2)
 * with its own tile, with forced tiles (RLX_ATTENTION_TILE), with scalar
 * loads (RLX_ATTENTION_VEC4=0), and the v1 kernel; a 16 KiB workgroup
 * memory limit (RLX_MAX_WG_STORAGE_BYTES) checks the tile fallback.
 * Skips without a GPU adapter (unless RLX_TEST_REQUIRE_GPU=1). */
#define _POSIX_C_SOURCE 200809L
#include "gpu_node.h"

#include <math.h>

#include "backend/cpu/cpu.h"

static rlx_backend *g_be;   /* f32 backend */
static rlx_backend *g_be16; /* opened by gpu_open, unused */
static rlx_backend *g_cpu;

/* Layouts: 0 plain Q [b.., Sq, D], K [b.., Sk, D], V [b.., Sk, Dv];
 * 1 K^T given [b.., D, Sk] (k_transposed); 2 the exporter's: Q [B, Sq, H, D],
 * K [B, Sk, H, D], V [B, Sk, H, Dv] through perms, Y [B, Sq, H, Dv] (rank 4). */
enum { PLAIN, KT, EXPORT };

/* Masks: none; [B, 1, 1, Sk] (keys); the full [b.., Sq, Sk]; [Sq, Sk]
 * (rank 2, broadcast over batches); [1, 1, Sq, 1] (rows only). */
enum { M_NONE, M_KEYS, M_FULL, M_2D, M_ROWS };

typedef struct att_case {
    int rank;                /* 2, 3 or 4: batch dims B (rank >= 3), H (rank 4) */
    int64_t b, h, sq, sk, d, dv;
    int layout, mask;
    bool div;
    int dead_row;            /* -1, or a query row whose keys are all masked */
    bool dead_inf;           /* with -inf (NaN out) instead of float32's lowest */
    unsigned variants;       /* V_* runs besides the automatic tile (each a pipeline to compile:
                                lavapipe takes 1-3 s for one) */
} att_case;

enum {
    V_SMALL = 1,  /* RLX_ATTENTION_TILE=4xTD: 4 rows, one key per invocation and tile */
    V_WIDE = 2,   /* 32x(3 TD): 32 rows, 3 keys per invocation */
    V_SCALAR = 4, /* 8x(2 TD) with RLX_ATTENTION_VEC4=0: scalar loads and stores */
    V_V1 = 8,     /* RLX_ATTENTION_KERNEL=v1 */
};

/* Element offsets of Q(b, h, i, t), K(b, h, j, t), V(b, h, j, t),
 * Y(b, h, i, t) and the mask in the physical tensors. */
static int64_t off_q(const att_case *c, int64_t b, int64_t h, int64_t i, int64_t t) {
    if (c->layout == EXPORT) return ((b * c->sq + i) * c->h + h) * c->d + t;
    return ((b * c->h + h) * c->sq + i) * c->d + t;
}
static int64_t off_k(const att_case *c, int64_t b, int64_t h, int64_t j, int64_t t) {
    if (c->layout == EXPORT) return ((b * c->sk + j) * c->h + h) * c->d + t;
    if (c->layout == KT) return ((b * c->h + h) * c->d + t) * c->sk + j;
    return ((b * c->h + h) * c->sk + j) * c->d + t;
}
static int64_t off_v(const att_case *c, int64_t b, int64_t h, int64_t j, int64_t t) {
    if (c->layout == EXPORT) return ((b * c->sk + j) * c->h + h) * c->dv + t;
    return ((b * c->h + h) * c->sk + j) * c->dv + t;
}
static int64_t off_y(const att_case *c, int64_t b, int64_t h, int64_t i, int64_t t) {
    if (c->layout == EXPORT) return ((b * c->sq + i) * c->h + h) * c->dv + t;
    return ((b * c->h + h) * c->sq + i) * c->dv + t;
}
static int64_t off_m(const att_case *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    switch (c->mask) {
    case M_KEYS: return b * c->sk + j;
    case M_FULL: return ((b * c->h + h) * c->sq + i) * c->sk + j;
    case M_2D: return i * c->sk + j;
    case M_ROWS: return i;
    default: return 0;
    }
}

/* Physical dims of the operands (batch dims dropped below rank 4). */
static int dims_of(const att_case *c, int which, int64_t *dims) {
    int64_t s = which == 0 || which == 3 ? c->sq : c->sk, w = which == 2 || which == 3 ? c->dv : c->d;
    const int64_t lead[2] = { c->b, c->h };
    int nl = c->rank - 2, n = 0;
    if (c->layout == EXPORT) {
        dims[0] = c->b, dims[1] = s, dims[2] = c->h, dims[3] = w;
        return 4;
    }
    for (int i = 0; i < nl; i++) dims[n++] = lead[i]; /* rank 3: [B, ..] (H = 1) */
    if (which == 1 && c->layout == KT) dims[n++] = w, dims[n++] = s;
    else dims[n++] = s, dims[n++] = w;
    return n;
}

static int mask_dims(const att_case *c, int64_t *dims) {
    switch (c->mask) {
    case M_KEYS: /* [B, 1, 1, Sk] trimmed to the rank */
        if (c->rank == 4) { dims[0] = c->b, dims[1] = 1, dims[2] = 1, dims[3] = c->sk; return 4; }
        if (c->rank == 3) { dims[0] = c->b, dims[1] = 1, dims[2] = c->sk; return 3; }
        dims[0] = 1, dims[1] = c->sk;
        return 2;
    case M_FULL: {
        int64_t t[4];
        int n = 0;
        if (c->rank == 4) t[n++] = c->b, t[n++] = c->h;
        if (c->rank == 3) t[n++] = c->b;
        t[n++] = c->sq, t[n++] = c->sk;
        memcpy(dims, t, sizeof t);
        return n;
    }
    case M_2D: dims[0] = c->sq, dims[1] = c->sk; return 2;
    case M_ROWS:
        if (c->rank == 4) { dims[0] = 1, dims[1] = 1, dims[2] = c->sq, dims[3] = 1; return 4; }
        dims[0] = c->sq, dims[1] = 1;
        return 2;
    default: return 0;
    }
}

/* The double reference, from the contract (the batch index of rank-3 cases
 * is b, with H = 1; rank 2 has B = H = 1). */
static double *reference(const att_case *c, const rlx_tensor *q, const rlx_tensor *k, const rlx_tensor *v,
                         const rlx_tensor *m, size_t *n_out) {
    size_t n = (size_t)(c->b * c->h * c->sq * c->dv);
    double *y = calloc(n + 1, sizeof *y), *s = calloc((size_t)c->sk + 1, sizeof *s);
    const float *pq = q->data, *pk = k->data, *pv = v->data, *pm = m ? m->data : NULL;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->sq; i++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < c->sk; j++) {
                    double dot = 0;
                    for (int64_t t = 0; t < c->d; t++) dot += (double)pq[off_q(c, b, h, i, t)] * pk[off_k(c, b, h, j, t)];
                    /* scale and mask in f32, as the unfused graph computes them */
                    float sf = c->div ? (float)dot / 0.375f : (float)dot * 0.375f;
                    if (pm) sf += pm[off_m(c, b, h, i, j)];
                    s[j] = sf;
                    if (s[j] > mx) mx = s[j];
                }
                double sum = 0;
                for (int64_t j = 0; j < c->sk; j++) sum += (s[j] = exp(s[j] - mx));
                for (int64_t t = 0; t < c->dv; t++) {
                    double acc = 0;
                    for (int64_t j = 0; j < c->sk; j++) acc += s[j] / sum * pv[off_v(c, b, h, j, t)];
                    y[off_y(c, b, h, i, t)] = acc;
                }
            }
    free(s);
    *n_out = n;
    return y;
}

/* |g - w| <= atol + rtol |w|, NaN only where the reference is NaN. */
static void check_att(const char *label, const rlx_tensor *got, const double *want, size_t n, double rtol, double atol) {
    if (!got) return;
    CHECK_MSG(rlx_tensor_numel(got) == n, "%s: %zu elements, expected %zu", label, rlx_tensor_numel(got), n);
    if (rlx_tensor_numel(got) != n) return;
    const float *g = got->data;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        bool ok = isnan(want[i]) ? isnan(g[i]) : fabs(g[i] - want[i]) <= atol + rtol * fabs(want[i]);
        if (!ok && !bad++) first = i;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ (first %zu: %.9g vs %.9g; rtol %g atol %g)", label, bad, n,
              first, bad ? g[first] : 0.0, bad ? want[first] : 0.0, rtol, atol);
}

/* The node's attributes for case c (adopted by run_node). */
static int attrs_of(const att_case *c, rlx_node_attr *a) {
    int n = 0;
    a[n++] = na_f("scale", 0.375f);
    a[n++] = na_int("scale_div", c->div);
    a[n++] = na_int("k_transposed", c->layout != PLAIN);
    if (c->layout == EXPORT) {
        a[n++] = na_ints("q_perm", 4, (const int64_t[]){ 0, 2, 1, 3 });
        a[n++] = na_ints("k_perm", 4, (const int64_t[]){ 0, 2, 3, 1 });
        a[n++] = na_ints("v_perm", 4, (const int64_t[]){ 0, 2, 1, 3 });
        a[n++] = na_ints("y_perm", 4, (const int64_t[]){ 0, 2, 1, 3 });
    }
    return n;
}

/* TD of the tiled kernel (lower_attention.c choose_td): forced tiles need
 * BK a multiple of it. */
static uint32_t tiled_td(int64_t dv) {
    uint32_t dv4 = (uint32_t)((dv + 3) / 4), p2 = 1;
    while (p2 < dv4) p2 *= 2;
    for (uint32_t td = 16; td >= 4; td /= 2)
        if (td <= p2 && (uint64_t)td * ((dv4 + td - 1) / td) * 4 <= 5ull * dv4) return td;
    return 4;
}

static rlx_status run_case(rlx_backend *be, const att_case *c, const rlx_tensor *const *in, int n_in, rlx_tensor **out) {
    rlx_node_attr a[8];
    int na = attrs_of(c, a);
    int64_t yd[4];
    int yr = dims_of(c, 3, yd);
    return run_node_in(be, "rlx", "Attention", 1, n_in, in, NULL, RLX_DTYPE_F32, yr, yd, na, a, out, NULL);
}

static const char *g_keys[] = { "gpu.attention_kernel", "gpu.attention_tile", "gpu.attention_vec4" };

static void test_case(const att_case *c) {
    int64_t qd[4], kd[4], vd[4], md[4];
    int qr = dims_of(c, 0, qd), kr = dims_of(c, 1, kd), vr = dims_of(c, 2, vd), mr = mask_dims(c, md);
    rlx_tensor *q = test_tensor_random(RLX_DTYPE_F32, qr, qd, -1, 1), *k = test_tensor_random(RLX_DTYPE_F32, kr, kd, -1, 1);
    rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, vr, vd, -1, 1);
    rlx_tensor *m = c->mask ? test_tensor_random(RLX_DTYPE_F32, mr, md, -3, 0) : NULL;
    if (m && c->mask == M_KEYS) ((float *)m->data)[c->sk > 2 ? 2 : 0] = -3.4028234663852886e38f; /* a key masked out */
    if (m && c->dead_row >= 0) { /* every key of one row (M_FULL / M_2D) */
        for (int64_t b = 0; b < (c->mask == M_FULL ? c->b : 1); b++)
            for (int64_t h = 0; h < (c->mask == M_FULL ? c->h : 1); h++)
                for (int64_t j = 0; j < c->sk; j++)
                    ((float *)m->data)[off_m(c, b, h, c->dead_row, j)] = c->dead_inf ? -INFINITY : -3.4028234663852886e38f;
    }
    const rlx_tensor *in[4] = { q, k, v, m };
    int n_in = m ? 4 : 3;
    size_t n = 0;
    double *want = reference(c, q, k, v, m, &n);
    char w[200];
    int wl = snprintf(w, sizeof w, "rank %d B %lld H %lld Sq %lld Sk %lld D %lld Dv %lld layout %d mask %d%s%s", c->rank,
                      (long long)c->b, (long long)c->h, (long long)c->sq, (long long)c->sk, (long long)c->d,
                      (long long)c->dv, c->layout, c->mask, c->div ? " div" : "", c->dead_row >= 0 ? " dead row" : "");
    /* the CPU backend first: the reference agrees with it */
    rlx_tensor *cpu = NULL;
    CHECK_MSG(run_case(g_cpu, c, in, n_in, &cpu) == RLX_OK, "%s on cpu: %s", w, rlx_last_error());
    /* CPU (sgemm: f32 scores, double softmax) vs double: rtol 1e-4, atol 1e-5 */
    check_att(w, cpu, want, n, 1e-4, 1e-5);
    /* variants: env settings, each the tiled kernel unless v1 */
    uint32_t td = tiled_td(c->dv);
    char t1[32], t2[32], t3[32];
    snprintf(t1, sizeof t1, "4x%u", td);
    snprintf(t2, sizeof t2, "32x%u", 3 * td);
    snprintf(t3, sizeof t3, "8x%u", 2 * td);
    const char *variants[][3] = {
        { "v2", NULL, NULL }, { "v2", t1, NULL }, { "v2", t2, NULL }, { "v2", t3, "0" }, { "v1", NULL, NULL },
    };
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
        if (vi > 0 && !(c->variants & (1u << (vi - 1)))) continue;
        for (int e = 0; e < 3; e++) gpu_option(g_keys[e], variants[vi][e]);
        snprintf(w + wl, sizeof w - (size_t)wl, " [%s tile %s vec4 %s]", variants[vi][0],
                 variants[vi][1] ? variants[vi][1] : "auto", variants[vi][2] ? variants[vi][2] : "on");
        rlx_tensor *got = NULL;
        double t0 = rlx_now_seconds();
        rlx_status st = run_case(g_be, c, in, n_in, &got);
        fprintf(stderr, "  %s: %.2f s\n", w, rlx_now_seconds() - t0);
        CHECK_MSG(st == RLX_OK, "%s on gpu: %s", w, rlx_last_error());
        /* GPU (f32 scores, online softmax in f32) vs double: rtol 1e-4,
         * atol 1e-5 (scores are within a few 1e-6 of the exact ones) */
        if (st == RLX_OK) check_att(w, got, want, n, 1e-4, 1e-5);
        rlx_tensor_destroy(got);
    }
    for (int e = 0; e < 3; e++) gpu_option(g_keys[e], NULL);
    free(want);
    rlx_tensor_destroy(cpu);
    rlx_tensor_destroy(q);
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(v);
    rlx_tensor_destroy(m);
}

static const att_case k_cases[] = {
    /* rank, B, H, Sq, Sk, D, Dv, layout, mask, div, dead row, -inf, variants */
    { 4, 1, 1, 1, 1, 8, 8, PLAIN, M_NONE, false, -1, false, V_SMALL },          /* one query, one key */
    { 4, 2, 3, 7, 7, 8, 8, EXPORT, M_KEYS, true, -1, false, V_WIDE | V_V1 },    /* BERT layout, seq 7 */
    { 4, 2, 2, 33, 33, 32, 32, KT, M_FULL, false, -1, false, V_SMALL | V_V1 },  /* partial blocks and tiles */
    { 4, 1, 2, 133, 133, 64, 64, EXPORT, M_KEYS, true, -1, false, V_SCALAR },   /* BERT-base heads, 128 + 5 */
    { 4, 2, 1, 33, 7, 80, 80, PLAIN, M_2D, true, -1, false, V_SCALAR },         /* head dim 80 */
    { 4, 1, 2, 7, 133, 64, 64, KT, M_NONE, false, -1, false, 0 },               /* few queries, many keys */
    { 4, 2, 2, 5, 40, 6, 10, PLAIN, M_ROWS, false, -1, false, V_WIDE | V_V1 },  /* D, Dv not multiples of 4 */
    { 3, 2, 1, 9, 17, 12, 5, KT, M_KEYS, true, -1, false, V_SMALL },            /* rank 3 */
    { 2, 1, 1, 9, 17, 3, 1, PLAIN, M_NONE, false, -1, false, V_WIDE },          /* rank 2, tiny head dims */
    { 4, 1, 2, 128, 128, 32, 32, EXPORT, M_KEYS, true, -1, false, 0 },          /* MiniLM heads */
    { 4, 2, 2, 9, 33, 16, 16, PLAIN, M_FULL, false, 4, false, V_SCALAR },       /* a row masked with float32's lowest */
    { 4, 1, 2, 6, 21, 16, 16, EXPORT, M_2D, true, 3, true, 0 },                 /* a row masked with -inf: NaN */
    { 4, 1, 1, 5, 20, 256, 256, PLAIN, M_KEYS, false, -1, false, 0 },          /* head dims 256 (v1 declines) */
};

/* A 16 KiB workgroup memory limit (WebGPU's default): the tiled kernel
 * takes smaller tiles, still exact to the reference. */
static void test_small_wg_storage(void) {
    rlx_options *small = gpu_options_with("gpu.max_wg_storage_bytes=16384;gpu.attention_kernel=v2");
    rlx_session_options o = { .device = "gpu" };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, small, &be));
    rlx_options_destroy(small);
    if (!be) return;
    static const att_case cases[] = {
        { 4, 1, 2, 133, 133, 64, 64, EXPORT, M_KEYS, true, -1, false, 0 },
        { 4, 1, 1, 5, 20, 128, 96, PLAIN, M_KEYS, false, -1, false, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const att_case *c = &cases[i];
        int64_t qd[4], kd[4], vd[4], md[4];
        int qr = dims_of(c, 0, qd), kr = dims_of(c, 1, kd), vr = dims_of(c, 2, vd), mr = mask_dims(c, md);
        rlx_tensor *q = test_tensor_random(RLX_DTYPE_F32, qr, qd, -1, 1), *k = test_tensor_random(RLX_DTYPE_F32, kr, kd, -1, 1);
        rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, vr, vd, -1, 1), *m = test_tensor_random(RLX_DTYPE_F32, mr, md, -3, 0);
        const rlx_tensor *in[4] = { q, k, v, m };
        size_t n = 0;
        double *want = reference(c, q, k, v, m, &n);
        rlx_tensor *got = NULL;
        CHECK_MSG(run_case(be, c, in, 4, &got) == RLX_OK, "16 KiB case %zu: %s", i, rlx_last_error());
        check_att("16 KiB workgroup memory", got, want, n, 1e-4, 1e-5);
        rlx_tensor_destroy(got);
        free(want);
        rlx_tensor_destroy(q);
        rlx_tensor_destroy(k);
        rlx_tensor_destroy(v);
        rlx_tensor_destroy(m);
    }
    be->destroy(be);
}

/* A forced tile that cannot be used declines the node (it would run on the
 * CPU), as does an unknown kernel name. */
static void test_bad_settings(void) {
    const att_case c = { 4, 1, 1, 5, 9, 8, 8, PLAIN, M_NONE, false, -1, false, 0 };
    int64_t qd[4], kd[4], vd[4];
    dims_of(&c, 0, qd), dims_of(&c, 1, kd), dims_of(&c, 2, vd);
    rlx_tensor *q = test_tensor_random(RLX_DTYPE_F32, 4, qd, -2, 2), *k = test_tensor_random(RLX_DTYPE_F32, 4, kd, -2, 2);
    rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, 4, vd, -2, 2);
    const rlx_tensor *in[3] = { q, k, v };
    static const char *const bad[][2] = { { "RLX_ATTENTION_TILE", "12x8" }, { "RLX_ATTENTION_TILE", "8x6" },
                                          { "RLX_ATTENTION_TILE", "8x" }, { "RLX_ATTENTION_KERNEL", "v3" } };
    /* options are validated when a session is created (test_options);
     * the lowering still declines values that slip past, written straight
     * into the backend's resolved options here */
    rlx_config *cfg = ((wg_backend *)g_be)->own_cfg;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char **field = strcmp(bad[i][0], "RLX_ATTENTION_TILE") == 0 ? &cfg->attention_tile : &cfg->attention_kernel;
        const char *keep = *field;
        *field = bad[i][1];
        rlx_tensor *got = NULL;
        rlx_status st = run_case(g_be, &c, in, 3, &got);
        CHECK_MSG(st == RLX_ERR_UNSUPPORTED, "%s=%s: status %d, expected a decline", bad[i][0], bad[i][1], (int)st);
        rlx_tensor_destroy(got);
        *field = keep;
    }
    rlx_tensor_destroy(q);
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(v);
}

int main(void) {
    if (!gpu_open(&g_be, &g_be16, "test_webgpu_attention")) return 0;
    for (int e = 0; e < 3; e++) gpu_option(g_keys[e], NULL);
    CHECK_OK(rlx_backend_cpu_create(NULL, &g_cpu));
    double t0 = rlx_now_seconds();
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) test_case(&k_cases[i]);
    fprintf(stderr, "  cases %6.2f s\n", rlx_now_seconds() - t0);
    t0 = rlx_now_seconds();
    TIMED(test_small_wg_storage, t0);
    TIMED(test_bad_settings, t0);
    if (g_cpu) g_cpu->destroy(g_cpu);
    g_be->destroy(g_be);
    g_be16->destroy(g_be16);
    gpu_close();
    TEST_MAIN_END();
}
