/* Stopping runs (runctl.h): terminate requests and per-run time limits. */
#include "base/runctl.h"


uint64_t rlx_run_ctl_enter(rlx_run_ctl *c) { return atomic_load(&c->stop); }

rlx_status rlx_run_ctl_refuse(rlx_run_ctl *c, const struct rlx_run_options *ro) {
    if (atomic_load(&c->hold))
        return rlx_fail(RLX_ERR_CANCELLED, "run refused: the session's terminate flag is set "
                                           "(rlx_session_set_terminate(session, false) clears it)");
    if (ro && atomic_load(&((struct rlx_run_options *)ro)->terminate))
        return rlx_fail(RLX_ERR_CANCELLED, "run refused: its run options' terminate flag is set "
                                           "(rlx_run_options_set_terminate(options, false) clears it)");
    return RLX_OK;
}

rlx_status rlx_run_ctl_begin(rlx_run_ctl *c, uint64_t seen, int64_t limit_ms, const struct rlx_run_options *ro) {
    c->ro = ro;
    c->ro_limit = false;
    if (ro) {
        int64_t own = atomic_load(&((struct rlx_run_options *)ro)->timeout_ms);
        if (own >= 0) limit_ms = own, c->ro_limit = true;
    }
    c->seen = seen;
    c->t0 = rlx_now_seconds();
    c->limit_ms = limit_ms > 0 ? limit_ms : 0;
    /* from the precise clock: the coarse one lags it by up to a tick, so
     * a run never stops before its limit (at most a tick after it) */
    c->deadline = limit_ms > 0 ? c->t0 + (double)limit_ms * 1e-3 : 0.0;
    /* set after rlx_run_ctl_refuse passed the run: while it waited (a
     * run of the same options stopped and handed the session over before
     * the waiting one's next look at the flag) */
    if (atomic_load(&c->hold))
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by rlx_session_set_terminate while it waited for its turn");
    if (ro && atomic_load(&((struct rlx_run_options *)ro)->terminate))
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by its run options (rlx_run_options_set_terminate) "
                                           "while it waited for its turn");
    if (atomic_load(&c->stop) != seen)
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by rlx_session_terminate while it waited for its turn");
    return RLX_OK;
}

void rlx_run_ctl_end(rlx_run_ctl *c) { c->ro = NULL; }

void rlx_run_ctl_terminate(rlx_run_ctl *c) { atomic_fetch_add(&c->stop, 1); }

void rlx_run_ctl_hold(rlx_run_ctl *c, bool hold) {
    /* the flag first, so that a run entering after the request sees it */
    atomic_store(&c->hold, hold);
    if (hold) atomic_fetch_add(&c->stop, 1);
}

rlx_status rlx_run_stop_error(const rlx_run_ctl *c) {
    if (c->ro && atomic_load(&((struct rlx_run_options *)c->ro)->terminate))
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by its run options (rlx_run_options_set_terminate)");
    if (atomic_load(&((rlx_run_ctl *)c)->stop) != c->seen)
        return rlx_fail(RLX_ERR_CANCELLED, "run cancelled by %s",
                        atomic_load(&((rlx_run_ctl *)c)->hold) ? "rlx_session_set_terminate" : "rlx_session_terminate");
    return rlx_fail(RLX_ERR_CANCELLED, "run stopped by its time limit (%s = %lld) after %.0f ms",
                    c->ro_limit ? "its run options' timeout_ms" : "run.timeout_ms", (long long)c->limit_ms,
                    (rlx_now_seconds() - c->t0) * 1e3);
}
