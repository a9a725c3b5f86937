/* Recurrent ops (ONNX RNN, GRU, LSTM, versions 7, 14, 22): the attributes
 * resolved once, and the shape checks, shared by shape inference
 * (src/ir/ops/ops_rnn.c) and the CPU kernel (src/backend/cpu/cpu_rnn.c).
 *
 * Gate order of the weights, as ONNX packs them along W's dim 1:
 *   RNN  [i]        (1 gate)
 *   GRU  [z, r, h]  (3 gates)
 *   LSTM [i, o, f, c] (4 gates), peepholes P [i, o, f]
 *
 * Activation functions: the one-operand functions of the elementwise
 * vocabulary (src/ir/ew_funcs.h; the ONNX list Relu, Tanh, Sigmoid,
 * Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
 * Softsign, Softplus is among them), names matched case-insensitively, with
 * the rows' defaults for alpha (p0) and beta (p1) when activation_alpha /
 * activation_beta run out: Affine(x) = alpha*x + beta (1, 0), LeakyRelu
 * (alpha 0.01), ThresholdedRelu (alpha 1), ScaledTanh(x) = alpha*tanh(beta*x)
 * (1, 1), HardSigmoid (0.2, 0.5), Elu (alpha 1).
 * activation_alpha / activation_beta are consumed in order by the
 * activations that take an alpha / a beta (ONNX: "consumed in the order of
 * activation functions"); onnxruntime's GRU and LSTM read them so, while its
 * RNN kernel indexes them by activation position instead (seen with
 * onnxruntime 1.22: RNN [LeakyRelu, HardSigmoid], alpha [.3, .4], beta
 * [.2, .6] gives HardSigmoid beta .6 there, .2 here). */
#ifndef RLX_IR_OPS_RNN_PARAMS_H
#define RLX_IR_OPS_RNN_PARAMS_H

#include "ir/ew.h"
#include "ir/graph.h"

typedef enum rlx_rnn_kind { RLX_RNN_SIMPLE, RLX_RNN_GRU, RLX_RNN_LSTM } rlx_rnn_kind;

/* A gate activation: a function of the vocabulary with its parameters. */
typedef rlx_ew_call rlx_rnn_act;

/* Inputs by index (ONNX order). */
enum { RLX_RNN_IN_X, RLX_RNN_IN_W, RLX_RNN_IN_R, RLX_RNN_IN_B, RLX_RNN_IN_SEQ_LENS, RLX_RNN_IN_H0, RLX_RNN_IN_C0,
       RLX_RNN_IN_P, RLX_RNN_MAX_IN };

typedef struct rlx_rnn_params {
    rlx_rnn_kind kind;
    int gates;            /* 1, 3 or 4 */
    int num_dirs;         /* 1 or 2 */
    bool reverse[2];      /* per direction slot: runs from the last step to the first */
    int64_t hidden_size;  /* from the attribute, or -1 when absent */
    int layout;           /* 0: [seq, batch, ...], 1: [batch, seq, ...] (from version 14) */
    bool has_clip;
    float clip;           /* > 0 when has_clip */
    bool input_forget;    /* LSTM: f = 1 - i */
    bool linear_before_reset; /* GRU */
    int n_acts;           /* per direction: RNN 1, GRU 2 (f, g), LSTM 3 (f, g, h) */
    rlx_rnn_act act[2][3];
} rlx_rnn_params;

/* Resolves the node's attributes.
 * errors: RLX_ERR_INVALID_MODEL naming the node (unknown direction or
 *         activation, wrong number of activations, hidden_size <= 0,
 *         clip <= 0, layout not 0/1 or given before version 14). */
rlx_status rlx_rnn_params_resolve(const rlx_node *n, rlx_rnn_params *p);

/* Sizes of one call, from the input shapes. */
typedef struct rlx_rnn_sizes {
    int64_t seq, batch, input, hidden; /* RLX_DIM_DYN where not known */
} rlx_rnn_sizes;

/* Checks the shapes of the present inputs against each other and the
 * attributes and derives the sizes. dims[i]/ranks[i] describe input i
 * (ranks[i] < 0: absent or unknown rank); dims may be RLX_DIM_DYN, which
 * skips the comparisons they take part in.
 * errors: RLX_ERR_INVALID_MODEL naming the node and the input. */
rlx_status rlx_rnn_check_shapes(const rlx_node *n, const rlx_rnn_params *p, const int64_t *const *dims,
                                const int *ranks, rlx_rnn_sizes *sizes);

#endif
