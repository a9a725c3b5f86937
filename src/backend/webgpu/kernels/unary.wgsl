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

//!include ew_lib

fn apply(x: f32) -> f32 {
    switch OP {
        case 0u: { return max(x, 0.0); }                                    // Relu
        case 1u: { return 1.0 / (1.0 + exp(-x)); }                          // Sigmoid
        case 2u: { return tanh_(x); }                                       // Tanh
        case 3u: { return exp(x); }                                         // Exp
        case 4u: { return log_(x); }                                        // Log
        case 5u: { return sqrt(x); }                                        // Sqrt
        case 6u: { return abs(x); }                                         // Abs
        case 7u: { return -x; }                                             // Neg
        case 8u: { return erf_(x); }                                        // Erf
        case 9u: { return max(0.0, min(1.0, P.alpha * x + P.beta)); }       // HardSigmoid
        case 10u: { return x * max(0.0, min(1.0, x / 6.0 + 0.5)); }         // HardSwish
        case 11u: { return select(P.alpha * x, x, x >= 0.0); }              // LeakyRelu
        case 12u: { return min(max(x, P.alpha), P.beta); }                  // Clip [alpha, beta]
        case 13u: { return gelu_(x); }                                      // Gelu
        case 14u: { return x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))); } // Gelu tanh: 0.5 (1 + tanh y) = 1 / (1 + e^-2y)
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
        case 25u: { return sin_(x); }                                       // Sin
        case 26u: { return cos(x); }                                        // Cos
        case 27u: { return select(tan(x), sin_(x) / cos(x), abs(x) < 0.125); } // Tan
        case 28u: { return sign(x); }                                       // Sign
        case 29u: { return select(0.0, x, x > P.alpha); }                   // ThresholdedRelu
        case 30u: { return atan2(x, sqrt((1.0 - x) * (1.0 + x))); }         // Asin (the builtin is coarse on llvmpipe)
        case 31u: { return atan2(sqrt((1.0 - x) * (1.0 + x)), x); }         // Acos
        case 32u: { return atan(x); }                                       // Atan
        case 33u: { let m = expm1_(abs(x)); let r = 0.5 * (m + m / (m + 1.0)); return select(r, -r, x < 0.0); } // Sinh
        case 34u: { return cosh(x); }                                       // Cosh
        case 35u: { let a = abs(x); let r = log1p_(a + a * a / (1.0 + sqrt(1.0 + a * a))); return select(r, -r, x < 0.0); } // Asinh
        case 36u: { return acosh(x); }                                      // Acosh
        case 37u: { return 0.5 * log1p_(2.0 * x / (1.0 - x)); }            // Atanh
        case 38u: { return x; }                                             // Identity
        case 39u: { return x / P.alpha; }                                   // divide by a constant (Mean)
        case 40u: { return select(select(0.0, x - P.beta, x > P.alpha), x + P.beta, x < -P.alpha); } // Shrink (alpha lambd, beta bias)
        case 41u: { return x / (1.0 + exp(-P.alpha * x)); }                 // Swish
        default: { return x; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.n) { return; }
    Y[P.y_off + i] = apply(X[P.x_off + i]);
}
