/* CPU kernel of rlx.FusedElementwise (src/ir/ops/internal_ops.h): the
 * register program runs over blocks of BLOCK output elements. Inputs are
 * gathered into register blocks at their broadcast positions (a
 * contiguous f32 input is read in place, a scalar is filled once), each
 * instruction is one loop over the block, and the last writes the output
 * (in place when it is f32). Blocks are shared out over the worker pool
 * (base/parallel.h). Every op computes as the unfused f32 kernels do: the
 * vocabulary's f32 computation (rlx_cpu_ew_f32, src/ir/ew.h). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "base/half.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "ir/ops/internal_ops.h"

#define BLOCK 256

/* How an input reaches its register. */
enum { IN_INPLACE, IN_SCALAR, IN_GATHER };

typedef struct ew_input {
    const rlx_tensor *t;
    int kind;
    int64_t st[RLX_MAX_RANK]; /* broadcast strides over the output dims */
} ew_input;

static inline float load_elem(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F16: return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BF16: return rlx_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i] ? 1.0f : 0.0f;
    default: return 0.0f;
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
        dst[0] = load_elem(in->t, 0);
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
        if (in->t->dtype == RLX_DTYPE_F32) {
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
            for (int64_t t = 0; t < run; t++) dst[j + (size_t)t] = load_elem(in->t, (size_t)(off + t * s_in));
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
    int n_reg;
    atomic_int oom;
} ew_job;

#define MAX_REG (RLX_EW_MAX_IN + RLX_EW_MAX_CONSTS + RLX_EW_MAX_INSTR)
#define STACK_REGS 32

/* The instructions over output elements [i0, i0 + nb) (nb <= BLOCK): the
 * in-place inputs pointed at, the gathered ones gathered unless the caller
 * filled them (`gathered`), the last instruction into the output. */
static void run_block(const ew_job *j, const float **rp, float *buf, size_t i0, size_t nb, bool gathered) {
    const rlx_ew_prog *p = j->p;
    for (int i = 0; i < p->n_in; i++) {
        if (j->ins[i].kind == IN_INPLACE) {
            rp[i] = (const float *)j->ins[i].t->data + i0;
        } else if (j->ins[i].kind == IN_GATHER && !gathered) {
            float *r = buf + (size_t)i * BLOCK;
            gather(&j->ins[i], j->out, i0, nb, r);
            rp[i] = r;
        }
    }
    for (int k = 0; k < p->n_instr; k++) {
        const rlx_ew_instr *in = &p->ins[k];
        int reg = rlx_ew_reg(p, k);
        float *d = (k == p->n_instr - 1 && j->out_f32) ? (float *)j->out->data + i0 : buf + (size_t)reg * BLOCK;
        exec(in, d, rp[in->a], in->b >= 0 ? rp[in->b] : NULL, in->c >= 0 ? rp[in->c] : NULL, nb);
        rp[reg] = d;
    }
    if (!j->out_f32) {
        const float *r = rp[rlx_ew_reg(p, p->n_instr - 1)];
        for (size_t t = 0; t < nb; t++) rlx_tensor_set_f64(j->out, i0 + t, r[t]);
    }
}

/* A chunk's registers: the scalar inputs and the constants filled. NULL
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
            float v = load_elem(j->ins[i].t, 0);
            for (int t = 0; t < BLOCK; t++) buf[(size_t)i * BLOCK + (size_t)t] = v;
            rp[i] = buf + (size_t)i * BLOCK;
        }
    for (int c = 0; c < p->n_consts; c++) {
        float *r = buf + (size_t)(p->n_in + c) * BLOCK;
        for (int t = 0; t < BLOCK; t++) r[t] = p->consts[c];
        rp[p->n_in + c] = r;
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
        for (int i = 0; i < p->n_in; i++)
            if (j->ins[i].kind == IN_GATHER) {
                float *restrict r = buf + (size_t)i * BLOCK;
                float v = load_elem(j->ins[i].t, (size_t)off[i]);
                size_t t = 0;
                for (; t + 8 <= fill; t += 8) {
                    _Pragma("GCC unroll 8") for (size_t l = t; l < t + 8; l++) r[l] = v;
                }
                for (; t < fill; t++) r[t] = v;
                rp[i] = r;
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

rlx_status rlx_cpu_fused_elementwise(rlx_cpu_kctx *k) {
    rlx_ew_prog p;
    RLX_TRY(rlx_ew_prog_read(k->n, &p));
    rlx_tensor *out = k->out[0];
    if (!out || out->dtype != p.dtype)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "the output dtype differs from the program's");
    size_t total = rlx_tensor_numel(out);
    ew_input ins[RLX_EW_MAX_IN];
    for (int i = 0; i < p.n_in; i++) {
        const rlx_tensor *t = k->in[i];
        if (!t) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d is missing", i);
        if (t->dtype != RLX_DTYPE_F32 && t->dtype != RLX_DTYPE_F16 && t->dtype != RLX_DTYPE_BF16 &&
            t->dtype != RLX_DTYPE_BOOL)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d has dtype %s", i, rlx_dtype_name(t->dtype));
        bool ok = t->rank <= out->rank;
        for (int d = 0; ok && d < t->rank; d++) {
            int64_t td = t->dims[d], od = out->dims[out->rank - t->rank + d];
            ok = td == od || td == 1;
        }
        if (!ok) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "input %d does not broadcast to the output", i);
        ins[i].t = t;
        size_t tn = rlx_tensor_numel(t);
        ins[i].kind = tn == total && t->dtype == RLX_DTYPE_F32 ? IN_INPLACE : tn == 1 ? IN_SCALAR : IN_GATHER;
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
    if (j.inner)
        rlx_parallel_for(total / j.inner, (64 * BLOCK + j.inner - 1) / j.inner, ew_rows, &j);
    else
        rlx_parallel_for((total + BLOCK - 1) / BLOCK, 64, ew_blocks, &j);
    if (atomic_load(&j.oom))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%d register blocks)", j.n_reg);
    return RLX_OK;
}
