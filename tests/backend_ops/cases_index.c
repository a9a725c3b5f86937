/* Cases of the index lowerings. */
#include "harness.h"

const bo_family bo_family_index = { "index", NULL, 0 };
