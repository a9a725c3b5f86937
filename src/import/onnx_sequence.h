/* Internal to the ONNX importer: sequence values resolved at import time
 * (src/import/onnx_sequence.c).
 *
 * The rlx IR has no sequence type. A sequence-typed ONNX value whose
 * structure is known while importing (its length, and which tensor each
 * position holds) is kept here as an ordered list of IR tensor values, and
 * the sequence ops become ordinary nodes or constants:
 *   SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase,
 *   Identity of a sequence   -> a new list (no node);
 *   SequenceAt               -> Identity of the element;
 *   SequenceLength           -> an i64 scalar constant;
 *   SplitToSequence          -> Split (+ Squeeze for keepdims=0);
 *   ConcatFromSequence       -> Concat (Unsqueeze + Concat for new_axis=1);
 *   SequenceMap              -> its body unrolled once per element.
 * Semantics: ONNX SequenceEmpty/Construct/Insert/Erase/At/Length-11,
 * SplitToSequence-11, ConcatFromSequence-11, SequenceMap-17, Identity-14.
 *
 * What cannot be resolved while importing is refused with
 * RLX_ERR_UNSUPPORTED and a message naming the node and op: positions
 * computed at run time, sequences as graph inputs or outputs, sequences
 * used inside a subgraph (Loop/If/Scan body) of the graph that made them,
 * sequences as inputs of other ops. */
#ifndef RLX_IMPORT_ONNX_SEQUENCE_H
#define RLX_IMPORT_ONNX_SEQUENCE_H

#include <stdbool.h>

#include "ir/graph.h"
#include "onnx/onnx.pb-c.h"

/* What the sequence code needs from the importer (src/import/onnx.c). */
typedef struct rlx_onnx_importer {
    void *ctx; /* passed back to the functions below */
    /* Imports one node into g exactly as the importer does (its outputs
     * must be declared values of g). Used to unroll SequenceMap bodies. */
    rlx_status (*import_node)(void *ctx, rlx_graph *g, const Onnx__NodeProto *np);
    /* Finds `name` in g or an enclosing graph (creating an outer-scope
     * stand-in in g); *id is -1 when it is defined nowhere. */
    rlx_status (*resolve)(rlx_graph *g, const char *name, int *id);
    const char *base_dir; /* for body initializers; NULL refuses external data */
} rlx_onnx_importer;

/* The sequences of one graph being imported; `parent` is the scope of the
 * enclosing graph (NULL for the main graph), used to name sequences that
 * would cross into a subgraph. */
typedef struct rlx_onnx_seq_scope rlx_onnx_seq_scope;

/* errors: RLX_ERR_OUT_OF_MEMORY. `imp` is copied. */
rlx_status rlx_onnx_seq_scope_create(rlx_onnx_seq_scope *parent, const rlx_onnx_importer *imp,
                                     rlx_onnx_seq_scope **out);
void rlx_onnx_seq_scope_destroy(rlx_onnx_seq_scope *s);

/* Called for every non-Constant node before the importer adds it to g,
 * with the node's message label ("node 'x' (SequenceAt)"). Sequence ops
 * (and Identity of a sequence) are resolved here and *handled is set; for
 * any other node *handled is false and the node is checked not to take a
 * sequence as input. Nodes are expected in topological order, as ONNX
 * requires: a sequence must be made before it is used.
 * errors: RLX_ERR_UNSUPPORTED (what cannot be resolved at import time, see
 *         above), RLX_ERR_INVALID_MODEL (positions out of range, wrong
 *         arity or inputs, unequal sequence lengths in SequenceMap, bad
 *         split sizes), RLX_ERR_OUT_OF_MEMORY; messages start with label. */
rlx_status rlx_onnx_seq_node(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label,
                             bool *handled);

/* Graph output `vi` of gp declared with a sequence type: fails with
 * RLX_ERR_UNSUPPORTED naming the node that makes it; RLX_OK otherwise. */
rlx_status rlx_onnx_seq_check_output(const Onnx__GraphProto *gp, const Onnx__ValueInfoProto *vi);

/* After the last node of g: fails with RLX_ERR_UNSUPPORTED when a graph
 * output or a node input of g is one of the scope's sequences (a
 * sequence used by a node listed before the one that makes it, or
 * returned without a declared type). */
rlx_status rlx_onnx_seq_finish(const rlx_onnx_seq_scope *s, const rlx_graph *g);

#endif
