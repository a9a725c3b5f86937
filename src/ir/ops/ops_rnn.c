/* Recurrent ops: RNN, GRU, LSTM (ONNX since-versions 7, 14, 22; version 14
 * added `layout`, 22 added bfloat16). Attributes and shape checks are
 * resolved in one place (rnn_params.h) for inference and the CPU kernel. */
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/ops.h"
#include "ir/ops/rnn_params.h"

/* ------------------------------------------------------------ attributes */

rlx_status rlx_rnn_params_resolve(const rlx_node *n, rlx_rnn_params *p) {
    memset(p, 0, sizeof *p);
    const char *desc = rlx_node_desc(n);
    if (n->op == RLX_OP_LSTM) {
        p->kind = RLX_RNN_LSTM, p->gates = 4, p->n_acts = 3;
    } else if (n->op == RLX_OP_GRU) {
        p->kind = RLX_RNN_GRU, p->gates = 3, p->n_acts = 2;
    } else {
        p->kind = RLX_RNN_SIMPLE, p->gates = 1, p->n_acts = 1;
    }
    const char *dir = rlx_param_str(n, RLX_A_direction);
    if (strcmp(dir, "forward") == 0) {
        p->num_dirs = 1;
    } else if (strcmp(dir, "reverse") == 0) {
        p->num_dirs = 1, p->reverse[0] = true;
    } else if (strcmp(dir, "bidirectional") == 0) {
        p->num_dirs = 2, p->reverse[1] = true;
    } else {
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: direction '%s' is not one of forward, reverse, bidirectional", desc, dir);
    }
    p->hidden_size = -1;
    if (rlx_param_given(n, RLX_A_hidden_size)) {
        p->hidden_size = rlx_param_int(n, RLX_A_hidden_size);
        if (p->hidden_size <= 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: hidden_size %lld must be positive", desc,
                            (long long)p->hidden_size);
    }
    int64_t layout = rlx_param_int(n, RLX_A_layout); /* before version 14 refused when the node was added */
    if (layout != 0 && layout != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: layout %lld must be 0 or 1", desc, (long long)layout);
    p->layout = (int)layout;
    if (rlx_param_given(n, RLX_A_clip)) {
        p->has_clip = true;
        p->clip = rlx_param_float(n, RLX_A_clip);
        if (!(p->clip > 0))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: clip %g must be positive", desc, (double)p->clip);
    }
    if (p->kind == RLX_RNN_LSTM) p->input_forget = rlx_param_int(n, RLX_A_input_forget) != 0;
    if (p->kind == RLX_RNN_GRU) p->linear_before_reset = rlx_param_int(n, RLX_A_linear_before_reset) != 0;

    /* activations: defaults, or the attribute (n_acts per direction) */
    static const char *const defaults[3][3] = { { "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" } };
    const char *names[6];
    size_t n_names = 0;
    const rlx_node_attr *a = rlx_param(n, RLX_A_activations);
    if (a && a->type == RLX_ATTR_STRINGS && a->n > 0) {
        if (a->n != (size_t)(p->n_acts * p->num_dirs) && a->n != (size_t)p->n_acts)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %zu activations given, expected %d (%d per direction)", desc,
                            a->n, p->n_acts * p->num_dirs, p->n_acts);
        for (size_t i = 0; i < a->n; i++) names[i] = a->strings[i] ? a->strings[i] : "";
        n_names = a->n;
    } else {
        for (int i = 0; i < p->n_acts; i++) names[i] = defaults[p->kind][i];
        n_names = (size_t)p->n_acts;
    }
    size_t n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
    const float *alphas = rlx_param_floats(n, RLX_A_activation_alpha, &n_alpha);
    const float *betas = rlx_param_floats(n, RLX_A_activation_beta, &n_beta);
    for (int d = 0; d < p->num_dirs; d++)
        for (int j = 0; j < p->n_acts; j++) {
            /* one list for both directions: the second direction reuses it */
            size_t idx = n_names == (size_t)p->n_acts ? (size_t)j : (size_t)(d * p->n_acts + j);
            rlx_rnn_act *act = &p->act[d][j];
            if (!rlx_ew_find_activation(names[idx], act))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown activation '%s'", desc, names[idx]);
            const rlx_ew_info *row = rlx_ew_info_of(act->kind);
            if (row->param[0] && alphas && ia < n_alpha) act->alpha = alphas[ia++];
            if (row->param[1] && betas && ib < n_beta) act->beta = betas[ib++];
        }
    return RLX_OK;
}

/* ------------------------------------------------------------ shapes */

static const char *const k_in_names[RLX_RNN_MAX_IN] = { "X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c",
                                                        "P" };

/* Compares input i with the expected shape (RLX_DIM_DYN: not known). */
static rlx_status expect_shape(const rlx_node *n, int i, const int64_t *const *dims, const int *ranks, int rank,
                               const int64_t *want, const char *why) {
    if (ranks[i] < 0) return RLX_OK;
    bool ok = ranks[i] == rank;
    for (int k = 0; ok && k < rank; k++)
        if (want[k] >= 0 && dims[i][k] >= 0 && want[k] != dims[i][k]) ok = false;
    if (ok) return RLX_OK;
    char a[96], b[96];
    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %s has shape %s, expected %s (%s)", rlx_node_desc(n),
                    k_in_names[i], rlx_shape_str(dims[i], ranks[i], a, sizeof a),
                    rlx_shape_str_q(want, rank, b, sizeof b), why);
}

static int64_t mul_dyn(int64_t a, int64_t b) { return (a < 0 || b < 0) ? RLX_DIM_DYN : a * b; }

rlx_status rlx_rnn_check_shapes(const rlx_node *n, const rlx_rnn_params *p, const int64_t *const *dims,
                                const int *ranks, rlx_rnn_sizes *s) {
    const char *desc = rlx_node_desc(n);
    for (int i = RLX_RNN_IN_X; i <= RLX_RNN_IN_R; i++)
        if (ranks[i] >= 0 && ranks[i] != 3)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %s has rank %d, expected 3", desc, k_in_names[i],
                            ranks[i]);
    const int64_t G = p->gates, D = p->num_dirs;
    const int64_t *x = ranks[RLX_RNN_IN_X] >= 0 ? dims[RLX_RNN_IN_X] : NULL;
    const int64_t *w = ranks[RLX_RNN_IN_W] >= 0 ? dims[RLX_RNN_IN_W] : NULL;
    const int64_t *r = ranks[RLX_RNN_IN_R] >= 0 ? dims[RLX_RNN_IN_R] : NULL;
    s->seq = x ? x[p->layout ? 1 : 0] : RLX_DIM_DYN;
    s->batch = x ? x[p->layout ? 0 : 1] : RLX_DIM_DYN;
    s->input = x ? x[2] : RLX_DIM_DYN;
    if (s->input < 0 && w) s->input = w[2];
    /* hidden size: the attribute, else R's last dim, else W's rows / gates */
    int64_t H = p->hidden_size;
    if (H < 0 && r) H = r[2];
    if (H < 0 && w && w[1] >= 0) {
        if (w[1] % G != 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: W has %lld rows, not a multiple of %lld gates", desc,
                            (long long)w[1], (long long)G);
        H = w[1] / G;
    }
    if (H == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: hidden size is 0", desc);
    if (H > INT32_MAX)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: hidden size %lld is too large", desc, (long long)H);
    s->hidden = H;
    char why[64];
    snprintf(why, sizeof why, "hidden_size %lld, %lld direction%s", (long long)H, (long long)D, D > 1 ? "s" : "");
    int64_t want[3];
    want[0] = D, want[1] = mul_dyn(G, H), want[2] = s->input;
    RLX_TRY(expect_shape(n, RLX_RNN_IN_W, dims, ranks, 3, want, why));
    want[2] = H;
    RLX_TRY(expect_shape(n, RLX_RNN_IN_R, dims, ranks, 3, want, why));
    want[1] = mul_dyn(2 * G, H);
    RLX_TRY(expect_shape(n, RLX_RNN_IN_B, dims, ranks, 2, want, why));
    want[0] = s->batch;
    RLX_TRY(expect_shape(n, RLX_RNN_IN_SEQ_LENS, dims, ranks, 1, want, "batch size of X"));
    if (p->layout) want[0] = s->batch, want[1] = D;
    else want[0] = D, want[1] = s->batch;
    want[2] = H;
    RLX_TRY(expect_shape(n, RLX_RNN_IN_H0, dims, ranks, 3, want, why));
    if (p->kind == RLX_RNN_LSTM) {
        RLX_TRY(expect_shape(n, RLX_RNN_IN_C0, dims, ranks, 3, want, why));
        want[0] = D, want[1] = mul_dyn(3, H);
        RLX_TRY(expect_shape(n, RLX_RNN_IN_P, dims, ranks, 2, want, why));
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ inference */

static rlx_status infer_rnn(rlx_infer_ctx *c) {
    rlx_rnn_params p;
    RLX_TRY(rlx_rnn_params_resolve(c->n, &p));
    const rlx_value *x = rlx_ictx_in(c, RLX_RNN_IN_X);
    const int64_t *dims[RLX_RNN_MAX_IN];
    int ranks[RLX_RNN_MAX_IN];
    for (int i = 0; i < RLX_RNN_MAX_IN; i++) {
        const rlx_value *v = rlx_ictx_in(c, i);
        dims[i] = v ? v->dims : NULL;
        ranks[i] = v ? v->rank : -1;
        if (!v) continue;
        if (i == RLX_RNN_IN_C0 || i == RLX_RNN_IN_P) {
            if (p.kind != RLX_RNN_LSTM) ranks[i] = -1; /* not inputs of RNN/GRU (arity forbids them) */
        }
        if (i == RLX_RNN_IN_SEQ_LENS) {
            if (v->dtype != RLX_DTYPE_I32)
                return rlx_ictx_fail(c, "input sequence_lens has dtype %s, expected i32", rlx_dtype_name(v->dtype));
            continue;
        }
        if (v->dtype != x->dtype)
            return rlx_ictx_fail(c, "input %s has dtype %s, X has %s", k_in_names[i], rlx_dtype_name(v->dtype),
                                 rlx_dtype_name(x->dtype));
    }
    bool ok = x->dtype == RLX_DTYPE_F32 || x->dtype == RLX_DTYPE_F16 || x->dtype == RLX_DTYPE_F64 ||
              (x->dtype == RLX_DTYPE_BF16 && c->n->version >= 22);
    if (!ok)
        return rlx_ictx_fail(c, "input X has dtype %s, expected f32, f16, f64%s", rlx_dtype_name(x->dtype),
                             c->n->version >= 22 ? " or bf16" : " (bf16 from version 22)");
    rlx_rnn_sizes s;
    RLX_TRY(rlx_rnn_check_shapes(c->n, &p, dims, ranks, &s));
    int32_t sym_seq = -1, sym_batch = -1;
    if (x->rank == 3) {
        sym_seq = x->syms[p.layout ? 1 : 0];
        sym_batch = x->syms[p.layout ? 0 : 1];
    }
    int64_t D = p.num_dirs;
    int64_t yd[4];
    int32_t ys[4] = { -1, -1, -1, -1 };
    if (p.layout) {
        yd[0] = s.batch, yd[1] = s.seq, yd[2] = D, yd[3] = s.hidden;
        ys[0] = s.batch < 0 ? sym_batch : -1, ys[1] = s.seq < 0 ? sym_seq : -1;
    } else {
        yd[0] = s.seq, yd[1] = D, yd[2] = s.batch, yd[3] = s.hidden;
        ys[0] = s.seq < 0 ? sym_seq : -1, ys[2] = s.batch < 0 ? sym_batch : -1;
    }
    rlx_ictx_set_out(c, 0, x->dtype, 4, yd, ys);
    int64_t hd[3];
    int32_t hs[3] = { -1, -1, -1 };
    if (p.layout) {
        hd[0] = s.batch, hd[1] = D, hd[2] = s.hidden;
        hs[0] = s.batch < 0 ? sym_batch : -1;
    } else {
        hd[0] = D, hd[1] = s.batch, hd[2] = s.hidden;
        hs[1] = s.batch < 0 ? sym_batch : -1;
    }
    for (int i = 1; i < c->n->n_out; i++) rlx_ictx_set_out(c, i, x->dtype, 3, hd, hs);
    return RLX_OK;
}

#define RNN_ATTRS                                                                                               \
    { "activation_alpha", RLX_ATTR_FLOATS, false }, { "activation_beta", RLX_ATTR_FLOATS, false },               \
    { "activations", RLX_ATTR_STRINGS, false }, { "clip", RLX_ATTR_FLOAT, false },                               \
    RLX_ATTR_DEF_STRING("direction", "forward"), { "hidden_size", RLX_ATTR_INT, false },                             \
    RLX_ATTR_DEF_BOOL_SINCE("layout", 0, 14)

/* Inputs (ONNX order): X, W, R, B?, sequence_lens?, initial_h? (+ initial_c?,
 * P? for LSTM). Outputs, all optional: Y, Y_h (+ Y_c for LSTM). */
const rlx_op_def rlx_ops_rnn[] = {
#include "ir/ops/ops_rnn.def"
};
const size_t rlx_ops_rnn_count = RLX_ARRAY_LEN(rlx_ops_rnn);
