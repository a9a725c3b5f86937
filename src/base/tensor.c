#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"

#include <stdlib.h>
#include <string.h>

rlx_status rlx_shape_numel(const int64_t *dims, int rank, size_t *out) {
    size_t n = 1;
    if (rank < 0 || rank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "rank %d is outside [0, %d]", rank, RLX_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "negative dim %lld", (long long)dims[i]);
        if ((uint64_t)dims[i] > SIZE_MAX || !rlx_mul_ok(n, (size_t)dims[i], &n))
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "shape too large (element count overflows)");
    }
    *out = n;
    return RLX_OK;
}

rlx_status rlx_tensor_create(rlx_dtype dtype, const int64_t *dims, int rank, rlx_tensor **out_tensor) {
    *out_tensor = NULL;
    size_t es = rlx_dtype_size(dtype);
    if (!es) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor dtype %s (%d) is not supported", rlx_dtype_name(dtype), (int)dtype);
    size_t n, bytes;
    RLX_TRY(rlx_shape_numel(dims, rank, &n));
    if (!rlx_mul_ok(n, es, &bytes)) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor byte size overflows");
    rlx_tensor *t = calloc(1, sizeof *t);
    if (!t) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (tensor header)");
    t->data = rlx_alloc_aligned(bytes);
    if (!t->data) {
        free(t);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory allocating a %zu-byte tensor", bytes);
    }
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->nbytes = bytes;
    *out_tensor = t;
    return RLX_OK;
}

void rlx_tensor_destroy(rlx_tensor *tensor) {
    if (!tensor) return;
    rlx_free_aligned(tensor->data);
    free(tensor);
}

size_t rlx_tensor_numel(const rlx_tensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= (size_t)t->dims[i];
    return n;
}

rlx_status rlx_tensor_clone(const rlx_tensor *src, rlx_tensor **out) {
    if (src->dtype == RLX_DTYPE_STRING)
        return rlx_tensor_strings_from(src->dims, src->rank, (const char *const *)src->data, NULL, out);
    RLX_TRY(rlx_tensor_create(src->dtype, src->dims, src->rank, out));
    if (src->nbytes) memcpy((*out)->data, src->data, src->nbytes);
    return RLX_OK;
}

int rlx_shape_equal(const int64_t *a, int ra, const int64_t *b, int rb) {
    if (ra != rb) return 0;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

char *rlx_shape_str(const int64_t *dims, int rank, char *buf, size_t cap) {
    size_t o = 0;
    if (cap == 0) return buf;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* ------------------------------------------------------------ strings */

rlx_status rlx_tensor_strings_from(const int64_t *dims, int rank, const char *const *strings, const size_t *lens,
                                   rlx_tensor **out) {
    *out = NULL;
    size_t n, head, total;
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
