/* The CPU backend executable: one host arena laid out by the memory plan,
 * tensor views into it, the kernels of a segment's CPU steps run in order.
 * It is the host side of every program: a CPU session's whole plan, and the
 * CPU segments of a device plan (its arena is then the host copy of the
 * device's, which the runtime keeps in step). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/mem.h"
#include "base/platform.h"
#include "base/tensor.h"

struct rlx_backend_exe {
    const rlx_program *p;
    unsigned char *arena;
    rlx_tensor *views; /* per value: a view into the arena (or bound memory, bind_value) or the konst */
    int *next_alias;   /* per value: the next value with the same storage root, -1 at the end */
    rlx_step_hook hook; /* called after each step, when set */
    void *hook_ctx;
    rlx_cpu_sgemm_pack *packs; /* per step: its constant GEMM operand, packed (rlx_cpu_prepare_node) */
    uint64_t released;   /* bytes of the plan's constants freed after packing (release_step) */
    unsigned pack_state; /* rlx_cpu_pack_state() when they were */
    /* the model's constants freed (rlx_program.release_model_consts): value
     * rel[i].v of the plan, read through step rel[i].s's pack (restore_consts) */
    struct released_const {
        int v, s;
    } *rel;
    size_t n_rel;
    int winograd; /* the compile's cpu config winograd (the probe packs repeat its packing) */
    /* a step's input and output views, as many as the widest node has
     * (sized at compile: runs allocate nothing) */
    const rlx_tensor **io_in;
    rlx_tensor **io_out;
};

/* The backend: the vtable and the configuration its compiles use. */
typedef struct cpu_backend {
    rlx_backend base;
    rlx_cpu_config cfg;
} cpu_backend;

static rlx_tensor *value_view(struct rlx_backend_exe *e, int v) { return v < 0 ? NULL : &e->views[v]; }

static bool cpu_supports(rlx_backend *be, const rlx_graph *g, const rlx_node *n) {
    (void)be;
    (void)g;
    return rlx_cpu_kernel_of(n->op) != NULL;
}

static void cpu_destroy_exe(rlx_backend_exe *e);

/* Which constants the compile frees after packing (release_step). */
typedef struct release_plan {
    int *last;    /* per value: the last step that reads it, -1: none (or not a candidate) */
    uint8_t *use; /* per value: 1 read through packs alone so far, 2 read otherwise */
} release_plan;

/* Orders konst pointers (release_begin finds those two values share). */
typedef struct konst_ref {
    const rlx_tensor *t;
    int v;
} konst_ref;

static int cmp_konst_ref(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const konst_ref *)a)->t, y = (uintptr_t)((const konst_ref *)b)->t;
    return x < y ? -1 : x > y;
}

/* Whether the model's constant t may be freed: f32, at most 2^24 elements
 * (the probe's indices, probe_pack, are then exact floats). */
static bool model_konst_ok(const rlx_tensor *t) {
    if (t->dtype != RLX_DTYPE_F32 || !t->data) return false;
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n > 0 && n <= (1u << 24) && n * sizeof(float) == t->nbytes;
}

/* The plan's own constants are candidates, and with
 * p->release_model_consts the model's (borrowed) f32 ones that no other
 * value of the plan shares; graph outputs and every constant of a plan
 * with device steps are not (a GPU session's CPU backend keeps them all:
 * session.c). */
static bool release_begin(const rlx_program *p, release_plan *r) {
    const rlx_graph *g = p->g;
    r->last = malloc((g->n_values + 1) * sizeof *r->last);
    r->use = calloc(g->n_values + 1, 1);
    if (!r->last || !r->use) return false;
    for (size_t v = 0; v < g->n_values; v++) r->last[v] = -1;
    for (size_t s = 0; s < p->n_steps; s++) {
        if (p->step_on[s] == RLX_STEP_GPU) return false;
        const rlx_node *n = &g->nodes[p->steps[s]];
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) r->last[n->in[j]] = (int)s;
    }
    for (size_t i = 0; i < g->n_outputs; i++) r->use[g->outputs[i]] = 2;
    size_t nb = 0;
    for (size_t v = 0; v < g->n_values; v++) {
        const rlx_value *val = &g->values[v];
        if (!val->konst) r->use[v] = 2;
        else if (val->flags & RLX_VALUE_KONST_BORROWED) {
            if (p->release_model_consts && model_konst_ok(val->konst)) nb++;
            else r->use[v] = 2;
        }
    }
    if (!nb) return true;
    /* two values of one model tensor (one may be read plain): neither goes */
    konst_ref *refs = malloc(nb * sizeof *refs);
    if (!refs) return false;
    nb = 0;
    for (size_t v = 0; v < g->n_values; v++)
        if (g->values[v].konst && (g->values[v].flags & RLX_VALUE_KONST_BORROWED) && r->use[v] != 2)
            refs[nb++] = (konst_ref){ g->values[v].konst, (int)v };
    qsort(refs, nb, sizeof *refs, cmp_konst_ref);
    for (size_t i = 1; i < nb; i++)
        if (refs[i].t == refs[i - 1].t) r->use[refs[i].v] = r->use[refs[i - 1].v] = 2;
    free(refs);
    return true;
}

/* Step s's packing of its input 1 redone on a probe of w's shape whose
 * element i holds i + 1 (exact: model_konst_ok), into *probe: each packed
 * float then names the plain element it copies (0: padding). */
static rlx_status probe_pack(struct rlx_backend_exe *e, size_t s, const rlx_tensor *w, rlx_cpu_sgemm_pack *probe) {
    const rlx_program *p = e->p;
    const rlx_node *n = &p->g->nodes[p->steps[s]];
    memset(probe, 0, sizeof *probe);
    rlx_tensor pt = *w;
    pt.data = rlx_alloc_aligned(w->nbytes);
    const rlx_tensor **in = calloc((size_t)n->n_in + 1, sizeof *in);
    if (!pt.data || !in) {
        rlx_free_aligned(pt.data);
        free(in);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (restoring a packed weight)");
    }
    float *f = pt.data;
    for (size_t i = 0; i < w->nbytes / sizeof(float); i++) f[i] = (float)(i + 1);
    for (int j = 0; j < n->n_in; j++) in[j] = value_view(e, n->in[j]);
    in[1] = &pt;
    rlx_status st = rlx_cpu_prepare_node_with(p->g, n, in, e->winograd, probe);
    rlx_free_aligned(pt.data);
    free(in);
    return st;
}

/* The floats of pack pk's layouts: data (the GEMM panels) in *nd, wt
 * (channels-in-lanes 1x1 weights) in *nw; false for another kind of pack
 * (int8, recurrent, Winograd: not plain copies). */
static bool pack_floats(const rlx_cpu_sgemm_pack *pk, size_t *nd, size_t *nw) {
    if (pk->q8 || pk->q8conv || pk->rnn_r || pk->rnn_w || pk->wino || (!pk->data && !pk->wt) ||
        (pk->data && !pk->w))
        return false;
    *nd = pk->data ? pk->groups * ((pk->lanes + pk->w - 1) / pk->w * pk->w) * pk->k : 0;
    *nw = pk->wt ? pk->wt_groups * pk->wt_lanes * pk->wt_k : 0;
    return true;
}

/* Whether packs a and b have one layout (plain-copy kinds). */
static bool pack_layout_same(const rlx_cpu_sgemm_pack *a, const rlx_cpu_sgemm_pack *b) {
    size_t ad, aw, bd, bw;
    return pack_floats(a, &ad, &aw) && pack_floats(b, &bd, &bw) && ad == bd && aw == bw && !a->data == !b->data &&
           !a->wt == !b->wt && a->is_b == b->is_b && a->groups == b->groups && a->lanes == b->lanes && a->k == b->k &&
           a->w == b->w && a->wt_groups == b->wt_groups && a->wt_lanes == b->wt_lanes && a->wt_k == b->wt_k;
}

/* Whether packs a and b have one layout and the same bits. */
static bool pack_same(const rlx_cpu_sgemm_pack *a, const rlx_cpu_sgemm_pack *b) {
    if (!pack_layout_same(a, b)) return false;
    size_t nd, nw;
    pack_floats(a, &nd, &nw);
    return (!nd || memcmp(a->data, b->data, nd * sizeof(float)) == 0) &&
           (!nw || memcmp(a->wt, b->wt, nw * sizeof(float)) == 0);
}

/* Copies each float of pack pk to the plain element (plain, numel floats)
 * that the same float of its probe (probe_pack) names. False when the
 * layouts differ, a probe float names no element or an element is in no
 * packed float. */
static bool unpack_walk(const rlx_cpu_sgemm_pack *pk, const rlx_cpu_sgemm_pack *probe, float *plain, size_t numel) {
    size_t nd, nw, qd, qw;
    if (!pack_floats(pk, &nd, &nw) || !pack_floats(probe, &qd, &qw) || nd != qd || nw != qw ||
        !pk->data != !probe->data || !pk->wt != !probe->wt)
        return false;
    const float *a[2] = { pk->data, pk->wt }, *q[2] = { probe->data, probe->wt };
    size_t len[2] = { nd, nw };
    uint8_t *seen = calloc(numel, 1);
    if (!seen) return false;
    bool ok = true;
    /* by runs of consecutive elements: one copy each */
    for (int b = 0; b < 2 && ok; b++)
        for (size_t i = 0; i < len[b] && ok;) {
            float qi = q[b][i];
            if (qi == 0.0f) {
                i++;
                continue;
            }
            if (!(qi >= 1.0f && qi <= (float)numel && qi == (float)(size_t)qi)) {
                ok = false;
                break;
            }
            size_t at = (size_t)qi - 1, run = 1;
            while (i + run < len[b] && at + run < numel && q[b][i + run] == (float)(at + run + 1)) run++;
            memcpy(&plain[at], &a[b][i], run * sizeof(float));
            memset(seen + at, 1, run);
            i += run;
        }
    for (size_t i = 0; i < numel && ok; i++) ok = seen[i];
    free(seen);
    return ok;
}

/* Step s's packing redone on the restored weight w (its input 1): the same
 * pack as the compile's, bit for bit, or w is not what was packed. */
static bool repack_same(struct rlx_backend_exe *e, size_t s, const rlx_tensor *w) {
    const rlx_program *p = e->p;
    const rlx_node *n = &p->g->nodes[p->steps[s]];
    const rlx_tensor **in = calloc((size_t)n->n_in + 1, sizeof *in);
    if (!in) return false;
    for (int j = 0; j < n->n_in; j++) in[j] = value_view(e, n->in[j]);
    in[1] = w;
    rlx_cpu_sgemm_pack again;
    rlx_status st = rlx_cpu_prepare_node_with(p->g, n, in, e->winograd, &again);
    free(in);
    bool ok = !st && pack_same(&e->packs[s], &again);
    rlx_cpu_sgemm_pack_free(&again);
    if (st) rlx_clear_error();
    return ok;
}

/* After step s was packed: frees the plain copy of each constant it reads
 * that every step reading it (s the last) reads through its pack alone
 * (rlx_cpu_pack_serves, input 1 of a CPU step): those weights then live
 * once, packed (issue 13), and freeing them as the packing goes keeps the
 * compile's peak at about one copy too. Safe for the plan's own constants:
 * its passes made them (folded weights: ConstantOfShape, a batch norm
 * folded into the Conv, ...), nothing outside the plan sees them, a plan
 * for other input shapes folds its own from the model's graph, and no pass
 * runs after the compile. The model's weights go only where the session
 * asked (p->release_model_consts: it is the model's only holder) and the
 * pack is of a plain-copy kind (pack_floats): the session gives them back
 * (restore_consts, checked bit for bit) before anything else reads them
 * (another plan's passes, an eager run). */
static void release_step(struct rlx_backend_exe *e, release_plan *r, size_t s, const rlx_tensor *const *in) {
    const rlx_program *p = e->p;
    const rlx_node *n = &p->g->nodes[p->steps[s]];
    bool serves = p->step_on[s] == RLX_STEP_CPU && rlx_cpu_pack_serves(n, in, &e->packs[s]);
    for (int j = 0; j < n->n_in; j++) {
        int v = n->in[j];
        if (v < 0 || r->use[v] == 2) continue;
        r->use[v] = serves && j == 1 ? 1 : 2;
    }
    for (int j = 0; j < n->n_in; j++) {
        int v = n->in[j];
        if (v < 0 || r->use[v] != 1 || r->last[v] != (int)s) continue;
        rlx_tensor *t = p->g->values[v].konst;
        r->use[v] = 2;
        if (p->g->values[v].flags & RLX_VALUE_KONST_BORROWED) {
            size_t nd, nw;
            if (!pack_floats(&e->packs[s], &nd, &nw)) continue; /* no plain copy to unpack */
            struct released_const *nr = realloc(e->rel, (e->n_rel + 1) * sizeof *nr);
            if (!nr) continue; /* kept: no record to restore it from */
            e->rel = nr;
            e->rel[e->n_rel++] = (struct released_const){ v, (int)s };
        }
        rlx_free_aligned(t->data);
        t->data = NULL; /* the shape and nbytes stay: reports count the weights */
        e->views[v].data = NULL;
        e->released += t->nbytes;
    }
}

/* rlx_backend.restore_consts: each model constant this plan freed that is
 * still missing, unpacked from the pack of the step that read it last
 * (probe_pack maps each packed float to its element) and checked: packing
 * the result again must give that pack bit for bit, and every element must
 * have come from it; else an error, never a wrong weight. */
static rlx_status cpu_restore_consts(rlx_backend_exe *e) {
    if (!e->n_rel) return RLX_OK;
    if (rlx_cpu_pack_state() != e->pack_state)
        return rlx_fail(RLX_ERR_INTERNAL, "the CPU GEMM kernel or path changed since a plan packed the model's weights "
                                          "and freed their plain copy: they cannot be restored (set cpu.release_packed=0)");
    /* one probe serves the weights of one shape, op and pack layout (the
     * layers of a model): a reused one that does not fit fails the checks
     * and is made again */
    rlx_cpu_sgemm_pack probe;
    memset(&probe, 0, sizeof probe);
    const rlx_tensor *probe_w = NULL;
    size_t probe_s = 0;
    rlx_status st = RLX_OK;
    for (size_t i = 0; i < e->n_rel && !st; i++) {
        rlx_tensor *t = e->p->g->values[e->rel[i].v].konst;
        if (t->data) continue; /* restored from another plan, or never gone */
        float *buf = rlx_alloc_aligned(t->nbytes);
        if (!buf) {
            st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (restoring %llu bytes of a model weight)",
                          (unsigned long long)t->nbytes);
            break;
        }
        size_t s = (size_t)e->rel[i].s;
        const rlx_graph *g = e->p->g;
        bool ok = false;
        for (int attempt = 0; attempt < 2 && !ok && !st; attempt++) {
            bool reuse = attempt == 0 && probe_w && probe_w->rank == t->rank &&
                         memcmp(probe_w->dims, t->dims, sizeof t->dims) == 0 && probe_w->nbytes == t->nbytes &&
                         g->nodes[e->p->steps[probe_s]].op == g->nodes[e->p->steps[s]].op &&
                         pack_layout_same(&e->packs[probe_s], &e->packs[s]);
            if (!reuse) {
                rlx_cpu_sgemm_pack_free(&probe);
                probe_w = NULL;
                st = probe_pack(e, s, t, &probe);
                if (st) break;
                probe_w = t, probe_s = s;
            }
            ok = unpack_walk(&e->packs[s], &probe, buf, t->nbytes / sizeof(float));
            if (ok) { /* exact: packing it again gives the plan's pack, bit for bit */
                rlx_tensor w = *t;
                w.data = buf;
                ok = repack_same(e, s, &w);
            }
            if (!reuse) break;
        }
        if (!ok) {
            rlx_free_aligned(buf);
            if (!st)
                st = rlx_fail(RLX_ERR_INTERNAL, "cannot unpack model weight '%s' from its pack",
                              e->p->g->values[e->rel[i].v].name);
            break;
        }
        t->data = buf;
    }
    rlx_cpu_sgemm_pack_free(&probe);
    return st;
}

static rlx_status cpu_compile(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out) {
    const rlx_cpu_config *cfg = &((const cpu_backend *)be)->cfg;
    *out = NULL;
    struct rlx_backend_exe *e = calloc(1, sizeof *e);
    if (!e) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    const rlx_graph *g = p->g;
    e->p = p;
    e->arena = rlx_alloc_aligned(p->mem.arena_bytes ? p->mem.arena_bytes : 1);
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
    /* the values sharing each storage root, chained from the root (bind_value) */
    e->next_alias = malloc((g->n_values + 1) * sizeof *e->next_alias);
    if (!e->next_alias) {
        cpu_destroy_exe(e);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < g->n_values; i++) e->next_alias[i] = -1;
    for (size_t i = g->n_values; i-- > 0;) {
        int r = p->mem.alias[i];
        if (r != (int)i) {
            e->next_alias[i] = e->next_alias[r];
            e->next_alias[r] = (int)i;
        }
    }
    /* the CPU steps' constant GEMM operands, packed once for every run */
    e->packs = calloc(p->n_steps + 1, sizeof *e->packs);
    size_t max_in = 1, max_out = 1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].n_in > 0 && (size_t)g->nodes[i].n_in > max_in) max_in = (size_t)g->nodes[i].n_in;
        if (g->nodes[i].n_out > 0 && (size_t)g->nodes[i].n_out > max_out) max_out = (size_t)g->nodes[i].n_out;
    }
    e->io_in = calloc(max_in, sizeof *e->io_in);
    e->io_out = calloc(max_out, sizeof *e->io_out);
    if (!e->packs || !e->io_in || !e->io_out) {
        cpu_destroy_exe(e);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const rlx_tensor **in = e->io_in;
    e->winograd = cfg->winograd;
    release_plan rp = { NULL, NULL };
    bool release = cfg->prepack && cfg->release_packed && release_begin(p, &rp);
    for (size_t s = 0; s < p->n_steps; s++) {
        const rlx_node *n = &g->nodes[p->steps[s]];
        if (!release && (!cfg->prepack || p->step_on[s] != RLX_STEP_CPU)) continue;
        for (int j = 0; j < n->n_in; j++) in[j] = value_view(e, n->in[j]);
        rlx_status st = RLX_OK;
        if (cfg->prepack && p->step_on[s] == RLX_STEP_CPU)
            st = rlx_cpu_prepare_node_with(g, n, in, cfg->winograd, &e->packs[s]);
        if (st) {
            free(rp.last);
            free(rp.use);
            cpu_destroy_exe(e);
            return st;
        }
        if (release) release_step(e, &rp, s, in);
    }
    free(rp.last);
    free(rp.use);
    e->pack_state = rlx_cpu_pack_state();
    *out = e;
    return RLX_OK;
}

static rlx_status cpu_upload(rlx_backend_exe *e, uint64_t off, const void *src, uint64_t bytes) {
    if (bytes && src != e->arena + off) memcpy(e->arena + off, src, (size_t)bytes);
    return RLX_OK;
}

/* Runs every non-view step of the segment (a one-node test program may
 * mark its step GPU and run it here); read-backs are copies out of the arena. */
static rlx_status cpu_run_segment(rlx_backend_exe *e, size_t k, void *const *down_dst, rlx_prof *prof) {
    const rlx_program *p = e->p;
    const rlx_graph *g = p->g;
    const rlx_segment *sg = &p->segs[k];
    const rlx_tensor **in = e->io_in;
    rlx_tensor **out = e->io_out;
    /* packs made for another GEMM kernel or path than the process's now
     * (test hooks) would send their nodes to the freed plain weights */
    if (e->released && rlx_cpu_pack_state() != e->pack_state)
        return rlx_fail(RLX_ERR_INTERNAL,
                        "the CPU GEMM kernel or path changed since this plan packed its weights and freed their "
                        "plain copy (compile it again, or set cpu.release_packed=0)");
    for (size_t s = sg->s0; s < sg->s1; s++) {
        if (p->step_on[s] == RLX_STEP_VIEW) continue;
        const rlx_node *n = &g->nodes[p->steps[s]];
        for (int j = 0; j < n->n_in; j++) in[j] = value_view(e, n->in[j]);
        for (int j = 0; j < n->n_out; j++) out[j] = value_view(e, n->out[j]);
        double t0 = prof ? rlx_now_seconds() : 0.0;
        RLX_TRY(rlx_cpu_run_node_packed(g, n, in, out, rlx_cpu_sgemm_pack_holds(&e->packs[s]) ? &e->packs[s] : NULL));
        if (prof) RLX_TRY(rlx_prof_add(prof, (int)s, "cpu", (t0 - prof->t0) * 1e6, (rlx_now_seconds() - t0) * 1e6, false));
        if (e->hook) RLX_TRY(e->hook(e->hook_ctx, s));
    }
    for (size_t i = 0; down_dst && i < sg->n_down; i++)
        if (down_dst[i] != e->arena + sg->down[i].off) memcpy(down_dst[i], e->arena + sg->down[i].off, (size_t)sg->down[i].bytes);
    return RLX_OK;
}

static unsigned char *cpu_host_arena(rlx_backend_exe *e) { return e->arena; }

static void cpu_bind_value(rlx_backend_exe *e, int value, void *data) {
    const rlx_mem_plan *m = &e->p->mem;
    for (int v = value; v >= 0; v = e->next_alias[v])
        if (m->offset[v] != RLX_NO_OFFSET && !e->p->g->values[v].konst)
            e->views[v].data = data ? (unsigned char *)data + (m->offset[v] - m->offset[value]) : e->arena + m->offset[v];
}

static void cpu_set_step_hook(rlx_backend_exe *e, rlx_step_hook fn, void *ctx) {
    e->hook = fn;
    e->hook_ctx = ctx;
}

static void cpu_destroy_exe(rlx_backend_exe *e) {
    if (!e) return;
    for (size_t s = 0; e->packs && s < e->p->n_steps; s++) rlx_cpu_sgemm_pack_free(&e->packs[s]);
    free(e->packs);
    free(e->rel);
    free(e->io_in);
    free(e->io_out);
    free(e->next_alias);
    rlx_free_aligned(e->arena);
    free(e->views);
    free(e);
}

static void cpu_destroy(rlx_backend *be) { free((cpu_backend *)be); }

rlx_status rlx_backend_cpu_create(const rlx_cpu_config *cfg, rlx_backend **out) {
    *out = NULL;
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    cb->cfg = cfg ? *cfg : (rlx_cpu_config){ .prepack = true, .winograd = 0 };
    rlx_backend *be = &cb->base;
    be->name = "cpu";
    be->kind = RLX_DEVICE_CPU;
    strcpy(be->device_name, "cpu");
    be->supports = cpu_supports;
    be->compile = cpu_compile;
    be->upload = cpu_upload;
    be->restore_consts = cpu_restore_consts;
    be->run_segment = cpu_run_segment;
    be->host_arena = cpu_host_arena;
    be->set_step_hook = cpu_set_step_hook;
    be->bind_value = cpu_bind_value;
    be->destroy_exe = cpu_destroy_exe;
    be->destroy = cpu_destroy;
    *out = be;
    return RLX_OK;
}
