/* quant ops (placeholder; filled in by the op work). */
#include "ir/ops/ops.h"

const rlx_op_def rlx_ops_quant[] = { { .name = NULL } };
const size_t rlx_ops_quant_count = 0;
