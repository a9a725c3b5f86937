// Cast between element types, with the CPU reference's C semantics:
// float to integer truncates toward zero (NaN gives 0, values past the
// target's range, +-inf included, saturate to it); integer to integer
// keeps the low bits (a 32-bit result the low word); integer to float
// rounds to nearest;
// bool is x != 0 (NaN is true). Semantics: ONNX Cast-1..23, CastLike-15..23.
// SRC / DST: type codes (TY_* of wg_codes.h: f32, i32, u32, bool, i64, f16).
// Layouts (README.md, "Element types"): 4-byte types one word each, i64
// (low, high) word pairs, bool four bytes to a word, f16 two halves to a
// word (read with unpack2x16float, so no shader-f16 is needed). One
// invocation per element, except for a bool output: one per word (four
// elements), and an f16 output: one per word (two elements, packed with
// pack2x16float: f32 rounded to nearest binary16; past +-65504 WGSL leaves
// the result to the implementation, lavapipe and NVIDIA give +-inf; an
// odd count's last word gets 0 in its padding half). To f16 from anything
// but f32 goes through f32 (i32 beyond 2^24 rounds twice).
// i64 to f32 beyond the i32 range rounds twice (high and low word), so it
// can differ from the CPU's correctly rounded result in the last bit.
// Params: x_off, y_off, n (elements), threads.
//!params x_off: u32, y_off: u32, n: u32, threads: u32
//!bind X: array<u32>, Y: array<u32>
override SRC: u32 = 0u;
override DST: u32 = 0u;

//!include codes

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

fn sign_word(lo: u32) -> u32 { return select(0u, 0xffffffffu, bitcast<i32>(lo) < 0); }

fn f32_to_i64(v: f32) -> vec2<u32> {
    if (is_nan(v)) { return vec2<u32>(0u, 0u); }
    if (v >= 9.223372e18) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (v < -9.223372e18) { return vec2<u32>(0u, 0x80000000u); }
    let t = trunc(v);
    if (abs(t) < 2147483648.0) {
        let i = bitcast<u32>(i32(t));
        return vec2<u32>(i, sign_word(i));
    }
    // |t| >= 2^31 has at most 24 significant bits: both parts are exact
    let h = floor(t / 4294967296.0);
    let l = t - h * 4294967296.0;
    return vec2<u32>(u32(l), bitcast<u32>(i32(h)));
}

fn i64_to_f32(lo: u32, hi: u32) -> f32 {
    if (hi == sign_word(lo)) { return f32(bitcast<i32>(lo)); }
    return f32(bitcast<i32>(hi)) * 4294967296.0 + f32(lo);
}

fn load_half(e: u32) -> f32 {
    let h = P.x_off * 2u + e;
    return unpack2x16float(X[h >> 1u])[h & 1u];
}

fn load_bool(e: u32) -> u32 {
    let i = P.x_off * 4u + e;
    return (X[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

// Element e as an i64 (low, high).
fn as_i64(e: u32) -> vec2<u32> {
    switch SRC {
        case TY_F32: { return f32_to_i64(bitcast<f32>(X[P.x_off + e])); }
        case TY_I32: { let v = X[P.x_off + e]; return vec2<u32>(v, sign_word(v)); }
        case TY_U32: { return vec2<u32>(X[P.x_off + e], 0u); }
        case TY_BOOL: { return vec2<u32>(select(0u, 1u, load_bool(e) != 0u), 0u); }
        case TY_F16: { return f32_to_i64(load_half(e)); }
        default: { return vec2<u32>(X[P.x_off + 2u * e], X[P.x_off + 2u * e + 1u]); }
    }
}

fn as_f32(e: u32) -> f32 {
    switch SRC {
        case TY_F32: { return bitcast<f32>(X[P.x_off + e]); }
        case TY_I32: { return f32(bitcast<i32>(X[P.x_off + e])); }
        case TY_U32: { return f32(X[P.x_off + e]); }
        case TY_BOOL: { return select(0.0, 1.0, load_bool(e) != 0u); }
        case TY_F16: { return load_half(e); }
        default: { return i64_to_f32(X[P.x_off + 2u * e], X[P.x_off + 2u * e + 1u]); }
    }
}

fn as_bool(e: u32) -> bool {
    switch SRC {
        case TY_F32: { return bitcast<f32>(X[P.x_off + e]) != 0.0 || is_nan(bitcast<f32>(X[P.x_off + e])); }
        case TY_BOOL: { return load_bool(e) != 0u; }
        case TY_I64: { return (X[P.x_off + 2u * e] | X[P.x_off + 2u * e + 1u]) != 0u; }
        case TY_F16: { let v = load_half(e); return v != 0.0 || is_nan(v); }
        default: { return X[P.x_off + e] != 0u; }
    }
}

//!main1d t < P.threads {
    switch DST {
        case TY_F32: { Y[P.y_off + t] = bitcast<u32>(as_f32(t)); }
        case TY_I32, TY_U32: {
            let v = as_i64(t);
            var r = v.x;
            if ((SRC == TY_F32 || SRC == TY_F16) && v.y != select(0u, sign_word(v.x), DST == TY_I32)) {
                // a float past the 32-bit range: saturate (v.y's sign bit is the value's)
                let neg = bitcast<i32>(v.y) < 0;
                r = select(select(0xffffffffu, 0u, neg), select(0x7fffffffu, 0x80000000u, neg), DST == TY_I32);
            }
            Y[P.y_off + t] = r;
        }
        case TY_F16: {
            let hi = select(0.0, as_f32(2u * t + 1u), 2u * t + 1u < P.n);
            Y[P.y_off + t] = pack2x16float(vec2<f32>(as_f32(2u * t), hi));
        }
        case TY_BOOL: {
            var w = 0u;
            for (var k = 0u; k < 4u; k = k + 1u) {
                let e = t * 4u + k;
                if (e < P.n && as_bool(e)) { w = w | (1u << (k * 8u)); }
            }
            Y[P.y_off + t] = w;
        }
        default: {
            let v = as_i64(t);
            Y[P.y_off + 2u * t] = v.x;
            Y[P.y_off + 2u * t + 1u] = v.y;
        }
    }
}
