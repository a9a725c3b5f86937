/* `rlx run MODEL.onnx ...`: imports a model, feeds it inputs from .npy
 * files or seeded random values, runs it on a device, summarises and
 * optionally writes the outputs, times import / compile / first run /
 * steady runs, and optionally compares against the CPU backend. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

static void print_help(FILE *f) {
    fprintf(f,
            "usage: rlx run MODEL.onnx [options]\n"
            "\n"
            "Loads MODEL.onnx, runs it once on the device (that first run compiles a plan\n"
            "for the input shapes), then times steady runs. Prints the device used, the\n"
            "inputs, the timings, and for each output its name, dtype, shape, min, max,\n"
            "mean and first values (integers and bool exactly, floats to 6 significant\n"
            "digits).\n"
            "\n"
            "options:\n"
            "  --device DEV           cpu (default), gpu (the high-performance adapter) or\n"
            "                         gpu:N (the N-th adapter of 'rlx devices')\n"
            "  --input NAME=FILE.npy  feed graph input NAME from a .npy file (repeatable);\n"
            "                         its dtype must be the one the model declares\n"
            "                         (f32 for a bfloat16 input: rounded to nearest even;\n"
            "                         NumPy str or bytes for a string input)\n"
            "  --shape NAME=DIMS      shape of a generated input, e.g. x=1x3x224x224\n"
            "                         (repeatable); needed for symbolic dims other than 1\n"
            "  --seed S               seed of the generated inputs (0 to 2^63-1, default 0)\n"
            "  --output-dir DIR       write each output as DIR/<name>.npy (created if\n"
            "                         missing); characters of the name other than\n"
            "                         A-Z a-z 0-9 . _ - become '_', a leading '.' too,\n"
            "                         and the name is cut at 159 characters;\n"
            "                         a name that then equals an earlier output's\n"
            "                         (ignoring case, e.g. 'a/b' and 'a_b') gets the\n"
            "                         suffix _<i>, i the output's index (then _<i>_2,\n"
            "                         ...): no output overwrites another; each\n"
            "                         'wrote NAME -> FILE' line (JSON \"written\": the\n"
            "                         files in output order) says where it went;\n"
            "                         string outputs as NumPy unicode ('<U<n>'; bytes\n"
            "                         '|S<n>' where one is not UTF-8), bfloat16 ones as\n"
            "                         float32 (exact); an output that\n"
            "                         cannot be written fails the run (exit 1) after\n"
            "                         the others are written\n"
            "  --check                also run on the CPU backend and print, per output (a\n"
            "                         here, b on the CPU), the max abs difference, the max\n"
            "                         rel difference |a-b|/|b| over the elements with |b| >=\n"
            "                         0.001 * max|b| (smaller ones would blow it up), the\n"
            "                         normwise rel difference ||a-b||/||b||, and whether it\n"
            "                         is close: |a-b| <= atol + rtol*|b| for every element\n"
            "                         (numpy.allclose's test with equal_nan: NaN on both sides\n"
            "                         is close; else NOT CLOSE with the count,\n"
            "                         JSON \"close\", \"not_close\"); integer and bool outputs\n"
            "                         compare exactly, as integers (int64 past 2^53 too):\n"
            "                         close only where every element is equal (JSON\n"
            "                         \"exact\": true); an output whose dtype or\n"
            "                         shape differs, or with an element NaN on one side only,\n"
            "                         is a MISMATCH (JSON \"mismatch\": true); string\n"
            "                         outputs are equal or a MISMATCH with the count of\n"
            "                         strings that differ (JSON \"strings_differ\"); --check\n"
            "                         reports, it does not change the exit status\n"
            "  --atol A, --rtol R     --check's closeness tolerances (default 1e-4, 1e-3)\n"
            "  --warmup N             untimed runs before the timed ones (default 2)\n"
            "  --iters N              timed steady runs (default 10; 0 skips them)\n"
            CLI_OPTION_HELP
            "  --report               print the dispatch report: per op type, how many nodes\n"
            "                         ran natively, fell back to the CPU, or were folded\n"
            "  --json                 print one JSON object instead of text: model, device,\n"
            "                         inputs and outputs (shapes as arrays; per output min,\n"
            "                         max, mean, NaN and Inf counts and the first values),\n"
            "                         timings in ms, written files, --check differences,\n"
            "                         --report's text\n"
            "                         on an error {\"error\": {\"status\": S, \"message\": M}}\n"
            "                         (inside the result object if it had begun):\n"
            "                         S an rlx_status name (rlx.h), or from the command line\n"
            "                         itself RLX_ERR_USAGE (exit 2) or RLX_ERR_FAILURE (exit 1)\n"
            "  --quiet                no progress lines on stderr (the option progress=off)\n"
            "  -h, --help             print this help and exit\n"
            "\n"
            "Inputs not given with --input are filled with seeded pseudo-random values\n"
            "(xorshift64*): floats uniform in [-1, 1), integers uniform in [0, 10) (1 for\n"
            "inputs whose name contains 'mask', 0 for names with 'type' or 'segment', as\n"
            "BERT-like models need; 'rlx bench' does the same), bools 0 or 1. Their\n"
            "symbolic dims take sizes from --shape, else 1, and the run says so.\n"
            "\n"
            "Timings: import (read, verify, infer shapes), session (device set-up),\n"
            "compile (the first run's plan compile: passes + backend compile), first run\n"
            "(including the compile), and the median, p10 and p90 of the steady runs.\n"
            "\n"
            "Exit codes: 0 success; 2 usage error, unreadable or mismatched input file,\n"
            "model that cannot be loaded or is not supported; 1 other runtime failures.\n");
}

typedef struct run_opts {
    cli_model_args m; /* model, --device, --input, --shape, --seed, --warmup, --iters, --json, --quiet, --option */
    const char *output_dir;
    bool check, report;
    double atol, rtol; /* --check's closeness test */
} run_opts;

/* --check: the rel diff counts elements with |cpu| >= this times the
 * output's max |cpu| (documented in --help and README) */
#define CHECK_REL_FLOOR 1e-3

/* Returns -1 when parsing succeeded (continue), else an exit code. */
static int parse_args(int argc, char **argv, run_opts *o) {
    o->m.device = "cpu";
    o->m.warmup = 2;
    o->m.iters = 10;
    o->atol = 1e-4;
    o->rtol = 1e-3;
    bool tol_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool err = false;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "--output-dir", &v, "run", &err)) {
            if (err) return CLI_EXIT_USAGE;
            if (!*v) return cli_usage_error("run", "--output-dir is empty");
            o->output_dir = v;
        } else if (strcmp(a, "--check") == 0) {
            o->check = true;
        } else if (cli_opt_value(argc, argv, &i, "--atol", &v, "run", &err) ||
                   cli_opt_value(argc, argv, &i, "--rtol", &v, "run", &err)) {
            if (err) return CLI_EXIT_USAGE;
            bool is_atol = strncmp(a, "--atol", 6) == 0;
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            /* an underflow (1e-400) is the nearest double, as numpy reads it; an overflow is not finite */
            if (errno == ERANGE && fabs(x) <= DBL_MIN) errno = 0;
            if (!*v || *end || errno || !(x >= 0.0) || !isfinite(x))
                return cli_usage_error("run", "bad %s '%s' (a finite number >= 0)", is_atol ? "--atol" : "--rtol", v);
            if (is_atol) o->atol = x;
            else o->rtol = x;
            tol_given = true;
        } else if (strcmp(a, "--report") == 0) {
            o->report = true;
        } else {
            int rc = cli_model_arg(argc, argv, &i, "run", 0, &o->m);
            if (rc >= 0) return rc;
        }
    }
    if (!o->m.model) return cli_usage_error("run", "no model given");
    if (tol_given && !o->check) return cli_usage_error("run", "--atol and --rtol only apply with --check");
    return -1;
}

/* ------------------------------------------------------------ inputs */

/* ------------------------------------------------------------ outputs */

/* min, max and mean of a numeric tensor (mean over the finite values),
 * with its NaN and infinity counts. */
typedef struct tensor_stats {
    double mn, mx, sum;
    size_t n_nan, n_inf, n_fin;
} tensor_stats;

static tensor_stats stats_of(const rlx_tensor *t) {
    tensor_stats st = { INFINITY, -INFINITY, 0.0, 0, 0, 0 };
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        double v = cli_elem_f64(t, i);
        if (isnan(v)) {
            st.n_nan++;
            continue;
        }
        st.n_inf += isinf(v) != 0;
        if (v < st.mn) st.mn = v;
        if (v > st.mx) st.mx = v;
        if (isfinite(v)) st.sum += v, st.n_fin++;
    }
    return st;
}

/* Integer dtypes (bool as 0/1) are printed exactly, not through a double:
 * an int64 past 2^53 has no exact double, and %.6g cut 2199023255554 to
 * 2.19902e+12. 1: signed, 2: unsigned (bool included), 0: not an integer. */
static int int_kind(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_I8:
    case RLX_DTYPE_I16:
    case RLX_DTYPE_I32:
    case RLX_DTYPE_I64: return 1;
    case RLX_DTYPE_U8:
    case RLX_DTYPE_U16:
    case RLX_DTYPE_U32:
    case RLX_DTYPE_U64:
    case RLX_DTYPE_BOOL: return 2;
    default: return 0;
    }
}

static int64_t elem_i64(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case RLX_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: return ((const int64_t *)t->data)[i];
    }
}

static uint64_t elem_u64(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i] != 0;
    case RLX_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case RLX_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    default: return ((const uint64_t *)t->data)[i];
    }
}

/* min and max of a non-empty integer tensor, exactly */
typedef struct int_range {
    int64_t smin, smax;
    uint64_t umin, umax;
} int_range;

static int_range int_range_of(const rlx_tensor *t, int kind) {
    int_range r = { INT64_MAX, INT64_MIN, UINT64_MAX, 0 };
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        if (kind == 1) {
            int64_t v = elem_i64(t, i);
            if (v < r.smin) r.smin = v;
            if (v > r.smax) r.smax = v;
        } else {
            uint64_t v = elem_u64(t, i);
            if (v < r.umin) r.umin = v;
            if (v > r.umax) r.umax = v;
        }
    }
    return r;
}

/* element i as text: integers exactly, floats with 6 significant digits */
static void print_elem(const rlx_tensor *t, size_t i, int kind) {
    if (kind == 1) printf(" %" PRId64, elem_i64(t, i));
    else if (kind == 2) printf(" %" PRIu64, elem_u64(t, i));
    else printf(" %.6g", cli_elem_f64(t, i));
}

/* An output in --json: name, dtype, shape, and the numbers of summarise. */
static void summarise_json(cli_json *j, const char *name, const rlx_tensor *t) {
    size_t n = rlx_tensor_numel(t);
    cli_json_obj(j, NULL);
    cli_json_s(j, "name", name);
    cli_json_s(j, "dtype", rlx_dtype_name(t->dtype));
    cli_json_dims(j, "shape", t->dims, t->rank);
    int kind = int_kind(t->dtype);
    cli_json_arr(j, "first");
    for (size_t i = 0; i < n && i < 6; i++) {
        if (t->dtype == RLX_DTYPE_STRING) cli_json_s(j, NULL, ((const char *const *)t->data)[i]);
        else if (kind == 1) cli_json_i(j, NULL, elem_i64(t, i));
        else if (kind == 2) cli_json_u(j, NULL, elem_u64(t, i));
        else cli_json_n(j, NULL, cli_elem_f64(t, i));
    }
    cli_json_end_arr(j);
    if (t->dtype != RLX_DTYPE_STRING) {
        tensor_stats st = stats_of(t);
        if (kind && n) { /* exactly, as the first values */
            int_range r = int_range_of(t, kind);
            if (kind == 1) cli_json_i(j, "min", r.smin), cli_json_i(j, "max", r.smax);
            else cli_json_u(j, "min", r.umin), cli_json_u(j, "max", r.umax);
        } else { /* min and max may be infinite (JSON null then: see "inf") */
            cli_json_n(j, "min", n > st.n_nan ? st.mn : NAN);
            cli_json_n(j, "max", n > st.n_nan ? st.mx : NAN);
        }
        cli_json_n(j, "mean", st.n_fin ? st.sum / (double)st.n_fin : NAN);
        cli_json_u(j, "nan", st.n_nan);
        cli_json_u(j, "inf", st.n_inf);
    }
    cli_json_end_obj(j);
}

static void summarise(const char *name, const rlx_tensor *t) {
    char sh[512];
    size_t n = rlx_tensor_numel(t);
    printf("  %-24s %-5s %s\n", cli_esc(name), rlx_dtype_name(t->dtype), cli_shape_str(t->dims, t->rank, sh, sizeof sh));
    if (t->dtype == RLX_DTYPE_STRING) { /* the first strings, quoted, cut at 40 bytes */
        printf("    first:");
        for (size_t i = 0; i < n && i < 6; i++) printf(" \"%.40s\"", ((const char *const *)t->data)[i]);
        printf("%s\n", n > 6 ? " ..." : n ? "" : " (empty)");
        return;
    }
    tensor_stats st = stats_of(t);
    if (n == 0) {
        printf("    (empty)\n");
        return;
    }
    if (st.n_nan == n) {
        printf("    all %zu values are NaN\n", n);
        return;
    }
    int kind = int_kind(t->dtype);
    if (kind) {
        int_range r = int_range_of(t, kind);
        if (kind == 1) printf("    min %" PRId64 "  max %" PRId64, r.smin, r.smax);
        else printf("    min %" PRIu64 "  max %" PRIu64, r.umin, r.umax);
        printf("  mean %.6g", st.sum / (double)n);
    } else {
        printf("    min %.6g  max %.6g  mean %.6g", st.mn, st.mx, st.n_fin ? st.sum / (double)st.n_fin : NAN);
    }
    if (st.n_nan || st.n_inf) printf("  (NaN: %zu, Inf: %zu; mean over finite values)", st.n_nan, st.n_inf);
    printf("\n    first:");
    for (size_t i = 0; i < n && i < 6; i++) print_elem(t, i, kind);
    printf("%s\n", n > 6 ? " ..." : "");
}

/* File name for an output: [A-Za-z0-9._-] kept, the rest (and a leading
 * '.') become '_'; empty names become "output_<i>". */
static void sanitise(const char *name, size_t index, char *buf, size_t cap) {
    size_t o = 0;
    for (const char *p = name; *p && o + 1 < cap; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || (c == '.' && o > 0);
        buf[o++] = ok ? c : '_';
    }
    buf[o] = '\0';
    if (o == 0) snprintf(buf, cap, "output_%zu", index);
}

/* Whether names[i] differs, ignoring ASCII case, from names[0..i). */
static bool unique_name(char (*names)[200], size_t i) {
    for (size_t k = 0; k < i; k++)
        if (strcasecmp(names[k], names[i]) == 0) return false;
    return true;
}

static int write_outputs(const char *dir, rlx_session *s, rlx_tensor **outs, size_t n, cli_json *j) {
    if (!cli_mkdirs(dir)) {
        cli_error("cannot create output directory '%s': %s", dir, strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    char(*names)[200] = calloc(n + 1, sizeof *names);
    if (!names) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = -1;
    /* an output that cannot be written does not stop the others */
    for (size_t i = 0; i < n; i++) {
        const char *name = rlx_session_output_name(s, i);
        sanitise(name ? name : "", i, names[i], 160);
        /* a name that sanitises like an earlier output's file (compared
         * without case: some file systems ignore it) gets the suffix _<i>
         * (i its output index), then _2, _3, ... until it is unique, so
         * that no output overwrites another; the lines below say which
         * file each output went to */
        size_t base = strlen(names[i]);
        for (unsigned extra = 1; extra < 100000 && !unique_name(names, i); extra++) {
            if (extra == 1) snprintf(names[i] + base, 200 - base, "_%zu", i);
            else snprintf(names[i] + base, 200 - base, "_%zu_%u", i, extra);
        }
        size_t plen = strlen(dir) + strlen(names[i]) + 8;
        char *path = malloc(plen);
        if (!path) {
            cli_error("out of memory");
            rc = CLI_EXIT_FAILURE;
            break;
        }
        snprintf(path, plen, "%s/%s.npy", dir, names[i]);
        /* .npy has no bfloat16: widened to f32, which holds every bf16
         * value exactly (as the Python bindings return it); it could not
         * be written at all */
        rlx_tensor *wide = NULL;
        rlx_status st = RLX_OK;
        if (outs[i]->dtype == RLX_DTYPE_BF16) {
            st = rlx_tensor_create(RLX_DTYPE_F32, outs[i]->dims, outs[i]->rank, &wide);
            if (!st) {
                const uint16_t *b = outs[i]->data;
                float *f = wide->data;
                for (size_t k = 0, nk = rlx_tensor_numel(wide); k < nk; k++) f[k] = rlx_bf16_to_f32(b[k]);
            }
        }
        if (!st) st = rlx_tensor_save_npy(wide ? wide : outs[i], path);
        rlx_tensor_destroy(wide);
        if (st) {
            char what[1200];
            snprintf(what, sizeof what, "cannot write output '%s' to '%s'", name ? name : "", path);
            cli_fail(st, what);
            rc = CLI_EXIT_FAILURE; /* writing results is a runtime failure */
        } else if (j) {
            cli_json_s(j, NULL, path);
        } else {
            printf("  wrote %s -> %s%s\n", cli_esc(name ? name : ""), cli_esc(path),
                   outs[i]->dtype == RLX_DTYPE_BF16 ? " (bf16 as f32, exact: .npy has no bfloat16)" : "");
        }
        free(path);
    }
    free(names);
    return rc;
}

/* ------------------------------------------------------------ timing */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n) (p in [0, 1]). */
static double percentile(const double *v, size_t n, double p) {
    double r = ceil(p * (double)n);
    size_t k = r < 1.0 ? 0 : (size_t)r - 1;
    return v[k < n ? k : n - 1];
}

static double median(const double *v, size_t n) {
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void free_outputs(rlx_tensor **outs, size_t n) {
    if (!outs) return;
    for (size_t i = 0; i < n; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
}

/* ------------------------------------------------------------ check */

/* --check of an integer or bool output (same dtype and shape on both
 * sides): element by element as integers, exactly. Through doubles (the
 * float path) int64 and uint64 values past 2^53 that differ could round to
 * the same double and pass; atol and rtol do not apply. Prints (or adds to
 * j) one line in the float path's form: max abs diff (exact), max rel diff
 * and normwise rel (doubles, for the eye), and "close" only where every
 * element is equal (else NOT CLOSE with the count). */
static void check_int_output(const char *name, const rlx_tensor *a, const rlx_tensor *b, cli_json *j) {
    int kind = int_kind(a->dtype);
    size_t n = rlx_tensor_numel(a), worst = 0, n_diff = 0;
    uint64_t max_abs = 0;
    double max_rel = 0.0, d2 = 0.0, r2 = 0.0;
    for (size_t k = 0; k < n; k++) {
        uint64_t d, mag; /* |a - b| and |b|, exact in uint64 */
        if (kind == 1) {
            int64_t x = elem_i64(a, k), y = elem_i64(b, k);
            d = x >= y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
            mag = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
        } else {
            uint64_t x = elem_u64(a, k), y = elem_u64(b, k);
            d = x >= y ? x - y : y - x;
            mag = y;
        }
        if (d > max_abs) max_abs = d, worst = k;
        if (d) {
            n_diff++;
            if (mag && (double)d / (double)mag > max_rel) max_rel = (double)d / (double)mag;
        }
        d2 += (double)d * (double)d;
        r2 += (double)mag * (double)mag;
    }
    double normwise = r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2);
    if (j) {
        cli_json_obj(j, NULL);
        cli_json_s(j, "name", name);
        cli_json_b(j, "mismatch", false);
        cli_json_b(j, "exact", true); /* an integer output: compared exactly, no tolerances */
        cli_json_u(j, "max_abs", max_abs);
        cli_json_u(j, "max_abs_index", worst);
        cli_json_n(j, "max_rel", max_rel);
        cli_json_n(j, "rel_floor", 0.0);
        cli_json_n(j, "normwise_rel", normwise);
        cli_json_u(j, "nan_one_side", 0);
        cli_json_u(j, "not_close", n_diff);
        cli_json_b(j, "close", n_diff == 0);
        cli_json_end_obj(j);
        return;
    }
    printf("  %-24s max abs diff %" PRIu64 " (at flat index %zu), max rel diff %.3g, ", cli_esc(name), max_abs, worst,
           max_rel);
    if (n_diff)
        printf("NOT CLOSE (%zu of %zu elements differ; %s compares exactly), ", n_diff, n, rlx_dtype_name(a->dtype));
    else printf("close (equal; %s compares exactly), ", rlx_dtype_name(a->dtype));
    printf("normwise rel %.3g\n", normwise);
}

static int check_against_cpu(const run_opts *o, const rlx_model *m, size_t n_in, const char *const *names,
                             const rlx_tensor *const *inputs, rlx_session *s, rlx_tensor **outs, size_t n_out,
                             cli_json *j) {
    rlx_session_options so = { .device = "cpu" };
    rlx_session *cpu = NULL;
    rlx_status st = rlx_session_create_with_options(m, &so, o->m.opts, &cpu);
    if (st) return cli_fail(st, "--check: cannot create a CPU session");
    rlx_tensor **ref = NULL;
    size_t n_ref = 0;
    st = rlx_session_run(cpu, n_in, names, inputs, &ref, &n_ref);
    if (st) {
        rlx_session_destroy(cpu);
        return cli_fail(st, "--check: the CPU run failed");
    }
    if (j) cli_json_arr(j, "check");
    else printf("check against the CPU backend:\n");
    for (size_t i = 0; i < n_out && i < n_ref; i++) {
        const char *name = rlx_session_output_name(s, i);
        const rlx_tensor *a = outs[i], *b = ref[i];
        char s1[256], s2[256];
        if (a->dtype != b->dtype || a->rank != b->rank ||
            memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0) {
            if (j) {
                cli_json_obj(j, NULL);
                cli_json_s(j, "name", name);
                cli_json_b(j, "mismatch", true);
                cli_json_s(j, "dtype", rlx_dtype_name(a->dtype));
                cli_json_dims(j, "shape", a->dims, a->rank);
                cli_json_s(j, "cpu_dtype", rlx_dtype_name(b->dtype));
                cli_json_dims(j, "cpu_shape", b->dims, b->rank);
                cli_json_end_obj(j);
                continue;
            }
            printf("  %-24s MISMATCH: %s %s here, %s %s on the CPU\n", cli_esc(name), rlx_dtype_name(a->dtype),
                   cli_shape_str(a->dims, a->rank, s1, sizeof s1), rlx_dtype_name(b->dtype),
                   cli_shape_str(b->dims, b->rank, s2, sizeof s2));
            continue;
        }
        if (a->dtype == RLX_DTYPE_STRING) { /* strings are equal or not: no numeric differences */
            size_t n = rlx_tensor_numel(a), n_diff = 0, first = 0;
            const char *const *x = a->data, *const *y = b->data;
            for (size_t k = 0; k < n; k++)
                if (strcmp(x[k] ? x[k] : "", y[k] ? y[k] : "") != 0 && n_diff++ == 0) first = k;
            if (j) {
                cli_json_obj(j, NULL);
                cli_json_s(j, "name", name);
                cli_json_b(j, "mismatch", n_diff > 0);
                cli_json_s(j, "dtype", "string");
                cli_json_u(j, "strings_differ", n_diff);
                if (n_diff) cli_json_u(j, "first_diff_index", first);
                cli_json_b(j, "close", n_diff == 0);
                cli_json_end_obj(j);
                continue;
            }
            if (n_diff)
                printf("  %-24s MISMATCH: %zu of %zu strings differ (the first at flat index %zu)\n", cli_esc(name), n_diff,
                       n, first);
            else
                printf("  %-24s strings equal (%zu)\n", cli_esc(name), n);
            continue;
        }
        if (int_kind(a->dtype)) {
            check_int_output(name, a, b, j);
            continue;
        }
        size_t n = rlx_tensor_numel(a), n_nan = 0, worst = 0, n_far = 0;
        /* the rel diff leaves out elements small against the output's
         * scale (|b| below CHECK_REL_FLOOR * max|b|): near 0 any rounding
         * difference is a huge ratio; the closeness test is numpy.allclose's
         * |a-b| <= atol + rtol*|b| */
        double max_b = 0.0;
        for (size_t k = 0; k < n; k++) {
            double y = fabs(cli_elem_f64(b, k));
            if (isfinite(y) && y > max_b) max_b = y;
        }
        double floor_b = CHECK_REL_FLOOR * max_b;
        double max_abs = 0.0, max_rel = 0.0, d2 = 0.0, r2 = 0.0;
        for (size_t k = 0; k < n; k++) {
            double x = cli_elem_f64(a, k), y = cli_elem_f64(b, k);
            if (isnan(x) || isnan(y)) {
                if (!(isnan(x) && isnan(y))) n_nan++;
                continue;
            }
            double d = x == y ? 0.0 : fabs(x - y); /* equal infinities differ by 0 */
            if (d > max_abs) max_abs = d, worst = k;
            if (y != 0.0 && fabs(y) >= floor_b && d / fabs(y) > max_rel) max_rel = d / fabs(y);
            if (d != 0.0 && !(d <= o->atol + o->rtol * fabs(y))) n_far++; /* (rtol 0 times inf is NaN) */
            d2 += d * d;
            r2 += y * y;
        }
        if (j) {
            cli_json_obj(j, NULL);
            cli_json_s(j, "name", name);
            cli_json_b(j, "mismatch", n_nan > 0);
            cli_json_n(j, "max_abs", max_abs);
            cli_json_u(j, "max_abs_index", worst);
            cli_json_n(j, "max_rel", max_rel);
            cli_json_n(j, "rel_floor", floor_b);
            cli_json_n(j, "normwise_rel", r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2));
            cli_json_u(j, "nan_one_side", n_nan);
            cli_json_u(j, "not_close", n_far);
            cli_json_b(j, "close", n_far == 0 && n_nan == 0);
            cli_json_end_obj(j);
            continue;
        }
        /* normwise rel stays the last number of the line (scripts read it) */
        printf("  %-24s %smax abs diff %.3g (at flat index %zu), max rel diff %.3g (where |cpu| >= %.3g), ",
               cli_esc(name), n_nan ? "MISMATCH: " : "", max_abs, worst, max_rel, floor_b);
        if (n_far) printf("NOT CLOSE (%zu of %zu elements have |a-b| > atol + rtol*|cpu|), ", n_far, n);
        else if (!n_nan) printf("close, ");
        printf("normwise rel %.3g", r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2));
        if (n_nan) printf(", %zu elements NaN on one side only", n_nan);
        printf("\n");
    }
    if (!j)
        printf("  (close: |a-b| <= atol + rtol*|cpu| for every element, atol %g, rtol %g; integer and bool outputs:"
               " equal)\n", o->atol, o->rtol);
    if (j) cli_json_end_arr(j);
    free_outputs(ref, n_ref);
    rlx_session_destroy(cpu);
    return -1;
}

/* ------------------------------------------------------------ command */

int cli_cmd_run(int argc, char **argv) {
    run_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        cli_model_args_free(&o.m);
        return rc;
    }
    cli_json_errors(o.m.json);
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_tensor **inputs = NULL;
    const char **names = NULL;
    rlx_tensor **outs = NULL;
    size_t n_out = 0, n_in = 0;
    double *times = NULL;
    char tb[4][32];

    bool progress = cli_progress_wanted(o.m.opts, o.m.quiet);
    cli_json jj, *j = o.m.json ? &jj : NULL;
    double t_import, t_session;
    if ((rc = cli_model_load(&o.m, progress, &m, &t_import)) >= 0) goto done;
    /* an output folder that cannot be written fails now, not after the
     * runs (and is not created for a model that does not load) */
    if (o.output_dir && (!cli_mkdirs(o.output_dir) || access(o.output_dir, W_OK | X_OK) != 0)) {
        cli_error("cannot write to the output directory '%s': %s", o.output_dir, strerror(errno));
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    /* every --input / --shape must name a graph input */
    const cli_input_opts io = { "run", &o.m.inputs, &o.m.shapes, o.m.seed, !o.m.json, true, o.m.opts };
    if ((rc = cli_model_inputs(&io, m, o.m.model, &names, &inputs, &n_in)) >= 0) goto done;
    if ((rc = cli_model_session(&o.m, m, &s, &t_session)) >= 0) goto done;
    /* the session is then the model's only holder (--check makes a second
     * one): cpu.release_packed may free the plain copy of its packed
     * weights, a second copy otherwise */
    if (!o.check) {
        rlx_model_destroy(m);
        m = NULL;
    }
    if (!j) printf("device: %s (--device %s)\n", rlx_session_device_name(s), o.m.device);
    fflush(stdout);

    double t0 = rlx_now_seconds();
    cli_progress(progress, "rlx: first run (compiles the plan)");
    rlx_status st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)inputs, &outs, &n_out);
    cli_progress_end(progress);
    double t_first = rlx_now_seconds() - t0;
    if (st) {
        rc = cli_fail(st, "the first run failed");
        goto done;
    }
    rlx_session_stats stats;
    rlx_session_get_stats(s, &stats);
    bool eager = stats.eager;
    /* a progress line per run once runs are slow enough to wait for */
    bool run_progress = progress && t_first > 0.5;

    for (int64_t k = 0; k < o.m.warmup; k++) {
        rlx_tensor **tmp = NULL;
        size_t nt = 0;
        cli_progress(run_progress, "rlx: warm-up run %lld/%lld", (long long)k + 1, (long long)o.m.warmup);
        st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)inputs, &tmp, &nt);
        free_outputs(tmp, nt);
        if (st) {
            cli_progress_end(run_progress);
            rc = cli_fail(st, "a warm-up run failed");
            goto done;
        }
    }
    if (o.m.iters > 0) {
        times = malloc((size_t)o.m.iters * sizeof *times);
        if (!times) {
            cli_error("out of memory");
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
    }
    for (int64_t k = 0; k < o.m.iters; k++) {
        rlx_tensor **tmp = NULL;
        size_t nt = 0;
        cli_progress(run_progress, "rlx: timed run %lld/%lld", (long long)k + 1, (long long)o.m.iters);
        t0 = rlx_now_seconds();
        st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)inputs, &tmp, &nt);
        times[k] = rlx_now_seconds() - t0;
        free_outputs(tmp, nt);
        if (st) {
            cli_progress_end(run_progress);
            rc = cli_fail(st, "a timed run failed");
            goto done;
        }
    }
    cli_progress_end(run_progress);
    if (o.m.iters > 0) qsort(times, (size_t)o.m.iters, sizeof *times, cmp_double);

    if (j) {
        cli_json_init(j, stdout);
        cli_json_obj(j, NULL);
        cli_json_run_head(j, o.m.model, s, o.m.device, n_in, names, inputs, &o.m.inputs);
        cli_json_u(j, "pipelines_created", stats.n_pipelines_new);
        cli_json_u(j, "pipelines_reused", stats.n_pipelines_reused);
        cli_json_obj(j, "timings_ms");
        cli_json_n(j, "import", t_import * 1e3);
        cli_json_n(j, "session", t_session * 1e3);
        cli_json_n(j, "passes", stats.passes_s * 1e3);
        cli_json_n(j, "backend_compile", eager ? 0.0 : stats.backend_compile_s * 1e3);
        cli_json_n(j, "pipelines", stats.pipelines_s * 1e3);
        cli_json_n(j, "pipelines_driver", stats.pipelines_driver_s * 1e3);
        cli_json_n(j, "first_run", t_first * 1e3);
        size_t n = (size_t)o.m.iters;
        cli_json_n(j, "steady_median", n ? median(times, n) * 1e3 : NAN);
        cli_json_n(j, "steady_p10", n ? percentile(times, n, 0.10) * 1e3 : NAN);
        cli_json_n(j, "steady_p90", n ? percentile(times, n, 0.90) * 1e3 : NAN);
        cli_json_end_obj(j);
        cli_json_u(j, "steady_runs", n);
        cli_json_i(j, "warmup_runs", o.m.warmup);
        cli_json_b(j, "eager", eager);
        cli_json_i(j, "nodes_folded", stats.nodes_folded);
        cli_json_i(j, "nodes_fused", stats.nodes_fused);
        cli_json_i(j, "nodes_removed", stats.nodes_removed);
        cli_json_arr(j, "outputs");
        for (size_t i = 0; i < n_out; i++) {
            const char *name = rlx_session_output_name(s, i);
            summarise_json(j, name ? name : "?", outs[i]);
        }
        cli_json_end_arr(j);
        if (o.output_dir) {
            cli_json_arr(j, "written");
            rc = write_outputs(o.output_dir, s, outs, n_out, j);
            cli_json_end_arr(j);
        }
        if (rc < 0 && o.check)
            rc = check_against_cpu(&o, m, n_in, names, (const rlx_tensor *const *)inputs, s, outs, n_out, j);
        if (o.report) cli_json_s(j, "dispatch_report", rlx_session_dispatch_report(s));
        cli_json_error_member(j);
        cli_json_end_obj(j);
        if (rc >= 0) goto done;
        rc = CLI_EXIT_OK;
        goto done;
    }

    printf("timings:\n");
    printf("  import      %s\n", cli_time_str(t_import, tb[0], sizeof tb[0]));
    printf("  session     %s (device set-up)\n", cli_time_str(t_session, tb[0], sizeof tb[0]));
    if (eager) {
        printf("  compile     %s (first-run plan compile: passes only; the graph runs eagerly on the CPU "
               "reference kernels)\n",
               cli_time_str(stats.passes_s, tb[0], sizeof tb[0]));
    } else {
        printf("  compile     %s (first-run plan compile: passes %s + backend %s; %d nodes folded, %d fused, %d removed)\n",
               cli_time_str(stats.passes_s + stats.backend_compile_s, tb[0], sizeof tb[0]),
               cli_time_str(stats.passes_s, tb[1], sizeof tb[1]),
               cli_time_str(stats.backend_compile_s, tb[2], sizeof tb[2]), stats.nodes_folded,
               stats.nodes_fused, stats.nodes_removed);
        if (stats.n_pipelines_new + stats.n_pipelines_reused)
            printf("              of which pipelines %s (%zu created, %zu reused; the driver's first-dispatch compile "
                   "%s)\n",
                   cli_time_str(stats.pipelines_s, tb[0], sizeof tb[0]), stats.n_pipelines_new,
                   stats.n_pipelines_reused, cli_time_str(stats.pipelines_driver_s, tb[1], sizeof tb[1]));
    }
    printf("  first run   %s (including the compile)\n", cli_time_str(t_first, tb[0], sizeof tb[0]));
    if (o.m.iters > 0) {
        size_t n = (size_t)o.m.iters;
        printf("  steady      median %s, p10 %s, p90 %s over %zu runs (after %lld warm-up runs)\n",
               cli_time_str(median(times, n), tb[0], sizeof tb[0]),
               cli_time_str(percentile(times, n, 0.10), tb[1], sizeof tb[1]),
               cli_time_str(percentile(times, n, 0.90), tb[2], sizeof tb[2]), n, (long long)o.m.warmup);
    } else {
        printf("  steady      not measured (--iters 0)\n");
    }

    printf("outputs: %zu\n", n_out);
    for (size_t i = 0; i < n_out; i++) {
        const char *name = rlx_session_output_name(s, i);
        summarise(name ? name : "?", outs[i]);
    }
    fflush(stdout);
    if (o.output_dir) {
        rc = write_outputs(o.output_dir, s, outs, n_out, NULL);
        if (rc >= 0) goto done;
    }
    if (o.check) {
        rc = check_against_cpu(&o, m, n_in, names, (const rlx_tensor *const *)inputs, s, outs, n_out, NULL);
        if (rc >= 0) goto done;
    }
    if (o.report) fputs(rlx_session_dispatch_report(s), stdout);
    rc = CLI_EXIT_OK;
done:
    fflush(stdout);
    free(times);
    free_outputs(outs, n_out);
    cli_model_inputs_free(names, inputs, n_in);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    cli_model_args_free(&o.m);
    return rc;
}
