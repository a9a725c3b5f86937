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

#include "runtime/model.h"
#include "runtime/session.h"
#include "base/log.h"
#include "ir/op.h"
#include "ir/ops/tensor_geom.h"
#include "test_node.h"

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

/* Runs op in every mode and compares each output with want[]: byte for
 * byte when rtol < 0, else |got - want| <= rtol * |want| + rtol. */
static void check_modes_tol(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                            unsigned params, size_t n_attrs, const rlx_attr *attrs, int n_out, rlx_tensor *const *want,
                            double rtol) {
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
                if (rtol < 0) CHECK_MSG(same(nm, out[o], want[o]), "%s", nm);
                else CHECK_MSG(out[o] && test_allclose(out[o], want[o], rtol, rtol), "%s", nm);
            }
        test_free_outputs(out, n_out);
    }
}

static void check_modes(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                        unsigned params, size_t n_attrs, const rlx_attr *attrs, int n_out, rlx_tensor *const *want) {
    check_modes_tol(what, op, opset, n_in, in, params, n_attrs, attrs, n_out, want, -1);
}

static void check1(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                   unsigned params, size_t n_attrs, const rlx_attr *attrs, rlx_tensor *want) {
    check_modes(what, op, opset, n_in, in, params, n_attrs, attrs, 1, &want);
}

/* Expects building/running op (with n_out outputs) to fail with
 * INVALID_MODEL naming the node. */
static void check_fails_n(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                          unsigned params, size_t n_attrs, const rlx_attr *attrs, int n_out, const char *substr) {
    rlx_tensor **out = NULL;
    rlx_status st = run_mode(op, opset, M_PLAN, n_in, in, params, n_out, n_attrs, attrs, &out);
    CHECK_MSG(st == RLX_ERR_INVALID_MODEL && strstr(rlx_last_error(), "node0") && strstr(rlx_last_error(), op) &&
                  strstr(rlx_last_error(), substr),
              "%s: expected an error naming node0 (%s) with \"%s\", got %s: %s", what, op, substr, rlx_status_name(st),
              rlx_last_error());
    test_free_outputs(out, n_out);
}

static void check_fails(const char *what, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                        unsigned params, size_t n_attrs, const rlx_attr *attrs, const char *substr) {
    check_fails_n(what, op, opset, n_in, in, params, n_attrs, attrs, 1, substr);
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
        /* opset 13: the attribute does not exist yet; a node with it is refused (it was ignored) */
        check_fails("reshape-13 refuses allowzero", "Reshape", 13, 2, in, 2, 1, &az,
                    "attribute 'allowzero' is not an attribute of Reshape-13 at opset 13 (it was added in Reshape-14)");
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

/* Transpose's permutation, the one resolver that inference, the CPU
 * kernel, the WebGPU lowering and fuse_attention read: the reversed axes
 * without perm, the given perm, refusals naming the node. */
static void test_transpose_perm(void) {
    int64_t p[RLX_MAX_RANK];
    rlx_node n = test_make_node("Transpose", 13, 1, 1, NULL, 0);
    CHECK_OK(rlx_transpose_perm(&n, 4, p));
    CHECK(p[0] == 3 && p[1] == 2 && p[2] == 1 && p[3] == 0);
    CHECK_OK(rlx_transpose_perm(&n, 0, p));
    int64_t given[3] = { 1, 2, 0 };
    rlx_node_attr a = { .name = "perm", .type = RLX_ATTR_INTS, .n = 3, .ints = given };
    n = test_make_node("Transpose", 13, 1, 1, &a, 1);
    CHECK_OK(rlx_transpose_perm(&n, 3, p));
    CHECK(p[0] == 1 && p[1] == 2 && p[2] == 0);
    CHECK_FAILS(rlx_transpose_perm(&n, 2, p), RLX_ERR_INVALID_MODEL, "perm has 3 entries for an input of rank 2");
    given[2] = 1;
    CHECK_FAILS(rlx_transpose_perm(&n, 3, p), RLX_ERR_INVALID_MODEL, "not a permutation of 0..2");
    given[2] = -1;
    CHECK_FAILS(rlx_transpose_perm(&n, 3, p), RLX_ERR_INVALID_MODEL, "(Transpose)");
}

/* A parameter read by an attribute id that the op's schema lacks is an
 * internal fault (counted, so that the test programs fail; read as absent
 * in a release build, an abort in a build without NDEBUG). */
static void test_param_outside_schema(void) {
#ifdef NDEBUG
    rlx_node n = test_make_node("Transpose", 13, 1, 1, NULL, 0);
    unsigned long before = rlx_internal_fault_count(NULL);
    test_expect_internal_faults(2);
    size_t cnt = 7;
    CHECK(rlx_param_ints(&n, RLX_A_axes, &cnt) == NULL && cnt == 0);
    CHECK(rlx_param_int(&n, RLX_A_axis) == 0);
    const char *first;
    CHECK(rlx_internal_fault_count(&first) == before + 2);
    CHECK_MSG(before || (strstr(first, "node0") && strstr(first, "'axes'")), "first fault: %s", first);
    CHECK(rlx_param_ints(&n, RLX_A_perm, &cnt) == NULL && rlx_internal_fault_count(NULL) == before + 2);
#endif
}

/* Attribute ids (ir/attr_id.h): every attribute name of every op schema
 * has a row in src/ir/attr_names.def and no row names nothing; an id names
 * itself back; the rows are sorted (the lookup by name bisects them); the
 * slot table gives each op the first schema row of the name and -1 for a
 * name its schema lacks. rlx_param_given tells a given value from a
 * default. */
static void test_attr_ids(void) {
    CHECK(rlx_attr_id_name(RLX_A_NONE) == NULL && rlx_attr_id_name(RLX_A_COUNT) == NULL);
    CHECK(rlx_attr_id_of("no_such_attribute") == RLX_A_NONE && rlx_attr_id_of("") == RLX_A_NONE);
    for (int a = RLX_A_NONE + 1; a < RLX_A_COUNT; a++) {
        const char *nm = rlx_attr_id_name((rlx_attr_id)a);
        CHECK_MSG(nm && rlx_attr_id_of(nm) == (rlx_attr_id)a, "attribute id %d (%s) does not name itself back", a,
                  nm ? nm : "NULL");
        const char *prev = rlx_attr_id_name((rlx_attr_id)(a - 1));
        CHECK_MSG(!prev || !nm || strcmp(prev, nm) < 0,
                  "src/ir/attr_names.def: row '%s' before '%s' breaks strcmp order", prev, nm ? nm : "NULL");
    }
    bool named[RLX_A_COUNT] = { false };
    for (size_t i = 0; i < rlx_op_count(); i++) {
        const rlx_op_def *d = rlx_op_at(i);
        for (int k = 0; k < RLX_MAX_OP_ATTRS && d->attrs[k].name; k++) {
            const char *nm = d->attrs[k].name;
            rlx_attr_id a = rlx_attr_id_of(nm);
            CHECK_MSG(a != RLX_A_NONE, "op %s: schema attribute '%s' has no row RLX_ATTR_NAME(%s) in "
                      "src/ir/attr_names.def", d->name, nm, nm);
            if (a == RLX_A_NONE) continue;
            named[a] = true;
            int first = 0;
            while (strcmp(d->attrs[first].name, nm) != 0) first++;
            CHECK_MSG(rlx_op_attr_slot(d->id, a) == first, "op %s: slot of '%s' is %d, expected %d", d->name, nm,
                      rlx_op_attr_slot(d->id, a), first);
        }
    }
    for (int a = RLX_A_NONE + 1; a < RLX_A_COUNT; a++)
        CHECK_MSG(named[a], "src/ir/attr_names.def: row '%s' is in no op schema", rlx_attr_id_name((rlx_attr_id)a));
    CHECK(rlx_op_attr_slot(RLX_OP_Transpose, RLX_A_perm) == 0 && rlx_op_attr_slot(RLX_OP_Transpose, RLX_A_axes) == -1);
    CHECK(rlx_op_attr_slot(RLX_OP_NONE, RLX_A_axis) == -1 && rlx_op_attr_slot(RLX_OP_COUNT, RLX_A_axis) == -1);
    CHECK(rlx_op_attr_slot(RLX_OP_Softmax, RLX_A_NONE) == -1 && rlx_op_attr_slot(RLX_OP_Softmax, RLX_A_COUNT) == -1);

    rlx_node n = test_make_node("Flatten", 13, 1, 1, NULL, 0);
    CHECK(rlx_param_int(&n, RLX_A_axis) == 1 && !rlx_param_given(&n, RLX_A_axis));
    rlx_node_attr ax = { .name = "axis", .type = RLX_ATTR_INT, .i = 0 };
    n = test_make_node("Flatten", 13, 1, 1, &ax, 1);
    CHECK(rlx_param_int(&n, RLX_A_axis) == 0 && rlx_param_given(&n, RLX_A_axis));
    /* LpPool-11 has two kernel_shape rows (required from 2): reads take the first, which both fill */
    int64_t ks[2] = { 3, 2 };
    rlx_node_attr kattr = { .name = "kernel_shape", .type = RLX_ATTR_INTS, .n = 2, .ints = ks };
    n = test_make_node("LpPool", 11, 1, 1, &kattr, 1);
    size_t cnt = 0;
    const int64_t *got = rlx_param_ints(&n, RLX_A_kernel_shape, &cnt);
    CHECK(got && cnt == 2 && got[0] == 3 && got[1] == 2 && rlx_param_given(&n, RLX_A_kernel_shape));
    CHECK(rlx_param_int(&n, RLX_A_p) == 2 && !rlx_param_given(&n, RLX_A_p));
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
    /* channel shuffles and other perms whose last axes stay adjacent (the
     * kernel merges them into rows copied whole, split over the workers):
     * ShuffleNet's [1, g, c/g, h, w] -> [1, c/g, g, h, w], a row split
     * across merged axes, a size-1 axis between merged ones, the identity */
    static const struct { int r; int64_t d[5]; int perm[5]; } sh[] = {
        { 5, { 1, 4, 34, 28, 28 }, { 0, 2, 1, 3, 4 } }, { 5, { 1, 3, 80, 7, 7 }, { 0, 2, 1, 3, 4 } },
        { 4, { 2, 5, 3, 33 }, { 1, 0, 2, 3 } },         { 5, { 3, 1, 4, 5, 6 }, { 2, 0, 1, 3, 4 } },
        { 4, { 3, 4, 5, 7 }, { 0, 1, 2, 3 } },          { 4, { 6, 5, 4, 3 }, { 3, 1, 2, 0 } },
    };
    for (size_t t = 0; t < sizeof sh / sizeof sh[0]; t++) {
        int64_t p64[MAXR];
        for (int a = 0; a < sh[t].r; a++) p64[a] = sh[t].perm[a];
        rlx_dtype dt = t % 2 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
        rlx_tensor *x = rand_any(dt, sh[t].r, sh[t].d), *want = ref_transpose(x, sh[t].perm);
        rlx_attr a = RLX_ATTR_IS("perm", (size_t)sh[t].r, p64);
        char nm[64];
        snprintf(nm, sizeof nm, "transpose shuffle %zu (%s)", t, rlx_dtype_name(dt));
        check1(nm, "Transpose", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &a, want);
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
    /* before 15 the attributes do not exist: refused (they were ignored), and without them the whole shape */
    rlx_attr st = RLX_ATTR_I("start", 2);
    rlx_tensor *full = vec64(4, d);
    check_fails("shape-13 start", "Shape", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &st,
                "attribute 'start' is not an attribute of Shape-13 at opset 13 (it was added in Shape-15)");
    check1("shape-13", "Shape", 13, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, full);
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
    { /* i32 starts/ends/axes/steps (shape arithmetic in i32) */
        rlx_tensor *s32 = ints_t(RLX_DTYPE_I32, 1, (int64_t[]){ 2 }, s), *e32 = ints_t(RLX_DTYPE_I32, 1, (int64_t[]){ 2 }, e);
        rlx_tensor *a32 = ints_t(RLX_DTYPE_I32, 1, (int64_t[]){ 2 }, ax), *p32 = ints_t(RLX_DTYPE_I32, 1, (int64_t[]){ 2 }, sp);
        check1("slice doc, i32 params", "Slice", 13, 5, (const rlx_tensor *[]){ x, s32, e32, a32, p32 }, 0x1e, 0, NULL, want);
        free_all((rlx_tensor *[]){ s32, e32, a32, p32 }, 4);
    }
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



/* ------------------------------------------------------------ unknown shapes */

/* Inference never fails on unknown dims or ranks, only on contradictions:
 * every op is inferred once with all input dims dynamic (no constants) and
 * once with every input rank unknown. */
static void test_infer_unknown(void) {
    const rlx_dtype F = RLX_DTYPE_F32, L = RLX_DTYPE_I64, B = RLX_DTYPE_BOOL;
    rlx_attr ax0 = RLX_ATTR_I("axis", 0), perm = RLX_ATTR_IS("perm", 2, ((int64_t[]){ 1, 0 }));
    rlx_attr bs = RLX_ATTR_I("blocksize", 2), nout = RLX_ATTR_I("num_outputs", 2);
    struct { const char *op; int opset, n_in; rlx_dtype dt[5]; int rank[5]; int n_out; const rlx_attr *a; } c[] = {
        { "Reshape", 14, 2, { F, L }, { 2, 1 }, 1, NULL },   { "Flatten", 13, 1, { F }, { 3 }, 1, NULL },
        { "Transpose", 13, 1, { F }, { 2 }, 1, &perm },      { "Transpose", 13, 1, { F }, { 2 }, 1, NULL },
        { "Squeeze", 13, 2, { F, L }, { 3, 1 }, 1, NULL },   { "Squeeze", 13, 1, { F }, { 3 }, 1, NULL },
        { "Unsqueeze", 13, 2, { F, L }, { 2, 1 }, 1, NULL }, { "Concat", 13, 2, { F, F }, { 2, 2 }, 1, &ax0 },
        { "Shape", 15, 1, { F }, { 2 }, 1, NULL },           { "Size", 13, 1, { F }, { 2 }, 1, NULL },
        { "Gather", 13, 2, { F, L }, { 2, 2 }, 1, NULL },    { "Slice", 13, 5, { F, L, L, L, L }, { 2, 1, 1, 1, 1 }, 1, NULL },
        { "Slice", 13, 3, { F, L, L }, { 2, 1, 1 }, 1, NULL }, { "Pad", 18, 4, { F, L, F, L }, { 2, 1, 0, 1 }, 1, NULL },
        { "Pad", 13, 2, { F, L }, { 2, 1 }, 1, NULL },       { "Identity", 13, 1, { F }, { 2 }, 1, NULL },
        { "Expand", 13, 2, { F, L }, { 2, 1 }, 1, NULL },    { "Tile", 13, 2, { F, L }, { 2, 1 }, 1, NULL },
        { "Split", 13, 2, { F, L }, { 2, 1 }, 2, NULL },     { "Split", 18, 1, { F }, { 2 }, 2, &nout },
        { "ConstantOfShape", 20, 1, { L }, { 1 }, 1, NULL }, { "Range", 11, 3, { L, L, L }, { 0, 0, 0 }, 1, NULL },
        { "GatherElements", 13, 2, { F, L }, { 2, 2 }, 1, NULL }, { "GatherND", 13, 2, { F, L }, { 2, 2 }, 1, NULL },
        { "ScatterElements", 18, 3, { F, L, F }, { 2, 2, 2 }, 1, NULL },
        { "ScatterND", 18, 3, { F, L, F }, { 2, 2, 2 }, 1, NULL }, { "OneHot", 11, 3, { L, L, F }, { 2, 0, 1 }, 1, NULL },
        { "Trilu", 14, 2, { F, L }, { 2, 0 }, 1, NULL },     { "CumSum", 14, 2, { F, L }, { 2, 0 }, 1, NULL },
        { "NonZero", 13, 1, { F }, { 2 }, 1, NULL },         { "DepthToSpace", 13, 1, { F }, { 4 }, 1, &bs },
        { "SpaceToDepth", 13, 1, { F }, { 4 }, 1, &bs },     { "EyeLike", 13, 1, { F }, { 2 }, 1, NULL },
        { "Compress", 11, 2, { F, B }, { 2, 1 }, 1, &ax0 },  { "Compress", 11, 2, { F, B }, { 2, 1 }, 1, NULL },
        { "ReverseSequence", 10, 2, { F, L }, { 2, 1 }, 1, NULL }, { "TopK", 11, 2, { F, L }, { 2, 1 }, 2, NULL },
        { "Unique", 11, 1, { F }, { 2 }, 4, &ax0 },          { "Unique", 11, 1, { F }, { 2 }, 4, NULL },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int unknown_rank = 0; unknown_rank < 2; unknown_rank++) {
            rlx_model *m = NULL;
            CHECK_OK(rlx_model_create(c[i].opset, &m));
            const char *ins[5] = { "i0", "i1", "i2", "i3", "i4" }, *outs[4] = { "o0", "o1", "o2", "o3" };
            int64_t dyn[MAXR] = { -1, -1, -1, -1, -1, -1, -1, -1 };
            for (int k = 0; k < c[i].n_in; k++) {
                CHECK_OK(rlx_model_add_input(m, ins[k], c[i].dt[k], c[i].rank[k], dyn, NULL));
                if (unknown_rank) m->g->values[m->g->n_values - 1].rank = -1;
            }
            CHECK_OK(rlx_model_add_node(m, c[i].op, "node0", (size_t)c[i].n_in, ins, (size_t)c[i].n_out, outs,
                                        c[i].a ? 1 : 0, c[i].a));
            for (int k = 0; k < c[i].n_out; k++) CHECK_OK(rlx_model_add_output(m, outs[k]));
            rlx_status st = rlx_model_finish(m);
            CHECK_MSG(st == RLX_OK, "%s-%d with %s inputs: %s", c[i].op, c[i].opset,
                      unknown_rank ? "unknown-rank" : "dynamic", rlx_last_error());
            rlx_model_destroy(m);
        }
}

/* ============================================================ group 2 */

/* ------------------------------------------------------------ Expand, Tile */

static void test_expand_tile(void) {
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 3), extra = (int)rnd(0, 2), orank = r + extra;
        int64_t xd[MAXR], sh[MAXR], od[MAXR];
        for (int a = 0; a < orank; a++) od[a] = rnd(1, 3);
        for (int a = 0; a < r; a++) xd[a] = rnd(0, 1) ? 1 : od[a + extra];
        /* the shape input may hold 1 where the input is larger (bidirectional) */
        for (int a = 0; a < orank; a++) sh[a] = (a >= extra && rnd(0, 2) == 0) ? 1 : od[a];
        for (int a = 0; a < r; a++)
            if (xd[a] == 1) sh[a + extra] = od[a + extra];
        rlx_dtype dt = k_all_dtypes[(t * 3) % N_DTYPES];
        rlx_tensor *x = rand_any(dt, r, xd), *ts = vec64((size_t)orank, sh), *want = test_tensor(dt, orank, od);
        size_t n = numel(orank, od), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], xc[MAXR];
            unflat(i, orank, od, c);
            for (int a = 0; a < r; a++) xc[a] = c[a + extra] % xd[a]; /* xd is 1 or the output dim */
            memcpy(ebytes(want, i), ebytes(x, flat(r, xd, xc)), es);
        }
        char nm[64];
        snprintf(nm, sizeof nm, "expand random %d", t);
        check1(nm, "Expand", t % 2 ? 13 : 8, 2, (const rlx_tensor *[]){ x, ts }, 2, 0, NULL, want);
        free_all((rlx_tensor *[]){ x, ts, want }, 3);
    }
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 3);
        int64_t xd[MAXR], rep[MAXR], od[MAXR];
        for (int a = 0; a < r; a++) xd[a] = rnd(1, 3), rep[a] = rnd(t == 4 ? 0 : 1, 3), od[a] = xd[a] * rep[a];
        rlx_dtype dt = k_all_dtypes[(t * 5) % N_DTYPES];
        rlx_tensor *x = rand_any(dt, r, xd), *tr = vec64((size_t)r, rep), *want = test_tensor(dt, r, od);
        /* scatter every input element to all its copies */
        size_t n = numel(r, xd), es = rlx_dtype_size(dt), copies = numel(r, rep);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], k[MAXR], o[MAXR];
            unflat(i, r, xd, c);
            for (size_t j = 0; j < copies; j++) {
                unflat(j, r, rep, k);
                for (int a = 0; a < r; a++) o[a] = c[a] + k[a] * xd[a];
                memcpy(ebytes(want, flat(r, od, o)), ebytes(x, i), es);
            }
        }
        char nm[64];
        snprintf(nm, sizeof nm, "tile random %d", t);
        check1(nm, "Tile", t % 2 ? 13 : 7, 2, (const rlx_tensor *[]){ x, tr }, 2, 0, NULL, want);
        free_all((rlx_tensor *[]){ x, tr, want }, 3);
    }
    /* ONNX Expand doc: [3,1] to [2,1,6] gives [2,3,6] */
    int64_t d[2] = { 3, 1 }, v[3] = { 1, 2, 3 }, sh[3] = { 2, 1, 6 }, wd[3] = { 2, 3, 6 }, bad[2] = { 2, 4 };
    rlx_tensor *x = ints_t(RLX_DTYPE_I64, 2, d, v), *ts = vec64(3, sh), *want = test_tensor(RLX_DTYPE_I64, 3, wd);
    for (int i = 0; i < 36; i++) ((int64_t *)want->data)[i] = v[(i / 6) % 3];
    check1("expand doc", "Expand", 13, 2, (const rlx_tensor *[]){ x, ts }, 2, 0, NULL, want);
    rlx_tensor *tb = vec64(2, bad);
    check_fails("expand bad shape", "Expand", 13, 2, (const rlx_tensor *[]){ x, tb }, 2, 0, NULL, "broadcast");
    check_fails("tile wrong repeats", "Tile", 13, 2, (const rlx_tensor *[]){ x, ts }, 2, 0, NULL, "repeats");
    /* shapes from values that overflow: an error, never a wrapped size */
    int64_t huge[4] = { (int64_t)1 << 32, (int64_t)1 << 32, 3, 1 }, hrep[2] = { INT64_MAX / 2, 3 };
    rlx_tensor *th = vec64(4, huge), *thr = vec64(2, hrep);
    check_fails("expand overflow", "Expand", 13, 2, (const rlx_tensor *[]){ x, th }, 2, 0, NULL, "too large");
    check_fails("tile overflow", "Tile", 13, 2, (const rlx_tensor *[]){ x, thr }, 2, 0, NULL, "too large");
    free_all((rlx_tensor *[]){ th, thr }, 2);
    free_all((rlx_tensor *[]){ x, ts, want, tb }, 4);
}

/* A shape is refused when the product of its non-zero dims overflows int64,
 * wherever its zero is: [P,P,0] and [0,P,P] alike (once, [0,P,P] passed and
 * Flatten's inner product overflowed later into an internal error). */
static void test_shape_overflow_rule(void) {
    const int64_t P = (int64_t)1 << 40;
    const int64_t bad[][4] = { { P, P, 0, 1 }, { 0, P, P, 1 }, { P, 0, P, 1 }, { 0, P, P, P } };
    const int64_t ok[][4] = { { 0, P, 1, 1 }, { 0, (int64_t)1 << 31, (int64_t)1 << 31, 1 }, { 0, 0, P, 1 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlx_tensor *t = NULL;
        CHECK_FAILS(rlx_tensor_create(RLX_DTYPE_F32, bad[i], 4, &t), RLX_ERR_INVALID_ARGUMENT, "overflows int64");
        CHECK(t == NULL);
    }
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        rlx_tensor *t = NULL;
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, ok[i], 4, &t));
        CHECK(t && rlx_tensor_numel(t) == 0);
        rlx_tensor_destroy(t);
    }
}

/* ------------------------------------------------------------ Split */

static void test_split(void) {
    int64_t d[3] = { 2, 7, 3 };
    rlx_tensor *x = rand_any(RLX_DTYPE_I16, 3, d);
    struct { int opset, how, n; int64_t sizes[4]; int64_t axis; } cases[] = {
        { 11, 0, 3, { 2, 0, 5 }, 1 },  /* split attribute, a zero-size part */
        { 13, 1, 3, { 1, 4, 2 }, -2 }, /* split input, negative axis */
        { 18, 2, 4, { 2, 2, 2, 1 }, 1 }, /* num_outputs, uneven: ceil(7/4) = 2 */
        { 18, 2, 4, { 1, 1, 1, 0 }, 2 }, /* 3 into 4: the last part empty (the ONNX reference) */
        { 18, 2, 3, { 1, 1, 0 }, 0 },    /* 2 into 3 */
        { 18, 2, 3, { 3, 3, 1 }, -2 },   /* 7 into 3 by a negative axis */
        { 13, 3, 1, { 7 }, 1 },        /* one output, the whole axis */
        { 13, 3, 2, { 1, 1 }, 0 },     /* equal parts by the outputs count */
        { 7, 3, 3, { 1, 1, 1 }, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = cases[i].n, ax = (int)(cases[i].axis < 0 ? cases[i].axis + 3 : cases[i].axis);
        rlx_tensor *want[4];
        int64_t off = 0;
        for (int o = 0; o < n; o++) {
            int64_t wd[3] = { d[0], d[1], d[2] };
            wd[ax] = cases[i].sizes[o];
            want[o] = test_tensor(RLX_DTYPE_I16, 3, wd);
            size_t m = numel(3, wd);
            for (size_t j = 0; j < m; j++) {
                int64_t c[3];
                unflat(j, 3, wd, c);
                c[ax] += off;
                memcpy(ebytes(want[o], j), ebytes(x, flat(3, d, c)), 2);
            }
            off += cases[i].sizes[o];
        }
        rlx_attr at[2] = { RLX_ATTR_I("axis", cases[i].axis), RLX_ATTR_IS("split", (size_t)n, cases[i].sizes) };
        if (cases[i].how == 2) at[1] = RLX_ATTR_I("num_outputs", n);
        rlx_tensor *ts = vec64((size_t)n, cases[i].sizes);
        char nm[64];
        snprintf(nm, sizeof nm, "split case %zu", i);
        if (cases[i].how == 1)
            check_modes(nm, "Split", cases[i].opset, 2, (const rlx_tensor *[]){ x, ts }, 2, 1, at, n, want);
        else
            check_modes(nm, "Split", cases[i].opset, 1, (const rlx_tensor *[]){ x }, 0, cases[i].how == 3 ? 1 : 2, at, n,
                        want);
        rlx_tensor_destroy(ts);
        free_all(want, n);
    }
    /* errors */
    int64_t bad[2] = { 3, 3 };
    rlx_tensor *tb = vec64(2, bad), **out = NULL;
    rlx_attr ax1 = RLX_ATTR_I("axis", 1);
    rlx_status st = test_run_op("Split", 13, "cpu", 2, (const rlx_tensor *[]){ x, tb }, (int[]){ 0, 1 }, 2, 1, &ax1, &out);
    CHECK_FAILS(st, RLX_ERR_INVALID_MODEL, "node0");
    CHECK(strstr(rlx_last_error(), "add up to 6"));
    st = test_run_op("Split", 13, "cpu", 1, (const rlx_tensor *[]){ x }, NULL, 2, 1, &ax1, &out);
    CHECK_FAILS(st, RLX_ERR_INVALID_MODEL, "equal parts");
    free_all((rlx_tensor *[]){ x, tb }, 2);
}

/* ------------------------------------------------------------ ConstantOfShape, Range, EyeLike */

static void test_constant_of_shape_range(void) {
    /* ConstantOfShape: i32 value, default f32 0, scalar and empty outputs */
    {
    int64_t sh[3] = { 2, 3, 4 }, z[2] = { 3, 0 };
    int32_t seven = -7;
    rlx_tensor *val = test_tensor(RLX_DTYPE_I32, 1, (int64_t[]){ 1 });
    memcpy(val->data, &seven, 4);
    rlx_tensor *ts = vec64(3, sh), *want = test_tensor(RLX_DTYPE_I32, 3, sh);
    for (int i = 0; i < 24; i++) ((int32_t *)want->data)[i] = seven;
    rlx_attr a = RLX_ATTR_T("value", val);
    check1("constantofshape i32", "ConstantOfShape", 9, 1, (const rlx_tensor *[]){ ts }, 1, 1, &a, want);
    rlx_tensor *wz = test_tensor(RLX_DTYPE_F32, 3, sh); /* zero-filled: the default value */
    check1("constantofshape default", "ConstantOfShape", 20, 1, (const rlx_tensor *[]){ ts }, 1, 0, NULL, wz);
    rlx_tensor *te = test_tensor(RLX_DTYPE_I64, 1, (int64_t[]){ 0 }), *ws = test_tensor(RLX_DTYPE_I32, 0, NULL);
    memcpy(ws->data, &seven, 4);
    check1("constantofshape scalar", "ConstantOfShape", 9, 1, (const rlx_tensor *[]){ te }, 1, 1, &a, ws);
    rlx_tensor *tz = vec64(2, z), *wzz = test_tensor(RLX_DTYPE_I32, 2, z);
    check1("constantofshape empty", "ConstantOfShape", 9, 1, (const rlx_tensor *[]){ tz }, 1, 1, &a, wzz);
    free_all((rlx_tensor *[]){ val, ts, want, wz, te, ws, tz, wzz }, 8);
    }

    /* Range: integer types exact, floats within 1e-6 */
    struct { rlx_dtype dt; double s, l, d; } cases[] = {
        { RLX_DTYPE_I32, 10, 6, -3 }, { RLX_DTYPE_I64, -5, 20, 4 }, { RLX_DTYPE_I64, 3, 3, 1 }, { RLX_DTYPE_I32, 3, 9, -1 },
        { RLX_DTYPE_F32, 1.5, 4.1, 0.3 }, { RLX_DTYPE_F64, 10, -2.5, -1.25 }, { RLX_DTYPE_I16, 0, 100, 7 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlx_dtype dt = cases[i].dt;
        rlx_tensor *s = test_tensor(dt, 0, NULL), *l = test_tensor(dt, 0, NULL), *d = test_tensor(dt, 0, NULL);
        /* expected: count by walking, values by repeated addition */
        double vals[64];
        int64_t n = 0;
        for (double v = cases[i].s; (cases[i].d > 0 ? v < cases[i].l : v > cases[i].l) && n < 64; v += cases[i].d)
            vals[n++] = v;
        rlx_tensor *want = test_tensor(dt, 1, &n);
        for (int64_t j = 0; j < n; j++) {
            if (dt == RLX_DTYPE_F32) ((float *)want->data)[j] = (float)vals[j];
            else if (dt == RLX_DTYPE_F64) ((double *)want->data)[j] = vals[j];
            else if (dt == RLX_DTYPE_I32) ((int32_t *)want->data)[j] = (int32_t)vals[j];
            else if (dt == RLX_DTYPE_I16) ((int16_t *)want->data)[j] = (int16_t)vals[j];
            else ((int64_t *)want->data)[j] = (int64_t)vals[j];
        }
        double sv[3] = { cases[i].s, cases[i].l, cases[i].d };
        rlx_tensor *ts3[3] = { s, l, d };
        for (int k = 0; k < 3; k++) {
            if (dt == RLX_DTYPE_F32) *(float *)ts3[k]->data = (float)sv[k];
            else if (dt == RLX_DTYPE_F64) *(double *)ts3[k]->data = sv[k];
            else if (dt == RLX_DTYPE_I32) *(int32_t *)ts3[k]->data = (int32_t)sv[k];
            else if (dt == RLX_DTYPE_I16) *(int16_t *)ts3[k]->data = (int16_t)sv[k];
            else *(int64_t *)ts3[k]->data = (int64_t)sv[k];
        }
        char nm[64];
        snprintf(nm, sizeof nm, "range case %zu (%s)", i, rlx_dtype_name(dt));
        if (dt == RLX_DTYPE_I16) { /* the I16 path checks bytes; test_allclose does not read i16 */
            check1(nm, "Range", 11, 3, (const rlx_tensor *[]){ s, l, d }, 7, 0, NULL, want);
        } else {
            rlx_tensor *w1[1] = { want };
            check_modes_tol(nm, "Range", 11, 3, (const rlx_tensor *[]){ s, l, d }, 7, 0, NULL, 1, w1,
                            (dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F64) ? 1e-6 : 0);
        }
        free_all((rlx_tensor *[]){ s, l, d, want }, 4);
    }
    rlx_tensor *s = scalar64(1), *l = scalar64(5), *d0 = scalar64(0);
    check_fails("range delta 0", "Range", 11, 3, (const rlx_tensor *[]){ s, l, d0 }, 7, 0, NULL, "delta");
    free_all((rlx_tensor *[]){ s, l, d0 }, 3);

    /* EyeLike: diagonals k, dtype attribute */
    int64_t ks[] = { 0, 1, -2, 3, -5, 7 };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        int64_t ed[2] = { 3, 4 };
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, ed, -1, 1), *want = test_tensor(RLX_DTYPE_I32, 2, ed);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++) ((int32_t *)want->data)[r * 4 + c] = c - r == ks[i];
        rlx_attr at[2] = { RLX_ATTR_I("k", ks[i]), RLX_ATTR_I("dtype", RLX_DTYPE_I32) };
        char nm[64];
        snprintf(nm, sizeof nm, "eyelike k %lld", (long long)ks[i]);
        check1(nm, "EyeLike", 9, 1, (const rlx_tensor *[]){ x }, 0, 2, at, want);
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
}

/* ------------------------------------------------------------ GatherElements, GatherND */

static void test_gather_elements_nd(void) {
    /* GatherElements doc: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 -> [[1,1],[4,3]] */
    int64_t d[2] = { 2, 2 }, xv[4] = { 1, 2, 3, 4 }, iv[4] = { 0, 0, 1, 0 }, wv[4] = { 1, 1, 4, 3 };
    rlx_tensor *x = ints_t(RLX_DTYPE_I32, 2, d, xv), *idx = test_tensor_i64(2, d, iv), *want = ints_t(RLX_DTYPE_I32, 2, d, wv);
    rlx_attr ax1 = RLX_ATTR_I("axis", 1);
    check1("gatherelements doc", "GatherElements", 13, 2, (const rlx_tensor *[]){ x, idx }, 0, 1, &ax1, want);
    free_all((rlx_tensor *[]){ x, idx, want }, 3);
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 4), ax = (int)rnd(0, r - 1);
        int64_t xd[MAXR], id[MAXR];
        for (int a = 0; a < r; a++) xd[a] = rnd(1, 4), id[a] = a == ax ? rnd(1, 5) : rnd(1, xd[a]);
        size_t ni = numel(r, id);
        int64_t *ivr = malloc(ni * sizeof *ivr);
        for (size_t i = 0; i < ni; i++) ivr[i] = rnd(-xd[ax], xd[ax] - 1);
        rlx_dtype dt = k_all_dtypes[(t * 3) % N_DTYPES];
        rlx_tensor *xr = rand_any(dt, r, xd), *ir = ints_t(t % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64, r, id, ivr);
        rlx_tensor *wr = test_tensor(dt, r, id);
        for (size_t i = 0; i < ni; i++) {
            int64_t c[MAXR];
            unflat(i, r, id, c);
            c[ax] = ivr[i] < 0 ? ivr[i] + xd[ax] : ivr[i];
            memcpy(ebytes(wr, i), ebytes(xr, flat(r, xd, c)), rlx_dtype_size(dt));
        }
        rlx_attr a = RLX_ATTR_I("axis", t % 3 ? ax : ax - r);
        char nm[64];
        snprintf(nm, sizeof nm, "gatherelements random %d", t);
        check1(nm, "GatherElements", 11, 2, (const rlx_tensor *[]){ xr, ir }, 0, 1, &a, wr);
        free(ivr);
        free_all((rlx_tensor *[]){ xr, ir, wr }, 3);
    }
    /* GatherND doc examples */
    struct { int xr; int64_t xd[3]; int ir; int64_t id[3]; int64_t iv[8]; int b; int wr; int64_t wd[3]; int64_t wv[8]; } g[] = {
        { 2, { 2, 2 }, 2, { 2, 2 }, { 0, 0, 1, 1 }, 0, 1, { 2 }, { 0, 3 } },
        { 2, { 2, 2 }, 2, { 2, 1 }, { 1, 0 }, 0, 2, { 2, 2 }, { 2, 3, 0, 1 } },
        { 3, { 2, 2, 2 }, 2, { 2, 2 }, { 0, 1, 1, 0 }, 0, 2, { 2, 2 }, { 2, 3, 4, 5 } },
        { 3, { 2, 2, 2 }, 3, { 2, 1, 2 }, { 0, 1, 1, 0 }, 0, 3, { 2, 1, 2 }, { 2, 3, 4, 5 } },
        { 3, { 2, 2, 2 }, 2, { 2, 1 }, { 1, 0 }, 1, 2, { 2, 2 }, { 2, 3, 4, 5 } },
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        int64_t xv8[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
        rlx_tensor *gx = ints_t(RLX_DTYPE_I32, g[i].xr, g[i].xd, xv8), *gi = test_tensor_i64(g[i].ir, g[i].id, g[i].iv);
        rlx_tensor *gw = ints_t(RLX_DTYPE_I32, g[i].wr, g[i].wd, g[i].wv);
        rlx_attr a = RLX_ATTR_I("batch_dims", g[i].b);
        char nm[64];
        snprintf(nm, sizeof nm, "gathernd doc %zu", i);
        check1(nm, "GatherND", g[i].b ? 12 : 11, 2, (const rlx_tensor *[]){ gx, gi }, 0, g[i].b ? 1 : 0, &a, gw);
        free_all((rlx_tensor *[]){ gx, gi, gw }, 3);
    }
    /* random GatherND with batch dims */
    for (int t = 0; t < 20; t++) {
        int b = (int)rnd(0, 1), r = (int)rnd(b + 1, 4), m = (int)rnd(1, r - b), q = (int)rnd(b + 1, b + 2);
        int64_t xd[MAXR], id[MAXR];
        for (int a = 0; a < r; a++) xd[a] = rnd(1, 3);
        for (int a = 0; a < q; a++) id[a] = a < b ? xd[a] : rnd(1, 3);
        id[q] = m;
        size_t ni = numel(q + 1, id);
        int64_t ivr[256];
        for (size_t i = 0; i < ni; i++) {
            int j = (int)(i % (size_t)m);
            ivr[i] = rnd(-xd[b + j], xd[b + j] - 1);
        }
        rlx_tensor *xr = rand_any(RLX_DTYPE_F64, r, xd), *ir = test_tensor_i64(q + 1, id, ivr);
        int orank = q + r - m - b;
        int64_t od[MAXR];
        for (int a = 0; a < q; a++) od[a] = id[a];
        for (int a = b + m; a < r; a++) od[q + a - b - m] = xd[a];
        rlx_tensor *wr = test_tensor(RLX_DTYPE_F64, orank, od);
        size_t n = numel(orank, od);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR], xc[MAXR], ic[MAXR];
            unflat(i, orank, od, c);
            for (int a = 0; a < b; a++) xc[a] = c[a];
            for (int a = 0; a < q; a++) ic[a] = c[a];
            for (int j = 0; j < m; j++) {
                ic[q] = j;
                int64_t v = ivr[flat(q + 1, id, ic)];
                xc[b + j] = v < 0 ? v + xd[b + j] : v;
            }
            for (int a = b + m; a < r; a++) xc[a] = c[q + a - b - m];
            memcpy(ebytes(wr, i), ebytes(xr, flat(r, xd, xc)), 8);
        }
        rlx_attr a = RLX_ATTR_I("batch_dims", b);
        char nm[64];
        snprintf(nm, sizeof nm, "gathernd random %d (b %d, m %d)", t, b, m);
        check1(nm, "GatherND", 13, 2, (const rlx_tensor *[]){ xr, ir }, 0, 1, &a, wr);
        free_all((rlx_tensor *[]){ xr, ir, wr }, 3);
    }
}

/* ------------------------------------------------------------ ScatterElements, ScatterND */

static void test_scatter(void) {
    /* ScatterElements doc: data 3x3 zeros-free, axis 0 */
    int64_t d[2] = { 3, 3 }, id[2] = { 2, 3 }, iv[6] = { 1, 0, 2, 0, 2, 1 };
    int64_t xv[9] = { 9, 9, 9, 9, 9, 9, 9, 9, 9 }, uv[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t wv[9] = { 4, 2, 9, 1, 9, 6, 9, 5, 3 };
    rlx_tensor *x = ints_t(RLX_DTYPE_F32, 2, d, xv), *idx = test_tensor_i64(2, id, iv), *u = ints_t(RLX_DTYPE_F32, 2, id, uv);
    rlx_tensor *want = ints_t(RLX_DTYPE_F32, 2, d, wv);
    check1("scatterelements doc", "ScatterElements", 11, 3, (const rlx_tensor *[]){ x, idx, u }, 0, 0, NULL, want);
    free_all((rlx_tensor *[]){ x, idx, u, want }, 4);
    /* reductions with duplicate indices, negative axis and indices, i64 and f32 (small integers: exact) */
    static const char *reds[] = { "add", "mul", "max", "min" };
    for (int t = 0; t < 24; t++) {
        int red = t % 4, r = (int)rnd(1, 3), ax = (int)rnd(0, r - 1);
        rlx_dtype dt = t % 2 ? RLX_DTYPE_I64 : RLX_DTYPE_F32;
        int64_t xd[MAXR], ud[MAXR];
        for (int a = 0; a < r; a++) xd[a] = rnd(1, 3), ud[a] = a == ax ? rnd(1, 5) : rnd(1, xd[a]);
        size_t nx = numel(r, xd), nu = numel(r, ud);
        int64_t xv2[64], uv2[64], iv2[64];
        for (size_t i = 0; i < nx; i++) xv2[i] = rnd(-4, 4);
        for (size_t i = 0; i < nu; i++) uv2[i] = rnd(-3, 3), iv2[i] = rnd(-xd[ax], xd[ax] - 1);
        rlx_tensor *xr = ints_t(dt, r, xd, xv2), *ir = test_tensor_i64(r, ud, iv2), *ur = ints_t(dt, r, ud, uv2);
        int64_t wv2[64];
        memcpy(wv2, xv2, nx * sizeof *xv2);
        for (size_t i = 0; i < nu; i++) {
            int64_t c[MAXR];
            unflat(i, r, ud, c);
            c[ax] = iv2[i] < 0 ? iv2[i] + xd[ax] : iv2[i];
            int64_t *w = &wv2[flat(r, xd, c)];
            *w = red == 0 ? *w + uv2[i] : red == 1 ? *w * uv2[i] : red == 2 ? (*w > uv2[i] ? *w : uv2[i]) : (*w < uv2[i] ? *w : uv2[i]);
        }
        rlx_tensor *wr = ints_t(dt, r, xd, wv2);
        rlx_attr at[2] = { RLX_ATTR_I("axis", t % 3 ? ax : ax - r), RLX_ATTR_S("reduction", reds[red]) };
        char nm[64];
        snprintf(nm, sizeof nm, "scatterelements %s %d", reds[red], t);
        check1(nm, "ScatterElements", 18, 3, (const rlx_tensor *[]){ xr, ir, ur }, 0, 2, at, wr);
        if (red < 2) check1(nm, "ScatterElements", 16, 3, (const rlx_tensor *[]){ xr, ir, ur }, 0, 2, at, wr);
        else check_fails(nm, "ScatterElements", 16, 3, (const rlx_tensor *[]){ xr, ir, ur }, 0, 2, at, "reduction");
        free_all((rlx_tensor *[]){ xr, ir, ur, wr }, 4);
    }
    /* ScatterND doc: data 4x4x4, indices [[0],[2]], updates 2x4x4 */
    {
        int64_t xd[3] = { 4, 4, 4 }, idd[2] = { 2, 1 }, ivv[2] = { 0, 2 }, ud[3] = { 2, 4, 4 };
        rlx_tensor *xr = rand_any(RLX_DTYPE_I32, 3, xd), *ir = test_tensor_i64(2, idd, ivv), *ur = rand_any(RLX_DTYPE_I32, 3, ud);
        rlx_tensor *wr = test_tensor(RLX_DTYPE_I32, 3, xd);
        memcpy(wr->data, xr->data, xr->nbytes);
        memcpy((int32_t *)wr->data, ur->data, 16 * 4);
        memcpy((int32_t *)wr->data + 32, (int32_t *)ur->data + 16, 16 * 4);
        check1("scatternd doc", "ScatterND", 11, 3, (const rlx_tensor *[]){ xr, ir, ur }, 0, 0, NULL, wr);
        free_all((rlx_tensor *[]){ xr, ir, ur, wr }, 4);
    }
    /* ScatterND add with duplicates: data [1..8], indices [[4],[3],[1],[7],[3]] */
    {
        int64_t xd[1] = { 8 }, xv3[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, idd[2] = { 5, 1 }, ivv[5] = { 4, 3, 1, 7, -5 };
        int64_t ud[1] = { 5 }, uv3[5] = { 9, 10, 11, 12, 13 }, wv3[8] = { 1, 13, 3, 4 + 10 + 13, 5 + 9, 6, 7, 8 + 12 };
        rlx_tensor *xr = ints_t(RLX_DTYPE_I32, 1, xd, xv3), *ir = test_tensor_i64(2, idd, ivv), *ur = ints_t(RLX_DTYPE_I32, 1, ud, uv3);
        rlx_tensor *wr = ints_t(RLX_DTYPE_I32, 1, xd, wv3);
        rlx_attr a = RLX_ATTR_S("reduction", "add");
        check1("scatternd add duplicates", "ScatterND", 16, 3, (const rlx_tensor *[]){ xr, ir, ur }, 0, 1, &a, wr);
        free_all((rlx_tensor *[]){ xr, ir, ur, wr }, 4);
    }
}

/* ------------------------------------------------------------ OneHot, Trilu, CumSum */

static void test_onehot_trilu_cumsum(void) {
    /* OneHot: indices [[1, 9], [-1, 10]], depth 10, values [off=2, on=5] */
    int64_t id[2] = { 2, 2 }, iv[4] = { 1, 9, -1, 10 };
    rlx_tensor *idx = test_tensor_i64(2, id, iv), *dep = scalar64(10);
    rlx_tensor *vals = ints_t(RLX_DTYPE_F32, 1, (int64_t[]){ 2 }, (int64_t[]){ 2, 5 });
    for (int axis = -3; axis <= 2; axis++) {
        for (int opset = 9; opset <= 11; opset += 2) {
            int ax = axis < 0 ? axis + 3 : axis;
            int64_t od[3];
            for (int a = 0, j = 0; a < 3; a++) od[a] = a == ax ? 10 : id[j++];
            rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 3, od);
            for (int i = 0; i < 40; i++) {
                int64_t c[3], ic[2];
                unflat((size_t)i, 3, od, c);
                for (int a = 0, j = 0; a < 3; a++)
                    if (a != ax) ic[j++] = c[a];
                int64_t v = iv[ic[0] * 2 + ic[1]];
                if (v < 0 && opset >= 11) v += 10; /* negative indices from OneHot-11 */
                ((float *)want->data)[i] = v == c[ax] ? 5.0f : 2.0f;
            }
            rlx_attr a = RLX_ATTR_I("axis", axis);
            char nm[64];
            snprintf(nm, sizeof nm, "onehot axis %d", axis);
            check1(nm, "OneHot", opset, 3, (const rlx_tensor *[]){ idx, dep, vals }, 2, 1, &a, want);
            rlx_tensor_destroy(want);
        }
    }
    /* a depth that is not a count from 1 to 4e18 is named as such, constant
     * (load) or fed (run); 5e18 and 0.5 were said to be 'not positive' */
    for (int t = 0; t < 3; t++) {
        double bad = t == 0 ? 5e18 : t == 1 ? 0.5 : NAN;
        rlx_tensor *d = NULL;
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, NULL, 0, &d));
        *(float *)d->data = (float)bad;
        const char *want = t == 0 ? "depth 5e+18 is outside [1, 4e18)" : t == 1 ? "depth 0.5 is outside [1, 4e18)"
                                                                         : "depth nan is outside [1, 4e18)";
        check_fails("onehot bad constant depth", "OneHot", 11, 3, (const rlx_tensor *[]){ idx, d, vals }, 2 | 4, 0, NULL,
                    want);
        rlx_tensor **out = NULL;
        rlx_status st = run_mode("OneHot", 11, M_PLAN, 3, (const rlx_tensor *[]){ idx, d, vals }, 4, 1, 0, NULL, &out);
        CHECK_MSG(st == RLX_ERR_INVALID_ARGUMENT && strstr(rlx_last_error(), want), "onehot fed depth %g: %s: %s", bad,
                  rlx_status_name(st), rlx_last_error());
        if (out) rlx_tensor_destroy(out[0]);
        free(out);
        rlx_tensor_destroy(d);
    }
    free_all((rlx_tensor *[]){ idx, dep, vals }, 3);

    /* Trilu: random shapes and k, upper and lower */
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(2, 4);
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(t == 5 ? 0 : 1, 5);
        int64_t kk = t % 7 == 0 ? (t % 2 ? INT64_MAX : INT64_MIN) : rnd(-6, 6);
        bool upper = t % 2 == 0, has_k = t % 5 != 0;
        if (!has_k) kk = 0;
        rlx_dtype dt = k_all_dtypes[(t * 3) % N_DTYPES];
        rlx_tensor *x = rand_any(dt, r, d), *tk = scalar64(kk), *want = test_tensor(dt, r, d);
        size_t n = numel(r, d), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR];
            unflat(i, r, d, c);
            int64_t row = c[r - 2], col = c[r - 1];
            /* lower keeps col <= row + k, upper keeps col >= row + k (in double: no overflow) */
            bool keep = upper ? (double)col >= (double)row + (double)kk : (double)col <= (double)row + (double)kk;
            if (keep) memcpy(ebytes(want, i), ebytes(x, i), es);
        }
        rlx_attr a = RLX_ATTR_I("upper", upper);
        char nm[64];
        snprintf(nm, sizeof nm, "trilu %d (%s, k %lld)", t, upper ? "upper" : "lower", (long long)kk);
        size_t na = (upper && t % 3 == 0) ? 0 : 1; /* upper = 1 is the default */
        if (has_k) check1(nm, "Trilu", 14, 2, (const rlx_tensor *[]){ x, tk }, 2, na, &a, want);
        else check1(nm, "Trilu", 14, 1, (const rlx_tensor *[]){ x }, 0, na, &a, want);
        free_all((rlx_tensor *[]){ x, tk, want }, 3);
    }

    /* CumSum: naive prefix sums (O(n^2)) against the running sum */
    for (int t = 0; t < 32; t++) {
        int r = (int)rnd(1, 3), ax = (int)rnd(0, r - 1);
        bool excl = t & 1, rev = (t >> 1) & 1;
        rlx_dtype dts[4] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_I64, RLX_DTYPE_F64 };
        rlx_dtype dt = dts[(t >> 2) % 4];
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(1, 5);
        rlx_tensor *x = test_tensor_random(dt, r, d, -10, 10), *want = test_tensor(dt, r, d);
        size_t n = numel(r, d);
        for (size_t i = 0; i < n; i++) {
            int64_t c[MAXR];
            unflat(i, r, d, c);
            double acc = 0;
            int64_t me = c[ax];
            for (int64_t j = 0; j < d[ax]; j++) {
                bool in = rev ? (excl ? j > me : j >= me) : (excl ? j < me : j <= me);
                if (!in) continue;
                c[ax] = j;
                size_t p = flat(r, d, c);
                acc += dt == RLX_DTYPE_F32 ? ((float *)x->data)[p] : dt == RLX_DTYPE_F64 ? ((double *)x->data)[p]
                       : dt == RLX_DTYPE_I32 ? ((int32_t *)x->data)[p] : (double)((int64_t *)x->data)[p];
            }
            if (dt == RLX_DTYPE_F32) ((float *)want->data)[i] = (float)acc;
            else if (dt == RLX_DTYPE_F64) ((double *)want->data)[i] = acc;
            else if (dt == RLX_DTYPE_I32) ((int32_t *)want->data)[i] = (int32_t)acc;
            else ((int64_t *)want->data)[i] = (int64_t)acc;
        }
        rlx_tensor *ta = ints_t(t % 3 ? RLX_DTYPE_I64 : RLX_DTYPE_I32, 0, NULL, (int64_t[]){ t % 2 ? ax : ax - r });
        rlx_attr at[2] = { RLX_ATTR_I("exclusive", excl), RLX_ATTR_I("reverse", rev) };
        char nm[64];
        snprintf(nm, sizeof nm, "cumsum %d (%s excl %d rev %d)", t, rlx_dtype_name(dt), excl, rev);
        rlx_tensor *w1[1] = { want };
        /* f32 sums of up to 5 values of magnitude 10 in f32: within 1e-5 relative + absolute */
        check_modes_tol(nm, "CumSum", t % 2 ? 14 : 11, 2, (const rlx_tensor *[]){ x, ta }, 2, 2, at, 1, w1,
                        dt == RLX_DTYPE_F32 ? 1e-5 : 0);
        free_all((rlx_tensor *[]){ x, want, ta }, 3);
    }
}

/* ------------------------------------------------------------ NonZero, Compress, Unique */

static void test_nonzero_compress_unique(void) {
    for (int t = 0; t < 12; t++) {
        int r = (int)rnd(0, 3);
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(t == 2 ? 0 : 1, 4);
        rlx_dtype dt = t % 3 == 0 ? RLX_DTYPE_BOOL : t % 3 == 1 ? RLX_DTYPE_F32 : RLX_DTYPE_I32;
        rlx_tensor *x = test_tensor(dt, r, d);
        size_t n = numel(r, d), cnt = 0;
        for (size_t i = 0; i < n; i++) {
            bool nz = rnd(0, 2) != 0;
            if (dt == RLX_DTYPE_BOOL) ((uint8_t *)x->data)[i] = nz;
            else if (dt == RLX_DTYPE_F32) ((float *)x->data)[i] = nz ? test_rand_uniform(0.5f, 2) : (rnd(0, 1) ? -0.0f : 0.0f);
            else ((int32_t *)x->data)[i] = nz ? (int32_t)rnd(1, 9) : 0;
            cnt += nz;
        }
        int64_t wd[2] = { r ? r : 1, (int64_t)cnt };
        rlx_tensor *want = test_tensor(RLX_DTYPE_I64, 2, wd);
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            bool nz = dt == RLX_DTYPE_BOOL ? ((uint8_t *)x->data)[i] != 0
                      : dt == RLX_DTYPE_F32 ? ((float *)x->data)[i] != 0 : ((int32_t *)x->data)[i] != 0;
            if (!nz) continue;
            int64_t c[MAXR] = { 0 };
            unflat(i, r, d, c);
            for (int a = 0; a < (r ? r : 1); a++) ((int64_t *)want->data)[(size_t)a * cnt + j] = c[a];
            j++;
        }
        char nm[64];
        snprintf(nm, sizeof nm, "nonzero %d (rank %d)", t, r);
        check1(nm, "NonZero", t % 2 ? 13 : 9, 1, (const rlx_tensor *[]){ x }, 0, 0, NULL, want);
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
    /* Compress: doc examples on [[1,2],[3,4],[5,6]] */
    int64_t d[2] = { 3, 2 }, xv[6] = { 1, 2, 3, 4, 5, 6 };
    rlx_tensor *x = ints_t(RLX_DTYPE_I64, 2, d, xv);
    struct { int has_axis; int64_t axis; int nc; int64_t c[6]; int wr; int64_t wd[2]; int64_t wv[6]; } cc[] = {
        { 1, 0, 3, { 0, 1, 1 }, 2, { 2, 2 }, { 3, 4, 5, 6 } },
        { 1, 1, 2, { 0, 1 }, 2, { 3, 1 }, { 2, 4, 6 } },
        { 1, -1, 2, { 0, 1 }, 2, { 3, 1 }, { 2, 4, 6 } },
        { 0, 0, 5, { 0, 1, 0, 0, 1 }, 1, { 2 }, { 2, 5 } },
        { 1, 0, 2, { 1, 0 }, 2, { 1, 2 }, { 1, 2 } },       /* condition shorter than the axis */
        { 1, 0, 3, { 0, 0, 0 }, 2, { 0, 2 }, { 0 } },       /* nothing kept */
    };
    for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++) {
        int64_t cd = cc[i].nc;
        rlx_tensor *cond = ints_t(RLX_DTYPE_BOOL, 1, &cd, cc[i].c), *want = ints_t(RLX_DTYPE_I64, cc[i].wr, cc[i].wd, cc[i].wv);
        rlx_attr a = RLX_ATTR_I("axis", cc[i].axis);
        char nm[64];
        snprintf(nm, sizeof nm, "compress case %zu", i);
        check1(nm, "Compress", i % 2 ? 11 : 9, 2, (const rlx_tensor *[]){ x, cond }, 2, (size_t)cc[i].has_axis, &a, want);
        free_all((rlx_tensor *[]){ cond, want }, 2);
    }
    rlx_tensor *cl = ints_t(RLX_DTYPE_BOOL, 1, (int64_t[]){ 4 }, (int64_t[]){ 0, 0, 0, 1 });
    rlx_attr a0 = RLX_ATTR_I("axis", 0);
    check_fails("compress condition too long", "Compress", 11, 2, (const rlx_tensor *[]){ x, cl }, 2, 1, &a0, "beyond");
    free_all((rlx_tensor *[]){ x, cl }, 2);

    /* Unique: doc examples */
    {
        int64_t xd = 6, xv2[6] = { 2, 1, 1, 3, 4, 3 };
        rlx_tensor *ux = ints_t(RLX_DTYPE_F32, 1, &xd, xv2);
        int64_t u4 = 4;
        /* sorted */
        rlx_tensor *w[4] = { ints_t(RLX_DTYPE_F32, 1, &u4, (int64_t[]){ 1, 2, 3, 4 }), vec64(4, (int64_t[]){ 1, 0, 3, 4 }),
                             vec64(6, (int64_t[]){ 1, 0, 0, 2, 3, 2 }), vec64(4, (int64_t[]){ 2, 1, 2, 1 }) };
        check_modes("unique sorted", "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 0, NULL, 4, w);
        free_all(w, 4);
        /* not sorted: first-occurrence order */
        rlx_tensor *w2[4] = { ints_t(RLX_DTYPE_F32, 1, &u4, (int64_t[]){ 2, 1, 3, 4 }), vec64(4, (int64_t[]){ 0, 1, 3, 4 }),
                              vec64(6, (int64_t[]){ 0, 1, 1, 2, 3, 2 }), vec64(4, (int64_t[]){ 1, 2, 2, 1 }) };
        rlx_attr ns = RLX_ATTR_I("sorted", 0);
        check_modes("unique unsorted", "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 1, &ns, 4, w2);
        /* only Y */
        check_modes("unique one output", "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 1, &ns, 1, w2);
        free_all(w2, 4);
        rlx_tensor_destroy(ux);
    }
    {
        /* with axis 0: rows [[1,0,0],[1,0,0],[2,3,4]] */
        int64_t xd[2] = { 3, 3 }, xv2[9] = { 1, 0, 0, 1, 0, 0, 2, 3, 4 }, wd[2] = { 2, 3 };
        rlx_tensor *ux = ints_t(RLX_DTYPE_I64, 2, xd, xv2);
        rlx_tensor *w[4] = { ints_t(RLX_DTYPE_I64, 2, wd, (int64_t[]){ 1, 0, 0, 2, 3, 4 }), vec64(2, (int64_t[]){ 0, 2 }),
                             vec64(3, (int64_t[]){ 0, 0, 1 }), vec64(2, (int64_t[]){ 2, 1 }) };
        rlx_attr ax = RLX_ATTR_I("axis", 0);
        check_modes("unique axis 0", "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 1, &ax, 4, w);
        free_all(w, 4);
        /* axis -1: the columns (1,1,2), (0,0,3), (0,0,4) are distinct; sorted: c1, c2, c0 */
        int64_t wd3[2] = { 3, 3 };
        rlx_tensor *w3[4] = { ints_t(RLX_DTYPE_I64, 2, wd3, (int64_t[]){ 0, 0, 1, 0, 0, 1, 3, 4, 2 }),
                              vec64(3, (int64_t[]){ 1, 2, 0 }), vec64(3, (int64_t[]){ 2, 0, 1 }), vec64(3, (int64_t[]){ 1, 1, 1 }) };
        rlx_attr axn = RLX_ATTR_I("axis", -1);
        check_modes("unique axis -1", "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 1, &axn, 4, w3);
        free_all(w3, 4);
        rlx_tensor_destroy(ux);
    }
    /* random: sorted unique of small integers against counting */
    for (int t = 0; t < 10; t++) {
        int64_t n = rnd(1, 30);
        int64_t v[30], present[11] = { 0 }, firsts[11];
        for (int64_t i = 0; i < n; i++) {
            v[i] = rnd(-5, 5);
            if (!present[v[i] + 5]++) firsts[v[i] + 5] = i;
        }
        int64_t y[11], yi[11], yc[11], inv[30], u = 0, pos[11];
        for (int k = 0; k < 11; k++)
            if (present[k]) pos[k] = u, y[u] = k - 5, yi[u] = firsts[k], yc[u++] = present[k];
        for (int64_t i = 0; i < n; i++) inv[i] = pos[v[i] + 5];
        rlx_tensor *ux = ints_t(RLX_DTYPE_I32, 1, &n, v);
        rlx_tensor *w[4] = { ints_t(RLX_DTYPE_I32, 1, &u, y), vec64((size_t)u, yi), vec64((size_t)n, inv), vec64((size_t)u, yc) };
        char nm[64];
        snprintf(nm, sizeof nm, "unique random %d", t);
        check_modes(nm, "Unique", 11, 1, (const rlx_tensor *[]){ ux }, 0, 0, NULL, 4, w);
        free_all(w, 4);
        rlx_tensor_destroy(ux);
    }
}

/* ------------------------------------------------------------ DepthToSpace, SpaceToDepth, ReverseSequence */

static void test_depth_space_reverse(void) {
    for (int t = 0; t < 12; t++) {
        int64_t b = rnd(1, 3), n = rnd(1, 2), c = rnd(1, 3), h = rnd(1, 3), w = rnd(1, 3);
        bool crd = t % 2;
        int64_t xd[4] = { n, c * b * b, h, w }, od[4] = { n, c, h * b, w * b };
        rlx_dtype dt = k_all_dtypes[(t * 5) % N_DTYPES];
        rlx_tensor *x = rand_any(dt, 4, xd), *want = test_tensor(dt, 4, od);
        size_t es = rlx_dtype_size(dt);
        /* the spec's index formulas */
        for (int64_t in = 0; in < n; in++)
            for (int64_t ic = 0; ic < c; ic++)
                for (int64_t y = 0; y < h * b; y++)
                    for (int64_t z = 0; z < w * b; z++) {
                        int64_t i = y % b, j = z % b;
                        int64_t src_c = crd ? ic * b * b + i * b + j : (i * b + j) * c + ic;
                        int64_t oc[4] = { in, ic, y, z }, xc[4] = { in, src_c, y / b, z / b };
                        memcpy(ebytes(want, flat(4, od, oc)), ebytes(x, flat(4, xd, xc)), es);
                    }
        rlx_attr at[2] = { RLX_ATTR_I("blocksize", b), RLX_ATTR_S("mode", crd ? "CRD" : "DCR") };
        char nm[64];
        snprintf(nm, sizeof nm, "depthtospace %d (%s, b %lld)", t, crd ? "CRD" : "DCR", (long long)b);
        check1(nm, "DepthToSpace", crd ? 13 : (t % 4 ? 11 : 7), 1, (const rlx_tensor *[]){ x }, 0, crd ? 2 : 1, at, want);
        /* SpaceToDepth inverts DCR */
        if (!crd) {
            snprintf(nm, sizeof nm, "spacetodepth %d", t);
            check1(nm, "SpaceToDepth", 13, 1, (const rlx_tensor *[]){ want }, 0, 1, at, x);
        }
        free_all((rlx_tensor *[]){ x, want }, 2);
    }
    int64_t xd[4] = { 1, 5, 2, 2 };
    rlx_tensor *x = rand_any(RLX_DTYPE_F32, 4, xd);
    rlx_attr b2 = RLX_ATTR_I("blocksize", 2);
    check_fails("depthtospace channels", "DepthToSpace", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &b2, "divisible");
    /* a blocksize above the bound is named as such (the message said 'must be >= 1' of 2^40) */
    rlx_attr bhuge = RLX_ATTR_I("blocksize", 1LL << 40), bzero = RLX_ATTR_I("blocksize", 0);
    check_fails("spacetodepth huge blocksize", "SpaceToDepth", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &bhuge,
                "blocksize 1099511627776 is outside [1, 1048576]");
    check_fails("depthtospace zero blocksize", "DepthToSpace", 13, 1, (const rlx_tensor *[]){ x }, 0, 1, &bzero,
                "blocksize 0 is outside [1, 1048576]");
    rlx_tensor_destroy(x);

    /* ReverseSequence: doc examples, time-major and batch-major */
    for (int t = 0; t < 8; t++) {
        bool batch_major = t % 2;
        int64_t B = rnd(1, 4), T = rnd(1, 5), F = rnd(1, 3);
        int64_t xd2[3] = { batch_major ? B : T, batch_major ? T : B, F }, lens[4];
        for (int64_t i = 0; i < B; i++) lens[i] = rnd(0, T);
        rlx_tensor *xr = rand_any(RLX_DTYPE_U16, 3, xd2), *tl = vec64((size_t)B, lens), *wr = test_tensor(RLX_DTYPE_U16, 3, xd2);
        for (int64_t bi = 0; bi < B; bi++)
            for (int64_t ti = 0; ti < T; ti++)
                for (int64_t f = 0; f < F; f++) {
                    int64_t src_t = ti < lens[bi] ? lens[bi] - 1 - ti : ti;
                    int64_t oc[3] = { batch_major ? bi : ti, batch_major ? ti : bi, f };
                    int64_t sc[3] = { batch_major ? bi : src_t, batch_major ? src_t : bi, f };
                    memcpy(ebytes(wr, flat(3, xd2, oc)), ebytes(xr, flat(3, xd2, sc)), 2);
                }
        rlx_attr at[2] = { RLX_ATTR_I("batch_axis", batch_major ? 0 : 1), RLX_ATTR_I("time_axis", batch_major ? 1 : 0) };
        char nm[64];
        snprintf(nm, sizeof nm, "reversesequence %d", t);
        check1(nm, "ReverseSequence", 10, 2, (const rlx_tensor *[]){ xr, tl }, 0, t < 2 ? (size_t)(batch_major ? 2 : 0) : 2, at, wr);
        free_all((rlx_tensor *[]){ xr, tl, wr }, 3);
    }
}

/* ------------------------------------------------------------ TopK */

/* Expected TopK by repeated selection: the best not-yet-taken element, the
 * lowest index among equals. */
static void test_topk(void) {
    for (int t = 0; t < 30; t++) {
        int r = (int)rnd(1, 3), ax = (int)rnd(0, r - 1);
        int64_t d[MAXR];
        for (int a = 0; a < r; a++) d[a] = rnd(1, 6);
        int64_t K = rnd(0, d[ax]);
        int version = t % 3 == 0 ? 1 : t % 3 == 1 ? 10 : 11;
        bool largest = version < 11 || t % 2;
        rlx_dtype dt = t % 4 == 0 ? RLX_DTYPE_I64 : t % 4 == 1 ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
        rlx_tensor *x = test_tensor(dt, r, d);
        size_t n = numel(r, d);
        for (size_t i = 0; i < n; i++) { /* few distinct values: many ties */
            int64_t v = rnd(-3, 3);
            if (dt == RLX_DTYPE_I64) ((int64_t *)x->data)[i] = v;
            else if (dt == RLX_DTYPE_I32) ((int32_t *)x->data)[i] = (int32_t)v;
            else ((float *)x->data)[i] = (float)v * 0.5f;
        }
        int64_t od[MAXR];
        memcpy(od, d, sizeof od);
        od[ax] = K;
        rlx_tensor *wv = test_tensor(dt, r, od), *wi = test_tensor(RLX_DTYPE_I64, r, od);
        size_t m = numel(r, od), es = rlx_dtype_size(dt);
        for (size_t i = 0; i < m; i++) {
            int64_t c[MAXR];
            unflat(i, r, od, c);
            int64_t rank = c[ax];
            bool taken[8] = { false };
            int64_t best = -1;
            for (int64_t step = 0; step <= rank; step++) {
                best = -1;
                double bv = 0;
                for (int64_t j = 0; j < d[ax]; j++) {
                    if (taken[j]) continue;
                    c[ax] = j;
                    double v = dt == RLX_DTYPE_I64 ? (double)((int64_t *)x->data)[flat(r, d, c)]
                               : dt == RLX_DTYPE_I32 ? ((int32_t *)x->data)[flat(r, d, c)] : ((float *)x->data)[flat(r, d, c)];
                    if (best < 0 || (largest ? v > bv : v < bv)) best = j, bv = v;
                }
                taken[best] = true;
            }
            c[ax] = best;
            memcpy(ebytes(wv, i), ebytes(x, flat(r, d, c)), es);
            ((int64_t *)wi->data)[i] = best;
        }
        rlx_tensor *tk = vec64(1, &K);
        /* version 1: axis and k; 10: axis; 11: axis and largest (each version's attributes) */
        rlx_attr at[3] = { RLX_ATTR_I("axis", t % 2 ? ax - r : ax), RLX_ATTR_I("largest", largest), RLX_ATTR_I("k", K) };
        if (version == 1) at[1] = at[2];
        rlx_tensor *want[2] = { wv, wi };
        char nm[64];
        snprintf(nm, sizeof nm, "topk %d (v%d, %s)", t, version, largest ? "largest" : "smallest");
        if (version == 1) check_modes(nm, "TopK", 9, 1, (const rlx_tensor *[]){ x }, 0, 2, at, 2, want);
        else check_modes(nm, "TopK", version, 2, (const rlx_tensor *[]){ x, tk }, 2, version == 11 ? 2 : 1, at, 2, want);
        free_all((rlx_tensor *[]){ x, wv, wi, tk }, 4);
    }
    int64_t d[1] = { 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1), *tk = vec64(1, (int64_t[]){ 4 });
    check_fails_n("topk k too large", "TopK", 11, 2, (const rlx_tensor *[]){ x, tk }, 2, 0, NULL, 2, "exceeds");
    free_all((rlx_tensor *[]){ x, tk }, 2);
}

int main(void) {
    test_seed_from_env();
    test_shape_overflow_rule();
    test_reshape();
    test_flatten_identity();
    test_transpose_perm();
    test_param_outside_schema();
    test_attr_ids();
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
    test_infer_unknown();
    test_expand_tile();
    test_split();
    test_constant_of_shape_range();
    test_gather_elements_nd();
    test_scatter();
    test_onehot_trilu_cumsum();
    test_nonzero_compress_unique();
    test_depth_space_reverse();
    test_topk();
    TEST_MAIN_END();
}
