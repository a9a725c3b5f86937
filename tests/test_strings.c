/* String tensors (RLX_DTYPE_STRING) and StringNormalizer-10.
 *
 * StringNormalizer runs on random words (mixed case, a few UTF-8 bytes)
 * against an independent computation here (per element: a stopword test
 * with <ctype.h> tolower in the C locale, then toupper/tolower on ASCII
 * letters). Strings move through Reshape, Concat (with a constant), Gather,
 * Transpose, Slice and Identity, whose expected order is worked out from
 * the indices. Also: a graph output that is a graph input, outputs that
 * outlive the caller's strings, later runs and the session, string
 * initializers and Constant value_strings from an ONNX file, and refusals
 * (strings into Add, a NULL element). Each graph runs on the CPU and, when
 * there is one, on the GPU (whose dispatch report must show the string
 * nodes on the CPU). Strings compare exactly (no tolerance). */
#include <ctype.h>

#include "onnx_build.h"
#include "test.h"

/* ------------------------------------------------------------ helpers */

#define MAXW 24

typedef struct words {
    char buf[MAXW][16];
    const char *p[MAXW];
    int n;
} words;

/* n random words of 1..6 characters from mixed-case letters and digits;
 * every fourth word gets a UTF-8 "é" / "É" (two bytes each) */
static void random_words(words *w, int n) {
    static const char alpha[] = "aAbBcCdDeEzZ09";
    w->n = n;
    for (int i = 0; i < n; i++) {
        int len = 1 + (int)(test_rand_u64() % 6), o = 0;
        for (int j = 0; j < len; j++) w->buf[i][o++] = alpha[test_rand_u64() % (sizeof alpha - 1)];
        if (i % 4 == 3) {
            w->buf[i][o++] = (char)0xC3;
            w->buf[i][o++] = (char)((test_rand_u64() & 1) ? 0xA9 : 0x89);
        }
        w->buf[i][o] = 0;
        w->p[i] = w->buf[i];
    }
}

static bool eq_ci(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return false;
    for (size_t i = 0; i < la; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x < 128 && y < 128) {
            if (tolower(x) != tolower(y)) return false;
        } else if (x != y) {
            return false;
        }
    }
    return true;
}

/* The expected StringNormalizer output: kept words, case-mapped, into out
 * (count returned; 0 means the one empty string). */
static int expect_normalize(const words *x, const char *const *stop, int n_stop, bool cs, int mode,
                            char out[][16]) {
    int k = 0;
    for (int i = 0; i < x->n; i++) {
        bool drop = false;
        for (int j = 0; j < n_stop; j++)
            if (cs ? strcmp(x->p[i], stop[j]) == 0 : eq_ci(x->p[i], stop[j])) drop = true;
        if (drop) continue;
        size_t len = strlen(x->p[i]);
        for (size_t c = 0; c <= len; c++) {
            unsigned char ch = (unsigned char)x->p[i][c];
            if (ch < 128 && mode == 1) ch = (unsigned char)tolower(ch);
            if (ch < 128 && mode == 2) ch = (unsigned char)toupper(ch);
            out[k][c] = (char)ch;
        }
        k++;
    }
    return k;
}

static rlx_tensor *strings_tensor(int rank, const int64_t *dims, const char *const *s) {
    rlx_tensor *t = NULL;
    CHECK_OK(rlx_tensor_create_strings(dims, rank, s, &t));
    return t;
}

/* got: a string tensor of shape (rank, dims) holding want[0..n) */
static void check_strings(const rlx_tensor *got, int rank, const int64_t *dims, const char *const *want,
                          const char *what) {
    CHECK_MSG(got && got->dtype == RLX_DTYPE_STRING, "%s: not a string tensor", what);
    if (!got || got->dtype != RLX_DTYPE_STRING) return;
    CHECK_MSG(got->rank == rank, "%s: rank %d, expected %d", what, got->rank, rank);
    if (got->rank != rank) return;
    for (int i = 0; i < rank; i++) CHECK_MSG(got->dims[i] == dims[i], "%s: dim %d = %lld, expected %lld", what, i,
                                             (long long)got->dims[i], (long long)dims[i]);
    size_t n = rlx_tensor_numel(got);
    const char *const *g = got->data;
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(g[i] && strcmp(g[i], want[i]) == 0, "%s: element %zu is \"%s\", expected \"%s\"", what, i,
                  g[i] ? g[i] : "(null)", want[i]);
}

static const char *k_devices[2] = { "cpu", "gpu" };
static int n_devices(void) { return test_have_gpu() ? 2 : 1; }

/* On a GPU session, op's nodes must all have run on the CPU. */
static void check_fallback(rlx_session *s, const char *device, const char *op) {
    if (strcmp(device, "gpu") != 0) return;
    int nodes, native;
    test_report_counts(rlx_session_dispatch_report(s), op, &nodes, &native);
    CHECK_MSG(nodes > 0 && native == 0, "gpu: %s: %d nodes, %d native (expected a CPU fallback)\n%s", op, nodes,
              native, rlx_session_dispatch_report(s));
}

/* ------------------------------------------------------------ StringNormalizer */

/* One StringNormalizer node on x (rank 1 or 2) with the given attributes;
 * returns the output (caller destroys) or NULL. */
static rlx_tensor *run_normalizer(const char *device, const words *x, int rank, const char *action, int cs,
                                  const char *const *stop, int n_stop, const char *locale) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(10, &m));
    if (!m) return NULL;
    int64_t dims[2] = { 1, x->n };
    const int64_t *d = rank == 2 ? dims : dims + 1;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_STRING, rank, d, NULL));
    rlx_attr a[4];
    size_t na = 0;
    if (action) a[na++] = RLX_ATTR_S("case_change_action", action);
    a[na++] = RLX_ATTR_I("is_case_sensitive", cs);
    if (n_stop) a[na++] = (rlx_attr){ .name = "stopwords", .type = RLX_ATTR_STRINGS, .n = (size_t)n_stop, .strings = stop };
    if (locale) a[na++] = RLX_ATTR_S("locale", locale);
    CHECK_OK(rlx_model_add_node(m, "StringNormalizer", "norm", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" },
                                na, a));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device };
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_model_destroy(m);
    if (!s) return NULL;
    rlx_tensor *in = strings_tensor(rank, d, x->p), **outs = NULL, *y = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *const *)&in, &outs, &n_out));
    if (outs) {
        y = outs[0];
        free(outs);
        check_fallback(s, device, "StringNormalizer");
    }
    rlx_tensor_destroy(in);
    rlx_session_destroy(s);
    return y;
}

static void test_normalizer(const char *device) {
    static const char *const actions[3] = { "NONE", "LOWER", "UPPER" };
    for (int round = 0; round < 12; round++) {
        words x;
        random_words(&x, 6 + (int)(test_rand_u64() % 8));
        int mode = round % 3, cs = (round / 3) % 2, rank = 1 + (round / 6) % 2;
        /* stopwords: two of the words, one with its case flipped, and one
         * word that is not there */
        char flipped[16];
        snprintf(flipped, sizeof flipped, "%s", x.p[1]);
        for (char *c = flipped; *c; c++)
            if (isalpha((unsigned char)*c)) *c = (char)(islower((unsigned char)*c) ? toupper(*c) : tolower(*c));
        const char *stop[3] = { x.p[0], flipped, "notaword" };
        char want[MAXW][16];
        int k = expect_normalize(&x, stop, 3, cs != 0, mode, want);
        const char *wp[MAXW];
        for (int i = 0; i < k; i++) wp[i] = want[i];
        if (!k) wp[0] = "", k = 1;
        rlx_tensor *y = run_normalizer(device, &x, rank, round == 0 ? NULL : actions[mode], cs, stop, 3,
                                       round == 1 ? "en_US" : NULL);
        int64_t dims[2] = { 1, k };
        char what[96];
        snprintf(what, sizeof what, "%s: StringNormalizer round %d (%s, cs %d, rank %d)", device, round,
                 actions[mode], cs, rank);
        check_strings(y, rank, rank == 2 ? dims : dims + 1, wp, what);
        rlx_tensor_destroy(y);
    }
    /* everything filtered: one empty string, [1] or [1, 1] */
    for (int rank = 1; rank <= 2; rank++) {
        words x;
        random_words(&x, 5);
        rlx_tensor *y = run_normalizer(device, &x, rank, "UPPER", 1, x.p, x.n, NULL);
        int64_t dims[2] = { 1, 1 };
        check_strings(y, rank, dims, (const char *[]){ "" }, "StringNormalizer, all words stopwords");
        rlx_tensor_destroy(y);
    }
    /* case-insensitive stopwords match across case; sensitive ones do not */
    words x = { .n = 3 };
    const char *fixed[3] = { "Monday", "tuesday", "MONDAY" };
    for (int i = 0; i < 3; i++) x.p[i] = fixed[i];
    rlx_tensor *y = run_normalizer(device, &x, 1, "LOWER", 0, (const char *[]){ "monday" }, 1, NULL);
    check_strings(y, 1, (int64_t[]){ 1 }, (const char *[]){ "tuesday" }, "case-insensitive stopword");
    rlx_tensor_destroy(y);
    y = run_normalizer(device, &x, 1, "UPPER", 1, (const char *[]){ "monday" }, 1, NULL);
    check_strings(y, 1, (int64_t[]){ 3 }, (const char *[]){ "MONDAY", "TUESDAY", "MONDAY" }, "case-sensitive stopword");
    rlx_tensor_destroy(y);
}

/* A one-node model over input x (dtype, rank 1 or 2) that must fail to
 * finish with status and a message holding substr. */
static void check_refused(const char *op, rlx_dtype dt, int rank, const int64_t *dims, size_t na, const rlx_attr *a,
                          rlx_status status, const char *substr) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return;
    CHECK_OK(rlx_model_add_input(m, "x", dt, rank, dims, NULL));
    int n_in = strcmp(op, "Add") == 0 ? 2 : 1;
    CHECK_OK(rlx_model_add_node(m, op, "n", (size_t)n_in, (const char *[]){ "x", "x" }, 1, (const char *[]){ "y" }, na,
                                a));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_FAILS(rlx_model_finish(m), status, substr);
    rlx_model_destroy(m);
}

static void test_normalizer_errors(void) {
    check_refused("StringNormalizer", RLX_DTYPE_STRING, 2, (int64_t[]){ 2, 3 }, 0, NULL, RLX_ERR_INVALID_MODEL,
                  "node 'n' (StringNormalizer): a 2-D input must have shape [1, C]");
    rlx_attr bad = RLX_ATTR_S("case_change_action", "TITLE");
    check_refused("StringNormalizer", RLX_DTYPE_STRING, 1, (int64_t[]){ 3 }, 1, &bad, RLX_ERR_INVALID_MODEL, "TITLE");
    check_refused("StringNormalizer", RLX_DTYPE_F32, 1, (int64_t[]){ 3 }, 0, NULL, RLX_ERR_INVALID_MODEL,
                  "input must be a string tensor, got f32");
}

/* ------------------------------------------------------------ data movement */

/* s [2,3] -> Reshape [3,2] -> Concat with constant c [1,2] (axis 0) -> [4,2]
 * -> Gather rows {3, 0} -> [2,2] -> Transpose -> [2,2] -> Slice columns
 * [1:2) -> [2,1] -> Identity -> y. Also z = Identity(k), k = Concat(c, c)
 * of constants only (folded), and the graph input s as an output. */
static void test_movement(const char *device) {
    words a, b;
    random_words(&a, 6);
    random_words(&b, 6);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "s", RLX_DTYPE_STRING, 2, (int64_t[]){ 2, 3 }, NULL));
    const char *cs[2] = { "const-0", "const-1" };
    rlx_tensor *c = strings_tensor(2, (int64_t[]){ 1, 2 }, cs);
    CHECK_OK(rlx_model_add_initializer(m, "c", c));
    rlx_tensor_destroy(c); /* the model keeps its own copy */
    rlx_tensor *shape = test_tensor_i64(1, (int64_t[]){ 2 }, (int64_t[]){ 3, 2 });
    rlx_tensor *idx = test_tensor_i64(1, (int64_t[]){ 2 }, (int64_t[]){ 3, 0 });
    rlx_tensor *st = test_tensor_i64(1, (int64_t[]){ 1 }, (int64_t[]){ 1 });
    rlx_tensor *en = test_tensor_i64(1, (int64_t[]){ 1 }, (int64_t[]){ 2 });
    rlx_tensor *ax = test_tensor_i64(1, (int64_t[]){ 1 }, (int64_t[]){ 1 });
    CHECK_OK(rlx_model_add_initializer(m, "shape", shape));
    CHECK_OK(rlx_model_add_initializer(m, "idx", idx));
    CHECK_OK(rlx_model_add_initializer(m, "st", st));
    CHECK_OK(rlx_model_add_initializer(m, "en", en));
    CHECK_OK(rlx_model_add_initializer(m, "ax", ax));
    rlx_tensor_destroy(shape), rlx_tensor_destroy(idx), rlx_tensor_destroy(st), rlx_tensor_destroy(en),
        rlx_tensor_destroy(ax);
    rlx_attr axis0 = RLX_ATTR_I("axis", 0);
    CHECK_OK(rlx_model_add_node(m, "Reshape", "r", 2, (const char *[]){ "s", "shape" }, 1, (const char *[]){ "r" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", "cat", 2, (const char *[]){ "r", "c" }, 1, (const char *[]){ "cat" }, 1, &axis0));
    CHECK_OK(rlx_model_add_node(m, "Gather", "g", 2, (const char *[]){ "cat", "idx" }, 1, (const char *[]){ "g" }, 1, &axis0));
    CHECK_OK(rlx_model_add_node(m, "Transpose", "t", 1, (const char *[]){ "g" }, 1, (const char *[]){ "t" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Slice", "sl", 4, (const char *[]){ "t", "st", "en", "ax" }, 1, (const char *[]){ "sl" },
                                0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Identity", "id", 1, (const char *[]){ "sl" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Concat", "kk", 2, (const char *[]){ "c", "c" }, 1, (const char *[]){ "k" }, 1, &axis0));
    CHECK_OK(rlx_model_add_node(m, "Identity", "idk", 1, (const char *[]){ "k" }, 1, (const char *[]){ "z" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "z"));
    CHECK_OK(rlx_model_add_output(m, "s"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device };
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_model_destroy(m); /* the session outlives the model and its constants */
    if (!s) return;

    /* the caller's strings live in buf, overwritten after each run */
    char buf[6][16];
    const char *in_p[6];
    rlx_tensor **keep = NULL;
    for (int run = 0; run < 2; run++) {
        const words *w = run ? &b : &a;
        for (int i = 0; i < 6; i++) snprintf(buf[i], sizeof buf[i], "%s", w->p[i]), in_p[i] = buf[i];
        rlx_tensor *in = NULL;
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_STRING, (int64_t[]){ 2, 3 }, 2, &in)); /* borrowed pointers */
        if (!in) break;
        memcpy(in->data, in_p, sizeof in_p);
        rlx_tensor **outs = NULL;
        size_t n_out = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "s" }, (const rlx_tensor *const *)&in, &outs, &n_out));
        rlx_tensor_destroy(in);
        for (int i = 0; i < 6; i++) memset(buf[i], 'X', sizeof buf[i] - 1), buf[i][15] = 0;
        if (!outs) break;
        /* r = [[w0 w1] [w2 w3] [w4 w5]], cat row 3 = c; Gather {3, 0} =
         * [[c0 c1] [w0 w1]]; Transpose = [[c0 w0] [c1 w1]]; column 1 =
         * [[w0] [w1]] */
        check_strings(outs[0], 2, (int64_t[]){ 2, 1 }, (const char *[]){ w->p[0], w->p[1] }, "movement y");
        check_strings(outs[1], 2, (int64_t[]){ 2, 2 }, (const char *[]){ "const-0", "const-1", "const-0", "const-1" },
                      "folded constants z");
        check_strings(outs[2], 2, (int64_t[]){ 2, 3 }, w->p, "input passthrough s");
        if (strcmp(device, "gpu") == 0) {
            check_fallback(s, device, "Gather");
            check_fallback(s, device, "Transpose");
        }
        if (run == 0) keep = outs, outs = NULL;
        test_free_outputs(outs, (int)n_out);
    }
    rlx_session_destroy(s);
    /* outputs of the first run survive the second run, the overwritten
     * input strings and the session */
    if (keep) {
        check_strings(keep[0], 2, (int64_t[]){ 2, 1 }, (const char *[]){ a.p[0], a.p[1] }, "first run y, kept");
        check_strings(keep[2], 2, (int64_t[]){ 2, 3 }, a.p, "first run s, kept");
        test_free_outputs(keep, 3);
    }
}

/* Where and Expand on strings too (byte copies of the element pointers). */
static void test_where_expand(const char *device) {
    words a, b;
    random_words(&a, 4);
    random_words(&b, 4);
    rlx_tensor *x = strings_tensor(1, (int64_t[]){ 4 }, a.p), *y = strings_tensor(1, (int64_t[]){ 4 }, b.p);
    rlx_tensor *cond = test_tensor(RLX_DTYPE_BOOL, 1, (int64_t[]){ 4 });
    uint8_t pick[4];
    for (int i = 0; i < 4; i++) pick[i] = (uint8_t)(test_rand_u64() & 1), ((uint8_t *)cond->data)[i] = pick[i];
    rlx_tensor **outs = NULL;
    CHECK_OK(test_run_op("Where", 16, device, 3, (const rlx_tensor *[]){ cond, x, y }, (int[]){ 0, 0, 0 }, 1, 0, NULL,
                         &outs));
    const char *want[4];
    for (int i = 0; i < 4; i++) want[i] = pick[i] ? a.p[i] : b.p[i];
    if (outs) check_strings(outs[0], 1, (int64_t[]){ 4 }, want, "Where");
    test_free_outputs(outs, 1);
    rlx_tensor *shape = test_tensor_i64(1, (int64_t[]){ 2 }, (int64_t[]){ 2, 4 });
    outs = NULL;
    CHECK_OK(test_run_op("Expand", 13, device, 2, (const rlx_tensor *[]){ x, shape }, (int[]){ 0, 1 }, 1, 0, NULL, &outs));
    const char *want2[8];
    for (int i = 0; i < 8; i++) want2[i] = a.p[i % 4];
    if (outs) check_strings(outs[0], 2, (int64_t[]){ 2, 4 }, want2, "Expand");
    test_free_outputs(outs, 1);
    rlx_tensor_destroy(x), rlx_tensor_destroy(y), rlx_tensor_destroy(cond), rlx_tensor_destroy(shape);
}

/* ------------------------------------------------------------ refusals */

static void test_refusals(void) {
    check_refused("Add", RLX_DTYPE_STRING, 1, (int64_t[]){ 2 }, 0, NULL, RLX_ERR_UNSUPPORTED,
                  "node 'n' (Add): input 0 ('x') has element type string");
    rlx_attr to = RLX_ATTR_I("to", RLX_DTYPE_F32);
    check_refused("Cast", RLX_DTYPE_STRING, 1, (int64_t[]){ 2 }, 1, &to, RLX_ERR_UNSUPPORTED, "not in Cast");
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "a", RLX_DTYPE_STRING, 1, (int64_t[]){ 2 }, NULL));
    CHECK_OK(rlx_model_add_node(m, "Identity", "id", 1, (const char *[]){ "a" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    for (int d = 0; d < n_devices(); d++) {
        rlx_session *s = NULL;
        rlx_session_options o = { .device = k_devices[d] };
        CHECK_OK(rlx_session_create(m, &o, &s));
        if (!s) continue;
        rlx_tensor *in = NULL;
        CHECK_OK(rlx_tensor_create(RLX_DTYPE_STRING, (int64_t[]){ 2 }, 1, &in));
        if (!in) continue;
        ((const char **)in->data)[0] = "fine"; /* element 1 stays NULL */
        rlx_tensor **outs = NULL;
        size_t n_out = 0;
        CHECK_FAILS(rlx_session_run(s, 1, (const char *[]){ "a" }, (const rlx_tensor *const *)&in, &outs, &n_out),
                    RLX_ERR_INVALID_ARGUMENT, "input 'a': string element 1 is NULL");
        CHECK(outs == NULL);
        rlx_tensor_destroy(in);
        rlx_session_destroy(s);
    }
    rlx_model_destroy(m);
    rlx_tensor *t = NULL;
    CHECK_FAILS(rlx_tensor_create_strings((int64_t[]){ 2 }, 1, (const char *[]){ "x", NULL }, &t),
                RLX_ERR_INVALID_ARGUMENT, "element 1 is NULL");
    CHECK(t == NULL);
}

/* ------------------------------------------------------------ ONNX import */

/* A string initializer (string_data) and a Constant value_strings,
 * concatenated with the input, through the ONNX importer. */
static void test_import(const char *device) {
    Onnx__GraphProto *g = graph_new("strings");
    Onnx__TensorProto *init = tensor_new("w", 8, 1, (int64_t[]){ 2 });
    static const char *const iv[2] = { "init-a", "init-\xc3\xa9" };
    init->n_string_data = 2;
    init->string_data = xcalloc(2, sizeof *init->string_data);
    for (int i = 0; i < 2; i++) {
        init->string_data[i].len = strlen(iv[i]);
        init->string_data[i].data = (uint8_t *)S(iv[i]);
    }
    graph_init(g, init);
    graph_input(g, vi_new("x", 8, 1, (int64_t[]){ 1 }, NULL));
    Onnx__NodeProto *k = node_new("Constant", "k", NULL, "k");
    Onnx__AttributeProto *vs = attr_new("value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    vs->n_strings = 1;
    vs->strings = xcalloc(1, sizeof *vs->strings);
    vs->strings[0].len = 5;
    vs->strings[0].data = (uint8_t *)S("konst");
    node_attr(k, vs);
    graph_node(g, k);
    Onnx__NodeProto *cat = node_new("Concat", "cat", "x,w,k", "y");
    node_attr(cat, attr_i("axis", 0));
    graph_node(g, cat);
    graph_output(g, vi_new("y", 8, 1, (int64_t[]){ 4 }, NULL));
    size_t size;
    uint8_t *bytes = model_pack_free(model_new(13, g), &size);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_load_onnx_memory(bytes, size, NULL, &m));
    free(bytes);
    if (!m) return;
    rlx_value_info vi;
    CHECK_OK(rlx_model_input_info(m, 0, &vi));
    CHECK(vi.dtype == RLX_DTYPE_STRING);
    rlx_session *s = NULL;
    rlx_session_options o = { .device = device };
    CHECK_OK(rlx_session_create(m, &o, &s));
    rlx_model_destroy(m);
    if (!s) return;
    words x;
    random_words(&x, 1);
    rlx_tensor *in = strings_tensor(1, (int64_t[]){ 1 }, x.p), **outs = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *const *)&in, &outs, &n_out));
    if (outs) check_strings(outs[0], 1, (int64_t[]){ 4 }, (const char *[]){ x.p[0], iv[0], iv[1], "konst" }, "import");
    test_free_outputs(outs, (int)n_out);
    rlx_tensor_destroy(in);
    rlx_session_destroy(s);

    /* string data in raw_data is refused, naming the tensor */
    g = graph_new("bad");
    graph_init(g, tensor_raw("r", 8, 1, (int64_t[]){ 1 }, "abcdefgh", 8));
    graph_input(g, vi_new("x", 8, 1, (int64_t[]){ 1 }, NULL));
    graph_node(g, node_new("Identity", "i", "r", "y"));
    graph_output(g, vi_new("y", 8, 1, (int64_t[]){ 1 }, NULL));
    bytes = model_pack_free(model_new(13, g), &size);
    m = NULL;
    CHECK_FAILS(rlx_model_load_onnx_memory(bytes, size, NULL, &m), RLX_ERR_INVALID_MODEL, "tensor 'r'");
    free(bytes);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed_from_env();
    test_normalizer_errors();
    test_refusals();
    for (int d = 0; d < n_devices(); d++) {
        test_normalizer(k_devices[d]);
        test_movement(k_devices[d]);
        test_where_expand(k_devices[d]);
        test_import(k_devices[d]);
    }
    TEST_MAIN_END();
}
