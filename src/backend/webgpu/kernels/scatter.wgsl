// The scatter step of ScatterND and ScatterElements (y already holds a copy
// of the data; kernels/copy.wgsl did it):
//   ND (ELEMS false): for each update tuple t in order,
//       y[sum_j I[t, j] * xstr[j] + s] (op)= u[t, s]   for s in the slice
//   ELEMS: for each coordinate c of the updates, in row-major order,
//       y[c with c[axis] = I[c]] (op)= u[c]
// op (RED, SR_* of wg_codes.h): NONE (store), ADD, MUL, MAX, MIN; max/min
// as the CPU: a >= b ? a : b. Semantics: ONNX ScatterND-11/13/16/18,
// ScatterElements-11/13/16/18. Negative indices count from the end; an
// index out of range (the CPU reports an error) skips its update and, with
// REPORT (run-time indices), is reported in the status words S
// (index_read.wgsl), which fails the run naming the node.
// No atomics: every invocation owns destination elements no other
// invocation can reach and applies its updates in the CPU's order, so
// duplicate indices combine exactly as on the CPU. ND: one invocation per
// slice word s (it walks all tuples); ELEMS: one per line of the updates
// along axis (duplicates can only occur within a line).
// Words: W per element (1: f32, i32, u32; 2: i64, only with op none); bool
// (op none) as whole words when slices fill them (ND only).
// T: the element (u32 by default: words moved as bits, op none); the
// reductions use T's arithmetic (the lowering instantiates f32 or i32).
//!elem u32 f32 i32 f16
//!audited t < threads; ND: t < sl, tuples k < count = nt, entries from index_in (a tuple with one outside its dim
//!audited is skipped), y word off + t < x's words, u word k sl + t < nt sl; ELEMS: coordinates below the updates'
//!audited dims (<= x's off axis, lower_scatter), k < count = the updates' extent on axis, the index in [0, a),
//!audited I and U at ui < numel(u) = numel(I); every at(.., d) with d < rank <= 8; S as gather.wgsl
// Params: i_off, u_off, y_off, s_off, tag (the status words), threads,
// count (ND: tuples; ELEMS: the updates' extent along axis), m (ND: index
// tuple length), sl (ND: words per slice), w (words per element), rank
// (ELEMS), axis (ELEMS), a (ELEMS: data dim along axis), three padding
// words, then dims (ND: the indexed data dims; ELEMS: the updates' dims),
// xstr (data strides in elements), ustr (ELEMS: updates strides) as
// array<vec4<u32>, 2>.
//!params i_off: u32, u_off: u32, y_off: u32, s_off: u32, tag: u32, threads: u32, count: u32, m: u32, sl: u32,
//!params w: u32, rank: u32, axis: u32, a: u32, dims: array<vec4<u32>, 2>, xstr: array<vec4<u32>, 2>,
//!params ustr: array<vec4<u32>, 2>
//!bind I: array<u32>, U: array<T>, Y: array<T>, S: array<atomic<u32>>
override IDX64: bool = false;
override ELEMS: bool = false;
override RED: u32 = 0u;
override REPORT: bool = false;

//!include index_read
//!include codes

fn at(v: array<vec4<u32>, 2>, d: u32) -> u32 { return v[d / 4u][d % 4u]; }

// y word yi (op)= u word ui.
fn apply(yi: u32, ui: u32) {
    let b = U[P.u_off + ui];
    if (RED == SR_NONE) {
        Y[P.y_off + yi] = b;
        return;
    }
    let a = Y[P.y_off + yi];
    var r = a;
    switch RED {
        case SR_ADD: { r = a + b; }
        case SR_MUL: { r = a * b; }
        // the CPU's a >= b ? a : b (a <= b): b when either is NaN, a of
        // equal values (-0, +0); t_lt and t_pick: integer comparisons and
        // a select of the bits (README.md, "Signed zeros")
        case SR_MAX: { r = t_pick(b, a, !t_lt(a, b) && !t_isnan(a) && !t_isnan(b)); }
        default: { r = t_pick(b, a, !t_lt(b, a) && !t_isnan(a) && !t_isnan(b)); }
    }
    Y[P.y_off + yi] = r;
}

//!main1d t < P.threads {
    if (!ELEMS) {
        for (var k = 0u; k < P.count; k = k + 1u) {
            var off = 0u;
            var valid = true;
            for (var j = 0u; j < P.m; j = j + 1u) {
                let v = index_in(k * P.m + j, at(P.dims, j));
                if (v < 0) { valid = false; }
                off = off + u32(v) * at(P.xstr, j);
            }
            if (valid) { apply(off * P.w + t, k * P.sl + t); }
        }
        return;
    }
    // this invocation's line: every updates dim but axis
    var rem = t;
    var ubase = 0u;
    var ybase = 0u;
    for (var d = i32(P.rank) - 1; d >= 0; d = d - 1) {
        let dd = u32(d);
        if (dd == P.axis) { continue; }
        let c = rem % at(P.dims, dd);
        rem = rem / at(P.dims, dd);
        ubase = ubase + c * at(P.ustr, dd);
        ybase = ybase + c * at(P.xstr, dd);
    }
    let us = at(P.ustr, P.axis);
    let ys = at(P.xstr, P.axis);
    for (var k = 0u; k < P.count; k = k + 1u) {
        let ui = ubase + k * us;
        let v = index_in(ui, P.a);
        if (v < 0) { continue; }
        let yi = ybase + u32(v) * ys;
        for (var q = 0u; q < P.w; q = q + 1u) { apply(yi * P.w + q, ui * P.w + q); }
    }
}
