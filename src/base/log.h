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

/* An internal contract broken inside rlx: a programming error that no
 * model or caller can cause (a parameter read by an attribute id that its
 * op's schema lacks, graph.c; a schema attribute name missing from
 * src/ir/attr_names.def, op.c). Logged as a warning and counted, and the
 * caller goes on as it did before the check (a release build runs as
 * before); a build without NDEBUG (CMAKE_BUILD_TYPE Debug) aborts after
 * the message. The test programs fail while the count is not what they
 * expect (tests/test.h TEST_MAIN_END, backend-ops), so a fault fails the
 * test suite. */
void rlx_internal_fault(const char *fmt, ...) RLX_PRINTF(1, 2);

/* How many internal faults this process has had; *first (when not NULL)
 * receives the first one's message ("" when none). */
unsigned long rlx_internal_fault_count(const char **first);

#endif
