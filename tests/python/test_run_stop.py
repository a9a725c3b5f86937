"""Stopping runs from Python and the CLI (issue 15): a Loop whose trip count
(2^62) would run until the process is killed is stopped by
Session.terminate() from another thread, by the option run.timeout_ms, by
Session.set_run_timeout and by the terminate flag (set_terminate); each
raises rlx.Error with status RLX_ERR_CANCELLED within a bounded time, the
message names the Loop, and the same session then computes a short Loop
right (checked against onnxruntime). `rlx run --timeout MS` and
RLX_RUN_TIMEOUT_MS stop the CLI the same way. InferenceSession.run's
run_options (rlx.RunOptions, onnxruntime's terminate) stops a run when its
terminate is set True from another thread."""
import os
import sys
import tempfile
import subprocess
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ocr_ref as R  # noqa: E402

try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T
    from onnx import helper as H
except ImportError:
    R.skip("onnx or onnxruntime is not installed (run scripts/setup.sh)")

rlx = R.import_rlx()
RLX = R.built("rlx")
C = R.Checker("test_run_stop")
rng = R.seeded_rng(15)
TMP = tempfile.mkdtemp(prefix="rlx_run_stop_")
BOUND_S = 5.0  # generous: the test machine may be loaded; an unchecked stop never returns
HUGE = 1 << 62

# y = Loop(M, "", acc0): acc + 1 per iteration
body = H.make_graph(
    [H.make_node("Identity", ["c"], ["c_out"]), H.make_node("Add", ["acc", "one"], ["acc_out"])], "body",
    [H.make_tensor_value_info("i", T.INT64, []), H.make_tensor_value_info("c", T.BOOL, []),
     H.make_tensor_value_info("acc", T.FLOAT, [3])],
    [H.make_tensor_value_info("c_out", T.BOOL, []), H.make_tensor_value_info("acc_out", T.FLOAT, [3])],
    [H.make_tensor("one", T.FLOAT, [], [1.0])])
g = H.make_graph([H.make_node("Loop", ["M", "", "acc0"], ["y"], name="loop", body=body)], "loop",
                 [H.make_tensor_value_info("M", T.INT64, []), H.make_tensor_value_info("acc0", T.FLOAT, [3])],
                 [H.make_tensor_value_info("y", T.FLOAT, [3])])
m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
m.ir_version = 8
PATH = os.path.join(TMP, "loop.onnx")
onnx.save(m, PATH)
ref = ort.InferenceSession(PATH, providers=["CPUExecutionProvider"])
acc0 = rng.uniform(-1, 1, 3).astype(np.float32)


def feeds(trips):
    return {"M": np.array(trips, dtype=np.int64), "acc0": acc0}


def check_short(s, what, trips=5):
    got = s.run(feeds(trips))[0]
    want = ref.run(None, feeds(trips))[0]
    C.check(np.array_equal(got, want), "%s: a Loop of %d after the stop equals onnxruntime (%s vs %s)"
            % (what, trips, got, want))


def expect_cancel(s, needles, what):
    t0 = time.monotonic()
    try:
        s.run(feeds(HUGE))
        C.check(False, what + ": the run of 2^62 iterations returned")
        return None
    except rlx.Error as e:
        took = time.monotonic() - t0
        C.check(e.status == "RLX_ERR_CANCELLED", "%s: status %s (%s)" % (what, e.status, e))
        for n in needles:
            C.check(n in str(e), "%s: message has %r: %s" % (what, n, e))
        print("%s: %.1f ms: %s" % (what, took * 1e3, e))
        return took


model = rlx.Model(PATH)

# terminate() from another thread
s = rlx.Session(model)
check_short(s, "fresh session")
called = []


def stop_later():
    time.sleep(0.2)
    called.append(time.monotonic())
    s.terminate()


th = threading.Thread(target=stop_later)
th.start()
expect_cancel(s, ["node 'loop' (Loop): iteration ", "rlx_session_terminate"], "terminate()")
back = time.monotonic()
th.join()
C.check(called and back - called[0] < BOUND_S, "terminate(): returned %.3f s after the call"
        % (back - called[0] if called else -1))
check_short(s, "after terminate()")

# the terminate flag (onnxruntime's RunOptions.terminate)
s.set_terminate(True)
try:
    s.run(feeds(2))
    C.check(False, "set_terminate(True): a run went through")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_CANCELLED" and "terminate flag is set" in str(e), "set_terminate(True): %s" % e)
s.set_terminate(False)
check_short(s, "after set_terminate(False)", 3)

# the option, as the other options
s = rlx.Session(model, options={"run.timeout_ms": 100})
took = expect_cancel(s, ["node 'loop' (Loop): iteration ", "(run.timeout_ms = 100)"], "run.timeout_ms=100")
C.check(took is not None and 0.1 <= took < 0.1 + BOUND_S, "run.timeout_ms=100: took %s s" % took)
check_short(s, "after the time limit")
s.set_run_timeout(40)
expect_cancel(s, ["(run.timeout_ms = 40)"], "set_run_timeout(40)")
s.set_run_timeout(0)
check_short(s, "set_run_timeout(0)", 7)
# numpy's integers are ints (a TypeError before, though intra_op_num_threads took them)
s.set_run_timeout(np.int64(40))
expect_cancel(s, ["(run.timeout_ms = 40)"], "set_run_timeout(np.int64(40))")
s.set_run_timeout(np.uint16(0))
check_short(s, "set_run_timeout(np.uint16(0))", 7)
for bad in (-1, 1.5, True, np.True_, np.float32(3), 2**64 + 1, 2**63 + 5, 2**64):
    try:
        s.set_run_timeout(bad)
        C.check(False, "set_run_timeout(%r) accepted" % (bad,))
    except (TypeError, rlx.Error) as e:
        # beyond int64 the value once wrapped: 2**64 + 1 became a 1 ms limit, 2**64 none
        C.check(isinstance(bad, (float, bool, np.floating, np.bool_)) or str(bad) in str(e),
                "set_run_timeout(%r): %s" % (bad, e))
check_short(s, "after the refused time limits", 5)
try:
    rlx.Session(model, options={"run.timeout_ms": -5})
    C.check(False, "run.timeout_ms=-5 accepted")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_INVALID_ARGUMENT" and "run.timeout_ms" in str(e), "run.timeout_ms=-5: %s" % e)

# the CLI: --timeout, and the environment variable
huge = os.path.join(TMP, "huge.onnx")
g2 = H.make_graph([H.make_node("Loop", ["M", "", "acc0"], ["y"], name="loop", body=body)], "huge",
                  [H.make_tensor_value_info("acc0", T.FLOAT, [3])], [H.make_tensor_value_info("y", T.FLOAT, [3])],
                  [H.make_tensor("M", T.INT64, [], [HUGE])])
m2 = H.make_model(g2, opset_imports=[H.make_opsetid("", 17)])
m2.ir_version = 8
onnx.save(m2, huge)
for args, env, what in (([RLX, "run", huge, "--timeout", "150"], {}, "rlx run --timeout 150"),
                        ([RLX, "run", huge], {"RLX_RUN_TIMEOUT_MS": "150"}, "RLX_RUN_TIMEOUT_MS=150")):
    e = dict(os.environ)
    e.update(env)
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=60, env=e)
    took = time.monotonic() - t0
    C.check(p.returncode == 1 and "RLX_ERR_CANCELLED" in p.stderr and "(run.timeout_ms = 150)" in p.stderr
            and "node 'loop' (Loop)" in p.stderr, "%s: rc %d, %s" % (what, p.returncode, p.stderr.strip()[-300:]))
    C.check(took < 30, "%s: %.1f s" % (what, took))
rc, out, err = R.run([RLX, "run", "--help"])
C.check("--timeout MS" in out + err, "rlx run --help names --timeout")
# a bad value names the flag the user gave (it said '--option: run.timeout_ms=...')
for flag, key in (("--timeout", "run.timeout_ms"), ("--max-tensor-bytes", "limits.max_tensor_bytes")):
    rc, out, err = R.run([RLX, "run", huge, flag, "-1"])
    C.check(rc == 2 and ("%s: %s='-1'" % (flag, key)) in err and "--option" not in err,
            "rlx run %s -1: rc %d, %s" % (flag, rc, err.strip()[-300:]))

# InferenceSession.run(..., run_options): onnxruntime's RunOptions.terminate
# set True from another thread stops the run (it raised "rlx has no per-run
# options" for any run_options). The stop is per run (rlx_run_options): a
# run of the same session without the options, waiting for its turn, goes
# on. The same options and session then run again once terminate is False.
isess = rlx.InferenceSession(PATH)
ro = rlx.RunOptions()
C.check(not ro.terminate and ro.log_severity_level == 2, "RunOptions defaults")
try:  # a misspelt attribute is refused, as by onnxruntime's RunOptions (a tester's finding: it was kept)
    ro.terminat = True
    C.check(False, "RunOptions accepted an unknown attribute 'terminat'")
except AttributeError:
    pass
ro.log_severity_level = 3
ro.run_tag = "t"
got = isess.run(None, feeds(4), ro)[0]
C.check(np.array_equal(got, ref.run(None, feeds(4))[0]), "run with RunOptions: a Loop of 4 equals onnxruntime")
called = []


def terminate_later():
    time.sleep(0.2)
    called.append(time.monotonic())
    ro.terminate = True


other = {}


def run_other():  # starts after the long run, waits for its turn, must complete
    time.sleep(0.1)
    try:
        other["y"] = isess.run(None, feeds(6))[0]
    except rlx.Error as e:
        other["error"] = e


th = threading.Thread(target=terminate_later)
th.start()
th_other = threading.Thread(target=run_other)
th_other.start()
try:
    isess.run(["y"], feeds(HUGE), run_options=ro)
    C.check(False, "RunOptions.terminate: the run of 2^62 iterations returned")
except rlx.Error as e:
    back = time.monotonic()
    C.check(e.status == "RLX_ERR_CANCELLED" and isinstance(e, RuntimeError) and "RunOptions.terminate" in str(e)
            and "node 'loop' (Loop)" in str(e), "RunOptions.terminate: %s" % e)
    C.check(called and back - called[0] < BOUND_S, "RunOptions.terminate: returned %.3f s after it was set"
            % (back - called[0] if called else -1))
    print("RunOptions.terminate: %s" % e)
th.join()
th_other.join()
C.check("y" in other and np.array_equal(other["y"], ref.run(None, feeds(6))[0]),
        "a run of the same session without the options went on: %s" % other.get("error"))
try:  # still True: a run with these options is refused at once
    isess.run(None, feeds(2), ro)
    C.check(False, "RunOptions.terminate True: a run went through")
except rlx.Error as e:
    C.check(e.status == "RLX_ERR_CANCELLED" and "terminate is True" in str(e), "terminate True: %s" % e)
# a run without the options works
got = isess.run(None, feeds(3))[0]
C.check(np.array_equal(got, ref.run(None, feeds(3))[0]), "after RunOptions.terminate: a plain run")
ro.terminate = False
got = isess.run(None, feeds(5), ro)[0]
C.check(np.array_equal(got, ref.run(None, feeds(5))[0]), "terminate False again: the same options run")
# a dict of the attributes; anything else is refused
got = isess.run(None, feeds(2), {"log_severity_level": 1})[0]
C.check(np.array_equal(got, ref.run(None, feeds(2))[0]), "run_options as a dict")
for bad, exc in (({"terminate": True}, rlx.Error), ({"nope": 1}, ValueError), (ort.RunOptions(), TypeError)):
    try:
        isess.run(None, feeds(2), bad)
        C.check(False, "run_options %r accepted" % (bad,))
    except exc as e:
        C.check(True, "run_options %r: %s" % (bad, e))
try:
    ro.terminate = "yes"
    C.check(False, "RunOptions.terminate = 'yes' accepted")
except TypeError:
    pass

# close() while a run of the session is in progress on another thread is
# refused (RuntimeError; it would free the session under the run) and the
# session stays open; after the run is stopped, close() closes it
sc = rlx.Session(rlx.Model(PATH))
box = {}


def long_run():
    try:
        sc.run(feeds(HUGE))
    except rlx.Error as e:
        box["err"] = e


th = threading.Thread(target=long_run)
th.start()
t_wait = time.monotonic()
while sc._runs == 0 and time.monotonic() - t_wait < BOUND_S:  # the run has begun (a loaded machine may be slow)
    time.sleep(0.01)
try:
    sc.close()
    C.check(False, "close() during a run was accepted")
except RuntimeError as e:
    C.check("in progress" in str(e) and not sc.closed, "close() during a run: %s" % e)
# the flag, not terminate(): the run may count as begun here a moment before
# the library starts it, and terminate() stops only runs already begun there
sc.set_terminate(True)
th.join(BOUND_S)
sc.set_terminate(False)
C.check(not th.is_alive() and getattr(box.get("err"), "status", "") == "RLX_ERR_CANCELLED",
        "the run under a refused close(): %r" % box)
sc.close()
C.check(sc.closed, "close() after the run stopped")

# the same through an InferenceSession: its refusal names its own way to stop
# the run (RunOptions.terminate; it has no set_terminate)
si = rlx.InferenceSession(PATH)
ro_close = rlx.RunOptions()


def long_run_ort():
    try:
        si.run(None, feeds(HUGE), ro_close)
    except rlx.Error as e:
        box["err2"] = e


th = threading.Thread(target=long_run_ort)
th.start()
t_wait = time.monotonic()
while si.rlx_session._runs == 0 and time.monotonic() - t_wait < BOUND_S:
    time.sleep(0.01)
try:
    si.close()
    C.check(False, "InferenceSession.close() during a run was accepted")
except RuntimeError as e:
    C.check("rlx.InferenceSession.close()" in str(e) and "RunOptions" in str(e) and not si.closed,
            "InferenceSession.close() during a run: %s" % e)
ro_close.terminate = True
th.join(BOUND_S)
C.check(not th.is_alive() and getattr(box.get("err2"), "status", "") == "RLX_ERR_CANCELLED",
        "the InferenceSession run under a refused close(): %r" % box)
si.close()
C.check(si.closed, "InferenceSession.close() after the run stopped")

C.done()
