// The integer GEMM (qgemm_body.wgsl, qgemm_wg.wgsl) with the 4x8 signed
// dot product written out: for adapters or wgpu builds without WGSL's
// packed_4x8_integer_dot_product (caps.dot4 off; webgpu_probe.c decides).
//!audited as README.md says for the integer GEMM (qgemm_body, qgemm_wg, qgemm_main, qrequant read with
//!audited lower_qgemm.c): MODE 0 t < threads; every a, b, zero-point and table load under m, n, k, tap or
//!audited batch bounds; y stores under n0 + j < n (8-bit: n % 4 == 0); QA, QB, QR, acc indices below their sizes
//!include qdot
//!include qrequant
//!include qgemm_body
//!include qgemm_wg
//!include qgemm_main
//!include qepi
@compute @workgroup_size(QWG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    qgemm_entry(li, wid.x + wid.y * nwg.x);
}
