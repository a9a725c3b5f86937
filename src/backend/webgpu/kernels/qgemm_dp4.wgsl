// The integer GEMM (qgemm_body.wgsl, qgemm_wg.wgsl) with WGSL's
// dot4I8Packed (the packed_4x8_integer_dot_product language feature; on
// Vulkan the SPIR-V integer dot product), used when the device's self-test
// passed (caps.dot4, webgpu_probe.c).
//!audited as README.md says for the integer GEMM (qgemm_body, qgemm_wg, qgemm_main, qrequant read with
//!audited lower_qgemm.c): MODE 0 t < threads; every a, b, zero-point and table load under m, n, k, tap or
//!audited batch bounds; y stores under n0 + j < n (8-bit: n % 4 == 0); QA, QB, QR, acc indices below their sizes
//!include qdot_dp4
//!include qrequant
//!include qgemm_body
//!include qgemm_wg
//!include qgemm_main
//!include qepi
@compute @workgroup_size(QWG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    qgemm_entry(li, wid.x + wid.y * nwg.x);
}
