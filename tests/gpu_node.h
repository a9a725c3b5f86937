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

/* The backends gpu_open opened: gpu_option sets their options too. */
static rlx_backend *g_gpu_opened[2];

/* The key/value options of the backends gpu_open opens and of those and
 * the sessions a test makes later (gpu_options_with): arenas start as NaN
 * (gpu.poison), and the keys that select kernels at their defaults,
 * whatever the environment says, until gpu_option sets one. */
static rlx_options *g_gpu_opts;

/* Sets an option (by its key or its environment variable's name; v NULL:
 * the default) of a WebGPU backend created by rlx_backend_webgpu_create,
 * which resolved its options when it was created. */
static inline void gpu_set_option(rlx_backend *be, const char *name, const char *v) {
#ifdef RLX_HAVE_WEBGPU
    if (be) CHECK_OK(rlx_config_set(((wg_backend *)be)->own_cfg, name, v));
#else
    (void)be, (void)name, (void)v;
#endif
}

/* Sets `key` of o to its default value (so that its environment variable
 * does not apply). */
static inline void gpu_option_default(rlx_options *o, const char *key) {
    for (size_t i = 0; i < rlx_option_count(); i++) {
        rlx_option_info info;
        if (rlx_option_info_get(i, &info) == RLX_OK && strcmp(info.key, key) == 0) {
            CHECK_OK(rlx_options_set(o, key, info.default_value));
            return;
        }
    }
    CHECK_MSG(0, "no option %s", key);
}

/* Sets option `key` (v NULL: its default) in g_gpu_opts, for backends and
 * sessions made later, and on the backends gpu_open opened. */
static inline void gpu_option(const char *key, const char *v) {
    if (v) CHECK_OK(rlx_options_set(g_gpu_opts, key, v));
    else gpu_option_default(g_gpu_opts, key);
    for (int i = 0; i < 2; i++) gpu_set_option(g_gpu_opened[i], key, v);
}

/* A copy of g_gpu_opts with the "key=value" items of `items` set
 * (separated by ';', NULL: none); the caller destroys it. */
static inline rlx_options *gpu_options_with(const char *items) {
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    for (size_t i = 0; o && i < rlx_option_count(); i++) {
        rlx_option_info info;
        const char *v = NULL;
        if (rlx_option_info_get(i, &info) == RLX_OK && rlx_options_get(g_gpu_opts, info.key, &v) == RLX_OK && v)
            CHECK_OK(rlx_options_set(o, info.key, v));
    }
    test_options_add(o, items);
    return o;
}

/* Opens the f32 and the f16-mode backends with every key that selects
 * kernels at its default and arenas poisoned (g_gpu_opts); false (after a
 * message) when there is no GPU and it is not required. gpu.gemm_pipeline
 * and gpu.gemm_conv_geometry come from the environment: ctest runs the
 * GEMM and conv tests under their variables (variants with the default's
 * bits). gpu_close frees g_gpu_opts. */
static inline bool gpu_open(rlx_backend **be, rlx_backend **be16, const char *prog) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "%s: skipped: no GPU adapter; set RLX_TEST_REQUIRE_GPU=1 to make this a failure\n", prog);
        return false;
    }
    g_gpu_opts = test_options("gpu.poison=1", NULL);
    /* gpu.f16 is left unset: set, it would decide both backends' mode */
    static const char *const keys[] = { "gpu.max_binding_bytes", "gpu.gemm_tile", "gpu.gemm_kernel", "gpu.gemm_splitk",
                                        "gpu.gemm_vec4", "gpu.conv_algo", "gpu.gemm_target_wg", "gpu.pool_kernel",
                                        "gpu.coop", "gpu.gemm_prefetch", "gpu.timing_passes" };
    for (size_t i = 0; g_gpu_opts && i < sizeof keys / sizeof keys[0]; i++) gpu_option_default(g_gpu_opts, keys[i]);
    rlx_session_options o = { .device = "gpu" }, o16 = { .device = "gpu", .gpu_f16 = true };
    if (rlx_backend_webgpu_create("gpu", &o, g_gpu_opts, be) != RLX_OK ||
        rlx_backend_webgpu_create("gpu", &o16, g_gpu_opts, be16) != RLX_OK) {
        fprintf(stderr, "cannot open the GPU: %s\n", rlx_last_error());
        exit(1);
    }
    g_gpu_opened[0] = *be;
    g_gpu_opened[1] = *be16;
    return true;
}

static inline void gpu_close(void) {
    rlx_options_destroy(g_gpu_opts);
    g_gpu_opts = NULL;
}

#define TIMED(f, t0) (f(), fprintf(stderr, "  %-24s %6.2f s\n", #f, rlx_now_seconds() - (t0)), (t0) = rlx_now_seconds())

#endif
