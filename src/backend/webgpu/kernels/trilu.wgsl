// Triangles and diagonals of the last two dims [N, M] of a tensor:
//   MODE TRI_UPPER: y = x where j - i >= k, else 0     (Trilu-14, upper = 1)
//   MODE TRI_LOWER: y = x where j - i <= k, else 0     (Trilu-14, upper = 0)
//   MODE TRI_EYE:   y = one where j - i == k, else 0   (EyeLike-9/22; x unused)
// ELEM (UNIT_* of wg_codes.h): a WORD per element (f32, i32, u32), a word
// PAIR (i64), a BYTE (bool: one invocation writes one word, elements
// 4t .. 4t + 3).
// k: P.k (a constant, clamped by the lowering to [-N - 1, M + 1], where
// every comparison is already decided), or (KIN) read at run time from K:
// an i64 (low, high) pair, or an i32 (K32), clamped here the same way.
// Params: x_off, y_off, k_off, n (elements), threads, nn (N), m (M), k,
// one (bits of 1 for the eye: 1.0, 1, or the low word).
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!audited t < threads (n, or ceil(n / 4) bytes' words); X (x, or y itself for EyeLike) and Y at t (2 t + 1:
//!audited PAIR) within numel(x) = numel(y) (lower_trilu); K read (1 or 2 words) only with KIN, bound to k
//!params x_off: u32, y_off: u32, k_off: u32, n: u32, threads: u32, nn: u32, m: u32, k: i32, one: u32
//!bind X: array<T>, Y: array<T>, K: array<u32>
override MODE: u32 = 0u;
override ELEM: u32 = 0u;
override KIN: bool = false;
override K32: bool = false;

//!include codes

fn k_value() -> i32 {
    if (!KIN) { return P.k; }
    let lo = K[P.k_off];
    var k = bitcast<i32>(lo);
    if (!K32) {
        let hi = K[P.k_off + 1u];
        if (hi != select(0u, 0xffffffffu, k < 0)) { k = select(2147483647, -2147483647, bitcast<i32>(hi) < 0); }
    }
    return clamp(k, -i32(P.nn) - 1, i32(P.m) + 1);
}

fn keep(e: u32, k: i32) -> bool {
    let j = i32(e % P.m);
    let i = i32((e / P.m) % P.nn);
    let diag = j - i;
    switch MODE {
        case TRI_UPPER: { return diag >= k; }
        case TRI_LOWER: { return diag <= k; }
        default: { return diag == k; }
    }
}

//!main1d t < P.threads {
    let kk = k_value();
    if (ELEM == UNIT_BYTE) {
        var w = 0u;
        let src = select(t_bits(X[P.x_off + t]), 0x01010101u, MODE == TRI_EYE);
        for (var k = 0u; k < 4u; k = k + 1u) {
            let e = t * 4u + k;
            if (e < P.n && keep(e, kk)) { w = w | (src & (0xffu << (k * 8u))); }
        }
        Y[P.y_off + t] = t_from_bits(w);
        return;
    }
    let on = keep(t, kk);
    if (ELEM == UNIT_PAIR) {
        var lo = T(0);
        var hi = T(0);
        if (on) {
            if (MODE == TRI_EYE) { lo = t_from_bits(1u); } else { lo = X[P.x_off + 2u * t]; hi = X[P.x_off + 2u * t + 1u]; }
        }
        Y[P.y_off + 2u * t] = lo;
        Y[P.y_off + 2u * t + 1u] = hi;
        return;
    }
    var v = T(0);
    if (on) { v = select(X[P.x_off + t], t_from_bits(P.one), MODE == TRI_EYE); }
    Y[P.y_off + t] = v;
}
