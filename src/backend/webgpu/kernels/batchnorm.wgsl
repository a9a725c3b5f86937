// BatchNormalization in inference mode, NC...:
//   y = (x - mean[c]) * (scale[c] / sqrt(var[c] + epsilon)) + bias[c]
// with c = (i / inner) % C (inner = product of the spatial dims).
// One invocation per element. Semantics: ONNX BatchNormalization-9/14/15
// with training_mode = 0. Params: x, scale, bias, mean, var, y offsets,
// total, C, inner, epsilon. Element type T (f32; f16: computed in f32,
// rounded once).
//!elem f32 f16
//!audited i < total = numel(x) = numel(y) (lower_batchnorm); S, Bb, M, V at c = (i / inner) % C < C, each of C
//!audited elements (checked)
//!params x_off: u32, s_off: u32, b_off: u32, m_off: u32, v_off: u32, y_off: u32, total: u32, c: u32,
//!params inner: u32, eps: f32
//!bind X: array<T>, S: array<T>, Bb: array<T>, M: array<T>, V: array<T>, Y: array<T>

//!main1d i < P.total {
    let c = (i / P.inner) % P.c;
    let k = f32(S[P.s_off + c]) / sqrt(f32(V[P.v_off + c]) + P.eps);
    Y[P.y_off + i] = T((f32(X[P.x_off + i]) - f32(M[P.m_off + c])) * k + f32(Bb[P.b_off + c]));
}
