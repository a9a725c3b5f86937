/* A tiny test harness: CHECK macros that count failures and keep going,
 * a seeded RNG, tensor helpers, and single-op graph runners. Every test
 * program returns non-zero when any check failed. */
#ifndef RLX_TESTS_TEST_H
#define RLX_TESTS_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"

extern int rlx_test_failures;
extern int rlx_test_checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        rlx_test_checks++;                                                           \
        if (!(cond)) {                                                               \
            rlx_test_failures++;                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                               \
    do {                                                                   \
        rlx_test_checks++;                                                 \
        if (!(cond)) {                                                     \
            rlx_test_failures++;                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        rlx_status s_ = (expr);                                                          \
        rlx_test_checks++;                                                               \
        if (s_ != RLX_OK) {                                                              \
            rlx_test_failures++;                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #expr,     \
                    rlx_status_name(s_), rlx_last_error());                              \
        }                                                                                \
    } while (0)

/* Expects `expr` to fail with `status` and a message containing `substr`. */
#define CHECK_FAILS(expr, status, substr)                                                \
    do {                                                                                 \
        rlx_status s_ = (expr);                                                          \
        rlx_test_checks++;                                                               \
        if (s_ != (status) || !strstr(rlx_last_error(), (substr))) {                     \
            rlx_test_failures++;                                                         \
            fprintf(stderr, "%s:%d: %s: expected %s with \"%s\", got %s: %s\n", __FILE__, \
                    __LINE__, #expr, rlx_status_name(status), (substr), rlx_status_name(s_), \
                    rlx_last_error());                                                   \
        }                                                                                \
    } while (0)

/* Internal faults of the library (src/base/log.h rlx_internal_fault: a
 * broken internal contract, such as a parameter read by an attribute id
 * that its op's schema lacks) beyond the ones a test provoked on purpose: prints the
 * first and returns 1, else 0. TEST_MAIN_END counts it as a failure. */
int test_internal_faults(void);
/* A test that provokes n internal faults on purpose says so first. */
void test_expect_internal_faults(unsigned long n);

#define TEST_MAIN_END()                                                                    \
    do {                                                                                   \
        rlx_test_failures += test_internal_faults();                                       \
        fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__, rlx_test_checks, rlx_test_failures); \
        return rlx_test_failures ? 1 : 0;                                                  \
    } while (0)

/* Deterministic RNG (xorshift64*), seeded from RLX_TEST_SEED or a default;
 * the seed is printed so a failure can be reproduced. */
uint64_t test_rand_u64(void);
void test_seed(uint64_t seed);
uint64_t test_seed_from_env(void);
float test_rand_uniform(float lo, float hi);

/* Tensors */
rlx_tensor *test_tensor(rlx_dtype dt, int rank, const int64_t *dims);
rlx_tensor *test_tensor_random(rlx_dtype dt, int rank, const int64_t *dims, float lo, float hi);
rlx_tensor *test_tensor_f32(int rank, const int64_t *dims, const float *values);
rlx_tensor *test_tensor_i64(int rank, const int64_t *dims, const int64_t *values);

/* Max abs difference and max relative difference (|a-b| / max(|b|, tiny))
 * of two float tensors of equal shape; NaN where one side is NaN and the
 * other is not. Returns -1 if shapes or dtypes differ. */
double test_max_abs_diff(const rlx_tensor *a, const rlx_tensor *b);

/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID: what
 * the benchmarks time on a shared machine, where wall time counts other
 * jobs' slices). */
double test_thread_cpu_seconds(void);

/* qsort comparator of doubles, ascending (the benchmarks' medians). */
int test_cmp_double(const void *a, const void *b);
/* True when every element satisfies |a-b| <= atol + rtol*|b| (NaN==NaN). */
int test_allclose(const rlx_tensor *a, const rlx_tensor *b, double rtol, double atol);

/* Single-op graphs: builds a model with one node of `op` at `opset` whose
 * inputs are the given tensors (graph inputs where in_is_const[i] is 0,
 * initializers otherwise; NULL entries are omitted optional inputs), runs it
 * on `device` ("cpu", "gpu") and returns the outputs (caller frees with
 * test_free_outputs). */
rlx_status test_run_op(const char *op, int64_t opset, const char *device, int n_in, const rlx_tensor *const *in,
                       const int *in_is_const, int n_out, size_t n_attrs, const rlx_attr *attrs,
                       rlx_tensor ***out);
/* test_run_op with session options (options: key/value ones, NULL: none); expect_native also checks in the
 * session's dispatch report that the one node ran natively on the device
 * (a CHECK failure otherwise). */
rlx_status test_run_op_opts(const char *op, int64_t opset, const rlx_session_options *o, const rlx_options *options,
                            bool expect_native, int n_in,
                            const rlx_tensor *const *in, const int *in_is_const, int n_out, size_t n_attrs,
                            const rlx_attr *attrs, rlx_tensor ***out);
/* Parses a dispatch report (rlx_session_dispatch_report): the node count
 * and the native count of `op` (-1, -1 when the op is not listed). */
void test_report_counts(const char *report, const char *op, int *nodes, int *native);
void test_free_outputs(rlx_tensor **outs, int n);

/* Session options from "key=value" items, up to a NULL (a later item
 * replaces an earlier one of the same key): how a test sets a switch for
 * one session without touching the process's environment. A refused item
 * is a CHECK failure. Free with rlx_options_destroy. */
rlx_options *test_options(const char *key_value, ...)
#if defined(__GNUC__)
    __attribute__((sentinel))
#endif
    ;
/* Sets the "key=value" items of `items`, separated by ';' (NULL or "":
 * none), on o, as test_options does. */
void test_options_add(rlx_options *o, const char *items);

/* True when a GPU adapter is available (lavapipe counts). Tests that need a
 * GPU print why they skip only when RLX_TEST_REQUIRE_GPU is not set; with
 * it set (non-empty, not 0), a missing GPU fails the test. */
int test_have_gpu(void);

#endif
