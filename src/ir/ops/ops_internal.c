/* Internal ops of domain "rlx" that the fusion passes create (contracts in
 * src/ir/ops/internal_ops.h): FusedElementwise, AddLayerNormalization,
 * Attention. Version 1 each; shape inference validates what the kernels
 * rely on. */
#include <math.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"

/* ------------------------------------------------------------ FusedElementwise */

/* Number of register operands of op (1, 2 or 3); 0 for an unknown op. */
static int ew_arity(int op) {
    const rlx_ew_info *r = rlx_ew_info_of(op);
    return r ? r->arity : 0;
}

rlx_status rlx_ew_prog_read(const rlx_node *n, rlx_ew_prog *p) { return rlx_ew_prog_read_at(n, "", 0, p); }

rlx_status rlx_ew_prog_read_at(const rlx_node *n, const char *prefix, int first_in, rlx_ew_prog *p) {
    memset(p, 0, sizeof *p);
    /* the op's own schema (by id), or (prefix) internal attributes of another op (by name) */
    enum { CODE, FPARAMS, CONSTS, QIN, QOUT, DTYPE, N_FIELDS };
    static const rlx_attr_id k_ids[N_FIELDS] = { RLX_A_code, RLX_A_fparams, RLX_A_consts,
                                                  RLX_A_qin,  RLX_A_qout,    RLX_A_dtype };
    bool own = !*prefix;
    char name[N_FIELDS][32];
    for (int i = 0; !own && i < N_FIELDS; i++)
        snprintf(name[i], sizeof name[i], "%s%s", prefix, rlx_attr_id_name(k_ids[i]));
    size_t nc = 0, nf = 0, nk = 0;
    const int64_t *code = own ? rlx_param_ints(n, k_ids[CODE], &nc) : rlx_attr_ints(n, name[CODE], &nc);
    const float *fp = own ? rlx_param_floats(n, k_ids[FPARAMS], &nf) : rlx_attr_floats(n, name[FPARAMS], &nf);
    const float *ks = own ? rlx_param_floats(n, k_ids[CONSTS], &nk) : rlx_attr_floats(n, name[CONSTS], &nk);
    p->n_in = n->n_in - first_in;
    if (p->n_in < 1 || p->n_in > RLX_EW_MAX_IN)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %d program inputs, expected 1 to %d", rlx_node_desc(n), p->n_in,
                        RLX_EW_MAX_IN);
    if (!code || nc == 0 || nc % 5 != 0 || nc / 5 > RLX_EW_MAX_INSTR || nf != (nc / 5) * 2 || nk > RLX_EW_MAX_CONSTS)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: malformed program (code %zu ints, fparams %zu floats, consts %zu; at most %d instructions "
                        "and %d constants)",
                        rlx_node_desc(n), nc, nf, nk, RLX_EW_MAX_INSTR, RLX_EW_MAX_CONSTS);
    p->n_consts = (int)nk;
    if (nk) memcpy(p->consts, ks, nk * sizeof(float));
    p->n_instr = (int)(nc / 5);
    for (int k = 0; k < p->n_instr; k++) {
        rlx_ew_instr *in = &p->ins[k];
        const int64_t *c = code + 5 * k;
        int lim = rlx_ew_reg(p, k);
        int ar = c[0] >= 0 && c[0] < RLX_EW_COUNT ? ew_arity((int)c[0]) : 0;
        if (ar == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: instruction %d: unknown op %lld", rlx_node_desc(n), k, (long long)c[0]);
        for (int j = 1; j <= 3; j++) {
            bool used = j <= ar;
            if (used ? (c[j] < 0 || c[j] >= lim) : c[j] != -1)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: instruction %d: operand %d (%lld) is out of range",
                                rlx_node_desc(n), k, j, (long long)c[j]);
        }
        if (c[4] != 0 && c[4] != RLX_DTYPE_F16 && c[4] != RLX_DTYPE_BF16)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: instruction %d: rounding type %lld", rlx_node_desc(n), k,
                            (long long)c[4]);
        in->op = (int)c[0];
        in->a = (int)c[1];
        in->b = (int)c[2];
        in->c = (int)c[3];
        in->rnd = (int)c[4];
        in->alpha = fp[2 * k];
        in->beta = fp[2 * k + 1];
        if (in->op == RLX_EW_WHERE && in->c >= p->n_in)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: instruction %d: a Where condition must be an input",
                            rlx_node_desc(n), k);
    }
    size_t nqi = 0, nqo = 0;
    const float *qi = own ? rlx_param_floats(n, k_ids[QIN], &nqi) : rlx_attr_floats(n, name[QIN], &nqi);
    const float *qo = own ? rlx_param_floats(n, k_ids[QOUT], &nqo) : rlx_attr_floats(n, name[QOUT], &nqo);
    if ((qi && nqi != 2 * (size_t)p->n_in) || (qo && nqo != 2))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: qin has %zu floats (expected %d), qout %zu (expected 2)",
                        rlx_node_desc(n), nqi, 2 * p->n_in, nqo);
    for (int i = 0; qi && i < p->n_in; i++) {
        p->in_scale[i] = qi[2 * i];
        p->in_zp[i] = qi[2 * i + 1];
        if (!isfinite(p->in_scale[i]) || p->in_zp[i] != nearbyintf(p->in_zp[i]) || fabsf(p->in_zp[i]) > 255)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: qin of input %d: scale %g, zero point %g", rlx_node_desc(n), i,
                            p->in_scale[i], p->in_zp[i]);
    }
    int64_t dt = own ? rlx_param_int(n, k_ids[DTYPE]) : rlx_attr_int(n, name[DTYPE], 0);
    if (qo) {
        p->out_scale = qo[0];
        p->out_zp = qo[1];
        float lo = dt == RLX_DTYPE_U8 ? 0 : -128;
        if (p->out_scale == 0 || p->out_scale != p->out_scale || p->out_zp != nearbyintf(p->out_zp) ||
            p->out_zp < lo || p->out_zp > lo + 255)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: qout: scale %g, zero point %g", rlx_node_desc(n), p->out_scale,
                            p->out_zp);
    }
    if (qo ? dt != RLX_DTYPE_U8 && dt != RLX_DTYPE_I8 : dt != RLX_DTYPE_F32 && dt != RLX_DTYPE_F16 && dt != RLX_DTYPE_BF16)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output dtype %lld is not %s", rlx_node_desc(n), (long long)dt,
                        qo ? "u8 or i8 (qout)" : "f32, f16 or bf16");
    p->dtype = (rlx_dtype)dt;
    return RLX_OK;
}

static bool ew_dtype_ok(rlx_dtype dt) {
    return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16;
}

static rlx_status infer_fused_ew(rlx_infer_ctx *c) {
    rlx_ew_prog p;
    RLX_TRY(rlx_ew_prog_read(c->n, &p));
    /* bool inputs exactly where Where reads its condition */
    bool cond[RLX_EW_MAX_IN] = { false };
    for (int k = 0; k < p.n_instr; k++) {
        const rlx_ew_instr *in = &p.ins[k];
        if (in->op == RLX_EW_WHERE) cond[in->c] = true;
    }
    for (int k = 0; k < p.n_instr; k++) {
        const rlx_ew_instr *in = &p.ins[k];
        int ops[3] = { in->a, in->op == RLX_EW_WHERE ? in->b : -1, -1 };
        if (ew_arity(in->op) == 2) ops[1] = in->b;
        for (int j = 0; j < 2; j++)
            if (ops[j] >= 0 && ops[j] < p.n_in && cond[ops[j]])
                return rlx_ictx_fail(c, "input %d is a Where condition and an operand of instruction %d", ops[j], k);
    }
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (!x) return rlx_ictx_fail(c, "input %d is missing", i);
        bool q8 = p.in_scale[i] != 0;
        if (q8 && (cond[i] || (x->dtype != RLX_DTYPE_U8 && x->dtype != RLX_DTYPE_I8) ||
                   p.in_zp[i] < (x->dtype == RLX_DTYPE_U8 ? 0 : -128) ||
                   p.in_zp[i] > (x->dtype == RLX_DTYPE_U8 ? 255 : 127)))
            return rlx_ictx_fail(c, "input %d has dtype %s and qin zero point %g, expected u8 or i8 in range", i,
                                 rlx_dtype_name(x->dtype), p.in_zp[i]);
        if (!q8 && (cond[i] ? x->dtype != RLX_DTYPE_BOOL : !ew_dtype_ok(x->dtype)))
            return rlx_ictx_fail(c, "input %d has dtype %s, expected %s", i, rlx_dtype_name(x->dtype),
                                 cond[i] ? "bool (a Where condition)" : "f32, f16 or bf16");
    }
    /* the output shape: broadcast of every input */
    int rank = 0;
    int64_t dims[RLX_MAX_RANK] = { 0 };
    int32_t syms[RLX_MAX_RANK];
    for (int d = 0; d < RLX_MAX_RANK; d++) syms[d] = -1;
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, p.dtype);
        int r2;
        int64_t d2[RLX_MAX_RANK];
        int32_t s2[RLX_MAX_RANK];
        if (!rlx_broadcast_shapes(rank, dims, syms, x->rank, x->dims, x->syms, &r2, d2, s2))
            return rlx_ictx_fail(c, "input %d ('%s') does not broadcast with the others", i, x->name);
        rank = r2;
        memcpy(dims, d2, sizeof dims);
        memcpy(syms, s2, sizeof syms);
    }
    return rlx_ictx_set_out(c, 0, p.dtype, rank, dims, syms);
}

/* ------------------------------------------------------------ AddLayerNormalization */

bool rlx_add_ln_fits(const int64_t *p, int pr, const int64_t *x, int xr, int ax) {
    if (pr < 0 || pr > xr) return false;
    int off = xr - pr, s = xr;
    while (s > off && p[s - off - 1] == x[s - 1]) s--;
    for (int i = off; i < s; i++)
        if (p[i - off] != 1) return false;
    for (int i = 0; i < pr; i++)
        if (xr - pr + i < ax && p[i] != 1) return false;
    return true;
}

/* Parameter p of A's axis ax (rlx_add_ln_fits). */
static bool fits(const rlx_value *p, const rlx_value *a, int ax) {
    return rlx_add_ln_fits(p->dims, p->rank, a->dims, a->rank, ax);
}

static rlx_status infer_add_ln(rlx_infer_ctx *c) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1), *sc = rlx_ictx_in(c, 2), *bi = rlx_ictx_in(c, 3);
    if (!rlx_dtype_is_float(a->dtype)) return rlx_ictx_fail(c, "A has dtype %s, expected a float type", rlx_dtype_name(a->dtype));
    if (b->dtype != a->dtype || sc->dtype != a->dtype || (bi && bi->dtype != a->dtype))
        return rlx_ictx_fail(c, "inputs have different dtypes");
    if (a->rank < 0) return rlx_ictx_set_out_unknown(c, 0, a->dtype);
    int ax;
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    RLX_TRY(rlx_ictx_axis(c, axis, a->rank, &ax));
    if (!fits(b, a, 0)) return rlx_ictx_fail(c, "B is neither A's shape nor A's trailing dims");
    if (!fits(sc, a, ax) || (bi && !fits(bi, a, ax)))
        return rlx_ictx_fail(c, "Scale and Bias must have (a suffix of) the normalised dims of A");
    return rlx_ictx_set_out_like(c, 0, a);
}

/* ------------------------------------------------------------ Attention */

/* perm of attribute a (identity when absent); false when malformed. */
static bool read_perm(const rlx_node *n, rlx_attr_id a, int r, int *perm) {
    size_t cnt;
    const int64_t *p = rlx_param_ints(n, a, &cnt);
    bool seen[RLX_MAX_RANK] = { false };
    for (int i = 0; i < r; i++) perm[i] = i;
    if (!p) return true;
    if (cnt != (size_t)r) return false;
    for (int i = 0; i < r; i++) {
        if (p[i] < 0 || p[i] >= r || seen[p[i]]) return false;
        seen[p[i]] = true;
        perm[i] = (int)p[i];
    }
    return true;
}

/* Logical dims and strides of Transpose(x, perm): axis i is x's axis perm[i]. */
static void permute(const int64_t *x, int r, const int *perm, int64_t *dims, int64_t *strides) {
    int64_t st[RLX_MAX_RANK], s = 1;
    for (int i = r - 1; i >= 0; i--) {
        st[i] = s;
        s *= x[i] > 0 ? x[i] : 1;
    }
    for (int i = 0; i < r; i++) {
        dims[i] = x[perm[i]];
        strides[i] = st[perm[i]];
    }
}

static bool dim_eq(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

rlx_status rlx_attn_layout_of(const rlx_node *n, int r, const int64_t *q, const int64_t *k, const int64_t *v,
                              rlx_attn_layout *o) {
    memset(o, 0, sizeof *o);
    if (r < 2 || r > RLX_MAX_RANK) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: rank %d", rlx_node_desc(n), r);
    int qp[RLX_MAX_RANK], kp[RLX_MAX_RANK], vp[RLX_MAX_RANK], yp[RLX_MAX_RANK];
    if (!read_perm(n, RLX_A_q_perm, r, qp) || !read_perm(n, RLX_A_k_perm, r, kp) ||
        !read_perm(n, RLX_A_v_perm, r, vp) || !read_perm(n, RLX_A_y_perm, r, yp))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: a layout attribute is not a permutation of %d axes",
                        rlx_node_desc(n), r);
    o->r = r;
    o->kt = rlx_param_int(n, RLX_A_k_transposed) != 0;
    permute(q, r, qp, o->qd, o->qs);
    permute(k, r, kp, o->kd, o->ks);
    permute(v, r, vp, o->vd, o->vs);
    for (int i = 0; i < r - 2; i++)
        if (!dim_eq(o->kd[i], o->qd[i]) || !dim_eq(o->vd[i], o->qd[i]))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: batch dim %d differs between Q, K and V", rlx_node_desc(n), i);
    int64_t d = o->qd[r - 1], kd = o->kd[o->kt ? r - 2 : r - 1], sk = o->kd[o->kt ? r - 1 : r - 2];
    if (!dim_eq(d, kd))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Q and K have different depths (%lld, %lld)", rlx_node_desc(n),
                        (long long)d, (long long)kd);
    if (!dim_eq(sk, o->vd[r - 2]))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: K and V have different lengths (%lld, %lld)", rlx_node_desc(n),
                        (long long)sk, (long long)o->vd[r - 2]);
    for (int i = 0; i < r; i++) o->yd[i] = o->qd[i];
    o->yd[r - 1] = o->vd[r - 1];
    /* physical output Y0 = Transpose(Y, yp): Y0 axis i is Y's axis yp[i] */
    int64_t ps[RLX_MAX_RANK], s = 1;
    for (int i = 0; i < r; i++) o->y_phys[i] = o->yd[yp[i]];
    for (int i = r - 1; i >= 0; i--) {
        ps[i] = s;
        s *= o->y_phys[i] > 0 ? o->y_phys[i] : 1;
    }
    for (int i = 0; i < r; i++) o->ys[yp[i]] = ps[i];
    return RLX_OK;
}

static rlx_status infer_attention(rlx_infer_ctx *c) {
    const rlx_value *q = rlx_ictx_in(c, 0), *k = rlx_ictx_in(c, 1), *v = rlx_ictx_in(c, 2), *m = rlx_ictx_in(c, 3);
    rlx_dtype dt = q->dtype;
    if ((dt != RLX_DTYPE_F32 && dt != RLX_DTYPE_F16) || k->dtype != dt || v->dtype != dt || (m && m->dtype != dt))
        return rlx_ictx_fail(c, "Q, K, V and Mask must be all f32 or all f16");
    if (q->rank < 0 || k->rank < 0 || v->rank < 0) return rlx_ictx_set_out_unknown(c, 0, dt);
    int r = q->rank;
    if (r < 2 || k->rank != r || v->rank != r) return rlx_ictx_fail(c, "Q, K, V must have one rank >= 2");
    rlx_attn_layout l;
    RLX_TRY(rlx_attn_layout_of(c->n, r, q->dims, k->dims, v->dims, &l));
    if (m && m->rank >= 0) {
        int64_t sd[RLX_MAX_RANK];
        for (int i = 0; i < r; i++) sd[i] = l.qd[i];
        sd[r - 1] = l.kd[l.kt ? r - 1 : r - 2];
        bool ok = m->rank <= r;
        for (int i = 0; ok && i < m->rank; i++) {
            int64_t md = m->dims[i], want = sd[r - m->rank + i];
            ok = md == 1 || md < 0 || want < 0 || md == want;
        }
        if (!ok) return rlx_ictx_fail(c, "Mask does not broadcast to the scores [.., Sq, Sk]");
    }
    return rlx_ictx_set_out(c, 0, dt, r, l.y_phys, NULL);
}

/* ------------------------------------------------------------ MatMulNBits */

rlx_status rlx_nbits_geom_of(const rlx_node *n, rlx_nbits_geom *out) {
    memset(out, 0, sizeof *out);
    int64_t K = rlx_param_int(n, RLX_A_K), N = rlx_param_int(n, RLX_A_N), bs = rlx_param_int(n, RLX_A_block_size);
    int64_t bits = rlx_param_int(n, RLX_A_bits);
    if (bits != 4)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: bits=%lld, expected 4", rlx_node_desc(n), (long long)bits);
    if (bs < 16 || bs > 4096 || (bs & (bs - 1)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: block_size=%lld must be a power of 2 from 16 to 4096",
                        rlx_node_desc(n), (long long)bs);
    if (K <= 0 || N <= 0 || K > INT32_MAX || N > INT32_MAX)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: K=%lld and N=%lld must be in [1, 2^31)", rlx_node_desc(n),
                        (long long)K, (long long)N);
    out->K = K;
    out->N = N;
    out->bs = bs;
    out->nb = (K + bs - 1) / bs;
    out->blob = bs / 2;
    out->zrow = (out->nb + 1) / 2;
    return RLX_OK;
}

/* Element counts of B, scales and zero points that the geometry asks for. */
static bool nbits_sizes_ok(const rlx_nbits_geom *g, size_t nB, size_t nS, size_t nZ, bool has_z) {
    return nB == (size_t)(g->N * g->nb * g->blob) && nS == (size_t)(g->N * g->nb) &&
           (!has_z || nZ == (size_t)(g->N * g->zrow));
}

rlx_status rlx_nbits_check_inputs(const rlx_node *n, const rlx_nbits_geom *g, rlx_dtype bt, size_t nB,
                                  rlx_dtype st, size_t nS, bool has_z, rlx_dtype zt, size_t nZ) {
    if (bt != RLX_DTYPE_U8 || st != RLX_DTYPE_F32 || (has_z && zt != RLX_DTYPE_U8) ||
        !nbits_sizes_ok(g, nB, nS, nZ, has_z))
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: expected B uint8 with N * n_blocks * block_size / 2 = %lld elements, scales f32 with "
                        "N * n_blocks = %lld and zero_points uint8 with N * ceil(n_blocks / 2) = %lld; have B %s "
                        "%zu, scales %s %zu, zero_points %s %zu",
                        rlx_node_desc(n), (long long)(g->N * g->nb * g->blob), (long long)(g->N * g->nb),
                        (long long)(g->N * g->zrow), rlx_dtype_name(bt), nB, rlx_dtype_name(st), nS,
                        has_z ? rlx_dtype_name(zt) : "none", nZ);
    return RLX_OK;
}

/* Element count of a value of static shape, or SIZE_MAX. */
static size_t static_numel(const rlx_value *v) {
    if (v->rank < 0) return SIZE_MAX;
    size_t e = 1;
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] < 0) return SIZE_MAX;
        e *= (size_t)v->dims[i];
    }
    return e;
}

static rlx_status infer_matmul_nbits(rlx_infer_ctx *c) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1), *s = rlx_ictx_in(c, 2), *z = rlx_ictx_in(c, 3);
    rlx_nbits_geom g;
    RLX_TRY(rlx_nbits_geom_of(c->n, &g));
    if (a->dtype != RLX_DTYPE_F32 && a->dtype != RLX_DTYPE_F16)
        return rlx_ictx_fail(c, "A has dtype %s, expected f32 or f16", rlx_dtype_name(a->dtype));
    size_t nB = static_numel(b), nS = static_numel(s), nZ = z ? static_numel(z) : 0;
    if (nB != SIZE_MAX && nS != SIZE_MAX && nZ != SIZE_MAX)
        RLX_TRY(rlx_nbits_check_inputs(c->n, &g, b->dtype, nB, s->dtype, nS, z != NULL,
                                       z ? z->dtype : RLX_DTYPE_U8, nZ));
    if (a->rank < 0) return rlx_ictx_set_out_unknown(c, 0, a->dtype);
    if (a->rank < 1) return rlx_ictx_fail(c, "A is a scalar, expected rank >= 1");
    int64_t kd = a->dims[a->rank - 1];
    if (kd >= 0 && kd != g.K) return rlx_ictx_fail(c, "A's last dim is %lld, expected K = %lld", (long long)kd, (long long)g.K);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    for (int i = 0; i < a->rank; i++) {
        dims[i] = a->dims[i];
        syms[i] = a->syms[i];
    }
    dims[a->rank - 1] = g.N;
    syms[a->rank - 1] = -1;
    return rlx_ictx_set_out(c, 0, a->dtype, a->rank, dims, syms);
}


const rlx_op_def rlx_ops_internal[] = {
#include "ir/ops/ops_internal.def"
};
const size_t rlx_ops_internal_count = RLX_ARRAY_LEN(rlx_ops_internal);
