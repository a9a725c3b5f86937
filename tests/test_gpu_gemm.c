/* GEMM kernels of the WebGPU backend (gemm.wgsl, gemm_reduce.wgsl, the
 * reference matmul.wgsl) against double references, on random inputs with
 * poisoned outputs: tile shapes forced with RLX_GEMM_TILE, vec4 and scalar
 * loads, transposes, batches, split-K, 1-row / 1-column shapes and sizes no
 * multiple of a tile; the fused bias + activation epilogue of act.h; f16
 * mode (weights as binary16: equal within f32 tolerance to the product of
 * the rounded weights, within 2e-3 normwise of f32); and the bench hooks
 * (outputs filled in place, GPU timing per dispatch); products split by
 * the binding limit (blocks: the same bits; K chunks: the epilogue once).
 * Skips without a GPU
 * adapter (unless RLX_TEST_REQUIRE_GPU=1). Inputs are small: CI runs on
 * lavapipe, where each pipeline costs a shader compile. */
#define _POSIX_C_SOURCE 200809L
#include "gpu_node.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/lower_gemm.h"
#endif

static rlx_backend *g_be;   /* f32 backend */
static rlx_backend *g_be16; /* f16 mode */

/* ------------------------------------------------------------ GEMM */

typedef struct mm_case {
    int64_t M, N, K;
} mm_case;

/* y = act(A[M,K] x B[K,N] + bias[N]) with B (and bias) constant, as MatMul
 * with the fusion pass's third input; reference in double (B rounded to
 * f16 first for f16 mode), activation applied in f32 like the CPU. */
static void matmul_case(rlx_backend *be, const mm_case *c, rlx_act_kind act, bool bias, bool f16, double tol,
                        const char *what) {
    int64_t ad[2] = { c->M, c->K }, bd[2] = { c->K, c->N }, cd[1] = { c->N }, yd[2] = { c->M, c->N };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    rlx_tensor *cb = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
    const rlx_tensor *in[3] = { a, b, cb };
    int konst[3] = { 0, 1, 1 };
    rlx_act ac = { act, 0.1f, 0.7f };
    if (act == RLX_ACT_CLIP) ac.alpha = -0.3f, ac.beta = 0.4f;
    if (act == RLX_ACT_HARDSIGMOID) ac.alpha = 0.2f, ac.beta = 0.5f;
    rlx_node_attr at[3];
    int na = 0;
    if (act) {
        at[na++] = na_int("_rlx_act", act);
        at[na++] = na_f("_rlx_act_alpha", ac.alpha);
        at[na++] = na_f("_rlx_act_beta", ac.beta);
    }
    rlx_tensor *out = NULL;
    char label[200];
    snprintf(label, sizeof label, "MatMul %s [%lld,%lld]x[%lld,%lld]%s act %d%s", what, (long long)c->M,
             (long long)c->K, (long long)c->K, (long long)c->N, bias ? " + bias" : "", (int)act, f16 ? " f16" : "");
    rlx_status st = run_node(be, "MatMul", 13, bias ? 3 : 2, in, konst, 2, yd, na, at, &out, NULL);
    CHECK_MSG(st == RLX_OK, "%s: %s", label, rlx_last_error());
    double *ref = calloc((size_t)(c->M * c->N) + 1, sizeof *ref);
    const float *pa = a->data, *pb = b->data, *pc = cb->data;
    for (int64_t m = 0; m < c->M; m++)
        for (int64_t n = 0; n < c->N; n++) {
            double s = 0;
            for (int64_t k = 0; k < c->K; k++) {
                float bv = pb[k * c->N + n];
                s += (double)pa[m * c->K + k] * (f16 ? f16_round(bv) : bv);
            }
            if (bias) s += pc[n];
            ref[m * c->N + n] = rlx_act_apply(&ac, (float)s);
        }
    check_close(label, out, ref, (size_t)(c->M * c->N), tol, tol);
    free(ref);
    rlx_tensor_destroy(out);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(cb);
}

static void test_gemm_shapes(void) {
    /* 1-row / 1-column shapes, sizes no multiple of a tile or of 4, and
     * aligned ones (vec4 loads and stores) */
    static const mm_case cases[] = {
        { 1, 1, 1 }, { 1, 7, 13 }, { 13, 1, 9 }, { 3, 9, 1 }, { 37, 65, 64 }, { 70, 129, 33 }, { 64, 64, 64 },
    };
    /* tolerance: f32 sums of up to 64 products of [-1, 1) values */
    const double tol = 2e-5;
    gpu_option("gpu.gemm_splitk", "0");
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++)
        if (i != 3 && i != 6) matmul_case(g_be, &cases[i], RLX_ACT_NONE, i % 2 == 1, false, tol, "auto");
    /* forced tile shapes: 128 x 128 and 32 x 64 tiles, a skinny one */
    static const char *const tiles[] = { "8x8,16x16,8", "4x8,8x8,8", "4x4,32x1,16" };
    for (size_t t = 0; t < RLX_ARRAY_LEN(tiles); t++) {
        gpu_option("gpu.gemm_tile", tiles[t]);
        matmul_case(g_be, &cases[t == 2 ? 3 : 4], RLX_ACT_NONE, true, false, tol, tiles[t]);
    }
    gpu_option("gpu.gemm_tile", NULL);
    /* register prefetch of the next k tile (several k tiles: k = 33, 64) */
    gpu_option("gpu.gemm_prefetch", "1");
    matmul_case(g_be, &cases[5], RLX_ACT_NONE, true, false, tol, "prefetch");
    gpu_option("gpu.gemm_tile", "8x8,16x16,8");
    matmul_case(g_be, &cases[6], RLX_ACT_NONE, false, false, tol, "prefetch 8x8");
    gpu_option("gpu.gemm_tile", NULL);
    gpu_option("gpu.gemm_prefetch", NULL);
    /* scalar loads only, and the reference kernel */
    gpu_option("gpu.gemm_vec4", "0");
    matmul_case(g_be, &cases[6], RLX_ACT_NONE, true, false, tol, "scalar");
    gpu_option("gpu.gemm_vec4", NULL);
    gpu_option("gpu.gemm_kernel", "ref");
    matmul_case(g_be, &cases[5], RLX_ACT_RELU, true, false, tol, "ref");
    gpu_option("gpu.gemm_kernel", NULL);
    /* split-K: forced slices (the last one shorter), with every activation
     * of act.h in the reduce pass, and automatic for a long k */
    mm_case sk[] = { { 3, 40, 100 }, { 17, 24, 97 } };
    gpu_option("gpu.gemm_splitk", "3");
    for (int k = RLX_ACT_NONE; k <= RLX_ACT_TANH; k++)
        matmul_case(g_be, &sk[k % 2], (rlx_act_kind)k, true, false, 4e-5, "splitk3");
    gpu_option("gpu.gemm_splitk", NULL);
    size_t nd = 0;
    {
        int64_t ad[2] = { 4, 4096 }, bd[2] = { 4096, 128 }, yd[2] = { 4, 128 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
        const rlx_tensor *in[2] = { a, b };
        int konst[2] = { 0, 1 };
        rlx_tensor *out = NULL;
        CHECK_OK(run_node(g_be, "MatMul", 13, 2, in, konst, 2, yd, 0, NULL, &out, &nd));
        CHECK_MSG(nd == 2, "a small-grid GEMM with long k is split (gemm + reduce): %zu dispatches", nd);
        double ref[512];
        for (int m = 0; m < 4; m++)
            for (int n = 0; n < 128; n++) {
                double s = 0;
                for (int k = 0; k < 4096; k++) s += (double)((float *)a->data)[m * 4096 + k] * ((float *)b->data)[k * 128 + n];
                ref[m * 128 + n] = s;
            }
        /* 4096 products: a looser absolute tolerance */
        check_close("MatMul split-K auto [4,4096]x[4096,128]", out, ref, 512, 1e-4, 2e-4);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
}

/* Gemm-13 with transA / transB, alpha, beta and C of several shapes. */
static void test_gemm_trans(void) {
    const int64_t M = 21, N = 19, K = 36;
    for (int variant = 0; variant < 8; variant++) {
        bool ta = variant & 1, tb = variant & 2;
        int crank = variant >> 1 & 3; /* 0: [N], 1: [M, N], 2: [M, 1], 3: scalar */
        int64_t ad[2] = { ta ? K : M, ta ? M : K }, bd[2] = { tb ? N : K, tb ? K : N }, yd[2] = { M, N };
        int64_t cdv[2] = { crank == 1 || crank == 2 ? M : N, crank == 2 ? 1 : N };
        int cr = crank == 0 ? 1 : crank == 3 ? 0 : 2;
        if (crank == 0) cdv[0] = N;
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
        rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, cr, cdv, -1, 1);
        const rlx_tensor *in[3] = { a, b, c };
        int konst[3] = { variant & 4 ? 1 : 0, 1, 1 };
        rlx_node_attr at[6] = { na_int("transA", ta), na_int("transB", tb), na_f("alpha", 0.75f), na_f("beta", -1.5f),
                                na_int("_rlx_act", RLX_ACT_LEAKYRELU), na_f("_rlx_act_alpha", 0.125f) };
        rlx_tensor *out = NULL;
        char label[96];
        snprintf(label, sizeof label, "Gemm transA %d transB %d C rank %d variant %d", ta, tb, cr, variant);
        CHECK_MSG(run_node(g_be, "Gemm", 13, 3, in, konst, 2, yd, 6, at, &out, NULL) == RLX_OK, "%s: %s", label,
                  rlx_last_error());
        double ref[21 * 19];
        const float *pa = a->data, *pb = b->data, *pc = c->data;
        rlx_act act = { RLX_ACT_LEAKYRELU, 0.125f, 0 };
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)pa[ta ? k * M + m : m * K + k] * pb[tb ? n * K + k : k * N + n];
                double cv = crank == 0 ? pc[n] : crank == 1 ? pc[m * N + n] : crank == 2 ? pc[m] : pc[0];
                ref[m * N + n] = rlx_act_apply(&act, (float)(0.75 * s - 1.5 * cv));
            }
        check_close(label, out, ref, (size_t)(M * N), 2e-5, 2e-5);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
}

/* Batched MatMul with broadcast batch dims, both operands as inputs. */
static void test_gemm_batched(void) {
    int64_t ad[4] = { 2, 3, 5, 8 }, bd[4] = { 2, 1, 8, 6 }, yd[4] = { 2, 3, 5, 6 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 4, bd, -1, 1);
    const rlx_tensor *in[2] = { a, b };
    static const char *const tiles[] = { NULL, "8x8,8x8,8" };
    for (int t = 0; t < 2; t++) {
        gpu_option("gpu.gemm_tile", tiles[t]);
        rlx_tensor *out = NULL;
        CHECK_MSG(run_node(g_be, "MatMul", 13, 2, in, NULL, 4, yd, 0, NULL, &out, NULL) == RLX_OK, "batched: %s",
                  rlx_last_error());
        double ref[180];
        const float *pa = a->data, *pb = b->data;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int m = 0; m < 5; m++)
                    for (int n = 0; n < 6; n++) {
                        double s = 0;
                        for (int k = 0; k < 8; k++) s += (double)pa[((i * 3 + j) * 5 + m) * 8 + k] * pb[(i * 8 + k) * 6 + n];
                        ref[((i * 3 + j) * 5 + m) * 6 + n] = s;
                    }
        check_close("MatMul batched broadcast", out, ref, 180, 1e-5, 1e-5);
        rlx_tensor_destroy(out);
    }
    gpu_option("gpu.gemm_tile", NULL);
    /* [3, 7, 20] x [20, 12]: batches of rows merge into one taller GEMM */
    int64_t a2d[3] = { 3, 7, 20 }, b2d[2] = { 20, 12 }, y2d[3] = { 3, 7, 12 };
    rlx_tensor *a2 = test_tensor_random(RLX_DTYPE_F32, 3, a2d, -1, 1), *b2 = test_tensor_random(RLX_DTYPE_F32, 2, b2d, -1, 1);
    const rlx_tensor *in2[2] = { a2, b2 };
    int konst[2] = { 0, 1 };
    rlx_tensor *out = NULL;
    CHECK_OK(run_node(g_be, "MatMul", 13, 2, in2, konst, 3, y2d, 0, NULL, &out, NULL));
    double ref[252];
    for (int r = 0; r < 21; r++)
        for (int n = 0; n < 12; n++) {
            double s = 0;
            for (int k = 0; k < 20; k++) s += (double)((float *)a2->data)[r * 20 + k] * ((float *)b2->data)[k * 12 + n];
            ref[r * 12 + n] = s;
        }
    check_close("MatMul [3,7,20] x [20,12]", out, ref, 252, 1e-5, 1e-5);
    rlx_tensor_destroy(out);
    rlx_tensor_destroy(a2);
    rlx_tensor_destroy(b2);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

/* f16 mode: the product of the f16-rounded weights within the f32
 * tolerance, and within 2e-3 (normwise relative) of the f32 result. */
static void test_gemm_f16(void) {
    /* scalar halves (odd sizes) and vec4 halves (aligned) */
    static const mm_case cases[] = { { 1, 9, 13 }, { 37, 65, 64 }, { 64, 64, 128 } };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++)
        matmul_case(g_be16, &cases[i], i == 1 ? RLX_ACT_GELU : RLX_ACT_NONE, true, true, 3e-5, "f16 weights");
    /* transB weights (vec4 along k) and an odd offset into the halves:
     * Gemm with transB, B split into row blocks by a lowered binding limit
     * is covered by f32; here a plain transB */
    int64_t ad[2] = { 7, 40 }, bd[2] = { 24, 40 }, yd[2] = { 7, 24 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    const rlx_tensor *in[2] = { a, b };
    int konst[2] = { 0, 1 };
    rlx_node_attr at16[1] = { na_int("transB", 1) }, at32[1] = { na_int("transB", 1) };
    rlx_tensor *o16 = NULL, *o32 = NULL;
    CHECK_OK(run_node(g_be16, "Gemm", 13, 2, in, konst, 2, yd, 1, at16, &o16, NULL));
    CHECK_OK(run_node(g_be, "Gemm", 13, 2, in, konst, 2, yd, 1, at32, &o32, NULL));
    double ref[7 * 24];
    for (int m = 0; m < 7; m++)
        for (int n = 0; n < 24; n++) {
            double s = 0;
            for (int k = 0; k < 40; k++) s += (double)((float *)a->data)[m * 40 + k] * f16_round(((float *)b->data)[n * 40 + k]);
            ref[m * 24 + n] = s;
        }
    check_close("Gemm transB f16", o16, ref, 7 * 24, 2e-5, 2e-5);
    if (o16 && o32) {
        double d2 = 0, r2 = 0;
        for (int i = 0; i < 7 * 24; i++) {
            double d = (double)((float *)o16->data)[i] - ((float *)o32->data)[i];
            d2 += d * d;
            r2 += (double)((float *)o32->data)[i] * ((float *)o32->data)[i];
        }
        CHECK_MSG(sqrt(d2 / r2) < 2e-3, "f16 vs f32: normwise relative difference %.3g (tolerance 2e-3)", sqrt(d2 / r2));
    }
    rlx_tensor_destroy(o16);
    rlx_tensor_destroy(o32);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

/* The cooperative-matrix GEMM is used only after its self-test: forcing
 * the self-test on an adapter without the feature (lavapipe) leaves it off
 * with a reason, and GEMMs still run (on gemm.wgsl). Where the adapter has
 * it, a GEMM on it matches the f16-rounded reference. */
static void test_gemm_coop_fallback(void) {
#ifdef RLX_HAVE_WEBGPU
    rlx_options *coop = gpu_options_with("gpu.coop=force");
    rlx_session_options o = { .device = "gpu", .gpu_f16 = true };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, coop, &be));
    rlx_options_destroy(coop);
    if (!be) return;
    wg_backend *wb = (wg_backend *)be;
    fprintf(stderr, "  cooperative matrices: %s\n", wb->coop_note);
    CHECK_MSG(wb->caps.coop == (strncmp(wb->coop_note, "on", 2) == 0), "note '%s'", wb->coop_note);
    if (!wb->has_coop_matrix) CHECK_MSG(!wb->caps.coop && strstr(wb->coop_note, "self-test failed"), "%s", wb->coop_note);
    mm_case c = { 70, 66, 48 };
    matmul_case(be, &c, RLX_ACT_RELU, true, true, wb->caps.coop ? 1e-3 : 3e-5, wb->caps.coop ? "coop" : "coop fallback");
    be->destroy(be);
#endif
}

/* Which kernel the GEMM emitter picks for a 64 x 64 x 64 product with the
 * cooperative-matrix caps set by hand (no device run: where the adapter
 * lacks the feature, as lavapipe does, the kernel cannot be compiled, so
 * this is the part of the f16 form that can be checked everywhere): an
 * f16 product takes gemm_coop as its T = f16 instance (f16 C/Y, packed A/B)
 * when caps.coop16 says its self-test passed, whatever f16 mode says; an
 * f32 product only with caps.coop (f16 mode); neither without. */
#ifdef RLX_HAVE_WEBGPU
static const char *coop_choice(const wg_caps *base, bool coop, bool coop16, rlx_dtype dt, bool *elem16, bool *packed) {
    static char kernel[32];
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    if (!g) return "";
    int ids[3];
    const char *names[3] = { "a", "b", "y" };
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rlx_graph_add_value(g, names[i], &ids[i]));
        g->values[ids[i]].dtype = dt;
    }
    wg_caps caps = *base;
    caps.coop = coop;
    caps.coop16 = coop16;
    caps.coop_form = 0;
    wg_lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.caps = &caps;
    wg_gemm m;
    wg_gemm_init(&m, 64, 64, 64);
    m.a = ids[0], m.b = ids[1], m.y = ids[2];
    m.a_n = m.b_n = m.y_n = 64 * 64;
    m.splitk_ok = true;
    rlx_status st = wg_emit_gemm(&L, &m);
    CHECK_MSG(st == RLX_OK, "coop choice: %s", rlx_last_error());
    snprintf(kernel, sizeof kernel, "%s", L.n_d ? L.d[0].kernel : "");
    *elem16 = L.n_d && L.d[0].elem == WG_ELEM_F16;
    *packed = L.n_d && L.d[0].n_bind >= 2 && L.d[0].bind[0].esize == 4 && L.d[0].bind[1].esize == 4;
    wg_lower_free(&L);
    rlx_graph_destroy(g);
    return kernel;
}
#endif

static void test_gemm_coop_choice(void) {
#ifdef RLX_HAVE_WEBGPU
    const wg_caps *base = &((wg_backend *)g_be)->caps;
    if (!base->shader_f16) {
        fprintf(stderr, "  (no shader-f16: f16 products decline, skipped)\n");
        return;
    }
    bool e16, packed;
    const char *k = coop_choice(base, false, true, RLX_DTYPE_F16, &e16, &packed);
    CHECK_MSG(strcmp(k, "gemm_coop") == 0 && e16 && packed, "f16 product with coop16: %s (T f16 %d, packed A/B %d)", k,
              e16, packed);
    k = coop_choice(base, true, false, RLX_DTYPE_F16, &e16, &packed);
    CHECK_MSG(strcmp(k, "gemm_coop") != 0 && e16, "f16 product without coop16: %s", k);
    k = coop_choice(base, false, true, RLX_DTYPE_F32, &e16, &packed);
    CHECK_MSG(strcmp(k, "gemm_coop") != 0 && !e16, "f32 product with coop16 only: %s", k);
    k = coop_choice(base, true, false, RLX_DTYPE_F32, &e16, &packed);
    CHECK_MSG(strcmp(k, "gemm_coop") == 0 && !e16, "f32 product with coop (f16 mode): %s", k);
    /* the generated f16-fragment source: fragments of f16, f32 accumulators */
    char *src = wg_gen_coop_source(&wg_coop_forms[0]);
    CHECK(src && strstr(src, "coop_mat16x16<f16, A>") && strstr(src, "coop_mat16x16<f32, C>") &&
          strstr(src, "enable f16;"));
    free(src);
#endif
}

/* gpu.f16_accumulate: the tiled GEMM of an f16 product gets f16 sums
 * (f16 FMAs into h<q>, f16 tiles) only with the option f16 and
 * shader-f16; the default and f32 products keep f32 FMAs; a block that
 * does not fit the tile's k step (16) declines, saying why. The kernels
 * themselves are tested by the backend-ops cases gemm:f16_sums. */
#ifdef RLX_HAVE_WEBGPU
static rlx_status sums_choice(const wg_caps *base, const char *acc, int64_t block, rlx_dtype dt, bool *f16_sums,
                              char *why, size_t cap) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    if (!g) return RLX_ERR_OUT_OF_MEMORY;
    int ids[3];
    const char *names[3] = { "a", "b", "y" };
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rlx_graph_add_value(g, names[i], &ids[i]));
        g->values[ids[i]].dtype = dt;
    }
    rlx_config cfg = *base->cfg;
    cfg.f16_accumulate = acc;
    cfg.f16_block = block;
    cfg.gemm_kernel = "tiled";
    wg_caps caps = *base;
    caps.cfg = &cfg;
    wg_lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.caps = &caps;
    wg_gemm m;
    wg_gemm_init(&m, 64, 64, 1000);
    m.a = ids[0], m.b = ids[1], m.y = ids[2];
    m.a_n = m.b_n = 64 * 1000;
    m.y_n = 64 * 64;
    rlx_status st = wg_emit_gemm(&L, &m);
    *f16_sums = L.n_d && L.d[0].source && strstr(L.d[0].source, "h0 = fma(vec4<TILE_T>(") &&
                strstr(L.d[0].source, "alias TILE_T = f16;");
    snprintf(why, cap, "%s", st == RLX_ERR_UNSUPPORTED ? L.why : "");
    wg_lower_free(&L);
    rlx_graph_destroy(g);
    return st;
}
#endif

static void test_gemm_f16_sums_choice(void) {
#ifdef RLX_HAVE_WEBGPU
    const wg_caps *base = &((wg_backend *)g_be)->caps;
    if (!base->shader_f16) {
        fprintf(stderr, "  (no shader-f16: f16 products decline, skipped)\n");
        return;
    }
    bool sums;
    char why[256];
    CHECK_OK(sums_choice(base, "f16", 32, RLX_DTYPE_F16, &sums, why, sizeof why));
    CHECK_MSG(sums, "f16 product, gpu.f16_accumulate=f16: no f16 sums in the generated kernel");
    CHECK_OK(sums_choice(base, "f16", 8, RLX_DTYPE_F16, &sums, why, sizeof why));
    CHECK(sums);
    CHECK_OK(sums_choice(base, "f32", 32, RLX_DTYPE_F16, &sums, why, sizeof why));
    CHECK_MSG(!sums, "f16 product, gpu.f16_accumulate=f32: f16 sums");
    CHECK_OK(sums_choice(base, "f16", 32, RLX_DTYPE_F32, &sums, why, sizeof why));
    CHECK_MSG(!sums, "f32 product, gpu.f16_accumulate=f16: f16 sums");
    rlx_status st = sums_choice(base, "f16", 12, RLX_DTYPE_F16, &sums, why, sizeof why);
    CHECK_MSG(st == RLX_ERR_UNSUPPORTED && strstr(why, "gpu.f16_block=12"), "block 12: status %d, '%s'", (int)st, why);
#endif
}

/* gpu.gemm_pipeline and gpu.gemm_conv_geometry reach the generated kernel:
 * the source of a 64 x 64 x 1000 product and of an implicit 3x3
 * convolution (pads 1, stride 2, dilation 1, 9 x 11 input) under each
 * value, lowered without a run (the kernels themselves: the backend-ops
 * cases gemm:variants, bit for bit against the default). off and params
 * give the default's source (every value's source differs from every
 * other's, so pipelines are never shared wrongly: the pipeline cache keys
 * on the source); double keeps two copies of the tiles only where they
 * fit the workgroup memory (else prefetch); geometry as constants only
 * in a convolution. */
#ifdef RLX_HAVE_WEBGPU
static char *variant_source(const wg_caps *base, const char *pipe, const char *geo, bool conv, int64_t wg_storage) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    if (!g) return NULL;
    int ids[3];
    const char *names[3] = { "a", "b", "y" };
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rlx_graph_add_value(g, names[i], &ids[i]));
        g->values[ids[i]].dtype = RLX_DTYPE_F32;
    }
    rlx_config cfg = *base->cfg;
    cfg.gemm_pipeline = pipe;
    cfg.gemm_conv_geometry = geo;
    cfg.gemm_kernel = "tiled";
    cfg.gemm_splitk = 0;
    cfg.gemm_tile = NULL;
    wg_caps caps = *base;
    caps.cfg = &cfg;
    caps.coop = caps.coop16 = false;
    if (wg_storage) caps.max_wg_storage = (uint32_t)wg_storage;
    wg_lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.caps = &caps;
    wg_gemm m;
    if (conv) { /* 16 output channels, 8 input channels, 3x3, 9 x 11 -> 5 x 6 */
        wg_gemm_init(&m, 16, 30, 72);
        m.conv = true;
        m.in_h = 9, m.in_w = 11, m.out_w = 6, m.k_h = 3, m.k_w = 3, m.s_h = 2, m.s_w = 2;
        m.p_h = 1, m.p_w = 1, m.d_h = 1, m.d_w = 1;
        m.a_n = 16 * 72, m.b_n = 8 * 9 * 11, m.y_n = 16 * 30;
    } else {
        wg_gemm_init(&m, 64, 64, 1000);
        m.a_n = m.b_n = 64 * 1000;
        m.y_n = 64 * 64;
    }
    m.a = ids[0], m.b = ids[1], m.y = ids[2];
    rlx_status st = wg_emit_gemm(&L, &m);
    CHECK_MSG(st == RLX_OK, "%s %s: %s", pipe, geo, rlx_last_error());
    char *src = L.n_d && L.d[0].source ? rlx_strdup(L.d[0].source) : NULL;
    CHECK_MSG(src != NULL, "%s %s: no generated source", pipe, geo);
    wg_lower_free(&L);
    rlx_graph_destroy(g);
    return src;
}
#endif

static void test_gemm_variant_choice(void) {
#ifdef RLX_HAVE_WEBGPU
    const wg_caps *base = &((wg_backend *)g_be)->caps;
    static const char *const pipes[] = { "off", "prefetch", "double" }, *const geos[] = { "params", "hoist", "constants" };
    char *src[2][3][3] = { { { NULL } } };
    for (int c = 0; c < 2; c++)
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) src[c][p][q] = variant_source(base, pipes[p], geos[q], c == 1, 0);
    for (int c = 0; c < 2; c++)
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) {
                const char *s = src[c][p][q];
                if (!s) continue;
                bool hoist = c == 1 && q > 0;
                CHECK_MSG((strstr(s, "var pa0") != NULL) == (p > 0), "conv %d %s %s: prefetch registers", c, pipes[p],
                          geos[q]);
                CHECK_MSG((strstr(s, "put_a_at(i, pa0, ea)") != NULL) == (p == 2), "conv %d %s %s: double buffer", c,
                          pipes[p], geos[q]);
                CHECK_MSG((strstr(s, "conv_fetch(i, nk") != NULL || strstr(s, "conv_fetch(i, 0u") != NULL) == hoist,
                          "conv %d %s %s: hoisted pixels", c, pipes[p], geos[q]);
                CHECK_MSG((strstr(s, "/ 6u) * 2u) - i32(1u)") != NULL) == (hoist && q == 2),
                          "conv %d %s %s: geometry constants", c, pipes[p], geos[q]);
                CHECK_MSG((strstr(s, "P.out_w) * P.s_h) - i32(P.p_h)") != NULL) == (hoist && q == 1),
                          "conv %d %s %s: geometry from Params", c, pipes[p], geos[q]);
                /* distinct sources where something differs, the same otherwise */
                for (int p2 = 0; p2 < 3; p2++)
                    for (int q2 = 0; q2 < 3; q2++) {
                        const char *s2 = src[c][p2][q2];
                        bool differ = p != p2 || (c == 1 && q != q2);
                        if (s2) CHECK_MSG((strcmp(s, s2) != 0) == differ, "conv %d: %s/%s against %s/%s", c, pipes[p],
                                          geos[q], pipes[p2], geos[q2]);
                    }
            }
    if (getenv("RLX_TEST_PRINT_GEMM")) fputs(src[1][2][2], stderr);
    for (int c = 0; c < 2; c++)
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) free(src[c][p][q]);
    /* 64 x 64 tiles of k step 16: 8 KiB a copy; double needs 16 KiB */
    char *s = variant_source(base, "double", "params", false, 16384);
    CHECK_MSG(s && strstr(s, "put_a_at(i, pa0, ea)") && strstr(s, "array<vec4<TILE_T>, 512>"),
              "double within 16 KiB: not double-buffered");
    free(s);
    s = variant_source(base, "double", "params", false, 16383);
    CHECK_MSG(s && !strstr(s, "put_a_at(i, pa0, ea)") && strstr(s, "var pa0") && strstr(s, "array<vec4<TILE_T>, 256>"),
              "double past the workgroup memory: not the prefetch form");
    free(s);
#endif
}

/* With f16 mode off, forcing the self-test (RLX_GPU_COOP=force) still runs
 * it, for f16 tensors: on an adapter without the feature it fails with a
 * reason, caps.coop16 stays off, and an f16 product runs on the tiled
 * kernel (within one f16 ULP of the double reference on its halves). */
static void test_gemm_coop_f16_fallback(void) {
#ifdef RLX_HAVE_WEBGPU
    if (!((wg_backend *)g_be)->caps.shader_f16) return;
    rlx_options *coop = gpu_options_with("gpu.coop=force");
    rlx_session_options o = { .device = "gpu" };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, coop, &be));
    rlx_options_destroy(coop);
    if (!be) return;
    wg_backend *wb = (wg_backend *)be;
    fprintf(stderr, "  cooperative matrices, f16 mode off: %s\n", wb->coop_note);
    CHECK_MSG(!wb->caps.coop, "f32 products never take the cooperative kernel outside f16 mode: %s", wb->coop_note);
    CHECK_MSG(wb->caps.coop16 == (strncmp(wb->coop_note, "on", 2) == 0), "note '%s'", wb->coop_note);
    if (!wb->has_coop_matrix) CHECK_MSG(!wb->caps.coop16, "%s", wb->coop_note);
    const int64_t M = 40, N = 36, K = 48;
    int64_t ad[2] = { M, K }, bd[2] = { K, N }, yd[2] = { M, N };
    rlx_tensor *a = NULL, *b = NULL;
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F16, ad, 2, &a));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F16, bd, 2, &b));
    if (!a || !b) return;
    for (int t = 0; t < 2; t++) { /* random halves in [-1, 1) */
        rlx_tensor *x = t ? b : a;
        rlx_tensor *f = test_tensor_random(RLX_DTYPE_F32, 2, x->dims, -1, 1);
        for (size_t i = 0; i < rlx_tensor_numel(x); i++) ((uint16_t *)x->data)[i] = rlx_f32_to_f16(((float *)f->data)[i]);
        rlx_tensor_destroy(f);
    }
    const rlx_tensor *in[2] = { a, b };
    int konst[2] = { 0, 1 };
    rlx_tensor *out = NULL;
    rlx_status st = run_node_dt(be, "MatMul", 13, 2, in, konst, RLX_DTYPE_F16, 2, yd, 0, NULL, &out, NULL);
    CHECK_MSG(st == RLX_OK, "f16 MatMul after the forced self-test: %s", rlx_last_error());
    if (out) {
        const uint16_t *pa = a->data, *pb = b->data, *py = out->data;
        double worst = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double ref = 0;
                for (int64_t k = 0; k < K; k++) ref += (double)rlx_f16_to_f32(pa[m * K + k]) * rlx_f16_to_f32(pb[k * N + n]);
                /* one rounding to f16 (2^-11 relative) plus f32 sums: 1e-3 relative + 1e-4 */
                double e = fabs(rlx_f16_to_f32(py[m * N + n]) - ref) - (1e-3 * fabs(ref) + 1e-4);
                if (!(e <= worst)) worst = e;
            }
        CHECK_MSG(worst <= 0, "f16 MatMul (coop %s): off by %.3g beyond the tolerance", wb->caps.coop16 ? "on" : "off",
                  worst);
    }
    rlx_tensor_destroy(out);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    be->destroy(be);
#endif
}

/* ------------------------------------------------------------ bench hooks */

/* Outputs filled in place (rlx_session_run_into) equal a normal run; GPU
 * timing per dispatch gives one slice per dispatch. */
static void test_bench_hooks(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t xd[2] = { 6, 10 }, wd[2] = { 10, 12 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1);
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, xd, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_node(m, "MatMul", "mm", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "y" }, 1, (const char *[]){ "z" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "z"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_session_options o = { .device = "gpu" };
    /* two dispatches to profile: MatMul and Relu stay apart (fuse_activation
     * would make them one; the plan is compiled by the first run) */
    rlx_options *opts = gpu_options_with("passes.disable=fuse_activation");
    CHECK_OK(rlx_session_create_with_options(m, &o, opts, &s));
    rlx_options_destroy(opts);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    rlx_tensor **outs = NULL;
    size_t n = 0;
    CHECK_OK(rlx_session_run(s, 1, names, in, &outs, &n));
    if (outs) {
        rlx_tensor *keep = NULL;
        CHECK_OK(rlx_tensor_clone(outs[0], &keep));
        memset(outs[0]->data, 0xff, outs[0]->nbytes); /* NaN */
        void *data = outs[0]->data;
        CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
        CHECK(outs[0]->data == data);
        check_bits("run_into vs run", outs[0], keep);
        rlx_exec *exe = rlx_session_last_exec(s);
        rlx_exe_stats es;
        rlx_exec_stats(exe, &es);
        CHECK(es.n_dispatches >= 2);
        for (int passes = 0; passes < 2 && es.gpu_timing; passes++) {
            /* timestamps inside the pass, then one pass per dispatch */
            /* the session's option gpu.timing_passes, flipped for this call */
            rlx_config *cfg = (rlx_config *)((wg_backend *)rlx_session_backend(s))->caps.cfg;
            if (passes) CHECK_OK(rlx_config_set(cfg, "gpu.timing_passes", "1"));
            CHECK_OK(rlx_exec_set_timing(exe, RLX_TIMING_DISPATCH));
            CHECK_OK(rlx_config_set(cfg, "gpu.timing_passes", NULL));
            CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
            const rlx_prof_slice *sl = NULL;
            double tot = -1;
            size_t ns = rlx_exec_timing(exe, &sl, &tot);
            CHECK_MSG(ns == es.n_dispatches, "%zu slices for %zu dispatches", ns, es.n_dispatches);
            CHECK_MSG(tot > 0, "GPU time %g us", tot);
            for (size_t i = 0; i < ns; i++) CHECK(sl[i].gpu && sl[i].dur_us >= 0 && sl[i].kernel);
            for (size_t i = 1; i < ns; i++) CHECK_MSG(sl[i].t0_us >= sl[i - 1].t0_us, "slices in order");
        }
        if (es.gpu_timing) {
            const rlx_prof_slice *sl = NULL;
            double tot = -1;
            size_t ns;
            CHECK_OK(rlx_exec_set_timing(exe, RLX_TIMING_TOTAL));
            CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
            ns = rlx_exec_timing(exe, &sl, &tot);
            CHECK(ns == 1 && tot > 0);
            CHECK_OK(rlx_exec_set_timing(exe, RLX_TIMING_OFF));
            check_bits("timed run vs run", outs[0], keep);
        }
        /* a tensor of the wrong shape is refused */
        int64_t bad_d[2] = { 6, 11 };
        rlx_tensor *bad = test_tensor(RLX_DTYPE_F32, 2, bad_d);
        rlx_tensor *bo[1] = { bad };
        CHECK_FAILS(rlx_session_run_into(s, 1, names, in, bo), RLX_ERR_INVALID_ARGUMENT, "shape");
        rlx_tensor_destroy(bad);
        rlx_tensor_destroy(keep);
        rlx_tensor_destroy(outs[0]);
        free(outs);
    }
    rlx_session_destroy(s);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_model_destroy(m);
}

/* ------------------------------------------------------------ binding limit */

/* Gemm [M,K] x B^T (B [N,K] constant) + C [N], alpha, a Clip epilogue, on
 * backend be; *out and *n_disp as run_node. */
static rlx_status gemm_tb(rlx_backend *be, const rlx_tensor *a, const rlx_tensor *b, const rlx_tensor *c, int64_t M,
                          int64_t N, rlx_tensor **out, size_t *n_disp) {
    const rlx_tensor *in[3] = { a, b, c };
    int konst[3] = { 0, 1, 1 };
    int64_t yd[2] = { M, N };
    rlx_node_attr at[5] = { na_int("transB", 1), na_f("alpha", 0.5f), na_int("_rlx_act", RLX_ACT_CLIP),
                            na_f("_rlx_act_alpha", -0.6f), na_f("_rlx_act_beta", 0.7f) };
    return run_node(be, "Gemm", 13, 3, in, konst, 2, yd, 5, at, out, n_disp);
}

/* Products larger than one storage binding (RLX_MAX_BINDING_BYTES = 4096:
 * windows of at most 961 elements), f32 and f16 mode: split by rows and
 * columns, each block its own gemm.wgsl dispatch without split-K, the same
 * bits as the unsplit product on a backend without the limit (block sizes
 * multiples of 4: [20,12] x [200,12]^T keeps the vec4 loads; K = 10 takes
 * scalar ones); and split by K when one column of B spans more than a
 * binding (MatMul B [300,20] row-major): the bias and the Relu applied once,
 * after the last chunk, within f32 summation rounding of a double
 * reference (rtol = atol = 1e-4; Relu on a partial sum would be off by
 * O(1)). */
static void test_gemm_split_limit(void) {
    rlx_options *small = gpu_options_with("gpu.max_binding_bytes=4096");
    rlx_backend *lim = NULL, *lim16 = NULL;
    rlx_session_options o = { .device = "gpu" }, o16 = { .device = "gpu", .gpu_f16 = true };
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, small, &lim));
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o16, small, &lim16));
    rlx_options_destroy(small);
    if (!lim || !lim16) {
        if (lim) lim->destroy(lim);
        if (lim16) lim16->destroy(lim16);
        return;
    }
    static const int64_t shapes[2][3] = { { 20, 200, 12 }, { 7, 150, 10 } }; /* M, N, K */
    for (int t = 0; t < 2; t++) {
        int64_t M = shapes[t][0], N = shapes[t][1], K = shapes[t][2];
        int64_t ad[2] = { M, K }, bd[2] = { N, K }, cd[1] = { N };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
        rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
        for (int f16 = 0; f16 < 2; f16++) {
            rlx_tensor *whole = NULL, *split = NULL;
            size_t nd_whole = 0, nd_split = 0;
            char label[128];
            snprintf(label, sizeof label, "Gemm transB [%lld,%lld]x[%lld,%lld]^T%s split by the binding limit",
                     (long long)M, (long long)K, (long long)N, (long long)K, f16 ? " f16" : "");
            rlx_status st = gemm_tb(f16 ? g_be16 : g_be, a, b, c, M, N, &whole, &nd_whole);
            CHECK_MSG(st == RLX_OK, "%s (unsplit): %s", label, rlx_last_error());
            st = gemm_tb(f16 ? lim16 : lim, a, b, c, M, N, &split, &nd_split);
            CHECK_MSG(st == RLX_OK, "%s: %s", label, rlx_last_error());
            CHECK_MSG(nd_whole == 1 && nd_split > 1, "%s: %zu dispatch(es) unsplit, %zu split", label, nd_whole, nd_split);
            check_bits(label, split, whole);
            rlx_tensor_destroy(whole);
            rlx_tensor_destroy(split);
        }
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
    mm_case k = { 6, 20, 300 };
    matmul_case(lim, &k, RLX_ACT_RELU, true, false, 1e-4, "K split under 4 KiB bindings");
    matmul_case(lim16, &k, RLX_ACT_RELU, true, true, 1e-4, "K split under 4 KiB bindings");
    lim->destroy(lim);
    lim16->destroy(lim16);
}

/* f16 mode packs a constant weight into half the bytes: B [40,30] (4800
 * bytes as f32, 2400 as binary16) stays on the GPU with 4 KiB buffers
 * (gpu.max_buffer_bytes = 4096) and equals the product of the rounded
 * weights (rtol = atol = 3e-5, as test_gemm_f16). */
static void test_gemm_f16_buffer_limit(void) {
    rlx_options *small = gpu_options_with("gpu.max_buffer_bytes=4096");
    rlx_backend *lim16 = NULL;
    rlx_session_options o16 = { .device = "gpu", .gpu_f16 = true };
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o16, small, &lim16));
    rlx_options_destroy(small);
    if (!lim16) return;
    const int64_t M = 4, N = 40, K = 30;
    int64_t ad[2] = { M, K }, bd[2] = { N, K }, cd[1] = { N };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
    rlx_tensor *out = NULL;
    rlx_status st = gemm_tb(lim16, a, b, c, M, N, &out, NULL);
    CHECK_MSG(st == RLX_OK, "f16 Gemm whose f32 weight exceeds one buffer: %s", rlx_last_error());
    double ref[4 * 40];
    const float *pa = a->data, *pb = b->data, *pc = c->data;
    rlx_act act = { RLX_ACT_CLIP, -0.6f, 0.7f };
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0;
            for (int64_t k = 0; k < K; k++) sum += (double)pa[m * K + k] * f16_round(pb[n * K + k]);
            ref[m * N + n] = rlx_act_apply(&act, (float)(0.5 * sum + pc[n]));
        }
    check_close("f16 Gemm under 4 KiB buffers", out, ref, (size_t)(M * N), 3e-5, 3e-5);
    rlx_tensor_destroy(out);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(c);
    lim16->destroy(lim16);
}

int main(void) {
    if (!gpu_open(&g_be, &g_be16, "test_gpu_gemm")) return 0;
    double t0 = rlx_now_seconds();
    TIMED(test_gemm_shapes, t0);
    TIMED(test_gemm_trans, t0);
    TIMED(test_gemm_batched, t0);
    TIMED(test_gemm_f16, t0);
    TIMED(test_gemm_coop_fallback, t0);
    TIMED(test_gemm_coop_choice, t0);
    TIMED(test_gemm_coop_f16_fallback, t0);
    TIMED(test_gemm_f16_sums_choice, t0);
    TIMED(test_gemm_variant_choice, t0);
    TIMED(test_bench_hooks, t0);
    TIMED(test_gemm_split_limit, t0);
    TIMED(test_gemm_f16_buffer_limit, t0);
#ifdef RLX_HAVE_WEBGPU
    /* the f32 and f16-mode backends share one device and its pipeline cache */
    fprintf(stderr, "  pipelines: %zu (both backends, one shared device)\n", ((wg_backend *)g_be)->sh->pipes_created);
#endif
    g_be->destroy(g_be);
    g_be16->destroy(g_be16);
    gpu_close();
    TEST_MAIN_END();
}
