/* The WebGPU lowering of rlx.Attention (contract in
 * src/ir/ops/internal_ops.h: Y = Softmax(Q K^T (* or /) scale + Mask) V over
 * the layouts of absorbed Transposes; ONNX MatMul-13, Mul/Div-14, Add-14,
 * Softmax-13, Transpose-13). Two generated kernels (lower_attention.c):
 *
 *  - "attention_tiled" (default): one workgroup per (batch, block of BQ
 *    query rows); K and V tiles of BK keys staged through workgroup memory
 *    as vec4 rows; each invocation computes 4 query rows x BK/TD keys of
 *    scores and 4 rows x TD-strided vec4 columns of the output in
 *    registers; online softmax with a running maximum and sum per row.
 *  - "attention" (v1, RLX_ATTENTION_KERNEL=v1): 8 query rows per
 *    workgroup, 16 invocations per row, scalar dot products.
 *
 * Selection, read at every lowering: RLX_ATTENTION_KERNEL unset or "auto":
 * the tiled kernel, v1 where the tiled kernel does not fit the device's
 * workgroup limits; "v2": the tiled kernel only (declines where it does
 * not fit); "v1": the old kernel only. RLX_ATTENTION_TILE=BQxBK forces the
 * tiled kernel's query rows (4, 8, 16, 32) and keys per tile (a multiple of
 * TD, the invocations per 4 rows, at most 8 TD); a tile that does not fit
 * declines the node; RLX_ATTENTION_VEC4=0 makes the tiled kernel use
 * scalar loads and stores. Declines (the node runs on the CPU): dtypes other
 * than f32, empty keys or depth, head dims above 256, a zero or non-finite
 * scale, counts of 2^31 elements or more. */
#ifndef RLX_BACKEND_WEBGPU_LOWER_ATTENTION_H
#define RLX_BACKEND_WEBGPU_LOWER_ATTENTION_H

#include "backend/webgpu/webgpu.h"

rlx_status wg_lower_attention(wg_lower *L);

#endif
