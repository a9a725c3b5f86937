/* `rlx info MODEL.onnx [--dump-ir] [--plan ...]`: what a model is made of,
 * as rlx imported it (opset, inputs and outputs with symbolic dims, node
 * count per op type, initializers and other constants), optionally the IR
 * dump, and optionally the memory plan compiled for given input shapes
 * (arena bytes planned, without reuse, and the lower bound; the largest
 * tensors). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void print_help(FILE *f) {
    fprintf(f,
            "usage: rlx info MODEL.onnx [--json] [--quiet] [--dump-ir] [--plan [--shape NAME=DIMS ...]\n"
            "                [--device DEV] [--top N] [--option KEY=VALUE ...]] [--max-model-bytes N]\n"
            "                [--max-tensor-bytes N] [--max-arena-bytes N]\n"
            "\n"
            "Loads an ONNX model (shapes inferred, graph verified) and prints: the opset\n"
            "of the default domain; each graph input and output with dtype and shape\n"
            "(symbolic dims by name, '?' for an unnamed dynamic dim; an output's shape as\n"
            "the file declares it, as onnxruntime shows it, with the shape rlx infers\n"
            "from the inputs beside it where that differs: \"(inferred [batch,4])\"\n"
            "for a dim declared \"out_len\"); the node count per\n"
            "op type as the file writes them (a com.microsoft contrib op under its own\n"
            "name, with the nodes the import expanded it into beside it); the\n"
            "initializer count and bytes; and the other constant values\n"
            "(from Constant nodes) with their bytes.\n"
            "\n"
            "options:\n"
            "  --dump-ir    also print the graph as rlx holds it (values with shapes,\n"
            "               nodes with their op version and attributes)\n"
            "  --plan       compile the plan for the input shapes and print its memory:\n"
            "               the activation arena as planned (tensors share bytes when\n"
            "               their lifetimes do not overlap), without reuse (the sum of\n"
            "               all tensors), and the peak of bytes live at one step (the\n"
            "               lower bound of any plan); the placement order that won; the\n"
            "               weights (constants, kept outside the arena); the largest\n"
            "               tensors of the arena with their lifetimes (step ranges). Only\n"
            "               planned: neither the inputs nor the arena are allocated (the\n"
            "               option plan.defer_backend, on unless set)\n"
            "  --shape NAME=DIMS  with --plan: shape of input NAME, e.g. x=1x3x224x224\n"
            "               (repeatable); symbolic dims not given are 1, and it says so\n"
            "  --device DEV with --plan: the device whose plan to compile: cpu (default),\n"
            "               gpu or gpu:N (the plan differs where steps fall back to the\n"
            "               CPU or the device limits a buffer's size)\n"
            "  --top N      with --plan: how many of the largest tensors to list (default 10)\n"
            "  --option KEY=VALUE  a session option (repeatable; 'rlx options'); without\n"
            "               --plan only limits.* and progress, which loading uses\n"
            "  --max-model-bytes N, --max-tensor-bytes N, --max-arena-bytes N\n"
            "               the options limits.max_*_bytes (suffixes K, M, G, T; 0: no\n"
            "               limit): loading refuses a larger model file or tensor, --plan\n"
            "               a larger activation arena\n"
            "  --json       print one JSON object instead (model, opset, inputs, outputs with\n"
            "               shapes as arrays: a name for a symbolic dim, null for an unnamed\n"
            "               one; an output's \"inferred_shape\" where it differs from its\n"
            "               declared \"shape\"; ops; initializers; with --plan a \"plan\"\n"
            "               object); not with\n"
            "               --dump-ir\n"
            "               on an error {\"error\": {\"status\": S, \"message\": M}}\n"
            "               (inside the result object if it had begun):\n"
            "               S an rlx_status name (rlx.h), or from the command line\n"
            "               itself RLX_ERR_USAGE (exit 2) or RLX_ERR_FAILURE (exit 1)\n"
            "  --quiet      no progress lines on stderr (the option progress=off)\n"
            "  -h, --help   print this help and exit\n");
}

typedef struct op_count {
    const char *domain, *op;
    int n;
} op_count;

static int cmp_count(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? 1 : -1;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->op, y->op);
}

/* Whether two value descriptions have the same shape (rank, static dims,
 * symbols by name). */
static bool same_shape(const rlx_value_info *a, const rlx_value_info *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank && d < RLX_MAX_RANK; d++) {
        if (a->dims[d] != b->dims[d]) return false;
        const char *x = a->dims[d] < 0 ? a->dim_names[d] : NULL, *y = b->dims[d] < 0 ? b->dim_names[d] : NULL;
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0)) return false;
    }
    return true;
}

/* Inputs as they are; outputs as the file declares them (what onnxruntime
 * shows), the inferred shape beside where it differs (a symbol that
 * inference carried from an input, a declared dim it finds dynamic), and
 * the inferred one alone where the file declares none. A tester found
 * an output declared [out_len, 4] printed as the input's [batch, 4]. */
static void print_values(const rlx_model *m, bool inputs, cli_json *j) {
    size_t n = inputs ? rlx_model_num_inputs(m) : rlx_model_num_outputs(m);
    if (j) cli_json_arr(j, inputs ? "inputs" : "outputs");
    else printf("%s: %zu\n", inputs ? "inputs" : "outputs", n);
    for (size_t i = 0; i < n; i++) {
        rlx_value_info vi, dv;
        if (inputs ? rlx_model_input_info(m, i, &vi) : rlx_model_output_info(m, i, &vi)) continue;
        bool declared = !inputs && rlx_model_output_declared_info(m, i, &dv) == RLX_OK && dv.rank >= 0;
        bool differs = declared && !same_shape(&dv, &vi);
        const rlx_value_info *shown = declared ? &dv : &vi;
        if (j) {
            cli_json_obj(j, NULL);
            cli_json_s(j, "name", vi.name);
            cli_json_s(j, "dtype", vi.dtype ? rlx_dtype_name(vi.dtype) : NULL);
            cli_json_info_dims(j, "shape", shown);
            if (differs) cli_json_info_dims(j, "inferred_shape", &vi);
            cli_json_end_obj(j);
            continue;
        }
        char sh[512], inf[512];
        printf("  %-24s %-5s %s", cli_esc(vi.name), vi.dtype ? rlx_dtype_name(vi.dtype) : "?",
               cli_info_shape_str(shown, sh, sizeof sh));
        if (differs) printf("  (inferred %s)", cli_info_shape_str(&vi, inf, sizeof inf));
        printf("\n");
    }
    if (j) cli_json_end_arr(j);
}

/* Overridable initializers (rlx.h), when the model has any: initializers
 * that `rlx run --input NAME=FILE` may replace. */
static void print_overridable(const rlx_model *m, cli_json *j) {
    size_t n = rlx_model_num_overridable_initializers(m);
    if (!n) return;
    if (j) cli_json_arr(j, "overridable_initializers");
    else printf("overridable initializers: %zu (used unless fed with --input NAME=FILE.npy)\n", n);
    for (size_t i = 0; i < n; i++) {
        rlx_value_info vi;
        if (rlx_model_overridable_initializer_info(m, i, &vi)) continue;
        if (j) {
            cli_json_obj(j, NULL);
            cli_json_s(j, "name", vi.name);
            cli_json_s(j, "dtype", vi.dtype ? rlx_dtype_name(vi.dtype) : NULL);
            cli_json_info_dims(j, "shape", &vi);
            cli_json_end_obj(j);
            continue;
        }
        char sh[512];
        printf("  %-24s %-5s %s\n", cli_esc(vi.name), vi.dtype ? rlx_dtype_name(vi.dtype) : "?",
               cli_info_shape_str(&vi, sh, sizeof sh));
    }
    if (j) cli_json_end_arr(j);
}

/* ------------------------------------------------------------ --plan */

#define RLX_PLAN_MAX_SHAPES 64

typedef struct plan_shape {
    char name[256];
    int64_t dims[RLX_MAX_RANK];
    int rank;
} plan_shape;

static const char *strategy_name(rlx_plan_order s) {
    switch (s) {
    case RLX_PLAN_ORDER_NO_REUSE: return "none (RLX_NO_REUSE)";
    case RLX_PLAN_ORDER_BY_SIZE: return "by size";
    case RLX_PLAN_ORDER_BY_BREADTH: return "by breadth";
    case RLX_PLAN_ORDER_BY_TIME: return "by time";
    default: return "?";
    }
}

typedef struct big_tensor {
    int value;
    uint64_t bytes;
} big_tensor;

static int cmp_big(const void *a, const void *b) {
    const big_tensor *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->value - y->value;
}

static void print_ratio(const char *what, uint64_t a, uint64_t b) {
    if (b) printf("  %-34s %.3f\n", what, (double)a / (double)b);
}

/* Compiles the plan of model m for the given input shapes on `device`
 * and prints its memory. Returns an exit code. */
/* --option KEY=VALUE (the plan's session options) */
static rlx_options *g_opts;

static int print_plan(const rlx_model *m, const plan_shape *shapes, size_t n_shapes, const char *device, size_t top,
                      cli_json *j) {
    size_t n_in = rlx_model_num_inputs(m);
    for (size_t k = 0; k < n_shapes; k++) {
        bool found = false;
        for (size_t i = 0; i < n_in; i++) {
            rlx_value_info vi;
            if (!rlx_model_input_info(m, i, &vi) && strcmp(vi.name, shapes[k].name) == 0) found = true;
        }
        if (!found) return cli_usage_error("info", "--shape names '%s', which is not a graph input", shapes[k].name);
    }
    rlx_tensor **in = calloc(n_in + 1, sizeof *in);
    /* inputs of more than a few bytes are shapes only (NULL data: the plan
     * is compiled without allocating them, rlx_session_prepare); the small
     * ones are zero-filled, as the value of a control input must exist */
    rlx_tensor *shells = calloc(n_in + 1, sizeof *shells);
    const char **names = calloc(n_in + 1, sizeof *names);
    rlx_session *s = NULL;
    int rc = CLI_EXIT_OK;
    char sh[512], dsh[512], b1[64], b2[64];
    if (j) {
        cli_json_obj(j, "plan");
        cli_json_s(j, "device_arg", device);
    }
    if (!in || !shells || !names) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if (j) cli_json_arr(j, "inputs");
    else printf("\nmemory plan on %s for inputs:\n", device);
    for (size_t i = 0; i < n_in; i++) {
        rlx_value_info vi;
        rlx_model_input_info(m, i, &vi);
        names[i] = vi.name;
        const plan_shape *ps = NULL;
        for (size_t k = 0; k < n_shapes; k++)
            if (strcmp(shapes[k].name, vi.name) == 0) ps = &shapes[k];
        int64_t dims[RLX_MAX_RANK];
        int rank;
        char note[600] = "";
        if (ps) {
            rank = ps->rank;
            memcpy(dims, ps->dims, sizeof dims);
        } else {
            if (vi.rank < 0) {
                rc = cli_usage_error("info", "input '%s' has an unknown rank: give its shape with --shape %s=DxDx...",
                                     vi.name, vi.name);
                goto done;
            }
            rank = vi.rank;
            size_t no = 0;
            for (int d = 0; d < rank; d++) {
                dims[d] = vi.dims[d] >= 0 ? vi.dims[d] : 1;
                if (vi.dims[d] < 0 && no < sizeof note)
                    no += (size_t)snprintf(note + no, sizeof note - no, "%s%s", no ? ", " : "",
                                           vi.dim_names[d] ? vi.dim_names[d] : "?");
            }
        }
        rlx_dtype dt = vi.dtype ? vi.dtype : RLX_DTYPE_F32;
        uint64_t numel = 1;
        for (int d = 0; d < rank; d++)
            numel = dims[d] > 0 && numel > UINT64_MAX / (uint64_t)dims[d] ? UINT64_MAX : numel * (uint64_t)dims[d];
        if (numel > 1 && dt != RLX_DTYPE_STRING) {
            rc = cli_input_shape(g_opts, vi.name, dt, dims, rank, &shells[i]);
            if (rc >= 0) goto done;
            in[i] = &shells[i];
        } else {
            rc = cli_create_input(g_opts, vi.name, dt, dims, rank, &in[i]);
            if (rc >= 0) goto done;
        }
        rc = CLI_EXIT_OK;
        if (j) {
            cli_json_obj(j, NULL);
            cli_json_s(j, "name", vi.name);
            cli_json_s(j, "dtype", rlx_dtype_name(in[i]->dtype));
            cli_json_dims(j, "shape", dims, rank);
            cli_json_end_obj(j);
            continue;
        }
        printf("  %-24s %-5s %s\n", cli_esc(vi.name), rlx_dtype_name(in[i]->dtype), cli_shape_str(dims, rank, sh, sizeof sh));
        if (note[0])
            printf("    note: symbolic dims %s of %s set to 1 (use --shape %s=DxDx...)\n", note,
                   cli_info_shape_str(&vi, dsh, sizeof dsh), vi.name);
    }
    if (j) cli_json_end_arr(j);
    rlx_session_options o = { .device = device };
    /* the plan's memory, not the memory itself: no kernels, packed
     * weights or arena (unless --option plan.defer_backend=0 asks for them) */
    rlx_status st = RLX_OK;
    if (!g_opts) st = rlx_options_create(&g_opts);
    const char *defer = NULL;
    if (!st && rlx_options_effective(g_opts, "plan.defer_backend", &defer, NULL) != RLX_OK) defer = NULL;
    if (!st && !defer) st = rlx_options_set(g_opts, "plan.defer_backend", "1");
    if (!st) st = rlx_session_create_with_options(m, &o, g_opts, &s);
    if (st) {
        rc = cli_fail(st, "cannot create a session");
        goto done;
    }
    st = rlx_session_prepare(s, n_in, names, (const rlx_tensor *const *)in);
    if (st) {
        rc = cli_fail(st, "cannot compile the plan");
        goto done;
    }
    rlx_plan_info pi;
    st = rlx_session_plan_info(s, &pi);
    if (st == RLX_ERR_UNSUPPORTED && j) {
        cli_json_b(j, "eager", true);
        cli_json_s(j, "dispatch_report", rlx_session_dispatch_report(s));
        goto done;
    }
    if (st == RLX_ERR_UNSUPPORTED) {
        printf("no static plan: the graph runs eagerly on the CPU for these shapes\n%s",
               rlx_session_dispatch_report(s));
        goto done;
    }
    if (st) {
        rc = cli_fail(st, "cannot describe the plan");
        goto done;
    }
    big_tensor *big = calloc(pi.n_values + 1, sizeof *big);
    if (!big) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    size_t n_arena = 0;
    for (size_t i = 0; i < pi.n_values; i++) {
        rlx_plan_value pv;
        if (!rlx_session_plan_value(s, i, &pv) && pv.in_arena) big[n_arena++] = (big_tensor){ (int)i, pv.bytes };
    }
    qsort(big, n_arena, sizeof *big, cmp_big);
    if (top > n_arena) top = n_arena;
    if (j) {
        cli_json_b(j, "eager", false);
        cli_json_s(j, "device", rlx_session_device_name(s));
        cli_json_u(j, "steps", pi.n_steps);
        cli_json_u(j, "steps_device", pi.n_steps_device);
        cli_json_u(j, "steps_cpu", pi.n_steps_cpu);
        cli_json_u(j, "steps_view", pi.n_steps_view);
        cli_json_u(j, "arena_tensors", pi.n_arena_tensors);
        cli_json_u(j, "arena_align", pi.arena_align);
        cli_json_u(j, "arena_bytes", pi.arena_bytes);
        cli_json_s(j, "placement_order", strategy_name(pi.order));
        cli_json_u(j, "noreuse_bytes", pi.noreuse_bytes);
        cli_json_u(j, "peak_bytes", pi.peak_bytes);
        cli_json_u(j, "buffer_limit", pi.buffer_limit);
        cli_json_u(j, "weights", pi.n_weights);
        cli_json_u(j, "weight_bytes", pi.weight_bytes);
        cli_json_arr(j, "largest_tensors");
        for (size_t k = 0; k < top; k++) {
            rlx_plan_value v;
            rlx_session_plan_value(s, (size_t)big[k].value, &v);
            cli_json_obj(j, NULL);
            cli_json_s(j, "name", v.info.name);
            cli_json_s(j, "dtype", rlx_dtype_name(v.info.dtype));
            cli_json_dims(j, "shape", v.info.dims, v.info.rank);
            cli_json_u(j, "bytes", big[k].bytes);
            cli_json_i(j, "first_step", v.first_step);
            cli_json_i(j, "last_step", v.last_step);
            cli_json_s(j, "producer_node", v.producer_node);
            cli_json_s(j, "producer_op", v.producer_op);
            cli_json_end_obj(j);
        }
        cli_json_end_arr(j);
        free(big);
        goto done;
    }
    printf("device: %s\n", rlx_session_device_name(s));
    printf("steps: %zu (%zu on the device, %zu on the CPU fallback, %zu views); tensors in the arena: %zu\n",
           pi.n_steps, pi.n_steps_device, pi.n_steps_cpu, pi.n_steps_view, pi.n_arena_tensors);
    printf("memory (activations; every tensor aligned to %u bytes):\n", pi.arena_align);
    printf("  %-34s %s, placement order %s\n", "arena as planned:", cli_bytes_long_str(pi.arena_bytes, b1, sizeof b1),
           strategy_name(pi.order));
    printf("  %-34s %s\n", "without reuse (sum of tensors):", cli_bytes_long_str(pi.noreuse_bytes, b1, sizeof b1));
    printf("  %-34s %s\n", "peak live (lower bound):", cli_bytes_long_str(pi.peak_bytes, b1, sizeof b1));
    print_ratio("planned / lower bound:", pi.arena_bytes, pi.peak_bytes);
    print_ratio("planned / without reuse:", pi.arena_bytes, pi.noreuse_bytes);
    if (pi.order != RLX_PLAN_ORDER_NO_REUSE) {
        printf("  %-34s", "orders tried:");
        for (int k = RLX_PLAN_ORDER_BY_SIZE; k < RLX_PLAN_ORDER_COUNT; k++)
            if (pi.order_bytes[k])
                printf(" %s %s%s", strategy_name((rlx_plan_order)k), cli_bytes_str(pi.order_bytes[k], b2, sizeof b2),
                       k + 1 < RLX_PLAN_ORDER_COUNT && pi.order_bytes[k + 1] ? ";" : "");
        printf("\n");
    }
    if (pi.buffer_limit)
        printf("  %-34s %s (no tensor crosses a multiple of it)\n", "device buffer limit:",
               cli_bytes_long_str(pi.buffer_limit, b1, sizeof b1));
    printf("  %-34s %s in %zu tensors (after constant folding)\n", "weights (outside the arena):",
           cli_bytes_long_str(pi.weight_bytes, b1, sizeof b1), pi.n_weights);
    if (top) {
        printf("largest tensors in the arena (live steps: -1 = an input, %zu = an output, kept to the end):\n",
               pi.n_steps);
        printf("  %-28s %-5s %-20s %12s %9s  %s\n", "name", "dtype", "shape", "bytes", "steps", "written by");
        for (size_t k = 0; k < top; k++) {
            rlx_plan_value v;
            rlx_session_plan_value(s, (size_t)big[k].value, &v);
            char range[32], who[300];
            snprintf(range, sizeof range, "%d-%d", v.first_step, v.last_step);
            if (v.producer_op)
                snprintf(who, sizeof who, "node '%s' (%s%s%s)", v.producer_node[0] ? cli_esc(v.producer_node) : "?",
                         v.producer_domain, v.producer_domain[0] ? "." : "", v.producer_op);
            else
                snprintf(who, sizeof who, "%s", v.graph_input ? "graph input" : "-");
            printf("  %-28s %-5s %-20s %12s %9s  %s\n", cli_esc(v.info.name), rlx_dtype_name(v.info.dtype),
                   cli_shape_str(v.info.dims, v.info.rank, sh, sizeof sh), cli_bytes_str(big[k].bytes, b1, sizeof b1),
                   range, who);
        }
    }
    free(big);
done:
    if (j) cli_json_end_obj(j);
    rlx_session_destroy(s);
    for (size_t i = 0; in && i < n_in; i++)
        if (!shells || in[i] != &shells[i]) rlx_tensor_destroy(in[i]);
    free(shells);
    free(in);
    free(names);
    return rc;
}

/* Whether the option argument `a` (its value `v` when `a` is a bare
 * --option) also applies to loading the model, so without --plan: the
 * --max-*-bytes flags, limits.* and progress. */
static bool load_option(const char *a, const char *v) {
    if (strncmp(a, "--max-", 6) == 0) return true;
    if (strncmp(a, "--option=", 9) == 0) v = a + 9;
    return strncmp(v, "limits.", 7) == 0 || strncmp(v, "progress=", 9) == 0;
}

int cli_cmd_info(int argc, char **argv) {
    const char *path = NULL, *device = NULL, *opt = NULL;
    bool dump = false, plan = false, err = false, json = false, quiet = false, top_given = false;
    const char *plan_opt = NULL; /* the first option argument that needs --plan */
    plan_shape shapes[RLX_PLAN_MAX_SHAPES];
    size_t n_shapes = 0;
    int64_t top = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--dump-ir") == 0) {
            dump = true;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = true;
        } else if (strcmp(a, "--plan") == 0) {
            plan = true;
        } else if (cli_opt_value(argc, argv, &i, "--shape", &opt, "info", &err)) {
            if (err) return CLI_EXIT_USAGE;
            const char *eq = strrchr(opt, '=');
            if (!eq || eq == opt) return cli_usage_error("info", "bad --shape '%s': expected NAME=DxDx..., e.g. x=1x3x224x224", opt);
            if (n_shapes == RLX_PLAN_MAX_SHAPES) return cli_usage_error("info", "too many --shape options");
            plan_shape *ps = &shapes[n_shapes];
            size_t len = (size_t)(eq - opt);
            /* a longer name would be cut to another input's, or to none */
            if (len >= sizeof ps->name)
                return cli_usage_error("info", "--shape names an input of %zu bytes (at most %zu)", len,
                                       sizeof ps->name - 1);
            snprintf(ps->name, sizeof ps->name, "%.*s", (int)len, opt);
            /* as rlx run: the second would win silently */
            for (size_t k = 0; k < n_shapes; k++)
                if (strcmp(shapes[k].name, ps->name) == 0)
                    return cli_usage_error("info", "--shape given twice for '%s'", ps->name);
            char why[160];
            if (!cli_parse_shape(eq + 1, ps->dims, &ps->rank, why, sizeof why))
                return cli_usage_error("info", "bad --shape '%s': %s", opt, why);
            n_shapes++;
        } else if (cli_option_arg(argc, argv, &i, &g_opts, "info", &err)) {
            if (err) return CLI_EXIT_USAGE;
            if (!plan_opt && !load_option(a, argv[i])) plan_opt = a;
        } else if (cli_opt_value(argc, argv, &i, "--device", &opt, "info", &err)) {
            if (err) return CLI_EXIT_USAGE;
            device = opt;
        } else if (cli_opt_value(argc, argv, &i, "--top", &opt, "info", &err)) {
            if (err) return CLI_EXIT_USAGE;
            int rc = cli_i64_flag("info", "--top", opt, 0, 1000000, &top);
            if (rc >= 0) return rc;
            top_given = true;
        } else if (err) {
            return CLI_EXIT_USAGE;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("info", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("info", "unexpected argument '%s' (one model at a time)", a);
        }
    }
    if (!path) return cli_usage_error("info", "no model given");
    if (!plan && plan_opt)
        return cli_usage_error("info", "'%s' only applies with --plan (without it, only the limits.* and progress "
                               "options and --max-*-bytes)", plan_opt);
    if (!plan && (n_shapes || device || top_given))
        return cli_usage_error("info", "--shape, --device, --top and --option only apply with --plan");
    if (json && dump) return cli_usage_error("info", "--json and --dump-ir cannot be combined");
    cli_json_errors(json);
    if (quiet) {
        int qrc = cli_quiet(&g_opts, "info");
        if (qrc >= 0) return qrc;
    }
    bool progress = cli_progress_wanted(g_opts, quiet);

    double t0 = rlx_now_seconds();
    rlx_model *m = NULL;
    cli_progress(progress, "rlx: loading %s", path);
    rlx_status st = rlx_model_load_onnx_with_options(path, g_opts, &m);
    cli_progress_end(progress);
    if (st) {
        rlx_options_destroy(g_opts);
        g_opts = NULL;
        return cli_fail_model(st, path);
    }
    double t_load = rlx_now_seconds() - t0;
    rlx_model_summary ms;
    rlx_model_get_summary(m, &ms);
    char tb[32];
    cli_json jj, *j = json ? &jj : NULL;
    if (j) {
        cli_json_init(j, stdout);
        cli_json_obj(j, NULL);
        cli_json_s(j, "model", path);
        cli_json_n(j, "import_ms", t_load * 1e3);
        cli_json_i(j, "opset", ms.opset);
    } else {
        printf("model: %s (imported in %s)\n", cli_esc(path), cli_time_str(t_load, tb, sizeof tb));
        printf("opset: %lld (default ONNX domain)\n", (long long)ms.opset);
    }
    print_values(m, true, j);
    print_overridable(m, j);
    print_values(m, false, j);

    /* the nodes as the file writes them: a node that the import expanded
     * (a com.microsoft contrib op) counts once under its own op, the nodes
     * it became listed beside it, as onnxruntime's tools count them */
    op_count *counts = calloc(ms.n_nodes + 1, sizeof *counts);
    op_count *made = calloc(ms.n_nodes + 1, sizeof *made); /* per expanded op: the ops it became */
    size_t *made_of = calloc(ms.n_nodes + 1, sizeof *made_of), *seen = calloc(ms.n_nodes + 1, sizeof *seen);
    if (!counts || !made || !made_of || !seen) {
        free(counts);
        free(made);
        free(made_of);
        free(seen);
        rlx_model_destroy(m);
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    size_t n_ops = 0, n_made = 0, n_seen = 0, imported = 0;
    for (size_t i = 0; i < ms.n_nodes; i++) {
        rlx_node_info nd;
        rlx_node_origin org;
        if (rlx_model_node_info(m, i, &nd) || rlx_model_node_origin(m, i, &org)) continue;
        imported++;
        const char *dom = org.expansion ? org.domain : nd.domain, *op = org.expansion ? org.op : nd.op;
        size_t k = 0;
        while (k < n_ops && !(strcmp(counts[k].op, op) == 0 && strcmp(counts[k].domain, dom) == 0)) k++;
        if (k == n_ops) counts[n_ops++] = (op_count){ dom, op, 0 };
        if (!org.expansion) {
            counts[k].n++;
            continue;
        }
        size_t e = 0; /* one count per file node */
        while (e < n_seen && seen[e] != org.expansion) e++;
        if (e == n_seen) {
            seen[n_seen++] = org.expansion;
            counts[k].n++;
        }
        size_t q = 0;
        while (q < n_made && !(made_of[q] == k && strcmp(made[q].op, nd.op) == 0 &&
                               strcmp(made[q].domain, nd.domain) == 0)) q++;
        if (q == n_made) {
            made_of[n_made] = k;
            made[n_made++] = (op_count){ nd.domain, nd.op, 0 };
        }
        made[q].n++;
    }
    /* the expansions' ops follow their row once sorted: key by op name */
    size_t live = 0;
    for (size_t k = 0; k < n_ops; k++) live += (size_t)counts[k].n;
    op_count *sorted = malloc((n_ops + 1) * sizeof *sorted);
    if (sorted) memcpy(sorted, counts, n_ops * sizeof *counts);
    if (sorted) qsort(sorted, n_ops, sizeof *sorted, cmp_count);
    const op_count *rows = sorted ? sorted : counts;
    if (j) {
        cli_json_u(j, "nodes", live);
        cli_json_u(j, "imported_nodes", imported);
        cli_json_arr(j, "ops");
        for (size_t r = 0; r < n_ops; r++) {
            size_t k = 0;
            while (k < n_ops && !(counts[k].op == rows[r].op && counts[k].domain == rows[r].domain)) k++;
            cli_json_obj(j, NULL);
            cli_json_s(j, "domain", rows[r].domain);
            cli_json_s(j, "op", rows[r].op);
            cli_json_i(j, "count", rows[r].n);
            bool any = false;
            for (size_t q = 0; q < n_made; q++) {
                if (made_of[q] != k) continue;
                if (!any) cli_json_arr(j, "imported_as");
                any = true;
                cli_json_obj(j, NULL);
                cli_json_s(j, "domain", made[q].domain);
                cli_json_s(j, "op", made[q].op);
                cli_json_i(j, "count", made[q].n);
                cli_json_end_obj(j);
            }
            if (any) cli_json_end_arr(j);
            cli_json_end_obj(j);
        }
        cli_json_end_arr(j);
    } else {
        if (n_seen)
            printf("nodes: %zu (%zu op types) as the file writes them; imported as %zu nodes\n", live, n_ops,
                   imported);
        else
            printf("nodes: %zu (%zu op types)\n", live, n_ops);
        for (size_t r = 0; r < n_ops; r++) {
            size_t k = 0;
            while (k < n_ops && !(counts[k].op == rows[r].op && counts[k].domain == rows[r].domain)) k++;
            char name[300], as[600] = "";
            snprintf(name, sizeof name, "%s%s%s", rows[r].domain, rows[r].domain[0] ? "." : "", rows[r].op);
            size_t o = 0, n_as = 0;
            for (size_t q = 0; q < n_made && o < sizeof as; q++) {
                if (made_of[q] != k) continue;
                n_as += (size_t)made[q].n;
                o += (size_t)snprintf(as + o, sizeof as - o, "%s%s%s%s", o ? ", " : "", made[q].domain,
                                      made[q].domain[0] ? "." : "", made[q].op);
                if (made[q].n > 1 && o < sizeof as) o += (size_t)snprintf(as + o, sizeof as - o, " x%d", made[q].n);
            }
            if (n_as)
                printf("  %-28s %6d  (expanded at import into %zu node%s: %s)\n", cli_esc(name), rows[r].n, n_as,
                       n_as == 1 ? "" : "s", cli_esc(as));
            else
                printf("  %-28s %6d\n", cli_esc(name), rows[r].n);
        }
    }
    free(sorted);
    free(made);
    free(made_of);
    free(seen);
    free(counts);

    char bb[64];
    if (j) {
        cli_json_u(j, "initializers", ms.n_initializers);
        cli_json_u(j, "initializer_bytes", ms.initializer_bytes);
        cli_json_u(j, "constants", ms.n_constants);
        cli_json_u(j, "constant_bytes", ms.constant_bytes);
    } else {
        printf("initializers: %zu, %s\n", ms.n_initializers, cli_bytes_long_str(ms.initializer_bytes, bb, sizeof bb));
        printf("other constant values (from Constant nodes): %zu, %s\n", ms.n_constants,
               cli_bytes_long_str(ms.constant_bytes, bb, sizeof bb));
    }
    if (dump) {
        printf("\n");
        fflush(stdout);
        rlx_model_dump(m, stdout);
    }
    int rc = CLI_EXIT_OK;
    if (plan) rc = print_plan(m, shapes, n_shapes, device ? device : "cpu", (size_t)top, j);
    if (j) {
        cli_json_error_member(j);
        cli_json_end_obj(j);
    }
    rlx_options_destroy(g_opts);
    g_opts = NULL;
    rlx_model_destroy(m);
    return rc;
}
