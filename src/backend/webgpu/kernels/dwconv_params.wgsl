// The Params and bindings of the depthwise convolution (not a kernel:
// included with "//!include dwconv_params" by dwconv.wgsl and pasted by
// dwconv_gen.c): element offsets of x, w, b, y, the 2-D geometry,
// has_bias, total (invocations), the activation's parameters, and r_off:
// the offset of the fused residual R (binding 5, laid out like y, read with
// RES; bound after the other Params, so its word comes last).
//!params x_off: u32, w_off: u32, b_off: u32, y_off: u32, c_out: u32, mult: u32, in_h: u32, in_w: u32,
//!params out_h: u32, out_w: u32, s_h: u32, s_w: u32, p_h: u32, p_w: u32, d_h: u32, d_w: u32, has_bias: u32,
//!params total: u32, act_alpha: f32, act_beta: f32, r_off: u32
//!bind X: array<T>, W: array<T>, B: array<T>, Y: array<T>, R: array<T>
