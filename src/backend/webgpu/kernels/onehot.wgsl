// OneHot: y[o, d, j] = (I[o, j] (+ depth when negative) == d) ? on : off
// over y viewed as [outer, depth, inner]. Semantics: ONNX OneHot-9/11
// (negative indices from 11: NEG). Indices: ITY (TY_* of wg_codes.h) F32
// (truncated toward zero), I32, I64 pairs (values must fit i32; others
// match no d). Values V = [off, on] as W units T each (1: f32, i32, u32;
// 2: i64 as words).
// One invocation per output element.
// Params: i_off, v_off, y_off, n (elements), depth, inner, w.
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!audited e < n = numel(I) depth; I at o inner + j < outer inner = numel(I) (two words: I64); the index only
//!audited compared, never an address; V at src + k < 2 w, its window; Y at e w + k < n w (lower_onehot, Hardmax)
//!params i_off: u32, v_off: u32, y_off: u32, n: u32, depth: u32, inner: u32, w: u32
//!bind I: array<u32>, V: array<T>, Y: array<T>
override ITY: u32 = 1u;
override NEG: bool = true;

//!include codes

fn index_at(i: u32) -> i32 {
    switch ITY {
        case TY_F32: {
            let f = bitcast<f32>(I[P.i_off + i]);
            if (!(abs(f) < 2147483648.0)) { return i32(0x7fffffff); }
            return i32(f);
        }
        case TY_I64: {
            let lo = I[P.i_off + 2u * i];
            let hi = I[P.i_off + 2u * i + 1u];
            if (hi != select(0u, 0xffffffffu, bitcast<i32>(lo) < 0)) { return i32(0x7fffffff); }
            return bitcast<i32>(lo);
        }
        default: { return bitcast<i32>(I[P.i_off + i]); }
    }
}

//!main1d e < P.n {
    let j = e % P.inner;
    let r = e / P.inner;
    let d = r % P.depth;
    let o = r / P.depth;
    var v = index_at(o * P.inner + j);
    if (NEG && v < 0) { v = v + i32(P.depth); }
    let on = v >= 0 && u32(v) == d;
    let src = select(0u, P.w, on);
    for (var k = 0u; k < P.w; k = k + 1u) { Y[P.y_off + e * P.w + k] = V[P.v_off + src + k]; }
}
