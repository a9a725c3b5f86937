/* IEEE binary16 and bfloat16 <-> binary32 conversion (round to nearest
 * even): the public inline functions of rlx/half.h, and the bit casts the
 * kernels use beside them. */
#ifndef RLX_BASE_HALF_H
#define RLX_BASE_HALF_H

#include <stdint.h>
#include <string.h>

#include "rlx/half.h"

static inline uint32_t rlx_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

#endif
