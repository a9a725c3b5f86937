/* One elementwise vocabulary: the functions that unary and binary kernels,
 * fused chains (rlx.FusedElementwise), fused activations of Conv, Gemm and
 * MatMul (epilogues, ir/ops/act.h) and RNN gates compute. Each function is
 * one row of ir/ew_funcs.h: its ONNX name, parameters with their defaults,
 * its double reference, its f32 computation and its WGSL expression. Every
 * CPU path computes a function through rlx_ew_f32 / rlx_ew_f64 (or the
 * per-function inline functions behind them) and every GPU path through
 * the expression wgsl_gen.c makes of the row, so a function gives the same
 * bits standalone, in a chain and as an epilogue.
 *
 * Codes (rlx_ew_fn) are stored in internal node attributes (_rlx_act, the
 * FusedElementwise program); they are never read from or written to a
 * file, so they may change between builds. RLX_EW_COPY (0) is the
 * identity: "no activation". */
#ifndef RLX_IR_EW_H
#define RLX_IR_EW_H

#include <math.h>
#include <stdbool.h>

#include "ir/graph.h"

/* Row flags (see ir/ew_funcs.h); RLX_EW_OP marks the rows of KIND OP. */
enum { RLX_EW_OP = 1, RLX_EW_CHAIN = 2, RLX_EW_ACT = 4, RLX_EW_GATE = 8, RLX_EW_CHEAP = 16 };

/* min(max(x, lo), hi) by comparisons: hi wins when lo > hi; NaN passes
 * through, a NaN bound is ignored, a tie keeps x (-0 against a bound +0)
 * (Clip-13). */
static inline float rlx_ew_clampf(float x, float lo, float hi) {
    float y = x < lo ? lo : x;
    return y > hi ? hi : y;
}
/* The same in double: the references (F64) of the rows that clamp, so
 * that every dtype clamps as f32 does (fmax and fmin drop a NaN x, and
 * order -0 and +0 as they please). */
static inline double rlx_ew_clamp(double x, double lo, double hi) {
    double y = x < lo ? lo : x;
    return y > hi ? hi : y;
}

/* Round to nearest, ties to even (the default rounding mode), NaN to v:
 * the quantized level of QuantizeLinear less its zero point (NaN: v, the
 * type's minimum less the zero point). The bits
 * of nearbyintf, without its call (libm saves and restores the
 * floating-point environment: the chains of QDQ models spent most of
 * their time there): below 2^23 adding and subtracting 2^23 rounds the
 * fraction away in the current (nearest-even) mode; from 2^23 on every
 * float is an integer. */
static inline float rlx_ew_rint_orf(float x, float v) {
    float a = fabsf(x), r = copysignf((a + 8388608.0f) - 8388608.0f, x);
    return a < 8388608.0f ? r : x != x ? v : x; /* selects: the loops vectorise */
}
static inline double rlx_ew_rint_or(double x, double v) {
    double r = nearbyint(x);
    return r != r ? v : r;
}

#include "ir/ew_math.h"
#include "ir/ew_funcs.h"

typedef enum rlx_ew_fn {
#define RLX_EW_ENUM_(id, ...) RLX_EW_##id,
    RLX_EW_FUNCS(RLX_EW_ENUM_)
#undef RLX_EW_ENUM_
    RLX_EW_COUNT
} rlx_ew_fn;

/* rlx_ew_f64_<ID>(x, y, c, p0, p1) and rlx_ew_f32_<ID>(...): the row's
 * reference and f32 computation, inline. */
#define F64(id) ((float)rlx_ew_f64_##id(x, y, c, p0, p1))
#define RLX_EW_DEFINE_(id, kind, name, ar, fl, since, a0, d0, a1, d1, e64, e32, w)                             \
    static inline double rlx_ew_f64_##id(double x, double y, double c, double p0, double p1) {             \
        (void)x, (void)y, (void)c, (void)p0, (void)p1;                                                     \
        return e64;                                                                                        \
    }                                                                                                      \
    static inline float rlx_ew_f32_##id(float x, float y, float c, float p0, float p1) {                  \
        (void)x, (void)y, (void)c, (void)p0, (void)p1;                                                     \
        return e32;                                                                                        \
    }
RLX_EW_FUNCS(RLX_EW_DEFINE_)
#undef RLX_EW_DEFINE_
#undef F64

/* Function fn of operands x, y, c (those beyond its arity are ignored) and
 * parameters p0, p1: the double reference. */
static inline double rlx_ew_f64(rlx_ew_fn fn, double x, double y, double c, double p0, double p1) {
    switch (fn) {
#define RLX_EW_CASE_(id, ...) \
    case RLX_EW_##id: return rlx_ew_f64_##id(x, y, c, p0, p1);
        RLX_EW_FUNCS(RLX_EW_CASE_)
#undef RLX_EW_CASE_
    case RLX_EW_COUNT: break;
    }
    return x;
}

/* The same in f32 (what every f32 CPU path computes). */
static inline float rlx_ew_f32(rlx_ew_fn fn, float x, float y, float c, float p0, float p1) {
    switch (fn) {
#define RLX_EW_CASE_(id, ...) \
    case RLX_EW_##id: return rlx_ew_f32_##id(x, y, c, p0, p1);
        RLX_EW_FUNCS(RLX_EW_CASE_)
#undef RLX_EW_CASE_
    case RLX_EW_COUNT: break;
    }
    return x;
}

/* A row of the vocabulary, as data. */
typedef struct rlx_ew_info {
    const char *id;      /* "HARDSIGMOID" */
    const char *name;    /* ONNX name, "" for none */
    int arity, flags, since;
    const char *param[2]; /* attribute names, NULL when absent */
    float dflt[2];
    const char *wgsl; /* the WGSL template, NULL when CPU only */
} rlx_ew_info;

/* The row of fn, or NULL for a code outside the vocabulary. */
const rlx_ew_info *rlx_ew_info_of(int fn);

/* The row of KIND OP that op computes (a standalone function of the
 * vocabulary, which the generic unary kernels run), or -1 for any other
 * op. */
int rlx_ew_of_op(rlx_op_id op);

/* The lower-case name of fn for reports ("hardsigmoid", "gelu_tanh"). */
const char *rlx_ew_short_name(int fn);

/* A function with its parameters: a fused activation, an RNN gate, one
 * unary dispatch. */
typedef struct rlx_ew_call {
    rlx_ew_fn kind;
    float alpha, beta; /* p0, p1 */
} rlx_ew_call;

/* The function and parameters node n computes, when it is an op of the
 * vocabulary whose parameters are known at compile time: the single reader
 * of the vocabulary's attributes and their defaults. Gelu's approximate
 * ("none" or "tanh") picks GELU or GELU_TANH; Clip takes its bounds from
 * min/max before version 11, else from inputs 1 and 2, which must be
 * constant scalars (absent: -inf, +inf). g may be NULL when n is not a
 * Clip. Returns false (out cleared) for any other node or an unsupported
 * attribute value. */
bool rlx_ew_resolve(const rlx_graph *g, const rlx_node *n, rlx_ew_call *out);

/* The parameters of function fn from node n's attributes (the row's
 * defaults where absent); for GELU, the approximate attribute may turn it
 * into GELU_TANH. Returns false for an unsupported approximate. Run-time
 * CPU kernels use this: no name lookup (a node of the row's op reads its
 * parameter slots by attribute id; only a node of another op, for rows
 * without an op, reads its attributes by name). */
bool rlx_ew_node_params(const rlx_node *n, rlx_ew_fn fn, rlx_ew_call *out);

/* The function of an RNN activation name (ONNX RNN/GRU/LSTM
 * "activations", matched case-insensitively) with its default parameters;
 * false when no row with RLX_EW_GATE has that name. */
bool rlx_ew_find_activation(const char *name, rlx_ew_call *out);

#endif
