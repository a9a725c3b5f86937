/* Neural-network ops: convolutions, pools, normalisations, GEMM/MatMul,
 * Softmax, Resize. Versions are the ONNX since-versions of each operator. */
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/ops.h"

static rlx_status infer_conv_like(rlx_infer_ctx *c, rlx_conv_kind kind) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    const rlx_value *w = kind == RLX_GEOM_POOL ? NULL : rlx_ictx_in(c, 1);
    if (kind != RLX_GEOM_POOL && !rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    if (x->rank < 0 || (w && w->rank < 0)) {
        for (int i = 0; i < c->n->n_out; i++) rlx_ictx_set_out_unknown(c, i, i == 1 ? RLX_DTYPE_I64 : x->dtype);
        return RLX_OK;
    }
    if (w && w->dtype != x->dtype)
        return rlx_ictx_fail(c, "weight dtype %s differs from input dtype %s", rlx_dtype_name(w->dtype),
                             rlx_dtype_name(x->dtype));
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(c->n, kind, x->dims, x->rank, w ? w->dims : NULL, w ? w->rank : 0, &g));
    const rlx_value *b = kind == RLX_GEOM_POOL ? NULL : rlx_ictx_in(c, 2);
    if (b && b->rank >= 0 && (b->rank != 1 || (g.c_out >= 0 && b->dims[0] >= 0 && b->dims[0] != g.c_out)))
        return rlx_ictx_fail(c, "bias must have shape [%lld]", (long long)g.c_out);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    dims[0] = x->dims[0];
    syms[0] = x->syms[0];
    dims[1] = g.c_out;
    syms[1] = kind == RLX_GEOM_POOL ? x->syms[1] : -1;
    for (int i = 0; i < g.nsp; i++) {
        dims[2 + i] = g.out[i];
        /* a spatial dim passes its symbol through when the op keeps it */
        bool same = g.k[i] == 1 && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
        syms[2 + i] = (g.out[i] < 0 && same) ? x->syms[2 + i] : -1;
    }
    rlx_ictx_set_out(c, 0, x->dtype, x->rank, dims, syms);
    /* MaxPool's optional Indices output */
    if (c->n->n_out > 1) rlx_ictx_set_out(c, 1, RLX_DTYPE_I64, x->rank, dims, syms);
    return RLX_OK;
}

static rlx_status infer_conv(rlx_infer_ctx *c) { return infer_conv_like(c, RLX_GEOM_CONV); }
static rlx_status infer_conv_transpose(rlx_infer_ctx *c) { return infer_conv_like(c, RLX_GEOM_CONV_TRANSPOSE); }
static rlx_status infer_pool(rlx_infer_ctx *c) { return infer_conv_like(c, RLX_GEOM_POOL); }

#define CONV_ATTRS                                                                                   \
    { "auto_pad", RLX_ATTR_STRING, false }, { "dilations", RLX_ATTR_INTS, false },                    \
    { "group", RLX_ATTR_INT, false }, { "kernel_shape", RLX_ATTR_INTS, false },                       \
    { "pads", RLX_ATTR_INTS, false }, { "strides", RLX_ATTR_INTS, false }

const rlx_op_def rlx_ops_nn[] = {
    { .name = "Conv", .domain = "", .versions = { 1, 11, 22 }, .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
      .infer = infer_conv, .attrs = { CONV_ATTRS } },
    { .name = "ConvTranspose", .domain = "", .versions = { 1, 11, 22 }, .min_in = 2, .max_in = 3, .min_out = 1,
      .max_out = 1, .infer = infer_conv_transpose,
      .attrs = { CONV_ATTRS, { "output_padding", RLX_ATTR_INTS, false }, { "output_shape", RLX_ATTR_INTS, false } } },
    { .name = "MaxPool", .domain = "", .versions = { 1, 8, 10, 11, 12, 22 }, .min_in = 1, .max_in = 1, .min_out = 1,
      .max_out = 2, .infer = infer_pool,
      .attrs = { { "auto_pad", RLX_ATTR_STRING, false }, { "ceil_mode", RLX_ATTR_INT, false },
                 { "dilations", RLX_ATTR_INTS, false }, { "kernel_shape", RLX_ATTR_INTS, true },
                 { "pads", RLX_ATTR_INTS, false }, { "storage_order", RLX_ATTR_INT, false },
                 { "strides", RLX_ATTR_INTS, false } } },
    { .name = "AveragePool", .domain = "", .versions = { 1, 7, 10, 11, 19, 22 }, .min_in = 1, .max_in = 1,
      .min_out = 1, .max_out = 1, .infer = infer_pool,
      .attrs = { { "auto_pad", RLX_ATTR_STRING, false }, { "ceil_mode", RLX_ATTR_INT, false },
                 { "count_include_pad", RLX_ATTR_INT, false }, { "dilations", RLX_ATTR_INTS, false },
                 { "kernel_shape", RLX_ATTR_INTS, true }, { "pads", RLX_ATTR_INTS, false },
                 { "strides", RLX_ATTR_INTS, false } } },
};
const size_t rlx_ops_nn_count = RLX_ARRAY_LEN(rlx_ops_nn);
