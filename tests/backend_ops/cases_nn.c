/* Cases of the nn lowerings. */
#include "harness.h"

const bo_family bo_family_nn = { "nn", NULL, 0 };
