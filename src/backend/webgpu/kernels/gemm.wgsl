// Tiled GEMM with register blocking: the fast path of MatMul, Gemm and
// convolution (after im2col, 1x1 convolutions directly, or as an implicit
// GEMM that gathers the im2col operand on the fly):
//   y[b, m, n] = act(alpha * sum_{k ascending} A(b, m, k) * B(b, k, n)
//                    + beta * bias(b, m, n) [+ r(b, m, n)])
// Semantics: ONNX MatMul-13, Gemm-13 (C as bias), Conv-11/22; act as in
// src/ir/ops/act.h (act.wgsl). Every output is ONE f32 accumulator summed
// over k in ascending order with fma, exactly like conv_direct.wgsl, so for
// a convolution both paths give the same bits. Tiles padded past M, N or K
// add fma(0, 0, acc) = acc (acc is never -0). With SPLITK a workgroup sums
// one slice of k and writes the raw partial sum to y[slice, b, m, n] (the
// scratch); gemm_reduce.wgsl adds the slices in order and applies the
// epilogue: a different summation order (MatMul, Gemm, and convolutions on
// the fast path that allow it; never the im2col + GEMM reference path). For
// the implicit conv operand the slice's first k is added to k (kofs), for
// the others the slice is a batch stride.
//
// Tiles: a workgroup of WGX x WGY invocations computes a BM x BN block of y
// (BM = WGY * TM, BN = WGX * TN); each invocation a TM x TN block in
// registers (TM, TN in {4, 8}) whose rows and columns are interleaved in
// groups of 4 (invocation (tx, ty) owns rows (i * WGY + ty) * 4 + r and
// columns (j * WGX + tx) * 4 + c), so neighbours touch neighbouring vec4s.
// k advances BK at a time through workgroup memory As[k][m] (BK x BM) and
// Bs[k][n] (BK x BN), held as vec4s. PREFETCH: the loads of the next k tile
// are issued into registers before the products of the current one and
// stored after them (at most PF_MAX items of each tile per invocation).
//
// Operands (transposes are strides):
//   A(b, m, k) = A[abase(b) + m * a_sm + k * a_sk]
//   B(b, k, n) = B[bbase(b) + k * b_sk + n * b_sn]        (B_MODE not GB_CONV)
//   B_MODE GB_CONV: implicit im2col of a 2-D NCHW input (conv_b below):
//     k = (ci * k_h + kr) * k_w + kc, n = oh * out_w + ow,
//     B(b, k, n) = x[bbase(b) + (ci * in_h + ih) * in_w + iw] with
//     ih = oh * s_h - p_h + kr * d_h, iw likewise; 0 outside the input.
//   bias(b, m, n) = C[cbase(b) + m * bias_sm + n * bias_sn] (f32)
//   y[b, m, n] = Y[ybase(b) + m * y_sm + n]                (f32)
//   RES: r(b, m, n) = R[r_off + ybase(b) + m * y_sm + n] (laid out like y)
//     is added after the bias, before the activation (a Conv's fused
//     residual, ir/ops/act.h); not with Y_PIX
// A_MODE, B_MODE: how the tiles are loaded (GA_*, GB_*: wg_codes.h).
// A_F16 / B_F16: the operand holds IEEE binary16 values, two per 32-bit word
// (low half first, unpack2x16float): element e is half 2 * x_off + x_sub + e
// of the binding; values widen to f32 (f32 products and accumulation).
// Y_VEC: y stored as vec4 (y_sm, N, y bases multiples of 4).
// Y_PIX: column n of y is a pixel of an out_w-wide grid spread over y with
// row stride s_h and column stride s_w (the conv fields, unused then):
//   y[b, m, n] = Y[ybase(b) + m * y_sm + (n / out_w) * s_h + (n % out_w) * s_w]
// (ConvTranspose with kernel == stride: one GEMM per tap, see lower_nn.c).
// Batches: b in [0, nbatch) decomposes over bdims (outermost first);
// xbase(b) = sum_i coord_i * x_bs[i]. SPLITK: slot 0 is the k slice
// (bdims[0] slices of klen elements of k each, the last shorter; its
// strides step A, and B but for the implicit conv operand, by klen along
// k), slots 1..3 the batch items; nbatch counts both; y is then the
// scratch's partial sums [slice][item][M][N].
// Offsets are elements of each binding (words; see A_F16 for halves).
// Grid: one workgroup per (batch, tile): linear index wid.x + wid.y * nwg.x.
//!elem f32 f16
override TM: u32 = 4u;
override TN: u32 = 4u;
override WGX: u32 = 16u;
override WGY: u32 = 16u;
override BK: u32 = 16u;
override A_MODE: u32 = 0u;
override B_MODE: u32 = 0u;
override A_F16: bool = false;
override B_F16: bool = false;
override CKH: u32 = 0u;
override CKW: u32 = 0u;
override Y_VEC: bool = false;
override SPLITK: bool = false;
override ACT: u32 = 0u;
override PREFETCH: bool = false;
override Y_PIX: bool = false;
override RES: bool = false;

const TM4_MAX: u32 = 2u;
const TN4_MAX: u32 = 2u;
const PF_MAX: u32 = 8u; /* tile items per invocation that PREFETCH can hold */

alias TILE_T = f32; /* gemm_tile: the workgroup tiles hold f32 */
var<workgroup> As: array<vec4<f32>, BK * WGY * TM / 4u>;
var<workgroup> Bs: array<vec4<f32>, BK * WGX * TN / 4u>;

//!include act
//!include gemm_common
//!include codes
//!include gemm_tile

@compute @workgroup_size(WGX, WGY)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let BM = WGY * TM;
    let BN = WGX * TN;
    let NT = WGX * WGY;
    let tx = lid3.x;
    let ty = lid3.y;
    let li = ty * WGX + tx;
    let job = tile_job(wid.x + wid.y * nwg.x);
    if (!job.ok) { return; }
    let m0 = job.m0;
    let n0 = job.n0;
    let abase = job.abase;
    let bbase = job.bbase;
    let kcount = job.kcount;
    let kofs = job.kofs;
    let na = items_a();
    let nb = items_b();

    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i = i + 1u) { acc[i] = vec4<f32>(0.0); }

    // the first k tile
    if (kcount > 0u) {
        for (var i = li; i < na; i = i + NT) { put_a(i, fetch_a(i, 0u, kcount, m0, abase)); }
        for (var i = li; i < nb; i = i + NT) { put_b(i, fetch_b(i, 0u, kcount, n0, bbase, kofs)); }
    }
    workgroupBarrier();
    for (var k0 = 0u; k0 < kcount; k0 = k0 + BK) {
        let nk = k0 + BK;
        let more = nk < kcount;
        // PREFETCH: the next tile's loads are issued before this tile's
        // products and stored after them
        var ra: array<vec4<f32>, PF_MAX>;
        var rb: array<vec4<f32>, PF_MAX>;
        if (PREFETCH && more) {
            for (var j = 0u; j < PF_MAX; j = j + 1u) {
                let i = li + j * NT;
                if (i < na) { ra[j] = fetch_a(i, nk, kcount, m0, abase); }
                let q = li + j * NT;
                if (q < nb) { rb[j] = fetch_b(q, nk, kcount, n0, bbase, kofs); }
            }
        }
        // ---- TM x TN block of products, k ascending
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            var a: array<vec4<f32>, TM4_MAX>;
            var b: array<vec4<f32>, TN4_MAX>;
            for (var ii = 0u; ii < TM / 4u; ii = ii + 1u) { a[ii] = As[(kk * BM) / 4u + ii * WGY + ty]; }
            for (var jj = 0u; jj < TN / 4u; jj = jj + 1u) { b[jj] = Bs[(kk * BN) / 4u + jj * WGX + tx]; }
            for (var ii = 0u; ii < TM / 4u; ii = ii + 1u) {
                for (var r = 0u; r < 4u; r = r + 1u) {
                    let av = vec4<f32>(a[ii][r]);
                    for (var jj = 0u; jj < TN / 4u; jj = jj + 1u) {
                        let q = (ii * 4u + r) * TN4_MAX + jj;
                        acc[q] = fma(av, b[jj], acc[q]);
                    }
                }
            }
        }
        workgroupBarrier();
        if (more) {
            if (PREFETCH) {
                for (var j = 0u; j < PF_MAX; j = j + 1u) {
                    let i = li + j * NT;
                    if (i < na) { put_a(i, ra[j]); }
                    if (i < nb) { put_b(i, rb[j]); }
                }
            } else {
                for (var i = li; i < na; i = i + NT) { put_a(i, fetch_a(i, nk, kcount, m0, abase)); }
                for (var i = li; i < nb; i = i + NT) { put_b(i, fetch_b(i, nk, kcount, n0, bbase, kofs)); }
            }
            workgroupBarrier();
        }
    }

    // ---- epilogue
    for (var ii = 0u; ii < TM / 4u; ii = ii + 1u) {
        for (var r = 0u; r < 4u; r = r + 1u) {
            for (var jj = 0u; jj < TN / 4u; jj = jj + 1u) {
                store4(m0 + (ii * WGY + ty) * 4u + r, n0 + (jj * WGX + tx) * 4u,
                       acc[(ii * 4u + r) * TN4_MAX + jj], job.ybase, job.cbase);
            }
        }
    }
}
