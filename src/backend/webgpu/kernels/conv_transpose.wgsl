// Transposed convolution, NCHW (1-D and 2-D are 3-D with unit leading
// dims), groups and dilation: one invocation per output element,
//   y[n, co, oz, oh, ow] = b[co] + sum over (ci, kz, kr, kc) of
//       x[n, g * cin_g + ci, iz, ih, iw] * w[g * cin_g + ci, co % cout_g, kz, kr, kc]
//   over the taps where oz + p_d - kz * dil_d = iz * s_d with 0 <= iz < in_d
//   (likewise h, w); g = co / cout_g. Weight layout [C_in, C_out/group, k...].
// Then the fused activation (ACT, act_alpha, act_beta; act.wgsl).
// Semantics: ONNX ConvTranspose-11/22 (output_padding, output_shape and
// auto_pad resolved by src/ir/ops/conv_geom.h). Params as conv_direct.wgsl.
//!elem f32 f16
//!include conv_params

override ACT: u32 = 0u;

//!include act

// input index along one dim for output o and tap k, or -1
fn src(o: u32, k: u32, s: u32, p: u32, dil: u32, len: u32) -> i32 {
    let t = i32(o + p) - i32(k * dil);
    if (t < 0 || (t % i32(s)) != 0) { return -1; }
    let q = t / i32(s);
    if (q >= i32(len)) { return -1; }
    return q;
}

//!main1d i < P.total {
    let o = conv_at(i);
    let col = o.co % o.cout_g;
    var acc = 0.0;
    for (var ci = 0u; ci < o.cin_g; ci = ci + 1u) {
        let c = o.g * o.cin_g + ci;
        for (var kz = 0u; kz < P.k_d; kz = kz + 1u) {
            let iz = src(o.od, kz, P.s_d, P.p_d, P.dil_d, P.in_d);
            if (iz < 0) { continue; }
            for (var kr = 0u; kr < P.k_h; kr = kr + 1u) {
                let ih = src(o.oh, kr, P.s_h, P.p_h, P.dil_h, P.in_h);
                if (ih < 0) { continue; }
                for (var kc = 0u; kc < P.k_w; kc = kc + 1u) {
                    let iw = src(o.ow, kc, P.s_w, P.p_w, P.dil_w, P.in_w);
                    if (iw < 0) { continue; }
                    let xi = (((o.nb * P.c_in + c) * P.in_d + u32(iz)) * P.in_h + u32(ih)) * P.in_w + u32(iw);
                    let xv = f32(X[P.x_off + xi]);
                    let wv = f32(W[P.w_off + (((c * o.cout_g + col) * P.k_d + kz) * P.k_h + kr) * P.k_w + kc]);
                    acc = acc + xv * wv;
                }
            }
        }
    }
    if (P.has_bias != 0u) {
        acc = acc + f32(B[P.b_off + o.co]);
    }
    Y[P.y_off + i] = T(act_apply(ACT, acc, P.act_alpha, P.act_beta));
}
