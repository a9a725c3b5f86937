/* WGSL kernel sources embedded at build time from
 * src/backend/webgpu/kernels/<name>.wgsl (see cmake/embed_wgsl.cmake). */
#ifndef RLX_BACKEND_WEBGPU_WGSL_SOURCES_H
#define RLX_BACKEND_WEBGPU_WGSL_SOURCES_H

#include <stddef.h>

typedef struct rlx_wgsl_source {
    const char *name;   /* file stem, e.g. "conv2d_direct" */
    const char *source; /* NUL-terminated WGSL */
} rlx_wgsl_source;

extern const rlx_wgsl_source rlx_wgsl_sources[];
extern const size_t rlx_wgsl_source_count;

#endif
