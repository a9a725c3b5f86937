#include "ir/ops/resize_geom.h"

#include <math.h>
#include <string.h>

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
    const char *s = rlx_param_str(n, "mode");
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
    s = rlx_param_str(n, "coordinate_transformation_mode");
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
    s = rlx_param_str(n, "nearest_mode");
    if (!lookup(nearest, RLX_ARRAY_LEN(nearest), s, v, &val))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown nearest_mode '%s'", desc, s);
    a->nearest = (rlx_resize_nearest)val;
    a->cubic_a = rlx_param_float(n, "cubic_coeff_a");
    a->exclude_outside = rlx_param_int(n, "exclude_outside") != 0;
    a->extrapolation_value = rlx_param_float(n, "extrapolation_value");
    if (v < 18) return RLX_OK;

    /* Resize-18 and later */
    a->antialias = rlx_param_int(n, "antialias") != 0;
    if (a->antialias && a->mode == RLX_RESIZE_NEAREST)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: antialias applies to modes linear and cubic, not nearest", desc);
    static const name_val policies[] = { { "stretch", RLX_KEEP_STRETCH, 18 },
                                         { "not_larger", RLX_KEEP_NOT_LARGER, 18 },
                                         { "not_smaller", RLX_KEEP_NOT_SMALLER, 18 } };
    s = rlx_param_str(n, "keep_aspect_ratio_policy");
    if (!lookup(policies, RLX_ARRAY_LEN(policies), s, v, &val))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown keep_aspect_ratio_policy '%s'", desc, s);
    a->policy = (rlx_resize_policy)val;
    size_t na;
    const int64_t *axes = rlx_attr_ints(n, "axes", &na);
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
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scale %g of axis %d must be positive", desc, s, d);
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
        bool whole_roi = a->coord != RLX_COORD_TF_CROP_AND_RESIZE ||
                         (fabs(g->roi_start[d]) <= 1e-9 && fabs(g->roi_end[d] - 1.0) <= 1e-9);
        /* as the ONNX reference: an axis whose scale is 1 (to 1e-9) and
         * whose length stays is not resampled */
        g->identity[d] = g->in[d] >= 0 && g->out[d] == g->in[d] && fabs(g->scale[d] - 1.0) <= 1e-9 && whole_roi;
        if (g->out[d] >= 0 && g->in[d] == 0 && g->out[d] > 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is empty in the input but not in the output", desc, d);
    }
    return RLX_OK;
}
