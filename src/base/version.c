/* rlx_version: the version this library was built as (rlx/version.h,
 * generated from the CMake project version). */
#include "rlx/rlx.h"

const char *rlx_version(void) { return RLX_VERSION_STRING; }
