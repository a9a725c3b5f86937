/* WGSL lowerings of the internal ops (domain "rlx", contracts in
 * src/ir/ops/internal_ops.h):
 *  - FusedElementwise: the program becomes generated WGSL, one dispatch of
 *    one invocation per output element (or one per block of the output
 *    when an operand exceeds one storage binding, wg_split.h); dims and
 *    broadcast strides are baked into the index arithmetic, finite
 *    constants into bit-exact literals, non-finite ones into Params words.
 *    Equal programs over equal shapes share one pipeline (the cache keys on
 *    the source).
 *  - AddLayerNormalization: kernels/add_layernorm.wgsl, one workgroup per
 *    row.
 *  - Attention: generated WGSL (dims and strides baked in), one workgroup
 *    per (batch, block of 64 query rows), online softmax over blocks of
 *    keys held in workgroup memory; the scores never reach memory.
 * f32 only; everything else declines to the CPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_split.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"

/* ------------------------------------------------------------ FusedElementwise */

/* Appends the element index of input x for output index `g` of y: "g" when
 * x has y's shape, "0u" for a scalar, else the sum over x's non-broadcast
 * dims (merged where contiguous) of ((g / out_stride) % dim) * in_stride. */
static void index_expr(wg_src *b, const rlx_value *x, const rlx_value *y) {
    uint64_t nx = wg_numel(x), ny = wg_numel(y);
    if (nx == ny) {
        wg_src_printf(b, "g");
        return;
    }
    if (nx == 1) {
        wg_src_printf(b, "0u");
        return;
    }
    int r = y->rank;
    uint64_t st[RLX_MAX_RANK];
    uint64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        int j = d - (r - x->rank);
        st[d] = (j < 0 || x->dims[j] == 1) ? 0 : s;
        if (j >= 0) s *= (uint64_t)x->dims[j];
    }
    /* segments from the innermost dim: (out stride, extent, in stride) */
    uint64_t os[RLX_MAX_RANK], ex[RLX_MAX_RANK], is[RLX_MAX_RANK];
    int ns = 0;
    uint64_t ostride = 1;
    for (int d = r - 1; d >= 0; d--) {
        uint64_t dim = (uint64_t)y->dims[d];
        if (dim != 1 && st[d] != 0) {
            if (ns > 0 && os[ns - 1] * ex[ns - 1] == ostride && is[ns - 1] * ex[ns - 1] == st[d]) {
                ex[ns - 1] *= dim;
            } else {
                os[ns] = ostride, ex[ns] = dim, is[ns] = st[d];
                ns++;
            }
        }
        ostride *= dim;
    }
    if (ns == 0) {
        wg_src_printf(b, "0u");
        return;
    }
    for (int k = 0; k < ns; k++) {
        bool outer = os[k] * ex[k] == ny; /* no modulo needed */
        wg_src_printf(b, "%s", k ? " + " : "(");
        if (os[k] == 1) wg_src_printf(b, outer ? "g" : "(g %% %lluu)", (unsigned long long)ex[k]);
        else if (outer) wg_src_printf(b, "(g / %lluu)", (unsigned long long)os[k]);
        else wg_src_printf(b, "((g / %lluu) %% %lluu)", (unsigned long long)os[k], (unsigned long long)ex[k]);
        if (is[k] != 1) wg_src_printf(b, " * %lluu", (unsigned long long)is[k]);
    }
    wg_src_printf(b, ")");
}

/* An f32 value as a WGSL expression: a literal when finite, else a Params
 * slot k<n> (appended to the slots list). */
typedef struct kslots {
    float v[40];
    int n;
} kslots;

static bool value_expr(char *out, size_t cap, float v, kslots *ks) {
    if (isfinite(v)) {
        uint32_t u;
        memcpy(&u, &v, 4);
        snprintf(out, cap, "bitcast<f32>(0x%08xu)", (unsigned)u);
        return true;
    }
    if (ks->n == (int)(sizeof ks->v / sizeof ks->v[0])) return false;
    ks->v[ks->n] = v;
    snprintf(out, cap, "P.k%d", ks->n++);
    return true;
}

/* One dispatch of a generated FusedElementwise kernel per block of the
 * output (wg_split.h): operands 0..n_in-1 are the inputs, n_in the output;
 * the block's outputs are contiguous from its base, each input's window
 * starts at lo. */
typedef struct ew_emit_ctx {
    const char *src;
    int n_in;
    const kslots *ks;
} ew_emit_ctx;

static rlx_status emit_ew_block(wg_lower *L, const wg_block *blk, void *vctx) {
    const ew_emit_ctx *c = vctx;
    wg_dispatch *d = wg_emit_source(L, "fused_elementwise", c->src);
    for (int i = 0; i < c->n_in; i++) wg_bind(L, d, wg_in_id(L, i), blk->lo[i], blk->n[i]);
    wg_bind(L, d, wg_out_id(L, 0), blk->lo[c->n_in], blk->n[c->n_in]);
    wg_p_u32(L, d, (uint32_t)blk->numel);
    wg_p_u32(L, d, (uint32_t)blk->base[c->n_in]);
    for (int i = 0; i < c->n_in; i++) wg_p_u32(L, d, (uint32_t)blk->lo[i]);
    for (int k = 0; k < c->ks->n; k++) wg_p_f32(L, d, c->ks->v[k]);
    return wg_grid_1d(L, d, blk->numel);
}

static rlx_status lower_fused_ew(wg_lower *L) {
    rlx_ew_prog p;
    if (rlx_ew_prog_read(L->n, &p) != RLX_OK) return wg_decline(L, "malformed program");
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *y = wg_out(L, 0);
    for (int k = 0; k < p.n_instr; k++)
        if (p.ins[k].rnd) return wg_decline(L, "f16/bf16 rounding");
    if (p.n_in + 1 > WG_MAX_BINDINGS || (L->caps->max_storage_per_stage && (uint32_t)p.n_in + 1 > L->caps->max_storage_per_stage))
        return wg_decline(L, "%d inputs exceed the storage bindings of a dispatch", p.n_in);
    uint64_t n = wg_numel(y);
    if (n == 0) return RLX_OK;
    if (n >= ((uint64_t)1 << 32) - WG_WORKGROUP * (uint64_t)65536) return wg_decline(L, "too large for 32-bit indexing");
    for (int i = 0; i < p.n_in; i++) { /* each input broadcasts to the output */
        const rlx_value *x = wg_in(L, i);
        bool ok = x->rank <= y->rank;
        for (int d = 0; ok && d < x->rank; d++) {
            int64_t xd = x->dims[d], yd = y->dims[y->rank - x->rank + d];
            ok = xd == yd || xd == 1;
        }
        if (!ok) return wg_decline(L, "input %d does not broadcast to the output", i);
    }
    kslots ks = { .n = 0 };
    wg_src b = { 0 };
    char ea[64], eb[64];
    /* the body first (it decides the Params slots), the header after */
    wg_src body = { 0 };
    /* g: the output index in the whole tensor (blocks start at P.i0); an
     * input's index minus its window's first element P.b<k> */
    wg_src_printf(&body, "    let g = P.i0 + i;\n");
    for (int i = 0; i < p.n_in; i++) {
        wg_src_printf(&body, "    let r%d = X%d[P.o%d + (", i, i, i);
        index_expr(&body, wg_in(L, i), y);
        wg_src_printf(&body, " - P.b%d)];\n", i);
    }
    for (int c = 0; c < p.n_consts; c++) {
        if (!value_expr(ea, sizeof ea, p.consts[c], &ks)) goto too_many;
        wg_src_printf(&body, "    let r%d = %s;\n", p.n_in + c, ea);
    }
    for (int k = 0; k < p.n_instr; k++) {
        const rlx_ew_instr *in = &p.ins[k];
        if (!value_expr(ea, sizeof ea, in->alpha, &ks) || !value_expr(eb, sizeof eb, in->beta, &ks)) goto too_many;
        char ra[16], rb[16], rc[16];
        snprintf(ra, sizeof ra, "r%d", in->a);
        snprintf(rb, sizeof rb, "r%d", in->b >= 0 ? in->b : in->a);
        snprintf(rc, sizeof rc, "r%d", in->c >= 0 ? in->c : in->a);
        wg_src_printf(&body, "    let r%d = ", rlx_ew_reg(&p, k));
        if (!wg_gen_ew_expr(&body, in->op, ra, rb, rc, ea, eb)) {
            wg_src_free(&body);
            return wg_decline(L, "op %d has no WGSL", in->op);
        }
        wg_src_printf(&body, ";\n");
    }
    wg_src_printf(&body, "    Y[P.oy + i] = r%d;\n}\n", rlx_ew_reg(&p, p.n_instr - 1));
    /* header: Params, bindings, the library */
    wg_src_printf(&b, "// Generated: rlx.FusedElementwise of %d instructions over %llu elements (lower_internal.c).\n",
                  p.n_instr, (unsigned long long)n);
    wg_src_printf(&b, "struct Params {");
    int words = 0;
    for (int i = 0; i < p.n_in; i++, words++) wg_src_printf(&b, " o%d: u32,", i);
    wg_src_printf(&b, " oy: u32, n: u32, i0: u32,");
    words += 3;
    for (int i = 0; i < p.n_in; i++, words++) wg_src_printf(&b, " b%d: u32,", i);
    for (int k = 0; k < ks.n; k++, words++) wg_src_printf(&b, " k%d: f32,", k);
    for (; words % 4; words++) wg_src_printf(&b, " _p%d: u32,", words);
    wg_src_printf(&b, " };\n@group(0) @binding(0) var<uniform> P: Params;\n");
    for (int i = 0; i < p.n_in; i++)
        wg_src_printf(&b, "@group(0) @binding(%d) var<storage, read_write> X%d: array<f32>;\n", i + 1, i);
    wg_src_printf(&b, "@group(0) @binding(%d) var<storage, read_write> Y: array<f32>;\n", p.n_in + 1);
    wg_src_printf(&b, "%s\n", wg_wgsl_source("ew_lib") ? wg_wgsl_source("ew_lib") : "");
    wg_src_printf(&b,
                  "@compute @workgroup_size(64)\n"
                  "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let i = gid.x + gid.y * nwg.x * 64u;\n"
                  "    if (i >= P.n) { return; }\n");
    wg_src_printf(&b, "%s", body.s ? body.s : "");
    if (words > WG_MAX_PARAMS || b.oom || body.oom) {
        wg_src_free(&b);
        wg_src_free(&body);
        return wg_decline(L, "program too large for one dispatch");
    }
    wg_src_free(&body);
    /* the output's iteration space, each input read through its broadcast
     * strides: one dispatch, or blocks whose windows fit one binding (every
     * element computed by the same code, so the same bits) */
    wg_strided sp;
    memset(&sp, 0, sizeof sp);
    sp.rank = y->rank;
    sp.n_ops = p.n_in + 1;
    for (int i = 0; i <= p.n_in; i++) {
        const rlx_value *x = i < p.n_in ? wg_in(L, i) : y;
        int64_t st = 1;
        for (int dd = y->rank - 1; dd >= 0; dd--) {
            int j = dd - (y->rank - x->rank);
            sp.str[i][dd] = (j < 0 || (x->dims[j] == 1 && y->dims[dd] != 1)) ? 0 : st;
            if (j >= 0) st *= x->dims[j];
        }
    }
    for (int dd = 0; dd < y->rank; dd++) sp.dims[dd] = (uint64_t)y->dims[dd];
    ew_emit_ctx ec = { b.s, p.n_in, &ks };
    rlx_status st = wg_split_strided(L, &sp, emit_ew_block, &ec);
    wg_src_free(&b);
    return st;
too_many:
    wg_src_free(&body);
    return wg_decline(L, "too many non-finite constants");
}

/* ------------------------------------------------------------ AddLayerNormalization */

/* True when p is a "suffix" of x (1s on a leading run of dims, then x's). */
static bool suffix_of(const rlx_value *p, const rlx_value *x) {
    if (p->rank > x->rank) return false;
    int off = x->rank - p->rank, s = x->rank;
    while (s > off && p->dims[s - off - 1] == x->dims[s - 1]) s--;
    for (int i = off; i < s; i++)
        if (p->dims[i - off] != 1) return false;
    return true;
}

static rlx_status lower_add_ln(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *sc = wg_in(L, 2), *bi = wg_in(L, 3), *y = wg_out(L, 0);
    int ax;
    if (a->rank < 1 || !rlx_norm_axis(rlx_attr_int(L->n, "axis", -1), a->rank, &ax)) return wg_decline(L, "axis");
    uint64_t total = wg_numel(a), len = 1;
    for (int i = ax; i < a->rank; i++) len *= (uint64_t)a->dims[i];
    uint64_t rows = len ? total / len : 0, bn = wg_numel(b), sn = wg_numel(sc), cn = bi ? wg_numel(bi) : 0;
    if (!suffix_of(b, a) || !suffix_of(sc, a) || (bi && !suffix_of(bi, a)) || sn > len || cn > len ||
        wg_numel(y) != total)
        return wg_decline(L, "operand shapes");
    if (total == 0) return RLX_OK;
    if (total >= ((uint64_t)1 << 31) || bn == 0 || sn == 0 || (bi && cn == 0)) return wg_decline(L, "sizes");
    wg_dispatch *d = wg_emit(L, "add_layernorm");
    wg_bind_value(L, d, wg_in_id(L, 0));
    wg_bind_value(L, d, wg_in_id(L, 1));
    wg_bind_value(L, d, wg_in_id(L, 2));
    if (bi) wg_bind_value(L, d, wg_in_id(L, 3));
    else wg_bind(L, d, wg_in_id(L, 2), 0, 1); /* unused placeholder */
    wg_bind_value(L, d, wg_out_id(L, 0));
    wg_p_u32(L, d, (uint32_t)rows);
    wg_p_u32(L, d, (uint32_t)len);
    wg_p_u32(L, d, (uint32_t)bn);
    wg_p_u32(L, d, (uint32_t)sn);
    wg_p_u32(L, d, (uint32_t)cn);
    wg_p_f32(L, d, rlx_attr_float(L->n, "epsilon", 1e-5f));
    return wg_grid_groups(L, d, rows);
}

/* ------------------------------------------------------------ Attention */

#define ATT_BQ 8u   /* query rows per workgroup */
#define ATT_TPR 16u /* invocations per query row (128 per workgroup) */

static rlx_status lower_attention(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *q = wg_in(L, 0), *k = wg_in(L, 1), *v = wg_in(L, 2), *m = wg_in(L, 3), *y = wg_out(L, 0);
    int r = q->rank;
    if (r < 2 || k->rank != r || v->rank != r || y->rank != r) return wg_decline(L, "ranks");
    rlx_attn_layout l;
    if (rlx_attn_layout_of(L->n, r, q->dims, k->dims, v->dims, &l) != RLX_OK) return wg_decline(L, "layout");
    for (int i = 0; i < r; i++)
        if (y->dims[i] != l.y_phys[i]) return wg_decline(L, "output shape");
    bool div = rlx_attr_int(L->n, "scale_div", 0) != 0;
    float scale = rlx_attr_float(L->n, "scale", 1.0f);
    uint64_t nb = 1;
    for (int i = 0; i < r - 2; i++) nb *= (uint64_t)l.qd[i];
    uint64_t sq = (uint64_t)l.qd[r - 2], dd = (uint64_t)l.qd[r - 1];
    uint64_t sk = (uint64_t)l.kd[l.kt ? r - 1 : r - 2], dv = (uint64_t)l.vd[r - 1];
    /* K as the [D, Sk] factor: strides of its D and Sk axes */
    uint64_t kds = (uint64_t)(l.kt ? l.ks[r - 2] : l.ks[r - 1]), kss = (uint64_t)(l.kt ? l.ks[r - 1] : l.ks[r - 2]);
    if (wg_numel(y) == 0) return RLX_OK;
    if (sk == 0 || dd == 0) return wg_decline(L, "empty keys or depth");
    if (dd > 256 || dv > 256) return wg_decline(L, "head dims above 256");
    if (!isfinite(scale) || scale == 0.0f) return wg_decline(L, "scale %g", (double)scale);
    if (wg_numel(q) >= ((uint64_t)1 << 31) || wg_numel(k) >= ((uint64_t)1 << 31) || wg_numel(v) >= ((uint64_t)1 << 31) ||
        wg_numel(y) >= ((uint64_t)1 << 31) || (m && wg_numel(m) >= ((uint64_t)1 << 31)))
        return wg_decline(L, "too large for 32-bit indexing");
    /* workgroup memory (floats): Qs BQ x (D + 1), Ks BK x (D + 1),
     * Vs BK x DV, Ss BQ x (BK + 1) (rows padded against bank conflicts);
     * BK keys per block, a multiple of TPR, within the device's limit */
    uint64_t room = (L->caps->max_wg_storage ? L->caps->max_wg_storage : 16384) / 4;
    uint64_t fixed = ATT_BQ * (dd + 1) + ATT_BQ;
    if (fixed >= room) return wg_decline(L, "head dims too large for workgroup memory");
    uint64_t bk = (room - fixed) / (dd + 1 + dv + ATT_BQ);
    if (bk > 64) bk = 64;
    bk = bk / ATT_TPR * ATT_TPR;
    if (bk == 0) return wg_decline(L, "head dims too large for workgroup memory");
    /* mask strides over [batch.., Sq, Sk] (0 where broadcast) */
    uint64_t ms[RLX_MAX_RANK] = { 0 };
    if (m) {
        if (m->rank > r) return wg_decline(L, "mask rank");
        uint64_t s = 1;
        for (int i = r - 1; i >= 0; i--) {
            int j = i - (r - m->rank);
            uint64_t want = i == r - 1 ? sk : (uint64_t)l.qd[i];
            if (j < 0) continue;
            uint64_t md = (uint64_t)m->dims[j];
            if (md != 1 && md != want) return wg_decline(L, "mask does not broadcast");
            ms[i] = md == 1 ? 0 : s;
            s *= md;
        }
    }
    uint64_t nqb = (sq + ATT_BQ - 1) / ATT_BQ;
    uint64_t nu = (dv + ATT_TPR - 1) / ATT_TPR; /* outputs per invocation */
    typedef unsigned long long ull;
    wg_src b = { 0 };
    wg_src_printf(&b,
                  "// Generated: rlx.Attention (lower_internal.c): %llu batches of Q [%llu, %llu], K [%llu, %llu],\n"
                  "// V [%llu, %llu], read with the strides of their layouts (absorbed Transposes).\n"
                  "// One workgroup per (batch, block of BQ query rows), TPR invocations per row. Per block of BK\n"
                  "// keys (K and V through workgroup memory): invocation lane of row qi computes the scores of keys\n"
                  "// lane, lane + TPR, ... (dot products over D in ascending order) and, with the row's block\n"
                  "// maximum, their exp(s - max); then the online softmax: running maximum mx, sum l and outputs\n"
                  "// rescaled by exp(mx_old - mx_new); the invocation owns output columns lane + u * TPR.\n"
                  "// y = acc / l.\n",
                  (ull)nb, (ull)sq, (ull)dd, (ull)sk, (ull)dd, (ull)sk, (ull)dv);
    /* without a mask there is no M binding (an unused binding would drop
     * out of the pipeline's layout) */
    wg_src_printf(&b, "struct Params { q_off: u32, k_off: u32, v_off: u32, %sy_off: u32%s };\n"
                      "@group(0) @binding(0) var<uniform> P: Params;\n"
                      "@group(0) @binding(1) var<storage, read_write> Q: array<f32>;\n"
                      "@group(0) @binding(2) var<storage, read_write> K: array<f32>;\n"
                      "@group(0) @binding(3) var<storage, read_write> V: array<f32>;\n",
                  m ? "m_off: u32, " : "", m ? ", _p0: u32, _p1: u32, _p2: u32" : "");
    if (m) wg_src_printf(&b, "@group(0) @binding(4) var<storage, read_write> M: array<f32>;\n");
    wg_src_printf(&b, "@group(0) @binding(%d) var<storage, read_write> Y: array<f32>;\n", m ? 5 : 4);
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
                  "    let ic = min(i, SQ - 1u);\n"
                  "    var qb = P.q_off;\n"
                  "    var kb = P.k_off;\n"
                  "    var vb = P.v_off;\n"
                  "    var yb = P.y_off;\n",
                  ATT_BQ * ATT_TPR, (ull)(nb * nqb), (ull)nqb, (ull)nqb);
    if (m) wg_src_printf(&b, "    var mb = P.m_off;\n");
    /* batch offsets: the batch index decomposed over the batch dims */
    if (r > 2) wg_src_printf(&b, "    var rem = bi;\n");
    for (int i = r - 3; i >= 0; i--) {
        wg_src_printf(&b, "    { let c = rem %% %lluu; rem = rem / %lluu;", (ull)l.qd[i], (ull)l.qd[i]);
        if (l.qs[i]) wg_src_printf(&b, " qb = qb + c * %lluu;", (ull)l.qs[i]);
        if (l.ks[i]) wg_src_printf(&b, " kb = kb + c * %lluu;", (ull)l.ks[i]);
        if (l.vs[i]) wg_src_printf(&b, " vb = vb + c * %lluu;", (ull)l.vs[i]);
        if (l.ys[i]) wg_src_printf(&b, " yb = yb + c * %lluu;", (ull)l.ys[i]);
        if (m && ms[i]) wg_src_printf(&b, " mb = mb + c * %lluu;", (ull)ms[i]);
        wg_src_printf(&b, " }\n");
    }
    /* the block's query rows into Qs (rows past SQ repeat the last) */
    wg_src_printf(&b,
                  "    for (var t = tid; t < BQ * D; t = t + BQ * TPR) {\n"
                  "        let row = min(q0 + t / D, SQ - 1u);\n"
                  "        Qs[(t / D) * QS + t %% D] = Q[qb + row * %lluu + (t %% D) * %lluu];\n"
                  "    }\n"
                  "    yb = yb + ic * %lluu;\n",
                  (ull)l.qs[r - 2], (ull)l.qs[r - 1], (ull)l.ys[r - 2]);
    if (m) wg_src_printf(&b, "    mb = mb + ic * %lluu;\n", (ull)ms[r - 2]);
    for (uint64_t u = 0; u < nu; u++) wg_src_printf(&b, "    var acc%llu = 0.0;\n", (ull)u);
    wg_src_printf(&b,
                  "    var mx = -3.40282347e+38;\n"
                  "    var l = 0.0;\n"
                  "    for (var k0 = 0u; k0 < SK; k0 = k0 + BK) {\n"
                  "        workgroupBarrier();\n"
                  "        for (var t = tid; t < BK * D; t = t + BQ * TPR) {\n"
                  "            let j = k0 + t / D;\n"
                  "            Ks[(t / D) * QS + t %% D] = select(0.0, K[kb + min(j, SK - 1u) * %lluu + (t %% D) * %lluu], j < SK);\n"
                  "        }\n"
                  "        for (var t = tid; t < BK * DV; t = t + BQ * TPR) {\n"
                  "            let j = k0 + t / DV;\n"
                  "            Vs[t] = select(0.0, V[vb + min(j, SK - 1u) * %lluu + (t %% DV) * %lluu], j < SK);\n"
                  "        }\n"
                  "        workgroupBarrier();\n"
                  "        let nk = min(BK, SK - k0);\n",
                  (ull)kss, (ull)kds, (ull)l.vs[r - 2], (ull)l.vs[r - 1]);
    char sl[64];
    uint32_t su;
    memcpy(&su, &scale, 4);
    snprintf(sl, sizeof sl, "bitcast<f32>(0x%08xu)", (unsigned)su);
    /* this invocation's scores */
    wg_src_printf(&b,
                  "        for (var jj = lane; jj < nk; jj = jj + TPR) {\n"
                  "            var dot = 0.0;\n"
                  "            for (var t = 0u; t < D; t = t + 1u) { dot = dot + Qs[qi * QS + t] * Ks[jj * QS + t]; }\n"
                  "            var s = dot %s %s;\n",
                  div ? "/" : "*", sl);
    if (m) wg_src_printf(&b, "            s = s + M[mb + (k0 + jj) * %lluu];\n", (ull)ms[r - 1]);
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
        wg_src_printf(&b, "        if (lane + %lluu < DV) { Y[yb + (lane + %lluu) * %lluu] = acc%llu / l; }\n",
                      (ull)(u * ATT_TPR), (ull)(u * ATT_TPR), (ull)l.ys[r - 1], (ull)u);
    wg_src_printf(&b, "    }\n}\n");
    if (b.oom) {
        wg_src_free(&b);
        L->broken = true;
        return RLX_OK;
    }
    wg_dispatch *d = wg_emit_source(L, "attention", b.s);
    wg_src_free(&b);
    wg_bind_value(L, d, wg_in_id(L, 0));
    wg_bind_value(L, d, wg_in_id(L, 1));
    wg_bind_value(L, d, wg_in_id(L, 2));
    if (m) wg_bind_value(L, d, wg_in_id(L, 3));
    wg_bind_value(L, d, wg_out_id(L, 0));
    return wg_grid_groups(L, d, nb * nqb);
}

const wg_lowering wg_lowerings_internal[] = {
    { "FusedElementwise", lower_fused_ew },
    { "AddLayerNormalization", lower_add_ln },
    { "Attention", lower_attention },
};
const size_t wg_lowerings_internal_count = RLX_ARRAY_LEN(wg_lowerings_internal);
