/* WGSL lowerings of the internal ops (domain "rlx", contracts in
 * src/ir/ops/internal_ops.h):
 *  - FusedElementwise: the program becomes generated WGSL, one dispatch of
 *    one invocation per output element (or one per block of the output
 *    when an operand exceeds one storage binding, wg_split.h); the dims and
 *    broadcast strides of the index arithmetic are Params words (baked
 *    into the source only when they would not fit Params), the
 *    constants Params words too (literals only where they would not fit:
 *    a shader compiler folds literals into the arithmetic, value_expr_at).
 *    Inputs are f32, or bool (one byte per element, four to a word; read
 *    as 0.0 / 1.0, as the CPU's chain does: a Where condition).
 *    Equal programs over shapes of equal structure (which inputs broadcast
 *    along which runs of dims) share one pipeline (the cache keys on the
 *    source): a new sequence length or batch of a model reuses them.
 *  - AddLayerNormalization: kernels/add_layernorm.wgsl, one workgroup per
 *    row.
 *  - Attention: generated WGSL, in lower_attention.c.
 *  - MatMulNBits: kernels/matmul_nbits.wgsl on the packed 4-bit weights
 *    (B and the zero points bound as words, f32 scales), A and Y f32 or
 *    f16; a GEMV of 4 rows (at the LLM shapes, K and block_size multiples
 *    of 32: kernels/matmul_nbits_gemv.wgsl, 16 columns a workgroup, every
 *    lane's 16 pieces of 16 bytes of B in flight at once, A staged per 1024
 *    k; gpu.nbits=gemv1 keeps the older 8 columns a workgroup with one
 *    piece a lane per step; else 8 columns, word by word), or, for 32 rows or
 *    more of A (option gpu.nbits), the weights dequantized into the f32
 *    scratch and the tiled GEMM (emit_nbits_gemm; an f16 A and Y with W in
 *    f32).
 * FusedElementwise takes f32 and f16 operands (f16 bound as array<f16>,
 * with shader-f16; the chain computes in f32, rounding only at explicit
 * Casts to f16 and at the store), bool inputs (a Where condition, read
 * as bytes) and the 8-bit operands of QDQ chains (qin, qout:
 * passes/fuse_qdq_ew.c): an 8-bit input bound as the words that hold its
 * bytes and dequantized as kernels/quant.wgsl does, an 8-bit output
 * quantized as there, one word (four outputs) per invocation; the others
 * are f32 only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_attention.h"
#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/lower_qgemm.h"
#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_split.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/options.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"

/* ------------------------------------------------------------ FusedElementwise */

/* The sizes a generated FusedElementwise kernel reads from Params (u32
 * fields after the fixed ones), or none when `bake` (then literals). */
typedef struct ew_sizes {
    bool bake;
    int n;
    char name[WG_MAX_PARAMS][12];
    uint32_t v[WG_MAX_PARAMS];
} ew_sizes;

/* Appends size v of input `in`, segment k, as a Params field <tag><in>_<k>
 * (or a literal when sz->bake; fields past WG_MAX_PARAMS are counted and
 * make the caller bake). */
static void size_expr(wg_src *b, ew_sizes *sz, char tag, int in, int k, uint64_t v) {
    if (sz->bake) {
        wg_src_printf(b, "%lluu", (unsigned long long)v);
        return;
    }
    wg_src_printf(b, "P.%c%d_%d", tag, in, k);
    if (sz->n < WG_MAX_PARAMS) {
        snprintf(sz->name[sz->n], sizeof sz->name[0], "%c%d_%d", tag, in, k);
        sz->v[sz->n] = (uint32_t)v;
    }
    sz->n++;
}

/* Appends the element index of input x (number `in`) for output index `g`
 * of y: "g" when x has y's shape, "0u" for a scalar, else the sum over x's
 * non-broadcast dims (merged where contiguous) of ((g / out_stride) % dim)
 * * in_stride, the sizes through size_expr. */
static void index_expr(wg_src *b, const rlx_value *x, const rlx_value *y, int in, ew_sizes *sz) {
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
        if (os[k] == 1 && outer) {
            wg_src_printf(b, "g");
        } else if (os[k] == 1) {
            wg_src_printf(b, "(g %% ");
            size_expr(b, sz, 'e', in, k, ex[k]);
            wg_src_printf(b, ")");
        } else {
            wg_src_printf(b, outer ? "(g / " : "((g / ");
            size_expr(b, sz, 's', in, k, os[k]);
            wg_src_printf(b, ")");
            if (!outer) {
                wg_src_printf(b, " %% ");
                size_expr(b, sz, 'e', in, k, ex[k]);
                wg_src_printf(b, ")");
            }
        }
        if (is[k] != 1) {
            wg_src_printf(b, " * ");
            size_expr(b, sz, 't', in, k, is[k]);
        }
    }
    wg_src_printf(b, ")");
}

/* An f32 value as a WGSL expression: a Params slot k<n> of its own (one
 * per use: no slot is shared, not even by equal values), so that the
 * shader compiler can neither fold it into the arithmetic around it nor
 * factor two uses of it: with literals lavapipe's turned (x * c1) * c2
 * into x * (c1 c2), x / 0.0 into 0 and a dequantization (f32(q) - z) * s
 * into other roundings; with one slot for equal values (or one register
 * for a constant read twice) it turned x1 * c + x2 * c, and two 8-bit
 * inputs of one scale s, (a - z) * s + (b - z) * s, into (x1 + x2) * c,
 * one rounding where the CPU makes three (a QDQ residual Add with the
 * output at scale 2 s, its sums ties of the rounding, came out a level
 * off; tests/python/test_qdq_ew_shared_scale.py, the tester's finding).
 * `lit`: finite values as bit-exact literals instead (the fallback for
 * programs whose slots do not fit Params; `force` keeps a value in a slot
 * even then: the 8-bit operands' scales and zero points); a slot past the
 * list's capacity: a literal, or false for a non-finite value. */
typedef struct kslots {
    float v[48];
    int n;
    bool lit;
    const char *tag; /* the slots' Params names: <tag><n> ("k" when NULL) */
} kslots;

static bool value_expr_at(char *out, size_t cap, float v, kslots *ks, bool force) {
    int cap_n = (int)(sizeof ks->v / sizeof ks->v[0]);
    if (isfinite(v) && ((ks->lit && !force) || (ks->n == cap_n && !force))) {
        uint32_t u;
        memcpy(&u, &v, 4);
        snprintf(out, cap, "bitcast<f32>(0x%08xu)", (unsigned)u);
        return true;
    }
    if (ks->n == cap_n) return false;
    ks->v[ks->n] = v;
    snprintf(out, cap, "P.%s%d", ks->tag ? ks->tag : "k", ks->n);
    ks->n++;
    return true;
}

static bool value_expr(char *out, size_t cap, float v, kslots *ks) { return value_expr_at(out, cap, v, ks, false); }

/* Register r of program p as an operand: r<r>, or a constant register's
 * own slot for this use. */
static bool operand_expr(char *out, size_t cap, const rlx_ew_prog *p, int r, kslots *ks) {
    if (r >= p->n_in && r < p->n_in + p->n_consts) return value_expr(out, cap, p->consts[r - p->n_in], ks);
    snprintf(out, cap, "r%d", r);
    return true;
}

/* Whether op's WGSL expression reads its parameter `$<c>` (a or b). */
static bool ew_uses(int op, char c) {
    const rlx_ew_info *r = rlx_ew_info_of(op);
    char pat[3] = { '$', c, 0 };
    return r && r->wgsl && strstr(r->wgsl, pat);
}

/* How a generated program reads its inputs: input i from buffer <buf><i>
 * at word offset <off><i> (Params fields), less its block window's first
 * element <base><i> (NULL: bound from element 0); input `inline_in` (or
 * none: -1) is the function argument q, the i32 level of an 8-bit value. */
typedef struct ew_names {
    const char *buf, *off, *base;
    int inline_in;
} ew_names;

typedef enum ew_gen_result { EW_GEN_OK, EW_GEN_SLOTS, EW_GEN_NO_WGSL } ew_gen_result;

/* Appends the registers of program p as WGSL statements of the output
 * index g (the flat index of y): r<i> for each input (xs[i] its value, an
 * 8-bit one dequantized as kernels/quant.wgsl does, f32(q - z) * s, a bool
 * one as 0.0 / 1.0, a float one widened to f32), then one per instruction.
 * EW_GEN_SLOTS: the constants do not fit ks (and are not literals);
 * EW_GEN_NO_WGSL: an instruction's function has no WGSL. */
static ew_gen_result ew_gen_regs(wg_src *body, const rlx_ew_prog *p, const rlx_value *const *xs, const rlx_value *y,
                                 const ew_names *nm, kslots *ks, ew_sizes *sz) {
    char ea[64], eb[64];
    for (int i = 0; i < p->n_in; i++) {
        const rlx_value *x = xs[i];
        bool q8 = p->in_scale[i] != 0, bl = !q8 && x && x->dtype == RLX_DTYPE_BOOL;
        char sc[64], zp[64];
        if (q8 && (!value_expr_at(sc, sizeof sc, p->in_scale[i], ks, true) ||
                   !value_expr_at(zp, sizeof zp, p->in_zp[i], ks, true)))
            return EW_GEN_SLOTS;
        if (i == nm->inline_in) { /* the caller's level q (an 8-bit input) */
            wg_src_printf(body, "    let r%d = (f32(q) - %s) * %s;\n", i, zp, sc);
            continue;
        }
        if (q8 || bl) { /* byte j of the bound words */
            wg_src_printf(body, "    let j%d = ", i);
            index_expr(body, x, y, i, sz);
            if (nm->base) wg_src_printf(body, " - %s%d", nm->base, i);
            wg_src_printf(body, ";\n    let u%d = (%s%d[%s%d + (j%d >> 2u)] >> ((j%d & 3u) * 8u)) & 0xffu;\n", i, nm->buf,
                          i, nm->off, i, i, i);
            if (bl) wg_src_printf(body, "    let r%d = select(0.0, 1.0, u%d != 0u);\n", i, i);
            else if (x->dtype == RLX_DTYPE_I8)
                wg_src_printf(body, "    let r%d = (f32(i32(u%d) - 256 * i32(u%d >> 7u)) - %s) * %s;\n", i, i, i, zp, sc);
            else wg_src_printf(body, "    let r%d = (f32(u%d) - %s) * %s;\n", i, i, zp, sc);
            continue;
        }
        wg_src_printf(body, "    let r%d = f32(%s%d[%s%d + (", i, nm->buf, i, nm->off, i); /* loads widen to f32 */
        index_expr(body, x, y, i, sz);
        if (nm->base) wg_src_printf(body, " - %s%d", nm->base, i);
        wg_src_printf(body, ")]);\n");
    }
    /* constant registers: a slot per use (value_expr_at), read where used */
    for (int k = 0; k < p->n_instr; k++) {
        const rlx_ew_instr *in = &p->ins[k];
        snprintf(ea, sizeof ea, "0.0"), snprintf(eb, sizeof eb, "0.0"); /* unread parameters take no slot */
        if ((ew_uses(in->op, 'a') && !value_expr(ea, sizeof ea, in->alpha, ks)) ||
            (ew_uses(in->op, 'b') && !value_expr(eb, sizeof eb, in->beta, ks)))
            return EW_GEN_SLOTS;
        char ra[64], rb[64], rc[64];
        if (!operand_expr(ra, sizeof ra, p, in->a, ks) || !operand_expr(rb, sizeof rb, p, in->b >= 0 ? in->b : in->a, ks) ||
            !operand_expr(rc, sizeof rc, p, in->c >= 0 ? in->c : in->a, ks))
            return EW_GEN_SLOTS;
        /* an explicit Cast to f16 inside the chain rounds there (ew_lib's
         * round16_, by bits: no shader-f16, nothing a compiler may fold) */
        bool rnd = in->rnd == RLX_DTYPE_F16;
        wg_src_printf(body, "    let r%d = %s", rlx_ew_reg(p, k), rnd ? "round16_(" : "");
        if (!wg_gen_ew_expr(body, in->op, ra, rb, rc, ea, eb)) return EW_GEN_NO_WGSL;
        wg_src_printf(body, "%s;\n", rnd ? ")" : "");
    }
    return EW_GEN_OK;
}

/* Appends `fn quant8(x: f32) -> u32`, p's 8-bit output level of x (type
 * ydt) as a byte, as kernels/quant.wgsl quantizes (q = x / s rounded once,
 * half to even, plus z, saturated; NaN: the type's minimum). false: the
 * slots do not fit ks. */
static bool ew_gen_quant8(wg_src *body, const rlx_ew_prog *p, rlx_dtype ydt, kslots *ks) {
    char sc[64], zp[64];
    if (!value_expr_at(sc, sizeof sc, p->out_scale, ks, true) || !value_expr_at(zp, sizeof zp, p->out_zp, ks, true))
        return false;
    float lo = ydt == RLX_DTYPE_I8 ? -128.0f : 0.0f;
    wg_src_printf(body,
                  "fn quant8(x: f32) -> u32 {\n"
                  "    let r = clamp(qround_(x, %s, %.1f - %s) + %s, %.1f, %.1f);\n"
                  "    return bitcast<u32>(i32(r)) & 0xffu;\n}\n",
                  sc, lo, zp, zp, lo, lo + 255.0f);
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
    const ew_sizes *sz;
    wg_elem elem; /* f16 when an operand is f16 (bound as array<f16>), else f32 */
    const bool *is_bool; /* per input: bool or 8-bit (qin), read as bytes */
    bool qout;           /* an 8-bit output: one word of four outputs per invocation */
} ew_emit_ctx;

static rlx_status emit_ew_block(wg_lower *L, const wg_block *blk, void *vctx) {
    const ew_emit_ctx *c = vctx;
    wg_dispatch *d = wg_emit_source(L, "fused_elementwise", c->src);
    d->elem = c->elem;
    /* a bool window is bound as the words that hold its bytes; P.b<i> is
     * then the element at the first bound byte */
    uint64_t first[WG_SPLIT_MAX_OPS];
    for (int i = 0; i < c->n_in; i++) {
        uint64_t lo = blk->lo[i], n = blk->n[i];
        if (c->is_bool[i]) {
            uint64_t w0 = lo / 4, w1 = (lo + n + 3) / 4;
            wg_bind(L, d, wg_keep(L, "o%d", i), wg_in_id(L, i), w0, w1 - w0);
            first[i] = w0 * 4;
        } else {
            wg_bind(L, d, wg_keep(L, "o%d", i), wg_in_id(L, i), lo, n);
            first[i] = lo;
        }
    }
    /* an 8-bit output: one block from element 0 (lower_fused_ew), its words */
    if (c->qout) wg_bind(L, d, "oy", wg_out_id(L, 0), 0, (blk->numel + 3) / 4);
    else wg_bind(L, d, "oy", wg_out_id(L, 0), blk->lo[c->n_in], blk->n[c->n_in]);
    WG_P(L, d, wg_pu("n", blk->numel), wg_pu("i0", blk->base[c->n_in]));
    for (int i = 0; i < c->n_in; i++) wg_p_u32(L, d, wg_keep(L, "b%d", i), (uint32_t)first[i]);
    for (int k = 0; k < c->ks->n; k++) wg_p_f32(L, d, wg_keep(L, "k%d", k), c->ks->v[k]);
    for (int k = 0; !c->sz->bake && k < c->sz->n; k++) wg_p_u32(L, d, wg_keep(L, "%s", c->sz->name[k]), c->sz->v[k]);
    return wg_grid_1d(L, d, c->qout ? (blk->numel + 3) / 4 : blk->numel);
}

static rlx_status lower_fused_ew(wg_lower *L) {
    rlx_ew_prog p;
    if (rlx_ew_prog_read(L->n, &p) != RLX_OK) return wg_decline(L, "malformed program");
    bool qout = p.out_scale != 0, q8 = qout;
    for (int i = 0; i < p.n_in; i++) q8 = q8 || p.in_scale[i] != 0;
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16 | WG_BOOL | (q8 ? WG_Q8 : 0), 1));
    const rlx_value *y = wg_out(L, 0);
    if (!y || y->dtype == RLX_DTYPE_BOOL) return wg_decline(L, "output must be f32, f16 or (qout) 8-bit");
    if (qout != (y->dtype == RLX_DTYPE_U8 || y->dtype == RLX_DTYPE_I8))
        return wg_decline(L, "qout and the output's dtype %s disagree", rlx_dtype_name(y->dtype));
    bool is_bool[WG_SPLIT_MAX_OPS] = { false }, is_q8[WG_SPLIT_MAX_OPS] = { false };
    for (int i = 0; i < L->n->n_in && i < WG_SPLIT_MAX_OPS; i++) {
        const rlx_value *x = wg_in(L, i);
        if (!x) return wg_decline(L, "input %d is missing", i);
        is_q8[i] = p.in_scale[i] != 0;
        if (is_q8[i] != (x->dtype == RLX_DTYPE_U8 || x->dtype == RLX_DTYPE_I8))
            return wg_decline(L, "qin of input %d and its dtype %s disagree", i, rlx_dtype_name(x->dtype));
        is_bool[i] = x->dtype == RLX_DTYPE_BOOL || is_q8[i];
    }
    /* the 8-bit output's words are written whole by one invocation each:
     * one block (every operand within one binding) */
    if (q8)
        for (int i = 0; i <= p.n_in && i < WG_SPLIT_MAX_OPS; i++) {
            const rlx_value *x = i < p.n_in ? wg_in(L, i) : y;
            if (wg_numel(x) * 4 > L->caps->max_binding) /* (as if 4 bytes each: the block split's measure) */
                return wg_decline(L, "an 8-bit chain with an operand larger than one storage binding");
        }
    for (int k = 0; k < p.n_instr; k++)
        if (p.ins[k].rnd && p.ins[k].rnd != RLX_DTYPE_F16) return wg_decline(L, "bf16 rounding");
    bool any16 = y->dtype == RLX_DTYPE_F16;
    for (int i = 0; i < p.n_in; i++) any16 = any16 || wg_in(L, i)->dtype == RLX_DTYPE_F16;
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
    ew_sizes sz = { .bake = false };
    wg_src b = { 0 };
    /* the body first (it decides the Params slots), the header after;
     * again with the sizes baked when they do not fit Params */
    wg_src body = { 0 };
again:
    ks.n = 0; /* (ks.lit: set below when the slots do not fit Params) */
    sz.n = 0;
    wg_src_free(&body);
    /* g: the output index in the whole tensor (blocks start at P.i0); an
     * input's index minus its window's first element P.b<k> */
    if (!qout) wg_src_printf(&body, "    let g = P.i0 + i;\n");
    const rlx_value *xs[RLX_EW_MAX_IN];
    for (int i = 0; i < p.n_in; i++) xs[i] = wg_in(L, i);
    ew_names nm = { "X", "P.o", "P.b", -1 };
    switch (ew_gen_regs(&body, &p, xs, y, &nm, &ks, &sz)) {
    case EW_GEN_SLOTS: goto too_many;
    case EW_GEN_NO_WGSL: wg_src_free(&body); return wg_decline(L, "an op has no WGSL");
    default: break;
    }
    /* one rounding to the output's type, at the store; an 8-bit output:
     * the chain is a function of g, four outputs quantized into one word
     * as quant.wgsl does (q = x / s rounded once, half to even, plus z,
     * saturated; NaN: the type's minimum) */
    if (qout) {
        wg_src_printf(&body, "    return r%d;\n}\n\n", rlx_ew_reg(&p, p.n_instr - 1));
        if (!ew_gen_quant8(&body, &p, y->dtype, &ks)) goto too_many;
    } else {
        wg_src_printf(&body, "    Y[P.oy + i] = %s(r%d);\n}\n", y->dtype == RLX_DTYPE_F16 ? "f16" : "f32",
                      rlx_ew_reg(&p, p.n_instr - 1));
    }
    if (!sz.bake && 2 * p.n_in + 3 + ks.n + sz.n > WG_MAX_PARAMS) {
        sz.bake = true;
        goto again;
    }
    if (!ks.lit && 2 * p.n_in + 3 + ks.n > WG_MAX_PARAMS) { /* the constants as literals after all */
        ks.lit = true;
        goto again;
    }
    /* header: Params, bindings, the library */
    wg_src_printf(&b, "// Generated: rlx.FusedElementwise of %d instructions (lower_internal.c)%s.\n", p.n_instr,
                  sz.bake ? ", sizes baked" : "");
    if (any16) wg_src_printf(&b, "//!elem f32 f16\n");
    /* the audit (README.md, "Runtime checks"): i < n (the block's
     * outputs, contiguous from P.i0); input k read at its broadcast index
     * of output g less P.b<k>, inside the block's window of it
     * (wg_split_strided with the same strides); a bool input's word j / 4
     * inside the words that hold the window's bytes */
    wg_src_printf(&b, "//!audited i < n; each input at its broadcast index less the first of its block window\n");
    if (qout) wg_src_printf(&b, "//!audited 8-bit output: word i < ceil(n / 4) of the one block, elements e < n\n");
    wg_src_printf(&b, "//!params");
    int words = 0;
    for (int i = 0; i < p.n_in; i++, words++) wg_src_printf(&b, " o%d: u32,", i);
    wg_src_printf(&b, " oy: u32, n: u32, i0: u32,");
    words += 3;
    for (int i = 0; i < p.n_in; i++, words++) wg_src_printf(&b, " b%d: u32,", i);
    for (int k = 0; k < ks.n; k++, words++) wg_src_printf(&b, " k%d: f32,", k);
    for (int k = 0; !sz.bake && k < sz.n; k++, words++) wg_src_printf(&b, " %s: u32,", sz.name[k]);
    wg_src_printf(&b, "\n"); /* the struct and its binding 0 come from //!params */
    for (int i = 0; i < p.n_in; i++)
        wg_src_printf(&b, "@group(0) @binding(%d) var<storage, read_write> X%d: array<%s>;\n", i + 1, i,
                      is_bool[i] ? "u32" : wg_in(L, i)->dtype == RLX_DTYPE_F16 ? "f16" : "f32");
    wg_src_printf(&b, "@group(0) @binding(%d) var<storage, read_write> Y: array<%s>;\n", p.n_in + 1,
                  qout ? "u32" : y->dtype == RLX_DTYPE_F16 ? "f16" : "f32");
    wg_src_printf(&b, "%s\n", wg_wgsl_source("ew_lib") ? wg_wgsl_source("ew_lib") : "");
    if (qout) {
        wg_src_printf(&b, "fn chain(g: u32) -> f32 {\n%s\n", body.s ? body.s : "");
        wg_src_printf(&b,
                      "@compute @workgroup_size(64)\n"
                      "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
                      "    let i = gid.x + gid.y * nwg.x * 64u;\n"
                      "    if (i >= (P.n + 3u) / 4u) { return; }\n"
                      "    var w = 0u;\n"
                      "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
                      "        let e = 4u * i + j;\n"
                      "        if (e >= P.n) { break; }\n"
                      "        w = w | (quant8(chain(P.i0 + e)) << (8u * j));\n"
                      "    }\n"
                      "    Y[P.oy + i] = w;\n}\n");
    } else {
        wg_src_printf(&b,
                      "@compute @workgroup_size(64)\n"
                      "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
                      "    let i = gid.x + gid.y * nwg.x * 64u;\n"
                      "    if (i >= P.n) { return; }\n");
        wg_src_printf(&b, "%s", body.s ? body.s : "");
    }
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
        rlx_broadcast_strides(x->dims, x->rank, y->rank, sp.str[i]);
    }
    for (int dd = 0; dd < y->rank; dd++) sp.dims[dd] = (uint64_t)y->dims[dd];
    ew_emit_ctx ec = { b.s, p.n_in, &ks, &sz, any16 ? WG_ELEM_F16 : WG_ELEM_F32, is_bool, qout };
    rlx_status st = wg_split_strided(L, &sp, emit_ew_block, &ec);
    wg_src_free(&b);
    return st;
too_many:
    wg_src_free(&body);
    return wg_decline(L, "too many constants for one dispatch's Params");
}

/* ------------------------------------------------------------ a QLinearConv's or QLinearMatMul's QDQ chain */

rlx_status wg_qepi_make(wg_lower *L, uint32_t used_words, uint32_t used_binds, wg_qepi *e) {
    memset(e, 0, sizeof *e);
    rlx_ew_prog p;
    if (rlx_ew_prog_read_at(L->n, RLX_QEPI_PREFIX, RLX_QEPI_FIRST, &p) != RLX_OK || p.out_scale == 0)
        return wg_decline(L, "malformed QDQ chain");
    const rlx_value *y = wg_out(L, 0), *xs[RLX_EW_MAX_IN];
    int slot = -1;
    for (int i = 0; i < p.n_in; i++) {
        const rlx_value *x = xs[i] = wg_in(L, RLX_QEPI_FIRST + i);
        if (!x) {
            slot = i;
            continue;
        }
        bool q8 = p.in_scale[i] != 0;
        if (q8 ? x->dtype != RLX_DTYPE_U8 && x->dtype != RLX_DTYPE_I8 : x->dtype != RLX_DTYPE_F32)
            return wg_decline(L, "QDQ chain input %d of dtype %s", i, rlx_dtype_name(x->dtype));
        if (!rlx_value_is_static(x) || wg_numel(x) * 4 > L->caps->max_binding)
            return wg_decline(L, "QDQ chain input %d larger than one storage binding", i);
        e->bind_val[e->n_bind] = wg_in_id(L, RLX_QEPI_FIRST + i);
        e->bind_elems[e->n_bind] = q8 ? (wg_numel(x) + 3) / 4 : wg_numel(x);
        e->bind_in[e->n_bind++] = i;
    }
    for (int k = 0; k < p.n_instr; k++)
        if (p.ins[k].rnd && p.ins[k].rnd != RLX_DTYPE_F16) return wg_decline(L, "bf16 rounding");
    uint32_t binds = used_binds + (uint32_t)e->n_bind;
    if (slot < 0 || !y || binds > WG_MAX_BINDINGS ||
        (L->caps->max_storage_per_stage && binds > L->caps->max_storage_per_stage))
        return wg_decline(L, "QDQ chain with %d more inputs than one dispatch binds", e->n_bind);
    kslots ks = { .n = 0, .tag = "ek" };
    ew_sizes sz = { .bake = true };
    ew_names nm = { "EX", "P.eo", NULL, slot };
    wg_src body = { 0 };
    for (;;) { /* constants in Params slots, else (too many) as literals */
        ks.n = 0;
        wg_src_free(&body);
        wg_src_printf(&body, "fn qepi(g: u32, q: i32) -> u32 {\n");
        ew_gen_result r = ew_gen_regs(&body, &p, xs, y, &nm, &ks, &sz);
        if (r == EW_GEN_NO_WGSL) {
            wg_src_free(&body);
            return wg_decline(L, "a QDQ chain op without WGSL");
        }
        wg_src_printf(&body, "    return quant8(r%d);\n}\n", rlx_ew_reg(&p, p.n_instr - 1));
        if (r == EW_GEN_OK && ew_gen_quant8(&body, &p, y->dtype, &ks) &&
            used_words + (uint32_t)e->n_bind + (uint32_t)ks.n <= WG_MAX_PARAMS)
            break;
        if (ks.lit) {
            wg_src_free(&body);
            return wg_decline(L, "QDQ chain's constants do not fit one dispatch's Params");
        }
        ks.lit = true;
    }
    wg_src b = { 0 };
    wg_src_printf(&b, "// The QDQ chain of this QLinearConv or QLinearMatMul (ir/ops/internal_ops.h), generated by\n"
                      "// lower_internal.c (wg_qepi_make) in place of kernels/qepi.wgsl: qepi(g, q) is the chain's output\n"
                      "// byte at y's flat index g where the product's level is q.\n"
                      "//!audited the chain's inputs read at their broadcast index of y's element g < its size\n");
    if (e->n_bind || ks.n) {
        wg_src_printf(&b, "//!params");
        for (int j = 0; j < e->n_bind; j++) wg_src_printf(&b, " eo%d: u32,", e->bind_in[j]);
        for (int k = 0; k < ks.n; k++) wg_src_printf(&b, " ek%d: f32,", k);
        wg_src_printf(&b, "\n");
    }
    for (int j = 0; j < e->n_bind; j++)
        wg_src_printf(&b, "//!bind EX%d: array<%s>\n", e->bind_in[j],
                      xs[e->bind_in[j]]->dtype == RLX_DTYPE_F32 ? "f32" : "u32");
    const char *lib = wg_wgsl_source("ew_lib");
    wg_src_printf(&b, "%s\n%s", lib ? lib : "", body.s ? body.s : "");
    bool oom = body.oom || b.oom;
    wg_src_free(&body);
    if (oom) {
        wg_src_free(&b);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory generating its QDQ chain", rlx_node_desc(L->n));
    }
    e->src = wg_src_take(&b);
    e->n_k = ks.n;
    memcpy(e->k, ks.v, sizeof(float) * (size_t)ks.n);
    return RLX_OK;
}

char *wg_qepi_source(const wg_qepi *e, const char *src) {
    static const char inc[] = "//!include qepi\n";
    const char *at = src ? strstr(src, inc) : NULL;
    if (!at) return NULL;
    wg_src b = { 0 };
    wg_src_printf(&b, "%.*s%s%s", (int)(at - src), src, e->src, at + sizeof inc - 1);
    return wg_src_take(&b);
}

void wg_qepi_write(wg_lower *L, wg_dispatch *d, const wg_qepi *e) {
    for (int j = 0; j < e->n_bind; j++) {
        const char *name = wg_keep(L, "eo%d", e->bind_in[j]);
        wg_bind(L, d, name, e->bind_val[j], 0, e->bind_elems[j]);
    }
    for (int k = 0; k < e->n_k; k++) wg_p_f32(L, d, wg_keep(L, "ek%d", k), e->k[k]);
}

void wg_qepi_free(wg_qepi *e) {
    free(e->src);
    memset(e, 0, sizeof *e);
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
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16, 1));
    for (int i = 1; i < L->n->n_in; i++)
        if (wg_in(L, i) && wg_in(L, i)->dtype != wg_in(L, 0)->dtype) return wg_decline(L, "mixed dtypes");
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *sc = wg_in(L, 2), *bi = wg_in(L, 3), *y = wg_out(L, 0);
    int ax;
    if (a->rank < 1 || !rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), a->rank, &ax)) return wg_decline(L, "axis");
    uint64_t total = wg_numel(a), len = 1;
    for (int i = ax; i < a->rank; i++) len *= (uint64_t)a->dims[i];
    uint64_t rows = len ? total / len : 0, bn = wg_numel(b), sn = wg_numel(sc), cn = bi ? wg_numel(bi) : 0;
    if (!suffix_of(b, a) || !suffix_of(sc, a) || (bi && !suffix_of(bi, a)) || sn > len || cn > len ||
        wg_numel(y) != total)
        return wg_decline(L, "operand shapes");
    if (total == 0) return RLX_OK;
    if (total >= ((uint64_t)1 << 31) || bn == 0 || sn == 0 || (bi && cn == 0)) return wg_decline(L, "sizes");
    wg_dispatch *d = wg_emit(L, "add_layernorm");
    d->elem = wg_elem_of(wg_in(L, 0)->dtype); /* f32, or f16 (f32 statistics) */
    wg_bind_value(L, d, "a_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "b_off", wg_in_id(L, 1));
    wg_bind_value(L, d, "s_off", wg_in_id(L, 2));
    if (bi) wg_bind_value(L, d, "c_off", wg_in_id(L, 3));
    else wg_bind(L, d, "c_off", wg_in_id(L, 2), 0, 1); /* unused placeholder */
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("rows", rows), wg_pu("len", len), wg_pu("b_n", bn), wg_pu("s_n", sn), wg_pu("c_n", cn),
         wg_pf("eps", rlx_param_float(L->n, RLX_A_epsilon)));
    return wg_grid_groups(L, d, rows);
}

/* ------------------------------------------------------------ MatMulNBits */

/* Rows of A from which MatMulNBits dequantizes its weights and runs
 * the tiled GEMM (option gpu.nbits=auto); below, the GEMV kernel reads the
 * packed weights once per 4 rows. */
#define NBITS_GEMM_ROWS 32

/* The weights dequantized into the scratch as W [kp, N] f32 (kp = n_blocks
 * x block_size, matmul_nbits.wgsl's DEQ: n fastest, as a MatMul's weight),
 * then Y = A W by the tiled GEMM (B's vec4 loads along n). */
static rlx_status emit_nbits_gemm(wg_lower *L, const rlx_nbits_geom *g, uint64_t M, int z) {
    uint64_t col_words = g->nb * g->bs / 8, kp = col_words * 8, words = g->N * col_words;
    wg_scratch(L, g->N * kp);
    wg_dispatch *d = wg_emit(L, "matmul_nbits");
    d->elem = WG_ELEM_F32;
    wg_spec(L, d, "HAS_ZP", z >= 0);
    wg_spec(L, d, "DEQ", true);
    wg_bind_value4(L, d, "a_off", wg_in_id(L, 0)); /* not read */
    wg_bind_value4(L, d, "b_off", wg_in_id(L, 1));
    wg_bind_value(L, d, "s_off", wg_in_id(L, 2));
    wg_bind_or(L, d, "z_off", z, wg_in_id(L, 1));
    wg_bind(L, d, "y_off", WG_SCRATCH, 0, g->N * kp);
    WG_P(L, d, wg_pu("M", M), wg_pu("N", g->N), wg_pu("K", g->K), wg_pu("nb", g->nb), wg_pu("bs", g->bs),
         wg_pu("col_words", col_words), wg_pu("zrow", g->zrow), wg_pu("tiles_n", 0));
    RLX_TRY(wg_grid_groups(L, d, (words + 255) / 256));
    wg_gemm m;
    wg_gemm_init(&m, M, (uint64_t)g->N, (uint64_t)g->K);
    m.a = wg_in_id(L, 0);
    m.a_n = M * (uint64_t)g->K;
    m.b = WG_SCRATCH;
    m.b_n = g->N * kp;
    m.y = wg_out_id(L, 0);
    m.y_n = M * (uint64_t)g->N;
    m.b_f32 = true;                       /* W as the CPU reference rounds it, also for an f16 A */
    m.part_off = (g->N * kp + 63) / 64 * 64; /* split-K's partial sums after W */
    m.splitk_ok = true;
    return wg_emit_gemm(L, &m);
}

static rlx_status lower_matmul_nbits(wg_lower *L) {
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *s = wg_in(L, 2), *z = L->n->n_in > 3 ? wg_in(L, 3) : NULL;
    const rlx_value *y = wg_out(L, 0);
    if (!wg_value_held(L, a, WG_F32 | WG_F16) || !y || y->dtype != a->dtype || !rlx_value_is_static(y))
        return wg_decline(L, "A and Y must be static f32 or f16 (f16 with shader-f16)");
    if (!wg_value_ok(b, WG_Q8) || b->dtype != RLX_DTYPE_U8 || !wg_value_ok(s, WG_F32) ||
        (z && (!wg_value_ok(z, WG_Q8) || z->dtype != RLX_DTYPE_U8)))
        return wg_decline(L, "B and zero points must be uint8, scales f32");
    rlx_nbits_geom g;
    if (rlx_nbits_geom_of(L->n, &g)) return wg_decline(L, "attributes");
    if (rlx_nbits_check_inputs(L->n, &g, b->dtype, wg_numel(b), s->dtype, wg_numel(s), z != NULL,
                               z ? z->dtype : RLX_DTYPE_U8, z ? wg_numel(z) : 0))
        return wg_decline(L, "input sizes");
    uint64_t total = wg_numel(a), M = total / (uint64_t)g.K;
    if (M == 0) return RLX_OK;
    if (total >= ((uint64_t)1 << 31) || wg_numel(y) >= ((uint64_t)1 << 31) || wg_numel(b) >= ((uint64_t)1 << 33))
        return wg_decline(L, "too large for 32-bit indexing");
    int zid = z ? wg_in_id(L, 3) : -1;
    const char *opt = L->caps->cfg && L->caps->cfg->gpu_nbits ? L->caps->cfg->gpu_nbits : "auto";
    uint64_t kp = (uint64_t)g.nb * g.bs;
    bool gemm = !strcmp(opt, "gemm") || (!strcmp(opt, "auto") && M >= NBITS_GEMM_ROWS);
    if (gemm && wg_window_fits(L, (uint64_t)g.N * kp) && (uint64_t)g.N * kp < ((uint64_t)1 << 31))
        return emit_nbits_gemm(L, &g, M, zid);
    bool vec = L->caps->cfg->gemm_vec4 && g.K % 32 == 0 && g.bs % 32 == 0;
    /* matmul_nbits_gemv.wgsl: 16 columns a workgroup, all of a lane's
     * pieces in flight at once (gpu.nbits=gemv_direct: A read from the
     * caches instead of staged); gpu.nbits=gemv1 keeps matmul_nbits.wgsl's
     * VEC path (A staged per step of 1024 k, 8 columns a workgroup) */
    bool gemv2 = vec && strcmp(opt, "gemv1") != 0;
    uint64_t tiles_n = ((uint64_t)g.N + (gemv2 ? 15 : 7)) / (gemv2 ? 16 : 8), tiles_m = (M + 3) / 4;
    wg_dispatch *d = wg_emit(L, gemv2 ? "matmul_nbits_gemv" : "matmul_nbits");
    d->elem = wg_elem_of(a->dtype);
    wg_spec(L, d, "HAS_ZP", z != NULL);
    if (gemv2) {
        wg_spec(L, d, "ROWS", (double)(M < 4 ? M : 4));
        wg_spec(L, d, "STAGE", strcmp(opt, "gemv_direct") != 0); /* A through workgroup memory */
    } else
        wg_spec(L, d, "VEC", vec);
    wg_bind_value4(L, d, "a_off", wg_in_id(L, 0));
    wg_bind_value4(L, d, "b_off", wg_in_id(L, 1));
    wg_bind_value(L, d, "s_off", wg_in_id(L, 2));
    wg_bind_or(L, d, "z_off", zid, wg_in_id(L, 1));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("M", M), wg_pu("N", g.N), wg_pu("K", g.K), wg_pu("nb", g.nb), wg_pu("bs", g.bs),
         wg_pu("col_words", g.nb * g.bs / 8), wg_pu("zrow", g.zrow), wg_pu("tiles_n", tiles_n));
    return wg_grid_groups(L, d, tiles_n * tiles_m);
}

const wg_lower_fn wg_lowerings_internal[RLX_OP_COUNT] = {
    [RLX_OP_rlx_FusedElementwise] = lower_fused_ew,
    [RLX_OP_rlx_AddLayerNormalization] = lower_add_ln,
    [RLX_OP_rlx_Attention] = wg_lower_attention,
    [RLX_OP_rlx_MatMulNBits] = lower_matmul_nbits,
};
