/* Per-thread scratch buffers (scratch.h): a _Thread_local table of slots,
 * registered with a pthread key whose destructor frees them when the
 * thread exits. */
#define _POSIX_C_SOURCE 200809L
#include "base/scratch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct scratch_set {
    void *buf[RLX_SCRATCH_SLOTS];
    size_t cap[RLX_SCRATCH_SLOTS];
} scratch_set;

static _Thread_local scratch_set t_set;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static atomic_ullong g_growths;

unsigned long long rlx_scratch_growths(void) { return atomic_load(&g_growths); }

static void free_set(void *arg) {
    scratch_set *s = arg;
    for (int i = 0; i < RLX_SCRATCH_SLOTS; i++) {
        free(s->buf[i]);
        s->buf[i] = NULL;
        s->cap[i] = 0;
    }
}

static void key_init(void) { (void)pthread_key_create(&g_key, free_set); }

void *rlx_scratch_get(rlx_scratch_slot slot, size_t bytes) {
    if ((int)slot < 0 || slot >= RLX_SCRATCH_SLOTS || bytes > RLX_SCRATCH_MAX_BYTES) return NULL;
    scratch_set *s = &t_set;
    if (bytes <= s->cap[slot] && s->buf[slot]) return s->buf[slot];
    pthread_once(&g_key_once, key_init);
    /* grow to the request rounded up to 64 KiB (whole pages, room for the
     * next slightly larger request) */
    size_t cap = (bytes + 65535) / 65536 * 65536;
    void *p = aligned_alloc(64, cap);
    if (!p) return NULL;
    free(s->buf[slot]);
    s->buf[slot] = p;
    s->cap[slot] = cap;
    (void)pthread_setspecific(g_key, s);
    atomic_fetch_add_explicit(&g_growths, 1, memory_order_relaxed);
    return p;
}
