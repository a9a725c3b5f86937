/* plan/pipeline.c — the pass pipeline of a specialised graph, with the
 * debugging options passes.disable and debug.dump_ir (ps->cfg). */
#include <stdio.h>
#include <string.h>

#include "base/options.h"
#include "base/log.h"
#include "passes/fuse_util.h"
#include "plan/plan.h"

static void write_graph(FILE *f, const void *g) { rlx_graph_dump(g, f); }

/* debug.dump_ir prints the graph after every pass to stderr. */
static void dump_ir(const rlx_pass_stats *ps, const rlx_graph *g, const char *after) {
    if (!ps->cfg->dump_ir) return;
    rlx_log(RLX_LOG_DEBUG, "=== IR after %s ===", after);
    rlx_log_stream(RLX_LOG_DEBUG, write_graph, g);
}

/* passes.disable=name,name turns optimisation passes off (debugging, and
 * tests that compare against the unoptimised graph); its names were
 * checked when the session was created (base/options.c). */
static bool pass_enabled(const rlx_pass_stats *ps, const char *name) {
    const char *off = ps->cfg->disable_passes;
    if (!off) return true;
    size_t n = strlen(name);
    for (const char *p = off; (p = strstr(p, name)); p += n)
        if ((p == off || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return false;
    return true;
}

typedef rlx_status (*pass_fn)(rlx_graph *g, rlx_pass_stats *ps);

static rlx_status run_pass(rlx_graph *g, rlx_pass_stats *ps, const char *name, pass_fn fn) {
    if (!pass_enabled(ps, name)) return RLX_OK;
    RLX_TRY(fn(g, ps));
    dump_ir(ps, g, name);
    return RLX_OK;
}

rlx_status rlx_plan_passes(rlx_graph *g, rlx_pass_stats *ps) {
    /* No size limit: a constant subgraph left unfolded would be computed on
     * every run into the arena, where it stays live from its step to its
     * use (the 392 MiB fc6 weight of the light VGG-19, made by a
     * ConstantOfShape, took 94% of that model's arena); folded, it is
     * computed once and kept with the weights. */
    rlx_fuse_set_reporting(ps->cfg->fusion_report);
    dump_ir(ps, g, "binding the input shapes");
    /* before the fold makes the weights' DequantizeLinear f32 constants; on
     * every plan, so that the GPU and the CPU run the same integer
     * convolutions (QLinearConv, exact on both) */
    /* before the fold too: 4-bit weights stay 4-bit (rlx.MatMulNBits) */
    RLX_TRY(run_pass(g, ps, "fuse_nbits", rlx_pass_fuse_nbits));
    if (pass_enabled(ps, "fuse_qdq"))
        RLX_TRY(run_pass(g, ps, "fuse_qdq_conv", rlx_pass_fuse_qdq_conv));
    RLX_TRY(rlx_pass_fold(g, ps));
    dump_ir(ps, g, "fold (shape inference + constant folding)");
    RLX_TRY(rlx_pass_dce(g, ps));
    dump_ir(ps, g, "dce");
    /* limits.max_tensor_bytes on the shapes inference gave, before the
     * fusions rewrite nodes: a value too large is named with the node of
     * the model that makes it (fuse_qdq_ew's DequantizeLinear would take a
     * Resize's output; session.c checks again what the passes made) */
    RLX_TRY(rlx_graph_limit_check(ps->cfg, g));
    /* CPU plans: f16 models in f32, before the fusions, which then see f32 */
    RLX_TRY(run_pass(g, ps, "widen_f16", rlx_pass_widen_f16));
    RLX_TRY(run_pass(g, ps, "cse", rlx_pass_cse));
    /* before the fusions, which then take the Mul (and on GPU plans the float Pow) */
    RLX_TRY(run_pass(g, ps, "pow_exponent", rlx_pass_pow_exponent));
    RLX_TRY(run_pass(g, ps, "fuse_qdq", rlx_pass_fuse_qdq));
    RLX_TRY(run_pass(g, ps, "fold_conv_affine", rlx_pass_fold_conv_affine));
    RLX_TRY(run_pass(g, ps, "fuse_activation", rlx_pass_fuse_activation));
    RLX_TRY(run_pass(g, ps, "fuse_conv_residual", rlx_pass_fuse_conv_residual));
    RLX_TRY(run_pass(g, ps, "fuse_attention", rlx_pass_fuse_attention));
    RLX_TRY(run_pass(g, ps, "fuse_layernorm", rlx_pass_fuse_layernorm));
    RLX_TRY(run_pass(g, ps, "fuse_add_layernorm", rlx_pass_fuse_add_layernorm));
    ps->qdq_ew = pass_enabled(ps, "fuse_qdq_ew");
    RLX_TRY(run_pass(g, ps, "fuse_elementwise", rlx_pass_fuse_elementwise));
    RLX_TRY(run_pass(g, ps, "fuse_qdq_ew", rlx_pass_fuse_qdq_ew)); /* after the chains exist */
    /* after the chains read the 8-bit tensors, and the DequantizeLinear
     * nodes that read them before are gone */
    if (!ps->cpu_target && pass_enabled(ps, "fuse_qlinear_ew")) {
        RLX_TRY(rlx_pass_dce(g, ps));
        RLX_TRY(run_pass(g, ps, "fuse_qlinear_ew", rlx_pass_fuse_qlinear_ew));
    }
    RLX_TRY(rlx_pass_dce(g, ps)); /* constants the folds left unused */
    return RLX_OK;
}
