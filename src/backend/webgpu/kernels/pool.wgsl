// MaxPool / AveragePool, NCHW (1-D and 2-D are 3-D with unit leading dims),
// padding, strides, dilation, ceil_mode (already in out_*): one invocation
// per output element. Tap (kz, kr, kc) reads input position
// iz = oz * s_d - p_d + kz * dil_d (likewise ih, iw).
//   AVG = false: the bits of the CPU's fold over the taps inside the input
//                (padding never wins; cpu_nn_pool.c): m = the first tap,
//                then m = v where v > m, of equal values (-0, +0) the first
//                stays, and NaN propagates: a window with a NaN gives its
//                first NaN in tap order; T_LOWEST when no tap is inside
//                (max_finish).
//   AVG = true:  sum over taps inside the input / count, where count counts
//                the taps inside the input, or with count_include_pad the
//                taps inside the padded input [-p, in + pe).
// Semantics: ONNX MaxPool-12/22 (no Indices output), AveragePool-19/22.
// Params: x_off, y_off, nc = N * C, geometry, total.
//!elem f32 f16
//!audited i < total = numel(y) (lower_pool); x read only under 0 <= iz < in_d, 0 <= ih < in_h, 0 <= iw < in_w
//!audited (the u32 index is the i32 tap's residue, so the tests bound it whatever wraps) and channel c < nc;
//!audited max_finish's first tap tested by first_in, its scan under the same tests; x bound whole
//!params x_off: u32, y_off: u32, nc: u32, count_include_pad: u32, in_d: u32, in_h: u32, in_w: u32, out_d: u32,
//!params out_h: u32, out_w: u32, k_d: u32, k_h: u32, k_w: u32, s_d: u32, s_h: u32, s_w: u32, p_d: u32,
//!params p_h: u32, p_w: u32, dil_d: u32, dil_h: u32, dil_w: u32, pe_d: u32, pe_h: u32, pe_w: u32, total: u32
//!bind X: array<T>, Y: array<T>
override AVG: bool = false;

// The first of the k taps of output o along an axis inside the input
// [0, n) (tap t reads o * s - p + t * dil), or k when none is.
fn first_in(o: u32, s: u32, dil: u32, p: u32, k: u32, n: u32) -> u32 {
    for (var t = 0u; t < k; t = t + 1u) {
        let q = i32(o * s + t * dil) - i32(p);
        if (q >= 0 && q < i32(n)) { return t; }
    }
    return k;
}

// MaxPool's result for output (c, oz, oh, ow) from m, the maximum of the
// window's non-NaN taps inside the input taken from -inf (v where v > m:
// the CPU's fold up to the sign of a zero, also where a compiler makes
// that select a max(), which skips NaN) and nan, whether a tap inside is
// NaN (tested on the bits): T_LOWEST without a tap inside, the window's
// first NaN (its bits) when nan, the window's first zero when m is zero
// (both a scan, in those cases only), else m.
fn max_finish(c: u32, oz: u32, oh: u32, ow: u32, m: f32, nan: bool) -> f32 {
    let z0 = first_in(oz, P.s_d, P.dil_d, P.p_d, P.k_d, P.in_d);
    let r0 = first_in(oh, P.s_h, P.dil_h, P.p_h, P.k_h, P.in_h);
    let c0 = first_in(ow, P.s_w, P.dil_w, P.p_w, P.k_w, P.in_w);
    if (z0 == P.k_d || r0 == P.k_h || c0 == P.k_w) { return f32(T_LOWEST); }
    let iz0 = oz * P.s_d + z0 * P.dil_d - P.p_d;
    let ih0 = oh * P.s_h + r0 * P.dil_h - P.p_h;
    let x0 = f32(X[P.x_off + ((c * P.in_d + iz0) * P.in_h + ih0) * P.in_w + ow * P.s_w + c0 * P.dil_w - P.p_w]);
    if (!nan && m == 0.0 && x0 == 0.0) { return x0; }
    if (!nan && m != 0.0) { return m; }
    for (var kz = z0; kz < P.k_d; kz = kz + 1u) {
        let iz = i32(oz * P.s_d + kz * P.dil_d) - i32(P.p_d);
        for (var kr = r0; kr < P.k_h; kr = kr + 1u) {
            let ih = i32(oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
            for (var kc = c0; kc < P.k_w; kc = kc + 1u) {
                let iw = i32(ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
                // (taps from the first inside one: iz >= 0 already, tested anyway, as main does)
                if (iz >= 0 && iz < i32(P.in_d) && ih >= 0 && ih < i32(P.in_h) && iw >= 0 && iw < i32(P.in_w)) {
                    let v = f32(X[P.x_off + ((c * P.in_d + u32(iz)) * P.in_h + u32(ih)) * P.in_w + u32(iw)]);
                    if (nan) {
                        if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return v; }
                    } else if (v == 0.0) { return v; }
                }
            }
        }
    }
    return m;
}

//!main1d i < P.total {
    let ow = i % P.out_w;
    var t = i / P.out_w;
    let oh = t % P.out_h;
    t = t / P.out_h;
    let oz = t % P.out_d;
    let c = t / P.out_d;
    var mx = bitcast<f32>(0xff800000u); // -inf
    var sum = 0.0;
    var cnt = 0u;
    var cnt_pad = 0u;
    var nan = false;
    for (var kz = 0u; kz < P.k_d; kz = kz + 1u) {
        let iz = i32(oz * P.s_d + kz * P.dil_d) - i32(P.p_d);
        for (var kr = 0u; kr < P.k_h; kr = kr + 1u) {
            let ih = i32(oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
            for (var kc = 0u; kc < P.k_w; kc = kc + 1u) {
                let iw = i32(ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
                let in_pad = iz < i32(P.in_d + P.pe_d) && ih < i32(P.in_h + P.pe_h) && iw < i32(P.in_w + P.pe_w);
                if (in_pad) { cnt_pad = cnt_pad + 1u; }
                if (iz >= 0 && iz < i32(P.in_d) && ih >= 0 && ih < i32(P.in_h) && iw >= 0 && iw < i32(P.in_w)) {
                    let v = f32(X[P.x_off + ((c * P.in_d + u32(iz)) * P.in_h + u32(ih)) * P.in_w + u32(iw)]);
                    mx = select(mx, v, v > mx);
                    nan = nan || (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
                    sum = sum + v;
                    cnt = cnt + 1u;
                }
            }
        }
    }
    if (AVG) {
        let div = select(cnt, cnt_pad, P.count_include_pad != 0u);
        Y[P.y_off + i] = T(sum / f32(max(div, 1u)));
    } else {
        Y[P.y_off + i] = T(max_finish(c, oz, oh, ow, mx, nan));
    }
}
