// The integer GEMM (qgemm_body.wgsl, qgemm_wg.wgsl) with WGSL's
// dot4I8Packed (the packed_4x8_integer_dot_product language feature; on
// Vulkan the SPIR-V integer dot product), used when the device's self-test
// passed (caps.dot4, webgpu_probe.c).
fn qdot(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }
//!include qrequant
//!include qgemm_body
//!include qgemm_wg
//!include qgemm_main
@compute @workgroup_size(QWG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    qgemm_entry(li, wid.x + wid.y * nwg.x);
}
