/* Two ways the GPU backend used to fail silently or needlessly, through
 * the public API (sessions with options), each compared with the CPU
 * backend, GPU arenas poisoned with NaN (gpu.poison):
 *
 * 1. f16 mode (gpu.f16): a GEMM or convolution weight with a value that
 *    rounds to infinity in binary16 (|w| >= 65520) made every output that
 *    uses it +-inf. Such a weight now stays f32 (the dispatch report names
 *    the node and the weight); 65504, the largest half, still goes f16.
 * 2. A graph input, activation or output larger than one device buffer
 *    (gpu.max_buffer_bytes, 1 MiB here) failed the whole run in the memory
 *    plan. The nodes that touch it now run on the CPU (the report names
 *    them) and the rest stays on the GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/program.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "test.h"

/* ------------------------------------------------------------ helpers */

typedef struct kv {
    const char *key, *value;
} kv;

/* Runs model m once on `device` with the options opts[0..n_opts) (and
 * gpu.poison on the GPU): outputs in *out (n_out of them), the dispatch
 * report copied into *report (free it), and the number of steps of the
 * plan that ran on the device into *on_gpu (when not NULL). */
static rlx_status run(const rlx_model *m, const char *device, const kv *opts, int n_opts, int n_in,
                      const char *const *names, const rlx_tensor *const *in, rlx_tensor ***out, size_t *n_out,
                      char **report, int *on_gpu) {
    *out = NULL;
    *n_out = 0;
    if (report) *report = NULL;
    rlx_options *o = NULL;
    rlx_status st = rlx_options_create(&o);
    for (int i = 0; i < n_opts && !st; i++) st = rlx_options_set(o, opts[i].key, opts[i].value);
    if (!st && strcmp(device, "cpu") != 0) st = rlx_options_set(o, "gpu.poison", "1");
    rlx_session_options so = { .device = device };
    rlx_session *s = NULL;
    if (!st) st = rlx_session_create_with_options(m, &so, o, &s);
    rlx_options_destroy(o);
    if (!st) st = rlx_session_run(s, (size_t)n_in, names, in, out, n_out);
    if (!st && report) {
        const char *t = rlx_session_dispatch_report(s);
        *report = malloc(strlen(t) + 1);
        if (*report) memcpy(*report, t, strlen(t) + 1);
    }
    if (!st && on_gpu) {
        const rlx_program *p = rlx_session_last_program(s);
        *on_gpu = 0;
        for (size_t k = 0; p && k < p->n_steps; k++) *on_gpu += p->step_on[k] == RLX_STEP_GPU;
    }
    rlx_session_destroy(s);
    return st;
}

/* Runs m on the CPU and on the GPU (options opts) and compares every
 * output: |gpu - cpu| <= atol + rtol |cpu| (NaN equal to NaN). Returns the
 * GPU's report (free it) or NULL on failure; *on_gpu as run(). */
static char *gpu_vs_cpu(const char *label, const rlx_model *m, const kv *opts, int n_opts, int n_in,
                        const char *const *names, const rlx_tensor *const *in, double rtol, double atol, int *on_gpu) {
    rlx_tensor **c = NULL, **g = NULL;
    size_t nc = 0, ng = 0;
    char *report = NULL;
    rlx_status st = run(m, "cpu", NULL, 0, n_in, names, in, &c, &nc, NULL, NULL);
    CHECK_MSG(st == RLX_OK, "%s (cpu): %s", label, rlx_last_error());
    st = run(m, "gpu", opts, n_opts, n_in, names, in, &g, &ng, &report, on_gpu);
    CHECK_MSG(st == RLX_OK, "%s (gpu): %s", label, rlx_last_error());
    CHECK(nc == ng);
    for (size_t i = 0; i < nc && i < ng; i++) {
        double d = test_max_abs_diff(g[i], c[i]);
        CHECK_MSG(test_allclose(g[i], c[i], rtol, atol), "%s: output %zu differs from the CPU's, max abs diff %g", label,
                  i, d);
    }
    test_free_outputs(c, (int)nc);
    test_free_outputs(g, (int)ng);
    return report;
}

static bool all_finite(const rlx_tensor *t) {
    const float *f = t->data;
    for (size_t i = 0; i < t->nbytes / 4; i++)
        if (!isfinite(f[i])) return false;
    return true;
}

/* A model of one node `op` named `node` on input x [xd] with initializers
 * (name, tensor) after it; attrs as given. */
static rlx_model *one_node(const char *op, const char *node, int xr, const int64_t *xd, int n_w, const char *const *wn,
                           rlx_tensor *const *w, size_t n_attrs, const rlx_attr *attrs) {
    rlx_model *m = NULL;
    if (rlx_model_create(13, &m)) return NULL;
    rlx_model_add_input(m, "x", RLX_DTYPE_F32, xr, xd, NULL);
    const char *ins[4] = { "x" };
    for (int i = 0; i < n_w; i++) {
        rlx_model_add_initializer(m, wn[i], w[i]);
        ins[i + 1] = wn[i];
    }
    rlx_status st = rlx_model_add_node(m, op, node, (size_t)n_w + 1, ins, 1, (const char *[]){ "y" }, n_attrs, attrs);
    if (!st) st = rlx_model_add_output(m, "y");
    if (!st) st = rlx_model_finish(m);
    if (st) {
        fprintf(stderr, "one_node %s: %s\n", op, rlx_last_error());
        rlx_model_destroy(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ f16 mode */

static const kv k_f16[] = { { "gpu.f16", "1" } };

/* Gemm transB y = x W^T + c, x [4,16], W [8,16] with W[3][5] = big. */
static rlx_model *gemm_model(float big, rlx_tensor **x_out) {
    int64_t xd[2] = { 4, 16 }, wd[2] = { 8, 16 }, cd[1] = { 8 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1), *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
    ((float *)w->data)[3 * 16 + 5] = big;
    rlx_attr a[1] = { RLX_ATTR_I("transB", 1) };
    rlx_model *m = one_node("Gemm", "g", 2, xd, 2, (const char *[]){ "W", "C" }, (rlx_tensor *[]){ w, c }, 1, a);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(c);
    *x_out = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
    return m;
}

/* Runs one-node model m (input x; both destroyed here) with opts on the
 * GPU against the CPU (rtol 1e-5, atol), expects its one step on the GPU
 * and `note` in the dispatch report. */
static void kept_f32(const char *label, rlx_model *m, rlx_tensor *x, const kv *opts, int n_opts, double atol,
                     const char *note) {
    CHECK_MSG(m != NULL, "%s: no model", label);
    int on_gpu = 0;
    char *r = m ? gpu_vs_cpu(label, m, opts, n_opts, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, 1e-5,
                             atol, &on_gpu)
                : NULL;
    CHECK_MSG(on_gpu == 1, "%s: %d steps on the GPU, expected 1", label, on_gpu);
    CHECK_MSG(r && strstr(r, note), "%s: report: %s", label, r ? r : "(none)");
    free(r);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
}

/* Weights that do not survive binary16 stay f32: the outputs are those of
 * f32 mode (rtol 1e-5, atol 1e-3: sums of 16 products of ~7e4 in f32;
 * the bug gave inf), finite, and the report names node and weight. */
static void test_f16_big_weights(void) {
    /* Gemm transB with one weight of 65520 (rounds to inf) */
    rlx_tensor *x = NULL;
    rlx_model *m = gemm_model(65520.0f, &x);
    kept_f32("f16 Gemm transB, a weight of 65520", m, x, k_f16, 1, 1e-3, "node 'g' (Gemm): weight 'W' kept in f32");

    /* MatMul y = x W, W [16,8] with one weight of -7e4 (operand B) */
    int64_t xd[2] = { 4, 16 }, wd[2] = { 16, 8 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1);
    ((float *)w->data)[5 * 8 + 3] = -7e4f;
    m = one_node("MatMul", "mm", 2, xd, 1, (const char *[]){ "W" }, (rlx_tensor *[]){ w }, 0, NULL);
    rlx_tensor_destroy(w);
    x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
    kept_f32("f16 MatMul, a weight of -7e4", m, x, k_f16, 1, 1e-3, "node 'mm' (MatMul): weight 'W' kept in f32");

    /* Conv 2 -> 4 channels, 3x3, pad 1, with one weight of 2e5 */
    int64_t cxd[4] = { 1, 2, 8, 8 }, cwd[4] = { 4, 2, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
    w = test_tensor_random(RLX_DTYPE_F32, 4, cwd, -1, 1);
    ((float *)w->data)[(1 * 2 + 0) * 9 + 4] = 2e5f;
    rlx_attr ca[1] = { RLX_ATTR_IS("pads", 4, pads) };
    m = one_node("Conv", "c", 4, cxd, 1, (const char *[]){ "Wc" }, (rlx_tensor *[]){ w }, 1, ca);
    rlx_tensor_destroy(w);
    x = test_tensor_random(RLX_DTYPE_F32, 4, cxd, -1, 1);
    kept_f32("f16 Conv, a weight of 2e5", m, x, k_f16, 1, 2e-3, "node 'c' (Conv): weight 'Wc' kept in f32");

    /* a NaN weight stays f32 too: NaN exactly where the CPU has it */
    m = gemm_model(NAN, &x);
    kept_f32("f16 Gemm transB, a NaN weight", m, x, k_f16, 1, 1e-4, "node 'g' (Gemm): weight 'W' kept in f32");
}

/* A weight of exactly 65504 (the largest binary16) stays f16: the output is
 * finite, equals the CPU's product of the binary16-rounded weights (rtol
 * 1e-5, atol 2e-3), differs from the unrounded f32 product (so the weight
 * really went f16), and the report has no note. */
static void test_f16_largest_half(void) {
    rlx_tensor *x = NULL;
    rlx_model *m = gemm_model(65504.0f, &x);
    CHECK(m != NULL);
    if (!m) return;
    int64_t wd[2] = { 8, 16 }, xd[2] = { 4, 16 }, cd[1] = { 8 };
    rlx_tensor **g = NULL, **ref = NULL, **f32 = NULL;
    size_t ng = 0, nr = 0, nf = 0;
    char *report = NULL;
    rlx_status st = run(m, "gpu", k_f16, 1, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &g, &ng, &report,
                        NULL);
    CHECK_MSG(st == RLX_OK, "f16 Gemm, a weight of 65504: %s", rlx_last_error());
    st = run(m, "cpu", NULL, 0, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &f32, &nf, NULL, NULL);
    CHECK_OK(st);
    /* the CPU on the rounded weights: the model's W and C as inputs, W
     * through Cast f16 -> f32 */
    rlx_model *mr = NULL;
    CHECK_OK(rlx_model_create(13, &mr));
    rlx_model_add_input(mr, "x", RLX_DTYPE_F32, 2, xd, NULL);
    rlx_model_add_input(mr, "W", RLX_DTYPE_F32, 2, wd, NULL);
    rlx_model_add_input(mr, "C", RLX_DTYPE_F32, 1, cd, NULL);
    rlx_attr to16[1] = { RLX_ATTR_I("to", RLX_DTYPE_F16) }, to32[1] = { RLX_ATTR_I("to", RLX_DTYPE_F32) };
    rlx_attr tb[1] = { RLX_ATTR_I("transB", 1) };
    rlx_model_add_node(mr, "Cast", NULL, 1, (const char *[]){ "W" }, 1, (const char *[]){ "W16" }, 1, to16);
    rlx_model_add_node(mr, "Cast", NULL, 1, (const char *[]){ "W16" }, 1, (const char *[]){ "Wr" }, 1, to32);
    rlx_model_add_node(mr, "Gemm", NULL, 3, (const char *[]){ "x", "Wr", "C" }, 1, (const char *[]){ "y" }, 1, tb);
    rlx_model_add_output(mr, "y");
    CHECK_OK(rlx_model_finish(mr));
    const rlx_tensor *W = NULL, *C = NULL;
    const rlx_graph *mg = m->g;
    for (size_t i = 0; mg && i < mg->n_values; i++) {
        if (mg->values[i].konst && strcmp(mg->values[i].name, "W") == 0) W = mg->values[i].konst;
        if (mg->values[i].konst && strcmp(mg->values[i].name, "C") == 0) C = mg->values[i].konst;
    }
    CHECK(W && C);
    if (W && C) {
        st = run(mr, "cpu", NULL, 0, 3, (const char *[]){ "x", "W", "C" }, (const rlx_tensor *[]){ x, W, C }, &ref, &nr,
                 NULL, NULL);
        CHECK_OK(st);
    }
    if (ng == 1 && nr == 1 && nf == 1) {
        CHECK_MSG(all_finite(g[0]), "f16 Gemm, a weight of 65504: non-finite output");
        CHECK_MSG(test_allclose(g[0], ref[0], 1e-5, 2e-3), "f16 Gemm, a weight of 65504: max abs diff %g from the "
                  "product of the rounded weights", test_max_abs_diff(g[0], ref[0]));
        CHECK_MSG(!test_allclose(g[0], f32[0], 1e-6, 1e-6), "f16 Gemm, a weight of 65504: equals the f32 product "
                  "(the weight did not go f16)");
    }
    CHECK_MSG(report && !strstr(report, "notes:"), "report: %s", report ? report : "(none)");
    free(report);
    test_free_outputs(g, (int)ng);
    test_free_outputs(ref, (int)nr);
    test_free_outputs(f32, (int)nf);
    rlx_model_destroy(mr);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
}

/* A product split into blocks by the binding limit (gpu.max_binding_bytes
 * 4096: Gemm transB [20,12] x [200,12]^T) checks each block's window of
 * the weight: the block holding W[150][3] = 65520 stays f32, the others go
 * f16. Compared with the CPU within the f16 rounding of the other weights
 * (|x|, |w| <= 1, K = 12: at most 12 * 2^-11 ~ 6e-3 off; atol 1e-2). */
static void test_f16_split_blocks(void) {
    int64_t xd[2] = { 20, 12 }, wd[2] = { 200, 12 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1);
    ((float *)w->data)[150 * 12 + 3] = 65520.0f;
    rlx_attr a[1] = { RLX_ATTR_I("transB", 1) };
    rlx_model *m = one_node("Gemm", "g", 2, xd, 1, (const char *[]){ "W" }, (rlx_tensor *[]){ w }, 1, a);
    rlx_tensor_destroy(w);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
    kv opts[2] = { k_f16[0], { "gpu.max_binding_bytes", "4096" } };
    kept_f32("f16 Gemm in blocks of 4 KiB bindings, a weight of 65520", m, x, opts, 2, 1e-2,
             "node 'g' (Gemm): weight 'W' kept in f32");
}

/* ------------------------------------------------ tensors above a buffer */

/* 1 MiB buffers; tensors here are 1.5 MiB */
static const kv k_small_buffers[] = { { "gpu.max_buffer_bytes", "1048576" } };

/* Relu on a 1.5 MiB input: the node runs on the CPU (exact), reported. */
static void test_big_input(void) {
    int64_t xd[4] = { 1, 1, 384, 1024 };
    rlx_model *m = one_node("Relu", "r", 4, xd, 0, NULL, NULL, 0, NULL);
    CHECK(m != NULL);
    if (!m) return;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    int on_gpu = -1;
    char *r = gpu_vs_cpu("Relu on a 1.5 MiB input, 1 MiB buffers", m, k_small_buffers, 1, 1, (const char *[]){ "x" },
                         (const rlx_tensor *[]){ x }, 0, 0, &on_gpu);
    CHECK_MSG(on_gpu == 0, "Relu: %d steps on the GPU, expected 0", on_gpu);
    CHECK_MSG(r && strstr(r, "node 'r' (Relu) runs on the CPU: input 'x' (1572864 bytes) is larger than one device "
                             "buffer (1048576 bytes)"),
              "report: %s", r ? r : "(none)");
    free(r);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* gpu.trace's lines, kept by the log callback. */
static char g_trace[4096];
static void keep_trace(rlx_log_level level, const char *message, void *user) {
    (void)level, (void)user;
    size_t n = strlen(g_trace);
    snprintf(g_trace + n, sizeof g_trace - n, "%s\n", message);
}

/* A forced GEMM tile larger than the device allows (gpu.gemm_tile
 * 8x8,64x64,64: 4096 invocations, 64 KiB of tiles): the MatMul runs on the
 * CPU (exact), counted as a fallback, and gpu.trace says why, naming the
 * option (the reason was empty before). */
static void test_tile_too_big(void) {
    int64_t xd[2] = { 128, 96 }, wd[2] = { 96, 65 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, wd, -1, 1);
    rlx_model *m = one_node("MatMul", "mm", 2, xd, 1, (const char *[]){ "W" }, (rlx_tensor *[]){ w }, 0, NULL);
    rlx_tensor_destroy(w);
    CHECK(m != NULL);
    if (!m) return;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, xd, -1, 1);
    kv opts[2] = { { "gpu.gemm_tile", "8x8,64x64,64" }, { "gpu.trace", "1" } };
    int on_gpu = -1;
    g_trace[0] = 0;
    rlx_set_log_callback(keep_trace, NULL, RLX_LOG_DEBUG);
    char *r = gpu_vs_cpu("MatMul under a tile too large for the device", m, opts, 2, 1, (const char *[]){ "x" },
                         (const rlx_tensor *[]){ x }, 0, 0, &on_gpu);
    rlx_set_log_callback(NULL, NULL, RLX_LOG_DEBUG);
    CHECK_MSG(on_gpu == 0, "MatMul: %d steps on the GPU, expected 0", on_gpu);
    CHECK_MSG(r && strstr(r, "MatMul                         1       0         1"), "report: %s", r ? r : "(none)");
    CHECK_MSG(strstr(g_trace, "node 'mm' (MatMul) runs on the CPU: gpu.gemm_tile=8x8,64x64,64 does not fit the device"),
              "trace: %s", g_trace);
    free(r);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

/* x [1,1,192,256] (192 KiB) -> Sigmoid s -> Conv 1->8 c [1,8,192,256]
 * (1.5 MiB) -> Relu h (1.5 MiB) -> Conv 8->1 d -> Add(d, x) = y; outputs
 * y and, with big_out, h too. The nodes touching c or h run on the CPU, the
 * Sigmoid and (unfused) the Add on the GPU, with transfers both ways. Compared with
 * the CPU (rtol 1e-5, atol 1e-5: the same kernels on the CPU side, the
 * GPU's Sigmoid within a few ulp). With fusions (Conv + Relu, Conv + Add)
 * and without. */
static void test_big_activation(bool big_out, bool fuse) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return;
    int64_t xd[4] = { 1, 1, 192, 256 }, w1d[4] = { 8, 1, 3, 3 }, w2d[4] = { 1, 8, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
    rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL);
    rlx_tensor *w1 = test_tensor_random(RLX_DTYPE_F32, 4, w1d, -1, 1), *w2 = test_tensor_random(RLX_DTYPE_F32, 4, w2d, -1, 1);
    rlx_model_add_initializer(m, "w1", w1);
    rlx_model_add_initializer(m, "w2", w2);
    rlx_tensor_destroy(w1);
    rlx_tensor_destroy(w2);
    rlx_attr pa[1] = { RLX_ATTR_IS("pads", 4, pads) };
    rlx_model_add_node(m, "Sigmoid", "sig", 1, (const char *[]){ "x" }, 1, (const char *[]){ "s" }, 0, NULL);
    rlx_model_add_node(m, "Conv", "conv1", 2, (const char *[]){ "s", "w1" }, 1, (const char *[]){ "c" }, 1, pa);
    rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "c" }, 1, (const char *[]){ "h" }, 0, NULL);
    rlx_model_add_node(m, "Conv", "conv2", 2, (const char *[]){ "h", "w2" }, 1, (const char *[]){ "d" }, 1, pa);
    rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "d", "x" }, 1, (const char *[]){ "y" }, 0, NULL);
    rlx_model_add_output(m, "y");
    if (big_out) rlx_model_add_output(m, "h");
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    kv opts[2] = { k_small_buffers[0], { "passes.disable", "fuse_activation,fuse_conv_residual,fuse_elementwise" } };
    char label[128];
    snprintf(label, sizeof label, "Sigmoid -> Conv -> Relu -> Conv -> Add, 1.5 MiB activations%s%s",
             big_out ? " (one an output)" : "", fuse ? ", fused" : "");
    int on_gpu = -1;
    char *r = gpu_vs_cpu(label, m, opts, fuse ? 1 : 2, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, 1e-5,
                         1e-5, &on_gpu);
    /* unfused: Sigmoid and Add on the GPU; fused: the Relu joins conv1
     * (whose output is then h) and the Add conv2 (a residual) */
    int want = fuse ? 1 : 2;
    CHECK_MSG(on_gpu == want, "%s: %d steps on the GPU, expected %d", label, on_gpu, want);
    CHECK_MSG(r && strstr(r, fuse ? "node 'conv1' (Conv) runs on the CPU: output 'h'"
                                  : "node 'conv1' (Conv) runs on the CPU: output 'c'"),
              "%s: report: %s", label, r ? r : "(none)");
    if (!fuse) CHECK_MSG(r && strstr(r, "node 'relu' (Relu) runs on the CPU: input 'c'"), "%s: report: %s", label,
                         r ? r : "(none)");
    CHECK_MSG(r && strstr(r, "node 'conv2' (Conv) runs on the CPU: input 'h'"), "%s: report: %s", label,
              r ? r : "(none)");
    free(r);
    rlx_tensor_destroy(x);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed(test_seed_from_env());
    if (!test_have_gpu()) {
        fprintf(stderr, "test_gpu_limits: no GPU adapter, skipped\n");
        TEST_MAIN_END();
    }
    test_f16_big_weights();
    test_f16_largest_half();
    test_f16_split_blocks();
    test_big_input();
    test_tile_too_big();
    test_big_activation(false, false);
    test_big_activation(true, false);
    test_big_activation(false, true);
    test_big_activation(true, true);
    TEST_MAIN_END();
}
