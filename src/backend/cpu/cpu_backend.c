/* The CPU backend executable: one host arena laid out by the memory plan,
 * tensor views into it, kernels run in step order; optionally a host-clock
 * slice per step (set_timing RLX_TIMING_DISPATCH). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/platform.h"
#include "base/tensor.h"

struct rlx_backend_exe {
    const rlx_program *p;
    unsigned char *arena;
    rlx_tensor *views; /* per value: a view into the arena or the konst */
    /* profiling (RLX_TIMING_DISPATCH): one slice per step of the last run */
    bool timed;
    rlx_prof_slice *slices; /* n_steps entries once timing was asked for */
    size_t n_slices;
};

static rlx_tensor *value_view(struct rlx_backend_exe *e, int v) { return v < 0 ? NULL : &e->views[v]; }

static bool cpu_supports(rlx_backend *be, const rlx_graph *g, const rlx_node *n) {
    (void)be;
    (void)g;
    return rlx_cpu_find_kernel(n->domain, n->op_type) != NULL;
}

static rlx_status cpu_compile(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out) {
    (void)be;
    *out = NULL;
    struct rlx_backend_exe *e = calloc(1, sizeof *e);
    if (!e) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    const rlx_graph *g = p->g;
    e->p = p;
    e->arena = rlx_alloc_aligned(p->mem.arena_bytes);
    e->views = calloc(g->n_values + 1, sizeof *e->views);
    if (!e->arena || !e->views) {
        free(e->views);
        rlx_free_aligned(e->arena);
        free(e);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate a %llu-byte CPU arena",
                        (unsigned long long)p->mem.arena_bytes);
    }
    for (size_t i = 0; i < g->n_values; i++) {
        const rlx_value *v = &g->values[i];
        rlx_tensor *t = &e->views[i];
        if (v->konst) {
            *t = *v->konst;
            continue;
        }
        t->dtype = v->dtype;
        t->rank = v->rank < 0 ? 0 : v->rank;
        memcpy(t->dims, v->dims, sizeof t->dims);
        t->nbytes = p->mem.bytes[i];
        if (p->mem.offset[i] != RLX_NO_OFFSET) t->data = e->arena + p->mem.offset[i];
    }
    *out = e;
    return RLX_OK;
}

static rlx_status run_step(struct rlx_backend_exe *e, size_t s) {
    const rlx_graph *g = e->p->g;
    const rlx_node *n = &g->nodes[e->p->steps[s]];
    const rlx_tensor *in[64];
    rlx_tensor *out[64];
    if (n->n_in > 64 || n->n_out > 64)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: more than 64 inputs or outputs", rlx_node_desc(n));
    for (int k = 0; k < n->n_in; k++) in[k] = value_view(e, n->in[k]);
    for (int k = 0; k < n->n_out; k++) out[k] = value_view(e, n->out[k]);
    return rlx_cpu_run_node(g, n, in, out, false);
}

static rlx_status cpu_run(rlx_backend_exe *e, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_program *p = e->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_inputs; i++) {
        rlx_tensor *t = &e->views[g->inputs[i]];
        if (t->data && t->nbytes) memcpy(t->data, inputs[i]->data, t->nbytes);
    }
    if (e->timed) {
        e->n_slices = 0;
        double t_run = rlx_now_seconds();
        for (size_t s = 0; s < p->n_steps; s++) {
            if (p->step_on[s] == RLX_STEP_VIEW) continue;
            double t0 = rlx_now_seconds();
            RLX_TRY(run_step(e, s));
            double t1 = rlx_now_seconds();
            e->slices[e->n_slices++] = (rlx_prof_slice){ (int)s, "cpu", (t0 - t_run) * 1e6, (t1 - t0) * 1e6, false };
        }
    } else {
        for (size_t s = 0; s < p->n_steps; s++)
            if (p->step_on[s] != RLX_STEP_VIEW) RLX_TRY(run_step(e, s));
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_tensor *t = &e->views[g->outputs[i]];
        if (outputs[i]) { /* caller-allocated (see backend.h) */
            if (outputs[i]->nbytes != t->nbytes || outputs[i]->dtype != t->dtype)
                return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output %zu: the given tensor does not match the plan", i);
            if (t->nbytes) memcpy(outputs[i]->data, t->data, t->nbytes);
            continue;
        }
        rlx_status st = rlx_tensor_clone(t, &outputs[i]);
        if (st) {
            for (size_t j = 0; j < i; j++) rlx_tensor_destroy(outputs[j]), outputs[j] = NULL;
            return st;
        }
    }
    return RLX_OK;
}

/* Per-step host-clock slices (RLX_TIMING_DISPATCH) or none (OFF); the CPU
 * has no GPU time, so RLX_TIMING_TOTAL is refused. */
static rlx_status cpu_set_timing(rlx_backend_exe *e, int level) {
    if (level == RLX_TIMING_TOTAL)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "the CPU backend has no GPU time to measure: profile its steps instead");
    if (level != RLX_TIMING_OFF && level != RLX_TIMING_DISPATCH)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "timing level %d", level);
    if (level == RLX_TIMING_DISPATCH && !e->slices) {
        e->slices = calloc(e->p->n_steps + 1, sizeof *e->slices);
        if (!e->slices) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    e->timed = level == RLX_TIMING_DISPATCH;
    e->n_slices = 0;
    return RLX_OK;
}

static size_t cpu_timing(rlx_backend_exe *e, const rlx_prof_slice **slices, double *gpu_total_us) {
    *slices = e->slices;
    *gpu_total_us = 0;
    return e->slices ? e->n_slices : 0;
}

static void cpu_destroy_exe(rlx_backend_exe *e) {
    if (!e) return;
    free(e->slices);
    rlx_free_aligned(e->arena);
    free(e->views);
    free(e);
}

static void cpu_destroy(rlx_backend *be) { free(be); }

rlx_status rlx_backend_cpu_create(rlx_backend **out) {
    rlx_backend *be = calloc(1, sizeof *be);
    if (!be) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    be->name = "cpu";
    be->kind = RLX_DEVICE_CPU;
    strcpy(be->device_name, "cpu");
    be->supports = cpu_supports;
    be->compile = cpu_compile;
    be->run = cpu_run;
    be->destroy_exe = cpu_destroy_exe;
    be->destroy = cpu_destroy;
    be->set_timing = cpu_set_timing;
    be->timing = cpu_timing;
    *out = be;
    return RLX_OK;
}
