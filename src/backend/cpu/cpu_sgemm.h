/* f32 GEMM for the CPU fast paths, and who owns the threads.
 *
 * Two policies, chosen once per process by RLX_CPU_GEMM:
 *  - "pool" (default): rlx's worker pool (base/parallel.h) owns every
 *    thread. OpenBLAS is set to one thread on first use
 *    (openblas_set_num_threads(1), process-wide), and rlx_cpu_sgemm splits a
 *    GEMM into blocks of rows / columns that the pool's threads multiply
 *    with single-threaded cblas_sgemm calls. Convolutions run im2col, GEMM
 *    and epilogue per block inside the pool's tasks. No OpenBLAS thread
 *    spins while the pool works (measured in BENCHMARKS.md, "CPU backend,
 *    this machine").
 *  - "blas": OpenBLAS keeps its own threads; rlx_cpu_sgemm is one
 *    cblas_sgemm call, and convolutions build their whole column matrix on
 *    the pool, then hand it to one (OpenBLAS-threaded) GEMM.
 * Both compute every output element as one cblas_sgemm would for its
 * block: results may differ from one policy to the other (and with the
 * thread count) by float rounding of the accumulation order inside
 * OpenBLAS, never by more. */
#ifndef RLX_BACKEND_CPU_CPU_SGEMM_H
#define RLX_BACKEND_CPU_CPU_SGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef enum rlx_cpu_gemm_policy {
    RLX_CPU_GEMM_POOL = 0,
    RLX_CPU_GEMM_BLAS = 1
} rlx_cpu_gemm_policy;

/* The policy of this process (option cpu.gemm, per process: the first
 * session's value, or RLX_CPU_GEMM for work before any session). The first
 * call under "pool" sets OpenBLAS to one thread. */
rlx_cpu_gemm_policy rlx_cpu_gemm_policy_get(void);

/* Sets the policy (sessions, when created). errors: RLX_ERR_INVALID_ARGUMENT
 * when the process already uses the other one. */
rlx_status rlx_cpu_gemm_policy_set(rlx_cpu_gemm_policy policy);

/* Row-major C[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * C, op the
 * transpose where ta / tb; A is [m, k] (lda >= k) or, transposed, [k, m]
 * (lda >= m); likewise B. Dimensions and leading dims must fit a C int
 * (callers check against RLX_NN_BLAS_MAX); k may be 0 (C = beta * C).
 * Splits the work over the worker pool (policy "pool"; on the caller when
 * already inside a parallel region or when the product is small) or calls
 * OpenBLAS once (policy "blas"). */
void rlx_cpu_sgemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                   const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* The same as one cblas_sgemm on the calling thread (for callers that
 * already run inside the pool's tasks). */
void rlx_cpu_sgemm_serial(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc);

#endif
