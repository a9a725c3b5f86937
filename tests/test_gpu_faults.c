/* GPU faults through the public API (sessions on "gpu"): each comes back
 * as an rlx error naming the step, never an abort, a hang or a crash, and
 * the process keeps working afterwards. The faults are forced through the
 * WebGPU backend's test-only hooks (webgpu_device.h: wg_fault_inject,
 * wg_device_destroy_for_test), since no model causes them on a working
 * device:
 *
 * 1. a validation error while a run encodes its commands (a dispatch past
 *    maxComputeWorkgroupsPerDimension): RLX_ERR_DEVICE naming the node and
 *    the kernel, on every run of that executable;
 * 2. a validation error creating a pipeline (WGSL that does not parse):
 *    RLX_ERR_DEVICE naming the node and the kernel; nothing of the failed
 *    compile stays, so the next run compiles again and works;
 * 3. buffer creation refused (a buffer past the device's maxBufferSize):
 *    RLX_ERR_OUT_OF_MEMORY naming the buffer and its size; the next run
 *    works;
 * 4. device loss (wgpuDeviceDestroy on the session's device, as a driver
 *    reset would): RLX_ERR_DEVICE_LOST on that run and on every later run
 *    of the session (with a new input shape too, which compiles), saying
 *    to create a new session; a new session opens a new device and works,
 *    while the old session still exists.
 * Outputs are checked against Relu computed here (exact). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "test.h"

#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"

/* y = Relu(x), node "fault_relu", x [B, 33] with B symbolic. */
static rlx_model *relu_model(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ -1, 33 }, (const char *[]){ "B", NULL }));
    CHECK_OK(rlx_model_add_node(m, "Relu", "fault_relu", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

static rlx_session *gpu_session(const rlx_model *m) {
    rlx_session_options o = { .device = "gpu" };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    return s;
}

/* Runs s on a fresh random x [rows, 33]; on success checks y = Relu(x)
 * exactly. Returns the run's status (rlx_last_error() holds its message). */
static rlx_status run_check(rlx_session *s, int64_t rows, const char *what) {
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ rows, 33 }, -1, 1);
    rlx_tensor **out = NULL;
    size_t n = 0;
    rlx_status st = rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rlx_last_error());
        CHECK_MSG(out == NULL && n == 0, "%s: a failed run returned outputs", what);
        fprintf(stderr, "  %s: %s\n", what, msg);
        rlx_tensor_destroy(x);
        rlx_fail(st, "%s", msg); /* keep the message for the caller's checks */
        return st;
    }
    bool ok = n == 1 && out[0]->dims[0] == rows;
    const float *px = x->data, *py = ok ? out[0]->data : NULL;
    for (int64_t i = 0; ok && i < rows * 33; i++) ok = py[i] == (px[i] > 0 ? px[i] : 0.0f);
    CHECK_MSG(ok, "%s: wrong output", what);
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(x);
    return st;
}

/* rlx_last_error() contains every one of the n strings. */
static void error_has(const char *what, int n, const char *const *parts) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(strstr(rlx_last_error(), parts[i]) != NULL, "%s: the message lacks \"%s\": %s", what, parts[i],
                  rlx_last_error());
}

static void test_dispatch_validation(const rlx_model *m) {
    rlx_session *s = gpu_session(m);
    if (!s) return;
    wg_fault_inject(WG_FAULT_DISPATCH);
    for (int k = 0; k < 2; k++) { /* the executable keeps its bad dispatch: every run says so */
        CHECK(run_check(s, 4, "dispatch past the workgroup limit") == RLX_ERR_DEVICE);
        error_has("dispatch fault", 4,
                  (const char *[]){ "forward pass", "node 'fault_relu' (Relu)", "kernel '", "validation error" });
    }
    CHECK(!wg_fault_take(WG_FAULT_DISPATCH)); /* it was taken */
    rlx_session_destroy(s);
    s = gpu_session(m);
    if (s) CHECK_OK(run_check(s, 4, "a new session after the dispatch fault"));
    rlx_session_destroy(s);
}

static void test_shader_validation(const rlx_model *m) {
    rlx_session *s = gpu_session(m);
    if (!s) return;
    wg_fault_inject(WG_FAULT_SHADER);
    CHECK(run_check(s, 5, "WGSL that does not parse") == RLX_ERR_DEVICE);
    error_has("shader fault", 3,
              (const char *[]){ "node 'fault_relu' (Relu)", "creating the pipeline of kernel '", "validation error" });
    CHECK_OK(run_check(s, 5, "the run after the shader fault"));
    rlx_session_destroy(s);
}

static void test_buffer_refused(const rlx_model *m) {
    rlx_session *s = gpu_session(m);
    if (!s) return;
    wg_fault_inject(WG_FAULT_BUFFER);
    rlx_status st = run_check(s, 6, "an arena buffer past maxBufferSize");
    CHECK_MSG(st == RLX_ERR_OUT_OF_MEMORY, "buffer fault: %s", rlx_status_name(st));
    error_has("buffer fault", 2, (const char *[]){ "compiling: creating the ", "arena buffer" });
    CHECK_OK(run_check(s, 6, "the run after the buffer fault"));
    rlx_session_destroy(s);
}

static void test_device_lost(const rlx_model *m) {
    rlx_session *s = gpu_session(m);
    if (!s) return;
    CHECK_OK(run_check(s, 3, "before the loss"));
    CHECK_OK(run_check(s, 3, "before the loss, steady"));
    CHECK(wg_device_destroy_for_test("gpu"));
    static const char *const lost[] = { "the GPU device was lost", "create a new session" };
    CHECK(run_check(s, 3, "the run after the loss") == RLX_ERR_DEVICE_LOST);
    error_has("device loss", 2, lost);
    CHECK(run_check(s, 3, "the next run") == RLX_ERR_DEVICE_LOST);
    error_has("device loss, again", 2, lost);
    CHECK(run_check(s, 7, "a new shape (a compile)") == RLX_ERR_DEVICE_LOST);
    error_has("device loss, compile", 2, lost);
    /* a new session opens a new device, while the old session lives */
    rlx_session *s2 = gpu_session(m);
    if (s2) {
        CHECK_OK(run_check(s2, 3, "a new session after the loss"));
        CHECK_OK(run_check(s2, 9, "a new session after the loss, another shape"));
    }
    CHECK(run_check(s, 3, "the lost session, once more") == RLX_ERR_DEVICE_LOST);
    rlx_session_destroy(s);
    if (s2) CHECK_OK(run_check(s2, 3, "the new session after the old one is gone"));
    rlx_session_destroy(s2);
    s = gpu_session(m);
    if (s) CHECK_OK(run_check(s, 4, "a third session"));
    rlx_session_destroy(s);
}
#endif

int main(void) {
    test_seed(test_seed_from_env());
#ifdef RLX_HAVE_WEBGPU
    if (!test_have_gpu()) {
        fprintf(stderr, "test_gpu_faults: skipped: no GPU adapter (lavapipe counts)\n");
        return 0;
    }
    rlx_model *m = relu_model();
    if (m) {
        fprintf(stderr, "validation error while encoding a run\n");
        test_dispatch_validation(m);
        fprintf(stderr, "validation error creating a pipeline\n");
        test_shader_validation(m);
        fprintf(stderr, "buffer creation refused\n");
        test_buffer_refused(m);
        fprintf(stderr, "device loss\n");
        test_device_lost(m);
    }
    rlx_model_destroy(m);
#else
    fprintf(stderr, "test_gpu_faults: skipped: built without the WebGPU backend\n");
#endif
    TEST_MAIN_END();
}
