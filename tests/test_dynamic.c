#define _POSIX_C_SOURCE 200809L
/* Dynamic shapes, through ONNX files written here with the protobuf-c
 * structs and loaded with rlx_model_load_onnx:
 *  - symbolic dims stay symbolic through import (inputs, values inferred
 *    from them, declared outputs);
 *  - one session runs a model with symbolic batch and spatial dims at more
 *    input shapes than its plan cache holds (8), interleaved; every result
 *    equals a fresh session's at that shape (bit for bit: same kernels,
 *    same plan) and a reference computed here (conv + relu + softmax in
 *    double, tolerance 1e-5); the cache holds 8 plans and evicts the least
 *    recently used; each plan has its shape subgraph (Shape, Gather,
 *    Unsqueeze, Concat) folded away;
 *  - inputs that contradict the model (a static dim, two inputs binding one
 *    symbol to different values, a wrong rank) and dims that do not
 *    resolve at run time (a Reshape whose size does not divide, a
 *    broadcast of two symbols bound to different sizes) fail with
 *    RLX_ERR_INVALID_ARGUMENT and messages naming the input, or the node
 *    and the input shapes, and the session still runs after;
 *  - a cycle and a value used but never defined fail at load naming the
 *    node; nodes written out of order are sorted and run.
 * On the CPU, and on the GPU when there is one. */
#include "test.h"

#include <unistd.h>

#include "base/status.h"
#include "import/onnx.h"
#include "onnx_build.h"
#include "ir/graph.h"
#include "runtime/model.h"
#include "runtime/session.h"

/* ================================================================ builders */

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

/* Short forms over onnx_build.h for the graphs below. */
static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const int64_t *dims, const char *const *params) {
    return vi_new(name, elem, rank, dims, params);
}

static void init_t(Onnx__GraphProto *g, const char *name, int dt, int rank, const int64_t *dims, const void *data,
                   size_t nbytes) {
    graph_init(g, tensor_raw(name, dt, rank, dims, data, nbytes));
}

/* ins, outs: comma-separated names. */
static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *ins, const char *outs) {
    Onnx__NodeProto *n = node_new(op, name, ins, outs);
    graph_node(g, n);
    return n;
}

static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v) { node_attr(n, attr_i(name, v)); }

static void attr_ints(Onnx__NodeProto *n, const char *name, size_t cnt, const int64_t *v) {
    node_attr(n, attr_is(name, cnt, v));
}

static char g_dir[64];

/* Wraps g in a ModelProto (opset 13), writes it to g_dir/file, frees it,
 * loads it. */
static rlx_status save_load(Onnx__GraphProto *g, const char *file, rlx_model **out) {
    size_t size = 0;
    uint8_t *buf = model_pack_free(model_new(13, g), &size);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, size, f) != size) exit(2);
    fclose(f);
    free(buf);
    rlx_status st = rlx_model_load_onnx(path, out);
    unlink(path);
    return st;
}

/* ================================================================ the model */

#define CO 4 /* conv output channels */

static float g_w[CO * 3 * 3 * 3], g_b[CO];

/* x [N,3,H,W] -> Conv 3x3 pad 1 -> Relu -> r [N,4,H,W];
 * t = Concat(Unsqueeze(Gather(Shape(r), 0)), [-1]) -> f = Reshape(r, t)
 * [N, 4*H*W] -> y = Softmax(f, axis 1); declared output y [N, F]. */
static rlx_model *dyn_model(void) {
    Onnx__GraphProto *g = graph_new("dyn");
    const int64_t xd[4] = { -1, 3, -1, -1 };
    graph_input(g, vi("x", F32, 4, xd, (const char *[]){ "N", NULL, "H", "W" }));
    graph_output(g, vi("y", F32, 2, (const int64_t[]){ -1, -1 }, (const char *[]){ "N", "F" }));
    init_t(g, "w", F32, 4, (const int64_t[]){ CO, 3, 3, 3 }, g_w, sizeof g_w);
    init_t(g, "b", F32, 1, (const int64_t[]){ CO }, g_b, sizeof g_b);
    int64_t zero = 0, ax0[1] = { 0 }, m1[1] = { -1 };
    init_t(g, "i0", I64, 0, NULL, &zero, 8);
    init_t(g, "ax0", I64, 1, (const int64_t[]){ 1 }, ax0, 8);
    init_t(g, "m1", I64, 1, (const int64_t[]){ 1 }, m1, 8);
    int64_t pads[4] = { 1, 1, 1, 1 };
    attr_ints(node(g, "Conv", "conv", "x,w,b", "c"), "pads", 4, pads);
    node(g, "Relu", "relu", "c", "r");
    node(g, "Shape", "shape", "r", "s");
    attr_int(node(g, "Gather", "gather", "s,i0", "n"), "axis", 0);
    node(g, "Unsqueeze", "unsq", "n,ax0", "n1");
    attr_int(node(g, "Concat", "concat", "n1,m1", "tgt"), "axis", 0);
    node(g, "Reshape", "reshape", "r,tgt", "f");
    attr_int(node(g, "Softmax", "softmax", "f", "y"), "axis", 1);
    rlx_model *m = NULL;
    CHECK_OK(save_load(g, "dyn.onnx", &m));
    return m;
}

/* The reference: conv (pad 1) + relu + softmax over each image, in double. */
static void reference(const rlx_tensor *x, double *y) {
    int64_t N = x->dims[0], H = x->dims[2], W = x->dims[3];
    const float *px = x->data;
    int64_t F = CO * H * W;
    for (int64_t n = 0; n < N; n++) {
        double *row = y + n * F;
        for (int64_t co = 0; co < CO; co++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double acc = g_b[co];
                    for (int64_t ci = 0; ci < 3; ci++)
                        for (int64_t kh = 0; kh < 3; kh++)
                            for (int64_t kw = 0; kw < 3; kw++) {
                                int64_t ih = h + kh - 1, iw = w + kw - 1;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)g_w[((co * 3 + ci) * 3 + kh) * 3 + kw] *
                                       (double)px[((n * 3 + ci) * H + ih) * W + iw];
                            }
                    row[(co * H + h) * W + w] = acc > 0 ? acc : 0;
                }
        double mx = row[0], sum = 0;
        for (int64_t i = 1; i < F; i++) mx = row[i] > mx ? row[i] : mx;
        for (int64_t i = 0; i < F; i++) sum += exp(row[i] - mx);
        for (int64_t i = 0; i < F; i++) row[i] = exp(row[i] - mx) / sum;
    }
}

static rlx_tensor *run_x(rlx_session *s, const rlx_tensor *x) {
    rlx_tensor **out = NULL;
    size_t n = 0;
    rlx_status st = rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n);
    if (st) {
        fprintf(stderr, "run: %s\n", rlx_last_error());
        return NULL;
    }
    rlx_tensor *y = out[0];
    free(out);
    return y;
}

static bool plan_has(const rlx_program *p, const char *op) {
    for (size_t k = 0; k < p->n_steps; k++)
        if (strcmp(p->g->nodes[p->steps[k]].op_type, op) == 0) return true;
    return false;
}

static void test_import_symbols(const rlx_model *m) {
    rlx_value_info vi_x, vi_y;
    CHECK_OK(rlx_model_input_info(m, 0, &vi_x));
    CHECK(vi_x.rank == 4 && vi_x.dims[0] == -1 && vi_x.dims[1] == 3 && vi_x.dims[2] == -1 && vi_x.dims[3] == -1);
    CHECK(vi_x.dim_names[0] && strcmp(vi_x.dim_names[0], "N") == 0);
    CHECK(vi_x.dim_names[2] && strcmp(vi_x.dim_names[2], "H") == 0);
    CHECK(vi_x.dim_names[3] && strcmp(vi_x.dim_names[3], "W") == 0);
    CHECK_OK(rlx_model_output_info(m, 0, &vi_y));
    CHECK_MSG(vi_y.rank == 2 && vi_y.dim_names[0] && strcmp(vi_y.dim_names[0], "N") == 0 && vi_y.dim_names[1] &&
                  strcmp(vi_y.dim_names[1], "F") == 0,
              "declared output symbols lost: rank %d, %s, %s", vi_y.rank, vi_y.dim_names[0] ? vi_y.dim_names[0] : "-",
              vi_y.rank > 1 && vi_y.dim_names[1] ? vi_y.dim_names[1] : "-");
    /* the batch symbol flows through Conv and Relu */
    const rlx_graph *g = m->g;
    int r = rlx_graph_find(g, "r");
    CHECK(r >= 0);
    if (r >= 0) {
        const rlx_value *v = &g->values[r];
        CHECK_MSG(v->rank == 4 && v->dims[0] < 0 && v->syms[0] >= 0 && strcmp(g->syms[v->syms[0]], "N") == 0 &&
                      v->dims[1] == CO,
                  "relu output: rank %d dim0 %lld", v->rank, (long long)v->dims[0]);
    }
}

/* The shapes, in the order they are run: 10 distinct ones, interleaved
 * with repeats; the cache holds 8. */
static const int64_t k_shapes[][4] = {
    { 1, 3, 8, 8 }, { 2, 3, 8, 8 }, { 1, 3, 6, 10 }, { 3, 3, 5, 7 }, { 2, 3, 8, 8 }, { 1, 3, 8, 8 },
    { 1, 3, 4, 4 }, { 2, 3, 3, 9 }, { 1, 3, 7, 7 }, { 2, 3, 6, 6 }, { 1, 3, 9, 3 }, { 4, 3, 2, 5 },
    { 1, 3, 8, 8 }, { 3, 3, 5, 7 }, { 2, 3, 8, 8 },
};

static void test_many_shapes(const rlx_model *m, const char *device) {
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    if (!s) return;
    size_t n_shapes = RLX_ARRAY_LEN(k_shapes);
    int distinct_seen = 0;
    /* which distinct shapes are cached, most recent last (an LRU model
     * kept here independently of the session) */
    int lru[16], n_lru = 0;
    uint64_t compiles = 0;
    for (size_t k = 0; k < n_shapes; k++) {
        const int64_t *d = k_shapes[k];
        /* the distinct shape index of d */
        int id = -1;
        for (size_t j = 0; j < k && id < 0; j++)
            if (memcmp(k_shapes[j], d, sizeof k_shapes[j]) == 0) id = (int)j;
        if (id < 0) {
            id = (int)k;
            distinct_seen++;
        }
        bool cached = false;
        for (int i = 0; i < n_lru; i++)
            if (lru[i] == id) {
                cached = true;
                memmove(&lru[i], &lru[i + 1], sizeof(int) * (size_t)(n_lru - i - 1));
                n_lru--;
                break;
            }
        if (!cached && n_lru == 8) { /* evict the least recently used */
            memmove(&lru[0], &lru[1], sizeof(int) * 7);
            n_lru--;
        }
        lru[n_lru++] = id;
        if (!cached) compiles++;

        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, d, -1, 1);
        rlx_tensor *y = run_x(s, x);
        CHECK_MSG(y != NULL, "%s: shape %zu", device, k);
        CHECK_MSG(rlx_session_compile_count(s) == compiles, "%s: after shape %zu: %llu compiles, want %llu (cached %d)",
                  device, k, (unsigned long long)rlx_session_compile_count(s), (unsigned long long)compiles, cached);
        CHECK(rlx_session_plan_count(s) == (size_t)n_lru);
        const rlx_program *p = rlx_session_last_program(s);
        CHECK(p != NULL);
        if (p) {
            static const char *const shape_ops[] = { "Shape", "Gather", "Unsqueeze", "Concat" };
            for (size_t i = 0; i < 4; i++)
                CHECK_MSG(!plan_has(p, shape_ops[i]), "%s: the plan for shape %zu still has a %s step", device, k,
                          shape_ops[i]);
            CHECK(plan_has(p, "Conv") && plan_has(p, "Softmax"));
        }
        if (y) {
            int64_t F = CO * d[2] * d[3];
            CHECK(y->rank == 2 && y->dims[0] == d[0] && y->dims[1] == F);
            /* a fresh session at this shape: same bits */
            rlx_session *fresh = NULL;
            CHECK_OK(rlx_session_create(m, &o, &fresh));
            rlx_tensor *yf = fresh ? run_x(fresh, x) : NULL;
            CHECK_MSG(yf && yf->nbytes == y->nbytes && memcmp(yf->data, y->data, y->nbytes) == 0,
                      "%s: shape %zu differs from a fresh session's", device, k);
            rlx_tensor_destroy(yf);
            rlx_session_destroy(fresh);
            /* the reference */
            double *ref = malloc(sizeof(double) * (size_t)(d[0] * F));
            reference(x, ref);
            const float *py = y->data;
            double worst = 0;
            for (int64_t i = 0; i < d[0] * F; i++) {
                double e = fabs(py[i] - ref[i]);
                if (e > worst) worst = e;
            }
            CHECK_MSG(worst <= 1e-5, "%s: shape %zu: max abs error %g against the reference (tolerance 1e-5)", device,
                      k, worst);
            free(ref);
        }
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
    }
    CHECK(distinct_seen == 10);
    rlx_session_destroy(s);
}

/* ================================================================ errors */

static void test_input_errors(const rlx_model *m, const char *device) {
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    if (!s) return;
    rlx_tensor **out = NULL;
    size_t n = 0;
    /* a static dim contradicted */
    rlx_tensor *bad = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 4, 8, 8 }, -1, 1);
    CHECK_FAILS(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ bad }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "input 'x' has shape [1,4,8,8], the model expects dim 1 = 3");
    CHECK(out == NULL && n == 0);
    rlx_tensor_destroy(bad);
    /* a wrong rank */
    bad = test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 3, 8, 8 }, -1, 1);
    CHECK_FAILS(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ bad }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "input 'x'");
    CHECK(strstr(rlx_last_error(), "rank 4") != NULL);
    rlx_tensor_destroy(bad);
    /* and the session still works */
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 3, 4, 4 }, -1, 1);
    rlx_tensor *y = run_x(s, x);
    CHECK_MSG(y != NULL, "%s: the session fails after rejected inputs", device);
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
}

/* Two inputs share symbols: a [B, K], b [B, K] -> a + b, and c [K, 5]
 * reshaped by a constant [-1, 4]: a symbol bound twice differently, and a
 * size that the Reshape cannot take. */
static void test_bind_errors(const char *device) {
    Onnx__GraphProto *g = graph_new("bind");
    graph_input(g, vi("a", F32, 2, (const int64_t[]){ -1, -1 }, (const char *[]){ "B", "K" }));
    graph_input(g, vi("b", F32, 2, (const int64_t[]){ -1, -1 }, (const char *[]){ "B", "K" }));
    graph_input(g, vi("c", F32, 2, (const int64_t[]){ -1, 5 }, (const char *[]){ "M", NULL }));
    graph_input(g, vi("d", F32, 2, (const int64_t[]){ -1, 5 }, (const char *[]){ "P", NULL }));
    graph_output(g, vi("s", F32, 2, (const int64_t[]){ -1, -1 }, (const char *[]){ "B", "K" }));
    graph_output(g, vi("r", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "R", NULL }));
    graph_output(g, vi("e", F32, 2, (const int64_t[]){ -1, 5 }, (const char *[]){ "M", NULL }));
    int64_t shp[2] = { -1, 4 };
    init_t(g, "shp", I64, 1, (const int64_t[]){ 2 }, shp, sizeof shp);
    node(g, "Add", "add_ab", "a,b", "s");
    node(g, "Reshape", "reshape_c", "c,shp", "r");
    node(g, "Add", "add_cd", "c,d", "e"); /* M and P must broadcast */
    rlx_model *m = NULL;
    CHECK_OK(save_load(g, "bind.onnx", &m));
    if (!m) return;
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 3 }, -1, 1);
    rlx_tensor *b3 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 3 }, -1, 1);
    rlx_tensor *b2 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 3 }, -1, 1);
    rlx_tensor *c4 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 4, 5 }, -1, 1);
    rlx_tensor *c3 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 5 }, -1, 1);
    rlx_tensor *d2 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 5 }, -1, 1);
    const char *names[4] = { "a", "b", "c", "d" };
    rlx_tensor **out = NULL;
    size_t n = 0;
    /* B = 2 from a, 3 from b: a dim name is a hint (as for onnxruntime);
     * the Add that cannot broadcast [2,3] with [3,3] is named */
    CHECK_FAILS(rlx_session_run(s, 4, names, (const rlx_tensor *[]){ a, b3, c4, c4 }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "node 'add_ab' (Add)");
    CHECK_MSG(strstr(rlx_last_error(), "a=[2,3], b=[3,3]"), "%s", rlx_last_error());
    /* c has 15 elements: Reshape to [-1, 4] cannot resolve -1; the message
     * names the node */
    CHECK_FAILS(rlx_session_run(s, 4, names, (const rlx_tensor *[]){ a, b2, c3, c3 }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "node 'reshape_c' (Reshape)");
    CHECK_MSG(strstr(rlx_last_error(), "input shapes a=[2,3], b=[2,3], c=[3,5], d=[3,5]") != NULL, "%s",
              rlx_last_error());
    /* M = 4, P = 2 do not broadcast in add_cd */
    CHECK_FAILS(rlx_session_run(s, 4, names, (const rlx_tensor *[]){ a, b2, c4, d2 }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "node 'add_cd' (Add)");
    CHECK(out == NULL && n == 0);
    CHECK(rlx_session_plan_count(s) == 0); /* failed compiles leave nothing behind */
    /* and a consistent set runs: s = a + b, r = c reshaped, e = c + c */
    CHECK_OK(rlx_session_run(s, 4, names, (const rlx_tensor *[]){ a, b2, c4, c4 }, &out, &n));
    if (out) {
        const float *pa = a->data, *pb = b2->data, *ps = out[0]->data;
        bool ok = out[0]->dims[0] == 2 && out[0]->dims[1] == 3;
        for (int i = 0; i < 6 && ok; i++) ok = ps[i] == pa[i] + pb[i]; /* exact: one float add */
        CHECK_MSG(ok, "a + b wrong");
        CHECK(out[1]->dims[0] == 5 && out[1]->dims[1] == 4 && memcmp(out[1]->data, c4->data, 80) == 0);
    }
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b3);
    rlx_tensor_destroy(b2);
    rlx_tensor_destroy(c4);
    rlx_tensor_destroy(c3);
    rlx_tensor_destroy(d2);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Two inputs declared [N, 4] fed with different N: onnxruntime runs the
 * graph when its ops allow it (dim names are hints), and so does rlx: a
 * Relu on each, and a Concat along axis 0 (sizes may differ there). It
 * was refused ("dim 0 ('N') = 3 contradicts 2 bound by another input"). */
static void test_sym_hint(const char *device) {
    Onnx__GraphProto *g = graph_new("symhint");
    graph_input(g, vi("a", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "N", NULL }));
    graph_input(g, vi("b", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "N", NULL }));
    graph_output(g, vi("ra", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "N", NULL }));
    graph_output(g, vi("rb", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "N", NULL }));
    graph_output(g, vi("cat", F32, 2, (const int64_t[]){ -1, 4 }, (const char *[]){ "M", NULL }));
    node(g, "Relu", "relu_a", "a", "ra");
    node(g, "Relu", "relu_b", "b", "rb");
    Onnx__NodeProto *cat = node(g, "Concat", "cat_ab", "ra,rb", "cat");
    attr_int(cat, "axis", 0);
    rlx_model *m = NULL;
    CHECK_OK(save_load(g, "symhint.onnx", &m));
    if (!m) return;
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 4 }, -1, 1);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 4 }, -1, 1);
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_OK(rlx_session_run(s, 2, (const char *[]){ "a", "b" }, (const rlx_tensor *[]){ a, b }, &out, &n));
    if (out && n == 3) {
        CHECK(out[0]->dims[0] == 2 && out[1]->dims[0] == 3 && out[2]->dims[0] == 5 && out[2]->dims[1] == 4);
        const float *pa = a->data, *pb = b->data, *pc = out[2]->data;
        bool ok = true;
        for (int i = 0; i < 20 && ok; i++) { /* exact: max(x, 0) and a copy */
            float x = i < 8 ? pa[i] : pb[i - 8];
            ok = pc[i] == (x > 0 ? x : 0.0f);
        }
        CHECK_MSG(ok, "%s: Concat of Relu(a [2,4]) and Relu(b [3,4]): wrong values", device);
    }
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* '?' and '' dim_params are anonymous: PP-OCR's classifier declares
 * [-1,3,'?','?'] and runs at 48x192, so the two '?' must not be bound as
 * one symbol (they were: "dim 3 ('?') = 192 contradicts 48"). x is
 * [1,3,'?','?'] run as [1,3,2,5]; z is ['','',4] run as [2,3,4]. */
static void test_anonymous_dims(const char *device) {
    Onnx__GraphProto *g = graph_new("anon");
    graph_input(g, vi("x", F32, 4, (const int64_t[]){ 1, 3, -1, -1 }, (const char *[]){ NULL, NULL, "?", "?" }));
    graph_input(g, vi("z", F32, 3, (const int64_t[]){ -1, -1, 4 }, (const char *[]){ "", "", NULL }));
    graph_output(g, vi("y", F32, 4, (const int64_t[]){ 1, 3, -1, -1 }, (const char *[]){ NULL, NULL, "?", "?" }));
    graph_output(g, vi("w", F32, 3, (const int64_t[]){ -1, -1, 4 }, (const char *[]){ "", "", NULL }));
    node(g, "Relu", "relu_x", "x", "y");
    node(g, "Neg", "neg_z", "z", "w");
    rlx_model *m = NULL;
    CHECK_OK(save_load(g, "anon.onnx", &m));
    if (!m) return;
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, (const int64_t[]){ 1, 3, 2, 5 }, -1, 1);
    rlx_tensor *z = test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 2, 3, 4 }, -1, 1);
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_OK(rlx_session_run(s, 2, (const char *[]){ "x", "z" }, (const rlx_tensor *[]){ x, z }, &out, &n));
    if (out && n == 2) {
        const float *px = x->data, *py = out[0]->data, *pz = z->data, *pw = out[1]->data;
        CHECK(out[0]->rank == 4 && out[0]->dims[2] == 2 && out[0]->dims[3] == 5);
        CHECK(out[1]->rank == 3 && out[1]->dims[0] == 2 && out[1]->dims[1] == 3);
        bool ok = true;
        for (int i = 0; i < 30 && ok; i++) ok = py[i] == (px[i] > 0 ? px[i] : 0.0f); /* exact */
        for (int i = 0; i < 24 && ok; i++) ok = pw[i] == -pz[i];
        CHECK_MSG(ok, "%s: anonymous dims: wrong values", device);
    }
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(z);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Structural errors in the file name the node; out-of-order nodes run. */
static void test_graph_errors(void) {
    const int64_t d[1] = { 4 };
    /* a cycle: p = Add(x, q), q = Relu(p) */
    Onnx__GraphProto *g = graph_new("cycle");
    graph_input(g, vi("x", F32, 1, d, NULL));
    graph_output(g, vi("q", F32, 1, d, NULL));
    node(g, "Add", "loop_add", "x,q", "p");
    node(g, "Relu", "loop_relu", "p", "q");
    rlx_model *m = NULL;
    CHECK_FAILS(save_load(g, "cycle.onnx", &m), RLX_ERR_INVALID_MODEL, "cycle");
    CHECK_MSG(strstr(rlx_last_error(), "node 'loop_add' (Add)") || strstr(rlx_last_error(), "node 'loop_relu' (Relu)"),
              "the cycle message names no node: %s", rlx_last_error());
    CHECK(m == NULL);
    /* a value used but never defined */
    g = graph_new("undef");
    graph_input(g, vi("x", F32, 1, d, NULL));
    graph_output(g, vi("z", F32, 1, d, NULL));
    node(g, "Relu", "first", "x", "y");
    node(g, "Mul", "uses_ghost", "y,ghost", "z");
    CHECK_FAILS(save_load(g, "undef.onnx", &m), RLX_ERR_INVALID_MODEL, "ghost");
    CHECK_MSG(strstr(rlx_last_error(), "uses_ghost"), "the message names no node: %s", rlx_last_error());
    /* used before it is defined, but defined: the nodes are sorted */
    g = graph_new("order");
    graph_input(g, vi("x", F32, 1, d, NULL));
    graph_output(g, vi("z", F32, 1, d, NULL));
    node(g, "Neg", "second", "y", "z");
    node(g, "Relu", "first", "x", "y");
    CHECK_OK(save_load(g, "order.onnx", &m));
    if (m) {
        rlx_session *s = NULL;
        CHECK_OK(rlx_session_create(m, NULL, &s));
        float xv[4] = { -1.5f, 2.0f, 0.25f, -0.125f };
        rlx_tensor *x = test_tensor_f32(1, d, xv);
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
        if (out) {
            const float *pz = out[0]->data;
            for (int i = 0; i < 4; i++) CHECK(pz[i] == -(xv[i] > 0 ? xv[i] : 0.0f));
        }
        test_free_outputs(out, (int)n);
        rlx_tensor_destroy(x);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
}

int main(void) {
    test_seed(test_seed_from_env());
    snprintf(g_dir, sizeof g_dir, "/tmp/rlx_test_dynamic_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    for (size_t i = 0; i < RLX_ARRAY_LEN(g_w); i++) g_w[i] = test_rand_uniform(-0.5f, 0.5f);
    for (size_t i = 0; i < RLX_ARRAY_LEN(g_b); i++) g_b[i] = test_rand_uniform(-0.5f, 0.5f);
    rlx_model *m = dyn_model();
    bool gpu = test_have_gpu();
    if (!gpu) fprintf(stderr, "no GPU adapter: CPU only\n");
    if (m) {
        test_import_symbols(m);
        test_many_shapes(m, "cpu");
        if (gpu) test_many_shapes(m, "gpu");
        test_input_errors(m, "cpu");
        if (gpu) test_input_errors(m, "gpu");
    }
    test_bind_errors("cpu");
    if (gpu) test_bind_errors("gpu");
    test_anonymous_dims("cpu");
    if (gpu) test_anonymous_dims("gpu");
    test_sym_hint("cpu");
    if (gpu) test_sym_hint("gpu");
    test_graph_errors();
    rlx_model_destroy(m);
    rmdir(g_dir);
    TEST_MAIN_END();
}
