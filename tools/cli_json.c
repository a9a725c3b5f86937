/* JSON output of the `rlx` command line (see cli.h): strings always valid
 * UTF-8, numbers as numbers (non-finite ones as null). */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 when the bytes
 * there are not one (stray continuation byte, overlong form, surrogate,
 * beyond U+10FFFF, cut short). */
static int utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (p[1] < lo || p[1] > hi) return 0; /* also stops at the NUL */
    for (int k = 2; k < n; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return n;
}

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        int n = utf8_len(p);
        if (n == 0) { /* a byte that is not UTF-8: U+FFFD REPLACEMENT CHARACTER */
            fputs("\\ufffd", f);
            p++;
        } else if (n == 2 && p[0] == 0xC2 && p[1] < 0xA0) { /* C1 controls (CSI, OSC) as \u0080..\u009f */
            fprintf(f, "\\u%04x", p[1]);
            p += 2;
        } else if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        } else {
            if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
            else if (*p == '\n') fputs("\\n", f);
            else if (*p == '\t') fputs("\\t", f);
            else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
            p++;
        }
    }
    fputc('"', f);
}

/* Starts a member: the comma, the line break and indent, the key. */
static void member(cli_json *j, const char *key) {
    if (j->depth > 0 && j->depth <= CLI_JSON_MAX_DEPTH) {
        if (j->count[j->depth - 1]++) fputc(',', j->f);
        if (j->depth <= j->pretty_depth) fprintf(j->f, "\n%*s", 2 * j->depth, "");
        else if (j->count[j->depth - 1] > 1) fputc(' ', j->f);
    }
    if (key) {
        cli_json_string(j->f, key);
        fputs(": ", j->f);
    }
}

static bool g_err_json, g_began; /* cli_json_errors; a document (or the error's) begun */

void cli_json_errors(bool on) { g_err_json = on; }

/* The first error after the command's document began, for its "error"
 * member (cli_json_error_member). */
static char g_pend_status[32], g_pend_msg[2048];

void cli_json_error_out(const char *status, const char *message) {
    if (g_err_json && g_began && !g_pend_status[0]) {
        snprintf(g_pend_status, sizeof g_pend_status, "%s", status);
        snprintf(g_pend_msg, sizeof g_pend_msg, "%s", message);
    }
    if (!g_err_json || g_began) return;
    g_began = true;
    fputs("{\"error\": {\"status\": ", stdout);
    cli_json_string(stdout, status);
    fputs(", \"message\": ", stdout);
    cli_json_string(stdout, message);
    fputs("}}\n", stdout);
    fflush(stdout);
}

void cli_json_error_member(cli_json *j) {
    if (!g_pend_status[0]) return;
    cli_json_obj(j, "error");
    cli_json_s(j, "status", g_pend_status);
    cli_json_s(j, "message", g_pend_msg);
    cli_json_end_obj(j);
}

void cli_json_init(cli_json *j, FILE *f) {
    if (f == stdout) g_began = true;
    memset(j, 0, sizeof *j);
    j->f = f;
    j->pretty_depth = 1;
}

static void open_(cli_json *j, const char *key, char c) {
    member(j, key);
    fputc(c, j->f);
    if (j->depth < CLI_JSON_MAX_DEPTH) j->count[j->depth] = 0;
    j->depth++;
}

static void close_(cli_json *j, char c) {
    j->depth--;
    if (j->depth < j->pretty_depth && j->depth < CLI_JSON_MAX_DEPTH && j->count[j->depth])
        fprintf(j->f, "\n%*s", 2 * j->depth, "");
    fputc(c, j->f);
    if (j->depth == 0) fputc('\n', j->f);
}

void cli_json_obj(cli_json *j, const char *key) { open_(j, key, '{'); }
void cli_json_arr(cli_json *j, const char *key) { open_(j, key, '['); }
void cli_json_end_obj(cli_json *j) { close_(j, '}'); }
void cli_json_end_arr(cli_json *j) { close_(j, ']'); }

void cli_json_s(cli_json *j, const char *key, const char *v) {
    member(j, key);
    if (v) cli_json_string(j->f, v);
    else fputs("null", j->f);
}

void cli_json_n(cli_json *j, const char *key, double v) {
    member(j, key);
    if (isfinite(v)) fprintf(j->f, "%.17g", v);
    else fputs("null", j->f);
}

void cli_json_i(cli_json *j, const char *key, int64_t v) {
    member(j, key);
    fprintf(j->f, "%lld", (long long)v);
}

void cli_json_u(cli_json *j, const char *key, uint64_t v) {
    member(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void cli_json_b(cli_json *j, const char *key, bool v) {
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void cli_json_dims(cli_json *j, const char *key, const int64_t *dims, int rank) {
    member(j, key);
    fputc('[', j->f);
    for (int i = 0; i < rank; i++) fprintf(j->f, "%s%lld", i ? ", " : "", (long long)dims[i]);
    fputc(']', j->f);
}

void cli_json_info_dims(cli_json *j, const char *key, const rlx_value_info *vi) {
    member(j, key);
    if (vi->rank < 0) {
        fputs("null", j->f);
        return;
    }
    fputc('[', j->f);
    for (int i = 0; i < vi->rank; i++) {
        if (i) fputs(", ", j->f);
        if (vi->dims[i] >= 0) fprintf(j->f, "%lld", (long long)vi->dims[i]);
        else if (vi->dim_names[i]) cli_json_string(j->f, vi->dim_names[i]);
        else fputs("null", j->f);
    }
    fputc(']', j->f);
}

void cli_json_run_head(cli_json *j, const char *model, const rlx_session *s, const char *device_arg, size_t n_in,
                       const char *const *names, rlx_tensor *const *inputs, const cli_named_list *files) {
    cli_json_s(j, "model", model);
    cli_json_s(j, "device", rlx_session_device_name(s));
    cli_json_s(j, "device_arg", device_arg);
    cli_json_arr(j, "inputs");
    for (size_t i = 0; i < n_in; i++) {
        cli_json_obj(j, NULL);
        cli_json_s(j, "name", names[i]);
        cli_json_s(j, "dtype", rlx_dtype_name(inputs[i]->dtype));
        cli_json_dims(j, "shape", inputs[i]->dims, inputs[i]->rank);
        const cli_named *given = files ? cli_named_find(files, names[i]) : NULL;
        cli_json_s(j, "file", given ? given->value : NULL);
        cli_json_end_obj(j);
    }
    cli_json_end_arr(j);
}

/* ------------------------------------------------------------ progress */

bool cli_progress_wanted(const rlx_options *opts, bool quiet) {
    if (quiet) return false;
    const char *v = NULL;
    rlx_options_effective(opts, "progress", &v, NULL);
    if (v && strcmp(v, "off") == 0) return false;
    if (v && strcmp(v, "on") == 0) return true;
    return cli_stderr_is_tty();
}

static bool g_line_open; /* a progress line is on stderr */

void cli_progress(bool on, const char *fmt, ...) {
    if (!on) return;
    g_line_open = true;
    va_list ap;
    va_start(ap, fmt);
    fputc('\r', stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\033[K", stderr);
    va_end(ap);
    fflush(stderr);
}

void cli_progress_end(bool on) {
    if (!on || !g_line_open) return;
    g_line_open = false;
    fputs("\r\033[K", stderr);
    fflush(stderr);
}

int cli_quiet(rlx_options **opts, const char *command) {
    if (!*opts && rlx_options_create(opts)) return cli_usage_error(command, "out of memory");
    if (rlx_options_set(*opts, "progress", "off")) return cli_fail(RLX_ERR_INTERNAL, "--quiet");
    return -1;
}

void cli_log(rlx_log_level level, const char *message, void *user) {
    (void)user;
    if (level == RLX_LOG_PROGRESS) {
        if (*message) cli_progress(true, "%s", message);
        else cli_progress_end(true);
        return;
    }
    cli_progress_end(true);
    const char *prefix = level == RLX_LOG_WARNING ? "rlx: warning: " : level == RLX_LOG_ERROR ? "rlx: error: " : "";
    fprintf(stderr, "%s%s\n", prefix, message);
}
