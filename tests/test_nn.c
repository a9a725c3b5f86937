/* nn ops (src/ir/ops/ops_nn.c, src/backend/cpu/cpu_nn*.c): every op on
 * random inputs against a computation written here from the ONNX operator
 * text (no code shared with the kernels), plus small cases with known
 * answers from the ONNX operator examples, the f32 fast paths against the
 * reference kernels, shape inference and error cases.
 *
 * How the two CPU paths are reached: inputs fed as graph inputs run the
 * compiled plan (fast paths, k->reference false); the same node with every
 * input constant is folded at compile time, which runs the reference
 * kernels. */
#include "test.h"

/* ------------------------------------------------------------ helpers */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const int k_all_const[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };

static double elem(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    default: return NAN;
    }
}

/* The elements of t as a malloc'd double array. */
static double *to_doubles(const rlx_tensor *t) {
    size_t n = rlx_tensor_numel(t);
    double *d = malloc((n + 1) * sizeof *d);
    if (!d) exit(2);
    for (size_t i = 0; i < n; i++) d[i] = elem(t, i);
    return d;
}

static size_t prod(const int64_t *d, int n) {
    size_t p = 1;
    for (int i = 0; i < n; i++) p *= (size_t)d[i];
    return p;
}

/* |got - want| <= atol + rtol * |want| for every element; prints the first
 * mismatch. */
static int close_to(const char *what, const rlx_tensor *got, const double *want, size_t n, double rtol, double atol) {
    if (!got) return 0;
    if (rlx_tensor_numel(got) != n) {
        fprintf(stderr, "%s: %zu elements, expected %zu\n", what, rlx_tensor_numel(got), n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double g = elem(got, i), w = want[i];
        if (isnan(g) && isnan(w)) continue;
        if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
            fprintf(stderr, "%s: element %zu: got %.9g, want %.9g (rtol %g, atol %g)\n", what, i, g, w, rtol, atol);
            return 0;
        }
    }
    return 1;
}

static int same_tensor(const char *what, const rlx_tensor *a, const rlx_tensor *b, double rtol, double atol) {
    if (!a || !b) return 0;
    double *wb = to_doubles(b);
    int ok = a->rank == b->rank && close_to(what, a, wb, rlx_tensor_numel(b), rtol, atol);
    free(wb);
    return ok;
}

static int has_shape(const rlx_tensor *t, int rank, const int64_t *dims) {
    if (!t || t->rank != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i]) return 0;
    return 1;
}

/* Runs a one-node graph on the CPU; NULL (and a failed check) on error. */
static rlx_tensor **run_op(const char *op, int64_t opset, int n_in, const rlx_tensor *const *in, const int *konst,
                           int n_out, size_t na, const rlx_attr *a) {
    rlx_tensor **out = NULL;
    rlx_status st = test_run_op(op, opset, "cpu", n_in, in, konst, n_out, na, a, &out);
    CHECK_MSG(st == RLX_OK, "%s-%lld: %s: %s", op, (long long)opset, rlx_status_name(st), rlx_last_error());
    return st == RLX_OK ? out : NULL;
}

/* Spatial geometry shared by the conv and pool cases (nsp dims used). */
typedef struct sp_case {
    int nsp;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad; /* NULL: explicit pads */
} sp_case;

/* Output extents and effective pads by the ONNX formulas (Conv, pools). */
static void out_extents(const sp_case *c, int ceil_mode, int64_t *out, int64_t *pb, int64_t *pe) {
    for (int i = 0; i < c->nsp; i++) {
        int64_t ek = c->d[i] * (c->k[i] - 1) + 1, in = c->in[i], s = c->s[i];
        pb[i] = c->pb[i], pe[i] = c->pe[i];
        if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
            out[i] = (in + s - 1) / s;
            int64_t total = (out[i] - 1) * s + ek - in;
            if (total < 0) total = 0;
            bool upper = strcmp(c->auto_pad, "SAME_UPPER") == 0;
            pb[i] = upper ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else {
            if (c->auto_pad) pb[i] = pe[i] = 0; /* VALID */
            int64_t span = in + pb[i] + pe[i] - ek;
            if (ceil_mode) {
                out[i] = (span + s - 1) / s + 1;
                if ((out[i] - 1) * s >= in + pb[i]) out[i]--; /* last window must start inside */
            } else {
                out[i] = span / s + 1;
            }
        }
    }
}

/* Attribute list of the spatial case. Storage must outlive the call. */
typedef struct attr_store {
    rlx_attr a[16];
    size_t n;
    int64_t ints[8][8];
    int ni;
} attr_store;

static void add_ints(attr_store *st, const char *name, int n, const int64_t *v) {
    int64_t *dst = st->ints[st->ni++];
    memcpy(dst, v, (size_t)n * sizeof *v);
    st->a[st->n++] = RLX_ATTR_IS(name, (size_t)n, dst);
}

static void add_sp_attrs(attr_store *st, const sp_case *c, bool kernel_shape, bool dilations) {
    add_ints(st, "strides", c->nsp, c->s);
    if (dilations) add_ints(st, "dilations", c->nsp, c->d);
    if (kernel_shape) add_ints(st, "kernel_shape", c->nsp, c->k);
    if (c->auto_pad) {
        st->a[st->n++] = RLX_ATTR_S("auto_pad", c->auto_pad);
    } else {
        int64_t pads[6];
        for (int i = 0; i < c->nsp; i++) pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
        add_ints(st, "pads", 2 * c->nsp, pads);
    }
}

/* Decomposes a flat row-major index into a multi-index over dims[0..n). */
static void unflat(size_t flat, const int64_t *dims, int n, int64_t *idx) {
    for (int i = n - 1; i >= 0; i--) {
        idx[i] = (int64_t)(flat % (size_t)dims[i]);
        flat /= (size_t)dims[i];
    }
}

/* ------------------------------------------------------------ Conv */

typedef struct conv_case {
    const char *name;
    sp_case sp;
    int64_t n, cin, cout, group;
    int bias;
} conv_case;

/* y[n, co, o] = b[co] + sum over the group's input channels and kernel taps
 * of x[n, ci, o * s + t * d - pb] * w[co, ci', t], taps outside x skipped. */
static void naive_conv(const conv_case *c, const int64_t *out, const int64_t *pb, const double *x, const double *w,
                       const double *b, double *y) {
    int nsp = c->sp.nsp;
    size_t osz = prod(out, nsp), ksz = prod(c->sp.k, nsp), isz = prod(c->sp.in, nsp);
    int64_t cig = c->cin / c->group, cog = c->cout / c->group;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t co = 0; co < c->cout; co++)
            for (size_t op = 0; op < osz; op++) {
                int64_t o[3], t[3];
                unflat(op, out, nsp, o);
                double acc = b ? b[co] : 0.0;
                for (int64_t cl = 0; cl < cig; cl++)
                    for (size_t kp = 0; kp < ksz; kp++) {
                        unflat(kp, c->sp.k, nsp, t);
                        size_t flat = 0;
                        bool inside = true;
                        for (int i = 0; i < nsp; i++) {
                            int64_t q = o[i] * c->sp.s[i] + t[i] * c->sp.d[i] - pb[i];
                            inside = inside && q >= 0 && q < c->sp.in[i];
                            flat = flat * (size_t)c->sp.in[i] + (size_t)(q < 0 ? 0 : q);
                        }
                        if (!inside) continue;
                        int64_t ci = (co / cog) * cig + cl;
                        acc += x[(size_t)(n * c->cin + ci) * isz + flat] * w[(size_t)(co * cig + cl) * ksz + kp];
                    }
                y[(size_t)(n * c->cout + co) * osz + op] = acc;
            }
}

static void run_conv_case(const conv_case *c, rlx_dtype dt) {
    int nsp = c->sp.nsp;
    int64_t out[3], pb[3], pe[3];
    out_extents(&c->sp, 0, out, pb, pe);
    int64_t xd[5] = { c->n, c->cin }, wd[5] = { c->cout, c->cin / c->group }, bd[1] = { c->cout }, yd[5] = { c->n, c->cout };
    for (int i = 0; i < nsp; i++) xd[2 + i] = c->sp.in[i], wd[2 + i] = c->sp.k[i], yd[2 + i] = out[i];
    rlx_tensor *x = test_tensor_random(dt, 2 + nsp, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(dt, 2 + nsp, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(dt, 1, bd, -1, 1) : NULL;
    attr_store st = { .n = 0 };
    add_sp_attrs(&st, &c->sp, c->group != 3, true); /* one group count runs without kernel_shape */
    st.a[st.n++] = RLX_ATTR_I("group", c->group);
    const rlx_tensor *in[3] = { x, w, b };
    int n_in = c->bias ? 3 : 2;
    double *xv = to_doubles(x), *wv = to_doubles(w), *bv = b ? to_doubles(b) : NULL;
    size_t ny = prod(yd, 2 + nsp);
    double *want = malloc(ny * sizeof *want);
    naive_conv(c, out, pb, xv, wv, bv, want);

    rlx_tensor **fast = run_op("Conv", 22, n_in, in, NULL, 1, st.n, st.a);
    rlx_tensor **ref = run_op("Conv", 22, n_in, in, k_all_const, 1, st.n, st.a);
    char what[160];
    if (fast && ref) {
        CHECK_MSG(has_shape(fast[0], 2 + nsp, yd), "%s: output shape", c->name);
        /* plan path (f32: im2col + sgemm, float accumulation) vs the double
         * computation here: 1e-5 relative + 2e-5 absolute on sums of up to
         * ~130 products of values in [-1, 1] */
        snprintf(what, sizeof what, "Conv %s %s (plan)", c->name, rlx_dtype_name(dt));
        double tol = dt == RLX_DTYPE_F64 ? 1e-12 : 1e-5;
        CHECK(close_to(what, fast[0], want, ny, tol, dt == RLX_DTYPE_F64 ? 1e-12 : 2e-5));
        /* reference (double, rounded once) vs here: within f32 rounding */
        snprintf(what, sizeof what, "Conv %s %s (reference)", c->name, rlx_dtype_name(dt));
        CHECK(close_to(what, ref[0], want, ny, dt == RLX_DTYPE_F64 ? 1e-12 : 1e-6, dt == RLX_DTYPE_F64 ? 1e-12 : 1e-6));
        /* the fast path against the reference kernel: 1e-5 relative + 2e-5 absolute */
        snprintf(what, sizeof what, "Conv %s fast vs reference", c->name);
        CHECK(same_tensor(what, fast[0], ref[0], 1e-5, 2e-5));
    }
    test_free_outputs(fast, 1);
    test_free_outputs(ref, 1);
    free(xv), free(wv), free(bv), free(want);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
}

static void test_conv(void) {
    static const conv_case cases[] = {
        { "3x3 pad 1", { 2, { 6, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL }, 2, 3, 5, 1, 1 },
        { "3x3 stride 2 pad 1", { 2, { 9, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL }, 1, 3, 8, 1, 0 },
        { "depthwise 3x3 stride 2", { 2, { 7, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL }, 2, 6, 6, 6, 1 },
        { "depthwise 5x5 pad 2 multiplier 2", { 2, { 8, 8 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, NULL },
          1, 4, 8, 4, 1 },
        { "group 3", { 2, { 5, 6 }, { 3, 2 }, { 1, 2 }, { 1, 1 }, { 0, 1 }, { 1, 0 }, NULL }, 1, 6, 9, 3, 1 },
        { "group 2 stride 2", { 2, { 7, 6 }, { 2, 3 }, { 2, 1 }, { 1, 1 }, { 1, 0 }, { 0, 1 }, NULL }, 2, 4, 6, 2, 0 },
        { "dilation 2, asymmetric pads", { 2, { 9, 10 }, { 3, 3 }, { 1, 2 }, { 2, 2 }, { 2, 0 }, { 1, 3 }, NULL },
          1, 3, 4, 1, 1 },
        { "SAME_UPPER stride 2", { 2, { 7, 8 }, { 3, 4 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_UPPER" }, 1, 2, 3, 1, 1 },
        { "SAME_LOWER stride 2", { 2, { 7, 8 }, { 3, 4 }, { 2, 3 }, { 1, 1 }, { 0 }, { 0 }, "SAME_LOWER" }, 1, 2, 3, 1, 1 },
        { "VALID dilation 2", { 2, { 9, 7 }, { 3, 2 }, { 2, 1 }, { 2, 1 }, { 0 }, { 0 }, "VALID" }, 1, 2, 3, 1, 1 },
        { "1x1", { 2, { 4, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL }, 2, 5, 7, 1, 1 },
        { "1x1 stride 2", { 2, { 5, 6 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL }, 1, 5, 7, 1, 0 },
        { "1-D", { 1, { 11 }, { 3 }, { 2 }, { 1 }, { 1 }, { 2 }, NULL }, 2, 3, 4, 1, 1 },
        { "1-D depthwise dilation 3", { 1, { 12 }, { 3 }, { 1 }, { 3 }, { 3 }, { 3 }, NULL }, 1, 4, 4, 4, 1 },
        { "3-D", { 3, { 4, 5, 6 }, { 2, 3, 2 }, { 1, 2, 1 }, { 1, 1, 2 }, { 1, 0, 1 }, { 0, 1, 1 }, NULL }, 1, 2, 3, 1, 1 },
        { "3-D group 2 SAME_UPPER", { 3, { 3, 4, 5 }, { 3, 3, 3 }, { 2, 1, 2 }, { 1, 1, 1 }, { 0 }, { 0 }, "SAME_UPPER" },
          1, 4, 2, 2, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_conv_case(&cases[i], RLX_DTYPE_F32);
    run_conv_case(&cases[2], RLX_DTYPE_F64);
    run_conv_case(&cases[14], RLX_DTYPE_F64);
}

static void test_conv_errors(void) {
    int64_t xd[4] = { 1, 3, 5, 5 }, wd[4] = { 4, 2, 3, 3 }, w2[4] = { 5, 1, 3, 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *wg = test_tensor_random(RLX_DTYPE_F32, 4, w2, -1, 1);
    rlx_tensor **out = NULL;
    const rlx_tensor *in[2] = { x, w };
    CHECK_FAILS(test_run_op("Conv", 13, "cpu", 2, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Conv): input has 3 channels but weight expects 2 x group 1");
    /* 5 output channels do not split into 3 groups */
    rlx_attr g3 = RLX_ATTR_I("group", 3);
    const rlx_tensor *in2[2] = { x, wg };
    CHECK_FAILS(test_run_op("Conv", 13, "cpu", 2, in2, NULL, 1, 1, &g3, &out), RLX_ERR_INVALID_MODEL,
                "not divisible by group 3");
    /* a kernel larger than the padded input */
    int64_t wbig[4] = { 2, 3, 7, 3 };
    rlx_tensor *wb = test_tensor_random(RLX_DTYPE_F32, 4, wbig, -1, 1);
    const rlx_tensor *in3[2] = { x, wb };
    CHECK_FAILS(test_run_op("Conv", 13, "cpu", 2, in3, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Conv): kernel extent 7");
    /* bias of the wrong length */
    int64_t bd[1] = { 3 };
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    int64_t wd4[4] = { 4, 3, 3, 3 };
    rlx_tensor *w4 = test_tensor_random(RLX_DTYPE_F32, 4, wd4, -1, 1);
    const rlx_tensor *in4[3] = { x, w4, b };
    CHECK_FAILS(test_run_op("Conv", 13, "cpu", 3, in4, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                "bias must have shape [4]");
    CHECK(out == NULL);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(wg), rlx_tensor_destroy(wb);
    rlx_tensor_destroy(b), rlx_tensor_destroy(w4);
}

/* ------------------------------------------------------------ ConvTranspose */

typedef struct convt_case {
    const char *name;
    sp_case sp;
    int64_t n, cin, cout, group;
    int64_t out_pad[3];
    int n_out_shape; /* 0, nsp or nsp + 2 values in out_shape */
    int64_t out_shape[5];
    int bias;
} convt_case;

static void run_convt_case(const convt_case *c) {
    int nsp = c->sp.nsp;
    int64_t out[3], pb[3], pe[3], ek[3];
    /* output extents and pads by the ConvTranspose formulas */
    for (int i = 0; i < nsp; i++) {
        ek[i] = c->sp.d[i] * (c->sp.k[i] - 1) + 1;
        int64_t full = c->sp.s[i] * (c->sp.in[i] - 1) + c->out_pad[i] + ek[i];
        bool same = c->sp.auto_pad && strncmp(c->sp.auto_pad, "SAME", 4) == 0;
        if (c->n_out_shape || same) {
            int64_t target = c->n_out_shape ? c->out_shape[c->n_out_shape - nsp + i] : c->sp.in[i] * c->sp.s[i];
            int64_t total = full - target;
            if (total < 0) total = 0;
            bool upper = same && strcmp(c->sp.auto_pad, "SAME_UPPER") == 0;
            pb[i] = upper ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
            out[i] = target;
        } else {
            pb[i] = c->sp.auto_pad ? 0 : c->sp.pb[i];
            pe[i] = c->sp.auto_pad ? 0 : c->sp.pe[i];
            out[i] = full - pb[i] - pe[i];
        }
    }
    int64_t cig = c->cin / c->group, cog = c->cout / c->group;
    int64_t xd[5] = { c->n, c->cin }, wd[5] = { c->cin, cog }, bd[1] = { c->cout }, yd[5] = { c->n, c->cout };
    for (int i = 0; i < nsp; i++) xd[2 + i] = c->sp.in[i], wd[2 + i] = c->sp.k[i], yd[2 + i] = out[i];
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2 + nsp, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2 + nsp, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
    double *xv = to_doubles(x), *wv = to_doubles(w), *bv = b ? to_doubles(b) : NULL;
    /* Independent form: a convolution of the zero-stuffed input (s - 1 zeros
     * between elements, ek - 1 - pb in front) with the flipped kernel:
     * y[o] = sum_t Z[o + t * d - (ek - 1 - pb)] * w[k - 1 - t], where
     * Z[p] = x[p / s] when p is a multiple of s inside the input, else 0. */
    size_t osz = prod(out, nsp), ksz = prod(c->sp.k, nsp), isz = prod(c->sp.in, nsp);
    size_t ny = (size_t)(c->n * c->cout) * osz;
    double *want = malloc(ny * sizeof *want);
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t co = 0; co < c->cout; co++)
            for (size_t op = 0; op < osz; op++) {
                int64_t o[3], t[3];
                unflat(op, out, nsp, o);
                double acc = bv ? bv[co] : 0.0;
                int64_t gi = co / cog, ocl = co % cog;
                for (int64_t cl = 0; cl < cig; cl++)
                    for (size_t kp = 0; kp < ksz; kp++) {
                        unflat(kp, c->sp.k, nsp, t);
                        size_t xflat = 0, wflat = 0;
                        bool hit = true;
                        for (int i = 0; i < nsp; i++) {
                            int64_t p = o[i] + t[i] * c->sp.d[i] - (ek[i] - 1 - pb[i]);
                            hit = hit && p >= 0 && p % c->sp.s[i] == 0 && p / c->sp.s[i] < c->sp.in[i];
                            xflat = xflat * (size_t)c->sp.in[i] + (size_t)(p >= 0 ? p / c->sp.s[i] : 0);
                            wflat = wflat * (size_t)c->sp.k[i] + (size_t)(c->sp.k[i] - 1 - t[i]);
                        }
                        if (!hit) continue;
                        int64_t ci = gi * cig + cl;
                        acc += xv[(size_t)(n * c->cin + ci) * isz + xflat] * wv[(size_t)(ci * cog + ocl) * ksz + wflat];
                    }
                want[(size_t)(n * c->cout + co) * osz + op] = acc;
            }
    attr_store st = { .n = 0 };
    if (c->n_out_shape) {
        add_ints(&st, "strides", nsp, c->sp.s);
        add_ints(&st, "dilations", nsp, c->sp.d);
        add_ints(&st, "output_shape", c->n_out_shape, c->out_shape);
    } else {
        add_sp_attrs(&st, &c->sp, true, true);
    }
    st.a[st.n++] = RLX_ATTR_I("group", c->group);
    bool any_op = false;
    for (int i = 0; i < nsp; i++) any_op |= c->out_pad[i] != 0;
    if (any_op) add_ints(&st, "output_padding", nsp, c->out_pad);
    const rlx_tensor *in[3] = { x, w, b };
    rlx_tensor **got = run_op("ConvTranspose", 22, c->bias ? 3 : 2, in, NULL, 1, st.n, st.a);
    rlx_tensor **ref = run_op("ConvTranspose", 22, c->bias ? 3 : 2, in, k_all_const, 1, st.n, st.a);
    char what[160];
    if (got && ref) {
        snprintf(what, sizeof what, "ConvTranspose %s (plan)", c->name);
        CHECK_MSG(has_shape(got[0], 2 + nsp, yd), "%s: output shape", what);
        /* plan path (f32: sgemm + col2im): 1e-5 relative + 1e-5 absolute */
        CHECK(close_to(what, got[0], want, ny, 1e-5, 1e-5));
        /* reference: double accumulation on both sides, f32 result: 1e-6 */
        snprintf(what, sizeof what, "ConvTranspose %s (reference)", c->name);
        CHECK(close_to(what, ref[0], want, ny, 1e-6, 1e-6));
        snprintf(what, sizeof what, "ConvTranspose %s fast vs reference", c->name);
        CHECK(same_tensor(what, got[0], ref[0], 1e-5, 1e-5));
    }
    test_free_outputs(got, 1);
    test_free_outputs(ref, 1);
    free(xv), free(wv), free(bv), free(want);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
}

static void test_conv_transpose(void) {
    static const convt_case cases[] = {
        { "k2 s2 (the demo's upsampling)", { 2, { 5, 6 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL },
          1, 8, 4, 1, { 0 }, 0, { 0 }, 1 },
        { "k3 s2 pads 1 output_padding 1", { 2, { 4, 5 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL },
          2, 3, 2, 1, { 1, 1 }, 0, { 0 }, 1 },
        { "group 2 dilation 2", { 2, { 4, 3 }, { 3, 2 }, { 1, 2 }, { 2, 2 }, { 1, 0 }, { 0, 2 }, NULL },
          1, 4, 6, 2, { 0, 1 }, 0, { 0 }, 1 },
        { "depthwise s2", { 2, { 3, 4 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL },
          1, 3, 3, 3, { 0, 0 }, 0, { 0 }, 0 },
        { "output_shape", { 2, { 3, 4 }, { 3, 3 }, { 2, 3 }, { 1, 1 }, { 0 }, { 0 }, NULL },
          1, 2, 3, 1, { 0, 0 }, 2, { 6, 11 }, 1 },
        { "output_shape with N, C", { 2, { 3, 3 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 0 }, { 0 }, NULL },
          1, 1, 2, 1, { 0, 0 }, 4, { 1, 2, 10, 8 }, 0 },
        { "output_shape beyond the full extent", { 1, { 3 }, { 2 }, { 2 }, { 1 }, { 0 }, { 0 }, NULL },
          1, 2, 2, 1, { 0 }, 1, { 9 }, 1 },
        { "SAME_UPPER s2", { 2, { 3, 3 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_UPPER" },
          1, 1, 2, 1, { 0, 0 }, 0, { 0 }, 0 },
        { "SAME_LOWER s2", { 2, { 3, 4 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_LOWER" },
          1, 2, 2, 1, { 0, 0 }, 0, { 0 }, 1 },
        { "1-D", { 1, { 5 }, { 3 }, { 3 }, { 1 }, { 1 }, { 0 }, NULL }, 2, 2, 3, 1, { 2 }, 0, { 0 }, 1 },
        { "3-D", { 3, { 2, 3, 2 }, { 2, 2, 3 }, { 2, 1, 2 }, { 1, 2, 1 }, { 0, 1, 1 }, { 1, 0, 0 }, NULL },
          1, 2, 2, 1, { 1, 0, 1 }, 0, { 0 }, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_convt_case(&cases[i]);
}

/* ------------------------------------------------------------ pools */

typedef enum pool_op { P_MAX, P_AVG, P_LP } pool_op;

typedef struct pool_case {
    const char *name;
    sp_case sp;
    int64_t n, c;
    int ceil_mode, count_include_pad, dilations;
    int64_t p; /* LpPool */
} pool_case;

/* Windows in padded coordinates: tap q = o * s + t * d lies on the input
 * when pb <= q < pb + in, and inside the explicit padding when q < in + pb +
 * pe (ceil_mode windows may reach past that: never counted). */
static void naive_pool(pool_op op, const pool_case *c, const int64_t *out, const int64_t *pb, const int64_t *pe,
                       const double *x, double *y, int64_t *arg, int col_major) {
    int nsp = c->sp.nsp;
    size_t osz = prod(out, nsp), ksz = prod(c->sp.k, nsp), isz = prod(c->sp.in, nsp);
    for (size_t pl = 0; pl < (size_t)(c->n * c->c); pl++)
        for (size_t op_i = 0; op_i < osz; op_i++) {
            int64_t o[3], t[3];
            unflat(op_i, out, nsp, o);
            double best = -INFINITY, sum = 0;
            int64_t best_at = -1, real = 0, counted = 0;
            for (size_t kp = 0; kp < ksz; kp++) {
                unflat(kp, c->sp.k, nsp, t);
                bool on = true, padded = true;
                size_t flat = 0, cflat = 0, cstride = 1;
                for (int i = 0; i < nsp; i++) {
                    int64_t q = o[i] * c->sp.s[i] + t[i] * c->sp.d[i];
                    on = on && q >= pb[i] && q < pb[i] + c->sp.in[i];
                    padded = padded && q < c->sp.in[i] + pb[i] + pe[i];
                    int64_t xi = q - pb[i];
                    flat = flat * (size_t)c->sp.in[i] + (size_t)(xi < 0 ? 0 : xi);
                    cflat += (size_t)(xi < 0 ? 0 : xi) * cstride;
                    cstride *= (size_t)c->sp.in[i];
                }
                counted += padded;
                if (!on) continue;
                real++;
                double v = x[pl * isz + flat];
                if (op == P_MAX && v > best) best = v, best_at = (int64_t)(pl * isz + (col_major ? cflat : flat));
                if (op == P_AVG) sum += v;
                if (op == P_LP) sum += pow(fabs(v), (double)c->p);
            }
            double r = op == P_MAX ? best
                     : op == P_AVG ? sum / (double)(c->count_include_pad ? counted : real)
                                   : pow(sum, 1.0 / (double)c->p);
            y[pl * osz + op_i] = r;
            if (arg) arg[pl * osz + op_i] = best_at;
        }
}

static void run_pool_case(pool_op op, const pool_case *c, int64_t opset, rlx_dtype dt, int with_indices,
                          int col_major) {
    static const char *names[3] = { "MaxPool", "AveragePool", "LpPool" };
    int nsp = c->sp.nsp;
    int64_t out[3], pb[3], pe[3];
    out_extents(&c->sp, c->ceil_mode, out, pb, pe);
    int64_t xd[5] = { c->n, c->c }, yd[5] = { c->n, c->c };
    for (int i = 0; i < nsp; i++) xd[2 + i] = c->sp.in[i], yd[2 + i] = out[i];
    rlx_tensor *x;
    if (dt == RLX_DTYPE_I8) { /* the shared helper has no int8 */
        x = test_tensor(dt, 2 + nsp, xd);
        for (size_t i = 0; i < rlx_tensor_numel(x); i++) ((int8_t *)x->data)[i] = (int8_t)floorf(test_rand_uniform(-128, 127.99f));
    } else {
        x = test_tensor_random(dt, 2 + nsp, xd, dt == RLX_DTYPE_U8 ? 0 : -2, dt == RLX_DTYPE_U8 ? 255 : 2);
    }
    double *xv = to_doubles(x);
    size_t ny = prod(yd, 2 + nsp);
    double *want = malloc(ny * sizeof *want);
    int64_t *arg = malloc(ny * sizeof *arg);
    naive_pool(op, c, out, pb, pe, xv, want, arg, col_major);
    attr_store st = { .n = 0 };
    add_sp_attrs(&st, &c->sp, true, c->dilations);
    if (c->ceil_mode) st.a[st.n++] = RLX_ATTR_I("ceil_mode", 1);
    if (op == P_AVG) st.a[st.n++] = RLX_ATTR_I("count_include_pad", c->count_include_pad);
    if (op == P_LP) st.a[st.n++] = RLX_ATTR_I("p", c->p);
    if (col_major) st.a[st.n++] = RLX_ATTR_I("storage_order", 1);
    const rlx_tensor *in[1] = { x };
    rlx_tensor **got = run_op(names[op], opset, 1, in, NULL, with_indices ? 2 : 1, st.n, st.a);
    char what[160];
    snprintf(what, sizeof what, "%s-%lld %s %s", names[op], (long long)opset, c->name, rlx_dtype_name(dt));
    if (got) {
        CHECK_MSG(has_shape(got[0], 2 + nsp, yd), "%s: output shape", what);
        /* max is exact; sums in double on both sides, rounded to f32: 1e-6 */
        CHECK(close_to(what, got[0], want, ny, op == P_MAX ? 0 : 1e-6, op == P_MAX ? 0 : 1e-6));
        if (with_indices) {
            double *wa = malloc(ny * sizeof *wa);
            for (size_t i = 0; i < ny; i++) wa[i] = (double)arg[i];
            CHECK_MSG(got[1]->dtype == RLX_DTYPE_I64, "%s: Indices dtype", what);
            CHECK(close_to(what, got[1], wa, ny, 0, 0));
            free(wa);
        }
    }
    test_free_outputs(got, with_indices ? 2 : 1);
    free(xv), free(want), free(arg);
    rlx_tensor_destroy(x);
}

static void test_pools(void) {
    static const pool_case cases[] = {
        { "3x3 s2 p1", { 2, { 7, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL }, 2, 3, 0, 0, 0, 2 },
        { "3x3 s2 p1 ceil", { 2, { 8, 7 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL }, 1, 2, 1, 0, 0, 2 },
        { "2x2 s2 ceil odd", { 2, { 5, 7 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL }, 1, 2, 1, 0, 0, 3 },
        { "3x2 s(2,3) asym pads count_include_pad", { 2, { 8, 9 }, { 3, 2 }, { 2, 3 }, { 1, 1 }, { 2, 0 }, { 1, 1 }, NULL },
          1, 2, 0, 1, 0, 2 },
        { "ceil + count_include_pad (window past the padding)",
          { 2, { 6, 7 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 0 }, { 0, 1 }, NULL }, 1, 2, 1, 1, 0, 2 },
        { "dilations 2 ceil", { 2, { 9, 8 }, { 3, 2 }, { 2, 3 }, { 2, 2 }, { 1, 1 }, { 0, 1 }, NULL }, 1, 2, 1, 1, 1, 3 },
        { "SAME_UPPER", { 2, { 7, 6 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_UPPER" }, 1, 2, 0, 0, 0, 2 },
        { "SAME_LOWER", { 2, { 7, 6 }, { 3, 2 }, { 2, 1 }, { 1, 1 }, { 0 }, { 0 }, "SAME_LOWER" }, 1, 2, 0, 1, 0, 2 },
        { "VALID", { 2, { 7, 6 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "VALID" }, 1, 2, 0, 0, 0, 2 },
        { "1-D", { 1, { 13 }, { 4 }, { 3 }, { 1 }, { 2 }, { 1 }, NULL }, 2, 2, 1, 1, 0, 2 },
        { "3-D", { 3, { 4, 5, 6 }, { 2, 3, 2 }, { 2, 1, 2 }, { 1, 1, 1 }, { 1, 1, 0 }, { 0, 1, 1 }, NULL },
          1, 2, 1, 0, 0, 2 },
        { "3-D dilations", { 3, { 6, 5, 7 }, { 2, 2, 3 }, { 2, 1, 3 }, { 2, 3, 2 }, { 0, 1, 1 }, { 1, 0, 1 }, NULL },
          1, 1, 1, 1, 1, 2 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        const pool_case *c = &cases[i];
        /* versions before 10 have no ceil_mode, before 19 (AveragePool) and
         * 10 (MaxPool) no dilations */
        run_pool_case(P_MAX, c, c->dilations ? 12 : 11, RLX_DTYPE_F32, 1, 0);
        run_pool_case(P_AVG, c, c->dilations ? 19 : 11, RLX_DTYPE_F32, 0, 0);
        run_pool_case(P_LP, c, 18, RLX_DTYPE_F32, 0, 0);
    }
    run_pool_case(P_MAX, &cases[0], 12, RLX_DTYPE_F32, 1, 1); /* storage_order=1 */
    run_pool_case(P_MAX, &cases[10], 12, RLX_DTYPE_F32, 1, 1);
    run_pool_case(P_MAX, &cases[1], 12, RLX_DTYPE_U8, 0, 0);
    run_pool_case(P_MAX, &cases[5], 12, RLX_DTYPE_I8, 1, 0);
    run_pool_case(P_AVG, &cases[3], 22, RLX_DTYPE_F64, 0, 0);
}

/* Known answers from the ONNX operator examples. */
static void test_pools_known(void) {
    float v[25];
    for (int i = 0; i < 25; i++) v[i] = (float)(i + 1);
    int64_t d4[4] = { 1, 1, 4, 4 }, d5[4] = { 1, 1, 5, 5 };
    rlx_tensor *x4 = test_tensor_f32(4, d4, v), *x5 = test_tensor_f32(4, d5, v);
    int64_t k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, k2[2] = { 2, 2 };
    /* AveragePool, kernel 3, stride 2, ceil_mode on 4x4 1..16 */
    rlx_attr a1[3] = { RLX_ATTR_IS("kernel_shape", 2, k3), RLX_ATTR_IS("strides", 2, s2), RLX_ATTR_I("ceil_mode", 1) };
    const rlx_tensor *in4[1] = { x4 }, *in5[1] = { x5 };
    rlx_tensor **o = run_op("AveragePool", 19, 1, in4, NULL, 1, 3, a1);
    static const double avg_ceil[4] = { 6, 7.5, 12, 13.5 };
    if (o) CHECK(close_to("AveragePool ceil example", o[0], avg_ceil, 4, 1e-7, 0));
    test_free_outputs(o, 1);
    /* MaxPool with Indices, storage_order=1 (column-major), 2x2 stride 2 */
    rlx_attr a2[3] = { RLX_ATTR_IS("kernel_shape", 2, k2), RLX_ATTR_IS("strides", 2, s2),
                       RLX_ATTR_I("storage_order", 1) };
    o = run_op("MaxPool", 12, 1, in5, NULL, 2, 3, a2);
    static const double mx[4] = { 7, 9, 17, 19 }, mi[4] = { 6, 16, 8, 18 };
    if (o) {
        CHECK(close_to("MaxPool storage_order example values", o[0], mx, 4, 0, 0));
        CHECK(close_to("MaxPool storage_order example indices", o[1], mi, 4, 0, 0));
    }
    test_free_outputs(o, 2);
    rlx_tensor_destroy(x4), rlx_tensor_destroy(x5);
}

static void test_global_pools(void) {
    int64_t d3[3] = { 2, 3, 7 }, d5[5] = { 1, 2, 3, 4, 5 };
    const int64_t *dims[2] = { d3, d5 };
    int ranks[2] = { 3, 5 };
    static const char *ops[3] = { "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool" };
    for (int r = 0; r < 2; r++) {
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, ranks[r], dims[r], -2, 2);
        double *xv = to_doubles(x);
        size_t planes = (size_t)(dims[r][0] * dims[r][1]), sp = prod(dims[r] + 2, ranks[r] - 2);
        int64_t yd[5];
        for (int i = 0; i < ranks[r]; i++) yd[i] = i < 2 ? dims[r][i] : 1;
        for (int op = 0; op < 3; op++) {
            double *want = malloc(planes * sizeof *want);
            for (size_t pl = 0; pl < planes; pl++) {
                double acc = op == 1 ? -INFINITY : 0;
                for (size_t i = 0; i < sp; i++) {
                    double v = xv[pl * sp + i];
                    if (op == 0) acc += v / (double)sp;
                    else if (op == 1) acc = fmax(acc, v);
                    else acc += fabs(v) * fabs(v) * fabs(v);
                }
                want[pl] = op == 2 ? cbrt(acc) : acc;
            }
            rlx_attr p3 = RLX_ATTR_I("p", 3);
            const rlx_tensor *in[1] = { x };
            rlx_tensor **o = run_op(ops[op], 22, 1, in, NULL, 1, op == 2 ? 1 : 0, &p3);
            if (o) {
                CHECK_MSG(has_shape(o[0], ranks[r], yd), "%s: output shape", ops[op]);
                CHECK(close_to(ops[op], o[0], want, planes, 1e-6, 1e-6)); /* double sums, f32 result */
            }
            test_free_outputs(o, 1);
            free(want);
        }
        free(xv);
        rlx_tensor_destroy(x);
    }
    /* empty spatial dims: GlobalAveragePool gives 0 and GlobalMaxPool -inf,
     * as ReduceMean and ReduceMax over them (they were NaN, 0/0, and
     * -FLT_MAX), GlobalLpPool 0, on the reference and the fast path */
    int64_t de[3] = { 2, 3, 0 }, ye[3] = { 2, 3, 1 };
    rlx_tensor *xe = test_tensor(RLX_DTYPE_F32, 3, de);
    const rlx_tensor *ine[1] = { xe };
    static const float want_e[3] = { 0.0f, -INFINITY, 0.0f };
    rlx_attr p2 = RLX_ATTR_I("p", 2);
    for (int op = 0; op < 3; op++)
        for (int folded = 0; folded < 2; folded++) { /* a constant input: folded by the reference */
            int konst[1] = { folded };
            rlx_tensor **oe = run_op(ops[op], 22, 1, ine, konst, 1, op == 2 ? 1 : 0, &p2);
            if (oe) {
                CHECK_MSG(has_shape(oe[0], 3, ye), "%s of empty planes: output shape", ops[op]);
                int bad = 0;
                for (size_t i = 0; i < 6; i++) bad += ((const float *)oe[0]->data)[i] != want_e[op];
                CHECK_MSG(bad == 0, "%s of empty planes (folded %d): %d of 6 are not %g", ops[op], folded, bad,
                          (double)want_e[op]);
            }
            test_free_outputs(oe, 1);
        }
    rlx_tensor_destroy(xe);
}

/* ------------------------------------------------------------ BatchNormalization */

static void run_bn(int64_t opset, rlx_dtype dt, int rank, const int64_t *xd, int spatial) {
    size_t c = (size_t)xd[1], inner = prod(xd + 2, rank - 2), nb = (size_t)xd[0];
    int64_t pd[RLX_MAX_RANK];
    int prank = spatial ? 1 : rank - 1;
    if (spatial) pd[0] = xd[1];
    else memcpy(pd, xd + 1, (size_t)(rank - 1) * sizeof *pd);
    rlx_tensor *x = test_tensor_random(dt, rank, xd, -3, 3);
    rlx_tensor *sc = test_tensor_random(dt, prank, pd, 0.5f, 2);
    rlx_tensor *bb = test_tensor_random(dt, prank, pd, -1, 1);
    rlx_tensor *mean = test_tensor_random(dt, prank, pd, -1, 1);
    rlx_tensor *var = test_tensor_random(dt, prank, pd, 0.1f, 2);
    double *xv = to_doubles(x), *s = to_doubles(sc), *b = to_doubles(bb), *m = to_doubles(mean), *v = to_doubles(var);
    float eps = 1e-3f;
    size_t ny = nb * c * inner;
    double *want = malloc(ny * sizeof *want);
    for (size_t i = 0; i < ny; i++) {
        size_t ch = (i / inner) % c, p = spatial ? ch : ch * inner + i % inner;
        want[i] = s[p] * (xv[i] - m[p]) / sqrt(v[p] + (double)eps) + b[p];
    }
    rlx_attr a[2] = { RLX_ATTR_F("epsilon", eps), RLX_ATTR_I("spatial", 0) };
    const rlx_tensor *in[5] = { x, sc, bb, mean, var };
    int konst[5] = { 0, 1, 1, 1, 1 };
    rlx_tensor **o = run_op("BatchNormalization", opset, 5, in, konst, 1, spatial ? 1 : 2, a);
    rlx_tensor **ref = run_op("BatchNormalization", opset, 5, in, k_all_const, 1, spatial ? 1 : 2, a);
    char what[96];
    snprintf(what, sizeof what, "BatchNormalization-%lld %s rank %d%s", (long long)opset, rlx_dtype_name(dt), rank,
             spatial ? "" : " spatial=0");
    bool f64 = dt == RLX_DTYPE_F64;
    /* plan path (f32: x * a + b in float, |x * a| up to ~20): 1e-5 + 1e-5 */
    if (o) CHECK(close_to(what, o[0], want, ny, f64 ? 1e-13 : 1e-5, f64 ? 1e-13 : 1e-5));
    /* reference: one rounding of a double result: 1e-6 (f32), 1e-13 (f64) */
    if (ref) CHECK(close_to(what, ref[0], want, ny, f64 ? 1e-13 : 1e-6, f64 ? 1e-13 : 1e-6));
    test_free_outputs(o, 1);
    test_free_outputs(ref, 1);
    free(xv), free(s), free(b), free(m), free(v), free(want);
    rlx_tensor_destroy(x), rlx_tensor_destroy(sc), rlx_tensor_destroy(bb), rlx_tensor_destroy(mean),
        rlx_tensor_destroy(var);
}

static void test_batchnorm(void) {
    int64_t d4[4] = { 2, 3, 4, 5 }, d2[2] = { 4, 6 }, d3[3] = { 1, 3, 7 };
    run_bn(15, RLX_DTYPE_F32, 4, d4, 1);
    run_bn(9, RLX_DTYPE_F32, 2, d2, 1);
    run_bn(14, RLX_DTYPE_F64, 3, d3, 1);
    run_bn(7, RLX_DTYPE_F32, 4, d4, 0);
    /* training mode is refused, naming the node */
    int64_t pd[1] = { 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d4, -1, 1);
    rlx_tensor *p = test_tensor_random(RLX_DTYPE_F32, 1, pd, 0.5f, 1);
    const rlx_tensor *in[5] = { x, p, p, p, p };
    rlx_attr tm = RLX_ATTR_I("training_mode", 1);
    rlx_tensor **o = NULL;
    CHECK_FAILS(test_run_op("BatchNormalization", 15, "cpu", 5, in, NULL, 1, 1, &tm, &o), RLX_ERR_UNSUPPORTED,
                "node 'node0' (BatchNormalization): training_mode=1");
    /* before 14, statistics outputs mean training */
    CHECK_FAILS(test_run_op("BatchNormalization", 9, "cpu", 5, in, NULL, 3, 0, NULL, &o), RLX_ERR_UNSUPPORTED,
                "node 'node0' (BatchNormalization): output 1");
    /* statistics of the wrong length */
    int64_t pd4[1] = { 4 };
    rlx_tensor *p4 = test_tensor_random(RLX_DTYPE_F32, 1, pd4, 0.5f, 1);
    const rlx_tensor *in4[5] = { x, p, p4, p, p };
    CHECK_FAILS(test_run_op("BatchNormalization", 15, "cpu", 5, in4, NULL, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "input B must have shape [C] with C = 3");
    CHECK(o == NULL);
    rlx_tensor_destroy(x), rlx_tensor_destroy(p), rlx_tensor_destroy(p4);
}

/* ------------------------------------------------------------ Gemm */

static void run_gemm(int ta, int tb, float alpha, float beta, int crank, const int64_t *cd, int64_t opset) {
    int64_t m = 5, n = 7, kk = 6;
    int64_t ad[2] = { ta ? kk : m, ta ? m : kk }, bd[2] = { tb ? n : kk, tb ? kk : n }, yd[2] = { m, n };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    rlx_tensor *c = crank >= 0 ? test_tensor_random(RLX_DTYPE_F32, crank, cd, -1, 1) : NULL;
    double *av = to_doubles(a), *bv = to_doubles(b), *cv = c ? to_doubles(c) : NULL;
    /* transpose explicitly, then a plain product; C indexed by broadcasting */
    double at[5 * 6], bt[6 * 7], want[5 * 7];
    for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < kk; q++) at[i * kk + q] = ta ? av[q * m + i] : av[i * kk + q];
    for (int64_t q = 0; q < kk; q++)
        for (int64_t j = 0; j < n; j++) bt[q * n + j] = tb ? bv[j * kk + q] : bv[q * n + j];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t q = 0; q < kk; q++) s += at[i * kk + q] * bt[q * n + j];
            double cval = 0;
            if (c) {
                int64_t ci = crank == 2 ? (cd[0] == 1 ? 0 : i) : 0;
                int64_t cj = crank >= 1 ? (cd[crank - 1] == 1 ? 0 : j) : 0;
                cval = cv[crank == 2 ? ci * cd[1] + cj : cj];
            }
            want[i * n + j] = alpha * s + beta * cval;
        }
    rlx_attr at_[4] = { RLX_ATTR_I("transA", ta), RLX_ATTR_I("transB", tb), RLX_ATTR_F("alpha", alpha),
                        RLX_ATTR_F("beta", beta) };
    const rlx_tensor *in[3] = { a, b, c };
    int n_in = c ? 3 : 2;
    rlx_tensor **fast = run_op("Gemm", opset, n_in, in, NULL, 1, 4, at_);
    rlx_tensor **ref = run_op("Gemm", opset, n_in, in, k_all_const, 1, 4, at_);
    char what[128];
    snprintf(what, sizeof what, "Gemm transA=%d transB=%d alpha=%g beta=%g C rank %d", ta, tb, alpha, beta, crank);
    if (fast && ref) {
        CHECK_MSG(has_shape(fast[0], 2, yd), "%s: shape", what);
        CHECK(close_to(what, fast[0], want, 35, 1e-5, 1e-5)); /* sgemm: 6-term f32 sums */
        CHECK(close_to(what, ref[0], want, 35, 1e-6, 1e-6));  /* reference: double, rounded once */
        CHECK(same_tensor("Gemm fast vs reference", fast[0], ref[0], 1e-5, 1e-5));
    }
    test_free_outputs(fast, 1), test_free_outputs(ref, 1);
    free(av), free(bv), free(cv);
    rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(c);
}

static void test_gemm(void) {
    int64_t c_mn[2] = { 5, 7 }, c_1n[2] = { 1, 7 }, c_m1[2] = { 5, 1 }, c_n[1] = { 7 }, c_1[1] = { 1 };
    run_gemm(0, 0, 1.0f, 1.0f, 2, c_mn, 13);
    run_gemm(1, 0, 0.5f, 2.0f, 2, c_1n, 13);
    run_gemm(0, 1, -1.5f, 0.25f, 2, c_m1, 13);
    run_gemm(1, 1, 2.0f, -1.0f, 1, c_n, 13);
    run_gemm(0, 0, 1.0f, 3.0f, 1, c_1, 9);
    run_gemm(1, 1, 1.0f, 1.0f, 0, NULL, 11); /* scalar C */
    run_gemm(0, 1, 0.75f, 1.0f, -1, NULL, 13); /* no C (from 11) */
    /* errors: C that does not broadcast, inner dims that differ */
    int64_t ad[2] = { 3, 4 }, bd[2] = { 5, 2 }, cd[2] = { 2, 2 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 2, cd, -1, 1);
    const rlx_tensor *in[3] = { a, b, c };
    rlx_tensor **o = NULL;
    CHECK_FAILS(test_run_op("Gemm", 13, "cpu", 2, in, NULL, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Gemm): inner dimensions differ");
    rlx_attr tb = RLX_ATTR_I("transB", 1);
    int64_t bd2[2] = { 2, 4 };
    rlx_tensor *b2 = test_tensor_random(RLX_DTYPE_F32, 2, bd2, -1, 1);
    const rlx_tensor *in2[3] = { a, b2, c };
    CHECK_FAILS(test_run_op("Gemm", 13, "cpu", 3, in2, NULL, 1, 1, &tb, &o), RLX_ERR_INVALID_MODEL,
                "C does not broadcast to [3, 2]");
    rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(b2), rlx_tensor_destroy(c);
}

/* ------------------------------------------------------------ MatMul */

static void run_matmul(int ra, const int64_t *ad, int rb, const int64_t *bd, int ry, const int64_t *yd,
                       rlx_dtype dt) {
    rlx_tensor *a = test_tensor_random(dt, ra, ad, -4, 4), *b = test_tensor_random(dt, rb, bd, -4, 4);
    double *av = to_doubles(a), *bv = to_doubles(b);
    /* numpy rules spelled out: promote 1-D operands, broadcast the batch
     * dims by index arithmetic, drop the promoted dims from the result */
    int64_t A[RLX_MAX_RANK + 1], B[RLX_MAX_RANK + 1];
    int na = ra == 1 ? 2 : ra, nb = rb == 1 ? 2 : rb;
    if (ra == 1) A[0] = 1, A[1] = ad[0];
    else memcpy(A, ad, (size_t)ra * sizeof *A);
    if (rb == 1) B[0] = bd[0], B[1] = 1;
    else memcpy(B, bd, (size_t)rb * sizeof *B);
    int64_t m = A[na - 2], kk = A[na - 1], n = B[nb - 1];
    int br = (na > nb ? na : nb) - 2;
    int64_t bdims[RLX_MAX_RANK];
    size_t nbatch = 1;
    for (int i = 0; i < br; i++) {
        int ia = i - (br - (na - 2)), ib = i - (br - (nb - 2));
        int64_t x1 = ia >= 0 ? A[ia] : 1, x2 = ib >= 0 ? B[ib] : 1;
        bdims[i] = x1 > x2 ? x1 : x2;
        nbatch *= (size_t)bdims[i];
    }
    size_t ny = nbatch * (size_t)(m * n);
    double *want = malloc(ny * sizeof *want);
    for (size_t bi = 0; bi < nbatch; bi++) {
        int64_t idx[RLX_MAX_RANK];
        unflat(bi, bdims, br, idx);
        size_t oa = 0, ob = 0;
        for (int i = 0; i < br; i++) {
            int ia = i - (br - (na - 2)), ib = i - (br - (nb - 2));
            if (ia >= 0) oa = oa * (size_t)A[ia] + (size_t)(A[ia] == 1 ? 0 : idx[i]);
            if (ib >= 0) ob = ob * (size_t)B[ib] + (size_t)(B[ib] == 1 ? 0 : idx[i]);
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < kk; q++)
                    s += av[oa * (size_t)(m * kk) + (size_t)(i * kk + q)] * bv[ob * (size_t)(kk * n) + (size_t)(q * n + j)];
                want[bi * (size_t)(m * n) + (size_t)(i * n + j)] = s;
            }
    }
    const rlx_tensor *in[2] = { a, b };
    rlx_tensor **fast = run_op("MatMul", 13, 2, in, NULL, 1, 0, NULL);
    rlx_tensor **ref = run_op("MatMul", 13, 2, in, k_all_const, 1, 0, NULL);
    char what[96];
    snprintf(what, sizeof what, "MatMul %s rank %d x rank %d", rlx_dtype_name(dt), ra, rb);
    if (fast && ref) {
        CHECK_MSG(has_shape(fast[0], ry, yd) && has_shape(ref[0], ry, yd), "%s: output shape", what);
        double tol = dt == RLX_DTYPE_F32 ? 1e-5 : 0; /* integers exact; f32 sums of <= 6 products */
        CHECK(close_to(what, fast[0], want, ny, tol, tol));
        CHECK(close_to(what, ref[0], want, ny, tol / 10, tol / 10));
        CHECK(same_tensor("MatMul fast vs reference", fast[0], ref[0], tol, tol));
    }
    test_free_outputs(fast, 1), test_free_outputs(ref, 1);
    free(av), free(bv), free(want);
    rlx_tensor_destroy(a), rlx_tensor_destroy(b);
}

static void test_matmul(void) {
    int64_t v5[1] = { 5 }, m35[2] = { 3, 5 }, m54[2] = { 5, 4 }, b254[3] = { 2, 5, 4 }, b235[3] = { 2, 3, 5 };
    int64_t y0[1] = { 0 }, y4[1] = { 4 }, y3[1] = { 3 }, y34[2] = { 3, 4 }, y24[2] = { 2, 4 }, y23[2] = { 2, 3 };
    int64_t y234[3] = { 2, 3, 4 };
    run_matmul(1, v5, 1, v5, 0, y0, RLX_DTYPE_F32);     /* 1-D x 1-D: scalar */
    run_matmul(1, v5, 2, m54, 1, y4, RLX_DTYPE_F32);    /* 1-D x 2-D */
    run_matmul(2, m35, 1, v5, 1, y3, RLX_DTYPE_F32);    /* 2-D x 1-D */
    run_matmul(2, m35, 2, m54, 2, y34, RLX_DTYPE_F32);  /* plain */
    run_matmul(1, v5, 3, b254, 2, y24, RLX_DTYPE_F32);  /* 1-D x 3-D */
    run_matmul(3, b235, 1, v5, 2, y23, RLX_DTYPE_F32);  /* 3-D x 1-D */
    run_matmul(3, b235, 2, m54, 3, y234, RLX_DTYPE_F32); /* batch x plain (one sgemm) */
    run_matmul(2, m35, 3, b254, 3, y234, RLX_DTYPE_F32); /* plain x batch */
    int64_t a4[4] = { 2, 1, 3, 5 }, b4[4] = { 1, 3, 5, 2 }, y4d[4] = { 2, 3, 3, 2 };
    run_matmul(4, a4, 4, b4, 4, y4d, RLX_DTYPE_F32); /* both batches broadcast */
    int64_t a3[3] = { 4, 2, 3 }, b5[5] = { 2, 1, 1, 3, 2 }, y5[5] = { 2, 1, 4, 2, 2 };
    run_matmul(3, a3, 5, b5, 5, y5, RLX_DTYPE_F32); /* ranks 3 and 5 */
    run_matmul(4, a4, 4, b4, 4, y4d, RLX_DTYPE_I64); /* integer, exact */
    run_matmul(3, b235, 2, m54, 3, y234, RLX_DTYPE_I32);
    run_matmul(2, m35, 3, b254, 3, y234, RLX_DTYPE_F64);
    /* errors */
    int64_t bad[2] = { 4, 4 }, bb1[3] = { 2, 3, 5 }, bb2[3] = { 3, 5, 4 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, m35, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 2, bad, -1, 1);
    rlx_tensor *c1 = test_tensor_random(RLX_DTYPE_F32, 3, bb1, -1, 1), *c2 = test_tensor_random(RLX_DTYPE_F32, 3, bb2, -1, 1);
    rlx_tensor **o = NULL;
    const rlx_tensor *in[2] = { a, b }, *in2[2] = { c1, c2 };
    CHECK_FAILS(test_run_op("MatMul", 13, "cpu", 2, in, NULL, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "node 'node0' (MatMul): inner dimensions differ (5 and 4)");
    CHECK_FAILS(test_run_op("MatMul", 13, "cpu", 2, in2, NULL, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "do not broadcast");
    rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(c1), rlx_tensor_destroy(c2);
}

/* ------------------------------------------------------------ Softmax family */

/* Reduces over `len` elements with stride `inner` inside blocks. */
static void naive_softmax(int kind, const double *x, double *y, size_t outer, size_t len, size_t inner) {
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
            const double *xl = x + o * len * inner + i;
            double *yl = y + o * len * inner + i;
            double mx = -INFINITY, s = 0;
            size_t arg = 0;
            for (size_t j = 0; j < len; j++)
                if (xl[j * inner] > mx) mx = xl[j * inner], arg = j;
            for (size_t j = 0; j < len; j++) s += exp(xl[j * inner] - mx);
            for (size_t j = 0; j < len; j++) {
                double e = exp(xl[j * inner] - mx);
                yl[j * inner] = kind == 0 ? e / s : kind == 1 ? log(e / s) : (j == arg ? 1.0 : 0.0);
            }
        }
}

static void test_softmax(void) {
    static const char *ops[3] = { "Softmax", "LogSoftmax", "Hardmax" };
    int64_t d[3] = { 2, 3, 4 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, d, -3, 3);
    double *xv = to_doubles(x), want[24], want13[24];
    const rlx_tensor *in[1] = { x };
    for (int kind = 0; kind < 3; kind++) {
        for (int axis = -3; axis < 3; axis++) {
            int ax = axis < 0 ? axis + 3 : axis;
            size_t outer = prod(d, ax), inner13 = prod(d + ax + 1, 2 - ax);
            /* opset 11: the input as 2-D [prod(d[:axis]), prod(d[axis:])] */
            naive_softmax(kind, xv, want, outer, 24 / outer, 1);
            /* opset 13: along the one axis */
            naive_softmax(kind, xv, want13, outer, (size_t)d[ax], inner13);
            rlx_attr a = RLX_ATTR_I("axis", axis);
            rlx_tensor **o11 = run_op(ops[kind], 11, 1, in, NULL, 1, 1, &a);
            rlx_tensor **o13 = run_op(ops[kind], 13, 1, in, NULL, 1, 1, &a);
            char what[96];
            snprintf(what, sizeof what, "%s axis %d opset 11", ops[kind], axis);
            if (o11) CHECK(close_to(what, o11[0], want, 24, 1e-6, 1e-6)); /* double, rounded to f32 */
            snprintf(what, sizeof what, "%s axis %d opset 13", ops[kind], axis);
            if (o13) CHECK(close_to(what, o13[0], want13, 24, 1e-6, 1e-6));
            /* the two semantics differ unless the axis is the last one */
            if (o11 && o13 && ax < 2 && kind != 2)
                CHECK_MSG(test_max_abs_diff(o11[0], o13[0]) > 1e-3, "%s axis %d: opset 11 and 13 agree", ops[kind],
                          axis);
            test_free_outputs(o11, 1), test_free_outputs(o13, 1);
        }
        /* the defaults: axis 1 before 13, -1 from 13 */
        rlx_tensor **o11 = run_op(ops[kind], 11, 1, in, NULL, 1, 0, NULL);
        rlx_tensor **o13 = run_op(ops[kind], 13, 1, in, NULL, 1, 0, NULL);
        naive_softmax(kind, xv, want, 2, 12, 1);
        naive_softmax(kind, xv, want13, 6, 4, 1);
        if (o11) CHECK(close_to("softmax default axis (11)", o11[0], want, 24, 1e-6, 1e-6));
        if (o13) CHECK(close_to("softmax default axis (13)", o13[0], want13, 24, 1e-6, 1e-6));
        test_free_outputs(o11, 1), test_free_outputs(o13, 1);
    }
    rlx_attr bad = RLX_ATTR_I("axis", 3);
    rlx_tensor **o = NULL;
    CHECK_FAILS(test_run_op("Softmax", 13, "cpu", 1, in, NULL, 1, 1, &bad, &o), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Softmax): axis 3 is out of range");
    free(xv);
    rlx_tensor_destroy(x);
}

/* ------------------------------------------------------------ Dropout */

static void test_dropout(void) {
    int64_t d[2] = { 3, 5 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2);
    double *xv = to_doubles(x), ones[15];
    for (int i = 0; i < 15; i++) ones[i] = 1.0;
    const rlx_tensor *in1[1] = { x };
    rlx_attr r = RLX_ATTR_F("ratio", 0.3f);
    /* Dropout-7: mask has the input dtype; -10: bool */
    rlx_tensor **o = run_op("Dropout", 7, 1, in1, NULL, 2, 1, &r);
    if (o) {
        CHECK(close_to("Dropout-7 output", o[0], xv, 15, 0, 0));
        CHECK(o[1]->dtype == RLX_DTYPE_F32 && close_to("Dropout-7 mask", o[1], ones, 15, 0, 0));
    }
    test_free_outputs(o, 2);
    o = run_op("Dropout", 10, 1, in1, NULL, 2, 1, &r);
    if (o) CHECK(o[1]->dtype == RLX_DTYPE_BOOL && close_to("Dropout-10 mask", o[1], ones, 15, 0, 0));
    test_free_outputs(o, 2);
    /* Dropout-13: ratio and training_mode inputs */
    float ratio = 0.5f, zero = 0.0f;
    uint8_t f = 0, t = 1;
    rlx_tensor *rt = test_tensor_f32(0, NULL, &ratio), *rz = test_tensor_f32(0, NULL, &zero);
    rlx_tensor *tf = test_tensor(RLX_DTYPE_BOOL, 0, NULL), *tt = test_tensor(RLX_DTYPE_BOOL, 0, NULL);
    memcpy(tf->data, &f, 1), memcpy(tt->data, &t, 1);
    const rlx_tensor *in3[3] = { x, rt, tf };
    o = run_op("Dropout", 13, 3, in3, NULL, 2, 0, NULL);
    if (o) {
        CHECK(close_to("Dropout-13 inference", o[0], xv, 15, 0, 0));
        CHECK(close_to("Dropout-13 mask", o[1], ones, 15, 0, 0));
    }
    test_free_outputs(o, 2);
    const rlx_tensor *in_z[3] = { x, rz, tt }; /* training with ratio 0 is the identity */
    o = run_op("Dropout", 13, 3, in_z, NULL, 2, 0, NULL);
    if (o) CHECK(close_to("Dropout-13 training ratio 0", o[0], xv, 15, 0, 0));
    test_free_outputs(o, 2);
    const rlx_tensor *in_t[3] = { x, rt, tt };
    CHECK_FAILS(test_run_op("Dropout", 13, "cpu", 3, in_t, NULL, 1, 0, NULL, &o), RLX_ERR_UNSUPPORTED,
                "node 'node0' (Dropout): training_mode=true with ratio 0.5");
    free(xv);
    rlx_tensor_destroy(x), rlx_tensor_destroy(rt), rlx_tensor_destroy(rz), rlx_tensor_destroy(tf),
        rlx_tensor_destroy(tt);
}

/* ------------------------------------------------------------ Resize */

typedef struct rz_params {
    const char *mode;    /* "nearest", "linear", "cubic" */
    const char *coord;   /* coordinate_transformation_mode; NULL: half_pixel */
    const char *nearest; /* nearest_mode; NULL: round_prefer_floor */
    double cubic_a;
    int exclude_outside, antialias;
    double extrapolation;
    int legacy; /* Resize-10 / Upsample: asymmetric, nearest floor (ceil below scale 1) */
} rz_params;

/* Source coordinate of output index o (the formulas of the Resize text). */
static double rz_coord(const rz_params *p, double o, double scale, int64_t in, int64_t out_int, double r0, double r1,
                       int *outside) {
    const char *c = p->legacy ? "asymmetric" : p->coord ? p->coord : "half_pixel";
    double out_f = scale * (double)in, len = (double)in;
    *outside = 0;
    if (!strcmp(c, "half_pixel")) return (o + 0.5) / scale - 0.5;
    if (!strcmp(c, "half_pixel_symmetric")) {
        double adjustment = (double)out_int / out_f, center = len / 2;
        return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
    }
    if (!strcmp(c, "pytorch_half_pixel")) return out_f > 1 ? (o + 0.5) / scale - 0.5 : 0;
    if (!strcmp(c, "align_corners")) return out_f == 1 ? 0 : o * (len - 1) / (out_f - 1);
    if (!strcmp(c, "asymmetric")) return o / scale;
    if (!strcmp(c, "tf_half_pixel_for_nn")) return (o + 0.5) / scale;
    /* tf_crop_and_resize; the roi is f32, and the ONNX reference (NumPy 2
     * promotion) computes r1 - r0, (r1 - r0) (len - 1) / 2 and r0 (len - 1)
     * in f32 */
    float span = (float)r1 - (float)r0, half = span * (float)(len - 1) / 2.0f, start = (float)r0 * (float)(len - 1);
    double v = out_f == 1 ? (double)half : o * (double)span * (len - 1) / (out_f - 1);
    v += (double)start;
    *outside = v < 0 || v > len - 1;
    return v;
}

static double keys(double s, double a) {
    s = fabs(s);
    if (s <= 1) return (a + 2) * s * s * s - (a + 3) * s * s + 1;
    if (s < 2) return a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
    return 0;
}

/* Value of a line of `in` samples (stride apart) at coordinate x: nearest
 * by the rounding rule, else the weighted sum over every integer position
 * inside the filter support (widened by 1/scale for antialias), positions
 * outside the line taking the edge value (or left out with
 * exclude_outside), weights renormalised. */
static double rz_sample(const rz_params *p, const double *line, size_t stride, int64_t in, double x, double scale) {
    if (!strcmp(p->mode, "nearest")) {
        double fl = floor(x), r = x - fl;
        const char *nm = p->nearest ? p->nearest : "round_prefer_floor";
        double i;
        if (p->legacy) i = scale < 1 ? ceil(x) : fl;
        else if (r == 0) i = x;
        else if (!strcmp(nm, "round_prefer_floor")) i = r <= 0.5 ? fl : fl + 1;
        else if (!strcmp(nm, "round_prefer_ceil")) i = r < 0.5 ? fl : fl + 1;
        else if (!strcmp(nm, "floor")) i = fl;
        else i = fl + 1;
        int64_t ii = (int64_t)i;
        ii = ii < 0 ? 0 : ii >= in ? in - 1 : ii;
        return line[(size_t)ii * stride];
    }
    int linear = !strcmp(p->mode, "linear");
    double sa = p->antialias && scale < 1 ? scale : 1;
    double support = (linear ? 1.0 : 2.0) / sa;
    double acc = 0, sw = 0;
    for (int64_t j = (int64_t)floor(x - support) - 1; j <= (int64_t)ceil(x + support) + 1; j++) {
        double dist = fabs((double)j - x) * sa;
        double w = linear ? (dist < 1 ? 1 - dist : 0) : keys(dist, p->cubic_a);
        if (w == 0) continue;
        if (p->exclude_outside && (j < 0 || j >= in)) continue;
        int64_t jj = j < 0 ? 0 : j >= in ? in - 1 : j;
        acc += w * line[(size_t)jj * stride];
        sw += w;
    }
    return sw != 0 ? acc / sw : 0;
}

/* Resizes the tensor one axis at a time. Returns a malloc'd array. */
static double *rz_naive(const rz_params *p, const double *x, int rank, const int64_t *in_dims, const int64_t *out_dims,
                        const double *scales, const double *roi) {
    int64_t cur[RLX_MAX_RANK];
    memcpy(cur, in_dims, (size_t)rank * sizeof *cur);
    size_t n = prod(cur, rank);
    double *a = malloc((n + 1) * sizeof *a);
    memcpy(a, x, n * sizeof *a);
    for (int ax = 0; ax < rank; ax++) {
        double r0 = roi ? roi[ax] : 0, r1 = roi ? roi[rank + ax] : 1;
        if (out_dims[ax] == cur[ax] && scales[ax] == 1.0 && r0 == 0 && r1 == 1) continue;
        size_t outer = prod(cur, ax), inner = prod(cur + ax + 1, rank - ax - 1);
        int64_t in = cur[ax], out = out_dims[ax];
        double *b = malloc((outer * (size_t)out * inner + 1) * sizeof *b);
        for (size_t o = 0; o < outer; o++)
            for (int64_t oa = 0; oa < out; oa++) {
                int outside;
                double xc = rz_coord(p, (double)oa, scales[ax], in, out, r0, r1, &outside);
                for (size_t i = 0; i < inner; i++) {
                    const double *line = a + o * (size_t)in * inner + i;
                    b[(o * (size_t)out + (size_t)oa) * inner + i] =
                        outside ? p->extrapolation : rz_sample(p, line, inner, in, xc, scales[ax]);
                }
            }
        free(a);
        a = b;
        cur[ax] = out;
    }
    return a;
}

/* Runs Resize-opset on x with scales (or sizes when scales is NULL) and
 * compares with rz_naive. roi only for tf_crop_and_resize. */
static void run_resize(const rz_params *p, int64_t opset, const rlx_tensor *x, const double *scales,
                       const int64_t *sizes, const double *roi, const char *label) {
    int rank = x->rank;
    int64_t out[RLX_MAX_RANK] = { 0 };
    double sc[RLX_MAX_RANK] = { 0 };
    for (int i = 0; i < rank; i++) {
        if (scales) sc[i] = (float)scales[i], out[i] = (int64_t)floor((double)x->dims[i] * sc[i]);
        else out[i] = sizes[i], sc[i] = (double)sizes[i] / (double)x->dims[i];
    }
    int64_t vd[1] = { rank }, rd[1] = { 2 * rank };
    float fs[RLX_MAX_RANK], fr[2 * RLX_MAX_RANK];
    double roi_f[2 * RLX_MAX_RANK]; /* the roi as the f32 input holds it */
    for (int i = 0; i < rank; i++) fs[i] = (float)sc[i];
    for (int i = 0; roi && i < 2 * rank; i++) fr[i] = (float)roi[i], roi_f[i] = fr[i];
    double *xv = to_doubles(x);
    double *want = rz_naive(p, xv, rank, x->dims, out, sc, roi ? roi_f : NULL);
    rlx_tensor *ts = scales ? test_tensor_f32(1, vd, fs) : NULL;
    rlx_tensor *tz = sizes ? test_tensor_i64(1, vd, sizes) : NULL;
    rlx_tensor *tr = roi ? test_tensor_f32(1, rd, fr) : NULL;
    rlx_attr a[8];
    size_t na = 0;
    a[na++] = RLX_ATTR_S("mode", p->mode);
    if (p->coord) a[na++] = RLX_ATTR_S("coordinate_transformation_mode", p->coord);
    if (p->nearest) a[na++] = RLX_ATTR_S("nearest_mode", p->nearest);
    if (p->cubic_a != -0.75) a[na++] = RLX_ATTR_F("cubic_coeff_a", (float)p->cubic_a);
    if (p->exclude_outside) a[na++] = RLX_ATTR_I("exclude_outside", 1);
    if (p->antialias) a[na++] = RLX_ATTR_I("antialias", 1);
    if (p->extrapolation != 0) a[na++] = RLX_ATTR_F("extrapolation_value", (float)p->extrapolation);
    const rlx_tensor *in[4] = { x, tr, ts, tz };
    int konst[4] = { 0, 1, 1, 1 };
    rlx_tensor **o = run_op("Resize", opset, sizes ? 4 : 3, in, konst, 1, na, a);
    char what[256];
    snprintf(what, sizeof what, "Resize-%lld %s mode %s coord %s nearest %s a %g excl %d aa %d", (long long)opset,
             label, p->mode, p->coord ? p->coord : "-", p->nearest ? p->nearest : "-", p->cubic_a,
             p->exclude_outside, p->antialias);
    if (o) {
        CHECK_MSG(has_shape(o[0], rank, out), "%s: output shape", what);
        /* both sides in double, rounded once to f32: 1e-6 */
        CHECK(close_to(what, o[0], want, prod(out, rank), 1e-6, 1e-6));
    }
    test_free_outputs(o, 1);
    free(xv), free(want);
    rlx_tensor_destroy(ts), rlx_tensor_destroy(tz), rlx_tensor_destroy(tr);
}

static void test_resize_modes(void) {
    int64_t d[4] = { 1, 2, 4, 5 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
    static const double up[4] = { 1, 1, 2, 1.5 }, down[4] = { 1, 1, 0.6, 0.8 }, mixed[4] = { 1, 1, 1.7, 0.5 };
    static const int64_t sz1[4] = { 1, 2, 7, 3 }, sz2[4] = { 1, 2, 3, 8 };
    static const double roi[8] = { 0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3 };
    static const char *coords[6] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_crop_and_resize" };
    static const char *nearest[4] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    for (int c = 0; c < 6; c++) {
        const double *r = c == 5 ? roi : NULL;
        for (int m = 0; m < 7; m++) {
            rz_params p = { .mode = m < 4 ? "nearest" : m == 4 ? "linear" : "cubic", .coord = coords[c],
                            .nearest = m < 4 ? nearest[m] : NULL, .cubic_a = m == 6 ? -0.5 : -0.75,
                            .exclude_outside = m == 6, .extrapolation = c == 5 ? 0.5 : 0 };
            run_resize(&p, 19, x, up, NULL, r, "upsample");
            run_resize(&p, 19, x, down, NULL, r, "downsample");
            run_resize(&p, 19, x, mixed, NULL, r, "mixed");
            run_resize(&p, 19, x, NULL, sz1, r, "sizes");
            run_resize(&p, 19, x, NULL, sz2, r, "sizes 2");
        }
    }
    /* antialias (from 18) with half_pixel, half_pixel_symmetric (19) and
     * align_corners */
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 3; c++) {
            rz_params p = { .mode = m ? "cubic" : "linear", .coord = coords[c == 2 ? 3 : c], .cubic_a = -0.75,
                            .antialias = 1 };
            run_resize(&p, 19, x, down, NULL, NULL, "antialias");
            run_resize(&p, 19, x, mixed, NULL, NULL, "antialias");
            run_resize(&p, c == 1 ? 19 : 18, x, NULL, sz1, NULL, "antialias sizes");
            p.exclude_outside = 1;
            run_resize(&p, 19, x, down, NULL, NULL, "antialias excl");
        }
    /* tf_half_pixel_for_nn exists in Resize-11 only; Resize-13 without roi */
    rz_params p11 = { .mode = "nearest", .coord = "tf_half_pixel_for_nn", .cubic_a = -0.75 };
    run_resize(&p11, 11, x, mixed, NULL, NULL, "tf_half_pixel_for_nn");
    rz_params p13 = { .mode = "linear", .coord = "pytorch_half_pixel", .cubic_a = -0.75 };
    run_resize(&p13, 13, x, NULL, sz2, NULL, "opset 13");
    /* f64 and integer inputs */
    rlx_tensor *x64 = test_tensor_random(RLX_DTYPE_F64, 4, d, -1, 1);
    rz_params pc = { .mode = "cubic", .cubic_a = -0.75 };
    run_resize(&pc, 19, x64, up, NULL, NULL, "f64");
    rlx_tensor_destroy(x64);
    rlx_tensor_destroy(x);
}

/* Known answers from the ONNX Resize examples, the demo's Resize form, the
 * legacy versions and integer rounding. */
static void test_resize_known(void) {
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)(i + 1);
    int64_t d22[4] = { 1, 1, 2, 2 }, d44[4] = { 1, 1, 4, 4 }, d4[1] = { 4 }, d0[1] = { 0 }, d8[1] = { 8 };
    rlx_tensor *x22 = test_tensor_f32(4, d22, v), *x44 = test_tensor_f32(4, d44, v);
    float s23[4] = { 1, 1, 2, 3 }, s22[4] = { 1, 1, 2, 2 }, s06[4] = { 1, 1, 0.6f, 0.6f };
    rlx_tensor *t23 = test_tensor_f32(1, d4, s23), *t22 = test_tensor_f32(1, d4, s22), *t06 = test_tensor_f32(1, d4, s06);
    int konst[4] = { 0, 1, 1, 1 };
    rlx_tensor **o;
    {   /* nearest, scales 2 x 3 */
        const rlx_tensor *in[3] = { x22, NULL, t23 };
        rlx_attr a = RLX_ATTR_S("mode", "nearest");
        static const double want[24] = { 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4 };
        o = run_op("Resize", 19, 3, in, konst, 1, 1, &a);
        if (o) CHECK(close_to("Resize nearest example", o[0], want, 24, 0, 0));
        test_free_outputs(o, 1);
        /* Upsample-9 gives the same */
        const rlx_tensor *in9[2] = { x22, t23 };
        o = run_op("Upsample", 9, 2, in9, konst, 1, 1, &a);
        if (o) CHECK(close_to("Upsample-9 nearest example", o[0], want, 24, 0, 0));
        test_free_outputs(o, 1);
    }
    {   /* linear half_pixel 2x2 -> 4x4 */
        const rlx_tensor *in[3] = { x22, NULL, t22 };
        rlx_attr a = RLX_ATTR_S("mode", "linear");
        static const double want[16] = { 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4 };
        o = run_op("Resize", 19, 3, in, konst, 1, 1, &a);
        if (o) CHECK(close_to("Resize linear example", o[0], want, 16, 1e-7, 0));
        test_free_outputs(o, 1);
    }
    {   /* cubic 4x4 -> 8x8, first row */
        const rlx_tensor *in[3] = { x44, NULL, t22 };
        rlx_attr a = RLX_ATTR_S("mode", "cubic");
        static const double row[8] = { 0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875,
                                       3.68359375 };
        o = run_op("Resize", 19, 3, in, konst, 1, 1, &a);
        if (o) {
            double got[8];
            for (int i = 0; i < 8; i++) got[i] = ((const float *)o[0]->data)[i];
            int ok = 1;
            for (int i = 0; i < 8; i++) ok &= fabs(got[i] - row[i]) <= 1e-6 * fabs(row[i]);
            CHECK_MSG(ok, "Resize cubic example: first row differs (got %g %g ...)", got[0], got[1]);
        }
        test_free_outputs(o, 1);
    }
    {   /* antialias downsampling, linear and cubic */
        const rlx_tensor *in[3] = { x44, NULL, t06 };
        rlx_attr a[2] = { RLX_ATTR_S("mode", "linear"), RLX_ATTR_I("antialias", 1) };
        static const double lin[4] = { 2.875, 4.5, 9.375, 11 }, cub[4] = { 2.5180721, 4.2858863, 9.589329, 11.357142 };
        o = run_op("Resize", 18, 3, in, konst, 1, 2, a);
        if (o) CHECK(close_to("Resize linear antialias example", o[0], lin, 4, 1e-6, 0));
        test_free_outputs(o, 1);
        a[0] = RLX_ATTR_S("mode", "cubic");
        o = run_op("Resize", 18, 3, in, konst, 1, 2, a);
        if (o) CHECK(close_to("Resize cubic antialias example", o[0], cub, 4, 1e-6, 0));
        test_free_outputs(o, 1);
    }
    {   /* tf_crop_and_resize, sizes 3x3 */
        float roi[8] = { 0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f };
        int64_t sizes[4] = { 1, 1, 3, 3 };
        rlx_tensor *tr = test_tensor_f32(1, d8, roi), *tz = test_tensor_i64(1, d4, sizes);
        const rlx_tensor *in[4] = { x44, tr, NULL, tz };
        rlx_attr a[2] = { RLX_ATTR_S("mode", "linear"), RLX_ATTR_S("coordinate_transformation_mode", "tf_crop_and_resize") };
        static const double want[9] = { 7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10, 10.3, 10.6 };
        o = run_op("Resize", 19, 4, in, konst, 1, 2, a);
        if (o) CHECK(close_to("Resize tf_crop_and_resize example", o[0], want, 9, 1e-6, 0));
        test_free_outputs(o, 1);
        rlx_tensor_destroy(tr), rlx_tensor_destroy(tz);
    }
    {   /* the demo's form: Resize-11 (opset 12) with X, an empty roi and
         * scales; nearest, asymmetric, floor: y[h, w] = x[h / 2, w / 2] */
        int64_t dx[4] = { 1, 3, 5, 6 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, dx, -1, 1);
        rlx_tensor *roi = test_tensor(RLX_DTYPE_F32, 1, d0);
        const rlx_tensor *in[3] = { x, roi, t22 };
        rlx_attr a[3] = { RLX_ATTR_S("mode", "nearest"), RLX_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                          RLX_ATTR_S("nearest_mode", "floor") };
        double want[3 * 10 * 12];
        const float *xv = x->data;
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 10; h++)
                for (int w = 0; w < 12; w++) want[(c * 10 + h) * 12 + w] = xv[(c * 5 + h / 2) * 6 + w / 2];
        o = run_op("Resize", 12, 3, in, konst, 1, 3, a);
        int64_t yd[4] = { 1, 3, 10, 12 };
        if (o) {
            CHECK_MSG(has_shape(o[0], 4, yd), "demo Resize: output shape");
            CHECK(close_to("demo Resize (opset 12, nearest asymmetric floor)", o[0], want, 360, 0, 0));
        }
        test_free_outputs(o, 1);
        /* the same with the scales fed at run time (shape known only then) */
        int konst_x[3] = { 0, 1, 0 };
        o = run_op("Resize", 12, 3, in, konst_x, 1, 3, a);
        if (o) CHECK(close_to("demo Resize, scales at run time", o[0], want, 360, 0, 0));
        test_free_outputs(o, 1);
        rlx_tensor_destroy(x), rlx_tensor_destroy(roi);
    }
    {   /* Resize-10 and Upsample-7: asymmetric; nearest rounds down when
         * upsampling, up when downsampling (as onnxruntime) */
        float line[10];
        for (int i = 0; i < 10; i++) line[i] = (float)(i + 1);
        int64_t dl[4] = { 1, 1, 1, 10 };
        rlx_tensor *x = test_tensor_f32(4, dl, line);
        float s[4] = { 1, 1, 1, 0.6f };
        rlx_tensor *ts = test_tensor_f32(1, d4, s);
        const rlx_tensor *in[2] = { x, ts };
        rlx_attr a = RLX_ATTR_S("mode", "nearest");
        static const double near[6] = { 1, 3, 5, 6, 8, 10 };
        static const double lin[6] = { 1, 2.6666666666666667, 4.3333333333333333, 6, 7.6666666666666667,
                                       9.3333333333333333 };
        o = run_op("Resize", 10, 2, in, konst, 1, 1, &a);
        if (o) CHECK(close_to("Resize-10 nearest downsample", o[0], near, 6, 0, 0));
        test_free_outputs(o, 1);
        a = RLX_ATTR_S("mode", "linear");
        o = run_op("Resize", 10, 2, in, konst, 1, 1, &a);
        if (o) CHECK(close_to("Resize-10 linear downsample", o[0], lin, 6, 1e-6, 0));
        test_free_outputs(o, 1);
        float s17[4] = { 1, 1, 1, 1.7f };
        rlx_attr au[2] = { RLX_ATTR_S("mode", "nearest"), RLX_ATTR_FS("scales", 4, s17) };
        const rlx_tensor *in7[1] = { x };
        static const double up7[17] = { 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 7, 8, 8, 9, 9, 10 };
        o = run_op("Upsample", 7, 1, in7, NULL, 1, 2, au);
        if (o) CHECK(close_to("Upsample-7 nearest 1.7", o[0], up7, 17, 0, 0));
        test_free_outputs(o, 1);
        rlx_tensor_destroy(x), rlx_tensor_destroy(ts);
    }
    {   /* uint8 linear: results round half to even, as numpy.round */
        int64_t du[4] = { 1, 1, 1, 4 };
        rlx_tensor *x = test_tensor(RLX_DTYPE_U8, 4, du);
        static const uint8_t xv[4] = { 10, 15, 255, 0 };
        memcpy(x->data, xv, 4);
        float s[4] = { 1, 1, 1, 2 };
        rlx_tensor *ts = test_tensor_f32(1, d4, s);
        const rlx_tensor *in[3] = { x, NULL, ts };
        rlx_attr a[2] = { RLX_ATTR_S("mode", "linear"), RLX_ATTR_S("coordinate_transformation_mode", "asymmetric") };
        static const double want[8] = { 10, 12, 15, 135, 255, 128, 0, 0 };
        o = run_op("Resize", 13, 3, in, konst, 1, 2, a);
        if (o) CHECK(o[0]->dtype == RLX_DTYPE_U8 && close_to("Resize uint8 linear rounding", o[0], want, 8, 0, 0));
        test_free_outputs(o, 1);
        rlx_tensor_destroy(x), rlx_tensor_destroy(ts);
    }
    rlx_tensor_destroy(x22), rlx_tensor_destroy(x44), rlx_tensor_destroy(t23), rlx_tensor_destroy(t22),
        rlx_tensor_destroy(t06);
}

/* Resize-18 axes and keep_aspect_ratio_policy against the full-rank form. */
static void test_resize_axes_policy(void) {
    int64_t d[4] = { 1, 2, 4, 6 }, d2[1] = { 2 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
    int konst[4] = { 0, 1, 1, 1 };
    rz_params p = { .mode = "linear", .cubic_a = -0.75 };
    {   /* axes [3, 2], scales [0.5, 1.5] == scales [1, 1, 1.5, 0.5] */
        int64_t axes[2] = { 3, 2 };
        float s[2] = { 0.5f, 1.5f };
        rlx_tensor *ts = test_tensor_f32(1, d2, s);
        const rlx_tensor *in[3] = { x, NULL, ts };
        rlx_attr a[2] = { RLX_ATTR_S("mode", "linear"), RLX_ATTR_IS("axes", 2, axes) };
        rlx_tensor **o = run_op("Resize", 18, 3, in, konst, 1, 2, a);
        double *xv = to_doubles(x);
        double full[4] = { 1, 1, 1.5, 0.5 };
        int64_t od[4] = { 1, 2, 6, 3 };
        double *want = rz_naive(&p, xv, 4, d, od, full, NULL);
        if (o) CHECK(has_shape(o[0], 4, od) && close_to("Resize-18 axes", o[0], want, 36, 1e-6, 1e-6));
        test_free_outputs(o, 1);
        free(xv), free(want);
        rlx_tensor_destroy(ts);
    }
    {   /* sizes [3, 3] on axes [2, 3]: not_larger scale min(3/4, 3/6) = 0.5,
         * not_smaller max = 0.75; out = round_half_up(scale * in) */
        int64_t axes[2] = { 2, 3 }, sizes[2] = { 3, 3 };
        rlx_tensor *tz = test_tensor_i64(1, d2, sizes);
        const rlx_tensor *in[4] = { x, NULL, NULL, tz };
        static const char *pol[2] = { "not_larger", "not_smaller" };
        double scale[2] = { 0.5, 0.75 };
        int64_t od[2][4] = { { 1, 2, 2, 3 }, { 1, 2, 3, 5 } };
        double *xv = to_doubles(x);
        for (int i = 0; i < 2; i++) {
            rlx_attr a[3] = { RLX_ATTR_S("mode", "linear"), RLX_ATTR_IS("axes", 2, axes),
                              RLX_ATTR_S("keep_aspect_ratio_policy", pol[i]) };
            rlx_tensor **o = run_op("Resize", 18, 4, in, konst, 1, 3, a);
            double full[4] = { 1, 1, scale[i], scale[i] };
            double *want = rz_naive(&p, xv, 4, d, od[i], full, NULL);
            char what[64];
            snprintf(what, sizeof what, "Resize-18 keep_aspect_ratio_policy %s", pol[i]);
            if (o) CHECK(has_shape(o[0], 4, od[i]) && close_to(what, o[0], want, prod(od[i], 4), 1e-6, 1e-6));
            test_free_outputs(o, 1);
            free(want);
        }
        free(xv);
        rlx_tensor_destroy(tz);
    }
    rlx_tensor_destroy(x);
}

static void test_resize_errors(void) {
    int64_t d[4] = { 1, 1, 2, 2 }, d4[1] = { 4 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
    float s[4] = { 1, 1, 2, 2 }, s_half[4] = { 1, 1, 0.5f, 1 };
    int64_t z[4] = { 1, 1, 4, 4 };
    rlx_tensor *ts = test_tensor_f32(1, d4, s), *tz = test_tensor_i64(1, d4, z), *th = test_tensor_f32(1, d4, s_half);
    int konst[4] = { 0, 1, 1, 1 };
    rlx_tensor **o = NULL;
    const rlx_tensor *both[4] = { x, NULL, ts, tz };
    CHECK_FAILS(test_run_op("Resize", 13, "cpu", 4, both, konst, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Resize): only one of scales and sizes");
    const rlx_tensor *in[3] = { x, NULL, ts };
    rlx_attr aa[2] = { RLX_ATTR_S("mode", "nearest"), RLX_ATTR_I("antialias", 1) };
    CHECK_FAILS(test_run_op("Resize", 18, "cpu", 3, in, konst, 1, 2, aa, &o), RLX_ERR_INVALID_MODEL, "antialias");
    rlx_attr hs = RLX_ATTR_S("coordinate_transformation_mode", "half_pixel_symmetric");
    CHECK_FAILS(test_run_op("Resize", 18, "cpu", 3, in, konst, 1, 1, &hs, &o), RLX_ERR_INVALID_MODEL,
                "not defined for Resize-18");
    rlx_attr bad = RLX_ATTR_S("mode", "bilinear");
    CHECK_FAILS(test_run_op("Resize", 13, "cpu", 3, in, konst, 1, 1, &bad, &o), RLX_ERR_INVALID_MODEL,
                "unknown mode 'bilinear'");
    const rlx_tensor *up[2] = { x, th };
    CHECK_FAILS(test_run_op("Upsample", 9, "cpu", 2, up, konst, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "node 'node0' (Upsample): Upsample scale 0.5");
    int64_t d3[1] = { 3 };
    rlx_tensor *t3 = test_tensor_f32(1, d3, s);
    const rlx_tensor *in3[3] = { x, NULL, t3 };
    CHECK_FAILS(test_run_op("Resize", 13, "cpu", 3, in3, konst, 1, 0, NULL, &o), RLX_ERR_INVALID_MODEL,
                "scales has 3 values, expected 4");
    CHECK(o == NULL);
    rlx_tensor_destroy(x), rlx_tensor_destroy(ts), rlx_tensor_destroy(tz), rlx_tensor_destroy(th),
        rlx_tensor_destroy(t3);
}

/* ------------------------------------------------------------ shape inference */

/* Output info of a one-node model with symbolic input dims (dims -1 named
 * by `names`); extra inputs are initializers. */
static int infer_one(const char *op, int64_t opset, int rank, const int64_t *dims, const char *const *names,
                     int n_extra, const rlx_tensor *const *extra, const int *extra_is_input, size_t na,
                     const rlx_attr *a, rlx_value_info *info, char *name_buf) {
    rlx_model *m = NULL;
    int ok = rlx_model_create(opset, &m) == RLX_OK;
    const char *ins[8] = { "x" };
    char nb[8][16];
    ok = ok && rlx_model_add_input(m, "x", RLX_DTYPE_F32, rank, dims, names) == RLX_OK;
    for (int i = 0; ok && i < n_extra && i < 7; i++) {
        snprintf(nb[i], sizeof nb[i], "e%d", i);
        ins[1 + i] = extra[i] ? nb[i] : "";
        if (!extra[i]) continue;
        if (extra_is_input && extra_is_input[i])
            ok = rlx_model_add_input(m, nb[i], extra[i]->dtype, extra[i]->rank, extra[i]->dims, NULL) == RLX_OK;
        else
            ok = rlx_model_add_initializer(m, nb[i], extra[i]) == RLX_OK;
    }
    const char *outs[1] = { "y" };
    ok = ok && rlx_model_add_node(m, op, "n", (size_t)(1 + n_extra), ins, 1, outs, na, a) == RLX_OK;
    ok = ok && rlx_model_add_output(m, "y") == RLX_OK && rlx_model_finish(m) == RLX_OK;
    ok = ok && rlx_model_output_info(m, 0, info) == RLX_OK;
    if (ok && info->rank > 0 && info->dim_names[0]) snprintf(name_buf, 32, "%s", info->dim_names[0]);
    else name_buf[0] = 0;
    if (!ok) fprintf(stderr, "infer_one %s: %s\n", op, rlx_last_error());
    rlx_model_destroy(m);
    return ok;
}

static int info_dims(const rlx_value_info *info, int rank, const int64_t *want) {
    if (info->rank != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (info->dims[i] != want[i]) return 0;
    return 1;
}

static void test_shape_inference(void) {
    rlx_value_info info;
    char first[32];
    int64_t d4[1] = { 4 };
    float s[4] = { 1, 1, 2, 2 };
    int64_t z[4] = { 1, 3, 7, 9 };
    rlx_tensor *ts = test_tensor_f32(1, d4, s), *tz = test_tensor_i64(1, d4, z);
    const rlx_tensor *scales[2] = { NULL, ts }, *sizes[3] = { NULL, NULL, tz };
    /* Resize with constant scales: static where the input is */
    int64_t xs[4] = { 1, 3, 4, 5 }, xd[4] = { -1, 3, -1, -1 };
    const char *nm[4] = { "batch", NULL, "h", "w" };
    int64_t want1[4] = { 1, 3, 8, 10 }, want2[4] = { -1, 3, -1, -1 }, want3[4] = { 1, 3, 7, 9 };
    int64_t want4[4] = { -1, -1, -1, -1 };
    CHECK(infer_one("Resize", 13, 4, xs, NULL, 2, scales, NULL, 0, NULL, &info, first) && info_dims(&info, 4, want1));
    CHECK(infer_one("Resize", 13, 4, xd, nm, 2, scales, NULL, 0, NULL, &info, first) && info_dims(&info, 4, want2) &&
          strcmp(first, "batch") == 0);
    CHECK(infer_one("Resize", 13, 4, xd, nm, 3, sizes, NULL, 0, NULL, &info, first) && info_dims(&info, 4, want3));
    int as_input[2] = { 0, 1 };
    CHECK(infer_one("Resize", 13, 4, xs, NULL, 2, scales, as_input, 0, NULL, &info, first) &&
          info_dims(&info, 4, want4));
    /* Conv keeps the symbolic batch */
    int64_t wd[4] = { 4, 3, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    const rlx_tensor *wv[1] = { w };
    int64_t xc[4] = { -1, 3, 8, 8 }, wantc[4] = { -1, 4, 8, 8 };
    rlx_attr pa = RLX_ATTR_IS("pads", 4, pads);
    CHECK(infer_one("Conv", 13, 4, xc, nm, 1, wv, NULL, 1, &pa, &info, first) && info_dims(&info, 4, wantc) &&
          strcmp(first, "batch") == 0);
    /* MatMul with a symbolic batch */
    int64_t bd[2] = { 5, 2 }, xm[3] = { -1, 3, 5 }, wantm[3] = { -1, 3, 2 };
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
    const rlx_tensor *bv[1] = { b };
    CHECK(infer_one("MatMul", 13, 3, xm, nm, 1, bv, NULL, 0, NULL, &info, first) && info_dims(&info, 3, wantm) &&
          strcmp(first, "batch") == 0);
    /* GlobalAveragePool */
    int64_t wantg[4] = { -1, 3, 1, 1 };
    CHECK(infer_one("GlobalAveragePool", 13, 4, xd, nm, 0, NULL, NULL, 0, NULL, &info, first) &&
          info_dims(&info, 4, wantg));
    rlx_tensor_destroy(ts), rlx_tensor_destroy(tz), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
}

int main(void) {
    test_seed_from_env();
    test_conv();
    test_conv_errors();
    test_conv_transpose();
    test_pools();
    test_pools_known();
    test_global_pools();
    test_batchnorm();
    test_gemm();
    test_matmul();
    test_softmax();
    test_dropout();
    test_resize_modes();
    test_resize_known();
    test_resize_axes_policy();
    test_resize_errors();
    test_shape_inference();
    TEST_MAIN_END();
}
