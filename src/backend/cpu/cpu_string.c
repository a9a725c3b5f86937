/* CPU kernels of the string family (src/ir/ops/ops_string.c).
 *
 * Case mapping and case-insensitive comparison are ASCII only: bytes
 * 'A'..'Z' and 'a'..'z' map to each other, every other byte (UTF-8
 * sequences of non-ASCII letters included) stays as it is. The `locale`
 * attribute is accepted and does not change this: a locale-aware mapping
 * would depend on the host's installed locales, which is not portable. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/tensor.h"

static char ascii_lower(char ch) { return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch; }
static char ascii_upper(char ch) { return ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch; }

static bool str_equal(const char *a, const char *b, bool case_sensitive) {
    if (case_sensitive) return strcmp(a, b) == 0;
    for (; *a && *b; a++, b++)
        if (ascii_lower(*a) != ascii_lower(*b)) return false;
    return *a == *b;
}

/* StringNormalizer-10 (semantics in ops_string.c). The output owns its
 * characters (rlx_tensor_strings_from). */
static rlx_status k_string_normalizer(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    if (x->dtype != RLX_DTYPE_STRING || (x->rank != 1 && x->rank != 2) || (x->rank == 2 && x->dims[0] != 1))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input must be a [C] or [1, C] string tensor");
    const char *act = rlx_param_str(k->n, RLX_A_case_change_action);
    int mode = strcmp(act, "LOWER") == 0 ? 1 : strcmp(act, "UPPER") == 0 ? 2 : 0;
    if (!mode && strcmp(act, "NONE") != 0)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "case_change_action must be LOWER, UPPER or NONE, got '%s'", act);
    bool cs = rlx_param_int(k->n, RLX_A_is_case_sensitive) != 0;
    const rlx_node_attr *sw = rlx_param(k->n, RLX_A_stopwords);
    size_t n_sw = sw && sw->type == RLX_ATTR_STRINGS ? sw->n : 0;
    size_t n = rlx_tensor_numel(x);
    const char *const *xs = x->data;
    const char **keep = malloc((n + 1) * sizeof *keep);
    if (!keep) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    size_t kept = 0, bytes = 1;
    rlx_status st = RLX_OK;
    for (size_t i = 0; i < n; i++) {
        if (!xs[i]) {
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "string element %zu is NULL", i);
            goto done;
        }
        bool stop = false;
        for (size_t j = 0; j < n_sw && !stop; j++) stop = sw->strings[j] && str_equal(xs[i], sw->strings[j], cs);
        if (stop) continue;
        keep[kept++] = xs[i];
        bytes += strlen(xs[i]) + 1;
    }
    /* the case-mapped copies, each NUL-terminated, in one block */
    char *buf = malloc(bytes);
    if (!buf) {
        st = rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    char *w = buf;
    for (size_t i = 0; i < kept; i++) {
        const char *s = keep[i];
        keep[i] = w;
        for (; *s; s++) *w++ = mode == 1 ? ascii_lower(*s) : mode == 2 ? ascii_upper(*s) : *s;
        *w++ = 0;
    }
    if (!kept) { /* everything filtered: one empty string */
        *w = 0;
        keep[kept++] = w;
    }
    int64_t dims[2] = { 1, (int64_t)kept };
    rlx_tensor *y;
    st = rlx_tensor_strings_from(x->rank == 2 ? dims : dims + 1, x->rank, keep, NULL, &y);
    free(buf);
    if (st) {
        rlx_fail_prefix(st, "%s: ", rlx_node_desc(k->n));
        goto done;
    }
    if (k->out[0]) {
        rlx_free_aligned(k->out[0]->data);
        *k->out[0] = *y;
        y->data = NULL;
    }
    rlx_tensor_destroy(y);
done:
    free(keep);
    return st;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_string[RLX_OP_COUNT] = {
    [RLX_OP_StringNormalizer] = k_string_normalizer,
};
