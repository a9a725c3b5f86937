/* CPU reference kernel of Resize (ONNX Resize-10/11/13/18/19) and Upsample
 * (Upsample-7/9).
 *
 * Each output index o along an axis maps to a source coordinate x (the
 * coordinate_transformation_mode) and from there to a few taps (input index,
 * weight): one for nearest, two for linear, four for cubic, more for the
 * antialiasing filters. The taps come from rlx_resize_taps_build
 * (ir/ops/resize_geom.c, shared with the WebGPU lowering), which follows the
 * ONNX reference operation for operation: ratio in (0, 1] (an integer x
 * takes the pixel on its left side with weight 0), indices outside the
 * input clamp to its edge, and with exclude_outside they get weight 0 and
 * the rest is renormalised. An output
 * element is the sum over the product of its axes' taps, in double, rounded
 * once to the output dtype (integer dtypes: half to even, saturated).
 * Nearest copies elements (any dtype) without arithmetic; outside the
 * reference (k->reference false) its rows are shared over the worker pool,
 * which copies the same elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"
#include "base/tensor.h"
#include "ir/ops/resize_geom.h"

/* Nearest: every output element is a copy of one input element (any
 * dtype), or the extrapolation value where tf_crop_and_resize leaves the
 * input. Rows along the last axis share the offset of the other axes. */
typedef struct nearest_job {
    const rlx_tensor *xt;
    rlx_tensor *yt;
    const rlx_resize_taps *taps;
    const rlx_resize_geom *g;
    double extrapolation;
    bool fast; /* a row whose source row is the row before's: copied from it */
} nearest_job;

/* Output rows [r0, r1) (rows along the last axis). */
static void gather_nearest_rows(void *ctx, size_t r0, size_t r1) {
    const nearest_job *j = ctx;
    const rlx_tensor *xt = j->xt;
    rlx_tensor *yt = j->yt;
    const rlx_resize_taps *taps = j->taps;
    const rlx_resize_geom *g = j->g;
    double extrapolation = j->extrapolation;
    int rank = g->rank, last = rank - 1;
    size_t es = rlx_dtype_size(xt->dtype);
    int64_t is[RLX_MAX_RANK];
    rlx_strides(xt->dims, rank, is);
    const char *xs = xt->data;
    char *ys = yt->data;
    size_t cols = (size_t)g->out[last];
    int64_t o[RLX_MAX_RANK] = { 0 };
    if (r0 >= r1) return;
    size_t q = r0; /* the index of row r0 */
    for (int d = last - 1; d >= 0; d--) {
        o[d] = (int64_t)(q % (size_t)g->out[d]);
        q /= (size_t)g->out[d];
    }
    int64_t prev_base = -1;
    bool prev_ext = false;
    for (size_t r = r0; r < r1; r++) {
        bool ext = false;
        int64_t base = 0;
        for (int d = 0; d < last; d++) {
            ext |= taps[d].extrap[o[d]] != 0;
            base += taps[d].idx[o[d]] * is[d];
        }
        size_t oi = r * cols;
        if (j->fast && r > r0 && base == prev_base && ext == prev_ext) {
            /* the same source row as the row before (upsampling): its copy */
            memcpy(ys + oi * es, ys + (oi - cols) * es, cols * es);
        } else {
            for (size_t c = 0; c < cols; c++, oi++) {
                if (ext || taps[last].extrap[c]) {
                    rlx_nn_set(yt, oi, extrapolation);
                    continue;
                }
                size_t src = (size_t)(base + taps[last].idx[c]);
                if (es == 4) ((uint32_t *)ys)[oi] = ((const uint32_t *)xs)[src];
                else if (es == 1) ((uint8_t *)ys)[oi] = ((const uint8_t *)xs)[src];
                else memcpy(ys + oi * es, xs + src * es, es);
            }
        }
        prev_base = base;
        prev_ext = ext;
        for (int d = last - 1; d >= 0; d--) {
            if (++o[d] < g->out[d]) break;
            o[d] = 0;
        }
    }
}

/* Nearest: every output row; over the worker pool, and a row of the same
 * source row as the row before copied from it, unless `reference` (a copy
 * per element: the same result on any split). */
static void gather_nearest(const rlx_tensor *xt, rlx_tensor *yt, const rlx_resize_taps *taps, const rlx_resize_geom *g,
                           double extrapolation, bool reference) {
    nearest_job j = { xt, yt, taps, g, extrapolation, !reference };
    size_t rows = 1, cols = (size_t)g->out[g->rank - 1];
    for (int d = 0; d < g->rank - 1; d++) rows *= (size_t)g->out[d];
    if (reference) gather_nearest_rows(&j, 0, rows);
    else rlx_parallel_for(rows, 1 + 16384 / (cols + 1), gather_nearest_rows, &j);
}

/* Reads a float input (scales, roi) into doubles; count 0 when absent or
 * empty. */
static rlx_status read_doubles(const rlx_cpu_kctx *k, const rlx_tensor *t, double *out, size_t cap, size_t *count,
                               const char *what) {
    *count = 0;
    if (!t) return RLX_OK;
    size_t n = rlx_tensor_numel(t);
    if (n > cap) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%s has %zu values (at most %zu)", what, n, cap);
    for (size_t i = 0; i < n; i++) out[i] = rlx_tensor_get_f64(t, i);
    *count = n;
    return RLX_OK;
}

rlx_status rlx_cpu_nn_resize(rlx_cpu_kctx *k) {
    const rlx_tensor *xt = k->in[0];
    rlx_tensor *yt = k->out[0];
    const rlx_node *n = k->n;
    int rank = xt->rank;
    rlx_resize_attrs a;
    RLX_TRY(rlx_resize_attrs_read(n, rank, &a));
    double scales[RLX_MAX_RANK], roi[2 * RLX_MAX_RANK];
    int64_t sizes[RLX_MAX_RANK];
    size_t n_scales = 0, n_sizes = 0, n_roi = 0;
    if (a.upsample && n->version < 9) {
        size_t cnt;
        const float *f = rlx_param_floats(n, RLX_A_scales, &cnt);
        if (!f || cnt > RLX_MAX_RANK) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad 'scales' attribute");
        for (size_t i = 0; i < cnt; i++) scales[i] = f[i];
        n_scales = cnt;
    } else if (a.upsample || n->version == 10) {
        RLX_TRY(read_doubles(k, rlx_nn_in(k, 1), scales, RLX_MAX_RANK, &n_scales, "scales"));
    } else {
        RLX_TRY(read_doubles(k, rlx_nn_in(k, 1), roi, 2 * RLX_MAX_RANK, &n_roi, "roi"));
        RLX_TRY(read_doubles(k, rlx_nn_in(k, 2), scales, RLX_MAX_RANK, &n_scales, "scales"));
        const rlx_tensor *zt = rlx_nn_in(k, 3);
        if (zt) {
            n_sizes = rlx_tensor_numel(zt);
            if (n_sizes > RLX_MAX_RANK)
                return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "sizes has %zu values", n_sizes);
            for (size_t i = 0; i < n_sizes; i++) sizes[i] = rlx_tensor_get_i64(zt, i);
        }
    }
    if (!n_scales && !n_sizes) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "one of scales and sizes must be given");
    if (a.coord == RLX_COORD_TF_CROP_AND_RESIZE && !n_roi)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "coordinate_transformation_mode tf_crop_and_resize needs roi");
    rlx_resize_geom g;
    RLX_TRY(rlx_resize_geom_resolve(n, &a, xt->dims, rank, n_scales ? scales : NULL, n_scales,
                                    n_sizes ? sizes : NULL, n_sizes, n_roi ? roi : NULL, n_roi, &g));
    g.roi_f32 = n_roi && rlx_nn_in(k, 1)->dtype == RLX_DTYPE_F32;
    if (!rlx_shape_equal(g.out, rank, yt->dims, yt->rank))
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output shape differs from the resolved sizes");
    if (rlx_tensor_numel(yt) == 0) return RLX_OK;

    rlx_resize_taps taps[RLX_MAX_RANK];
    memset(taps, 0, sizeof taps);
    rlx_nn_buf x = { 0 }, y = { 0 };
    rlx_status st = RLX_OK;
    /* the axes' taps in the calling thread's INDEX buffer, else allocated per axis */
    size_t tap_bytes = 0, tap_off[RLX_MAX_RANK];
    for (int d = 0; d < rank && tap_bytes != SIZE_MAX; d++) {
        size_t b = rlx_resize_taps_bytes(&a, &g, d);
        tap_off[d] = tap_bytes;
        tap_bytes = b && b <= SIZE_MAX - tap_bytes - 1 ? tap_bytes + b : SIZE_MAX;
    }
    char *tap_mem = tap_bytes != SIZE_MAX ? rlx_scratch_get(RLX_SCRATCH_INDEX, tap_bytes + 1) : NULL;
    for (int d = 0; d < rank && !st; d++)
        st = tap_mem ? rlx_resize_taps_build_in(n, &a, &g, d, tap_mem + tap_off[d], &taps[d])
                     : rlx_resize_taps_build(n, &a, &g, d, &taps[d]);
    if (!st && a.mode == RLX_RESIZE_NEAREST && rank > 0) {
        gather_nearest(xt, yt, taps, &g, a.extrapolation_value, k->reference);
        for (int d = 0; d < rank; d++) rlx_resize_taps_free(&taps[d]);
        return RLX_OK;
    }
    if (!st) st = rlx_nn_load(k, xt, &x);
    if (!st) st = rlx_nn_out(k, yt, &y);
    if (!st) {
        int64_t is[RLX_MAX_RANK];
        rlx_strides(xt->dims, rank, is);
        int multi[RLX_MAX_RANK], n_multi = 0; /* axes with more than one tap */
        for (int d = 0; d < rank; d++)
            if (taps[d].n > 1) multi[n_multi++] = d;
        int64_t o[RLX_MAX_RANK] = { 0 };
        size_t total = rlx_tensor_numel(yt);
        for (size_t oi = 0; oi < total; oi++) {
            bool ext = false;
            int64_t base = 0;
            for (int d = 0; d < rank; d++) {
                ext |= taps[d].extrap[o[d]] != 0;
                if (taps[d].n == 1) base += taps[d].idx[o[d]] * is[d];
            }
            double v;
            if (ext) {
                v = a.extrapolation_value;
            } else if (n_multi == 0) {
                v = x.p[base];
            } else {
                /* odometer over the taps of the multi-tap axes */
                int t[RLX_MAX_RANK] = { 0 };
                v = 0.0;
                for (;;) {
                    double w = 1.0;
                    int64_t off = base;
                    for (int m = 0; m < n_multi; m++) {
                        const rlx_resize_taps *at = &taps[multi[m]];
                        size_t j = (size_t)o[multi[m]] * (size_t)at->n + (size_t)t[m];
                        w *= at->w[j];
                        off += at->idx[j] * is[multi[m]];
                    }
                    v += w * x.p[off];
                    int m = n_multi - 1;
                    while (m >= 0 && ++t[m] == taps[multi[m]].n) t[m--] = 0;
                    if (m < 0) break;
                }
            }
            y.p[oi] = v;
            for (int d = rank - 1; d >= 0; d--) {
                if (++o[d] < g.out[d]) break;
                o[d] = 0;
            }
        }
        rlx_nn_store(yt, &y);
    }
    rlx_nn_buf_free(&x);
    rlx_nn_buf_free(&y);
    for (int d = 0; d < rank; d++) rlx_resize_taps_free(&taps[d]);
    return st;
}
