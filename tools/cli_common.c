/* Shared helpers of the `rlx` command line (see cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "rlx/inspect.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifndef _WIN32
#include <dirent.h>
#include <unistd.h>
#endif
#ifdef _WIN32
#include <direct.h>
#endif

bool cli_stderr_is_tty(void) {
#ifdef _WIN32
    return false;
#else
    return isatty(STDERR_FILENO) == 1;
#endif
}

/* The error line on stderr and, under cli_json_errors, the JSON object.
 * The message is escaped (rlx_escape_text) as a whole: it may quote names
 * from the model file or from the command line; text that is already
 * escaped (rlx_last_error) comes through unchanged. */
static void error_v(const char *status, const char *suffix, const char *fmt, va_list ap) {
    char raw[2048], msg[2048];
    vsnprintf(raw, sizeof raw, fmt, ap);
    rlx_escape_text(raw, msg, sizeof msg);
    fprintf(stderr, "rlx: error: %s%s\n", msg, suffix);
    cli_json_error_out(status, msg);
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    error_v("RLX_ERR_FAILURE", "", fmt, ap);
    va_end(ap);
}

static void error_status(rlx_status st, const char *fmt, ...) CLI_PRINTF(2, 3);
static void error_status(rlx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    error_v(rlx_status_name(st), "", fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *command, const char *fmt, ...) {
    char hint[160];
    snprintf(hint, sizeof hint, " (see 'rlx %s%s--help')", command ? command : "", command ? " " : "");
    va_list ap;
    va_start(ap, fmt);
    error_v("RLX_ERR_USAGE", hint, fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_exit_code(rlx_status st) {
    switch (st) {
    case RLX_OK: return CLI_EXIT_OK;
    case RLX_ERR_INVALID_ARGUMENT:
    case RLX_ERR_INVALID_MODEL:
    case RLX_ERR_UNSUPPORTED:
    case RLX_ERR_IO: return CLI_EXIT_USAGE;
    default: return CLI_EXIT_FAILURE;
    }
}

int cli_fail(rlx_status st, const char *what) {
    const char *msg = rlx_last_error();
    if (msg && *msg)
        error_status(st, "%s: %s (%s)", what, msg, rlx_status_name(st));
    else
        error_status(st, "%s (%s)", what, rlx_status_name(st));
    return cli_exit_code(st);
}

int cli_fail_model(rlx_status st, const char *path) {
    const char *msg = rlx_last_error();
    if (msg && strstr(msg, path)) {
        error_status(st, "%s (%s)", msg, rlx_status_name(st));
        return cli_exit_code(st);
    }
    char what[1200];
    snprintf(what, sizeof what, "cannot load model '%s'", path);
    return cli_fail(st, what);
}

bool cli_opt_value(int argc, char **argv, int *i, const char *name, const char **out, const char *command,
                   bool *err) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *out = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        cli_usage_error(command, "option %s needs a value", name);
        *err = true;
        return true;
    }
    *out = argv[++*i];
    return true;
}

bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    /* digits, after a '-' only where negatives are allowed (strtoll would
     * also take leading spaces, '+' and "-0": 'gpu: 1' and 'gpu:+1' passed
     * the CLI's check and failed in the library) */
    if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && lo < 0 && isdigit((unsigned char)s[1])))) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = (int64_t)v;
    return true;
}

int cli_i64_flag(const char *command, const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    if (cli_parse_i64(v, lo, hi, out)) return -1;
    return cli_usage_error(command, "bad %s '%s' (expected %lld..%lld)", flag, v, (long long)lo, (long long)hi);
}

bool cli_parse_f64(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

bool cli_parse_shape(const char *s, int64_t *dims, int *rank, char *why, size_t why_cap) {
    const long long max_dim = (long long)1 << 40;
    *rank = 0;
    if (!*s || strcmp(s, "scalar") == 0) return true;
    const char *p = s;
    for (;;) {
        if (*rank == RLX_MAX_RANK) {
            snprintf(why, why_cap, "more than %d dims", RLX_MAX_RANK);
            return false;
        }
        char *end;
        if (*p < '0' || *p > '9') break;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || v > max_dim) {
            snprintf(why, why_cap, "dim %d (%.*s) is too large (at most 2^40 = %lld)", *rank, (int)(end - p), p, max_dim);
            return false;
        }
        dims[(*rank)++] = (int64_t)v;
        if (*end == '\0') return true;
        if (*end != 'x' && *end != 'X' && *end != ',') break;
        p = end + 1;
    }
    snprintf(why, why_cap, "expected NAME=DxDx..., e.g. x=1x3x224x224");
    return false;
}

char *cli_shape_str(const int64_t *dims, int rank, char *buf, size_t cap) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

char *cli_info_shape_str(const rlx_value_info *info, char *buf, size_t cap) {
    if (info->rank < 0) {
        snprintf(buf, cap, "unknown rank");
        return buf;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < info->rank && o < cap; i++) {
        const char *sep = i ? "," : "";
        if (info->dims[i] >= 0)
            o += (size_t)snprintf(buf + o, cap - o, "%s%lld", sep, (long long)info->dims[i]);
        else if (info->dim_names[i])
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", sep, info->dim_names[i]);
        else
            o += (size_t)snprintf(buf + o, cap - o, "%s?", sep);
    }
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

char *cli_bytes_str(uint64_t bytes, char *buf, size_t cap) {
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.3g %s", v, units[u]);
    return buf;
}

char *cli_bytes_long_str(uint64_t bytes, char *buf, size_t cap) {
    char short_form[32];
    if (bytes < 1024)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%s (%llu bytes)", cli_bytes_str(bytes, short_form, sizeof short_form),
                 (unsigned long long)bytes);
    return buf;
}

char *cli_time_str(double s, char *buf, size_t cap) {
    if (s < 1e-3)
        snprintf(buf, cap, "%.3g us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3g s", s);
    return buf;
}

static bool mkdir_one(const char *p) {
#ifdef _WIN32
    int r = _mkdir(p);
#else
    int r = mkdir(p, 0777);
#endif
    if (r == 0) return true;
    if (errno == EEXIST) {
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) return true;
        errno = ENOTDIR;
    }
    return false;
}

bool cli_mkdirs(const char *path) {
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) {
        errno = ENOMEM;
        return false;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (p[i] != '/') continue;
        p[i] = '\0';
        bool ok = mkdir_one(p);
        p[i] = '/';
        if (!ok) {
            free(p);
            return false;
        }
    }
    bool ok = mkdir_one(p);
    free(p);
    return ok;
}

bool cli_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cli_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

#ifndef _WIN32
static int entry_wanted(const struct dirent *e) { return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0; }
static int entry_cmp(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

bool cli_list_dir(const char *path, char ***out_names, size_t *out_count) {
    *out_names = NULL;
    *out_count = 0;
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, entry_wanted, entry_cmp);
    if (n < 0) return false;
    char **names = calloc((size_t)n + 1, sizeof *names);
    bool ok = names != NULL;
    for (int i = 0; i < n; i++) {
        if (ok && !(names[i] = strdup(ents[i]->d_name))) ok = false;
        free(ents[i]);
    }
    free(ents);
    if (!ok) {
        for (int i = 0; names && i < n; i++) free(names[i]);
        free(names);
        errno = ENOMEM;
        return false;
    }
    *out_names = names;
    *out_count = (size_t)n;
    return true;
}
#endif

double cli_elem_f64(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_F16: return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_BF16: return rlx_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case RLX_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case RLX_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case RLX_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case RLX_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_U64: return (double)((const uint64_t *)t->data)[i];
    case RLX_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i] ? 1.0 : 0.0;
    default: return NAN;
    }
}

const char *cli_esc(const char *s) {
    static char bufs[4][512];
    static unsigned next;
    char *b = bufs[next++ % 4];
    return rlx_escape_text(s, b, sizeof bufs[0]);
}

/* Flags that are short for one option: --max-tensor-bytes N is --option
 * limits.max_tensor_bytes=N, --timeout MS is --option run.timeout_ms=MS. */
static const char *const k_limit_flags[][2] = { { "--max-model-bytes", "limits.max_model_bytes" },
                                                { "--max-arena-bytes", "limits.max_arena_bytes" },
                                                { "--max-tensor-bytes", "limits.max_tensor_bytes" },
                                                { "--timeout", "run.timeout_ms" } };

bool cli_option_arg(int argc, char **argv, int *i, rlx_options **opts, const char *command, bool *err) {
    const char *v = NULL, *flag = "--option";
    char kv[160];
    bool got = cli_opt_value(argc, argv, i, "--option", &v, command, err);
    for (size_t k = 0; !got && k < sizeof k_limit_flags / sizeof k_limit_flags[0]; k++)
        if (cli_opt_value(argc, argv, i, k_limit_flags[k][0], &v, command, err)) {
            got = true;
            flag = k_limit_flags[k][0]; /* the error names the flag the user gave */
            if (!*err) snprintf(kv, sizeof kv, "%s=%.100s", k_limit_flags[k][1], v), v = kv;
        }
    if (!got) return false;
    if (*err) return true;
    if (!*opts && rlx_options_create(opts)) {
        cli_usage_error(command, "out of memory");
        *err = true;
        return true;
    }
    if (rlx_options_parse(*opts, v)) {
        cli_usage_error(command, "%s: %s", flag, rlx_last_error());
        *err = true;
    }
    return true;
}

void cli_json_option(cli_json *j, const char *key, const char *type, const char *value) {
    const char *v = value ? value : "";
    char *end = NULL;
    if (strcmp(type, "bool") == 0) {
        static const char *const k_true[] = { "1", "true", "on", "yes" }, *const k_false[] = { "0", "false", "off", "no" };
        for (size_t i = 0; i < 4; i++) {
            if (strcmp(v, k_true[i]) == 0 || strcmp(v, k_false[i]) == 0) {
                cli_json_b(j, key, strcmp(v, k_true[i]) == 0);
                return;
            }
        }
    }
    if (*v && (strcmp(type, "int") == 0 || strcmp(type, "float") == 0)) {
        errno = 0;
        double x = strtod(v, &end);
        if (!*end && !errno) {
            cli_json_n(j, key, x);
            return;
        }
    }
    cli_json_s(j, key, v);
}

int cli_cmd_options(int argc, char **argv) {
    bool md = false, json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: rlx options [--markdown | --json]\n"
                   "\n"
                   "Lists the session options that 'rlx run', 'rlx bench' and 'rlx info' take as\n"
                   "--option KEY=VALUE (and the C API as rlx_options, Python as options={...}):\n"
                   "key, type, accepted values, default, the environment variable that supplies\n"
                   "the default when set, and what it does. --markdown prints README.md's table,\n"
                   "--json a JSON array of objects (key, type, values, default, env, doc,\n"
                   "per_process; default typed: bool true/false, int and float numbers, the\n"
                   "rest, and an int's \"auto\", strings).\n");
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--markdown") == 0) md = true;
        else if (strcmp(argv[i], "--json") == 0) json = true;
        else if (argv[i][0] == '-') return cli_usage_error("options", "unknown option '%s'", argv[i]);
        else return cli_usage_error("options", "unexpected argument '%s' (the command lists every key)", argv[i]);
    }
    if (md && json) return cli_usage_error("options", "--markdown and --json cannot be combined");
    if (json) {
        cli_json j;
        cli_json_init(&j, stdout);
        cli_json_arr(&j, NULL);
        for (size_t k = 0; k < rlx_option_count(); k++) {
            rlx_option_info in;
            if (rlx_option_info_get(k, &in)) continue;
            cli_json_obj(&j, NULL);
            cli_json_s(&j, "key", in.key);
            cli_json_s(&j, "type", in.type);
            cli_json_s(&j, "values", in.values);
            cli_json_option(&j, "default", in.type, in.default_value);
            cli_json_s(&j, "env", in.env);
            cli_json_s(&j, "doc", in.doc);
            cli_json_b(&j, "per_process", in.per_process);
            cli_json_end_obj(&j);
        }
        cli_json_end_arr(&j);
        return CLI_EXIT_OK;
    }
    if (md) {
        printf("| option | environment | values | default | what it does |\n|---|---|---|---|---|\n");
    }
    for (size_t k = 0; k < rlx_option_count(); k++) {
        rlx_option_info in;
        if (rlx_option_info_get(k, &in)) return cli_fail(RLX_ERR_INTERNAL, "option listing");
        if (md) {
            printf("| `%s` | `%s` | ", in.key, in.env);
            for (const char *c = in.values; *c; c++) /* a | inside a table cell */
                printf(*c == '|' ? "\\|" : "%c", *c);
            printf(" | `%s` | %s%s |\n", *in.default_value ? in.default_value : "\"\"", in.doc,
                   in.per_process ? " (per process)" : "");
        } else {
            printf("%-26s %-6s %s (default %s; %s)%s\n    %s\n", in.key, in.type, in.values,
                   *in.default_value ? in.default_value : "empty", in.env, in.per_process ? " per process" : "", in.doc);
        }
    }
    return CLI_EXIT_OK;
}
