/* ONNX Gradient-1 and the optimizers Adagrad-1, Adam-1, Momentum-1 (domain
 * ai.onnx.preview.training), expanded at import
 * (src/import/onnx_training.c). Models are built here with the protobuf-c
 * structs, loaded from memory and run; the gradients are checked against
 * central finite differences (step 1e-5, in double) of forward functions
 * written here in double, or against analytic formulas:
 *  - elementwise ops with numpy broadcasting (Mul, Add, Div, Sub, Sigmoid,
 *    Exp, Neg, Sqrt, Pow, Relu, Log): inputs of shapes [2,3,4], [3,1], [4]
 *    and [] get their gradients summed back to their shapes; an input in xs
 *    that y does not depend on gets zeros;
 *  - batched MatMul with a broadcast weight that is an initializer (so it
 *    must not be folded away), a 1-D MatMul operand, Tanh, Softmax, a
 *    constant zs input, ReduceSum (axes as an input, opset 13), Reshape;
 *  - Gemm (alpha, beta, transB, broadcast C), Relu, LogSoftmax with the
 *    2-D coercion of opset 12, ReduceMean (axes attribute), Transpose;
 *  - a symbolic batch dim, run at two batch sizes (analytic);
 *  - the gradient taken at inputs other than the named values (analytic);
 *  - a Gradient of a Gradient's output, written before it in the file
 *    (second derivative of a^3, analytic);
 *  - Adagrad, Adam, Momentum (standard and Nesterov) on two tensors of
 *    different shapes, at T = 0 and T = 3, in a model that imports only
 *    ai.onnx.preview.training, against their pseudo code in double; a
 *    training step (Gradient of a squared error feeding Momentum);
 *  - an op that rlx cannot differentiate on the path (error naming the
 *    Gradient node, the op and its node) and malformed Gradient nodes.
 * On the CPU, and on the GPU when there is one. */
#include "test.h"

#include "base/status.h"
#include "onnx_build.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

#define TOL_ABS 2e-4 /* f32 gradients against double finite differences: |g - fd| <= TOL_ABS + TOL_REL |fd| */
#define TOL_REL 2e-3

/* ================================================================ builders */

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *ins,
                             const char *outs) {
    Onnx__NodeProto *n = node_new(op, name, ins, outs);
    graph_node(g, n);
    return n;
}

static Onnx__AttributeProto *attr_strs(const char *name, const char *list) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    size_t n;
    char **names = split_names(list, &n);
    a->strings = xcalloc(n, sizeof *a->strings);
    a->n_strings = n;
    for (size_t i = 0; i < n; i++) {
        a->strings[i].data = (uint8_t *)names[i];
        a->strings[i].len = strlen(names[i]);
    }
    free(names);
    return a;
}

/* Gradient(ins) -> outs with xs, zs (NULL: none), y. */
static Onnx__NodeProto *gradient(Onnx__GraphProto *g, const char *name, const char *xs, const char *zs,
                                 const char *y, const char *ins, const char *outs) {
    Onnx__NodeProto *n = node(g, "Gradient", name, ins, outs);
    n->domain = S("ai.onnx.preview.training");
    node_attr(n, attr_strs("xs", xs));
    if (zs) node_attr(n, attr_strs("zs", zs));
    node_attr(n, attr_s("y", y));
    return n;
}

static void input(Onnx__GraphProto *g, const char *name, int rank, const int64_t *dims) {
    graph_input(g, vi_new(name, F32, rank, dims, NULL));
}

static void output(Onnx__GraphProto *g, const char *name) { graph_output(g, vi_new(name, F32, -1, NULL, NULL)); }

static void init_f(Onnx__GraphProto *g, const char *name, const rlx_tensor *t) {
    graph_init(g, tensor_raw(name, F32, t->rank, t->dims, t->data, t->nbytes));
}

static void init_i64(Onnx__GraphProto *g, const char *name, size_t n, const int64_t *v) {
    int64_t d = (int64_t)n;
    graph_init(g, tensor_raw(name, I64, 1, &d, v, n * sizeof(int64_t)));
}

/* Packs the graph into a model of the given default opset that also
 * imports ai.onnx.preview.training-1, and loads it. */
static rlx_status load(Onnx__GraphProto *g, int64_t opset, rlx_model **out) {
    Onnx__ModelProto *m = model_new(opset, g);
    Onnx__OperatorSetIdProto *os = xcalloc(1, sizeof *os);
    onnx__operator_set_id_proto__init(os);
    os->domain = S("ai.onnx.preview.training");
    os->has_version = 1;
    os->version = 1;
    PUSH(m->opset_import, m->n_opset_import, os);
    size_t size;
    uint8_t *buf = model_pack_free(m, &size);
    rlx_status st = rlx_model_load_onnx_memory(buf, size, NULL, out);
    free(buf);
    return st;
}

/* Runs m on device with the named inputs; returns the outputs in graph
 * order (NULL on failure, after a failed CHECK). */
static rlx_tensor **run(const rlx_model *m, const char *device, size_t n, const char *const *names,
                        rlx_tensor *const *ins, size_t *n_out) {
    rlx_session_options o = { .device = device };
    rlx_session *s = NULL;
    rlx_tensor **outs = NULL;
    *n_out = 0;
    CHECK_OK(rlx_session_create(m, &o, &s));
    if (!s) return NULL;
    rlx_status st = rlx_session_run(s, n, names, (const rlx_tensor *const *)ins, &outs, n_out);
    CHECK_MSG(st == RLX_OK, "%s: run failed: %s", device, rlx_last_error());
    rlx_session_destroy(s);
    return st ? NULL : outs;
}

static void free_outs(rlx_tensor **outs, size_t n) {
    for (size_t i = 0; i < n; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
}

/* ================================================================ references */

#define MAX_IN 8

typedef double (*fwd_fn)(double *const *in); /* the sum of y's elements */

/* Central finite differences of f with respect to every element of input k
 * (step 1e-5, in double). */
static void fd_grad(fwd_fn f, double *const *in, size_t numel, int k, double *out) {
    const double h = 1e-5;
    for (size_t i = 0; i < numel; i++) {
        double keep = in[k][i];
        in[k][i] = keep + h;
        double fp = f(in);
        in[k][i] = keep - h;
        double fm = f(in);
        in[k][i] = keep;
        out[i] = (fp - fm) / (2 * h);
    }
}

static double *to_double(const rlx_tensor *t) {
    size_t n = rlx_tensor_numel(t);
    double *d = xcalloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) d[i] = ((const float *)t->data)[i];
    return d;
}

/* Checks got (f32) against want (double) elementwise within TOL_ABS +
 * TOL_REL |want|, and that its shape is `like`'s. */
static void check_close(const char *what, const char *device, const rlx_tensor *got, const rlx_tensor *like,
                        const double *want) {
    CHECK_MSG(got && got->dtype == RLX_DTYPE_F32 && rlx_tensor_numel(got) == rlx_tensor_numel(like) &&
                  got->rank == like->rank && !memcmp(got->dims, like->dims, (size_t)like->rank * sizeof(int64_t)),
              "%s on %s: wrong dtype or shape", what, device);
    if (!got || got->dtype != RLX_DTYPE_F32 || rlx_tensor_numel(got) != rlx_tensor_numel(like)) return;
    const float *g = got->data;
    double worst = 0;
    size_t at = 0;
    bool ok = true;
    for (size_t i = 0; i < rlx_tensor_numel(like); i++) {
        double e = fabs((double)g[i] - want[i]);
        if (!(e <= TOL_ABS + TOL_REL * fabs(want[i]))) ok = false;
        if (!(e <= worst)) worst = e, at = i;
    }
    CHECK_MSG(ok, "%s on %s: element %zu is %g, expected %g (max abs error %g; tolerance %g + %g |expected|)", what,
              device, at, (double)g[at], want[at], worst, TOL_ABS, TOL_REL);
}

/* For each input k < n_x of the case: output 1 + k is checked against
 * finite differences of f. Output 0 is y itself (not checked here). */
static void check_fd(const char *what, const char *device, rlx_tensor **outs, size_t n_out, rlx_tensor *const *ins,
                     int n_x, fwd_fn f, int n_all) {
    double *d[MAX_IN];
    for (int k = 0; k < n_all; k++) d[k] = to_double(ins[k]);
    for (int k = 0; k < n_x; k++) {
        size_t numel = rlx_tensor_numel(ins[k]);
        double *want = xcalloc(numel, sizeof(double));
        fd_grad(f, d, numel, k, want);
        char w[128];
        snprintf(w, sizeof w, "%s: gradient %d", what, k);
        if ((size_t)(1 + k) < n_out) check_close(w, device, outs[1 + k], ins[k], want);
        else CHECK_MSG(0, "%s: output missing", w);
        free(want);
    }
    for (int k = 0; k < n_all; k++) free(d[k]);
}

/* ================================================================ case 1: broadcasting */

/* y = Sigmoid((a*b + c) / d) - Exp(-Sqrt(b^2)) + Relu(a) * Log(d*d);
 * a [2,3,4], b [3,1], c [4], d []. */
static double fwd_bcast(double *const *in) {
    const double *a = in[0], *b = in[1], *c = in[2], d = in[3][0];
    double s = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                double av = a[(i * 3 + j) * 4 + k], bv = b[j];
                double t = (av * bv + c[k]) / d;
                double y = 1 / (1 + exp(-t)) - exp(-sqrt(pow(bv, 2.0))) + (av > 0 ? av : 0) * log(d * d);
                s += y;
            }
    return s;
}

static void test_broadcast(bool gpu) {
    Onnx__GraphProto *g = graph_new("bcast");
    input(g, "a", 3, (const int64_t[]){ 2, 3, 4 });
    input(g, "b", 2, (const int64_t[]){ 3, 1 });
    input(g, "c", 1, (const int64_t[]){ 4 });
    input(g, "d", 0, NULL);
    input(g, "e", 2, (const int64_t[]){ 2, 2 }); /* y does not depend on it */
    float two = 2.0f;
    graph_init(g, tensor_floats("two", 0, NULL, &two, 1));
    node(g, "Mul", "mul", "a,b", "t1");
    node(g, "Add", "add", "t1,c", "t2");
    node(g, "Div", "div", "t2,d", "t3");
    node(g, "Sigmoid", "sig", "t3", "t4");
    node(g, "Pow", "pow", "b,two", "p1");
    node(g, "Sqrt", "sqrt", "p1", "p2");
    node(g, "Neg", "neg", "p2", "p3");
    node(g, "Exp", "exp", "p3", "p4");
    node(g, "Sub", "sub", "t4,p4", "t5");
    node(g, "Relu", "relu", "a", "r1");
    node(g, "Mul", "dd", "d,d", "d2");
    node(g, "Log", "log", "d2", "l1");
    node(g, "Mul", "mul2", "r1,l1", "r2");
    node(g, "Add", "add2", "t5,r2", "y");
    node(g, "Identity", "ide", "e", "e2"); /* e feeds something, but not y */
    gradient(g, "grad", "a,b,c,d,e", NULL, "y", "a,b,c,d,e", "ga,gb,gc,gd,ge");
    output(g, "y");
    output(g, "ga");
    output(g, "gb");
    output(g, "gc");
    output(g, "gd");
    output(g, "ge");
    output(g, "e2");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_tensor *ins[5] = {
        test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 2, 3, 4 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 1 }, 0.3f, 1.2f),
        test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 4 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 0, NULL, 0.5f, 1.5f),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 2 }, -1, 1),
    };
    ((float *)ins[1]->data)[1] *= -1; /* a negative b: Sqrt(b^2) = |b| */
    const char *names[5] = { "a", "b", "c", "d", "e" };
    const char *devs[2] = { "cpu", "gpu" };
    for (int dv = 0; dv < (gpu ? 2 : 1); dv++) {
        size_t n_out;
        rlx_tensor **outs = run(m, devs[dv], 5, names, ins, &n_out);
        if (!outs) continue;
        CHECK(n_out == 7);
        check_fd("broadcast", devs[dv], outs, n_out, ins, 4, fwd_bcast, 4);
        /* ge: zeros of e's shape, exactly */
        const rlx_tensor *ge = outs[5];
        CHECK(ge->rank == 2 && ge->dims[0] == 2 && ge->dims[1] == 2);
        for (size_t i = 0; i < rlx_tensor_numel(ge); i++) CHECK(((const float *)ge->data)[i] == 0.0f);
        free_outs(outs, n_out);
    }
    for (int i = 0; i < 5; i++) rlx_tensor_destroy(ins[i]);
    rlx_model_destroy(m);
}

/* ================================================================ case 2: MatMul, Softmax, ReduceSum */

/* h = Tanh(A W + bias); s = Softmax(h, -1); r = ReduceSum(s * K, [2]);
 * y = MatMul(Reshape(r, [6]), u): A [2,3,4], W [4,5] (initializer), bias
 * [5], K [2,3,5] (zs), u [6]. */
static double fwd_matmul(double *const *in) {
    const double *A = in[0], *W = in[1], *bias = in[2], *u = in[3], *K = in[4];
    double y = 0;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++) {
            double h[5], mx = -1e300, sum = 0, r = 0;
            for (int j = 0; j < 5; j++) {
                double acc = bias[j];
                for (int k = 0; k < 4; k++) acc += A[(b * 3 + i) * 4 + k] * W[k * 5 + j];
                h[j] = tanh(acc);
                mx = h[j] > mx ? h[j] : mx;
            }
            for (int j = 0; j < 5; j++) sum += exp(h[j] - mx);
            for (int j = 0; j < 5; j++) r += exp(h[j] - mx) / sum * K[(b * 3 + i) * 5 + j];
            y += r * u[b * 3 + i];
        }
    return y;
}

static void test_matmul(bool gpu) {
    rlx_tensor *ins[5] = {
        test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 2, 3, 4 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 4, 5 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 5 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 6 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 3, (const int64_t[]){ 2, 3, 5 }, -2, 2),
    };
    Onnx__GraphProto *g = graph_new("matmul");
    input(g, "A", 3, (const int64_t[]){ 2, 3, 4 });
    init_f(g, "W", ins[1]);
    input(g, "bias", 1, (const int64_t[]){ 5 });
    input(g, "u", 1, (const int64_t[]){ 6 });
    input(g, "K", 3, (const int64_t[]){ 2, 3, 5 });
    init_i64(g, "ax2", 1, (const int64_t[]){ 2 });
    init_i64(g, "shape6", 1, (const int64_t[]){ 6 });
    node(g, "MatMul", "mm", "A,W", "h0");
    node(g, "Add", "addb", "h0,bias", "h1");
    node(g, "Tanh", "tanh", "h1", "h");
    node_attr(node(g, "Softmax", "sm", "h", "s"), attr_i("axis", -1));
    node(g, "Mul", "mulk", "s,K", "m");
    node_attr(node(g, "ReduceSum", "rs", "m,ax2", "r"), attr_i("keepdims", 0));
    node(g, "Reshape", "flat", "r,shape6", "q");
    node(g, "MatMul", "dot", "q,u", "y");
    gradient(g, "grad_mm", "A,W,bias,u", "K", "y", "A,W,bias,u,K", "gA,gW,gbias,gu");
    output(g, "y");
    output(g, "gA");
    output(g, "gW");
    output(g, "gbias");
    output(g, "gu");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) goto done;
    const char *names[4] = { "A", "bias", "u", "K" };
    rlx_tensor *fed[4] = { ins[0], ins[2], ins[3], ins[4] };
    const char *devs[2] = { "cpu", "gpu" };
    for (int dv = 0; dv < (gpu ? 2 : 1); dv++) {
        size_t n_out;
        rlx_tensor **outs = run(m, devs[dv], 4, names, fed, &n_out);
        if (!outs) continue;
        CHECK(n_out == 5);
        check_fd("matmul", devs[dv], outs, n_out, ins, 4, fwd_matmul, 5);
        free_outs(outs, n_out);
    }
    rlx_model_destroy(m);
done:
    for (int i = 0; i < 5; i++) rlx_tensor_destroy(ins[i]);
}

/* ================================================================ case 3: Gemm, opset 12 */

/* g = 0.7 X W^T + 1.3 C; l = LogSoftmax(Relu(g), axis 1); t = Transpose(l * K2);
 * y = ReduceMean(t, axes [1], keepdims 1): X [3,4], W [5,4], C [5], K2 [3,5]. */
static double fwd_gemm(double *const *in) {
    const double *X = in[0], *W = in[1], *C = in[2], *K2 = in[3];
    double y = 0;
    for (int i = 0; i < 3; i++) {
        double r[5], mx = -1e300, sum = 0;
        for (int j = 0; j < 5; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++) acc += X[i * 4 + k] * W[j * 4 + k];
            double v = 0.7 * acc + 1.3 * C[j];
            r[j] = v > 0 ? v : 0;
            mx = r[j] > mx ? r[j] : mx;
        }
        for (int j = 0; j < 5; j++) sum += exp(r[j] - mx);
        for (int j = 0; j < 5; j++) y += (r[j] - mx - log(sum)) * K2[i * 5 + j] / 3.0;
    }
    return y;
}

static void test_gemm(bool gpu) {
    Onnx__GraphProto *g = graph_new("gemm");
    input(g, "X", 2, (const int64_t[]){ 3, 4 });
    input(g, "W", 2, (const int64_t[]){ 5, 4 });
    input(g, "C", 1, (const int64_t[]){ 5 });
    input(g, "K2", 2, (const int64_t[]){ 3, 5 });
    Onnx__NodeProto *n = node(g, "Gemm", "gemm", "X,W,C", "g0");
    node_attr(n, attr_f("alpha", 0.7f));
    node_attr(n, attr_f("beta", 1.3f));
    node_attr(n, attr_i("transB", 1));
    node(g, "Relu", "relu", "g0", "g1");
    node_attr(node(g, "LogSoftmax", "lsm", "g1", "l"), attr_i("axis", 1));
    node(g, "Mul", "mulk", "l,K2", "lk");
    node(g, "Transpose", "tr", "lk", "t");
    n = node(g, "ReduceMean", "mean", "t", "y");
    node_attr(n, attr_is("axes", 1, (const int64_t[]){ 1 }));
    node_attr(n, attr_i("keepdims", 1));
    gradient(g, "grad_gemm", "X,W,C", "K2", "y", "X,W,C,K2", "gX,gW,gC");
    output(g, "y");
    output(g, "gX");
    output(g, "gW");
    output(g, "gC");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 12, &m));
    if (!m) return;
    rlx_tensor *ins[4] = {
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 4 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 5, 4 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 5 }, -1, 1),
        test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 5 }, -2, 2),
    };
    const char *names[4] = { "X", "W", "C", "K2" };
    const char *devs[2] = { "cpu", "gpu" };
    for (int dv = 0; dv < (gpu ? 2 : 1); dv++) {
        size_t n_out;
        rlx_tensor **outs = run(m, devs[dv], 4, names, ins, &n_out);
        if (!outs) continue;
        CHECK(n_out == 4);
        check_fd("gemm", devs[dv], outs, n_out, ins, 3, fwd_gemm, 4);
        free_outs(outs, n_out);
    }
    for (int i = 0; i < 4; i++) rlx_tensor_destroy(ins[i]);
    rlx_model_destroy(m);
}

/* ================================================================ case 4: symbolic batch */

/* y = Sigmoid(x * w), x [N,3], w [3]: dx = s(1-s) w, dw = sum_n s(1-s) x. */
static void test_dynamic(void) {
    Onnx__GraphProto *g = graph_new("dyn");
    graph_input(g, vi_new("x", F32, 2, (const int64_t[]){ -1, 3 }, (const char *[]){ "N", NULL }));
    input(g, "w", 1, (const int64_t[]){ 3 });
    node(g, "Mul", "mul", "x,w", "t");
    node(g, "Sigmoid", "sig", "t", "y");
    gradient(g, "grad_dyn", "x,w", NULL, "y", "x,w", "gx,gw");
    output(g, "gx");
    output(g, "gw");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_session_options o = { .device = "cpu" };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 3 }, -1, 1);
    for (int64_t N = 2; s && N <= 5; N += 3) {
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ N, 3 }, -1, 1);
        rlx_tensor *ins[2] = { x, w }, **outs = NULL;
        const char *names[2] = { "x", "w" };
        size_t n_out = 0;
        CHECK_OK(rlx_session_run(s, 2, names, (const rlx_tensor *const *)ins, &outs, &n_out));
        if (outs && n_out == 2) {
            const float *px = x->data, *pw = w->data;
            double *gx = xcalloc((size_t)N * 3, sizeof(double)), gw[3] = { 0 };
            for (int64_t i = 0; i < N; i++)
                for (int j = 0; j < 3; j++) {
                    double sg = 1 / (1 + exp(-(double)px[i * 3 + j] * pw[j]));
                    gx[i * 3 + j] = sg * (1 - sg) * pw[j];
                    gw[j] += sg * (1 - sg) * px[i * 3 + j];
                }
            check_close("dynamic: gx", "cpu", outs[0], x, gx);
            check_close("dynamic: gw", "cpu", outs[1], w, gw);
            free(gx);
        }
        if (outs) free_outs(outs, n_out);
        rlx_tensor_destroy(x);
    }
    rlx_tensor_destroy(w);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* y = x + z, x and z both [N, 3]: the lowering takes the N of x and of z
 * as equal (no reduction of dy over axis 0 for either), so the session
 * must bind N to one size: x [1,3] with z [3,3] would broadcast in the Add
 * and give gx the shape [3,3]. Refused, naming both inputs and the dim
 * (other models may bind a dim name to different sizes: test_dynamic.c). */
static void test_dynamic_bound(void) {
    Onnx__GraphProto *g = graph_new("dynbound");
    graph_input(g, vi_new("x", F32, 2, (const int64_t[]){ -1, 3 }, (const char *[]){ "N", NULL }));
    graph_input(g, vi_new("z", F32, 2, (const int64_t[]){ -1, 3 }, (const char *[]){ "N", NULL }));
    node(g, "Add", "add", "x,z", "y");
    gradient(g, "grad_xz", "x,z", NULL, "y", "x,z", "gx,gz");
    output(g, "gx");
    output(g, "gz");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_session_options o = { .device = "cpu" };
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 1, 3 }, -1, 1);
    rlx_tensor *z = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 3 }, -1, 1);
    rlx_tensor *ins[2] = { x, z }, **outs = NULL;
    const char *names[2] = { "x", "z" };
    size_t n_out = 0;
    if (s) {
        CHECK_FAILS(rlx_session_run(s, 2, names, (const rlx_tensor *const *)ins, &outs, &n_out),
                    RLX_ERR_INVALID_ARGUMENT, "input 'z'");
        CHECK_MSG(strstr(rlx_last_error(), "bound by input 'x'") && strstr(rlx_last_error(), "dims named 'N' equal"),
                  "%s", rlx_last_error());
        CHECK(outs == NULL);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(z);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* ================================================================ case 5: other inputs, higher order */

/* y = a * a * b; Gradient(xs=[a], zs=[b], y) fed (a2, b2): 2 a2 b2. */
static void test_at_other_inputs(void) {
    Onnx__GraphProto *g = graph_new("other");
    input(g, "a", 1, (const int64_t[]){ 4 });
    input(g, "b", 1, (const int64_t[]){ 4 });
    input(g, "a2", 1, (const int64_t[]){ 4 });
    input(g, "b2", 1, (const int64_t[]){ 4 });
    node(g, "Mul", "sq", "a,a", "s");
    node(g, "Mul", "mb", "s,b", "y");
    gradient(g, "grad_at", "a", "b", "y", "a2,b2", "ga");
    output(g, "y");
    output(g, "ga");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_tensor *ins[4];
    for (int i = 0; i < 4; i++) ins[i] = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 4 }, -1, 1);
    const char *names[4] = { "a", "b", "a2", "b2" };
    size_t n_out;
    rlx_tensor **outs = run(m, "cpu", 4, names, ins, &n_out);
    if (outs && n_out == 2) {
        double want[4], wy[4];
        for (int i = 0; i < 4; i++) {
            const float a = ((float *)ins[0]->data)[i], b = ((float *)ins[1]->data)[i];
            const float a2 = ((float *)ins[2]->data)[i], b2 = ((float *)ins[3]->data)[i];
            want[i] = 2.0 * a2 * b2;
            wy[i] = (double)a * a * b;
        }
        check_close("at other inputs: y", "cpu", outs[0], ins[0], wy);
        check_close("at other inputs: ga", "cpu", outs[1], ins[0], want);
    }
    if (outs) free_outs(outs, n_out);
    for (int i = 0; i < 4; i++) rlx_tensor_destroy(ins[i]);
    rlx_model_destroy(m);
}

/* y = a^3 by Mul; g1 = dy/da = 3a^2; g2 = dg1/da = 6a. The second Gradient
 * comes first in the file. */
static void test_second_order(void) {
    Onnx__GraphProto *g = graph_new("second");
    input(g, "a", 1, (const int64_t[]){ 5 });
    node(g, "Mul", "sq", "a,a", "s");
    gradient(g, "grad2", "a", NULL, "g1", "a", "g2");
    node(g, "Mul", "cube", "s,a", "y");
    gradient(g, "grad1", "a", NULL, "y", "a", "g1");
    output(g, "g1");
    output(g, "g2");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 5 }, -1, 1);
    const char *names[1] = { "a" };
    size_t n_out;
    rlx_tensor **outs = run(m, "cpu", 1, names, &a, &n_out);
    if (outs && n_out == 2) {
        double w1[5], w2[5];
        for (int i = 0; i < 5; i++) {
            double v = ((float *)a->data)[i];
            w1[i] = 3 * v * v;
            w2[i] = 6 * v;
        }
        check_close("second order: g1", "cpu", outs[0], a, w1);
        check_close("second order: g2", "cpu", outs[1], a, w2);
    }
    if (outs) free_outs(outs, n_out);
    rlx_tensor_destroy(a);
    rlx_model_destroy(m);
}

/* ================================================================ optimizers */

/* One step of each optimizer in double, from the operators' pseudo code
 * (ai.onnx.preview.training Adagrad-1, Adam-1, Momentum-1). */
typedef struct opt_attrs {
    double nc, eps, decay, alpha, beta, ncp;
    bool nesterov;
} opt_attrs;

static void ref_adagrad(const opt_attrs *a, double R, int64_t T, double x, double g, double h, double *xn, double *hn) {
    double r = R / (1 + (double)T * a->decay), gr = a->nc * x + g;
    *hn = h + gr * gr;
    *xn = x - r * gr / (sqrt(*hn) + a->eps);
}

static void ref_adam(const opt_attrs *a, double R, int64_t T, double x, double g, double v, double h, double *xn,
                     double *vn, double *hn) {
    double gr = a->nc * x + g;
    *vn = a->alpha * v + (1 - a->alpha) * gr;
    *hn = a->beta * h + (1 - a->beta) * gr * gr;
    double ra = T > 0 ? R * sqrt(1 - pow(a->beta, (double)T)) / (1 - pow(a->alpha, (double)T)) : R;
    *xn = (1 - a->ncp) * (x - ra * *vn / (sqrt(*hn) + a->eps));
}

static void ref_momentum(const opt_attrs *a, double R, int64_t T, double x, double g, double v, double *xn,
                         double *vn) {
    double gr = a->nc * x + g, ba = T > 0 ? a->beta : 1;
    *vn = a->alpha * v + ba * gr;
    *xn = a->nesterov ? x - R * (gr + a->alpha * *vn) : x - R * *vn;
}

/* Two optimized tensors of shapes [3] and [2,2], at T = 0 and T = 3, in a
 * model that imports only ai.onnx.preview.training. */
static void test_optimizer(const char *op, const opt_attrs *oa, bool gpu) {
    int groups = !strcmp(op, "Adam") ? 4 : 3;
    const char *grp[4] = { "X", "G", "S", "Q" };
    Onnx__GraphProto *g = graph_new(op);
    graph_input(g, vi_new("R", F32, 0, NULL, NULL));
    graph_input(g, vi_new("T", I64, 0, NULL, NULL));
    const int64_t d1[1] = { 3 }, d2[2] = { 2, 2 };
    char inames[256] = "R,T", onames[256] = "", nm[16];
    for (int k = 0; k < groups; k++)
        for (int i = 0; i < 2; i++) {
            snprintf(nm, sizeof nm, "%s%d", grp[k], i);
            input(g, nm, i ? 2 : 1, i ? d2 : d1);
            strcat(inames, ",");
            strcat(inames, nm);
        }
    for (int k = 0; k < groups - 1; k++)
        for (int i = 0; i < 2; i++) {
            snprintf(nm, sizeof nm, "%s%d_new", grp[k == 0 ? 0 : k + 1], i);
            if (*onames) strcat(onames, ",");
            strcat(onames, nm);
            output(g, nm);
        }
    Onnx__NodeProto *n = node(g, op, "opt", inames, onames);
    n->domain = S("ai.onnx.preview.training");
    node_attr(n, attr_f("norm_coefficient", (float)oa->nc));
    if (strcmp(op, "Momentum") != 0) node_attr(n, attr_f("epsilon", (float)oa->eps));
    if (!strcmp(op, "Adagrad")) node_attr(n, attr_f("decay_factor", (float)oa->decay));
    if (strcmp(op, "Adagrad") != 0) {
        node_attr(n, attr_f("alpha", (float)oa->alpha));
        node_attr(n, attr_f("beta", (float)oa->beta));
    }
    if (!strcmp(op, "Adam")) node_attr(n, attr_f("norm_coefficient_post", (float)oa->ncp));
    if (!strcmp(op, "Momentum")) node_attr(n, attr_s("mode", oa->nesterov ? "nesterov" : "standard"));
    Onnx__ModelProto *mp = model_new(0, g); /* no default domain */
    Onnx__OperatorSetIdProto *os = xcalloc(1, sizeof *os);
    onnx__operator_set_id_proto__init(os);
    os->domain = S("ai.onnx.preview.training");
    os->has_version = 1;
    os->version = 1;
    PUSH(mp->opset_import, mp->n_opset_import, os);
    size_t size;
    uint8_t *buf = model_pack_free(mp, &size);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_load_onnx_memory(buf, size, NULL, &m));
    free(buf);
    if (!m) return;

    const int n_in = 2 + 2 * groups;
    rlx_tensor *t[2 + 8];
    const char *names[2 + 8];
    static char name_buf[10][16];
    t[0] = test_tensor_random(RLX_DTYPE_F32, 0, NULL, 0.05f, 0.2f);
    names[0] = "R";
    names[1] = "T";
    for (int k = 0; k < groups; k++)
        for (int i = 0; i < 2; i++) {
            int j = 2 + 2 * k + i;
            /* accumulated squared gradients are positive */
            float lo = (k == groups - 1 && k >= 2) ? 0.1f : -1.0f;
            t[j] = test_tensor_random(RLX_DTYPE_F32, i ? 2 : 1, i ? d2 : d1, lo, 1.0f);
            snprintf(name_buf[j], sizeof name_buf[j], "%s%d", grp[k], i);
            names[j] = name_buf[j];
        }
    const char *devs[2] = { "cpu", "gpu" };
    for (int64_t T = 0; T <= 3; T += 3) {
        t[1] = test_tensor_i64(0, NULL, &T);
        for (int dv = 0; dv < (gpu ? 2 : 1); dv++) {
            size_t n_out;
            rlx_tensor **outs = run(m, devs[dv], (size_t)n_in, names, t, &n_out);
            if (!outs) continue;
            CHECK(n_out == (size_t)(2 * (groups - 1)));
            double R = ((float *)t[0]->data)[0];
            for (int i = 0; i < 2 && n_out == (size_t)(2 * (groups - 1)); i++) {
                size_t ne = rlx_tensor_numel(t[2 + i]);
                double *want[3];
                for (int k = 0; k < groups - 1; k++) want[k] = xcalloc(ne, sizeof(double));
                for (size_t e = 0; e < ne; e++) {
                    double v[4];
                    for (int k = 0; k < groups; k++) v[k] = ((float *)t[2 + 2 * k + i]->data)[e];
                    if (!strcmp(op, "Adagrad")) ref_adagrad(oa, R, T, v[0], v[1], v[2], &want[0][e], &want[1][e]);
                    else if (!strcmp(op, "Adam"))
                        ref_adam(oa, R, T, v[0], v[1], v[2], v[3], &want[0][e], &want[1][e], &want[2][e]);
                    else ref_momentum(oa, R, T, v[0], v[1], v[2], &want[0][e], &want[1][e]);
                }
                for (int k = 0; k < groups - 1; k++) {
                    char w[96];
                    snprintf(w, sizeof w, "%s%s T=%lld: output group %d, tensor %d", op,
                             oa->nesterov ? " (nesterov)" : "", (long long)T, k, i);
                    check_close(w, devs[dv], outs[k * 2 + i], t[2 + i], want[k]);
                    free(want[k]);
                }
            }
            free_outs(outs, n_out);
        }
        rlx_tensor_destroy(t[1]);
    }
    rlx_tensor_destroy(t[0]);
    for (int j = 2; j < n_in; j++) rlx_tensor_destroy(t[j]);
    rlx_model_destroy(m);
}

/* A training step: loss = ReduceSum((x W - t)^2), its Gradient by W, and a
 * Momentum update of W fed by it (written before the Gradient). */
static void test_training_step(void) {
    Onnx__GraphProto *g = graph_new("step");
    graph_input(g, vi_new("R", F32, 0, NULL, NULL));
    graph_input(g, vi_new("T", I64, 0, NULL, NULL));
    const char *vec[4] = { "W", "x", "t", "V" };
    for (int i = 0; i < 4; i++) input(g, vec[i], 1, (const int64_t[]){ 4 });
    float two = 2.0f;
    graph_init(g, tensor_floats("two", 0, NULL, &two, 1));
    Onnx__NodeProto *n = node(g, "Momentum", "momentum", "R,T,W,gW,V", "W_new,V_new");
    n->domain = S("ai.onnx.preview.training");
    node_attr(n, attr_f("alpha", 0.9f));
    node_attr(n, attr_f("beta", 0.5f));
    node_attr(n, attr_f("norm_coefficient", 0.01f));
    node_attr(n, attr_s("mode", "standard"));
    node(g, "Mul", "mul", "x,W", "p");
    node(g, "Sub", "sub", "p,t", "e");
    node(g, "Pow", "sq", "e,two", "e2");
    node_attr(node(g, "ReduceSum", "loss", "e2", "L"), attr_i("keepdims", 0));
    gradient(g, "grad_W", "W", "x,t", "L", "W,x,t", "gW");
    output(g, "W_new");
    output(g, "V_new");
    output(g, "L");
    rlx_model *m = NULL;
    CHECK_OK(load(g, 13, &m));
    if (!m) return;
    rlx_tensor *ins[6];
    int64_t T = 2;
    ins[0] = test_tensor_random(RLX_DTYPE_F32, 0, NULL, 0.05f, 0.2f);
    ins[1] = test_tensor_i64(0, NULL, &T);
    for (int i = 0; i < 4; i++) ins[2 + i] = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 4 }, -1, 1);
    const char *names[6] = { "R", "T", "W", "x", "t", "V" };
    size_t n_out;
    rlx_tensor **outs = run(m, "cpu", 6, names, ins, &n_out);
    if (outs && n_out == 3) {
        opt_attrs oa = { .nc = 0.01f, .alpha = 0.9f, .beta = 0.5f };
        double wx[4], wv[4], R = ((float *)ins[0]->data)[0];
        for (int i = 0; i < 4; i++) {
            double W = ((float *)ins[2]->data)[i], x = ((float *)ins[3]->data)[i], tt = ((float *)ins[4]->data)[i];
            double V = ((float *)ins[5]->data)[i];
            ref_momentum(&oa, R, T, W, 2 * (x * W - tt) * x, V, &wx[i], &wv[i]);
        }
        check_close("training step: W_new", "cpu", outs[0], ins[2], wx);
        check_close("training step: V_new", "cpu", outs[1], ins[2], wv);
    }
    if (outs) free_outs(outs, n_out);
    for (int i = 0; i < 6; i++) rlx_tensor_destroy(ins[i]);
    rlx_model_destroy(m);
}

/* ================================================================ errors */

static void test_errors(void) {
    rlx_model *m = NULL;
    /* Cos is on the path: named with the Gradient node */
    Onnx__GraphProto *g = graph_new("cos");
    input(g, "a", 1, (const int64_t[]){ 3 });
    node(g, "Cos", "the_cos", "a", "c");
    node(g, "Mul", "mul", "c,a", "y");
    gradient(g, "grad_cos", "a", NULL, "y", "a", "ga");
    output(g, "ga");
    CHECK_FAILS(load(g, 13, &m), RLX_ERR_UNSUPPORTED, "node 'grad_cos' (ai.onnx.preview.training.Gradient): cannot "
                                                      "differentiate through node 'the_cos' (Cos)");
    CHECK(m == NULL);

    /* Cos off the path (it only feeds zs' side) is fine: c is constant here */
    g = graph_new("cos_zs");
    input(g, "a", 1, (const int64_t[]){ 3 });
    input(g, "b", 1, (const int64_t[]){ 3 });
    node(g, "Cos", "the_cos", "b", "c");
    node(g, "Mul", "mul", "c,a", "y");
    gradient(g, "grad_ok", "a", "b", "y", "a,b", "ga");
    output(g, "ga");
    CHECK_OK(load(g, 13, &m));
    rlx_model_destroy(m);
    m = NULL;

    /* y names no value */
    g = graph_new("bad_y");
    input(g, "a", 1, (const int64_t[]){ 3 });
    node(g, "Neg", "neg", "a", "y");
    gradient(g, "grad_bad", "a", NULL, "nope", "a", "ga");
    output(g, "ga");
    CHECK_FAILS(load(g, 13, &m), RLX_ERR_INVALID_MODEL, "'nope' (in attribute y) is not a value");

    /* input count differs from xs + zs */
    g = graph_new("bad_in");
    input(g, "a", 1, (const int64_t[]){ 3 });
    node(g, "Neg", "neg", "a", "y");
    gradient(g, "grad_in", "a", NULL, "y", "a,a", "ga");
    output(g, "ga");
    CHECK_FAILS(load(g, 13, &m), RLX_ERR_INVALID_MODEL, "has 2 inputs, but xs and zs name 1 tensors");

    /* two Gradient nodes that need each other's output */
    g = graph_new("cycle");
    input(g, "a", 1, (const int64_t[]){ 3 });
    node(g, "Mul", "m1", "a,g2", "y1");
    node(g, "Mul", "m2", "a,g1", "y2");
    gradient(g, "gr1", "a", NULL, "y1", "a", "g1");
    gradient(g, "gr2", "a", NULL, "y2", "a", "g2");
    output(g, "g1");
    CHECK_FAILS(load(g, 13, &m), RLX_ERR_INVALID_MODEL, "which is defined by no node");
    CHECK(m == NULL);
}

int main(void) {
    test_seed(test_seed_from_env());
    bool gpu = test_have_gpu();
    if (!gpu) fprintf(stderr, "no GPU adapter: CPU only\n");
    test_broadcast(gpu);
    test_matmul(gpu);
    test_gemm(gpu);
    test_dynamic();
    test_dynamic_bound();
    test_at_other_inputs();
    test_second_order();
    const opt_attrs adagrad = { .nc = 0.01, .eps = 1e-5, .decay = 0.1 };
    const opt_attrs adam = { .nc = 0.01, .eps = 1e-3, .alpha = 0.9, .beta = 0.8, .ncp = 0.05 };
    const opt_attrs mom = { .nc = 0.02, .alpha = 0.9, .beta = 0.3 }, nes = { .nc = 0.02, .alpha = 0.9, .beta = 0.3, .nesterov = true };
    test_optimizer("Adagrad", &adagrad, gpu);
    test_optimizer("Adam", &adam, gpu);
    test_optimizer("Momentum", &mom, gpu);
    test_optimizer("Momentum", &nes, gpu);
    test_training_step();
    test_errors();
    TEST_MAIN_END();
}
