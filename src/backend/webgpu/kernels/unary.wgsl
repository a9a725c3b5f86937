// Elementwise function of the vocabulary (src/ir/ew_funcs.h), computed in
// f32 on elements of type T (f32 today; f16 converts on load and store):
// y[i] = f(x[i], s) with f the function of code OP (an rlx_ew_fn),
// alpha, beta its parameters and s a scalar second operand (Mean divides
// by the count so). Semantics: the ONNX operators of the rows' names.
// Layout: x and y contiguous, n elements. One invocation per element; the
// 1-D grid folds into y beyond 65,535 workgroups.
// Params: x_off, y_off (element offsets inside each binding), n, alpha,
// beta, s.
//!elem f32 f16
//!audited i < n (main1d); X and Y windows of n elements (lower_elementwise.c, wg_split_1d)
//!params x_off: u32, y_off: u32, n: u32, alpha: f32, beta: f32, s: f32
//!bind X: array<T>, Y: array<T>
override OP: u32 = 0u;

//!include act

//!main1d i < P.n {
    Y[P.y_off + i] = T(ew_apply(OP, f32(X[P.x_off + i]), P.s, P.alpha, P.beta));
}
