/* Reduction geometry: the axes of a Reduce* node and the index structure of
 * an Einsum equation, resolved for given input shapes. Shape inference
 * (ops_reduce.c), the CPU kernels (cpu_reduce.c) and a GPU lowering all read
 * this one resolution, so the three homes of these ops cannot disagree.
 * Semantics: ONNX ReduceSum-1/11/13, Reduce{Mean,Max,Min,Prod,L1,L2,LogSum,
 * LogSumExp,SumSquare}-1/11/13/18 (Max/Min also 12, 20), Einsum-12. */
#ifndef RLX_IR_OPS_REDUCE_GEOM_H
#define RLX_IR_OPS_REDUCE_GEOM_H

#include "base/status.h"
#include "ir/graph.h"
#include "ir/op.h"

/* ------------------------------------------------------------ Softmax */

/* The 'axis' of a Softmax, LogSoftmax or Hardmax node: the attribute, or
 * its default, which depends on the version (1 before 13, where the input
 * is coerced to 2-D at axis; -1 from 13): the one place that default is
 * written (a schema row holds one default for all versions). */
int64_t rlx_softmax_axis(const rlx_node *n);

/* ------------------------------------------------------------ Reduce* */

/* The most entries a Reduce* axes list (attribute or input) may have,
 * repeats included (an axis given twice counts once: rlx_reduce_resolve). */
#define RLX_REDUCE_MAX_AXES 64

typedef struct rlx_reduce_spec {
    int rank;                     /* input rank */
    bool axis[RLX_MAX_RANK];      /* axis i is reduced */
    int n_axes;                   /* reduced axes; 0 is a no-op reduction */
    bool keepdims;                /* reduced axes stay as size 1 */
} rlx_reduce_spec;

/* True when Reduce* node n takes its axes from optional input 1 (ReduceSum
 * from version 13, the other Reduce* ops from version 18); false when they
 * come from the 'axes' attribute. */
bool rlx_reduce_axes_are_input(const rlx_node *n);

/* Resolves which axes Reduce* node n reduces on an input of rank `rank`.
 * axes[0..n_axes): the list from the attribute or from input 1's values
 * (NULL/0 when absent). An absent or empty list reduces every axis, except
 * where axes come as an input and noop_with_empty_axes is 1: then nothing is
 * reduced (the op is the identity, or its elementwise part: |x|, x^2, log x).
 * errors: `status` with a message naming the node: an axis outside
 *         [-rank, rank), an axis given twice. */
rlx_status rlx_reduce_resolve(const rlx_node *n, int rank, const int64_t *axes, size_t n_axes, rlx_status status,
                              rlx_reduce_spec *out);

/* The axes of MeanVarianceNormalization node n on an input of rank `rank`
 * (0 <= rank <= RLX_MAX_RANK): the 'axes' attribute, else [0, 2, 3] (ONNX's
 * default, written here only), keepdims. errors: as rlx_reduce_resolve. */
rlx_status rlx_mvn_resolve(const rlx_node *n, int rank, rlx_status status, rlx_reduce_spec *out);

/* Output shape of a resolved reduction: dims[i] of the input are kept,
 * reduced dims become 1 (keepdims) or are dropped. Returns the output rank.
 * syms may be NULL (then out_syms is not written). */
int rlx_reduce_out_shape(const rlx_reduce_spec *r, const int64_t *dims, const int32_t *syms, int64_t *out_dims,
                         int32_t *out_syms);

/* ------------------------------------------------------------ Einsum */

#define RLX_EINSUM_MAX_INPUTS 16
/* 26 lower-case + 26 upper-case letters + up to RLX_MAX_RANK ellipsis dims */
#define RLX_EINSUM_MAX_LABELS (52 + RLX_MAX_RANK)

/* An Einsum equation resolved for its operands' shapes. Every dimension of
 * every operand and of the output carries a label; ellipsis dimensions get
 * labels of their own, numbered from the right as in numpy broadcasting. */
typedef struct rlx_einsum {
    int n_in;
    int n_labels;                           /* labels in use: 0..n_labels-1 */
    char name[RLX_EINSUM_MAX_LABELS];       /* the letter, or '.' for an ellipsis dim */
    int64_t extent[RLX_EINSUM_MAX_LABELS];  /* size; RLX_DIM_DYN when not known */
    int32_t sym[RLX_EINSUM_MAX_LABELS];     /* symbol of a dynamic extent, or -1 */
    bool in_output[RLX_EINSUM_MAX_LABELS];  /* label is an output dim (else summed) */
    int in_rank[RLX_EINSUM_MAX_INPUTS];
    int in_label[RLX_EINSUM_MAX_INPUTS][RLX_MAX_RANK]; /* label of each operand dim */
    int out_rank;
    int out_label[RLX_MAX_RANK];
} rlx_einsum;

/* Parses node n's equation for n_in operands of the given ranks and dims
 * (dims[i][d] may be RLX_DIM_DYN; syms may be NULL). Spaces are ignored.
 * Explicit form ("...->out"): the output is as written. Implicit form: the
 * ellipsis dims first, then the letters that occur exactly once in the
 * equation, in alphabetical (ASCII) order. A letter repeated within a term
 * takes the diagonal; letters absent from the output are summed. Ellipsis
 * dims broadcast as in numpy (size 1 stretches); letter sizes must agree.
 * errors: `status` naming the node and what is wrong with the equation
 *         (unknown character, stray '.', term count or rank mismatch, output
 *         letter repeated or absent from the inputs, ellipsis in the inputs
 *         but not in an explicit output, sizes that disagree);
 *         RLX_ERR_UNSUPPORTED for more than RLX_EINSUM_MAX_INPUTS operands
 *         or an output rank above RLX_MAX_RANK. */
rlx_status rlx_einsum_resolve(const rlx_node *n, int n_in, const int *ranks, const int64_t *const *dims,
                              const int32_t *const *syms, rlx_status status, rlx_einsum *out);

#endif
