// Fused activation epilogue (not a kernel: kernels pull it in with a line
// "//!include act"). act_apply(kind, x, alpha, beta) computes the activation
// of src/ir/ops/act.h (rlx_act_apply, ONNX semantics of the op it replaces)
// in f32; `kind` is an rlx_act_kind, normally an override constant so that
// the switch folds away:
//   0 none, 1 Relu, 2 Clip(alpha = min, beta = max), 3 HardSigmoid(alpha,
//   beta), 4 HardSwish, 5 Sigmoid, 6 SiLU, 7 Gelu (erf), 8 Gelu (tanh),
//   9 LeakyRelu(alpha), 10 Tanh.
// erf: Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7); tanh through
// exp(-2|x|) with a series below 1e-3 (no overflow for any finite x).
// Relu and Clip compare like the CPU kernels (Relu(NaN) = 0, Clip passes
// NaN through); alpha and beta come from Params (they may be infinite).

fn act_erf(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * z);
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let r = 1.0 - poly * exp(-z * z);
    return select(r, -r, x < 0.0);
}

fn act_tanh(x: f32) -> f32 {
    let z = abs(x);
    let e = exp(-2.0 * z);
    var r = (1.0 - e) / (1.0 + e);
    if (z < 1e-3) { r = z - z * z * z / 3.0; }
    return select(r, -r, x < 0.0);
}

fn act_apply(kind: u32, x: f32, alpha: f32, beta: f32) -> f32 {
    switch kind {
        case 1u: { return select(0.0, x, x > 0.0); }
        case 2u: {
            let lo = select(x, alpha, x < alpha);
            return select(lo, beta, lo > beta);
        }
        case 3u: { return max(0.0, min(1.0, alpha * x + beta)); }
        case 4u: { return x * max(0.0, min(1.0, x / 6.0 + 0.5)); }
        case 5u: { return 1.0 / (1.0 + exp(-x)); }
        case 6u: { return x / (1.0 + exp(-x)); }
        case 7u: { return 0.5 * x * (1.0 + act_erf(x * 0.70710678118654752)); }
        case 8u: { return 0.5 * x * (1.0 + act_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x))); }
        case 9u: { return select(alpha * x, x, x >= 0.0); }
        case 10u: { return act_tanh(x); }
        default: { return x; }
    }
}
