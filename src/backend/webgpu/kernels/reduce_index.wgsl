// The row geometry of reduce.wgsl and norm.wgsl (not a kernel: included
// with "//!include reduce_index"; the includer's Params has nk, kdim, kstr
// (kept dims: sizes and input strides, at most 4) and nr, rdim, rstr
// (reduced dims), as src/ir/ops/reduce_geom.h describes). Output row o reads
// x[base_of(o) + off_of(j)] for j in [0, count).

// x decomposed over the first n (<= 4) of dims (row-major), dotted with
// strides.
fn unravel_dot(x: u32, n: u32, dims: vec4<u32>, strides: vec4<u32>) -> u32 {
    var rem = x;
    var b = 0u;
    for (var d = i32(n) - 1; d >= 0; d = d - 1) {
        let k = u32(d);
        b = b + (rem % dims[k]) * strides[k];
        rem = rem / dims[k];
    }
    return b;
}

// Input offset of row o: o decomposed over the kept dims.
fn base_of(o: u32) -> u32 { return unravel_dot(o, P.nk, P.kdim, P.kstr); }

// Offset of element j of a row: j decomposed over the reduced dims.
fn off_of(j: u32) -> u32 {
    if (P.nr == 1u) { return j * P.rstr[0]; }
    return unravel_dot(j, P.nr, P.rdim, P.rstr);
}
