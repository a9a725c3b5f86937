/* Fast paths of row-wise f32 ops over contiguous rows (cpu_rows.c), split
 * into blocks of rows over the worker pool (base/parallel.h; a block is at
 * least 16K elements, so tiny inputs stay on the caller). Each returns
 * false, having written nothing, where it does not apply (no AVX2 + FMA on
 * this CPU, or an empty row): the caller then runs its reference kernel.
 * The kernels that call them check shapes and dtypes first.
 *
 * Accuracy against the double references (tests/test_cpu_rows_fast.c):
 *  - Softmax / LogSoftmax (ONNX Softmax-13 over the last axis, or the
 *    2-D view before 13): max, then exp(x - max) by cpu_vmath.h
 *    (<= 2^-22 relative), summed in double lanes; y = e * (1 / sum) or
 *    (x - max) - log(sum): a few f32 ulps.
 *  - LayerNormalization (Scale and B one value per column): mean and
 *    variance summed in double lanes (two passes), y in f32: a few ulps
 *    of the result's scale.
 *  - ArgMax / ArgMin: exact (the reference's NaN order and ties). */
#ifndef RLX_BACKEND_CPU_CPU_ROWS_H
#define RLX_BACKEND_CPU_CPU_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/cpu.h"

/* Elements per task of the row-wise normalisations (LayerNormalization,
 * AddLayerNormalization, Softmax): a quarter of the elementwise ops'
 * 16384, since each element costs several passes (an exp, or statistics
 * in double); BERT's 128 x 768 rows give 22 tasks at 16 threads instead of
 * 6. Any split gives the same bits (rows are independent). */
#define RLX_CPU_ROWS_GRAIN 4096

/* The CPU kernels of Softmax and LogSoftmax (the nn family's table): the
 * fast path above where it applies, else the reference
 * (rlx_cpu_nn_softmax / rlx_cpu_nn_logsoftmax). */
rlx_status rlx_cpu_rows_softmax_kernel(rlx_cpu_kctx *k);
rlx_status rlx_cpu_rows_logsoftmax_kernel(rlx_cpu_kctx *k);

/* x, y: [rows, len]; y = softmax (or log_softmax) of each row. */
bool rlx_cpu_rows_softmax(const float *x, float *y, size_t rows, size_t len, bool log_softmax);

/* rlx_cpu_rows_softmax (softmax only, the same bits) on the calling thread,
 * for callers that already run inside the pool's tasks (the Attention
 * kernel's blocks of scores). x may equal y (in place). */
bool rlx_cpu_rows_softmax_serial(const float *x, float *y, size_t rows, size_t len);

/* x [rows, len] (len >= 1), y [rows]: the index of the first (last, when
 * `last`) maximum (minimum) of each row; NaN ranks above every number.
 * Always applies (plain C). */
void rlx_cpu_rows_arg(const float *x, int64_t *y, size_t rows, size_t len, bool is_max, bool last);

/* x, y [rows, len], scale and bias [len] (bias may be NULL), mean and inv
 * [rows] or NULL: y = (x - mean) * inv * scale + bias with inv =
 * 1 / sqrt(var + eps), population variance. */
bool rlx_cpu_rows_layernorm(const float *x, const float *scale, const float *bias, float *y, float *mean, float *inv,
                            size_t rows, size_t len, double eps);

/* The row reductions of ReduceMean / ReduceMax / ReduceL1 / ReduceL2 over
 * the last axis of f32 x [rows, n] into y [rows] (defined in cpu_reduce.c, its vector
 * form: double sums in 16 lanes per block of 32K, over the pool, the order
 * fixed by the sizes; the maximum's first NaN, and of equal values the
 * first). Global pools use them. Returns false without writing when it
 * has no vector form here (no AVX2) or n is 0. */
typedef enum rlx_row_red { RLX_ROW_MEAN, RLX_ROW_MAX, RLX_ROW_L1, RLX_ROW_L2 } rlx_row_red;
bool rlx_cpu_reduce_rows_f32(rlx_row_red kind, const float *x, float *y, size_t rows, size_t n);

#endif
