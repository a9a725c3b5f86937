/* WGSL generation helpers (see wgsl_gen.h). */
#include "backend/webgpu/wgsl_gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/wgsl_sources.h"
#include "base/half.h"
#include "ir/ops/internal_ops.h"

void wg_src_printf(wg_src *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = b->s ? vsnprintf(b->s + b->n, room, fmt, ap) : -1;
        va_end(ap);
        if (b->s && w >= 0 && (size_t)w < room) {
            b->n += (size_t)w;
            return;
        }
        size_t need = b->n + (w > 0 ? (size_t)w : 256) + 1, cap = b->cap ? b->cap : 1024;
        while (cap < need) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        if (!b->s) s[0] = 0;
        b->s = s;
        b->cap = cap;
    }
}

void wg_src_free(wg_src *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

void wg_src_f32(wg_src *b, float v) { wg_src_printf(b, "bitcast<f32>(0x%08xu)", (unsigned)rlx_f32_bits(v)); }

const char *wg_wgsl_source(const char *name) {
    for (size_t i = 0; i < rlx_wgsl_source_count; i++)
        if (rlx_wgsl_sources[i].name && strcmp(rlx_wgsl_sources[i].name, name) == 0) return rlx_wgsl_sources[i].source;
    return NULL;
}

bool wg_gen_ew_expr(wg_src *b, int op, const char *a, const char *bb, const char *c, const char *al,
                    const char *be) {
    switch ((rlx_ew_op)op) {
    case RLX_EW_COPY: wg_src_printf(b, "(%s)", a); return true;
    case RLX_EW_NEG: wg_src_printf(b, "(-%s)", a); return true;
    case RLX_EW_ABS: wg_src_printf(b, "abs(%s)", a); return true;
    case RLX_EW_EXP: wg_src_printf(b, "exp(%s)", a); return true;
    case RLX_EW_LOG: wg_src_printf(b, "log_(%s)", a); return true;
    case RLX_EW_SQRT: wg_src_printf(b, "sqrt(%s)", a); return true;
    case RLX_EW_RECIP: wg_src_printf(b, "(1.0 / %s)", a); return true;
    case RLX_EW_FLOOR: wg_src_printf(b, "floor(%s)", a); return true;
    case RLX_EW_CEIL: wg_src_printf(b, "ceil(%s)", a); return true;
    case RLX_EW_ROUND: wg_src_printf(b, "round(%s)", a); return true;
    case RLX_EW_ERF: wg_src_printf(b, "erf_(%s)", a); return true;
    case RLX_EW_SIN: wg_src_printf(b, "sin_(%s)", a); return true;
    case RLX_EW_COS: wg_src_printf(b, "cos(%s)", a); return true;
    case RLX_EW_TANH: wg_src_printf(b, "tanh_(%s)", a); return true;
    case RLX_EW_SIGMOID: wg_src_printf(b, "(1.0 / (1.0 + exp(-%s)))", a); return true;
    case RLX_EW_RELU: wg_src_printf(b, "max(%s, 0.0)", a); return true;
    case RLX_EW_LEAKYRELU: wg_src_printf(b, "select(%s * %s, %s, %s >= 0.0)", al, a, a, a); return true;
    case RLX_EW_ELU: wg_src_printf(b, "select(%s * expm1_(%s), %s, %s >= 0.0)", al, a, a, a); return true;
    case RLX_EW_HARDSIGMOID: wg_src_printf(b, "max(0.0, min(1.0, %s * %s + %s))", al, a, be); return true;
    case RLX_EW_HARDSWISH: wg_src_printf(b, "(%s * max(0.0, min(1.0, %s / 6.0 + 0.5)))", a, a); return true;
    case RLX_EW_SOFTPLUS: wg_src_printf(b, "softplus_(%s)", a); return true;
    case RLX_EW_SOFTSIGN: wg_src_printf(b, "(%s / (1.0 + abs(%s)))", a, a); return true;
    case RLX_EW_GELU: wg_src_printf(b, "gelu_(%s)", a); return true;
    case RLX_EW_GELU_TANH: /* 0.5 (1 + tanh y) = 1 / (1 + e^-2y) */
        wg_src_printf(b, "(%s / (1.0 + exp(-1.5957691216057308 * (%s + 0.044715 * %s * %s * %s))))", a, a, a, a, a);
        return true;
    case RLX_EW_SIGN: wg_src_printf(b, "sign(%s)", a); return true;
    case RLX_EW_CLIP: wg_src_printf(b, "min(max(%s, %s), %s)", a, al, be); return true;
    case RLX_EW_ADD: wg_src_printf(b, "(%s + %s)", a, bb); return true;
    case RLX_EW_SUB: wg_src_printf(b, "(%s - %s)", a, bb); return true;
    case RLX_EW_MUL: wg_src_printf(b, "(%s * %s)", a, bb); return true;
    case RLX_EW_DIV: wg_src_printf(b, "(%s / %s)", a, bb); return true;
    case RLX_EW_POW: wg_src_printf(b, "pow_(%s, %s)", a, bb); return true;
    case RLX_EW_MAX: wg_src_printf(b, "max(%s, %s)", a, bb); return true;
    case RLX_EW_MIN: wg_src_printf(b, "min(%s, %s)", a, bb); return true;
    case RLX_EW_PRELU: wg_src_printf(b, "select(%s, %s * %s, %s < 0.0)", a, a, bb, a); return true;
    case RLX_EW_WHERE: wg_src_printf(b, "select(%s, %s, %s != 0.0)", bb, a, c); return true;
    case RLX_EW_OP_COUNT: break;
    }
    return false;
}

bool wg_gen_act_fn(wg_src *b, const rlx_act *a, const char *alpha, const char *beta) {
    int op;
    switch (a->kind) {
    case RLX_ACT_RELU: op = RLX_EW_RELU; break;
    case RLX_ACT_CLIP: op = RLX_EW_CLIP; break;
    case RLX_ACT_HARDSIGMOID: op = RLX_EW_HARDSIGMOID; break;
    case RLX_ACT_HARDSWISH: op = RLX_EW_HARDSWISH; break;
    case RLX_ACT_SIGMOID: op = RLX_EW_SIGMOID; break;
    case RLX_ACT_GELU: op = RLX_EW_GELU; break;
    case RLX_ACT_GELU_TANH: op = RLX_EW_GELU_TANH; break;
    case RLX_ACT_LEAKYRELU: op = RLX_EW_LEAKYRELU; break;
    case RLX_ACT_TANH: op = RLX_EW_TANH; break;
    case RLX_ACT_SILU:
        wg_src_printf(b, "fn rlx_act(x: f32) -> f32 { return x / (1.0 + exp(-x)); }\n");
        return true;
    default: return false;
    }
    wg_src_printf(b, "fn rlx_act(x: f32) -> f32 { return ");
    wg_gen_ew_expr(b, op, "x", "x", "x", alpha, beta);
    wg_src_printf(b, "; }\n");
    return true;
}

rlx_status wg_emit_act_epilogue(wg_lower *L, int value, uint64_t off, uint64_t n, const rlx_act *a) {
    wg_src b = { 0 };
    wg_src_printf(&b,
                  "// Fused activation epilogue (ir/ops/act.h): y = act(y) in place, one invocation per\n"
                  "// element. Params: y_off, n, act_alpha, act_beta.\n"
                  "struct Params { y_off: u32, n: u32, act_alpha: f32, act_beta: f32 };\n"
                  "@group(0) @binding(0) var<uniform> P: Params;\n"
                  "@group(0) @binding(1) var<storage, read_write> Y: array<f32>;\n");
    const char *lib = wg_wgsl_source("ew_lib");
    if (!lib) {
        wg_src_free(&b);
        return rlx_fail(RLX_ERR_INTERNAL, "WGSL library ew_lib is not embedded");
    }
    wg_src_printf(&b, "%s\n", lib);
    if (!wg_gen_act_fn(&b, a, "P.act_alpha", "P.act_beta")) {
        wg_src_free(&b);
        return wg_decline(L, "fused activation %d has no WGSL epilogue", (int)a->kind);
    }
    wg_src_printf(&b,
                  "@compute @workgroup_size(64)\n"
                  "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let i = gid.x + gid.y * nwg.x * 64u;\n"
                  "    if (i >= P.n) { return; }\n"
                  "    Y[P.y_off + i] = rlx_act(Y[P.y_off + i]);\n"
                  "}\n");
    if (b.oom) {
        wg_src_free(&b);
        L->broken = true;
        return RLX_OK;
    }
    /* blocks whose window fits one storage binding (a multiple of 64
     * elements; one block when the output fits) */
    uint64_t blk = wg_max_window(L) & ~(uint64_t)63;
    if (blk == 0) {
        wg_src_free(&b);
        return wg_decline(L, "storage bindings too small for the activation epilogue");
    }
    rlx_status st = RLX_OK;
    for (uint64_t o = 0; o < n && st == RLX_OK; o += blk) {
        uint64_t c = n - o < blk ? n - o : blk;
        wg_dispatch *d = wg_emit_source(L, "act_epilogue", b.s);
        wg_bind(L, d, value, off + o, c);
        wg_p_u32(L, d, (uint32_t)c);
        wg_p_f32(L, d, a->alpha);
        wg_p_f32(L, d, a->beta);
        st = wg_grid_1d(L, d, c);
    }
    wg_src_free(&b);
    return st;
}
