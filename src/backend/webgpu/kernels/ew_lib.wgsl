// Library, not a kernel (no entry point): f32 functions that generated
// kernels (src/backend/webgpu/wgsl_gen.c: fused elementwise programs, the
// fused-activation epilogue, attention) paste in front of their code, and
// that unary.wgsl and binary.wgsl include ("//!include ew_lib"), so a fused
// op computes what the unfused one does. WGSL bounds log's error only
// absolutely on [0.5, 2], and llvmpipe's exp-based builtins (and the
// NVIDIA driver's sin) lose relative accuracy near 0 and 1, so these use
// series there.

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
// exp(x) - 1 without cancellation near 0.
fn expm1_(x: f32) -> f32 {
    if (abs(x) < 0.5) {
        var term = x;
        var sum = x;
        for (var k = 2u; k < 12u; k = k + 1u) {
            term = term * x / f32(k);
            sum = sum + term;
        }
        return sum;
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
    return select(t, -t, x < 0.0);
}
// erfc(z) for z >= 0, relative error below 1.2e-7 (Numerical Recipes 6.2).
fn erfc_pos(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(-z * z + p);
}
// erf: Maclaurin series below 1, 1 - erfc above.
fn erf_(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a < 1.0) {
        let x2 = a * a;
        var term = a;
        var sum = a;
        for (var k = 1u; k < 13u; k = k + 1u) {
            term = -term * x2 / f32(k);
            sum = sum + term / f32(2u * k + 1u);
        }
        r = 1.1283791670955126 * sum;
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
// ONNX Pow on f32: negative bases with integral exponents are defined.
fn pow_(a: f32, b: f32) -> f32 {
    if (b == 0.0) { return 1.0; }
    if (a > 0.0) { return exp2(b * log2(a)); }
    if (a == 0.0) { return select(0.0, 1.0 / abs(a), b < 0.0); }
    if (b != floor(b)) { let z = a - a; return z / z; }
    let m = exp2(b * log2(-a));
    let odd = (b * 0.5) != floor(b * 0.5);
    return select(m, -m, odd);
}
