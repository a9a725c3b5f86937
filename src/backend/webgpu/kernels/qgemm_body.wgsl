// (not a kernel: included by qgemm.wgsl and qgemm_dp4.wgsl after their
// qdot function and qrequant.wgsl) The integer GEMM of MatMulInteger-10 and QLinearMatMul-10/21,
// and of ConvInteger-10 and QLinearConv-10 (CONV: b is the implicit im2col
// of x, gathered by the B loads; lower_qgemm.c), with the CPU reference's
// results bit for bit
// (src/backend/cpu/cpu_quant.c: mm_run, conv_run):
//   acc = sum_k (a[m,k] - za) * (b[k,n] - zb)   in i32, wrapping
//   y = acc (i32), or saturate(round_half_even(f32(f32(acc) * mult)) + y_zp) (8-bit)
// Operands: int8/uint8 bytes four to a word (README.md, "Element types"),
// at any byte offset. Every operand byte is moved to the signed domain
// (uint8 x -> x - 128: x ^ 0x80) so that one signed 4x8 dot product
// (qdot) serves both signednesses and mixed operands:
//   (a - za) (b - zb) = a'b' - za' b' - zb' a' + za' zb',  x' and z' shifted
// alike, the sums of a' and b' from qdot(x, 0x01010101). A K that is not a
// multiple of 4 pads the last word with 0 (in the signed domain), which
// adds nothing.
// mult (QLinearMatMul) = a_scale * b_scale / y_scale is the CPU's f32 (rlx_quant_mult),
// from the host table TB: four words per (row parameter, column parameter)
// pair (qrequant.wgsl, included before this file: the significand, the
// exponent, and an i32 bias added to acc first, QLinearConv's B).
// Params: offsets in words (bindings A, B, ZA, ZB, Y, TB), m, n, k, total
// (output elements), threads (invocations; MODE 1 and 2 of qgemm_wg.wgsl:
// the batch items), za_step / zb_step (0:
// one zero point, 1: per row of a / per column of b), t_row (table words
// per row of a: 0 or 4 * columns), t_col (0 or 4), y_zp; batch: dims of
// the output's batch (4, padded with 1), the byte strides of a and b per
// batch dim (0: broadcast), and the rows each batch index adds to the
// row of the per-row parameters (za, the table: the output channels of a
// convolution's groups; 0 for a matmul); conv (CONV, else zeros): (in_h,
// in_w, out_w, in_h * in_w), (s_h, s_w, p_h, p_w), (dil_h, dil_w, 0, 0).
// Split-K (the generated kernel with slices, gemm_gen.c, then MODE 3,
// qgemm_wg.wgsl): nsplit slices of ks_words k words each (1 and the whole
// k otherwise).
//!params a_off: u32, b_off: u32, za_off: u32, zb_off: u32, y_off: u32, t_off: u32, m: u32, n: u32, k: u32
//!params total: u32, threads: u32, za_step: u32, zb_step: u32, t_row: u32, t_col: u32, y_zp: i32
//!params nsplit: u32, ks_words: u32
//!params batch: array<vec4<u32>, 4>, conv: array<vec4<u32>, 3>
//!bind A: array<u32>, B: array<u32>, ZA: array<u32>, ZB: array<u32>, Y: array<u32>, TB: array<u32>
override A_SIGNED: u32 = 0u;
override B_SIGNED: u32 = 0u;
override HAS_ZA: u32 = 0u;
override HAS_ZB: u32 = 0u;
override REQUANT: u32 = 0u; // 0: y is i32; 1: y is 8-bit (Y_SIGNED)
override Y_SIGNED: u32 = 0u;
// 1: B is a constant packed on the host (lower_qgemm.c): per batch item of
// b, per column n, ceil(k / 4) words of four k, already in the signed
// domain and padded with 0; b's batch strides then count words
override B_PACKED: u32 = 0u;
// 1: blocks of 4 x 4 outputs per invocation (qgemm_tile; B_PACKED, n % 4 == 0)
override TILE: u32 = 0u;
// 1: a 1-D or 2-D NCHW convolution without the im2col buffer: B is x,
// column n of b the output pixel n = oh * out_w + ow, row k the tap
//   k = (ci * QKH + kr) * QKW + kc  ->  x[ci, oh s_h - p_h + kr dil_h, ow s_w - p_w + kc dil_w]
// of the batch item's (image, group) channels (b's batch strides: bytes
// of x); a tap in the padding holds x's zero point, so that it adds
// (x - zx) = 0 to the sums, as the CPU's loop, which skips it. QKH, QKW:
// the kernel size (constants: cheap divisions).
override CONV: u32 = 0u;
override QKH: u32 = 1u;
override QKW: u32 = 1u;
// 1: CONV with s_w 1 gathers four adjacent output pixels' taps as words
// (conv_word4); 0: byte by byte (conv_word, as before: gpu.qgemm_tile=legacy)
override QGATHER: u32 = 1u;

// Four bytes of X from byte index i (cnt of them valid, 1..4; the others 0),
// moved to the signed domain unless SIGNED.
fn word_a(i: u32, cnt: u32) -> u32 {
    let s = (i & 3u) * 8u;
    var w = A[i >> 2u] >> s;
    if (s != 0u && s + 8u * cnt > 32u) { w = w | (A[(i >> 2u) + 1u] << (32u - s)); }
    return fix_word(w, cnt, A_SIGNED);
}

fn byte_b(i: u32) -> u32 { return (B[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }

// The tap (ci, kr, kc) of k = 4 q (CONV).
fn conv_tap(q: u32) -> vec3<u32> {
    let k0 = 4u * q;
    let r = k0 % (QKH * QKW);
    return vec3<u32>(k0 / (QKH * QKW), r / QKW, r % QKW);
}

// CONV: the output pixel (oh, ow) of b's column nn.
fn conv_pix(nn: u32) -> vec2<u32> { return vec2<u32>(nn / P.conv[0].z, nn % P.conv[0].z); }

// CONV: word q (k = 4 q .. 4 q + 3, the first tap from conv_tap(q)) of b's
// column at output pixel pix (conv_pix), in the signed domain, 0 past k;
// bb from qbatch (bytes of x). Four taps of one kernel row inside the
// input (dil_w 1) are one unaligned word of x.
fn conv_word(bb: u32, pix: vec2<u32>, q: u32, tap: vec3<u32>) -> u32 {
    let g0 = P.conv[0];
    let g1 = P.conv[1];
    let g2 = P.conv[2];
    let ih0 = i32(pix.x * g1.x) - i32(g1.z);
    let iw0 = i32(pix.y * g1.y) - i32(g1.w);
    let base = P.b_off * 4u + bb;
    let flip = select(0x80u, 0u, B_SIGNED == 1u);
    let cnt = min(4u, P.k - 4u * q);
    var ci = tap.x;
    var kr = tap.y;
    var kc = tap.z;
    if (QKW >= 4u && g2.y == 1u && kc + 4u <= QKW && cnt == 4u) {
        let ih = ih0 + i32(kr * g2.x);
        let iw = iw0 + i32(kc);
        if (ih >= 0 && ih < i32(g0.x) && iw >= 0 && iw + 3 < i32(g0.y)) {
            let i = base + ci * g0.w + u32(ih) * g0.y + u32(iw);
            let s = (i & 3u) * 8u;
            var w = B[i >> 2u] >> s;
            if (s != 0u) { w = w | (B[(i >> 2u) + 1u] << (32u - s)); }
            return w ^ (flip * 0x01010101u);
        }
    }
    let pad = bitcast<u32>(zp_b(0u)) & 0xffu;
    var w = 0u;
    for (var j = 0u; j < cnt; j = j + 1u) {
        let ih = ih0 + i32(kr * g2.x);
        let iw = iw0 + i32(kc * g2.y);
        var v = pad;
        if (ih >= 0 && ih < i32(g0.x) && iw >= 0 && iw < i32(g0.y)) {
            v = byte_b(base + ci * g0.w + u32(ih) * g0.y + u32(iw)) ^ flip;
        }
        w = w | (v << (8u * j));
        kc = kc + 1u;
        if (kc == QKW) {
            kc = 0u;
            kr = kr + 1u;
            if (kr == QKH) { kr = 0u; ci = ci + 1u; }
        }
    }
    return w;
}

// CONV with s_w 1: words q of the four output pixels pix .. pix + (0, 3)
// of one output row (conv_word of each, the same bits). Per tap the four
// pixels' bytes of x are adjacent: one unaligned word when all four lie
// inside the row (else byte by byte, the padding x's zero point); the four
// tap words (k = 4 q + j) are then transposed into the pixels' words.
fn conv_word4(bb: u32, pix: vec2<u32>, q: u32, tap: vec3<u32>) -> vec4<u32> {
    let g0 = P.conv[0];
    let g1 = P.conv[1];
    let g2 = P.conv[2];
    let ih0 = i32(pix.x * g1.x) - i32(g1.z);
    let iw0 = i32(pix.y) - i32(g1.w);
    let base = P.b_off * 4u + bb;
    let flip = select(0x80u, 0u, B_SIGNED == 1u);
    let cnt = min(4u, P.k - 4u * q);
    let pad = bitcast<u32>(zp_b(0u)) & 0xffu;
    var ci = tap.x;
    var kr = tap.y;
    var kc = tap.z;
    var r = vec4<u32>(0u);
    for (var j = 0u; j < cnt; j = j + 1u) {
        let ih = ih0 + i32(kr * g2.x);
        let iw = iw0 + i32(kc * g2.y);
        var w = pad * 0x01010101u;
        if (ih >= 0 && ih < i32(g0.x)) {
            let row = base + ci * g0.w + u32(ih) * g0.y;
            if (iw >= 0 && iw + 3 < i32(g0.y)) {
                let i = row + u32(iw);
                let s = (i & 3u) * 8u;
                w = B[i >> 2u] >> s;
                if (s != 0u) { w = w | (B[(i >> 2u) + 1u] << (32u - s)); }
                w = w ^ (flip * 0x01010101u);
            } else {
                w = 0u;
                for (var c = 0u; c < 4u; c = c + 1u) {
                    let x = iw + i32(c);
                    var v = pad;
                    if (x >= 0 && x < i32(g0.y)) { v = byte_b(row + u32(x)) ^ flip; }
                    w = w | (v << (8u * c));
                }
            }
        }
        r[j] = w;
        kc = kc + 1u;
        if (kc == QKW) {
            kc = 0u;
            kr = kr + 1u;
            if (kr == QKH) { kr = 0u; ci = ci + 1u; }
        }
    }
    var wb: vec4<u32>;
    for (var c = 0u; c < 4u; c = c + 1u) {
        let sh = 8u * c;
        wb[c] = ((r.x >> sh) & 0xffu) | (((r.y >> sh) & 0xffu) << 8u) | (((r.z >> sh) & 0xffu) << 16u)
              | (((r.w >> sh) & 0xffu) << 24u);
    }
    return wb;
}

fn fix_word(w: u32, cnt: u32, signed: u32) -> u32 {
    let mask = select((1u << (8u * cnt)) - 1u, 0xffffffffu, cnt >= 4u);
    return select(w ^ 0x80808080u, w, signed == 1u) & mask;
}

fn zp_byte(w: u32, i: u32, signed: u32) -> i32 {
    let b = i32((w >> ((i & 3u) * 8u)) & 0xffu);
    // the signed domain: int8 as is, uint8 minus 128
    return select(b - 128, b - 256 * (b >> 7u), signed == 1u);
}

// acc of output element e
fn qgemm_acc(e: u32) -> vec2<u32> { // (acc bits, table word)
    let nn = e % P.n;
    let mm = (e / P.n) % P.m;
    let qb = qbatch(e / (P.n * P.m)); // qgemm_wg.wgsl
    let ab = qb.x;
    var bb = qb.y;
    let prow = mm + qb.z; // the row of the per-row parameters
    let arow = ab + mm * P.k;
    let kw = (P.k + 3u) / 4u;
    let bpk = P.b_off + bb + nn * kw;
    let bconv = bb;
    bb = bb + P.b_off * 4u;
    var dot = 0; var sa = 0; var sb = 0;
    let ones = 0x01010101u;
    for (var k0 = 0u; k0 < P.k; k0 = k0 + 4u) {
        let cnt = min(4u, P.k - k0);
        let wa = word_a(arow + k0, cnt);
        var wb = 0u;
        if (CONV == 1u) {
            wb = conv_word(bconv, conv_pix(nn), k0 / 4u, conv_tap(k0 / 4u));
        } else if (B_PACKED == 1u) {
            wb = B[bpk + k0 / 4u];
        } else {
            let bcol = bb + k0 * P.n + nn;
            for (var j = 0u; j < cnt; j = j + 1u) { wb = wb | (byte_b(bcol + j * P.n) << (8u * j)); }
            wb = fix_word(wb, cnt, B_SIGNED);
        }
        dot = dot + qdot(wa, wb);
        sa = sa + qdot(wa, ones);
        sb = sb + qdot(wb, ones);
    }
    let za = zp_a(prow);
    let zb = zp_b(nn);
    let acc = dot - za * sb - zb * sa + i32(P.k) * za * zb;
    return vec2<u32>(bitcast<u32>(acc), P.t_off + prow * P.t_row + nn * P.t_col);
}

// The zero point of a at parameter row prow, of b at column nn.
fn zp_a(prow: u32) -> i32 {
    if (HAS_ZA == 0u) { return select(-128, 0, A_SIGNED == 1u); }
    let i = P.za_off * 4u + prow * P.za_step;
    return zp_byte(ZA[i >> 2u], i, A_SIGNED);
}
fn zp_b(nn: u32) -> i32 {
    if (HAS_ZB == 0u) { return select(-128, 0, B_SIGNED == 1u); }
    let i = P.zb_off * 4u + nn * P.zb_step;
    return zp_byte(ZB[i >> 2u], i, B_SIGNED);
}

// TILE (n a multiple of 4, b's batch strides too): invocation t computes a
// block of 4 rows x 4 columns, each loaded word of a and b used four
// times. B unpacked: the four columns' bytes of one k are one word (n0 a
// multiple of 4), so four words (k .. k + 3) are loaded and their bytes
// transposed into the four columns' words; CONV: the gathered taps (both
// word_b4). The sums are the same integers as qgemm_acc's (i32, wrapping:
// any order).
fn qgemm_tile(t: u32) {
    let nq4 = P.n / 4u;
    let mq4 = (P.m + 3u) / 4u;
    let n0 = 4u * (t % nq4);
    let m0 = 4u * ((t / nq4) % mq4);
    let b_item = t / (nq4 * mq4);
    let qb = qbatch(b_item); // qgemm_wg.wgsl
    let ab = qb.x;
    let bb = qb.y;
    let prow0 = m0 + qb.z;
    let kw = (P.k + 3u) / 4u;
    let bp = P.b_off + bb + n0 * kw;
    let rows = min(4u, P.m - m0);
    let ones = 0x01010101u;
    var acc: array<vec4<i32>, 4>;
    var sa = vec4<i32>(0);
    var sb = vec4<i32>(0);
    for (var q = 0u; q < kw; q = q + 1u) {
        let cnt = min(4u, P.k - 4u * q);
        var wb: vec4<u32>;
        if (B_PACKED == 1u) {
            wb = vec4<u32>(B[bp + q], B[bp + kw + q], B[bp + 2u * kw + q], B[bp + 3u * kw + q]);
        } else {
            // CONV: the gathered taps; unpacked: n0 and b's batch strides are
            // multiples of 4, so the four columns of one k are one word
            wb = word_b4(bb, n0, q); // qgemm_wg.wgsl
        }
        sb = sb + vec4<i32>(qdot(wb.x, ones), qdot(wb.y, ones), qdot(wb.z, ones), qdot(wb.w, ones));
        for (var i = 0u; i < rows; i = i + 1u) {
            let wa = word_a(ab + (m0 + i) * P.k + 4u * q, cnt);
            sa[i] = sa[i] + qdot(wa, ones);
            acc[i] = acc[i] + vec4<i32>(qdot(wa, wb.x), qdot(wa, wb.y), qdot(wa, wb.z), qdot(wa, wb.w));
        }
    }
    let zb = vec4<i32>(zp_b(n0), zp_b(n0 + 1u), zp_b(n0 + 2u), zp_b(n0 + 3u));
    let kk = i32(P.k);
    for (var i = 0u; i < rows; i = i + 1u) {
        let prow = prow0 + i;
        let za = zp_a(prow);
        let v = acc[i] - za * sb - zb * sa[i] + kk * za * zb;
        let e = (b_item * P.m + m0 + i) * P.n + n0; // a multiple of 4
        if (REQUANT == 0u) {
            for (var j = 0u; j < 4u; j = j + 1u) { Y[P.y_off + e + j] = bitcast<u32>(v[j]); }
        } else {
            var word = 0u;
            for (var j = 0u; j < 4u; j = j + 1u) {
                let r = requant(v[j], P.t_off + prow * P.t_row + (n0 + j) * P.t_col);
                word = word | (qepi(e + j, r) << (8u * j));
            }
            Y[P.y_off + e / 4u] = word;
        }
    }
}

// invocation t: output element t (i32), or the four 8-bit outputs of word
// t; with TILE a block of 4 x 4 (qgemm_tile)
fn qgemm_main(t: u32) {
    if (TILE == 1u) {
        qgemm_tile(t);
        return;
    }
    if (REQUANT == 0u) {
        Y[P.y_off + t] = qgemm_acc(t).x;
        return;
    }
    var word = 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let e = 4u * t + j;
        if (e >= P.total) { break; }
        let r = qgemm_acc(e);
        word = word | (qepi(e, requant(bitcast<i32>(r.x), r.y)) << (8u * j));
    }
    Y[P.y_off + t] = word;
}
