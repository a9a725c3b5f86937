/* bench/shape_pipelines: what each new input shape costs a session in
 * pipelines. Compiles MODEL's plan for each shape given, one after the
 * other in one session (rlx_session_prepare on zero-filled inputs), and
 * prints per shape the compile time, the pipelines' share (the driver's
 * first-dispatch compile included), and how many pipelines the compile
 * created and how many it found in the process's cache.
 *
 *   shape_pipelines [--device DEV] MODEL.onnx SHAPES [SHAPES...]
 *
 * SHAPES gives every input's dims, ';'-separated in input order, each as
 * AxBxC: "1x16;1x16;1x16" for a BERT encoder's three [batch, seq] inputs
 * at seq 16. Inputs take their declared dtype. Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rlx/rlx.h>
#include <rlx/session_ext.h>

enum { MAX_IN = 16 };

static int fail(const char *what) {
    fprintf(stderr, "shape_pipelines: %s: %s\n", what, rlx_last_error());
    return 1;
}

/* Parses "AxB;CxD" into dims per input; returns the number of inputs or -1. */
static int parse(const char *s, int64_t dims[MAX_IN][RLX_MAX_RANK], int rank[MAX_IN]) {
    int n = 0;
    while (*s && n < MAX_IN) {
        rank[n] = 0;
        for (;;) {
            char *end;
            long long v = strtoll(s, &end, 10);
            if (end == s || v < 0 || rank[n] == RLX_MAX_RANK) return -1;
            dims[n][rank[n]++] = v;
            s = end;
            if (*s != 'x') break;
            s++;
        }
        n++;
        if (*s == ';') s++;
        else if (*s) return -1;
    }
    return *s ? -1 : n;
}

int main(int argc, char **argv) {
    const char *device = "gpu";
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--device") == 0) device = argv[a + 1], a += 2;
    if (argc - a < 2) {
        fprintf(stderr, "usage: shape_pipelines [--device DEV] MODEL.onnx SHAPES [SHAPES...]\n");
        return 2;
    }
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    if (rlx_model_load_onnx(argv[a], &m)) return fail(argv[a]);
    rlx_session_options so = { .device = device };
    if (rlx_session_create(m, &so, &s)) return fail("creating the session");
    size_t n_in = rlx_model_num_inputs(m);
    int rc = 0;
    for (int k = a + 1; k < argc && !rc; k++) {
        int64_t dims[MAX_IN][RLX_MAX_RANK];
        int rank[MAX_IN];
        if (parse(argv[k], dims, rank) != (int)n_in || n_in > MAX_IN) {
            fprintf(stderr, "shape_pipelines: '%s': expected the dims of %zu inputs\n", argv[k], n_in);
            rc = 2;
            break;
        }
        rlx_tensor *in[MAX_IN] = { NULL };
        const char *names[MAX_IN];
        for (size_t i = 0; i < n_in && !rc; i++) {
            rlx_value_info vi;
            if (rlx_model_input_info(m, i, &vi) || rlx_tensor_create(vi.dtype, dims[i], rank[i], &in[i]))
                rc = fail("making the inputs");
            names[i] = vi.name;
        }
        rlx_session_stats st;
        if (!rc && rlx_session_prepare(s, n_in, names, (const rlx_tensor *const *)in)) rc = fail(argv[k]);
        if (!rc && rlx_session_get_stats(s, &st)) rc = fail("stats");
        if (!rc)
            printf("%-24s compile %8.3f s, of which pipelines %8.3f s (%zu created, %zu reused; driver %.3f s), "
                   "%zu dispatches\n",
                   argv[k], st.passes_s + st.backend_compile_s, st.pipelines_s, st.n_pipelines_new,
                   st.n_pipelines_reused, st.pipelines_driver_s, st.n_dispatches);
        for (size_t i = 0; i < n_in; i++) rlx_tensor_destroy(in[i]);
    }
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return rc;
}
