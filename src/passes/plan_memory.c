/* passes/plan_memory.c — liveness-based arena offsets. */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/platform.h"
#include "ir/op.h"
#include "runtime/program.h"

void rlx_program_destroy(rlx_program *p) {
    if (!p) return;
    rlx_graph_destroy(p->g);
    free(p->steps);
    free(p->step_on);
    free(p->mem.offset);
    free(p->mem.bytes);
    free(p->mem.alias);
    free(p);
}

typedef struct interval {
    int value;
    int first, last; /* step range, inclusive */
    uint64_t bytes;
} interval;

static int by_size_desc(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first;
}

static uint64_t align_up(uint64_t x) { return (x + RLX_ARENA_ALIGN - 1) / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN; }

rlx_status rlx_plan_memory(rlx_program *p) {
    rlx_graph *g = p->g;
    size_t nv = g->n_values;
    rlx_mem_plan *m = &p->mem;
    m->offset = malloc((nv + 1) * sizeof *m->offset);
    m->bytes = calloc(nv + 1, sizeof *m->bytes);
    m->alias = malloc((nv + 1) * sizeof *m->alias);
    int *first = malloc((nv + 1) * sizeof(int)), *last = malloc((nv + 1) * sizeof(int));
    interval *iv = malloc((nv + 1) * sizeof *iv);
    rlx_status st = RLX_OK;
    if (!m->offset || !m->bytes || !m->alias || !first || !last || !iv) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (memory plan)");
        goto done;
    }
    bool no_reuse = rlx_env_flag("RLX_NO_REUSE");
    int n_steps = (int)p->n_steps;
    for (size_t i = 0; i < nv; i++) {
        m->offset[i] = RLX_NO_OFFSET;
        m->alias[i] = (int)i;
        first[i] = -2; /* not in the arena */
        last[i] = -2;
        const rlx_value *v = &g->values[i];
        if (!v->konst && rlx_value_is_static(v)) m->bytes[i] = rlx_value_numel(v) * rlx_dtype_size(v->dtype);
    }
    for (size_t i = 0; i < g->n_inputs; i++) first[g->inputs[i]] = last[g->inputs[i]] = -1;
    for (int s = 0; s < n_steps; s++) {
        const rlx_node *n = &g->nodes[p->steps[s]];
        if (p->step_on[s] == RLX_STEP_VIEW && n->in[0] >= 0 && n->out[0] >= 0) {
            int root = m->alias[n->in[0]];
            m->alias[n->out[0]] = root;
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || g->values[v].konst) continue;
            int r = m->alias[v];
            if (first[r] == -2) first[r] = s;
            if (last[r] < s) last[r] = s;
        }
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || g->values[v].konst) continue;
            int r = m->alias[v];
            if (first[r] == -2) continue; /* outer/undefined: not ours */
            if (last[r] < s) last[r] = s;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        int r = m->alias[g->outputs[i]];
        if (first[r] != -2) last[r] = n_steps;
    }
    size_t n_iv = 0;
    uint64_t noreuse = 0;
    for (size_t i = 0; i < nv; i++) {
        if (m->alias[i] != (int)i || first[i] == -2) continue;
        uint64_t b = align_up(m->bytes[i] ? m->bytes[i] : 1);
        iv[n_iv++] = (interval){ (int)i, first[i], last[i], b };
        noreuse += b;
    }
    /* peak live bytes: the lower bound of any plan */
    uint64_t peak = 0;
    for (int s = -1; s <= n_steps; s++) {
        uint64_t live = 0;
        for (size_t j = 0; j < n_iv; j++)
            if (iv[j].first <= s && s <= iv[j].last) live += iv[j].bytes;
        if (live > peak) peak = live;
    }
    qsort(iv, n_iv, sizeof *iv, by_size_desc);
    uint64_t arena = 0;
    for (size_t j = 0; j < n_iv; j++) {
        uint64_t off = 0;
        if (no_reuse) {
            off = arena;
        } else {
            /* best fit: the smallest gap among placed intervals that
             * overlap in time, scanning placed ones by offset */
            uint64_t best = UINT64_MAX, best_gap = UINT64_MAX;
            /* collect overlapping placed intervals sorted by offset */
            size_t cnt = 0;
            interval *ov = malloc((j + 1) * sizeof *ov);
            if (!ov) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (memory plan)"); goto done; }
            for (size_t q = 0; q < j; q++)
                if (!(iv[q].last < iv[j].first || iv[j].last < iv[q].first)) {
                    ov[cnt] = iv[q];
                    ov[cnt].first = 0;
                    ov[cnt++].bytes = iv[q].bytes;
                }
            /* insertion sort by offset (m->offset of the value) */
            for (size_t a = 1; a < cnt; a++)
                for (size_t b = a; b > 0 && m->offset[ov[b - 1].value] > m->offset[ov[b].value]; b--) {
                    interval t = ov[b]; ov[b] = ov[b - 1]; ov[b - 1] = t;
                }
            uint64_t cur = 0;
            for (size_t a = 0; a < cnt; a++) {
                uint64_t o = m->offset[ov[a].value];
                if (o >= cur && o - cur >= iv[j].bytes && o - cur < best_gap) {
                    best = cur;
                    best_gap = o - cur;
                }
                if (o + ov[a].bytes > cur) cur = o + ov[a].bytes;
            }
            free(ov);
            off = best != UINT64_MAX ? best : cur;
        }
        m->offset[iv[j].value] = off;
        if (off + iv[j].bytes > arena) arena = off + iv[j].bytes;
    }
    for (size_t i = 0; i < nv; i++)
        if (m->alias[i] != (int)i) m->offset[i] = m->offset[m->alias[i]];
    m->arena_bytes = arena;
    m->noreuse_bytes = noreuse;
    m->peak_bytes = peak;
done:
    free(first);
    free(last);
    free(iv);
    return st;
}
