// (not a kernel: included by qgemm.wgsl and qgemm_dp4.wgsl after
// qgemm_body.wgsl) The integer GEMM's workgroup variants (MODE, set by
// lower_qgemm.c: wg_emit_qgemm), the same sums and epilogues as
// qgemm_acc / qgemm_tile (i32, wrapping: any order gives the same bits):
// MODE 1, tiled (m >= 8): a workgroup of QTX x QTY invocations computes a
//   QTM x QTN block of y of one batch item (the tile shape chosen by
//   lower_qgemm.c's rule: 16, 32 or 64 rows, 64 or 128 columns); k
//   advances QBK words (4 k each) at a time through workgroup memory
//   (QA[kq][row]: words of a, QB[kq][column quad]: vec4s of the words of
//   four adjacent columns of b, both in the signed domain, 0 past m, n or
//   k). Invocation (tx, ty) owns rows ty + QTY i (i < QRM) and columns
//   4 tx + c (c < 4): four adjacent columns, so that an 8-bit y fills
//   whole words (the host requires n % 4 == 0 then).
// MODE 2, split k (GEMV, m <= 4 typically): a workgroup of 64 invocations
//   computes QROWS rows x 4 columns; invocation li sums the k words li, li + 64,
//   ... (consecutive invocations read consecutive words of a packed b
//   column), then the partial sums are added in workgroup memory (QR).
// MODE 3, split-K's second pass (after the generated kernel with slices,
//   gemm_gen.c): A is the scratch's i32 partial sums [nsplit][batch
//   items][m][n] from word a_off (each slice's dot - za sb - zb sa over
//   its k words); invocation t < P.threads (batch items x m x ceil(n / 4))
//   adds the slices of four adjacent outputs, adds k za zb and stores them
//   as qstore4 (i32, or requantized: n % 4 == 0). Wrapping i32 sums: the
//   bits of the unsplit kernel.
// MODE 4, the same for a requantized y with n % 4 != 0 (rows that do not
//   fill whole words; the generated kernel's sums then always go through
//   the scratch, one slice or more): invocation t < P.threads = ceil(total
//   / 4) requantizes outputs 4 t .. 4 t + 3 of y in flat order (each its
//   own batch item, row and column) into word t.
// The zero-point terms: acc = dot - za sb - zb sa + k za zb; sa (sums of a's
// words) is skipped where zb is 0 (b signed without a zero point), sb
// where za is 0. Workgroup linear index wl = wid.x + wid.y * nwg.x;
// workgroups past the grid return.
override MODE: u32 = 0u;
override QBK: u32 = 8u; // MODE 1: k words per tile step
override QTM: u32 = 64u; // MODE 1: tile rows (16, 32, 64)
override QTN: u32 = 64u; // MODE 1: tile columns (64, 128)
override QRM: u32 = 4u; // MODE 1: rows per invocation (1 .. 8)
override QTX: u32 = 16u; // MODE 1: QTN / 4, invocations along a tile row (column quads)
override QTY: u32 = 16u; // MODE 1: QTM / QRM, invocations along a tile column; QWG = QTX QTY
override QA_WORDS: u32 = 1u; // MODE 1: QTM * QBK (else 1)
override QB_VECS: u32 = 1u; // MODE 1: QTX * QBK (else 1)
override QR_VECS: u32 = 1u; // MODE 2: 4 * 64 (else 1)
override QROWS: u32 = 4u; // MODE 2: rows per workgroup (1 .. 4: min(m, 4))

var<workgroup> QA: array<u32, QA_WORDS>;
var<workgroup> QB: array<vec4<u32>, QB_VECS>;
var<workgroup> QR: array<vec4<i32>, QR_VECS>;

fn need_sa() -> bool { return !(HAS_ZB == 0u && B_SIGNED == 1u); }
fn need_sb() -> bool { return !(HAS_ZA == 0u && A_SIGNED == 1u); }

// The batch item bi's byte offset of a (with a_off), offset of b (words
// when B_PACKED, else bytes, without b_off) and the per-row parameter rows
// it adds.
fn qbatch(bi0: u32) -> vec3<u32> {
    var bi = bi0;
    var r = vec3<u32>(P.a_off * 4u, 0u, 0u);
    for (var j = 3; j >= 0; j = j - 1) {
        let d = P.batch[0][j];
        let c = bi % d;
        bi = bi / d;
        r = r + c * vec3<u32>(P.batch[1][j], P.batch[2][j], P.batch[3][j]);
    }
    return r;
}

// Word q (4 k) of b's column nn (0 past n or k), in the signed domain;
// bb from qbatch.
fn word_b(bb: u32, nn: u32, q: u32) -> u32 {
    let kw = (P.k + 3u) / 4u;
    if (nn >= P.n || q >= kw) { return 0u; }
    if (CONV == 1u) { return conv_word(bb, conv_pix(nn), q, conv_tap(q)); }
    if (B_PACKED == 1u) { return B[P.b_off + bb + nn * kw + q]; }
    let cnt = min(4u, P.k - 4u * q);
    let bcol = P.b_off * 4u + bb + 4u * q * P.n + nn;
    var w = 0u;
    for (var j = 0u; j < cnt; j = j + 1u) { w = w | (byte_b(bcol + j * P.n) << (8u * j)); }
    return fix_word(w, cnt, B_SIGNED);
}

// Words q of b's columns n0 .. n0 + 3 (word_b of each). CONV: the tap and
// the first output pixel are found once for the four (s_w 1 and the four
// on one output row: conv_word4's words of x); an unpacked b whose four columns of one k are
// one aligned word (n % 4 == 0, n0 + 3 < n): cnt word loads, their bytes
// transposed (as qgemm_tile) instead of 4 cnt byte loads.
fn word_b4(bb: u32, n0: u32, q: u32) -> vec4<u32> {
    let kw = (P.k + 3u) / 4u;
    if (q >= kw) { return vec4<u32>(0u); }
    if (CONV == 1u) {
        let tap = conv_tap(q);
        var pix = conv_pix(n0);
        if (QGATHER == 1u && P.conv[1].y == 1u && pix.y + 3u < P.conv[0].z) { return conv_word4(bb, pix, q, tap); }
        var r = vec4<u32>(0u);
        for (var c = 0u; c < 4u; c = c + 1u) {
            if (n0 + c < P.n) { r[c] = conv_word(bb, pix, q, tap); }
            pix.y = pix.y + 1u;
            if (pix.y == P.conv[0].z) { pix = vec2<u32>(pix.x + 1u, 0u); }
        }
        return r;
    }
    let base = P.b_off * 4u + bb + 4u * q * P.n + n0;
    if (B_PACKED == 0u && P.n % 4u == 0u && n0 + 3u < P.n && (base & 3u) == 0u) {
        let cnt = min(4u, P.k - 4u * q);
        var r = vec4<u32>(0u);
        for (var j = 0u; j < cnt; j = j + 1u) { r[j] = B[(base + j * P.n) >> 2u]; }
        var wb: vec4<u32>;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let sh = 8u * c;
            let w = ((r.x >> sh) & 0xffu) | (((r.y >> sh) & 0xffu) << 8u) | (((r.z >> sh) & 0xffu) << 16u)
                  | (((r.w >> sh) & 0xffu) << 24u);
            wb[c] = fix_word(w, cnt, B_SIGNED);
        }
        return wb;
    }
    return vec4<u32>(word_b(bb, n0, q), word_b(bb, n0 + 1u, q), word_b(bb, n0 + 2u, q), word_b(bb, n0 + 3u, q));
}

// Word q of a's row mm (0 past m or k); ab from qbatch.
fn word_a_at(ab: u32, mm: u32, q: u32) -> u32 {
    if (mm >= P.m || 4u * q >= P.k) { return 0u; }
    return word_a(ab + mm * P.k + 4u * q, min(4u, P.k - 4u * q));
}

// Stores row mm's outputs of columns n0 .. n0 + 3 (n0 % 4 == 0 with
// REQUANT; columns past n skipped) of batch item bi.
fn qstore4(bi: u32, mm: u32, prow: u32, n0: u32, v: vec4<i32>) {
    let e = (bi * P.m + mm) * P.n + n0;
    if (REQUANT == 0u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
            if (n0 + j < P.n) { Y[P.y_off + e + j] = bitcast<u32>(v[j]); }
        }
        return;
    }
    var word = 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let r = requant(v[j], P.t_off + prow * P.t_row + min(n0 + j, P.n - 1u) * P.t_col);
        word = word | (qepi(e + j, r) << (8u * j));
    }
    Y[P.y_off + e / 4u] = word;
}

fn qgemm_reduce(t: u32) {
    let nq = (P.n + 3u) / 4u;
    let n0 = 4u * (t % nq);
    let mm = (t / nq) % P.m;
    let bi = t / (nq * P.m);
    let prow = mm + qbatch(bi).z;
    let e = (bi * P.m + mm) * P.n + n0;
    var v = vec4<i32>(0);
    for (var s = 0u; s < P.nsplit; s = s + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
            if (n0 + j < P.n) { v[j] = v[j] + bitcast<i32>(A[P.a_off + s * P.total + e + j]); }
        }
    }
    let za = zp_a(prow);
    let last = P.n - 1u;
    let zb = vec4<i32>(zp_b(n0), zp_b(min(n0 + 1u, last)), zp_b(min(n0 + 2u, last)), zp_b(min(n0 + 3u, last)));
    qstore4(bi, mm, prow, n0, v + i32(P.k) * za * zb);
}

// Split-K's partial sums v of columns nn .. nn + 3 (those below n) at
// element e of Y (the scratch; e: the slice's, batch item's, row's and nn's
// offset). The never-taken read of TB (nsplit >= 1) keeps the table's
// binding in the pipeline's layout, which would drop an unused one.
fn qpart4(e: u32, nn: u32, v: vec4<i32>) {
    if (P.nsplit == 0u) { Y[P.y_off] = TB[P.t_off]; }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (nn + j < P.n) { Y[P.y_off + e + j] = bitcast<u32>(v[j]); }
    }
}

fn qgemm_reduce_flat(t: u32) {
    var word = 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let e = 4u * t + j;
        if (e >= P.total) { break; }
        let nn = e % P.n;
        let mm = (e / P.n) % P.m;
        let prow = mm + qbatch(e / (P.n * P.m)).z;
        var v = 0;
        for (var s = 0u; s < P.nsplit; s = s + 1u) { v = v + bitcast<i32>(A[P.a_off + s * P.total + e]); }
        v = v + i32(P.k) * zp_a(prow) * zp_b(nn);
        let r = requant(v, P.t_off + prow * P.t_row + nn * P.t_col);
        word = word | (qepi(e, r) << (8u * j));
    }
    Y[P.y_off + t] = word;
}

fn qgemm_wg_tile(li: u32, wl: u32) {
    let tn = (P.n + QTN - 1u) / QTN;
    let tm = (P.m + QTM - 1u) / QTM;
    if (wl >= tn * tm * P.threads) { return; } // threads: batch items
    let bi = wl / (tn * tm);
    let n0 = QTN * (wl % tn);
    let m0 = QTM * ((wl / tn) % tm);
    let base = qbatch(bi);
    let tx = li % QTX;
    let ty = li / QTX;
    let kw = (P.k + 3u) / 4u;
    let ones = 0x01010101u;
    var acc: array<vec4<i32>, 8>;
    var sa: array<i32, 8>;
    for (var i = 0u; i < QRM; i = i + 1u) {
        acc[i] = vec4<i32>(0);
        sa[i] = 0;
    }
    var sb = vec4<i32>(0);
    for (var k0 = 0u; k0 < kw; k0 = k0 + QBK) {
        workgroupBarrier();
        for (var it = li; it < QTM * QBK; it = it + QTX * QTY) {
            let kq = it % QBK;
            let rl = it / QBK;
            QA[kq * QTM + rl] = word_a_at(base.x, m0 + rl, k0 + kq);
        }
        for (var it = li; it < QTX * QBK; it = it + QTX * QTY) {
            let kq = it % QBK;
            let nq = it / QBK;
            let n = n0 + 4u * nq;
            QB[kq * QTX + nq] = word_b4(base.y, n, k0 + kq);
        }
        workgroupBarrier();
        for (var kq = 0u; kq < QBK; kq = kq + 1u) {
            let wb = QB[kq * QTX + tx];
            if (need_sb()) { sb = sb + vec4<i32>(qdot(wb.x, ones), qdot(wb.y, ones), qdot(wb.z, ones), qdot(wb.w, ones)); }
            for (var i = 0u; i < QRM; i = i + 1u) {
                let wa = QA[kq * QTM + ty + QTY * i];
                if (need_sa()) { sa[i] = sa[i] + qdot(wa, ones); }
                acc[i] = acc[i] + vec4<i32>(qdot(wa, wb.x), qdot(wa, wb.y), qdot(wa, wb.z), qdot(wa, wb.w));
            }
        }
    }
    let nn = n0 + 4u * tx;
    if (nn >= P.n) { return; }
    let zb = vec4<i32>(zp_b(nn), zp_b(min(nn + 1u, P.n - 1u)), zp_b(min(nn + 2u, P.n - 1u)),
                       zp_b(min(nn + 3u, P.n - 1u)));
    let kk = i32(P.k);
    for (var i = 0u; i < QRM; i = i + 1u) {
        let mm = m0 + ty + QTY * i;
        if (mm >= P.m) { break; }
        let za = zp_a(base.z + mm);
        qstore4(bi, mm, base.z + mm, nn, acc[i] - za * sb - zb * sa[i] + kk * za * zb);
    }
}

fn qgemm_wg_gemv(li: u32, wl: u32) {
    let tn = (P.n + 3u) / 4u;
    let tm = (P.m + QROWS - 1u) / QROWS;
    if (wl >= tn * tm * P.threads) { return; }
    let bi = wl / (tn * tm);
    let n0 = 4u * (wl % tn);
    let m0 = QROWS * ((wl / tn) % tm);
    let base = qbatch(bi);
    let kw = (P.k + 3u) / 4u;
    let ones = 0x01010101u;
    // the zero points of the rows and columns (clamped inside m and n)
    var za: vec4<i32>;
    var zb: vec4<i32>;
    for (var j = 0u; j < 4u; j = j + 1u) {
        za[j] = zp_a(base.z + min(m0 + min(j, QROWS - 1u), P.m - 1u));
        zb[j] = zp_b(min(n0 + j, P.n - 1u));
    }
    var acc: array<vec4<i32>, 4>;
    for (var q = li; q < kw; q = q + 64u) {
        let wb = word_b4(base.y, n0, q);
        var sb = vec4<i32>(0);
        if (need_sb()) { sb = vec4<i32>(qdot(wb.x, ones), qdot(wb.y, ones), qdot(wb.z, ones), qdot(wb.w, ones)); }
        for (var i = 0u; i < QROWS; i = i + 1u) {
            let wa = word_a_at(base.x, m0 + i, q);
            var sa = 0;
            if (need_sa()) { sa = qdot(wa, ones); }
            acc[i] = acc[i] + vec4<i32>(qdot(wa, wb.x), qdot(wa, wb.y), qdot(wa, wb.z), qdot(wa, wb.w))
                   - za[i] * sb - zb * sa;
        }
    }
    for (var i = 0u; i < QROWS; i = i + 1u) { QR[i * 64u + li] = acc[i]; }
    for (var s = 32u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if (li < s) {
            for (var i = 0u; i < QROWS; i = i + 1u) { QR[i * 64u + li] = QR[i * 64u + li] + QR[i * 64u + li + s]; }
        }
    }
    workgroupBarrier();
    let mm = m0 + li;
    if (li >= QROWS || mm >= P.m) { return; }
    qstore4(bi, mm, base.z + mm, n0, QR[li * 64u] + i32(P.k) * za[li] * zb);
}
