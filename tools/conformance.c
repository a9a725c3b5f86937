/* `rlx conformance`: runs the ONNX backend test suite (the layout shipped in
 * the onnx wheel under onnx/backend/test/data) on the CPU and WebGPU
 * backends and reports pass / fail / unsupported per test.
 *
 * Layout read: <root>/<suite>/<test>/model.onnx with
 * test_data_set_N/input_K.pb and output_K.pb (serialized TensorProto, K the
 * position among non-initializer graph inputs / graph outputs), and
 * <root>/light/light_<model>.onnx with light_<model>_output_0.pb whose
 * inputs are the suite's dummy data: arange(n).reshape(shape) / n in f32.
 * Tolerance: the suite's defaults, rtol 1e-3 and atol 1e-7 (2e-3 for the
 * light densenet121, as the suite states). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Grows *arr (of *cap elements of `size` bytes) to hold at least `need`;
 * false when out of memory. */
static bool grow(void **arr, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *p = realloc(*arr, n * size);
    if (!p) return false;
    *arr = p;
    *cap = n;
    return true;
}

enum { R_PASS, R_FAIL, R_UNSUPPORTED, R_SKIP };
static const char *k_result_names[] = { "pass", "fail", "unsupported", "skip" };

#define MAX_DEV 2
#define DETAIL 200

typedef struct test_result {
    char suite[32];
    char name[160];
    bool in_scope; /* node test whose ops are all in issue #3's scope */
    int r[MAX_DEV];
    char detail[MAX_DEV][DETAIL];
    double secs[MAX_DEV];
} test_result;

/* The default-domain ops the conformance goal covers. */
static const char *const k_scope_ops[] = {
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
    "BatchNormalization", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike",
    "Ceil", "Celu", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "ConvInteger", "ConvTranspose", "Cos",
    "Cosh", "CumSum", "DepthToSpace", "DequantizeLinear", "Div", "Dropout", "DynamicQuantizeLinear", "Einsum", "Elu",
    "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "GRU", "Gather", "GatherElements", "GatherND", "Gelu",
    "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GroupNormalization",
    "HardSigmoid", "HardSwish", "Hardmax", "Identity", "If", "InstanceNormalization", "IsInf", "IsNaN", "LRN",
    "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Loop", "LpNormalization",
    "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool", "Mean", "MeanVarianceNormalization", "Min", "Mish", "Mod",
    "Mul", "Neg", "NonZero", "Not", "OneHot", "Or", "PRelu", "Pad", "Pow", "QLinearConv", "QLinearMatMul",
    "QuantizeLinear", "RNN", "Range", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize",
    "Round", "Scan", "ScatterElements", "ScatterND", "Selu", "Shape", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh",
    "Size", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum",
    "Tan", "Tanh", "ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Upsample", "Where", "Xor",
};

static bool op_in_scope(const char *op) {
    for (size_t i = 0; i < CLI_ARRAY_LEN(k_scope_ops); i++)
        if (strcmp(k_scope_ops[i], op) == 0) return true;
    return false;
}

/* ------------------------------------------------------------ comparison */

/* Compares got against want: exact for integers and bool, allclose for
 * floats (NaN equals NaN, equal infinities match). Writes a reason into
 * why and returns false on mismatch. */
static bool compare(const rlx_tensor *got, const rlx_tensor *want, double rtol, double atol, char *why, size_t cap,
                    double *max_err) {
    *max_err = 0;
    if (got->dtype != want->dtype) {
        snprintf(why, cap, "dtype %s, expected %s", rlx_dtype_name(got->dtype), rlx_dtype_name(want->dtype));
        return false;
    }
    if (got->rank != want->rank || memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)got->rank) != 0) {
        char a[96], b[96];
        size_t o = 0;
        a[0] = b[0] = 0;
        for (int i = 0; i < got->rank && o < sizeof a; i++) o += (size_t)snprintf(a + o, sizeof a - o, "%s%lld", i ? "," : "", (long long)got->dims[i]);
        o = 0;
        for (int i = 0; i < want->rank && o < sizeof b; i++) o += (size_t)snprintf(b + o, sizeof b - o, "%s%lld", i ? "," : "", (long long)want->dims[i]);
        snprintf(why, cap, "shape [%s], expected [%s]", a, b);
        return false;
    }
    size_t n = rlx_tensor_numel(want);
    if (want->dtype == RLX_DTYPE_STRING) { /* exact, element by element */
        const char *const *a = got->data, *const *b = want->data;
        for (size_t i = 0; i < n; i++)
            if (!a[i] || strcmp(a[i], b[i]) != 0) {
                snprintf(why, cap, "string element %zu is \"%.40s\", expected \"%.40s\"", i, a[i] ? a[i] : "(null)",
                         b[i]);
                return false;
            }
        return true;
    }
    bool is_float = want->dtype == RLX_DTYPE_F32 || want->dtype == RLX_DTYPE_F64;
    bool is_half = want->dtype == RLX_DTYPE_F16 || want->dtype == RLX_DTYPE_BF16;
    if (!is_float && !is_half) {
        if (memcmp(got->data, want->data, want->nbytes) != 0) {
            size_t es = rlx_dtype_size(want->dtype);
            size_t i = 0;
            while (i < n && memcmp((const char *)got->data + i * es, (const char *)want->data + i * es, es) == 0) i++;
            snprintf(why, cap, "element %zu differs (exact comparison for %s)", i, rlx_dtype_name(want->dtype));
            return false;
        }
        return true;
    }
    size_t worst = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        double x = cli_elem_f64(got, i), y = cli_elem_f64(want, i);
        if (isnan(x) && isnan(y)) continue;
        if (x == y) continue;
        double err = fabs(x - y);
        if (isnan(err)) err = INFINITY;
        if (err > *max_err) *max_err = err, worst = i;
        if (!(err <= atol + rtol * fabs(y))) ok = false;
    }
    if (!ok) {
        double x = cli_elem_f64(got, worst), y = cli_elem_f64(want, worst);
        snprintf(why, cap, "max abs err %.3g at element %zu (got %.6g, expected %.6g)", *max_err, worst, x, y);
    }
    return ok;
}

/* ------------------------------------------------------------ one test */

typedef struct test_case {
    char model[1024];
    char dir[1024];        /* folder with test_data_set_* (NULL-ish for light) */
    char light_out[1024];  /* light: expected output file */
    double rtol, atol;
} test_case;

static void free_tensors(rlx_tensor **t, size_t n) {
    if (!t) return;
    for (size_t i = 0; i < n; i++) rlx_tensor_destroy(t[i]);
    free(t);
}

/* Dummy input of the light models: arange(n).reshape(shape) / n, f32,
 * unknown dims taken as 1. */
static rlx_status light_input(const rlx_value_info *vi, rlx_tensor **out) {
    int64_t dims[RLX_MAX_RANK];
    for (int i = 0; i < vi->rank; i++) dims[i] = vi->dims[i] >= 0 ? vi->dims[i] : 1;
    rlx_status st = rlx_tensor_create(RLX_DTYPE_F32, dims, vi->rank < 0 ? 0 : vi->rank, out);
    if (st) return st;
    size_t n = rlx_tensor_numel(*out);
    float *p = (*out)->data;
    for (size_t i = 0; i < n; i++) p[i] = (float)((double)i / (double)n);
    return RLX_OK;
}

/* ------------------------------------------------------------ GPU fallbacks */

/* Per op type, over every test whose plan compiled on a non-CPU device: how
 * many nodes ran natively and how many ran on the CPU (a fallback; "eager":
 * the whole graph ran on the CPU because of control flow or data-dependent
 * shapes). Read from the session's dispatch report. */
typedef struct op_tally {
    char op[48];
    int native, fallback, eager;
    int tests; /* tests with at least one fallback node of this op */
} op_tally;

typedef struct tally {
    op_tally *ops;
    size_t n, cap;
} tally;

static op_tally *tally_find(tally *t, const char *op) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->ops[i].op, op) == 0) return &t->ops[i];
    if (!grow((void **)&t->ops, &t->cap, t->n + 1, sizeof *t->ops)) return NULL;
    op_tally *o = &t->ops[t->n++];
    memset(o, 0, sizeof *o);
    snprintf(o->op, sizeof o->op, "%s", op);
    return o;
}

/* Adds one dispatch report (rlx_session_dispatch_report's table). */
static void tally_report(tally *t, const char *report) {
    bool eager = strstr(report, "runs eagerly") != NULL;
    const char *p = strstr(report, "\n  op ");
    if (!p) return;
    p = strchr(p + 1, '\n');
    while (p && *p) {
        p++;
        char op[48];
        int nodes, native, fallback, removed, view;
        if (sscanf(p, "%47s %d %d %d %d %d", op, &nodes, &native, &fallback, &removed, &view) == 6) {
            op_tally *o = tally_find(t, op);
            if (o) {
                o->native += native;
                o->fallback += fallback;
                if (eager) o->eager += fallback;
                if (fallback) o->tests++;
            }
        }
        p = strchr(p, '\n');
    }
}

static int cmp_tally(const void *a, const void *b) {
    const op_tally *x = a, *y = b;
    if (x->fallback != y->fallback) return y->fallback - x->fallback;
    return strcmp(x->op, y->op);
}

static int classify(rlx_status st) {
    return st == RLX_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
}

static int run_case(const test_case *tc, const rlx_model *m, const char *device, char *detail, size_t cap,
                    tally *fb) {
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device };
    rlx_status st = rlx_session_create(m, &o, &s);
    if (st) {
        snprintf(detail, cap, "%s", rlx_last_error());
        return st == RLX_ERR_NO_ADAPTER ? R_SKIP : classify(st);
    }
    size_t n_in = rlx_model_num_inputs(m), n_out = rlx_model_num_outputs(m);
    int result = R_PASS;
    char **sets = NULL;
    size_t n_sets = 0;
    if (!tc->light_out[0]) {
        char **names;
        size_t n_names;
        if (!cli_list_dir(tc->dir, &names, &n_names)) {
            snprintf(detail, cap, "cannot list '%s': %s", tc->dir, strerror(errno));
            rlx_session_destroy(s);
            return R_FAIL;
        }
        sets = calloc(n_names + 1, sizeof *sets);
        for (size_t i = 0; i < n_names; i++) {
            if (sets && strncmp(names[i], "test_data_set_", 14) == 0) sets[n_sets++] = names[i];
            else free(names[i]);
        }
        free(names);
        if (sets && n_sets == 0) {
            /* nothing to compare: it passed (no set failed); a failure, as a
             * test folder whose model or data do not load */
            snprintf(detail, cap, "no test_data_set_* folder: no inputs and expected outputs to compare with");
            free(sets);
            rlx_session_destroy(s);
            return R_FAIL;
        }
    } else {
        sets = calloc(2, sizeof *sets);
        if (sets) sets[n_sets++] = strdup("light");
    }
    if (!sets) {
        rlx_session_destroy(s);
        snprintf(detail, cap, "out of memory");
        return R_FAIL;
    }
    for (size_t k = 0; k < n_sets && result == R_PASS; k++) {
        rlx_tensor **in = calloc(n_in + 1, sizeof *in), **want = calloc(n_out + 1, sizeof *want);
        const char **names = calloc(n_in + 1, sizeof *names);
        rlx_tensor **got = NULL;
        size_t n_got = 0;
        char path[2048];
        if (!in || !want || !names) {
            snprintf(detail, cap, "out of memory");
            result = R_FAIL;
            goto next;
        }
        for (size_t i = 0; i < n_in; i++) {
            rlx_value_info vi;
            rlx_model_input_info(m, i, &vi);
            names[i] = vi.name;
            if (tc->light_out[0]) {
                st = light_input(&vi, &in[i]);
            } else {
                snprintf(path, sizeof path, "%s/%s/input_%zu.pb", tc->dir, sets[k], i);
                st = rlx_tensor_load_onnx(path, &in[i]);
            }
            if (st) {
                snprintf(detail, cap, "input %zu: %s", i, rlx_last_error());
                result = classify(st);
                goto next;
            }
        }
        for (size_t i = 0; i < n_out; i++) {
            if (tc->light_out[0]) snprintf(path, sizeof path, "%s", tc->light_out);
            else snprintf(path, sizeof path, "%s/%s/output_%zu.pb", tc->dir, sets[k], i);
            st = rlx_tensor_load_onnx(path, &want[i]);
            if (st) {
                snprintf(detail, cap, "expected output %zu: %s", i, rlx_last_error());
                result = classify(st);
                goto next;
            }
        }
        st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)in, &got, &n_got);
        if (st) {
            snprintf(detail, cap, "%s", rlx_last_error());
            result = classify(st);
            goto next;
        }
        for (size_t i = 0; i < n_out; i++) {
            double err;
            char why[DETAIL];
            if (!compare(got[i], want[i], tc->rtol, tc->atol, why, sizeof why, &err)) {
                snprintf(detail, cap, "output %zu: %s", i, why);
                result = R_FAIL;
                break;
            }
        }
    next:
        free_tensors(in, n_in);
        free_tensors(want, n_out);
        free_tensors(got, n_got);
        free(names);
    }
    for (size_t k = 0; k < n_sets; k++) free(sets[k]);
    free(sets);
    if (fb && strcmp(device, "cpu") != 0) tally_report(fb, rlx_session_dispatch_report(s));
    rlx_session_destroy(s);
    return result;
}

/* ------------------------------------------------------------ the runner */

typedef struct runner {
    const char *root;
    const char *devices[MAX_DEV];
    int n_dev;
    const char *filter;
    bool verbose;
    test_result *res;
    size_t n_res, cap_res;
    tally fb; /* GPU fallbacks by op type */
} runner;

static bool model_ops_in_scope(const rlx_model *m) {
    rlx_model_summary ms;
    if (rlx_model_get_summary(m, &ms)) return false;
    for (size_t i = 0; i < ms.n_nodes; i++) {
        rlx_node_info nd;
        if (rlx_model_node_info(m, i, &nd) || !op_in_scope(nd.op)) return false;
    }
    return true;
}

/* Op types named in an unsupported-op message make a test out of scope when
 * the model cannot be imported. */
static bool message_names_out_of_scope_op(const char *msg) {
    /* types rlx does not support by design (float8, int4, sequences,
     * optionals; strings in ops other than data movement and
     * StringNormalizer: "element type string") and other operator domains
     * are out of scope */
    if (strstr(msg, "element type") || strstr(msg, "sequence type") || strstr(msg, "optional type") ||
        strstr(msg, "map type") || strstr(msg, "operator domains") || strstr(msg, "of domain"))
        return true;
    const char *p = strstr(msg, "op ");
    if (!p) return false;
    char op[64];
    if (sscanf(p + 3, "%63[A-Za-z0-9_.]", op) != 1) return false;
    return !op_in_scope(op);
}

/* Whether the model file names the training operator domain (its
 * opset_import): rlx expands those ops at import (src/import/onnx_training.c),
 * but they are another domain than the goal's, so such tests are out of
 * scope whatever ops the expansion produced. */
static bool model_uses_training_domain(const char *path) {
    static const char key[] = "ai.onnx.preview.training";
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[65536 + sizeof key];
    size_t keep = 0, n;
    bool found = false;
    while (!found && (n = fread(buf + keep, 1, sizeof buf - keep - 1, f)) > 0) {
        size_t len = keep + n;
        buf[len] = 0;
        for (size_t i = 0; i + sizeof key - 1 <= len && !found; i++)
            found = memcmp(buf + i, key, sizeof key - 1) == 0;
        keep = len < sizeof key - 1 ? len : sizeof key - 1;
        memmove(buf, buf + len - keep, keep);
    }
    fclose(f);
    return found;
}

static void run_one(runner *r, const char *suite, const char *name, const test_case *tc) {
    if (r->filter && !strstr(name, r->filter)) return;
    if (!grow((void **)&r->res, &r->cap_res, r->n_res + 1, sizeof *r->res)) return;
    test_result *t = &r->res[r->n_res++];
    memset(t, 0, sizeof *t);
    snprintf(t->suite, sizeof t->suite, "%s", suite);
    snprintf(t->name, sizeof t->name, "%s", name);
    rlx_model *m = NULL;
    rlx_status st = rlx_model_load_onnx(tc->model, &m);
    if (st) {
        const char *msg = rlx_last_error();
        const char *rel = strstr(msg, ": ") ? strstr(msg, ": ") + 2 : msg;
        t->in_scope = strcmp(suite, "node") == 0 && !message_names_out_of_scope_op(msg);
        for (int d = 0; d < r->n_dev; d++) {
            t->r[d] = classify(st);
            snprintf(t->detail[d], DETAIL, "%s", rel);
        }
    } else {
        t->in_scope = strcmp(suite, "node") == 0 && model_ops_in_scope(m) && !model_uses_training_domain(tc->model);
        for (int d = 0; d < r->n_dev; d++) {
            double t0 = rlx_now_seconds();
            t->r[d] = run_case(tc, m, r->devices[d], t->detail[d], DETAIL, &r->fb);
            t->secs[d] = rlx_now_seconds() - t0;
        }
    }
    rlx_model_destroy(m);
    if (r->verbose) {
        fprintf(stderr, "%-10s %-60s", suite, name);
        for (int d = 0; d < r->n_dev; d++) fprintf(stderr, " %s:%s", r->devices[d], k_result_names[t->r[d]]);
        fprintf(stderr, "\n");
    }
}

static void run_suite_dirs(runner *r, const char *suite) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", r->root, suite);
    char **names;
    size_t n;
    if (!cli_list_dir(dir, &names, &n)) return;
    for (size_t i = 0; i < n; i++) {
        test_case tc = { .rtol = 1e-3, .atol = 1e-7 };
        snprintf(tc.dir, sizeof tc.dir, "%s/%s", dir, names[i]);
        snprintf(tc.model, sizeof tc.model, "%s/model.onnx", tc.dir);
        if (cli_is_file(tc.model)) run_one(r, suite, names[i], &tc);
        free(names[i]);
    }
    free(names);
}

static void run_light(runner *r) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/light", r->root);
    char **names;
    size_t n;
    if (!cli_list_dir(dir, &names, &n)) return;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len > 5 && strcmp(names[i] + len - 5, ".onnx") == 0) {
            test_case tc = { .rtol = 1e-3, .atol = 1e-7 };
            snprintf(tc.model, sizeof tc.model, "%s/%s", dir, names[i]);
            snprintf(tc.light_out, sizeof tc.light_out, "%s/%.*s_output_0.pb", dir, (int)(len - 5), names[i]);
            if (strstr(names[i], "densenet121")) tc.rtol = 2e-3;
            snprintf(tc.dir, sizeof tc.dir, "%s", dir);
            char test_name[160];
            snprintf(test_name, sizeof test_name, "%.*s", (int)(len - 5), names[i]);
            run_one(r, "light", test_name, &tc);
        }
        free(names[i]);
    }
    free(names);
}

static const char *const k_suites[] = { "node", "simple", "pytorch-converted", "pytorch-operator", "light" };

static void md_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

static void write_report(const runner *r, FILE *f, const char *gpu_name) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    fprintf(f, "# ONNX backend-test conformance\n\n");
    fprintf(f, "Generated by `rlx conformance` (rlx %s) on %s from the test data of the onnx 1.22.0 wheel.\n",
            RLX_VERSION_STRING, date);
    fprintf(f, "Devices: ");
    for (int d = 0; d < r->n_dev; d++)
        fprintf(f, "%s`%s`%s", d ? ", " : "", r->devices[d],
                strcmp(r->devices[d], "cpu") == 0 ? " (reference kernels + fast paths)" : "");
    if (gpu_name) fprintf(f, "; the GPU was %s", gpu_name);
    fprintf(f, ".\nTolerance: the suite's defaults, rtol 1e-3 and atol 1e-7 (light densenet121: rtol 2e-3); "
               "integers and bool compare exactly.\n\n");
    fprintf(f, "Regenerate: `build/rlx conformance third_party/onnx/backend-test-data --out docs/CONFORMANCE.md "
               "--expected tests/conformance_expected.txt --update-expected`.\n\n");
    fprintf(f, "## Totals\n\n| suite | tests |");
    for (int d = 0; d < r->n_dev; d++) fprintf(f, " %s pass | %s fail | %s unsupported |", r->devices[d], r->devices[d], r->devices[d]);
    fprintf(f, "\n|---|---|");
    for (int d = 0; d < r->n_dev; d++) fprintf(f, "---|---|---|");
    fprintf(f, "\n");
    for (int pass = 0; pass < 2; pass++) {
        for (size_t s = 0; s <= CLI_ARRAY_LEN(k_suites); s++) {
            const char *suite = s < CLI_ARRAY_LEN(k_suites) ? k_suites[s] : NULL;
            if (pass == 1 && suite && strcmp(suite, "node") != 0) continue;
            if (pass == 1 && !suite) continue;
            int total = 0, cnt[MAX_DEV][4] = { { 0 } };
            for (size_t i = 0; i < r->n_res; i++) {
                const test_result *t = &r->res[i];
                if (suite && strcmp(t->suite, suite) != 0) continue;
                if (pass == 1 && !t->in_scope) continue;
                total++;
                for (int d = 0; d < r->n_dev; d++) cnt[d][t->r[d]]++;
            }
            if (!total) continue;
            const char *label = pass == 1 ? "node, ops in scope" : (suite ? suite : "all");
            fprintf(f, "| %s | %d |", label, total);
            for (int d = 0; d < r->n_dev; d++)
                fprintf(f, " %d (%.1f%%) | %d | %d |", cnt[d][R_PASS], 100.0 * cnt[d][R_PASS] / total, cnt[d][R_FAIL],
                        cnt[d][R_UNSUPPORTED]);
            fprintf(f, "\n");
        }
    }
    fprintf(f, "\nSequences are resolved while importing (src/import/onnx_sequence.c): a sequence whose structure "
               "(length, and which tensor is at each position) is known then becomes a list of tensors, so models "
               "that build and read sequences inside the graph run (simple/test_sequence_model*); the node tests of "
               "the sequence ops feed or return sequences, which a graph cannot, and stay unsupported.\n");
    fprintf(f, "\n\"Ops in scope\" are node tests whose every op is in the conformance goal's op list "
               "(tools/conformance.c, k_scope_ops) and whose tensors have types rlx supports (tests of float8, "
               "int4/int2, float4, sequence and optional types, of string tensors in ops other than data movement "
               "and StringNormalizer, and of other operator domains, are out of scope; they report \"unsupported\" "
               "with the type).\n");
    if (r->fb.n) {
        int nat = 0, fbk = 0, eag = 0;
        for (size_t i = 0; i < r->fb.n; i++) nat += r->fb.ops[i].native, fbk += r->fb.ops[i].fallback, eag += r->fb.ops[i].eager;
        fprintf(f, "\n## GPU fallbacks by op\n\n"
                   "Over every test whose plan compiled on the GPU (from the dispatch reports): nodes that ran on the "
                   "GPU's own kernels, and nodes that ran on the CPU instead, of which \"eager\" ran in graphs executed "
                   "eagerly on the CPU as a whole (control flow or data-dependent shapes). Total: %d native, %d on the "
                   "CPU (%d eager). Ops without a fallback are not listed.\n\n"
                   "| op | native | CPU | of which eager | tests with a CPU node |\n|---|---|---|---|---|\n",
                nat, fbk, eag);
        for (size_t i = 0; i < r->fb.n; i++) {
            const op_tally *o = &r->fb.ops[i];
            if (o->fallback) fprintf(f, "| %s | %d | %d | %d | %d |\n", o->op, o->native, o->fallback, o->eager, o->tests);
        }
    }
    fprintf(f, "\n## Failures and unsupported tests\n\n| suite | test |");
    for (int d = 0; d < r->n_dev; d++) fprintf(f, " %s |", r->devices[d]);
    fprintf(f, "\n|---|---|");
    for (int d = 0; d < r->n_dev; d++) fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t i = 0; i < r->n_res; i++) {
        const test_result *t = &r->res[i];
        bool all_pass = true;
        for (int d = 0; d < r->n_dev; d++) all_pass &= t->r[d] == R_PASS;
        if (all_pass) continue;
        fprintf(f, "| %s | %s%s |", t->suite, t->name,
                (t->in_scope || strcmp(t->suite, "node") != 0) ? "" : " (out of scope)");
        for (int d = 0; d < r->n_dev; d++) {
            fprintf(f, " %s", k_result_names[t->r[d]]);
            if (t->r[d] != R_PASS) {
                fprintf(f, ": ");
                md_escape(f, t->detail[d]);
            }
            fprintf(f, " |");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n## Passing tests\n\n");
    for (size_t s = 0; s < CLI_ARRAY_LEN(k_suites); s++) {
        fprintf(f, "- **%s**:", k_suites[s]);
        int k = 0;
        for (size_t i = 0; i < r->n_res; i++) {
            const test_result *t = &r->res[i];
            if (strcmp(t->suite, k_suites[s]) != 0) continue;
            bool all_pass = true;
            for (int d = 0; d < r->n_dev; d++) all_pass &= t->r[d] == R_PASS;
            if (all_pass) fprintf(f, "%s %s", k++ ? "," : "", t->name);
        }
        fprintf(f, "%s\n", k ? "" : " none");
    }
}

/* Expected-pass list: lines "<device> <suite>/<test>". */
static int check_expected(const runner *r, const char *path, bool update) {
    int regressions = 0, fresh = 0;
    FILE *f = fopen(path, "r");
    char line[512];
    if (f) {
        while (fgets(line, sizeof line, f)) {
            char dev[32], id[400];
            if (line[0] == '#' || sscanf(line, "%31s %399s", dev, id) != 2) continue;
            int d = -1;
            for (int k = 0; k < r->n_dev; k++)
                if (strcmp(r->devices[k], dev) == 0) d = k;
            if (d < 0) continue;
            for (size_t i = 0; i < r->n_res; i++) {
                const test_result *t = &r->res[i];
                char tid[220];
                snprintf(tid, sizeof tid, "%s/%s", t->suite, t->name);
                if (strcmp(tid, id) != 0) continue;
                if (t->r[d] != R_PASS && t->r[d] != R_SKIP) {
                    fprintf(stderr, "REGRESSION: %s %s: %s: %s\n", dev, id, k_result_names[t->r[d]], t->detail[d]);
                    regressions++;
                }
            }
        }
        bool failed = ferror(f);
        int err = errno;
        fclose(f);
        if (failed) {
            fprintf(stderr, "rlx: error: cannot read the expected-pass list '%s': %s\n", path, strerror(err));
            return 1;
        }
    } else if (!update) {
        fprintf(stderr, "rlx: error: cannot read the expected-pass list '%s': %s\n", path, strerror(errno));
        return 1;
    }
    if (update) {
        f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "rlx: error: cannot write '%s': %s\n", path, strerror(errno));
            return 1;
        }
        fprintf(f, "# Tests that pass, per device; `rlx conformance --expected` fails when one of them stops passing.\n"
                   "# Regenerate with --update-expected after making more pass.\n");
        for (int d = 0; d < r->n_dev; d++)
            for (size_t i = 0; i < r->n_res; i++)
                if (r->res[i].r[d] == R_PASS) {
                    fprintf(f, "%s %s/%s\n", r->devices[d], r->res[i].suite, r->res[i].name);
                    fresh++;
                }
        fclose(f);
        fprintf(stderr, "wrote %d expected passes to %s\n", fresh, path);
    }
    if (regressions) fprintf(stderr, "%d expected passes now fail\n", regressions);
    return regressions ? 1 : 0;
}

/* --json: the summary and every test's result per device. */
static void print_json(const runner *r, int cnt[MAX_DEV][4], double secs, int nat, int fbk, int eag, const char *out,
                       bool expected_ok) {
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_obj(&j, NULL);
    cli_json_s(&j, "root", r->root);
    cli_json_u(&j, "tests", r->n_res);
    cli_json_n(&j, "seconds", secs);
    cli_json_arr(&j, "devices");
    for (int d = 0; d < r->n_dev; d++) {
        cli_json_obj(&j, NULL);
        cli_json_s(&j, "device", r->devices[d]);
        for (int k = 0; k < 4; k++) cli_json_i(&j, k_result_names[k], cnt[d][k]);
        cli_json_end_obj(&j);
    }
    cli_json_end_arr(&j);
    cli_json_obj(&j, "gpu_nodes");
    cli_json_i(&j, "native", nat);
    cli_json_i(&j, "cpu", fbk);
    cli_json_i(&j, "eager", eag);
    cli_json_end_obj(&j);
    cli_json_s(&j, "report", out);
    cli_json_b(&j, "expected_passes_hold", expected_ok);
    cli_json_arr(&j, "results");
    j.pretty_depth = 2;
    for (size_t i = 0; i < r->n_res; i++) {
        const test_result *t = &r->res[i];
        cli_json_obj(&j, NULL);
        cli_json_s(&j, "suite", t->suite);
        cli_json_s(&j, "name", t->name);
        for (int d = 0; d < r->n_dev; d++) {
            cli_json_obj(&j, r->devices[d]);
            cli_json_s(&j, "result", k_result_names[t->r[d]]);
            cli_json_s(&j, "detail", t->detail[d]);
            cli_json_n(&j, "seconds", t->secs[d]);
            cli_json_end_obj(&j);
        }
        cli_json_end_obj(&j);
    }
    cli_json_end_arr(&j);
    cli_json_end_obj(&j);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx conformance ROOT [options]\n"
            "\n"
            "Runs the ONNX backend test suite found under ROOT (the onnx wheel's onnx/backend/test/data; the set-up\n"
            "script unpacks it to third_party/onnx/backend-test-data) on each device and reports per test:\n"
            "pass, fail (wrong outputs, an error, or a test folder that cannot be used: a model or .pb file\n"
            "that does not load, no test_data_set_* folder), unsupported (an op or type rlx does not support)\n"
            "or skip (the device is missing).\n"
            "\n"
            "options:\n"
            "  --device LIST        devices to run, comma separated (default cpu,gpu; a missing GPU is skipped)\n"
            "  --suite LIST         suites, comma separated (default node,simple,pytorch-converted,pytorch-operator,light)\n"
            "  --filter TEXT        only tests whose name contains TEXT\n"
            "  --out FILE.md        write the markdown report (docs/CONFORMANCE.md is generated this way)\n"
            "  --expected FILE      fail (exit 1) when a test listed there as passing no longer passes\n"
            "  --update-expected    rewrite the --expected file (required) with the tests that pass now\n"
            "  --json               print one JSON object instead of the summary: tests, seconds, per device the\n"
            "                       counts, per test its suite, name and per device result and detail\n"
            "  -v, --verbose        one line per test on stderr\n");
}

int rlx_cli_conformance(int argc, char **argv) {
    runner r = { .devices = { "cpu", "gpu" }, .n_dev = 2 };
    const char *out = NULL, *expected = NULL, *suites = NULL, *dev_list = NULL;
    bool update = false, json = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool takes_value = strcmp(a, "--device") == 0 || strcmp(a, "--suite") == 0 || strcmp(a, "--filter") == 0 ||
                           strcmp(a, "--out") == 0 || strcmp(a, "--expected") == 0;
        if (takes_value && i + 1 >= argc) {
            fprintf(stderr, "rlx: error: conformance: option %s needs a value (see 'rlx conformance --help')\n", a);
            return 2;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
            dev_list = argv[++i];
        } else if (strcmp(a, "--suite") == 0 && i + 1 < argc) {
            suites = argv[++i];
        } else if (strcmp(a, "--filter") == 0 && i + 1 < argc) {
            r.filter = argv[++i];
        } else if (strcmp(a, "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(a, "--expected") == 0 && i + 1 < argc) {
            expected = argv[++i];
        } else if (strcmp(a, "--update-expected") == 0) {
            update = true;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            r.verbose = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "rlx: error: conformance: unknown option '%s' (see rlx conformance --help)\n", a);
            return 2;
        } else if (!r.root) {
            r.root = a;
        } else {
            fprintf(stderr, "rlx: error: conformance: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!r.root) {
        fprintf(stderr, "rlx: error: conformance: no ROOT given (the suite's folder, e.g. "
                        "third_party/onnx/backend-test-data; see 'rlx conformance --help')\n");
        return 2;
    }
    if (update && !expected) {
        fprintf(stderr, "rlx: error: conformance: --update-expected rewrites the --expected file: give --expected FILE\n");
        return 2;
    }
    /* before the run, which takes a minute: a folder opens, and then read
     * as an empty list, so that every check passed */
    if (expected && cli_is_dir(expected)) {
        fprintf(stderr, "rlx: error: conformance: the expected-pass list '%s' is a directory, not a file\n", expected);
        return 2;
    }
    if (expected && !update && !cli_is_file(expected)) {
        FILE *f = fopen(expected, "r");
        int err = errno;
        if (f) fclose(f);
        fprintf(stderr, "rlx: error: conformance: cannot read the expected-pass list '%s': %s\n", expected,
                f ? "not a regular file" : strerror(err));
        return 2;
    }
    if (!cli_is_dir(r.root)) {
        fprintf(stderr, "rlx: error: conformance: '%s' is not a directory (run scripts/setup.sh to unpack the suite)\n", r.root);
        return 2;
    }
    static char dev_buf[128];
    if (dev_list) {
        if (strlen(dev_list) >= sizeof dev_buf) {
            fprintf(stderr, "rlx: error: conformance: --device '%s' is too long\n", dev_list);
            return 2;
        }
        snprintf(dev_buf, sizeof dev_buf, "%s", dev_list);
        r.n_dev = 0;
        for (char *tok = strtok(dev_buf, ","); tok; tok = strtok(NULL, ",")) {
            if (!cli_device_ok(tok)) {
                fprintf(stderr, "rlx: error: conformance: bad device '%s' in --device '%s' (expected cpu, gpu or gpu:N)\n",
                        tok, dev_list);
                return 2;
            }
            for (int d = 0; d < r.n_dev; d++)
                if (strcmp(r.devices[d], tok) == 0) { /* it ran every test twice and reported it twice */
                    fprintf(stderr, "rlx: error: conformance: --device '%s' names '%s' twice\n", dev_list, tok);
                    return 2;
                }
            if (r.n_dev == MAX_DEV) {
                fprintf(stderr, "rlx: error: conformance: --device '%s' lists more than %d devices\n", dev_list,
                        MAX_DEV);
                return 2;
            }
            r.devices[r.n_dev++] = tok;
        }
        if (r.n_dev == 0) {
            fprintf(stderr, "rlx: error: conformance: --device '%s' names no device\n", dev_list);
            return 2;
        }
    }
    bool want_suite[CLI_ARRAY_LEN(k_suites)];
    for (size_t k = 0; k < CLI_ARRAY_LEN(k_suites); k++) want_suite[k] = suites == NULL;
    if (suites) {
        char buf[256];
        if (strlen(suites) >= sizeof buf) {
            fprintf(stderr, "rlx: error: conformance: --suite '%s' is too long\n", suites);
            return 2;
        }
        snprintf(buf, sizeof buf, "%s", suites);
        bool any = false;
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            size_t k = 0;
            while (k < CLI_ARRAY_LEN(k_suites) && strcmp(k_suites[k], tok) != 0) k++;
            if (k == CLI_ARRAY_LEN(k_suites)) {
                fprintf(stderr,
                        "rlx: error: conformance: unknown suite '%s' (expected node, simple, pytorch-converted, "
                        "pytorch-operator or light)\n",
                        tok);
                return 2;
            }
            want_suite[k] = any = true;
        }
        if (!any) {
            fprintf(stderr, "rlx: error: conformance: --suite '%s' names no suite\n", suites);
            return 2;
        }
    }
    char gpu_name[300] = "";
    for (int d = 0; d < r.n_dev; d++) {
        if (strcmp(r.devices[d], "cpu") == 0) continue;
        rlx_adapter_info *ad = NULL;
        size_t n = 0;
        if (rlx_adapters_list(&ad, &n) == RLX_OK && n) snprintf(gpu_name, sizeof gpu_name, "%s (%s, %s)", ad[0].name, ad[0].backend, ad[0].type);
        free(ad);
    }
    double t0 = rlx_now_seconds();
    for (size_t s = 0; s < CLI_ARRAY_LEN(k_suites); s++) {
        if (!want_suite[s]) continue;
        if (strcmp(k_suites[s], "light") == 0) run_light(&r);
        else run_suite_dirs(&r, k_suites[s]);
    }
    double secs = rlx_now_seconds() - t0;
    if (r.n_res == 0) {
        /* a wrong ROOT (or a filter that matches nothing) must not pass as
         * "0 tests, no regressions" */
        if (r.filter)
            fprintf(stderr, "rlx: error: conformance: no test under '%s' matches --filter '%s'\n", r.root, r.filter);
        else
            fprintf(stderr,
                    "rlx: error: conformance: no tests found under '%s' (expected <suite>/<test>/model.onnx with "
                    "suites node, simple, pytorch-converted, pytorch-operator, light)\n",
                    r.root);
        free(r.res);
        free(r.fb.ops);
        return 2;
    }
    int cnt[MAX_DEV][4] = { { 0 } };
    for (size_t i = 0; i < r.n_res; i++)
        for (int d = 0; d < r.n_dev; d++) cnt[d][r.res[i].r[d]]++;
    if (r.fb.n) qsort(r.fb.ops, r.fb.n, sizeof *r.fb.ops, cmp_tally);
    if (!json) printf("%zu tests in %.1f s\n", r.n_res, secs);
    for (int d = 0; d < r.n_dev && !json; d++)
        printf("  %-4s pass %d, fail %d, unsupported %d, skipped %d\n", r.devices[d], cnt[d][R_PASS], cnt[d][R_FAIL],
               cnt[d][R_UNSUPPORTED], cnt[d][R_SKIP]);
    int nat = 0, fbk = 0, eag = 0;
    for (size_t i = 0; i < r.fb.n; i++) nat += r.fb.ops[i].native, fbk += r.fb.ops[i].fallback, eag += r.fb.ops[i].eager;
    if (r.fb.n && !json) {
        printf("  gpu nodes: %d native, %d on the CPU (%d in eager graphs)\n", nat, fbk, eag);
    }
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "rlx: error: cannot write '%s': %s\n", out, strerror(errno));
            free(r.res);
            free(r.fb.ops);
            return 1;
        }
        write_report(&r, f, gpu_name[0] ? gpu_name : NULL);
        fclose(f);
        if (!json) printf("report: %s\n", out);
    }
    int rc = expected ? check_expected(&r, expected, update) : 0;
    if (json) print_json(&r, cnt, secs, nat, fbk, eag, out, expected ? rc == 0 : true);
    free(r.res);
    free(r.fb.ops);
    return rc;
}
