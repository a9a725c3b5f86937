/* Times one f32 LSTM / GRU / RNN node on the CPU backend's recurrent fast
 * path (cpu_rnn.c) as a model runs it: W and R constant and packed as at
 * compile time (rlx_cpu_prepare_node), under each batch-group setting of
 * RNN_NODE_GROUPS (comma-separated; 0: the rule, the default "0"), the
 * settings interleaved call by call; prints the median and minimum wall
 * time of ITERS calls (us) per setting and the slices the run used.
 * Threads: RLX_NUM_THREADS.
 *
 *   build/tests/rnn_node ITERS OP:DIRECTION:T:N:I:H ...
 *
 * OP LSTM, GRU (linear_before_reset 1, as PyTorch exports it) or RNN;
 * DIRECTION forward, reverse or bidirectional. The LSTM:
 * LSTM:bidirectional:21:30:224:224. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "rlx/inspect.h"
#include "test.h"
#include "test_node.h"

#define MAX_SETTINGS 8

static double wall_us(void) { return rlx_now_seconds() * 1e6; }

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 50;
    if (iters < 1) iters = 1;
    int settings[MAX_SETTINGS], n_set = 0;
    const char *gs = getenv("RNN_NODE_GROUPS") ? getenv("RNN_NODE_GROUPS") : "0";
    for (char *end; *gs && n_set < MAX_SETTINGS; gs = *end ? end + 1 : end) {
        settings[n_set++] = (int)strtol(gs, &end, 10);
        if (end == gs) break;
    }
    printf("threads %d\n", rlx_parallel_threads());
    for (int a = 2; a < argc; a++) {
        char op[8], dir[16];
        long T, N, I, H;
        if (sscanf(argv[a], "%7[A-Z]:%15[a-z]:%ld:%ld:%ld:%ld", op, dir, &T, &N, &I, &H) != 6 || T < 1 || N < 1 ||
            I < 1 || H < 1 || (strcmp(op, "LSTM") && strcmp(op, "GRU") && strcmp(op, "RNN"))) {
            fprintf(stderr, "bad node '%s' (OP:DIRECTION:T:N:I:H)\n", argv[a]);
            return 2;
        }
        int64_t G = !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1, D = !strcmp(dir, "bidirectional") ? 2 : 1;
        int64_t dx[3] = { T, N, I }, dw[3] = { D, G * H, I }, dr[3] = { D, G * H, H }, db[2] = { D, 2 * G * H };
        int64_t dy[4] = { T, D, N, H }, dh[3] = { D, N, H };
        rlx_node_attr at[3];
        memset(at, 0, sizeof at);
        at[0].name = "direction", at[0].type = RLX_ATTR_STRING, at[0].s = dir;
        at[1].name = "hidden_size", at[1].type = RLX_ATTR_INT, at[1].i = H;
        at[2].name = "linear_before_reset", at[2].type = RLX_ATTR_INT, at[2].i = 1;
        int n_out = G == 4 ? 3 : 2;
        rlx_node n = test_make_node(op, 14, 4, n_out, at, G == 3 ? 3 : 2);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -1.0f, 1.0f),
                   *w = test_tensor_random(RLX_DTYPE_F32, 3, dw, -0.1f, 0.1f),
                   *r = test_tensor_random(RLX_DTYPE_F32, 3, dr, -0.1f, 0.1f),
                   *b = test_tensor_random(RLX_DTYPE_F32, 2, db, -0.1f, 0.1f);
        rlx_tensor *out[3] = { test_tensor(RLX_DTYPE_F32, 4, dy), test_tensor(RLX_DTYPE_F32, 3, dh),
                               G == 4 ? test_tensor(RLX_DTYPE_F32, 3, dh) : NULL };
        const rlx_tensor *in[4] = { x, w, r, b };
        rlx_cpu_sgemm_pack pk[MAX_SETTINGS];
        double *t = malloc((size_t)iters * (size_t)n_set * sizeof(double));
        if (!t) return 1;
        for (int v = 0; v < n_set; v++) { /* each setting's packs, as its compile would make them */
            rlx_cpu_rnn_groups(settings[v]);
            if (rlx_cpu_prepare_node(NULL, &n, in, &pk[v])) {
                fprintf(stderr, "prepare: %s\n", rlx_last_error());
                return 1;
            }
        }
        for (int it = -3; it < iters; it++)
            for (int v = 0; v < n_set; v++) {
                rlx_cpu_rnn_groups(settings[v]);
                double t0 = wall_us();
                if (rlx_cpu_run_node_packed(NULL, &n, in, out, &pk[v])) {
                    fprintf(stderr, "run: %s\n", rlx_last_error());
                    return 1;
                }
                if (it >= 0) t[(size_t)v * (size_t)iters + (size_t)it] = wall_us() - t0;
            }
        for (int v = 0; v < n_set; v++) {
            double *tv = t + (size_t)v * (size_t)iters;
            qsort(tv, (size_t)iters, sizeof *tv, test_cmp_double);
            printf("%s groups %d: median %.1f us, min %.1f us\n", argv[a], settings[v], tv[iters / 2], tv[0]);
            rlx_cpu_sgemm_pack_free(&pk[v]);
        }
        rlx_cpu_rnn_groups(0);
        free(t);
        for (int i = 0; i < 4; i++) rlx_tensor_destroy((rlx_tensor *)in[i]);
        for (int i = 0; i < 3; i++) rlx_tensor_destroy(out[i]);
    }
    return 0;
}
