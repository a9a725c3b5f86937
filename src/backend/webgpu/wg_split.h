/* Splitting work whose operands exceed one storage binding.
 *
 * WebGPU binds at most maxStorageBufferBindingSize bytes of a buffer per
 * binding (128 MiB on lavapipe, RLX_MAX_BINDING_BYTES lowers it for
 * tests). A kernel that walks a strided iteration space (elementwise,
 * broadcast binary, strided copies, fills) can run as several dispatches
 * over blocks of that space, each binding only the window of every operand
 * that its block touches. The results are the same bits: every output
 * element is computed by the same code from the same inputs, only by
 * another dispatch.
 *
 * wg_split_strided picks the outermost dim k and the largest count c such
 * that a block (indices fixed on dims < k, c consecutive indices on dim k,
 * everything on dims > k) fits every operand into one binding, and calls
 * `emit` per block, in order. Internal to the WebGPU backend. */
#ifndef RLX_BACKEND_WEBGPU_WG_SPLIT_H
#define RLX_BACKEND_WEBGPU_WG_SPLIT_H

#include "backend/webgpu/webgpu.h"

#define WG_SPLIT_MAX_RANK 8
#define WG_SPLIT_MAX_OPS WG_MAX_BINDINGS /* FusedElementwise: up to 7 inputs and the output */
/* More blocks than this: the lowering declines (the step runs on the CPU)
 * rather than record a pathological number of dispatches. */
#define WG_SPLIT_MAX_BLOCKS 16384u

/* An iteration space over `dims` (outermost first; rank 0 is one point)
 * and the element offsets each operand touches:
 * offset_o(i) = base[o] + sum_d i_d * str[o][d] (strides may be 0 or
 * negative; every offset must be >= 0). */
typedef struct wg_strided {
    int rank;
    uint64_t dims[WG_SPLIT_MAX_RANK];
    int n_ops;
    int64_t base[WG_SPLIT_MAX_OPS];
    int64_t str[WG_SPLIT_MAX_OPS][WG_SPLIT_MAX_RANK];
} wg_strided;

/* One block: the same rank, dims[d] == 1 on the fixed outer dims; per
 * operand the offset of the block's first point and the window [lo, lo+n)
 * of elements it touches (base[o] >= lo[o]). */
typedef struct wg_block {
    int rank;
    uint64_t dims[WG_SPLIT_MAX_RANK];
    uint64_t numel;
    int64_t base[WG_SPLIT_MAX_OPS];
    uint64_t lo[WG_SPLIT_MAX_OPS], n[WG_SPLIT_MAX_OPS];
} wg_block;

typedef rlx_status (*wg_block_fn)(wg_lower *L, const wg_block *b, void *ctx);

/* Calls emit once for the whole space when every operand's window fits a
 * binding, else once per block of the split described above. Declines
 * (RLX_ERR_UNSUPPORTED) past WG_SPLIT_MAX_BLOCKS blocks or on a negative
 * offset; returns what emit returns. */
rlx_status wg_split_strided(wg_lower *L, const wg_strided *s, wg_block_fn emit, void *ctx);

/* wg_split_strided over n consecutive elements, the same for each of n_ops
 * operands (from their element 0). */
rlx_status wg_split_1d(wg_lower *L, uint64_t n, int n_ops, wg_block_fn emit, void *ctx);

/* Elements a window may hold wherever it starts: windows of at most this
 * many elements always fit one binding. */
uint64_t wg_window_room(const wg_caps *caps);

/* Words y[0, n) = lo, hi, lo, hi, ... (kernels/fill.wgsl: a 4-byte value
 * repeated when lo == hi, an i64 as word pairs, four bool bytes a word), in
 * blocks that fit one binding; nothing when n is 0. (lower_tensor.c) */
rlx_status wg_emit_fill(wg_lower *L, int y, uint64_t n, uint32_t lo, uint32_t hi);

/* Words y[0, n) = x[0, n) whatever the dtype (kernels/copy.wgsl over one
 * dim), in blocks that fit one binding; nothing when n is 0.
 * (lower_tensor.c) */
rlx_status wg_emit_copy_words(wg_lower *L, int x, int y, uint64_t n);

#endif
