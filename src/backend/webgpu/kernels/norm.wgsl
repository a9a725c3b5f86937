// Normalisations and softmax over groups of elements ("rows"): each row's
// statistics, then every element of the row rewritten from them. f32 arithmetic
// on elements of type T.
//   MODE (NM_* of wg_codes.h):
//   LAYER: y = (x - mean) / sqrt(var + eps) * s + b     (LayerNormalization-17,
//          InstanceNormalization-6/22, GroupNormalization-18/21;
//          optional per-row outputs mean and 1 / sqrt(var + eps))
//   RMS:   y = x / sqrt(mean(x^2) + eps) * s            (RMSNormalization-23)
//   LP1:   y = x / sum|x|, 0 where the norm is 0        (LpNormalization-1/22, p = 1)
//   LP2:   y = x / sqrt(sum x^2), 0 where it is 0       (p = 2)
//   MVN:   y = (x - mean) / (sqrt(var) + 1e-9)          (MeanVarianceNormalization-9/13)
//   SOFTMAX:    y = exp(x - max) / sum exp(x - max)     (Softmax-1/11/13)
//   LOGSOFTMAX: y = x - max - log(sum exp(x - max))     (LogSoftmax-1/11/13)
// var is the population variance, computed from the mean in a second pass.
// A row o covers x[base(o) + off(j)], j in [0, count): kept dims kdim/kstr,
// reduced dims rdim/rstr as in reduce.wgsl; y has x's layout. Scale and
// bias are indexed (o % rmod) * rmul + (j / jdiv) % jmod, which covers
// per-row-position (LayerNorm), per-channel (Instance) and per-group or
// per-channel within a group (GroupNorm) parameters.
// Schemes: one workgroup of WG per row with shared-memory trees (CONTIG:
// contiguous rows, read as vec4 words), or (COLS) one invocation per row.
// Bindings (norm_rows.wgsl): X (array<vec4<T>>), S, B, Y, M, V (T; f32
// arithmetic); absent ones are bound to X and never touched. flags: 1 scale, 2 bias, 4 write M, 8 write V.
//!elem f32 f16
//!audited x at base_of(o) + off_of(j), o < rows, j < count (kept and reduced dims of make_redview partition x, < 2^31
//!audited elements; X bound whole as vec4s, CONTIG words below (x_off + numel + 3) / 4); y at x's index (numel(y) ==
//!audited numel(x), emit_norm); S, B at (o % rmod) rmul + (j / jdiv) % jmod < numel (row_param, channel_param) only
//!audited under flags 1, 2; M, V at o < rows under flags 4, 8 (numel rows); sh[t], sh[t + s] below WG <= 256, a power
//!audited of two (rv_wg), sh3 likewise; kdim[k], rdim[k] with k < nk, nr <= 4 (lower_reduce.c)
//!params x_off: u32, s_off: u32, b_off: u32, y_off: u32, m_off: u32, v_off: u32, rows: u32, count: u32,
//!params nk: u32, nr: u32, flags: u32, eps: f32, s_rmod: u32, s_rmul: u32, s_jdiv: u32, s_jmod: u32,
//!params b_rmod: u32, b_rmul: u32, b_jdiv: u32, b_jmod: u32, kdim: vec4<u32>, kstr: vec4<u32>,
//!params rdim: vec4<u32>, rstr: vec4<u32>
override MODE: u32 = 0u;
override COLS: bool = false;
override CONTIG: bool = false;
override WG: u32 = 64u;

//!include codes
//!include norm_rows
//!include row_scale

//!include reduce_index

// Pass 0 sums x (layer, mvn), x^2 (rms, lp2) or |x| (lp1), each with a
// scaled twin and the largest |x| (norm_rows.wgsl's stat3; partial3), or
// takes the max (softmax: term x); pass 1 sums ((x - c) sc)^2 (layer, mvn;
// sc from dev_scale) or exp(x - c) (softmax).
fn term(x: f32, ph: u32, c: f32, sc: f32) -> f32 {
    if (ph == 0u) { return x; }
    if (MODE >= NM_SOFTMAX) { return exp(x - c); }
    let d = x * sc - c * sc; // ((x - c) sc, without overflow: exact scaling)
    return d * d;
}

fn is_max_pass(ph: u32) -> bool { return MODE >= NM_SOFTMAX && ph == 0u; }

fn comb(a: f32, b: f32, ph: u32) -> f32 {
    if (is_max_pass(ph)) { return max(a, b); }
    return a + b;
}

fn start(ph: u32) -> f32 {
    // -max float as the start of a max: every finite value and +inf beat it
    if (is_max_pass(ph)) { return -3.40282347e38; }
    return 0.0;
}

// One element's contribution to a pass: stat3 (three: pass 0 of the modes
// with stat3), or term in .x.
fn elem(x: f32, ph: u32, c: f32, sc: f32, three: bool) -> vec3<f32> {
    if (three) { return stat3(x); }
    return vec3<f32>(term(x, ph, c, sc), 0.0, 0.0);
}

fn comb_v(a: vec3<f32>, b: vec3<f32>, ph: u32, three: bool) -> vec3<f32> {
    if (three) { return comb3(a, b); }
    return vec3<f32>(comb(a.x, b.x, ph), 0.0, 0.0);
}

// Invocation t's part of a pass over the row at base (elem, comb_v).
fn partial_v(base: u32, t: u32, ph: u32, c: f32, sc: f32, three: bool) -> vec3<f32> {
    var a = vec3<f32>(select(start(ph), 0.0, three), 0.0, 0.0);
    if (CONTIG) {
        let s = P.x_off + base;
        let e1 = s + P.count;
        let q1 = (e1 + 3u) >> 2u;
        for (var q = (s >> 2u) + t; q < q1; q = q + WG) {
            let w = X[q];
            for (var k = 0u; k < 4u; k = k + 1u) {
                let e = q * 4u + k;
                if (e >= s && e < e1) { a = comb_v(a, elem(f32(w[k]), ph, c, sc, three), ph, three); }
            }
        }
    } else {
        for (var j = t; j < P.count; j = j + WG) {
            a = comb_v(a, elem(xload(base + off_of(j)), ph, c, sc, three), ph, three);
        }
    }
    return a;
}

fn partial(base: u32, t: u32, ph: u32, c: f32, sc: f32) -> f32 { return partial_v(base, t, ph, c, sc, false).x; }

// partial's pass 0 for the modes with stat3 (summed).
fn partial3(base: u32, t: u32) -> vec3<f32> { return partial_v(base, t, 0u, 0.0, 1.0, true); }


fn tree(t: u32, a: f32, ph: u32) -> f32 {
    sh[t] = a;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) { sh[t] = comb(sh[t], sh[t + s], ph); }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier();
    return r;
}

// y = f(x, c, k) (stats_to_ck).
fn out_elem(o: u32, j: u32, e: u32, c: f32, k: f32, sc: f32) {
    let x = xload(e);
    var y = 0.0;
    switch MODE {
        case NM_SOFTMAX: { y = exp(x - c) * k; }
        case NM_LOGSOFTMAX: { y = (x - c) - k; }
        default: { y = affine(o, j, x, c, k, sc); }
    }
    Y[P.y_off + e] = T(y);
}

// Does the statistic need a second ph around the first one's result?
fn two_pass() -> bool { return MODE == NM_LAYER || MODE == NM_MVN || MODE >= NM_SOFTMAX; }

fn first_center(a0: f32) -> f32 {
    if (MODE >= NM_SOFTMAX) { return a0; }
    return a0 / f32(P.count);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    if (COLS) {
        let o = lid.x + (wid.x + wid.y * nwg.x) * WG;
        if (o >= P.rows) { return; }
        let base = base_of(o);
        var ck: vec2<f32>;
        var sc = 1.0;
        if (has_stat3()) {
            var s3 = vec3<f32>(0.0);
            for (var j = 0u; j < P.count; j = j + 1u) { s3 = comb3(s3, stat3(xload(base + off_of(j)))); }
            if (centred()) {
                let ms = mean_sc(s3, f32(P.count));
                var a1 = 0.0;
                for (var j = 0u; j < P.count; j = j + 1u) { a1 = a1 + term(xload(base + off_of(j)), 1u, ms.x, ms.y); }
                ck = centred_ck(ms.x, a1, ms.y);
                sc = ms.y;
            } else {
                ck = squares_ck(s3);
            }
        } else {
            var a0 = start(0u);
            for (var j = 0u; j < P.count; j = j + 1u) { a0 = comb(a0, term(xload(base + off_of(j)), 0u, 0.0, 1.0), 0u); }
            var a1 = 0.0;
            if (two_pass()) {
                let c = first_center(a0);
                for (var j = 0u; j < P.count; j = j + 1u) { a1 = a1 + term(xload(base + off_of(j)), 1u, c, 1.0); }
            }
            ck = stats_to_ck(a0, a1);
        }
        write_stats(o, ck);
        for (var j = 0u; j < P.count; j = j + 1u) { out_elem(o, j, base + off_of(j), ck.x, ck.y, sc); }
        return;
    }
    let row = wid.x + wid.y * nwg.x;
    if (row >= P.rows) { return; }
    let t = lid.x;
    let base = base_of(row);
    var ck: vec2<f32>;
    var sc = 1.0;
    if (has_stat3()) {
        let s3 = tree3(t, partial3(base, t), WG);
        if (centred()) {
            let ms = mean_sc(s3, f32(P.count));
            ck = centred_ck(ms.x, tree(t, partial(base, t, 1u, ms.x, ms.y), 1u), ms.y);
            sc = ms.y;
        } else {
            ck = squares_ck(s3);
        }
    } else {
        let a0 = tree(t, partial(base, t, 0u, 0.0, 1.0), 0u);
        var a1 = 0.0;
        if (two_pass()) { a1 = tree(t, partial(base, t, 1u, first_center(a0), 1.0), 1u); }
        ck = stats_to_ck(a0, a1);
    }
    if (t == 0u) { write_stats(row, ck); }
    for (var j = t; j < P.count; j = j + WG) { out_elem(row, j, base + off_of(j), ck.x, ck.y, sc); }
}
