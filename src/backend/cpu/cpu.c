#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/mem.h"
#include "base/options.h"
#include "base/tensor.h"

static const rlx_cpu_kernel_fn *const k_cpu_families[] = {
#define RLX_CPU_FAMILY(name) rlx_cpu_kernels_##name,
    RLX_CPU_FAMILIES
#undef RLX_CPU_FAMILY
};

rlx_cpu_kernel_fn rlx_cpu_kernel_of(rlx_op_id op) {
    if (op <= RLX_OP_NONE || op >= RLX_OP_COUNT) return NULL;
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_cpu_families); f++)
        if (k_cpu_families[f][op]) return k_cpu_families[f][op];
    return NULL;
}

rlx_cpu_kernel_fn rlx_cpu_find_kernel(const char *domain, const char *op) {
    const rlx_op_def *d = rlx_op_find(domain, op);
    return d ? rlx_cpu_kernel_of(d->id) : NULL;
}

static rlx_status run_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                           rlx_tensor *const *out, bool reference, const struct rlx_cpu_sgemm_pack *pack,
                           const struct rlx_config *cfg) {
    rlx_cpu_kernel_fn fn = rlx_cpu_kernel_of(n->op);
    if (!fn) return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: no CPU kernel for op %s", rlx_node_desc(n), n->op_type);
    rlx_cpu_kctx k = { .g = g, .n = n, .in = in, .out = out, .reference = reference, .pack = pack, .cfg = cfg };
    return fn(&k);
}

rlx_status rlx_cpu_run_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                            rlx_tensor *const *out, bool reference) {
    return run_node(g, n, in, out, reference, NULL, NULL);
}

rlx_status rlx_cpu_run_node_cfg(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                rlx_tensor *const *out, bool reference, const struct rlx_config *cfg) {
    return run_node(g, n, in, out, reference, NULL, cfg);
}

rlx_status rlx_cpu_run_node_packed(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                   rlx_tensor *const *out, const struct rlx_cpu_sgemm_pack *pack) {
    return run_node(g, n, in, out, false, pack, NULL);
}

rlx_status rlx_cpu_out_limit(const rlx_cpu_kctx *k, int i, rlx_dtype dtype, int rank, const int64_t *dims,
                             uint64_t bytes) {
    if (!k->cfg) return RLX_OK;
    const rlx_value *v = (i < k->n->n_out) ? rlx_node_output(k->g, k->n, i) : NULL;
    char what[640], sh[160];
    snprintf(what, sizeof what, "%s: output '%s' (%s %s)", rlx_node_desc(k->n), v ? v->name : "?",
             rlx_dtype_name(dtype), rlx_shape_str(dims, rank, sh, sizeof sh));
    return rlx_limit_check(k->cfg, "limits.max_tensor_bytes", bytes, what);
}

rlx_status rlx_cpu_alloc_out(rlx_cpu_kctx *k, int i, rlx_dtype dtype, int rank, const int64_t *dims) {
    rlx_tensor *t = k->out[i];
    if (!t) return RLX_OK;
    size_t n, bytes;
    RLX_TRY(rlx_shape_numel(dims, rank, &n));
    if (!rlx_mul_ok(n, rlx_dtype_size(dtype), &bytes)) bytes = SIZE_MAX;
    RLX_TRY(rlx_cpu_out_limit(k, i, dtype, rank, dims, bytes));
    rlx_tensor *tmp;
    RLX_TRY(rlx_tensor_create(dtype, dims, rank, &tmp));
    rlx_free_aligned(t->data);
    *t = *tmp;
    tmp->data = NULL;
    rlx_tensor_destroy(tmp);
    return RLX_OK;
}

rlx_status rlx_cpu_fail(const rlx_cpu_kctx *k, rlx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = rlx_node_vfail(k->n, st, fmt, ap);
    va_end(ap);
    return st;
}

