/* The public API that tools/ and examples/ use (rlx/session_ext.h,
 * rlx/inspect.h, rlx/half.h), through rlx/rlx.h alone: a plan compiled
 * ahead (rlx_session_prepare) and run into caller tensors poisoned with
 * NaN gives the bits a plain rlx_session_run gives; statistics, profiling
 * (per-step slices on the CPU, GPU time where timestamps exist), the plan's
 * steps and values, model inspection, the op catalogue, half conversions. */
#include "test.h"

#include <unistd.h>

/* x[batch,3,8,8] -> Conv(4x3x3x3, pads 1) -> Relu -> Reshape [batch,256] = y;
 * Sigmoid(relu) = z. */
static rlx_model *make_model(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t xd[4] = { -1, 3, 8, 8 }, wd[4] = { 4, 3, 3, 3 }, sd[1] = { 2 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *shape = test_tensor_i64(1, sd, (const int64_t[]){ 0, 256 });
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, (const char *[]){ "batch", 0, 0, 0 }));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_initializer(m, "shape", shape));
    int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr a[] = { RLX_ATTR_IS("pads", 4, pads) };
    CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "c" }, 1, a));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "c" }, 1, (const char *[]){ "r" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Reshape", "flat", 2, (const char *[]){ "r", "shape" }, 1, (const char *[]){ "y" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Sigmoid", "sig", 1, (const char *[]){ "r" }, 1, (const char *[]){ "z" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "z"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(shape);
    return m;
}

static void free_outs(rlx_tensor **t, size_t n) {
    for (size_t i = 0; t && i < n; i++) rlx_tensor_destroy(t[i]);
    free(t);
}

/* Output tensors of the session's last plan, made from its values. */
static rlx_tensor **plan_outputs(const rlx_session *s) {
    rlx_plan_info pi;
    CHECK_OK(rlx_session_plan_info(s, &pi));
    size_t n = rlx_session_num_outputs(s);
    rlx_tensor **t = calloc(n + 1, sizeof *t);
    for (size_t o = 0; o < n; o++)
        for (size_t v = 0; v < pi.n_values; v++) {
            rlx_plan_value pv;
            CHECK_OK(rlx_session_plan_value(s, v, &pv));
            if (pv.info.name && strcmp(pv.info.name, rlx_session_output_name(s, o)) == 0)
                CHECK_OK(rlx_tensor_create(pv.info.dtype, pv.info.dims, pv.info.rank, &t[o]));
        }
    for (size_t o = 0; o < n; o++) CHECK_MSG(t[o], "output %zu found among the plan's values", o);
    return t;
}

static void poison(rlx_tensor **t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (t[i]) memset(t[i]->data, 0xff, t[i]->nbytes); /* NaN */
}

static void check_same_bits(const char *what, rlx_tensor **got, rlx_tensor **want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes && got[i]->rank == want[i]->rank,
                  "%s: output %zu shape", what, i);
        if (got[i] && want[i] && got[i]->nbytes == want[i]->nbytes)
            CHECK_MSG(memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0, "%s: output %zu bits differ", what, i);
    }
}

/* plan.defer_backend: rlx_session_prepare stops after the memory plan
 * (its description is there; nothing to profile, no arena); the first run
 * compiles the rest and gives the bits of a plain session's run. */
static void test_defer_backend(const char *device) {
    rlx_model *m = make_model();
    int64_t xd[4] = { 2, 3, 8, 8 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor shape_only = { .dtype = RLX_DTYPE_F32, .rank = 4, .dims = { 2, 3, 8, 8 } };
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x }, *in_shape[1] = { &shape_only };
    rlx_session_options o = { .device = device };
    rlx_session *ref_s = NULL, *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &ref_s));
    rlx_tensor **ref = NULL, **got = NULL;
    size_t n_ref = 0, n_got = 0;
    CHECK_OK(rlx_session_run(ref_s, 1, names, in, &ref, &n_ref));
    rlx_options *opts = NULL;
    CHECK_OK(rlx_options_create(&opts));
    CHECK_OK(rlx_options_set(opts, "plan.defer_backend", "1"));
    CHECK_OK(rlx_session_create_with_options(m, &o, opts, &s));
    CHECK_OK(rlx_session_prepare(s, 1, names, in_shape));
    rlx_plan_info pi;
    CHECK_OK(rlx_session_plan_info(s, &pi));
    CHECK(pi.n_steps > 0 && pi.arena_bytes > 0);
    rlx_session_stats st;
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(st.has_plan && st.backend_compile_s == 0.0);
    CHECK_FAILS(rlx_session_set_profiling(s, RLX_PROFILE_TOTAL), RLX_ERR_UNSUPPORTED, "plan.defer_backend");
    /* the first run compiles the executable; run_into once it exists */
    CHECK_OK(rlx_session_run(s, 1, names, in, &got, &n_got));
    CHECK(n_got == n_ref);
    if (got && ref && n_got == n_ref) check_same_bits("deferred backend", got, ref, n_ref);
    free_outs(got, n_got);
    rlx_tensor **outs = plan_outputs(s);
    CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
    check_same_bits("deferred backend, run_into", outs, ref, n_ref);
    free_outs(outs, n_ref);
    /* another shape: prepared without its executable, run_into compiles it */
    int64_t xd3[4] = { 3, 3, 8, 8 };
    rlx_tensor *x3 = test_tensor_random(RLX_DTYPE_F32, 4, xd3, -1, 1);
    const rlx_tensor *in3[1] = { x3 };
    CHECK_OK(rlx_session_prepare(s, 1, names, in3));
    rlx_tensor **outs3 = plan_outputs(s), **ref3 = NULL;
    size_t n_ref3 = 0;
    CHECK_OK(rlx_session_run_into(s, 1, names, in3, outs3));
    CHECK_OK(rlx_session_run(ref_s, 1, names, in3, &ref3, &n_ref3));
    check_same_bits("deferred backend, run_into first", outs3, ref3, n_ref3);
    free_outs(outs3, 2);
    free_outs(ref3, n_ref3);
    rlx_tensor_destroy(x3);
    free_outs(ref, n_ref);
    rlx_options_destroy(opts);
    rlx_session_destroy(s);
    rlx_session_destroy(ref_s);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

static void test_device(const char *device) {
    rlx_model *m = make_model();
    int64_t xd[4] = { 2, 3, 8, 8 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *zeros = test_tensor(RLX_DTYPE_F32, 4, xd);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x }, *in0[1] = { zeros };
    rlx_session_options o = { .device = device };

    /* the reference: a plain run on its own session */
    rlx_session *ref_s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &ref_s));
    rlx_tensor **ref = NULL;
    size_t n_ref = 0;
    CHECK_OK(rlx_session_run(ref_s, 1, names, in, &ref, &n_ref));
    CHECK(n_ref == 2);

    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_session_stats st;
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(!st.has_plan && st.n_compiles == 0 && st.backend && st.backend[0]);
    rlx_plan_info pi;
    CHECK_FAILS(rlx_session_plan_info(s, &pi), RLX_ERR_INVALID_ARGUMENT, "no plan");
    CHECK_FAILS(rlx_session_set_profiling(s, RLX_PROFILE_STEPS), RLX_ERR_INVALID_ARGUMENT, "no plan");

    /* compiled ahead from zero-filled inputs: only their shapes matter */
    CHECK_OK(rlx_session_prepare(s, 1, names, in0));
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(st.has_plan && !st.eager && st.n_compiles == 1 && st.n_plans_cached == 1);
    CHECK(st.passes_s >= 0 && st.backend_compile_s >= 0);
    CHECK_OK(rlx_session_plan_info(s, &pi));
    CHECK_MSG(pi.n_steps >= 3 && pi.n_steps_view >= 1, "%zu steps, %zu views", pi.n_steps, pi.n_steps_view);
    CHECK(pi.n_steps == pi.n_steps_device + pi.n_steps_cpu + pi.n_steps_view);
    CHECK(pi.arena_bytes >= pi.peak_bytes && pi.noreuse_bytes >= pi.arena_bytes && pi.arena_align > 0);
    CHECK(pi.n_weights >= 1 && pi.weight_bytes >= 4 * 3 * 3 * 3 * sizeof(float));
    CHECK(pi.order_bytes[pi.order] == pi.arena_bytes || pi.order == RLX_PLAN_ORDER_NO_REUSE);
    for (size_t k = 0; k < pi.n_steps; k++) {
        rlx_plan_step ps;
        CHECK_OK(rlx_session_plan_step(s, k, &ps));
        CHECK(ps.op && ps.op[0] && ps.node && ps.domain && ps.n_outputs >= 1);
        rlx_plan_value pv;
        CHECK_OK(rlx_session_plan_step_value(s, k, true, 0, &pv));
        CHECK(pv.info.name && pv.producer_op && strcmp(pv.producer_op, ps.op) == 0);
        CHECK_FAILS(rlx_session_plan_step_value(s, k, true, ps.n_outputs, &pv), RLX_ERR_INVALID_ARGUMENT, "range");
    }
    rlx_plan_step ps;
    CHECK_FAILS(rlx_session_plan_step(s, pi.n_steps, &ps), RLX_ERR_INVALID_ARGUMENT, "range");

    /* run into poisoned caller tensors: the same bits, the same buffers, no
     * new compile */
    rlx_tensor **outs = plan_outputs(s);
    void *data0 = outs[0]->data;
    poison(outs, 2);
    CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
    check_same_bits("run_into", outs, ref, 2);
    CHECK(outs[0]->data == data0);
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(st.n_compiles == 1);

    /* profiling */
    const rlx_profile_slice *sl = NULL;
    size_t n_sl = 99;
    double gpu_us = -1;
    if (strcmp(device, "cpu") == 0) {
        CHECK_FAILS(rlx_session_set_profiling(s, RLX_PROFILE_TOTAL), RLX_ERR_UNSUPPORTED, "GPU");
        CHECK_OK(rlx_session_set_profiling(s, RLX_PROFILE_STEPS));
        poison(outs, 2);
        CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
        check_same_bits("profiled run_into", outs, ref, 2);
        CHECK_OK(rlx_session_profile(s, &sl, &n_sl, &gpu_us));
        CHECK_MSG(n_sl == pi.n_steps - pi.n_steps_view, "%zu slices for %zu steps that work", n_sl,
                  pi.n_steps - pi.n_steps_view);
        CHECK(gpu_us == 0);
        for (size_t i = 0; sl && i < n_sl; i++) {
            CHECK(!sl[i].gpu && sl[i].kernel && strcmp(sl[i].kernel, "cpu") == 0 && sl[i].dur_us >= 0);
            CHECK(sl[i].step >= 0 && (size_t)sl[i].step < pi.n_steps);
            CHECK(rlx_session_plan_step(s, (size_t)sl[i].step, &ps) == RLX_OK && ps.device != RLX_STEP_DEVICE_VIEW);
            if (i) CHECK_MSG(sl[i].t0_us >= sl[i - 1].t0_us + sl[i - 1].dur_us, "slices in order");
        }
        CHECK_OK(rlx_session_set_profiling(s, RLX_PROFILE_OFF));
        CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
        CHECK_OK(rlx_session_profile(s, &sl, &n_sl, &gpu_us));
        CHECK(n_sl == 0);
    } else if (st.gpu_timing) {
        CHECK_OK(rlx_session_set_profiling(s, RLX_PROFILE_STEPS));
        poison(outs, 2);
        CHECK_OK(rlx_session_run_into(s, 1, names, in, outs));
        check_same_bits("profiled run_into", outs, ref, 2);
        CHECK_OK(rlx_session_profile(s, &sl, &n_sl, &gpu_us));
        size_t n_gpu = 0;
        for (size_t i = 0; i < n_sl; i++) n_gpu += sl[i].gpu;
        CHECK_MSG(n_gpu == st.n_dispatches && gpu_us > 0, "%zu GPU slices for %zu dispatches, %g us", n_gpu,
                  st.n_dispatches, gpu_us);
        CHECK_OK(rlx_session_set_profiling(s, RLX_PROFILE_OFF));
    } else {
        CHECK_FAILS(rlx_session_set_profiling(s, RLX_PROFILE_TOTAL), RLX_ERR_UNSUPPORTED, "timestamp");
    }

    /* wrong caller tensors are refused, naming the output */
    int64_t bad_d[2] = { 2, 255 };
    rlx_tensor *bad = test_tensor(RLX_DTYPE_F32, 2, bad_d);
    rlx_tensor *bo[2] = { bad, outs[1] };
    CHECK_FAILS(rlx_session_run_into(s, 1, names, in, bo), RLX_ERR_INVALID_ARGUMENT, "'y'");
    rlx_tensor_destroy(bad);

    /* another batch size: a second plan, its outputs of its own shape */
    int64_t xd3[4] = { 3, 3, 8, 8 };
    rlx_tensor *x3 = test_tensor_random(RLX_DTYPE_F32, 4, xd3, -1, 1);
    const rlx_tensor *in3[1] = { x3 };
    CHECK_OK(rlx_session_prepare(s, 1, names, in3));
    rlx_tensor **outs3 = plan_outputs(s), **ref3 = NULL;
    size_t n_ref3 = 0;
    CHECK(outs3[0] && outs3[0]->dims[0] == 3);
    poison(outs3, 2);
    CHECK_OK(rlx_session_run_into(s, 1, names, in3, outs3));
    CHECK_OK(rlx_session_run(ref_s, 1, names, in3, &ref3, &n_ref3));
    check_same_bits("run_into, batch 3", outs3, ref3, 2);
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(st.n_compiles == 2 && st.n_plans_cached == 2);

    free_outs(outs3, 2);
    free_outs(ref3, n_ref3);
    rlx_tensor_destroy(x3);
    free_outs(outs, 2);
    free_outs(ref, n_ref);
    rlx_session_destroy(s);
    rlx_session_destroy(ref_s);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(zeros);
    rlx_model_destroy(m);
}

/* A plan with a data-dependent shape runs eagerly: stats say so, the plan
 * and in-place runs are refused. */
static void test_eager(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t xd[1] = { 6 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, xd, NULL));
    CHECK_OK(rlx_model_add_node(m, "NonZero", "nz", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    rlx_tensor *x = test_tensor_f32(1, xd, (const float[]){ 0, 1, 0, 2, 3, 0 });
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    CHECK_OK(rlx_session_prepare(s, 1, names, in));
    rlx_session_stats st;
    CHECK_OK(rlx_session_get_stats(s, &st));
    CHECK(st.has_plan && st.eager && !st.has_exe_stats);
    rlx_plan_info pi;
    CHECK_FAILS(rlx_session_plan_info(s, &pi), RLX_ERR_UNSUPPORTED, "eagerly");
    CHECK_FAILS(rlx_session_set_profiling(s, RLX_PROFILE_STEPS), RLX_ERR_UNSUPPORTED, "eagerly");
    int64_t yd[2] = { 1, 3 };
    rlx_tensor *y = test_tensor(RLX_DTYPE_I64, 2, yd);
    rlx_tensor *outs[1] = { y };
    CHECK_FAILS(rlx_session_run_into(s, 1, names, in, outs), RLX_ERR_UNSUPPORTED, "eagerly");
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Sessions share the model's weights (no copy): two sessions of one model
 * run after the caller destroyed the model, in either order of destroying
 * them, and give the outputs a session gave while the model lived. */
static void test_session_outlives_model(void) {
    rlx_model *m = make_model();
    rlx_session *a = NULL, *b = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &a));
    CHECK_OK(rlx_session_create(m, NULL, &b));
    int64_t xd[4] = { 1, 3, 8, 8 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    const char *names[1] = { "x" };
    const rlx_tensor *in[1] = { x };
    rlx_tensor **want = NULL, **got = NULL;
    size_t n_want = 0, n_got = 0;
    CHECK_OK(rlx_session_run(a, 1, names, in, &want, &n_want));
    rlx_model_destroy(m);
    CHECK_OK(rlx_session_run(b, 1, names, in, &got, &n_got));
    CHECK(n_got == n_want && n_want == 2);
    check_same_bits("session b after rlx_model_destroy", got, want, n_want);
    free_outs(got, n_got);
    rlx_session_destroy(b);
    CHECK_OK(rlx_session_run(a, 1, names, in, &got, &n_got));
    check_same_bits("session a after model and b are gone", got, want, n_want);
    free_outs(got, n_got);
    free_outs(want, n_want);
    rlx_session_destroy(a);
    rlx_tensor_destroy(x);
}

static void test_model_inspection(void) {
    rlx_model *m = make_model();
    rlx_model_summary ms;
    CHECK_OK(rlx_model_get_summary(m, &ms));
    CHECK(ms.opset == 13 && ms.n_nodes == 4 && ms.n_initializers == 2 && ms.n_constants == 0);
    CHECK(ms.initializer_bytes == 4 * 3 * 3 * 3 * sizeof(float) + 2 * sizeof(int64_t));
    rlx_node_info nd;
    CHECK_OK(rlx_model_node_info(m, 0, &nd));
    CHECK(strcmp(nd.op, "Conv") == 0 && strcmp(nd.name, "conv") == 0 && strcmp(nd.domain, "") == 0);
    CHECK_FAILS(rlx_model_node_info(m, 4, &nd), RLX_ERR_INVALID_ARGUMENT, "range");
    CHECK(nd.op == NULL);
    rlx_node_origin org = { .expansion = 7 };
    CHECK_OK(rlx_model_node_origin(m, 0, &org)); /* as written: no expansion */
    CHECK(org.expansion == 0 && strcmp(org.op, "") == 0 && strcmp(org.domain, "") == 0);
    CHECK_FAILS(rlx_model_node_origin(m, 4, &org), RLX_ERR_INVALID_ARGUMENT, "range");
    CHECK(org.op == NULL && org.expansion == 0);
    FILE *f = tmpfile();
    if (f) {
        CHECK_OK(rlx_model_dump(m, f));
        char buf[8192];
        rewind(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        CHECK_MSG(strstr(buf, "Conv") && strstr(buf, "Sigmoid") && strstr(buf, "batch"), "IR dump: %.200s", buf);
        fclose(f);
    }
    /* a NULL out pointer is refused, not written through (index 0 is in
     * range for inputs and outputs) */
    CHECK_FAILS(rlx_model_input_info(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_output_info(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_output_declared_info(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_overridable_initializer_info(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_get_summary(m, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_node_info(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_node_origin(m, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_model_create(13, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    rlx_value_info vi = { .rank = 7 };
    CHECK_FAILS(rlx_model_input_info(NULL, 0, &vi), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK(vi.rank == 0 && vi.name == NULL);
    rlx_tensor *t = (rlx_tensor *)1;
    CHECK_FAILS(rlx_tensor_load_onnx("no/such/file.pb", &t), RLX_ERR_IO, "no/such/file.pb");
    CHECK(t == NULL);
    rlx_model_destroy(m);
}

/* Attribute k of op i, or false at the end of its list. */
static bool attr_at(size_t i, size_t k, rlx_op_attr_info *ai) { return rlx_op_catalog_attr(i, k, ai) == RLX_OK; }

static void test_catalogue(void) {
    size_t n = rlx_op_catalog_count();
    CHECK(n > 150);
    bool conv = false, internal = false;
    for (size_t i = 0; i < n; i++) {
        rlx_op_info op;
        CHECK_OK(rlx_op_catalog_get(i, &op));
        CHECK(op.name && op.domain && op.n_versions >= 1 && op.n_versions <= RLX_OP_MAX_VERSIONS);
        for (int k = 1; k < op.n_versions; k++) CHECK(op.versions[k] > op.versions[k - 1]);
        CHECK(op.webgpu == (op.webgpu_note != NULL));
        internal |= op.internal;
        if (strcmp(op.name, "Conv") == 0 && !op.internal) {
            conv = true;
            CHECK(op.cpu && op.versions[0] == 1 && !op.view);
#ifdef RLX_HAVE_WEBGPU
            CHECK(op.webgpu && strstr(op.webgpu_note, "f32"));
#endif
        }
        if (strcmp(op.name, "Reshape") == 0) CHECK(op.view && op.takes_strings);
        if (strcmp(op.name, "If") == 0) CHECK(op.control_flow);
        /* attributes: Clip's min until 11, Clip-1's consumed_inputs, the end of the list */
        if (strcmp(op.name, "Clip") == 0) {
            bool min = false, ci = false;
            rlx_op_attr_info ai;
            size_t k = 0;
            for (; attr_at(i, k, &ai); k++) {
                if (strcmp(ai.name, "min") == 0) min = strcmp(ai.type, "FLOAT") == 0 && ai.since == 0 && ai.until == 11;
                if (strcmp(ai.name, "consumed_inputs") == 0) ci = strcmp(ai.type, "INTS") == 0 && ai.until == 6;
            }
            CHECK(min && ci);
            CHECK_FAILS(rlx_op_catalog_attr(i, k, &ai), RLX_ERR_INVALID_ARGUMENT, "no attribute");
            CHECK(ai.name == NULL && ai.type == NULL);
        }
    }
    rlx_op_attr_info ai;
    CHECK_FAILS(rlx_op_catalog_attr(n, 0, &ai), RLX_ERR_INVALID_ARGUMENT, "range");
    CHECK_FAILS(rlx_op_catalog_attr(0, 0, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK(conv && internal);
    rlx_op_info op;
    CHECK_FAILS(rlx_op_catalog_get(n, &op), RLX_ERR_INVALID_ARGUMENT, "range");
    size_t nc = 0;
    const char *const *c = rlx_op_catalog_webgpu_conditions(&nc);
    CHECK(c && nc >= 3 && c[0][0]);
    CHECK_OK(rlx_op_catalog_check());
    /* the contrib ops that the importer expands: named, versioned, each with
     * its sentence; none is in the op table */
    size_t ncon = rlx_contrib_op_catalog_count();
    CHECK(ncon >= 20);
    bool nbits = false;
    for (size_t i = 0; i < ncon; i++) {
        rlx_contrib_op_info ci;
        CHECK_OK(rlx_contrib_op_catalog_get(i, &ci));
        CHECK(ci.domain && ci.name && ci.since_version >= 1 && ci.expansion && ci.expansion[0]);
        nbits |= strcmp(ci.domain, "com.microsoft") == 0 && strcmp(ci.name, "MatMulNBits") == 0;
        for (size_t k = 0; k < n; k++) {
            CHECK_OK(rlx_op_catalog_get(k, &op));
            CHECK(strcmp(op.name, ci.name) != 0 || strcmp(op.domain, ci.domain) != 0);
        }
    }
    CHECK(nbits);
    rlx_contrib_op_info ci;
    CHECK_FAILS(rlx_contrib_op_catalog_get(ncon, &ci), RLX_ERR_INVALID_ARGUMENT, "range");
    CHECK(ci.name == NULL);
}

static void test_half_and_clock(void) {
    CHECK(rlx_f32_to_f16(1.0f) == 0x3c00 && rlx_f16_to_f32(0x3c00) == 1.0f);
    CHECK(rlx_f32_to_f16(-2.5f) == 0xc100 && rlx_f16_to_f32(0xc100) == -2.5f);
    CHECK(rlx_f32_to_f16(65520.0f) == 0x7c00);                  /* rounds past the largest finite: inf */
    CHECK(rlx_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);        /* a tie: to even */
    CHECK(rlx_f16_to_f32(0x0001) == 1.0f / 16777216.0f);        /* the smallest subnormal */
    CHECK(isnan(rlx_f16_to_f32(rlx_f32_to_f16(NAN))));
    CHECK(rlx_f32_to_bf16(1.0f) == 0x3f80 && rlx_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(rlx_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80);        /* a tie: to even */
    CHECK(isnan(rlx_bf16_to_f32(rlx_f32_to_bf16(NAN))));
    double t0 = rlx_now_seconds(), t1 = rlx_now_seconds();
    CHECK(t1 >= t0 && t0 > 0);
}

/* Only -1 (symbolic) is documented below 0: other negative dims are refused,
 * naming the dim. */
static void test_add_input_dims(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_FAILS(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ 4, -7 }, NULL),
                RLX_ERR_INVALID_ARGUMENT, "dim 1 is -7");
    CHECK_FAILS(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, (const int64_t[]){ INT64_MIN }, NULL),
                RLX_ERR_INVALID_ARGUMENT, "dim 0");
    CHECK_FAILS(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, NULL, NULL), RLX_ERR_INVALID_ARGUMENT, "dims is NULL");
    /* a refused input is not declared: the name stays free */
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ -1, 0 }, NULL));
    rlx_model_destroy(m);
}

/* NULL out-pointers and names are refused as the other calls refuse them
 * (rlx_session_create with out NULL and rlx_tensor_load_npy with
 * out_tensor NULL crashed; an initializer without a name was added under
 * a generated name nothing could read). */
static void test_null_arguments(void) {
    rlx_model *m = make_model();
    CHECK_FAILS(rlx_session_create(m, NULL, NULL), RLX_ERR_INVALID_ARGUMENT, "out_session is NULL");
    CHECK_FAILS(rlx_session_create_with_options(m, NULL, NULL, NULL), RLX_ERR_INVALID_ARGUMENT,
                "out_session is NULL");
    rlx_model_destroy(m);
    int64_t d[1] = { 3 };
    rlx_tensor *t = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1), *back = NULL;
    char path[64];
    snprintf(path, sizeof path, "test_public_api_%d.npy", (int)getpid());
    CHECK_OK(rlx_tensor_save_npy(t, path));
    CHECK_FAILS(rlx_tensor_load_npy(path, NULL), RLX_ERR_INVALID_ARGUMENT, "out_tensor is NULL");
    CHECK_FAILS(rlx_tensor_load_npy(NULL, &back), RLX_ERR_INVALID_ARGUMENT, "path or out_tensor is NULL");
    CHECK(back == NULL);
    CHECK_OK(rlx_tensor_load_npy(path, &back));
    CHECK(back && back->nbytes == t->nbytes && memcmp(back->data, t->data, t->nbytes) == 0);
    rlx_tensor_destroy(back);
    remove(path);
    rlx_adapter_info *ai = NULL;
    size_t na = 0;
    CHECK_FAILS(rlx_adapters_list(NULL, &na), RLX_ERR_INVALID_ARGUMENT, "NULL output pointer");
    CHECK_FAILS(rlx_adapters_list(&ai, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL output pointer");
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_FAILS(rlx_model_add_initializer(m, NULL, t), RLX_ERR_INVALID_ARGUMENT, "initializer name is empty");
    CHECK_FAILS(rlx_model_add_initializer(m, "", t), RLX_ERR_INVALID_ARGUMENT, "initializer name is empty");
    CHECK_OK(rlx_model_add_initializer(m, "w", t));
    CHECK_FAILS(rlx_model_add_output(m, NULL), RLX_ERR_INVALID_ARGUMENT, "output name is empty");
    CHECK_FAILS(rlx_model_add_output(m, ""), RLX_ERR_INVALID_ARGUMENT, "output name is empty");
    CHECK_FAILS(rlx_model_add_output(m, "nope"), RLX_ERR_INVALID_MODEL, "output 'nope' is not defined");
    rlx_model_summary sum;
    CHECK_OK(rlx_model_get_summary(m, &sum));
    CHECK_MSG(sum.n_initializers == 1, "%zu initializers", (size_t)sum.n_initializers);
    rlx_model_destroy(m);
    rlx_tensor_destroy(t);
}

/* A bool input holding bytes other than 0 and 1 (C's _Bool read from
 * memory, numpy's view of uint8 data as bool) is true where nonzero: Cast
 * gave 2.0 and 255.0, Equal(2, 1) false, Identity returned the 2. The
 * caller's bytes stay as they were; run and run_into agree. */
static void test_bool_bytes(const char *device) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(17, &m));
    int64_t d4[1] = { 4 };
    CHECK_OK(rlx_model_add_input(m, "b", RLX_DTYPE_BOOL, 1, d4, NULL));
    CHECK_OK(rlx_model_add_input(m, "c", RLX_DTYPE_BOOL, 1, d4, NULL));
    const rlx_attr to_f = RLX_ATTR_I("to", 1), to_u8 = RLX_ATTR_I("to", 2);
    CHECK_OK(rlx_model_add_node(m, "Cast", "cf", 1, (const char *[]){ "b" }, 1, (const char *[]){ "f" }, 1, &to_f));
    CHECK_OK(rlx_model_add_node(m, "Cast", "cu", 1, (const char *[]){ "b" }, 1, (const char *[]){ "u" }, 1, &to_u8));
    CHECK_OK(rlx_model_add_node(m, "Equal", "eq", 2, (const char *[]){ "b", "c" }, 1, (const char *[]){ "e" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Identity", "id", 1, (const char *[]){ "b" }, 1, (const char *[]){ "i" }, 0, NULL));
    static const char *const outs[4] = { "f", "u", "e", "i" };
    for (int k = 0; k < 4; k++) CHECK_OK(rlx_model_add_output(m, outs[k]));
    CHECK_OK(rlx_model_finish(m));
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *b = test_tensor(RLX_DTYPE_BOOL, 1, d4), *c = test_tensor(RLX_DTYPE_BOOL, 1, d4);
    const unsigned char bv[4] = { 2, 0, 255, 1 }, cv[4] = { 1, 1, 1, 0 };
    if (s && b && c) {
        memcpy(b->data, bv, 4);
        memcpy(c->data, cv, 4);
        const char *names[2] = { "b", "c" };
        const rlx_tensor *in[2] = { b, c };
        rlx_tensor **y = NULL;
        size_t n = 0;
        for (int pass = 0; pass < 2; pass++) { /* run, then run_into the outputs of the first */
            if (pass == 0) CHECK_OK(rlx_session_run(s, 2, names, in, &y, &n));
            else if (y) CHECK_OK(rlx_session_run_into(s, 2, names, in, y));
            if (!y || n != 4) break;
            const float *f = y[0]->data;
            const unsigned char *u = y[1]->data, *e = y[2]->data, *i = y[3]->data;
            int bad = 0;
            for (int k = 0; k < 4; k++) {
                int want = bv[k] != 0;
                bad += f[k] != (float)want || u[k] != want || e[k] != (want == cv[k]) || i[k] != want;
            }
            CHECK_MSG(bad == 0, "%s, %s: %d elements of bool bytes 2, 0, 255, 1 wrong", device,
                      pass ? "run_into" : "run", bad);
            for (int k = 0; k < 4; k++) memset(y[k]->data, 0x7f, y[k]->nbytes); /* run_into must write them */
        }
        CHECK(memcmp(b->data, bv, 4) == 0); /* the caller's input is not written */
        test_free_outputs(y, (int)n);
    }
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(c);
}

/* Inputs fed by name in any order reach their graph inputs (the session's
 * name index: binary search, the graph's own order first): a Concat of
 * 40 one-element inputs, declared in a scrambled order and fed in another,
 * gives each fed value at its input's place; a name given twice, an
 * unknown name and a missing input fail naming the input. */
static void test_input_names(void) {
    enum { N_IN = 40 };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d1[1] = { 1 };
    char names[N_IN][16];
    const char *decl[N_IN];
    for (int j = 0; j < N_IN; j++) {
        snprintf(names[j], sizeof names[j], "in_%02d", (j * 17 + 5) % N_IN); /* declared out of name order */
        decl[j] = names[j];
        CHECK_OK(rlx_model_add_input(m, names[j], RLX_DTYPE_F32, 1, d1, NULL));
    }
    rlx_attr axis = RLX_ATTR_I("axis", 0);
    CHECK_OK(rlx_model_add_node(m, "Concat", "cat", N_IN, decl, 1, (const char *[]){ "y" }, 1, &axis));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    rlx_tensor *x[N_IN];
    const char *fed[N_IN];
    const rlx_tensor *in[N_IN];
    for (int j = 0; j < N_IN; j++) x[j] = test_tensor_f32(1, d1, (const float[]){ (float)(100 + j) });
    for (int i = 0; i < N_IN; i++) { /* fed in a third order: input (i * 7) % N_IN of the declaration */
        int j = (i * 7) % N_IN;
        fed[i] = names[j];
        in[i] = x[j];
    }
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, N_IN, fed, in, &out, &n_out));
    if (n_out == 1 && out[0]->rank == 1 && out[0]->dims[0] == N_IN) {
        const float *y = out[0]->data;
        for (int j = 0; j < N_IN; j++) CHECK_MSG(y[j] == (float)(100 + j), "y[%d] = %g, fed %d", j, (double)y[j], 100 + j);
    } else {
        CHECK_MSG(false, "Concat of %d inputs: %zu outputs", N_IN, n_out);
    }
    for (size_t o = 0; o < n_out; o++) rlx_tensor_destroy(out[o]);
    free(out);
    out = NULL;
    const char *twice[N_IN];
    memcpy(twice, fed, sizeof twice);
    twice[N_IN - 1] = fed[3];
    CHECK_FAILS(rlx_session_run(s, N_IN, twice, in, &out, &n_out), RLX_ERR_INVALID_ARGUMENT, "given twice");
    twice[N_IN - 1] = "in_99";
    CHECK_FAILS(rlx_session_run(s, N_IN, twice, in, &out, &n_out), RLX_ERR_INVALID_ARGUMENT, "no input 'in_99'");
    CHECK_FAILS(rlx_session_run(s, N_IN - 1, fed, in, &out, &n_out), RLX_ERR_INVALID_ARGUMENT, "is missing");
    for (int j = 0; j < N_IN; j++) rlx_tensor_destroy(x[j]);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed_from_env();
    test_bool_bytes("cpu");
    if (test_have_gpu()) test_bool_bytes("gpu");
    test_null_arguments();
    test_add_input_dims();
    test_half_and_clock();
    test_catalogue();
    test_model_inspection();
    test_eager();
    test_input_names();
    test_session_outlives_model();
    test_device("cpu");
    if (test_have_gpu()) test_device("gpu");
    test_defer_backend("cpu");
    if (test_have_gpu()) test_defer_backend("gpu");
    TEST_MAIN_END();
}
