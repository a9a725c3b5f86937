/* oneDNN against rlx's own CPU kernels, shape by shape, in one process
 * (issue 13: "choose between your own kernels and a library made for this
 * by measurement"). For each shape the same random inputs go to:
 *
 *   rlx      the Conv / MatMul node on rlx's fast paths, weights packed as
 *            at compile time (rlx_cpu_prepare_node, rlx_cpu_run_node_packed);
 *   nchw     oneDNN's f32 convolution on rlx's layouts (src nchw, weights
 *            oihw / goihw, dst nchw): a drop-in kernel inside rlx's NCHW
 *            arena; for MatMul weights in plain row-major [K, N];
 *   blk      oneDNN's preferred layouts (format_tag any for src, weights and
 *            dst; for MatMul the weights only), the weights reordered once
 *            beforehand (as compile-time packing); the convolution alone,
 *            src and dst already blocked: reorders EXCLUDED;
 *   blk+r    the same, with the reorders of src (nchw -> blocked) and dst
 *            (blocked -> nchw) of every call timed: reorders INCLUDED
 *            (what one oneDNN convolution costs between rlx's NCHW nodes);
 *   wino+r   oneDNN's Winograd (dnnl_convolution_winograd; F(4x4, 3x3) or
 *            F(2x2, 3x3), its choice) in its blocked layouts, reorders
 *            included, on 3x3 stride-1 single-group shapes only.
 *
 * Convolutions fuse bias and the activation in both libraries (oneDNN: an
 * eltwise post-op), pads k/2, no residual. MatMul: no bias. Timing: per
 * round and variant one untimed call, then REPS timed calls and their
 * minimum; rounds interleave the variants (rlx, nchw, blk, blk+r, rlx, ...),
 * and the median of the rounds' minima is printed, in microseconds (--min:
 * the fastest call of all rounds, for a machine busy with other work). Clock:
 * at one thread the calling thread's CPU time (both libraries then run on
 * the caller alone: time-sharing with other processes does not count),
 * on more threads wall time (--wall: wall time at one thread too). On more
 * threads each variant's calls start after a pause (--gap, default 50 ms)
 * in which the other library's idle workers stop spinning: libgomp's, as
 * packaged (OMP_WAIT_POLICY unset), spin for milliseconds after a parallel
 * region and would otherwise hold a core while rlx's next calls run. Both
 * outputs are compared (max |rlx - oneDNN| / max |rlx|, "diff").
 *
 *   build/tests/onednn_bench [--threads N] [--rounds R] [--reps K] [--gap MS]
 *                            [--wall] [--min] [--cold] [SHAPE ...]
 *
 * SHAPE: c:N:CIN:COUT:H:K:S[:GROUP[:ACT]] (square input H x H, ACT 0 none,
 * 1 Relu (default), 2 Clip(0, 6)) or m:M:K:N; default: the list below
 * (ResNet-50, MobileNetV2, SqueezeNet, BERT-base). --threads: rlx's pool
 * limit and oneDNN's OpenMP threads (omp_set_num_threads), default 1;
 * --cold writes 64 MiB before every timed call (caches evicted). Output: a
 * markdown table: "rlx/dnnl" = rlx / the fastest oneDNN variant that reads
 * and writes NCHW (nchw, blk+r, wino+r; for MatMul nchw and blk), "rlx/blk"
 * = rlx / blk (oneDNN with every tensor in its own layout, as an engine
 * built on oneDNN throughout would run); above 1: oneDNN faster. Also the
 * oneDNN implementation each variant got.
 *
 * Built only where oneDNN is installed (Debian: apt-get install
 * libdnnl-dev; CMake finds dnnl.h and libdnnl and adds this target to
 * tests/ when it finds dnnl.h, libdnnl and OpenMP: rebuild with
 * `cmake -S . -B build && cmake --build build --target onednn_bench`);
 * nothing else links oneDNN, and neither the library nor CI needs it. */
#define _POSIX_C_SOURCE 200809L
#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/ops/act.h"
#include "rlx/inspect.h"
#include "test.h"
#include "test_node.h"

/* kind 'c': convolution n x cin x h x h -> cout, k x k, stride s;
 * kind 'm': MatMul [m, k] x [k, n] (fields n, cin, cout reused). */
typedef struct shape {
    const char *label;
    char kind;
    long n, cin, cout, h, k, s, grp, act;
} shape;

#define CONV(l, n, ci, co, h, k, s, g, a) { l, 'c', n, ci, co, h, k, s, g, a }
#define MM(l, m, k, n) { l, 'm', m, k, n, 0, 0, 0, 1, 0 }

static const shape k_default[] = {
    /* ResNet-50 (v1.5: stride in the 3x3), batch 1 and 8 */
    CONV("R50", 1, 3, 64, 224, 7, 2, 1, 1),
    CONV("R50", 1, 64, 256, 56, 1, 1, 1, 1),
    CONV("R50", 1, 256, 64, 56, 1, 1, 1, 1),
    CONV("R50", 1, 64, 64, 56, 3, 1, 1, 1),
    CONV("R50", 1, 512, 128, 28, 1, 1, 1, 1),
    CONV("R50", 1, 128, 128, 28, 3, 1, 1, 1),
    CONV("R50", 1, 256, 1024, 14, 1, 1, 1, 1),
    CONV("R50", 1, 256, 256, 14, 3, 1, 1, 1),
    CONV("R50", 1, 2048, 512, 7, 1, 1, 1, 1),
    CONV("R50", 1, 512, 512, 7, 3, 1, 1, 1),
    CONV("R50", 8, 3, 64, 224, 7, 2, 1, 1),
    CONV("R50", 8, 64, 256, 56, 1, 1, 1, 1),
    CONV("R50", 8, 64, 64, 56, 3, 1, 1, 1),
    CONV("R50", 8, 512, 128, 28, 1, 1, 1, 1),
    CONV("R50", 8, 128, 128, 28, 3, 1, 1, 1),
    CONV("R50", 8, 256, 1024, 14, 1, 1, 1, 1),
    CONV("R50", 8, 256, 256, 14, 3, 1, 1, 1),
    CONV("R50", 8, 2048, 512, 7, 1, 1, 1, 1),
    CONV("R50", 8, 512, 512, 7, 3, 1, 1, 1),
    /* MobileNetV2: depthwise 3x3 (Clip 0..6) and pointwise */
    CONV("MV2", 1, 32, 32, 112, 3, 1, 32, 2),
    CONV("MV2", 1, 96, 96, 112, 3, 2, 96, 2),
    CONV("MV2", 1, 144, 144, 56, 3, 1, 144, 2),
    CONV("MV2", 1, 144, 144, 56, 3, 2, 144, 2),
    CONV("MV2", 1, 192, 192, 28, 3, 1, 192, 2),
    CONV("MV2", 1, 384, 384, 14, 3, 1, 384, 2),
    CONV("MV2", 1, 576, 576, 14, 3, 2, 576, 2),
    CONV("MV2", 1, 960, 960, 7, 3, 1, 960, 2),
    CONV("MV2", 1, 32, 16, 112, 1, 1, 1, 0),
    CONV("MV2", 1, 16, 96, 112, 1, 1, 1, 2),
    CONV("MV2", 1, 144, 24, 56, 1, 1, 1, 0),
    CONV("MV2", 1, 24, 144, 56, 1, 1, 1, 2),
    CONV("MV2", 1, 32, 192, 28, 1, 1, 1, 2),
    CONV("MV2", 1, 64, 384, 14, 1, 1, 1, 2),
    CONV("MV2", 1, 160, 960, 7, 1, 1, 1, 2),
    CONV("MV2", 1, 320, 1280, 7, 1, 1, 1, 2),
    /* SqueezeNet 1.1, fire2's expand 3x3 */
    CONV("SqN", 1, 16, 64, 55, 3, 1, 1, 1),
    /* BERT-base, 128 tokens: QKV / attention output, FFN up, FFN down */
    MM("BERT", 128, 768, 768),
    MM("BERT", 128, 768, 3072),
    MM("BERT", 128, 3072, 768),
};

/* the variants, in the order each round runs them */
enum { V_RLX, V_NCHW, V_BLK, V_BLKR, V_WINO, N_VAR };

static bool g_cpu_clock;
static bool g_min; /* --min: the fastest call of all rounds, not the median of the rounds' minima */
static int g_gap_ms = -1; /* --gap: pause before each variant's calls, -1: 50 ms on more than one thread */

static double now_us(void) {
    if (!g_cpu_clock) return rlx_now_seconds() * 1e6;
    return test_thread_cpu_seconds() * 1e6;
}

#define FLUSH_BYTES ((size_t)64 << 20)

/* Stops the program on a oneDNN error, naming the call. */
#define DN(call)                                                                       \
    do {                                                                               \
        dnnl_status_t st_ = (call);                                                    \
        if (st_ != dnnl_success) {                                                     \
            fprintf(stderr, "onednn_bench: %s failed (status %d)\n", #call, (int)st_); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* One oneDNN primitive and its arguments. */
typedef struct dn_step {
    dnnl_primitive_t prim;
    dnnl_exec_arg_t args[5];
    int n_args;
} dn_step;

/* A oneDNN variant: up to three steps run in order (reorder, compute,
 * reorder); impl names the compute step's implementation. */
typedef struct dn_run {
    dn_step step[3];
    int n_steps;
    char impl[64];
} dn_run;

typedef struct dn_ctx {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
} dn_ctx;

static void dn_exec(dn_ctx *c, const dn_run *r) {
    for (int i = 0; i < r->n_steps; i++)
        DN(dnnl_primitive_execute(r->step[i].prim, c->strm, r->step[i].n_args, r->step[i].args));
    DN(dnnl_stream_wait(c->strm));
}

static void dn_run_free(dn_run *r) {
    for (int i = 0; i < r->n_steps; i++) dnnl_primitive_destroy(r->step[i].prim);
    r->n_steps = 0;
}

/* A memory on `md`: wrapping `data` when given, else allocated by oneDNN. */
static dnnl_memory_t dn_mem(dn_ctx *c, const dnnl_memory_desc_t *md, void *data) {
    dnnl_memory_t m;
    DN(dnnl_memory_create(&m, md, c->eng, data ? data : DNNL_MEMORY_ALLOCATE));
    return m;
}

/* Appends a reorder from memory `from` to memory `to` to r, or with r
 * NULL runs it once now (weights packed beforehand, a blocked src). */
static void dn_reorder(dn_ctx *c, dn_run *r, dnnl_memory_t from, dnnl_memory_t to) {
    const dnnl_memory_desc_t *fmd, *tmd;
    DN(dnnl_memory_get_memory_desc(from, &fmd));
    DN(dnnl_memory_get_memory_desc(to, &tmd));
    dnnl_primitive_desc_t pd;
    DN(dnnl_reorder_primitive_desc_create(&pd, fmd, c->eng, tmd, c->eng, NULL));
    dn_step s = { .n_args = 2 };
    DN(dnnl_primitive_create(&s.prim, pd));
    dnnl_primitive_desc_destroy(pd);
    s.args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, from };
    s.args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, to };
    if (r) {
        r->step[r->n_steps++] = s;
        return;
    }
    DN(dnnl_primitive_execute(s.prim, c->strm, s.n_args, s.args));
    DN(dnnl_stream_wait(c->strm));
    dnnl_primitive_destroy(s.prim);
}

static void dn_impl(const_dnnl_primitive_desc_t pd, dn_run *r) {
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name) name = "?";
    snprintf(r->impl, sizeof r->impl, "%s", name);
}

/* The memories a shape's oneDNN variants own (freed after the shape). */
typedef struct dn_mems {
    dnnl_memory_t m[32];
    int n;
} dn_mems;

static dnnl_memory_t keep(dn_mems *k, dnnl_memory_t m) {
    k->m[k->n++] = m;
    return m;
}

/* A oneDNN convolution of shape sh on x, w, b (rlx's NCHW / OIHW buffers),
 * writing y (NCHW), by algorithm alg (direct or Winograd). blocked: src, weights and dst in the layouts oneDNN
 * prefers, the weights reordered into theirs now; with_reorders adds the
 * reorders of src and dst to the run. */
static void dn_conv(dn_ctx *c, const shape *sh, float *x, float *w, float *b, float *y, dnnl_alg_kind_t alg,
                    bool blocked, bool with_reorders, dn_run *r, dn_mems *k) {
    long oh = (sh->h + 2 * (sh->k / 2) - sh->k) / sh->s + 1;
    dnnl_dims_t xd = { sh->n, sh->cin, sh->h, sh->h }, yd = { sh->n, sh->cout, oh, oh }, bd = { sh->cout };
    dnnl_dims_t st = { sh->s, sh->s }, pad = { sh->k / 2, sh->k / 2 };
    dnnl_dims_t wd = { sh->cout, sh->cin, sh->k, sh->k };
    dnnl_dims_t gwd = { sh->grp, sh->cout / sh->grp, sh->cin / sh->grp, sh->k, sh->k };
    dnnl_memory_desc_t xu, wu, bu, yu, xm, wm, ym;
    DN(dnnl_memory_desc_init_by_tag(&xu, 4, xd, dnnl_f32, dnnl_nchw));
    DN(dnnl_memory_desc_init_by_tag(&yu, 4, yd, dnnl_f32, dnnl_nchw));
    DN(dnnl_memory_desc_init_by_tag(&bu, 1, bd, dnnl_f32, dnnl_x));
    if (sh->grp > 1)
        DN(dnnl_memory_desc_init_by_tag(&wu, 5, gwd, dnnl_f32, dnnl_goihw));
    else
        DN(dnnl_memory_desc_init_by_tag(&wu, 4, wd, dnnl_f32, dnnl_oihw));
    xm = xu, wm = wu, ym = yu;
    if (blocked) {
        DN(dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_f32, dnnl_format_tag_any));
        DN(dnnl_memory_desc_init_by_tag(&ym, 4, yd, dnnl_f32, dnnl_format_tag_any));
        if (sh->grp > 1)
            DN(dnnl_memory_desc_init_by_tag(&wm, 5, gwd, dnnl_f32, dnnl_format_tag_any));
        else
            DN(dnnl_memory_desc_init_by_tag(&wm, 4, wd, dnnl_f32, dnnl_format_tag_any));
    }
    dnnl_convolution_desc_t cd;
    DN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &xm, &wm, &bu, &ym,
                                          st, pad, pad));
    dnnl_post_ops_t po;
    dnnl_primitive_attr_t attr;
    DN(dnnl_post_ops_create(&po));
    if (sh->act == 1) DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
    if (sh->act == 2) DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f));
    DN(dnnl_primitive_attr_create(&attr));
    DN(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_desc_create(&pd, &cd, attr, c->eng, NULL));
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    dn_impl(pd, r);

    dnnl_memory_t xu_m = keep(k, dn_mem(c, &xu, x)), wu_m = keep(k, dn_mem(c, &wu, w)),
                  bu_m = keep(k, dn_mem(c, &bu, b)), yu_m = keep(k, dn_mem(c, &yu, y));
    dnnl_memory_t xs = xu_m, ws = wu_m, ys = yu_m;
    if (blocked) {
        xs = keep(k, dn_mem(c, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), NULL));
        ws = keep(k, dn_mem(c, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), NULL));
        ys = keep(k, dn_mem(c, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), NULL));
        dn_reorder(c, NULL, wu_m, ws);
        dn_reorder(c, with_reorders ? r : NULL, xu_m, xs);
    }
    dn_step s = { .n_args = 4 };
    DN(dnnl_primitive_create(&s.prim, pd));
    dnnl_primitive_desc_destroy(pd);
    s.args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, xs };
    s.args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, ws };
    s.args[2] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, bu_m };
    s.args[3] = (dnnl_exec_arg_t){ DNNL_ARG_DST, ys };
    r->step[r->n_steps++] = s;
    if (blocked && with_reorders) dn_reorder(c, r, ys, yu_m);
}

/* A oneDNN MatMul [m, kk] x [kk, nn] on rlx's row-major a, bmat, writing
 * y; blocked: the weights in oneDNN's preferred layout, reordered now. */
static void dn_matmul(dn_ctx *c, const shape *sh, float *a, float *bmat, float *y, bool blocked, dn_run *r,
                      dn_mems *k) {
    dnnl_dims_t ad = { sh->n, sh->cin }, bd = { sh->cin, sh->cout }, yd = { sh->n, sh->cout };
    dnnl_memory_desc_t au, bu, yu, bm;
    DN(dnnl_memory_desc_init_by_tag(&au, 2, ad, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&bu, 2, bd, dnnl_f32, dnnl_ab));
    DN(dnnl_memory_desc_init_by_tag(&yu, 2, yd, dnnl_f32, dnnl_ab));
    bm = bu;
    if (blocked) DN(dnnl_memory_desc_init_by_tag(&bm, 2, bd, dnnl_f32, dnnl_format_tag_any));
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &au, &bm, NULL, &yu));
    dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_desc_create(&pd, &md, NULL, c->eng, NULL));
    dn_impl(pd, r);
    dnnl_memory_t au_m = keep(k, dn_mem(c, &au, a)), bu_m = keep(k, dn_mem(c, &bu, bmat)),
                  yu_m = keep(k, dn_mem(c, &yu, y)), bs = bu_m;
    if (blocked) {
        bs = keep(k, dn_mem(c, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), NULL));
        dn_reorder(c, NULL, bu_m, bs);
    }
    dn_step s = { .n_args = 3 };
    DN(dnnl_primitive_create(&s.prim, pd));
    dnnl_primitive_desc_destroy(pd);
    s.args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, au_m };
    s.args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, bs };
    s.args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, yu_m };
    r->step[r->n_steps++] = s;
}

/* max |a - b| / max |a| over n floats. */
static double rel_diff(const float *a, const float *b, size_t n) {
    double d = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        m = fmax(m, fabs((double)a[i]));
    }
    return m > 0.0 ? d / m : d;
}

static int usage(const char *why) {
    fprintf(stderr,
            "onednn_bench: %s\nusage: onednn_bench [--threads N] [--rounds R] [--reps K] [--gap MS] [--wall] [--min] [--cold] "
            "[c:N:CIN:COUT:H:K:S[:GROUP[:ACT]] | m:M:K:N ...]\n",
            why);
    return 2;
}

static bool parse_shape(const char *s, shape *out) {
    memset(out, 0, sizeof *out);
    out->label = "";
    out->grp = 1, out->act = 1;
    if (s[0] == 'm' && s[1] == ':') {
        out->kind = 'm';
        return sscanf(s + 2, "%ld:%ld:%ld", &out->n, &out->cin, &out->cout) == 3 && out->n > 0 && out->cin > 0 &&
               out->cout > 0;
    }
    if (s[0] != 'c' || s[1] != ':') return false;
    out->kind = 'c';
    int got = sscanf(s + 2, "%ld:%ld:%ld:%ld:%ld:%ld:%ld:%ld", &out->n, &out->cin, &out->cout, &out->h, &out->k,
                     &out->s, &out->grp, &out->act);
    return got >= 6 && out->n > 0 && out->cin > 0 && out->cout > 0 && out->h > 0 && out->k > 0 && out->s > 0 &&
           out->grp > 0 && out->cin % out->grp == 0 && out->cout % out->grp == 0 && out->act >= 0 && out->act <= 2 &&
           out->h + 2 * (out->k / 2) >= out->k;
}

/* Times one shape and prints its table row. */
static int bench_shape(dn_ctx *c, const shape *sh, int rounds, int reps, unsigned char *flush) {
    bool conv = sh->kind == 'c';
    long oh = conv ? (sh->h + 2 * (sh->k / 2) - sh->k) / sh->s + 1 : 0;
    int64_t xd[4] = { sh->n, sh->cin, sh->h, sh->h }, wd[4] = { sh->cout, sh->cin / sh->grp, sh->k, sh->k },
            bd[1] = { sh->cout }, yd[4] = { sh->n, sh->cout, oh, oh };
    int64_t ad[2] = { sh->n, sh->cin }, bmd[2] = { sh->cin, sh->cout }, ymd[2] = { sh->n, sh->cout };
    int64_t ks[2] = { sh->k, sh->k }, st[2] = { sh->s, sh->s };
    int64_t pads[4] = { sh->k / 2, sh->k / 2, sh->k / 2, sh->k / 2 };
    rlx_node_attr at[6];
    memset(at, 0, sizeof at);
    int n_at = 0;
    rlx_node node;
    rlx_tensor *x, *w, *b = NULL, *y;
    double macs;
    if (conv) {
        at[0].name = "kernel_shape", at[0].type = RLX_ATTR_INTS, at[0].n = 2, at[0].ints = ks;
        at[1].name = "strides", at[1].type = RLX_ATTR_INTS, at[1].n = 2, at[1].ints = st;
        at[2].name = "pads", at[2].type = RLX_ATTR_INTS, at[2].n = 4, at[2].ints = pads;
        at[3].name = "group", at[3].type = RLX_ATTR_INT, at[3].i = sh->grp;
        n_at = 4;
        if (sh->act) {
            at[n_at].name = "_rlx_act", at[n_at].type = RLX_ATTR_INT;
            at[n_at++].i = sh->act == 2 ? RLX_ACT_CLIP : RLX_ACT_RELU;
        }
        if (sh->act == 2) at[n_at].name = "_rlx_act_beta", at[n_at].type = RLX_ATTR_FLOAT, at[n_at++].f = 6.0f;
        node = test_make_node("Conv", 11, 3, 1, at, n_at);
        x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1.0f, 1.0f);
        w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -0.1f, 0.1f);
        b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1.0f, 1.0f);
        y = test_tensor_random(RLX_DTYPE_F32, 4, yd, -1.0f, 1.0f);
        macs = (double)sh->n * (double)sh->cout * (double)(oh * oh) * (double)(sh->cin / sh->grp) *
               (double)(sh->k * sh->k);
    } else {
        node = test_make_node("MatMul", 13, 2, 1, NULL, 0);
        x = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1.0f, 1.0f);
        w = test_tensor_random(RLX_DTYPE_F32, 2, bmd, -0.1f, 0.1f);
        y = test_tensor_random(RLX_DTYPE_F32, 2, ymd, -1.0f, 1.0f);
        macs = (double)sh->n * (double)sh->cin * (double)sh->cout;
    }
    const rlx_tensor *in[3] = { x, w, b };
    rlx_tensor *out[1] = { y };
    rlx_cpu_sgemm_pack pk;
    if (rlx_cpu_prepare_node(NULL, &node, in, &pk)) {
        fprintf(stderr, "onednn_bench: prepare: %s\n", rlx_last_error());
        return 1;
    }
    size_t ny = y->nbytes / sizeof(float);
    float *yv[N_VAR];
    yv[V_RLX] = y->data;
    for (int v = 1; v < N_VAR; v++) yv[v] = calloc(ny, sizeof(float));

    dn_run run[N_VAR];
    dn_mems mems = { .n = 0 };
    memset(run, 0, sizeof run);
    /* oneDNN's Winograd: 3x3, stride 1, one group (blocked layouts only) */
    bool wino = conv && sh->k == 3 && sh->s == 1 && sh->grp == 1;
    int n_var = conv ? (wino ? N_VAR : V_WINO) : V_BLKR;
    for (int v = V_NCHW; v < n_var; v++) {
        if (conv)
            dn_conv(c, sh, x->data, w->data, b->data, yv[v],
                    v == V_WINO ? dnnl_convolution_winograd : dnnl_convolution_direct, v != V_NCHW, v >= V_BLKR,
                    &run[v], &mems);
        else
            dn_matmul(c, sh, x->data, w->data, yv[v], v != V_NCHW, &run[v], &mems);
    }

    double *best = malloc((size_t)rounds * N_VAR * sizeof(double));
    for (int rd = 0; rd < rounds; rd++) {
        for (int v = 0; v < n_var; v++) {
            if (g_gap_ms > 0) {
                struct timespec gap = { g_gap_ms / 1000, (long)(g_gap_ms % 1000) * 1000000L };
                nanosleep(&gap, NULL);
            }
            double lo = 1e300;
            for (int it = -1; it < reps; it++) {
                if (flush && it >= 0)
                    for (size_t i = 0; i < FLUSH_BYTES; i += 64) flush[i]++;
                double t0 = now_us();
                if (v == V_RLX) {
                    if (rlx_cpu_run_node_packed(NULL, &node, in, out, &pk)) {
                        fprintf(stderr, "onednn_bench: run: %s\n", rlx_last_error());
                        return 1;
                    }
                } else {
                    dn_exec(c, &run[v]);
                }
                double t = now_us() - t0;
                if (it >= 0 && t < lo) lo = t;
            }
            best[v * rounds + rd] = lo;
        }
    }
    double med[N_VAR] = { 0 }, fast = 1e300;
    for (int v = 0; v < n_var; v++) {
        qsort(best + v * rounds, (size_t)rounds, sizeof(double), test_cmp_double);
        med[v] = best[v * rounds + (g_min ? 0 : rounds / 2)];
        if (v != V_RLX && (!conv || v != V_BLK) && med[v] < fast) fast = med[v];
    }
    /* the blocked variant without reorders leaves its output blocked */
    double diff = 0.0;
    for (int v = V_NCHW; v < n_var; v++)
        if (!conv || v != V_BLK) diff = fmax(diff, rel_diff(yv[V_RLX], yv[v], ny));

    char name[96];
    if (conv)
        snprintf(name, sizeof name, "%s %ldx%ld s%ld %ld->%ld @%ld%s n%ld", sh->label, sh->k, sh->k, sh->s, sh->cin,
                 sh->cout, sh->h, sh->grp == 1 ? "" : sh->grp == sh->cin ? " dw" : " grouped", sh->n);
    else
        snprintf(name, sizeof name, "%s MatMul %ldx%ldx%ld", sh->label, sh->n, sh->cin, sh->cout);
    printf("| %-34s | %8.1f | %8.1f | %8.1f | %8.1f | ", name, macs / 1e6, med[V_RLX], med[V_NCHW], med[V_BLK]);
    if (conv)
        printf("%8.1f | ", med[V_BLKR]);
    else
        printf("%8s | ", "-");
    if (wino)
        printf("%8.1f | ", med[V_WINO]);
    else
        printf("%8s | ", "-");
    printf("%5.2f | %5.2f | %5.1f | %5.1f | %.0e | %s / %s%s%s\n", med[V_RLX] / fast, med[V_RLX] / med[V_BLK],
           macs / med[V_RLX] / 1e3, macs / fast / 1e3, diff, run[V_NCHW].impl, run[V_BLK].impl, wino ? " / " : "",
           wino ? run[V_WINO].impl : "");
    fflush(stdout);

    free(best);
    for (int v = V_NCHW; v < n_var; v++) dn_run_free(&run[v]);
    for (int i = 0; i < mems.n; i++) dnnl_memory_destroy(mems.m[i]);
    for (int v = 1; v < N_VAR; v++) free(yv[v]);
    rlx_cpu_sgemm_pack_free(&pk);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(y);
    if (b) rlx_tensor_destroy(b);
    return 0;
}

int main(int argc, char **argv) {
    int threads = 1, rounds = 5, reps = 5;
    bool wall = false, cold = false;
    int first_shape = argc;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (o[0] != '-') {
            first_shape = i;
            break;
        }
        if (strcmp(o, "--wall") == 0)
            wall = true;
        else if (strcmp(o, "--cold") == 0)
            cold = true;
        else if (strcmp(o, "--min") == 0)
            g_min = true;
        else if (i + 1 >= argc)
            return usage("an option needs a value");
        else if (strcmp(o, "--threads") == 0)
            threads = atoi(argv[++i]);
        else if (strcmp(o, "--rounds") == 0)
            rounds = atoi(argv[++i]);
        else if (strcmp(o, "--reps") == 0)
            reps = atoi(argv[++i]);
        else if (strcmp(o, "--gap") == 0)
            g_gap_ms = atoi(argv[++i]);
        else
            return usage("unknown option");
    }
    if (threads < 1 || rounds < 1 || reps < 1) return usage("--threads, --rounds and --reps must be at least 1");
    int n_shapes = argc - first_shape;
    shape *shapes = NULL;
    if (n_shapes == 0) {
        n_shapes = (int)(sizeof k_default / sizeof k_default[0]);
    } else {
        shapes = calloc((size_t)n_shapes, sizeof *shapes);
        for (int i = 0; i < n_shapes; i++)
            if (!parse_shape(argv[first_shape + i], &shapes[i])) return usage("bad shape");
    }
    int got = 0;
    if (rlx_parallel_configure(threads, -1, &got) != RLX_OK) return usage("cannot start rlx's worker pool");
    rlx_parallel_set_limit(threads);
    omp_set_num_threads(threads);
    g_cpu_clock = threads == 1 && !wall;
    if (g_gap_ms < 0) g_gap_ms = threads > 1 ? 50 : 0;
    unsigned char *flush = cold ? calloc(1, FLUSH_BYTES) : NULL;

    dn_ctx c;
    DN(dnnl_engine_create(&c.eng, dnnl_cpu, 0));
    DN(dnnl_stream_create(&c.strm, c.eng, dnnl_stream_default_flags));
    const dnnl_version_t *ver = dnnl_version();
    printf("onednn_bench: oneDNN %d.%d.%d (cpu runtime %s, isa 0x%x), %d thread(s) (rlx %d, OpenMP %d), "
           "%s of %d rounds of min-of-%d, %s time%s\n",
           ver->major, ver->minor, ver->patch, ver->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other",
           (unsigned)dnnl_get_effective_cpu_isa(), threads, rlx_parallel_threads(), omp_get_max_threads(),
           g_min ? "minimum" : "median", rounds, reps, g_cpu_clock ? "thread CPU" : "wall", cold ? ", caches evicted" : "");
    printf("\n| shape | MMAC | rlx us | nchw us | blk us | blk+r us | wino+r us | rlx/dnnl | rlx/blk "
           "| rlx GMAC/s | dnnl GMAC/s | diff | oneDNN impl (nchw / blk / wino) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    int rc = 0;
    for (int i = 0; i < n_shapes && !rc; i++)
        rc = bench_shape(&c, shapes ? &shapes[i] : &k_default[i], rounds, reps, flush);
    dnnl_stream_destroy(c.strm);
    dnnl_engine_destroy(c.eng);
    free(shapes);
    free(flush);
    return rc;
}
