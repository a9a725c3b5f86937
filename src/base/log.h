/* Internal logging: every message rlx writes (debug output, progress,
 * warnings) goes through rlx_log, which hands it to the log function set
 * with rlx_set_log_callback (rlx/rlx.h) or prints it to stderr. Nothing
 * else in the library writes to stderr. */
#ifndef RLX_BASE_LOG_H
#define RLX_BASE_LOG_H

#include <stdio.h>

#include "base/status.h"

/* True when a message of `level` would be delivered (skip costly text). */
bool rlx_log_enabled(rlx_log_level level);

/* Formats and delivers one message (a trailing newline is dropped). */
void rlx_log(rlx_log_level level, const char *fmt, ...) RLX_PRINTF(2, 3);

/* Delivers what `write(f, arg)` writes to a FILE (IR dumps), as one
 * message of `level`. */
void rlx_log_stream(rlx_log_level level, void (*write)(FILE *f, const void *arg), const void *arg);

#endif
