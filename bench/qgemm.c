/* Times the int8 GEMM (rlx_cpu_qgemm, B packed as at compile time, int32
 * output) under each kernel this CPU runs, alternating the kernels call by
 * call so that load from elsewhere hits all alike; prints the median and
 * minimum microseconds per kernel and GOPS (2 m n k of the minimum).
 * Threads: RLX_NUM_THREADS (default one per core).
 *
 *   build/tests/qgemm [ITERS] [M:N:K ...]
 *
 * Without shapes: a few of PP-OCRv4 det's convolutions as GEMMs and
 * square ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_qgemm.h"
#include "rlx/inspect.h"
#include "test.h"

static double now_us(void) { return rlx_now_seconds() * 1e6; }

int main(int argc, char **argv) {
    static const char *defaults[] = { "3072:64:576", "768:128:1152", "12288:32:288", "256:256:256", "1024:1024:1024",
                                      "64:512:2048" };
    static const char *names[] = { "portable", "avx2", "vnni", "amx" };
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    if (iters < 1) iters = 1;
    int nshape = argc > 2 ? argc - 2 : (int)(sizeof defaults / sizeof *defaults);
    rlx_cpu_qgemm_kernel keep = rlx_cpu_qgemm_kernel_get();
    printf("%-16s %-8s %10s %10s %8s\n", "m:n:k", "kernel", "median_us", "min_us", "GOPS");
    for (int s = 0; s < nshape; s++) {
        size_t m, n, k;
        if (sscanf(argc > 2 ? argv[s + 2] : defaults[s], "%zu:%zu:%zu", &m, &n, &k) != 3 || !m || !n || !k) {
            fprintf(stderr, "bad shape %s (want M:N:K)\n", argv[s + 2]);
            return 2;
        }
        uint8_t *a = malloc(m * k), *b = malloc(k * n);
        int32_t *c = malloc(m * n * sizeof *c);
        for (size_t i = 0; i < m * k; i++) a[i] = (uint8_t)(i * 2654435761u >> 13);
        for (size_t i = 0; i < k * n; i++) b[i] = (uint8_t)(i * 40503u >> 7);
        rlx_cpu_qgemm_pack pk;
        if (rlx_cpu_qgemm_pack_b(false, k, n, b, n, &pk) != RLX_OK) return 1;
        rlx_cpu_qgemm_args g = { .m = m, .n = n, .k = k, .a = a, .lda = k, .a_unsigned = true, .za = 3, .bp = &pk,
                                 .b = b, .ldb = n, .c = c, .ldc = n };
        int kern[RLX_CPU_QGEMM_KERNELS], nk = 0;
        for (int kk = RLX_CPU_QGEMM_AVX2; kk < RLX_CPU_QGEMM_KERNELS; kk++)
            if (rlx_cpu_qgemm_kernel_set((rlx_cpu_qgemm_kernel)kk)) kern[nk++] = kk;
        double *t = malloc((size_t)(nk * iters) * sizeof *t);
        for (int it = -2; it < iters; it++) /* two warm-up rounds */
            for (int q = 0; q < nk; q++) {
                rlx_cpu_qgemm_kernel_set((rlx_cpu_qgemm_kernel)kern[q]);
                double t0 = now_us();
                if (rlx_cpu_qgemm(&g) != RLX_OK) return 1;
                if (it >= 0) t[q * iters + it] = now_us() - t0;
            }
        for (int q = 0; q < nk; q++) {
            qsort(t + q * iters, (size_t)iters, sizeof *t, test_cmp_double);
            double med = t[q * iters + iters / 2], mn = t[q * iters];
            printf("%-16s %-8s %10.1f %10.1f %8.1f\n", argc > 2 ? argv[s + 2] : defaults[s], names[kern[q]], med, mn,
                   2.0 * (double)m * (double)n * (double)k / mn / 1e3);
        }
        free(t), free(a), free(b), free(c);
        rlx_cpu_qgemm_pack_free(&pk);
    }
    rlx_cpu_qgemm_kernel_set(keep);
    return 0;
}
