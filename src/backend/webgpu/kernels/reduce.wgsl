// Reductions over any set of axes: ONNX ReduceSum/Mean/Max/Min/Prod/L1/L2/
// LogSum/LogSumExp/SumSquare-1..18 and ArgMax/ArgMin-1..13.
//   y[o] = F( combine over j in [0, count) of map(x[base(o) + off(j)]) )
// The input is viewed as kept dims (kdim, input strides kstr; the output is
// row-major over them) and reduced dims (rdim, rstr), each at most 4 after
// the lowering merged contiguous dims (lower_reduce.c, redview).
//   OP (RED_* of wg_codes.h): sum, mean, max, min, prod, l1 (|x|), l2
//   (sqrt of sum x^2, scaled as reference BLAS nrm2: a partial is the pair
//   (scale, ssq), scale the largest |x| seen and sum x^2 = scale^2 ssq, kept
//   as (v, idx) bits, so that squares of values beyond 1.8e19 or below
//   1e-19 neither overflow to inf nor vanish in f32; the result is
//   scale sqrt(ssq)), logsum (log of sum), LSE = logsumexp (max m, then
//   m + log sum exp(x - m); m when m is not finite), sumsquare, argmax,
//   argmin.
// Float max/min propagate NaN and give the row's first element equal to the
// extreme, as the CPU (cpu_reduce.c): the partials and the tree keep the
// earlier operand of equal values, which is the first in the row except
// across invocations (and where a compiler makes the select a max()),
// where only -0 and +0 differ in bits: a zero result becomes the row's
// first zero (finish; one invocation scans the row, in that case only).
// ArgMax/ArgMin take the first extreme index (the last with LAST) and give
// what the CPU's fold from element 0 with ">" (ArgMin "<") gives
// (cpu_reduce.c, onnxruntime's NaN rule; Hardmax's index too): a NaN ranks
// above every number as element 0 (the fold keeps it), below every number
// elsewhere (it never wins). INT: i32 data with
// wrapping arithmetic (sum, prod, max, min, l1, sumsquare, arg*).
// Schemes: one workgroup of WG invocations per output (per-invocation
// partials over j = t, t + WG, ..., then a shared-memory tree; CONTIG: the
// row is contiguous and is read as vec4 words, masked at its ends), or
// (COLS) one invocation per output, serially (when neighbouring outputs are
// neighbours in x, so the loads coalesce across invocations).
// Few long contiguous rows split (SPLIT, two dispatches): STAGE 1, one
// workgroup per (row, chunk of `chunk` elements) writes its partial (value
// bits, index) into TS[2 g ..]; STAGE 2, one workgroup per row combines the
// row's nch partials and finishes (not for logsumexp).
// Layout: X is bound as array<vec4<u32>> (the value's bits), Y and TS as u32
// words; ArgMax/ArgMin write i64 as (index, 0) word pairs. HALF: x is f16,
// two halves to a word (x_off still counts words), each widened to f32 as
// it is loaded (unpack2x16float: no shader-f16 needed), so the accumulation
// is f32; rows are then read element by element (no CONTIG vec4 path). Y
// stays f32 words: the lowering rounds Reduce* results to f16 with a Cast
// dispatch (a half store would race with its neighbour in the word).
// Params: x_off, y_off, t_off, rows (outputs), count (elements per
// output), nk, nr, init (bits of the accumulator start: 0, 1.0, -inf,
// +inf, INT32_MIN..), chunk, nch, then kdim, kstr, rdim, rstr (vec4<u32>;
// unused dims 1 and stride 0).
//!params x_off: u32, y_off: u32, t_off: u32, rows: u32, count: u32, nk: u32, nr: u32, init: u32, chunk: u32,
//!params nch: u32, kdim: vec4<u32>, kstr: vec4<u32>, rdim: vec4<u32>, rstr: vec4<u32>
//!bind X: array<vec4<u32>>, Y: array<u32>, TS: array<u32>
//!audited x at base_of(o) + off_of(j), o < rows, j < count as norm.wgsl (HALF: word (x_off 2 + e) / 2 < the
//!audited value's words; CONTIG words below (x_off + e1 + 3) / 4); Y at o (or 2 o + 1 for arg*) with o < rows
//!audited and a window of rows (2 rows) words (emit_reduce_to); TS only in STAGE 1 and 2, below 2 rows nch = its
//!audited window (g < rows nch, c < nch); shv, shi below WG <= 256; kdim[k], rdim[k] with k < 4
override STAGE: u32 = 0u;
override OP: u32 = 0u;
override INT: bool = false;
override COLS: bool = false;
override CONTIG: bool = false;
override LAST: bool = false;
override HALF: bool = false;
override WG: u32 = 64u;

//!include codes

const NONE = 0xffffffffu;

struct Acc { v: u32, idx: u32 };

var<workgroup> shv: array<u32, 256>;
var<workgroup> shi: array<u32, 256>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn is_finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }

fn xload(e: u32) -> u32 {
    if (HALF) {
        let h = P.x_off * 2u + e;
        return bitcast<u32>(unpack2x16float(X[h >> 3u][(h >> 1u) & 3u])[h & 1u]);
    }
    let i = P.x_off + e;
    return X[i >> 2u][i & 3u];
}

//!include reduce_index

fn fmax_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a)) { return a; }
    if (is_nan(b)) { return b; }
    return select(a, b, b > a);
}

fn fmin_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a)) { return a; }
    if (is_nan(b)) { return b; }
    return select(a, b, b < a);
}

// ArgMax/ArgMin: the better of two candidates (NONE: no candidate yet).
fn better(a: Acc, b: Acc) -> Acc {
    if (a.idx == NONE) { return b; }
    if (b.idx == NONE) { return a; }
    var c = 0;
    if (INT) {
        let x = bitcast<i32>(a.v);
        let y = bitcast<i32>(b.v);
        c = select(select(0, -1, x < y), 1, x > y);
        if (OP == RED_ARGMIN) { c = -c; }
    } else {
        let x = bitcast<f32>(a.v);
        let y = bitcast<f32>(b.v);
        let nx = is_nan(x);
        let ny = is_nan(y);
        if (nx || ny) {
            // The CPU's fold from element 0 (cpu_reduce.c): a NaN at index 0
            // beats every candidate, a NaN elsewhere loses to every number.
            c = select(0, select(-1, 1, a.idx == 0u), nx) - select(0, select(-1, 1, b.idx == 0u), ny);
        } else {
            c = select(select(0, -1, x < y), 1, x > y);
            if (OP == RED_ARGMIN) { c = -c; }
        }
    }
    if (c > 0) { return a; }
    if (c < 0) { return b; }
    if (LAST == (a.idx > b.idx)) { return a; }
    return b;
}

fn icomb(a: i32, b: i32) -> i32 {
    switch OP {
        case RED_MAX: { return max(a, b); }
        case RED_MIN: { return min(a, b); }
        case RED_PROD: { return a * b; }
        default: { return a + b; }
    }
}

fn fcomb(a: f32, b: f32, phase: u32) -> f32 {
    switch OP {
        case RED_MAX: { return fmax_nan(a, b); }
        case RED_MIN: { return fmin_nan(a, b); }
        case RED_PROD: { return a * b; }
        case RED_LSE: { if (phase == 0u) { return fmax_nan(a, b); } return a + b; }
        default: { return a + b; }
    }
}

// ReduceL2's (scale, ssq) pairs: the larger scale stays, the other ssq
// comes in scaled by (its scale / the larger)^2 (1 for equal scales: two
// infinities, or two zeros). Scales are never NaN: a NaN element is the
// pair (0, NaN), whose ssq propagates.
fn l2_comb(a: Acc, b: Acc) -> Acc {
    let sa = bitcast<f32>(a.v);
    let sb = bitcast<f32>(b.v);
    let qa = bitcast<f32>(a.idx);
    let qb = bitcast<f32>(b.idx);
    if (sa >= sb) {
        let r = select(sb / sa, 1.0, sa == sb);
        return Acc(a.v, bitcast<u32>(qa + qb * r * r));
    }
    let r = sa / sb;
    return Acc(b.v, bitcast<u32>(qb + qa * r * r));
}

// Combines two partial results.
fn comb(a: Acc, b: Acc, phase: u32) -> Acc {
    if (OP >= RED_ARGMAX) { return better(a, b); }
    if (OP == RED_L2 && !INT) { return l2_comb(a, b); }
    if (INT) { return Acc(bitcast<u32>(icomb(bitcast<i32>(a.v), bitcast<i32>(b.v))), 0u); }
    return Acc(bitcast<u32>(fcomb(bitcast<f32>(a.v), bitcast<f32>(b.v), phase)), 0u);
}

// Adds element bits x (index j along the reduction) to partial a. Phase 1
// of logsumexp adds exp(x - mx).
fn add(a: Acc, x: u32, j: u32, phase: u32, mx: f32) -> Acc {
    if (OP >= RED_ARGMAX) { return better(a, Acc(x, j)); }
    if (INT) {
        var v = bitcast<i32>(x);
        if (OP == RED_L1) { v = abs(v); }
        if (OP == RED_SUMSQ) { v = v * v; }
        return Acc(bitcast<u32>(icomb(bitcast<i32>(a.v), v)), 0u);
    }
    var v = bitcast<f32>(x);
    if (OP == RED_L2) {
        if (is_nan(v)) { return l2_comb(a, Acc(0u, x)); }
        return l2_comb(a, Acc(bitcast<u32>(abs(v)), bitcast<u32>(1.0)));
    }
    if (OP == RED_L1) { v = abs(v); }
    if (OP == RED_SUMSQ) { v = v * v; }
    if (OP == RED_LSE && phase == 1u) { v = exp(v - mx); }
    return Acc(bitcast<u32>(fcomb(bitcast<f32>(a.v), v, phase)), 0u);
}

fn start(phase: u32) -> Acc {
    if (OP >= RED_ARGMAX) { return Acc(0u, NONE); }
    if (OP == RED_L2 && !INT) { return Acc(0u, 0u); }  // scale 0, ssq 0
    if (OP == RED_LSE && phase == 1u) { return Acc(0u, 0u); }  // 0.0
    return Acc(P.init, 0u);
}

// This invocation's partial over its share of one output's elements
// [j0, j1) (contiguous rows: j counts from the row's start).
fn partial_range(base: u32, t: u32, phase: u32, mx: f32, j0: u32, j1: u32) -> Acc {
    var a = start(phase);
    if (CONTIG && !HALF) {
        let s = P.x_off + base;
        let e1 = s + j1;
        let e0 = s + j0;
        let q1 = (e1 + 3u) >> 2u;
        for (var q = (e0 >> 2u) + t; q < q1; q = q + WG) {
            let w = X[q];
            for (var c = 0u; c < 4u; c = c + 1u) {
                let e = q * 4u + c;
                if (e >= e0 && e < e1) { a = add(a, w[c], e - s, phase, mx); }
            }
        }
    } else {
        for (var j = j0 + t; j < j1; j = j + WG) {
            a = add(a, xload(base + off_of(j)), j, phase, mx);
        }
    }
    return a;
}

fn tree(t: u32, a: Acc, phase: u32) -> Acc {
    shv[t] = a.v;
    shi[t] = a.idx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            let r = comb(Acc(shv[t], shi[t]), Acc(shv[t + s], shi[t + s]), phase);
            shv[t] = r.v;
            shi[t] = r.idx;
        }
        workgroupBarrier();
    }
    let r = Acc(shv[0], shi[0]);
    workgroupBarrier();
    return r;
}

fn finish(o: u32, r: Acc, mx: f32) {
    if (OP >= RED_ARGMAX) {
        Y[P.y_off + 2u * o] = select(r.idx, 0u, r.idx == NONE);
        Y[P.y_off + 2u * o + 1u] = 0u;
        return;
    }
    if (INT) {
        Y[P.y_off + o] = r.v;
        return;
    }
    var v = bitcast<f32>(r.v);
    if ((OP == RED_MAX || OP == RED_MIN) && v == 0.0) {
        let base = base_of(o);
        for (var j = 0u; j < P.count; j = j + 1u) {
            let e = bitcast<f32>(xload(base + off_of(j)));
            if (e == 0.0) {
                v = e;
                break;
            }
        }
    }
    switch OP {
        case RED_MEAN: { v = v / f32(P.count); }
        case RED_L2: { v = v * sqrt(bitcast<f32>(r.idx)); }
        case RED_LOGSUM: { v = log(v); }
        case RED_LSE: { if (is_finite(mx)) { v = mx + log(v); } else { v = mx; } }
        default: {}
    }
    Y[P.y_off + o] = bitcast<u32>(v);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    if (COLS) {
        let o = lid.x + (wid.x + wid.y * nwg.x) * WG;
        if (o >= P.rows) { return; }
        let base = base_of(o);
        var mx = 0.0;
        if (OP == RED_LSE) {
            var m = start(0u);
            for (var j = 0u; j < P.count; j = j + 1u) { m = add(m, xload(base + off_of(j)), j, 0u, 0.0); }
            mx = bitcast<f32>(m.v);
        }
        var a = start(1u);
        if (OP != RED_LSE) { a = start(0u); }
        let ph = select(0u, 1u, OP == RED_LSE);
        for (var j = 0u; j < P.count; j = j + 1u) { a = add(a, xload(base + off_of(j)), j, ph, mx); }
        finish(o, a, mx);
        return;
    }
    let t = lid.x;
    if (STAGE == 1u) {
        let g = wid.x + wid.y * nwg.x;
        if (g >= P.rows * P.nch) { return; }
        let row = g / P.nch;
        let j0 = (g % P.nch) * P.chunk;
        let r = tree(t, partial_range(row * P.count, t, 0u, 0.0, j0, min(j0 + P.chunk, P.count)), 0u);
        if (t == 0u) {
            TS[P.t_off + 2u * g] = r.v;
            TS[P.t_off + 2u * g + 1u] = r.idx;
        }
        return;
    }
    let row = wid.x + wid.y * nwg.x;
    if (row >= P.rows) { return; }
    if (STAGE == 2u) {
        var a = start(0u);
        for (var c = t; c < P.nch; c = c + WG) {
            let i = P.t_off + 2u * (row * P.nch + c);
            a = comb(a, Acc(TS[i], TS[i + 1u]), 0u);
        }
        let r = tree(t, a, 0u);
        if (t == 0u) { finish(row, r, 0.0); }
        return;
    }
    let base = base_of(row);
    var mx = 0.0;
    var ph = 0u;
    if (OP == RED_LSE) {
        mx = bitcast<f32>(tree(t, partial_range(base, t, 0u, 0.0, 0u, P.count), 0u).v);
        ph = 1u;
    }
    let r = tree(t, partial_range(base, t, ph, mx, 0u, P.count), ph);
    if (t == 0u) { finish(row, r, mx); }
}
