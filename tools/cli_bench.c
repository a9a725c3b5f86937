/* `rlx bench MODEL.onnx ...`: times whole forward passes of a model on a
 * device. Reports the compile split (import, passes, lowering, pipeline
 * creation, buffers, bind groups), the median / p10 / p90 of steady
 * forward passes by the wall clock (outputs filled in place: nothing is
 * allocated per pass), the GPU time of a pass from timestamp queries where
 * the adapter has them, and optionally writes a Chrome / Perfetto trace
 * (JSON "traceEvents") with one slice per dispatch. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx/inspect.h"

static void print_help(FILE *f) {
    fprintf(f,
            "usage: rlx bench MODEL.onnx [options]\n"
            "\n"
            "Times forward passes of MODEL.onnx on a device: the first run (which compiles a\n"
            "plan for the input shapes), then --warmup untimed runs, then --iters timed runs.\n"
            "Steady runs fill the same output tensors in place, so a pass is the input\n"
            "upload, the dispatches and the read-back of the outputs, nothing else (a model\n"
            "with string outputs, or a plan that runs eagerly, allocates them each run).\n"
            "\n"
            "options:\n"
            "  --device DEV          cpu (default), gpu or gpu:N (see 'rlx devices')\n"
            CLI_OPTION_HELP
            "  --shape NAME=DIMS     shape of a generated input, e.g. x=1x3x224x224 (repeatable);\n"
            "                        symbolic dims not given are 1\n"
            "  --input NAME=FILE.npy feed input NAME from a .npy file (repeatable)\n"
            "  --seed S              seed of the generated inputs (0 to 2^63-1, default 0)\n"
            "  --warmup N            untimed runs after the first (default 5)\n"
            "  --iters N             timed runs (default 20)\n"
            "  --gpu-iters N         runs timed with GPU timestamps (default --iters; 0 skips);\n"
            "                        a GPU device only: on a CPU device it is ignored and a\n"
            "                        note on stderr says so\n"
            "  --json                print one JSON object instead of text (times in ms, sizes\n"
            "                        in bytes, shapes as arrays; with --profile a \"profile\"\n"
            "                        object: total_us, ops and nodes)\n"
            "                        on an error {\"error\": {\"status\": S, \"message\": M}}\n"
            "                        (inside the result object if it had begun):\n"
            "                        S an rlx_status name (rlx.h), or from the command line\n"
            "                        itself RLX_ERR_USAGE (exit 2) or RLX_ERR_FAILURE (exit 1)\n"
            "  --quiet               no progress lines on stderr (the option progress=off)\n"
            "  --profile FILE.json   also time each step over 3 runs (GPU dispatches by GPU\n"
            "                        timestamps; CPU steps, and every step of a CPU session, by\n"
            "                        the host clock) and write a Chrome/Perfetto trace of the\n"
            "                        median run: one slice per dispatch or CPU step with its\n"
            "                        kernel, node, op, output shape and time; print the N\n"
            "                        costliest ops and nodes\n"
            "  --top N               with --profile, list the N costliest ops and nodes\n"
            "                        (default 12)\n"
            "  -h, --help            print this help and exit\n"
            "\n"
            "Generated inputs: floats uniform in [-1, 1), integers in [0, 10) (1 for inputs\n"
            "whose name contains 'mask', 0 for names with 'type' or 'segment'), bools 0/1.\n"
            "\n"
            "GPU time is the time between the first and the last timestamp of each GPU\n"
            "segment (one submit), summed over the segments of a pass; it needs the adapter\n"
            "feature timestamp-query (per-dispatch slices inside one pass also need\n"
            "wgpu-native's TimestampQueryInsidePasses, else each dispatch gets its own pass).\n"
            "The JSON lists under \"options\" (by key) every session option given by\n"
            "--option (or a flag short for one: --max-*-bytes, --timeout, --quiet's progress=off) or\n"
            "by its environment variable, also when the value equals the default, and\n"
            "under \"env\" (by variable) those the environment gave. Values are typed as\n"
            "'rlx options --json' types defaults: bools true/false, ints and floats\n"
            "numbers, the rest (and \"auto\", \"4G\") strings.\n"
            "\n"
            "Exit codes: 0 success; 2 usage error or a model that cannot be loaded; 1 other\n"
            "runtime failures.\n");
}

typedef struct bench_opts {
    cli_model_args m; /* model, --device, --input, --shape, --seed, --warmup, --iters, --json, --quiet, --option */
    const char *profile;
    int64_t gpu_iters, top;
    bool gpu_iters_given; /* --gpu-iters on the command line */
} bench_opts;

static int parse_args(int argc, char **argv, bench_opts *o) {
    o->m.device = "cpu";
    o->m.warmup = 5;
    o->m.iters = 20;
    o->gpu_iters = -1;
    o->top = 12;
    bool top_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool err = false;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "--gpu-iters", &v, "bench", &err)) {
            if (err) return CLI_EXIT_USAGE;
            int rc = cli_i64_flag("bench", "--gpu-iters", v, 0, 1000000, &o->gpu_iters);
            if (rc >= 0) return rc;
            o->gpu_iters_given = true;
        } else if (cli_opt_value(argc, argv, &i, "--top", &v, "bench", &err)) {
            if (err) return CLI_EXIT_USAGE;
            int rc = cli_i64_flag("bench", "--top", v, 0, 10000, &o->top);
            if (rc >= 0) return rc;
            top_given = true;
        } else if (cli_opt_value(argc, argv, &i, "--profile", &v, "bench", &err)) {
            if (err) return CLI_EXIT_USAGE;
            if (!*v) return cli_usage_error("bench", "--profile needs a file name");
            o->profile = v;
        } else {
            int rc = cli_model_arg(argc, argv, &i, "bench", 1, &o->m);
            if (rc >= 0) return rc;
        }
    }
    if (!o->m.model) return cli_usage_error("bench", "no model given");
    if (top_given && !o->profile) return cli_usage_error("bench", "--top only applies with --profile");
    if (o->gpu_iters < 0) o->gpu_iters = o->m.iters;
    return -1;
}

/* ------------------------------------------------------------ inputs */

/* ------------------------------------------------------------ statistics */

/* One steady run: into the same outputs (rlx_session_run_into), or, for a
 * plan that cannot fill them in place (eager plans, string outputs, which
 * own their characters), one that allocates them, freed at once. */
static rlx_status bench_run(rlx_session *s, bool into, size_t n_in, const char *const *names,
                            const rlx_tensor *const *inputs, rlx_tensor **outs) {
    if (into) return rlx_session_run_into(s, n_in, names, inputs, outs);
    rlx_tensor **tmp = NULL;
    size_t nt = 0;
    rlx_status st = rlx_session_run(s, n_in, names, inputs, &tmp, &nt);
    for (size_t i = 0; i < nt; i++) rlx_tensor_destroy(tmp[i]);
    free(tmp);
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct summary {
    double median, p10, p90, min, mean;
    size_t n;
} summary;

/* Nearest-rank percentiles of v[0..n) (sorted in place). */
static summary summarise(double *v, size_t n) {
    summary s = { 0 };
    if (!n) return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.n = n;
    s.median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    size_t k10 = (size_t)ceil(0.10 * (double)n), k90 = (size_t)ceil(0.90 * (double)n);
    s.p10 = v[k10 ? k10 - 1 : 0];
    s.p90 = v[k90 ? (k90 - 1 < n ? k90 - 1 : n - 1) : 0];
    s.min = v[0];
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    s.mean = sum / (double)n;
    return s;
}

/* ------------------------------------------------------------ JSON helpers */

static void json_str(FILE *f, const char *s) { cli_json_string(f, s); }

/* The floating-point dtypes of the model's inputs and outputs, in the
 * order f32, f16, bf16, f64 (what the model computes in; gpu.f16 is a
 * separate matter: f16 storage of the weights of an f32 model). */
static size_t model_float_dtypes(const rlx_model *m, rlx_dtype *out) {
    static const rlx_dtype kinds[] = { RLX_DTYPE_F32, RLX_DTYPE_F16, RLX_DTYPE_BF16, RLX_DTYPE_F64 };
    bool seen[4] = { false };
    for (int io = 0; io < 2; io++) {
        size_t n = io ? rlx_model_num_outputs(m) : rlx_model_num_inputs(m);
        for (size_t i = 0; i < n; i++) {
            rlx_value_info vi;
            if (io ? rlx_model_output_info(m, i, &vi) : rlx_model_input_info(m, i, &vi)) continue;
            for (int k = 0; k < 4; k++) seen[k] |= vi.dtype == kinds[k];
        }
    }
    size_t n = 0;
    for (int k = 0; k < 4; k++)
        if (seen[k]) out[n++] = kinds[k];
    return n;
}

static void json_summary(cli_json *j, const char *name, const summary *s) {
    if (!s->n) {
        cli_json_s(j, name, NULL);
        return;
    }
    cli_json_obj(j, name);
    cli_json_n(j, "median", s->median);
    cli_json_n(j, "p10", s->p10);
    cli_json_n(j, "p90", s->p90);
    cli_json_n(j, "min", s->min);
    cli_json_n(j, "mean", s->mean);
    cli_json_u(j, "n", s->n);
    cli_json_end_obj(j);
}

/* "[1,3,224,224]" of input k (output k when `output`) of step `step` of
 * the session's last plan; "[]" when there is none, "[?]" for an unknown
 * rank */
static const char *step_value_shape(const rlx_session *s, int step, bool output, size_t k, char *buf, size_t cap) {
    rlx_plan_value v;
    if (step < 0 || rlx_session_plan_step_value(s, (size_t)step, output, k, &v) || !v.info.name) return "[]";
    if (v.info.rank < 0) return "[?]";
    return cli_shape_str(v.info.dims, v.info.rank, buf, cap);
}

/* ------------------------------------------------------------ profile */

typedef struct op_cost {
    const char *op;
    double us;
    int count;
} op_cost;

static int cmp_cost(const void *a, const void *b) {
    double x = ((const op_cost *)a)->us, y = ((const op_cost *)b)->us;
    return x > y ? -1 : x < y;
}

/* Writes the slices of one profiled run as a Chrome trace. */
static int write_trace(const char *path, const rlx_session *ss, const rlx_profile_slice *sl, size_t n, const char *device) {
    FILE *f = fopen(path, "w");
    if (!f) {
        cli_error("cannot write the profile '%s': %s", path, strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"device\": ");
    json_str(f, device);
    fprintf(f, "},\n\"traceEvents\": [\n");
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"rlx\"}},\n");
    fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"GPU dispatches\"}},\n");
    fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"CPU steps\"}}");
    for (size_t i = 0; i < n; i++) {
        const rlx_profile_slice *s = &sl[i];
        rlx_plan_step nd;
        bool have = s->step >= 0 && rlx_session_plan_step(ss, (size_t)s->step, &nd) == RLX_OK;
        char shp[256];
        fprintf(f, ",\n{\"name\": ");
        json_str(f, s->kernel);
        fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {",
                s->gpu ? "gpu" : "cpu", s->gpu ? 1 : 2, s->t0_us, s->dur_us);
        fprintf(f, "\"step\": %d, \"node\": ", s->step);
        json_str(f, have ? nd.node : "");
        fprintf(f, ", \"op\": ");
        json_str(f, have ? nd.op : "");
        fprintf(f, ", \"shape\": ");
        json_str(f, have && nd.n_outputs ? step_value_shape(ss, s->step, true, 0, shp, sizeof shp) : "[]");
        if (have && nd.n_inputs) {
            fprintf(f, ", \"inputs\": \"");
            for (size_t k = 0; k < nd.n_inputs; k++)
                fprintf(f, "%s%s", k ? " " : "", step_value_shape(ss, s->step, false, k, shp, sizeof shp));
            fprintf(f, "\"");
        }
        fprintf(f, ", \"%s\": %.3f}}", s->gpu ? "gpu_us" : "cpu_us", s->dur_us);
    }
    fprintf(f, "\n]}\n");
    if (fclose(f) != 0) {
        cli_error("cannot write the profile '%s': %s", path, strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    return -1;
}

/* What one profiled run cost, by op type and by step (node). */
typedef struct node_cost {
    int step;
    double us;
    int count;
} node_cost;

typedef struct profile_sum {
    op_cost *ops;
    size_t n_ops;
    node_cost *nodes;
    size_t n_nodes;
    size_t n_slices;
    double total_us; /* sum of the slices */
    bool gpu;        /* GPU timestamps (else the host clock) */
} profile_sum;

static int cmp_node_cost(const void *a, const void *b) {
    double x = ((const node_cost *)a)->us, y = ((const node_cost *)b)->us;
    return x > y ? -1 : x < y;
}

static void profile_free(profile_sum *p) {
    free(p->ops);
    free(p->nodes);
    memset(p, 0, sizeof *p);
}

/* Sums the slices by op type and by step, each sorted costliest first.
 * -1 on success, else an exit code. */
static int profile_summary(const rlx_session *s, const rlx_profile_slice *sl, size_t n, profile_sum *p) {
    memset(p, 0, sizeof *p);
    p->ops = calloc(n + 1, sizeof *p->ops);
    p->nodes = calloc(n + 1, sizeof *p->nodes);
    if (!p->ops || !p->nodes) {
        profile_free(p);
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    p->n_slices = n;
    for (size_t i = 0; i < n; i++) {
        const rlx_profile_slice *x = &sl[i];
        rlx_plan_step ps;
        const char *op = x->step >= 0 && !rlx_session_plan_step(s, (size_t)x->step, &ps) ? ps.op : "?";
        size_t j = 0;
        while (j < p->n_ops && strcmp(p->ops[j].op, op) != 0) j++;
        if (j == p->n_ops) p->ops[p->n_ops++] = (op_cost){ op, 0, 0 };
        p->ops[j].us += x->dur_us;
        p->ops[j].count++;
        size_t k = 0;
        while (k < p->n_nodes && p->nodes[k].step != x->step) k++;
        if (k == p->n_nodes) p->nodes[p->n_nodes++] = (node_cost){ x->step, 0, 0 };
        p->nodes[k].us += x->dur_us;
        p->nodes[k].count++;
        p->total_us += x->dur_us;
    }
    qsort(p->ops, p->n_ops, sizeof *p->ops, cmp_cost);
    qsort(p->nodes, p->n_nodes, sizeof *p->nodes, cmp_node_cost);
    return -1;
}

/* "node 'conv1' (Conv)" of a step; "step N" when it has no plan step. */
static void node_label(const rlx_session *s, int step, char *buf, size_t cap, const char **op) {
    rlx_plan_step ps;
    *op = "?";
    if (step >= 0 && !rlx_session_plan_step(s, (size_t)step, &ps)) {
        *op = ps.op;
        snprintf(buf, cap, "%s", ps.node[0] ? ps.node : "?");
    } else {
        snprintf(buf, cap, "step %d", step);
    }
}

/* The text summary: the `top` costliest ops, then nodes (names from the
 * model escaped, cli_esc). Malloc'ed. */
static char *profile_text(const rlx_session *s, const profile_sum *p, size_t top, const char *trace) {
    size_t cap = 1024 + 2 * top * 200, len = 0;
    char *t = malloc(cap);
    if (!t) return NULL;
    const char *how = p->gpu ? "per-dispatch GPU timestamps" : "per-step host clock";
    len += (size_t)snprintf(t + len, cap - len, "profile (%s, the median of 3 runs: %zu slices, %.1f us; trace in %.200s):\n",
                            how, p->n_slices, p->total_us, trace);
    len += (size_t)snprintf(t + len, cap - len, "costliest ops:\n");
    for (size_t j = 0; j < p->n_ops && j < top && len < cap; j++)
        len += (size_t)snprintf(t + len, cap - len, "  %-24.24s %5d slices %10.1f us  %5.1f%%\n", cli_esc(p->ops[j].op),
                                p->ops[j].count, p->ops[j].us, p->total_us > 0 ? 100.0 * p->ops[j].us / p->total_us : 0.0);
    if (len < cap) len += (size_t)snprintf(t + len, cap - len, "costliest nodes:\n");
    for (size_t j = 0; j < p->n_nodes && j < top && len < cap; j++) {
        char name[120];
        const char *op;
        node_label(s, p->nodes[j].step, name, sizeof name, &op);
        len += (size_t)snprintf(t + len, cap - len, "  node %-40.40s %-20.20s %10.1f us  %5.1f%%\n", cli_esc(name), cli_esc(op),
                                p->nodes[j].us, p->total_us > 0 ? 100.0 * p->nodes[j].us / p->total_us : 0.0);
    }
    return t;
}

static void profile_json(cli_json *j, const rlx_session *s, const profile_sum *p, const char *trace) {
    cli_json_obj(j, "profile");
    cli_json_s(j, "trace", trace);
    cli_json_s(j, "clock", p->gpu ? "gpu" : "host");
    cli_json_u(j, "slices", p->n_slices);
    cli_json_n(j, "total_us", p->total_us);
    int saved = j->pretty_depth;
    j->pretty_depth = 3;
    cli_json_arr(j, "ops");
    for (size_t k = 0; k < p->n_ops; k++) {
        cli_json_obj(j, NULL);
        cli_json_s(j, "op", p->ops[k].op);
        cli_json_i(j, "slices", p->ops[k].count);
        cli_json_n(j, "us", p->ops[k].us);
        cli_json_end_obj(j);
    }
    cli_json_end_arr(j);
    cli_json_arr(j, "nodes");
    for (size_t k = 0; k < p->n_nodes; k++) {
        char name[300];
        const char *op;
        node_label(s, p->nodes[k].step, name, sizeof name, &op);
        cli_json_obj(j, NULL);
        cli_json_i(j, "step", p->nodes[k].step);
        cli_json_s(j, "node", name);
        cli_json_s(j, "op", op);
        cli_json_i(j, "slices", p->nodes[k].count);
        cli_json_n(j, "us", p->nodes[k].us);
        cli_json_end_obj(j);
    }
    cli_json_end_arr(j);
    j->pretty_depth = saved;
    cli_json_end_obj(j);
}

/* ------------------------------------------------------------ command */

int cli_cmd_bench(int argc, char **argv) {
    bench_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        cli_model_args_free(&o.m);
        return rc;
    }
    cli_json_errors(o.m.json);
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_tensor **inputs = NULL;
    const char **names = NULL;
    rlx_tensor **outs = NULL;
    size_t n_out = 0, n_in = 0;
    double *wall = NULL, *gpu = NULL;
    summary sw = { 0 }, sg = { 0 };
    rlx_session_stats es;
    memset(&es, 0, sizeof es);
    char tb[5][32];
    FILE *txt = o.m.json ? stderr : stdout;
    char *prof_txt = NULL; /* the --profile summary, printed after the timings */
    profile_sum prof;
    memset(&prof, 0, sizeof prof);
    bool progress = cli_progress_wanted(o.m.opts, o.m.quiet);

    double t_import, t_session;
    if ((rc = cli_model_load(&o.m, progress, &m, &t_import)) >= 0) goto done;
    const cli_input_opts io = { "bench", &o.m.inputs, &o.m.shapes, o.m.seed, false, true, o.m.opts };
    if ((rc = cli_model_inputs(&io, m, o.m.model, &names, &inputs, &n_in)) >= 0) goto done;
    if ((rc = cli_model_session(&o.m, m, &s, &t_session)) >= 0) goto done;
    /* what the summary says of the model, read now: the session is then
     * the model's only holder, which lets cpu.release_packed free the
     * plain copy of its packed weights (a second copy otherwise) */
    rlx_dtype fdt[4];
    size_t n_fdt = model_float_dtypes(m, fdt);
    rlx_model_destroy(m);
    m = NULL;
    double t0 = rlx_now_seconds();
    rlx_status st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)inputs, &outs, &n_out);
    double t_first = rlx_now_seconds() - t0;
    /* a progress line per run once runs are slow enough to wait for */
    bool run_progress = progress && t_first > 0.5;
    if (st) {
        rc = cli_fail(st, "the first run failed");
        goto done;
    }
    rlx_session_get_stats(s, &es);
    const rlx_session_stats stats = es;
    bool prog = !es.eager, have_es = es.has_exe_stats;
    /* string outputs cannot be run into (rlx_session_run_into refused them:
     * "a timed run failed: ... use rlx_session_run") */
    bool into = prog;
    for (size_t i = 0; i < n_out; i++) into = into && outs[i]->dtype != RLX_DTYPE_STRING;
    bool is_gpu = rlx_session_device_kind(s) == RLX_DEVICE_GPU;
    if (!is_gpu && o.gpu_iters_given)
        fprintf(stderr, "rlx: note: --gpu-iters is ignored on device %s (GPU timestamps need a GPU device); "
                        "the wall-clock runs are --iters\n", cli_esc(rlx_session_device_name(s)));
    bool can_time = have_es && es.gpu_timing;

    /* steady runs into the same outputs */
    for (int64_t k = 0; k < o.m.warmup; k++) {
        cli_progress(run_progress, "rlx: warm-up run %lld/%lld", (long long)k + 1, (long long)o.m.warmup);
        st = prog ? bench_run(s, into, n_in, names, (const rlx_tensor *const *)inputs, outs) : RLX_OK;
        if (st) {
            rc = cli_fail(st, "a warm-up run failed");
            goto done;
        }
    }
    wall = calloc((size_t)o.m.iters + 1, sizeof *wall);
    gpu = calloc((size_t)o.gpu_iters + 1, sizeof *gpu);
    if (!wall || !gpu) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    for (int64_t k = 0; k < o.m.iters; k++) {
        cli_progress(run_progress, "rlx: timed run %lld/%lld", (long long)k + 1, (long long)o.m.iters);
        t0 = rlx_now_seconds(); /* eager plans and string outputs allocate their outputs */
        st = bench_run(s, into, n_in, names, (const rlx_tensor *const *)inputs, outs);
        wall[k] = (rlx_now_seconds() - t0) * 1e3;
        if (st) {
            rc = cli_fail(st, "a timed run failed");
            goto done;
        }
    }
    cli_progress_end(run_progress);
    sw = summarise(wall, (size_t)o.m.iters);

    /* GPU time from timestamps */
    size_t n_gpu = 0;
    if (can_time && o.gpu_iters > 0) {
        st = rlx_session_set_profiling(s, RLX_PROFILE_TOTAL);
        for (int64_t k = 0; k < o.gpu_iters && !st; k++) {
            cli_progress(run_progress, "rlx: run timed on the GPU %lld/%lld", (long long)k + 1, (long long)o.gpu_iters);
            st = bench_run(s, into, n_in, names, (const rlx_tensor *const *)inputs, outs);
            const rlx_profile_slice *sl;
            size_t nsl;
            double tot = 0;
            if (!st) rlx_session_profile(s, &sl, &nsl, &tot);
            gpu[n_gpu++] = tot * 1e-3;
        }
        rlx_session_set_profiling(s, RLX_PROFILE_OFF);
        cli_progress_end(run_progress);
        if (st) {
            rc = cli_fail(st, "a run timed with GPU timestamps failed");
            goto done;
        }
        sg = summarise(gpu, n_gpu);
    }

    /* per-step profile: 3 runs, the median one (by GPU time, or by the sum
     * of the host-clock steps on the CPU) is written and summarised */
    if (o.profile) {
        if (!prog) {
            cli_error("--profile: the plan runs eagerly on the CPU (control flow or data-dependent shapes): it has "
                      "no steps to time");
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
        if (is_gpu && !can_time) {
            cli_error("--profile: the device has no timestamp queries");
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
        st = rlx_session_set_profiling(s, RLX_PROFILE_STEPS);
        if (st) {
            rc = cli_fail(st, "--profile");
            goto done;
        }
        rlx_profile_slice *runs[3] = { NULL, NULL, NULL };
        size_t nsl[3] = { 0, 0, 0 };
        double tot[3] = { 0, 0, 0 };
        for (int k = 0; k < 3 && !st; k++) {
            cli_progress(progress, "rlx: profiling: run %d/3", k + 1);
            st = bench_run(s, into, n_in, names, (const rlx_tensor *const *)inputs, outs);
            const rlx_profile_slice *sl = NULL;
            if (!st) rlx_session_profile(s, &sl, &nsl[k], &tot[k]);
            runs[k] = malloc((nsl[k] + 1) * sizeof *sl);
            if (runs[k] && nsl[k]) memcpy(runs[k], sl, nsl[k] * sizeof *sl);
            if (!is_gpu)
                for (size_t i = 0; i < nsl[k]; i++) tot[k] += sl[i].dur_us;
        }
        cli_progress_end(progress);
        rlx_session_set_profiling(s, RLX_PROFILE_OFF);
        if (st) {
            for (int k = 0; k < 3; k++) free(runs[k]);
            rc = cli_fail(st, "a profiled run failed");
            goto done;
        }
        int med = 0;
        for (int k = 0; k < 3; k++) {
            int below = 0;
            for (int j = 0; j < 3; j++) below += tot[j] < tot[k];
            if (below == 1) med = k;
        }
        rc = runs[med] ? write_trace(o.profile, s, runs[med], nsl[med], rlx_session_device_name(s)) : CLI_EXIT_FAILURE;
        if (rc < 0) rc = profile_summary(s, runs[med], nsl[med], &prof);
        for (int k = 0; k < 3; k++) free(runs[k]);
        if (rc >= 0) goto done;
        prof.gpu = is_gpu;
        if (o.top > 0) prof_txt = profile_text(s, &prof, (size_t)o.top, o.profile);
    }

    double backend_s = stats.backend_compile_s;
    if (o.m.json) {
        cli_json jj, *j = &jj;
        cli_json_init(j, stdout);
        cli_json_obj(j, NULL);
        cli_json_run_head(j, o.m.model, s, o.m.device, n_in, names, inputs, &o.m.inputs);
        cli_json_s(j, "backend", es.backend);
        cli_json_b(j, "eager", !prog);
        cli_json_n(j, "import_ms", t_import * 1e3);
        cli_json_n(j, "session_ms", t_session * 1e3);
        cli_json_n(j, "first_run_ms", t_first * 1e3);
        cli_json_obj(j, "compile_ms");
        cli_json_n(j, "passes", stats.passes_s * 1e3);
        cli_json_n(j, "backend", backend_s * 1e3);
        cli_json_n(j, "lower", es.lower_s * 1e3);
        cli_json_n(j, "pipelines", es.pipelines_s * 1e3);
        cli_json_u(j, "pipelines_new", es.n_pipelines_new);
        cli_json_u(j, "pipelines_reused", es.n_pipelines_reused);
        cli_json_n(j, "pipelines_driver", es.pipelines_driver_s * 1e3);
        cli_json_n(j, "buffers", es.buffers_s * 1e3);
        cli_json_n(j, "bind_groups", es.bind_groups_s * 1e3);
        cli_json_end_obj(j);
        cli_json_i(j, "nodes_folded", stats.nodes_folded);
        cli_json_i(j, "nodes_fused", stats.nodes_fused);
        cli_json_i(j, "nodes_removed", stats.nodes_removed);
        cli_json_u(j, "dispatches", es.n_dispatches);
        cli_json_u(j, "gpu_segments", es.n_gpu_segments);
        cli_json_u(j, "cpu_steps", es.n_cpu_steps);
        cli_json_u(j, "arena_bytes", es.arena_bytes);
        cli_json_u(j, "weight_bytes", es.weight_bytes);
        cli_json_u(j, "scratch_bytes", es.scratch_bytes);
        cli_json_b(j, "gpu_timing", es.gpu_timing);
        cli_json_b(j, "timing_inside_passes", es.timing_inside_passes);
        cli_json_b(j, "f16_mode", es.f16_mode);
        cli_json_arr(j, "model_float_dtypes");
        for (size_t k = 0; k < n_fdt; k++) cli_json_s(j, NULL, rlx_dtype_name(fdt[k]));
        cli_json_end_arr(j);
        cli_json_s(j, "cooperative_matrix", es.gemm_note ? es.gemm_note : "");
        cli_json_s(j, "runtime_checks", es.runtime_checks_note ? es.runtime_checks_note : "");
        cli_json_s(j, "int8_products", es.int8_note ? es.int8_note : "");
        cli_json_u(j, "pipelines_unchecked", es.n_pipelines_unchecked);
        cli_json_i(j, "warmup", o.m.warmup);
        json_summary(j, "wall_ms", &sw);
        json_summary(j, "gpu_ms", &sg);
        if (o.profile) profile_json(j, s, &prof, o.profile);
        /* the options given, by key ("options": set by --option or by
         * their environment variable, even to the default value), and the
         * environment variables among them ("env"); values typed as
         * 'rlx options --json' types defaults */
        for (int pass = 0; pass < 2; pass++) {
            cli_json_obj(j, pass ? "env" : "options");
            for (size_t i = 0; i < rlx_option_count(); i++) {
                rlx_option_info in;
                const char *v = NULL;
                bool env = false;
                if (rlx_option_info_get(i, &in) || rlx_options_effective(o.m.opts, in.key, &v, &env) || !v) continue;
                if (!pass) cli_json_option(j, in.key, in.type, v);
                else if (env) cli_json_option(j, in.env, in.type, v);
            }
            cli_json_end_obj(j);
        }
        cli_json_error_member(j);
        cli_json_end_obj(j);
    } else {
        printf("model: %s\n", cli_esc(o.m.model));
        printf("device: %s (--device %s)\n", rlx_session_device_name(s), cli_esc(o.m.device));
        printf("compile:\n");
        printf("  import        %s\n", cli_time_str(t_import, tb[0], sizeof tb[0]));
        printf("  session       %s (device set-up)\n", cli_time_str(t_session, tb[0], sizeof tb[0]));
        printf("  passes        %s (%d folded, %d fused, %d removed)\n", cli_time_str(stats.passes_s, tb[0], sizeof tb[0]),
               stats.nodes_folded, stats.nodes_fused, stats.nodes_removed);
        printf("  backend       %s", cli_time_str(backend_s, tb[0], sizeof tb[0]));
        if (have_es)
            printf(" (lowering %s, pipelines %s: %zu created, %zu reused, driver's first-dispatch compile %s; "
                   "buffers+weights %s, bind groups %s)",
                   cli_time_str(es.lower_s, tb[1], sizeof tb[1]), cli_time_str(es.pipelines_s, tb[2], sizeof tb[2]),
                   es.n_pipelines_new, es.n_pipelines_reused, cli_time_str(es.pipelines_driver_s, tb[4], sizeof tb[4]),
                   cli_time_str(es.buffers_s, tb[3], sizeof tb[3]), cli_time_str(es.bind_groups_s, tb[0], sizeof tb[0]));
        printf("\n  first run     %s (compile included)\n", cli_time_str(t_first, tb[0], sizeof tb[0]));
        if (have_es && is_gpu) {
            /* gpu.f16 stores the weights of an f32 model as binary16; what
             * the model itself computes in is its dtype, said apart */
            char dts[64] = "";
            size_t o_ = 0;
            for (size_t k = 0; k < n_fdt && o_ < sizeof dts; k++)
                o_ += (size_t)snprintf(dts + o_, sizeof dts - o_, "%s%s", k ? " and " : "", rlx_dtype_name(fdt[k]));
            printf("gpu.f16 (f16 storage for the weights of f32 models): %s; model inputs/outputs: %s; "
                   "cooperative-matrix GEMM: %s\n", es.f16_mode ? "on" : "off", n_fdt ? dts : "no floats",
                   es.gemm_note && *es.gemm_note ? es.gemm_note : "off");
            if (es.runtime_checks_note) printf("shader runtime checks: %s\n", es.runtime_checks_note);
            if (es.int8_note) printf("integer GEMM products: %s\n", es.int8_note);
        }
        if (have_es)
            printf("plan: %zu dispatch%s in %zu GPU submit%s, %zu CPU step%s; arena %llu bytes, weights %llu bytes, "
                   "scratch %llu bytes\n",
                   es.n_dispatches, es.n_dispatches == 1 ? "" : "es", es.n_gpu_segments, es.n_gpu_segments == 1 ? "" : "s",
                   es.n_cpu_steps, es.n_cpu_steps == 1 ? "" : "s", (unsigned long long)es.arena_bytes,
                   (unsigned long long)es.weight_bytes, (unsigned long long)es.scratch_bytes);
        printf("forward pass (wall clock, %zu runs after %lld warm-up): median %s, p10 %s, p90 %s\n", sw.n,
               (long long)o.m.warmup, cli_time_str(sw.median * 1e-3, tb[0], sizeof tb[0]),
               cli_time_str(sw.p10 * 1e-3, tb[1], sizeof tb[1]), cli_time_str(sw.p90 * 1e-3, tb[2], sizeof tb[2]));
        if (sg.n)
            printf("forward pass (GPU timestamps, %zu runs): median %s, p10 %s, p90 %s\n", sg.n,
                   cli_time_str(sg.median * 1e-3, tb[0], sizeof tb[0]), cli_time_str(sg.p10 * 1e-3, tb[1], sizeof tb[1]),
                   cli_time_str(sg.p90 * 1e-3, tb[2], sizeof tb[2]));
        else if (prog && is_gpu)
            printf("forward pass (GPU timestamps): not measured (%s)\n",
                   can_time ? "--gpu-iters 0" : "the adapter has no timestamp queries");
    }
    if (prof_txt) fputs(prof_txt, txt);
    rc = CLI_EXIT_OK;
done:
    fflush(stdout);
    free(prof_txt);
    profile_free(&prof);
    free(wall);
    free(gpu);
    if (outs) {
        for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(outs[i]);
        free(outs);
    }
    cli_model_inputs_free(names, inputs, n_in);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    cli_model_args_free(&o.m);
    return rc;
}
