// Softmax / LogSoftmax along one axis of a tensor viewed as
// [outer, len, inner]: for each (o, j) the row x[o, :, j] (stride inner)
//   softmax:    y = exp(x - max) / sum(exp(x - max))
//   logsoftmax: y = (x - max) - log(sum(exp(x - max)))
// One invocation per row (outer * inner rows), sums in order.
// Semantics: ONNX Softmax/LogSoftmax-13 (axis), and -1/-11 (input coerced
// to 2-D at axis: inner = 1, len = product of the trailing dims).
// Params: x_off, y_off, outer, len, inner, rows.
struct Params {
    x_off: u32, y_off: u32, outer: u32, len: u32,
    inner: u32, rows: u32, _p0: u32, _p1: u32,
};
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
override LOG: bool = false;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let r = gid.x + gid.y * nwg.x * 64u;
    if (r >= P.rows) { return; }
    let o = r / P.inner;
    let j = r % P.inner;
    let base = o * P.len * P.inner + j;
    var mx = X[P.x_off + base];
    for (var k = 1u; k < P.len; k = k + 1u) {
        mx = max(mx, X[P.x_off + base + k * P.inner]);
    }
    var sum = 0.0;
    for (var k = 0u; k < P.len; k = k + 1u) {
        sum = sum + exp(X[P.x_off + base + k * P.inner] - mx);
    }
    if (LOG) {
        let ls = log(sum);
        for (var k = 0u; k < P.len; k = k + 1u) {
            let idx = base + k * P.inner;
            Y[P.y_off + idx] = (X[P.x_off + idx] - mx) - ls;
        }
    } else {
        for (var k = 0u; k < P.len; k = k + 1u) {
            let idx = base + k * P.inner;
            Y[P.y_off + idx] = exp(X[P.x_off + idx] - mx) / sum;
        }
    }
}
