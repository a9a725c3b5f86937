/* Allocation helpers. All return NULL on failure (callers turn that into
 * RLX_ERR_OUT_OF_MEMORY); none aborts. */
#ifndef RLX_BASE_MEM_H
#define RLX_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "rlx/rlx.h"

/* 64-byte aligned, zero-filled block of `size` bytes (size 0 allowed). */
void *rlx_alloc_aligned(size_t size);
void rlx_free_aligned(void *p);

/* strdup that tolerates NULL (returns NULL). */
char *rlx_strdup(const char *s);
/* Copies n bytes and appends a NUL. */
char *rlx_strndup(const char *s, size_t n);

/* a * b, or false on size_t overflow. */
static inline bool rlx_mul_ok(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* Grows *p (an array of elem-size items with capacity *cap) to hold at
 * least `need` items; new items are zeroed. Returns RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_grow(void **p, size_t *cap, size_t need, size_t elem);

#define RLX_GROW(arr, cap, need) rlx_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
