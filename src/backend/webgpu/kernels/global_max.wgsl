// GlobalMaxPool's result for a row (not a kernel: included by
// global_pool.wgsl and global_pool_wg.wgsl with "//!include global_max").
// The CPU folds the row from its first element, m = v where v > m
// (cpu_nn_pool.c), of equal values (-0, +0) the first stays, and NaN
// propagates: a row with a NaN gives its first NaN (as ReduceMax). The
// kernels compute m, the maximum of the row's non-NaN elements from -inf
// (v where v > m, in any order: equal to the fold's up to the sign of a
// zero; -inf when there is none) and nan, whether an element is NaN (on
// the bits), and finish here: the row's first NaN (its bits) when nan,
// else the row's first zero when m is zero (a scan of the row, in those
// cases only), else m. So a compiler that turns select(m, v, v > m) into
// max() (which skips NaN and orders zeros as it pleases) changes nothing.
fn global_max_finish(base: u32, m: f32, nan: bool) -> f32 {
    if (nan) {
        for (var s = 0u; s < P.spatial; s = s + 1u) {
            let v = f32(X[base + s]);
            if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return v; }
        }
    }
    if (m == 0.0) {
        for (var s = 0u; s < P.spatial; s = s + 1u) {
            let v = f32(X[base + s]);
            if (v == 0.0) { return v; }
        }
    }
    return m;
}
