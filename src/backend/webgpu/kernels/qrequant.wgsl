// (not a kernel: included by qgemm.wgsl, qgemm_dp4.wgsl and qdwconv.wgsl,
// which declare the TB binding (the host's table), P.y_zp and the override
// Y_SIGNED) The requantization of the integer GEMM and convolutions, with
// the CPU's bits (src/backend/cpu/cpu_quant.c: q_saturate of the f32
// product (float)acc * mult, mult an f32: rlx_quant_mult in
// ir/ops/quant_params.h): TB holds four words per row parameter, mult's
// significand as a 53-bit integer (high 21 bits, low 32 bits; an f32's
// low 29 bits are 0), its exponent (i32; mult = sig * 2^exp) and an i32
// bias added to acc (wrapping) first. |acc| is rounded to 24 significant
// bits (f32(acc), ties to even), the product formed exactly (96 bits),
// rounded to 24 bits (the f32 product, ties to even), then to an integer
// (ties to even); y_zp is added and the result saturated to Y's 8-bit
// range. (An f32 product that would overflow or be subnormal saturates or
// rounds to 0 either way.)

// 96-bit unsigned integers as three limbs, low first

// a * b as (low, high) words.
fn mul64(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

fn bitlen(v: vec3<u32>) -> u32 {
    if (v.z != 0u) { return 65u + firstLeadingBit(v.z); }
    if (v.y != 0u) { return 33u + firstLeadingBit(v.y); }
    if (v.x != 0u) { return 1u + firstLeadingBit(v.x); }
    return 0u;
}

fn limb(v: vec3<u32>, i: u32) -> u32 {
    if (i == 0u) { return v.x; }
    if (i == 1u) { return v.y; }
    if (i == 2u) { return v.z; }
    return 0u;
}

// floor(v / 2^s), s < 96
fn shr(v: vec3<u32>, s: u32) -> vec3<u32> {
    let w = s / 32u; let b = s % 32u;
    var r = vec3<u32>(0u);
    for (var i = 0u; i < 3u; i = i + 1u) {
        var x = limb(v, i + w) >> b;
        if (b != 0u) { x = x | (limb(v, i + w + 1u) << (32u - b)); }
        if (i == 0u) { r.x = x; } else if (i == 1u) { r.y = x; } else { r.z = x; }
    }
    return r;
}

// whether any of the bits below bit p (p <= 96) is set
fn any_below(v: vec3<u32>, p: u32) -> bool {
    for (var i = 0u; i < 3u; i = i + 1u) {
        let c = clamp(i32(p) - 32 * i32(i), 0, 32);
        let mask = select((1u << u32(c)) - 1u, 0xffffffffu, c >= 32);
        if ((limb(v, i) & mask) != 0u) { return true; }
    }
    return false;
}

// v / 2^s rounded to nearest, ties to even (s >= 1; any s)
fn shr_round(v: vec3<u32>, s: u32) -> vec3<u32> {
    if (s > 96u) { return vec3<u32>(0u); }
    var q = vec3<u32>(0u);
    if (s < 96u) { q = shr(v, s); }
    let half = ((limb(v, (s - 1u) / 32u) >> ((s - 1u) % 32u)) & 1u) == 1u;
    if (half && (any_below(v, s - 1u) || (q.x & 1u) == 1u)) {
        q.x = q.x + 1u;
        if (q.x == 0u) { q.y = q.y + 1u; if (q.y == 0u) { q.z = q.z + 1u; } }
    }
    return q;
}

// saturate(round_half_even(f32(f32(acc0 + bias) * mult)) + y_zp) with mult
// and bias from TB at word t
fn requant(acc0: i32, t: u32) -> i32 {
    let lo = select(0, -128, Y_SIGNED == 1u);
    let hi = lo + 255;
    let mhi = TB[t]; let mlo = TB[t + 1u]; let e = bitcast<i32>(TB[t + 2u]);
    let acc = acc0 + bitcast<i32>(TB[t + 3u]);
    var mag = select(bitcast<u32>(acc), bitcast<u32>(0 - acc), acc < 0);
    // f32(acc): 24 significant bits (the rounded value <= 2^32 / 2^s fits a word)
    var f = e;
    let la = bitlen(vec3<u32>(mag, 0u, 0u));
    if (la > 24u) { mag = shr_round(vec3<u32>(mag, 0u, 0u), la - 24u).x; f = f + i32(la - 24u); }
    let p0 = mul64(mag, mlo); let p1 = mul64(mag, mhi);
    let y = p0.y + p1.x;
    var p = vec3<u32>(p0.x, y, p1.y + select(0u, 1u, y < p0.y));
    // the f32 product: 24 significant bits
    let l = bitlen(p);
    if (l > 24u) { p = shr_round(p, l - 24u); f = f + i32(l - 24u); }
    // then to an integer; |result| capped at 2^24 (saturates below)
    var r = 0u;
    let lp = bitlen(p);
    if (lp == 0u) {
        r = 0u;
    } else if (f >= 0) {
        r = select(p.x << u32(f), 1u << 24u, i32(lp) + f > 24);
    } else {
        let q = shr_round(p, u32(-f));
        r = select(q.x, 1u << 24u, q.y != 0u || q.z != 0u || q.x > (1u << 24u));
    }
    let v = select(i32(r), -i32(r), acc < 0) + P.y_zp;
    return clamp(v, lo, hi);
}
