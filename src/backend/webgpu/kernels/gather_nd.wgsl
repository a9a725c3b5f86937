// GatherND with batch_dims b: indices [batch..., tuples..., m]; for each
// batch entry and index tuple, copies the slice x[batch, tuple, ...]:
//   y[bi, t, s] = x[bi * bstride + sum_j I[bi, t, j] * xstr[j] + s]
// (negative indices count from the end of their dim). Semantics: ONNX
// GatherND-11/12/13. Sizes are in words: the lowering scales them for i64
// (two words) and bool (four elements a word, when slices fill words).
// Indices i32 or (IDX64) i64 pairs that must fit i32; a tuple with an index
// out of range (the CPU reports an error) writes 0 and, with REPORT
// (run-time indices), is reported in the status words S (index_read.wgsl),
// which fails the run naming the node. One invocation per output word;
// m <= 8.
// Params: x_off, i_off, y_off, s_off, tag (the status words), n (output
// words), nt (tuples per batch entry), m, sl (words per slice), bstride (x
// words per batch entry), two padding words, then the indexed dims'
// extents and strides (words) as array<vec4<u32>, 2>.
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!audited w < n = nb nt sl (y's words); tuple entry j < m <= 8 at I[tt m + j] < the indices' words; an entry
//!audited outside its dim (index_in: -1) counts as 0 and the word is 0, so off < (bi + 1) bstride <= nb bstride
//!audited = x's words (batch dims equal, lower_gather_nd); S as gather.wgsl
//!params x_off: u32, i_off: u32, y_off: u32, s_off: u32, tag: u32, n: u32, nt: u32, m: u32, sl: u32,
//!params bstride: u32, dims: array<vec4<u32>, 2>, xstr: array<vec4<u32>, 2>
//!bind X: array<T>, I: array<u32>, Y: array<T>, S: array<atomic<u32>>
override IDX64: bool = false;
override REPORT: bool = false;

//!include index_read

//!main1d w < P.n {
    let s = w % P.sl;
    let tt = w / P.sl;          // tuple over all batch entries
    let bi = tt / P.nt;
    var off = bi * P.bstride + s;
    var valid = true;
    for (var j = 0u; j < P.m; j = j + 1u) {
        var v = index_in(tt * P.m + j, P.dims[j / 4u][j % 4u]);
        if (v < 0) {
            valid = false;
            v = 0;
        }
        off = off + u32(v) * P.xstr[j / 4u][j % 4u];
    }
    Y[P.y_off + w] = select(T(0), X[P.x_off + off], valid);
}
