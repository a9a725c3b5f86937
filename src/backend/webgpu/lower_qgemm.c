/* WGSL lowerings of the integer matrix products: MatMulInteger-10 (i32
 * result) and QLinearMatMul-10/21 (int8/uint8 result), numpy.matmul shapes
 * (rank-1 operands promoted, batch dims broadcast), and the integer
 * convolutions ConvInteger-10 and QLinearConv-10 (lower_qconv), on the integer GEMM
 * kernel (kernels/qgemm_body.wgsl, its workgroup variants qgemm_wg.wgsl;
 * qgemm_dp4 with dot4I8Packed when the device's self-test passed,
 * webgpu_probe.c; for m >= 16 the int8 instance of the generated tiled
 * GEMM, gemm_gen.c, on the same functions). Bit-exact with the CPU
 * reference (cpu_quant.c: mm_run): the sums are i32 (wrapping), and
 * QLinearMatMul's requantization reproduces the CPU's double arithmetic
 * (see the kernel). Declines (the node runs on the CPU): operands that are
 * not int8/uint8; zero points or scales with batch dims; QLinearMatMul
 * scales that are not f32 constants, a y zero point that is not a
 * constant, a multiplier a_scale * b_scale / y_scale that is not positive
 * and finite; more than 4 batch dims; sizes past 32-bit indexing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_qgemm.h"
#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/quant_params.h"

#define LIM31 ((uint64_t)1 << 31)

static bool is_q8(const rlx_value *v) {
    return v && rlx_value_is_static(v) && (v->dtype == RLX_DTYPE_U8 || v->dtype == RLX_DTYPE_I8);
}

/* The requantization table of kernels/qrequant.wgsl: four words per entry
 * i < n, mult[i] = m * 2^e (m the 24-bit significand of the f32 that
 * mult[i] is, rlx_quant_mult's: exact), 0, and bias[i / per_bias] (0
 * without bias); its offset in the step's table in *off. */
static rlx_status requant_table(wg_lower *L, const double *mult, const int32_t *bias, uint32_t n, uint32_t per_bias,
                                uint64_t *off) {
    for (uint32_t i = 0; i < n; i++)
        if ((double)(float)mult[i] != mult[i]) return wg_decline(L, "a requantization multiplier that is not an f32");
    uint32_t *w = malloc(sizeof *w * 4 * n);
    if (!w) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        int ex = 0;
        double fr = frexp(mult[i], &ex);
        w[4 * i] = (uint32_t)ldexp(fr, 24), w[4 * i + 1] = 0;
        w[4 * i + 2] = (uint32_t)(int32_t)(mult[i] == 0 ? 0 : ex - 24);
        w[4 * i + 3] = bias ? (uint32_t)bias[i / per_bias] : 0;
    }
    *off = wg_table(L, w, 4 * (size_t)n);
    free(w);
    return RLX_OK;
}

/* The overrides that qgemm_body.wgsl and qdwconv.wgsl share: a's and b's
 * types and zero points, the requantization and y's type. */
static void spec_q8(wg_lower *L, wg_dispatch *d, const wg_qgemm *q) {
    wg_spec(L, d, "A_SIGNED", q->a_signed);
    wg_spec(L, d, "B_SIGNED", q->b_signed);
    wg_spec(L, d, "HAS_ZA", q->za >= 0);
    wg_spec(L, d, "HAS_ZB", q->zb >= 0);
    wg_spec(L, d, "REQUANT", q->mult != NULL);
    wg_spec(L, d, "Y_SIGNED", q->y_signed);
}

/* A workgroup tile of the integer GEMM (qgemm_wg.wgsl, MODE 1): tm x tn
 * outputs, rm rows x 4 columns per invocation, (tn / 4) (tm / rm) <= 256
 * invocations. */
typedef struct qtile {
    uint32_t tm, tn, rm;
} qtile;

/* rm for a tm x tn tile: at least 2 rows per invocation (each b word
 * loaded from workgroup memory serves two rows), more where 256
 * invocations would not cover the tile, at most 8. */
static uint32_t qtile_rm(uint32_t tm, uint32_t tn) {
    uint32_t rm = tm * (tn / 4) / 256;
    if (rm < 2) rm = 2;
    return rm > 8 ? 8 : rm > tm ? tm : rm;
}

/* The tile rule (gpu.qgemm_tile auto or wg): rows tm the smallest of 16,
 * 32, 64 that holds m (a convolution's output channels per group: no tile
 * much taller than m); columns tn the widest of 128, 64, 32 whose grid
 * (batch items x row tiles x column tiles) has at least `target`
 * workgroups (gpu.gemm_target_wg: enough to fill a large GPU), else 32;
 * where even that grid has fewer than target / 2 workgroups, tm halves
 * (down to 16) for more of them. Per output the gathered b words cost
 * 1 / tm and a's words 1 / tn, so narrower columns come first. */
static void qtile_rule(uint32_t m, uint32_t n, uint64_t batch, uint64_t target, qtile *t) {
    uint32_t tm = m <= 16 ? 16 : m <= 32 ? 32 : 64, tn = 32;
    static const uint32_t k_tn[] = { 128, 64 };
    for (int i = 0; i < 2 && tn == 32; i++)
        if (batch * ((m + tm - 1) / tm) * ((n + k_tn[i] - 1) / k_tn[i]) >= target) tn = k_tn[i];
    while (tn == 32 && tm > 16 && batch * ((m + tm - 1) / tm) * ((n + 31) / 32) < target / 2) tm /= 2;
    t->tm = tm, t->tn = tn, t->rm = qtile_rm(tm, tn);
}

/* "RxC" of gpu.qgemm_tile=wgRxC (the values the option allows). */
static void qtile_forced(const char *s, qtile *t) {
    char *e;
    t->tm = (uint32_t)strtoul(s, &e, 10);
    t->tn = (uint32_t)strtoul(e + 1, NULL, 10);
    t->rm = qtile_rm(t->tm, t->tn);
}

/* qgemm_body.wgsl's Params after the bindings' offsets: threads (MODE 0
 * and 3: invocations; 1 and 2: batch items), nsplit slices of ks_words
 * k words (1 and the whole k without split-K). */
static void qgemm_params(wg_lower *L, wg_dispatch *d, const wg_qgemm *q, uint64_t total, uint64_t threads,
                         uint64_t nsplit, uint64_t ks_words) {
    bool requant = q->mult != NULL;
    WG_P(L, d, wg_pu("m", q->m), wg_pu("n", q->n), wg_pu("k", q->k), wg_pu("total", total), wg_pu("threads", threads),
         wg_pu("za_step", q->za_step), wg_pu("zb_step", q->zb_step),
         wg_pu("t_row", requant && q->mult_rows > 1 ? 4 * q->mult_cols : 0),
         wg_pu("t_col", requant && q->mult_cols > 1 ? 4 : 0), wg_pi("y_zp", q->y_zp), wg_pu("nsplit", nsplit),
         wg_pu("ks_words", ks_words));
    wg_p_align16(L, d);
    /* batch: the dims, A's and B's strides and the row offsets, a vec4 each */
    int pad = 4 - q->nb;
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, "batch", j < pad ? 1 : q->bd[j - pad]);
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, "batch", j < pad ? 0 : q->a_bstride[j - pad]);
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, "batch", j < pad ? 0 : q->b_bstride[j - pad]);
    for (int j = 0; j < 4; j++) wg_p_u32(L, d, "batch", j < pad ? 0 : q->row_off[j - pad]);
    for (int j = 0; j < 12; j++) wg_p_u32(L, d, "conv", q->conv ? q->conv_geom[j] : 0);
}

/* A dispatch of kernel `name` (its embedded source, or src, a generated
 * one that this frees) with the QDQ chain epi (NULL: none) in place of its
 * `//!include qepi` line. */
static rlx_status emit_epi(wg_lower *L, const char *name, char *src, const wg_qepi *epi, wg_dispatch **d) {
    if (!epi && !src) {
        *d = wg_emit(L, name);
        return RLX_OK;
    }
    char *full = epi ? wg_qepi_source(epi, src ? src : wg_wgsl_source(name)) : src;
    if (full) *d = wg_emit_source(L, name, full);
    if (full != src) free(full);
    free(src);
    if (!full) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory generating the integer GEMM", rlx_node_desc(L->n));
    return RLX_OK;
}

rlx_status wg_emit_qgemm(wg_lower *L, const wg_qgemm *q) {
    uint64_t batch = 1;
    for (int i = 0; i < q->nb; i++) batch *= q->bd[i];
    uint64_t total = batch * q->m * q->n;
    if (total == 0) return RLX_OK;
    if (total != wg_numel(&L->g->values[q->y])) return wg_decline(L, "output size differs from the product's");
    if (total >= LIM31 || (uint64_t)q->m * q->k * batch >= LIM31 || (uint64_t)q->k * q->n * batch >= LIM31)
        return wg_decline(L, "too large for 32-bit indexing");
    bool requant = q->mult != NULL;
    uint64_t t_off = 0;
    uint32_t t_words = requant ? 4 * q->mult_rows * q->mult_cols : 0;
    if (requant) RLX_TRY(requant_table(L, q->mult, q->bias, q->mult_rows * q->mult_cols, q->mult_cols, &t_off));
    /* The variant (option gpu.qgemm_tile; each gives the same bits):
     * "wg": workgroup tiles through workgroup memory (qgemm_wg.wgsl, MODE
     * 1), their shape by qtile_rule ("wgRxC" forces R x C); "gemv": k split
     * across a workgroup per 4 x 4 outputs (MODE 2); "reg": blocks of 4 x 4
     * outputs per invocation where n % 4 == 0 (each block's 8-bit outputs
     * then fill whole words; an unpacked b's four columns of one k are one
     * word when its batch strides are whole words too) and m >= 4; "0": one
     * output (or one word of four 8-bit outputs) per invocation. The
     * workgroup variants need n % 4 == 0 for an 8-bit y (whole words per
     * invocation), else "reg" or "0" runs. "gen": the int8 instance of the
     * generated tiled GEMM (gemm_gen.c, WG_GEMM_ELEM_Q8; lower_gemm.c's tile
     * rule), as wg needs words. auto: gemv for m <= 4, gen for m >= 16
     * (but 64 x 64 workgroup tiles for a MatMul of at least 2^24 outputs:
     * on the H100, BENCHMARKS.md, they beat gen's f32-rule tile only
     * there, 1.2x at 4096 x 4096), wg for 8 <= m < 16, else reg.
     * "legacy": auto's choice without the wg tiles for 8 <= m < 16 (nor
     * the 64 x 64 tiles for large products), the convolution's taps gathered byte by byte
     * (QGATHER 0) and the depthwise kernel one output at a time (the
     * kernels before the tile rule), kept to time against. An 8-bit y
     * whose rows do not fill whole words (n % 4 != 0: ResNet-50's 7 x 7
     * stage) still runs gen, in two passes: its i32 sums into the scratch,
     * then MODE 4 requantizes four consecutive outputs of y per word (the
     * split-K reduce's flat form). */
    const char *opt = L->caps->cfg && L->caps->cfg->gpu_qgemm_tile ? L->caps->cfg->gpu_qgemm_tile : "auto";
    bool legacy = strcmp(opt, "legacy") == 0, au = strcmp(opt, "auto") == 0 || legacy;
    /* (flat: the sums, 4 bytes each, must fit the one scratch binding;
     * split-K's count keeps its slices within it too) */
    bool words = !requant || q->n % 4 == 0, flat = !words && !legacy && total * 4 <= L->caps->max_binding;
    bool big = !legacy && !q->conv && total >= ((uint64_t)1 << 24);
    bool gen = (words || flat) && (strcmp(opt, "gen") == 0 || (au && q->m >= 16 && !big));
    qtile qt = { 0 };
    bool forced = opt[0] == 'w' && opt[1] == 'g' && opt[2] >= '0' && opt[2] <= '9';
    if (forced) qtile_forced(opt + 2, &qt);
    else if (au && big && q->m >= 16) qtile_forced("64x64", &qt), forced = true;
    int mode = gen                                                             ? 1
               : !words                                                        ? 0
               : strcmp(opt, "wg") == 0 || forced || (au && !legacy && q->m >= 8) ? 1
               : strcmp(opt, "gemv") == 0 || (au && q->m <= 4)               ? 2
                                                                               : 0;
    if (mode == 1 && !gen && !forced)
        qtile_rule(q->m, q->n, batch, L->caps->cfg ? (uint64_t)L->caps->cfg->gemm_target_wg : 256, &qt);
    bool tile = mode == 0 && q->n % 4 == 0 && q->m >= 4 && strcmp(opt, "0") != 0;
    for (int j = 0; j < q->nb && !q->b_packed && !q->conv; j++) tile &= q->b_bstride[j] % 4 == 0;
    uint64_t threads = tile ? batch * ((q->m + 3) / 4) * (q->n / 4) : requant ? (total + 3) / 4 : total;
    /* MODE 1 and 2: Params' threads is the batch count, the grid one
     * workgroup per (batch item, block) */
    uint32_t rows = q->m < 4 ? q->m : 4; /* MODE 2: rows per workgroup */
    uint64_t bm = mode == 1 ? qt.tm : rows, bn = mode == 1 ? qt.tn : 4;
    wg_gemm_kernel kc = { .elem = WG_GEMM_ELEM_Q8, .dot4 = L->caps->dot4 };
    if (gen) {
        if (!wg_gemm_auto_tile(L->caps, q->m, q->n, batch, &kc))
            return wg_decline(L, "gpu.gemm_tile=%s does not fit the device (TM, TN 4 or 8; at most %u invocations, "
                              "%u bytes of workgroup memory)", L->caps->cfg->gemm_tile, L->caps->max_wg_invocations,
                              L->caps->max_wg_storage ? L->caps->max_wg_storage : 16384);
        bm = (uint64_t)kc.wgy * kc.tm, bn = (uint64_t)kc.wgx * kc.tn;
    }
    uint64_t groups = batch * ((q->m + bm - 1) / bm) * ((q->n + bn - 1) / bn);
    if (mode) threads = batch;
    /* split-K of the generated kernel (the f32 GEMM's rule: a small grid
     * and a long k): the slices' i32 partial sums in the scratch, added by
     * a second dispatch (MODE 3); wrapping sums, the same bits */
    uint64_t kw = (q->k + 3) / 4, nsplit = 1, ks_words = kw;
    if (gen && !legacy && kw > 2 * kc.bk) {
        uint64_t want = wg_gemm_split_count(L->caps, q->m, q->n, q->k, batch, groups, kw / (2 * kc.bk));
        if (want > 1) {
            ks_words = wg_cdiv(wg_cdiv(kw, want), kc.bk) * kc.bk;
            nsplit = wg_cdiv(kw, ks_words);
        }
    }
    /* two passes: split-K, or an 8-bit y of rows that do not fill words */
    bool two = gen && (nsplit > 1 || !words);
    kc.splitk = two;
    wg_dispatch *d;
    const wg_qepi *epi = q->epi && q->epi->src ? q->epi : NULL;
    const char *kname = L->caps->dot4 ? "qgemm_dp4" : "qgemm";
    if (gen) {
        char *src = wg_gen_gemm_source(&kc);
        RLX_TRY(emit_epi(L, "qgemm_gen", src, two ? NULL : epi, &d));
    } else {
        RLX_TRY(emit_epi(L, kname, NULL, epi, &d));
        wg_spec(L, d, "TILE", tile);
        wg_spec(L, d, "MODE", mode);
    }
    if (mode == 1 && !gen) {
        uint32_t tx = qt.tn / 4, ty = qt.tm / qt.rm;
        wg_spec(L, d, "QWG", tx * ty);
        wg_spec(L, d, "QBK", 8);
        wg_spec(L, d, "QTM", qt.tm);
        wg_spec(L, d, "QTN", qt.tn);
        wg_spec(L, d, "QRM", qt.rm);
        wg_spec(L, d, "QTX", tx);
        wg_spec(L, d, "QTY", ty);
        wg_spec(L, d, "QA_WORDS", qt.tm * 8);
        wg_spec(L, d, "QB_VECS", tx * 8);
    }
    if (mode == 2) {
        wg_spec(L, d, "QR_VECS", 4 * 64);
        wg_spec(L, d, "QROWS", rows);
    }
    spec_q8(L, d, q);
    wg_spec(L, d, "B_PACKED", q->b_packed != NULL);
    wg_spec(L, d, "CONV", q->conv);
    if (q->conv) {
        wg_spec(L, d, "QKH", q->conv_kh);
        wg_spec(L, d, "QKW", q->conv_kw);
        wg_spec(L, d, "QGATHER", !legacy);
    }
    wg_bind_value(L, d, "a_off", q->a);
    if (q->b_packed)
        wg_bind(L, d, "b_off", WG_TABLE, wg_table(L, q->b_packed, (size_t)q->b_packed_words), q->b_packed_words);
    else wg_bind_value(L, d, "b_off", q->b);
    wg_bind_or(L, d, "za_off", q->za, q->a);
    wg_bind_or(L, d, "zb_off", q->zb, q->a);
    if (two) {
        wg_scratch(L, nsplit * total);
        wg_bind(L, d, "y_off", WG_SCRATCH, 0, nsplit * total);
    } else {
        wg_bind_value(L, d, "y_off", q->y);
    }
    if (requant) wg_bind(L, d, "t_off", WG_TABLE, t_off, t_words);
    else wg_bind(L, d, "t_off", q->a, 0, 1);
    qgemm_params(L, d, q, total, threads, nsplit, ks_words);
    if (epi && !two) wg_qepi_write(L, d, epi);
    RLX_TRY(mode ? wg_grid_groups(L, d, groups * nsplit) : wg_grid_1d(L, d, threads));
    if (!two) return RLX_OK;
    /* the second pass: A the partial sums, B unused */
    wg_dispatch *r;
    RLX_TRY(emit_epi(L, kname, NULL, epi, &r));
    wg_spec(L, r, "MODE", words ? 3 : 4);
    spec_q8(L, r, q);
    wg_bind(L, r, "a_off", WG_SCRATCH, 0, nsplit * total);
    wg_bind(L, r, "b_off", WG_SCRATCH, 0, 1);
    wg_bind_or(L, r, "za_off", q->za, q->a);
    wg_bind_or(L, r, "zb_off", q->zb, q->a);
    wg_bind_value(L, r, "y_off", q->y);
    if (requant) wg_bind(L, r, "t_off", WG_TABLE, t_off, t_words);
    else wg_bind(L, r, "t_off", q->a, 0, 1);
    /* MODE 3: four columns of one row per invocation; MODE 4: one word of y */
    uint64_t inv = words ? batch * q->m * ((q->n + 3) / 4) : (total + 3) / 4;
    qgemm_params(L, r, q, total, inv, nsplit, ks_words);
    if (epi) wg_qepi_write(L, r, epi);
    return wg_grid_1d(L, r, inv);
}

/* The Params words and storage bindings of the largest integer kernel
 * (qgemm_body.wgsl: 18 scalars padded to 20, batch 16, conv 12; A, B, ZA,
 * ZB, Y, TB): a QDQ chain's fields and bindings come after them. */
#define QGEMM_PARAM_WORDS 48
#define QGEMM_BINDINGS 6

/* The product's own output type: y's, or with a QDQ chain (QLinearMatMul
 * or QLinearConv with internal inputs 9..: y is the chain's output)
 * y_zero_point's; *chain says which. Declines a chain without an 8-bit
 * y_zero_point. */
static rlx_status own_y_dtype(wg_lower *L, bool ql, const rlx_value *y, bool *chain, rlx_dtype *ydt) {
    *chain = ql && L->n->n_in > RLX_QEPI_FIRST;
    const rlx_value *zy = *chain ? wg_in(L, 7) : NULL;
    if (*chain && (!zy || !is_q8(zy))) return wg_decline(L, "a QDQ chain without y_zero_point");
    *ydt = *chain ? zy->dtype : y->dtype;
    return RLX_OK;
}

/* The step of a zero point or scale along the operand's row (a) or column
 * (b) dim: 0 (one value) or 1; false when it has batch dims or another
 * layout (rlx_quant_mm_param's strides). */
static rlx_status param_step(wg_lower *L, const char *what, bool per_row, const rlx_value *op, const rlx_value *p,
                             uint32_t *step) {
    int64_t st[RLX_MAX_RANK];
    RLX_TRY(rlx_quant_mm_param(L->n, what, per_row, op->dims, op->rank, p->dims, p->rank, st));
    int r = op->rank < 2 ? 2 : op->rank;
    for (int i = 0; i < r - 2; i++)
        if (st[i] != 0) return wg_decline(L, "%s with batch dims", what);
    int64_t s = st[per_row ? r - 2 : r - 1];
    if (s != 0 && s != 1) return wg_decline(L, "%s layout", what);
    *step = (uint32_t)s;
    return RLX_OK;
}

/* MatMulInteger-10 (a, b, a_zero_point?, b_zero_point?) -> i32 and
 * QLinearMatMul-10/21 (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
static rlx_status lower_qmatmul(wg_lower *L) {
    bool ql = L->n->op == RLX_OP_QLinearMatMul;
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, ql ? 3 : 1), *y = wg_out(L, 0);
    const rlx_value *za = wg_in(L, 2), *zb = wg_in(L, ql ? 5 : 3);
    int za_id = za ? wg_in_id(L, 2) : -1, zb_id = zb ? wg_in_id(L, ql ? 5 : 3) : -1;
    if (!is_q8(a) || !is_q8(b)) return wg_decline(L, "operands must be int8 or uint8");
    if ((za && za->dtype != a->dtype) || (zb && zb->dtype != b->dtype))
        return wg_decline(L, "zero point of another type than its operand");
    if ((za && !rlx_value_is_static(za)) || (zb && !rlx_value_is_static(zb))) return wg_decline(L, "dynamic shape");
    if (!y || !rlx_value_is_static(y)) return wg_decline(L, "dynamic shape");
    if (ql ? (y->dtype != RLX_DTYPE_U8 && y->dtype != RLX_DTYPE_I8) : y->dtype != RLX_DTYPE_I32)
        return wg_decline(L, "output dtype %s", rlx_dtype_name(y->dtype));
    if (a->rank < 1 || b->rank < 1) return wg_decline(L, "matmul of a scalar");
    bool chain;
    rlx_dtype ydt;
    RLX_TRY(own_y_dtype(L, ql, y, &chain, &ydt));
    wg_qgemm q;
    memset(&q, 0, sizeof q);
    q.a = wg_in_id(L, 0), q.b = wg_in_id(L, ql ? 3 : 1), q.y = wg_out_id(L, 0);
    q.za = za_id, q.zb = zb_id;
    q.a_signed = a->dtype == RLX_DTYPE_I8, q.b_signed = b->dtype == RLX_DTYPE_I8, q.y_signed = ydt == RLX_DTYPE_I8;
    /* numpy.matmul promotion */
    int64_t ad[RLX_MAX_RANK], bdm[RLX_MAX_RANK];
    int ar = a->rank < 2 ? 2 : a->rank, br = b->rank < 2 ? 2 : b->rank;
    if (a->rank == 1) ad[0] = 1, ad[1] = a->dims[0];
    else memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
    if (b->rank == 1) bdm[0] = b->dims[0], bdm[1] = 1;
    else memcpy(bdm, b->dims, sizeof(int64_t) * (size_t)br);
    int64_t M = ad[ar - 2], K = ad[ar - 1], N = bdm[br - 1];
    if (bdm[br - 2] != K) return wg_decline(L, "inner dims differ");
    if ((uint64_t)M >= LIM31 || (uint64_t)N >= LIM31 || (uint64_t)K >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    q.m = (uint32_t)M, q.n = (uint32_t)N, q.k = (uint32_t)K;
    int nb = (ar > br ? ar : br) - 2;
    if (nb > 4) return wg_decline(L, "more than 4 batch dims");
    q.nb = nb;
    uint64_t as = (uint64_t)(M * K), bs = (uint64_t)(K * N);
    for (int j = nb - 1; j >= 0; j--) {
        int ia = j - (nb - (ar - 2)), ib = j - (nb - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bdm[ib] : 1;
        if (da != db && da != 1 && db != 1) return wg_decline(L, "batch dims do not broadcast");
        q.bd[j] = (uint32_t)(da == 1 ? db : da);
        q.a_bstride[j] = da == 1 ? 0 : (uint32_t)as;
        q.b_bstride[j] = db == 1 ? 0 : (uint32_t)bs;
        as *= (uint64_t)da, bs *= (uint64_t)db;
        if (as >= LIM31 || bs >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    }
    if (za) RLX_TRY(param_step(L, "a_zero_point", true, a, za, &q.za_step));
    if (zb) RLX_TRY(param_step(L, "b_zero_point", false, b, zb, &q.zb_step));
    if (za && wg_numel(za) < 1) return wg_decline(L, "empty zero point");
    if (zb && wg_numel(zb) < 1) return wg_decline(L, "empty zero point");
    double *mult = NULL;
    if (ql) {
        const rlx_value *sa = wg_in(L, 1), *sb = wg_in(L, 4), *sy = wg_in(L, 6), *zy = wg_in(L, 7);
        const rlx_value *sc[3] = { sa, sb, sy };
        for (int i = 0; i < 3; i++)
            if (!sc[i] || !sc[i]->konst || sc[i]->dtype != RLX_DTYPE_F32 || rlx_value_numel(sc[i]) < 1)
                return wg_decline(L, "scales must be f32 constants");
        if (!zy || !zy->konst || rlx_value_numel(zy) < 1 || zy->dtype != ydt)
            return wg_decline(L, "y_zero_point must be a constant of y's type");
        uint32_t sa_step, sb_step;
        RLX_TRY(param_step(L, "a_scale", true, a, sa, &sa_step));
        RLX_TRY(param_step(L, "b_scale", false, b, sb, &sb_step));
        q.mult_rows = sa_step ? q.m : 1, q.mult_cols = sb_step ? q.n : 1;
        if ((uint64_t)q.mult_rows * q.mult_cols * 4 >= LIM31) return wg_decline(L, "too many scales");
        mult = malloc(sizeof *mult * q.mult_rows * q.mult_cols);
        if (!mult) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        double syv = rlx_tensor_get_f64(sy->konst, 0);
        for (uint32_t r = 0; r < q.mult_rows; r++)
            for (uint32_t c = 0; c < q.mult_cols; c++) {
                /* the CPU's multiplier (an f32: rlx_quant_mult) */
                double m = rlx_quant_mult(rlx_tensor_get_f64(sa->konst, r), rlx_tensor_get_f64(sb->konst, c), syv);
                if (!(m >= 0) || isinf(m)) {
                    free(mult);
                    return wg_decline(L, "a_scale * b_scale / y_scale is not finite and >= 0");
                }
                mult[r * q.mult_cols + c] = m;
            }
        q.mult = mult;
        q.y_zp = (int32_t)rlx_tensor_get_i64(zy->konst, 0);
    }
    /* a constant b: packed once, k-contiguous per column (one word per
     * four k instead of four byte loads), within one binding */
    uint32_t *packed = NULL;
    uint64_t kw = (q.k + 3) / 4, kn = (uint64_t)q.k * q.n;
    uint64_t nbatch_b = kn ? rlx_value_numel(b) / kn : 0;
    if (b->konst && kn && wg_window_fits(L, nbatch_b * q.n * kw)) {
        q.b_packed_words = nbatch_b * q.n * kw;
        packed = calloc((size_t)q.b_packed_words, sizeof *packed);
        if (!packed) {
            free(mult);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
        const uint8_t *pb = b->konst->data;
        uint8_t flip = q.b_signed ? 0 : 0x80;
        for (uint64_t t = 0; t < nbatch_b; t++)
            for (uint64_t c = 0; c < q.n; c++)
                for (uint64_t k = 0; k < q.k; k++)
                    packed[(t * q.n + c) * kw + k / 4] |= (uint32_t)(uint8_t)(pb[(t * q.k + k) * q.n + c] ^ flip)
                                                          << (8 * (k % 4));
        for (int j = 0; j < q.nb; j++)
            if (q.b_bstride[j]) q.b_bstride[j] = (uint32_t)(q.b_bstride[j] / kn * q.n * kw);
        q.b_packed = packed;
    }
    wg_qepi epi = { 0 };
    rlx_status st = chain ? wg_qepi_make(L, QGEMM_PARAM_WORDS, QGEMM_BINDINGS, &epi) : RLX_OK;
    q.epi = &epi;
    if (st == RLX_OK) st = wg_emit_qgemm(L, &q);
    wg_qepi_free(&epi);
    free(packed);
    free(mult);
    return st;
}

/* The parameters of one constant element (scalar or [M], rank <= 1). */
static bool per_channel(const rlx_value *v, int64_t M) {
    size_t n = rlx_value_numel(v);
    return n == 1 || (v->rank == 1 && (int64_t)n == M);
}

/* One input channel per group (depthwise, any channel multiplier):
 * kernels/qdwconv_body.wgsl sums each output's taps directly, with q's
 * operands, zero points and requantization (a: w, b: x): qdwconv_dp4
 * (QDW_ROW 2: a kernel row's taps per dot4I8Packed) where the device's
 * self-test passed (caps.dot4), else qdwconv (QDW_ROW 1: a product per
 * tap; the dot product written out would cost more than that). */
static rlx_status emit_qdwconv(wg_lower *L, const wg_qgemm *q, const rlx_conv_geom *g, uint64_t in_h, uint64_t in_w,
                               uint64_t out_h, uint64_t out_w, uint64_t k_h, uint64_t k_w, uint64_t s_h, uint64_t s_w,
                               uint64_t p_h, uint64_t p_w, uint64_t d_h, uint64_t d_w) {
    bool requant = q->mult != NULL;
    uint64_t total = (uint64_t)g->n * (uint64_t)g->c_out * out_h * out_w;
    if (total >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    uint64_t t_off = 0;
    if (requant) RLX_TRY(requant_table(L, q->mult, q->bias, q->mult_rows, 1, &t_off));
    /* gpu.qgemm_tile=legacy: each output alone (QDW_ROW 0), i32 outputs one
     * per invocation, as before the four-output rows */
    const char *opt = L->caps->cfg && L->caps->cfg->gpu_qgemm_tile ? L->caps->cfg->gpu_qgemm_tile : "auto";
    bool row = strcmp(opt, "legacy") != 0;
    uint64_t threads = requant || row ? (total + 3) / 4 : total;
    bool dot4 = row && L->caps->dot4;
    wg_dispatch *d;
    RLX_TRY(emit_epi(L, dot4 ? "qdwconv_dp4" : "qdwconv", NULL, q->epi && q->epi->src ? q->epi : NULL, &d));
    spec_q8(L, d, q);
    wg_spec(L, d, "QDW_ROW", dot4 ? 2 : row ? 1 : 0);
    wg_spec(L, d, "QDKH", (uint32_t)k_h);
    wg_spec(L, d, "QDKW", (uint32_t)k_w);
    int x = wg_in_id(L, 0);
    wg_bind_value(L, d, "x_off", x);
    wg_bind_value(L, d, "w_off", q->a);
    wg_bind_or(L, d, "zx_off", q->zb, x);
    wg_bind_or(L, d, "zw_off", q->za, x);
    wg_bind_value(L, d, "y_off", q->y);
    if (requant) wg_bind(L, d, "t_off", WG_TABLE, t_off, 4 * (uint64_t)q->mult_rows);
    else wg_bind(L, d, "t_off", x, 0, 1);
    WG_P(L, d, wg_pu("c_out", g->c_out), wg_pu("mult", g->c_out / g->group), wg_pu("in_h", in_h), wg_pu("in_w", in_w),
         wg_pu("out_h", out_h), wg_pu("out_w", out_w), wg_pu("k_h", k_h), wg_pu("k_w", k_w), wg_pu("s_h", s_h),
         wg_pu("s_w", s_w), wg_pu("p_h", p_h), wg_pu("p_w", p_w), wg_pu("dil_h", d_h), wg_pu("dil_w", d_w),
         wg_pu("zw_step", q->za_step), wg_pu("total", total), wg_pu("threads", threads), wg_pi("y_zp", q->y_zp));
    if (q->epi && q->epi->src) wg_qepi_write(L, d, q->epi);
    return wg_grid_1d(L, d, threads);
}

/* ConvInteger-10 (x, w, x_zero_point?, w_zero_point?) -> i32 and
 * QLinearConv-10 (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?):
 * one dispatch, the integer GEMM w_g [cout_g, K] x col [K, pixels] per
 * (image, group) whose b operand is the implicit im2col of x (wg_qgemm's
 * conv: the B loads gather the taps, a padding tap x's zero point; no
 * column buffer), writing y (NCHW), w's zero point, scale and the bias per
 * output channel (rows of a, row_off per group), the requantization in the
 * same kernel; a pointwise convolution (1x1, stride 1, unpadded): the GEMM
 * on x itself as a plain b; one input channel per group: qdwconv.wgsl
 * (emit_qdwconv) instead. The CPU reference is conv_run (cpu_quant.c):
 * mult = rlx_quant_mult(x_scale, w_scale[m], y_scale), an f32. */
static rlx_status lower_qconv(wg_lower *L) {
    bool ql = L->n->op == RLX_OP_QLinearConv;
    const rlx_value *x = wg_in(L, 0), *w = wg_in(L, ql ? 3 : 1), *y = wg_out(L, 0);
    const rlx_value *zx = wg_in(L, 2), *zw = wg_in(L, ql ? 5 : 3);
    if (!is_q8(x) || !is_q8(w)) return wg_decline(L, "x and w must be int8 or uint8");
    if (!y || !rlx_value_is_static(y) || (zx && !rlx_value_is_static(zx)) || (zw && !rlx_value_is_static(zw)))
        return wg_decline(L, "dynamic shape");
    bool chain;
    rlx_dtype ydt;
    RLX_TRY(own_y_dtype(L, ql, y, &chain, &ydt));
    if (ql ? (y->dtype != RLX_DTYPE_U8 && y->dtype != RLX_DTYPE_I8) : y->dtype != RLX_DTYPE_I32)
        return wg_decline(L, "output dtype %s", rlx_dtype_name(y->dtype));
    if ((zx && zx->dtype != x->dtype) || (zw && zw->dtype != w->dtype))
        return wg_decline(L, "zero point of another type than its operand");
    rlx_conv_geom g;
    if (rlx_conv_geom_resolve(L->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g) != RLX_OK)
        return wg_decline(L, "geometry does not resolve");
    if (g.nsp > 2) return wg_decline(L, "3-D convolution");
    if (g.group < 1 || g.c_in % g.group || g.c_out % g.group) return wg_decline(L, "bad groups");
    int64_t M = g.c_out;
    if (zx && wg_numel(zx) != 1) return wg_decline(L, "x_zero_point must have one element");
    if (zw && !per_channel(zw, M)) return wg_decline(L, "w_zero_point must have 1 or %lld elements", (long long)M);
    if (wg_numel(y) == 0) return RLX_OK;
    /* 2-D geometry (a 1-D convolution: unit height) */
    int o = g.nsp == 2 ? 0 : -1;
    uint64_t in_h = o ? 1 : (uint64_t)g.in[0], in_w = (uint64_t)g.in[o + 1];
    uint64_t out_h = o ? 1 : (uint64_t)g.out[0], out_w = (uint64_t)g.out[o + 1];
    uint64_t k_h = o ? 1 : (uint64_t)g.k[0], k_w = (uint64_t)g.k[o + 1];
    uint64_t s_h = o ? 1 : (uint64_t)g.stride[0], s_w = (uint64_t)g.stride[o + 1];
    uint64_t d_h = o ? 1 : (uint64_t)g.dil[0], d_w = (uint64_t)g.dil[o + 1];
    uint64_t p_h = o ? 0 : (uint64_t)g.pad_begin[0], p_w = (uint64_t)g.pad_begin[o + 1];
    uint64_t G = (uint64_t)g.group, cin_g = (uint64_t)g.c_in / G, cout_g = (uint64_t)M / G;
    uint64_t K = cin_g * k_h * k_w, P = out_h * out_w;
    uint64_t big = (uint64_t)1 << 30;
    if (in_h >= big || in_w >= big || k_h * d_h >= big || k_w * d_w >= big || s_h >= big || s_w >= big ||
        p_h >= big || p_w >= big || K >= LIM31 || out_w * s_w >= big || out_h * s_h >= big ||
        wg_numel(x) >= LIM31 || wg_numel(w) >= LIM31)
        return wg_decline(L, "too large for 32-bit indexing");
    wg_qgemm q;
    memset(&q, 0, sizeof q);
    q.a = wg_in_id(L, ql ? 3 : 1), q.y = wg_out_id(L, 0);
    q.za = zw ? wg_in_id(L, ql ? 5 : 3) : -1, q.zb = zx ? wg_in_id(L, 2) : -1;
    q.za_step = zw && wg_numel(zw) > 1 ? 1 : 0;
    q.a_signed = w->dtype == RLX_DTYPE_I8, q.b_signed = x->dtype == RLX_DTYPE_I8, q.y_signed = ydt == RLX_DTYPE_I8;
    q.m = (uint32_t)cout_g, q.n = (uint32_t)P, q.k = (uint32_t)K;
    q.nb = 2;
    q.bd[0] = (uint32_t)g.n, q.bd[1] = (uint32_t)G;
    q.a_bstride[0] = 0, q.a_bstride[1] = (uint32_t)(cout_g * K);
    q.row_off[0] = 0, q.row_off[1] = (uint32_t)cout_g;
    /* b: x, the implicit im2col, batch strides in bytes of x */
    uint64_t plane = in_h * in_w;
    q.b = wg_in_id(L, 0), q.conv = true;
    q.b_bstride[0] = (uint32_t)((uint64_t)g.c_in * plane), q.b_bstride[1] = (uint32_t)(cin_g * plane);
    q.conv_kh = (uint32_t)k_h, q.conv_kw = (uint32_t)k_w;
    const uint64_t geom[12] = { in_h, in_w, out_w, plane, s_h, s_w, p_h, p_w, d_h, d_w, 0, 0 };
    for (int i = 0; i < 12; i++) q.conv_geom[i] = (uint32_t)geom[i];
    double *mult = NULL;
    int32_t *bias = NULL;
    if (ql) {
        const rlx_value *sx = wg_in(L, 1), *sw = wg_in(L, 4), *sy = wg_in(L, 6), *zy = wg_in(L, 7), *b = wg_in(L, 8);
        const rlx_value *sc[3] = { sx, sw, sy };
        for (int i = 0; i < 3; i++)
            if (!sc[i] || !sc[i]->konst || sc[i]->dtype != RLX_DTYPE_F32 || rlx_value_numel(sc[i]) < 1)
                return wg_decline(L, "scales must be f32 constants");
        if (rlx_value_numel(sx) != 1 || rlx_value_numel(sy) != 1 || !per_channel(sw, M))
            return wg_decline(L, "x_scale and y_scale of one element, w_scale of 1 or %lld", (long long)M);
        if (!zy || !zy->konst || rlx_value_numel(zy) != 1 || zy->dtype != ydt)
            return wg_decline(L, "y_zero_point must be a constant of y's type");
        if (b && (!b->konst || b->dtype != RLX_DTYPE_I32 || (int64_t)rlx_value_numel(b) != M))
            return wg_decline(L, "B must be a constant int32 of %lld elements", (long long)M);
        q.mult_rows = (uint32_t)M, q.mult_cols = 1;
        mult = malloc(sizeof *mult * (size_t)M);
        bias = b ? malloc(sizeof *bias * (size_t)M) : NULL;
        if (!mult || (b && !bias)) {
            free(mult);
            free(bias);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
        double sxv = rlx_tensor_get_f64(sx->konst, 0), syv = rlx_tensor_get_f64(sy->konst, 0);
        size_t nsw = rlx_value_numel(sw);
        for (int64_t m = 0; m < M; m++) {
            /* the CPU's multiplier (an f32: rlx_quant_mult) */
            double v = rlx_quant_mult(sxv, rlx_tensor_get_f64(sw->konst, nsw == 1 ? 0 : (size_t)m), syv);
            if (!(v >= 0) || isinf(v)) {
                free(mult);
                free(bias);
                return wg_decline(L, "x_scale * w_scale / y_scale is not finite and >= 0");
            }
            mult[m] = v;
            if (bias) bias[m] = ((const int32_t *)b->konst->data)[m];
        }
        q.mult = mult, q.bias = bias;
        q.y_zp = (int32_t)rlx_tensor_get_i64(zy->konst, 0);
    }
    /* the chain after the largest kernel's Params and bindings (the
     * depthwise kernel's are fewer) */
    wg_qepi epi = { 0 };
    rlx_status st = chain ? wg_qepi_make(L, QGEMM_PARAM_WORDS, QGEMM_BINDINGS, &epi) : RLX_OK;
    if (st != RLX_OK) {
        free(mult);
        free(bias);
        return st;
    }
    q.epi = &epi;
    if (cin_g == 1) {
        st = emit_qdwconv(L, &q, &g, in_h, in_w, out_h, out_w, k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w);
        free(mult);
        free(bias);
        wg_qepi_free(&epi);
        return st;
    }
    /* 1x1, stride 1, no padding: the GEMM reads x itself as a plain b
     * [cin_g, pixels] per (image, group) */
    bool pointwise = k_h == 1 && k_w == 1 && s_h == 1 && s_w == 1;
    for (int i = 0; i < g.nsp; i++) pointwise &= g.pad_begin[i] == 0 && g.pad_end[i] == 0;
    if (pointwise) q.conv = false;
    st = wg_emit_qgemm(L, &q);
    free(mult);
    free(bias);
    wg_qepi_free(&epi);
    return st;
}

const wg_lower_fn wg_lowerings_qgemm[RLX_OP_COUNT] = {
    [RLX_OP_MatMulInteger] = lower_qmatmul,
    [RLX_OP_QLinearMatMul] = lower_qmatmul,
    [RLX_OP_ConvInteger] = lower_qconv,
    [RLX_OP_QLinearConv] = lower_qconv,
};
