// Fills n 4-byte elements with one bit pattern (Pad's constant value).
// Params: y_off, n, value (the bits of the element).
struct Params { y_off: u32, n: u32, value: u32, _p0: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.n) { return; }
    Y[P.y_off + i] = P.value;
}
