#define _POSIX_C_SOURCE 200809L
/* Session options (rlx_options, include/rlx/rlx.h; src/base/options.c):
 *  - set/get/parse validate keys and values, and a refusal names the key
 *    and the accepted values;
 *  - every key in the listing has a type, accepted values, a default that
 *    its own validation accepts, an environment variable and a doc line;
 *  - a bad environment value is refused when a session is created, naming
 *    the variable; an explicit option wins over the environment;
 *  - two sessions of one process differ: passes.disable=fuse_activation in
 *    one, nothing in the other, both give the same output, and their
 *    dispatch reports and plans differ; on the GPU (when there is one)
 *    gpu.disable=Relu sends a step to the CPU in one session only;
 *  - per-process keys (cpu.pool_spin_us) refuse a value the process does not
 *    use;
 *  - cpu.winograd=0 keeps a 3x3 convolution that would run as Winograd
 *    (64 -> 64 channels on 56 x 56: F(2x2, 3x3) by default, F(4x4, 3x3)
 *    by shape with cpu.winograd_f4x4=1, which gives other bits) on its
 *    implicit GEMM, per session, and both give the same output within the
 *    conv tests' F(4x4) tolerance; an input
 *    with an inf, or with +-3e38 two columns apart, and a weight that is
 *    inf keep the convolution off Winograd (whose transforms would give
 *    NaN for inf or overflow): the same infs, no NaN, as cpu.winograd=0. */
#include "test.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_qgemm.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "plan/program.h"
#include "runtime/exec.h"
#include "runtime/session.h"

/* y = Relu(Conv(x, w)): fuse_activation makes it one Conv node. */
static rlx_model *conv_relu(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 3, 8, 8 }, NULL));
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 4, 3, 3, 3 }, -1, 1);
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    rlx_tensor_destroy(w);
    CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "c" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "c" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

static void test_set_get(void) {
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    const char *v = "x";
    CHECK_OK(rlx_options_get(o, "gpu.f16", &v));
    CHECK(v == NULL);
    CHECK_OK(rlx_options_set(o, "gpu.f16", "1"));
    CHECK_OK(rlx_options_get(o, "gpu.f16", &v));
    CHECK(v && strcmp(v, "1") == 0);
    CHECK_OK(rlx_options_set(o, "gpu.f16", NULL));
    CHECK_OK(rlx_options_get(o, "gpu.f16", &v));
    CHECK(v == NULL);
    CHECK_FAILS(rlx_options_set(o, "gpu.f61", "1"), RLX_ERR_INVALID_ARGUMENT, "unknown option 'gpu.f61'");
    CHECK_FAILS(rlx_options_get(o, "nope", &v), RLX_ERR_INVALID_ARGUMENT, "unknown option 'nope'");
    CHECK_FAILS(rlx_options_set(o, "gpu.f16", "maybe"), RLX_ERR_INVALID_ARGUMENT, "gpu.f16='maybe': expected 1 or 0");
    CHECK_FAILS(rlx_options_set(o, "gpu.conv_algo", "winograd"), RLX_ERR_INVALID_ARGUMENT,
                "expected one of auto|direct|im2col|implicit");
    CHECK_FAILS(rlx_options_set(o, "gpu.spin_us", "-1"), RLX_ERR_INVALID_ARGUMENT, "from 0 to 1000000");
    CHECK_FAILS(rlx_options_set(o, "gpu.spin_us", "12us"), RLX_ERR_INVALID_ARGUMENT, "gpu.spin_us='12us'");
    CHECK_FAILS(rlx_options_set(o, "gpu.spin_us", "auto"), RLX_ERR_INVALID_ARGUMENT, "gpu.spin_us='auto'");
    CHECK_OK(rlx_options_set(o, "gpu.gemm_splitk", "auto"));
    CHECK_OK(rlx_options_set(o, "gpu.max_binding_bytes", "0x1000"));
    CHECK_FAILS(rlx_options_set(o, "gpu.max_binding_bytes", "100"), RLX_ERR_INVALID_ARGUMENT, "from 256");
    CHECK_FAILS(rlx_options_set(o, "passes.disable", "cse,fuse_elementwse"), RLX_ERR_INVALID_ARGUMENT,
                "'fuse_elementwse' is not a pass");
    CHECK_FAILS(rlx_options_set(o, "gpu.attention_tile", "3x3"), RLX_ERR_INVALID_ARGUMENT, "expected BQxBK");
    /* sscanf's %u took "-1" as 4294967295: signs and spaces are refused */
    CHECK_OK(rlx_options_set(o, "gpu.attention_tile", "8x16"));
    static const char *const bad_att[] = { "8x-1", "+8x8", " 8x8", "8x 8", "8x8 " };
    for (size_t i = 0; i < sizeof bad_att / sizeof bad_att[0]; i++)
        CHECK_FAILS(rlx_options_set(o, "gpu.attention_tile", bad_att[i]), RLX_ERR_INVALID_ARGUMENT, "expected BQxBK");
    CHECK_OK(rlx_options_set(o, "gpu.attention_tile", NULL));
    /* gpu.gemm_tile's form is checked when set (a malformed tile used to send every GEMM to the CPU, silently) */
    CHECK_OK(rlx_options_set(o, "gpu.gemm_tile", "4x4,16x16,16"));
    CHECK_OK(rlx_options_set(o, "gpu.gemm_tile", ""));
    static const char *const bad_tiles[] = { "foo", "4x4,16x16", "4x4,16x16,16,", "3x4,16x16,16", "4x4,0x16,16",
                                             "4x4,16x16,6", "4x4,16x16,-4", " 4x4,16x16,16", "4x4,16x16,16x" };
    for (size_t i = 0; i < sizeof bad_tiles / sizeof bad_tiles[0]; i++)
        CHECK_FAILS(rlx_options_set(o, "gpu.gemm_tile", bad_tiles[i]), RLX_ERR_INVALID_ARGUMENT,
                    "expected TMxTN,WGXxWGY,BK");
    /* gpu.f16_accumulate is f32 or f16; gpu.f16_block 4 .. 65536 (its fit to the tile is checked when lowering) */
    CHECK_OK(rlx_options_set(o, "gpu.f16_accumulate", "f16"));
    CHECK_OK(rlx_options_set(o, "gpu.f16_accumulate", "f32"));
    CHECK_FAILS(rlx_options_set(o, "gpu.f16_accumulate", "bf16"), RLX_ERR_INVALID_ARGUMENT, "gpu.f16_accumulate");
    CHECK_OK(rlx_options_set(o, "gpu.f16_block", "16"));
    CHECK_FAILS(rlx_options_set(o, "gpu.f16_block", "2"), RLX_ERR_INVALID_ARGUMENT, "gpu.f16_block");
    CHECK_FAILS(rlx_options_set(o, "gpu.f16_block", "100000"), RLX_ERR_INVALID_ARGUMENT, "gpu.f16_block");
    /* a refused value leaves the old one */
    CHECK_OK(rlx_options_set(o, "gpu.conv_algo", "direct"));
    CHECK_FAILS(rlx_options_set(o, "gpu.conv_algo", "fft"), RLX_ERR_INVALID_ARGUMENT, "gpu.conv_algo='fft'");
    CHECK_OK(rlx_options_get(o, "gpu.conv_algo", &v));
    CHECK(v && strcmp(v, "direct") == 0);
    CHECK_OK(rlx_options_parse(o, "debug.dump_ir=0"));
    CHECK_OK(rlx_options_get(o, "debug.dump_ir", &v));
    CHECK(v && strcmp(v, "0") == 0);
    CHECK_FAILS(rlx_options_parse(o, "debug.dump_ir"), RLX_ERR_INVALID_ARGUMENT, "expected KEY=VALUE");
    CHECK_FAILS(rlx_options_parse(o, "=1"), RLX_ERR_INVALID_ARGUMENT, "expected KEY=VALUE");
    /* rlx_options_check_limit: a key that is an option but no limit is named as such (it was "unknown option") */
    CHECK_OK(rlx_options_set(o, "limits.max_tensor_bytes", "1K"));
    CHECK_OK(rlx_options_check_limit(o, "limits.max_tensor_bytes", 1024, "a tensor"));
    CHECK_FAILS(rlx_options_check_limit(o, "limits.max_tensor_bytes", 1025, "a tensor"), RLX_ERR_OUT_OF_MEMORY,
                "a tensor");
    CHECK_FAILS(rlx_options_check_limit(o, "cpu.threads", 1, "x"), RLX_ERR_INVALID_ARGUMENT,
                "option 'cpu.threads' is not a limit");
    CHECK_FAILS(rlx_options_check_limit(o, "limits.max_nothing", 1, "x"), RLX_ERR_INVALID_ARGUMENT,
                "unknown option 'limits.max_nothing'");
    CHECK_FAILS(rlx_options_check_limit(o, NULL, 1, "x"), RLX_ERR_INVALID_ARGUMENT, "unknown option");
    rlx_options_destroy(o);
    rlx_options_destroy(NULL);
}

/* Every key is documented and its default passes its own validation. */
static void test_listing(void) {
    size_t n = rlx_option_count();
    CHECK_MSG(n >= 35, "%zu keys", n);
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    for (size_t i = 0; i < n; i++) {
        rlx_option_info info;
        CHECK_OK(rlx_option_info_get(i, &info));
        CHECK_MSG(info.key && info.type && info.values && info.default_value && info.env && info.doc && *info.doc,
                  "key %zu (%s) is missing a field", i, info.key ? info.key : "?");
        CHECK_MSG(info.env && strncmp(info.env, "RLX_", 4) == 0, "%s: environment variable %s", info.key, info.env);
        if (info.key && info.default_value) CHECK_OK(rlx_options_set(o, info.key, info.default_value));
    }
    /* enum values are exact words, case and all (as every value, key and
     * --device): a word in capitals is refused with the list of the words */
    size_t n_enum_checked = 0;
    for (size_t i = 0; i < n; i++) {
        rlx_option_info info;
        CHECK_OK(rlx_option_info_get(i, &info));
        if (!info.type || strcmp(info.type, "enum") != 0 || !info.values) continue;
        char up[64] = "", want[512];
        for (const char *w = info.values; *w && !up[0];) { /* the first word with a letter, in capitals */
            size_t len = strcspn(w, "|"), k;
            bool letter = false;
            for (k = 0; k < len && k + 1 < sizeof up; k++) {
                up[k] = (char)toupper((unsigned char)w[k]);
                letter |= up[k] != w[k];
            }
            up[letter ? k : 0] = 0;
            w += len + (w[len] == '|');
        }
        if (!up[0]) continue; /* numbers only (gpu.coop_sg) */
        snprintf(want, sizeof want, "%s='%s': expected one of %s", info.key, up, info.values);
        CHECK_FAILS(rlx_options_set(o, info.key, up), RLX_ERR_INVALID_ARGUMENT, want);
        n_enum_checked++;
    }
    CHECK_MSG(n_enum_checked >= 10, "%zu enum options with a word of letters", n_enum_checked);
    CHECK_FAILS(rlx_options_set(o, "gpu.nbits", "GEMV"), RLX_ERR_INVALID_ARGUMENT,
                "gpu.nbits='GEMV': expected one of auto|gemv|"); /* (the list: the loop above) */
    rlx_option_info info;
    CHECK_FAILS(rlx_option_info_get(n, &info), RLX_ERR_INVALID_ARGUMENT, "option index");
    rlx_options_destroy(o);
}

/* A session with key = value (key NULL: none) and "KEY=VALUE" `more`. */
static rlx_session *session2(const rlx_model *m, const char *device, const char *key, const char *value,
                             const char *more) {
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    if (key) CHECK_OK(rlx_options_set(o, key, value));
    if (more) CHECK_OK(rlx_options_parse(o, more));
    rlx_session_options so = { .device = device };
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_options_destroy(o);
    return s;
}

static rlx_session *session(const rlx_model *m, const char *device, const char *key, const char *value) {
    return session2(m, device, key, value, NULL);
}

static rlx_tensor *run1(rlx_session *s, const rlx_tensor *x) {
    rlx_tensor **out = NULL;
    size_t n = 0;
    const char *names[1] = { "x" };
    if (!s) return NULL;
    CHECK_OK(rlx_session_run(s, 1, names, &x, &out, &n));
    rlx_tensor *y = n == 1 ? out[0] : NULL;
    free(out);
    return y;
}

static size_t steps_of(const rlx_session *s) {
    const rlx_program *p = s ? rlx_session_last_program(s) : NULL;
    return p ? p->n_steps : 0;
}

static void test_two_sessions(const rlx_model *m) {
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 3, 8, 8 }, -1, 1);
    rlx_session *a = session(m, "cpu", "passes.disable", "fuse_activation"), *b = session(m, "cpu", NULL, NULL);
    rlx_tensor *ya = run1(a, x), *yb = run1(b, x);
    /* the Relu fused into the Conv's epilogue or run after it: rtol 1e-6 */
    CHECK(ya && yb && test_allclose(ya, yb, 1e-6, 1e-7));
    CHECK_MSG(steps_of(a) == 2 && steps_of(b) == 1, "steps %zu (fuse_activation off) and %zu (on)", steps_of(a),
              steps_of(b));
    int nodes_a = 0, native_a = 0, nodes_b = 0, native_b = 0;
    test_report_counts(a ? rlx_session_dispatch_report(a) : "", "Relu", &nodes_a, &native_a);
    test_report_counts(b ? rlx_session_dispatch_report(b) : "", "Relu", &nodes_b, &native_b);
    CHECK_MSG(native_a == 1 && native_b == 0, "Relu native %d (pass off) and %d (pass on)", native_a, native_b);
    rlx_tensor_destroy(ya);
    rlx_tensor_destroy(yb);
    rlx_session_destroy(a);
    rlx_session_destroy(b);

    /* an explicit option wins over the environment */
    setenv("RLX_DISABLE_PASSES", "fuse_activation", 1);
    a = session(m, "cpu", "passes.disable", "");
    b = session(m, "cpu", NULL, NULL);
    unsetenv("RLX_DISABLE_PASSES");
    rlx_tensor_destroy(run1(a, x));
    rlx_tensor_destroy(run1(b, x));
    CHECK_MSG(steps_of(a) == 1 && steps_of(b) == 2, "steps %zu (option '') and %zu (environment)", steps_of(a),
              steps_of(b));
    rlx_session_destroy(a);
    rlx_session_destroy(b);

    if (test_have_gpu()) { /* one GPU session sends Relu to the CPU, the other does not */
        a = session2(m, "gpu", "gpu.disable", "Relu,rlx.FusedElementwise", "passes.disable=fuse_activation");
        b = session(m, "gpu", "passes.disable", "fuse_activation");
        ya = run1(a, x), yb = run1(b, x);
        /* the same kernels and order on the GPU, Relu exact on the CPU */
        CHECK(ya && yb && test_allclose(ya, yb, 1e-6, 1e-7));
        rlx_exe_stats ea = { 0 }, eb = { 0 };
        rlx_exec *xa = a ? rlx_session_last_exec(a) : NULL, *xb = b ? rlx_session_last_exec(b) : NULL;
        if (xa && xb) {
            rlx_exec_stats(xa, &ea);
            rlx_exec_stats(xb, &eb);
        }
        CHECK_MSG(ea.n_cpu_steps == 1 && eb.n_cpu_steps == 0, "CPU steps %zu (gpu.disable=Relu) and %zu", ea.n_cpu_steps,
                  eb.n_cpu_steps);
        rlx_tensor_destroy(ya);
        rlx_tensor_destroy(yb);
        rlx_session_destroy(a);
        rlx_session_destroy(b);
    } else {
        fprintf(stderr, "no GPU adapter: the GPU half of the two-session check is skipped\n");
    }
    rlx_tensor_destroy(x);
}

/* Whether a and b have infs of the same signs and NaNs in the same places,
 * and no NaN where the other is finite, and their finite values agree
 * within rtol / atol. */
static bool same_nonfinite(const rlx_tensor *a, const rlx_tensor *b, double rtol, double atol) {
    if (!a || !b || rlx_tensor_numel(a) != rlx_tensor_numel(b)) return false;
    const float *x = a->data, *y = b->data;
    for (size_t i = 0; i < rlx_tensor_numel(a); i++) {
        if (isnan(x[i]) || isnan(y[i]) || isinf(x[i]) || isinf(y[i])) {
            if (!(isnan(x[i]) && isnan(y[i])) && x[i] != y[i]) return false;
        } else if (fabs((double)x[i] - y[i]) > atol + rtol * fabs((double)y[i])) {
            return false;
        }
    }
    return true;
}

static rlx_model *conv3x3_model(const int64_t *xd, float w_inf) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 64, 64, 3, 3 }, -0.1, 0.1);
    if (w && w_inf != 0.0f) ((float *)w->data)[(4 * 64 + 3) * 9 + 4] = w_inf; /* channel 4's centre tap */
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    rlx_tensor_destroy(w);
    rlx_attr pads = RLX_ATTR_IS("pads", 4, ((const int64_t[]){ 1, 1, 1, 1 }));
    CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "y" }, 1,
                                &pads));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* The option of the "on" sessions below: NULL (the default, F(2x2)) or
 * cpu.winograd_f4x4 (F(4x4) where it pays). */
static const char *g_wino_key;

/* Runs x through m with cpu.winograd on and off: the Winograd runs the
 * on-session made, and both outputs. */
static size_t winograd_on_off(const rlx_model *m, const rlx_tensor *x, rlx_tensor **y_on, rlx_tensor **y_off) {
    rlx_session *on = session(m, "cpu", g_wino_key, "1"), *off = session(m, "cpu", "cpu.winograd", "0");
    size_t r0 = rlx_nn_wino_runs();
    *y_on = run1(on, x);
    size_t r1 = rlx_nn_wino_runs();
    *y_off = run1(off, x);
    CHECK_MSG(rlx_nn_wino_runs() == r1, "cpu.winograd=0: %zu Winograd runs", rlx_nn_wino_runs() - r1);
    rlx_session_destroy(on);
    rlx_session_destroy(off);
    return r1 - r0;
}

static void test_winograd_option(const char *key) {
    g_wino_key = key;
    const int64_t xd[4] = { 1, 64, 56, 56 };
    rlx_model *m = conv3x3_model(xd, 0.0f);
    if (!m) return;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_session *on = session(m, "cpu", key, "1"), *off = session(m, "cpu", "cpu.winograd", "0");
    size_t r0 = rlx_nn_wino_runs();
    rlx_tensor *y_on = run1(on, x);
    size_t r1 = rlx_nn_wino_runs();
    rlx_tensor *y_off = run1(off, x);
    size_t r2 = rlx_nn_wino_runs();
    /* Winograd needs rlx's AVX-512 sgemm kernel on its own pool */
    bool can = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512 && rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL;
    CHECK_MSG(r1 - r0 == (can ? 1u : 0u), "cpu.winograd=1: %zu Winograd runs", r1 - r0);
    CHECK_MSG(r2 == r1, "cpu.winograd=0: %zu Winograd runs", r2 - r1);
    /* 576 products per output: the conv tests' F(4x4) tolerance, 1e-5
     * relative + 8e-6 K */
    CHECK(y_on && y_off && test_allclose(y_on, y_off, 1e-5, 8e-6 * 576));
    rlx_tensor_destroy(y_on);
    rlx_tensor_destroy(y_off);
    rlx_session_destroy(on);
    rlx_session_destroy(off);

    /* inputs Winograd's transforms cannot take: its sessions run the other path */
    float *xv = x ? x->data : NULL;
    for (int wild = 0; xv && wild < 2; wild++) {
        size_t at = (5 * 56 + 20) * 56 + 20; /* channel 5, row 20, column 20 */
        xv[at] = wild == 0 ? INFINITY : 3e38f;
        xv[at + 2] = wild == 0 ? 1.0f : -3e38f;
        size_t runs = winograd_on_off(m, x, &y_on, &y_off);
        CHECK_MSG(runs == 0, "%s input: %zu Winograd runs", wild == 0 ? "an inf" : "a +-3e38", runs);
        CHECK_MSG(same_nonfinite(y_on, y_off, 1e-5, 8e-6 * 576), "%s input: not the outputs of cpu.winograd=0",
                  wild == 0 ? "an inf" : "a +-3e38");
        rlx_tensor_destroy(y_on);
        rlx_tensor_destroy(y_off);
        xv[at] = 0.5f, xv[at + 2] = 0.5f;
    }
    rlx_model_destroy(m);
    /* an inf weight: never packed for Winograd */
    m = conv3x3_model(xd, INFINITY);
    if (m && x) {
        size_t runs = winograd_on_off(m, x, &y_on, &y_off);
        CHECK_MSG(runs == 0, "an inf weight: %zu Winograd runs", runs);
        CHECK_MSG(same_nonfinite(y_on, y_off, 1e-5, 8e-6 * 576), "an inf weight: not the outputs of cpu.winograd=0");
        rlx_tensor_destroy(y_on);
        rlx_tensor_destroy(y_off);
    }
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
}

/* cpu.winograd_f4x4=1 changes the path (F(4x4): other bits than the
 * default's F(2x2)) and the default does not take it. */
static void test_winograd_f4x4_bits(void) {
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return;
    const int64_t xd[4] = { 1, 64, 56, 56 };
    rlx_model *m = conv3x3_model(xd, 0.0f);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_session *d = m ? session(m, "cpu", NULL, NULL) : NULL, *f4 = m ? session(m, "cpu", "cpu.winograd_f4x4", "1") : NULL;
    rlx_tensor *yd = d && x ? run1(d, x) : NULL, *y4 = f4 && x ? run1(f4, x) : NULL;
    CHECK(yd && y4);
    if (yd && y4) CHECK_MSG(memcmp(yd->data, y4->data, yd->nbytes) != 0,
                            "cpu.winograd_f4x4=1 gave the default's bits: F(4x4) not taken");
    rlx_tensor_destroy(yd);
    rlx_tensor_destroy(y4);
    rlx_session_destroy(d);
    rlx_session_destroy(f4);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

static void test_environment(const rlx_model *m) {
    rlx_session *s = NULL;
    rlx_session_options so = { .device = "cpu" };
    setenv("RLX_CPU_GEMM", "openblas", 1);
    CHECK_FAILS(rlx_session_create(m, &so, &s), RLX_ERR_INVALID_ARGUMENT, "RLX_CPU_GEMM='openblas' (option cpu.gemm)");
    unsetenv("RLX_CPU_GEMM");
    setenv("RLX_GPU_NBITS", "GEMV", 1); /* words are exact, from the environment too */
    CHECK_FAILS(rlx_session_create(m, &so, &s), RLX_ERR_INVALID_ARGUMENT,
                "RLX_GPU_NBITS='GEMV' (option gpu.nbits): expected one of auto|gemv|");
    unsetenv("RLX_GPU_NBITS");
    setenv("RLX_GPU_TRACE", "yes please", 1);
    CHECK_FAILS(rlx_session_create(m, &so, &s), RLX_ERR_INVALID_ARGUMENT, "RLX_GPU_TRACE='yes please'");
    /* the explicit option replaces the environment's value, bad or not */
    rlx_session *t = session(m, "cpu", "gpu.trace", "0");
    CHECK(t != NULL);
    rlx_session_destroy(t);
    unsetenv("RLX_GPU_TRACE");
    setenv("RLX_GEMM_TILE", "zzz", 1);
    CHECK_FAILS(rlx_session_create(m, &so, &s), RLX_ERR_INVALID_ARGUMENT, "RLX_GEMM_TILE='zzz' (option gpu.gemm_tile)");
    unsetenv("RLX_GEMM_TILE");
    /* gpu.disable names op types: a typo ("conv") was ignored silently */
    setenv("RLX_GPU_DISABLE", "Conv,conv", 1);
    CHECK_FAILS(rlx_session_create(m, &so, &s), RLX_ERR_INVALID_ARGUMENT,
                "RLX_GPU_DISABLE='Conv,conv' (option gpu.disable): 'conv' is not an op type rlx knows");
    unsetenv("RLX_GPU_DISABLE");
    /* ... and an explicit value is refused when it is set, as every other
     * key's (it was taken, and every later session made with the options
     * object failed) */
    rlx_options *od = NULL;
    CHECK_OK(rlx_options_create(&od));
    CHECK_FAILS(rlx_options_set(od, "gpu.disable", "Relu,NotAnOp"), RLX_ERR_INVALID_ARGUMENT,
                "gpu.disable='Relu,NotAnOp': 'NotAnOp' is not an op type rlx knows");
    CHECK_OK(rlx_options_set(od, "gpu.disable", "Attention,QLinearConv"));
    /* domain.type, as `rlx ops` and the dispatch report print ops outside
     * the default domain (a tester's finding: rlx.FusedElementwise was refused) */
    CHECK_OK(rlx_options_set(od, "gpu.disable", "rlx.FusedElementwise,com.microsoft.MatMulNBits,Relu"));
    CHECK_FAILS(rlx_options_set(od, "gpu.disable", "Relu,rlx.NotAnOp"), RLX_ERR_INVALID_ARGUMENT,
                "'rlx.NotAnOp' is not an op type rlx knows");
    CHECK_FAILS(rlx_options_set(od, "gpu.disable", "rlx."), RLX_ERR_INVALID_ARGUMENT,
                "'rlx.' is not an op type rlx knows");
    rlx_options_destroy(od);
    t = session(m, "cpu", "gpu.disable", "Conv,,Relu,FusedElementwise");
    CHECK(t != NULL);
    rlx_session_destroy(t);
    /* rlx_options_effective: the value set, else the variable's, else NULL */
    rlx_options *e = NULL;
    const char *v = NULL;
    bool from_env = true;
    CHECK_OK(rlx_options_create(&e));
    CHECK_OK(rlx_options_effective(e, "progress", &v, &from_env));
    CHECK(v == NULL && !from_env);
    setenv("RLX_PROGRESS", "on", 1);
    CHECK_OK(rlx_options_effective(NULL, "progress", &v, &from_env));
    CHECK(v && strcmp(v, "on") == 0 && from_env);
    CHECK_OK(rlx_options_set(e, "progress", "off"));
    CHECK_OK(rlx_options_effective(e, "progress", &v, &from_env));
    CHECK(v && strcmp(v, "off") == 0 && !from_env);
    unsetenv("RLX_PROGRESS");
    CHECK_FAILS(rlx_options_effective(e, "no.such", &v, NULL), RLX_ERR_INVALID_ARGUMENT, "no.such");
    rlx_options_destroy(e);
    /* cpu.threads is per session (tests/test_session_threads.c): another
     * count than the pool's is accepted; the pool's spin is per process, and
     * another value is refused */
    int now = rlx_parallel_threads();
    char other[16];
    snprintf(other, sizeof other, "%d", now > 1 ? now - 1 : 2);
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "cpu.threads", other));
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_session_destroy(s);
    s = NULL;
    CHECK_OK(rlx_options_set(o, "cpu.pool_spin_us", "7"));
    CHECK_FAILS(rlx_session_create_with_options(m, &so, o, &s), RLX_ERR_INVALID_ARGUMENT, "cpu.pool_spin_us=7");
    CHECK(s == NULL);
    rlx_options_destroy(o);
    /* the int8 kernel is per process too: the first session fixed it (auto:
     * the process's pick, which "portable" is not where a faster one runs);
     * the same name and auto are accepted, another one refused, and the
     * kernel in use does not change (a tester found that every session
     * reset it, so an earlier session's runs changed kernel silently) */
    rlx_cpu_qgemm_kernel fixed = rlx_cpu_qgemm_kernel_get();
    const char *names[] = { "portable", "avx2", "vnni", "amx" };
    o = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "cpu.qgemm_kernel", "auto"));
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_session_destroy(s);
    s = NULL;
    CHECK_OK(rlx_options_set(o, "cpu.qgemm_kernel", names[fixed]));
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_session_destroy(s);
    s = NULL;
    if (fixed != RLX_CPU_QGEMM_PORTABLE) {
        CHECK_OK(rlx_options_set(o, "cpu.qgemm_kernel", "portable"));
        CHECK_FAILS(rlx_session_create_with_options(m, &so, o, &s), RLX_ERR_INVALID_ARGUMENT,
                    "cpu.qgemm_kernel=portable: the int8 kernel is per process");
        CHECK(s == NULL);
    }
    CHECK(rlx_cpu_qgemm_kernel_get() == fixed);
    rlx_options_destroy(o);
    /* the AVX-512 GEMM tile likewise: the sessions above fixed the default
     * (8x32; the environment's where RLX_CPU_SGEMM_TILE is set) */
    const char *tile = rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile_get());
    const char *other_tile = strcmp(tile, "8x32") == 0 ? "8x48" : "8x32";
    o = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "cpu.sgemm_tile", tile));
    CHECK_OK(rlx_session_create_with_options(m, &so, o, &s));
    rlx_session_destroy(s);
    s = NULL;
    CHECK_OK(rlx_options_set(o, "cpu.sgemm_tile", other_tile));
    CHECK_FAILS(rlx_session_create_with_options(m, &so, o, &s), RLX_ERR_INVALID_ARGUMENT, "per process");
    CHECK(s == NULL);
    CHECK(strcmp(rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile_get()), tile) == 0);
    CHECK_FAILS(rlx_options_set(o, "cpu.sgemm_tile", "12x32"), RLX_ERR_INVALID_ARGUMENT, "cpu.sgemm_tile");
    rlx_options_destroy(o);
}

int main(void) {
    test_seed_from_env();
    test_set_get();
    test_listing();
    rlx_model *m = conv_relu();
    if (m) {
        test_two_sessions(m);
        test_environment(m);
    }
    rlx_model_destroy(m);
    test_winograd_option(NULL);
    test_winograd_option("cpu.winograd_f4x4");
    test_winograd_f4x4_bits();
    TEST_MAIN_END();
}
