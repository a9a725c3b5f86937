/* Session options (the internal side of rlx_options, include/rlx/rlx.h).
 *
 * One table in options.c lists every key: name, type, default, the RLX_*
 * environment variable that supplies its default, one line of doc, and the
 * field of rlx_config it resolves into. A session resolves its options once,
 * when it is created (explicit rlx_options > environment > the legacy
 * rlx_session_options fields > the table's default), and everything below
 * it (passes, memory plan, backends, lowerings) reads the resolved
 * rlx_config, never the environment.
 *
 * Per-process keys (flag RLX_OPT_PROCESS: cpu.pool_spin_us, cpu.gemm)
 * configure things there is one of per process (the CPU worker pool's
 * spin, OpenBLAS's threads): the first session fixes them (or, for work
 * before any session, the environment); a later session asking for a
 * different value is refused. cpu.threads is per session: the shared
 * pool grows to the largest count, each session's runs use at most its
 * own (base/parallel.h). */
#ifndef RLX_BASE_OPTIONS_H
#define RLX_BASE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "rlx/rlx.h"

/* Resolved options. Enum keys hold a pointer to the table's spelling of
 * the value (never NULL: "auto" when not chosen); string keys hold NULL
 * when empty; int keys marked "auto" hold -1 for auto. */
typedef struct rlx_config {
    const char *progress;       /* "auto", "on" or "off" (rlx_config_progress) */
    /* debugging and passes */
    bool dump_ir, fusion_report, dispatch_report, no_reuse, plan_only;
    bool cpu_prepack;           /* cpu.prepack: constant GEMM operands packed at compile */
    bool cpu_release_packed;    /* cpu.release_packed: packed constants' plain copy freed (the model's: sole holder) */
    bool cpu_winograd;          /* cpu.winograd: 3x3 convolutions as Winograd F(2x2) where it pays */
    bool cpu_winograd_f4x4;     /* cpu.winograd_f4x4: ... and as F(4x4) where that pays more */
    const char *disable_passes; /* passes.disable: comma-separated pass names */
    /* CPU (per process) */
    int64_t cpu_threads, cpu_pool_spin_us;
    const char *cpu_gemm;       /* "pool" or "blas" */
    const char *cpu_qgemm_kernel; /* "auto", "portable", "avx2", "vnni" or "amx" */
    const char *cpu_sgemm_tile;   /* "8x32" or "8x48" (AVX-512 f32 GEMM tile) */
    /* GPU */
    bool gpu_f16, gpu_trace, gpu_keep_device, gpu_validate, gpu_poison, gpu_prerecord, gpu_timing_passes;
    bool gpu_warm_pipelines;
    const char *gpu_disable;    /* comma-separated op types that run on the CPU */
    int64_t gpu_max_binding_bytes, gpu_max_buffer_bytes, gpu_max_wg_storage_bytes; /* -1: the adapter's */
    const char *gpu_coop, *gpu_coop_sg, *gpu_dot4, *gpu_qgemm_tile, *gpu_nbits;
    int64_t gpu_spin_us;
    const char *attention_kernel, *attention_tile;
    bool attention_vec4;
    const char *gemm_kernel, *gemm_tile;
    int64_t gemm_splitk, gemm_target_wg; /* gemm_splitk -1: chosen per problem */
    const char *f16_accumulate;          /* gpu.f16_accumulate: "f32" or "f16" */
    int64_t f16_block;                   /* gpu.f16_block: k elements per f16 partial sum */
    bool gemm_vec4, gemm_prefetch, gemm_unroll_k;
    const char *gemm_pipeline;      /* gpu.gemm_pipeline: "off", "prefetch" or "double" */
    const char *gemm_conv_geometry; /* gpu.gemm_conv_geometry: "params", "hoist" or "constants" */
    const char *conv_algo, *dwconv_kernel, *pool_kernel;
    /* gpu.runtime_checks: "on" (the default: every module checked), "auto"
     * (audited kernels' shader modules without naga's bounds checks and
     * loop bounding) or "off" (none checked: for measurements only) */
    const char *gpu_runtime_checks;
    /* limits.*: bytes, resolved ("auto" is a share of physical memory); 0:
     * no limit. limit_set[i]: the value was given (not auto), in the order
     * model, arena, tensor. Checked with rlx_limit_check. */
    int64_t max_model_bytes, max_arena_bytes, max_tensor_bytes;
    bool limit_set[3];
    int64_t run_timeout_ms; /* run.timeout_ms: each run's time limit (0: none) */
    /* Not an option: the session's run control (base/runctl.h), borrowed,
     * so that everything that evaluates nodes under this config (eager
     * evaluation, folding, Loop and Scan bodies) checks for a stop; NULL
     * outside a session. */
    struct rlx_run_ctl *run;
    /* the strings above that are not the table's point here (owned) */
    char *owned[8];
    /* bit i: the table's option i was given (options object, environment
     * or legacy field) rather than defaulted (rlx_config_given) */
    uint64_t given[2];
} rlx_config;

/* Resolves options for a session: for every key, the value set in
 * `explicit_opts` (may be NULL), else its environment variable when set to
 * something other than "", else the field of `legacy` that carries it
 * (gpu_f16; may be NULL), else the table's default. Every value is
 * validated. *out: free with rlx_config_destroy.
 * errors: RLX_ERR_INVALID_ARGUMENT naming the key (or the environment
 * variable the value came from), the value and the accepted values;
 * RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_config_resolve(const rlx_options *explicit_opts, const rlx_session_options *legacy,
                              rlx_config **out);
/* As rlx_config_resolve for the limits.* keys only (what loading a model
 * uses); every other key takes its default, its variable unread, so that
 * a bad RLX_GPU_F16 does not stop a model from loading. */
rlx_status rlx_config_resolve_limits(const rlx_options *explicit_opts, rlx_config **out);
void rlx_config_destroy(rlx_config *cfg);

/* Sets one key of a resolved config, validated as rlx_options_set does;
 * `key` may also be the key's environment variable name, value NULL gives
 * the default back. For tests that flip a switch of a backend they hold.
 * errors: RLX_ERR_INVALID_ARGUMENT, RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_config_set(rlx_config *cfg, const char *key, const char *value);

/* Checks `bytes` against the limit `key` ("limits.max_model_bytes",
 * "limits.max_arena_bytes" or "limits.max_tensor_bytes") of c, before
 * anything of that size is allocated. `what` says what needs the bytes
 * ("node 'x' (Expand): output 'y' (f32 [4294967296])").
 * errors: RLX_ERR_OUT_OF_MEMORY naming what, the bytes, the limit, where
 * its value came from, and how to raise it (option, CLI flag, variable). */
rlx_status rlx_limit_check(const rlx_config *c, const char *key, uint64_t bytes, const char *what);

/* Whether progress lines are wanted: option progress "on", or "auto"
 * while stderr is a terminal. */
bool rlx_config_progress(const rlx_config *cfg);

/* Whether `key` was given to this config (options object, environment
 * variable or legacy field) rather than left at its default: a session
 * that does not give a per-process key (cpu.gemm, cpu.sgemm_tile,
 * cpu.pool_spin_us) takes the value the process already has. */
bool rlx_config_given(const rlx_config *c, const char *key);

/* The value of an int key from its environment variable alone, or
 * `fallback` when the variable is unset or invalid (for per-process state
 * that starts before any session: the worker pool). */
int64_t rlx_config_env_int(const char *key, int64_t fallback);
/* The same for an enum key: the table's spelling, or `fallback`. */
const char *rlx_config_env_enum(const char *key, const char *fallback);

#endif
