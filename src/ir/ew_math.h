/* The scalar twin of the vectorised transcendental functions of the
 * elementwise vocabulary: ir/ew_math_body.h instantiated for V = float
 * (functions rlx_ewm_<name>_s). These are the f32 definitions of their
 * rows in ir/ew_funcs.h (Exp, Log, Sigmoid, SiLU, Swish, Tanh, Gelu, Erf,
 * Elu, Selu, Softplus, Mish), so every CPU path computes them: the unary
 * kernels and chains (through the AVX2 / AVX-512 instantiations of
 * backend/cpu/cpu_ew_vec.c, which give the same bits), epilogues, RNN
 * gates, constant folding. Portable C11: fmaf, bit copies through memcpy,
 * no branches on data. */
#ifndef RLX_IR_EW_MATH_H
#define RLX_IR_EW_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t rlx_ewm_bits_s(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float rlx_ewm_float_s(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* arithmetic shift right of a two's complement value held in a uint32_t */
static inline uint32_t rlx_ewm_sra_s(uint32_t v, int s) {
    return (v >> s) | ((v & 0x80000000u) ? ~(0xffffffffu >> s) : 0u);
}

#define V float
#define VI uint32_t
#define VM int
#define EWM(name) rlx_ewm_##name##_s
#define EWM_ATTR static inline
#define EV_C(f) ((float)(f))
#define EI_C(i) ((uint32_t)(i))
#define EV_ADD(a, b) ((a) + (b))
#define EV_SUB(a, b) ((a) - (b))
#define EV_MUL(a, b) ((a) * (b))
#define EV_DIV(a, b) ((a) / (b))
#define EV_FMA(a, b, c) fmaf(a, b, c)
#define EV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define EV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EV_ABS(a) rlx_ewm_float_s(rlx_ewm_bits_s(a) & 0x7fffffffu)
#define EV_SIGN(a) rlx_ewm_float_s(rlx_ewm_bits_s(a) & 0x80000000u)
#define EV_XOR(a, b) rlx_ewm_float_s(rlx_ewm_bits_s(a) ^ rlx_ewm_bits_s(b))
#define EV_LT(a, b) ((a) < (b))
#define EV_EQ(a, b) ((a) == (b))
#define EV_NAN(a) ((a) != (a))
#define EV_SEL(m, a, b) ((m) ? (a) : (b))
#define EV_BITS(a) rlx_ewm_bits_s(a)
#define EV_FLOAT(i) rlx_ewm_float_s(i)
#define EI_ADD(i, j) ((uint32_t)((i) + (j)))
#define EI_SUB(i, j) ((uint32_t)((i) - (j)))
#define EI_AND(i, j) ((i) & (j))
#define EI_SHL(i, n) ((uint32_t)((i) << (n)))
#define EI_SRA(i, n) rlx_ewm_sra_s(i, n)
#define EI_TOF(i) ((float)(int32_t)(i))
#include "ir/ew_math_body.h"
#include "ir/ew_math_undef.h"

#endif
