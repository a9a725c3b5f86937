// Tiled GEMM with register blocking: the fast path of MatMul, Gemm and
// convolution (after im2col, 1x1 convolutions directly, or as an implicit
// GEMM that gathers the im2col operand on the fly):
//   y[b, m, n] = act(alpha * sum_{k ascending} A(b, m, k) * B(b, k, n)
//                    + beta * bias(b, m, n))
// Semantics: ONNX MatMul-13, Gemm-13 (C as bias), Conv-11/22; act as in
// src/ir/ops/act.h (act.wgsl). Every output is ONE f32 accumulator summed
// over k in ascending order with fma, exactly like conv_direct.wgsl, so for
// a convolution both paths give the same bits. Tiles padded past M, N or K
// add fma(0, 0, acc) = acc (acc is never -0). With SPLITK a workgroup sums
// one slice of k and writes the raw partial sum to y[slice, m, n] (the
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
//   B(b, k, n) = B[bbase(b) + k * b_sk + n * b_sn]        (B_MODE 0..3)
//   B_MODE 4: implicit im2col of a 2-D NCHW input (conv_b below):
//     k = (ci * k_h + kr) * k_w + kc, n = oh * out_w + ow,
//     B(b, k, n) = x[bbase(b) + (ci * in_h + ih) * in_w + iw] with
//     ih = oh * s_h - p_h + kr * d_h, iw likewise; 0 outside the input.
//   bias(b, m, n) = C[cbase(b) + m * bias_sm + n * bias_sn] (f32)
//   y[b, m, n] = Y[ybase(b) + m * y_sm + n]                (f32)
// A_MODE: 0 scalar loads, neighbours along k; 1 vec4 along k (a_sk = 1; K,
// a_sm, bases multiples of 4); 2 vec4 along m (a_sm = 1; M, a_sk, bases
// multiples of 4); 3 scalar, neighbours along m.
// B_MODE: 0 scalar, neighbours along n; 1 vec4 along n (b_sn = 1; N, b_sk,
// bases multiples of 4); 2 vec4 along k (b_sk = 1; K, b_sn, bases multiples
// of 4); 3 scalar along k; 4 implicit conv.
// A_F16 / B_F16: the operand holds IEEE binary16 values, two per 32-bit word
// (low half first, unpack2x16float): element e is half 2 * x_off + x_sub + e
// of the binding; values widen to f32 (f32 products and accumulation).
// Y_VEC: y stored as vec4 (y_sm, N, y bases multiples of 4).
// Y_PIX: column n of y is a pixel of an out_w-wide grid spread over y with
// row stride s_h and column stride s_w (the conv fields, unused then):
//   y[b, m, n] = Y[ybase(b) + m * y_sm + (n / out_w) * s_h + (n % out_w) * s_w]
// (ConvTranspose with kernel == stride: one GEMM per tap, see lower_nn.c).
// Batches: b in [0, nbatch) decomposes over bdims (outermost first);
// xbase(b) = sum_i coord_i * x_bs[i]. SPLITK: the batch index is the k slice
// (nbatch = number of slices, klen elements of k each, the last shorter).
// Offsets are elements of each binding (words; see A_F16 for halves).
// Grid: one workgroup per (batch, tile): linear index wid.x + wid.y * nwg.x.
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

const TM4_MAX: u32 = 2u;
const TN4_MAX: u32 = 2u;
const PF_MAX: u32 = 8u; /* tile items per invocation that PREFETCH can hold */

var<workgroup> As: array<vec4<f32>, BK * WGY * TM / 4u>;
var<workgroup> Bs: array<vec4<f32>, BK * WGX * TN / 4u>;

//!include act
//!include gemm_common

fn set_as(i: u32, v: f32) { As[i >> 2u][i & 3u] = v; }
fn set_bs(i: u32, v: f32) { Bs[i >> 2u][i & 3u] = v; }

// Tile loads as items: item i of the A tile is a vec4 (A_MODE 1, 2) or one
// element (in .x) of the BM x BK tile; fetch reads it from A (0 outside
// M x kcount), put stores it into As[k][m]. Likewise B.
fn items_a() -> u32 { return select(WGY * TM * BK, WGY * TM * BK / 4u, A_MODE == 1u || A_MODE == 2u); }
fn items_b() -> u32 { return select(WGX * TN * BK, WGX * TN * BK / 4u, B_MODE == 1u || B_MODE == 2u); }

fn fetch_a(i: u32, k0: u32, kcount: u32, m0: u32, abase: u32) -> vec4<f32> {
    let BM = WGY * TM;
    if (A_MODE == 1u) {
        let m = m0 + i / (BK / 4u);
        let k = k0 + 4u * (i % (BK / 4u));
        if (m < P.M && k < kcount) { return lda4(abase + m * P.a_sm + k); }
        return vec4<f32>(0.0);
    }
    if (A_MODE == 2u) {
        let m = m0 + 4u * (i % (BM / 4u));
        let k = k0 + i / (BM / 4u);
        if (m < P.M && k < kcount) { return lda4(abase + m + k * P.a_sk); }
        return vec4<f32>(0.0);
    }
    var ml = i / BK;
    var kl = i % BK;
    if (A_MODE == 3u) {
        ml = i % BM;
        kl = i / BM;
    }
    let m = m0 + ml;
    let k = k0 + kl;
    if (m < P.M && k < kcount) { return vec4<f32>(lda(abase + m * P.a_sm + k * P.a_sk), 0.0, 0.0, 0.0); }
    return vec4<f32>(0.0);
}

fn put_a(i: u32, v: vec4<f32>) {
    let BM = WGY * TM;
    if (A_MODE == 1u) {
        let kq = i % (BK / 4u);
        let ml = i / (BK / 4u);
        set_as((4u * kq) * BM + ml, v.x);
        set_as((4u * kq + 1u) * BM + ml, v.y);
        set_as((4u * kq + 2u) * BM + ml, v.z);
        set_as((4u * kq + 3u) * BM + ml, v.w);
    } else if (A_MODE == 2u) {
        As[((i / (BM / 4u)) * BM) / 4u + i % (BM / 4u)] = v;
    } else if (A_MODE == 3u) {
        set_as((i / BM) * BM + i % BM, v.x);
    } else {
        set_as((i % BK) * BM + i / BK, v.x);
    }
}

fn fetch_b(i: u32, k0: u32, kcount: u32, n0: u32, bbase: u32, kofs: u32) -> vec4<f32> {
    let BN = WGX * TN;
    if (B_MODE == 1u) {
        let n = n0 + 4u * (i % (BN / 4u));
        let k = k0 + i / (BN / 4u);
        if (n < P.N && k < kcount) { return ldb4(bbase + k * P.b_sk + n); }
        return vec4<f32>(0.0);
    }
    if (B_MODE == 2u) {
        let n = n0 + i / (BK / 4u);
        let k = k0 + 4u * (i % (BK / 4u));
        if (n < P.N && k < kcount) { return ldb4(bbase + n * P.b_sn + k); }
        return vec4<f32>(0.0);
    }
    var nl = i % BN;
    var kl = i / BN;
    if (B_MODE == 3u) {
        nl = i / BK;
        kl = i % BK;
    }
    let n = n0 + nl;
    let k = k0 + kl;
    if (n < P.N && k < kcount) {
        if (B_MODE == 4u) { return vec4<f32>(conv_b(bbase, kofs + k, n), 0.0, 0.0, 0.0); }
        return vec4<f32>(ldb(bbase + k * P.b_sk + n * P.b_sn), 0.0, 0.0, 0.0);
    }
    return vec4<f32>(0.0);
}

fn put_b(i: u32, v: vec4<f32>) {
    let BN = WGX * TN;
    if (B_MODE == 1u) {
        Bs[((i / (BN / 4u)) * BN) / 4u + i % (BN / 4u)] = v;
    } else if (B_MODE == 2u) {
        let kq = i % (BK / 4u);
        let nl = i / (BK / 4u);
        set_bs((4u * kq) * BN + nl, v.x);
        set_bs((4u * kq + 1u) * BN + nl, v.y);
        set_bs((4u * kq + 2u) * BN + nl, v.z);
        set_bs((4u * kq + 3u) * BN + nl, v.w);
    } else if (B_MODE == 3u) {
        set_bs((i % BK) * BN + i / BK, v.x);
    } else {
        set_bs((i / BN) * BN + i % BN, v.x);
    }
}

@compute @workgroup_size(WGX, WGY)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let BM = WGY * TM;
    let BN = WGX * TN;
    let NT = WGX * WGY;
    let tx = lid3.x;
    let ty = lid3.y;
    let li = ty * WGX + tx;
    let wl = wid.x + wid.y * nwg.x;
    let tiles = P.tiles_n * P.tiles_m;
    if (wl >= tiles * P.nbatch) { return; }
    let bidx0 = wl / tiles;
    let t = wl % tiles;
    let m0 = (t / P.tiles_n) * BM;
    let n0 = (t % P.tiles_n) * BN;
    var bidx = bidx0;
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
    var kcount = P.K;
    var kofs = 0u; /* first k of the slice, for the implicit conv operand */
    if (SPLITK) {
        kcount = min(P.klen, P.K - bidx0 * P.klen);
        kofs = bidx0 * P.klen;
    }
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
            let m = m0 + (ii * WGY + ty) * 4u + r;
            if (m >= P.M) { continue; }
            for (var jj = 0u; jj < TN / 4u; jj = jj + 1u) {
                let n = n0 + (jj * WGX + tx) * 4u;
                if (n >= P.N) { continue; }
                let v = acc[(ii * 4u + r) * TN4_MAX + jj];
                let yi = ybase + m * P.y_sm + n;
                if (SPLITK) {
                    if (Y_VEC) {
                        Y[(P.y_off + yi) >> 2u] = v;
                    } else {
                        for (var c = 0u; c < 4u; c = c + 1u) {
                            if (n + c < P.N) { store_y(yi + c, v[c]); }
                        }
                    }
                    continue;
                }
                var o = vec4<f32>(0.0);
                for (var c = 0u; c < 4u; c = c + 1u) {
                    var x = P.alpha * v[c];
                    if (P.has_bias != 0u && n + c < P.N) {
                        x = x + P.beta * C[P.c_off + cbase + m * P.bias_sm + (n + c) * P.bias_sn];
                    }
                    o[c] = act_apply(ACT, x, P.act_alpha, P.act_beta);
                }
                if (Y_VEC) {
                    Y[(P.y_off + yi) >> 2u] = o;
                } else if (Y_PIX) {
                    for (var c = 0u; c < 4u; c = c + 1u) {
                        let q = n + c;
                        if (q < P.N) { store_y(ybase + m * P.y_sm + (q / P.out_w) * P.s_h + (q % P.out_w) * P.s_w, o[c]); }
                    }
                } else {
                    for (var c = 0u; c < 4u; c = c + 1u) {
                        if (n + c < P.N) { store_y(yi + c, o[c]); }
                    }
                }
            }
        }
    }
}
