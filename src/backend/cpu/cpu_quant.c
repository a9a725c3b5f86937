/* CPU kernels of the quant family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_quant[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_quant_count = 0;
