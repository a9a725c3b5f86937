/* Cases of the tensor lowerings. */
#include "harness.h"

const bo_family bo_family_tensor = { "tensor", NULL, 0 };
