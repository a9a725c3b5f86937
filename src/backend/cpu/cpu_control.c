/* CPU kernels of the control family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_control[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_control_count = 0;
