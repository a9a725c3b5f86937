// The integer GEMM (qgemm_body.wgsl) with WGSL's dot4I8Packed (the
// packed_4x8_integer_dot_product language feature; on Vulkan the SPIR-V
// integer dot product), used when the device's self-test passed
// (caps.dot4, webgpu_probe.c).
fn qdot(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }
//!include qrequant
//!include qgemm_body
//!main1d t < P.threads {
    qgemm_main(t);
}
