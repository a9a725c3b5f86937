/* rlx_consumer: a program that uses an installed rlx through its public
 * header only. It prints the header and library versions, builds
 * y = Relu(x W + b) with the graph builder, runs it on the CPU and checks
 * every element against the same sum computed here (tolerance 1e-5
 * relative; one f32 dot product of 8 terms); with MODEL.onnx it also loads
 * that model and runs it once on zero-filled inputs (symbolic dims 1).
 * Exit 0 when everything worked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rlx/rlx.h>

static int fail(const char *what, rlx_status st) {
    fprintf(stderr, "rlx_consumer: %s: %s (%s)\n", what, rlx_last_error(), rlx_status_name(st));
    return 1;
}

static int run_builder_model(void) {
    enum { N = 3, K = 8, M = 4 };
    float xv[N * K], wv[K * M], bv[M];
    for (int i = 0; i < N * K; i++) xv[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    for (int i = 0; i < K * M; i++) wv[i] = (float)((i * 5) % 13) / 6.0f - 1.0f;
    for (int i = 0; i < M; i++) bv[i] = 0.25f * (float)i - 0.5f;
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_tensor *w = NULL, *b = NULL, *x = NULL, **out = NULL;
    size_t n_out = 0;
    rlx_status st = rlx_model_create(13, &m);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, (const int64_t[]){ K, M }, 2, &w);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, (const int64_t[]){ M }, 1, &b);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, (const int64_t[]){ N, K }, 2, &x);
    if (st) return fail("create", st);
    memcpy(w->data, wv, sizeof wv);
    memcpy(b->data, bv, sizeof bv);
    memcpy(x->data, xv, sizeof xv);
    st = rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ -1, K }, (const char *[]){ "n", NULL });
    if (!st) st = rlx_model_add_initializer(m, "w", w);
    if (!st) st = rlx_model_add_initializer(m, "b", b);
    if (!st) st = rlx_model_add_node(m, "Gemm", "gemm", 3, (const char *[]){ "x", "w", "b" }, 1,
                                     (const char *[]){ "g" }, 0, NULL);
    if (!st) st = rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "g" }, 1, (const char *[]){ "y" }, 0, NULL);
    if (!st) st = rlx_model_add_output(m, "y");
    if (!st) st = rlx_model_finish(m);
    if (!st) st = rlx_session_create(m, &(rlx_session_options){ .device = "cpu" }, &s);
    if (!st)
        st = rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *const[]){ x }, &out, &n_out);
    if (st) return fail("builder model", st);
    int bad = n_out != 1 || out[0]->rank != 2 || out[0]->dims[0] != N || out[0]->dims[1] != M;
    for (int i = 0; i < N && !bad; i++)
        for (int j = 0; j < M; j++) {
            float acc = bv[j];
            for (int k = 0; k < K; k++) acc += xv[i * K + k] * wv[k * M + j];
            float want = acc > 0 ? acc : 0, got = ((const float *)out[0]->data)[i * M + j];
            if (fabsf(got - want) > 1e-5f * (1.0f + fabsf(want))) {
                fprintf(stderr, "rlx_consumer: y[%d,%d] = %g, want %g\n", i, j, got, want);
                bad = 1;
            }
        }
    printf("builder model: y = Relu(x W + b), %dx%d on %s: %s\n", N, M, rlx_session_device_name(s),
           bad ? "WRONG" : "ok");
    for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(out[i]);
    free(out);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return bad;
}

static int run_onnx(const char *path) {
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_status st = rlx_model_load_onnx(path, &m);
    if (st) return fail(path, st);
    size_t n_in = rlx_model_num_inputs(m), n_out = 0;
    rlx_tensor **in = calloc(n_in + 1, sizeof *in), **out = NULL;
    const char **names = calloc(n_in + 1, sizeof *names);
    for (size_t i = 0; i < n_in && !st; i++) {
        rlx_value_info vi;
        st = rlx_model_input_info(m, i, &vi);
        int64_t dims[RLX_MAX_RANK];
        for (int d = 0; d < vi.rank; d++) dims[d] = vi.dims[d] >= 0 ? vi.dims[d] : 1;
        names[i] = vi.name;
        if (!st) st = rlx_tensor_create(vi.dtype, dims, vi.rank, &in[i]);
    }
    if (!st) st = rlx_session_create(m, NULL, &s);
    if (!st) st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)in, &out, &n_out);
    int rc = st ? fail("onnx model", st) : 0;
    if (!st) printf("%s: %zu outputs on %s\n", path, n_out, rlx_session_device_name(s));
    for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(out[i]);
    free(out);
    for (size_t i = 0; i < n_in; i++) rlx_tensor_destroy(in[i]);
    free(in);
    free(names);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return rc;
}

int main(int argc, char **argv) {
    printf("rlx headers %s (%d.%d.%d), library %s\n", RLX_VERSION_STRING, RLX_VERSION_MAJOR, RLX_VERSION_MINOR,
           RLX_VERSION_PATCH, rlx_version());
    if (strcmp(RLX_VERSION_STRING, rlx_version()) != 0) {
        fprintf(stderr, "rlx_consumer: header and library versions differ\n");
        return 1;
    }
    int rc = run_builder_model();
    if (!rc && argc > 1) rc = run_onnx(argv[1]);
    return rc;
}
