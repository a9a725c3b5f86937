/* CPU kernel of rlx.FusedElementwise (src/ir/ops/internal_ops.h): the
 * register program runs over blocks of BLOCK output elements. Inputs are
 * gathered into register blocks at their broadcast positions (a
 * contiguous f32 input is read in place, a scalar is filled once), each
 * instruction is one loop over the block, and the last writes the output
 * (in place when it is f32). Blocks are shared out over the worker pool
 * (base/parallel.h). Every op computes as the unfused f32 kernels do: the
 * vocabulary's f32 computation (rlx_cpu_ew_f32, src/ir/ew.h).
 *
 * 8-bit operands (qin, qout: passes/fuse_qdq_ew.c) are dequantized into
 * their registers and the result quantized at the store, with the bits of
 * the DequantizeLinear and QuantizeLinear kernels (cpu_quant.c). When one
 * full-size 8-bit input is the only operand that varies along the output
 * (the others scalars) or along rows of the output (the others constant
 * on each row: per-channel operands of an NCHW tensor), the program is a
 * function of that input's byte: it runs once on the 256 bytes into a
 * table (per call, or per row), and the output is the table's entry at
 * each byte: the same values, as the program is elementwise.
 *
 * Rows along which every gathered input is constant (per-channel operands
 * of NCHW outputs: BatchNormalization + Mul + Add + Relu in DenseNet) run
 * in AVX-512 registers when the program has only copy, + - * / and Relu
 * (row_v16): the row's constants broadcast instead of filled into blocks,
 * each instruction one inline loop (no call per instruction and block),
 * the same operations per element. DenseNet-121's 62 such nodes: 7x7
 * rows of 992 channels 0.068 -> 0.034 ms, 14x14 of 512 0.058 -> 0.032 ms
 * (1 thread; BENCHMARKS.md, "CPU CNNs").
 *
 * Instructions whose operands are all constant over the call (scalar
 * inputs, constants) or, by rows, over each row (the gathered inputs too)
 * are hoisted: computed once (per row) on one element, with the same f32
 * function, and their registers hold the value (broadcast by row_v16). So
 * a cheap op that fuse_elementwise took in on a per-channel operand costs
 * what it cost as its own node, and row_v16 still applies when only the
 * hoisted instructions are outside its set: Mul(x [1,256,28,28],
 * Clip(s [1,256,1,1])) + Relu 0.040 ms as two nodes, 0.197 ms fused
 * without hoisting, 0.040 ms with it (1 thread). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "ir/ops/internal_ops.h"
#include "rlx/half.h"

#define BLOCK 256

/* How an input reaches its register: read in place, filled once, gathered
 * at its broadcast positions, or (a full-size 8-bit input) dequantized. */
enum { IN_INPLACE, IN_SCALAR, IN_GATHER, IN_Q8 };

typedef struct ew_input {
    const rlx_tensor *t;
    int kind;
    float qs, qz;             /* qs != 0: an 8-bit input, ((float)q - qz) * qs */
    int64_t st[RLX_MAX_RANK]; /* broadcast strides over the output dims */
} ew_input;

/* Tables below this many output elements (per call, or per row) cost more
 * than they save: 256 evaluations of the program each. */
#define LUT_MIN 512

static inline float load_elem(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F16: return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BF16: return rlx_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i] ? 1.0f : 0.0f;
    default: return 0.0f;
    }
}

/* Element i of input `in` as its register holds it (8-bit: dequantized as
 * DequantizeLinear's f32 kernel, the byte exact, less the zero point, times
 * the scale). */
static inline float in_elem(const ew_input *in, size_t i) {
    if (in->qs != 0) {
        float q = in->t->dtype == RLX_DTYPE_U8 ? (float)((const uint8_t *)in->t->data)[i]
                                               : (float)((const int8_t *)in->t->data)[i];
        return (q - in->qz) * in->qs;
    }
    return load_elem(in->t, i);
}

#if RLX_HAVE_AVX2_BUILD
/* dq8 in AVX-512, 16 at a time, the same f32 operations; returns how many
 * it did. */
RLX_AVX512 static size_t dq8_v16(float *d, const void *x, bool u8, size_t n, float s, float z) {
    __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(z);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)((const uint8_t *)x + i));
        __m512i v = u8 ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
        _mm512_storeu_ps(d + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(v), vz), vs));
    }
    return i;
}

/* q8_store in AVX-512, 16 at a time, the same f32 operations (the quotient,
 * rlx_ew_rint_orf's rounding by 2^23 and its selects, the zero point, the
 * clamp; the levels, integers in the type's range, converted exactly);
 * returns how many it did. */
RLX_AVX512 static size_t q8_store_v16(uint8_t *y, const float *x, size_t n, float s, float z, float lo, float hi) {
    __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(z), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    __m512 vnan = _mm512_set1_ps(lo - z), big = _mm512_set1_ps(8388608.0f);
    __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 q = _mm512_div_ps(_mm512_loadu_ps(x + i), vs);
        __m512i qi = _mm512_castps_si512(q);
        __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, qi));
        __m512 r = _mm512_sub_ps(_mm512_add_ps(a, big), big);
        r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), _mm512_and_si512(sign, qi)));
        __m512 big_or_nan = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q), q, vnan);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, big, _CMP_LT_OQ), big_or_nan, r);
        r = _mm512_add_ps(r, vz);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, vlo, _CMP_LT_OQ), r, vlo);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, vhi, _CMP_GT_OQ), r, vhi);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(r)));
    }
    return i;
}
#endif

/* Bytes x[0, n) of an 8-bit input dequantized into d (in_elem's bits). */
static void dq8(float *restrict d, const ew_input *in, size_t i0, size_t n) {
    float s = in->qs, z = in->qz;
    bool u8 = in->t->dtype == RLX_DTYPE_U8;
    size_t i = 0;
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) i = dq8_v16(d, (const uint8_t *)in->t->data + i0, u8, n, s, z);
#endif
    if (u8) {
        const uint8_t *x = (const uint8_t *)in->t->data + i0;
        for (; i < n; i++) d[i] = ((float)x[i] - z) * s;
    } else {
        const int8_t *x = (const int8_t *)in->t->data + i0;
        for (; i < n; i++) d[i] = ((float)x[i] - z) * s;
    }
}

/* QuantizeLinear's levels of x[0, n) into the u8 or i8 array y (the bits of
 * its f32 kernel: the f32 quotient rounded half to even, plus the zero
 * point, saturated; NaN: the type's minimum). */
static void q8_store(void *y, rlx_dtype dt, const float *x, size_t n, float s, float z) {
    float lo = dt == RLX_DTYPE_U8 ? 0.0f : -128.0f, hi = lo + 255.0f;
    size_t i = 0;
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) i = q8_store_v16(y, x, n, s, z, lo, hi);
#endif
    if (dt == RLX_DTYPE_U8) {
        uint8_t *restrict o = y;
        for (; i < n; i++) o[i] = (uint8_t)rlx_ew_clampf(rlx_ew_rint_orf(x[i] / s, lo - z) + z, lo, hi);
    } else {
        int8_t *restrict o = y;
        for (; i < n; i++) o[i] = (int8_t)rlx_ew_clampf(rlx_ew_rint_orf(x[i] / s, lo - z) + z, lo, hi);
    }
}

/* The element of input `in` at output element i0. */
static int64_t elem_offset(const ew_input *in, const rlx_tensor *out, size_t i0) {
    int64_t off = 0;
    for (int d = out->rank - 1; d >= 0; d--) {
        off += (int64_t)(i0 % (size_t)out->dims[d]) * in->st[d];
        i0 /= (size_t)out->dims[d];
    }
    return off;
}

/* Gathers output elements [i0, i0 + n) of input `in` into dst. */
static void gather(const ew_input *in, const rlx_tensor *out, size_t i0, size_t n, float *dst) {
    int r = out->rank;
    if (r == 0) {
        dst[0] = in_elem(in, 0);
        return;
    }
    int64_t idx[RLX_MAX_RANK];
    size_t rem = i0;
    int64_t off = 0;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = (int64_t)(rem % (size_t)out->dims[d]);
        rem /= (size_t)out->dims[d];
        off += idx[d] * in->st[d];
    }
    int64_t inner = out->dims[r - 1], s_in = in->st[r - 1];
    size_t j = 0;
    while (j < n) {
        int64_t run = inner - idx[r - 1];
        if ((size_t)run > n - j) run = (int64_t)(n - j);
        if (in->t->dtype == RLX_DTYPE_F32 && in->qs == 0) {
            const float *src = (const float *)in->t->data + off;
            if (s_in == 0) { /* the value read once, blocks of 8 stores: vector stores */
                float v = src[0];
                float *restrict dj = dst + j;
                int64_t t = 0;
                for (; t + 8 <= run; t += 8) {
                    _Pragma("GCC unroll 8") for (int64_t l = t; l < t + 8; l++) dj[l] = v;
                }
                for (; t < run; t++) dj[t] = v;
            } else {
                for (int64_t t = 0; t < run; t++) dst[j + (size_t)t] = src[t * s_in];
            }
        } else {
            for (int64_t t = 0; t < run; t++) dst[j + (size_t)t] = in_elem(in, (size_t)(off + t * s_in));
        }
        j += (size_t)run;
        off += run * s_in;
        idx[r - 1] += run;
        /* carry into the outer dims */
        for (int d = r - 1; d > 0 && idx[d] == out->dims[d]; d--) {
            off -= idx[d] * in->st[d];
            idx[d] = 0;
            idx[d - 1]++;
            off += in->st[d - 1];
        }
    }
}

/* One instruction over n elements: d = op(a, b, c), the vocabulary's f32
 * computation (as the unfused f32 kernels). */
static void exec(const rlx_ew_instr *in, float *restrict d, const float *a, const float *b, const float *c, size_t n) {
    if (in->op == RLX_EW_COPY) {
        if (d != a) memcpy(d, a, n * sizeof *d);
    } else {
        rlx_cpu_ew_f32((rlx_ew_fn)in->op, d, a, b, c, in->alpha, in->beta, n);
    }
    if (in->rnd == RLX_DTYPE_F16)
        for (size_t i = 0; i < n; i++) d[i] = rlx_f16_to_f32(rlx_f32_to_f16(d[i]));
    else if (in->rnd == RLX_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) d[i] = rlx_bf16_to_f32(rlx_f32_to_bf16(d[i]));
}

/* The work of one call, shared by the pool's threads (rlx_parallel_for
 * over blocks of BLOCK elements; each chunk has its own registers). */
typedef struct ew_job {
    const rlx_ew_prog *p;
    const ew_input *ins;
    rlx_tensor *out;
    size_t total;
    size_t inner; /* ew_rows' row length (const_rows), 0: by blocks */
    int first;    /* the rows span the output dims [first, rank) */
    bool out_f32;
    int lut; /* >= 0: the input whose byte indexes a table (global when inner is 0, else per row) */
    bool v16; /* ew_rows runs its rows by row_v16 */
    /* hoist[k]: instruction k (never the last) is constant over the call
     * (blocks: its operands scalar inputs, constants or hoisted results) or
     * over each row (rows: gathered inputs too), so it runs once (per row)
     * on one element, with the same function and bits, and its register
     * holds that value (hoist_init) */
    bool hoist[RLX_EW_MAX_INSTR];
    int n_reg;
    atomic_int oom;
} ew_job;

#define MAX_REG (RLX_EW_MAX_IN + RLX_EW_MAX_CONSTS + RLX_EW_MAX_INSTR)
#define STACK_REGS 32

/* The instructions over nb (<= BLOCK) elements of the registers rp, the
 * last into `last` (NULL: its register), but those with skip[k] (hoisted:
 * their registers filled already); returns the result. */
static const float *prog_exec(const rlx_ew_prog *p, const float **rp, float *buf, float *last, size_t nb,
                              const bool *skip) {
    for (int k = 0; k < p->n_instr; k++) {
        if (skip && skip[k]) continue;
        const rlx_ew_instr *in = &p->ins[k];
        int reg = rlx_ew_reg(p, k);
        float *d = (k == p->n_instr - 1 && last) ? last : buf + (size_t)reg * BLOCK;
        exec(in, d, rp[in->a], in->b >= 0 ? rp[in->b] : NULL, in->c >= 0 ? rp[in->c] : NULL, nb);
        rp[reg] = d;
    }
    return rp[rlx_ew_reg(p, p->n_instr - 1)];
}

/* The instructions over output elements [i0, i0 + nb) (nb <= BLOCK): the
 * in-place inputs pointed at, the gathered ones gathered unless the caller
 * filled them (`gathered`), the 8-bit ones dequantized, the last
 * instruction into the output. */
static void run_block(const ew_job *j, const float **rp, float *buf, size_t i0, size_t nb, bool gathered) {
    const rlx_ew_prog *p = j->p;
    for (int i = 0; i < p->n_in; i++) {
        if (j->ins[i].kind == IN_INPLACE) {
            rp[i] = (const float *)j->ins[i].t->data + i0;
        } else if (j->ins[i].kind == IN_Q8 || (j->ins[i].kind == IN_GATHER && !gathered)) {
            float *r = buf + (size_t)i * BLOCK;
            if (j->ins[i].kind == IN_Q8) dq8(r, &j->ins[i], i0, nb);
            else gather(&j->ins[i], j->out, i0, nb, r);
            rp[i] = r;
        }
    }
    const float *r = prog_exec(p, rp, buf, j->out_f32 ? (float *)j->out->data + i0 : NULL, nb, j->hoist);
    if (p->out_scale != 0) /* one byte per element */
        q8_store((uint8_t *)j->out->data + i0, j->out->dtype, r, nb, p->out_scale, p->out_zp);
    else if (!j->out_f32)
        for (size_t t = 0; t < nb; t++) rlx_tensor_set_f64(j->out, i0 + t, r[t]);
}

/* ---------------------------------------------------------------- tables */

/* The table of the program over the 256 bytes of input v (registers rp
 * holding the other inputs and the constants): u8 / i8 levels (qout) or
 * f32 values, by byte. */
static void lut_build(const ew_job *j, const float **rp, float *buf, void *tab) {
    const rlx_ew_prog *p = j->p;
    const ew_input *in = &j->ins[j->lut];
    float *r = buf + (size_t)j->lut * BLOCK;
    bool u8 = in->t->dtype == RLX_DTYPE_U8;
    for (int b = 0; b < 256; b++) r[b] = ((u8 ? (float)b : (float)(int8_t)(uint8_t)b) - in->qz) * in->qs;
    rp[j->lut] = r;
    const float *res = prog_exec(p, rp, buf, NULL, 256, NULL);
    if (p->out_scale != 0) q8_store(tab, j->out->dtype, res, 256, p->out_scale, p->out_zp);
    else memcpy(tab, res, 256 * sizeof(float));
}

#if RLX_HAVE_AVX2_BUILD
/* lut_apply's byte table in AVX-512 VBMI: two 128-entry permutes, the
 * byte's top bit choosing; returns how many it did. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static size_t lut8_vbmi(uint8_t *o, const uint8_t *x,
                                                                               const uint8_t *tab, size_t n) {
    __m512i t0 = _mm512_loadu_si512(tab), t1 = _mm512_loadu_si512(tab + 64);
    __m512i t2 = _mm512_loadu_si512(tab + 128), t3 = _mm512_loadu_si512(tab + 192);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i v = _mm512_loadu_si512(x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_storeu_si512(o + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
    return i;
}

/* lut_apply's f32 table by AVX-512 gathers; returns how many it did. */
RLX_AVX512 static size_t lutf_avx512(float *o, const uint8_t *x, const float *tab, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm512_storeu_ps(o + i, _mm512_i32gather_ps(v, tab, 4));
    }
    return i;
}

/* AVX-512 VBMI and BW present (checked once per process) and AVX-512 not
 * capped (rlx_cpu_isa_cap). */
static bool have_vbmi(void) {
    static atomic_int v = -1;
    int h = atomic_load_explicit(&v, memory_order_relaxed);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
        atomic_store_explicit(&v, h, memory_order_relaxed);
    }
    return h && rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512;
}
#endif

/* Output elements [i0, i0 + n) as the table's entries at the input's bytes. */
static void lut_apply(const ew_job *j, const void *tab, size_t i0, size_t n) {
    const uint8_t *x = (const uint8_t *)j->ins[j->lut].t->data + i0;
    size_t i = 0;
    if (j->p->out_scale != 0) {
        uint8_t *o = (uint8_t *)j->out->data + i0;
        const uint8_t *t = tab;
#if RLX_HAVE_AVX2_BUILD
        if (have_vbmi()) i = lut8_vbmi(o, x, t, n);
#endif
        for (; i < n; i++) o[i] = t[x[i]];
    } else {
        float *o = (float *)j->out->data + i0;
        const float *t = tab;
#if RLX_HAVE_AVX2_BUILD
        if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) i = lutf_avx512(o, x, t, n);
#endif
        for (; i < n; i++) o[i] = t[x[i]];
    }
}

typedef struct lut_job {
    const ew_job *j;
    const void *tab;
} lut_job;

static void lut_chunks(void *ctx, size_t c0, size_t c1) {
    const lut_job *l = ctx;
    size_t i0 = c0 * BLOCK, i1 = c1 * BLOCK < l->j->total ? c1 * BLOCK : l->j->total;
    lut_apply(l->j, l->tab, i0, i1 - i0);
}

/* Which instructions are hoisted (ew_job's hoist): set once per call, after
 * j->inner; none in the reference kernel. A program that is constant
 * throughout (no such output: its shape is the broadcast of the inputs)
 * keeps its last instruction. */
static void hoist_init(ew_job *j, bool reference) {
    const rlx_ew_prog *p = j->p;
    bool cst[MAX_REG];
    for (int i = 0; i < p->n_in; i++) cst[i] = j->ins[i].kind == IN_SCALAR || (j->inner && j->ins[i].kind == IN_GATHER);
    for (int c = 0; c < p->n_consts; c++) cst[p->n_in + c] = true;
    for (int k = 0; k < p->n_instr; k++) {
        const rlx_ew_instr *in = &p->ins[k];
        bool h = !reference && k < p->n_instr - 1 && cst[in->a] && (in->b < 0 || cst[in->b]) && (in->c < 0 || cst[in->c]);
        j->hoist[k] = h;
        cst[rlx_ew_reg(p, k)] = h;
    }
}

/* The hoisted instructions' values into v (indexed by register), from the
 * values of the constant registers in v: the scalar inputs, the constants
 * and (rows) the row's gathered values. The same f32 computation as a
 * block's (rlx_ew_f32, the rows' scalar definitions, whose vector forms
 * give the same bits; exec's rounding). */
static void hoist_eval(const ew_job *j, float *v) {
    const rlx_ew_prog *p = j->p;
    for (int k = 0; k < p->n_instr; k++) {
        if (!j->hoist[k]) continue;
        const rlx_ew_instr *in = &p->ins[k];
        float x = v[in->a], y = in->b >= 0 ? v[in->b] : 0.0f, c = in->c >= 0 ? v[in->c] : 0.0f;
        float r = in->op == RLX_EW_COPY ? x : rlx_ew_f32((rlx_ew_fn)in->op, x, y, c, in->alpha, in->beta);
        if (in->rnd == RLX_DTYPE_F16) r = rlx_f16_to_f32(rlx_f32_to_f16(r));
        else if (in->rnd == RLX_DTYPE_BF16) r = rlx_bf16_to_f32(rlx_f32_to_bf16(r));
        v[rlx_ew_reg(p, k)] = r;
    }
}

/* Fills the hoisted instructions' registers (n elements each) with their
 * values in v. */
static void hoist_fill(const ew_job *j, const float *v, float *buf, const float **rp, size_t n) {
    const rlx_ew_prog *p = j->p;
    for (int k = 0; k < p->n_instr; k++) {
        if (!j->hoist[k]) continue;
        int reg = rlx_ew_reg(p, k);
        float *restrict r = buf + (size_t)reg * BLOCK, x = v[reg];
        for (size_t t = 0; t < n; t++) r[t] = x;
        rp[reg] = r;
    }
}

/* A chunk's registers: the scalar inputs and the constants filled (and,
 * by blocks, the hoisted instructions' registers). NULL
 * (and j->oom set) when out of memory; free with regs_free. */
static float *regs_init(ew_job *j, float *stack, const float **rp) {
    const rlx_ew_prog *p = j->p;
    float *buf = j->n_reg <= STACK_REGS ? stack : malloc((size_t)j->n_reg * BLOCK * sizeof(float));
    if (!buf) {
        atomic_store(&j->oom, 1);
        return NULL;
    }
    for (int i = 0; i < p->n_in; i++)
        if (j->ins[i].kind == IN_SCALAR) {
            float v = in_elem(&j->ins[i], 0);
            for (int t = 0; t < BLOCK; t++) buf[(size_t)i * BLOCK + (size_t)t] = v;
            rp[i] = buf + (size_t)i * BLOCK;
        }
    for (int c = 0; c < p->n_consts; c++) {
        float *r = buf + (size_t)(p->n_in + c) * BLOCK;
        for (int t = 0; t < BLOCK; t++) r[t] = p->consts[c];
        rp[p->n_in + c] = r;
    }
    if (!j->inner) {
        float v[MAX_REG];
        for (int i = 0; i < p->n_in; i++)
            if (j->ins[i].kind == IN_SCALAR) v[i] = buf[(size_t)i * BLOCK];
        for (int c = 0; c < p->n_consts; c++) v[p->n_in + c] = p->consts[c];
        hoist_eval(j, v);
        hoist_fill(j, v, buf, rp, BLOCK);
    }
    return buf;
}

static void ew_blocks(void *ctx, size_t b0, size_t b1) {
    ew_job *j = ctx;
    float stack[STACK_REGS * BLOCK];
    const float *rp[MAX_REG];
    float *buf = regs_init(j, stack, rp);
    if (!buf) return;
    for (size_t blk = b0; blk < b1; blk++) {
        size_t i0 = blk * BLOCK, nb = j->total - i0 < BLOCK ? j->total - i0 : BLOCK;
        run_block(j, rp, buf, i0, nb, false);
    }
    if (buf != stack) free(buf);
}

#if RLX_HAVE_AVX2_BUILD
/* Whether row_v16 computes the program: an f32 output without rounding,
 * no 8-bit operand (qin, qout), rows (ew_rows) or no gathered input
 * (blocks: ew_blocks_v16), AVX-512, and only the functions it has (copy
 * and those of rlx_cpu_ew_bin_vec_f32: + - * /, Relu, Neg, Abs, Max, Min,
 * Clip, HardSigmoid, HardSwish, LeakyRelu). */
static bool rows_v16_applies(const ew_job *j) {
    if (!j->out_f32 || j->p->out_scale != 0 || rlx_cpu_isa_get() != RLX_CPU_ISA_AVX512) return false;
    for (int i = 0; i < j->p->n_in; i++)
        if (j->ins[i].kind == IN_Q8 || (!j->inner && j->ins[i].kind == IN_GATHER)) return false;
    for (int k = 0; k < j->p->n_instr; k++) {
        const rlx_ew_instr *in = &j->p->ins[k];
        if (j->hoist[k]) continue; /* (computed once per row by exec) */
        if (in->rnd) return false;
        switch (in->op) {
        case RLX_EW_COPY:
        case RLX_EW_ADD:
        case RLX_EW_SUB:
        case RLX_EW_MUL:
        case RLX_EW_DIV:
        case RLX_EW_RELU:
        case RLX_EW_NEG:
        case RLX_EW_ABS:
        case RLX_EW_MAX:
        case RLX_EW_MIN:
        case RLX_EW_CLIP:
        case RLX_EW_HARDSIGMOID:
        case RLX_EW_HARDSWISH:
        case RLX_EW_LEAKYRELU: break;
        default: return false;
        }
    }
    return true;
}

/* Operand v of a block: the 16 floats at p + v (the lanes of m), or the
 * broadcast value b where p is NULL. */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline __m512 ew_opnd(const float *p, __m512 b, __mmask16 m, size_t v) {
    return p ? _mm512_maskz_loadu_ps(m, p + v) : b;
}

/* One row of ew_rows (n = j->inner output elements from base; or a chunk of
 * ew_blocks_v16's) in AVX-512F
 * registers: the row's constant operands (scalar inputs, constants, the
 * gathered inputs' values and the hoisted instructions' results: val, by
 * register) broadcast, never filled into blocks; each other instruction
 * one loop over a block of BLOCK elements (the last vector masked), the
 * last into the output. The same operation per element as rlx_cpu_ew_f32
 * (x < 0 ? 0 : x for Relu), so the same bits as run_block. */
RLX_AVX512 static void row_v16(const ew_job *j, size_t base, size_t n, const float *val, float *buf) {
    const rlx_ew_prog *p = j->p;
    __m512 bc[MAX_REG];
    const float *vp[MAX_REG];
    for (int i = 0; i < p->n_in; i++) {
        vp[i] = NULL;
        if (j->ins[i].kind == IN_SCALAR || j->ins[i].kind == IN_GATHER) bc[i] = _mm512_set1_ps(val[i]);
    }
    for (int c = 0; c < p->n_consts; c++) {
        vp[p->n_in + c] = NULL;
        bc[p->n_in + c] = _mm512_set1_ps(p->consts[c]);
    }
    for (int k = 0; k < p->n_instr; k++)
        if (j->hoist[k]) {
            int reg = rlx_ew_reg(p, k);
            vp[reg] = NULL;
            bc[reg] = _mm512_set1_ps(val[reg]);
        }
    const __m512 z = _mm512_setzero_ps();
    for (size_t t = 0; t < n; t += BLOCK) {
        size_t nb = n - t < BLOCK ? n - t : BLOCK;
        __mmask16 tail = (__mmask16)(nb % 16 ? (1u << (nb % 16)) - 1 : 0xffffu);
        for (int i = 0; i < p->n_in; i++)
            if (j->ins[i].kind == IN_INPLACE) vp[i] = (const float *)j->ins[i].t->data + base + t;
        for (int k = 0; k < p->n_instr; k++) {
            if (j->hoist[k]) continue;
            const rlx_ew_instr *in = &p->ins[k];
            int reg = rlx_ew_reg(p, k);
            float *d = k == p->n_instr - 1 ? (float *)j->out->data + base + t : buf + (size_t)reg * BLOCK;
            const float *pa = vp[in->a], *pb = in->b >= 0 ? vp[in->b] : NULL;
            __m512 ba = bc[in->a], bb = in->b >= 0 ? bc[in->b] : z;
#define ROW_LOOP_(EXPR)                                                                                             \
    for (size_t v = 0; v < nb; v += 16) {                                                                           \
        __mmask16 m = v + 16 <= nb ? (__mmask16)0xffffu : tail;                                                    \
        __m512 a = ew_opnd(pa, ba, m, v), b = ew_opnd(pb, bb, m, v);                                                \
        (void)b;                                                                                                    \
        _mm512_mask_storeu_ps(d + v, m, EXPR);                                                                      \
    }                                                                                                               \
    break;
            switch (in->op) {
            case RLX_EW_COPY: ROW_LOOP_(a)
            case RLX_EW_ADD: ROW_LOOP_(_mm512_add_ps(a, b))
            case RLX_EW_SUB: ROW_LOOP_(_mm512_sub_ps(a, b))
            case RLX_EW_MUL: ROW_LOOP_(_mm512_mul_ps(a, b))
            case RLX_EW_DIV: ROW_LOOP_(_mm512_div_ps(a, b))
            case RLX_EW_RELU: ROW_LOOP_(rlx_v16_relu(a))
            case RLX_EW_NEG: ROW_LOOP_(rlx_v16_neg(a))
            case RLX_EW_ABS: ROW_LOOP_(rlx_v16_abs(a))
            case RLX_EW_MAX: ROW_LOOP_(RLX_V16_MINMAX(a, b, _CMP_GT_OQ))
            case RLX_EW_MIN: ROW_LOOP_(RLX_V16_MINMAX(a, b, _CMP_LT_OQ))
            case RLX_EW_CLIP: {
                __m512 lo = _mm512_set1_ps(in->alpha), hi = _mm512_set1_ps(in->beta);
                ROW_LOOP_(rlx_v16_clamp(a, lo, hi))
            }
            case RLX_EW_HARDSIGMOID: {
                __m512 al = _mm512_set1_ps(in->alpha), be = _mm512_set1_ps(in->beta);
                ROW_LOOP_(rlx_v16_hardsigmoid(a, al, be))
            }
            case RLX_EW_HARDSWISH: ROW_LOOP_(rlx_v16_hardswish(a))
            case RLX_EW_LEAKYRELU: {
                __m512 al = _mm512_set1_ps(in->alpha);
                ROW_LOOP_(rlx_v16_leakyrelu(a, al))
            }
            default: break;
            }
#undef ROW_LOOP_
            vp[reg] = d;
            bc[reg] = z;
        }
    }
}
#endif

#if RLX_HAVE_AVX2_BUILD
/* Blocks [b0, b1) of a program without gathered inputs by row_v16, as one
 * row: the scalar inputs, the constants and the hoisted results broadcast,
 * the rest read in place (no block filled; the same bits as ew_blocks). */
static void ew_blocks_v16(void *ctx, size_t b0, size_t b1) {
    ew_job *j = ctx;
    const rlx_ew_prog *p = j->p;
    float stack[STACK_REGS * BLOCK];
    float *buf = j->n_reg <= STACK_REGS ? stack : malloc((size_t)j->n_reg * BLOCK * sizeof(float));
    if (!buf) {
        atomic_store(&j->oom, 1);
        return;
    }
    float val[MAX_REG];
    for (int i = 0; i < p->n_in; i++)
        if (j->ins[i].kind == IN_SCALAR) val[i] = in_elem(&j->ins[i], 0);
    for (int c = 0; c < p->n_consts; c++) val[p->n_in + c] = p->consts[c];
    hoist_eval(j, val);
    size_t base = b0 * BLOCK, end = b1 * BLOCK < j->total ? b1 * BLOCK : j->total;
    row_v16(j, base, end - base, val, buf);
    if (buf != stack) free(buf);
}
#endif

/* Rows of j->inner output elements along which every gathered input is
 * constant (a per-channel [C, 1, 1] operand of an [N, C, H, W] output):
 * each gathered register is filled once per row, then the row runs in
 * blocks. The same operations on the same values as ew_blocks. */
static void ew_rows(void *ctx, size_t r0, size_t r1) {
    ew_job *j = ctx;
    const rlx_ew_prog *p = j->p;
    float stack[STACK_REGS * BLOCK];
    const float *rp[MAX_REG];
    float *buf = regs_init(j, stack, rp);
    if (!buf) return;
    size_t fill = j->inner < BLOCK ? j->inner : BLOCK;
    /* the row's index over the outer dims [0, first) and each gathered
     * input's offset, carried from row to row (no division per row) */
    const rlx_tensor *out = j->out;
    int first = j->first;
    int64_t idx[RLX_MAX_RANK] = { 0 }, off[RLX_EW_MAX_IN];
    size_t rem = r0;
    for (int d = first - 1; d >= 0; d--) {
        idx[d] = (int64_t)(rem % (size_t)out->dims[d]);
        rem /= (size_t)out->dims[d];
    }
    for (int i = 0; i < p->n_in; i++)
        if (j->ins[i].kind == IN_GATHER) off[i] = elem_offset(&j->ins[i], out, r0 * j->inner);
    for (size_t row = r0; row < r1; row++) {
        size_t base = row * j->inner;
        if (row > r0) /* the next row: increment idx with carry */
            for (int d = first - 1; d >= 0; d--) {
                for (int i = 0; i < p->n_in; i++)
                    if (j->ins[i].kind == IN_GATHER) off[i] += j->ins[i].st[d];
                if (++idx[d] < out->dims[d]) break;
                for (int i = 0; i < p->n_in; i++)
                    if (j->ins[i].kind == IN_GATHER) off[i] -= idx[d] * j->ins[i].st[d];
                idx[d] = 0;
            }
        /* the row's constant registers: scalars, constants, gathered values, hoisted results */
        float val[MAX_REG];
        for (int i = 0; i < p->n_in; i++)
            if (j->ins[i].kind == IN_SCALAR) val[i] = in_elem(&j->ins[i], 0);
            else if (j->ins[i].kind == IN_GATHER) val[i] = in_elem(&j->ins[i], (size_t)off[i]);
        for (int c = 0; c < p->n_consts; c++) val[p->n_in + c] = p->consts[c];
        if (j->lut < 0) hoist_eval(j, val);
#if RLX_HAVE_AVX2_BUILD
        if (j->v16) {
            row_v16(j, base, j->inner, val, buf);
            continue;
        }
#endif
        for (int i = 0; i < p->n_in; i++)
            if (j->ins[i].kind == IN_GATHER) {
                float *restrict r = buf + (size_t)i * BLOCK;
                float v = val[i];
                size_t t = 0;
                for (; t + 8 <= fill; t += 8) {
                    _Pragma("GCC unroll 8") for (size_t l = t; l < t + 8; l++) r[l] = v;
                }
                for (; t < fill; t++) r[t] = v;
                rp[i] = r;
            }
        if (j->lut < 0) hoist_fill(j, val, buf, rp, fill);
        if (j->lut >= 0) { /* this row's table, then the row through it (every instruction) */
            float tab[256];
            lut_build(j, rp, buf, tab);
            lut_apply(j, tab, base, j->inner);
            continue;
        }
        for (size_t t = 0; t < j->inner; t += BLOCK) {
            size_t nb = j->inner - t < BLOCK ? j->inner - t : BLOCK;
            run_block(j, rp, buf, base + t, nb, true);
        }
    }
    if (buf != stack) free(buf);
}

/* The length of the output's trailing rows along which every gathered
 * input is constant (broadcast stride 0 over the trailing dims [*first_out,
 * rank)), or 0 when
 * there is no gathered input or the rows are shorter than 16 elements. */
static size_t const_rows(const ew_input *ins, int n_in, const rlx_tensor *out, int *first_out) {
    /* every gathered input has stride 0 on [its d, rank), so all of them on [first, rank), first the largest d */
    int first = 0;
    bool any = false;
    for (int i = 0; i < n_in; i++) {
        if (ins[i].kind != IN_GATHER) continue;
        any = true;
        int d = out->rank;
        while (d > 0 && ins[i].st[d - 1] == 0) d--;
        if (d > first) first = d;
    }
    if (!any || first >= out->rank) return 0;
    *first_out = first;
    size_t inner = 1;
    for (int d = first; d < out->rank; d++) inner *= (size_t)out->dims[d];
    return inner >= 16 ? inner : 0;
}

/* The input whose byte the output is a function of, or -1: a full-size
 * 8-bit input, every other input a scalar (no rows) or constant along the
 * rows (j->inner); an 8-bit or f32 output (no f32 output rounded by an
 * instruction to f16 / bf16 needs more than a table of its values either);
 * enough elements per table; not the reference kernel. */
static int lut_input(const ew_job *j, bool reference) {
    const rlx_ew_prog *p = j->p;
    if (reference || (p->out_scale == 0 && j->out->dtype != RLX_DTYPE_F32)) return -1;
    if ((j->inner ? j->inner : j->total) < LUT_MIN) return -1;
    int v = -1;
    for (int i = 0; i < p->n_in; i++) {
        int kd = j->ins[i].kind;
        if (kd == IN_Q8 && v < 0) v = i;
        else if (kd != IN_SCALAR && !(kd == IN_GATHER && j->inner)) return -1;
    }
    return v;
}

rlx_status rlx_cpu_fused_elementwise(rlx_cpu_kctx *k) {
    if (k->pack && k->pack->ew) return rlx_cpu_ew_prog_run(k, k->pack->ew, k->in); /* read at compile */
    rlx_ew_prog p;
    RLX_TRY(rlx_ew_prog_read(k->n, &p));
    return rlx_cpu_ew_prog_run(k, &p, k->in);
}

rlx_status rlx_cpu_ew_prog_run(rlx_cpu_kctx *k, const rlx_ew_prog *prog, const rlx_tensor *const *in) {
    const rlx_ew_prog p = *prog;
    rlx_tensor *out = k->out[0];
    if (!out || out->dtype != p.dtype)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "the output dtype differs from the program's");
    size_t total = rlx_tensor_numel(out);
    ew_input ins[RLX_EW_MAX_IN];
    for (int i = 0; i < p.n_in; i++) {
        const rlx_tensor *t = in[i];
        if (!t) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d is missing", i);
        bool q8 = p.in_scale[i] != 0;
        if (q8 ? t->dtype != RLX_DTYPE_U8 && t->dtype != RLX_DTYPE_I8
               : t->dtype != RLX_DTYPE_F32 && t->dtype != RLX_DTYPE_F16 && t->dtype != RLX_DTYPE_BF16 &&
                     t->dtype != RLX_DTYPE_BOOL)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d has dtype %s%s", i, rlx_dtype_name(t->dtype),
                                q8 ? " (qin: expected u8 or i8)" : "");
        bool ok = t->rank <= out->rank;
        for (int d = 0; ok && d < t->rank; d++) {
            int64_t td = t->dims[d], od = out->dims[out->rank - t->rank + d];
            ok = td == od || td == 1;
        }
        if (!ok) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d does not broadcast to the output", i);
        ins[i].t = t;
        size_t tn = rlx_tensor_numel(t);
        ins[i].qs = p.in_scale[i];
        ins[i].qz = p.in_zp[i];
        ins[i].kind = tn == total && t->dtype == RLX_DTYPE_F32 && !q8 ? IN_INPLACE
                      : tn == total && q8                              ? IN_Q8
                      : tn == 1                                        ? IN_SCALAR
                                                                       : IN_GATHER;
        rlx_broadcast_strides(t->dims, t->rank, out->rank, ins[i].st);
    }
    if (total == 0) return RLX_OK;
    ew_job j;
    j.p = &p;
    j.ins = ins;
    j.out = out;
    j.total = total;
    j.out_f32 = out->dtype == RLX_DTYPE_F32 && p.ins[p.n_instr - 1].rnd == 0;
    j.n_reg = rlx_ew_reg(&p, p.n_instr);
    atomic_init(&j.oom, 0);
    /* elementwise: any split gives the same bits; 64 blocks per chunk */
    j.first = 0;
    j.inner = const_rows(ins, p.n_in, out, &j.first);
    j.lut = lut_input(&j, k->reference);
    hoist_init(&j, k->reference);
    if (j.lut >= 0 && !j.inner) { /* one table for the whole call */
        float stack[STACK_REGS * BLOCK], tab[256];
        const float *rp[MAX_REG];
        float *buf = regs_init(&j, stack, rp);
        if (!buf) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%d register blocks)", j.n_reg);
        lut_build(&j, rp, buf, tab);
        if (buf != stack) free(buf);
        lut_job l = { &j, tab };
        rlx_parallel_for((total + BLOCK - 1) / BLOCK, 64, lut_chunks, &l);
        return RLX_OK;
    }
    j.v16 = false;
#if RLX_HAVE_AVX2_BUILD
    j.v16 = j.lut < 0 && !k->reference && rows_v16_applies(&j);
#endif
    if (j.inner)
        rlx_parallel_for(total / j.inner, (64 * BLOCK + j.inner - 1) / j.inner, ew_rows, &j);
    else {
        rlx_parallel_fn blocks = ew_blocks;
#if RLX_HAVE_AVX2_BUILD
        if (j.v16) blocks = ew_blocks_v16;
#endif
        rlx_parallel_for((total + BLOCK - 1) / BLOCK, 64, blocks, &j);
    }
    if (atomic_load(&j.oom))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%d register blocks)", j.n_reg);
    return RLX_OK;
}
