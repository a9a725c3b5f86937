/* Cases of the gemm lowerings. */
#include "harness.h"

const bo_family bo_family_gemm = { "gemm", NULL, 0 };
