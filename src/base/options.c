/* Session options: the table of keys, rlx_options (explicit values), and
 * their resolution into rlx_config (see options.h). The only place that
 * reads RLX_* environment variables for the library. */
#include "base/options.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/platform.h"

typedef enum opt_type { OPT_BOOL, OPT_INT, OPT_ENUM, OPT_STRING } opt_type;

enum {
    OPT_PROCESS = 1,
    OPT_AUTO = 2,  /* int: "auto" allowed, resolves to -1 */
    OPT_BYTES = 4, /* int: a byte count, with an optional binary suffix K, M, G or T (e.g. 4G) */
};

/* Checks a string value; NULL when it is fine, else what is expected. */
typedef const char *(*opt_check_fn)(const char *v, char *buf, size_t cap);

typedef struct opt_def {
    const char *key, *env;
    opt_type type;
    const char *def;           /* default, as text */
    int64_t min, max;          /* OPT_INT */
    const char *values;        /* OPT_STRING: what it takes (for listings) */
    const char *const *words;  /* OPT_ENUM: the accepted words, NULL-terminated */
    opt_check_fn check;        /* OPT_STRING: optional */
    size_t off;                /* field of rlx_config */
    unsigned flags;
    const char *doc;
} opt_def;

/* The passes passes.disable can name (fold and dce always run). */
static const char *const k_optional_passes[] = { "cse", "fuse_nbits", "fuse_qdq", "fuse_qdq_conv", "fold_conv_affine", "fuse_activation", "fuse_conv_residual",
                                                 "fuse_attention", "fuse_layernorm", "fuse_add_layernorm",
                                                 "fuse_elementwise", "fuse_qdq_ew", "fuse_qlinear_ew", "widen_f16",
                                                 "pow_exponent" };

/* The first item of the comma-separated list v that is not one of
 * names[0..count) (empty items pass), or NULL; *len its length. */
static const char *unknown_item(const char *v, const char *const *names, size_t count, size_t *len) {
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        bool known = n == 0;
        for (size_t i = 0; i < count && !known; i++) known = strlen(names[i]) == n && strncmp(names[i], p, n) == 0;
        if (!known) return *len = n, p;
        p += n;
        if (*p == ',') p++;
    }
    return NULL;
}

static const char *check_passes(const char *v, char *buf, size_t cap) {
    size_t n;
    const char *p = unknown_item(v, k_optional_passes, RLX_ARRAY_LEN(k_optional_passes), &n);
    if (!p) return NULL;
    /* The list comes from the table, so it cannot drift from what is accepted. */
    int at = snprintf(buf, cap, "'%.*s' is not a pass that can be turned off (", (int)(n > 64 ? 64 : n), p);
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_optional_passes) && at >= 0 && (size_t)at < cap; i++)
        at += snprintf(buf + at, cap - (size_t)at, "%s%s", i ? ", " : "", k_optional_passes[i]);
    if (at >= 0 && (size_t)at < cap) snprintf(buf + at, cap - (size_t)at, ")");
    return buf;
}

/* The op types gpu.disable can name: every row of the op tables (the .def
 * files are data; base reads their names, not the ir code). */
static const char *const k_op_types[] = {
#define RLX_OP(nm, ...) #nm,
#define RLX_OP_RLX(nm, ...) #nm,
#include "ir/ops/ops_elementwise.def"
#include "ir/ops/ops_nn.def"
#include "ir/ops/ops_tensor.def"
#include "ir/ops/ops_reduce.def"
#include "ir/ops/ops_control.def"
#include "ir/ops/ops_quant.def"
#include "ir/ops/ops_rnn.def"
#include "ir/ops/ops_string.def"
#include "ir/ops/ops_internal.def"
#undef RLX_OP
#undef RLX_OP_RLX
};

/* gpu.disable: an unknown op type (a typo such as "conv") would be ignored
 * silently, so every name must be one of k_op_types, bare or after a
 * domain and a dot (rlx.FusedElementwise, as `rlx ops` prints it). */
static const char *check_op_types(const char *v, char *buf, size_t cap) {
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        const char *op = p;
        for (size_t i = 0; i < n; i++)
            if (p[i] == '.') op = p + i + 1;
        size_t on = n - (size_t)(op - p), bad;
        if (n && (on == 0 || unknown_item(op, k_op_types, RLX_ARRAY_LEN(k_op_types), &bad) == op)) {
            snprintf(buf, cap,
                     "'%.*s' is not an op type rlx knows (ONNX op types, e.g. Conv,Relu, or domain.type as `rlx "
                     "ops` lists them)",
                     (int)(n > 64 ? 64 : n), p);
            return buf;
        }
        p += n;
        if (*p == ',') p++;
    }
    return NULL;
}

static const char *check_attention_tile(const char *v, char *buf, size_t cap) {
    (void)buf, (void)cap;
    unsigned bq = 0, bk = 0;
    char tail;
    if (sscanf(v, "%ux%u%c", &bq, &bk, &tail) != 2 || (bq != 4 && bq != 8 && bq != 16 && bq != 32) || bk == 0 ||
        v[strspn(v, "0123456789x")])
        return "expected BQxBK with BQ 4, 8, 16 or 32 and BK > 0 (a multiple of the kernel's rows per key, up to 8 "
               "of them)";
    return NULL;
}

/* The form of gpu.gemm_tile; whether the device can run the tile is checked
 * when lowering. */
static const char *check_gemm_tile(const char *v, char *buf, size_t cap) {
    (void)buf, (void)cap;
    unsigned tm = 0, tn = 0, wgx = 0, wgy = 0, bk = 0;
    char tail;
    if (sscanf(v, "%ux%u,%ux%u,%u%c", &tm, &tn, &wgx, &wgy, &bk, &tail) != 5 || (tm != 4 && tm != 8) ||
        (tn != 4 && tn != 8) || wgx == 0 || wgy == 0 || bk == 0 || bk % 4 || v[strspn(v, "0123456789x,")])
        return "expected TMxTN,WGXxWGY,BK with TM, TN 4 or 8, WGX, WGY > 0 and BK a multiple of 4 (e.g. 4x4,16x16,16)";
    return NULL;
}

#define F(field) offsetof(rlx_config, field)
#define BOOL(k, e, d, f, doc) { k, e, OPT_BOOL, d, 0, 0, NULL, NULL, NULL, F(f), 0, doc }
#define INT(k, e, d, lo, hi, f, fl, doc) { k, e, OPT_INT, d, lo, hi, NULL, NULL, NULL, F(f), fl, doc }
#define ENUM(k, e, words, f, fl, doc) \
    { k, e, OPT_ENUM, NULL, 0, 0, NULL, (words), NULL, F(f), fl, doc } /* default: the first word */
#define STR(k, e, vals, chk, f, doc) { k, e, OPT_STRING, "", 0, 0, vals, NULL, chk, F(f), 0, doc }
#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Every key. Keep README.md's table of options in step (`rlx options
 * --markdown` prints it). */
static const opt_def k_opts[] = {
    ENUM("progress", "RLX_PROGRESS", W("auto", "on", "off"), progress, 0,
         "progress lines on stderr while a plan compiles and while a run lasts over 1 s (auto: only when stderr is a terminal)"),
    BOOL("debug.dump_ir", "RLX_DUMP_IR", "0", dump_ir,
         "print the graph to stderr as a plan is compiled: after binding the input shapes and after each pass"),
    BOOL("debug.fusion_report", "RLX_FUSION_REPORT", "0", fusion_report,
         "print one line per fusion (pass, nodes fused, the new node)"),
    BOOL("debug.dispatch_report", "RLX_DISPATCH_REPORT", "0", dispatch_report,
         "print the dispatch report to stderr after each plan compile (per op type: native, CPU fallback, removed)"),
    STR("passes.disable", "RLX_DISABLE_PASSES", "comma-separated pass names", check_passes, disable_passes,
        "turn optimisation passes off: cse, fuse_nbits (DequantizeLinear of a constant int4/uint4 weight blocked along K -> MatMuls or Gemms as rlx.MatMulNBits on the 4-bit weights), fuse_qdq (fuse_qdq_conv: only its QDQ convolutions, MatMuls and Gemms as QLinearConv, QLinearMatMul and integer GEMMs), fold_conv_affine, fuse_activation, fuse_conv_residual, fuse_attention, "
        "fuse_layernorm, fuse_add_layernorm, fuse_elementwise, fuse_qdq_ew (elementwise chains read and write the 8-bit tensors of their DequantizeLinear and QuantizeLinear), fuse_qlinear_ew (GPU plans: a QLinearConv or QLinearMatMul applies the 8-bit chain that alone reads its result where it stores, in one dispatch), widen_f16 (CPU plans: f16 models computed in f32), pow_exponent (Pow(x, 2) by a constant 2 as x * x; GPU plans: other constant integer exponents in x's float type) (folding and dead-code removal always run)"),
    BOOL("plan.no_reuse", "RLX_NO_REUSE", "0", no_reuse,
         "give every tensor its own arena bytes (debugging the memory plan)"),
    BOOL("plan.defer_backend", "RLX_PLAN_DEFER_BACKEND", "0", plan_only,
         "compiling a plan stops after the memory plan: the device's kernels, packed weights and arena come with "
         "the plan's first run, not with rlx_session_prepare (what rlx info --plan uses: a plan's memory without "
         "allocating it)"),
    BOOL("cpu.prepack", "RLX_CPU_PREPACK", "1", cpu_prepack,
         "pack the constant GEMM operands of CPU steps (Conv, Gemm, MatMul weights; the int8 B of MatMulInteger "
         "and QLinearMatMul; LSTM, GRU and RNN weights) once when a plan is compiled, and read fused elementwise "
         "programs then: "
         "faster runs for a second copy of those weights in memory (0: use the weights as loaded and read each "
         "program on every run; like onnxruntime's session.disable_prepacking)"),
    BOOL("cpu.release_packed", "RLX_CPU_RELEASE_PACKED", "1", cpu_release_packed,
         "with cpu.prepack, CPU sessions free the plain copy of the weights a plan's passes made (folded: a "
         "batch norm folded into its Conv, ConstantOfShape) once every step that reads them reads them packed: "
         "those weights are then in memory once (not Winograd's); the model's own initializers too where the "
         "session is the model's only holder when it compiles (the caller freed its model handle; no overridable "
         "initializers), unpacked back exactly before another plan or an eager run reads them (0: keep both "
         "copies)"),
    BOOL("cpu.winograd", "RLX_CPU_WINOGRAD", "1", cpu_winograd,
         "3x3 stride-1 convolutions with many channels as Winograd F(2x2, 3x3), by shape (weights "
         "transformed when a plan is compiled; needs cpu.prepack): 16 multiplies for 36, not the bits of "
         "im2col + GEMM; rounding error about 1e-6 of the sum of |products| on ordinary activations, but it "
         "follows the largest input of each 4x4 tile: an outlier 1e5x its neighbours gives up to 3e-4 on the "
         "tile's other outputs, heavy-tailed (Cauchy) inputs up to 1.4e-4 (0: every convolution on its "
         "im2col/implicit-GEMM path, about 1.5e-6 on the same inputs; like ncnn's use_winograd_convolution)"),
    BOOL("cpu.winograd_f4x4", "RLX_CPU_WINOGRAD_F4X4", "0", cpu_winograd_f4x4,
         "with cpu.winograd, 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) where it measured faster than "
         "F(2x2) (36 multiplies for 144; ResNet-50 at 1 thread about 3% faster): off by default because its "
         "rounding error follows the largest input of each 6x6 tile, not of the output's own 3x3 window, so "
         "one outlier activation (100x its neighbours) puts errors of 1e-4 of the sum of |products| on up to "
         "16 outputs that never read it (F(2x2): about 1e-5 there, on the 4 outputs of its 4x4 tile)"),
    INT("cpu.threads", "RLX_NUM_THREADS", "0", 0, 1 << 20, cpu_threads, 0,
        "CPU threads this session's runs use (0: one per online core; the worker pool has at most 256, so, as onnxruntime "
        "accepts any count, larger values run on 256 with an info note): sessions share one "
        "worker pool, which grows to the largest count asked for; each run splits its work as on a pool "
        "of its own count"),
    INT("cpu.pool_spin_us", "RLX_POOL_SPIN_US", "auto", 0, 100000, cpu_pool_spin_us, OPT_PROCESS | OPT_AUTO,
        "microseconds idle pool threads spin before they sleep (auto: 50 while at most one thread per core, else 0)"),
    ENUM("cpu.gemm", "RLX_CPU_GEMM", W("pool", "blas"), cpu_gemm, OPT_PROCESS,
         "CPU GEMMs by rlx's own kernel split over rlx's pool (pool), or by OpenBLAS on its own threads, for comparisons (blas)"),
    ENUM("cpu.sgemm_tile", "RLX_CPU_SGEMM_TILE", W("8x32", "8x48"), cpu_sgemm_tile, OPT_PROCESS,
         "the register tile (rows x columns) of the AVX-512 f32 GEMM kernel; both give the same bits, for speed "
         "comparisons (bench/sgemm_bench.c also times 12x32 and 14x32)"),
    ENUM("cpu.qgemm_kernel", "RLX_CPU_QGEMM_KERNEL", W("auto", "portable", "avx2", "vnni", "amx"), cpu_qgemm_kernel,
         OPT_PROCESS,
         "the int8 GEMM and convolution kernel (auto: the fastest this CPU runs; the others force one, for "
         "comparisons and tests; one the CPU or OS cannot run fails the session: amx needs AMX-INT8 and Linux's "
         "permission for the tile state)"),
    BOOL("gpu.f16", "RLX_GPU_F16", "0", gpu_f16,
         "GPU f16 mode: GEMM and convolution weights stored as binary16, sums in f32 "
         "(wins over rlx_session_options.gpu_f16)"),
    STR("gpu.disable", "RLX_GPU_DISABLE", "comma-separated op types", check_op_types, gpu_disable,
        "run these op types on the CPU even where a WGSL lowering exists"),
    BOOL("gpu.trace", "RLX_GPU_TRACE", "0", gpu_trace,
         "print each GPU step's dispatches and grids, each CPU fallback with its reason, each pipeline created, "
         "failing generated kernels"),
    BOOL("gpu.warm_pipelines", "RLX_GPU_WARM_PIPELINES", "1", gpu_warm_pipelines,
         "compile ends with every dispatch recorded once with zero workgroups, so that drivers that compile "
         "shaders at their first dispatch (lavapipe) do it inside compile, not in the first run"),
    BOOL("gpu.keep_device", "RLX_GPU_KEEP_DEVICE", "1", gpu_keep_device,
         "keep the GPU device open after its last session, for the next (0: close it with the session)"),
    INT("gpu.max_binding_bytes", "RLX_MAX_BINDING_BYTES", "auto", 256, INT64_MAX, gpu_max_binding_bytes, OPT_AUTO,
        "lower the GPU's storage-binding limit (tests of the paths that split large operands)"),
    INT("gpu.max_buffer_bytes", "RLX_MAX_BUFFER_BYTES", "auto", 4096, INT64_MAX, gpu_max_buffer_bytes, OPT_AUTO,
        "lower the GPU's buffer-size limit (tests of the split arena)"),
    INT("gpu.max_wg_storage_bytes", "RLX_MAX_WG_STORAGE_BYTES", "auto", 1024, INT64_MAX, gpu_max_wg_storage_bytes,
        OPT_AUTO, "lower the GPU's workgroup-memory limit (tests of the kernels' fallbacks)"),
    BOOL("gpu.validate", "RLX_GPU_VALIDATE", "0", gpu_validate,
         "WebGPU error scopes around every run, not only a plan's first"),
    BOOL("gpu.poison", "RLX_GPU_POISON", "0", gpu_poison,
         "fill the GPU arena and scratch with NaN at compile time (tests: an element no kernel writes shows)"),
    ENUM("gpu.coop", "RLX_GPU_COOP", W("auto", "0", "1", "force"), gpu_coop, 0,
         "the cooperative-matrix GEMM of f16 mode: where available (auto or 1), off (0), self-tested even without the "
         "adapter feature (force)"),
    ENUM("gpu.dot4", "RLX_GPU_DOT4", W("auto", "0"), gpu_dot4, 0,
         "the integer GEMM's WGSL dot4I8Packed: where it compiles and passes its self-test (auto), off (0: the "
         "unpacked 4x8 products)"),
    ENUM("gpu.qgemm_tile", "RLX_QGEMM_TILE",
         W("auto", "0", "reg", "wg", "gemv", "gen", "legacy", "wg16x32", "wg16x64", "wg16x128", "wg32x32", "wg32x64",
           "wg32x128", "wg64x32", "wg64x64", "wg64x128"),
         gpu_qgemm_tile, 0,
         "the integer GEMM's variant (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv): split k per workgroup "
         "for m <= 4, the generated tiled GEMM's int8 instance (gen: dot4I8Packed on words of 4 k, tiles as the f32 "
         "GEMM's) for m >= 16 (a MatMul of at least 2^24 outputs: 64 x 64 workgroup tiles), workgroup tiles for 8 <= m < 16 (wg: 16, 32 or 64 rows by m, 32 to 128 columns by the "
         "grid's size against gpu.gemm_target_wg), else blocks of 4 x 4 per invocation (auto); gemv, gen, wg or reg "
         "forces one (an 8-bit y with n % 4 != 0: gen in two passes, the others one word of four outputs per invocation), wgRxC workgroup tiles of R x C; 0: one output, or one "
         "word of four 8-bit outputs, per invocation; legacy: auto without the wg tiles for 8 <= m < 16, the "
         "convolution's taps gathered byte by byte, depthwise one output at a time (the kernels before the tile "
         "rule); the same bits every way. A MatMulInteger that fuse_qdq rewrites into an exact f32 MatMul (constant "
         "2-D b, k small enough for exact f32 sums) runs that instead, whatever this says"),
    ENUM("gpu.nbits", "RLX_GPU_NBITS", W("auto", "gemv", "gemv_direct", "gemv1", "gemm"), gpu_nbits, 0,
         "MatMulNBits (4-bit weights) on the GPU: the GEMV kernel on the packed weights for few rows of A, the "
         "weights dequantized into the scratch (f32) and the tiled GEMM for 32 rows or more of A (auto); gemv or "
         "gemm forces one. Where K and block_size are multiples of 32 the GEMV is matmul_nbits_gemv.wgsl (16 "
         "columns a workgroup, each lane's 16 pieces of 16 bytes loaded at once, A staged in workgroup memory "
         "per 1024 k); gemv_direct forces it with A read straight from the caches, gemv1 the older kernel "
         "(matmul_nbits.wgsl: 8 columns a workgroup, one piece a lane per step)"),
    ENUM("gpu.coop_sg", "RLX_COOP_SG", W("32", "16", "64"), gpu_coop_sg, 0,
         "subgroup size the cooperative-matrix GEMM assumes"),
    INT("gpu.spin_us", "RLX_GPU_SPIN_US", "250", 0, 1000000, gpu_spin_us, 0,
        "microseconds a wait for the GPU polls before it blocks on the fence (0 blocks at once)"),
    BOOL("gpu.prerecord", "RLX_GPU_PRERECORD", "1", gpu_prerecord,
         "record a steady run's commands while the GPU runs the previous one (0: during the run itself)"),
    BOOL("gpu.timing_passes", "RLX_GPU_TIMING_PASSES", "0", gpu_timing_passes,
         "per-dispatch GPU timing with one compute pass per dispatch even where timestamps inside passes exist"),
    ENUM("gpu.attention_kernel", "RLX_ATTENTION_KERNEL", W("auto", "v1", "v2"), attention_kernel, 0,
         "the fused attention's GPU kernel"),
    STR("gpu.attention_tile", "RLX_ATTENTION_TILE", "BQxBK (BQ 4, 8, 16 or 32)", check_attention_tile,
        attention_tile, "tile of the tiled attention kernel (one that does not fit the head sends the node to the CPU)"),
    BOOL("gpu.attention_vec4", "RLX_ATTENTION_VEC4", "1", attention_vec4,
         "vector loads in the tiled attention kernel where the layout allows them"),
    ENUM("gpu.gemm_kernel", "RLX_GEMM_KERNEL", W("auto", "tiled", "loop", "ref", "coop"), gemm_kernel, 0,
         "GEMM kernel family (src/backend/webgpu/lower_gemm.h); coop: the cooperative-matrix kernel (f16 mode or "
         "f16 products) where the adapter offers cooperative matrices, else the tiled kernels"),
    STR("gpu.gemm_tile", "RLX_GEMM_TILE", "TMxTN,WGXxWGY,BK", check_gemm_tile, gemm_tile,
        "force the GEMM tile: register block, workgroup, k step (checked against the device when lowering: a product whose tile does not fit runs on the CPU, counted as a fallback; gpu.trace says why)"),
    INT("gpu.gemm_splitk", "RLX_GEMM_SPLITK", "auto", 0, 65536, gemm_splitk, OPT_AUTO,
        "k slices of the GEMMs of MatMul, Gemm and the implicit and pointwise convolutions, batched or not (0: never; "
        "auto: chosen per problem, when the grid of tiles x batch items is at most gpu.gemm_target_wg and k is long: "
        "slices for about 1.5 x gpu.gemm_target_wg workgroups)"),
    BOOL("gpu.gemm_vec4", "RLX_GEMM_VEC4", "1", gemm_vec4, "vector loads and stores in the GEMM kernels"),
    BOOL("gpu.gemm_prefetch", "RLX_GEMM_PREFETCH", "0", gemm_prefetch,
         "register prefetch of the next k tile in the loop kernel (gpu.gemm_kernel=loop; the generated kernel: "
         "gpu.gemm_pipeline)"),
    ENUM("gpu.gemm_pipeline", "RLX_GEMM_PIPELINE", W("off", "prefetch", "double"), gemm_pipeline, 0,
         "how the generated tiled GEMM overlaps the next k tile's loads with this tile's products: off (load, "
         "barrier, products, barrier), prefetch (the next tile's loads into registers before the products, stored "
         "to workgroup memory after them: two barriers per tile), double (two workgroup buffers, one barrier per "
         "tile, with the register prefetch; where twice the tiles fit the device's workgroup memory, else "
         "prefetch); the same sums in the same order: the same bits every way"),
    ENUM("gpu.gemm_conv_geometry", "RLX_GEMM_CONV_GEOMETRY", W("params", "hoist", "constants"), gemm_conv_geometry, 0,
         "the implicit convolution's operand in the generated tiled GEMM: geometry (output width, strides, "
         "dilations, pads, input size) read from the uniform Params and each output pixel's (row, column) divided "
         "out for every element of every k tile (params); the pixel's (row, column) computed once per invocation, "
         "before the k loop (hoist); hoist with the geometry as constants in the kernel (constants: cheaper index "
         "math, one pipeline per geometry); the same bits every way"),
    BOOL("gpu.gemm_unroll_k", "RLX_GEMM_UNROLL_K", "1", gemm_unroll_k, "the generated GEMM kernel unrolls its k step"),
    ENUM("gpu.f16_accumulate", "RLX_F16_ACCUMULATE", W("f32", "f16"), f16_accumulate, 0,
         "sums of f16 GEMMs (MatMul, Gemm, Conv with f16 inputs) on the generated tiled kernel: f32 accumulators fed "
         "by f32 FMAs (f32), or packed f16 FMAs into f16 partial sums over gpu.f16_block elements of k, each added "
         "into f32 accumulators (f16: meant for GPUs whose f16 FMA rate is twice their f32 rate; the error relative "
         "to the result is set by the block, not by K; a split-K slice shorter than the block bounds it; the "
         "one-row GEMV, the loop and ref kernels and the cooperative-matrix kernel keep f32 sums)"),
    INT("gpu.f16_block", "RLX_F16_BLOCK", "32", 4, 65536, f16_block, 0,
        "elements of k per f16 partial sum with gpu.f16_accumulate=f16: a multiple of 4 that divides the tile's k "
        "step or is a multiple of it (else the node runs on the CPU, counted as a fallback by the dispatch report; gpu.trace says why)"),
    INT("gpu.gemm_target_wg", "RLX_GEMM_TARGET_WG", "256", 0, 1 << 30, gemm_target_wg, 0,
        "workgroups the automatic tile and split-K choice aims for"),
    ENUM("gpu.conv_algo", "RLX_CONV_ALGO", W("auto", "direct", "im2col", "implicit"), conv_algo, 0,
         "convolution algorithm (direct = im2col + GEMM bit for bit)"),
    ENUM("gpu.dwconv_kernel", "RLX_DWCONV_KERNEL", W("gen", "loop"), dwconv_kernel, 0,
         "depthwise convolution kernel: generated with unrolled taps, or the loop kernel"),
    ENUM("gpu.runtime_checks", "RLX_GPU_RUNTIME_CHECKS", W("auto", "on", "off"), gpu_runtime_checks, 0,
         "naga's run-time checks in the WGSL shader modules (bounds checks on every storage, workgroup and array "
         "access, a bound on every loop): auto (the default; 9-16% faster models on an H200, BENCHMARKS.md) creates "
         "the kernels audited as in range (//!audited, "
         "src/backend/webgpu/README.md) without them through wgpu-native's wgpuDeviceCreateShaderModuleTrusted and "
         "checks the rest; on checks every kernel; off checks none, for measurements only (a kernel not audited may "
         "then read or write outside its operands). A WebGPU library without that entry point (Dawn, older "
         "wgpu-native) checks every kernel whatever this says; gpu.trace and rlx bench say which way each went"),
    INT("limits.max_model_bytes", "RLX_MAX_MODEL_BYTES", "auto", 0, INT64_MAX, max_model_bytes, OPT_AUTO | OPT_BYTES,
        "largest model file rlx reads, checked before reading it (auto: half of physical memory; 0: no limit; "
        "suffixes K, M, G, T)"),
    INT("limits.max_arena_bytes", "RLX_MAX_ARENA_BYTES", "auto", 0, INT64_MAX, max_arena_bytes,
        OPT_AUTO | OPT_BYTES,
        "largest activation arena of a plan, checked after the memory plan, before allocating it (auto: half of "
        "physical memory; 0: no limit)"),
    INT("limits.max_tensor_bytes", "RLX_MAX_TENSOR_BYTES", "auto", 0, INT64_MAX, max_tensor_bytes,
        OPT_AUTO | OPT_BYTES,
        "largest single tensor, checked from inferred shapes before folding or planning allocates it (auto: a "
        "quarter of physical memory; 0: no limit)"),
    INT("run.timeout_ms", "RLX_RUN_TIMEOUT_MS", "0", 0, INT64_MAX / 1000000, run_timeout_ms, 0,
        "time limit of each run in milliseconds, compiling a new plan included (0: none): a run still going "
        "then returns RLX_ERR_CANCELLED, checked between nodes, Loop and Scan iterations, GPU segments and, while "
        "a GPU plan compiles, GPU pipeline creations (one creation, one submit, is not interrupted); like "
        "rlx_session_terminate from another thread"),
    ENUM("gpu.pool_kernel", "RLX_POOL_KERNEL", W("auto", "ref"), pool_kernel, 0,
         "pooling kernels: the fast ones where they apply, or the reference kernels"),
};

#define N_OPTS RLX_ARRAY_LEN(k_opts)

struct rlx_options {
    char *val[N_OPTS];
};

static const opt_def *find(const char *key, size_t *idx) {
    for (size_t i = 0; key && i < N_OPTS; i++)
        if (strcmp(k_opts[i].key, key) == 0) {
            if (idx) *idx = i;
            return &k_opts[i];
        }
    return NULL;
}

/* The default of d as text. */
static const char *def_of(const opt_def *d) { return d->type == OPT_ENUM ? d->words[0] : d->def; }

/* The table's spelling of v among an enum's words, or NULL. */
static const char *enum_word(const opt_def *d, const char *v) {
    for (const char *const *w = d->words; *w; w++)
        if (strcmp(*w, v) == 0) return *w;
    return NULL;
}

/* An enum's words as "a|b|c" into buf. */
static const char *enum_list(const opt_def *d, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (const char *const *w = d->words; *w && at < cap; w++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", w == d->words ? "" : "|", *w);
    return buf;
}

static bool parse_bool(const char *v, bool *out) {
    static const char *const k_true[] = { "1", "true", "on", "yes" }, *const k_false[] = { "0", "false", "off", "no" };
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(v, k_true[i]) == 0) return *out = true, true;
        if (strcmp(v, k_false[i]) == 0) return *out = false, true;
    }
    return false;
}

static bool parse_int(const opt_def *d, const char *v, int64_t *out) {
    if ((d->flags & OPT_AUTO) && strcmp(v, "auto") == 0) return *out = -1, true;
    if (*v < '0' || *v > '9') return false; /* no sign, no space */
    bool hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, hex ? 16 : 10);
    if (end && *end && !hex && (d->flags & OPT_BYTES) && !end[1]) {
        const char *units = "KMGT", *u = strchr(units, *end == 'k' ? 'K' : *end);
        if (!u || !*u) return false;
        for (const char *k = units; k <= u; k++) {
            if (x > INT64_MAX / 1024) return false;
            x *= 1024;
        }
        end++;
    }
    if (!end || *end || errno == ERANGE || x < d->min || x > d->max) return false;
    *out = x;
    return true;
}

/* Parses v for d into *field (NULL: check only). `who` names the source in
 * messages ("gpu.f16" or "RLX_GPU_F16"). */
static rlx_status parse(const opt_def *d, const char *who, const char *v, void *field) {
    char buf[1024]; /* room for the longest list of choices (passes.disable's) */
    const char *why = NULL;
    bool b;
    int64_t i;
    const char *w;
    switch (d->type) {
    case OPT_BOOL:
        if (!parse_bool(v, &b)) why = "expected 1 or 0 (true/false, on/off, yes/no)";
        else if (field) *(bool *)field = b;
        break;
    case OPT_INT:
        if (!parse_int(d, v, &i)) {
            snprintf(buf, sizeof buf, "expected a whole number from %lld to %lld%s%s", (long long)d->min,
                     (long long)d->max, (d->flags & OPT_BYTES) ? " (suffixes K, M, G, T)" : "",
                     (d->flags & OPT_AUTO) ? ", or auto" : "");
            why = buf;
        } else if (field) *(int64_t *)field = i;
        break;
    case OPT_ENUM:
        if (!(w = enum_word(d, v))) {
            char list[512];
            snprintf(buf, sizeof buf, "expected one of %s", enum_list(d, list, sizeof list));
            why = buf;
        } else if (field) *(const char **)field = w;
        break;
    case OPT_STRING:
        why = d->check && *v ? d->check(v, buf, sizeof buf) : NULL;
        break;
    }
    if (!why) return RLX_OK;
    if (strcmp(who, d->key) == 0) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s='%s': %s", who, v, why);
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s='%s' (option %s): %s", who, v, d->key, why);
}

/* ------------------------------------------------------------ public API */

rlx_status rlx_options_create(rlx_options **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_options is NULL");
    *out = calloc(1, sizeof **out);
    return *out ? RLX_OK : rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
}

void rlx_options_destroy(rlx_options *o) {
    if (!o) return;
    for (size_t i = 0; i < N_OPTS; i++) free(o->val[i]);
    free(o);
}

static rlx_status unknown_key(const char *key) {
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "unknown option '%s' (`rlx options` lists the keys)", key ? key : "(null)");
}

rlx_status rlx_options_set(rlx_options *o, const char *key, const char *value) {
    if (!o) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "options is NULL");
    size_t idx;
    const opt_def *d = find(key, &idx);
    if (!d) return unknown_key(key);
    char *copy = NULL;
    if (value) {
        RLX_TRY(parse(d, d->key, value, NULL));
        if (!(copy = rlx_strdup(value))) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(o->val[idx]);
    o->val[idx] = copy;
    return RLX_OK;
}

rlx_status rlx_options_parse(rlx_options *o, const char *kv) {
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "option '%s': expected KEY=VALUE", kv ? kv : "(null)");
    char key[64];
    size_t n = (size_t)(eq - kv);
    if (n >= sizeof key) return unknown_key(kv);
    memcpy(key, kv, n);
    key[n] = 0;
    return rlx_options_set(o, key, eq + 1);
}

rlx_status rlx_options_get(const rlx_options *o, const char *key, const char **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_value is NULL");
    *out = NULL;
    size_t idx;
    if (!find(key, &idx)) return unknown_key(key);
    if (o) *out = o->val[idx];
    return RLX_OK;
}

rlx_status rlx_options_effective(const rlx_options *o, const char *key, const char **out, bool *out_from_env) {
    RLX_TRY(rlx_options_get(o, key, out));
    const char *e = *out ? NULL : rlx_getenv(find(key, NULL)->env);
    if (e && *e) *out = e;
    if (out_from_env) *out_from_env = e && *e;
    return RLX_OK;
}

size_t rlx_option_count(void) { return N_OPTS; }

rlx_status rlx_option_info_get(size_t index, rlx_option_info *out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_info is NULL");
    memset(out, 0, sizeof *out);
    if (index >= N_OPTS) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "option index %zu (there are %zu)", index, N_OPTS);
    static char ranges[N_OPTS][256]; /* the longest enum list fits */
    static const char *const k_type[] = { "bool", "int", "enum", "string" };
    const opt_def *d = &k_opts[index];
    out->key = d->key;
    out->type = k_type[d->type];
    out->values = d->values;
    /* written on each call, always the same text */
    if (d->type == OPT_INT)
        snprintf(ranges[index], sizeof ranges[index], "%lld to %lld%s", (long long)d->min, (long long)d->max,
                 (d->flags & OPT_AUTO) ? ", or auto" : "");
    if (d->type == OPT_ENUM) enum_list(d, ranges[index], sizeof ranges[index]);
    if (d->type == OPT_BOOL) out->values = "0|1";
    else if (d->type != OPT_STRING) out->values = ranges[index];
    out->default_value = def_of(d);
    out->env = d->env;
    out->doc = d->doc;
    out->per_process = (d->flags & OPT_PROCESS) != 0;
    return RLX_OK;
}

/* ------------------------------------------------------------ resolution */

/* The limits.* keys: their field, and what "auto" means. */
static const struct {
    const char *key, *flag;
    size_t off;
    unsigned auto_div; /* auto = physical memory / auto_div */
    const char *auto_doc;
} k_limits[] = {
    { "limits.max_model_bytes", "--max-model-bytes", F(max_model_bytes), 2, "half of physical memory" },
    { "limits.max_arena_bytes", "--max-arena-bytes", F(max_arena_bytes), 2, "half of physical memory" },
    { "limits.max_tensor_bytes", "--max-tensor-bytes", F(max_tensor_bytes), 4, "a quarter of physical memory" },
};

/* auto (-1) -> the share of physical memory (0, no limit, when unknown). */
static void resolve_limits(rlx_config *c) {
    uint64_t phys = rlx_physical_memory_bytes();
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_limits); i++) {
        int64_t *f = (int64_t *)((char *)c + k_limits[i].off);
        c->limit_set[i] = *f >= 0;
        if (*f < 0) *f = (int64_t)(phys / k_limits[i].auto_div);
    }
}

/* "N bytes (X.XX KiB/MiB/GiB/TiB)" with the largest unit below n; a
 * saturated UINT64_MAX (a size that overflowed) is written as such. */
static const char *bytes_str(uint64_t n, char *buf, size_t cap) {
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
    if (n == UINT64_MAX) {
        snprintf(buf, cap, "more than 2^64 bytes (the size overflows)");
        return buf;
    }
    if (n < 1024) {
        snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
        return buf;
    }
    double v = (double)n / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < RLX_ARRAY_LEN(units)) v /= 1024.0, u++;
    snprintf(buf, cap, "%llu bytes (%.2f %s)", (unsigned long long)n, v, units[u]);
    return buf;
}

rlx_status rlx_limit_check(const rlx_config *c, const char *key, uint64_t bytes, const char *what) {
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_limits); i++) {
        if (strcmp(k_limits[i].key, key) != 0) continue;
        int64_t lim = *(const int64_t *)((const char *)c + k_limits[i].off);
        if (lim <= 0 || bytes <= (uint64_t)lim) return RLX_OK;
        const opt_def *d = find(key, NULL);
        const char *src = c->limit_set[i] ? "set" : "auto:";
        char need[96], have[96];
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY,
                        "%s needs %s, more than the limit %s = %s (%s%s%s); "
                        "nothing was allocated. Raise it with the option %s=BYTES (rlx %s BYTES, or %s=BYTES; "
                        "suffixes K, M, G, T; 0: no limit)",
                        what, bytes_str(bytes, need, sizeof need), key, bytes_str((uint64_t)lim, have, sizeof have),
                        src, c->limit_set[i] ? "" : " ", c->limit_set[i] ? "" : k_limits[i].auto_doc, key,
                        k_limits[i].flag, d ? d->env : "?");
    }
    return rlx_fail(RLX_ERR_INTERNAL, "unknown limit '%s'", key);
}

rlx_status rlx_options_check_limit(const rlx_options *o, const char *key, uint64_t bytes, const char *what) {
    if (!key || !find(key, NULL)) return unknown_key(key);
    if (strncmp(key, "limits.", 7) != 0) /* it said "unknown option 'cpu.threads'" */
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                        "option '%s' is not a limit (limits.max_model_bytes, limits.max_arena_bytes or "
                        "limits.max_tensor_bytes)",
                        key);
    rlx_config *c;
    RLX_TRY(rlx_config_resolve_limits(o, &c));
    rlx_status st = rlx_limit_check(c, key, bytes, what ? what : "this");
    rlx_config_destroy(c);
    return st;
}

void rlx_config_destroy(rlx_config *c) {
    if (!c) return;
    for (size_t i = 0; i < RLX_ARRAY_LEN(c->owned); i++) free(c->owned[i]);
    free(c);
}

/* only: resolve the keys that start with it, the others take their
 * defaults (their variables are not read); NULL: every key. */
static rlx_status resolve(const rlx_options *o, const rlx_session_options *legacy, const char *only, rlx_config **out) {
    *out = NULL;
    rlx_config *c = calloc(1, sizeof *c);
    if (!c) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    size_t n_owned = 0;
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_def *d = &k_opts[i];
        bool used = !only || strncmp(d->key, only, strlen(only)) == 0;
        const char *v = o && used ? o->val[i] : NULL, *who = d->key;
        if (!v && used) {
            const char *e = rlx_getenv(d->env);
            if (e && *e) v = e, who = d->env;
        }
        if (!v && legacy && legacy->gpu_f16 && strcmp(d->key, "gpu.f16") == 0) v = "1";
        if (v) c->given[i / 64] |= (uint64_t)1 << (i % 64);
        if (!v) v = def_of(d);
        void *field = (char *)c + d->off;
        rlx_status st = parse(d, who, v, field);
        if (!st && d->type == OPT_STRING && *v) {
            char *copy = n_owned < RLX_ARRAY_LEN(c->owned) ? rlx_strdup(v) : NULL;
            if (!copy) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            else *(const char **)field = c->owned[n_owned++] = copy;
        }
        if (st) {
            rlx_config_destroy(c);
            return st;
        }
    }
    resolve_limits(c);
    *out = c;
    return RLX_OK;
}

rlx_status rlx_config_resolve(const rlx_options *o, const rlx_session_options *legacy, rlx_config **out) {
    return resolve(o, legacy, NULL, out);
}

rlx_status rlx_config_resolve_limits(const rlx_options *o, rlx_config **out) { return resolve(o, NULL, "limits.", out); }

_Static_assert(N_OPTS <= 128, "rlx_config.given holds 128 bits");

bool rlx_config_given(const rlx_config *c, const char *key) {
    size_t i;
    return c && find(key, &i) && (c->given[i / 64] >> (i % 64) & 1u);
}

rlx_status rlx_config_set(rlx_config *c, const char *key, const char *value) {
    const opt_def *d = find(key, NULL);
    for (size_t i = 0; !d && key && i < N_OPTS; i++)
        if (strcmp(k_opts[i].env, key) == 0) d = &k_opts[i];
    if (!d) return unknown_key(key);
    size_t bit = (size_t)(d - k_opts);
    uint64_t mask = (uint64_t)1 << (bit % 64);
    bool given = value != NULL;
    if (!value) value = def_of(d);
    void *field = (char *)c + d->off;
    RLX_TRY(parse(d, d->key, value, field));
    c->given[bit / 64] = given ? c->given[bit / 64] | mask : c->given[bit / 64] & ~mask;
    if (d->type == OPT_INT) resolve_limits(c);
    if (d->type != OPT_STRING) return RLX_OK;
    char **slot = NULL; /* the owned copy the field points at, else a free one */
    for (size_t i = 0; i < RLX_ARRAY_LEN(c->owned); i++)
        if (c->owned[i] && c->owned[i] == *(char **)field) slot = &c->owned[i];
    for (size_t i = 0; !slot && i < RLX_ARRAY_LEN(c->owned); i++)
        if (!c->owned[i]) slot = &c->owned[i];
    char *copy = *value ? rlx_strdup(value) : NULL;
    if (!slot || (*value && !copy)) {
        free(copy);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(*slot);
    *(const char **)field = *slot = copy;
    return RLX_OK;
}

int64_t rlx_config_env_int(const char *key, int64_t fallback) {
    const opt_def *d = find(key, NULL);
    const char *e = d ? rlx_getenv(d->env) : NULL;
    int64_t x;
    return e && *e && d->type == OPT_INT && parse_int(d, e, &x) ? x : fallback;
}

const char *rlx_config_env_enum(const char *key, const char *fallback) {
    const opt_def *d = find(key, NULL);
    const char *e = d ? rlx_getenv(d->env) : NULL;
    const char *w = e && *e && d->type == OPT_ENUM ? enum_word(d, e) : NULL;
    return w ? w : fallback;
}

bool rlx_config_progress(const rlx_config *cfg) {
    if (!cfg || !cfg->progress || strcmp(cfg->progress, "off") == 0) return false;
    return strcmp(cfg->progress, "on") == 0 || rlx_stderr_is_tty();
}
