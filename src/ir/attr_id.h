/* Attribute ids: one enumerator per attribute name of the op schemas,
 * generated from the list src/ir/attr_names.def (one RLX_ATTR_NAME row per
 * name), as ir/op_id.h numbers the ops from their .def rows. Kernels,
 * lowerings and passes read a node's parameters by id (rlx_param_*(n,
 * RLX_A_axis), ir/graph.h): an index into a table built once from the
 * schemas (rlx_op_attr_slot, ir/op.h), with no string comparison per read.
 *
 * Names: RLX_A_<attribute name> (RLX_A_axis, RLX_A_kernel_shape, RLX_A_K).
 * An id does not depend on the op: one kernel serves every op whose schema
 * has the name (ReduceSum, ReduceMean, ... read RLX_A_keepdims). RLX_A_NONE
 * (0) is no attribute. */
#ifndef RLX_IR_ATTR_ID_H
#define RLX_IR_ATTR_ID_H

typedef enum rlx_attr_id {
    RLX_A_NONE = 0,
#define RLX_ATTR_NAME(nm) RLX_A_##nm,
#include "ir/attr_names.def"
#undef RLX_ATTR_NAME
    RLX_A_COUNT /* one past the last id: the size of tables indexed by attribute id */
} rlx_attr_id;

/* The name of id a ("axis" for RLX_A_axis), for messages; NULL for
 * RLX_A_NONE and ids out of range. Static. */
const char *rlx_attr_id_name(rlx_attr_id a);

/* The id of an attribute name, or RLX_A_NONE when the list lacks it (a
 * binary search: for building tables and for tests, not for reads). */
rlx_attr_id rlx_attr_id_of(const char *name);

#endif
