// GatherElements: y has the indices' shape; for every coordinate c of it
//   y[c] = x[c with c[axis] = I[c] (+ a when negative)]
// Semantics: ONNX GatherElements-11/13. Elements are W words (1: f32, i32,
// u32; 2: i64). Indices i32, or (IDX64) i64 word pairs that must fit i32;
// an index outside [-a, a) (the CPU reports an error) writes 0 and, with
// REPORT (run-time indices), is reported in the status words S
// (index_read.wgsl), which fails the run naming the node.
// One invocation per element. rank <= 8.
// Params: x_off, i_off, y_off, s_off, tag (the status words), n
// (elements), rank, axis, a (x dims[axis]), w (words per element), two
// padding words, then the indices' dims and x's strides (in elements) as
// array<vec4<u32>, 2>.
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!audited e < n = numel(y) = numel(I) (same dims); coordinates below the indices' dims, which are at most x's but
//!audited on axis (lower_gather_elements), and on axis the index from index_in, in [0, a): x read only when it is
//!audited valid; P.dims[q], q = d / 4 < 2 for rank <= RLX_MAX_RANK = 8; S as gather.wgsl
//!params x_off: u32, i_off: u32, y_off: u32, s_off: u32, tag: u32, n: u32, rank: u32, axis: u32, a: u32,
//!params w: u32, dims: array<vec4<u32>, 2>, xstr: array<vec4<u32>, 2>
//!bind X: array<T>, I: array<u32>, Y: array<T>, S: array<atomic<u32>>
override IDX64: bool = false;
override REPORT: bool = false;

//!include index_read

//!main1d e < P.n {
    let v = index_in(e, P.a);
    let valid = v >= 0;
    var rem = e;
    var src = 0u;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.dims[q][r];
        var c = rem % dim;
        rem = rem / dim;
        if (u32(d) == P.axis) { c = u32(v); }
        src = src + c * P.xstr[q][r];
    }
    // x is read only for a valid index (select would read both operands: an
    // invalid one's u32(-1) coordinate lies far outside x)
    for (var k = 0u; k < P.w; k = k + 1u) {
        var y = T(0);
        if (valid) { y = X[P.x_off + src * P.w + k]; }
        Y[P.y_off + e * P.w + k] = y;
    }
}
