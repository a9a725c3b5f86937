/* NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
 * Format facts from the NumPy "npy format" specification: magic "\x93NUMPY",
 * major/minor version bytes, header length (u16 for 1.x, u32 for 2.x/3.x),
 * then a Python dict literal with 'descr', 'fortran_order' and 'shape'. */
#include "base/mem.h"
#include "base/platform.h"
#include "base/status.h"
#include "base/tensor.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *descr; rlx_dtype dtype; } k_npy_types[] = {
    { "f4", RLX_DTYPE_F32 }, { "f2", RLX_DTYPE_F16 }, { "f8", RLX_DTYPE_F64 },
    { "i1", RLX_DTYPE_I8 },  { "i2", RLX_DTYPE_I16 }, { "i4", RLX_DTYPE_I32 }, { "i8", RLX_DTYPE_I64 },
    { "u1", RLX_DTYPE_U8 },  { "u2", RLX_DTYPE_U16 }, { "u4", RLX_DTYPE_U32 }, { "u8", RLX_DTYPE_U64 },
    { "b1", RLX_DTYPE_BOOL },
};

/* Finds the value text after 'key': in the header dict. */
static const char *npy_find(const char *hdr, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

/* Length of the Python list literal at p ('[' ... the matching ']',
 * brackets inside quotes not counted), or up to the end of the text. */
static size_t npy_list_len(const char *p) {
    int depth = 0;
    char quote = 0;
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        if (quote) quote = c == quote ? 0 : quote;
        else if (c == '\'' || c == '"') quote = c;
        else if (c == '[' || c == '(') depth++;
        else if ((c == ']' || c == ')') && --depth == 0) return i + 1;
    }
    return strlen(p);
}

rlx_status rlx_tensor_load_npy(const char *path, rlx_tensor **out_tensor) {
    *out_tensor = NULL;
    void *raw;
    size_t size;
    RLX_TRY(rlx_read_file(path, &raw, &size));
    const unsigned char *b = raw;
    rlx_status st = RLX_OK;
    char *hdr = NULL;
    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s' is not a .npy file (bad magic)", path);
        goto done;
    }
    size_t hlen, hoff;
    if (b[6] == 1) {
        hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        hoff = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (size < 12) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': truncated .npy header", path); goto done; }
        hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
        hoff = 12;
    } else {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': unsupported .npy version %d.%d", path, b[6], b[7]);
        goto done;
    }
    if (hlen > size - hoff) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': truncated .npy header", path); goto done; }
    hdr = rlx_strndup((const char *)b + hoff, hlen);
    if (!hdr) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }

    const char *d = npy_find(hdr, "descr");
    if (d && *d == '[') { /* a list of fields: numpy's structured dtypes */
        size_t dl = npy_list_len(d);
        st = rlx_fail(RLX_ERR_UNSUPPORTED,
                      "'%s': structured .npy arrays are not supported (descr %.*s%s): save one plain numeric array "
                      "per input", path, (int)(dl < 160 ? dl : 160), d, dl > 160 ? "..." : "");
        goto done;
    }
    if (!d || (*d != '\'' && *d != '"')) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy header has no descr", path); goto done; }
    d++;
    char endian = *d;
    /* object ('O': pickled Python objects) and void ('V': raw records)
     * arrays hold no numbers rlx can read */
    const char *kind = d + (endian == '<' || endian == '|' || endian == '=' || endian == '>');
    if (*kind == 'O' || *kind == 'V') {
        size_t dl = strcspn(d, "'\"");
        st = rlx_fail(RLX_ERR_UNSUPPORTED,
                      "'%s': %s .npy arrays are not supported (descr '%.*s'): save a plain numeric array", path,
                      *kind == 'O' ? "object" : "structured (void)", (int)(dl < 40 ? dl : 40), d);
        goto done;
    }
    if (endian == '>' ) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': big-endian .npy data is not supported", path); goto done; }
    if (endian == '<' || endian == '|' || endian == '=') d++;
    rlx_dtype dtype = RLX_DTYPE_UNDEFINED;
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_npy_types); i++)
        if (strncmp(d, k_npy_types[i].descr, 2) == 0 && (d[2] == '\'' || d[2] == '"')) dtype = k_npy_types[i].dtype;
    if (dtype == RLX_DTYPE_UNDEFINED) {
        const char *q = d; while (*q && *q != '\'' && *q != '"') q++;
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy dtype '%.*s' is not supported", path, (int)(q - d), d);
        goto done;
    }
    const char *fo = npy_find(hdr, "fortran_order");
    if (!fo) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy header has no fortran_order", path); goto done; }
    if (strncmp(fo, "True", 4) == 0) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': Fortran-order .npy is not supported (save with C order)", path); goto done; }
    if (strncmp(fo, "False", 5) != 0) {
        size_t fl = strcspn(fo, ",}");
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy fortran_order is '%.*s', expected True or False", path,
                      (int)(fl < 16 ? fl : 16), fo);
        goto done;
    }
    const char *sh = npy_find(hdr, "shape");
    if (!sh || *sh != '(') { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy header has no shape", path); goto done; }
    sh++;
    int64_t dims[RLX_MAX_RANK];
    int rank = 0;
    for (;;) {
        while (*sh == ' ' || *sh == ',') sh++;
        if (*sh == ')') break;
        if (!isdigit((unsigned char)*sh)) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': bad .npy shape", path); goto done; }
        if (rank == RLX_MAX_RANK) { st = rlx_fail(RLX_ERR_UNSUPPORTED, "'%s': rank above %d", path, RLX_MAX_RANK); goto done; }
        char *end;
        errno = 0;
        long long v = strtoll(sh, &end, 10);
        if (v < 0 || errno == ERANGE) {
            st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': bad .npy shape (dim %d out of range)", path, rank);
            goto done;
        }
        dims[rank++] = v;
        sh = end;
        if (*sh != ' ' && *sh != ',' && *sh != ')') {
            st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': bad .npy shape", path);
            goto done;
        }
    }
    /* the data the header claims must be in the file before anything is
     * allocated for it: a few bytes can claim terabytes */
    size_t numel, need, have = size - hoff - hlen;
    st = rlx_shape_numel(dims, rank, &numel);
    if (st) { rlx_fail_prefix(st, "'%s': ", path); goto done; }
    char sb[256];
    if (!rlx_mul_ok(numel, rlx_dtype_size(dtype), &need)) {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy shape %s of %s: the byte size overflows", path,
                      rlx_shape_str(dims, rank, sb, sizeof sb), rlx_dtype_name(dtype));
        goto done;
    }
    if (need > have) {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': truncated .npy data: shape %s of %s needs %zu bytes, the file has %zu",
                      path, rlx_shape_str(dims, rank, sb, sizeof sb), rlx_dtype_name(dtype), need, have);
        goto done;
    }
    if (need < have) {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                      "'%s': %zu bytes after the .npy data (shape %s of %s needs %zu bytes, the file has %zu): not "
                      "one array, or a corrupt header",
                      path, have - need, rlx_shape_str(dims, rank, sb, sizeof sb), rlx_dtype_name(dtype), need, have);
        goto done;
    }
    rlx_tensor *t;
    st = rlx_tensor_create(dtype, dims, rank, &t);
    if (st) { rlx_fail_prefix(st, "'%s': ", path); goto done; }
    memcpy(t->data, b + hoff + hlen, t->nbytes);
    *out_tensor = t;
done:
    free(hdr);
    free(raw);
    return st;
}

rlx_status rlx_tensor_save_npy(const rlx_tensor *t, const char *path) {
    const char *descr = NULL;
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_npy_types); i++)
        if (k_npy_types[i].dtype == t->dtype) descr = k_npy_types[i].descr;
    if (!descr) return rlx_fail(RLX_ERR_UNSUPPORTED, "dtype %s has no .npy code", rlx_dtype_name(t->dtype));
    char hdr[512];
    int o = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     (descr[1] == '1') ? '|' : '<', descr);
    for (int i = 0; i < t->rank; i++)
        o += snprintf(hdr + o, sizeof hdr - (size_t)o, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    if (t->rank == 1) o += snprintf(hdr + o, sizeof hdr - (size_t)o, ",");
    o += snprintf(hdr + o, sizeof hdr - (size_t)o, "), }");
    /* pad with spaces so that 10 + len is a multiple of 64, end with \n */
    int total = 10 + o + 1;
    int pad = (64 - total % 64) % 64;
    memset(hdr + o, ' ', (size_t)pad);
    o += pad;
    hdr[o++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return rlx_fail(RLX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(o & 0xff), (unsigned char)(o >> 8) };
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)o, f) == (size_t)o &&
             fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) ok = 0, err = errno;
    if (!ok) return rlx_fail(RLX_ERR_IO, "short write to '%s': %s", path, err ? strerror(err) : "unknown error");
    return RLX_OK;
}
