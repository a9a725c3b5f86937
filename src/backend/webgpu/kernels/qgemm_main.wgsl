// (not a kernel: included last by qgemm.wgsl and qgemm_dp4.wgsl, whose
// entry points, workgroups of QWG invocations (64, or 256 for MODE 1),
// call it with their local index li and linear workgroup index wl) MODE
// 0: invocation t = wl * 64 + li < P.threads runs qgemm_main (one output,
// a word of 8-bit outputs, or a 4 x 4 block); MODE 1 and 2: qgemm_wg.wgsl;
// MODE 3: invocation t < P.threads runs qgemm_reduce (split-K's second
// pass, qgemm_wg.wgsl); MODE 4: qgemm_reduce_flat (the same for an 8-bit
// y of rows that do not fill whole words).
override QWG: u32 = 64u;
fn qgemm_entry(li: u32, wl: u32) {
    if (MODE == 1u) {
        qgemm_wg_tile(li, wl);
        return;
    }
    if (MODE == 2u) {
        qgemm_wg_gemv(li, wl);
        return;
    }
    let t = wl * 64u + li;
    if (MODE == 3u) {
        if (t < P.threads) { qgemm_reduce(t); }
        return;
    }
    if (MODE == 4u) {
        if (t < P.threads) { qgemm_reduce_flat(t); }
        return;
    }
    if (t < P.threads) { qgemm_main(t); }
}
