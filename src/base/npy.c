/* NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
 * Format facts from the NumPy "npy format" specification: magic "\x93NUMPY",
 * major/minor version bytes, header length (u16 for 1.x, u32 for 2.x/3.x),
 * then a Python dict literal with 'descr', 'fortran_order' and 'shape'. */
#include "base/mem.h"
#include "base/platform.h"
#include "base/status.h"
#include "base/tensor.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
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

/* How many times the header dict has the key `key` ('key' or "key" then
 * ':' at the dict's top level; quoted text inside values, such as a
 * structured descr's field names, is skipped). NumPy reads the header as a
 * Python dict literal, where a repeated key keeps its last value, while
 * npy_find takes the first: a header with a key twice is refused so that
 * the same file never reads as other data than np.load gives. */
static int npy_key_count(const char *hdr, const char *key) {
    size_t klen = strlen(key);
    int depth = 0, count = 0;
    for (const char *p = hdr; *p; p++) {
        char c = *p;
        if (c == '{' || c == '[' || c == '(') depth++;
        else if (c == '}' || c == ']' || c == ')') depth--;
        else if (c == '\'' || c == '"') {
            const char *s = p + 1, *e = strchr(s, c);
            if (!e) break;
            const char *q = e + 1;
            while (*q == ' ') q++;
            if (depth == 1 && *q == ':' && (size_t)(e - s) == klen && strncmp(s, key, klen) == 0) count++;
            p = e;
        }
    }
    return count;
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

/* Copies the n elements of es bytes at src, stored in Fortran order (the
 * first index fastest) for dims[0..rank), into dst in C order (the last
 * index fastest): np.save writes a transposed array (x.T) so. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src, const int64_t *dims, int rank, size_t n,
                         size_t es) {
    int64_t idx[RLX_MAX_RANK] = { 0 }, fstride[RLX_MAX_RANK];
    int64_t st = 1;
    for (int d = 0; d < rank; d++) fstride[d] = st, st *= dims[d];
    size_t off = 0; /* the element's index in src */
    for (size_t i = 0; i < n; i++) {
        memcpy(dst + i * es, src + off * es, es);
        for (int d = rank - 1; d >= 0; d--) { /* the next C-order index */
            if (++idx[d] < dims[d]) {
                off += (size_t)fstride[d];
                break;
            }
            off -= (size_t)(fstride[d] * (dims[d] - 1));
            idx[d] = 0;
        }
    }
}

/* The n string elements of NumPy's fixed-width 'U<w>' (UTF-32 code points,
 * little-endian here) or 'S<w>' (bytes) at data, each cut at its trailing
 * NULs as np.load gives them, as a string tensor (UTF-8 for 'U'). An
 * element holding a NUL before other characters or, for 'U', a code point
 * that is no Unicode scalar value is refused: rlx's strings end at their
 * first NUL. */
static rlx_status npy_strings(const char *path, bool unicode, size_t width, const unsigned char *data, size_t n,
                              const int64_t *dims, int rank, rlx_tensor **out) {
    size_t es = unicode ? 4 * width : width, cap = unicode ? 4 * width + 1 : width + 1;
    char **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    char *chars = NULL;
    size_t total;
    rlx_status st = RLX_OK;
    if (!ptrs || !rlx_mul_ok(n, cap, &total) || !(chars = malloc(total ? total : 1))) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "'%s': out of memory for %zu strings", path, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *e = data + i * es;
        char *o = chars + i * cap;
        ptrs[i] = o;
        size_t len = width; /* in characters, trailing NULs cut */
        while (len && (unicode ? (e[4 * (len - 1)] | e[4 * (len - 1) + 1] | e[4 * (len - 1) + 2] |
                                  e[4 * (len - 1) + 3]) == 0
                               : e[len - 1] == 0))
            len--;
        size_t k = 0;
        for (size_t c = 0; c < len; c++) {
            uint32_t cp = unicode ? (uint32_t)e[4 * c] | (uint32_t)e[4 * c + 1] << 8 | (uint32_t)e[4 * c + 2] << 16 |
                                        (uint32_t)e[4 * c + 3] << 24
                                  : e[c];
            if (cp == 0) {
                st = rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                              "'%s': string element %zu holds a NUL character before its end (rlx's strings end at "
                              "the first NUL)", path, i);
                goto out;
            }
            if (!unicode || cp < 0x80) o[k++] = (char)cp;
            else if (cp < 0x800) o[k++] = (char)(0xc0 | cp >> 6), o[k++] = (char)(0x80 | (cp & 0x3f));
            else if (cp < 0x10000 && (cp < 0xd800 || cp > 0xdfff))
                o[k++] = (char)(0xe0 | cp >> 12), o[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)),
                o[k++] = (char)(0x80 | (cp & 0x3f));
            else if (cp >= 0x10000 && cp <= 0x10ffff)
                o[k++] = (char)(0xf0 | cp >> 18), o[k++] = (char)(0x80 | ((cp >> 12) & 0x3f)),
                o[k++] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[k++] = (char)(0x80 | (cp & 0x3f));
            else {
                st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': string element %zu holds U+%X, which is no Unicode "
                              "character", path, i, (unsigned)cp);
                goto out;
            }
        }
        o[k] = 0;
    }
    st = rlx_tensor_create_strings(dims, rank, (const char *const *)ptrs, out);
    if (st) rlx_fail_prefix(st, "'%s': ", path);
out:
    free(chars);
    free(ptrs);
    return st;
}

rlx_status rlx_tensor_load_npy(const char *path, rlx_tensor **out_tensor) {
    if (!path || !out_tensor) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "path or out_tensor is NULL");
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

    static const char *const k_keys[] = { "descr", "fortran_order", "shape" };
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_keys); k++)
        if (npy_key_count(hdr, k_keys[k]) > 1) {
            st = rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                          "'%s': .npy header has the key '%s' more than once (an ambiguous file: numpy keeps the "
                          "last value)", path, k_keys[k]);
            goto done;
        }
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
    /* '>': big-endian (np.save of a '>f4' array), swapped to the host's
     * little-endian order below; rlx is little-endian only */
    bool swap = endian == '>';
    if (endian == '<' || endian == '|' || endian == '=' || endian == '>') d++;
    rlx_dtype dtype = RLX_DTYPE_UNDEFINED;
    /* NumPy's str ('<U<w>') and bytes ('|S<w>') arrays: a string tensor */
    size_t str_width = 0;
    bool unicode = *d == 'U';
    if ((*d == 'U' || *d == 'S') && isdigit((unsigned char)d[1])) {
        char *end;
        errno = 0;
        unsigned long long w = strtoull(d + 1, &end, 10);
        if ((*end == '\'' || *end == '"') && errno != ERANGE && w >= 1 && w <= (1u << 24)) {
            dtype = RLX_DTYPE_STRING;
            str_width = (size_t)w;
        }
    }
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_npy_types) && dtype == RLX_DTYPE_UNDEFINED; i++)
        if (strncmp(d, k_npy_types[i].descr, 2) == 0 && (d[2] == '\'' || d[2] == '"')) dtype = k_npy_types[i].dtype;
    if (dtype == RLX_DTYPE_UNDEFINED) {
        const char *q = d; while (*q && *q != '\'' && *q != '"') q++;
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy dtype '%.*s' is not supported", path, (int)(q - d), d);
        goto done;
    }
    const char *fo = npy_find(hdr, "fortran_order");
    if (!fo) { st = rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': .npy header has no fortran_order", path); goto done; }
    bool fortran = strncmp(fo, "True", 4) == 0; /* reordered to C order below */
    if (!fortran && strncmp(fo, "False", 5) != 0) {
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
    size_t es = dtype == RLX_DTYPE_STRING ? (unicode ? 4 * str_width : str_width) : rlx_dtype_size(dtype);
    if (!rlx_mul_ok(numel, es, &need)) {
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
    if (dtype == RLX_DTYPE_STRING) {
        /* the fixed-width elements in C order and little-endian, then decoded */
        unsigned char *el = malloc(need ? need : 1);
        if (!el) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "'%s': out of memory", path); goto done; }
        if (fortran && rank > 1) fortran_to_c(el, b + hoff + hlen, dims, rank, numel, es);
        else memcpy(el, b + hoff + hlen, need);
        if (swap && unicode)
            for (size_t i = 0; i < need; i += 4) {
                unsigned char c0 = el[i], c1 = el[i + 1];
                el[i] = el[i + 3], el[i + 1] = el[i + 2], el[i + 2] = c1, el[i + 3] = c0;
            }
        st = npy_strings(path, unicode, str_width, el, numel, dims, rank, out_tensor);
        free(el);
        goto done;
    }
    rlx_tensor *t;
    st = rlx_tensor_create(dtype, dims, rank, &t);
    if (st) { rlx_fail_prefix(st, "'%s': ", path); goto done; }
    if (fortran && rank > 1) fortran_to_c(t->data, b + hoff + hlen, dims, rank, numel, es);
    else memcpy(t->data, b + hoff + hlen, t->nbytes);
    if (swap && es > 1)
        for (size_t i = 0; i < numel; i++) {
            unsigned char *e = (unsigned char *)t->data + i * es;
            for (size_t k = 0; k < es / 2; k++) {
                unsigned char c = e[k];
                e[k] = e[es - 1 - k];
                e[es - 1 - k] = c;
            }
        }
    *out_tensor = t;
done:
    free(hdr);
    free(raw);
    return st;
}

/* Decodes UTF-8 s into code points (out NULL: count only); the count in
 * *n. false for bytes that are not UTF-8 (bad lead or continuation byte,
 * overlong form, surrogate, above U+10FFFF). */
static bool utf8_decode(const char *s, uint32_t *out, size_t *n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k = 0;
    while (*p) {
        uint32_t c = *p++, min;
        int more;
        if (c < 0x80) more = 0, min = 0;
        else if ((c & 0xe0) == 0xc0) more = 1, c &= 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) more = 2, c &= 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) more = 3, c &= 0x07, min = 0x10000;
        else return false;
        for (int m = 0; m < more; m++, p++) {
            if ((*p & 0xc0) != 0x80) return false;
            c = (c << 6) | (*p & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
        if (out) out[k] = c;
        k++;
    }
    *n = k;
    return true;
}

/* The header (dict, space padding, newline) for descr and t's shape into
 * hdr; its length. */
static int npy_header(const rlx_tensor *t, const char *descr, char *hdr, size_t cap) {
    int o = snprintf(hdr, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        o += snprintf(hdr + o, cap - (size_t)o, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    if (t->rank == 1) o += snprintf(hdr + o, cap - (size_t)o, ",");
    o += snprintf(hdr + o, cap - (size_t)o, "), }");
    /* pad with spaces so that 10 + len is a multiple of 64, end with \n */
    int total = 10 + o + 1;
    int pad = (64 - total % 64) % 64;
    memset(hdr + o, ' ', (size_t)pad);
    o += pad;
    hdr[o++] = '\n';
    return o;
}

/* A string tensor's elements as NumPy's fixed-width unicode ('<U<width>':
 * UTF-32 code points, NUL-padded, width the longest element's, at least 1)
 * or, where an element is not UTF-8, as bytes ('|S<width>'), the form
 * np.save gives str and bytes arrays. */
static rlx_status save_strings(const rlx_tensor *t, const char *path, FILE *f) {
    size_t numel = rlx_tensor_numel(t), width = 1, n;
    const char *const *e = t->data;
    bool utf8 = true;
    for (size_t i = 0; i < numel; i++) {
        if (!e[i]) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "string element %zu is NULL", i);
        if (utf8 && !utf8_decode(e[i], NULL, &n)) utf8 = false;
    }
    for (size_t i = 0; i < numel; i++) {
        if (utf8) utf8_decode(e[i], NULL, &n);
        else n = strlen(e[i]);
        if (n > width) width = n;
    }
    size_t unit = utf8 ? 4 : 1, row;
    if (!rlx_mul_ok(width, unit, &row)) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "'%s': a string is too long", path);
    char descr[48], hdr[512];
    snprintf(descr, sizeof descr, utf8 ? "<U%zu" : "|S%zu", width);
    int o = npy_header(t, descr, hdr, sizeof hdr);
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(o & 0xff), (unsigned char)(o >> 8) };
    unsigned char *buf = calloc(1, row);
    if (!buf) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)o, f) == (size_t)o;
    for (size_t i = 0; i < numel && ok; i++) {
        memset(buf, 0, row);
        if (utf8) {
            uint32_t *cp = (uint32_t *)buf; /* the host is little-endian (as the f32 data written above) */
            utf8_decode(e[i], cp, &n);
        } else {
            memcpy(buf, e[i], strlen(e[i]));
        }
        ok = fwrite(buf, 1, row, f) == row;
    }
    free(buf);
    return ok ? RLX_OK : rlx_fail(RLX_ERR_IO, "short write to '%s': %s", path, strerror(errno));
}

rlx_status rlx_tensor_save_npy(const rlx_tensor *t, const char *path) {
    if (!path) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "path is NULL");
    size_t need; /* the shape's bytes (a caller's tensor: rank checked first) */
    RLX_TRY(rlx_tensor_check(t, "the tensor to save", &need));
    const char *descr = NULL;
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_npy_types); i++)
        if (k_npy_types[i].dtype == t->dtype) descr = k_npy_types[i].descr;
    if (!descr && t->dtype != RLX_DTYPE_STRING)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "dtype %s has no .npy code", rlx_dtype_name(t->dtype));
    FILE *f = fopen(path, "wb");
    if (!f) return rlx_fail(RLX_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    if (t->dtype == RLX_DTYPE_STRING) {
        rlx_status st = save_strings(t, path, f);
        if (fclose(f) != 0 && !st) st = rlx_fail(RLX_ERR_IO, "short write to '%s': %s", path, strerror(errno));
        return st;
    }
    char full[8], hdr[512];
    snprintf(full, sizeof full, "%c%s", (descr[1] == '1') ? '|' : '<', descr);
    int o = npy_header(t, full, hdr, sizeof hdr);
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(o & 0xff), (unsigned char)(o >> 8) };
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)o, f) == (size_t)o &&
             fwrite(t->data, 1, need, f) == need;
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) ok = 0, err = errno;
    if (!ok) return rlx_fail(RLX_ERR_IO, "short write to '%s': %s", path, err ? strerror(err) : "unknown error");
    return RLX_OK;
}
