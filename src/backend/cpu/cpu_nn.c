/* CPU kernels of the nn family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_nn[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_nn_count = 0;
