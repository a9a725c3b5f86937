// Elementwise unary f32 op: y[i] = f(x[i]), f chosen by the override OP
// (codes: enum un_code in lower_elementwise.c). alpha, beta, gamma are the
// op's attributes (LeakyRelu alpha, HardSigmoid alpha/beta, Clip min/max,
// Selu alpha/gamma, ...). Semantics: the ONNX operators of the same name.
// Layout: x and y contiguous, n elements. One invocation per element; the
// 1-D grid folds into y beyond 65,535 workgroups.
// Params: x_off, y_off (element offsets inside each binding), n, alpha,
// beta, gamma.
struct Params {
    x_off: u32, y_off: u32, n: u32, _p0: u32,
    alpha: f32, beta: f32, gamma: f32, _p1: u32,
};
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
override OP: u32 = 0u;

// log(1 + u) without losing u when it is tiny (u > -1).
fn log1p_(u: f32) -> f32 {
    let v = 1.0 + u;
    if (v == 1.0) { return u; }
    return log(v) * u / (v - 1.0);
}
// exp(x) - 1 without cancellation near 0.
fn expm1_(x: f32) -> f32 {
    if (abs(x) < 1e-5) { return x + 0.5 * x * x; }
    if (abs(x) < 0.5) {
        let u = exp(x);
        return (u - 1.0) * x / log(u);
    }
    return exp(x) - 1.0;
}
fn tanh_(x: f32) -> f32 { return tanh(clamp(x, -15.0, 15.0)); }
// erf: Maclaurin series below 1 (13 terms, < 1e-8), Abramowitz & Stegun
// 7.1.26 above (absolute error < 1.5e-7 where erf > 0.84).
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
        let t = 1.0 / (1.0 + 0.3275911 * a);
        let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        r = 1.0 - poly * exp(-a * a);
    }
    return select(r, -r, x < 0.0);
}
fn softplus_(x: f32) -> f32 {
    if (x > 30.0) { return x; }
    return log1p_(exp(x));
}

fn apply(x: f32) -> f32 {
    switch OP {
        case 0u: { return max(x, 0.0); }                                    // Relu
        case 1u: { return 1.0 / (1.0 + exp(-x)); }                          // Sigmoid
        case 2u: { return tanh_(x); }                                       // Tanh
        case 3u: { return exp(x); }                                         // Exp
        case 4u: { return log(x); }                                         // Log
        case 5u: { return sqrt(x); }                                        // Sqrt
        case 6u: { return abs(x); }                                         // Abs
        case 7u: { return -x; }                                             // Neg
        case 8u: { return erf_(x); }                                        // Erf
        case 9u: { return max(0.0, min(1.0, P.alpha * x + P.beta)); }       // HardSigmoid
        case 10u: { return x * max(0.0, min(1.0, x / 6.0 + 0.5)); }         // HardSwish
        case 11u: { return select(P.alpha * x, x, x >= 0.0); }              // LeakyRelu
        case 12u: { return min(max(x, P.alpha), P.beta); }                  // Clip [alpha, beta]
        case 13u: { return 0.5 * x * (1.0 + erf_(x * 0.7071067811865476)); } // Gelu
        case 14u: { return 0.5 * x * (1.0 + tanh_(0.7978845608028654 * (x + 0.044715 * x * x * x))); } // Gelu tanh
        case 15u: { return select(P.alpha * expm1_(x), x, x >= 0.0); }      // Elu
        case 16u: { return select(P.gamma * P.alpha * expm1_(x), P.gamma * x, x > 0.0); } // Selu
        case 17u: { return max(0.0, x) + min(0.0, P.alpha * expm1_(x / P.alpha)); } // Celu
        case 18u: { return softplus_(x); }                                  // Softplus
        case 19u: { return x / (1.0 + abs(x)); }                            // Softsign
        case 20u: { return x * tanh_(softplus_(x)); }                       // Mish
        case 21u: { return 1.0 / x; }                                       // Reciprocal
        case 22u: { return floor(x); }                                      // Floor
        case 23u: { return ceil(x); }                                       // Ceil
        case 24u: { return round(x); }                                      // Round (half to even)
        case 25u: { return sin(x); }                                        // Sin
        case 26u: { return cos(x); }                                        // Cos
        case 27u: { return tan(x); }                                        // Tan
        case 28u: { return sign(x); }                                       // Sign
        case 29u: { return select(0.0, x, x > P.alpha); }                   // ThresholdedRelu
        case 30u: { return atan2(x, sqrt((1.0 - x) * (1.0 + x))); }         // Asin (the builtin is coarse on llvmpipe)
        case 31u: { return atan2(sqrt((1.0 - x) * (1.0 + x)), x); }         // Acos
        case 32u: { return atan(x); }                                       // Atan
        case 33u: { return sinh(x); }                                       // Sinh
        case 34u: { return cosh(x); }                                       // Cosh
        case 35u: { return asinh(x); }                                      // Asinh
        case 36u: { return acosh(x); }                                      // Acosh
        case 37u: { return atanh(x); }                                      // Atanh
        case 38u: { return x; }                                             // Identity
        case 39u: { return x / P.alpha; }                                   // divide by a constant (Mean)
        default: { return x; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.n) { return; }
    Y[P.y_off + i] = apply(X[P.x_off + i]);
}
