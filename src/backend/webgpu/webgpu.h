/* Internal interface of the WebGPU backend (wgpu-native through webgpu.h).
 *
 * Pieces:
 *  - webgpu_device.c   instance, adapters (rlx_adapters_list), device,
 *                      error scopes, the pipeline cache
 *  - webgpu_backend.c  the backend vtable: supports / compile / run
 *  - webgpu_lower.c    helpers every lowering uses + the lowering table
 *  - lower_*.c         lowerings by op family: node -> dispatches
 *  - kernels/<name>.wgsl  the WGSL kernels (embedded, see wgsl_sources.h)
 *
 * A lowering turns one node (static shapes) into one or more dispatches of
 * WGSL kernels. A dispatch names its kernel, the override constants that
 * specialise it, its storage operands (graph values or the step's scratch
 * buffer, each a window of f32/i32/u32 elements), the words of its uniform
 * Params, and its workgroup grid. Lowerings never see GPU objects: compile
 * resolves operands to buffers and offsets, creates pipelines and bind
 * groups. See README.md in this folder for how to write one. */
#ifndef RLX_BACKEND_WEBGPU_WEBGPU_H
#define RLX_BACKEND_WEBGPU_WEBGPU_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "ir/graph.h"

/* ------------------------------------------------------------ limits */

/* What lowerings may rely on; read from the device at backend creation. */
typedef struct wg_caps {
    uint64_t max_binding;          /* bytes one storage binding may span: maxStorageBufferBindingSize,
                                      lowered by option gpu.max_binding_bytes when set */
    uint64_t max_buffer;           /* bytes: maxBufferSize */
    uint32_t max_groups_per_dim;   /* maxComputeWorkgroupsPerDimension (65,535 by the spec minimum) */
    uint32_t storage_align;        /* minStorageBufferOffsetAlignment (bytes) */
    uint32_t uniform_align;        /* minUniformBufferOffsetAlignment (bytes) */
    uint32_t max_storage_per_stage;/* maxStorageBuffersPerShaderStage */
    uint32_t max_wg_storage;       /* maxComputeWorkgroupStorageSize (bytes) */
    uint32_t max_wg_invocations;   /* maxComputeInvocationsPerWorkgroup */
    uint32_t max_wg_size_x, max_wg_size_y; /* maxComputeWorkgroupSizeX / Y */
    const struct rlx_config *cfg;  /* the session's options (base/options.h), borrowed */
    bool conv_direct;              /* session option gpu_conv_direct */
    bool shader_f16;               /* the device has shader-f16: kernels may be instantiated for WG_ELEM_F16 */
    bool f16;                      /* f16 mode (option gpu.f16): GEMM/conv weights stored as f16 */
    bool coop;                     /* cooperative-matrix GEMM available and enabled (f16 mode) */
    bool coop16;                   /* ... and its f16 instance (T = f16) passed too: f16 products use it */
    uint32_t coop_sg;              /* subgroup size the cooperative kernel assumes (option gpu.coop_sg, 32) */
    uint32_t coop_form;            /* index into wg_coop_forms (lower_gemm.h) that the self-test chose */
    bool dot4;                     /* WGSL dot4I8Packed compiles and passed its self-test (webgpu_probe.c):
                                      the integer GEMM uses it (qgemm_dp4), else the unpacked form (qgemm) */
} wg_caps;

/* ------------------------------------------------------------ dispatches */

/* Operand value id meaning "the step's scratch buffer" (see wg_scratch). */
#define WG_SCRATCH (-2)
/* Operand value id meaning "the run's status words" (see wg_bind_status). */
#define WG_STATUS (-3)
/* u32 words of the status buffer: 0 holds 0xffffffff - step of the first
 * step (in plan order) whose kernel found a run-time index out of range
 * (0: none; kernels raise it with atomicMax, so the earliest step wins),
 * 1 and 2 the offending index as an i64 (low, high words), 3 the extent of
 * the axis it indexes. Zeroed at the start of every GPU segment that binds
 * it, read back with that segment's outputs. kernels/index_read.wgsl
 * writes it. */
#define WG_STATUS_WORDS 4
/* Operand value id meaning "this step's host tables" (see wg_table). */
#define WG_TABLE (-4)

#define WG_MAX_BINDINGS 8   /* storage operands of one dispatch (bindings 1..8) */
#define WG_MAX_PARAMS 64    /* u32 words of one Params struct (256 bytes) */
#define WG_MAX_SPEC 24      /* override constants of one dispatch */
#define WG_WORKGROUP 64     /* @workgroup_size of every 1-D kernel */

/* A window of 4-byte elements of a graph value (arena or constant) or of
 * the scratch buffer: elements [elem_off, elem_off + elems). */
typedef struct wg_operand {
    int value;         /* value id, or WG_SCRATCH */
    uint64_t elem_off; /* first element the kernel may touch */
    uint64_t elems;    /* number of elements it may touch */
    int fmt;           /* WG_FMT_NATIVE, or WG_FMT_F16 (a constant f32 value uploaded as binary16:
                          elem_off and elems then count 4-byte words of the packed halves) */
    int esize;         /* bytes per element of elem_off and elems (and of the Params offset word): 0
                          means wg_operand_esize's rule (2 for an f16 value in a dispatch whose T is
                          f16, else 4); a lowering that reads f16 values as packed words sets 4 */
} wg_operand;

#define WG_FMT_NATIVE 0
#define WG_FMT_F16 1

/* Element type a kernel is instantiated for: the WGSL alias `T` (see
 * README.md, "Writing a kernel"). f16 needs the adapter's shader-f16
 * (wg_caps.shader_f16); the source then starts with `enable f16;`. */
typedef enum wg_elem { WG_ELEM_F32 = 0, WG_ELEM_F16, WG_ELEM_I32, WG_ELEM_U32, WG_ELEM_COUNT } wg_elem;

/* Kind of one Params word, as the lowering wrote it (wg_p_*, wg_bind) or
 * as the kernel's `//!params` declaration lays it out. i32 and u32 words
 * are one kind (the same bits); PAD is alignment padding. */
enum { WG_WORD_INT = 1, WG_WORD_F32, WG_WORD_PAD };

typedef struct wg_dispatch {
    const char *kernel; /* WGSL file stem, e.g. "unary", or the name of a generated kernel (static string) */
    const char *source; /* generated WGSL (wg_emit_source; owned by the wg_lower), or NULL */
    wg_elem elem;       /* the kernel's element type T (default: wg_kernel_elem; see wg_elem_of) */
    int n_spec;
    const char *spec_name[WG_MAX_SPEC]; /* WGSL `override` names (static strings) */
    double spec_val[WG_MAX_SPEC];
    int n_bind;
    wg_operand bind[WG_MAX_BINDINGS];   /* binding i + 1 */
    int off_slot[WG_MAX_BINDINGS];      /* Params word that receives binding i's element offset */
    uint32_t params[WG_MAX_PARAMS];
    unsigned char pkind[WG_MAX_PARAMS]; /* WG_WORD_* of each word written, and */
    const char *pname[WG_MAX_PARAMS];   /* its field's name (static or wg_keep; NULL: padding): checked
                                           against the kernel's declaration when its pipeline is fetched */
    int n_params;
    uint32_t groups[3]; /* workgroups in x, y, z */
    /* wg_bind_status was called: Params word tag_slot receives the step's
     * tag (0xffffffff - step) at compile time */
    bool reports;
    int tag_slot;
} wg_dispatch;

/* The lowering of one node. */
typedef struct wg_lower {
    const rlx_graph *g;
    const rlx_node *n;
    const wg_caps *caps;
    wg_dispatch *d; /* dispatches, in order */
    size_t n_d, cap_d;
    uint64_t scratch_elems; /* scratch this step needs (4-byte elements) */
    char why[192];          /* why the lowering declined (RLX_ERR_UNSUPPORTED) */
    bool broken;            /* an allocation or Params overflow happened */
    /* The node's fused activation (ir/ops/act.h) was applied by the
     * lowering's own kernels (the GEMM, conv and ConvTranspose lowerings
     * apply it in their epilogues and set it). When a lowering of a node
     * with an activation leaves this false, wg_lower_node appends the
     * shared epilogue: dispatches of y = act(y) in place over output 0
     * (wgsl_gen.h). So each activation is applied exactly once. */
    bool act_done;
    char **sources;         /* generated WGSL of wg_emit_source and names of wg_keep, owned */
    size_t n_sources, cap_sources;
    uint32_t *table;        /* words of wg_table, owned; uploaded once at compile */
    size_t n_table, cap_table;
    /* What the lowering chose that a user should know although the node
     * runs on the GPU (an f16-mode weight kept in f32: wg_f16_fits); one
     * or more phrases separated by "; ", empty when none. compile puts it
     * in the dispatch report, prefixed with the node. */
    char note[256];
} wg_lower;

typedef rlx_status (*wg_lower_fn)(wg_lower *L);

/* Lowering tables, one per family file (lower_<family>.c), indexed by op
 * id ([RLX_OP_Conv] = fn), NULL where the family has no lowering. */
extern const wg_lower_fn wg_lowerings_elementwise[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_nn[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_tensor[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_reduce[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_index[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_logic[RLX_OP_COUNT];
extern const wg_lower_fn wg_lowerings_qgemm[RLX_OP_COUNT];
/* Internal ops of domain "rlx" (lower_internal.c). */
extern const wg_lower_fn wg_lowerings_internal[RLX_OP_COUNT];

/* Lowers node n into L (initialised here; free with wg_lower_free).
 * Returns RLX_OK, RLX_ERR_UNSUPPORTED when no WGSL lowering applies (the
 * reason in L->why, rlx_last_error untouched), RLX_ERR_OUT_OF_MEMORY. */
rlx_status wg_lower_node(const rlx_graph *g, const rlx_node *n, const wg_caps *caps, wg_lower *L);
void wg_lower_free(wg_lower *L);

/* The lowering that wg_lower_node uses for op type `op` of `domain` ("" or
 * "ai.onnx"; RLX_INTERNAL_DOMAIN for the fusion passes' ops), or NULL when
 * there is none (such nodes always run on the CPU). Ignores
 * RLX_GPU_DISABLE. For reports (`rlx ops`, docs/ops.md). */
wg_lower_fn wg_find_lowering(const char *domain, const char *op);

/* ------------------------------------------------ helpers for lowerings */

/* Declines: records the reason, returns RLX_ERR_UNSUPPORTED. */
rlx_status wg_decline(wg_lower *L, const char *fmt, ...) RLX_PRINTF(2, 3);

/* Appends a dispatch of `kernel`. Never NULL (on OOM a dummy is returned
 * and L->broken set). */
wg_dispatch *wg_emit(wg_lower *L, const char *kernel);

/* Appends a dispatch of a kernel generated at compile time: `source` is
 * complete WGSL (entry point main, the binding and Params conventions of
 * embedded kernels) and is copied; `name` (a static string) names the
 * kernel in messages and traces. Pipelines are cached by the source text
 * (and override constants), so equal sources share one pipeline. Never
 * NULL (on OOM a dummy is returned and L->broken set). */
wg_dispatch *wg_emit_source(wg_lower *L, const char *name, const char *source);

/* Sets an override constant (name must be a static string). */
void wg_spec(wg_lower *L, wg_dispatch *d, const char *name, double value);

/* Binds a window of a value (or WG_SCRATCH) as the next storage binding,
 * and appends the Params word `name` (a u32 field of the kernel's
 * `//!params`, e.g. "x_off") that will hold its element offset inside the
 * binding window. Params usually start with one u32 per binding, in
 * binding order, before any wg_p_* word. `name` here and in every wg_bind_*
 * and wg_p_* call is a string literal, or a wg_keep copy. */
void wg_bind(wg_lower *L, wg_dispatch *d, const char *name, int value, uint64_t elem_off, uint64_t elems);
/* The whole value: wg_words(v) words (see the element layouts below); an
 * f16 value in a dispatch whose T is f16: numel halves (set d->elem
 * before binding). */
void wg_bind_value(wg_lower *L, wg_dispatch *d, const char *name, int value);
/* The whole value, its window rounded up to whole 16-byte vec4s, for
 * kernels that declare the operand array<vec4<...>>. Every value starts
 * 256-byte aligned (arena and constant buffers), so its Params offset word
 * is 0 and the rounding stays inside its allocation. */
void wg_bind_value4(wg_lower *L, wg_dispatch *d, const char *name, int value);
/* Value v whole (wg_bind_value) when present (v >= 0), else the first
 * element of value `stand_in`: an operand a kernel does not read must
 * still be bound. */
void wg_bind_or(wg_lower *L, wg_dispatch *d, const char *name, int v, int stand_in);
/* Halves [h0, h0 + n) bound as the 4-byte words that hold them (the
 * kernel declares the operand array<u32> or array<vec4<u32>> and unpacks):
 * of a constant f32 value, its binary16 copy (WG_FMT_F16, f16 mode); of an
 * f16 value or WG_SCRATCH, the halves themselves. *sub receives h0 mod 2
 * (the kernel's first half is 2 * offset + sub). */
void wg_bind_f16(wg_lower *L, wg_dispatch *d, const char *name, int value, uint64_t h0, uint64_t n, uint32_t *sub);
/* Whether elements [e0, e0 + n) of value `value` may be stored as binary16
 * in f16 mode: it is a constant f32 and every one of them rounds to a
 * finite half (|x| < 65520; 65504 is the largest half, and ties round to
 * even, so 65520 becomes infinity). NaN and infinities count as not
 * fitting, so such a weight keeps its exact f32 bits. When a constant f32
 * does not fit, the reason (the value's name and the first offending
 * element) is added to L->note once per value: the caller binds it as f32
 * instead (wg_bind), and the dispatch report says so. */
bool wg_f16_fits(wg_lower *L, int value, uint64_t e0, uint64_t n);

/* Binds the run's status words (WG_STATUS_WORDS u32, WG_STATUS) as the next
 * storage binding (its offset word comes first in Params like any binding)
 * and appends one more Params word, reserved here, that compile sets to
 * this step's tag: the kernel declares them `s_off: u32, tag: u32`.
 * For kernels that detect bad run-time input (an index out of range): they
 * atomicMax the tag into word 0 and the run fails with a message naming
 * the node (webgpu_backend.c). Only plans with such dispatches get the
 * buffer, its clear and its read-back. */
void wg_bind_status(wg_lower *L, wg_dispatch *d);

/* Params words, each named by its field, in the order of the kernel's
 * `//!params` declaration (the WGSL struct is generated from it): the
 * words of an array or vec4 field all carry the field's name. Compile
 * checks the count, kind and name of every word written (bindings' offset
 * words included) against the declaration and fails with RLX_ERR_INTERNAL
 * naming the kernel, the field's position, its declared and written names
 * on a mismatch (wg_params_check). */
void wg_p_u32(wg_lower *L, wg_dispatch *d, const char *name, uint32_t v);
void wg_p_i32(wg_lower *L, wg_dispatch *d, const char *name, int32_t v);
void wg_p_f32(wg_lower *L, wg_dispatch *d, const char *name, float v);
/* Pads Params with zero words to a multiple of 16 bytes (before a vec4 or
 * an array of vec4, and at the end, which compile does by itself). */
void wg_p_align16(wg_lower *L, wg_dispatch *d);
/* A string formatted as by printf, owned by L (freed with it; "" and
 * L->broken on OOM): the name of a field that a generator numbered
 * (wg_keep(L, "o%d", i)). */
const char *wg_keep(wg_lower *L, const char *fmt, ...) RLX_PRINTF(2, 3);

/* Several Params words in one call, in declaration order:
 *     WG_P(L, d, wg_pu("rows", rows), wg_pu("count", n), wg_pf("eps", eps));
 * wg_pu: a u32 field (the value converted as by a cast), wg_pi: an i32,
 * wg_pf: an f32; the same as one wg_p_u32/i32/f32 call each. */
typedef struct wg_pword {
    const char *name;
    uint32_t bits;
    unsigned char kind; /* WG_WORD_* */
} wg_pword;
static inline wg_pword wg_pu(const char *name, uint32_t v) { return (wg_pword){ name, v, WG_WORD_INT }; }
static inline wg_pword wg_pi(const char *name, int32_t v) { return (wg_pword){ name, (uint32_t)v, WG_WORD_INT }; }
static inline wg_pword wg_pf(const char *name, float v) {
    union { float f; uint32_t u; } b = { .f = v };
    return (wg_pword){ name, b.u, WG_WORD_F32 };
}
void wg_p_words(wg_lower *L, wg_dispatch *d, const wg_pword *w, size_t n);
#define WG_P(L, d, ...)                                                                                             \
    wg_p_words((L), (d), (const wg_pword[]){ __VA_ARGS__ }, sizeof((const wg_pword[]){ __VA_ARGS__ }) / sizeof(wg_pword))

/* The element type T of a dtype (f32, f16, i32, u32), else WG_ELEM_COUNT:
 * a lowering instantiates its kernel with `d->elem = wg_elem_of(dt)`;
 * each type is its own shader module and pipeline. */
wg_elem wg_elem_of(rlx_dtype dt);

/* Bytes per element of binding i of d (see wg_operand.esize): its esize
 * when set, else 2 when it is a native f16 value and d's T is f16 (the
 * kernel declares it array<T>: elem_off, elems and the offset word the
 * kernel reads count halves), else 4 (words). */
int wg_operand_esize(const rlx_graph *g, const wg_dispatch *d, int i);

/* The dtypes (WG_F32, WG_F16, WG_I32, WG_U32) that embedded kernel
 * `kernel` is written for: its `//!elem` line (f32 alone without one).
 * The per-lowering element-type gate: wg_check_io(L,
 * wg_kernel_types(kernel) | WG_BOOL..., n_out). f16 is listed whether or
 * not the adapter has shader-f16; wg_check_io declines f16 values there. */
unsigned wg_kernel_types(const char *kernel);

/* The T an embedded kernel gets when the lowering names none (wg_emit
 * sets it): the type of its `//!elem` line (u32 for the word movers),
 * else f32. */
wg_elem wg_kernel_elem(const char *kernel);

/* Grids: a 1-D kernel of `threads` invocations (@workgroup_size(64)), or
 * `groups` workgroups of any kernel that recovers its linear workgroup
 * index as wid.x + wid.y * nwg.x. Beyond maxComputeWorkgroupsPerDimension
 * the grid folds into y. Fails (declines) past 2^32 invocations. */
rlx_status wg_grid_1d(wg_lower *L, wg_dispatch *d, uint64_t threads);
rlx_status wg_grid_groups(wg_lower *L, wg_dispatch *d, uint64_t groups);

/* True when a window of `elems` 4-byte elements fits one storage binding
 * wherever it starts (maxStorageBufferBindingSize less one offset
 * alignment); wg_max_window: the largest such window. Lowerings of the
 * reduce, index and logic families decline (the node runs on the CPU) when
 * a window does not fit; pure fills and copies split instead. */
bool wg_window_fits(const wg_lower *L, uint64_t elems);
uint64_t wg_max_window(const wg_lower *L);

/* Bytes of the storage binding of a window of `elems` 4-byte elements
 * starting at element elem_off of a value (values start aligned): the
 * window is bound from the offset aligned down to
 * minStorageBufferOffsetAlignment. Every window of a lowering must fit
 * caps->max_binding; wg_lower_node declines the node otherwise. */
uint64_t wg_binding_bytes(const wg_caps *caps, uint64_t elem_off, uint64_t elems);

/* Requests `elems` 4-byte elements of scratch for this step (the maximum
 * over calls is kept); bind it with value WG_SCRATCH. */
void wg_scratch(wg_lower *L, uint64_t elems);

/* Appends n words computed on the host (index maps, weights) to this
 * step's table, which compile uploads once into a constant buffer; returns
 * the element offset of the first word: bind the words with
 * wg_bind(L, d, "t_off", WG_TABLE, offset, n). For lowerings whose exact result
 * needs arithmetic the GPU lacks (Resize: the reference's f64 source
 * coordinates). On OOM L->broken is set. */
uint64_t wg_table(wg_lower *L, const uint32_t *words, size_t n);

/* ceil(a / b), b > 0. */
static inline uint64_t wg_cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Value helpers. */
static inline const rlx_value *wg_in(const wg_lower *L, int i) { return rlx_node_input(L->g, L->n, i); }
static inline const rlx_value *wg_out(const wg_lower *L, int i) { return rlx_node_output(L->g, L->n, i); }
static inline int wg_in_id(const wg_lower *L, int i) { return i < L->n->n_in ? L->n->in[i] : -1; }
static inline int wg_out_id(const wg_lower *L, int i) { return i < L->n->n_out ? L->n->out[i] : -1; }
/* Element layouts on the GPU (README.md, "Element types"):
 *  - f32, i32, u32: one u32 word per element;
 *  - f16: binary16, two to a word (the host's bytes); kernels instantiated
 *    for T = f16 bind them as array<f16> (needs shader-f16; offsets and
 *    windows in halves, wg_operand_esize), compute in f32 and round once
 *    at the store; without shader-f16 nodes with f16 values decline;
 *  - i64: two words per element, low word first (the host's little-endian
 *    bytes); kernels read the low word as i32 where the value must fit,
 *    and write sign-extended pairs; there is no i64 arithmetic;
 *  - bool: one byte per element, 0 or 1, four to a word (byte i of the
 *    tensor is bits 8*(i%4).. of word i/4): the host's bytes, so transfers
 *    and the memory plan need nothing special. Kernels that write bool
 *    write whole words (one invocation per four elements);
 *  - int8, uint8: the same byte layout (two's complement for int8); only
 *    QuantizeLinear / DequantizeLinear read and write them (quant.wgsl).
 * wg_value_ok: the value is present, static and of a dtype in `mask`
 * (bits: 1 f32, 2 i32, 4 u32, 8 bool, 16 i64, 32 f16, 64 int8/uint8). */
bool wg_value_ok(const rlx_value *v, unsigned mask);
/* wg_value_ok, and an f16 value only where the adapter has shader-f16 (the
 * check of a lowering that tests values one by one; wg_check_io tests all
 * of a node's and says why). */
bool wg_value_held(const wg_lower *L, const rlx_value *v, unsigned mask);
#define WG_F32 1u
#define WG_I32 2u
#define WG_U32 4u
#define WG_BOOL 8u
#define WG_I64 16u
#define WG_F16 32u
#define WG_Q8 64u /* int8 and uint8: bytes four to a word, as bool */
#define WG_ANY4 (WG_F32 | WG_I32 | WG_U32)
/* u32 words the value occupies: numel for 4-byte dtypes, 2 numel for i64,
 * ceil(numel / 2) for f16, ceil(numel / 4) for bool, int8 and uint8; 0 for
 * other dtypes. */
uint64_t wg_words(const rlx_value *v);
/* Declines unless every present input and output is static and in
 * `mask`, and the outputs after `n_out` are absent. An f16 value declines
 * when the adapter has no shader-f16 (the reason says so). */
rlx_status wg_check_io(wg_lower *L, unsigned mask, int n_out);

/* Element count of a value (static). */
uint64_t wg_numel(const rlx_value *v);

#define WG_BC_MAX_RANK 8

/* Output dims and the element strides of up to 3 inputs broadcast to it (0
 * on broadcast dims), unit dims dropped and adjacent dims merged where
 * every input stays contiguous across them; outermost first. */
typedef struct wg_bcview {
    int rank, n_in;
    uint64_t dims[WG_BC_MAX_RANK];
    uint64_t str[3][WG_BC_MAX_RANK];
} wg_bcview;

/* The view of n_in (<= 3) inputs broadcast multidirectionally to y;
 * declines when one does not broadcast or more than WG_BC_MAX_RANK dims
 * remain. */
rlx_status wg_bcview_make(wg_lower *L, const rlx_value *const *in, int n_in, const rlx_value *y, wg_bcview *bv);

#endif
