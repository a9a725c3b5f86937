/* Helpers of the GPU kernel tests (test_gpu_gemm.c, test_gpu_conv.c,
 * test_webgpu.c):
 * one-node programs run straight on a WebGPU backend, comparisons against
 * double references and bit-for-bit. Header-only (static functions). */
#ifndef RLX_TESTS_GPU_NODE_H
#define RLX_TESTS_GPU_NODE_H

#include "test.h"

#include "backend/backend.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"
#endif
#include "base/mem.h"
#include "base/options.h"
#include "base/platform.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "ir/ops/act.h"
#include "plan/plan.h"
#include "rlx/half.h"
#include "runtime/session.h"

/* ------------------------------------------------------------ one-node programs */

/* An attribute `name` of `type`, its value still unset. */
static inline rlx_node_attr na_named(const char *name, rlx_attr_type type) {
    rlx_node_attr a;
    memset(&a, 0, sizeof a);
    a.name = rlx_strdup(name);
    a.type = type;
    return a;
}
static inline rlx_node_attr na_int(const char *name, int64_t v) {
    rlx_node_attr a = na_named(name, RLX_ATTR_INT);
    a.i = v;
    return a;
}
static inline rlx_node_attr na_f(const char *name, float v) {
    rlx_node_attr a = na_named(name, RLX_ATTR_FLOAT);
    a.f = v;
    return a;
}
static inline rlx_node_attr na_ints(const char *name, size_t n, const int64_t *v) {
    rlx_node_attr a = na_named(name, RLX_ATTR_INTS);
    a.n = n;
    a.ints = malloc((n + 1) * sizeof *a.ints);
    memcpy(a.ints, v, n * sizeof *v);
    return a;
}
static inline rlx_node_attr na_floats(const char *name, size_t n, const float *v) {
    rlx_node_attr a = na_named(name, RLX_ATTR_FLOATS);
    a.n = n;
    a.floats = malloc((n + 1) * sizeof *a.floats);
    memcpy(a.floats, v, n * sizeof *v);
    return a;
}
static inline rlx_node_attr na_s(const char *name, const char *v) {
    rlx_node_attr a = na_named(name, RLX_ATTR_STRING);
    a.s = rlx_strdup(v);
    return a;
}

/* Runs one node of `op` of `domain` ("" for ONNX, "rlx" for the internal
 * ops) (since-version `version`) on backend `be`: the graph is built by
 * hand (so the fused-epilogue attributes and MatMul's third input need no
 * pass), every step must run on the GPU. Inputs with konst[i] become
 * constants. attrs are adopted. *n_disp: dispatches. */
static inline rlx_status run_node_in(rlx_backend *be, const char *domain, const char *op, int version, int n_in,
                                     const rlx_tensor *const *in, const int *konst, rlx_dtype out_dt, int out_rank,
                                     const int64_t *out_dims, int n_attrs, rlx_node_attr *attrs, rlx_tensor **out,
                                     size_t *n_disp) {
    *out = NULL;
    if (n_in > 16) {
        for (int i = 0; i < n_attrs; i++) rlx_node_attr_free(&attrs[i]);
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "run_node: %d inputs, at most 16", n_in);
    }
    rlx_graph *g = NULL;
    rlx_status st = rlx_graph_create(21, &g);
    if (st) return st;
    int ids[16], oid = -1;
    const rlx_tensor *feeds[16];
    int n_feeds = 0;
    for (int i = 0; i < n_in && !st; i++) {
        ids[i] = -1;
        if (!in[i]) continue;
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        st = rlx_graph_add_value(g, name, &ids[i]);
        if (st) break;
        rlx_value *v = &g->values[ids[i]];
        if (konst && konst[i]) {
            rlx_tensor *t = NULL;
            st = rlx_tensor_clone(in[i], &t);
            if (st) break;
            rlx_value_set_konst(v, t);
            v->flags |= RLX_VALUE_INITIALIZER;
        } else {
            v->dtype = in[i]->dtype;
            rlx_value_set_shape(v, in[i]->rank, in[i]->dims, NULL);
            v->flags |= RLX_VALUE_INPUT;
            st = RLX_GROW(g->inputs, g->cap_inputs, g->n_inputs + 1);
            if (!st) g->inputs[g->n_inputs++] = ids[i];
            feeds[n_feeds++] = in[i];
        }
    }
    if (!st) st = rlx_graph_add_value(g, "out0", &oid);
    if (!st) {
        g->values[oid].dtype = out_dt;
        rlx_value_set_shape(&g->values[oid], out_rank, out_dims, NULL);
        g->values[oid].flags |= RLX_VALUE_OUTPUT;
        st = RLX_GROW(g->outputs, g->cap_outputs, g->n_outputs + 1);
        if (!st) g->outputs[g->n_outputs++] = oid;
    }
    if (!st) st = RLX_GROW(g->nodes, g->cap_nodes, g->n_nodes + 1);
    if (st) {
        for (int i = 0; i < n_attrs; i++) rlx_node_attr_free(&attrs[i]);
        rlx_graph_destroy(g);
        return st;
    }
    rlx_node *n = &g->nodes[g->n_nodes++];
    memset(n, 0, sizeof *n);
    n->name = rlx_strdup("node0");
    n->op_type = rlx_strdup(op);
    n->domain = rlx_strdup(domain);
    n->version = version;
    n->in = malloc(sizeof(int) * (size_t)(n_in + 1));
    memcpy(n->in, ids, sizeof(int) * (size_t)n_in);
    n->n_in = n_in;
    n->out = malloc(sizeof(int));
    n->out[0] = oid;
    n->n_out = 1;
    n->attrs = calloc((size_t)n_attrs + 1, sizeof *n->attrs);
    if (n_attrs) memcpy(n->attrs, attrs, sizeof *attrs * (size_t)n_attrs);
    n->n_attrs = n_attrs;
    n->def = rlx_op_find(domain, op);
    n->op = n->def ? n->def->id : RLX_OP_NONE;
    if (rlx_node_resolve_params(n) != RLX_OK) {
        rlx_graph_destroy(g);
        return RLX_ERR_OUT_OF_MEMORY;
    }
    g->values[oid].producer = 0;

    rlx_program *p = calloc(1, sizeof *p);
    p->g = g;
    p->steps = calloc(1, sizeof(int));
    p->step_on = calloc(1, 1);
    p->n_steps = 1;
    p->step_on[0] = RLX_STEP_GPU;
    rlx_exec *exe = NULL;
    if (!be->supports(be, g, n)) st = rlx_fail(RLX_ERR_UNSUPPORTED, "the WebGPU backend declined %s", op);
    if (!st) st = rlx_plan_memory(p);
    if (!st) st = rlx_plan_segments(p);
    if (!st) st = rlx_exec_create(be, NULL, p, &exe);
    if (!st) st = rlx_exec_run(exe, feeds, out);
    if (!st && n_disp) {
        rlx_exe_stats es;
        rlx_exec_stats(exe, &es);
        *n_disp = es.n_dispatches;
    }
    rlx_exec_destroy(exe);
    rlx_program_destroy(p);
    return st;
}

/* run_node_in for an ONNX op. */
static inline rlx_status run_node_dt(rlx_backend *be, const char *op, int version, int n_in,
                                     const rlx_tensor *const *in, const int *konst, rlx_dtype out_dt, int out_rank,
                                     const int64_t *out_dims, int n_attrs, rlx_node_attr *attrs, rlx_tensor **out,
                                     size_t *n_disp) {
    return run_node_in(be, "", op, version, n_in, in, konst, out_dt, out_rank, out_dims, n_attrs, attrs, out, n_disp);
}

/* run_node_dt with an f32 output. */
static inline rlx_status run_node(rlx_backend *be, const char *op, int version, int n_in, const rlx_tensor *const *in,
                                  const int *konst, int out_rank, const int64_t *out_dims, int n_attrs,
                                  rlx_node_attr *attrs, rlx_tensor **out, size_t *n_disp) {
    return run_node_dt(be, op, version, n_in, in, konst, RLX_DTYPE_F32, out_rank, out_dims, n_attrs, attrs, out,
                       n_disp);
}

/* got vs want (double): |g - w| <= atol + rtol |w| everywhere. */
static inline void check_close(const char *label, const rlx_tensor *got, const double *want, size_t n, double rtol,
                        double atol) {
    if (!got) return;
    CHECK_MSG(rlx_tensor_numel(got) == n, "%s: %zu elements, expected %zu", label, rlx_tensor_numel(got), n);
    if (rlx_tensor_numel(got) != n) return;
    const float *g = got->data;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(g[i] - want[i]) <= atol + rtol * fabs(want[i]))) {
            if (!bad) first = i;
            bad++;
        }
    CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ (first %zu: %.9g vs %.9g; rtol %g atol %g)", label, bad, n,
              first, bad ? g[first] : 0.0, bad ? want[first] : 0.0, rtol, atol);
}

static inline void check_bits(const char *label, const rlx_tensor *a, const rlx_tensor *b) {
    if (!a || !b) return;
    size_t diff = 0, first = 0;
    size_t n = a->nbytes / 4;
    for (size_t i = 0; i < n && a->nbytes == b->nbytes; i++)
        if (((const uint32_t *)a->data)[i] != ((const uint32_t *)b->data)[i]) {
            if (!diff) first = i;
            diff++;
        }
    CHECK_MSG(a->nbytes == b->nbytes && diff == 0, "%s: %zu of %zu elements differ in bits (first %zu: %.9g vs %.9g)",
              label, diff, n, first, diff ? ((const float *)a->data)[first] : 0.0,
              diff ? ((const float *)b->data)[first] : 0.0);
}

static inline float f16_round(float x) { return rlx_f16_to_f32(rlx_f32_to_f16(x)); }

/* The backends gpu_open opened: set_env sets their options too. */
static rlx_backend *g_gpu_opened[2];

/* Sets an option (by its environment variable's name; v NULL: the default)
 * of a WebGPU backend created by rlx_backend_webgpu_create, which resolved
 * its options when it was created. */
static inline void gpu_set_option(rlx_backend *be, const char *name, const char *v) {
#ifdef RLX_HAVE_WEBGPU
    if (be) CHECK_OK(rlx_config_set(((wg_backend *)be)->own_cfg, name, v));
#else
    (void)be, (void)name, (void)v;
#endif
}

/* Sets an environment variable (read by sessions and backends created
 * later) and the option it supplies on the backends gpu_open opened. */
static inline void set_env(const char *name, const char *v) {
    if (v) setenv(name, v, 1);
    else unsetenv(name);
    for (int i = 0; i < 2; i++) gpu_set_option(g_gpu_opened[i], name, v);
}


/* Opens the f32 and the f16-mode backends with every variable that selects
 * kernels unset and arenas poisoned; false (after a message) when there is
 * no GPU and it is not required. RLX_GEMM_PIPELINE and
 * RLX_GEMM_CONV_GEOMETRY are kept: ctest runs the GEMM and conv tests under
 * their values (variants with the default's bits). */
static inline bool gpu_open(rlx_backend **be, rlx_backend **be16, const char *prog) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "%s: skipped: no GPU adapter; set RLX_TEST_REQUIRE_GPU=1 to make this a failure\n", prog);
        return false;
    }
    setenv("RLX_GPU_POISON", "1", 1);
    static const char *const vars[] = { "RLX_MAX_BINDING_BYTES", "RLX_GEMM_TILE", "RLX_GEMM_KERNEL", "RLX_GEMM_SPLITK",
                                        "RLX_GEMM_VEC4", "RLX_CONV_ALGO", "RLX_GPU_F16", "RLX_GEMM_TARGET_WG",
                                        "RLX_POOL_KERNEL", "RLX_GPU_COOP", "RLX_GEMM_PREFETCH", "RLX_GPU_TIMING_PASSES" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    rlx_session_options o = { .device = "gpu" }, o16 = { .device = "gpu", .gpu_f16 = true };
    if (rlx_backend_webgpu_create("gpu", &o, be) != RLX_OK || rlx_backend_webgpu_create("gpu", &o16, be16) != RLX_OK) {
        fprintf(stderr, "cannot open the GPU: %s\n", rlx_last_error());
        exit(1);
    }
    g_gpu_opened[0] = *be;
    g_gpu_opened[1] = *be16;
    return true;
}

#define TIMED(f, t0) (f(), fprintf(stderr, "  %-24s %6.2f s\n", #f, rlx_now_seconds() - (t0)), (t0) = rlx_now_seconds())

#endif
