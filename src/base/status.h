/* Internal status helpers: rlx_fail records a formatted message for
 * rlx_last_error() and returns the status, so errors are written where the
 * fact is known:  return rlx_fail(RLX_ERR_INVALID_MODEL, "node '%s': ...", n);
 */
#ifndef RLX_BASE_STATUS_H
#define RLX_BASE_STATUS_H

#include "rlx/rlx.h"

#if defined(__GNUC__)
#define RLX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RLX_PRINTF(a, b)
#endif

/* Records the message (printf format) and returns `status`. */
rlx_status rlx_fail(rlx_status status, const char *fmt, ...) RLX_PRINTF(2, 3);

/* Prepends context ("file.onnx: ") to the current message; returns status. */
rlx_status rlx_fail_prefix(rlx_status status, const char *fmt, ...) RLX_PRINTF(2, 3);

/* Clears the message (on entry to a public call that succeeds). */
void rlx_clear_error(void);

#define RLX_TRY(expr)                     \
    do {                                  \
        rlx_status rlx_s_ = (expr);       \
        if (rlx_s_ != RLX_OK) return rlx_s_; \
    } while (0)

/* Goto-style variant: sets `st` and jumps to `label` on failure. */
#define RLX_TRY_GOTO(st, expr, label)     \
    do {                                  \
        (st) = (expr);                    \
        if ((st) != RLX_OK) goto label;   \
    } while (0)

#define RLX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
