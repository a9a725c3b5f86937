/* passes/fuse_nbits.c — DequantizeLinear of a constant 4-bit weight ->
 * MatMul becomes one rlx.MatMulNBits node (src/ir/ops/internal_ops.h) on
 * the weight repacked into MatMulNBits' layout, so that the QDQ form of
 * 4-bit weights (onnxruntime's MatMul4BitsQuantizer with quant_format QDQ)
 * runs on the 4-bit kernels from half a byte a weight, where the fold would
 * make an f32 matrix of them.
 *
 * Preconditions, each checked: the MatMul reads A (f32, rank >= 2, last dim
 * K) and B = the output of a DequantizeLinear (version >= 21, f32 output)
 * whose x is a constant loaded from INT4 or UINT4 (RLX_VALUE_4BIT: i8 in
 * [-8, 7] or u8 in [0, 15]) of shape [K, N], blocked along K (axis 0) with
 * block_size a power of 2 from 16 to 4096; x_scale a constant f32
 * [ceil(K / block_size), N]; x_zero_point absent or a constant of x's type
 * and the scales' shape; K and N below 2^31; B has no other reader and is
 * not a graph output.
 *
 * Bits: DequantizeLinear gives (float)(x - zp) * scale in f32, MatMulNBits
 * (float)(q - zp') * scale in f32; with q = x + 8 and zp' = zp + 8 for
 * INT4 (no zero point: zp' = 8, MatMulNBits' default), q = x and zp' = zp
 * for UINT4 (none: 0), q - zp' = x - zp: the same weights, the product
 * summed in the 4-bit kernels' order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_nbits"

/* The repacked inputs of one MatMulNBits: B [N, nb, bs / 2] u8, scales
 * [N * nb] f32, zero points [N, ceil(nb / 2)] u8 (NULL: all 8). */
static rlx_status repack(const rlx_tensor *X, const rlx_tensor *S, const rlx_tensor *Z, int64_t K, int64_t N,
                         int64_t bs, rlx_tensor **ob, rlx_tensor **os, rlx_tensor **oz) {
    *ob = *os = *oz = NULL;
    int64_t nb = (K + bs - 1) / bs, blob = bs / 2, zrow = (nb + 1) / 2;
    unsigned off = X->dtype == RLX_DTYPE_I8 ? 8u : 0u; /* the levels as 0..15 */
    bool need_z = false;
    const uint8_t *x = X->data, *z = Z ? Z->data : NULL; /* i8 read as its byte, plus 8 (mod 256) */
    const float *s = S->data;
    for (size_t i = 0; z && i < (size_t)(nb * N); i++) need_z |= ((z[i] + off) & 255u) != 8u;
    if (!Z && off == 0) need_z = true; /* UINT4 without zero points: 0, not MatMulNBits' 8 */
    rlx_status st = rlx_tensor_create(RLX_DTYPE_U8, (int64_t[]){ N * nb * blob }, 1, ob);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, (int64_t[]){ N * nb }, 1, os);
    if (!st && need_z) st = rlx_tensor_create(RLX_DTYPE_U8, (int64_t[]){ N * zrow }, 1, oz);
    if (st) {
        rlx_tensor_destroy(*ob), rlx_tensor_destroy(*os);
        *ob = *os = NULL;
        return st;
    }
    uint8_t *b = (*ob)->data, *zp = need_z ? (*oz)->data : NULL;
    float *sc = (*os)->data;
    memset(b, 0, (size_t)(N * nb * blob));
    if (zp) memset(zp, 0, (size_t)(N * zrow));
    for (int64_t n = 0; n < N; n++)
        for (int64_t blk = 0; blk < nb; blk++) {
            size_t at = (size_t)(blk * N + n); /* [nb, N] in the DequantizeLinear */
            sc[n * nb + blk] = s[at];
            if (zp) {
                unsigned q = z ? ((z[at] + off) & 15u) : 0u;
                zp[n * zrow + blk / 2] |= (uint8_t)(q << (4 * (blk % 2)));
            }
            uint8_t *row = b + (size_t)((n * nb + blk) * blob);
            for (int64_t j = 0; j < bs && blk * bs + j < K; j++) {
                unsigned q = (x[(size_t)((blk * bs + j) * N + n)] + off) & 15u;
                row[j / 2] |= (uint8_t)(q << (4 * (j % 2)));
            }
        }
    return RLX_OK;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int mm_id, rlx_pass_stats *stats, bool *done) {
    const rlx_node *mm = &g->nodes[mm_id];
    if (mm->n_in != 2 || mm->n_out != 1 || mm->out[0] < 0) return RLX_OK;
    int bv = mm->in[1];
    const rlx_node *dq = rlx_fuse_producer(g, bv);
    if (!dq || !rlx_fuse_is(dq, RLX_OP_DequantizeLinear) || dq->version < 21 || dq->n_in < 2 ||
        !rlx_fuse_private(g, u, bv, 1) || mm->in[0] == bv)
        return RLX_OK;
    const rlx_value *a = rlx_node_input(g, mm, 0), *b = &g->values[bv], *y = &g->values[mm->out[0]];
    const rlx_value *xv = rlx_node_input(g, dq, 0), *sv = rlx_node_input(g, dq, 1), *zv = rlx_node_input(g, dq, 2);
    if (!a || !xv || !sv || a->dtype != RLX_DTYPE_F32 || b->dtype != RLX_DTYPE_F32 || y->dtype != RLX_DTYPE_F32 ||
        a->rank < 2)
        return RLX_OK;
    if (!(xv->flags & RLX_VALUE_4BIT) || !xv->konst || xv->rank != 2 ||
        (xv->dtype != RLX_DTYPE_I8 && xv->dtype != RLX_DTYPE_U8))
        return RLX_OK;
    bool int4 = xv->dtype == RLX_DTYPE_I8;
    int64_t K = xv->dims[0], N = xv->dims[1], bs = rlx_param_int(dq, "block_size");
    int ax;
    if (!rlx_norm_axis(rlx_param_int(dq, "axis"), 2, &ax) || ax != 0 || bs < 16 || bs > 4096 || (bs & (bs - 1)) ||
        K <= 0 || N <= 0 || K > INT32_MAX || N > INT32_MAX || a->dims[a->rank - 1] != K)
        return RLX_OK;
    int64_t nb = (K + bs - 1) / bs;
    if (!sv->konst || sv->dtype != RLX_DTYPE_F32 || sv->rank != 2 || sv->dims[0] != nb || sv->dims[1] != N)
        return RLX_OK;
    if (zv && (!zv->konst || zv->dtype != xv->dtype || zv->rank != 2 || zv->dims[0] != nb || zv->dims[1] != N))
        return RLX_OK;
    int ids[2] = { (int)(dq - g->nodes), mm_id };
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, 2, what, sizeof what);
    rlx_tensor *tb, *ts, *tz; /* adding them moves g->values: xv, sv, zv, a, b, y are stale after */
    RLX_TRY(repack(xv->konst, sv->konst, zv ? zv->konst : NULL, K, N, bs, &tb, &ts, &tz));
    int in[4] = { mm->in[0], -1, -1, -1 };
    rlx_status st = rlx_graph_add_konst(g, NULL, tb, &in[1]);
    if (st) {
        rlx_tensor_destroy(ts), rlx_tensor_destroy(tz);
        return st;
    }
    st = rlx_graph_add_konst(g, NULL, ts, &in[2]);
    if (st) {
        rlx_tensor_destroy(tz);
        return st;
    }
    if (tz) RLX_TRY(rlx_graph_add_konst(g, NULL, tz, &in[3]));
    rlx_node_attr at[3];
    const char *names[3] = { "K", "N", "block_size" };
    const int64_t vals[3] = { K, N, bs };
    for (int i = 0; i < 3; i++) {
        st = rlx_node_attr_set_int(&at[i], names[i], vals[i]);
        if (st) {
            for (int k = 0; k < i; k++) rlx_node_attr_free(&at[k]);
            return st;
        }
    }
    mm = &g->nodes[mm_id];
    char name[256];
    snprintf(name, sizeof name, "%s_nbits", mm->name ? mm->name : "matmul");
    int out = mm->out[0];
    g->nodes[ids[0]].dead = true;
    g->nodes[mm_id].dead = true;
    g->values[out].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, mm_id, "MatMulNBits", RLX_INTERNAL_DOMAIN, name, in, tz ? 4 : 3, &out, 1, at, 3));
    char detail[128];
    snprintf(detail, sizeof detail, "K %lld, N %lld, block_size %lld, %s", (long long)K, (long long)N, (long long)bs,
             int4 ? "int4" : "uint4");
    rlx_fuse_report(PASS, what, &g->nodes[mm_id], detail);
    if (stats) stats->fused++;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_nbits(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_MatMul, fuse_one, stats);
}
