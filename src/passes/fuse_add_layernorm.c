#include "passes/passes.h"
rlx_status rlx_pass_fuse_add_layernorm(rlx_graph *g, rlx_pass_stats *stats) { (void)g; (void)stats; return RLX_OK; }
