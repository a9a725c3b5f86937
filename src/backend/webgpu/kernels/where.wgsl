// Where with multidirectional (numpy) broadcasting of its three inputs:
//   y[i] = c[ic] ? a[ia] : b[ib]
// Semantics: ONNX Where-9/16. c is bool (one byte per element, four to a
// word; any non-zero byte is true). ELEM (UNIT_* of wg_codes.h), the unit
// of a and b's elements: WORD (f32, i32, u32), PAIR (i64), BYTE (bool: then
// one invocation writes one word of y, elements 4t .. 4t + 3). Otherwise
// one invocation per element.
// Params: c_off, a_off, b_off, y_off, n (elements), rank, threads, then
// dims, c_str, a_str, b_str as array<vec4<u32>, 2>.
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!params c_off: u32, a_off: u32, b_off: u32, y_off: u32, n: u32, rank: u32, threads: u32,
//!params dims: array<vec4<u32>, 2>, c_str: array<vec4<u32>, 2>, a_str: array<vec4<u32>, 2>,
//!params b_str: array<vec4<u32>, 2>
//!bind C: array<u32>, A: array<T>, B: array<T>, Y: array<T>
override ELEM: u32 = 0u;

//!include codes
//!include bcast

fn byte_at(w: u32, i: u32) -> u32 { return (w >> ((i & 3u) * 8u)) & 0xffu; }

// Broadcast indices (c, a, b) of an output element: bcast(i).
fn bcast_str(q: u32, r: u32) -> vec3<u32> { return vec3<u32>(P.c_str[q][r], P.a_str[q][r], P.b_str[q][r]); }

fn cond(ic: u32) -> bool {
    let i = P.c_off * 4u + ic;
    return byte_at(C[i >> 2u], i) != 0u;
}

//!main1d t < P.threads {
    if (ELEM == UNIT_BYTE) {
        var w = 0u;
        for (var k = 0u; k < 4u; k = k + 1u) {
            let i = t * 4u + k;
            if (i >= P.n) { break; }
            let x = bcast(i);
            var v = 0u;
            if (cond(x.x)) {
                let j = P.a_off * 4u + x.y;
                v = byte_at(t_bits(A[j >> 2u]), j);
            } else {
                let j = P.b_off * 4u + x.z;
                v = byte_at(t_bits(B[j >> 2u]), j);
            }
            w = w | (v << (k * 8u));
        }
        Y[P.y_off + t] = t_from_bits(w);
        return;
    }
    let x = bcast(t);
    let take_a = cond(x.x);
    if (ELEM == UNIT_PAIR) {
        if (take_a) {
            Y[P.y_off + 2u * t] = A[P.a_off + 2u * x.y];
            Y[P.y_off + 2u * t + 1u] = A[P.a_off + 2u * x.y + 1u];
        } else {
            Y[P.y_off + 2u * t] = B[P.b_off + 2u * x.z];
            Y[P.y_off + 2u * t + 1u] = B[P.b_off + 2u * x.z + 1u];
        }
        return;
    }
    Y[P.y_off + t] = select(B[P.b_off + x.z], A[P.a_off + x.y], take_a);
}
