/* rlx — a small ML compiler and runtime.
 *
 * Public C API: status codes, tensors, models (ONNX import or built through
 * the graph builder below), devices and sessions.
 *
 * Conventions
 *  - Functions that can fail return rlx_status (RLX_OK == 0). On failure,
 *    rlx_last_error() returns a message with context (file, node name, op
 *    type); the message is per thread and valid until the next failing call.
 *  - Out-parameters come last and are cleared on entry (set to NULL / 0), so
 *    on error they hold nothing that needs freeing.
 *  - Whoever creates an object destroys it: rlx_X_create / rlx_X_destroy.
 *    Pointers documented as "borrowed" stay owned by the object they come
 *    from and live as long as it does.
 *  - Op semantics follow the ONNX operator set version the model imports
 *    (default domain, opsets 7 and later); docs/ops.md lists what is there.
 *
 * Licensed under the Apache License, Version 2.0. */
#ifndef RLX_RLX_H
#define RLX_RLX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ status */

typedef enum rlx_status {
    RLX_OK = 0,
    RLX_ERR_INVALID_ARGUMENT = 1, /* a caller passed something wrong */
    RLX_ERR_INVALID_MODEL = 2,    /* the model file or graph is malformed */
    RLX_ERR_UNSUPPORTED = 3,      /* valid, but rlx does not implement it */
    RLX_ERR_IO = 4,               /* a file could not be read or written */
    RLX_ERR_OUT_OF_MEMORY = 5,    /* host or device allocation failed */
    RLX_ERR_NO_ADAPTER = 6,       /* no GPU adapter matched the request */
    RLX_ERR_DEVICE = 7,           /* the GPU API reported an error */
    RLX_ERR_DEVICE_LOST = 8,      /* the GPU device was lost */
    RLX_ERR_INTERNAL = 9          /* a bug in rlx; please report it */
} rlx_status;

/* Message of the last failure on this thread ("" if none). Borrowed. */
const char *rlx_last_error(void);

/* Short stable name of a status ("RLX_ERR_UNSUPPORTED"). Borrowed, static. */
const char *rlx_status_name(rlx_status status);

/* ------------------------------------------------------------------- dtype */

/* Element types. The numbers are those of ONNX TensorProto.DataType. */
typedef enum rlx_dtype {
    RLX_DTYPE_UNDEFINED = 0,
    RLX_DTYPE_F32 = 1,
    RLX_DTYPE_U8 = 2,
    RLX_DTYPE_I8 = 3,
    RLX_DTYPE_U16 = 4,
    RLX_DTYPE_I16 = 5,
    RLX_DTYPE_I32 = 6,
    RLX_DTYPE_I64 = 7,
    RLX_DTYPE_STRING = 8, /* recognised, not supported */
    RLX_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
    RLX_DTYPE_F16 = 10,   /* IEEE 754 binary16, stored as uint16_t bits */
    RLX_DTYPE_F64 = 11,
    RLX_DTYPE_U32 = 12,
    RLX_DTYPE_U64 = 13,
    RLX_DTYPE_BF16 = 16   /* bfloat16, stored as uint16_t bits */
} rlx_dtype;

/* Bytes per element (0 for UNDEFINED, STRING and unknown values). */
size_t rlx_dtype_size(rlx_dtype dtype);

/* Lower-case name ("f32", "i64", "bool"); "?" for unknown values. */
const char *rlx_dtype_name(rlx_dtype dtype);

/* ------------------------------------------------------------------ tensor */

#define RLX_MAX_RANK 8

/* A dense row-major (C order) tensor that owns its data.
 * dims[0..rank) are the extents; rank 0 is a scalar with one element. */
typedef struct rlx_tensor {
    rlx_dtype dtype;
    int rank;
    int64_t dims[RLX_MAX_RANK];
    void *data;     /* numel * dtype size bytes, 64-byte aligned */
    size_t nbytes;
} rlx_tensor;

/* Creates a zero-filled tensor.
 * dims: rank extents, each >= 0; rank in [0, RLX_MAX_RANK].
 * errors: RLX_ERR_INVALID_ARGUMENT (bad dtype, rank or dim; size overflows),
 *         RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_tensor_create(rlx_dtype dtype, const int64_t *dims, int rank,
                             rlx_tensor **out_tensor);

/* Frees a tensor and its data. NULL is allowed. */
void rlx_tensor_destroy(rlx_tensor *tensor);

/* Number of elements (product of dims; 1 for rank 0). */
size_t rlx_tensor_numel(const rlx_tensor *tensor);

/* Reads a NumPy .npy file (format 1.0-3.0, C order, little-endian, dtypes
 * f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1). The data size the header claims is
 * checked against the file before anything is allocated for it.
 * errors: RLX_ERR_IO (missing, unreadable, not a regular file),
 *         RLX_ERR_INVALID_ARGUMENT (not an .npy file, Fortran order,
 *         unsupported dtype, bad shape, truncated data), RLX_ERR_UNSUPPORTED
 *         (rank above RLX_MAX_RANK); the message names the file. */
rlx_status rlx_tensor_load_npy(const char *path, rlx_tensor **out_tensor);

/* Writes a tensor as a NumPy .npy file (format 1.0).
 * errors: RLX_ERR_IO (with the system's reason), RLX_ERR_UNSUPPORTED (dtype
 *         without an .npy code). */
rlx_status rlx_tensor_save_npy(const rlx_tensor *tensor, const char *path);

/* ------------------------------------------------------------------- model */

/* A model: a graph of ONNX operators with its initializers, as imported.
 * Immutable once sessions are created from it; sessions keep their own copy,
 * so a model may be destroyed while its sessions live. */
typedef struct rlx_model rlx_model;

/* Imports an ONNX model file (ModelProto, protobuf binary). Initializers in
 * external data files are read relative to the model's folder, and only from
 * inside it. Shapes are inferred and the graph is verified.
 * errors: RLX_ERR_IO (missing or unreadable file), RLX_ERR_INVALID_MODEL
 *         (corrupt protobuf, bad graph, initializer shorter than its shape,
 *         dims that overflow), RLX_ERR_UNSUPPORTED (unknown op or opset,
 *         unsupported dtype); the message names the node, op and opset. */
rlx_status rlx_model_load_onnx(const char *path, rlx_model **out_model);

/* As rlx_model_load_onnx, from bytes in memory. base_dir is where external
 * data is looked up (NULL: external data is refused with
 * RLX_ERR_INVALID_ARGUMENT). Messages start with "<memory>". */
rlx_status rlx_model_load_onnx_memory(const void *data, size_t size,
                                      const char *base_dir,
                                      rlx_model **out_model);

void rlx_model_destroy(rlx_model *model);

/* Description of one graph input or output. A dim is either static
 * (dims[i] >= 0, dim_names[i] == NULL) or symbolic (dims[i] == -1 and
 * dim_names[i] the symbol such as "batch", or NULL when the model leaves it
 * unnamed). Strings are borrowed from the model or session. */
typedef struct rlx_value_info {
    const char *name;
    rlx_dtype dtype;
    int rank; /* -1: unknown rank */
    int64_t dims[RLX_MAX_RANK];
    const char *dim_names[RLX_MAX_RANK];
} rlx_value_info;

size_t rlx_model_num_inputs(const rlx_model *model);
size_t rlx_model_num_outputs(const rlx_model *model);
/* index < num_inputs / num_outputs, else RLX_ERR_INVALID_ARGUMENT. */
rlx_status rlx_model_input_info(const rlx_model *model, size_t index, rlx_value_info *out_info);
rlx_status rlx_model_output_info(const rlx_model *model, size_t index, rlx_value_info *out_info);

/* ---------------------------------------------------------- graph builder */

/* Builds a model by hand, node by node, with ONNX operator semantics.
 *
 *   rlx_model *m; rlx_model_create(13, &m);
 *   rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, (int64_t[]){1,3,-1,-1},
 *                       (const char*[]){0,0,"h","w"});
 *   rlx_model_add_initializer(m, "w", w_tensor);   // copies the tensor
 *   rlx_attr a[] = { RLX_ATTR_INTS("pads", 4, pads) };
 *   rlx_model_add_node(m, "Conv", "conv1", 2, (const char*[]){"x","w"},
 *                      1, (const char*[]){"y"}, 1, a);
 *   rlx_model_add_output(m, "y");
 *   rlx_model_finish(m);                           // infer shapes, verify
 */
typedef enum rlx_attr_type {
    RLX_ATTR_UNDEFINED = 0,
    RLX_ATTR_FLOAT = 1,
    RLX_ATTR_INT = 2,
    RLX_ATTR_STRING = 3,
    RLX_ATTR_TENSOR = 4,
    RLX_ATTR_GRAPH = 5,
    RLX_ATTR_FLOATS = 6,
    RLX_ATTR_INTS = 7,
    RLX_ATTR_STRINGS = 8
} rlx_attr_type; /* numbers of ONNX AttributeProto.AttributeType */

/* An attribute as passed to rlx_model_add_node. Arrays are copied. */
typedef struct rlx_attr {
    const char *name;
    rlx_attr_type type;
    float f;                 /* FLOAT */
    int64_t i;               /* INT */
    const char *s;           /* STRING (NUL-terminated) */
    const rlx_tensor *t;     /* TENSOR */
    size_t n;                /* FLOATS, INTS, STRINGS: element count */
    const float *floats;
    const int64_t *ints;
    const char *const *strings;
} rlx_attr;

#define RLX_ATTR_F(nm, v)       ((rlx_attr){ .name = (nm), .type = RLX_ATTR_FLOAT, .f = (v) })
#define RLX_ATTR_I(nm, v)       ((rlx_attr){ .name = (nm), .type = RLX_ATTR_INT, .i = (v) })
#define RLX_ATTR_S(nm, v)       ((rlx_attr){ .name = (nm), .type = RLX_ATTR_STRING, .s = (v) })
#define RLX_ATTR_T(nm, v)       ((rlx_attr){ .name = (nm), .type = RLX_ATTR_TENSOR, .t = (v) })
#define RLX_ATTR_FS(nm, cnt, v) ((rlx_attr){ .name = (nm), .type = RLX_ATTR_FLOATS, .n = (cnt), .floats = (v) })
#define RLX_ATTR_IS(nm, cnt, v) ((rlx_attr){ .name = (nm), .type = RLX_ATTR_INTS, .n = (cnt), .ints = (v) })

/* Creates an empty model that imports the default ONNX domain at `opset`.
 * errors: RLX_ERR_UNSUPPORTED (opset outside what rlx implements). */
rlx_status rlx_model_create(int64_t opset, rlx_model **out_model);

/* Declares a graph input. dims[i] == -1 makes dim i symbolic, named by
 * dim_names[i] (dim_names may be NULL; equal names bind to one value). */
rlx_status rlx_model_add_input(rlx_model *model, const char *name, rlx_dtype dtype,
                               int rank, const int64_t *dims,
                               const char *const *dim_names);

/* Adds a constant (ONNX initializer); the tensor is copied. */
rlx_status rlx_model_add_initializer(rlx_model *model, const char *name,
                                     const rlx_tensor *value);

/* Appends a node of op `op_type` (default ONNX domain). Input names must be
 * defined before (graph inputs, initializers, earlier outputs); "" marks an
 * omitted optional input. node_name may be NULL (one is generated).
 * errors: RLX_ERR_UNSUPPORTED (unknown op at the model's opset),
 *         RLX_ERR_INVALID_MODEL (undefined input, duplicate output, bad arity
 *         or attribute) — the message names the node. */
rlx_status rlx_model_add_node(rlx_model *model, const char *op_type, const char *node_name,
                              size_t n_inputs, const char *const *inputs,
                              size_t n_outputs, const char *const *outputs,
                              size_t n_attrs, const rlx_attr *attrs);

/* Marks a defined value as a graph output. */
rlx_status rlx_model_add_output(rlx_model *model, const char *name);

/* Infers shapes and verifies the graph; required before creating sessions. */
rlx_status rlx_model_finish(rlx_model *model);

/* ----------------------------------------------------------------- devices */

typedef enum rlx_device_kind {
    RLX_DEVICE_CPU = 0,
    RLX_DEVICE_GPU = 1
} rlx_device_kind;

/* One GPU adapter as the WebGPU implementation reports it. */
typedef struct rlx_adapter_info {
    char name[256];
    char driver[256];
    char backend[16];      /* "vulkan", "metal", "d3d12", "gl", ... */
    char type[16];         /* "discrete", "integrated", "cpu", "unknown" */
    uint32_t vendor_id, device_id;
    uint64_t max_buffer_size;                   /* bytes */
    uint64_t max_storage_buffer_binding_size;   /* bytes */
    uint32_t max_compute_workgroups_per_dimension;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroup_storage_size; /* bytes */
    uint32_t max_storage_buffers_per_shader_stage;
    bool shader_f16, subgroups, timestamp_query, cooperative_matrix;
} rlx_adapter_info;

/* Lists GPU adapters, in the order `gpu:N` counts them.
 * out_adapters: caller frees with free(). Zero adapters is not an error.
 * errors: RLX_ERR_DEVICE (the WebGPU implementation failed to start). */
rlx_status rlx_adapters_list(rlx_adapter_info **out_adapters, size_t *out_count);

/* ----------------------------------------------------------------- session */

typedef struct rlx_session rlx_session;

typedef struct rlx_session_options {
    /* "cpu", "gpu" (the high-performance adapter), or "gpu:N" (the N-th of
     * rlx_adapters_list). NULL means "cpu". */
    const char *device;
    /* Direct convolution instead of im2col + GEMM on the GPU (testing). */
    bool gpu_conv_direct;
    /* f16 mode on the GPU (also RLX_GPU_F16=1): the f32 weights of GEMMs
     * and convolutions are stored as IEEE binary16 and products are summed
     * in f32; activations stay f32. Faster where memory bandwidth or tensor
     * cores (wgpu-native's cooperative-matrix feature) decide, less exact
     * (see src/backend/webgpu/README.md for measured errors). Plain f32 is
     * the default. */
    bool gpu_f16;
} rlx_session_options;

/* Creates a session that runs `model` on a device. The session keeps its own
 * copy of the graph and weights. Plans are compiled per input-shape
 * signature, on first use.
 * errors: RLX_ERR_INVALID_ARGUMENT (bad device string), RLX_ERR_NO_ADAPTER
 *         (no GPU; the message says what was tried), RLX_ERR_DEVICE. */
rlx_status rlx_session_create(const rlx_model *model, const rlx_session_options *options,
                              rlx_session **out_session);

void rlx_session_destroy(rlx_session *session);

/* Runs one forward pass.
 * inputs: n_inputs tensors matched to the graph inputs by input_names[i];
 *         each must have the declared dtype and a shape that fits the
 *         declared dims (symbolic dims bind consistently).
 * outputs: on success *out_outputs holds rlx_session_num_outputs() tensors in
 *          graph-output order, owned by the caller (free each with
 *          rlx_tensor_destroy and the array with free()).
 * threads: a session may be shared by threads; its runs take turns (one
 *          at a time, each waiting for the one in progress). Separate
 *          sessions, of one model or several, run in parallel.
 * errors: RLX_ERR_INVALID_ARGUMENT (unknown or missing input, wrong dtype or
 *         shape), RLX_ERR_UNSUPPORTED, RLX_ERR_DEVICE, RLX_ERR_DEVICE_LOST,
 *         RLX_ERR_OUT_OF_MEMORY; rlx_last_error() names the input or the
 *         step (node, op, kernel) that failed. */
rlx_status rlx_session_run(rlx_session *session, size_t n_inputs,
                           const char *const *input_names,
                           const rlx_tensor *const *inputs,
                           rlx_tensor ***out_outputs, size_t *out_n_outputs);

size_t rlx_session_num_outputs(const rlx_session *session);
/* Graph output name, borrowed from the session; NULL if out of range. */
const char *rlx_session_output_name(const rlx_session *session, size_t index);

/* Human-readable device of the session ("cpu", "NVIDIA H200 (vulkan,
 * discrete)"). Borrowed. */
const char *rlx_session_device_name(const rlx_session *session);
rlx_device_kind rlx_session_device_kind(const rlx_session *session);

/* Per-op-type dispatch report of the last compiled plan: how many nodes of
 * each op type ran natively on the session's device, fell back to the CPU,
 * or were folded/rewritten at compile time. Text, borrowed, valid until the
 * next run. Also printed to stderr after compiling when
 * RLX_DISPATCH_REPORT=1. */
const char *rlx_session_dispatch_report(rlx_session *session);

#ifdef __cplusplus
}
#endif
#endif /* RLX_RLX_H */
