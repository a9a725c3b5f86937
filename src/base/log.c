/* The log function (rlx_set_log_callback) and the default one, which
 * prints to stderr: a progress message rewrites the current line ("\r",
 * then the text, then "erase to the end of the line"), and the next other
 * message, or an empty progress message, clears it first. */
#include "base/log.h"

#include "base/escape.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>


static rlx_log_fn g_fn;
static void *g_user;
static rlx_log_level g_min = RLX_LOG_DEBUG;
static bool g_progress_open; /* the default printer left a progress line on stderr */

void rlx_set_log_callback(rlx_log_fn fn, void *user, rlx_log_level min_level) {
    g_fn = fn;
    g_user = user;
    g_min = min_level;
}

const char *rlx_log_level_name(rlx_log_level level) {
    switch (level) {
    case RLX_LOG_DEBUG: return "debug";
    case RLX_LOG_PROGRESS: return "progress";
    case RLX_LOG_INFO: return "info";
    case RLX_LOG_WARNING: return "warning";
    case RLX_LOG_ERROR: return "error";
    case RLX_LOG_OFF: return "off";
    }
    return "?";
}

bool rlx_log_enabled(rlx_log_level level) { return level >= g_min && level < RLX_LOG_OFF; }

static void print_default(rlx_log_level level, const char *msg) {
    if (level == RLX_LOG_PROGRESS) {
        if (*msg) fprintf(stderr, "\r%s\033[K", msg);
        else if (g_progress_open) fputs("\r\033[K", stderr);
        g_progress_open = *msg != 0;
        fflush(stderr);
        return;
    }
    if (g_progress_open) fputs("\r\033[K", stderr), g_progress_open = false;
    const char *prefix = level == RLX_LOG_WARNING ? "rlx: warning: " : level == RLX_LOG_ERROR ? "rlx: error: " : "";
    fprintf(stderr, "%s%s\n", prefix, msg);
}

/* Hands msg to the log function with what a terminal could act on escaped
 * (rlx_escape_into: names from model files reach messages; newlines of
 * multi-line reports stay). Already escaped text passes unchanged. */
static void deliver(rlx_log_level level, char *msg) {
    size_t n = strlen(msg);
    if (n && msg[n - 1] == '\n') msg[n - 1] = '\0', n--;
    char small[1024];
    size_t cap = 4 * n + 1; /* an escape is at most 4 bytes per input byte */
    char *safe = cap <= sizeof small ? small : malloc(cap);
    if (safe) rlx_escape_into(msg, safe, cap, true);
    else { /* no memory for the copy: drop what is not printable ASCII */
        for (char *c = msg; *c; c++)
            if ((unsigned char)*c < 0x20 ? *c != '\n' : (unsigned char)*c >= 0x7f) *c = '?';
    }
    const char *text = safe ? safe : msg;
    if (g_fn) g_fn(level, text, g_user);
    else print_default(level, text);
    if (safe != small) free(safe);
}

void rlx_log(rlx_log_level level, const char *fmt, ...) {
    if (!rlx_log_enabled(level)) return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    if ((size_t)len < sizeof small) {
        deliver(level, small);
        return;
    }
    char *big = malloc((size_t)len + 1);
    if (!big) {
        deliver(level, small); /* truncated rather than lost */
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)len + 1, fmt, ap);
    va_end(ap);
    deliver(level, big);
    free(big);
}

void rlx_log_stream(rlx_log_level level, void (*write)(FILE *f, const void *arg), const void *arg) {
    if (!rlx_log_enabled(level)) return;
    if (!g_fn) { /* the default goes to stderr anyway: no copy */
        if (g_progress_open) fputs("\r\033[K", stderr), g_progress_open = false;
        write(stderr, arg);
        return;
    }
    FILE *f = tmpfile();
    if (!f) {
        rlx_log(level, "(a dump could not be written: no temporary file)");
        return;
    }
    write(f, arg);
    long len = ftell(f);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (text && fseek(f, 0, SEEK_SET) == 0) {
        size_t got = fread(text, 1, (size_t)len, f);
        text[got] = '\0';
        deliver(level, text);
    }
    free(text);
    fclose(f);
}

static atomic_ulong g_faults;
static atomic_flag g_fault_kept = ATOMIC_FLAG_INIT;
static char g_first_fault[512];

void rlx_internal_fault(const char *fmt, ...) {
    char msg[sizeof g_first_fault];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!atomic_flag_test_and_set(&g_fault_kept)) memcpy(g_first_fault, msg, sizeof msg);
    atomic_fetch_add(&g_faults, 1);
    rlx_log(RLX_LOG_WARNING, "internal fault (a bug in rlx, please report it): %s", msg);
#ifndef NDEBUG
    abort();
#endif
}

unsigned long rlx_internal_fault_count(const char **first) {
    unsigned long n = atomic_load(&g_faults);
    if (first) *first = n ? g_first_fault : "";
    return n;
}
