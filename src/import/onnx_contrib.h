/* onnxruntime's contrib ops (domain com.microsoft, and
 * SimplifiedLayerNormalization, which onnxruntime registers in the default
 * domain; not in com.microsoft), expanded at import time into default-domain nodes
 * (src/import/onnx_contrib.c), so that they run on the kernels, lowerings
 * and fusion passes that those ops already have. The semantics come from
 * onnxruntime's operator documentation (docs/ContribOperators.md, and the
 * schemas that onnxruntime 1.22 registers); each row of the table in
 * onnx_contrib.c says what its op becomes, and `rlx ops` lists them.
 *
 * The importer asks rlx_onnx_contrib_find for every node of a domain other
 * than the default one (and for default-domain ops the op table lacks);
 * a known op is expanded by rlx_onnx_contrib_expand in place of the node,
 * after its inputs, outputs and attributes have been read. */
#ifndef RLX_IMPORT_ONNX_CONTRIB_H
#define RLX_IMPORT_ONNX_CONTRIB_H

#include <stddef.h>

#include "ir/graph.h"

/* Default-domain opset of the nodes that the expansions create (every op
 * they use has its current form there); also the graph's opset when a
 * model imports com.microsoft alone (rlx_onnx_contrib_only). */
#define RLX_CONTRIB_OPSET 21

typedef struct rlx_contrib_def rlx_contrib_def;
struct rlx_config;

/* The contrib op `op` of `domain` ("" or "ai.onnx" for the default
 * domain), or NULL when rlx does not expand it. */
const rlx_contrib_def *rlx_onnx_contrib_find(const char *domain, const char *op);

/* Expands one node of op `def` into g: in[0..n_in) are the value ids of its
 * inputs (-1: omitted), out[0..n_out) those of its outputs (declared, not
 * yet produced; -1: omitted), attrs its attributes (borrowed), label the
 * node's description for messages ("node 'n' (com.microsoft.FastGelu)") and
 * name the prefix of the new nodes' names. The new nodes write out[].
 * errors (each message starts with label): RLX_ERR_INVALID_MODEL (input or
 * output counts, an attribute the op does not have or of the wrong type, a
 * required attribute missing, values out of the op's range, inputs of the
 * wrong dtype or shape), RLX_ERR_UNSUPPORTED (a form of the op that rlx
 * does not expand, named), and the errors of shape inference of the nodes
 * whose dtypes or shapes the expansion needs; RLX_ERR_OUT_OF_MEMORY naming
 * limits.max_tensor_bytes of cfg (NULL: no limit) for a constant the
 * expansion would compute beyond it (MatMulNBits' dequantized weights). */
rlx_status rlx_onnx_contrib_expand(rlx_graph *g, const rlx_contrib_def *def, const char *label, const char *name,
                                   const int *in, int n_in, const int *out, int n_out, const rlx_node_attr *attrs,
                                   int n_attrs, const struct rlx_config *cfg);

/* The catalogue of these ops (rlx/inspect.h rlx_contrib_op_catalog_*):
 * row i (< rlx_onnx_contrib_count()) as its domain, name, since-version
 * and a sentence on what it becomes. */
size_t rlx_onnx_contrib_count(void);
void rlx_onnx_contrib_row(size_t i, const char **domain, const char **name, int *since, const char **expansion);

#endif
