// CumSum along one axis of x viewed as [outer, a, inner]; EXCL: exclusive
// (shifted by one), REV: from the end. Semantics: ONNX CumSum-11/14.
// Element type T (f32, f16, i32, u32; integers wrap); sums in TACC (f32
// for f16: each output rounded once).
// Schemes: (COLS) one invocation per line (o, j), summing serially in the
// CPU's order (the same f32 bits); or, for contiguous lines (inner = 1),
// one workgroup of 256 per line: each invocation sums a chunk, a
// shared-memory scan of the chunk sums gives each chunk its offset, and
// each invocation rescans its chunk (f32 results then differ from the
// serial order by rounding).
// Params: x_off, y_off, lines (outer * inner), a, inner.
//!elem f32 i32 u32 f16
//!audited line < lines = outer inner; element base + k inner with k < a, below outer a inner = numel(x) =
//!audited numel(y) (lower_cumsum); the chunk [s0, s1) within [0, a); sh[t - d] for t >= d, t < 256
//!params x_off: u32, y_off: u32, lines: u32, a: u32, inner: u32
//!bind X: array<T>, Y: array<T>
override EXCL: bool = false;
override REV: bool = false;
override COLS: bool = true;

var<workgroup> sh: array<TACC, 256>;

// Element index of step s (in summation order) of line (o, j).
fn elem(base: u32, s: u32) -> u32 {
    let k = select(s, P.a - 1u - s, REV);
    return base + k * P.inner;
}

// Runs steps [s0, s1) of a line from `acc`, writing y; returns the sum.
fn run(base: u32, s0: u32, s1: u32, acc0: TACC) -> TACC {
    var acc = acc0;
    for (var s = s0; s < s1; s = s + 1u) {
        let e = elem(base, s);
        let v = TACC(X[P.x_off + e]);
        if (!EXCL) { acc = acc + v; }
        Y[P.y_off + e] = T(acc);
        if (EXCL) { acc = acc + v; }
    }
    return acc;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    if (COLS) {
        let ln = lid.x + (wid.x + wid.y * nwg.x) * 256u;
        if (ln >= P.lines) { return; }
        let o = ln / P.inner;
        let j = ln % P.inner;
        run(o * P.a * P.inner + j, 0u, P.a, TACC(0));
        return;
    }
    let line = wid.x + wid.y * nwg.x;
    if (line >= P.lines) { return; }
    let t = lid.x;
    let base = line * P.a;
    let chunk = (P.a + 255u) / 256u;
    let s0 = min(t * chunk, P.a);
    let s1 = min(s0 + chunk, P.a);
    var part = TACC(0);
    for (var s = s0; s < s1; s = s + 1u) { part = part + TACC(X[P.x_off + elem(base, s)]); }
    // inclusive scan of the chunk sums (Hillis-Steele)
    sh[t] = part;
    workgroupBarrier();
    for (var d = 1u; d < 256u; d = d * 2u) {
        var v = TACC(0);
        if (t >= d) { v = sh[t - d]; }
        workgroupBarrier();
        if (t >= d) { sh[t] = sh[t] + v; }
        workgroupBarrier();
    }
    var off = TACC(0);
    if (t > 0u) { off = sh[t - 1u]; }
    run(base, s0, s1, off);
}
