// (not a kernel: included by qdwconv.wgsl, with the written-out qdot of
// qdot.wgsl, and by qdwconv_dp4.wgsl, with dot4I8Packed (qdot_dp4.wgsl),
// each after qrequant.wgsl; lower_qgemm.c's emit_qdwconv picks one by
// caps.dot4) The depthwise integer convolution (ConvInteger-10,
// QLinearConv-10 with one input channel per group, 1-D or 2-D): each
// output sums its taps directly, as the CPU reference's loop (cpu_quant.c:
// conv_run), no im2col:
//   acc[n, m, oh, ow] = sum_{kr, kc inside x} (x[n, m / mult, ih, iw] - zx) (w[m, 0, kr, kc] - zw[m])
//   ih = oh * s_h - p_h + kr * dil_h (likewise iw), mult = output channels per group
// in i32, wrapping (|each product| <= 255^2); a tap in the padding is
// skipped (it would contribute 0). y: the i32 sums, or (REQUANT) the 8-bit
// outputs through qrequant.wgsl's table (row m: x_scale * w_scale[m] /
// y_scale and the bias B[m]), four to a word. An invocation computes four
// consecutive outputs (one word of 8-bit outputs), those on one output row
// together (dw_row4; QDW_ROW 2: with 4x8 dot products per kernel row,
// dw_row4_dot, where the row's taps allow), else one by one (dw_acc);
// QDW_ROW 0 (legacy): i32 outputs one per invocation, 8-bit ones one word
// each, always dw_acc.
// Params: offsets in words (X, W, ZX, ZW, Y, TB), c_out, mult, geometry,
// zw_step (0: one w zero point, 1: per output channel), total (outputs),
// threads, y_zp.
//!params x_off: u32, w_off: u32, zx_off: u32, zw_off: u32, y_off: u32, t_off: u32, c_out: u32, mult: u32
//!params in_h: u32, in_w: u32, out_h: u32, out_w: u32, k_h: u32, k_w: u32, s_h: u32, s_w: u32, p_h: u32
//!params p_w: u32, dil_h: u32, dil_w: u32, zw_step: u32, total: u32, threads: u32, y_zp: i32
//!bind X: array<u32>, W: array<u32>, ZX: array<u32>, ZW: array<u32>, Y: array<u32>, TB: array<u32>
// the integer GEMM's names (qgemm_body.wgsl): a is w, b is x
override A_SIGNED: u32 = 0u; // w
override B_SIGNED: u32 = 0u; // x
override HAS_ZA: u32 = 0u;   // w's zero point
override HAS_ZB: u32 = 0u;   // x's zero point
override REQUANT: u32 = 0u; // 0: y is i32; 1: y is 8-bit (Y_SIGNED)
override Y_SIGNED: u32 = 0u;

// The value of byte i (a byte index from the binding's start) of a word array's word w.
fn byte_val(w: u32, i: u32, signed: u32) -> i32 {
    let b = i32((w >> ((i & 3u) * 8u)) & 0xffu);
    return select(b, b - 256 * (b >> 7u), signed == 1u);
}

// 1: an invocation's four outputs on one output row share the zero
// points, the weights and the tap indices (dw_row4: the f32 depthwise
// kernel's organisation, dwconv.wgsl), one product per tap; 2: as 1, a
// kernel row of taps in one or two 4x8 dot products per output where it
// can (dw_row4_dot: qdwconv_dp4.wgsl, caps.dot4); 0: each output alone
// (dw_acc, as before: gpu.qgemm_tile=legacy)
override QDW_ROW: u32 = 1u;
// the kernel size (dw_row4's tap loops unroll)
override QDKH: u32 = 3u;
override QDKW: u32 = 3u;

// x's byte at byte index i (from the binding's start), as an i32
fn xbyte(i: u32) -> i32 {
    let w = X[i >> 2u];
    let s = (i & 3u) * 8u;
    if (B_SIGNED == 1u) { return extractBits(bitcast<i32>(w), s, 8u); }
    return i32(extractBits(w, s, 8u));
}

// x's four bytes from byte index i, unaligned, as one word
fn xword(i: u32) -> u32 {
    let s = (i & 3u) * 8u;
    var w = X[i >> 2u] >> s;
    if (s != 0u) { w = w | (X[(i >> 2u) + 1u] << (32u - s)); }
    return w;
}

// the four bytes of word w as i32s
fn bytes4(w: u32) -> vec4<i32> {
    if (B_SIGNED == 1u) {
        let v = bitcast<i32>(w);
        return vec4<i32>(extractBits(v, 0u, 8u), extractBits(v, 8u, 8u), extractBits(v, 16u, 8u), extractBits(v, 24u, 8u));
    }
    return vec4<i32>(vec4<u32>(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u));
}

// Output element e's channel m, row oh and column ow, the zero points of
// x and of m's weights, and the byte offset xb of its input plane.
struct DwAt { m: u32, oh: u32, ow: u32, zx: i32, zw: i32, xb: u32 }

fn dw_at(e: u32) -> DwAt {
    let sp = P.out_h * P.out_w;
    let pix = e % sp;
    let m = (e / sp) % P.c_out;
    let img = e / (sp * P.c_out);
    var zx = 0;
    if (HAS_ZB == 1u) { let i = P.zx_off * 4u; zx = byte_val(ZX[i >> 2u], i, B_SIGNED); }
    var zw = 0;
    if (HAS_ZA == 1u) { let i = P.zw_off * 4u + m * P.zw_step; zw = byte_val(ZW[i >> 2u], i, A_SIGNED); }
    let c_in = P.c_out / P.mult;
    let xb = P.x_off * 4u + (img * c_in + m / P.mult) * P.in_h * P.in_w;
    return DwAt(m, pix / P.out_w, pix % P.out_w, zx, zw, xb);
}

// Bytes s / 8 .. s / 8 + 3 of the pair (a, b), a the low word (s 0, 8,
// 16 or 24): b shifted left by 32 - s in two steps (s 0: by 32, none of b).
fn fsh(a: u32, b: u32, s: u32) -> u32 {
    return (a >> s) | ((b << 1u) << (31u - s));
}

// dw_row4's sums where every tap of the four outputs lies inside x's row
// (inner), dil_w 1, s_w 1 or 2 and k_w <= 5: output j's taps of kernel row
// kr are the k_w bytes from byte s_w j of the row's window (x's bytes
// iw0 .. iw0 + 3 s_w + k_w - 1), so one dot product of the window's word
// at s_w j with the kernel row as a word (its k_w bytes, zero above) sums
// them (k_w 5: a second of byte s_w j + 4 with the fifth weight). In the
// signed domain of the integer GEMM (qgemm_body.wgsl): a uint8 operand's
// bytes and zero point less 128 (x' = x ^ 0x80 as an int8), so one signed
// product serves both signednesses, and with n = k_w taps per row inside
// x
//   sum (x - zx)(w - zw) = sum (x' - zx')(w' - zw')
//                        = dot(x', w') - zw' sum x' - zx' (sum w' - n zw')
// sum x' from dot products with ones (only where zw' != 0), sum w' once
// per row for the four outputs. i32, wrapping: dw_row4's bits.
fn dw_row4_dot(o: DwAt, iw0: u32) -> vec4<i32> {
    let flipx = select(0x80808080u, 0u, B_SIGNED == 1u);
    let flipw = select(0x80808080u, 0u, A_SIGNED == 1u);
    let zxp = o.zx - select(128, 0, B_SIGNED == 1u);
    let zwp = o.zw - select(128, 0, A_SIGNED == 1u);
    // the first (up to) four taps of a kernel row: its bytes in a word
    let k4 = min(QDKW, 4u);
    let kmask = 0xffffffffu >> (8u * (4u - k4));
    let ones = 0x01010101u & kmask;
    let wb = P.w_off * 4u + o.m * QDKH * QDKW;
    var d = vec4<i32>(0);
    var sx = vec4<i32>(0);
    var wsum = 0; // sum over the rows inside x of (sum w' - k_w zw')
    for (var kr = 0u; kr < QDKH; kr = kr + 1u) {
        let ih = i32(o.oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
        if (ih < 0 || ih >= i32(P.in_h)) { continue; }
        // the kernel row: bytes wi .. wi + k_w - 1 of W (the second word
        // only where a byte lies in it)
        let wi = wb + kr * QDKW;
        let ws = (wi & 3u) * 8u;
        let a0 = W[wi >> 2u];
        var a1 = 0u;
        if ((wi & 3u) + QDKW > 4u) { a1 = W[(wi >> 2u) + 1u]; }
        let wa = (fsh(a0, a1, ws) ^ flipw) & kmask;
        var w5 = 0u; // k_w 5: the fifth weight, byte 0
        if (QDKW == 5u) { w5 = ((a1 >> ws) ^ flipw) & 0xffu; }
        wsum = wsum + qdot(wa, ones) + qdot(w5, 1u) - i32(QDKW) * zwp;
        // the window from x's byte b0: words v0, v1, v2 (bytes 0 .. 11),
        // each loaded word holding a needed byte (inner: all in the row)
        let b0 = o.xb + u32(ih) * P.in_w + iw0;
        let xs = (b0 & 3u) * 8u;
        let last = (b0 & 3u) + 3u * P.s_w + QDKW - 1u;
        let q0 = X[b0 >> 2u];
        var q1 = 0u;
        var q2 = 0u;
        var q3 = 0u;
        if (last >= 4u) { q1 = X[(b0 >> 2u) + 1u]; }
        if (last >= 8u) { q2 = X[(b0 >> 2u) + 2u]; }
        if (last >= 12u) { q3 = X[(b0 >> 2u) + 3u]; }
        let v0 = fsh(q0, q1, xs) ^ flipx;
        let v1 = fsh(q1, q2, xs) ^ flipx;
        // output j's first four taps (xw) and its fifth in byte 0 (xf)
        var xw: vec4<u32>;
        var xf: vec4<u32>;
        if (P.s_w == 1u) {
            xw = vec4<u32>(v0, fsh(v0, v1, 8u), fsh(v0, v1, 16u), fsh(v0, v1, 24u));
            xf = vec4<u32>(v1, v1 >> 8u, v1 >> 16u, v1 >> 24u);
        } else {
            let v2 = fsh(q2, q3, xs) ^ flipx;
            xw = vec4<u32>(v0, fsh(v0, v1, 16u), v1, fsh(v1, v2, 16u));
            xf = vec4<u32>(v1, v1 >> 16u, v2, v2 >> 16u);
        }
        d = d + vec4<i32>(qdot(xw.x, wa), qdot(xw.y, wa), qdot(xw.z, wa), qdot(xw.w, wa));
        if (QDKW == 5u) { d = d + vec4<i32>(qdot(xf.x, w5), qdot(xf.y, w5), qdot(xf.z, w5), qdot(xf.w, w5)); }
        if (zwp != 0) {
            sx = sx + vec4<i32>(qdot(xw.x, ones), qdot(xw.y, ones), qdot(xw.z, ones), qdot(xw.w, ones));
            if (QDKW == 5u) {
                sx = sx + vec4<i32>(qdot(xf.x, 1u), qdot(xf.y, 1u), qdot(xf.z, 1u), qdot(xf.w, 1u));
            }
        }
    }
    return d - zwp * sx - vec4<i32>(zxp * wsum);
}

// The sums of the four outputs e0 .. e0 + 3 of one output row (e0 % out_w
// + 3 < out_w): each output's products are dw_acc's,
// (x - zx) (w - zw) per tap inside x (i32, wrapping: the same bits in any
// order); a row of taps whose four outputs' x lie inside the input row
// loads its x as words (s_w 1: four adjacent bytes, one unaligned word;
// s_w 2: bytes 0, 2 of one and 1, 3 of the next from byte 3), else byte by byte with bounds checks.
// QDW_ROW 2: four outputs whose taps all lie inside x's rows, at dil_w 1,
// s_w 1 or 2 and k_w <= 5, sum a kernel row per dot product instead
// (dw_row4_dot, the same bits).
fn dw_row4(e0: u32) -> vec4<i32> {
    let o = dw_at(e0);
    let wb = P.w_off * 4u + o.m * QDKH * QDKW;
    let iw0 = i32(o.ow * P.s_w) - i32(P.p_w);
    // every tap column of the four outputs inside the input row
    let inner = iw0 >= 0 && iw0 + i32(3u * P.s_w + (QDKW - 1u) * P.dil_w) < i32(P.in_w);
    if (QDW_ROW == 2u && inner && P.dil_w == 1u && P.s_w <= 2u && QDKW <= 5u) { return dw_row4_dot(o, u32(iw0)); }
    let zx4 = vec4<i32>(o.zx);
    var acc = vec4<i32>(0);
    // s_w 1, dil_w 1, kernels up to 5 wide: the row's bytes iw0 .. iw0 + 7
    // (the four outputs' taps) as two words from at most three loads
    let win = inner && P.s_w == 1u && P.dil_w == 1u && QDKW <= 5u;
    for (var kr = 0u; kr < QDKH; kr = kr + 1u) {
        let ih = i32(o.oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
        if (ih < 0 || ih >= i32(P.in_h)) { continue; }
        let xr = o.xb + u32(ih) * P.in_w;
        if (win) {
            let b0 = xr + u32(iw0);
            let s = (b0 & 3u) * 8u;
            // the last byte needed, counted from word b0 / 4's first: words
            // past it are not loaded (inner: every needed byte, up to iw0 + 3 +
            // QDKW - 1, lies inside the row)
            let last = (b0 & 3u) + QDKW + 2u;
            let q0 = X[b0 >> 2u];
            var q1 = 0u;
            var q2 = 0u;
            if (last >= 4u) { q1 = X[(b0 >> 2u) + 1u]; }
            if (last >= 8u) { q2 = X[(b0 >> 2u) + 2u]; }
            let lo = fsh(q0, q1, s);
            let hi = fsh(q1, q2, s);
            for (var kc = 0u; kc < QDKW; kc = kc + 1u) {
                let wi = wb + kr * QDKW + kc;
                let wv = byte_val(W[wi >> 2u], wi, A_SIGNED) - o.zw;
                var xw = hi;
                if (kc < 4u) { xw = fsh(lo, hi, 8u * kc); }
                acc = acc + (bytes4(xw) - zx4) * wv;
            }
            continue;
        }
        for (var kc = 0u; kc < QDKW; kc = kc + 1u) {
            let wi = wb + kr * QDKW + kc;
            let wv = byte_val(W[wi >> 2u], wi, A_SIGNED) - o.zw;
            let iw = iw0 + i32(kc * P.dil_w);
            if (inner) {
                let xi = xr + u32(iw);
                var xv: vec4<i32>;
                if (P.s_w == 1u) {
                    xv = bytes4(xword(xi));
                } else if (P.s_w == 2u) {
                    let lo = xword(xi);
                    let hi = xword(xi + 3u); // bytes 3 .. 6: none past the row's last tap
                    xv = bytes4((lo & 0xffu) | ((lo >> 8u) & 0xff00u) | ((hi << 8u) & 0xff0000u) | (hi & 0xff000000u));
                } else {
                    xv = vec4<i32>(xbyte(xi), xbyte(xi + P.s_w), xbyte(xi + 2u * P.s_w), xbyte(xi + 3u * P.s_w));
                }
                acc = acc + (xv - zx4) * wv;
            } else {
                for (var j = 0u; j < 4u; j = j + 1u) {
                    let x = iw + i32(j * P.s_w);
                    if (x >= 0 && x < i32(P.in_w)) { acc[j] = acc[j] + (xbyte(xr + u32(x)) - o.zx) * wv; }
                }
            }
        }
    }
    return acc;
}

// (acc, channel) of output element e
fn dw_acc(e: u32) -> vec2<i32> {
    let o = dw_at(e);
    let wb = P.w_off * 4u + o.m * P.k_h * P.k_w;
    var acc = 0;
    for (var kr = 0u; kr < P.k_h; kr = kr + 1u) {
        let ih = i32(o.oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
        if (ih < 0 || ih >= i32(P.in_h)) { continue; }
        for (var kc = 0u; kc < P.k_w; kc = kc + 1u) {
            let iw = i32(o.ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
            if (iw < 0 || iw >= i32(P.in_w)) { continue; }
            let xi = o.xb + u32(ih) * P.in_w + u32(iw);
            let wi = wb + kr * P.k_w + kc;
            acc = acc + (byte_val(X[xi >> 2u], xi, B_SIGNED) - o.zx) * (byte_val(W[wi >> 2u], wi, A_SIGNED) - o.zw);
        }
    }
    return vec2<i32>(acc, i32(o.m));
}

// The outputs of invocation t (the kernels qdwconv.wgsl and qdwconv_dp4.wgsl
// call it from their entry points).
fn qdw_main(t: u32) {
    if (REQUANT == 0u && QDW_ROW == 0u) {
        Y[P.y_off + t] = bitcast<u32>(dw_acc(t).x);
        return;
    }
    // QDW_ROW: outputs 4 t .. 4 t + 3 (one word of 8-bit outputs)
    let e0 = 4u * t;
    if (QDW_ROW != 0u && e0 + 3u < P.total && e0 % P.out_w + 3u < P.out_w) {
        let acc = dw_row4(e0);
        let m = (e0 / (P.out_h * P.out_w)) % P.c_out;
        if (REQUANT == 0u) {
            for (var j = 0u; j < 4u; j = j + 1u) { Y[P.y_off + e0 + j] = bitcast<u32>(acc[j]); }
            return;
        }
        var word = 0u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            word = word | (qepi(e0 + j, requant(acc[j], P.t_off + 4u * m)) << (8u * j));
        }
        Y[P.y_off + t] = word;
        return;
    }
    if (REQUANT == 0u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
            if (e0 + j < P.total) { Y[P.y_off + e0 + j] = bitcast<u32>(dw_acc(e0 + j).x); }
        }
        return;
    }
    var word = 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let e = e0 + j;
        if (e >= P.total) { break; }
        let r = dw_acc(e);
        word = word | (qepi(e, requant(r.x, P.t_off + 4u * u32(r.y))) << (8u * j));
    }
    Y[P.y_off + t] = word;
}
