/* CPU kernels of the reduce family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_reduce[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_reduce_count = 0;
