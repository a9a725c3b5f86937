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
// Signed zeros: wgpu's SPIR-V declares no SignedZeroInfNanPreserve, so a
// Vulkan driver may ignore the sign of a zero in float instructions: it
// may make a float select on a comparison of its own operands a hardware
// min or max (seen on the H200: Max, Min, Clip, Relu and Scatter's max/min
// gave +0 for the CPU's -0 and back, and NaN where the CPU had a number),
// and a typeless IR such as Mesa's NIR applies such rules to a select of
// u32 bits too (seen on lavapipe: select(0.0, -1.0, x < 0.0) on the bits
// gave -0). So every choice between float values here decides by integer
// comparisons of the bits (lt_) and takes the bits of the operand it names
// (pick_): no float instruction is left for such a rule, and the result is
// the CPU's `c ? t : f`, ties of -0 and +0 included. NaN operands are
// decided apart by isnan_, as the CPU's comparisons are false for them.
// About four integer instructions per comparison.
// x rounded to the nearest binary16 (ties to even) and back, as the CPU's
// rlx_f32_to_f16: +-inf from 65520 on, steps of 2^-24 below 2^-14, NaN kept.
// By its bits: unpack2x16float(pack2x16float(x)) may be folded to x by a
// shader compiler (seen on lavapipe: a Cast to f16 inside a fused chain
// did not round), and WGSL leaves its result past 65504 open.
fn round16_(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) { return x; }
    if (a >= 0x477ff000u) { return bitcast<f32>((b & 0x80000000u) | 0x7f800000u); }
    if (a < 0x38800000u) { return round(x * 16777216.0) * 5.9604644775390625e-8; }
    let r = a + 0xfffu + ((a >> 13u) & 1u);
    return bitcast<f32>((b & 0x80000000u) | (r & 0xffffe000u));
}
fn pick_(f: f32, t: f32, c: bool) -> f32 { return bitcast<f32>(select(bitcast<u32>(f), bitcast<u32>(t), c)); }
// An i32 with the order of f32 for non-NaN x, -0 and +0 both 0 (a negative
// x, sign-magnitude, becomes 2^31 - its bits, wrapping: INT32_MIN - them).
fn key_(x: f32) -> i32 {
    let u = bitcast<u32>(x);
    return bitcast<i32>(select(u, 0x80000000u - u, u >= 0x80000000u));
}
// x < y for non-NaN x, y (a NaN counts beyond an infinity of its sign).
fn lt_(x: f32, y: f32) -> bool { return key_(x) < key_(y); }
// |m| with the sign bit of s (copysign on the bits: -0 keeps its sign).
fn with_sign_(m: f32, s: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}
// Sign as the CPU: 1 or -1, +0 for -0 and +0, NaN x itself (on the bits).
fn sign_(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    let s = select(0u, 0x3f800000u | (u & 0x80000000u), (u & 0x7fffffffu) - 1u < 0x7f800000u);
    return pick_(bitcast<f32>(s), x, isnan_(x));
}
// x clamped to [lo, hi] as the CPU's rlx_ew_clampf: hi wins when lo > hi,
// a NaN x passes through, a NaN bound is ignored, a tie keeps x (-0 and
// +0 included).
fn clamp_(x: f32, lo: f32, hi: f32) -> f32 {
    let y = pick_(x, lo, lt_(x, lo) && !isnan_(lo));
    return pick_(pick_(y, hi, lt_(hi, y) && !isnan_(hi)), x, isnan_(x));
}
// a / b correctly rounded (round to nearest even), as the CPU's f32 division,
// by integer long division of the significands: WGSL's `/` may be 2.5 ulp
// off (NVIDIA's is: QuantizeLinear levels came out one apart on the H200)
// and its fma may be unfused, so no float trick is exact everywhere.
// Zeros, infinities, NaNs, subnormals and quotients outside the normal
// range take `/` as it is.
fn div_rn_(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let ea = i32((ua >> 23u) & 0xffu);
    let eb = i32((ub >> 23u) & 0xffu);
    if (ea == 0 || ea == 255 || eb == 0 || eb == 255) { return a / b; }
    let ma = (ua & 0x7fffffu) | 0x800000u;
    let mb = (ub & 0x7fffffu) | 0x800000u;
    var e = ea - eb + 127;
    var rem = ma;
    if (ma < mb) { rem = ma << 1u; e = e - 1; } // the quotient's leading bit at 2^0
    var q = 0u;
    for (var i = 0u; i < 25u; i = i + 1u) { // 24 significand bits and a guard bit
        let ge = rem >= mb;
        q = (q << 1u) | select(0u, 1u, ge);
        rem = (rem - select(0u, mb, ge)) << 1u;
    }
    var m = q >> 1u;
    if ((q & 1u) == 1u && (rem != 0u || (m & 1u) == 1u)) { m = m + 1u; }
    if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }
    if (e <= 0 || e >= 255) { return a / b; }
    return bitcast<f32>(((ua ^ ub) & 0x80000000u) | (u32(e) << 23u) | (m & 0x7fffffu));
}
// Round half to even (WGSL's round), NaN to v: QuantizeLinear's level less
// the zero point (NaN: v, the type's minimum less the zero point).
fn rint_or_(x: f32, v: f32) -> f32 { return pick_(round(x), v, isnan_(x)); }
// rint_or_(div_rn_(x, s), v), mostly without the long division: q = x (1 /
// s) is within 4 ulp of the correctly rounded quotient c (each of `/` and
// `*` at most 2.5 ulp off, WGSL's bound), so where q's fraction is farther
// than 2^-19 |q| (16 ulp) from 1/2, c lies on the same side of the same
// half-integer and rounds to round(q) (c is no tie either). Near a
// half-integer, past 2^22 (ulp >= 1/2), for a subnormal x (which a GPU may
// flush) and for inf and NaN: the long division.
fn qround_(x: f32, s: f32, v: f32) -> f32 {
    let q = x * (1.0 / s);
    let aq = abs(q);
    if (aq < 4194304.0 && (abs(x) >= 1.17549435e-38 || x == 0.0)) {
        if (abs((q - floor(q)) - 0.5) > aq * 1.9073486328125e-6) { return round(q); }
    }
    return rint_or_(div_rn_(x, s), v);
}
// Max and Min of ONNX as the CPU: NaN if either operand is NaN, else
// x > y ? x : y (x < y ? x : y), so of -0 and +0 the second operand.
fn max_(x: f32, y: f32) -> f32 { return pick_(pick_(y, x, lt_(y, x)), nan_(x), isnan_(x) || isnan_(y)); }
fn min_(x: f32, y: f32) -> f32 { return pick_(pick_(y, x, lt_(x, y)), nan_(x), isnan_(x) || isnan_(y)); }

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
// log2(x) for x > 0, subnormal x included: WGSL lets an implementation
// flush a subnormal operand (lavapipe's log(1e-40) gave -88.0, log(2^-127),
// where it is -92.1), so a positive subnormal, whose bits u are its
// significand times 2^149, is log2(f32(u)) - 149: f32(u) is an exact normal
// number and the bit test is not a float comparison a device may flush.
fn log2_(x: f32) -> f32 {
    let u = bitcast<u32>(x);
    if (u > 0u && u < 0x800000u) { return log2(f32(u)) - 149.0; }
    return log2(x);
}
// log(x), accurate near 1; subnormal x as log2_ (149 ln 2 = 103.2789...).
fn log_(x: f32) -> f32 {
    if (x >= 0.5 && x <= 2.0) { return atanh2_((x - 1.0) / (x + 1.0)); }
    let u = bitcast<u32>(x);
    if (u > 0u && u < 0x800000u) { return log(f32(u)) - 103.27892990343185; }
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
// Sin, Cos and Tan of any finite f32, as the CPU's libm: WGSL's sin, cos
// and tan are accurate only near [-pi, pi] (the NVIDIA driver's sin(2^31)
// is -1 where it is -0.97) and only absolutely near 0, so the argument is
// reduced here and the functions are polynomials.
//
// Reduction (Payne and Hanek, "Radian reduction for trigonometric
// functions", 1983): a = m 2^s with m the 24-bit integer significand, and
// a 2 / pi = m 2^s sum_j b_j 2^-j over the bits b_j of 2 / pi. Bits with
// j < s - 1 add multiples of 4 (a whole turn) and are dropped; the 96
// bits from j = s - 1 on, as an integer w, give a 2 / pi = m w 2^-94 mod 4
// with an error below 2^-70. m w is formed exactly in 32-bit limbs: its
// bits 94-95 are the quadrant q, bits 30-93 the fraction f, which becomes
// r = f pi / 2 in [-pi / 4, pi / 4] (f >= 1/2 is taken as f - 1, q + 1).
// 64 fraction bits cover the closest approach of an f32 to a multiple of
// pi / 2. Integer arithmetic only, so every device reduces alike.
struct trig_red_ { r: f32, q: u32 };
// The 64-bit product a b as (low word, high word), from 16-bit halves.
fn mul_wide_(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
// a >= 0, finite: r and the quadrant q (mod 4) with a = r + q pi / 2 (mod 2 pi).
fn trig_reduce_(a: f32) -> trig_red_ {
    if (a <= 0.7853981633974483) { return trig_red_(a, 0u); }
    // 2 / pi in 32-bit words after one word of zeros (its integer part), to 2^-224
    var t = array<u32, 8>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u,
                          0xfe5163abu);
    let u = bitcast<u32>(a);
    let m = (u & 0x7fffffu) | 0x800000u;
    let pos = (u >> 23u) - 120u; // bit j = s - 1 of 2 / pi in t, s = exponent - 150; 6 ... 134
    let k = pos >> 5u;
    let sh = pos & 31u;
    var w: array<u32, 3>;
    for (var n = 0u; n < 3u; n = n + 1u) {
        w[n] = (t[k + n] << sh) | select(t[k + n + 1u] >> (32u - sh), 0u, sh == 0u);
    }
    let p2 = mul_wide_(m, w[2]);
    let p1 = mul_wide_(m, w[1]);
    let l0 = p2.x;
    let l1 = p2.y + p1.x;
    let l2 = p1.y + m * w[0] + u32(l1 < p1.x);
    var q = l2 >> 30u;
    var fh = (l2 << 2u) | (l1 >> 30u);
    var fl = (l1 << 2u) | (l0 >> 30u);
    let neg = fh >= 0x80000000u;
    if (neg) { q = q + 1u; fl = ~fl + 1u; fh = ~fh + u32(fl == 0u); }
    let f = (f32(fh) + f32(fl) * 2.3283064365386963e-10) * 2.3283064365386963e-10;
    let r = f * 1.5707963267948966;
    return trig_red_(pick_(r, -r, neg), q & 3u);
}
// sin and cos on [-pi / 4, pi / 4]: Taylor series to r^11 / 11! and
// r^12 / 12! (next terms below 2^-30 relative), relative accuracy near 0.
fn sin_poly_(r: f32) -> f32 {
    let z = r * r;
    return r + r * z * (-0.16666666666666666 + z * (0.008333333333333333 + z * (-0.0001984126984126984 +
           z * (2.7557319223985893e-06 + z * -2.505210838544172e-08))));
}
fn cos_poly_(r: f32) -> f32 {
    let z = r * r;
    return 1.0 + z * (-0.5 + z * (0.041666666666666664 + z * (-0.001388888888888889 + z * (2.48015873015873e-05 +
           z * (-2.755731922398589e-07 + z * 2.08767569878681e-09)))));
}
// sin, odd: NaN for NaN and +-inf.
fn sin_(x: f32) -> f32 {
    let t = trig_reduce_(abs(x));
    var v = pick_(sin_poly_(t.r), cos_poly_(t.r), (t.q & 1u) == 1u);
    v = pick_(v, -v, (t.q & 2u) == 2u);
    v = pick_(v, -v, x < 0.0);
    return pick_(pick_(v, x, x == 0.0), nan_(x), nonfinite_(x));
}
// cos, even: NaN for NaN and +-inf.
fn cos_(x: f32) -> f32 {
    let t = trig_reduce_(abs(x));
    let v = pick_(cos_poly_(t.r), sin_poly_(t.r), (t.q & 1u) == 1u);
    return pick_(pick_(v, -v, ((t.q + 1u) & 2u) == 2u), nan_(x), nonfinite_(x));
}
// tan = sin / cos of the reduced argument (-cos / sin in odd quadrants), odd:
// NaN for NaN and +-inf.
fn tan_(x: f32) -> f32 {
    let t = trig_reduce_(abs(x));
    let s = sin_poly_(t.r);
    let c = cos_poly_(t.r);
    var v = pick_(s / c, -c / s, (t.q & 1u) == 1u);
    v = pick_(v, -v, x < 0.0);
    return pick_(pick_(v, x, x == 0.0), nan_(x), nonfinite_(x));
}

// tanh(x) = e / (e + 2) with e = expm1(2|x|).
fn tanh_(x: f32) -> f32 {
    let a = abs(x);
    let e = expm1_(2.0 * pick_(a, 15.0, lt_(15.0, a)));
    let t = e / (e + 2.0);
    return pick_(with_sign_(t, x), x, isnan_(x));
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
    return with_sign_(r, x);
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
        return pick_(0.0, b * b, (ia > 1.0) == (b > 0.0));
    }
    let odd = b == floor(b) && (b * 0.5) != floor(b * 0.5);
    let neg = bitcast<u32>(a) >= 0x80000000u;
    if (isinf_(a)) { /* inf^b: 0 or inf, odd powers keep the sign */
        let m = pick_(0.0, ia, b > 0.0);
        return pick_(m, -m, neg && odd);
    }
    if (a == 0.0) { /* 0^b: 0 or 1 / 0 = inf, odd powers keep the sign */
        let m = pick_(0.0, 1.0 / ia, b < 0.0);
        return pick_(m, -m, neg && odd);
    }
    if (a > 0.0) { return exp2(b * log2_(a)); }
    if (b != floor(b)) { return nan_(a); }
    let m = exp2(b * log2_(-a));
    return pick_(m, -m, odd);
}
// sinh(x) = (m + m / (m + 1)) / 2 with m = expm1(|x|), odd; past |x| = 16
// (where e^-|x| is below 2^-46 of e^|x|) e^|x| / 2 = half_exp_(|x|), which
// stays finite up to sinh's own overflow (|x| = 89.4; e^|x| overflows from
// 88.7 on); sinh(+-inf) = +-inf, sinh(NaN) = NaN.
// e^a / 2 = e^(a - ln 2) for a in [16, 89.4]: one exponential, no product
// that could overflow early (the H200 computed (h / 2) h with h = e^(a / 2)
// as if reassociated, inf from a = 88.7 on). ln 2 = LN2_HI + LN2_LO with
// LN2_HI a multiple of 2^-15, so a - LN2_HI is exact for a < 128; e^-LN2_LO is the
// factor 1 - 1.43e-6 (a product below 1: no overflow).
fn half_exp_(a: f32) -> f32 { return exp(a - 0.693145751953125) * 0.99999857139; }
fn sinh_(x: f32) -> f32 {
    let a = abs(x);
    let m = expm1_(a);
    let r = pick_(0.5 * (m + m / (m + 1.0)), half_exp_(a), a > 16.0);
    return pick_(with_sign_(r, x), x, nonfinite_(x));
}
// cosh(x) = (e + 1 / e) / 2 with e = e^|x|, even; past |x| = 16
// half_exp_(|x|) as sinh_; cosh(+-inf) = +inf, cosh(NaN) = NaN.
fn cosh_(x: f32) -> f32 {
    let a = abs(x);
    let e = exp(a);
    let r = pick_(0.5 * (e + 1.0 / e), half_exp_(a), a > 16.0);
    return pick_(r, bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu), nonfinite_(x));
}
// asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = |x|, odd; for
// a > 2^26, where a^2 would overflow and 1 / (4 a^2) is below an ULP,
// log(a) + log(2); asinh(+-inf) = +-inf, asinh(NaN) = NaN.
fn asinh_(x: f32) -> f32 {
    let a = abs(x);
    var r = log1p_(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    if (a > 67108864.0) { r = log(a) + 0.6931471805599453; }
    return pick_(with_sign_(r, x), x, nonfinite_(x));
}
// acosh(x): NaN below 1 (and for NaN), log(x) + log(2) past 2^26, +inf
// for +inf.
fn acosh_(x: f32) -> f32 {
    var r = acosh(x);
    if (x > 67108864.0) { r = log(x) + 0.6931471805599453; }
    return pick_(pick_(r, x, isinf_(x)), nan_(x), isnan_(x) || x < 1.0);
}
// x / (1 + |x|); NaN for +-inf as the CPU computes it (inf / inf), where
// the NVIDIA driver's division gave -0 for -inf.
// Softsign: x / (1 + |x|), which rounds to +-1 from |x| >= 2^25 on (the
// NVIDIA driver divides through a reciprocal that flushes to 0 for huge
// divisors, giving -0 for -3.4e38); NaN for NaN and +-inf, as the CPU.
fn softsign_(x: f32) -> f32 {
    let r = pick_(x / (1.0 + abs(x)), with_sign_(1.0, x), abs(x) >= 33554432.0);
    return pick_(r, nan_(x), nonfinite_(x));
}
// atanh(x) = log1p(2x / (1 - x)) / 2: NaN beyond [-1, 1] and for NaN
// (WGSL leaves atanh there to the implementation), +-inf at +-1.
fn atanh_(x: f32) -> f32 {
    let r = 0.5 * log1p_(2.0 * x / (1.0 - x));
    return pick_(r, nan_(x), !(abs(x) <= 1.0));
}
