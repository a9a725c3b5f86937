// The normalisations of norm.wgsl (MODE NM_LAYER, NM_RMS, NM_LP1, NM_LP2,
// NM_MVN; same formulas and Params meaning) for few long rows: each row is
// cut into chunks so that the whole GPU works on it, in three dispatches
// (STAGE):
//   0: one workgroup (256) per (row, chunk): the chunk's count n, and its
//      mean and centred sum of squares M2 (layer, mvn: two passes over the
//      chunk; M2 of deviations scaled by the chunk's sc, row_scale.wgsl),
//      or its sums of x^2 and (x 2^-96)^2 (rms, lp2) or of |x| and
//      |x| 2^-64 (lp1), then its largest |x|, into TS[4 r ..];
//   1: one invocation per row: the chunks combined (Chan et al.: mean =
//      sum n_c mean_c / n, M2 = sum M2_c + sum n_c (mean_c - mean)^2; a row
//      whose largest |x| reaches 2^48 at the row's sc, its mean from the
//      means times 2^-64), the row's (c, k) of norm.wgsl and its sc into
//      TS[st_off + 3 o ..], and the optional per-row outputs M, V;
//   2: one invocation per element: y = (x - c) * k * s + b as in norm.wgsl
//      (norm_rows.wgsl's affine, at the row's sc).
// Rows are contiguous and consecutive: row o is x[o * count, (o + 1) count).
// Semantics: LayerNormalization-17, InstanceNormalization-6/22,
// GroupNormalization-18/21, RMSNormalization-23, LpNormalization-1/22,
// MeanVarianceNormalization-9/13 (contiguous axes).
// Bindings: X, S, B, Y, M, V as in norm.wgsl (norm_rows.wgsl), TS (scratch:
// 4 words per chunk, then from st_off 3 per row: c, k, sc).
//!elem f32 f16
//!audited stage 0: g < rows nch, row < rows, j0 < j1 <= count (nch = ceil(count / chunk)), words below
//!audited (x_off + rows count + 3) / 4, TS[4 g + 3] < 4 rows nch = st_off; stage 1: i < rows, TS below st_off +
//!audited 3 rows = the window (emit_norm_split); stage 2: i < rows count = numel(x) = numel(y); S, B, M, V as
//!audited norm.wgsl; sh[t + s], sh3[t + s] < 256
//!params x_off: u32, s_off: u32, b_off: u32, y_off: u32, m_off: u32, v_off: u32, t_off: u32, st_off: u32,
//!params rows: u32, count: u32, chunk: u32, nch: u32, flags: u32, eps: f32, _p0: u32, _p1: u32, s_rmod: u32,
//!params s_rmul: u32, s_jdiv: u32, s_jmod: u32, b_rmod: u32, b_rmul: u32, b_jdiv: u32, b_jmod: u32
override MODE: u32 = 0u;
override STAGE: u32 = 0u;

//!include codes
//!include norm_rows
//!include row_scale
//!bind TS: array<f32>

// ((x - c) sc)^2 (the second pass of layer, mvn).
fn term(x: f32, c: f32, sc: f32) -> f32 {
    let d = x * sc - c * sc;
    return d * d;
}

// Invocation t's sum over elements [s, e1) of the row block (x indices):
// of stat3 (three: the first pass), or of term(x, c, sc) in .x.
fn chunk_sum_v(s: u32, e1: u32, t: u32, c: f32, sc: f32, three: bool) -> vec3<f32> {
    var a = vec3<f32>(0.0);
    let q1 = (e1 + 3u) >> 2u;
    for (var q = (s >> 2u) + t; q < q1; q = q + 256u) {
        let w = X[q];
        for (var k = 0u; k < 4u; k = k + 1u) {
            let e = q * 4u + k;
            if (e >= s && e < e1) {
                let x = f32(w[k]);
                if (three) { a = comb3(a, stat3(x)); } else { a.x = a.x + term(x, c, sc); }
            }
        }
    }
    return a;
}

fn chunk_sum(s: u32, e1: u32, t: u32, c: f32, sc: f32) -> f32 { return chunk_sum_v(s, e1, t, c, sc, false).x; }

fn chunk_sum3(s: u32, e1: u32, t: u32) -> vec3<f32> { return chunk_sum_v(s, e1, t, 0.0, 1.0, true); }

fn tree(t: u32, a: f32) -> f32 {
    sh[t] = a;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (t < s) { sh[t] = sh[t] + sh[t + s]; }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let g = wid.x + wid.y * nwg.x;
    if (STAGE == 0u) {
        if (g >= P.rows * P.nch) { return; }
        let t = lid.x;
        let row = g / P.nch;
        let j0 = (g % P.nch) * P.chunk;
        let j1 = min(j0 + P.chunk, P.count);
        let s = P.x_off + row * P.count + j0;
        let e1 = P.x_off + row * P.count + j1;
        let n = f32(j1 - j0);
        var p1 = 0.0;
        var p2 = 0.0;
        var mx = 0.0;
        if (centred()) {
            let s3 = tree3(t, chunk_sum3(s, e1, t), 256u);
            let ms = mean_sc(s3, n);
            p1 = ms.x;
            p2 = tree(t, chunk_sum(s, e1, t, ms.x, ms.y));
            mx = s3.z;
        } else { /* rms, lp1, lp2 */
            let s3 = tree3(t, chunk_sum3(s, e1, t), 256u);
            p1 = s3.x;
            p2 = s3.y;
            mx = s3.z;
        }
        if (t == 0u) {
            TS[P.t_off + 4u * g] = n;
            TS[P.t_off + 4u * g + 1u] = p1;
            TS[P.t_off + 4u * g + 2u] = p2;
            TS[P.t_off + 4u * g + 3u] = mx;
        }
        return;
    }
    let i = lid.x + g * 256u;
    if (STAGE == 1u) {
        if (i >= P.rows) { return; }
        let first = P.t_off + 4u * i * P.nch;
        var n = 0.0;
        var sum = 0.0;
        var sum_s = 0.0; // layer, mvn: of n_c mean_c 2^-64; rms, lp2: of the scaled squares
        var mx = 0.0;
        for (var c = 0u; c < P.nch; c = c + 1u) {
            let nc = TS[first + 4u * c];
            let p1 = TS[first + 4u * c + 1u];
            n = n + nc;
            if (centred()) {
                sum = sum + nc * p1;
                sum_s = sum_s + nc * (p1 * TWO_M64);
            } else {
                sum = sum + p1;
                sum_s = sum_s + TS[first + 4u * c + 2u];
            }
            mx = max(mx, TS[first + 4u * c + 3u]);
        }
        // n sums the chunks' counts: exactly f32(count), which the ck formulas use
        let sc = dev_scale(mx);
        var ck: vec2<f32>;
        if (centred()) {
            let mean = select(sum / n, (sum_s / n) * TWO_64, sc < 1.0);
            var m2 = 0.0;
            for (var c = 0u; c < P.nch; c = c + 1u) {
                // the chunk's M2 from its own scale to the row's (powers of two)
                let r = sc / dev_scale(TS[first + 4u * c + 3u]);
                let d = TS[first + 4u * c + 1u] * sc - mean * sc;
                m2 = m2 + TS[first + 4u * c + 2u] * r * r + TS[first + 4u * c] * d * d;
            }
            ck = centred_ck(mean, m2, sc);
        } else {
            ck = squares_ck(vec3<f32>(sum, sum_s, mx));
        }
        TS[P.t_off + P.st_off + 3u * i] = ck.x;
        TS[P.t_off + P.st_off + 3u * i + 1u] = ck.y;
        TS[P.t_off + P.st_off + 3u * i + 2u] = select(1.0, sc, centred());
        write_stats(i, ck);
        return;
    }
    if (i >= P.rows * P.count) { return; }
    let o = i / P.count;
    let j = i % P.count;
    let st = P.t_off + P.st_off + 3u * o;
    Y[P.y_off + i] = T(affine(o, j, xload(i), TS[st], TS[st + 1u], TS[st + 2u]));
}
