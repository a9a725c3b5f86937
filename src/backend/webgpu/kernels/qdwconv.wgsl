// The depthwise integer convolution (qdwconv_body.wgsl; ConvInteger-10,
// QLinearConv-10 with one input channel per group; lower_qgemm.c:
// emit_qdwconv) with the 4x8 signed dot product written out (qdot.wgsl):
// for adapters without dot4I8Packed (caps.dot4 off; webgpu_probe.c), and
// for gpu.qgemm_tile=legacy. Its lowering sets QDW_ROW 1 or 0: a product
// per tap (the written-out dot product would cost more).
//!audited t < threads (total outputs, or its words of four); x read only under 0 <= ih < in_h, 0 <= iw < in_w
//!audited in channel m / mult < c_out / mult = c_in of image img < n; w at m k_h k_w + taps; zw at m zw_step (1 or
//!audited c_out elements), zx at its one element; the table at 4 m + 3 < 4 c_out (emit_qdwconv); dw_row4: k_h = QDKH,
//!audited k_w = QDKW (emit_qdwconv), x's word loads only where every byte read lies in the input row (inner; the
//!audited row window's words only up to the one holding its last needed byte); dw_row4_dot: w's second word of a
//!audited kernel row only where one of its k_w bytes lies in it (m k_h k_w + kr k_w + k_w - 1 < c_out k_h k_w)
//!include qdot
//!include qrequant
//!include qdwconv_body
//!include qepi
//!main1d t < P.threads {
    qdw_main(t);
}
