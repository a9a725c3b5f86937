// rlx.MatMulNBits' GEMV for few rows of A where K and block_size are
// multiples of 32 (lower_internal.c: gpu.nbits auto or gemv below 32 rows;
// gpu.nbits=gemv1 runs matmul_nbits.wgsl's VEC path instead). Operands,
// layout and the weights as in matmul_nbits.wgsl: Y[m, n] = sum_k A[m, k]
// W[k, n], W[k, n] = (q - zp) * scale rounded once as the CPU reference
// rounds it (q - zp exact: q | 0x4B000000 is the float 2^23 + q), f32 sums,
// Y rounded once.
//
// Built for the memory system: a weight is read once and used for at most
// 4 rows, so the kernel is bound by how many bytes are in flight.
//   128 invocations = 4 groups x 32 lanes; group g owns the 4 columns
//   n0 = 16 tn + 4 g .. n0 + 3, 4 rows of A from m0.
//   Lane l takes, in steps of 128 pieces (16 bytes, 32 k of one block),
//   the pieces v = v0 + l + 32 j (j < 4) of each of its 4 columns: the 16
//   loads of 16 bytes and their 16 scales (and zero points) are issued
//   together before any arithmetic (a warp's load of one j and column is
//   512 neighbouring bytes); each word of 8 k is then unpacked once for
//   the 4 columns, and each value of A read serves 4 columns.
//   A, STAGE (the default): the chunk of A for the 32 pieces v0 + 32 j ..
//   of the rows (1024 k) goes through workgroup memory, laid out so that
//   a lane's reads neighbour the other lanes' (a warp's read of A straight
//   from memory would touch 32 cache lines, one 128-byte piece of A per
//   lane); each invocation loads its 2 vec4s per row of the next chunk
//   (neighbouring invocations, neighbouring vec4s) before the arithmetic
//   of this one, and stores them after a barrier: 2 barriers per chunk,
//   while the pieces of B are already in flight. STAGE false
//   (gpu.nbits=gemv_direct): A's two vec4s of a word read straight from
//   memory, no barrier in the K loop.
//   A lane's sums: per piece j in order, per word in order, one vec4 of 4
//   columns per row. Then the 32 lanes of a group are added in workgroup
//   memory in a fixed order (lanes 4p .. 4p + 3, then the 8 partial sums
//   in order): no dependence on timing.
// Grid: tiles_n * tiles_m workgroups (tiles_n = ceil(N / 16), tiles_m =
// ceil(M / 4)), linear index wid.x + wid.y * nwg.x; ROWS = min(M, 4) lets
// the compiler drop the rows a one-row product never has.
// Params: as matmul_nbits.wgsl's (tiles_n: column tiles of 16).
//!elem f32 f16
//!audited A under m0 + r < M and piece v < K / 32 (vec4s 8 v + 2 i + {0, 1} < K / 4 of row m0 + r, K % 32 == 0;
//!audited STAGE: vec4 u < 256 of the chunk from piece vs, under r < rows and vs + u / 8 < K / 32),
//!audited B at n < N, v < K / 32 <= col_words / 4; S and Z at blk = 32 v / bs < nb of n < N; Y under m < M, n < N;
//!audited sh[] below 1024 (chunk: r * 256 + c * 32 + p + 16 with r < 4, c < 8, p < 16; reads l + 64 i + 32 + 256 r;
//!audited sums: r * 128 + g * 32 + 4 p + 3 with r, g < 4, p < 8)
//!params a_off: u32, b_off: u32, s_off: u32, z_off: u32, y_off: u32, M: u32, N: u32, K: u32, nb: u32,
//!params bs: u32, col_words: u32, zrow: u32, tiles_n: u32
//!bind A: array<vec4<T>>, B: array<vec4<u32>>, S: array<f32>, Z: array<u32>, Y: array<T>
override HAS_ZP: bool = false;
override ROWS: u32 = 4u;
override STAGE: bool = true;

// STAGE: A's chunk of 32 pieces (1024 k) of the rows, vec4 c of piece p of
// row r at r * 256 + c * 32 + p (lane p's reads of a word are neighbours:
// no bank conflicts); then the lanes' sums, row r of invocation li at
// r * 128 + li (4 columns each)
var<workgroup> sh: array<vec4<f32>, 1024>;

// STAGE: this invocation's part of a chunk of A, vec4s li and li + 128 of
// each row (xr and yr for row r).
struct Stage { x0: vec4<f32>, y0: vec4<f32>, x1: vec4<f32>, y1: vec4<f32>,
               x2: vec4<f32>, y2: vec4<f32>, x3: vec4<f32>, y3: vec4<f32> };

// One column's 4 pieces of a step: the 16-byte pieces q0 .. q3 and each
// piece's block scale (s) and 2^23 + zero point (z).
struct Col { q0: vec4<u32>, q1: vec4<u32>, q2: vec4<u32>, q3: vec4<u32>, s: vec4<f32>, z: vec4<f32> };

// The weights of one word (8 k) of the 4 columns a, b, c, d: low and high
// four of each.
struct W8 { al: vec4<f32>, ah: vec4<f32>, bl: vec4<f32>, bh: vec4<f32>,
            cl: vec4<f32>, ch: vec4<f32>, dl: vec4<f32>, dh: vec4<f32> };

// Sums of the rows, 4 columns each.
struct Acc { r0: vec4<f32>, r1: vec4<f32>, r2: vec4<f32>, r3: vec4<f32> };

fn zero_point(n: u32, blk: u32) -> f32 {
    if (!HAS_ZP) { return 8.0; }
    let byte = P.z_off * 4u + n * P.zrow + blk / 2u;
    let v = (Z[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
    return f32((v >> ((blk & 1u) * 4u)) & 15u);
}

// Piece v of column n (q), its scale and 2^23 + zero point into lane j of
// s and z; nothing past N or K (q 0, scale 0, z 2^23: weights 0, and the
// piece is never multiplied).
fn load_piece(n: u32, v: u32, kv: u32, q: ptr<function, vec4<u32>>, s: ptr<function, vec4<f32>>,
              z: ptr<function, vec4<f32>>, j: u32) {
    if (n < P.N && v < kv) {
        *q = B[P.b_off / 4u + n * (P.col_words / 4u) + v];
        let blk = v >> (countTrailingZeros(P.bs) - 5u); // 32 v / bs: bs a power of 2 from 32
        (*s)[j] = S[P.s_off + n * P.nb + blk];
        (*z)[j] = 8388608.0 + zero_point(n, blk);
    }
}

// Column n's pieces v, v + 32, v + 64, v + 96, all loads issued together.
fn load_col(n: u32, v: u32, kv: u32) -> Col {
    var q0 = vec4<u32>(0u);
    var q1 = vec4<u32>(0u);
    var q2 = vec4<u32>(0u);
    var q3 = vec4<u32>(0u);
    var s = vec4<f32>(0.0);
    var z = vec4<f32>(8388608.0);
    load_piece(n, v, kv, &q0, &s, &z, 0u);
    load_piece(n, v + 32u, kv, &q1, &s, &z, 1u);
    load_piece(n, v + 64u, kv, &q2, &s, &z, 2u);
    load_piece(n, v + 96u, kv, &q3, &s, &z, 3u);
    return Col(q0, q1, q2, q3, s, z);
}

// The weights of nibbles 0 .. 3 of q: (q - zp) * s, z = 2^23 + zp.
fn weights4(q: u32, s: f32, z: f32) -> vec4<f32> {
    let u = (vec4<u32>(q, q >> 4u, q >> 8u, q >> 12u) & vec4<u32>(15u)) | vec4<u32>(0x4B000000u);
    return (bitcast<vec4<f32>>(u) - vec4<f32>(z)) * s;
}

// The weights of one word (8 k) of each of the 4 columns (q.x: column a's,
// ...), the columns' scales s and 2^23 + zp z.
fn word_weights(q: vec4<u32>, s: vec4<f32>, z: vec4<f32>) -> W8 {
    return W8(weights4(q.x, s.x, z.x), weights4(q.x >> 16u, s.x, z.x),
              weights4(q.y, s.y, z.y), weights4(q.y >> 16u, s.y, z.y),
              weights4(q.z, s.z, z.z), weights4(q.z >> 16u, s.z, z.z),
              weights4(q.w, s.w, z.w), weights4(q.w >> 16u, s.w, z.w));
}

// STAGE: vec4 u of the chunk of pieces vs .. vs + 31 of row r (0 past K
// or the rows).
fn a_chunk(vs: u32, r: u32, u: u32, a0: u32, kr: u32, kv: u32, rows: u32) -> vec4<f32> {
    if (r < rows && vs + u / 8u < kv) { return vec4<f32>(A[a0 + r * kr + 8u * vs + u]); }
    return vec4<f32>(0.0);
}

// STAGE: this invocation's vec4s of the chunk of pieces vs .. vs + 31
// (neighbouring invocations read neighbouring vec4s).
fn stage_load(vs: u32, li: u32, a0: u32, kr: u32, kv: u32, rows: u32) -> Stage {
    var t = Stage(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0),
                  vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    t.x0 = a_chunk(vs, 0u, li, a0, kr, kv, rows);
    t.y0 = a_chunk(vs, 0u, li + 128u, a0, kr, kv, rows);
    if (ROWS > 1u) {
        t.x1 = a_chunk(vs, 1u, li, a0, kr, kv, rows);
        t.y1 = a_chunk(vs, 1u, li + 128u, a0, kr, kv, rows);
    }
    if (ROWS > 2u) {
        t.x2 = a_chunk(vs, 2u, li, a0, kr, kv, rows);
        t.y2 = a_chunk(vs, 2u, li + 128u, a0, kr, kv, rows);
    }
    if (ROWS > 3u) {
        t.x3 = a_chunk(vs, 3u, li, a0, kr, kv, rows);
        t.y3 = a_chunk(vs, 3u, li + 128u, a0, kr, kv, rows);
    }
    return t;
}

// STAGE: the chunk into sh (vec4 u = li is vec4 li % 8 of piece li / 8,
// u = li + 128 that of piece li / 8 + 16).
fn stage_store(t: Stage, li: u32) {
    let x = (li % 8u) * 32u + li / 8u;
    sh[x] = t.x0;
    sh[x + 16u] = t.y0;
    if (ROWS > 1u) {
        sh[256u + x] = t.x1;
        sh[256u + x + 16u] = t.y1;
    }
    if (ROWS > 2u) {
        sh[512u + x] = t.x2;
        sh[512u + x + 16u] = t.y2;
    }
    if (ROWS > 3u) {
        sh[768u + x] = t.x3;
        sh[768u + x + 16u] = t.y3;
    }
}

// One row's products with the word: A's 8 values at vec4 e, e + 1 (STAGE:
// sh[x], sh[x + 32]).
fn row_dots(w: W8, e: u32, x: u32) -> vec4<f32> {
    var lo: vec4<f32>;
    var hi: vec4<f32>;
    if (STAGE) {
        lo = sh[x];
        hi = sh[x + 32u];
    } else {
        lo = vec4<f32>(A[e]);
        hi = vec4<f32>(A[e + 1u]);
    }
    return vec4<f32>(dot(w.al, lo) + dot(w.ah, hi), dot(w.bl, lo) + dot(w.bh, hi),
                     dot(w.cl, lo) + dot(w.ch, hi), dot(w.dl, lo) + dot(w.dh, hi));
}

// One word (8 k) of the 4 columns (q.x: column a's, ...) into the rows'
// sums; e: A's vec4 of the word's k in row m0, kr: vec4s per row (STAGE:
// x, that vec4 of row 0 in sh).
fn add_word(acc: ptr<function, Acc>, q: vec4<u32>, s: vec4<f32>, z: vec4<f32>, e: u32, kr: u32, x: u32,
            rows: u32) {
    let w = word_weights(q, s, z);
    (*acc).r0 = (*acc).r0 + row_dots(w, e, x);
    if (ROWS > 1u && rows > 1u) { (*acc).r1 = (*acc).r1 + row_dots(w, e + kr, x + 256u); }
    if (ROWS > 2u && rows > 2u) { (*acc).r2 = (*acc).r2 + row_dots(w, e + 2u * kr, x + 512u); }
    if (ROWS > 3u && rows > 3u) { (*acc).r3 = (*acc).r3 + row_dots(w, e + 3u * kr, x + 768u); }
}

// Piece v (k = 32 v .. 32 v + 31) of the 4 columns: qa .. qd, scales s and
// z per column; a0: A's first vec4 of row m0 (STAGE: the piece is piece
// l of the chunk in sh).
fn piece(acc: ptr<function, Acc>, qa: vec4<u32>, qb: vec4<u32>, qc: vec4<u32>, qd: vec4<u32>, s: vec4<f32>,
         z: vec4<f32>, v: u32, a0: u32, kr: u32, l: u32, rows: u32) {
    let e = a0 + 8u * v;
    add_word(acc, vec4<u32>(qa.x, qb.x, qc.x, qd.x), s, z, e, kr, l, rows);
    add_word(acc, vec4<u32>(qa.y, qb.y, qc.y, qd.y), s, z, e + 2u, kr, l + 64u, rows);
    add_word(acc, vec4<u32>(qa.z, qb.z, qc.z, qd.z), s, z, e + 4u, kr, l + 128u, rows);
    add_word(acc, vec4<u32>(qa.w, qb.w, qc.w, qd.w), s, z, e + 6u, kr, l + 192u, rows);
}

// STAGE: the chunk t (pieces vs .. vs + 31) into sh once every invocation
// is done with the previous one; then the next chunk's loads (pieces vs +
// 32 ..) into t, in flight during the chunk's arithmetic.
fn next_chunk(t: ptr<function, Stage>, vs: u32, li: u32, a0: u32, kr: u32, kv: u32, rows: u32) {
    if (STAGE) {
        workgroupBarrier();
        stage_store(*t, li);
        workgroupBarrier();
        *t = stage_load(vs + 32u, li, a0, kr, kv, rows);
    }
}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
    let wl = wid.x + wid.y * nwg.x;
    let tn = wl % P.tiles_n;
    let m0 = (wl / P.tiles_n) * 4u;
    if (m0 >= P.M) { return; }
    let l = li % 32u;
    let g = li / 32u;
    let n0 = tn * 16u + g * 4u;
    let rows = min(4u, P.M - m0);
    let kv = P.K / 32u; // pieces holding k < K
    let kr = P.K / 4u;  // A's vec4s per row
    let a0 = P.a_off / 4u + m0 * kr;
    var acc = Acc(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var st = Stage(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0),
                   vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    if (STAGE) { st = stage_load(0u, li, a0, kr, kv, rows); }
    for (var v0 = 0u; v0 < kv; v0 = v0 + 128u) {
        let v = v0 + l;
        let ca = load_col(n0, v, kv);
        let cb = load_col(n0 + 1u, v, kv);
        let cc = load_col(n0 + 2u, v, kv);
        let cd = load_col(n0 + 3u, v, kv);
        next_chunk(&st, v0, li, a0, kr, kv, rows);
        if (v < kv) {
            piece(&acc, ca.q0, cb.q0, cc.q0, cd.q0, vec4<f32>(ca.s.x, cb.s.x, cc.s.x, cd.s.x),
                  vec4<f32>(ca.z.x, cb.z.x, cc.z.x, cd.z.x), v, a0, kr, l, rows);
        }
        next_chunk(&st, v0 + 32u, li, a0, kr, kv, rows);
        if (v + 32u < kv) {
            piece(&acc, ca.q1, cb.q1, cc.q1, cd.q1, vec4<f32>(ca.s.y, cb.s.y, cc.s.y, cd.s.y),
                  vec4<f32>(ca.z.y, cb.z.y, cc.z.y, cd.z.y), v + 32u, a0, kr, l, rows);
        }
        next_chunk(&st, v0 + 64u, li, a0, kr, kv, rows);
        if (v + 64u < kv) {
            piece(&acc, ca.q2, cb.q2, cc.q2, cd.q2, vec4<f32>(ca.s.z, cb.s.z, cc.s.z, cd.s.z),
                  vec4<f32>(ca.z.z, cb.z.z, cc.z.z, cd.z.z), v + 64u, a0, kr, l, rows);
        }
        next_chunk(&st, v0 + 96u, li, a0, kr, kv, rows);
        if (v + 96u < kv) {
            piece(&acc, ca.q3, cb.q3, cc.q3, cd.q3, vec4<f32>(ca.s.w, cb.s.w, cc.s.w, cd.s.w),
                  vec4<f32>(ca.z.w, cb.z.w, cc.z.w, cd.z.w), v + 96u, a0, kr, l, rows);
        }
    }
    // the 32 lanes of each group, in a fixed order (sh is free once every
    // invocation is past its last chunk)
    workgroupBarrier();
    sh[li] = acc.r0;
    sh[128u + li] = acc.r1;
    sh[256u + li] = acc.r2;
    sh[384u + li] = acc.r3;
    workgroupBarrier();
    let r = l / 8u;
    let p = l % 8u;
    let e = r * 128u + g * 32u;
    let t = ((sh[e + 4u * p] + sh[e + 4u * p + 1u]) + sh[e + 4u * p + 2u]) + sh[e + 4u * p + 3u];
    workgroupBarrier();
    sh[e + p] = t;
    workgroupBarrier();
    if (l < rows) {
        let f = l * 128u + g * 32u;
        var sum = sh[f];
        for (var j = 1u; j < 8u; j = j + 1u) { sum = sum + sh[f + j]; }
        let o = P.y_off + (m0 + l) * P.N + n0;
        for (var c = 0u; c < 4u; c = c + 1u) {
            if (n0 + c < P.N) { Y[o + c] = T(sum[c]); }
        }
    }
}
