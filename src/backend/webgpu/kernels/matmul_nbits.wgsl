// rlx.MatMulNBits (src/ir/ops/internal_ops.h; onnxruntime's
// com.microsoft.MatMulNBits with bits 4): Y[m, n] = sum_k A[m, k] W[k, n],
// W[k, n] = (q - zp) * scale, on the packed 4-bit weights.
// Layout: B (bytes, four to a word, the host's bytes) holds per column n
// n_blocks blocks of block_size / 2 bytes, so column n is the words
// [n * col_words, (n + 1) * col_words), col_words = n_blocks * block_size / 8,
// and word w holds k = 8 w .. 8 w + 7 (nibble j of the little-endian word
// is k = 8 w + j; k >= K is the last block's pad, never read against A).
// S: f32 scales [N, n_blocks]; Z: zero points, bytes [N, zrow], block b
// in nibble b % 2 of byte b / 2 (HAS_ZP; else 8 and Z a stand-in).
// A [M, K] and Y [M, N] of T (f32 or f16), f32 arithmetic, Y rounded once.
// A and B are bound as vec4s (lower_internal.c: wg_bind_value4; every value
// starts 256-byte aligned, so a_off and b_off are 0).
//
// GEMV (DEQ false): 256 invocations = 8 columns x 32 lanes, for 4 rows of
// A; the lanes' sums are added in lane order in workgroup memory (no
// dependence on timing).
//   VEC (K % 32 == 0 and block_size % 32 == 0, the LLM shapes; only with
//   gpu.nbits=gemv1: lower_internal.c runs matmul_nbits_gemv.wgsl there
//   otherwise): in steps
//   of 32 pieces of 16 bytes (32 k of one block each), the workgroup first
//   stages A's 1024 k of its rows in workgroup memory (each A element read
//   from memory once per workgroup, not once per column), then lane l takes
//   piece l of the step from its column, turns the nibbles into the exact
//   f32 values q - zp (q | 0x4B000000 is the float 2^23 + q: no integer
//   conversion), scales them (the CPU reference's weights) and sums their
//   products with A's 32 values per row.
//   else: lane l takes the words l, l + 32, ..., each weight (q - zp) * s,
//   A element by element with k < K tests.
// DEQ: W into Y (the f32 scratch) as [col_words * 8, N], W[k, n] = (q - zp)
// * scale in f32 as the CPU reference rounds it, one word (8 k) of column n
// per invocation, n fastest (total = N * col_words; the stores of a warp are
// neighbours); lower_internal.c then multiplies A by it with the tiled GEMM
// (rows of A past the GEMV's few).
// Grid: GEMV tiles_n * tiles_m workgroups (tiles_n = ceil(N / 8), tiles_m =
// ceil(M / 4)); DEQ ceil(total / 256); linear index wid.x + wid.y * nwg.x.
// Params: a_off, b_off, s_off, z_off, y_off (elements of each binding),
// M, N, K, nb (blocks per column), bs (block_size), col_words, zrow (bytes of
// zero points per column), tiles_n.
//!elem f32 f16
//!audited A under m < M and k < K (VEC: 8 v + 7 < K / 4 for piece v < K / 32, rows r < M - m0), sh below 1024,
//!audited B under n < N and w < col_words,
//!audited S and Z at blk < nb of column n < N, Y under m < M, n < N (DEQ: (8 w + 7) N + n < N kp for t < N col_words)
//!params a_off: u32, b_off: u32, s_off: u32, z_off: u32, y_off: u32, M: u32, N: u32, K: u32, nb: u32,
//!params bs: u32, col_words: u32, zrow: u32, tiles_n: u32
//!bind A: array<vec4<T>>, B: array<vec4<u32>>, S: array<f32>, Z: array<u32>, Y: array<T>
override HAS_ZP: bool = false;
override VEC: bool = false;
override DEQ: bool = false;

// VEC: A's staged step, vec4 j of piece p of row r at (r * 8 + j) * 32 + p
// (a lane's eight reads neighbour the other lanes'); then the lanes' sums
// (red, the first 256)
var<workgroup> sh: array<vec4<f32>, 1024>;

// A[m, k] as f32, 0 past K (the pad of the last block).
fn a_at(m: u32, k: u32) -> f32 {
    if (k >= P.K) { return 0.0; }
    let e = P.a_off + m * P.K + k;
    return f32(A[e >> 2u][e & 3u]);
}

// Word w of B (from b_off).
fn b_word(w: u32) -> u32 {
    let e = P.b_off + w;
    return B[e >> 2u][e & 3u];
}

fn zero_point(n: u32, blk: u32) -> f32 {
    if (!HAS_ZP) { return 8.0; }
    let byte = P.z_off * 4u + n * P.zrow + blk / 2u;
    let v = (Z[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
    return f32((v >> ((blk & 1u) * 4u)) & 15u);
}

// Column n's block blk: (scale, 2^23 + zero point).
fn block_scale(n: u32, blk: u32) -> vec2<f32> {
    return vec2<f32>(S[P.s_off + n * P.nb + blk], 8388608.0 + zero_point(n, blk));
}

// The weights of nibbles j .. j + 3 of word q (k = j .. j + 3) of a block
// sz = block_scale(..): (q - zp) * scale, q - zp exact in f32 (q |
// 0x4B000000 is the float 2^23 + q), one rounding as the CPU reference's.
fn weights4(q: u32, sz: vec2<f32>) -> vec4<f32> {
    let u = (vec4<u32>(q, q >> 4u, q >> 8u, q >> 12u) & vec4<u32>(15u)) | vec4<u32>(0x4B000000u);
    return (bitcast<vec4<f32>>(u) - vec4<f32>(sz.y)) * sz.x;
}

// Rows 0 .. rows - 1 of the staged step against the 32 weights of piece v
// (16 bytes q, k = 32 v .. 32 v + 31) of column n, staged as piece p: the
// weights (q - zp) * scale as the CPU reference rounds them (an infinite or
// huge scale gives what it gives there), each row's sum of products.
fn piece(q: vec4<u32>, n: u32, v: u32, p: u32, rows: u32) -> vec4<f32> {
    let sz = block_scale(n, (32u * v) / P.bs);
    let w0 = weights4(q.x, sz);
    let w1 = weights4(q.x >> 16u, sz);
    let w2 = weights4(q.y, sz);
    let w3 = weights4(q.y >> 16u, sz);
    let w4 = weights4(q.z, sz);
    let w5 = weights4(q.z >> 16u, sz);
    let w6 = weights4(q.w, sz);
    let w7 = weights4(q.w >> 16u, sz);
    var r = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (i < rows) {
            let e = i * 256u + p;
            let d0 = dot(w0, sh[e]) + dot(w1, sh[e + 32u]);
            let d1 = dot(w2, sh[e + 64u]) + dot(w3, sh[e + 96u]);
            let d2 = dot(w4, sh[e + 128u]) + dot(w5, sh[e + 160u]);
            let d3 = dot(w6, sh[e + 192u]) + dot(w7, sh[e + 224u]);
            r[i] = (d0 + d1) + (d2 + d3);
        }
    }
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    if (DEQ) {
        let t = wl * 256u + li;
        if (t < P.N * P.col_words) {
            let n = t % P.N;
            let w = t / P.N;
            let blk = w / (P.bs / 8u);
            let sz = block_scale(n, blk);
            let q = b_word(n * P.col_words + w);
            let lo = weights4(q, sz);
            let hi = weights4(q >> 16u, sz);
            let o = P.y_off + 8u * w * P.N + n;
            for (var j = 0u; j < 4u; j = j + 1u) {
                Y[o + j * P.N] = T(lo[j]);
                Y[o + (4u + j) * P.N] = T(hi[j]);
            }
        }
        return;
    }
    let tn = wl % P.tiles_n;
    let m0 = (wl / P.tiles_n) * 4u;
    if (m0 >= P.M) { return; }
    let l = li % 32u;
    let c = li / 32u;
    let n = tn * 8u + c;
    let rows = min(4u, P.M - m0);
    var acc = vec4<f32>(0.0);
    if (VEC) {
        let kv = P.K / 32u; // pieces holding k < K
        let base = P.b_off / 4u + n * (P.col_words / 4u);
        let a0 = P.a_off / 4u + m0 * (P.K / 4u);
        for (var v0 = 0u; v0 < kv; v0 = v0 + 32u) {
            // this lane's piece of B first (in flight while A is staged)
            let v = v0 + l;
            let own = n < P.N && v < kv;
            var q = vec4<u32>(0u);
            if (own) { q = B[base + v]; }
            // stage pieces v0 .. v0 + 31 of the rows: thread li takes vec4
            // li % 8 of piece li / 8 (consecutive vec4s of A)
            let sp = li / 8u;
            let sj = li % 8u;
            if (v0 + sp < kv) {
                for (var r = 0u; r < rows; r = r + 1u) {
                    sh[(r * 8u + sj) * 32u + sp] = vec4<f32>(A[a0 + r * (P.K / 4u) + 8u * (v0 + sp) + sj]);
                }
            }
            workgroupBarrier();
            if (own) { acc = acc + piece(q, n, v, l, rows); }
            workgroupBarrier();
        }
    } else if (n < P.N) {
        let wpb = P.bs / 8u; // words per block
        for (var w = l; w < P.col_words; w = w + 32u) {
            let q = b_word(n * P.col_words + w);
            let blk = w / wpb;
            let sz = block_scale(n, blk);
            let wl4 = weights4(q, sz);
            let wh4 = weights4(q >> 16u, sz);
            let k = 8u * w;
            for (var r = 0u; r < rows; r = r + 1u) {
                let m = m0 + r;
                let al = vec4<f32>(a_at(m, k), a_at(m, k + 1u), a_at(m, k + 2u), a_at(m, k + 3u));
                let ah = vec4<f32>(a_at(m, k + 4u), a_at(m, k + 5u), a_at(m, k + 6u), a_at(m, k + 7u));
                acc[r] = acc[r] + (dot(wl4, al) + dot(wh4, ah));
            }
        }
    }
    sh[li] = acc;
    workgroupBarrier();
    if (l == 0u && n < P.N) {
        var sum = sh[c * 32u];
        for (var j = 1u; j < 32u; j = j + 1u) { sum = sum + sh[c * 32u + j]; }
        for (var r = 0u; r < rows; r = r + 1u) { Y[P.y_off + (m0 + r) * P.N + n] = T(sum[r]); }
    }
}
