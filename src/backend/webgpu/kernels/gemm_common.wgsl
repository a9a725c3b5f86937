// Shared part of the GEMM kernels (gemm.wgsl, gemm_gen.c, gemm_coop_gen.c; not a kernel: included with
// "//!include gemm_common"): the Params struct, the bindings, and the
// operand loaders. See gemm.wgsl for the meaning of every field.
// lda(e) / ldb(e): element e of A / B (after the batch base) as f32, read
// as f32 words or, with A_F16 / B_F16, as binary16 halves (element e is
// half 2 * x_off + x_sub + e of the binding). lda4 / ldb4: four
// consecutive elements at an e that is a multiple of 4 (and so are the
// bases). conv_b: the implicit im2col operand of a 2-D NCHW input.
// R (binding 5) is the residual that gemm_tile's epilogue adds with RES:
// laid out like y (element yi at R[r_off + yi] where y's is Y[y_off + yi]);
// it is bound last, so its offset r_off follows the other fields. Kernels
// without a residual (gemm_coop) neither use nor bind it and leave r_off 0.
// C, Y and R hold T (f32 or f16; arithmetic in f32); A and B are f32 words
// or packed halves whatever T is. SPLITK partial sums are stored as T too.
// The including kernel declares the overrides A_F16, B_F16, CKH and CKW
// (the implicit conv's kernel size, 0 = read it from Params) before any
// module-scope variable sized by an override (naga 29 panics on an
// override declared after such a variable).
//!params a_off: u32, b_off: u32, c_off: u32, y_off: u32, M: u32, N: u32, K: u32, has_bias: u32, alpha: f32,
//!params beta: f32, a_sm: u32, a_sk: u32, b_sk: u32, b_sn: u32, bias_sm: u32, bias_sn: u32, nbatch: u32,
//!params tiles_n: u32, tiles_m: u32, y_sm: u32, bdims: vec4<u32>, a_bs: vec4<u32>, b_bs: vec4<u32>,
//!params y_bs: vec4<u32>, bias_bs: vec4<u32>, act_alpha: f32, act_beta: f32, klen: u32, a_sub: u32,
//!params b_sub: u32, in_h: u32, in_w: u32, out_w: u32, k_h: u32, k_w: u32, s_h: u32, s_w: u32, p_h: u32,
//!params p_w: u32, d_h: u32, d_w: u32, r_off: u32
//!bind A: array<vec4<u32>>, Bm: array<vec4<u32>>, C: array<T>, Y: array<vec4<T>>, R: array<T>

fn lda(e: u32) -> f32 {
    if (A_F16) {
        let h = 2u * P.a_off + P.a_sub + e;
        let w = h >> 1u;
        return unpack2x16float(A[w >> 2u][w & 3u])[h & 1u];
    }
    let w = P.a_off + e;
    return bitcast<f32>(A[w >> 2u][w & 3u]);
}

fn lda4(e: u32) -> vec4<f32> {
    if (A_F16) {
        // two words, each read by itself (not the whole vec4 and a dynamic pick)
        let w = (2u * P.a_off + P.a_sub + e) >> 1u;
        let i = w >> 2u;
        let s = w & 2u;
        return vec4<f32>(unpack2x16float(A[i][s]), unpack2x16float(A[i][s + 1u]));
    }
    return bitcast<vec4<f32>>(A[(P.a_off + e) >> 2u]);
}

fn ldb(e: u32) -> f32 {
    if (B_F16) {
        let h = 2u * P.b_off + P.b_sub + e;
        let w = h >> 1u;
        return unpack2x16float(Bm[w >> 2u][w & 3u])[h & 1u];
    }
    let w = P.b_off + e;
    return bitcast<f32>(Bm[w >> 2u][w & 3u]);
}

fn ldb4(e: u32) -> vec4<f32> {
    if (B_F16) {
        let w = (2u * P.b_off + P.b_sub + e) >> 1u;
        let i = w >> 2u;
        let s = w & 2u;
        return vec4<f32>(unpack2x16float(Bm[i][s]), unpack2x16float(Bm[i][s + 1u]));
    }
    return bitcast<vec4<f32>>(Bm[(P.b_off + e) >> 2u]);
}

fn conv_b(bbase: u32, k: u32, n: u32) -> f32 {
    // the kernel size as override constants where the includer sets them
    // (CKH, CKW > 0): divisions by constants are cheap
    let kw = select(P.k_w, CKW, CKW > 0u);
    let kh = select(P.k_h, CKH, CKH > 0u);
    let kc = k % kw;
    let t = k / kw;
    let kr = t % kh;
    let ci = t / kh;
    let ow = n % P.out_w;
    let oh = n / P.out_w;
    let ih = i32(oh * P.s_h + kr * P.d_h) - i32(P.p_h);
    let iw = i32(ow * P.s_w + kc * P.d_w) - i32(P.p_w);
    if (ih < 0 || iw < 0 || ih >= i32(P.in_h) || iw >= i32(P.in_w)) { return 0.0; }
    return ldb(bbase + (ci * P.in_h + u32(ih)) * P.in_w + u32(iw));
}

fn store_y(i: u32, v: f32) {
    let w = P.y_off + i;
    Y[w >> 2u][w & 3u] = T(v);
}

