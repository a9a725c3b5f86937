/* runtime/exec.c — the scheduler of a compiled program (exec.h): inputs to
 * the arena, segments in order on their backends, uploads from and
 * read-backs into host memory, outputs from where the plan says. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/platform.h"
#include "base/tensor.h"
#include "runtime/exec.h"

struct rlx_exec {
    const rlx_program *p;
    rlx_backend *dev, *host; /* host == dev for a CPU session */
    rlx_backend *own_host;   /* the CPU backend created for this program */
    rlx_backend_exe *dx, *hx; /* hx == dx for a CPU session; NULL without CPU steps */
    unsigned char *hbase;    /* the host arena (hx's), NULL without one */
    void **dst;              /* read-back destinations, segment k's from dst + dst_at[k] */
    size_t *dst_at;
    int *out_from;           /* per output read back: an earlier output with the same read-back, or -1 */
    int timing;              /* RLX_TIMING_* */
    rlx_prof prof;
    bool progress;           /* rlx_exec_set_progress */
    double run_t0, shown_t;  /* this run's start; when the progress line was last written (0: never) */
};

void rlx_exec_destroy(rlx_exec *x) {
    if (!x) return;
    if (x->hx && x->hx != x->dx) x->host->destroy_exe(x->hx);
    if (x->dx) x->dev->destroy_exe(x->dx);
    if (x->own_host) x->own_host->destroy(x->own_host);
    free(x->dst);
    free(x->dst_at);
    free(x->out_from);
    free(x->prof.slices);
    free(x);
}

/* Read-back destinations fixed at compile time (the host arena); those of
 * graph outputs are set per run (the caller's tensors). */
static rlx_status plan_destinations(rlx_exec *x) {
    const rlx_program *p = x->p;
    size_t n = 0, n_out = p->g->n_outputs;
    x->dst_at = calloc(p->n_segs + 1, sizeof *x->dst_at);
    x->out_from = malloc((n_out + 1) * sizeof *x->out_from);
    if (!x->dst_at || !x->out_from) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; k < p->n_segs; k++) {
        x->dst_at[k] = n;
        n += p->segs[k].n_down;
    }
    x->dst = calloc(n + 1, sizeof *x->dst);
    if (!x->dst) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; k < p->n_segs && x->hbase; k++)
        for (size_t i = 0; i < p->segs[k].n_down; i++) x->dst[x->dst_at[k] + i] = x->hbase + p->segs[k].down[i].off;
    for (size_t i = 0; i < n_out; i++) {
        const rlx_out_src *o = &p->out[i];
        x->out_from[i] = -1;
        for (size_t j = 0; j < i && o->kind == RLX_OUT_DOWN; j++)
            if (p->out[j].kind == RLX_OUT_DOWN && p->out[j].seg == o->seg && p->out[j].down == o->down &&
                x->out_from[j] < 0)
                x->out_from[i] = (int)j;
    }
    return RLX_OK;
}

rlx_status rlx_exec_create(rlx_backend *dev, rlx_backend *host, const rlx_program *p, rlx_exec **out) {
    *out = NULL;
    rlx_exec *x = calloc(1, sizeof *x);
    if (!x) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    x->p = p;
    x->dev = dev;
    x->host = host ? host : dev->kind == RLX_DEVICE_CPU ? dev : NULL;
    rlx_status st = RLX_OK;
    if (!x->host && p->has_cpu) {
        st = rlx_backend_cpu_create(&x->own_host);
        x->host = x->own_host;
    }
    if (!st) st = dev->compile(dev, p, &x->dx);
    if (!st && x->host == dev) x->hx = x->dx;
    else if (!st && p->has_cpu) st = x->host->compile(x->host, p, &x->hx);
    if (!st && x->hx) x->hbase = x->host->host_arena(x->hx);
    if (!st) st = plan_destinations(x);
    if (st) {
        rlx_exec_destroy(x);
        return st;
    }
    *out = x;
    return RLX_OK;
}

/* Outputs the caller did not give are created; given ones are checked. */
static rlx_status prepare_outputs(const rlx_program *p, rlx_tensor **outputs, bool given) {
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_value *v = &g->values[g->outputs[i]];
        if (!given) {
            RLX_TRY(rlx_tensor_create(v->dtype, v->dims, v->rank < 0 ? 0 : v->rank, &outputs[i]));
            continue;
        }
        if (!outputs[i] || outputs[i]->dtype != v->dtype || outputs[i]->nbytes < p->mem.bytes[g->outputs[i]])
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output %zu: the given tensor does not match the plan", i);
    }
    return RLX_OK;
}

/* The inputs to the device's arena (unless host-only), and to the host
 * arena when CPU steps exist. */
static rlx_status write_inputs(rlx_exec *x, const rlx_tensor *const *inputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        uint64_t off = p->mem.offset[v], nb = p->mem.bytes[v];
        if (off == RLX_NO_OFFSET || !nb) continue;
        if (inputs[i]->nbytes < nb)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' holds fewer bytes than its shape", g->values[v].name);
        if (!rlx_mem_host_only(&p->mem, p->mem.alias[v])) RLX_TRY(x->dev->upload(x->dx, off, inputs[i]->data, nb));
        if (x->hx && x->hx != x->dx) memcpy(x->hbase + off, inputs[i]->data, (size_t)nb);
    }
    return RLX_OK;
}

/* The progress line after step s (rlx_step_hook; steps between GPU
 * segments come from run_segments). */
static void progress_tick(void *ctx, size_t s) {
    rlx_exec *x = ctx;
    double now = rlx_now_seconds();
    if (now - x->run_t0 < RLX_EXEC_PROGRESS_AFTER_S || now - x->shown_t < RLX_EXEC_PROGRESS_EVERY_S) return;
    x->shown_t = now;
    const rlx_program *p = x->p;
    const rlx_node *n = &p->g->nodes[p->steps[s]];
    rlx_log(RLX_LOG_PROGRESS, "rlx: running: step %zu/%zu (%s), %.1f s", s + 1, p->n_steps, rlx_node_desc(n),
            now - x->run_t0);
}

void rlx_exec_set_progress(rlx_exec *x, bool on) {
    x->progress = on;
    if (x->hx && x->host->set_step_hook) x->host->set_step_hook(x->hx, on ? progress_tick : NULL, x);
}

static rlx_status run_segments(rlx_exec *x, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    rlx_prof *prof = x->timing ? &x->prof : NULL;
    for (size_t i = 0; i < p->g->n_outputs; i++)
        if (p->out[i].kind == RLX_OUT_DOWN && x->out_from[i] < 0)
            x->dst[x->dst_at[p->out[i].seg] + p->out[i].down] = outputs[i]->data;
    for (size_t k = 0; k < p->n_segs; k++) {
        const rlx_segment *sg = &p->segs[k];
        if (sg->on != RLX_STEP_GPU) {
            RLX_TRY(x->host->run_segment(x->hx, k, NULL, prof));
            continue;
        }
        for (size_t i = 0; i < sg->n_up; i++)
            RLX_TRY(x->dev->upload(x->dx, sg->up[i].off, x->hbase + sg->up[i].off, sg->up[i].bytes));
        RLX_TRY(x->dev->run_segment(x->dx, k, x->dst + x->dst_at[k], prof));
        if (x->progress && sg->s1 > sg->s0) progress_tick(x, sg->s1 - 1);
    }
    return RLX_OK;
}

/* The outputs that no read-back filled. */
static void copy_outputs(const rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_out_src *o = &p->out[i];
        const rlx_value *v = &g->values[g->outputs[i]];
        size_t nb = outputs[i]->nbytes;
        switch (o->kind) {
        case RLX_OUT_KONST: memcpy(outputs[i]->data, v->konst->data, nb < v->konst->nbytes ? nb : v->konst->nbytes); break;
        case RLX_OUT_HOST: memcpy(outputs[i]->data, x->hbase + o->off, nb); break;
        case RLX_OUT_INPUT: memcpy(outputs[i]->data, inputs[o->input]->data, nb); break;
        case RLX_OUT_DOWN:
            if (x->out_from[i] >= 0) memcpy(outputs[i]->data, outputs[x->out_from[i]]->data, nb);
            break;
        }
    }
}

rlx_status rlx_exec_run(rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_graph *g = x->p->g;
    x->prof.n = 0;
    x->prof.gpu_total_us = 0.0;
    x->prof.t0 = x->timing ? rlx_now_seconds() : 0.0;
    bool given = g->n_outputs && outputs[0];
    rlx_status st = prepare_outputs(x->p, outputs, given);
    if (!st) st = write_inputs(x, inputs);
    x->run_t0 = x->progress ? rlx_now_seconds() : 0.0;
    x->shown_t = 0.0;
    if (!st) st = run_segments(x, outputs);
    if (x->shown_t > 0.0) rlx_log(RLX_LOG_PROGRESS, "%s", "");
    if (!st) copy_outputs(x, inputs, outputs);
    if (st && !given)
        for (size_t i = 0; i < g->n_outputs; i++) rlx_tensor_destroy(outputs[i]), outputs[i] = NULL;
    return st;
}

bool rlx_exec_stats(const rlx_exec *x, rlx_exe_stats *out) {
    memset(out, 0, sizeof *out);
    if (!x || !x->dev->exe_stats) return false;
    x->dev->exe_stats(x->dx, out);
    return true;
}

rlx_status rlx_exec_set_timing(rlx_exec *x, int level) {
    if (level != RLX_TIMING_OFF && level != RLX_TIMING_TOTAL && level != RLX_TIMING_DISPATCH)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "timing level %d", level);
    if (x->dev->set_timing) {
        RLX_TRY(x->dev->set_timing(x->dx, level));
    } else if (level == RLX_TIMING_TOTAL) { /* the CPU: host-clock slices per step only */
        return rlx_fail(RLX_ERR_UNSUPPORTED, "the %s backend has no GPU time to measure: profile its steps instead",
                        x->dev->name);
    }
    x->timing = level;
    x->prof.n = 0;
    return RLX_OK;
}

size_t rlx_exec_timing(const rlx_exec *x, const rlx_prof_slice **slices, double *gpu_total_us) {
    *slices = x->prof.slices;
    *gpu_total_us = x->prof.gpu_total_us;
    return x->prof.n;
}
