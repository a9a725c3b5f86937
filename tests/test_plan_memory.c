#define _POSIX_C_SOURCE 200809L
/* The memory planner (rlx_plan_memory), tested directly on random programs:
 * random DAGs of Sum (any arity), Split (several outputs) and Identity
 * steps marked as views, random shapes and dtypes (sizes that are not
 * multiples of the alignment among them), constants among the inputs, and
 * random graph outputs. Lifetimes are recomputed here from the steps, and
 * every plan must satisfy:
 *  - no two storage roots whose lifetimes overlap share a byte (every pair
 *    is checked);
 *  - every offset is RLX_ARENA_ALIGN aligned; constants have no offset;
 *  - view outputs alias their input's storage;
 *  - graph outputs live to the end (nothing placed later reuses them);
 *  - peak_bytes equals the peak recomputed here, arena >= peak,
 *    noreuse >= arena, every tensor inside the arena;
 *  - the winning order is the smallest of those tried;
 *  - with a buffer limit no tensor crosses a multiple of it, and a tensor
 *    larger than the limit is refused naming it;
 *  - plan.no_reuse=1 gives disjoint storage and arena == noreuse.
 * Then whole models run with and without plan.no_reuse and must give
 * identical bits (on the CPU and, when there is one, the GPU), and
 * Concats at batch 1 take their inputs as slices of their output
 * (test_concat_in_place). */
#include "test.h"

#include "base/mem.h"
#include "base/status.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "runtime/session.h"

static int rnd(int n) { return (int)(test_rand_u64() % (uint64_t)n); }

static uint64_t align_up(uint64_t x) { return (x + RLX_ARENA_ALIGN - 1) / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN; }

/* ------------------------------------------------------------ random programs */

static const rlx_dtype k_dtypes[] = { RLX_DTYPE_F32, RLX_DTYPE_I64, RLX_DTYPE_U8, RLX_DTYPE_F16, RLX_DTYPE_BOOL };

static int new_value(rlx_graph *g, int max_dim) {
    int id = -1;
    if (rlx_graph_add_value(g, NULL, &id) != RLX_OK) return -1;
    rlx_value *v = &g->values[id];
    int rank = rnd(4);
    int64_t dims[4];
    for (int i = 0; i < rank; i++) dims[i] = 1 + rnd(max_dim);
    if (rank && rnd(20) == 0) dims[0] = 0; /* an empty tensor now and then */
    rlx_value_set_shape(v, rank, dims, NULL);
    v->dtype = k_dtypes[rnd((int)RLX_ARRAY_LEN(k_dtypes))];
    return id;
}

/* A random program of about n_nodes steps. */
static rlx_program *random_program(int n_nodes, int max_dim) {
    rlx_graph *g = NULL;
    if (rlx_graph_create(13, &g)) return NULL;
    int *pool = malloc(sizeof(int) * (size_t)(n_nodes * 4 + 16));
    int n_pool = 0;
    int n_in = 1 + rnd(3);
    for (int i = 0; i < n_in; i++) {
        int v = new_value(g, max_dim);
        g->values[v].flags |= RLX_VALUE_INPUT;
        RLX_GROW(g->inputs, g->cap_inputs, g->n_inputs + 1);
        g->inputs[g->n_inputs++] = v;
        pool[n_pool++] = v;
    }
    for (int i = 0; i < 2; i++) { /* constants: never in the arena */
        int v;
        rlx_graph_add_value(g, NULL, &v);
        int64_t d = 3;
        rlx_tensor *t = NULL;
        rlx_tensor_create(RLX_DTYPE_F32, &d, 1, &t);
        rlx_value_set_konst(&g->values[v], t);
        g->values[v].flags |= RLX_VALUE_INITIALIZER;
        pool[n_pool++] = v;
    }
    rlx_program *p = calloc(1, sizeof *p);
    p->g = g;
    p->steps = malloc(sizeof(int) * (size_t)(n_nodes + 1));
    p->step_on = malloc((size_t)n_nodes + 1);
    for (int s = 0; s < n_nodes; s++) {
        int kind = rnd(10); /* 0-5 Sum, 6-7 view, 8-9 Split */
        int in[4], out[3], nin = 1, nout = 1;
        /* prefer recent values so that lifetimes vary */
        for (int k = 0; k < 4; k++) {
            int back = rnd(5) ? rnd(n_pool < 6 ? n_pool : 6) : rnd(n_pool);
            in[k] = pool[n_pool - 1 - back];
        }
        const char *op = "Sum";
        uint8_t on = RLX_STEP_CPU;
        if (kind < 6) {
            nin = 1 + rnd(4);
        } else if (kind < 8) {
            op = "Identity";
            on = RLX_STEP_VIEW;
            /* views never alias constants (the runtime runs those) */
            for (int t = 0; t < 8 && g->values[in[0]].konst; t++) in[0] = pool[rnd(n_pool)];
            if (g->values[in[0]].konst) on = RLX_STEP_CPU;
        } else {
            op = "Split";
            nout = 2 + rnd(2);
        }
        for (int k = 0; k < nout; k++) out[k] = new_value(g, max_dim);
        if (on == RLX_STEP_VIEW) { /* same size as its input */
            rlx_value *x = &g->values[in[0]], *y = &g->values[out[0]];
            rlx_value_set_shape(y, x->rank, x->dims, NULL);
            y->dtype = x->dtype;
        }
        int node = -1;
        if (rlx_graph_add_node(g, op, "", NULL, in, nin, out, nout, NULL, 0, &node)) {
            fprintf(stderr, "add_node: %s\n", rlx_last_error());
            continue;
        }
        for (int k = 0; k < nout; k++) g->values[out[k]].producer = node;
        p->steps[p->n_steps] = node;
        p->step_on[p->n_steps++] = on;
        for (int k = 0; k < nout; k++) pool[n_pool++] = out[k];
    }
    /* outputs: a few random values, sometimes an input or a view */
    int n_out = 1 + rnd(4);
    for (int i = 0; i < n_out; i++) {
        int v = pool[rnd(n_pool)];
        if (g->values[v].konst) continue;
        bool dup = false;
        for (size_t j = 0; j < g->n_outputs; j++) dup |= g->outputs[j] == v;
        if (dup) continue;
        g->values[v].flags |= RLX_VALUE_OUTPUT;
        RLX_GROW(g->outputs, g->cap_outputs, g->n_outputs + 1);
        g->outputs[g->n_outputs++] = v;
    }
    free(pool);
    return p;
}

/* ------------------------------------------------------------ the checks */

/* Lifetimes recomputed from the program: root[v], first/last per root. */
typedef struct life {
    int *root, *first, *last;
    uint64_t *bytes; /* exact bytes */
} life;

static void life_compute(const rlx_program *p, life *L) {
    const rlx_graph *g = p->g;
    size_t nv = g->n_values;
    L->root = malloc(sizeof(int) * nv);
    L->first = malloc(sizeof(int) * nv);
    L->last = malloc(sizeof(int) * nv);
    L->bytes = calloc(nv, sizeof(uint64_t));
    for (size_t i = 0; i < nv; i++) {
        L->root[i] = (int)i;
        L->first[i] = L->last[i] = -2;
        const rlx_value *v = &g->values[i];
        if (!v->konst) {
            uint64_t n = 1;
            for (int d = 0; d < v->rank; d++) n *= (uint64_t)v->dims[d];
            L->bytes[i] = n * rlx_dtype_size(v->dtype);
        }
    }
    for (size_t i = 0; i < g->n_inputs; i++) L->first[g->inputs[i]] = L->last[g->inputs[i]] = -1;
    int ns = (int)p->n_steps;
    for (int s = 0; s < ns; s++) {
        const rlx_node *n = &g->nodes[p->steps[s]];
        if (p->step_on[s] == RLX_STEP_VIEW) L->root[n->out[0]] = L->root[n->in[0]];
        for (int k = 0; k < n->n_in; k++) {
            int r = L->root[n->in[k]];
            if (!g->values[n->in[k]].konst && L->last[r] < s) L->last[r] = s;
        }
        for (int k = 0; k < n->n_out; k++) {
            int r = L->root[n->out[k]];
            if (L->first[r] == -2) L->first[r] = s;
            if (L->last[r] < s) L->last[r] = s;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) L->last[L->root[g->outputs[i]]] = ns;
}

static void life_free(life *L) {
    free(L->root);
    free(L->first);
    free(L->last);
    free(L->bytes);
}

/* Checks one plan against the lifetimes. no_reuse: storage must be
 * disjoint. Returns the number of failed checks. */
static int check_plan(const rlx_program *p, const life *L, bool no_reuse, uint64_t limit) {
    int before = rlx_test_failures;
    const rlx_graph *g = p->g;
    const rlx_mem_plan *m = &p->mem;
    size_t nv = g->n_values;
    int ns = (int)p->n_steps;
    uint64_t noreuse = 0, top = 0;
    for (size_t i = 0; i < nv; i++) {
        const rlx_value *v = &g->values[i];
        if (v->konst) {
            CHECK_MSG(m->offset[i] == RLX_NO_OFFSET, "constant '%s' is in the arena", v->name);
            continue;
        }
        if (L->first[L->root[i]] == -2) continue; /* never written: not ours */
        CHECK_MSG(m->offset[i] != RLX_NO_OFFSET, "value '%s' has no offset", v->name);
        if (m->offset[i] == RLX_NO_OFFSET) continue;
        CHECK_MSG(m->offset[i] % RLX_ARENA_ALIGN == 0, "offset %llu of '%s'", (unsigned long long)m->offset[i], v->name);
        CHECK_MSG(m->alias[i] == L->root[i], "alias of '%s': %d, expected %d", v->name, m->alias[i], L->root[i]);
        CHECK_MSG(m->offset[i] == m->offset[L->root[i]], "view '%s' does not alias its input", v->name);
        CHECK(m->bytes[i] == L->bytes[i]);
        CHECK_MSG(m->first[i] == L->first[L->root[i]] && m->last[i] == L->last[L->root[i]],
                  "lifetime of '%s': [%d, %d], expected [%d, %d]", v->name, m->first[i], m->last[i],
                  L->first[L->root[i]], L->last[L->root[i]]);
        if (L->root[i] != (int)i) continue;
        uint64_t b = L->bytes[i] ? L->bytes[i] : 1;
        noreuse += align_up(b);
        if (m->offset[i] + b > top) top = m->offset[i] + b;
        /* tensors larger than the limit are host-only, after the device's
         * part; the others inside it, never crossing a multiple of it */
        bool big = limit && align_up(b) > limit;
        CHECK_MSG(big == rlx_mem_host_only(m, (int)i), "'%s' (%llu bytes, limit %llu): host-only %d", v->name,
                  (unsigned long long)b, (unsigned long long)limit, (int)rlx_mem_host_only(m, (int)i));
        if (big) CHECK_MSG(m->offset[i] >= m->device_bytes, "host-only '%s' at %llu, inside the device's %llu bytes",
                           v->name, (unsigned long long)m->offset[i], (unsigned long long)m->device_bytes);
        else CHECK_MSG(m->offset[i] + b <= m->device_bytes, "'%s' at %llu+%llu, past the device's %llu bytes", v->name,
                       (unsigned long long)m->offset[i], (unsigned long long)b, (unsigned long long)m->device_bytes);
        if (limit && !big) {
            CHECK_MSG(m->offset[i] / limit == (m->offset[i] + b - 1) / limit, "'%s' at %llu+%llu crosses a multiple of %llu",
                      v->name, (unsigned long long)m->offset[i], (unsigned long long)b, (unsigned long long)limit);
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++)
        CHECK_MSG(m->last[g->outputs[i]] == ns, "graph output '%s' dies at step %d", g->values[g->outputs[i]].name,
                  m->last[g->outputs[i]]);
    /* every pair of roots */
    for (size_t i = 0; i < nv; i++) {
        if (L->root[i] != (int)i || L->first[i] == -2 || g->values[i].konst || m->offset[i] == RLX_NO_OFFSET) continue;
        uint64_t bi = L->bytes[i] ? L->bytes[i] : 1;
        for (size_t j = i + 1; j < nv; j++) {
            if (L->root[j] != (int)j || L->first[j] == -2 || g->values[j].konst || m->offset[j] == RLX_NO_OFFSET) continue;
            uint64_t bj = L->bytes[j] ? L->bytes[j] : 1;
            bool time = !(L->last[i] < L->first[j] || L->last[j] < L->first[i]);
            bool space = m->offset[i] < m->offset[j] + bj && m->offset[j] < m->offset[i] + bi;
            if (time || no_reuse)
                CHECK_MSG(!space, "'%s' [%d,%d] at %llu+%llu and '%s' [%d,%d] at %llu+%llu share bytes",
                          g->values[i].name, L->first[i], L->last[i], (unsigned long long)m->offset[i],
                          (unsigned long long)bi, g->values[j].name, L->first[j], L->last[j],
                          (unsigned long long)m->offset[j], (unsigned long long)bj);
        }
    }
    /* the lower bound, recomputed: aligned bytes live per step */
    uint64_t peak = 0;
    for (int s = -1; s <= ns; s++) {
        uint64_t live = 0;
        for (size_t i = 0; i < nv; i++)
            if (L->root[i] == (int)i && L->first[i] != -2 && !g->values[i].konst && L->first[i] <= s && s <= L->last[i])
                live += align_up(L->bytes[i] ? L->bytes[i] : 1);
        if (live > peak) peak = live;
    }
    CHECK_MSG(m->peak_bytes == peak, "peak %llu, recomputed %llu", (unsigned long long)m->peak_bytes,
              (unsigned long long)peak);
    CHECK_MSG(m->arena_bytes >= m->peak_bytes, "arena %llu below the lower bound %llu",
              (unsigned long long)m->arena_bytes, (unsigned long long)m->peak_bytes);
    CHECK(m->noreuse_bytes == noreuse);
    CHECK(m->arena_bytes >= top);
    if (!limit) CHECK_MSG(m->arena_bytes <= m->noreuse_bytes, "arena %llu above no-reuse %llu",
                          (unsigned long long)m->arena_bytes, (unsigned long long)m->noreuse_bytes);
    if (no_reuse) {
        CHECK(m->strategy == RLX_MEM_NO_REUSE);
        if (!limit) CHECK(m->arena_bytes == m->noreuse_bytes);
    } else {
        uint64_t best = UINT64_MAX;
        for (int k = RLX_MEM_BY_SIZE; k < RLX_MEM_N_STRATEGIES; k++)
            if (m->strategy_bytes[k] && m->strategy_bytes[k] < best) best = m->strategy_bytes[k];
        CHECK_MSG(m->strategy_bytes[m->strategy] == best || (best == 1 && m->arena_bytes == 0),
                  "winner %d (%llu bytes) is not the smallest (%llu)", (int)m->strategy,
                  (unsigned long long)m->strategy_bytes[m->strategy], (unsigned long long)best);
        CHECK(m->arena_bytes == best || (best == 1 && m->arena_bytes == 0));
    }
    return rlx_test_failures - before;
}

static void clear_plan(rlx_program *p) {
    free(p->mem.offset);
    free(p->mem.bytes);
    free(p->mem.alias);
    free(p->mem.first);
    free(p->mem.last);
    memset(&p->mem, 0, sizeof p->mem);
}

static void test_random_dags(void) {
    int bad = 0;
    uint64_t sum_arena = 0, sum_peak = 0, sum_noreuse = 0;
    int wins[RLX_MEM_N_STRATEGIES] = { 0 };
    for (int iter = 0; iter < 120 && bad < 3; iter++) {
        rlx_program *p = random_program(5 + rnd(60), iter % 3 == 0 ? 4 : 40);
        if (!p) {
            CHECK(!"random program");
            break;
        }
        life L;
        life_compute(p, &L);
        /* plain plan */
        CHECK_OK(rlx_plan_memory(p));
        int f = check_plan(p, &L, false, 0);
        bad += f > 0;
        if (f) fprintf(stderr, "  (random program %d failed, plain)\n", iter);
        sum_arena += p->mem.arena_bytes;
        sum_peak += p->mem.peak_bytes;
        sum_noreuse += p->mem.noreuse_bytes;
        wins[p->mem.strategy]++;
        uint64_t max_t = 0;
        for (size_t i = 0; i < p->g->n_values; i++)
            if (p->mem.offset[i] != RLX_NO_OFFSET && align_up(p->mem.bytes[i] ? p->mem.bytes[i] : 1) > max_t)
                max_t = align_up(p->mem.bytes[i] ? p->mem.bytes[i] : 1);
        /* with a buffer limit between the largest tensor and 3x it */
        clear_plan(p);
        uint64_t limit = (max_t + (uint64_t)rnd(3) * max_t + (uint64_t)rnd(4) * RLX_ARENA_ALIGN) / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN;
        if (limit < max_t) limit = max_t;
        p->mem.buffer_limit = limit;
        CHECK_OK(rlx_plan_memory(p));
        f = check_plan(p, &L, false, limit);
        bad += f > 0;
        if (f) fprintf(stderr, "  (random program %d failed, limit %llu)\n", iter, (unsigned long long)limit);
        /* below the largest tensor: the larger ones are host-only while
         * only CPU steps touch them; a device step touching one is
         * refused, naming a value (rlx_plan_create never plans that) */
        if (max_t > RLX_ARENA_ALIGN) {
            clear_plan(p);
            limit = max_t - RLX_ARENA_ALIGN;
            p->mem.buffer_limit = limit;
            CHECK_OK(rlx_plan_memory(p));
            f = check_plan(p, &L, false, limit);
            bad += f > 0;
            if (f) fprintf(stderr, "  (random program %d failed, host-only tensors above %llu)\n", iter,
                           (unsigned long long)limit);
            clear_plan(p);
            bool touched = false;
            for (size_t s = 0; s < p->n_steps; s++) {
                if (p->step_on[s] == RLX_STEP_VIEW) continue;
                const rlx_node *n = &p->g->nodes[p->steps[s]];
                bool big = false;
                for (int k = 0; k < n->n_in + n->n_out; k++) {
                    int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
                    big |= !p->g->values[v].konst && align_up(L.bytes[v] ? L.bytes[v] : 1) > limit;
                }
                if (big) p->step_on[s] = RLX_STEP_GPU;
                touched |= big;
            }
            p->mem.buffer_limit = limit;
            if (touched) CHECK_FAILS(rlx_plan_memory(p), RLX_ERR_UNSUPPORTED, "more than one device buffer");
        }
        /* plan.no_reuse (RLX_NO_REUSE) */
        clear_plan(p);
        p->mem.no_reuse = true;
        CHECK_OK(rlx_plan_memory(p));
        f = check_plan(p, &L, true, 0);
        bad += f > 0;
        if (f) fprintf(stderr, "  (random program %d failed, plan.no_reuse)\n", iter);
        life_free(&L);
        rlx_program_destroy(p);
    }
    fprintf(stderr, "random programs: arena %llu, lower bound %llu, no reuse %llu bytes in all (%.3f of the bound); "
                    "wins: size %d, breadth %d, time %d\n",
            (unsigned long long)sum_arena, (unsigned long long)sum_peak, (unsigned long long)sum_noreuse,
            sum_peak ? (double)sum_arena / (double)sum_peak : 0.0, wins[RLX_MEM_BY_SIZE], wins[RLX_MEM_BY_BREADTH],
            wins[RLX_MEM_BY_TIME]);
}

/* Chains whose optimum is the lower bound: the plan must reach it. */
static void test_known_plans(void) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(13, &g));
    rlx_program *p = calloc(1, sizeof *p);
    p->g = g;
    int n = 12;
    p->steps = malloc(sizeof(int) * (size_t)n);
    p->step_on = malloc((size_t)n);
    int prev;
    rlx_graph_add_value(g, "x", &prev);
    int64_t d = 1000; /* 4000 bytes: 16 blocks of 256 */
    rlx_value_set_shape(&g->values[prev], 1, &d, NULL);
    g->values[prev].dtype = RLX_DTYPE_F32;
    g->values[prev].flags |= RLX_VALUE_INPUT;
    RLX_GROW(g->inputs, g->cap_inputs, 1);
    g->inputs[g->n_inputs++] = prev;
    for (int s = 0; s < n; s++) {
        int v, node;
        rlx_graph_add_value(g, NULL, &v);
        rlx_value_set_shape(&g->values[v], 1, &d, NULL);
        g->values[v].dtype = RLX_DTYPE_F32;
        CHECK_OK(rlx_graph_add_node(g, "Sum", "", NULL, &prev, 1, &v, 1, NULL, 0, &node));
        p->steps[p->n_steps] = node;
        p->step_on[p->n_steps++] = RLX_STEP_CPU;
        prev = v;
    }
    RLX_GROW(g->outputs, g->cap_outputs, 1);
    g->outputs[g->n_outputs++] = prev;
    CHECK_OK(rlx_plan_memory(p));
    CHECK_MSG(p->mem.peak_bytes == 2 * 4096 && p->mem.arena_bytes == 2 * 4096,
              "chain: arena %llu, bound %llu (expected 8192 for both)", (unsigned long long)p->mem.arena_bytes,
              (unsigned long long)p->mem.peak_bytes);
    CHECK(p->mem.noreuse_bytes == 13 * 4096);
    rlx_program_destroy(p);

    /* A chain of tensors of 1, 2, 3, 2, 3, 1 blocks of 256 bytes, each
     * used by the next step: the bound is 5 blocks (two neighbours), and
     * greedy placement reaches it. */
    CHECK_OK(rlx_graph_create(13, &g));
    p = calloc(1, sizeof *p);
    p->g = g;
    p->steps = malloc(sizeof(int) * 8);
    p->step_on = malloc(8);
    const int64_t sizes[5] = { 64, 2 * 64, 3 * 64, 2 * 64, 3 * 64 }; /* x, A, B, C, D (f32 elements) */
    int ids[5];
    for (int i = 0; i < 5; i++) {
        rlx_graph_add_value(g, NULL, &ids[i]);
        rlx_value_set_shape(&g->values[ids[i]], 1, &sizes[i], NULL);
        g->values[ids[i]].dtype = RLX_DTYPE_F32;
    }
    g->values[ids[0]].flags |= RLX_VALUE_INPUT;
    RLX_GROW(g->inputs, g->cap_inputs, 1);
    g->inputs[g->n_inputs++] = ids[0];
    /* step 0: A = f(x); step 1: B = f(A); step 2: C = f(B); step 3: D = f(C); step 4: E = f(D) */
    int e;
    rlx_graph_add_value(g, NULL, &e);
    rlx_value_set_shape(&g->values[e], 1, &sizes[0], NULL);
    g->values[e].dtype = RLX_DTYPE_F32;
    int chain[6] = { ids[0], ids[1], ids[2], ids[3], ids[4], e };
    for (int s = 0; s < 5; s++) {
        int node;
        CHECK_OK(rlx_graph_add_node(g, "Sum", "", NULL, &chain[s], 1, &chain[s + 1], 1, NULL, 0, &node));
        p->steps[p->n_steps] = node;
        p->step_on[p->n_steps++] = RLX_STEP_CPU;
    }
    RLX_GROW(g->outputs, g->cap_outputs, 1);
    g->outputs[g->n_outputs++] = e;
    CHECK_OK(rlx_plan_memory(p));
    life L;
    life_compute(p, &L);
    check_plan(p, &L, false, 0);
    life_free(&L);
    CHECK_MSG(p->mem.arena_bytes == p->mem.peak_bytes, "arena %llu, bound %llu",
              (unsigned long long)p->mem.arena_bytes, (unsigned long long)p->mem.peak_bytes);
    rlx_program_destroy(p);
}

/* ------------------------------------------------------------ whole models */

/* A small net with reuse opportunities and views: conv-free so that it
 * runs on every backend without tolerance questions: y = concat(relu(x) *
 * w, reshape(tanh(x + b))) ... each run twice, with and without reuse,
 * and the outputs compared bit for bit. */
static rlx_model *small_model(void) {
    rlx_model *m = NULL;
    if (rlx_model_create(13, &m)) return NULL;
    int64_t xd[2] = { 8, 24 };
    rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, xd, NULL);
    int64_t wd[2] = { 24, 16 }, bd[1] = { 24 }, sd[2] = { 16, 12 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    int64_t shp[2] = { 16, 12 };
    rlx_tensor *shape = test_tensor_i64(1, (int64_t[]){ 2 }, shp);
    (void)sd;
    rlx_model_add_initializer(m, "w", w);
    rlx_model_add_initializer(m, "b", b);
    rlx_model_add_initializer(m, "shape", shape);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(shape);
#define NODE(op, a, b_, o) rlx_model_add_node(m, op, NULL, (b_) ? 2 : 1, (const char *[]){ a, b_ }, 1, (const char *[]){ o }, 0, NULL)
    NODE("Relu", "x", NULL, "r");
    NODE("MatMul", "r", "w", "h");         /* [8,16] */
    NODE("Add", "x", "b", "xb");           /* [8,24] */
    NODE("Tanh", "xb", NULL, "t");
    NODE("Reshape", "t", "shape", "t2");   /* [16,12]: a view */
    NODE("Sigmoid", "h", NULL, "s");       /* [8,16] */
    NODE("Mul", "s", "h", "sh");
    NODE("Exp", "t2", NULL, "e");          /* [16,12] */
    NODE("Neg", "e", NULL, "ne");
#undef NODE
    rlx_model_add_output(m, "sh");
    rlx_model_add_output(m, "ne");
    rlx_model_add_output(m, "t2");
    if (rlx_model_finish(m)) {
        fprintf(stderr, "small_model: %s\n", rlx_last_error());
        rlx_model_destroy(m);
        return NULL;
    }
    return m;
}

/* Runs m on `device` with plan.no_reuse set to no_reuse ("0", "1"); GPU
 * arenas start as NaN (gpu.poison). */
static void run_model(const rlx_model *m, const char *device, const char *no_reuse, const rlx_tensor *x,
                      rlx_tensor ***out, size_t *n, uint64_t *arena) {
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device };
    *out = NULL;
    *n = 0;
    rlx_options *opts = test_options("gpu.poison=1", NULL);
    if (opts) CHECK_OK(rlx_options_set(opts, "plan.no_reuse", no_reuse));
    CHECK_OK(rlx_session_create_with_options(m, &o, opts, &s));
    rlx_options_destroy(opts);
    if (!s) return;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, out, n));
    const rlx_program *p = rlx_session_last_program(s);
    *arena = p ? p->mem.arena_bytes : 0;
    rlx_session_destroy(s);
}

static void test_no_reuse_equal(void) {
    rlx_model *m = small_model();
    CHECK(m != NULL);
    if (!m) return;
    int64_t xd[2] = { 8, 24 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -2, 2);
    const char *devs[2] = { "cpu", "gpu" };
    for (int d = 0; d < 2; d++) {
        if (d == 1 && !test_have_gpu()) {
            fprintf(stderr, "no GPU adapter: plan.no_reuse comparison on the CPU only\n");
            break;
        }
        rlx_tensor **a = NULL, **b = NULL;
        size_t na = 0, nb = 0;
        uint64_t arena_a = 0, arena_b = 0;
        run_model(m, devs[d], "0", x, &a, &na, &arena_a);
        run_model(m, devs[d], "1", x, &b, &nb, &arena_b);
        CHECK(na == 3 && nb == 3);
        CHECK_MSG(arena_a < arena_b, "%s: arena %llu with reuse, %llu without", devs[d], (unsigned long long)arena_a,
                  (unsigned long long)arena_b);
        for (size_t i = 0; i < na && i < nb; i++) /* bit-equal: same kernels, only the offsets differ */
            CHECK_MSG(a[i]->nbytes == b[i]->nbytes && memcmp(a[i]->data, b[i]->data, a[i]->nbytes) == 0,
                      "%s: output %zu differs with plan.no_reuse", devs[d], i);
        test_free_outputs(a, (int)na);
        test_free_outputs(b, (int)nb);
    }
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* ------------------------------------------------------------ Concat in place */

/* The value of p's graph named `name` (-1: none). */
static int value_named(const rlx_program *p, const char *name) {
    for (size_t i = 0; i < p->g->n_values; i++)
        if (p->g->values[i].name && strcmp(p->g->values[i].name, name) == 0) return (int)i;
    return -1;
}

/* Convolutions into Concats at batch 1 (plan/memory.c, concat_in_place):
 * a = Conv 1x1(x), b = Conv 3x3(x), c = Concat(a, b), d = Relu(x),
 * e = Concat(c, d) (a chain), y = Conv 1x1(e); and g = Concat(x, a), whose
 * input x is a graph input (so g takes no slices), h = Relu(g); z =
 * Concat(Sigmoid(x), Tanh(x)) whose first input has a view that is a graph
 * output (so z takes none). The plan must put a, b, c and d in e's storage
 * at their byte offsets (16 x 16 positions x 4 channels x 4 bytes = 4 KiB
 * per input), g and z in their own; the
 * outputs must equal those of a plan without reuse (plan.no_reuse: no
 * slices, the Concats copy) bit for bit at 1, 2 and 5 threads. */
static void test_concat_in_place(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return;
    int64_t xd[4] = { 1, 4, 16, 16 }, w1d[4] = { 4, 4, 1, 1 }, w2d[4] = { 4, 4, 3, 3 }, w3d[4] = { 6, 12, 1, 1 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    const int64_t *wds[3] = { w1d, w2d, w3d };
    const char *wn[3] = { "w1", "w2", "w3" };
    for (int i = 0; i < 3; i++) {
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wds[i], -1, 1);
        CHECK_OK(rlx_model_add_initializer(m, wn[i], w));
        rlx_tensor_destroy(w);
    }
    int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr ax = RLX_ATTR_I("axis", 1), pd = RLX_ATTR_IS("pads", 4, pads);
    CHECK_OK(rlx_model_add_node(m, "Conv", NULL, 2, (const char *[]){ "x", "w1" }, 1, (const char *[]){ "a" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Conv", NULL, 2, (const char *[]){ "x", "w2" }, 1, (const char *[]){ "b" }, 1, &pd));
    CHECK_OK(rlx_model_add_node(m, "Concat", NULL, 2, (const char *[]){ "a", "b" }, 1, (const char *[]){ "c" }, 1, &ax));
    CHECK_OK(rlx_model_add_node(m, "Relu", NULL, 1, (const char *[]){ "x" }, 1, (const char *[]){ "d" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", NULL, 2, (const char *[]){ "c", "d" }, 1, (const char *[]){ "e" }, 1, &ax));
    CHECK_OK(rlx_model_add_node(m, "Conv", NULL, 2, (const char *[]){ "e", "w3" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", NULL, 2, (const char *[]){ "x", "a" }, 1, (const char *[]){ "g" }, 1, &ax));
    CHECK_OK(rlx_model_add_node(m, "Relu", NULL, 1, (const char *[]){ "g" }, 1, (const char *[]){ "h" }, 0, NULL));
    /* u, a graph output's view, stays whole: z = Concat(u, w) copies */
    int64_t shp[2] = { 1, 1024 }, shd[1] = { 2 };
    rlx_tensor *shape = test_tensor_i64(1, shd, shp);
    CHECK_OK(rlx_model_add_initializer(m, "shape", shape));
    rlx_tensor_destroy(shape);
    CHECK_OK(rlx_model_add_node(m, "Sigmoid", NULL, 1, (const char *[]){ "x" }, 1, (const char *[]){ "u" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Tanh", NULL, 1, (const char *[]){ "x" }, 1, (const char *[]){ "w" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", NULL, 2, (const char *[]){ "u", "w" }, 1, (const char *[]){ "z" }, 1, &ax));
    CHECK_OK(rlx_model_add_node(m, "Reshape", NULL, 2, (const char *[]){ "u", "shape" }, 1, (const char *[]){ "ru" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", NULL, 1, (const char *[]){ "z" }, 1, (const char *[]){ "zz" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "h"));
    CHECK_OK(rlx_model_add_output(m, "ru"));
    CHECK_OK(rlx_model_add_output(m, "zz"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -2, 2);
    const char *threads[3] = { "1", "2", "5" };
    for (int t = 0; t < 3; t++) {
        rlx_tensor **out[2] = { NULL, NULL };
        size_t n[2] = { 0, 0 };
        for (int reuse = 1; reuse >= 0; reuse--) {
            rlx_options *o = NULL;
            rlx_session *s = NULL;
            CHECK_OK(rlx_options_create(&o));
            CHECK_OK(rlx_options_set(o, "cpu.threads", threads[t]));
            CHECK_OK(rlx_options_set(o, "plan.no_reuse", reuse ? "0" : "1"));
            CHECK_OK(rlx_session_create_with_options(m, NULL, o, &s));
            rlx_options_destroy(o);
            if (s) CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out[reuse], &n[reuse]));
            const rlx_program *p = s ? rlx_session_last_program(s) : NULL;
            CHECK(p != NULL);
            if (p) {
                const rlx_mem_plan *mp = &p->mem;
                int a = value_named(p, "a"), b = value_named(p, "b"), c = value_named(p, "c"), d = value_named(p, "d"),
                    e = value_named(p, "e"), gv = value_named(p, "g");
                CHECK(a >= 0 && b >= 0 && c >= 0 && d >= 0 && e >= 0 && gv >= 0);
                if (a >= 0 && b >= 0 && c >= 0 && d >= 0 && e >= 0 && gv >= 0 && reuse) {
                    uint64_t base = mp->offset[e];
                    CHECK_MSG(mp->alias[a] == e && mp->alias[b] == e && mp->alias[c] == e && mp->alias[d] == e,
                              "slices: alias a %d b %d c %d d %d, e %d", mp->alias[a], mp->alias[b], mp->alias[c],
                              mp->alias[d], e);
                    CHECK_MSG(mp->offset[a] == base && mp->offset[b] == base + 4096 && mp->offset[c] == base &&
                                  mp->offset[d] == base + 8192,
                              "slice offsets a %llu b %llu c %llu d %llu from e %llu", (unsigned long long)mp->offset[a],
                              (unsigned long long)mp->offset[b], (unsigned long long)mp->offset[c],
                              (unsigned long long)mp->offset[d], (unsigned long long)base);
                    CHECK_MSG(mp->first[e] <= mp->first[a] && mp->first[a] == mp->first[e],
                              "e's storage lives from a's step");
                    CHECK_MSG(mp->alias[gv] == gv, "g (a graph input among its inputs) took slices");
                    int u = value_named(p, "u"), w = value_named(p, "w");
                    CHECK_MSG(u >= 0 && w >= 0 && mp->alias[u] == u && mp->alias[w] == w,
                              "z = Concat(u, w) took slices though a graph output is a view of u");
                } else if (a >= 0 && e >= 0 && !reuse) {
                    CHECK_MSG(mp->alias[a] == a && mp->alias[d] == d, "slices in a plan without reuse");
                }
            }
            rlx_session_destroy(s);
        }
        CHECK(n[0] == 4 && n[1] == 4);
        for (size_t i = 0; i < n[0] && i < n[1]; i++)
            CHECK_MSG(out[0][i]->nbytes == out[1][i]->nbytes &&
                          memcmp(out[0][i]->data, out[1][i]->data, out[0][i]->nbytes) == 0,
                      "threads %s: output %zu differs between the sliced plan and plan.no_reuse", threads[t], i);
        test_free_outputs(out[0], (int)n[0]);
        test_free_outputs(out[1], (int)n[1]);
    }
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed(test_seed_from_env());
    test_random_dags();
    test_known_plans();
    test_no_reuse_equal();
    test_concat_in_place();
    TEST_MAIN_END();
}
