// (not a kernel: included by qgemm.wgsl and by gemm_gen.c's int8 GEMM
// where caps.dot4 is off) qdot(a, b): the signed 4x8 dot product of two
// words of four int8s, written out (for adapters or wgpu builds without
// WGSL's packed_4x8_integer_dot_product; webgpu_probe.c decides); the
// same i32 as dot4I8Packed (qdot_dp4.wgsl).
fn qdot(a: u32, b: u32) -> i32 {
    let x = bitcast<i32>(a); let y = bitcast<i32>(b);
    return extractBits(x, 0u, 8u) * extractBits(y, 0u, 8u) + extractBits(x, 8u, 8u) * extractBits(y, 8u, 8u)
         + extractBits(x, 16u, 8u) * extractBits(y, 16u, 8u) + extractBits(x, 24u, 8u) * extractBits(y, 24u, 8u);
}
