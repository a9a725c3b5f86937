/* Times one f32 Conv node on the CPU backend's fast paths as a model runs
 * it: batch N, the fused residual input (Conv's internal fourth input) and
 * Relu, the weights packed as at compile time (rlx_cpu_prepare_node), the
 * caches evicted before each call (64 MiB written) unless CONV_NODE_HOT=1;
 * prints the median and minimum thread CPU time (CONV_NODE_WALL=1: wall
 * time, for several threads) of ITERS calls (us) and GMAC/s of the
 * minimum. Threads: RLX_NUM_THREADS.
 *
 *   build/tests/conv_node ITERS N:CIN:COUT:H:K:S[:RES[:ACT[:GROUP]]] ...
 *
 * RES 1: a residual input; ACT 0 none, 1 Relu (default), 2 Clip(0, 6);
 * GROUP the group count (default 1; C_IN for depthwise). CONV_NODE_DW=1
 * / 2 / 3: depthwise convolutions on the plane / channel-blocked / row path
 * (rlx_nn_dw_force; the row path where it applies).
 * CONV_NODE_PW=1 / 2: the pointwise path never / wherever it applies
 * (rlx_nn_pw_force; default: by shape, as in a model); CONV_NODE_PWT and
 * CONV_NODE_IG the same for the channels-in-lanes path (rlx_nn_pwt_force)
 * and the implicit GEMM (rlx_nn_ig_force), CONV_NODE_WINO for the
 * Winograd path of 3x3 convolutions (rlx_nn_wino_force); CONV_NODE_PWT_GATHER=1: the
 * channels-in-lanes path gathers its positions from im2col instead of
 * reading them in place (rlx_nn_pwt_in_place); CONV_NODE_PWT_ORDER=1 / 2: its
 * tasks panel by panel / group by group (rlx_nn_pwt_order). CONV_NODE_WFLUSH=BITS
 * (with CONV_NODE_HOT=1): before each call, clflush only the transposed
 * weights of the channels-in-lanes path (1), the output (2), the input
 * (4), so that one operand comes from memory and the rest stays hot.
 * CONV_NODE_PW_PHASE=0 / 2: the pointwise path takes the positions of
 * strided convolutions from an im2col per run / always from phase rows
 * (rlx_nn_pw_phase_rows; default: by its rule). CONV_NODE_INPLACE=1 (with
 * RES 1): the output written over the residual input (only the pointwise
 * path's fused epilogue allows it: for measuring what a planner that let
 * them share would gain). */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/ops/act.h"
#include "test.h"
#include "test_node.h"

static bool g_wall; /* CONV_NODE_WALL=1: wall-clock time instead (several threads) */

static double cpu_us(void) {
    if (g_wall) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
    }
    return test_thread_cpu_seconds() * 1e6;
}

#define FLUSH_BYTES ((size_t)64 << 20)

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    if (iters < 1) iters = 1;
    bool hot = getenv("CONV_NODE_HOT") && atoi(getenv("CONV_NODE_HOT"));
    g_wall = getenv("CONV_NODE_WALL") && atoi(getenv("CONV_NODE_WALL"));
    unsigned char *flush = hot ? NULL : calloc(1, FLUSH_BYTES);
    if (getenv("CONV_NODE_PW")) rlx_nn_pw_force(atoi(getenv("CONV_NODE_PW")));
    if (getenv("CONV_NODE_PWT")) rlx_nn_pwt_force(atoi(getenv("CONV_NODE_PWT")));
    if (getenv("CONV_NODE_IG")) rlx_nn_ig_force(atoi(getenv("CONV_NODE_IG")));
    if (getenv("CONV_NODE_WINO")) rlx_nn_wino_force(atoi(getenv("CONV_NODE_WINO")));
    if (getenv("CONV_NODE_DW")) rlx_nn_dw_force(atoi(getenv("CONV_NODE_DW")));
    if (getenv("CONV_NODE_PW_PHASE")) rlx_nn_pw_phase_rows(atoi(getenv("CONV_NODE_PW_PHASE")));
    if (getenv("CONV_NODE_PWT_GATHER")) rlx_nn_pwt_in_place(!atoi(getenv("CONV_NODE_PWT_GATHER")));
    if (getenv("CONV_NODE_PWT_ORDER")) rlx_nn_pwt_order(atoi(getenv("CONV_NODE_PWT_ORDER")));
    printf("threads %d\n", rlx_parallel_threads());
    for (int a = 2; a < argc; a++) {
        long nb, cin, cout, h, k, s, res = 0, act = 1, grp = 1;
        if (sscanf(argv[a], "%ld:%ld:%ld:%ld:%ld:%ld:%ld:%ld:%ld", &nb, &cin, &cout, &h, &k, &s, &res, &act, &grp) < 6 ||
            grp < 1 || cin % grp || cout % grp) {
            fprintf(stderr, "bad shape '%s' (N:CIN:COUT:H:K:S[:RES[:ACT[:GROUP]]])\n", argv[a]);
            return 2;
        }
        long oh = (h + 2 * (k / 2) - k) / s + 1;
        int64_t xd[4] = { nb, cin, h, h }, wd[4] = { cout, cin / grp, k, k }, bd[1] = { cout }, yd[4] = { nb, cout, oh, oh };
        int64_t ks[2] = { k, k }, st[2] = { s, s }, pads[4] = { k / 2, k / 2, k / 2, k / 2 };
        rlx_node_attr at[7];
        memset(at, 0, sizeof at);
        at[0].name = "kernel_shape", at[0].type = RLX_ATTR_INTS, at[0].n = 2, at[0].ints = ks;
        at[1].name = "strides", at[1].type = RLX_ATTR_INTS, at[1].n = 2, at[1].ints = st;
        at[2].name = "pads", at[2].type = RLX_ATTR_INTS, at[2].n = 4, at[2].ints = pads;
        at[3].name = "_rlx_act", at[3].type = RLX_ATTR_INT, at[3].i = act == 2 ? RLX_ACT_CLIP : RLX_ACT_RELU;
        at[4].name = "_rlx_act_beta", at[4].type = RLX_ATTR_FLOAT, at[4].f = 6.0f;
        size_t n_at = act == 2 ? 5 : act ? 4 : 3;
        if (grp > 1) {
            at[n_at].name = "group", at[n_at].type = RLX_ATTR_INT, at[n_at].i = grp;
            n_at++;
        }
        rlx_node n = test_make_node("Conv", 11, res ? 4 : 3, 1, at, n_at);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1.0f, 1.0f),
                   *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -0.1f, 0.1f),
                   *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1.0f, 1.0f),
                   *r = test_tensor_random(RLX_DTYPE_F32, 4, yd, -1.0f, 1.0f),
                   *y = test_tensor_random(RLX_DTYPE_F32, 4, yd, -1.0f, 1.0f);
        const rlx_tensor *in[4] = { x, w, b, r };
        /* CONV_NODE_INPLACE=1 (with RES 1): the output written over the
         * residual (a planner that let them share; the pointwise path's
         * fused epilogue reads each residual element before writing it) */
        bool inplace = res && getenv("CONV_NODE_INPLACE") && atoi(getenv("CONV_NODE_INPLACE"));
        rlx_tensor *out[1] = { inplace ? r : y };
        rlx_cpu_sgemm_pack pk;
        if (rlx_cpu_prepare_node(NULL, &n, in, &pk)) {
            fprintf(stderr, "prepare: %s\n", rlx_last_error());
            return 1;
        }
        double *t = malloc((size_t)iters * sizeof(double));
        for (int it = -2; it < iters; it++) {
            if (flush)
                for (size_t i = 0; i < FLUSH_BYTES; i += 64) flush[i]++;
            int wf = getenv("CONV_NODE_WFLUSH") ? atoi(getenv("CONV_NODE_WFLUSH")) : 0;
            if ((wf & 1) && pk.wt) {
                const char *wb = (const char *)pk.wt;
                for (size_t i = 0; i < pk.wt_groups * pk.wt_lanes * pk.wt_k * sizeof(float); i += 64)
                    __builtin_ia32_clflush(wb + i);
            }
            if (wf & 2)
                for (size_t i = 0; i < rlx_tensor_numel(y) * sizeof(float); i += 64)
                    __builtin_ia32_clflush((const char *)y->data + i);
            if (wf & 4)
                for (size_t i = 0; i < rlx_tensor_numel(x) * sizeof(float); i += 64)
                    __builtin_ia32_clflush((const char *)x->data + i);
            __builtin_ia32_mfence();
            double t0 = cpu_us();
            if (rlx_cpu_run_node_packed(NULL, &n, in, out, &pk)) fprintf(stderr, "run: %s\n", rlx_last_error());
            if (it >= 0) t[it] = cpu_us() - t0;
        }
        qsort(t, (size_t)iters, sizeof(double), test_cmp_double);
        double macs = (double)nb * (double)cout * (double)(oh * oh) * (double)cin * (double)(k * k);
        printf("%s  med %8.1f min %8.1f us  %5.1f GMAC/s\n", argv[a], t[iters / 2], t[0], macs / t[0] / 1e3);
        fflush(stdout);
        free(t);
        rlx_cpu_sgemm_pack_free(&pk);
        rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b), rlx_tensor_destroy(r),
            rlx_tensor_destroy(y);
    }
    free(flush);
    return 0;
}
