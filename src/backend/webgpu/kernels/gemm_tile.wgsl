// Shared part of gemm.wgsl and the generated GEMM (gemm_gen.c), not a
// kernel: included with "//!include gemm_tile" after gemm_common. The
// includer declares TM, TN, WGX, WGY, BK, A_MODE, B_MODE, Y_VEC, Y_PIX,
// SPLITK, ACT, RES and PREFETCH (as overrides or constants), the "codes"
// snippet (GA_*, GB_*: the modes, wg_codes.h), the tiles' element type
// TILE_T (f32, or f16 for the generated kernel's f16 sums; the operands
// are then f16, which the conversion keeps exactly) and the workgroup
// tiles As and Bs of vec4<TILE_T> (see gemm.wgsl for every field's meaning). Here: the
// tile loads (fetch_* read an item of the next k tile from the operand,
// put_* store it into As / Bs), tile_job (which tile, batch item and k
// slice a workgroup computes) and store4 (the epilogue of four adjacent
// outputs of one row).

fn set_as(i: u32, v: f32) { As[i >> 2u][i & 3u] = TILE_T(v); }
fn set_bs(i: u32, v: f32) { Bs[i >> 2u][i & 3u] = TILE_T(v); }

// Tile loads as items: item i of the A tile is a vec4 (A_MODE GA_VEC_K, GA_VEC_M) or one
// element (in .x) of the BM x BK tile; fetch reads it from A (0 outside
// M x kcount), put stores it into As[k][m]. Likewise B.
fn items_a() -> u32 { return select(WGY * TM * BK, WGY * TM * BK / 4u, A_MODE == GA_VEC_K || A_MODE == GA_VEC_M); }
fn items_b() -> u32 { return select(WGX * TN * BK, WGX * TN * BK / 4u, B_MODE == GB_VEC_N || B_MODE == GB_VEC_K); }

fn fetch_a(i: u32, k0: u32, kcount: u32, m0: u32, abase: u32) -> vec4<f32> {
    let BM = WGY * TM;
    if (A_MODE == GA_VEC_K) {
        let m = m0 + i / (BK / 4u);
        let k = k0 + 4u * (i % (BK / 4u));
        if (m < P.M && k < kcount) { return lda4(abase + m * P.a_sm + k); }
        return vec4<f32>(0.0);
    }
    if (A_MODE == GA_VEC_M) {
        let m = m0 + 4u * (i % (BM / 4u));
        let k = k0 + i / (BM / 4u);
        if (m < P.M && k < kcount) { return lda4(abase + m + k * P.a_sk); }
        return vec4<f32>(0.0);
    }
    var ml = i / BK;
    var kl = i % BK;
    if (A_MODE == GA_SCALAR_M) {
        ml = i % BM;
        kl = i / BM;
    }
    let m = m0 + ml;
    let k = k0 + kl;
    if (m < P.M && k < kcount) { return vec4<f32>(lda(abase + m * P.a_sm + k * P.a_sk), 0.0, 0.0, 0.0); }
    return vec4<f32>(0.0);
}

// put_a_at / put_b_at: the same into the copy of the tile that starts at
// element e0 of As / Bs (a multiple of 4; the generated kernel's double
// buffer, gemm_gen.c); put_a / put_b: the first copy.
fn put_a_at(i: u32, v: vec4<f32>, e0: u32) {
    let BM = WGY * TM;
    if (A_MODE == GA_VEC_K) {
        let kq = i % (BK / 4u);
        let ml = i / (BK / 4u);
        set_as(e0 + (4u * kq) * BM + ml, v.x);
        set_as(e0 + (4u * kq + 1u) * BM + ml, v.y);
        set_as(e0 + (4u * kq + 2u) * BM + ml, v.z);
        set_as(e0 + (4u * kq + 3u) * BM + ml, v.w);
    } else if (A_MODE == GA_VEC_M) {
        As[e0 / 4u + ((i / (BM / 4u)) * BM) / 4u + i % (BM / 4u)] = vec4<TILE_T>(v);
    } else if (A_MODE == GA_SCALAR_M) {
        set_as(e0 + (i / BM) * BM + i % BM, v.x);
    } else {
        set_as(e0 + (i % BK) * BM + i / BK, v.x);
    }
}

fn put_a(i: u32, v: vec4<f32>) { put_a_at(i, v, 0u); }

fn fetch_b(i: u32, k0: u32, kcount: u32, n0: u32, bbase: u32, kofs: u32) -> vec4<f32> {
    let BN = WGX * TN;
    if (B_MODE == GB_VEC_N) {
        let n = n0 + 4u * (i % (BN / 4u));
        let k = k0 + i / (BN / 4u);
        if (n < P.N && k < kcount) { return ldb4(bbase + k * P.b_sk + n); }
        return vec4<f32>(0.0);
    }
    if (B_MODE == GB_VEC_K) {
        let n = n0 + i / (BK / 4u);
        let k = k0 + 4u * (i % (BK / 4u));
        if (n < P.N && k < kcount) { return ldb4(bbase + n * P.b_sn + k); }
        return vec4<f32>(0.0);
    }
    var nl = i % BN;
    var kl = i / BN;
    if (B_MODE == GB_SCALAR_K) {
        nl = i / BK;
        kl = i % BK;
    }
    let n = n0 + nl;
    let k = k0 + kl;
    if (n < P.N && k < kcount) {
        if (B_MODE == GB_CONV) { return vec4<f32>(conv_b(bbase, kofs + k, n), 0.0, 0.0, 0.0); }
        return vec4<f32>(ldb(bbase + k * P.b_sk + n * P.b_sn), 0.0, 0.0, 0.0);
    }
    return vec4<f32>(0.0);
}

fn put_b_at(i: u32, v: vec4<f32>, e0: u32) {
    let BN = WGX * TN;
    if (B_MODE == GB_VEC_N) {
        Bs[e0 / 4u + ((i / (BN / 4u)) * BN) / 4u + i % (BN / 4u)] = vec4<TILE_T>(v);
    } else if (B_MODE == GB_VEC_K) {
        let kq = i % (BK / 4u);
        let nl = i / (BK / 4u);
        set_bs(e0 + (4u * kq) * BN + nl, v.x);
        set_bs(e0 + (4u * kq + 1u) * BN + nl, v.y);
        set_bs(e0 + (4u * kq + 2u) * BN + nl, v.z);
        set_bs(e0 + (4u * kq + 3u) * BN + nl, v.w);
    } else if (B_MODE == GB_SCALAR_K) {
        set_bs(e0 + (i % BK) * BN + i / BK, v.x);
    } else {
        set_bs(e0 + (i / BN) * BN + i % BN, v.x);
    }
}

fn put_b(i: u32, v: vec4<f32>) { put_b_at(i, v, 0u); }

// The work of linear workgroup wl: its tile origin (m0, n0), the batch
// bases of the operands, and the k range (SPLITK: slice kofs .. kofs +
// kcount; the slice is the coordinate of batch slot 0, the batch items
// are slots 1..3). ok is false past the grid.
struct TileJob {
    ok: bool,
    m0: u32, n0: u32,
    abase: u32, bbase: u32, ybase: u32, cbase: u32,
    kcount: u32, kofs: u32,
};

fn tile_job(wl: u32) -> TileJob {
    var j: TileJob;
    let tiles = P.tiles_n * P.tiles_m;
    j.ok = wl < tiles * P.nbatch;
    if (!j.ok) { return j; }
    let bidx0 = wl / tiles;
    let t = wl % tiles;
    j.m0 = (t / P.tiles_n) * (WGY * TM);
    j.n0 = (t % P.tiles_n) * (WGX * TN);
    var bidx = bidx0;
    j.abase = 0u;
    j.bbase = 0u;
    j.ybase = 0u;
    j.cbase = 0u;
    for (var d = 3; d >= 0; d = d - 1) {
        let c = bidx % P.bdims[d];
        bidx = bidx / P.bdims[d];
        j.abase = j.abase + c * P.a_bs[d];
        j.bbase = j.bbase + c * P.b_bs[d];
        j.ybase = j.ybase + c * P.y_bs[d];
        j.cbase = j.cbase + c * P.bias_bs[d];
    }
    j.kcount = P.K;
    j.kofs = 0u;
    if (SPLITK) {
        let slice = bidx0 / (P.bdims[1] * P.bdims[2] * P.bdims[3]);
        j.kcount = min(P.klen, P.K - slice * P.klen);
        j.kofs = slice * P.klen;
    }
    return j;
}

// Outputs y[m, n .. n + 3] (those below M and N) from the accumulators v:
// SPLITK stores the raw partial sums; otherwise alpha * v + beta * bias,
// then + the residual (RES: R at y's index, a fused Conv's fourth input),
// then the activation, stored as a vec4 (Y_VEC), over the pixel grid
// (Y_PIX) or element by element.
fn store4(m: u32, n: u32, v: vec4<f32>, ybase: u32, cbase: u32) {
    if (m >= P.M || n >= P.N) { return; }
    let yi = ybase + m * P.y_sm + n;
    if (SPLITK) {
        if (Y_VEC) {
            Y[(P.y_off + yi) >> 2u] = vec4<T>(v);
        } else {
            for (var c = 0u; c < 4u; c = c + 1u) {
                if (n + c < P.N) { store_y(yi + c, v[c]); }
            }
        }
        return;
    }
    var o = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        var x = P.alpha * v[c];
        if (P.has_bias != 0u && n + c < P.N) {
            x = x + P.beta * f32(C[P.c_off + cbase + m * P.bias_sm + (n + c) * P.bias_sn]);
        }
        if (RES && n + c < P.N) { x = x + f32(R[P.r_off + yi + c]); }
        o[c] = act_apply(ACT, x, P.act_alpha, P.act_beta);
    }
    if (Y_VEC) {
        Y[(P.y_off + yi) >> 2u] = vec4<T>(o);
    } else if (Y_PIX) {
        for (var c = 0u; c < 4u; c = c + 1u) {
            let q = n + c;
            if (q < P.N) { store_y(ybase + m * P.y_sm + (q / P.out_w) * P.s_h + (q % P.out_w) * P.s_w, o[c]); }
        }
    } else {
        for (var c = 0u; c < 4u; c = c + 1u) {
            if (n + c < P.N) { store_y(yi + c, o[c]); }
        }
    }
}
