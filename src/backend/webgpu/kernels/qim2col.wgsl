// im2col of an int8/uint8 convolution (ConvInteger-10, QLinearConv-10;
// lower_qgemm.c), 1-D and 2-D (a 1-D conv has in_h = out_h = k_h = 1), NCHW,
// groups and dilation, into the packed B operand of the integer GEMM
// (qgemm_body.wgsl, B_PACKED): for every image nl, group gl and output
// pixel s = oh * out_w + ow, ceil(k_total / 4) words of four taps
//   col[((nl * g_cnt + gl) * spatial + s) * kw + k / 4] byte k % 4
//   k = (ci * k_h + kr) * k_w + kc,  k_total = cin_g * k_h * k_w
//   = x[nl, gl * cin_g + ci, oh * s_h - p_h + kr * dil_h, ow * s_w - p_w + kc * dil_w]
// A tap outside the input (padding) holds x's zero point (0 without one),
// so that it contributes (x - zx) = 0 to every sum, as the CPU's loop,
// which skips it. Bytes are stored in the signed domain of the GEMM (uint8
// v -> v ^ 0x80, i.e. v - 128); the bytes past k_total in the last word are
// 0 there, which the GEMM's sums ignore.
// Params: offsets in words (X, ZX, COL), geometry, k_total, kw = ceil(k_total
// / 4), total = n_cnt * g_cnt * spatial * kw (words, one invocation each).
//!params x_off: u32, zx_off: u32, col_off: u32, n_cnt: u32, g_cnt: u32, c_in: u32, cin_g: u32, in_h: u32
//!params in_w: u32, out_h: u32, out_w: u32, k_h: u32, k_w: u32, s_h: u32, s_w: u32, p_h: u32, p_w: u32
//!params dil_h: u32, dil_w: u32, k_total: u32, kw: u32, total: u32
//!bind X: array<u32>, ZX: array<u32>, COL: array<u32>
override X_SIGNED: u32 = 0u;
override HAS_ZX: u32 = 0u;

fn x_byte(i: u32) -> u32 { return (X[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }

//!main1d i < P.total {
    let spatial = P.out_h * P.out_w;
    let q = i % P.kw;
    var t = i / P.kw;
    let s = t % spatial;
    t = t / spatial;
    let gl = t % P.g_cnt;
    let nl = t / P.g_cnt;
    let oh = s / P.out_w;
    let ow = s % P.out_w;
    var zx = 0u;
    if (HAS_ZX == 1u) { zx = (ZX[P.zx_off] & 0xffu); }
    let flip = select(0x80u, 0u, X_SIGNED == 1u);
    let taps = P.k_h * P.k_w;
    let ch0 = nl * P.c_in + gl * P.cin_g;
    var word = 0u;
    // the tap of k = 4q, then the next ones by stepping (ci, kr, kc)
    let k0 = 4u * q;
    var ci = k0 / taps;
    var kr = (k0 % taps) / P.k_w;
    var kc = k0 % P.k_w;
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j >= P.k_total) { break; }
        let ih = i32(oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
        let iw = i32(ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
        var v = zx;
        if (ih >= 0 && ih < i32(P.in_h) && iw >= 0 && iw < i32(P.in_w)) {
            v = x_byte(P.x_off * 4u + ((ch0 + ci) * P.in_h + u32(ih)) * P.in_w + u32(iw));
        }
        word = word | ((v ^ flip) << (8u * j));
        kc = kc + 1u;
        if (kc == P.k_w) {
            kc = 0u;
            kr = kr + 1u;
            if (kr == P.k_h) { kr = 0u; ci = ci + 1u; }
        }
    }
    COL[P.col_off + i] = word;
}
