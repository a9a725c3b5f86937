/* Internal tensor helpers beyond the public API. */
#ifndef RLX_BASE_TENSOR_H
#define RLX_BASE_TENSOR_H

#include <stdio.h>
#include "rlx/rlx.h"

/* Product of dims with overflow and negativity checks. */
rlx_status rlx_shape_numel(const int64_t *dims, int rank, size_t *out);

/* Deep copy. */
rlx_status rlx_tensor_clone(const rlx_tensor *src, rlx_tensor **out);

int rlx_shape_equal(const int64_t *a, int ra, const int64_t *b, int rb);

/* Formats "[1,3,224,224]" into buf; returns buf. */
char *rlx_shape_str(const int64_t *dims, int rank, char *buf, size_t cap);

/* Name of an ONNX TensorProto.DataType code ("float", "float8e4m3fn", ...),
 * also for types rlx does not support; "unknown" otherwise. */
const char *rlx_onnx_type_name(int32_t onnx_type);

#endif
