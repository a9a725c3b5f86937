/* rlx_model: an imported (or built) graph, verified and shape-inferred. */
#ifndef RLX_RUNTIME_MODEL_H
#define RLX_RUNTIME_MODEL_H

#include "ir/graph.h"

struct rlx_model {
    rlx_graph *g;
    bool finished;
};

/* Wraps a graph (taking ownership) and finishes it: verify + infer.
 * On error the graph is destroyed. */
rlx_status rlx_model_from_graph(rlx_graph *g, rlx_model **out);

/* Fills a public value description from a graph value. */
void rlx_value_info_fill(const rlx_graph *g, int value, rlx_value_info *info);

#endif
