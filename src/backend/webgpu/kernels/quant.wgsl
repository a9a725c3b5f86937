// QuantizeLinear and DequantizeLinear (ONNX 10..23) between f32 and 8-bit
// integers, per tensor or per axis, with the CPU reference's arithmetic
// (src/backend/cpu/cpu_quant.c): quantize y = saturate(round_half_even(x /
// s) + z) with one correctly rounded f32 division (qround_ of ew_lib: the
// same bits on every GPU; a NaN quotient gives the type's minimum);
// dequantize y = f32(x - z) * s. The parameter of element e is at p = (e /
// inner) % da (per tensor: inner = n, da = 1).
// Layout (README.md, "Element types"): int8 and uint8 tensors are one byte
// per element, four to a word (the host's bytes), like bool; a quantize
// invocation writes one whole word (four elements, the last word's padding
// bytes 0), a dequantize invocation one f32 element. S holds f32 scales, Z
// the zero points as bytes (absent: HAS_ZP 0, Z is a stand-in).
// Params: offsets in words (x_off, s_off, z_off, y_off), n elements, inner,
// da, threads.
//!audited t < threads (n, or ceil(n / 4) words of four levels), elements e < n; X, Y at t or e within numel(x) =
//!audited numel(y) (lower_quant); S, Z at p = (e / inner) % da < da, the scale's (and zero point's) elements
//!audited (rlx_quant_resolve_gran: da = x's dim on the axis or 1)
//!include act
//!params x_off: u32, s_off: u32, z_off: u32, y_off: u32, n: u32, inner: u32, da: u32, threads: u32
//!bind X: array<u32>, S: array<u32>, Z: array<u32>, Y: array<u32>
override DEQUANT: u32 = 0u; // 0: QuantizeLinear, 1: DequantizeLinear
override SIGNED: u32 = 0u;  // int8 (else uint8)
override HAS_ZP: u32 = 0u;

fn byte_at(w: u32, i: u32) -> i32 {
    let b = (w >> ((i & 3u) * 8u)) & 0xffu;
    return select(i32(b), i32(b) - 256 * i32(b >> 7u), SIGNED == 1u);
}

fn zero_point(p: u32) -> i32 {
    if (HAS_ZP == 0u) { return 0; }
    let i = P.z_off * 4u + p;
    return byte_at(Z[i >> 2u], i);
}

fn param(e: u32) -> u32 { return (e / P.inner) % P.da; }

//!main1d t < P.threads {
    if (DEQUANT == 1u) {
        let i = P.x_off * 4u + t;
        let p = param(t);
        let d = byte_at(X[i >> 2u], i) - zero_point(p);
        Y[P.y_off + t] = bitcast<u32>(f32(d) * bitcast<f32>(S[P.s_off + p]));
        return;
    }
    let lo = select(0.0, -128.0, SIGNED == 1u);
    var word = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) {
        let e = 4u * t + k;
        if (e >= P.n) { break; }
        let p = param(e);
        let z = f32(zero_point(p));
        let r = clamp(qround_(bitcast<f32>(X[P.x_off + e]), bitcast<f32>(S[P.s_off + p]), lo - z) + z, lo, lo + 255.0);
        word = word | ((bitcast<u32>(i32(r)) & 0xffu) << (8u * k));
    }
    Y[P.y_off + t] = word;
}
