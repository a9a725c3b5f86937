/* CPU kernels of the tensor family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_tensor[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_tensor_count = 0;
