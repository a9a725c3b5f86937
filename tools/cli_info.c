/* `rlx info MODEL.onnx [--dump-ir]`: what a model is made of, as rlx
 * imported it (opset, inputs and outputs with symbolic dims, node count per
 * op type, initializers and other constants), optionally the IR dump. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "base/platform.h"
#include "cli.h"
#include "ir/graph.h"
#include "runtime/model.h"

static void print_help(FILE *f) {
    fprintf(f,
            "usage: rlx info MODEL.onnx [--dump-ir]\n"
            "\n"
            "Loads an ONNX model (shapes inferred, graph verified) and prints: the opset\n"
            "of the default domain; each graph input and output with dtype and shape\n"
            "(symbolic dims by name, '?' for an unnamed dynamic dim); the node count per\n"
            "op type; the initializer count and bytes; and the other constant values\n"
            "(from Constant nodes) with their bytes.\n"
            "\n"
            "options:\n"
            "  --dump-ir    also print the graph as rlx holds it (values with shapes,\n"
            "               nodes with their op version and attributes)\n"
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

static void print_values(const rlx_model *m, bool inputs) {
    size_t n = inputs ? rlx_model_num_inputs(m) : rlx_model_num_outputs(m);
    printf("%s: %zu\n", inputs ? "inputs" : "outputs", n);
    for (size_t i = 0; i < n; i++) {
        rlx_value_info vi;
        rlx_status st = inputs ? rlx_model_input_info(m, i, &vi) : rlx_model_output_info(m, i, &vi);
        if (st) continue;
        char sh[512];
        printf("  %-24s %-5s %s\n", vi.name, vi.dtype ? rlx_dtype_name(vi.dtype) : "?",
               cli_info_shape_str(&vi, sh, sizeof sh));
    }
}

int cli_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool dump = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--dump-ir") == 0) {
            dump = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("info", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("info", "unexpected argument '%s' (one model at a time)", a);
        }
    }
    if (!path) return cli_usage_error("info", "no model given");

    double t0 = rlx_now_seconds();
    rlx_model *m = NULL;
    rlx_status st = rlx_model_load_onnx(path, &m);
    if (st) {
        return cli_fail_model(st, path);
    }
    double t_load = rlx_now_seconds() - t0;
    const rlx_graph *g = m->g;
    char tb[32];
    printf("model: %s (imported in %s)\n", path, cli_time_str(t_load, tb, sizeof tb));
    printf("opset: %lld (default ONNX domain)\n", (long long)g->opset);
    print_values(m, true);
    print_values(m, false);

    op_count *counts = calloc(g->n_nodes + 1, sizeof *counts);
    if (!counts) {
        rlx_model_destroy(m);
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    size_t n_ops = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *nd = &g->nodes[i];
        if (nd->dead) continue;
        const char *dom = nd->domain ? nd->domain : "";
        size_t j = 0;
        while (j < n_ops && !(strcmp(counts[j].op, nd->op_type) == 0 && strcmp(counts[j].domain, dom) == 0)) j++;
        if (j == n_ops) counts[n_ops++] = (op_count){ dom, nd->op_type, 0 };
        counts[j].n++;
    }
    qsort(counts, n_ops, sizeof *counts, cmp_count);
    size_t live = 0;
    for (size_t j = 0; j < n_ops; j++) live += (size_t)counts[j].n;
    printf("nodes: %zu (%zu op types)\n", live, n_ops);
    for (size_t j = 0; j < n_ops; j++) {
        char name[300];
        snprintf(name, sizeof name, "%s%s%s", counts[j].domain, counts[j].domain[0] ? "." : "", counts[j].op);
        printf("  %-28s %6d\n", name, counts[j].n);
    }
    free(counts);

    size_t n_init = 0, n_other = 0;
    uint64_t b_init = 0, b_other = 0;
    for (size_t i = 0; i < g->n_values; i++) {
        const rlx_value *v = &g->values[i];
        if (!v->konst) continue;
        if (v->flags & RLX_VALUE_INITIALIZER) {
            n_init++;
            b_init += v->konst->nbytes;
        } else {
            n_other++;
            b_other += v->konst->nbytes;
        }
    }
    char bb[64];
    printf("initializers: %zu, %s\n", n_init, cli_bytes_long_str(b_init, bb, sizeof bb));
    printf("other constant values (from Constant nodes): %zu, %s\n", n_other,
           cli_bytes_long_str(b_other, bb, sizeof bb));
    if (dump) {
        printf("\n");
        fflush(stdout);
        rlx_graph_dump(g, stdout);
    }
    rlx_model_destroy(m);
    return CLI_EXIT_OK;
}
