// Direct convolution, NCHW (1-D and 2-D convs are 3-D with unit leading
// dims), groups and dilation: one invocation per output element,
//   y[n, co, od, oh, ow] = sum over (ci, kz, kr, kc) in that nesting of
//       w[co, ci, kz, kr, kc] * x[n, g * cin_g + ci, iz, ih, iw]
//   then + b[co] (added last), then (RES) + r[n, co, od, oh, ow] (the fused
//   residual of ir/ops/act.h, laid out like y, binding 5 at r_off), then
//   the fused activation (ACT, act.wgsl),
//   with g = co / cout_g and iz = od * s_d - p_d + kz * dil_d (likewise ih,
//   iw); taps outside the input contribute w * 0. One f32 accumulator,
//   fma per tap.
// The reduction order is the one of im2col + matmul (k = ((ci * k_d + kz) *
// k_h + kr) * k_w + kc, ascending), so both paths give the same bits.
// Semantics: ONNX Conv-11/22 (geometry from src/ir/ops/conv_geom.h).
// Params: x_off, w_off, b_off, y_off (element offsets in each binding),
// then the geometry; total = n * c_out * out_d * out_h * out_w.
//!elem f32 f16
//!audited i < total; x read only under 0 <= iz < in_d, 0 <= ih < in_h, 0 <= iw < in_w, image nb < n and
//!audited channel < c_in; w at co < c_out, ci < cin_g, taps < k_*; x, w, b, y, r bound whole (lower_nn.c)
//!include conv_params

override ACT: u32 = 0u;
override RES: bool = false;

//!bind R: array<T>

//!include act

//!main1d i < P.total {
    let o = conv_at(i);
    var acc = 0.0;
    for (var ci = 0u; ci < o.cin_g; ci = ci + 1u) {
        let xc = (o.nb * P.c_in + o.g * o.cin_g + ci) * P.in_d;
        for (var kz = 0u; kz < P.k_d; kz = kz + 1u) {
            let iz = i32(o.od * P.s_d + kz * P.dil_d) - i32(P.p_d);
            for (var kr = 0u; kr < P.k_h; kr = kr + 1u) {
                let ih = i32(o.oh * P.s_h + kr * P.dil_h) - i32(P.p_h);
                for (var kc = 0u; kc < P.k_w; kc = kc + 1u) {
                    let iw = i32(o.ow * P.s_w + kc * P.dil_w) - i32(P.p_w);
                    var xv = 0.0;
                    if (iz >= 0 && iz < i32(P.in_d) && ih >= 0 && ih < i32(P.in_h) && iw >= 0 && iw < i32(P.in_w)) {
                        xv = f32(X[P.x_off + ((xc + u32(iz)) * P.in_h + u32(ih)) * P.in_w + u32(iw)]);
                    }
                    let wv = f32(W[P.w_off + (((o.co * o.cin_g + ci) * P.k_d + kz) * P.k_h + kr) * P.k_w + kc]);
                    acc = fma(wv, xv, acc);
                }
            }
        }
    }
    if (P.has_bias != 0u) {
        acc = acc + f32(B[P.b_off + o.co]);
    }
    if (RES) {
        acc = acc + f32(R[P.r_off + i]);
    }
    Y[P.y_off + i] = T(act_apply(ACT, acc, P.act_alpha, P.act_beta));
}
