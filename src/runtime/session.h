/* Internal session interface (for the CLI, tests and benchmarks). */
#ifndef RLX_RUNTIME_SESSION_H
#define RLX_RUNTIME_SESSION_H

#include "plan/program.h"
#include "rlx/rlx.h"
#include "runtime/exec.h"

typedef struct rlx_compile_stats {
    double passes_s;          /* specialise, fold, DCE, plan (seconds) */
    double backend_compile_s; /* pipelines, buffers, bind groups (seconds) */
    int nodes_folded, nodes_removed, nodes_fused; /* by the passes */
} rlx_compile_stats;

/* Stats and program of the plan used last (NULL before the first run, or
 * program NULL for an eager plan). */
const rlx_compile_stats *rlx_session_last_stats(const rlx_session *s);
const rlx_program *rlx_session_last_program(const rlx_session *s);

/* Plans held in the session's cache (at most 8, least recently used
 * evicted first), and plans compiled since the session was created. */
size_t rlx_session_plan_count(const rlx_session *s);
uint64_t rlx_session_compile_count(const rlx_session *s);

/* The session's (device) backend, and the executable of the plan used
 * last (NULL before the first run or for an eager plan; its statistics and
 * timing: runtime/exec.h). Borrowed. */
rlx_backend *rlx_session_backend(const rlx_session *s);
rlx_exec *rlx_session_last_exec(const rlx_session *s);

/* rlx_session_prepare and rlx_session_run_into are public (rlx/session_ext.h). */

#endif
