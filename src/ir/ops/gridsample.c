#include "ir/ops/gridsample.h"

#include <math.h>
#include <string.h>

#include "base/status.h"

rlx_status rlx_gridsample_attrs_read(const rlx_node *n, rlx_gridsample_attrs *a) {
    memset(a, 0, sizeof *a);
    const char *desc = rlx_node_desc(n);
    bool v20 = n->version >= 20; /* GridSample-20 renamed bilinear and bicubic */
    const char *s = rlx_param_str(n, RLX_A_mode);
    if (!s) s = v20 ? "linear" : "bilinear"; /* the default depends on the version: no schema default */
    if (strcmp(s, "nearest") == 0) a->mode = RLX_GS_NEAREST;
    else if (strcmp(s, v20 ? "linear" : "bilinear") == 0) a->mode = RLX_GS_LINEAR;
    else if (strcmp(s, v20 ? "cubic" : "bicubic") == 0) a->mode = RLX_GS_CUBIC;
    else
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown mode '%s' (GridSample-%d takes %s)", desc, s, n->version,
                        v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic");
    s = rlx_param_str(n, RLX_A_padding_mode);
    if (!s) s = "zeros";
    if (strcmp(s, "zeros") == 0) a->pad = RLX_GS_ZEROS;
    else if (strcmp(s, "border") == 0) a->pad = RLX_GS_BORDER;
    else if (strcmp(s, "reflection") == 0) a->pad = RLX_GS_REFLECTION;
    else
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown padding_mode '%s' (zeros, border or reflection)", desc, s);
    int64_t ac = rlx_param_int(n, RLX_A_align_corners);
    if (ac != 0 && ac != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: align_corners is %lld, expected 0 or 1", desc, (long long)ac);
    a->align_corners = ac == 1;
    return RLX_OK;
}

/* v rounded to f32 (a barrier no contraction crosses: every operation of
 * the f32 coordinate rounds so, in onnxruntime's order). */
static double rf(double v) { return (double)(float)v; }

/* Pixel index of tap t (an integer-valued, finite double) under the
 * padding, or -1 (zeros, outside). */
static int64_t pad_index(const rlx_gridsample_attrs *a, double t, int64_t len) {
    double last = (double)(len - 1);
    switch (a->pad) {
    case RLX_GS_ZEROS:
        return t >= 0 && t <= last ? (int64_t)t : -1;
    case RLX_GS_BORDER:
        return t <= 0 ? 0 : t >= last ? len - 1 : (int64_t)t;
    case RLX_GS_REFLECTION:
    default: {
        double m;
        if (!a->align_corners) { /* mirror about -0.5 and len - 0.5: period 2 len */
            double p = 2.0 * (double)len;
            m = fmod(t < 0 ? -1.0 - t : t, p);
            m = m < (double)len ? m : p - 1.0 - m;
        } else { /* about 0 and len - 1: period 2 (len - 1) */
            if (len == 1) return 0;
            double p = 2.0 * last;
            m = fmod(fabs(t), p);
            m = m <= last ? m : p - m;
        }
        /* m is in range by construction; the clamp keeps any rounding there */
        return m <= 0 ? 0 : m >= last ? len - 1 : (int64_t)m;
    }
    }
}

/* Keys' cubic coefficients of the taps floor(x) - 1 .. floor(x) + 2 at
 * t = x - floor(x) in [0, 1), A = -0.75 (onnxruntime's formulas). */
static void cubic_coeffs(double t, double c[4]) {
    const double A = -0.75;
    double x = fabs(t);
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

int rlx_gridsample_axis_taps(const rlx_gridsample_attrs *a, double g, bool f32_grid, int64_t len, int64_t *idx,
                             double *w) {
    if (isnan(g)) return RLX_GS_TAPS_NAN;
    double x;
    if (isinf(g)) { /* decided before any arithmetic (with align_corners, len 1 would give inf * 0) */
        x = g;
    } else if (f32_grid) {
        double n1 = rf(rf(g) + 1.0);
        x = a->align_corners ? rf(rf(n1 / 2.0) * rf((double)(len - 1))) : rf(rf(rf(n1 * rf((double)len)) - 1.0) / 2.0);
    } else {
        x = a->align_corners ? (g + 1) / 2.0 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2.0;
    }
    if (a->mode == RLX_GS_NEAREST) x = rint(x); /* ties to even (the default rounding mode) */
    if (isinf(x)) { /* an infinite grid value, or a finite one past f32's range */
        if (a->pad == RLX_GS_ZEROS) return RLX_GS_TAPS_OUTSIDE;
        if (a->pad == RLX_GS_REFLECTION) return RLX_GS_TAPS_NAN; /* no position to reflect */
        x = x > 0 ? (double)(len - 1) : 0.0;                     /* border: the edge pixel */
    }
    double base = floor(x), t = x - base; /* exact */
    if (a->pad == RLX_GS_REFLECTION && fabs(base) >= 1073741824.0) {
        /* far out (2^30 pixels or more, where base + 1 may round to base):
         * an index within one period with the same reflected taps, from the
         * exact remainder (the WebGPU kernel's mod_big does the same) */
        if (a->align_corners) {
            double p = 2.0 * (double)(len - 1), mu = len == 1 ? 0.0 : fmod(fabs(base), p);
            base = base < 0 ? -mu : mu;
        } else {
            double p = 2.0 * (double)len, mu = fmod(fabs(base), p);
            base = base < 0 ? -1.0 - fmod(mu + p - 1.0, p) : mu; /* the mirror of |base| - 1 */
        }
    }
    int taps = rlx_gs_taps(a->mode);
    double first = base - (taps == 4 ? 1.0 : 0.0);
    if (taps == 1) w[0] = 1.0;
    else if (taps == 2) w[0] = 1.0 - t, w[1] = t;
    else cubic_coeffs(t, w);
    for (int j = 0; j < taps; j++) idx[j] = pad_index(a, first + (double)j, len);
    return RLX_GS_TAPS_OK;
}
