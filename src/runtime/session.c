/* Sessions: a copy of the model's graph, a backend, and a bounded cache of
 * compiled plans keyed by the input-shape signature.
 *
 * Compiling a plan for one signature (compile_plan): the plan layer builds
 * the program (rlx_plan_build, plan/plan.h: the graph specialised on the
 * input shapes, passes, device assignment, memory plan, segments); then the
 * runtime's executable (runtime/exec.h) compiles it on the backends. Graphs whose
 * shapes still depend on data (NonZero, ...) or that hold control flow run
 * eagerly on the CPU backend's host interpreter (rlx_cpu_eval_graph). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_qgemm.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/escape.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/parallel.h"
#include "base/platform.h"
#include "base/runctl.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "plan/plan.h"
#include "runtime/exec.h"
#include "runtime/model.h"
#include "runtime/session.h"

#define PLAN_CACHE 8
#define OV_CACHE 4 /* sub-sessions for sets of fed overridable initializers */
#define CTL_VALUES_MAX 4

typedef struct plan_entry {
    rlx_dtype *dtypes; /* n_inputs: each input's dtype */
    uint64_t *ctl_val; /* n_inputs: the bytes of each control input (rlx_session.ctl_in) the plan was specialised on */
    int64_t *sig; /* n_inputs * RLX_MAX_RANK dims */
    rlx_program *p;
    rlx_exec *x;
    bool eager;
    uint64_t last_used;
    char *report;
    rlx_compile_stats stats;
} plan_entry;

/* A graph input's name and position (rlx_session.by_name). */
typedef struct rlx_input_name {
    const char *name;
    size_t j;
} rlx_input_name;

struct rlx_session {
    rlx_model *model;  /* a reference (rlx_model_retain): s->g borrows its constants */
    rlx_graph *g;
    rlx_backend *be;   /* the device */
    rlx_backend *host; /* the CPU backend that runs CPU steps of a device plan; NULL when be is the CPU */
    rlx_config *cfg;   /* the options, resolved once at creation (base/options.h) */
    plan_entry plans[PLAN_CACHE];
    size_t n_plans;
    bool ctl; /* whether plans are specialised on control inputs (any of ctl_in): see find_control_inputs */
    bool *ctl_in; /* n_inputs: whether graph input j is a control input */
    /* n_inputs + 1: the caller's inputs in the graph's order, filled by each
     * run (runs take turns: one array per session, allocated at creation) */
    const rlx_tensor **ordered;
    /* n_inputs: per bool input, the copy of a run's input that held a byte
     * other than 0 and 1 (NULL until one did; normalise_bools) */
    rlx_tensor **bool_copy;
    /* n_inputs: the graph inputs' positions sorted by name (match_inputs
     * finds a fed name by binary search: a linear scan per fed name made
     * a run of a Sum over 6000 inputs spend 78% of its 115 ms in strcmp) */
    rlx_input_name *by_name;
    int ctl_values; /* plans compiled for a new value of a control input (shapes seen before) */
    uint64_t tick;
    uint64_t compiles; /* plans compiled so far (each miss of the cache) */
    plan_entry *last;
    /* runs of one session from several threads take turns: the plan cache,
     * s->last and each plan's arena and GPU buffers are per session */
    pthread_mutex_t lock;
    bool lock_ok;
    int threads; /* cpu.threads resolved: its runs use at most this many pool threads */
    /* stopping runs (base/runctl.h): s->cfg->run points here (s->ctl is about control inputs) */
    rlx_run_ctl stopper;
    _Atomic int64_t timeout_ms; /* run.timeout_ms, or rlx_session_set_run_timeout */
    /* Overridable initializers (rlx.h): s->g has them as constants, so the
     * plans of runs that do not feed them fold and pack them. A run that
     * feeds some runs a sub-session, one per set fed (bit k: the model's
     * overridable initializer k), whose graph has them as inputs; it
     * borrows this session's device, config (and so its stop control) and
     * takes this session's turn. */
    struct rlx_session *ov[OV_CACHE];
    /* the sets fed, one bitset of ov_words words per sub-session (ov[i]'s
     * at ov_keys + i * ov_words), then the current run's; allocated on the
     * first run that feeds one (runs take turns) */
    uint64_t *ov_keys;
    size_t ov_words;
    size_t n_ov;
    /* a plan's compile may have freed model constants (model_release_ok):
     * restore_model_consts gives them back before anything else reads them */
    bool consts_released;
    bool ever_released; /* some compile could free them: model_consts_ready checks */
    bool borrowed;                /* a sub-session: be, host and cfg are its owner's */
    struct rlx_session *last_run; /* the sub-session whose plan ran last; NULL: this one's */
};

/* ------------------------------------------------------------ lifetime */

rlx_status rlx_session_create(const rlx_model *model, const rlx_session_options *opt, rlx_session **out) {
    return rlx_session_create_with_options(model, opt, NULL, out);
}

/* Whether input j is a control input: one element of an integer or bool
 * dtype. */
static bool scalar_int_input(const rlx_value *v) {
    if (v->dtype != RLX_DTYPE_BOOL && v->dtype != RLX_DTYPE_I64 && v->dtype != RLX_DTYPE_I32 &&
        v->dtype != RLX_DTYPE_U8 && v->dtype != RLX_DTYPE_U32)
        return false;
    if (v->rank < 0) return false;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] != 1) return false;
    return true;
}

/* Marks in *ins the graph inputs that value v depends on; false when it
 * depends on one that is no scalar_int_input (data: the value varies
 * freely) or the walk exceeds *budget values. Shape and Size stop it
 * (static once specialised). */
static bool cone_of_scalars(const rlx_graph *g, int v, bool *ins, int *budget) {
    if (v < 0 || g->values[v].konst) return true;
    if (--*budget < 0) return false; /* a large cone: not a flag's */
    const rlx_value *val = &g->values[v];
    if (val->producer < 0) {
        for (size_t j = 0; j < g->n_inputs; j++)
            if (g->inputs[j] == v) {
                if (!scalar_int_input(val)) return false;
                ins[j] = true;
                return true;
            }
        return false;
    }
    const rlx_node *n = &g->nodes[val->producer];
    if (n->op == RLX_OP_Shape || n->op == RLX_OP_Size) return true;
    if (n->def->flags & (RLX_OP_CONTROL_FLOW | RLX_OP_NO_FOLD)) return false;
    for (int k = 0; k < n->n_in; k++)
        if (!cone_of_scalars(g, n->in[k], ins, budget)) return false;
    return true;
}

/* Control inputs: graph inputs of one integer or bool element that decide
 * the condition of an If of the top-level graph, a condition computed
 * from such inputs, constants and shapes only (silero VAD's sample rate:
 * If(Equal(sr, 16000))). Plans are specialised on their values, as on the
 * input shapes: the condition folds, the fold pass inlines the branch and
 * the graph gets a static plan instead of running eagerly; another value
 * is another plan of the cache. */
static rlx_status find_control_inputs(const rlx_graph *g, bool *ctl_in, bool *any) {
    *any = false;
    bool *ins = calloc(g->n_inputs + 1, sizeof *ins);
    if (!ins) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        int budget = 256;
        if (n->op != RLX_OP_If || n->n_in < 1) continue;
        memset(ins, 0, (g->n_inputs + 1) * sizeof *ins);
        if (!cone_of_scalars(g, n->in[0], ins, &budget)) continue;
        for (size_t j = 0; j < g->n_inputs; j++)
            if (ins[j]) ctl_in[j] = *any = true;
    }
    free(ins);
    return RLX_OK;
}

/* The per-input arrays of s (its graph s->g set): control inputs, the
 * caller's inputs in graph order. */
static int cmp_input_name(const void *a, const void *b) {
    return strcmp(((const rlx_input_name *)a)->name, ((const rlx_input_name *)b)->name);
}

/* Graph input j named `name`, or -1 (s->by_name). */
static long input_by_name(const rlx_session *s, const char *name) {
    size_t lo = 0, hi = s->g->n_inputs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->by_name[mid].name, name);
        if (c == 0) return (long)s->by_name[mid].j;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static rlx_status inputs_init(rlx_session *s) {
    s->ctl_in = calloc(s->g->n_inputs + 1, sizeof *s->ctl_in);
    s->ordered = calloc(s->g->n_inputs + 1, sizeof *s->ordered);
    s->bool_copy = calloc(s->g->n_inputs + 1, sizeof *s->bool_copy);
    s->by_name = calloc(s->g->n_inputs + 1, sizeof *s->by_name);
    if (!s->ctl_in || !s->ordered || !s->bool_copy || !s->by_name) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t j = 0; j < s->g->n_inputs; j++)
        s->by_name[j] = (rlx_input_name){ s->g->values[s->g->inputs[j]].name, j };
    qsort(s->by_name, s->g->n_inputs, sizeof *s->by_name, cmp_input_name);
    return find_control_inputs(s->g, s->ctl_in, &s->ctl);
}

rlx_status rlx_session_create_with_options(const rlx_model *model, const rlx_session_options *opt,
                                           const rlx_options *options, rlx_session **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_session is NULL");
    *out = NULL;
    if (!model) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model is NULL");
    if (!model->finished) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model is not finished (call rlx_model_finish)");
    rlx_session_options defaults = { 0 };
    if (!opt) opt = &defaults;
    const char *dev = opt->device ? opt->device : "cpu";
    rlx_config *cfg;
    RLX_TRY(rlx_config_resolve(options, opt, &cfg));
    /* per-process keys: every device runs CPU steps (folding, fallbacks) */
    int threads = 1;
    /* a per-process key this session does not give takes the process's
     * value (fixed by an earlier session or, before any, the default) */
    rlx_status st = rlx_parallel_configure(cfg->cpu_threads,
                                           rlx_config_given(cfg, "cpu.pool_spin_us") ? cfg->cpu_pool_spin_us
                                                                                     : RLX_PARALLEL_SPIN_KEEP,
                                           &threads);
    if (!st && rlx_config_given(cfg, "cpu.gemm"))
        st = rlx_cpu_gemm_policy_set(strcmp(cfg->cpu_gemm, "blas") == 0 ? RLX_CPU_GEMM_BLAS : RLX_CPU_GEMM_POOL);
    if (!st) (void)rlx_cpu_gemm_policy_get(); /* fixes the process's policy if no session did */
    if (!st) st = rlx_cpu_qgemm_kernel_choose(cfg->cpu_qgemm_kernel);
    if (!st)
        st = rlx_cpu_sgemm_avx512_tile_choose(rlx_config_given(cfg, "cpu.sgemm_tile") ? cfg->cpu_sgemm_tile : NULL);
    rlx_session *s = st ? NULL : calloc(1, sizeof *s);
    if (!s) {
        rlx_config_destroy(cfg);
        return st ? st : rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->cfg = cfg;
    s->threads = threads;
    cfg->run = &s->stopper;
    atomic_init(&s->timeout_ms, cfg->run_timeout_ms);
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        rlx_config_destroy(cfg);
        free(s);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "cannot create the session's lock");
    }
    s->lock_ok = true;
    /* the CPU backend's share of the options (a device plan's CPU steps too) */
    rlx_cpu_config cpu = { .prepack = cfg->cpu_prepack, .release_packed = cfg->cpu_release_packed,
                           .winograd = cfg->cpu_winograd ? (cfg->cpu_winograd_f4x4 ? 4 : 2) : 0 };
    if (strcmp(dev, "cpu") == 0) {
        st = rlx_backend_cpu_create(&cpu, &s->be);
    } else if (strcmp(dev, "gpu") == 0 || strncmp(dev, "gpu:", 4) == 0) {
        st = rlx_backend_webgpu_open(dev, opt, s->cfg, &s->be);
        cpu.release_packed = false; /* the device's compile and runs read the plan's constants too */
        if (!st) st = rlx_backend_cpu_create(&cpu, &s->host);
    } else {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "unknown device '%s' (expected cpu, gpu or gpu:N)", dev);
    }
    if (st) goto fail;
    /* the weights are the model's, shared: the session keeps the model
     * alive instead of copying them (a second copy of every weight) */
    RLX_TRY_GOTO(st, rlx_graph_clone(model->g, &s->g), fail);
    s->model = (rlx_model *)model;
    rlx_model_retain(s->model);
    RLX_TRY_GOTO(st, inputs_init(s), fail);
    *out = s;
    rlx_clear_error();
    return RLX_OK;
fail:
    rlx_session_destroy(s);
    return st;
}

static void plan_free(rlx_session *s, plan_entry *e) {
    rlx_exec_destroy(e->x);
    rlx_program_destroy(e->p);
    free(e->sig);
    free(e->dtypes);
    free(e->ctl_val);
    free(e->report);
    memset(e, 0, sizeof *e);
}

void rlx_session_destroy(rlx_session *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_ov; i++) rlx_session_destroy(s->ov[i]); /* before the device they borrow */
    if (s->bool_copy && s->g)
        for (size_t i = 0; i < s->g->n_inputs; i++) rlx_tensor_destroy(s->bool_copy[i]);
    free(s->ov_keys);
    for (size_t i = 0; i < s->n_plans; i++) plan_free(s, &s->plans[i]);
    if (!s->borrowed && s->be) s->be->destroy(s->be);
    if (!s->borrowed && s->host) s->host->destroy(s->host);
    rlx_graph_destroy(s->g);
    rlx_model_destroy(s->model); /* the session's reference */
    if (!s->borrowed) rlx_config_destroy(s->cfg);
    if (s->lock_ok) pthread_mutex_destroy(&s->lock);
    free(s->ctl_in);
    free(s->ordered);
    free(s->bool_copy);
    free(s->by_name);
    free(s);
}

size_t rlx_session_num_outputs(const rlx_session *s) { return s ? s->g->n_outputs : 0; }

const char *rlx_session_output_name(const rlx_session *s, size_t i) {
    if (!s || i >= s->g->n_outputs) return NULL;
    return s->g->values[s->g->outputs[i]].name;
}

const char *rlx_session_device_name(const rlx_session *s) { return s ? s->be->device_name : ""; }
rlx_device_kind rlx_session_device_kind(const rlx_session *s) { return s ? s->be->kind : RLX_DEVICE_CPU; }

/* The session whose plan ran last: s or one of its sub-sessions. */
static const rlx_session *ran(const rlx_session *s) { return s->last_run ? s->last_run : s; }

const char *rlx_session_dispatch_report(rlx_session *s) {
    if (s) s = (rlx_session *)ran(s);
    return (s && s->last && s->last->report) ? s->last->report : "no plan compiled yet\n";
}

const rlx_compile_stats *rlx_session_last_stats(const rlx_session *s) {
    if (s) s = ran(s);
    return (s && s->last) ? &s->last->stats : NULL;
}

size_t rlx_session_plan_count(const rlx_session *s) {
    size_t n = s ? s->n_plans : 0;
    for (size_t i = 0; s && i < s->n_ov; i++) n += s->ov[i]->n_plans;
    return n;
}

uint64_t rlx_session_compile_count(const rlx_session *s) {
    uint64_t n = s ? s->compiles : 0;
    for (size_t i = 0; s && i < s->n_ov; i++) n += s->ov[i]->compiles;
    return n;
}

const rlx_program *rlx_session_last_program(const rlx_session *s) {
    if (s) s = ran(s);
    return (s && s->last) ? s->last->p : NULL;
}

rlx_backend *rlx_session_backend(const rlx_session *s) { return s ? s->be : NULL; }

rlx_exec *rlx_session_last_exec(const rlx_session *s) {
    if (s) s = ran(s);
    return (s && s->last) ? s->last->x : NULL;
}

/* ------------------------------------------------------------ inputs */

/* Orders the caller's inputs as the graph's and checks dtype and shape. */
/* Orders and checks the inputs of a run. shapes_only (rlx_session_prepare):
 * an input whose data is NULL stands for its dtype and shape, unless the
 * plan depends on its value (a control input). */
static rlx_status match_inputs(const rlx_session *s, size_t n, const char *const *names, const rlx_tensor *const *in,
                               bool shapes_only, const rlx_tensor **ordered) {
    const rlx_graph *g = s->g;
    /* a dim name binds one size only where the import relied on it
     * (rlx_graph.syms_equal_assumed); elsewhere it is a hint, as for
     * onnxruntime, and the ops' shape inference on the fed shapes decides */
    int64_t sym_val[256];
    size_t sym_from[256];
    for (size_t i = 0; i < 256; i++) sym_val[i] = -1, sym_from[i] = 0;
    for (size_t j = 0; j <= g->n_inputs; j++) ordered[j] = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!names || !names[i] || !in || !in[i])
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input %zu: name or tensor is NULL", i);
        /* the rank first: every message below prints the dims */
        if (in[i]->rank < 0 || in[i]->rank > RLX_MAX_RANK)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': rank %d is outside [0, %d]", names[i], in[i]->rank,
                            RLX_MAX_RANK);
        /* the caller's order is usually the graph's: input i first */
        long at = i < g->n_inputs && strcmp(g->values[g->inputs[i]].name, names[i]) == 0 ? (long)i
                                                                                          : input_by_name(s, names[i]);
        if (at >= 0) {
            if (ordered[at]) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' is given twice", names[i]);
            ordered[at] = in[i];
        } else {
            char list[512] = "";
            size_t o = 0;
            for (size_t j = 0; j < g->n_inputs && o < sizeof list; j++)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s'%s'", j ? ", " : "", g->values[g->inputs[j]].name);
            int id = rlx_graph_find(g, names[i]);
            if (id >= 0 && (g->values[id].flags & RLX_VALUE_INITIALIZER))
                return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                                "'%s' is an initializer of the model, not an input, and cannot be fed: only an "
                                "initializer that a model of ONNX IR version >= 4 also lists as a graph input is "
                                "overridable (before IR version 4 every initializer is listed as an input and is a "
                                "constant, as onnxruntime takes it) (inputs: %s)", names[i], list);
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "the model has no input '%s' (inputs: %s)", names[i], list);
        }
    }
    for (size_t j = 0; j < g->n_inputs; j++) {
        const rlx_value *v = &g->values[g->inputs[j]];
        const rlx_tensor *t = ordered[j];
        if (!t) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' is missing", v->name);
        char a[128], b[128];
        if (t->dtype != v->dtype)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' has dtype %s, the model expects %s", v->name,
                            rlx_dtype_name(t->dtype), rlx_dtype_name(v->dtype));
        if (v->rank >= 0 && t->rank != v->rank)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' has shape %s (rank %d), the model expects rank %d",
                            v->name, rlx_shape_str(t->dims, t->rank, a, sizeof a), t->rank, v->rank);
        for (int d = 0; d < v->rank; d++) {
            if (v->dims[d] >= 0 && t->dims[d] != v->dims[d])
                return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s' has shape %s, the model expects dim %d = %lld",
                                v->name, rlx_shape_str(t->dims, t->rank, a, sizeof a), d, (long long)v->dims[d]);
            int sy = v->syms[d];
            if (g->syms_equal_assumed && v->dims[d] < 0 && sy >= 0 && sy < 256) {
                if (sym_val[sy] >= 0 && sym_val[sy] != t->dims[d])
                    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                                    "input '%s' has shape %s: dim %d ('%s') = %lld contradicts %lld bound by input "
                                    "'%s' (the model's Gradient lowering assumed dims named '%s' equal)",
                                    v->name, rlx_shape_str(t->dims, t->rank, b, sizeof b), d, g->syms[sy],
                                    (long long)t->dims[d], (long long)sym_val[sy],
                                    g->values[g->inputs[sym_from[sy]]].name, g->syms[sy]);
                if (sym_val[sy] < 0) sym_from[sy] = j;
                sym_val[sy] = t->dims[d];
            }
        }
        size_t numel, bytes = SIZE_MAX;
        if (rlx_shape_numel(t->dims, t->rank, &numel))
            return rlx_fail_prefix(RLX_ERR_INVALID_ARGUMENT, "input '%s': ", v->name);
        if (shapes_only && !t->data) {
            if (s->ctl && s->ctl_in[j])
                return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                                "input '%s': data is NULL, but the plan depends on its value (it decides the "
                                "condition of an If): give its value", v->name);
            continue;
        }
        if (!rlx_mul_ok(numel, rlx_dtype_size(t->dtype), &bytes) || bytes > t->nbytes)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': nbytes %zu is smaller than its shape %s needs (%zu)",
                            v->name, t->nbytes, rlx_shape_str(t->dims, t->rank, a, sizeof a), bytes);
        if (bytes && !t->data)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': data is NULL (its shape %s holds %zu bytes)", v->name,
                            rlx_shape_str(t->dims, t->rank, a, sizeof a), bytes);
        if (t->dtype == RLX_DTYPE_STRING)
            for (size_t e = 0; e < numel; e++)
                if (!((const char *const *)t->data)[e])
                    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                                    "input '%s': string element %zu is NULL (each must point to a NUL-terminated "
                                    "string)", v->name, e);
    }
    return RLX_OK;
}

/* A bool input is one byte an element, 0 false and anything else true (C's
 * _Bool from memory, a numpy view of uint8 data as bool): the kernels read
 * the byte as a number (Cast gave 2.0 or 255.0, Equal of 2 and 1 false, an
 * Identity returned the 2), so an input holding a byte other than 0 and 1
 * runs from a copy of 0s and 1s; the caller's data is never written. */
static rlx_status normalise_bools(rlx_session *s, const rlx_tensor **ordered) {
    for (size_t j = 0; j < s->g->n_inputs; j++) {
        const rlx_tensor *t = ordered[j];
        if (!t || t->dtype != RLX_DTYPE_BOOL || !t->data) continue;
        size_t n = rlx_tensor_numel(t), k = 0;
        const unsigned char *b = t->data;
        while (k < n && b[k] <= 1) k++;
        if (k == n) continue;
        rlx_tensor *c = s->bool_copy[j];
        if (!c || c->rank != t->rank || memcmp(c->dims, t->dims, sizeof c->dims[0] * (size_t)t->rank)) {
            rlx_tensor_destroy(c);
            s->bool_copy[j] = NULL;
            RLX_TRY(rlx_tensor_create(RLX_DTYPE_BOOL, t->dims, t->rank, &s->bool_copy[j]));
            c = s->bool_copy[j];
        }
        unsigned char *o = c->data;
        for (size_t e = 0; e < n; e++) o[e] = b[e] != 0;
        ordered[j] = c;
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ compile */

/* Op type of a node for the report: "Conv", or "rlx.FusedElementwise" for
 * the internal ops that passes create. */
static const char *report_op(const rlx_node *n, char *buf, size_t cap) {
    if (!n->domain || !*n->domain) return n->op_type;
    snprintf(buf, cap, "%s.%s", n->domain, n->op_type);
    return buf;
}

/* The model's nodes per op type, those of subgraphs (If branches, loop
 * bodies) included: a plan may hold them once the fold pass has inlined a
 * branch. */
static void count_ops(const rlx_graph *g, const char **names, int *counts, size_t *n, size_t cap) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i].op_type;
        size_t j = 0;
        while (j < *n && strcmp(names[j], op) != 0) j++;
        if (j == *n && *n < cap) {
            names[(*n)++] = op;
            counts[j] = 0;
        }
        if (j < *n) counts[j]++;
        for (int a = 0; a < g->nodes[i].n_attrs; a++)
            if (g->nodes[i].attrs[a].g) count_ops(g->nodes[i].attrs[a].g, names, counts, n, cap);
    }
}

/* Appends the lines of `text` to r (at *o, cap bytes in all), each
 * indented by four spaces. */
static void indent_lines(char *r, size_t *o, size_t cap, const char *text) {
    while (*text && *o < cap) {
        size_t len = strcspn(text, "\n");
        *o += (size_t)snprintf(r + *o, cap - *o, "    %.*s\n", (int)len, text);
        text += len + (text[len] == '\n');
    }
}

static char *make_report(const rlx_session *s, const plan_entry *e, const char *eager_reason) {
    enum { CAP = 256 };
    const char *names[CAP];
    int total[CAP] = { 0 }, native[CAP] = { 0 }, fallback[CAP] = { 0 }, view[CAP] = { 0 };
    size_t n = 0;
    count_ops(s->g, names, total, &n, CAP);
    /* ops that passes created (fused nodes) get rows of their own after
     * the model's; their names live in `created` */
    char created[32][64];
    size_t n_model = n, n_created = 0;
    if (e->p) {
        for (size_t k = 0; k < e->p->n_steps; k++) {
            const rlx_node *nd = &e->p->g->nodes[e->p->steps[k]];
            char buf[64];
            const char *op = report_op(nd, buf, sizeof buf);
            size_t j = 0;
            while (j < n && strcmp(names[j], op) != 0) j++;
            if (j == n) {
                if (n == CAP || n_created == 32) continue;
                snprintf(created[n_created], sizeof created[n_created], "%s", op);
                names[n++] = created[n_created++];
                total[j] = 0;
            }
            if (j >= n_model) total[j]++;
            if (e->p->step_on[k] == RLX_STEP_VIEW) view[j]++;
            else if (e->p->step_on[k] == RLX_STEP_CPU && s->be->kind != RLX_DEVICE_CPU) fallback[j]++;
            else native[j]++;
        }
    }
    /* decisions of the plan (steps kept off the device) and of the
     * device's compile (weights kept in f32 in f16 mode), one line each */
    const char *plan_notes = e->p && e->p->notes ? e->p->notes : "";
    rlx_exe_stats es;
    const char *exe_notes = e->x && rlx_exec_stats(e->x, &es) && es.notes ? es.notes : "";
    size_t cap = 1024 + n * 96 + (eager_reason ? strlen(eager_reason) : 0) + 2 * strlen(plan_notes) +
                 2 * strlen(exe_notes);
    char *r = malloc(cap);
    if (!r) return NULL;
    size_t o = 0;
    o += (size_t)snprintf(r + o, cap - o, "dispatch report: device %s\n", s->be->device_name);
    if (eager_reason)
        o += (size_t)snprintf(r + o, cap - o, "  whole graph runs eagerly on the CPU: %s\n", eager_reason);
    o += (size_t)snprintf(r + o, cap - o,
                          "  (nodes: the model's nodes of the op, or its plan's where passes made more of it (the "
                          "fusions, the integer GEMM rewrites); each row's nodes = native + fallback + removed + "
                          "view. native: ran on the device's own kernels (all on a CPU device); fallback: ran on the CPU; "
                          "removed: folded "
                          "into constants, fused into another node, or dead; view: an alias of its input, no work)\n");
    o += (size_t)snprintf(r + o, cap - o, "  %-24s %7s %7s %9s %7s %7s\n", "op", "nodes", "native", "fallback",
                          "removed", "view");
    /* a row's nodes: the model's count, raised to the plan's where passes
     * added nodes of the op (fuse_qdq's Cast and QuantizeLinear, the
     * rewrites of the integer GEMMs): removed is then the net difference,
     * so that the columns add up; the sums go to the total line */
    int sum[6] = { 0 }, model_nodes = 0;
    bool on_cpu = s->be->kind == RLX_DEVICE_CPU;
    for (size_t j = 0; j < n && o < cap; j++) {
        int in_plan = e->eager ? 0 : native[j] + fallback[j] + view[j];
        int nodes = total[j];
        if (j < n_model) model_nodes += total[j];
        if (!e->eager && in_plan > nodes) nodes = in_plan;
        /* an eager graph runs every node on the CPU: a fallback on a GPU
         * device, the device's own kernels on a CPU device (control flow
         * there falls back from nothing) */
        int nat = e->eager ? (on_cpu ? total[j] : 0) : native[j];
        int fb = e->eager ? (on_cpu ? 0 : total[j]) : fallback[j], vw = e->eager ? 0 : view[j];
        int folded = nodes - nat - fb - vw;
        int row[5] = { nodes, nat, fb, folded, vw };
        for (int c = 0; c < 5; c++) sum[c] += row[c];
        o += (size_t)snprintf(r + o, cap - o, "  %-24s %7d %7d %9d %7d %7d\n", names[j], nodes, nat, fb, folded, vw);
    }
    if (o < cap)
        o += (size_t)snprintf(r + o, cap - o,
                              "  total: %d nodes = %d native + %d fallback + %d removed + %d view (the model has %d; "
                              "passes added %d)\n", sum[0], sum[1], sum[2], sum[3], sum[4], model_nodes,
                              sum[0] - model_nodes);
    if ((*plan_notes || *exe_notes) && o < cap) o += (size_t)snprintf(r + o, cap - o, "  notes:\n");
    indent_lines(r, &o, cap, plan_notes);
    indent_lines(r, &o, cap, exe_notes);
    /* names in it come from the model file (base/escape.h) */
    char *safe = malloc(4 * cap + 1);
    if (safe) rlx_escape_into(r, safe, 4 * cap + 1, true);
    free(r);
    return safe;
}

/* Whether the CPU compile of a plan may also free the plain copy of the
 * model's weights it reads through packs alone (cpu.release_packed, issue
 * 13): the session is the model's only holder (the caller dropped their
 * handle: no model API, no other session, no other thread reads them), a
 * CPU session (a device's compile and runs read the constants), not a
 * sub-session for overridable initializers (its model borrows this one's
 * weights) and the model has none (route's sub-sessions would read them).
 * The other readers in this session, a later plan's passes and an eager
 * run, come after restore_model_consts. refs cannot grow meanwhile:
 * nothing holds a handle to retain. */
static bool model_release_ok(const rlx_session *s) {
    return s->cfg->cpu_release_packed && s->cfg->cpu_prepack && !s->borrowed && !s->host &&
           s->be->kind == RLX_DEVICE_CPU && s->model->g->n_overridable == 0 &&
           atomic_load(&s->model->refs) == 1;
}

/* Gives back the model's weights that plans freed (model_release_ok),
 * unpacked from those plans' packs, before another plan's passes or an
 * eager run read them. */
static rlx_status restore_model_consts(rlx_session *s) {
    if (!s->consts_released) return RLX_OK;
    for (size_t i = 0; i < s->n_plans; i++)
        if (s->plans[i].x) RLX_TRY(rlx_exec_restore_consts(s->plans[i].x));
    s->consts_released = false;
    return RLX_OK;
}

/* The executable of plan e: the device's kernels, packed weights, arena. */
static rlx_status compile_backend(rlx_session *s, plan_entry *e, bool progress) {
    if (progress)
        rlx_log(RLX_LOG_PROGRESS, "rlx: compiling: %zu steps for %s", e->p->n_steps, rlx_session_device_name(s));
    double t1 = rlx_now_seconds();
    e->p->release_model_consts = model_release_ok(s);
    /* set first: a compile that fails after freeing some has no plan left
     * to restore them from, and later compiles then refuse (get_plan) */
    if (e->p->release_model_consts) s->consts_released = s->ever_released = true;
    RLX_TRY(rlx_exec_create(s->be, s->host, e->p, &e->x));
    rlx_exec_set_run_ctl(e->x, &s->stopper);
    rlx_exec_set_progress(e->x, progress);
    e->stats.backend_compile_s = rlx_now_seconds() - t1;
    return RLX_OK;
}

/* The last plan's executable, compiled now if plan.defer_backend left it
 * for its first run (the report then gains the executable's notes). */
static rlx_status last_exec_ready(rlx_session *s) {
    plan_entry *e = s->last;
    if (e->eager || e->x) return RLX_OK;
    bool progress = rlx_config_progress(s->cfg);
    rlx_status st = compile_backend(s, e, progress);
    if (progress) rlx_log(RLX_LOG_PROGRESS, "%s", "");
    if (st) return st;
    free(e->report);
    e->report = make_report(s, e, NULL);
    return RLX_OK;
}

static rlx_status compile_plan_steps(rlx_session *s, const rlx_tensor *const *ordered, plan_entry *e, bool progress) {
    double t0 = rlx_now_seconds();
    rlx_pass_stats ps = { .cfg = s->cfg, .cpu_target = s->be->kind == RLX_DEVICE_CPU };
    char why[512];
    RLX_TRY(rlx_plan_build(s->g, ordered, s->ctl ? s->ctl_in : NULL, s->be, s->host, &ps, why, sizeof why, &e->p));
    e->stats.nodes_folded = ps.folded;
    e->stats.nodes_removed = ps.removed;
    e->stats.nodes_fused = ps.fused;
    e->stats.passes_s = rlx_now_seconds() - t0;
    e->eager = e->p == NULL;
    if (e->eager) {
        e->report = make_report(s, e, why);
        return RLX_OK;
    }
    if (!s->cfg->plan_only) RLX_TRY(compile_backend(s, e, progress));
    e->report = make_report(s, e, NULL);
    return RLX_OK;
}

/* Compiles a plan; with the progress option, a progress line says what
 * is being done (the backend adds its own, e.g. GPU kernels k/n). */
static rlx_status compile_plan(rlx_session *s, const rlx_tensor *const *ordered, plan_entry *e) {
    bool progress = rlx_config_progress(s->cfg);
    if (progress) rlx_log(RLX_LOG_PROGRESS, "rlx: compiling: optimising the graph");
    rlx_status st = compile_plan_steps(s, ordered, e, progress);
    if (progress) rlx_log(RLX_LOG_PROGRESS, "%s", "");
    /* stopped inside the passes: only folding evaluates nodes there (the
     * GPU backend's compile names itself) */
    if (st == RLX_ERR_CANCELLED && strncmp(rlx_last_error(), "compiling a plan", 16) != 0)
        rlx_fail_prefix(st, "compiling a plan (constant folding): ");
    return st;
}

/* ------------------------------------------------------------ run */

/* The bytes of a control input (one element of at most 8 bytes). */
static uint64_t ctl_bits(const rlx_tensor *t) {
    uint64_t b = 0;
    memcpy(&b, t->data, t->nbytes < sizeof b ? t->nbytes : sizeof b);
    return b;
}

static bool sig_match(const rlx_session *s, const plan_entry *e, const rlx_tensor *const *ordered) {
    for (size_t j = 0; j < s->g->n_inputs; j++) {
        const int64_t *sg = e->sig + j * RLX_MAX_RANK;
        if (e->dtypes[j] != ordered[j]->dtype) return false;
        if (s->ctl && s->ctl_in[j] && e->ctl_val[j] != ctl_bits(ordered[j])) return false;
        for (int d = 0; d < RLX_MAX_RANK; d++) {
            int64_t want = d < ordered[j]->rank ? ordered[j]->dims[d] : -1;
            if (sg[d] != want) return false;
        }
    }
    return true;
}

/* The model's weights all there for a reader other than a plan's packs:
 * restored (restore_model_consts); a compile that failed after freeing
 * some left no plan to restore them from: refused. */
static rlx_status model_consts_ready(rlx_session *s) {
    RLX_TRY(restore_model_consts(s));
    if (!s->ever_released) return RLX_OK;
    const rlx_graph *g = s->model->g;
    for (size_t v = 0; v < g->n_values; v++)
        if (g->values[v].konst && !g->values[v].konst->data && g->values[v].konst->nbytes)
            return rlx_fail(RLX_ERR_INTERNAL, "model weight '%s' was freed after packing and cannot be restored "
                                              "(set cpu.release_packed=0)", g->values[v].name);
    return RLX_OK;
}

/* Finds or compiles the plan for inputs already ordered as the graph's
 * inputs (and checked). Sets *compiled_now when it compiled. */
static rlx_status rlx_session_get_plan(rlx_session *s, const rlx_tensor *const *ordered, bool *compiled_now) {
    *compiled_now = false;
    for (size_t i = 0; i < s->n_plans; i++)
        if (sig_match(s, &s->plans[i], ordered)) {
            /* an eager run reads the model's weights plain */
            if (s->plans[i].eager) RLX_TRY(model_consts_ready(s));
            s->last = &s->plans[i];
            s->last->last_used = ++s->tick;
            return RLX_OK;
        }
    /* the passes of a new plan read the model's weights (before any plan
     * whose packs hold them goes) */
    RLX_TRY(model_consts_ready(s));
    /* a control input that takes many values (a step counter, not a
     * sample rate) would compile a plan per call: after CTL_VALUES_MAX new
     * values the session stops specialising on them (the plans so far
     * assumed their values: dropped) and such graphs run eagerly */
    if (s->ctl) {
        bool same_shapes = false;
        s->ctl = false;
        for (size_t i = 0; i < s->n_plans && !same_shapes; i++) same_shapes = sig_match(s, &s->plans[i], ordered);
        s->ctl = true;
        if (same_shapes && ++s->ctl_values > CTL_VALUES_MAX) {
            rlx_log(RLX_LOG_DEBUG, "rlx: control inputs took more than %d values: no longer specialising plans on them",
                    CTL_VALUES_MAX);
            for (size_t i = 0; i < s->n_plans; i++) plan_free(s, &s->plans[i]);
            s->n_plans = 0;
            s->last = NULL;
            s->ctl = false;
        }
    }
    plan_entry *e;
    if (s->n_plans < PLAN_CACHE) {
        e = &s->plans[s->n_plans++];
    } else {
        e = &s->plans[0];
        for (size_t i = 1; i < PLAN_CACHE; i++)
            if (s->plans[i].last_used < e->last_used) e = &s->plans[i];
        plan_free(s, e);
    }
    memset(e, 0, sizeof *e);
    size_t ni = s->g->n_inputs;
    e->sig = malloc((ni + 1) * RLX_MAX_RANK * sizeof(int64_t));
    e->dtypes = calloc(ni + 1, sizeof *e->dtypes);
    e->ctl_val = calloc(ni + 1, sizeof *e->ctl_val);
    if (!e->sig || !e->dtypes || !e->ctl_val) {
        plan_free(s, e);
        s->n_plans--;
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t j = 0; j < ni; j++) {
        e->dtypes[j] = ordered[j]->dtype;
        if (s->ctl && s->ctl_in[j]) e->ctl_val[j] = ctl_bits(ordered[j]);
        for (int d = 0; d < RLX_MAX_RANK; d++)
            e->sig[j * RLX_MAX_RANK + d] = d < ordered[j]->rank ? ordered[j]->dims[d] : -1;
    }
    rlx_status st = compile_plan(s, ordered, e);
    if (st) {
        plan_free(s, e);
        /* keep the array dense: move the last entry into the hole */
        size_t idx = (size_t)(e - s->plans);
        if (idx != s->n_plans - 1) *e = s->plans[s->n_plans - 1], memset(&s->plans[s->n_plans - 1], 0, sizeof *e);
        s->n_plans--;
        s->last = NULL;
        return st;
    }
    e->last_used = ++s->tick;
    s->last = e;
    s->compiles++;
    *compiled_now = true;
    if (s->cfg->dispatch_report && e->report) rlx_log(RLX_LOG_DEBUG, "%s", e->report);
    return RLX_OK;
}

static rlx_status prepare_locked(rlx_session *s, size_t n_inputs, const char *const *input_names,
                                 const rlx_tensor *const *inputs) {
    const rlx_tensor **ordered = s->ordered;
    RLX_TRY(match_inputs(s, n_inputs, input_names, inputs, true, ordered));
    RLX_TRY(normalise_bools(s, ordered)); /* a control input's value decides the plan */
    bool fresh;
    return rlx_session_get_plan(s, ordered, &fresh);
}

static rlx_status run_locked(rlx_session *s, size_t n_inputs, const char *const *input_names,
                             const rlx_tensor *const *inputs, rlx_tensor ***out_outputs, size_t *out_n_outputs) {
    const rlx_tensor **ordered = s->ordered;
    RLX_TRY(match_inputs(s, n_inputs, input_names, inputs, false, ordered));
    RLX_TRY(normalise_bools(s, ordered));
    bool fresh;
    RLX_TRY(rlx_session_get_plan(s, ordered, &fresh));
    RLX_TRY(last_exec_ready(s));
    rlx_tensor **outs = calloc(s->g->n_outputs + 1, sizeof *outs);
    if (!outs) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    rlx_status st = s->last->eager ? rlx_cpu_eval_graph(s->g, NULL, s->cfg, ordered, outs) : rlx_exec_run(s->last->x, ordered, outs);
    /* string outputs point into the inputs or the plan's constants: each
     * gets its own characters (rlx.h) */
    for (size_t i = 0; i < s->g->n_outputs && !st; i++)
        if (outs[i] && outs[i]->dtype == RLX_DTYPE_STRING) st = rlx_tensor_own_strings(outs[i]);
    if (st) {
        for (size_t i = 0; i < s->g->n_outputs; i++) rlx_tensor_destroy(outs[i]);
        free(outs);
        return st;
    }
    *out_outputs = outs;
    *out_n_outputs = s->g->n_outputs;
    rlx_clear_error();
    return RLX_OK;
}

static rlx_status run_into_locked(rlx_session *s, size_t n_inputs, const char *const *input_names,
                                  const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    const rlx_tensor **ordered = s->ordered;
    RLX_TRY(match_inputs(s, n_inputs, input_names, inputs, false, ordered));
    RLX_TRY(normalise_bools(s, ordered));
    bool fresh;
    RLX_TRY(rlx_session_get_plan(s, ordered, &fresh));
    if (s->last->eager)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "this plan runs eagerly on the CPU: outputs cannot be filled in place");
    for (size_t i = 0; i < s->g->n_outputs; i++) {
        const rlx_value *v = &s->last->p->g->values[s->last->p->g->outputs[i]];
        const rlx_tensor *t = outputs[i];
        if (v->dtype == RLX_DTYPE_STRING)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "output %zu ('%s') is a string tensor: use rlx_session_run, whose "
                            "outputs own their strings", i, v->name);
        int rank = v->rank < 0 ? 0 : v->rank;
        uint64_t nb = s->last->p->mem.bytes[s->last->p->g->outputs[i]];
        char a[96], b[96];
        if (!t) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output %zu ('%s'): the tensor is NULL", i, v->name);
        if (t->dtype != v->dtype || t->rank != rank || (rank && memcmp(t->dims, v->dims, (size_t)rank * sizeof t->dims[0])) ||
            t->nbytes < nb) {
            if (t->rank < 0 || t->rank > RLX_MAX_RANK) /* its dims are not to be read */
                snprintf(b, sizeof b, "of rank %d (0 to %d)", t->rank, RLX_MAX_RANK);
            else
                rlx_shape_str(t->dims, t->rank, b, sizeof b);
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                            "output %zu ('%s'): expected %s shape %s (%llu bytes), given %s shape %s (nbytes %zu)", i,
                            v->name, rlx_dtype_name(v->dtype), rlx_shape_str(v->dims, rank, a, sizeof a), (unsigned long long)nb,
                            rlx_dtype_name(t->dtype), b, t->nbytes);
        }
        if (nb && !t->data)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output %zu ('%s'): data is NULL (%llu bytes expected)", i, v->name,
                            (unsigned long long)nb);
    }
    RLX_TRY(last_exec_ready(s));
    RLX_TRY(rlx_exec_run(s->last->x, ordered, outputs));
    rlx_clear_error();
    return RLX_OK;
}

/* ------------------------------------------------------------ overridable initializers */

/* A sub-session of s for the overridable initializers in the bitset `set`
 * fed (bit k: the model's overridable initializer k): its model is a copy
 * of s's in which they are inputs (the copy borrows the other weights; the
 * model's reference held by s keeps them). */
static rlx_status ov_create(rlx_session *s, const uint64_t *set, rlx_session **out) {
    *out = NULL;
    const rlx_graph *mg = s->model->g;
    rlx_graph *g;
    RLX_TRY(rlx_graph_clone(mg, &g));
    rlx_status st = RLX_OK;
    for (size_t k = 0; k < mg->n_overridable && !st; k++) {
        if (!(set[k / 64] >> (k % 64) & 1)) continue;
        int id = mg->overridable[k];
        rlx_value *v = &g->values[id];
        v->konst = NULL; /* borrowed from the model's graph */
        v->flags &= ~(unsigned)(RLX_VALUE_INITIALIZER | RLX_VALUE_KONST_BORROWED);
        v->flags |= RLX_VALUE_INPUT;
        const rlx_decl_shape *d = &mg->overridable_decl[k]; /* what a fed value may have */
        rlx_value_set_shape(v, d->rank, d->dims, d->syms);
        st = RLX_GROW(g->inputs, g->cap_inputs, g->n_inputs + 1);
        if (!st) g->inputs[g->n_inputs++] = id;
    }
    rlx_model *m = NULL;
    if (st) rlx_graph_destroy(g);
    else st = rlx_model_from_graph(g, &m); /* takes g */
    rlx_session *sub = st ? NULL : calloc(1, sizeof *sub);
    if (!st && !sub) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    if (st) {
        rlx_model_destroy(m);
        return rlx_fail_prefix(st, "preparing a run that feeds overridable initializers: ");
    }
    sub->model = m; /* the creator's reference, now the sub-session's */
    sub->borrowed = true;
    sub->be = s->be;
    sub->host = s->host;
    sub->cfg = s->cfg;
    sub->threads = s->threads;
    st = rlx_graph_clone(m->g, &sub->g);
    if (!st) st = inputs_init(sub);
    if (st) {
        rlx_session_destroy(sub);
        return st;
    }
    *out = sub;
    return RLX_OK;
}

/* The session that runs inputs `names`: s, or where they name overridable
 * initializers of the model, the sub-session for that set (made on first
 * use; the least recently used of OV_CACHE goes). */
static rlx_status route(rlx_session *s, size_t n, const char *const *names, rlx_session **out) {
    *out = s;
    const rlx_graph *mg = s->model->g;
    if (!mg->n_overridable || !names) return RLX_OK;
    size_t w = s->ov_words;
    uint64_t *key = s->ov_keys ? s->ov_keys + OV_CACHE * w : NULL; /* this run's set */
    bool any = false;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; names[i] && k < mg->n_overridable; k++)
            if (strcmp(mg->values[mg->overridable[k]].name, names[i]) == 0) {
                if (!s->ov_keys) { /* the first run that feeds one */
                    w = (mg->n_overridable + 63) / 64;
                    s->ov_keys = calloc((OV_CACHE + 1) * w, sizeof *s->ov_keys);
                    if (!s->ov_keys) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
                    s->ov_words = w;
                    key = s->ov_keys + OV_CACHE * w;
                }
                if (!any) memset(key, 0, w * sizeof *key);
                any = true;
                key[k / 64] |= 1ull << (k % 64);
            }
    if (!any) return RLX_OK;
    size_t kb = w * sizeof *key;
    for (size_t i = 0; i < s->n_ov; i++)
        if (memcmp(s->ov_keys + i * w, key, kb) == 0) {
            rlx_session *hit = s->ov[i]; /* most recent last */
            memmove(&s->ov[i], &s->ov[i + 1], (s->n_ov - i - 1) * sizeof s->ov[0]);
            memmove(s->ov_keys + i * w, s->ov_keys + (i + 1) * w, (s->n_ov - i - 1) * kb);
            s->ov[s->n_ov - 1] = hit;
            memcpy(s->ov_keys + (s->n_ov - 1) * w, key, kb);
            *out = hit;
            return RLX_OK;
        }
    rlx_session *sub;
    RLX_TRY(ov_create(s, key, &sub));
    if (s->n_ov == OV_CACHE) {
        if (s->last_run == s->ov[0]) s->last_run = NULL;
        rlx_session_destroy(s->ov[0]);
        memmove(&s->ov[0], &s->ov[1], (OV_CACHE - 1) * sizeof s->ov[0]);
        memmove(s->ov_keys, s->ov_keys + w, (OV_CACHE - 1) * kb);
        s->n_ov--;
    }
    s->ov[s->n_ov] = sub;
    memcpy(s->ov_keys + s->n_ov * w, key, kb);
    s->n_ov++;
    *out = sub;
    return RLX_OK;
}

/* ------------------------------------------------------------ entry points */

/* A run time limit in milliseconds: `least` (0: none; -1 also: the
 * session's) to INT64_MAX / 10^6, the most the clock arithmetic takes. */
static rlx_status check_timeout(int64_t timeout_ms, int64_t least) {
    if (timeout_ms < least || timeout_ms > INT64_MAX / 1000000)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "run time limit %lld ms: expected %s to %lld", (long long)timeout_ms,
                        least < 0 ? "-1 (the session's), 0 (none)" : "0 (none)", (long long)(INT64_MAX / 1000000));
    return RLX_OK;
}

/* A call's turn on the session: `seen` taken before waiting for the lock
 * (a terminate request while it waits stops it), the session's thread limit
 * (kernels, folding and packing alike) and the run's stop control set;
 * turn_end undoes both and unlocks. */
static rlx_status turn_begin(rlx_session *s, const rlx_run_options *ro, int *prev) {
    uint64_t seen = rlx_run_ctl_enter(&s->stopper);
    rlx_status refused = rlx_run_ctl_refuse(&s->stopper, ro);
    if (refused) {
        *prev = -1; /* never had the session (turn_end) */
        return refused;
    }
    if (ro) {
        /* a run with options waits in 1 ms slices, so that their terminate
         * flag stops it while another run has the session (a plain lock
         * would keep it waiting until that run ends) */
        for (;;) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 1000000;
            if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
            if (pthread_mutex_timedlock(&s->lock, &until) == 0) break;
            if (atomic_load(&((rlx_run_options *)ro)->terminate)) {
                *prev = -1;
                return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by its run options (rlx_run_options_set_terminate) "
                                                   "while it waited for its turn");
            }
        }
    } else {
        pthread_mutex_lock(&s->lock);
    }
    *prev = rlx_parallel_set_limit(s->threads);
    return rlx_run_ctl_begin(&s->stopper, seen, atomic_load(&s->timeout_ms), ro);
}

static void turn_end(rlx_session *s, int prev) {
    if (prev == -1) return; /* stopped before it had the session (turn_begin) */
    rlx_run_ctl_end(&s->stopper);
    rlx_parallel_set_limit(prev);
    pthread_mutex_unlock(&s->lock);
}

rlx_status rlx_session_prepare(rlx_session *s, size_t n_inputs, const char *const *input_names,
                               const rlx_tensor *const *inputs) {
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    int prev;
    rlx_status st = turn_begin(s, NULL, &prev);
    rlx_session *r = s;
    if (!st) st = route(s, n_inputs, input_names, &r);
    if (!st) st = prepare_locked(r, n_inputs, input_names, inputs);
    turn_end(s, prev);
    return st;
}

rlx_status rlx_session_run_with(rlx_session *s, const rlx_run_options *ro, size_t n_inputs,
                                const char *const *input_names, const rlx_tensor *const *inputs,
                                rlx_tensor ***out_outputs, size_t *out_n_outputs) {
    if (out_outputs) *out_outputs = NULL;
    if (out_n_outputs) *out_n_outputs = 0;
    if (!s || !out_outputs || !out_n_outputs) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session or output pointer is NULL");
    int prev;
    rlx_status st = turn_begin(s, ro, &prev);
    rlx_session *r = s;
    if (!st) st = route(s, n_inputs, input_names, &r);
    if (!st) st = run_locked(r, n_inputs, input_names, inputs, out_outputs, out_n_outputs);
    if (!st) s->last_run = r == s ? NULL : r;
    turn_end(s, prev);
    return st;
}

rlx_status rlx_session_run(rlx_session *s, size_t n_inputs, const char *const *input_names,
                           const rlx_tensor *const *inputs, rlx_tensor ***out_outputs, size_t *out_n_outputs) {
    return rlx_session_run_with(s, NULL, n_inputs, input_names, inputs, out_outputs, out_n_outputs);
}

rlx_status rlx_session_run_into_with(rlx_session *s, const rlx_run_options *ro, size_t n_inputs,
                                     const char *const *input_names, const rlx_tensor *const *inputs,
                                     rlx_tensor **outputs) {
    if (!s || !outputs) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session or output pointer is NULL");
    int prev;
    rlx_status st = turn_begin(s, ro, &prev);
    rlx_session *r = s;
    if (!st) st = route(s, n_inputs, input_names, &r);
    if (!st) st = run_into_locked(r, n_inputs, input_names, inputs, outputs);
    if (!st) s->last_run = r == s ? NULL : r;
    turn_end(s, prev);
    return st;
}

rlx_status rlx_session_run_into(rlx_session *s, size_t n_inputs, const char *const *input_names,
                                const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    return rlx_session_run_into_with(s, NULL, n_inputs, input_names, inputs, outputs);
}

/* ------------------------------------------------------------ run options */

rlx_status rlx_run_options_create(rlx_run_options **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_options is NULL");
    *out = NULL;
    rlx_run_options *ro = malloc(sizeof *ro);
    if (!ro) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "run options: out of memory");
    atomic_init(&ro->terminate, false);
    atomic_init(&ro->timeout_ms, -1);
    *out = ro;
    return RLX_OK;
}

void rlx_run_options_destroy(rlx_run_options *ro) { free(ro); }

rlx_status rlx_run_options_set_terminate(rlx_run_options *ro, bool terminate) {
    if (!ro) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "run options is NULL");
    atomic_store(&ro->terminate, terminate);
    return RLX_OK;
}

rlx_status rlx_run_options_get_terminate(const rlx_run_options *ro, bool *out_terminate) {
    if (!ro || !out_terminate) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "run options or out_terminate is NULL");
    *out_terminate = atomic_load(&((rlx_run_options *)ro)->terminate);
    return RLX_OK;
}

rlx_status rlx_run_options_set_timeout(rlx_run_options *ro, int64_t timeout_ms) {
    if (!ro) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "run options is NULL");
    RLX_TRY(check_timeout(timeout_ms, -1));
    atomic_store(&ro->timeout_ms, timeout_ms);
    return RLX_OK;
}

rlx_status rlx_session_terminate(rlx_session *s) {
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    rlx_run_ctl_terminate(&s->stopper);
    return RLX_OK;
}

rlx_status rlx_session_set_terminate(rlx_session *s, bool terminate) {
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    rlx_run_ctl_hold(&s->stopper, terminate);
    return RLX_OK;
}

rlx_status rlx_session_set_run_timeout(rlx_session *s, int64_t timeout_ms) {
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    RLX_TRY(check_timeout(timeout_ms, 0));
    atomic_store(&s->timeout_ms, timeout_ms);
    return RLX_OK;
}
