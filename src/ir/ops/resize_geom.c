#include "ir/ops/resize_geom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"

typedef struct name_val {
    const char *name;
    int val;
    int since; /* first Resize version that accepts the value */
} name_val;

static bool lookup(const name_val *t, size_t n, const char *s, int version, int *out) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, s) == 0 && version >= t[i].since) {
            *out = t[i].val;
            return true;
        }
    return false;
}

rlx_status rlx_resize_attrs_read(const rlx_node *n, int rank, rlx_resize_attrs *a) {
    memset(a, 0, sizeof *a);
    const char *desc = rlx_node_desc(n);
    a->upsample = n->op == RLX_OP_Upsample;
    int v = n->version;
    a->cubic_a = -0.75;
    a->coord = RLX_COORD_ASYMMETRIC;
    a->nearest = RLX_NEAREST_LEGACY;
    a->policy = RLX_KEEP_STRETCH;

    static const name_val modes[] = { { "nearest", RLX_RESIZE_NEAREST, 0 },
                                      { "linear", RLX_RESIZE_LINEAR, 0 },
                                      { "cubic", RLX_RESIZE_CUBIC, 11 } };
    const char *s = rlx_param_str(n, RLX_A_mode);
    int val;
    if (!lookup(modes, RLX_ARRAY_LEN(modes), s, a->upsample ? 10 : v, &val))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown mode '%s'", desc, s);
    a->mode = (rlx_resize_mode)val;
    if (a->upsample || v < 11) return RLX_OK; /* asymmetric, legacy nearest rounding */

    /* Resize-11 and later */
    static const name_val coords[] = {
        { "half_pixel", RLX_COORD_HALF_PIXEL, 11 },
        { "half_pixel_symmetric", RLX_COORD_HALF_PIXEL_SYMMETRIC, 19 },
        { "pytorch_half_pixel", RLX_COORD_PYTORCH_HALF_PIXEL, 11 },
        { "align_corners", RLX_COORD_ALIGN_CORNERS, 11 },
        { "asymmetric", RLX_COORD_ASYMMETRIC, 11 },
        { "tf_crop_and_resize", RLX_COORD_TF_CROP_AND_RESIZE, 11 },
    };
    s = rlx_param_str(n, RLX_A_coordinate_transformation_mode);
    if (v == 11 && strcmp(s, "tf_half_pixel_for_nn") == 0) {
        val = RLX_COORD_TF_HALF_PIXEL_FOR_NN;
    } else if (!lookup(coords, RLX_ARRAY_LEN(coords), s, v, &val)) {
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: coordinate_transformation_mode '%s' is not defined for Resize-%d",
                        desc, s, v);
    }
    a->coord = (rlx_resize_coord)val;
    static const name_val nearest[] = { { "round_prefer_floor", RLX_NEAREST_ROUND_PREFER_FLOOR, 11 },
                                        { "round_prefer_ceil", RLX_NEAREST_ROUND_PREFER_CEIL, 11 },
                                        { "floor", RLX_NEAREST_FLOOR, 11 },
                                        { "ceil", RLX_NEAREST_CEIL, 11 } };
    s = rlx_param_str(n, RLX_A_nearest_mode);
    if (!lookup(nearest, RLX_ARRAY_LEN(nearest), s, v, &val))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown nearest_mode '%s'", desc, s);
    a->nearest = (rlx_resize_nearest)val;
    a->cubic_a = rlx_param_float(n, RLX_A_cubic_coeff_a);
    a->exclude_outside = rlx_param_int(n, RLX_A_exclude_outside) != 0;
    a->extrapolation_value = rlx_param_float(n, RLX_A_extrapolation_value);
    if (v < 18) return RLX_OK;

    /* Resize-18 and later */
    a->antialias = rlx_param_int(n, RLX_A_antialias) != 0;
    if (a->antialias && a->mode == RLX_RESIZE_NEAREST)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: antialias applies to modes linear and cubic, not nearest", desc);
    static const name_val policies[] = { { "stretch", RLX_KEEP_STRETCH, 18 },
                                         { "not_larger", RLX_KEEP_NOT_LARGER, 18 },
                                         { "not_smaller", RLX_KEEP_NOT_SMALLER, 18 } };
    s = rlx_param_str(n, RLX_A_keep_aspect_ratio_policy);
    if (!lookup(policies, RLX_ARRAY_LEN(policies), s, v, &val))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown keep_aspect_ratio_policy '%s'", desc, s);
    a->policy = (rlx_resize_policy)val;
    size_t na;
    const int64_t *axes = rlx_param_ints(n, RLX_A_axes, &na);
    if (axes) {
        if (na == 0 || na > RLX_MAX_RANK || (rank >= 0 && na > (size_t)rank))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axes has %zu values for an input of rank %d", desc, na, rank);
        a->n_axes = (int)na;
        for (size_t i = 0; i < na; i++) {
            if (rank < 0) {
                a->axes[i] = 0;
                continue;
            }
            if (axes[i] < -rank || axes[i] >= rank)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", desc,
                                (long long)axes[i], rank);
            a->axes[i] = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
            for (size_t j = 0; j < i; j++)
                if (a->axes[j] == a->axes[i])
                    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is repeated in axes", desc, a->axes[i]);
        }
    }
    return RLX_OK;
}

/* Largest output extent accepted from a scale (the tensor size is checked
 * again when the output is allocated). */
#define MAX_EXTENT 4.0e18

rlx_status rlx_resize_geom_resolve(const rlx_node *n, const rlx_resize_attrs *a, const int64_t *x, int rank,
                                   const double *scales, size_t n_scales, const int64_t *sizes, size_t n_sizes,
                                   const double *roi, size_t n_roi, rlx_resize_geom *g) {
    memset(g, 0, sizeof *g);
    const char *desc = rlx_node_desc(n);
    if (rank < 0 || rank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input rank %d is not supported", desc, rank);
    g->rank = rank;
    int ax[RLX_MAX_RANK];
    int n_ax = a->n_axes ? a->n_axes : rank;
    for (int i = 0; i < n_ax; i++) ax[i] = a->n_axes ? a->axes[i] : i;
    for (int d = 0; d < rank; d++) {
        g->in[d] = x[d];
        g->out[d] = x[d]; /* axes outside `axes` keep their extent */
        g->scale[d] = 1.0;
        g->roi_start[d] = 0.0;
        g->roi_end[d] = 1.0;
    }
    if (scales && sizes) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: only one of scales and sizes may be given", desc);
    if (!scales && !sizes) {
        for (int i = 0; i < n_ax; i++) g->out[ax[i]] = RLX_DIM_DYN, g->scale[ax[i]] = 0.0;
        return RLX_OK;
    }
    if (roi && a->coord == RLX_COORD_TF_CROP_AND_RESIZE) {
        if (n_roi != 2 * (size_t)n_ax)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: roi has %zu values, expected %d", desc, n_roi, 2 * n_ax);
        for (int i = 0; i < n_ax; i++) {
            g->roi_start[ax[i]] = roi[i];
            g->roi_end[ax[i]] = roi[n_ax + i];
        }
    }
    if (scales) {
        if (n_scales != (size_t)n_ax)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scales has %zu values, expected %d", desc, n_scales, n_ax);
        for (int i = 0; i < n_ax; i++) {
            int d = ax[i];
            double s = scales[i];
            if (!(s > 0) || !isfinite(s))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scale %g of axis %d must be finite and positive", desc, s, d);
            if (a->upsample && s < 1)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Upsample scale %g of axis %d is below 1", desc, s, d);
            g->scale[d] = s;
            if (x[d] < 0) {
                g->out[d] = RLX_DIM_DYN;
                continue;
            }
            double o = floor((double)x[d] * s);
            if (o > MAX_EXTENT)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scale %g makes axis %d too large", desc, s, d);
            g->out[d] = (int64_t)o;
        }
    } else {
        if (n_sizes != (size_t)n_ax)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: sizes has %zu values, expected %d", desc, n_sizes, n_ax);
        bool all_static = true;
        for (int i = 0; i < n_ax; i++) {
            if (sizes[i] < 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: size %lld of axis %d is negative", desc,
                                (long long)sizes[i], ax[i]);
            if (x[ax[i]] < 0) all_static = false;
        }
        if (a->policy == RLX_KEEP_STRETCH) {
            for (int i = 0; i < n_ax; i++) {
                int d = ax[i];
                g->out[d] = sizes[i];
                g->scale[d] = x[d] > 0 ? (double)sizes[i] / (double)x[d] : 0.0;
            }
        } else if (!all_static) {
            for (int i = 0; i < n_ax; i++) g->out[ax[i]] = RLX_DIM_DYN, g->scale[ax[i]] = 0.0;
        } else {
            double s = 0;
            for (int i = 0; i < n_ax; i++) {
                int d = ax[i];
                if (x[d] == 0) continue;
                double r = (double)sizes[i] / (double)x[d];
                if (s == 0 || (a->policy == RLX_KEEP_NOT_LARGER ? r < s : r > s)) s = r;
            }
            for (int i = 0; i < n_ax; i++) {
                int d = ax[i];
                double o = floor(s * (double)x[d] + 0.5); /* round half up */
                if (o > MAX_EXTENT) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is too large", desc, d);
                g->out[d] = (int64_t)o;
                g->scale[d] = s;
            }
        }
    }
    for (int d = 0; d < rank; d++) {
        /* math.isclose(start, 0.0) is start == 0; isclose(end, 1.0) a
         * relative 1e-9 */
        bool whole_roi = a->coord != RLX_COORD_TF_CROP_AND_RESIZE ||
                         (g->roi_start[d] == 0.0 && fabs(g->roi_end[d] - 1.0) <= 1e-9 * fmax(fabs(g->roi_end[d]), 1.0));
        /* as the ONNX reference: an axis whose scale is 1 (to 1e-9) and
         * whose length stays is not resampled */
        g->identity[d] = g->in[d] >= 0 && g->out[d] == g->in[d] && fabs(g->scale[d] - 1.0) <= 1e-9 && whole_roi;
        if (g->out[d] >= 0 && g->in[d] == 0 && g->out[d] > 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is empty in the input but not in the output", desc, d);
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ taps */

/* Source coordinate (x_original) of output index o along axis d of g;
 * *outside is set for tf_crop_and_resize when it falls outside [0, in - 1].
 * The ONNX reference (onnx/reference/ops/op_resize.py, _compute_x_ori),
 * formula for formula: the same double operations in the same order, so
 * that an exact tie (7 -> 4 rows, asymmetric: row 2 maps to 3.5) lands
 * where the reference puts it. out_f is the unfloored output length
 * scale * in ("output_width"). With an f32 roi the reference (NumPy 2
 * promotion rules) subtracts roi_end - roi_start and multiplies
 * roi_start * (in - 1) in f32; so does this when g->roi_f32. */
static double rlx_resize_source_coord(const rlx_resize_attrs *a, const rlx_resize_geom *g, int d, int64_t o, bool *outside) {
    double in = (double)g->in[d], s = g->scale[d], x = (double)o;
    double out_f = s * in;
    *outside = false;
    switch (a->coord) {
    case RLX_COORD_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case RLX_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)g->out[d] / out_f;
        double offset = in / 2.0 * (1.0 - adjustment);
        return offset + (x + 0.5) / s - 0.5;
    }
    /* the reference takes -0.5 (not the 0 of the operator's text) when the
     * unfloored output length is exactly 1; it matters for cubic only */
    case RLX_COORD_PYTORCH_HALF_PIXEL: return out_f == 1.0 ? -0.5 : (x + 0.5) / s - 0.5;
    case RLX_COORD_ALIGN_CORNERS: return out_f == 1.0 ? 0.0 : x * (in - 1.0) / (out_f - 1.0);
    case RLX_COORD_ASYMMETRIC: return x / s;
    case RLX_COORD_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case RLX_COORD_TF_CROP_AND_RESIZE: {
        double st = g->roi_start[d], en = g->roi_end[d], span, start, v;
        if (g->roi_f32) {
            float span32 = (float)en - (float)st;
            float start32 = (float)st * (float)(in - 1.0);
            float half32 = span32 * (float)(in - 1.0) / 2.0f;
            span = span32, start = start32;
            v = out_f == 1.0 ? (double)half32 : x * span * (in - 1.0) / (out_f - 1.0);
        } else {
            span = en - st, start = st * (in - 1.0);
            v = out_f == 1.0 ? span * (in - 1.0) / 2.0 : x * span * (in - 1.0) / (out_f - 1.0);
        }
        v += start;
        *outside = v < 0.0 || v > in - 1.0;
        return v;
    }
    }
    return x;
}

/* Number of taps and the offset of the first one from the pixel left of
 * x (linear 2, cubic 4; antialias widens them by 1 / scale). */
static void tap_span(const rlx_resize_attrs *a, double scale, int64_t *first, int64_t *count) {
    if (a->mode == RLX_RESIZE_NEAREST) {
        *first = 0, *count = 2;
        return;
    }
    double s = a->antialias && scale < 1.0 ? scale : 1.0;
    int64_t start = (int64_t)floor((a->mode == RLX_RESIZE_LINEAR ? -1.0 : -2.0) / s) + 1; /* 0 / -1 without antialias */
    *first = start, *count = 2 - 2 * start;
}

/* The reference's cubic kernel of _cubic_coeffs_antialias (powers, not
 * Horner's form). */
static double cubic_aa(double x, double A) {
    x = fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1.0) return (A + 2.0) * x3 - (A + 3.0) * x2 + 1.0;
    if (x < 2.0) return A * x3 - 5.0 * A * x2 + 8.0 * A * x - 4.0 * A;
    return 0.0;
}

/* Coefficients w[0..count) of one output index for ratio in (0, 1] (the
 * distance of x from the pixel on its left), as the reference's
 * _nearest_coeffs / _linear_coeffs(_antialias) / _cubic_coeffs(_antialias). */
static void coeffs(const rlx_resize_attrs *a, double ratio, bool integer, double scale, int64_t first, int64_t count,
                   double *w) {
    if (a->mode == RLX_RESIZE_NEAREST) {
        bool hi;
        if (integer) hi = true;
        else if (a->nearest == RLX_NEAREST_LEGACY) hi = scale < 1.0; /* ceil when downsampling, else floor */
        else if (a->nearest == RLX_NEAREST_ROUND_PREFER_FLOOR) hi = ratio > 0.5;
        else if (a->nearest == RLX_NEAREST_ROUND_PREFER_CEIL) hi = ratio >= 0.5;
        else hi = a->nearest == RLX_NEAREST_CEIL;
        w[0] = hi ? 0.0 : 1.0, w[1] = hi ? 1.0 : 0.0;
        return;
    }
    double A = a->cubic_a;
    if (!a->antialias) {
        if (a->mode == RLX_RESIZE_LINEAR) {
            w[0] = 1.0 - ratio, w[1] = ratio;
        } else {
            double r1 = ratio + 1.0, q = 1.0 - ratio, q1 = q + 1.0;
            w[0] = ((A * r1 - 5.0 * A) * r1 + 8.0 * A) * r1 - 4.0 * A;
            w[1] = ((A + 2.0) * ratio - (A + 3.0)) * ratio * ratio + 1.0;
            w[2] = ((A + 2.0) * q - (A + 3.0)) * q * q + 1.0;
            w[3] = ((A * q1 - 5.0 * A) * q1 + 8.0 * A) * q1 - 4.0 * A;
        }
        return;
    }
    double s = scale < 1.0 ? scale : 1.0, sum = 0.0;
    for (int64_t j = 0; j < count; j++) {
        double v;
        if (a->mode == RLX_RESIZE_LINEAR) {
            v = 1.0 - fabs(((double)(first + j) - ratio) * s);
            v = v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
        } else {
            v = cubic_aa(s * ((double)(first + j) - ratio), A);
        }
        w[j] = v;
        sum += v;
    }
    for (int64_t j = 0; j < count; j++) w[j] /= sum;
}

void rlx_resize_taps_free(rlx_resize_taps *t) {
    free(t->block);
    memset(t, 0, sizeof *t);
}

/* Axis d's taps per output element (count: the window, kept: stored) and
 * its block's layout: idx [total + 1], w [total + 1], cw [count], extrap
 * [out + 1]; false when too large. */
static bool taps_layout(const rlx_resize_attrs *a, const rlx_resize_geom *g, int d, int64_t *first, int64_t *count,
                        int64_t *kept, size_t *total, size_t *bytes) {
    int64_t out = g->out[d];
    *first = 0, *count = 1;
    if (!g->identity[d]) tap_span(a, g->scale[d], first, count);
    *kept = a->mode == RLX_RESIZE_NEAREST && !g->identity[d] ? 1 : *count; /* nearest keeps the chosen tap */
    if (*count > (1 << 24) || out < 0 || !rlx_mul_ok((size_t)out, (size_t)*kept, total) || *total > SIZE_MAX / 64 ||
        (size_t)out > SIZE_MAX / 4)
        return false;
    *bytes = ((*total + 1) * 16 + (size_t)*count * 8 + (size_t)out + 1 + 63) / 64 * 64;
    return true;
}

size_t rlx_resize_taps_bytes(const rlx_resize_attrs *a, const rlx_resize_geom *g, int d) {
    int64_t first, count, kept;
    size_t total, bytes;
    return taps_layout(a, g, d, &first, &count, &kept, &total, &bytes) ? bytes : 0;
}

rlx_status rlx_resize_taps_build(const rlx_node *n, const rlx_resize_attrs *a, const rlx_resize_geom *g, int d,
                                 rlx_resize_taps *t) {
    memset(t, 0, sizeof *t);
    size_t bytes = rlx_resize_taps_bytes(a, g, d);
    void *mem = bytes ? malloc(bytes) : NULL;
    if (bytes && !mem) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory (resize taps)", rlx_node_desc(n));
    rlx_status st = rlx_resize_taps_build_in(n, a, g, d, mem, t);
    if (st) free(mem);
    else t->block = mem;
    return st;
}

rlx_status rlx_resize_taps_build_in(const rlx_node *n, const rlx_resize_attrs *a, const rlx_resize_geom *g, int d,
                                    void *mem, rlx_resize_taps *t) {
    memset(t, 0, sizeof *t);
    int64_t out = g->out[d], in = g->in[d];
    int64_t first, count, kept;
    size_t total, bytes;
    if (!taps_layout(a, g, d, &first, &count, &kept, &total, &bytes) || !mem)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: axis %d needs %lld taps per output element", rlx_node_desc(n), d,
                        (long long)count);
    t->n = (int)kept;
    t->idx = mem;
    t->w = (double *)(t->idx + total + 1);
    double *cw = t->w + total + 1;
    t->extrap = (uint8_t *)(cw + count);
    memset(t->extrap, 0, (size_t)out + 1);
    int64_t half = count / 2; /* the reference's pad_width (count is even) */
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = t->idx + o * kept;
        double *w = t->w + o * kept;
        if (g->identity[d]) {
            ix[0] = o, w[0] = 1.0;
            continue;
        }
        bool outside;
        double x = rlx_resize_source_coord(a, g, d, o, &outside);
        t->extrap[o] = outside;
        /* far outside the input every tap clamps to the edge anyway; keep x
         * where the integer conversions below are defined */
        double lim = (double)(count + 2);
        if (x != x) x = 0.0;
        if (x < -lim) x = -lim;
        if (x > (double)in + lim) x = (double)in + lim;
        double fl = floor(x);
        bool integer = x == fl;
        coeffs(a, integer ? 1.0 : x - fl, integer, g->scale[d], first, count, cw);
        /* the window as the reference finds it: the `count` indices nearest
         * x, found on x + half (which rounds where x is within an ulp above
         * an integer 2^k - 1), the smaller index on a tie */
        double xp = x + (double)half, p = floor(xp);
        int64_t start = (int64_t)p - half - (xp == p ? half : half - 1);
        if (a->exclude_outside) {
            double sum = 0.0;
            for (int64_t j = 0; j < count; j++) {
                if (start + j < 0 || start + j >= in) cw[j] = 0.0;
                sum += cw[j];
            }
            if (sum != 0.0)
                for (int64_t j = 0; j < count; j++) cw[j] /= sum;
        }
        if (kept == 1) { /* nearest: the tap of coefficient 1 */
            int64_t i = cw[1] != 0.0 ? start + 1 : start;
            ix[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
            w[0] = 1.0;
            continue;
        }
        for (int64_t j = 0; j < count; j++) {
            int64_t i = start + j;
            ix[j] = i < 0 ? 0 : i >= in ? in - 1 : i;
            w[j] = cw[j];
        }
    }
    return RLX_OK;
}
