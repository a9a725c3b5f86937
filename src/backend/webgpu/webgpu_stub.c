/* Placeholder until the WebGPU backend lands. */
#include "backend/backend.h"
#include "base/status.h"
#include <stdlib.h>

rlx_status rlx_backend_webgpu_open(const char *device, const rlx_session_options *opt, const struct rlx_config *cfg,
                                   rlx_backend **out) {
    (void)opt, (void)cfg;
    *out = NULL;
    return rlx_fail(RLX_ERR_NO_ADAPTER, "device '%s': the WebGPU backend is not built yet", device);
}

rlx_status rlx_backend_webgpu_create(const char *device, const rlx_session_options *opt, const rlx_options *options,
                                     rlx_backend **out) {
    (void)options;
    return rlx_backend_webgpu_open(device, opt, NULL, out);
}

rlx_status rlx_adapters_list(rlx_adapter_info **out, size_t *n) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!out || !n) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "rlx_adapters_list: NULL output pointer");
    return RLX_OK;
}
