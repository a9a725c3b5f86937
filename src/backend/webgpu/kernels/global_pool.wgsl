// GlobalAveragePool / GlobalMaxPool: y[nc] = mean (or max) of x[nc, :] over
// the `spatial` elements of one (image, channel), summed in order.
// One invocation per (n, c). Semantics: ONNX GlobalAveragePool-1,
// GlobalMaxPool-1. Params: x_off, y_off, nc, spatial. Element type T (f32;
// f16: summed in f32, rounded once). The max is the CPU's fold from the
// first element (cpu_nn_pool.c): m = v where v > m, so a NaN first element
// is the result, a later NaN never wins, of equal values (-0, +0) the
// first stays.
//!elem f32 f16
//!params x_off: u32, y_off: u32, nc: u32, spatial: u32
//!bind X: array<T>, Y: array<T>
override MAX: bool = false;

//!main1d i < P.nc {
    let base = P.x_off + i * P.spatial;
    var sum = 0.0;
    var mx = f32(X[base]);
    for (var s = 0u; s < P.spatial; s = s + 1u) {
        let v = f32(X[base + s]);
        sum = sum + v;
        mx = select(mx, v, v > mx);
    }
    if (MAX) {
        Y[P.y_off + i] = T(mx);
    } else {
        Y[P.y_off + i] = T(sum / f32(P.spatial));
    }
}
