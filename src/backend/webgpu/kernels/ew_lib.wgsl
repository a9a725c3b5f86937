// Library, not a kernel (no entry point): the f32 helper functions of the
// elementwise vocabulary's WGSL (src/ir/ew_funcs.h). Generated kernels
// (src/backend/webgpu/wgsl_gen.c: fused elementwise programs, the generic
// fused-activation epilogue) paste it in front of their code, and the
// generated "act" snippet (unary.wgsl, binary.wgsl and every kernel with an
// ACT epilogue) starts with it, so there is one erf, one tanh, ... on the
// GPU and a fused op computes what the unfused one does. WGSL bounds log's error only
// absolutely on [0.5, 2], and llvmpipe's exp-based builtins (and the
// NVIDIA driver's sin) lose relative accuracy near 0 and 1, so these use
// series there.

// NaN and infinity policy: the CPU reference (IEEE, as numpy and
// onnxruntime) is the contract. WGSL lets built-ins (min, max, clamp,
// tanh, ...) return any value for NaN or infinite operands and lets a
// compiler assume floats are finite, so `x != x` may fold to false (seen:
// Clip(NaN) = lo and Softsign(-inf) = -0 on the NVIDIA driver). Where a
// function's result for such inputs differs, it is chosen by these bit
// tests, which no compiler may fold, and a NaN is made from the operand's
// bits (a NaN constant would be a shader-creation error in WGSL).
fn isnan_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn isinf_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn nonfinite_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u; }
fn nan_(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | 0x7fc00000u); }
// x clamped to [lo, hi] as the CPU's rlx_ew_clampf: hi wins when lo > hi,
// a NaN x passes through, a NaN bound is ignored.
fn clamp_(x: f32, lo: f32, hi: f32) -> f32 {
    let y = select(x, lo, x < lo);
    return select(select(y, hi, y > hi), x, isnan_(x));
}
// Round half to even (WGSL's round), NaN to 0: QuantizeLinear's level.
fn rint0_(x: f32) -> f32 { return select(round(x), 0.0, isnan_(x)); }
// Max and Min of ONNX: NaN if either operand is NaN.
fn max_(x: f32, y: f32) -> f32 { return select(select(y, x, x > y), x + y, isnan_(x) || isnan_(y)); }
fn min_(x: f32, y: f32) -> f32 { return select(select(y, x, x < y), x + y, isnan_(x) || isnan_(y)); }

// 2 atanh(t) = log((1 + t) / (1 - t)) for |t| <= 1/3, to 5e-10.
fn atanh2_(t: f32) -> f32 {
    let t2 = t * t;
    var term = t;
    var sum = t;
    for (var k = 1u; k < 9u; k = k + 1u) {
        term = term * t2;
        sum = sum + term / f32(2u * k + 1u);
    }
    return 2.0 * sum;
}
// log(1 + u) for u > -1, relative accuracy kept for tiny u.
fn log1p_(u: f32) -> f32 {
    if (abs(u) < 0.5) { return atanh2_(u / (2.0 + u)); }
    return log(1.0 + u);
}
// log(x), accurate near 1.
fn log_(x: f32) -> f32 {
    if (x >= 0.5 && x <= 2.0) { return atanh2_((x - 1.0) / (x + 1.0)); }
    return log(x);
}
// exp(x) - 1 without cancellation near 0: the Taylor series to x^11 / 11!
// in Horner form for |x| < 0.5 (straight-line code: it is also inlined
// into GEMM and conv epilogues through tanh_).
fn expm1_(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        return x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 +
               x * (0.0083333333333333332 + x * (0.0013888888888888889 + x * (0.00019841269841269841 +
               x * (2.4801587301587302e-05 + x * (2.7557319223985893e-06 + x * (2.7557319223985888e-07 +
               x * 2.505210838544172e-08))))))))));
    }
    return exp(x) - 1.0;
}
// sin(x) with relative accuracy near 0, where GPU builtins are only
// accurate in absolute terms (seen on the NVIDIA driver: 5e-4 relative at
// x = 3e-4): the Taylor series x - x^3/6 + x^5/120 - x^7/5040 for
// |x| < 0.125 (next term below 2e-13 relative), the builtin elsewhere.
fn sin_(x: f32) -> f32 {
    if (abs(x) >= 0.125) { return sin(x); }
    let x2 = x * x;
    return x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0)));
}

// tanh(x) = e / (e + 2) with e = expm1(2|x|).
fn tanh_(x: f32) -> f32 {
    let e = expm1_(2.0 * min(abs(x), 15.0));
    let t = e / (e + 2.0);
    return select(select(t, -t, x < 0.0), x, isnan_(x));
}
// erfc(z) for z >= 0, relative error below 1.2e-7 (Numerical Recipes 6.2).
fn erfc_pos(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(-z * z + p);
}
// erf: Maclaurin series below 1 (to the x^25 term, Horner form in x^2:
// straight-line code, also inlined into epilogues through gelu_), 1 - erfc
// above.
fn erf_(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a < 1.0) {
        let z = a * a;
        let s = 1.0 + z * (-0.33333333333333331 + z * (0.10000000000000001 + z * (-0.023809523809523808 +
                z * (0.0046296296296296294 + z * (-0.00075757575757575758 + z * (0.00010683760683760684 +
                z * (-1.3227513227513228e-05 + z * (1.4589169000933706e-06 + z * (-1.4503852223150468e-07 +
                z * (1.3122532963802806e-08 + z * (-1.0892221037148573e-09 + z * 8.3507027951472397e-11)))))))))));
        r = 1.1283791670955126 * a * s;
    } else {
        r = 1.0 - erfc_pos(a);
    }
    return select(r, -r, x < 0.0);
}
// Gelu = 0.5 x (1 + erf(x / sqrt 2)); for x < 0 the bracket is erfc(|x| / sqrt 2).
fn gelu_(x: f32) -> f32 {
    let u = x * 0.7071067811865476;
    if (x < 0.0) { return 0.5 * x * erfc_pos(-u); }
    return 0.5 * x * (1.0 + erf_(u));
}
fn softplus_(x: f32) -> f32 {
    if (x > 30.0) { return x; }
    return log1p_(exp(x));
}
// ONNX Pow on f32, as C's powf: negative bases with integral exponents
// are defined; 1^y = x^0 = 1 (y or x NaN included), (-1)^+-inf = 1; other
// NaN operands give NaN; infinite operands and zero bases by the signs
// and parity, never through log2 of 0, 1 or inf.
fn pow_(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (isnan_(a) || isnan_(b)) { return nan_(a + b); }
    let ia = abs(a);
    if (isinf_(b)) {
        if (ia == 1.0) { return 1.0; }
        return select(0.0, b * b, (ia > 1.0) == (b > 0.0));
    }
    let odd = b == floor(b) && (b * 0.5) != floor(b * 0.5);
    let neg = bitcast<u32>(a) >= 0x80000000u;
    if (isinf_(a)) { /* inf^b: 0 or inf, odd powers keep the sign */
        let m = select(0.0, ia, b > 0.0);
        return select(m, -m, neg && odd);
    }
    if (a == 0.0) { /* 0^b: 0 or 1 / 0 = inf, odd powers keep the sign */
        let m = select(0.0, 1.0 / ia, b < 0.0);
        return select(m, -m, neg && odd);
    }
    if (a > 0.0) { return exp2(b * log2(a)); }
    if (b != floor(b)) { return nan_(a); }
    let m = exp2(b * log2(-a));
    return select(m, -m, odd);
}
// sinh(x) = (m + m / (m + 1)) / 2 with m = expm1(|x|), odd; m / (m + 1)
// is 1 past 2^24 (and inf / inf once m overflows); sinh(+-inf) = +-inf,
// sinh(NaN) = NaN.
fn sinh_(x: f32) -> f32 {
    let m = expm1_(abs(x));
    let r = 0.5 * (m + select(m / (m + 1.0), 1.0, m > 16777216.0));
    return select(select(r, -r, x < 0.0), x, nonfinite_(x));
}
// asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x|, odd; for
// a > 2^26, where a^2 would overflow and 1 / (4 a^2) is below an ULP,
// log(a) + log(2); asinh(+-inf) = +-inf, asinh(NaN) = NaN.
fn asinh_(x: f32) -> f32 {
    let a = abs(x);
    var r = log1p_(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    if (a > 67108864.0) { r = log(a) + 0.6931471805599453; }
    return select(select(r, -r, x < 0.0), x, nonfinite_(x));
}
// acosh(x): NaN below 1 (and for NaN), log(x) + log(2) past 2^26, +inf
// for +inf.
fn acosh_(x: f32) -> f32 {
    var r = acosh(x);
    if (x > 67108864.0) { r = log(x) + 0.6931471805599453; }
    return select(select(r, x, isinf_(x)), nan_(x), isnan_(x) || x < 1.0);
}
// x / (1 + |x|); NaN for +-inf as the CPU computes it (inf / inf), where
// the NVIDIA driver's division gave -0 for -inf.
// Softsign: x / (1 + |x|), which rounds to +-1 from |x| >= 2^25 on (the
// NVIDIA driver divides through a reciprocal that flushes to 0 for huge
// divisors, giving -0 for -3.4e38); NaN for NaN and +-inf, as the CPU.
fn softsign_(x: f32) -> f32 {
    let r = select(x / (1.0 + abs(x)), sign(x), abs(x) >= 33554432.0);
    return select(r, nan_(x), nonfinite_(x));
}
// atanh(x) = log1p(2x / (1 - x)) / 2: NaN beyond [-1, 1] and for NaN
// (WGSL leaves atanh there to the implementation), +-inf at +-1.
fn atanh_(x: f32) -> f32 {
    let r = 0.5 * log1p_(2.0 * x / (1.0 - x));
    return select(r, nan_(x), !(abs(x) <= 1.0));
}
