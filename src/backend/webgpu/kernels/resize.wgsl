// Resize (rank <= 4, dims padded with leading 1s), nearest or n-linear.
// For each output coordinate x_res along dim d the input coordinate is
// (COORD): 0 half_pixel (x + 0.5) / s - 0.5; 1 asymmetric x / s;
// 2 align_corners x * (in - 1) / (out - 1) (0 when out == 1);
// 3 pytorch_half_pixel as half_pixel, 0 when out == 1;
// 4 tf_half_pixel_for_nearest (x + 0.5) / s;
// 5 half_pixel_symmetric offset + (x + 0.5) / s - 0.5;
// s = scale[d] (the scales input, or out/in when sizes were given).
// LINEAR = false: nearest with NEAREST 0 round_prefer_floor,
// 1 round_prefer_ceil, 2 floor, 3 ceil, index clamped to [0, in - 1].
// LINEAR = true: the coordinate is clamped to [0, in - 1] and the 2^rank
// neighbours are blended with weights (1 - f, f).
// Semantics: ONNX Resize-11/13/18/19 (no roi crop, no antialias, no cubic).
// Params: x_off, y_off, total, in dims, out dims (vec4), scale, offset (vec4<f32>).
//!params x_off: u32, y_off: u32, total: u32, in_dims: vec4<u32>, out_dims: vec4<u32>, scale: vec4<f32>,
//!params offset: vec4<f32>
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
override LINEAR: bool = false;
override COORD: u32 = 0u;
override NEAREST: u32 = 0u;

fn coord(x: u32, d: u32) -> f32 {
    let s = P.scale[d];
    let xf = f32(x);
    let in_len = P.in_dims[d];
    let out_len = P.out_dims[d];
    switch COORD {
        case 1u: { return xf / s; }
        case 2u: {
            if (out_len == 1u) { return 0.0; }
            return xf * f32(in_len - 1u) / f32(out_len - 1u);
        }
        case 3u: {
            if (out_len == 1u) { return 0.0; }
            return (xf + 0.5) / s - 0.5;
        }
        case 4u: { return (xf + 0.5) / s; }
        case 5u: { return P.offset[d] + (xf + 0.5) / s - 0.5; }
        default: { return (xf + 0.5) / s - 0.5; }
    }
}

fn nearest(c: f32, len: u32) -> u32 {
    var r: f32;
    let f = floor(c);
    switch NEAREST {
        case 1u: { r = select(round(c), ceil(c), c - f == 0.5); }
        case 2u: { r = f; }
        case 3u: { r = ceil(c); }
        default: { r = select(round(c), f, c - f == 0.5); }
    }
    return u32(clamp(r, 0.0, f32(len - 1u)));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= P.total) { return; }
    var oc: vec4<u32>;
    var rem = i;
    for (var d = 3; d >= 0; d = d - 1) {
        oc[d] = rem % P.out_dims[d];
        rem = rem / P.out_dims[d];
    }
    if (!LINEAR) {
        var idx = 0u;
        for (var d = 0u; d < 4u; d = d + 1u) {
            idx = idx * P.in_dims[d] + nearest(coord(oc[d], d), P.in_dims[d]);
        }
        Y[P.y_off + i] = X[P.x_off + idx];
        return;
    }
    var lo: vec4<u32>;
    var hi: vec4<u32>;
    var fr: vec4<f32>;
    for (var d = 0u; d < 4u; d = d + 1u) {
        let len = P.in_dims[d];
        let c = clamp(coord(oc[d], d), 0.0, f32(len - 1u));
        let f = floor(c);
        lo[d] = u32(f);
        hi[d] = min(lo[d] + 1u, len - 1u);
        fr[d] = c - f;
    }
    var acc = 0.0;
    for (var corner = 0u; corner < 16u; corner = corner + 1u) {
        var w = 1.0;
        var idx = 0u;
        for (var d = 0u; d < 4u; d = d + 1u) {
            let up = ((corner >> (3u - d)) & 1u) == 1u;
            w = w * select(1.0 - fr[d], fr[d], up);
            idx = idx * P.in_dims[d] + select(lo[d], hi[d], up);
        }
        if (w != 0.0) {
            acc = acc + w * X[P.x_off + idx];
        }
    }
    Y[P.y_off + i] = acc;
}
