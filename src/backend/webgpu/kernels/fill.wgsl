// Fills n words with a pattern of period two (even words `value`, odd
// words `value_hi`): one 4-byte element per word (value_hi = value), an i64
// as (low, high) word pairs, or four bool bytes per word. Used by Pad's
// constant value, ConstantOfShape, the identity of empty reductions.
// Params: y_off, n (words), value, value_hi.
//!params y_off: u32, n: u32, value: u32, value_hi: u32
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.n) { return; }
    Y[P.y_off + i] = select(P.value, P.value_hi, (i & 1u) == 1u);
}
