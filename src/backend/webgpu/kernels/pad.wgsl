// Pad in the edge, reflect and wrap modes (constant mode is a fill and a
// copy): for every output coordinate c, per dim
//   j = c - pb (pb = the positive begin pad), over the n = len elements
//   that survive negative pads, starting at input coordinate lo:
//   edge: clamp j to [0, n); wrap: j mod n; reflect: mirror without
//   repeating the edge (period 2 (n - 1); n = 1 gives 0); pads of n or
//   more keep mirroring / repeating (numpy.pad, the ONNX reference)
//   y[c] = x[sum_d (lo + f(j)) * xstr]
// Semantics: ONNX Pad-2/11/13/18 (reflect, edge) and Pad-19/21 (wrap).
// W words per element (1: f32, i32, u32; 2: i64). rank <= 8. One
// invocation per output element.
// Params: x_off, y_off, n (elements), rank, mode (0 edge, 1 reflect,
// 2 wrap), w, then ydims, xstr, pb, lo, len as array<vec4<u32>, 2>.
// T: the element moved: 4-byte words (u32) unless the lowering names a type.
//!elem u32 f32 i32 f16
//!params x_off: u32, y_off: u32, n: u32, rank: u32, mode: u32, w: u32, ydims: array<vec4<u32>, 2>,
//!params xstr: array<vec4<u32>, 2>, pb: array<vec4<u32>, 2>, lo: array<vec4<u32>, 2>,
//!params len: array<vec4<u32>, 2>
//!bind X: array<T>, Y: array<T>

// j mod m in [0, m) for any j and m > 0, in unsigned arithmetic only: a
// negative j counts down from m - 1. (Forms with a signed remainder,
// ((j % n) + n) % n and the select on the sign of j % n, gave wrong wrap
// results on the NVIDIA Vulkan driver of an H200 and right ones on
// lavapipe. An earlier form lifted j by m * 2^24 first: that product
// overflows u32 once m > 256, which broke reflect with n > 129 and wrap
// with n > 256 for every output left of the input.)
fn mod_pos(j: i32, m: i32) -> i32 {
    let um = u32(m);
    if (j >= 0) { return i32(u32(j) % um); }
    return i32(um - 1u - (u32(-(j + 1)) % um));
}

fn src_coord(c: u32, q: u32, r: u32) -> u32 {
    let n = i32(P.len[q][r]);
    var j = i32(c) - i32(P.pb[q][r]);
    if (j < 0 || j >= n) {
        if (P.mode == 0u) {
            j = clamp(j, 0, n - 1);
        } else if (P.mode == 2u) {
            j = mod_pos(j, n);
        } else if (n == 1) {
            j = 0;
        } else {
            let p = 2 * (n - 1);
            let m = mod_pos(j, p);
            j = select(p - m, m, m < n);
        }
    }
    return P.lo[q][r] + u32(j);
}

//!main1d e < P.n {
    var rem = e;
    var src = 0u;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.ydims[q][r];
        let c = rem % dim;
        rem = rem / dim;
        src = src + src_coord(c, q, r) * P.xstr[q][r];
    }
    for (var k = 0u; k < P.w; k = k + 1u) { Y[P.y_off + e * P.w + k] = X[P.x_off + src * P.w + k]; }
}
