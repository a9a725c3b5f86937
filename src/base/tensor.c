#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "rlx/half.h"

#include <stdlib.h>
#include <string.h>

bool rlx_shape_fits(const int64_t *dims, int rank) {
    uint64_t p = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0) continue;
        uint64_t d = (uint64_t)dims[i];
        if (d > (uint64_t)INT64_MAX / p) return false;
        p *= d;
    }
    return p <= SIZE_MAX;
}

rlx_status rlx_shape_numel(const int64_t *dims, int rank, size_t *out) {
    size_t n = 1;
    if (rank < 0 || rank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "rank %d is outside [0, %d]", rank, RLX_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "negative dim %lld", (long long)dims[i]);
    if (!rlx_shape_fits(dims, rank))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                        "shape too large (the product of its non-zero dims overflows int64)");
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    *out = n;
    return RLX_OK;
}

/* The header of a tensor of dtype and dims, with bytes checked; data unset. */
static rlx_status tensor_header(rlx_dtype dtype, const int64_t *dims, int rank, rlx_tensor **out) {
    *out = NULL;
    size_t es = rlx_dtype_size(dtype);
    if (!es) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor dtype %s (%d) is not supported", rlx_dtype_name(dtype), (int)dtype);
    size_t n = 0, bytes;
    RLX_TRY(rlx_shape_numel(dims, rank, &n));
    if (!rlx_mul_ok(n, es, &bytes)) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor byte size overflows");
    rlx_tensor *t = calloc(1, sizeof *t);
    if (!t) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (tensor header)");
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->nbytes = bytes;
    *out = t;
    return RLX_OK;
}

rlx_status rlx_tensor_create(rlx_dtype dtype, const int64_t *dims, int rank, rlx_tensor **out_tensor) {
    /* as rlx_tensor_create_strings */
    if (!out_tensor) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor output pointer is NULL");
    *out_tensor = NULL;
    if (rank && !dims) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "dims is NULL");
    rlx_tensor *t;
    RLX_TRY(tensor_header(dtype, dims, rank, &t));
    t->data = rlx_alloc_aligned(t->nbytes);
    if (!t->data) {
        size_t bytes = t->nbytes;
        free(t);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory allocating a %zu-byte tensor", bytes);
    }
    *out_tensor = t;
    return RLX_OK;
}

rlx_status rlx_tensor_wrap(rlx_dtype dtype, const int64_t *dims, int rank, void *data, rlx_tensor **out) {
    RLX_TRY(tensor_header(dtype, dims, rank, out));
    (*out)->data = data;
    return RLX_OK;
}

void rlx_tensor_destroy(rlx_tensor *tensor) {
    if (!tensor) return;
    rlx_free_aligned(tensor->data);
    free(tensor);
}

size_t rlx_dims_span(const int64_t *dims, int from, int to) {
    size_t n = 1;
    for (int i = from; i < to; i++) n *= (size_t)dims[i];
    return n;
}

/* the public one: 0 for a tensor whose rank is outside [0, RLX_MAX_RANK]
 * (a caller's struct; no dims beyond the array are read) */
size_t rlx_tensor_numel(const rlx_tensor *t) {
    if (!t || t->rank < 0 || t->rank > RLX_MAX_RANK) return 0;
    return rlx_dims_span(t->dims, 0, t->rank);
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

rlx_status rlx_tensor_clone(const rlx_tensor *src, rlx_tensor **out) {
    if (src->dtype == RLX_DTYPE_STRING)
        return rlx_tensor_strings_from(src->dims, src->rank, (const char *const *)src->data, NULL, out);
    RLX_TRY(rlx_tensor_create(src->dtype, src->dims, src->rank, out));
    /* the bytes of the shape: never more than the copy holds */
    size_t nb = src->nbytes < (*out)->nbytes ? src->nbytes : (*out)->nbytes;
    if (nb) memcpy((*out)->data, src->data, nb);
    return RLX_OK;
}

int rlx_shape_equal(const int64_t *a, int ra, const int64_t *b, int rb) {
    if (ra != rb) return 0;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

rlx_status rlx_tensor_check(const rlx_tensor *t, const char *what, size_t *out_bytes) {
    if (!t) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: the tensor is NULL", what);
    if (t->rank < 0 || t->rank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: rank %d is outside [0, %d]", what, t->rank, RLX_MAX_RANK);
    size_t es = rlx_dtype_size(t->dtype), numel, bytes;
    char sb[200];
    if (!es) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: dtype %d is not one rlx knows", what, (int)t->dtype);
    if (rlx_shape_numel(t->dims, t->rank, &numel)) return rlx_fail_prefix(RLX_ERR_INVALID_ARGUMENT, "%s: ", what);
    if (!rlx_mul_ok(numel, es, &bytes) || bytes > t->nbytes)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: nbytes %zu is smaller than its %s shape %s needs", what,
                        t->nbytes, rlx_dtype_name(t->dtype), rlx_shape_str(t->dims, t->rank, sb, sizeof sb));
    if (bytes && !t->data)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: data is NULL (its shape %s holds %zu bytes)", what,
                        rlx_shape_str(t->dims, t->rank, sb, sizeof sb), bytes);
    if (out_bytes) *out_bytes = bytes;
    return RLX_OK;
}

/* rlx_shape_str, and with q the unknown dims (negative) and an unknown
 * rank (negative) as '?'. */
static char *shape_str(const int64_t *dims, int rank, char *buf, size_t cap, bool q) {
    size_t o = 0;
    if (cap == 0) return buf;
    /* a rank outside the dims array (a caller's tensor not yet checked):
     * no dims read */
    if (rank < 0 || rank > RLX_MAX_RANK) {
        if (q && rank < 0) snprintf(buf, cap, "[?]");
        else snprintf(buf, cap, "[rank %d]", rank);
        return buf;
    }
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < rank && o < cap; i++) {
        if (q && dims[i] < 0) o += (size_t)snprintf(buf + o, cap - o, i ? ",?" : "?");
        else o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)dims[i]);
    }
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

char *rlx_shape_str(const int64_t *dims, int rank, char *buf, size_t cap) {
    return shape_str(dims, rank, buf, cap, false);
}

char *rlx_shape_str_q(const int64_t *dims, int rank, char *buf, size_t cap) {
    return shape_str(dims, rank, buf, cap, true);
}

/* ------------------------------------------------------------ strings */

rlx_status rlx_tensor_strings_from(const int64_t *dims, int rank, const char *const *strings, const size_t *lens,
                                   rlx_tensor **out) {
    *out = NULL;
    size_t n = 0, head, total;
    RLX_TRY(rlx_shape_numel(dims, rank, &n));
    if (!rlx_mul_ok(n, sizeof(char *), &head))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "string tensor byte size overflows");
    if (n && !strings) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "string tensor: the element array is NULL");
    total = head;
    for (size_t i = 0; i < n; i++) {
        if (!strings[i])
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "string tensor element %zu is NULL (every element must point "
                            "to a NUL-terminated string)", i);
        size_t len = lens ? lens[i] : strlen(strings[i]);
        if (lens && memchr(strings[i], 0, len))
            return rlx_fail(RLX_ERR_UNSUPPORTED, "string element %zu holds a NUL byte, which rlx strings (NUL-terminated) "
                            "cannot represent", i);
        if (len >= SIZE_MAX - total) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "string tensor byte size overflows");
        total += len + 1;
    }
    rlx_tensor *t = calloc(1, sizeof *t);
    if (!t) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (tensor header)");
    t->data = rlx_alloc_aligned(total);
    if (!t->data) {
        free(t);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory allocating a %zu-byte string tensor", total);
    }
    const char **ptr = t->data;
    char *chars = (char *)t->data + head;
    for (size_t i = 0; i < n; i++) {
        size_t len = lens ? lens[i] : strlen(strings[i]);
        memcpy(chars, strings[i], len);
        chars[len] = 0;
        ptr[i] = chars;
        chars += len + 1;
    }
    t->dtype = RLX_DTYPE_STRING;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->nbytes = head;
    *out = t;
    return RLX_OK;
}

rlx_status rlx_tensor_create_strings(const int64_t *dims, int rank, const char *const *strings,
                                     rlx_tensor **out_tensor) {
    if (!out_tensor) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor output pointer is NULL");
    *out_tensor = NULL;
    if (rank && !dims) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "dims is NULL");
    return rlx_tensor_strings_from(dims, rank, strings, NULL, out_tensor);
}

rlx_status rlx_tensor_own_strings(rlx_tensor *t) {
    if (t->dtype != RLX_DTYPE_STRING) return RLX_OK;
    rlx_tensor *c;
    RLX_TRY(rlx_tensor_strings_from(t->dims, t->rank, (const char *const *)t->data, NULL, &c));
    rlx_free_aligned(t->data);
    t->data = c->data;
    t->nbytes = c->nbytes;
    c->data = NULL;
    rlx_tensor_destroy(c);
    return RLX_OK;
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
