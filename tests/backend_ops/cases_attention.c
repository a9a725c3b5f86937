/* Cases of the attention lowerings. */
#include "harness.h"

const bo_family bo_family_attention = { "attention", NULL, 0 };
