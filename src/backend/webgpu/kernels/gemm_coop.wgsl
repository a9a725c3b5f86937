// GEMM on cooperative matrices (tensor cores): f16 mode only, where the
// adapter offers wgpu-native's CooperativeMatrix feature (WGSL extension
// wgpu_cooperative_matrix, Vulkan VK_KHR_cooperative_matrix) with
// shader-f16, and the backend's self-test passed (webgpu_backend.c,
// coop_probe). Same product, operands, batches and epilogue as gemm.wgsl
// (gemm_common.wgsl), but every operand is rounded to binary16 in
// workgroup memory and the 16x16x16 products are accumulated in f32 by
// the hardware, in its own order (no bitwise contract with any other
// kernel; split-K is not used):
//   y[b, m, n] = act(alpha * sum_k f16(A(b, m, k)) * f16(B(b, k, n))
//                    + beta * bias(b, m, n))
// Tiles: a workgroup of WG invocations (WG / SG subgroups of SG
// invocations; 4 subgroups) computes a 64 x 64 block of y, each subgroup a
// 32 x 32 quadrant as 2 x 2 accumulators of coop_mat16x16<f32, C>; k
// advances 32 at a time through As [64 m][32 k] and Bs [32 k][64 n] (f16,
// row-major); the accumulators leave through Cs [64][64] (f32) to the
// epilogue. SG must be the adapter's subgroup size (32 on NVIDIA); a wrong
// SG fails the self-test, which then turns this kernel off.
// A_MODE / B_MODE as gemm.wgsl, scalar loads only: 0 or 3 for A, 0, 3 or 4
// (implicit conv) for B. Grid: one workgroup per (batch, 64 x 64 tile).
enable f16;
enable wgpu_cooperative_matrix;

override A_F16: bool = false;
override B_F16: bool = false;
override CKH: u32 = 0u;
override CKW: u32 = 0u;
override A_MODE: u32 = 0u;
override B_MODE: u32 = 0u;
override ACT: u32 = 0u;
override WG: u32 = 128u;
override SG: u32 = 32u;

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 32u;

var<workgroup> As: array<f16, 2048>;
var<workgroup> Bs: array<f16, 2048>;
var<workgroup> Cs: array<f32, 4096>;

//!include act
//!include gemm_common

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    let tiles = P.tiles_n * P.tiles_m;
    if (wl >= tiles * P.nbatch) { return; }
    let t = wl % tiles;
    let m0 = (t / P.tiles_n) * BM;
    let n0 = (t % P.tiles_n) * BN;
    var bidx = wl / tiles;
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
    // the subgroup's quadrant
    let sg = (li / SG) % 4u;
    let qm = (sg / 2u) * 32u;
    let qn = (sg % 2u) * 32u;

    for (var i = li; i < BM * BN; i = i + WG) { Cs[i] = 0.0; }
    workgroupBarrier();
    var c00 = coopLoad<coop_mat16x16<f32, C>>(&Cs[0], BN);
    var c01 = coopLoad<coop_mat16x16<f32, C>>(&Cs[0], BN);
    var c10 = coopLoad<coop_mat16x16<f32, C>>(&Cs[0], BN);
    var c11 = coopLoad<coop_mat16x16<f32, C>>(&Cs[0], BN);

    for (var k0 = 0u; k0 < P.K; k0 = k0 + BK) {
        for (var i = li; i < BM * BK; i = i + WG) {
            var ml = i / BK;
            var kl = i % BK;
            if (A_MODE == 3u) {
                ml = i % BM;
                kl = i / BM;
            }
            let m = m0 + ml;
            let k = k0 + kl;
            var v = 0.0;
            if (m < P.M && k < P.K) { v = lda(abase + m * P.a_sm + k * P.a_sk); }
            As[ml * BK + kl] = f16(v);
        }
        for (var i = li; i < BK * BN; i = i + WG) {
            var kl = i / BN;
            var nl = i % BN;
            if (B_MODE == 3u) {
                kl = i % BK;
                nl = i / BK;
            }
            let n = n0 + nl;
            let k = k0 + kl;
            var v = 0.0;
            if (n < P.N && k < P.K) {
                if (B_MODE == 4u) {
                    v = conv_b(bbase, k, n);
                } else {
                    v = ldb(bbase + k * P.b_sk + n * P.b_sn);
                }
            }
            Bs[kl * BN + nl] = f16(v);
        }
        workgroupBarrier();
        for (var s = 0u; s < BK; s = s + 16u) {
            let a0 = coopLoad<coop_mat16x16<f16, A>>(&As[qm * BK + s], BK);
            let a1 = coopLoad<coop_mat16x16<f16, A>>(&As[(qm + 16u) * BK + s], BK);
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&Bs[s * BN + qn], BN);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&Bs[s * BN + qn + 16u], BN);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
        }
        workgroupBarrier();
    }

    coopStore(c00, &Cs[qm * BN + qn], BN);
    coopStore(c01, &Cs[qm * BN + qn + 16u], BN);
    coopStore(c10, &Cs[(qm + 16u) * BN + qn], BN);
    coopStore(c11, &Cs[(qm + 16u) * BN + qn + 16u], BN);
    workgroupBarrier();
    for (var i = li; i < BM * BN; i = i + WG) {
        let m = m0 + i / BN;
        let n = n0 + i % BN;
        if (m < P.M && n < P.N) {
            var x = P.alpha * Cs[i];
            if (P.has_bias != 0u) { x = x + P.beta * C[P.c_off + cbase + m * P.bias_sm + n * P.bias_sn]; }
            store_y(ybase + m * P.y_sm + n, act_apply(ACT, x, P.act_alpha, P.act_beta));
        }
    }
}
