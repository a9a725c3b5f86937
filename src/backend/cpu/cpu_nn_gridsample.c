/* CPU kernel of GridSample (ONNX GridSample-16/20/22), the oracle of the
 * WebGPU lowering: X [N, C, D1..Dr] sampled at grid [N, O1..Or, r] into
 * Y [N, C, O1..Or], every mode (nearest, linear, cubic: r = 2), padding
 * and align_corners, any r >= 1, float dtypes (X and grid each f32, f16,
 * bf16 or f64). Semantics and the cases onnxruntime leaves undefined (NaN
 * and infinite coordinates): ir/ops/gridsample.h.
 *
 * Work goes by blocks of GS_BLOCK output points of one image (items of
 * the worker pool): each point's taps (rlx_gridsample_axis_taps per axis)
 * are combined once into a list of (offset in the input plane, weight),
 * taps that zeros padding puts outside left out; then every channel of
 * the block sums its points' lists in double, rounded once to Y's dtype.
 * The channel loop runs inside the block, so the weights are computed
 * once per output point whatever C is, and each channel's outputs are
 * written in order. Nothing is allocated per element: the lists live in
 * the task's scratch (rlx_nn_run_items). The same bits at any thread
 * count (an output is one sum in a fixed order). */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "base/tensor.h"
#include "ir/ops/gridsample.h"
#include "ir/ops/ops.h"

#define GS_BLOCK 64 /* output points per item */
#define GS_MAX_R (RLX_MAX_RANK - 2)

typedef struct gs_job {
    const rlx_tensor *x, *g;
    rlx_tensor *y;
    rlx_gridsample_attrs a;
    int r, taps, corners;                     /* corners = taps^r */
    int64_t c, len[GS_MAX_R], stride[GS_MAX_R]; /* spatial dims of X in order, their strides in a plane */
    size_t plane_in, plane_out, blocks;       /* blocks of one image */
    bool f32_grid;                            /* f32, f16 or bf16 grid: f32 coordinates */
} gs_job;

/* The corner list of output point p of image n: *cnt corners (offset,
 * weight), or -1 when the output is NaN. */
static void point_corners(const gs_job *j, size_t n, size_t p, int64_t *off, double *w, int *cnt) {
    int64_t idx[GS_MAX_R][4];
    double tw[GS_MAX_R][4];
    int r = j->r, taps = j->taps;
    size_t gbase = (n * j->plane_out + p) * (size_t)r;
    const float *gf = j->g->dtype == RLX_DTYPE_F32 ? (const float *)j->g->data + gbase : NULL;
    bool outside = false;
    for (int d = 0; d < r; d++) {
        /* grid[..., 0] is the innermost spatial dim (x, the width) */
        size_t k = (size_t)(r - 1 - d);
        double gv = gf ? (double)gf[k] : rlx_tensor_get_f64(j->g, gbase + k);
        int st = rlx_gridsample_axis_taps(&j->a, gv, j->f32_grid, j->len[d], idx[d], tw[d]);
        if (st == RLX_GS_TAPS_NAN) {
            *cnt = -1;
            return;
        }
        outside |= st == RLX_GS_TAPS_OUTSIDE;
    }
    int m = 0;
    if (!outside) {
        int sel[GS_MAX_R] = { 0 };
        for (int k = 0; k < j->corners; k++) {
            int64_t o = 0;
            double wt = 1.0;
            bool in = true;
            for (int d = 0; d < r; d++) {
                int64_t i = idx[d][sel[d]];
                in &= i >= 0;
                o += i * j->stride[d];
                wt *= tw[d][sel[d]];
            }
            if (in) off[m] = o, w[m] = wt, m++;
            for (int d = r - 1; d >= 0 && ++sel[d] == taps; d--) sel[d] = 0; /* the next corner */
        }
    }
    *cnt = m;
}

static void gs_item(void *ctx, size_t item, float *scratch) {
    const gs_job *j = ctx;
    size_t n = item / j->blocks, p0 = (item % j->blocks) * GS_BLOCK;
    size_t np = j->plane_out - p0 < GS_BLOCK ? j->plane_out - p0 : GS_BLOCK;
    size_t nc = (size_t)j->corners;
    int64_t *off = (int64_t *)(void *)scratch;
    double *w = (double *)(void *)(off + GS_BLOCK * nc);
    int *cnt = (int *)(void *)(w + GS_BLOCK * nc);
    for (size_t q = 0; q < np; q++) point_corners(j, n, p0 + q, off + q * nc, w + q * nc, &cnt[q]);
    bool fx = j->x->dtype == RLX_DTYPE_F32, fy = j->y->dtype == RLX_DTYPE_F32;
    for (int64_t c = 0; c < j->c; c++) {
        size_t xb = ((size_t)n * (size_t)j->c + (size_t)c) * j->plane_in;
        size_t yb = ((size_t)n * (size_t)j->c + (size_t)c) * j->plane_out + p0;
        const float *xf = fx ? (const float *)j->x->data + xb : NULL;
        float *yf = fy ? (float *)j->y->data + yb : NULL;
        for (size_t q = 0; q < np; q++) {
            double acc = 0.0;
            if (cnt[q] < 0) {
                acc = NAN;
            } else {
                const int64_t *o = off + q * nc;
                const double *wt = w + q * nc;
                if (xf)
                    for (int k = 0; k < cnt[q]; k++) acc += wt[k] * (double)xf[o[k]];
                else
                    for (int k = 0; k < cnt[q]; k++) acc += wt[k] * rlx_tensor_get_f64(j->x, xb + (size_t)o[k]);
            }
            if (yf) yf[q] = (float)acc;
            else rlx_nn_set(j->y, yb + q, acc);
        }
    }
}

rlx_status rlx_cpu_nn_gridsample(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *g = k->in[1];
    rlx_tensor *y = k->out[0];
    gs_job j = { .x = x, .g = g, .y = y };
    RLX_TRY(rlx_gridsample_attrs_read(k->n, &j.a));
    /* shape inference checked these when the model loaded; the run's
     * tensors are checked again before any index is formed from them */
    int r = x->rank - 2;
    if (r < 1 || r > GS_MAX_R || g->rank != x->rank || g->dims[r + 1] != r || g->dims[0] != x->dims[0] ||
        y->rank != x->rank || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "X of rank %d and grid of rank %d do not match", x->rank,
                            g->rank);
    if (j.a.mode == RLX_GS_CUBIC && r != 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "mode cubic needs 2 spatial dims, got %d", r);
    if (!rlx_dtype_is_float(x->dtype) || !rlx_dtype_is_float(g->dtype) || y->dtype != x->dtype)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "X %s and grid %s: GridSample takes float data",
                            rlx_dtype_name(x->dtype), rlx_dtype_name(g->dtype));
    j.r = r;
    j.c = x->dims[1];
    j.taps = rlx_gs_taps(j.a.mode);
    j.corners = 1;
    for (int d = 0; d < r; d++) j.corners *= j.taps;
    j.plane_in = j.plane_out = 1;
    bool empty_in = false;
    for (int d = r - 1; d >= 0; d--) {
        if (y->dims[2 + d] != g->dims[1 + d])
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "output dim %d is %lld, the grid's %lld", 2 + d,
                                (long long)y->dims[2 + d], (long long)g->dims[1 + d]);
        j.len[d] = x->dims[2 + d];
        j.stride[d] = (int64_t)j.plane_in;
        j.plane_in *= (size_t)x->dims[2 + d];
        j.plane_out *= (size_t)y->dims[2 + d];
        empty_in |= x->dims[2 + d] == 0;
    }
    j.f32_grid = g->dtype != RLX_DTYPE_F64;
    size_t total = rlx_tensor_numel(y);
    if (total == 0) return RLX_OK;
    if (empty_in) { /* no pixel to read: zeros padding gives 0 (every tap outside) */
        if (j.a.pad != RLX_GS_ZEROS)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "padding_mode %s needs a pixel along every spatial dim",
                                j.a.pad == RLX_GS_BORDER ? "border" : "reflection");
        for (size_t i = 0; i < total; i++) rlx_nn_set(y, i, 0.0);
        return RLX_OK;
    }
    j.blocks = (j.plane_out + GS_BLOCK - 1) / GS_BLOCK;
    size_t items = (size_t)x->dims[0] * j.blocks;
    /* per item: GS_BLOCK lists of `corners` int64 offsets and f64 weights, and their counts */
    size_t slot_floats = GS_BLOCK * (size_t)j.corners * 4 + GS_BLOCK;
    return rlx_nn_run_items(k, items, slot_floats, gs_item, &j);
}
