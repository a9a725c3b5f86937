// The broadcast element indices of output element i in up to three inputs
// (not a kernel: included with "//!include bcast" by binary, compare and
// where). The includer's Params hold rank and the output dims as
// array<vec4<u32>, 2> (dim d at [d / 4][d % 4]); the includer defines
// bcast_str(q, r), the inputs' strides at that dim (elements, 0 on broadcast
// dims; 0 for an input it does not have).
fn bcast(i: u32) -> vec3<u32> {
    var rem = i;
    var ix = vec3<u32>(0u, 0u, 0u);
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.dims[q][r];
        let c = rem % dim;
        rem = rem / dim;
        ix = ix + c * bcast_str(q, r);
    }
    return ix;
}
