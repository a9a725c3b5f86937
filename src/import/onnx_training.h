/* The ops of domain ai.onnx.preview.training (version 1), expanded at
 * import time into ordinary default-domain nodes (src/import/onnx_training.c):
 * Gradient, and the optimizers Adagrad, Adam and Momentum.
 *
 * Gradient-1 semantics: attributes xs (names of the differentiated
 * inputs of a sub-graph), zs (names of its non-differentiated inputs,
 * optional) and y (the differentiated tensor, a function of xs and zs).
 * Input i of the node is the value at which xs[i] (i < |xs|), then zs[i -
 * |xs|], is taken; output i is dy/dxs[i], of the shape and type of input i.
 * Outputs may be omitted (""). For a y that is not a scalar, the outputs are
 * the gradients of the sum of y's elements (reverse mode seeded with ones of
 * y's shape), as reverse-mode implementations of the operator do; the
 * operator's text does not say.
 *
 * Adagrad-1, Adam-1, Momentum-1: one update step of each optimized tensor,
 * computed with the operators' pseudo code (inputs R, T, then the tensors,
 * their gradients and their state tensors; outputs the new tensors, then
 * the new states).
 *
 * The importer skips these nodes while it adds the other nodes of a graph,
 * then calls rlx_onnx_expand_training_ops once, which replaces each of them
 * (in dependency order, so that a Gradient of a Gradient's output, or an
 * optimizer fed by a Gradient, works) by ordinary nodes. */
#ifndef RLX_IMPORT_ONNX_TRAINING_H
#define RLX_IMPORT_ONNX_TRAINING_H

#include <stdbool.h>

#include "ir/graph.h"
#include "onnx/onnx.pb-c.h"

/* True when np is a Gradient, Adagrad, Adam or Momentum node of domain
 * ai.onnx.preview.training. */
bool rlx_onnx_is_training_op(const Onnx__NodeProto *np);

/* True when the model imports ai.onnx.preview.training and no other
 * domain (not even the default one): such a model holds only these ops,
 * and the importer gives its graph RLX_ONNX_TRAINING_OPSET. */
bool rlx_onnx_training_only(const Onnx__ModelProto *mp);

/* Default-domain opset of the nodes that the expansions create in a model
 * that imports no default-domain opset (every op they use has its current
 * form there). */
#define RLX_ONNX_TRAINING_OPSET 13

/* Expands every Gradient, Adagrad, Adam and Momentum node of gp into g,
 * whose other nodes, inputs, initializers and declared node outputs the
 * importer has already added.
 * Gradient:
 * Differentiable ops: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid,
 * Tanh, Exp, Log, Sqrt, Pow, MatMul, Gemm, Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Sum, ReduceSum, ReduceMean, Softmax, LogSoftmax;
 * ops whose outputs are not floating point (Shape, comparisons) or do not
 * depend on xs may sit anywhere in the sub-graph. Broadcast inputs get
 * their gradient summed back to their shape. A value of xs that y does not
 * depend on gets zeros of its shape.
 * errors (messages name the Gradient node): RLX_ERR_INVALID_MODEL (missing
 *         or malformed xs/zs/y, names that no value has, input count not
 *         |xs| + |zs|, more outputs than xs, non-float y or xs, a cycle),
 *         RLX_ERR_UNSUPPORTED (an op on the path from xs to y that is not
 *         in the list above, naming that node and op; unknown ranks, or
 *         dynamic dims where it cannot be told whether an input was
 *         broadcast; a non-constant axes input of a Reduce op), and the
 *         errors of shape inference of the nodes involved.
 * Optimizers: RLX_ERR_INVALID_MODEL (input or output counts, R not a float
 *         scalar, T not an integer, non-float tensors, Momentum's mode not
 *         "standard" or "nesterov"). */
rlx_status rlx_onnx_expand_training_ops(rlx_graph *g, const Onnx__GraphProto *gp);

#endif
