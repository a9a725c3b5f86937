/* CPU kernels of the rnn family (placeholder; filled in by the op work). */
#include "backend/cpu/cpu.h"

const rlx_cpu_kernel rlx_cpu_kernels_rnn[] = { { NULL, NULL } };
const size_t rlx_cpu_kernels_rnn_count = 0;
