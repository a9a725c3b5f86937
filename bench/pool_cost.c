/* What a parallel region of the CPU worker pool (base/parallel.c) costs at
 * the pool's thread count (RLX_NUM_THREADS), and whether small GEMMs gain
 * from their split there; wall time, median and minimum of ITERS trials,
 * in microseconds:
 *
 *   region gap G: a region of one empty chunk per thread after the caller
 *                 worked alone for G us (the workers spin for
 *                 cpu.pool_spin_us after a job, then sleep: past that a
 *                 region pays their wake-up)
 *   sgemm MxNxK:  rlx_cpu_sgemm at the pool's threads ("split") and on the
 *                 calling thread alone ("serial"), interleaved, after a
 *                 gap of 20 us
 *
 *   build/tests/pool_cost [ITERS] [MxNxK ...]
 *
 * Internal headers: a benchmark, not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "rlx/inspect.h"
#include "test.h"

static double wall_us(void) { return rlx_now_seconds() * 1e6; }

/* the caller alone for us microseconds (the workers' view: no job) */
static void work_alone(double us) {
    double t0 = wall_us();
    while (wall_us() - t0 < us) {
    }
}

static void empty_chunk(void *ctx, size_t b, size_t e) {
    (void)ctx, (void)b, (void)e;
}

static void report(const char *what, double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, test_cmp_double);
    printf("%-34s median %8.2f us  min %8.2f us\n", what, t[n / 2], t[0]);
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (iters < 3) iters = 3;
    int threads = rlx_parallel_threads();
    printf("threads %d, %d trials each\n", threads, iters);
    double *t = malloc((size_t)iters * 2 * sizeof *t);
    if (!t) return 1;
    static const double gaps[] = { 0, 10, 30, 60, 100, 300, 1000 };
    for (size_t g = 0; g < sizeof gaps / sizeof *gaps; g++) {
        for (int i = 0; i < iters; i++) {
            work_alone(gaps[g]);
            double t0 = wall_us();
            rlx_parallel_for((size_t)threads, 1, empty_chunk, NULL);
            t[i] = wall_us() - t0;
        }
        char what[64];
        snprintf(what, sizeof what, "region gap %g us", gaps[g]);
        report(what, t, iters);
    }
    static const char *defaults[] = { "32x256x64", "128x384x384", "49x160x960", "196x256x1152", "128x1536x384" };
    int n_shapes = argc > 2 ? argc - 2 : (int)(sizeof defaults / sizeof *defaults);
    for (int s = 0; s < n_shapes; s++) {
        const char *spec = argc > 2 ? argv[2 + s] : defaults[s];
        size_t m, n, k;
        if (sscanf(spec, "%zux%zux%zu", &m, &n, &k) != 3 || !m || !n || !k) {
            fprintf(stderr, "pool_cost: bad shape '%s' (MxNxK)\n", spec);
            return 2;
        }
        float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *c = malloc(m * n * sizeof *c);
        if (!a || !b || !c) return 1;
        for (size_t i = 0; i < m * k; i++) a[i] = (float)((i * 7919) % 113) / 113.0f - 0.5f;
        for (size_t i = 0; i < k * n; i++) b[i] = (float)((i * 104729) % 127) / 127.0f - 0.5f;
        double *ts = t + iters;
        for (int i = 0; i < iters; i++) {
            for (int serial = 0; serial < 2; serial++) {
                work_alone(20);
                int prev = serial ? rlx_parallel_set_limit(1) : 0;
                double t0 = wall_us();
                rlx_cpu_sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
                (serial ? ts : t)[i] = wall_us() - t0;
                if (serial) rlx_parallel_set_limit(prev);
            }
        }
        char what[64];
        snprintf(what, sizeof what, "sgemm %s split", spec);
        report(what, t, iters);
        snprintf(what, sizeof what, "sgemm %s serial", spec);
        report(what, ts, iters);
        free(a), free(b), free(c);
    }
    free(t);
    return 0;
}
