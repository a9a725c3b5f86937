/* CPU kernels of the internal ops (domain "rlx", contracts in
 * src/ir/ops/internal_ops.h). The table is in cpu_internal.c; the
 * FusedElementwise interpreter has a file of its own, cpu_fused_ew.c. */
#ifndef RLX_BACKEND_CPU_CPU_INTERNAL_H
#define RLX_BACKEND_CPU_CPU_INTERNAL_H

#include "backend/cpu/cpu.h"
#include "ir/ew.h"

/* rlx.FusedElementwise: interprets the register program over blocks of
 * output elements (each instruction runs over a whole block, so the
 * interpretation costs once per block). Reference and fast path are the
 * same code: it computes as the unfused f32 kernels of cpu_elementwise.c.
 * errors: RLX_ERR_INVALID_MODEL (malformed program, inputs that do not
 * broadcast), RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_fused_elementwise(rlx_cpu_kctx *k);

/* The same interpreter for a program carried by another node (a
 * QLinearConv's QDQ chain, cpu_quant.c): program p over the tensors in[0 ..
 * p->n_in) into k->out[0]. Errors as above, naming k's node. */
struct rlx_ew_prog;
rlx_status rlx_cpu_ew_prog_run(rlx_cpu_kctx *k, const struct rlx_ew_prog *p, const rlx_tensor *const *in);

/* d[i] = fn(x[i], y[i], c[i]) for i < n by the vocabulary's f32 computation
 * (src/ir/ew.h; operands beyond fn's arity are not read and may be NULL;
 * d must not overlap the operands). cpu_elementwise.c. */
void rlx_cpu_ew_f32(rlx_ew_fn fn, float *restrict d, const float *x, const float *y, const float *c, float p0,
                    float p1, size_t n);

/* rlx.MatMulNBits on its packed 4-bit weights (cpu_nbits.c): reference in
 * double, fast paths for M <= 8 rows (AVX-512F / AVX2 + FMA / portable
 * GEMV on the blocks) and M > 8 (dequantized tiles of 64 columns into
 * rlx_cpu_sgemm_serial). errors: RLX_ERR_INVALID_MODEL (inputs that do not
 * fit K, N, block_size), RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_matmul_nbits(rlx_cpu_kctx *k);

/* Query rows per task of rlx.Attention's f32 fast path: nb batches (x
 * heads) of sq query rows against sk keys, depth d, value depth dv, on
 * `threads` threads; the tasks (nb x ceil(sq / rows), shared out by
 * rlx_nn_run_items, idle threads taking others' tasks) are balanced with
 * rlx_cpu_split2d_choose (cpu_sgemm.h): a
 * query row costs its products (sk x (d + dv) multiply-adds) and its
 * softmax (about 4 sk), a block packs K^T and V again (about 8 (d + dv) per
 * key). Rows come in whole register tiles of the GEMM, at most those whose
 * scores fill about 1 MiB (at least 16). BERT's 12 heads of 128 rows on 16
 * threads: 32 rows, 48 tasks, 3 per thread (thirds of 43 rows gave 36
 * tasks: 3 on some threads, 2 on the others). sq when sq or sk is 0. */
size_t rlx_cpu_attention_rows(size_t nb, size_t sq, size_t sk, size_t d, size_t dv, size_t threads);

/* The unary rows with a vector form (Exp, Log, Sigmoid, SiLU, Swish, Tanh,
 * Gelu, Erf, Elu, Selu, Softplus, Mish): cpu_ew_vec.c. */
bool rlx_cpu_ew_has_vec(rlx_ew_fn fn);

/* d[i] = fn(x[i]) with parameters p0, p1 for i < n, over AVX-512 or AVX2
 * vectors when the CPU has them and fn has a vector form (the rest by the
 * scalar twin: the same bits); false, nothing written, otherwise. d may
 * be x. */
bool rlx_cpu_ew_vec_f32(rlx_ew_fn fn, float *d, const float *x, float p0, float p1, size_t n);

/* d[i] = x[i] op y[i] for Add, Sub, Mul, Div (one IEEE operation each: the
 * scalar rows' bits), Max and Min, and d[i] = f(x[i]) (y unused) for Relu,
 * Neg, Abs, Clip, HardSigmoid, HardSwish, LeakyRelu (parameters p0, p1; the rows'
 * comparisons, selects and operations, so NaN, -0 and ties as in the row)
 * over AVX-512 vectors when rlx_cpu_isa_get() is AVX-512; returns how many
 * elements it did (a multiple of 16; 0 for other functions or instruction
 * sets), the rest is the caller's. cpu_ew_vec.c. */
size_t rlx_cpu_ew_bin_vec_f32(rlx_ew_fn fn, float *d, const float *x, const float *y, float p0, float p1, size_t n);

/* d[i] = fn(x[i]) for a unary function: rlx_cpu_ew_vec_f32 where it
 * applies, else the f32 definition per element (the same bits); d may be
 * x (fused activations apply in place). */
void rlx_cpu_ew_unary_f32(rlx_ew_fn fn, float *d, const float *x, float p0, float p1, size_t n);

#endif
