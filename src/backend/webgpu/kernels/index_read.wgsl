// Reading one index of an index operand (not a kernel: included with
// "//!include index_read" by gather, gather_elements, gather_nd and
// scatter). The includer declares `override IDX64: bool` and binds the
// indices as I: array<u32> with Params field i_off. Index i is an i32 word,
// or with IDX64 an i64 as a (low, high) word pair; an i64 outside the i32
// range reads as 0x7fffffff, which every caller's bounds check rejects.
fn index_at(i: u32) -> i32 {
    if (IDX64) {
        let lo = I[P.i_off + 2u * i];
        let hi = I[P.i_off + 2u * i + 1u];
        if (hi != select(0u, 0xffffffffu, bitcast<i32>(lo) < 0)) { return i32(0x7fffffff); }
        return bitcast<i32>(lo);
    }
    return bitcast<i32>(I[P.i_off + i]);
}
