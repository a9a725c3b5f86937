/* Convolution and pooling geometry: the attributes of Conv, ConvTranspose,
 * MaxPool, AveragePool and LpPool resolved to integers for one input shape
 * (auto_pad, ceil_mode, output_shape applied). Shape inference, the CPU
 * kernels and the WGSL lowering all read this one resolution.
 * Semantics: ONNX Conv-11/22, ConvTranspose-11/22, MaxPool-12/22,
 * AveragePool-19/22, LpPool-18/22. */
#ifndef RLX_IR_OPS_CONV_GEOM_H
#define RLX_IR_OPS_CONV_GEOM_H

#include "ir/graph.h"

#define RLX_CONV_MAX_SPATIAL 3

/* The schema attributes of Conv, ConvTranspose, ConvInteger and QLinearConv
 * (their rows in ops_nn.def, ops_quant.def), with their defaults. */
#define RLX_CONV_ATTRS                                                                                      \
    RLX_ATTR_DEF_STRING("auto_pad", "NOTSET"), { "dilations", RLX_ATTR_INTS, false },                      \
    RLX_ATTR_DEF_INT("group", 1), { "kernel_shape", RLX_ATTR_INTS, false }, { "pads", RLX_ATTR_INTS, false }, \
    { "strides", RLX_ATTR_INTS, false }

typedef enum rlx_conv_kind {
    RLX_GEOM_CONV,
    RLX_GEOM_CONV_TRANSPOSE,
    RLX_GEOM_POOL
} rlx_conv_kind;

typedef struct rlx_conv_geom {
    int nsp;        /* number of spatial dims, 1..3 */
    int64_t n;      /* batch */
    int64_t c_in;   /* input channels */
    int64_t c_out;  /* output channels (pool: = c_in) */
    int64_t group;  /* conv groups (pool: 1) */
    int64_t in[RLX_CONV_MAX_SPATIAL];
    int64_t k[RLX_CONV_MAX_SPATIAL];
    int64_t out[RLX_CONV_MAX_SPATIAL];
    int64_t stride[RLX_CONV_MAX_SPATIAL];
    int64_t dil[RLX_CONV_MAX_SPATIAL];
    int64_t pad_begin[RLX_CONV_MAX_SPATIAL];
    int64_t pad_end[RLX_CONV_MAX_SPATIAL];
    int64_t out_pad[RLX_CONV_MAX_SPATIAL]; /* ConvTranspose output_padding */
    bool ceil_mode;                        /* pools */
    bool count_include_pad;                /* AveragePool */
} rlx_conv_geom;

/* Resolves the geometry of node n. x: input dims (rank = 2 + nsp); w: weight
 * dims for Conv/ConvTranspose (NULL for pools). Dims may be RLX_DIM_DYN
 * (then the affected output dims are RLX_DIM_DYN too).
 * kernel_shape, strides, dilations, pads, output_padding and output_shape
 * entries must lie in [0 or 1, 2^31 - 1] and spatial input dims at most
 * 2^62, so that no sum or product here overflows int64.
 * errors: RLX_ERR_INVALID_MODEL naming the node (rank, channel/group
 *         mismatch, kernel larger than the padded input, bad attribute
 *         lengths, attribute values out of range, output dims that
 *         overflow), RLX_ERR_UNSUPPORTED (more than 3 spatial dims). */
rlx_status rlx_conv_geom_resolve(const rlx_node *n, rlx_conv_kind kind, const int64_t *x, int x_rank,
                                 const int64_t *w, int w_rank, rlx_conv_geom *geom);

#endif
