#include "base/mem.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

void *rlx_alloc_aligned(size_t size) {
    size_t rounded = (size + 63) & ~(size_t)63;
    if (rounded < size) return NULL;
    if (rounded == 0) rounded = 64;
    void *p = aligned_alloc(64, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

void rlx_free_aligned(void *p) { free(p); }

char *rlx_strdup(const char *s) {
    if (!s) return NULL;
    return rlx_strndup(s, strlen(s));
}

char *rlx_strndup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

rlx_status rlx_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return RLX_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "array too large");
        ncap *= 2;
    }
    size_t bytes;
    if (!rlx_mul_ok(ncap, elem, &bytes)) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "array too large");
    void *q = realloc(*p, bytes);
    if (!q) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory growing an array to %zu items", ncap);
    memset((char *)q + *cap * elem, 0, (ncap - *cap) * elem);
    *p = q;
    *cap = ncap;
    return RLX_OK;
}
