#include "ir/ops/tensor_geom.h"

#include <math.h>
#include <string.h>

#include "base/status.h"
#include "ir/op.h"

bool rlx_dim_mul(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    if (a && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

rlx_status rlx_slice_resolve(const rlx_node *n, int rank, const int64_t *dims, const int64_t *starts,
                             const int64_t *ends, const int64_t *axes, const int64_t *steps, size_t count,
                             rlx_slice_geom *g) {
    memset(g, 0, sizeof *g);
    g->rank = rank;
    for (int a = 0; a < rank; a++) {
        g->start[a] = 0;
        g->step[a] = 1;
        g->count[a] = dims[a];
        g->full[a] = true;
    }
    if (count > (size_t)rank)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %zu starts/ends for an input of rank %d", rlx_node_desc(n), count,
                        rank);
    bool seen[RLX_MAX_RANK] = { false };
    for (size_t i = 0; i < count; i++) {
        int a = (int)i;
        if (axes && !rlx_norm_axis(axes[i], rank, &a))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", rlx_node_desc(n),
                            (long long)axes[i], rank);
        if (seen[a])
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is sliced twice", rlx_node_desc(n), a);
        seen[a] = true;
        int64_t step = steps ? steps[i] : 1;
        if (step == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: step of axis %d is 0", rlx_node_desc(n), a);
        if (step == INT64_MIN) step = -INT64_MAX; /* keeps -step representable; no dim is that large */
        int64_t d = dims[a], s = starts[i], e = ends[i];
        g->step[a] = step;
        /* ends of INT32_MAX and above mean "to the end" in exported models */
        g->full[a] = step == 1 && s == 0 && (e >= INT32_MAX || (d >= 0 && e >= d));
        if (d < 0) {
            g->start[a] = s;
            g->count[a] = RLX_DIM_DYN;
            continue;
        }
        if (s < 0) s += d;
        if (e < 0) e += d;
        if (step > 0) {
            s = clamp64(s, 0, d);
            e = clamp64(e, 0, d);
            g->count[a] = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = clamp64(s, 0, d - 1);
            e = clamp64(e, -1, d - 1);
            g->count[a] = (d > 0 && s > e) ? (s - e - 1) / (-step) + 1 : 0;
        }
        g->start[a] = g->count[a] > 0 ? s : 0;
    }
    return RLX_OK;
}

rlx_status rlx_pad_resolve(const rlx_node *n, int rank, const int64_t *pads, size_t n_pads, const int64_t *axes,
                           size_t n_axes, int64_t *begin, int64_t *end) {
    for (int a = 0; a < rank; a++) begin[a] = end[a] = 0;
    if (!axes) n_axes = (size_t)rank;
    if (n_pads != 2 * n_axes)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %zu pads for %zu axes (expected %zu)", rlx_node_desc(n), n_pads,
                        n_axes, 2 * n_axes);
    bool seen[RLX_MAX_RANK] = { false };
    for (size_t i = 0; i < n_axes; i++) {
        int a = (int)i;
        if (axes && !rlx_norm_axis(axes[i], rank, &a))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", rlx_node_desc(n),
                            (long long)axes[i], rank);
        if (seen[a]) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %d is padded twice", rlx_node_desc(n), a);
        seen[a] = true;
        begin[a] = pads[i];
        end[a] = pads[n_axes + i];
    }
    return RLX_OK;
}

rlx_status rlx_pad_mode_of(const rlx_node *n, rlx_pad_mode *mode) {
    const char *m = rlx_param_str(n, RLX_A_mode);
    if (strcmp(m, "constant") == 0) *mode = RLX_PAD_CONSTANT;
    else if (strcmp(m, "reflect") == 0) *mode = RLX_PAD_REFLECT;
    else if (strcmp(m, "edge") == 0) *mode = RLX_PAD_EDGE;
    else if (strcmp(m, "wrap") == 0 && n->version >= 19) *mode = RLX_PAD_WRAP;
    else
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: mode '%s' is not one of constant, reflect, edge%s",
                        rlx_node_desc(n), m, n->version >= 19 ? ", wrap" : " (wrap needs Pad-19)");
    return RLX_OK;
}

rlx_status rlx_split_sizes(const rlx_node *n, int64_t dim, const int64_t *split, size_t n_split, int n_out,
                           int64_t *sizes) {
    const rlx_node_attr *num = n->version >= 18 ? rlx_param(n, RLX_A_num_outputs) : NULL;
    if (num && split)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: give either the split input or num_outputs, not both",
                        rlx_node_desc(n));
    if (num && num->i != n_out)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: num_outputs is %lld but the node has %d outputs",
                        rlx_node_desc(n), (long long)num->i, n_out);
    if (n_out < 1) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: no outputs", rlx_node_desc(n));
    if (split) {
        if (n_split != (size_t)n_out)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split has %zu sizes for %d outputs", rlx_node_desc(n), n_split,
                            n_out);
        int64_t sum = 0;
        for (int i = 0; i < n_out; i++) {
            if (split[i] < 0 || split[i] > INT64_MAX - sum)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split size %lld is invalid", rlx_node_desc(n),
                                (long long)split[i]);
            sizes[i] = split[i];
            sum += split[i];
        }
        if (dim >= 0 && sum != dim)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split sizes add up to %lld, the axis has %lld",
                            rlx_node_desc(n), (long long)sum, (long long)dim);
        return RLX_OK;
    }
    if (dim < 0) {
        for (int i = 0; i < n_out; i++) sizes[i] = RLX_DIM_DYN;
        return RLX_OK;
    }
    if (dim % n_out == 0) {
        for (int i = 0; i < n_out; i++) sizes[i] = dim / n_out;
        return RLX_OK;
    }
    if (!num)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: an axis of %lld does not split into %d equal parts",
                        rlx_node_desc(n), (long long)dim, n_out);
    /* Split-18's num_outputs, uneven: parts of ceil(dim / n_out), the last
     * ones smaller, down to empty (the ONNX reference implementation: 5
     * into 4 is 2, 2, 1, 0; 1 into 3 is 1, 0, 0). onnxruntime 1.22 refuses
     * the splits that leave a part empty or more than one part short. */
    int64_t chunk = dim / n_out + 1;
    for (int i = 0; i < n_out; i++) {
        int64_t left = dim - chunk * i;
        sizes[i] = left <= 0 ? 0 : left < chunk ? left : chunk;
    }
    return RLX_OK;
}

void rlx_shape_range(const rlx_node *n, int rank, int *s, int *e) {
    int64_t a = 0, b = rank;
    if (n->version >= 15) {
        a = rlx_param_int(n, RLX_A_start);
        if (rlx_param_given(n, RLX_A_end)) b = rlx_param_int(n, RLX_A_end); /* default: the rank */
    }
    if (a < 0) a += rank;
    if (b < 0) b += rank;
    a = clamp64(a, 0, rank);
    b = clamp64(b, 0, rank);
    if (b < a) b = a;
    *s = (int)a;
    *e = (int)b;
}

rlx_status rlx_transpose_perm(const rlx_node *n, int rank, int64_t *perm) {
    size_t np;
    const int64_t *p = rlx_param_ints(n, RLX_A_perm, &np);
    if (p && np != (size_t)rank)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: perm has %zu entries for an input of rank %d", rlx_node_desc(n), np,
                        rank);
    bool seen[RLX_MAX_RANK] = { false };
    for (int i = 0; i < rank; i++) {
        int64_t a = p ? p[i] : rank - 1 - i;
        if (a < 0 || a >= rank || seen[a])
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: perm is not a permutation of 0..%d", rlx_node_desc(n), rank - 1);
        seen[a] = true;
        perm[i] = a;
    }
    return RLX_OK;
}

rlx_status rlx_range_count(const rlx_node *n, bool is_float, double fs, double fl, double fd, int64_t is, int64_t il,
                           int64_t id, int64_t *count) {
    *count = 0;
    if (is_float) {
        /* NaN operands have no count (onnxruntime returns an empty tensor
         * for them, from an undefined conversion); infinite ones follow the
         * ONNX formula max(ceil((limit - start) / delta), 0): empty, or
         * too long for an infinite count, or undefined for inf - inf */
        const char *nan_what = fs != fs ? "start" : fl != fl ? "limit" : fd != fd ? "delta" : NULL;
        if (nan_what) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s is NaN", rlx_node_desc(n), nan_what);
        if (fd == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: delta is %g", rlx_node_desc(n), fd);
        double c = ceil((fl - fs) / fd);
        if (c != c)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: range from %g to %g by %g has no length (inf - inf)",
                            rlx_node_desc(n), fs, fl, fd);
        if (c > 9007199254740992.0 /* 2^53 */)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: range from %g to %g by %g is too long", rlx_node_desc(n), fs,
                            fl, fd);
        *count = c > 0 ? (int64_t)c : 0;
        return RLX_OK;
    }
    if (id == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: delta is 0", rlx_node_desc(n));
    /* exact: the distance in uint64 (it always fits), then a ceiling division */
    if ((id > 0 && il <= is) || (id < 0 && il >= is)) return RLX_OK;
    uint64_t dist = id > 0 ? (uint64_t)il - (uint64_t)is : (uint64_t)is - (uint64_t)il;
    uint64_t step = id > 0 ? (uint64_t)id : (uint64_t)0 - (uint64_t)id;
    uint64_t c = (dist - 1) / step + 1;
    if (c > (uint64_t)INT64_MAX)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: range is too long", rlx_node_desc(n));
    *count = (int64_t)c;
    return RLX_OK;
}
