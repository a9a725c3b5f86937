/* GPU-against-CPU runners shared by the WebGPU op tests
 * (tests/test_webgpu_reduce.c, tests/test_webgpu_index.c): one-node models
 * through the public builder, run on "cpu" and on "gpu", outputs compared
 * with stated tolerances, and a check in the dispatch report that the node
 * ran natively on the GPU. Static functions: include once per program. */
#ifndef RLX_TESTS_GPU_VS_CPU_H
#define RLX_TESTS_GPU_VS_CPU_H

#include "test.h"

#include "base/status.h"

/* ------------------------------------------------------------ runners */

/* The key/value options of every session these runners create (and of
 * the including test's own): gpu_vs_cpu_open sets them. */
static rlx_options *g_vs_opts;

/* The options every GPU op test runs under: arenas start as NaN
 * (gpu.poison), so an element a kernel forgets to write fails the
 * comparison; bindings as large as the device allows. */
static inline void gpu_vs_cpu_open(void) {
    g_vs_opts = test_options("gpu.poison=1", "gpu.max_binding_bytes=auto", NULL);
}

static inline void gpu_vs_cpu_close(void) {
    rlx_options_destroy(g_vs_opts);
    g_vs_opts = NULL;
}

/* One-node model through the public builder on `device` (options
 * g_vs_opts); on the GPU, checks in the dispatch report that the node ran
 * natively (expect_native). */
static inline rlx_status run_op(const char *op, int64_t opset, const char *device, bool expect_native, int n_in,
                                const rlx_tensor *const *in, const int *konst, int n_out, size_t n_attrs,
                                const rlx_attr *attrs, rlx_tensor ***out) {
    rlx_session_options o = { .device = device };
    return test_run_op_opts(op, opset, &o, g_vs_opts, expect_native, n_in, in, konst, n_out, n_attrs, attrs, out);
}

/* GPU against the CPU backend, n_out outputs, |g - c| <= atol + rtol |c|
 * (NaN equals NaN; integer and bool outputs need rtol = atol = 0). */
static inline void gpu_vs_cpu_n(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                         const int *konst, int n_out, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    rlx_tensor **c = NULL, **g = NULL;
    rlx_status sc = run_op(op, opset, "cpu", false, n_in, in, konst, n_out, n_attrs, attrs, &c);
    CHECK_MSG(sc == RLX_OK, "%s on cpu: %s", label, rlx_last_error());
    rlx_status sg = run_op(op, opset, "gpu", true, n_in, in, konst, n_out, n_attrs, attrs, &g);
    CHECK_MSG(sg == RLX_OK, "%s on gpu: %s", label, rlx_last_error());
    for (int i = 0; c && g && i < n_out; i++) {
        bool ok = test_allclose(g[i], c[i], rtol, atol);
        CHECK_MSG(ok, "%s: output %d: gpu differs from cpu (rtol %g, atol %g; max abs diff %g)", label, i, rtol, atol,
                  test_max_abs_diff(g[i], c[i]));
    }
    test_free_outputs(c, n_out);
    test_free_outputs(g, n_out);
}

static inline void gpu_vs_cpu(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                       const int *konst, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    gpu_vs_cpu_n(label, op, opset, n_in, in, konst, 1, n_attrs, attrs, rtol, atol);
}

static inline rlx_tensor *ints(int n, const int64_t *v) {
    int64_t d[1] = { n };
    return test_tensor_i64(1, d, v);
}

static inline rlx_tensor *rnd(rlx_dtype dt, int rank, const int64_t *dims, float lo, float hi) {
    return test_tensor_random(dt, rank, dims, lo, hi);
}

#endif
