/* CPU reference kernels of the tensor family (see src/ir/ops/ops_tensor.c).
 *
 * Data-moving ops copy elements by their byte size, so they work on every
 * dtype. Most of them are one mechanism, tab_copy: an output element at
 * coordinates c reads the input element at sum_a tab[a][c_a], where each
 * per-axis table holds element offsets (index * stride) or -1 for "write
 * the fill value". Transpose, Slice, Expand, Tile, Pad, Compress,
 * DepthToSpace and SpaceToDepth only differ in how they fill the tables.
 * Shape-carrying inputs (Slice starts, Pad pads, ...) are read from the
 * input tensors and resolved by the same code as shape inference
 * (src/ir/ops/tensor_geom.c). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"
#include "base/tensor.h"
#include "ir/ops/ops.h"
#include "ir/ops/tensor_geom.h"

/* ------------------------------------------------------------ helpers */

static const rlx_tensor *kin(const rlx_cpu_kctx *k, int i) { return i < k->n->n_in ? k->in[i] : NULL; }
static rlx_tensor *kout(const rlx_cpu_kctx *k, int i) { return i < k->n->n_out ? k->out[i] : NULL; }

static inline void elem_copy(char *dst, const char *src, size_t es) {
    switch (es) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, es); break;
    }
}

/* Output shape must be what the kernel computes (inference and kernel share
 * the geometry, so a difference is a bug). */
static rlx_status check_dims(rlx_cpu_kctx *k, const rlx_tensor *y, int rank, const int64_t *dims) {
    if (y->rank == rank && rlx_shape_equal(y->dims, y->rank, dims, rank)) return RLX_OK;
    char a[128], b[128];
    return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output was allocated as %s, the kernel computes %s",
                        rlx_shape_str(y->dims, y->rank, a, sizeof a), rlx_shape_str(dims, rank, b, sizeof b));
}

/* Integer values of an input tensor (any integer dtype), at most cap. */
static rlx_status read_ints(rlx_cpu_kctx *k, const rlx_tensor *t, const char *what, int64_t *buf, size_t cap,
                            size_t *n) {
    *n = 0;
    if (!t) return RLX_OK;
    size_t cnt = rlx_tensor_numel(t);
    if (!rlx_dtype_is_int(t->dtype))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%s has dtype %s, expected an integer type", what,
                            rlx_dtype_name(t->dtype));
    if (cnt > cap) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%s has %zu values, at most %zu", what, cnt, cap);
    for (size_t i = 0; i < cnt; i++) buf[i] = rlx_tensor_get_i64(t, i);
    *n = cnt;
    return RLX_OK;
}

/* An index into an axis of extent `dim`, negative counting from the end. */
static rlx_status norm_index(rlx_cpu_kctx *k, int64_t v, int64_t dim, int64_t *out) {
    int64_t w = v < 0 ? v + dim : v;
    if (w < 0 || w >= dim)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "index %lld is out of range [%lld, %lld)", (long long)v,
                            (long long)-dim, (long long)dim);
    *out = w;
    return RLX_OK;
}

static rlx_status oom(rlx_cpu_kctx *k) { return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory"); }

/* ------------------------------------------------------------ table copy */

typedef struct tabs {
    int rank;
    int64_t dims[RLX_MAX_RANK]; /* output dims */
    int64_t *t[RLX_MAX_RANK];   /* per axis: dims[a] source offsets (elements) or -1 */
    bool contig;                /* t[rank - 1] holds only its 0: the last axis is read contiguously */
    int64_t *buf;
    int64_t small[512]; /* buf when the tables fit: no allocation in the run */
} tabs;

static rlx_status tabs_make(rlx_cpu_kctx *k, tabs *tb, int rank, const int64_t *dims) {
    size_t n = 1;
    tb->rank = rank;
    tb->contig = false;
    for (int a = 0; a < rank; a++) n += (size_t)dims[a];
    tb->buf = n <= sizeof tb->small / sizeof tb->small[0] ? tb->small : malloc(n * sizeof(int64_t));
    if (!tb->buf) return oom(k);
    size_t o = 0;
    for (int a = 0; a < rank; a++) {
        tb->dims[a] = dims[a];
        tb->t[a] = tb->buf + o;
        o += (size_t)dims[a];
    }
    return RLX_OK;
}

static void tabs_free(tabs *tb) {
    if (tb->buf != tb->small) free(tb->buf);
}

typedef struct tab_job {
    const tabs *tb;
    const char *src;
    char *dst;
    size_t es;
    const void *fill;
    bool contig; /* the last axis' table is t0, t0 + 1, ...: a row is one memcpy */
} tab_job;

/* Output rows [r0, r1) (a row: the last axis) of tab_copy. */
static void tab_rows(void *ctx, size_t r0, size_t r1) {
    const tab_job *j = ctx;
    const tabs *tb = j->tb;
    int r = tb->rank;
    size_t es = j->es;
    int64_t ctr[RLX_MAX_RANK] = { 0 }, inner = tb->dims[r - 1];
    const int64_t *tl = tb->t[r - 1];
    size_t rem = r0; /* row r0's index along each outer axis */
    for (int a = r - 2; a >= 0; a--) {
        ctr[a] = (int64_t)(rem % (size_t)tb->dims[a]);
        rem /= (size_t)tb->dims[a];
    }
    for (size_t row = r0; row < r1; row++) {
        int64_t base = 0;
        bool filled = false;
        for (int a = 0; a < r - 1; a++) {
            int64_t v = tb->t[a][ctr[a]];
            if (v < 0) filled = true;
            base += v;
        }
        char *d = j->dst + row * (size_t)inner * es;
        if (j->contig && !filled) {
            memcpy(d, j->src + (size_t)(base + tl[0]) * es, (size_t)inner * es);
        } else if (filled) {
            for (int64_t x = 0; x < inner; x++, d += es) elem_copy(d, j->fill, es);
        } else if (es == 4) { /* f32, i32: the common case, one word at a time */
            const char *sb = j->src + (size_t)base * 4;
            for (int64_t x = 0; x < inner; x++, d += 4) {
                int64_t v = tl[x];
                memcpy(d, v < 0 ? (const char *)j->fill : sb + (size_t)v * 4, 4);
            }
        } else {
            for (int64_t x = 0; x < inner; x++, d += es) {
                int64_t v = tl[x];
                if (v < 0) elem_copy(d, j->fill, es);
                else elem_copy(d, j->src + (size_t)(base + v) * es, es);
            }
        }
        for (int a = r - 2; a >= 0; a--) {
            if (++ctr[a] < tb->dims[a]) break;
            ctr[a] = 0;
        }
    }
}

/* dst[c] = src[sum_a t[a][c_a]], or *fill where an entry is -1; dst is
 * contiguous with the tables' dims. Rows are split over the worker pool
 * (a copy: the same bytes on any split; small tensors on the caller). */
static void tab_copy(const tabs *tb, const void *src_v, void *dst_v, size_t es, const void *fill) {
    int r = tb->rank;
    size_t total = rlx_dims_span(tb->dims, 0, r);
    if (total == 0) return;
    if (r == 0) {
        elem_copy(dst_v, src_v, es);
        return;
    }
    size_t inner = (size_t)tb->dims[r - 1], rows = total / inner;
    const int64_t *tl = tb->t[r - 1];
    bool contig = tb->contig || tl[0] >= 0;
    for (size_t x = 1; x < inner && contig && !tb->contig; x++) contig = tl[x] == tl[0] + (int64_t)x;
    tab_job j = { tb, src_v, dst_v, es, fill, contig };
    rlx_parallel_for(rows, 1 + 32768 / inner, tab_rows, &j);
}

/* y = x with its axes permuted: y dims[a] = x dims[perm[a]]. Axes of extent
 * 1 are dropped and output axes that stay adjacent in x are merged first
 * (a channel shuffle [1, g, c/g, h, w] -> [1, c/g, g, h, w] is the 3-D
 * [g, c/g, h*w] -> [c/g, g, h*w]), so that a last axis contiguous in x
 * becomes rows that tab_copy moves with one memcpy each. */
static rlx_status permute(rlx_cpu_kctx *k, const void *src, void *dst, size_t es, int rank, const int64_t *xdims,
                          const int *perm) {
    int64_t st[RLX_MAX_RANK], od[RLX_MAX_RANK] = { 0 }, ost[RLX_MAX_RANK] = { 0 };
    rlx_strides(xdims, rank, st);
    for (int a = 0; a < rank; a++) od[a] = xdims[perm[a]];
    if (!rlx_dims_span(od, 0, rank)) return RLX_OK; /* empty: no tables (dims may be huge) */
    int m = 0; /* merged axes: od[0..m) with source strides ost[0..m) */
    for (int a = 0; a < rank; a++) {
        int64_t d = xdims[perm[a]], s = st[perm[a]];
        if (d == 1) continue;
        if (m && ost[m - 1] == s * d) {
            od[m - 1] *= d;
            ost[m - 1] = s;
        } else {
            od[m] = d;
            ost[m++] = s;
        }
    }
    if (!m) {
        od[0] = 1;
        ost[0] = 0;
        m = 1;
    }
    /* a contiguous last axis needs no table (merged, it may be huge) */
    int64_t last = od[m - 1];
    bool contig = ost[m - 1] == 1;
    if (contig) od[m - 1] = 1;
    tabs tb;
    RLX_TRY(tabs_make(k, &tb, m, od));
    for (int a = 0; a < m; a++)
        for (int64_t c = 0; c < od[a]; c++) tb.t[a][c] = c * ost[a];
    tb.dims[m - 1] = last;
    tb.contig = contig;
    tab_copy(&tb, src, dst, es, NULL);
    tabs_free(&tb);
    return RLX_OK;
}

/* ------------------------------------------------------------ views and copies */

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the bytes do not move.
 * (The runtime usually aliases instead; this runs for folding and eager.) */
static rlx_status k_copy(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(x);
    if (x->dtype != y->dtype || n != rlx_tensor_numel(y))
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "input has %zu elements of %s, output %zu of %s", n,
                            rlx_dtype_name(x->dtype), rlx_tensor_numel(y), rlx_dtype_name(y->dtype));
    if (n) memcpy(y->data, x->data, n * rlx_dtype_size(x->dtype));
    return RLX_OK;
}

/* Transpose-1/13/21. */
static rlx_status k_transpose(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t p[RLX_MAX_RANK], od[RLX_MAX_RANK];
    int perm[RLX_MAX_RANK];
    RLX_TRY(rlx_transpose_perm(k->n, x->rank, p));
    for (int a = 0; a < x->rank; a++) {
        perm[a] = (int)p[a];
        od[a] = x->dims[p[a]];
    }
    RLX_TRY(check_dims(k, y, x->rank, od));
    return permute(k, x->data, y->data, rlx_dtype_size(x->dtype), x->rank, x->dims, perm);
}

/* Concat-4/11/13. */
static rlx_status k_concat(rlx_cpu_kctx *k) {
    rlx_tensor *y = k->out[0];
    int ax;
    if (!rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), y->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
    size_t es = rlx_dtype_size(y->dtype);
    size_t outer = rlx_dims_span(y->dims, 0, ax), inner = rlx_dims_span(y->dims, ax + 1, y->rank);
    size_t row = (size_t)y->dims[ax] * inner * es, off = 0;
    for (int i = 0; i < k->n->n_in; i++) {
        const rlx_tensor *x = k->in[i];
        if (!x) continue;
        if (x->rank != y->rank || x->dtype != y->dtype)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input %d has rank %d, the output %d", i, x->rank, y->rank);
        size_t blk = (size_t)x->dims[ax] * inner * es;
        if (off + blk > row) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "inputs exceed the output along the axis");
        /* an input planned as its slice of the output (plan/memory.c,
         * concat_in_place) is already there */
        bool in_place = outer == 1 && (const char *)x->data == (const char *)y->data + off;
        for (size_t o = 0; o < outer && blk && !in_place; o++)
            memcpy((char *)y->data + o * row + off, (const char *)x->data + o * blk, blk);
        off += blk;
    }
    if (off != row) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "inputs do not fill the output");
    return RLX_OK;
}

/* Split-2/11/13/18: the sizes are recomputed (outputs may be omitted). */
static rlx_status k_split(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    int ax, n_out = k->n->n_out;
    if (!rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
    /* a split input has a size per output (checked before anything reads
     * it); the sizes and the split values of up to 64 outputs on the stack,
     * more in the thread's grow-only scratch: no allocation in a steady run */
    const rlx_tensor *sp = k->n->version >= 13 ? kin(k, 1) : NULL;
    if (sp && rlx_tensor_numel(sp) != (size_t)n_out)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "split has %zu sizes for %d outputs", rlx_tensor_numel(sp),
                            n_out);
    size_t cap = sp ? (size_t)n_out : 0;
    int64_t stack_sizes[128];
    int64_t *sizes = n_out <= 64 ? stack_sizes
                                 : rlx_scratch_get(RLX_SCRATCH_INDEX, ((size_t)n_out + cap + 1) * sizeof *sizes);
    if (!sizes) return oom(k);
    int64_t *buf = sizes + n_out;
    const int64_t *split = NULL;
    size_t ns = 0;
    rlx_status st = RLX_OK;
    if (k->n->version < 13) {
        split = rlx_param_ints(k->n, RLX_A_split, &ns);
    } else if (sp) {
        st = read_ints(k, sp, "split", buf, cap, &ns);
        split = buf;
    }
    if (!st) st = rlx_split_sizes(k->n, x->dims[ax], split, ns, n_out, sizes);
    size_t es = rlx_dtype_size(x->dtype);
    size_t outer = rlx_dims_span(x->dims, 0, ax), inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    size_t row = (size_t)x->dims[ax] * inner * es, off = 0;
    for (int i = 0; i < n_out && !st; i++) {
        rlx_tensor *y = k->out[i];
        size_t blk = (size_t)sizes[i] * inner * es;
        if (y) {
            int64_t d[RLX_MAX_RANK];
            memcpy(d, x->dims, sizeof d);
            d[ax] = sizes[i];
            st = check_dims(k, y, x->rank, d);
            for (size_t o = 0; o < outer && blk && !st; o++)
                memcpy((char *)y->data + o * blk, (const char *)x->data + o * row + off, blk);
        }
        off += blk;
    }
    return st;
}

/* Shape-1/13/15 and Size-1/13: read only the dims of the input (folding
 * passes a tensor without data). */
static rlx_status k_shape(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int s, e;
    rlx_shape_range(k->n, x->rank, &s, &e);
    int64_t len = e - s;
    RLX_TRY(check_dims(k, y, 1, &len));
    for (int i = s; i < e; i++) ((int64_t *)y->data)[i - s] = x->dims[i];
    return RLX_OK;
}

static rlx_status k_size(rlx_cpu_kctx *k) {
    *(int64_t *)k->out[0]->data = (int64_t)rlx_tensor_numel(k->in[0]);
    return RLX_OK;
}

/* Constant-1/9/12/13: the value attribute. */
static rlx_status k_constant(rlx_cpu_kctx *k) {
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(y);
    const rlx_node_attr *a;
    if ((a = rlx_param(k->n, RLX_A_value)) && a->t) {
        if (a->t->dtype != y->dtype || rlx_tensor_numel(a->t) != n)
            return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "value does not match the output");
        if (n) memcpy(y->data, a->t->data, n * rlx_dtype_size(y->dtype));
        return RLX_OK;
    }
    size_t cnt;
    const float *f = rlx_param_floats(k->n, RLX_A_value_float, &cnt);
    if (!f) f = rlx_param_floats(k->n, RLX_A_value_floats, &cnt);
    if (f && y->dtype == RLX_DTYPE_F32 && cnt == n) {
        memcpy(y->data, f, n * sizeof *f);
        return RLX_OK;
    }
    const int64_t *iv = rlx_param_ints(k->n, RLX_A_value_int, &cnt);
    if (!iv) iv = rlx_param_ints(k->n, RLX_A_value_ints, &cnt);
    if (iv && y->dtype == RLX_DTYPE_I64 && cnt == n) {
        memcpy(y->data, iv, n * sizeof *iv);
        return RLX_OK;
    }
    return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "no supported value attribute matches the output");
}

/* ConstantOfShape-9/20/21: every element is `value` (default f32 0). */
static rlx_status k_constant_of_shape(rlx_cpu_kctx *k) {
    rlx_tensor *y = k->out[0];
    const rlx_node_attr *a = rlx_param(k->n, RLX_A_value);
    size_t es = rlx_dtype_size(y->dtype), n = rlx_tensor_numel(y);
    char zero[16] = { 0 };
    const char *v = zero;
    if (a && a->t) {
        if (a->t->dtype != y->dtype || rlx_tensor_numel(a->t) != 1)
            return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "value does not match the output");
        v = a->t->data;
    }
    for (size_t i = 0; i < n; i++) elem_copy((char *)y->data + i * es, v, es);
    return RLX_OK;
}

/* ------------------------------------------------------------ Gather family */

/* Gather-1/11/13: y[o, j, i] = x[o, idx[j], i]. */
static rlx_status k_gather(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *idx = k->in[1];
    rlx_tensor *y = k->out[0];
    int ax;
    if (!rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
    size_t es = rlx_dtype_size(x->dtype);
    size_t outer = rlx_dims_span(x->dims, 0, ax), inner = rlx_dims_span(x->dims, ax + 1, x->rank), n = rlx_tensor_numel(idx);
    int64_t A = x->dims[ax];
    if (rlx_tensor_numel(y) != outer * n * inner) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output size mismatch");
    size_t blk = inner * es;
    for (size_t j = 0; j < n; j++) {
        int64_t v = 0;
        RLX_TRY(norm_index(k, rlx_tensor_get_i64(idx, j), A, &v));
        for (size_t o = 0; o < outer && blk; o++)
            memcpy((char *)y->data + (o * n + j) * blk, (const char *)x->data + (o * (size_t)A + (size_t)v) * blk, blk);
    }
    return RLX_OK;
}

/* GatherElements-11/13: y[c] = x[c with c[axis] = idx[c]]. */
static rlx_status k_gather_elements(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *idx = k->in[1];
    rlx_tensor *y = k->out[0];
    int ax, r = x->rank;
    if (idx->rank != r || !rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), r, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "indices rank or axis do not match the data");
    for (int a = 0; a < r; a++)
        if (a != ax && idx->dims[a] > x->dims[a])
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "indices dim %d (%lld) exceeds the data's (%lld)", a,
                                (long long)idx->dims[a], (long long)x->dims[a]);
    RLX_TRY(check_dims(k, y, idx->rank, idx->dims));
    int64_t xs[RLX_MAX_RANK], c[RLX_MAX_RANK] = { 0 };
    rlx_strides(x->dims, r, xs);
    size_t es = rlx_dtype_size(x->dtype), n = rlx_tensor_numel(idx);
    for (size_t j = 0; j < n; j++) {
        int64_t v = 0, off = 0;
        RLX_TRY(norm_index(k, rlx_tensor_get_i64(idx, j), x->dims[ax], &v));
        for (int a = 0; a < r; a++) off += (a == ax ? v : c[a]) * xs[a];
        elem_copy((char *)y->data + j * es, (const char *)x->data + (size_t)off * es, es);
        for (int a = r - 1; a >= 0; a--) {
            if (++c[a] < idx->dims[a]) break;
            c[a] = 0;
        }
    }
    return RLX_OK;
}

/* GatherND-11/12/13 with batch_dims b: for each batch and index tuple of m
 * entries, copies the slice x[batch, tuple, ...]. */
static rlx_status k_gather_nd(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *idx = k->in[1];
    rlx_tensor *y = k->out[0];
    int b = (int)(k->n->version >= 12 ? rlx_param_int(k->n, RLX_A_batch_dims) : 0);
    int q = idx->rank;
    if (q < 1 || b < 0 || b >= q || b >= x->rank) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad ranks");
    int64_t m = idx->dims[q - 1];
    if (m < 1 || m > x->rank - b) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad indices.shape[-1]");
    int64_t xs[RLX_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    size_t es = rlx_dtype_size(x->dtype);
    size_t nb = rlx_dims_span(idx->dims, 0, b), nt = rlx_dims_span(idx->dims, b, q - 1);
    size_t sl = rlx_dims_span(x->dims, b + (int)m, x->rank), batch_stride = rlx_dims_span(x->dims, b, x->rank);
    if (rlx_tensor_numel(y) != nb * nt * sl) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output size mismatch");
    for (size_t bi = 0; bi < nb; bi++)
        for (size_t t = 0; t < nt; t++) {
            size_t off = bi * batch_stride, pos = (bi * nt + t) * (size_t)m;
            for (int64_t j = 0; j < m; j++) {
                int64_t v = 0;
                RLX_TRY(norm_index(k, rlx_tensor_get_i64(idx, pos + (size_t)j), x->dims[b + j], &v));
                off += (size_t)v * (size_t)xs[b + j];
            }
            if (sl) memcpy((char *)y->data + (bi * nt + t) * sl * es, (const char *)x->data + off * es, sl * es);
        }
    return RLX_OK;
}

/* ------------------------------------------------------------ Scatter family */

typedef enum red_op { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } red_op;

static rlx_status red_of(rlx_cpu_kctx *k, red_op *r) {
    const char *s = rlx_param_str(k->n, RLX_A_reduction);
    if (strcmp(s, "none") == 0) *r = RED_NONE;
    else if (strcmp(s, "add") == 0) *r = RED_ADD;
    else if (strcmp(s, "mul") == 0) *r = RED_MUL;
    else if (strcmp(s, "max") == 0) *r = RED_MAX;
    else if (strcmp(s, "min") == 0) *r = RED_MIN;
    else return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "reduction '%s'", s);
    return RLX_OK;
}

/* y[i] = reduce(y[i], u[j]): floats in double, integers in int64 (wrapping),
 * bool as 0/1. */
static void red_apply(rlx_tensor *y, size_t i, const rlx_tensor *u, size_t j, red_op r, size_t es) {
    if (r == RED_NONE) {
        elem_copy((char *)y->data + i * es, (const char *)u->data + j * es, es);
    } else if (rlx_dtype_is_float(y->dtype)) {
        double a = rlx_tensor_get_f64(y, i), b = rlx_tensor_get_f64(u, j);
        double v = r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? (a >= b ? a : b) : (a <= b ? a : b);
        rlx_tensor_set_f64(y, i, v);
    } else {
        int64_t a = rlx_tensor_get_i64(y, i), b = rlx_tensor_get_i64(u, j);
        int64_t v = r == RED_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                    : r == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                    : r == RED_MAX ? (a >= b ? a : b)
                                   : (a <= b ? a : b);
        rlx_tensor_set_i64(y, i, v);
    }
}

/* ScatterElements-11/13/16/18: y = x; y[c with c[axis] = idx[c]] (op)= u[c]. */
static rlx_status k_scatter_elements(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *idx = k->in[1], *u = k->in[2];
    rlx_tensor *y = k->out[0];
    red_op r;
    RLX_TRY(red_of(k, &r));
    int ax, rank = x->rank;
    if (idx->rank != rank || !rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), rank, &ax) ||
        !rlx_shape_equal(idx->dims, idx->rank, u->dims, u->rank))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "indices, updates and data do not match");
    for (int a = 0; a < rank; a++)
        if (a != ax && idx->dims[a] > x->dims[a])
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "indices dim %d exceeds the data's", a);
    size_t es = rlx_dtype_size(x->dtype), n = rlx_tensor_numel(idx);
    memcpy(y->data, x->data, rlx_tensor_numel(x) * es);
    int64_t ys[RLX_MAX_RANK], c[RLX_MAX_RANK] = { 0 };
    rlx_strides(x->dims, rank, ys);
    for (size_t j = 0; j < n; j++) {
        int64_t v = 0, off = 0;
        RLX_TRY(norm_index(k, rlx_tensor_get_i64(idx, j), x->dims[ax], &v));
        for (int a = 0; a < rank; a++) off += (a == ax ? v : c[a]) * ys[a];
        red_apply(y, (size_t)off, u, j, r, es);
        for (int a = rank - 1; a >= 0; a--) {
            if (++c[a] < idx->dims[a]) break;
            c[a] = 0;
        }
    }
    return RLX_OK;
}

/* ScatterND-11/13/16/18: y = x; y[idx[t], ...] (op)= u[t, ...]. */
static rlx_status k_scatter_nd(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *idx = k->in[1], *u = k->in[2];
    rlx_tensor *y = k->out[0];
    red_op r;
    RLX_TRY(red_of(k, &r));
    int q = idx->rank;
    int64_t m = q >= 1 ? idx->dims[q - 1] : 0;
    if (q < 1 || m > x->rank) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad indices shape");
    size_t es = rlx_dtype_size(x->dtype), nt = rlx_dims_span(idx->dims, 0, q - 1), sl = rlx_dims_span(x->dims, (int)m, x->rank);
    if (rlx_tensor_numel(u) != nt * sl) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "updates have the wrong size");
    memcpy(y->data, x->data, rlx_tensor_numel(x) * es);
    int64_t xs[RLX_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    for (size_t t = 0; t < nt; t++) {
        size_t off = 0;
        for (int64_t j = 0; j < m; j++) {
            int64_t v = 0;
            RLX_TRY(norm_index(k, rlx_tensor_get_i64(idx, t * (size_t)m + (size_t)j), x->dims[j], &v));
            off += (size_t)v * (size_t)xs[j];
        }
        for (size_t s = 0; s < sl; s++) red_apply(y, off + s, u, t * sl + s, r, es);
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ Slice, Pad, Expand, Tile */

/* Slice-1 (attributes) and Slice-10/11/13 (inputs). */
static rlx_status k_slice(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t st[2 * RLX_MAX_RANK], en[2 * RLX_MAX_RANK], ax[2 * RLX_MAX_RANK], sp[2 * RLX_MAX_RANK];
    size_t ns, ne, na = 0, nsp = 0, cap = 2 * RLX_MAX_RANK;
    bool have_axes, have_steps = false;
    if (k->n->version < 10) {
        const int64_t *p;
        if (!(p = rlx_param_ints(k->n, RLX_A_starts, &ns)) || ns > cap) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "starts");
        memcpy(st, p, ns * sizeof *p);
        if (!(p = rlx_param_ints(k->n, RLX_A_ends, &ne)) || ne > cap) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "ends");
        memcpy(en, p, ne * sizeof *p);
        p = rlx_param_ints(k->n, RLX_A_axes, &na);
        have_axes = p != NULL;
        if (na > cap) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axes");
        if (p) memcpy(ax, p, na * sizeof *p);
    } else {
        RLX_TRY(read_ints(k, kin(k, 1), "starts", st, cap, &ns));
        RLX_TRY(read_ints(k, kin(k, 2), "ends", en, cap, &ne));
        have_axes = kin(k, 3) != NULL;
        have_steps = kin(k, 4) != NULL;
        RLX_TRY(read_ints(k, kin(k, 3), "axes", ax, cap, &na));
        RLX_TRY(read_ints(k, kin(k, 4), "steps", sp, cap, &nsp));
    }
    if (ne != ns || (have_axes && na != ns) || (have_steps && nsp != ns))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "starts, ends, axes and steps differ in length");
    rlx_slice_geom g;
    RLX_TRY(rlx_slice_resolve(k->n, x->rank, x->dims, st, en, have_axes ? ax : NULL, have_steps ? sp : NULL, ns, &g));
    RLX_TRY(check_dims(k, y, x->rank, g.count));
    int64_t xs[RLX_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    if (!rlx_dims_span(g.count, 0, x->rank)) return RLX_OK;
    tabs tb;
    RLX_TRY(tabs_make(k, &tb, x->rank, g.count));
    for (int a = 0; a < x->rank; a++)
        for (int64_t c = 0; c < g.count[a]; c++) tb.t[a][c] = (g.start[a] + c * g.step[a]) * xs[a];
    tab_copy(&tb, x->data, y->data, rlx_dtype_size(x->dtype), NULL);
    tabs_free(&tb);
    return RLX_OK;
}

/* Pad-2/11/13/18/19. Negative pads crop first; the other modes then read
 * the cropped input: edge clamps, reflect mirrors without repeating the
 * edge (period 2 * (n - 1)), wrap repeats (period n). Pads of n or more
 * keep mirroring / repeating, as numpy.pad and the ONNX reference do
 * (onnxruntime refuses reflect pads >= n); kernels/pad.wgsl computes the
 * same. An axis with nothing left after cropping fails (edge, reflect,
 * wrap: nothing to read). */
static rlx_status k_pad(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    rlx_pad_mode mode;
    RLX_TRY(rlx_pad_mode_of(k->n, &mode));
    int64_t pads[4 * RLX_MAX_RANK], axes[2 * RLX_MAX_RANK];
    size_t np = 0, na = 0;
    bool have_axes = false;
    size_t es = rlx_dtype_size(x->dtype);
    char fill[16] = { 0 };
    if (k->n->version < 11) {
        const int64_t *p = rlx_param_ints(k->n, RLX_A_pads, &np);
        if (!p || np > 4 * RLX_MAX_RANK) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "pads");
        memcpy(pads, p, np * sizeof *p);
        rlx_tensor f = { .dtype = x->dtype, .rank = 0, .data = fill, .nbytes = es };
        rlx_tensor_set_f64(&f, 0, rlx_param_float(k->n, RLX_A_value));
    } else {
        RLX_TRY(read_ints(k, kin(k, 1), "pads", pads, 4 * RLX_MAX_RANK, &np));
        const rlx_tensor *cv = kin(k, 2);
        if (cv && rlx_tensor_numel(cv) >= 1 && cv->dtype == x->dtype) memcpy(fill, cv->data, es);
        if (k->n->version >= 18 && kin(k, 3)) {
            have_axes = true;
            RLX_TRY(read_ints(k, kin(k, 3), "axes", axes, 2 * RLX_MAX_RANK, &na));
        }
    }
    int64_t b[RLX_MAX_RANK], e[RLX_MAX_RANK], od[RLX_MAX_RANK], xs[RLX_MAX_RANK];
    RLX_TRY(rlx_pad_resolve(k->n, x->rank, pads, np, have_axes ? axes : NULL, na, b, e));
    for (int a = 0; a < x->rank; a++) od[a] = x->dims[a] + b[a] + e[a];
    RLX_TRY(check_dims(k, y, x->rank, od));
    rlx_strides(x->dims, x->rank, xs);
    if (!rlx_dims_span(od, 0, x->rank)) return RLX_OK;
    tabs tb;
    RLX_TRY(tabs_make(k, &tb, x->rank, od));
    rlx_status st = RLX_OK;
    for (int a = 0; a < x->rank && !st; a++) {
        int64_t lo = b[a] < 0 ? -b[a] : 0, hi = x->dims[a] + (e[a] < 0 ? e[a] : 0), n = hi - lo;
        int64_t pb = b[a] > 0 ? b[a] : 0;
        if (n <= 0 && mode != RLX_PAD_CONSTANT && od[a] > 0) {
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %d has no elements to pad from", a);
            break;
        }
        for (int64_t c = 0; c < od[a]; c++) {
            int64_t j = c - pb, src;
            if (j >= 0 && j < n) src = j;
            else if (mode == RLX_PAD_CONSTANT) src = -1;
            else if (mode == RLX_PAD_EDGE) src = j < 0 ? 0 : n - 1;
            else if (mode == RLX_PAD_WRAP) src = ((j % n) + n) % n;
            else if (n == 1) src = 0;
            else {
                int64_t p = 2 * (n - 1), m = ((j % p) + p) % p;
                src = m < n ? m : p - m;
            }
            tb.t[a][c] = src < 0 ? -1 : (lo + src) * xs[a];
        }
    }
    if (!st) tab_copy(&tb, x->data, y->data, es, fill);
    tabs_free(&tb);
    return st;
}

/* y = x repeated along every axis: y[c] = x[c mod x's dims], x's dims
 * lined up with y's last ones (missing leading dims read index 0). */
static rlx_status repeat_copy(rlx_cpu_kctx *k, const rlx_tensor *x, rlx_tensor *y) {
    int r = y->rank, off = y->rank - x->rank;
    int64_t xs[RLX_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    if (!rlx_dims_span(y->dims, 0, r)) return RLX_OK;
    tabs tb;
    RLX_TRY(tabs_make(k, &tb, r, y->dims));
    for (int a = 0; a < r; a++) {
        int ia = a - off;
        for (int64_t c = 0; c < y->dims[a]; c++) tb.t[a][c] = ia < 0 ? 0 : c % x->dims[ia] * xs[ia];
    }
    tab_copy(&tb, x->data, y->data, rlx_dtype_size(x->dtype), NULL);
    tabs_free(&tb);
    return RLX_OK;
}

/* Expand-8/13: broadcast of x to the output shape (each dim of x is 1 or
 * the output's: repeating it is broadcasting). */
static rlx_status k_expand(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int off = y->rank - x->rank;
    if (off < 0) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output rank below input rank");
    for (int a = 0; a < x->rank; a++)
        if (x->dims[a] != 1 && x->dims[a] != y->dims[a + off])
            return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "input does not broadcast to the output");
    return repeat_copy(k, x, y);
}

/* Tile-6/13: y[c] = x[c mod dims]. */
static rlx_status k_tile(rlx_cpu_kctx *k) {
    if (k->out[0]->rank != k->in[0]->rank) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "rank mismatch");
    return repeat_copy(k, k->in[0], k->out[0]);
}

/* Compress-9/11: keeps the entries whose condition is true. */
static rlx_status k_compress(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *cond = k->in[1];
    rlx_tensor *y = k->out[0];
    const rlx_node_attr *aa = rlx_param(k->n, RLX_A_axis);
    int ax = 0, r = 1;
    int64_t d[RLX_MAX_RANK], xs[RLX_MAX_RANK];
    if (aa) {
        if (!rlx_norm_axis(aa->i, x->rank, &ax)) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
        r = x->rank;
        memcpy(d, x->dims, sizeof d);
        rlx_strides(x->dims, x->rank, xs);
    } else {
        d[0] = (int64_t)rlx_tensor_numel(x);
        xs[0] = 1;
    }
    int64_t extent = d[ax], cnt = 0;
    size_t nc = rlx_tensor_numel(cond);
    const uint8_t *p = cond->data;
    for (size_t i = 0; i < nc; i++) {
        if (!p[i]) continue;
        if ((int64_t)i >= extent)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "condition is true at %zu, beyond the %lld entries", i,
                                (long long)extent);
        cnt++;
    }
    d[ax] = cnt;
    RLX_TRY(check_dims(k, y, r, d));
    if (!rlx_dims_span(d, 0, r)) return RLX_OK;
    tabs tb;
    RLX_TRY(tabs_make(k, &tb, r, d));
    for (int a = 0; a < r; a++) {
        if (a == ax) {
            int64_t j = 0;
            for (size_t i = 0; i < nc; i++)
                if (p[i]) tb.t[a][j++] = (int64_t)i * xs[a];
        } else {
            for (int64_t c = 0; c < d[a]; c++) tb.t[a][c] = c * xs[a];
        }
    }
    tab_copy(&tb, x->data, y->data, rlx_dtype_size(x->dtype), NULL);
    tabs_free(&tb);
    return RLX_OK;
}

/* DepthToSpace-1/11/13 and SpaceToDepth-1/13 as 6-D transposes. */
static rlx_status k_depth_to_space(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t b = rlx_param_int(k->n, RLX_A_blocksize);
    if (x->rank != 4 || b < 1 || x->dims[1] % (b * b)) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad input shape");
    int64_t n = x->dims[0], c = x->dims[1] / (b * b), h = x->dims[2], w = x->dims[3];
    bool crd = k->n->version >= 11 && strcmp(rlx_param_str(k->n, RLX_A_mode), "CRD") == 0;
    int64_t od[4] = { n, c, h * b, w * b };
    RLX_TRY(check_dims(k, y, 4, od));
    if (crd) {
        int64_t in6[6] = { n, c, b, b, h, w };
        int perm[6] = { 0, 1, 4, 2, 5, 3 };
        return permute(k, x->data, y->data, rlx_dtype_size(x->dtype), 6, in6, perm);
    }
    int64_t in6[6] = { n, b, b, c, h, w };
    int perm[6] = { 0, 3, 4, 1, 5, 2 };
    return permute(k, x->data, y->data, rlx_dtype_size(x->dtype), 6, in6, perm);
}

static rlx_status k_space_to_depth(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t b = rlx_param_int(k->n, RLX_A_blocksize);
    if (x->rank != 4 || b < 1 || x->dims[2] % b || x->dims[3] % b)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad input shape");
    int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2] / b, w = x->dims[3] / b;
    int64_t od[4] = { n, c * b * b, h, w };
    RLX_TRY(check_dims(k, y, 4, od));
    int64_t in6[6] = { n, c, h, b, w, b };
    int perm[6] = { 0, 3, 5, 1, 2, 4 };
    return permute(k, x->data, y->data, rlx_dtype_size(x->dtype), 6, in6, perm);
}

/* ReverseSequence-10: reverses the first lens[b] steps of each batch entry. */
static rlx_status k_reverse_sequence(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *lens = k->in[1];
    rlx_tensor *y = k->out[0];
    int ba = (int)rlx_param_int(k->n, RLX_A_batch_axis), ta = (int)rlx_param_int(k->n, RLX_A_time_axis);
    if (x->rank < 2 || (ba != 0 && ba != 1) || ta != 1 - ba)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "bad axes");
    int64_t B = x->dims[ba], T = x->dims[ta];
    if ((int64_t)rlx_tensor_numel(lens) != B) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "sequence_lens has the wrong size");
    size_t es = rlx_dtype_size(x->dtype), inner = rlx_dims_span(x->dims, 2, x->rank) * es;
    for (int64_t bi = 0; bi < B; bi++) {
        int64_t len = rlx_tensor_get_i64(lens, (size_t)bi);
        if (len < 0 || len > T)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                                (long long)bi, (long long)len, (long long)T);
        for (int64_t t = 0; t < T; t++) {
            int64_t s = t < len ? len - 1 - t : t;
            size_t od = (size_t)(ta == 0 ? t * B + bi : bi * T + t), sd = (size_t)(ta == 0 ? s * B + bi : bi * T + s);
            if (inner) memcpy((char *)y->data + od * inner, (const char *)x->data + sd * inner, inner);
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ values */

/* Range-11/27: y[i] = start + i * delta (floats in double, integers
 * exact). Range-27 with stash_type = 0 on f16/bf16 computes in the 16-bit
 * type: the product and the sum each round to it. */
static rlx_status k_range(rlx_cpu_kctx *k) {
    const rlx_tensor *s = k->in[0], *l = k->in[1], *d = k->in[2];
    rlx_tensor *y = k->out[0];
    if (rlx_tensor_numel(s) != 1 || rlx_tensor_numel(l) != 1 || rlx_tensor_numel(d) != 1)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "start, limit and delta must be scalars");
    bool fl = rlx_dtype_is_float(s->dtype);
    double fs = rlx_tensor_get_f64(s, 0), fd = rlx_tensor_get_f64(d, 0);
    int64_t is = rlx_tensor_get_i64(s, 0), id = rlx_tensor_get_i64(d, 0), n;
    RLX_TRY(rlx_range_count(k->n, fl, fs, rlx_tensor_get_f64(l, 0), fd, is, rlx_tensor_get_i64(l, 0), id, &n));
    RLX_TRY(check_dims(k, y, 1, &n));
    bool half = y->dtype == RLX_DTYPE_F16 || y->dtype == RLX_DTYPE_BF16;
    bool stash_t = half && k->n->version >= 27 && rlx_param_int(k->n, RLX_A_stash_type) == 0;
    rlx_tensor tmp = { .dtype = y->dtype, .rank = 0 };
    uint16_t bits;
    tmp.data = &bits;
    for (int64_t i = 0; i < n; i++) {
        if (stash_t) {
            rlx_tensor_set_f64(&tmp, 0, (double)i * fd);
            rlx_tensor_set_f64(y, (size_t)i, fs + rlx_tensor_get_f64(&tmp, 0));
        } else if (fl) rlx_tensor_set_f64(y, (size_t)i, fs + (double)i * fd);
        else rlx_tensor_set_i64(y, (size_t)i, (int64_t)((uint64_t)is + (uint64_t)i * (uint64_t)id));
    }
    return RLX_OK;
}

/* OneHot-9/11: y = off everywhere, on at [.., idx, ..] along axis; indices
 * in [-depth, depth) (negative from 11); others leave the row all off. */
static rlx_status k_onehot(rlx_cpu_kctx *k) {
    const rlx_tensor *idx = k->in[0], *dep = k->in[1], *val = k->in[2];
    rlx_tensor *y = k->out[0];
    if (rlx_tensor_numel(dep) != 1 || rlx_tensor_numel(val) != 2 || val->dtype != y->dtype)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "depth must be a scalar and values hold [off, on]");
    double dv = rlx_tensor_get_f64(dep, 0);
    if (!(dv >= 1 && dv < 4.0e18)) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "depth %g is outside [1, 4e18)", dv);
    int64_t depth = (int64_t)dv;
    int ax;
    if (!rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), idx->rank + 1, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
    size_t outer = rlx_dims_span(idx->dims, 0, ax), inner = rlx_dims_span(idx->dims, ax, idx->rank), es = rlx_dtype_size(y->dtype);
    if (rlx_tensor_numel(y) != outer * (size_t)depth * inner) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output size mismatch");
    const char *off = val->data, *on = (const char *)val->data + es;
    size_t n = rlx_tensor_numel(y);
    for (size_t i = 0; i < n; i++) elem_copy((char *)y->data + i * es, off, es);
    bool fl = rlx_dtype_is_float(idx->dtype);
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            size_t p = o * inner + j;
            int64_t v = fl ? rlx_f64_to_i64(rlx_tensor_get_f64(idx, p)) : rlx_tensor_get_i64(idx, p);
            if (k->n->version >= 11 && v < 0) v += depth;
            if (v < 0 || v >= depth) continue;
            elem_copy((char *)y->data + ((o * (size_t)depth + (size_t)v) * inner + j) * es, on, es);
        }
    return RLX_OK;
}

/* Trilu-14: keeps j - i >= k (upper) or j - i <= k (lower), zeros the rest. */
static rlx_status k_trilu(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t kk = 0;
    if (kin(k, 1)) {
        if (rlx_tensor_numel(kin(k, 1)) != 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "k must be a scalar");
        kk = rlx_tensor_get_i64(kin(k, 1), 0);
    }
    bool upper = rlx_param_int(k->n, RLX_A_upper) != 0;
    int64_t N = x->dims[x->rank - 2], M = x->dims[x->rank - 1];
    size_t es = rlx_dtype_size(x->dtype), mats = rlx_dims_span(x->dims, 0, x->rank - 2);
    for (size_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < M; j++) {
                size_t p = (b * (size_t)N + (size_t)i) * (size_t)M + (size_t)j;
                int64_t diag = j - i; /* in [-N, M]: no overflow, any k compares */
                bool keep = upper ? diag >= kk : diag <= kk;
                if (keep) elem_copy((char *)y->data + p * es, (const char *)x->data + p * es, es);
                else memset((char *)y->data + p * es, 0, es);
            }
    return RLX_OK;
}

/* EyeLike-9/22: ones where j - i == k, zeros elsewhere. */
static rlx_status k_eye_like(rlx_cpu_kctx *k) {
    rlx_tensor *y = k->out[0];
    if (y->rank != 2) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input must be 2-D");
    int64_t kk = rlx_param_int(k->n, RLX_A_k), N = y->dims[0], M = y->dims[1];
    memset(y->data, 0, rlx_tensor_numel(y) * rlx_dtype_size(y->dtype));
    if (kk >= M || kk <= -N) return RLX_OK; /* the diagonal misses the matrix */
    for (int64_t i = 0; i < N; i++) {
        int64_t j = i + kk;
        if (j >= 0 && j < M) rlx_tensor_set_i64(y, (size_t)(i * M + j), 1);
    }
    return RLX_OK;
}

/* CumSum-11/14: running sums along axis; exclusive shifts by one, reverse
 * runs from the end. f32 accumulates in f32, other floats in double,
 * integers in int64 (wrapping). */
static rlx_status k_cumsum(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *axt = k->in[1];
    rlx_tensor *y = k->out[0];
    if (rlx_tensor_numel(axt) != 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis must be a scalar");
    int ax;
    int64_t axis = rlx_tensor_get_i64(axt, 0);
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    bool excl = rlx_param_int(k->n, RLX_A_exclusive) != 0, rev = rlx_param_int(k->n, RLX_A_reverse) != 0;
    size_t outer = rlx_dims_span(x->dims, 0, ax), A = (size_t)x->dims[ax], inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    bool f32 = x->dtype == RLX_DTYPE_F32, fl = rlx_dtype_is_float(x->dtype);
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            float af = 0;
            double ad = 0;
            uint64_t ai = 0;
            for (size_t t = 0; t < A; t++) {
                size_t a = rev ? A - 1 - t : t, p = (o * A + a) * inner + j;
                if (f32) {
                    float v = ((const float *)x->data)[p];
                    if (!excl) af += v;
                    ((float *)y->data)[p] = af;
                    if (excl) af += v;
                } else if (fl) {
                    double v = rlx_tensor_get_f64(x, p);
                    if (!excl) ad += v;
                    rlx_tensor_set_f64(y, p, ad);
                    if (excl) ad += v;
                } else {
                    uint64_t v = (uint64_t)rlx_tensor_get_i64(x, p);
                    if (!excl) ai += v;
                    rlx_tensor_set_i64(y, p, (int64_t)ai);
                    if (excl) ai += v;
                }
            }
        }
    return RLX_OK;
}

/* ------------------------------------------------------------ sorting */

/* Keys for ordering elements of any numeric dtype: floats as double (NaN
 * above everything, NaNs equal), integers as int64 (u64 with its top bit
 * flipped so that signed order is unsigned order). */
typedef struct keys {
    bool fl;
    double *f;
    int64_t *i;
} keys;

static rlx_status keys_make(rlx_cpu_kctx *k, const rlx_tensor *x, keys *ky) {
    size_t n = rlx_tensor_numel(x);
    ky->fl = rlx_dtype_is_float(x->dtype);
    ky->f = NULL;
    ky->i = NULL;
    if (ky->fl) ky->f = malloc((n + 1) * sizeof *ky->f);
    else ky->i = malloc((n + 1) * sizeof *ky->i);
    if (!ky->f && !ky->i) return oom(k);
    for (size_t j = 0; j < n; j++) {
        if (ky->fl) ky->f[j] = rlx_tensor_get_f64(x, j);
        else if (x->dtype == RLX_DTYPE_U64) ky->i[j] = (int64_t)(((const uint64_t *)x->data)[j] ^ 0x8000000000000000ull);
        else ky->i[j] = rlx_tensor_get_i64(x, j);
    }
    return RLX_OK;
}

static void keys_free(keys *ky) {
    free(ky->f);
    free(ky->i);
}

static int key_cmp(const keys *ky, size_t a, size_t b) {
    if (ky->fl) {
        double x = ky->f[a], y = ky->f[b];
        bool nx = x != x, ny = y != y;
        if (nx || ny) return nx == ny ? 0 : nx ? 1 : -1;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    return ky->i[a] < ky->i[b] ? -1 : ky->i[a] > ky->i[b] ? 1 : 0;
}

typedef int (*order_fn)(const void *ctx, int64_t a, int64_t b); /* < 0: a goes first */

/* Stable bottom-up merge sort of v[0..n) (tmp has n entries). */
static void merge_sort(int64_t *v, int64_t *tmp, size_t n, order_fn cmp, const void *ctx) {
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid) tmp[o++] = v[i++];
            while (j < hi) tmp[o++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* TopK: positions along one line of the tensor, ordered by key. */
typedef struct topk_ctx {
    const keys *ky;
    size_t base, stride;
    bool largest;
} topk_ctx;

static int topk_order(const void *vc, int64_t a, int64_t b) {
    const topk_ctx *c = vc;
    int r = key_cmp(c->ky, c->base + (size_t)a * c->stride, c->base + (size_t)b * c->stride);
    return c->largest ? -r : r;
}

/* TopK-1/10/11: the k largest (or smallest) along axis, sorted; equal
 * values keep the lower index first. NaN counts as the largest value. The
 * output is sorted even when sorted = 0 (the order is then unspecified). */
static rlx_status k_topk(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *yv = k->out[0], *yi = kout(k, 1);
    int ax;
    if (!rlx_norm_axis(rlx_param_int(k->n, RLX_A_axis), x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
    int64_t kk;
    if (k->n->version < 10) {
        kk = rlx_param_int(k->n, RLX_A_k); /* given: inference requires it before version 10 */
    } else {
        if (!kin(k, 1) || rlx_tensor_numel(kin(k, 1)) != 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "k must hold one value");
        kk = rlx_tensor_get_i64(kin(k, 1), 0);
    }
    if (kk < 0 || kk > x->dims[ax])
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "k = %lld is outside [0, %lld]", (long long)kk,
                            (long long)x->dims[ax]);
    int64_t od[RLX_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    od[ax] = kk;
    if (yv) RLX_TRY(check_dims(k, yv, x->rank, od));
    if (yi) RLX_TRY(check_dims(k, yi, x->rank, od));
    bool largest = k->n->version < 11 || rlx_param_int(k->n, RLX_A_largest) != 0;
    size_t outer = rlx_dims_span(x->dims, 0, ax), A = (size_t)x->dims[ax], inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    size_t es = rlx_dtype_size(x->dtype), K = (size_t)kk;
    keys ky;
    RLX_TRY(keys_make(k, x, &ky));
    int64_t *pos = malloc((2 * A + 1) * sizeof *pos);
    if (!pos) {
        keys_free(&ky);
        return oom(k);
    }
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            topk_ctx c = { &ky, o * A * inner + j, inner, largest };
            for (size_t a = 0; a < A; a++) pos[a] = (int64_t)a;
            merge_sort(pos, pos + A, A, topk_order, &c);
            for (size_t t = 0; t < K; t++) {
                size_t dst = (o * K + t) * inner + j, src = c.base + (size_t)pos[t] * inner;
                if (yv) elem_copy((char *)yv->data + dst * es, (const char *)x->data + src * es, es);
                if (yi) ((int64_t *)yi->data)[dst] = pos[t];
            }
        }
    free(pos);
    keys_free(&ky);
    return RLX_OK;
}

/* Unique: items are the elements (no axis) or the slices along axis,
 * compared lexicographically in C order. */
typedef struct uniq_ctx {
    const keys *ky;
    size_t A, inner, outer;
} uniq_ctx;

static int uniq_order(const void *vc, int64_t a, int64_t b) {
    const uniq_ctx *c = vc;
    for (size_t o = 0; o < c->outer; o++)
        for (size_t j = 0; j < c->inner; j++) {
            int r = key_cmp(c->ky, (o * c->A + (size_t)a) * c->inner + j, (o * c->A + (size_t)b) * c->inner + j);
            if (r) return r;
        }
    return 0;
}

static int by_first(const void *vc, int64_t a, int64_t b) {
    const int64_t *first = vc;
    return first[a] < first[b] ? -1 : first[a] > first[b];
}

/* Unique-11: Y, indices (first occurrence), inverse_indices, counts;
 * sorted = 1 orders the unique items ascending, 0 by first occurrence. */
static rlx_status k_unique(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    const rlx_node_attr *aa = rlx_param(k->n, RLX_A_axis);
    bool sorted = rlx_param_int(k->n, RLX_A_sorted) != 0;
    int ax = 0;
    size_t outer = 1, inner = 1, A = rlx_tensor_numel(x);
    if (aa) {
        if (!rlx_norm_axis(aa->i, x->rank, &ax)) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis is out of range");
        outer = rlx_dims_span(x->dims, 0, ax), A = (size_t)x->dims[ax], inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    }
    keys ky;
    RLX_TRY(keys_make(k, x, &ky));
    /* order, tmp, group of each item, first item of each group, count, output order */
    int64_t *buf = malloc((6 * A + 1) * sizeof *buf);
    if (!buf) {
        keys_free(&ky);
        return oom(k);
    }
    int64_t *order = buf, *tmp = buf + A, *grp = buf + 2 * A, *first = buf + 3 * A, *cnt = buf + 4 * A,
            *outpos = buf + 5 * A;
    uniq_ctx c = { &ky, A, inner, outer };
    for (size_t i = 0; i < A; i++) order[i] = (int64_t)i;
    merge_sort(order, tmp, A, uniq_order, &c);
    size_t U = 0;
    for (size_t i = 0; i < A; i++) {
        if (i == 0 || uniq_order(&c, order[i - 1], order[i]) != 0) {
            first[U] = order[i]; /* the stable sort puts the lowest index first */
            cnt[U++] = 0;
        }
        grp[order[i]] = (int64_t)U - 1;
        cnt[U - 1]++;
    }
    /* output position of each group */
    for (size_t g = 0; g < U; g++) tmp[g] = (int64_t)g;
    if (!sorted) merge_sort(tmp, outpos, U, by_first, first);
    for (size_t p = 0; p < U; p++) outpos[tmp[p]] = (int64_t)p; /* tmp[p]: group at output position p */
    rlx_status st = RLX_OK;
    int64_t yd[RLX_MAX_RANK], u64 = (int64_t)U, a64 = (int64_t)A;
    memcpy(yd, x->dims, sizeof yd);
    yd[aa ? ax : 0] = u64;
    size_t es = rlx_dtype_size(x->dtype);
    if (!st && kout(k, 0)) st = rlx_cpu_alloc_out(k, 0, x->dtype, aa ? x->rank : 1, yd);
    if (!st && kout(k, 1)) st = rlx_cpu_alloc_out(k, 1, RLX_DTYPE_I64, 1, &u64);
    if (!st && kout(k, 2)) st = rlx_cpu_alloc_out(k, 2, RLX_DTYPE_I64, 1, &a64);
    if (!st && kout(k, 3)) st = rlx_cpu_alloc_out(k, 3, RLX_DTYPE_I64, 1, &u64);
    if (!st) {
        rlx_tensor *y = kout(k, 0), *yi = kout(k, 1), *yinv = kout(k, 2), *yc = kout(k, 3);
        for (size_t p = 0; p < U; p++) {
            size_t g = (size_t)tmp[p], it = (size_t)first[g];
            if (y)
                for (size_t o = 0; o < outer; o++)
                    if (inner)
                        memcpy((char *)y->data + (o * U + p) * inner * es, (const char *)x->data + (o * A + it) * inner * es,
                               inner * es);
            if (yi) ((int64_t *)yi->data)[p] = first[g];
            if (yc) ((int64_t *)yc->data)[p] = cnt[g];
        }
        if (yinv)
            for (size_t i = 0; i < A; i++) ((int64_t *)yinv->data)[i] = outpos[grp[i]];
    }
    free(buf);
    keys_free(&ky);
    return st;
}

/* NonZero-9/13: i64 [rank, count] of coordinates in row-major order (a
 * scalar counts as rank 1). */
static rlx_status k_nonzero(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    size_t n = rlx_tensor_numel(x), cnt = 0;
    bool fl = rlx_dtype_is_float(x->dtype);
    for (size_t i = 0; i < n; i++) cnt += fl ? rlx_tensor_get_f64(x, i) != 0 : rlx_tensor_get_i64(x, i) != 0;
    int r = x->rank ? x->rank : 1;
    int64_t d[2] = { r, (int64_t)cnt };
    RLX_TRY(rlx_cpu_alloc_out(k, 0, RLX_DTYPE_I64, 2, d));
    int64_t *y = k->out[0]->data;
    int64_t xs[RLX_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        bool nz = fl ? rlx_tensor_get_f64(x, i) != 0 : rlx_tensor_get_i64(x, i) != 0;
        if (!nz) continue;
        if (x->rank == 0) y[j] = 0;
        for (int a = 0; a < x->rank; a++) y[(size_t)a * cnt + j] = ((int64_t)i / xs[a]) % x->dims[a];
        j++;
    }
    return RLX_OK;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_tensor[RLX_OP_COUNT] = {
    [RLX_OP_Reshape] = k_copy, [RLX_OP_Flatten] = k_copy, [RLX_OP_Squeeze] = k_copy, [RLX_OP_Unsqueeze] = k_copy,
    [RLX_OP_Identity] = k_copy, [RLX_OP_Transpose] = k_transpose, [RLX_OP_Concat] = k_concat, [RLX_OP_Split] = k_split,
    [RLX_OP_Shape] = k_shape, [RLX_OP_Size] = k_size, [RLX_OP_Constant] = k_constant,
    [RLX_OP_ConstantOfShape] = k_constant_of_shape, [RLX_OP_Gather] = k_gather, [RLX_OP_GatherElements] = k_gather_elements,
    [RLX_OP_GatherND] = k_gather_nd, [RLX_OP_ScatterElements] = k_scatter_elements, [RLX_OP_ScatterND] = k_scatter_nd,
    [RLX_OP_Slice] = k_slice, [RLX_OP_Pad] = k_pad, [RLX_OP_Expand] = k_expand, [RLX_OP_Tile] = k_tile, [RLX_OP_Compress] = k_compress,
    [RLX_OP_DepthToSpace] = k_depth_to_space, [RLX_OP_SpaceToDepth] = k_space_to_depth,
    [RLX_OP_ReverseSequence] = k_reverse_sequence, [RLX_OP_Range] = k_range, [RLX_OP_OneHot] = k_onehot, [RLX_OP_Trilu] = k_trilu,
    [RLX_OP_EyeLike] = k_eye_like, [RLX_OP_CumSum] = k_cumsum, [RLX_OP_TopK] = k_topk, [RLX_OP_Unique] = k_unique,
    [RLX_OP_NonZero] = k_nonzero,
};
