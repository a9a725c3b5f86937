// Depthwise 2-D convolution, NCHW: groups == c_in, c_out = mult * c_in
// (weights [c_out, 1, KH, KW]). One invocation computes OWB consecutive
// outputs of one output row:
//   y[n, co, oh, ow] = act(sum_{kr, kc ascending} w[co, 0, kr, kc] *
//                          x[n, co / mult, ih, iw] + b[co] [+ r[n, co, oh, ow]])
//   (RES: the fused residual of ir/ops/act.h, laid out like y)
//   ih = oh * s_h - p_h + kr * d_h, iw = ow * s_w - p_w + kc * d_w; taps
//   outside the input contribute w * 0.
// One f32 accumulator per output with fma in the order of conv_direct.wgsl
// (kr, then kc): both give the same bits. Semantics: ONNX Conv-11/22 with
// the act.h epilogue (act.wgsl). KH, KW (the kernel size) and OWB are
// override constants so the tap loops unroll. The lowering normally uses
// dwconv_gen.c's straight-line form of this kernel (same bits); this one
// is the reference for kernels too large to write out.
// Params: offsets of x, w, b, y (elements of each binding), the geometry;
// total = n * c_out * out_h * ceil(out_w / OWB) invocations.
//!elem f32 f16
//!audited as dwconv_gen.c's form; acc[j] with j < OWB <= 4 (emit_conv_dw) of 8
//!include dwconv_params
override KH: u32 = 3u;
override KW: u32 = 3u;
override OWB: u32 = 4u;
override ACT: u32 = 0u;
override RES: bool = false;

//!include act

//!main1d i < P.total {
    let ngrp = (P.out_w + OWB - 1u) / OWB;
    let og = i % ngrp;
    var t = i / ngrp;
    let oh = t % P.out_h;
    t = t / P.out_h;
    let co = t % P.c_out;
    let nb = t / P.c_out;
    let ci = co / P.mult;
    let xc = (nb * (P.c_out / P.mult) + ci) * P.in_h;
    let ow0 = og * OWB;
    var acc: array<f32, 8>;
    for (var j = 0u; j < 8u; j = j + 1u) { acc[j] = 0.0; }
    for (var kr = 0u; kr < KH; kr = kr + 1u) {
        let ih = i32(oh * P.s_h + kr * P.d_h) - i32(P.p_h);
        let row_ok = ih >= 0 && ih < i32(P.in_h);
        let xr = (xc + u32(max(ih, 0))) * P.in_w;
        for (var kc = 0u; kc < KW; kc = kc + 1u) {
            let wv = f32(W[P.w_off + (co * KH + kr) * KW + kc]);
            for (var j = 0u; j < OWB; j = j + 1u) {
                let iw = i32((ow0 + j) * P.s_w + kc * P.d_w) - i32(P.p_w);
                var xv = 0.0;
                if (row_ok && iw >= 0 && iw < i32(P.in_w)) { xv = f32(X[P.x_off + xr + u32(iw)]); }
                acc[j] = fma(wv, xv, acc[j]);
            }
        }
    }
    var bias = 0.0;
    if (P.has_bias != 0u) { bias = f32(B[P.b_off + co]); }
    let yrow = ((nb * P.c_out + co) * P.out_h + oh) * P.out_w;
    for (var j = 0u; j < OWB; j = j + 1u) {
        if (ow0 + j < P.out_w) {
            var v = acc[j];
            if (P.has_bias != 0u) { v = v + bias; }
            if (RES) { v = v + f32(R[P.r_off + yrow + ow0 + j]); }
            Y[P.y_off + yrow + ow0 + j] = T(act_apply(ACT, v, P.act_alpha, P.act_beta));
        }
    }
}
