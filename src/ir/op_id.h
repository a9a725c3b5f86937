/* Op ids: one enumerator per op definition, generated from the op tables
 * themselves (src/ir/ops/ops_<family>.def, one RLX_OP row per op), so an op
 * is named in exactly one place. Nodes carry their id (rlx_node.op, set by
 * rlx_graph_add_node); backends index their kernel tables by it.
 *
 * Names: RLX_OP_<ONNX name> for the default domain (RLX_OP_Conv,
 * RLX_OP_Relu), RLX_OP_rlx_<name> for the internal ops of domain "rlx"
 * (RLX_OP_rlx_Attention). RLX_OP_NONE (0) is no op; ids of one family are
 * contiguous, from RLX_OPS_FIRST_<family>, in the order of RLX_OP_FAMILIES
 * (src/ir/ops/ops.h). */
#ifndef RLX_IR_OP_ID_H
#define RLX_IR_OP_ID_H

/* The first id of a family equals the id of its first row (the second
 * enumerator steps back by one, so the row that follows gets the same
 * value as the marker). */
#define RLX_OP_FAMILY_BEGIN(fam) RLX_OPS_FIRST_##fam, RLX_OPS_FIRST_##fam##_back_ = RLX_OPS_FIRST_##fam - 1,

typedef enum rlx_op_id {
    RLX_OP_NONE = 0,
#define RLX_OP(nm, ...) RLX_OP_##nm,
#define RLX_OP_RLX(nm, ...) RLX_OP_rlx_##nm,
    RLX_OP_FAMILY_BEGIN(elementwise)
#include "ir/ops/ops_elementwise.def"
    RLX_OP_FAMILY_BEGIN(nn)
#include "ir/ops/ops_nn.def"
    RLX_OP_FAMILY_BEGIN(tensor)
#include "ir/ops/ops_tensor.def"
    RLX_OP_FAMILY_BEGIN(reduce)
#include "ir/ops/ops_reduce.def"
    RLX_OP_FAMILY_BEGIN(control)
#include "ir/ops/ops_control.def"
    RLX_OP_FAMILY_BEGIN(quant)
#include "ir/ops/ops_quant.def"
    RLX_OP_FAMILY_BEGIN(rnn)
#include "ir/ops/ops_rnn.def"
    RLX_OP_FAMILY_BEGIN(string)
#include "ir/ops/ops_string.def"
    RLX_OP_FAMILY_BEGIN(internal)
#include "ir/ops/ops_internal.def"
#undef RLX_OP
#undef RLX_OP_RLX
    RLX_OP_COUNT /* one past the last id: the size of tables indexed by op id */
} rlx_op_id;

#undef RLX_OP_FAMILY_BEGIN

#endif
