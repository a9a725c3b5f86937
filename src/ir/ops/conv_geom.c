#include "ir/ops/conv_geom.h"

#include <string.h>

#include "base/status.h"

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* a * b + c for a, b, c >= 0, false on int64 overflow. */
static bool mul_add_ok(int64_t a, int64_t b, int64_t c, int64_t *out) {
    if (a < 0 || b < 0 || c < 0) return false;
    if (a && b > INT64_MAX / a) return false;
    if (a * b > INT64_MAX - c) return false;
    *out = a * b + c;
    return true;
}

/* Kernel dims, strides, dilations, pads, output_padding and output_shape
 * entries above this are refused: no real model comes near, and with every
 * such value below 2^31 the sums below stay far from int64 overflow. */
#define GEOM_ATTR_MAX (((int64_t)1 << 31) - 1)

static rlx_status check_attr_range(const char *desc, const char *name, const int64_t *v, int cnt, int64_t lo) {
    for (int i = 0; i < cnt; i++)
        if (v[i] < lo || v[i] > GEOM_ATTR_MAX)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s[%d] = %lld is outside [%lld, %lld]", desc, name, i,
                            (long long)v[i], (long long)lo, (long long)GEOM_ATTR_MAX);
    return RLX_OK;
}

/* SAME_UPPER / SAME_LOWER: a total padding (0 when negative) split between
 * begin and end, the odd one at the end (upper) or at the begin (lower). */
static void split_pad(int64_t total, bool upper, int64_t *begin, int64_t *end) {
    if (total < 0) total = 0;
    *begin = upper ? total / 2 : total - total / 2;
    *end = total - *begin;
}

static rlx_status read_list(const rlx_node *n, rlx_attr_id a, int nsp, int64_t def, int64_t *out, int mult) {
    size_t cnt;
    const int64_t *v = rlx_param_ints(n, a, &cnt);
    for (int i = 0; i < nsp * mult; i++) out[i] = def;
    if (!v) return RLX_OK;
    if (cnt != (size_t)(nsp * mult))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has %zu values, expected %d", rlx_node_desc(n),
                        rlx_attr_id_name(a), cnt, nsp * mult);
    memcpy(out, v, cnt * sizeof *v);
    return RLX_OK;
}

rlx_status rlx_conv_geom_resolve(const rlx_node *n, rlx_conv_kind kind, const int64_t *x, int x_rank,
                                 const int64_t *w, int w_rank, rlx_conv_geom *g) {
    memset(g, 0, sizeof *g);
    const char *desc = rlx_node_desc(n);
    if (x_rank < 3) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input has rank %d, expected at least 3 (N, C, spatial...)", desc, x_rank);
    int nsp = x_rank - 2;
    if (nsp > RLX_CONV_MAX_SPATIAL)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %d spatial dims (at most %d are supported)", desc, nsp, RLX_CONV_MAX_SPATIAL);
    g->nsp = nsp;
    g->n = x[0];
    g->c_in = x[1];
    for (int i = 0; i < nsp; i++) g->in[i] = x[2 + i];

    /* kernel shape and channels */
    g->group = kind == RLX_GEOM_POOL ? 1 : rlx_param_int(n, RLX_A_group);
    if (g->group < 1) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: group %lld must be >= 1", desc, (long long)g->group);
    size_t kcnt;
    const int64_t *ks = rlx_param_ints(n, RLX_A_kernel_shape, &kcnt);
    if (ks && kcnt == (size_t)nsp) RLX_TRY(check_attr_range(desc, "kernel_shape", ks, nsp, 1));
    if (kind == RLX_GEOM_POOL) {
        if (!ks || kcnt != (size_t)nsp)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: kernel_shape must have %d values", desc, nsp);
        for (int i = 0; i < nsp; i++) g->k[i] = ks[i];
        g->c_out = g->c_in;
    } else {
        if (!w || w_rank != x_rank)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: weight has rank %d, expected %d", desc, w_rank, x_rank);
        for (int i = 0; i < nsp; i++) g->k[i] = w[2 + i];
        if (ks) {
            if (kcnt != (size_t)nsp) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: kernel_shape must have %d values", desc, nsp);
            for (int i = 0; i < nsp; i++) {
                if (g->k[i] >= 0 && ks[i] != g->k[i])
                    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: kernel_shape %lld differs from the weight's %lld", desc,
                                    (long long)ks[i], (long long)g->k[i]);
                g->k[i] = ks[i];
            }
        }
        if (kind == RLX_GEOM_CONV) {
            g->c_out = w[0];
            int64_t c_expect;
            if (g->c_in >= 0 && w[1] >= 0 && (!mul_add_ok(w[1], g->group, 0, &c_expect) || g->c_in != c_expect))
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "%s: input has %lld channels but weight expects %lld x group %lld", desc,
                                (long long)g->c_in, (long long)w[1], (long long)g->group);
            if (g->c_out >= 0 && g->c_out % g->group != 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %lld output channels are not divisible by group %lld", desc,
                                (long long)g->c_out, (long long)g->group);
        } else {
            /* ConvTranspose weight: [C_in, C_out / group, k...] */
            if (g->c_in >= 0 && w[0] >= 0 && g->c_in != w[0])
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input has %lld channels but weight has %lld", desc,
                                (long long)g->c_in, (long long)w[0]);
            g->c_out = RLX_DIM_DYN;
            if (w[1] >= 0 && !mul_add_ok(w[1], g->group, 0, &g->c_out))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %lld output channels per group x group %lld overflows",
                                desc, (long long)w[1], (long long)g->group);
            if (g->c_in >= 0 && g->c_in % g->group != 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %lld input channels are not divisible by group %lld", desc,
                                (long long)g->c_in, (long long)g->group);
        }
    }
    for (int i = 0; i < nsp; i++)
        if (g->k[i] == 0 || g->k[i] < RLX_DIM_DYN)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: kernel dim %d is %lld", desc, i, (long long)g->k[i]);

    int64_t pads[2 * RLX_CONV_MAX_SPATIAL];
    RLX_TRY(read_list(n, RLX_A_strides, nsp, 1, g->stride, 1));
    RLX_TRY(read_list(n, RLX_A_dilations, nsp, 1, g->dil, 1));
    RLX_TRY(read_list(n, RLX_A_pads, nsp, 0, pads, 2));
    if (kind == RLX_GEOM_CONV_TRANSPOSE) RLX_TRY(read_list(n, RLX_A_output_padding, nsp, 0, g->out_pad, 1));
    for (int i = 0; i < nsp; i++) {
        if (g->stride[i] < 1 || g->dil[i] < 1)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: strides and dilations must be >= 1", desc);
        if (pads[i] < 0 || pads[nsp + i] < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: negative pads are not allowed", desc);
        g->pad_begin[i] = pads[i];
        g->pad_end[i] = pads[nsp + i];
    }
    RLX_TRY(check_attr_range(desc, "strides", g->stride, nsp, 1));
    RLX_TRY(check_attr_range(desc, "dilations", g->dil, nsp, 1));
    RLX_TRY(check_attr_range(desc, "pads", pads, 2 * nsp, 0));
    RLX_TRY(check_attr_range(desc, "output_padding", g->out_pad, nsp, 0));
    for (int i = 0; i < nsp; i++)
        if (g->k[i] > GEOM_ATTR_MAX) /* a weight dim: its tensor is already large beyond use */
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: kernel dim %d is %lld, above %lld", desc, i,
                            (long long)g->k[i], (long long)GEOM_ATTR_MAX);
    g->ceil_mode = kind == RLX_GEOM_POOL && rlx_param_int(n, RLX_A_ceil_mode) != 0;
    g->count_include_pad = n->op == RLX_OP_AveragePool && rlx_param_int(n, RLX_A_count_include_pad) != 0;
    const char *ap = rlx_param_str(n, RLX_A_auto_pad);
    bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
    bool valid = strcmp(ap, "VALID") == 0;
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") != 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown auto_pad '%s'", desc, ap);

    for (int i = 0; i < nsp; i++) {
        int64_t in = g->in[i], k = g->k[i], s = g->stride[i], d = g->dil[i];
        if (in > ((int64_t)1 << 62))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: spatial input dim %d is %lld, above 2^62", desc, i,
                            (long long)in);
        /* from here on in <= 2^62 and every attribute < 2^31: sums of a few
         * such terms and (k - 1) * d cannot overflow int64 */
        int64_t ek = (k - 1) * d + 1; /* effective kernel extent */
        /* a pool's explicit pad must be smaller than the kernel's extent: a
         * pad at or above it makes the first or last window lie wholly in the
         * padding whatever the input (a max of nothing, a 0 / 0 average).
         * onnxruntime refuses pads >= kernel_shape ("Pad should be smaller
         * than kernel"), dilation or not; a dilated pad in [kernel_shape,
         * extent) reaches the input, and the ONNX reference computes it, so
         * it runs here. (A dilated window can still skip a short input: those
         * keep the kernels' no-tap values.) */
        if (kind == RLX_GEOM_POOL && !same_upper && !same_lower && !valid &&
            (g->pad_begin[i] >= ek || g->pad_end[i] >= ek))
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: pads %lld (begin) and %lld (end) along spatial dim %d must be smaller than the "
                            "kernel extent %lld (kernel_shape %lld, dilation %lld): a window would hold padding only",
                            desc, (long long)g->pad_begin[i], (long long)g->pad_end[i], i, (long long)ek,
                            (long long)k, (long long)d);
        if (kind == RLX_GEOM_CONV_TRANSPOSE) {
            size_t oc;
            const int64_t *os = rlx_param_ints(n, RLX_A_output_shape, &oc);
            if (os && oc != (size_t)nsp && oc != (size_t)x_rank)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output_shape must have %d values", desc, nsp);
            if (os) RLX_TRY(check_attr_range(desc, "output_shape", os, (int)oc, 0));
            if (in < 0 || k < 0) {
                g->out[i] = RLX_DIM_DYN;
                continue;
            }
            /* full extent s * (in - 1) + out_pad + ek; with s, out_pad and
             * ek below 2^62 only the product can overflow */
            int64_t full;
            if (!mul_add_ok(s, in > 0 ? in - 1 : 0, g->out_pad[i] + ek, &full))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output dim %d overflows (stride %lld x input %lld)", desc,
                                i, (long long)s, (long long)in);
            if (os || same_upper || same_lower) {
                int64_t target;
                if (os) {
                    target = os[oc == (size_t)nsp ? i : 2 + i];
                } else if (!mul_add_ok(in, s, 0, &target)) {
                    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output dim %d overflows (stride %lld x input %lld)",
                                    desc, i, (long long)s, (long long)in);
                }
                /* output larger than the full extent: padded with zeros at the end */
                split_pad(full - target, same_upper, &g->pad_begin[i], &g->pad_end[i]);
                g->out[i] = target;
            } else {
                if (valid) g->pad_begin[i] = g->pad_end[i] = 0;
                g->out[i] = full - g->pad_begin[i] - g->pad_end[i];
            }
            if (g->out[i] < 1)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output dim %d would be %lld", desc, i, (long long)g->out[i]);
            continue;
        }
        if (in < 0 || k < 0) {
            g->out[i] = RLX_DIM_DYN;
            continue;
        }
        if (same_upper || same_lower) {
            int64_t out = ceil_div(in, s);
            split_pad((out - 1) * s + ek - in, same_upper, &g->pad_begin[i], &g->pad_end[i]);
            g->out[i] = out;
            continue;
        }
        if (valid) g->pad_begin[i] = g->pad_end[i] = 0;
        int64_t span = in + g->pad_begin[i] + g->pad_end[i] - ek;
        if (span < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: kernel extent %lld is larger than the padded input %lld along spatial dim %d", desc,
                            (long long)ek, (long long)(in + g->pad_begin[i] + g->pad_end[i]), i);
        int64_t out;
        if (kind == RLX_GEOM_POOL && g->ceil_mode) {
            out = ceil_div(span, s) + 1;
            /* a window must start inside the input or the left padding */
            if ((out - 1) * s >= in + g->pad_begin[i]) out--;
        } else {
            out = span / s + 1;
        }
        g->out[i] = out;
    }
    return RLX_OK;
}
