// Fills n words with a pattern of period two (even words `value`, odd
// words `value_hi`): one 4-byte element per word (value_hi = value), an i64
// as (low, high) word pairs, or four bool bytes per word. Used by Pad's
// constant value, ConstantOfShape, the identity of empty reductions.
// Params: y_off, n (words), value, value_hi (bits of T).
// T: the element moved: 4-byte words (u32) unless the lowering names a type;
// the byte and word-pair layouts are those of the u32 instance.
//!elem u32 f32 i32 f16
//!params y_off: u32, n: u32, value: u32, value_hi: u32
//!bind Y: array<T>

//!main1d i < P.n {
    Y[P.y_off + i] = t_from_bits(select(P.value, P.value_hi, (i & 1u) == 1u));
}
