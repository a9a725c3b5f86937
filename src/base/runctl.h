/* Stopping runs: the terminate requests of a session (rlx_session_terminate,
 * rlx_session_set_terminate) and its per-run time limit (option
 * run.timeout_ms), checked by whatever evaluates nodes on the host.
 *
 * One rlx_run_ctl per session. Another thread may request a stop at any
 * time (rlx_run_ctl_terminate: an atomic increment of `stop`); the run in
 * progress compares `stop` with the value it saw when it entered the
 * session (`seen`), so every run that entered before the request stops at
 * its next check and runs that enter later are not affected. The time
 * limit is a deadline on the coarse monotonic clock
 * (rlx_now_coarse_seconds: a few ns per check, a few ms of resolution),
 * read only when a limit is set. The per-run fields (`seen`, `deadline`, `t0`, `limit_ms`) are
 * written by the run itself under the session's lock.
 *
 * Checks (rlx_run_stopped, cheap, inline): after each host step of a
 * planned segment and before each segment (runtime/exec.c), before each
 * node of eager evaluation and of constant folding (backend/cpu/cpu_eval.c),
 * at each iteration of Loop and Scan (backend/cpu/cpu_control.c). A node
 * in progress (one kernel, one GPU submit) runs to its end. */
#ifndef RLX_BASE_RUNCTL_H
#define RLX_BASE_RUNCTL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/platform.h"
#include "base/status.h"

/* Per-run options (rlx_run_options in include/rlx/rlx.h): the terminate
 * flag of onnxruntime's RunOptions, shared by every run given them, and a
 * time limit that replaces the session's for those runs. */
struct rlx_run_options {
    atomic_bool terminate; /* set from any thread; stops the runs given these options */
    _Atomic int64_t timeout_ms; /* < 0: the session's limit; 0: none; > 0: milliseconds */
};

typedef struct rlx_run_ctl {
    _Atomic uint64_t stop; /* terminate requests so far */
    atomic_bool hold;      /* rlx_session_set_terminate(true) until set false */
    uint64_t seen;         /* `stop` when the current run entered the session */
    double t0;             /* when the current run began (rlx_now_seconds) */
    double deadline;       /* t0 + its time limit, compared with the coarse clock; 0: no limit */
    int64_t limit_ms;      /* the limit the deadline came from */
    const struct rlx_run_options *ro; /* the current run's options, NULL: none */
    bool ro_limit;         /* limit_ms came from ro, not from the session */
} rlx_run_ctl;

/* Whether the current run must stop: a terminate request since it entered,
 * its run options' terminate flag, or its deadline passed. c NULL: never
 * (evaluation outside a session). */
static inline bool rlx_run_stopped(const rlx_run_ctl *c) {
    if (!c) return false;
    if (atomic_load_explicit(&((rlx_run_ctl *)c)->stop, memory_order_relaxed) != c->seen) return true;
    if (c->ro && atomic_load_explicit(&((struct rlx_run_options *)c->ro)->terminate, memory_order_relaxed)) return true;
    return c->deadline > 0.0 && rlx_now_coarse_seconds() >= c->deadline;
}

/* The value `stop` has now: what a run entering the session records. */
uint64_t rlx_run_ctl_enter(rlx_run_ctl *c);

/* Refuses a run at its entry, before it waits for its turn, when the
 * session's terminate flag (rlx_run_ctl_hold) or ro's is set.
 * errors: RLX_ERR_CANCELLED ("run refused: ..."). */
rlx_status rlx_run_ctl_refuse(rlx_run_ctl *c, const struct rlx_run_options *ro);

/* The run that entered with `seen` begins now, with run options ro (NULL:
 * none) under a limit of limit_ms milliseconds (0: none), or ro's limit
 * when it has one. errors: RLX_ERR_CANCELLED when the session's or ro's
 * terminate flag was set or a terminate request came while the run waited
 * for its turn (rlx_run_ctl_refuse checked the flags at its entry). rlx_run_ctl_end when the run returns (ro may be freed
 * after that). */
rlx_status rlx_run_ctl_begin(rlx_run_ctl *c, uint64_t seen, int64_t limit_ms, const struct rlx_run_options *ro);
void rlx_run_ctl_end(rlx_run_ctl *c);

/* Stops every run that has entered (thread-safe, any thread); with hold,
 * later runs too until rlx_run_ctl_hold(c, false). */
void rlx_run_ctl_terminate(rlx_run_ctl *c);
void rlx_run_ctl_hold(rlx_run_ctl *c, bool hold);

/* RLX_ERR_CANCELLED with a message saying which stop it was: "run
 * cancelled by rlx_session_terminate" or "run stopped by its time limit
 * (run.timeout_ms = N) after M ms"; the caller prefixes where the run
 * stopped (rlx_fail_prefix: the node, iteration or step); "run cancelled by
 * its run options (rlx_run_options_set_terminate)". For a check
 * that saw rlx_run_stopped(c) true. */
rlx_status rlx_run_stop_error(const rlx_run_ctl *c);

#endif
