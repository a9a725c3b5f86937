#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdarg.h>
#include <time.h>

#include "test.h"
#include "test_node.h"

#include "base/log.h"
#include "ir/op.h"

int rlx_test_failures = 0;
int rlx_test_checks = 0;

static unsigned long g_expected_faults;

void test_expect_internal_faults(unsigned long n) { g_expected_faults += n; }

int test_internal_faults(void) {
    const char *first;
    unsigned long n = rlx_internal_fault_count(&first);
    if (n == g_expected_faults) return 0;
    fprintf(stderr, "%lu internal fault(s) in rlx where the test expected %lu (src/base/log.h), the first: %s\n", n,
            g_expected_faults, first);
    return 1;
}

static uint64_t g_state = 0x9E3779B97F4A7C15ull;

void test_seed(uint64_t seed) { g_state = seed ? seed : 0x9E3779B97F4A7C15ull; }

uint64_t test_seed_from_env(void) {
    const char *s = getenv("RLX_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 20261129ull;
    fprintf(stderr, "test seed: %llu (set RLX_TEST_SEED to change)\n", (unsigned long long)seed);
    test_seed(seed);
    return seed;
}

uint64_t test_rand_u64(void) {
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return g_state * 2685821657736338717ull;
}

float test_rand_uniform(float lo, float hi) {
    double u = (double)(test_rand_u64() >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

rlx_tensor *test_tensor(rlx_dtype dt, int rank, const int64_t *dims) {
    rlx_tensor *t = NULL;
    if (rlx_tensor_create(dt, dims, rank, &t) != RLX_OK) {
        fprintf(stderr, "test_tensor: %s\n", rlx_last_error());
        exit(2);
    }
    return t;
}

rlx_tensor *test_tensor_random(rlx_dtype dt, int rank, const int64_t *dims, float lo, float hi) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        float v = test_rand_uniform(lo, hi);
        switch (dt) {
        case RLX_DTYPE_F32: ((float *)t->data)[i] = v; break;
        case RLX_DTYPE_F64: ((double *)t->data)[i] = v; break;
        case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)floorf(v); break;
        case RLX_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)floorf(v); break;
        case RLX_DTYPE_U32: ((uint32_t *)t->data)[i] = (uint32_t)(int64_t)floorf(v); break; /* negatives wrap */
        case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v > (lo + hi) / 2; break;
        case RLX_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)floorf(v); break;
        default: fprintf(stderr, "test_tensor_random: dtype %s\n", rlx_dtype_name(dt)); exit(2);
        }
    }
    return t;
}

rlx_tensor *test_tensor_f32(int rank, const int64_t *dims, const float *values) {
    rlx_tensor *t = test_tensor(RLX_DTYPE_F32, rank, dims);
    memcpy(t->data, values, t->nbytes);
    return t;
}

rlx_tensor *test_tensor_i64(int rank, const int64_t *dims, const int64_t *values) {
    rlx_tensor *t = test_tensor(RLX_DTYPE_I64, rank, dims);
    memcpy(t->data, values, t->nbytes);
    return t;
}

static double get_d(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case RLX_DTYPE_BOOL: case RLX_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    default: return NAN;
    }
}

static int same_shape(const rlx_tensor *a, const rlx_tensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

double test_thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int test_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double test_max_abs_diff(const rlx_tensor *a, const rlx_tensor *b) {
    if (!same_shape(a, b)) return -1;
    double m = 0;
    size_t n = rlx_tensor_numel(a);
    for (size_t i = 0; i < n; i++) {
        double x = get_d(a, i), y = get_d(b, i);
        if (isnan(x) && isnan(y)) continue;
        if (isnan(x) || isnan(y)) return NAN;
        if (x == y) continue; /* equal infinities */
        double d = fabs(x - y);
        if (d > m) m = d;
    }
    return m;
}

int test_allclose(const rlx_tensor *a, const rlx_tensor *b, double rtol, double atol) {
    if (!same_shape(a, b)) {
        fprintf(stderr, "allclose: shape or dtype differs (%s rank %d vs %s rank %d)\n", rlx_dtype_name(a->dtype),
                a->rank, rlx_dtype_name(b->dtype), b->rank);
        return 0;
    }
    size_t n = rlx_tensor_numel(a);
    for (size_t i = 0; i < n; i++) {
        double x = get_d(a, i), y = get_d(b, i);
        if (isnan(x) && isnan(y)) continue;
        if (x == y) continue;
        if (!(fabs(x - y) <= atol + rtol * fabs(y))) {
            fprintf(stderr, "allclose: element %zu: %.9g vs %.9g (rtol %g atol %g)\n", i, x, y, rtol, atol);
            return 0;
        }
    }
    return 1;
}

void test_report_counts(const char *report, const char *op, int *nodes, int *native) {
    *nodes = *native = -1;
    const char *p = report;
    size_t len = strlen(op);
    while (p && (p = strstr(p, op)) != NULL) {
        if (p > report && p[-1] == ' ' && p[len] == ' ') {
            int a = 0, b = 0;
            if (sscanf(p + len, "%d %d", &a, &b) == 2) {
                *nodes = a;
                *native = b;
                return;
            }
        }
        p += len;
    }
}

rlx_status test_run_op(const char *op, int64_t opset, const char *device, int n_in, const rlx_tensor *const *in,
                       const int *in_is_const, int n_out, size_t n_attrs, const rlx_attr *attrs, rlx_tensor ***out) {
    rlx_session_options o = { .device = device };
    return test_run_op_opts(op, opset, &o, NULL, false, n_in, in, in_is_const, n_out, n_attrs, attrs, out);
}

rlx_status test_run_op_opts(const char *op, int64_t opset, const rlx_session_options *o, const rlx_options *options,
                            bool expect_native, int n_in,
                            const rlx_tensor *const *in, const int *in_is_const, int n_out, size_t n_attrs,
                            const rlx_attr *attrs, rlx_tensor ***out) {
    *out = NULL;
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_status st;
    char in_names[16][16], out_names[16][16];
    const char *in_ptrs[16], *out_ptrs[16], *feed_names[16];
    const rlx_tensor *feeds[16];
    int n_feeds = 0;
    if (n_in > 16 || n_out > 16) return RLX_ERR_INVALID_ARGUMENT;
    if ((st = rlx_model_create(opset, &m))) return st;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) {
            in_ptrs[i] = "";
            continue;
        }
        snprintf(in_names[i], sizeof in_names[i], "in%d", i);
        in_ptrs[i] = in_names[i];
        if (in_is_const && in_is_const[i]) {
            st = rlx_model_add_initializer(m, in_names[i], in[i]);
        } else {
            st = rlx_model_add_input(m, in_names[i], in[i]->dtype, in[i]->rank, in[i]->dims, NULL);
            feed_names[n_feeds] = in_names[i];
            feeds[n_feeds++] = in[i];
        }
        if (st) goto done;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(out_names[i], sizeof out_names[i], "out%d", i);
        out_ptrs[i] = out_names[i];
    }
    if ((st = rlx_model_add_node(m, op, "node0", (size_t)n_in, in_ptrs, (size_t)n_out, out_ptrs, n_attrs, attrs)))
        goto done;
    for (int i = 0; i < n_out; i++)
        if ((st = rlx_model_add_output(m, out_names[i]))) goto done;
    if ((st = rlx_model_finish(m))) goto done;
    if ((st = rlx_session_create_with_options(m, o, options, &s))) goto done;
    size_t n_got = 0;
    st = rlx_session_run(s, (size_t)n_feeds, feed_names, feeds, out, &n_got);
    if (!st && expect_native) {
        int nodes, native;
        test_report_counts(rlx_session_dispatch_report(s), op, &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "%s did not run natively on %s:\n%s", op, o->device ? o->device : "?",
                  rlx_session_dispatch_report(s));
    }
done:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return st;
}

void test_free_outputs(rlx_tensor **outs, int n) {
    if (!outs) return;
    for (int i = 0; i < n; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
}

rlx_options *test_options(const char *key_value, ...) {
    rlx_options *o = NULL;
    CHECK_OK(rlx_options_create(&o));
    if (!o) return NULL;
    va_list ap;
    va_start(ap, key_value);
    for (const char *kv = key_value; kv; kv = va_arg(ap, const char *)) CHECK_OK(rlx_options_parse(o, kv));
    va_end(ap);
    return o;
}

void test_options_add(rlx_options *o, const char *items) {
    for (const char *p = items; o && p && *p;) {
        size_t n = strcspn(p, ";");
        char kv[512];
        snprintf(kv, sizeof kv, "%.*s", (int)(n < sizeof kv ? n : sizeof kv - 1), p);
        CHECK_OK(rlx_options_parse(o, kv));
        p += n;
        if (*p == ';') p++;
    }
}

int test_have_gpu(void) {
    rlx_adapter_info *a = NULL;
    size_t n = 0;
    if (rlx_adapters_list(&a, &n) != RLX_OK) n = 0;
    free(a);
    /* tests/CMakeLists.txt passes the variable on, empty when it is unset:
     * only a non-empty value other than 0 requires a GPU */
    const char *req = getenv("RLX_TEST_REQUIRE_GPU");
    if (n == 0 && req && *req && strcmp(req, "0") != 0) {
        fprintf(stderr, "no GPU adapter, and RLX_TEST_REQUIRE_GPU is set\n");
        exit(1);
    }
    return n > 0;
}

/* ------------------------------------------------------------ bare nodes */

rlx_node test_make_node(const char *op, int version, int n_in, int n_out, rlx_node_attr *attrs, int n_attrs) {
    return test_make_node_in("", op, version, n_in, n_out, attrs, n_attrs);
}

rlx_node test_make_node_in(const char *domain, const char *op, int version, int n_in, int n_out,
                           rlx_node_attr *attrs, int n_attrs) {
    static int ids[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    static rlx_node_attr *prev_params;
    rlx_node n;
    memset(&n, 0, sizeof n);
    n.name = (char *)"node0";
    n.op_type = (char *)op;
    n.domain = (char *)domain;
    n.version = version;
    n.in = ids;
    n.n_in = n_in;
    n.out = ids;
    n.n_out = n_out;
    n.attrs = attrs;
    n.n_attrs = n_attrs;
    free(prev_params);
    n.def = rlx_op_find(domain, op);
    n.op = n.def ? n.def->id : RLX_OP_NONE;
    CHECK_OK(rlx_node_resolve_params(&n));
    prev_params = n.params;
    return n;
}
