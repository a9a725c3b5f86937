// The depthwise integer convolution (qdwconv_body.wgsl; ConvInteger-10,
// QLinearConv-10 with one input channel per group; lower_qgemm.c:
// emit_qdwconv) with WGSL's dot4I8Packed (qdot_dp4.wgsl; the
// packed_4x8_integer_dot_product language feature), used when the
// device's self-test passed (caps.dot4, webgpu_probe.c): QDW_ROW 2, a
// kernel row of taps per dot product where the taps allow (dw_row4_dot).
//!audited t < threads (total outputs, or its words of four); x read only under 0 <= ih < in_h, 0 <= iw < in_w
//!audited in channel m / mult < c_out / mult = c_in of image img < n; w at m k_h k_w + taps; zw at m zw_step (1 or
//!audited c_out elements), zx at its one element; the table at 4 m + 3 < 4 c_out (emit_qdwconv); dw_row4: k_h = QDKH,
//!audited k_w = QDKW (emit_qdwconv), x's word loads only where every byte read lies in the input row (inner; the
//!audited row window's words only up to the one holding its last needed byte); dw_row4_dot: w's second word of a
//!audited kernel row only where one of its k_w bytes lies in it (m k_h k_w + kr k_w + k_w - 1 < c_out k_h k_w)
//!include qdot_dp4
//!include qrequant
//!include qdwconv_body
//!include qepi
//!main1d t < P.threads {
    qdw_main(t);
}
