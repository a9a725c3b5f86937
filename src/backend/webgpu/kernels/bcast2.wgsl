// The broadcast element indices (ia, ib) of output element i (not a
// kernel: included with "//!include bcast2" by binary and compare). The
// includer's Params hold rank, the output dims and the inputs' strides
// a_str, b_str (elements, 0 on broadcast dims) as array<vec4<u32>, 2>
// (dim d at [d / 4][d % 4]).
fn bcast2(i: u32) -> vec2<u32> {
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.dims[q][r];
        let c = rem % dim;
        rem = rem / dim;
        ia = ia + c * P.a_str[q][r];
        ib = ib + c * P.b_str[q][r];
    }
    return vec2<u32>(ia, ib);
}
