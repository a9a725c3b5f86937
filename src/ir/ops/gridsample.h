/* GridSample (ONNX GridSample-16/20/22): the attributes resolved once,
 * and the taps of one spatial axis for one grid coordinate. Shape
 * inference, the CPU kernel (cpu_nn_gridsample.c) and the WebGPU lowering
 * (lower_nn.c, kernels/gridsample.wgsl, which computes the same taps in
 * f32) read the attributes through rlx_gridsample_attrs_read.
 *
 * Semantics, as onnxruntime 1.22's CPU kernel computes them:
 *  - a grid value n in [-1, 1] of an axis of length L becomes the pixel
 *    coordinate x = (n + 1) / 2 * (L - 1) (align_corners 1) or
 *    x = ((n + 1) * L - 1) / 2 (align_corners 0), in f32 for f32, f16 and
 *    bf16 grids (onnxruntime's operation order), in f64 for f64 grids;
 *  - nearest: the pixel round(x), ties to even; linear: pixels floor(x)
 *    and floor(x) + 1 with weights 1 - t and t (t = x - floor(x)); cubic
 *    (2 spatial dims only): pixels floor(x) - 1 .. floor(x) + 2 with the
 *    Keys coefficients of t, A = -0.75; an output element is the sum over
 *    the product of the axes' taps;
 *  - padding_mode applies to each tap's integer pixel index (not to x
 *    first): zeros reads 0 outside [0, L - 1], border clamps the index
 *    into it, reflection reflects it about the borders (-0.5 and L - 0.5
 *    with align_corners 0, 0 and L - 1 with 1) as often as needed
 *    (periods 2L and 2(L - 1); a length of 1 reads its one pixel). ONNX's
 *    reference implementation (and PyTorch) clamp or reflect x itself
 *    first; for nearest and linear that gives the same pixels and weights,
 *    for cubic with border padding it differs within two pixels of the
 *    edge, where rlx follows onnxruntime.
 * Values onnxruntime leaves undefined (it converts them to integers as
 * they are): a NaN coordinate gives NaN in every channel (every mode and
 * padding); an infinite one is outside (zeros: 0), at the edge (border),
 * or NaN (reflection); coordinates beyond 2^24 pixels keep their weights
 * (onnxruntime's f32 weights vanish there) and reflect by their exact
 * remainder (both devices). No index is ever formed from
 * a NaN or an infinity, and every index read is inside the input. */
#ifndef RLX_IR_OPS_GRIDSAMPLE_H
#define RLX_IR_OPS_GRIDSAMPLE_H

#include <stdint.h>

#include "ir/graph.h"

typedef enum rlx_gs_mode { RLX_GS_NEAREST, RLX_GS_LINEAR, RLX_GS_CUBIC } rlx_gs_mode;
typedef enum rlx_gs_pad { RLX_GS_ZEROS, RLX_GS_BORDER, RLX_GS_REFLECTION } rlx_gs_pad;

typedef struct rlx_gridsample_attrs {
    rlx_gs_mode mode;
    rlx_gs_pad pad;
    bool align_corners;
} rlx_gridsample_attrs;

/* Reads node n's mode (GridSample-16: bilinear, nearest, bicubic, default
 * bilinear; from 20: linear, nearest, cubic, default linear),
 * padding_mode (zeros, border, reflection) and align_corners (0 or 1).
 * errors: RLX_ERR_INVALID_MODEL naming the node and the value. */
rlx_status rlx_gridsample_attrs_read(const rlx_node *n, rlx_gridsample_attrs *a);

/* Taps per axis of a mode: 1, 2 or 4. */
static inline int rlx_gs_taps(rlx_gs_mode m) { return m == RLX_GS_NEAREST ? 1 : m == RLX_GS_LINEAR ? 2 : 4; }

/* The taps of one axis of length len (> 0) for grid value g (f32_grid:
 * the grid's dtype is f32, f16 or bf16, whose coordinate is computed in
 * f32): idx[j] is a pixel index in [0, len) or -1 (zeros padding outside
 * the input: the tap reads 0), w[j] its weight, j < rlx_gs_taps(mode).
 * Returns RLX_GS_TAPS_OK, RLX_GS_TAPS_NAN (the output element is NaN) or
 * RLX_GS_TAPS_OUTSIDE (every tap reads 0: an infinite coordinate with
 * zeros padding). */
enum { RLX_GS_TAPS_OK, RLX_GS_TAPS_NAN, RLX_GS_TAPS_OUTSIDE };
int rlx_gridsample_axis_taps(const rlx_gridsample_attrs *a, double g, bool f32_grid, int64_t len, int64_t *idx,
                             double *w);

#endif
