// GridSample (ONNX GridSample-16/20/22), X, grid and Y of one type T (f32
// or f16: loaded as f32, Y rounded once at the store): X [N, C, D1..Dr]
// sampled at grid [N, O1..Or, r] into Y [N, C, O1..Or], r = R in 1..3; MODE nearest,
// linear or cubic (r = 2), PAD zeros, border or reflection, ALIGN
// (align_corners). The CPU's semantics (ir/ops/gridsample.h: onnxruntime's
// coordinate x = ((g + 1) * len - 1) / 2 or (g + 1) / 2 * (len - 1) in f32,
// nearest rounds ties to even, the padding applied to each tap's integer
// index), computed in f32 with the weights of each tap (the CPU: f64).
// One invocation per output point (n, o): its taps and the corner list
// (at most 16 offsets and weights) once, then every channel's sum.
// Special grid values by bits (an f16 value widened to f32 first, which is
// exact and keeps NaN and +-inf), before any arithmetic (a driver may assume
// no NaN or infinity): NaN gives NaN in every channel, +-inf reads 0
// (zeros), the edge (border) or NaN (reflection). Coordinates of 2^30 or
// more (integers in f32): zeros reads 0, border the edge (as any far
// coordinate), reflection the pixel of their exact remainder (mod_big), as
// the CPU's fmod.
// Params: x_off, g_off, y_off (elements of T), npts (N * O), c,
// opts (O, points of one image), plane (D1 * .. * Dr), in_len and
// in_stride (the spatial dims of X and their strides in a plane, in
// order, unused entries 1).
//!params x_off: u32, g_off: u32, y_off: u32, npts: u32, c: u32, opts: u32, plane: u32,
//!params in_len: vec4<u32>, in_stride: vec4<u32>
//!elem f32 f16
//!bind X: array<T>, G: array<T>, Y: array<T>
//!include codes
override MODE: u32 = 0u;
override PAD: u32 = 0u;
override ALIGN: bool = false;
override R: u32 = 2u;

// Pixel index of tap t along an axis of len pixels, or -1 (zeros: outside).
fn pad_index(t: i32, len: i32) -> i32 {
    if (PAD == GS_ZEROS) {
        if (t >= 0 && t < len) { return t; }
        return -1;
    }
    if (PAD == GS_BORDER) { return clamp(t, 0, len - 1); }
    var m: i32;
    if (!ALIGN) { // mirror about -0.5 and len - 0.5: period 2 len
        let p = 2 * len;
        var u = t;
        if (u < 0) { u = -1 - u; }
        m = u % p;
        if (m >= len) { m = p - 1 - m; }
    } else { // about 0 and len - 1: period 2 (len - 1); a length of 1 reads its pixel
        if (len == 1) { return 0; }
        let p = 2 * (len - 1);
        m = abs(t) % p;
        if (m > len - 1) { m = p - m; }
    }
    return clamp(m, 0, len - 1);
}

// x mod p, exactly, for an f32 x >= 2^24 (an integer: its 24-bit mantissa
// m times 2^e, e >= 1) and 0 < p < 2^30: (m mod p) (2^e mod p) mod p, by
// doublings that stay below 2^31.
fn mod_big(x: f32, p: u32) -> u32 {
    let b = bitcast<u32>(x);
    let m = (b & 0x7fffffu) | 0x800000u;
    let e = ((b >> 23u) & 0xffu) - 150u;
    var pw = 1u % p;
    for (var k = 0u; k < e; k = k + 1u) {
        pw = pw * 2u;
        if (pw >= p) { pw = pw - p; }
    }
    let a = m % p;
    var acc = 0u;
    for (var k = 31; k >= 0; k = k - 1) {
        acc = acc * 2u;
        if (acc >= p) { acc = acc - p; }
        if (((pw >> u32(k)) & 1u) == 1u) {
            acc = acc + a;
            if (acc >= p) { acc = acc - p; }
        }
    }
    return acc;
}

//!main1d i < P.npts {
    let n = i / P.opts;
    let o = i % P.opts;
    let taps = select(select(4u, 2u, MODE == GS_LINEAR), 1u, MODE == GS_NEAREST);
    var tidx: array<array<i32, 4>, 3>;
    var tw: array<array<f32, 4>, 3>;
    var nan_pt = false;
    var outside = false;
    for (var d = 0u; d < R; d = d + 1u) {
        let len = i32(P.in_len[d]);
        let bits = bitcast<u32>(f32(G[P.g_off + i * R + (R - 1u - d)])); // grid[..., 0] is the innermost dim
        let mag = bits & 0x7fffffffu;
        if (mag > 0x7f800000u) { nan_pt = true; break; }
        var x = 0.0;
        var far = mag == 0x7f800000u; // +-inf
        var neg = (bits >> 31u) == 1u;
        if (!far) {
            let g = bitcast<f32>(bits);
            if (ALIGN) {
                x = (g + 1.0) / 2.0 * f32(len - 1);
            } else {
                x = ((g + 1.0) * f32(len) - 1.0) / 2.0;
            }
            if (MODE == GS_NEAREST) { x = round(x); } // ties to even
            let xb = bitcast<u32>(x);
            neg = (xb >> 31u) == 1u;
            far = (xb & 0x7fffffffu) >= 0x4e800000u; // |x| >= 2^30, or an overflow to inf
        }
        var base = 0;
        var t = 0.0;
        if (far) {
            if (PAD == GS_ZEROS) { outside = true; continue; }
            if (PAD == GS_BORDER) {
                base = select(len + 3, -4, neg); // every tap at the edge, t = 0 as for any integer x
            } else {
                if ((bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u || mag == 0x7f800000u) { nan_pt = true; break; }
                // reflection of an integer x of 2^30 or more: an index of the same
                // reflected pixels (and neighbours) within one period, from x's exact remainder
                if (ALIGN && len == 1) {
                    base = 0;
                } else {
                    let p = select(2 * len, 2 * (len - 1), ALIGN);
                    let mu = i32(mod_big(abs(x), u32(p)));
                    if (ALIGN) {
                        base = select(mu, -mu, neg);
                    } else if (neg) {
                        base = -1 - ((mu + p - 1) % p); // the mirror of |x| - 1
                    } else {
                        base = mu;
                    }
                }
            }
        } else {
            let f = floor(x);
            base = i32(f);
            t = x - f;
        }
        if (MODE == GS_NEAREST) {
            tidx[d][0] = pad_index(base, len);
            tw[d][0] = 1.0;
        } else if (MODE == GS_LINEAR) {
            tidx[d][0] = pad_index(base, len);
            tidx[d][1] = pad_index(base + 1, len);
            tw[d][0] = 1.0 - t;
            tw[d][1] = t;
        } else { // cubic: Keys, A = -0.75, taps base - 1 .. base + 2
            let a = -0.75;
            let s = t + 1.0;
            let q = 1.0 - t;
            let v = 2.0 - t;
            tw[d][0] = ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a;
            tw[d][1] = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
            tw[d][2] = ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0;
            tw[d][3] = ((a * v - 5.0 * a) * v + 8.0 * a) * v - 4.0 * a;
            for (var j = 0; j < 4; j = j + 1) { tidx[d][j] = pad_index(base - 1 + j, len); }
        }
    }
    let yb = P.y_off + n * P.c * P.opts + o;
    if (nan_pt || outside) {
        let v = T(bitcast<f32>(select(0u, 0x7fc00000u, nan_pt))); // a quiet NaN (no constant: its bits at run time), or 0
        for (var c = 0u; c < P.c; c = c + 1u) { Y[yb + c * P.opts] = v; }
        return;
    }
    var co: array<i32, 16>;
    var cw: array<f32, 16>;
    var nc = 0u;
    var corners = 1u;
    for (var d = 0u; d < R; d = d + 1u) { corners = corners * taps; }
    for (var k = 0u; k < corners; k = k + 1u) {
        var q = k;
        var off = 0;
        var w = 1.0;
        var inside = true;
        for (var e = 0u; e < R; e = e + 1u) {
            let d = R - 1u - e; // the last axis varies fastest, as on the CPU
            let j = q % taps;
            q = q / taps;
            let ix = tidx[d][j];
            inside = inside && ix >= 0;
            off = off + ix * i32(P.in_stride[d]);
            w = w * tw[d][j];
        }
        if (inside) {
            co[nc] = off;
            cw[nc] = w;
            nc = nc + 1u;
        }
    }
    let xb = P.x_off + n * P.c * P.plane;
    for (var c = 0u; c < P.c; c = c + 1u) {
        let xc = xb + c * P.plane;
        var acc = 0.0;
        for (var k = 0u; k < nc; k = k + 1u) { acc = acc + cw[k] * f32(X[xc + u32(co[k])]); }
        Y[yb + c * P.opts] = T(acc);
    }
}
