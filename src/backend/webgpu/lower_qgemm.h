/* The integer GEMM of the WebGPU backend (lower_qgemm.c,
 * kernels/qgemm_body.wgsl): MatMulInteger-10 and QLinearMatMul-10/21, and
 * ConvInteger-10 and QLinearConv-10 (the GEMM gathering its b operand
 * from x: an implicit im2col) on int8/uint8 operands, bit-exact with the CPU reference
 * (src/backend/cpu/cpu_quant.c). */
#ifndef RLX_BACKEND_WEBGPU_LOWER_QGEMM_H
#define RLX_BACKEND_WEBGPU_LOWER_QGEMM_H

#include "backend/webgpu/webgpu.h"
#include "ir/ops/internal_ops.h"

/* One integer GEMM: y[batch, m, n] = sum_k (a[.., m, k] - za)(b[.., k, n] - zb)
 * (i32, wrapping), or requantized to 8 bits with mult[row, col] (doubles
 * holding f32 values: rlx_quant_mult, the CPU's) and y_zp. Operands are value ids
 * of int8/uint8 tensors (bytes four to a word); za / zb are value ids or
 * -1 (none), one zero point (step 0) or one per row of a / column of b
 * (step 1). Batch: nb <= 4 output batch dims bd[], with the byte strides of
 * a and b per dim (0: broadcast). mult: NULL for an i32 y; else mult_rows
 * (1 or m) x mult_cols (1 or n) positive finite doubles. */
typedef struct wg_qgemm {
    int a, b, za, zb, y;
    bool a_signed, b_signed, y_signed;
    uint32_t m, n, k;
    uint32_t za_step, zb_step;
    int nb;
    uint32_t bd[4], a_bstride[4], b_bstride[4];
    /* b a constant packed on the host (the kernel reads one word per four
     * k): b_packed words, b_bstride then in words; b is then ignored */
    const uint32_t *b_packed;
    uint64_t b_packed_words;
    /* conv: b is the implicit im2col of the NCHW int8/uint8 x (value id
     * b): column n the output pixel n, row k = (ci * k_h + kr) * k_w + kc
     * the tap of input channel ci of the batch item's (image, group)
     * block, whose byte offsets b_bstride then gives; a padding tap holds
     * zb (kernels/qgemm_body.wgsl, CONV). geom: in_h, in_w, out_w, in_h *
     * in_w, s_h, s_w, p_h, p_w, dil_h, dil_w, 0, 0 (1-D: in_h 1, s_h 1,
     * p_h 0, dil_h 1); k = c_in / group * k_h * k_w, n = out_h * out_w */
    bool conv;
    uint32_t conv_kh, conv_kw, conv_geom[12];
    /* rows that batch index i of dim j adds to the row of the per-row
     * parameters (za, mult, bias): row_off[j] * i (0: a matmul; the
     * output channels per group for a convolution's group dim) */
    uint32_t row_off[4];
    const double *mult;
    /* NULL, or one i32 per row parameter (mult_rows of them) added to the
     * sums (wrapping) before the requantization */
    const int32_t *bias;
    uint32_t mult_rows, mult_cols;
    int32_t y_zp;
    /* NULL, or the QDQ chain the dispatch that stores the 8-bit y applies
     * (y is then the chain's output; y_signed stays the convolution's) */
    const struct wg_qepi *epi;
} wg_qgemm;

/* The QDQ chain of a QLinearConv (ir/ops/internal_ops.h, inputs 9..:
 * passes/fuse_qlinear_ew.c) for the integer kernels' 8-bit stores: src
 * replaces their `//!include qepi` line (kernels/qepi.wgsl) with the
 * chain's Params fields (after the kernel's own: eo<i> the word offsets of
 * its bound inputs, ek<k> its constants), storage bindings (after the
 * kernel's own: EX<i>, chain input i whole) and fn qepi(g, q), the chain's
 * output byte at y's flat index g for the convolution's level q, the
 * FusedElementwise generator's code (lower_internal.c), hence its bits. */
typedef struct wg_qepi {
    char *src; /* NULL: no chain */
    int n_bind;
    int bind_in[RLX_EW_MAX_IN], bind_val[RLX_EW_MAX_IN]; /* chain input, value id */
    uint64_t bind_elems[RLX_EW_MAX_IN];                    /* f32 elements or words of bytes */
    int n_k;
    float k[48];
} wg_qepi;

/* Makes e from L's node (a QLinearConv with more than 9 inputs) for a
 * kernel of used_words Params words and used_binds storage bindings.
 * errors: declines (a chain that does not fit one dispatch: bindings,
 * Params, bindings' sizes; bf16 rounding); RLX_ERR_OUT_OF_MEMORY. */
rlx_status wg_qepi_make(wg_lower *L, uint32_t used_words, uint32_t used_binds, wg_qepi *e);
/* The kernel source src with its `//!include qepi` line replaced by
 * e->src (malloc'ed), or NULL (no such line, out of memory). */
char *wg_qepi_source(const wg_qepi *e, const char *src);
/* Binds e's inputs and writes its Params fields: after the kernel's own. */
void wg_qepi_write(wg_lower *L, wg_dispatch *d, const wg_qepi *e);
void wg_qepi_free(wg_qepi *e);

/* Emits the dispatch of q (qgemm_dp4 when L->caps->dot4, else qgemm), the
 * variant by shape and option gpu.qgemm_tile (workgroup tiles, split k,
 * register blocks or one output per invocation: the same bits).
 * errors: RLX_ERR_UNSUPPORTED (declined: too large for 32-bit indexing). */
rlx_status wg_emit_qgemm(wg_lower *L, const wg_qgemm *q);

#endif
