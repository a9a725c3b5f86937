// (not a kernel: included last by the integer kernels that store 8-bit
// outputs: qgemm.wgsl, qgemm_dp4.wgsl, qdwconv.wgsl, qdwconv_dp4.wgsl and
// the int8 instance of gemm_gen.c) The byte stored for output element e
// (y's flat index) whose requantized level is r: r itself. A QLinearConv
// that carries a QDQ chain (the internal inputs of passes/fuse_qlinear_ew.c,
// ir/ops/internal_ops.h) gets this snippet replaced by the chain
// (lower_internal.c: wg_qepi_make), which dequantizes r, reads the chain's
// other inputs at e and returns the quantized result of the chain.
fn qepi(e: u32, r: i32) -> u32 { return bitcast<u32>(r) & 0xffu; }
