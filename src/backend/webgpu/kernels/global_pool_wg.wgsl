// GlobalAveragePool / GlobalMaxPool over large spatial extents: one
// workgroup of 64 invocations per (n, c) row of `spatial` elements;
// invocation t takes elements t, t + 64, ... in order, then a tree in
// workgroup memory combines the 64 partial results (a summation order other
// than global_pool.wgsl's sequential one: same value within f32 rounding).
// y = mean (or max) of the row. Semantics: ONNX GlobalAveragePool-1,
// GlobalMaxPool-1. Params: x_off, y_off, nc, spatial. Grid: nc workgroups
// (linear index wid.x + wid.y * nwg.x).
// The max gives the bits of the CPU's fold from the row's first element:
// the partials and the tree take v where v > m from -inf (and OR whether
// a NaN was seen), and invocation 0 finishes (global_max.wgsl).
//!elem f32 f16
//!audited row < nc; x at row spatial + s, s < spatial (nc spatial = numel(x)); y at row < nc = numel(y)
//!audited (lower_global_pool); part[li + w] with li < w <= 32
//!params x_off: u32, y_off: u32, nc: u32, spatial: u32
//!bind X: array<T>, Y: array<T>
override MAX: bool = false;

//!include global_max

var<workgroup> part: array<f32, 64>;
var<workgroup> pnan: array<u32, 64>; // MaxPool: 1 where the invocation's elements hold a NaN

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= P.nc) { return; }
    let base = P.x_off + row * P.spatial;
    var acc = 0.0;
    var nan = 0u;
    if (MAX) { acc = bitcast<f32>(0xff800000u); } // -inf
    for (var s = li; s < P.spatial; s = s + 64u) {
        let v = f32(X[base + s]);
        if (MAX) {
            acc = select(acc, v, v > acc);
            nan = nan | select(0u, 1u, (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u);
        } else { acc = acc + v; }
    }
    part[li] = acc;
    pnan[li] = nan;
    workgroupBarrier();
    for (var w = 32u; w > 0u; w = w >> 1u) {
        if (li < w) {
            let b = part[li + w];
            if (MAX) {
                part[li] = select(part[li], b, b > part[li]);
                pnan[li] = pnan[li] | pnan[li + w];
            } else { part[li] = part[li] + b; }
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        if (MAX) { Y[P.y_off + row] = T(global_max_finish(base, part[0], pnan[0] != 0u)); } else { Y[P.y_off + row] = T(part[0] / f32(P.spatial)); }
    }
}
