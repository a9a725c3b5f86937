/* rlx_model: an imported (or built) graph, verified and shape-inferred. */
#ifndef RLX_RUNTIME_MODEL_H
#define RLX_RUNTIME_MODEL_H

#include "ir/graph.h"

#include <stdatomic.h>

/* Sessions share the model's constants (weights) instead of copying them:
 * each session holds a reference (rlx_model_retain), and the model and its
 * graph are freed when the last holder lets go (rlx_model_destroy), so a
 * session may outlive the caller's rlx_model_destroy. A finished model is
 * never changed, so sharing needs no lock. */
struct rlx_model {
    rlx_graph *g;
    bool finished;
    atomic_int refs; /* holders: the creator and each session; 1 at creation */
};

/* Takes one more reference on m (released with rlx_model_destroy). */
void rlx_model_retain(rlx_model *m);

/* Wraps a graph (taking ownership) and finishes it: verify + infer.
 * On error the graph is destroyed. */
rlx_status rlx_model_from_graph(rlx_graph *g, rlx_model **out);

/* Fills a public value description from a graph value. */
void rlx_value_info_fill(const rlx_graph *g, int value, rlx_value_info *info);

#endif
