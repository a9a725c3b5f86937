/* Internal tensor helpers beyond the public API. */
#ifndef RLX_BASE_TENSOR_H
#define RLX_BASE_TENSOR_H

#include <stdio.h>
#include "rlx/rlx.h"

/* Product of dims[from..to) (unchecked: for shapes already validated). */
size_t rlx_dims_span(const int64_t *dims, int from, int to);

/* Row-major strides (in elements) of a shape. */
void rlx_strides(const int64_t *dims, int rank, int64_t *strides);

/* Broadcast iteration: for output shape (rank, dims), strides of an input
 * of shape (in_rank, in_dims) aligned to the right, 0 where broadcast. */
void rlx_broadcast_strides(const int64_t *in_dims, int in_rank, int rank, int64_t *strides);

/* Whether the product of the non-zero entries of dims[0..rank) fits in
 * int64 (negative entries, i.e. dynamic dims, are skipped). A shape that
 * passes has every partial product of its dims in range too (Flatten's
 * outer and inner sizes, strides, reshape groups), whatever its element
 * count; one that fails is refused even when a zero dim makes it empty, so
 * that [2^40, 2^40, 0] and [0, 2^40, 2^40] are treated alike. */
bool rlx_shape_fits(const int64_t *dims, int rank);

/* Product of dims (the element count) in *out. errors:
 * RLX_ERR_INVALID_ARGUMENT for a rank outside [0, RLX_MAX_RANK], a negative
 * dim, or a shape that fails rlx_shape_fits (also when it holds a 0). */
rlx_status rlx_shape_numel(const int64_t *dims, int rank, size_t *out);

/* A tensor that adopts `data`: a block from rlx_alloc_aligned of at least
 * numel * dtype-size bytes (rlx_tensor_destroy frees it). On error data
 * stays the caller's. errors: as rlx_tensor_create. */
rlx_status rlx_tensor_wrap(rlx_dtype dtype, const int64_t *dims, int rank, void *data, rlx_tensor **out);

/* Deep copy. A string tensor's copy owns its characters (see
 * rlx_tensor_strings_from); a NULL element is refused
 * (RLX_ERR_INVALID_ARGUMENT). */
rlx_status rlx_tensor_clone(const rlx_tensor *src, rlx_tensor **out);

/* A self-contained string tensor (dtype RLX_DTYPE_STRING): one allocation
 * holds the numel element pointers (t->nbytes = numel * sizeof(char *))
 * followed by the characters they point to, each NUL-terminated, so
 * rlx_tensor_destroy frees the characters with the tensor.
 * strings: numel elements (row-major); lens: their byte lengths, or NULL
 * to take strlen (with lens, an element holding a NUL byte is refused:
 * RLX_ERR_UNSUPPORTED). errors: RLX_ERR_INVALID_ARGUMENT (NULL element,
 * bad dims, size overflow), RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_tensor_strings_from(const int64_t *dims, int rank, const char *const *strings, const size_t *lens,
                                   rlx_tensor **out);

/* Makes a string tensor self-contained in place: copies the characters
 * its elements point to into a new block (as above) and frees the old
 * data. No-op for other dtypes. errors: as rlx_tensor_strings_from. */
rlx_status rlx_tensor_own_strings(rlx_tensor *t);

int rlx_shape_equal(const int64_t *a, int ra, const int64_t *b, int rb);

/* Checks a tensor a caller built: rank in [0, RLX_MAX_RANK] first (before
 * anything reads dims), a known dtype, dims >= 0 whose product fits,
 * nbytes at least what the shape needs (*out_bytes, may be NULL) and data
 * non-NULL when that is not 0. The message starts with `what` ("input
 * 'x'"). errors: RLX_ERR_INVALID_ARGUMENT. */
rlx_status rlx_tensor_check(const rlx_tensor *t, const char *what, size_t *out_bytes);

/* Formats "[1,3,224,224]" into buf; returns buf. */
char *rlx_shape_str(const int64_t *dims, int rank, char *buf, size_t cap);
/* The same with the dims not known (negative) as "?" ("[1,?,768]"), and
 * "[?]" for a rank not known (negative): the op resolvers' messages. */
char *rlx_shape_str_q(const int64_t *dims, int rank, char *buf, size_t cap);

/* double to int64 truncating toward zero like a C cast, but defined for
 * every value (a C cast of NaN or of a value outside int64 is undefined
 * behaviour): NaN gives 0, values beyond the range saturate. */
int64_t rlx_f64_to_i64(double v);

/* Reads element i of any numeric tensor as double / int64 (floats through
 * rlx_f64_to_i64). */
double rlx_tensor_get_f64(const rlx_tensor *t, size_t i);
int64_t rlx_tensor_get_i64(const rlx_tensor *t, size_t i);
/* Writes element i of any numeric tensor from double / int64 (with C
 * conversion semantics; bool stores v != 0; a double into an integer
 * tensor goes through rlx_f64_to_i64, into u64 saturates at 0 and
 * 2^64 - 1). */
void rlx_tensor_set_f64(rlx_tensor *t, size_t i, double v);
void rlx_tensor_set_i64(rlx_tensor *t, size_t i, int64_t v);

/* Name of an ONNX TensorProto.DataType code ("float", "float8e4m3fn", ...),
 * also for types rlx does not support; "unknown" otherwise. */
const char *rlx_onnx_type_name(int32_t onnx_type);

#endif
