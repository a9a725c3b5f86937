/* Codes that select what a WGSL kernel computes (its `override`
 * constants), declared once. Each list below gives the C enum that the
 * lowerings pass to wg_spec and, through the generated "codes" snippet
 * (`//!include codes` in a kernel: one `const NAME: u32 = value;` per row,
 * wgsl_gen.c), the WGSL constants the kernel compares its override with;
 * so the kernel and its lowering cannot disagree on a value. The
 * elementwise functions' codes (EW_*) come the same way from
 * src/ir/ew_funcs.h through the "act" snippet. */
#ifndef RLX_BACKEND_WEBGPU_WG_CODES_H
#define RLX_BACKEND_WEBGPU_WG_CODES_H

/* Element types of cast.wgsl (SRC, DST), compare.wgsl and onehot.wgsl
 * (TY, ITY; layouts in README.md, "Element types"), scatter.wgsl (TY:
 * the reductions' arithmetic). */
#define WG_TYPE_CODES(X) X(TY_F32) X(TY_I32) X(TY_U32) X(TY_BOOL) X(TY_I64) X(TY_F16)

/* compare.wgsl OP: comparisons of two operands, the logical ops of bool,
 * IsNaN and IsInf of one. */
#define WG_CMP_CODES(X)                                                                                             \
    X(CMP_EQ) X(CMP_LT) X(CMP_GT) X(CMP_LE) X(CMP_GE) X(CMP_AND) X(CMP_OR) X(CMP_XOR) X(CMP_NOT) X(CMP_ISNAN)     \
    X(CMP_ISINF)

/* reduce.wgsl OP: Reduce* (RED_LSE is ReduceLogSumExp), ArgMax (also
 * Hardmax's index), ArgMin. */
#define WG_RED_CODES(X)                                                                                             \
    X(RED_SUM) X(RED_MEAN) X(RED_MAX) X(RED_MIN) X(RED_PROD) X(RED_L1) X(RED_L2) X(RED_LOGSUM) X(RED_LSE)          \
    X(RED_SUMSQ) X(RED_ARGMAX) X(RED_ARGMIN)

/* norm.wgsl and norm_split.wgsl MODE: LayerNormalization (and Instance-,
 * GroupNormalization), RMSNormalization, LpNormalization p = 1 and 2,
 * MeanVarianceNormalization, Softmax, LogSoftmax. */
#define WG_NORM_MODES(X) X(NM_LAYER) X(NM_RMS) X(NM_LP1) X(NM_LP2) X(NM_MVN) X(NM_SOFTMAX) X(NM_LOGSOFTMAX)

/* scatter.wgsl RED: the reduction attribute of ScatterND/ScatterElements. */
#define WG_SCATTER_REDS(X) X(SR_NONE) X(SR_ADD) X(SR_MUL) X(SR_MAX) X(SR_MIN)

/* trilu.wgsl MODE: Trilu upper, lower, EyeLike. */
#define WG_TRILU_MODES(X) X(TRI_UPPER) X(TRI_LOWER) X(TRI_EYE)

/* where.wgsl and trilu.wgsl ELEM, the unit an element is stored as: one
 * word (f32, i32, u32), a word pair (i64), a byte (bool, four to a word). */
#define WG_UNIT_CODES(X) X(UNIT_WORD) X(UNIT_PAIR) X(UNIT_BYTE)

/* The GEMM's tile loads (gemm.wgsl, gemm_tile.wgsl, the generated GEMMs
 * of gemm_gen.c and gemm_coop_gen.c). A_MODE: scalar loads with
 * neighbours along k; vec4 along k (a_sk = 1; K, a_sm and the bases
 * multiples of 4); vec4 along m (a_sm = 1; M, a_sk, bases multiples of 4);
 * scalar loads with neighbours along m. */
#define WG_GEMM_A_MODES(X) X(GA_SCALAR) X(GA_VEC_K) X(GA_VEC_M) X(GA_SCALAR_M)

/* B_MODE: scalar loads with neighbours along n; vec4 along n (b_sn = 1; N,
 * b_sk, bases multiples of 4); vec4 along k (b_sk = 1; K, b_sn, bases
 * multiples of 4); scalar along k; the implicit im2col of a convolution. */
#define WG_GEMM_B_MODES(X) X(GB_SCALAR) X(GB_VEC_N) X(GB_VEC_K) X(GB_SCALAR_K) X(GB_CONV)

/* gridsample.wgsl MODE and PAD: GridSample's mode and padding_mode, in the
 * order of rlx_gs_mode and rlx_gs_pad (ir/ops/gridsample.h). */
#define WG_GS_MODES(X) X(GS_NEAREST) X(GS_LINEAR) X(GS_CUBIC)
#define WG_GS_PADS(X) X(GS_ZEROS) X(GS_BORDER) X(GS_REFLECTION)

/* Every list, for the generator of the "codes" snippet. */
#define WG_ALL_CODES(X)                                                                                             \
    WG_TYPE_CODES(X) WG_CMP_CODES(X) WG_RED_CODES(X) WG_NORM_MODES(X) WG_SCATTER_REDS(X) WG_TRILU_MODES(X)          \
    WG_UNIT_CODES(X) WG_GEMM_A_MODES(X) WG_GEMM_B_MODES(X) WG_GS_MODES(X) WG_GS_PADS(X)

#define WG_CODE_ENUM_ROW(name) name,
enum wg_type_code { WG_TYPE_CODES(WG_CODE_ENUM_ROW) };
enum wg_cmp_code { WG_CMP_CODES(WG_CODE_ENUM_ROW) };
enum wg_red_code { WG_RED_CODES(WG_CODE_ENUM_ROW) };
enum wg_norm_mode { WG_NORM_MODES(WG_CODE_ENUM_ROW) };
enum wg_scatter_red { WG_SCATTER_REDS(WG_CODE_ENUM_ROW) };
enum wg_trilu_mode { WG_TRILU_MODES(WG_CODE_ENUM_ROW) };
enum wg_unit_code { WG_UNIT_CODES(WG_CODE_ENUM_ROW) };
enum wg_gemm_a_mode { WG_GEMM_A_MODES(WG_CODE_ENUM_ROW) };
enum wg_gemm_b_mode { WG_GEMM_B_MODES(WG_CODE_ENUM_ROW) };
enum wg_gs_mode { WG_GS_MODES(WG_CODE_ENUM_ROW) };
enum wg_gs_pad { WG_GS_PADS(WG_CODE_ENUM_ROW) };

#endif
