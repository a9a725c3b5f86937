// Second pass of a split-K GEMM (gemm.wgsl with SPLITK): adds the partial
// sums of the k slices in slice order and applies the epilogue,
//   y[m, n] = act(alpha * sum_{s ascending} part[s, m, n] + beta * bias(m, n)
//                 [+ r(m, n)])
// part is [nsplit][M][N] row-major (the scratch); bias(m, n) =
// C[m * bias_sm + n * bias_sn]; y row stride y_sm; RES: the residual
// r(m, n) = R[r_off + m * y_sm + n] (laid out like y; bound last, so r_off
// is the last Params word). One invocation per
// output element (1-D grid, folded past 65,535 workgroups).
// Semantics: ONNX MatMul-13 / Gemm-13 with the act.h epilogue.
//!elem f32 f16
//!params p_off: u32, c_off: u32, y_off: u32, M: u32, N: u32, nsplit: u32, has_bias: u32, alpha: f32,
//!params beta: f32, bias_sm: u32, bias_sn: u32, y_sm: u32, act_alpha: f32, act_beta: f32, total: u32,
//!params r_off: u32
//!bind Part: array<f32>, C: array<T>, Y: array<T>, R: array<T>
override ACT: u32 = 0u;
override RES: bool = false;

//!include act

//!main1d i < P.total {
    let m = i / P.N;
    let n = i % P.N;
    var s = 0.0;
    for (var k = 0u; k < P.nsplit; k = k + 1u) {
        s = s + Part[P.p_off + k * P.total + i];
    }
    var x = P.alpha * s;
    if (P.has_bias != 0u) { x = x + P.beta * f32(C[P.c_off + m * P.bias_sm + n * P.bias_sn]); }
    if (RES) { x = x + f32(R[P.r_off + m * P.y_sm + n]); }
    Y[P.y_off + m * P.y_sm + n] = T(act_apply(ACT, x, P.act_alpha, P.act_beta));
}
