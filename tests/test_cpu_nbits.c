/* rlx.MatMulNBits on the CPU (src/backend/cpu/cpu_nbits.c): the fast paths
 * (GEMV for up to 8 rows with every kernel this CPU runs: AVX-512F,
 * AVX2 + FMA, portable; dequantized tiles + GEMM beyond 8 rows) against the
 * reference kernel, which sums in double. Random weights (all 16 levels),
 * scales in [0.01, 0.1), zero points (or the default 8), A in [-1, 1); the
 * output poisoned with NaN first. Shapes: block_size 16, 32, 64, 128; K a
 * multiple of the block size and not; N odd; M = 1..9, 12 and 17; f32 and
 * f16 A.
 * Tolerance: |fast - ref| <= 1e-5 * sum_k |a w| + 1e-6 (both sum K f32
 * products; the fast path rounds each partial sum to f32).
 * Also: B of the wrong size fails naming the node. ctest runs it with the
 * default thread count, 1 and 5 threads. */
#include "test.h"
#include "test_node.h"

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "rlx/half.h"

typedef struct nb_case {
    int64_t M, K, N, bs;
    bool zp, f16;
} nb_case;

static rlx_tensor *mk(rlx_dtype dt, int rank, const int64_t *dims) {
    rlx_tensor *t = NULL;
    CHECK_OK(rlx_tensor_create(dt, dims, rank, &t));
    return t;
}

static void poison(rlx_tensor *y) {
    size_t n = rlx_tensor_numel(y);
    for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(y, i, NAN);
}

/* Runs one case with the current kernel; returns the number of bad elements. */
static int run_case(const nb_case *c, const char *kname) {
    int64_t nb = (c->K + c->bs - 1) / c->bs, blob = c->bs / 2, zrow = (nb + 1) / 2;
    rlx_dtype dt = c->f16 ? RLX_DTYPE_F16 : RLX_DTYPE_F32;
    rlx_tensor *a = mk(dt, 2, (int64_t[]){ c->M, c->K });
    rlx_tensor *b = mk(RLX_DTYPE_U8, 3, (int64_t[]){ c->N, nb, blob });
    rlx_tensor *s = mk(RLX_DTYPE_F32, 2, (int64_t[]){ c->N, nb });
    rlx_tensor *z = c->zp ? mk(RLX_DTYPE_U8, 2, (int64_t[]){ c->N, zrow }) : NULL;
    rlx_tensor *yf = mk(dt, 2, (int64_t[]){ c->M, c->N }), *yr = mk(dt, 2, (int64_t[]){ c->M, c->N });
    for (size_t i = 0; i < rlx_tensor_numel(a); i++) rlx_tensor_set_f64(a, i, test_rand_uniform(-1, 1));
    uint8_t *bp = b->data;
    for (size_t i = 0; i < rlx_tensor_numel(b); i++) bp[i] = (uint8_t)(test_rand_u64() & 255);
    float *sp = s->data;
    for (size_t i = 0; i < rlx_tensor_numel(s); i++) sp[i] = test_rand_uniform(0.01f, 0.1f);
    if (z) {
        uint8_t *zp = z->data;
        for (size_t i = 0; i < rlx_tensor_numel(z); i++) zp[i] = (uint8_t)(test_rand_u64() & 255);
    }
    rlx_node_attr at[3] = { { .name = (char *)"K", .type = RLX_ATTR_INT, .i = c->K },
                            { .name = (char *)"N", .type = RLX_ATTR_INT, .i = c->N },
                            { .name = (char *)"block_size", .type = RLX_ATTR_INT, .i = c->bs } };
    rlx_node n = test_make_node_in("rlx", "MatMulNBits", 1, z ? 4 : 3, 1, at, 3);
    const rlx_tensor *in[4] = { a, b, s, z };
    poison(yf);
    poison(yr);
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, &yr, true));
    CHECK_OK(rlx_cpu_run_node(NULL, &n, in, &yf, false));
    /* the bound: sum_k |a w| per output, from the reference's own weights */
    int bad = 0;
    for (int64_t m = 0; m < c->M; m++)
        for (int64_t j = 0; j < c->N; j++) {
            double mag = 0;
            for (int64_t k = 0; k < c->K; k++) {
                int64_t blk = k / c->bs, i = k % c->bs;
                uint8_t byte = bp[(j * nb + blk) * blob + i / 2];
                int q = (i & 1) ? byte >> 4 : byte & 15;
                int zq = 8;
                if (z) {
                    uint8_t zb = ((uint8_t *)z->data)[j * zrow + blk / 2];
                    zq = (blk & 1) ? zb >> 4 : zb & 15;
                }
                mag += fabs(rlx_tensor_get_f64(a, (size_t)(m * c->K + k)) * (q - zq) * sp[j * nb + blk]);
            }
            size_t e = (size_t)(m * c->N + j);
            double f = rlx_tensor_get_f64(yf, e), r = rlx_tensor_get_f64(yr, e);
            double tol = c->f16 ? 1e-3 * fabs(r) + 1e-5 * mag + 1e-6 : 1e-5 * mag + 1e-6;
            if (!(fabs(f - r) <= tol)) {
                if (bad < 3)
                    fprintf(stderr, "%s M=%lld K=%lld N=%lld bs=%lld zp=%d f16=%d: y[%lld,%lld] = %g, reference %g\n",
                            kname, (long long)c->M, (long long)c->K, (long long)c->N, (long long)c->bs, c->zp,
                            c->f16, (long long)m, (long long)j, f, r);
                bad++;
            }
        }
    CHECK_MSG(bad == 0, "%s: %d elements off (M=%lld K=%lld N=%lld bs=%lld)", kname, bad, (long long)c->M,
              (long long)c->K, (long long)c->N, (long long)c->bs);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(z);
    rlx_tensor_destroy(yf);
    rlx_tensor_destroy(yr);
    return bad;
}

int main(void) {
    static const nb_case cases[] = {
        { 1, 64, 7, 32, true, false },    { 1, 48, 9, 16, false, false },   { 2, 200, 33, 64, true, false },
        { 3, 256, 5, 128, false, false }, { 4, 100, 11, 32, true, false },  { 5, 40, 13, 16, true, false },
        { 6, 130, 3, 64, false, false },  { 7, 512, 17, 128, true, false }, { 8, 96, 21, 32, true, false },
        { 9, 80, 65, 16, true, false },   { 12, 300, 70, 128, false, false }, { 17, 64, 129, 32, true, false },
        { 1, 72, 5, 16, true, true },     { 3, 96, 9, 32, false, true },    { 10, 64, 7, 64, true, true },
    };
    rlx_cpu_sgemm_kernel saved = rlx_cpu_sgemm_kernel_get();
    static const struct { rlx_cpu_sgemm_kernel k; const char *name; } kernels[] = {
        { RLX_CPU_SGEMM_AVX512, "avx512" }, { RLX_CPU_SGEMM_AVX2, "avx2" }, { RLX_CPU_SGEMM_PORTABLE, "portable" }
    };
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        if (!rlx_cpu_sgemm_kernel_set(kernels[ki].k)) {
            fprintf(stderr, "kernel %s: not on this CPU\n", kernels[ki].name);
            continue;
        }
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], kernels[ki].name);
    }
    rlx_cpu_sgemm_kernel_set(saved);

    /* B one byte short fails naming the node */
    rlx_tensor *a = mk(RLX_DTYPE_F32, 2, (int64_t[]){ 1, 32 }), *b = mk(RLX_DTYPE_U8, 1, (int64_t[]){ 4 * 16 - 1 });
    rlx_tensor *s = mk(RLX_DTYPE_F32, 1, (int64_t[]){ 4 }), *y = mk(RLX_DTYPE_F32, 2, (int64_t[]){ 1, 4 });
    rlx_node_attr at[3] = { { .name = (char *)"K", .type = RLX_ATTR_INT, .i = 32 },
                            { .name = (char *)"N", .type = RLX_ATTR_INT, .i = 4 },
                            { .name = (char *)"block_size", .type = RLX_ATTR_INT, .i = 32 } };
    rlx_node n = test_make_node_in("rlx", "MatMulNBits", 1, 3, 1, at, 3);
    const rlx_tensor *in[3] = { a, b, s };
    CHECK_FAILS(rlx_cpu_run_node(NULL, &n, in, &y, false), RLX_ERR_INVALID_MODEL, "node0");
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(y);
    TEST_MAIN_END();
}
