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

/* How gen_loads writes the loads of a k tile: each item fetched and
 * stored at once (LOAD_NOW), fetched into its register p<a|b><j> (LOAD_FETCH),
 * or stored from that register (LOAD_PUT). */
typedef enum load_mode { LOAD_NOW, LOAD_FETCH, LOAD_PUT } load_mode;

/* Whether tile t (0: A, 1: B) is loaded a vec4 per item. */
static bool vec_items(const wg_gemm_kernel *k, int t) {
    return t ? k->bmode == GB_VEC_N || k->bmode == GB_VEC_K : k->amode == GA_VEC_K || k->amode == GA_VEC_M;
}

/* Whether the implicit conv operand's pixels are computed before the k
 * loop (conv_geo hoist or constants, gen_conv_prologue). */
static bool hoisted(const wg_gemm_kernel *k) { return k->bmode == GB_CONV && k->conv_geo != WG_GEMM_GEO_PARAMS; }

/* The pixel class of B item li + j * NT of a k tile (hoisted conv): its
 * column is n0 + (li + (j * NT) % BN) % BN, the same in every k tile; the
 * classes are the distinct (j * NT) % BN, numbered in order of first j. */
static uint32_t pixel_class(const wg_gemm_kernel *k, uint32_t j, uint32_t *off) {
    uint32_t nt = k->wgx * k->wgy, bn = k->wgx * k->tn;
    *off = (j * nt) % bn;
    uint32_t first = j, c = 0;
    for (uint32_t q = 0; q < j && first == j; q++)
        if ((q * nt) % bn == *off) first = q;
    for (uint32_t q = 0; q < first; q++) {
        bool dup = false;
        for (uint32_t r = 0; r < q && !dup; r++) dup = (r * nt) % bn == (q * nt) % bn;
        c += !dup;
    }
    return c;
}

/* The fetch of item i of tile t of the k tile at k0 (a WGSL expression of
 * type vec4<f32>, or f32 for element items). */
static void fetch_expr(char *e, size_t cap, const wg_gemm_kernel *k, int t, uint32_t j, const char *k0) {
    bool v = vec_items(k, t);
    if (t == 0) {
        snprintf(e, cap, "fetch_a(i, %s, kcount, m0, abase)%s", k0, v ? "" : ".x");
    } else if (hoisted(k)) {
        uint32_t off, c = pixel_class(k, j, &off);
        snprintf(e, cap, "conv_fetch(i, %s, kcount, bbase, kofs, hv%u, hy%u, hx%u)", k0, c, c, c);
    } else {
        snprintf(e, cap, "fetch_b(i, %s, kcount, n0, bbase, kofs)%s", k0, v ? "" : ".x");
    }
}

/* The loads of one k tile starting at k0 (a WGSL expression): item
 * li + j * NT of each tile for every j, a bound test only on a partial
 * last round. LOAD_NOW and LOAD_PUT store into the copy of the tiles at
 * elements `ea` of As and `eb` of Bs (WGSL expressions; NULL: the first). */
static void gen_loads(wg_src *b, const wg_gemm_kernel *k, const char *k0, const char *ind, load_mode mode,
                      const char *ea, const char *eb) {
    uint32_t nt = k->wgx * k->wgy;
    uint32_t n[2] = { items_a(k), items_b(k) };
    for (int t = 0; t < 2; t++)
        for (uint32_t j = 0; j < cdiv32(n[t], nt); j++) {
            char e[160], val[200];
            const char *x = t ? "b" : "a", *eo = t ? eb : ea;
            wg_src_printf(b, "%s{ let i = li + %uu; ", ind, j * nt);
            if ((j + 1) * nt > n[t]) wg_src_printf(b, "if (i < %uu) { ", n[t]);
            if (mode == LOAD_FETCH) {
                fetch_expr(e, sizeof e, k, t, j, k0);
                wg_src_printf(b, "p%s%u = %s;", x, j, e);
            } else {
                if (mode == LOAD_PUT) snprintf(e, sizeof e, "p%s%u", x, j);
                else fetch_expr(e, sizeof e, k, t, j, k0);
                if (vec_items(k, t)) snprintf(val, sizeof val, "%s", e);
                else snprintf(val, sizeof val, "vec4<f32>(%s, 0.0, 0.0, 0.0)", e);
                /* today's text where nothing differs from it */
                if (!eo && mode == LOAD_NOW && !(t && hoisted(k)))
                    wg_src_printf(b, "put_%s(i, fetch_%s(i, %s, kcount, %s));", x, x, k0,
                                  t ? "n0, bbase, kofs" : "m0, abase");
                else if (!eo) wg_src_printf(b, "put_%s(i, %s);", x, val);
                else wg_src_printf(b, "put_%s_at(i, %s, %s);", x, val, eo);
            }
            wg_src_printf(b, "%s }\n", (j + 1) * nt > n[t] ? " }" : "");
        }
}

/* The registers of the prefetched loads (LOAD_FETCH): p<a|b><j>, f32 for
 * element items, vec4<f32> for vec4 ones (zero unless fetched). */
static void gen_prefetch_regs(wg_src *b, const wg_gemm_kernel *k, const char *ind) {
    uint32_t nt = k->wgx * k->wgy;
    uint32_t n[2] = { items_a(k), items_b(k) };
    for (int t = 0; t < 2; t++)
        for (uint32_t j = 0; j < cdiv32(n[t], nt); j++)
            wg_src_printf(b, "%svar p%s%u: %s;\n", ind, t ? "b" : "a", j, vec_items(k, t) ? "vec4<f32>" : "f32");
}

/* The hoisted implicit conv operand (conv_geo hoist or constants): per
 * pixel class q (pixel_class) its column hn<q>, whether it is below N
 * (hv<q>) and the input row and column of its first tap (hy<q>, hx<q>),
 * computed once; conv_fetch then reads tap k of such a pixel. The same
 * element as conv_b (gemm_common.wgsl), or the same 0. */
typedef struct geo_txt {
    char ow[24], sh[24], sw[24], ph[24], pw[24], dh[24], dw[24], ih[24], iw[24], ihi[24], iwi[24], kh[24], kw[24];
} geo_txt;

static void geo_text(const wg_gemm_kernel *k, geo_txt *g) {
    bool c = k->conv_geo == WG_GEMM_GEO_CONSTANTS;
#define GEO(f, field, pfield) \
    if (c) snprintf(g->f, sizeof g->f, "%uu", k->field); \
    else snprintf(g->f, sizeof g->f, "P.%s", pfield)
    GEO(ow, out_w, "out_w");
    GEO(sh, s_h, "s_h");
    GEO(sw, s_w, "s_w");
    GEO(ph, p_h, "p_h");
    GEO(pw, p_w, "p_w");
    GEO(dh, d_h, "d_h");
    GEO(dw, d_w, "d_w");
    GEO(ih, in_h, "in_h");
    GEO(iw, in_w, "in_w");
#undef GEO
    if (c) {
        snprintf(g->ihi, sizeof g->ihi, "%di", (int)k->in_h);
        snprintf(g->iwi, sizeof g->iwi, "%di", (int)k->in_w);
    } else {
        snprintf(g->ihi, sizeof g->ihi, "i32(P.in_h)");
        snprintf(g->iwi, sizeof g->iwi, "i32(P.in_w)");
    }
    if (k->ckh) snprintf(g->kh, sizeof g->kh, "%uu", k->ckh);
    else snprintf(g->kh, sizeof g->kh, "P.k_h");
    if (k->ckw) snprintf(g->kw, sizeof g->kw, "%uu", k->ckw);
    else snprintf(g->kw, sizeof g->kw, "P.k_w");
}

static void gen_conv_fetch_fn(wg_src *b, const wg_gemm_kernel *k) {
    geo_txt g;
    geo_text(k, &g);
    wg_src_printf(b,
                  "// element k0 + i / BN of the implicit conv operand at the pixel whose first tap is input\n"
                  "// (ih0, iw0), ok: the pixel is below N (conv_b's element, or its 0)\n"
                  "fn conv_fetch(i: u32, k0: u32, kcount: u32, bbase: u32, kofs: u32, ok: bool, ih0: i32, iw0: i32) -> f32 {\n"
                  "    let k = k0 + i / %uu;\n"
                  "    if (!ok || k >= kcount) { return 0.0; }\n"
                  "    let kk = kofs + k;\n"
                  "    let kc = kk %% %s;\n    let t = kk / %s;\n    let kr = t %% %s;\n    let ci = t / %s;\n"
                  "    let ih = ih0 + i32(kr * %s);\n    let iw = iw0 + i32(kc * %s);\n"
                  "    if (ih < 0 || iw < 0 || ih >= %s || iw >= %s) { return 0.0; }\n"
                  "    return ldb(bbase + (ci * %s + u32(ih)) * %s + u32(iw));\n}\n\n",
                  k->wgx * k->tn, g.kw, g.kw, g.kh, g.kh, g.dh, g.dw, g.ihi, g.iwi, g.ih, g.iw);
}

static void gen_conv_prologue(wg_src *b, const wg_gemm_kernel *k) {
    geo_txt g;
    geo_text(k, &g);
    uint32_t nt = k->wgx * k->wgy, bn = k->wgx * k->tn;
    uint32_t next = 0;
    for (uint32_t j = 0; j < cdiv32(items_b(k), nt); j++) {
        uint32_t off, c = pixel_class(k, j, &off);
        if (c < next) continue; /* declared with an earlier j */
        next = c + 1;
        if (off) wg_src_printf(b, "    let hn%u = n0 + (li + %uu) %% %uu;\n", c, off, bn);
        else wg_src_printf(b, "    let hn%u = n0 + li %% %uu;\n", c, bn);
        wg_src_printf(b, "    let hv%u = hn%u < P.N;\n", c, c);
        wg_src_printf(b, "    let hy%u = i32((hn%u / %s) * %s) - i32(%s);\n", c, c, g.ow, g.sh, g.ph);
        wg_src_printf(b, "    let hx%u = i32((hn%u %% %s) * %s) - i32(%s);\n", c, c, g.ow, g.sw, g.pw);
    }
}

/* The products of one k step (kk: a WGSL expression): the TM x TN block,
 * accumulators c<q> (q = (ii * 4 + r) * TN / 4 + jj); with f16 sums
 * (hblock) the f16 partial sums h<q> instead. */
static void gen_step(wg_src *b, const wg_gemm_kernel *k, const char *kk, const char *ind) {
    uint32_t bm = k->wgy * k->tm, bn = k->wgx * k->tn;
    /* the double buffer: the copy being read starts at vec4 ao of As, bo of Bs */
    bool dbl = k->pipeline == WG_GEMM_PIPE_DOUBLE;
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        wg_src_printf(b, "%slet a%u = As[%s(%s) * %uu + %uu + ty];\n", ind, ii, dbl ? "ao + " : "", kk, bm / 4,
                      ii * k->wgy);
    for (uint32_t jj = 0; jj < k->tn / 4; jj++)
        wg_src_printf(b, "%slet b%u = Bs[%s(%s) * %uu + %uu + tx];\n", ind, jj, dbl ? "bo + " : "", kk, bn / 4,
                      jj * k->wgx);
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

static char *gen_q8(const wg_gemm_kernel *k);

char *wg_gen_gemm_source(const wg_gemm_kernel *k) {
    if (k->elem == WG_GEMM_ELEM_Q8) return gen_q8(k);
    if (k->elem != WG_GEMM_ELEM_F32) return NULL;
    const char *act = wg_wgsl_source("act"), *common = wg_wgsl_source("gemm_common");
    const char *tile = wg_wgsl_source("gemm_tile"), *codes = wg_wgsl_source("codes");
    if (!act || !common || !tile || !codes) return NULL;
    if ((k->tm != 4 && k->tm != 8) || (k->tn != 4 && k->tn != 8) || k->bk == 0 || k->bk % 4) return NULL;
    if (k->hblock && (!wg_gemm_hblock_fits(k->hblock, k->bk) || !k->a16 || !k->b16)) return NULL;
    static const char *const k_pipe[] = { "off", "prefetch", "double" }, *const k_geo[] = { "params", "hoist", "constants" };
    if (k->pipeline > WG_GEMM_PIPE_DOUBLE || k->conv_geo > WG_GEMM_GEO_CONSTANTS) return NULL;
    bool dbl = k->pipeline == WG_GEMM_PIPE_DOUBLE;
    wg_src b = { 0 };
    wg_src_printf(&b, "// Generated by gemm_gen.c: the tiled GEMM of gemm.wgsl, written out%s.\n//!elem f32 f16\n",
                  k->hblock ? " with f16 sums" : "");
    /* the variants (today's text when both are the defaults) */
    if (k->pipeline != WG_GEMM_PIPE_OFF || hoisted(k))
        wg_src_printf(&b, "// gpu.gemm_pipeline=%s, gpu.gemm_conv_geometry=%s\n", k_pipe[k->pipeline],
                      hoisted(k) ? k_geo[k->conv_geo] : "params");
    /* the audit (README.md, "Runtime checks"): operand loads only under
     * m < M, n < N, k < kcount (fetch_a / fetch_b / conv_fetch; conv_b's
     * and conv_fetch's taps under their bounds tests), vec4 loads and
     * stores where emit_tiled checked K, M or N % 4 == 0 and aligned
     * offsets, stores under m < M, n (+ c) < N; the windows are ext_a /
     * ext_b / ext_y / ext_bias of lower_gemm.c; the tiles As / Bs indexed
     * below BK * BM and BK * BN (items under i < items, gen_loads), or,
     * double-buffered, twice that (the copy at ao, bo or at the element
     * offsets ea, eb: 0 or one tile, cur in {0, 1}); every loop counts up
     * to a bound below 2^31 (emit_one declines larger sizes) */
    wg_src_printf(&b, "//!audited see gemm_gen.c: loads under m < M, n < N, k < kcount; tiles below BK * BM, BK * BN%s\n",
                  dbl ? " (two copies of each)" : "");
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
    uint32_t sa4 = k->bk * k->wgy * k->tm / 4, sb4 = k->bk * k->wgx * k->tn / 4; /* vec4s of one copy */
    wg_src_printf(&b, "alias TILE_T = %s;\nvar<workgroup> As: array<vec4<TILE_T>, %u>;\n"
                  "var<workgroup> Bs: array<vec4<TILE_T>, %u>;\n\n", tt, dbl ? 2 * sa4 : sa4, dbl ? 2 * sb4 : sb4);
    wg_src_printf(&b, "%s\n%s\n%s\n%s\n", act, common, codes, tile);
    if (hoisted(k)) gen_conv_fetch_fn(&b, k);
    wg_src_printf(&b,
                  "@compute @workgroup_size(%u, %u)\n"
                  "fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
                  "        @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let tx = lid3.x;\n    let ty = lid3.y;\n    let li = ty * WGX + tx;\n"
                  "    let job = tile_job(wid.x + wid.y * nwg.x);\n    if (!job.ok) { return; }\n"
                  "    let m0 = job.m0;\n    let n0 = job.n0;\n    let abase = job.abase;\n    let bbase = job.bbase;\n"
                  "    let kcount = job.kcount;\n    let kofs = job.kofs;\n",
                  k->wgx, k->wgy);
    if (hoisted(k)) gen_conv_prologue(&b, k);
    uint32_t nq = k->tm * k->tn / 4;
    for (uint32_t q = 0; q < nq; q++) wg_src_printf(&b, "    var c%u = vec4<f32>(0.0);\n", q);
    for (uint32_t q = 0; q < nq && k->hblock; q++) wg_src_printf(&b, "    var h%u = vec4<f16>(0.0);\n", q);
    wg_src_printf(&b, "    if (kcount > 0u) {\n");
    gen_loads(&b, k, "0u", "        ", LOAD_NOW, NULL, NULL);
    wg_src_printf(&b, "    }\n    workgroupBarrier();\n");
    if (dbl) wg_src_printf(&b, "    var cur = 0u; // the copy of the tiles that this k tile reads\n");
    wg_src_printf(&b, "    for (var k0 = 0u; k0 < kcount; k0 = k0 + BK) {\n");
    if (k->pipeline != WG_GEMM_PIPE_OFF) {
        /* the next tile's loads in flight during this tile's products */
        wg_src_printf(&b, "        let nk = k0 + BK;\n        let more = nk < kcount;\n");
        gen_prefetch_regs(&b, k, "        ");
        wg_src_printf(&b, "        if (more) {\n");
        gen_loads(&b, k, "nk", "            ", LOAD_FETCH, NULL, NULL);
        wg_src_printf(&b, "        }\n");
    }
    if (dbl) wg_src_printf(&b, "        let ao = cur * %uu;\n        let bo = cur * %uu;\n", sa4, sb4);
    gen_tile_steps(&b, k);
    if (k->hblock > k->bk) { /* a block of several tiles */
        wg_src_printf(&b, "        if ((k0 / BK + 1u) %% %uu == 0u) {\n", k->hblock / k->bk);
        gen_flush(&b, k, "            ");
        wg_src_printf(&b, "        }\n");
    } else if (k->hblock == k->bk) {
        gen_flush(&b, k, "        ");
    }
    if (k->pipeline == WG_GEMM_PIPE_OFF) {
        wg_src_printf(&b, "        workgroupBarrier();\n        let nk = k0 + BK;\n        if (nk < kcount) {\n");
        gen_loads(&b, k, "nk", "            ", LOAD_NOW, NULL, NULL);
        wg_src_printf(&b, "            workgroupBarrier();\n        }\n    }\n");
    } else if (k->pipeline == WG_GEMM_PIPE_PREFETCH) {
        /* every invocation past this tile's products before the stores */
        wg_src_printf(&b, "        workgroupBarrier();\n        if (more) {\n");
        gen_loads(&b, k, "nk", "            ", LOAD_PUT, NULL, NULL);
        wg_src_printf(&b, "            workgroupBarrier();\n        }\n    }\n");
    } else {
        /* into the other copy, which nobody reads: its last readers (the
         * k tile before this one) all passed the barrier that ended it;
         * the barrier after the stores makes them visible to the next */
        wg_src_printf(&b, "        if (more) {\n            let ea = (cur ^ 1u) * %uu;\n            let eb = (cur ^ 1u) * %uu;\n",
                      4 * sa4, 4 * sb4);
        gen_loads(&b, k, "nk", "            ", LOAD_PUT, "ea", "eb");
        wg_src_printf(&b, "            workgroupBarrier();\n        }\n        cur = cur ^ 1u;\n    }\n");
    }
    if (k->hblock > k->bk) gen_flush(&b, k, "    "); /* the last, partial block */
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        for (uint32_t r = 0; r < 4; r++)
            for (uint32_t jj = 0; jj < k->tn / 4; jj++)
                wg_src_printf(&b, "    store4(m0 + %uu + ty * 4u, n0 + %uu + tx * 4u, c%u, job.ybase, job.cbase);\n",
                              ii * k->wgy * 4 + r, jj * k->wgx * 4, (ii * 4 + r) * (k->tn / 4) + jj);
    wg_src_printf(&b, "}\n");
    return wg_src_take(&b);
}

/* ---------------------------------------------------------------- int8 */

/* The element type as the generator's parameter (issue 10): the int8
 * instance of the tiled GEMM (elem WG_GEMM_ELEM_Q8, lower_gemm.h), the
 * structure above with u32 words of four consecutive k of int8/uint8
 * operands (in the signed domain) in place of f32 elements and i32
 * accumulators updated by a 4x8 dot product (qdot) in place of fma. */

/* The products of k word kq (a WGSL constant) of the register block: TM x
 * TN outputs in accumulators c<q> (q = (ii * 4 + r) * TN / 4 + jj), rows
 * 4 (ii WGY + ty) + r, columns 4 (jj WGX + tx) + c, as gen_step's. */
static void gen_qstep(wg_src *b, const wg_gemm_kernel *k, uint32_t kq, const char *ind) {
    uint32_t bm4 = k->wgy * k->tm / 4, bn4 = k->wgx * k->tn / 4;
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        wg_src_printf(b, "%slet a%u = As[%uu + ty];\n", ind, ii, kq * bm4 + ii * k->wgy);
    for (uint32_t jj = 0; jj < k->tn / 4; jj++)
        wg_src_printf(b, "%slet b%u = Bs[%uu + tx];\n", ind, jj, kq * bn4 + jj * k->wgx);
    static const char comp[4] = { 'x', 'y', 'z', 'w' };
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        for (uint32_t r = 0; r < 4; r++)
            for (uint32_t jj = 0; jj < k->tn / 4; jj++) {
                uint32_t q = (ii * 4 + r) * (k->tn / 4) + jj;
                wg_src_printf(b, "%sc%u = c%u + vec4<i32>(qdot(a%u.%c, b%u.x), qdot(a%u.%c, b%u.y), "
                              "qdot(a%u.%c, b%u.z), qdot(a%u.%c, b%u.w));\n",
                              ind, q, q, ii, comp[r], jj, ii, comp[r], jj, ii, comp[r], jj, ii, comp[r], jj);
            }
}

/* The loads of one k tile (words k0 .. k0 + BK - 1): A item i (< BM / 4
 * * BK) is word kq = i % BK of rows 4 r4 .. 4 r4 + 3 (r4 = i / BK), stored
 * as As[kq * BM / 4 + r4]; B item i is word kq of columns 4 c4 .. 4 c4 + 3
 * (word_b4), Bs[kq * BN / 4 + c4]; each loader adds its words' byte sums
 * into its registers la<j> / lb<j> (the zero-point terms: an item's rows or
 * columns and k slot are the same in every k tile). */
static void gen_qloads(wg_src *b, const wg_gemm_kernel *k) {
    uint32_t nt = k->wgx * k->wgy, bm4 = k->wgy * k->tm / 4, bn4 = k->wgx * k->tn / 4;
    uint32_t n[2] = { bm4 * k->bk, bn4 * k->bk };
    for (int t = 0; t < 2; t++)
        for (uint32_t j = 0; j < cdiv32(n[t], nt); j++) {
            bool part = (j + 1) * nt > n[t];
            wg_src_printf(b, "        { let i = li + %uu; ", j * nt);
            if (part) wg_src_printf(b, "if (i < %uu) { ", n[t]);
            wg_src_printf(b, "let kq = i %% %uu; let g = i / %uu;\n", k->bk, k->bk);
            if (t == 0)
                wg_src_printf(b, "            let r = 4u * g + m0;\n"
                                 "            let w = vec4<u32>(word_a_at(base.x, r, k0 + kq), word_a_at(base.x, r + 1u, k0 + kq),\n"
                                 "                              word_a_at(base.x, r + 2u, k0 + kq), word_a_at(base.x, r + 3u, k0 + kq));\n"
                                 "            As[kq * %uu + g] = w;\n"
                                 "            if (need_sa()) { la%u = la%u + vec4<i32>(qdot(w.x, ones), qdot(w.y, ones), qdot(w.z, ones), qdot(w.w, ones)); }\n",
                              bm4, j, j);
            else
                wg_src_printf(b, "            let w = word_b4(base.y, n0 + 4u * g, k0 + kq);\n"
                                 "            Bs[kq * %uu + g] = w;\n"
                                 "            if (need_sb()) { lb%u = lb%u + vec4<i32>(qdot(w.x, ones), qdot(w.y, ones), qdot(w.z, ones), qdot(w.w, ones)); }\n",
                              bn4, j, j);
            wg_src_printf(b, "        }%s\n", part ? " }" : "");
        }
}

static char *gen_q8(const wg_gemm_kernel *k) {
    bool dot4 = k->dot4;
    if ((k->tm != 4 && k->tm != 8) || (k->tn != 4 && k->tn != 8) || k->bk == 0 || k->wgx == 0 || k->wgy == 0)
        return NULL;
    uint32_t nt = k->wgx * k->wgy, bm4 = k->wgy * k->tm / 4, bn4 = k->wgx * k->tn / 4;
    uint32_t na = cdiv32(bm4 * k->bk, nt), nb = cdiv32(bn4 * k->bk, nt);
    wg_src b = { 0 };
    wg_src_printf(&b, "// Generated by gemm_gen.c: the integer GEMM of qgemm_body.wgsl as the int8 instance of the tiled\n"
                      "// GEMM: %ux%u outputs per invocation, %ux%u invocations, k steps of %u words (4 k each).\n",
                  k->tm, k->tn, k->wgx, k->wgy, k->bk);
    /* the audit (README.md, "Runtime checks"; the claims of qgemm.wgsl for
     * the included functions): operand loads through word_a_at and word_b4
     * (under m, n, k, tap and batch bounds), zero points at clamped rows and
     * columns, stores through qstore4 under mm < m and nn < n (8-bit:
     * lower_qgemm.c requires n % 4 == 0), As / Bs indexed below BK * BM / 4
     * and BK * BN / 4 (items under i < items, gen_qloads; the sums' reads
     * kq < BK) */
    wg_src_printf(&b, "//!audited see gemm_gen.c (gen_q8): loads through word_a_at / word_b4 under m, n, k bounds;\n"
                      "//!audited stores through qstore4 under mm < m, nn < n; As, Bs indices below BK * BM / 4, BK * BN / 4\n");
    wg_src_printf(&b, "//!include %s\n", dot4 ? "qdot_dp4" : "qdot");
    wg_src_printf(&b, "//!include qrequant\n//!include qgemm_body\n//!include qgemm_wg\n//!include qepi\n\n");
    wg_src_printf(&b, "var<workgroup> As: array<vec4<u32>, %u>;\nvar<workgroup> Bs: array<vec4<u32>, %u>;\n\n",
                  bm4 * k->bk, bn4 * k->bk);
    /* the grid: one workgroup per (batch item, BM x BN block), times the
     * k slices with split-K (the slice outermost); P.threads counts the
     * batch items (as MODE 1's) */
    wg_src_printf(&b,
                  "@compute @workgroup_size(%u, %u)\n"
                  "fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,\n"
                  "        @builtin(num_workgroups) nwg: vec3u) {\n"
                  "    let tx = lid3.x;\n    let ty = lid3.y;\n    let li = ty * %uu + tx;\n"
                  "    let gn = (P.n + %uu) / %uu;\n    let gm = (P.m + %uu) / %uu;\n",
                  k->wgx, k->wgy, k->wgx, 4 * bn4 - 1, 4 * bn4, 4 * bm4 - 1, 4 * bm4);
    if (k->splitk)
        wg_src_printf(&b, "    let wall = wid.x + wid.y * nwg.x;\n    let tiles = gn * gm * P.threads;\n"
                          "    if (wall >= tiles * P.nsplit) { return; }\n    let slice = wall / tiles;\n"
                          "    let wl = wall %% tiles;\n");
    else
        wg_src_printf(&b, "    let wl = wid.x + wid.y * nwg.x;\n    if (wl >= gn * gm * P.threads) { return; }\n");
    wg_src_printf(&b,
                  "    let bi = wl / (gn * gm);\n    let n0 = %uu * (wl %% gn);\n    let m0 = %uu * ((wl / gn) %% gm);\n"
                  "    let base = qbatch(bi);\n    let kw = (P.k + 3u) / 4u;\n    let ones = 0x01010101u;\n",
                  4 * bn4, 4 * bm4);
    uint32_t nq = k->tm * k->tn / 4;
    for (uint32_t q = 0; q < nq; q++) wg_src_printf(&b, "    var c%u = vec4<i32>(0);\n", q);
    for (uint32_t j = 0; j < na; j++) wg_src_printf(&b, "    var la%u = vec4<i32>(0);\n", j);
    for (uint32_t j = 0; j < nb; j++) wg_src_printf(&b, "    var lb%u = vec4<i32>(0);\n", j);
    /* a slice's k words: ks_words is a multiple of BK, so that a tile's
     * words past the slice are past k (word_a_at / word_b4 give 0) */
    if (k->splitk)
        wg_src_printf(&b, "    let kend = min(kw, (slice + 1u) * P.ks_words);\n"
                          "    for (var k0 = slice * P.ks_words; k0 < kend; k0 = k0 + %uu) {\n", k->bk);
    else wg_src_printf(&b, "    for (var k0 = 0u; k0 < kw; k0 = k0 + %uu) {\n", k->bk);
    gen_qloads(&b, k);
    wg_src_printf(&b, "        workgroupBarrier();\n");
    for (uint32_t kq = 0; kq < k->bk; kq++) {
        wg_src_printf(&b, "        {\n");
        gen_qstep(&b, k, kq, "            ");
        wg_src_printf(&b, "        }\n");
    }
    wg_src_printf(&b, "        workgroupBarrier();\n    }\n");
    /* the loaders' sums, per k slot, through the tiles (every product
     * read of them passed the loop's last barrier), then added per row
     * group and column group */
    for (int t = 0; t < 2; t++)
        for (uint32_t j = 0; j < (t ? nb : na); j++) {
            uint32_t n = t ? bn4 * k->bk : bm4 * k->bk;
            bool part = (j + 1) * nt > n;
            wg_src_printf(&b, "    { let i = li + %uu; ", j * nt);
            if (part) wg_src_printf(&b, "if (i < %uu) { ", n);
            wg_src_printf(&b, "%s[(i %% %uu) * %uu + i / %uu] = bitcast<vec4<u32>>(l%c%u); %s}\n", t ? "Bs" : "As", k->bk,
                          t ? bn4 : bm4, k->bk, t ? 'b' : 'a', j, part ? "} " : "");
        }
    wg_src_printf(&b, "    workgroupBarrier();\n");
    for (uint32_t ii = 0; ii < k->tm / 4; ii++) {
        wg_src_printf(&b, "    var sa%u = vec4<i32>(0);\n    if (need_sa()) {\n", ii);
        wg_src_printf(&b, "        for (var kq = 0u; kq < %uu; kq = kq + 1u) { sa%u = sa%u + bitcast<vec4<i32>>(As[kq * %uu + %uu + ty]); }\n    }\n",
                      k->bk, ii, ii, bm4, ii * k->wgy);
    }
    for (uint32_t jj = 0; jj < k->tn / 4; jj++) {
        wg_src_printf(&b, "    var sb%u = vec4<i32>(0);\n    if (need_sb()) {\n", jj);
        wg_src_printf(&b, "        for (var kq = 0u; kq < %uu; kq = kq + 1u) { sb%u = sb%u + bitcast<vec4<i32>>(Bs[kq * %uu + %uu + tx]); }\n    }\n",
                      k->bk, jj, jj, bn4, jj * k->wgx);
        wg_src_printf(&b, "    let nn%u = n0 + %uu + 4u * tx;\n"
                          "    let zb%u = vec4<i32>(zp_b(min(nn%u, P.n - 1u)), zp_b(min(nn%u + 1u, P.n - 1u)), "
                          "zp_b(min(nn%u + 2u, P.n - 1u)), zp_b(min(nn%u + 3u, P.n - 1u)));\n",
                      jj, 4 * jj * k->wgx, jj, jj, jj, jj, jj);
    }
    /* the epilogue: acc = dot - za sb - zb sa + k za zb, stored by qstore4
     * (i32, or requantized into whole words) */
    static const char comp[4] = { 'x', 'y', 'z', 'w' };
    if (!k->splitk) wg_src_printf(&b, "    let kk = i32(P.k);\n");
    for (uint32_t ii = 0; ii < k->tm / 4; ii++)
        for (uint32_t r = 0; r < 4; r++) {
            wg_src_printf(&b, "    { let mm = m0 + %uu + 4u * ty;\n      if (mm < P.m) {\n        let za = zp_a(base.z + mm);\n",
                          4 * ii * k->wgy + r);
            for (uint32_t jj = 0; jj < k->tn / 4; jj++)
                if (k->splitk) /* the slice's partial sums, k za zb added by MODE 3 */
                    wg_src_printf(&b, "        if (nn%u < P.n) { qpart4(slice * P.total + (bi * P.m + mm) * P.n + nn%u, nn%u, "
                                      "c%u - za * sb%u - zb%u * sa%u.%c); }\n",
                                  jj, jj, jj, (ii * 4 + r) * (k->tn / 4) + jj, jj, jj, ii, comp[r]);
                else
                    wg_src_printf(&b, "        if (nn%u < P.n) { qstore4(bi, mm, base.z + mm, nn%u, c%u - za * sb%u - zb%u * sa%u.%c + kk * za * zb%u); }\n",
                                  jj, jj, (ii * 4 + r) * (k->tn / 4) + jj, jj, jj, ii, comp[r], jj);
            wg_src_printf(&b, "    } }\n");
        }
    wg_src_printf(&b, "}\n");
    return wg_src_take(&b);
}
