// The depthwise integer convolution (ConvInteger-10, QLinearConv-10 with
// one input channel per group, 1-D or 2-D; lower_qgemm.c): each output
// sums its taps directly, as the CPU reference's loop (cpu_quant.c:
// conv_run), no im2col:
//   acc[n, m, oh, ow] = sum_{kr, kc inside x} (x[n, m / mult, ih, iw] - zx) (w[m, 0, kr, kc] - zw[m])
//   ih = oh * s_h - p_h + kr * dil_h (likewise iw), mult = output channels per group
// in i32, wrapping (|each product| <= 255^2); a tap in the padding is
// skipped (it would contribute 0). y: the i32 sums, or (REQUANT) the 8-bit
// outputs through qrequant.wgsl's table (row m: x_scale * w_scale[m] /
// y_scale and the bias B[m]), four to a word, one word per invocation.
// Params: offsets in words (X, W, ZX, ZW, Y, TB), c_out, mult, geometry,
// zw_step (0: one w zero point, 1: per output channel), total (outputs),
// threads, y_zp.
//!audited t < threads (total outputs, or its words of four); x read only under 0 <= ih < in_h, 0 <= iw < in_w
//!audited in channel m / mult < c_out / mult = c_in of image img < n; w at m k_h k_w + taps; zw at m zw_step (1 or
//!audited c_out elements), zx at its one element; the table at 4 m + 3 < 4 c_out (emit_qdwconv)
//!include qrequant
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

// (acc, channel) of output element e
fn dw_acc(e: u32) -> vec2<i32> {
    let sp = P.out_h * P.out_w;
    let pix = e % sp;
    let m = (e / sp) % P.c_out;
    let img = e / (sp * P.c_out);
    let oh = pix / P.out_w;
    let ow = pix % P.out_w;
    var zx = 0;
    if (HAS_ZB == 1u) { let i = P.zx_off * 4u; zx = byte_val(ZX[i >> 2u], i, B_SIGNED); }
    var zw = 0;
    if (HAS_ZA == 1u) { let i = P.zw_off * 4u + m * P.zw_step; zw = byte_val(ZW[i >> 2u], i, A_SIGNED); }
    let c_in = P.c_out / P.mult;
    let xb = P.x_off * 4u + (img * c_in + m / P.mult) * P.in_h * P.in_w;
    let wb = P.w_off * 4u + m * P.k_h * P.k_w;
    var acc = 0;
    for (var kr = 0u; kr < P.k_h; kr = kr + 1u) {
        let ih = i32(oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
        if (ih < 0 || ih >= i32(P.in_h)) { continue; }
        for (var kc = 0u; kc < P.k_w; kc = kc + 1u) {
            let iw = i32(ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
            if (iw < 0 || iw >= i32(P.in_w)) { continue; }
            let xi = xb + u32(ih) * P.in_w + u32(iw);
            let wi = wb + kr * P.k_w + kc;
            acc = acc + (byte_val(X[xi >> 2u], xi, B_SIGNED) - zx) * (byte_val(W[wi >> 2u], wi, A_SIGNED) - zw);
        }
    }
    return vec2<i32>(acc, i32(m));
}

//!main1d t < P.threads {
    if (REQUANT == 0u) {
        Y[P.y_off + t] = bitcast<u32>(dw_acc(t).x);
        return;
    }
    var word = 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let e = 4u * t + j;
        if (e >= P.total) { break; }
        let r = dw_acc(e);
        word = word | ((bitcast<u32>(requant(r.x, P.t_off + 4u * u32(r.y))) & 0xffu) << (8u * j));
    }
    Y[P.y_off + t] = word;
}
