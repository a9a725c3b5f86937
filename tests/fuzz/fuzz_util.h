/* Shared helpers of the libFuzzer harnesses (tests/fuzz/, docs/ROBUSTNESS.md
 * "Fuzzing"). Each harness is one fuzz_<format>.c defining
 * LLVMFuzzerTestOneInput; this header is included by each (static
 * functions only, so it needs no library of its own). */
#ifndef RLX_FUZZ_UTIL_H
#define RLX_FUZZ_UTIL_H

#include <rlx/rlx.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure that a file must never cause: RLX_ERR_INTERNAL is documented as
 * "a bug in rlx", so the harness turns it into a crash that libFuzzer
 * records (with the input). `what` names the call. */
static inline void fuzz_check(rlx_status st, const char *what) {
    if (st == RLX_ERR_INTERNAL) {
        fprintf(stderr, "fuzz: %s returned RLX_ERR_INTERNAL: %s\n", what, rlx_last_error());
        abort();
    }
}

/* Writes `data` to a file of this process's private folder (on /dev/shm
 * where it exists) for the readers that take a path; the folder holds
 * nothing else, so a relative external-data location finds nothing. Returns
 * the path (static), or NULL when it cannot be written (the input is then
 * skipped: that is not a finding). */
static inline const char *fuzz_write_temp(const uint8_t *data, size_t size, const char *name) {
    static char dir[64], path[128];
    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/rlx_fuzz_XXXXXX", base);
        if (!mkdtemp(dir)) {
            dir[0] = 0;
            return NULL;
        }
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t n = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || n != size) return NULL;
    return path;
}

/* Reads every byte of a tensor the reader returned and checks nbytes
 * against dims and dtype, so that ASan sees a buffer shorter than claimed. */
static inline void fuzz_touch_tensor(const rlx_tensor *t) {
    size_t numel = rlx_tensor_numel(t);
    if (t->nbytes != numel * rlx_dtype_size(t->dtype)) {
        fprintf(stderr, "fuzz: tensor nbytes %zu != numel %zu * %zu\n", t->nbytes, numel, rlx_dtype_size(t->dtype));
        abort();
    }
    volatile uint8_t acc = 0;
    if (t->dtype == RLX_DTYPE_STRING) {
        const char *const *s = t->data;
        for (size_t i = 0; i < numel; i++) acc ^= (uint8_t)strlen(s[i]);
    } else {
        const uint8_t *b = t->data;
        for (size_t i = 0; i < t->nbytes; i++) acc ^= b[i];
    }
    (void)acc;
}

/* Same dtype, shape and elements; a string tensor's elements (pointers to
 * its own copies) compared by their text. */
static inline bool fuzz_same_tensor(const rlx_tensor *t, const rlx_tensor *u) {
    if (u->dtype != t->dtype || u->rank != t->rank || u->nbytes != t->nbytes ||
        memcmp(u->dims, t->dims, sizeof t->dims[0] * (size_t)t->rank))
        return false;
    if (t->dtype != RLX_DTYPE_STRING) return !t->nbytes || !memcmp(u->data, t->data, t->nbytes);
    const char *const *a = t->data, *const *b = u->data;
    for (size_t i = 0, n = rlx_tensor_numel(t); i < n; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

#endif
