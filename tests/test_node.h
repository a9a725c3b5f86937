/* Bare graph nodes for tests that call CPU kernels directly
 * (rlx_cpu_run_node), without a model or a session. */
#ifndef RLX_TESTS_TEST_NODE_H
#define RLX_TESTS_TEST_NODE_H

#include "ir/graph.h"

/* A node of `op` (default domain) at since-version `version`, inputs and
 * outputs numbered 0.., the attributes borrowed; its op id and parameter
 * block resolved as rlx_graph_add_node does (a CHECK failure otherwise).
 * One node lives at a time: the previous call's parameter block is freed. */
rlx_node test_make_node(const char *op, int version, int n_in, int n_out, rlx_node_attr *attrs, int n_attrs);

/* The same for an op of `domain` ("rlx" for the internal ops). */
rlx_node test_make_node_in(const char *domain, const char *op, int version, int n_in, int n_out,
                           rlx_node_attr *attrs, int n_attrs);

#endif
