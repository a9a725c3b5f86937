/* ONNX import: models built here with the protobuf-c structs, written to a
 * temporary folder and loaded back. Happy paths (values checked against
 * numbers computed here), every refused input with its status and message,
 * external data, subgraphs with outer references, a seeded mutation test
 * (the importer must return an error or succeed, never crash), and the
 * PP-OCRv4 detector from models/. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include "ir/op.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/onnx.h"
#include "onnx_build.h"

#define RLX_ARRAY_LEN_T(a) (sizeof(a) / sizeof((a)[0]))
#include "ir/graph.h"
#include "runtime/model.h"
#include "runtime/session.h"

/* ================================================================ files */

static char g_dir[64];
static char *g_files[64];
static size_t g_n_files;

static char *path_in_dir(const char *name) {
    char *p = xcalloc(strlen(g_dir) + strlen(name) + 2, 1);
    sprintf(p, "%s/%s", g_dir, name);
    return p;
}

/* Adds a path to the files removed at the end; returns the kept copy. */
static const char *remember(char *path) {
    for (size_t i = 0; i < g_n_files; i++)
        if (strcmp(g_files[i], path) == 0) {
            free(path);
            return g_files[i];
        }
    if (g_n_files >= RLX_ARRAY_LEN_T(g_files)) {
        fprintf(stderr, "too many temporary files\n");
        exit(2);
    }
    g_files[g_n_files++] = path;
    return path;
}

/* Writes bytes to g_dir/name; returns the path (owned by the file list). */
static const char *write_file(const char *name, const void *data, size_t size) {
    char *p = path_in_dir(name);
    FILE *f = fopen(p, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size)) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
    fclose(f);
    return remember(p);
}

/* Packs m, writes it as g_dir/name, loads it; frees m. *path gets the path. */
static rlx_status load_built(Onnx__ModelProto *m, const char *name, rlx_model **out, const char **path) {
    size_t size;
    uint8_t *buf = model_pack_free(m, &size);
    const char *p = write_file(name, buf, size);
    free(buf);
    if (path) *path = p;
    return rlx_model_load_onnx(p, out);
}

/* A one-input model y = Relu(x) around a graph the caller adds to. */
static Onnx__ModelProto *relu_model(int64_t opset, Onnx__GraphProto **g_out) {
    Onnx__GraphProto *g = graph_new("relu");
    int64_t d[2] = { 2, 3 };
    graph_input(g, vi_new("x", 1, 2, d, NULL));
    graph_node(g, node_new("Relu", "relu1", "x", "y"));
    graph_output(g, vi_new("y", 1, 2, d, NULL));
    if (g_out) *g_out = g;
    return model_new(opset, g);
}

static const char *error_has(const char *a, const char *b, const char *c) {
    const char *e = rlx_last_error();
    if (a && !strstr(e, a)) return a;
    if (b && !strstr(e, b)) return b;
    if (c && !strstr(e, c)) return c;
    return NULL;
}

#define CHECK_ERROR_HAS(a, b, c)                                                                      \
    do {                                                                                              \
        const char *miss_ = error_has((a), (b), (c));                                                 \
        CHECK_MSG(miss_ == NULL, "message lacks \"%s\": %s", miss_ ? miss_ : "", rlx_last_error());   \
    } while (0)

/* ================================================================ happy paths */

/* out = Relu(x + b) * c * s with b an initializer that is also listed as a
 * graph input, c a Constant node, s a Constant value_float; nodes written in
 * reverse order. Run on the CPU and compared with the same arithmetic done
 * here (float, same order: exact, tolerance 0). */
static void test_end_to_end(void) {
    Onnx__GraphProto *g = graph_new("main");
    int64_t dx[2] = { DIM_UNSET, 3 }, d3[1] = { 3 };
    const char *px[2] = { "batch", NULL };
    float b[3], c[3], s = test_rand_uniform(0.5f, 2.0f);
    for (int i = 0; i < 3; i++) b[i] = test_rand_uniform(-1, 1), c[i] = test_rand_uniform(-2, 2);
    graph_input(g, vi_new("x", 1, 2, dx, px));
    graph_input(g, vi_new("b", 1, 1, d3, NULL)); /* old exporters list initializers as inputs */
    graph_init(g, tensor_raw("b", 1, 1, d3, b, sizeof b));
    graph_node(g, node_new("Mul", "mul_s", "u,s", "out"));
    graph_node(g, node_new("Mul", "mul_c", "y,c", "u"));
    graph_node(g, node_new("Relu", "relu", "t", "y"));
    graph_node(g, node_new("Add", "add", "x,b", "t"));
    Onnx__NodeProto *kc = node_new("Constant", "const_c", NULL, "c");
    node_attr(kc, attr_t("value", tensor_floats("c", 1, d3, c, 3)));
    graph_node(g, kc);
    Onnx__NodeProto *ks = node_new("Constant", "const_s", NULL, "s");
    node_attr(ks, attr_f("value_float", s));
    graph_node(g, ks);
    graph_value_info(g, vi_new("t", 1, 2, dx, px));
    graph_output(g, vi_new("out", 1, 2, dx, px));
    rlx_model *m = NULL;
    CHECK_OK(load_built(model_new(13, g), "e2e.onnx", &m, NULL));
    if (!m) return;

    CHECK(rlx_model_num_inputs(m) == 1);
    CHECK(rlx_model_num_outputs(m) == 1);
    rlx_value_info in, out;
    CHECK_OK(rlx_model_input_info(m, 0, &in));
    CHECK(strcmp(in.name, "x") == 0 && in.dtype == RLX_DTYPE_F32 && in.rank == 2);
    CHECK(in.dims[0] == -1 && in.dim_names[0] && strcmp(in.dim_names[0], "batch") == 0);
    CHECK(in.dims[1] == 3 && in.dim_names[1] == NULL);
    CHECK_OK(rlx_model_output_info(m, 0, &out));
    CHECK(strcmp(out.name, "out") == 0 && out.dtype == RLX_DTYPE_F32 && out.rank == 2 && out.dims[1] == 3);
    /* Constant nodes are gone, their outputs are constants; nodes are sorted */
    CHECK(m->g->n_nodes == 4);
    int ic = rlx_graph_find(m->g, "c"), is = rlx_graph_find(m->g, "s");
    CHECK(ic >= 0 && m->g->values[ic].konst && memcmp(m->g->values[ic].konst->data, c, sizeof c) == 0);
    CHECK(is >= 0 && m->g->values[is].konst && m->g->values[is].konst->rank == 0 &&
          *(float *)m->g->values[is].konst->data == s);
    if (m->g->n_nodes == 4) CHECK(strcmp(m->g->nodes[0].op_type, "Add") == 0 && strcmp(m->g->nodes[3].name, "mul_s") == 0);

    rlx_session *sess = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &sess));
    int64_t dn[2] = { 4, 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, dn, -2, 2);
    rlx_tensor **outs = NULL;
    size_t n_out = 0;
    const char *names[1] = { "x" };
    const rlx_tensor *ins[1] = { x };
    if (sess) CHECK_OK(rlx_session_run(sess, 1, names, ins, &outs, &n_out));
    if (outs && n_out == 1) {
        const float *px_ = x->data, *po = outs[0]->data;
        int bad = 0;
        for (int i = 0; i < 12; i++) {
            float t = px_[i] + b[i % 3];
            float want = (t > 0 ? t : 0) * c[i % 3] * s;
            if (po[i] != want) bad++; /* tolerance 0: the same float operations in the same order */
        }
        CHECK_MSG(bad == 0, "%d of 12 outputs differ", bad);
        rlx_tensor_destroy(outs[0]);
    }
    free(outs);
    rlx_tensor_destroy(x);
    rlx_session_destroy(sess);
    rlx_model_destroy(m);
}

/* ================================================================ overridable initializers */

/* y = x * Relu(w) (Relu(w) folds) and z = MatMul(x, v) (v is packed), where
 * w and v are initializers that the graph also lists as inputs, and k a
 * plain initializer: z2 = x * k. ir: the model's IR version. */
static rlx_model *overridable_model(int64_t ir, float *w0, float *v0, float *k0) {
    Onnx__GraphProto *g = graph_new("ov");
    int64_t dx[2] = { 2, 3 }, dv[2] = { 3, 4 }, dz[2] = { 2, 4 };
    for (int i = 0; i < 6; i++) w0[i] = test_rand_uniform(-1, 1), k0[i] = test_rand_uniform(-1, 1);
    for (int i = 0; i < 12; i++) v0[i] = test_rand_uniform(-1, 1);
    graph_input(g, vi_new("x", 1, 2, dx, NULL));
    graph_input(g, vi_new("w", 1, 2, dx, NULL));
    graph_input(g, vi_new("v", 1, 2, dv, NULL));
    graph_init(g, tensor_raw("w", 1, 2, dx, w0, 6 * sizeof(float)));
    graph_init(g, tensor_raw("v", 1, 2, dv, v0, 12 * sizeof(float)));
    graph_init(g, tensor_raw("k", 1, 2, dx, k0, 6 * sizeof(float)));
    graph_node(g, node_new("Relu", "relu", "w", "rw"));
    graph_node(g, node_new("Mul", "mul", "x,rw", "y"));
    graph_node(g, node_new("MatMul", "mm", "x,v", "z"));
    graph_node(g, node_new("Mul", "mul_k", "x,k", "z2"));
    graph_output(g, vi_new("y", 1, 2, dx, NULL));
    graph_output(g, vi_new("z", 1, 2, dz, NULL));
    graph_output(g, vi_new("z2", 1, 2, dx, NULL));
    Onnx__ModelProto *mp = model_new(13, g);
    mp->ir_version = ir;
    rlx_model *m = NULL;
    CHECK_OK(load_built(mp, ir < 4 ? "ov_ir3.onnx" : "ov_ir8.onnx", &m, NULL));
    return m;
}

/* Runs s with x and, where not NULL, w and v; checks y, z and z2 against
 * the same arithmetic done here with w, v (the values the run must use). */
static void ov_check(rlx_session *s, const rlx_tensor *x, const rlx_tensor *wf, const rlx_tensor *vf, const float *w,
                     const float *v, const float *k, const char *what) {
    const char *names[3] = { "x" };
    const rlx_tensor *ins[3] = { x };
    size_t n = 1;
    if (wf) names[n] = "w", ins[n++] = wf;
    if (vf) names[n] = "v", ins[n++] = vf;
    rlx_tensor **outs = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, n, names, ins, &outs, &n_out));
    if (!outs || n_out != 3) return;
    const float *px = x->data, *py = outs[0]->data, *pz = outs[1]->data, *pz2 = outs[2]->data;
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        if (py[i] != px[i] * (w[i] > 0 ? w[i] : 0)) bad++;
        if (pz2[i] != px[i] * k[i]) bad++;
    }
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++) {
            float want = 0;
            for (int j = 0; j < 3; j++) want += px[r * 3 + j] * v[j * 4 + c];
            if (fabsf(pz[r * 4 + c] - want) > 1e-5f) bad++;
        }
    CHECK_MSG(bad == 0, "%s: %d of 20 outputs differ", what, bad);
    for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
}

/* IR >= 4: the initializers listed as inputs are overridable: not inputs,
 * listed apart, a run may feed them (the fed value is used, not a folded or
 * packed initializer) or not (the initializer is used). IR 3: they are
 * constants and feeding one is refused, naming it. */
static void test_overridable_initializers(void) {
    float w0[6], v0[12], k0[6];
    int64_t dx[2] = { 2, 3 }, dv[2] = { 3, 4 };
    rlx_model *m = overridable_model(8, w0, v0, k0);
    if (!m) return;
    CHECK(rlx_model_num_inputs(m) == 1);
    CHECK(rlx_model_num_overridable_initializers(m) == 2);
    rlx_value_info vi;
    CHECK_OK(rlx_model_overridable_initializer_info(m, 0, &vi));
    CHECK(strcmp(vi.name, "w") == 0 && vi.dtype == RLX_DTYPE_F32 && vi.rank == 2 && vi.dims[0] == 2 && vi.dims[1] == 3);
    CHECK_OK(rlx_model_overridable_initializer_info(m, 1, &vi));
    CHECK(strcmp(vi.name, "v") == 0 && vi.rank == 2 && vi.dims[1] == 4);
    CHECK_FAILS(rlx_model_overridable_initializer_info(m, 2, &vi), RLX_ERR_INVALID_ARGUMENT, "out of range");

    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, dx, -2, 2);
    rlx_tensor *w1 = test_tensor_random(RLX_DTYPE_F32, 2, dx, -1, 1);
    rlx_tensor *v1 = test_tensor_random(RLX_DTYPE_F32, 2, dv, -1, 1);
    if (s && x && w1 && v1) {
        const float *pw1 = w1->data, *pv1 = v1->data;
        ov_check(s, x, NULL, NULL, w0, v0, k0, "not fed");
        ov_check(s, x, w1, NULL, pw1, v0, k0, "w fed");
        ov_check(s, x, NULL, v1, w0, pv1, k0, "v fed");
        ov_check(s, x, w1, v1, pw1, pv1, k0, "w and v fed");
        ov_check(s, x, NULL, NULL, w0, v0, k0, "not fed again");
        ov_check(s, x, w1, NULL, pw1, v0, k0, "w fed again");
        CHECK_MSG(rlx_session_compile_count(s) == 4, "compiled %llu plans, expected 4 (one per set fed)",
                  (unsigned long long)rlx_session_compile_count(s));
        /* a fed value is checked as an input's */
        int64_t bad_d[2] = { 3, 2 };
        rlx_tensor *wb = test_tensor_random(RLX_DTYPE_F32, 2, bad_d, -1, 1);
        const char *names[2] = { "x", "w" };
        const rlx_tensor *ins[2] = { x, wb };
        rlx_tensor **outs = NULL;
        size_t n_out = 0;
        CHECK_FAILS(rlx_session_run(s, 2, names, ins, &outs, &n_out), RLX_ERR_INVALID_ARGUMENT, "input 'w' has shape");
        /* the initializer feeds nothing but itself: x is still required */
        CHECK_FAILS(rlx_session_run(s, 1, names + 1, ins + 1, &outs, &n_out), RLX_ERR_INVALID_ARGUMENT,
                    "input 'x' is missing");
        rlx_tensor_destroy(wb);
        /* k is a plain initializer: not overridable */
        const char *kn[2] = { "x", "k" };
        const rlx_tensor *kin[2] = { x, w1 };
        CHECK_FAILS(rlx_session_run(s, 2, kn, kin, &outs, &n_out), RLX_ERR_INVALID_ARGUMENT,
                    "'k' is an initializer of the model");
    }
    rlx_session_destroy(s);
    rlx_model_destroy(m);

    /* IR 3: constants, as onnxruntime takes them */
    m = overridable_model(3, w0, v0, k0);
    if (m) {
        CHECK(rlx_model_num_inputs(m) == 1);
        CHECK(rlx_model_num_overridable_initializers(m) == 0);
        s = NULL;
        CHECK_OK(rlx_session_create(m, NULL, &s));
        if (s && x && w1) {
            ov_check(s, x, NULL, NULL, w0, v0, k0, "IR 3");
            const char *names[2] = { "x", "w" };
            const rlx_tensor *ins[2] = { x, w1 };
            rlx_tensor **outs = NULL;
            size_t n_out = 0;
            CHECK_FAILS(rlx_session_run(s, 2, names, ins, &outs, &n_out), RLX_ERR_INVALID_ARGUMENT,
                        "'w' is an initializer of the model, not an input");
        }
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w1);
    rlx_tensor_destroy(v1);
}

/* dim_value, dim_param, unset dims, -1, empty dim_param, unknown shape. */
static void test_input_dims(void) {
    Onnx__GraphProto *g = graph_new("dims");
    int64_t d[5] = { 0, 3, DIM_UNSET, -1, 0 };
    const char *p[5] = { "batch", NULL, NULL, NULL, "" };
    graph_input(g, vi_new("x", 1, 5, d, p));
    graph_input(g, vi_new("z", 1, -1, NULL, NULL));
    int64_t d2[2] = { 0, 7 };
    const char *p2[2] = { "batch", NULL };
    graph_input(g, vi_new("w", 1, 2, d2, p2));
    graph_node(g, node_new("Relu", "r1", "x", "y1"));
    graph_node(g, node_new("Relu", "r2", "z", "y2"));
    graph_node(g, node_new("Relu", "r3", "w", "y3"));
    graph_output(g, vi_new("y1", 1, 5, d, p));
    graph_output(g, vi_new("y2", 1, -1, NULL, NULL));
    graph_output(g, vi_new("y3", -1, 0, NULL, NULL)); /* output without a type */
    rlx_model *m = NULL;
    CHECK_OK(load_built(model_new(14, g), "dims.onnx", &m, NULL));
    if (!m) return;
    rlx_value_info a, b, c;
    CHECK_OK(rlx_model_input_info(m, 0, &a));
    CHECK(a.rank == 5);
    CHECK(a.dims[0] == -1 && a.dim_names[0] && strcmp(a.dim_names[0], "batch") == 0);
    CHECK(a.dims[1] == 3 && !a.dim_names[1]);
    CHECK(a.dims[2] == -1 && !a.dim_names[2]);
    CHECK(a.dims[3] == -1 && !a.dim_names[3]);
    CHECK(a.dims[4] == -1 && !a.dim_names[4]);
    CHECK_OK(rlx_model_input_info(m, 1, &b));
    CHECK(b.rank == -1 && b.dtype == RLX_DTYPE_F32);
    CHECK_OK(rlx_model_input_info(m, 2, &c));
    /* equal dim_params are one symbol */
    CHECK(c.dim_names[0] && a.dim_names[0] && c.dim_names[0] == a.dim_names[0]);
    rlx_value_info o;
    CHECK_OK(rlx_model_output_info(m, 0, &o));
    CHECK(o.rank == 5 && o.dim_names[0] && strcmp(o.dim_names[0], "batch") == 0);
    CHECK_OK(rlx_model_output_info(m, 2, &o));
    CHECK(o.rank == 2 && o.dtype == RLX_DTYPE_F32 && o.dims[1] == 7);
    CHECK(rlx_model_input_info(m, 3, &o) == RLX_ERR_INVALID_ARGUMENT);
    rlx_model_destroy(m);
}

/* Constant node attribute forms become constants of the right type. */
static void test_constant_forms(void) {
    Onnx__GraphProto *g = graph_new("consts");
    float fs[4];
    int64_t is[3];
    for (int i = 0; i < 4; i++) fs[i] = test_rand_uniform(-5, 5);
    for (int i = 0; i < 3; i++) is[i] = (int64_t)(test_rand_u64() % 2000) - 1000;
    float f1 = test_rand_uniform(-5, 5);
    int64_t i1 = (int64_t)(test_rand_u64() >> 1);
    Onnx__NodeProto *n;
    n = node_new("Constant", "kf", NULL, "kf"); node_attr(n, attr_f("value_float", f1)); graph_node(g, n);
    n = node_new("Constant", "kfs", NULL, "kfs"); node_attr(n, attr_fs("value_floats", 4, fs)); graph_node(g, n);
    n = node_new("Constant", "ki", NULL, "ki"); node_attr(n, attr_i("value_int", i1)); graph_node(g, n);
    n = node_new("Constant", "kis", NULL, "kis"); node_attr(n, attr_is("value_ints", 3, is)); graph_node(g, n);
    const char *outs[4] = { "kf", "kfs", "ki", "kis" };
    for (int i = 0; i < 4; i++) graph_output(g, vi_new(outs[i], -1, 0, NULL, NULL));
    rlx_model *m = NULL;
    CHECK_OK(load_built(model_new(13, g), "consts.onnx", &m, NULL));
    if (!m) return;
    CHECK(m->g->n_nodes == 0);
    const rlx_tensor *t;
    t = m->g->values[rlx_graph_find(m->g, "kf")].konst;
    CHECK(t && t->dtype == RLX_DTYPE_F32 && t->rank == 0 && *(float *)t->data == f1);
    t = m->g->values[rlx_graph_find(m->g, "kfs")].konst;
    CHECK(t && t->dtype == RLX_DTYPE_F32 && t->rank == 1 && t->dims[0] == 4 && memcmp(t->data, fs, sizeof fs) == 0);
    t = m->g->values[rlx_graph_find(m->g, "ki")].konst;
    CHECK(t && t->dtype == RLX_DTYPE_I64 && t->rank == 0 && *(int64_t *)t->data == i1);
    t = m->g->values[rlx_graph_find(m->g, "kis")].konst;
    CHECK(t && t->dtype == RLX_DTYPE_I64 && t->rank == 1 && t->dims[0] == 3 && memcmp(t->data, is, sizeof is) == 0);
    rlx_model_destroy(m);

    /* sparse constants are refused, naming the node (string constants
     * import: tests/test_strings.c) */
    const char *bad[2] = { "value_string", "sparse_value" };
    for (int k = 1; k < 2; k++) {
        Onnx__GraphProto *g2;
        Onnx__ModelProto *mp = relu_model(13, &g2);
        n = node_new("Constant", "kstr", NULL, "kstr");
        if (k == 0) node_attr(n, attr_s(bad[k], "hello"));
        else node_attr(n, attr_new(bad[k], ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR));
        graph_node(g2, n);
        const char *path;
        CHECK_FAILS(load_built(mp, "kstr.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "kstr");
        CHECK_ERROR_HAS(bad[k], path, NULL);
        CHECK(m == NULL);
    }
}

/* Every dtype, from raw_data and from its typed field, against bytes made
 * here; bools normalise to 0/1. Also through a serialized TensorProto file. */
static void test_tensor_dtypes(void) {
    static const int types[] = { 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16 };
    int64_t dims[2] = { 3, 5 };
    const size_t n = 15;
    for (size_t k = 0; k < RLX_ARRAY_LEN_T(types); k++) {
        int dt = types[k];
        size_t es = rlx_dtype_size((rlx_dtype)dt);
        uint8_t raw[15 * 8], want[15 * 8];
        for (size_t i = 0; i < n * es; i++) raw[i] = (uint8_t)test_rand_u64();
        memcpy(want, raw, n * es);
        if (dt == 9)
            for (size_t i = 0; i < n; i++) want[i] = raw[i] != 0;
        /* raw_data */
        Onnx__TensorProto *tp = tensor_raw("w", dt, 2, dims, raw, n * es);
        rlx_tensor *t = NULL;
        CHECK_OK(rlx_onnx_tensor_from_proto(tp, NULL, &t));
        CHECK_MSG(t && (int)t->dtype == dt && t->rank == 2 && t->dims[1] == 5 && memcmp(t->data, want, n * es) == 0,
                  "raw_data dtype %d", dt);
        rlx_tensor_destroy(t);
        onnx__tensor_proto__free_unpacked(tp, NULL);

        /* typed field: values made from the same random bytes */
        tp = tensor_new("w", dt, 2, dims);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = test_rand_u64();
            uint8_t *w = want + i * es;
            switch (dt) {
            case 1: { float v = test_rand_uniform(-9, 9); PUSH(tp->float_data, tp->n_float_data, v); memcpy(w, &v, 4); break; }
            case 11: { double v = (double)test_rand_uniform(-9, 9) / 3.0; PUSH(tp->double_data, tp->n_double_data, v); memcpy(w, &v, 8); break; }
            case 7: { int64_t v = (int64_t)r; PUSH(tp->int64_data, tp->n_int64_data, v); memcpy(w, &v, 8); break; }
            case 12: { uint32_t v = (uint32_t)r; uint64_t u = v; PUSH(tp->uint64_data, tp->n_uint64_data, u); memcpy(w, &v, 4); break; }
            case 13: { uint64_t v = r; PUSH(tp->uint64_data, tp->n_uint64_data, v); memcpy(w, &v, 8); break; }
            case 6: { int32_t v = (int32_t)(uint32_t)r; PUSH(tp->int32_data, tp->n_int32_data, v); memcpy(w, &v, 4); break; }
            case 5: { int16_t v = (int16_t)(uint16_t)r; int32_t s = v; PUSH(tp->int32_data, tp->n_int32_data, s); memcpy(w, &v, 2); break; }
            case 3: { int8_t v = (int8_t)(uint8_t)r; int32_t s = v; PUSH(tp->int32_data, tp->n_int32_data, s); memcpy(w, &v, 1); break; }
            case 2: { uint8_t v = (uint8_t)r; int32_t s = v; PUSH(tp->int32_data, tp->n_int32_data, s); memcpy(w, &v, 1); break; }
            case 9: { int32_t s = (int32_t)(r % 3); uint8_t v = s != 0; PUSH(tp->int32_data, tp->n_int32_data, s); memcpy(w, &v, 1); break; }
            case 4: case 10: case 16: { uint16_t v = (uint16_t)r; int32_t s = v; PUSH(tp->int32_data, tp->n_int32_data, s); memcpy(w, &v, 2); break; }
            }
        }
        CHECK_OK(rlx_onnx_tensor_from_proto(tp, NULL, &t));
        CHECK_MSG(t && (int)t->dtype == dt && memcmp(t->data, want, n * es) == 0, "typed field dtype %d", dt);
        rlx_tensor_destroy(t);

        /* the same tensor as a .pb file (the conformance test data format) */
        size_t size = onnx__tensor_proto__get_packed_size(tp);
        uint8_t *buf = xcalloc(size, 1);
        onnx__tensor_proto__pack(tp, buf);
        const char *path = write_file("input_0.pb", buf, size);
        t = NULL;
        CHECK_OK(rlx_onnx_load_tensor_file(path, &t));
        CHECK_MSG(t && (int)t->dtype == dt && memcmp(t->data, want, n * es) == 0, "tensor file dtype %d", dt);
        rlx_tensor_destroy(t);
        /* a truncated file is not a TensorProto */
        path = write_file("input_bad.pb", buf, size / 2);
        CHECK_FAILS(rlx_onnx_load_tensor_file(path, &t), RLX_ERR_INVALID_MODEL, "protobuf parse failed");
        CHECK(t == NULL);
        free(buf);
        onnx__tensor_proto__free_unpacked(tp, NULL);
    }
    /* scalars and empty tensors */
    Onnx__TensorProto *tp = tensor_floats("s", 0, NULL, (float[]){ 2.5f }, 1);
    rlx_tensor *t = NULL;
    CHECK_OK(rlx_onnx_tensor_from_proto(tp, NULL, &t));
    CHECK(t && t->rank == 0 && *(float *)t->data == 2.5f);
    rlx_tensor_destroy(t);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    int64_t d0[2] = { 4, 0 };
    tp = tensor_new("e", 7, 2, d0);
    CHECK_OK(rlx_onnx_tensor_from_proto(tp, NULL, &t));
    CHECK(t && t->rank == 2 && t->dims[1] == 0 && t->nbytes == 0);
    rlx_tensor_destroy(t);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    CHECK_FAILS(rlx_onnx_load_tensor_file("/nonexistent/rlx/input_0.pb", &t), RLX_ERR_IO, "/nonexistent/rlx/input_0.pb");
}

/* ================================================================ refusals */

static void test_bad_ops_and_opsets(void) {
    rlx_model *m = NULL;
    const char *path;
    Onnx__GraphProto *g;
    Onnx__ModelProto *mp = relu_model(13, &g);
    graph_node(g, node_new("FooBar", "mystery_node", "x", "q"));
    CHECK_FAILS(load_built(mp, "unknown_op.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "FooBar");
    CHECK_ERROR_HAS("mystery_node", "opset 13", path);
    CHECK(m == NULL);

    mp = relu_model(13, &g);
    graph_node(g, node_new("HardSwish", "hs", "x", "q"));
    CHECK_FAILS(load_built(mp, "hardswish13.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "HardSwish");
    CHECK_ERROR_HAS("'hs'", "opset 13", NULL);
    mp = relu_model(14, &g);
    graph_node(g, node_new("HardSwish", "hs", "x", "q"));
    graph_output(g, vi_new("q", 1, -1, NULL, NULL));
    CHECK_OK(load_built(mp, "hardswish14.onnx", &m, NULL));
    rlx_model_destroy(m);

    const int64_t bad_opsets[3] = { RLX_OPSET_MAX + 1, 99, 1000 };
    for (int i = 0; i < 3; i++) {
        char want[32];
        snprintf(want, sizeof want, "opset %lld", (long long)bad_opsets[i]);
        CHECK_FAILS(load_built(relu_model(bad_opsets[i], NULL), "opset.onnx", &m, &path), RLX_ERR_UNSUPPORTED, want);
        CHECK_ERROR_HAS(path, NULL, NULL);
    }
    /* opset_import given as "ai.onnx" works like "" */
    mp = relu_model(13, NULL);
    free(mp->opset_import[0]->domain);
    mp->opset_import[0]->domain = S("ai.onnx");
    CHECK_OK(load_built(mp, "aionnx.onnx", &m, NULL));
    rlx_model_destroy(m);
    /* only another domain (as ai.onnx.ml models do): unsupported, naming it */
    mp = relu_model(13, NULL);
    free(mp->opset_import[0]->domain);
    mp->opset_import[0]->domain = S("com.example");
    CHECK_FAILS(load_built(mp, "noopset.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "com.example");
    /* IR version 2 without opset_import means opset 1 */
    mp = relu_model(0, NULL);
    mp->ir_version = 2;
    CHECK_FAILS(load_built(mp, "ir2.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "opset 1");

    /* another domain: named with node and op */
    mp = relu_model(13, &g);
    Onnx__NodeProto *n = node_new("FancyOp", "fancy1", "x", "q");
    n->domain = S("com.example");
    graph_node(g, n);
    CHECK_FAILS(load_built(mp, "domain.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "com.example");
    CHECK_ERROR_HAS("FancyOp", "fancy1", path);

    /* a file's Mul-6 of [2, 3] and [3] without broadcast=1: ONNX takes
     * one shape (numpy broadcasting came with Mul-7; onnxruntime refuses
     * it); with broadcast=1 it loads */
    for (int bc = 0; bc < 2; bc++) {
        g = graph_new("mul6");
        int64_t dx[2] = { 2, 3 }, db[1] = { 3 };
        graph_input(g, vi_new("x", 1, 2, dx, NULL));
        graph_init(g, tensor_floats("b", 1, db, (float[]){ 1, 2, 3 }, 3));
        n = node_new("Mul", "mul6", "x,b", "y");
        if (bc) node_attr(n, attr_i("broadcast", 1));
        graph_node(g, n);
        graph_output(g, vi_new("y", 1, 2, dx, NULL));
        m = NULL;
        if (bc) {
            CHECK_OK(load_built(model_new(6, g), "mul6.onnx", &m, &path));
            rlx_model_destroy(m);
        } else {
            CHECK_FAILS(load_built(model_new(6, g), "mul6.onnx", &m, &path), RLX_ERR_INVALID_MODEL,
                        "node 'mul6' (Mul): inputs 'x' of shape [2,3] and 'b' of shape [3] differ: before version 7 "
                        "the inputs have one shape without broadcast=1");
            CHECK(m == NULL);
        }
    }
}

/* An INT attribute that ONNX defines as 0 or 1 (the schema row's boolean)
 * is refused with another value when the model loads, naming node, op,
 * attribute and value: the tester's ReduceMax keepdims=2, ReduceSum
 * keepdims=-1 and noop_with_empty_axes=3, ArgMax keepdims=2 and
 * AveragePool ceil_mode=2 loaded and ran as 1 ("on"), where onnxruntime
 * takes only 1 as on, so output shapes differed silently. 0 and 1 load. */
static void test_attr_booleans(void) {
    static const struct {
        int64_t opset;
        const char *op, *ins, *attr;
        int rank; /* of x: 2 ([2,3]) or 4 ([1,1,4,4]) */
    } cases[] = {
        { 13, "ReduceMax", "x", "keepdims", 2 },
        { 13, "ReduceSum", "x", "keepdims", 2 },
        { 13, "ReduceSum", "x", "noop_with_empty_axes", 2 },
        { 18, "ReduceMean", "x", "noop_with_empty_axes", 2 },
        { 13, "ArgMax", "x", "keepdims", 2 },
        { 13, "ArgMin", "x", "select_last_index", 2 },
        { 13, "Gemm", "x,w", "transB", 2 },
        { 13, "Mod", "x,x", "fmod", 2 },
        { 14, "CumSum", "x,ax", "reverse", 2 },
        { 14, "Trilu", "x", "upper", 2 },
        { 19, "AveragePool", "x", "ceil_mode", 4 },
        { 19, "AveragePool", "x", "count_include_pad", 4 },
        { 13, "MaxPool", "x", "ceil_mode", 4 },
    };
    static const int64_t values[] = { 2, -1, 0, 1 };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        for (size_t j = 0; j < RLX_ARRAY_LEN(values); j++) {
            int64_t v = values[j];
            /* Mod with float inputs requires fmod=1 (a separate refusal) */
            if (strcmp(cases[i].op, "Mod") == 0 && v == 0) continue;
            Onnx__GraphProto *g = graph_new("bool_attrs");
            int64_t d2[2] = { 2, 3 }, d4[4] = { 1, 1, 4, 4 }, dw[2] = { 3, 3 }, k[2] = { 2, 2 }, axis = 1;
            float ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
            graph_input(g, vi_new("x", 1, cases[i].rank, cases[i].rank == 4 ? d4 : d2, NULL));
            graph_init(g, tensor_floats("w", 2, dw, ones, 9));
            graph_init(g, tensor_raw("ax", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL, &axis, sizeof axis));
            Onnx__NodeProto *n = node_new(cases[i].op, "the_node", cases[i].ins, "y");
            if (cases[i].rank == 4) node_attr(n, attr_is("kernel_shape", 2, k));
            node_attr(n, attr_i(cases[i].attr, v));
            graph_node(g, n);
            graph_output(g, vi_new("y", strcmp(cases[i].op, "ArgMax") == 0 || strcmp(cases[i].op, "ArgMin") == 0 ? 7 : 1,
                                   -1, NULL, NULL));
            rlx_model *m = NULL;
            const char *path;
            char what[96], want[160];
            snprintf(what, sizeof what, "%s-%lld %s=%lld", cases[i].op, (long long)cases[i].opset, cases[i].attr,
                     (long long)v);
            rlx_status st = load_built(model_new(cases[i].opset, g), "bool_attrs.onnx", &m, &path);
            if (v == 0 || v == 1) {
                CHECK_MSG(st == RLX_OK, "%s loads: %s", what, rlx_last_error());
            } else {
                snprintf(want, sizeof want, "attribute '%s' of %s-", cases[i].attr, cases[i].op);
                CHECK_MSG(st == RLX_ERR_INVALID_MODEL, "%s: status %d: %s", what, (int)st, rlx_last_error());
                CHECK_ERROR_HAS("node 'the_node'", want, v == 2 ? "must be 0 or 1, got 2" : "must be 0 or 1, got -1");
            }
            rlx_model_destroy(m);
        }
    }
}

/* An attribute of the wrong type is refused when the model loads, naming
 * node, op and attribute, for every op (rlx_graph_add_node's check_attrs):
 * the tester's Add-6 with broadcast=1 and axis=1.5 (a FLOAT where the
 * legacy broadcast's axis is an INT) was truncated to axis 1 without a
 * word; so is a schema attribute (Softmax's axis 0.5, Concat's axis 1.0,
 * Gemm's alpha given as an INT). The same models with the right types load. */
static void test_attr_types(void) {
    static const struct {
        int64_t opset;
        const char *op, *ins;
        const char *attr;
        int as_float; /* 1: the attribute as a FLOAT, 0: as an INT */
        double v;
        const char *want;
    } cases[] = {
        { 6, "Add", "x,b", "axis", 1, 1.5, "attribute 'axis' of Add-6 at opset 6 must be an INT, got a FLOAT (1.5)" },
        { 6, "Add", "x,b", "axis", 1, 1.0, "attribute 'axis' of Add-6 at opset 6 must be an INT, got a FLOAT (1)" },
        { 6, "Mul", "x,b", "broadcast", 1, 1.0,
          "attribute 'broadcast' of Mul-6 at opset 6 must be an INT, got a FLOAT (1)" },
        { 13, "Softmax", "x", "axis", 1, 0.5,
          "attribute 'axis' of Softmax-13 at opset 13 must be an INT, got a FLOAT (0.5)" },
        { 13, "Concat", "x,x", "axis", 1, 1.0,
          "attribute 'axis' of Concat-13 at opset 13 must be an INT, got a FLOAT (1)" },
        { 13, "Gemm", "x,w", "alpha", 0, 2,
          "attribute 'alpha' of Gemm-13 at opset 13 must be a FLOAT, got an INT (2)" },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        for (int right = 0; right < 2; right++) {
            Onnx__GraphProto *g = graph_new("attrs");
            int64_t dx[2] = { 2, 3 }, db[1] = { 3 }, dw[2] = { 3, 3 };
            float ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
            graph_input(g, vi_new("x", 1, 2, dx, NULL));
            graph_init(g, tensor_floats("b", 1, db, ones, 3));
            graph_init(g, tensor_floats("w", 2, dw, ones, 9));
            Onnx__NodeProto *n = node_new(cases[i].op, "the_node", cases[i].ins, "y");
            if (strcmp(cases[i].op, "Add") == 0 || strcmp(cases[i].op, "Mul") == 0) {
                if (strcmp(cases[i].attr, "broadcast") != 0) node_attr(n, attr_i("broadcast", 1));
                else node_attr(n, attr_i("axis", 1));
            }
            bool as_float = cases[i].as_float ? !right : right;
            node_attr(n, as_float ? attr_f(cases[i].attr, (float)(right ? 1.0 : cases[i].v))
                                  : attr_i(cases[i].attr, right ? 1 : (int64_t)cases[i].v));
            graph_node(g, n);
            graph_output(g, vi_new("y", 1, -1, NULL, NULL));
            rlx_model *m = NULL;
            const char *path;
            char what[96];
            snprintf(what, sizeof what, "%s-%lld %s", cases[i].op, (long long)cases[i].opset, cases[i].attr);
            rlx_status st = load_built(model_new(cases[i].opset, g), "attrs.onnx", &m, &path);
            if (right) {
                CHECK_MSG(st == RLX_OK, "%s of the right type: %s", what, rlx_last_error());
            } else {
                CHECK_MSG(st == RLX_ERR_INVALID_MODEL, "%s: status %d: %s", what, (int)st, rlx_last_error());
                CHECK_ERROR_HAS("node 'the_node'", cases[i].op, cases[i].want);
            }
            rlx_model_destroy(m);
        }
    }
    /* a string attribute holding a NUL byte: rlx's strings end there, so
     * "tanh\0junk" was taken as "tanh" (onnxruntime refuses it) */
    for (int strings = 0; strings < 2; strings++) {
        Onnx__GraphProto *g = graph_new("nul_attr");
        int64_t dx[2] = { 1, 3 };
        graph_input(g, vi_new("x", strings ? 8 : 1, 2, dx, NULL));
        Onnx__NodeProto *n = node_new(strings ? "StringNormalizer" : "Gelu", "the_node", "x", "y");
        Onnx__AttributeProto *a = attr_s(strings ? "stopwords" : "approximate", "tanhXjunk");
        a->s.data[4] = 0;
        if (strings) { /* the one value as a STRINGS list */
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
            a->has_s = 0;
            a->n_strings = 1;
            a->strings = xcalloc(1, sizeof *a->strings);
            a->strings[0] = a->s;
            a->s = (ProtobufCBinaryData){ 0, NULL };
        }
        node_attr(n, a);
        graph_node(g, n);
        graph_output(g, vi_new("y", strings ? 8 : 1, -1, NULL, NULL));
        rlx_model *m = NULL;
        const char *path;
        CHECK_FAILS(load_built(model_new(20, g), "nul_attr.onnx", &m, &path), RLX_ERR_UNSUPPORTED,
                    "a string holds a NUL byte");
        CHECK_ERROR_HAS("node 'the_node'", strings ? "'stopwords'" : "'approximate'", NULL);
        rlx_model_destroy(m);
    }
}

/* Constant's value attributes each have one type: a value_int given as a
 * FLOAT once read as 0, a value_ints given as a FLOAT as an empty list. */
static void test_constant_attr_types(void) {
    static const int64_t two_ints[2] = { 3, 4 };
    static const float two_floats[2] = { 1.5f, 2.5f };
    static const struct {
        const char *attr, *want;
        int given; /* 0 INT, 1 FLOAT, 2 INTS, 3 FLOATS, 4 STRING */
        int right;
    } cases[] = {
        { "value_int", "attribute 'value_int' is FLOAT, expected INT", 1, 0 },
        { "value_int", "attribute 'value_int' is INTS, expected INT", 2, 0 },
        { "value_float", "attribute 'value_float' is INTS, expected FLOAT", 2, 1 },
        { "value_ints", "attribute 'value_ints' is FLOAT, expected INTS", 1, 2 },
        { "value_floats", "attribute 'value_floats' is INTS, expected FLOATS", 2, 3 },
        { "value_string", "attribute 'value_string' is INT, expected STRING", 0, 4 },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN(cases); i++) {
        for (int right = 0; right < 2; right++) {
            int kind = right ? cases[i].right : cases[i].given;
            const char *an = cases[i].attr;
            Onnx__AttributeProto *a = kind == 0   ? attr_i(an, 2)
                                      : kind == 1 ? attr_f(an, 2.5f)
                                      : kind == 2 ? attr_is(an, 2, two_ints)
                                      : kind == 3 ? attr_fs(an, 2, two_floats)
                                                  : attr_s(an, "abc");
            Onnx__GraphProto *g = graph_new("konst");
            Onnx__NodeProto *n = node_new("Constant", "the_const", NULL, "y");
            node_attr(n, a);
            graph_node(g, n);
            graph_output(g, vi_new("y", 1, -1, NULL, NULL));
            rlx_model *m = NULL;
            const char *path;
            rlx_status st = load_built(model_new(13, g), "konst.onnx", &m, &path);
            if (right) {
                CHECK_MSG(st == RLX_OK, "Constant %s of the right type: %s", an, rlx_last_error());
            } else {
                CHECK_MSG(st == RLX_ERR_INVALID_MODEL, "Constant %s: status %d: %s", an, (int)st, rlx_last_error());
                CHECK_ERROR_HAS("node 'the_const'", "Constant", cases[i].want);
            }
            rlx_model_destroy(m);
        }
    }
}

static void test_bad_files(void) {
    rlx_model *m = (rlx_model *)&m; /* must be cleared */
    CHECK_FAILS(rlx_model_load_onnx("/nonexistent/rlx/model.onnx", &m), RLX_ERR_IO, "/nonexistent/rlx/model.onnx");
    CHECK(m == NULL);
    /* a directory is not a model */
    CHECK_FAILS(rlx_model_load_onnx(g_dir, &m), RLX_ERR_IO, "not a regular file");
    CHECK(m == NULL);

    size_t size;
    uint8_t *buf = model_pack_free(relu_model(13, NULL), &size);
    const char *path = write_file("half.onnx", buf, size / 2);
    CHECK_FAILS(rlx_model_load_onnx(path, &m), RLX_ERR_INVALID_MODEL, "is not a valid ONNX model: protobuf parse failed");
    CHECK_ERROR_HAS(path, NULL, NULL);
    CHECK(m == NULL);
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size / 2, NULL, &m), RLX_ERR_INVALID_MODEL, "protobuf parse failed");
    /* the whole model loads from memory */
    CHECK_OK(rlx_model_load_onnx_memory(buf, size, NULL, &m));
    rlx_model_destroy(m);
    free(buf);

    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0xff;
    path = write_file("junk.onnx", junk, sizeof junk);
    CHECK_FAILS(rlx_model_load_onnx(path, &m), RLX_ERR_INVALID_MODEL, "protobuf parse failed");
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)test_rand_u64();
    junk[0] = 0x3a; /* field 7 (graph), length-delimited */
    junk[1] = 0x7f; /* claims 127 bytes, 62 follow */
    CHECK_FAILS(rlx_model_load_onnx_memory(junk, sizeof junk, NULL, &m), RLX_ERR_INVALID_MODEL, "protobuf parse failed");
    /* empty input: would parse as an empty ModelProto; said as it is */
    CHECK_FAILS(rlx_model_load_onnx_memory(NULL, 0, NULL, &m), RLX_ERR_INVALID_MODEL, "<memory> is empty (0 bytes)");
    CHECK_FAILS(rlx_model_load_onnx_memory(NULL, 5, NULL, &m), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK(rlx_model_load_onnx(NULL, &m) == RLX_ERR_INVALID_ARGUMENT);
    CHECK(rlx_model_load_onnx(path, NULL) == RLX_ERR_INVALID_ARGUMENT);

    /* a model given as a tensor file, and a tensor given as a model, are
     * said to be the other kind of file (the bytes of a model fail in the
     * TensorProto walk (k 0, 1), its conversion (2, 3) or its parse (4),
     * depending on the model) */
    for (int k = 0; k < 5; k++) {
        Onnx__ModelProto *mp = relu_model(13, NULL);
        if (k >= 1) { /* no producer_name: the TensorProto parse gets further */
            free(mp->producer_name);
            mp->producer_name = NULL;
        }
        if (k >= 2) { /* opset domain "ai.onnx": no NUL byte in the walk */
            free(mp->opset_import[0]->domain);
            mp->opset_import[0]->domain = S("ai.onnx");
        }
        if (k == 3) mp->has_ir_version = 0;
        if (k == 4) mp->producer_version = S("1.0"); /* field 3, a TensorProto's segment: the parse fails */
        buf = model_pack_free(mp, &size);
        path = write_file("model_as_tensor.onnx", buf, size);
        free(buf);
        rlx_tensor *t = (rlx_tensor *)&t;
        CHECK_FAILS(rlx_onnx_load_tensor_file(path, &t), RLX_ERR_INVALID_MODEL,
                    "is an ONNX model (a ModelProto with a graph), not a TensorProto");
        CHECK_ERROR_HAS(path, "rlx_model_load_onnx", NULL);
        CHECK(t == NULL);
        CHECK_FAILS(rlx_tensor_load_onnx(path, &t), RLX_ERR_INVALID_MODEL, "not a TensorProto");
    }
    Onnx__TensorProto *tp = tensor_floats("x", 1, (int64_t[]){ 3 }, (float[]){ 1, 2, 3 }, 3);
    size = onnx__tensor_proto__get_packed_size(tp);
    buf = xcalloc(size, 1);
    onnx__tensor_proto__pack(tp, buf);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    path = write_file("input_0.pb", buf, size);
    CHECK_FAILS(rlx_model_load_onnx(path, &m), RLX_ERR_INVALID_MODEL, "is not an ONNX model: it holds one serialized "
                "tensor (a TensorProto");
    CHECK_ERROR_HAS(path, "rlx_tensor_load_onnx", NULL);
    CHECK(m == NULL);
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, NULL, &m), RLX_ERR_INVALID_MODEL, "<memory> is not an ONNX model");
    free(buf);
}

/* A model whose graph has one initializer tp (plus y = Relu(x)). */
static rlx_status load_with_init(Onnx__TensorProto *tp, rlx_model **m, const char **path) {
    Onnx__GraphProto *g;
    Onnx__ModelProto *mp = relu_model(13, &g);
    graph_init(g, tp);
    return load_built(mp, "init.onnx", m, path);
}

static void test_bad_initializers(void) {
    rlx_model *m = NULL;
    const char *path;
    /* dims whose product overflows */
    int64_t huge[3] = { (int64_t)1 << 32, (int64_t)1 << 32, (int64_t)1 << 32 };
    CHECK_FAILS(load_with_init(tensor_raw("big", 1, 3, huge, NULL, 0), &m, &path), RLX_ERR_INVALID_MODEL, "overflows");
    CHECK_ERROR_HAS("'big'", path, NULL);
    int64_t bytes_ovf[1] = { INT64_MAX / 4 }; /* fits size_t as a count, not as bytes */
    CHECK_FAILS(load_with_init(tensor_raw("big8", 11, 1, bytes_ovf, NULL, 0), &m, &path), RLX_ERR_INVALID_MODEL,
                "'big8'");
    /* negative dims */
    int64_t neg[2] = { -2, 3 };
    CHECK_FAILS(load_with_init(tensor_raw("neg", 1, 2, neg, NULL, 0), &m, &path), RLX_ERR_INVALID_MODEL, "negative");
    CHECK_ERROR_HAS("'neg'", NULL, NULL);
    /* data shorter than the shape: raw_data and typed field; typed longer */
    int64_t d4[1] = { 4 };
    float v[5] = { 1, 2, 3, 4, 5 };
    CHECK_FAILS(load_with_init(tensor_raw("short_raw", 1, 1, d4, v, 12), &m, &path), RLX_ERR_INVALID_MODEL, "short_raw");
    CHECK_ERROR_HAS("raw_data", "16", NULL);
    CHECK_FAILS(load_with_init(tensor_raw("long_raw", 1, 1, d4, v, 20), &m, &path), RLX_ERR_INVALID_MODEL, "long_raw");
    CHECK_FAILS(load_with_init(tensor_floats("short_typed", 1, d4, v, 3), &m, &path), RLX_ERR_INVALID_MODEL,
                "short_typed");
    CHECK_ERROR_HAS("float_data", "shorter", NULL);
    CHECK_FAILS(load_with_init(tensor_floats("long_typed", 1, d4, v, 5), &m, &path), RLX_ERR_INVALID_MODEL,
                "long_typed");
    /* no data at all for a non-empty shape */
    CHECK_FAILS(load_with_init(tensor_new("nodata", 7, 1, d4), &m, &path), RLX_ERR_INVALID_MODEL, "nodata");
    /* unsupported dtypes, named */
    const int bad_types[5] = { 15, 17, 26, 14, 23 };
    const char *bad_names[5] = { "complex128", "float8e4m3fn", "int2", "complex64", "float4e2m1" };
    for (int i = 0; i < 5; i++) {
        CHECK_FAILS(load_with_init(tensor_raw("odd", bad_types[i], 1, d4, v, 4), &m, &path), RLX_ERR_UNSUPPORTED,
                    bad_names[i]);
        CHECK_ERROR_HAS("'odd'", path, NULL);
    }
    /* int4 and uint4 initializers load (two values a byte; an unused one is
     * harmless), their packed size checked */
    for (int t = 21; t <= 22; t++) {
        CHECK_OK(load_with_init(tensor_raw("w4", t, 1, d4, v, 2), &m, &path));
        rlx_model_destroy(m);
        m = NULL;
        CHECK_FAILS(load_with_init(tensor_raw("w4", t, 1, d4, v, 4), &m, &path), RLX_ERR_INVALID_MODEL, "'w4'");
        CHECK_ERROR_HAS("needs 2 bytes of raw_data, but has 4", t == 22 ? "int4" : "uint4", NULL);
    }
    /* rank above the maximum */
    int64_t d9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    CHECK_FAILS(load_with_init(tensor_raw("r9", 1, 9, d9, v, 4), &m, &path), RLX_ERR_UNSUPPORTED, "rank 9");
    /* initializers without a name, twice the same name */
    CHECK_FAILS(load_with_init(tensor_raw("", 1, 1, d4, v, 16), &m, &path), RLX_ERR_INVALID_MODEL, "no name");
    Onnx__GraphProto *g;
    Onnx__ModelProto *mp = relu_model(13, &g);
    graph_init(g, tensor_raw("w", 1, 1, d4, v, 16));
    graph_init(g, tensor_raw("w", 1, 1, d4, v, 16));
    CHECK_FAILS(load_built(mp, "dup.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "defined twice");
    /* sparse initializers */
    mp = relu_model(13, &g);
    Onnx__SparseTensorProto *sp = xcalloc(1, sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    sp->values = tensor_raw("sp", 1, 1, d4, v, 16);
    PUSH(g->sparse_initializer, g->n_sparse_initializer, sp);
    CHECK_FAILS(load_built(mp, "sparse.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "sparse initializer 'sp'");
    CHECK(m == NULL);
}

static void test_bad_values(void) {
    rlx_model *m = NULL;
    const char *path;
    int64_t d[1] = { 4 };
    /* unsupported element types on graph inputs and outputs */
    Onnx__GraphProto *g = graph_new("g");
    graph_input(g, vi_new("x", 1, 1, d, NULL));
    graph_input(g, vi_new("names", 14, 1, d, NULL));
    graph_node(g, node_new("Relu", "r", "x", "y"));
    graph_output(g, vi_new("y", 1, 1, d, NULL));
    CHECK_FAILS(load_built(model_new(13, g), "strin.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "graph input 'names'");
    CHECK_ERROR_HAS("complex64", path, NULL);
    g = graph_new("g");
    graph_input(g, vi_new("x", 1, 1, d, NULL));
    graph_node(g, node_new("Relu", "r", "x", "y"));
    graph_output(g, vi_new("y", 19, 1, d, NULL));
    CHECK_FAILS(load_built(model_new(13, g), "f8out.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "graph output 'y'");
    CHECK_ERROR_HAS("float8e5m2", NULL, NULL);
    /* a graph input without a type */
    g = graph_new("g");
    graph_input(g, vi_new("x", -1, 0, NULL, NULL));
    graph_node(g, node_new("Relu", "r", "x", "y"));
    graph_output(g, vi_new("y", 1, 1, d, NULL));
    CHECK_FAILS(load_built(model_new(13, g), "notype.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "graph input 'x'");
    /* a node output that redefines an input; an undefined graph output; an undefined node input */
    g = graph_new("g");
    graph_input(g, vi_new("x", 1, 1, d, NULL));
    graph_node(g, node_new("Relu", "clash", "x", "x"));
    graph_output(g, vi_new("x", 1, 1, d, NULL));
    CHECK_FAILS(load_built(model_new(13, g), "redef.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "clash");
    CHECK_ERROR_HAS("already defined", NULL, NULL);
    Onnx__ModelProto *mp = relu_model(13, &g);
    graph_output(g, vi_new("ghost", 1, 1, d, NULL));
    CHECK_FAILS(load_built(mp, "ghost.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "ghost");
    mp = relu_model(13, &g);
    graph_node(g, node_new("Relu", "lost", "nowhere", "q"));
    CHECK_FAILS(load_built(mp, "undef.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "nowhere");
    CHECK_ERROR_HAS("lost", NULL, NULL);
    /* a cycle */
    mp = relu_model(13, &g);
    graph_node(g, node_new("Add", "c1", "x,b", "a"));
    graph_node(g, node_new("Relu", "c2", "a", "b"));
    CHECK_FAILS(load_built(mp, "cycle.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "cycle");
    /* omitted optional inputs ("") pass through as -1: Clip-13 with no min */
    mp = relu_model(13, &g);
    float hi = 0.5f;
    graph_init(g, tensor_floats("hi", 0, NULL, &hi, 1));
    graph_node(g, node_new("Clip", "clip", "y,,hi", "z"));
    int64_t d23[2] = { 2, 3 };
    graph_output(g, vi_new("z", 1, 2, d23, NULL));
    CHECK_OK(load_built(mp, "optional.onnx", &m, NULL));
    if (m) {
        const rlx_node *n = &m->g->nodes[1];
        CHECK(strcmp(n->op_type, "Clip") == 0 && n->n_in == 3 && n->in[1] == -1 && n->in[2] >= 0);
    }
    rlx_model_destroy(m);
    m = NULL;
    /* attribute kinds rlx does not hold */
    mp = relu_model(13, &g);
    Onnx__NodeProto *n = node_new("Relu", "gr", "x", "q");
    node_attr(n, attr_new("bodies", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS));
    graph_node(g, n);
    CHECK_FAILS(load_built(mp, "graphs.onnx", &m, &path), RLX_ERR_UNSUPPORTED, "GRAPHS");
    CHECK_ERROR_HAS("bodies", "'gr'", NULL);
    /* the same attribute twice */
    mp = relu_model(13, &g);
    n = node_new("LeakyRelu", "lr", "x", "q");
    node_attr(n, attr_f("alpha", 0.1f));
    node_attr(n, attr_f("alpha", 0.2f));
    graph_node(g, n);
    CHECK_FAILS(load_built(mp, "dupattr.onnx", &m, &path), RLX_ERR_INVALID_MODEL, "alpha");
}

/* ================================================================ external data */

static void test_external_data(void) {
    float w[6];
    for (int i = 0; i < 6; i++) w[i] = test_rand_uniform(-3, 3);
    uint8_t blob[64 + sizeof w];
    for (size_t i = 0; i < 64; i++) blob[i] = (uint8_t)test_rand_u64();
    memcpy(blob + 64, w, sizeof w);
    write_file("weights.bin", blob, sizeof blob);
    char *sub = path_in_dir("sub");
    mkdir(sub, 0700);
    char *subfile = path_in_dir("sub/w2.bin");
    FILE *f = fopen(subfile, "wb");
    if (f) {
        fwrite(w, 1, sizeof w, f);
        fclose(f);
    }
    remember(subfile);
    int64_t d[2] = { 2, 3 };
    rlx_model *m = NULL;
    const char *path;

    /* offset and length; a relative path into a subfolder without length */
    Onnx__TensorProto *tp = tensor_new("w", 1, 2, d);
    tensor_external(tp, "weights.bin", "64", "24");
    CHECK_OK(load_with_init(tp, &m, &path));
    if (m) {
        int id = rlx_graph_find(m->g, "w");
        CHECK(id >= 0 && m->g->values[id].konst && memcmp(m->g->values[id].konst->data, w, sizeof w) == 0);
    }
    rlx_model_destroy(m);
    tp = tensor_new("w", 1, 2, d);
    tensor_external(tp, "./sub/w2.bin", NULL, NULL);
    CHECK_OK(load_with_init(tp, &m, &path));
    if (m) {
        int id = rlx_graph_find(m->g, "w");
        CHECK(id >= 0 && m->g->values[id].konst && memcmp(m->g->values[id].konst->data, w, sizeof w) == 0);
    }
    rlx_model_destroy(m);

    /* from memory: needs a base_dir */
    tp = tensor_new("w", 1, 2, d);
    tensor_external(tp, "weights.bin", "64", NULL);
    Onnx__GraphProto *g;
    Onnx__ModelProto *mp = relu_model(13, &g);
    graph_init(g, tp);
    size_t size;
    uint8_t *buf = model_pack_free(mp, &size);
    m = NULL;
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, NULL, &m), RLX_ERR_INVALID_ARGUMENT, "external");
    CHECK_ERROR_HAS("'w'", "<memory>", NULL);
    CHECK(m == NULL);
    CHECK_OK(rlx_model_load_onnx_memory(buf, size, g_dir, &m));
    rlx_model_destroy(m);
    /* base_dir "" is the current folder (it looked for "/weights.bin") */
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) && chdir(g_dir) == 0) {
        m = NULL;
        CHECK_OK(rlx_model_load_onnx_memory(buf, size, "", &m));
        if (m) {
            int id = rlx_graph_find(m->g, "w");
            CHECK(id >= 0 && m->g->values[id].konst && memcmp(m->g->values[id].konst->data, w, sizeof w) == 0);
        }
        rlx_model_destroy(m);
        CHECK(chdir(cwd) == 0);
    }
    free(buf);

    /* a NUL byte inside the location: protobuf-c keeps the string up to it,
     * which read weights.bin; refused, naming the tensor */
    tp = tensor_new("wn", 1, 2, d);
    tensor_external(tp, "weights.bin\x01../../x", "64", NULL);
    mp = relu_model(13, &g);
    graph_init(g, tp);
    buf = model_pack_free(mp, &size);
    for (size_t i = 0; buf && i < size; i++)
        if (buf[i] == 1 && i > 0 && buf[i - 1] == 'n') buf[i] = 0;
    m = NULL;
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, g_dir, &m), RLX_ERR_INVALID_MODEL, "holds a NUL byte");
    CHECK_ERROR_HAS("TensorProto 'wn'", "'value'", "'weights.bin'");
    CHECK(m == NULL);
    free(buf);

    /* refused locations, bad numbers, short or missing files */
    struct {
        const char *loc, *off, *len;
        rlx_status st;
        const char *msg;
    } bad[] = {
        { "../weights.bin", NULL, NULL, RLX_ERR_INVALID_MODEL, "refused" },
        { "sub/../../x.bin", NULL, NULL, RLX_ERR_INVALID_MODEL, "refused" },
        { "/etc/passwd", NULL, NULL, RLX_ERR_INVALID_MODEL, "refused" },
        { "", NULL, NULL, RLX_ERR_INVALID_MODEL, "location" },
        { "weights.bin", "64", "20", RLX_ERR_INVALID_MODEL, "length" },
        { "weights.bin", "-4", NULL, RLX_ERR_INVALID_MODEL, "offset" },
        { "weights.bin", "12abc", NULL, RLX_ERR_INVALID_MODEL, "offset" },
        { "weights.bin", "99999999999999999999999", NULL, RLX_ERR_INVALID_MODEL, "offset" },
        { "weights.bin", "70", NULL, RLX_ERR_INVALID_MODEL, "too short" },
        { "weights.bin", "18446744073709551615", NULL, RLX_ERR_INVALID_MODEL, "too short" },
        { "missing.bin", NULL, NULL, RLX_ERR_IO, "missing.bin" },
        { "sub", NULL, NULL, RLX_ERR_IO, "not a regular file" },
    };
    for (size_t i = 0; i < RLX_ARRAY_LEN_T(bad); i++) {
        tp = tensor_new("wx", 1, 2, d);
        tensor_external(tp, bad[i].loc, bad[i].off, bad[i].len);
        CHECK_FAILS(load_with_init(tp, &m, &path), bad[i].st, bad[i].msg);
        CHECK_ERROR_HAS("'wx'", path, NULL);
        CHECK(m == NULL);
    }
    free(sub);
}

/* ================================================================ subgraphs */

/* Finds the attribute `name` of the first node named `node` in g. */
static const rlx_node_attr *find_attr(const rlx_graph *g, const char *node, const char *name) {
    for (size_t i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, node) == 0) return rlx_node_attr_find(&g->nodes[i], name);
    return NULL;
}

/* Subgraph bodies see outer names: the import of an If's branch (and of
 * an If inside it) is what is tested here. (The bodies rode on a Relu
 * before attributes unknown to an op's version were refused.) */
static void test_subgraph_outer(void) {
    int64_t dx[2] = { DIM_UNSET, 3 }, d3[1] = { 3 };
    const char *px[2] = { "batch", NULL };
    float k[3] = { 1, 2, 3 };
    /* inner: uses 'x' (two scopes out) and 'kb' (one scope out) */
    Onnx__GraphProto *inner = graph_new("inner");
    graph_node(inner, node_new("Add", "in_add", "x,kb", "iy"));
    graph_output(inner, vi_new("iy", 1, -1, NULL, NULL));
    /* body: uses 'x' and 'late' (defined by a later outer node), own 'kb' */
    Onnx__GraphProto *body = graph_new("body");
    graph_init(body, tensor_raw("kb", 1, 1, d3, k, sizeof k));
    graph_node(body, node_new("Add", "b_add", "x,kb", "t"));
    Onnx__GraphProto *inner_else = graph_new("inner_else");
    graph_node(inner_else, node_new("Identity", "ie_id", "kb", "ie"));
    graph_output(inner_else, vi_new("ie", 1, -1, NULL, NULL));
    graph_node(body, node_new("Mul", "b_mul", "t,late", "by"));
    Onnx__NodeProto *bn = node_new("If", "b_if", "c", "iy_out");
    node_attr(bn, attr_g("then_branch", inner));
    node_attr(bn, attr_g("else_branch", inner_else));
    graph_node(body, bn);
    graph_output(body, vi_new("by", 1, -1, NULL, NULL));
    graph_output(body, vi_new("x", -1, 0, NULL, NULL)); /* a body output that is an outer value */
    Onnx__GraphProto *ebody = graph_new("else_body");
    graph_node(ebody, node_new("Identity", "e_id1", "x", "e1"));
    graph_node(ebody, node_new("Identity", "e_id2", "x", "e2"));
    graph_output(ebody, vi_new("e1", 1, -1, NULL, NULL));
    graph_output(ebody, vi_new("e2", 1, -1, NULL, NULL));

    Onnx__GraphProto *g = graph_new("main");
    graph_input(g, vi_new("x", 1, 2, dx, px));
    graph_input(g, vi_new("c", 9, 0, NULL, NULL));
    Onnx__NodeProto *carrier = node_new("If", "carrier", "c", "y,y2");
    node_attr(carrier, attr_g("then_branch", body));
    node_attr(carrier, attr_g("else_branch", ebody));
    graph_node(g, carrier);
    graph_node(g, node_new("Relu", "later", "x", "late"));
    graph_output(g, vi_new("y", 1, 2, dx, px));
    rlx_model *m = NULL;
    CHECK_OK(load_built(model_new(13, g), "subgraph.onnx", &m, NULL));
    if (!m) return;
    const rlx_node_attr *a = find_attr(m->g, "carrier", "then_branch");
    CHECK(a && a->type == RLX_ATTR_GRAPH && a->g);
    if (!a || !a->g) goto done;
    const rlx_graph *b = a->g;
    CHECK(b->parent == m->g);
    int bx = rlx_graph_find(b, "x"), bl = rlx_graph_find(b, "late"), bk = rlx_graph_find(b, "kb");
    CHECK(bx >= 0 && (b->values[bx].flags & RLX_VALUE_OUTER));
    if (bx >= 0) {
        const rlx_value *v = &b->values[bx];
        CHECK(v->dtype == RLX_DTYPE_F32 && v->rank == 2 && v->dims[0] == RLX_DIM_DYN && v->dims[1] == 3);
        CHECK(v->syms[0] >= 0 && (size_t)v->syms[0] < b->n_syms && strcmp(b->syms[v->syms[0]], "batch") == 0);
    }
    CHECK(bl >= 0 && (b->values[bl].flags & RLX_VALUE_OUTER));
    CHECK(bk >= 0 && !(b->values[bk].flags & RLX_VALUE_OUTER) && b->values[bk].konst);
    CHECK(b->n_outputs == 2 && b->n_outputs == 2 && b->outputs[1] == bx);
    const rlx_node_attr *ia = find_attr(b, "b_if", "then_branch");
    CHECK(ia && ia->g && ia->g->parent == b);
    if (ia && ia->g) {
        const rlx_graph *in = ia->g;
        int ix = rlx_graph_find(in, "x"), ik = rlx_graph_find(in, "kb");
        CHECK(ix >= 0 && (in->values[ix].flags & RLX_VALUE_OUTER) && in->values[ix].dtype == RLX_DTYPE_F32 &&
              in->values[ix].rank == 2);
        CHECK(ik >= 0 && (in->values[ik].flags & RLX_VALUE_OUTER) && in->values[ik].rank == 1 &&
              in->values[ik].dims[0] == 3 && !in->values[ik].konst);
    }
    /* a session copies the model with its subgraphs */
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    rlx_session_destroy(s);
done:
    rlx_model_destroy(m);

    /* a name no scope defines */
    Onnx__GraphProto *lost = graph_new("lost_body");
    graph_node(lost, node_new("Relu", "b_relu", "phantom", "z"));
    graph_output(lost, vi_new("z", 1, -1, NULL, NULL));
    Onnx__ModelProto *mp = relu_model(13, &g);
    Onnx__NodeProto *n = node_new("Relu", "carrier2", "x", "q");
    node_attr(n, attr_g("body", lost));
    graph_node(g, n);
    CHECK_FAILS(load_built(mp, "lost.onnx", &m, NULL), RLX_ERR_INVALID_MODEL, "phantom");
    CHECK_ERROR_HAS("carrier2", "b_relu", "not defined");

    /* the internal entry point: a body imported under a given parent */
    rlx_graph *parent = NULL, *sub = NULL;
    CHECK_OK(rlx_graph_create(13, &parent));
    int pid = -1;
    if (parent) CHECK_OK(rlx_graph_add_value(parent, "outer_v", &pid));
    if (pid >= 0) {
        int64_t pd[3] = { 2, RLX_DIM_DYN, 4 };
        int32_t ps[3] = { -1, rlx_graph_sym(parent, "seq"), -1 };
        parent->values[pid].dtype = RLX_DTYPE_F16;
        rlx_value_set_shape(&parent->values[pid], 3, pd, ps);
        Onnx__GraphProto *gp = graph_new("direct");
        graph_input(gp, vi_new("iter", 7, 0, NULL, NULL));
        graph_input(gp, vi_new("untyped", -1, 0, NULL, NULL)); /* allowed in a body */
        graph_node(gp, node_new("Relu", "r", "outer_v", "o"));
        graph_output(gp, vi_new("o", -1, 0, NULL, NULL));
        CHECK_OK(rlx_onnx_graph_from_proto(gp, 13, NULL, parent, &sub));
        if (sub) {
            int v = rlx_graph_find(sub, "outer_v");
            CHECK(sub->parent == parent && sub->n_inputs == 2 && sub->n_nodes == 1);
            CHECK(v >= 0 && (sub->values[v].flags & RLX_VALUE_OUTER) && sub->values[v].dtype == RLX_DTYPE_F16);
            CHECK(v >= 0 && sub->values[v].rank == 3 && sub->values[v].dims[1] == RLX_DIM_DYN &&
                  sub->values[v].syms[1] >= 0 && strcmp(sub->syms[sub->values[v].syms[1]], "seq") == 0);
        }
        rlx_graph_destroy(sub);
        /* without a parent the same body has an undefined input (and an
         * untyped graph input, which only bodies may have: drop it) */
        onnx__value_info_proto__free_unpacked(gp->input[1], NULL);
        gp->n_input = 1;
        CHECK_FAILS(rlx_onnx_graph_from_proto(gp, 13, NULL, NULL, &sub), RLX_ERR_INVALID_MODEL, "outer_v");
        onnx__graph_proto__free_unpacked(gp, NULL);
    }
    rlx_graph_destroy(parent);

    /* the real thing: If with branches that read an outer value. Until the
     * control-flow ops land, If is refused by name; then it must load. */
    Onnx__GraphProto *then_b = graph_new("then"), *else_b = graph_new("else");
    graph_node(then_b, node_new("Relu", "t_relu", "x", "ty"));
    graph_output(then_b, vi_new("ty", 1, 2, dx, px));
    graph_node(else_b, node_new("Neg", "e_neg", "x", "ey"));
    graph_output(else_b, vi_new("ey", 1, 2, dx, px));
    g = graph_new("if_main");
    graph_input(g, vi_new("x", 1, 2, dx, px));
    graph_input(g, vi_new("cond", 9, 0, NULL, NULL));
    Onnx__NodeProto *ifn = node_new("If", "if1", "cond", "r");
    node_attr(ifn, attr_g("then_branch", then_b));
    node_attr(ifn, attr_g("else_branch", else_b));
    graph_node(g, ifn);
    graph_output(g, vi_new("r", 1, 2, dx, px));
    rlx_status st = load_built(model_new(13, g), "if.onnx", &m, NULL);
    if (st == RLX_OK) {
        const rlx_node_attr *tb = find_attr(m->g, "if1", "then_branch");
        CHECK(tb && tb->g && tb->g->parent == m->g);
        if (tb && tb->g) {
            int tx = rlx_graph_find(tb->g, "x");
            CHECK(tx >= 0 && (tb->g->values[tx].flags & RLX_VALUE_OUTER));
        }
        rlx_model_destroy(m);
    } else {
        CHECK_MSG(st == RLX_ERR_UNSUPPORTED && strstr(rlx_last_error(), "If") && strstr(rlx_last_error(), "if1"),
                  "%s: %s", rlx_status_name(st), rlx_last_error());
        fprintf(stderr, "note: If is not in the op table yet (%s)\n", rlx_last_error());
    }
}

/* ================================================================ robustness */

/* Bytes of a model of subgraphs nested `depth` deep, written back to front:
 * ModelProto.graph(7) > GraphProto.node(1) > NodeProto.attribute(5) >
 * AttributeProto.g(6) > GraphProto.node(1) > ... */
static uint8_t *deep_model(int depth, size_t *size) {
    size_t cap = (size_t)depth * 3 * 12 + 64, pos = cap, len = 0;
    uint8_t *buf = xcalloc(cap, 1);
#define PREPEND_FIELD(fieldno)                                      \
    do {                                                            \
        uint8_t v_[10];                                             \
        int nv_ = 0;                                                \
        size_t l_ = len;                                            \
        do {                                                        \
            v_[nv_++] = (uint8_t)((l_ & 0x7f) | (l_ > 0x7f ? 0x80 : 0)); \
            l_ >>= 7;                                               \
        } while (l_);                                               \
        pos -= (size_t)nv_;                                         \
        memcpy(buf + pos, v_, (size_t)nv_);                         \
        buf[--pos] = (uint8_t)((fieldno) << 3 | 2);                 \
        len = cap - pos;                                            \
    } while (0)
    for (int i = 0; i < depth; i++) {
        PREPEND_FIELD(6); /* AttributeProto.g */
        PREPEND_FIELD(5); /* NodeProto.attribute */
        PREPEND_FIELD(1); /* GraphProto.node */
    }
    PREPEND_FIELD(7); /* ModelProto.graph */
#undef PREPEND_FIELD
    uint8_t *out = xcalloc(len, 1);
    memcpy(out, buf + pos, len);
    free(buf);
    *size = len;
    return out;
}

static void test_deep_nesting(void) {
    size_t size;
    rlx_model *m = NULL;
    uint8_t *buf = deep_model(100000, &size);
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, NULL, &m), RLX_ERR_INVALID_MODEL, "nest deeper");
    CHECK(m == NULL);
    free(buf);
    buf = deep_model(10, &size); /* shallow: parses, then fails for lack of an opset */
    CHECK_FAILS(rlx_model_load_onnx_memory(buf, size, NULL, &m), RLX_ERR_INVALID_MODEL, "opset");
    free(buf);
}

/* A small model with most features, for the mutation test. */
static uint8_t *rich_model(size_t *size) {
    int64_t dx[2] = { DIM_UNSET, 3 }, d3[1] = { 3 };
    const char *px[2] = { "n", NULL };
    float b[3] = { 0.5f, -1.0f, 2.0f };
    Onnx__GraphProto *body = graph_new("body");
    graph_node(body, node_new("Add", "b_add", "x,b", "t"));
    graph_output(body, vi_new("t", 1, -1, NULL, NULL));
    Onnx__GraphProto *ebody = graph_new("else_body");
    graph_node(ebody, node_new("Sub", "e_sub", "x,b", "t2"));
    graph_output(ebody, vi_new("t2", 1, -1, NULL, NULL));
    Onnx__GraphProto *g = graph_new("rich");
    graph_input(g, vi_new("x", 1, 2, dx, px));
    graph_input(g, vi_new("cond", 9, 0, NULL, NULL));
    graph_init(g, tensor_raw("b", 1, 1, d3, b, sizeof b));
    Onnx__NodeProto *k = node_new("Constant", "k", NULL, "c");
    node_attr(k, attr_t("value", tensor_floats("c", 1, d3, b, 3)));
    graph_node(g, k);
    Onnx__NodeProto *r = node_new("If", "r", "cond", "z");
    node_attr(r, attr_g("then_branch", body));
    node_attr(r, attr_g("else_branch", ebody));
    graph_node(g, r);
    graph_node(g, node_new("Add", "a", "x,c", "y"));
    Onnx__NodeProto *cl = node_new("LeakyRelu", "lk", "z", "w");
    node_attr(cl, attr_f("alpha", 0.2f));
    graph_node(g, cl);
    graph_output(g, vi_new("w", 1, 2, dx, px));
    return model_pack_free(model_new(13, g), size);
}

/* Flips, inserts, deletes and overwrites bytes at seeded random positions:
 * every load returns a status (never crashes); failures carry a message. */
static void test_mutations(void) {
    size_t size;
    uint8_t *orig = rich_model(&size);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_load_onnx_memory(orig, size, NULL, &m));
    rlx_model_destroy(m);
    uint8_t *buf = xcalloc(size + 64, 1);
    int counts[RLX_ERR_INTERNAL + 1] = { 0 }, bad_status = 0, no_msg = 0;
    const int iterations = 600;
    for (int it = 0; it < iterations; it++) {
        size_t n = size;
        memcpy(buf, orig, size);
        int edits = 1 + (int)(test_rand_u64() % 4);
        for (int e = 0; e < edits && n > 0; e++) {
            size_t pos = (size_t)(test_rand_u64() % n);
            switch (test_rand_u64() % 5) {
            case 0: buf[pos] ^= (uint8_t)(1u << (test_rand_u64() % 8)); break;
            case 1: buf[pos] = (uint8_t)test_rand_u64(); break;
            case 2: { /* insert up to 8 bytes */
                size_t k = 1 + (size_t)(test_rand_u64() % 8);
                if (n + k > size + 64) break;
                memmove(buf + pos + k, buf + pos, n - pos);
                for (size_t i = 0; i < k; i++) buf[pos + i] = (uint8_t)test_rand_u64();
                n += k;
                break;
            }
            case 3: { /* delete up to 8 bytes */
                size_t k = 1 + (size_t)(test_rand_u64() % 8);
                if (k > n - pos) k = n - pos;
                memmove(buf + pos, buf + pos + k, n - pos - k);
                n -= k;
                break;
            }
            case 4: n = pos; break; /* truncate */
            }
        }
        m = NULL;
        rlx_status st = rlx_model_load_onnx_memory(buf, n, NULL, &m);
        if ((int)st < 0 || st > RLX_ERR_INTERNAL || st == RLX_ERR_INTERNAL) bad_status++;
        else counts[st]++;
        if (st != RLX_OK && (!rlx_last_error()[0] || !strstr(rlx_last_error(), "<memory>"))) no_msg++;
        if (st == RLX_OK) {
            rlx_value_info info;
            for (size_t i = 0; i < rlx_model_num_inputs(m); i++) CHECK_OK(rlx_model_input_info(m, i, &info));
            for (size_t i = 0; i < rlx_model_num_outputs(m); i++) CHECK_OK(rlx_model_output_info(m, i, &info));
        }
        if (st != RLX_OK) CHECK(m == NULL);
        rlx_model_destroy(m);
    }
    CHECK_MSG(bad_status == 0, "%d loads returned RLX_ERR_INTERNAL or an unknown status", bad_status);
    CHECK_MSG(no_msg == 0, "%d failures without a message naming the source", no_msg);
    fprintf(stderr, "mutations: %d loads: ok %d, invalid model %d, unsupported %d, invalid argument %d, io %d\n",
            iterations, counts[RLX_OK], counts[RLX_ERR_INVALID_MODEL], counts[RLX_ERR_UNSUPPORTED],
            counts[RLX_ERR_INVALID_ARGUMENT], counts[RLX_ERR_IO]);
    CHECK(counts[RLX_ERR_INVALID_MODEL] > 0); /* the test mutates enough to break things */
    free(buf);
    free(orig);
}

/* ================================================================ PP-OCRv4 */

/* The PP-OCRv4 text detector (opset 12, 342 Constant nodes). It needs ops
 * added on other branches (Resize, BatchNormalization, GlobalAveragePool,
 * Concat); until they are all there its load fails by naming one of them,
 * which is reported and not counted (RLX_TEST_STRICT_PPOCR=1 counts it). */
static void test_ppocr(void) {
    const char *path = "models/ppocrv4_det.onnx";
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "note: %s not found, skipping\n", path);
        return;
    }
    fclose(f);
    rlx_model *m = NULL;
    rlx_status st = rlx_model_load_onnx(path, &m);
    if (st == RLX_ERR_UNSUPPORTED && !getenv("RLX_TEST_STRICT_PPOCR")) {
        static const char *pending[] = { "Resize", "BatchNormalization", "GlobalAveragePool", "Concat" };
        bool known = false;
        for (size_t i = 0; i < RLX_ARRAY_LEN_T(pending); i++)
            if (strstr(rlx_last_error(), pending[i]) && strstr(rlx_last_error(), "not supported")) known = true;
        CHECK_MSG(known, "unexpected: %s", rlx_last_error());
        fprintf(stderr, "PENDING: %s needs ops from other branches: %s\n", path, rlx_last_error());
        return;
    }
    CHECK_OK(st);
    if (!m) return;
    CHECK(rlx_model_num_inputs(m) == 1 && rlx_model_num_outputs(m) == 1);
    rlx_value_info in, out;
    CHECK_OK(rlx_model_input_info(m, 0, &in));
    CHECK(strcmp(in.name, "x") == 0 && in.dtype == RLX_DTYPE_F32 && in.rank == 4);
    CHECK(in.dims[0] == -1 && in.dims[1] == 3 && in.dims[2] == -1 && in.dims[3] == -1);
    CHECK(in.dim_names[0] && in.dim_names[2] && in.dim_names[3] && !in.dim_names[1]);
    CHECK(in.dim_names[0] && strcmp(in.dim_names[0], "p2o.DynamicDimension.0") == 0);
    CHECK_OK(rlx_model_output_info(m, 0, &out));
    CHECK(strcmp(out.name, "sigmoid_0.tmp_0") == 0 && out.dtype == RLX_DTYPE_F32 && out.rank == 4);
    CHECK(out.dims[1] == 1);
    size_t n_const = 0;
    for (size_t i = 0; i < m->g->n_nodes; i++) CHECK(strcmp(m->g->nodes[i].op_type, "Constant") != 0);
    for (size_t i = 0; i < m->g->n_values; i++) n_const += m->g->values[i].konst != NULL;
    CHECK_MSG(n_const == 342 && m->g->n_nodes == 672 - 342, "%zu constants, %zu nodes", n_const, m->g->n_nodes);
    rlx_model_destroy(m);
}

/* ================================================================ main */

static void cleanup(void) {
    for (size_t i = g_n_files; i-- > 0;) {
        unlink(g_files[i]);
        free(g_files[i]);
    }
    char *sub = path_in_dir("sub");
    rmdir(sub);
    free(sub);
    rmdir(g_dir);
}

int main(void) {
    test_seed_from_env();
    snprintf(g_dir, sizeof g_dir, "/tmp/rlx_test_import_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_end_to_end();
    test_input_dims();
    test_constant_forms();
    test_tensor_dtypes();
    test_bad_ops_and_opsets();
    test_attr_types();
    test_attr_booleans();
    test_constant_attr_types();
    test_bad_files();
    test_bad_initializers();
    test_overridable_initializers();
    test_bad_values();
    test_external_data();
    test_subgraph_outer();
    test_deep_nesting();
    test_mutations();
    test_ppocr();
    cleanup();
    TEST_MAIN_END();
}
