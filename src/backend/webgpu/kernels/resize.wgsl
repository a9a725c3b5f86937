// Resize (ONNX Resize-10/11/13/18/19), rank <= 4 (dims padded with leading
// 1s), every mode: the host builds each axis's taps with the CPU's code
// (rlx_resize_taps_build, ir/ops/resize_geom.c: the ONNX reference's f64
// source coordinates, rounding and coefficients), so exact ties such as
// 3.5 round as there; this kernel only gathers and blends.
// Table TB (binding 3), per padded axis d from word tbase[d]: for output
// index o, taps[d] input indices (clamped; 0xffffffff in the first marks a
// tf_crop_and_resize source outside the input: y = extrap) then taps[d]
// weights (f32 bits).
// LINEAR = false (nearest, every axis one tap): y copies the element (the
// u32 instance: 4-byte words of f32, i32, u32; the f16 instance: halves;
// BYTES, in the u32 instance: int8 / uint8 elements four to a word, one
// word of y, four elements, per invocation: P.total counts y's words, and
// P.elems its elements; a last word past them holds zeros).
// LINEAR = true (linear, cubic, antialias): f32 or f16 data,
// y = sum over the product of the axes' taps of (w0 * w1 * ...) * x, the
// axes in order, accumulated in f32 (the CPU sums in f64), an f16 result
// rounded once at the store.
// Params: x_off, y_off, t_off, total, extrap, elems (BYTES), out_dims,
// in_dims, taps, tbase (vec4<u32>).
//!params x_off: u32, y_off: u32, t_off: u32, total: u32, extrap: f32, elems: u32, out_dims: vec4<u32>,
//!params in_dims: vec4<u32>, taps: vec4<u32>, tbase: vec4<u32>
//!elem u32 f16
//!bind X: array<T>, Y: array<T>, TB: array<u32>
override LINEAR: bool = false;
override BYTES: bool = false;

// Element k of X as f32 (u32 instance: the word's f32 bits; f16: the half).
fn x_f32(k: u32) -> f32 {
    if (T_INT) { return bitcast<f32>(t_bits(X[P.x_off + k])); }
    return unpack2x16float(t_bits(X[P.x_off + k])).x;
}

// Stores v as output element i (f32 bits, or v rounded to binary16).
fn y_store(i: u32, v: f32) {
    if (T_INT) {
        Y[P.y_off + i] = t_from_bits(bitcast<u32>(v));
    } else {
        Y[P.y_off + i] = t_from_bits(pack2x16float(vec2<f32>(v, 0.0)));
    }
}

// Each padded axis's table entry of output element i.
fn entries(i: u32) -> vec4<u32> {
    var ent: vec4<u32>;
    var rem = i;
    for (var d = 3; d >= 0; d = d - 1) {
        let o = rem % P.out_dims[d];
        rem = rem / P.out_dims[d];
        ent[d] = P.t_off + P.tbase[d] + o * 2u * P.taps[d];
    }
    return ent;
}

// The input element that a nearest output element copies (ent: its
// entries).
fn nearest_src(ent: vec4<u32>) -> u32 {
    var idx = 0u;
    for (var d = 0u; d < 4u; d = d + 1u) { idx = idx * P.in_dims[d] + TB[ent[d]]; }
    return idx;
}

//!main1d i < P.total {
    if (BYTES) { // nearest without extrapolation (lower_nn.c)
        var word = 0u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            let e = 4u * i + j;
            if (e >= P.elems) { break; }
            let b = P.x_off * 4u + nearest_src(entries(e));
            word = word | (((t_bits(X[b >> 2u]) >> ((b & 3u) * 8u)) & 0xffu) << (8u * j));
        }
        Y[P.y_off + i] = t_from_bits(word);
        return;
    }
    let ent = entries(i); // each axis's table entry
    for (var d = 0u; d < 4u; d = d + 1u) {
        if (TB[ent[d]] == 0xffffffffu) {
            y_store(i, P.extrap);
            return;
        }
    }
    if (!LINEAR) {
        Y[P.y_off + i] = X[P.x_off + nearest_src(ent)];
        return;
    }
    let corners = P.taps[0] * P.taps[1] * P.taps[2] * P.taps[3];
    var acc = 0.0;
    for (var c = 0u; c < corners; c = c + 1u) {
        var t: vec4<u32>;
        var q = c;
        for (var d = 3; d >= 0; d = d - 1) {
            t[d] = q % P.taps[d];
            q = q / P.taps[d];
        }
        var w = 1.0;
        var idx = 0u;
        for (var d = 0u; d < 4u; d = d + 1u) {
            w = w * bitcast<f32>(TB[ent[d] + P.taps[d] + t[d]]);
            idx = idx * P.in_dims[d] + TB[ent[d] + t[d]];
        }
        acc = acc + w * x_f32(idx);
    }
    y_store(i, acc);
}
