/* steady_alloc MODEL.onnx THREADS [WARMUP [RUNS]]
 *
 * Runs MODEL on the CPU device with cpu.threads=THREADS: one first run,
 * WARMUP (default 5) warm-up runs, then RUNS (default 10) steady runs into
 * the same outputs (rlx_session_run_into), and counts the heap allocations
 * of the steady runs, less the per-thread scratch's growths (base/scratch.h:
 * grow-only, so at most a few late ones when a pool thread first takes a
 * node's largest task on a later run), with the allocation-counting shim
 * (tests/alloc/alloc_count.c, LD_PRELOADed). Every input, and every
 * overridable initializer (fed too: the sub-session route), must be f32
 * with static dims (filled with values in [-1, 1)); the plan must be compiled
 * (not eager: models with control flow run eagerly and are refused, as
 * rlx_session_run_into refuses them). Prints
 * "steady_alloc MODEL threads=T allocations=N runs=R" and exits 0 when N
 * is 0, 1 when it is not, 2 on a usage or rlx error, 77 when the shim is
 * not loaded (skip). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/scratch.h"
#include "rlx/rlx.h"

static int fail(const char *what, rlx_status st) {
    fprintf(stderr, "steady_alloc: %s: %s\n", what, st ? rlx_last_error() : "bad input");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: steady_alloc MODEL.onnx THREADS [WARMUP [RUNS]]\n");
        return 2;
    }
    unsigned long long (*count)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "rlx_alloc_count");
    if (!count) {
        fprintf(stderr, "steady_alloc: the allocation-counting shim is not loaded (LD_PRELOAD)\n");
        return 77;
    }
    int warmup = argc > 3 ? atoi(argv[3]) : 5, runs = argc > 4 ? atoi(argv[4]) : 10;
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_options *o = NULL;
    rlx_status st = rlx_model_load_onnx(argv[1], &m);
    if (st) return fail("load", st);
    if ((st = rlx_options_create(&o)) || (st = rlx_options_set(o, "cpu.threads", argv[2])) ||
        (st = rlx_session_create_with_options(m, &(rlx_session_options){ .device = "cpu" }, o, &s)))
        return fail("session", st);
    size_t n_graph_in = rlx_model_num_inputs(m), n_in = n_graph_in + rlx_model_num_overridable_initializers(m);
    const char **names = calloc(n_in + 1, sizeof *names);
    rlx_tensor **in = calloc(n_in + 1, sizeof *in);
    if (!names || !in) return fail("out of memory", RLX_OK);
    uint32_t seed = 12345;
    for (size_t i = 0; i < n_in; i++) {
        rlx_value_info vi;
        if ((st = i < n_graph_in ? rlx_model_input_info(m, i, &vi)
                                 : rlx_model_overridable_initializer_info(m, i - n_graph_in, &vi)))
            return fail("input info", st);
        if (vi.dtype != RLX_DTYPE_F32 || vi.rank < 0) return fail(vi.name, RLX_OK);
        for (int d = 0; d < vi.rank; d++)
            if (vi.dims[d] < 0) return fail(vi.name, RLX_OK);
        if ((st = rlx_tensor_create(RLX_DTYPE_F32, vi.dims, vi.rank, &in[i]))) return fail("tensor", st);
        float *p = in[i]->data;
        for (size_t e = 0; e < rlx_tensor_numel(in[i]); e++) {
            seed = seed * 1664525u + 1013904223u;
            p[e] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
        }
        names[i] = vi.name;
    }
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    if ((st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)in, &out, &n_out))) return fail("first run", st);
    for (int r = 0; r < warmup; r++)
        if ((st = rlx_session_run_into(s, n_in, names, (const rlx_tensor *const *)in, out))) return fail("warm-up run", st);
    /* the steady runs' allocations, if any, print their callers on stderr
     * ("alloc OBJECT+0xOFFSET": addr2line -f -i -e OBJECT OFFSET) */
    void (*trace)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "rlx_alloc_trace_from_now");
    if (trace) trace();
    unsigned long long before = count(), grown = rlx_scratch_growths();
    for (int r = 0; r < runs; r++)
        if ((st = rlx_session_run_into(s, n_in, names, (const rlx_tensor *const *)in, out))) return fail("steady run", st);
    unsigned long long all = count() - before, growths = rlx_scratch_growths() - grown, n = all - growths;
    printf("steady_alloc %s threads=%s allocations=%llu runs=%d (scratch growths %llu)\n", argv[1], argv[2], n, runs,
           growths);
    for (size_t i = 0; i < n_out; i++) rlx_tensor_destroy(out[i]);
    free(out);
    for (size_t i = 0; i < n_in; i++) rlx_tensor_destroy(in[i]);
    free(in);
    free(names);
    rlx_session_destroy(s);
    rlx_options_destroy(o);
    rlx_model_destroy(m);
    return n ? 1 : 0;
}
