/* WGSL generated at compile time: a string builder, the f32 expressions
 * of the elementwise vocabulary (src/ir/ew.h: unary.wgsl, binary.wgsl and
 * the epilogues through the "act" snippet, FusedElementwise programs and
 * the generic epilogue directly), and the shared fused-activation epilogue
 * (src/ir/ops/act.h).
 *
 * Generated kernels follow the conventions of embedded ones (README.md):
 * binding 0 is the Params uniform, which starts with one u32 element offset
 * per storage binding; entry point main. They paste the helper functions of
 * kernels/ew_lib.wgsl (wg_wgsl_lib) in front of their code. */
#ifndef RLX_BACKEND_WEBGPU_WGSL_GEN_H
#define RLX_BACKEND_WEBGPU_WGSL_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/webgpu/webgpu.h"
#include "ir/ops/act.h"

/* A growing NUL-terminated string; `oom` records a failed allocation
 * (the text is then incomplete and must not be used). */
typedef struct wg_src {
    char *s;
    size_t n, cap;
    bool oom;
} wg_src;

void wg_src_printf(wg_src *b, const char *fmt, ...) RLX_PRINTF(2, 3);
void wg_src_free(wg_src *b);

/* The finished text, which the caller frees; NULL (b freed) when an
 * allocation failed. */
char *wg_src_take(wg_src *b);

/* The embedded WGSL of kernels/<name>.wgsl, or NULL; "act" is generated
 * (once per process) from the elementwise vocabulary: ew_lib.wgsl, a
 * constant EW_<ID> per function, ew_apply(op: u32, x, y, alpha, beta) over
 * every function of one or two operands, and act_apply(kind: u32, x,
 * alpha, beta) over the functions whose row has RLX_EW_ACT (the fused
 * activations; kept small because epilogues inline it per output). Kernels paste it with
 * "//!include act" (or by hand, generators) and pass op / kind as a
 * constant or override, so the switch folds to the one expression. */
const char *wg_wgsl_source(const char *name);

/* Appends the f32 WGSL expression of vocabulary function `op` (rlx_ew_fn,
 * the WGSL column of src/ir/ew_funcs.h) on operand expressions x, y, c (c:
 * a Where condition, as an f32 != 0) and parameter expressions alpha,
 * beta. Returns false for a function without WGSL. This is the only
 * source of the GPU's elementwise math. */
bool wg_gen_ew_expr(wg_src *b, int op, const char *x, const char *y, const char *c, const char *alpha,
                    const char *beta);

/* Appends `fn rlx_act(x: f32) -> f32` computing activation `a` (any
 * one-operand function with WGSL) with its
 * parameters read from the expressions alpha_expr and beta_expr (e.g.
 * "P.act_alpha"; they may be non-finite, so they come from Params, not
 * literals). This is the shared epilogue: a kernel that applies a node's
 * fused activation itself pastes it (after ew_lib) and calls it on each
 * finished element, then sets L->act_done. Returns false for RLX_ACT_NONE
 * or a kind without WGSL. */
bool wg_gen_act_fn(wg_src *b, const rlx_act *a, const char *alpha_expr, const char *beta_expr);

/* Emits the generic epilogue: y[off + i] = act(y[off + i]) for i < n, in
 * place on value `value` (kernel "act_epilogue"): one dispatch, or one per
 * block of elements whose window fits one storage binding (all blocks
 * share one pipeline). Declines for an activation it cannot express. */
rlx_status wg_emit_act_epilogue(wg_lower *L, int value, uint64_t off, uint64_t n, const rlx_act *a);

/* The depthwise convolution of kernels/dwconv.wgsl written out
 * (dwconv_gen.c; malloc'ed): a kh x kw kernel, owb (1..8) outputs per
 * invocation, activation kind act, res: the fused residual (RES); same
 * Params, bindings, grid and bits as dwconv.wgsl. NULL on OOM, or when
 * kh * kw * owb exceeds WG_DWCONV_GEN_MAX (the caller then uses
 * dwconv.wgsl). */
#define WG_DWCONV_GEN_MAX 1024
char *wg_gen_dwconv_source(uint32_t kh, uint32_t kw, uint32_t owb, uint32_t act, bool res);

#endif
