// (not a kernel: included by qgemm.wgsl, qgemm_dp4.wgsl and qdwconv.wgsl,
// which declare the TB binding (the host's table), P.y_zp and the override
// Y_SIGNED) The requantization of the integer GEMM and convolutions, with
// the CPU's bits (src/backend/cpu/cpu_quant.c: q_saturate of the f32
// product (float)acc * mult, mult an f32: rlx_quant_mult in
// ir/ops/quant_params.h), in integer arithmetic (WGSL leaves f32 rounding
// and subnormals to the implementation): TB holds four words per row
// parameter, mult's 24-bit significand m (an integer), its exponent (i32;
// mult = m * 2^exp), 0, and an i32 bias added to acc (wrapping) first.
// |acc| is rounded to 24 significant bits (f32(acc), ties to even), the
// product with m formed exactly (< 2^49, two words), rounded to 24 bits
// (the f32 product, ties to even), then to an integer (ties to even);
// y_zp is added and the result saturated to Y's 8-bit range. (An f32
// product that would overflow or be subnormal saturates or rounds to 0
// either way.)

// a * b as (low, high) words.
fn mul64(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// The bit length of v (0 for 0): firstLeadingBit(0u) is 0xffffffff.
fn bitlen32(v: u32) -> u32 { return firstLeadingBit(v) + 1u; }

// floor(v / 2^s) + the rounding of the bits below, ties to even, as an
// unsigned (lo, hi) pair: v = lo + hi 2^32 with s in 1 .. 31 and the
// quotient below 2^32.
fn rne_shr64(lo: u32, hi: u32, s: u32) -> u32 {
    let q = (lo >> s) | (hi << (32u - s));
    let rem = lo & ((1u << s) - 1u);
    let half = 1u << (s - 1u);
    return q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u));
}

// saturate(round_half_even(f32(f32(acc0 + bias) * mult)) + y_zp) with mult
// and bias from TB at word t
fn requant(acc0: i32, t: u32) -> i32 {
    let lo = select(0, -128, Y_SIGNED == 1u);
    let hi = lo + 255;
    let m = TB[t];
    var f = bitcast<i32>(TB[t + 2u]);
    let acc = acc0 + bitcast<i32>(TB[t + 3u]);
    var mag = select(bitcast<u32>(acc), bitcast<u32>(0 - acc), acc < 0);
    // f32(acc): 24 significant bits (2^24 after rounding up: still exact)
    let la = bitlen32(mag);
    if (la > 24u) { mag = rne_shr64(mag, 0u, la - 24u); f = f + i32(la - 24u); }
    // the f32 product: 24 significant bits of mag * m (< 2^25 * 2^24)
    let p = mul64(mag, m);
    var q = p.x;
    let l = select(bitlen32(p.x), 32u + bitlen32(p.y), p.y != 0u);
    if (l > 24u) { q = rne_shr64(p.x, p.y, l - 24u); f = f + i32(l - 24u); }
    // then to an integer: q 2^f with q <= 2^24; |result| capped at 2^24
    // (saturates below); below 2^-25 q < 1/2 (or = 1/2, to even 0)
    var r = 0u;
    if (f >= 0) {
        r = select(q << u32(f), 1u << 24u, i32(bitlen32(q)) + f > 24);
    } else if (f >= -24) {
        r = rne_shr64(q, 0u, u32(-f));
    }
    let v = select(i32(r), -i32(r), acc < 0) + P.y_zp;
    return clamp(v, lo, hi);
}
