// Residual add + layer normalization (rlx.AddLayerNormalization, see
// src/ir/ops/internal_ops.h): for each row r of `len` elements
//   x = a + b                 (b repeats: element e reads B[e % b_n])
//   y = (x - mean(x)) / sqrt(var(x) + eps) * scale[j % s_n] + bias[j % c_n]
// with mean and (biased) variance over the row, as ONNX
// LayerNormalization-17 of Add-14.
// One workgroup of 64 invocations per row (the linear workgroup index
// wid.x + wid.y * nwg.x folds beyond 65,535): the first sweep reads a and b
// once, writes x into y and sums; the mean is reduced in workgroup memory;
// the second sweep forms the squared deviations from y, the third
// normalises y in place. Each invocation only revisits its own elements.
// A row with |x| of 2^48 or more is scaled as row_scale.wgsl describes.
// Params: a_off, b_off, s_off, c_off, y_off, rows, len, b_n, s_n, c_n
// (0: no bias), eps.
//!elem f32 f16
//!audited row < rows, e = row len + j < rows len = numel(a) = numel(y); B at e % b_n, S at j % s_n, C at j % c_n
//!audited only when c_n != 0 (b_n, s_n > 0; each bound whole; lower_add_ln); red[t + s], sh3[t + s] with t < s <= 32
//!params a_off: u32, b_off: u32, s_off: u32, c_off: u32, y_off: u32, rows: u32, len: u32, b_n: u32, s_n: u32,
//!params c_n: u32, eps: f32
//!bind A: array<T>, B: array<T>, S: array<T>, C: array<T>, Y: array<T>
//!include row_scale

var<workgroup> red: array<f32, 64>;

fn reduce_sum(v: f32, t: u32) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (t < s) { red[t] = red[t] + red[t + s]; }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= P.rows) { return; }
    let t = lid.x;
    let base = row * P.len;
    var s = vec3<f32>(0.0);
    for (var j = t; j < P.len; j = j + 64u) {
        let e = base + j;
        let x = f32(A[P.a_off + e]) + f32(B[P.b_off + e % P.b_n]);
        Y[P.y_off + e] = T(x);
        s = comb3(s, vec3<f32>(x, x * TWO_M64, abs(x)));
    }
    let n = f32(P.len);
    let r3 = tree3(t, s, 64u); // the sums of x and x 2^-64, the largest |x|, in reduce_sum's order
    let sc = dev_scale(r3.z);
    let mean = select(r3.x / n, (r3.y / n) * TWO_64, sc < 1.0);
    var q = 0.0;
    for (var j = t; j < P.len; j = j + 64u) {
        let d = f32(Y[P.y_off + base + j]) * sc - mean * sc; // (y - mean) sc without overflow
        q = q + d * d;
    }
    let q1 = reduce_sum(q, t);
    let inv = select(1.0 / sqrt(q1 / n + P.eps), inv_scaled(q1 / n, P.eps, sc), sc < 1.0);
    for (var j = t; j < P.len; j = j + 64u) {
        let e = P.y_off + base + j;
        var v = (f32(Y[e]) * sc - mean * sc) * (inv / sc) * f32(S[P.s_off + j % P.s_n]);
        if (P.c_n != 0u) { v = v + f32(C[P.c_off + j % P.c_n]); }
        Y[e] = T(v);
    }
}
