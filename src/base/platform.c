#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */
#include "base/platform.h"
#include "base/mem.h"
#include "base/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _WIN32
#include <io.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif


uint64_t rlx_physical_memory_bytes(void) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return (uint64_t)pages * (uint64_t)page;
#endif
    return 0;
}

rlx_status rlx_read_file(const char *path, void **out_data, size_t *out_size) {
    *out_data = NULL;
    *out_size = 0;
    /* a directory opens and "sizes" to LONG_MAX on Linux: refuse it first */
    uint64_t fsize;
    RLX_TRY(rlx_file_size(path, &fsize));
    FILE *f = fopen(path, "rb");
    if (!f) return rlx_fail(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return rlx_fail(RLX_ERR_IO, "cannot seek '%s': %s", path, strerror(errno));
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return rlx_fail(RLX_ERR_IO, "cannot size '%s' (is it a regular file?)", path);
    }
    void *buf = malloc((size_t)len ? (size_t)len : 1);
    if (!buf) {
        fclose(f);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate %ld bytes to read '%s'", len, path);
    }
    size_t got = fread(buf, 1, (size_t)len, f);
    int err = ferror(f);
    fclose(f);
    if (got != (size_t)len || err) {
        free(buf);
        return rlx_fail(RLX_ERR_IO, "short read of '%s' (%zu of %ld bytes)", path, got, len);
    }
    *out_data = buf;
    *out_size = (size_t)len;
    return RLX_OK;
}

rlx_status rlx_file_map_open(const char *path, rlx_file_map *out) {
    memset(out, 0, sizeof *out);
#ifndef _WIN32
    uint64_t fsize;
    RLX_TRY(rlx_file_size(path, &fsize));
    if (fsize == 0) return RLX_OK;
    if (fsize <= SIZE_MAX) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) return rlx_fail(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (p != MAP_FAILED) {
            out->data = p;
            out->size = (size_t)fsize;
            out->mapped = true;
            return RLX_OK;
        }
    }
    /* a file system without mmap: read it */
#endif
    void *data;
    size_t size;
    RLX_TRY(rlx_read_file(path, &data, &size));
    out->data = data;
    out->size = size;
    return RLX_OK;
}

void rlx_file_map_release(rlx_file_map *m, uint64_t off, size_t len) {
#ifndef _WIN32
    long page = sysconf(_SC_PAGESIZE);
    if (!m->mapped || page <= 0 || off > m->size || len > m->size - off) return;
    uint64_t a = (off + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page, b = (off + len) / (uint64_t)page * (uint64_t)page;
    if (b > a) madvise((void *)(m->data + a), (size_t)(b - a), MADV_DONTNEED);
#else
    (void)m, (void)off, (void)len;
#endif
}

void rlx_file_map_close(rlx_file_map *m) {
#ifndef _WIN32
    if (m->mapped) munmap((void *)m->data, m->size);
    else
#endif
        free((void *)m->data);
    memset(m, 0, sizeof *m);
}

rlx_status rlx_read_file_range(const char *path, uint64_t offset, size_t size, void *dst) {
    FILE *f = fopen(path, "rb");
    if (!f) return rlx_fail(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        fclose(f);
        return rlx_fail(RLX_ERR_IO, "cannot seek to %llu in '%s'", (unsigned long long)offset, path);
    }
    size_t got = fread(dst, 1, size, f);
    fclose(f);
    if (got != size)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "'%s' is too short: wanted %zu bytes at offset %llu, got %zu",
                        path, size, (unsigned long long)offset, got);
    return RLX_OK;
}

rlx_status rlx_file_size(const char *path, uint64_t *out_size) {
    *out_size = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) return rlx_fail(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode) || sb.st_size < 0)
        return rlx_fail(RLX_ERR_IO, "'%s' is not a regular file", path);
    *out_size = (uint64_t)sb.st_size;
    return RLX_OK;
}

double rlx_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rlx_now_coarse_seconds(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
    return rlx_now_seconds();
}

char *rlx_path_dirname(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return rlx_strdup(".");
    if (slash == path) return rlx_strdup("/");
    return rlx_strndup(path, (size_t)(slash - path));
}

char *rlx_path_join_inside(const char *base, const char *rel) {
    if (!rel || !*rel || rel[0] == '/' || rel[0] == '\\') return NULL;
    /* refuse any ".." component and drive letters / backslashes */
    const char *p = rel;
    while (*p) {
        const char *e = p;
        while (*e && *e != '/' && *e != '\\') e++;
        if (e - p == 2 && p[0] == '.' && p[1] == '.') return NULL;
        if (*e == '\\') return NULL;
        if (memchr(p, ':', (size_t)(e - p))) return NULL;
        p = *e ? e + 1 : e;
    }
    size_t lb = strlen(base), lr = strlen(rel);
    char *out = malloc(lb + lr + 2);
    if (!out) return NULL;
    memcpy(out, base, lb);
    out[lb] = '/';
    memcpy(out + lb + 1, rel, lr + 1);
    return out;
}

#ifndef _WIN32
/* Whether the resolved path rp lies inside the resolved folder of dir. */
static bool real_inside(const char *dir, const char *rp) {
    char *rb = dir ? realpath(dir, NULL) : NULL;
    bool ok = false;
    if (rb) {
        size_t n = strlen(rb);
        ok = strncmp(rp, rb, n) == 0 && (rp[n] == '/' || (n == 1 && rb[0] == '/'));
    }
    free(rb);
    return ok;
}
#endif

bool rlx_path_resolves_inside(const char *base, const char *model, const char *path) {
#ifndef _WIN32
    char *rp = realpath(path, NULL);
    if (!rp) return false;
    bool ok = real_inside(base, rp);
    if (!ok && model) {
        char *rm = realpath(model, NULL);
        char *dir = rm ? rlx_path_dirname(rm) : NULL;
        ok = dir && real_inside(dir, rp);
        free(dir);
        free(rm);
    }
    free(rp);
    return ok;
#else
    (void)base, (void)model, (void)path;
    return true;
#endif
}

const char *rlx_getenv(const char *name) { return getenv(name); }

bool rlx_stderr_is_tty(void) {
#ifdef _WIN32
    return _isatty(_fileno(stderr)) != 0;
#else
    return isatty(STDERR_FILENO) == 1;
#endif
}
