/* plan/pipeline.c — the pass pipeline of a specialised graph, with the
 * debugging switches RLX_DISABLE_PASSES and RLX_DUMP_IR. */
#include <stdio.h>
#include <string.h>

#include "base/platform.h"
#include "plan/plan.h"

/* RLX_DUMP_IR=1 prints the graph after every pass to stderr. */
static void dump_ir(const rlx_graph *g, const char *after) {
    if (!rlx_env_flag("RLX_DUMP_IR")) return;
    fprintf(stderr, "=== IR after %s ===\n", after);
    rlx_graph_dump(g, stderr);
}

/* RLX_DISABLE_PASSES=name,name turns optimisation passes off (debugging,
 * and tests that compare against the unoptimised graph). */
static bool pass_enabled(const char *name) {
    const char *off = rlx_getenv("RLX_DISABLE_PASSES");
    if (!off) return true;
    size_t n = strlen(name);
    for (const char *p = off; (p = strstr(p, name)); p += n)
        if ((p == off || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return false;
    return true;
}

/* The passes RLX_DISABLE_PASSES can name (fold and dce always run). */
static const char *const k_optional_passes[] = { "cse", "fold_conv_affine", "fuse_activation", "fuse_conv_residual",
                                                 "fuse_attention", "fuse_add_layernorm", "fuse_elementwise" };

/* A name in RLX_DISABLE_PASSES that is no pass (a typo) turns nothing off:
 * refused, so that a comparison "with the pass off" is one. */
static rlx_status check_disabled_passes(void) {
    const char *off = rlx_getenv("RLX_DISABLE_PASSES");
    if (!off) return RLX_OK;
    for (const char *p = off; *p;) {
        size_t n = strcspn(p, ",");
        bool known = n == 0;
        for (size_t i = 0; i < RLX_ARRAY_LEN(k_optional_passes) && !known; i++)
            known = strlen(k_optional_passes[i]) == n && strncmp(k_optional_passes[i], p, n) == 0;
        if (!known)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                            "RLX_DISABLE_PASSES='%s': '%.*s' is not a pass that can be turned off (cse, "
                            "fold_conv_affine, fuse_activation, fuse_conv_residual, fuse_attention, fuse_add_layernorm, "
                            "fuse_elementwise)",
                            off, (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    return RLX_OK;
}

typedef rlx_status (*pass_fn)(rlx_graph *g, rlx_pass_stats *ps);

static rlx_status run_pass(rlx_graph *g, rlx_pass_stats *ps, const char *name, pass_fn fn) {
    if (!pass_enabled(name)) return RLX_OK;
    RLX_TRY(fn(g, ps));
    dump_ir(g, name);
    return RLX_OK;
}

rlx_status rlx_plan_passes(rlx_graph *g, rlx_pass_stats *ps) {
    /* No size limit: a constant subgraph left unfolded would be computed on
     * every run into the arena, where it stays live from its step to its
     * use (the 392 MiB fc6 weight of the light VGG-19, made by a
     * ConstantOfShape, took 94% of that model's arena); folded, it is
     * computed once and kept with the weights. */
    rlx_fold_options fo = { .max_elements = 0, .eager = false };
    RLX_TRY(check_disabled_passes());
    dump_ir(g, "binding the input shapes");
    RLX_TRY(rlx_pass_fold(g, &fo, ps));
    dump_ir(g, "fold (shape inference + constant folding)");
    RLX_TRY(rlx_pass_dce(g, ps));
    dump_ir(g, "dce");
    RLX_TRY(run_pass(g, ps, "cse", rlx_pass_cse));
    RLX_TRY(run_pass(g, ps, "fold_conv_affine", rlx_pass_fold_conv_affine));
    RLX_TRY(run_pass(g, ps, "fuse_activation", rlx_pass_fuse_activation));
    RLX_TRY(run_pass(g, ps, "fuse_conv_residual", rlx_pass_fuse_conv_residual));
    RLX_TRY(run_pass(g, ps, "fuse_attention", rlx_pass_fuse_attention));
    RLX_TRY(run_pass(g, ps, "fuse_add_layernorm", rlx_pass_fuse_add_layernorm));
    RLX_TRY(run_pass(g, ps, "fuse_elementwise", rlx_pass_fuse_elementwise));
    RLX_TRY(rlx_pass_dce(g, ps)); /* constants the folds left unused */
    return RLX_OK;
}
