/* The public session extensions of rlx/session_ext.h that read the last
 * plan: statistics, profiling and the plan's steps and values. Thin
 * wrappers over the session's accessors (runtime/session.h), the program
 * (plan/program.h) and the executable (runtime/exec.h);
 * nothing here runs on the run path. */
#include <string.h>

#include "backend/backend.h"
#include "base/status.h"
#include "runtime/exec.h"
#include "runtime/model.h"
#include "runtime/session.h"

_Static_assert((int)RLX_STEP_DEVICE_CPU == (int)RLX_STEP_CPU && (int)RLX_STEP_DEVICE_GPU == (int)RLX_STEP_GPU &&
                   (int)RLX_STEP_DEVICE_VIEW == (int)RLX_STEP_VIEW,
               "rlx_step_device mirrors the program's RLX_STEP_*");
_Static_assert((int)RLX_PLAN_ORDER_NO_REUSE == (int)RLX_MEM_NO_REUSE && (int)RLX_PLAN_ORDER_BY_SIZE == (int)RLX_MEM_BY_SIZE &&
                   (int)RLX_PLAN_ORDER_BY_BREADTH == (int)RLX_MEM_BY_BREADTH &&
                   (int)RLX_PLAN_ORDER_BY_TIME == (int)RLX_MEM_BY_TIME &&
                   (int)RLX_PLAN_ORDER_COUNT == (int)RLX_MEM_N_STRATEGIES,
               "rlx_plan_order mirrors rlx_mem_strategy");

rlx_status rlx_session_get_stats(const rlx_session *s, rlx_session_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!s || !out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session or out_stats is NULL");
    rlx_backend *be = rlx_session_backend(s);
    out->backend = be->name;
    out->n_plans_cached = rlx_session_plan_count(s);
    out->n_compiles = rlx_session_compile_count(s);
    const rlx_compile_stats *cs = rlx_session_last_stats(s);
    if (!cs) return RLX_OK;
    out->has_plan = true;
    out->eager = rlx_session_last_program(s) == NULL;
    out->passes_s = cs->passes_s;
    out->backend_compile_s = cs->backend_compile_s;
    out->nodes_folded = cs->nodes_folded;
    out->nodes_fused = cs->nodes_fused;
    out->nodes_removed = cs->nodes_removed;
    rlx_exe_stats es;
    if (rlx_exec_stats(rlx_session_last_exec(s), &es)) {
        out->has_exe_stats = true;
        out->n_dispatches = es.n_dispatches;
        out->n_gpu_segments = es.n_gpu_segments;
        out->n_cpu_steps = es.n_cpu_steps;
        out->n_pipelines_new = es.n_pipelines_new;
        out->lower_s = es.lower_s;
        out->pipelines_s = es.pipelines_s;
        out->n_pipelines_reused = es.n_pipelines_reused;
        out->pipelines_driver_s = es.driver_s;
        out->buffers_s = es.buffers_s;
        out->bind_groups_s = es.bind_groups_s;
        out->arena_bytes = es.arena_bytes;
        out->weight_bytes = es.weight_bytes;
        out->scratch_bytes = es.scratch_bytes;
        out->f16_mode = es.f16_mode;
        out->gemm_note = es.gemm_note;
        out->gpu_timing = es.gpu_timing;
        out->timing_inside_passes = es.timing_inside_passes;
        out->n_pipelines_unchecked = es.n_pipelines_unchecked;
        out->runtime_checks_note = es.checks_note;
        out->int8_note = es.int8_note;
    }
    return RLX_OK;
}

/* The executable of the last plan, or an error saying why there is none
 * to profile. */
static rlx_status profiled_exec(const rlx_session *s, rlx_status no_plan, rlx_exec **x) {
    *x = rlx_session_last_exec(s);
    if (!rlx_session_last_stats(s)) return rlx_fail(no_plan, "no plan yet: prepare or run the session first");
    if (!*x)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "the last plan runs eagerly on the CPU, or its steps are not compiled "
                                             "until it runs (plan.defer_backend): no steps to profile");
    return RLX_OK;
}

rlx_status rlx_session_set_profiling(rlx_session *s, rlx_profile_level level) {
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    if (level != RLX_PROFILE_OFF && level != RLX_PROFILE_TOTAL && level != RLX_PROFILE_STEPS)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "profile level %d", (int)level);
    rlx_exec *x;
    RLX_TRY(profiled_exec(s, RLX_ERR_INVALID_ARGUMENT, &x));
    return rlx_exec_set_timing(x, (int)level);
}

rlx_status rlx_session_profile(rlx_session *s, const rlx_profile_slice **out_slices, size_t *out_n,
                               double *out_gpu_total_us) {
    if (out_slices) *out_slices = NULL;
    if (out_n) *out_n = 0;
    if (out_gpu_total_us) *out_gpu_total_us = 0;
    if (!s || !out_slices || !out_n || !out_gpu_total_us)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session or an output pointer is NULL");
    rlx_exec *x;
    RLX_TRY(profiled_exec(s, RLX_ERR_UNSUPPORTED, &x));
    *out_n = rlx_exec_timing(x, out_slices, out_gpu_total_us);
    return RLX_OK;
}

/* The last plan's program, or an error when there is none with steps. */
static rlx_status static_program(const rlx_session *s, const rlx_program **out) {
    *out = NULL;
    if (!s) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "session is NULL");
    if (!rlx_session_last_stats(s))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "no plan yet: prepare or run the session first");
    *out = rlx_session_last_program(s);
    if (!*out)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "the last plan runs eagerly on the CPU: it has no static steps or arena");
    return RLX_OK;
}

/* static_program, and the node *n of its step `step` (checked). */
static rlx_status program_step(const rlx_session *s, size_t step, const rlx_program **p, const rlx_node **n) {
    RLX_TRY(static_program(s, p));
    if (step >= (*p)->n_steps)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "step %zu out of range (the plan has %zu)", step, (*p)->n_steps);
    *n = &(*p)->g->nodes[(*p)->steps[step]];
    return RLX_OK;
}

rlx_status rlx_session_plan_info(const rlx_session *s, rlx_plan_info *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_info is NULL");
    const rlx_program *p;
    RLX_TRY(static_program(s, &p));
    bool cpu_session = rlx_session_device_kind(s) == RLX_DEVICE_CPU;
    for (size_t k = 0; k < p->n_steps; k++) {
        if (p->step_on[k] == RLX_STEP_VIEW) out->n_steps_view++;
        else if (p->step_on[k] == RLX_STEP_GPU || cpu_session) out->n_steps_device++;
        else out->n_steps_cpu++;
    }
    const rlx_graph *g = p->g;
    const rlx_mem_plan *mp = &p->mem;
    for (size_t i = 0; i < g->n_values; i++) {
        const rlx_value *v = &g->values[i];
        if (v->konst) {
            out->n_weights++;
            out->weight_bytes += v->konst->nbytes;
        } else if (mp->offset[i] != RLX_NO_OFFSET && mp->alias[i] == (int)i) {
            out->n_arena_tensors++;
        }
    }
    out->n_steps = p->n_steps;
    out->n_values = g->n_values;
    out->arena_bytes = mp->arena_bytes;
    out->noreuse_bytes = mp->noreuse_bytes;
    out->peak_bytes = mp->peak_bytes;
    out->buffer_limit = mp->buffer_limit;
    out->arena_align = RLX_ARENA_ALIGN;
    out->order = (rlx_plan_order)mp->strategy;
    for (int k = 0; k < RLX_PLAN_ORDER_COUNT; k++) out->order_bytes[k] = mp->strategy_bytes[k];
    return RLX_OK;
}

rlx_status rlx_session_plan_step(const rlx_session *s, size_t step, rlx_plan_step *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_step is NULL");
    const rlx_program *p;
    const rlx_node *n = NULL;
    RLX_TRY(program_step(s, step, &p, &n));
    out->node = n->name ? n->name : "";
    out->op = n->op_type;
    out->domain = n->domain ? n->domain : "";
    out->device = (rlx_step_device)p->step_on[step];
    out->n_inputs = (size_t)n->n_in;
    out->n_outputs = (size_t)n->n_out;
    return RLX_OK;
}

/* Describes value v (>= 0) of program p. */
static void describe_value(const rlx_program *p, int v, rlx_plan_value *out) {
    const rlx_graph *g = p->g;
    const rlx_value *val = &g->values[v];
    const rlx_mem_plan *mp = &p->mem;
    rlx_value_info_fill(g, v, &out->info);
    out->graph_input = (val->flags & RLX_VALUE_INPUT) != 0;
    out->constant = val->konst != NULL;
    out->in_arena = !val->konst && mp->offset[v] != RLX_NO_OFFSET && mp->alias[v] == v;
    out->offset = mp->offset[v];
    out->bytes = mp->bytes[v];
    out->first_step = mp->first[v];
    out->last_step = mp->last[v];
    if (val->producer >= 0) {
        const rlx_node *n = &g->nodes[val->producer];
        out->producer_node = n->name ? n->name : "";
        out->producer_op = n->op_type;
        out->producer_domain = n->domain ? n->domain : "";
    }
}

rlx_status rlx_session_plan_value(const rlx_session *s, size_t index, rlx_plan_value *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_value is NULL");
    const rlx_program *p;
    RLX_TRY(static_program(s, &p));
    if (index >= p->g->n_values)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "value %zu out of range (the plan has %zu)", index, p->g->n_values);
    describe_value(p, (int)index, out);
    return RLX_OK;
}

rlx_status rlx_session_plan_step_value(const rlx_session *s, size_t step, bool output, size_t k, rlx_plan_value *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_value is NULL");
    const rlx_program *p;
    const rlx_node *n = NULL;
    RLX_TRY(program_step(s, step, &p, &n));
    size_t count = (size_t)(output ? n->n_out : n->n_in);
    if (k >= count)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: %s %zu out of range (it has %zu)", rlx_node_desc(n),
                        output ? "output" : "input", k, count);
    int v = output ? n->out[k] : n->in[k];
    if (v < 0) { /* an omitted optional input: name NULL, rank 0 */
        out->offset = UINT64_MAX;
        out->first_step = out->last_step = -2;
        return RLX_OK;
    }
    describe_value(p, v, out);
    return RLX_OK;
}
