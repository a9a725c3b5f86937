/* Helpers of the fusion tests (test_fusion.c, test_fuse_conv_residual.c):
 * models built by name through the public builder, runs with passes turned
 * off (option passes.disable) and the GPU arena poisoned with NaN, and
 * comparisons of two runs and of their programs. Header-only (static),
 * included after test.h. */
#ifndef RLX_TESTS_FUSION_UTIL_H
#define RLX_TESTS_FUSION_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "runtime/session.h"
#include "test.h"

/* Splits "a,b,c" into names (pointers into buf). */
static inline size_t fu_split(const char *s, char *buf, size_t cap, const char **names) {
    size_t n = 0;
    snprintf(buf, cap, "%s", s);
    if (!*buf) return 0;
    for (char *p = buf;;) {
        names[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

/* Appends node `name` (NULL: a generated name): inputs and outputs as
 * comma-separated names ("" entries of the input list are omitted
 * optional inputs). */
static inline void add_node(rlx_model *m, const char *op, const char *name, const char *ins, const char *outs, size_t na,
                            const rlx_attr *a) {
    char bi[512], bo[256];
    const char *in[16], *out[8];
    size_t ni = fu_split(ins, bi, sizeof bi, in), no = fu_split(outs, bo, sizeof bo, out);
    CHECK_OK(rlx_model_add_node(m, op, name, ni, in, no, out, na, a));
}

static inline void input(rlx_model *m, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
    CHECK_OK(rlx_model_add_input(m, name, dt, rank, dims, NULL));
}

/* Adds an initializer and frees the tensor. */
static inline void konst(rlx_model *m, const char *name, rlx_tensor *t) {
    CHECK_OK(rlx_model_add_initializer(m, name, t));
    rlx_tensor_destroy(t);
}

/* A finished model's run: outputs and the compiled program. */
typedef struct run_t {
    rlx_tensor **out;
    size_t n;
    rlx_session *s;
    const rlx_program *p;
} run_t;

/* Runs m on `device` with the passes in `off` disabled (NULL: all on) and
 * the options `extra` ("key=value" items separated by ';', NULL: none); on
 * the GPU the arena starts as NaN (gpu.poison), so an element no kernel
 * writes shows. */
static inline run_t run_with(const rlx_model *m, const char *device, const char *off, const char *extra, size_t n_in,
                             const char *const *names, const rlx_tensor *const *in) {
    run_t r = { NULL, 0, NULL, NULL };
    rlx_options *opts = test_options("passes.disable=", strcmp(device, "gpu") == 0 ? "gpu.poison=1" : "gpu.poison=0",
                                     NULL);
    if (opts && off) CHECK_OK(rlx_options_set(opts, "passes.disable", off));
    test_options_add(opts, extra);
    rlx_session_options o = { .device = device };
    CHECK_OK(rlx_session_create_with_options(m, &o, opts, &r.s));
    rlx_options_destroy(opts);
    if (r.s) {
        CHECK_OK(rlx_session_run(r.s, n_in, names, in, &r.out, &r.n));
        r.p = rlx_session_last_program(r.s);
    }
    return r;
}

static inline run_t run(const rlx_model *m, const char *device, const char *off, size_t n_in, const char *const *names,
                        const rlx_tensor *const *in) {
    return run_with(m, device, off, NULL, n_in, names, in);
}

static inline void run_free(run_t *r) {
    test_free_outputs(r->out, (int)r->n);
    rlx_session_destroy(r->s);
    memset(r, 0, sizeof *r);
}

/* GPU dispatches of one forward pass of the session's last plan (-1 when
 * the backend does not say). */
static inline long dispatches(const rlx_session *s) {
    rlx_exec *e = s ? rlx_session_last_exec(s) : NULL;
    rlx_exe_stats es;
    if (!e || !rlx_exec_stats(e, &es)) return -1;
    return (long)es.n_dispatches;
}

/* Steps of the program whose op type is `op` (any domain). */
static inline int count(const rlx_program *p, const char *op) {
    int n = 0;
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (strcmp(p->g->nodes[p->steps[i]].op_type, op) == 0) n++;
    return n;
}

static inline const rlx_node *first(const rlx_program *p, const char *op) {
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (strcmp(p->g->nodes[p->steps[i]].op_type, op) == 0) return &p->g->nodes[p->steps[i]];
    return NULL;
}

/* Outputs of two runs agree: |a - b| <= atol + rtol |b| elementwise. */
static inline void agree(const char *what, const run_t *a, const run_t *b, double rtol, double atol) {
    CHECK_MSG(a->n == b->n && a->n > 0, "%s: %zu and %zu outputs", what, a->n, b->n);
    for (size_t i = 0; a->out && b->out && i < a->n && i < b->n; i++)
        CHECK_MSG(test_allclose(a->out[i], b->out[i], rtol, atol), "%s: output %zu differs (max abs %g; rtol %g, atol %g)",
                  what, i, test_max_abs_diff(a->out[i], b->out[i]), rtol, atol);
}

#endif
