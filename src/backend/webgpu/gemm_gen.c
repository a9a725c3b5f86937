/* The generated tiled GEMM (see lower_gemm.h, wg_gen_gemm_source): the
 * tile loads, the k loop's products and the epilogue of gemm.wgsl written
 * out statement by statement, with the configuration as constants. The
 * math per output is gemm.wgsl's (one f32 accumulator, fma, k ascending),
 * so both give the same bits; what differs is the code the driver sees:
 * no loops over the register block and no dynamically indexed private
 * arrays, which some shader compilers leave in (slow) local memory.
 * With f16 sums (hblock > 0, lower_gemm.h) the tiles hold f16 and the
 * products go into f16 partial sums first: not gemm.wgsl's bits. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/wgsl_gen.h"

static uint32_t cdiv32(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

/* Items of each k tile (gemm_tile.wgsl items_a / items_b). */
static uint32_t items_a(const wg_gemm_kernel *k) {
    return k->wgy * k->tm * k->bk / (k->amode == GA_VEC_K || k->amode == GA_VEC_M ? 4 : 1);
}
static uint32_t items_b(const wg_gemm_kernel *k) {
    return k->wgx * k->tn * k->bk / (k->bmode == GB_VEC_N || k->bmode == GB_VEC_K ? 4 : 1);
}

/* The loads of one k tile starting at k0 (a WGSL expression): item
 * li + j * NT of each tile for every j, a bound test only on a partial
 * last round. */
static void gen_loads(wg_src *b, const wg_gemm_kernel *k, const char *k0, const char *ind) {
    uint32_t nt = k->wgx * k->wgy;
    uint32_t n[2] = { items_a(k), items_b(k) };
    for (int t = 0; t < 2; t++)
        for (uint32_t j = 0; j < cdiv32(n[t], nt); j++) {
            wg_src_printf(b, "%s{ let i = li + %uu; ", ind, j * nt);
            if ((j + 1) * nt > n[t]) wg_src_printf(b, "if (i < %uu) { ", n[t]);
            if (t) wg_src_printf(b, "put_b(i, fetch_b(i, %s, kcount, n0, bbase, kofs));", k0);
            else wg_src_printf(b, "put_a(i, fetch_a(i, %s, kcount, m0, abase));", k0);
            wg_src_printf(b, "%s }\n", (j + 1) * nt > n[t] ? " }" : "");
        }
}

/* The products of one k step (kk: a WGSL expression): the TM x TN block,
 * accumulators c<q> (q = (ii * 4 + r) * TN / 4 + jj); with f16 sums
 * (hblock) the f16 partial sums h<q> instead. */
static void gen_step(wg_src *b, const wg_gemm_kernel *k, const char *kk, const char *ind) {
    uint32_t bm = k->wgy * k->tm, bn = k->wgx * k->tn;
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        wg_src_printf(b, "%slet a%u = As[(%s) * %uu + %uu + ty];\n", ind, ii, kk, bm / 4, ii * k->wgy);
    for (uint32_t jj = 0; jj < k->tn / 4; jj++)
        wg_src_printf(b, "%slet b%u = Bs[(%s) * %uu + %uu + tx];\n", ind, jj, kk, bn / 4, jj * k->wgx);
    static const char comp[4] = { 'x', 'y', 'z', 'w' };
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        for (uint32_t r = 0; r < 4; r++)
            for (uint32_t jj = 0; jj < k->tn / 4; jj++) {
                uint32_t q = (ii * 4 + r) * (k->tn / 4) + jj;
                wg_src_printf(b, "%s%c%u = fma(vec4<TILE_T>(a%u.%c), b%u, %c%u);\n", ind, k->hblock ? 'h' : 'c', q, ii,
                              comp[r], jj, k->hblock ? 'h' : 'c', q);
            }
}

/* With f16 sums: each f16 partial sum h<q> added into its f32
 * accumulator c<q> and cleared. */
static void gen_flush(wg_src *b, const wg_gemm_kernel *k, const char *ind) {
    for (uint32_t q = 0; q < k->tm * k->tn / 4; q++)
        wg_src_printf(b, "%sc%u = c%u + vec4<f32>(h%u);\n%sh%u = vec4<f16>(0.0);\n", ind, q, q, q, ind, q);
}

/* The k steps of one tile, with f16 sums flushed after every hblock of
 * them where hblock < BK. */
static void gen_tile_steps(wg_src *b, const wg_gemm_kernel *k) {
    bool inner = k->hblock && k->hblock < k->bk;
    if (k->unroll_k) {
        for (uint32_t kk = 0; kk < k->bk; kk++) {
            char e[16];
            snprintf(e, sizeof e, "%uu", kk);
            wg_src_printf(b, "        {\n");
            gen_step(b, k, e, "            ");
            if (inner && (kk + 1) % k->hblock == 0) gen_flush(b, k, "            ");
            wg_src_printf(b, "        }\n");
        }
        return;
    }
    wg_src_printf(b, "        for (var kk = 0u; kk < BK; kk = kk + 1u) {\n");
    gen_step(b, k, "kk", "            ");
    if (inner) {
        wg_src_printf(b, "            if ((kk + 1u) %% %uu == 0u) {\n", k->hblock);
        gen_flush(b, k, "                ");
        wg_src_printf(b, "            }\n");
    }
    wg_src_printf(b, "        }\n");
}

char *wg_gen_gemm_source(const wg_gemm_kernel *k) {
    const char *act = wg_wgsl_source("act"), *common = wg_wgsl_source("gemm_common");
    const char *tile = wg_wgsl_source("gemm_tile"), *codes = wg_wgsl_source("codes");
    if (!act || !common || !tile || !codes) return NULL;
    if ((k->tm != 4 && k->tm != 8) || (k->tn != 4 && k->tn != 8) || k->bk == 0 || k->bk % 4) return NULL;
    if (k->hblock && (!wg_gemm_hblock_fits(k->hblock, k->bk) || !k->a16 || !k->b16)) return NULL;
    wg_src b = { 0 };
    wg_src_printf(&b, "// Generated by gemm_gen.c: the tiled GEMM of gemm.wgsl, written out%s.\n//!elem f32 f16\n",
                  k->hblock ? " with f16 sums" : "");
    /* the audit (README.md, "Runtime checks"): operand loads only under
     * m < M, n < N, k < kcount (fetch_a / fetch_b; conv_b's taps under
     * their bounds tests), vec4 loads and stores where emit_tiled checked
     * K, M or N % 4 == 0 and aligned offsets, stores under m < M, n (+ c)
     * < N; the windows are ext_a / ext_b / ext_y / ext_bias of
     * lower_gemm.c; the tiles As / Bs indexed below BK * BM and BK * BN
     * (items under i < items, gen_loads); every loop counts up to a bound
     * below 2^31 (emit_one declines larger sizes) */
    wg_src_printf(&b, "//!audited see gemm_gen.c: loads under m < M, n < N, k < kcount; tiles below BK * BM, BK * BN\n");
    /* f16 sums: also in the f32 instance (T = f32: split-K partial sums) */
    if (k->hblock) wg_src_printf(&b, "enable f16;\n");
    wg_src_printf(&b,
                  "const TM: u32 = %uu;\nconst TN: u32 = %uu;\nconst WGX: u32 = %uu;\nconst WGY: u32 = %uu;\n"
                  "const BK: u32 = %uu;\nconst A_MODE: u32 = %uu;\nconst B_MODE: u32 = %uu;\n"
                  "const A_F16: bool = %s;\nconst B_F16: bool = %s;\nconst CKH: u32 = %uu;\nconst CKW: u32 = %uu;\n"
                  "const Y_VEC: bool = %s;\nconst SPLITK: bool = %s;\nconst ACT: u32 = %uu;\n"
                  "const PREFETCH: bool = false;\nconst Y_PIX: bool = %s;\nconst RES: bool = %s;\n\n",
                  k->tm, k->tn, k->wgx, k->wgy, k->bk, k->amode, k->bmode, k->a16 ? "true" : "false",
                  k->b16 ? "true" : "false", k->ckh, k->ckw, k->yvec ? "true" : "false", k->splitk ? "true" : "false",
                  k->act, k->ypix ? "true" : "false", k->res ? "true" : "false");
    const char *tt = k->hblock ? "f16" : "f32";
    wg_src_printf(&b, "alias TILE_T = %s;\nvar<workgroup> As: array<vec4<TILE_T>, %u>;\n"
                  "var<workgroup> Bs: array<vec4<TILE_T>, %u>;\n\n", tt, k->bk * k->wgy * k->tm / 4,
                  k->bk * k->wgx * k->tn / 4);
    wg_src_printf(&b, "%s\n%s\n%s\n%s\n", act, common, codes, tile);
    wg_src_printf(&b,
                  "@compute @workgroup_size(%u, %u)\n"
                  "fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
                  "        @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let tx = lid3.x;\n    let ty = lid3.y;\n    let li = ty * WGX + tx;\n"
                  "    let job = tile_job(wid.x + wid.y * nwg.x);\n    if (!job.ok) { return; }\n"
                  "    let m0 = job.m0;\n    let n0 = job.n0;\n    let abase = job.abase;\n    let bbase = job.bbase;\n"
                  "    let kcount = job.kcount;\n    let kofs = job.kofs;\n",
                  k->wgx, k->wgy);
    uint32_t nq = k->tm * k->tn / 4;
    for (uint32_t q = 0; q < nq; q++) wg_src_printf(&b, "    var c%u = vec4<f32>(0.0);\n", q);
    for (uint32_t q = 0; q < nq && k->hblock; q++) wg_src_printf(&b, "    var h%u = vec4<f16>(0.0);\n", q);
    wg_src_printf(&b, "    if (kcount > 0u) {\n");
    gen_loads(&b, k, "0u", "        ");
    wg_src_printf(&b, "    }\n    workgroupBarrier();\n"
                      "    for (var k0 = 0u; k0 < kcount; k0 = k0 + BK) {\n");
    gen_tile_steps(&b, k);
    if (k->hblock > k->bk) { /* a block of several tiles */
        wg_src_printf(&b, "        if ((k0 / BK + 1u) %% %uu == 0u) {\n", k->hblock / k->bk);
        gen_flush(&b, k, "            ");
        wg_src_printf(&b, "        }\n");
    } else if (k->hblock == k->bk) {
        gen_flush(&b, k, "        ");
    }
    wg_src_printf(&b, "        workgroupBarrier();\n        let nk = k0 + BK;\n        if (nk < kcount) {\n");
    gen_loads(&b, k, "nk", "            ");
    wg_src_printf(&b, "            workgroupBarrier();\n        }\n    }\n");
    if (k->hblock > k->bk) gen_flush(&b, k, "    "); /* the last, partial block */
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        for (uint32_t r = 0; r < 4; r++)
            for (uint32_t jj = 0; jj < k->tn / 4; jj++)
                wg_src_printf(&b, "    store4(m0 + %uu + ty * 4u, n0 + %uu + tx * 4u, c%u, job.ybase, job.cbase);\n",
                              ii * k->wgy * 4 + r, jj * k->wgx * 4, (ii * 4 + r) * (k->tn / 4) + jj);
    wg_src_printf(&b, "}\n");
    if (b.oom) {
        wg_src_free(&b);
        return NULL;
    }
    return b.s;
}
