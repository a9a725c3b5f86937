/* The elementwise vocabulary: one row per function (see src/ir/ew.h for
 * how the rows are used). These lists are the only place a function's
 * formula, parameters and WGSL are written; to add a function, add a row.
 * The fused activations come first, with the codes rlx_act_kind had.
 *
 * X(ID, KIND, NAME, ARITY, FLAGS, SINCE, P0, D0, P1, D1, F64, F32, WGSL)
 *   ID     the enum value RLX_EW_<ID> (the order is the code order)
 *   KIND   OP: a standalone ONNX op computed by the generic unary kernels
 *          (the CPU unary kernel and the GPU's unary.wgsl register
 *          themselves for it); FN: an op with kernels of its own (Clip,
 *          Not, the binary ops, Where; Identity as the chains' copy);
 *          NONE: no op (SiLU, the RNN-only Affine and ScaledTanh, the
 *          halves CLAMP_LO and CLAMP_HI of a run-time Clip)
 *   NAME   the ONNX op (or RNN activation) name, a bare token (RLX_OP_<NAME>
 *          for rows of KIND OP and FN; #NAME is the string); empty when
 *          there is none
 *   ARITY  register operands: 1 x; 2 x, y; 3 x, y, c (c ? x : y)
 *   FLAGS  RLX_EW_CHAIN     fuse_elementwise may put it in a chain
 *          RLX_EW_GATE      an ONNX RNN/GRU/LSTM activation
 *          RLX_EW_ACT       it may be the fused activation (epilogue) of a
 *                           Conv, Gemm or MatMul: fuse_activation folds
 *                           such ops (SiLU: its pattern), the GPU epilogue
 *                           kernels compile it in (act_apply)
 *          RLX_EW_CHEAP     a few f32 operations inline (comparisons,
 *                           selects, + - *, at most a division by a
 *                           constant; no libm call, no division by a
 *                           tensor): fuse_elementwise may recompute it
 *                           for every element of a chain's larger
 *                           output (Round is not: nearbyintf is a call)
 *   SINCE  the ONNX version from which the op has these semantics (older
 *          versions had legacy attributes or broadcasting); fusions take
 *          nodes of this version or later
 *   P0, D0 the attribute name and default of parameter 0 (p0, WGSL $a),
 *   P1, D1 and of parameter 1 (p1, $b); NULL when the function has none.
 *          Rows with an op (KIND OP and FN) write 0: their defaults are
 *          the op schema's (src/ir/ops/ops_elementwise.def: Clip's min
 *          and max before version 11), also for RNN gates.
 *          RNN activations take activation_alpha for p0, activation_beta
 *          for p1.
 *   F64    the reference in double of x, y, c, p0, p1
 *   F32    the f32 computation (every f32 path: the unary and binary
 *          kernels, chains, epilogues); F64(ID) rounds the reference;
 *          rlx_ewm_<name>_s(...) is the scalar twin of a function with
 *          AVX2 / AVX-512 forms of the same bits (ir/ew_math.h)
 *   WGSL   the f32 expression on the GPU: $x $y $c operands, $a $b the
 *          parameters (helpers from kernels/ew_lib.wgsl); NULL: CPU only.
 *          For NaN and +-inf operands it gives what F32 gives (IEEE, as
 *          numpy and onnxruntime): where a WGSL built-in may differ there
 *          (min, max, clamp, tanh, inf / inf, ...), the expression decides
 *          by the bit tests of ew_lib.wgsl (isnan_, isinf_, clamp_, ...).
 *          Every choice between float values is pick_(f, t, c) on a
 *          condition of integer comparisons of the bits (lt_, isnan_),
 *          which no driver may turn into a min or max that orders -0 and
 *          +0 its own way: never select, min, max, clamp, sign or a float
 *          comparison of the chosen values (tests/test_webgpu_params.c
 *          checks the text)
 *
 * Semantics follow the ONNX operator of NAME at SINCE and later. */
/* clang-format off */
#define RLX_EW_FUNCS(X) \
    X(COPY, FN, Identity, 1, RLX_EW_CHEAP, 1, NULL, 0, NULL, 0, \
      x, x, "$x") \
    /* x < 0 ? 0 : x: NaN and -0 pass through (onnxruntime, PyTorch); \
     * never max(x, 0), which drops NaN on x86 and in WGSL (the GPU tests \
     * the bits: a driver may take NaN < 0 as true, as it did for clamp_) */ \
    X(RELU, OP, Relu, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_GATE | RLX_EW_CHEAP, 6, NULL, 0, NULL, 0, \
      x < 0 ? 0.0 : x, x < 0.0f ? 0.0f : x, "pick_(pick_($x, 0.0, lt_($x, 0.0)), $x, isnan_($x))") \
    /* Clip with constant bounds p0 = min, p1 = max (hi wins when lo > hi, \
     * NaN passes through, a tie keeps x); the resolver reads inputs 1, 2 \
     * from version 11 */ \
    X(CLIP, FN, Clip, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_CHEAP, 6, \
      "min", 0, "max", 0, \
      rlx_ew_clamp(x, p0, p1), rlx_ew_clampf(x, p0, p1), "clamp_($x, $a, $b)") \
    X(HARDSIGMOID, OP, HardSigmoid, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_GATE | RLX_EW_CHEAP, 6, \
      "alpha", 0, "beta", 0, \
      rlx_ew_clamp(p0 * x + p1, 0.0, 1.0), rlx_ew_clampf(p0 * x + p1, 0.0f, 1.0f), "clamp_($a * $x + $b, 0.0, 1.0)") \
    X(HARDSWISH, OP, HardSwish, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_CHEAP, 14, NULL, 0, NULL, 0, \
      x * rlx_ew_clamp(x / 6.0 + 0.5, 0.0, 1.0), x * rlx_ew_clampf(x / 6.0f + 0.5f, 0.0f, 1.0f), \
      "($x * clamp_($x / 6.0 + 0.5, 0.0, 1.0))") \
    X(SIGMOID, OP, Sigmoid, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_GATE, 6, NULL, 0, NULL, 0, \
      1.0 / (1.0 + exp(-x)), rlx_ewm_sigmoid_s(x), "(1.0 / (1.0 + exp(-$x)))") \
    /* x * Sigmoid(x) (no ONNX op: the pattern fuse_activation matches), in \
     * the bits of the two unfused ops */ \
    X(SILU, NONE, , 1, RLX_EW_ACT, 1, NULL, 0, NULL, 0, \
      x * (1.0 / (1.0 + exp(-x))), rlx_ewm_silu_s(x), "($x * (1.0 / (1.0 + exp(-$x))))") \
    X(GELU, OP, Gelu, 1, RLX_EW_CHAIN | RLX_EW_ACT, 20, NULL, 0, NULL, 0, \
      0.5 * x * erfc(-x / sqrt(2.0)), rlx_ewm_gelu_s(x), "gelu_($x)") \
    /* 0.5 (1 + tanh y) = 1 / (1 + e^-2y) on the GPU; sqrt(2 / pi) */ \
    X(GELU_TANH, FN, Gelu, 1, RLX_EW_CHAIN | RLX_EW_ACT, 20, NULL, 0, NULL, 0, \
      x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))), rlx_ewm_gelu_tanh_s(x), \
      "($x / (1.0 + exp(-1.5957691216057308 * ($x + 0.044715 * $x * $x * $x))))") \
    X(LEAKYRELU, OP, LeakyRelu, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_GATE | RLX_EW_CHEAP, 6, "alpha", 0, NULL, 0, \
      x >= 0 ? x : p0 * x, F64(LEAKYRELU), "pick_($a * $x, $x, !lt_($x, 0.0))") \
    X(TANH, OP, Tanh, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_GATE, 6, NULL, 0, NULL, 0, \
      tanh(x), rlx_ewm_tanh_s(x), "tanh_($x)") \
    X(NOT, FN, Not, 1, 0, 1, NULL, 0, NULL, 0, \
      x == 0 ? 1.0 : 0.0, x == 0.0f ? 1.0f : 0.0f, NULL) \
    /* RNN activations (ONNX RNN/GRU/LSTM lists; no standalone op) */ \
    X(AFFINE, NONE, Affine, 1, RLX_EW_GATE, 1, "alpha", 1.0f, "beta", 0.0f, \
      p0 * x + p1, F64(AFFINE), "($a * $x + $b)") \
    X(SCALEDTANH, NONE, ScaledTanh, 1, RLX_EW_GATE, 1, "alpha", 1.0f, "beta", 1.0f, \
      p0 * tanh(p1 * x), p0 * rlx_ewm_tanh_s(p1 * x), "($a * tanh_($b * $x))") \
    /* binary arithmetic (numpy broadcasting from SINCE) */ \
    X(ADD, FN, Add, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 7, NULL, 0, NULL, 0, x + y, x + y, "($x + $y)") \
    X(SUB, FN, Sub, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 7, NULL, 0, NULL, 0, x - y, x - y, "($x - $y)") \
    X(MUL, FN, Mul, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 7, NULL, 0, NULL, 0, x * y, x * y, "($x * $y)") \
    X(DIV, FN, Div, 2, RLX_EW_CHAIN, 7, NULL, 0, NULL, 0, x / y, x / y, "($x / $y)") \
    X(POW, FN, Pow, 2, RLX_EW_CHAIN, 7, NULL, 0, NULL, 0, pow(x, y), powf(x, y), "pow_($x, $y)") \
    /* Max and Min propagate NaN on the CPU */ \
    X(MAX, FN, Max, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 8, NULL, 0, NULL, 0, \
      (x != x || y != y) ? NAN : (x > y ? x : y), (x != x || y != y) ? NAN : (x > y ? x : y), "max_($x, $y)") \
    X(MIN, FN, Min, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 8, NULL, 0, NULL, 0, \
      (x != x || y != y) ? NAN : (x < y ? x : y), (x != x || y != y) ? NAN : (x < y ? x : y), "min_($x, $y)") \
    /* Clip's bounds given at run time, one at a time (the GPU's Clip of \
     * run-time bounds, two dispatches): CLAMP_HI(CLAMP_LO(x, lo), hi) is \
     * rlx_ew_clampf(x, lo, hi) (NaN x stays, a NaN bound is ignored, a \
     * tie keeps x) */ \
    X(CLAMP_LO, NONE, , 2, 0, 1, NULL, 0, NULL, 0, x < y ? y : x, x < y ? y : x, \
      "pick_(pick_($x, $y, lt_($x, $y) && !isnan_($y)), $x, isnan_($x))") \
    X(CLAMP_HI, NONE, , 2, 0, 1, NULL, 0, NULL, 0, x > y ? y : x, x > y ? y : x, \
      "pick_(pick_($x, $y, lt_($y, $x) && !isnan_($y)), $x, isnan_($x))") \
    /* PRelu. The GPU's lt_ compares bits, while a driver may flush a \
     * subnormal x to -0 in the product (WGSL allows it; NVIDIA does): \
     * x = -1e-42 and y = inf then gave NaN (-0 * inf) where the CPU has \
     * -inf and the flushed x (not < 0) -0. A NaN product of a finite x \
     * and a non-NaN y comes only from that flush: x (a zero) then. */ \
    X(PRELU, FN, PRelu, 2, RLX_EW_CHAIN | RLX_EW_CHEAP, 7, NULL, 0, NULL, 0, \
      x < 0 ? x * y : x, x < 0.0f ? x * y : x, \
      "pick_($x, $x * $y, lt_($x, 0.0) && (!isnan_($x * $y) || isnan_($y) || isinf_($x)))") \
    /* c ? x : y, with c a bool register (1.0 / 0.0) */ \
    X(WHERE, FN, Where, 3, RLX_EW_CHAIN | RLX_EW_CHEAP, 9, NULL, 0, NULL, 0, \
      c != 0 ? x : y, c != 0.0f ? x : y, "pick_($y, $x, $c != 0.0)") \
    X(NEG, OP, Neg, 1, RLX_EW_CHAIN | RLX_EW_CHEAP, 6, NULL, 0, NULL, 0, \
      -x, -x, "(-$x)") \
    X(ABS, OP, Abs, 1, RLX_EW_CHAIN | RLX_EW_CHEAP, 6, NULL, 0, NULL, 0, \
      fabs(x), fabsf(x), "abs($x)") \
    /* 1, -1, +0 for either zero, NaN for NaN (numpy, onnxruntime) */ \
    X(SIGN, OP, Sign, 1, RLX_EW_CHAIN | RLX_EW_CHEAP, 9, NULL, 0, NULL, 0, \
      x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x, \
      "sign_($x)") \
    X(EXP, OP, Exp, 1, RLX_EW_CHAIN, 6, NULL, 0, NULL, 0, \
      exp(x), rlx_ewm_exp_s(x), "exp($x)") \
    X(LOG, OP, Log, 1, RLX_EW_CHAIN, 6, NULL, 0, NULL, 0, \
      log(x), rlx_ewm_log_s(x), "log_($x)") \
    X(SQRT, OP, Sqrt, 1, RLX_EW_CHAIN, 6, NULL, 0, NULL, 0, \
      sqrt(x), F64(SQRT), "sqrt($x)") \
    X(RECIP, OP, Reciprocal, 1, RLX_EW_CHAIN, 6, NULL, 0, NULL, 0, \
      1.0 / x, F64(RECIP), "(1.0 / $x)") \
    X(FLOOR, OP, Floor, 1, RLX_EW_CHAIN | RLX_EW_CHEAP, 6, NULL, 0, NULL, 0, \
      floor(x), floorf(x), "floor($x)") \
    X(CEIL, OP, Ceil, 1, RLX_EW_CHAIN | RLX_EW_CHEAP, 6, NULL, 0, NULL, 0, \
      ceil(x), ceilf(x), "ceil($x)") \
    /* round half to even under the default rounding mode */ \
    X(ROUND, OP, Round, 1, RLX_EW_CHAIN, 11, NULL, 0, NULL, 0, \
      nearbyint(x), F64(ROUND), "round($x)") \
    X(ERF, OP, Erf, 1, RLX_EW_CHAIN, 9, NULL, 0, NULL, 0, \
      erf(x), rlx_ewm_erf_s(x), "erf_($x)") \
    X(SIN, OP, Sin, 1, RLX_EW_CHAIN, 7, NULL, 0, NULL, 0, \
      sin(x), F64(SIN), "sin_($x)") \
    X(COS, OP, Cos, 1, RLX_EW_CHAIN, 7, NULL, 0, NULL, 0, \
      cos(x), F64(COS), "cos_($x)") \
    X(TAN, OP, Tan, 1, 0, 7, NULL, 0, NULL, 0, \
      tan(x), F64(TAN), "tan_($x)") \
    /* the arcsine and arccosine builtins are coarse on llvmpipe */ \
    X(ASIN, OP, Asin, 1, 0, 7, NULL, 0, NULL, 0, \
      asin(x), F64(ASIN), "atan2($x, sqrt((1.0 - $x) * (1.0 + $x)))") \
    X(ACOS, OP, Acos, 1, 0, 7, NULL, 0, NULL, 0, \
      acos(x), F64(ACOS), "atan2(sqrt((1.0 - $x) * (1.0 + $x)), $x)") \
    X(ATAN, OP, Atan, 1, 0, 7, NULL, 0, NULL, 0, \
      atan(x), F64(ATAN), "atan($x)") \
    X(SINH, OP, Sinh, 1, 0, 9, NULL, 0, NULL, 0, \
      sinh(x), F64(SINH), "sinh_($x)") \
    X(COSH, OP, Cosh, 1, 0, 9, NULL, 0, NULL, 0, \
      cosh(x), F64(COSH), "cosh_($x)") \
    X(ASINH, OP, Asinh, 1, 0, 9, NULL, 0, NULL, 0, \
      asinh(x), F64(ASINH), "asinh_($x)") \
    X(ACOSH, OP, Acosh, 1, 0, 9, NULL, 0, NULL, 0, \
      acosh(x), F64(ACOSH), "acosh_($x)") \
    X(ATANH, OP, Atanh, 1, 0, 9, NULL, 0, NULL, 0, \
      atanh(x), F64(ATANH), "atanh_($x)") \
    X(ELU, OP, Elu, 1, RLX_EW_CHAIN | RLX_EW_GATE, 6, "alpha", 0, NULL, 0, \
      x >= 0 ? x : p0 * expm1(x), rlx_ewm_elu_s(x, p0), "pick_(pick_($a * expm1_($x), $x, !lt_($x, 0.0)), $x, isnan_($x))") \
    X(SELU, OP, Selu, 1, 0, 6, "alpha", 0, "gamma", 0, \
      x > 0 ? p1 * x : p1 * (p0 * expm1(x)), rlx_ewm_selu_s(x, p0, p1), "pick_(pick_($b * $a * expm1_($x), $b * $x, lt_(0.0, $x)), $x, isnan_($x))") \
    /* NaN passes through (fmax, fmin and WGSL max, min drop it); on the \
     * GPU x > 0 ? x : (e < 0 ? e : +0) with e = p0 (exp(x / p0) - 1), the \
     * CPU's sum for p0 > 0 with its zero +0 */ \
    X(CELU, OP, Celu, 1, 0, 12, "alpha", 0, NULL, 0, \
      x != x ? x : fmax(0.0, x) + fmin(0.0, p0 * (exp(x / p0) - 1.0)), F64(CELU), \
      "pick_(pick_(pick_(0.0, $a * expm1_($x / $a), lt_($a * expm1_($x / $a), 0.0)), $x, lt_(0.0, $x)), $x, isnan_($x))") \
    X(THRESHOLDEDRELU, OP, ThresholdedRelu, 1, RLX_EW_GATE, 10, "alpha", 0, NULL, 0, \
      x > p0 ? x : 0.0, F64(THRESHOLDEDRELU), "pick_(0.0, $x, lt_($a, $x) && !isnan_($x) && !isnan_($a))") \
    X(SOFTPLUS, OP, Softplus, 1, RLX_EW_CHAIN | RLX_EW_GATE, 1, NULL, 0, NULL, 0, \
      x > 30 ? x : log1p(exp(x)), rlx_ewm_softplus_s(x), "softplus_($x)") \
    X(SOFTSIGN, OP, Softsign, 1, RLX_EW_CHAIN | RLX_EW_GATE, 1, NULL, 0, NULL, 0, \
      x / (1.0 + fabs(x)), F64(SOFTSIGN), "softsign_($x)") \
    X(MISH, OP, Mish, 1, 0, 18, NULL, 0, NULL, 0, \
      x * tanh(x > 30 ? x : log1p(exp(x))), rlx_ewm_mish_s(x), "($x * tanh_(softplus_($x)))") \
    /* Gelu with approximate "none"; the resolver picks GELU_TANH for "tanh" */ \
    X(SHRINK, OP, Shrink, 1, 0, 9, "lambd", 0, "bias", 0, \
      x < -p0 ? x + p1 : x > p0 ? x - p1 : 0.0, F64(SHRINK), \
      "pick_(pick_(pick_(0.0, $x - $b, lt_($a, $x)), $x + $b, lt_($x, -$a)), 0.0, isnan_($x))") \
    X(SWISH, OP, Swish, 1, 0, 24, "alpha", 0, NULL, 0, \
      x / (1.0 + exp(-p0 * x)), rlx_ewm_swish_s(x, p0), "($x / (1.0 + exp(-$a * $x)))") \
    /* QuantizeLinear then DequantizeLinear with one per-tensor scale p0 and \
     * an 8-bit type (the internal op rlx.QuantizeDequantize, passes/fuse_qdq.c): \
     * the quantized level round_half_even(x / p0) (NaN: the type's minimum) \
     * saturated to [p1, p1 + 255], the type's range less the zero point, times \
     * p0; in f32 the bits of the two ONNX ops (one f32 division, one product) */ \
    X(QDQ, OP, rlx_QuantizeDequantize, 1, RLX_EW_CHAIN | RLX_EW_ACT | RLX_EW_CHEAP, 1, "scale", 0, "low", 0, \
      p0 * rlx_ew_clamp(rlx_ew_rint_or(x / p0, p1), p1, p1 + 255.0), \
      p0 * rlx_ew_clampf(rlx_ew_rint_orf(x / p0, p1), p1, p1 + 255.0f), \
      "($a * clamp_(qround_($x, $a, $b), $b, $b + 255.0))")
/* clang-format on */

/* RLX_EW_KIND_OP(x) is x for OP rows, nothing for FN and NONE rows;
 * RLX_EW_HAS_OP_<KIND>(x) is x for the rows with an op (OP and FN). */
#define RLX_EW_KIND_OP(...) __VA_ARGS__
#define RLX_EW_KIND_FN(...)
#define RLX_EW_KIND_NONE(...)
#define RLX_EW_HAS_OP_OP(...) __VA_ARGS__
#define RLX_EW_HAS_OP_FN(...) __VA_ARGS__
#define RLX_EW_HAS_OP_NONE(...)
