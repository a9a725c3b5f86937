/* Cases of the reduce lowerings. */
#include "harness.h"

const bo_family bo_family_reduce = { "reduce", NULL, 0 };
