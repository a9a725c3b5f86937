// GlobalAveragePool / GlobalMaxPool: y[nc] = mean (or max) of x[nc, :] over
// the `spatial` elements of one (image, channel), summed in order.
// One invocation per (n, c). Semantics: ONNX GlobalAveragePool-1,
// GlobalMaxPool-1. Params: x_off, y_off, nc, spatial. Element type T (f32;
// f16: summed in f32, rounded once). The max gives the bits of the CPU's
// fold from the first element, NaN propagating (global_max.wgsl).
//!elem f32 f16
//!audited i < nc; x at i spatial + s, s < spatial (nc spatial = numel(x), spatial >= 1); y at i < nc =
//!audited numel(y) (lower_global_pool)
//!params x_off: u32, y_off: u32, nc: u32, spatial: u32
//!bind X: array<T>, Y: array<T>
override MAX: bool = false;

//!include global_max

//!main1d i < P.nc {
    let base = P.x_off + i * P.spatial;
    var sum = 0.0;
    var mx = bitcast<f32>(0xff800000u); // -inf
    var nan = false;
    for (var s = 0u; s < P.spatial; s = s + 1u) {
        let v = f32(X[base + s]);
        sum = sum + v;
        mx = select(mx, v, v > mx);
        nan = nan || (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
    }
    if (MAX) {
        Y[P.y_off + i] = T(global_max_finish(base, mx, nan));
    } else {
        Y[P.y_off + i] = T(sum / f32(P.spatial));
    }
}
