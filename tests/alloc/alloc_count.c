/* LD_PRELOAD shim that counts heap allocations (malloc, calloc, realloc,
 * posix_memalign, aligned_alloc, memalign, valloc) in glibc processes.
 *
 *   LD_PRELOAD=librlx_alloc_count.so RLX_ALLOC_COUNT_FILE=out.txt prog ...
 *
 * At exit the count is written as one decimal line to
 * $RLX_ALLOC_COUNT_FILE, or to stderr as "alloc_count N" when unset. The
 * process can also read it at any time through rlx_alloc_count() (found
 * with dlsym(RTLD_DEFAULT, "rlx_alloc_count")). The allocations go to
 * glibc's own __libc_* entry points, so no dlsym is needed at start-up. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ullong g_count;

/* The allocations counted so far in this process. */
unsigned long long rlx_alloc_count(void);
unsigned long long rlx_alloc_count(void) { return atomic_load(&g_count); }

/* With RLX_ALLOC_TRACE_AFTER=N, every allocation after the Nth prints its
 * caller as "alloc OBJECT+0xOFFSET" on stderr (for addr2line -e OBJECT). */
static long long g_trace_after = -2;
static _Thread_local int t_in_trace;

static void trace(void *caller, unsigned long long n) {
    if (g_trace_after == -2) {
        const char *s = getenv("RLX_ALLOC_TRACE_AFTER");
        g_trace_after = s ? atoll(s) : -1;
    }
    if (g_trace_after < 0 || n <= (unsigned long long)g_trace_after || t_in_trace) return;
    t_in_trace = 1;
    Dl_info info;
    char line[512];
    int len;
    if (dladdr(caller, &info) && info.dli_fname)
        len = snprintf(line, sizeof line, "alloc %s+0x%lx\n", info.dli_fname,
                       (unsigned long)((char *)caller - (char *)info.dli_fbase));
    else
        len = snprintf(line, sizeof line, "alloc %p\n", caller);
    if (len > 0) (void)!write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    t_in_trace = 0;
}

/* From now on, every allocation prints its caller as with
 * RLX_ALLOC_TRACE_AFTER (found with dlsym(RTLD_DEFAULT,
 * "rlx_alloc_trace_from_now")). */
void rlx_alloc_trace_from_now(void);
void rlx_alloc_trace_from_now(void) { g_trace_after = (long long)atomic_load(&g_count); }

#define bump() trace(__builtin_return_address(0), atomic_fetch_add_explicit(&g_count, 1, memory_order_relaxed) + 1)

void *malloc(size_t n) {
    bump();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    bump();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    bump();
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n) {
    bump();
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n) {
    bump();
    return __libc_memalign(align, n);
}

void *valloc(size_t n) {
    bump();
    return __libc_memalign(4096, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
    bump();
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p && n) return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("RLX_ALLOC_COUNT_FILE");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%llu\n", (unsigned long long)atomic_load(&g_count));
        fclose(f);
    } else {
        fprintf(stderr, "alloc_count %llu\n", (unsigned long long)atomic_load(&g_count));
    }
}
