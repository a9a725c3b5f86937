// The Params and bindings of conv_direct.wgsl and conv_transpose.wgsl
// (not a kernel: included with "//!include conv_params"): the element
// offsets of x, w, b, y in their bindings, the geometry of
// src/ir/ops/conv_geom.h (3-D; 2-D and 1-D convolutions have depth and
// height 1), has_bias, total (outputs), the fused activation's
// parameters, and r_off: the offset of conv_direct's residual binding
// (bound after the other Params, so its word comes last; padding in
// conv_transpose).
//!params x_off: u32, w_off: u32, b_off: u32, y_off: u32, n: u32, c_in: u32, c_out: u32, group: u32, in_d: u32,
//!params in_h: u32, in_w: u32, out_d: u32, out_h: u32, out_w: u32, k_d: u32, k_h: u32, k_w: u32, s_d: u32,
//!params s_h: u32, s_w: u32, p_d: u32, p_h: u32, p_w: u32, dil_d: u32, dil_h: u32, dil_w: u32, has_bias: u32,
//!params total: u32, act_alpha: f32, act_beta: f32, r_off: u32
//!bind X: array<T>, W: array<T>, B: array<T>, Y: array<T>

// Output element i (of total): its image nb, channel co, position (od, oh,
// ow), group g and the channels per group.
struct ConvAt { nb: u32, co: u32, od: u32, oh: u32, ow: u32, g: u32, cin_g: u32, cout_g: u32 }

fn conv_at(i: u32) -> ConvAt {
    let ow = i % P.out_w;
    var t = i / P.out_w;
    let oh = t % P.out_h;
    t = t / P.out_h;
    let od = t % P.out_d;
    t = t / P.out_d;
    let co = t % P.c_out;
    let cout_g = P.c_out / P.group;
    return ConvAt(t / P.c_out, co, od, oh, ow, co / cout_g, P.c_in / P.group, cout_g);
}
