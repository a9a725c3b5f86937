// Gather along one axis: x viewed as [outer, a, inner] (inner in words),
// indices I (n_idx of them, any shape), y as [outer, n_idx, inner]:
//   y[o, i, k] = x[o, I[i] (+ a when negative), k]
// Semantics: ONNX Gather-1/11/13. Elements are words (f32, i32, u32; an
// i64 element is two words and a run of four bool elements one: the
// lowering scales inner). Indices are i32 words, or (IDX64) i64 (low,
// high) word pairs whose value must fit i32. An index outside [-a, a)
// (where the CPU reports an error) writes 0 and, with REPORT (run-time
// indices), is reported in the status words S (index_read.wgsl), which
// fails the run naming the node.
// One invocation per output word. BYTES (bool runs whose length is not a
// multiple of 4): inner counts bytes, and each invocation assembles its
// output word from four gathered bytes (the last word's padding bytes,
// which the tensor owns, get 0).
// Params: x_off, i_off, y_off, s_off, tag (the status words), n (output
// words), inner, n_idx, a, ne (output elements; BYTES only).
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!audited w < n = y's units (lower_gather: outer n_idx inner); I at i < n_idx (2 i + 1: IDX64) = the indices'
//!audited words; an index read only through index_in, which returns -1 outside [0, a) (then no x read), so x at
//!audited (o a + v) inner + k < outer a inner = x's units; BYTES: bytes e < ne, word (4 x_off + s) / 4; S only
//!audited with REPORT, words 0..3 of WG_STATUS_WORDS = 4 (bind_report)
//!params x_off: u32, i_off: u32, y_off: u32, s_off: u32, tag: u32, n: u32, inner: u32, n_idx: u32, a: u32,
//!params ne: u32
//!bind X: array<T>, I: array<u32>, Y: array<T>, S: array<atomic<u32>>
override IDX64: bool = false;
override BYTES: bool = false;
override REPORT: bool = false;

// Index i as an i32, or a value outside [-a, a) when it does not fit.
//!include index_read

// Where unit e of y (a word, or a byte with BYTES) comes from: its unit
// index in X after x_off, or -1 for an index outside [-a, a).
fn src_unit(e: u32) -> i32 {
    let k = e % P.inner;
    let r = e / P.inner;
    let i = r % P.n_idx;
    let o = r / P.n_idx;
    let v = index_in(i, P.a);
    if (v < 0) { return -1; }
    return i32((o * P.a + u32(v)) * P.inner + k);
}

//!main1d w < P.n {
    if (BYTES) {
        var word = 0u;
        for (var b = 0u; b < 4u; b = b + 1u) {
            let e = 4u * w + b;
            if (e >= P.ne) { continue; }
            let s = src_unit(e);
            if (s < 0) { continue; }
            let p = 4u * P.x_off + u32(s);
            word = word | (((t_bits(X[p >> 2u]) >> (8u * (p & 3u))) & 0xffu) << (8u * b));
        }
        Y[P.y_off + w] = t_from_bits(word);
        return;
    }
    let s = src_unit(w);
    if (s < 0) {
        Y[P.y_off + w] = T(0);
        return;
    }
    Y[P.y_off + w] = X[P.x_off + u32(s)];
}
