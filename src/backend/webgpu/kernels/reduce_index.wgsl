// The row geometry of reduce.wgsl and norm.wgsl (not a kernel: included
// with "//!include reduce_index"; the includer's Params has nk, kdim, kstr
// (kept dims: sizes and input strides, at most 4) and nr, rdim, rstr
// (reduced dims), as src/ir/ops/reduce_geom.h describes). Output row o reads
// x[base_of(o) + off_of(j)] for j in [0, count).

// Input offset of row o: o decomposed over the kept dims (row-major).
fn base_of(o: u32) -> u32 {
    var rem = o;
    var b = 0u;
    for (var d = i32(P.nk) - 1; d >= 0; d = d - 1) {
        let k = u32(d);
        b = b + (rem % P.kdim[k]) * P.kstr[k];
        rem = rem / P.kdim[k];
    }
    return b;
}

// Offset of element j of a row: j decomposed over the reduced dims.
fn off_of(j: u32) -> u32 {
    if (P.nr == 1u) { return j * P.rstr[0]; }
    var rem = j;
    var b = 0u;
    for (var d = i32(P.nr) - 1; d >= 0; d = d - 1) {
        let k = u32(d);
        b = b + (rem % P.rdim[k]) * P.rstr[k];
        rem = rem / P.rdim[k];
    }
    return b;
}
