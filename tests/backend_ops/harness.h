/* The backend-ops harness (test_backend_ops): for every op with a WebGPU
 * lowering and every fusion pattern, generators of cases that sweep
 * attributes, shapes and dtypes; each case runs on the GPU backend and on
 * the CPU backend (the oracle) through the public API, and the outputs are
 * compared with the op's stated tolerance. The idea is ggml's
 * test-backend-ops; the code is rlx's own. docs/backend-ops.md explains how
 * to run it and what it checks.
 *
 * A generator is a function of the context that loops over its parameter
 * space and, per case, asks bo_next for a case: NULL means the case is not
 * selected (counting, --case, another op), so the generator skips
 * building it; otherwise it builds a model through the builder helpers
 * below and hands it to bo_run. Case numbers are the order of bo_next calls
 * within one op's generator, so they depend on --full but not on the seed:
 * `--op NAME --case K --seed S [--full]` reruns one case with the same
 * inputs (each case's RNG is seeded from S, the op's name and K).
 *
 * A case marked BO_XFAIL (a known bug) may fail in the quick run without
 * failing the program; the full run counts it (and -v says when a marked
 * case passed).
 *
 * Each run: the model is finished (shapes inferred), run once on a CPU
 * session with every optional pass off (the oracle), twice on a GPU
 * session with the arena poisoned with NaN (option gpu.poison) so an
 * element no kernel writes fails; the two GPU runs must agree bit for bit,
 * the plan must run every step on the GPU (no CPU fallback) and the op
 * under test must be one of them (not folded away); each variant
 * (bo_variant, --variant) runs once more and gives the same bits. Fusion cases also run
 * the GPU with the passes off and the CPU with them on, all against the
 * oracle. */
#ifndef RLX_TESTS_BACKEND_OPS_HARNESS_H
#define RLX_TESTS_BACKEND_OPS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/rlx.h"

#define BO_MAX_IO 16
#define BO_MAX_OPTS 8
#define BO_MAX_VARIANTS 8

typedef struct bo_ctx bo_ctx;

/* A shape (rank <= 8). */
typedef struct bo_shape {
    int rank;
    int64_t d[8];
} bo_shape;


/* Flags of a case. */
enum {
    BO_FALLBACK_OK = 1u << 0, /* the GPU may leave nodes to the CPU (a case about a decline) */
    BO_XFAIL = 1u << 1,       /* a known bug (bo_xfail): a failure in the quick run is expected */
    BO_EXPECT_ERROR = 1u << 2,/* both backends must refuse the run (e.g. an index out of range) */
    BO_NO_BITS = 1u << 3,     /* skip the bit-for-bit determinism check (atomics) */
    BO_VIEW_OK = 1u << 4,     /* the op under test may be a view step (Reshape of a graph input) */
    BO_KEEPS_NAN = 1u << 5,   /* output 0 has feed 0's shape and is NaN wherever feed 0 is (an elementwise
                                 op that propagates NaN, as onnxruntime): checked on the oracle, so that an
                                 oracle dropping NaN (max(x, 0)) fails even where the GPU agrees with it */
    BO_SPREADS_NAN = 1u << 6, /* some element of output 0 is NaN when feed 0 holds a NaN (a Conv or Gemm
                                 with a NaN-keeping epilogue): checked on the oracle */
    BO_SAME_VALUE = 1u << 7,  /* float outputs hold the oracle's values exactly: NaN where it has NaN (any
                                 payload), zeros of its sign, the same value elsewhere (the tolerances do not
                                 apply): ops that pick an element (max, min, Clip) fed bo_specials */
};

/* One case: a model (one node, or a small graph for fusions), its feeds,
 * the tolerance and what must run on the GPU. Built by the helpers below
 * between bo_next and bo_run; owned by the context. */
typedef struct bo_case {
    rlx_model *m;
    rlx_model *mz;           /* the same model with every f32 subnormal of its initializers flushed to a zero
                                of its sign (the flushed oracle's; built beside m) */
    bool konst_subnormal;    /* an initializer of m holds an f32 subnormal */
    int n_feed;
    char feed_name[BO_MAX_IO][12];
    rlx_tensor *feed[BO_MAX_IO];
    int n_values;            /* names handed out (x0, k1, n2_0, ...) */
    int n_nodes;
    int n_outputs;
    double rtol, atol;       /* |gpu - cpu| <= atol + rtol |cpu|; NaN == NaN, inf == inf of the same sign */
    unsigned flags;
    const char *expect_op;   /* op type that must run on the GPU ("rlx.Attention"); NULL: the op under test */
    const char *fused;       /* a fusion case: the op type that must run on the GPU after the passes (fewer
                                steps than unfused; compared passes on and off, GPU and CPU) */
    const char *xfail_why;
    int n_opts;
    const char *opts[BO_MAX_OPTS]; /* "key=value" options of the GPU sessions (static strings) */
    int n_variants;
    const char *variants[BO_MAX_VARIANTS]; /* bo_variant: "key=value[ key=value]" (static strings) */
    char desc[512];
    rlx_status st;           /* first builder error (reported by bo_run) */
    char *strs[256];         /* names handed out, freed with the case */
    int n_strs;
    /* bo_nan_windows: output 0 (f32 or f16, [N, C, spatial...] of feed 0's
     * [N, C, spatial...]) must be NaN exactly where its window holds a NaN
     * of feed 0; checked on the oracle (so an oracle that drops NaN fails
     * where the GPU agrees with it) */
    bool nan_windows;
    int nan_sr;              /* spatial axes */
    int64_t nan_k[3], nan_s[3], nan_d[3], nan_pb[3]; /* kernel, strides, dilations, begin pads */
} bo_case;

/* A generator registered under an op type (or a pattern name). */
typedef struct bo_op {
    const char *name;        /* op type as the catalogue names it ("Pad", "rlx.Attention"); a fusion
                                pattern "fuse:<pass>:<what>" */
    void (*gen)(bo_ctx *ctx, const void *arg);
    const void *arg;         /* handed to gen (a row of a family's table) */
    double rtol, atol;       /* default tolerance of its cases */
    const char *tol_why;     /* why that tolerance (docs/backend-ops.md prints it) */
} bo_op;

/* The families (one cases_*.c each). */
typedef struct bo_family {
    const char *name;
    const bo_op *ops;
    size_t n_ops;
} bo_family;

extern const bo_family bo_family_elementwise, bo_family_logic, bo_family_tensor, bo_family_index, bo_family_nn,
    bo_family_reduce, bo_family_gemm, bo_family_attention, bo_family_fusion, bo_family_f16;

/* ------------------------------------------------------------ generators */

/* The next case of the current op at `opset`: NULL when it is not to be
 * built (count mode, --case selects another); else a fresh case whose RNG
 * is seeded for it. */
bo_case *bo_next(bo_ctx *ctx, int opset);
/* The name of the op being generated (generators shared by a table). */
const char *bo_op_name(const bo_ctx *ctx);
/* True in the full sweep (--full). */
bool bo_full(const bo_ctx *ctx);
/* The GPU adapter's workgroup memory limit in bytes (0 when not known, as with --list). */
uint32_t bo_wg_storage(const bo_ctx *ctx);
/* Builds and runs case c (from bo_next), compares, reports, frees it. */
void bo_run(bo_ctx *ctx, bo_case *c);

/* Appends printf-style text to the case's description (shapes,
 * attributes), printed with -v and with a failure. */
void bo_desc(bo_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds an option (static "key=value") to the case's GPU sessions. */
void bo_opt(bo_case *c, const char *key_value);
/* A variant of the case's GPU sessions that must give the same bits as
 * the case's GPU run: options (static "key=value", several separated by
 * spaces) added after the case's own; its plan, too, must run every step
 * on the GPU. Like `--variant`, which adds one to every case. */
void bo_variant(bo_case *c, const char *options);
/* Marks the case a known bug (BO_XFAIL) with the reason. */
void bo_xfail(bo_case *c, const char *why);

/* Graph input holding `t` (adopted; the feed of every run); returns its
 * name (valid while the case lives). */
const char *bo_input(bo_case *c, rlx_tensor *t);
/* Initializer holding `t` (adopted); returns its name. */
const char *bo_const(bo_case *c, rlx_tensor *t);
/* Input (konst false) or initializer (konst true); NULL t: "" (an omitted
 * optional input). */
const char *bo_value(bo_case *c, rlx_tensor *t, bool konst);
/* Appends a node of `op`; ins are names ("" omitted), n_out outputs named
 * by the harness; returns the name of output 0 (the others:
 * bo_out_name). */
const char *bo_node(bo_case *c, const char *op, int n_in, const char *const *ins, int n_out, size_t n_attrs,
                    const rlx_attr *attrs);
/* Transpose of x (rank r) by perm; returns its output's name. */
const char *bo_transpose(bo_case *c, const char *x, int r, const int64_t *perm);
/* Attention operands split into heads as exporters do: graph inputs Q [B,
 * Sq, H, D], K [B, Sk, H, D] and V [B, Sk, H, Dv] of dtype dt (bo_rand in
 * [-1, 1), in that order), transposed to *q [B, H, Sq, D], *kt [B, H, D,
 * Sk] and *v [B, H, Sk, Dv]. */
void bo_heads_split(bo_case *c, rlx_dtype dt, const int64_t bhsd[5], int64_t Dv, const char **q, const char **kt,
                    const char **v);
/* Attention's end: Softmax(scores) over the last axis times v, merged
 * back from heads ([B, H, S, D] -> [B, S, H, D]) when split; a graph
 * output. */
void bo_attention_out(bo_case *c, const char *scores, const char *v, bool split);
/* Name of output k of the last node added. */
const char *bo_out_name(bo_case *c, int k);
/* Marks a value a graph output. */
void bo_output(bo_case *c, const char *name);
/* One-node case: inputs (NULL: omitted; adopted) that are initializers
 * where konst[i] (konst NULL: all graph inputs), n_out outputs, all graph
 * outputs. */
void bo_single(bo_case *c, const char *op, int n_in, rlx_tensor *const *in, const bool *konst, int n_out,
               size_t n_attrs, const rlx_attr *attrs);

/* ------------------------------------------------------------ tensors */

/* A float tensor (f32, f64, f16) with values uniform in [lo, hi) from the
 * case's RNG, never exactly 0 unless lo == hi == 0. */
rlx_tensor *bo_rand(rlx_dtype dt, int rank, const int64_t *dims, double lo, double hi);
/* Random integers in [lo, hi] of dtype dt (i32, i64, u32, bool, u8). */
rlx_tensor *bo_rand_int(rlx_dtype dt, int rank, const int64_t *dims, int64_t lo, int64_t hi);
/* bo_rand for float dtypes, bo_rand_int (bounds rounded) for the others. */
rlx_tensor *bo_rand_any(rlx_dtype dt, const bo_shape *s, double lo, double hi);
/* Replaces about one element in `every` (at least one) of an f32 tensor
 * with a value at the edges: +-inf, NaN, -0, denormals, +-65504 (f16 max),
 * +-3.4e38, +-2^31. */
void bo_edges(rlx_tensor *t, int every);
/* Sets element i (flat, row-major) of a float tensor (f32, f64, f16) to
 * v: a special value at a chosen position (NaN, +-inf and -0 stay so in
 * every dtype). */
void bo_set(rlx_tensor *t, size_t i, double v);

/* Asks that output 0 of c be NaN exactly where its pooling window (sr
 * spatial axes: kernel k, strides s, dilations d, begin pads pb; NULL d:
 * 1) holds a NaN of feed 0 (MaxPool, GlobalMaxPool: NaN propagates). */
void bo_nan_windows(bo_case *c, int sr, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb);
/* Special values for ops that pick an element (max, min, arg max, Clip):
 * rewrites a float tensor (f32, f64, f16) by blocks of `block` consecutive
 * elements (a pool's plane, a reduced row; 0: the whole tensor), block k
 * as k % 8 says: 0 each element NaN, -inf, +inf, -0, +0, -1, 1 or kept;
 * 1 all -inf; 2 all +inf; 3 -0 and +0 (half), -1 and -inf (the maximum
 * a tie of zeros); 4 -0 and +0, 1 and +inf (the minimum a tie of zeros);
 * 5 -inf with NaN in four; 6 its values with NaN in four and zeros in
 * eight; 7 all NaN. The positions are random (the case's RNG): windows
 * and rows start with NaN, hold one in the middle, tie -0 with +0. */
void bo_specials(rlx_tensor *t, size_t block);
/* A tensor from values (copied). */
rlx_tensor *bo_tensor(rlx_dtype dt, int rank, const int64_t *dims, const void *values);
/* A 1-D i64 tensor. */
rlx_tensor *bo_i64s(int n, const int64_t *v);
/* A scalar (rank 0) tensor of dt holding v. */
rlx_tensor *bo_scalar(rlx_dtype dt, double v);
/* The case RNG: uniform in [0, n). */
uint64_t bo_rand_below(uint64_t n);
/* Uniform double in [lo, hi). */
double bo_uniform(double lo, double hi);

/* The shapes of a sweep over one tensor: scalar, size-1 dims, odd and
 * prime sizes, an axis longer than a workgroup (> 256), rank 6, empty;
 * the full sweep adds more and one of more than 65,535 workgroups of 64
 * elements. Returns the count; *out is static. */
size_t bo_std_shapes(const bo_ctx *ctx, const bo_shape **out);
/* n shapes that broadcast (numpy rules) to a random shape of rank `rank`
 * (dims from {1, 2, 3, 5, 7}, some inputs of lower rank, some dims 1);
 * the result shape in *out. */
void bo_broadcast(int rank, int n, bo_shape *out, bo_shape *ins);
/* Number of elements of a shape. */
int64_t bo_numel(const bo_shape *s);

/* "[2,3,4]" into buf. */
const char *bo_shape_str(int rank, const int64_t *dims, char *buf, size_t cap);

/* Generators that two families share: GridSample's cases (cases_nn.c) on
 * f32 (arg NULL) or on the rlx_dtype arg points to (the f16 family). */
void bo_gen_gridsample(bo_ctx *ctx, const void *arg);

#define BO_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
