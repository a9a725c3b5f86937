// Elementwise ops with a bool result, with multidirectional (numpy)
// broadcasting: y[i] = f(a[ia], b[ib]) (ia, ib: the broadcast element
// indices, stride 0 on broadcast dims).
//   OP (CMP_* of wg_codes.h): EQ, LT, GT, LE, GE, AND, OR, XOR, NOT (a
//       only), ISNAN, ISINF (a only; flags bit 0 detects +inf, bit 1 -inf)
// Semantics: ONNX Equal-1/7/11/13/19, Less-1/7/9/13, Greater-1/7/9/13,
// LessOrEqual-12/16, GreaterOrEqual-12/16, And/Or/Xor-1/7, Not-1,
// IsNaN-9/13/20, IsInf-10/20. Comparisons involving NaN are false (equal
// too).
// TY, the input type (TY_* of wg_codes.h): f32, i32, u32, bool, i64
// (exact comparison of (low, high) word pairs).
// Layout (README.md, "Element types"): y is bool, four bytes to a word, so
// one invocation writes one word: elements 4t .. 4t + 3.
// Params: a_off, b_off, y_off, n (elements), rank, threads, flags, then
// dims, a_str, b_str as array<vec4<u32>, 2> (dim d is [d / 4][d % 4]).
//!params a_off: u32, b_off: u32, y_off: u32, n: u32, rank: u32, threads: u32, flags: u32,
//!params dims: array<vec4<u32>, 2>, a_str: array<vec4<u32>, 2>, b_str: array<vec4<u32>, 2>
//!bind A: array<u32>, B: array<u32>, Y: array<u32>
override OP: u32 = 0u;
override TY: u32 = 0u;

//!include codes
//!include bcast

fn bcast_str(q: u32, r: u32) -> vec3<u32> { return vec3<u32>(P.a_str[q][r], P.b_str[q][r], 0u); }

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

fn byte_of(w: u32, i: u32) -> u32 { return (w >> ((i & 3u) * 8u)) & 0xffu; }

// Half h of a binding's packed binary16 words, as f32.
fn half_at(w: u32, h: u32) -> f32 { return unpack2x16float(w)[h & 1u]; }

// Element ia of A as f32 (TY_F32 or TY_F16).
fn a_f32(ia: u32) -> f32 {
    if (TY == TY_F16) { return half_at(A[(P.a_off * 2u + ia) >> 1u], ia); }
    return bitcast<f32>(A[P.a_off + ia]);
}

// -1, 0, 1 for a < b, a == b, a > b; 2 when unordered (NaN).
fn cmp(ia: u32, ib: u32) -> i32 {
    switch TY {
        case TY_F32: {
            let x = bitcast<f32>(A[P.a_off + ia]);
            let y = bitcast<f32>(B[P.b_off + ib]);
            if (is_nan(x) || is_nan(y)) { return 2; }
            return select(select(0, -1, x < y), 1, x > y);
        }
        case TY_F16: {
            let x = half_at(A[(P.a_off * 2u + ia) >> 1u], ia);
            let y = half_at(B[(P.b_off * 2u + ib) >> 1u], ib);
            if (is_nan(x) || is_nan(y)) { return 2; }
            return select(select(0, -1, x < y), 1, x > y);
        }
        case TY_I32: {
            let x = bitcast<i32>(A[P.a_off + ia]);
            let y = bitcast<i32>(B[P.b_off + ib]);
            return select(select(0, -1, x < y), 1, x > y);
        }
        case TY_BOOL: {
            let x = select(0u, 1u, byte_of(A[(P.a_off * 4u + ia) >> 2u], P.a_off * 4u + ia) != 0u);
            let y = select(0u, 1u, byte_of(B[(P.b_off * 4u + ib) >> 2u], P.b_off * 4u + ib) != 0u);
            return select(select(0, -1, x < y), 1, x > y);
        }
        case TY_I64: {
            let xh = bitcast<i32>(A[P.a_off + 2u * ia + 1u]);
            let yh = bitcast<i32>(B[P.b_off + 2u * ib + 1u]);
            if (xh != yh) { return select(-1, 1, xh > yh); }
            let xl = A[P.a_off + 2u * ia];
            let yl = B[P.b_off + 2u * ib];
            return select(select(0, -1, xl < yl), 1, xl > yl);
        }
        default: {
            let x = A[P.a_off + ia];
            let y = B[P.b_off + ib];
            return select(select(0, -1, x < y), 1, x > y);
        }
    }
}

fn truth(ia: u32, ib: u32) -> bool {
    switch OP {
        case CMP_EQ: { return cmp(ia, ib) == 0; }
        case CMP_LT: { return cmp(ia, ib) == -1; }
        case CMP_GT: { return cmp(ia, ib) == 1; }
        case CMP_LE: { let c = cmp(ia, ib); return c == -1 || c == 0; }
        case CMP_GE: { let c = cmp(ia, ib); return c == 1 || c == 0; }
        case CMP_ISNAN: { return is_nan(a_f32(ia)); }
        case CMP_ISINF: {
            let v = bitcast<u32>(a_f32(ia)); // an f16 infinity widens to the f32 one
            return (v == 0x7f800000u && (P.flags & 1u) != 0u) || (v == 0xff800000u && (P.flags & 2u) != 0u);
        }
        default: {
            // logical ops on bool bytes
            let x = byte_of(A[(P.a_off * 4u + ia) >> 2u], P.a_off * 4u + ia) != 0u;
            let y = byte_of(B[(P.b_off * 4u + ib) >> 2u], P.b_off * 4u + ib) != 0u;
            switch OP {
                case CMP_AND: { return x && y; }
                case CMP_OR: { return x || y; }
                case CMP_XOR: { return x != y; }
                default: { return !x; }
            }
        }
    }
}

//!main1d t < P.threads {
    var w = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) {
        let i = t * 4u + k;
        if (i >= P.n) { break; }
        let ab = bcast(i).xy;
        if (truth(ab.x, ab.y)) { w = w | (1u << (k * 8u)); }
    }
    Y[P.y_off + t] = w;
}
