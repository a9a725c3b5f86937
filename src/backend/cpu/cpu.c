#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/half.h"
#include "base/mem.h"
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

rlx_status rlx_cpu_run_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                            rlx_tensor *const *out, bool reference) {
    rlx_cpu_kernel_fn fn = rlx_cpu_kernel_of(n->op);
    if (!fn) return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: no CPU kernel for op %s", rlx_node_desc(n), n->op_type);
    rlx_cpu_kctx k = { .g = g, .n = n, .in = in, .out = out, .reference = reference };
    return fn(&k);
}

rlx_status rlx_cpu_alloc_out(rlx_cpu_kctx *k, int i, rlx_dtype dtype, int rank, const int64_t *dims) {
    rlx_tensor *t = k->out[i];
    if (!t) return RLX_OK;
    rlx_tensor *tmp;
    RLX_TRY(rlx_tensor_create(dtype, dims, rank, &tmp));
    rlx_free_aligned(t->data);
    *t = *tmp;
    tmp->data = NULL;
    rlx_tensor_destroy(tmp);
    return RLX_OK;
}

rlx_status rlx_cpu_fail(const rlx_cpu_kctx *k, rlx_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlx_fail(st, "%s: %s", rlx_node_desc(k->n), msg);
}

double rlx_tensor_get_f64(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_F16: return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BF16: return rlx_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case RLX_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case RLX_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    case RLX_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case RLX_DTYPE_U64: return (double)((const uint64_t *)t->data)[i];
    default: return 0;
    }
}

int64_t rlx_tensor_get_i64(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_I64: return ((const int64_t *)t->data)[i];
    case RLX_DTYPE_U64: return (int64_t)((const uint64_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    case RLX_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case RLX_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    default: return rlx_f64_to_i64(rlx_tensor_get_f64(t, i));
    }
}

int64_t rlx_f64_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

void rlx_tensor_set_f64(rlx_tensor *t, size_t i, double v) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
    case RLX_DTYPE_F64: ((double *)t->data)[i] = v; break;
    case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = rlx_f32_to_f16((float)v); break;
    case RLX_DTYPE_BF16: ((uint16_t *)t->data)[i] = rlx_f32_to_bf16((float)v); break;
    case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    case RLX_DTYPE_U64: /* above 2^63 does not fit the int64 path */
        ((uint64_t *)t->data)[i] = !(v > 0) ? (uint64_t)rlx_f64_to_i64(v)
                                   : v >= 18446744073709551616.0 ? UINT64_MAX
                                   : (uint64_t)v;
        break;
    default: rlx_tensor_set_i64(t, i, rlx_f64_to_i64(v)); break;
    }
}

void rlx_tensor_set_i64(rlx_tensor *t, size_t i, int64_t v) {
    switch (t->dtype) {
    case RLX_DTYPE_I64: ((int64_t *)t->data)[i] = v; break;
    case RLX_DTYPE_U64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
    case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case RLX_DTYPE_U32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case RLX_DTYPE_I16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case RLX_DTYPE_U16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case RLX_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case RLX_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    default: rlx_tensor_set_f64(t, i, (double)v); break;
    }
}

void rlx_strides(const int64_t *dims, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void rlx_broadcast_strides(const int64_t *in_dims, int in_rank, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int j = i - (rank - in_rank);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = in_dims[j] == 1 ? 0 : s;
        s *= in_dims[j];
    }
}
