// The scaling of rows with huge values in the normalisations (not a
// kernel: included with "//!include row_scale" by norm.wgsl,
// norm_split.wgsl and add_layernorm.wgsl, with the workgroup tree of the
// triples they reduce). A row whose largest |x| reaches
// 2^48 could overflow f32 in its centred squares (beyond 3.4e38 once
// |x - mean| nears 1.8e19) and in its sums: its mean is taken from the sum
// of x 2^-64, its deviations are squared scaled by sc = 2^-80, so that
// k = sc / sqrt(sum / n + eps sc^2), and its plain squares
// (RMSNormalization, LpNormalization p = 2) are summed as (x 2^-96)^2,
// |x| (p = 1) as |x| 2^-64. Every scaled value of such a row stays a
// normal f32 from 2^48 to f32's largest (|x| 2^-80 <= 2^48, its square
// times a row of up to 2^31 elements below 2^128), and scaling by a power
// of two is exact (elements far below the largest lose bits that cannot
// matter beside it); epsilon joins them through inv_scaled. Below 2^48
// the sums are the unscaled ones. The CPU computes the normalisations in
// double.
const BIG_ROW: f32 = 281474976710656.0; // 2^48
const DEV_SC: f32 = 8.27180613e-25; // 2^-80
const TWO_M64: f32 = 5.42101086e-20; // 2^-64
const TWO_64: f32 = 18446744073709551616.0; // 2^64
const TWO_M96: f32 = 1.26217745e-29; // 2^-96

// sc of a row whose largest |x| is m (1 for NaN, infinity and m < 2^48).
fn dev_scale(m: f32) -> f32 {
    if (m >= BIG_ROW && m <= 3.40282347e38) { return DEV_SC; }
    return 1.0;
}

// k = sc / sqrt(v + eps sc^2) for a scaled variance or mean square v and
// sc < 1, formed as sc / hypot(sqrt(v), sqrt(eps) sc) so that no factor
// falls below f32's range (eps sc^2 and 2^-160 would; so would a product of
// two tiny constants that a compiler may form first: seen on lavapipe,
// epsilon dropped); v and eps sc^2 both 0: 1 / sqrt(eps); v NaN (a NaN in
// the row): NaN, tested on the bits (max and min may drop a NaN operand,
// and a compiler may assume v == v).
fn inv_scaled(v: f32, eps: f32, sc: f32) -> f32 {
    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return v; }
    let u = sqrt(v);
    let w = sqrt(eps) * sc;
    let hi = max(u, w);
    if (hi == 0.0) { return 1.0 / sqrt(eps); }
    let r = min(u, w) / hi;
    return sc / (hi * sqrt(1.0 + r * r));
}

// A row's triple of two sums and a largest |x| (norm_rows.wgsl's stat3,
// add_layernorm.wgsl's) combined.
fn comb3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> { return vec3<f32>(a.xy + b.xy, max(a.z, b.z)); }

var<workgroup> sh3: array<vec3<f32>, 256>;

// comb3 over a workgroup of wg (a power of two, <= 256) invocations, in
// the order of the includers' scalar trees.
fn tree3(t: u32, a: vec3<f32>, wg: u32) -> vec3<f32> {
    sh3[t] = a;
    workgroupBarrier();
    for (var s = wg / 2u; s > 0u; s = s >> 1u) {
        if (t < s) { sh3[t] = comb3(sh3[t], sh3[t + s]); }
        workgroupBarrier();
    }
    let r = sh3[0];
    workgroupBarrier();
    return r;
}
