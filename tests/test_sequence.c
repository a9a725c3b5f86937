/* ONNX sequences resolved while importing (src/import/onnx_sequence.c),
 * through models written here with the protobuf-c builders and loaded with
 * rlx_model_load_onnx_memory:
 *  - SequenceEmpty/Construct/Insert/Erase/At/Length with positions from
 *    initializers, Constant nodes (int64 and int32), negative and default
 *    positions; elements used as graph outputs and as inputs of other ops;
 *  - SplitToSequence without split (keepdims 1 and 0), with a scalar split
 *    (last piece shorter), a 1-D split, a run-time split of static length
 *    (SequenceLength only at opset 12; the pieces at opset 18), and more
 *    pieces than one Split node takes (grouped); ConcatFromSequence with and
 *    without new_axis; at opsets 12 and 18 (attribute and input forms of
 *    Split, Squeeze, Unsqueeze);
 *  - SequenceMap-17 with a sequence and a tensor input, a body initializer,
 *    an outer value read by the body and two outputs;
 *  - what cannot be resolved while importing fails with
 *    RLX_ERR_UNSUPPORTED (or RLX_ERR_INVALID_MODEL for invalid models) and a
 *    message naming the node and op.
 * Expected values are the inputs themselves (sequence ops move tensors;
 * compared exactly) or computed here in double (SequenceMap arithmetic,
 * tolerance 1e-6). On the CPU, and on the GPU when there is one. */
#include "test.h"

#include "base/status.h"
#include "import/onnx.h"
#include "onnx_build.h"

enum {
    F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    I32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64
};

/* ================================================================ builders */

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *ins, const char *outs) {
    Onnx__NodeProto *n = node_new(op, name, ins, outs);
    graph_node(g, n);
    return n;
}

static void input(Onnx__GraphProto *g, const char *name, int elem, int rank, const int64_t *dims) {
    graph_input(g, vi_new(name, elem, rank, dims, NULL));
}

/* A graph output without a declared type (inference gives it). */
static void output(Onnx__GraphProto *g, const char *name) { graph_output(g, vi_new(name, -1, -1, NULL, NULL)); }

/* A scalar int64 initializer. */
static void init_pos(Onnx__GraphProto *g, const char *name, int64_t v) {
    graph_init(g, tensor_raw(name, I64, 0, NULL, &v, sizeof v));
}

/* A Constant node holding a scalar: int64 (value_int) or int32 (value). */
static void const_pos(Onnx__GraphProto *g, const char *name, int64_t v, bool i32) {
    Onnx__NodeProto *n = node(g, "Constant", NULL, NULL, name);
    if (!i32) {
        node_attr(n, attr_i("value_int", v));
    } else {
        int32_t w = (int32_t)v;
        node_attr(n, attr_t("value", tensor_raw("", I32, 0, NULL, &w, sizeof w)));
    }
}

/* A value info of type sequence(tensor(float)). */
static Onnx__ValueInfoProto *vi_seq(const char *name) {
    Onnx__ValueInfoProto *vi = vi_new(name, F32, -1, NULL, NULL);
    Onnx__TypeProto *elem = vi->type;
    Onnx__TypeProto *tp = xcalloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Sequence *sq = xcalloc(1, sizeof *sq);
    onnx__type_proto__sequence__init(sq);
    sq->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = sq;
    vi->type = tp;
    return vi;
}

static rlx_status load(Onnx__GraphProto *g, int64_t opset, rlx_model **m) {
    size_t size;
    uint8_t *buf = model_pack_free(model_new(opset, g), &size);
    rlx_status st = rlx_model_load_onnx_memory(buf, size, NULL, m);
    free(buf);
    return st;
}

/* Loads, runs on `device` with the named inputs; NULL on failure (a CHECK
 * failure already counted). */
static rlx_tensor **run(Onnx__GraphProto *g, int64_t opset, const char *device, size_t n_in, const char *const *names,
                        const rlx_tensor *const *ins, size_t *n_out) {
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_tensor **out = NULL;
    *n_out = 0;
    CHECK_OK(load(g, opset, &m));
    rlx_session_options o = { .device = device };
    if (m) CHECK_OK(rlx_session_create(m, &o, &s));
    if (s) CHECK_OK(rlx_session_run(s, n_in, names, ins, &out, n_out));
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return out;
}

/* ================================================================ checks */

/* a holds the rows x cols block of x (rank 2) that starts at (r0, c0). */
static bool same_block(const rlx_tensor *a, const rlx_tensor *x, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
    if (!a || a->dtype != RLX_DTYPE_F32 || rlx_tensor_numel(a) != (size_t)(rows * cols)) return false;
    const float *pa = a->data, *px = x->data;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if (pa[i * cols + j] != px[(r0 + i) * x->dims[1] + c0 + j]) return false;
    return true;
}

static bool same_tensor(const rlx_tensor *a, const rlx_tensor *b) {
    if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return memcmp(a->data, b->data, a->nbytes) == 0;
}

static bool is_i64_scalar(const rlx_tensor *t, int64_t v) {
    return t && t->dtype == RLX_DTYPE_I64 && t->rank == 0 && *(const int64_t *)t->data == v;
}

static bool has_dims(const rlx_tensor *t, int rank, const int64_t *dims) {
    if (!t || t->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i]) return false;
    return true;
}

/* ================================================================ tests */

/* Insert/Erase/At/Length/Construct. With S3 = [Y, Z, X]:
 *   S1 = Insert([], X) = [X]; S2 = Insert(S1, Y, 0) = [Y, X];
 *   S3 = Insert(S2, Z, -1) = [Y, Z, X] (before the last);
 *   S5 = Erase(S3) = [Y, Z] (the last); S6 = Erase(S3, -3) = [Z, X];
 *   S7 = Construct(Z, X, Y), S8 = Insert(S7, Y, 3) = [Z, X, Y, Y].
 * Outputs: At(S3,0)=Y, At(S3,-1)=X, At(S5,1)=Z (int32 position),
 * At(S6,0)=Z, Length(S3)=3, Length([])=0, Add(At(S6,1), At(S5,0)) = X+Y,
 * At(S8,-2)=Y, Length(S8)=4. */
static void test_list_ops(const char *device) {
    int64_t d[2] = { 2, 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2), *y = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2),
               *z = test_tensor_random(RLX_DTYPE_F32, 2, d, -2, 2);
    Onnx__GraphProto *g = graph_new("list_ops");
    input(g, "X", F32, 2, d);
    input(g, "Y", F32, 2, d);
    input(g, "Z", F32, 2, d);
    init_pos(g, "p0", 0);
    init_pos(g, "pm1", -1);
    const_pos(g, "pm3", -3, false);
    const_pos(g, "p1_i32", 1, true);
    const_pos(g, "p3", 3, false);
    const_pos(g, "pm2", -2, true);
    node(g, "SequenceEmpty", "empty", NULL, "S0");
    node(g, "SequenceInsert", "ins_x", "S0,X", "S1");
    node(g, "SequenceInsert", "ins_y", "S1,Y,p0", "S2");
    node(g, "SequenceInsert", "ins_z", "S2,Z,pm1", "S3");
    node(g, "SequenceErase", "erase_last", "S3", "S5");
    node(g, "SequenceErase", "erase_first", "S3,pm3", "S6");
    node(g, "SequenceConstruct", "make", "Z,X,Y", "S7");
    node(g, "SequenceInsert", "ins_end", "S7,Y,p3", "S8");
    node(g, "SequenceAt", "at0", "S3,p0", "o_y");
    node(g, "SequenceAt", "at_last", "S3,pm1", "o_x");
    node(g, "SequenceAt", "at1", "S5,p1_i32", "o_z");
    node(g, "SequenceAt", "at_first", "S6,p0", "o_z2");
    node(g, "SequenceLength", "len3", "S3", "o_len3");
    node(g, "SequenceLength", "len0", "S0", "o_len0");
    node(g, "SequenceAt", "at_x", "S6,p1_i32", "t_x");
    node(g, "SequenceAt", "at_y", "S5,p0", "t_y");
    node(g, "Add", "add", "t_x,t_y", "o_sum");
    node(g, "SequenceAt", "at_m2", "S8,pm2", "o_y2");
    node(g, "SequenceLength", "len4", "S8", "o_len4");
    const char *outs[] = { "o_y", "o_x", "o_z", "o_z2", "o_len3", "o_len0", "o_sum", "o_y2", "o_len4" };
    for (size_t i = 0; i < RLX_ARRAY_LEN(outs); i++) output(g, outs[i]);
    size_t n = 0;
    rlx_tensor **o = run(g, 12, device, 3, (const char *[]){ "X", "Y", "Z" }, (const rlx_tensor *[]){ x, y, z }, &n);
    CHECK_MSG(n == RLX_ARRAY_LEN(outs), "%s: %zu outputs", device, n);
    if (o && n == RLX_ARRAY_LEN(outs)) {
        CHECK_MSG(same_tensor(o[0], y), "%s: At(S3, 0) is not Y", device);
        CHECK_MSG(same_tensor(o[1], x), "%s: At(S3, -1) is not X", device);
        CHECK_MSG(same_tensor(o[2], z), "%s: At(S5, 1) is not Z", device);
        CHECK_MSG(same_tensor(o[3], z), "%s: At(S6, 0) is not Z", device);
        CHECK_MSG(is_i64_scalar(o[4], 3), "%s: Length(S3) is not 3", device);
        CHECK_MSG(is_i64_scalar(o[5], 0), "%s: Length([]) is not 0", device);
        const float *px = x->data, *py = y->data;
        bool ok = has_dims(o[6], 2, d);
        /* f32 addition of the same two numbers: exact */
        for (size_t i = 0; ok && i < 6; i++) ok = ((const float *)o[6]->data)[i] == px[i] + py[i];
        CHECK_MSG(ok, "%s: Add(At(S6, 1), At(S5, 0)) is not X + Y", device);
        CHECK_MSG(same_tensor(o[7], y), "%s: At(S8, -2) is not Y", device);
        CHECK_MSG(is_i64_scalar(o[8], 4), "%s: Length(S8) is not 4", device);
    }
    test_free_outputs(o, (int)n);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(z);
}

/* SplitToSequence + ConcatFromSequence on X [4, 6] at `opset`:
 *   A = Split(X, axis 1), pieces [4,1]: Concat(A, axis 1) = X, At(A, 4) =
 *       column 4, Length 6;
 *   B = Split(X, axis 0, keepdims 0), pieces [6]: Concat(B, axis -1,
 *       new_axis) = X^T [6, 4]; Concat(B, axis 0, new_axis) = X;
 *   C = Split(X, 4, axis 1): pieces [4,4] and [4,2]; At(C, -1) = columns 4..5;
 *   D = Split(X, [1, 3, 2], axis -1): At(D, 1) = columns 1..3;
 *   E = Split(X, splits) with splits a graph input [3]: Length 3; at opset
 *       18 also Concat(E, axis 1) = X (Split with run-time sizes). */
static void test_split_concat(const char *device, int64_t opset) {
    int64_t d[2] = { 4, 6 }, three = 3;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -3, 3);
    int64_t sv[3] = { 2, 1, 3 };
    rlx_tensor *splits = test_tensor_i64(1, &three, sv);
    Onnx__GraphProto *g = graph_new("split_concat");
    input(g, "X", F32, 2, d);
    input(g, "splits", I64, 1, &three);
    init_pos(g, "p4", 4);
    init_pos(g, "p1", 1);
    init_pos(g, "pm1", -1);
    init_pos(g, "k4", 4);
    int64_t sizes[3] = { 1, 3, 2 };
    graph_init(g, tensor_raw("sizes", I64, 1, &three, sizes, sizeof sizes));
    node_attr(node(g, "SplitToSequence", "split_cols", "X", "A"), attr_i("axis", 1));
    node_attr(node(g, "ConcatFromSequence", "cat_a", "A", "o_a"), attr_i("axis", 1));
    node(g, "SequenceAt", "at_a", "A,p4", "o_col4");
    node(g, "SequenceLength", "len_a", "A", "o_len6");
    Onnx__NodeProto *n = node(g, "SplitToSequence", "split_rows", "X", "B");
    node_attr(n, attr_i("axis", 0));
    node_attr(n, attr_i("keepdims", 0));
    n = node(g, "ConcatFromSequence", "cat_bt", "B", "o_xt");
    node_attr(n, attr_i("axis", -1));
    node_attr(n, attr_i("new_axis", 1));
    n = node(g, "ConcatFromSequence", "cat_b", "B", "o_x");
    node_attr(n, attr_i("axis", 0));
    node_attr(n, attr_i("new_axis", 1));
    node_attr(node(g, "SplitToSequence", "split_k", "X,k4", "C"), attr_i("axis", 1));
    node(g, "SequenceAt", "at_c", "C,pm1", "o_c_last");
    node(g, "SequenceLength", "len_c", "C", "o_len2");
    node_attr(node(g, "SplitToSequence", "split_sizes", "X,sizes", "D"), attr_i("axis", -1));
    node(g, "SequenceAt", "at_d", "D,p1", "o_d1");
    node_attr(node(g, "SplitToSequence", "split_rt", "X,splits", "E"), attr_i("axis", 1));
    node(g, "SequenceLength", "len_e", "E", "o_len3");
    if (opset >= 13) node_attr(node(g, "ConcatFromSequence", "cat_e", "E", "o_e"), attr_i("axis", 1));
    const char *outs[] = { "o_a", "o_col4", "o_len6", "o_xt", "o_x", "o_c_last", "o_len2", "o_d1", "o_len3", "o_e" };
    size_t n_outs = RLX_ARRAY_LEN(outs) - (opset >= 13 ? 0 : 1);
    for (size_t i = 0; i < n_outs; i++) output(g, outs[i]);
    size_t no = 0;
    rlx_tensor **o = run(g, opset, device, 2, (const char *[]){ "X", "splits" },
                         (const rlx_tensor *[]){ x, splits }, &no);
    CHECK_MSG(no == n_outs, "%s opset %lld: %zu outputs", device, (long long)opset, no);
    if (o && no == n_outs) {
        const float *px = x->data;
        CHECK_MSG(same_tensor(o[0], x), "%s opset %lld: Concat(Split(X, axis 1)) is not X", device, (long long)opset);
        CHECK_MSG(has_dims(o[1], 2, (int64_t[]){ 4, 1 }) && same_block(o[1], x, 0, 4, 4, 1),
                  "%s opset %lld: piece 4 is not column 4", device, (long long)opset);
        CHECK(is_i64_scalar(o[2], 6));
        bool ok = has_dims(o[3], 2, (int64_t[]){ 6, 4 });
        for (int i = 0; ok && i < 6; i++)
            for (int j = 0; ok && j < 4; j++) ok = ((const float *)o[3]->data)[i * 4 + j] == px[j * 6 + i];
        CHECK_MSG(ok, "%s opset %lld: ConcatFromSequence(new_axis, axis -1) is not X^T", device, (long long)opset);
        CHECK_MSG(same_tensor(o[4], x), "%s opset %lld: ConcatFromSequence(new_axis, axis 0) is not X", device,
                  (long long)opset);
        CHECK_MSG(has_dims(o[5], 2, (int64_t[]){ 4, 2 }) && same_block(o[5], x, 0, 4, 4, 2),
                  "%s opset %lld: the last piece of a split by 4 is not columns 4..5", device, (long long)opset);
        CHECK(is_i64_scalar(o[6], 2));
        CHECK_MSG(has_dims(o[7], 2, (int64_t[]){ 4, 3 }) && same_block(o[7], x, 0, 1, 4, 3),
                  "%s opset %lld: piece 1 of sizes [1, 3, 2] is not columns 1..3", device, (long long)opset);
        CHECK(is_i64_scalar(o[8], 3));
        if (opset >= 13)
            CHECK_MSG(same_tensor(o[9], x), "%s opset %lld: Concat(Split(X, run-time sizes)) is not X", device,
                      (long long)opset);
    }
    test_free_outputs(o, (int)no);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(splits);
}

/* 300 pieces (more than one Split node takes): X [300] split into scalars
 * (keepdims 0) and put back with new_axis; At(S, 299) is the last. */
static void test_long_split(const char *device) {
    int64_t d = 300;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, &d, -1, 1);
    Onnx__GraphProto *g = graph_new("long_split");
    input(g, "X", F32, 1, &d);
    init_pos(g, "p", 299);
    Onnx__NodeProto *n = node(g, "SplitToSequence", "split", "X", "S");
    node_attr(n, attr_i("keepdims", 0));
    n = node(g, "ConcatFromSequence", "cat", "S", "o_x");
    node_attr(n, attr_i("axis", 0));
    node_attr(n, attr_i("new_axis", 1));
    node(g, "SequenceAt", "at", "S,p", "o_last");
    output(g, "o_x");
    output(g, "o_last");
    size_t no = 0;
    rlx_tensor **o = run(g, 18, device, 1, (const char *[]){ "X" }, (const rlx_tensor *[]){ x }, &no);
    if (o && no == 2) {
        CHECK_MSG(same_tensor(o[0], x), "%s: 300 pieces put back are not X", device);
        CHECK_MSG(o[1]->rank == 0 && *(const float *)o[1]->data == ((const float *)x->data)[299],
                  "%s: piece 299 is not X[299]", device);
    } else {
        CHECK_MSG(0, "%s: %zu outputs", device, no);
    }
    test_free_outputs(o, (int)no);
    rlx_tensor_destroy(x);
}

/* SequenceMap-17: S = rows of X [3, 4] (keepdims 0), B [4] a tensor input,
 * W [4] an outer value read by the body, c = 2 a body initializer:
 * body(a, b) = ((a + b) * c * W, -a); the outputs concatenated with
 * new_axis give (X + B) * 2 * W and -X. Reference in double, 1e-6. */
static void test_sequence_map(const char *device) {
    int64_t dx[2] = { 3, 4 }, dv = 4;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, dx, -2, 2), *b = test_tensor_random(RLX_DTYPE_F32, 1, &dv, -2, 2),
               *w = test_tensor_random(RLX_DTYPE_F32, 1, &dv, 0.5f, 1.5f);
    Onnx__GraphProto *body = graph_new("body");
    input(body, "a", F32, 1, &dv);
    input(body, "b", F32, 1, &dv);
    float two = 2.0f;
    graph_init(body, tensor_raw("c", F32, 0, NULL, &two, sizeof two));
    node(body, "Add", "add", "a,b", "s");
    node(body, "Mul", NULL, "s,c", "s2");
    node(body, "Mul", "mul_w", "s2,W", "r0");
    node(body, "Neg", "neg", "a", "r1");
    output(body, "r0");
    output(body, "r1");

    Onnx__GraphProto *g = graph_new("seq_map");
    input(g, "X", F32, 2, dx);
    input(g, "B", F32, 1, &dv);
    input(g, "W", F32, 1, &dv);
    Onnx__NodeProto *n = node(g, "SplitToSequence", "rows", "X", "S");
    node_attr(n, attr_i("keepdims", 0));
    node_attr(node(g, "SequenceMap", "map", "S,B", "R0,R1"), attr_g("body", body));
    for (int k = 0; k < 2; k++) {
        n = node(g, "ConcatFromSequence", k ? "cat1" : "cat0", k ? "R1" : "R0", k ? "o1" : "o0");
        node_attr(n, attr_i("axis", 0));
        node_attr(n, attr_i("new_axis", 1));
    }
    node(g, "SequenceLength", "len", "R1", "o_len");
    output(g, "o0");
    output(g, "o1");
    output(g, "o_len");
    size_t no = 0;
    rlx_tensor **o = run(g, 17, device, 3, (const char *[]){ "X", "B", "W" }, (const rlx_tensor *[]){ x, b, w }, &no);
    if (o && no == 3) {
        const float *px = x->data, *pb = b->data, *pw = w->data;
        double worst = has_dims(o[0], 2, dx) && has_dims(o[1], 2, dx) ? 0 : 1e9;
        for (int i = 0; worst < 1 && i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double r0 = ((double)px[i * 4 + j] + pb[j]) * 2.0 * pw[j], r1 = -(double)px[i * 4 + j];
                double e0 = fabs(((const float *)o[0]->data)[i * 4 + j] - r0);
                double e1 = fabs(((const float *)o[1]->data)[i * 4 + j] - r1);
                if (e0 > worst) worst = e0;
                if (e1 > worst) worst = e1;
            }
        CHECK_MSG(worst <= 1e-6, "%s: SequenceMap max abs error %g (tolerance 1e-6)", device, worst);
        CHECK(is_i64_scalar(o[2], 3));
    } else {
        CHECK_MSG(0, "%s: %zu outputs", device, no);
    }
    test_free_outputs(o, (int)no);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(w);
}

/* Identity of a sequence (opset 14 and later) is the same sequence. */
static void test_identity(const char *device) {
    int64_t d[1] = { 5 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1), *y = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1);
    Onnx__GraphProto *g = graph_new("identity");
    input(g, "X", F32, 1, d);
    input(g, "Y", F32, 1, d);
    init_pos(g, "p", 1);
    node(g, "SequenceConstruct", "make", "X,Y", "S");
    node(g, "Identity", "copy", "S", "T");
    node(g, "SequenceAt", "at", "T,p", "o");
    output(g, "o");
    size_t no = 0;
    rlx_tensor **o = run(g, 16, device, 2, (const char *[]){ "X", "Y" }, (const rlx_tensor *[]){ x, y }, &no);
    CHECK_MSG(o && no == 1 && same_tensor(o[0], y), "%s: At(Identity([X, Y]), 1) is not Y", device);
    test_free_outputs(o, (int)no);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(y);
}

/* ================================================================ errors */

/* A graph with X [2, 3] and S = [X, X] made by node 'make'. */
static Onnx__GraphProto *err_graph(void) {
    int64_t d[2] = { 2, 3 };
    Onnx__GraphProto *g = graph_new("err");
    input(g, "X", F32, 2, d);
    node(g, "SequenceConstruct", "make", "X,X", "S");
    return g;
}

static void expect_load_fails(Onnx__GraphProto *g, int64_t opset, rlx_status status, const char *a, const char *b,
                              const char *what) {
    rlx_model *m = NULL;
    rlx_status st = load(g, opset, &m);
    const char *msg = rlx_last_error();
    CHECK_MSG(st == status && strstr(msg, a) && (!b || strstr(msg, b)), "%s: got %s: %s", what, rlx_status_name(st),
              msg);
    rlx_model_destroy(m);
}

static void test_errors(void) {
    int64_t one = 1, three = 3;
    /* a position computed at run time */
    Onnx__GraphProto *g = err_graph();
    input(g, "p", I64, 0, NULL);
    node(g, "SequenceAt", "at_rt", "S,p", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'at_rt' (SequenceAt)", "run time", "run-time position");

    /* a position computed by a node (not a constant while importing) */
    g = err_graph();
    init_pos(g, "one", 1);
    node(g, "Add", "add_pos", "one,one", "p");
    node(g, "SequenceErase", "erase_rt", "S,p", "T");
    node(g, "SequenceLength", "len", "T", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'erase_rt' (SequenceErase)", "position 'p'",
                      "computed position");

    /* a sequence as graph output, typed and untyped */
    g = err_graph();
    graph_output(g, vi_seq("S"));
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "graph output 'S'", "node 'make' (SequenceConstruct)",
                      "typed sequence output");
    g = err_graph();
    output(g, "S");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "graph output 'S' is a sequence",
                      "node 'make' (SequenceConstruct)", "untyped sequence output");

    /* a sequence as graph input */
    g = graph_new("seq_in");
    graph_input(g, vi_seq("S"));
    node(g, "SequenceLength", "len", "S", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "graph input 'S' has a sequence type", NULL, "sequence input");

    /* a sequence into an If branch */
    g = err_graph();
    input(g, "c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
    init_pos(g, "p0", 0);
    Onnx__GraphProto *then_g = graph_new("then"), *else_g = graph_new("else");
    node(then_g, "SequenceAt", "at_inner", "S,p0", "t");
    output(then_g, "t");
    node(else_g, "Identity", "id_inner", "X", "e");
    output(else_g, "e");
    Onnx__NodeProto *n = node(g, "If", "branch", "c", "y");
    node_attr(n, attr_g("then_branch", then_g));
    node_attr(n, attr_g("else_branch", else_g));
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'at_inner' (SequenceAt)", "enclosing graph",
                      "sequence into a subgraph");

    /* a sequence as input of another op, in order and out of order */
    g = err_graph();
    node(g, "Relu", "relu", "S", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'relu' (Relu)", "is a sequence", "sequence into Relu");
    g = graph_new("late");
    input(g, "X", F32, 1, &three);
    node(g, "Relu", "relu_early", "S", "y");
    node(g, "SequenceConstruct", "make_late", "X", "S");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'relu_early' (Relu)", "make_late", "sequence made later");

    /* positions out of range, and what the spec forbids */
    g = err_graph();
    init_pos(g, "p2", 2);
    node(g, "SequenceAt", "at_oob", "S,p2", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_INVALID_MODEL, "node 'at_oob' (SequenceAt)", "out of range", "position 2 of 2");
    g = err_graph();
    init_pos(g, "pm3", -3);
    node(g, "SequenceInsert", "ins_oob", "S,X,pm3", "T");
    node(g, "SequenceLength", "len", "T", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_INVALID_MODEL, "node 'ins_oob' (SequenceInsert)", "out of range",
                      "insert at -3 of 2");
    g = graph_new("empty_cat");
    node(g, "SequenceEmpty", "empty", NULL, "S");
    node_attr(node(g, "ConcatFromSequence", "cat_empty", "S", "y"), attr_i("axis", 0));
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_INVALID_MODEL, "node 'cat_empty' (ConcatFromSequence)", "empty",
                      "concat of an empty sequence");

    /* SplitToSequence whose piece count is not known while importing */
    g = graph_new("dyn_split");
    graph_input(g, vi_new("X", F32, 1, (int64_t[]){ 0 }, (const char *const[]){ "n" }));
    node(g, "SplitToSequence", "split_dyn", "X", "S");
    node(g, "SequenceLength", "len", "S", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'split_dyn' (SplitToSequence)", "run time",
                      "split of a dynamic axis");

    /* pieces of run-time sizes that no node computes (Split before 13) */
    g = graph_new("rt_pieces");
    input(g, "X", F32, 1, &three);
    input(g, "splits", I64, 1, &one);
    init_pos(g, "p0", 0);
    node(g, "SplitToSequence", "split_rt", "X,splits", "S");
    node(g, "SequenceAt", "at_piece", "S,p0", "y");
    output(g, "y");
    expect_load_fails(g, 12, RLX_ERR_UNSUPPORTED, "node 'at_piece' (SequenceAt)", "opset 13",
                      "run-time pieces at opset 12");

    /* a SequenceMap body with a subgraph */
    g = err_graph();
    Onnx__GraphProto *body = graph_new("body"), *inner = graph_new("inner");
    input(body, "a", F32, 2, (int64_t[]){ 2, 3 });
    node(inner, "Identity", NULL, "a", "i");
    output(inner, "i");
    node_attr(node(body, "Loop", "loop", ",", "r"), attr_g("body", inner));
    output(body, "r");
    node_attr(node(g, "SequenceMap", "map", "S", "R"), attr_g("body", body));
    node(g, "SequenceLength", "len", "R", "y");
    output(g, "y");
    expect_load_fails(g, 17, RLX_ERR_UNSUPPORTED, "node 'map' (SequenceMap)", "nested subgraphs",
                      "SequenceMap body with a subgraph");
}

int main(void) {
    test_seed(test_seed_from_env());
    bool gpu = test_have_gpu();
    if (!gpu) fprintf(stderr, "no GPU adapter: CPU only\n");
    const char *devices[2] = { "cpu", "gpu" };
    for (int d = 0; d < (gpu ? 2 : 1); d++) {
        test_list_ops(devices[d]);
        test_split_concat(devices[d], 12);
        test_split_concat(devices[d], 18);
        test_sequence_map(devices[d]);
        test_identity(devices[d]);
    }
    test_long_split("cpu");
    test_errors();
    TEST_MAIN_END();
}
