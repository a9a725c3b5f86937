/* f32 GEMM over the worker pool, and the OpenBLAS thread policy (see
 * cpu_sgemm.h). */
#include "backend/cpu/cpu_sgemm.h"

#include <cblas.h>
#include <stdatomic.h>
#include <string.h>

#include "base/parallel.h"
#include "base/options.h"

/* 0: not decided yet; 1 + policy once decided */
static atomic_int g_policy;

/* Decides the policy once (racing first callers agree on the value;
 * setting OpenBLAS to one thread twice is harmless). */
static rlx_cpu_gemm_policy decide(rlx_cpu_gemm_policy pol) {
    int expect = 0;
    if (atomic_compare_exchange_strong_explicit(&g_policy, &expect, (int)pol + 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        if (pol == RLX_CPU_GEMM_POOL) openblas_set_num_threads(1);
        return pol;
    }
    return (rlx_cpu_gemm_policy)(expect - 1);
}

rlx_cpu_gemm_policy rlx_cpu_gemm_policy_get(void) {
    int p = atomic_load_explicit(&g_policy, memory_order_acquire);
    if (p) return (rlx_cpu_gemm_policy)(p - 1);
    const char *env = rlx_config_env_enum("cpu.gemm", "pool");
    return decide(strcmp(env, "blas") == 0 ? RLX_CPU_GEMM_BLAS : RLX_CPU_GEMM_POOL);
}

rlx_status rlx_cpu_gemm_policy_set(rlx_cpu_gemm_policy pol) {
    rlx_cpu_gemm_policy now = decide(pol);
    if (now == pol) return RLX_OK;
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                    "cpu.gemm=%s: the CPU GEMM policy is per process and already '%s' (by an earlier session or "
                    "RLX_CPU_GEMM)",
                    pol == RLX_CPU_GEMM_BLAS ? "blas" : "pool", now == RLX_CPU_GEMM_BLAS ? "blas" : "pool");
}

void rlx_cpu_sgemm_serial(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    (void)rlx_cpu_gemm_policy_get(); /* OpenBLAS on one thread before the first call (policy "pool") */
    if (m == 0 || n == 0) return;
    if (k == 0) { /* empty products (cblas would refuse lda = 0) */
        for (size_t i = 0; i < m; i++) {
            float *row = c + i * ldc;
            if (beta == 0.0f) memset(row, 0, n * sizeof *row);
            else
                for (size_t j = 0; j < n; j++) row[j] *= beta;
        }
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

typedef struct sgemm_job {
    bool ta, tb;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
    size_t n_mb, n_nb; /* blocks along m and n */
} sgemm_job;

/* Block i of n_blocks over [0, total): extents differ by at most one. */
static void block_range(size_t total, size_t n_blocks, size_t i, size_t *b0, size_t *len) {
    size_t q = total / n_blocks, r = total % n_blocks;
    *b0 = i * q + (i < r ? i : r);
    *len = q + (i < r ? 1 : 0);
}

static void sgemm_blocks(void *ctx, size_t t0, size_t t1) {
    const sgemm_job *j = ctx;
    for (size_t t = t0; t < t1; t++) {
        size_t i0, mi, c0, nj;
        block_range(j->m, j->n_mb, t / j->n_nb, &i0, &mi);
        block_range(j->n, j->n_nb, t % j->n_nb, &c0, &nj);
        const float *a = j->ta ? j->a + i0 : j->a + i0 * j->lda;
        const float *b = j->tb ? j->b + c0 * j->ldb : j->b + c0;
        rlx_cpu_sgemm_serial(j->ta, j->tb, mi, nj, j->k, j->alpha, a, j->lda, b, j->ldb, j->beta,
                             j->c + i0 * j->ldc + c0, j->ldc);
    }
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Below this many multiply-adds one thread does the whole product. */
#define SGEMM_SPLIT_MIN ((size_t)1 << 18)

void rlx_cpu_sgemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                   const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    size_t threads = (size_t)rlx_parallel_threads();
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_BLAS || threads == 1 || m == 0 || n == 0 ||
        (double)m * (double)n * (double)k < (double)SGEMM_SPLIT_MIN) {
        rlx_cpu_sgemm_serial(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* about two blocks per thread: columns first (at least 64 wide), then
     * rows (at least 16) when the columns run out. Blocks of one axis are
     * of equal size (within one): OpenBLAS picks its kernel by the size of
     * a call, so unequal blocks could round otherwise equal columns
     * differently (seen: a softmax over 1000 equal logits of 4e11). */
    size_t want = 2 * threads;
    size_t n_nb = n / 64;
    if (n_nb > want) n_nb = want;
    if (n_nb < 1) n_nb = 1;
    size_t n_mb = ceil_div(want, n_nb), max_mb = m / 16;
    if (n_mb > max_mb) n_mb = max_mb;
    if (n_mb < 1) n_mb = 1;
    sgemm_job j = { ta, tb, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c, n_mb, n_nb };
    rlx_parallel_for(n_mb * n_nb, 1, sgemm_blocks, &j);
}
