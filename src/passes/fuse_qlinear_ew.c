/* passes/fuse_qlinear_ew.c — on GPU plans, a QLinearConv or QLinearMatMul
 * whose 8-bit result only an 8-bit FusedElementwise chain reads (the chains
 * of fuse_qdq_ew: a QDQ residual block's DequantizeLinear(conv) +
 * DequantizeLinear(shortcut) -> Add -> QuantizeLinear, a QDQ Linear
 * layer's bias Add) takes the chain in: the chain's program and its other
 * inputs become the node's internal inputs 9.. and _rlx_ew_* attributes
 * (ir/ops/internal_ops.h, RLX_QEPI_FIRST), and the GPU's integer kernels
 * apply the program where they store each output (kernels/qepi.wgsl,
 * lower_internal.c: wg_qepi_make): one dispatch and no 8-bit tensor between
 * them, where the chain was a dispatch of its own (10 us of the QDQ
 * ResNet-50's 1.4 ms at batch 1 each, BENCHMARKS.md). The same bits as the
 * two nodes apart: the kernels compute the product's level as the node
 * does, and the program as the chain's own kernel does (the same generated
 * WGSL, constants in Params slots).
 *
 * Taken when: the chain's output is 8-bit (qout); one of its 8-bit inputs
 * (qin) is the output of a QLinearConv or QLinearMatMul without a chain (9
 * inputs or fewer) that the chain alone reads, once, not a graph output,
 * with the static shape of the chain's output (an input of higher rank
 * broadcasts the output to it: [5, 12] + [1, 1, 12] is [1, 5, 12], left
 * apart); the chain has at most RLX_QEPI_MAX_OTHER other inputs (the
 * storage bindings of one dispatch: the integer GEMM binds six), each of
 * static shape and at most RLX_QEPI_MAX_ELEMS elements, a graph input, a
 * constant or made before the product (the node keeps the product's place
 * in the order). A chain with two such products
 * takes the later one whose other inputs come first (in a ResNet block
 * with a projection shortcut: the projection, made after the block's last
 * convolution).
 *
 * CPU plans keep the nodes apart (the CPU's chain kernel already runs on
 * the bytes, and its products have no epilogue to take it); where the GPU
 * declines such a node, the CPU kernel runs the product and then the
 * program (cpu_quant.c), with the same bits. */
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_qlinear_ew"
#define RLX_QEPI_MAX_OTHER 2
/* elements of another chain input: 4 bytes each (an 8-bit one bound as
 * words) within WebGPU's default storage binding size, 128 MiB, so that a
 * GPU with the default limit does not decline the node (and run the
 * product on the CPU) for the chain's sake */
#define RLX_QEPI_MAX_ELEMS ((size_t)32 << 20)

/* Whether QLinearConv or QLinearMatMul node p can take chain c (input `slot` of c is p's
 * output) under the header's conditions. */
static bool takes(const rlx_graph *g, const rlx_fuse_users *u, int pi, const rlx_node *c, int slot) {
    const rlx_node *p = &g->nodes[pi];
    int x = c->in[slot];
    if (!(rlx_fuse_is(p, RLX_OP_QLinearConv) || rlx_fuse_is(p, RLX_OP_QLinearMatMul)) || p->n_in > RLX_QEPI_FIRST ||
        p->n_out != 1 || p->out[0] != x)
        return false;
    const rlx_value *xv = &g->values[x], *yv = &g->values[c->out[0]];
    if (!rlx_fuse_same_shape(xv, yv) || !rlx_fuse_private(g, u, x, 1)) return false;
    for (int i = 0; i < c->n_in; i++) {
        const rlx_value *v = c->in[i] >= 0 ? &g->values[c->in[i]] : NULL;
        if (i != slot && (!v || c->in[i] == x || v->producer >= pi || !rlx_value_is_static(v) ||
                          rlx_value_numel(v) > RLX_QEPI_MAX_ELEMS))
            return false;
    }
    return true;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int ci, rlx_pass_stats *stats, bool *done) {
    rlx_node *c = &g->nodes[ci];
    rlx_ew_prog prog;
    if (c->n_out != 1 || c->out[0] < 0 || c->n_in - 1 > RLX_QEPI_MAX_OTHER ||
        rlx_ew_prog_read(c, &prog) != RLX_OK || prog.out_scale == 0)
        return RLX_OK;
    int slot = -1, pi = -1;
    for (int i = 0; i < c->n_in; i++) {
        rlx_node *p = prog.in_scale[i] != 0 ? rlx_fuse_producer(g, c->in[i]) : NULL;
        int id = p ? (int)(p - g->nodes) : -1;
        if (p && takes(g, u, id, c, i) && (pi < 0 || id > pi)) slot = i, pi = id;
    }
    if (slot < 0) return RLX_OK;
    rlx_node *p = &g->nodes[pi];
    int nodes[2] = { pi, ci };
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, nodes, 2, what, sizeof what);
    /* the chain's attributes, renamed */
    static const char *const k_attrs[] = { "code", "fparams", "consts", "qin", "qout", "dtype" };
    for (size_t k = 0; k < sizeof k_attrs / sizeof k_attrs[0]; k++) {
        const rlx_node_attr *a = rlx_node_attr_find(c, k_attrs[k]);
        if (!a) continue;
        char name[32];
        snprintf(name, sizeof name, "%s%s", RLX_QEPI_PREFIX, k_attrs[k]);
        RLX_TRY(rlx_fuse_copy_attr(p, a, name));
    }
    int n_in = RLX_QEPI_FIRST + c->n_in;
    int *in = realloc(p->in, (size_t)n_in * sizeof *in);
    if (!in) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    p->in = in;
    for (int i = p->n_in; i < RLX_QEPI_FIRST; i++) in[i] = -1; /* no B (a QLinearConv's; none of a QLinearMatMul) */
    for (int i = 0; i < c->n_in; i++) in[RLX_QEPI_FIRST + i] = i == slot ? -1 : c->in[i];
    p->n_in = n_in;
    int x = p->out[0], y = c->out[0];
    g->values[x].producer = -1;
    p->out[0] = y;
    c->dead = true;
    g->values[y].producer = pi;
    RLX_TRY(rlx_infer_node(g, pi));
    rlx_fuse_report(PASS, what, p, "QDQ chain in the epilogue");
    if (stats) stats->fused += 1;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_qlinear_ew(rlx_graph *g, rlx_pass_stats *stats) {
    if (!stats || stats->cpu_target) return RLX_OK;
    return rlx_fuse_each_anchor(g, RLX_OP_rlx_FusedElementwise, fuse_one, stats);
}
