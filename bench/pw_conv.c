/* Times single f32 1x1 (and other) Conv nodes on the CPU backend's fast
 * paths, the pointwise path (cpu_nn_pw.c) against im2col + GEMM
 * (rlx_nn_pw_force 2 / 1), weights packed as at compile time, alternating
 * the two paths call by call so that load from elsewhere hits both alike;
 * prints the median and the minimum microseconds of each and GMAC/s (of
 * the minimum). Threads: RLX_NUM_THREADS (default one per core).
 *
 *   build/pw_conv [ITERS] [CIN:COUT:H[:W[:GROUP[:K[:S[:ACT]]]]] ...]
 *
 * ACT: 0 none, 1 Clip(0, 6), 2 HardSwish. Without shapes: MobileNetV2's, ResNet-50's
 * and ShuffleNet's 1x1 shapes below.
 * Environment: PW_CONV_PWT=1 compares the channels-in-lanes path of 1x1
 * convolutions (cpu_nn_pwt.c, rlx_nn_pwt_force 2, its own packed weights)
 * with im2col + GEMM instead (the first column is then "pwt"; with
 * PW_CONV_PWT_GATHER=1 its stride-1 convolutions gather their positions
 * from im2col rather than reading them in place);
 * PW_CONV_COLD=1 evicts the caches before every call (writes 64 MiB), as
 * inside a model where each node's weights and input come from memory;
 * PW_CONV_CPU=1 times by the thread's CPU time (steadier under load). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
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
#include "rlx/inspect.h"
#include "test.h"
#include "test_node.h"

typedef struct shape {
    long cin, cout, h, w, group, k, s, act;
} shape;

static const shape k_default[] = {
    /* MobileNetV2 */
    { 32, 16, 112, 112, 1, 1, 1, 0 }, { 16, 96, 112, 112, 1, 1, 1, 1 }, { 96, 24, 56, 56, 1, 1, 1, 0 },
    { 24, 144, 56, 56, 1, 1, 1, 1 }, { 144, 24, 56, 56, 1, 1, 1, 0 }, { 144, 32, 28, 28, 1, 1, 1, 0 },
    { 32, 192, 28, 28, 1, 1, 1, 1 }, { 192, 32, 28, 28, 1, 1, 1, 0 }, { 64, 384, 14, 14, 1, 1, 1, 1 },
    { 96, 576, 14, 14, 1, 1, 1, 1 }, { 160, 960, 7, 7, 1, 1, 1, 1 }, { 320, 1280, 7, 7, 1, 1, 1, 1 },
    /* ResNet-50 */
    { 64, 64, 56, 56, 1, 1, 1, 1 }, { 64, 256, 56, 56, 1, 1, 1, 0 }, { 256, 64, 56, 56, 1, 1, 1, 1 },
    { 128, 512, 28, 28, 1, 1, 1, 0 },
    /* ShuffleNet (v1, groups 3) */
    { 240, 240, 28, 28, 3, 1, 1, 1 }, { 480, 480, 14, 14, 3, 1, 1, 1 },
};

static int g_cpu_time;

static double now_us(void) {
    if (!g_cpu_time) return rlx_now_seconds() * 1e6;
    return test_thread_cpu_seconds() * 1e6;
}

static unsigned char *g_flush; /* PW_CONV_COLD: written before every call */
#define FLUSH_BYTES ((size_t)64 << 20)

static void evict(void) {
    if (!g_flush) return;
    for (size_t i = 0; i < FLUSH_BYTES; i += 64) g_flush[i]++;
}

static rlx_tensor *rnd_tensor(int rank, const int64_t *dims) {
    return test_tensor_random(RLX_DTYPE_F32, rank, dims, -1.0f, 1.0f);
}

static void run_shape(const shape *c, int iters) {
    long oh = (c->h + 2 * (c->k / 2) - c->k) / c->s + 1, ow = (c->w + 2 * (c->k / 2) - c->k) / c->s + 1;
    int64_t xd[4] = { 1, c->cin, c->h, c->w }, wd[4] = { c->cout, c->cin / c->group, c->k, c->k },
            bd[1] = { c->cout }, yd[4] = { 1, c->cout, oh, ow };
    int64_t ks[2] = { c->k, c->k }, st[2] = { c->s, c->s }, pads[4] = { c->k / 2, c->k / 2, c->k / 2, c->k / 2 };
    rlx_node_attr at[6];
    memset(at, 0, sizeof at);
    at[0].name = "kernel_shape", at[0].type = RLX_ATTR_INTS, at[0].n = 2, at[0].ints = ks;
    at[1].name = "strides", at[1].type = RLX_ATTR_INTS, at[1].n = 2, at[1].ints = st;
    at[2].name = "pads", at[2].type = RLX_ATTR_INTS, at[2].n = 4, at[2].ints = pads;
    at[3].name = "group", at[3].type = RLX_ATTR_INT, at[3].i = c->group;
    at[4].name = "_rlx_act", at[4].type = RLX_ATTR_INT, at[4].i = c->act == 2 ? RLX_ACT_HARDSWISH : RLX_ACT_CLIP;
    at[5].name = "_rlx_act_beta", at[5].type = RLX_ATTR_FLOAT, at[5].f = 6.0f;
    rlx_node n = test_make_node("Conv", 11, 3, 1, at, c->act == 1 ? 6 : c->act ? 5 : 4);
    rlx_tensor *x = rnd_tensor(4, xd), *w = rnd_tensor(4, wd), *b = rnd_tensor(1, bd), *y = rnd_tensor(4, yd);
    const rlx_tensor *in[3] = { x, w, b };
    rlx_tensor *out[1] = { y };
    bool pwt = getenv("PW_CONV_PWT") && atoi(getenv("PW_CONV_PWT"));
    rlx_nn_pwt_in_place(!getenv("PW_CONV_PWT_GATHER"));
    rlx_cpu_sgemm_pack pk, pk2; /* pk2: the channels-in-lanes path's pack (pwt) */
    memset(&pk2, 0, sizeof pk2);
    if (pwt) rlx_nn_pwt_force(1);
    if (rlx_cpu_prepare_node(NULL, &n, in, &pk)) {
        fprintf(stderr, "prepare: %s\n", rlx_last_error());
        return;
    }
    if (pwt) {
        rlx_nn_pwt_force(2);
        if (rlx_cpu_prepare_node(NULL, &n, in, &pk2) || !pk2.wt) {
            fprintf(stderr, "prepare (channels in lanes): not packed %s\n", rlx_last_error());
            rlx_nn_pwt_force(0);
            return;
        }
    }
    double *t[2];
    t[0] = malloc((size_t)iters * sizeof(double)), t[1] = malloc((size_t)iters * sizeof(double));
    for (int it = -3; it < iters; it++)
        for (int p = 0; p < 2; p++) {
            rlx_nn_pw_force(pwt || p == 1 ? 1 : 2);
            evict();
            double t0 = now_us();
            if (rlx_cpu_run_node_packed(NULL, &n, in, out, pwt && p == 0 ? &pk2 : &pk))
                fprintf(stderr, "run: %s\n", rlx_last_error());
            if (it >= 0) t[p][it] = now_us() - t0;
        }
    rlx_nn_pw_force(0);
    rlx_nn_pwt_force(0);
    rlx_cpu_sgemm_pack_free(&pk2);
    double macs = (double)c->cout * (double)(oh * ow) * (double)(c->cin / c->group) * (double)(c->k * c->k);
    printf("%4ld->%-4ld %3ldx%-3ld g%ld k%ld s%ld K=%-4ld %s", c->cin, c->cout, c->h, c->w, c->group, c->k, c->s,
           c->cin / c->group * c->k * c->k, c->act == 2 ? "hswish" : c->act ? "clip" : "none");
    for (int p = 0; p < 2; p++) {
        qsort(t[p], (size_t)iters, sizeof(double), test_cmp_double);
        printf("  %s med %7.1f min %7.1f us %5.1f GMAC/s", p == 0 ? (pwt ? "pwt" : "pw") : "gemm", t[p][iters / 2], t[p][0],
               macs / t[p][0] / 1e3);
    }
    printf("\n");
    fflush(stdout);
    free(t[0]), free(t[1]);
    rlx_cpu_sgemm_pack_free(&pk);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b), rlx_tensor_destroy(y);
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 30;
    g_cpu_time = getenv("PW_CONV_CPU") && atoi(getenv("PW_CONV_CPU"));
    if (getenv("PW_CONV_COLD") && atoi(getenv("PW_CONV_COLD")) && !(g_flush = calloc(1, FLUSH_BYTES))) return 1;
    if (iters < 1) iters = 1;
    printf("threads %d, sgemm kernel %d\n", rlx_parallel_threads(), (int)rlx_cpu_sgemm_kernel_get());
    if (argc > 2) {
        for (int i = 2; i < argc; i++) {
            shape c = { 0, 0, 0, 0, 1, 1, 1, 0 };
            long h2 = -1;
            int got = sscanf(argv[i], "%ld:%ld:%ld:%ld:%ld:%ld:%ld:%ld", &c.cin, &c.cout, &c.h, &h2, &c.group, &c.k,
                             &c.s, &c.act);
            if (got < 3) {
                fprintf(stderr, "bad shape '%s' (CIN:COUT:H[:W[:GROUP[:K[:S[:ACT]]]]])\n", argv[i]);
                return 2;
            }
            c.w = h2 > 0 ? h2 : c.h;
            run_shape(&c, iters);
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof k_default / sizeof k_default[0]; i++) run_shape(&k_default[i], iters);
    return 0;
}
