/* int8 GEMM for the CPU backend (MatMulInteger, QLinearMatMul).
 *
 * The arithmetic contract: C[m, n] = sum_k (A[m, k] - za) * (B[k, n] -
 * zb[n]) in 32-bit integers, wrapping modulo 2^32 (the ONNX spec allows
 * "overflow only in 32 bits"; the reference kernel, cpu_quant.c, wraps the
 * same way), so every result is bit-exact against the reference whatever
 * the kernel, split or thread count. A is uint8 or int8, B uint8 or int8.
 *
 * How: the kernels multiply unsigned bytes of A by signed bytes of B
 * (x86's vpdpbusd): an int8 A is stored as A + 128 (u8) and a uint8 B as
 * B - 128 (s8), and the zero points move by the same amounts; then
 *   sum (Au - za')(Bs - zb') = sum Au Bs - zb' * rowsum(Au) - za' * colsum(Bs)
 *                             + K za' zb',
 * an identity of integers, so it holds modulo 2^32 too. The sums of Au per
 * row and of Bs per column come with the packing.
 *
 * Layout: B packed in panels of 32 columns (zero-padded), each panel
 * ceil(K / 4) groups of 32 x 4 bytes (column j's four k values together,
 * what one 32-bit lane of vpdpbusd takes); A packed likewise in panels of
 * 8 rows. The layout does not depend on the kernel, so a pack made at
 * compile time serves any kernel.
 *
 * Kernels, picked once by what the CPU runs (__builtin_cpu_supports, which
 * also checks that the OS saves the registers): AMX (below), AVX-512 VNNI
 * (vpdpbusd, 8 x 32 tile), AVX2 (bytes widened to 16 bits, vpmaddwd: no
 * saturation, unlike vpmaddubsw whose 16-bit pair sums of u8 x s8 can
 * overflow), and portable C. All give the same bits.
 *
 * AMX (TDPBUSD, the same u8 x s8 products and wrapping sums, on 16 x 64-byte
 * tiles): C in tiles of 32 x 32 (four 16 x 16 int32 accumulators), A packed
 * per call in panels of 32 rows of ceil(k / 64) * 64 bytes (row-major, zero
 * padded: TILELOADD reads 16 rows of 64 bytes at a stride), B the same pack
 * as above: its k groups of 32 x 4 bytes are two B tiles' rows (columns
 * 0-15 and 16-31, stride 128 bytes), 16 groups per tile. A k tail reads up
 * to 15 groups past a panel (the next panel, or the pack's zeroed slack)
 * against A's zero bytes: it adds exactly 0. Linux gives a process the
 * tile registers only after arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA); the first check asks once, and without the CPUID
 * bits (AMX-TILE, AMX-INT8 and AVX-512 VNNI), the OS's XCR0 bits or that
 * permission (refused e.g. when the process has a sigaltstack too small
 * for the tile state), AMX is not offered (VNNI runs instead; no tile
 * instruction ever runs). Each task loads the tile configuration
 * (ldtilecfg, per thread) and releases it at its end. Products of k < 64
 * run the VNNI kernel under AMX too (rlx_cpu_qgemm_amx_min_k_set). */
#ifndef RLX_BACKEND_CPU_CPU_QGEMM_H
#define RLX_BACKEND_CPU_CPU_QGEMM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* op(B) [k, n] packed (see above): data holds ceil(n / 32) panels of
 * ceil(k / 4) * 128 bytes (B - 128 when B was uint8) and 2 KiB of zeros
 * (the AMX kernel's k tail reads into them), colsum the n column
 * sums of those stored values. */
typedef struct rlx_cpu_qgemm_pack {
    int8_t *data;    /* owned, 64-byte aligned */
    int32_t *colsum; /* owned, n (rounded up to 32) entries */
    size_t k, n;
    bool b_unsigned; /* B was uint8: its values are stored minus 128 */
} rlx_cpu_qgemm_pack;

/* Packs B [k, n] (row-major, leading dimension ldb >= n) of uint8 (b_unsigned)
 * or int8 values. k, n >= 1. errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_qgemm_pack_b(bool b_unsigned, size_t k, size_t n, const void *b, size_t ldb,
                                rlx_cpu_qgemm_pack *out);

/* Like rlx_cpu_qgemm_pack_b, B given transposed: B[kk, j] at b[j * ldb + kk]
 * (ldb >= k; a convolution's weights [n, k] as they are stored).
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_qgemm_pack_bt(bool b_unsigned, size_t k, size_t n, const void *b, size_t ldb,
                                 rlx_cpu_qgemm_pack *out);

/* Frees a pack's memory and clears it (NULL or an empty pack: nothing). */
void rlx_cpu_qgemm_pack_free(rlx_cpu_qgemm_pack *pack);

/* One product. za: A's zero point (per tensor); zb: B's, per tensor
 * (zb_per_col false: zb[0]) or one per column (zb[n]); NULL: 0. Output:
 * either c (int32, leading dimension ldc) or, when y is set, requantized
 * to y (uint8 when y_unsigned, else int8; leading dimension ldc) as
 *   y = saturate(nearbyint((float)c * mult[n or 0], the product in f32) + y_zp)
 * (mult per column when mult_per_col; rlx_quant_mult's rule, onnxruntime's
 * bits, ties to even).
 * bias (int32 per column, or NULL) is added to the sums (wrapping) before
 * either. Transposed operands, for convolutions (cpu_quant.c): a_trans: A
 * given as [k, m], A[i, kk] at a[kk * lda + i]; b_trans: B given as [n, k]
 * (as rlx_cpu_qgemm_pack_bt); c_trans: C (or y) stored as [n, m], element
 * [i, j] at j * ldc + i. */
typedef struct rlx_cpu_qgemm_args {
    size_t m, n, k;
    const void *a;
    size_t lda;
    bool a_unsigned, a_trans;
    int32_t za;
    const void *b; /* used when bp is NULL (packed per call) */
    size_t ldb;
    bool b_unsigned, b_trans;
    const rlx_cpu_qgemm_pack *bp; /* B packed (k and n must match), or NULL */
    const int32_t *zb;
    bool zb_per_col;
    int32_t *c;
    void *y;
    bool y_unsigned, mult_per_col;
    const float *mult; /* f32: see rlx_quant_mult (ir/ops/quant_params.h) */
    double y_zp;
    size_t ldc;
    bool c_trans;
    const int32_t *bias;
} rlx_cpu_qgemm_args;

/* Runs one product over the worker pool (base/parallel.h); m, n, k >= 1.
 * errors: RLX_ERR_OUT_OF_MEMORY (the packed A, and B when not given packed). */
rlx_status rlx_cpu_qgemm(const rlx_cpu_qgemm_args *args);

/* The int32 whose bits are u: the wrapping (modulo 2^32) sums of the int8
 * kernels (cpu_qgemm.c, cpu_quant.c) as signed results, without the
 * implementation-defined conversion of an out-of-range value. */
static inline int32_t rlx_cpu_wrap32(uint32_t u) {
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* nearbyint(x) under the default rounding mode (to nearest, ties to even),
 * without the libm call: below 2^51 in magnitude, adding and subtracting
 * 1.5 * 2^52 rounds x to an integer in one IEEE addition; larger values,
 * infinities and NaN go to nearbyint. The requantization of the int8
 * kernels (cpu_qgemm.c, cpu_quant.c) uses it. */
static inline double rlx_cpu_round_even(double x) {
    if (x > -2251799813685248.0 && x < 2251799813685248.0) {
        double t = x + 6755399441055744.0; /* two IEEE roundings (rlx builds without -ffast-math) */
        return t - 6755399441055744.0;
    }
    return nearbyint(x);
}

/* The requantization of the int8 kernels' scalar paths (cpu_qgemm.c,
 * cpu_quant.c; rlx_quant_mult's rule): the f32 product (float)v * mult
 * rounded half to even (rounding the f32 value in double is exact),
 * NaN -> 0, zero point zp added, saturated to [lo, hi], stored at y[i]
 * as uint8 (y_unsigned) or int8. */
static inline void rlx_cpu_requant_store(int32_t v, float mult, double zp, double lo, double hi, bool y_unsigned,
                                         void *y, size_t i) {
    float p = (float)v * mult;
    double r = rlx_cpu_round_even((double)p);
    if (r != r) r = 0;
    r += zp;
    r = r < lo ? lo : r > hi ? hi : r;
    if (y_unsigned) ((uint8_t *)y)[i] = (uint8_t)r;
    else ((int8_t *)y)[i] = (int8_t)r;
}

/* The micro-kernels (see above). */
typedef enum rlx_cpu_qgemm_kernel {
    RLX_CPU_QGEMM_PORTABLE = 0,
    RLX_CPU_QGEMM_AVX2 = 1,
    RLX_CPU_QGEMM_VNNI = 2, /* AVX-512 VNNI */
    RLX_CPU_QGEMM_AMX = 3   /* AMX-INT8 (TDPBUSD) */
} rlx_cpu_qgemm_kernel;

#define RLX_CPU_QGEMM_KERNELS 4 /* kernels 0 .. RLX_CPU_QGEMM_KERNELS - 1 */

/* Whether this build has the AMX kernel: x86-64 with GCC >= 11 or clang
 * >= 12 (their AMX intrinsics); elsewhere RLX_CPU_QGEMM_AMX is never
 * offered. */
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 12) || \
                            (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define RLX_CPU_HAVE_AMX 1
#else
#define RLX_CPU_HAVE_AMX 0
#endif

/* The kernel in use: the first call picks AMX where the CPU and OS run it
 * (see above: this first call is what asks Linux for the tile state),
 * else VNNI where the CPU has AVX-512F, BW and VNNI, else AVX2, else the
 * portable one. AMX measured 1.3 to 4x VNNI's GEMM speed at k >= 64 and
 * as fast or faster on PP-OCRv4 det's convolutions (BENCHMARKS.md). */
rlx_cpu_qgemm_kernel rlx_cpu_qgemm_kernel_get(void);

/* Uses `kernel` from now on (process-wide; for tests, not while products
 * run). False, and no change, when this CPU or build cannot run it. */
bool rlx_cpu_qgemm_kernel_set(rlx_cpu_qgemm_kernel kernel);

/* Under RLX_CPU_QGEMM_AMX, products (and convolutions) of k below this
 * run the VNNI kernel instead (AMX's 64-byte k blocks would be mostly
 * padding; measured slower at k 12 and 27, equal near 32 to 48, faster
 * from 64 on: BENCHMARKS.md). Default 64; 0: AMX at every k (tests).
 * Process-wide, not while products run; returns the previous value. The
 * convolution's weights are packed for one or the other (cpu_qconv.h). */
size_t rlx_cpu_qgemm_amx_min_k_set(size_t min_k);

/* Whether a product or convolution of this k runs AMX tiles: the kernel in
 * use is RLX_CPU_QGEMM_AMX and k >= the threshold above. */
bool rlx_cpu_qgemm_amx_for(size_t k);

/* The option cpu.qgemm_kernel: "auto" (the first pick of
 * rlx_cpu_qgemm_kernel_get), "portable", "avx2", "vnni" or "amx". Per
 * process: the first call fixes the kernel; a later call with "auto" or
 * the same kernel keeps it, one naming another kernel fails (nothing
 * changes). errors: RLX_ERR_UNSUPPORTED when this CPU, OS or build cannot
 * run the kernel named, RLX_ERR_INVALID_ARGUMENT for another name or a
 * kernel other than the one an earlier call fixed. */
rlx_status rlx_cpu_qgemm_kernel_choose(const char *name);

#endif
