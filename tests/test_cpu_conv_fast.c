/* The CPU fast paths of Conv, the pools, Gemm and MatMul
 * (src/backend/cpu/cpu_nn_conv_fast.c, cpu_nn_pool.c, cpu_sgemm.c) against
 * the reference kernels (and nearest Resize, whose rows the fast path shares
 * over the pool): each node runs twice through rlx_cpu_run_node, with
 * reference = false and true, on random inputs in [-1, 1) (never zeros),
 * outputs poisoned with NaN first (so an element a path forgets to write
 * fails the comparison).
 *
 * Geometries: a list of named cases (1x1 stride 1 without im2col, 1x1
 * stride 2, depthwise 3x3 / 5x5 with strides 1 and 2 and channel
 * multipliers, a 7-wide and a 67-wide depthwise kernel, groups, dilation,
 * asymmetric pads, batch > 1, 1-D and 3-D, blocks of output channels)
 * followed by 150 random 2-D geometries; every case runs with a fused
 * activation, cycling through all of them (src/ir/ops/act.h), with and
 * without a bias, and many with a fused residual (Conv's fourth input).
 * Depthwise convolutions take the plane or the channel-blocked path by
 * shape; test_conv_depthwise_blocked forces the blocked one at every
 * instruction set (AVX-512, AVX2, portable C) on its own list of
 * geometries, and the plane one on the same list;
 * test_conv_depthwise_subnormal runs both on subnormal weights and inputs.
 * test_conv_pointwise and test_conv_implicit_gemm force the pointwise and
 * the implicit-GEMM paths (cpu_nn_pw.c, cpu_nn_conv_ig.c) at every sgemm
 * kernel, bitwise against im2col + GEMM.
 *
 * Tolerances (stated at each comparison): the fast paths accumulate in
 * float in another order (and with FMA where the CPU has it) than the
 * reference, which sums in double and rounds once: a K-term sum of
 * products in [-1, 1] is off by at most about K * 2^-24 * K in the worst
 * case, in practice K * 6e-8; the comparisons allow 1e-5 relative plus
 * 2e-6 * K absolute. A wrong tap or a missing bias is off by ~0.1 or more.
 *
 * Conv (not depthwise), Gemm and MatMul with a 2-D B run a third time with
 * their weights packed as the CPU backend packs constants at compile time
 * (rlx_cpu_prepare_node), the plain weights poisoned with NaN meanwhile (so
 * that a block which ignores the pack fails): bitwise the fast path's
 * result.
 *
 * Thread counts: ctest runs this program with the default thread count (one
 * per core), RLX_NUM_THREADS=1, 3, 5 and 16 (more than this machine's
 * cores; tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "test.h"
#include "test_node.h"

#include <stdatomic.h>
#include <time.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "ir/ops/act.h"
#include "ir/ops/conv_geom.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ one node */

typedef struct node_attrs {
    rlx_node_attr a[16];
    int64_t ints[8][6];
    int n;
} node_attrs;

static void attr_int(node_attrs *s, const char *name, int64_t v) {
    rlx_node_attr *a = &s->a[s->n++];
    memset(a, 0, sizeof *a);
    a->name = (char *)name;
    a->type = RLX_ATTR_INT;
    a->i = v;
}
static void attr_float(node_attrs *s, const char *name, float v) {
    rlx_node_attr *a = &s->a[s->n++];
    memset(a, 0, sizeof *a);
    a->name = (char *)name;
    a->type = RLX_ATTR_FLOAT;
    a->f = v;
}
static void attr_ints(node_attrs *s, const char *name, int n, const int64_t *v) {
    int slot = s->n;
    rlx_node_attr *a = &s->a[s->n++];
    memset(a, 0, sizeof *a);
    a->name = (char *)name;
    a->type = RLX_ATTR_INTS;
    a->n = (size_t)n;
    memcpy(s->ints[slot % 8], v, (size_t)n * sizeof *v);
    a->ints = s->ints[slot % 8];
}

/* A node of `op` (default domain, since-version `version`) with n_in inputs
 * and the attributes of s (borrowed). */
static rlx_node make_node(const char *op, int version, int n_in, int n_out, node_attrs *s) {
    return test_make_node(op, version, n_in, n_out, s->a, s->n);
}

/* Runs with the weights packed (rlx_cpu_prepare_node). */
static int g_packed_runs;

/* When set (inputs that hold NaNs): NaN equals NaN, and outputs are
 * poisoned with 1e30 instead of NaN. */
static bool g_nan_ok;

static void poison(rlx_tensor *t) {
    float *p = t->data;
    for (size_t i = 0; i < rlx_tensor_numel(t); i++) p[i] = g_nan_ok ? 1e30f : NAN;
}

/* Runs node n on the fast path and on the reference into fresh tensors of
 * dims yd; compares |fast - ref| <= rtol * |ref| + atol. Returns the check
 * result (1 pass). */
static int fast_vs_ref(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd,
                       double rtol, double atol) {
    rlx_tensor *fast = test_tensor(RLX_DTYPE_F32, rank, yd), *ref = test_tensor(RLX_DTYPE_F32, rank, yd);
    poison(fast), poison(ref);
    rlx_tensor *fo[1] = { fast }, *ro[1] = { ref };
    rlx_status sf = rlx_cpu_run_node(NULL, n, in, fo, false);
    CHECK_MSG(sf == RLX_OK, "%s: fast path: %s", what, rlx_last_error());
    rlx_status sr = rlx_cpu_run_node(NULL, n, in, ro, true);
    CHECK_MSG(sr == RLX_OK, "%s: reference: %s", what, rlx_last_error());
    int ok = sf == RLX_OK && sr == RLX_OK;
    /* with the constant operand packed as at compile time: the same bits */
    rlx_cpu_sgemm_pack pk;
    CHECK_OK(rlx_cpu_prepare_node(NULL, n, in, &pk));
    if (ok && (pk.data || pk.wt)) {
        rlx_tensor *packed = test_tensor(RLX_DTYPE_F32, rank, yd);
        poison(packed);
        rlx_tensor *po[1] = { packed };
        /* the plain weights poisoned meanwhile: every block must read the pack */
        rlx_tensor *w = (rlx_tensor *)in[1];
        size_t wn = rlx_tensor_numel(w);
        float *keep = malloc(wn * sizeof(float));
        memcpy(keep, w->data, wn * sizeof(float));
        for (size_t i = 0; i < wn; i++) ((float *)w->data)[i] = NAN;
        CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, po, &pk));
        memcpy(w->data, keep, wn * sizeof(float));
        free(keep);
        bool same = memcmp(packed->data, fast->data, rlx_tensor_numel(fast) * sizeof(float)) == 0;
        CHECK_MSG(same, "%s: packed weights: not the bits of the unpacked fast path", what);
        ok = ok && same;
        g_packed_runs++;
        rlx_tensor_destroy(packed);
    }
    rlx_cpu_sgemm_pack_free(&pk);
    const float *a = fast->data, *b = ref->data;
    size_t numel = rlx_tensor_numel(ref);
    for (size_t i = 0; ok && i < numel; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (g_nan_ok && isnan(a[i]) && isnan(b[i])) continue;
        if (!(d <= rtol * fabs((double)b[i]) + atol) || (g_nan_ok && a[i] == 1e30f)) { /* unwritten fails too */
            fprintf(stderr, "%s: element %zu of %zu: fast %.9g, reference %.9g (rtol %g, atol %g)\n", what, i, numel,
                    a[i], b[i], rtol, atol);
            ok = 0;
        }
    }
    /* the reference itself writes every element */
    for (size_t i = 0; ok && i < numel; i++)
        if (g_nan_ok ? b[i] == 1e30f : isnan(b[i])) {
            fprintf(stderr, "%s: reference left element %zu unwritten\n", what, i);
            ok = 0;
        }
    rlx_tensor_destroy(fast), rlx_tensor_destroy(ref);
    return ok;
}

/* ------------------------------------------------------------ Conv */

typedef struct conv_case {
    const char *name;
    int nsp;
    int64_t n, cin, cout, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    int bias;
} conv_case;

static const rlx_act_kind k_acts[] = { RLX_ACT_NONE,      RLX_ACT_RELU,    RLX_ACT_CLIP,      RLX_ACT_HARDSIGMOID,
                                       RLX_ACT_HARDSWISH, RLX_ACT_SIGMOID, RLX_ACT_SILU,      RLX_ACT_GELU,
                                       RLX_ACT_GELU_TANH, RLX_ACT_LEAKYRELU, RLX_ACT_TANH };

static void act_attrs(node_attrs *st, rlx_act_kind act) {
    if (act == RLX_ACT_NONE) return;
    attr_int(st, "_rlx_act", act);
    /* Clip [-0.3, 0.4]; HardSigmoid 0.2 x + 0.5; LeakyRelu 0.1 */
    attr_float(st, "_rlx_act_alpha", act == RLX_ACT_CLIP ? -0.3f : act == RLX_ACT_HARDSIGMOID ? 0.2f : 0.1f);
    attr_float(st, "_rlx_act_beta", act == RLX_ACT_CLIP ? 0.4f : 0.5f);
}

static int g_conv_cases, g_conv_depthwise, g_conv_residual;

static void pw_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd);
static void pwt_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd);
static void ig_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd);
static void dwr_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd);
static void dwf_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd);

/* Which path's bits run_conv_ex also compares with im2col + GEMM's. */
enum { BITS_NONE = 0, BITS_PW = 1, BITS_IG = 2, BITS_PWT = 3, BITS_DWR = 4, BITS_DWF = 5 };

/* with_res: the fused residual (Conv's internal fourth input, src/ir/ops/act.h),
 * random, of the output's shape. bits: also the pointwise path's bits
 * (BITS_PW: pw_bits) or the implicit GEMM's (BITS_IG: ig_bits) against
 * im2col + GEMM, with the bias of channel 0 zero. */
static void run_conv_ex(const conv_case *c, rlx_act_kind act, bool with_res, int bits) {
    int64_t xd[5] = { c->n, c->cin }, wd[5] = { c->cout, c->cin / c->group }, bd[1] = { c->cout };
    int64_t pads[6];
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = c->in[i], wd[2 + i] = c->k[i];
        pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
    }
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", c->nsp, c->k);
    attr_ints(&st, "strides", c->nsp, c->s);
    attr_ints(&st, "dilations", c->nsp, c->d);
    attr_ints(&st, "pads", 2 * c->nsp, pads);
    attr_int(&st, "group", c->group);
    act_attrs(&st, act);
    rlx_node n = make_node("Conv", 11, with_res ? 4 : c->bias ? 3 : 2, 1, &st);
    rlx_conv_geom g;
    rlx_status s = rlx_conv_geom_resolve(&n, RLX_GEOM_CONV, xd, 2 + c->nsp, wd, 2 + c->nsp, &g);
    CHECK_MSG(s == RLX_OK, "%s: geometry: %s", c->name, rlx_last_error());
    if (s) return;
    int64_t yd[5] = { c->n, c->cout };
    for (int i = 0; i < c->nsp; i++) yd[2 + i] = g.out[i];
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
    rlx_tensor *r = with_res ? test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, yd, -1, 1) : NULL;
    if (bits && b) ((float *)b->data)[0] = 0.0f; /* a zero bias takes the epilogue's other branch */
    const rlx_tensor *in[4] = { x, w, b, r };
    size_t kprod = (size_t)(c->cin / c->group);
    for (int i = 0; i < c->nsp; i++) kprod *= (size_t)c->k[i];
    char what[200];
    snprintf(what, sizeof what, "Conv %s, act %d%s%s", c->name, (int)act, c->bias ? ", bias" : "",
             with_res ? ", residual" : "");
    /* 1e-5 relative + 2e-6 per product of the sum (see the file comment) */
    CHECK_MSG(fast_vs_ref(what, &n, in, 2 + c->nsp, yd, 1e-5, 2e-6 * (double)(kprod + 1)), "%s", what);
    if (bits == BITS_PW) pw_bits(what, &n, in, 2 + c->nsp, yd);
    if (bits == BITS_IG) ig_bits(what, &n, in, 2 + c->nsp, yd);
    if (bits == BITS_PWT) pwt_bits(what, &n, in, 2 + c->nsp, yd);
    if (bits == BITS_DWR) dwr_bits(what, &n, in, 2 + c->nsp, yd);
    if (bits == BITS_DWF) dwf_bits(what, &n, in, 2 + c->nsp, yd);
    g_conv_cases++;
    g_conv_depthwise += c->cin == c->group;
    g_conv_residual += with_res;
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b), rlx_tensor_destroy(r);
}

static void run_conv(const conv_case *c, rlx_act_kind act, bool with_res) { run_conv_ex(c, act, with_res, BITS_NONE); }

static void test_conv_listed(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "1x1 stride 1 (no im2col)", 2, 1, 24, 40, 1, { 13, 11 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "1x1 stride 1 batch 3, wide", 2, 3, 16, 8, 1, { 40, 37 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "1x1 stride 2", 2, 2, 10, 12, 1, { 9, 10 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0 },
        { "1x1 pad 1", 2, 1, 6, 7, 1, { 5, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 0 }, { 0, 1 }, 1 },
        { "3x3 pad 1, 64 out (channel blocks)", 2, 1, 8, 64, 1, { 5, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "group 2, batch 2, 40 out per group (shared columns)", 2, 2, 6, 80, 2, { 6, 5 }, { 3, 3 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 0, 1 }, 1 },
        { "3x3 stride 2, odd", 2, 2, 5, 9, 1, { 23, 17 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, 1 },
        { "7x7 stride 2 pad 3 (stem)", 2, 1, 3, 16, 1, { 38, 38 }, { 7, 7 }, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 3, 3 }, 1 },
        /* im2col rows of 16 floats or more (the vector runs: stride 1 masked, stride 2 permuted) */
        { "3x3 stride 1 wide rows", 2, 1, 3, 5, 1, { 6, 45 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "3x3 stride 2 wide rows", 2, 1, 3, 5, 1, { 7, 75 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, 1 },
        { "3x3 dilation 2", 2, 1, 4, 6, 1, { 15, 12 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, { 2, 2 }, 1 },
        { "5x3 stride 3x1 dilation 1x3", 2, 1, 3, 5, 1, { 16, 20 }, { 5, 3 }, { 3, 1 }, { 1, 3 }, { 2, 0 }, { 1, 4 }, 0 },
        { "group 2", 2, 2, 8, 6, 2, { 9, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "group 4, 1x1 (shufflenet)", 2, 1, 32, 16, 4, { 14, 14 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        /* one input channel per group, multiplier 4 and more: im2col + GEMM (conv_depthwise) */
        { "1 channel in, 32 out (grayscale stem)", 2, 2, 1, 32, 1, { 13, 11 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "1-D STFT: 1 channel, 66 out, 64 taps, stride 16", 1, 2, 1, 66, 1, { 200 }, { 64 }, { 16 }, { 1 }, { 0 },
          { 0 }, 0 },
        { "depthwise 3x3 multiplier 4 s2", 2, 1, 4, 16, 4, { 15, 12 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 },
          1 },
        { "depthwise 3x3 s1", 2, 1, 12, 12, 12, { 19, 21 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "depthwise 3x3 s1 wide rows (in place)", 2, 1, 5, 5, 5, { 6, 41 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "depthwise 5x5 s1 wide rows, multiplier 2", 2, 2, 3, 6, 3, { 7, 53 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 },
          { 2, 2 }, 1 },
        { "depthwise 3x3 s1 dilation 2 wide, pad 0/3", 2, 1, 4, 4, 4, { 9, 60 }, { 3, 3 }, { 1, 1 }, { 2, 2 },
          { 0, 0 }, { 3, 3 }, 0 },
        { "depthwise 1x9 s1 wide (generic width)", 2, 1, 2, 2, 2, { 4, 70 }, { 1, 9 }, { 1, 1 }, { 1, 1 }, { 0, 4 },
          { 0, 4 }, 1 },
        { "depthwise 3x3 s2", 2, 2, 8, 8, 8, { 20, 23 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "depthwise 3x3 s2 pad 0/1", 2, 1, 5, 5, 5, { 16, 16 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0 },
        { "depthwise 5x5 s1", 2, 1, 6, 6, 6, { 17, 18 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "depthwise 5x5 s2", 2, 1, 7, 7, 7, { 21, 19 }, { 5, 5 }, { 2, 2 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "depthwise 3x3 multiplier 2", 2, 2, 4, 8, 4, { 11, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "depthwise 5x5 multiplier 3 s2", 2, 1, 3, 9, 3, { 13, 14 }, { 5, 5 }, { 2, 2 }, { 1, 1 }, { 2, 1 }, { 1, 2 },
          0 },
        { "depthwise 7x7 s1 (generic width)", 2, 1, 4, 4, 4, { 12, 15 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 3, 3 }, { 3, 3 },
          1 },
        { "depthwise 3x3 s3 dilation 2", 2, 1, 3, 3, 3, { 17, 19 }, { 3, 3 }, { 3, 3 }, { 2, 2 }, { 2, 1 }, { 0, 3 }, 1 },
        { "depthwise 1x1", 2, 1, 5, 5, 5, { 6, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "depthwise tiny plane 1x1 input", 2, 1, 6, 6, 6, { 1, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "depthwise kernel wider than 64 (1-D)", 1, 1, 2, 2, 2, { 90 }, { 67 }, { 1 }, { 1 }, { 5 }, { 3 }, 1 },
        { "1-D", 1, 2, 3, 4, 1, { 29 }, { 3 }, { 2 }, { 1 }, { 1 }, { 2 }, 1 },
        { "1-D depthwise s2 dilation 3", 1, 1, 4, 4, 4, { 31 }, { 3 }, { 2 }, { 3 }, { 3 }, { 3 }, 1 },
        { "3-D", 3, 1, 2, 3, 1, { 4, 5, 6 }, { 2, 3, 2 }, { 1, 2, 1 }, { 1, 1, 2 }, { 1, 0, 1 }, { 0, 1, 1 }, 1 },
        { "3-D depthwise", 3, 2, 3, 6, 3, { 5, 4, 6 }, { 3, 3, 3 }, { 1, 2, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, { 1, 0, 1 },
          1 },
        { "3x3 wide (several position blocks)", 2, 1, 2, 3, 1, { 70, 90 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        run_conv(&cases[i], k_acts[i % ARRAY_LEN(k_acts)], false);
        conv_case nb = cases[i];
        nb.bias = !nb.bias;
        run_conv(&nb, k_acts[(i + 5) % ARRAY_LEN(k_acts)], false);
        run_conv(&cases[i], k_acts[(i + 2) % ARRAY_LEN(k_acts)], true);
    }
}

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(test_rand_u64() % (uint64_t)(hi - lo + 1)); }

/* ConvTranspose (col2im by output channels over the pool). Weight
 * [cin, cout / group, k...]; each output sums at most cin/group * K
 * products: the same tolerance as Conv. */
static void run_convt(const conv_case *c, rlx_act_kind act) {
    int64_t xd[5] = { c->n, c->cin }, wd[5] = { c->cin, c->cout / c->group }, bd[1] = { c->cout }, pads[6];
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = c->in[i], wd[2 + i] = c->k[i];
        pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
    }
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", c->nsp, c->k);
    attr_ints(&st, "strides", c->nsp, c->s);
    attr_ints(&st, "dilations", c->nsp, c->d);
    attr_ints(&st, "pads", 2 * c->nsp, pads);
    attr_int(&st, "group", c->group);
    act_attrs(&st, act);
    rlx_node n = make_node("ConvTranspose", 11, c->bias ? 3 : 2, 1, &st);
    rlx_conv_geom g;
    rlx_status s = rlx_conv_geom_resolve(&n, RLX_GEOM_CONV_TRANSPOSE, xd, 2 + c->nsp, wd, 2 + c->nsp, &g);
    CHECK_MSG(s == RLX_OK, "%s: geometry: %s", c->name, rlx_last_error());
    if (s) return;
    int64_t yd[5] = { c->n, c->cout };
    for (int i = 0; i < c->nsp; i++) yd[2 + i] = g.out[i];
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
    const rlx_tensor *in[3] = { x, w, b };
    size_t kprod = (size_t)(c->cin / c->group);
    for (int i = 0; i < c->nsp; i++) kprod *= (size_t)c->k[i];
    char what[200];
    snprintf(what, sizeof what, "ConvTranspose %s, act %d", c->name, (int)act);
    CHECK_MSG(fast_vs_ref(what, &n, in, 2 + c->nsp, yd, 1e-5, 2e-6 * (double)(kprod + 1)), "%s", what);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
}

static void path_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd,
                      void (*set_ref)(void), void (*set_fast)(void), const int *lims, int nl, const char *fast,
                      const char *ref);
static void convt_force_col2im(void) { rlx_nn_convt_force(1); }
static void convt_force_none(void) { rlx_nn_convt_force(0); }

static void test_conv_transpose(void) {
    static const conv_case cases[] = {
        { "2x2 stride 2 (FPN upsampling)", 2, 1, 16, 24, 1, { 9, 11 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "3x3 stride 2 pad 1, batch 2", 2, 2, 6, 10, 1, { 7, 6 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        { "group 2 dilation 2", 2, 1, 8, 12, 2, { 6, 5 }, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 1, 0 }, { 0, 1 }, 1 },
        { "1-D stride 3", 1, 1, 5, 7, 1, { 13 }, { 4 }, { 3 }, { 1 }, { 1 }, { 2 }, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_convt(&cases[i], k_acts[(i * 3 + 1) % ARRAY_LEN(k_acts)]);
}

/* ConvTranspose with kernel == stride (no pads, dilation 1): the disjoint
 * path (each column written once where its tap lands, bias and activation
 * on the way) against the reference, and its bits against the GEMM +
 * col2im path's at 1, 2 and 5 threads (outputs poisoned: an element it
 * leaves unwritten fails). Shapes: PP-OCR's DB head (2x2 stride 2, 24 ->
 * 24 and 24 -> 1), odd widths, 1-D and 3-D, groups, kernel 1, unequal
 * strides, batch 3, several row blocks, c_in past one 256-step k panel. */
static void test_conv_transpose_disjoint(void) {
    static const conv_case cases[] = {
        { "2x2 s2 24->24 (DB head)", 2, 1, 24, 24, 1, { 20, 20 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "2x2 s2 24->1, odd width", 2, 1, 24, 1, 1, { 40, 37 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 0 },
        { "1-D 3 s3", 1, 1, 5, 7, 1, { 13 }, { 3 }, { 3 }, { 1 }, { 0 }, { 0 }, 1 },
        { "3-D 2x2x2 s2", 3, 1, 4, 6, 1, { 3, 5, 4 }, { 2, 2, 2 }, { 2, 2, 2 }, { 1, 1, 1 }, { 0 }, { 0 }, 1 },
        { "group 2", 2, 1, 8, 6, 2, { 7, 9 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "kernel 1", 2, 1, 12, 10, 1, { 6, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 0 },
        { "2x3 s(2,3), batch 3", 2, 3, 6, 5, 1, { 10, 4 }, { 2, 3 }, { 2, 3 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "2x2 s2 wide (row blocks)", 2, 1, 24, 24, 1, { 64, 64 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "2x2 s2 c_in 300 (two k panels)", 2, 1, 300, 4, 1, { 5, 6 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
    };
    static const int lims[] = { 1, 2, 5 };
    size_t runs0 = rlx_nn_convt_disjoint_runs();
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        const conv_case *c = &cases[i];
        rlx_act_kind act = k_acts[(i * 5 + 1) % ARRAY_LEN(k_acts)];
        run_convt(c, act);
        int64_t xd[5] = { c->n, c->cin }, wd[5] = { c->cin, c->cout / c->group }, bd[1] = { c->cout }, yd[5] = { c->n, c->cout };
        for (int d = 0; d < c->nsp; d++) xd[2 + d] = c->in[d], wd[2 + d] = c->k[d], yd[2 + d] = c->in[d] * c->s[d];
        node_attrs st = { .n = 0 };
        attr_ints(&st, "kernel_shape", c->nsp, c->k);
        attr_ints(&st, "strides", c->nsp, c->s);
        attr_int(&st, "group", c->group);
        act_attrs(&st, act);
        rlx_node n = make_node("ConvTranspose", 11, c->bias ? 3 : 2, 1, &st);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, xd, -1, 1);
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, wd, -1, 1);
        rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
        const rlx_tensor *in[3] = { x, w, b };
        char what[160];
        snprintf(what, sizeof what, "ConvTranspose %s, act %d", c->name, (int)act);
        path_bits(what, &n, in, 2 + c->nsp, yd, convt_force_col2im, convt_force_none, lims, (int)ARRAY_LEN(lims),
                  "disjoint", "GEMM + col2im");
        rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
    }
    /* each case ran it twice in run_convt (fast_vs_ref: plain and packed) and once a thread limit */
    CHECK_MSG(rlx_nn_convt_disjoint_runs() - runs0 >= ARRAY_LEN(cases) * ARRAY_LEN(lims),
              "the disjoint path ran %zu times", rlx_nn_convt_disjoint_runs() - runs0);
    /* an input row whose columns pass a task's bound (2 x 2 taps x 2 Mi
     * positions: 8 Mi floats) takes the col2im path, which splits it */
    static const conv_case wide = { "1-D 2 s2, a 2 Mi-long row", 1, 1, 1, 2, 1, { 1 << 21 }, { 2 }, { 2 }, { 1 }, { 0 },
                                    { 0 }, 1 };
    size_t runs1 = rlx_nn_convt_disjoint_runs();
    run_convt(&wide, RLX_ACT_RELU);
    CHECK_MSG(rlx_nn_convt_disjoint_runs() == runs1, "a 2 Mi-long row ran the disjoint path");
}

/* The depthwise paths' runs: the in-register activations (none, Relu,
 * Clip), and with a residual or HardSwish (the epilogue after the store). */
static const struct {
    rlx_act_kind act;
    bool res;
} k_dw_runs[] = { { RLX_ACT_NONE, false }, { RLX_ACT_RELU, false }, { RLX_ACT_CLIP, false },
                  { RLX_ACT_RELU, true },  { RLX_ACT_CLIP, true },  { RLX_ACT_HARDSWISH, false },
                  { RLX_ACT_HARDSWISH, true } };

/* The channel-blocked depthwise path (multiplier 1, 1-D / 2-D; forced with
 * rlx_nn_dw_force) at every vector width the CPU runs (rlx_cpu_isa_cap:
 * AVX-512 16 channels, AVX2 8, portable C 8): channel counts below, at and
 * past a block (1, 7, 16, 17, 33, 960), kernels 3, 5, 7, 1 x k and k x 1,
 * strides 1 and 2, dilation 2, asymmetric pads and pads wider than the
 * kernel (outputs whose taps all fall in the padding), batch > 1, maps
 * from 1 x 1 to 56 x 56 (several blocks of rows); each with the in-register
 * activations (none, Relu, Clip) and with a residual or HardSwish (the
 * epilogue after the store). The plane path runs the same cases once. The
 * tolerance is run_conv's. */
static void test_conv_depthwise_blocked(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "dw blocked C1 3x3", 2, 1, 1, 1, 1, { 9, 10 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw blocked C7 3x3 s2 batch 2", 2, 2, 7, 7, 7, { 15, 13 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 },
          1 },
        { "dw blocked C16 5x5", 2, 1, 16, 16, 16, { 12, 11 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "dw blocked C17 7x7", 2, 1, 17, 17, 17, { 14, 13 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 3, 3 }, { 3, 3 }, 1 },
        { "dw blocked C33 3x3 s2 asymmetric pads", 2, 1, 33, 33, 33, { 16, 17 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 0, 1 }, { 1, 0 }, 0 },
        { "dw blocked C960 3x3 on 7x7", 2, 1, 960, 960, 960, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "dw blocked C962 5x5 s2 on 14x14", 2, 1, 962, 962, 962, { 14, 14 }, { 5, 5 }, { 2, 2 }, { 1, 1 }, { 2, 2 },
          { 1, 2 }, 1 },
        { "dw blocked C40 1x5", 2, 1, 40, 40, 40, { 9, 20 }, { 1, 5 }, { 1, 1 }, { 1, 1 }, { 0, 2 }, { 0, 2 }, 1 },
        { "dw blocked C24 5x1 s2x1", 2, 1, 24, 24, 24, { 20, 9 }, { 5, 1 }, { 2, 1 }, { 1, 1 }, { 2, 0 }, { 2, 0 }, 1 },
        { "dw blocked C20 3x3 dilation 2", 2, 1, 20, 20, 20, { 13, 15 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 2 },
          { 2, 1 }, 1 },
        { "dw blocked C18 3x3 s2 dilation 2 pad 0/3", 2, 1, 18, 18, 18, { 17, 19 }, { 3, 3 }, { 2, 2 }, { 2, 2 },
          { 0, 0 }, { 3, 3 }, 1 },
        { "dw blocked C5 3x3 pads 3 (all-padding outputs)", 2, 1, 5, 5, 5, { 4, 4 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 3, 3 }, { 3, 3 }, 1 },
        { "dw blocked C9 batch 3 1x1 input", 2, 3, 9, 9, 9, { 1, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "dw blocked C24 3x3 56x56 (row blocks)", 2, 1, 24, 24, 24, { 56, 56 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "dw blocked C32 3x3 s2 on 40x40 batch 2", 2, 2, 32, 32, 32, { 40, 40 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 0, 0 }, { 1, 1 }, 1 },
        { "dw blocked 1-D C19 k5 s2 dilation 2", 1, 1, 19, 19, 19, { 40 }, { 5 }, { 2 }, { 2 }, { 3 }, { 1 }, 1 },
        { "dw blocked 1-D C3 kernel 67", 1, 1, 3, 3, 3, { 90 }, { 67 }, { 1 }, { 1 }, { 5 }, { 3 }, 1 },
    };
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        CHECK(rlx_cpu_isa_get() == (rlx_cpu_isa)isa);
        rlx_nn_dw_force(2);
        int before = g_conv_cases;
        for (size_t i = 0; i < ARRAY_LEN(cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(k_dw_runs); r++) run_conv(&cases[i], k_dw_runs[r].act, k_dw_runs[r].res);
        fprintf(stderr, "channel-blocked depthwise, ISA %d: %d cases\n", isa, g_conv_cases - before);
    }
    rlx_cpu_isa_cap(top);
    rlx_nn_dw_force(1);
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_conv(&cases[i], k_dw_runs[i % ARRAY_LEN(k_dw_runs)].act, i % 2);
    rlx_nn_dw_force(0);
}

/* Node n's output with set_fast() in force, at thread limits lims[0 ..
 * nl), must be the bits of its output with set_ref() in force (outputs
 * poisoned); set_fast() stays in force. `fast` and `ref` name the paths in
 * the message. */
static void path_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd,
                      void (*set_ref)(void), void (*set_fast)(void), const int *lims, int nl, const char *fast,
                      const char *ref) {
    rlx_tensor *want = test_tensor(RLX_DTYPE_F32, rank, yd);
    rlx_tensor *want_o[1] = { want };
    poison(want);
    set_ref();
    CHECK_OK(rlx_cpu_run_node(NULL, n, in, want_o, false));
    set_fast();
    size_t bytes = rlx_tensor_numel(want) * sizeof(float);
    for (int l = 0; l < nl; l++) {
        int prev = rlx_parallel_set_limit(lims[l]);
        rlx_tensor *got = test_tensor(RLX_DTYPE_F32, rank, yd);
        rlx_tensor *got_o[1] = { got };
        poison(got);
        CHECK_OK(rlx_cpu_run_node(NULL, n, in, got_o, false));
        CHECK_MSG(memcmp(got->data, want->data, bytes) == 0, "%s %s, %d threads: not the bits of %s", fast, what,
                  lims[l], ref);
        rlx_tensor_destroy(got);
        rlx_parallel_set_limit(prev);
    }
    rlx_tensor_destroy(want);
}

static void dw_force_blocked(void) { rlx_nn_dw_force(2); }
static void dw_force_rows(void) { rlx_nn_dw_force(3); }
static void dw_force_flat(void) { rlx_nn_dw_force(4); }

/* The depthwise row path's output (rlx_nn_dw_force(3), the force it runs
 * under) against the channel-blocked path's (force 2) at 1, 2 and 5
 * threads: the same bits (both start at the bias and take the taps in
 * order with fused multiply-adds; the weights here are finite). */
static void dwr_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    static const int lims[3] = { 1, 2, 5 };
    path_bits(what, n, in, rank, yd, dw_force_blocked, dw_force_rows, lims, 3, "depthwise rows",
              "the channel-blocked path");
}

/* The flattened-planes path's output (rlx_nn_dw_force(4)) against the
 * channel-blocked path's at 1, 2 and 5 threads: the same bits, as
 * dwr_bits. */
static void dwf_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    static const int lims[3] = { 1, 2, 5 };
    path_bits(what, n, in, rank, yd, dw_force_blocked, dw_force_flat, lims, 3, "depthwise flat",
              "the channel-blocked path");
}

/* Whether applies() takes the 2-D depthwise convolution of case c. */
static bool dw_applies(const conv_case *c, bool (*applies)(const rlx_conv_geom *, const rlx_nn_sp3 *)) {
    int64_t xd[4] = { c->n, c->cin, c->in[0], c->in[1] }, wd[4] = { c->cout, 1, c->k[0], c->k[1] };
    int64_t pads[4] = { c->pb[0], c->pb[1], c->pe[0], c->pe[1] };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, c->k);
    attr_ints(&st, "strides", 2, c->s);
    attr_ints(&st, "dilations", 2, c->d);
    attr_ints(&st, "pads", 4, pads);
    attr_int(&st, "group", c->group);
    rlx_node n = make_node("Conv", 11, 2, 1, &st);
    rlx_conv_geom g;
    CHECK_OK(rlx_conv_geom_resolve(&n, RLX_GEOM_CONV, xd, 4, wd, 4, &g));
    rlx_nn_sp3 s3;
    rlx_nn_sp3_init(&g, &s3);
    return applies(&g, &s3);
}

/* The depthwise row path (cpu_nn_dw_rows.c, forced with rlx_nn_dw_force(3);
 * AVX-512 CPUs only): 3x3, pads 1, stride 1 on rows of 1 to 32 columns
 * (one and two vectors: the columns next to a vector's edge from the
 * vector before or after it) and stride 2 on rows of 2 to 32 (odd and even
 * widths: the right pad read past the row; a full second vector at 32),
 * heights that are no multiple of
 * the four rows a task computes at once, odd channel counts (a task's
 * second plane missing), batch 2, ShuffleNet's 14x14 x 272, 7x7 x 544,
 * 28x28 x 136, 28x28 -> 14x14 x 136; every activation run of the blocked test; against
 * the reference at run_conv's tolerance and bit for bit against the blocked
 * path (dwr_bits: 1, 2 and 5 threads); rows wider than two vectors at
 * stride 1 and 2 (MobileNetV2's 56- and 112-wide maps, widths next to the
 * vector edges: a stride-2 vector's left tap from the vector before it).
 * Geometries outside the path (5x5, dilation 2, pad 0 or 2, stride 2x1)
 * must be refused by rlx_nn_dw_rows_applies. */
static void test_conv_depthwise_rows(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "dw rows C272 14x14", 2, 1, 272, 272, 272, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C544 7x7", 2, 1, 544, 544, 544, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C136 28x28 s2", 2, 1, 136, 136, 136, { 28, 28 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C17 14x14 s2 batch 2", 2, 2, 17, 17, 17, { 14, 14 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          0 },
        { "dw rows C3 9x16", 2, 1, 3, 3, 3, { 9, 16 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C5 6x1", 2, 1, 5, 5, 5, { 6, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C1 1x1", 2, 1, 1, 1, 1, { 1, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C2 11x13 batch 2", 2, 2, 2, 2, 2, { 11, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C4 10x32 s2", 2, 1, 4, 4, 4, { 10, 32 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C7 13x31 s2", 2, 1, 7, 7, 7, { 13, 31 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C6 5x17 s2", 2, 1, 6, 6, 6, { 5, 17 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        { "dw rows C3 2x2 s2", 2, 1, 3, 3, 3, { 2, 2 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C136 28x28", 2, 1, 136, 136, 136, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C5 9x17", 2, 1, 5, 5, 5, { 9, 17 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 5x32 batch 2", 2, 2, 3, 3, 3, { 5, 32 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C4 6x31", 2, 1, 4, 4, 4, { 6, 31 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        /* rows wider than two vectors: MobileNetV2's 56x56 x 144 and 32 x
         * 112x112, 112x112 -> 56x56 x 96 and 56x56 -> 28x28 x 144; widths
         * around the vector edges (33, 47, 48, 49, 63, 64, 65, 113) */
        { "dw rows C144 56x56", 2, 1, 144, 144, 144, { 56, 56 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C32 112x112", 2, 1, 32, 32, 32, { 112, 112 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C96 112x112 s2", 2, 1, 96, 96, 96, { 112, 112 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          1 },
        { "dw rows C144 56x56 s2", 2, 1, 144, 144, 144, { 56, 56 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 7x33 batch 2", 2, 2, 3, 3, 3, { 7, 33 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C5 9x49", 2, 1, 5, 5, 5, { 9, 49 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        { "dw rows C2 5x64", 2, 1, 2, 2, 2, { 5, 64 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 6x113", 2, 1, 3, 3, 3, { 6, 113 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 9x33 s2 batch 2", 2, 2, 3, 3, 3, { 9, 33 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          1 },
        { "dw rows C5 7x47 s2", 2, 1, 5, 5, 5, { 7, 47 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C4 6x48 s2", 2, 1, 4, 4, 4, { 6, 48 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        { "dw rows C3 5x63 s2", 2, 1, 3, 3, 3, { 5, 63 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 8x65 s2", 2, 1, 3, 3, 3, { 8, 65 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C2 11x113 s2", 2, 1, 2, 2, 2, { 11, 113 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        /* stride 1, the last vector of 1 to 8 columns (both planes' in one
         * vector, the other vectors plane by plane 8 rows at a time):
         * tails of 2, 5, 7 and 8 columns, heights of 1, 2, 5 (4 + 1: 8
         * rows computed, 5 stored) and 6, odd channel counts and batch 2 */
        { "dw rows C7 6x40", 2, 1, 7, 7, 7, { 6, 40 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C3 5x37", 2, 1, 3, 3, 3, { 5, 37 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C5 13x55 batch 2", 2, 2, 5, 5, 5, { 13, 55 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          1 },
        { "dw rows C1 1x50", 2, 1, 1, 1, 1, { 1, 50 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw rows C4 2x34", 2, 1, 4, 4, 4, { 2, 34 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        /* blocks of rows (rlx_nn_dw_split_of: fewer than 4 pairs of planes
         * a thread on more than 2 threads): at 5 threads 7 blocks of 61
         * rows (whole groups of 4, the last short), 8 of 65 at stride 2
         * (odd widths), 2 of MobileNetV2's 112 with batch 2 */
        { "dw rows C5 61x96 (row blocks)", 2, 1, 5, 5, 5, { 61, 96 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          1 },
        { "dw rows C3 130x129 s2 (row blocks)", 2, 1, 3, 3, 3, { 130, 129 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "dw rows C8 112x112 batch 2 (row blocks)", 2, 2, 8, 8, 8, { 112, 112 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 0 },
        { "dw rows C5 61x71 (row blocks, 7-column tails)", 2, 1, 5, 5, 5, { 61, 71 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
    };
    if (rlx_cpu_isa_get() < RLX_CPU_ISA_AVX512) {
        fprintf(stderr, "depthwise rows: no AVX-512, skipped\n");
        return;
    }
    static const conv_case refused[] = {
        { "5x5", 2, 1, 8, 8, 8, { 14, 14 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "dilation 2", 2, 1, 8, 8, 8, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 2", 2, 1, 8, 8, 8, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "pad 0", 2, 1, 8, 8, 8, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "stride 2x1", 2, 1, 8, 8, 8, { 14, 14 }, { 3, 3 }, { 2, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        CHECK_MSG(dw_applies(&cases[i], rlx_nn_dw_rows_applies), "%s: rows path refused", cases[i].name);
    for (size_t i = 0; i < ARRAY_LEN(refused); i++)
        CHECK_MSG(!dw_applies(&refused[i], rlx_nn_dw_rows_applies), "%s: rows path applies", refused[i].name);
    rlx_nn_dw_force(3);
    int before = g_conv_cases;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        for (size_t r = 0; r < ARRAY_LEN(k_dw_runs); r++) run_conv_ex(&cases[i], k_dw_runs[r].act, k_dw_runs[r].res, BITS_DWR);
    fprintf(stderr, "depthwise rows: %d cases\n", g_conv_cases - before);
    rlx_nn_dw_force(0);
}

/* The depthwise flattened-planes path (cpu_nn_dw_rows.c, forced with
 * rlx_nn_dw_force(4); AVX-512 CPUs only): 3x3, pads 1, stride 1 on planes
 * of 16 to 256 points: MobileNetV2's 960 x 7x7 and ShuffleNet's 544 x
 * 7x7, channel counts that are no multiple of 16 (a block's run ending
 * inside a vector: 1, 5, 17, 33, 47), batch 2 and 3 (images split over
 * tasks at 5 threads), planes of 16 points (4x4, 1x16, 16x1: every lane an
 * edge), 256 (16x16), odd ones (5x13, 9x7) and rows wider than a vector
 * (2x20); every activation run of the blocked test; against the reference
 * at run_conv's tolerance and bit for bit against the blocked path
 * (dwf_bits: 1, 2 and 5 threads). Refused: stride 2, planes of 15 and 272
 * points, 5x5, pad 0. */
static void test_conv_depthwise_flat(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "dw flat C960 7x7", 2, 1, 960, 960, 960, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C47 7x7 batch 3", 2, 3, 47, 47, 47, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C17 4x4 batch 2", 2, 2, 17, 17, 17, { 4, 4 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
        { "dw flat C5 1x16", 2, 1, 5, 5, 5, { 1, 16 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C3 16x1", 2, 1, 3, 3, 3, { 16, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C33 16x16", 2, 1, 33, 33, 33, { 16, 16 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C1 5x13", 2, 1, 1, 1, 1, { 5, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C20 9x7 batch 2", 2, 2, 20, 20, 20, { 9, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "dw flat C7 2x20", 2, 1, 7, 7, 7, { 2, 20 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0 },
    };
    static const conv_case refused[] = {
        { "stride 2", 2, 1, 8, 8, 8, { 14, 14 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "15 points", 2, 1, 8, 8, 8, { 3, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "272 points", 2, 1, 8, 8, 8, { 16, 17 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "5x5", 2, 1, 8, 8, 8, { 7, 7 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "pad 0", 2, 1, 8, 8, 8, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "rows of 33", 2, 1, 8, 8, 8, { 2, 33 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    };
    if (rlx_cpu_isa_get() < RLX_CPU_ISA_AVX512) {
        fprintf(stderr, "depthwise flat: no AVX-512, skipped\n");
        return;
    }
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        CHECK_MSG(dw_applies(&cases[i], rlx_nn_dw_flat_applies), "%s: flat path refused", cases[i].name);
    for (size_t i = 0; i < ARRAY_LEN(refused); i++)
        CHECK_MSG(!dw_applies(&refused[i], rlx_nn_dw_flat_applies), "%s: flat path applies", refused[i].name);
    rlx_nn_dw_force(4);
    int before = g_conv_cases;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        for (size_t r = 0; r < ARRAY_LEN(k_dw_runs); r++) run_conv_ex(&cases[i], k_dw_runs[r].act, k_dw_runs[r].res, BITS_DWF);
    fprintf(stderr, "depthwise flat: %d cases\n", g_conv_cases - before);
    rlx_nn_dw_force(0);
}

/* The pointwise path (cpu_nn_pw.c: 1x1 stride 1 reading the input in place,
 * and small-K convolutions through a run's im2col), forced on
 * (rlx_nn_pw_force(2)) at every sgemm kernel the CPU runs (AVX-512, AVX2,
 * portable; rlx_cpu_sgemm_kernel_set): K = 1 .. 32 and some up to 256,
 * odd output channel counts (1, 7, 9, 17, 33, ...: partial row tiles),
 * positions that are no multiple of a vector (1, 35, 143, 201, ...),
 * groups, batch 2, 3x3 / 7x7 stride 2 and 1x1 stride 2 / padded (im2col); each
 * with and without a bias, with no activation, Relu, Clip (in registers)
 * and HardSwish (the GEMM path's epilogue after the store), with and
 * without a residual. Every run: within run_conv's tolerance of the
 * reference (1e-5 relative + 2e-6 per product), and the same bits as the
 * im2col + GEMM path (rlx_nn_pw_force(1)) at thread limits 1, 2 and 3
 * (the pool's size caps the limit; ctest also runs this program at 3, 5
 * and 16 threads), outputs poisoned with NaN. */
static int g_pw_runs;

static void pw_force_gemm(void) { rlx_nn_pw_force(1); }
static void pw_force_pw(void) { rlx_nn_pw_force(2); }

/* Node n on the pointwise path (forced) at thread limits 1, 2, 3 and 5
 * must give the bits of im2col + GEMM (rlx_nn_pw_force(1)); outputs
 * poisoned. */
static void pw_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    static const int lims[] = { 1, 2, 3, 5 };
    path_bits(what, n, in, rank, yd, pw_force_gemm, pw_force_pw, lims, (int)ARRAY_LEN(lims), "pointwise",
              "im2col + GEMM");
    g_pw_runs++;
}

static void test_conv_pointwise(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "K1 C7 5x7 (the depthwise path takes it)", 2, 1, 1, 7, 1, { 5, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K2 C1 1x1", 2, 1, 2, 1, 1, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K3 C9 11x13", 2, 1, 3, 9, 1, { 11, 13 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 0 },
        { "pw K5 C17 3x67", 2, 1, 5, 17, 1, { 3, 67 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K7 C33 15x15", 2, 1, 7, 33, 1, { 15, 15 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K8 C8 16x16", 2, 1, 8, 8, 1, { 16, 16 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K13 C25 batch 2 9x9", 2, 2, 13, 25, 1, { 9, 9 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K16 C96 23x23", 2, 1, 16, 96, 1, { 23, 23 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K17 C3 1-D 201", 1, 1, 17, 3, 1, { 201 }, { 1 }, { 1 }, { 1 }, { 0 }, { 0 }, 1 },
        { "pw K24 C145 7x9", 2, 1, 24, 145, 1, { 7, 9 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K31 C11 40x41 (several runs)", 2, 1, 31, 11, 1, { 40, 41 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 },
          1 },
        { "pw K32 C16 12x12", 2, 1, 32, 16, 1, { 12, 12 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 0 },
        { "pw K3 x group 3, C 2 x 3, batch 2", 2, 2, 9, 6, 3, { 6, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 },
          1 },
        { "pw K80 group 3 C 3 x 27 (ShuffleNet-like)", 2, 1, 240, 81, 3, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 0 }, { 0 }, 1 },
        { "pw K144 C24 10x10", 2, 1, 144, 24, 1, { 10, 10 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K256 C19 6x6", 2, 1, 256, 19, 1, { 6, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        /* ResNet-50's 1x1s at 56x56 and 28x28 on odd maps (rn50b) */
        { "pw K64 C256 19x17", 2, 1, 64, 256, 1, { 19, 17 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K256 C72 batch 2 9x13", 2, 2, 256, 72, 1, { 9, 13 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw K128 C200 11x11", 2, 1, 128, 200, 1, { 11, 11 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw 3-D K6 C5 3x4x5", 3, 1, 6, 5, 1, { 3, 4, 5 }, { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, { 0 }, { 0 }, 1 },
        { "im2col K27 3x3 s2 C32 (stem)", 2, 1, 3, 32, 1, { 23, 21 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "im2col K147 7x7 s2 pad 3 C13 (stem)", 2, 1, 3, 13, 1, { 19, 17 }, { 7, 7 }, { 2, 2 }, { 1, 1 },
          { 3, 3 }, { 3, 3 }, 1 },
        { "im2col K147 7x7 s2 C5 on 47x49 (several runs)", 2, 1, 3, 5, 1, { 47, 49 }, { 7, 7 }, { 2, 2 }, { 1, 1 },
          { 3, 3 }, { 3, 3 }, 1 },
        { "im2col K12 1x1 s2 C9", 2, 2, 12, 9, 1, { 9, 10 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "im2col K6 1x1 pad 1 C7", 2, 1, 6, 7, 1, { 5, 6 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 0 }, { 0, 1 }, 0 },
        { "im2col K18 3x3 group 2 dilation 2 C10", 2, 1, 4, 10, 2, { 9, 8 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 1 },
          { 1, 2 }, 1 },
    };
    static const struct {
        rlx_act_kind act;
        bool res;
    } runs[] = { { RLX_ACT_NONE, false }, { RLX_ACT_RELU, false }, { RLX_ACT_CLIP, false },
                 { RLX_ACT_HARDSWISH, false }, { RLX_ACT_NONE, true }, { RLX_ACT_CLIP, true },
                 { RLX_ACT_HARDSWISH, true } };
    rlx_cpu_sgemm_kernel top = rlx_cpu_sgemm_kernel_get();
    for (int kern = (int)top; kern >= (int)RLX_CPU_SGEMM_PORTABLE; kern--) {
        if (!rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern)) continue;
        int before = g_pw_runs;
        rlx_nn_pw_force(2);
        for (size_t i = 0; i < ARRAY_LEN(cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(runs); r++) {
                conv_case c = cases[i];
                for (int bias = 0; bias < 2; bias++) {
                    if (bias && !c.bias) continue;
                    c.bias = bias;
                    run_conv_ex(&c, runs[r].act, runs[r].res, BITS_PW);
                }
            }
        rlx_nn_pw_force(0);
        fprintf(stderr, "pointwise, sgemm kernel %d: %d runs\n", kern, g_pw_runs - before);
    }
    CHECK(rlx_cpu_sgemm_kernel_set(top));
}

/* The pointwise path on strided 2-D convolutions, its positions read in
 * place from phase rows of the padded input (cpu_nn_pw.c, pw_job; the
 * default): strides 2 and 3 along the rows with 1 or 2 down the columns,
 * dilation 2, asymmetric and zero pads, kernels 1x1 to 7x7, groups 2,
 * batch 2, maps whose rows split the runs of positions (and the runs of
 * the thread blocks); at every sgemm kernel, forced on (rlx_nn_pw_force(2)),
 * with no activation, Clip, HardSwish and a residual, the phase rows at
 * every thread count (rlx_nn_pw_phase_rows(2)): within run_conv's
 * tolerance of the reference and the bits of im2col + GEMM at thread
 * limits 1, 2, 3 and 5 (pw_bits); every run must have read phase rows
 * (rlx_nn_pw_phase_runs). */
static void test_conv_pw_phase_rows(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "phase 3x3 s2 C3->32 on 224x224 (MobileNetV2's stem)", 2, 1, 3, 32, 1, { 224, 224 }, { 3, 3 }, { 2, 2 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "phase 3x3 s2 pads 0/1 C3->16 on 33x30", 2, 2, 3, 16, 1, { 33, 30 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 0, 0 }, { 1, 1 }, 1 },
        { "phase 3x3 s(1,2) C4->9 on 17x40", 2, 1, 4, 9, 1, { 17, 40 }, { 3, 3 }, { 1, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "phase 5x5 s3 dilation 2 C2->7 on 31x29", 2, 1, 2, 7, 1, { 31, 29 }, { 5, 5 }, { 3, 3 }, { 2, 2 },
          { 2, 3 }, { 1, 0 }, 0 },
        { "phase 7x7 s2 pad 3 C3->24 on 70x66 (ResNet's stem)", 2, 1, 3, 24, 1, { 70, 66 }, { 7, 7 }, { 2, 2 },
          { 1, 1 }, { 3, 3 }, { 3, 3 }, 1 },
        { "phase 1x1 s2 C12->9 on 9x10", 2, 2, 12, 9, 1, { 9, 10 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "phase 3x3 s2 group 2 C4->6 on 15x19", 2, 2, 4, 6, 2, { 15, 19 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "phase 3x1 s2 C5->8 on 12x9", 2, 1, 5, 8, 1, { 12, 9 }, { 3, 1 }, { 2, 2 }, { 1, 1 }, { 1, 0 }, { 1, 0 }, 1 },
    };
    static const struct {
        rlx_act_kind act;
        bool res;
    } runs[] = { { RLX_ACT_NONE, false }, { RLX_ACT_CLIP, false }, { RLX_ACT_HARDSWISH, false },
                 { RLX_ACT_NONE, true } };
    rlx_cpu_sgemm_kernel top = rlx_cpu_sgemm_kernel_get();
    int before = g_conv_cases;
    for (int kern = (int)top; kern >= (int)RLX_CPU_SGEMM_PORTABLE; kern--) {
        if (!rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern)) continue;
        rlx_nn_pw_force(2);
        rlx_nn_pw_phase_rows(2);
        for (size_t i = 0; i < ARRAY_LEN(cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(runs); r++) {
                if (i == 0 && (r > 1 || kern != (int)top)) continue; /* the full-size stem: twice */
                size_t ph = rlx_nn_pw_phase_runs();
                run_conv_ex(&cases[i], runs[r].act, runs[r].res, BITS_PW);
                CHECK_MSG(rlx_nn_pw_phase_runs() > ph, "%s, sgemm kernel %d: no phase rows", cases[i].name, kern);
            }
        rlx_nn_pw_force(0);
        rlx_nn_pw_phase_rows(1);
    }
    CHECK(rlx_cpu_sgemm_kernel_set(top));
    fprintf(stderr, "pointwise on phase rows: %d cases\n", g_conv_cases - before);
}

/* Batches whose planes the fast paths prefetch ahead of use (the
 * pointwise path's input rows one run ahead and its output rows; the
 * channel-blocked depthwise path's next task's rows: the next row block,
 * the next channel block, the next image's first block, and none after
 * the last): MobileNetV2's expansion / projection and depthwise shapes at
 * a reduced size, batch 2 to 4, several runs of positions, several row
 * blocks and a partial last channel block. Each within run_conv's
 * tolerance of the reference (1e-5 relative + 2e-6 per product), the
 * pointwise ones also the bits of im2col + GEMM at thread limits 1, 2 and
 * 3 (pw_bits); ctest runs this program at 1, 2 (the default here), 3, 5
 * and 16 threads. */
static void test_conv_batch_prefetch(void) {
    static const conv_case pw_cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "pw batch 3 K32 C16 40x40 (runs of 512)", 2, 3, 32, 16, 1, { 40, 40 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 },
          { 0 }, 1 },
        { "pw batch 2 K144 C24 30x31", 2, 2, 144, 24, 1, { 30, 31 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
        { "pw batch 4 K16 C96 28x29", 2, 4, 16, 96, 1, { 28, 29 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0 }, { 0 }, 1 },
    };
    static const conv_case dw_cases[] = {
        { "dw batch 3 C40 3x3 on 120x60 (row blocks)", 2, 3, 40, 40, 40, { 120, 60 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "dw batch 2 C20 3x3 s2 on 96x90", 2, 2, 20, 20, 20, { 96, 90 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 },
          { 1, 1 }, 1 },
        { "dw batch 4 C48 3x3 on 14x14", 2, 4, 48, 48, 48, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
    };
    static const struct {
        rlx_act_kind act;
        bool res;
    } runs[] = { { RLX_ACT_CLIP, false }, { RLX_ACT_NONE, true }, { RLX_ACT_HARDSWISH, false } };
    size_t pw_before = rlx_nn_pw_runs();
    int before = g_conv_cases;
    for (size_t i = 0; i < ARRAY_LEN(pw_cases); i++)
        for (size_t r = 0; r < ARRAY_LEN(runs); r++) run_conv_ex(&pw_cases[i], runs[r].act, runs[r].res, BITS_PW);
    rlx_nn_pw_force(0);
    CHECK(rlx_nn_pw_runs() > pw_before);
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_AVX2; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        rlx_nn_dw_force(2);
        for (size_t i = 0; i < ARRAY_LEN(dw_cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(runs); r++) run_conv(&dw_cases[i], runs[r].act, runs[r].res);
    }
    rlx_cpu_isa_cap(top);
    rlx_nn_dw_force(0);
    fprintf(stderr, "batches with prefetching: %d cases\n", g_conv_cases - before);
}

/* The pointwise path's rule on ResNet-50's and MobileNetV2's shapes at
 * full size, batch 1 and 2 (pw_by_shape, not forced): the 1x1s with K <= 256
 * at 56x56, and with a residual at 28x28, take it (rlx_nn_pw_runs), others
 * not; with the weights packed as at compile time, the bits of im2col +
 * GEMM (rlx_nn_pw_force(1)) at thread limits 1, 2 and 3, outputs poisoned;
 * one case also within run_conv's tolerance of the reference. */
static void test_conv_pointwise_rule(void) {
    static const struct {
        int64_t n, cin, cout, hw;
        bool res, pw;
    } cases[] = {
        { 1, 64, 256, 56, true, true },   /* ResNet-50 expand, residual */
        { 2, 64, 256, 56, false, true },  /* its projection branch */
        { 1, 256, 64, 56, false, true },  { 1, 256, 128, 56, false, true },
        { 1, 128, 512, 28, true, true },  { 1, 128, 512, 28, false, false },
        { 1, 144, 24, 56, true, true },   /* MobileNetV2 (K x C_out small: taken before too) */
        { 1, 192, 192, 40, false, false }, { 1, 256, 1024, 14, true, false },
    };
    if (rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_PORTABLE) return;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        int64_t xd[4] = { cases[i].n, cases[i].cin, cases[i].hw, cases[i].hw },
                wd[4] = { cases[i].cout, cases[i].cin, 1, 1 }, bd[1] = { cases[i].cout },
                yd[4] = { cases[i].n, cases[i].cout, cases[i].hw, cases[i].hw };
        node_attrs st = { .n = 0 };
        act_attrs(&st, RLX_ACT_RELU);
        rlx_node n = make_node("Conv", 11, cases[i].res ? 4 : 3, 1, &st);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1),
                   *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1),
                   *r = cases[i].res ? test_tensor_random(RLX_DTYPE_F32, 4, yd, -1, 1) : NULL;
        const rlx_tensor *in[4] = { x, w, b, r };
        char what[120];
        snprintf(what, sizeof what, "rule: 1x1 %lld->%lld at %lldx%lld, batch %lld%s", (long long)cases[i].cin,
                 (long long)cases[i].cout, (long long)cases[i].hw, (long long)cases[i].hw, (long long)cases[i].n,
                 cases[i].res ? ", residual" : "");
        if (i == 0) CHECK_MSG(fast_vs_ref(what, &n, in, 4, yd, 1e-5, 2e-6 * (double)(cases[i].cin + 1)), "%s", what);
        rlx_cpu_sgemm_pack pk;
        CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
        rlx_tensor *gemm = test_tensor(RLX_DTYPE_F32, 4, yd), *fast = test_tensor(RLX_DTYPE_F32, 4, yd);
        rlx_tensor *go[1] = { gemm }, *fo[1] = { fast };
        poison(gemm);
        rlx_nn_pw_force(1);
        CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, go, &pk));
        rlx_nn_pw_force(0);
        for (int lim = 1; lim <= 3; lim++) {
            int prev = rlx_parallel_set_limit(lim);
            poison(fast);
            size_t before = rlx_nn_pw_runs();
            CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, fo, &pk));
            bool took = rlx_nn_pw_runs() > before;
            CHECK_MSG(took == cases[i].pw, "%s: pointwise path %s", what, took ? "taken" : "not taken");
            CHECK_MSG(memcmp(fast->data, gemm->data, rlx_tensor_numel(gemm) * sizeof(float)) == 0,
                      "%s, %d threads: not the bits of im2col + GEMM", what, lim);
            rlx_parallel_set_limit(prev);
        }
        rlx_cpu_sgemm_pack_free(&pk);
        rlx_tensor_destroy(gemm), rlx_tensor_destroy(fast);
        rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b), rlx_tensor_destroy(r);
    }
}

/* The implicit-GEMM path (cpu_nn_conv_ig.c: the input copied once into
 * zero-padded planes split by stride phase, the sgemm's packed weights,
 * B read at per-tap offsets), forced on (rlx_nn_ig_force(2)) at every
 * sgemm kernel the CPU runs (it runs with the AVX-512 one only; the others
 * fall back to im2col + GEMM): 3x3 with pads 0 / 1 / 3 (outputs whose taps
 * all fall in the padding), asymmetric pads, strides 1 / 2 / 3, dilation
 * 2, 5x3 kernels, 1-D, groups 2, batch 2, widths that are no multiple of
 * 16 (9, 13, 19, 23, 29, 130), output channels that are no multiple of 8
 * (partial weight panels), K above 256 (2 and 3 k panels: the sgemm's
 * cut) and several blocks of positions; each with no activation, Relu,
 * Clip, HardSwish, with and without a residual, with and without a bias.
 * Every run: within run_conv's tolerance of the reference (1e-5 relative
 * + 2e-6 per product), and the same bits as im2col + GEMM with the same
 * packed weights (rlx_nn_ig_force(1)) at thread limits 1, 2 and 3,
 * outputs poisoned with NaN, the plain weights poisoned with NaN during
 * the packed runs (fast_vs_ref); with the AVX-512 kernel every forced run
 * must have taken the path (rlx_nn_ig_runs). */
static int g_ig_runs;

static void ig_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    rlx_cpu_sgemm_pack pk;
    CHECK_OK(rlx_cpu_prepare_node(NULL, n, in, &pk));
    CHECK_MSG(pk.data != NULL, "%s: weights not packed", what);
    if (!pk.data) return;
    rlx_tensor *gemm = test_tensor(RLX_DTYPE_F32, rank, yd);
    rlx_tensor *gemm_o[1] = { gemm };
    poison(gemm);
    rlx_nn_ig_force(1);
    CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, gemm_o, &pk));
    rlx_nn_ig_force(2);
    bool avx512 = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    size_t bytes = rlx_tensor_numel(gemm) * sizeof(float);
    static const int lims[] = { 1, 2, 3, 5 };
    for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
        int lim = lims[li], prev = rlx_parallel_set_limit(lim);
        rlx_tensor *ig = test_tensor(RLX_DTYPE_F32, rank, yd);
        rlx_tensor *ig_o[1] = { ig };
        poison(ig);
        size_t before = rlx_nn_ig_runs();
        CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, ig_o, &pk));
        if (avx512) CHECK_MSG(rlx_nn_ig_runs() == before + 1, "implicit GEMM %s: did not run", what);
        CHECK_MSG(memcmp(ig->data, gemm->data, bytes) == 0, "implicit GEMM %s, %d threads: not the bits of im2col + GEMM",
                  what, lim);
        rlx_tensor_destroy(ig);
        rlx_parallel_set_limit(prev);
    }
    g_ig_runs++;
    rlx_tensor_destroy(gemm);
    rlx_cpu_sgemm_pack_free(&pk);
}

/* The activations and residuals each path test runs its cases with. */
static const struct {
    rlx_act_kind act;
    bool res;
} k_path_runs[] = { { RLX_ACT_NONE, false }, { RLX_ACT_RELU, false }, { RLX_ACT_CLIP, false },
                    { RLX_ACT_HARDSWISH, false }, { RLX_ACT_RELU, true }, { RLX_ACT_HARDSWISH, true } };

static void test_conv_implicit_gemm(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "ig 3x3 pad 1 C8->13 on 9x19", 2, 1, 8, 13, 1, { 9, 19 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "ig 3x3 pad 0 C5->8 on 11x13", 2, 1, 5, 8, 1, { 11, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "ig 3x3 pad 3 C3->9 on 4x5 (all-padding outputs)", 2, 1, 3, 9, 1, { 4, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 3, 3 }, { 3, 3 }, 1 },
        { "ig 3x3 s2 pad 1 C6->10 on 15x23 batch 2", 2, 2, 6, 10, 1, { 15, 23 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "ig 3x3 s2 pad 0/1 C7->16 on 16x29", 2, 1, 7, 16, 1, { 16, 29 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 },
          { 1, 1 }, 0 },
        { "ig 3x3 s3 C4->5 on 20x19", 2, 1, 4, 5, 1, { 20, 19 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 2 }, { 0, 1 }, 1 },
        { "ig 3x3 dilation 2 pad 2 C4->6 on 15x12", 2, 1, 4, 6, 1, { 15, 12 }, { 3, 3 }, { 1, 1 }, { 2, 2 }, { 2, 2 },
          { 2, 2 }, 1 },
        { "ig 5x3 stride 3x1 dilation 1x3 C3->5", 2, 1, 3, 5, 1, { 16, 20 }, { 5, 3 }, { 3, 1 }, { 1, 3 }, { 2, 0 },
          { 1, 4 }, 0 },
        { "ig 7x7 s2 pad 3 C3->16 (stem)", 2, 1, 3, 16, 1, { 38, 38 }, { 7, 7 }, { 2, 2 }, { 1, 1 }, { 3, 3 }, { 3, 3 },
          1 },
        { "ig 3x3 group 2 C8->12 batch 2", 2, 2, 8, 12, 2, { 9, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "ig 1-D k3 C6->7 on 70", 1, 1, 6, 7, 1, { 70 }, { 3 }, { 1 }, { 1 }, { 1 }, { 1 }, 1 },
        { "ig 3x3 K 360 C40->20 on 10x10 (2 k panels)", 2, 1, 40, 20, 1, { 10, 10 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "ig 3x3 K 576 C64->17 on 7x7 (3 k panels)", 2, 1, 64, 17, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ig 3x3 s2 K 324 C36->24 on 14x14", 2, 1, 36, 24, 1, { 14, 14 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ig 3x3 C4->64 on 40x40 (several position blocks)", 2, 1, 4, 64, 1, { 40, 40 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "ig 3x3 C2->3 on 6x130 (wide rows)", 2, 1, 2, 3, 1, { 6, 130 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ig 1x1 s2 C12->9 batch 2", 2, 2, 12, 9, 1, { 9, 10 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
    };
    rlx_cpu_sgemm_kernel top = rlx_cpu_sgemm_kernel_get();
    size_t ran = rlx_nn_ig_runs();
    for (int kern = (int)top; kern >= (int)RLX_CPU_SGEMM_PORTABLE; kern--) {
        if (!rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern)) continue;
        int before = g_ig_runs;
        rlx_nn_ig_force(2);
        rlx_nn_pw_force(1); /* small K: not the pointwise path */
        for (size_t i = 0; i < ARRAY_LEN(cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(k_path_runs); r++) {
                conv_case c = cases[i];
                c.bias = (int)((i + r) % 2) && c.bias;
                run_conv_ex(&c, k_path_runs[r].act, k_path_runs[r].res, BITS_IG);
            }
        rlx_nn_pw_force(0);
        rlx_nn_ig_force(0);
        fprintf(stderr, "implicit GEMM, sgemm kernel %d: %d runs\n", kern, g_ig_runs - before);
    }
    CHECK(rlx_cpu_sgemm_kernel_set(top));
    if (top == RLX_CPU_SGEMM_AVX512) CHECK_MSG(rlx_nn_ig_runs() > ran, "the implicit GEMM never ran");
}

/* The Winograd F(2x2, 3x3) and F(4x4, 3x3) paths (cpu_nn_conv_wino.c:
 * weights transformed at compile time, the input into padded planes of
 * 2 or 4 column phases, 16 or 36 GEMMs per block of 48 tiles), each case
 * run as both, forced on (rlx_nn_wino_force(2), (4)) at every
 * sgemm kernel the CPU runs (it runs with the AVX-512 one only; the others
 * pack no Winograd weights and take the other paths): 3x3 stride 1 with
 * pads 1, 0, 2 and asymmetric ones, odd and even output rows and columns
 * (the last tiles' dropped row and column), maps from 1x1 output (one
 * tile) to 6 tile blocks, tasks of 1, 2 and 3 blocks, and tile rows that
 * cross blocks (widths 5, 28, 29, 35, 100), input channels 2, 3, 9, 17,
 * 64 and 70, output channels 1, 13, 20, 70 and 136 (partial panels,
 * several blocks of 64), batch 2; several images per pass (7x7 batch 8,
 * 14x14 batch 11 in two passes, 7x5 outputs batch 5, 7x7 batch 3 with 96
 * input channels: tile blocks that cross images); each with no
 * activation, Relu, Clip, HardSwish, with and without a residual and a
 * bias; F(4x4)'s shapes of SqueezeNet (55x55, 27x27 at batch 2, 13x13
 * at batch 3), one whole tile, a map smaller than a tile, 33 input
 * channels. Every run: within run_conv's tolerance of the reference (1e-5
 * relative + 2e-6 per product of the sum for F(2x2), 8e-6 for F(4x4),
 * inputs and weights in [-1, 1])
 * at thread limits 1, 2 and 5 with the same bits at each, outputs
 * poisoned with NaN, the plain weights poisoned with NaN during the
 * packed runs; with the AVX-512 kernel every forced run must have taken
 * the path (rlx_nn_wino_runs). Printed (AVX-512 runs): the largest
 * error against the reference as a share of the tolerance's absolute
 * term, and that of im2col + GEMM beside it. */
static int g_wino_runs;
static double g_wino_err[2], g_wino_gemm_err; /* [0] F(2x2), [1] F(4x4) */

static double max_err(const rlx_tensor *a, const rlx_tensor *b) {
    double m = 0.0;
    const float *p = a->data, *q = b->data;
    for (size_t i = 0; i < rlx_tensor_numel(a); i++) {
        double d = fabs((double)p[i] - (double)q[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

/* n with the packed weights pk at thread limit lim into a new output of
 * shape yd (poisoned first); *runs: the Winograd runs it made. */
static rlx_tensor *run_packed_at(const rlx_node *n, const rlx_tensor *const *in, const rlx_cpu_sgemm_pack *pk,
                                 const int64_t *yd, int lim, size_t *runs) {
    int prev = rlx_parallel_set_limit(lim);
    rlx_tensor *out = test_tensor(RLX_DTYPE_F32, 4, yd);
    rlx_tensor *oo[1] = { out };
    poison(out);
    size_t before = rlx_nn_wino_runs();
    CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, oo, pk));
    rlx_parallel_set_limit(prev);
    *runs = rlx_nn_wino_runs() - before;
    return out;
}

static void run_wino(const conv_case *c, int wm, rlx_act_kind act, bool with_res) {
    int64_t xd[4] = { c->n, c->cin, c->in[0], c->in[1] }, wd[4] = { c->cout, c->cin, 3, 3 }, bd[1] = { c->cout };
    int64_t pads[4] = { c->pb[0], c->pb[1], c->pe[0], c->pe[1] }, ones[2] = { 1, 1 }, k3[2] = { 3, 3 };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, k3);
    attr_ints(&st, "strides", 2, ones);
    attr_ints(&st, "pads", 4, pads);
    act_attrs(&st, act);
    rlx_node n = make_node("Conv", 11, with_res ? 4 : c->bias ? 3 : 2, 1, &st);
    rlx_conv_geom g;
    rlx_status s = rlx_conv_geom_resolve(&n, RLX_GEOM_CONV, xd, 4, wd, 4, &g);
    CHECK_MSG(s == RLX_OK, "%s: geometry: %s", c->name, rlx_last_error());
    if (s) return;
    int64_t yd[4] = { c->n, c->cout, g.out[0], g.out[1] };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *b = c->bias ? test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1) : NULL;
    rlx_tensor *r = with_res ? test_tensor_random(RLX_DTYPE_F32, 4, yd, -1, 1) : NULL;
    const rlx_tensor *in[4] = { x, w, b, r };
    /* F(4x4)'s transforms scale by up to 10 (B^T) and 8 (A^T) with
     * cancellation: 4 times F(2x2)'s absolute term (its largest error on
     * these cases: about 0.5 of F(2x2)'s, 0.12 of its own) */
    double unit = (wm == 4 ? 8e-6 : 2e-6) * (double)(c->cin * 9 + 1);
    char what[200];
    snprintf(what, sizeof what, "Winograd F(%dx%d) %s, act %d%s%s", wm, wm, c->name, (int)act,
             c->bias ? ", bias" : "", with_res ? ", residual" : "");
    rlx_tensor *ref = test_tensor(RLX_DTYPE_F32, 4, yd), *gemm = test_tensor(RLX_DTYPE_F32, 4, yd);
    rlx_tensor *ro[1] = { ref }, *go[1] = { gemm };
    poison(ref), poison(gemm);
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, ro, true));
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, go, false)); /* unpacked: im2col + GEMM */
    rlx_nn_wino_force(wm);
    rlx_cpu_sgemm_pack pk;
    CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
    bool avx512 = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    CHECK_MSG(!avx512 || (pk.wino && pk.wino_m == wm), "%s: no Winograd weights", what);
    size_t wn = rlx_tensor_numel(w), bytes = rlx_tensor_numel(ref) * sizeof(float);
    float *keep = malloc(wn * sizeof(float));
    memcpy(keep, w->data, wn * sizeof(float));
    for (size_t i = 0; i < wn; i++) ((float *)w->data)[i] = NAN;
    rlx_tensor *first = NULL;
    static const int lims[] = { 1, 2, 5 };
    for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
        size_t runs;
        rlx_tensor *out = run_packed_at(&n, in, &pk, yd, lims[li], &runs);
        if (avx512) CHECK_MSG(runs == 1, "%s: did not run", what);
        const float *a = out->data, *e = ref->data;
        for (size_t i = 0; i < rlx_tensor_numel(ref); i++) {
            double d = fabs((double)a[i] - (double)e[i]);
            if (!(d <= 1e-5 * fabs((double)e[i]) + unit)) {
                CHECK_MSG(false, "%s, %d threads: element %zu: %.9g, reference %.9g", what, lims[li], i, a[i], e[i]);
                break;
            }
        }
        if (!first) first = out;
        else {
            CHECK_MSG(memcmp(out->data, first->data, bytes) == 0, "%s: %d threads: not the bits of 1 thread", what,
                      lims[li]);
            rlx_tensor_destroy(out);
        }
    }
    memcpy(w->data, keep, wn * sizeof(float));
    free(keep);
    rlx_nn_wino_force(0);
    double base = 2e-6 * (double)(c->cin * 9 + 1); /* errors as shares of F(2x2)'s term */
    double ew = max_err(first, ref) / base * 2e-6, eg = max_err(gemm, ref) / base * 2e-6;
    if (avx512 && ew > g_wino_err[wm == 4]) g_wino_err[wm == 4] = ew;
    if (avx512 && eg > g_wino_gemm_err) g_wino_gemm_err = eg;
    g_wino_runs++;
    rlx_cpu_sgemm_pack_free(&pk);
    rlx_tensor_destroy(first), rlx_tensor_destroy(ref), rlx_tensor_destroy(gemm);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b), rlx_tensor_destroy(r);
}

/* Inputs the Winograd path declines (an inf, a NaN, a value of 2^64 or
 * more: rlx_nn_wino_tame against the pack's bound, at most 2^64), in the rows of the first, a middle or the last
 * task's tiles (so that at 2 and 5 threads, where each task checks the
 * rows it pads, other tasks may have written their outputs first): the
 * path is forced on, yet does not count a run, and the outputs (poisoned
 * before) are the bits of the unpacked run (the same fallback path), at
 * thread limits 1, 2 and 5; batch 1 (one pass) and batch 3 on 7x7 (one
 * pass of 3 images, tasks across images), and batch 11 on 14x14 (two
 * passes: every input is checked before the first). */
static void test_conv_winograd_wild(void) {
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return;
    static const struct {
        int64_t n, cin, cout, h;
    } shapes[] = { { 1, 64, 64, 56 }, { 3, 96, 72, 7 }, { 11, 12, 20, 14 } };
    static const float wild[] = { INFINITY, NAN, 0x1p64f };
    for (size_t si = 0; si < ARRAY_LEN(shapes); si++) {
        int64_t n0 = shapes[si].n, ci = shapes[si].cin, co = shapes[si].cout, h = shapes[si].h;
        int64_t xd[4] = { n0, ci, h, h }, wd[4] = { co, ci, 3, 3 }, bd[1] = { co }, yd[4] = { n0, co, h, h };
        int64_t pads[4] = { 1, 1, 1, 1 }, ones[2] = { 1, 1 }, k3[2] = { 3, 3 };
        node_attrs st = { .n = 0 };
        attr_ints(&st, "kernel_shape", 2, k3);
        attr_ints(&st, "strides", 2, ones);
        attr_ints(&st, "pads", 4, pads);
        act_attrs(&st, RLX_ACT_RELU);
        rlx_node n = make_node("Conv", 11, 3, 1, &st);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
        const rlx_tensor *in[3] = { x, w, b };
        rlx_nn_wino_force(2);
        rlx_cpu_sgemm_pack pk;
        CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
        CHECK_MSG(pk.wino && pk.wino_m == 2, "wild inputs, C%lld->%lld: no Winograd weights", (long long)ci,
                  (long long)co);
        float *xv = x->data;
        size_t plane = (size_t)(h * h), np = (size_t)(n0 * ci) * plane;
        /* the first row of the first plane, a middle row of a middle
         * plane, the last row of the last plane */
        const size_t at[3] = { 3, np / 2 + plane / 2, np - 2 };
        for (size_t a = 0; a < ARRAY_LEN(at); a++)
            for (size_t k = 0; k < ARRAY_LEN(wild); k++) {
                float keep = xv[at[a]];
                xv[at[a]] = wild[k];
                rlx_tensor *want = test_tensor(RLX_DTYPE_F32, 4, yd);
                rlx_tensor *wo[1] = { want };
                poison(want);
                CHECK_OK(rlx_cpu_run_node(NULL, &n, in, wo, false));
                static const int lims[] = { 1, 2, 5 };
                for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
                    size_t runs;
                    rlx_tensor *out = run_packed_at(&n, in, &pk, yd, lims[li], &runs);
                    CHECK_MSG(runs == 0, "C%lld->%lld batch %lld, %g at %zu, %d threads: ran Winograd",
                              (long long)ci, (long long)co, (long long)n0, (double)wild[k], at[a], lims[li]);
                    CHECK_MSG(memcmp(out->data, want->data, rlx_tensor_numel(want) * sizeof(float)) == 0,
                              "C%lld->%lld batch %lld, %g at %zu, %d threads: not the bits of the unpacked run",
                              (long long)ci, (long long)co, (long long)n0, (double)wild[k], at[a], lims[li]);
                    rlx_tensor_destroy(out);
                }
                rlx_tensor_destroy(want);
                xv[at[a]] = keep;
            }
        rlx_nn_wino_force(0);
        rlx_cpu_sgemm_pack_free(&pk);
        rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
    }
}

/* Inputs and weights whose products are finite in the direct sums but
 * overflow through Winograd's transforms (a tester's repro, 2026-12-05:
 * both near 1.5e19, each below the 2^64 that the path held inputs and
 * weights to apart; products of 2.25e38, and F(2x2)'s M took four times
 * that: inf where the direct path is finite). One tile: a 4x4 map of 2
 * input channels at pad 0 (2x2 outputs), channel 0 of the input and of
 * output channel 0's weights in a pattern scaled by c where F(2x2)'s M
 * holds 4 c^2 while each output meets one product of c^2 (a search over
 * patterns of -1, 0, 1), the rest small random; 3 output channels, a
 * bias. Forced on as F(2x2) and F(4x4), at thread limits 1, 2 and 5:
 * every output finite and within 1e-5 relative + 2e-6 x c^2 per product
 * of the reference's; with c = 1.5e19 the path declines (its bound on
 * inputs follows from the largest weight: rlx_nn_wino_xlim), with c =
 * 2^20 (products of 2^40) it runs. */
static void test_conv_winograd_overflow(void) {
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return;
    static const float pd[4][4] = { { -1, -1, 0, 1 }, { 0, 0, 0, 0 }, { 1, 1, 0, -1 }, { 1, 0, 0, 0 } };
    static const float pg[3][3] = { { 0, 1, -1 }, { 0, 0, 1 }, { 0, 0, 0 } };
    static const float scales[] = { 1.5e19f, 0x1p20f };
    int64_t xd[4] = { 1, 2, 4, 4 }, wd[4] = { 3, 2, 3, 3 }, bd[1] = { 3 }, yd[4] = { 1, 3, 2, 2 };
    int64_t pads[4] = { 0, 0, 0, 0 }, ones[2] = { 1, 1 }, k3[2] = { 3, 3 };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, k3);
    attr_ints(&st, "strides", 2, ones);
    attr_ints(&st, "pads", 4, pads);
    rlx_node n = make_node("Conv", 11, 3, 1, &st);
    for (size_t si = 0; si < ARRAY_LEN(scales); si++)
        for (int wm = 2; wm <= 4; wm += 2) {
            float c = scales[si];
            rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
            rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
            rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
            float *xv = x->data, *wv = w->data;
            for (int i = 0; i < 16; i++)
                if (pd[i / 4][i % 4] != 0.0f) xv[i] = pd[i / 4][i % 4] * c;
            for (int i = 0; i < 9; i++)
                if (pg[i / 3][i % 3] != 0.0f) wv[i] = pg[i / 3][i % 3] * c;
            const rlx_tensor *in[3] = { x, w, b };
            rlx_tensor *ref = test_tensor(RLX_DTYPE_F32, 4, yd);
            rlx_tensor *ro[1] = { ref };
            poison(ref);
            CHECK_OK(rlx_cpu_run_node(NULL, &n, in, ro, true));
            const float *e = ref->data;
            for (size_t i = 0; i < rlx_tensor_numel(ref); i++)
                CHECK_MSG(isfinite(e[i]), "large values, c %g: reference element %zu not finite (%g)", (double)c, i,
                          (double)e[i]);
            rlx_nn_wino_force(wm);
            rlx_cpu_sgemm_pack pk;
            CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
            CHECK_MSG(pk.wino && pk.wino_m == wm, "large values, c %g, F(%dx%d): no Winograd weights", (double)c, wm,
                      wm);
            double unit = 2e-6 * (double)c * (double)c * (double)(2 * 9 + 1);
            static const int lims[] = { 1, 2, 5 };
            for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
                size_t runs;
                rlx_tensor *out = run_packed_at(&n, in, &pk, yd, lims[li], &runs);
                CHECK_MSG(runs == (si == 0 ? 0u : 1u), "large values, c %g, F(%dx%d), %d threads: %zu Winograd runs",
                          (double)c, wm, wm, lims[li], runs);
                const float *a = out->data;
                for (size_t i = 0; i < rlx_tensor_numel(ref); i++) {
                    double d = fabs((double)a[i] - (double)e[i]);
                    if (!(d <= 1e-5 * fabs((double)e[i]) + unit)) {
                        CHECK_MSG(false, "large values, c %g, F(%dx%d), %d threads: element %zu: %.9g, reference %.9g",
                                  (double)c, wm, wm, lims[li], i, (double)a[i], (double)e[i]);
                        break;
                    }
                }
                rlx_tensor_destroy(out);
            }
            rlx_nn_wino_force(0);
            rlx_cpu_sgemm_pack_free(&pk);
            rlx_tensor_destroy(ref), rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
        }
}


/* rlx_nn_wino_wanted of a 3x3, stride 1, pad 1 Conv of c -> co channels on
 * side x side maps, batch n, max_m the largest variant allowed. */
static int wino_rule_of(int64_t side, int64_t c, int64_t co, int64_t n, int max_m) {
    int64_t xd[4] = { n, c, side, side }, wd[4] = { co, c, 3, 3 };
    int64_t pads[4] = { 1, 1, 1, 1 }, ones[2] = { 1, 1 }, k3[2] = { 3, 3 };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, k3);
    attr_ints(&st, "strides", 2, ones);
    attr_ints(&st, "pads", 4, pads);
    rlx_node nd = make_node("Conv", 11, 2, 1, &st);
    rlx_conv_geom g;
    rlx_nn_sp3 sp;
    CHECK_OK(rlx_conv_geom_resolve(&nd, RLX_GEOM_CONV, xd, 4, wd, 4, &g));
    rlx_nn_sp3_init(&g, &sp);
    return rlx_nn_wino_wanted(&sp, (size_t)n, 1, (size_t)c, (size_t)co, max_m);
}

static void test_conv_winograd(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in (h, w), k, s, d, pb, pe, bias */
        { "pad 1 C17->13 on 9x29", 2, 1, 17, 13, 1, { 9, 29 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 1 C3->70 on 10x100 (3 tile blocks, 2 channel blocks)", 2, 1, 3, 70, 1, { 10, 100 }, { 3, 3 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 0 C70->136 on 12x35 batch 2", 2, 2, 70, 136, 1, { 12, 35 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
        { "pads 0,2 / 1,0 C8->9 on 7x5", 2, 1, 8, 9, 1, { 7, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, { 2, 0 }, 1 },
        { "pad 2 C2->1 on 3x3", 2, 1, 2, 1, 1, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1 },
        { "pad 0 C5->8 on 3x3 (one output)", 2, 1, 5, 8, 1, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 0 },
        { "pad 1 C64->64 on 28x28", 2, 1, 64, 64, 1, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 1 C9->20 on 14x28 (98 tiles: 3 blocks in one task)", 2, 1, 9, 20, 1, { 14, 28 }, { 3, 3 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        /* several images per pass: blocks that cross images */
        { "pad 1 C16->24 on 7x7 batch 8 (one pass, 128 tiles)", 2, 8, 16, 24, 1, { 7, 7 }, { 3, 3 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 1 C12->20 on 14x14 batch 11 (passes of 6 and 5 images)", 2, 11, 12, 20, 1, { 14, 14 }, { 3, 3 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 0 C10->9 on 9x7 batch 5 (7x5 outputs: dropped rows and columns inside blocks)", 2, 5, 10, 9, 1,
          { 9, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "pad 1 C96->72 on 7x7 batch 3 (48 tiles, 2 channel blocks)", 2, 3, 96, 72, 1, { 7, 7 }, { 3, 3 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        /* the shapes F(4x4) takes in models, and its partial tiles */
        { "pad 1 C16->64 on 55x55 (SqueezeNet's first expand: 196 F(4x4) tiles, the last column dropped)", 2, 1,
          16, 64, 1, { 55, 55 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 1 C32->20 on 27x27 batch 2 (tile rows of 7 across vectors and images)", 2, 2, 32, 20, 1, { 27, 27 },
          { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 1 C48->40 on 13x13 batch 3", 2, 3, 48, 40, 1, { 13, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "pad 0 C7->5 on 6x6 (one F(4x4) tile exactly)", 2, 1, 7, 5, 1, { 6, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 0, 0 }, { 0, 0 }, 1 },
        { "pad 1 C5->9 on 2x2 batch 2 (a map smaller than a tile)", 2, 2, 5, 9, 1, { 2, 2 }, { 3, 3 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        { "pad 0 C33->17 on 11x9 (9x7 outputs)", 2, 1, 33, 17, 1, { 11, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
    };
    rlx_cpu_sgemm_kernel top = rlx_cpu_sgemm_kernel_get();
    size_t ran = rlx_nn_wino_runs();
    for (int kern = (int)top; kern >= (int)RLX_CPU_SGEMM_PORTABLE; kern--) {
        if (!rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern)) continue;
        int before = g_wino_runs;
        for (size_t i = 0; i < ARRAY_LEN(cases); i++)
            for (size_t r = 0; r < ARRAY_LEN(k_path_runs); r++) {
                conv_case c = cases[i];
                c.bias = (int)((i + r) % 2) && c.bias;
                run_wino(&c, 2, k_path_runs[r].act, k_path_runs[r].res);
                run_wino(&c, 4, k_path_runs[r].act, k_path_runs[r].res);
            }
        fprintf(stderr, "Winograd, sgemm kernel %d: %d runs\n", kern, g_wino_runs - before);
    }
    /* the models' shapes, bias and Relu as there, F(2x2) (the default):
     * SqueezeNet's 3x3s that take it (16->64 at 55x55, 32->128 at 27x27),
     * ResNet-50's on 56x56, 28x28 and 14x14 maps, and batch 8 (one pass
     * of 8 images on 14x14: tasks whose tiles span images; 27x27 in
     * passes of 2 images). At 2 and 5 threads one pass runs as tasks that
     * pad their own rows (wino_pad_task), several as padded planes. */
    static const conv_case models[] = {
        { "SqueezeNet C16->64 on 55x55", 2, 1, 16, 64, 1, { 55, 55 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "SqueezeNet C32->128 on 27x27", 2, 1, 32, 128, 1, { 27, 27 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ResNet-50 C64->64 on 56x56", 2, 1, 64, 64, 1, { 56, 56 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ResNet-50 C128->128 on 28x28", 2, 1, 128, 128, 1, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "ResNet-50 C256->256 on 14x14", 2, 1, 256, 256, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "C64->96 on 14x14 batch 8 (one pass)", 2, 8, 64, 96, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "SqueezeNet C32->128 on 27x27 batch 8 (4 passes)", 2, 8, 32, 128, 1, { 27, 27 }, { 3, 3 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
    };
    size_t phased = rlx_nn_wino_phased_runs();
    if (rlx_cpu_sgemm_kernel_set(top) && top == RLX_CPU_SGEMM_AVX512) {
        for (size_t i = 0; i < ARRAY_LEN(models); i++) run_wino(&models[i], 2, RLX_ACT_RELU, false);
        /* at 5 threads the 14x14 and 28x28 maps (one and two groups of
         * tile blocks) run phased, and run_wino compared their bits with
         * the one-thread run's */
        if (rlx_parallel_threads() >= 5)
            CHECK_MSG(rlx_nn_wino_phased_runs() > phased, "the phased Winograd form never ran at 5 threads");
    }
    test_conv_winograd_wild();
    test_conv_winograd_overflow();
    CHECK(rlx_cpu_sgemm_kernel_set(top));
    if (top == RLX_CPU_SGEMM_AVX512) CHECK_MSG(rlx_nn_wino_runs() > ran, "the Winograd path never ran");
    fprintf(stderr,
            "Winograd: largest error F(2x2) %.3g, F(4x4) %.3g of F(2x2)'s absolute term, 2e-6 K (im2col + GEMM: %.3g)\n",
            g_wino_err[0] / 2e-6, g_wino_err[1] / 2e-6, g_wino_gemm_err / 2e-6);
    /* the shape rule (which path: 0 none, 2 F(2x2), 4 F(4x4)) counts the
     * batch's tiles on small maps: 7x7 512->512 F(2x2) at batch 2,
     * F(4x4) from 16 of its tiles (batch 4), also for 256->256; F(4x4) on
     * 13x13 and 14x14 with c_in x c_out >= 8192, from 16 input channels
     * on large maps; few outputs for the inputs stay off F(4x4) */
    if (top == RLX_CPU_SGEMM_AVX512 && rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL) {
        /* want: with cpu.winograd_f4x4=1; want2: the default (F(2x2)'s
         * rule: by tiles per side, so 55x55 as 56x56 and 27x27 as 28x28,
         * from 16 input channels on maps of 28 x 28 tiles) */
        static const struct {
            int64_t side, c, co, n;
            int want, want2;
        } rule[] = { { 7, 512, 512, 1, 0, 0 },    { 7, 512, 512, 2, 2, 2 },  { 7, 256, 256, 8, 4, 0 },
                     { 7, 512, 512, 4, 4, 2 },    { 7, 256, 256, 2, 0, 0 },  { 14, 128, 128, 1, 4, 0 },
                     { 14, 64, 64, 1, 0, 0 },     { 13, 48, 192, 1, 4, 0 },  { 14, 256, 256, 1, 4, 2 },
                     { 28, 128, 128, 1, 4, 2 },   { 28, 256, 64, 1, 2, 2 },  { 28, 128, 32, 1, 0, 0 },
                     { 28, 32, 32, 1, 0, 0 },     { 56, 64, 64, 1, 4, 2 },   { 55, 16, 64, 1, 4, 2 },
                     { 56, 3, 64, 1, 0, 0 },      { 56, 128, 32, 1, 2, 2 },  { 27, 32, 128, 1, 4, 2 },
                     { 28, 1024, 1024, 1, 2, 2 }, { 56, 16, 16, 1, 4, 2 },   { 112, 8, 16, 1, 0, 0 },
                     { 28, 16, 32, 1, 0, 0 },     { 27, 32, 32, 1, 0, 0 },   { 13, 64, 256, 1, 4, 0 } };
        /* the table at 2 threads (from 8, 64 input channels or fewer take
         * the implicit GEMM: below) */
        int prev_lim = rlx_parallel_set_limit(2);
        for (size_t i = 0; i < ARRAY_LEN(rule); i++) {
            int got = wino_rule_of(rule[i].side, rule[i].c, rule[i].co, rule[i].n, 4);
            /* without cpu.winograd_f4x4 (the default): F(2x2)'s rule alone */
            int got2 = wino_rule_of(rule[i].side, rule[i].c, rule[i].co, rule[i].n, 2);
            CHECK_MSG(got2 == rule[i].want2 && (got == 2 ? got2 == 2 : 1),
                      "Winograd shape rule without F(4x4): %lldx%lld C%lld->%lld batch %lld: %d, not %d",
                      (long long)rule[i].side, (long long)rule[i].side, (long long)rule[i].c, (long long)rule[i].co,
                      (long long)rule[i].n, got2, rule[i].want2);
            CHECK_MSG(got == rule[i].want, "Winograd shape rule: %lldx%lld C%lld->%lld batch %lld: %d, not %d",
                      (long long)rule[i].side, (long long)rule[i].side, (long long)rule[i].c, (long long)rule[i].co,
                      (long long)rule[i].n, got, rule[i].want);
        }
        /* by thread count (a pool of 8 or more: the threads16 variant):
         * from 8 threads none for 55x55 C16->64 and for 56x56 C64->64 at
         * batch 8, F(2x2) for 56x56 C64->64 at batch 1 and for 28x28
         * C128->128; at 4 threads F(2x2) for all */
        static const struct {
            int64_t side, c, co, n;
        } by_t[] = { { 56, 64, 64, 1 }, { 56, 64, 64, 8 }, { 55, 16, 64, 1 }, { 28, 128, 128, 1 }, { 28, 128, 128, 8 } };
        static const int lims[] = { 4, 8, 16 };
        rlx_parallel_set_limit(prev_lim);
        for (size_t li = 0; li < ARRAY_LEN(lims) && rlx_parallel_threads() >= 8; li++) {
            rlx_parallel_set_limit(lims[li]);
            int t = rlx_parallel_threads();
            for (size_t i = 0; i < ARRAY_LEN(by_t); i++) {
                int got = wino_rule_of(by_t[i].side, by_t[i].c, by_t[i].co, by_t[i].n, 2);
                int want = t >= 8 && (by_t[i].c <= 32 || (by_t[i].c <= 64 && by_t[i].n >= 2)) ? 0 : 2;
                CHECK_MSG(got == want, "Winograd rule at %d threads: %lldx%lld C%lld->%lld batch %lld: %d, not %d", t,
                          (long long)by_t[i].side, (long long)by_t[i].side, (long long)by_t[i].c,
                          (long long)by_t[i].co, (long long)by_t[i].n, got, want);
            }
            rlx_parallel_set_limit(prev_lim);
        }
    }
}

/* The channels-in-lanes path of 1x1 convolutions (cpu_nn_pwt.c: weights
 * transposed at compile time into panels of 48 output channels, 7
 * positions per tile), forced on (rlx_nn_pwt_force(2)) at every sgemm
 * kernel the CPU runs (it runs with the AVX-512 one only; the others fall
 * back to the GEMM): 1x1 and 3x3 (the positions from im2col), maps of 49
 * and 196 positions and of 25 / 30 (a partial tile of positions), output
 * channels 16, 32 (one narrow panel), 64, 80 and 96 (a full panel and a
 * narrow one), K from 24 to 600 (1, 2 and 3 k panels: the sgemm's cut),
 * strides 2 and 3x1, dilation 2, pads, groups 2, batch 2, 1-D; stride 1
 * with the positions read in place from padded planes and gathered from
 * im2col (rlx_nn_pwt_in_place); each with no activation, Relu, Clip, HardSwish, with and
 * without a residual and a bias. Every run: within run_conv's tolerance
 * of the reference, and the same bits as im2col + GEMM (weights packed
 * for it: rlx_nn_pwt_force(1)) at thread limits 1, 2, 3 and 5 (at 1 and
 * 3 also with a task's pairs panel by panel and group by group:
 * rlx_nn_pwt_order), outputs
 * poisoned with NaN, the plain weights poisoned during the packed runs
 * (fast_vs_ref); with the AVX-512 kernel every forced run must have
 * taken the path (rlx_nn_pwt_runs). */
static int g_pwt_runs;

static void pwt_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    rlx_cpu_sgemm_pack pg, pt;
    rlx_nn_pwt_force(1);
    CHECK_OK(rlx_cpu_prepare_node(NULL, n, in, &pg));
    CHECK_MSG(pg.data != NULL && pg.wt == NULL, "%s: weights not packed for the GEMM", what);
    rlx_tensor *gemm = test_tensor(RLX_DTYPE_F32, rank, yd);
    rlx_tensor *gemm_o[1] = { gemm };
    poison(gemm);
    rlx_nn_pw_force(1);
    CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, gemm_o, &pg));
    rlx_nn_pwt_force(2);
    CHECK_OK(rlx_cpu_prepare_node(NULL, n, in, &pt));
    bool avx512 = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    CHECK_MSG(!avx512 || (pt.wt != NULL && pt.data == NULL), "%s: weights not transposed", what);
    size_t bytes = rlx_tensor_numel(gemm) * sizeof(float);
    /* thread limit, and the order of a task's (panel, group of tiles)
     * pairs (rlx_nn_pwt_order: by shape, panel by panel, group by group) */
    static const int lims[][2] = { { 1, 0 }, { 1, 1 }, { 1, 2 }, { 2, 0 }, { 3, 2 }, { 5, 0 } };
    for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
        int lim = lims[li][0], prev = rlx_parallel_set_limit(lim);
        rlx_nn_pwt_order(lims[li][1]);
        rlx_tensor *t = test_tensor(RLX_DTYPE_F32, rank, yd);
        rlx_tensor *t_o[1] = { t };
        poison(t);
        size_t before = rlx_nn_pwt_runs();
        CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, t_o, &pt));
        if (avx512) CHECK_MSG(rlx_nn_pwt_runs() == before + 1, "channels in lanes %s: did not run", what);
        CHECK_MSG(memcmp(t->data, gemm->data, bytes) == 0,
                  "channels in lanes %s, %d threads, order %d: not the bits of im2col + GEMM", what, lim, lims[li][1]);
        rlx_tensor_destroy(t);
        rlx_parallel_set_limit(prev);
    }
    rlx_nn_pwt_order(0);
    g_pwt_runs++;
    rlx_tensor_destroy(gemm);
    rlx_cpu_sgemm_pack_free(&pg);
    rlx_cpu_sgemm_pack_free(&pt);
}

/* Every convolution shape of MobileNetV2 (bench/make_mobilenet_v2.py) by
 * the paths the rules pick (not forced): the stem 3x3 s2 3->32, the
 * depthwise 3x3s at strides 1 and 2 on 112- to 7-wide maps, the 1x1
 * expansions (Clip) and projections (no activation, a residual where the
 * model has one); at batch 1, the 14x14 and 7x7 ones also at batch 8.
 * Each within run_conv's tolerance of the reference (1e-5 relative + 2e-6
 * per product), and with the weights packed as at compile time the bits
 * of the unpacked fast path (fast_vs_ref: the channels-in-lanes path of
 * the 7x7 1x1s, its stores and fused epilogue, against im2col + GEMM);
 * ctest runs this program at 1, 2, 3, 5 and 16 threads. With the AVX-512
 * kernel the 7x7 1x1s must have taken the channels-in-lanes path. */
static void test_conv_mobilenet_v2(void) {
    static const struct {
        int64_t cin, cout, hw, k, s;
        bool dw, res;
        rlx_act_kind act;
        bool b8; /* also at batch 8 */
    } m[] = {
        { 3, 32, 224, 3, 2, false, false, RLX_ACT_CLIP, false },   { 32, 32, 112, 3, 1, true, false, RLX_ACT_CLIP, false },
        { 32, 16, 112, 1, 1, false, false, RLX_ACT_NONE, false },  { 16, 96, 112, 1, 1, false, false, RLX_ACT_CLIP, false },
        { 96, 96, 112, 3, 2, true, false, RLX_ACT_CLIP, false },   { 96, 24, 56, 1, 1, false, false, RLX_ACT_NONE, false },
        { 24, 144, 56, 1, 1, false, false, RLX_ACT_CLIP, false },  { 144, 144, 56, 3, 1, true, false, RLX_ACT_CLIP, false },
        { 144, 24, 56, 1, 1, false, true, RLX_ACT_NONE, false },   { 144, 144, 56, 3, 2, true, false, RLX_ACT_CLIP, false },
        { 144, 32, 28, 1, 1, false, false, RLX_ACT_NONE, false },  { 32, 192, 28, 1, 1, false, false, RLX_ACT_CLIP, false },
        { 192, 192, 28, 3, 1, true, false, RLX_ACT_CLIP, false },  { 192, 32, 28, 1, 1, false, true, RLX_ACT_NONE, false },
        { 192, 192, 28, 3, 2, true, false, RLX_ACT_CLIP, true },   { 192, 64, 14, 1, 1, false, false, RLX_ACT_NONE, true },
        { 64, 384, 14, 1, 1, false, false, RLX_ACT_CLIP, true },   { 384, 384, 14, 3, 1, true, false, RLX_ACT_CLIP, true },
        { 384, 64, 14, 1, 1, false, true, RLX_ACT_NONE, true },    { 384, 96, 14, 1, 1, false, false, RLX_ACT_NONE, true },
        { 96, 576, 14, 1, 1, false, false, RLX_ACT_CLIP, true },   { 576, 576, 14, 3, 1, true, false, RLX_ACT_CLIP, true },
        { 576, 96, 14, 1, 1, false, true, RLX_ACT_NONE, true },    { 576, 576, 14, 3, 2, true, false, RLX_ACT_CLIP, true },
        { 576, 160, 7, 1, 1, false, false, RLX_ACT_NONE, true },   { 160, 960, 7, 1, 1, false, false, RLX_ACT_CLIP, true },
        { 960, 960, 7, 3, 1, true, false, RLX_ACT_CLIP, true },    { 960, 160, 7, 1, 1, false, true, RLX_ACT_NONE, true },
        { 960, 320, 7, 1, 1, false, false, RLX_ACT_NONE, true },   { 320, 1280, 7, 1, 1, false, false, RLX_ACT_CLIP, true },
    };
    bool avx512 = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    int before = g_conv_cases;
    for (size_t i = 0; i < ARRAY_LEN(m); i++)
        for (int64_t n = 1; n <= 8; n += 7) {
            if (n == 8 && !m[i].b8) continue;
            int64_t p = m[i].k / 2;
            char name[96];
            snprintf(name, sizeof name, "MobileNetV2 %s%lldx%lld s%lld %lld->%lld on %lldx%lld, batch %lld",
                     m[i].dw ? "dw " : "", (long long)m[i].k, (long long)m[i].k, (long long)m[i].s, (long long)m[i].cin,
                     (long long)m[i].cout, (long long)m[i].hw, (long long)m[i].hw, (long long)n);
            conv_case c = { name, 2, n, m[i].cin, m[i].cout, m[i].dw ? m[i].cin : 1, { m[i].hw, m[i].hw },
                            { m[i].k, m[i].k }, { m[i].s, m[i].s }, { 1, 1 }, { p, p }, { p, p }, 1 };
            size_t pwt_before = rlx_nn_pwt_runs();
            run_conv(&c, m[i].act, m[i].res);
            if (avx512 && m[i].hw == 7 && m[i].k == 1)
                CHECK_MSG(rlx_nn_pwt_runs() > pwt_before, "%s: channels in lanes did not run", name);
        }
    fprintf(stderr, "MobileNetV2 shapes: %d cases\n", g_conv_cases - before);
}

/* The channels-in-lanes rule on ResNet-50's 3x3 stride-2 convolutions at
 * full size (rlx_nn_pwt_wanted, not forced): their weights transposed at
 * compile time, the path taken (read in place from phase planes), the bits
 * of im2col + GEMM (rlx_nn_pwt_force(1)) at thread limits 1, 2 and 3,
 * outputs poisoned. */
static void test_conv_pwt_rule(void) {
    static const struct {
        int64_t n, c, hw;
    } cases[] = { { 1, 128, 56 }, { 2, 256, 28 }, { 1, 512, 14 } };
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512) return;
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        int64_t c = cases[i].c, hw = cases[i].hw, xd[4] = { cases[i].n, c, hw, hw }, wd[4] = { c, c, 3, 3 },
                bd[1] = { c }, yd[4] = { cases[i].n, c, hw / 2, hw / 2 }, k[2] = { 3, 3 }, st2[2] = { 2, 2 },
                pads[4] = { 1, 1, 1, 1 };
        node_attrs st = { .n = 0 };
        attr_ints(&st, "kernel_shape", 2, k);
        attr_ints(&st, "strides", 2, st2);
        attr_ints(&st, "pads", 4, pads);
        act_attrs(&st, RLX_ACT_RELU);
        rlx_node n = make_node("Conv", 11, 3, 1, &st);
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1),
                   *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
        const rlx_tensor *in[3] = { x, w, b };
        char what[120];
        snprintf(what, sizeof what, "rule: 3x3 s2 %lld->%lld on %lldx%lld, batch %lld", (long long)c, (long long)c,
                 (long long)hw, (long long)hw, (long long)cases[i].n);
        rlx_cpu_sgemm_pack pg, pt;
        rlx_nn_pwt_force(1);
        CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pg));
        rlx_nn_pwt_force(0);
        CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pt));
        CHECK_MSG(pt.wt != NULL, "%s: weights not transposed for the channels-in-lanes path", what);
        rlx_tensor *gemm = test_tensor(RLX_DTYPE_F32, 4, yd), *t = test_tensor(RLX_DTYPE_F32, 4, yd);
        rlx_tensor *go[1] = { gemm }, *to[1] = { t };
        poison(gemm);
        CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, go, &pg));
        for (int lim = 1; lim <= 3; lim++) {
            int prev = rlx_parallel_set_limit(lim);
            poison(t);
            size_t before = rlx_nn_pwt_runs();
            CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, to, &pt));
            CHECK_MSG(rlx_nn_pwt_runs() == before + 1, "%s: channels in lanes did not run", what);
            CHECK_MSG(memcmp(t->data, gemm->data, rlx_tensor_numel(gemm) * sizeof(float)) == 0,
                      "%s, %d threads: not the bits of im2col + GEMM", what, lim);
            rlx_parallel_set_limit(prev);
        }
        rlx_cpu_sgemm_pack_free(&pg), rlx_cpu_sgemm_pack_free(&pt);
        rlx_tensor_destroy(gemm), rlx_tensor_destroy(t);
        rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
    }
}

/* The channels-in-lanes rule on small planes (rlx_nn_pwt_wanted, not
 * forced): SqueezeNet's 3x3s on 13x13 and 27x27 and its 1x1s with K >=
 * 256 on 13x13 and 27x27, DenseNet's 3x3 128->32 on 14x14 and 7x7,
 * odd input channel counts, batch 2; with and without a bias, Relu, Clip,
 * a residual. Each: the path taken (rlx_nn_pwt_runs), within run_conv's
 * tolerance of the reference and the bits of the unpacked fast path
 * (implicit GEMM, pointwise or im2col + GEMM; fast_vs_ref) at thread
 * limits 1, 2 and 5. */
static void test_conv_pwt_small_planes(void) {
    static const struct {
        const char *name;
        int64_t n, cin, cout, hw, k, bias;
        rlx_act_kind act;
        bool res;
    } cases[] = {
        { "3x3 48->192 on 13x13", 1, 48, 192, 13, 3, 1, RLX_ACT_RELU, false },
        { "3x3 64->256 on 13x13, residual", 1, 64, 256, 13, 3, 1, RLX_ACT_RELU, true },
        { "3x3 32->128 on 27x27", 1, 32, 128, 27, 3, 0, RLX_ACT_RELU, false },
        { "3x3 128->32 on 14x14", 1, 128, 32, 14, 3, 1, RLX_ACT_NONE, false },
        { "3x3 128->32 on 7x7 batch 2, residual", 2, 128, 32, 7, 3, 0, RLX_ACT_NONE, true },
        { "3x3 37->48 on 13x13", 1, 37, 48, 13, 3, 1, RLX_ACT_CLIP, false },
        { "3x3 19->16 on 7x7 batch 2", 2, 19, 16, 7, 3, 1, RLX_ACT_RELU, false },
        { "1x1 384->48 on 13x13", 1, 384, 48, 13, 1, 1, RLX_ACT_RELU, false },
        { "1x1 261->64 on 13x13 batch 2, residual", 2, 261, 64, 13, 1, 1, RLX_ACT_RELU, true },
        { "1x1 256->32 on 27x27", 1, 256, 32, 27, 1, 0, RLX_ACT_RELU, false },
    };
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512) return;
    /* with Winograd off (cpu.winograd=0): SqueezeNet's 3x3s on 13x13 and
     * 27x27 take F(4x4) by shape before this rule */
    rlx_nn_wino_force(1);
    static const int lims[] = { 1, 2, 5 };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        int64_t p = cases[i].k / 2;
        conv_case c = { cases[i].name, 2, cases[i].n, cases[i].cin, cases[i].cout, 1, { cases[i].hw, cases[i].hw },
                        { cases[i].k, cases[i].k }, { 1, 1 }, { 1, 1 }, { p, p }, { p, p }, (int)cases[i].bias };
        for (size_t li = 0; li < ARRAY_LEN(lims); li++) {
            int prev = rlx_parallel_set_limit(lims[li]);
            size_t before = rlx_nn_pwt_runs();
            run_conv(&c, cases[i].act, cases[i].res);
            CHECK_MSG(rlx_nn_pwt_runs() > before, "rule: %s: channels in lanes did not run", cases[i].name);
            rlx_parallel_set_limit(prev);
        }
    }
    rlx_nn_wino_force(0);
}

/* Non-finite weights: the channels-in-lanes path leaves no tap out (0 x
 * Inf is NaN), as the other fast paths, which multiply the padding's
 * zeros (the reference skips taps outside the input: a finite result
 * there). A 3x3 pad 1 convolution on 13x13 by the rule with an infinite
 * weight on kernel row 0 (which reads padding for output row 0): packed
 * as not finite, NaN in row 0 of that channel, and the bits of the
 * unpacked fast path (the implicit GEMM) everywhere. */
static void test_conv_pwt_nonfinite(void) {
    if (rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512) return;
    int64_t xd[4] = { 1, 16, 13, 13 }, wd[4] = { 48, 16, 3, 3 }, bd[1] = { 48 }, yd[4] = { 1, 48, 13, 13 },
            k[2] = { 3, 3 }, pads[4] = { 1, 1, 1, 1 };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, k);
    attr_ints(&st, "pads", 4, pads);
    rlx_node n = make_node("Conv", 11, 3, 1, &st);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1),
               *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    ((float *)w->data)[5 * 16 * 9 + 3 * 9 + 1] = INFINITY; /* channel 5, input 3, tap (0, 1) */
    const rlx_tensor *in[3] = { x, w, b };
    rlx_tensor *fast = test_tensor(RLX_DTYPE_F32, 4, yd), *y = test_tensor(RLX_DTYPE_F32, 4, yd);
    rlx_tensor *fo[1] = { fast }, *yo[1] = { y };
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, fo, false));
    rlx_cpu_sgemm_pack pk;
    CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
    CHECK_MSG(pk.wt != NULL && !pk.wt_finite, "pwt, an infinite weight: not packed for the path, or as finite");
    size_t before = rlx_nn_pwt_runs();
    CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, yo, &pk));
    CHECK_MSG(rlx_nn_pwt_runs() == before + 1, "pwt, an infinite weight: channels in lanes did not run");
    const float *yp = y->data;
    for (int64_t o = 0; o < 13; o++)
        CHECK_MSG(isnan(yp[5 * 169 + o]), "pwt, an infinite weight: row 0, column %lld not NaN", (long long)o);
    CHECK_MSG(memcmp(y->data, fast->data, rlx_tensor_numel(y) * sizeof(float)) == 0,
              "pwt, an infinite weight: not the bits of the unpacked fast path");
    rlx_cpu_sgemm_pack_free(&pk);
    rlx_tensor_destroy(fast), rlx_tensor_destroy(y), rlx_tensor_destroy(x), rlx_tensor_destroy(w),
        rlx_tensor_destroy(b);
}

static void test_conv_channels_in_lanes(void) {
    static const conv_case cases[] = {
        /* name, nsp, n, cin, cout, group, in, k, s, d, pb, pe, bias */
        { "pwt 1x1 C64->96 on 7x7", 2, 1, 64, 96, 1, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "pwt 1x1 C24->16 on 14x14", 2, 1, 24, 16, 1, { 14, 14 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "pwt 1x1 C300->80 on 5x5 (2 k panels, partial tile)", 2, 1, 300, 80, 1, { 5, 5 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "pwt 1x1 C600->32 on 6x5 (3 k panels)", 2, 1, 600, 32, 1, { 6, 5 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
        { "pwt 1x1 s2 C40->64 on 14x13 batch 2", 2, 2, 40, 64, 1, { 14, 13 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
        { "pwt 1x1 s3x1 C48->48 on 10x7", 2, 1, 48, 48, 1, { 10, 7 }, { 1, 1 }, { 3, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 },
          0 },
        { "pwt 1x1 group 2 C64->96 on 7x7 batch 2", 2, 2, 64, 96, 2, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
        { "pwt 1-D k1 C36->112 on 40", 1, 1, 36, 112, 1, { 40 }, { 1 }, { 1 }, { 1 }, { 0 }, { 0 }, 1 },
        { "pwt 3x3 pad 1 C32->48 on 7x7", 2, 1, 32, 48, 1, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "pwt 3x3 s2 pad 1 C20->64 on 14x13 batch 2", 2, 2, 20, 64, 1, { 14, 13 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 3x3 K 576 C64->32 on 5x6 (3 k panels)", 2, 1, 64, 32, 1, { 5, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 3x3 dilation 2 pad 2/1 C8->16 on 9x8", 2, 1, 8, 16, 1, { 9, 8 }, { 3, 3 }, { 1, 1 }, { 2, 2 },
          { 2, 2 }, { 1, 1 }, 0 },
        { "pwt 3x3 group 2 C16->96 on 7x7", 2, 1, 16, 96, 2, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "pwt 1-D k3 C12->48 on 33", 1, 1, 12, 48, 1, { 33 }, { 3 }, { 1 }, { 1 }, { 1 }, { 1 }, 1 },
        /* strided, several taps: read in place from phase planes (rn50b) */
        { "pwt 3x3 s2 pad 0 C24->32 on 15x16", 2, 1, 24, 32, 1, { 15, 16 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 },
          { 0, 0 }, 1 },
        { "pwt 3x3 s2 pads 1/0 C9->48 on 13x17 batch 2", 2, 2, 9, 48, 1, { 13, 17 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 1, 1 }, { 0, 0 }, 1 },
        { "pwt 7x7 s2 pad 3 C3->64 on 29x31 (stem)", 2, 1, 3, 64, 1, { 29, 31 }, { 7, 7 }, { 2, 2 }, { 1, 1 },
          { 3, 3 }, { 3, 3 }, 1 },
        { "pwt 3x3 s3 dilation 2 pads 2/1 C10->16 on 19x20", 2, 1, 10, 16, 1, { 19, 20 }, { 3, 3 }, { 3, 3 },
          { 2, 2 }, { 2, 1 }, { 1, 2 }, 0 },
        { "pwt 5x3 s2x1 C6->32 on 12x9", 2, 1, 6, 32, 1, { 12, 9 }, { 5, 3 }, { 2, 1 }, { 1, 1 }, { 2, 1 }, { 2, 1 },
          1 },
        { "pwt 3x3 s2 K 576 C64->48 on 11x9 (3 k panels)", 2, 1, 64, 48, 1, { 11, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 3x3 s2 group 2 C16->64 on 9x9", 2, 1, 16, 64, 2, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, 1 },
        { "pwt 1-D k3 s2 C40->16 on 37", 1, 1, 40, 16, 1, { 37 }, { 3 }, { 2 }, { 1 }, { 1 }, { 1 }, 1 },
        /* several groups of 8 tiles (pwt_item: each k panel over a
         * group's tiles), with several k panels: gathered, and in place
         * with rows that leave steps out; 48 + 32 + 32 output channels */
        { "pwt 1x1 s2 C600->112 on 30x29 (gathered, 3 k panels, 33 tiles)", 2, 1, 600, 112, 1, { 30, 29 }, { 1, 1 },
          { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        /* x read in place with several groups and panels: group by group
         * by shape where the epilogue is fused (pwt_by_group) */
        { "pwt 1x1 C520->112 on 9x10 (in place, 3 k panels, 13 tiles)", 2, 1, 520, 112, 1, { 9, 10 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
        { "pwt 3x3 pad 1 C40->64 on 20x9 batch 2 (2 k panels, 40 tiles)", 2, 2, 40, 64, 1, { 20, 9 }, { 3, 3 },
          { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
        /* small planes: rows of 13 (tiles of 7 and 6), 9, 11 and 6
         * positions, the top and bottom rows' taps in the padding left
         * out (kernel rows past the input: 1 of 3, 2 of 5, 2 of 3 with
         * dilation 2, pads 2 / 0), odd channel counts, 2 k panels */
        { "pwt 3x3 pad 1 C48->192 on 13x13 (2 k panels)", 2, 1, 48, 192, 1, { 13, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 3x3 pad 1 C21->32 on 13x13 batch 2", 2, 2, 21, 32, 1, { 13, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 5x5 pad 2 C9->16 on 6x11", 2, 1, 9, 16, 1, { 6, 11 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 },
          1 },
        { "pwt 3x3 pads 2/0 C12->64 on 13x9", 2, 1, 12, 64, 1, { 13, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 2, 2 },
          { 0, 0 }, 1 },
        { "pwt 3x3 dilation 2 pad 2 C11->48 on 13x13", 2, 1, 11, 48, 1, { 13, 13 }, { 3, 3 }, { 1, 1 }, { 2, 2 },
          { 2, 2 }, { 2, 2 }, 0 },
        { "pwt 3x3 pad 1 C5->16 on 1x13 (every row clipped)", 2, 1, 5, 16, 1, { 1, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 1, 1 }, 1 },
        { "pwt 1x1 C300->48 on 13x13 (2 k panels, last tile of 1)", 2, 1, 300, 48, 1, { 13, 13 }, { 1, 1 }, { 1, 1 },
          { 1, 1 }, { 0, 0 }, { 0, 0 }, 1 },
    };
    static const struct {
        rlx_act_kind act;
        bool res;
    } runs[] = { { RLX_ACT_NONE, false }, { RLX_ACT_RELU, false }, { RLX_ACT_CLIP, false },
                 { RLX_ACT_HARDSWISH, false }, { RLX_ACT_RELU, true }, { RLX_ACT_NONE, true } };
    /* its 3x3 cases (13x13 48->192) would take F(4x4) by shape */
    rlx_nn_wino_force(1);
    rlx_cpu_sgemm_kernel top = rlx_cpu_sgemm_kernel_get();
    size_t ran = rlx_nn_pwt_runs();
    for (int kern = (int)top; kern >= (int)RLX_CPU_SGEMM_PORTABLE; kern--) {
        if (!rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern)) continue;
        int before = g_pwt_runs;
        for (int in_place = 1; in_place >= 0; in_place--) {
            rlx_nn_pwt_in_place(in_place);
            for (size_t i = 0; i < ARRAY_LEN(cases); i++)
                for (size_t r = 0; r < ARRAY_LEN(runs); r++) {
                    conv_case c = cases[i];
                    c.bias = (int)((i + r) % 2) && c.bias;
                    rlx_nn_pwt_force(2);
                    rlx_nn_pw_force(1);
                    run_conv_ex(&c, runs[r].act, runs[r].res, BITS_PWT);
                }
        }
        rlx_nn_pwt_in_place(true);
        rlx_nn_pw_force(0);
        rlx_nn_pwt_force(0);
        fprintf(stderr, "channels in lanes, sgemm kernel %d: %d runs\n", kern, g_pwt_runs - before);
    }
    CHECK(rlx_cpu_sgemm_kernel_set(top));
    rlx_nn_wino_force(0);
    if (top == RLX_CPU_SGEMM_AVX512) CHECK_MSG(rlx_nn_pwt_runs() > ran, "the channels-in-lanes path never ran");
}

/* Subnormal weights (the blocked path counts them as 0: a product under
 * 2^-126 |x|): channel 3's whole kernel and scattered taps of others, and
 * subnormal inputs in one row; the same tolerance as run_conv (the
 * difference is below 1e-37). */
static void test_conv_depthwise_subnormal(void) {
    int64_t xd[4] = { 1, 20, 9, 11 }, wd[4] = { 20, 1, 3, 3 }, bd[1] = { 20 }, yd[4] = { 1, 20, 9, 11 };
    int64_t k[2] = { 3, 3 }, one[2] = { 1, 1 }, pads[4] = { 1, 1, 1, 1 };
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", 2, k);
    attr_ints(&st, "strides", 2, one);
    attr_ints(&st, "pads", 4, pads);
    attr_int(&st, "group", 20);
    rlx_node n = make_node("Conv", 11, 3, 1, &st);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, bd, -1, 1);
    float *wv = w->data, *xv = x->data;
    for (int t = 0; t < 9; t++) wv[3 * 9 + t] = (t % 2 ? -3e-40f : 5e-41f);
    for (int i = 0; i < 180; i += 7) wv[i] = 1e-39f;
    for (int i = 0; i < 11; i++) xv[2 * 99 + 4 * 11 + i] = 2e-40f;
    const rlx_tensor *in[3] = { x, w, b };
    for (int path = 1; path <= 2; path++) {
        rlx_nn_dw_force(path);
        CHECK_MSG(fast_vs_ref("Conv depthwise subnormal weights", &n, in, 4, yd, 1e-5, 2e-6 * 10), "path %d", path);
    }
    rlx_nn_dw_force(0);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(b);
}

/* Random 2-D geometries: kernel 1-5 (odd and even), stride 1-3, dilation
 * 1-2, pads 0-2 per side, groups (plain, grouped, depthwise with
 * multiplier 1-3), batch 1-2, input 1-24. */
static void test_conv_random(void) {
    int made = 0;
    for (int tries = 0; made < 150 && tries < 2000; tries++) {
        conv_case c;
        memset(&c, 0, sizeof c);
        c.name = "random";
        c.nsp = 2;
        c.n = rnd(1, 2);
        int kind = (int)rnd(0, 2); /* 0 plain, 1 grouped, 2 depthwise */
        if (kind == 2) {
            c.group = c.cin = rnd(1, 9);
            c.cout = c.cin * rnd(1, 3);
        } else {
            c.group = kind == 1 ? rnd(2, 3) : 1;
            c.cin = c.group * rnd(1, 5);
            c.cout = c.group * rnd(1, 6);
        }
        for (int i = 0; i < 2; i++) {
            c.k[i] = rnd(1, 5);
            c.s[i] = rnd(1, 3);
            c.d[i] = rnd(1, 2);
            c.pb[i] = rnd(0, 2);
            c.pe[i] = rnd(0, 2);
            c.in[i] = rnd(1, 24);
        }
        bool ok = true; /* the dilated kernel must fit the padded input */
        for (int i = 0; i < 2; i++) ok = ok && c.d[i] * (c.k[i] - 1) + 1 <= c.in[i] + c.pb[i] + c.pe[i];
        if (!ok) continue;
        c.bias = (int)rnd(0, 1);
        run_conv(&c, k_acts[made % ARRAY_LEN(k_acts)], made % 4 == 3);
        made++;
    }
    CHECK_MSG(made == 150, "only %d random geometries", made);
}

/* The comparison itself can fail: a fast result with one tap dropped
 * (here: a reference run of a different weight) is caught. */
static void test_compare_can_fail(void) {
    int64_t xd[4] = { 1, 3, 6, 6 }, wd[4] = { 4, 3, 3, 3 }, yd[4] = { 1, 4, 4, 4 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    node_attrs st = { .n = 0 };
    rlx_node n = make_node("Conv", 11, 2, 1, &st);
    rlx_tensor *a = test_tensor(RLX_DTYPE_F32, 4, yd), *b = test_tensor(RLX_DTYPE_F32, 4, yd);
    const rlx_tensor *in[2] = { x, w };
    rlx_tensor *ao[1] = { a }, *bo[1] = { b };
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, ao, false));
    ((float *)w->data)[13] += 0.25f; /* one tap changed */
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, bo, true));
    double worst = test_max_abs_diff(a, b);
    /* the same tolerance as run_conv would allow here: 1e-5 rel + 2e-6 * 28 */
    CHECK_MSG(worst > 1e-5 * 30 + 2e-6 * 28, "a changed tap went unnoticed (max diff %g)", worst);
    rlx_tensor_destroy(x), rlx_tensor_destroy(w), rlx_tensor_destroy(a), rlx_tensor_destroy(b);
}

/* ------------------------------------------------------------ pools */

typedef struct pool_case {
    const char *op;
    int nsp;
    int64_t n, c;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    int ceil_mode, count_include_pad;
} pool_case;

/* The fast path's bits against the reference's (MaxPool picks an element,
 * so the same one: NaN payloads and the sign of zeros included). */
static int pool_bits(const char *what, const rlx_node *n, const rlx_tensor *const *in, int rank, const int64_t *yd) {
    rlx_tensor *fast = test_tensor(RLX_DTYPE_F32, rank, yd), *ref = test_tensor(RLX_DTYPE_F32, rank, yd);
    size_t numel = rlx_tensor_numel(ref);
    float *a = fast->data, *b = ref->data;
    for (size_t i = 0; i < numel; i++) a[i] = b[i] = 1e30f; /* unwritten: 1e30 never is an input */
    rlx_tensor *fo[1] = { fast }, *ro[1] = { ref };
    int ok = 1;
    rlx_status sf = rlx_cpu_run_node(NULL, n, in, fo, false);
    CHECK_MSG(sf == RLX_OK, "%s: fast path: %s", what, rlx_last_error());
    rlx_status sr = rlx_cpu_run_node(NULL, n, in, ro, true);
    CHECK_MSG(sr == RLX_OK, "%s: reference: %s", what, rlx_last_error());
    ok = sf == RLX_OK && sr == RLX_OK;
    for (size_t i = 0; ok && i < numel; i++) {
        uint32_t ua, ub;
        memcpy(&ua, &a[i], 4), memcpy(&ub, &b[i], 4);
        if (ua != ub || b[i] == 1e30f) {
            fprintf(stderr, "%s: element %zu of %zu: fast %.9g (0x%08x), reference %.9g (0x%08x)\n", what, i, numel,
                    a[i], (unsigned)ua, b[i], (unsigned)ub);
            ok = 0;
        }
    }
    rlx_tensor_destroy(fast), rlx_tensor_destroy(ref);
    return ok;
}

/* Inputs of run_pool: random in [-1, 1), the same with a NaN every 7th
 * element, or drawn from a few special values (quiet NaNs of three
 * payloads and both signs, -0, +0, -inf, +inf, and 1, -1, 0.5 repeated:
 * windows that start with a NaN, hold only NaNs, hold equal maxima of
 * either sign of zero; MaxPool only, compared bit for bit). */
enum { POOL_RANDOM, POOL_NANS, POOL_SPECIAL };

static float special_value(void) {
    static const uint32_t bits[] = { 0x7fc00001u, 0xffc00002u, 0x7fd23456u, 0x80000000u, 0x00000000u,
                                     0xff800000u, 0x7f800000u, 0x3f800000u, 0xbf800000u, 0x3f000000u };
    uint64_t r = test_rand_u64() % 16;
    float v;
    /* zeros and -inf most often: ties and all-minus-infinity windows */
    uint32_t u = r < 10 ? bits[r] : r < 12 ? bits[3] : r < 14 ? bits[4] : bits[5];
    memcpy(&v, &u, 4);
    return v;
}

static void run_pool(const pool_case *c, int fill) {
    int64_t xd[5] = { c->n, c->c }, pads[6];
    for (int i = 0; i < c->nsp; i++) xd[2 + i] = c->in[i], pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
    node_attrs st = { .n = 0 };
    attr_ints(&st, "kernel_shape", c->nsp, c->k);
    attr_ints(&st, "strides", c->nsp, c->s);
    attr_ints(&st, "pads", 2 * c->nsp, pads);
    bool maxp = strcmp(c->op, "MaxPool") == 0;
    if (maxp) attr_ints(&st, "dilations", c->nsp, c->d);
    attr_int(&st, "ceil_mode", c->ceil_mode);
    if (!maxp) attr_int(&st, "count_include_pad", c->count_include_pad);
    rlx_node n = make_node(c->op, maxp ? 12 : 19, 1, 1, &st);
    rlx_conv_geom g;
    rlx_status s = rlx_conv_geom_resolve(&n, RLX_GEOM_POOL, xd, 2 + c->nsp, NULL, 0, &g);
    CHECK_MSG(s == RLX_OK, "%s: geometry: %s", c->op, rlx_last_error());
    if (s) return;
    int64_t yd[5] = { c->n, c->c };
    for (int i = 0; i < c->nsp; i++) yd[2 + i] = g.out[i];
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2 + c->nsp, xd, -1, 1);
    bool with_nans = fill != POOL_RANDOM;
    if (fill == POOL_NANS) /* every 7th element: windows that start with, hold or miss a NaN */
        for (size_t i = 3; i < rlx_tensor_numel(x); i += 7) ((float *)x->data)[i] = NAN;
    if (fill == POOL_SPECIAL)
        for (size_t i = 0; i < rlx_tensor_numel(x); i++) ((float *)x->data)[i] = special_value();
    g_nan_ok = with_nans;
    const rlx_tensor *in[1] = { x };
    char what[160];
    snprintf(what, sizeof what, "%s %dx%d s%d pad %d/%d ceil %d include_pad %d", c->op, (int)c->k[0],
             (int)(c->nsp > 1 ? c->k[1] : 1), (int)c->s[0], (int)c->pb[0], (int)c->pe[0], c->ceil_mode,
             c->count_include_pad);
    /* MaxPool picks an element: exact, and with the special values bit for
     * bit. AveragePool sums at most 27 floats in float against double:
     * 1e-6 relative + 1e-6 absolute */
    if (fill == POOL_SPECIAL && maxp)
        CHECK_MSG(pool_bits(what, &n, in, 2 + c->nsp, yd), "%s with special values, ISA %d", what,
                  (int)rlx_cpu_isa_get());
    else
        CHECK_MSG(fast_vs_ref(what, &n, in, 2 + c->nsp, yd, maxp ? 0 : 1e-6, maxp ? 0 : 1e-6), "%s%s", what,
              with_nans ? " with NaNs" : "");
    g_nan_ok = false;
    rlx_tensor_destroy(x);
}

static void test_pools(void) {
    static const pool_case cases[] = {
        { "MaxPool", 2, 1, 5, { 17, 16 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 2, 3, { 9, 12 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 2, 1, 4, { 11, 10 }, { 3, 2 }, { 1, 2 }, { 2, 1 }, { 2, 0 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 1, 1, 3, { 20 }, { 4 }, { 3 }, { 1 }, { 2 }, { 1 }, 1, 0 },
        { "MaxPool", 3, 1, 2, { 5, 6, 7 }, { 2, 3, 2 }, { 2, 1, 2 }, { 1, 1, 1 }, { 1, 1, 0 }, { 0, 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 17, 16 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 17, 16 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 2, 2, 3, { 13, 9 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 1, 0 }, { 2, 1 }, 1, 1 },
        { "AveragePool", 2, 1, 3, { 13, 9 }, { 3, 2 }, { 2, 2 }, { 1, 1 }, { 1, 0 }, { 2, 1 }, 1, 0 },
        { "AveragePool", 3, 1, 2, { 4, 5, 6 }, { 3, 3, 3 }, { 1, 2, 2 }, { 1, 1, 1 }, { 1, 1, 1 }, { 1, 0, 1 }, 0, 1 },
        /* no window inside along the last axis (every output one by one),
         * and ceil-mode windows that start on the end pad */
        { "AveragePool", 2, 1, 3, { 2, 2 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 1 },
        { "MaxPool", 2, 1, 3, { 2, 2 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 0 },
        { "MaxPool", 2, 2, 2, { 7, 3 }, { 2, 4 }, { 2, 1 }, { 1, 1 }, { 0, 1 }, { 1, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 2, { 8, 9 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, 1, 0 },
        /* strided runs gathered before the taps: ResNet's stem pool, runs
         * longer than the 256-float chunk, stride 3 with dilation */
        { "MaxPool", 2, 1, 4, { 12, 112 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 9, 600 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 7, 530 }, { 2, 3 }, { 1, 3 }, { 1, 2 }, { 0, 1 }, { 0, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 3, { 9, 600 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        run_pool(&cases[i], POOL_RANDOM);
        run_pool(&cases[i], POOL_NANS); /* MaxPool: NaN propagates (such planes run output by output) */
    }
    /* MaxPool and AveragePool by rows (cpu_nn_pool.c): the shapes of real models, odd
     * sizes around the vector widths (8, 16 columns; stride 2 reads 2 x
     * that), windows clipped on every side, rows shared by consecutive
     * windows or skipped (stride 3 down), 1-D; dilation and 3-D take the
     * other path. Every ISA the CPU runs, each case with random values,
     * with NaNs, and bit for bit with the special values. */
    static const pool_case rows[] = {
        { "MaxPool", 2, 1, 3, { 112, 112 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 }, /* ResNet */
        { "MaxPool", 2, 2, 3, { 15, 37 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 13, 70 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 13, 69 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 }, /* ceil */
        { "MaxPool", 2, 1, 3, { 16, 66 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 9, 33 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 2, 1, 3, { 17, 35 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 }, /* Inception */
        { "MaxPool", 2, 1, 2, { 20, 20 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 0, 0 }, /* SPPF */
        { "MaxPool", 2, 1, 2, { 13, 41 }, { 9, 13 }, { 1, 1 }, { 1, 1 }, { 4, 6 }, { 4, 6 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 11, 19 }, { 2, 5 }, { 3, 2 }, { 1, 1 }, { 1, 3 }, { 0, 2 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 4, 9 }, { 5, 9 }, { 2, 2 }, { 1, 1 }, { 2, 4 }, { 2, 4 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 6, 7 }, { 2, 2 }, { 1, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 1, { 3, 1 }, { 3, 1 }, { 2, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 1, 2, 3, { 101 }, { 3 }, { 2 }, { 1 }, { 1 }, { 1 }, 0, 0 },
        { "MaxPool", 1, 1, 2, { 64 }, { 4 }, { 1 }, { 1 }, { 3 }, { 0 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 12, 40 }, { 3, 3 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, 0, 0 }, /* dilation */
        { "MaxPool", 3, 1, 2, { 5, 9, 20 }, { 2, 3, 3 }, { 1, 2, 2 }, { 1, 1, 1 }, { 0, 1, 1 }, { 1, 1, 1 }, 0, 0 },
        /* MaxPool of small planes in registers (in[2] <= 32, out[2] <= 32,
         * at most 64 rows): Inception v2's 7x7 s1 and 28 / 14 s2 pools,
         * SqueezeNet's 27 s2, the widest row at stride 2 (32 -> 16), one
         * column, a kernel wider than the row, 64 and 65 rows (65: by
         * rows), output rows with no input row (stride 3 down, ceil), 1-D,
         * 17 outputs, 3x3 s1 over 28x28 and 32 -> 32 (two vectors of
         * outputs); output columns without an input column and 33 outputs
         * go by rows */
        { "MaxPool", 2, 1, 5, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 4, { 27, 27 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 28, 28 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 2, 3, { 14, 14 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 32, 32 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 5, 1 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 6, 3 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 64, 16 }, { 2, 3 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 65, 16 }, { 2, 3 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 8, 9 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 1, 1 }, { 2, 1 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 9, 31 }, { 4, 7 }, { 2, 2 }, { 1, 1 }, { 1, 3 }, { 2, 3 }, 1, 0 },
        { "MaxPool", 1, 2, 3, { 30 }, { 4 }, { 2 }, { 1 }, { 1 }, { 2 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 5, 17 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 2, 2, { 6, 32 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 5, 32 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        /* AveragePool by rows (the padded row's sums; within 1e-6 of the
         * reference): Inception v2's 3x3 s1, DenseNet's 2x2 s2, a 7x7 head,
         * ceil mode with the pads counted, stride 3 (portable C), stride
         * (1, 2), 1-D, and a 3-D pool (the other path) */
        { "AveragePool", 2, 1, 3, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 3, { 56, 56 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 7, 7 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 13, 41 }, { 3, 5 }, { 2, 2 }, { 1, 1 }, { 1, 2 }, { 1, 2 }, 1, 1 },
        { "AveragePool", 2, 1, 2, { 13, 41 }, { 3, 5 }, { 2, 2 }, { 1, 1 }, { 1, 2 }, { 1, 2 }, 1, 0 },
        { "AveragePool", 2, 1, 2, { 11, 37 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 2, { 9, 40 }, { 3, 3 }, { 1, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 1, 2, 3, { 101 }, { 3 }, { 2 }, { 1 }, { 1 }, { 1 }, 0, 1 },
        { "AveragePool", 3, 1, 2, { 5, 9, 20 }, { 2, 3, 3 }, { 1, 2, 2 }, { 1, 1, 1 }, { 0, 1, 1 }, { 1, 1, 1 }, 0, 0 },
        /* stride 1 along the last axis in registers (kw <= 17): rows of
         * several 16-column chunks, the widest kernel, stride 2 down, pads
         * counted or not, ceil mode; kw 18 goes by rows */
        { "AveragePool", 2, 1, 3, { 11, 41 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 2, 1, 2, { 9, 40 }, { 5, 17 }, { 2, 1 }, { 1, 1 }, { 2, 8 }, { 1, 8 }, 1, 0 },
        { "AveragePool", 2, 1, 2, { 9, 40 }, { 5, 17 }, { 2, 1 }, { 1, 1 }, { 2, 8 }, { 1, 8 }, 1, 1 },
        { "AveragePool", 2, 1, 2, { 6, 35 }, { 2, 18 }, { 1, 1 }, { 1, 1 }, { 0, 3 }, { 1, 3 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        /* stride 2 with 2 taps in registers (3 taps by rows) */
        { "AveragePool", 2, 1, 3, { 9, 41 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 3, { 9, 41 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0, 1 }, 1, 1 },
        { "AveragePool", 2, 1, 2, { 7, 37 }, { 3, 1 }, { 1, 2 }, { 1, 1 }, { 1, 0 }, { 1, 0 }, 0, 0 },
        /* AveragePool of small planes in registers (in[2] <= 32, out[2] <=
         * 32, at most 64 rows, any stride): Inception v2's 3x3 s1 p1 over
         * 7x7 (pads counted and not), DenseNet's 2x2 s2 over 28x28,
         * stride 3 with ceil mode (windows on the end pad), 32 -> 32 (two
         * vectors of outputs), a window with no input column, 65 rows and
         * 33 outputs (by rows) */
        { "AveragePool", 2, 1, 5, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 2, 1, 3, { 28, 28 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 11, 29 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 1 },
        { "AveragePool", 2, 2, 2, { 6, 32 }, { 3, 5 }, { 1, 1 }, { 1, 1 }, { 1, 2 }, { 1, 2 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 4, 5 }, { 3, 3 }, { 2, 3 }, { 1, 1 }, { 1, 2 }, { 1, 2 }, 1, 0 },
        { "AveragePool", 2, 1, 2, { 65, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 5, 32 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        /* by column blocks (cpu_nn_pool.c mcol_plane): SqueezeNet's and
         * Inception's 3x3 s2 over 111, 55 (ceil mode), 112 / 56 (end pad),
         * 3x3 s1 p1 over 27 and 13 (registers shared down the plane), the
         * blocks' pairs (a tap from the second pair: stride 2, 3 taps), 2x2 s2,
         * a wide kernel (kw 8) and kw 9 (by rows), stride 3 down (each row
         * folded anew), windows on pads only (ceil mode, AveragePool) */
        { "MaxPool", 2, 1, 3, { 23, 111 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 2, 1, 3, { 55, 55 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 2, 1, 3, { 56, 54 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 1, 0 },
        { "MaxPool", 2, 1, 3, { 16, 112 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 27, 27 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 5, { 13, 13 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 12, 70 }, { 2, 2 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 12, 70 }, { 4, 8 }, { 3, 2 }, { 1, 1 }, { 1, 3 }, { 2, 3 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 12, 70 }, { 3, 9 }, { 2, 1 }, { 1, 1 }, { 1, 4 }, { 1, 4 }, 0, 0 },
        { "MaxPool", 2, 1, 2, { 10, 300 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 12, 70 }, { 3, 8 }, { 1, 1 }, { 1, 1 }, { 1, 3 }, { 1, 4 }, 0, 0 },
        /* bands of output rows (16 KiB of input rows each): 4 and 2 of them */
        { "MaxPool", 2, 1, 2, { 41, 300 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 0 },
        { "MaxPool", 2, 1, 2, { 30, 200 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 30, 200 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 2, { 9, 40 }, { 3, 5 }, { 1, 1 }, { 1, 1 }, { 1, 2 }, { 1, 2 }, 0, 1 },
        { "AveragePool", 2, 1, 3, { 9, 40 }, { 4, 8 }, { 2, 1 }, { 1, 1 }, { 1, 3 }, { 2, 4 }, 1, 0 },
        { "AveragePool", 2, 1, 3, { 27, 27 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 2, 1, 3, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 3, { 19, 41 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 3, { 19, 41 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 1, 1 },
        { "AveragePool", 2, 1, 2, { 12, 37 }, { 3, 3 }, { 3, 2 }, { 1, 1 }, { 2, 2 }, { 2, 2 }, 1, 0 },
        /* two planes per vector (rows of at most 16 floats, at most 8
         * outputs): odd plane counts (a lone plane at a task's end), 7x7 and
         * 6x6 s1 p1, 14 -> 7 s2 with the end pad, pads counted or not */
        { "MaxPool", 2, 1, 5, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 7, { 6, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 2, 3, { 14, 14 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 0 },
        { "MaxPool", 2, 1, 3, { 5, 16 }, { 2, 4 }, { 1, 2 }, { 1, 1 }, { 0, 1 }, { 1, 1 }, 1, 0 },
        { "AveragePool", 2, 1, 7, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 6, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 2, 1, 3, { 9, 16 }, { 3, 5 }, { 2, 3 }, { 1, 1 }, { 1, 2 }, { 2, 2 }, 1, 1 },
        /* AveragePool whose one output's window holds the plane (a double
         * sum): the 7x7 heads of ResNet-50 and Inception v2, Inception v1's
         * 7x7 over 6x6 with an end pad (counted and not), a 1-D one, 33
         * floats (a masked tail) */
        { "AveragePool", 2, 1, 5, { 7, 7 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 6, 6 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 0 },
        { "AveragePool", 2, 1, 5, { 6, 6 }, { 7, 7 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, 0, 1 },
        { "AveragePool", 1, 2, 3, { 33 }, { 33 }, { 1 }, { 1 }, { 0 }, { 0 }, 0, 0 },
        { "AveragePool", 2, 1, 3, { 3, 11 }, { 3, 11 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, 0, 1 },
        /* 3-D with a kernel of depth 1: planes of depth > 1 take the other path */
        { "AveragePool", 3, 2, 4, { 6, 4, 5 }, { 1, 3, 1 }, { 3, 1, 1 }, { 1, 1, 1 }, { 0, 1, 0 }, { 0, 1, 0 }, 0, 0 },
        { "MaxPool", 3, 2, 4, { 6, 4, 5 }, { 1, 3, 1 }, { 3, 1, 1 }, { 1, 1, 1 }, { 0, 1, 0 }, { 0, 1, 0 }, 0, 0 },
    };
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        CHECK(rlx_cpu_isa_get() == (rlx_cpu_isa)isa);
        for (size_t i = 0; i < ARRAY_LEN(rows); i++)
            for (int fill = POOL_RANDOM; fill <= POOL_SPECIAL; fill++) {
                /* AveragePool with the special values: fast_vs_ref takes an
                 * infinity equal to itself as out of tolerance (NaNs are covered) */
                if (fill == POOL_SPECIAL && strcmp(rows[i].op, "AveragePool") == 0) continue;
                run_pool(&rows[i], fill);
            }
    }
    rlx_cpu_isa_cap(top);
    /* global pools: the reductions' vector rows (rlx_cpu_reduce_rows_f32:
     * double sums in 16 lanes per block of 32K, so within an f32 ulp of the
     * reference's one chain; the maximum exact, its first NaN included),
     * planes of 35 and of 40,000 (two blocks), p 3 the per-plane loop
     * (exact); then with the ISA capped below AVX2: the per-plane loop */
    static const char *globals[] = { "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "GlobalLpPool",
                                      "GlobalLpPool" };
    static const int64_t gp[] = { 0, 0, 1, 2, 3 };
    static const int64_t gxd[2][4] = { { 2, 37, 5, 7 }, { 1, 3, 200, 200 } };
    for (int cap = 0; cap < 2; cap++) {
        if (cap) rlx_cpu_isa_cap(RLX_CPU_ISA_C);
        for (int sh = 0; sh < 2; sh++)
            for (size_t i = 0; i < ARRAY_LEN(globals); i++)
                for (int nan = 0; nan < 2; nan++) {
                    if (nan && i != 1) continue;
                    const int64_t *xd = gxd[sh];
                    int64_t yd[4] = { xd[0], xd[1], 1, 1 };
                    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
                    size_t sp = (size_t)(xd[2] * xd[3]);
                    if (nan) /* NaNs in plane 1 only (after its maximum's likely place) */
                        ((float *)x->data)[sp + sp / 2] = NAN, ((float *)x->data)[sp + sp - 1] = NAN;
                    const rlx_tensor *in[1] = { x };
                    node_attrs st = { .n = 0 };
                    if (gp[i]) attr_int(&st, "p", gp[i]);
                    rlx_node n = make_node(globals[i], 1, 1, 1, &st);
                    g_nan_ok = nan != 0;
                    bool exact = i == 1 || gp[i] == 3 || cap;
                    CHECK_MSG(fast_vs_ref(globals[i], &n, in, 4, yd, exact ? 0 : 1.2e-7, 0), "%s p %lld, %lld x %lld%s%s",
                              globals[i], (long long)gp[i], (long long)xd[2], (long long)xd[3], nan ? ", NaNs" : "",
                              cap ? ", no AVX2" : "");
                    g_nan_ok = false;
                    rlx_tensor_destroy(x);
                }
    }
    rlx_cpu_isa_cap(top);
}

/* ------------------------------------------------------------ Resize */

/* Nearest Resize (rows shared over the pool on the fast path) copies the
 * same elements as the reference: exact. Large enough to be split. */
static void test_resize_nearest(void) {
    int64_t xd[4] = { 2, 8, 40, 33 }, sd[1] = { 4 }, yd[4] = { 2, 8, 80, 99 };
    const float scales[4] = { 1.0f, 1.0f, 2.0f, 3.0f };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    rlx_tensor *sc = test_tensor_f32(1, sd, scales);
    const rlx_tensor *in[3] = { x, NULL, sc };
    node_attrs st = { .n = 0 };
    rlx_node n = make_node("Resize", 13, 3, 1, &st);
    CHECK_MSG(fast_vs_ref("Resize nearest", &n, in, 4, yd, 0, 0), "Resize nearest");
    rlx_tensor_destroy(x), rlx_tensor_destroy(sc);
    /* bytes (the 8-bit tensors of QDQ models, passes/fuse_qdq_ew.c), rows
     * repeated (x2, x3) and skipped (x0.5): the same bytes as the reference */
    static const float k_sc[3][4] = { { 1, 1, 2, 2 }, { 1, 1, 3, 0.5f }, { 1, 1, 0.5f, 3 } };
    for (int v = 0; v < 3; v++) {
        int64_t bd[4] = { 1, 24, 16, 17 }, od[4];
        for (int d = 0; d < 4; d++) od[d] = (int64_t)floorf((float)bd[d] * k_sc[v][d]);
        rlx_tensor *xb = test_tensor(RLX_DTYPE_U8, 4, bd), *s8 = test_tensor_f32(1, sd, k_sc[v]);
        for (size_t i = 0; i < xb->nbytes; i++) ((uint8_t *)xb->data)[i] = (uint8_t)test_rand_u64();
        rlx_tensor *yf = test_tensor(RLX_DTYPE_U8, 4, od), *yr = test_tensor(RLX_DTYPE_U8, 4, od);
        memset(yf->data, 0xA5, yf->nbytes), memset(yr->data, 0x5A, yr->nbytes);
        const rlx_tensor *in8[3] = { xb, NULL, s8 };
        rlx_tensor *fo[1] = { yf }, *ro[1] = { yr };
        CHECK_OK(rlx_cpu_run_node(NULL, &n, in8, fo, false));
        CHECK_OK(rlx_cpu_run_node(NULL, &n, in8, ro, true));
        CHECK_MSG(memcmp(yf->data, yr->data, yf->nbytes) == 0, "Resize nearest u8, scales %d: fast != reference", v);
        rlx_tensor_destroy(xb), rlx_tensor_destroy(s8), rlx_tensor_destroy(yf), rlx_tensor_destroy(yr);
    }
}

/* ------------------------------------------------------------ Gemm, MatMul */

/* Big enough to be split over the pool (more than 2^18 multiply-adds). */
/* rlx_nn_run_items (the tasks of the conv paths): every item runs exactly
 * once for counts around the slots' shares (0, 1, 2, 3, 7, 64, 1001) at
 * thread limits 1, 2, 3, 5 and the pool's; each slot owns a contiguous
 * share, and a thread whose share is done takes items from the back of
 * the others': with two or more threads, item 0 (the first slot's first)
 * waits until item 1 (of the same share) has run, which only another
 * slot's thread taking it can do (bounded: 5 s, then it fails). */
typedef struct items_rec {
    atomic_int runs[1001];
    atomic_int item1_done;
    bool wait_in_0;
    atomic_int timed_out;
} items_rec;

static void items_fn(void *ctx, size_t item, float *scratch) {
    items_rec *r = ctx;
    (void)scratch;
    if (item == 0 && r->wait_in_0)
        for (int i = 0; i < 5000 && !atomic_load(&r->item1_done); i++) {
            struct timespec t = { 0, 1000000 };
            nanosleep(&t, NULL);
        }
    if (item == 0 && r->wait_in_0 && !atomic_load(&r->item1_done)) atomic_store(&r->timed_out, 1);
    if (item == 1) atomic_store(&r->item1_done, 1);
    atomic_fetch_add(&r->runs[item], 1);
}

/* rlx_nn_act_f32 (the fused activations' epilogue: Gemm, MatMul,
 * ConvTranspose): Relu and Clip over vectors must give rlx_act_apply's bits
 * element by element, NaN payloads, -0, infinities, ties with the bounds,
 * a NaN bound and lo > hi included, at lengths around the vector width and
 * at offsets that are not vector-aligned; the other activations too. */
static void test_act_epilogue_bits(void) {
    static const struct {
        rlx_act_kind kind;
        float alpha, beta;
    } acts[] = { { RLX_ACT_RELU, 0, 0 },        { RLX_ACT_CLIP, -0.5f, 1.0f },      { RLX_ACT_CLIP, 0.0f, 0.0f },
                 { RLX_ACT_CLIP, 2.0f, -1.0f }, { RLX_ACT_CLIP, NAN, 1.0f },        { RLX_ACT_LEAKYRELU, 0.1f, 0 },
                 { RLX_ACT_HARDSIGMOID, 0.2f, 0.5f }, { RLX_ACT_SIGMOID, 0, 0 },  { RLX_ACT_HARDSWISH, 0, 0 },
                 { RLX_ACT_GELU, 0, 0 },       { RLX_ACT_TANH, 0, 0 },              { RLX_ACT_SILU, 0, 0 } };
    static const size_t lens[] = { 1, 15, 16, 17, 37, 100, 20000 };
    float *buf = malloc(20001 * sizeof(float)), *want = malloc(20001 * sizeof(float));
    for (size_t a = 0; a < ARRAY_LEN(acts); a++)
        for (size_t l = 0; l < ARRAY_LEN(lens); l++) {
            rlx_act act = { .kind = acts[a].kind, .alpha = acts[a].alpha, .beta = acts[a].beta };
            size_t off = l % 2, n = lens[l];
            for (size_t i = 0; i < n; i++) {
                float v = i % 3 ? (float)((double)(test_rand_u64() % 2001) / 500.0 - 2.0) : special_value();
                if (i % 7 == 0) v = i % 2 ? act.alpha : act.beta; /* ties with the bounds */
                buf[off + i] = v;
                want[i] = rlx_act_apply(&act, v);
            }
            rlx_nn_act_f32(&act, buf + off, n);
            CHECK_MSG(memcmp(buf + off, want, n * sizeof(float)) == 0, "act %d (%g, %g), %zu elements: not the bits "
                      "of rlx_act_apply", (int)act.kind, act.alpha, act.beta, n);
            /* the conv epilogue, one row of bias b (0 in the odd rows): act(y + b), the bias
             * left out when it is 0 only for functions with a vector form (its rule) */
            if (n > 100) continue;
            float bias[2] = { 0.0f, 0.375f };
            for (int r = 0; r < 2; r++) {
                bool skip = bias[r] == 0.0f && rlx_cpu_ew_has_vec(act.kind);
                for (size_t i = 0; i < n; i++) {
                    buf[r * n + i] = i % 3 ? (float)((double)(test_rand_u64() % 2001) / 500.0 - 2.0) : special_value();
                    want[r * n + i] = rlx_act_apply(&act, skip ? buf[r * n + i] : buf[r * n + i] + bias[r]);
                }
            }
            rlx_nn_conv_epilogue_block(buf, n, 2, n, bias, NULL, &act);
            CHECK_MSG(memcmp(buf, want, 2 * n * sizeof(float)) == 0, "conv epilogue, act %d (%g, %g), 2 x %zu: not "
                      "the bits of rlx_act_apply", (int)act.kind, act.alpha, act.beta, n);
        }
    free(buf), free(want);
}

static void test_run_items(void) {
    static items_rec r;
    const size_t counts[] = { 0, 1, 2, 3, 7, 64, 1001 };
    const int limits[] = { 1, 2, 3, 5, 0 };
    for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++) {
        int prev = rlx_parallel_set_limit(limits[li]), threads = rlx_parallel_threads();
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (int wait = 0; wait < 2; wait++) {
                size_t n = counts[ci];
                if (wait && (threads < 2 || n < 64)) continue;
                memset(&r, 0, sizeof r);
                r.wait_in_0 = wait;
                CHECK_OK(rlx_nn_run_items(NULL, n, 0, items_fn, &r));
                int bad = 0;
                for (size_t i = 0; i < n; i++) bad += atomic_load(&r.runs[i]) != 1;
                CHECK_MSG(bad == 0, "run_items: %zu items at %d threads: %d not run exactly once", n, threads, bad);
                CHECK_MSG(!atomic_load(&r.timed_out),
                          "run_items: %zu items at %d threads: no other thread took item 1 while item 0 waited", n,
                          threads);
            }
        rlx_parallel_set_limit(prev);
    }
}

/* ------------------------------------------------------------ task splits at 8, 16 and 32 threads */

/* The slowest thread's work when rlx_nn_run_items runs tasks of works
 * w[0 .. n) on t threads, all starting at once: slot v owns the contiguous
 * share [n v / s, n (v + 1) / s) (s = min(t, n) slots) and takes it from
 * the front; a thread whose share is empty takes from the back of the
 * next slots' (v + 1, v + 2, ...), as run_slots does; the thread that is
 * free first moves next. */
static double split_slowest(const double *w, size_t n, size_t t) {
    enum { MAXT = 64 };
    size_t slots = t < n ? t : n, lo[MAXT], hi[MAXT];
    double busy[MAXT] = { 0 };
    if (!slots) return 0.0;
    for (size_t v = 0; v < slots; v++) lo[v] = n * v / slots, hi[v] = n * (v + 1) / slots;
    for (size_t done = 0; done < n; done++) {
        size_t s = 0;
        for (size_t v = 1; v < slots; v++)
            if (busy[v] < busy[s]) s = v;
        size_t item = n;
        for (size_t d = 0; d < slots && item == n; d++) {
            size_t v = (s + d) % slots;
            if (lo[v] < hi[v]) item = d == 0 ? lo[v]++ : --hi[v];
        }
        busy[s] += w[item];
    }
    double slowest = 0.0;
    for (size_t v = 0; v < slots; v++) slowest = busy[v] > slowest ? busy[v] : slowest;
    return slowest;
}

/* One node of a model for the split test: a Conv (depthwise when group
 * == cin) or a pool, 2-D, square kernel, pads p on every side. */
typedef struct split_node {
    const char *model;
    int64_t n, c, hw, k, s, p;
} split_node;

/* The rule of the split test, for nodes of at least 4 Ki output points
 * per thread (smaller ones cannot feed the threads with tasks worth their
 * cost: printed, not checked): at least 2 tasks per thread (one task per
 * thread leaves a thread that starts late, or runs on a busy core, holding
 * up the node by a whole task, where with two or more the others take
 * its second from the back), and the slowest thread of rlx_nn_run_items'
 * schedule (split_slowest) within 1.25x an even share of the work. */
#define SPLIT_MIN_POINTS 4096.0
#define SPLIT_OVER 1.25
/* The GEMM path's blocks are whole tiles (8 rows x 32 columns): 64 x 784
 * outputs (Inception's 1x1s at 28x28) over 16 threads come to 1.31 of an
 * even share at 2 or 3 blocks a thread, unless B's columns are packed 8
 * times (8 x 4 blocks, 1.14), which rlx_cpu_split2d_choose's costs rank
 * slower; so 1.35 there. */
#define SPLIT_OVER_GEMM 1.35

/* Checks one split (tasks of works w) at t threads, the slowest thread
 * within max_over of an even share; returns whether it met the rule (or
 * was exempt). */
static bool split_check(const char *what, const double *w, size_t n, size_t t, double min_total, double max_over) {
    double total = 0.0, largest = 0.0;
    for (size_t i = 0; i < n; i++) total += w[i], largest = w[i] > largest ? w[i] : largest;
    double over = total > 0.0 ? split_slowest(w, n, t) / (total / (double)t) : 0.0;
    bool checked = total >= min_total, ok = !checked || (n >= 2 * t && over <= max_over);
    fprintf(stderr, "  split %s, %zu threads: %zu tasks (%.1f a thread), slowest thread %.2f of an even share%s\n", what, t, n,
           (double)n / (double)t, over, !checked ? " (small: not checked)" : ok ? "" : "  <-- FAILS");
    CHECK_MSG(ok, "%s on %zu threads: %zu tasks, the slowest thread %.2f of an even share (rule: >= %zu tasks, <= %.2f)",
              what, t, n, over, 2 * t, max_over);
    return ok;
}

/* The depthwise convolutions of MobileNetV2 (batch 1 and 8) and PP-OCRv4
 * (640 x 640) at 8, 16 and 32 threads, each on the path and with the split
 * rlx_nn_dw_split_of gives it (this CPU's paths: the row and flat paths
 * need AVX-512), a task's work its output points (rlx_nn_dw_task_points;
 * every point of a node costs the same taps). On main before row blocks
 * 13 of these splits failed the rule: MobileNetV2's 32 x 112x112 at batch
 * 1 (16 tasks on 16 and 32 threads), PP-OCRv4's 16 x 320x320 (8 tasks on
 * 8, 16 and 32) and 48 x 160x160 (24 tasks on 16 and 32). */
static void test_dw_splits(void) {
    static const split_node nodes[] = {
        { "mnv2", 1, 32, 112, 3, 1, 1 },   { "mnv2", 1, 96, 112, 3, 2, 1 },   { "mnv2", 1, 144, 56, 3, 1, 1 },
        { "mnv2", 1, 144, 56, 3, 2, 1 },   { "mnv2", 1, 192, 28, 3, 1, 1 },   { "mnv2", 1, 192, 28, 3, 2, 1 },
        { "mnv2", 1, 384, 14, 3, 1, 1 },   { "mnv2", 1, 576, 14, 3, 1, 1 },   { "mnv2", 1, 576, 14, 3, 2, 1 },
        { "mnv2", 1, 960, 7, 3, 1, 1 },    { "mnv2", 8, 32, 112, 3, 1, 1 },   { "mnv2", 8, 96, 112, 3, 2, 1 },
        { "mnv2", 8, 144, 56, 3, 1, 1 },   { "mnv2", 8, 144, 56, 3, 2, 1 },   { "mnv2", 8, 192, 28, 3, 1, 1 },
        { "mnv2", 8, 192, 28, 3, 2, 1 },   { "mnv2", 8, 384, 14, 3, 1, 1 },   { "mnv2", 8, 576, 14, 3, 1, 1 },
        { "mnv2", 8, 576, 14, 3, 2, 1 },   { "mnv2", 8, 960, 7, 3, 1, 1 },    { "ppocr", 1, 16, 320, 3, 1, 1 },
        { "ppocr", 1, 32, 320, 3, 2, 1 },  { "ppocr", 1, 48, 160, 3, 1, 1 },  { "ppocr", 1, 48, 160, 3, 2, 1 },
        { "ppocr", 1, 96, 80, 3, 1, 1 },   { "ppocr", 1, 96, 80, 3, 2, 1 },   { "ppocr", 1, 192, 40, 5, 1, 2 },
        { "ppocr", 1, 192, 40, 5, 2, 2 },  { "ppocr", 1, 384, 20, 5, 1, 2 },
    };
    static const size_t threads[] = { 8, 16, 32 };
    int failed = 0;
    for (size_t i = 0; i < ARRAY_LEN(nodes); i++) {
        const split_node *d = &nodes[i];
        conv_case c = { "split", 2, d->n, d->c, d->c, d->c, { d->hw, d->hw }, { d->k, d->k }, { d->s, d->s },
                        { 1, 1 }, { d->p, d->p }, { d->p, d->p }, 1 };
        int64_t xd[4] = { c.n, c.cin, c.in[0], c.in[1] }, wd[4] = { c.cout, 1, c.k[0], c.k[1] };
        int64_t pads[4] = { d->p, d->p, d->p, d->p };
        node_attrs st = { .n = 0 };
        attr_ints(&st, "kernel_shape", 2, c.k);
        attr_ints(&st, "strides", 2, c.s);
        attr_ints(&st, "pads", 4, pads);
        attr_int(&st, "group", c.group);
        rlx_node n = make_node("Conv", 11, 2, 1, &st);
        rlx_conv_geom g;
        CHECK_OK(rlx_conv_geom_resolve(&n, RLX_GEOM_CONV, xd, 4, wd, 4, &g));
        rlx_nn_sp3 s3;
        rlx_nn_sp3_init(&g, &s3);
        /* at 1 and 2 threads the split is the one before row blocks */
        for (size_t t = 1; t <= 2; t++) {
            rlx_nn_dw_split sp = rlx_nn_dw_split_of(&g, &s3, t);
            size_t pairs = (size_t)g.n * (((size_t)g.c_out + 1) / 2);
            CHECK_MSG(sp.path != RLX_NN_DW_ROWS || (sp.n_rb == 1 && sp.tasks == pairs),
                      "%s dw %lld x %lldx%lld at %zu threads: %zu blocks of rows", d->model, (long long)d->c,
                      (long long)d->hw, (long long)d->hw, t, sp.n_rb);
        }
        for (size_t ti = 0; ti < ARRAY_LEN(threads); ti++) {
            size_t t = threads[ti];
            rlx_nn_dw_split sp = rlx_nn_dw_split_of(&g, &s3, t);
            double *w = malloc((sp.tasks + 1) * sizeof *w), total = 0.0;
            CHECK(w != NULL);
            if (!w) return;
            for (size_t it = 0; it < sp.tasks; it++) {
                w[it] = (double)rlx_nn_dw_task_points(&sp, (size_t)s3.out[2], it);
                total += w[it];
            }
            CHECK_MSG(total == (double)(g.n * g.c_out) * (double)s3.out_sp, "dw split: tasks cover %.0f of %lld points",
                      total, (long long)(g.n * g.c_out * (int64_t)s3.out_sp));
            char what[128];
            static const char *paths[] = { "?", "planes", "blocked", "rows", "flat" };
            snprintf(what, sizeof what, "%s dw %lldx %lld x %lldx%lld k%lld s%lld (%s)", d->model, (long long)d->n,
                     (long long)d->c, (long long)d->hw, (long long)d->hw, (long long)d->k, (long long)d->s,
                     paths[sp.path]);
            failed += !split_check(what, w, sp.tasks, t, SPLIT_MIN_POINTS * (double)t, SPLIT_OVER);
            free(w);
        }
    }
    fprintf(stderr, "depthwise splits: %d failing the rule\n", failed);
}

/* The GEMM path's 2-D splits (rlx_nn_conv_gemm_req, rlx_cpu_split2d_choose,
 * weights packed at compile time) of convolutions that take it in
 * ResNet-50 and Inception v2 (the 7x7 stride-2 stems, 3 -> 64 to 112x112,
 * K 147; Inception's 1x1s to 64 channels at 28x28, K 192 and 256, B the
 * input itself) at 8, 16 and 32 threads, by split_check's rule (task work:
 * its multiply-adds; checked from 2^17 a task at 2 a thread); at 1 and 2
 * threads min_tasks stays 0 (the split as before). Before min_tasks
 * Inception's 1x1 192->64 was 13 tasks on 16 threads (3 idle). */
static void test_gemm_conv_splits(void) {
    static const struct {
        const char *what;
        size_t cog, sp, kt;
        bool direct;
    } nodes[] = {
        { "stem 7x7 s2 3->64 to 112x112", 64, 12544, 147, false },
        { "inception 1x1 192->64 at 28x28", 64, 784, 192, true },
        { "inception 1x1 256->64 at 28x28", 64, 784, 256, true },
    };
    static const size_t threads[] = { 8, 16, 32 };
    rlx_cpu_sgemm_pack pk;
    memset(&pk, 0, sizeof pk);
    size_t mr, nr;
    rlx_cpu_sgemm_tile(&mr, &nr);
    pk.w = mr;
    int failed = 0;
    for (size_t i = 0; i < ARRAY_LEN(nodes); i++) {
        rlx_nn_conv_io io;
        memset(&io, 0, sizeof io);
        io.groups = 1, io.cog = io.c_out = nodes[i].cog, io.sp = nodes[i].sp, io.kt = nodes[i].kt;
        io.direct = nodes[i].direct;
        for (size_t t = 1; t <= 2; t++)
            CHECK_MSG(rlx_nn_conv_gemm_req(&io, &pk, 1, t).min_tasks == 0, "%s: min_tasks at %zu threads",
                      nodes[i].what, t);
        for (size_t ti = 0; ti < ARRAY_LEN(threads); ti++) {
            size_t t = threads[ti];
            rlx_cpu_split2d_req q = rlx_nn_conv_gemm_req(&io, &pk, 1, t);
            rlx_cpu_split2d sp = rlx_cpu_split2d_choose(&q);
            size_t n = sp.m_blocks * sp.n_blocks;
            double *w = malloc(n * sizeof *w);
            CHECK(w != NULL);
            if (!w) return;
            for (size_t b = 0; b < n; b++) { /* rlx_nn_conv_block_of's order: channel blocks fastest */
                size_t r0, rows, c0, cols;
                rlx_cpu_block_range(q.m, q.m_unit, sp.m_blocks, b % sp.m_blocks, &r0, &rows);
                rlx_cpu_block_range(q.n, q.n_unit, sp.n_blocks, b / sp.m_blocks, &c0, &cols);
                w[b] = (double)rows * (double)cols * (double)q.k;
            }
            char what[96];
            snprintf(what, sizeof what, "GEMM path %s (%zu x %zu blocks)", nodes[i].what, sp.m_blocks, sp.n_blocks);
            failed += !split_check(what, w, n, t, 2.0 * (double)t * (double)(1 << 17), SPLIT_OVER_GEMM);
            free(w);
        }
    }
    fprintf(stderr, "GEMM-path conv splits: %d failing the rule\n", failed);
}

static void test_gemm_split(void) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int64_t m = 70, nn = 133, kk = 45;
            int64_t ad[2] = { ta ? kk : m, ta ? m : kk }, bd[2] = { tb ? nn : kk, tb ? kk : nn }, cd[1] = { nn };
            int64_t yd[2] = { m, nn };
            rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1);
            rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
            rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
            node_attrs st = { .n = 0 };
            attr_int(&st, "transA", ta);
            attr_int(&st, "transB", tb);
            attr_float(&st, "alpha", 0.75f);
            attr_float(&st, "beta", 1.5f);
            act_attrs(&st, RLX_ACT_GELU);
            rlx_node n = make_node("Gemm", 13, 3, 1, &st);
            const rlx_tensor *in[3] = { a, b, c };
            char what[64];
            snprintf(what, sizeof what, "Gemm transA %d transB %d", ta, tb);
            /* 1e-5 relative + 2e-6 per product */
            CHECK_MSG(fast_vs_ref(what, &n, in, 2, yd, 1e-5, 2e-6 * (double)kk), "%s", what);
            rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(c);
        }
    /* MatMul: one big 2-D product (split), and a batch of 7 matrices (one
     * per task when there are at most 7 threads, else each split) */
    static const int64_t shapes[2][3][3] = { { { 96, 64, 0 }, { 64, 80, 0 }, { 96, 80, 0 } },
                                             { { 7, 20, 33 }, { 7, 33, 25 }, { 7, 20, 25 } } };
    for (int i = 0; i < 2; i++) {
        int rank = i == 0 ? 2 : 3;
        rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, rank, shapes[i][0], -1, 1);
        rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, rank, shapes[i][1], -1, 1);
        node_attrs st = { .n = 0 };
        rlx_node n = make_node("MatMul", 13, 2, 1, &st);
        const rlx_tensor *in[2] = { a, b };
        int64_t kk = shapes[i][0][rank - 1];
        CHECK_MSG(fast_vs_ref("MatMul", &n, in, rank, shapes[i][2], 1e-5, 2e-6 * (double)kk), "MatMul %d", i);
        rlx_tensor_destroy(a), rlx_tensor_destroy(b);
    }
    /* MatMul with the fused bias [N] (the vector rows' add: N past whole
     * 32- and 8-lane steps, and below 8) and an activation or none, A of
     * rank 2 and 3 on one 2-D B */
    static const int64_t bshapes[3][3] = { { 128, 64, 77 }, { 40, 33, 7 }, { 96, 48, 256 } };
    static const rlx_act_kind bacts[3] = { RLX_ACT_GELU, RLX_ACT_NONE, RLX_ACT_RELU };
    for (int i = 0; i < 3; i++)
        for (int rank = 2; rank <= 3; rank++) {
            int64_t m = bshapes[i][0], kk = bshapes[i][1], nn = bshapes[i][2];
            int64_t ad[3] = { 2, m / 2, kk }, yd[3] = { 2, m / 2, nn };
            if (rank == 2) ad[0] = m, ad[1] = kk, yd[0] = m, yd[1] = nn;
            int64_t bd[2] = { kk, nn }, cd[1] = { nn };
            rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, rank, ad, -1, 1);
            rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
            rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
            node_attrs st = { .n = 0 };
            act_attrs(&st, bacts[i]);
            rlx_node n = make_node("MatMul", 13, 3, 1, &st);
            const rlx_tensor *in[3] = { a, b, c };
            CHECK_MSG(fast_vs_ref("MatMul + bias", &n, in, rank, yd, 1e-5, 2e-6 * (double)kk),
                      "MatMul + bias %lld x %lld x %lld rank %d act %d", (long long)m, (long long)kk, (long long)nn,
                      rank, (int)bacts[i]);
            rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(c);
        }
}

/* A Gemm (transB 0 and 1) and a MatMul of one row of A (a classifier at
 * batch 1, a decoder's one token), with each FMA kernel the CPU runs: the
 * one-row product with B as stored (the plan's operand under
 * cpu.prepack=0, or a B that is not constant: transposed, 16 rows at a
 * time in registers with AVX-512 or through a panel with AVX2) has the
 * bits of the product with B packed (rlx_cpu_prepare_node, the plain
 * weights poisoned meanwhile), and is within fast_vs_ref's tolerance of
 * the reference (outputs poisoned), at thread limits 1, 2 and 5. N past
 * whole vectors (1000, 33), K over 3 k panels and not a multiple of 16. */
static void test_gemm_one_row(void) {
    static const int64_t nks[2][2] = { { 1000, 600 }, { 33, 257 } };
    static const int lims[3] = { 1, 2, 5 };
    rlx_cpu_sgemm_kernel keep_kernel = rlx_cpu_sgemm_kernel_get();
    int runs = 0;
    for (int kern = RLX_CPU_SGEMM_AVX512; kern >= RLX_CPU_SGEMM_AVX2; kern--) /* each FMA kernel this CPU runs */
    for (int op = 0; op < 3 && rlx_cpu_sgemm_kernel_set((rlx_cpu_sgemm_kernel)kern); op++) /* Gemm, transB, MatMul */
        for (int s = 0; s < 2; s++) {
            int64_t nn = nks[s][0], kk = nks[s][1];
            bool tb = op == 1;
            int64_t ad[2] = { 1, kk }, bd[2] = { tb ? nn : kk, tb ? kk : nn }, cd[1] = { nn }, yd[2] = { 1, nn };
            rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, ad, -1, 1);
            rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, bd, -1, 1);
            rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, cd, -1, 1);
            node_attrs st = { .n = 0 };
            if (op < 2) {
                attr_int(&st, "transB", tb);
                attr_float(&st, "alpha", 0.75f);
                attr_float(&st, "beta", 1.5f);
            }
            rlx_node n = make_node(op < 2 ? "Gemm" : "MatMul", 13, op < 2 ? 3 : 2, 1, &st);
            const rlx_tensor *in[3] = { a, b, c };
            char what[96];
            snprintf(what, sizeof what, "%s one row, N %lld K %lld", op == 0 ? "Gemm" : op == 1 ? "Gemm transB" : "MatMul",
                     (long long)nn, (long long)kk);
            rlx_cpu_sgemm_pack pk;
            CHECK_OK(rlx_cpu_prepare_node(NULL, &n, in, &pk));
            bool pooled = rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL;
            CHECK_MSG(!pooled || rlx_cpu_sgemm_pack_holds(&pk), "%s: the weights were not packed", what);
            for (int li = 0; li < 3; li++) {
                int prev = rlx_parallel_set_limit(lims[li]);
                CHECK_MSG(fast_vs_ref(what, &n, in, 2, yd, 1e-5, 2e-6 * (double)kk), "%s, %d threads", what, lims[li]);
                rlx_tensor *plain = test_tensor(RLX_DTYPE_F32, 2, yd), *packed = test_tensor(RLX_DTYPE_F32, 2, yd);
                poison(plain), poison(packed);
                rlx_tensor *po[1] = { plain }, *pp[1] = { packed };
                CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, po, NULL));
                if (rlx_cpu_sgemm_pack_holds(&pk)) {
                    size_t wn = rlx_tensor_numel(b);
                    float *keep = malloc(wn * sizeof(float));
                    memcpy(keep, b->data, wn * sizeof(float));
                    for (size_t i = 0; i < wn; i++) ((float *)b->data)[i] = NAN;
                    CHECK_OK(rlx_cpu_run_node_packed(NULL, &n, in, pp, &pk));
                    memcpy(b->data, keep, wn * sizeof(float));
                    free(keep);
                    CHECK_MSG(memcmp(plain->data, packed->data, (size_t)nn * sizeof(float)) == 0,
                              "%s, %s kernel, %d threads: B as stored: not the bits of the packed product", what,
                              kern == RLX_CPU_SGEMM_AVX512 ? "AVX-512" : "AVX2", lims[li]);
                    runs++;
                }
                rlx_tensor_destroy(plain), rlx_tensor_destroy(packed);
                rlx_parallel_set_limit(prev);
            }
            rlx_cpu_sgemm_pack_free(&pk);
            rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(c);
        }
    CHECK(rlx_cpu_sgemm_kernel_set(keep_kernel));
    fprintf(stderr, "one-row products, B as stored against B packed: %d runs\n", runs);
}

int main(void) {
    test_seed(test_seed_from_env());
    fprintf(stderr, "worker threads: %d\n", rlx_parallel_threads());
    test_compare_can_fail();
    test_conv_listed();
    test_conv_random();
    test_conv_depthwise_blocked();
    test_conv_depthwise_rows();
    test_conv_depthwise_flat();
    test_conv_depthwise_subnormal();
    test_conv_pointwise();
    test_conv_pw_phase_rows();
    test_conv_pointwise_rule();
    test_conv_batch_prefetch();
    test_conv_pwt_rule();
    test_conv_pwt_small_planes();
    test_conv_pwt_nonfinite();
    test_conv_implicit_gemm();
    test_conv_winograd();
    test_conv_channels_in_lanes();
    test_conv_mobilenet_v2();
    test_conv_transpose();
    test_conv_transpose_disjoint();
    test_act_epilogue_bits();
    test_pools();
    test_resize_nearest();
    test_gemm_split();
    test_gemm_one_row();
    test_run_items();
    test_dw_splits();
    test_gemm_conv_splits();
    fprintf(stderr, "conv cases: %d (%d depthwise, %d with a residual); %d runs with packed weights\n", g_conv_cases,
            g_conv_depthwise, g_conv_residual, g_packed_runs);
    CHECK(g_packed_runs > 0);
    TEST_MAIN_END();
}
