/* Placeholder until the ONNX importer lands. */
#include "base/status.h"
#include "rlx/rlx.h"

rlx_status rlx_model_load_onnx(const char *path, rlx_model **out) {
    *out = NULL;
    return rlx_fail(RLX_ERR_UNSUPPORTED, "'%s': the ONNX importer is not built yet", path);
}

rlx_status rlx_model_load_onnx_memory(const void *data, size_t size, const char *base_dir, rlx_model **out) {
    (void)data; (void)size; (void)base_dir;
    *out = NULL;
    return rlx_fail(RLX_ERR_UNSUPPORTED, "the ONNX importer is not built yet");
}
