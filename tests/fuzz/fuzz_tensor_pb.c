/* libFuzzer harness: ONNX TensorProto files (rlx_tensor_load_onnx, what
 * `rlx run --input x=file.pb` and `rlx conformance` read). External data is
 * looked up beside the temporary file, in a folder that holds nothing
 * else. An input that loads is read to its last byte. */
#include "fuzz_util.h"

#include <rlx/inspect.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_temp(data, size, "in.pb");
    if (!path) return 0;
    rlx_tensor *t = NULL;
    rlx_status st = rlx_tensor_load_onnx(path, &t);
    fuzz_check(st, "rlx_tensor_load_onnx");
    if (st) return 0;
    fuzz_touch_tensor(t);
    rlx_tensor_destroy(t);
    return 0;
}
