/* Tensor ops (src/ir/ops/ops_tensor.c, src/backend/cpu/cpu_tensor.c):
 * each op against values computed here independently — small hand-written
 * cases with known answers, and random cases checked by an index formula
 * written differently from the kernel (scatter instead of gather, set
 * membership instead of arithmetic progressions, bouncing instead of a
 * period formula). Data-moving ops are exact: outputs are compared byte for
 * byte (tolerance 0). Every case runs three ways:
 *   plan  - data fed at run time, shape-carrying inputs constant (the kernel
 *           runs as a step, or a view aliases),
 *   fold  - every input constant (folded at compile time by the kernel),
 *   eager - every input fed (value-dependent shapes make the graph eager).
 * Ends with the shape-subgraph test: Shape -> Gather -> Unsqueeze -> Concat
 * -> Reshape over symbolic dims, folded away at two input shapes. */
#include "test.h"

#include "runtime/session.h"

/* ------------------------------------------------------------ helpers */

#define MAXR RLX_MAX_RANK

static const rlx_dtype k_all_dtypes[] = { RLX_DTYPE_F32, RLX_DTYPE_U8,  RLX_DTYPE_I8,  RLX_DTYPE_U16, RLX_DTYPE_I16,
                                          RLX_DTYPE_I32, RLX_DTYPE_I64, RLX_DTYPE_BOOL, RLX_DTYPE_F16, RLX_DTYPE_F64,
                                          RLX_DTYPE_U32, RLX_DTYPE_U64, RLX_DTYPE_BF16 };
#define N_DTYPES ((int)(sizeof k_all_dtypes / sizeof k_all_dtypes[0]))

static int64_t rnd(int64_t lo, int64_t hi) { /* inclusive */
    return lo + (int64_t)(test_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* Random bytes of any dtype (bool: 0/1), never all zero. */
static rlx_tensor *rand_any(rlx_dtype dt, int rank, const int64_t *dims) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++) p[i] = dt == RLX_DTYPE_BOOL ? (uint8_t)(test_rand_u64() & 1) : (uint8_t)(test_rand_u64() >> 40);
    return t;
}

static rlx_tensor *ints_t(rlx_dtype dt, int rank, const int64_t *dims, const int64_t *v) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        if (dt == RLX_DTYPE_I64) ((int64_t *)t->data)[i] = v[i];
        else if (dt == RLX_DTYPE_I32) ((int32_t *)t->data)[i] = (int32_t)v[i];
        else if (dt == RLX_DTYPE_F32) ((float *)t->data)[i] = (float)v[i];
        else if (dt == RLX_DTYPE_BOOL || dt == RLX_DTYPE_U8) ((uint8_t *)t->data)[i] = (uint8_t)v[i];
        else { fprintf(stderr, "ints_t: dtype\n"); exit(2); }
    }
    return t;
}

static rlx_tensor *vec64(size_t n, const int64_t *v) {
    int64_t d = (int64_t)n;
    return ints_t(RLX_DTYPE_I64, 1, &d, v);
}

static rlx_tensor *scalar64(int64_t v) { return ints_t(RLX_DTYPE_I64, 0, NULL, &v); }

static size_t numel(int rank, const int64_t *d) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)d[i];
    return n;
}

/* coords of flat index i in dims (row-major) */
static void unflat(size_t i, int rank, const int64_t *d, int64_t *c) {
    for (int a = rank - 1; a >= 0; a--) {
        c[a] = d[a] ? (int64_t)(i % (size_t)d[a]) : 0;
        i = d[a] ? i / (size_t)d[a] : 0;
    }
}

static size_t flat(int rank, const int64_t *d, const int64_t *c) {
    size_t i = 0;
    for (int a = 0; a < rank; a++) i = i * (size_t)d[a] + (size_t)c[a];
    return i;
}

static char *ebytes(const rlx_tensor *t, size_t i) { return (char *)t->data + i * rlx_dtype_size(t->dtype); }

/* Byte-exact comparison (tolerance 0), with a message naming the case. */
static int same(const char *what, const rlx_tensor *got, const rlx_tensor *want) {
    if (!got) {
        fprintf(stderr, "%s: no output\n", what);
        return 0;
    }
    if (got->dtype != want->dtype || got->rank != want->rank ||
        memcmp(got->dims, want->dims, (size_t)want->rank * sizeof(int64_t)) != 0) {
        fprintf(stderr, "%s: got %s rank %d [", what, rlx_dtype_name(got->dtype), got->rank);
        for (int i = 0; i < got->rank; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)got->dims[i]);
        fprintf(stderr, "], want %s rank %d [", rlx_dtype_name(want->dtype), want->rank);
        for (int i = 0; i < want->rank; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)want->dims[i]);
        fprintf(stderr, "]\n");
        return 0;
    }
    size_t n = numel(want->rank, want->dims) * rlx_dtype_size(want->dtype);
    if (n && memcmp(got->data, want->data, n) != 0) {
        size_t es = rlx_dtype_size(want->dtype);
        for (size_t i = 0; i < n / es; i++)
            if (memcmp(ebytes(got, i), ebytes(want, i), es)) {
                fprintf(stderr, "%s: element %zu differs\n", what, i);
                break;
            }
        return 0;
    }
    return 1;
}

enum { M_PLAN, M_FOLD, M_EAGER, N_MODES };
static const char *k_mode_names[] = { "plan", "fold", "eager" };

/* Runs op in one mode. params: bit i set = input i carries a shape/axes
 * (constant in plan mode). */
static rlx_status run_mode(const char *op, int64_t opset, int mode, int n_in, const rlx_tensor *const *in,
                           unsigned params, int n_out, size_t n_attrs, const rlx_attr *attrs, rlx_tensor ***out) {
    int konst[16];
    for (int i = 0; i < n_in && i < 16; i++)
        konst[i] = mode == M_FOLD ? 1 : mode == M_EAGER ? 0 : (int)((params >> i) & 1);
    return test_run_op(op, opset, "cpu", n_in, in, konst, n_out, n_attrs, attrs, out);
}

/* Runs op in every mode and compares each output with want[]. */
static void check_modes(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                        unsigned params, size_t n_attrs, const rlx_attr *attrs, int n_out, rlx_tensor *const *want) {
    for (int m = 0; m < N_MODES; m++) {
        rlx_tensor **out = NULL;
        char name[256];
        snprintf(name, sizeof name, "%s [%s-%lld, %s]", what, op, (long long)opset, k_mode_names[m]);
        rlx_status st = run_mode(op, opset, m, n_in, in, params, n_out, n_attrs, attrs, &out);
        CHECK_MSG(st == RLX_OK, "%s: %s", name, rlx_last_error());
        if (st == RLX_OK)
            for (int o = 0; o < n_out; o++) {
                char nm[300];
                snprintf(nm, sizeof nm, "%s output %d", name, o);
                CHECK_MSG(same(nm, out[o], want[o]), "%s", nm);
            }
        test_free_outputs(out, n_out);
    }
}

static void check1(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                   unsigned params, size_t n_attrs, const rlx_attr *attrs, rlx_tensor *want) {
    check_modes(what, op, opset, n_in, in, params, n_attrs, attrs, 1, &want);
}

/* Expects building/running op to fail with INVALID_MODEL naming the node. */
static void check_fails(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                        unsigned params, size_t n_attrs, const rlx_attr *attrs, const char *substr) {
    rlx_tensor **out = NULL;
    rlx_status st = run_mode(op, opset, M_PLAN, n_in, in, params, 1, n_attrs, attrs, &out);
    CHECK_MSG(st == RLX_ERR_INVALID_MODEL && strstr(rlx_last_error(), "node0") && strstr(rlx_last_error(), op) &&
                  strstr(rlx_last_error(), substr),
              "%s: expected an error naming node0 (%s) with \"%s\", got %s: %s", what, op, substr, rlx_status_name(st),
              rlx_last_error());
    test_free_outputs(out, 1);
}

static void free_all(rlx_tensor **t, int n) {
    for (int i = 0; i < n; i++) rlx_tensor_destroy(t[i]);
}

/* ------------------------------------------------------------ Reshape, Flatten, Identity */

static void test_reshape(void) {
    int64_t d[3] = { 2, 3, 4 };
    for (int dti = 0; dti < N_DTYPES; dti++) {
        rlx_dtype dt = k_all_dtypes[dti];
        rlx_tensor *x = rand_any(dt, 3, d);
        struct { int n; int64_t s[4]; int r; int64_t want[4]; } cases[] = {
            { 2, { 4, -1 }, 2, { 4, 6 } },     { 3, { 0, -1, 2 }, 3, { 2, 6, 2 } },
            { 1, { -1 }, 1, { 24 } },          { 4, { 0, 0, 0, 1 }, 4, { 2, 3, 4, 1 } },
            { 4, { 2, 1, 12, 1 }, 4, { 2, 1, 12, 1 } },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            rlx_tensor *s = vec64((size_t)cases[i].n, cases[i].s);
            rlx_tensor *want = test_tensor(dt, cases[i].r, cases[i].want);
            memcpy(want->data, x->data, x->nbytes);
            const rlx_tensor *in[2] = { x, s };
            char nm[64];
            snprintf(nm, sizeof nm, "reshape %s case %zu", rlx_dtype_name(dt), i);
            check1(nm, "Reshape", 13, 2, in, 2, 0, NULL, want);
            rlx_tensor_destroy(s);
            rlx_tensor_destroy(want);
        }
        rlx_tensor_destroy(x);
    }
    /* allowzero (Reshape-14): a 0 in shape is a real 0; at opset 13 it copies */
    {
        int64_t dz[2] = { 0, 5 }, s1[2] = { 5, 0 }, wz[2] = { 5, 0 };
        rlx_tensor *x = test_tensor(RLX_DTYPE_F32, 2, dz), *s = vec64(2, s1), *want = test_tensor(RLX_DTYPE_F32, 2, wz);
        const rlx_tensor *in[2] = { x, s };
        rlx_attr az = RLX_ATTR_I("allowzero", 1);
        check1("reshape allowzero", "Reshape", 14, 2, in, 2, 1, &az, want);
        /* opset 13: the attribute does not exist yet, 0 copies dim 1 (= 5): [5, 5] != 0 elements */
        check_fails("reshape-13 ignores allowzero", "Reshape", 13, 2, in, 2, 1, &az, "cannot reshape");
        free_all((rlx_tensor *[]){ x, s, want }, 3);
    }
    /* errors naming the node */
    {
        int64_t dx[3] = { 2, 3, 4 }, bad[2] = { 5, 5 }, two[2] = { -1, -1 }, zneg[3] = { 0, 0, 0 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -1, 1);
        rlx_tensor *s1 = vec64(2, bad), *s2 = vec64(2, two), *s3 = vec64(3, zneg);
        check_fails("reshape size mismatch", "Reshape", 13, 2, (const rlx_tensor *[]){ x, s1 }, 2, 0, NULL, "cannot reshape");
        check_fails("reshape two -1", "Reshape", 13, 2, (const rlx_tensor *[]){ x, s2 }, 2, 0, NULL, "more than one -1");
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 3, dx);
        memcpy(want->data, x->data, x->nbytes);
        check1("reshape all zeros copy", "Reshape", 13, 2, (const rlx_tensor *[]){ x, s3 }, 2, 0, NULL, want);
        free_all((rlx_tensor *[]){ x, s1, s2, s3, want }, 5);
    }
}

static void test_flatten_identity(void) {
    int64_t d[4] = { 2, 3, 4, 5 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -3, 3);
    int64_t axes[] = { 0, 1, 2, 4, -1, -4 };
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
        int ax = (int)(axes[i] < 0 ? axes[i] + 4 : axes[i]);
        int64_t wd[2] = { (int64_t)numel(ax, d), (int64_t)numel(4 - ax, d + ax) };
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 2, wd);
        memcpy(want->data, x->data, x->nbytes);
        rlx_attr a = RLX_ATTR_I("axis", axes[i]);
        char nm[64];
        snprintf(nm, sizeof nm, "flatten axis %lld", (long long)axes[i]);
        check1(nm, "Flatten", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &a, want);
        rlx_tensor_destroy(want);
    }
    rlx_attr bad = RLX_ATTR_I("axis", 5);
    check_fails("flatten bad axis", "Flatten", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &bad, "out of range");
    check1("identity", "Identity", 13, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, x);
    check1("identity opset 7", "Identity", 7, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, x);
    rlx_tensor_destroy(x);
}

/* ------------------------------------------------------------ Transpose */

/* Expected transpose by scattering: input coordinate c lands at output
 * coordinate o with o[a] = c[perm[a]]. */
static rlx_tensor *ref_transpose(const rlx_tensor *x, const int *perm) {
    int64_t od[MAXR], c[MAXR], o[MAXR];
    for (int a = 0; a < x->rank; a++) od[a] = x->dims[perm[a]];
    rlx_tensor *y = test_tensor(x->dtype, x->rank, od);
    size_t n = numel(x->rank, x->dims), es = rlx_dtype_size(x->dtype);
    for (size_t i = 0; i < n; i++) {
        unflat(i, x->rank, x->dims, c);
        for (int a = 0; a < x->rank; a++) o[a] = c[perm[a]];
        memcpy(ebytes(y, flat(x->rank, od, o)), ebytes(x, i), es);
    }
    return y;
}

static void test_transpose(void) {
    for (int t = 0; t < 40; t++) {
        int r = (int)rnd(1, 6);
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(t == 7 ? 0 : 1, 4);
        int perm[MAXR];
        int64_t p64[MAXR];
        for (int a = 0; a < r; a++) perm[a] = a;
        for (int a = r - 1; a > 0; a--) { /* Fisher-Yates */
            int b = (int)rnd(0, a), tmp = perm[a];
            perm[a] = perm[b], perm[b] = tmp;
        }
        bool dflt = t % 5 == 0;
        if (dflt)
            for (int a = 0; a < r; a++) perm[a] = r - 1 - a;
        for (int a = 0; a < r; a++) p64[a] = perm[a];
        rlx_dtype dt = k_all_dtypes[t % N_DTYPES];
        rlx_tensor *x = rand_any(dt, r, d), *want = ref_transpose(x, perm);
        rlx_attr a = RLX_ATTR_IS("perm", (size_t)r, p64);
        char nm[64];
        snprintf(nm, sizeof nm, "transpose random %d (%s)", t, rlx_dtype_name(dt));
        check1(nm, "Transpose", t % 2 ? 13 : 7, 1, (const rlx_tensor *[]){ x }, 0, dflt ? 0 : 1, &a, want);
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
    /* hand case: [[1,2,3],[4,5,6]]^T */
    int64_t d[2] = { 2, 3 }, v[6] = { 1, 2, 3, 4, 5, 6 }, dw[2] = { 3, 2 }, w[6] = { 1, 4, 2, 5, 3, 6 };
    rlx_tensor *x = ints_t(RLX_DTYPE_I32, 2, d, v), *want = ints_t(RLX_DTYPE_I32, 2, dw, w);
    check1("transpose 2x3", "Transpose", 13, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, want);
    int64_t bp[2] = { 0, 0 };
    rlx_attr a = RLX_ATTR_IS("perm", 2, bp);
    check_fails("transpose bad perm", "Transpose", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &a, "permutation");
    free_all((rlx_tensor *[]){ x, want }, 2);
}

/* ------------------------------------------------------------ Squeeze, Unsqueeze */

static void test_squeeze_unsqueeze(void) {
    int64_t d[5] = { 1, 3, 1, 4, 1 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 5, d, -1, 1);
    /* Squeeze-11 attribute vs Squeeze-13 input, with negative axes */
    {
        int64_t ax[2] = { 0, -1 }, wd[3] = { 3, 1, 4 };
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 3, wd), *axt = vec64(2, ax);
        memcpy(want->data, x->data, x->nbytes);
        rlx_attr a = RLX_ATTR_IS("axes", 2, ax);
        check1("squeeze-11 attr", "Squeeze", 11, 1, (const rlx_tensor *[]){ x }, 0, 1, &a, want);
        check1("squeeze-13 input", "Squeeze", 13, 2, (const rlx_tensor *[]){ x, axt }, 2, 0, NULL, want);
        free_all((rlx_tensor *[]){ want, axt }, 2);
    }
    { /* no axes: every 1 goes */
        int64_t wd[2] = { 3, 4 };
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 2, wd);
        memcpy(want->data, x->data, x->nbytes);
        check1("squeeze all", "Squeeze", 13, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, want);
        check1("squeeze-7 all", "Squeeze", 7, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, want);
        rlx_tensor_destroy(want);
    }
    { /* errors */
        int64_t ax[1] = { 1 };
        rlx_tensor *axt = vec64(1, ax);
        check_fails("squeeze non-1", "Squeeze", 13, 2, (const rlx_tensor *[]){ x, axt }, 2, 0, NULL, "cannot squeeze axis 1");
        int64_t ax2[1] = { 5 };
        rlx_attr a = RLX_ATTR_IS("axes", 1, ax2);
        check_fails("squeeze bad axis", "Squeeze", 11, 1, (const rlx_tensor *[]){ x }, 0, 1, &a, "out of range");
        rlx_tensor_destroy(axt);
    }
    /* Unsqueeze-11 attribute vs -13 input; unsorted and negative axes */
    int64_t d2[2] = { 3, 4 };
    rlx_tensor *y = test_tensor_random(RLX_DTYPE_F32, 2, d2, -1, 1);
    struct { int n; int64_t ax[3]; int r; int64_t want[5]; } cases[] = {
        { 1, { 0 }, 3, { 1, 3, 4 } },         { 1, { 2 }, 3, { 3, 4, 1 } },
        { 2, { 3, 0 }, 4, { 1, 3, 4, 1 } },   { 1, { -1 }, 3, { 3, 4, 1 } },
        { 3, { -2, 0, 2 }, 5, { 1, 3, 1, 1, 4 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, cases[i].r, cases[i].want), *axt = vec64((size_t)cases[i].n, cases[i].ax);
        memcpy(want->data, y->data, y->nbytes);
        rlx_attr a = RLX_ATTR_IS("axes", (size_t)cases[i].n, cases[i].ax);
        char nm[64];
        snprintf(nm, sizeof nm, "unsqueeze case %zu", i);
        check1(nm, "Unsqueeze", 11, 1, (const rlx_tensor *[]){ y }, 0, 1, &a, want);
        check1(nm, "Unsqueeze", 13, 2, (const rlx_tensor *[]){ y, axt }, 2, 0, NULL, want);
        free_all((rlx_tensor *[]){ want, axt }, 2);
    }
    int64_t dup[2] = { 1, 1 };
    rlx_tensor *dupt = vec64(2, dup);
    check_fails("unsqueeze duplicate axes", "Unsqueeze", 13, 2, (const rlx_tensor *[]){ y, dupt }, 2, 0, NULL, "twice");
    free_all((rlx_tensor *[]){ x, y, dupt }, 3);
}

/* ------------------------------------------------------------ Concat */

static void test_concat(void) {
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 4), ax = (int)rnd(0, r - 1), n_in = (int)rnd(1, 4);
        int64_t base[MAXR];
        for (int a = 0; a < r; a++) base[a] = rnd(1, 3);
        rlx_dtype dt = k_all_dtypes[(t * 5) % N_DTYPES];
        rlx_tensor *ins[4];
        int64_t total = 0, od[MAXR];
        for (int i = 0; i < n_in; i++) {
            int64_t d[MAXR];
            memcpy(d, base, sizeof d);
            d[ax] = rnd(t % 3 == 0 && i == 1 ? 0 : 1, 3); /* some zero-size inputs */
            total += d[ax];
            ins[i] = rand_any(dt, r, d);
        }
        memcpy(od, base, sizeof od);
        od[ax] = total;
        /* expected: walk each output coordinate to the input that holds it */
        rlx_tensor *want = test_tensor(dt, r, od);
        size_t n = numel(r, od), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR];
            unflat(i, r, od, c);
            int j = 0;
            while (c[ax] >= ins[j]->dims[ax]) c[ax] -= ins[j++]->dims[ax];
            memcpy(ebytes(want, i), ebytes(ins[j], flat(r, ins[j]->dims, c)), es);
        }
        rlx_attr a = RLX_ATTR_I("axis", t % 2 ? ax - r : ax);
        char nm[64];
        snprintf(nm, sizeof nm, "concat random %d (%s, axis %d)", t, rlx_dtype_name(dt), ax);
        check1(nm, "Concat", t % 2 ? 13 : 7, n_in, (const rlx_tensor *const *)ins, 0, 1, &a, want);
        free_all(ins, n_in);
        rlx_tensor_destroy(want);
    }
    int64_t d1[2] = { 2, 3 }, d2[3] = { 2, 3, 1 }, d3[2] = { 2, 4 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, d1, -1, 1), *b = test_tensor_random(RLX_DTYPE_F32, 3, d2, -1, 1);
    rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 2, d3, -1, 1);
    rlx_attr ax0 = RLX_ATTR_I("axis", 0), ax2 = RLX_ATTR_I("axis", 2);
    check_fails("concat rank mismatch", "Concat", 13, 2, (const rlx_tensor *[]){ a, b }, 0, 1, &ax0, "rank");
    check_fails("concat dim mismatch", "Concat", 13, 2, (const rlx_tensor *[]){ a, c }, 0, 1, &ax0, "differs");
    check_fails("concat bad axis", "Concat", 13, 2, (const rlx_tensor *[]){ a, c }, 0, 1, &ax2, "out of range");
    free_all((rlx_tensor *[]){ a, b, c }, 3);
}

/* ------------------------------------------------------------ Shape, Size */

static void test_shape_size(void) {
    int64_t d[4] = { 2, 3, 5, 7 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
    struct { int has_s, has_e; int64_t s, e; int n; int64_t want[4]; } cases[] = {
        { 0, 0, 0, 0, 4, { 2, 3, 5, 7 } }, { 1, 0, 1, 0, 3, { 3, 5, 7 } },  { 0, 1, 0, -1, 3, { 2, 3, 5 } },
        { 1, 1, 1, 3, 2, { 3, 5 } },       { 1, 1, -10, 10, 4, { 2, 3, 5, 7 } }, { 1, 1, 3, 1, 0, { 0 } },
        { 1, 0, -1, 0, 1, { 7 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlx_attr a[2];
        size_t na = 0;
        if (cases[i].has_s) a[na++] = RLX_ATTR_I("start", cases[i].s);
        if (cases[i].has_e) a[na++] = RLX_ATTR_I("end", cases[i].e);
        rlx_tensor *want = vec64((size_t)cases[i].n, cases[i].want);
        char nm[64];
        snprintf(nm, sizeof nm, "shape-15 case %zu", i);
        check1(nm, "Shape", 15, 1, (const rlx_tensor *[]){ x }, 0, na, a, want);
        rlx_tensor_destroy(want);
    }
    /* before 15 the attributes do not exist: the whole shape */
    rlx_attr st = RLX_ATTR_I("start", 2);
    rlx_tensor *full = vec64(4, d);
    check1("shape-13", "Shape", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &st, full);
    rlx_tensor *sz = scalar64(2 * 3 * 5 * 7);
    check1("size", "Size", 13, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, sz);
    int64_t dz[2] = { 4, 0 };
    rlx_tensor *z = test_tensor(RLX_DTYPE_I32, 2, dz), *sz0 = scalar64(0), *zs = vec64(2, dz);
    check1("size of empty", "Size", 13, 1, (const rlx_tensor *[]){ z }, 0, 0, NULL, sz0);
    check1("shape of empty", "Shape", 13, 1, (const rlx_tensor *[]){ z }, 0, 0, NULL, zs);
    free_all((rlx_tensor *[]){ x, full, sz, z, sz0, zs }, 6);
}

/* ------------------------------------------------------------ Gather */

static void test_gather(void) {
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 4), q = (int)rnd(0, 2), ax = (int)rnd(0, r - 1);
        int64_t d[MAXR], qd[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(1, 4);
        for (int a = 0; a < q; a++) qd[a] = rnd(t == 3 ? 0 : 1, 3);
        rlx_dtype dt = k_all_dtypes[(t * 3) % N_DTYPES], it = t % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64;
        rlx_tensor *x = rand_any(dt, r, d);
        size_t ni = numel(q, qd);
        int64_t iv[64];
        for (size_t i = 0; i < ni; i++) iv[i] = rnd(-d[ax], d[ax] - 1); /* negative indices count from the end */
        rlx_tensor *idx = ints_t(it, q, qd, iv);
        int64_t od[MAXR];
        int orank = r + q - 1;
        for (int a = 0, k = 0; a < r; a++) {
            if (a == ax) for (int b = 0; b < q; b++) od[k++] = qd[b];
            else od[k++] = d[a];
        }
        rlx_tensor *want = test_tensor(dt, orank, od);
        size_t n = numel(orank, od), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], xc[MAXR], ic[MAXR] = { 0 };
            unflat(i, orank, od, c);
            for (int b = 0; b < q; b++) ic[b] = c[ax + b];
            for (int a = 0; a < r; a++) xc[a] = a < ax ? c[a] : a > ax ? c[a + q - 1] : 0;
            int64_t v = iv[flat(q, qd, ic)];
            xc[ax] = v < 0 ? v + d[ax] : v;
            memcpy(ebytes(want, i), ebytes(x, flat(r, d, xc)), es);
        }
        rlx_attr a = RLX_ATTR_I("axis", t % 3 == 1 ? ax - r : ax);
        char nm[64];
        snprintf(nm, sizeof nm, "gather random %d", t);
        check1(nm, "Gather", t % 2 ? 13 : 11, 2, (const rlx_tensor *[]){ x, idx }, 0, 1, &a, want);
        free_all((rlx_tensor *[]){ x, idx, want }, 3);
    }
    /* hand case (ONNX Gather doc): data [[1,1.2],[2.3,3.4],[4.5,5.7]], indices [[0,1],[1,2]] */
    int64_t d[2] = { 3, 2 }, id[2] = { 2, 2 }, iv[4] = { 0, 1, 1, 2 }, wd[3] = { 2, 2, 2 };
    float xv[6] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f }, wv[8] = { 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f };
    rlx_tensor *x = test_tensor_f32(2, d, xv), *idx = test_tensor_i64(2, id, iv), *want = test_tensor_f32(3, wd, wv);
    check1("gather doc", "Gather", 13, 2, (const rlx_tensor *[]){ x, idx }, 0, 0, NULL, want);
    rlx_attr bad = RLX_ATTR_I("axis", 2);
    check_fails("gather bad axis", "Gather", 13, 2, (const rlx_tensor *[]){ x, idx }, 0, 1, &bad, "out of range");
    int64_t oob[4] = { 0, 3, 1, 2 };
    rlx_tensor *idx2 = test_tensor_i64(2, id, oob);
    rlx_tensor **out = NULL;
    rlx_status st = run_mode("Gather", 13, M_PLAN, 2, (const rlx_tensor *[]){ x, idx2 }, 0, 1, 0, NULL, &out);
    CHECK_MSG(st == RLX_ERR_INVALID_ARGUMENT && strstr(rlx_last_error(), "node0") && strstr(rlx_last_error(), "out of range"),
              "gather index out of range: %s", rlx_last_error());
    test_free_outputs(out, 1);
    free_all((rlx_tensor *[]){ x, idx, want, idx2 }, 4);
}

/* ------------------------------------------------------------ Slice */

/* The indices a slice picks along one axis, by set membership: every i in
 * [0, d) between the clamped bounds and on the step grid, in step order. */
static int64_t slice_pick(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *out) {
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t n = 0;
    if (step > 0) {
        if (s < 0) s = 0;
        if (s > d) s = d;
        if (e < 0) e = 0;
        if (e > d) e = d;
        for (int64_t i = 0; i < d; i++)
            if (i >= s && i < e && (i - s) % step == 0) out[n++] = i;
    } else {
        if (s < 0) s = 0;
        if (s > d - 1) s = d - 1;
        if (e < -1) e = -1;
        if (e > d - 1) e = d - 1;
        for (int64_t i = d - 1; i >= 0; i--)
            if (i <= s && i > e && (s - i) % (-step) == 0) out[n++] = i;
    }
    return n;
}

static void test_slice(void) {
    for (int t = 0; t < 60; t++) {
        int r = (int)rnd(1, 4);
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(t == 9 ? 0 : 1, 6);
        rlx_dtype dt = k_all_dtypes[(t * 7) % N_DTYPES];
        rlx_tensor *x = rand_any(dt, r, d);
        /* slice a random subset of axes in random order */
        int na = (int)rnd(1, r), order[MAXR];
        for (int a = 0; a < r; a++) order[a] = a;
        for (int a = r - 1; a > 0; a--) {
            int b = (int)rnd(0, a), tmp = order[a];
            order[a] = order[b], order[b] = tmp;
        }
        bool v1 = t % 4 == 0; /* Slice-1 has no steps */
        int64_t st[MAXR], en[MAXR], ax[MAXR], sp[MAXR], picks[MAXR][16], np[MAXR];
        for (int a = 0; a < r; a++) {
            np[a] = d[a];
            for (int64_t i = 0; i < d[a]; i++) picks[a][i] = i;
        }
        static const int64_t special[] = { INT64_MAX, INT64_MIN, INT32_MAX, -INT32_MAX };
        for (int i = 0; i < na; i++) {
            int a = order[i];
            ax[i] = rnd(0, 1) ? a : a - r;
            sp[i] = v1 ? 1 : (rnd(0, 1) ? rnd(1, 3) : -rnd(1, 3));
            st[i] = rnd(-d[a] - 2, d[a] + 2);
            en[i] = rnd(0, 4) == 0 ? special[rnd(0, 3)] : rnd(-d[a] - 2, d[a] + 2);
            np[a] = slice_pick(d[a], st[i], en[i], sp[i], picks[a]);
        }
        rlx_tensor *want = test_tensor(dt, r, np);
        size_t n = numel(r, np), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], xc[MAXR];
            unflat(i, r, np, c);
            for (int a = 0; a < r; a++) xc[a] = picks[a][c[a]];
            memcpy(ebytes(want, i), ebytes(x, flat(r, d, xc)), es);
        }
        char nm[64];
        snprintf(nm, sizeof nm, "slice random %d (%s)", t, rlx_dtype_name(dt));
        if (v1) {
            rlx_attr at[3] = { RLX_ATTR_IS("starts", (size_t)na, st), RLX_ATTR_IS("ends", (size_t)na, en),
                               RLX_ATTR_IS("axes", (size_t)na, ax) };
            check1(nm, "Slice", 9, 1, (const rlx_tensor *[]){ x }, 0, 3, at, want);
        } else {
            rlx_tensor *ts = vec64((size_t)na, st), *te = vec64((size_t)na, en), *ta = vec64((size_t)na, ax),
                       *tp = vec64((size_t)na, sp);
            check1(nm, "Slice", t % 2 ? 13 : 10, 5, (const rlx_tensor *[]){ x, ts, te, ta, tp }, 0x1e, 0, NULL, want);
            free_all((rlx_tensor *[]){ ts, te, ta, tp }, 4);
        }
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
    /* ONNX doc example: x[1:2, 0:3:2] on [[1,2,3,4],[5,6,7,8]] = [[5,7]]; without axes and steps too */
    int64_t d[2] = { 2, 4 }, xv[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, wd[2] = { 1, 2 }, wv[2] = { 5, 7 };
    int64_t s[2] = { 1, 0 }, e[2] = { 2, 3 }, ax[2] = { 0, 1 }, sp[2] = { 1, 2 };
    rlx_tensor *x = ints_t(RLX_DTYPE_I32, 2, d, xv), *want = ints_t(RLX_DTYPE_I32, 2, wd, wv);
    rlx_tensor *ts = vec64(2, s), *te = vec64(2, e), *ta = vec64(2, ax), *tp = vec64(2, sp);
    check1("slice doc", "Slice", 13, 5, (const rlx_tensor *[]){ x, ts, te, ta, tp }, 0x1e, 0, NULL, want);
    check1("slice doc, omitted axes", "Slice", 13, 5, (const rlx_tensor *[]){ x, ts, te, NULL, tp }, 0x1e, 0, NULL, want);
    /* negative steps: x[::-1, -1:-1000:-2] = [[8,6],[4,2]] */
    int64_t s2[2] = { -1, -1 }, e2[2] = { INT64_MIN, -1000 }, sp2[2] = { -1, -2 }, wv2[4] = { 8, 6, 4, 2 }, wd2[2] = { 2, 2 };
    rlx_tensor *ts2 = vec64(2, s2), *te2 = vec64(2, e2), *tp2 = vec64(2, sp2), *want2 = ints_t(RLX_DTYPE_I32, 2, wd2, wv2);
    check1("slice negative steps", "Slice", 13, 5, (const rlx_tensor *[]){ x, ts2, te2, NULL, tp2 }, 0x1e, 0, NULL, want2);
    /* empty slice */
    int64_t s3[1] = { 3 }, e3[1] = { 1 }, ax3[1] = { 1 }, wd3[2] = { 2, 0 };
    rlx_tensor *ts3 = vec64(1, s3), *te3 = vec64(1, e3), *ta3 = vec64(1, ax3), *want3 = test_tensor(RLX_DTYPE_I32, 2, wd3);
    check1("slice empty", "Slice", 13, 4, (const rlx_tensor *[]){ x, ts3, te3, ta3 }, 0xe, 0, NULL, want3);
    int64_t zero[2] = { 0, 0 };
    rlx_tensor *tz = vec64(2, zero);
    check_fails("slice step 0", "Slice", 13, 5, (const rlx_tensor *[]){ x, ts, te, ta, tz }, 0x1e, 0, NULL, "step");
    int64_t rep[2] = { 1, 1 };
    rlx_tensor *tr = vec64(2, rep);
    check_fails("slice repeated axis", "Slice", 13, 4, (const rlx_tensor *[]){ x, ts, te, tr }, 0xe, 0, NULL, "twice");
    free_all((rlx_tensor *[]){ x, want, ts, te, ta, tp, ts2, te2, tp2, want2, ts3, te3, ta3, want3, tz, tr }, 16);
}

/* ------------------------------------------------------------ Pad */

/* Source index of output position c along an axis, by bouncing: the input
 * is first cropped to [lo, hi) by negative pads. -1: constant. */
static int64_t pad_src(int mode, int64_t c, int64_t b, int64_t e, int64_t d) {
    int64_t lo = b < 0 ? -b : 0, hi = e < 0 ? d + e : d, n = hi - lo;
    int64_t j = c - (b > 0 ? b : 0);
    if (j >= 0 && j < n) return lo + j;
    switch (mode) {
    case 0: return -1;
    case 1: /* reflect */
        if (n == 1) return lo;
        while (j < 0 || j >= n) {
            if (j < 0) j = -j;
            if (j >= n) j = 2 * (n - 1) - j;
        }
        return lo + j;
    case 2: return lo + (j < 0 ? 0 : n - 1); /* edge */
    default: /* wrap */
        while (j < 0) j += n;
        while (j >= n) j -= n;
        return lo + j;
    }
}

static void test_pad(void) {
    static const char *modes[] = { "constant", "reflect", "edge", "wrap" };
    for (int t = 0; t < 60; t++) {
        int mode = t % 4, r = (int)rnd(1, 4);
        int opset = mode == 3 ? 19 : (int[]){ 7, 11, 13, 18, 19 }[t % 5];
        int64_t d[MAXR], b[MAXR] = { 0 }, e[MAXR] = { 0 }, od[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(1, 4);
        bool use_axes = opset >= 18 && t % 3 == 0;
        int64_t axes[MAXR];
        int na = 0;
        for (int a = 0; a < r; a++) {
            if (use_axes && rnd(0, 2) == 0) continue;
            int64_t lim = mode == 0 ? 3 : 6; /* reflect/wrap past the input length too */
            b[a] = rnd(-(d[a] - 1) / 2, lim);
            e[a] = rnd(-(d[a] - 1) / 2, lim);
            axes[na++] = rnd(0, 1) ? a : a - r;
        }
        int64_t pads[2 * MAXR];
        if (use_axes) {
            for (int i = 0; i < na; i++) {
                int a = (int)(axes[i] < 0 ? axes[i] + r : axes[i]);
                pads[i] = b[a], pads[na + i] = e[a];
            }
        } else {
            for (int a = 0; a < r; a++) pads[a] = b[a], pads[r + a] = e[a];
        }
        for (int a = 0; a < r; a++) od[a] = d[a] + b[a] + e[a];
        rlx_dtype dt = opset < 11 ? RLX_DTYPE_F32 : k_all_dtypes[(t * 5) % N_DTYPES];
        rlx_tensor *x = dt == RLX_DTYPE_F32 ? test_tensor_random(dt, r, d, -5, 5) : rand_any(dt, r, d);
        rlx_tensor *cv = opset < 11 ? NULL : rand_any(dt, 0, NULL);
        float fv = 2.5f;
        rlx_tensor *want = test_tensor(dt, r, od);
        size_t n = numel(r, od), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], xc[MAXR];
            bool cst = false;
            unflat(i, r, od, c);
            for (int a = 0; a < r; a++) {
                xc[a] = pad_src(mode, c[a], b[a], e[a], d[a]);
                cst |= xc[a] < 0;
            }
            if (!cst) memcpy(ebytes(want, i), ebytes(x, flat(r, d, xc)), es);
            else if (cv) memcpy(ebytes(want, i), cv->data, es);
            else memcpy(ebytes(want, i), &fv, 4);
        }
        char nm[96];
        snprintf(nm, sizeof nm, "pad random %d (%s, %s)", t, modes[mode], rlx_dtype_name(dt));
        rlx_attr at[3] = { RLX_ATTR_S("mode", modes[mode]), RLX_ATTR_IS("pads", (size_t)(use_axes ? 2 * na : 2 * r), pads),
                           RLX_ATTR_F("value", fv) };
        if (opset < 11) {
            check1(nm, "Pad", opset, 1, (const rlx_tensor *[]){ x }, 0, 3, at, want);
        } else {
            rlx_tensor *tp = vec64((size_t)(use_axes ? 2 * na : 2 * r), pads), *ta = vec64((size_t)na, axes);
            int nin = use_axes ? 4 : 3;
            check1(nm, "Pad", opset, nin, (const rlx_tensor *[]){ x, tp, cv, ta }, 0xe, 1, at, want);
            free_all((rlx_tensor *[]){ tp, ta }, 2);
        }
        free_all((rlx_tensor *[]){ x, cv, want }, 3);
    }
    /* ONNX doc examples on [[1.0,1.2],[2.3,3.4],[4.5,5.7]], pads [0,2,0,0] */
    int64_t d[2] = { 3, 2 }, wd[2] = { 3, 4 }, pads[4] = { 0, 2, 0, 0 };
    float xv[6] = { 1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f };
    float refl[12] = { 1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f };
    float edge[12] = { 1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f };
    float cons[12] = { 0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f };
    rlx_tensor *x = test_tensor_f32(2, d, xv), *tp = vec64(4, pads);
    rlx_tensor *w1 = test_tensor_f32(2, wd, refl), *w2 = test_tensor_f32(2, wd, edge), *w3 = test_tensor_f32(2, wd, cons);
    rlx_attr m1 = RLX_ATTR_S("mode", "reflect"), m2 = RLX_ATTR_S("mode", "edge"), m4 = RLX_ATTR_S("mode", "wrap");
    check1("pad doc reflect", "Pad", 13, 2, (const rlx_tensor *[]){ x, tp }, 2, 1, &m1, w1);
    check1("pad doc edge", "Pad", 13, 2, (const rlx_tensor *[]){ x, tp }, 2, 1, &m2, w2);
    check1("pad doc constant", "Pad", 13, 2, (const rlx_tensor *[]){ x, tp }, 2, 0, NULL, w3);
    check_fails("pad wrap before 19", "Pad", 18, 2, (const rlx_tensor *[]){ x, tp }, 2, 1, &m4, "wrap");
    int64_t badp[3] = { 0, 1, 0 };
    rlx_tensor *tb = vec64(3, badp);
    check_fails("pad count", "Pad", 13, 2, (const rlx_tensor *[]){ x, tb }, 2, 0, NULL, "pads");
    free_all((rlx_tensor *[]){ x, tp, w1, w2, w3, tb }, 6);
}

/* ------------------------------------------------------------ Constant */

static void test_constant(void) {
    int64_t d[2] = { 2, 3 };
    rlx_tensor *v = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    float fs[3] = { 1.5f, -2.0f, 3.25f };
    int64_t is[4] = { 7, -8, 9, 1 };
    float f1 = 0.75f;
    int64_t i1 = -42;
    int64_t d3 = 3, d4 = 4;
    rlx_tensor *wf1 = test_tensor_f32(0, NULL, &f1), *wfs = test_tensor_f32(1, &d3, fs);
    rlx_tensor *wi1 = scalar64(i1), *wis = test_tensor_i64(1, &d4, is);
    struct { rlx_attr a; rlx_tensor *want; int opset; } cases[] = {
        { RLX_ATTR_T("value", v), v, 9 },         { RLX_ATTR_F("value_float", f1), wf1, 12 },
        { RLX_ATTR_FS("value_floats", 3, fs), wfs, 13 }, { RLX_ATTR_I("value_int", i1), wi1, 13 },
        { RLX_ATTR_IS("value_ints", 4, is), wis, 19 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* a graph of one Constant node: it must fold to a constant output */
        rlx_model *m = NULL;
        rlx_session *s = NULL;
        rlx_tensor **out = NULL;
        size_t n_out = 0;
        CHECK_OK(rlx_model_create(cases[i].opset, &m));
        CHECK_OK(rlx_model_add_node(m, "Constant", "c0", 0, NULL, 1, (const char *[]){ "y" }, 1, &cases[i].a));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        CHECK_OK(rlx_session_create(m, NULL, &s));
        CHECK_OK(rlx_session_run(s, 0, NULL, NULL, &out, &n_out));
        if (out) CHECK_MSG(same("constant", out[0], cases[i].want), "constant case %zu", i);
        const rlx_program *p = rlx_session_last_program(s);
        CHECK_MSG(p && p->n_steps == 0, "constant case %zu: the Constant node was not folded", i);
        test_free_outputs(out, (int)n_out);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    /* no value, or two values: errors naming the node */
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    rlx_attr two[2] = { RLX_ATTR_F("value_float", 1), RLX_ATTR_I("value_int", 1) };
    CHECK_OK(rlx_model_add_node(m, "Constant", "c1", 0, NULL, 1, (const char *[]){ "y" }, 2, two));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_FAILS(rlx_model_finish(m), RLX_ERR_INVALID_MODEL, "node 'c1' (Constant): has both");
    rlx_model_destroy(m);
    free_all((rlx_tensor *[]){ v, wf1, wfs, wi1, wis }, 5);
}

/* ------------------------------------------------------------ shape subgraph */

/* y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [3],
 *                       Unsqueeze(Gather(Shape(x), 2) * Gather(Shape(x), 3))))
 * over x: f32 [batch, 3, h, w]: the exported-model pattern. At run time the
 * session binds the dims and the whole chain folds away. */
static void test_shape_subgraph(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, (int64_t[]){ -1, 3, -1, -1 },
                                 (const char *[]){ "batch", NULL, "h", "w" }));
    rlx_tensor *i0 = scalar64(0), *i2 = scalar64(2), *i3 = scalar64(3), *three = vec64(1, (int64_t[]){ 3 });
    rlx_tensor *ax0 = vec64(1, (int64_t[]){ 0 });
    CHECK_OK(rlx_model_add_initializer(m, "i0", i0));
    CHECK_OK(rlx_model_add_initializer(m, "i2", i2));
    CHECK_OK(rlx_model_add_initializer(m, "i3", i3));
    CHECK_OK(rlx_model_add_initializer(m, "three", three));
    CHECK_OK(rlx_model_add_initializer(m, "ax0", ax0));
#define NODE(op, nm, outn, na, at, ...)                                                                      \
    CHECK_OK(rlx_model_add_node(m, op, nm, sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *),  \
                                (const char *[]){ __VA_ARGS__ }, 1, (const char *[]){ outn }, na, at))
    NODE("Shape", "shape", "s", 0, NULL, "x");
    NODE("Gather", "g0", "n", 0, NULL, "s", "i0");
    NODE("Gather", "g2", "h", 0, NULL, "s", "i2");
    NODE("Gather", "g3", "w", 0, NULL, "s", "i3");
    NODE("Mul", "hw", "hw", 0, NULL, "h", "w");
    NODE("Unsqueeze", "u0", "n1", 0, NULL, "n", "ax0");
    NODE("Unsqueeze", "u1", "hw1", 0, NULL, "hw", "ax0");
    rlx_attr cat = RLX_ATTR_I("axis", 0);
    NODE("Concat", "cat", "shape2", 1, &cat, "n1", "three", "hw1");
    NODE("Reshape", "reshape", "y", 0, NULL, "x", "shape2");
#undef NODE
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    /* at the model level the dims are unknown but the rank is not */
    rlx_value_info info;
    CHECK_OK(rlx_model_output_info(m, 0, &info));
    CHECK_MSG(info.rank == 3, "model-level output rank %d, expected 3", info.rank);
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    int64_t shapes[2][4] = { { 2, 3, 4, 5 }, { 1, 3, 6, 2 } };
    for (int k = 0; k < 3 && s; k++) {
        const int64_t *d = shapes[k % 2];
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
        rlx_tensor **out = NULL;
        size_t n_out = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n_out));
        int64_t wd[3] = { d[0], 3, d[2] * d[3] };
        rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 3, wd);
        memcpy(want->data, x->data, x->nbytes);
        if (out) CHECK_MSG(same("shape subgraph", out[0], want), "shape subgraph run %d", k);
        const rlx_program *p = rlx_session_last_program(s);
        CHECK_MSG(p != NULL, "run %d: the plan is eager; the shape chain did not fold", k);
        if (p) {
            /* only the Reshape is left, and it aliases its input */
            CHECK_MSG(p->n_steps == 1 && strcmp(p->g->nodes[p->steps[0]].op_type, "Reshape") == 0 &&
                          p->step_on[0] == RLX_STEP_VIEW,
                      "run %d: %zu steps left after folding (expected only the Reshape view)", k, p->n_steps);
            const rlx_compile_stats *cs = rlx_session_last_stats(s);
            CHECK_MSG(cs && cs->nodes_folded == 8, "run %d: %d nodes folded, expected 8", k, cs ? cs->nodes_folded : -1);
        }
        test_free_outputs(out, (int)n_out);
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    free_all((rlx_tensor *[]){ i0, i2, i3, three, ax0 }, 5);
}

/* Symbols flow through shape inference where a dim is kept. */
static void test_symbols(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 3, (int64_t[]){ -1, 4, -1 }, (const char *[]){ "b", NULL, "t" }));
    rlx_tensor *sh = vec64(3, (int64_t[]){ 0, -1, 2 }), *ax = vec64(1, (int64_t[]){ 1 });
    CHECK_OK(rlx_model_add_initializer(m, "sh", sh));
    CHECK_OK(rlx_model_add_initializer(m, "ax", ax));
    rlx_attr perm = RLX_ATTR_IS("perm", 3, ((int64_t[]){ 2, 0, 1 }));
    rlx_attr cax = RLX_ATTR_I("axis", 1);
    CHECK_OK(rlx_model_add_node(m, "Transpose", "tr", 1, (const char *[]){ "x" }, 1, (const char *[]){ "xt" }, 1, &perm));
    CHECK_OK(rlx_model_add_node(m, "Unsqueeze", "un", 2, (const char *[]){ "x", "ax" }, 1, (const char *[]){ "xu" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Squeeze", "sq", 2, (const char *[]){ "xu", "ax" }, 1, (const char *[]){ "xs" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", "cat", 2, (const char *[]){ "x", "xs" }, 1, (const char *[]){ "xc" }, 1, &cax));
    CHECK_OK(rlx_model_add_node(m, "Reshape", "rs", 2, (const char *[]){ "x", "sh" }, 1, (const char *[]){ "xr" }, 0, NULL));
    const char *outs[] = { "xt", "xu", "xs", "xc", "xr" };
    for (int i = 0; i < 5; i++) CHECK_OK(rlx_model_add_output(m, outs[i]));
    CHECK_OK(rlx_model_finish(m));
    struct { int rank; const char *names[4]; int64_t dims[4]; } want[] = {
        { 3, { "t", "b", NULL }, { -1, -1, 4 } },
        { 4, { "b", NULL, NULL, "t" }, { -1, 1, 4, -1 } },
        { 3, { "b", NULL, "t" }, { -1, 4, -1 } },
        { 3, { "b", NULL, "t" }, { -1, 8, -1 } },
        { 3, { "b", NULL, NULL }, { -1, -1, 2 } }, /* [b, 4*t/2, 2]: the -1 stays unknown */
    };
    for (int i = 0; i < 5; i++) {
        rlx_value_info info;
        CHECK_OK(rlx_model_output_info(m, (size_t)i, &info));
        bool ok = info.rank == want[i].rank;
        for (int a = 0; ok && a < info.rank; a++) {
            ok = info.dims[a] == want[i].dims[a];
            const char *g = info.dim_names[a], *w = want[i].names[a];
            ok = ok && ((!g && !w) || (g && w && strcmp(g, w) == 0));
        }
        CHECK_MSG(ok, "symbols of output %s", outs[i]);
    }
    rlx_model_destroy(m);
    /* Reshape's -1 takes the one symbolic dim when the static parts match */
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 3, (int64_t[]){ -1, 3, 4 }, (const char *[]){ "b", NULL, NULL }));
    rlx_tensor *sh2 = vec64(2, (int64_t[]){ 12, -1 });
    CHECK_OK(rlx_model_add_initializer(m, "sh", sh2));
    CHECK_OK(rlx_model_add_node(m, "Reshape", "rs", 2, (const char *[]){ "x", "sh" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_value_info info;
    CHECK_OK(rlx_model_output_info(m, 0, &info));
    CHECK_MSG(info.rank == 2 && info.dims[0] == 12 && info.dims[1] == -1 && info.dim_names[1] &&
                  strcmp(info.dim_names[1], "b") == 0,
              "reshape [b,3,4] -> [12,-1] should give [12,b]");
    rlx_model_destroy(m);
    free_all((rlx_tensor *[]){ sh, ax, sh2 }, 3);
}

int main(void) {
    test_seed_from_env();
    test_reshape();
    test_flatten_identity();
    test_transpose();
    test_squeeze_unsqueeze();
    test_concat();
    test_shape_size();
    test_gather();
    test_slice();
    test_pad();
    test_constant();
    test_shape_subgraph();
    test_symbols();
    TEST_MAIN_END();
}
