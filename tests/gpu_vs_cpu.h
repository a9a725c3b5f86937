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

/* Parses the dispatch report: nodes and native nodes of `op`. */
static inline void report_counts(const char *report, const char *op, int *nodes, int *native) {
    *nodes = *native = -1;
    const char *p = report;
    size_t len = strlen(op);
    while ((p = strstr(p, op)) != NULL) {
        if (p > report && p[-1] == ' ' && p[len] == ' ') {
            int a = 0, b = 0;
            if (sscanf(p + len, "%d %d", &a, &b) == 2) {
                *nodes = a;
                *native = b;
                return;
            }
        }
        p += len;
    }
}

/* One-node model through the public builder; on the GPU, checks in the
 * dispatch report that the node ran natively (expect_native). */
static inline rlx_status run_op(const char *op, int64_t opset, const char *device, bool expect_native, int n_in,
                         const rlx_tensor *const *in, const int *konst, int n_out, size_t n_attrs,
                         const rlx_attr *attrs, rlx_tensor ***out) {
    *out = NULL;
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_status st;
    char in_names[16][16], out_names[16][16];
    const char *in_ptrs[16], *out_ptrs[16], *feed_names[16];
    const rlx_tensor *feeds[16];
    int n_feeds = 0;
    if (n_in > 16 || n_out > 16) return RLX_ERR_INVALID_ARGUMENT;
    if ((st = rlx_model_create(opset, &m))) return st;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) {
            in_ptrs[i] = "";
            continue;
        }
        snprintf(in_names[i], sizeof in_names[i], "in%d", i);
        in_ptrs[i] = in_names[i];
        if (konst && konst[i]) {
            st = rlx_model_add_initializer(m, in_names[i], in[i]);
        } else {
            st = rlx_model_add_input(m, in_names[i], in[i]->dtype, in[i]->rank, in[i]->dims, NULL);
            feed_names[n_feeds] = in_names[i];
            feeds[n_feeds++] = in[i];
        }
        if (st) goto done;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(out_names[i], sizeof out_names[i], "out%d", i);
        out_ptrs[i] = out_names[i];
    }
    if ((st = rlx_model_add_node(m, op, "node0", (size_t)n_in, in_ptrs, (size_t)n_out, out_ptrs, n_attrs, attrs)))
        goto done;
    for (int i = 0; i < n_out; i++)
        if ((st = rlx_model_add_output(m, out_names[i]))) goto done;
    if ((st = rlx_model_finish(m))) goto done;
    rlx_session_options o = { .device = device };
    if ((st = rlx_session_create(m, &o, &s))) goto done;
    size_t n_got = 0;
    st = rlx_session_run(s, (size_t)n_feeds, feed_names, feeds, out, &n_got);
    if (!st && expect_native) {
        int nodes, native;
        report_counts(rlx_session_dispatch_report(s), op, &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "%s did not run natively on %s:\n%s", op, device,
                  rlx_session_dispatch_report(s));
    }
done:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return st;
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
