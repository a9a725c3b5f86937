// im2col for convolution, NCHW, groups and dilation (1-D and 2-D convs are
// 3-D with unit leading dims). For a chunk of n_cnt images x g_cnt groups
// it writes
//   col[nl, gl, k, s]  (row-major [n_cnt][g_cnt][k_total][spatial])
//   k = ((ci * k_d + kz) * k_h + kr) * k_w + kc,  k_total = cin_g*k_d*k_h*k_w
//   s = (od * out_h + oh) * out_w + ow,           spatial = out_d*out_h*out_w
//   = x[nl, gl * cin_g + ci, iz, ih, iw] with iz = od * s_d - p_d + kz * dil_d
//   (likewise ih, iw), and 0 for taps outside the input (padding).
// The x binding starts at the chunk's first (image, group): channel index
// nl * c_in + gl * cin_g + ci counts from there.
// Then out[c_out, spatial] = weight[c_out, k_total] x col (matmul.wgsl).
// Semantics: ONNX Conv-11/22. Params: x_off, col_off, geometry; total =
// n_cnt * g_cnt * k_total * spatial.
//!elem f32 f16
//!audited i < total = col window; x read only under the same tap tests as conv_direct, channel
//!audited nl * c_in + gl * cin_g + ci inside the chunk's x window (emit_conv_chunk)
//!params x_off: u32, col_off: u32, n_cnt: u32, g_cnt: u32, c_in: u32, cin_g: u32, in_d: u32, in_h: u32,
//!params in_w: u32, out_d: u32, out_h: u32, out_w: u32, k_d: u32, k_h: u32, k_w: u32, s_d: u32, s_h: u32,
//!params s_w: u32, p_d: u32, p_h: u32, p_w: u32, dil_d: u32, dil_h: u32, dil_w: u32, total: u32
//!bind X: array<T>, COL: array<T>

//!main1d i < P.total {
    let spatial = P.out_d * P.out_h * P.out_w;
    let k_total = P.cin_g * P.k_d * P.k_h * P.k_w;
    let s = i % spatial;
    var t = i / spatial;
    let k = t % k_total;
    t = t / k_total;
    let gl = t % P.g_cnt;
    let nl = t / P.g_cnt;
    let kc = k % P.k_w;
    var u = k / P.k_w;
    let kr = u % P.k_h;
    u = u / P.k_h;
    let kz = u % P.k_d;
    let ci = u / P.k_d;
    let ow = s % P.out_w;
    let oh = (s / P.out_w) % P.out_h;
    let od = s / (P.out_w * P.out_h);
    let iz = i32(od * P.s_d + kz * P.dil_d) - i32(P.p_d);
    let ih = i32(oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
    let iw = i32(ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
    var v = 0.0;
    if (iz >= 0 && iz < i32(P.in_d) && ih >= 0 && ih < i32(P.in_h) && iw >= 0 && iw < i32(P.in_w)) {
        let ch = nl * P.c_in + gl * P.cin_g + ci;
        v = f32(X[P.x_off + ((ch * P.in_d + u32(iz)) * P.in_h + u32(ih)) * P.in_w + u32(iw)]);
    }
    COL[P.col_off + i] = T(v);
}
