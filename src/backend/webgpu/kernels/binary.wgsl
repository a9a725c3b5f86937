// Elementwise binary op with multidirectional (numpy) broadcasting:
// y[i] = f(a[ia], b[ib]) where i runs over the output shape and ia, ib are
// the broadcast element indices of a and b (stride 0 on broadcast dims).
// f is the vocabulary function of code OP (an rlx_ew_fn: ADD SUB MUL DIV POW
// MAX MIN PRELU, CLAMP_LO CLAMP_HI (Clip's run-time bounds), or COPY for a
// broadcast copy of a) on elements of type T: f32 arithmetic for a float T
// (f16 converts on load and store), i32 arithmetic for an integer T
// (wrapping; ADD SUB MUL MAX MIN PRELU COPY).
// Semantics: ONNX Add/Sub/Mul/Div/Pow/Max/Min/PRelu, Clip-11+.
// Layout: y contiguous; dims/a_str/b_str hold the output dims and the input
// strides (elements), rank <= 8 (after merging contiguous dims).
// Params: a_off, b_off, y_off, n, rank, then dims, a_str, b_str as
// array<vec4<u32>, 2> (dim d is [d / 4][d % 4]).
//!elem f32 i32 u32 f16
//!audited i < n; rank <= 8 (dims[q], q < 2); A, B indices sum c_d * str_d with c_d < dims_d: inside the
//!audited block windows of wg_split_strided (non-negative strides, window = extent of the block)
//!params a_off: u32, b_off: u32, y_off: u32, n: u32, rank: u32, dims: array<vec4<u32>, 2>,
//!params a_str: array<vec4<u32>, 2>, b_str: array<vec4<u32>, 2>
//!bind A: array<T>, B: array<T>, Y: array<T>
override OP: u32 = 0u;

//!include act
//!include bcast

fn bcast_str(q: u32, r: u32) -> vec3<u32> { return vec3<u32>(P.a_str[q][r], P.b_str[q][r], 0u); }

fn opi(a: i32, b: i32) -> i32 {
    if (OP == EW_ADD) { return a + b; }
    if (OP == EW_SUB) { return a - b; }
    if (OP == EW_MUL) { return a * b; }
    if (OP == EW_MAX) { return max(a, b); }
    if (OP == EW_MIN) { return min(a, b); }
    if (OP == EW_PRELU) { return select(a, a * b, a < 0); }
    return a;
}

//!main1d i < P.n {
    let ab = bcast(i).xy;
    let a = A[P.a_off + ab.x];
    let b = B[P.b_off + ab.y];
    if (T_INT) {
        Y[P.y_off + i] = T(opi(i32(a), i32(b)));
    } else {
        Y[P.y_off + i] = T(ew_apply(OP, f32(a), f32(b), 0.0, 0.0));
    }
}
