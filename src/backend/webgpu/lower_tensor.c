/* WGSL lowerings of the tensor family (placeholder). */
#include "backend/webgpu/webgpu.h"
const wg_lowering wg_lowerings_tensor[] = { { "", NULL } };
const size_t wg_lowerings_tensor_count = 0;
