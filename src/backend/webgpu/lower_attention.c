/* The WebGPU lowering of rlx.Attention (see lower_attention.h): the node's
 * geometry (dims and strides of Q, K, V, Y and the mask, batch dims
 * flattened), then one of two generated kernels, which read the operands
 * through the strides of the absorbed Transposes. The tiled kernel reads
 * every size that follows the input shape (query rows, keys, the grid,
 * batch dims, strides) from Params, so that a new shape of a model reuses
 * its pipelines; its source depends only on the structure (head dims, the
 * tile, vec4 choices, which row and column strides are 0 or 1, mask or
 * not, whether the last key tile is partial). The v1 kernel bakes dims and strides into the
 * text (one pipeline per shape and layout).
 *
 * The tiled kernel ("attention_tiled"). A workgroup of NT = BQ/4 * TD
 * invocations owns BQ query rows of one batch item; invocation (tq, tx)
 * owns rows 4 tq .. 4 tq + 3 in every phase, so the running maximum m and
 * sum l of its rows live in its registers. Per tile of BK = RK * TD keys:
 *   1. the K and V rows of the tile go into workgroup memory as vec4 rows
 *      (zeros past Sk and past the head dims; vec4 global loads where the
 *      layout allows, else scalar loads ordered along the contiguous axis);
 *   2. scores: keys tx, tx + TD, .., tx + (RK-1) TD of the tile for its 4
 *      rows, 4 x RK scalar accumulators, fma over the head dim (Q rows also
 *      held in workgroup memory, loaded once); then the scale (* or /, as
 *      the node says), the mask, keys past Sk out;
 *   3. the tile's row maxima: each invocation's (a vec4 over its rows)
 *      through workgroup memory, combined with the running maximum: mn;
 *   4. p = exp(s - mn), each once, written to workgroup memory as vec4s of
 *      the 4 rows per key; the invocation's partial row sums likewise;
 *   5. corr = exp(m - mn); l = l corr + the tile's row sums; the output
 *      accumulators (4 rows x RV vec4 columns tx, tx + TD, ..: column
 *      vec4s of V) are scaled by corr and accumulate p V over the tile.
 * Finally y = acc / l. Four workgroup barriers per tile. The running
 * maximum starts at -FLT_MAX (a row whose scores are all -inf then gets
 * 0 / 0 = NaN, as the CPU's exp(-inf - -inf) does); keys past Sk get
 * p = 0 exactly. Summation orders differ from the CPU (sgemm, a double
 * softmax): agreement is within f32 rounding (tests/test_webgpu_attention.c).
 *
 * Workgroup memory (bytes): 16 (BQ QS + BK KS + BK VS + BK PT + 2 BQ/4 TD)
 * with QS = KS = ceil(D/4) | 1 vec4s per row (odd: neighbouring rows fall
 * in different banks), VS = TD RV, PT = BQ/4 | 1; it must fit
 * maxComputeWorkgroupStorageSize (16 KiB where the device says nothing),
 * as NT must fit the invocation limits. The tile is chosen per problem
 * (choose_cfg): TD from the value head dim, BQ as large as possible (32)
 * while the grid keeps >= 32 workgroups and NT >= 32, RK <= 4 (2 with
 * BQ = 32); then RK, BQ and TD shrink until it fits (down to BQ = 4,
 * RK = 1, TD = 4). */
#include "backend/webgpu/lower_attention.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/webgpu/wgsl_gen.h"
#include "base/options.h"
#include "base/platform.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"

typedef unsigned long long ull;

/* ------------------------------------------------------------ geometry */

typedef struct att_geom {
    int r;
    rlx_attn_layout l;
    bool div, mask;
    bool half; /* f16 operands (T = f16: loaded as f32, the result rounded once) */
    float scale;
    uint64_t nb, sq, d, sk, dv; /* batch items (heads included), query rows, depth, keys, value depth */
    uint64_t kds, kss;          /* K read as [Sk, D]: strides of its D and Sk axes */
    uint64_t ms[RLX_MAX_RANK];  /* mask strides over [b.., Sq, Sk] (0 where broadcast) */
} att_geom;

/* The node's geometry; declines what neither kernel takes. *empty: nothing
 * to compute (an empty output). */
static rlx_status att_resolve(wg_lower *L, att_geom *g, bool *empty) {
    memset(g, 0, sizeof *g);
    *empty = false;
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16, 1));
    const rlx_value *q = wg_in(L, 0), *k = wg_in(L, 1), *v = wg_in(L, 2), *m = wg_in(L, 3), *y = wg_out(L, 0);
    if (k->dtype != q->dtype || v->dtype != q->dtype || y->dtype != q->dtype || (m && m->dtype != q->dtype))
        return wg_decline(L, "operands of different types");
    g->half = q->dtype == RLX_DTYPE_F16;
    int r = q->rank;
    if (r < 2 || k->rank != r || v->rank != r || y->rank != r) return wg_decline(L, "ranks");
    if (rlx_attn_layout_of(L->n, r, q->dims, k->dims, v->dims, &g->l) != RLX_OK) return wg_decline(L, "layout");
    const rlx_attn_layout *l = &g->l;
    for (int i = 0; i < r; i++)
        if (y->dims[i] != l->y_phys[i]) return wg_decline(L, "output shape");
    g->r = r;
    g->mask = m != NULL;
    g->div = rlx_param_int(L->n, RLX_A_scale_div) != 0;
    g->scale = rlx_param_float(L->n, RLX_A_scale);
    g->nb = 1;
    for (int i = 0; i < r - 2; i++) g->nb *= (uint64_t)l->qd[i];
    g->sq = (uint64_t)l->qd[r - 2];
    g->d = (uint64_t)l->qd[r - 1];
    g->sk = (uint64_t)l->kd[l->kt ? r - 1 : r - 2];
    g->dv = (uint64_t)l->vd[r - 1];
    g->kds = (uint64_t)(l->kt ? l->ks[r - 2] : l->ks[r - 1]);
    g->kss = (uint64_t)(l->kt ? l->ks[r - 1] : l->ks[r - 2]);
    if (wg_numel(y) == 0) {
        *empty = true;
        return RLX_OK;
    }
    if (g->sk == 0 || g->d == 0) return wg_decline(L, "empty keys or depth");
    if (g->d > 256 || g->dv > 256) return wg_decline(L, "head dims above 256");
    if (!isfinite(g->scale) || g->scale == 0.0f) return wg_decline(L, "scale %g", (double)g->scale);
    uint64_t big = (uint64_t)1 << 31;
    if (wg_numel(q) >= big || wg_numel(k) >= big || wg_numel(v) >= big || wg_numel(y) >= big ||
        (m && wg_numel(m) >= big))
        return wg_decline(L, "too large for 32-bit indexing");
    if (m) {
        if (m->rank > r) return wg_decline(L, "mask rank");
        uint64_t s = 1;
        for (int i = r - 1; i >= 0; i--) {
            int j = i - (r - m->rank);
            uint64_t want = i == r - 1 ? g->sk : (uint64_t)l->qd[i];
            if (j < 0) continue;
            uint64_t md = (uint64_t)m->dims[j];
            if (md != 1 && md != want) return wg_decline(L, "mask does not broadcast");
            g->ms[i] = md == 1 ? 0 : s;
            s *= md;
        }
    }
    return RLX_OK;
}

/* The sizes the tiled kernel reads from Params after the binding offsets
 * and P.sk, in declaration order: u32 fields P.<name>. */
enum { ATT_MAX_PV = 56 };
typedef struct att_pv {
    int n;
    char name[ATT_MAX_PV][8];
    char expr[ATT_MAX_PV][12]; /* what the source writes: "P.<name>", or "1u" for a unit stride */
    uint32_t val[ATT_MAX_PV];
} att_pv;

/* Adds field `name` = v and returns its WGSL expression; a stride of 1
 * (unit) is written as the literal 1u instead (contiguity is structure,
 * and keeps scalar loads of neighbours mergeable). */
static const char *pv_add(att_pv *pv, const char *name, uint64_t v, bool unit) {
    static const char k_one[] = "1u";
    if (unit && v == 1) return k_one;
    int i = pv->n++;
    snprintf(pv->name[i], sizeof pv->name[i], "%s", name);
    snprintf(pv->expr[i], sizeof pv->expr[i], "P.%s", name);
    pv->val[i] = (uint32_t)v;
    return pv->expr[i];
}

/* Params (the binding offsets, then for the tiled kernel the key count and
 * the fields of pv) and the bindings of both kernels; without a mask there
 * is no M binding (an unused binding would drop out of the pipeline's
 * layout). v4[i]: operand i (Q, K, V, Y) declared as vec4s. */
static void emit_bindings(wg_src *b, bool mask, const bool *v4, const att_pv *pv) {
    wg_src_printf(b, "//!elem f32 f16\n");
    wg_src_printf(b, "//!params q_off: u32, k_off: u32, v_off: u32, %sy_off: u32%s", mask ? "m_off: u32, " : "",
                  pv ? ", sk: u32" : "");
    for (int i = 0; pv && i < pv->n; i++) wg_src_printf(b, ", %s: u32", pv->name[i]);
    wg_src_printf(b, "\n");
    static const char *const names[4] = { "Q", "K", "V", "Y" };
    int bnd = 1;
    for (int i = 0; i < 4; i++) {
        if (i == 3 && mask) wg_src_printf(b, "@group(0) @binding(%d) var<storage, read_write> M: array<T>;\n", bnd++);
        wg_src_printf(b, "@group(0) @binding(%d) var<storage, read_write> %s: array<%s>;\n", bnd++, names[i],
                      v4 && v4[i] ? "vec4<T>" : "T");
    }
}

/* The batch offsets qb, kb, vb, yb (and mb) of batch item `bi`: its index
 * decomposed over the batch dims; params: dims and strides from Params
 * (P.bd<i>, P.bq<i>, .., names from att_params), else literals. */
static void emit_batch_offsets(wg_src *b, const att_geom *g, bool params) {
    const rlx_attn_layout *l = &g->l;
    wg_src_printf(b, "    var qb = P.q_off;\n    var kb = P.k_off;\n    var vb = P.v_off;\n    var yb = P.y_off;\n");
    if (g->mask) wg_src_printf(b, "    var mb = P.m_off;\n");
    if (g->r > 2) wg_src_printf(b, "    var rem = bi;\n");
    for (int i = g->r - 3; i >= 0 && params; i--) {
        /* every stride, 0 included (a mask broadcast over batch 1 and not
         * over batch 2 keeps one source) */
        wg_src_printf(b, "    { let c = rem %% P.bd%d; rem = rem / P.bd%d;", i, i);
        wg_src_printf(b, " qb = qb + c * P.bq%d; kb = kb + c * P.bk%d;", i, i);
        wg_src_printf(b, " vb = vb + c * P.bv%d; yb = yb + c * P.by%d;", i, i);
        if (g->mask) wg_src_printf(b, " mb = mb + c * P.bm%d;", i);
        wg_src_printf(b, " }\n");
    }
    for (int i = g->r - 3; i >= 0 && !params; i--) {
        wg_src_printf(b, "    { let c = rem %% %lluu; rem = rem / %lluu;", (ull)l->qd[i], (ull)l->qd[i]);
        if (l->qs[i]) wg_src_printf(b, " qb = qb + c * %lluu;", (ull)l->qs[i]);
        if (l->ks[i]) wg_src_printf(b, " kb = kb + c * %lluu;", (ull)l->ks[i]);
        if (l->vs[i]) wg_src_printf(b, " vb = vb + c * %lluu;", (ull)l->vs[i]);
        if (l->ys[i]) wg_src_printf(b, " yb = yb + c * %lluu;", (ull)l->ys[i]);
        if (g->mask && g->ms[i]) wg_src_printf(b, " mb = mb + c * %lluu;", (ull)g->ms[i]);
        wg_src_printf(b, " }\n");
    }
}

static void scale_literal(char *out, size_t cap, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    snprintf(out, cap, "bitcast<f32>(0x%08xu)", (unsigned)u);
}

static rlx_status emit_done(wg_lower *L, const att_geom *g, wg_src *b, const char *name, uint64_t groups,
                            const bool *v4, const att_pv *pv) {
    if (b->oom) {
        wg_src_free(b);
        L->broken = true;
        return RLX_OK;
    }
    wg_dispatch *d = wg_emit_source(L, name, b->s);
    wg_src_free(b);
    if (g->half) d->elem = WG_ELEM_F16; /* before binding: windows count halves */
    static const char *const k_off[3] = { "q_off", "k_off", "v_off" };
    for (int i = 0; i < 3; i++) {
        if (v4 && v4[i]) wg_bind_value4(L, d, k_off[i], wg_in_id(L, i));
        else wg_bind_value(L, d, k_off[i], wg_in_id(L, i));
    }
    if (g->mask) wg_bind_value(L, d, "m_off", wg_in_id(L, 3));
    if (v4 && v4[3]) wg_bind_value4(L, d, "y_off", wg_out_id(L, 0));
    else wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    if (pv) wg_p_u32(L, d, "sk", (uint32_t)g->sk); /* the tiled kernel's P.sk and sizes */
    for (int i = 0; pv && i < pv->n; i++) wg_p_u32(L, d, wg_keep(L, "%s", pv->name[i]), pv->val[i]);
    return wg_grid_groups(L, d, groups);
}

/* ------------------------------------------------------------ v1 */

#define ATT_BQ 8u   /* query rows per workgroup */
#define ATT_TPR 16u /* invocations per query row (128 per workgroup) */

/* The first kernel: 8 query rows per workgroup, 16 invocations per row,
 * scalar dot products; *fits false when no key block fits workgroup
 * memory. */
static rlx_status lower_v1(wg_lower *L, const att_geom *g, bool *fits) {
    const rlx_attn_layout *l = &g->l;
    int r = g->r;
    uint64_t nb = g->nb, sq = g->sq, dd = g->d, sk = g->sk, dv = g->dv, kds = g->kds, kss = g->kss;
    bool m = g->mask;
    *fits = false;
    /* workgroup memory (floats): Qs BQ x (D + 1), Ks BK x (D + 1),
     * Vs BK x DV, Ss BQ x (BK + 1) (rows padded against bank conflicts);
     * BK keys per block, a multiple of TPR, within the device's limit */
    uint64_t room = (L->caps->max_wg_storage ? L->caps->max_wg_storage : 16384) / 4;
    uint64_t fixed = ATT_BQ * (dd + 1) + ATT_BQ;
    if (fixed >= room) return RLX_OK;
    uint64_t bk = (room - fixed) / (dd + 1 + dv + ATT_BQ);
    if (bk > 64) bk = 64;
    bk = bk / ATT_TPR * ATT_TPR;
    if (bk == 0) return RLX_OK;
    *fits = true;
    uint64_t nqb = (sq + ATT_BQ - 1) / ATT_BQ;
    uint64_t nu = (dv + ATT_TPR - 1) / ATT_TPR; /* outputs per invocation */
    wg_src b = { 0 };
    wg_src_printf(&b,
                  "// Generated: rlx.Attention (lower_attention.c, v1): %llu batches of Q [%llu, %llu], K [%llu, %llu],\n"
                  "// V [%llu, %llu], read with the strides of their layouts (absorbed Transposes).\n"
                  "// One workgroup per (batch, block of BQ query rows), TPR invocations per row. Per block of BK\n"
                  "// keys (K and V through workgroup memory): invocation lane of row qi computes the scores of keys\n"
                  "// lane, lane + TPR, ... (dot products over D in ascending order) and, with the row's block\n"
                  "// maximum, their exp(s - max); then the online softmax: running maximum mx, sum l and outputs\n"
                  "// rescaled by exp(mx_old - mx_new); the invocation owns output columns lane + u * TPR.\n"
                  "// y = acc / l.\n"
                  "//!audited rows min(i, SQ - 1), keys min(j, SK - 1) read under j < SK, jj < nk <= BK, output columns\n"
                  "//!audited under lane + c < DV; Qs, Ks, Vs, Ss indices below their sizes (lower_attention.c)\n",
                  (ull)nb, (ull)sq, (ull)dd, (ull)sk, (ull)dd, (ull)sk, (ull)dv);
    emit_bindings(&b, m, NULL, NULL);
    wg_src_printf(&b,
                  "const SQ = %lluu;\nconst SK = %lluu;\nconst D = %lluu;\nconst DV = %lluu;\nconst BK = %lluu;\n"
                  "const BQ = %uu;\nconst TPR = %uu;\nconst QS = D + 1u;\nconst SS = BK + 1u;\n",
                  (ull)sq, (ull)sk, (ull)dd, (ull)dv, (ull)bk, ATT_BQ, ATT_TPR);
    wg_src_printf(&b,
                  "var<workgroup> Qs: array<f32, %llu>;\nvar<workgroup> Ks: array<f32, %llu>;\n"
                  "var<workgroup> Vs: array<f32, %llu>;\nvar<workgroup> Ss: array<f32, %llu>;\n",
                  (ull)(ATT_BQ * (dd + 1)), (ull)(bk * (dd + 1)), (ull)(bk * dv), (ull)(ATT_BQ * (bk + 1)));
    wg_src_printf(&b,
                  "@compute @workgroup_size(%u)\n"
                  "fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
                  "        @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let wl = wid.x + wid.y * nwg.x;\n"
                  "    if (wl >= %lluu) { return; }\n"
                  "    let bi = wl / %lluu;\n"
                  "    let q0 = (wl %% %lluu) * BQ;\n"
                  "    let tid = lid.x;\n"
                  "    let qi = tid / TPR;\n"
                  "    let lane = tid %% TPR;\n"
                  "    let i = q0 + qi;\n"
                  "    let valid = i < SQ;\n"
                  "    let ic = min(i, SQ - 1u);\n",
                  ATT_BQ * ATT_TPR, (ull)(nb * nqb), (ull)nqb, (ull)nqb);
    emit_batch_offsets(&b, g, false);
    /* the block's query rows into Qs (rows past SQ repeat the last) */
    wg_src_printf(&b,
                  "    for (var t = tid; t < BQ * D; t = t + BQ * TPR) {\n"
                  "        let row = min(q0 + t / D, SQ - 1u);\n"
                  "        Qs[(t / D) * QS + t %% D] = f32(Q[qb + row * %lluu + (t %% D) * %lluu]);\n"
                  "    }\n"
                  "    yb = yb + ic * %lluu;\n",
                  (ull)l->qs[r - 2], (ull)l->qs[r - 1], (ull)l->ys[r - 2]);
    if (m) wg_src_printf(&b, "    mb = mb + ic * %lluu;\n", (ull)g->ms[r - 2]);
    for (uint64_t u = 0; u < nu; u++) wg_src_printf(&b, "    var acc%llu = 0.0;\n", (ull)u);
    wg_src_printf(&b,
                  "    var mx = -3.40282347e+38;\n"
                  "    var l = 0.0;\n"
                  "    for (var k0 = 0u; k0 < SK; k0 = k0 + BK) {\n"
                  "        workgroupBarrier();\n"
                  "        for (var t = tid; t < BK * D; t = t + BQ * TPR) {\n"
                  "            let j = k0 + t / D;\n"
                  "            Ks[(t / D) * QS + t %% D] = select(0.0, f32(K[kb + min(j, SK - 1u) * %lluu + (t %% D) * %lluu]), j < SK);\n"
                  "        }\n"
                  "        for (var t = tid; t < BK * DV; t = t + BQ * TPR) {\n"
                  "            let j = k0 + t / DV;\n"
                  "            Vs[t] = select(0.0, f32(V[vb + min(j, SK - 1u) * %lluu + (t %% DV) * %lluu]), j < SK);\n"
                  "        }\n"
                  "        workgroupBarrier();\n"
                  "        let nk = min(BK, SK - k0);\n",
                  (ull)kss, (ull)kds, (ull)l->vs[r - 2], (ull)l->vs[r - 1]);
    char sl[64];
    scale_literal(sl, sizeof sl, g->scale);
    /* this invocation's scores */
    wg_src_printf(&b,
                  "        for (var jj = lane; jj < nk; jj = jj + TPR) {\n"
                  "            var dot = 0.0;\n"
                  "            for (var t = 0u; t < D; t = t + 1u) { dot = dot + Qs[qi * QS + t] * Ks[jj * QS + t]; }\n"
                  "            var s = dot %s %s;\n",
                  g->div ? "/" : "*", sl);
    if (m) wg_src_printf(&b, "            s = s + f32(M[mb + (k0 + jj) * %lluu]);\n", (ull)g->ms[r - 1]);
    wg_src_printf(&b,
                  "            Ss[qi * SS + jj] = s;\n"
                  "        }\n"
                  "        workgroupBarrier();\n"
                  "        var bm = mx;\n"
                  "        for (var jj = 0u; jj < nk; jj = jj + 1u) { bm = max(bm, Ss[qi * SS + jj]); }\n"
                  "        workgroupBarrier();\n"
                  "        for (var jj = lane; jj < nk; jj = jj + TPR) { Ss[qi * SS + jj] = exp(Ss[qi * SS + jj] - bm); }\n"
                  "        workgroupBarrier();\n"
                  "        let corr = exp(mx - bm);\n"
                  "        l = l * corr;\n");
    for (uint64_t u = 0; u < nu; u++) wg_src_printf(&b, "        acc%llu = acc%llu * corr;\n", (ull)u, (ull)u);
    wg_src_printf(&b,
                  "        for (var jj = 0u; jj < nk; jj = jj + 1u) {\n"
                  "            let p = Ss[qi * SS + jj];\n"
                  "            l = l + p;\n"
                  "            let vr = jj * DV + lane;\n");
    for (uint64_t u = 0; u < nu; u++) {
        uint64_t c0 = u * ATT_TPR;
        if (c0 + ATT_TPR <= dv)
            wg_src_printf(&b, "            acc%llu = acc%llu + p * Vs[vr + %lluu];\n", (ull)u, (ull)u, (ull)c0);
        else /* a partial last group of columns */
            wg_src_printf(&b, "            if (lane + %lluu < DV) { acc%llu = acc%llu + p * Vs[vr + %lluu]; }\n", (ull)c0,
                          (ull)u, (ull)u, (ull)c0);
    }
    wg_src_printf(&b,
                  "        }\n"
                  "        mx = bm;\n"
                  "    }\n"
                  "    if (valid) {\n");
    for (uint64_t u = 0; u < nu; u++)
        wg_src_printf(&b, "        if (lane + %lluu < DV) { Y[yb + (lane + %lluu) * %lluu] = T(acc%llu / l); }\n",
                      (ull)(u * ATT_TPR), (ull)(u * ATT_TPR), (ull)l->ys[r - 1], (ull)u);
    wg_src_printf(&b, "    }\n}\n");
    return emit_done(L, g, &b, "attention", nb * nqb, NULL, NULL);
}

/* ------------------------------------------------------------ tiled */

typedef struct att_cfg {
    uint32_t bq, bk, td, rk, rv, nt; /* rows, keys per tile, invocations per 4 rows, keys and column vec4s per invocation, invocations */
    uint32_t d4, dv4, qs, ks, vs, pt; /* vec4s per head row; workgroup row strides in vec4s */
} att_cfg;

static uint64_t cfg_bytes(const att_cfg *c) {
    return 16ull * ((uint64_t)c->bq * c->qs + (uint64_t)c->bk * c->ks + (uint64_t)c->bk * c->vs +
                    (uint64_t)c->bk * c->pt + 2ull * (c->bq / 4) * c->td);
}

static bool cfg_fits(const wg_caps *caps, const att_cfg *c) {
    uint64_t lim = caps->max_wg_storage ? caps->max_wg_storage : 16384;
    uint32_t inv = caps->max_wg_invocations ? caps->max_wg_invocations : 256;
    uint32_t wx = caps->max_wg_size_x ? caps->max_wg_size_x : 256;
    return cfg_bytes(c) <= lim && c->nt <= inv && c->nt <= wx;
}

static void cfg_set(att_cfg *c, const att_geom *g, uint32_t bq, uint32_t rk, uint32_t td) {
    c->bq = bq;
    c->td = td;
    c->rk = rk;
    c->bk = td * rk;
    c->d4 = (uint32_t)wg_cdiv(g->d, 4);
    c->dv4 = (uint32_t)wg_cdiv(g->dv, 4);
    c->rv = (uint32_t)wg_cdiv(c->dv4, td);
    c->vs = td * c->rv;
    c->qs = c->ks = c->d4 | 1u;
    c->pt = (bq / 4) | 1u;
    c->nt = bq / 4 * td;
}

/* Invocations per 4 query rows: the output's column vec4s are spread over
 * them (RV each); 16, 8 or 4, the first that pads the columns by at most a
 * quarter, else 4. */
static uint32_t choose_td(uint32_t dv4) {
    uint32_t p2 = 1;
    while (p2 < dv4) p2 *= 2;
    for (uint32_t td = 16; td >= 4; td /= 2)
        if (td <= p2 && (uint64_t)td * wg_cdiv(dv4, td) * 4 <= 5ull * dv4) return td;
    return 4;
}

/* The tile of the tiled kernel, or RLX_ATTENTION_TILE=BQxBK. *why: why
 * nothing fits (then false). */
static bool choose_cfg(const wg_caps *caps, const att_geom *g, att_cfg *c, char *why, size_t cap) {
    uint32_t td = choose_td((uint32_t)wg_cdiv(g->dv, 4));
    const char *env = caps->cfg->attention_tile;
    if (env && *env) {
        unsigned bq = 0, bk = 0;
        char tail;
        if (sscanf(env, "%ux%u%c", &bq, &bk, &tail) != 2 || (bq != 4 && bq != 8 && bq != 16 && bq != 32) || bk == 0 ||
            bk % td || bk / td > 8) {
            snprintf(why, cap, "RLX_ATTENTION_TILE='%s': expected BQxBK, BQ 4, 8, 16 or 32, BK a multiple of %u up to %u",
                     env, td, 8 * td);
            return false;
        }
        cfg_set(c, g, bq, bk / td, td);
        if (cfg_fits(caps, c)) return true;
        snprintf(why, cap, "RLX_ATTENTION_TILE=%s: %llu bytes of workgroup memory, %u invocations do not fit", env,
                 (ull)cfg_bytes(c), c->nt);
        return false;
    }
    /* fewer invocations per row (smaller K and V tiles) when nothing fits */
    for (; td >= 4; td /= 2) {
        uint32_t bq = 4;
        while (bq < 32 && bq < g->sq) bq *= 2;
        while (bq > 4 && g->nb * wg_cdiv(g->sq, bq) < 32 && bq / 8 * td >= 32) bq /= 2;
        /* 32 query rows take key tiles of 2 TD (the H200: BERT-base's 12
         * attention dispatches 341 us with 32 x 32 tiles, 405 us with
         * 16 x 64, 426 us with 16 x 32) */
        uint32_t rk_max = bq >= 32 ? 2 : 4;
        uint32_t rk0 = (uint32_t)(wg_cdiv(g->sk, td) < rk_max ? wg_cdiv(g->sk, td) : rk_max);
        for (; bq >= 4; bq /= 2)
            for (uint32_t rk = rk0; rk >= 1; rk--) {
                cfg_set(c, g, bq, rk, td);
                if (cfg_fits(caps, c)) return true;
            }
    }
    snprintf(why, cap, "head dims %llu, %llu: no tile fits %u bytes of workgroup memory", (ull)g->d, (ull)g->dv,
             caps->max_wg_storage ? caps->max_wg_storage : 16384);
    return false;
}

/* Whether an operand [b.., rows, cols] with these strides can be read or
 * written as vec4s: unit column stride, cols, the row stride and every
 * batch stride multiples of 4 (strides of unit dims do not matter). */
static bool vec4_ok(const att_geom *g, const int64_t *dims, const int64_t *st, uint64_t rows, uint64_t rs,
                    uint64_t cs, uint64_t cols) {
    if (cs != 1 || cols % 4 || (rows > 1 && rs % 4)) return false;
    for (int i = 0; i < g->r - 2; i++)
        if (dims[i] > 1 && st[i] % 4) return false;
    return true;
}

/* Rows [row0, row0 + rows) of an operand (rows from `limit` on as zeros,
 * columns past `cols` as zeros) into workgroup array dst, ds vec4s per row:
 * slot e = (row, column vec4) for e = tid, tid + NT, ..; neighbouring
 * invocations take neighbouring vec4s of a row, or neighbouring rows when
 * the rows are the contiguous axis of a scalar operand (rowfast). limit,
 * rs and cs (row and column strides): WGSL expressions. */
static void emit_load(wg_src *b, int ind, const char *dst, uint32_t ds, uint32_t rows, uint32_t nt, const char *src,
                      bool v4, const char *base, const char *row0, const char *limit, const char *rs, const char *cs,
                      bool rowfast, uint64_t cols) {
    uint64_t c4 = wg_cdiv(cols, 4), total = (uint64_t)rows * c4, per = wg_cdiv(total, nt);
    rowfast = rowfast && !v4;
    bool loop = per > 1; /* a loop (compact: lavapipe compiles it much faster; GPU compilers unroll it) */
    int in = ind + 4;
    if (loop) wg_src_printf(b, "%*sfor (var e = tid; e < %lluu; e = e + %uu) {\n", ind, "", (ull)total, nt);
    for (uint64_t n = 0; n < (loop ? 1 : per); n++) {
        if (!loop) {
            if ((n + 1) * nt > total) wg_src_printf(b, "%*sif (tid + %lluu < %lluu) {\n", ind, "", (ull)(n * nt), (ull)total);
            else wg_src_printf(b, "%*s{\n", ind, "");
            wg_src_printf(b, "%*slet e = tid + %lluu;\n", in, "", (ull)(n * nt));
        }
        if (rowfast) wg_src_printf(b, "%*slet r = e %% %uu;\n%*slet c = e / %uu;\n", in, "", rows, in, "", rows);
        else wg_src_printf(b, "%*slet r = e / %lluu;\n%*slet c = e %% %lluu;\n", in, "", (ull)c4, in, "", (ull)c4);
        wg_src_printf(b, "%*slet g = %s + r;\n%*svar x = vec4<f32>(0.0);\n%*sif (g < %s) {\n", in, "", row0, in, "",
                      in, "", limit);
        if (v4) {
            wg_src_printf(b, "%*sx = vec4<f32>(%s[(%s + g * %s) / 4u + c]);\n", in + 4, "", src, base, rs);
        } else {
            static const char comp[4] = { 'x', 'y', 'z', 'w' };
            wg_src_printf(b, "%*slet a = %s + g * %s + c * (4u * %s);\n", in + 4, "", base, rs, cs);
            for (int i = 0; i < 4; i++) {
                if (i == 0 || cols % 4 == 0)
                    wg_src_printf(b, "%*sx.%c = f32(%s[a + %du * %s]);\n", in + 4, "", comp[i], src, i, cs);
                else
                    wg_src_printf(b, "%*sif (4u * c + %du < %lluu) { x.%c = f32(%s[a + %du * %s]); }\n", in + 4, "", i,
                                  (ull)cols, comp[i], src, i, cs);
            }
        }
        wg_src_printf(b, "%*s}\n%*s%s[r * %uu + c] = x;\n%*s}\n", in, "", in, "", dst, ds, ind, "");
    }
}

static const char comp4[4] = { 'x', 'y', 'z', 'w' };

static rlx_status lower_tiled(wg_lower *L, const att_geom *g, const att_cfg *c) {
    const rlx_attn_layout *l = &g->l;
    int r = g->r;
    bool no_vec4 = !L->caps->cfg->attention_vec4;
    bool v4[4] = {
        vec4_ok(g, l->qd, l->qs, g->sq, (uint64_t)l->qs[r - 2], (uint64_t)l->qs[r - 1], g->d),
        vec4_ok(g, l->qd, l->ks, g->sk, g->kss, g->kds, g->d),
        vec4_ok(g, l->qd, l->vs, g->sk, (uint64_t)l->vs[r - 2], (uint64_t)l->vs[r - 1], g->dv),
        vec4_ok(g, l->qd, l->ys, g->sq, (uint64_t)l->ys[r - 2], (uint64_t)l->ys[r - 1], g->dv),
    };
    if (no_vec4 || g->half) memset(v4, 0, sizeof v4); /* f16: scalar loads (vec4<f16> windows are not bound) */
    uint64_t nqb = wg_cdiv(g->sq, c->bq), groups = g->nb * nqb;
    uint32_t nq4 = c->bq / 4, rk = c->rk, rv = c->rv, td = c->td;
    bool partial = g->sk % c->bk != 0;
    uint64_t msq = g->mask ? g->ms[r - 2] : 0, msk = g->mask ? g->ms[r - 1] : 0;
    char sl[64];
    scale_literal(sl, sizeof sl, g->scale);
    /* the sizes that follow the input shape, as Params fields (batch dims'
     * names as emit_batch_offsets writes them) */
    att_pv pv = { .n = 0 };
    pv_add(&pv, "sq", g->sq, false);
    pv_add(&pv, "nqb", nqb, false);
    pv_add(&pv, "groups", groups, false);
    const char *qrs = pv_add(&pv, "qrs", (uint64_t)l->qs[r - 2], true), *qcs = pv_add(&pv, "qcs", (uint64_t)l->qs[r - 1], true);
    const char *krs = pv_add(&pv, "krs", g->kss, true), *kcs = pv_add(&pv, "kcs", g->kds, true);
    const char *vrs = pv_add(&pv, "vrs", (uint64_t)l->vs[r - 2], true), *vcs = pv_add(&pv, "vcs", (uint64_t)l->vs[r - 1], true);
    const char *yrs = pv_add(&pv, "yrs", (uint64_t)l->ys[r - 2], true), *ycs = pv_add(&pv, "ycs", (uint64_t)l->ys[r - 1], true);
    const char *mrs = msq ? pv_add(&pv, "mrs", msq, true) : "0u", *mks = g->mask ? pv_add(&pv, "mks", msk, true) : "0u";
    for (int i = r - 3; i >= 0; i--) {
        char nm[8];
        const uint64_t st[5] = { (uint64_t)l->qs[i], (uint64_t)l->ks[i], (uint64_t)l->vs[i], (uint64_t)l->ys[i], g->ms[i] };
        snprintf(nm, sizeof nm, "bd%d", i);
        pv_add(&pv, nm, (uint64_t)l->qd[i], false);
        for (int o = 0; o < 5; o++) {
            if (o == 4 && !g->mask) continue;
            snprintf(nm, sizeof nm, "b%c%d", "qkvym"[o], i);
            pv_add(&pv, nm, st[o], false);
        }
    }
    wg_src b = { 0 };
    wg_src_printf(&b,
                  "// Generated: rlx.Attention, tiled (lower_attention.c): batches of Q [SQ, %llu], K [SK, %llu],\n"
                  "// V [SK, %llu] (vec4 I/O Q %d K %d V %d Y %d; sizes and strides in Params). One workgroup per\n"
                  "// (batch, %u query rows); invocation (tq, tx) owns rows 4 tq .. 4 tq + 3: scores of keys tx + i TD of\n"
                  "// each tile of %u keys, online softmax, output column vec4s tx + j TD.\n"
                  "//!audited loads under row < limit (SQ, SK) and column < head dim (emit_load), mask rows and keys\n"
                  "//!audited clamped by min, stores under row < SQ and column < DV; workgroup indices below each\n"
                  "//!audited array's size (tq < BQ / 4, tx < TD, k < RK, v < RV; lower_attention.c)\n",
                  (ull)g->d, (ull)g->d, (ull)g->dv, v4[0], v4[1], v4[2], v4[3], c->bq, c->bk);
    emit_bindings(&b, g->mask, v4, &pv);
    wg_src_printf(&b,
                  "const D4 = %uu;\nconst BK = %uu;\nconst TD = %uu;\n"
                  "const QS = %uu;\nconst KS = %uu;\nconst VS = %uu;\nconst PT = %uu;\n",
                  c->d4, c->bk, td, c->qs, c->ks, c->vs, c->pt);
    wg_src_printf(&b,
                  "var<workgroup> Qs: array<vec4<f32>, %u>;\nvar<workgroup> Ks: array<vec4<f32>, %u>;\n"
                  "var<workgroup> Vs: array<vec4<f32>, %u>;\nvar<workgroup> Ps: array<vec4<f32>, %u>;\n"
                  "var<workgroup> Rm: array<vec4<f32>, %u>;\nvar<workgroup> Rl: array<vec4<f32>, %u>;\n",
                  c->bq * c->qs, c->bk * c->ks, c->bk * c->vs, c->bk * c->pt, nq4 * td, nq4 * td);
    wg_src_printf(&b,
                  "@compute @workgroup_size(%u)\n"
                  "fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
                  "        @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let wl = wid.x + wid.y * nwg.x;\n"
                  "    if (wl >= P.groups) { return; }\n"
                  "    let SQ = P.sq;\n"
                  "    let SK = P.sk;\n"
                  "    let bi = wl / P.nqb;\n"
                  "    let q0 = (wl %% P.nqb) * %uu;\n"
                  "    let tid = lid.x;\n"
                  "    let tq = tid / TD;\n"
                  "    let tx = tid %% TD;\n",
                  c->nt, c->bq);
    emit_batch_offsets(&b, g, true);
    emit_load(&b, 4, "Qs", c->qs, c->bq, c->nt, "Q", v4[0], "qb", "q0", "SQ", qrs, qcs, l->qs[r - 2] < l->qs[r - 1], g->d);
    /* the rows' mask offsets (rows past SQ read the last row) */
    if (g->mask && msq)
        for (int i = 0; i < 4; i++)
            wg_src_printf(&b, "    let mr%d = mb + min(q0 + tq * 4u + %du, SQ - 1u) * %s;\n", i, i, mrs);
    wg_src_printf(&b, "    let qr = tq * 4u * QS;\n    let kr = tx * KS;\n    let pr = tx * PT + tq;\n"
                      "    let rr = tq * TD;\n");
    wg_src_printf(&b, "    let neg = bitcast<f32>(0xff7fffffu);\n    var m = vec4<f32>(neg);\n    var l = vec4<f32>(0.0);\n");
    for (int i = 0; i < 4; i++)
        for (uint32_t v = 0; v < rv; v++) wg_src_printf(&b, "    var a%d_%u = vec4<f32>(0.0);\n", i, v);
    /* the tile loop's bound comes from Params (= SK): with a constant one,
     * lavapipe's LLVM unrolls loops of a few tiles, and compiles for tens of
     * seconds; GPU compilers do not unroll a loop body this large anyway */
    wg_src_printf(&b, "    for (var k0 = 0u; k0 < P.sk; k0 = k0 + BK) {\n        workgroupBarrier();\n");
    emit_load(&b, 8, "Ks", c->ks, c->bk, c->nt, "K", v4[1], "kb", "k0", "SK", krs, kcs, g->kss < g->kds, g->d);
    emit_load(&b, 8, "Vs", c->vs, c->bk, c->nt, "V", v4[2], "vb", "k0", "SK", vrs, vcs, l->vs[r - 2] < l->vs[r - 1],
              g->dv);
    wg_src_printf(&b, "        workgroupBarrier();\n        let kx = k0 + tx;\n");
    /* the mask of this invocation's scores, read before the dot products */
    if (g->mask) {
        for (uint32_t k = 0; k < rk; k++) {
            wg_src_printf(&b, "        let gk%u = min(kx + %uu, SK - 1u) * %s;\n", k, k * td, mks);
            if (msq)
                for (int i = 0; i < 4; i++) wg_src_printf(&b, "        let mk%d_%u = f32(M[mr%d + gk%u]);\n", i, k, i, k);
            else
                wg_src_printf(&b, "        let mk%u = f32(M[mb + gk%u]);\n", k, k);
        }
    }
    for (int i = 0; i < 4; i++)
        for (uint32_t k = 0; k < rk; k++) wg_src_printf(&b, "        var s%d_%u = 0.0;\n", i, k);
    wg_src_printf(&b, "        for (var c = 0u; c < D4; c = c + 1u) {\n");
    for (int i = 0; i < 4; i++) wg_src_printf(&b, "            let qv%d = Qs[qr + %uu + c];\n", i, i * c->qs);
    for (uint32_t k = 0; k < rk; k++) wg_src_printf(&b, "            let kv%u = Ks[kr + %uu + c];\n", k, k * td * c->ks);
    for (int e = 0; e < 4; e++)
        for (int i = 0; i < 4; i++)
            for (uint32_t k = 0; k < rk; k++)
                wg_src_printf(&b, "            s%d_%u = fma(qv%d.%c, kv%u.%c, s%d_%u);\n", i, k, i, comp4[e], k, comp4[e], i,
                              k);
    wg_src_printf(&b, "        }\n");
    /* scale, mask, keys past SK */
    for (uint32_t k = 0; k < rk; k++) {
        if (partial) wg_src_printf(&b, "        let ok%u = kx + %uu < SK;\n", k, k * td);
        for (int i = 0; i < 4; i++) {
            wg_src_printf(&b, "        s%d_%u = s%d_%u %s %s", i, k, i, k, g->div ? "/" : "*", sl);
            if (g->mask) {
                if (msq) wg_src_printf(&b, " + mk%d_%u", i, k);
                else wg_src_printf(&b, " + mk%u", k);
            }
            wg_src_printf(&b, ";\n");
            if (partial) wg_src_printf(&b, "        s%d_%u = select(neg, s%d_%u, ok%u);\n", i, k, i, k, k);
        }
    }
    /* the tile's row maxima */
    wg_src_printf(&b, "        Rm[rr + tx] = vec4<f32>(");
    for (int i = 0; i < 4; i++) {
        wg_src_printf(&b, "%s", i ? ", " : "");
        for (uint32_t k = 0; k + 1 < rk; k++) wg_src_printf(&b, "max(");
        wg_src_printf(&b, "s%d_0", i);
        for (uint32_t k = 1; k < rk; k++) wg_src_printf(&b, ", s%d_%u)", i, k);
    }
    wg_src_printf(&b, ");\n        workgroupBarrier();\n        var mn = m;\n");
    for (uint32_t t = 0; t < td; t++) wg_src_printf(&b, "        mn = max(mn, Rm[rr + %uu]);\n", t);
    /* probabilities, each exp once; partial row sums */
    for (uint32_t k = 0; k < rk; k++) {
        for (int i = 0; i < 4; i++) {
            if (partial)
                wg_src_printf(&b, "        let p%d_%u = select(0.0, exp(s%d_%u - mn.%c), ok%u);\n", i, k, i, k, comp4[i], k);
            else
                wg_src_printf(&b, "        let p%d_%u = exp(s%d_%u - mn.%c);\n", i, k, i, k, comp4[i]);
        }
        wg_src_printf(&b, "        Ps[pr + %uu] = vec4<f32>(p0_%u, p1_%u, p2_%u, p3_%u);\n", k * td * c->pt, k, k, k, k);
    }
    wg_src_printf(&b, "        Rl[rr + tx] = vec4<f32>(");
    for (int i = 0; i < 4; i++) {
        wg_src_printf(&b, "%s", i ? ", " : "");
        for (uint32_t k = 0; k < rk; k++) wg_src_printf(&b, "%sp%d_%u", k ? " + " : "", i, k);
    }
    wg_src_printf(&b, ");\n        workgroupBarrier();\n        var ts = Rl[rr];\n");
    for (uint32_t t = 1; t < td; t++) wg_src_printf(&b, "        ts = ts + Rl[rr + %uu];\n", t);
    wg_src_printf(&b, "        let corr = exp(m - mn);\n        l = l * corr + ts;\n        m = mn;\n");
    for (int i = 0; i < 4; i++)
        for (uint32_t v = 0; v < rv; v++) wg_src_printf(&b, "        a%d_%u = a%d_%u * corr.%c;\n", i, v, i, v, comp4[i]);
    /* p V over the tile, four keys per iteration */
    wg_src_printf(&b, "        for (var j = 0u; j < BK; j = j + 4u) {\n");
    for (int jj = 0; jj < 4; jj++) {
        wg_src_printf(&b, "            {\n                let p = Ps[(j + %du) * PT + tq];\n", jj);
        for (uint32_t v = 0; v < rv; v++)
            wg_src_printf(&b, "                let v%u = Vs[(j + %du) * VS + tx + %uu];\n", v, jj, v * td);
        for (int i = 0; i < 4; i++)
            for (uint32_t v = 0; v < rv; v++)
                wg_src_printf(&b, "                a%d_%u = fma(vec4<f32>(p.%c), v%u, a%d_%u);\n", i, v, comp4[i], v, i, v);
        wg_src_printf(&b, "            }\n");
    }
    wg_src_printf(&b, "        }\n    }\n");
    /* y = acc / l for the rows and columns that exist */
    for (int i = 0; i < 4; i++) {
        wg_src_printf(&b, "    {\n        let row = q0 + tq * 4u + %du;\n        if (row < SQ) {\n", i);
        for (uint32_t v = 0; v < rv; v++) {
            uint32_t col = v * td; /* column vec4 tx + col */
            bool guard = (uint64_t)col + td > c->dv4;
            if (guard) wg_src_printf(&b, "            if (tx + %uu < %uu) {\n", col, c->dv4);
            else wg_src_printf(&b, "            {\n");
            wg_src_printf(&b, "                let y = a%d_%u / l.%c;\n", i, v, comp4[i]);
            if (v4[3]) {
                wg_src_printf(&b, "                Y[(yb + row * %s) / 4u + tx + %uu] = vec4<T>(y);\n", yrs, col);
            } else {
                wg_src_printf(&b, "                let a = yb + row * %s + (tx + %uu) * (4u * %s);\n", yrs, col, ycs);
                for (int e = 0; e < 4; e++) {
                    if (e == 0 || g->dv % 4 == 0)
                        wg_src_printf(&b, "                Y[a + %du * %s] = T(y.%c);\n", e, ycs, comp4[e]);
                    else
                        wg_src_printf(&b, "                if (4u * (tx + %uu) + %du < %lluu) { Y[a + %du * %s] = T(y.%c); }\n",
                                      col, e, (ull)g->dv, e, ycs, comp4[e]);
                }
            }
            wg_src_printf(&b, "            }\n");
        }
        wg_src_printf(&b, "        }\n    }\n");
    }
    wg_src_printf(&b, "}\n");
    return emit_done(L, g, &b, "attention_tiled", groups, v4, &pv);
}

/* ------------------------------------------------------------ entry */

rlx_status wg_lower_attention(wg_lower *L) {
    att_geom g;
    bool empty;
    RLX_TRY(att_resolve(L, &g, &empty));
    if (empty) return RLX_OK;
    const char *kern = L->caps->cfg->attention_kernel;
    bool only_v1 = kern && strcmp(kern, "v1") == 0, only_v2 = kern && strcmp(kern, "v2") == 0;
    if (kern && *kern && !only_v1 && !only_v2 && strcmp(kern, "auto") != 0)
        return wg_decline(L, "RLX_ATTENTION_KERNEL='%s': expected v1, v2 or auto", kern);
    char why[160] = "";
    if (!only_v1) {
        att_cfg c;
        if (choose_cfg(L->caps, &g, &c, why, sizeof why)) return lower_tiled(L, &g, &c);
        const char *tile = L->caps->cfg->attention_tile;
        if (only_v2 || (tile && *tile)) return wg_decline(L, "%s", why);
    }
    bool fits;
    RLX_TRY(lower_v1(L, &g, &fits));
    if (!fits) return wg_decline(L, "head dims too large for workgroup memory%s%s", why[0] ? "; " : "", why);
    return RLX_OK;
}
