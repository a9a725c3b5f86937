/* The f32 transcendental functions of the elementwise vocabulary, written
 * once over an abstract vector V (included by ir/ew_math.h for the scalar
 * twin, V = float, and by backend/cpu/cpu_ew_vec.c for AVX2, V = __m256,
 * and AVX-512, V = __m512). Each lane computes the same IEEE operation
 * sequence (every multiply-add an explicit fused EV_FMA, comparisons and
 * selects instead of branches, no library call), so the vector functions
 * and their scalar twin give the same bits for every input: the results of
 * a kernel do not depend on the vector width, on where a tail starts or on
 * the thread count. NaN inputs come back unchanged.
 *
 * The includer defines, before including this file (no include guard):
 *   V, VI, VM        float vector, 32-bit integer vector, lane mask
 *   EWM(name)        the function name for this instantiation
 *   EWM_ATTR         the functions' attributes (static inline, target)
 *   EV_C(f) EI_C(i)  a float / integer constant in every lane
 *   EV_ADD SUB MUL DIV (a, b); EV_FMA(a, b, c) = a * b + c rounded once
 *   EV_MAX(a, b)     a > b ? a : b (x86 maxps: b when either is NaN)
 *   EV_MIN(a, b)     a < b ? a : b
 *   EV_ABS(a)        a with the sign bit cleared; EV_SIGN(a) the sign bit
 *   EV_XOR(a, b)     bitwise exclusive or
 *   EV_LT(a, b) EV_EQ(a, b) EV_NAN(a)  ordered comparisons / isnan (masks)
 *   EV_SEL(m, a, b)  m ? a : b per lane
 *   EV_BITS(a) EV_FLOAT(i)  reinterpretation
 *   EI_ADD EI_SUB EI_AND (i, j); EI_SHL(i, n) EI_SRA(i, n) (n constant);
 *   EI_TOF(i)        signed integer to float (exact below 2^24)
 *
 * Accuracy against float64 (tests/test_cpu_ew_vec.c measures it over dense
 * sweeps and states the maximum): exp, expm1, log about 1 ulp; sigmoid,
 * tanh, erf 2 to 3 ulp; Gelu, SiLU, Swish, Elu, Softplus a few ulp where
 * the result is not tiny. */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* x = n ln2 + r, |r| <= ln2/2 (n = round(x log2e) by the 1.5 * 2^23
 * trick: no conversion, no rounding-mode call); *k = n as an integer.
 * |x| < 2^21 (callers clamp). ln2 = LN2HI + LN2LO, the products exact in
 * the fused multiply-adds. */
EWM_ATTR V EWM(reduce)(V x, V *n_out, VI *k) {
    V t = EV_FMA(x, EV_C(1.44269502162933349609375f), EV_C(12582912.0f));
    V n = EV_SUB(t, EV_C(12582912.0f));
    *k = EI_SUB(EV_BITS(t), EI_C(0x4B400000));
    *n_out = n;
    V r = EV_FMA(n, EV_C(-0.693147182464599609375f), x);
    return EV_FMA(n, EV_C(1.904654323148236e-09f), r);
}

/* expm1(r) for |r| <= ln2/2 (+ a little): r + r^2 P(r), P of degree 4
 * (a minimax fit of (e^r - 1 - r) / r^2, relative error 3e-9). */
EWM_ATTR V EWM(expm1_r)(V r) {
    V p = EV_FMA(EV_C(0.0013814599951729178f), r, EV_C(0.008368715643882751f));
    p = EV_FMA(p, r, EV_C(0.04166838899254799f));
    p = EV_FMA(p, r, EV_C(0.1666652113199234f));
    p = EV_FMA(p, r, EV_C(0.4999999403953552f));
    return EV_FMA(EV_MUL(r, r), p, r);
}

/* p * 2^k for k in [-150, 129], in two steps (2^(k >> 1), then the rest)
 * so that both factors are normal floats: overflow gives inf, results
 * below the smallest normal round once into the subnormals. */
EWM_ATTR V EWM(scale)(V p, VI k) {
    VI k1 = EI_SRA(k, 1), k2 = EI_SUB(k, k1);
    V s1 = EV_FLOAT(EI_SHL(EI_ADD(k1, EI_C(127)), 23)), s2 = EV_FLOAT(EI_SHL(EI_ADD(k2, EI_C(127)), 23));
    return EV_MUL(EV_MUL(p, s1), s2);
}

/* e^x: inf above 88.73, 0 below -103.98, subnormals between. */
EWM_ATTR V EWM(exp)(V x) {
    V xc = EV_MIN(EV_C(89.0f), EV_MAX(EV_C(-104.0f), x)), n;
    VI k;
    V r = EWM(reduce)(xc, &n, &k);
    V y = EWM(scale)(EV_ADD(EV_C(1.0f), EWM(expm1_r)(r)), k);
    return EV_SEL(EV_NAN(x), x, y);
}

/* e^x - 1 for x <= 0 (callers select): -1 below -40. */
EWM_ATTR V EWM(expm1_neg)(V x) {
    V xc = EV_MAX(EV_C(-40.0f), x), n;
    VI k;
    V r = EWM(reduce)(xc, &n, &k);
    V s = EV_FLOAT(EI_SHL(EI_ADD(k, EI_C(127)), 23)); /* k in [-58, 0] */
    V y = EV_FMA(s, EWM(expm1_r)(r), EV_SUB(s, EV_C(1.0f)));
    return EV_SEL(EV_NAN(x), x, y);
}

/* ln x: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 * ln(1 + f) = f + f^2 (-1/2 + f P(f)), P of degree 7 (relative error
 * 6e-9); subnormal x scaled by 2^23 first. -inf at +-0, NaN below 0. */
EWM_ATTR V EWM(log)(V x) {
    VM sub = EV_LT(x, EV_C(1.17549435e-38f));
    V xs = EV_SEL(sub, EV_MUL(x, EV_C(8388608.0f)), x);
    VI ix = EI_SUB(EV_BITS(xs), EI_C(0x3f3504f3));
    V k = EV_ADD(EI_TOF(EI_SRA(ix, 23)), EV_SEL(sub, EV_C(-23.0f), EV_C(0.0f)));
    V f = EV_SUB(EV_FLOAT(EI_ADD(EI_AND(ix, EI_C(0x007fffff)), EI_C(0x3f3504f3))), EV_C(1.0f));
    V p = EV_FMA(EV_C(-0.07632216811180115f), f, EV_C(0.12760843336582184f));
    p = EV_FMA(p, f, EV_C(-0.13160650432109833f));
    p = EV_FMA(p, f, EV_C(0.1420188546180725f));
    p = EV_FMA(p, f, EV_C(-0.16623325645923615f));
    p = EV_FMA(p, f, EV_C(0.20001220703125f));
    p = EV_FMA(p, f, EV_C(-0.250008225440979f));
    p = EV_FMA(p, f, EV_C(0.3333333134651184f));
    V y = EV_FMA(EV_MUL(f, f), EV_FMA(f, p, EV_C(-0.5f)), f);
    y = EV_FMA(k, EV_C(-1.904654323148236e-09f), y);
    y = EV_FMA(k, EV_C(0.693147182464599609375f), y);
    y = EV_SEL(EV_LT(x, EV_C(0.0f)), EV_C(NAN), y);
    y = EV_SEL(EV_EQ(x, EV_C(0.0f)), EV_C(-INFINITY), y);
    y = EV_SEL(EV_EQ(x, EV_C(INFINITY)), x, y);
    return EV_SEL(EV_NAN(x), x, y);
}

/* 1 / (1 + e^-x): e = e^-|x|, (x < 0 ? e : 1) / (1 + e). */
EWM_ATTR V EWM(sigmoid)(V x) {
    V e = EWM(exp)(EV_SUB(EV_C(0.0f), EV_ABS(x)));
    V y = EV_DIV(EV_SEL(EV_LT(x, EV_C(0.0f)), e, EV_C(1.0f)), EV_ADD(EV_C(1.0f), e));
    return EV_SEL(EV_NAN(x), x, y);
}

/* x * sigmoid(x): SiLU, in the bits of Sigmoid then Mul. */
EWM_ATTR V EWM(silu)(V x) { return EV_MUL(x, EWM(sigmoid)(x)); }

/* x * sigmoid(a x) (Swish-24). */
EWM_ATTR V EWM(swish)(V x, V a) { return EV_MUL(x, EWM(sigmoid)(EV_MUL(a, x))); }

/* tanh |x| = -m / (2 + m), m = expm1(-2|x|); the sign of x restored. */
EWM_ATTR V EWM(tanh)(V x) {
    V m = EWM(expm1_neg)(EV_MUL(EV_C(-2.0f), EV_ABS(x)));
    V y = EV_ABS(EV_DIV(m, EV_SUB(EV_C(-2.0f), m)));
    return EV_SEL(EV_NAN(x), x, EV_XOR(y, EV_SIGN(x)));
}

/* Gelu with approximate "tanh": 0.5 x (1 + tanh(y)) = x * sigmoid(2y),
 * 2y = 2 sqrt(2/pi) (x + 0.044715 x^3). */
EWM_ATTR V EWM(gelu_tanh)(V x) {
    V w = EV_MUL(x, EV_FMA(EV_C(0.044715f), EV_MUL(x, x), EV_C(1.0f)));
    return EV_MUL(x, EWM(sigmoid)(EV_MUL(EV_C(1.5957691216057308f), w)));
}

/* erf(x) for |x| < 0.921875: x + x Q(x^2), Q of degree 5 (a minimax fit of
 * erf(x) / x - 1, error 2e-8). */
EWM_ATTR V EWM(erf_small)(V x) {
    V u = EV_MUL(x, x);
    V q = EV_FMA(EV_C(-0.0005990851204842329f), u, EV_C(0.004993179813027382f));
    q = EV_FMA(q, u, EV_C(-0.026766616851091385f));
    q = EV_FMA(q, u, EV_C(0.1128181591629982f));
    q = EV_FMA(q, u, EV_C(-0.37612494826316833f));
    q = EV_FMA(q, u, EV_C(0.12837915122509003f));
    return EV_FMA(x, q, x);
}

/* f erfc(a) for a in [0.921875, 15] given -a^2 = hi + lo exactly:
 * e^(hi + lo) (t R(t) f) (f first: a result near the smallest normal keeps
 * its bits), t = 1/a, R a degree-8 polynomial of t fitted to
 * erfc(a) e^(a^2) a on [0.921875, 2.2) and on [2.2, 10.5] (relative error
 * below 5e-9 each); the coefficients picked per lane. 0 from about 10.1. */
EWM_ATTR V EWM(erfc_big)(V a, V hi, V lo, V f) {
    VM m = EV_LT(a, EV_C(2.2f));
#define EWM_C2_(p, q) EV_SEL(m, EV_C(p), EV_C(q))
    V t = EV_DIV(EV_C(1.0f), a);
    V r = EV_FMA(EWM_C2_(0.01213726494461298f, -0.4988466501235962f), t,
                 EWM_C2_(-0.07596883177757263f, 0.9724773168563843f));
    r = EV_FMA(r, t, EWM_C2_(0.1897171288728714f, -0.4297499656677246f));
    r = EV_FMA(r, t, EWM_C2_(-0.20513169467449188f, -0.46928638219833374f));
    r = EV_FMA(r, t, EWM_C2_(-0.029068423435091972f, 0.5661884546279907f));
    r = EV_FMA(r, t, EWM_C2_(0.3606213629245758f, -0.02474111318588257f));
    r = EV_FMA(r, t, EWM_C2_(-0.4108618199825287f, -0.27957865595817566f));
    r = EV_FMA(r, t, EWM_C2_(0.023801088333129883f, -0.00013999127259012312f));
    r = EV_FMA(r, t, EWM_C2_(0.5623375177383423f, 0.5641928911209106f));
#undef EWM_C2_
    V hc = EV_MAX(EV_C(-104.0f), hi), n;
    VI k;
    V rr = EV_ADD(EWM(reduce)(hc, &n, &k), lo);
    V e = EWM(scale)(EV_ADD(EV_C(1.0f), EWM(expm1_r)(rr)), k);
    return EV_MUL(e, EV_MUL(EV_MUL(t, r), f));
}

/* erf(x): the small form below 0.921875, else +-(1 - erfc |x|). */
EWM_ATTR V EWM(erf)(V x) {
    V a = EV_MIN(EV_C(15.0f), EV_MAX(EV_C(0.921875f), EV_ABS(x)));
    V aa = EV_MUL(a, a);
    V big = EV_SUB(EV_C(1.0f), EWM(erfc_big)(a, EV_SUB(EV_C(0.0f), aa), EV_FMA(EV_SUB(EV_C(0.0f), a), a, aa), EV_C(1.0f)));
    V y = EV_SEL(EV_LT(EV_ABS(x), EV_C(0.921875f)), EWM(erf_small)(x), EV_XOR(big, EV_SIGN(x)));
    return EV_SEL(EV_NAN(x), x, y);
}

/* Gelu (approximate "none"): 0.5 x (1 + erf(x / sqrt 2)). With z = x /
 * sqrt 2: for |z| < 0.921875 x (0.5 + 0.5 erf z); else c = 0.5 x erfc |z|
 * (erfc taking -x^2 / 2 exactly), x - c for x > 0 and c for x < 0 (no
 * cancellation on the negative side). */
EWM_ATTR V EWM(gelu)(V x) {
    V z = EV_MUL(x, EV_C(0.7071067811865476f));
    V small = EV_MUL(x, EV_FMA(EV_C(0.5f), EWM(erf_small)(z), EV_C(0.5f)));
    V xa = EV_MIN(EV_C(21.0f), EV_ABS(x));
    V xx = EV_MUL(xa, xa);
    V hi = EV_MUL(EV_C(-0.5f), xx), lo = EV_MUL(EV_C(0.5f), EV_FMA(EV_SUB(EV_C(0.0f), xa), xa, xx));
    V a = EV_MAX(EV_C(0.921875f), EV_MUL(xa, EV_C(0.7071067811865476f)));
    V c = EWM(erfc_big)(a, hi, lo, EV_MUL(EV_C(0.5f), EV_MIN(x, EV_C(21.0f)))); /* -inf: 0 * -inf = NaN */
    V big = EV_SEL(EV_LT(x, EV_C(0.0f)), c, EV_SUB(x, c));
    V y = EV_SEL(EV_LT(EV_ABS(z), EV_C(0.921875f)), small, big);
    return EV_SEL(EV_NAN(x), x, y);
}

/* Elu: x >= 0 ? x : alpha (e^x - 1). */
EWM_ATTR V EWM(elu)(V x, V alpha) {
    V y = EV_SEL(EV_LT(x, EV_C(0.0f)), EV_MUL(alpha, EWM(expm1_neg)(EV_MIN(x, EV_C(0.0f)))), x);
    return EV_SEL(EV_NAN(x), x, y);
}

/* Selu: x > 0 ? gamma x : gamma (alpha (e^x - 1)). */
EWM_ATTR V EWM(selu)(V x, V alpha, V gamma) {
    V neg = EV_MUL(gamma, EV_MUL(alpha, EWM(expm1_neg)(EV_MIN(x, EV_C(0.0f)))));
    V y = EV_SEL(EV_LT(EV_C(0.0f), x), EV_MUL(gamma, x), neg);
    return EV_SEL(EV_NAN(x), x, y);
}

/* Softplus: ln(1 + e^x) = max(x, 0) + ln(1 + e), e = e^-|x|, with
 * ln(1 + e) = ln u + (e - (u - 1)) / u, u = 1 + e rounded (the rounding
 * error of u restored). */
EWM_ATTR V EWM(softplus)(V x) {
    V e = EWM(exp)(EV_SUB(EV_C(0.0f), EV_ABS(x)));
    V u = EV_ADD(EV_C(1.0f), e);
    V l = EV_ADD(EWM(log)(u), EV_DIV(EV_SUB(e, EV_SUB(u, EV_C(1.0f))), u));
    V y = EV_ADD(EV_MAX(x, EV_C(0.0f)), l);
    return EV_SEL(EV_NAN(x), x, y);
}

/* Mish: x tanh(softplus(x)). */
EWM_ATTR V EWM(mish)(V x) { return EV_MUL(x, EWM(tanh)(EWM(softplus)(x))); }
