/* String ops: StringNormalizer-10.
 *
 * String tensors (RLX_DTYPE_STRING, include/rlx/rlx.h) hold one
 * `const char *` per element. Besides the ops here, the data-movement ops
 * whose rows have RLX_OP_STRINGS (ir/op.h) carry them unchanged. */
#include <string.h>

#include "ir/ops/ops.h"

/* StringNormalizer-10: X is [C] or [1, C] strings; Y keeps the rank and
 * the leading 1, with the count of elements that are not stopwords, or one
 * empty string when all are (shape [1] / [1, 1]). That count depends on
 * the values, so the last dim of Y is left dynamic (the op is
 * RLX_OP_DATA_DEPENDENT: graphs holding it run eagerly on the CPU).
 * Attributes: case_change_action LOWER / UPPER / NONE (default NONE),
 * is_case_sensitive (default 0), stopwords, locale (accepted; case mapping
 * is ASCII only, see src/backend/cpu/cpu_string.c). */
static rlx_status infer_string_normalizer(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (x->dtype != RLX_DTYPE_STRING)
        return rlx_ictx_fail(c, "input must be a string tensor, got %s", rlx_dtype_name(x->dtype));
    const char *act = rlx_param_str(c->n, RLX_A_case_change_action);
    if (strcmp(act, "LOWER") != 0 && strcmp(act, "UPPER") != 0 && strcmp(act, "NONE") != 0)
        return rlx_ictx_fail(c, "case_change_action must be LOWER, UPPER or NONE, got '%s'", act);
    if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, RLX_DTYPE_STRING);
    if (x->rank != 1 && x->rank != 2)
        return rlx_ictx_fail(c, "input must have shape [C] or [1, C], got rank %d", x->rank);
    if (x->rank == 2 && x->dims[0] != 1 && x->dims[0] != RLX_DIM_DYN)
        return rlx_ictx_fail(c, "a 2-D input must have shape [1, C], got a first dim of %lld", (long long)x->dims[0]);
    int64_t dims[2] = { 1, RLX_DIM_DYN };
    if (x->rank == 1) dims[0] = RLX_DIM_DYN;
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_STRING, x->rank, dims, NULL);
}

const rlx_op_def rlx_ops_string[] = {
#include "ir/ops/ops_string.def"
};
const size_t rlx_ops_string_count = RLX_ARRAY_LEN(rlx_ops_string);
