/* WGSL lowerings of the integer matrix products: MatMulInteger-10 (i32
 * result) and QLinearMatMul-10/21 (int8/uint8 result), numpy.matmul shapes
 * (rank-1 operands promoted, batch dims broadcast), on the integer GEMM
 * kernel (kernels/qgemm_body.wgsl; qgemm_dp4 with dot4I8Packed when the
 * device's self-test passed, webgpu_probe.c). Bit-exact with the CPU
 * reference (cpu_quant.c: mm_run): the sums are i32 (wrapping), and
 * QLinearMatMul's requantization reproduces the CPU's double arithmetic
 * (see the kernel). Declines (the node runs on the CPU): operands that are
 * not int8/uint8; zero points or scales with batch dims; QLinearMatMul
 * scales that are not f32 constants, a y zero point that is not a
 * constant, a multiplier a_scale * b_scale / y_scale that is not positive
 * and finite; more than 4 batch dims; sizes past 32-bit indexing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_qgemm.h"
#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/quant_params.h"

#define LIM31 ((uint64_t)1 << 31)

static bool is_q8(const rlx_value *v) {
    return v && rlx_value_is_static(v) && (v->dtype == RLX_DTYPE_U8 || v->dtype == RLX_DTYPE_I8);
}

rlx_status wg_emit_qgemm(wg_lower *L, const wg_qgemm *q) {
    uint64_t batch = 1;
    for (int i = 0; i < q->nb; i++) batch *= q->bd[i];
    uint64_t total = batch * q->m * q->n;
    if (total == 0) return RLX_OK;
    if (total >= LIM31 || (uint64_t)q->m * q->k * batch >= LIM31 || (uint64_t)q->k * q->n * batch >= LIM31)
        return wg_decline(L, "too large for 32-bit indexing");
    bool requant = q->mult != NULL;
    uint64_t t_off = 0;
    uint32_t t_words = 0;
    if (requant) {
        t_words = 3 * q->mult_rows * q->mult_cols;
        uint32_t *w = malloc(sizeof *w * t_words);
        if (!w) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        for (uint32_t i = 0; i < q->mult_rows * q->mult_cols; i++) {
            /* mult = sig * 2^e, sig a 53-bit integer (exact) */
            int ex = 0;
            double fr = frexp(q->mult[i], &ex);
            uint64_t sig = (uint64_t)ldexp(fr, 53);
            w[3 * i] = (uint32_t)(sig >> 32), w[3 * i + 1] = (uint32_t)sig;
            w[3 * i + 2] = (uint32_t)(int32_t)(q->mult[i] == 0 ? 0 : ex - 53);
        }
        t_off = wg_table(L, w, t_words);
        free(w);
    }
    uint64_t threads = requant ? (total + 3) / 4 : total;
    wg_dispatch *d = wg_emit(L, L->caps->dot4 ? "qgemm_dp4" : "qgemm");
    wg_spec(L, d, "A_SIGNED", q->a_signed);
    wg_spec(L, d, "B_SIGNED", q->b_signed);
    wg_spec(L, d, "HAS_ZA", q->za >= 0);
    wg_spec(L, d, "HAS_ZB", q->zb >= 0);
    wg_spec(L, d, "REQUANT", requant);
    wg_spec(L, d, "Y_SIGNED", q->y_signed);
    wg_spec(L, d, "B_PACKED", q->b_packed != NULL);
    wg_bind_value(L, d, q->a);
    if (q->b_packed) wg_bind(L, d, WG_TABLE, wg_table(L, q->b_packed, (size_t)q->b_packed_words), q->b_packed_words);
    else wg_bind_value(L, d, q->b);
    wg_bind_or(L, d, q->za, q->a);
    wg_bind_or(L, d, q->zb, q->a);
    wg_bind_value(L, d, q->y);
    if (requant) wg_bind(L, d, WG_TABLE, t_off, t_words);
    else wg_bind(L, d, q->a, 0, 1);
    WG_P(L, d, wg_pu(q->m), wg_pu(q->n), wg_pu(q->k), wg_pu((uint32_t)total), wg_pu((uint32_t)threads),
         wg_pu(q->za_step), wg_pu(q->zb_step), wg_pu(requant && q->mult_rows > 1 ? 3 * q->mult_cols : 0),
         wg_pu(requant && q->mult_cols > 1 ? 3 : 0), wg_pi(q->y_zp));
    wg_p_align16(L, d);
    int pad = 4 - q->nb;
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, j < pad ? 1 : q->bd[j - pad]);
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, j < pad ? 0 : q->a_bstride[j - pad]);
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, j < pad ? 0 : q->b_bstride[j - pad]);
    return wg_grid_1d(L, d, threads);
}

/* The step of a zero point or scale along the operand's row (a) or column
 * (b) dim: 0 (one value) or 1; false when it has batch dims or another
 * layout (rlx_quant_mm_param's strides). */
static rlx_status param_step(wg_lower *L, const char *what, bool per_row, const rlx_value *op, const rlx_value *p,
                             uint32_t *step) {
    int64_t st[RLX_MAX_RANK];
    RLX_TRY(rlx_quant_mm_param(L->n, what, per_row, op->dims, op->rank, p->dims, p->rank, st));
    int r = op->rank < 2 ? 2 : op->rank;
    for (int i = 0; i < r - 2; i++)
        if (st[i] != 0) return wg_decline(L, "%s with batch dims", what);
    int64_t s = st[per_row ? r - 2 : r - 1];
    if (s != 0 && s != 1) return wg_decline(L, "%s layout", what);
    *step = (uint32_t)s;
    return RLX_OK;
}

/* MatMulInteger-10 (a, b, a_zero_point?, b_zero_point?) -> i32 and
 * QLinearMatMul-10/21 (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
static rlx_status lower_qmatmul(wg_lower *L) {
    bool ql = L->n->op == RLX_OP_QLinearMatMul;
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, ql ? 3 : 1), *y = wg_out(L, 0);
    const rlx_value *za = wg_in(L, 2), *zb = wg_in(L, ql ? 5 : 3);
    int za_id = za ? wg_in_id(L, 2) : -1, zb_id = zb ? wg_in_id(L, ql ? 5 : 3) : -1;
    if (!is_q8(a) || !is_q8(b)) return wg_decline(L, "operands must be int8 or uint8");
    if ((za && za->dtype != a->dtype) || (zb && zb->dtype != b->dtype))
        return wg_decline(L, "zero point of another type than its operand");
    if ((za && !rlx_value_is_static(za)) || (zb && !rlx_value_is_static(zb))) return wg_decline(L, "dynamic shape");
    if (!y || !rlx_value_is_static(y)) return wg_decline(L, "dynamic shape");
    if (ql ? (y->dtype != RLX_DTYPE_U8 && y->dtype != RLX_DTYPE_I8) : y->dtype != RLX_DTYPE_I32)
        return wg_decline(L, "output dtype %s", rlx_dtype_name(y->dtype));
    if (a->rank < 1 || b->rank < 1) return wg_decline(L, "matmul of a scalar");
    wg_qgemm q;
    memset(&q, 0, sizeof q);
    q.a = wg_in_id(L, 0), q.b = wg_in_id(L, ql ? 3 : 1), q.y = wg_out_id(L, 0);
    q.za = za_id, q.zb = zb_id;
    q.a_signed = a->dtype == RLX_DTYPE_I8, q.b_signed = b->dtype == RLX_DTYPE_I8, q.y_signed = y->dtype == RLX_DTYPE_I8;
    /* numpy.matmul promotion */
    int64_t ad[RLX_MAX_RANK], bdm[RLX_MAX_RANK];
    int ar = a->rank < 2 ? 2 : a->rank, br = b->rank < 2 ? 2 : b->rank;
    if (a->rank == 1) ad[0] = 1, ad[1] = a->dims[0];
    else memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
    if (b->rank == 1) bdm[0] = b->dims[0], bdm[1] = 1;
    else memcpy(bdm, b->dims, sizeof(int64_t) * (size_t)br);
    int64_t M = ad[ar - 2], K = ad[ar - 1], N = bdm[br - 1];
    if (bdm[br - 2] != K) return wg_decline(L, "inner dims differ");
    if ((uint64_t)M >= LIM31 || (uint64_t)N >= LIM31 || (uint64_t)K >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    q.m = (uint32_t)M, q.n = (uint32_t)N, q.k = (uint32_t)K;
    int nb = (ar > br ? ar : br) - 2;
    if (nb > 4) return wg_decline(L, "more than 4 batch dims");
    q.nb = nb;
    uint64_t as = (uint64_t)(M * K), bs = (uint64_t)(K * N);
    for (int j = nb - 1; j >= 0; j--) {
        int ia = j - (nb - (ar - 2)), ib = j - (nb - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bdm[ib] : 1;
        if (da != db && da != 1 && db != 1) return wg_decline(L, "batch dims do not broadcast");
        q.bd[j] = (uint32_t)(da == 1 ? db : da);
        q.a_bstride[j] = da == 1 ? 0 : (uint32_t)as;
        q.b_bstride[j] = db == 1 ? 0 : (uint32_t)bs;
        as *= (uint64_t)da, bs *= (uint64_t)db;
        if (as >= LIM31 || bs >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    }
    if (za) RLX_TRY(param_step(L, "a_zero_point", true, a, za, &q.za_step));
    if (zb) RLX_TRY(param_step(L, "b_zero_point", false, b, zb, &q.zb_step));
    if (za && wg_numel(za) < 1) return wg_decline(L, "empty zero point");
    if (zb && wg_numel(zb) < 1) return wg_decline(L, "empty zero point");
    double *mult = NULL;
    if (ql) {
        const rlx_value *sa = wg_in(L, 1), *sb = wg_in(L, 4), *sy = wg_in(L, 6), *zy = wg_in(L, 7);
        const rlx_value *sc[3] = { sa, sb, sy };
        for (int i = 0; i < 3; i++)
            if (!sc[i] || !sc[i]->konst || sc[i]->dtype != RLX_DTYPE_F32 || rlx_value_numel(sc[i]) < 1)
                return wg_decline(L, "scales must be f32 constants");
        if (!zy || !zy->konst || rlx_value_numel(zy) < 1 || zy->dtype != y->dtype)
            return wg_decline(L, "y_zero_point must be a constant of y's type");
        uint32_t sa_step, sb_step;
        RLX_TRY(param_step(L, "a_scale", true, a, sa, &sa_step));
        RLX_TRY(param_step(L, "b_scale", false, b, sb, &sb_step));
        q.mult_rows = sa_step ? q.m : 1, q.mult_cols = sb_step ? q.n : 1;
        if ((uint64_t)q.mult_rows * q.mult_cols * 3 >= LIM31) return wg_decline(L, "too many scales");
        mult = malloc(sizeof *mult * q.mult_rows * q.mult_cols);
        if (!mult) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        double syv = rlx_tensor_get_f64(sy->konst, 0);
        for (uint32_t r = 0; r < q.mult_rows; r++)
            for (uint32_t c = 0; c < q.mult_cols; c++) {
                /* the CPU's expression (cpu_quant.c: mm_run) */
                double m = rlx_tensor_get_f64(sa->konst, r) * rlx_tensor_get_f64(sb->konst, c) / syv;
                if (!(m >= 0) || isinf(m)) {
                    free(mult);
                    return wg_decline(L, "a_scale * b_scale / y_scale is not finite and >= 0");
                }
                mult[r * q.mult_cols + c] = m;
            }
        q.mult = mult;
        q.y_zp = (int32_t)rlx_tensor_get_i64(zy->konst, 0);
    }
    /* a constant b: packed once, k-contiguous per column (one word per
     * four k instead of four byte loads), within one binding */
    uint32_t *packed = NULL;
    uint64_t kw = (q.k + 3) / 4, kn = (uint64_t)q.k * q.n;
    uint64_t nbatch_b = kn ? rlx_value_numel(b) / kn : 0;
    if (b->konst && kn && wg_window_fits(L, nbatch_b * q.n * kw)) {
        q.b_packed_words = nbatch_b * q.n * kw;
        packed = calloc((size_t)q.b_packed_words, sizeof *packed);
        if (!packed) {
            free(mult);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
        const uint8_t *pb = b->konst->data;
        uint8_t flip = q.b_signed ? 0 : 0x80;
        for (uint64_t t = 0; t < nbatch_b; t++)
            for (uint64_t c = 0; c < q.n; c++)
                for (uint64_t k = 0; k < q.k; k++)
                    packed[(t * q.n + c) * kw + k / 4] |= (uint32_t)(uint8_t)(pb[(t * q.k + k) * q.n + c] ^ flip)
                                                          << (8 * (k % 4));
        for (int j = 0; j < q.nb; j++)
            if (q.b_bstride[j]) q.b_bstride[j] = (uint32_t)(q.b_bstride[j] / kn * q.n * kw);
        q.b_packed = packed;
    }
    rlx_status st = wg_emit_qgemm(L, &q);
    free(packed);
    free(mult);
    return st;
}

const wg_lower_fn wg_lowerings_qgemm[RLX_OP_COUNT] = {
    [RLX_OP_MatMulInteger] = lower_qmatmul,
    [RLX_OP_QLinearMatMul] = lower_qmatmul,
};
