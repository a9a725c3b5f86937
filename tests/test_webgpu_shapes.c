/* A new input shape of an already compiled model reuses its GPU pipelines:
 * the generated kernels read sizes and strides from Params, so their
 * sources (the pipeline cache's key) depend on the structure only.
 *
 * The model (builder API, symbolic sequence length S): scaled-dot-product
 * attention as exporters write it (head split Transposes, MatMul, Mul by a
 * scale, Add of a [1, 1, 1, S] mask, Softmax, MatMul, head merge), which
 * fuse_attention makes one rlx.Attention, then y = tanh(o * w + b) with w
 * [16] and b [2, 16] broadcast, which fusion makes one FusedElementwise.
 * One GPU session runs S = 24, then S = 40 (same tile class: 32 query rows,
 * key tiles of 8, none partial) and S = 40 again; the second shape must
 * create no pipeline (rlx_session_get_stats: n_pipelines_new == 0, reused
 * > 0). Every output is checked against a CPU session (rtol 1e-4, atol
 * 1e-5) on random non-zero inputs. Skips without a GPU adapter (unless
 * RLX_TEST_REQUIRE_GPU=1). */
#include "test.h"

#include <rlx/session_ext.h>

#define D(...) ((const int64_t[]){ __VA_ARGS__ })

static rlx_model *build(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(17, &m));
    const char *sn[4] = { NULL, "S", NULL, NULL };
    CHECK_OK(rlx_model_add_input(m, "q", RLX_DTYPE_F32, 4, D(1, -1, 2, 16), sn));
    CHECK_OK(rlx_model_add_input(m, "k", RLX_DTYPE_F32, 4, D(1, -1, 2, 16), sn));
    CHECK_OK(rlx_model_add_input(m, "v", RLX_DTYPE_F32, 4, D(1, -1, 2, 16), sn));
    CHECK_OK(rlx_model_add_input(m, "mask", RLX_DTYPE_F32, 4, D(1, 1, 1, -1), (const char *[]){ NULL, NULL, NULL, "S" }));
    rlx_tensor *scale = test_tensor_f32(0, NULL, (const float[]){ 0.25f });
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 1, D(16), 0.5f, 1.5f);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, D(2, 16), -0.5f, 0.5f);
    CHECK_OK(rlx_model_add_initializer(m, "scale", scale));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_initializer(m, "b", b));
    rlx_tensor_destroy(scale);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
    rlx_attr p0213[1] = { RLX_ATTR_IS("perm", 4, D(0, 2, 1, 3)) }, p0231[1] = { RLX_ATTR_IS("perm", 4, D(0, 2, 3, 1)) };
    rlx_attr last[1] = { RLX_ATTR_I("axis", -1) };
#define N(op, attrs, na, o, ...)                                                                                       \
    CHECK_OK(rlx_model_add_node(m, op, NULL, sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *),         \
                                (const char *[]){ __VA_ARGS__ }, 1, (const char *[]){ o }, na, attrs))
    N("Transpose", p0213, 1, "qt", "q");
    N("Transpose", p0231, 1, "kt", "k");
    N("Transpose", p0213, 1, "vt", "v");
    N("MatMul", NULL, 0, "s", "qt", "kt");
    N("Mul", NULL, 0, "ss", "s", "scale");
    N("Add", NULL, 0, "sm", "ss", "mask");
    N("Softmax", last, 1, "p", "sm");
    N("MatMul", NULL, 0, "o", "p", "vt");
    N("Transpose", p0213, 1, "ot", "o");
    N("Mul", NULL, 0, "ow", "ot", "w");
    N("Add", NULL, 0, "ob", "ow", "b");
    N("Tanh", NULL, 0, "y", "ob");
#undef N
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* Runs the GPU and the CPU session at sequence length s, compares, and
 * returns the GPU session's stats of this run's plan. */
static rlx_session_stats run_at(rlx_session *gpu, rlx_session *cpu, int64_t s) {
    static const char *names[4] = { "q", "k", "v", "mask" };
    rlx_tensor *in[4] = {
        test_tensor_random(RLX_DTYPE_F32, 4, D(1, s, 2, 16), -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 4, D(1, s, 2, 16), -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 4, D(1, s, 2, 16), -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 4, D(1, 1, 1, s), -3, -0.1f),
    };
    rlx_tensor **a = NULL, **b = NULL;
    size_t na = 0, nb = 0;
    rlx_session_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(rlx_session_run(gpu, 4, names, (const rlx_tensor *const *)in, &a, &na));
    CHECK_OK(rlx_session_get_stats(gpu, &st));
    CHECK_OK(rlx_session_run(cpu, 4, names, (const rlx_tensor *const *)in, &b, &nb));
    CHECK(na == 1 && nb == 1);
    if (na == 1 && nb == 1) {
        CHECK_MSG(a[0]->dims[1] == s, "S = %lld: output has %lld rows", (long long)s, (long long)a[0]->dims[1]);
        CHECK_MSG(test_allclose(a[0], b[0], 1e-4, 1e-5), "S = %lld: GPU and CPU differ by %g", (long long)s,
                  test_max_abs_diff(a[0], b[0]));
    }
    test_free_outputs(a, (int)na);
    test_free_outputs(b, (int)nb);
    for (int i = 0; i < 4; i++) rlx_tensor_destroy(in[i]);
    fprintf(stderr, "  S = %lld: %zu dispatches, %zu pipelines created, %zu reused, compile %.2f s\n", (long long)s,
            st.n_dispatches, st.n_pipelines_new, st.n_pipelines_reused, st.passes_s + st.backend_compile_s);
    return st;
}

int main(void) {
    test_seed(test_seed_from_env());
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_shapes: skipped: no GPU adapter (lavapipe counts); set RLX_TEST_REQUIRE_GPU=1 to "
                        "make this a failure\n");
        return 0;
    }
    rlx_model *m = build();
    rlx_session *gpu = NULL, *cpu = NULL;
    rlx_session_options og = { .device = "gpu" }, oc = { .device = "cpu" };
    CHECK_OK(rlx_session_create(m, &og, &gpu));
    CHECK_OK(rlx_session_create(m, &oc, &cpu));
    if (gpu && cpu) {
        rlx_session_stats s1 = run_at(gpu, cpu, 24);
        const char *rep = rlx_session_dispatch_report(gpu);
        /* the two generated kernels this test is about run on the GPU */
        int nodes = 0, native = 0;
        test_report_counts(rep, "rlx.Attention", &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "rlx.Attention: %d nodes, %d on the GPU:\n%s", nodes, native, rep);
        test_report_counts(rep, "rlx.FusedElementwise", &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "rlx.FusedElementwise: %d nodes, %d on the GPU:\n%s", nodes, native, rep);
        CHECK(s1.n_pipelines_new + s1.n_pipelines_reused >= 2);
        rlx_session_stats s2 = run_at(gpu, cpu, 40);
        CHECK_MSG(s2.n_compiles == 2, "S = 40 compiled %llu plans", (unsigned long long)s2.n_compiles);
        CHECK_MSG(s2.n_pipelines_new == 0, "S = 40 created %zu pipelines (a kernel's source depends on the shape)",
                  s2.n_pipelines_new);
        CHECK(s2.n_pipelines_reused == s1.n_pipelines_new + s1.n_pipelines_reused);
        rlx_session_stats s3 = run_at(gpu, cpu, 40); /* the cached plan */
        CHECK(s3.n_compiles == 2);
    }
    rlx_session_destroy(gpu);
    rlx_session_destroy(cpu);
    rlx_model_destroy(m);
    TEST_MAIN_END();
}
