/* CPU backend: the reference kernels (the oracle for every other backend and
 * the evaluator of constant folding) and, beside them, fast paths.
 *
 * Kernel contract
 *  - k->in[i]  is input i of the node (NULL when the optional input is
 *    omitted); k->out[i] is output i (NULL when omitted).
 *  - Outputs arrive allocated with the dtype and static shape that shape
 *    inference gave, except for ops flagged RLX_OP_DATA_DEPENDENT, whose
 *    outputs arrive empty (data NULL) and are allocated by the kernel with
 *    rlx_cpu_alloc_out().
 *  - Output memory may hold garbage on entry; every element must be written.
 *  - Inputs and outputs never overlap.
 *  - Errors name the node: rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "...").
 */
#ifndef RLX_BACKEND_CPU_CPU_H
#define RLX_BACKEND_CPU_CPU_H

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/op.h"

typedef struct rlx_cpu_kctx {
    const rlx_graph *g;
    const rlx_node *n;
    const rlx_tensor *const *in;
    rlx_tensor *const *out;
    /* Use the plain reference kernel even where a fast path exists. */
    bool reference;
    /* The session's limits for outputs whose size only the kernel knows
     * (rlx_cpu_alloc_out, Loop and Scan outputs, bodies); NULL: none. */
    const struct rlx_config *cfg;
    /* The node's constant GEMM operand packed once when the executable was
     * compiled (rlx_cpu_prepare_node), or NULL. */
    const struct rlx_cpu_sgemm_pack *pack;
} rlx_cpu_kctx;

typedef rlx_status (*rlx_cpu_kernel_fn)(rlx_cpu_kctx *k);

/* Kernel families, one file each (cpu_<family>.c), listed like the op
 * families in src/ir/ops/ops.h. Each is a table indexed by op id
 * ([RLX_OP_Conv] = fn), NULL where the family has no kernel. */
#define RLX_CPU_FAMILIES          \
    RLX_CPU_FAMILY(elementwise)   \
    RLX_CPU_FAMILY(nn)            \
    RLX_CPU_FAMILY(tensor)        \
    RLX_CPU_FAMILY(reduce)        \
    RLX_CPU_FAMILY(control)       \
    RLX_CPU_FAMILY(quant)         \
    RLX_CPU_FAMILY(rnn)           \
    RLX_CPU_FAMILY(string)        \
    RLX_CPU_FAMILY(internal)

#define RLX_CPU_FAMILY(name) extern const rlx_cpu_kernel_fn rlx_cpu_kernels_##name[RLX_OP_COUNT];
RLX_CPU_FAMILIES
#undef RLX_CPU_FAMILY

/* The CPU kernel of an op id, or NULL (no name lookup). */
rlx_cpu_kernel_fn rlx_cpu_kernel_of(rlx_op_id op);

/* The CPU kernel of an op by domain and name, or NULL: for reports that
 * start from names (`rlx ops`); nodes use rlx_cpu_kernel_of(n->op). */
rlx_cpu_kernel_fn rlx_cpu_find_kernel(const char *domain, const char *op);

/* Runs one node on host tensors (the contract above). */
rlx_status rlx_cpu_run_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                            rlx_tensor *const *out, bool reference);
/* The same under cfg's limits (k->cfg): the eager interpreter's entry. */
rlx_status rlx_cpu_run_node_cfg(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                rlx_tensor *const *out, bool reference, const struct rlx_config *cfg);

/* rlx_cpu_run_node with the node's packed operand from
 * rlx_cpu_prepare_node (NULL: none); the same results. */
rlx_status rlx_cpu_run_node_packed(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                   rlx_tensor *const *out, const struct rlx_cpu_sgemm_pack *pack);

/* Packs a node's constant GEMM operand once, for the fast f32 paths
 * (the weights of Conv that runs as im2col + GEMM, the constant 2-D B of
 * Gemm and MatMul; cpu_nn_conv.c, cpu_nn_gemm.c), and for the int8 GEMM
 * the constant 2-D B of MatMulInteger and QLinearMatMul (out->q8,
 * cpu_quant.c), into *out, which is left empty (data and q8 NULL) for
 * every other node. `in` are the node's inputs as
 * at run time (constants with data; others may have none); g NULL
 * (tests) takes input 1 as constant. A 3x3 convolution whose shape pays
 * for it is packed as Winograd F(2x2, 3x3) weights instead
 * (cpu_nn_conv_wino.c).
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_prepare_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                struct rlx_cpu_sgemm_pack *out);
/* The same with the largest Winograd variant allowed: winograd 0 (option
 * cpu.winograd=0) keeps every convolution on its im2col / implicit-GEMM
 * packing, 2 allows F(2x2, 3x3) (the default), 4 F(4x4, 3x3) too
 * (cpu.winograd_f4x4). */
rlx_status rlx_cpu_prepare_node_with(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                     int winograd, struct rlx_cpu_sgemm_pack *out);
/* Whether node n, run on the fast path with pk (rlx_cpu_prepare_node's
 * pack for these inputs, as in the plan), reads its input 1 through pk
 * alone and never its data: a Conv's weights packed for im2col / implicit
 * GEMM / the pointwise paths (not Winograd's, whose run may decline to the
 * plain weights) and the 2-D B of Gemm and MatMul, under the "pool" GEMM
 * policy, at shapes that take those paths. The same answer while the
 * process's GEMM kernel and test hooks stay as they were at packing. The
 * CPU backend frees the plain copy of a plan's own constant that only
 * such steps read (cpu_backend.c). */
bool rlx_cpu_pack_serves(const rlx_node *n, const rlx_tensor *const *in, const struct rlx_cpu_sgemm_pack *pk);
/* What rlx_cpu_pack_serves's answers depend on beside the node: the GEMM
 * kernel, its tile and policy, the test hooks of the paths, as one word. */
unsigned rlx_cpu_pack_state(void);
/* rlx_cpu_prepare_node's part for MatMulInteger and QLinearMatMul. */
rlx_status rlx_cpu_quant_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                 struct rlx_cpu_sgemm_pack *out);
/* For tests: the least multiply-adds of one slice's step product in the
 * recurrent fast path (cpu_rnn.c splits each direction's hidden units into
 * slices, one per thread, none smaller than this); 0 restores the default
 * (65536). 1 splits small shapes as finely as the thread count allows.
 * Process-wide; not while kernels run. */
void rlx_cpu_rnn_min_slice(int64_t fma);
/* For tests: the batch groups of the recurrent fast path (each direction's
 * batch rows split into this many teams, in whole tiles of 6 rows, at
 * most one team per thread); 0 restores the rule. Process-wide; not while
 * kernels run. */
void rlx_cpu_rnn_groups(int groups);
/* rlx_cpu_prepare_node's part for RNN, GRU and LSTM (f32): a constant W
 * [D, G*H, I] packed as the B operand of the input projection
 * X [T*N, I] x W^T, and a constant R [D, G*H, H] packed slice by slice
 * for the recurrence as the current thread count splits it (a run on
 * another count packs R itself; the same bits). out stays empty when
 * neither applies or the shapes are not valid (the run reports those).
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_rnn_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                               struct rlx_cpu_sgemm_pack *out);

/* The host interpreter of values that become constants (cpu_eval.c).
 *
 * rlx_cpu_eval_ready: whether node n can be evaluated now: every input is
 * constant (Shape and Size: input 0 needs only a static shape) and every
 * output has a static shape, or the op is RLX_OP_DATA_DEPENDENT (its kernel
 * allocates its outputs). */
bool rlx_cpu_eval_ready(const rlx_graph *g, const rlx_node *n);

/* Evaluates node n (rlx_cpu_eval_ready) with the reference kernels; its
 * outputs become constants of g (strings get their own copy) and n is
 * marked dead. cfg (NULL: no limit): each static output is checked against
 * its limits.max_tensor_bytes before it is allocated.
 * errors: kernel errors, naming the node; RLX_ERR_OUT_OF_MEMORY (a limit, or
 * the allocation). */
rlx_status rlx_cpu_eval_node(rlx_graph *g, rlx_node *n, const struct rlx_config *cfg);

/* Eager evaluation: runs a clone of g with graph input i bound to
 * inputs[i] (dtype and shape taken from the tensor) and, when parent is
 * given, its outer-scope references bound to parent's constants (by name,
 * searching enclosing graphs outwards); each node is inferred, then
 * evaluated. outputs[i] receives a copy of graph output i (caller owns);
 * on error none is left.
 * errors: inference and kernel errors naming the node; RLX_ERR_INVALID_MODEL
 * (an outer reference or input without a value); RLX_ERR_INTERNAL (an
 * output left uncomputed). cfg: as for rlx_cpu_eval_node. */
rlx_status rlx_cpu_eval_graph(const rlx_graph *g, const rlx_graph *parent, const struct rlx_config *cfg,
                              const rlx_tensor *const *inputs,
                              rlx_tensor **outputs);

/* For RLX_OP_DATA_DEPENDENT kernels: allocates output i (owned by the
 * tensor struct; the caller of the kernel frees it), after checking its
 * bytes against k->cfg's limits.max_tensor_bytes.
 * errors: RLX_ERR_OUT_OF_MEMORY naming node, op, output, dtype, shape,
 * bytes and the limit; those of rlx_tensor_create. */
rlx_status rlx_cpu_alloc_out(rlx_cpu_kctx *k, int i, rlx_dtype dtype, int rank, const int64_t *dims);

/* Checks that `bytes` for output i of k's node (dtype, dims: its shape, for
 * the message) fit k->cfg's limits.max_tensor_bytes; OK without cfg. */
rlx_status rlx_cpu_out_limit(const rlx_cpu_kctx *k, int i, rlx_dtype dtype, int rank, const int64_t *dims,
                             uint64_t bytes);

/* Fails naming the node: "node 'x' (Op): <message>". */
rlx_status rlx_cpu_fail(const rlx_cpu_kctx *k, rlx_status st, const char *fmt, ...) RLX_PRINTF(3, 4);

#endif
