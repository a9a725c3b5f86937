/* Cases of the fusion lowerings. */
#include "harness.h"

const bo_family bo_family_fusion = { "fusion", NULL, 0 };
