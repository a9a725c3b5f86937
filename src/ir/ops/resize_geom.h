/* Resize and Upsample geometry: the attributes and the scales / sizes / roi
 * inputs resolved, for one input shape, to an output shape and a per-axis
 * scale for the coordinate transform. Shape inference (with constant
 * scales/sizes) and the CPU kernel read this one resolution.
 * Semantics: ONNX Resize-10/11/13/18/19 and Upsample-7/9. */
#ifndef RLX_IR_OPS_RESIZE_GEOM_H
#define RLX_IR_OPS_RESIZE_GEOM_H

#include "ir/graph.h"

typedef enum rlx_resize_mode {
    RLX_RESIZE_NEAREST,
    RLX_RESIZE_LINEAR,
    RLX_RESIZE_CUBIC
} rlx_resize_mode;

typedef enum rlx_resize_coord {
    RLX_COORD_HALF_PIXEL,
    RLX_COORD_HALF_PIXEL_SYMMETRIC, /* Resize-19 */
    RLX_COORD_PYTORCH_HALF_PIXEL,
    RLX_COORD_ALIGN_CORNERS,
    RLX_COORD_ASYMMETRIC,
    RLX_COORD_TF_HALF_PIXEL_FOR_NN, /* Resize-11 only */
    RLX_COORD_TF_CROP_AND_RESIZE
} rlx_resize_coord;

typedef enum rlx_resize_nearest {
    RLX_NEAREST_ROUND_PREFER_FLOOR,
    RLX_NEAREST_ROUND_PREFER_CEIL,
    RLX_NEAREST_FLOOR,
    RLX_NEAREST_CEIL,
    /* Resize-10 and Upsample, which have no nearest_mode: floor when the
     * scale is >= 1, ceil when it is < 1 (what onnxruntime does). */
    RLX_NEAREST_LEGACY
} rlx_resize_nearest;

typedef enum rlx_resize_policy {
    RLX_KEEP_STRETCH,
    RLX_KEEP_NOT_LARGER,
    RLX_KEEP_NOT_SMALLER
} rlx_resize_policy;

/* The attributes of a Resize or Upsample node. */
typedef struct rlx_resize_attrs {
    bool upsample; /* the node is Upsample */
    rlx_resize_mode mode;
    rlx_resize_coord coord;
    rlx_resize_nearest nearest;
    double cubic_a;             /* cubic_coeff_a, default -0.75 */
    bool exclude_outside;
    double extrapolation_value; /* tf_crop_and_resize */
    bool antialias;             /* Resize-18 */
    rlx_resize_policy policy;   /* keep_aspect_ratio_policy, Resize-18 */
    int n_axes;                 /* 0: all axes */
    int axes[RLX_MAX_RANK];     /* normalised to [0, rank) */
} rlx_resize_attrs;

/* Reads and checks the attributes of node n (Resize or Upsample) for an input
 * of rank `rank` (-1 if unknown: axes are then left unnormalised and not
 * checked).
 * errors: RLX_ERR_INVALID_MODEL naming the node (unknown mode strings, bad
 *         axes), RLX_ERR_UNSUPPORTED (antialias with mode nearest). */
rlx_status rlx_resize_attrs_read(const rlx_node *n, int rank, rlx_resize_attrs *a);

typedef struct rlx_resize_geom {
    int rank;
    int64_t in[RLX_MAX_RANK];
    int64_t out[RLX_MAX_RANK]; /* RLX_DIM_DYN where unknown */
    /* Scale of the coordinate transform per axis (output / input, as given
     * by `scales`, or sizes / input); 0 where unknown. */
    double scale[RLX_MAX_RANK];
    double roi_start[RLX_MAX_RANK], roi_end[RLX_MAX_RANK]; /* 0 and 1 by default */
    /* true where the axis maps each output index to the same input index
     * (scale 1, same length, whole roi): the kernel copies along it. */
    bool identity[RLX_MAX_RANK];
    /* the roi input is f32: set by the caller after resolving (the
     * reference then does part of tf_crop_and_resize's arithmetic in f32,
     * see rlx_resize_source_coord in resize_geom.c) */
    bool roi_f32;
} rlx_resize_geom;

/* Resolves the output shape and scales.
 * x, rank: input dims (may hold RLX_DIM_DYN; the affected outputs are then
 *          RLX_DIM_DYN).
 * scales:  n_scales values (rank, or the number of axes) or NULL when absent
 *          or empty; sizes likewise (n_sizes); exactly one must be given
 *          unless both are NULL (then every output dim is RLX_DIM_DYN).
 * roi:     n_roi values [starts..., ends...] or NULL (only read by
 *          tf_crop_and_resize).
 * errors:  RLX_ERR_INVALID_MODEL naming the node (wrong counts, scales <= 0,
 *          Upsample scales < 1, negative sizes, an empty output dim from a
 *          non-empty input). */
rlx_status rlx_resize_geom_resolve(const rlx_node *n, const rlx_resize_attrs *a, const int64_t *x, int rank,
                                   const double *scales, size_t n_scales, const int64_t *sizes, size_t n_sizes,
                                   const double *roi, size_t n_roi, rlx_resize_geom *g);

/* The taps of one axis: output index o (in [0, g->out[d])) reads input
 * indices idx[o * n + j] (already clamped to [0, in - 1]) with weights
 * w[o * n + j], j < n; extrap[o] is 1 where tf_crop_and_resize puts the
 * source outside the input (the output element is then the
 * extrapolation_value). Nearest and identity axes have one tap of weight 1.
 * The arithmetic is the ONNX reference implementation's (onnx.reference,
 * Resize), in double and in the same order, so its exact ties (a source
 * coordinate of exactly k + 0.5) round the same way. */
typedef struct rlx_resize_taps {
    int n;
    int64_t *idx;
    double *w;
    uint8_t *extrap;
    void *block; /* the one allocation rlx_resize_taps_free frees (NULL: the caller's memory) */
} rlx_resize_taps;

/* Builds the taps of axis d (free with rlx_resize_taps_free; *t is cleared
 * on entry and on error).
 * errors: RLX_ERR_UNSUPPORTED naming node n when an axis needs more than
 *         2^24 taps per output element (antialias at a tiny scale),
 *         RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_resize_taps_build(const rlx_node *n, const rlx_resize_attrs *a, const rlx_resize_geom *g, int d,
                                 rlx_resize_taps *t);
void rlx_resize_taps_free(rlx_resize_taps *t);

/* Bytes of axis d's taps and their working space in one block (a multiple
 * of 64), for rlx_resize_taps_build_in; 0 when the axis needs more than
 * 2^24 taps per output element or the size overflows. */
size_t rlx_resize_taps_bytes(const rlx_resize_attrs *a, const rlx_resize_geom *g, int d);

/* rlx_resize_taps_build into mem (64-byte aligned, at least
 * rlx_resize_taps_bytes(a, g, d) bytes, the caller's: *t points into it
 * and rlx_resize_taps_free leaves it alone); the same taps, bit for bit.
 * errors: RLX_ERR_UNSUPPORTED as rlx_resize_taps_build. */
rlx_status rlx_resize_taps_build_in(const rlx_node *n, const rlx_resize_attrs *a, const rlx_resize_geom *g, int d,
                                    void *mem, rlx_resize_taps *t);

#endif
