// Strided copy of 4-byte elements (any dtype, bits preserved): for every
// coordinate c of `dims` (rank <= 8, outermost first, i = flat index)
//   y[dst_base + sum_d c_d * ds_d] = x[src_base + sum_d c_d * ss_d]
// Strides are i32 elements (negative for Slice with negative steps, 0 for
// broadcasts). Used by Transpose, Slice, Concat, Pad, Expand and copies.
// Params: x_off, y_off, n = prod(dims), rank, src_base, dst_base, dims,
// ss, ds (array<vec4<...>, 2>: dim d is [d / 4][d % 4]).
struct Params {
    x_off: u32, y_off: u32, n: u32, rank: u32,
    src_base: i32, dst_base: i32, _p0: u32, _p1: u32,
    dims: array<vec4<u32>, 2>,
    ss: array<vec4<i32>, 2>,
    ds: array<vec4<i32>, 2>,
};
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.n) { return; }
    var rem = i;
    var si = P.src_base;
    var di = P.dst_base;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let q = u32(d) / 4u;
        let r = u32(d) % 4u;
        let dim = P.dims[q][r];
        let c = i32(rem % dim);
        rem = rem / dim;
        si = si + c * P.ss[q][r];
        di = di + c * P.ds[q][r];
    }
    Y[P.y_off + u32(di)] = X[P.x_off + u32(si)];
}
