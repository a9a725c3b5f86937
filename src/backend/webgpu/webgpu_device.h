/* The WebGPU device side of the backend: instance, adapter, device, error
 * scopes, shader modules and the pipeline cache. Internal. */
#ifndef RLX_BACKEND_WEBGPU_WEBGPU_DEVICE_H
#define RLX_BACKEND_WEBGPU_WEBGPU_DEVICE_H

#include <pthread.h>
#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

#include "backend/backend.h"
#include "backend/webgpu/webgpu.h"

/* A kernel's Params as its `//!params` declaration lays them out
 * (wg_params.c): one WG_WORD_* per u32 word, padding included, and each
 * word's field (the next field for padding). n_words == 0: the kernel declares none
 * (nothing is checked). */
typedef struct wg_layout {
    int n_words; /* up to the last field (the 16-byte end padding not counted) */
    unsigned char kind[WG_MAX_PARAMS];
    unsigned char field[WG_MAX_PARAMS];
    char names[WG_MAX_PARAMS][24];
} wg_layout;

/* The WGSL the device compiles for a kernel source (embedded, its
 * includes resolved, or generated): `enable f16;` for f16, `alias T = ..;`
 * for elem, then src with its `//!params` lines replaced by the `struct
 * Params` they declare, and its layout in *lay. Malformed declarations:
 * RLX_ERR_INTERNAL naming `kernel`. *out malloc'ed. */
rlx_status wg_params_expand(const char *kernel, const char *src, wg_elem elem, char **out, wg_layout *lay);

/* RLX_ERR_INTERNAL, naming `what`, the kernel, the field's position and
 * its declared and written names, unless the words d wrote (count, kind
 * and field name of each, padding included) are those lay declares. */
rlx_status wg_params_check(const wg_layout *lay, const wg_dispatch *d, const char *what);

typedef struct wg_pipeline {
    int kernel; /* index in rlx_wgsl_sources, or -1 for generated source */
    wg_elem elem;            /* its element type T */
    wg_layout layout;        /* its Params declaration */
    char *source;            /* generated WGSL (owned), the cache key with the constants */
    WGPUShaderModule module; /* the module of generated source (owned) */
    int n_spec;
    const char *spec_name[WG_MAX_SPEC];
    double spec_val[WG_MAX_SPEC];
    bool unchecked; /* its module was created without naga's runtime checks (wg_runtime_checks) */
    WGPUComputePipeline pipe;
} wg_pipeline;

/* One opened device, shared by every backend (session) of the process
 * that asks for the same device string ("gpu", "gpu:1"): the instance,
 * adapter, device and queue, the shader modules and the pipeline cache.
 * Reference-counted; when its last backend goes, it stays registered,
 * idle, for the next session (RLX_GPU_KEEP_DEVICE=0 closes it instead),
 * and idle devices close at process exit. A lost device leaves the
 * registry, so the next session opens a fresh one. `lock`
 * (recursive) serialises compile, run and destroy of executables on the
 * device across threads: error scopes are a per-device stack. */
typedef struct wg_shared {
    struct wg_shared *next; /* registry list */
    char key[32];           /* the device string it was opened for */
    int refs;
    bool in_registry;
    WGPUInstance inst;
    WGPUAdapter adapter;
    WGPUDevice dev;
    WGPUQueue queue;
    WGPULimits limits; /* the device's */
    rlx_adapter_info info;
    /* optional features enabled on the device; has_ts_inside: timestamps
     * between dispatches of one pass (TimestampQueryInsidePasses) */
    bool has_f16, has_subgroups, has_timestamp, has_ts_inside, has_coop_matrix;
    /* why the device was created without the cooperative-matrix feature
     * the adapter offers (wgpu's message; empty when it was not refused) */
    char coop_refused[200];
    /* the cooperative-matrix self-test (webgpu_probe.c), run once per
     * device by the first backend that may use the kernel:
     * coop_state 0 not run, 1 passed, -1 failed; coop_sg the subgroup size
     * it assumed (a backend assuming another size runs it again);
     * coop_result what it found (reports) */
    int coop_state;
    uint32_t coop_sg;
    uint32_t coop_form; /* the wg_coop_forms index that passed */
    char coop_result[160];
    /* the dot4I8Packed self-test (wg_dot4_probe): 0 not run, 1 passed, -1 failed */
    int dot4_state;
    char dot4_result[128]; /* why the dot4I8Packed self-test failed ("" when it passed) */
    double pipelines_s; /* time spent creating shader modules and pipelines (all compiles) */
    /* set by the device-lost callback, or when wgpu reports an operation
     * on a lost device (see wg_device_check_lost) */
    volatile bool lost;
    /* a 16-byte buffer that wg_device_check_lost writes to; touched: an
     * upload reached the device since the last check (no probe needed) */
    WGPUBuffer probe;
    bool touched;
    bool closing;
    char lost_msg[256];
    /* last error outside any error scope (uncaptured-error callback) */
    char uncaptured[512];
    /* per rlx_wgsl_sources entry, element type and checked (0) or
     * unchecked (1) module, created on first use: index
     * (kernel * WG_ELEM_COUNT + elem) * 2 + unchecked */
    WGPUShaderModule *modules;
    wg_pipeline *pipes;        /* the pipeline cache */
    size_t n_pipes, cap_pipes;
    size_t pipes_created;      /* pipelines created since the device opened (tests, reports) */
    size_t pipes_unchecked;    /* of them, from modules without runtime checks */
    pthread_mutex_t lock;
} wg_shared;

/* The backend object: rlx_backend first, so the vtable's rlx_backend *
 * converts to it. Holds a reference to a shared device; inst, adapter,
 * dev, queue, limits, info and the feature flags are borrowed copies of
 * its fields. caps are the backend's own (RLX_MAX_BINDING_BYTES and
 * RLX_MAX_BUFFER_BYTES are read when the backend is created, and the
 * session options differ). Executables compiled by it must be destroyed
 * before it. */
typedef struct wg_backend {
    rlx_backend base;
    wg_shared *sh;
    WGPUInstance inst;
    WGPUAdapter adapter;
    WGPUDevice dev;
    WGPUQueue queue;
    WGPULimits limits;
    wg_caps caps;
    rlx_adapter_info info;
    bool has_f16, has_subgroups, has_timestamp, has_ts_inside, has_coop_matrix;
    char coop_note[200]; /* whether this backend uses the cooperative-matrix GEMM, and why (reports) */
    char dot4_note[160]; /* whether the integer GEMM uses dot4I8Packed, and why (reports) */
    struct rlx_config *own_cfg; /* options resolved by rlx_backend_webgpu_create (else the session's) */
} wg_backend;

/* Takes a reference to the shared device for `device` ("gpu" or "gpu:N")
 * with b->caps.cfg set,
 * opening the adapter and a device on it with the adapter's limits when
 * the process has none yet (or only a lost one); fills b (zeroed by the
 * caller) except `base`, its caps included.
 * errors: RLX_ERR_INVALID_ARGUMENT (bad "gpu:N"),
 * RLX_ERR_NO_ADAPTER (the message says what was tried and how to get a
 * driver), RLX_ERR_DEVICE. */
rlx_status wg_device_open(wg_backend *b, const char *device);
/* Drops b's reference. A device without references stays open and
 * registered (see wg_shared), except a lost one or with the option
 * gpu.keep_device off: then the last reference releases pipelines,
 * modules, device, adapter and instance. */
void wg_device_close(wg_backend *b);

/* Whether b's device is lost, found out without any call that
 * wgpu-native treats as fatal on a lost device (a queue submit aborts the
 * process there): delivers pending callbacks, and unless an upload
 * reached the device since the last check, writes 4 bytes to a probe
 * buffer first (wgpu reports that a lost device refuses it). Called
 * before every submit and when a session opens a registered device. The
 * caller holds the device lock. */
bool wg_device_check_lost(wg_backend *b);

/* Lock / unlock the shared device (recursive). */
void wg_device_lock(wg_backend *b);
void wg_device_unlock(wg_backend *b);

/* Shared devices open in the process, and the pipelines created on the
 * one registered for `device` since it opened (tests). */
size_t wg_device_open_count(void);
size_t wg_device_pipelines_created(const char *device);

/* Error scopes: push validation and out-of-memory scopes (internal errors
 * arrive through the uncaptured-error callback, checked at pop); pop
 * them all and return the first error as RLX_ERR_DEVICE (or
 * RLX_ERR_OUT_OF_MEMORY) with "<what>: <message>", RLX_ERR_DEVICE_LOST if
 * the device was lost. */
void wg_scope_push(wg_backend *b);
rlx_status wg_scope_pop(wg_backend *b, const char *what);

/* The pipeline of a dispatch's kernel and override constants, created on
 * first use inside an error scope (errors name `what`, the step, and the
 * kernel). Borrowed from the shared device's cache; the caller holds the
 * device lock. */
rlx_status wg_pipeline_get(wg_backend *b, const wg_dispatch *d, const char *what, WGPUComputePipeline *out);

/* Shader runtime checks (option gpu.runtime_checks). naga, wgpu's shader
 * compiler, guards every access to a storage buffer, workgroup or private
 * array and every vector index (a clamp, or a read of zero) and bounds
 * every loop, unless the module comes from wgpu-native's
 * wgpuDeviceCreateShaderModuleTrusted with those checks off. A kernel
 * whose own text (an embedded kernels/<name>.wgsl, or a generator's
 * output; not a //!include snippet) has a line starting "//!audited"
 * claims that every such access stays in range and every loop ends for
 * every dispatch any lowering emits (README.md, "Runtime checks").
 * wg_source_audited: whether src has that line. */
bool wg_source_audited(const char *src);

/* Whether the loaded WebGPU library exports
 * wgpuDeviceCreateShaderModuleTrusted (looked up once at run time, so that
 * a library without it, Dawn or an older wgpu-native, still loads); tests
 * can hide it (wg_trusted_hide_for_test) to run the fallback. */
bool wg_trusted_available(void);
void wg_trusted_hide_for_test(bool hide);

/* Whether pipeline `pipe` of b's device cache came from a module without
 * runtime checks. The caller holds the device lock. */
bool wg_pipeline_unchecked(const wg_backend *b, WGPUComputePipeline pipe);

/* A sentence for reports: the mode of gpu.runtime_checks and how many of
 * the `n` pipelines that an executable uses came from unchecked modules
 * (n_unchecked). */
void wg_runtime_checks_note(const wg_backend *b, size_t n, size_t n_unchecked, char *out, size_t cap);

/* Runs dispatch d once on b's device, outside any executable (the
 * cooperative-matrix self-test, tests): binding i + 1 is a fresh storage
 * buffer of bytes[i] bytes (rounded up to 16) filled from host[i] (left
 * zero when host[i] is NULL), each bound from its start (d's offset words
 * are set to 0); Params come from d; binding `out` (0-based, as bind[])
 * is read back into host[out] (bytes[out] bytes). Creates d's pipeline
 * through the cache. errors: the device's (RLX_ERR_DEVICE naming `what`),
 * RLX_ERR_DEVICE_LOST. */
rlx_status wg_run_dispatch(wg_backend *b, wg_dispatch *d, void *const *host, const size_t *bytes, int out,
                           const char *what);

/* Decides caps.coop16 (f16 products) and caps.coop (f32 products, only in
 * f16 mode): on when the adapter has cooperative matrices and shader-f16,
 * RLX_GPU_COOP is not 0, and the self-test of the cooperative GEMM passes
 * in one of its forms with f32 and with f16 tensors (webgpu_probe.c); the
 * reason goes to coop_note.
 * The self-test runs once per shared device (under its lock) and its
 * result is kept there for later backends. */
void wg_coop_probe(wg_backend *b);

/* Decides caps.dot4: on unless option gpu.dot4 is 0, when the integer GEMM
 * with WGSL dot4I8Packed (kernels/qgemm_dp4.wgsl) compiles on the device
 * and one product of odd sizes (uint8 x int8 with zero points, K not a
 * multiple of 4) equals a C reference exactly; any device error or wrong
 * value leaves it off (the unpacked kernel, qgemm.wgsl). Once per shared
 * device, under its lock; the reason goes to dot4_note. */
void wg_dot4_probe(wg_backend *b);

/* The RLX_ERR_DEVICE_LOST error of b's lost device at step `what`: names
 * the step, the driver's message, and what to do (a new session opens a
 * new device). */
rlx_status wg_lost_error(const wg_backend *b, const char *what);

/* ---- test-only fault injection (tests/test_gpu_faults.c) ----
 * Not public API and no option: faults that no real model causes on a
 * working device, forced so that the error paths run. wg_fault_inject arms
 * one fault for the whole process; the next place that takes it
 * (wg_fault_take) injects it once. */
typedef enum wg_fault {
    WG_FAULT_NONE = 0,
    /* the first dispatch of the next compiled executable asks for more
     * workgroups than maxComputeWorkgroupsPerDimension: a validation error
     * when its first run encodes it */
    WG_FAULT_DISPATCH,
    /* the next pipeline created gets WGSL that does not parse: a
     * validation error creating the shader module and pipeline */
    WG_FAULT_SHADER,
    /* the next arena buffer created asks for more than the device's
     * maxBufferSize (past rlx's own size check): buffer creation fails */
    WG_FAULT_BUFFER,
} wg_fault;
void wg_fault_inject(wg_fault f);
/* True (and disarmed) when f is the armed fault. */
bool wg_fault_take(wg_fault f);
/* Destroys the device registered for `device` (wgpuDeviceDestroy), as a
 * driver reset or a removed GPU would: the device-lost callback marks it
 * lost. false when no such device is open. */
bool wg_device_destroy_for_test(const char *device);

/* Waits until the work submitted to b's queue so far has finished.
 * errors: RLX_ERR_DEVICE_LOST, RLX_ERR_DEVICE, naming `what`. */
rlx_status wg_queue_wait(wg_backend *b, const char *what);

/* Maps buf for reading [0, size) and waits. */
rlx_status wg_map_read(wg_backend *b, WGPUBuffer buf, uint64_t size, const char *what);

static inline WGPUStringView wg_sv(const char *s) { return (WGPUStringView){ s, WGPU_STRLEN }; }

#endif
