// The reference batched matrix product (RLX_GEMM_KERNEL=ref; gemm.wgsl is
// the fast one): general strides, 16x16 tiles in workgroup memory, one
// invocation per output element:
//   y[b, m, n] = act(alpha * sum_{k ascending} a[b, m, k] * b[b, k, n]
//                    + beta * bias[b, m, n])          (bias when has_bias)
// with one f32 accumulator and fma, like conv_direct.wgsl and gemm.wgsl;
// act per src/ir/ops/act.h (ACT, act_alpha, act_beta; act.wgsl).
// a[b, m, k] = A[a_off + abase(b) + m * a_sm + k * a_sk]; b likewise with
// b_sk, b_sn; bias with bias_sm, bias_sn (0 on broadcast dims); y is
// row-major with row stride y_sm (N, or more when a lowering computes a
// block of columns) per batch at y_off + ybase(b).
// Batches: b in [0, nbatch) decomposes over bdims (4 dims, outermost
// first); xbase(b) = sum_i coord_i * x_bs[i]. Used by MatMul (broadcast
// batch dims), Gemm (transA/transB as strides, C as bias) and conv as
// im2col + GEMM (batches = images x groups), where the k order equals the
// direct conv's reduction order.
// Grid: one workgroup per (batch, 16x16 tile); the linear workgroup index
// wid.x + wid.y * nwg.x folds beyond 65,535 workgroups.
//!elem f32 f16
//!params a_off: u32, b_off: u32, c_off: u32, y_off: u32, M: u32, N: u32, K: u32, has_bias: u32, alpha: f32,
//!params beta: f32, a_sm: u32, a_sk: u32, b_sk: u32, b_sn: u32, bias_sm: u32, bias_sn: u32, nbatch: u32,
//!params tiles_n: u32, tiles_m: u32, y_sm: u32, bdims: vec4<u32>, a_bs: vec4<u32>, b_bs: vec4<u32>,
//!params y_bs: vec4<u32>, bias_bs: vec4<u32>, act_alpha: f32, act_beta: f32
//!bind A: array<T>, Bm: array<T>, C: array<T>, Y: array<T>

override ACT: u32 = 0u;

//!include act

var<workgroup> As: array<array<f32, 16>, 16>;
var<workgroup> Bs: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    let tiles = P.tiles_n * P.tiles_m;
    if (wl >= tiles * P.nbatch) { return; }
    var bidx = wl / tiles;
    let t = wl % tiles;
    let m = (t / P.tiles_n) * 16u + lid.y;
    let n = (t % P.tiles_n) * 16u + lid.x;
    var abase = 0u;
    var bbase = 0u;
    var ybase = 0u;
    var cbase = 0u;
    for (var d = 3; d >= 0; d = d - 1) {
        let c = bidx % P.bdims[d];
        bidx = bidx / P.bdims[d];
        abase = abase + c * P.a_bs[d];
        bbase = bbase + c * P.b_bs[d];
        ybase = ybase + c * P.y_bs[d];
        cbase = cbase + c * P.bias_bs[d];
    }
    var acc = 0.0;
    for (var k0 = 0u; k0 < P.K; k0 = k0 + 16u) {
        let ka = k0 + lid.x;
        var av = 0.0;
        if (m < P.M && ka < P.K) { av = f32(A[P.a_off + abase + m * P.a_sm + ka * P.a_sk]); }
        As[lid.y][lid.x] = av;
        let kb = k0 + lid.y;
        var bv = 0.0;
        if (kb < P.K && n < P.N) { bv = f32(Bm[P.b_off + bbase + kb * P.b_sk + n * P.b_sn]); }
        Bs[lid.y][lid.x] = bv;
        workgroupBarrier();
        let kmax = min(16u, P.K - k0);
        for (var kk = 0u; kk < kmax; kk = kk + 1u) {
            acc = fma(As[lid.y][kk], Bs[kk][lid.x], acc);
        }
        workgroupBarrier();
    }
    if (m < P.M && n < P.N) {
        var r = P.alpha * acc;
        if (P.has_bias != 0u) {
            r = r + P.beta * f32(C[P.c_off + cbase + m * P.bias_sm + n * P.bias_sn]);
        }
        Y[P.y_off + ybase + m * P.y_sm + n] = T(act_apply(ACT, r, P.act_alpha, P.act_beta));
    }
}
