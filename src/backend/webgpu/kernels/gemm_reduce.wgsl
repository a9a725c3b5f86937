// Second pass of a split-K GEMM (gemm.wgsl with SPLITK): adds the partial
// sums of the k slices in slice order and applies the epilogue,
//   y[b, m, n] = act(alpha * sum_{s ascending} part[s, b, m, n]
//                    + beta * bias(b, m, n) [+ r(b, m, n)])
// part is [nsplit][nbatch][M][N] row-major (the scratch; total = nbatch *
// M * N outputs, mn = M * N); batch item b decomposes over bdims
// (outermost first, unused slots 1) into its bases ybase(b) =
// sum_i coord_i * y_bs[i] and cbase(b) likewise with bias_bs;
// bias(b, m, n) = C[cbase(b) + m * bias_sm + n * bias_sn]; y[b, m, n] at
// Y[ybase(b) + m * y_sm + n]; RES: the residual
// r(b, m, n) = R[r_off + ybase(b) + m * y_sm + n] (laid out like y; bound
// last, so r_off is the last Params word). BATCHED false (one batch
// item) skips the decomposition: bases 0, the unbatched kernel's cost. One
// invocation per output element (1-D grid, folded past 65,535 workgroups).
// Semantics: ONNX MatMul-13 / Gemm-13 / Conv-11 with the act.h epilogue.
//!elem f32 f16
//!audited i < total; Part[k * total + i], k < nsplit (window nsplit * total); C only with has_bias, at
//!audited m < M, n < N; Y and R at y's index (windows ext_y, lower_gemm.c); bdims[d], d in 0..3
//!params p_off: u32, c_off: u32, y_off: u32, M: u32, N: u32, nsplit: u32, has_bias: u32, alpha: f32,
//!params beta: f32, bias_sm: u32, bias_sn: u32, y_sm: u32, act_alpha: f32, act_beta: f32, total: u32,
//!params mn: u32, bdims: vec4<u32>, y_bs: vec4<u32>, bias_bs: vec4<u32>, r_off: u32
//!bind Part: array<f32>, C: array<T>, Y: array<T>, R: array<T>
override ACT: u32 = 0u;
override RES: bool = false;
override BATCHED: bool = false;

//!include act

//!main1d i < P.total {
    var e = i;
    var ybase = 0u;
    var cbase = 0u;
    if (BATCHED) {
        e = i % P.mn;
        var b = i / P.mn;
        for (var d = 3; d >= 0; d = d - 1) {
            let c = b % P.bdims[d];
            b = b / P.bdims[d];
            ybase = ybase + c * P.y_bs[d];
            cbase = cbase + c * P.bias_bs[d];
        }
    }
    let m = e / P.N;
    let n = e % P.N;
    var s = 0.0;
    for (var k = 0u; k < P.nsplit; k = k + 1u) {
        s = s + Part[P.p_off + k * P.total + i];
    }
    var x = P.alpha * s;
    if (P.has_bias != 0u) { x = x + P.beta * f32(C[P.c_off + cbase + m * P.bias_sm + n * P.bias_sn]); }
    let yi = ybase + m * P.y_sm + n;
    if (RES) { x = x + f32(R[P.r_off + yi]); }
    Y[P.y_off + yi] = T(act_apply(ACT, x, P.act_alpha, P.act_beta));
}
