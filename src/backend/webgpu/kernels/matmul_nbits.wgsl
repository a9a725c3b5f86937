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
// Workgroup GEMV: 256 invocations = 8 columns x 32 lanes, for 4 rows of A;
// lane l takes words l, l + 32, ... of its column, unpacks 8 weights per
// u32, and accumulates the 4 rows' dot products; the lanes' sums are added
// in lane order in workgroup memory (no dependence on timing).
// Grid: tiles_n * tiles_m workgroups (tiles_n = ceil(N / 8), tiles_m =
// ceil(M / 4)), linear index wid.x + wid.y * nwg.x.
// Params: a_off, b_off, s_off, z_off, y_off (elements of each binding),
// M, N, K, nb (blocks per column), bs (block_size), col_words, zrow (bytes of
// zero points per column), tiles_n.
//!elem f32 f16
//!params a_off: u32, b_off: u32, s_off: u32, z_off: u32, y_off: u32, M: u32, N: u32, K: u32, nb: u32,
//!params bs: u32, col_words: u32, zrow: u32, tiles_n: u32
//!bind A: array<T>, B: array<u32>, S: array<f32>, Z: array<u32>, Y: array<T>
override HAS_ZP: bool = false;

var<workgroup> red: array<vec4<f32>, 256>;

// A[m, k] as f32, 0 past K (the pad of the last block).
fn a_at(m: u32, k: u32) -> f32 {
    if (k >= P.K) { return 0.0; }
    return f32(A[P.a_off + m * P.K + k]);
}

fn zero_point(n: u32, blk: u32) -> f32 {
    if (!HAS_ZP) { return 8.0; }
    let byte = P.z_off * 4u + n * P.zrow + blk / 2u;
    let v = (Z[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
    return f32((v >> ((blk & 1u) * 4u)) & 15u);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    let tn = wl % P.tiles_n;
    let m0 = (wl / P.tiles_n) * 4u;
    if (m0 >= P.M) { return; }
    let l = li % 32u;
    let c = li / 32u;
    let n = tn * 8u + c;
    let rows = min(4u, P.M - m0);
    var acc = vec4<f32>(0.0);
    if (n < P.N) {
        let wpb = P.bs / 8u; // words per block
        for (var w = l; w < P.col_words; w = w + 32u) {
            let q = B[P.b_off + n * P.col_words + w];
            let blk = w / wpb;
            let s = S[P.s_off + n * P.nb + blk];
            let zs = -zero_point(n, blk) * s;
            let wl4 = fma(vec4<f32>(vec4<u32>(q, q >> 4u, q >> 8u, q >> 12u) & vec4<u32>(15u)), vec4<f32>(s),
                          vec4<f32>(zs));
            let wh4 = fma(vec4<f32>(vec4<u32>(q >> 16u, q >> 20u, q >> 24u, q >> 28u) & vec4<u32>(15u)),
                          vec4<f32>(s), vec4<f32>(zs));
            let k = 8u * w;
            for (var r = 0u; r < rows; r = r + 1u) {
                let m = m0 + r;
                var al: vec4<f32>;
                var ah: vec4<f32>;
                if (k + 8u <= P.K) {
                    let e = P.a_off + m * P.K + k;
                    al = vec4<f32>(f32(A[e]), f32(A[e + 1u]), f32(A[e + 2u]), f32(A[e + 3u]));
                    ah = vec4<f32>(f32(A[e + 4u]), f32(A[e + 5u]), f32(A[e + 6u]), f32(A[e + 7u]));
                } else {
                    al = vec4<f32>(a_at(m, k), a_at(m, k + 1u), a_at(m, k + 2u), a_at(m, k + 3u));
                    ah = vec4<f32>(a_at(m, k + 4u), a_at(m, k + 5u), a_at(m, k + 6u), a_at(m, k + 7u));
                }
                acc[r] = acc[r] + (dot(wl4, al) + dot(wh4, ah));
            }
        }
    }
    red[li] = acc;
    workgroupBarrier();
    if (l == 0u && n < P.N) {
        var sum = red[c * 32u];
        for (var j = 1u; j < 32u; j = j + 1u) { sum = sum + red[c * 32u + j]; }
        for (var r = 0u; r < rows; r = r + 1u) { Y[P.y_off + (m0 + r) * P.N + n] = T(sum[r]); }
    }
}
