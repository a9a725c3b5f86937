/* plan/memory.c — liveness-based arena offsets (rlx_plan_memory).
 *
 * 1. Lifetimes: each storage root (a value that is not a view of another)
 *    lives from the step that writes it (graph inputs: -1) to the last step
 *    that reads it or any view of it (graph outputs: n_steps).
 * 2. Placement: the intervals are placed one at a time in one of several
 *    orders; each takes the best-fitting gap among placed intervals that
 *    overlap it in time, or the end of them. Every order gives a valid plan;
 *    the smallest arena wins. Tensors larger than one device buffer
 *    (host-only: no device step touches them) are placed once, by size,
 *    after the device's part of the arena (mem.device_bytes), so that a
 *    device's copy of the arena never holds them.
 * 3. The lower bound: the most bytes live at one step.
 *
 * Concat in place (CPU-only plans): an input of a CPU Concat whose output
 * is one contiguous block per input (the dims before the axis are 1, as
 * NCHW channel concatenations at batch 1) is planned as a slice of the
 * Concat's output (concat_in_place), so the step that produces it writes
 * there and the Concat finds its bytes already in place (k_concat skips
 * them). A chain (DenseNet's concatenations of concatenations) nests the
 * slices in the last one. */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/platform.h"
#include "ir/op.h"
#include "plan/plan.h"

typedef struct interval {
    int value;       /* storage root */
    int first, last; /* live steps, inclusive */
    uint64_t bytes;  /* aligned size */
    uint64_t off;    /* placed offset */
} interval;

static uint64_t align_up(uint64_t x) { return (x + RLX_ARENA_ALIGN - 1) / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN; }

/* ------------------------------------------------------------ orders */

static int cmp_size(const void *a, const void *b) {
    const interval *x = *(const interval *const *)a, *y = *(const interval *const *)b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->value - y->value;
}

static int cmp_time(const void *a, const void *b) {
    const interval *x = *(const interval *const *)a, *y = *(const interval *const *)b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->value - y->value;
}

typedef struct step_live {
    int step;
    uint64_t live;
} step_live;

static int cmp_breadth(const void *a, const void *b) {
    const step_live *x = a, *y = b;
    if (x->live != y->live) return x->live < y->live ? 1 : -1;
    return x->step - y->step;
}

/* Greedy by breadth: steps by live bytes, most first; at each step the
 * intervals live there that are not yet in the order, largest first.
 * `by_size` is the size order; the result goes to `order`. */
static rlx_status order_breadth(interval *const *by_size, size_t n, int n_steps, interval **order) {
    size_t ns = (size_t)n_steps + 2; /* steps -1 .. n_steps */
    step_live *sl = calloc(ns, sizeof *sl);
    uint64_t *diff = calloc(ns + 1, sizeof *diff);
    uint64_t *sub = calloc(ns + 1, sizeof *sub);
    char *taken = calloc(n + 1, 1);
    rlx_status st = RLX_OK;
    if (!sl || !diff || !sub || !taken) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (memory plan)");
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        diff[by_size[j]->first + 1] += by_size[j]->bytes;
        sub[by_size[j]->last + 2] += by_size[j]->bytes;
    }
    uint64_t live = 0;
    for (size_t s = 0; s < ns; s++) {
        live += diff[s];
        live -= sub[s];
        sl[s].step = (int)s - 1;
        sl[s].live = live;
    }
    qsort(sl, ns, sizeof *sl, cmp_breadth);
    /* for each step in breadth order, walk the size order once; the
     * intervals live at a step are found by scanning, so this costs
     * O(steps * n) in the worst case, bounded by the caller */
    size_t k = 0;
    for (size_t s = 0; s < ns && k < n; s++) {
        int step = sl[s].step;
        for (size_t j = 0; j < n; j++) {
            if (taken[j]) continue;
            const interval *iv = by_size[j];
            if (iv->first <= step && step <= iv->last) {
                taken[j] = 1;
                order[k++] = by_size[j];
            }
        }
    }
    for (size_t j = 0; j < n; j++) /* live at no step: cannot happen, but stay total */
        if (!taken[j]) order[k++] = by_size[j];
done:
    free(sl);
    free(diff);
    free(sub);
    free(taken);
    return st;
}

/* ------------------------------------------------------------ placement */

/* Lowest offset >= at where `bytes` fit without crossing a multiple of
 * limit (0: no limit). */
static uint64_t fit_limit(uint64_t at, uint64_t bytes, uint64_t limit) {
    if (!limit || bytes == 0) return at;
    if (at / limit != (at + bytes - 1) / limit) return (at / limit + 1) * limit;
    return at;
}

/* Places the intervals in `order`, each at the best-fitting gap among the
 * placed intervals that overlap it in time. `placed` is scratch for n
 * pointers, kept sorted by offset. Returns the arena size. */
static uint64_t place(interval **order, size_t n, interval **placed, uint64_t limit) {
    size_t n_placed = 0;
    uint64_t arena = 0;
    for (size_t j = 0; j < n; j++) {
        interval *iv = order[j];
        uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cur = 0;
        for (size_t q = 0; q < n_placed; q++) {
            const interval *o = placed[q];
            if (o->last < iv->first || iv->last < o->first) continue;
            if (o->off > cur) {
                uint64_t at = fit_limit(cur, iv->bytes, limit);
                if (at + iv->bytes <= o->off && o->off - cur < best_gap) {
                    best = at;
                    best_gap = o->off - cur;
                }
            }
            if (o->off + o->bytes > cur) cur = o->off + o->bytes;
        }
        iv->off = best != UINT64_MAX ? best : fit_limit(cur, iv->bytes, limit);
        if (iv->off + iv->bytes > arena) arena = iv->off + iv->bytes;
        /* insert by offset */
        size_t at = n_placed;
        while (at > 0 && placed[at - 1]->off > iv->off) {
            placed[at] = placed[at - 1];
            at--;
        }
        placed[at] = iv;
        n_placed++;
    }
    return arena;
}

/* ------------------------------------------------------------ the pass */

/* Above this many intervals only the size order runs (each order costs
 * O(n^2)); the breadth order, which scans the intervals once per step,
 * runs while intervals x steps stays below BREADTH_WORK. */
#define MANY_INTERVALS 20000
#define BREADTH_WORK 50000000ull

/* The Concat inputs planned as slices of the Concat's output (see the top
 * of this file): par[v] the Concat output whose slice v is, at byte
 * poff[v] of it (-1: none). An input qualifies when the plan has no
 * device step, the Concat runs on the CPU with a static output that is no
 * graph input or output and whose dims before the axis are all 1, and the
 * input is a static, non-constant value of the output's dtype, produced by
 * a CPU step (not a view), no graph input or output and read by no view
 * step, appearing once in
 * this Concat, not yet a slice of another, and its slice starts at a
 * multiple of CONCAT_SLICE_ALIGN bytes; a Concat takes all of its inputs
 * or none. */
/* A slice's alignment in its Concat's output: a cache line (and an AVX-512
 * vector), so that no two producers write one line; smaller than
 * RLX_ARENA_ALIGN (256), which would leave out DenseNet's 7x7 slices of 32
 * channels (6272 bytes). Only CPU-only plans have slices. */
#define CONCAT_SLICE_ALIGN 64u

static void concat_in_place(const rlx_program *p, const rlx_mem_plan *m, int *par, uint64_t *poff, int *prod,
                            uint8_t *io) {
    const rlx_graph *g = p->g;
    size_t nv = g->n_values;
    for (size_t i = 0; i < nv; i++) par[i] = prod[i] = -1, poff[i] = 0, io[i] = 0;
    for (size_t i = 0; i < g->n_inputs; i++) io[g->inputs[i]] = 1;
    for (size_t i = 0; i < g->n_outputs; i++) io[g->outputs[i]] = 1;
    for (size_t s = 0; s < p->n_steps; s++) {
        if (p->step_on[s] == RLX_STEP_GPU) return;
        const rlx_node *n = &g->nodes[p->steps[s]];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) prod[n->out[k]] = (int)s;
        /* a viewed value stays whole: a graph output that is its view
         * binds caller memory of its size to its storage root */
        if (p->step_on[s] == RLX_STEP_VIEW && n->n_in > 0 && n->in[0] >= 0) io[n->in[0]] |= 2;
    }
    for (size_t s = 0; s < p->n_steps; s++) {
        const rlx_node *n = &g->nodes[p->steps[s]];
        int c = n->n_out == 1 ? n->out[0] : -1, ax;
        if (p->step_on[s] != RLX_STEP_CPU || n->op != RLX_OP_Concat || n->n_in < 1 || c < 0 || (io[c] & 1) ||
            !m->bytes[c] || g->values[c].konst)
            continue;
        const rlx_value *y = &g->values[c];
        if (!rlx_norm_axis(rlx_param_int(n, RLX_A_axis), y->rank, &ax)) continue;
        bool ok = true;
        for (int a = 0; a < ax && ok; a++) ok = y->dims[a] == 1;
        uint64_t off = 0;
        for (int k = 0; k < n->n_in && ok; k++) {
            int v = n->in[k];
            ok = v >= 0 && !g->values[v].konst && !io[v] && m->bytes[v] && par[v] < 0 && prod[v] >= 0 &&
                 p->step_on[prod[v]] == RLX_STEP_CPU && g->values[v].dtype == y->dtype && off % CONCAT_SLICE_ALIGN == 0;
            for (int q = 0; q < k && ok; q++) ok = n->in[q] != v;
            if (ok) off += m->bytes[v];
        }
        if (!ok || off != m->bytes[c]) continue;
        off = 0;
        for (int k = 0; k < n->n_in; k++) {
            par[n->in[k]] = c;
            poff[n->in[k]] = off;
            off += m->bytes[n->in[k]];
        }
    }
}

rlx_status rlx_plan_memory(rlx_program *p) {
    rlx_graph *g = p->g;
    size_t nv = g->n_values;
    rlx_mem_plan *m = &p->mem;
    m->offset = malloc((nv + 1) * sizeof *m->offset);
    m->bytes = calloc(nv + 1, sizeof *m->bytes);
    m->alias = malloc((nv + 1) * sizeof *m->alias);
    m->first = malloc((nv + 1) * sizeof *m->first);
    m->last = malloc((nv + 1) * sizeof *m->last);
    memset(m->strategy_bytes, 0, sizeof m->strategy_bytes);
    int *first = m->first, *last = m->last;
    interval *iv = malloc((nv + 1) * sizeof *iv);
    interval **order = malloc((nv + 1) * sizeof *order), **by_size = malloc((nv + 1) * sizeof *by_size);
    interval **placed = malloc((nv + 1) * sizeof *placed);
    uint64_t *best_off = malloc((nv + 1) * sizeof *best_off);
    uint64_t *diff = NULL;
    uint8_t *on_dev = calloc(nv + 1, 1); /* per storage root: a device step touches it */
    /* a value's byte offset in its storage root (concat_in_place's slices
     * and their views) and concat_in_place's working arrays */
    uint64_t *aoff = calloc(nv + 1, sizeof *aoff), *poff = malloc((nv + 1) * sizeof *poff);
    int *par = malloc((nv + 1) * sizeof *par), *prod = malloc((nv + 1) * sizeof *prod);
    uint8_t *io = malloc(nv + 1);
    rlx_status st = RLX_OK;
    if (!m->offset || !m->bytes || !m->alias || !first || !last || !iv || !order || !by_size || !placed || !best_off ||
        !on_dev || !aoff || !poff || !par || !prod || !io) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (memory plan)");
        goto done;
    }
    uint64_t limit = m->buffer_limit / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN;
    int n_steps = (int)p->n_steps;
    for (size_t i = 0; i < nv; i++) {
        m->offset[i] = RLX_NO_OFFSET;
        m->alias[i] = (int)i;
        first[i] = -2; /* not in the arena */
        last[i] = -2;
        const rlx_value *v = &g->values[i];
        if (!v->konst && rlx_value_is_static(v)) m->bytes[i] = rlx_value_bytes(v);
    }
    if (!m->no_reuse) {
        concat_in_place(p, m, par, poff, prod, io);
        for (size_t i = 0; i < nv; i++) {
            int r = (int)i;
            uint64_t o = 0;
            while (par[r] >= 0) o += poff[r], r = par[r];
            m->alias[i] = r;
            aoff[i] = o;
        }
    }
    /* 1. lifetimes of storage roots */
    for (size_t i = 0; i < g->n_inputs; i++) first[g->inputs[i]] = last[g->inputs[i]] = -1;
    for (int s = 0; s < n_steps; s++) {
        const rlx_node *n = &g->nodes[p->steps[s]];
        if (p->step_on[s] == RLX_STEP_VIEW && n->n_in > 0 && n->n_out > 0 && n->in[0] >= 0 && n->out[0] >= 0 &&
            !g->values[n->in[0]].konst) {
            m->alias[n->out[0]] = m->alias[n->in[0]];
            aoff[n->out[0]] = aoff[n->in[0]];
        }
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || g->values[v].konst) continue;
            int r = m->alias[v];
            if (first[r] == -2) first[r] = s;
            if (last[r] < s) last[r] = s;
            on_dev[r] |= p->step_on[s] == RLX_STEP_GPU;
        }
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || g->values[v].konst) continue;
            int r = m->alias[v];
            if (first[r] == -2) continue; /* outer/undefined: not ours */
            if (last[r] < s) last[r] = s;
            on_dev[r] |= p->step_on[s] == RLX_STEP_GPU;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        int r = m->alias[g->outputs[i]];
        if (first[r] != -2) last[r] = n_steps;
    }
    /* the device's intervals first, then the host-only ones (oversized,
     * iv[n_dev..n_iv)) */
    size_t n_iv = 0, n_dev = 0;
    uint64_t noreuse = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) n_dev = n_iv;
        for (size_t i = 0; i < nv; i++) {
            if (m->alias[i] != (int)i || first[i] == -2) continue;
            bool big = rlx_mem_oversized(m->bytes[i], limit);
            if (big != (pass == 1)) continue;
            if (big && on_dev[i]) { /* rlx_plan_create keeps such steps off the device */
                st = rlx_fail(RLX_ERR_UNSUPPORTED,
                              "value '%s' needs %llu bytes, more than one device buffer may hold (%llu bytes)",
                              g->values[i].name, (unsigned long long)m->bytes[i], (unsigned long long)limit);
                goto done;
            }
            uint64_t b = align_up(m->bytes[i] ? m->bytes[i] : 1);
            iv[n_iv] = (interval){ (int)i, first[i], last[i], b, 0 };
            by_size[n_iv] = &iv[n_iv];
            n_iv++;
            noreuse += b;
        }
    }
    /* 3. the lower bound: live bytes per step, by a difference array over
     * steps -1 .. n_steps */
    diff = calloc((size_t)n_steps + 4, sizeof *diff);
    if (!diff) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (memory plan)");
        goto done;
    }
    for (size_t j = 0; j < n_iv; j++) {
        diff[iv[j].first + 1] += iv[j].bytes;
        diff[iv[j].last + 2] -= iv[j].bytes; /* unsigned wrap-around cancels in the running sum */
    }
    uint64_t peak = 0, live = 0;
    for (int s = 0; s <= n_steps + 1; s++) {
        live += diff[s];
        if (live > peak) peak = live;
    }
    /* 2. placement: the host-only intervals once, by size, without the
     * limit (they go after the device's part); then the device's in each
     * order */
    size_t n_host = n_iv - n_dev;
    qsort(by_size + n_dev, n_host, sizeof *by_size, cmp_size);
    uint64_t host = 0;
    if (m->no_reuse) {
        for (size_t j = n_dev; j < n_iv; j++) {
            iv[j].off = host;
            host += iv[j].bytes;
        }
    } else {
        host = place(by_size + n_dev, n_host, placed, 0);
    }
    qsort(by_size, n_dev, sizeof *by_size, cmp_size);
    uint64_t best = UINT64_MAX;
    m->strategy = RLX_MEM_NO_REUSE;
    if (m->no_reuse) {
        uint64_t at = 0;
        for (size_t j = 0; j < n_dev; j++) {
            iv[j].off = fit_limit(at, iv[j].bytes, limit);
            at = iv[j].off + iv[j].bytes;
            best_off[j] = iv[j].off;
        }
        best = at;
        m->strategy_bytes[RLX_MEM_NO_REUSE] = at + host;
    } else {
        for (int k = RLX_MEM_BY_SIZE; k < RLX_MEM_N_STRATEGIES; k++) {
            if (k != RLX_MEM_BY_SIZE && n_dev > MANY_INTERVALS) break;
            if (k == RLX_MEM_BY_BREADTH && (uint64_t)n_dev * (uint64_t)(n_steps + 2) > BREADTH_WORK) continue;
            if (k == RLX_MEM_BY_SIZE) {
                memcpy(order, by_size, n_dev * sizeof *order);
            } else if (k == RLX_MEM_BY_BREADTH) {
                RLX_TRY_GOTO(st, order_breadth(by_size, n_dev, n_steps, order), done);
            } else {
                memcpy(order, by_size, n_dev * sizeof *order);
                qsort(order, n_dev, sizeof *order, cmp_time);
            }
            uint64_t a = place(order, n_dev, placed, limit);
            m->strategy_bytes[k] = a + host ? a + host : 1;
            if (a < best) {
                best = a;
                m->strategy = (rlx_mem_strategy)k;
                for (size_t j = 0; j < n_dev; j++) best_off[j] = iv[j].off;
            }
        }
    }
    if (!n_dev) best = 0;
    for (size_t j = n_dev; j < n_iv; j++) best_off[j] = best + iv[j].off;
    for (size_t j = 0; j < n_iv; j++) m->offset[iv[j].value] = best_off[j];
    for (size_t i = 0; i < nv; i++)
        if (m->alias[i] != (int)i) {
            m->offset[i] = m->offset[m->alias[i]] + aoff[i];
            first[i] = first[m->alias[i]];
            last[i] = last[m->alias[i]];
        }
    m->device_bytes = best;
    best += host;
    m->arena_bytes = best;
    m->noreuse_bytes = noreuse;
    m->peak_bytes = peak;
done:
    free(iv);
    free(order);
    free(by_size);
    free(placed);
    free(best_off);
    free(diff);
    free(on_dev);
    free(aoff);
    free(poff);
    free(par);
    free(prod);
    free(io);
    return st;
}
