/* plan/segments.c — segments per device and the transfers between them
 * (rlx_plan_segments). Each storage root knows where a valid copy lives:
 * on the device (the arena), on the host (the host arena), or both; a
 * step that reads a root where it is not valid adds a transfer. */
#include <stdlib.h>

#include "base/mem.h"
#include "base/status.h"
#include "plan/plan.h"

/* Appends x to a transfer list unless its root is there already. */
static rlx_status add_xfer(rlx_xfer **arr, size_t *n, rlx_xfer x) {
    for (size_t i = 0; i < *n; i++)
        if ((*arr)[i].value == x.value) return RLX_OK;
    rlx_xfer *a = realloc(*arr, (*n + 1) * sizeof *a);
    if (!a) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    a[(*n)++] = x;
    *arr = a;
    return RLX_OK;
}

/* Consecutive non-view steps on one device form a segment; a view step
 * joins the segment it follows (a leading view belongs to none). */
static void split(rlx_program *p) {
    rlx_segment *cur = NULL;
    for (size_t s = 0; s < p->n_steps; s++) {
        if (p->step_on[s] == RLX_STEP_VIEW) {
            if (cur) cur->s1 = s + 1;
            continue;
        }
        if (!cur || cur->on != p->step_on[s]) {
            cur = &p->segs[p->n_segs++];
            cur->on = p->step_on[s];
            cur->s0 = s;
        }
        cur->s1 = s + 1;
    }
}

/* Where graph output i comes from; may add a read-back to the last GPU
 * segment. */
static rlx_status output_source(rlx_program *p, size_t i, const uint8_t *on_gpu, const uint8_t *on_host, int last_gpu) {
    const rlx_graph *g = p->g;
    int v = g->outputs[i];
    const rlx_value *val = &g->values[v];
    rlx_out_src *o = &p->out[i];
    if (val->konst) {
        o->kind = RLX_OUT_KONST;
        return RLX_OK;
    }
    if (p->mem.offset[v] == RLX_NO_OFFSET) return rlx_fail(RLX_ERR_INTERNAL, "graph output '%s' has no storage", val->name);
    int r = p->mem.alias[v];
    int input = -1;
    for (size_t j = 0; j < g->n_inputs; j++)
        if (p->mem.alias[g->inputs[j]] == r) input = (int)j;
    if (input >= 0) { /* graph inputs never change: copy from the caller's tensor */
        o->kind = RLX_OUT_INPUT;
        o->input = input;
    } else if (on_host[r]) {
        o->kind = RLX_OUT_HOST;
        o->off = p->mem.offset[r];
    } else if (on_gpu[r] && last_gpu >= 0) {
        rlx_segment *pg = &p->segs[last_gpu];
        RLX_TRY(add_xfer(&pg->down, &pg->n_down, (rlx_xfer){ r, p->mem.offset[r], p->mem.bytes[r] }));
        o->kind = RLX_OUT_DOWN;
        o->seg = (size_t)last_gpu;
        for (size_t j = 0; j < pg->n_down; j++)
            if (pg->down[j].value == r) o->down = j;
    } else {
        return rlx_fail(RLX_ERR_INTERNAL, "graph output '%s' is never computed", val->name);
    }
    return RLX_OK;
}

rlx_status rlx_plan_segments(rlx_program *p) {
    const rlx_graph *g = p->g;
    size_t nv = g->n_values;
    p->has_cpu = false;
    for (size_t s = 0; s < p->n_steps; s++) p->has_cpu |= p->step_on[s] == RLX_STEP_CPU;
    uint8_t *on_gpu = calloc(nv + 1, 1), *on_host = calloc(nv + 1, 1);
    p->segs = calloc(p->n_steps + 1, sizeof *p->segs);
    p->out = calloc(g->n_outputs + 1, sizeof *p->out);
    rlx_status st = on_gpu && on_host && p->segs && p->out ? RLX_OK : rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_inputs && !st; i++) {
        int r = p->mem.alias[g->inputs[i]];
        on_gpu[r] = !rlx_mem_host_only(&p->mem, r);
        on_host[r] = p->has_cpu;
    }
    if (!st) split(p);
    int last_gpu = -1;
    for (size_t k = 0; k < p->n_segs && !st; k++) {
        rlx_segment *sg = &p->segs[k];
        bool gpu = sg->on == RLX_STEP_GPU;
        for (size_t s = sg->s0; s < sg->s1 && !st; s++) {
            if (p->step_on[s] == RLX_STEP_VIEW) continue;
            const rlx_node *n = &g->nodes[p->steps[s]];
            for (int j = 0; j < n->n_in && !st; j++) {
                int v = n->in[j];
                if (v < 0 || g->values[v].konst || p->mem.offset[v] == RLX_NO_OFFSET) continue;
                int r = p->mem.alias[v];
                rlx_xfer x = { r, p->mem.offset[r], p->mem.bytes[r] };
                if (gpu && rlx_mem_host_only(&p->mem, r)) {
                    st = rlx_fail(RLX_ERR_INTERNAL, "%s: input '%s' is larger than one device buffer",
                                  rlx_node_desc(n), g->values[v].name);
                } else if (gpu && !on_gpu[r]) {
                    st = add_xfer(&sg->up, &sg->n_up, x);
                    on_gpu[r] = 1;
                } else if (!gpu && !on_host[r]) {
                    if (last_gpu < 0) {
                        st = rlx_fail(RLX_ERR_INTERNAL, "%s: input '%s' is nowhere", rlx_node_desc(n), g->values[v].name);
                        break;
                    }
                    rlx_segment *pg = &p->segs[last_gpu];
                    st = add_xfer(&pg->down, &pg->n_down, x);
                    on_host[r] = 1;
                }
            }
            for (int j = 0; j < n->n_out; j++) {
                int v = n->out[j];
                if (v < 0 || g->values[v].konst || p->mem.offset[v] == RLX_NO_OFFSET) continue;
                int r = p->mem.alias[v];
                on_gpu[r] = gpu;
                on_host[r] = !gpu;
            }
        }
        if (gpu) last_gpu = (int)k;
    }
    for (size_t i = 0; i < g->n_outputs && !st; i++) st = output_source(p, i, on_gpu, on_host, last_gpu);
    free(on_gpu);
    free(on_host);
    return st;
}
