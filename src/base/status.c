#include "base/status.h"

#include "base/escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RLX_MSG_CAP 2048

static _Thread_local char g_msg[RLX_MSG_CAP];

const char *rlx_last_error(void) { return g_msg; }

void rlx_clear_error(void) { g_msg[0] = '\0'; }

/* Every message is escaped (base/escape.h): its arguments are often names
 * from a model file, which may hold terminal escapes or invalid UTF-8. */
rlx_status rlx_fail(rlx_status status, const char *fmt, ...) {
    char raw[RLX_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    rlx_escape_into(raw, g_msg, sizeof g_msg, false);
    return status;
}

rlx_status rlx_fail_prefix(rlx_status status, const char *fmt, ...) {
    char raw[512], prefix[512], old[RLX_MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    rlx_escape_into(raw, prefix, sizeof prefix, false);
    memcpy(old, g_msg, sizeof old);
    size_t lp = strlen(prefix), lo = strlen(old);
    if (lp > RLX_MSG_CAP - 1) lp = RLX_MSG_CAP - 1;
    if (lo > RLX_MSG_CAP - 1 - lp) lo = RLX_MSG_CAP - 1 - lp;
    memcpy(g_msg, prefix, lp);
    memcpy(g_msg + lp, old, lo);
    g_msg[lp + lo] = '\0';
    return status;
}

const char *rlx_status_name(rlx_status status) {
    switch (status) {
    case RLX_OK: return "RLX_OK";
    case RLX_ERR_INVALID_ARGUMENT: return "RLX_ERR_INVALID_ARGUMENT";
    case RLX_ERR_INVALID_MODEL: return "RLX_ERR_INVALID_MODEL";
    case RLX_ERR_UNSUPPORTED: return "RLX_ERR_UNSUPPORTED";
    case RLX_ERR_IO: return "RLX_ERR_IO";
    case RLX_ERR_OUT_OF_MEMORY: return "RLX_ERR_OUT_OF_MEMORY";
    case RLX_ERR_NO_ADAPTER: return "RLX_ERR_NO_ADAPTER";
    case RLX_ERR_DEVICE: return "RLX_ERR_DEVICE";
    case RLX_ERR_DEVICE_LOST: return "RLX_ERR_DEVICE_LOST";
    case RLX_ERR_INTERNAL: return "RLX_ERR_INTERNAL";
    case RLX_ERR_CANCELLED: return "RLX_ERR_CANCELLED";
    }
    return "RLX_ERR_?";
}
