/* int8 convolution on AVX-512 VNNI or AMX-INT8 for the CPU backend
 * (QLinearConv and ConvInteger with input channels per group > 1;
 * cpu_quant.c's conv_fast calls it when the int8 GEMM's kernel is
 * RLX_CPU_QGEMM_VNNI or _AMX, else it runs the im2col + rlx_cpu_qgemm
 * path). Under AMX the tiles are 32 channels x 32 pixels (the weights the
 * A tiles, the packed activations below, unchanged, the B tiles).
 *
 * The arithmetic contract is cpu_qgemm.h's: per output channel m and pixel
 * p, acc = bias[m] + sum_k (x[k, p] - zx)(w[m, k] - zw[m]) in 32-bit
 * integers, wrapping; then either stored as int32 or requantized as
 *   y = saturate(nearbyint((float)acc * mult[m], the product in f32) + y_zp),
 * NaN -> 0, rlx_quant_mult's rule (onnxruntime's bits), so the bits equal cpu_quant.c's
 * conv_run for any block size or thread count.
 *
 * Orientation: output channels are the rows (8 per tile, the weights the
 * broadcast unsigned operand of vpdpbusd: w + 128 for int8 w), pixels the
 * vector lanes (32 per tile, the activations the signed operand: x - 128
 * for uint8 x), so a tile row is 32 contiguous NCHW outputs of one channel
 * and the requantization runs 16 lanes at a time. With Wu, Xs the stored
 * values and zw', zx' the zero points moved the same way,
 *   sum (Wu - zw')(Xs - zx') = sum Wu Xs - zx' rowsum(Wu) - zw' colsum(Xs)
 *                              + K zw' zx',
 * exact modulo 2^32. Padding taps hold zx' (they add 0); K is padded to a
 * multiple of 4 with zero bytes on both sides (they add 0 to every term).
 *
 * The activations are packed per block of at most 256 pixels straight
 * from x (im2col and packing in one pass; a 1x1 convolution of stride 1
 * reads x's rows), into the worker's scratch: nothing is allocated in
 * steady runs. The weights are packed once (rlx_cpu_qconv_pack_w, at
 * compile time by rlx_cpu_quant_prepare). */
#ifndef RLX_BACKEND_CPU_CPU_QCONV_H
#define RLX_BACKEND_CPU_CPU_QCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Weights [groups * cout_g, k] (a convolution's W as stored, k = cin_g *
 * kernel size) packed: per group, ceil(cout_g / 8) tiles of ceil(k / 4)
 * groups of 8 x 4 bytes (row i's four k values together), stored w + 128
 * for int8 w (w for uint8), zero-padded; wsum the row sums of the stored
 * values (groups * cout_g entries). Packed while rlx_cpu_qgemm_amx_for(k)
 * (the kernel is RLX_CPU_QGEMM_AMX and k is not small), the layout is
 * AMX's (amx set): per group,
 * ceil(cout_g / 32) panels of 32 rows of ceil(k / 64) * 64 bytes (row i's
 * k values contiguous, zero-padded), what TILELOADD reads as the A tile;
 * rlx_cpu_qconv then runs 32 x 32 TDPBUSD tiles (cpu_amx.h) whatever the
 * kernel in use. */
typedef struct rlx_cpu_qconv_pack {
    uint8_t *data; /* owned, 64-byte aligned */
    int32_t *wsum; /* owned */
    size_t groups, cout_g, k;
    bool w_unsigned;
    bool amx; /* AMX layout (below) */
} rlx_cpu_qconv_pack;

/* Packs w (uint8 when w_unsigned, else int8; [groups * cout_g, k]
 * row-major). groups, cout_g, k >= 1. errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_qconv_pack_w(bool w_unsigned, size_t groups, size_t cout_g, size_t k, const void *w,
                                rlx_cpu_qconv_pack *out);

/* Frees a pack's memory and clears it (NULL or an empty pack: nothing). */
void rlx_cpu_qconv_pack_free(rlx_cpu_qconv_pack *pack);

/* Whether rlx_cpu_qconv runs here: built for x86 and the int8 GEMM's
 * kernel in use (rlx_cpu_qgemm_kernel_get) is RLX_CPU_QGEMM_VNNI or
 * RLX_CPU_QGEMM_AMX. */
bool rlx_cpu_qconv_available(void);

/* One image's 2-D convolution (1-D: ih = kh = oh = 1), the arguments of
 * rlx_cpu_qconv and rlx_cpu_qdw. x [groups * cin_g, ih, iw] (uint8 when
 * x_unsigned, else int8) with zero point zx; the weights packed in wp
 * (rlx_cpu_qconv: groups, cout_g and k = cin_g * kh * kw must match) or
 * as stored in w, [groups * cout_g, cin_g, kh, kw] (rlx_cpu_qdw; uint8
 * when w_unsigned); zw, bias and (when requantizing) mult: per output
 * channel, groups * cout_g entries (zw in w's terms, as stored in the
 * model). y [groups * cout_g, oh, ow]: int32 when mult is NULL, else
 * uint8 (y_unsigned) or int8 with zero point zy. Geometry as ONNX Conv:
 * stride sh/sw, dilation dh/dw, leading padding ph/pw (oh, ow consistent
 * with them). */
typedef struct rlx_cpu_qconv_args {
    const void *x;
    bool x_unsigned;
    int32_t zx;
    size_t groups, cin_g, cout_g;
    int64_t ih, iw, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw;
    const rlx_cpu_qconv_pack *wp; /* rlx_cpu_qconv */
    const void *w;                /* rlx_cpu_qdw */
    bool w_unsigned;
    const int32_t *zw, *bias;
    const float *mult; /* f32: see rlx_quant_mult (ir/ops/quant_params.h) */
    double zy;
    bool y_unsigned;
    void *y;
} rlx_cpu_qconv_args;

/* The convolution of args (wp), over the worker pool.
 * errors: RLX_ERR_OUT_OF_MEMORY (the per-thread scratch). */
rlx_status rlx_cpu_qconv(const rlx_cpu_qconv_args *args);

/* Whether a convolution of k = cin_g * kernel size per output channel
 * fits rlx_cpu_qconv's per-thread scratch (a block of 256 pixels x k
 * bytes within RLX_SCRATCH_MAX_BYTES: k up to about 128 K). */
bool rlx_cpu_qconv_fits(size_t k);

/* Depthwise: the convolution of args (w) when its groups have one input
 * channel each (cin_g = 1), dilation 1, the same stride 1 or 2 on both
 * axes, kw <= 16 and kh * kw <= 64, in AVX-512 (rlx_cpu_qconv_available
 * gates it too). Per output channel the plane (x - zx) is padded as int16
 * and each pair of horizontal taps is one vpmaddwd of 16 outputs (products
 * and pair sums fit 32 bits exactly: |x - zx|, |w - zw| <= 255); the sums
 * start at the bias, wrap as the reference's, and are requantized as
 * rlx_cpu_qconv's. Runs over the worker pool.
 * errors: RLX_ERR_OUT_OF_MEMORY (the per-thread scratch). */
rlx_status rlx_cpu_qdw(const rlx_cpu_qconv_args *args);

/* Whether rlx_cpu_qdw runs args' geometry (see above) with its two padded
 * planes within RLX_SCRATCH_MAX_BYTES; false on builds without it. */
bool rlx_cpu_qdw_fits(const rlx_cpu_qconv_args *args);

#endif
