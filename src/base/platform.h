/* Platform layer: the few calls that differ between POSIX and Windows. */
#ifndef RLX_BASE_PLATFORM_H
#define RLX_BASE_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include "rlx/rlx.h"

/* Reads a whole file into a malloc'ed buffer (caller frees).
 * errors: RLX_ERR_IO naming the path and the OS reason. */
rlx_status rlx_read_file(const char *path, void **out_data, size_t *out_size);

/* Bytes of physical memory of the machine (sysconf), or 0 when unknown. */
uint64_t rlx_physical_memory_bytes(void);

/* Reads `size` bytes at `offset` of a file into a caller buffer.
 * errors: RLX_ERR_IO; RLX_ERR_INVALID_MODEL when the file is shorter. */
rlx_status rlx_read_file_range(const char *path, uint64_t offset, size_t size, void *dst);

/* Size in bytes of a regular file (checked before allocating for data that
 * a model says is in it).
 * errors: RLX_ERR_IO naming the path (missing, not a regular file). */
rlx_status rlx_file_size(const char *path, uint64_t *out_size);

/* rlx_now_seconds, the monotonic clock, is public (rlx/inspect.h). */

/* Directory part of a path ("a/b/c.onnx" -> "a/b", "c.onnx" -> "."),
 * malloc'ed. */
char *rlx_path_dirname(const char *path);

/* Joins base and a relative path, refusing absolute paths and any ".."
 * component, so the result stays inside base. NULL if refused or OOM. */
char *rlx_path_join_inside(const char *base, const char *rel);

/* Value of an environment variable, or NULL. */
const char *rlx_getenv(const char *name);

/* True when stderr is a terminal (progress lines are shown only there). */
bool rlx_stderr_is_tty(void);

#endif
