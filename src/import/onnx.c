/* import/onnx.c — ONNX ModelProto (protobuf binary) to an rlx graph.
 *
 * The file is parsed with protobuf-c (code generated from onnx.proto), then
 * the GraphProto is walked in this order:
 *   1. initializers become constant values (RLX_VALUE_INITIALIZER);
 *   2. graph inputs that are not initializers become RLX_VALUE_INPUT;
 *   3. every node output is declared, so that nodes written out of order
 *      and subgraphs that refer to later outer values resolve;
 *   4. graph outputs, then value_info, give declared types to values that
 *      have none yet (shape inference refines them later);
 *   5. Constant nodes become constant values, then the other nodes are
 *      added with rlx_graph_add_node (subgraph attributes recursively);
 *      sequence ops are resolved into lists of values (onnx_sequence.h).
 * The top graph then goes through rlx_model_from_graph (verify, which also
 * sorts, and shape inference). Everything read from the file is checked
 * before it is used: counts, string pointers, sizes and their products. */
#include "import/onnx.h"
#include "import/onnx_sequence.h"
#include "import/onnx_contrib.h"
#include "import/onnx_training.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/escape.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/platform.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "runtime/model.h"

/* Limits on counts read from a file, far above real models, so that int
 * arithmetic on them (the IR counts in int) cannot overflow. */
#define MAX_NODE_IO 65536
#define MAX_NODE_ATTRS 4096

/* ------------------------------------------------------------ helpers */

static const char *str_or(const char *s, const char *def) { return s ? s : def; }

static bool is_default_domain(const char *domain) {
    return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Reverses the bytes of each `es`-byte element (raw data is little-endian;
 * only big-endian hosts need this). */
static void swap_elements(void *data, size_t numel, size_t es) {
    uint8_t *p = data;
    for (size_t i = 0; i < numel; i++, p += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* "[1,3,224,224]" of a tensor proto's dims, for messages. */
static const char *proto_dims_str(const Onnx__TensorProto *tp, char *buf, size_t cap) {
    size_t o = 0;
    if (cap < 8) return "";
    o += (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < tp->n_dims && o < cap - 6; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)tp->dims[i]);
    if (o < cap - 1) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* ------------------------------------------------------------ dtypes */


/* Maps a TensorProto.DataType number to an rlx dtype (the numbers agree).
 * what: names the thing in messages ("tensor 'w'", "graph input 'x'").
 * errors: RLX_ERR_INVALID_MODEL (UNDEFINED / 0), RLX_ERR_UNSUPPORTED
 *         (string, complex, float8, 4-bit and 2-bit types, unknown numbers),
 *         naming `what` and the ONNX type. */
static rlx_status rlx_onnx_dtype(int32_t t, const char *what, rlx_dtype *out) {
    *out = RLX_DTYPE_UNDEFINED;
    switch (t) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 13:
    case 16:
        *out = (rlx_dtype)t;
        return RLX_OK;
    case 0:
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s has no element type (UNDEFINED)", what);
    default:
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s has element type %s (%d), which rlx does not support", what,
                        rlx_onnx_type_name(t), (int)t);
    }
}

/* ------------------------------------------------------------ wire scan */

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* What a walk of serialized bytes found before the parser runs. */
typedef struct wire_fault {
    bool too_deep;                         /* sub-messages nest deeper than RLX_ONNX_MAX_NESTING */
    const ProtobufCMessageDescriptor *msg; /* a string field of this message holds a NUL byte, */
    const char *field;                     /* this field (protobuf-c would cut the string there) */
    char before[64];                       /* the string's bytes before the NUL */
    const char *owner_type;                /* the innermost enclosing message with a name: its type */
    char owner[128];                       /* and its name ("" if none) */
} wire_fault;

/* The bytes of the string field named `name` among the top-level fields
 * of the message [p, end) of type d, copied (cut at a NUL) into out. */
static bool wire_name(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d, char *out,
                      size_t cap) {
    const ProtobufCFieldDescriptor *nf = NULL;
    for (unsigned i = 0; i < d->n_fields; i++)
        if (d->fields[i].type == PROTOBUF_C_TYPE_STRING && strcmp(d->fields[i].name, "name") == 0) nf = &d->fields[i];
    if (!nf) return false;
    while (p < end) {
        uint64_t key, v;
        if (!read_varint(&p, end, &key)) return false;
        switch (key & 7) {
        case 0: if (!read_varint(&p, end, &v)) return false; break;
        case 1: if (end - p < 8) return false; p += 8; break;
        case 5: if (end - p < 4) return false; p += 4; break;
        case 2:
            if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
            if ((key >> 3) == nf->id) {
                size_t n = v < cap - 1 ? (size_t)v : cap - 1;
                memcpy(out, p, n);
                out[n] = 0;
                return true;
            }
            p += v;
            break;
        default: return false;
        }
    }
    return false;
}

/* Walks serialized bytes of message type `desc` without building anything
 * and reports whether sub-messages nest deeper than RLX_ONNX_MAX_NESTING
 * levels, or a string field (doc_string aside) holds a NUL byte: protobuf-c
 * keeps a string only up to its first NUL, so an external data location
 * "w.bin\0..." would read w.bin and names "a\0b" and "a\0c" would be one.
 * Malformed bytes end the walk with no fault: the parser that runs next
 * reports them. Iterative, so the walk itself needs no stack. */
static bool wire_faulty(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc, wire_fault *wf) {
    struct frame {
        const uint8_t *start, *end;
        const ProtobufCMessageDescriptor *d;
    } st[RLX_ONNX_MAX_NESTING];
    memset(wf, 0, sizeof *wf);
    int top = 0;
    const uint8_t *p = data;
    st[0].start = data;
    st[0].end = data + size;
    st[0].d = desc;
    for (;;) {
        if (p >= st[top].end) {
            if (top == 0) return false;
            top--;
            continue;
        }
        const uint8_t *end = st[top].end;
        uint64_t key, v;
        if (!read_varint(&p, end, &key)) return false;
        switch (key & 7) {
        case 0:
            if (!read_varint(&p, end, &v)) return false;
            break;
        case 1:
            if (end - p < 8) return false;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return false;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
            uint64_t field = key >> 3;
            const ProtobufCFieldDescriptor *f =
                (field && field <= UINT_MAX) ? protobuf_c_message_descriptor_get_field(st[top].d, (unsigned)field)
                                             : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
                if (top + 1 >= RLX_ONNX_MAX_NESTING) return wf->too_deep = true;
                top++;
                st[top].start = p;
                st[top].end = p + v;
                st[top].d = f->descriptor;
                break;
            }
            const uint8_t *nul = f && f->type == PROTOBUF_C_TYPE_STRING && strcmp(f->name, "doc_string") != 0
                                     ? memchr(p, 0, (size_t)v) : NULL;
            if (nul) {
                wf->msg = st[top].d;
                wf->field = f->name;
                size_t n = (size_t)(nul - p) < sizeof wf->before - 1 ? (size_t)(nul - p) : sizeof wf->before - 1;
                memcpy(wf->before, p, n);
                wf->before[n] = 0;
                for (int k = top; k >= 0 && !wf->owner_type; k--)
                    if (wire_name(st[k].start, st[k].end, st[k].d, wf->owner, sizeof wf->owner))
                        wf->owner_type = st[k].d->short_name;
                return true;
            }
            p += v;
            break;
        }
        default:
            return false; /* groups or garbage: left to the parser */
        }
    }
}

/* The message of a fault wire_faulty found in `what` (a model, a file),
 * which is not a valid `kind` ("ONNX model", "TensorProto"). */
static rlx_status wire_fail(const wire_fault *wf, const char *what, const char *kind) {
    if (wf->too_deep)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s is not a valid %s: messages nest deeper than %d levels", what, kind,
                        RLX_ONNX_MAX_NESTING);
    char b[300], o[600] = "";
    if (wf->owner_type) snprintf(o, sizeof o, "%s '%s': ", wf->owner_type, rlx_escape_text(wf->owner, b, sizeof b));
    char c[300];
    return rlx_fail(RLX_ERR_INVALID_MODEL,
                    "%s is not a valid %s: %sthe string field '%s' of a %s holds a NUL byte after '%s' "
                    "(strings may not hold NUL bytes)", what, kind, o, wf->field, wf->msg->short_name,
                    rlx_escape_text(wf->before, c, sizeof c));
}

/* Whether sub-messages nest too deep (the walk of wire_faulty, NUL bytes
 * in strings aside: those the whole model's walk found already). */
static bool nesting_too_deep(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc) {
    wire_fault wf;
    return wire_faulty(data, size, desc, &wf) && wf.too_deep;
}

/* ------------------------------------------------------------ tensors */

/* Parses a decimal string of digits only into *out; false if empty, signed,
 * not decimal or above UINT64_MAX. */
static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Where the external data of a tensor of `nbytes` bytes lies: *out_path
 * (malloc'ed, inside base_dir) and *out_offset. Checks the location, the
 * offset and length strings and the file size before anything is
 * allocated for the data. */
static rlx_status external_source(const Onnx__TensorProto *tp, const char *name, const char *base_dir,
                                  const char *model_path, size_t nbytes,
                                  char **out_path, uint64_t *out_offset) {
    *out_path = NULL;
    *out_offset = 0;
    const char *location = NULL, *offset_s = NULL, *length_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data ? tp->external_data[i] : NULL;
        if (!e || !e->key) continue;
        if (strcmp(e->key, "location") == 0) location = e->value;
        else if (strcmp(e->key, "offset") == 0) offset_s = e->value;
        else if (strcmp(e->key, "length") == 0) length_s = e->value;
        /* "checksum" and unknown keys are ignored */
    }
    if (!base_dir)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                        "tensor '%s': its data is in an external file, but no folder to read it from was given "
                        "(rlx_model_load_onnx_memory with base_dir NULL refuses external data)",
                        name);
    if (!location || !*location)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': external data has no 'location'", name);
    uint64_t offset = 0, length = nbytes;
    if (offset_s && !parse_u64(offset_s, &offset))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': external data offset '%s' is not a byte count", name,
                        offset_s);
    if (length_s && !parse_u64(length_s, &length))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': external data length '%s' is not a byte count", name,
                        length_s);
    if (length != nbytes)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "tensor '%s': external data length is %llu bytes, but its shape and type need %zu", name,
                        (unsigned long long)length, nbytes);
    char *path = rlx_path_join_inside(base_dir, location);
    if (!path)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "tensor '%s': external data location '%s' is refused: it must be a relative path inside "
                        "the model's folder (no absolute paths, no '..', no drive letters or backslashes)",
                        name, location);
    uint64_t fsize;
    rlx_status st = rlx_file_size(path, &fsize);
    if (st) {
        free(path);
        return rlx_fail_prefix(st, "tensor '%s': external data: ", name);
    }
    if (!rlx_path_resolves_inside(base_dir, model_path, path)) {
        free(path);
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "tensor '%s': external data location '%s' is refused: through a symbolic link it leads "
                        "outside the model's folder", name, location);
    }
    if (offset > fsize || fsize - offset < nbytes) {
        st = rlx_fail(RLX_ERR_INVALID_MODEL,
                      "tensor '%s': external file '%s' has %llu bytes, too short for %zu bytes at offset %llu", name,
                      location, (unsigned long long)fsize, nbytes, (unsigned long long)offset);
        free(path);
        return st;
    }
    *out_path = path;
    *out_offset = offset;
    return RLX_OK;
}

/* Count of values in the typed field that holds dtype dt, and its name. */
static size_t typed_count(const Onnx__TensorProto *tp, rlx_dtype dt, const char **field) {
    switch (dt) {
    case RLX_DTYPE_F32: *field = "float_data"; return tp->float_data ? tp->n_float_data : 0;
    case RLX_DTYPE_I64: *field = "int64_data"; return tp->int64_data ? tp->n_int64_data : 0;
    case RLX_DTYPE_F64: *field = "double_data"; return tp->double_data ? tp->n_double_data : 0;
    case RLX_DTYPE_U32: case RLX_DTYPE_U64: *field = "uint64_data"; return tp->uint64_data ? tp->n_uint64_data : 0;
    default: *field = "int32_data"; return tp->int32_data ? tp->n_int32_data : 0;
    }
}

/* A narrow type's values in a wider typed field (int32_data for 8- and
 * 16-bit integers and the f16 and bf16 bit patterns; uint64_data for
 * uint32) must fit the type: a truncation would load other values
 * silently. onnxruntime 1.22 refuses f16 and bf16 ("data overflow") and
 * truncates the integers; bool is any nonzero value (both agree). */
static rlx_status check_typed_range(const Onnx__TensorProto *tp, rlx_dtype dt, const char *name, size_t n) {
    int64_t lo, hi;
    switch (dt) {
    case RLX_DTYPE_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case RLX_DTYPE_U8: lo = 0, hi = UINT8_MAX; break;
    case RLX_DTYPE_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case RLX_DTYPE_U16: case RLX_DTYPE_F16: case RLX_DTYPE_BF16: lo = 0, hi = UINT16_MAX; break;
    case RLX_DTYPE_U32:
        for (size_t i = 0; i < n; i++)
            if (tp->uint64_data[i] > UINT32_MAX)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' (uint32): uint64_data[%zu] = %llu does not fit",
                                name, i, (unsigned long long)tp->uint64_data[i]);
        return RLX_OK;
    default: return RLX_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (tp->int32_data[i] < lo || tp->int32_data[i] > hi)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' (%s): int32_data[%zu] = %d is outside [%lld, %lld]",
                            name, rlx_onnx_type_name(tp->data_type), i, (int)tp->int32_data[i], (long long)lo,
                            (long long)hi);
    return RLX_OK;
}

/* Copies the typed field into t (count == numel checked by the caller). */
static void copy_typed(const Onnx__TensorProto *tp, rlx_tensor *t, size_t n) {
    void *d = t->data;
    if (!n) return; /* the fields may be NULL then */
    switch (t->dtype) {
    case RLX_DTYPE_F32: memcpy(d, tp->float_data, n * sizeof(float)); break;
    case RLX_DTYPE_I64: memcpy(d, tp->int64_data, n * sizeof(int64_t)); break;
    case RLX_DTYPE_F64: memcpy(d, tp->double_data, n * sizeof(double)); break;
    case RLX_DTYPE_U64: memcpy(d, tp->uint64_data, n * sizeof(uint64_t)); break;
    case RLX_DTYPE_U32: for (size_t i = 0; i < n; i++) ((uint32_t *)d)[i] = (uint32_t)tp->uint64_data[i]; break;
    case RLX_DTYPE_I32: memcpy(d, tp->int32_data, n * sizeof(int32_t)); break;
    case RLX_DTYPE_I16: for (size_t i = 0; i < n; i++) ((int16_t *)d)[i] = (int16_t)tp->int32_data[i]; break;
    case RLX_DTYPE_I8: for (size_t i = 0; i < n; i++) ((int8_t *)d)[i] = (int8_t)tp->int32_data[i]; break;
    case RLX_DTYPE_U8: for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = (uint8_t)tp->int32_data[i]; break;
    case RLX_DTYPE_BOOL: for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = tp->int32_data[i] != 0; break;
    case RLX_DTYPE_U16: case RLX_DTYPE_F16: case RLX_DTYPE_BF16:
        /* f16/bf16: the low 16 bits are the bit pattern */
        for (size_t i = 0; i < n; i++) ((uint16_t *)d)[i] = (uint16_t)(uint32_t)tp->int32_data[i];
        break;
    default: break;
    }
}

/* A string tensor: ONNX keeps its elements (bytes, UTF-8) in string_data,
 * exactly numel of them, never in raw_data or external data. */
static rlx_status strings_from_proto(const Onnx__TensorProto *tp, const char *name, const int64_t *dims, int rank,
                                     size_t numel, rlx_tensor **out) {
    if (tp->has_raw_data || (tp->has_data_location && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': a string tensor keeps its elements in string_data, "
                        "not in raw_data or external data", name);
    size_t count = tp->string_data ? tp->n_string_data : 0;
    if (count != numel)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' (string) needs %zu values, but string_data has %zu", name,
                        numel, count);
    const char **ptrs = malloc((numel + 1) * sizeof *ptrs);
    size_t *lens = malloc((numel + 1) * sizeof *lens);
    rlx_status st = RLX_OK;
    if (!ptrs || !lens) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "tensor '%s': out of memory", name);
    for (size_t i = 0; i < numel && !st; i++) {
        lens[i] = tp->string_data[i].len;
        ptrs[i] = tp->string_data[i].data ? (const char *)tp->string_data[i].data : "";
        if (!tp->string_data[i].data) lens[i] = 0;
    }
    if (!st) st = rlx_tensor_strings_from(dims, rank, ptrs, lens, out);
    if (st) rlx_fail_prefix(st, "tensor '%s': ", name);
    free(ptrs);
    free(lens);
    return st;
}

/* protobuf-c copies every bytes field (raw_data) out of the buffer it
 * parses. Initializers are unpacked with this allocator, whose blocks are
 * tensor blocks (rlx_alloc_aligned: 64-byte aligned, zero-padded), so the
 * tensor can adopt the copy of raw_data instead of copying it once more. */
static void *pb_alloc_aligned(void *ud, size_t size) {
    (void)ud;
    return rlx_alloc_aligned(size);
}
static void pb_free_aligned(void *ud, void *p) {
    (void)ud;
    rlx_free_aligned(p);
}
static ProtobufCAllocator g_tensor_allocator = { pb_alloc_aligned, pb_free_aligned, NULL };

/* What the conversion of one TensorProto may do beyond reading it. */
typedef struct tensor_load {
    const rlx_config *cfg;  /* limits.max_tensor_bytes, limits.max_model_bytes; NULL: none */
    uint64_t *external_sum; /* running sum of external data bytes (checked against max_model_bytes), or NULL */
    bool adopt_raw;         /* tp was unpacked with g_tensor_allocator: take raw_data's block */
    const char *model_path; /* the model file (external data may lie where it really is), or NULL */
    bool *was_4bit;         /* non-NULL: INT4 / UINT4 load as i8 / u8, a byte a value, and set *was_4bit;
                             * NULL: they are refused */
} tensor_load;

static rlx_status tensor_from_proto(Onnx__TensorProto *tp, const char *base_dir, const tensor_load *ld,
                                    rlx_tensor **out);

rlx_status rlx_onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, rlx_tensor **out) {
    return tensor_from_proto((Onnx__TensorProto *)tp, base_dir, NULL, out);
}

/* tp is changed only with ld->adopt_raw (its raw_data moves into *out). */
static rlx_status tensor_from_proto(Onnx__TensorProto *tp, const char *base_dir, const tensor_load *ld,
                                    rlx_tensor **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor output pointer is NULL");
    *out = NULL;
    if (!tp) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor proto is NULL");
    const char *name = str_or(tp->name, "");
    char what[300], dbuf[256];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (tp->segment)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "tensor '%s': segmented tensors (TensorProto.segment) are not supported",
                        name);
    if (!tp->has_data_type) return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' has no data_type", name);
    rlx_dtype dt;
    /* INT4 / UINT4 (onnx.proto): two values a byte, the first in the low
     * nibble, an odd count's last high nibble unused; in int32_data each
     * entry holds one such byte. Widened to a byte a value (sign-extended
     * for INT4) where the caller takes them (ld->was_4bit). */
    bool four = (tp->data_type == 21 || tp->data_type == 22) && ld && ld->was_4bit;
    if (four) dt = tp->data_type == 22 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
    else RLX_TRY(rlx_onnx_dtype(tp->data_type, what, &dt));
    if (ld && ld->was_4bit) *ld->was_4bit = four;
    if (tp->n_dims && !tp->dims) return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': dims missing", name);
    if (tp->n_dims > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "tensor '%s' has rank %zu, above the maximum %d", name, tp->n_dims,
                        RLX_MAX_RANK);
    int64_t dims[RLX_MAX_RANK] = { 0 };
    int rank = (int)tp->n_dims;
    size_t numel = 1, nbytes;
    for (int i = 0; i < rank; i++) {
        dims[i] = tp->dims[i];
        if (dims[i] < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' has a negative dim %lld in %s", name,
                            (long long)dims[i], proto_dims_str(tp, dbuf, sizeof dbuf));
        if ((uint64_t)dims[i] > SIZE_MAX || !rlx_mul_ok(numel, (size_t)dims[i], &numel))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': the element count of dims %s overflows", name,
                            proto_dims_str(tp, dbuf, sizeof dbuf));
    }
    size_t es = rlx_dtype_size(dt);
    if (!rlx_mul_ok(numel, es, &nbytes) || nbytes > SIZE_MAX - 64)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': the byte size of dims %s overflows", name,
                        proto_dims_str(tp, dbuf, sizeof dbuf));

    if (ld && ld->cfg && dt != RLX_DTYPE_STRING)
        RLX_TRY(rlx_limit_check(ld->cfg, "limits.max_tensor_bytes", nbytes, what));
    if (dt == RLX_DTYPE_STRING) return strings_from_proto(tp, name, dims, rank, numel, out);

    bool external = false;
    if (tp->has_data_location) {
        if (tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) external = true;
        else if (tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' has an unknown data_location %d", name,
                            (int)tp->data_location);
    }
    const char *field = "raw_data";
    size_t count = 0;
    /* the bytes in the file: numel (widened: nbytes) or, 4-bit, ceil(numel / 2) */
    size_t fbytes = four ? numel / 2 + numel % 2 : nbytes;
    if (!external && four) {
        const char *what4 = tp->has_raw_data ? "bytes of raw_data" : "int32_data entries (two values each)";
        size_t have = tp->has_raw_data ? tp->raw_data.len : tp->int32_data ? tp->n_int32_data : 0;
        if (tp->has_raw_data && tp->raw_data.len && !tp->raw_data.data)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': raw_data missing", name);
        if (have != fbytes)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s' (%s %s, two values a byte) needs %zu %s, but has %zu",
                            name, rlx_onnx_type_name(tp->data_type), proto_dims_str(tp, dbuf, sizeof dbuf), fbytes,
                            what4, have);
        for (size_t i = 0; !tp->has_raw_data && i < have; i++)
            if (tp->int32_data[i] < 0 || tp->int32_data[i] > UINT8_MAX)
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "tensor '%s' (%s): int32_data[%zu] = %d is not two 4-bit values (0 to 255)", name,
                                rlx_onnx_type_name(tp->data_type), i, (int)tp->int32_data[i]);
    } else if (!external) {
        if (tp->has_raw_data) {
            if (tp->raw_data.len && !tp->raw_data.data)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "tensor '%s': raw_data missing", name);
            if (tp->raw_data.len != nbytes)
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "tensor '%s' (%s %s) needs %zu bytes of raw_data, but has %zu", name,
                                rlx_onnx_type_name(tp->data_type), proto_dims_str(tp, dbuf, sizeof dbuf), nbytes,
                                tp->raw_data.len);
        } else {
            count = typed_count(tp, dt, &field);
            if (count != numel)
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "tensor '%s' (%s %s) needs %zu values, but %s has %zu%s", name,
                                rlx_onnx_type_name(tp->data_type), proto_dims_str(tp, dbuf, sizeof dbuf), numel,
                                field, count, count < numel ? " (data shorter than the shape)" : "");
            RLX_TRY(check_typed_range(tp, dt, name, count));
        }
    }
    char *ext_path = NULL;
    uint64_t ext_offset = 0;
    if (external)
        RLX_TRY(external_source(tp, name, base_dir, ld ? ld->model_path : NULL, fbytes, &ext_path, &ext_offset));
    if (external && ld && ld->external_sum) {
        /* external files are not bounded by the model file's size: their
         * total counts against limits.max_model_bytes too */
        *ld->external_sum += fbytes;
        char ewhat[400];
        snprintf(ewhat, sizeof ewhat, "the external data of the initializers up to tensor '%s'", name);
        rlx_status lst = ld->cfg ? rlx_limit_check(ld->cfg, "limits.max_model_bytes", *ld->external_sum, ewhat) : 0;
        if (lst) {
            free(ext_path);
            return lst;
        }
    }
    rlx_tensor *t;
    rlx_status st;
    bool adopt = !external && !four && tp->has_raw_data && nbytes && ld && ld->adopt_raw;
    if (adopt) {
        /* the tensor takes the block protobuf-c copied raw_data into */
        st = rlx_tensor_wrap(dt, dims, rank, tp->raw_data.data, &t);
        if (!st) {
            tp->raw_data.data = NULL; /* free_unpacked skips it now */
            tp->raw_data.len = 0;
        }
    } else {
        st = rlx_tensor_create(dt, dims, rank, &t);
    }
    if (st) {
        free(ext_path);
        return rlx_fail_prefix(st, "tensor '%s': ", name);
    }
    bool raw = true;
    if (external) {
        if (fbytes) st = rlx_read_file_range(ext_path, ext_offset, fbytes, t->data);
        free(ext_path);
        if (st) {
            rlx_tensor_destroy(t);
            return rlx_fail_prefix(st, "tensor '%s': external data: ", name);
        }
    } else if (four) {
        uint8_t *d = t->data;
        for (size_t i = 0; i < fbytes; i++)
            d[i] = tp->has_raw_data ? tp->raw_data.data[i] : (uint8_t)tp->int32_data[i];
    } else if (tp->has_raw_data) {
        if (nbytes && !adopt) memcpy(t->data, tp->raw_data.data, nbytes);
    } else {
        copy_typed(tp, t, numel);
        raw = false;
    }
    if (four) { /* the packed bytes lie at the start: widened from the last value down */
        uint8_t *d = t->data;
        for (size_t i = numel; i-- > 0;) {
            unsigned q = (d[i / 2] >> (4 * (i % 2))) & 15u;
            d[i] = (uint8_t)(dt == RLX_DTYPE_I8 && q >= 8 ? q + 0xF0u : q); /* INT4: two's complement */
        }
        raw = false;
    }
    if (raw) {
        if (es > 1 && !host_is_little_endian()) swap_elements(t->data, numel, es);
        if (dt == RLX_DTYPE_BOOL)
            for (size_t i = 0; i < numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    }
    *out = t;
    return RLX_OK;
}

/* Whether bytes that failed to load as one kind of ONNX file are plainly the
 * other kind: a ModelProto with a graph (want_model false) or a TensorProto
 * with an element type (want_model true). The two cannot be confused: a
 * TensorProto's data_type (field 2) is a varint where a ModelProto has the
 * string producer_name, so neither parses as the other with those set.
 * Parses the bytes once more; called only after a failure. */
static bool other_onnx_kind(const void *data, size_t size, bool want_model) {
    if (want_model) {
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
        bool is = tp && tp->has_data_type && tp->data_type != 0;
        if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
        return is;
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
    bool is = mp && mp->graph;
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    return is;
}

/* The error for a tensor file that holds a model (see other_onnx_kind). */
static rlx_status model_not_tensor(const char *path) {
    return rlx_fail(RLX_ERR_INVALID_MODEL,
                    "'%s' is an ONNX model (a ModelProto with a graph), not a TensorProto: load it with "
                    "rlx_model_load_onnx; rlx_tensor_load_onnx reads one serialized tensor, as in "
                    "test_data_set_N/input_K.pb", path);
}

/* The error for a model file that holds a tensor (see other_onnx_kind). */
static rlx_status tensor_not_model(const char *label) {
    return rlx_fail(RLX_ERR_INVALID_MODEL,
                    "%s is not an ONNX model: it holds one serialized tensor (a TensorProto, as in "
                    "test_data_set_N/input_K.pb); load that with rlx_tensor_load_onnx", label);
}

rlx_status rlx_onnx_load_tensor_file(const char *path, rlx_tensor **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "tensor output pointer is NULL");
    *out = NULL;
    if (!path) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "path is NULL");
    void *data;
    size_t size;
    rlx_status st = rlx_read_file(path, &data, &size);
    if (st) return rlx_fail_prefix(st, "%s: ", path);
    wire_fault wf;
    if (wire_faulty(data, size, &onnx__tensor_proto__descriptor, &wf)) {
        if (other_onnx_kind(data, size, false)) st = model_not_tensor(path);
        else {
            char q[1100];
            snprintf(q, sizeof q, "'%s'", path);
            st = wire_fail(&wf, q, "TensorProto");
        }
        free(data);
        return st;
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
    if (!tp) {
        st = other_onnx_kind(data, size, false)
                 ? model_not_tensor(path)
                 : rlx_fail(RLX_ERR_INVALID_MODEL, "'%s' is not a valid TensorProto: protobuf parse failed", path);
        free(data);
        return st;
    }
    char *dir = rlx_path_dirname(path);
    if (!dir) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    } else {
        st = rlx_onnx_tensor_from_proto(tp, dir, out);
        free(dir);
        /* parsed, but not as a tensor (no element type, say): a model? */
        if (st && st != RLX_ERR_OUT_OF_MEMORY && other_onnx_kind(data, size, false)) st = model_not_tensor(path);
        else if (st) st = rlx_fail_prefix(st, "%s: ", path);
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    free(data);
    return st;
}

/* ------------------------------------------------------------ types */

/* What a ValueInfoProto's type says, ready for a value. */
typedef struct decl_type {
    rlx_dtype dtype;
    int rank; /* -1 unknown */
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
} decl_type;

/* Reads the type of a value (what: "graph input 'x'" for messages) into d.
 * A missing type or element type leaves d undefined (dtype UNDEFINED,
 * rank -1) and is not an error here; symbols are registered in g. A
 * negative dim is dynamic; one other than -1 logs a warning naming `what`.
 * errors: RLX_ERR_UNSUPPORTED (non-tensor types, unsupported element type,
 *         rank above RLX_MAX_RANK), RLX_ERR_OUT_OF_MEMORY. */
static rlx_status decl_type_read(rlx_graph *g, const Onnx__TypeProto *tp, const char *what, decl_type *d) {
    memset(d, 0, sizeof *d);
    d->dtype = RLX_DTYPE_UNDEFINED;
    d->rank = -1;
    for (int i = 0; i < RLX_MAX_RANK; i++) d->syms[i] = -1;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return RLX_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        const char *kind = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "sequence"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE    ? "map"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "optional"
                           : tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE ? "sparse tensor"
                                                                                          : "unknown";
        if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) /* see onnx_sequence.h */
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s has a sequence type; rlx resolves sequences while importing, so they cannot be graph "
                            "inputs or outputs, nor cross into or out of a subgraph", what);
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s has a %s type; rlx supports dense tensors only", what, kind);
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt) return RLX_OK;
    if (tt->has_elem_type && tt->elem_type != 0) RLX_TRY(rlx_onnx_dtype(tt->elem_type, what, &d->dtype));
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (!sh) return RLX_OK; /* unknown rank */
    if (sh->n_dim && !sh->dim) return RLX_OK;
    if (sh->n_dim > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s has rank %zu, above the maximum %d", what, sh->n_dim, RLX_MAX_RANK);
    d->rank = (int)sh->n_dim;
    int n_odd = 0, odd_dim = -1; /* negative dims other than -1 */
    for (int i = 0; i < d->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = sh->dim[i];
        d->dims[i] = RLX_DIM_DYN;
        if (!dim) continue;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* negative: dynamic, no symbol, as onnxruntime reads it; -1 is
             * what exporters write for that, other values say so once */
            if (dim->dim_value >= 0) d->dims[i] = dim->dim_value;
            else if (dim->dim_value != -1 && n_odd++ == 0) odd_dim = i;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param &&
                   *dim->dim_param && strcmp(dim->dim_param, "?") != 0) {
            /* "" and "?" (what exporters write for "unknown", e.g.
             * PaddleOCR's [-1,3,'?','?']) are anonymous: each such dim is
             * free, not one symbol shared by every '?' of the graph */
            d->syms[i] = rlx_graph_sym(g, dim->dim_param);
            if (d->syms[i] < 0) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (dim symbol)");
        }
    }
    if (n_odd)
        rlx_log(RLX_LOG_WARNING,
                "%s declares dim %d as %lld%s; rlx takes it as a dynamic dim, as onnxruntime does (a dim is >= 0, "
                "or a name for a symbolic one)",
                what, odd_dim, (long long)sh->dim[odd_dim]->dim_value,
                n_odd > 1 ? " (and other dims negative)" : "");
    return RLX_OK;
}

static void decl_type_apply(const decl_type *d, rlx_value *v) {
    v->dtype = d->dtype;
    rlx_value_set_shape(v, d->rank, d->dims, d->syms);
}

/* ------------------------------------------------------------ graphs */

/* The top graph's initializers when the model was split (split_model):
 * byte ranges of serialized TensorProtos in the model's bytes, unpacked one
 * at a time; `release` (may be NULL) is told when a range was converted. */
typedef struct init_ranges {
    const uint8_t *data;
    const uint64_t *off;
    const size_t *len;
    size_t n;
    void (*release)(void *ud, uint64_t off, size_t len);
    void *ud;
} init_ranges;

typedef struct onnx_ctx {
    const char *base_dir; /* NULL: external data refused */
    int64_t opset;
    rlx_onnx_seq_scope *seqs; /* sequences of the graph being imported (onnx_sequence.h) */
    const tensor_load *ld;    /* limits for initializers; NULL: none */
    const init_ranges *top_inits; /* NULL: the top graph's initializers are in its GraphProto */
    const Onnx__ModelProto *mp;   /* for its functions; NULL: a graph alone */
    struct fn_arena *fa;          /* where the expanded calls of model-local functions live; NULL without mp */
    /* the top graph's initializers that are also graph inputs may be fed
     * (IR version >= 4; before, every initializer was listed as an input
     * and is a constant, as onnxruntime takes it) */
    bool overridable;
    /* the graph's nodes after model-local functions were inlined, and the
     * default-domain opset each is resolved at (0: the graph's; a
     * function's node: the function's opset_import); NULL: none inlined */
    Onnx__NodeProto *const *fn_nodes;
    const int64_t *fn_opsets;
    size_t n_fn_nodes;
} onnx_ctx;

static rlx_status import_graph(const onnx_ctx *c, const Onnx__GraphProto *gp, rlx_graph *parent, rlx_graph **out);

/* "node 'conv1' (Conv)", "node #12 (com.x.Op)" for messages. */
static const char *node_label(const Onnx__NodeProto *np, size_t index, char *buf, size_t cap) {
    const char *dom = is_default_domain(np->domain) ? "" : np->domain;
    const char *op = str_or(np->op_type, "?");
    if (np->name && *np->name)
        snprintf(buf, cap, "node '%s' (%s%s%s)", np->name, dom, *dom ? "." : "", op);
    else
        snprintf(buf, cap, "node #%zu (%s%s%s)", index, dom, *dom ? "." : "", op);
    return buf;
}

/* Finds `name` in g or, through the enclosing graphs, in an outer scope; an
 * outer value gets a stand-in in g (RLX_VALUE_OUTER, dtype and shape copied,
 * symbols re-registered in g). *id is -1 when no scope defines the name. */
static rlx_status resolve_name(rlx_graph *g, const char *name, int *id) {
    *id = rlx_graph_find(g, name);
    if (*id >= 0 || !g->parent) return RLX_OK;
    int pid;
    RLX_TRY(resolve_name(g->parent, name, &pid));
    if (pid < 0) return RLX_OK;
    int vid;
    RLX_TRY(rlx_graph_add_value(g, name, &vid));
    const rlx_graph *pg = g->parent;
    const rlx_value *pv = &pg->values[pid];
    rlx_value *v = &g->values[vid];
    int32_t syms[RLX_MAX_RANK];
    int rank = pv->rank <= RLX_MAX_RANK ? pv->rank : -1;
    for (int i = 0; i < RLX_MAX_RANK; i++) {
        syms[i] = -1;
        if (i < rank && pv->syms[i] >= 0 && (size_t)pv->syms[i] < pg->n_syms) {
            syms[i] = rlx_graph_sym(g, pg->syms[pv->syms[i]]);
            if (syms[i] < 0) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (dim symbol)");
        }
    }
    v->flags |= RLX_VALUE_OUTER | (pv->flags & RLX_VALUE_4BIT);
    v->dtype = pv->dtype;
    rlx_value_set_shape(v, rank, pv->dims, syms);
    *id = vid;
    return RLX_OK;
}

/* The attribute's ONNX type (ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__*),
 * taken from the field that is set where the file omits it (IR version 1
 * files may); 0 when neither says. */
static int attr_proto_type(const Onnx__AttributeProto *ap) {
    if (ap->has_type && ap->type) return (int)ap->type;
    if (ap->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (ap->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (ap->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (ap->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (ap->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (ap->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (ap->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (ap->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    return 0;
}

/* Converts one attribute; on error *a holds nothing. */
static rlx_status import_attr(const onnx_ctx *c, rlx_graph *g, const Onnx__AttributeProto *ap, const char *label,
                              rlx_node_attr *a) {
    memset(a, 0, sizeof *a);
    if (!ap) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: empty attribute entry", label);
    if (!ap->name || !*ap->name) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: an attribute has no name", label);
    const char *an = ap->name;
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "%s: attribute '%s' refers to '%s' (ref_attr_name), which is only meaningful in functions",
                        label, an, ap->ref_attr_name);
    int type = attr_proto_type(ap);
    if (type == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has neither a type nor a value", label, an);
    rlx_status st = RLX_OK;
    if (!(a->name = rlx_strdup(an))) goto oom;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->f = ap->f; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->i = ap->i; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        if (ap->s.len && !ap->s.data) goto missing;
        if (ap->s.len && memchr(ap->s.data, 0, ap->s.len)) goto nul;
        if (!(a->s = rlx_strndup(ap->s.len ? (const char *)ap->s.data : "", ap->s.len))) goto oom;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t) goto missing;
        st = rlx_onnx_tensor_from_proto(ap->t, c->base_dir, &a->t);
        if (st) {
            rlx_fail_prefix(st, "%s: attribute '%s': ", label, an);
            goto fail;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        if (!ap->g) goto missing;
        st = import_graph(c, ap->g, g, &a->g);
        if (st) {
            rlx_fail_prefix(st, "%s: attribute '%s': ", label, an);
            goto fail;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        if (ap->n_floats && !ap->floats) goto missing;
        a->n = ap->n_floats;
        if (!(a->floats = malloc((a->n + 1) * sizeof(float)))) goto oom;
        if (a->n) memcpy(a->floats, ap->floats, a->n * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        if (ap->n_ints && !ap->ints) goto missing;
        a->n = ap->n_ints;
        if (!(a->ints = malloc((a->n + 1) * sizeof(int64_t)))) goto oom;
        if (a->n) memcpy(a->ints, ap->ints, a->n * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        if (ap->n_strings && !ap->strings) goto missing;
        if (!(a->strings = calloc(ap->n_strings + 1, sizeof(char *)))) goto oom;
        a->n = ap->n_strings;
        for (size_t i = 0; i < a->n; i++) {
            const ProtobufCBinaryData *b = &ap->strings[i];
            if (b->len && !b->data) goto missing;
            if (b->len && memchr(b->data, 0, b->len)) goto nul;
            if (!(a->strings[i] = rlx_strndup(b->len ? (const char *)b->data : "", b->len))) goto oom;
        }
        break;
    default: {
        const char *kind = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS          ? "TENSORS"
                           : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS         ? "GRAPHS"
                           : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR  ? "SPARSE_TENSOR"
                           : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS ? "SPARSE_TENSORS"
                           : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO     ? "TYPE_PROTO"
                           : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS    ? "TYPE_PROTOS"
                                                                                           : "unknown";
        st = rlx_fail(RLX_ERR_UNSUPPORTED, "%s: attribute '%s' has type %s (%d), which rlx does not support", label,
                      an, kind, type);
        goto fail;
    }
    }
    a->type = (rlx_attr_type)type;
    return RLX_OK;
missing:
    st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has no value", label, an);
    goto fail;
nul: /* rlx's strings end at their first NUL: "linear\0x" would be taken as "linear" (as string tensors) */
    st = rlx_fail(RLX_ERR_UNSUPPORTED,
                  "%s: attribute '%s': a string holds a NUL byte, which rlx strings (NUL-terminated) cannot represent",
                  label, an);
    goto fail;
oom:
    st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory reading attribute '%s'", label, an);
fail:
    rlx_node_attr_free(a);
    return st;
}

/* A Constant node (ONNX Constant-1..21) becomes the constant value of its
 * output: attributes value, value_float(s), value_int(s). */
static rlx_status import_constant(const onnx_ctx *c, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Constant takes no inputs, has %zu", label, np->n_input);
    if (np->n_output != 1 || !np->output || !np->output[0] || !*np->output[0])
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Constant needs exactly one named output", label);
    const Onnx__AttributeProto *val = NULL;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute ? np->attribute[i] : NULL;
        if (!ap || !ap->name) continue;
        const char *an = ap->name;
        if (strcmp(an, "sparse_value") == 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: sparse constants (attribute 'sparse_value') are not supported",
                            label);
        if (strcmp(an, "value") == 0 || strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0 ||
            strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0 || strcmp(an, "value_string") == 0 ||
            strcmp(an, "value_strings") == 0) {
            if (val)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Constant has two value attributes ('%s' and '%s')",
                                label, val->name, an);
            val = ap;
        }
    }
    if (!val) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Constant has no value attribute", label);
    /* each value attribute has one type (the Constant schema): a value_int
     * given as a FLOAT would otherwise read as 0 */
    static const struct { const char *name; int type; } k_value_types[] = {
        { "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR },
        { "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT },
        { "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS },
        { "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT },
        { "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS },
        { "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING },
        { "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS },
    };
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_value_types); k++) {
        int got = attr_proto_type(val);
        if (strcmp(val->name, k_value_types[k].name) || got == k_value_types[k].type) continue;
        /* an empty list has no field to tell FLOATS from INTS by */
        if (got == 0 && (k_value_types[k].type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS ||
                         k_value_types[k].type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ||
                         k_value_types[k].type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS))
            continue;
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is %s, expected %s", label, val->name,
                        rlx_attr_type_name((rlx_attr_type)got), rlx_attr_type_name((rlx_attr_type)k_value_types[k].type));
    }
    rlx_tensor *t = NULL;
    rlx_status st = RLX_OK;
    bool four = false;
    const char *an = val->name;
    if (strcmp(an, "value") == 0) {
        if (!val->t) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'value' holds no tensor", label);
        /* 4-bit values widen to a byte each: limits.max_tensor_bytes on that */
        tensor_load ld = { NULL, NULL, false, NULL, &four };
        if (c->ld && (val->t->data_type == 21 || val->t->data_type == 22)) ld.cfg = c->ld->cfg;
        st = tensor_from_proto(val->t, c->base_dir, &ld, &t);
        if (st) return rlx_fail_prefix(st, "%s: ", label);
    } else if (strncmp(an, "value_string", 12) == 0) {
        /* a scalar (value_string) or 1-D (value_strings) string tensor */
        bool one = an[12] == 0;
        size_t n = one ? 1 : val->n_strings;
        if (!one && n && !val->strings) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has no values", label, an);
        if (n > (size_t)INT64_MAX / 2) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' too long", label, an);
        const char **ptrs = malloc((n + 1) * sizeof *ptrs);
        size_t *lens = malloc((n + 1) * sizeof *lens);
        if (!ptrs || !lens) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        for (size_t i = 0; i < n && !st; i++) {
            const ProtobufCBinaryData *b = one ? &val->s : &val->strings[i];
            ptrs[i] = b->data ? (const char *)b->data : "";
            lens[i] = b->data ? b->len : 0;
        }
        int64_t dim = (int64_t)n;
        if (!st) st = rlx_tensor_strings_from(&dim, one ? 0 : 1, ptrs, lens, &t);
        free(ptrs);
        free(lens);
        if (st) return rlx_fail_prefix(st, "%s: attribute '%s': ", label, an);
    } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_int") == 0) {
        bool is_f = an[6] == 'f';
        RLX_TRY(rlx_tensor_create(is_f ? RLX_DTYPE_F32 : RLX_DTYPE_I64, NULL, 0, &t));
        if (is_f) *(float *)t->data = val->f;
        else *(int64_t *)t->data = val->i;
    } else {
        bool is_f = an[6] == 'f';
        size_t n = is_f ? val->n_floats : val->n_ints;
        const void *src = is_f ? (const void *)val->floats : (const void *)val->ints;
        if (n && !src) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has no values", label, an);
        if (n > (size_t)INT64_MAX) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' too long", label, an);
        int64_t dim = (int64_t)n;
        st = rlx_tensor_create(is_f ? RLX_DTYPE_F32 : RLX_DTYPE_I64, &dim, 1, &t);
        if (st) return rlx_fail_prefix(st, "%s: ", label);
        if (n) memcpy(t->data, src, t->nbytes);
    }
    int id = rlx_graph_find(g, np->output[0]);
    if (id < 0) {
        rlx_tensor_destroy(t);
        return rlx_fail(RLX_ERR_INTERNAL, "%s: output '%s' was not declared", label, np->output[0]);
    }
    rlx_value_set_konst(&g->values[id], t);
    if (four) g->values[id].flags |= RLX_VALUE_4BIT;
    return RLX_OK;
}

static rlx_status import_node_at(const onnx_ctx *c, rlx_graph *g, const Onnx__NodeProto *np, size_t index);

/* Node #index np of the graph being imported: a node that a model-local
 * function brought is resolved at the function's opset of the default
 * domain (ONNX IR: a function's nodes are bound by its own opset_import;
 * expand_call checked that it agrees with the model's on the op's version). */
static rlx_status import_node(const onnx_ctx *c, rlx_graph *g, const Onnx__NodeProto *np, size_t index) {
    int64_t opset = c->fn_opsets && index < c->n_fn_nodes && c->fn_nodes[index] == np ? c->fn_opsets[index] : 0;
    if (!opset || opset == g->opset) return import_node_at(c, g, np, index);
    int64_t saved = g->opset;
    g->opset = opset;
    rlx_status st = import_node_at(c, g, np, index);
    g->opset = saved;
    return st;
}

static rlx_status import_node_at(const onnx_ctx *c, rlx_graph *g, const Onnx__NodeProto *np, size_t index) {
    char label[400];
    node_label(np, index, label, sizeof label);
    const char *op = np->op_type;
    const char *domain = is_default_domain(np->domain) ? "" : np->domain;
    if (!*domain && strcmp(op, "Constant") == 0) return import_constant(c, g, np, label);
    /* onnxruntime's contrib ops become default-domain nodes (onnx_contrib.h) */
    const rlx_contrib_def *contrib = rlx_op_find(domain, op) ? NULL : rlx_onnx_contrib_find(domain, op);
    /* domain "rlx" holds internal ops that only the passes create */
    for (size_t i = 0; c->mp && i < c->mp->n_functions; i++) {
        const Onnx__FunctionProto *f = c->mp->functions[i];
        if (f && f->name && strcmp(f->name, op) == 0 && strcmp(str_or(f->domain, ""), domain) == 0 &&
            strcmp(str_or(f->overload, ""), str_or(np->overload, "")) == 0 && !rlx_op_find(domain, op) && !contrib)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: '%s' of domain '%s' is a model-local function (ModelProto.functions), which rlx "
                            "inlines only when it loads a whole model (onnx.inliner.inline_local_functions writes "
                            "the model with them expanded)", label, op, domain);
    }
    /* a function of that name whose overload differs from the call's */
    char overloads[160] = "";
    size_t no = 0;
    for (size_t i = 0; c->mp && i < c->mp->n_functions && !rlx_op_find(domain, op) && !contrib; i++) {
        const Onnx__FunctionProto *f = c->mp->functions[i];
        const char *fd = f && f->domain && !is_default_domain(f->domain) ? f->domain : "";
        if (f && f->name && strcmp(f->name, op) == 0 && strcmp(fd, domain) == 0 && no < sizeof overloads)
            no += (size_t)snprintf(overloads + no, sizeof overloads - no, "%s'%s'", no ? ", " : "",
                                   str_or(f->overload, ""));
    }
    if (no)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: calls function '%s' of domain '%s' with overload '%s', which ModelProto.functions does "
                        "not define (its overloads: %s)", label, op, domain, str_or(np->overload, ""), overloads);
    if (*domain && !contrib && (!rlx_op_find(domain, op) || strcmp(domain, "rlx") == 0))
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "%s: op '%s' of domain '%s' is not supported (rlx implements the default ONNX domain and the "
                        "com.microsoft ops that `rlx ops` lists)", label,
                        op, domain);
    if (np->n_input > MAX_NODE_IO || np->n_output > MAX_NODE_IO || np->n_attribute > MAX_NODE_ATTRS)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: too many inputs, outputs or attributes", label);
    if ((np->n_input && !np->input) || (np->n_output && !np->output) || (np->n_attribute && !np->attribute))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: malformed inputs, outputs or attributes", label);
    bool seq_op; /* sequence ops are resolved while importing (onnx_sequence.c) */
    RLX_TRY(rlx_onnx_seq_node(c->seqs, g, np, label, &seq_op));
    if (seq_op) return RLX_OK;
    int n_in = (int)np->n_input, n_out = (int)np->n_output, n_attrs = 0;
    int *in = malloc(((size_t)n_in + 1) * sizeof(int));
    int *out = malloc(((size_t)n_out + 1) * sizeof(int));
    rlx_node_attr *attrs = calloc(np->n_attribute + 1, sizeof *attrs);
    rlx_status st = RLX_OK;
    if (!in || !out || !attrs) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        goto done;
    }
    for (int i = 0; i < n_in; i++) {
        const char *nm = np->input[i];
        in[i] = -1;
        if (!nm || !*nm) continue; /* omitted optional input */
        RLX_TRY_GOTO(st, resolve_name(g, nm, &in[i]), done);
        if (in[i] < 0) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input '%s' is not defined%s", label, nm,
                          g->parent ? " (neither in this subgraph nor in an enclosing graph)" : "");
            goto done;
        }
    }
    for (int i = 0; i < n_out; i++) {
        const char *nm = np->output[i];
        out[i] = (nm && *nm) ? rlx_graph_find(g, nm) : -1;
        if (nm && *nm && out[i] < 0) {
            st = rlx_fail(RLX_ERR_INTERNAL, "%s: output '%s' was not declared", label, nm);
            goto done;
        }
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        /* "_rlx..." attributes are the passes' internal contract
         * (ir/ops/act.h): a file cannot set them */
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (ap && rlx_attr_name_internal(ap->name)) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL,
                          "%s: attribute '%s' is not an attribute of %s (names starting with '_rlx' are rlx's "
                          "internal attributes, which a model cannot set)", label, ap->name, op);
            goto done;
        }
        RLX_TRY_GOTO(st, import_attr(c, g, np->attribute[i], label, &attrs[n_attrs]), done);
        n_attrs++;
        for (int k = 0; k < n_attrs - 1; k++)
            if (strcmp(attrs[k].name, attrs[n_attrs - 1].name) == 0) {
                st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' appears twice", label, attrs[k].name);
                goto done;
            }
    }
    if (contrib) {
        char name[300];
        if (np->name && *np->name) snprintf(name, sizeof name, "%s", np->name);
        else snprintf(name, sizeof name, "%s_%zu", op, index);
        size_t first = g->n_nodes;
        st = rlx_onnx_contrib_expand(g, contrib, label, name, in, n_in, out, n_out, attrs, n_attrs,
                                     c->ld ? c->ld->cfg : NULL);
        /* `rlx info` lists the op as the file wrote it */
        if (!st) st = rlx_graph_mark_source(g, domain, op, np->name, first);
        goto done;
    }
    /* the node adopts the attributes, also when it fails */
    int id = -1;
    st = rlx_graph_add_node(g, op, domain, (np->name && *np->name) ? np->name : NULL, in, n_in, out, n_out, attrs,
                            n_attrs, &id);
    n_attrs = 0;
    if (!st) g->nodes[id].one_shape = rlx_legacy_one_shape(&g->nodes[id]);
done:
    for (int k = 0; k < n_attrs; k++) rlx_node_attr_free(&attrs[k]);
    free(attrs);
    free(in);
    free(out);
    return st;
}

/* Declares graph input `vi` (not an initializer) as RLX_VALUE_INPUT. */
static rlx_status import_input(rlx_graph *g, const Onnx__ValueInfoProto *vi) {
    const char *name = vi->name;
    char what[300];
    snprintf(what, sizeof what, "graph input '%s'", name);
    decl_type d;
    RLX_TRY(decl_type_read(g, vi->type, what, &d));
    if (!g->parent) { /* the main graph must say what it is fed; subgraph inputs may leave it to the op */
        if (!vi->type) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s has no type", what);
        if (d.dtype == RLX_DTYPE_UNDEFINED) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s has no element type", what);
    }
    int id;
    RLX_TRY(rlx_graph_add_value(g, name, &id));
    RLX_TRY(RLX_GROW(g->inputs, g->cap_inputs, g->n_inputs + 1));
    rlx_value *v = &g->values[id];
    decl_type_apply(&d, v);
    v->flags |= RLX_VALUE_INPUT;
    g->inputs[g->n_inputs++] = id;
    return RLX_OK;
}

/* Initializer #index tp becomes a constant value of g (adopt: tp was
 * unpacked with g_tensor_allocator, its raw_data moves into the value). */
static rlx_status import_initializer(const onnx_ctx *c, rlx_graph *g, Onnx__TensorProto *tp, size_t index,
                                     bool adopt) {
    if (!tp || !tp->name || !*tp->name)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "initializer #%zu has no name", index);
    if (rlx_graph_find(g, tp->name) >= 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "initializer '%s' is defined twice", tp->name);
    bool four = false;
    tensor_load ld = { NULL, NULL, adopt, NULL, &four };
    if (c->ld) ld.cfg = c->ld->cfg, ld.external_sum = c->ld->external_sum, ld.model_path = c->ld->model_path;
    rlx_tensor *t;
    rlx_status st = tensor_from_proto(tp, c->base_dir, &ld, &t);
    if (st) return rlx_fail_prefix(st, "initializer ");
    int id;
    RLX_TRY(rlx_graph_add_konst(g, tp->name, t, &id));
    g->values[id].flags |= RLX_VALUE_INITIALIZER | (four ? RLX_VALUE_4BIT : 0u);
    return RLX_OK;
}

/* The top graph's initializers of a split model, one TensorProto at a time:
 * unpacked from its bytes, adopted by its value, its bytes released. At any
 * moment only one initializer exists twice (as bytes and as a tensor). */
static rlx_status import_init_ranges(const onnx_ctx *c, rlx_graph *g) {
    const init_ranges *r = c->top_inits;
    for (size_t i = 0; i < r->n; i++) {
        const uint8_t *bytes = r->data + r->off[i];
        if (nesting_too_deep(bytes, r->len[i], &onnx__tensor_proto__descriptor))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "initializer #%zu: messages nest deeper than %d levels", i,
                            RLX_ONNX_MAX_NESTING);
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&g_tensor_allocator, r->len[i], bytes);
        if (!tp)
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "initializer #%zu (%zu bytes at offset %llu) is not a valid TensorProto: protobuf parse "
                            "failed", i, r->len[i], (unsigned long long)r->off[i]);
        rlx_status st = import_initializer(c, g, tp, i, true);
        onnx__tensor_proto__free_unpacked(tp, &g_tensor_allocator);
        if (st) return st;
        if (r->release) r->release(r->ud, r->off[i], r->len[i]);
    }
    return RLX_OK;
}

/* A node that the importer expands as an onnxruntime contrib op. */
static bool is_contrib_node(const Onnx__NodeProto *np) {
    const char *domain = is_default_domain(np->domain) ? "" : np->domain;
    return !rlx_op_find(domain, np->op_type) && rlx_onnx_contrib_find(domain, np->op_type);
}

/* Whether every value that node np reads is defined now, through the
 * producers of its inputs too: false while some value on the way is the
 * output of a contrib node not yet expanded (whose expansion needs the
 * dtypes and shapes of its inputs). mark: scratch of g->n_values entries. */
static rlx_status contrib_ready(rlx_graph *g, const Onnx__NodeProto *np, unsigned char *mark, int *stack,
                                bool *ready) {
    *ready = true;
    memset(mark, 0, g->n_values);
    size_t sp = 0;
    for (size_t i = 0; i < np->n_input; i++) {
        if (!np->input[i] || !*np->input[i]) continue;
        int id;
        RLX_TRY(resolve_name(g, np->input[i], &id));
        if (id >= 0 && !mark[id]) mark[id] = 1, stack[sp++] = id;
    }
    while (sp) {
        const rlx_value *v = &g->values[stack[--sp]];
        if (v->konst || (v->flags & (RLX_VALUE_INPUT | RLX_VALUE_INITIALIZER | RLX_VALUE_OUTER))) continue;
        if (v->producer < 0) {
            *ready = false;
            return RLX_OK;
        }
        const rlx_node *n = &g->nodes[v->producer];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && !mark[n->in[k]]) mark[n->in[k]] = 1, stack[sp++] = n->in[k];
    }
    return RLX_OK;
}

/* Imports the nodes of gp other than Constant and the training ops: each
 * contrib node as soon as what it reads is defined (at its place in a
 * sorted file; after its inputs' producers in an unsorted one). */
static rlx_status import_nodes(const onnx_ctx *c, const Onnx__GraphProto *gp, rlx_graph *g) {
    size_t *pending = malloc((gp->n_node + 1) * sizeof *pending), n_pending = 0;
    unsigned char *mark = NULL;
    int *stack = NULL;
    rlx_status st = RLX_OK;
    if (!pending) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < gp->n_node && !st; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if ((is_default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0) || rlx_onnx_is_training_op(np))
            continue;
        bool ready = true;
        if (is_contrib_node(np)) {
            free(mark);
            free(stack);
            mark = malloc(g->n_values + 1);
            stack = malloc((g->n_values + 1) * sizeof(int));
            if (!mark || !stack) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            if (!st) st = contrib_ready(g, np, mark, stack, &ready);
        }
        if (!st && ready) st = import_node(c, g, np, i);
        else if (!st) pending[n_pending++] = i;
    }
    /* the contrib nodes of an unsorted file, each once what it reads is defined */
    for (bool progress = true; !st && n_pending && progress;) {
        progress = false;
        for (size_t k = 0; k < n_pending && !st; k++) {
            const Onnx__NodeProto *np = gp->node[pending[k]];
            free(mark);
            free(stack);
            mark = malloc(g->n_values + 1);
            stack = malloc((g->n_values + 1) * sizeof(int));
            bool ready = false;
            if (!mark || !stack) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            if (!st) st = contrib_ready(g, np, mark, stack, &ready);
            if (st || !ready) continue;
            st = import_node(c, g, np, pending[k]);
            pending[k--] = pending[--n_pending];
            progress = true;
        }
    }
    if (!st && n_pending) {
        char label[400];
        st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: reads a value that depends on its own output (a cycle)",
                      node_label(gp->node[pending[0]], pending[0], label, sizeof label));
    }
    free(pending);
    free(mark);
    free(stack);
    return st;
}

/* ------------------------------------------------------------ model-local functions */

/* A call to a model-local function (ModelProto.functions) is replaced by the
 * function's nodes, as onnx.inliner does: the function's inputs and outputs
 * become the call's, its other values get fresh names ("#k/<call>/<fn>/<name>",
 * k a counter of the import's calls that no name of the model starts with as
 * "#k/": unique whatever the lengths), an attribute that refers to one of the
 * function's (ref_attr_name) takes the call's attribute of that name, else
 * the function's default (attribute_proto), else it is left out; calls inside
 * the body expand in turn (at most RLX_ONNX_MAX_FN_DEPTH deep), in every
 * graph (If, Loop and Scan bodies too), making at most
 * RLX_ONNX_MAX_INLINED_NODES nodes in all. Everything made here lives in an
 * arena freed after the import; the protobuf strings and attributes it
 * points at stay the model's. A function whose body holds a subgraph (If,
 * Loop, Scan) is refused: its outer names would need renaming. */
#define RLX_ONNX_MAX_FN_DEPTH 32
#define RLX_ONNX_MAX_INLINED_NODES 1000000
typedef struct fn_arena {
    void **p;
    size_t n, cap;
    size_t calls;   /* the next call's counter k (fresh names) */
    size_t inlined; /* nodes made by inlining so far (RLX_ONNX_MAX_INLINED_NODES) */
    /* the k of every name in the model that starts with "#k/", sorted;
     * taken_read: the model was scanned */
    size_t *taken, n_taken, cap_taken;
    bool taken_read;
} fn_arena;

static void *fa_alloc(fn_arena *a, size_t bytes) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **p = realloc(a->p, cap * sizeof *p);
        if (!p) return NULL;
        a->p = p, a->cap = cap;
    }
    void *m = calloc(1, bytes ? bytes : 1);
    if (m) a->p[a->n++] = m;
    return m;
}

static void fa_free(fn_arena *a) {
    for (size_t i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
    free(a->taken);
}

/* Notes k when name is "#k/...". */
static rlx_status fa_note_name(fn_arena *a, const char *name) {
    if (!name || name[0] != '#' || name[1] < '0' || name[1] > '9') return RLX_OK;
    size_t k = 0;
    const char *s = name + 1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (k > (SIZE_MAX - 9) / 10) return RLX_OK; /* more than any counter reaches */
        k = k * 10 + (size_t)(*s - '0');
    }
    if (*s != '/') return RLX_OK;
    if (a->n_taken == a->cap_taken) {
        size_t cap = a->cap_taken ? a->cap_taken * 2 : 16;
        size_t *t = realloc(a->taken, cap * sizeof *t);
        if (!t) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        a->taken = t, a->cap_taken = cap;
    }
    a->taken[a->n_taken++] = k;
    return RLX_OK;
}

/* The value names of gp and of the graphs inside it, noted (fa_note_name). */
static rlx_status fa_note_graph(fn_arena *a, const Onnx__GraphProto *gp, int depth) {
    if (!gp || depth > RLX_ONNX_MAX_NESTING) return RLX_OK;
    for (size_t i = 0; gp->input && i < gp->n_input; i++)
        if (gp->input[i]) RLX_TRY(fa_note_name(a, gp->input[i]->name));
    for (size_t i = 0; gp->initializer && i < gp->n_initializer; i++)
        if (gp->initializer[i]) RLX_TRY(fa_note_name(a, gp->initializer[i]->name));
    for (size_t i = 0; gp->node && i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np) continue;
        for (size_t j = 0; np->input && j < np->n_input; j++) RLX_TRY(fa_note_name(a, np->input[j]));
        for (size_t j = 0; np->output && j < np->n_output; j++) RLX_TRY(fa_note_name(a, np->output[j]));
        for (size_t j = 0; np->attribute && j < np->n_attribute; j++) {
            const Onnx__AttributeProto *at = np->attribute[j];
            if (!at) continue;
            RLX_TRY(fa_note_graph(a, at->g, depth + 1));
            for (size_t k = 0; at->graphs && k < at->n_graphs; k++) RLX_TRY(fa_note_graph(a, at->graphs[k], depth + 1));
        }
    }
    return RLX_OK;
}

static int cmp_size(const void *x, const void *y) {
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

/* The next call's counter: one no name of the model starts with as "#k/". */
static size_t fa_next_call(fn_arena *a) {
    size_t k = a->calls++;
    /* taken is sorted: skip the k that a name of the model holds */
    size_t lo = 0, hi = a->n_taken;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->taken[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    while (lo < a->n_taken && a->taken[lo] <= k) {
        if (a->taken[lo] == k) k = a->calls++;
        lo++;
    }
    return k;
}

static const Onnx__FunctionProto *local_function(const Onnx__ModelProto *mp, const Onnx__NodeProto *np) {
    const char *domain = is_default_domain(np->domain) ? "" : np->domain;
    if (!np->op_type) return NULL;
    for (size_t i = 0; mp && i < mp->n_functions; i++) {
        const Onnx__FunctionProto *f = mp->functions[i];
        const char *fd = f && f->domain && !is_default_domain(f->domain) ? f->domain : "";
        /* (domain, name, overload) names a function (IR 10); no overload is "" */
        if (f && f->name && strcmp(f->name, np->op_type) == 0 && strcmp(fd, domain) == 0 &&
            strcmp(str_or(f->overload, ""), str_or(np->overload, "")) == 0)
            return f;
    }
    return NULL;
}

/* ModelProto.functions: each (domain, name, overload) at most once, as the
 * ONNX IR requires (a call could not tell two apart). */
static rlx_status check_function_ids(const Onnx__ModelProto *mp) {
    for (size_t i = 0; i < mp->n_functions; i++) {
        const Onnx__FunctionProto *f = mp->functions[i];
        if (!f || !f->name || !*f->name)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "ModelProto.functions[%zu] has no name", i);
        const char *fd = f->domain && !is_default_domain(f->domain) ? f->domain : "";
        for (size_t j = 0; j < i; j++) {
            const Onnx__FunctionProto *e = mp->functions[j];
            const char *ed = e->domain && !is_default_domain(e->domain) ? e->domain : "";
            if (strcmp(e->name, f->name) == 0 && strcmp(ed, fd) == 0 &&
                strcmp(str_or(e->overload, ""), str_or(f->overload, "")) == 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "ModelProto.functions lists function '%s' of domain '%s'%s%s%s twice (entries %zu and "
                                "%zu): a function's (domain, name, overload) must be unique", f->name, fd,
                                f->overload && *f->overload ? " (overload '" : "", str_or(f->overload, ""),
                                f->overload && *f->overload ? "')" : "", j, i);
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ attribute protos */

#define AT(t) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##t

/* ONNX's name of AttributeProto type t, for messages. */
static const char *attr_proto_type_name(int t) {
    static const char *const names[] = { "UNDEFINED", "FLOAT",   "INT",           "STRING",         "TENSOR",
                                         "GRAPH",     "FLOATS",  "INTS",          "STRINGS",        "TENSORS",
                                         "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS" };
    return t >= 0 && (size_t)t < RLX_ARRAY_LEN(names) ? names[t] : "an unknown type";
}

/* Whether ap holds a value in the field of type t. */
static bool attr_proto_has(const Onnx__AttributeProto *ap, int t) {
    switch (t) {
    case AT(FLOAT): return ap->has_f;
    case AT(INT): return ap->has_i;
    case AT(STRING): return ap->has_s;
    case AT(TENSOR): return ap->t != NULL;
    case AT(GRAPH): return ap->g != NULL;
    case AT(SPARSE_TENSOR): return ap->sparse_tensor != NULL;
    case AT(TYPE_PROTO): return ap->tp != NULL;
    case AT(FLOATS): return ap->n_floats > 0;
    case AT(INTS): return ap->n_ints > 0;
    case AT(STRINGS): return ap->n_strings > 0;
    case AT(TENSORS): return ap->n_tensors > 0;
    case AT(GRAPHS): return ap->n_graphs > 0;
    case AT(SPARSE_TENSORS): return ap->n_sparse_tensors > 0;
    case AT(TYPE_PROTOS): return ap->n_type_protos > 0;
    default: return false;
    }
}

/* An AttributeProto's type against its fields, as the onnx checker has it
 * (and onnxruntime, which runs the checker's node check): from IR version
 * 2 on the type is required (before, attr_proto_type takes it from the
 * field that is set); a value in the field of another type than the one
 * the type names is refused (an INT attribute holding f would read 0). */
static rlx_status check_attr_proto(const Onnx__AttributeProto *ap, int64_t ir_version, const char *where) {
    if (!ap || !ap->name) return RLX_OK; /* import_attr refuses these */
    if (!ap->has_type || ap->type == AT(UNDEFINED)) {
        if (ir_version < 2) return RLX_OK;
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: attribute '%s' has no type (AttributeProto.type is required from IR version 2; the "
                        "model has IR version %lld)", where, ap->name, (long long)ir_version);
    }
    for (int t = AT(FLOAT); t <= AT(TYPE_PROTOS); t++)
        if (t != (int)ap->type && attr_proto_has(ap, t))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is of type %s but holds a value of type %s",
                            where, ap->name, attr_proto_type_name((int)ap->type), attr_proto_type_name(t));
    return RLX_OK;
}

/* check_attr_proto on the attributes of gp's nodes and of the graphs inside. */
static rlx_status check_attr_protos(const Onnx__GraphProto *gp, int64_t ir_version, int depth) {
    if (!gp || !gp->node || depth > RLX_ONNX_MAX_NESTING) return RLX_OK;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np || !np->attribute) continue;
        char label[400];
        node_label(np, i, label, sizeof label);
        for (size_t j = 0; j < np->n_attribute; j++) {
            const Onnx__AttributeProto *ap = np->attribute[j];
            if (!ap) continue;
            RLX_TRY(check_attr_proto(ap, ir_version, label));
            RLX_TRY(check_attr_protos(ap->g, ir_version, depth + 1));
            for (size_t k = 0; ap->graphs && k < ap->n_graphs; k++)
                RLX_TRY(check_attr_protos(ap->graphs[k], ir_version, depth + 1));
        }
    }
    return RLX_OK;
}

/* check_attr_proto on every attribute of the model: its graph's nodes, its
 * functions' nodes and their attributes' defaults. */
static rlx_status check_model_attr_protos(const Onnx__ModelProto *mp) {
    int64_t ir = mp->has_ir_version ? mp->ir_version : 0;
    RLX_TRY(check_attr_protos(mp->graph, ir, 0));
    for (size_t i = 0; mp->functions && i < mp->n_functions; i++) {
        const Onnx__FunctionProto *f = mp->functions[i];
        if (!f) continue;
        char where[400];
        for (size_t k = 0; f->node && k < f->n_node; k++) {
            const Onnx__NodeProto *np = f->node[k];
            if (!np || !np->attribute) continue;
            char label[300];
            snprintf(where, sizeof where, "%s of function '%s'", node_label(np, k, label, sizeof label),
                     str_or(f->name, ""));
            for (size_t j = 0; j < np->n_attribute; j++) RLX_TRY(check_attr_proto(np->attribute[j], ir, where));
        }
        snprintf(where, sizeof where, "function '%s' (a default of its attributes)", str_or(f->name, ""));
        for (size_t j = 0; f->attribute_proto && j < f->n_attribute_proto; j++)
            RLX_TRY(check_attr_proto(f->attribute_proto[j], ir, where));
    }
    return RLX_OK;
}

#undef AT

/* The function np calls that is inlined, or NULL: an op rlx implements stays
 * the op (a function named like one is its expansion). */
static const Onnx__FunctionProto *inlined_function(const Onnx__ModelProto *mp, const Onnx__NodeProto *np) {
    const Onnx__FunctionProto *f = np ? local_function(mp, np) : NULL;
    const char *domain = f && !is_default_domain(np->domain) ? np->domain : "";
    if (f && !rlx_op_find(domain, np->op_type) && !rlx_onnx_contrib_find(domain, np->op_type)) return f;
    return NULL;
}

/* The nodes inlining f makes, saturated at max + 1 (0 for a call that
 * reaches itself: the expansion refuses those). state/count: per function
 * of mp (0 not seen, 1 being counted, 2 counted). */
static size_t inlined_nodes(const Onnx__ModelProto *mp, const Onnx__FunctionProto *f, unsigned char *state,
                            size_t *count, size_t max, int depth) {
    size_t fi = 0;
    if (depth > RLX_ONNX_MAX_FN_DEPTH) return 0; /* refused when expanded */
    while (fi < mp->n_functions && mp->functions[fi] != f) fi++;
    if (fi == mp->n_functions) return 0;
    if (state[fi] == 2) return count[fi];
    if (state[fi] == 1) return 0;
    state[fi] = 1;
    size_t n = 0;
    for (size_t k = 0; k < f->n_node && n <= max; k++) {
        const Onnx__FunctionProto *g = inlined_function(mp, f->node[k]);
        size_t m = g ? inlined_nodes(mp, g, state, count, max, depth + 1) : 1;
        n = m > max + 1 - n ? max + 1 : n + m;
    }
    state[fi] = 2;
    return count[fi] = n;
}

/* Nodes, each with the default-domain opset it is resolved at (0: the
 * graph's). */
typedef struct fn_nodes {
    Onnx__NodeProto **v;
    int64_t *opset;
    size_t n, cap;
} fn_nodes;

static rlx_status fn_push(fn_arena *a, fn_nodes *out, Onnx__NodeProto *np, int64_t opset) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 64;
        Onnx__NodeProto **v = fa_alloc(a, cap * sizeof *v);
        int64_t *o = fa_alloc(a, cap * sizeof *o);
        if (!v || !o) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        if (out->n) {
            memcpy(v, out->v, out->n * sizeof *v);
            memcpy(o, out->opset, out->n * sizeof *o);
        }
        out->v = v, out->opset = o, out->cap = cap;
    }
    out->opset[out->n] = opset;
    out->v[out->n++] = np;
    return RLX_OK;
}

/* The version that opset_import list os[0..n) gives `domain` ("" and
 * "ai.onnx" are one), or -1 when it lists none. */
static int64_t imported_version(Onnx__OperatorSetIdProto *const *os, size_t n, const char *domain) {
    bool dflt = is_default_domain(domain);
    for (size_t i = 0; os && i < n; i++)
        if (os[i] && (dflt ? is_default_domain(os[i]->domain) : (os[i]->domain && strcmp(os[i]->domain, domain) == 0)))
            return os[i]->has_version ? os[i]->version : 0;
    return -1;
}

/* "<a>/<b>" in the arena (NULL: out of memory). */
static char *fa_join(fn_arena *a, const char *x, const char *y) {
    size_t len = strlen(x) + strlen(y) + 2;
    char *r = fa_alloc(a, len);
    if (r) snprintf(r, len, "%s/%s", x, y);
    return r;
}

/* The name a function's value `name` takes in the call (see above). */
static char *fn_rename(fn_arena *a, const Onnx__FunctionProto *f, const Onnx__NodeProto *call, const char *prefix,
                       const char *name) {
    if (!name || !*name) return (char *)"";
    for (size_t i = 0; i < f->n_input; i++)
        if (f->input[i] && strcmp(f->input[i], name) == 0) return i < call->n_input ? call->input[i] : (char *)"";
    for (size_t i = 0; i < f->n_output; i++)
        if (f->output[i] && strcmp(f->output[i], name) == 0 && i < call->n_output && call->output[i] &&
            *call->output[i])
            return call->output[i];
    return fa_join(a, prefix, name);
}

/* One expansion: the graph's call being expanded (for messages) and the
 * function whose body holds the calls now expanded (NULL: the graph). */
typedef struct fn_expand {
    const Onnx__ModelProto *mp;
    fn_arena *a;
    const char *top_label;              /* the graph's call, "node 'x' (F)" */
    const Onnx__FunctionProto *top, *caller;
} fn_expand;

static rlx_status expand_calls(fn_expand *e, Onnx__NodeProto *const *nodes, const int64_t *opsets, size_t n,
                               fn_nodes *out, int depth);

/* Where a call is, for messages: the graph's node, or the function it is
 * in and the graph's call that reached it. */
static const char *call_where(const fn_expand *e, const Onnx__NodeProto *call, size_t index, char *buf, size_t cap) {
    if (!e->caller) return node_label(call, index, buf, cap);
    snprintf(buf, cap, "node %zu of function '%s' (reached from %s)", index, str_or(e->caller->name, ""),
             e->top_label);
    return buf;
}

/* Node k fn of function f (called at `where`): the default-domain opset it
 * is resolved at (*opset; 0 for a node of another domain), from f's
 * opset_import, which must list the node's domain. Where the model imports
 * another version of that domain, the op must have the same version at
 * both (the onnx checker's rule for model-local functions; onnxruntime
 * refuses such a model too); an op rlx does not know by version (another
 * function, a contrib op) is not compared, as the checker does not compare
 * ops without a schema. */
static rlx_status fn_node_opset(const fn_expand *e, const Onnx__FunctionProto *f, const Onnx__NodeProto *fn, size_t k,
                                const char *where, int64_t *opset) {
    *opset = 0;
    const char *dom = is_default_domain(fn->domain) ? "" : fn->domain;
    const char *op = str_or(fn->op_type, "?");
    char node[300];
    snprintf(node, sizeof node, "node %zu%s%s%s (%s%s%s) of function '%s'", k, fn->name && *fn->name ? " '" : "",
             str_or(fn->name, ""), fn->name && *fn->name ? "'" : "", dom, *dom ? "." : "", op, f->name);
    char dname[200];
    if (*dom) snprintf(dname, sizeof dname, "domain '%s'", dom);
    else snprintf(dname, sizeof dname, "the default ONNX domain");
    int64_t fv = imported_version(f->opset_import, f->n_opset_import, dom);
    if (fv < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: %s is of %s, which the function's opset_import does not list (a function imports the "
                        "opset of every domain its nodes use)", where, node, dname);
    if (!*dom) {
        if (fv < RLX_OPSET_MIN || fv > RLX_OPSET_MAX)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: %s: function '%s' imports opset %lld of the default ONNX domain (rlx supports %d "
                            "to %d)", where, node, f->name, (long long)fv, RLX_OPSET_MIN, RLX_OPSET_MAX);
        *opset = fv;
    }
    int64_t mv = imported_version(e->mp->opset_import, e->mp->n_opset_import, dom);
    const rlx_op_def *d = *dom ? NULL : rlx_op_find(dom, op);
    if (mv < 0 || mv == fv || !d) return RLX_OK;
    int vf = rlx_op_version(d, fv), vm = rlx_op_version(d, mv);
    if (vf == vm) return RLX_OK;
    char at_f[64], at_m[64];
    if (vf) snprintf(at_f, sizeof at_f, "%s-%d", op, vf);
    else snprintf(at_f, sizeof at_f, "not defined");
    if (vm) snprintf(at_m, sizeof at_m, "%s-%d", op, vm);
    else snprintf(at_m, sizeof at_m, "not defined");
    return rlx_fail(RLX_ERR_INVALID_MODEL,
                    "%s: %s: the function imports opset %lld of %s, where %s is %s, but the model imports opset "
                    "%lld, where it is %s: the function's opset_import is not compatible with the model's",
                    where, node, (long long)fv, dname, op, at_f, (long long)mv, at_m);
}

static rlx_status expand_call(fn_expand *e, const Onnx__FunctionProto *f, const Onnx__NodeProto *call, size_t index,
                              fn_nodes *out, int depth) {
    fn_arena *a = e->a;
    char where[900];
    call_where(e, call, index, where, sizeof where);
    if (depth >= RLX_ONNX_MAX_FN_DEPTH)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "model-local functions nest more than %d deep (a function that calls "
                        "itself?): %s calls function '%s' at depth %d",
                        RLX_ONNX_MAX_FN_DEPTH, where, f->name, depth + 1);
    if (call->n_input > f->n_input || call->n_output > f->n_output)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %zu inputs and %zu outputs for function '%s', which has %zu and %zu",
                        where, call->n_input, call->n_output, f->name, f->n_input, f->n_output);
    /* each output the call uses is made by a node of the function */
    for (size_t i = 0; i < call->n_output; i++) {
        if (!call->output[i] || !*call->output[i]) continue;
        const char *fo = f->output[i] ? f->output[i] : "";
        bool made = false;
        for (size_t k = 0; k < f->n_node && !made; k++)
            for (size_t j = 0; f->node[k] && j < f->node[k]->n_output && !made; j++)
                made = f->node[k]->output[j] && *fo && strcmp(f->node[k]->output[j], fo) == 0;
        bool is_input = false;
        for (size_t j = 0; j < f->n_input && !is_input; j++) is_input = f->input[j] && strcmp(f->input[j], fo) == 0;
        if (!made)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: function '%s' output %zu '%s' (the call's '%s') is %s: a "
                            "function's outputs are made by its nodes", where, f->name, i, fo, call->output[i],
                            is_input ? "one of its inputs, made by no node of it" : "made by no node of it");
    }
    char num[32];
    snprintf(num, sizeof num, "#%zu", fa_next_call(a));
    char *p1 = fa_join(a, num, call->name && *call->name ? call->name : "call");
    char *prefix = p1 ? fa_join(a, p1, f->name) : NULL;
    if (!prefix) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    fn_nodes body = { 0 };
    for (size_t k = 0; k < f->n_node; k++) {
        const Onnx__NodeProto *fn = f->node[k];
        if (!fn) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: function '%s' node %zu is empty", where, f->name, k);
        Onnx__NodeProto *nn = fa_alloc(a, sizeof *nn);
        char **in = fa_alloc(a, (fn->n_input + 1) * sizeof *in), **outs = fa_alloc(a, (fn->n_output + 1) * sizeof *outs);
        Onnx__AttributeProto **at = fa_alloc(a, (fn->n_attribute + 1) * sizeof *at);
        char kname[32];
        snprintf(kname, sizeof kname, "#%zu", k);
        char *name = fa_join(a, prefix, fn->name && *fn->name ? fn->name : kname);
        if (!nn || !in || !outs || !at || !name) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        *nn = *fn;
        nn->name = name;
        for (size_t i = 0; i < fn->n_input; i++)
            if (!(in[i] = fn_rename(a, f, call, prefix, fn->input[i]))) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < fn->n_output; i++)
            if (!(outs[i] = fn_rename(a, f, call, prefix, fn->output[i]))) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        nn->input = in, nn->output = outs;
        size_t na = 0;
        for (size_t i = 0; i < fn->n_attribute; i++) {
            const Onnx__AttributeProto *fa = fn->attribute[i];
            if (!fa) continue;
            if (fa->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                fa->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS || fa->g || fa->n_graphs)
                return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: function '%s' node %zu has a subgraph attribute '%s': rlx does not "
                                "inline functions with control flow inside", where, f->name, k, str_or(fa->name, ""));
            if (!fa->ref_attr_name || !*fa->ref_attr_name) {
                at[na++] = (Onnx__AttributeProto *)fa;
                continue;
            }
            const Onnx__AttributeProto *src = NULL;
            for (size_t j = 0; j < call->n_attribute && !src; j++)
                if (call->attribute[j] && call->attribute[j]->name && strcmp(call->attribute[j]->name, fa->ref_attr_name) == 0)
                    src = call->attribute[j];
            for (size_t j = 0; j < f->n_attribute_proto && !src; j++)
                if (f->attribute_proto[j] && f->attribute_proto[j]->name &&
                    strcmp(f->attribute_proto[j]->name, fa->ref_attr_name) == 0)
                    src = f->attribute_proto[j];
            if (!src) continue; /* not given, no default: the op's own default */
            Onnx__AttributeProto *c = fa_alloc(a, sizeof *c);
            if (!c) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            *c = *src;
            c->name = fa->name;
            c->ref_attr_name = NULL;
            at[na++] = c;
        }
        nn->attribute = at, nn->n_attribute = na;
        int64_t opset;
        RLX_TRY(fn_node_opset(e, f, fn, k, where, &opset));
        RLX_TRY(fn_push(a, &body, nn, opset));
    }
    const Onnx__FunctionProto *caller = e->caller;
    e->caller = f;
    rlx_status st = expand_calls(e, body.v, body.opset, body.n, out, depth + 1);
    e->caller = caller;
    return st;
}

static rlx_status expand_calls(fn_expand *e, Onnx__NodeProto *const *nodes, const int64_t *opsets, size_t n,
                               fn_nodes *out, int depth) {
    for (size_t i = 0; i < n; i++) {
        const Onnx__FunctionProto *f = inlined_function(e->mp, nodes[i]);
        if (!f) {
            if (depth > 0 && ++e->a->inlined > RLX_ONNX_MAX_INLINED_NODES)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: inlining model-local functions makes more than %d nodes "
                                "(function '%s' calls others too often); rlx inlines at most that many",
                                e->top_label, RLX_ONNX_MAX_INLINED_NODES, str_or(e->top->name, ""));
            RLX_TRY(fn_push(e->a, out, nodes[i], opsets ? opsets[i] : 0));
            continue;
        }
        if (depth > 0) {
            RLX_TRY(expand_call(e, f, nodes[i], i, out, depth));
            continue;
        }
        /* a call of the graph: refused before anything is made when it
         * would make too many nodes */
        char label[400];
        node_label(nodes[i], i, label, sizeof label);
        e->top_label = label, e->top = f, e->caller = NULL;
        size_t nf = e->mp->n_functions;
        unsigned char *state = calloc(nf + 1, 1);
        size_t *count = calloc(nf + 1, sizeof *count);
        if (!state || !count) {
            free(state);
            free(count);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
        size_t max = RLX_ONNX_MAX_INLINED_NODES;
        size_t made = inlined_nodes(e->mp, f, state, count, max, 0);
        free(state);
        free(count);
        rlx_status st = RLX_OK;
        if (made > max - (e->a->inlined < max ? e->a->inlined : max))
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: inlining model-local functions makes more than %d nodes "
                          "(function '%s' calls others too often%s); rlx inlines at most that many",
                          label, RLX_ONNX_MAX_INLINED_NODES, str_or(f->name, ""),
                          e->a->inlined ? ", with the calls before it" : "");
        if (!st) st = expand_call(e, f, nodes[i], i, out, depth);
        e->top_label = NULL, e->top = NULL;
        RLX_TRY(st);
    }
    return RLX_OK;
}

/* A graph input vi named like initializer id must declare what the
 * initializer holds, as onnxruntime requires (any IR version): the same
 * element type and, where it declares a shape, the same rank and every
 * static dim (dim_params and unknown dims are free). A type rlx does not
 * read is left to the caller, as before.
 * errors: RLX_ERR_INVALID_MODEL naming the input, RLX_ERR_OUT_OF_MEMORY. */
static rlx_status check_init_decl(rlx_graph *g, const Onnx__ValueInfoProto *vi, int id) {
    decl_type d;
    char what[300];
    snprintf(what, sizeof what, "graph input '%s'", vi->name);
    rlx_status st = decl_type_read(g, vi->type, what, &d);
    if (st == RLX_ERR_OUT_OF_MEMORY) return st;
    if (st) {
        rlx_clear_error();
        return RLX_OK;
    }
    const rlx_value *v = &g->values[id];
    bool same = d.dtype == RLX_DTYPE_UNDEFINED || d.dtype == v->dtype;
    if (d.rank >= 0) {
        same = same && d.rank == v->rank;
        for (int k = 0; same && k < d.rank; k++) same = d.dims[k] < 0 || d.dims[k] == v->dims[k];
    }
    if (same) return RLX_OK;
    char ds[96], is[96];
    if (d.rank >= 0) rlx_shape_str(d.dims, d.rank, ds, sizeof ds);
    else snprintf(ds, sizeof ds, "(any shape)");
    rlx_shape_str(v->dims, v->rank, is, sizeof is);
    return rlx_fail(RLX_ERR_INVALID_MODEL,
                    "graph input '%s' is declared %s %s, but its initializer of the same name is %s %s",
                    vi->name, d.dtype == RLX_DTYPE_UNDEFINED ? "(any type)" : rlx_dtype_name(d.dtype), ds,
                    rlx_dtype_name(v->dtype), is);
}

/* Whether `name` names a 4-bit constant (RLX_VALUE_4BIT) in g or, where g
 * does not define it, in an enclosing graph. */
static const rlx_value *find_4bit(const rlx_graph *g, const char *name) {
    for (; g; g = g->parent) {
        int id = rlx_graph_find(g, name);
        if (id < 0 || (g->values[id].flags & RLX_VALUE_OUTER)) continue;
        return (g->values[id].flags & RLX_VALUE_4BIT) ? &g->values[id] : NULL;
    }
    return NULL;
}

/* "int4" / "uint4" of a 4-bit constant loaded as i8 / u8. */
static const char *name_4bit(const rlx_value *v) { return rlx_onnx_type_name(v->dtype == RLX_DTYPE_I8 ? 22 : 21); }

/* 4-bit constants load a byte a value (tensor_from_proto); as such they mean
 * what they meant only where nothing can tell the widths apart:
 * DequantizeLinear's x and x_zero_point, both 4-bit. A graph output, or any other reader
 * (QuantizeLinear's y_zero_point, whose output would saturate to the 4-bit
 * range; Cast; Identity; an op of a subgraph) is refused naming the node.
 * errors: RLX_ERR_UNSUPPORTED, RLX_ERR_INVALID_MODEL (x and x_zero_point of
 * different types; a 4-bit x below opset 21). */
static rlx_status check_4bit_uses(const Onnx__GraphProto *gp, const rlx_graph *g) {
    char label[300];
    for (size_t i = 0; i < gp->n_output; i++) {
        const rlx_value *v = gp->output[i] && gp->output[i]->name ? find_4bit(g, gp->output[i]->name) : NULL;
        if (v)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "graph output '%s' is a constant of %s; 4-bit outputs are not supported",
                            gp->output[i]->name, name_4bit(v));
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (np->n_input && !np->input) continue; /* import_node reports it */
        bool dq = is_default_domain(np->domain) && strcmp(np->op_type, "DequantizeLinear") == 0;
        for (size_t k = 0; k < np->n_input; k++) {
            const char *nm = np->input[k];
            const rlx_value *v = nm && *nm ? find_4bit(g, nm) : NULL;
            if (!v) continue;
            if (!dq || (k != 0 && k != 2))
                return rlx_fail(RLX_ERR_UNSUPPORTED,
                                "%s: input '%s' is a constant of %s; rlx reads 4-bit constants only as DequantizeLinear's "
                                "x and x_zero_point (4-bit outputs are not supported)",
                                node_label(np, i, label, sizeof label), nm, name_4bit(v));
        }
        const rlx_value *x4 = dq && np->n_input && np->input[0] ? find_4bit(g, np->input[0]) : NULL;
        if (x4 && g->opset < 21) /* INT4 / UINT4 came with DequantizeLinear-21 */
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: x '%s' is %s, which DequantizeLinear takes from opset 21 (the "
                            "model imports opset %lld)", node_label(np, i, label, sizeof label), np->input[0],
                            name_4bit(x4), (long long)g->opset);
        if (!dq || np->n_input < 3 || !np->input[2] || !*np->input[2]) continue;
        const rlx_value *x = x4, *z = find_4bit(g, np->input[2]);
        if ((x || z) && (!x || !z || x->dtype != z->dtype))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: x '%s' and x_zero_point '%s' must have the same type (%s)",
                            node_label(np, i, label, sizeof label), np->input[0] ? np->input[0] : "",
                            np->input[2], name_4bit(x ? x : z));
    }
    return RLX_OK;
}

/* The body of import_graph, filling the fresh graph g. */
static rlx_status import_graph_body(const onnx_ctx *c, const Onnx__GraphProto *gp, rlx_graph *g) {
    char label[400];
    if ((gp->n_initializer && !gp->initializer) || (gp->n_input && !gp->input) || (gp->n_output && !gp->output) ||
        (gp->n_node && !gp->node) || (gp->n_value_info && !gp->value_info))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "malformed graph");
    if (gp->n_node > INT_MAX / 2 || gp->n_initializer > INT_MAX / 2 || gp->n_input > INT_MAX / 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "graph too large");

    /* 1. initializers: those left out of the parsed top graph first (they
     * came first in it too: split_model keeps the order) */
    if (c->top_inits && !g->parent) RLX_TRY(import_init_ranges(c, g));
    for (size_t i = 0; i < gp->n_initializer; i++) RLX_TRY(import_initializer(c, g, gp->initializer[i], i, false));
    if (gp->n_sparse_initializer) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer ? gp->sparse_initializer[0] : NULL;
        const char *nm = (sp && sp->values && sp->values->name) ? sp->values->name : "";
        return rlx_fail(RLX_ERR_UNSUPPORTED, "sparse initializer '%s' is not supported (%zu sparse initializers)", nm,
                        gp->n_sparse_initializer);
    }

    /* 2. inputs; those with an initializer of the same name are constants
     * (exporters before IR version 4 list every initializer as an input);
     * from IR version 4 on, the top graph's are overridable initializers
     * (g->overridable): constants unless a run feeds them */
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi || !vi->name || !*vi->name) return rlx_fail(RLX_ERR_INVALID_MODEL, "graph input #%zu has no name", i);
        int id = rlx_graph_find(g, vi->name);
        if (id >= 0) {
            bool twice = g->values[id].flags & RLX_VALUE_INPUT;
            for (size_t k = 0; k < g->n_overridable; k++) twice |= g->overridable[k] == id;
            if (twice) return rlx_fail(RLX_ERR_INVALID_MODEL, "graph input '%s' is listed twice", vi->name);
            if (g->values[id].flags & RLX_VALUE_4BIT)
                return rlx_fail(RLX_ERR_UNSUPPORTED, "graph input '%s' is an initializer of %s; 4-bit graph inputs are "
                                "not supported", vi->name, name_4bit(&g->values[id]));
            if (g->values[id].flags & RLX_VALUE_INITIALIZER) RLX_TRY(check_init_decl(g, vi, id));
            if (c->overridable && !g->parent && (g->values[id].flags & RLX_VALUE_INITIALIZER)) {
                RLX_TRY(RLX_GROW(g->overridable, g->cap_overridable, g->n_overridable + 1));
                RLX_TRY(RLX_GROW(g->overridable_decl, g->cap_overridable_decl, g->n_overridable + 1));
                char what[300];
                snprintf(what, sizeof what, "graph input '%s'", vi->name);
                decl_type d;
                rlx_status dst = decl_type_read(g, vi->type, what, &d);
                if (dst == RLX_ERR_OUT_OF_MEMORY) return dst;
                if (dst) { /* a type rlx does not read: the initializer's shape (loads as before) */
                    rlx_clear_error();
                    d.dtype = RLX_DTYPE_UNDEFINED;
                    d.rank = -1;
                }
                const rlx_value *v = &g->values[id];
                rlx_decl_shape *ds = &g->overridable_decl[g->n_overridable];
                /* what a fed value may have: the declared shape (it agrees
                 * with the initializer's: check_init_decl); none declared
                 * (a type without a shape field): any rank, as
                 * onnxruntime takes it (rank -1); a type rlx does not read:
                 * the initializer's shape */
                bool decl = !dst;
                ds->rank = decl ? d.rank : v->rank;
                for (int k = 0; k < RLX_MAX_RANK; k++) {
                    ds->dims[k] = decl && k < d.rank ? d.dims[k] : decl ? 0 : v->dims[k];
                    ds->syms[k] = decl && k < d.rank ? d.syms[k] : -1;
                }
                g->overridable[g->n_overridable++] = id;
            }
            continue;
        }
        RLX_TRY(import_input(g, vi));
    }

    /* 3. node outputs, declared before any node is added */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np) return rlx_fail(RLX_ERR_INVALID_MODEL, "node #%zu is empty", i);
        if (!np->op_type || !*np->op_type)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s has no op_type", node_label(np, i, label, sizeof label));
        if (np->n_output > MAX_NODE_IO || (np->n_output && !np->output))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: malformed outputs", node_label(np, i, label, sizeof label));
        for (size_t k = 0; k < np->n_output; k++) {
            const char *nm = np->output[k];
            if (!nm || !*nm) continue; /* omitted optional output */
            int existing = rlx_graph_find(g, nm);
            if (existing >= 0) {
                const rlx_value *v = &g->values[existing];
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output '%s' is already defined (%s)",
                                node_label(np, i, label, sizeof label), nm,
                                (v->flags & RLX_VALUE_INPUT)         ? "a graph input"
                                : (v->flags & RLX_VALUE_INITIALIZER) ? "an initializer"
                                                                     : "by another node");
            }
            int id;
            RLX_TRY(rlx_graph_add_value(g, nm, &id));
        }
    }

    /* 4. graph outputs (which may be outer values in a subgraph), then
     * value_info: declared types for values that have none yet */
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi || !vi->name || !*vi->name) return rlx_fail(RLX_ERR_INVALID_MODEL, "graph output #%zu has no name", i);
        char what[300];
        snprintf(what, sizeof what, "graph output '%s'", vi->name);
        RLX_TRY(rlx_onnx_seq_check_output(gp, vi));
        decl_type d;
        RLX_TRY(decl_type_read(g, vi->type, what, &d));
        int id;
        RLX_TRY(resolve_name(g, vi->name, &id));
        if (id < 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s is not defined by any node, input or initializer", what);
        RLX_TRY(RLX_GROW(g->outputs, g->cap_outputs, g->n_outputs + 1));
        RLX_TRY(RLX_GROW(g->out_decl, g->cap_out_decl, g->n_outputs + 1));
        g->out_decl[g->n_outputs].rank = d.rank;
        memcpy(g->out_decl[g->n_outputs].dims, d.dims, sizeof d.dims);
        memcpy(g->out_decl[g->n_outputs].syms, d.syms, sizeof d.syms);
        g->n_out_decl = g->n_outputs + 1;
        g->outputs[g->n_outputs++] = id;
        rlx_value *v = &g->values[id];
        v->flags |= RLX_VALUE_OUTPUT;
        if (v->dtype == RLX_DTYPE_UNDEFINED && !v->konst) decl_type_apply(&d, v);
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi || !vi->name) continue;
        int id = rlx_graph_find(g, vi->name);
        if (id < 0 || g->values[id].konst || g->values[id].dtype != RLX_DTYPE_UNDEFINED) continue;
        decl_type d;
        char what[300];
        snprintf(what, sizeof what, "value_info '%s'", vi->name);
        /* value_info is a hint: a type rlx cannot hold is left to inference */
        if (decl_type_read(g, vi->type, what, &d) == RLX_OK) decl_type_apply(&d, &g->values[id]);
    }

    /* 5. Constant nodes first (so that subgraphs see their types), then the
     * rest (contrib ops once what they read is defined: import_nodes);
     * ai.onnx.preview.training nodes last, expanded into ordinary nodes
     * (import/onnx_training.h) */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (is_default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0) RLX_TRY(import_node(c, g, np, i));
    }
    RLX_TRY(check_4bit_uses(gp, g));
    RLX_TRY(import_nodes(c, gp, g));
    RLX_TRY(rlx_onnx_expand_training_ops(g, gp));
    rlx_clear_error(); /* value_info hints may have left a message */
    return RLX_OK;
}

static rlx_status seq_import_node(void *ctx, rlx_graph *g, const Onnx__NodeProto *np) {
    return import_node(ctx, g, np, 0);
}

static rlx_status import_graph(const onnx_ctx *c, const Onnx__GraphProto *gp, rlx_graph *parent, rlx_graph **out) {
    *out = NULL;
    rlx_graph *g;
    RLX_TRY(rlx_graph_create(c->opset, &g));
    g->parent = parent;
    /* each graph has its own sequences, inside those of the enclosing one */
    onnx_ctx sub = *c;
    sub.fn_nodes = NULL, sub.fn_opsets = NULL, sub.n_fn_nodes = 0;
    const rlx_onnx_importer imp = { &sub, seq_import_node, resolve_name, c->base_dir };
    rlx_status st = rlx_onnx_seq_scope_create(c->seqs, &imp, &sub.seqs);
    /* calls of model-local functions expanded (expand_calls): a shallow
     * copy of the graph holds the new node list */
    Onnx__GraphProto expanded_gp;
    if (!st && c->mp && c->mp->n_functions && c->fa && gp->node) {
        fn_nodes nodes = { 0 };
        if (!c->fa->taken_read) { /* the "#k/" names of the model (fa_next_call) */
            st = fa_note_graph(c->fa, c->mp->graph, 0);
            if (c->fa->n_taken) qsort(c->fa->taken, c->fa->n_taken, sizeof *c->fa->taken, cmp_size);
            c->fa->taken_read = true;
        }
        fn_expand e = { c->mp, c->fa, NULL, NULL, NULL };
        if (!st) st = expand_calls(&e, gp->node, NULL, gp->n_node, &nodes, 0);
        expanded_gp = *gp;
        expanded_gp.node = nodes.v, expanded_gp.n_node = nodes.n;
        gp = &expanded_gp;
        sub.fn_nodes = nodes.v, sub.fn_opsets = nodes.opset, sub.n_fn_nodes = nodes.n;
    }
    if (!st) st = import_graph_body(&sub, gp, g);
    if (!st) st = rlx_onnx_seq_finish(sub.seqs, g);
    rlx_onnx_seq_scope_destroy(sub.seqs);
    if (st) {
        rlx_graph_destroy(g);
        if (parent && gp->name && *gp->name) rlx_fail_prefix(st, "subgraph '%s': ", gp->name);
        return st;
    }
    *out = g;
    return RLX_OK;
}

rlx_status rlx_onnx_graph_from_proto(const Onnx__GraphProto *gp, int64_t opset, const char *base_dir,
                                     rlx_graph *parent, rlx_graph **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "graph output pointer is NULL");
    *out = NULL;
    if (!gp) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "graph proto is NULL");
    onnx_ctx c = { base_dir, opset, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, 0 };
    return import_graph(&c, gp, parent, out);
}

/* ------------------------------------------------------------ models */

/* True when the model imports com.microsoft and no other domain (not even
 * the default one) and its nodes are all of that domain: onnxruntime runs
 * such a model, whose contrib ops rlx expands into default-domain nodes at
 * RLX_CONTRIB_OPSET. */
static bool contrib_only(const Onnx__ModelProto *mp) {
    if (!mp->n_opset_import || !mp->opset_import || !mp->graph) return false;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = mp->opset_import[i];
        if (!os || !os->domain || strcmp(os->domain, "com.microsoft") != 0) return false;
    }
    const Onnx__GraphProto *gp = mp->graph;
    for (size_t i = 0; i < gp->n_node; i++)
        if (!gp->node || !gp->node[i] || !gp->node[i]->domain || strcmp(gp->node[i]->domain, "com.microsoft") != 0)
            return false;
    return true;
}

/* The default-domain opset a model imports. */
static rlx_status model_opset(const Onnx__ModelProto *mp, int64_t *out) {
    bool have = false;
    int64_t opset = 0;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = mp->opset_import ? mp->opset_import[i] : NULL;
        if (!os || !is_default_domain(os->domain)) continue;
        int64_t v = os->has_version ? os->version : 0;
        if (have && v != opset)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "opset_import lists the default domain twice (opsets %lld and %lld)",
                            (long long)opset, (long long)v);
        opset = v;
        have = true;
    }
    if (!have && rlx_onnx_training_only(mp)) { /* only ai.onnx.preview.training ops (import/onnx_training.h) */
        opset = RLX_ONNX_TRAINING_OPSET;
        have = true;
    }
    if (!have && contrib_only(mp)) { /* only com.microsoft ops, which expand into default-domain ones */
        opset = RLX_CONTRIB_OPSET;
        have = true;
    }
    if (!have) {
        /* IR versions 1 and 2 had no opset_import: such models use opset 1 */
        if (mp->has_ir_version && mp->ir_version >= 1 && mp->ir_version < 3)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "the model has IR version %lld and no opset_import, which means opset 1 of the default "
                            "ONNX domain; rlx supports opsets %d to %d",
                            (long long)mp->ir_version, RLX_OPSET_MIN, RLX_OPSET_MAX);
        /* Models of other domains only (ai.onnx.ml, training): say which. */
        char domains[256] = "";
        size_t o = 0;
        for (size_t i = 0; i < mp->n_opset_import && o < sizeof domains; i++) {
            const Onnx__OperatorSetIdProto *os = mp->opset_import ? mp->opset_import[i] : NULL;
            if (os && os->domain && *os->domain)
                o += (size_t)snprintf(domains + o, sizeof domains - o, "%s%s-%lld", o ? ", " : "", os->domain,
                                      (long long)os->version);
        }
        /* com.microsoft alone, but a node of another domain (contrib_only) */
        const Onnx__GraphProto *gp = mp->graph;
        bool ms_only = o && mp->n_opset_import == 1 && strncmp(domains, "com.microsoft-", 14) == 0;
        for (size_t i = 0; ms_only && gp && gp->node && i < gp->n_node; i++) {
            const Onnx__NodeProto *np = gp->node[i];
            if (np && np->op_type && (!np->domain || strcmp(np->domain, "com.microsoft") != 0))
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "node '%s' (%s) is of %s%s%s, which the model does not import (its opset_import lists "
                                "only %s)",
                                np->name ? np->name : "", np->op_type,
                                is_default_domain(np->domain) ? "the default ONNX domain" : "domain '",
                                is_default_domain(np->domain) ? "" : np->domain,
                                is_default_domain(np->domain) ? "" : "'", domains);
        }
        if (o)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "the model uses only the operator domains %s, which rlx does not support (it implements "
                            "the default ONNX domain)", domains);
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "the model imports no opset of the default ONNX domain (opset_import has no entry for "
                        "domain \"\" or \"ai.onnx\")");
    }
    if (opset < RLX_OPSET_MIN || opset > RLX_OPSET_MAX)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "opset %lld of the default ONNX domain is not supported (rlx supports %d to %d)",
                        (long long)opset, RLX_OPSET_MIN, RLX_OPSET_MAX);
    *out = opset;
    return RLX_OK;
}

/* ------------------------------------------------------------ split */

/* One field of a serialized message at p (< end): its number, wire type,
 * the payload's start and the field's end. false when malformed or a group
 * (the full parse then reports it). */
static bool wire_field(const uint8_t *p, const uint8_t *end, uint64_t *field, int *wt, const uint8_t **payload,
                       const uint8_t **next) {
    uint64_t key, v;
    if (!read_varint(&p, end, &key)) return false;
    *field = key >> 3;
    *wt = (int)(key & 7);
    switch (*wt) {
    case 0:
        *payload = p;
        if (!read_varint(&p, end, &v)) return false;
        break;
    case 1: case 5: {
        size_t n = *wt == 1 ? 8 : 4;
        if ((size_t)(end - p) < n) return false;
        *payload = p;
        p += n;
        break;
    }
    case 2:
        if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
        *payload = p;
        p += v;
        break;
    default: return false;
    }
    *next = p;
    return true;
}

static size_t put_varint(uint8_t *o, uint64_t v) {
    size_t n = 0;
    do {
        o[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* A model split for loading: the ModelProto without the initializers of its
 * graph (small: parsed whole by protobuf-c), and where those initializers
 * lie in the original bytes, in their order. */
typedef struct model_split {
    uint8_t *skeleton;
    size_t skeleton_size;
    uint64_t *off;
    size_t *len;
    size_t n;
} model_split;

static void split_free(model_split *sp) {
    free(sp->skeleton);
    free(sp->off);
    free(sp->len);
    memset(sp, 0, sizeof *sp);
}

/* Splits data (a serialized ModelProto) as above. false (nothing split)
 * when the bytes are malformed, hold the graph field more than once, or
 * the top graph has no initializers: the caller parses the whole model. */
static bool split_model(const uint8_t *data, size_t size, model_split *sp) {
    memset(sp, 0, sizeof *sp);
    const uint8_t *end = data + size, *p = data, *gfield = NULL, *gpay = NULL, *gend = NULL;
    uint64_t field;
    int wt;
    const uint8_t *pay, *next;
    for (; p < end; p = next) {
        if (!wire_field(p, end, &field, &wt, &pay, &next)) return false;
        if (field == 7) { /* ModelProto.graph */
            if (wt != 2 || gfield) return false;
            gfield = p, gpay = pay, gend = next;
        }
    }
    if (!gfield) return false;
    size_t n = 0, cap = 0, drop = 0;
    for (p = gpay; p < gend; p = next) {
        if (!wire_field(p, gend, &field, &wt, &pay, &next)) goto no;
        if (field != 5) continue; /* GraphProto.initializer */
        if (wt != 2) goto no;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            uint64_t *no_ = realloc(sp->off, nc * sizeof *no_);
            if (no_) sp->off = no_;
            size_t *nl = realloc(sp->len, nc * sizeof *nl);
            if (nl) sp->len = nl;
            if (!no_ || !nl) goto no;
            cap = nc;
        }
        sp->off[n] = (uint64_t)(pay - data);
        sp->len[n] = (size_t)(next - pay);
        n++;
        drop += (size_t)(next - p);
    }
    if (!n) goto no;
    size_t glen = (size_t)(gend - gpay) - drop, head = (size_t)(gfield - data), tail = (size_t)(end - gend);
    sp->skeleton = malloc(head + 11 + glen + tail + 1);
    if (!sp->skeleton) goto no;
    uint8_t *o = sp->skeleton;
    memcpy(o, data, head);
    o += head;
    *o++ = (7 << 3) | 2;
    o += put_varint(o, glen);
    const uint8_t *keep = gpay;
    for (size_t i = 0; i < n; i++) {
        /* the field starts before its payload: tag and length, found again */
        const uint8_t *f = keep;
        for (p = keep; p < data + sp->off[i]; p = next) {
            f = p;
            if (!wire_field(p, gend, &field, &wt, &pay, &next)) goto no;
        }
        memcpy(o, keep, (size_t)(f - keep));
        o += f - keep;
        keep = data + sp->off[i] + sp->len[i];
    }
    memcpy(o, keep, (size_t)(gend - keep));
    o += gend - keep;
    memcpy(o, gend, tail);
    o += tail;
    sp->skeleton_size = (size_t)(o - sp->skeleton);
    sp->n = n;
    return true;
no:
    split_free(sp);
    return false;
}

static void release_map(void *ud, uint64_t off, size_t len) { rlx_file_map_release(ud, off, len); }

/* Parses and imports a model; `label` (the path) starts every message.
 * map: the mapped file of data (its pages are released as initializers are
 * converted), or NULL. cfg: the limits (NULL: none). */
static rlx_status load_model(const void *data, size_t size, rlx_file_map *map, const char *base_dir,
                             const rlx_config *cfg, const char *label, rlx_model **out) {
    static const uint8_t empty[1];
    if (!data) data = empty;
    /* an empty file parses as an empty ModelProto; say what it is */
    if (size == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s is empty (0 bytes), not an ONNX model", label);
    wire_fault wf;
    if (wire_faulty(data, size, &onnx__model_proto__descriptor, &wf))
        return other_onnx_kind(data, size, true) ? tensor_not_model(label) : wire_fail(&wf, label, "ONNX model");
    /* Weights are read once: the model is parsed without the initializers
     * of its graph, which are then unpacked one by one straight into their
     * tensors (protobuf-c's copy of raw_data becomes the tensor), each
     * one's bytes released after it (a mapped file's pages). Before, the
     * file, protobuf-c's copy and the tensors existed at once (3x). */
    model_split sp;
    bool split = split_model(data, size, &sp);
    Onnx__ModelProto *mp = split ? onnx__model_proto__unpack(NULL, sp.skeleton_size, sp.skeleton)
                                 : onnx__model_proto__unpack(NULL, size, data);
    if (!mp) {
        split_free(&sp);
        if (other_onnx_kind(data, size, true)) return tensor_not_model(label);
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s is not a valid ONNX model: protobuf parse failed", label);
    }
    uint64_t external_sum = 0;
    tensor_load ld = { cfg, &external_sum, false, map ? label : NULL, NULL };
    init_ranges r = { data, sp.off, sp.len, sp.n, map ? release_map : NULL, map };
    rlx_graph *g = NULL;
    fn_arena fa = { 0 }; /* model-local functions' expansions (expand_calls) */
    onnx_ctx c = { base_dir, 0, NULL, &ld, split ? &r : NULL, mp, &fa, !(mp->has_ir_version && mp->ir_version < 4),
                   NULL, NULL, 0 };
    rlx_status st = model_opset(mp, &c.opset);
    if (!st) st = check_function_ids(mp);
    if (!st) st = check_model_attr_protos(mp);
    if (!st && !mp->graph) st = rlx_fail(RLX_ERR_INVALID_MODEL, "the model has no graph");
    if (!st) st = import_graph(&c, mp->graph, NULL, &g);
    fa_free(&fa);
    onnx__model_proto__free_unpacked(mp, NULL);
    split_free(&sp);
    if (!st) st = rlx_model_from_graph(g, out); /* takes g, also on error */
    if (st) return rlx_fail_prefix(st, "%s: ", label);
    return RLX_OK;
}

rlx_status rlx_model_load_onnx(const char *path, rlx_model **out_model) {
    return rlx_model_load_onnx_with_options(path, NULL, out_model);
}

rlx_status rlx_model_load_onnx_with_options(const char *path, const rlx_options *options, rlx_model **out_model) {
    if (!out_model) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_model is NULL");
    *out_model = NULL;
    if (!path || !*path) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model path is empty");
    rlx_config *cfg;
    rlx_status st = rlx_config_resolve_limits(options, &cfg); /* the limits are all loading uses */
    if (st) return rlx_fail_prefix(st, "%s: ", path);
    uint64_t fsize;
    st = rlx_file_size(path, &fsize);
    if (!st) st = rlx_limit_check(cfg, "limits.max_model_bytes", fsize, "the model file");
    rlx_file_map map;
    if (!st) st = rlx_file_map_open(path, &map);
    if (st) {
        rlx_config_destroy(cfg);
        return rlx_fail_prefix(st, "%s: ", path);
    }
    char *dir = rlx_path_dirname(path);
    if (!dir) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    else st = load_model(map.data, map.size, &map, dir, cfg, path, out_model);
    free(dir);
    rlx_file_map_close(&map);
    rlx_config_destroy(cfg);
    return st;
}

rlx_status rlx_model_load_onnx_memory(const void *data, size_t size, const char *base_dir, rlx_model **out_model) {
    if (!out_model) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_model is NULL");
    *out_model = NULL;
    if (!data && size) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model data is NULL");
    /* "" is the current folder, as a path relative to it (joined as it
     * was, "" + "/" + location read from the root of the file system) */
    if (base_dir && !*base_dir) base_dir = ".";
    rlx_config *cfg;
    RLX_TRY(rlx_config_resolve_limits(NULL, &cfg));
    rlx_status st = load_model(data, size, NULL, base_dir, cfg, "<memory>", out_model);
    rlx_config_destroy(cfg);
    return st;
}
