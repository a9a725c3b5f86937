/* The log function of the C API (rlx_set_log_callback, rlx/rlx.h) and the
 * version (rlx_version, rlx/version.h):
 *  - a warning (an input that declares a dim as -5) reaches the callback
 *    with level RLX_LOG_WARNING, naming the input, and nothing reaches
 *    stderr's default printer meanwhile; a node attribute the op does not
 *    have is an error, not a warning (it was one until unknown attributes
 *    were refused), and the legacy attributes of early op versions (Add-6
 *    broadcast) give none;
 *  - min_level filters: at RLX_LOG_ERROR the warning is not delivered;
 *  - debug output that an option asks for (debug.dispatch_report) arrives
 *    at RLX_LOG_DEBUG, and not at all without the option;
 *  - progress lines arrive at RLX_LOG_PROGRESS with progress=on, ending
 *    with an empty message, and never with progress=off;
 *  - the version macros and rlx_version() agree. */
#include "test.h"
#include "onnx_build.h"

#include <stdio.h>
#include <string.h>

typedef struct captured {
    int n[RLX_LOG_OFF + 1];
    char last[RLX_LOG_OFF + 1][512];
    bool progress_ended;
} captured;

static void capture(rlx_log_level level, const char *msg, void *user) {
    captured *c = user;
    if (level < 0 || level > RLX_LOG_OFF) return;
    c->n[level]++;
    if (level == RLX_LOG_PROGRESS) c->progress_ended = msg[0] == '\0';
    if (msg[0]) snprintf(c->last[level], sizeof c->last[level], "%s", msg);
}

/* y = Relu(x), loaded from ONNX bytes whose input x declares its first dim
 * as -5 (a warning: rlx takes it as a dynamic dim). */
static rlx_model *relu_with_odd_dim(void) {
    Onnx__GraphProto *g = graph_new("g");
    graph_input(g, vi_new("x", 1, 2, (const int64_t[]){ -5, 3 }, NULL));
    graph_node(g, node_new("Relu", "relu_node", "x", "y"));
    graph_output(g, vi_new("y", 1, 2, (const int64_t[]){ -1, 3 }, NULL));
    size_t size = 0;
    uint8_t *buf = model_pack_free(model_new(13, g), &size);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_load_onnx_memory(buf, size, NULL, &m));
    free(buf);
    return m;
}

/* y = Relu(x) where Relu carries an attribute Relu does not have: refused. */
static void relu_with_bogus_attr(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 3 }, NULL));
    rlx_attr a[] = { RLX_ATTR_I("bogus_attr", 7) };
    CHECK_FAILS(rlx_model_add_node(m, "Relu", "relu_node", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" }, 1, a),
                RLX_ERR_INVALID_MODEL, "bogus_attr");
    const char *e = rlx_last_error();
    CHECK_MSG(strstr(e, "relu_node") && strstr(e, "Relu") && strstr(e, "opset 13"), "error '%s'", e);
    rlx_model_destroy(m);
}

/* Add-6 with the legacy broadcast=1: an attribute of that op version, read
 * by the legacy pass, so no warning. */
static rlx_model *legacy_add(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(6, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "a", RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 3 }, NULL));
    CHECK_OK(rlx_model_add_input(m, "b", RLX_DTYPE_F32, 1, (const int64_t[]){ 3 }, NULL));
    rlx_attr a[] = { RLX_ATTR_I("broadcast", 1) };
    CHECK_OK(rlx_model_add_node(m, "Add", "add6", 2, (const char *[]){ "a", "b" }, 1, (const char *[]){ "y" }, 1, a));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

static void run_once(rlx_model *m, const char *key, const char *value) {
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    if (key) CHECK_OK(rlx_options_set(o, key, value));
    CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = "cpu" }, o, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 3 }, -1, 1);
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    if (s) CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *const[]){ x }, &out, &n_out));
    for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(out[i]);
    free(out);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_options_destroy(o);
}

static void test_warning(void) {
    captured c;
    memset(&c, 0, sizeof c);
    rlx_set_log_callback(capture, &c, RLX_LOG_DEBUG);
    rlx_model *m = relu_with_odd_dim();
    CHECK_MSG(c.n[RLX_LOG_WARNING] == 1, "%d warnings, want 1", c.n[RLX_LOG_WARNING]);
    CHECK_MSG(strstr(c.last[RLX_LOG_WARNING], "'x'") && strstr(c.last[RLX_LOG_WARNING], "-5"),
              "warning '%s' does not name the input and its dim", c.last[RLX_LOG_WARNING]);
    rlx_model_destroy(m);

    memset(&c, 0, sizeof c);
    relu_with_bogus_attr();
    CHECK_MSG(c.n[RLX_LOG_WARNING] == 0, "a refused attribute also warned: '%s'", c.last[RLX_LOG_WARNING]);

    memset(&c, 0, sizeof c);
    m = legacy_add();
    CHECK_MSG(c.n[RLX_LOG_WARNING] == 0, "legacy Add-6 broadcast: warning '%s'", c.last[RLX_LOG_WARNING]);
    rlx_model_destroy(m);

    memset(&c, 0, sizeof c);
    rlx_set_log_callback(capture, &c, RLX_LOG_ERROR);
    m = relu_with_odd_dim();
    CHECK_MSG(c.n[RLX_LOG_WARNING] == 0, "min_level error still delivered %d warnings", c.n[RLX_LOG_WARNING]);
    rlx_model_destroy(m);
    rlx_set_log_callback(NULL, NULL, RLX_LOG_DEBUG);
}

static void test_debug_and_progress(void) {
    rlx_model *m = relu_with_odd_dim(); /* its warning goes to stderr: the default */
    if (!m) return;
    captured c;
    memset(&c, 0, sizeof c);
    rlx_set_log_callback(capture, &c, RLX_LOG_DEBUG);
    run_once(m, NULL, NULL);
    CHECK_MSG(c.n[RLX_LOG_DEBUG] == 0, "debug messages without a debug option: %d", c.n[RLX_LOG_DEBUG]);
    run_once(m, "debug.dispatch_report", "1");
    CHECK_MSG(c.n[RLX_LOG_DEBUG] == 1 && strstr(c.last[RLX_LOG_DEBUG], "Relu"),
              "debug.dispatch_report: %d debug messages, last '%s'", c.n[RLX_LOG_DEBUG], c.last[RLX_LOG_DEBUG]);
    CHECK_MSG(c.last[RLX_LOG_DEBUG][strlen(c.last[RLX_LOG_DEBUG]) - 1] != '\n', "message ends with a newline");

    memset(&c, 0, sizeof c);
    run_once(m, "progress", "off");
    CHECK_MSG(c.n[RLX_LOG_PROGRESS] == 0, "progress=off: %d progress messages", c.n[RLX_LOG_PROGRESS]);
    run_once(m, "progress", "on");
    CHECK_MSG(c.n[RLX_LOG_PROGRESS] >= 2 && c.progress_ended && strstr(c.last[RLX_LOG_PROGRESS], "compiling"),
              "progress=on: %d progress messages, ended %d, last '%s'", c.n[RLX_LOG_PROGRESS], c.progress_ended,
              c.last[RLX_LOG_PROGRESS]);

    memset(&c, 0, sizeof c);
    rlx_set_log_callback(capture, &c, RLX_LOG_INFO);
    run_once(m, "debug.dispatch_report", "1");
    CHECK_MSG(c.n[RLX_LOG_DEBUG] == 0, "min_level info delivered %d debug messages", c.n[RLX_LOG_DEBUG]);
    rlx_set_log_callback(NULL, NULL, RLX_LOG_DEBUG);
    rlx_model_destroy(m);
}

static void test_version(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", RLX_VERSION_MAJOR, RLX_VERSION_MINOR, RLX_VERSION_PATCH);
    CHECK_MSG(strcmp(want, RLX_VERSION_STRING) == 0, "macros %s, string %s", want, RLX_VERSION_STRING);
    CHECK_MSG(strcmp(rlx_version(), RLX_VERSION_STRING) == 0, "rlx_version() %s", rlx_version());
    CHECK(strcmp(rlx_log_level_name(RLX_LOG_WARNING), "warning") == 0);
    CHECK(strcmp(rlx_log_level_name((rlx_log_level)42), "?") == 0);
}

int main(void) {
    test_seed_from_env();
    test_warning();
    test_debug_and_progress();
    test_version();
    TEST_MAIN_END();
}
