// Strided copy of words (any dtype, bits preserved; an i64 is two words,
// the lowering adds the inner dim of 2): for every coordinate c of `dims`
// (rank <= 8, outermost first, i = flat index)
//   y[dst_base + sum_d c_d * ds_d] = x[src_base + sum_d c_d * ss_d]
// Strides are i32 elements (negative for Slice with negative steps, 0 for
// broadcasts). Used by Transpose, Slice, Concat, Pad, Expand and copies.
// BYTES: the elements are bytes (bool, four to a word) and the copy writes
// all of y in order (ds row-major, dst_base 0): one invocation assembles
// one word of y, i = 4t .. 4t + 3.
// Params: x_off, y_off, n = prod(dims), rank, src_base, dst_base, threads
// (BYTES: words of y), dims, ss, ds (array<vec4<...>, 2>: dim d is
// [d / 4][d % 4]).
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!params x_off: u32, y_off: u32, n: u32, rank: u32, src_base: i32, dst_base: i32, threads: u32,
//!params dims: array<vec4<u32>, 2>, ss: array<vec4<i32>, 2>, ds: array<vec4<i32>, 2>
//!bind X: array<T>, Y: array<T>
override BYTES: bool = false;

// Source and destination element of flat index i.
fn place(i: u32) -> vec2<i32> {
    var rem = i;
    var si = P.src_base;
    var di = P.dst_base;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.dims[q][r];
        let c = i32(rem % dim);
        rem = rem / dim;
        si = si + c * P.ss[q][r];
        di = di + c * P.ds[q][r];
    }
    return vec2<i32>(si, di);
}

//!main1d i {
    if (BYTES) {
        if (i >= P.threads) { return; }
        var w = 0u;
        for (var k = 0u; k < 4u; k = k + 1u) {
            let e = i * 4u + k;
            if (e >= P.n) { break; }
            let b = P.x_off * 4u + u32(place(e).x);
            w = w | (((t_bits(X[b >> 2u]) >> ((b & 3u) * 8u)) & 0xffu) << (k * 8u));
        }
        Y[P.y_off + i] = t_from_bits(w);
        return;
    }
    if (i >= P.n) { return; }
    let p = place(i);
    Y[P.y_off + u32(p.y)] = X[P.x_off + u32(p.x)];
}
