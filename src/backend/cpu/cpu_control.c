/* CPU kernels of If, Loop and Scan: each runs its body subgraph eagerly
 * (the host interpreter, rlx_cpu_eval_graph), resolving outer-scope
 * references from the enclosing graph, whose values are constants in eager
 * evaluation. Semantics: ONNX If-21, Loop-21, Scan-21. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/runctl.h"
#include "base/tensor.h"

/* Prefixes the message of a stop with the node and iteration `it` (of
 * `total`, -1: unbounded); returns RLX_ERR_CANCELLED. */
static rlx_status iteration_prefix(const rlx_cpu_kctx *k, int64_t it, int64_t total) {
    char of[48] = "";
    if (total >= 0) snprintf(of, sizeof of, " of %lld", (long long)total);
    return rlx_fail_prefix(RLX_ERR_CANCELLED, "%s: iteration %lld%s: ", rlx_node_desc(k->n), (long long)it, of);
}

/* Runs `body` eagerly (rlx_cpu_eval_graph) with its graph inputs bound to
 * `inputs` (n = body->n_inputs) and its outer references to the enclosing
 * graph's constants; returns copies of its outputs in outs[0..n_outputs).
 * it, total: the iteration of a Loop or Scan (it -1: an If; total -1:
 * unbounded), named when the run stops inside the body. */
static rlx_status run_body(const rlx_cpu_kctx *k, const rlx_graph *body, const rlx_tensor *const *inputs,
                           rlx_tensor **outs, int64_t it, int64_t total) {
    /* the body runs under the session's limits too */
    rlx_status st = rlx_cpu_eval_graph(body, k->g, k->cfg, inputs, outs);
    if (st == RLX_ERR_CANCELLED && it >= 0) {
        rlx_fail_prefix(st, "in its subgraph: ");
        iteration_prefix(k, it, total);
    } else if (st) {
        rlx_fail_prefix(st, "%s: in its subgraph: ", rlx_node_desc(k->n));
    }
    return st;
}

/* Whether the session's run must stop before iteration `it` of a Loop or
 * Scan (of `total`, -1: unbounded); the error names the node and the
 * iteration (base/runctl.h). */
static rlx_status check_stop(const rlx_cpu_kctx *k, int64_t it, int64_t total) {
    const rlx_run_ctl *run = k->cfg ? k->cfg->run : NULL;
    if (!rlx_run_stopped(run)) return RLX_OK;
    rlx_run_stop_error(run);
    return iteration_prefix(k, it, total);
}

/* Moves tensor t into kernel output slot i. */
static void give_out(rlx_cpu_kctx *k, int i, rlx_tensor *t) {
    rlx_tensor *o = k->out[i];
    if (!o) {
        rlx_tensor_destroy(t);
        return;
    }
    rlx_free_aligned(o->data);
    *o = *t;
    t->data = NULL;
    rlx_tensor_destroy(t);
}

static rlx_status k_if(rlx_cpu_kctx *k) {
    const rlx_tensor *c = k->in[0];
    if (rlx_tensor_numel(c) != 1) {
        char sh[128];
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "condition must have one element, got shape %s",
                            rlx_shape_str(c->dims, c->rank, sh, sizeof sh));
    }
    bool cond = rlx_tensor_get_f64(c, 0) != 0;
    const rlx_graph *body = rlx_param_graph(k->n, cond ? RLX_A_then_branch : RLX_A_else_branch);
    if (!body || (int)body->n_outputs != k->n->n_out)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "branch does not have %d outputs", k->n->n_out);
    rlx_tensor **outs = calloc((size_t)k->n->n_out + 1, sizeof *outs);
    if (!outs) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    rlx_status st = run_body(k, body, NULL, outs, -1, -1);
    if (!st)
        for (int i = 0; i < k->n->n_out; i++) give_out(k, i, outs[i]);
    free(outs);
    return st;
}

/* Stacks `count` equally shaped tensors along a new axis `axis`, in the
 * given order (reversed when `reverse`). With count 0, shape-only `proto`
 * gives the element shape. */
static rlx_status stack(rlx_cpu_kctx *k, int out_index, rlx_tensor **items, size_t count, int axis, bool reverse,
                        const rlx_value *proto, rlx_tensor **out) {
    int64_t dims[RLX_MAX_RANK];
    int rank;
    rlx_dtype dt;
    if (count) {
        const rlx_tensor *t0 = items[0];
        if (t0->rank + 1 > RLX_MAX_RANK) return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "scan output rank too large");
        rank = t0->rank + 1;
        dt = t0->dtype;
        for (size_t j = 1; j < count; j++)
            if (!rlx_shape_equal(items[j]->dims, items[j]->rank, t0->dims, t0->rank) || items[j]->dtype != dt)
                return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "scan outputs change shape between iterations");
        for (int d = 0, s = 0; d < rank; d++) dims[d] = d == axis ? (int64_t)count : t0->dims[s++];
    } else {
        rank = proto->rank >= 0 ? proto->rank + 1 : 1;
        dt = proto->dtype;
        for (int d = 0, s = 0; d < rank; d++) {
            if (d == axis) {
                dims[d] = 0;
            } else {
                dims[d] = proto->dims[s] >= 0 ? proto->dims[s] : 0;
                s++;
            }
        }
    }
    size_t numel, bytes;
    RLX_TRY(rlx_shape_numel(dims, rank, &numel));
    if (!rlx_mul_ok(numel, rlx_dtype_size(dt), &bytes)) bytes = SIZE_MAX;
    RLX_TRY(rlx_cpu_out_limit(k, out_index, dt, rank, dims, bytes));
    RLX_TRY(rlx_tensor_create(dt, dims, rank, out));
    if (!count) return RLX_OK;
    size_t es = rlx_dtype_size(dt);
    size_t outer = 1, inner = es;
    for (int d = 0; d < axis; d++) outer *= (size_t)dims[d];
    for (int d = axis + 1; d < rank; d++) inner *= (size_t)dims[d];
    char *dst = (*out)->data;
    for (size_t j = 0; j < count; j++) {
        const char *src = items[reverse ? count - 1 - j : j]->data;
        for (size_t o = 0; o < outer; o++) memcpy(dst + (o * count + j) * inner, src + o * inner, inner);
    }
    return RLX_OK;
}

static rlx_status k_loop(rlx_cpu_kctx *k) {
    const rlx_graph *body = rlx_param_graph(k->n, RLX_A_body);
    int n_carried = k->n->n_in - 2;
    int n_scan = k->n->n_out - n_carried;
    if (!body || n_carried < 0 || n_scan < 0 || (int)body->n_outputs != 1 + n_carried + n_scan)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "body outputs do not fit the node");
    int64_t max_trip = INT64_MAX;
    if (k->in[0]) {
        if (rlx_tensor_numel(k->in[0]) != 1) {
            char sh[128];
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "M must have one element, got shape %s",
                                rlx_shape_str(k->in[0]->dims, k->in[0]->rank, sh, sizeof sh));
        }
        max_trip = rlx_tensor_get_i64(k->in[0], 0);
    }
    bool have_cond = k->in[1] != NULL;
    /* an empty cond was read past its end */
    if (have_cond && rlx_tensor_numel(k->in[1]) != 1) {
        char sh[128];
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "cond must have one element, got shape %s",
                            rlx_shape_str(k->in[1]->dims, k->in[1]->rank, sh, sizeof sh));
    }
    bool cond = have_cond ? rlx_tensor_get_f64(k->in[1], 0) != 0 : true;
    rlx_status st = RLX_OK;
    size_t nb_in = (size_t)n_carried + 2;
    const rlx_tensor **bin = calloc(nb_in, sizeof *bin);
    rlx_tensor **carried = calloc((size_t)n_carried + 1, sizeof *carried);
    rlx_tensor **bout = calloc(body->n_outputs + 1, sizeof *bout);
    rlx_tensor ***scans = calloc((size_t)n_scan + 1, sizeof *scans);
    uint64_t *scan_bytes = calloc((size_t)n_scan + 1, sizeof *scan_bytes);
    size_t n_iter = 0, cap_iter = 0;
    rlx_tensor *iter_t = NULL, *cond_t = NULL;
    if (!bin || !carried || !bout || !scans || !scan_bytes) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    for (int i = 0; i < n_carried; i++) {
        if (!k->in[2 + i]) { st = rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "loop-carried input %d is missing", i); goto done; }
        RLX_TRY_GOTO(st, rlx_tensor_clone(k->in[2 + i], &carried[i]), done);
    }
    RLX_TRY_GOTO(st, rlx_tensor_create(RLX_DTYPE_I64, NULL, 0, &iter_t), done);
    RLX_TRY_GOTO(st, rlx_tensor_create(RLX_DTYPE_BOOL, NULL, 0, &cond_t), done);
    for (int64_t it = 0; it < max_trip && cond; it++) {
        RLX_TRY_GOTO(st, check_stop(k, it, k->in[0] ? max_trip : -1), done);
        if (it > 100000000) { st = rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "more than 1e8 iterations"); goto done; }
        *(int64_t *)iter_t->data = it;
        *(uint8_t *)cond_t->data = cond;
        bin[0] = iter_t;
        bin[1] = cond_t;
        for (int i = 0; i < n_carried; i++) bin[2 + i] = carried[i];
        RLX_TRY_GOTO(st, run_body(k, body, bin, bout, it, k->in[0] ? max_trip : -1), done);
        if (have_cond && rlx_tensor_numel(bout[0]) != 1) {
            char sh[128];
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT,
                              "iteration %lld: the body's condition output must have one element, got shape %s",
                              (long long)it, rlx_shape_str(bout[0]->dims, bout[0]->rank, sh, sizeof sh));
            for (size_t j = 0; j < body->n_outputs; j++) rlx_tensor_destroy(bout[j]);
            goto done;
        }
        if (have_cond) cond = rlx_tensor_get_f64(bout[0], 0) != 0;
        rlx_tensor_destroy(bout[0]);
        for (int i = 0; i < n_carried; i++) {
            rlx_tensor_destroy(carried[i]);
            carried[i] = bout[1 + i];
        }
        if (n_iter == cap_iter) {
            size_t nc = cap_iter ? cap_iter * 2 : 16;
            for (int s = 0; s < n_scan; s++) {
                rlx_tensor **p = realloc(scans[s], nc * sizeof *p);
                if (!p) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
                scans[s] = p;
            }
            cap_iter = nc;
        }
        for (int s = 0; s < n_scan; s++) scans[s][n_iter] = bout[1 + n_carried + s];
        n_iter++;
        memset(bout, 0, (body->n_outputs + 1) * sizeof *bout);
        /* the scan outputs stack up n_iter items: stop at the limit before
         * further iterations commit more than it */
        for (int s = 0; s < n_scan; s++) {
            const rlx_tensor *y = scans[s][n_iter - 1];
            scan_bytes[s] += y->nbytes;
            int64_t d[RLX_MAX_RANK];
            int r = y->rank + 1 <= RLX_MAX_RANK ? y->rank + 1 : RLX_MAX_RANK;
            d[0] = (int64_t)n_iter;
            for (int a = 1; a < r; a++) d[a] = y->dims[a - 1];
            RLX_TRY_GOTO(st, rlx_cpu_out_limit(k, n_carried + s, y->dtype, r, d, scan_bytes[s]), done);
        }
    }
    for (int i = 0; i < n_carried; i++) {
        give_out(k, i, carried[i]);
        carried[i] = NULL;
    }
    for (int s = 0; s < n_scan; s++) {
        rlx_tensor *t;
        const rlx_value *proto = &body->values[body->outputs[1 + n_carried + s]];
        RLX_TRY_GOTO(st, stack(k, n_carried + s, scans[s], n_iter, 0, false, proto, &t), done);
        give_out(k, n_carried + s, t);
    }
done:
    for (int i = 0; i < n_carried; i++) rlx_tensor_destroy(carried ? carried[i] : NULL);
    for (int s = 0; s < n_scan && scans; s++) {
        for (size_t j = 0; j < n_iter; j++) rlx_tensor_destroy(scans[s][j]);
        free(scans[s]);
    }
    rlx_tensor_destroy(iter_t);
    rlx_tensor_destroy(cond_t);
    free(bin);
    free(carried);
    free(bout);
    free(scans);
    free(scan_bytes);
    return st;
}

/* Slice j of t along axis (the axis removed). */
static rlx_status take_slice(const rlx_tensor *t, int axis, int64_t j, rlx_tensor **out) {
    int64_t dims[RLX_MAX_RANK];
    for (int d = 0, s = 0; d < t->rank; d++)
        if (d != axis) dims[s++] = t->dims[d];
    RLX_TRY(rlx_tensor_create(t->dtype, dims, t->rank - 1, out));
    size_t es = rlx_dtype_size(t->dtype), outer = 1, inner = es;
    for (int d = 0; d < axis; d++) outer *= (size_t)t->dims[d];
    for (int d = axis + 1; d < t->rank; d++) inner *= (size_t)t->dims[d];
    size_t len = (size_t)t->dims[axis];
    for (size_t o = 0; o < outer; o++)
        memcpy((char *)(*out)->data + o * inner, (const char *)t->data + (o * len + (size_t)j) * inner, inner);
    return RLX_OK;
}

static rlx_status k_scan(rlx_cpu_kctx *k) {
    const rlx_graph *body = rlx_param_graph(k->n, RLX_A_body);
    int m = (int)rlx_param_int(k->n, RLX_A_num_scan_inputs);
    int n_state = k->n->n_in - m;
    int n_scan_out = k->n->n_out - n_state;
    if (!body || m < 1 || n_state < 0 || n_scan_out < 0 || (int)body->n_outputs != k->n->n_out)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "body does not fit the node");
    size_t na, nd, noa, nod;
    const int64_t *in_axes = rlx_param_ints(k->n, RLX_A_scan_input_axes, &na);
    const int64_t *in_dirs = rlx_param_ints(k->n, RLX_A_scan_input_directions, &nd);
    const int64_t *out_axes = rlx_param_ints(k->n, RLX_A_scan_output_axes, &noa);
    const int64_t *out_dirs = rlx_param_ints(k->n, RLX_A_scan_output_directions, &nod);
    int64_t seq = -1;
    rlx_status st = RLX_OK;
    /* Scan allocates its slices and state each run anyway: the axes too */
    int *axes = calloc((size_t)m, sizeof *axes);
    if (!axes) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (int j = 0; j < m && !st; j++) {
        const rlx_tensor *x = k->in[n_state + j];
        int64_t a = (in_axes && (size_t)j < na) ? in_axes[j] : 0;
        if (!x) st = rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "scan input %d is missing", j);
        else if (!rlx_norm_axis(a, x->rank, &axes[j]))
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "scan_input_axes[%d] = %lld is out of range", j, (long long)a);
        else if (seq >= 0 && x->dims[axes[j]] != seq)
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "scan inputs have different sequence lengths");
        else seq = x->dims[axes[j]];
    }
    if (st) {
        free(axes);
        return st;
    }
    const rlx_tensor **bin = calloc((size_t)k->n->n_in + 1, sizeof *bin);
    rlx_tensor **state = calloc((size_t)n_state + 1, sizeof *state);
    rlx_tensor **slices = calloc((size_t)m + 1, sizeof *slices);
    rlx_tensor **bout = calloc(body->n_outputs + 1, sizeof *bout);
    rlx_tensor **items = calloc(((size_t)n_scan_out + 1) * (size_t)(seq > 0 ? seq : 1), sizeof *items);
    if (!bin || !state || !slices || !bout || !items) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    for (int i = 0; i < n_state; i++) RLX_TRY_GOTO(st, rlx_tensor_clone(k->in[i], &state[i]), done);
    for (int64_t t = 0; t < seq; t++) {
        RLX_TRY_GOTO(st, check_stop(k, t, seq), done);
        for (int j = 0; j < m; j++) {
            bool rev = in_dirs && (size_t)j < nd && in_dirs[j];
            rlx_tensor_destroy(slices[j]);
            slices[j] = NULL;
            RLX_TRY_GOTO(st, take_slice(k->in[n_state + j], axes[j], rev ? seq - 1 - t : t, &slices[j]), done);
        }
        for (int i = 0; i < n_state; i++) bin[i] = state[i];
        for (int j = 0; j < m; j++) bin[n_state + j] = slices[j];
        RLX_TRY_GOTO(st, run_body(k, body, bin, bout, t, seq), done);
        for (int i = 0; i < n_state; i++) {
            rlx_tensor_destroy(state[i]);
            state[i] = bout[i];
        }
        for (int s = 0; s < n_scan_out; s++) items[(size_t)s * (size_t)seq + (size_t)t] = bout[n_state + s];
        memset(bout, 0, (body->n_outputs + 1) * sizeof *bout);
    }
    for (int i = 0; i < n_state; i++) {
        give_out(k, i, state[i]);
        state[i] = NULL;
    }
    for (int s = 0; s < n_scan_out; s++) {
        const rlx_value *proto = &body->values[body->outputs[n_state + s]];
        int r = (seq > 0 ? items[(size_t)s * (size_t)seq]->rank : (proto->rank >= 0 ? proto->rank : 0)) + 1;
        int64_t a = (out_axes && (size_t)s < noa) ? out_axes[s] : 0;
        int axis;
        if (!rlx_norm_axis(a, r, &axis)) {
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "scan_output_axes[%d] = %lld is out of range", s, (long long)a);
            goto done;
        }
        bool rev = out_dirs && (size_t)s < nod && out_dirs[s];
        rlx_tensor *t;
        RLX_TRY_GOTO(st, stack(k, n_state + s, items + (size_t)s * (size_t)(seq > 0 ? seq : 1), (size_t)(seq > 0 ? seq : 0), axis, rev, proto, &t), done);
        give_out(k, n_state + s, t);
    }
done:
    for (int i = 0; i < n_state && state; i++) rlx_tensor_destroy(state[i]);
    for (int j = 0; j < m && slices; j++) rlx_tensor_destroy(slices[j]);
    if (items && seq > 0)
        for (size_t i = 0; i < (size_t)n_scan_out * (size_t)seq; i++) rlx_tensor_destroy(items[i]);
    free(bin);
    free(state);
    free(slices);
    free(bout);
    free(items);
    free(axes);
    return st;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_control[RLX_OP_COUNT] = {
    [RLX_OP_If] = k_if,
    [RLX_OP_Loop] = k_loop,
    [RLX_OP_Scan] = k_scan,
};
