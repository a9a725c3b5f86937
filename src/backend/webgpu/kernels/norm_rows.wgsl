// The bindings and row arithmetic that norm.wgsl and norm_split.wgsl share
// (not a kernel: included with "//!include norm_rows" after the Params):
// X (array<vec4<T>>, read one element at a time or as vec4 words), S, B,
// Y, M, V (T; absent ones bound to X and never touched), the
// shared-memory tree's array, and the formulas of norm.wgsl's MODEs
// (NM_* of wg_codes.h). Arithmetic is f32 whatever T is.
//!bind X: array<vec4<T>>, S: array<T>, B: array<T>, Y: array<T>, M: array<T>, V: array<T>

var<workgroup> sh: array<f32, 256>;

fn xload(e: u32) -> f32 {
    let i = P.x_off + e;
    return f32(X[i >> 2u][i & 3u]);
}

fn param_idx(o: u32, j: u32, rmod: u32, rmul: u32, jdiv: u32, jmod: u32) -> u32 {
    return (o % rmod) * rmul + (j / jdiv) % jmod;
}

// Row statistics -> (c, k): y = f(x, c, k).
//   layer/rms: c = mean (0 for rms), k = 1 / sqrt(var + eps)
//   lp:        c = 0, k = 1 / norm (0 when the norm is 0)
//   mvn:       c = mean, k = 1 / (sqrt(var) + 1e-9)
//   softmax:   c = max, k = 1 / sum (softmax) or log(sum) (logsoftmax)
// centred_ck: the centred modes (layer, mvn) from the mean, a1 = sum
// ((x - mean) sc)^2 and sc (row_scale.wgsl's dev_scale; 1: the unscaled
// formulas, bit for bit; below 1, row_scale.wgsl's inv_scaled).
fn centred_ck(mean: f32, a1: f32, sc: f32) -> vec2<f32> {
    let n = f32(P.count);
    if (MODE == NM_MVN) { return vec2<f32>(mean, 1.0 / (sqrt(a1 / n) / sc + 1e-9)); }
    if (sc < 1.0) { return vec2<f32>(mean, inv_scaled(a1 / n, P.eps, sc)); }
    return vec2<f32>(mean, 1.0 / sqrt(a1 / n + P.eps));
}

// stats_to_ck: the others from a0, the first pass's sum (the max for
// softmax), and a1, the second's (the exponentials).
fn stats_to_ck(a0: f32, a1: f32) -> vec2<f32> {
    let n = f32(P.count);
    switch MODE {
        case NM_RMS: { return vec2<f32>(0.0, 1.0 / sqrt(a0 / n + P.eps)); }
        case NM_LP1: { return vec2<f32>(0.0, select(1.0 / a0, 0.0, a0 == 0.0)); }
        case NM_LP2: { let r = sqrt(a0); return vec2<f32>(0.0, select(1.0 / r, 0.0, r == 0.0)); }
        case NM_SOFTMAX: { return vec2<f32>(a0, 1.0 / a1); }
        default: { return vec2<f32>(a0, log(a1)); }
    }
}

// The optional per-row outputs (flags 4: M gets c, 8: V gets k).
fn write_stats(o: u32, ck: vec2<f32>) {
    if ((P.flags & 4u) != 0u) { M[P.m_off + o] = T(ck.x); }
    if ((P.flags & 8u) != 0u) { V[P.v_off + o] = T(ck.y); }
}

// Element j of row o, x, normalised: (x - c) * k, times the scale (flags
// 1), plus the bias (flags 2). Formed as (x sc - c sc) (k / sc) with the
// row's sc (row_scale.wgsl; 1: the same bits), so that x - c of a row near
// f32's largest values does not overflow.
fn affine(o: u32, j: u32, x: f32, c: f32, k: f32, sc: f32) -> f32 {
    var y = (x * sc - c * sc) * (k / sc);
    if ((P.flags & 1u) != 0u) { y = y * f32(S[P.s_off + param_idx(o, j, P.s_rmod, P.s_rmul, P.s_jdiv, P.s_jmod)]); }
    if ((P.flags & 2u) != 0u) { y = y + f32(B[P.b_off + param_idx(o, j, P.b_rmod, P.b_rmul, P.b_jdiv, P.b_jmod)]); }
    return y;
}

// ------------------------------------------------------------ huge rows
// (row_scale.wgsl, which the includer also includes)

fn centred() -> bool { return MODE == NM_LAYER || MODE == NM_MVN; }

// Every normalisation but softmax's.
fn has_stat3() -> bool { return MODE <= NM_MVN; }

// Pass 0 of those modes for one element: (x, x 2^-64, |x|) (layer, mvn:
// the scaled sum gives a big row's mean without overflow, dev_scale),
// (x^2, (x 2^-96)^2, |x|) (rms, lp2: the sum of the scaled squares stays
// finite and normal for every row whose largest |x| reaches 2^48), or
// (|x|, |x| 2^-64, |x|) (lp1).
fn stat3(x: f32) -> vec3<f32> {
    if (centred()) { return vec3<f32>(x, x * TWO_M64, abs(x)); }
    if (MODE == NM_LP1) { return vec3<f32>(abs(x), abs(x) * TWO_M64, abs(x)); }
    let y = x * TWO_M96;
    return vec3<f32>(x * x, y * y, abs(x));
}

// The mean and sc (dev_scale) of n elements from their stat3 sum.
fn mean_sc(s: vec3<f32>, n: f32) -> vec2<f32> {
    let sc = dev_scale(s.z);
    if (sc < 1.0) { return vec2<f32>((s.y / n) * TWO_64, sc); }
    return vec2<f32>(s.x / n, 1.0);
}

// (c, k) of rms, lp1 and lp2 from a row's stat3 sum: a row whose largest
// |x| reaches 2^48 from the scaled sums (rms: inv_scaled keeps epsilon; a
// tester's finding: eps 1e30 was dropped), the others as before.
fn squares_ck(s: vec3<f32>) -> vec2<f32> {
    if (dev_scale(s.z) < 1.0) {
        switch MODE {
            case NM_RMS: { return vec2<f32>(0.0, inv_scaled(s.y / f32(P.count), P.eps, TWO_M96)); }
            case NM_LP1: { return vec2<f32>(0.0, TWO_M64 / s.y); }
            default: { return vec2<f32>(0.0, TWO_M96 / sqrt(s.y)); }
        }
    }
    return stats_to_ck(s.x, 0.0);
}
