/* WebGPU backend: adapters, every lowered op against the CPU backend or an
 * independent C reference, direct vs im2col + GEMM convolution bit for bit,
 * CPU-fallback segments, grid folding past 65,535 workgroups, a lowered
 * binding limit (option gpu.max_binding_bytes), and adapter errors.
 *
 * Runs on whatever adapter "gpu" finds (lavapipe on CI); skips with a
 * message when there is none, unless RLX_TEST_REQUIRE_GPU=1. GPU arenas are
 * poisoned with NaN at compile (option gpu.poison) so an element a kernel
 * forgets to write fails the comparison. Inputs are small: lavapipe is a
 * software rasteriser. Ops whose IR entry does not exist yet on this branch
 * are run through a one-node program built here (run_raw). */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "gpu_node.h"

#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"
#endif
#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "plan/plan.h"

/* ------------------------------------------------------------ runners */

typedef struct run_opts {
    const char *device;
    bool conv_direct;
    bool expect_native; /* every node of `op` must run on the device */
} run_opts;

/* The key/value options of every session and backend here (main sets
 * them: the arena starts as NaN, gpu.poison; bindings as large as the
 * device allows); a test sets a key for its runs and unsets it after. */
static rlx_options *g_opts;

/* One-node model through the public builder (test_run_op_opts) with the
 * session options of ro and g_opts, and a check that the node ran
 * natively on the GPU (ro->expect_native). */
static rlx_status run_op(const char *op, int64_t opset, const run_opts *ro, int n_in, const rlx_tensor *const *in,
                         const int *konst, int n_out, size_t n_attrs, const rlx_attr *attrs, rlx_tensor ***out) {
    rlx_session_options o = { .device = ro->device, .gpu_conv_direct = ro->conv_direct };
    return test_run_op_opts(op, opset, &o, g_opts, ro->expect_native, n_in, in, konst, n_out, n_attrs, attrs, out);
}

static const run_opts k_gpu = { "gpu", false, true };
static const run_opts k_gpu_direct = { "gpu", true, true };
static const run_opts k_cpu = { "cpu", false, false };

/* GPU against the CPU backend, n_out outputs, |g - c| <= atol + rtol |c|. */
static void gpu_vs_cpu_n(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                         const int *konst, int n_out, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    rlx_tensor **c = NULL, **g = NULL;
    rlx_status sc = run_op(op, opset, &k_cpu, n_in, in, konst, n_out, n_attrs, attrs, &c);
    CHECK_MSG(sc == RLX_OK, "%s on cpu: %s", label, rlx_last_error());
    rlx_status sg = run_op(op, opset, &k_gpu, n_in, in, konst, n_out, n_attrs, attrs, &g);
    CHECK_MSG(sg == RLX_OK, "%s on gpu: %s", label, rlx_last_error());
    for (int i = 0; c && g && i < n_out; i++)
        CHECK_MSG(test_allclose(g[i], c[i], rtol, atol), "%s: output %d: gpu differs from cpu (rtol %g, atol %g)",
                  label, i, rtol, atol);
    test_free_outputs(c, n_out);
    test_free_outputs(g, n_out);
}

static void gpu_vs_cpu(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                       const int *konst, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    gpu_vs_cpu_n(label, op, opset, n_in, in, konst, 1, n_attrs, attrs, rtol, atol);
}

/* ---------------------------------------------- one-node programs (no IR) */

static rlx_backend *g_be; /* shared by run_raw */

/* Runs one node of `op` (since-version `version`) that has no IR entry yet
 * on g_be (gpu_node.h run_node_dt: the graph built by hand with the given
 * output dtype and shape, the backend must support the node). Inputs with
 * konst[i] become constants. attrs are adopted. */
static rlx_status run_raw(const char *op, int version, int n_in, const rlx_tensor *const *in, const int *konst,
                          rlx_dtype out_dt, int out_rank, const int64_t *out_dims, int n_attrs, rlx_node_attr *attrs,
                          rlx_tensor **out) {
    return run_node_dt(g_be, op, version, n_in, in, konst, out_dt, out_rank, out_dims, n_attrs, attrs, out, NULL);
}

/* ------------------------------------------------------------ index helpers */

static void unravel(size_t i, const int64_t *dims, int rank, int64_t *c) {
    for (int d = rank - 1; d >= 0; d--) {
        c[d] = (int64_t)(i % (size_t)dims[d]);
        i /= (size_t)dims[d];
    }
}

static size_t ravel(const int64_t *c, const int64_t *dims, int rank) {
    size_t i = 0;
    for (int d = 0; d < rank; d++) i = i * (size_t)dims[d] + (size_t)c[d];
    return i;
}

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static rlx_tensor *ints_tensor_raw(int n, const int64_t *v) {
    int64_t d[1] = { n };
    return test_tensor_i64(1, d, v);
}

/* ------------------------------------------------------------ adapters */

static void test_adapters(void) {
    rlx_adapter_info *a = NULL;
    size_t n = 0;
    CHECK_OK(rlx_adapters_list(&a, &n));
    CHECK(n >= 1);
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "  gpu:%zu %s | %s | %s, %s | vendor %04x device %04x | binding %llu, buffer %llu, groups/dim "
                        "%u | f16 %d subgroups %d timestamp %d coop-matrix %d\n",
                i, a[i].name, a[i].driver, a[i].backend, a[i].type, a[i].vendor_id, a[i].device_id,
                (unsigned long long)a[i].max_storage_buffer_binding_size, (unsigned long long)a[i].max_buffer_size,
                a[i].max_compute_workgroups_per_dimension, a[i].shader_f16, a[i].subgroups, a[i].timestamp_query,
                a[i].cooperative_matrix);
        CHECK(a[i].name[0] != 0);
        CHECK(a[i].backend[0] != 0 && a[i].type[0] != 0);
        CHECK(a[i].max_storage_buffer_binding_size >= 128u << 20); /* the WebGPU minimum */
        CHECK(a[i].max_compute_workgroups_per_dimension >= 65535);
        CHECK(a[i].max_storage_buffers_per_shader_stage >= 8);
    }
    free(a);

    /* sessions on "gpu" and "gpu:0" name their device */
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d[1] = { 4 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, d, NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_session_create_with_options(m, &o, g_opts, &s));
    if (s) {
        fprintf(stderr, "  device \"gpu\": %s\n", rlx_session_device_name(s));
        CHECK(rlx_session_device_kind(s) == RLX_DEVICE_GPU);
        CHECK(strchr(rlx_session_device_name(s), '(') != NULL);
    }
    rlx_session_destroy(s);
    s = NULL;
    o.device = "gpu:0";
    CHECK_OK(rlx_session_create_with_options(m, &o, g_opts, &s));
    rlx_session_destroy(s);
    s = NULL;
    o.device = "gpu:99";
    CHECK_FAILS(rlx_session_create(m, &o, &s), RLX_ERR_NO_ADAPTER, "gpu:99");
    CHECK(s == NULL);
    o.device = "gpu:x1";
    CHECK_FAILS(rlx_session_create(m, &o, &s), RLX_ERR_INVALID_ARGUMENT, "gpu:N");
    rlx_model_destroy(m);
}

/* ------------------------------------------------------------ elementwise */

typedef struct unary_case {
    const char *op;
    int64_t opset;
    float lo, hi;
    double rtol, atol;
    int n_attrs;
    rlx_attr attrs[2];
} unary_case;

static void test_unary(void) {
    /* tolerances: exact ops 0; + - * / based ops 1e-6 relative; WGSL
     * transcendental builtins (exp, log, tanh, ...) 1e-4 relative plus a
     * small absolute term near zero */
    const double T = 1e-4, A = 1e-7;
    unary_case cases[] = {
        { "Relu", 14, -2, 2, 0, 0, 0, { { 0 } } },
        { "Abs", 13, -2, 2, 0, 0, 0, { { 0 } } },
        { "Neg", 13, -2, 2, 0, 0, 0, { { 0 } } },
        { "Sigmoid", 13, -6, 6, T, A, 0, { { 0 } } },
        { "Tanh", 13, -4, 4, T, A, 0, { { 0 } } },
        { "Exp", 13, -4, 4, T, A, 0, { { 0 } } },
        { "Log", 13, 0.05f, 8, T, A, 0, { { 0 } } },
        { "Sqrt", 13, 0, 8, 1e-6, 1e-7, 0, { { 0 } } },
        { "Erf", 13, -3, 3, T, A, 0, { { 0 } } },
        { "HardSigmoid", 13, -5, 5, 1e-6, 1e-7, 2, { RLX_ATTR_F("alpha", 0.3f), RLX_ATTR_F("beta", 0.4f) } },
        { "HardSwish", 14, -5, 5, 1e-6, 1e-7, 0, { { 0 } } },
        { "LeakyRelu", 16, -2, 2, 0, 0, 1, { RLX_ATTR_F("alpha", 0.125f) } },
        { "Clip", 10, -3, 3, 0, 0, 2, { RLX_ATTR_F("min", -0.5f), RLX_ATTR_F("max", 1.25f) } },
        { "Gelu", 20, -4, 4, T, A, 0, { { 0 } } },
        { "Gelu", 20, -4, 4, T, A, 1, { RLX_ATTR_S("approximate", "tanh") } },
        { "Elu", 13, -3, 3, T, A, 1, { RLX_ATTR_F("alpha", 0.7f) } },
        { "Selu", 13, -3, 3, T, A, 0, { { 0 } } },
        { "Celu", 13, -3, 3, T, A, 1, { RLX_ATTR_F("alpha", 1.5f) } },
        { "Softplus", 13, -20, 20, T, A, 0, { { 0 } } },
        { "Softsign", 13, -4, 4, 1e-6, 1e-7, 0, { { 0 } } },
        { "Mish", 18, -6, 6, T, A, 0, { { 0 } } },
        { "Reciprocal", 13, 0.25f, 4, 1e-6, 0, 0, { { 0 } } },
        { "Floor", 13, -5, 5, 0, 0, 0, { { 0 } } },
        { "Ceil", 13, -5, 5, 0, 0, 0, { { 0 } } },
        { "Round", 13, -5, 5, 0, 0, 0, { { 0 } } },
        { "Sin", 13, -3.1f, 3.1f, T, 1e-5, 0, { { 0 } } },
        { "Cos", 13, -3.1f, 3.1f, T, 1e-5, 0, { { 0 } } },
        { "Tan", 13, -1.2f, 1.2f, T, 1e-5, 0, { { 0 } } },
        { "Sign", 13, -2, 2, 0, 0, 0, { { 0 } } },
        { "ThresholdedRelu", 13, -2, 2, 0, 0, 1, { RLX_ATTR_F("alpha", 0.5f) } },
        { "Asin", 13, -0.95f, 0.95f, T, A, 0, { { 0 } } },
        { "Acos", 13, -0.95f, 0.95f, T, A, 0, { { 0 } } },
        { "Atan", 13, -4, 4, T, A, 0, { { 0 } } },
        { "Sinh", 13, -3, 3, T, A, 0, { { 0 } } },
        { "Cosh", 13, -3, 3, T, A, 0, { { 0 } } },
        { "Asinh", 13, -3, 3, T, A, 0, { { 0 } } },
        { "Acosh", 13, 1.1f, 4, T, A, 0, { { 0 } } },
        { "Atanh", 13, -0.9f, 0.9f, T, A, 0, { { 0 } } },
    };
    int64_t dims[3] = { 3, 5, 7 };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        unary_case *c = &cases[i];
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dims, c->lo, c->hi);
        const rlx_tensor *in[1] = { x };
        char label[64];
        snprintf(label, sizeof label, "%s (case %zu)", c->op, i);
        gpu_vs_cpu(label, c->op, c->opset, 1, in, NULL, (size_t)c->n_attrs, c->attrs, c->rtol, c->atol);
        rlx_tensor_destroy(x);
    }
    /* near zero, where quotients of exponentials lose relative accuracy:
     * 1e-4 relative, 1e-12 absolute */
    const char *small_ops[] = { "Tanh", "Sinh", "Asinh", "Atanh", "Erf", "Gelu", "Elu", "Selu", "Celu", "Mish",
                                "Sin", "Tan", "Asin", "Atan", "Softsign" };
    for (size_t i = 0; i < RLX_ARRAY_LEN(small_ops); i++) {
        if (!rlx_op_find("", small_ops[i])) continue;
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dims, -1e-3f, 1e-3f);
        const rlx_tensor *in[1] = { x };
        char label[64];
        snprintf(label, sizeof label, "%s near 0", small_ops[i]);
        gpu_vs_cpu(label, small_ops[i], 20, 1, in, NULL, 0, NULL, 1e-4, 1e-12);
        rlx_tensor_destroy(x);
    }
    /* Log and Acosh just above 1, same tolerance */
    const char *one_ops[] = { "Log", "Acosh" };
    for (size_t i = 0; i < RLX_ARRAY_LEN(one_ops); i++) {
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dims, 1.0f, 1.002f);
        const rlx_tensor *in[1] = { x };
        char label[64];
        snprintf(label, sizeof label, "%s near 1", one_ops[i]);
        gpu_vs_cpu(label, one_ops[i], 20, 1, in, NULL, 0, NULL, 1e-4, 1e-12);
        rlx_tensor_destroy(x);
    }
    /* Clip-13 with constant min/max inputs, and with only max */
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dims, -3, 3);
    float lo = -0.75f, hi = 0.5f;
    rlx_tensor *tlo = test_tensor_f32(0, NULL, &lo), *thi = test_tensor_f32(0, NULL, &hi);
    const rlx_tensor *in3[3] = { x, tlo, thi };
    int k3[3] = { 0, 1, 1 };
    gpu_vs_cpu("Clip-13 min max", "Clip", 13, 3, in3, k3, 0, NULL, 0, 0);
    const rlx_tensor *in3b[3] = { x, NULL, thi };
    gpu_vs_cpu("Clip-13 max only", "Clip", 13, 3, in3b, k3, 0, NULL, 0, 0);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(tlo);
    rlx_tensor_destroy(thi);
}

/* The variadic ops' own GPU lowering (lower_variadic) runs where no pass
 * takes the node: a lone Sum, Max, Min or Mean of two or more float inputs
 * becomes one rlx.FusedElementwise otherwise (fuse_elementwise; that path:
 * tests/python/test_fuse_lone_variadic.py), so these cases turn the pass off. */
static void lone_variadic_unfused(const char *op, bool on) {
    if (strcmp(op, "Sum") && strcmp(op, "Mean") && strcmp(op, "Max") && strcmp(op, "Min")) return;
    CHECK_OK(rlx_options_set(g_opts, "passes.disable", on ? "fuse_elementwise" : NULL));
}

static void test_binary(void) {
    struct {
        const char *op;
        double rtol, atol;
        float lo, hi;
    } ops[] = {
        { "Add", 1e-6, 0, -2, 2 },  { "Sub", 1e-6, 0, -2, 2 },  { "Mul", 1e-6, 0, -2, 2 },
        { "Div", 1e-5, 0, 0.5f, 2 }, { "Pow", 1e-4, 1e-6, 0.5f, 2 }, { "PRelu", 1e-6, 0, -2, 2 },
        { "Max", 0, 0, -2, 2 },     { "Min", 0, 0, -2, 2 },
    };
    /* shapes (a, b): equal, trailing broadcast, both sides broadcast, scalar */
    struct {
        int ra, rb;
        int64_t da[4], db[4];
    } shapes[] = {
        { 3, 3, { 2, 3, 4 }, { 2, 3, 4 } },
        { 4, 2, { 2, 3, 4, 5 }, { 4, 1 } },
        { 3, 3, { 2, 1, 6 }, { 1, 5, 1 } },
        { 2, 0, { 7, 3 }, { 0 } },
        { 1, 4, { 5 }, { 2, 1, 3, 5 } },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(ops); i++)
        for (size_t s = 0; s < RLX_ARRAY_LEN(shapes); s++) {
            if (strcmp(ops[i].op, "PRelu") == 0 && s == 4) continue; /* slope must broadcast to x */
            rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, shapes[s].ra, shapes[s].da, -2, 2);
            rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, shapes[s].rb, shapes[s].db, ops[i].lo, ops[i].hi);
            if (strcmp(ops[i].op, "Pow") == 0) { /* positive bases */
                float *pa = a->data;
                for (size_t k = 0; k < rlx_tensor_numel(a); k++) pa[k] = 0.25f + fabsf(pa[k]);
            }
            const rlx_tensor *in[2] = { a, b };
            char label[64];
            snprintf(label, sizeof label, "%s shape case %zu", ops[i].op, s);
            lone_variadic_unfused(ops[i].op, true);
            gpu_vs_cpu(label, ops[i].op, 14, 2, in, NULL, 0, NULL, ops[i].rtol, ops[i].atol);
            int k01[2] = { 0, 1 };
            snprintf(label, sizeof label, "%s shape case %zu, constant b", ops[i].op, s);
            gpu_vs_cpu(label, ops[i].op, 14, 2, in, k01, 0, NULL, ops[i].rtol, ops[i].atol);
            lone_variadic_unfused(ops[i].op, false);
            rlx_tensor_destroy(a);
            rlx_tensor_destroy(b);
        }
    /* Pow with negative bases and integral exponents */
    {
        int64_t d[1] = { 64 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 1, d, -3, 3);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, d, -3, 4);
        float *pb = b->data;
        for (int k = 0; k < 64; k++) pb[k] = floorf(pb[k]);
        const rlx_tensor *in[2] = { a, b };
        gpu_vs_cpu("Pow negative bases", "Pow", 15, 2, in, NULL, 0, NULL, 1e-4, 1e-6);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    /* i32: Add, Sub, Mul, Max, Min (wrapping like the CPU) */
    {
        int64_t da[2] = { 4, 6 }, db[1] = { 6 };
        const char *iops[] = { "Add", "Sub", "Mul" };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_I32, 2, da, -1000, 1000);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_I32, 1, db, -1000, 1000);
        const rlx_tensor *in[2] = { a, b };
        for (size_t i = 0; i < 3; i++) gpu_vs_cpu(iops[i], iops[i], 14, 2, in, NULL, 0, NULL, 0, 0);
        gpu_vs_cpu("Max i32", "Max", 13, 2, in, NULL, 0, NULL, 0, 0);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    /* variadic: three inputs with broadcasting, and one input */
    {
        int64_t d0[3] = { 2, 3, 4 }, d1[1] = { 4 }, d2[2] = { 3, 1 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 3, d0, -2, 2);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, d1, -2, 2);
        rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 2, d2, -2, 2);
        const rlx_tensor *in[3] = { a, b, c };
        const char *vops[] = { "Sum", "Mean", "Max", "Min" };
        for (size_t i = 0; i < 4; i++) {
            char label[64];
            snprintf(label, sizeof label, "%s of three", vops[i]);
            lone_variadic_unfused(vops[i], true);
            gpu_vs_cpu(label, vops[i], 13, 3, in, NULL, 0, NULL, 1e-6, 1e-7);
            lone_variadic_unfused(vops[i], false);
            snprintf(label, sizeof label, "%s of one", vops[i]);
            gpu_vs_cpu(label, vops[i], 13, 1, in, NULL, 0, NULL, 0, 0);
        }
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
}

/* ------------------------------------------------------------ convolution */

typedef struct conv_case {
    int nsp;        /* spatial dims 1..3 */
    int64_t n, c_in, c_out, group;
    int64_t in[3], k[3], s[3], dil[3], pb[3], pe[3];
    bool bias;
    const char *auto_pad; /* NULL: explicit pads */
} conv_case;

/* Output extent along one dim (explicit pads). */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/* Direct convolution in double: independent of the library's geometry code. */
static double *conv_ref(const conv_case *c, const rlx_tensor *x, const rlx_tensor *w, const rlx_tensor *b,
                        int64_t *out_sp, size_t *n_out) {
    int64_t in[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 }, s[3] = { 1, 1, 1 }, dl[3] = { 1, 1, 1 }, pb[3] = { 0 },
            o[3] = { 1, 1, 1 };
    int off = 3 - c->nsp;
    for (int i = 0; i < c->nsp; i++) {
        in[off + i] = c->in[i];
        k[off + i] = c->k[i];
        s[off + i] = c->s[i];
        dl[off + i] = c->dil[i];
        pb[off + i] = c->pb[i];
        o[off + i] = conv_out(c->in[i], c->k[i], c->s[i], c->dil[i], c->pb[i], c->pe[i]);
        out_sp[i] = o[off + i];
    }
    int64_t cin_g = c->c_in / c->group, cout_g = c->c_out / c->group;
    size_t total = (size_t)(c->n * c->c_out * o[0] * o[1] * o[2]);
    double *y = dalloc(total);
    const float *px = x->data, *pw = w->data, *pbias = b ? b->data : NULL;
    size_t idx = 0;
    for (int64_t nb = 0; nb < c->n; nb++)
        for (int64_t co = 0; co < c->c_out; co++)
            for (int64_t oz = 0; oz < o[0]; oz++)
                for (int64_t oh = 0; oh < o[1]; oh++)
                    for (int64_t ow = 0; ow < o[2]; ow++) {
                        int64_t g = co / cout_g;
                        double acc = 0;
                        for (int64_t ci = 0; ci < cin_g; ci++)
                            for (int64_t a = 0; a < k[0]; a++)
                                for (int64_t r = 0; r < k[1]; r++)
                                    for (int64_t q = 0; q < k[2]; q++) {
                                        int64_t iz = oz * s[0] - pb[0] + a * dl[0];
                                        int64_t ih = oh * s[1] - pb[1] + r * dl[1];
                                        int64_t iw = ow * s[2] - pb[2] + q * dl[2];
                                        if (iz < 0 || iz >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2])
                                            continue;
                                        size_t xi = (size_t)((((nb * c->c_in + g * cin_g + ci) * in[0] + iz) * in[1] + ih) * in[2] + iw);
                                        size_t wi = (size_t)((((co * cin_g + ci) * k[0] + a) * k[1] + r) * k[2] + q);
                                        acc += (double)pw[wi] * px[xi];
                                    }
                        if (pbias) acc += pbias[co];
                        y[idx++] = acc;
                    }
    *n_out = total;
    return y;
}

/* Runs one conv case on the GPU both ways: both close to the reference,
 * and equal to each other bit for bit. */
static void conv_case_run(const conv_case *c, int idx) {
    int rank = 2 + c->nsp;
    int64_t xd[5] = { c->n, c->c_in }, wd[5] = { c->c_out, c->c_in / c->group }, bd[1] = { c->c_out };
    for (int i = 0; i < c->nsp; i++) xd[2 + i] = c->in[i], wd[2 + i] = c->k[i];
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, rank, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, rank, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
    int64_t pads[6], strides[3], dil[3];
    for (int i = 0; i < c->nsp; i++) {
        pads[i] = c->pb[i];
        pads[c->nsp + i] = c->pe[i];
        strides[i] = c->s[i];
        dil[i] = c->dil[i];
    }
    rlx_attr at[4];
    size_t na = 0;
    at[na++] = RLX_ATTR_I("group", c->group);
    at[na++] = RLX_ATTR_IS("strides", (size_t)c->nsp, strides);
    at[na++] = RLX_ATTR_IS("dilations", (size_t)c->nsp, dil);
    if (c->auto_pad) at[na++] = RLX_ATTR_S("auto_pad", c->auto_pad);
    else at[na++] = RLX_ATTR_IS("pads", (size_t)(2 * c->nsp), pads);
    const rlx_tensor *in[3] = { x, w, b };
    int konst[3] = { 0, 1, 1 };
    rlx_tensor **o_gemm = NULL, **o_direct = NULL;
    char label[96];
    snprintf(label, sizeof label, "conv case %d", idx);
    CHECK_MSG(run_op("Conv", 13, &k_gpu, b ? 3 : 2, in, konst, 1, na, at, &o_gemm) == RLX_OK, "%s im2col: %s", label,
              rlx_last_error());
    CHECK_MSG(run_op("Conv", 13, &k_gpu_direct, b ? 3 : 2, in, konst, 1, na, at, &o_direct) == RLX_OK, "%s direct: %s",
              label, rlx_last_error());
    int64_t osp[3];
    size_t n_ref;
    double *ref = conv_ref(c, x, w, b, osp, &n_ref);
    if (o_gemm) {
        for (int i = 0; i < c->nsp; i++) CHECK_MSG(o_gemm[0]->dims[2 + i] == osp[i], "%s: output dim %d", label, i);
        /* fp32 accumulation in another order than the double reference */
        check_close(label, o_gemm[0], ref, n_ref, 1e-4, 1e-5);
    }
    if (o_direct) check_close(label, o_direct[0], ref, n_ref, 1e-4, 1e-5);
    if (o_gemm && o_direct) {
        CHECK_MSG(o_gemm[0]->nbytes == o_direct[0]->nbytes &&
                      memcmp(o_gemm[0]->data, o_direct[0]->data, o_gemm[0]->nbytes) == 0,
                  "%s: im2col + GEMM and direct conv differ in bits", label);
    }
    free(ref);
    test_free_outputs(o_gemm, 1);
    test_free_outputs(o_direct, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
}

static void test_conv(void) {
    conv_case cases[] = {
        /* plain 3x3, pad 1 */
        { 2, 1, 3, 8, 1, { 9, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, NULL },
        /* batch 2, stride 2, dilation, asymmetric pads */
        { 2, 2, 4, 6, 1, { 10, 7 }, { 3, 2 }, { 2, 1 }, { 2, 1 }, { 1, 0 }, { 2, 1 }, true, NULL },
        /* depthwise, batch 2, stride 2 */
        { 2, 2, 8, 8, 8, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, NULL },
        /* depthwise with channel multiplier 2, no bias */
        { 2, 1, 4, 8, 4, { 6, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, false, NULL },
        /* two groups, batch 3, dilation along w */
        { 2, 3, 6, 4, 2, { 5, 9 }, { 1, 3 }, { 1, 1 }, { 1, 2 }, { 0, 2 }, { 0, 2 }, true, NULL },
        /* 1x1 */
        { 2, 2, 5, 7, 1, { 4, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, true, NULL },
        /* 1-D, stride 3, no bias */
        { 1, 2, 3, 5, 1, { 17 }, { 4 }, { 3 }, { 1 }, { 2 }, { 1 }, false, NULL },
        /* 3-D */
        { 3, 1, 2, 3, 1, { 4, 5, 6 }, { 2, 3, 2 }, { 1, 2, 1 }, { 1, 1, 2 }, { 0, 1, 1 }, { 1, 1, 0 }, true, NULL },
        /* SAME_UPPER, stride 2 on 7x8: pads (0,1)+(1,1)? computed by hand below */
        { 2, 1, 2, 3, 1, { 7, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 0 }, { 1, 1 }, true, "SAME_UPPER" },
        /* kernel larger than stride, many output channels */
        { 2, 1, 3, 17, 1, { 12, 12 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, true, NULL },
    };
    /* SAME_UPPER on 7x8 with k 3 s 2: out (4, 4); total pad h = 3*2+3-7 = 2 ->
     * (1, 1); w = 3*2+3-8 = 1 -> (0, 1). */
    cases[8].pb[0] = 1, cases[8].pe[0] = 1, cases[8].pb[1] = 0, cases[8].pe[1] = 1;
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) conv_case_run(&cases[i], (int)i);
}

/* ConvTranspose against a scatter reference in double. */
static void test_conv_transpose(void) {
    struct {
        int64_t n, c_in, c_out_g, group, h, w, kh, kw, sh, sw, ph, pw, pe_h, pe_w, dh, dw, oph, opw;
    } cs[] = {
        { 1, 4, 3, 1, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0 },
        { 2, 4, 2, 2, 4, 3, 2, 3, 1, 2, 0, 1, 0, 0, 2, 1, 0, 1 },
    };
    for (size_t ci = 0; ci < RLX_ARRAY_LEN(cs); ci++) {
        int64_t xd[4] = { cs[ci].n, cs[ci].c_in, cs[ci].h, cs[ci].w };
        int64_t wd[4] = { cs[ci].c_in, cs[ci].c_out_g, cs[ci].kh, cs[ci].kw };
        int64_t c_out = cs[ci].c_out_g * cs[ci].group, bd[1] = { c_out };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
        int64_t pads[4] = { cs[ci].ph, cs[ci].pw, cs[ci].pe_h, cs[ci].pe_w }, st[2] = { cs[ci].sh, cs[ci].sw };
        int64_t dl[2] = { cs[ci].dh, cs[ci].dw }, op[2] = { cs[ci].oph, cs[ci].opw };
        rlx_attr at[5] = { RLX_ATTR_I("group", cs[ci].group), RLX_ATTR_IS("strides", 2, st), RLX_ATTR_IS("pads", 4, pads),
                           RLX_ATTR_IS("dilations", 2, dl), RLX_ATTR_IS("output_padding", 2, op) };
        const rlx_tensor *in[3] = { x, w, b };
        int konst[3] = { 0, 1, 1 };
        rlx_tensor **o = NULL;
        CHECK_MSG(run_op("ConvTranspose", 13, &k_gpu, 3, in, konst, 1, 5, at, &o) == RLX_OK, "ConvTranspose %zu: %s",
                  ci, rlx_last_error());
        int64_t oh = cs[ci].sh * (cs[ci].h - 1) + cs[ci].oph + (cs[ci].kh - 1) * cs[ci].dh + 1 - cs[ci].ph - cs[ci].pe_h;
        int64_t ow = cs[ci].sw * (cs[ci].w - 1) + cs[ci].opw + (cs[ci].kw - 1) * cs[ci].dw + 1 - cs[ci].pw - cs[ci].pe_w;
        size_t total = (size_t)(cs[ci].n * c_out * oh * ow);
        double *ref = dalloc(total);
        const float *px = x->data, *pw = w->data, *pb = b->data;
        int64_t cin_g = cs[ci].c_in / cs[ci].group, cog = cs[ci].c_out_g;
        for (int64_t nb = 0; nb < cs[ci].n; nb++)
            for (int64_t c = 0; c < cs[ci].c_in; c++)
                for (int64_t ih = 0; ih < cs[ci].h; ih++)
                    for (int64_t iw = 0; iw < cs[ci].w; iw++)
                        for (int64_t m = 0; m < cog; m++)
                            for (int64_t r = 0; r < cs[ci].kh; r++)
                                for (int64_t q = 0; q < cs[ci].kw; q++) {
                                    int64_t yh = ih * cs[ci].sh - cs[ci].ph + r * cs[ci].dh;
                                    int64_t yw = iw * cs[ci].sw - cs[ci].pw + q * cs[ci].dw;
                                    if (yh < 0 || yh >= oh || yw < 0 || yw >= ow) continue;
                                    int64_t co = (c / cin_g) * cog + m;
                                    ref[((nb * c_out + co) * oh + yh) * ow + yw] +=
                                        (double)px[((nb * cs[ci].c_in + c) * cs[ci].h + ih) * cs[ci].w + iw] *
                                        pw[((c * cog + m) * cs[ci].kh + r) * cs[ci].kw + q];
                                }
        for (size_t i = 0; i < total; i++) ref[i] += pb[(i / (size_t)(oh * ow)) % (size_t)c_out];
        if (o) {
            CHECK(o[0]->dims[2] == oh && o[0]->dims[3] == ow);
            check_close("ConvTranspose", o[0], ref, total, 1e-4, 1e-5);
        }
        free(ref);
        test_free_outputs(o, 1);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(w);
        rlx_tensor_destroy(b);
    }
}

/* MaxPool / AveragePool against a C reference (windows, padding, ceil_mode,
 * dilation, count_include_pad). */
static void test_pools(void) {
    struct {
        const char *op;
        int64_t h, w, kh, kw, sh, sw, pb_h, pb_w, pe_h, pe_w, dh, dw;
        int ceil, cip;
    } cs[] = {
        { "MaxPool", 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0 },
        { "MaxPool", 9, 9, 2, 3, 2, 2, 0, 1, 0, 0, 2, 1, 1, 0 },
        { "AveragePool", 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0 },
        { "AveragePool", 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 1 },
        { "AveragePool", 8, 9, 2, 2, 3, 2, 0, 0, 1, 0, 1, 1, 1, 1 },
    };
    for (size_t ci = 0; ci < RLX_ARRAY_LEN(cs); ci++) {
        int64_t xd[4] = { 2, 3, cs[ci].h, cs[ci].w };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        int64_t ks[2] = { cs[ci].kh, cs[ci].kw }, st[2] = { cs[ci].sh, cs[ci].sw };
        int64_t pads[4] = { cs[ci].pb_h, cs[ci].pb_w, cs[ci].pe_h, cs[ci].pe_w }, dl[2] = { cs[ci].dh, cs[ci].dw };
        rlx_attr at[6] = { RLX_ATTR_IS("kernel_shape", 2, ks), RLX_ATTR_IS("strides", 2, st), RLX_ATTR_IS("pads", 4, pads),
                           RLX_ATTR_IS("dilations", 2, dl), RLX_ATTR_I("ceil_mode", cs[ci].ceil),
                           RLX_ATTR_I("count_include_pad", cs[ci].cip) };
        bool avg = strcmp(cs[ci].op, "AveragePool") == 0;
        const rlx_tensor *in[1] = { x };
        rlx_tensor **o = NULL;
        CHECK_MSG(run_op(cs[ci].op, 19, &k_gpu, 1, in, NULL, 1, avg ? 6 : 5, at, &o) == RLX_OK, "%s %zu: %s",
                  cs[ci].op, ci, rlx_last_error());
        /* output dims by the ONNX formulas */
        int64_t o_dim[2];
        int64_t in_d[2] = { cs[ci].h, cs[ci].w }, k[2] = { cs[ci].kh, cs[ci].kw }, s[2] = { cs[ci].sh, cs[ci].sw };
        int64_t pb[2] = { cs[ci].pb_h, cs[ci].pb_w }, pe[2] = { cs[ci].pe_h, cs[ci].pe_w }, d[2] = { cs[ci].dh, cs[ci].dw };
        for (int i = 0; i < 2; i++) {
            int64_t span = in_d[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1);
            o_dim[i] = cs[ci].ceil ? (span + s[i] - 1) / s[i] + 1 : span / s[i] + 1;
            if (cs[ci].ceil && (o_dim[i] - 1) * s[i] >= in_d[i] + pb[i]) o_dim[i]--;
        }
        size_t total = (size_t)(6 * o_dim[0] * o_dim[1]);
        double *ref = dalloc(total);
        const float *px = x->data;
        for (size_t i = 0; i < total; i++) {
            int64_t ow = (int64_t)i % o_dim[1], oh = ((int64_t)i / o_dim[1]) % o_dim[0], c = (int64_t)i / (o_dim[0] * o_dim[1]);
            double mx = -INFINITY, sum = 0;
            int cnt = 0, cnt_pad = 0;
            for (int64_t r = 0; r < k[0]; r++)
                for (int64_t q = 0; q < k[1]; q++) {
                    int64_t ih = oh * s[0] - pb[0] + r * d[0], iw = ow * s[1] - pb[1] + q * d[1];
                    if (ih < in_d[0] + pe[0] && iw < in_d[1] + pe[1]) cnt_pad++;
                    if (ih < 0 || iw < 0 || ih >= in_d[0] || iw >= in_d[1]) continue;
                    double v = px[(c * in_d[0] + ih) * in_d[1] + iw];
                    if (v > mx) mx = v;
                    sum += v;
                    cnt++;
                }
            ref[i] = avg ? sum / (cs[ci].cip ? cnt_pad : cnt) : mx;
        }
        if (o) {
            CHECK(o[0]->dims[2] == o_dim[0] && o[0]->dims[3] == o_dim[1]);
            check_close(cs[ci].op, o[0], ref, total, 1e-5, 1e-6);
        }
        free(ref);
        test_free_outputs(o, 1);
        rlx_tensor_destroy(x);
    }
}

/* ------------------------------------------- ops without an IR entry yet */

static void test_raw_tensor_ops(void) {
    /* Transpose [2,3,4,5] perm (2,0,3,1) */
    {
        int64_t xd[4] = { 2, 3, 4, 5 }, perm[4] = { 2, 0, 3, 1 }, yd[4] = { 4, 2, 5, 3 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        rlx_node_attr at[1] = { na_ints("perm", 4, perm) };
        rlx_tensor *out = NULL;
        const rlx_tensor *in[1] = { x };
        CHECK_MSG(run_raw("Transpose", 13, 1, in, NULL, RLX_DTYPE_F32, 4, yd, 1, at, &out) == RLX_OK, "Transpose: %s",
                  rlx_last_error());
        double *ref = dalloc(120);
        for (size_t i = 0; i < 120; i++) {
            int64_t c[4], xc[4];
            unravel(i, yd, 4, c);
            for (int k = 0; k < 4; k++) xc[perm[k]] = c[k];
            ref[i] = ((float *)x->data)[ravel(xc, xd, 4)];
        }
        check_close("Transpose", out, ref, 120, 0, 0);
        free(ref);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(x);
    }
    /* Slice-13: axes (0, 2), negative step on axis 2, i32 data */
    {
        int64_t xd[3] = { 5, 4, 9 }, st[2] = { 1, -2 }, en[2] = { 100, 0 }, ax[2] = { 0, 2 }, sp[2] = { 2, -3 };
        int64_t yd[3] = { 2, 4, 3 }; /* axis 0: 1,3; axis 2: 7,4,1 */
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_I32, 3, xd, -100, 100);
        int64_t d2[1] = { 2 };
        rlx_tensor *ts = test_tensor_i64(1, d2, st), *te = test_tensor_i64(1, d2, en), *ta = test_tensor_i64(1, d2, ax),
                   *tp = test_tensor_i64(1, d2, sp);
        const rlx_tensor *in[5] = { x, ts, te, ta, tp };
        int konst[5] = { 0, 1, 1, 1, 1 };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Slice", 13, 5, in, konst, RLX_DTYPE_I32, 3, yd, 0, NULL, &out) == RLX_OK, "Slice: %s",
                  rlx_last_error());
        if (out) {
            const int32_t *px = x->data, *po = out->data;
            int bad = 0;
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 4; b++)
                    for (int c = 0; c < 3; c++)
                        if (po[(a * 4 + b) * 3 + c] != px[((1 + 2 * a) * 4 + b) * 9 + (7 - 3 * c)]) bad++;
            CHECK_MSG(bad == 0, "Slice: %d elements differ (exact)", bad);
        }
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(ts);
        rlx_tensor_destroy(te);
        rlx_tensor_destroy(ta);
        rlx_tensor_destroy(tp);
    }
    /* Concat axis 1 of three inputs (one constant) */
    {
        int64_t d0[3] = { 2, 3, 4 }, d1[3] = { 2, 1, 4 }, d2[3] = { 2, 5, 4 }, yd[3] = { 2, 9, 4 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 3, d0, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 3, d1, -1, 1),
                   *c = test_tensor_random(RLX_DTYPE_F32, 3, d2, -1, 1);
        const rlx_tensor *in[3] = { a, b, c };
        int konst[3] = { 0, 1, 0 };
        rlx_node_attr at[1] = { na_int("axis", 1) };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Concat", 13, 3, in, konst, RLX_DTYPE_F32, 3, yd, 1, at, &out) == RLX_OK, "Concat: %s",
                  rlx_last_error());
        double ref[72];
        for (int n = 0; n < 2; n++)
            for (int j = 0; j < 9; j++)
                for (int k = 0; k < 4; k++) {
                    const rlx_tensor *t = j < 3 ? a : j < 4 ? b : c;
                    int jj = j < 3 ? j : j < 4 ? j - 3 : j - 4, len = j < 3 ? 3 : j < 4 ? 1 : 5;
                    ref[(n * 9 + j) * 4 + k] = ((float *)t->data)[(n * len + jj) * 4 + k];
                }
        check_close("Concat", out, ref, 72, 0, 0);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
    /* Pad-13 constant, negative pad on one side */
    {
        int64_t xd[2] = { 3, 5 }, pads[4] = { 1, -1, 2, 2 }, yd[2] = { 6, 6 }, pd[1] = { 4 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
        rlx_tensor *tp = test_tensor_i64(1, pd, pads);
        float cv = 2.5f;
        rlx_tensor *tc = test_tensor_f32(0, NULL, &cv);
        const rlx_tensor *in[3] = { x, tp, tc };
        int konst[3] = { 0, 1, 1 };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Pad", 13, 3, in, konst, RLX_DTYPE_F32, 2, yd, 0, NULL, &out) == RLX_OK, "Pad: %s",
                  rlx_last_error());
        double ref[36];
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                int xi = i - 1, xj = j + 1;
                ref[i * 6 + j] = (xi >= 0 && xi < 3 && xj >= 0 && xj < 5) ? ((float *)x->data)[xi * 5 + xj] : 2.5;
            }
        check_close("Pad", out, ref, 36, 0, 0);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(tp);
        rlx_tensor_destroy(tc);
    }
    /* Expand [3,1] to [2,3,4] */
    {
        int64_t xd[2] = { 3, 1 }, yd[3] = { 2, 3, 4 }, sd[1] = { 3 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1), *ts = test_tensor_i64(1, sd, yd);
        const rlx_tensor *in[2] = { x, ts };
        int konst[2] = { 0, 1 };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Expand", 13, 2, in, konst, RLX_DTYPE_F32, 3, yd, 0, NULL, &out) == RLX_OK, "Expand: %s",
                  rlx_last_error());
        double ref[24];
        for (int i = 0; i < 24; i++) ref[i] = ((float *)x->data)[(i / 4) % 3];
        check_close("Expand", out, ref, 24, 0, 0);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(ts);
    }
}

/* Tile, DepthToSpace (DCR, CRD), SpaceToDepth by their ONNX definitions. */
static void test_raw_tensor_ops2(void) {
    int64_t xd[4] = { 2, 8, 3, 2 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    const float *px = x->data;
    const rlx_tensor *in1[1] = { x };
    {
        int64_t rp[4] = { 1, 2, 1, 3 }, yd[4] = { 2, 16, 3, 6 };
        rlx_tensor *tr = ints_tensor_raw(4, rp);
        const rlx_tensor *in[2] = { x, tr };
        int konst[2] = { 0, 1 };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Tile", 13, 2, in, konst, RLX_DTYPE_F32, 4, yd, 0, NULL, &out) == RLX_OK, "Tile: %s",
                  rlx_last_error());
        double ref[576];
        for (size_t i = 0; i < 576; i++) {
            int64_t c[4];
            unravel(i, yd, 4, c);
            for (int k = 0; k < 4; k++) c[k] %= xd[k];
            ref[i] = px[ravel(c, xd, 4)];
        }
        check_close("Tile", out, ref, 576, 0, 0);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(tr);
    }
    for (int crd = 0; crd < 2; crd++) {
        int64_t yd[4] = { 2, 2, 6, 4 };
        rlx_node_attr at[2] = { na_int("blocksize", 2), na_s("mode", crd ? "CRD" : "DCR") };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("DepthToSpace", 13, 1, in1, NULL, RLX_DTYPE_F32, 4, yd, 2, at, &out) == RLX_OK,
                  "DepthToSpace: %s", rlx_last_error());
        double ref[96];
        for (size_t i = 0; i < 96; i++) {
            int64_t c[4];
            unravel(i, yd, 4, c); /* n, c', y, x */
            int64_t bi = c[2] % 2, bj = c[3] % 2;
            int64_t ch = crd ? c[1] * 4 + bi * 2 + bj : (bi * 2 + bj) * 2 + c[1];
            int64_t xc[4] = { c[0], ch, c[2] / 2, c[3] / 2 };
            ref[i] = px[ravel(xc, xd, 4)];
        }
        check_close(crd ? "DepthToSpace CRD" : "DepthToSpace DCR", out, ref, 96, 0, 0);
        rlx_tensor_destroy(out);
    }
    {
        int64_t sd[4] = { 2, 2, 4, 6 }, yd[4] = { 2, 8, 2, 3 };
        rlx_tensor *s = test_tensor_random(RLX_DTYPE_F32, 4, sd, -1, 1);
        const rlx_tensor *in[1] = { s };
        rlx_node_attr at[1] = { na_int("blocksize", 2) };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("SpaceToDepth", 13, 1, in, NULL, RLX_DTYPE_F32, 4, yd, 1, at, &out) == RLX_OK,
                  "SpaceToDepth: %s", rlx_last_error());
        double ref[96];
        for (size_t i = 0; i < 96; i++) {
            int64_t c[4];
            unravel(i, yd, 4, c); /* n, (bi*2+bj)*C + ch, y, x */
            int64_t ch = c[1] % 2, blk = c[1] / 2, bi = blk / 2, bj = blk % 2;
            int64_t xc[4] = { c[0], ch, c[2] * 2 + bi, c[3] * 2 + bj };
            ref[i] = ((float *)s->data)[ravel(xc, sd, 4)];
        }
        check_close("SpaceToDepth", out, ref, 96, 0, 0);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(s);
    }
    rlx_tensor_destroy(x);
}

static void test_raw_nn_ops(void) {
    /* Gemm transA, transB, alpha, beta, C [N] broadcast */
    {
        int64_t ad[2] = { 19, 13 }, bd[2] = { 21, 19 }, cd[1] = { 21 }, yd[2] = { 13, 21 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1),
                   *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
        const rlx_tensor *in[3] = { a, b, c };
        int konst[3] = { 0, 1, 1 };
        rlx_node_attr at[4] = { na_int("transA", 1), na_int("transB", 1), na_f("alpha", 0.5f), na_f("beta", 2.0f) };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("Gemm", 13, 3, in, konst, RLX_DTYPE_F32, 2, yd, 4, at, &out) == RLX_OK, "Gemm: %s",
                  rlx_last_error());
        double ref[13 * 21];
        const float *pa = a->data, *pb = b->data, *pc = c->data;
        for (int m = 0; m < 13; m++)
            for (int n = 0; n < 21; n++) {
                double s = 0;
                for (int k = 0; k < 19; k++) s += (double)pa[k * 13 + m] * pb[n * 19 + k];
                ref[m * 21 + n] = 0.5 * s + 2.0 * pc[n];
            }
        check_close("Gemm", out, ref, 13 * 21, 1e-5, 1e-5);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
    /* MatMul with broadcast batch dims: [2,1,5,7] x [3,7,6] -> [2,3,5,6]; and 1-D x 2-D */
    {
        int64_t ad[4] = { 2, 1, 5, 7 }, bd[3] = { 3, 7, 6 }, yd[4] = { 2, 3, 5, 6 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 3, bd, -1, 1);
        const rlx_tensor *in[2] = { a, b };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("MatMul", 13, 2, in, NULL, RLX_DTYPE_F32, 4, yd, 0, NULL, &out) == RLX_OK, "MatMul: %s",
                  rlx_last_error());
        double ref[180];
        const float *pa = a->data, *pb = b->data;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int m = 0; m < 5; m++)
                    for (int n = 0; n < 6; n++) {
                        double s = 0;
                        for (int k = 0; k < 7; k++) s += (double)pa[(i * 5 + m) * 7 + k] * pb[(j * 7 + k) * 6 + n];
                        ref[((i * 3 + j) * 5 + m) * 6 + n] = s;
                    }
        check_close("MatMul batched", out, ref, 180, 1e-5, 1e-6);
        rlx_tensor_destroy(out);
        int64_t vd[1] = { 7 }, md[2] = { 7, 40 }, od[1] = { 40 };
        rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1), *mm = test_tensor_random(RLX_DTYPE_F32, 2, md, -1, 1);
        const rlx_tensor *in2[2] = { v, mm };
        CHECK_MSG(run_raw("MatMul", 13, 2, in2, NULL, RLX_DTYPE_F32, 1, od, 0, NULL, &out) == RLX_OK, "MatMul 1-D: %s",
                  rlx_last_error());
        double r2[40];
        for (int n = 0; n < 40; n++) {
            double s = 0;
            for (int k = 0; k < 7; k++) s += (double)((float *)v->data)[k] * ((float *)mm->data)[k * 40 + n];
            r2[n] = s;
        }
        check_close("MatMul 1-D", out, r2, 40, 1e-5, 1e-6);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(v);
        rlx_tensor_destroy(mm);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    /* Softmax-13 on a middle axis, LogSoftmax-13 last axis, Softmax-11 coerced */
    {
        int64_t xd[3] = { 3, 7, 4 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, xd, -4, 4);
        const float *px = x->data;
        const rlx_tensor *in[1] = { x };
        for (int variant = 0; variant < 3; variant++) {
            rlx_node_attr at[1] = { na_int("axis", variant == 0 ? 1 : variant == 1 ? -1 : 1) };
            const char *op = variant == 1 ? "LogSoftmax" : "Softmax";
            rlx_tensor *out = NULL;
            CHECK_MSG(run_raw(op, variant == 2 ? 11 : 13, 1, in, NULL, RLX_DTYPE_F32, 3, xd, 1, at, &out) == RLX_OK,
                      "%s variant %d: %s", op, variant, rlx_last_error());
            double ref[84];
            /* rows: variant 0 along dim 1; 1 along dim 2; 2 over dims 1,2 together */
            int outer = variant == 1 ? 21 : 3, len = variant == 0 ? 7 : variant == 1 ? 4 : 28, inner = variant == 0 ? 4 : 1;
            for (int o = 0; o < outer; o++)
                for (int j = 0; j < inner; j++) {
                    double mx = -INFINITY, s = 0;
                    for (int k = 0; k < len; k++) mx = fmax(mx, px[(o * len + k) * inner + j]);
                    for (int k = 0; k < len; k++) s += exp(px[(o * len + k) * inner + j] - mx);
                    for (int k = 0; k < len; k++) {
                        double v = px[(o * len + k) * inner + j] - mx;
                        ref[(o * len + k) * inner + j] = variant == 1 ? v - log(s) : exp(v) / s;
                    }
                }
            check_close(op, out, ref, 84, 1e-5, 1e-6);
            rlx_tensor_destroy(out);
        }
        rlx_tensor_destroy(x);
    }
    /* BatchNormalization-15 inference, GlobalAveragePool-1 */
    {
        int64_t xd[4] = { 2, 3, 4, 5 }, cd[1] = { 3 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -2, 2);
        rlx_tensor *sc = test_tensor_random(RLX_DTYPE_F32, 1, cd, 0.5f, 1.5f), *bi = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1),
                   *mu = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1), *va = test_tensor_random(RLX_DTYPE_F32, 1, cd, 0.5f, 2);
        const rlx_tensor *in[5] = { x, sc, bi, mu, va };
        int konst[5] = { 0, 1, 1, 1, 1 };
        rlx_node_attr at[1] = { na_f("epsilon", 1e-3f) };
        rlx_tensor *out = NULL;
        CHECK_MSG(run_raw("BatchNormalization", 15, 5, in, konst, RLX_DTYPE_F32, 4, xd, 1, at, &out) == RLX_OK,
                  "BatchNormalization: %s", rlx_last_error());
        double ref[120];
        const float *px = x->data, *ps = sc->data, *pb = bi->data, *pm = mu->data, *pv = va->data;
        for (int i = 0; i < 120; i++) {
            int c = (i / 20) % 3;
            ref[i] = (px[i] - pm[c]) / sqrt((double)pv[c] + (double)1e-3f) * ps[c] + pb[c];
        }
        check_close("BatchNormalization", out, ref, 120, 1e-5, 1e-6);
        rlx_tensor_destroy(out);
        int64_t gd[4] = { 2, 3, 1, 1 };
        const rlx_tensor *in1[1] = { x };
        CHECK_MSG(run_raw("GlobalAveragePool", 1, 1, in1, NULL, RLX_DTYPE_F32, 4, gd, 0, NULL, &out) == RLX_OK,
                  "GlobalAveragePool: %s", rlx_last_error());
        double g6[6] = { 0 };
        for (int i = 0; i < 120; i++) g6[i / 20] += px[i] / 20.0;
        check_close("GlobalAveragePool", out, g6, 6, 1e-5, 1e-6);
        rlx_tensor_destroy(out);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(sc);
        rlx_tensor_destroy(bi);
        rlx_tensor_destroy(mu);
        rlx_tensor_destroy(va);
    }
    /* Resize-13: nearest (asymmetric, floor) x2 with scales; linear
     * (half_pixel) to sizes; linear align_corners */
    {
        int64_t xd[4] = { 1, 2, 3, 4 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        const float *px = x->data;
        for (int variant = 0; variant < 3; variant++) {
            int64_t yd[4] = { 1, 2, variant == 0 ? 6 : 5, variant == 0 ? 8 : 7 };
            float scales[4] = { 1, 1, 2, 2 };
            int64_t d4[1] = { 4 };
            rlx_tensor *ts = test_tensor_f32(1, d4, scales), *tz = test_tensor_i64(1, d4, yd);
            const rlx_tensor *in[4] = { x, NULL, variant == 0 ? ts : NULL, variant == 0 ? NULL : tz };
            int konst[4] = { 0, 1, 1, 1 };
            rlx_node_attr at[3];
            int na = 0;
            at[na++] = na_s("mode", variant == 0 ? "nearest" : "linear");
            at[na++] = na_s("coordinate_transformation_mode", variant == 0 ? "asymmetric" : variant == 1 ? "half_pixel" : "align_corners");
            if (variant == 0) at[na++] = na_s("nearest_mode", "floor");
            rlx_tensor *out = NULL;
            CHECK_MSG(run_raw("Resize", 13, 4, in, konst, RLX_DTYPE_F32, 4, yd, na, at, &out) == RLX_OK,
                      "Resize variant %d: %s", variant, rlx_last_error());
            size_t total = (size_t)(2 * yd[2] * yd[3]);
            double *ref = dalloc(total);
            for (size_t i = 0; i < total; i++) {
                int64_t ow = (int64_t)i % yd[3], oh = ((int64_t)i / yd[3]) % yd[2], c = (int64_t)i / (yd[2] * yd[3]);
                double ch, cw;
                if (variant == 0) {
                    ch = floor(oh / 2.0), cw = floor(ow / 2.0);
                    ref[i] = px[(c * 3 + (int64_t)ch) * 4 + (int64_t)cw];
                    continue;
                }
                if (variant == 1) {
                    ch = (oh + 0.5) / (5.0 / 3.0) - 0.5, cw = (ow + 0.5) / (7.0 / 4.0) - 0.5;
                } else {
                    ch = oh * 2.0 / 4.0, cw = ow * 3.0 / 6.0;
                }
                ch = fmin(fmax(ch, 0), 2), cw = fmin(fmax(cw, 0), 3);
                int64_t h0 = (int64_t)floor(ch), w0 = (int64_t)floor(cw);
                int64_t h1 = h0 + 1 > 2 ? 2 : h0 + 1, w1 = w0 + 1 > 3 ? 3 : w0 + 1;
                double fh = ch - h0, fw = cw - w0;
                const float *pl = px + c * 12;
                ref[i] = (1 - fh) * ((1 - fw) * pl[h0 * 4 + w0] + fw * pl[h0 * 4 + w1]) +
                         fh * ((1 - fw) * pl[h1 * 4 + w0] + fw * pl[h1 * 4 + w1]);
            }
            check_close("Resize", out, ref, total, 1e-5, 1e-6);
            free(ref);
            rlx_tensor_destroy(out);
            rlx_tensor_destroy(ts);
            rlx_tensor_destroy(tz);
        }
        rlx_tensor_destroy(x);
    }
}

/* Adds node `op` (no IR lookup) reading value `in`, writing value `out`. */
static void add_raw_node(rlx_graph *g, const char *name, const char *op, int in, int out) {
    if (RLX_GROW(g->nodes, g->cap_nodes, g->n_nodes + 1) != RLX_OK) return;
    rlx_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = rlx_strdup(name);
    n->op_type = rlx_strdup(op);
    n->domain = rlx_strdup("");
    n->version = 13;
    n->in = malloc(sizeof(int));
    n->in[0] = in;
    n->n_in = 1;
    n->out = malloc(sizeof(int));
    n->out[0] = out;
    n->n_out = 1;
    n->attrs = calloc(1, sizeof *n->attrs);
    const rlx_op_def *d = rlx_op_find("", op); /* the id only, no checks of the IR */
    n->op = d ? d->id : RLX_OP_NONE;
    g->values[out].producer = (int)g->n_nodes++;
}

static int add_raw_value(rlx_graph *g, const char *name, int rank, const int64_t *dims) {
    int id = -1;
    if (rlx_graph_add_value(g, name, &id) != RLX_OK) return -1;
    g->values[id].dtype = RLX_DTYPE_F32;
    rlx_value_set_shape(&g->values[id], rank, dims, NULL);
    return id;
}

/* View steps (same arena bytes, no work) between GPU and CPU steps, and
 * graph outputs that are views:
 *   a = Relu(x) [gpu]; b = view(a) [24]; c = Neg(b) [cpu]; d = view(c) [6,4];
 *   e = Exp(d) [gpu]; outputs b (view of a GPU value), d (view of a CPU
 *   value), e. */
static void test_views(void) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    if (!g) return;
    int64_t dx[2] = { 4, 6 }, db[1] = { 24 }, dd[2] = { 6, 4 };
    int x = add_raw_value(g, "x", 2, dx), a = add_raw_value(g, "a", 2, dx), b = add_raw_value(g, "b", 1, db);
    int c = add_raw_value(g, "c", 1, db), d = add_raw_value(g, "d", 2, dd), e = add_raw_value(g, "e", 2, dd);
    CHECK_OK(RLX_GROW(g->inputs, g->cap_inputs, 1));
    g->inputs[g->n_inputs++] = x;
    add_raw_node(g, "relu", "Relu", x, a);
    add_raw_node(g, "view1", "Reshape", a, b);
    add_raw_node(g, "neg", "Neg", b, c);
    add_raw_node(g, "view2", "Reshape", c, d);
    add_raw_node(g, "exp", "Exp", d, e);
    int outs[3] = { b, d, e };
    CHECK_OK(RLX_GROW(g->outputs, g->cap_outputs, 3));
    for (int i = 0; i < 3; i++) g->outputs[g->n_outputs++] = outs[i];
    rlx_program *p = calloc(1, sizeof *p);
    p->g = g;
    p->n_steps = 5;
    p->steps = calloc(5, sizeof(int));
    p->step_on = calloc(5, 1);
    const uint8_t on[5] = { RLX_STEP_GPU, RLX_STEP_VIEW, RLX_STEP_CPU, RLX_STEP_VIEW, RLX_STEP_GPU };
    for (int i = 0; i < 5; i++) p->steps[i] = i, p->step_on[i] = on[i];
    rlx_tensor *tx = test_tensor_random(RLX_DTYPE_F32, 2, dx, -2, 2);
    const rlx_tensor *in[1] = { tx };
    rlx_tensor *out[3] = { NULL, NULL, NULL };
    rlx_exec *exe = NULL;
    CHECK_OK(rlx_plan_memory(p));
    CHECK(p->mem.offset[b] == p->mem.offset[a] && p->mem.offset[d] == p->mem.offset[c]);
    CHECK_OK(rlx_plan_segments(p));
    CHECK_OK(rlx_exec_create(g_be, NULL, p, &exe));
    if (exe) CHECK_OK(rlx_exec_run(exe, in, out));
    if (out[0] && out[1] && out[2]) {
        CHECK(out[0]->rank == 1 && out[1]->rank == 2 && out[1]->dims[0] == 6);
        double rb[24], rd[24], re[24];
        for (int i = 0; i < 24; i++) {
            float r = ((float *)tx->data)[i] > 0 ? ((float *)tx->data)[i] : 0.0f;
            rb[i] = r;
            rd[i] = -r;
            re[i] = exp(-(double)r);
        }
        check_close("view of a GPU value", out[0], rb, 24, 0, 0);
        check_close("view of a CPU value", out[1], rd, 24, 0, 0);
        check_close("GPU step after a view", out[2], re, 24, 1e-4, 1e-6);
    }
    for (int i = 0; i < 3; i++) rlx_tensor_destroy(out[i]);
    rlx_exec_destroy(exe);
    rlx_program_destroy(p);
    rlx_tensor_destroy(tx);
}

/* --------------------------- against the CPU where IR and kernel exist */

/* True when `op` has an IR entry and a CPU kernel on this branch (the IR and
 * CPU kernels of the tensor and nn families are written in parallel; these
 * comparisons start to run as soon as they land). */
static bool have_cpu_op(const char *op) {
    if (rlx_op_find("", op) && rlx_cpu_find_kernel("", op)) return true;
    fprintf(stderr, "  skip %s against the CPU: no IR entry or CPU kernel on this branch\n", op);
    return false;
}

static rlx_tensor *ints_tensor(int n, const int64_t *v) {
    int64_t d[1] = { n };
    return test_tensor_i64(1, d, v);
}

static void test_tensor_ops_vs_cpu(void) {
    int64_t xd[4] = { 2, 3, 4, 5 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -2, 2);
    rlx_tensor *xi = test_tensor_random(RLX_DTYPE_I32, 4, xd, -50, 50);
    if (have_cpu_op("Transpose")) {
        int64_t perm[4] = { 3, 1, 0, 2 };
        rlx_attr at[1] = { RLX_ATTR_IS("perm", 4, perm) };
        const rlx_tensor *in[1] = { x }, *ini[1] = { xi };
        gpu_vs_cpu("Transpose", "Transpose", 13, 1, in, NULL, 1, at, 0, 0);
        gpu_vs_cpu("Transpose i32", "Transpose", 13, 1, ini, NULL, 1, at, 0, 0);
        gpu_vs_cpu("Transpose default perm", "Transpose", 13, 1, in, NULL, 0, NULL, 0, 0);
    }
    if (have_cpu_op("Slice")) {
        int64_t st[3] = { -1, 1, 0 }, en[3] = { -100, 4, 5 }, ax[3] = { 3, 1, 0 }, sp[3] = { -2, 2, 1 };
        rlx_tensor *ts = ints_tensor(3, st), *te = ints_tensor(3, en), *ta = ints_tensor(3, ax), *tp = ints_tensor(3, sp);
        const rlx_tensor *in[5] = { x, ts, te, ta, tp };
        int konst[5] = { 0, 1, 1, 1, 1 };
        gpu_vs_cpu("Slice-13", "Slice", 13, 5, in, konst, 0, NULL, 0, 0);
        const rlx_tensor *in3[3] = { x, ts, te };
        gpu_vs_cpu("Slice-13 no axes", "Slice", 13, 3, in3, konst, 0, NULL, 0, 0);
        rlx_tensor_destroy(ts);
        rlx_tensor_destroy(te);
        rlx_tensor_destroy(ta);
        rlx_tensor_destroy(tp);
    }
    if (have_cpu_op("Concat")) {
        int64_t d2[4] = { 2, 3, 1, 5 }, d3[4] = { 2, 3, 6, 5 };
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 4, d2, -1, 1), *c = test_tensor_random(RLX_DTYPE_F32, 4, d3, -1, 1);
        const rlx_tensor *in[3] = { x, b, c };
        int konst[3] = { 0, 1, 0 };
        rlx_attr at[1] = { RLX_ATTR_I("axis", -2) };
        gpu_vs_cpu("Concat", "Concat", 13, 3, in, konst, 1, at, 0, 0);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
    if (have_cpu_op("Pad")) {
        int64_t pads[8] = { 0, 1, -1, 2, 1, 0, 2, -2 };
        rlx_tensor *tp = ints_tensor(8, pads);
        float cv = -3.5f;
        rlx_tensor *tc = test_tensor_f32(0, NULL, &cv);
        const rlx_tensor *in[3] = { x, tp, tc };
        int konst[3] = { 0, 1, 1 };
        gpu_vs_cpu("Pad-13 constant", "Pad", 13, 3, in, konst, 0, NULL, 0, 0);
        rlx_tensor_destroy(tp);
        rlx_tensor_destroy(tc);
    }
    if (have_cpu_op("Expand")) {
        int64_t sd[5] = { 3, 2, 3, 4, 5 };
        int64_t bd[3] = { 3, 1, 5 };
        rlx_tensor *ts = ints_tensor(5, sd), *b = test_tensor_random(RLX_DTYPE_F32, 3, bd, -1, 1);
        const rlx_tensor *in[2] = { b, ts };
        int konst[2] = { 0, 1 };
        int64_t s2[4] = { 2, 3, 4, 5 };
        rlx_tensor *ts2 = ints_tensor(4, s2);
        const rlx_tensor *in2[2] = { b, ts2 };
        gpu_vs_cpu("Expand", "Expand", 13, 2, in2, konst, 0, NULL, 0, 0);
        (void)in;
        rlx_tensor_destroy(ts);
        rlx_tensor_destroy(ts2);
        rlx_tensor_destroy(b);
    }
    if (have_cpu_op("Split")) {
        int64_t sp[3] = { 1, 3, 1 };
        rlx_tensor *tsp = ints_tensor(3, sp);
        const rlx_tensor *in[2] = { x, tsp };
        int konst[2] = { 0, 1 };
        rlx_attr at[1] = { RLX_ATTR_I("axis", -1) };
        gpu_vs_cpu_n("Split-13 sizes", "Split", 13, 2, in, konst, 3, 1, at, 0, 0);
        rlx_attr at2[1] = { RLX_ATTR_I("axis", 1) };
        gpu_vs_cpu_n("Split-13 equal", "Split", 13, 1, in, konst, 3, 1, at2, 0, 0);
        rlx_tensor_destroy(tsp);
    }
    if (have_cpu_op("Tile")) {
        int64_t rp[4] = { 2, 1, 3, 1 };
        rlx_tensor *tr = ints_tensor(4, rp);
        const rlx_tensor *in[2] = { xi, tr };
        int konst[2] = { 0, 1 };
        gpu_vs_cpu("Tile i32", "Tile", 13, 2, in, konst, 0, NULL, 0, 0);
        rlx_tensor_destroy(tr);
    }
    if (have_cpu_op("DepthToSpace") && have_cpu_op("SpaceToDepth")) {
        int64_t dd[4] = { 2, 8, 3, 5 }, sd[4] = { 2, 3, 4, 6 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, dd, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 4, sd, -1, 1);
        const rlx_tensor *ina[1] = { a }, *inb[1] = { b };
        rlx_attr dcr[2] = { RLX_ATTR_I("blocksize", 2), RLX_ATTR_S("mode", "DCR") };
        rlx_attr crd[2] = { RLX_ATTR_I("blocksize", 2), RLX_ATTR_S("mode", "CRD") };
        gpu_vs_cpu("DepthToSpace DCR", "DepthToSpace", 13, 1, ina, NULL, 2, dcr, 0, 0);
        gpu_vs_cpu("DepthToSpace CRD", "DepthToSpace", 13, 1, ina, NULL, 2, crd, 0, 0);
        gpu_vs_cpu("SpaceToDepth", "SpaceToDepth", 13, 1, inb, NULL, 1, dcr, 0, 0);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(xi);
}

static void test_nn_ops_vs_cpu(void) {
    if (have_cpu_op("Gemm")) {
        int64_t ad[2] = { 19, 13 }, bd[2] = { 21, 19 }, cd[2] = { 13, 1 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1),
                   *c = test_tensor_random(RLX_DTYPE_F32, 2, cd, -1, 1);
        const rlx_tensor *in[3] = { a, b, c };
        int konst[3] = { 0, 1, 1 };
        rlx_attr at[4] = { RLX_ATTR_I("transA", 1), RLX_ATTR_I("transB", 1), RLX_ATTR_F("alpha", 0.5f),
                           RLX_ATTR_F("beta", 2.0f) };
        gpu_vs_cpu("Gemm", "Gemm", 13, 3, in, konst, 4, at, 1e-5, 1e-5);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(c);
    }
    if (have_cpu_op("MatMul")) {
        int64_t ad[4] = { 2, 1, 5, 7 }, bd[3] = { 3, 7, 6 };
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 3, bd, -1, 1);
        const rlx_tensor *in[2] = { a, b };
        gpu_vs_cpu("MatMul", "MatMul", 13, 2, in, NULL, 0, NULL, 1e-5, 1e-6);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    int64_t xd[4] = { 2, 3, 5, 6 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -3, 3);
    const rlx_tensor *in1[1] = { x };
    if (have_cpu_op("Softmax")) {
        rlx_attr at[1] = { RLX_ATTR_I("axis", 1) };
        gpu_vs_cpu("Softmax-13 axis 1", "Softmax", 13, 1, in1, NULL, 1, at, 1e-5, 1e-6);
        gpu_vs_cpu("Softmax-11 axis 1", "Softmax", 11, 1, in1, NULL, 1, at, 1e-5, 1e-6);
    }
    if (have_cpu_op("LogSoftmax")) gpu_vs_cpu("LogSoftmax-13", "LogSoftmax", 13, 1, in1, NULL, 0, NULL, 1e-5, 1e-6);
    if (have_cpu_op("GlobalAveragePool")) gpu_vs_cpu("GlobalAveragePool", "GlobalAveragePool", 13, 1, in1, NULL, 0, NULL, 1e-5, 1e-6);
    if (have_cpu_op("GlobalMaxPool")) gpu_vs_cpu("GlobalMaxPool", "GlobalMaxPool", 13, 1, in1, NULL, 0, NULL, 0, 0);
    if (have_cpu_op("BatchNormalization")) {
        int64_t cd[1] = { 3 };
        rlx_tensor *sc = test_tensor_random(RLX_DTYPE_F32, 1, cd, 0.5f, 1.5f), *bi = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1),
                   *mu = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1), *va = test_tensor_random(RLX_DTYPE_F32, 1, cd, 0.5f, 2);
        const rlx_tensor *in[5] = { x, sc, bi, mu, va };
        int konst[5] = { 0, 1, 1, 1, 1 };
        gpu_vs_cpu("BatchNormalization", "BatchNormalization", 15, 5, in, konst, 0, NULL, 1e-5, 1e-6);
        rlx_tensor_destroy(sc);
        rlx_tensor_destroy(bi);
        rlx_tensor_destroy(mu);
        rlx_tensor_destroy(va);
    }
    if (have_cpu_op("Resize")) {
        float scales[4] = { 1, 1, 2, 1.5f };
        int64_t d4[1] = { 4 }, sizes[4] = { 2, 3, 7, 4 };
        rlx_tensor *ts = test_tensor_f32(1, d4, scales), *tz = test_tensor_i64(1, d4, sizes);
        const char *coords[] = { "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel" };
        for (int mode = 0; mode < 2; mode++)
            for (int ci = 0; ci < 4; ci++)
                for (int use_sizes = 0; use_sizes < 2; use_sizes++) {
                    const rlx_tensor *in[4] = { x, NULL, use_sizes ? NULL : ts, use_sizes ? tz : NULL };
                    int konst[4] = { 0, 1, 1, 1 };
                    rlx_attr at[2] = { RLX_ATTR_S("mode", mode ? "linear" : "nearest"),
                                       RLX_ATTR_S("coordinate_transformation_mode", coords[ci]) };
                    char label[96];
                    snprintf(label, sizeof label, "Resize %s %s %s", mode ? "linear" : "nearest", coords[ci],
                             use_sizes ? "sizes" : "scales");
                    gpu_vs_cpu(label, "Resize", 13, 4, in, konst, 2, at, 1e-5, 1e-6);
                }
        rlx_tensor_destroy(ts);
        rlx_tensor_destroy(tz);
    }
    if (have_cpu_op("MaxPool")) {
        int64_t ks[2] = { 3, 2 }, st[2] = { 2, 1 }, pads[4] = { 1, 0, 1, 1 };
        rlx_attr at[4] = { RLX_ATTR_IS("kernel_shape", 2, ks), RLX_ATTR_IS("strides", 2, st), RLX_ATTR_IS("pads", 4, pads),
                           RLX_ATTR_I("ceil_mode", 1) };
        gpu_vs_cpu("MaxPool", "MaxPool", 13, 1, in1, NULL, 4, at, 0, 0);
        if (have_cpu_op("AveragePool")) {
            rlx_attr at2[5] = { at[0], at[1], at[2], at[3], RLX_ATTR_I("count_include_pad", 1) };
            gpu_vs_cpu("AveragePool", "AveragePool", 13, 1, in1, NULL, 4, at, 1e-5, 1e-6);
            gpu_vs_cpu("AveragePool count_include_pad", "AveragePool", 13, 1, in1, NULL, 5, at2, 1e-5, 1e-6);
        }
    }
    rlx_tensor_destroy(x);
}

/* ------------------------------------------------------------ plans */

/* Runs model m on `device` (conv_direct option) with inputs named in names. */
static rlx_status run_model(const rlx_model *m, const char *device, bool direct, size_t n_in, const char *const *names,
                            const rlx_tensor *const *in, rlx_tensor ***out, size_t *n_out, char *report, size_t cap) {
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device, .gpu_conv_direct = direct };
    rlx_status st = rlx_session_create_with_options(m, &o, g_opts, &s);
    if (!st) st = rlx_session_run(s, n_in, names, in, out, n_out);
    if (!st && report) snprintf(report, cap, "%s", rlx_session_dispatch_report(s));
    rlx_session_destroy(s);
    return st;
}

static void free_outs(rlx_tensor **o, size_t n) {
    if (!o) return;
    for (size_t i = 0; i < n; i++) rlx_tensor_destroy(o[i]);
    free(o);
}

/* Reshape/Flatten as view steps inside a GPU plan, through the session:
 * x -> Relu -> Reshape -> Exp -> Flatten; outputs the views and the end. */
static void test_view_ops_vs_cpu(void) {
    if (!have_cpu_op("Reshape") || !have_cpu_op("Flatten")) return;
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t xd[3] = { 2, 3, 4 }, sd[1] = { 2 }, shape[2] = { 4, -1 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 3, xd, NULL));
    rlx_tensor *ts = test_tensor_i64(1, sd, shape);
    CHECK_OK(rlx_model_add_initializer(m, "shape", ts));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "x" }, 1, (const char *[]){ "a" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Reshape", "v", 2, (const char *[]){ "a", "shape" }, 1, (const char *[]){ "b" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Exp", "e", 1, (const char *[]){ "b" }, 1, (const char *[]){ "c" }, 0, NULL));
    rlx_attr at[1] = { RLX_ATTR_I("axis", 0) };
    CHECK_OK(rlx_model_add_node(m, "Flatten", "f", 1, (const char *[]){ "c" }, 1, (const char *[]){ "d" }, 1, at));
    const char *outs[] = { "b", "c", "d" };
    for (int i = 0; i < 3; i++) CHECK_OK(rlx_model_add_output(m, outs[i]));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, xd, -2, 2);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    rlx_tensor **oc = NULL, **og = NULL;
    size_t nc = 0, ng = 0;
    char report[2048] = "";
    CHECK_OK(run_model(m, "cpu", false, 1, names, in, &oc, &nc, NULL, 0));
    CHECK_OK(run_model(m, "gpu", false, 1, names, in, &og, &ng, report, sizeof report));
    int nodes, native;
    test_report_counts(report, "Exp", &nodes, &native);
    CHECK_MSG(nodes == 1 && native == 1, "Exp should run on the GPU:\n%s", report);
    for (size_t i = 0; oc && og && i < 3; i++) {
        CHECK(og[i]->rank == oc[i]->rank && og[i]->dims[0] == oc[i]->dims[0]);
        CHECK_MSG(test_allclose(og[i], oc[i], 1e-4, 1e-6), "view chain output '%s' (rtol 1e-4, atol 1e-6)", outs[i]);
    }
    free_outs(oc, nc);
    free_outs(og, ng);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(ts);
    rlx_model_destroy(m);
}

/* A graph that alternates GPU steps and CPU-fallback steps (Greater and
 * Where have no WGSL lowering), with outputs from the GPU, from the host,
 * a graph input and a constant. */
static void test_cpu_fallback(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d[2] = { 6, 7 }, td[1] = { 7 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, d, NULL));
    rlx_tensor *t = test_tensor_random(RLX_DTYPE_F32, 1, td, -0.5f, 0.5f);
    CHECK_OK(rlx_model_add_initializer(m, "t", t));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "x" }, 1, (const char *[]){ "r" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Greater", "gt", 2, (const char *[]){ "r", "t" }, 1, (const char *[]){ "mask" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Where", "where", 3, (const char *[]){ "mask", "r", "x" }, 1, (const char *[]){ "w" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ "w", "x" }, 1, (const char *[]){ "z" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Sub", "sub", 2, (const char *[]){ "z", "r" }, 1, (const char *[]){ "u" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Greater", "gt2", 2, (const char *[]){ "u", "t" }, 1, (const char *[]){ "mask2" }, 0, NULL));
    const char *outs[] = { "u", "mask", "r", "x", "t", "w", "mask2" };
    for (size_t i = 0; i < RLX_ARRAY_LEN(outs); i++) CHECK_OK(rlx_model_add_output(m, outs[i]));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    rlx_tensor **oc = NULL, **og = NULL;
    size_t nc = 0, ng = 0;
    char report[2048] = "";
    /* Mul and Sub stay separate steps (fuse_elementwise would merge them) */
    CHECK_OK(rlx_options_set(g_opts, "passes.disable", "fuse_elementwise"));
    CHECK_OK(run_model(m, "cpu", false, 1, names, in, &oc, &nc, NULL, 0));
    /* Greater has a lowering now: force it to the CPU, so that its bool
     * mask crosses to the GPU's Where */
    CHECK_OK(rlx_options_set(g_opts, "gpu.disable", "Greater"));
    CHECK_OK(run_model(m, "gpu", false, 1, names, in, &og, &ng, report, sizeof report));
    CHECK_OK(rlx_options_set(g_opts, "gpu.disable", NULL));
    CHECK_OK(rlx_options_set(g_opts, "passes.disable", NULL));
    int nodes, native;
    test_report_counts(report, "Greater", &nodes, &native);
    CHECK_MSG(nodes == 2 && native == 0, "Greater should fall back to the CPU:\n%s", report);
    test_report_counts(report, "Mul", &nodes, &native);
    CHECK_MSG(nodes == 1 && native == 1, "Mul should run on the GPU:\n%s", report);
    test_report_counts(report, "Where", &nodes, &native);
    CHECK_MSG(nodes == 1 && native == 1, "Where should run on the GPU:\n%s", report);
    CHECK(nc == RLX_ARRAY_LEN(outs) && ng == nc);
    for (size_t i = 0; oc && og && i < nc; i++) {
        /* Relu, Greater, Where, Mul, Sub: exact in f32 on both devices */
        CHECK_MSG(og[i]->nbytes == oc[i]->nbytes && memcmp(og[i]->data, oc[i]->data, oc[i]->nbytes) == 0,
                  "output '%s' differs between gpu and cpu (exact)", outs[i]);
    }
    free_outs(oc, nc);
    free_outs(og, ng);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(t);
    rlx_model_destroy(m);
}

/* More than 65,535 workgroups of 64: the grid folds into y. */
static void test_grid_folding(void) {
    int64_t d[1] = { 65535 * 64 + 4097 }; /* 4,198,337 elements: 65,600 workgroups */
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1);
    const rlx_tensor *in[1] = { x };
    rlx_tensor **o = NULL;
    CHECK_OK(run_op("Relu", 14, &k_gpu, 1, in, NULL, 1, 0, NULL, &o));
    if (o) {
        const float *px = x->data, *py = o[0]->data;
        size_t bad = 0;
        for (size_t i = 0; i < (size_t)d[0]; i++)
            if (py[i] != (px[i] > 0 ? px[i] : 0.0f)) bad++;
        CHECK_MSG(bad == 0, "folded grid: %zu of %lld elements wrong (exact)", bad, (long long)d[0]);
    }
    test_free_outputs(o, 1);
    rlx_tensor_destroy(x);
}

/* conv -> relu -> depthwise conv -> add: a lowered binding limit makes the
 * arena larger than one binding and splits im2col into chunks (by image for
 * the first conv, by groups for the depthwise one); the results must equal
 * the unforced run bit for bit. A conv whose input exceeds the limit
 * declines and runs on the CPU. */
static void test_binding_limit(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t xd[4] = { 2, 4, 24, 24 }, w1d[4] = { 8, 4, 3, 3 }, w2d[4] = { 8, 1, 3, 3 }, bd[1] = { 8 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    rlx_tensor *w1 = test_tensor_random(RLX_DTYPE_F32, 4, w1d, -1, 1), *w2 = test_tensor_random(RLX_DTYPE_F32, 4, w2d, -1, 1);
    rlx_tensor *b1 = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1), *b2 = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    CHECK_OK(rlx_model_add_initializer(m, "w1", w1));
    CHECK_OK(rlx_model_add_initializer(m, "w2", w2));
    CHECK_OK(rlx_model_add_initializer(m, "b1", b1));
    CHECK_OK(rlx_model_add_initializer(m, "b2", b2));
    int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr a1[1] = { RLX_ATTR_IS("pads", 4, pads) };
    rlx_attr a2[2] = { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_I("group", 8) };
    CHECK_OK(rlx_model_add_node(m, "Conv", "c1", 3, (const char *[]){ "x", "w1", "b1" }, 1, (const char *[]){ "y1" }, 1, a1));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "y1" }, 1, (const char *[]){ "y2" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Conv", "c2", 3, (const char *[]){ "y2", "w2", "b2" }, 1, (const char *[]){ "y3" }, 2, a2));
    CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "y3", "y1" }, 1, (const char *[]){ "y4" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y4"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    rlx_tensor **o_free = NULL, **o_lim = NULL, **o_lim_d = NULL;
    size_t n1 = 0, n2 = 0, n3 = 0;
    CHECK_OK(run_model(m, "gpu", false, 1, names, in, &o_free, &n1, NULL, 0));
    /* 96 KiB: every tensor (<= 36 KiB) fits, the arena (> 96 KiB) does not;
     * conv1's col per image is 81 KiB (2 chunks), the depthwise conv's is
     * 162 KiB for 8 groups (chunks of 4 groups) */
    CHECK_OK(rlx_options_set(g_opts, "gpu.max_binding_bytes", "98304"));
    CHECK_OK(run_model(m, "gpu", false, 1, names, in, &o_lim, &n2, NULL, 0));
    CHECK_OK(run_model(m, "gpu", true, 1, names, in, &o_lim_d, &n3, NULL, 0));
    if (o_free && o_lim && o_lim_d) {
        CHECK_MSG(memcmp(o_free[0]->data, o_lim[0]->data, o_free[0]->nbytes) == 0,
                  "results under gpu.max_binding_bytes differ from the unforced run");
        CHECK_MSG(memcmp(o_free[0]->data, o_lim_d[0]->data, o_free[0]->nbytes) == 0,
                  "direct conv under gpu.max_binding_bytes differs from im2col unforced");
    }
    /* 16 KiB: x (18 KiB) and y2 (36 KiB) no longer fit one binding and the
     * convs cannot split their input: they decline and run on the CPU
     * (reported); Relu and Add split and stay on the GPU; the CPU conv sums
     * in another order: rtol 1e-5, atol 1e-5 (the Add kept apart from the
     * depthwise conv: fuse_conv_residual off) */
    CHECK_OK(rlx_options_set(g_opts, "gpu.max_binding_bytes", "16384"));
    CHECK_OK(rlx_options_set(g_opts, "passes.disable", "fuse_conv_residual"));
    rlx_tensor **o_fb = NULL;
    size_t n4 = 0;
    char rep[4096] = "";
    CHECK_OK(run_model(m, "gpu", false, 1, names, in, &o_fb, &n4, rep, sizeof rep));
    CHECK_OK(rlx_options_set(g_opts, "passes.disable", NULL));
    CHECK_MSG(strstr(rep, "Conv                           2       0         2") != NULL &&
                  strstr(rep, "Add                            1       1         0") != NULL,
              "the convs fall back, Add stays on the GPU: %s", rep);
    if (o_free && o_fb)
        CHECK_MSG(test_allclose(o_fb[0], o_free[0], 1e-5, 1e-5), "fallback conv: max abs diff %g",
                  test_max_abs_diff(o_fb[0], o_free[0]));
    free_outs(o_fb, n4);
    CHECK_OK(rlx_options_set(g_opts, "gpu.max_binding_bytes", "auto"));
    free_outs(o_free, n1);
    free_outs(o_lim, n2);
    free_outs(o_lim_d, n3);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w1);
    rlx_tensor_destroy(w2);
    rlx_tensor_destroy(b1);
    rlx_tensor_destroy(b2);
    rlx_model_destroy(m);
}

/* Gemm with transB whose B exceeds the (forced) binding limit: B is split
 * into blocks of rows, each writing its block of y's columns; the result
 * equals the unsplit run bit for bit. */
static void test_gemm_split(void) {
    int64_t ad[2] = { 3, 40 }, bd[2] = { 50, 40 }, cd[1] = { 50 }, yd[2] = { 3, 50 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1),
               *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
    const rlx_tensor *in[3] = { a, b, c };
    int konst[3] = { 0, 1, 1 };
    rlx_tensor *whole = NULL, *split = NULL;
    rlx_node_attr at1[1] = { na_int("transB", 1) }, at2[1] = { na_int("transB", 1) };
    CHECK_OK(run_raw("Gemm", 13, 3, in, konst, RLX_DTYPE_F32, 2, yd, 1, at1, &whole));
    CHECK_OK(rlx_options_set(g_opts, "gpu.max_binding_bytes", "4096")); /* B is 8000 bytes: two blocks of 25 rows */
    rlx_backend *saved = g_be, *small = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, g_opts, &small));
    CHECK_OK(rlx_options_set(g_opts, "gpu.max_binding_bytes", "auto"));
    if (small) {
        g_be = small;
        CHECK_OK(run_raw("Gemm", 13, 3, in, konst, RLX_DTYPE_F32, 2, yd, 1, at2, &split));
        g_be = saved;
        small->destroy(small);
    } else {
        rlx_node_attr_free(&at2[0]);
    }
    if (whole && split)
        CHECK_MSG(memcmp(whole->data, split->data, whole->nbytes) == 0, "Gemm split by rows of B differs in bits");
    double ref[150];
    const float *pa = a->data, *pb = b->data, *pc = c->data;
    for (int m = 0; m < 3; m++)
        for (int n = 0; n < 50; n++) {
            double acc = 0;
            for (int k = 0; k < 40; k++) acc += (double)pa[m * 40 + k] * pb[n * 40 + k];
            ref[m * 50 + n] = acc + pc[n];
        }
    check_close("Gemm split", split, ref, 150, 1e-5, 1e-5);
    rlx_tensor_destroy(whole);
    rlx_tensor_destroy(split);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(c);
}

/* A plan compiled once and run several times gives the same results. */
static void test_rerun(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d[2] = { 5, 9 };
    CHECK_OK(rlx_model_add_input(m, "a", RLX_DTYPE_F32, 2, d, NULL));
    CHECK_OK(rlx_model_add_input(m, "b", RLX_DTYPE_F32, 2, d, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m", 2, (const char *[]){ "a", "b" }, 1, (const char *[]){ "p" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Tanh", "t", 1, (const char *[]){ "p" }, 1, (const char *[]){ "q" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "q"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_session_create_with_options(m, &o, g_opts, &s));
    for (int it = 0; s && it < 3; it++) {
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2), *b = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2);
        const char *names[2] = { "b", "a" };
        const rlx_tensor *in[2] = { b, a };
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 2, names, in, &out, &n));
        if (out) {
            double ref[45];
            for (int i = 0; i < 45; i++) ref[i] = tanh((double)(((float *)a->data)[i] * ((float *)b->data)[i]));
            check_close("rerun", out[0], ref, 45, 1e-4, 2e-6);
        }
        free_outs(out, n);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

#ifdef RLX_HAVE_WEBGPU
/* A device lost after compile: run fails with RLX_ERR_DEVICE_LOST (and
 * keeps failing), nothing aborts. The loss is simulated by destroying the
 * backend's device. */
static void test_device_lost(void) {
    rlx_backend *be = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, g_opts, &be));
    if (!be) return;
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    int64_t d[1] = { 16 };
    int x = add_raw_value(g, "x", 1, d), y = add_raw_value(g, "y", 1, d);
    CHECK_OK(RLX_GROW(g->inputs, g->cap_inputs, 1));
    g->inputs[g->n_inputs++] = x;
    add_raw_node(g, "relu", "Relu", x, y);
    CHECK_OK(RLX_GROW(g->outputs, g->cap_outputs, 1));
    g->outputs[g->n_outputs++] = y;
    rlx_program *p = calloc(1, sizeof *p);
    p->g = g;
    p->n_steps = 1;
    p->steps = calloc(1, sizeof(int));
    p->step_on = calloc(1, 1);
    p->step_on[0] = RLX_STEP_GPU;
    rlx_exec *exe = NULL;
    CHECK_OK(rlx_plan_memory(p));
    CHECK_OK(rlx_plan_segments(p));
    CHECK_OK(rlx_exec_create(be, NULL, p, &exe));
    rlx_tensor *tx = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1);
    const rlx_tensor *in[1] = { tx };
    rlx_tensor *out[1] = { NULL };
    if (exe) {
        CHECK_OK(rlx_exec_run(exe, in, out));
        rlx_tensor_destroy(out[0]);
        out[0] = NULL;
        wgpuDeviceDestroy(((wg_backend *)be)->dev);
        CHECK_FAILS(rlx_exec_run(exe, in, out), RLX_ERR_DEVICE_LOST, "lost");
        CHECK(out[0] == NULL);
        CHECK_FAILS(rlx_exec_run(exe, in, out), RLX_ERR_DEVICE_LOST, "lost");
        rlx_exec_destroy(exe);
    }
    rlx_program *p2 = NULL;
    (void)p2;
    rlx_program_destroy(p);
    rlx_tensor_destroy(tx);
    be->destroy(be);
}
#endif

int main(void) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu: skipped: no GPU adapter (lavapipe counts; install mesa-vulkan-drivers); set "
                        "RLX_TEST_REQUIRE_GPU=1 to make this a failure\n");
        return 0;
    }
    g_opts = test_options("gpu.poison=1", "gpu.max_binding_bytes=auto", NULL);
    rlx_session_options o = { .device = "gpu" };
    if (rlx_backend_webgpu_create("gpu", &o, g_opts, &g_be) != RLX_OK) {
        fprintf(stderr, "cannot open the GPU: %s\n", rlx_last_error());
        return 1;
    }
    test_adapters();
    test_unary();
    test_binary();
    test_conv();
    test_conv_transpose();
    test_pools();
    test_raw_tensor_ops();
    test_raw_tensor_ops2();
    test_raw_nn_ops();
    test_tensor_ops_vs_cpu();
    test_nn_ops_vs_cpu();
    test_cpu_fallback();
    test_views();
    test_view_ops_vs_cpu();
    test_grid_folding();
    test_binding_limit();
    test_gemm_split();
    test_rerun();
#ifdef RLX_HAVE_WEBGPU
    test_device_lost();
#endif
    g_be->destroy(g_be);
    rlx_options_destroy(g_opts);
    TEST_MAIN_END();
}
