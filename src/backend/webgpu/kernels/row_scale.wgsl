// The scaling of rows with huge values in the normalisations (not a
// kernel: included with "//!include row_scale" by norm.wgsl and
// add_layernorm.wgsl). A row whose largest |x| reaches 2^48 could overflow
// f32 in its centred squares (beyond 3.4e38 once |x - mean| nears 1.8e19)
// and in its sum: its mean is taken from the sum of x 2^-64, and its
// deviations are squared scaled by sc = 2^-E, E that |x|'s binary
// exponent, so that k = sc / sqrt(sum / n + eps sc^2); its plain squares
// (RMSNormalization, LpNormalization p = 2) are summed as (x 2^-96)^2.
// Scaling by a power of two is exact (elements far below the largest lose
// bits that cannot matter beside it). Below 2^48 the sums are the unscaled
// ones. The CPU computes the normalisations in double.
const BIG_ROW: f32 = 281474976710656.0; // 2^48
const TWO_M64: f32 = 5.42101086e-20; // 2^-64
const TWO_64: f32 = 18446744073709551616.0; // 2^64
const TWO_M96: f32 = 1.26217745e-29; // 2^-96

// sc of a row whose largest |x| is m (1 for NaN, infinity and m < 2^48).
fn dev_scale(m: f32) -> f32 {
    if (m >= BIG_ROW && m <= 3.40282347e38) { return ldexp(1.0, -frexp(m).exp); }
    return 1.0;
}
