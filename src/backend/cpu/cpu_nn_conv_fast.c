/* Fast f32 paths of Conv (ONNX Conv-11/22), used when k->reference is
 * false; the reference kernel in cpu_nn_conv.c is the oracle they are
 * tested against (tests/test_cpu_conv_fast.c).
 *
 * Threads: the worker pool (base/parallel.h) runs every part; each task
 * gets a scratch slot of its own (one per pool thread, allocated once per
 * call) and multiplies with rlx_cpu_sgemm_serial (cpu_sgemm.h, policy
 * "pool"). Under policy "blas" the GEMM convolution builds its column
 * matrix on the pool and hands it to one OpenBLAS-threaded GEMM.
 *
 *  - Depthwise, channel-blocked (1-D and 2-D, channel multiplier 1, any
 *    kernel, stride, dilation and pads; cpu_nn_dw_body.h): tasks over
 *    (block of CB channels, block of output rows, group of images), CB =
 *    16 with AVX-512, 8 with AVX2 or portable C (rlx_cpu_isa_get); a task
 *    packs its weights once and then, image by image, packs the
 *    input rows it reads, for its CB channels, into a zero-padded tile
 *    [rows][padded width][CB] in its scratch slot (16 x 16 / 8 x 8
 *    register transposes), then computes CB output points at a time, each
 *    a CB-lane FMA chain over the taps from the bias, transposes them back
 *    and stores them to NCHW: short rows (7 or 14 wide) cost nothing extra
 *    and 960 channels of a 7 x 7 map are 60 tasks. While packing, a task
 *    prefetches into L2 the rows the next task packs (at batch 8 the
 *    planes come from memory; conv_node, 8 images, caches evicted, min us:
 *    96x112x112 s2 3329 -> 2986, 144x56x56 s2 1345 -> 1129, 32x112x112
 *    2110 -> 1896; MobileNetV2 at batch 8 about 2 ms of 66 faster, batch 1
 *    unchanged within noise). Relu / Clip without a
 *    residual are applied in registers (max / min in the epilogue's
 *    comparison order: the same bits), other activations and the residual
 *    by epilogue_row over each channel's stored run. Weights below FLT_MIN
 *    in magnitude count as 0 (a subnormal lane made every FMA of its block
 *    take a microcode assist: 5x on one PP-OCRv4 node). Rows per task: the
 *    tile within 32 Ki floats; all images in one task unless the threads
 *    need more tasks (at least 3 per thread, by splitting the images, then
 *    the rows, where they allow: 7x7x960: 60 tasks; 112x112x32 at 16
 *    threads and batch 1: 48).
 *    Which path runs (dwb_pick), by `/tmp` timing of single Conv nodes
 *    (Clip(0, 6), 1 thread, 2026-12-03 dev VM, load 3-4), plane ms ->
 *    blocked ms: AVX-512: 32x112x112 s1 0.64 -> 0.38, 96x112x112 s2 1.86
 *    -> 0.56, 144x56x56 s1 1.23 -> 0.45, 576x14x14 s2 0.88 -> 0.056,
 *    960x7x7 0.59 -> 0.062, 256x40x40 5x5 4.8 -> 0.72, 16x320x320 3.1 ->
 *    2.0, 8x64x64 0.075 -> 0.050, 3x100x100 0.049 -> 0.116; AVX2 the same
 *    but 64x160x160 2.34 -> 2.27 and 16x320x320 2.35 -> 2.44. So: blocked
 *    from 8 channels on AVX-512, on AVX2 too unless the rows are stride 1
 *    and 160 or more wide; the plane path below 8 channels, for channel
 *    multipliers above 1, 3-D, and on CPUs without AVX2 (the portable
 *    blocked loop, 1.0-1.4 GMAC/s, lost to the plane path there; it runs
 *    when forced, rlx_nn_dw_force).
 *  - Depthwise by planes (one input channel per group, any channel
 *    multiplier), 1-D and 2-D: tasks over (image, output channel) planes. A task copies the
 *    input plane once into zero-padded rows split by stride phase (element
 *    q of a padded row lands in phase q % stride at q / stride), so that
 *    every kernel tap reads a contiguous run for a whole output row; the
 *    row is then y[o] = b + sum over taps of w * row[o + off], with the
 *    taps of a kernel row unrolled for widths 3 and 5 (all nine taps of a
 *    3x3 kernel in one pass where its rows are inside the input), loops
 *    in blocks of eight that the compiler vectorises (and compiles for FMA
 *    too: RLX_NN_CLONES). 3-D depthwise: tap by tap over whole output
 *    rows.
 *  - Few input channels per group (K = c_in / group x kernel taps up to
 *    32, or up to 192 for 1x1 stride 1 / 256 for the others with at
 *    least twice as many positions as output channels and K x c_out /
 *    group <= 8 Ki; and 1x1s at stride 1 with K <= 256 on maps of
 *    56x56 or more, or with a residual on 28x28 or more): the pointwise
 *    path, cpu_nn_pw.c (the input read in place, the epilogue on the
 *    accumulators; the same bits as below).
 *  - Kernels of more than one tap at stride 1 (larger strides: small
 *    outputs and stems), the weights packed at compile time, the AVX-512
 *    sgemm kernel: the implicit GEMM, cpu_nn_conv_ig.c (the input copied
 *    once into zero-padded planes, the GEMM's B read from them at per-tap
 *    offsets; the same bits).
 *  - Everything else: im2col + sgemm over tasks (image, group, block of
 *    output positions, block of output channels); a 1x1 convolution with
 *    stride 1 and no padding multiplies the input in place (no im2col).
 *    Blocks of positions keep the column block near 512 KiB; output
 *    channels are split only when positions and groups cannot keep the
 *    threads busy (small late-stage feature maps), and then the column
 *    matrices are built once, on the pool, before the GEMM tasks.
 *  - Epilogue: each task adds the bias (and the fused residual, Conv's
 *    internal fourth input) and applies the fused activation
 *    (src/ir/ops/act.h) to the block it just computed, in f32:
 *    act((acc + b) + r), as the unfused Conv, Add and activation would.
 * They accumulate in float in another order than the reference: tests
 * compare at 1e-5 relative + 2e-6 absolute per product of the sum
 * (values in [-1, 1]). */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"

/* ------------------------------------------------------------ tasks with scratch */

/* Each slot owns a contiguous range of the items, (lo << 32) | hi: it
 * takes them from the front; a slot whose range is empty takes from the
 * back of the others'. So a thread computes the same neighbouring blocks
 * (output positions, then channels) in every run and the next node's
 * block reads what the same thread wrote, where a shared counter handed
 * the items out alternately (on this VM's slow 2-thread state a line
 * another core wrote costs several times one of its own L2). The
 * boundaries never change the results: items are independent. */
#define SLOT_LO(r) ((size_t)((r) >> 32))
#define SLOT_HI(r) ((size_t)((r) & 0xffffffffu))

typedef struct slot_job {
    rlx_nn_item_fn fn;
    void *ctx;
    size_t n_items, slot_floats, slots;
    float *scratch; /* slots x slot_floats floats, or NULL: each thread's own scratch */
    atomic_size_t done;
    atomic_ullong range[RLX_PARALLEL_MAX_THREADS]; /* per slot, see SLOT_LO */
} slot_job;

/* Takes one item of slot v's range, from the front (own) or the back;
 * false when it is empty. */
static bool slot_take(slot_job *j, size_t v, bool own, size_t *item) {
    unsigned long long r = atomic_load_explicit(&j->range[v], memory_order_relaxed);
    for (;;) {
        size_t lo = SLOT_LO(r), hi = SLOT_HI(r);
        if (lo >= hi) return false;
        unsigned long long nr = own ? r + (1ull << 32) : r - 1;
        if (atomic_compare_exchange_weak_explicit(&j->range[v], &r, nr, memory_order_relaxed, memory_order_relaxed)) {
            *item = own ? lo : hi - 1;
            return true;
        }
    }
}

/* Runs slot s's items, then the others' (a task's scratch is its slot of
 * j->scratch or, without one, the running thread's RLX_SCRATCH_TASK
 * buffer; a thread that cannot have it takes no items: the others do
 * them, and the caller reports the shortfall). */
static void run_slots(void *ctx, size_t s0, size_t s1) {
    slot_job *j = ctx;
    for (size_t s = s0; s < s1; s++) {
        float *scratch = NULL;
        if (j->scratch) scratch = j->scratch + s * j->slot_floats;
        else if (j->slot_floats && !(scratch = rlx_scratch_get(RLX_SCRATCH_TASK, j->slot_floats * sizeof(float))))
            continue;
        for (size_t d = 0; d < j->slots; d++) {
            size_t v = (s + d) % j->slots, it;
            while (slot_take(j, v, d == 0, &it)) {
                j->fn(j->ctx, it, scratch);
                atomic_fetch_add_explicit(&j->done, 1, memory_order_relaxed);
            }
        }
    }
}

rlx_status rlx_nn_run_items(const rlx_cpu_kctx *k, size_t n_items, size_t slot_floats, rlx_nn_item_fn fn,
                            void *ctx) {
    if (!n_items) return RLX_OK;
    if (n_items > 0xffffffffu)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%zu tasks: more than 2^32 - 1", n_items);
    size_t slots = (size_t)rlx_parallel_threads();
    if (slots > n_items) slots = n_items;
    if (slots > RLX_PARALLEL_MAX_THREADS) slots = RLX_PARALLEL_MAX_THREADS;
    slot_job j;
    j.fn = fn;
    j.ctx = ctx;
    j.n_items = n_items;
    j.slot_floats = slot_floats;
    j.slots = slots;
    j.scratch = NULL;
    atomic_init(&j.done, 0);
    for (size_t v = 0; v < slots; v++) { /* contiguous shares, sizes within one item */
        unsigned long long lo = n_items * v / slots, hi = n_items * (v + 1) / slots;
        atomic_init(&j.range[v], lo << 32 | hi);
    }
    /* a slot larger than the per-thread scratch keeps: one block for the call */
    if (slot_floats > RLX_SCRATCH_MAX_BYTES / sizeof(float)) {
        size_t total;
        if (!rlx_mul_ok(slots, slot_floats, &total) || total > SIZE_MAX / sizeof(float) - 1 ||
            !(j.scratch = malloc((total + 1) * sizeof(float))))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu scratch slots of %zu floats)", slots,
                                slot_floats);
    }
    rlx_parallel_for(slots, 1, run_slots, &j);
    free(j.scratch);
    if (atomic_load(&j.done) < n_items)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (scratch of %zu floats per thread)", slot_floats);
    return RLX_OK;
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

bool rlx_nn_sp3_direct(const rlx_nn_sp3 *s) {
    bool direct = s->ksz == 1 && s->in_sp == s->out_sp;
    for (int i = 0; i < 3 && direct; i++) direct = s->s[i] == 1 && s->pb[i] == 0;
    return direct;
}

void rlx_nn_conv_io_init(const rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s, rlx_nn_conv_io *io) {
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    memset(io, 0, sizeof *io);
    io->x = k->in[0]->data;
    io->w = k->in[1]->data;
    io->b = bt ? bt->data : NULL;
    io->res = k->n->n_in > 3 && k->in[3] ? k->in[3]->data : NULL;
    io->y = k->out[0]->data;
    io->s = s;
    io->act = rlx_node_act(k->n);
    io->groups = (size_t)g->group;
    io->c_in = (size_t)g->c_in;
    io->c_out = (size_t)g->c_out;
    io->cig = io->c_in / io->groups;
    io->cog = io->c_out / io->groups;
    io->kt = io->cig * s->ksz;
    io->sp = s->out_sp;
    io->direct = rlx_nn_sp3_direct(s);
}

/* y[i] = act(y[i] + bv) for i < n: Relu and Clip (by comparisons, as the
 * Clip kernel: NaN passes through) in blocks of eight, the others through
 * rlx_cpu_ew_unary_f32 (cpu_ew_vec.c: vector forms, one loop per function). */
RLX_NN_CLONES static void bias_act_row(float *restrict y, size_t n, float bv, const rlx_act *act) {
    size_t i = 0;
    switch (act->kind) {
    case RLX_ACT_NONE:
        if (bv == 0.0f) return;
        for (; i + 8 <= n; i += 8) {
#define BA_NONE(t) y[i + t] += bv;
            RLX_NN_BLOCK8(BA_NONE)
        }
        for (; i < n; i++) y[i] += bv;
        return;
    case RLX_ACT_RELU:
        for (; i + 8 <= n; i += 8) {
#define BA_RELU(t) { float v = y[i + t] + bv; y[i + t] = v < 0.0f ? 0.0f : v; }
            RLX_NN_BLOCK8(BA_RELU)
        }
        for (; i < n; i++) {
            float v = y[i] + bv;
            y[i] = v < 0.0f ? 0.0f : v; /* Relu: NaN and -0 pass through */
        }
        return;
    case RLX_ACT_CLIP: {
        float lo = act->alpha, hi = act->beta;
        for (; i + 8 <= n; i += 8) {
#define BA_CLIP(t) { float v = y[i + t] + bv; v = v < lo ? lo : v; y[i + t] = v > hi ? hi : v; }
            RLX_NN_BLOCK8(BA_CLIP)
        }
        for (; i < n; i++) {
            float v = y[i] + bv;
            v = v < lo ? lo : v;
            y[i] = v > hi ? hi : v;
        }
        return;
    }
    default:
        /* act(y + bv) as y + bv, then the function over the row (its vector
         * form, the selects over AVX-512, else one loop per function, not a
         * switch per element): the same bits. The functions without a vector
         * form always took y + bv (-0 + 0 is +0), those with one only a bias
         * that is not 0 */
        if (bv != 0.0f || !rlx_cpu_ew_has_vec(act->kind)) {
            for (; i + 8 <= n; i += 8) {
                RLX_NN_BLOCK8(BA_NONE)
            }
            for (; i < n; i++) y[i] += bv;
        }
        rlx_cpu_ew_unary_f32(act->kind, y, y, act->alpha, act->beta, n);
        return;
    }
}

/* y[i] = (y[i] + bv) + r[i] for i < n (y[i] + r[i] when bv is 0, as the
 * unfused Add does). */
RLX_NN_CLONES static void add_residual_row(float *restrict y, size_t n, float bv, const float *restrict r) {
    size_t i = 0;
    if (bv == 0.0f) {
        for (; i + 8 <= n; i += 8) {
#define AR_0(t) y[i + t] += r[i + t];
            RLX_NN_BLOCK8(AR_0)
        }
        for (; i < n; i++) y[i] += r[i];
        return;
    }
    for (; i + 8 <= n; i += 8) {
#define AR_B(t) y[i + t] = (y[i + t] + bv) + r[i + t];
        RLX_NN_BLOCK8(AR_B)
    }
    for (; i < n; i++) y[i] = (y[i] + bv) + r[i];
}

/* y[i] = relu((y[i] + bv) + r[i]) (bv 0: relu(y[i] + r[i])), or Clip(lo,
 * hi) of it when clip: in one pass, with the comparisons of bias_act_row
 * (the same bits as add_residual_row followed by the activation); one
 * loop per case, so that each is vectorised. */
RLX_NN_CLONES static void add_residual_clamp_row(float *restrict y, size_t n, float bv, const float *restrict r,
                                                 bool clip, float lo, float hi) {
    size_t i = 0;
#define AR_RELU(v, t) { float v_ = (v); y[i + t] = v_ < 0.0f ? 0.0f : v_; }
#define AR_CLIP(v, t) { float v_ = (v); v_ = v_ < lo ? lo : v_; y[i + t] = v_ > hi ? hi : v_; }
#define AR_RELU0(t) AR_RELU(y[i + t] + r[i + t], t)
#define AR_RELUB(t) AR_RELU((y[i + t] + bv) + r[i + t], t)
#define AR_CLIP0(t) AR_CLIP(y[i + t] + r[i + t], t)
#define AR_CLIPB(t) AR_CLIP((y[i + t] + bv) + r[i + t], t)
    if (!clip && bv == 0.0f) {
        for (; i + 8 <= n; i += 8) { RLX_NN_BLOCK8(AR_RELU0) }
        for (; i < n; i++) AR_RELU0(0)
    } else if (!clip) {
        for (; i + 8 <= n; i += 8) { RLX_NN_BLOCK8(AR_RELUB) }
        for (; i < n; i++) AR_RELUB(0)
    } else if (bv == 0.0f) {
        for (; i + 8 <= n; i += 8) { RLX_NN_BLOCK8(AR_CLIP0) }
        for (; i < n; i++) AR_CLIP0(0)
    } else {
        for (; i + 8 <= n; i += 8) { RLX_NN_BLOCK8(AR_CLIPB) }
        for (; i < n; i++) AR_CLIPB(0)
    }
}

/* The epilogue of n finished outputs: y = act((y + bv) + r) (r NULL: no
 * residual; the fused residual of Conv, src/ir/ops/act.h); Relu and Clip
 * in the residual's pass. */
static void epilogue_row(float *y, size_t n, float bv, const float *r, const rlx_act *act) {
    if (!r) {
        bias_act_row(y, n, bv, act);
        return;
    }
    if (act->kind == RLX_ACT_RELU || act->kind == RLX_ACT_CLIP) {
        add_residual_clamp_row(y, n, bv, r, act->kind == RLX_ACT_CLIP, act->alpha, act->beta);
        return;
    }
    add_residual_row(y, n, bv, r);
    rlx_nn_act_f32_serial(act, y, n);
}

/* epilogue_row over a rows x cols block with row stride ld (bias: one value
 * per row, or NULL; res: the residual laid out as y, or NULL). */
static void bias_act_block(float *y, size_t ld, size_t rows, size_t cols, const float *bias, const float *res,
                           const rlx_act *act) {
    for (size_t r = 0; r < rows; r++)
        epilogue_row(y + r * ld, cols, bias ? bias[r] : 0.0f, res ? res + r * ld : NULL, act);
}

void rlx_nn_conv_epilogue_block(float *y, size_t ld, size_t rows, size_t cols, const float *bias, const float *res,
                                const rlx_act *act) {
    bias_act_block(y, ld, rows, cols, bias, res, act);
}

/* ------------------------------------------------------------ depthwise */

typedef struct dw_job {
    rlx_nn_conv_io io; /* io.cog: output channels per input channel */
    size_t phase_len; /* J: elements per stride phase of a padded row */
    size_t row_len;   /* stride * J */
} dw_job;

/* Where plane `plane` (image n, output channel co) of a depthwise job
 * reads and writes: its input channel, its kernel, its output plane and
 * its bias (0 without one). */
typedef struct dw_at {
    const float *x, *w;
    float *y;
    float b;
} dw_at;

static dw_at dw_plane_at(const dw_job *j, size_t plane) {
    size_t c_out = j->io.c_out, co = plane % c_out, n = plane / c_out, ci = co / j->io.cog;
    dw_at a;
    a.x = j->io.x + (n * j->io.c_in + ci) * j->io.s->in_sp;
    a.w = j->io.w + co * j->io.s->ksz;
    a.y = j->io.y + plane * j->io.s->out_sp;
    a.b = j->io.b ? j->io.b[co] : 0.0f;
    return a;
}

/* y[o] += sum over the kernel row's taps t of w[t] * p[t][o] for o < n:
 * the taps unrolled for widths 3 and 5, eight outputs per step. */
RLX_NN_CLONES static void dw_row_taps(float *restrict y, const float *const *p, const float *w, int64_t kw, int64_t n) {
    int64_t o = 0;
    if (kw == 3) {
        const float *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2];
        float w0 = w[0], w1 = w[1], w2 = w[2];
        for (; o + 8 <= n; o += 8) {
#define DW_T3(t) y[o + t] += w0 * p0[o + t] + w1 * p1[o + t] + w2 * p2[o + t];
            RLX_NN_BLOCK8(DW_T3)
        }
        for (; o < n; o++) y[o] += w0 * p0[o] + w1 * p1[o] + w2 * p2[o];
    } else if (kw == 5) {
        const float *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2], *restrict p3 = p[3],
                              *restrict p4 = p[4];
        float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
        for (; o + 8 <= n; o += 8) {
#define DW_T5(t) y[o + t] += w0 * p0[o + t] + w1 * p1[o + t] + w2 * p2[o + t] + w3 * p3[o + t] + w4 * p4[o + t];
            RLX_NN_BLOCK8(DW_T5)
        }
        for (; o < n; o++) y[o] += w0 * p0[o] + w1 * p1[o] + w2 * p2[o] + w3 * p3[o] + w4 * p4[o];
    } else {
        for (int64_t t = 0; t < kw; t++) {
            const float *restrict pt = p[t];
            float wt = w[t];
            for (o = 0; o + 8 <= n; o += 8) {
#define DW_T1(i) y[o + i] += wt * pt[o + i];
                RLX_NN_BLOCK8(DW_T1)
            }
            for (; o < n; o++) y[o] += wt * pt[o];
        }
    }
}

/* y[o] = b + sum over the nine taps of w[3 * i + t] * r[i][off[t] + o] for
 * o < n (a 3x3 kernel whose three rows r[0..2] are inside the input; tap t
 * of a row starts off[t] elements in), eight outputs per step. */
RLX_NN_CLONES static void dw_row_3x3(float *restrict y, const float *const *r, const int64_t *off, const float *w,
                                     float b, int64_t n) {
    const float *restrict p0 = r[0] + off[0], *restrict p1 = r[0] + off[1], *restrict p2 = r[0] + off[2],
                          *restrict p3 = r[1] + off[0], *restrict p4 = r[1] + off[1], *restrict p5 = r[1] + off[2],
                          *restrict p6 = r[2] + off[0], *restrict p7 = r[2] + off[1], *restrict p8 = r[2] + off[2];
    float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
#define DW_9(t)                                                                                              \
    y[o + t] = b + (w0 * p0[o + t] + w1 * p1[o + t] + w2 * p2[o + t]) + (w3 * p3[o + t] + w4 * p4[o + t] + \
                                                                          w5 * p5[o + t]) +                  \
               (w6 * p6[o + t] + w7 * p7[o + t] + w8 * p8[o + t]);
        RLX_NN_BLOCK8(DW_9)
    }
    for (; o < n; o++)
        y[o] = b + (w0 * p0[o] + w1 * p1[o] + w2 * p2[o]) + (w3 * p3[o] + w4 * p4[o] + w5 * p5[o]) +
               (w6 * p6[o] + w7 * p7[o] + w8 * p8[o]);
}

/* One (image, output channel) plane of a 1-D / 2-D depthwise convolution
 * (s->in[0] == s->out[0] == 1). scratch: in[1] rows of row_len floats. */
static void dw_plane_2d(void *ctx, size_t plane, float *buf) {
    const dw_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    dw_at at = dw_plane_at(j, plane);
    const float *xc = at.x, *wk = at.w;
    float *yo = at.y;
    float bv = at.b;
    int64_t ih = s->in[1], iw = s->in[2], oh = s->out[1], ow = s->out[2];
    int64_t kh = s->k[1], kw = s->k[2], sh = s->s[1], sw = s->s[2], dh = s->d[1], dw = s->d[2];
    int64_t ph = s->pb[1], pw = s->pb[2];
    size_t J = j->phase_len;
    /* padded rows, split by phase: buf[r][ph][jj] = x[r][jj * sw + ph - pw] (0 outside) */
    for (int64_t r = 0; r < ih; r++) {
        const float *xr = xc + r * iw;
        float *br = buf + (size_t)r * j->row_len;
        for (int64_t q0 = 0; q0 < sw; q0++) {
            float *bp = br + (size_t)q0 * J;
            /* jj in [lo, hi) reads x column jj * sw + q0 - pw inside the row */
            int64_t c0 = q0 - pw, lo = c0 >= 0 ? 0 : (-c0 + sw - 1) / sw;
            int64_t hi = iw - c0 <= 0 ? 0 : (iw - c0 + sw - 1) / sw;
            if (hi > (int64_t)J) hi = (int64_t)J;
            if (lo > hi) lo = hi;
            memset(bp, 0, (size_t)lo * sizeof(float));
            if (sw == 1) {
                memcpy(bp + lo, xr + c0 + lo, (size_t)(hi - lo) * sizeof(float));
            } else {
                const float *src = xr + c0;
                for (int64_t jj = lo; jj < hi; jj++) bp[jj] = src[jj * sw];
            }
            memset(bp + hi, 0, (J - (size_t)hi) * sizeof(float));
        }
    }
    const float *taps[64];
    int64_t off3[3]; /* 3-wide kernels: where each tap's run starts in a padded row */
    for (int64_t t = 0; t < 3; t++) off3[t] = ((t * dw) % sw) * (int64_t)J + (t * dw) / sw;
    for (int64_t o1 = 0; o1 < oh; o1++) {
        float *yr = yo + o1 * ow;
        int64_t r0 = o1 * sh - ph;
        if (kh == 3 && kw == 3 && r0 >= 0 && r0 + 2 * dh < ih) { /* all nine taps in one pass */
            for (int64_t i = 0; i < 3; i++) taps[i] = buf + (size_t)(r0 + i * dh) * j->row_len;
            dw_row_3x3(yr, taps, off3, wk, bv, ow);
            epilogue_row(yr, (size_t)ow, 0.0f, j->io.res ? j->io.res + (yr - j->io.y) : NULL, &j->io.act);
            continue;
        }
        for (int64_t o = 0; o < ow; o++) yr[o] = bv;
        for (int64_t k1 = 0; k1 < kh; k1++) {
            int64_t r = o1 * sh - ph + k1 * dh;
            if (r < 0 || r >= ih) continue;
            const float *br = buf + (size_t)r * j->row_len;
            const float *wr = wk + k1 * kw;
            for (int64_t k0 = 0; k0 < kw; k0 += 64) { /* kernel rows wider than 64 in pieces */
                int64_t nt = kw - k0 < 64 ? kw - k0 : 64;
                for (int64_t t = 0; t < nt; t++) {
                    int64_t q = (k0 + t) * dw; /* padded column of output 0 */
                    taps[t] = br + (size_t)(q % sw) * J + (size_t)(q / sw);
                }
                dw_row_taps(yr, taps, wr + k0, nt, ow);
            }
        }
        epilogue_row(yr, (size_t)ow, 0.0f, j->io.res ? j->io.res + (yr - j->io.y) : NULL, &j->io.act);
    }
}

/* Output (o1, o) of a 2-D depthwise plane, every tap checked against the
 * input (the border columns of dw_plane_s1). */
static float dw_point(const float *xc, const float *wk, float b, const rlx_nn_sp3 *s, int64_t o1, int64_t o) {
    float acc = b;
    for (int64_t k1 = 0; k1 < s->k[1]; k1++) {
        int64_t r = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
        if (r < 0 || r >= s->in[1]) continue;
        for (int64_t k2 = 0; k2 < s->k[2]; k2++) {
            int64_t c = o * s->s[2] - s->pb[2] + k2 * s->d[2];
            if (c >= 0 && c < s->in[2]) acc += wk[k1 * s->k[2] + k2] * xc[r * s->in[2] + c];
        }
    }
    return acc;
}

/* One plane of a 1-D / 2-D depthwise convolution with column stride 1,
 * read in place: the columns whose taps all fall inside the row as whole
 * runs (dw_row_3x3, dw_row_taps), the few border columns one by one. */
static void dw_plane_s1(void *ctx, size_t plane, float *scratch) {
    (void)scratch;
    const dw_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    dw_at at = dw_plane_at(j, plane);
    const float *xc = at.x, *wk = at.w;
    float *yo = at.y;
    float bv = at.b;
    int64_t ih = s->in[1], iw = s->in[2], oh = s->out[1], ow = s->out[2];
    int64_t kh = s->k[1], kw = s->k[2], sh = s->s[1], dh = s->d[1], dw = s->d[2], ph = s->pb[1], pw = s->pb[2];
    /* interior columns [clo, chi): o - pw >= 0 and o - pw + (kw - 1) * dw < iw */
    int64_t clo = pw < ow ? pw : ow, chi = iw + pw - (kw - 1) * dw;
    if (chi > ow) chi = ow;
    if (chi < clo) chi = clo;
    const float *taps[64];
    const int64_t off3[3] = { 0, dw, 2 * dw };
    for (int64_t o1 = 0; o1 < oh; o1++) {
        float *yr = yo + o1 * ow;
        int64_t r0 = o1 * sh - ph;
        if (chi > clo) {
            if (kh == 3 && kw == 3 && r0 >= 0 && r0 + 2 * dh < ih) { /* all nine taps in one pass */
                for (int64_t i = 0; i < 3; i++) taps[i] = xc + (r0 + i * dh) * iw + clo - pw;
                dw_row_3x3(yr + clo, taps, off3, wk, bv, chi - clo);
            } else {
                for (int64_t o = clo; o < chi; o++) yr[o] = bv;
                for (int64_t k1 = 0; k1 < kh; k1++) {
                    int64_t r = r0 + k1 * dh;
                    if (r < 0 || r >= ih) continue;
                    for (int64_t k0 = 0; k0 < kw; k0 += 64) { /* kernel rows wider than 64 in pieces */
                        int64_t nt = kw - k0 < 64 ? kw - k0 : 64;
                        for (int64_t t = 0; t < nt; t++) taps[t] = xc + r * iw + clo - pw + (k0 + t) * dw;
                        dw_row_taps(yr + clo, taps, wk + k1 * kw + k0, nt, chi - clo);
                    }
                }
            }
        }
        for (int64_t o = 0; o < clo; o++) yr[o] = dw_point(xc, wk, bv, s, o1, o);
        for (int64_t o = chi; o < ow; o++) yr[o] = dw_point(xc, wk, bv, s, o1, o);
        epilogue_row(yr, (size_t)ow, 0.0f, j->io.res ? j->io.res + (yr - j->io.y) : NULL, &j->io.act);
    }
}

/* y[i] += w * x[i * xs] for i < n. */
static void axpy_strided(float *restrict y, const float *restrict x, int64_t xs, float w, int64_t n) {
    if (xs == 1)
        for (int64_t i = 0; i < n; i++) y[i] += w * x[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] += w * x[i * xs];
}

/* One plane of a 3-D depthwise convolution: tap by tap, over the output
 * rows where the tap lands inside the input. */
static void dw_plane_3d(void *ctx, size_t plane, float *scratch) {
    (void)scratch;
    const dw_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    dw_at at = dw_plane_at(j, plane);
    const float *xc = at.x, *wk = at.w;
    float *yo = at.y;
    float bv = at.b;
    for (size_t o = 0; o < s->out_sp; o++) yo[o] = bv;
    for (int64_t k0 = 0; k0 < s->k[0]; k0++)
        for (int64_t k1 = 0; k1 < s->k[1]; k1++)
            for (int64_t k2 = 0; k2 < s->k[2]; k2++) {
                float wv = wk[(k0 * s->k[1] + k1) * s->k[2] + k2];
                int64_t off = k2 * s->d[2] - s->pb[2];
                int64_t lo = off >= 0 ? 0 : (-off + s->s[2] - 1) / s->s[2];
                int64_t hi = s->in[2] - 1 - off < 0 ? 0 : (s->in[2] - 1 - off) / s->s[2] + 1;
                if (hi > s->out[2]) hi = s->out[2];
                if (lo >= hi) continue;
                for (int64_t o0 = 0; o0 < s->out[0]; o0++) {
                    int64_t i0 = o0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                    if (i0 < 0 || i0 >= s->in[0]) continue;
                    for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
                        int64_t i1 = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                        if (i1 < 0 || i1 >= s->in[1]) continue;
                        const float *xr = xc + (i0 * s->in[1] + i1) * s->in[2] + off;
                        float *yr = yo + (o0 * s->out[1] + o1) * s->out[2];
                        axpy_strided(yr + lo, xr + lo * s->s[2], s->s[2], wv, hi - lo);
                    }
                }
            }
    epilogue_row(yo, s->out_sp, 0.0f, j->io.res ? j->io.res + plane * s->out_sp : NULL, &j->io.act);
}

/* ------------------------------------------------------------ depthwise, channel-blocked */

typedef struct dwb_job {
    rlx_nn_conv_io io; /* io.c_out: the channels (= groups; multiplier 1) */
    bool act_in_reg; /* no residual and act NONE / RELU / CLIP: applied before the store */
    size_t n_cb, n_rb; /* blocks of channels and of output rows per image */
    size_t n_img, ipt, n_ig; /* images, images per task, groups of images (tasks per block) */
    size_t tile_w;   /* tile columns: max(columns the taps read, pad + input width) */
} dwb_job;

#define DWB_UNROLL _Pragma("GCC unroll 16")

#if RLX_HAVE_AVX2_BUILD
#define DWB_AVX512_INL __attribute__((target("avx512f,avx2,fma"), always_inline)) static inline

/* r[0..16) as a 16 x 16 matrix of rows, transposed in place. */
DWB_AVX512_INL void dwb_tr16(__m512 *r) {
    __m512 t[16], u[16];
    DWB_UNROLL for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], 128-bit lane L: rows 4g .. 4g + 3 of column 4L + c */
    DWB_UNROLL for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    /* row 4L + c gathers lane L of u[c], u[4 + c], u[8 + c], u[12 + c] */
    DWB_UNROLL for (int c = 0; c < 4; c++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44), v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
        r[8 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
    }
}

/* r[0..8) as an 8 x 8 matrix of rows, transposed in place. */
RLX_AVX2_INLINE void dwb_tr8(__m256 *r) {
    __m256 t[8], u[8];
    DWB_UNROLL for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    DWB_UNROLL for (int g = 0; g < 2; g++) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    DWB_UNROLL for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* lanes [0, n) of 8 set (n in 1..8) */
RLX_AVX2_INLINE __m256i dwb_mask8(int n) {
    static const int32_t m[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
    return _mm256_loadu_si256((const __m256i *)(m + 8 - n));
}

/* AVX-512F: 16 channels */
#define DWB_CB 16
#define DWB_V __m512
#define DWB_FN(name) name##_avx512
#define DWB_ATTR __attribute__((target("avx512f,avx2,fma"))) static
#define DWB_LD(p) _mm512_loadu_ps(p)
#define DWB_ST(p, v) _mm512_storeu_ps(p, v)
#define DWB_LDN(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1u), p)
#define DWB_STN(p, v, n) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1u), v)
#define DWB_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define DWB_ADD(a, b) _mm512_add_ps(a, b)
#define DWB_MAX(a, b) _mm512_max_ps(a, b)
#define DWB_MIN(a, b) _mm512_min_ps(a, b)
#define DWB_SET1(f) _mm512_set1_ps(f)
#define DWB_ZERO() _mm512_setzero_ps()
#define DWB_TRANSPOSE(r) dwb_tr16(r)
#include "backend/cpu/cpu_nn_dw_body.h"

/* AVX2 + FMA: 8 channels */
#define DWB_CB 8
#define DWB_V __m256
#define DWB_FN(name) name##_avx2
#define DWB_ATTR __attribute__((target("avx2,fma"))) static
#define DWB_LD(p) _mm256_loadu_ps(p)
#define DWB_ST(p, v) _mm256_storeu_ps(p, v)
#define DWB_LDN(p, n) _mm256_maskload_ps(p, dwb_mask8(n))
#define DWB_STN(p, v, n) _mm256_maskstore_ps(p, dwb_mask8(n), v)
#define DWB_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define DWB_ADD(a, b) _mm256_add_ps(a, b)
#define DWB_MAX(a, b) _mm256_max_ps(a, b)
#define DWB_MIN(a, b) _mm256_min_ps(a, b)
#define DWB_SET1(f) _mm256_set1_ps(f)
#define DWB_ZERO() _mm256_setzero_ps()
#define DWB_TRANSPOSE(r) dwb_tr8(r)
#include "backend/cpu/cpu_nn_dw_body.h"
#endif

/* Portable C: 8 channels as two 4-float vectors of the compiler (GCC /
 * Clang: SSE2 on any x86-64, NEON on arm64), else as 8 floats; a * b + c
 * rounded twice, as plain C does. */
#if defined(__GNUC__) || defined(__clang__)
typedef float dwb_v4 __attribute__((vector_size(16)));
typedef struct dwb_pv {
    dwb_v4 lo, hi;
} dwb_pv;
static inline dwb_pv dwb_pv_fma(dwb_pv a, dwb_pv b, dwb_pv c) {
    c.lo += a.lo * b.lo;
    c.hi += a.hi * b.hi;
    return c;
}
static inline dwb_pv dwb_pv_add(dwb_pv a, dwb_pv b) {
    a.lo += b.lo;
    a.hi += b.hi;
    return a;
}
#else
typedef struct dwb_pv {
    float v[8];
} dwb_pv;
static inline dwb_pv dwb_pv_fma(dwb_pv a, dwb_pv b, dwb_pv c) {
    for (int i = 0; i < 8; i++) c.v[i] += a.v[i] * b.v[i];
    return c;
}
static inline dwb_pv dwb_pv_add(dwb_pv a, dwb_pv b) {
    for (int i = 0; i < 8; i++) a.v[i] += b.v[i];
    return a;
}
#endif

static inline dwb_pv dwb_pv_ldn(const float *p, int n) {
    float f[8] = { 0 };
    memcpy(f, p, (size_t)n * sizeof(float));
    dwb_pv r;
    memcpy(&r, f, sizeof r);
    return r;
}
static inline void dwb_pv_stn(float *p, dwb_pv a, int n) { memcpy(p, &a, (size_t)n * sizeof(float)); }
/* lane by lane through memory: rare (activations, transposes) */
static inline dwb_pv dwb_pv_max(dwb_pv a, dwb_pv b) {
    float x[8], y[8];
    memcpy(x, &a, sizeof x), memcpy(y, &b, sizeof y);
    for (int i = 0; i < 8; i++) x[i] = x[i] > y[i] ? x[i] : y[i];
    memcpy(&a, x, sizeof x);
    return a;
}
static inline dwb_pv dwb_pv_min(dwb_pv a, dwb_pv b) {
    float x[8], y[8];
    memcpy(x, &a, sizeof x), memcpy(y, &b, sizeof y);
    for (int i = 0; i < 8; i++) x[i] = x[i] < y[i] ? x[i] : y[i];
    memcpy(&a, x, sizeof x);
    return a;
}
static inline dwb_pv dwb_pv_set1(float f) {
    float x[8] = { f, f, f, f, f, f, f, f };
    dwb_pv r;
    memcpy(&r, x, sizeof r);
    return r;
}
static inline void dwb_pv_tr8(dwb_pv *r) {
    float m[8][8], t[8][8];
    memcpy(m, r, sizeof m);
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 8; l++) t[l][i] = m[i][l];
    memcpy(r, t, sizeof t);
}

#define DWB_CB 8
#define DWB_V dwb_pv
#define DWB_FN(name) name##_c
#define DWB_ATTR static
#define DWB_LD(p) dwb_pv_ldn(p, 8)
#define DWB_ST(p, v) dwb_pv_stn(p, v, 8)
#define DWB_LDN(p, n) dwb_pv_ldn(p, n)
#define DWB_STN(p, v, n) dwb_pv_stn(p, v, n)
#define DWB_FMA(a, b, c) dwb_pv_fma(a, b, c)
#define DWB_ADD(a, b) dwb_pv_add(a, b)
#define DWB_MAX(a, b) dwb_pv_max(a, b)
#define DWB_MIN(a, b) dwb_pv_min(a, b)
#define DWB_SET1(f) dwb_pv_set1(f)
#define DWB_ZERO() dwb_pv_set1(0.0f)
#define DWB_TRANSPOSE(r) dwb_pv_tr8(r)
#include "backend/cpu/cpu_nn_dw_body.h"

static int g_dw_force; /* rlx_nn_dw_force: 0 by shape, 1 planes, 2 blocked, 3 rows, 4 flat */

void rlx_nn_dw_force(int path) { g_dw_force = path; }

/* Whether the channel-blocked path runs this depthwise convolution (2-D
 * or 1-D, multiplier 1), by the measurements in the file comment: with
 * AVX-512 from 8 channels on; with AVX2 from 8 channels on unless the
 * rows are stride 1 and at least 160 wide (there the plane path, which
 * vectorises along the rows, is as fast); never on portable C. */
static bool dwb_pick(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    if (g->c_out != g->c_in || s->in[0] != 1 || s->out[0] != 1 || s->k[0] != 1) return false;
    if (g_dw_force == 1 || g_dw_force == 2) return g_dw_force == 2;
    rlx_cpu_isa isa = rlx_cpu_isa_get();
    if (isa < RLX_CPU_ISA_AVX2 || g->c_out < 8) return false;
    return isa >= RLX_CPU_ISA_AVX512 || s->s[2] > 1 || s->out[2] < 160;
}

/* Tile columns of the channel-blocked path: max(columns the taps read,
 * (ow - 1) * sw + (kw - 1) * dw + 1, and pad + input width). */
static size_t dwb_tile_w(const rlx_nn_sp3 *s) {
    size_t need = (size_t)((s->out[2] - 1) * s->s[2] + (s->k[2] - 1) * s->d[2] + 1);
    size_t have = (size_t)(s->pb[2] + s->in[2]);
    return need > have ? need : have;
}

/* Channels per block of the channel-blocked path: the CPU's widest vector. */
static size_t dwb_cb(void) {
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) return 16;
#endif
    return 8;
}

rlx_nn_dw_path rlx_nn_dw_path_of(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    /* the row path where its vectors are mostly full: output rows of 12 or
     * more columns (bench/conv_node, 1 thread, 2026-12-05 dev VM, load 6.4,
     * blocked -> rows us: 272 x 14x14 s1 25.7 -> 20.3, 136 x 28x28 s2 22.0
     * -> 13.5, 136 x 28x28 s1 49 -> 47 (load 12.7); 7-column rows lost:
     * 544 x 7x7 18.0 -> 22.5, 272 x 14x14 s2 12.4 -> 15.4) */
    /* 16 channel planes flattened into one run where the rows are shorter
     * (cpu_nn_dw_rows.c: 960 x 7x7 blocked 35.6 -> 24.9 us) */
    if ((g_dw_force == 4 || (g_dw_force == 0 && s->out[2] < 12)) && rlx_nn_dw_flat_applies(g, s)) return RLX_NN_DW_FLAT;
    /* at 8 threads or more the row path's tasks (two channel planes) are
     * too small on 14-wide rows too: channel blocks there (bench/conv_node,
     * 16 threads, H100 machine's host, 2026-12-07, min us rows -> blocked:
     * 576 x 14x14 29-43 -> 15-18, 8x 576 x 14x14 184 -> 72-78, 8x 384 x
     * 14x14 311 -> 183; at 4 threads all within 20%) */
    int row_min = rlx_parallel_threads() >= 8 ? 16 : 12;
    /* rows of more than 32 input columns (MobileNetV2's 112- and 56-wide
     * maps) where the input stays in the caches (at most 8 MiB: batch 1, as
     * the layer before wrote it); from memory (batch 8) the channel-blocked
     * path reads faster (bench/conv_node, 1 thread, 2026-12-05 dev VM, load
     * 11-18, blocked -> rows us: hot 1x 96 x 112 -> 56 s2 244 -> 162, 144 x
     * 56 -> 28 s2 94 -> 64, 144 x 56x56 s1 213 -> 184, 32 x 112x112 s1 191
     * -> 141; caches evicted, 8x the same 3210 -> 3782, 1288 -> 1095, 2440
     * -> 2691, 2059 -> 2406; BENCHMARKS.md "112- and 56-wide maps") */
    /* From 4 threads on the rows win from memory too (16 threads, min us
     * blocked -> rows: 8x 144 x 56 -> 28 s2 114-120 -> 76-79, 8x 32 x
     * 112x112 200-205 -> 122-131, 8x 96 x 112 -> 56 s2 277-322 -> 169-188;
     * 4 threads: the last 837-1094 -> 575-658) */
    bool rows_fit = rlx_parallel_threads() >= 4 || s->in[2] <= 32 ||
                    (size_t)g->n * (size_t)g->c_in * s->in_sp <= ((size_t)2 << 20); /* floats */
    if ((g_dw_force == 3 || (g_dw_force == 0 && s->out[2] >= row_min && rows_fit)) && rlx_nn_dw_rows_applies(g, s))
        return RLX_NN_DW_ROWS;
    if (dwb_pick(g, s)) return RLX_NN_DW_BLOCKED;
    return RLX_NN_DW_PLANES;
}

rlx_nn_dw_split rlx_nn_dw_split_of(const rlx_conv_geom *g, const rlx_nn_sp3 *s, size_t threads) {
    rlx_nn_dw_split sp;
    memset(&sp, 0, sizeof sp);
    sp.path = rlx_nn_dw_path_of(g, s);
    sp.n_img = g->n > 0 ? (size_t)g->n : 0;
    sp.c = g->c_out > 0 ? (size_t)g->c_out : 0;
    sp.oh = s->out[1] > 0 ? (size_t)s->out[1] : 0;
    sp.ipt = 1, sp.n_ig = sp.n_img, sp.cb = 1, sp.n_cb = sp.c, sp.n_rb = 1;
    size_t ow = s->out[2] > 0 ? (size_t)s->out[2] : 0;
    if (!sp.n_img || !sp.c || !sp.oh || !ow) return sp;
    if (threads < 1) threads = 1;
    switch (sp.path) {
    case RLX_NN_DW_PLANES: /* one (image, channel) plane a task */
        break;
    case RLX_NN_DW_ROWS: {
        /* pairs of channel planes; where they give fewer than 4 tasks per
         * thread on more than 2 threads, blocks of rows (whole groups of
         * RLX_NN_DWR_ROWS, each of at least about 1 Ki output points, 9 Ki
         * multiply-adds: a few times a task's cost in rlx_nn_run_items) */
        sp.cb = 2, sp.n_cb = (sp.c + 1) / 2;
        size_t have = sp.n_img * sp.n_cb;
        if (threads > 2 && have < 4 * threads) {
            size_t want = ceil_div(4 * threads, have), units = ceil_div(sp.oh, RLX_NN_DWR_ROWS);
            size_t by_work = sp.oh * ow * (sp.c < 2 ? 1 : 2) / 1024;
            if (want > units) want = units;
            if (want > by_work) want = by_work;
            sp.n_rb = want ? want : 1;
        }
        break;
    }
    case RLX_NN_DW_FLAT:
    case RLX_NN_DW_BLOCKED: {
        size_t n_ig = 1, blocks;
        sp.cb = sp.path == RLX_NN_DW_FLAT ? 16 : dwb_cb();
        sp.n_cb = ceil_div(sp.c, sp.cb);
        if (sp.path == RLX_NN_DW_BLOCKED) {
            /* rows per block: tile ((rows - 1) * sh + halo rows) within 32 Ki floats */
            size_t halo = (size_t)((s->k[1] - 1) * s->d[1] + 1), row_f = dwb_tile_w(s) * sp.cb, max_rows = 1;
            size_t sh = (size_t)s->s[1];
            while (max_rows < sp.oh && (max_rows * sh + halo) * row_f <= ((size_t)1 << 15)) max_rows++;
            sp.n_rb = ceil_div(sp.oh, max_rows);
        }
        /* a task takes all images of its block, packing its weights once
         * (MobileNetV2 at batch 8: 14x14 and 7x7 maps of 384 to 960 channels
         * packed them once per image); at least 3 tasks per thread where the
         * images (then, channel-blocked, the rows) allow it */
        blocks = sp.n_cb * sp.n_rb;
        if (threads > 1 && blocks < 3 * threads) n_ig = ceil_div(3 * threads, blocks);
        if (n_ig > sp.n_img) n_ig = sp.n_img;
        sp.ipt = ceil_div(sp.n_img, n_ig);
        sp.n_ig = ceil_div(sp.n_img, sp.ipt);
        if (sp.path == RLX_NN_DW_BLOCKED) {
            if (threads > 1 && sp.n_ig * blocks < 3 * threads) sp.n_rb = ceil_div(3 * threads, sp.n_ig * sp.n_cb);
            if (sp.n_rb > sp.oh) sp.n_rb = sp.oh;
        }
        break;
    }
    }
    sp.tasks = sp.n_ig * sp.n_cb * sp.n_rb;
    return sp;
}

size_t rlx_nn_dw_task_points(const rlx_nn_dw_split *sp, size_t ow, size_t item) {
    size_t ig, cb, rb, rows = 0;
    if (item >= sp->tasks) return 0;
    switch (sp->path) {
    case RLX_NN_DW_ROWS: /* (image, pair, rows), the last fastest */
        rb = item % sp->n_rb, cb = item / sp->n_rb % sp->n_cb, ig = item / sp->n_rb / sp->n_cb;
        break;
    case RLX_NN_DW_FLAT: /* (channel block, images), the last fastest */
        ig = item % sp->n_ig, cb = item / sp->n_ig, rb = 0;
        break;
    case RLX_NN_DW_BLOCKED: /* (channel block, rows, images), the last fastest */
        ig = item % sp->n_ig, rb = item / sp->n_ig % sp->n_rb, cb = item / sp->n_ig / sp->n_rb;
        break;
    default: /* (image, channel) planes */
        ig = item / sp->n_cb, cb = item % sp->n_cb, rb = 0;
        break;
    }
    size_t n0 = ig * sp->ipt, ni = sp->n_img - n0 < sp->ipt ? sp->n_img - n0 : sp->ipt;
    size_t c0 = cb * sp->cb, nc = sp->c - c0 < sp->cb ? sp->c - c0 : sp->cb;
    if (sp->path == RLX_NN_DW_ROWS) {
        size_t r0;
        rlx_cpu_block_range(sp->oh, RLX_NN_DWR_ROWS, sp->n_rb, rb, &r0, &rows);
    } else {
        rows = sp->oh * (rb + 1) / sp->n_rb - sp->oh * rb / sp->n_rb;
    }
    return ni * nc * rows * ow;
}

/* The channel-blocked depthwise convolution (cpu_nn_dw_body.h): blocks of
 * `cb` channels by the CPU's widest vector, blocks of output rows so that
 * the tasks keep the pool busy and a tile stays near 128 KiB
 * (rlx_nn_dw_split_of). */
static rlx_status dwb_run(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    dwb_job j;
    memset(&j, 0, sizeof j);
    rlx_nn_conv_io_init(k, g, s, &j.io);
    rlx_act_kind ak = j.io.act.kind;
    j.act_in_reg = !j.io.res && (ak == RLX_ACT_NONE || ak == RLX_ACT_RELU || ak == RLX_ACT_CLIP);
    rlx_nn_item_fn fn = dwb_task_c;
    size_t cb = dwb_cb();
#if RLX_HAVE_AVX2_BUILD
    rlx_cpu_isa isa = rlx_cpu_isa_get();
    if (isa >= RLX_CPU_ISA_AVX512) fn = dwb_task_avx512;
    else if (isa >= RLX_CPU_ISA_AVX2) fn = dwb_task_avx2;
#endif
    int64_t oh = s->out[1], ow = s->out[2], sh = s->s[1];
    if (!g->n || !j.io.c_out || oh <= 0 || ow <= 0) return RLX_OK;
    j.tile_w = dwb_tile_w(s);
    rlx_nn_dw_split sp = rlx_nn_dw_split_of(g, s, (size_t)rlx_parallel_threads());
    j.n_cb = sp.n_cb;
    j.n_rb = sp.n_rb;
    j.n_img = (size_t)g->n;
    j.ipt = sp.ipt;
    j.n_ig = sp.n_ig;
    size_t halo = (size_t)((s->k[1] - 1) * s->d[1] + 1), taps = s->ksz, row_f = j.tile_w * cb;
    size_t rows = ceil_div((size_t)oh, j.n_rb), tile_rows = (rows - 1) * (size_t)sh + halo, slot;
    if (!rlx_mul_ok(tile_rows, row_f, &slot) || slot > SIZE_MAX / 2 - (taps + 1) * cb)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "depthwise tile of %zu rows x %zu too large", tile_rows, row_f);
    slot += (taps + 1) * cb;
    return rlx_nn_run_items(k, sp.tasks, slot, fn, &j);
}

rlx_status rlx_nn_conv_depthwise_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    switch (rlx_nn_dw_path_of(g, s)) { /* the rules: rlx_nn_dw_path_of */
    case RLX_NN_DW_FLAT: return rlx_nn_dw_flat_f32(k, g, s);
    case RLX_NN_DW_ROWS: return rlx_nn_dw_rows_f32(k, g, s);
    case RLX_NN_DW_BLOCKED: return dwb_run(k, g, s);
    default: break;
    }
    dw_job j;
    memset(&j, 0, sizeof j);
    rlx_nn_conv_io_init(k, g, s, &j.io);
    size_t planes = (size_t)g->n * (size_t)g->c_out;
    if (s->in[0] != 1 || s->out[0] != 1 || s->k[0] != 1) return rlx_nn_run_items(k, planes, 0, dw_plane_3d, &j);
    /* stride 1 in place, unless the rows are so short that the border
     * columns (one by one) would be a large part */
    if (s->s[2] == 1 && s->out[2] >= 4 * (s->k[2] * s->d[2] + 1)) return rlx_nn_run_items(k, planes, 0, dw_plane_s1, &j);
    /* padded row: columns 0 .. (ow - 1) * sw + (kw - 1) * dw, then split by phase */
    size_t len = (size_t)((s->out[2] - 1) * s->s[2] + (s->k[2] - 1) * s->d[2] + 1);
    j.phase_len = ceil_div(len, (size_t)s->s[2]);
    size_t slot;
    if (!rlx_mul_ok(j.phase_len, (size_t)s->s[2], &j.row_len) || !rlx_mul_ok(j.row_len, (size_t)s->in[1], &slot))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "depthwise row buffer too large");
    return rlx_nn_run_items(k, planes, slot, dw_plane_2d, &j);
}

/* ------------------------------------------------------------ im2col + GEMM */

/* One run of im2col: d[t] = row[i2 + t * st] for t < len where that
 * column is inside the row (0 <= i2 + t * st < w), else 0 (padding). */
typedef void im2col_run_fn(float *d, const float *row, int64_t w, int64_t i2, int64_t st, int64_t len);

/* [lo, hi): the t whose column is inside the row. */
static void run_bounds(int64_t w, int64_t i2, int64_t st, int64_t len, int64_t *lo, int64_t *hi) {
    int64_t l = i2 >= 0 ? 0 : (-i2 + st - 1) / st;
    int64_t h = w - i2 <= 0 ? 0 : (w - i2 + st - 1) / st;
    if (l > len) l = len;
    if (h > len) h = len;
    if (h < l) h = l;
    *lo = l, *hi = h;
}

static void im2col_run_c(float *d, const float *row, int64_t w, int64_t i2, int64_t st, int64_t len) {
    int64_t lo, hi;
    run_bounds(w, i2, st, len, &lo, &hi);
    for (int64_t t = 0; t < lo; t++) d[t] = 0.0f;
    if (st == 1) {
        memcpy(d + lo, row + i2 + lo, (size_t)(hi - lo) * sizeof(float));
    } else {
        const float *src = row + i2;
        for (int64_t t = lo; t < hi; t++) d[t] = src[t * st];
    }
    for (int64_t t = hi; t < len; t++) d[t] = 0.0f;
}

#if RLX_HAVE_AVX2_BUILD
/* The same copy in AVX-512 vectors of 16 columns: stride 1 by (masked)
 * loads and stores, stride 2 by two loads and a permute (the second load
 * masked to the 15 lanes it uses, so that it reads nothing past the last
 * column taken; the last columns by masked loads and a masked store); no
 * memcpy call per run (runs are 7 to 112 floats). */
__attribute__((target("avx512f"))) static void im2col_run_avx512(float *d, const float *row, int64_t w, int64_t i2,
                                                                 int64_t st, int64_t len) {
    int64_t lo, hi, t = 0;
    run_bounds(w, i2, st, len, &lo, &hi);
    for (; t < lo; t++) d[t] = 0.0f;
    const float *src = row + i2;
    if (st == 1) {
        for (; t + 16 <= hi; t += 16) _mm512_storeu_ps(d + t, _mm512_loadu_ps(src + t));
        if (t < hi) {
            __mmask16 m = (__mmask16)((1u << (hi - t)) - 1u);
            _mm512_mask_storeu_ps(d + t, m, _mm512_maskz_loadu_ps(m, src + t));
            t = hi;
        }
    } else if (st == 2) {
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        for (; t + 16 <= hi; t += 16) {
            __m512 v0 = _mm512_loadu_ps(src + 2 * t), v1 = _mm512_maskz_loadu_ps(0x7fff, src + 2 * t + 16);
            _mm512_storeu_ps(d + t, _mm512_permutex2var_ps(v0, even, v1));
        }
        if (t < hi) { /* the last n < 16 columns: 2 n - 1 floats read, n stored */
            int64_t n = hi - t, e = 2 * n - 1;
            __mmask16 m0 = (__mmask16)(e >= 16 ? 0xffffu : (1u << e) - 1u);
            __mmask16 m1 = (__mmask16)(e > 16 ? (1u << (e - 16)) - 1u : 0u);
            __m512 v0 = _mm512_maskz_loadu_ps(m0, src + 2 * t), v1 = _mm512_maskz_loadu_ps(m1, src + 2 * t + 16);
            _mm512_mask_storeu_ps(d + t, (__mmask16)((1u << n) - 1u), _mm512_permutex2var_ps(v0, even, v1));
            t = hi;
        }
    } else {
        for (; t < hi; t++) d[t] = src[t * st];
    }
    for (; t < len; t++) d[t] = 0.0f;
}
#endif

void rlx_nn_gather_run(float *d, const float *row, int64_t w, int64_t i2, int64_t st, int64_t len) {
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) {
        im2col_run_avx512(d, row, w, i2, st, len);
        return;
    }
#endif
    im2col_run_c(d, row, w, i2, st, len);
}

/* im2col of output positions [p0, p0 + np) for channels [c0, c1) of one
 * group of one image: col[((c - c0) * K + kk) * np + j], kk the kernel tap in
 * (k0, k1, k2) order; taps outside the input (padding) store 0. */
void rlx_nn_im2col_block(const float *x, const rlx_nn_sp3 *s, size_t c0, size_t c1, size_t p0, size_t np,
                         float *col) {
    im2col_run_fn *run = im2col_run_c;
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512) run = im2col_run_avx512;
#endif
    float *dst = col;
    for (size_t c = c0; c < c1; c++) {
        const float *xc = x + c * s->in_sp;
        for (int64_t k0 = 0; k0 < s->k[0]; k0++)
            for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                for (int64_t k2 = 0; k2 < s->k[2]; k2++, dst += np)
                    RLX_NN_GRID_RUNS(s->out, p0, np, {
                        int64_t i0 = a0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                        int64_t i1 = a1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                        float *d = dst + j;
                        if (i0 < 0 || i0 >= s->in[0] || i1 < 0 || i1 >= s->in[1])
                            memset(d, 0, (size_t)len * sizeof(float));
                        else
                            run(d, xc + (i0 * s->in[1] + i1) * s->in[2], s->in[2],
                                a2 * s->s[2] - s->pb[2] + k2 * s->d[2], s->s[2], len);
                    });
    }
}

typedef struct cg_job {
    rlx_nn_conv_io io;         /* io.direct: B is the input */
    size_t n_cb, n_mb;         /* blocks of positions and of output channels (rlx_cpu_block_range) */
    size_t n_unit, m_unit;     /* in whole units of these */
    /* policy "blas": the column matrix of (image, group, position block) */
    size_t ng, p0, np;
    float *col;
    /* policy "pool" with blocks of output channels: the column matrices of
     * all (image, group)s, [ng][kt][sp], built once before the GEMM tasks */
    float *shared;
    const rlx_cpu_sgemm_pack *pack; /* the weights packed at compile time, or NULL */
} cg_job;

bool rlx_nn_conv_block_of(size_t item, size_t groups, size_t sp, size_t n_unit, size_t n_cb, size_t cog,
                          size_t m_unit, size_t n_mb, rlx_nn_conv_block *o) {
    size_t mbi = item % n_mb, rest = item / n_mb;
    size_t cbi = rest % n_cb;
    o->ng = rest / n_cb;
    o->n = o->ng / groups, o->gi = o->ng % groups;
    rlx_cpu_block_range(sp, n_unit, n_cb, cbi, &o->p0, &o->np);
    rlx_cpu_block_range(cog, m_unit, n_mb, mbi, &o->m0, &o->mi);
    return o->np && o->mi;
}

/* The epilogue of a task's block (cg_item), run by the GEMM on each of
 * its blocks of C as they are finished (rlx_cpu_sgemm_serial_epi), while
 * they are in the caches: the block written, then reread with the
 * residual, had left L2 (1x1 256->1024 on 14x14: 800 KiB). */
typedef struct cg_epi {
    float *y;          /* the task's block, row stride ld */
    size_t ld;
    const float *bias; /* per row, or NULL */
    const float *res;  /* laid out as y, or NULL */
    const rlx_act *act;
} cg_epi;

static void cg_epi_block(void *ctx, size_t i0, size_t m, size_t j0, size_t n) {
    const cg_epi *e = ctx;
    size_t off = i0 * e->ld + j0;
    bias_act_block(e->y + off, e->ld, m, n, e->bias ? e->bias + i0 : NULL, e->res ? e->res + off : NULL, e->act);
}

/* Task: (image and group, position block, channel block). */
static void cg_item(void *ctx, size_t item, float *scratch) {
    const cg_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    rlx_nn_conv_block bk;
    if (!rlx_nn_conv_block_of(item, io->groups, io->sp, j->n_unit, j->n_cb, io->cog, j->m_unit, j->n_mb, &bk)) return;
    size_t n = bk.n, gi = bk.gi, ng = bk.ng, p0 = bk.p0, np = bk.np, m0 = bk.m0, mi = bk.mi;
    const float *xg = io->x + (n * io->c_in + gi * io->cig) * io->s->in_sp;
    float *yb = io->y + (n * io->c_out + gi * io->cog + m0) * io->sp + p0;
    const float *bm;
    size_t ldb;
    if (io->direct) {
        bm = xg + p0, ldb = io->sp;
    } else if (j->shared) {
        bm = j->shared + ng * io->kt * io->sp + p0, ldb = io->sp;
    } else {
        rlx_nn_im2col_block(xg, io->s, 0, io->cig, p0, np, scratch);
        bm = scratch, ldb = np;
    }
    rlx_cpu_sgemm_packref wp = { j->pack, gi, m0 };
    cg_epi e = { yb, io->sp, io->b ? io->b + gi * io->cog + m0 : NULL, io->res ? io->res + (yb - io->y) : NULL,
                 &io->act };
    /* the plain weights may be gone where the pack serves (cpu_backend.c) */
    const float *wg = io->w ? io->w + (gi * io->cog + m0) * io->kt : NULL;
    rlx_cpu_sgemm_serial_epi(false, false, mi, np, io->kt, 1.0f, wg, io->kt, bm, ldb, 0.0f, yb, io->sp,
                             j->pack ? &wp : NULL, NULL, cg_epi_block, &e);
}

/* Items (image and group, input channel) of the shared column matrices. */
static void cg_im2col_shared(void *ctx, size_t i0, size_t i1) {
    const cg_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    for (size_t i = i0; i < i1; i++) {
        size_t ng = i / io->cig, c = i % io->cig;
        size_t n = ng / io->groups, gi = ng % io->groups;
        const float *xg = io->x + (n * io->c_in + gi * io->cig) * io->s->in_sp;
        rlx_nn_im2col_block(xg, io->s, c, c + 1, 0, io->sp, j->shared + (ng * io->kt + c * io->s->ksz) * io->sp);
    }
}

/* Policy "blas": one channel of the column matrix. */
static void cg_im2col_channels(void *ctx, size_t c0, size_t c1) {
    const cg_job *j = ctx;
    size_t n = j->ng / j->io.groups, gi = j->ng % j->io.groups;
    const float *xg = j->io.x + (n * j->io.c_in + gi * j->io.cig) * j->io.s->in_sp;
    rlx_nn_im2col_block(xg, j->io.s, c0, c1, j->p0, j->np, j->col + c0 * j->io.s->ksz * j->np);
}

/* Policy "blas": bias and activation of output rows [r0, r1) of the block. */
static void cg_epilogue_rows(void *ctx, size_t r0, size_t r1) {
    const cg_job *j = ctx;
    size_t n = j->ng / j->io.groups, gi = j->ng % j->io.groups;
    float *yb = j->io.y + (n * j->io.c_out + gi * j->io.cog + r0) * j->io.sp + j->p0;
    bias_act_block(yb, j->io.sp, r1 - r0, j->np, j->io.b ? j->io.b + gi * j->io.cog + r0 : NULL,
                   j->io.res ? j->io.res + (yb - j->io.y) : NULL, &j->io.act);
}

size_t rlx_nn_conv_min_tasks(double macs, size_t threads) {
    if (threads <= 2 || macs < 2.0 * (double)threads * (double)(1 << 17)) return 0;
    return 2 * threads;
}

/* Column block target: 512 KiB of floats. */
#define CG_COL_FLOATS ((size_t)1 << 17)

rlx_cpu_split2d_req rlx_nn_conv_gemm_req(const rlx_nn_conv_io *io, const rlx_cpu_sgemm_pack *pk, size_t n_ng,
                                         size_t threads) {
    size_t mr, nr;
    rlx_cpu_sgemm_tile(&mr, &nr);
    size_t max_np = CG_COL_FLOATS / (io->kt ? io->kt : 1) / nr * nr;
    if (max_np < 2 * nr) max_np = 2 * nr;
    rlx_cpu_split2d_req q = { n_ng, io->cog, io->sp, io->kt, pk ? pk->w : mr, nr, max_np,
                              pk ? 0.0 : 8.0 * (double)io->kt, (io->direct ? 8.0 : 12.0) * (double)io->kt,
                              threads, 0.0, 0 };
    q.min_tasks = rlx_nn_conv_min_tasks((double)n_ng * (double)io->cog * (double)io->sp * (double)io->kt, threads);
    return q;
}

rlx_status rlx_nn_conv_gemm_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    cg_job j;
    memset(&j, 0, sizeof j);
    rlx_nn_conv_io_init(k, g, s, &j.io);
    size_t n_ng = (size_t)g->n * j.io.groups;
    if (!n_ng || !j.io.sp || !j.io.cog) return RLX_OK;
    if (rlx_nn_conv_wino_applies(&j.io, k->pack)) {
        bool declined = false;
        rlx_status st = rlx_nn_conv_wino_f32(k, &j.io, (size_t)g->n, &declined);
        if (!declined) return st;
        rlx_cpu_kctx plain = *k; /* the weights as loaded (the pack holds only Winograd's) */
        plain.pack = NULL;
        return rlx_nn_conv_gemm_f32(&plain, g, s);
    }
    if (rlx_nn_conv_pwt_applies(&j.io, k->pack)) return rlx_nn_conv_pwt_f32(k, &j.io, n_ng);
    if (rlx_nn_conv_pw_applies(&j.io)) return rlx_nn_conv_pw_f32(k, &j.io, n_ng);
    if (rlx_nn_conv_ig_applies(&j.io, k->pack)) return rlx_nn_conv_ig_f32(k, &j.io, n_ng);
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS) {
        /* whole column matrices, in blocks of at most 16 Mi floats */
        size_t nb = ((size_t)1 << 24) / (j.io.kt ? j.io.kt : 1);
        if (nb < 64) nb = 64;
        if (nb > j.io.sp) nb = j.io.sp;
        if (!j.io.direct) {
            size_t n_col;
            if (!rlx_mul_ok(j.io.kt, nb, &n_col) || !(j.col = malloc((n_col + 1) * sizeof(float))))
                return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (im2col block of %zu x %zu)", j.io.kt, nb);
        }
        for (j.ng = 0; j.ng < n_ng; j.ng++) {
            size_t n = j.ng / j.io.groups, gi = j.ng % j.io.groups;
            const float *xg = j.io.x + (n * j.io.c_in + gi * j.io.cig) * s->in_sp;
            float *yg = j.io.y + (n * j.io.c_out + gi * j.io.cog) * j.io.sp;
            for (j.p0 = 0; j.p0 < j.io.sp; j.p0 += nb) {
                j.np = j.io.sp - j.p0 < nb ? j.io.sp - j.p0 : nb;
                if (!j.io.direct) rlx_parallel_for(j.io.cig, 1, cg_im2col_channels, &j);
                rlx_cpu_sgemm(false, false, j.io.cog, j.np, j.io.kt, 1.0f, j.io.w + gi * j.io.cog * j.io.kt, j.io.kt,
                              j.io.direct ? xg + j.p0 : j.col, j.io.direct ? j.io.sp : j.np, 0.0f, yg + j.p0, j.io.sp);
                rlx_parallel_for(j.io.cog, 1 + 16384 / j.np, cg_epilogue_rows, &j);
            }
        }
        free(j.col);
        return RLX_OK;
    }
    /* policy "pool": a 2-D split of (output channels x positions) per
     * (image, group) over the threads (rlx_cpu_split2d_choose): blocks of
     * positions of at most CG_COL_FLOATS columns' worth (whole tiles of
     * the GEMM), blocks of output channels on the packed weights' panels;
     * a block repeats the im2col of its positions (or, with several
     * channel blocks, reads columns built once) and the packing of its
     * columns, and the packing of its weight rows unless packed at compile
     * time */
    size_t mr, nr;
    rlx_cpu_sgemm_tile(&mr, &nr);
    j.pack = k->pack;
    rlx_cpu_split2d_req q = rlx_nn_conv_gemm_req(&j.io, j.pack, n_ng, (size_t)rlx_parallel_threads());
    rlx_cpu_split2d sp2 = rlx_cpu_split2d_choose(&q);
    j.n_cb = sp2.n_blocks;
    j.n_mb = sp2.m_blocks;
    j.m_unit = q.m_unit;
    j.n_unit = nr;
    size_t nb = 0; /* the widest block of positions */
    for (size_t i = 0; i < j.n_cb && i < 2; i++) {
        size_t b0, len;
        rlx_cpu_block_range(j.io.sp, nr, j.n_cb, i, &b0, &len);
        if (len > nb) nb = len;
    }
    size_t slot = 0, n_shared = 0;
    if (!j.io.direct && !rlx_mul_ok(j.io.kt, nb, &slot))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "im2col block of %zu x %zu too large", j.io.kt, nb);
    /* several channel blocks read the same columns: build them once (when
     * they fit in 64 MiB) rather than once per channel block */
    if (!j.io.direct && j.n_mb > 1 && rlx_mul_ok(n_ng * j.io.kt, j.io.sp, &n_shared) && n_shared <= ((size_t)1 << 24)) {
        /* the calling thread's scratch when it fits there, else one block for the call */
        float *own = NULL;
        if (!(j.shared = rlx_scratch_get(RLX_SCRATCH_CALL, n_shared * sizeof(float))) &&
            !(j.shared = own = malloc((n_shared + 1) * sizeof(float))))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-float column matrix)", n_shared);
        rlx_parallel_for(n_ng * j.io.cig, 1 + 16384 / (s->ksz * j.io.sp + 1), cg_im2col_shared, &j);
        rlx_status st = rlx_nn_run_items(k, n_ng * j.n_cb * j.n_mb, 0, cg_item, &j);
        free(own);
        return st;
    }
    return rlx_nn_run_items(k, n_ng * j.n_cb * j.n_mb, slot, cg_item, &j);
}
