/* rlx's CPU int8 GEMM (src/backend/cpu/cpu_qgemm.c) and the MatMulInteger /
 * QLinearMatMul fast paths on it (cpu_quant.c): exact integer results.
 *
 *  - rlx_cpu_qgemm against a plain sum in 64-bit integers reduced modulo
 *    2^32, bit for bit: for every kernel this CPU runs (portable, AVX2,
 *    AVX-512 VNNI, AMX), shapes at and around the 8 x 32 and 32 x 32
 *    tiles, the 4-step k groups and AMX's 64-byte k blocks (ones, primes,
 *    odd sizes) and random ones; A uint8 and int8, B
 *    uint8 and int8; A's zero point 0, random, or the type's extreme; B's
 *    absent, per tensor or per column; B packed beforehand or per call;
 *    int32 output and requantized uint8 / int8 output (the reference's
 *    formula: nearbyint of the double product, plus the zero point,
 *    saturated). Inputs are random over the whole byte range (so extreme
 *    products such as 255 x -128 occur), outputs poisoned first. One case
 *    with K = 40000 at the extremes makes the 32-bit sums wrap.
 *  - MatMulInteger and QLinearMatMul nodes through rlx_cpu_run_node: fast
 *    path (reference = false), with B packed as at compile time
 *    (rlx_cpu_prepare_node, plain B poisoned meanwhile), and the reference
 *    kernel: the same bytes. A of rank 1, 2 and 3.
 *  - QLinearConv (with int32 bias) and ConvInteger through rlx_cpu_run_node
 *    (cpu_quant.c's conv_fast: im2col in 8 bits and the transposed product,
 *    or the direct loop of depthwise groups; under the VNNI and AMX
 *    kernels cpu_qconv.c's convolution and depthwise loop): under every
 *    kernel, each with 1, 2 and 3 threads, and with W packed as at compile
 *    time under every kernel (AMX: its own layout), equal to the reference kernel byte for byte; odd channel counts,
 *    strides, asymmetric pads, dilations, groups (depthwise, multiplier 2,
 *    3 and 4 groups), 1-D, zero points 0 / per tensor / W's per channel,
 *    uint8 and int8 x, W and y, and PP-OCRv4 det's kinds (1x1, 3x3 with
 *    K 864, the stride-2 stem, depthwise 3x3 / 5x5 at stride 1 and 2).
 *  - per-tensor QuantizeLinear / DequantizeLinear's typed loops (see
 *    test_qdq_typed).
 *  - DynamicQuantizeLinear's vector loops and Cast int32 -> float (see
 *    test_dynamic_quantize).
 * ctest also runs this program with 1 and 5 worker threads. */
#include "test.h"
#include "test_node.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_qconv.h"
#include "backend/cpu/cpu_qgemm.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"
#include "base/tensor.h"

static uint32_t rnd(void) { return (uint32_t)(test_rand_u64() >> 16); }

static int32_t val(const void *p, size_t i, bool is_unsigned) {
    return is_unsigned ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

typedef struct qcase {
    size_t m, n, k;
    bool au, bu, yu;
    int za_kind, zb_kind; /* za: 0 zero, 1 random, 2 extreme; zb: 0 absent, 1 per tensor, 2 per column */
    bool packed, requant, extreme;
} qcase;

/* The kernel variants the tests run: each kernel (AMX with its tiles at
 * every k), then AMX as it runs by default (VNNI below k 64): kv in
 * [0, N_KV). */
#define N_KV (RLX_CPU_QGEMM_KERNELS + 1)

static const char *kname(int kv) {
    static const char *names[] = { "portable", "avx2", "vnni", "amx", "amx (k >= 64)" };
    return names[kv];
}

/* Uses variant kv; false when this CPU cannot run it. */
static bool set_kernel(int kv) {
    rlx_cpu_qgemm_amx_min_k_set(kv == RLX_CPU_QGEMM_AMX ? 0 : 64);
    return rlx_cpu_qgemm_kernel_set(kv == N_KV - 1 ? RLX_CPU_QGEMM_AMX : (rlx_cpu_qgemm_kernel)kv);
}

static int run_case(const qcase *q, int kern) {
    size_t m = q->m, n = q->n, k = q->k, lda = k + (q->m % 3), ldb = n + (q->n % 2);
    uint8_t *a = malloc(m * lda + 1), *b = malloc(k * ldb + 1);
    for (size_t i = 0; i < m * lda; i++) a[i] = q->extreme ? (q->au ? 255 : 0x80) : (uint8_t)rnd();
    for (size_t i = 0; i < k * ldb; i++) b[i] = q->extreme ? (q->bu ? 0 : 0x7f) : (uint8_t)rnd();
    int32_t za = q->za_kind == 0 ? 0 : q->za_kind == 2 ? (q->au ? 0 : 127) : val(&(uint8_t){ (uint8_t)rnd() }, 0, q->au);
    int32_t *zb = malloc(n * sizeof *zb);
    for (size_t j = 0; j < n; j++) zb[j] = q->zb_kind == 0 ? 0 : val(&(uint8_t){ (uint8_t)rnd() }, 0, q->bu);
    float *mult = malloc(n * sizeof *mult);
    for (size_t j = 0; j < n; j++) mult[j] = (float)((0.5 + (rnd() % 1000) / 1000.0) / (double)(k * 64));
    double yzp = q->yu ? rnd() % 256 : (double)(int)(rnd() % 256) - 128;
    int32_t *c = malloc(m * n * sizeof *c);
    uint8_t *y = malloc(m * n);
    for (size_t i = 0; i < m * n; i++) c[i] = 0x5a5a5a5a, y[i] = 0xa5;
    rlx_cpu_qgemm_pack pk = { 0 };
    if (q->packed) CHECK_OK(rlx_cpu_qgemm_pack_b(q->bu, k, n, b, ldb, &pk));
    rlx_cpu_qgemm_args g = {
        .m = m, .n = n, .k = k, .a = a, .lda = lda, .a_unsigned = q->au, .za = za,
        .b = q->packed ? NULL : b, .ldb = ldb, .b_unsigned = q->bu, .bp = q->packed ? &pk : NULL,
        .zb = q->zb_kind ? zb : NULL, .zb_per_col = q->zb_kind == 2,
        .c = q->requant ? NULL : c, .y = q->requant ? y : NULL, .y_unsigned = q->yu,
        .mult_per_col = true, .mult = mult, .y_zp = yzp, .ldc = n,
    };
    CHECK(set_kernel(kern));
    CHECK_OK(rlx_cpu_qgemm(&g));
    int bad = 0;
    for (size_t i = 0; i < m && !bad; i++)
        for (size_t j = 0; j < n && !bad; j++) {
            int64_t s = 0;
            int32_t zbj = q->zb_kind == 2 ? zb[j] : zb[0];
            for (size_t kk = 0; kk < k; kk++)
                s += (int64_t)(val(a, i * lda + kk, q->au) - za) * (val(b, kk * ldb + j, q->bu) - zbj);
            uint32_t u = (uint32_t)(uint64_t)s;
            int32_t ref = u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
            if (!q->requant) {
                if (c[i * n + j] != ref) bad = 1;
                CHECK_MSG(!bad, "%s m %zu n %zu k %zu au %d bu %d za %d zb %d packed %d: c[%zu,%zu] = %d, want %d",
                          kname(kern), m, n, k, q->au, q->bu, q->za_kind, q->zb_kind, q->packed, i, j, c[i * n + j],
                          ref);
                continue;
            }
            double r = nearbyint((double)((float)ref * mult[j])) + yzp, lo = q->yu ? 0 : -128, hi = q->yu ? 255 : 127;
            r = r < lo ? lo : r > hi ? hi : r;
            int32_t got = val(y, i * n + j, q->yu);
            if (got != (int32_t)r) bad = 1;
            CHECK_MSG(!bad, "%s requant m %zu n %zu k %zu au %d bu %d yu %d: y[%zu,%zu] = %d, want %d", kname(kern),
                      m, n, k, q->au, q->bu, q->yu, i, j, got, (int)r);
        }
    rlx_cpu_qgemm_pack_free(&pk);
    free(a), free(b), free(zb), free(mult), free(c), free(y);
    return !bad;
}

static void test_gemm(void) {
    static const size_t ms[] = { 1, 2, 7, 8, 9, 16, 17, 31, 33, 65 }, ns[] = { 1, 3, 16, 31, 32, 33, 70 },
                        ks[] = { 1, 3, 4, 5, 8, 31, 64, 65, 259 };
    int n_cases = 0, n_kernels = 0;
    for (int kern = 0; kern < N_KV; kern++) {
        if (!set_kernel(kern)) {
            fprintf(stderr, "qgemm kernel %s: not on this CPU, skipped\n", kname(kern));
            continue;
        }
        n_kernels++;
        unsigned sel = 0;
        for (size_t im = 0; im < sizeof ms / sizeof *ms; im++)
            for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
                for (size_t ik = 0; ik < sizeof ks / sizeof *ks; ik++, sel++) {
                    qcase q = { ms[im], ns[in], ks[ik], sel & 1, (sel >> 1) & 1, (sel >> 2) & 1,
                                (int)(sel % 3), (int)((sel / 3) % 3), (sel / 2) % 2 == 0, sel % 5 == 0, false };
                    if (!run_case(&q, kern)) return;
                    n_cases++;
                }
        for (int r = 0; r < 40; r++) {
            qcase q = { 1 + rnd() % 90, 1 + rnd() % 150, 1 + rnd() % 600, rnd() & 1, rnd() & 1, rnd() & 1,
                        (int)(rnd() % 3), (int)(rnd() % 3), rnd() & 1, rnd() % 3 == 0, false };
            if (!run_case(&q, kern)) return;
            n_cases++;
        }
        for (int au = 0; au < 2; au++) { /* 32-bit wrap-around */
            qcase q = { 3, 35, 40000, au, !au, false, 2, 1, au, false, true };
            if (!run_case(&q, kern)) return;
            n_cases++;
        }
    }
    rlx_cpu_qgemm_amx_min_k_set(64);
    rlx_cpu_qgemm_kernel_choose("auto");
    fprintf(stderr, "qgemm: %d cases over %d kernels\n", n_cases, n_kernels);
    CHECK(n_kernels >= 1);
}

/* ------------------------------------------------------------ nodes */

static rlx_tensor *rand_tensor(rlx_dtype dt, int rank, const int64_t *dims) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++) p[i] = (uint8_t)rnd();
    return t;
}

static rlx_tensor *scalar_f32(float v) {
    rlx_tensor *t = test_tensor(RLX_DTYPE_F32, 0, NULL);
    ((float *)t->data)[0] = v;
    return t;
}

/* Runs node n fast, packed and reference: the same bytes. */
static void node_three_ways(const char *what, const rlx_node *n, const rlx_tensor *const *in, int bi, rlx_dtype ydt,
                            int rank, const int64_t *yd) {
    rlx_tensor *y[3];
    for (int i = 0; i < 3; i++) {
        y[i] = test_tensor(ydt, rank, yd);
        memset(y[i]->data, 0x5a + i, y[i]->nbytes);
    }
    CHECK_MSG(rlx_cpu_run_node(NULL, n, in, &y[0], false) == RLX_OK, "%s fast: %s", what, rlx_last_error());
    CHECK_MSG(rlx_cpu_run_node(NULL, n, in, &y[2], true) == RLX_OK, "%s reference: %s", what, rlx_last_error());
    rlx_cpu_sgemm_pack pk;
    CHECK_OK(rlx_cpu_prepare_node(NULL, n, in, &pk));
    CHECK_MSG(pk.q8 != NULL, "%s: B was not packed", what);
    rlx_tensor *b = (rlx_tensor *)in[bi];
    unsigned char *keep = malloc(b->nbytes);
    memcpy(keep, b->data, b->nbytes);
    memset(b->data, 0x77, b->nbytes);
    CHECK_OK(rlx_cpu_run_node_packed(NULL, n, in, &y[1], &pk));
    memcpy(b->data, keep, b->nbytes);
    free(keep);
    rlx_cpu_sgemm_pack_free(&pk);
    CHECK_MSG(memcmp(y[0]->data, y[2]->data, y[0]->nbytes) == 0, "%s: fast path differs from the reference", what);
    CHECK_MSG(memcmp(y[1]->data, y[2]->data, y[1]->nbytes) == 0, "%s: packed B differs from the reference", what);
    for (int i = 0; i < 3; i++) rlx_tensor_destroy(y[i]);
}

static void test_nodes(void) {
    static const int64_t shapes[][4] = { /* rank of A, A dims */
                                         { 1, 37, 0, 0 }, { 2, 5, 37, 0 }, { 3, 2, 9, 37 } };
    const int64_t K = 37, N = 45;
    int cases = 0;
    for (int s = 0; s < 3; s++)
        for (int ty = 0; ty < 4; ty++) {
            int rank = (int)shapes[s][0];
            const int64_t *ad = &shapes[s][1];
            rlx_dtype at = ty & 1 ? RLX_DTYPE_I8 : RLX_DTYPE_U8, bt = ty & 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            int64_t yd[3];
            for (int i = 0; i < rank - 1; i++) yd[i] = ad[i];
            yd[rank - 1] = N;
            rlx_tensor *a = rand_tensor(at, rank, ad), *b = rand_tensor(bt, 2, (int64_t[]){ K, N });
            rlx_tensor *azp = rand_tensor(at, 0, NULL), *bzp = rand_tensor(bt, 1, (int64_t[]){ N });
            /* MatMulInteger: zero points absent, or A's per tensor and B's per column */
            rlx_node n2 = test_make_node("MatMulInteger", 10, 2, 1, NULL, 0);
            node_three_ways("MatMulInteger", &n2, (const rlx_tensor *[]){ a, b }, 1, RLX_DTYPE_I32, rank, yd);
            rlx_node n4 = test_make_node("MatMulInteger", 10, 4, 1, NULL, 0);
            node_three_ways("MatMulInteger zp", &n4, (const rlx_tensor *[]){ a, b, azp, bzp }, 1, RLX_DTYPE_I32, rank,
                            yd);
            /* QLinearMatMul: b's scale per column, y uint8 or int8 */
            rlx_tensor *as = scalar_f32(0.02f), *ys = scalar_f32(0.37f), *bs = test_tensor(RLX_DTYPE_F32, 1, &N);
            for (int64_t j = 0; j < N; j++) ((float *)bs->data)[j] = 0.001f * (float)(1 + rnd() % 50);
            rlx_dtype yt = ty & 1 ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
            rlx_tensor *yzp = rand_tensor(yt, 0, NULL);
            rlx_node nq = test_make_node("QLinearMatMul", 10, 8, 1, NULL, 0);
            node_three_ways("QLinearMatMul", &nq, (const rlx_tensor *[]){ a, as, azp, b, bs, bzp, ys, yzp }, 3, yt,
                            rank, yd);
            rlx_tensor *t[] = { a, b, azp, bzp, as, ys, bs, yzp };
            for (size_t i = 0; i < sizeof t / sizeof *t; i++) rlx_tensor_destroy(t[i]);
            cases += 3;
        }
    fprintf(stderr, "nodes: %d cases, fast = packed = reference\n", cases);
}

/* ------------------------------------------------------------ convolutions */

typedef struct ccase {
    int64_t n, c, h, w, m, group, kh, kw, sh, sw, ph0, pw0, ph1, pw1, dh, dw;
    bool xu, wu, yu;
    int zkind;        /* 0: zero points 0, 1: random per tensor, 2: random, W's per channel */
    bool rank3;       /* a 1-D convolution (h must be 1, kh 1) */
    int scales;       /* 0: random; 1: multipliers 2^-1 .. 2^-4 (every odd sum a tie of the
                       * requantization), 2: (1 - 2^-46) / 384 (near ties), 3: 1e-40 (subnormal in f32) */
} ccase;

/* One QLinearConv (and ConvInteger) case: the fast path under every kernel
 * this CPU runs, and with W packed as at compile time (plain W poisoned),
 * equal to the reference kernel byte for byte. */
static void conv_case(const ccase *q) {
    int rank = q->rank3 ? 3 : 4, ns = rank - 2;
    int64_t oh = (q->h + q->ph0 + q->ph1 - q->dh * (q->kh - 1) - 1) / q->sh + 1;
    int64_t ow = (q->w + q->pw0 + q->pw1 - q->dw * (q->kw - 1) - 1) / q->sw + 1;
    int64_t xd[4] = { q->n, q->c, q->h, q->w }, wd[4] = { q->m, q->c / q->group, q->kh, q->kw };
    int64_t yd[4] = { q->n, q->m, oh, ow };
    if (q->rank3) xd[2] = q->w, wd[2] = q->kw, yd[2] = ow;
    rlx_dtype xt = q->xu ? RLX_DTYPE_U8 : RLX_DTYPE_I8, wt = q->wu ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
    rlx_dtype yt = q->yu ? RLX_DTYPE_U8 : RLX_DTYPE_I8;
    rlx_tensor *x = rand_tensor(xt, rank, xd), *w = rand_tensor(wt, rank, wd);
    int64_t M = q->m, nz = q->zkind == 2 ? M : 1;
    rlx_tensor *xzp = rand_tensor(xt, 0, NULL), *wzp = rand_tensor(wt, q->zkind == 2 ? 1 : 0, &nz);
    if (q->zkind == 0) memset(xzp->data, 0, 1), memset(wzp->data, 0, (size_t)nz);
    rlx_tensor *ws = test_tensor(RLX_DTYPE_F32, 1, &M), *bias = test_tensor(RLX_DTYPE_I32, 1, &M);
    for (int64_t j = 0; j < M; j++) {
        ((float *)ws->data)[j] = 0.0005f * (float)(1 + rnd() % 40);
        ((int32_t *)bias->data)[j] = (int32_t)(rnd() % 20001) - 10000;
    }
    if (q->scales)
        for (int64_t j = 0; j < M; j++)
            ((float *)ws->data)[j] = q->scales == 1   ? 1.0f / (float)(2 << (j % 4))
                                     : q->scales == 2 ? 0x1p-7f - 0x1p-30f
                                                      : 1e-20f;
    rlx_tensor *xs = scalar_f32(q->scales == 3 ? 1e-20f : q->scales == 2 ? 1.0f + 0x1p-23f : q->scales ? 1.0f : 0.03f);
    /* scales 2: the multiplier (1 + 2^-23)(2^-7 - 2^-30) / 3 is (1 - 2^-46) / 384 in
     * double, so the sums 384k + 192 land just below a tie there; in f32
     * (rlx_quant_mult) it rounds near 1/384 and the f32 products of those sums land
     * on or next to ties */
    rlx_tensor *ys = scalar_f32(q->scales == 2 ? 3.0f : q->scales ? 1.0f : 0.11f), *yzp = rand_tensor(yt, 0, NULL);
    int64_t ks[2] = { q->kh, q->kw }, st[2] = { q->sh, q->sw }, dl[2] = { q->dh, q->dw };
    int64_t pads[4] = { q->ph0, q->pw0, q->ph1, q->pw1 };
    if (q->rank3) ks[0] = q->kw, st[0] = q->sw, dl[0] = q->dw, pads[0] = q->pw0, pads[1] = q->pw1;
    rlx_node_attr at[5];
    CHECK_OK(rlx_node_attr_set_ints(&at[0], "kernel_shape", ks, (size_t)ns));
    CHECK_OK(rlx_node_attr_set_ints(&at[1], "strides", st, (size_t)ns));
    CHECK_OK(rlx_node_attr_set_ints(&at[2], "dilations", dl, (size_t)ns));
    CHECK_OK(rlx_node_attr_set_ints(&at[3], "pads", pads, (size_t)(2 * ns)));
    CHECK_OK(rlx_node_attr_set_int(&at[4], "group", q->group));
    char what[200];
    snprintf(what, sizeof what, "conv n%lld c%lld %lldx%lld m%lld g%lld k%lldx%lld s%lldx%lld p%lld,%lld,%lld,%lld "
             "d%lldx%lld x%s w%s y%s zp%d%s", (long long)q->n, (long long)q->c, (long long)q->h, (long long)q->w,
             (long long)q->m, (long long)q->group, (long long)q->kh, (long long)q->kw, (long long)q->sh,
             (long long)q->sw, (long long)q->ph0, (long long)q->pw0, (long long)q->ph1, (long long)q->pw1,
             (long long)q->dh, (long long)q->dw, q->xu ? "u8" : "i8", q->wu ? "u8" : "i8", q->yu ? "u8" : "i8",
             q->zkind, q->rank3 ? " 1-D" : "");
    for (int op = 0; op < 2; op++) { /* QLinearConv with bias, ConvInteger */
        rlx_node nd = op == 0 ? test_make_node("QLinearConv", 10, 9, 1, at, 5) : test_make_node("ConvInteger", 10, 4, 1, at, 5);
        const rlx_tensor *in9[] = { x, xs, xzp, w, ws, wzp, ys, yzp, bias }, *in4[] = { x, w, xzp, wzp };
        const rlx_tensor *const *in = op == 0 ? in9 : in4;
        rlx_dtype ydt = op == 0 ? yt : RLX_DTYPE_I32;
        rlx_tensor *ref = test_tensor(ydt, rank, yd), *y = test_tensor(ydt, rank, yd);
        memset(ref->data, 0x5a, ref->nbytes);
        CHECK_MSG(rlx_cpu_run_node(NULL, &nd, in, &ref, true) == RLX_OK, "%s reference: %s", what, rlx_last_error());
        rlx_cpu_qgemm_kernel keep = rlx_cpu_qgemm_kernel_get();
        for (int kern = 0; kern < N_KV; kern++) {
            if (!set_kernel(kern)) continue;
            /* VNNI: cpu_qconv.c (im2col fused into the packing, the
             * depthwise vpmaddwd loop); else conv_fast's own paths */
            for (int th = 1; th <= 3; th++) {
                int prev = rlx_parallel_set_limit(th);
                memset(y->data, 0xa5, y->nbytes);
                CHECK_MSG(rlx_cpu_run_node(NULL, &nd, in, &y, false) == RLX_OK, "%s fast: %s", what, rlx_last_error());
                rlx_parallel_set_limit(prev);
                CHECK_MSG(memcmp(y->data, ref->data, y->nbytes) == 0,
                          "%s %s (%s, %d threads): fast path differs from the reference", what,
                          op ? "ConvInteger" : "QLinearConv", kname(kern), th);
            }
        }
        /* packed at compile time under each kernel (AMX: its own layout) */
        for (int kern = 0; kern < N_KV; kern++) {
            if (!set_kernel(kern)) continue;
            rlx_cpu_sgemm_pack pk;
            CHECK_OK(rlx_cpu_prepare_node(NULL, &nd, in, &pk));
            /* W packed for cpu_qconv.c when it runs here and groups have more
             * than one input channel, else for the int8 GEMM when one group */
            bool want_qc = rlx_cpu_qconv_available() && q->c / q->group > 1, want_q8 = !want_qc && q->group == 1;
            CHECK_MSG((pk.q8 != NULL) == want_q8 && (pk.q8conv != NULL) == want_qc,
                      "%s: W packed %d / %d for group %lld", what, pk.q8 != NULL, pk.q8conv != NULL,
                      (long long)q->group);
            if (pk.q8 || pk.q8conv) {
                unsigned char *keepw = malloc(w->nbytes);
                memcpy(keepw, w->data, w->nbytes);
                memset(w->data, 0x77, w->nbytes);
                memset(y->data, 0xa5, y->nbytes);
                CHECK_OK(rlx_cpu_run_node_packed(NULL, &nd, in, &y, &pk));
                memcpy(w->data, keepw, w->nbytes);
                free(keepw);
                CHECK_MSG(memcmp(y->data, ref->data, y->nbytes) == 0, "%s (%s): packed W differs from the reference",
                          what, kname(kern));
            }
            rlx_cpu_sgemm_pack_free(&pk);
        }
        rlx_cpu_qgemm_kernel_set(keep);
        rlx_cpu_qgemm_amx_min_k_set(64);
        rlx_tensor_destroy(ref), rlx_tensor_destroy(y);
    }
    for (int i = 0; i < 5; i++) rlx_node_attr_free(&at[i]);
    rlx_tensor *t[] = { x, w, xzp, wzp, ws, bias, xs, ys, yzp };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) rlx_tensor_destroy(t[i]);
}

static void test_conv(void) {
    static const ccase cases[] = {
        /* n  c  h  w  m  g kh kw sh sw ph0 pw0 ph1 pw1 dh dw xu wu yu z */
        { 1, 3, 9, 11, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 1, false, 0 },
        { 2, 16, 8, 8, 33, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 2, false, 0 },   /* 1x1: x read directly */
        { 1, 7, 13, 10, 17, 1, 3, 3, 2, 2, 1, 1, 0, 1, 1, 1, true, false, false, 2, false, 0 }, /* stride 2, odd pads */
        { 1, 5, 12, 12, 9, 1, 3, 2, 1, 3, 2, 0, 1, 2, 2, 1, false, true, true, 1, false, 0 },   /* dilation, int8 x */
        { 1, 37, 6, 7, 40, 1, 1, 1, 2, 1, 0, 0, 0, 0, 1, 1, true, true, false, 0, false, 0 },   /* 1x1 stride 2 */
        { 1, 6, 9, 9, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },     /* depthwise */
        { 1, 8, 10, 37, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },   /* depthwise stride 2 */
        { 1, 5, 9, 40, 5, 5, 5, 5, 2, 2, 2, 2, 2, 1, 1, 1, false, false, false, 1, false, 0 },  /* 5x5 stride 2, int8 */
        { 1, 4, 6, 45, 4, 4, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, false, true, true, 2, false, 0 },    /* 5x5 wide rows */
        { 2, 4, 11, 8, 8, 4, 5, 3, 2, 1, 2, 1, 2, 1, 1, 2, false, false, false, 1, false, 0 },  /* multiplier 2 */
        { 1, 12, 7, 7, 18, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },   /* 3 groups */
        { 1, 10, 1, 29, 11, 1, 1, 5, 1, 2, 0, 2, 0, 1, 1, 1, true, false, true, 2, true, 0 },   /* 1-D */
        { 1, 3, 20, 23, 50, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, true, false, true, 1, false, 0 },  /* a stem */
        { 1, 64, 16, 16, 96, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 }, /* K 576 */
        /* PP-OCRv4 det's kinds (cpu_qconv.c: blocks of 256 pixels, the padded
         * input's width, runs of a row split between 16 lanes) */
        { 1, 12, 20, 21, 96, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 2, false, 0 },  /* 1x1 12->96 */
        { 1, 5, 45, 45, 9, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, false, 2, false, 0 },   /* 1x1, 8 blocks */
        { 1, 96, 11, 13, 24, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },  /* 3x3 96->24, K 864 */
        { 1, 8, 40, 40, 20, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, true, 1, false, 0 },  /* 3x3, 7 blocks */
        { 1, 3, 33, 33, 16, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },   /* stem, stride 2 */
        { 1, 6, 1, 3, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, true, 1, false, 0 },       /* 3 wide: 4 rows a vector */
        { 1, 9, 12, 14, 10, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, false, false, 2, false, 0 },  /* dilation 2, stride 1 */
        { 1, 32, 9, 9, 32, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },    /* 4 groups of 8 */
        /* pads far beyond the input (the padded planes would be 190x its bytes: the unpadded im2col
         * instead) and a wide dilation (the last row read (kw - 1) * dw past the planes) */
        { 1, 4, 3, 3, 5, 1, 3, 3, 1, 1, 40, 40, 40, 40, 1, 1, true, false, true, 2, false, 0 },
        { 1, 3, 6, 30, 4, 1, 2, 3, 1, 1, 1, 9, 1, 9, 1, 9, true, false, true, 1, false, 0 },
        { 1, 16, 37, 37, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 }, /* dw 3x3, 3 vectors */
        /* AMX's 32 x 32 tiles: K 2 (< 4), 65 (a 1-byte k tail), channel tails of 1 and 3 past 32 */
        { 1, 2, 5, 7, 33, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 2, false, 0 },
        { 1, 130, 6, 6, 70, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, true, false, 1, false, 0 },
        { 1, 48, 21, 21, 48, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 }, /* dw 3x3 stride 2 */
        { 1, 24, 16, 16, 24, 24, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, true, false, true, 2, false, 0 }, /* dw 5x5 */
        { 1, 20, 8, 8, 20, 20, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, false, true, false, 1, false, 0 },  /* dw 5x5 8x8, int8 */
        /* planes of <= 8 columns: two output rows per vector, an odd last row */
        { 1, 12, 7, 7, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 0 },   /* dw 3x3 7x7 */
        { 1, 10, 15, 13, 10, 10, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, true, false, true, 2, false, 0 }, /* dw 5x5 s2 -> 8x7 */
        { 1, 9, 5, 3, 9, 9, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, false, true, false, 1, false, 0 },    /* dw 5x5 5x3, int8 */
        { 1, 6, 1, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 0, false, 0 },     /* dw one row */
        { 1, 7, 9, 19, 14, 7, 5, 4, 2, 2, 2, 1, 2, 2, 1, 1, true, false, true, 2, false, 0 },    /* dw x2, 5x4 stride 2 */
        { 2, 6, 5, 33, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 0, false, 0 },     /* dw 1x1, 2 images */
        /* the requantization at and near ties (the double product, ties to even) */
        { 1, 20, 9, 9, 12, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 2, false, 1 },
        { 1, 8, 24, 24, 32, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, false, 2, false, 2 },
        { 1, 20, 9, 9, 12, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, false, 2, false, 2 },
        { 1, 16, 9, 9, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, true, 2, false, 1 },
        { 1, 16, 30, 30, 32, 16, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, false, false, true, 1, false, 2 },
        { 1, 8, 6, 6, 8, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false, true, 2, false, 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) conv_case(&cases[i]);
    fprintf(stderr, "conv: %zu cases x 2 ops, fast (every kernel) = packed = reference\n",
            sizeof cases / sizeof *cases);
}

/* Per-tensor QuantizeLinear (f32 -> uint8 / int8) and DequantizeLinear
 * (back) as typed loops (cpu_quant.c's q8_typed) against the reference
 * kernel: the same bytes, on values with exact ties of x / scale, NaN,
 * infinities, -0 and values far outside the range mixed in, sizes around the
 * 16-lane vectors and the pool's chunks. */
static void test_qdq_typed(void) {
    static const size_t sizes[] = { 1, 15, 17, 100, 40000 };
    int cases = 0;
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) /* AVX-512 loops, then the scalar ones */
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int ty = 0; ty < 2; ty++) {
            int64_t n = (int64_t)sizes[si];
            rlx_dtype qt = ty ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            float sc = 0.0625f * (float)(1 + rnd() % 5);
            rlx_tensor *x = test_tensor(RLX_DTYPE_F32, 1, &n), *s = scalar_f32(sc), *zp = rand_tensor(qt, 0, NULL);
            float *px = x->data;
            for (int64_t i = 0; i < n; i++) {
                px[i] = ((float)(int)(rnd() % 1200) - 600.0f) * sc * 0.37f;
                if (rnd() % 5 == 0) px[i] = ((float)(int)(rnd() % 600) - 300.0f + 0.5f) * sc; /* ties */
                if (rnd() % 97 == 0) px[i] = rnd() % 2 ? NAN : rnd() % 2 ? INFINITY : -INFINITY;
                if (rnd() % 89 == 0) px[i] = rnd() % 2 ? -0.0f : 3e38f;
            }
            /* test_make_node keeps one node's parameters alive at a time */
            rlx_cpu_isa_cap((rlx_cpu_isa)isa);
            rlx_node nq = test_make_node("QuantizeLinear", 13, 3, 1, NULL, 0);
            rlx_tensor *q[2], *y[2];
            for (int r = 0; r < 2; r++) {
                q[r] = test_tensor(qt, 1, &n), y[r] = test_tensor(RLX_DTYPE_F32, 1, &n);
                memset(q[r]->data, 0x5a + r, q[r]->nbytes), memset(y[r]->data, 0x5a + r, y[r]->nbytes);
                CHECK_OK(rlx_cpu_run_node(NULL, &nq, (const rlx_tensor *[]){ x, s, zp }, &q[r], r == 1));
            }
            rlx_node nd = test_make_node("DequantizeLinear", 13, 3, 1, NULL, 0);
            for (int r = 0; r < 2; r++)
                CHECK_OK(rlx_cpu_run_node(NULL, &nd, (const rlx_tensor *[]){ q[0], s, zp }, &y[r], r == 1));
            CHECK_MSG(memcmp(q[0]->data, q[1]->data, q[0]->nbytes) == 0, "QuantizeLinear n %lld %s: differs from the "
                      "reference", (long long)n, ty ? "int8" : "uint8");
            CHECK_MSG(memcmp(y[0]->data, y[1]->data, y[0]->nbytes) == 0, "DequantizeLinear n %lld %s: differs from "
                      "the reference", (long long)n, ty ? "int8" : "uint8");
            for (int r = 0; r < 2; r++) rlx_tensor_destroy(q[r]), rlx_tensor_destroy(y[r]);
            rlx_tensor_destroy(x), rlx_tensor_destroy(s), rlx_tensor_destroy(zp);
            cases++;
        }
    rlx_cpu_isa_cap(top);
    fprintf(stderr, "QuantizeLinear / DequantizeLinear per tensor: %d cases (each instruction set), typed = reference\n",
            cases);
}

/* DynamicQuantizeLinear's vector loops (cpu_quant.c) against the scalar
 * reference: the same scale, zero point and bytes, on random data with
 * NaN, infinities, -0 and exact ties of x / scale mixed in, sizes around
 * the 16-lane vectors; and Cast int32 -> float (one rounding) against
 * (float)(double)v. */
static void test_dynamic_quantize(void) {
    static const size_t sizes[] = { 1, 15, 16, 17, 100, 1000, 4099 };
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 5; kind++) {
            int64_t n = (int64_t)sizes[si];
            rlx_tensor *x = test_tensor(RLX_DTYPE_F32, 1, &n);
            float *px = x->data;
            float lo = kind == 3 ? 0.5f : -3.0f, hi = kind == 4 ? -0.25f : 5.0f;
            for (int64_t i = 0; i < n; i++) {
                px[i] = lo + (hi - lo) * (float)(rnd() % 100000) / 100000.0f;
                if (kind == 1 && rnd() % 7 == 0) px[i] = (float)(int)(rnd() % 9) * 0.5f * (8.0f / 255.0f); /* ties */
                if (kind == 2 && rnd() % 9 == 0) px[i] = rnd() % 2 ? NAN : -0.0f;
                if (kind == 4 && rnd() % 50 == 0) px[i] = rnd() % 2 ? INFINITY : -INFINITY;
            }
            rlx_node nd = test_make_node("DynamicQuantizeLinear", 11, 1, 3, NULL, 0);
            rlx_tensor *o[2][3];
            for (int r = 0; r < 2; r++) {
                o[r][0] = test_tensor(RLX_DTYPE_U8, 1, &n);
                o[r][1] = test_tensor(RLX_DTYPE_F32, 0, NULL);
                o[r][2] = test_tensor(RLX_DTYPE_U8, 0, NULL);
                memset(o[r][0]->data, 0x5a + r, (size_t)n);
                CHECK_OK(rlx_cpu_run_node(NULL, &nd, (const rlx_tensor *[]){ x }, o[r], r == 1));
            }
            for (int j = 0; j < 3; j++)
                CHECK_MSG(memcmp(o[0][j]->data, o[1][j]->data, o[0][j]->nbytes) == 0,
                          "DynamicQuantizeLinear n %lld kind %d: output %d differs from the reference", (long long)n,
                          kind, j);
            for (int r = 0; r < 2; r++)
                for (int j = 0; j < 3; j++) rlx_tensor_destroy(o[r][j]);
            rlx_tensor_destroy(x);
            cases++;
        }
    int64_t n = 1000;
    rlx_tensor *xi = test_tensor(RLX_DTYPE_I32, 1, &n), *yf = test_tensor(RLX_DTYPE_F32, 1, &n);
    for (int64_t i = 0; i < n; i++) ((int32_t *)xi->data)[i] = (int32_t)(rnd() * 613u + (uint32_t)i);
    rlx_node_attr to = { 0 };
    to.name = (char *)"to";
    to.type = RLX_ATTR_INT;
    to.i = 1; /* FLOAT */
    rlx_node nc = test_make_node("Cast", 13, 1, 1, &to, 1);
    CHECK_OK(rlx_cpu_run_node(NULL, &nc, (const rlx_tensor *[]){ xi }, &yf, false));
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) bad = ((float *)yf->data)[i] != (float)(double)((int32_t *)xi->data)[i];
    CHECK_MSG(!bad, "Cast int32 -> float: not one rounding");
    rlx_tensor_destroy(xi), rlx_tensor_destroy(yf);
    fprintf(stderr, "DynamicQuantizeLinear: %d cases, vector = reference\n", cases);
}

int main(void) {
    test_seed(test_seed_from_env());
    test_gemm();
    test_nodes();
    test_conv();
    test_qdq_typed();
    test_dynamic_quantize();
    TEST_MAIN_END();
}
