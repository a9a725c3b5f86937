// (not a kernel: included by qgemm_dp4.wgsl and by gemm_gen.c's int8 GEMM
// where caps.dot4 is on) qdot(a, b) through WGSL's dot4I8Packed (on Vulkan
// the SPIR-V integer dot product).
fn qdot(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }
