/* Stopping runs (runctl.h): terminate requests and per-run time limits. */
#include "base/runctl.h"


uint64_t rlx_run_ctl_enter(rlx_run_ctl *c) { return atomic_load(&c->stop); }

rlx_status rlx_run_ctl_begin(rlx_run_ctl *c, uint64_t seen, int64_t limit_ms) {
    c->seen = seen;
    c->t0 = rlx_now_seconds();
    c->limit_ms = limit_ms > 0 ? limit_ms : 0;
    /* from the precise clock: the coarse one lags it by up to a tick, so
     * a run never stops before its limit (at most a tick after it) */
    c->deadline = limit_ms > 0 ? c->t0 + (double)limit_ms * 1e-3 : 0.0;
    if (atomic_load(&c->hold))
        return rlx_fail(RLX_ERR_CANCELLED, "run refused: the session's terminate flag is set "
                                           "(rlx_session_set_terminate(session, false) clears it)");
    if (atomic_load(&c->stop) != seen)
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by rlx_session_terminate while it waited for its turn");
    return RLX_OK;
}

void rlx_run_ctl_terminate(rlx_run_ctl *c) { atomic_fetch_add(&c->stop, 1); }

void rlx_run_ctl_hold(rlx_run_ctl *c, bool hold) {
    /* the flag first, so that a run entering after the request sees it */
    atomic_store(&c->hold, hold);
    if (hold) atomic_fetch_add(&c->stop, 1);
}

rlx_status rlx_run_stop_error(const rlx_run_ctl *c) {
    if (atomic_load(&((rlx_run_ctl *)c)->stop) != c->seen)
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by %s",
                        atomic_load(&((rlx_run_ctl *)c)->hold) ? "rlx_session_set_terminate" : "rlx_session_terminate");
    return rlx_fail(RLX_ERR_CANCELLED, "run stopped by its time limit (run.timeout_ms = %lld) after %.0f ms",
                    (long long)c->limit_ms, (rlx_now_seconds() - c->t0) * 1e3);
}
