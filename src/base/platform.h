/* Platform layer: the few calls that differ between POSIX and Windows. */
#ifndef RLX_BASE_PLATFORM_H
#define RLX_BASE_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include "rlx/rlx.h"

/* Reads a whole file into a malloc'ed buffer (caller frees).
 * errors: RLX_ERR_IO naming the path and the OS reason. */
rlx_status rlx_read_file(const char *path, void **out_data, size_t *out_size);

/* A whole file, read-only: mapped where the platform can (POSIX mmap),
 * else read into memory. Its pages are the page cache's: a mapped page
 * counts in the process's resident memory only while it is touched and
 * until it is released, so a reader that releases what it has converted
 * holds little of the file at any time. A file truncated by another
 * process while it is mapped can end the process with SIGBUS (as with any
 * mmap reader). */
typedef struct rlx_file_map {
    const uint8_t *data; /* size bytes (NULL when size is 0) */
    size_t size;
    bool mapped; /* false: data is a malloc'ed copy */
} rlx_file_map;

/* errors: those of rlx_read_file (RLX_ERR_IO naming the path, a directory
 * or other non-regular file refused; RLX_ERR_OUT_OF_MEMORY). */
rlx_status rlx_file_map_open(const char *path, rlx_file_map *out);

/* Drops the resident pages wholly inside [off, off + len) (madvise
 * MADV_DONTNEED; they read again from the file if touched); a no-op for a
 * read copy. */
void rlx_file_map_release(rlx_file_map *m, uint64_t off, size_t len);

void rlx_file_map_close(rlx_file_map *m);

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

/* A cheaper reading of a monotonic clock for checks made per node (run
 * time limits, base/runctl.h): Linux's CLOCK_MONOTONIC_COARSE (the time of
 * the last timer tick, a few milliseconds' resolution, read without a
 * system call or a hardware counter), else rlx_now_seconds. Seconds, on
 * rlx_now_seconds' time line, never ahead of it (behind by at most the
 * resolution). */
double rlx_now_coarse_seconds(void);

/* Directory part of a path ("a/b/c.onnx" -> "a/b", "c.onnx" -> "."),
 * malloc'ed. */
char *rlx_path_dirname(const char *path);

/* Joins base and a relative path, refusing absolute paths and any ".."
 * component, so the result stays inside base. NULL if refused or OOM. */
char *rlx_path_join_inside(const char *base, const char *rel);

/* Whether `path` (an existing file), with every symbolic link resolved,
 * lies inside the folder `base` resolved likewise (POSIX realpath), or
 * inside the folder that the file `model` (may be NULL) really lies in, so
 * that a link inside the model's folder cannot lead a reader elsewhere
 * (a model and its data both linked from one store, as the Hugging Face
 * cache does, stay readable). Where the platform cannot resolve links,
 * true. */
bool rlx_path_resolves_inside(const char *base, const char *model, const char *path);

/* Value of an environment variable, or NULL. */
const char *rlx_getenv(const char *name);

/* True when stderr is a terminal (progress lines are shown only there). */
bool rlx_stderr_is_tty(void);

/* The address of the function `name` exported by the shared library that
 * holds `anchor` (the address of another function of that library, passed
 * as bytes: `&fn` copied into a void *), else by any library the process
 * has loaded globally; NULL when neither has it or the platform cannot
 * look symbols up (platform_dl.c: POSIX dladdr / dlopen(RTLD_NOLOAD) /
 * dlsym). For optional entry points of a library that rlx links against
 * (wgpu-native's wgpuDeviceCreateShaderModuleTrusted), so that a library
 * without them still loads. */
void *rlx_library_symbol(const void *anchor, const char *name);

#endif
