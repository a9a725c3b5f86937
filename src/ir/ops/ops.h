/* The op families: each file ops_<family>.c defines an array of op
 * definitions. Add a family here and in CMake's source glob picks it up. */
#ifndef RLX_IR_OPS_OPS_H
#define RLX_IR_OPS_OPS_H

#include <stddef.h>
#include "ir/op.h"

#define RLX_OP_FAMILIES          \
    RLX_OP_FAMILY(elementwise)   \
    RLX_OP_FAMILY(nn)            \
    RLX_OP_FAMILY(tensor)        \
    RLX_OP_FAMILY(reduce)        \
    RLX_OP_FAMILY(control)       \
    RLX_OP_FAMILY(quant)         \
    RLX_OP_FAMILY(rnn)           \
    RLX_OP_FAMILY(string)        \
    RLX_OP_FAMILY(internal)

#define RLX_OP_FAMILY(name)                       \
    extern const rlx_op_def rlx_ops_##name[];     \
    extern const size_t rlx_ops_##name##_count;
RLX_OP_FAMILIES
#undef RLX_OP_FAMILY

/* Rows of the family tables: ops_<family>.c includes its ops_<family>.def
 * inside its array, and ir/op_id.h includes every .def to number the ops,
 * so the row is the only place that names an op. RLX_OP is an op of the
 * default domain, RLX_OP_RLX an internal op of domain "rlx". */
#define RLX_OP(nm, ...) { .id = RLX_OP_##nm, .name = #nm, .domain = "", __VA_ARGS__ },
#define RLX_OP_RLX(nm, ...) { .id = RLX_OP_rlx_##nm, .name = #nm, .domain = "rlx", __VA_ARGS__ },

/* Shared inference functions, usable by any family. */
rlx_status rlx_infer_same_as_input0(rlx_infer_ctx *c);   /* unary, any dtype */
rlx_status rlx_infer_unary_float(rlx_infer_ctx *c);      /* unary, float dtypes only */
rlx_status rlx_infer_broadcast(rlx_infer_ctx *c);        /* n-ary broadcast, dtype of input 0 */
rlx_status rlx_infer_broadcast_bool(rlx_infer_ctx *c);   /* broadcast, bool output */

bool rlx_dtype_is_float(rlx_dtype dt);
bool rlx_dtype_is_int(rlx_dtype dt);

#endif
