/* runtime/exec.c — the scheduler of a compiled program (exec.h): inputs to
 * the arena, segments in order on their backends, uploads from and
 * read-backs into host memory, outputs from where the plan says. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/platform.h"
#include "base/runctl.h"
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
    /* Caller memory used in place (bind_io): per graph input, its storage
     * root on the host (-1: none); per output that a CPU step produces,
     * its root (-1: none) and an earlier output with the same root (-1);
     * what this run bound. */
    int *in_root, *out_root, *out_same;
    bool *in_bound, *out_bound;
    /* Outputs staged this run (plan_staging): per output, its place in
     * `stage` (RLX_NOT_STAGED: none): a read-back that would overwrite
     * memory the run still reads or another output's, or the snapshot of
     * the graph input an output passes through when an earlier output
     * overwrites it. Grown as needed, kept with the plan. */
    size_t *stage_at;
    unsigned char *stage;
    size_t stage_cap;
    int timing;              /* RLX_TIMING_* */
    rlx_prof prof;
    bool progress;           /* rlx_exec_set_progress */
    const rlx_run_ctl *ctl;  /* rlx_exec_set_run_ctl: checked after each host step and before each segment */
    double run_t0, shown_t;  /* this run's start; when the progress line was last written (0: never) */
};

rlx_status rlx_exec_restore_consts(rlx_exec *x) {
    if (!x || !x->hx || !x->host->restore_consts) return RLX_OK;
    return x->host->restore_consts(x->hx);
}

void rlx_exec_destroy(rlx_exec *x) {
    if (!x) return;
    if (x->hx && x->hx != x->dx) x->host->destroy_exe(x->hx);
    if (x->dx) x->dev->destroy_exe(x->dx);
    if (x->own_host) x->own_host->destroy(x->own_host);
    free(x->dst);
    free(x->dst_at);
    free(x->out_from);
    free(x->in_root);
    free(x->out_root);
    free(x->out_same);
    free(x->in_bound);
    free(x->out_bound);
    free(x->stage_at);
    free(x->stage);
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

/* Which graph inputs and outputs a run may bind to the caller's memory
 * instead of copying (see bind_io). Inputs: whenever a host arena exists
 * (CPU steps only read them; a GPU plan still uploads them from the
 * caller's tensor). Outputs: those a CPU step produces (RLX_OUT_HOST: not
 * constants, not views of graph inputs; on a GPU plan, not one a GPU
 * segment uploads from or reads back into the host arena); of several
 * outputs with one storage root (the same value twice, or a view of
 * another output) the first is bound and the others copy from it. Outputs a GPU
 * segment produces are read back into the caller's tensors already. */
static rlx_status plan_binding(rlx_exec *x) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    size_t ni = g->n_inputs, no = g->n_outputs;
    x->in_root = malloc((ni + 1) * sizeof *x->in_root);
    x->in_bound = calloc(ni + 1, sizeof *x->in_bound);
    x->out_root = malloc((no + 1) * sizeof *x->out_root);
    x->out_same = malloc((no + 1) * sizeof *x->out_same);
    x->out_bound = calloc(no + 1, sizeof *x->out_bound);
    x->stage_at = malloc((no + 1) * sizeof *x->stage_at);
    if (!x->in_root || !x->in_bound || !x->out_root || !x->out_same || !x->out_bound || !x->stage_at)
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    bool can = x->hx && x->host->bind_value;
    for (size_t i = 0; i < ni; i++) {
        int v = g->inputs[i];
        x->in_root[i] = can && p->mem.offset[v] != RLX_NO_OFFSET && p->mem.bytes[v] ? p->mem.alias[v] : -1;
    }
    for (size_t i = 0; i < no; i++) {
        int v = g->outputs[i];
        x->out_root[i] = x->out_same[i] = -1;
        if (!can || p->out[i].kind != RLX_OUT_HOST || !p->mem.bytes[v]) continue;
        /* a root a device segment uploads is read from the host arena, and
         * one a device produced is read back into it (RLX_OUT_HOST once a
         * CPU step read it) */
        bool moved = false;
        for (size_t k = 0; k < p->n_segs && !moved; k++) {
            const rlx_segment *sg = &p->segs[k];
            for (size_t j = 0; j < sg->n_up && !moved; j++) moved = sg->up[j].value == p->mem.alias[v];
            for (size_t j = 0; j < sg->n_down && !moved; j++) moved = sg->down[j].value == p->mem.alias[v];
        }
        if (moved) continue;
        x->out_root[i] = p->mem.alias[v];
        for (size_t j = 0; j < i && x->out_same[i] < 0; j++)
            if (x->out_root[j] == x->out_root[i]) x->out_same[i] = (int)j;
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
        st = rlx_backend_cpu_create(NULL, &x->own_host);
        x->host = x->own_host;
    }
    if (!st) st = dev->compile(dev, p, &x->dx);
    if (!st && x->host == dev) x->hx = x->dx;
    else if (!st && p->has_cpu) st = x->host->compile(x->host, p, &x->hx);
    if (!st && x->hx) x->hbase = x->host->host_arena(x->hx);
    if (!st) st = plan_destinations(x);
    if (!st) st = plan_binding(x);
    if (st) {
        rlx_exec_destroy(x);
        return st;
    }
    *out = x;
    return RLX_OK;
}

/* The bytes output i holds: its constant's, else its value's in the
 * memory plan (a view of a graph input has its own size there). */
static uint64_t out_bytes(const rlx_program *p, size_t i) {
    const rlx_value *v = &p->g->values[p->g->outputs[i]];
    if (p->out[i].kind == RLX_OUT_KONST) return v->konst->nbytes;
    return p->mem.bytes[p->g->outputs[i]];
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
        uint64_t nb = out_bytes(p, i);
        if (!outputs[i])
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output %zu ('%s'): the tensor is NULL", i, v->name);
        if (outputs[i]->dtype != v->dtype || outputs[i]->nbytes < nb || (nb && !outputs[i]->data))
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                            "output %zu ('%s'): the given tensor is %s with %zu bytes at %p, the plan needs %s with %llu bytes",
                            i, v->name, rlx_dtype_name(outputs[i]->dtype), outputs[i]->nbytes, outputs[i]->data,
                            rlx_dtype_name(v->dtype), (unsigned long long)nb);
    }
    return RLX_OK;
}

/* Caller memory is bound only at addresses that are multiples of this
 * (every element type's alignment, and the kernels' vector loads are
 * unaligned ones); other buffers are copied. */
#define RLX_BIND_ALIGN 16u

/* Whether [a, a + na) and [b, b + nb) share a byte. */
static bool overlaps(const void *a, uint64_t na, const void *b, uint64_t nb) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na && nb && x < y + nb && y < x + na;
}

/* Binds this run's graph inputs and outputs to the caller's tensors where
 * plan_binding allows it and the memory suits: an input whose data is
 * aligned; an output whose data is aligned and overlaps no input and no
 * other output (the caller may pass one buffer twice). The rest go
 * through the arena and are copied as before. */
static void bind_io(rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_inputs; i++) {
        x->in_bound[i] = x->in_root[i] >= 0 && inputs[i]->data && (uintptr_t)inputs[i]->data % RLX_BIND_ALIGN == 0 &&
                         inputs[i]->nbytes >= p->mem.bytes[x->in_root[i]];
        if (x->in_bound[i]) x->host->bind_value(x->hx, x->in_root[i], inputs[i]->data);
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        x->out_bound[i] = false;
        int r = x->out_root[i];
        if (r < 0 || x->out_same[i] >= 0 || !outputs[i]->data || (uintptr_t)outputs[i]->data % RLX_BIND_ALIGN != 0 ||
            outputs[i]->nbytes < p->mem.bytes[r])
            continue;
        bool ok = true;
        for (size_t j = 0; j < g->n_inputs && ok; j++)
            ok = !overlaps(outputs[i]->data, p->mem.bytes[r], inputs[j]->data, inputs[j]->nbytes);
        for (size_t j = 0; j < g->n_outputs && ok; j++)
            ok = j == i || !overlaps(outputs[i]->data, p->mem.bytes[r], outputs[j]->data, outputs[j]->nbytes);
        if (!ok) continue;
        x->out_bound[i] = true;
        x->host->bind_value(x->hx, r, outputs[i]->data);
    }
}

/* Returns what bind_io bound to the arena (the caller may free it). */
static void unbind_io(rlx_exec *x) {
    const rlx_graph *g = x->p->g;
    for (size_t i = 0; i < g->n_inputs; i++)
        if (x->in_bound[i]) x->host->bind_value(x->hx, x->in_root[i], NULL), x->in_bound[i] = false;
    for (size_t i = 0; i < g->n_outputs; i++)
        if (x->out_bound[i]) x->host->bind_value(x->hx, x->out_root[i], NULL), x->out_bound[i] = false;
}

/* The inputs to the device's arena (unless host-only), and to the host
 * arena when CPU steps exist and the input is not bound (bind_io). */
static rlx_status write_inputs(rlx_exec *x, const rlx_tensor *const *inputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_inputs; i++) {
        int v = g->inputs[i];
        uint64_t off = p->mem.offset[v], nb = p->mem.bytes[v];
        if (off == RLX_NO_OFFSET || !nb) continue;
        if (inputs[i]->nbytes < nb)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' holds fewer bytes than its shape", g->values[v].name);
        bool device = x->hx != x->dx; /* a device's arena, else the CPU's (dev is the host) */
        if (!rlx_mem_host_only(&p->mem, p->mem.alias[v]) && (device || !x->in_bound[i]))
            RLX_TRY(x->dev->upload(x->dx, off, inputs[i]->data, nb));
        if (x->hx && device && !x->in_bound[i]) memcpy(x->hbase + off, inputs[i]->data, (size_t)nb);
    }
    return RLX_OK;
}

/* The progress line after step s (steps between GPU segments come from
 * run_segments). */
static void progress_tick(rlx_exec *x, size_t s) {
    double now = rlx_now_seconds();
    if (now - x->run_t0 < RLX_EXEC_PROGRESS_AFTER_S || now - x->shown_t < RLX_EXEC_PROGRESS_EVERY_S) return;
    x->shown_t = now;
    const rlx_program *p = x->p;
    const rlx_node *n = &p->g->nodes[p->steps[s]];
    rlx_log(RLX_LOG_PROGRESS, "rlx: running: step %zu/%zu (%s), %.1f s", s + 1, p->n_steps, rlx_node_desc(n),
            now - x->run_t0);
}

/* RLX_ERR_CANCELLED naming the step at which the run stopped: `when` the
 * step s ("after", or "before" a segment). */
static rlx_status stop_error(const rlx_exec *x, const char *when, size_t s) {
    const rlx_program *p = x->p;
    const rlx_node *n = s < p->n_steps ? &p->g->nodes[p->steps[s]] : NULL;
    rlx_run_stop_error(x->ctl);
    return rlx_fail_prefix(RLX_ERR_CANCELLED, "%s step %zu of %zu (%s%s): ", when, s + 1, p->n_steps,
                           s < p->n_steps && p->step_on[s] == RLX_STEP_GPU ? "GPU, " : "", n ? rlx_node_desc(n) : "?");
}

/* After each host step (rlx_step_hook): the progress line, the stop check. */
static rlx_status step_hook(void *ctx, size_t s) {
    rlx_exec *x = ctx;
    if (x->progress) progress_tick(x, s);
    return rlx_run_stopped(x->ctl) ? stop_error(x, "after", s) : RLX_OK;
}

static void update_hook(rlx_exec *x) {
    bool on = x->progress || x->ctl;
    if (x->hx && x->host->set_step_hook) x->host->set_step_hook(x->hx, on ? step_hook : NULL, x);
}

void rlx_exec_set_progress(rlx_exec *x, bool on) {
    x->progress = on;
    update_hook(x);
}

void rlx_exec_set_run_ctl(rlx_exec *x, const rlx_run_ctl *ctl) {
    x->ctl = ctl;
    update_hook(x);
}

#define RLX_NOT_STAGED SIZE_MAX

/* Which outputs go through `stage` this run, so that the caller's memory
 * is written only in graph-output order after the last step (rlx.h):
 * a read-back (written during the run, in segment order) whose buffer
 * overlaps an input or another output; a graph input passed through as an
 * output when an earlier output overlaps it (snapshot taken before the
 * outputs are written). Everything else written during the run (bound
 * outputs, direct read-backs) overlaps no input and no other output. */
static rlx_status plan_staging(rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    size_t need = 0;
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_out_src *o = &p->out[i];
        uint64_t nb = out_bytes(p, i);
        bool clash = false;
        x->stage_at[i] = RLX_NOT_STAGED;
        if (o->kind == RLX_OUT_DOWN && x->out_from[i] < 0) {
            for (size_t j = 0; j < g->n_inputs && !clash; j++)
                clash = overlaps(outputs[i]->data, nb, inputs[j]->data, inputs[j]->nbytes);
            for (size_t j = 0; j < g->n_outputs && !clash; j++)
                clash = j != i && overlaps(outputs[i]->data, nb, outputs[j]->data, out_bytes(p, j));
        } else if (o->kind == RLX_OUT_INPUT) {
            for (size_t j = 0; j < i && !clash; j++)
                clash = overlaps(inputs[o->input]->data, nb, outputs[j]->data, out_bytes(p, j));
        }
        if (!clash) continue;
        x->stage_at[i] = need;
        need += ((size_t)nb + 63) & ~(size_t)63;
    }
    if (need > x->stage_cap) {
        unsigned char *b = realloc(x->stage, need);
        if (!b) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu bytes to stage shared output buffers)", need);
        x->stage = b;
        x->stage_cap = need;
    }
    return RLX_OK;
}

static rlx_status run_segments(rlx_exec *x, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    rlx_prof *prof = x->timing ? &x->prof : NULL;
    for (size_t i = 0; i < p->g->n_outputs; i++)
        if (p->out[i].kind == RLX_OUT_DOWN && x->out_from[i] < 0)
            x->dst[x->dst_at[p->out[i].seg] + p->out[i].down] =
                x->stage_at[i] != RLX_NOT_STAGED ? x->stage + x->stage_at[i] : outputs[i]->data;
    for (size_t k = 0; k < p->n_segs; k++) {
        const rlx_segment *sg = &p->segs[k];
        if (rlx_run_stopped(x->ctl)) return stop_error(x, "before", sg->s0);
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

/* memmove that allows NULL for 0 bytes (zero-size tensors) and dst == src. */
static void move_bytes(void *dst, const void *src, uint64_t n) {
    if (n && dst != src) memmove(dst, src, (size_t)n);
}

/* Where output i's bytes are after the run, for those read back or passed
 * through (plan_staging says whether staged). */
static const void *src_of(const rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs, size_t i) {
    if (x->stage_at[i] != RLX_NOT_STAGED) return x->stage + x->stage_at[i];
    if (x->p->out[i].kind == RLX_OUT_INPUT) return inputs[x->p->out[i].input]->data;
    return outputs[i]->data;
}

/* The outputs that no read-back or bound step filled, in graph-output
 * order, after the snapshots of the inputs an earlier output overwrites. */
static void copy_outputs(const rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_program *p = x->p;
    const rlx_graph *g = p->g;
    for (size_t i = 0; i < g->n_outputs; i++)
        if (p->out[i].kind == RLX_OUT_INPUT && x->stage_at[i] != RLX_NOT_STAGED)
            move_bytes(x->stage + x->stage_at[i], inputs[p->out[i].input]->data, out_bytes(p, i));
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_out_src *o = &p->out[i];
        const rlx_value *v = &g->values[g->outputs[i]];
        uint64_t nb = out_bytes(p, i);
        switch (o->kind) {
        case RLX_OUT_KONST: move_bytes(outputs[i]->data, v->konst->data, nb); break;
        case RLX_OUT_HOST: /* in place when bound; from the output bound for the same root */
            if (x->out_bound[i]) break;
            if (x->out_same[i] >= 0 && x->out_bound[x->out_same[i]])
                move_bytes(outputs[i]->data, outputs[x->out_same[i]]->data, nb);
            else
                move_bytes(outputs[i]->data, x->hbase + o->off, nb);
            break;
        case RLX_OUT_INPUT: move_bytes(outputs[i]->data, src_of(x, inputs, outputs, i), nb); break;
        case RLX_OUT_DOWN: /* a direct read-back overlaps nothing: already in place */
            if (x->out_from[i] >= 0) move_bytes(outputs[i]->data, src_of(x, inputs, outputs, (size_t)x->out_from[i]), nb);
            else if (x->stage_at[i] != RLX_NOT_STAGED) move_bytes(outputs[i]->data, x->stage + x->stage_at[i], nb);
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
    if (!st) st = plan_staging(x, inputs, outputs);
    if (!st) bind_io(x, inputs, outputs);
    if (!st) st = write_inputs(x, inputs);
    x->run_t0 = x->progress ? rlx_now_seconds() : 0.0;
    x->shown_t = 0.0;
    if (!st) st = run_segments(x, outputs);
    if (x->shown_t > 0.0) rlx_log(RLX_LOG_PROGRESS, "%s", "");
    if (!st) copy_outputs(x, inputs, outputs);
    unbind_io(x);
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
