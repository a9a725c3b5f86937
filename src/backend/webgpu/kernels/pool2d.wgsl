// MaxPool / AveragePool for 1-D and 2-D pools, NCHW: the fast path of
// pool.wgsl (RLX_POOL_KERNEL=ref selects that one). The KH x KW taps are
// override constants (the loops unroll) and one invocation computes OWB
// consecutive outputs of one output row. Tap (kr, kc) of output (oh, ow)
// reads ih = oh * s_h - p_h + kr * d_h, iw = ow * s_w - p_w + kc * d_w.
//   AVG = false: the bits of the CPU's fold over the taps inside the input
//                (padding never wins; cpu_nn_pool.c): m = the first tap,
//                then m = v where v > m, of equal values (-0, +0) the first
//                stays, and NaN propagates: a window with a NaN gives its
//                first NaN in tap order; T_LOWEST when no tap is inside
//                (max_finish).
//   AVG = true:  sum over the taps inside the input / count, count = the
//                taps inside the input, or with count_include_pad the taps
//                inside the padded input [-p, in + pe).
// Semantics: ONNX MaxPool-12/22 (no Indices output), AveragePool-19/22,
// ceil_mode already in out_h/out_w. Params: x_off, y_off, the geometry;
// total = nc * out_h * ceil(out_w / OWB) invocations.
//!elem f32 f16
//!audited i < total (lower_pool: nc out_h ceil(out_w / OWB)), c < nc; x read only under 0 <= ih < in_h and
//!audited 0 <= iw < in_w (max_finish: the first taps tested, the scan's in u32 against in_h, in_w); y under
//!audited ow0 + j < out_w; mx, sum, cnt, cnt_pad at j < OWB <= 4 (lower_pool); x, y bound whole
//!params x_off: u32, y_off: u32, count_include_pad: u32, total: u32, in_h: u32, in_w: u32, out_h: u32,
//!params out_w: u32, s_h: u32, s_w: u32, p_h: u32, p_w: u32, d_h: u32, d_w: u32, pe_h: u32, pe_w: u32
//!bind X: array<T>, Y: array<T>
override AVG: bool = false;
override KH: u32 = 3u;
override KW: u32 = 3u;
override OWB: u32 = 4u;

// MaxPool's result for output (c, oh, ow) from m, the maximum of the
// window's non-NaN taps inside the input taken from -inf (v where v > m:
// the CPU's fold up to the sign of a zero, also where a compiler makes
// that select a max(), which skips NaN) and nan, whether a tap inside is
// NaN (tested on the bits): T_LOWEST without a tap inside, the window's
// first NaN (its bits) when nan, the window's first zero when m is zero
// (both a scan, in those cases only), else m. Taps as in main.
fn max_finish(c: u32, oh: u32, ow: u32, m: f32, nan: bool) -> f32 {
    var r0 = KH;
    var c0 = KW;
    for (var t = KH; t > 0u; t = t - 1u) {
        let q = i32(oh * P.s_h + (t - 1u) * P.d_h) - i32(P.p_h);
        if (q >= 0 && q < i32(P.in_h)) { r0 = t - 1u; }
    }
    for (var t = KW; t > 0u; t = t - 1u) {
        let q = i32(ow * P.s_w + (t - 1u) * P.d_w) - i32(P.p_w);
        if (q >= 0 && q < i32(P.in_w)) { c0 = t - 1u; }
    }
    if (r0 == KH || c0 == KW) { return f32(T_LOWEST); }
    let xr = P.x_off + (c * P.in_h + oh * P.s_h + r0 * P.d_h - P.p_h) * P.in_w;
    let x0 = f32(X[xr + ow * P.s_w + c0 * P.d_w - P.p_w]);
    if (!nan && m == 0.0 && x0 == 0.0) { return x0; }
    if (!nan && m != 0.0) { return m; }
    for (var kr = r0; kr < KH; kr = kr + 1u) {
        let ih = oh * P.s_h + kr * P.d_h - P.p_h;
        for (var kc = c0; kc < KW; kc = kc + 1u) {
            let iw = ow * P.s_w + kc * P.d_w - P.p_w;
            if (ih < P.in_h && iw < P.in_w) {
                let v = f32(X[P.x_off + (c * P.in_h + ih) * P.in_w + iw]);
                if (nan) {
                    if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return v; }
                } else if (v == 0.0) { return v; }
            }
        }
    }
    return m;
}

//!main1d i < P.total {
    let ngrp = (P.out_w + OWB - 1u) / OWB;
    let og = i % ngrp;
    let t = i / ngrp;
    let oh = t % P.out_h;
    let c = t / P.out_h;
    let ow0 = og * OWB;
    var mx: array<f32, 4>;
    var sum: array<f32, 4>;
    var cnt: array<u32, 4>;
    var cnt_pad: array<u32, 4>;
    var nan: array<bool, 4>;
    for (var j = 0u; j < 4u; j = j + 1u) {
        mx[j] = bitcast<f32>(0xff800000u); // -inf
        sum[j] = 0.0;
        cnt[j] = 0u;
        cnt_pad[j] = 0u;
        nan[j] = false;
    }
    let xc = c * P.in_h;
    for (var kr = 0u; kr < KH; kr = kr + 1u) {
        let ih = i32(oh * P.s_h + kr * P.d_h) - i32(P.p_h);
        let row_in = ih >= 0 && ih < i32(P.in_h);
        let row_pad = ih < i32(P.in_h + P.pe_h);
        let xr = (xc + u32(max(ih, 0))) * P.in_w;
        for (var kc = 0u; kc < KW; kc = kc + 1u) {
            for (var j = 0u; j < OWB; j = j + 1u) {
                let iw = i32((ow0 + j) * P.s_w + kc * P.d_w) - i32(P.p_w);
                if (row_pad && iw < i32(P.in_w + P.pe_w)) { cnt_pad[j] = cnt_pad[j] + 1u; }
                if (row_in && iw >= 0 && iw < i32(P.in_w)) {
                    let v = f32(X[P.x_off + xr + u32(iw)]);
                    mx[j] = select(mx[j], v, v > mx[j]);
                    nan[j] = nan[j] || (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
                    sum[j] = sum[j] + v;
                    cnt[j] = cnt[j] + 1u;
                }
            }
        }
    }
    let yrow = (c * P.out_h + oh) * P.out_w;
    for (var j = 0u; j < OWB; j = j + 1u) {
        if (ow0 + j < P.out_w) {
            if (AVG) {
                let div = select(cnt[j], cnt_pad[j], P.count_include_pad != 0u);
                Y[P.y_off + yrow + ow0 + j] = T(sum[j] / f32(max(div, 1u)));
            } else {
                Y[P.y_off + yrow + ow0 + j] = T(max_finish(c, oh, ow0 + j, mx[j], nan[j]));
            }
        }
    }
}
