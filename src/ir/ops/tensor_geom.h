/* Geometry of the tensor-family ops that both shape inference
 * (src/ir/ops/ops_tensor.c) and the CPU kernels (src/backend/cpu/
 * cpu_tensor.c) need: Slice bounds, Pad amounts, Split sizes, Shape's
 * start/end and Range's length, resolved to integers in one place so the
 * two homes of an op cannot disagree.
 *
 * Every function that can fail names the node: "node 'x' (Slice): ...". */
#ifndef RLX_IR_OPS_TENSOR_GEOM_H
#define RLX_IR_OPS_TENSOR_GEOM_H

#include "ir/graph.h"

/* Slice (ONNX Slice-10/11/13; Slice-1 passes its attributes the same way).
 * Per axis of the input: the first source index, the step, and the output
 * extent. Axes that no entry names get start 0, step 1 and the full dim. */
typedef struct rlx_slice_geom {
    int rank;
    int64_t start[RLX_MAX_RANK];
    int64_t step[RLX_MAX_RANK];
    int64_t count[RLX_MAX_RANK]; /* RLX_DIM_DYN when the input dim is dynamic and the slice is not the whole axis */
    bool full[RLX_MAX_RANK];     /* the axis is taken whole (start 0, step 1, end past the dim) */
} rlx_slice_geom;

/* dims: input dims (rank entries; RLX_DIM_DYN allowed). starts/ends: n
 * entries each; axes: n entries in [-rank, rank) or NULL for 0..n-1; steps:
 * n non-zero entries or NULL for all 1. Starts and ends are clamped as ONNX
 * specifies: for step > 0 into [0, dim], for step < 0 start into [0, dim-1]
 * and end into [-1, dim-1], after adding dim to negative values.
 * errors: RLX_ERR_INVALID_MODEL (n > rank, axis out of range or repeated,
 *         step 0). */
rlx_status rlx_slice_resolve(const rlx_node *n, int rank, const int64_t *dims, const int64_t *starts,
                             const int64_t *ends, const int64_t *axes, const int64_t *steps, size_t count,
                             rlx_slice_geom *out);

/* Pad (ONNX Pad-2 pads attribute, Pad-11/13 pads input, Pad-18 axes input):
 * pads holds n_pads = 2 * n_axes values [begin_0.., end_0..] for the axes
 * listed in `axes` (NULL: every axis, n_axes = rank). Fills begin[rank] and
 * end[rank]; negative values crop.
 * errors: RLX_ERR_INVALID_MODEL (wrong count, axis out of range or
 *         repeated). */
rlx_status rlx_pad_resolve(const rlx_node *n, int rank, const int64_t *pads, size_t n_pads, const int64_t *axes,
                           size_t n_axes, int64_t *begin, int64_t *end);

/* Pad modes: ONNX Pad-2 constant, reflect, edge; Pad-19 adds wrap. */
typedef enum rlx_pad_mode { RLX_PAD_CONSTANT, RLX_PAD_REFLECT, RLX_PAD_EDGE, RLX_PAD_WRAP } rlx_pad_mode;

/* Reads the node's `mode` attribute (default "constant").
 * errors: RLX_ERR_INVALID_MODEL (unknown mode, or wrap before Pad-19). */
rlx_status rlx_pad_mode_of(const rlx_node *n, rlx_pad_mode *mode);

/* Split (ONNX Split-2/11 `split` attribute, Split-13 `split` input, Split-18
 * `num_outputs`): sizes of the n_out outputs along an axis of extent `dim`
 * (RLX_DIM_DYN allowed: equal parts are then RLX_DIM_DYN). split: n_split
 * sizes or NULL. Without split the axis is cut into equal parts; from
 * Split-18 with num_outputs, into ceil(dim / n_out) parts with a smaller
 * last one.
 * errors: RLX_ERR_INVALID_MODEL (count or sum of split wrong, negative size,
 *         dim not divisible, num_outputs differing from the outputs). */
rlx_status rlx_split_sizes(const rlx_node *n, int64_t dim, const int64_t *split, size_t n_split, int n_out,
                           int64_t *sizes);

/* Shape-15 start/end: the half-open range [*s, *e) of dims that Shape
 * returns for an input of rank `rank` (negative values count from the end,
 * both clamp into [0, rank]; *e >= *s). Before Shape-15 the whole range. */
void rlx_shape_range(const rlx_node *n, int rank, int *s, int *e);

/* Range-11: number of elements max(ceil((limit - start) / delta), 0).
 * is_float selects the float formula (computed in double) or the integer
 * one (exact in int64).
 * errors: RLX_ERR_INVALID_MODEL (delta 0, a NaN start, limit or delta,
 * an infinite or undefined count, length above 2^40 elements). */
rlx_status rlx_range_count(const rlx_node *n, bool is_float, double fs, double fl, double fd, int64_t is, int64_t il,
                           int64_t id, int64_t *count);

/* Transpose (ONNX Transpose-1/13/21): the permutation of an input of rank
 * `rank` (0..RLX_MAX_RANK): the node's perm, or the reversed axes when it
 * has none (ONNX's default, written only here). Fills perm[rank]: output
 * axis i is input axis perm[i].
 * errors: RLX_ERR_INVALID_MODEL (perm has another count than rank, or is
 *         not a permutation of 0..rank-1). */
rlx_status rlx_transpose_perm(const rlx_node *n, int rank, int64_t *perm);

/* a * b for dims >= 0, false on int64 overflow. */
bool rlx_dim_mul(int64_t a, int64_t b, int64_t *out);

#endif
