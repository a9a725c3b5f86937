/* WGSL lowerings of the nn family (placeholder). */
#include "backend/webgpu/webgpu.h"
const wg_lowering wg_lowerings_nn[] = { { "", NULL } };
const size_t wg_lowerings_nn_count = 0;
