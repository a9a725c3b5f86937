// Local response normalisation across channels, NC...:
//   y = x / (bias + alpha / size * sum_{c'} x[n, c', s]^2) ^ beta
// with c' over [c - before, c + after] clipped to [0, C), before =
// floor((size - 1) / 2), after = ceil((size - 1) / 2). One invocation per
// element. Semantics: ONNX LRN-1/13. Params: x_off, y_off, n (elements),
// c (channels), sp (spatial size), before, after, alpha (already divided
// by size), beta, bias.
//!elem f32 f16
//!audited i < n = numel(x) = numel(y) (lower_lrn); channel k in [lo, hi] within [0, c), so first + k sp stays in
//!audited i's image; hi <= c - 1, so k <= hi ends
//!params x_off: u32, y_off: u32, n: u32, c: u32, sp: u32, before: u32, after: u32, alpha: f32, beta: f32,
//!params bias: f32
//!bind X: array<T>, Y: array<T>

//!main1d i < P.n {
    let c = (i / P.sp) % P.c;
    let first = i - c * P.sp;
    let lo = select(c - P.before, 0u, c < P.before);
    let hi = min(c + P.after, P.c - 1u);
    var sq = 0.0;
    for (var k = lo; k <= hi; k = k + 1u) {
        let v = f32(X[P.x_off + first + k * P.sp]);
        sq = sq + v * v;
    }
    let base = P.bias + P.alpha * sq;
    Y[P.y_off + i] = T(f32(X[P.x_off + i]) / exp2(P.beta * log2(base)));
}
