#include "base/tensor.h"
#include "rlx/rlx.h"

size_t rlx_dtype_size(rlx_dtype dtype) {
    switch (dtype) {
    case RLX_DTYPE_F32: case RLX_DTYPE_I32: case RLX_DTYPE_U32: return 4;
    case RLX_DTYPE_U8: case RLX_DTYPE_I8: case RLX_DTYPE_BOOL: return 1;
    case RLX_DTYPE_U16: case RLX_DTYPE_I16: case RLX_DTYPE_F16: case RLX_DTYPE_BF16: return 2;
    case RLX_DTYPE_I64: case RLX_DTYPE_F64: case RLX_DTYPE_U64: return 8;
    case RLX_DTYPE_STRING: return sizeof(const char *); /* one pointer per element (rlx.h) */
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

/* Names of ONNX TensorProto.DataType codes, including the types rlx has no
 * dtype for (strings, complex, float8, int4, ...), for messages. */
const char *rlx_onnx_type_name(int32_t t) {
    switch (t) {
    case 0: return "undefined";
    case 1: return "float";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 8: return "string";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "double";
    case 12: return "uint32";
    case 13: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case 16: return "bfloat16";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    case 24: return "float8e8m0";
    case 25: return "uint2";
    case 26: return "int2";
    }
    return "unknown";
}
