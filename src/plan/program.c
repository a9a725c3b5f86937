/* plan/program.c — a program's steps and their devices, and its end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "plan/plan.h"

void rlx_program_destroy(rlx_program *p) {
    if (!p) return;
    rlx_graph_destroy(p->g);
    free(p->steps);
    free(p->step_on);
    free(p->mem.offset);
    free(p->mem.bytes);
    free(p->mem.alias);
    free(p->mem.first);
    free(p->mem.last);
    for (size_t k = 0; k < p->n_segs; k++) {
        free(p->segs[k].up);
        free(p->segs[k].down);
    }
    free(p->segs);
    free(p->out);
    free(p->notes);
    free(p);
}

/* Appends one line to p->notes. */
static rlx_status note(rlx_program *p, const char *fmt, ...) RLX_PRINTF(2, 3);
static rlx_status note(rlx_program *p, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t have = p->notes ? strlen(p->notes) : 0, add = strlen(line);
    char *n = realloc(p->notes, have + add + 2);
    if (!n) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(n + have, line, add);
    n[have + add] = '\n';
    n[have + add + 1] = 0;
    p->notes = n;
    return RLX_OK;
}

const char *rlx_plan_needs_eager(const rlx_graph *g, char *buf, size_t cap) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->def->flags & RLX_OP_CONTROL_FLOW) {
            snprintf(buf, cap, "%s is control flow", rlx_node_desc(n));
            return buf;
        }
        for (int k = 0; k < n->n_out; k++) {
            const rlx_value *v = rlx_node_output(g, n, k);
            if (v && !rlx_value_is_static(v)) {
                snprintf(buf, cap, "%s: output '%s' has a shape that depends on data", rlx_node_desc(n), v->name);
                return buf;
            }
        }
    }
    return NULL;
}

/* The first value that node n reads or writes and that is larger than one
 * device buffer (rlx_mem_oversized), or -1; *is_in: it is an input. */
static int oversized_value(const rlx_program *p, const rlx_node *n, bool *is_in) {
    const rlx_graph *g = p->g;
    for (int k = 0; k < n->n_in + n->n_out; k++) {
        int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
        if (v < 0 || g->values[v].konst || !rlx_value_is_static(&g->values[v])) continue;
        if (rlx_mem_oversized(rlx_value_bytes(&g->values[v]), p->mem.buffer_limit)) {
            *is_in = k < n->n_in;
            return v;
        }
    }
    return -1;
}

/* Dropout that only passes its input on: inference (training_mode, input
 * 2 of Dropout-12 and later, absent or a constant false; the earlier
 * versions' is_test is not read, as the kernel does not read it) and no
 * mask that anything reads. Its output is then a view of its input, as
 * Identity's (the SqueezeNet of the ONNX suite: a 0.17 ms copy). */
static bool dropout_is_view(const rlx_graph *g, const rlx_node *n) {
    if (n->op != RLX_OP_Dropout) return false;
    /* the mask: absent, or read by no node and not a graph output */
    for (int k = 1; k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0) continue;
        for (size_t i = 0; i < g->n_outputs; i++)
            if (g->outputs[i] == v) return false;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const rlx_node *m = &g->nodes[i];
            for (int j = 0; !m->dead && j < m->n_in; j++)
                if (m->in[j] == v) return false;
        }
    }
    const rlx_value *t = n->n_in > 2 ? rlx_node_input(g, n, 2) : NULL;
    return !t || (t->konst && rlx_tensor_numel(t->konst) == 1 && rlx_tensor_get_i64(t->konst, 0) == 0);
}

/* The device of node n (see rlx_plan_create). A node that reads or writes
 * a value larger than one device buffer runs on the host, whatever the
 * device supports: the value then lives on the host only (rlx_plan_memory
 * puts it after the device's part of the arena), and a note says so. */
static rlx_status assign(rlx_program *p, const rlx_node *n, rlx_backend *dev, rlx_backend *host, uint8_t *on) {
    const rlx_graph *g = p->g;
    const rlx_value *x = rlx_node_input(g, n, 0);
    const rlx_value *y = rlx_node_output(g, n, 0);
    bool is_in = false;
    int big = dev != host ? oversized_value(p, n, &is_in) : -1;
    if (((n->def->flags & RLX_OP_VIEW) || dropout_is_view(g, n)) && x && y && !x->konst && x->dtype == y->dtype &&
        rlx_value_numel(x) == rlx_value_numel(y))
        *on = RLX_STEP_VIEW;
    else if (big < 0 && dev != host && dev->supports(dev, g, n))
        *on = RLX_STEP_GPU;
    else if (host->supports(host, g, n))
        *on = RLX_STEP_CPU;
    else
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: no kernel for op %s on any backend", rlx_node_desc(n), n->op_type);
    if (big >= 0 && *on == RLX_STEP_CPU) {
        const rlx_value *v = &g->values[big];
        return note(p, "%s runs on the CPU: %s '%s' (%llu bytes) is larger than one device buffer (%llu bytes)",
                    rlx_node_desc(n), is_in ? "input" : "output", v->name,
                    (unsigned long long)rlx_value_bytes(v),
                    (unsigned long long)p->mem.buffer_limit);
    }
    return RLX_OK;
}

rlx_status rlx_plan_create(rlx_graph *g, rlx_backend *dev, rlx_backend *host, rlx_program **out) {
    *out = NULL;
    rlx_program *p = calloc(1, sizeof *p);
    if (!p) {
        rlx_graph_destroy(g);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->g = g;
    p->steps = malloc((g->n_nodes + 1) * sizeof(int));
    p->step_on = malloc(g->n_nodes + 1);
    rlx_status st = p->steps && p->step_on ? RLX_OK : rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    p->mem.buffer_limit = dev->max_buffer_bytes;
    for (size_t i = 0; i < g->n_nodes && !st; i++) {
        p->steps[p->n_steps] = (int)i;
        st = assign(p, &g->nodes[i], dev, host, &p->step_on[p->n_steps]);
        p->n_steps++;
    }
    if (st) {
        rlx_program_destroy(p);
        return st;
    }
    *out = p;
    return RLX_OK;
}
