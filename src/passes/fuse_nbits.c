/* passes/fuse_nbits.c — DequantizeLinear of a constant 4-bit weight read
 * by MatMuls or Gemms becomes one rlx.MatMulNBits node per reader
 * (src/ir/ops/internal_ops.h) on the weight repacked once into MatMulNBits'
 * layout, so that the QDQ form of 4-bit weights (onnxruntime's
 * MatMulNBitsQuantizer with quant_format QDQ, from an f32 or an f16 model)
 * runs on the 4-bit kernels from half a byte a weight, where the fold would
 * make a float matrix of them.
 *
 * Preconditions, each checked: a DequantizeLinear (version >= 21) whose x
 * is a constant loaded from INT4 or UINT4 (RLX_VALUE_4BIT: i8 in [-8, 7]
 * or u8 in [0, 15]) of rank 2, blocked along `axis` 0 or 1 with block_size
 * a power of 2 from 16 to 4096; x_scale a constant f32 or f16 (the output's
 * type) of x's shape with ceil(dim / block_size) blocks along the axis;
 * x_zero_point absent or a constant of x's type and the scales' shape; the
 * output not a graph output, and every reader of it one of
 *  - MatMul(A, W): W is [K, N] (axis 0: blocks along K), A [.., K] of
 *    rank >= 2;
 *  - Gemm(A, W[, C]), transA 0, alpha 1, beta 1 (or no C): transB 0 reads
 *    W as [K, N] (axis 0), transB 1 as [N, K] (axis 1): blocks along K
 *    either way; A [M, K]; a C becomes an Add after the MatMulNBits
 *    (rlx.MatMulNBits has no bias input; Add broadcasts C as Gemm does);
 * with A, W and Y of one type (f32 or f16), W read as B only; K and N below
 * 2^31. A weight with any other reader (transA 1, alpha or beta other
 * than 1, blocks along N, a non-matrix op) stays DequantizeLinear -> op.
 * A weight read by several such nodes is repacked once; each becomes a
 * MatMulNBits on the same constants.
 *
 * Bits: DequantizeLinear gives (float)(x - zp) * scale in f32, MatMulNBits
 * (float)(q - zp') * scale in f32; with q = x + 8 and zp' = zp + 8 for
 * INT4 (no zero point: zp' = 8, MatMulNBits' default), q = x and zp' = zp
 * for UINT4 (none: 0), q - zp' = x - zp: the same weights, the product
 * summed in the 4-bit kernels' order. f16 scales: MatMulNBits takes them
 * as f32 (exact) and its weights (q - zp') * scale are the f32 values that
 * f16 DequantizeLinear rounds to binary16 (half an ulp, 2^-11 relative,
 * apart); A and Y stay f16, the sum f32 rounded once, as the f16 MatMul.
 * A weight whose f16 value would overflow to inf (|w| >= 65520) declines:
 * the fused weight would be finite. */
#include <math.h>
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
#include "rlx/half.h"

#define PASS "fuse_nbits"

/* The 4-bit weight of one DequantizeLinear: element (k, n) of x at
 * x[k * xk + n * xn], block (b, n) of the scales and zero points at
 * [b * sk + n * sn]. */
typedef struct nbits_src {
    const rlx_tensor *x, *s, *z; /* z: NULL when absent */
    int64_t K, N, bs, nb;
    size_t xk, xn, sk, sn;
} nbits_src;

static float scale_at(const nbits_src *w, size_t at) {
    return w->s->dtype == RLX_DTYPE_F16 ? rlx_f16_to_f32(((const uint16_t *)w->s->data)[at])
                                        : ((const float *)w->s->data)[at];
}

/* The repacked inputs of the MatMulNBits: B [N, nb, bs / 2] u8, scales
 * [N * nb] f32, zero points [N, ceil(nb / 2)] u8 (NULL: all 8). *ob stays
 * NULL (no error) when an f16 weight overflows (the fusion declines). */
static rlx_status repack(const nbits_src *w, rlx_tensor **ob, rlx_tensor **os, rlx_tensor **oz) {
    *ob = *os = *oz = NULL;
    int64_t K = w->K, N = w->N, bs = w->bs, nb = w->nb, blob = bs / 2, zrow = (nb + 1) / 2;
    unsigned off = w->x->dtype == RLX_DTYPE_I8 ? 8u : 0u; /* the levels as 0..15 */
    bool need_z = false, f16 = w->s->dtype == RLX_DTYPE_F16;
    const uint8_t *x = w->x->data, *z = w->z ? w->z->data : NULL; /* i8 read as its byte, plus 8 (mod 256) */
    for (size_t i = 0; z && i < (size_t)(nb * N); i++) need_z |= ((z[i] + off) & 255u) != 8u;
    if (!z && off == 0) need_z = true; /* UINT4 without zero points: 0, not MatMulNBits' 8 */
    /* binary16's largest finite, rounded: 65520 and up is inf; |x - zp| <= 15 */
    for (int64_t n = 0; f16 && n < N; n++)
        for (int64_t blk = 0; blk < nb; blk++) {
            size_t at = (size_t)blk * w->sk + (size_t)n * w->sn;
            float s = scale_at(w, at);
            if (!isfinite(s) || fabsf(s) * 15.0f < 65520.0f) continue;
            for (int64_t k = blk * bs; k < K && k < (blk + 1) * bs; k++) {
                int d = (int)((x[(size_t)k * w->xk + (size_t)n * w->xn] + off) & 15u) -
                        (int)(z ? (z[at] + off) & 15u : off);
                if (fabsf((float)d * s) >= 65520.0f) return RLX_OK;
            }
        }
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
            size_t at = (size_t)blk * w->sk + (size_t)n * w->sn;
            sc[n * nb + blk] = scale_at(w, at);
            if (zp) {
                unsigned q = z ? ((z[at] + off) & 15u) : 0u;
                zp[n * zrow + blk / 2] |= (uint8_t)(q << (4 * (blk % 2)));
            }
            uint8_t *row = b + (size_t)((n * nb + blk) * blob);
            for (int64_t j = 0; j < bs && blk * bs + j < K; j++) {
                unsigned q = (x[(size_t)(blk * bs + j) * w->xk + (size_t)n * w->xn] + off) & 15u;
                row[j / 2] |= (uint8_t)(q << (4 * (j % 2)));
            }
        }
    return RLX_OK;
}

/* True when node n (a reader of the dequantized weight bv, of type dt) can
 * be a MatMulNBits on a weight blocked along axis ax with K = dims[ax]:
 * *bias is then the Gemm's C (-1: none). */
static bool reader_ok(const rlx_graph *g, const rlx_node *n, int bv, rlx_dtype dt, int ax, int64_t K, int *bias) {
    *bias = -1;
    bool gemm = rlx_fuse_is(n, RLX_OP_Gemm);
    if ((!gemm && !rlx_fuse_is(n, RLX_OP_MatMul)) || n->n_in < 2 || n->n_out != 1 || n->out[0] < 0 ||
        n->in[1] != bv || n->in[0] == bv)
        return false;
    const rlx_value *a = rlx_node_input(g, n, 0), *y = &g->values[n->out[0]];
    if (!a || a->dtype != dt || y->dtype != dt || a->rank < 2 || a->dims[a->rank - 1] != K) return false;
    if (!gemm) return n->n_in == 2 && ax == 0;
    int c = n->n_in > 2 ? n->in[2] : -1;
    if (a->rank != 2 || rlx_param_int(n, RLX_A_transA) != 0 || rlx_param_float(n, RLX_A_alpha) != 1.0f ||
        (rlx_param_int(n, RLX_A_transB) != 0) != (ax == 1) || c == bv || (c >= 0 && rlx_param_float(n, RLX_A_beta) != 1.0f))
        return false;
    *bias = c;
    return true;
}

/* Reader `id` of the weight (DequantizeLinear dq_id) as MatMulNBits(in)
 * [+ Add of its bias, appended: *appended set]. */
static rlx_status fuse_reader(rlx_graph *g, int dq_id, int id, const int *in_w, int n_in, const nbits_src *w,
                              int bias, bool *appended) {
    int ids[2] = { dq_id, id };
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, 2, what, sizeof what);
    rlx_node_attr at[3];
    const char *names[3] = { "K", "N", "block_size" };
    const int64_t vals[3] = { w->K, w->N, w->bs };
    for (int i = 0; i < 3; i++) {
        rlx_status st = rlx_node_attr_set_int(&at[i], names[i], vals[i]);
        if (st) {
            for (int k = 0; k < i; k++) rlx_node_attr_free(&at[k]);
            return st;
        }
    }
    int in[4] = { g->nodes[id].in[0], in_w[0], in_w[1], in_w[2] };
    int out = g->nodes[id].out[0], mm_out = out;
    char base[200], name[256];
    snprintf(base, sizeof base, "%s", g->nodes[id].name ? g->nodes[id].name : "matmul");
    snprintf(name, sizeof name, "%s_nbits", base);
    rlx_status st = bias >= 0 ? rlx_graph_add_value(g, NULL, &mm_out) : RLX_OK;
    if (st) {
        for (int k = 0; k < 3; k++) rlx_node_attr_free(&at[k]);
        return st;
    }
    g->nodes[id].dead = true;
    g->values[out].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, id, "MatMulNBits", RLX_INTERNAL_DOMAIN, name, in, n_in, &mm_out, 1, at, 3));
    if (bias >= 0) { /* after the MatMulNBits in the order once the pass sorts the nodes */
        int add;
        snprintf(name, sizeof name, "%s_bias", base);
        RLX_TRY(rlx_graph_add_node(g, "Add", "", name, (const int[]){ mm_out, bias }, 2, &out, 1, NULL, 0, &add));
        RLX_TRY(rlx_infer_node(g, add));
        *appended = true;
    }
    char detail[160];
    snprintf(detail, sizeof detail, "K %lld, N %lld, block_size %lld, %s, %s scales%s", (long long)w->K,
             (long long)w->N, (long long)w->bs, w->x->dtype == RLX_DTYPE_I8 ? "int4" : "uint4",
             w->s->dtype == RLX_DTYPE_F16 ? "f16" : "f32", bias >= 0 ? ", + Add of C" : "");
    rlx_fuse_report(PASS, what, &g->nodes[id], detail);
    return RLX_OK;
}

static _Thread_local bool t_appended; /* a bias Add was appended: the pass sorts the nodes */

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int dq_id, rlx_pass_stats *stats, bool *done) {
    const rlx_node *dq = &g->nodes[dq_id];
    if (dq->version < 21 || dq->n_in < 2 || dq->n_out != 1 || dq->out[0] < 0) return RLX_OK;
    int bv = dq->out[0], nu = rlx_fuse_n_users(u, bv);
    if (nu < 1 || rlx_fuse_is_output(g, bv)) return RLX_OK;
    const rlx_value *b = &g->values[bv];
    const rlx_value *xv = rlx_node_input(g, dq, 0), *sv = rlx_node_input(g, dq, 1), *zv = rlx_node_input(g, dq, 2);
    if (!xv || !sv || !(xv->flags & RLX_VALUE_4BIT) || !xv->konst || xv->rank != 2 ||
        (xv->dtype != RLX_DTYPE_I8 && xv->dtype != RLX_DTYPE_U8))
        return RLX_OK;
    if ((b->dtype != RLX_DTYPE_F32 && b->dtype != RLX_DTYPE_F16) || !sv->konst || sv->dtype != b->dtype ||
        sv->rank != 2)
        return RLX_OK;
    int ax;
    nbits_src w = { .x = xv->konst, .s = sv->konst, .z = zv ? zv->konst : NULL,
                    .bs = rlx_param_int(dq, RLX_A_block_size) };
    if (!rlx_norm_axis(rlx_param_int(dq, RLX_A_axis), 2, &ax) || w.bs < 16 || w.bs > 4096 || (w.bs & (w.bs - 1)))
        return RLX_OK;
    w.K = xv->dims[ax];
    w.N = xv->dims[1 - ax];
    if (w.K <= 0 || w.N <= 0 || w.K > INT32_MAX || w.N > INT32_MAX) return RLX_OK;
    w.nb = (w.K + w.bs - 1) / w.bs;
    int64_t sd[2] = { ax == 0 ? w.nb : w.N, ax == 0 ? w.N : w.nb };
    if (sv->dims[0] != sd[0] || sv->dims[1] != sd[1]) return RLX_OK;
    if (zv && (!zv->konst || zv->dtype != xv->dtype || zv->rank != 2 || zv->dims[0] != sd[0] || zv->dims[1] != sd[1]))
        return RLX_OK;
    /* (k, n) of x and (block, n) of the scales: row-major [K, N] / [nb, N], or [N, K] / [N, nb] */
    w.xk = ax == 0 ? (size_t)w.N : 1;
    w.xn = ax == 0 ? 1 : (size_t)w.K;
    w.sk = ax == 0 ? (size_t)w.N : 1;
    w.sn = ax == 0 ? 1 : (size_t)w.nb;
    int *bias = malloc((size_t)nu * sizeof *bias);
    if (!bias) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (%s)", PASS);
    bool ok = true;
    for (int i = 0; i < nu && ok; i++)
        ok = reader_ok(g, &g->nodes[rlx_fuse_user(u, bv, i)], bv, b->dtype, ax, w.K, &bias[i]);
    rlx_tensor *tb = NULL, *ts = NULL, *tz = NULL; /* adding them moves g->values: xv, sv, zv, b are stale after */
    rlx_status st = ok ? repack(&w, &tb, &ts, &tz) : RLX_OK;
    if (st || !tb) {
        free(bias);
        return st;
    }
    int in[3] = { -1, -1, -1 };
    st = rlx_graph_add_konst(g, NULL, tb, &in[0]);
    if (st) rlx_tensor_destroy(ts);
    if (!st) st = rlx_graph_add_konst(g, NULL, ts, &in[1]);
    if (st) rlx_tensor_destroy(tz);
    if (!st && tz) st = rlx_graph_add_konst(g, NULL, tz, &in[2]);
    for (int i = 0; i < nu && !st; i++)
        st = fuse_reader(g, dq_id, rlx_fuse_user(u, bv, i), in, tz ? 4 : 3, &w, bias[i], &t_appended);
    free(bias);
    RLX_TRY(st);
    g->nodes[dq_id].dead = true;
    if (stats) stats->fused += nu;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_nbits(rlx_graph *g, rlx_pass_stats *stats) {
    t_appended = false;
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_DequantizeLinear, fuse_one, stats));
    return t_appended ? rlx_pass_verify(g) : RLX_OK; /* put the appended Adds in order */
}
