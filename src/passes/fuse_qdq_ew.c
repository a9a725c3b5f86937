/* passes/fuse_qdq_ew.c — a
 * FusedElementwise chain of a QDQ model reads the 8-bit tensors of its
 * DequantizeLinear producers itself and writes the 8-bit tensor of its
 * QuantizeLinear users itself (the node's attributes qin and qout,
 * src/ir/ops/internal_ops.h), so that the f32 tensors between an integer
 * convolution and the chain, and between the chain and the next one, are
 * never materialised, and the CPU kernel can run a chain whose only
 * varying operand is one 8-bit tensor as a table of its 256 bytes
 * (src/backend/cpu/cpu_fused_ew.c). The same bits as the nodes apart: the
 * kernel dequantizes and quantizes with the f32 operations of the
 * DequantizeLinear and QuantizeLinear kernels.
 *
 * An input is taken when its producer is a DequantizeLinear per tensor:
 * x u8 or i8; scale a constant f32 of one element, finite and not 0; zero
 * point absent or a constant of one element of x's type; block_size 0;
 * output f32. The DequantizeLinear stays while other nodes read it (dce
 * removes it otherwise). The output is taken when the chain's output is
 * f32, not a graph output, and read by QuantizeLinear nodes only, all per
 * tensor with the same parameters: scale a constant f32 of one element,
 * finite and not 0, zero point absent or a constant of one element of the
 * output's type, output u8 or i8, block_size 0, precision (version 23) 0
 * or f32, and none but the first a graph output. The chain then writes the
 * first one's output, and the others' users read it.
 *
 * Before that, a nearest Resize of a DequantizeLinear's output (its only
 * user; mode nearest, any coordinate transformation but
 * tf_crop_and_resize, whose extrapolation value would need quantizing;
 * roi, scales and sizes constants) resizes the 8-bit tensor and the
 * DequantizeLinear follows it: nearest copies elements, so the values are
 * the same, a quarter of the bytes move, and a chain reading the Resize
 * then takes the DequantizeLinear in. A QuantizeLinear right after the
 * Resize leaves a DequantizeLinear -> QuantizeLinear pair (per tensor as
 * above, read by those QuantizeLinear nodes alone, all alike): where it
 * gives every one of the 256 levels back (same type; computed with the
 * kernels' f32 operations: equal parameters do unless the products
 * overflow), it goes, and the Resize of the bytes is all that is left;
 * otherwise it becomes one FusedElementwise copy with qin and qout, a
 * requantization with the two nodes' bits (cancel_dq_q).
 *
 * GPU plans fuse the chains too (the generated FusedElementwise kernel
 * reads and writes the bytes, backend/webgpu/lower_internal.c); where the
 * GPU declines such a node, the CPU's kernel runs it, with the same bits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_qdq_ew"

/* Scale and zero point of per-tensor Q or DQ node n whose 8-bit side has
 * dtype qdt; false unless as the header says. */
static bool per_tensor(const rlx_graph *g, const rlx_node *n, rlx_dtype qdt, float *scale, float *zp) {
    if (n->n_in < 2 || n->n_out != 1 || n->out[0] < 0 || rlx_param_int(n, RLX_A_block_size) != 0) return false;
    const rlx_value *s = rlx_node_input(g, n, 1), *z = n->n_in > 2 ? rlx_node_input(g, n, 2) : NULL;
    double sv, zv = 0;
    if (!s || !s->konst || s->dtype != RLX_DTYPE_F32 || rlx_value_numel(s) != 1 || !rlx_konst_scalar(s, &sv))
        return false;
    if (!isfinite(sv) || sv == 0) return false;
    if (z && (!z->konst || z->dtype != qdt || rlx_value_numel(z) != 1 || !rlx_konst_scalar(z, &zv))) return false;
    *scale = (float)sv;
    *zp = (float)zv;
    return true;
}

static bool is_q8(rlx_dtype dt) { return dt == RLX_DTYPE_U8 || dt == RLX_DTYPE_I8; }

/* DequantizeLinear producer of FE input value v: its 8-bit input (-1: none)
 * and parameters. */
static int dq_input(const rlx_graph *g, int v, float *scale, float *zp) {
    const rlx_node *d = rlx_fuse_producer(g, v);
    if (!d || !rlx_fuse_is(d, RLX_OP_DequantizeLinear) || g->values[v].dtype != RLX_DTYPE_F32) return -1;
    const rlx_value *x = rlx_node_input(g, d, 0);
    if (!x || !is_q8(x->dtype) || !per_tensor(g, d, x->dtype, scale, zp)) return -1;
    return d->in[0];
}

/* Whether QuantizeLinear node q reads v per tensor as the header says; its
 * output dtype and parameters. */
static bool q_user(const rlx_graph *g, const rlx_node *q, int v, rlx_dtype *dt, float *scale, float *zp) {
    if (!rlx_fuse_is(q, RLX_OP_QuantizeLinear) || q->in[0] != v || q->n_out != 1 || q->out[0] < 0) return false;
    *dt = g->values[q->out[0]].dtype;
    if (!is_q8(*dt)) return false;
    if (q->version >= 23) {
        int64_t prec = rlx_param_int(q, RLX_A_precision);
        if (prec != 0 && prec != RLX_DTYPE_F32) return false;
    }
    return per_tensor(g, q, *dt, scale, zp);
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int fi, rlx_pass_stats *stats, bool *done) {
    const rlx_node *f = &g->nodes[fi];
    size_t cnt = 0;
    if (f->n_out != 1 || f->out[0] < 0 || rlx_param_floats(f, RLX_A_qin, &cnt) || rlx_param_floats(f, RLX_A_qout, &cnt))
        return RLX_OK;
    int n_in = f->n_in, ins[RLX_EW_MAX_IN], out = f->out[0], n_q = 0;
    float qin[2 * RLX_EW_MAX_IN] = { 0 }, qout[2] = { 0 };
    for (int i = 0; i < n_in; i++) {
        ins[i] = f->in[i];
        int x = dq_input(g, f->in[i], &qin[2 * i], &qin[2 * i + 1]);
        if (x >= 0) ins[i] = x, n_q++;
        else qin[2 * i] = qin[2 * i + 1] = 0;
    }
    /* the output: QuantizeLinear users only, all alike */
    rlx_dtype qdt = RLX_DTYPE_UNDEFINED;
    int nu = rlx_fuse_n_users(u, out), qnodes[64];
    bool qo = g->values[out].dtype == RLX_DTYPE_F32 && rlx_param_int(f, RLX_A_dtype) == RLX_DTYPE_F32 &&
              !rlx_fuse_is_output(g, out) && nu >= 1 && nu <= (int)RLX_ARRAY_LEN(qnodes);
    for (int j = 0; qo && j < nu; j++) {
        rlx_dtype dt;
        float s, z;
        qnodes[j] = rlx_fuse_user(u, out, j);
        qo = q_user(g, &g->nodes[qnodes[j]], out, &dt, &s, &z) &&
             (j == 0 || !rlx_fuse_is_output(g, g->nodes[qnodes[j]].out[0]));
        if (qo && j == 0) qdt = dt, qout[0] = s, qout[1] = z;
        else if (qo) qo = dt == qdt && s == qout[0] && z == qout[1];
    }
    if (!n_q && !qo) return RLX_OK;

    size_t nc = 0, nf = 0, nk = 0;
    const int64_t *code = rlx_param_ints(f, RLX_A_code, &nc);
    const float *fp = rlx_param_floats(f, RLX_A_fparams, &nf);
    const float *ks = rlx_param_floats(f, RLX_A_consts, &nk);
    if (!code || !fp) return RLX_OK;
    rlx_node_attr attrs[6];
    memset(attrs, 0, sizeof attrs);
    int na = 0;
    rlx_status st = rlx_node_attr_set_ints(&attrs[na++], "code", code, nc);
    if (!st) st = rlx_node_attr_set_floats(&attrs[na++], "fparams", fp, nf);
    if (!st && ks && nk) st = rlx_node_attr_set_floats(&attrs[na++], "consts", ks, nk);
    if (!st) st = rlx_node_attr_set_int(&attrs[na++], "dtype", qo ? (int64_t)qdt : rlx_param_int(f, RLX_A_dtype));
    if (!st && n_q) st = rlx_node_attr_set_floats(&attrs[na++], "qin", qin, 2 * (size_t)n_in);
    if (!st && qo) st = rlx_node_attr_set_floats(&attrs[na++], "qout", qout, 2);
    if (st) {
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
        return st;
    }
    char what[1024] = "";
    if (rlx_fuse_reporting()) {
        int ids[1 + RLX_EW_MAX_IN + 1], n = 0;
        for (int i = 0; i < n_in; i++)
            if (qin[2 * i] != 0) ids[n++] = g->values[f->in[i]].producer;
        ids[n++] = fi;
        if (qo) ids[n++] = qnodes[0];
        rlx_fuse_describe(g, ids, n, what, sizeof what);
    }
    char name[256];
    snprintf(name, sizeof name, "%s_q8", f->name ? f->name : "ew");
    int new_out = out;
    if (qo) { /* the chain writes the first QuantizeLinear's output; the others' users read it */
        new_out = g->nodes[qnodes[0]].out[0];
        for (int j = 0; j < nu; j++) {
            rlx_node *q = &g->nodes[qnodes[j]];
            if (q->dead) continue; /* read twice by one node */
            q->dead = true;
            g->values[q->out[0]].producer = -1;
            if (j > 0) rlx_fuse_replace_uses(g, q->out[0], new_out);
        }
    }
    g->nodes[fi].dead = true;
    g->values[out].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, fi, "FusedElementwise", RLX_INTERNAL_DOMAIN, name, ins, n_in, &new_out, 1, attrs, na));
    char detail[96];
    snprintf(detail, sizeof detail, "%d 8-bit inputs%s", n_q, qo ? ", 8-bit output" : "");
    rlx_fuse_report(PASS, what, &g->nodes[fi], detail);
    if (stats) stats->fused += qo ? nu : 0;
    *done = true;
    return RLX_OK;
}

/* DequantizeLinear -> Resize (nearest) as Resize of the bytes ->
 * DequantizeLinear (see the header): the Resize takes the
 * DequantizeLinear's slot, the DequantizeLinear the Resize's. */
static rlx_status commute_resize(rlx_graph *g, const rlx_fuse_users *u, int ri, rlx_pass_stats *stats, bool *done) {
    (void)stats;
    const rlx_node *r = &g->nodes[ri];
    if (r->n_in < 1 || r->n_out != 1 || r->out[0] < 0 || r->n_in > 4) return RLX_OK;
    const char *mode = rlx_param_str(r, RLX_A_mode), *ctm = rlx_param_str(r, RLX_A_coordinate_transformation_mode);
    if (!mode || strcmp(mode, "nearest") != 0 || (ctm && strcmp(ctm, "tf_crop_and_resize") == 0)) return RLX_OK;
    int v = r->in[0];
    float sc, zp;
    int x = dq_input(g, v, &sc, &zp);
    if (x < 0 || !rlx_fuse_private(g, u, v, 1)) return RLX_OK;
    for (int i = 1; i < r->n_in; i++)
        if (r->in[i] >= 0 && !g->values[r->in[i]].konst) return RLX_OK;
    int di = g->values[v].producer, y = r->out[0], y8 = -1;
    if (g->nodes[di].n_in > 3) return RLX_OK;
    RLX_TRY(rlx_graph_add_value(g, NULL, &y8));
    r = &g->nodes[ri];
    const rlx_node *d = &g->nodes[di];
    rlx_node_attr ar[16], ad[16];
    memset(ar, 0, sizeof ar);
    memset(ad, 0, sizeof ad);
    int nar = 0, nad = 0;
    if (r->n_attrs > 16 || d->n_attrs > 16) return RLX_OK;
    rlx_status st = RLX_OK;
    for (; !st && nar < r->n_attrs; nar++) st = rlx_node_attr_copy(&ar[nar], &r->attrs[nar]);
    for (; !st && nad < d->n_attrs; nad++) st = rlx_node_attr_copy(&ad[nad], &d->attrs[nad]);
    if (st) {
        for (int i = 0; i < nar; i++) rlx_node_attr_free(&ar[i]);
        for (int i = 0; i < nad; i++) rlx_node_attr_free(&ad[i]);
        return st;
    }
    int rin[4], din[3], nrin = r->n_in, ndin = d->n_in;
    for (int i = 0; i < nrin; i++) rin[i] = r->in[i];
    for (int i = 0; i < ndin; i++) din[i] = d->in[i];
    rin[0] = x;
    din[0] = y8;
    char rname[256], dname[256], what[512] = "";
    snprintf(rname, sizeof rname, "%s", r->name ? r->name : "resize");
    snprintf(dname, sizeof dname, "%s", d->name ? d->name : "dq");
    if (rlx_fuse_reporting()) {
        int ids[2] = { di, ri };
        rlx_fuse_describe(g, ids, 2, what, sizeof what);
    }
    g->nodes[di].dead = true;
    g->nodes[ri].dead = true;
    g->values[v].producer = -1;
    g->values[y].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, di, "Resize", "", rname, rin, nrin, &y8, 1, ar, nar));
    RLX_TRY(rlx_fuse_emplace(g, ri, "DequantizeLinear", "", dname, din, ndin, &y, 1, ad, nad));
    rlx_fuse_report(PASS, what, &g->nodes[ri], "nearest Resize of the bytes, then DequantizeLinear");
    *done = true;
    return RLX_OK;
}

/* Whether QuantizeLinear (scale sq, zero point zq, levels of type qdt) of
 * DequantizeLinear (sd, zd, levels of type qdt) gives every level back,
 * computed with the kernels' f32 operations: ((float)q - zd) * sd, then
 * round_half_even(that / sq) + zq, saturated. */
static bool dq_q_identity(rlx_dtype qdt, float sd, float zd, float sq, float zq) {
    float lo = qdt == RLX_DTYPE_U8 ? 0.0f : -128.0f, hi = lo + 255.0f;
    for (int i = 0; i < 256; i++) {
        float f = ((lo + (float)i) - zd) * sd; /* an f32, as the DequantizeLinear kernel stores it */
        float lvl = rlx_ew_clampf(rlx_ew_rint_orf(f / sq, lo - zq) + zq, lo, hi);
        if (lvl != lo + (float)i) return false;
    }
    return true;
}

/* DequantizeLinear -> QuantizeLinear (the pair a commuted Resize leaves,
 * see the header; per tensor as the header says, the DequantizeLinear's
 * output read by those QuantizeLinear nodes alone, all with the same
 * parameters, none but the first a graph output): where the QuantizeLinear
 * gives every level back (same type; dq_q_identity), the pair goes and its
 * users read the 8-bit input (its producer writes the QuantizeLinear's
 * output instead where that is a graph output); else the two become one
 * 8-bit FusedElementwise, a copy with qin and qout (a requantization, the
 * same bits). */
static rlx_status cancel_dq_q(rlx_graph *g, const rlx_fuse_users *u, int di, rlx_pass_stats *stats, bool *done) {
    const rlx_node *d = &g->nodes[di];
    if (d->n_out != 1 || d->out[0] < 0) return RLX_OK;
    int v = d->out[0];
    float qin[2], qout[2] = { 0, 0 };
    int x = dq_input(g, v, &qin[0], &qin[1]);
    int nu = rlx_fuse_n_users(u, v), qnodes[64];
    if (x < 0 || rlx_fuse_is_output(g, v) || nu < 1 || nu > (int)RLX_ARRAY_LEN(qnodes)) return RLX_OK;
    rlx_dtype qdt = RLX_DTYPE_UNDEFINED, xdt = g->values[x].dtype;
    for (int j = 0; j < nu; j++) {
        rlx_dtype dt;
        float sc, zp;
        qnodes[j] = rlx_fuse_user(u, v, j);
        if (!q_user(g, &g->nodes[qnodes[j]], v, &dt, &sc, &zp)) return RLX_OK;
        if (j > 0 && rlx_fuse_is_output(g, g->nodes[qnodes[j]].out[0])) return RLX_OK;
        if (j == 0) qdt = dt, qout[0] = sc, qout[1] = zp;
        else if (dt != qdt || sc != qout[0] || zp != qout[1]) return RLX_OK;
    }
    int y = g->nodes[qnodes[0]].out[0], px = g->values[x].producer;
    bool same = qdt == xdt && dq_q_identity(xdt, qin[0], qin[1], qout[0], qout[1]);
    bool y_out = rlx_fuse_is_output(g, y);
    /* a graph output y: x's producer writes it, where x is its own */
    bool rename = same && y_out && px >= 0 && !g->nodes[px].dead && rlx_fuse_private(g, u, x, 1) &&
                  !rlx_fuse_is_output(g, x);
    char what[512] = "";
    if (rlx_fuse_reporting()) {
        int ids[2] = { di, qnodes[0] };
        rlx_fuse_describe(g, ids, 2, what, sizeof what);
    }
    if (same && (!y_out || rename)) {
        for (int j = 0; j < nu; j++) {
            rlx_node *q = &g->nodes[qnodes[j]];
            if (q->dead) continue; /* read twice by one node */
            q->dead = true;
            g->values[q->out[0]].producer = -1;
            if (!rename) rlx_fuse_replace_uses(g, q->out[0], x);
            else if (j > 0) rlx_fuse_replace_uses(g, q->out[0], y);
        }
        g->nodes[di].dead = true;
        g->values[v].producer = -1;
        if (rename) {
            rlx_node *p = &g->nodes[px];
            for (int k = 0; k < p->n_out; k++)
                if (p->out[k] == x) p->out[k] = y;
            g->values[y].producer = px;
            g->values[x].producer = -1;
        }
        rlx_fuse_report(PASS, what, px >= 0 ? &g->nodes[px] : NULL, "the levels come back: no step");
        if (stats) stats->fused += nu + 1;
        *done = true;
        return RLX_OK;
    }
    const int64_t code[5] = { RLX_EW_COPY, 0, -1, -1, 0 };
    const float fp[2] = { 0, 0 };
    rlx_node_attr attrs[5];
    memset(attrs, 0, sizeof attrs);
    int na = 0;
    rlx_status st = rlx_node_attr_set_ints(&attrs[na++], "code", code, 5);
    if (!st) st = rlx_node_attr_set_floats(&attrs[na++], "fparams", fp, 2);
    if (!st) st = rlx_node_attr_set_int(&attrs[na++], "dtype", (int64_t)qdt);
    if (!st) st = rlx_node_attr_set_floats(&attrs[na++], "qin", qin, 2);
    if (!st) st = rlx_node_attr_set_floats(&attrs[na++], "qout", qout, 2);
    if (st) {
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
        return st;
    }
    char name[256];
    snprintf(name, sizeof name, "%s_q8", d->name ? d->name : "dq");
    for (int j = 0; j < nu; j++) {
        rlx_node *q = &g->nodes[qnodes[j]];
        if (q->dead) continue;
        q->dead = true;
        g->values[q->out[0]].producer = -1;
        if (j > 0) rlx_fuse_replace_uses(g, q->out[0], y);
    }
    g->nodes[di].dead = true;
    g->values[v].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, di, "FusedElementwise", RLX_INTERNAL_DOMAIN, name, &x, 1, &y, 1, attrs, na));
    rlx_fuse_report(PASS, what, &g->nodes[di], "one requantization");
    if (stats) stats->fused += nu;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_qdq_ew(rlx_graph *g, rlx_pass_stats *stats) {
    if (!stats) return RLX_OK;
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_Resize, commute_resize, stats));
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_DequantizeLinear, cancel_dq_q, stats)); /* what a commute leaves */
    return rlx_fuse_each_anchor(g, RLX_OP_rlx_FusedElementwise, fuse_one, stats);
}
