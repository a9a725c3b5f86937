// Matrix-vector product: the one-row MatMul / Gemm (M == 1, one batch
// item; lower_gemm.c emit_gemv). Such a product only streams the weights
// once, so it is bound by memory: every invocation reads 16-byte pieces of
// B and does useful work with them (the tiled kernel computes 32 rows of
// which one is real):
//   y[n] = act(alpha * sum_k a(k) * B(k, n) + beta * bias(n))
// with a(k) = A[k * a_sk], B(k, n) = B[k * b_sk + n * b_sn],
// bias(n) = C[c_off + n * bias_sn] (has_bias), y[n] = Y[y_off + n]; act as
// in src/ir/ops/act.h. Semantics: ONNX MatMul-13 / Gemm-13. Products and
// sums in f32 (f16 operands widen exactly), one rounding at the store.
// Params and bindings are those of the gemm_common kernels (M = 1,
// tiles_n = output blocks, nbatch = k slices of klen elements; the batch,
// conv and residual fields unused; R is not bound, as in gemm_coop).
//
// MODE_K false (B contiguous along n, b_sn == 1: a MatMul weight [K, N]):
//   256 invocations = 32 column groups x 8 k lanes; group g owns the 8
//   columns n0 + 8 g .. + 7 (one 16-byte load of halves, two of f32), lane
//   l sums k = k0 + l, k0 + l + 8, ... (a warp reads 32 neighbouring
//   pieces of one row of B).
// MODE_K true (B contiguous along k, b_sk == 1: Gemm transB, weights
//   [N, K]): 8 columns x 32 k lanes; lane l sums the 8-element chunks of
//   k at k0 + 8 (l + 32 j), A read the same way (a_sk == 1).
// Each invocation keeps 8 f32 partial sums; the lanes' sums are added in
// lane order in workgroup memory (MODE_K: each lane's 8 first), so the
// result does not depend on timing.
// VEC: 16-byte loads (the lowering checked that the offsets, strides and
// the contiguous extent are multiples of 8 halves or 4 words); otherwise
// element by element with bounds tests (any size, stride and offset).
// SPLIT: workgroup wl computes k slice s = wl / tiles_n, k in
// [s * klen, min(K, (s + 1) * klen)), and stores the raw sums to the f32
// scratch bound as Y (part[s * N + n]); kernels/gemm_reduce.wgsl then adds
// the slices in order and applies the epilogue.
// Grid: tiles_n * nbatch workgroups, linear index wid.x + wid.y * nwg.x.
//!elem f32 f16
//!audited every B, A, C, Y access under n < N, k < k1 <= K, c + j < k1 (VEC: N % 8 == 0, K % 8 == 0 and
//!audited aligned offsets, checked by emit_gemv); red[] indices below 512 for li < 256
override A_F16: bool = false;
override B_F16: bool = false;
override CKH: u32 = 0u;
override CKW: u32 = 0u;
override MODE_K: bool = false;
override VEC: bool = true;
override SPLIT: bool = false;
override ACT: u32 = 0u;

var<workgroup> red: array<vec4<f32>, 512>;

//!include act
//!include gemm_common

// Eight consecutive elements of A / B from element e (VEC: e at a multiple
// of 8 halves or 4 words), low four in .lo.
struct Oct { lo: vec4<f32>, hi: vec4<f32> };

// the eight halves of four words
fn halves8(q: vec4<u32>) -> Oct {
    return Oct(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)),
               vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
}

fn lda8(e: u32) -> Oct {
    if (A_F16) { return halves8(A[(2u * P.a_off + P.a_sub + e) >> 3u]); }
    return Oct(lda4(e), lda4(e + 4u));
}

fn ldb8(e: u32) -> Oct {
    if (B_F16) { return halves8(Bm[(2u * P.b_off + P.b_sub + e) >> 3u]); }
    return Oct(ldb4(e), ldb4(e + 4u));
}

// Element by element: B(k, n + c) for c < 8, 0 past N.
fn ldb8_cols(k: u32, n: u32) -> Oct {
    var o = Oct(vec4<f32>(0.0), vec4<f32>(0.0));
    for (var c = 0u; c < 4u; c = c + 1u) {
        if (n + c < P.N) { o.lo[c] = ldb(k * P.b_sk + (n + c) * P.b_sn); }
        if (n + 4u + c < P.N) { o.hi[c] = ldb(k * P.b_sk + (n + 4u + c) * P.b_sn); }
    }
    return o;
}

// The output n from the sum v: the raw partial sum (SPLIT) or the epilogue.
fn put(s: u32, n: u32, v: f32) {
    if (SPLIT) {
        store_y(s * P.N + n, v);
        return;
    }
    var x = P.alpha * v;
    if (P.has_bias != 0u) { x = x + P.beta * f32(C[P.c_off + n * P.bias_sn]); }
    store_y(n, act_apply(ACT, x, P.act_alpha, P.act_beta));
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    if (wl >= P.tiles_n * P.nbatch) { return; }
    let blk = wl % P.tiles_n;
    let s = wl / P.tiles_n;
    var k0 = 0u;
    var k1 = P.K;
    if (SPLIT) {
        k0 = s * P.klen;
        k1 = min(P.K, k0 + P.klen);
    }
    var lo = vec4<f32>(0.0);
    var hi = vec4<f32>(0.0);
    if (!MODE_K) {
        let g = li % 32u;
        let l = li / 32u;
        let n = blk * 256u + g * 8u;
        // four rows of B in flight per step
        var k = k0 + l;
        for (; k + 24u < k1; k = k + 32u) {
            var b0: Oct;
            var b1: Oct;
            var b2: Oct;
            var b3: Oct;
            if (VEC) {
                if (n < P.N) {
                    b0 = ldb8(k * P.b_sk + n);
                    b1 = ldb8((k + 8u) * P.b_sk + n);
                    b2 = ldb8((k + 16u) * P.b_sk + n);
                    b3 = ldb8((k + 24u) * P.b_sk + n);
                }
            } else {
                b0 = ldb8_cols(k, n);
                b1 = ldb8_cols(k + 8u, n);
                b2 = ldb8_cols(k + 16u, n);
                b3 = ldb8_cols(k + 24u, n);
            }
            let a0 = vec4<f32>(lda(k * P.a_sk));
            let a1 = vec4<f32>(lda((k + 8u) * P.a_sk));
            let a2 = vec4<f32>(lda((k + 16u) * P.a_sk));
            let a3 = vec4<f32>(lda((k + 24u) * P.a_sk));
            lo = fma(a0, b0.lo, lo);
            hi = fma(a0, b0.hi, hi);
            lo = fma(a1, b1.lo, lo);
            hi = fma(a1, b1.hi, hi);
            lo = fma(a2, b2.lo, lo);
            hi = fma(a2, b2.hi, hi);
            lo = fma(a3, b3.lo, lo);
            hi = fma(a3, b3.hi, hi);
        }
        for (; k < k1; k = k + 8u) {
            var b: Oct;
            if (VEC) {
                if (n < P.N) { b = ldb8(k * P.b_sk + n); }
            } else {
                b = ldb8_cols(k, n);
            }
            let a = vec4<f32>(lda(k * P.a_sk));
            lo = fma(a, b.lo, lo);
            hi = fma(a, b.hi, hi);
        }
        red[2u * li] = lo;
        red[2u * li + 1u] = hi;
        workgroupBarrier();
        if (l == 0u && n < P.N) {
            var sl = red[2u * g];
            var sh = red[2u * g + 1u];
            for (var j = 1u; j < 8u; j = j + 1u) {
                sl = sl + red[2u * (j * 32u + g)];
                sh = sh + red[2u * (j * 32u + g) + 1u];
            }
            for (var c = 0u; c < 4u; c = c + 1u) {
                if (n + c < P.N) { put(s, n + c, sl[c]); }
                if (n + 4u + c < P.N) { put(s, n + 4u + c, sh[c]); }
            }
        }
    } else {
        let l = li % 32u;
        let r = li / 32u;
        let n = blk * 8u + r;
        if (n < P.N) {
            let bb = n * P.b_sn;
            var c = k0 + 8u * l;
            if (VEC) {
                for (; c + 256u < k1; c = c + 512u) {
                    let b0 = ldb8(bb + c);
                    let b1 = ldb8(bb + c + 256u);
                    let a0 = lda8(c);
                    let a1 = lda8(c + 256u);
                    lo = fma(a0.lo, b0.lo, lo);
                    hi = fma(a0.hi, b0.hi, hi);
                    lo = fma(a1.lo, b1.lo, lo);
                    hi = fma(a1.hi, b1.hi, hi);
                }
                for (; c < k1; c = c + 256u) {
                    let b = ldb8(bb + c);
                    let a = lda8(c);
                    lo = fma(a.lo, b.lo, lo);
                    hi = fma(a.hi, b.hi, hi);
                }
            } else {
                for (; c < k1; c = c + 256u) {
                    for (var j = 0u; j < 4u; j = j + 1u) {
                        if (c + j < k1) { lo[j] = fma(lda((c + j) * P.a_sk), ldb(bb + (c + j) * P.b_sk), lo[j]); }
                        if (c + 4u + j < k1) {
                            hi[j] = fma(lda((c + 4u + j) * P.a_sk), ldb(bb + (c + 4u + j) * P.b_sk), hi[j]);
                        }
                    }
                }
            }
        }
        let t = lo + hi;
        red[li] = vec4<f32>((t.x + t.y) + (t.z + t.w), 0.0, 0.0, 0.0);
        workgroupBarrier();
        if (l == 0u && n < P.N) {
            var sum = red[r * 32u].x;
            for (var j = 1u; j < 32u; j = j + 1u) { sum = sum + red[r * 32u + j].x; }
            put(s, n, sum);
        }
    }
}
