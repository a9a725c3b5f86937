#include "rlx/rlx.h"

size_t rlx_dtype_size(rlx_dtype dtype) {
    switch (dtype) {
    case RLX_DTYPE_F32: case RLX_DTYPE_I32: case RLX_DTYPE_U32: return 4;
    case RLX_DTYPE_U8: case RLX_DTYPE_I8: case RLX_DTYPE_BOOL: return 1;
    case RLX_DTYPE_U16: case RLX_DTYPE_I16: case RLX_DTYPE_F16: case RLX_DTYPE_BF16: return 2;
    case RLX_DTYPE_I64: case RLX_DTYPE_F64: case RLX_DTYPE_U64: return 8;
    default: return 0;
    }
}

const char *rlx_dtype_name(rlx_dtype dtype) {
    switch (dtype) {
    case RLX_DTYPE_F32: return "f32";
    case RLX_DTYPE_U8: return "u8";
    case RLX_DTYPE_I8: return "i8";
    case RLX_DTYPE_U16: return "u16";
    case RLX_DTYPE_I16: return "i16";
    case RLX_DTYPE_I32: return "i32";
    case RLX_DTYPE_I64: return "i64";
    case RLX_DTYPE_STRING: return "string";
    case RLX_DTYPE_BOOL: return "bool";
    case RLX_DTYPE_F16: return "f16";
    case RLX_DTYPE_F64: return "f64";
    case RLX_DTYPE_U32: return "u32";
    case RLX_DTYPE_U64: return "u64";
    case RLX_DTYPE_BF16: return "bf16";
    case RLX_DTYPE_UNDEFINED: return "undefined";
    }
    return "?";
}
