/* passes/pow_exponent.c — Pow of a float x (f32, f16) by a constant
 * exponent:
 *  - every plan: an exponent of one element equal to 2 (an integer
 *    initializer or a float constant 2.0: Pow(x, 2) of exported
 *    LayerNorms, variances and STFT magnitudes), no larger than x (rank at
 *    most x's, so y has x's shape), becomes Mul(x, x): the correctly
 *    rounded square, which the CPU's double pow of an integer exponent
 *    also gives (the same bits), where the f32 powf per element cost ~20
 *    ns (silero VAD's magnitude, 2 x 2064 powf: 69 of the model's 255 us
 *    at 1 thread) and could differ from x * x in the last bit where x^2 is
 *    a tie; a GPU that flushes subnormal results gives 0 for those;
 *  - GPU plans (not stats->cpu_target) otherwise: an integer exponent gets
 *    x's own type, which the GPU's binary kernel and the elementwise
 *    chains take (their operands share one type; the node ran on the CPU
 *    before), where every element is exact in it (|e| <= 2^24 for f32,
 *    2048 for f16): the float Pow (kernels/ew_lib.wgsl pow_, exp2(e log2
 *    |x|) with the sign of odd powers), a few ULP from the CPU's double
 *    pow. CPU plans keep other integer exponents (the CPU's exact double
 *    pow). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "pow_exponent"

static bool is_float(rlx_dtype dt) { return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16; }

static rlx_status one(rlx_graph *g, const rlx_fuse_users *u, int ni, rlx_pass_stats *stats, bool *done) {
    (void)u;
    const rlx_node *n = &g->nodes[ni];
    if (n->n_in != 2 || n->n_out != 1 || n->in[0] < 0 || n->in[1] < 0 || n->out[0] < 0) return RLX_OK;
    const rlx_value *x = &g->values[n->in[0]], *e = &g->values[n->in[1]], *y = &g->values[n->out[0]];
    if (!is_float(x->dtype) || y->dtype != x->dtype || !e->konst || e->rank < 0) return RLX_OK;
    const rlx_tensor *et = e->konst;
    size_t cnt = rlx_tensor_numel(et);
    bool is_int = rlx_dtype_is_int(e->dtype);
    bool square = cnt == 1 && e->rank <= x->rank && (is_int || rlx_dtype_is_float(e->dtype)) &&
                  rlx_tensor_get_f64(et, 0) == 2.0;
    if (!square && (stats->cpu_target || !is_int)) return RLX_OK;
    int64_t lim = x->dtype == RLX_DTYPE_F32 ? (int64_t)1 << 24 : 2048;
    for (size_t i = 0; i < cnt && !square; i++) {
        int64_t v = rlx_tensor_get_i64(et, i);
        if (v > lim || v < -lim) return RLX_OK;
    }
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, &ni, 1, what, sizeof what);
    if (square) {
        int in[2] = { n->in[0], n->in[0] }, out = n->out[0];
        char name[256];
        snprintf(name, sizeof name, "%s", n->name ? n->name : "pow");
        g->nodes[ni].dead = true;
        g->values[out].producer = -1;
        RLX_TRY(rlx_fuse_emplace(g, ni, "Mul", "", name, in, 2, &out, 1, NULL, 0));
        rlx_fuse_report(PASS, what, &g->nodes[ni], "x * x");
        *done = true;
        return RLX_OK;
    }
    rlx_tensor *t = NULL;
    RLX_TRY(rlx_tensor_create(x->dtype, et->dims, et->rank, &t));
    for (size_t i = 0; i < cnt; i++) rlx_tensor_set_f64(t, i, (double)rlx_tensor_get_i64(et, i));
    int k = -1;
    RLX_TRY(rlx_graph_add_konst(g, NULL, t, &k));
    g->nodes[ni].in[1] = k;
    rlx_fuse_report(PASS, what, &g->nodes[ni], "the exponent in x's type");
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_pow_exponent(rlx_graph *g, rlx_pass_stats *stats) {
    if (!stats) return RLX_OK;
    return rlx_fuse_each_anchor(g, RLX_OP_Pow, one, stats);
}
