// Reading one index of an index operand, and reporting one out of range
// (not a kernel: included with "//!include index_read" by gather,
// gather_elements, gather_nd and scatter). The includer declares
// `override IDX64: bool` and `override REPORT: bool`, binds the indices as
// I: array<u32> (Params field i_off) and the run's status words as
// S: array<atomic<u32>> (Params fields s_off, tag; see wg_bind_status in
// webgpu.h). Index i is an i32 word, or with IDX64 an i64 as a (low, high)
// word pair; an i64 outside the i32 range reads as 0x7fffffff, which every
// caller's bounds check rejects.
fn index_at(i: u32) -> i32 {
    if (IDX64) {
        let lo = I[P.i_off + 2u * i];
        let hi = I[P.i_off + 2u * i + 1u];
        if (hi != select(0u, 0xffffffffu, bitcast<i32>(lo) < 0)) { return i32(0x7fffffff); }
        return bitcast<i32>(lo);
    }
    return bitcast<i32>(I[P.i_off + i]);
}

// Index i against an extent a: wrapped into [0, a) when negative, or -1,
// reported (report_index), when outside [-a, a).
fn index_in(i: u32, a: u32) -> i32 {
    var v = index_at(i);
    if (v < 0) { v = v + i32(a); }
    if (v < 0 || v >= i32(a)) {
        report_index(i, a);
        return -1;
    }
    return v;
}

// Index i lies outside [-a, a) (the CPU reports an error): raises status
// word 0 to this step's tag (0xffffffff - step, so the earliest failing
// step of the run wins); the one invocation that raises it stores the index
// as an i64 (words 1, 2: low, high) and a (word 3). Later steps see a
// larger word 0 and leave the details alone. Nothing without REPORT
// (constant indices, checked at compile time; S is then a placeholder).
fn report_index(i: u32, a: u32) {
    if (!REPORT) { return; }
    let old = atomicMax(&S[P.s_off], P.tag);
    if (old >= P.tag) { return; }
    var lo = 0u;
    var hi = 0u;
    if (IDX64) {
        lo = I[P.i_off + 2u * i];
        hi = I[P.i_off + 2u * i + 1u];
    } else {
        lo = I[P.i_off + i];
        hi = select(0u, 0xffffffffu, bitcast<i32>(lo) < 0);
    }
    atomicStore(&S[P.s_off + 1u], lo);
    atomicStore(&S[P.s_off + 2u], hi);
    atomicStore(&S[P.s_off + 3u], a);
}
