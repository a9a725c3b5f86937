/* Shader runtime checks (option gpu.runtime_checks, README.md of the
 * WebGPU backend, "Runtime checks"): audited kernels created through
 * wgpu-native's wgpuDeviceCreateShaderModuleTrusted without naga's bounds
 * checks and loop bounding must give the bits of the checked modules; the
 * mode says which pipelines take which path; a WebGPU library without the
 * entry point checks everything; bad input is refused before any kernel.
 *
 * One model with the audited kernels of a few paths: a tiled GEMM with a
 * fused Relu (odd M, N, K: edge tiles), a one-row product long enough for
 * split-K (gemv + gemm_reduce), a 3x3 convolution with bias (implicit
 * GEMM), a depthwise 3x3 convolution (generated kernel), a Sigmoid and a broadcast Add (unary, binary; the Sigmoid an
 * output, so that no fusion takes them), a Softmax, a MaxPool and a
 * GlobalAveragePool (norm, pool2d, global_pool), a Gather of the GEMM's
 * rows (an index kernel) and a nearest Resize (resize.wgsl, not
 * audited). Random inputs; the GPU
 * arena poisoned with NaN; every mode's outputs bit for bit against "on",
 * and "on" against the CPU within rtol 1e-5 plus atol 2e-6 sqrt(K) (K up
 * to 300). */
#include <math.h>

#include "test.h"

#include "rlx/session_ext.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"
#include "backend/webgpu/wgsl_gen.h"
#endif

#define M_ 33
#define K_ 65
#define N_ 47
#define KR 300 /* the one-row product's K */
#define NR 64

static rlx_model *build(void) {
    rlx_model *m = NULL;
    if (rlx_model_create(17, &m)) return NULL;
    rlx_status st = RLX_OK;
    st = st ? st : rlx_model_add_input(m, "a", RLX_DTYPE_F32, 2, (const int64_t[]){ M_, K_ }, NULL);
    st = st ? st : rlx_model_add_input(m, "row", RLX_DTYPE_F32, 2, (const int64_t[]){ 1, KR }, NULL);
    st = st ? st : rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 8, 13, 11 }, NULL);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ K_, N_ }, -1, 1);
    rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ KR, NR }, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 16, 8, 3, 3 }, -1, 1);
    rlx_tensor *bias = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 16 }, -1, 1);
    rlx_tensor *wd = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 8, 1, 3, 3 }, -1, 1);
    rlx_tensor *sb = test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 8, 1, 11 }, -1, 1);
    rlx_tensor *idx = test_tensor_i64(1, (const int64_t[]){ 3 }, (const int64_t[]){ 32, 0, 7 });
    st = st ? st : rlx_model_add_initializer(m, "B", b);
    st = st ? st : rlx_model_add_initializer(m, "C", c);
    st = st ? st : rlx_model_add_initializer(m, "W", w);
    st = st ? st : rlx_model_add_initializer(m, "bias", bias);
    st = st ? st : rlx_model_add_initializer(m, "idx", idx);
    st = st ? st : rlx_model_add_initializer(m, "sb", sb);
    st = st ? st : rlx_model_add_initializer(m, "Wd", wd);
    rlx_tensor *scales = test_tensor_f32(1, (const int64_t[]){ 4 }, (const float[]){ 1, 1, 2, 2 });
    st = st ? st : rlx_model_add_initializer(m, "scales", scales);
    rlx_tensor_destroy(scales);
    rlx_tensor_destroy(wd);
    rlx_tensor_destroy(sb);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(c);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(bias);
    rlx_tensor_destroy(idx);
    const int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr ca[] = { RLX_ATTR_IS("pads", 4, pads) };
    st = st ? st : rlx_model_add_node(m, "MatMul", "mm", 2, (const char *[]){ "a", "B" }, 1, (const char *[]){ "p" }, 0, NULL);
    st = st ? st : rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "p" }, 1, (const char *[]){ "r" }, 0, NULL);
    st = st ? st : rlx_model_add_node(m, "MatMul", "gemv", 2, (const char *[]){ "row", "C" }, 1, (const char *[]){ "g" }, 0, NULL);
    st = st ? st : rlx_model_add_node(m, "Conv", "conv", 3, (const char *[]){ "x", "W", "bias" }, 1, (const char *[]){ "cv" }, 1, ca);
    rlx_attr da[] = { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_I("group", 8) };
    st = st ? st : rlx_model_add_node(m, "Conv", "dw", 2, (const char *[]){ "x", "Wd" }, 1, (const char *[]){ "dwy" }, 2, da);
    st = st ? st : rlx_model_add_node(m, "Sigmoid", "sig", 1, (const char *[]){ "x" }, 1, (const char *[]){ "s" }, 0, NULL);
    st = st ? st : rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "s", "sb" }, 1, (const char *[]){ "sx" }, 0, NULL);
    rlx_attr ga[] = { RLX_ATTR_I("axis", 0) };
    st = st ? st : rlx_model_add_node(m, "Gather", "gather", 2, (const char *[]){ "r", "idx" }, 1, (const char *[]){ "gt" }, 1, ga);
    /* a kernel not audited: a nearest Resize (resize.wgsl) */
    rlx_attr ra[] = { RLX_ATTR_S("mode", "nearest") };
    st = st ? st : rlx_model_add_node(m, "Resize", "resize", 3, (const char *[]){ "x", "", "scales" }, 1, (const char *[]){ "rs" }, 1, ra);
    /* row kernels and pools: Softmax of the GEMM's rows (norm.wgsl, 47 per
     * row), a 3x3 MaxPool of the convolution (pool2d.wgsl, 11 columns: a
     * last group of three), a GlobalAveragePool of the depthwise output */
    rlx_attr sa[] = { RLX_ATTR_I("axis", -1) };
    st = st ? st : rlx_model_add_node(m, "Softmax", "softmax", 1, (const char *[]){ "r" }, 1, (const char *[]){ "sm" }, 1, sa);
    const int64_t k3[2] = { 3, 3 };
    rlx_attr pa[] = { RLX_ATTR_IS("kernel_shape", 2, k3), RLX_ATTR_IS("pads", 4, pads) };
    st = st ? st : rlx_model_add_node(m, "MaxPool", "pool", 1, (const char *[]){ "cv" }, 1, (const char *[]){ "mp" }, 2, pa);
    st = st ? st : rlx_model_add_node(m, "GlobalAveragePool", "gap", 1, (const char *[]){ "dwy" }, 1, (const char *[]){ "ga" }, 0, NULL);
    const char *outs[] = { "r", "g", "cv", "dwy", "s", "sx", "gt", "sm", "mp", "ga", "rs" };
    for (int i = 0; i < 11 && !st; i++) st = rlx_model_add_output(m, outs[i]);
    st = st ? st : rlx_model_finish(m);
    if (st) {
        fprintf(stderr, "build: %s\n", rlx_last_error());
        rlx_model_destroy(m);
        return NULL;
    }
    return m;
}

#define N_OUT 11

typedef struct run_result {
    rlx_tensor **out;
    size_t n_out;
    size_t n_pipes, n_unchecked;
    char note[256];
} run_result;

/* One run on `device` with gpu.runtime_checks = mode (NULL: unset), the
 * arena poisoned. */
static rlx_status run(const rlx_model *m, const char *device, const char *mode, rlx_tensor *const *in, run_result *r) {
    memset(r, 0, sizeof *r);
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    rlx_status st = rlx_options_create(&o);
    if (!st && mode) st = rlx_options_set(o, "gpu.runtime_checks", mode);
    if (!st && strcmp(device, "cpu")) st = rlx_options_set(o, "gpu.poison", "1");
    if (!st) st = rlx_session_create_with_options(m, &(rlx_session_options){ .device = device }, o, &s);
    const char *names[] = { "a", "row", "x" };
    if (!st) st = rlx_session_run(s, 3, names, (const rlx_tensor *const *)in, &r->out, &r->n_out);
    rlx_session_stats ss;
    if (!st && rlx_session_get_stats(s, &ss) == RLX_OK && ss.has_exe_stats) {
        r->n_pipes = ss.n_pipelines_new + ss.n_pipelines_reused;
        r->n_unchecked = ss.n_pipelines_unchecked;
        snprintf(r->note, sizeof r->note, "%s", ss.runtime_checks_note ? ss.runtime_checks_note : "");
    }
    rlx_session_destroy(s);
    rlx_options_destroy(o);
    return st;
}

static void result_free(run_result *r) {
    for (size_t i = 0; i < r->n_out; i++) rlx_tensor_destroy(r->out[i]);
    free(r->out);
    memset(r, 0, sizeof *r);
}

static bool same_bits(const run_result *a, const run_result *b) {
    if (a->n_out != b->n_out) return false;
    for (size_t i = 0; i < a->n_out; i++)
        if (a->out[i]->nbytes != b->out[i]->nbytes || memcmp(a->out[i]->data, b->out[i]->data, a->out[i]->nbytes))
            return false;
    return true;
}

static void test_option(void) {
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "gpu.runtime_checks", "off"));
    CHECK_OK(rlx_options_set(o, "gpu.runtime_checks", "auto"));
    CHECK_FAILS(rlx_options_set(o, "gpu.runtime_checks", "sometimes"), RLX_ERR_INVALID_ARGUMENT, "gpu.runtime_checks");
    rlx_options_destroy(o);
}

#ifdef RLX_HAVE_WEBGPU
static void test_markers(void) {
    /* audited kernels (embedded) and kernels left to naga's checks */
    const char *audited[] = { "unary", "binary", "gemm_reduce", "gemv", "conv_direct", "im2col", "dwconv",
                              "norm", "norm_split", "reduce", "pool", "pool2d", "global_pool", "global_pool_wg",
                              "lrn", "add_layernorm", "gather", "gather_elements", "gather_nd", "scatter",
                              "onehot", "trilu", "cumsum", "qgemm", "qgemm_dp4", "qdwconv", "qdwconv_dp4", "batchnorm", "quant", "matmul_nbits" };
    const char *checked[] = { "gemm", "matmul", "conv_transpose", "resize", "copy", "cast" };
    for (size_t i = 0; i < sizeof audited / sizeof audited[0]; i++)
        CHECK_MSG(wg_source_audited(wg_wgsl_source(audited[i])), "%s", audited[i]);
    for (size_t i = 0; i < sizeof checked / sizeof checked[0]; i++)
        CHECK_MSG(!wg_source_audited(wg_wgsl_source(checked[i])), "%s", checked[i]);
    /* snippets never carry the claim (it would spread to their includers) */
    const char *snippets[] = { "gemm_common", "gemm_tile",    "bcast",      "conv_params", "act",
                               "index_read",  "norm_rows",    "reduce_index", "global_max", "qgemm_body",
                               "qgemm_wg",    "qgemm_main",   "qrequant",     "qdot",       "qdot_dp4",
                               "qdwconv_body", "row_scale" };
    for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++)
        CHECK_MSG(!wg_source_audited(wg_wgsl_source(snippets[i])), "%s", snippets[i]);
    CHECK(wg_source_audited("// a kernel\n//!audited i < n\nfn f() {}\n"));
    CHECK(!wg_source_audited("// a kernel\n// //!audited in a comment\n"));
    CHECK(!wg_source_audited(NULL));
}
#endif

int main(void) {
    test_seed(test_seed_from_env());
    test_option();
    if (!test_have_gpu()) TEST_MAIN_END();
#ifdef RLX_HAVE_WEBGPU
    test_markers();
    rlx_model *m = build();
    CHECK(m != NULL);
    if (!m) TEST_MAIN_END();
    rlx_tensor *in[3] = {
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ M_, K_ }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 1, KR }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 8, 13, 11 }, -1, 1),
    };
    run_result cpu, on, r;
    CHECK_OK(run(m, "cpu", NULL, in, &cpu));
    CHECK_OK(run(m, "gpu", "on", in, &on));
    CHECK(on.n_out == N_OUT && cpu.n_out == N_OUT);
    for (size_t i = 0; i < on.n_out && i < cpu.n_out; i++)
        CHECK_MSG(test_allclose(on.out[i], cpu.out[i], 1e-5, 2e-6 * sqrt((double)KR)), "output %zu: gpu %g from cpu", i,
                  test_max_abs_diff(on.out[i], cpu.out[i]));
    CHECK_MSG(on.n_pipes > 0 && on.n_unchecked == 0, "on: %s", on.note);
    bool trusted = wg_trusted_available();
    /* unset: auto, the default (the audited kernels unchecked) */
    CHECK_OK(run(m, "gpu", NULL, in, &r));
    CHECK_MSG(same_bits(&r, &on), "the default differs in bits from on");
    if (trusted) CHECK_MSG(r.n_unchecked > 0 && r.n_unchecked < r.n_pipes, "default: %s", r.note);
    CHECK_MSG(strstr(r.note, "gpu.runtime_checks=auto") != NULL, "default: %s", r.note);
    result_free(&r);
    /* auto: the audited kernels unchecked, the Resize's not; off: all */
    CHECK_OK(run(m, "gpu", "auto", in, &r));
    CHECK_MSG(same_bits(&r, &on), "auto differs in bits from on");
    if (trusted) CHECK_MSG(r.n_unchecked > 0 && r.n_unchecked < r.n_pipes, "auto: %s", r.note);
    CHECK_MSG(strstr(r.note, "gpu.runtime_checks=auto") != NULL, "%s", r.note);
    result_free(&r);
    CHECK_OK(run(m, "gpu", "off", in, &r));
    CHECK_MSG(same_bits(&r, &on), "off differs in bits from on");
    if (trusted) CHECK_MSG(r.n_unchecked == r.n_pipes, "off: %s", r.note);
    result_free(&r);

    /* a WebGPU library without the entry point (Dawn): everything checked,
     * said in the note and by rlx_adapters_list */
    wg_trusted_hide_for_test(true);
    CHECK_OK(run(m, "gpu", "off", in, &r));
    CHECK_MSG(same_bits(&r, &on), "off without the entry point differs in bits from on");
    CHECK_MSG(r.n_unchecked == 0 && strstr(r.note, "has no wgpuDeviceCreateShaderModuleTrusted"), "%s", r.note);
    result_free(&r);
    rlx_adapter_info *ad = NULL;
    size_t n_ad = 0;
    CHECK_OK(rlx_adapters_list(&ad, &n_ad));
    for (size_t i = 0; i < n_ad; i++) CHECK(!ad[i].unchecked_shaders);
    free(ad);
    wg_trusted_hide_for_test(false);
    CHECK_OK(rlx_adapters_list(&ad, &n_ad));
    for (size_t i = 0; i < n_ad; i++) CHECK(ad[i].unchecked_shaders == trusted);
    free(ad);

    /* bad input never reaches a kernel: the session refuses it by name */
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "gpu.runtime_checks", "off"));
    CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = "gpu" }, o, &s));
    rlx_tensor *bad = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ M_, K_ - 1 }, -1, 1);
    const rlx_tensor *feeds[3] = { bad, in[1], in[2] };
    rlx_tensor **outs = NULL;
    size_t n_outs = 0;
    CHECK_FAILS(rlx_session_run(s, 3, (const char *[]){ "a", "row", "x" }, feeds, &outs, &n_outs),
                RLX_ERR_INVALID_ARGUMENT, "input 'a'");
    rlx_tensor_destroy(bad);
    rlx_session_destroy(s);
    rlx_options_destroy(o);

    result_free(&on);
    result_free(&cpu);
    for (int i = 0; i < 3; i++) rlx_tensor_destroy(in[i]);
    rlx_model_destroy(m);
#endif
    TEST_MAIN_END();
}
