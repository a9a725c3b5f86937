/* int8 GEMM: packing, four micro-kernels with the same bits (portable,
 * AVX2, AVX-512 VNNI, AMX), the zero
 * point correction and requantization, the split over the worker pool
 * (see cpu_qgemm.h for the contract and the layout). */
#define _DEFAULT_SOURCE /* syscall (arch_prctl, for AMX) */
#include "backend/cpu/cpu_qgemm.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if RLX_CPU_HAVE_AMX && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend/cpu/cpu_amx.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define QGEMM_HAVE_X86 1
#include <immintrin.h>
#else
#define QGEMM_HAVE_X86 0
#endif

#define MR 8                 /* rows of A per panel and per tile */
#define NR 32                /* columns of B per panel and per tile */
#define PANEL_A (MR * 4)     /* bytes of one k group of an A panel */
#define PANEL_B (NR * 4)     /* bytes of one k group of a B panel */
#define MRA 32               /* rows of A per panel and per tile: the AMX kernel */
#define B_SLACK (16 * PANEL_B) /* zeroed bytes after a B pack (cpu_qgemm.h) */

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

static uint32_t load4(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ------------------------------------------------------------ micro-kernels */

/* Tile [MR, NR] of raw sums sum_k Au[i, k] * Bs[k, j] over k4 groups of
 * packed A (ap) and B (bp), into t (row-major, NR per row). */
typedef void qgemm_kernel_fn(size_t k4, const uint8_t *ap, const int8_t *bp, uint32_t *t);

static void kern_portable(size_t k4, const uint8_t *ap, const int8_t *bp, uint32_t *t) {
    uint32_t acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (size_t p = 0; p < k4; p++, ap += PANEL_A, bp += PANEL_B)
        for (int i = 0; i < MR; i++) {
            const uint8_t *a = ap + i * 4;
            for (int j = 0; j < NR; j++) {
                const int8_t *b = bp + j * 4;
                int s = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]; /* |s| <= 4 * 255 * 128 */
                acc[i][j] += (uint32_t)s;
            }
        }
    memcpy(t, acc, sizeof acc);
}

#if QGEMM_HAVE_X86
/* AVX2: per 4 rows x 8 columns, the bytes widened to 16 bits and
 * multiplied with vpmaddwd (products <= 255 * 128, pair sums fit: exact),
 * two 32-bit partial sums per column (k 0-1 and k 2-3 of each group)
 * added at the end. */
__attribute__((target("avx2"))) static void kern_avx2(size_t k4, const uint8_t *ap0, const int8_t *bp0, uint32_t *t) {
    for (int i0 = 0; i0 < MR; i0 += 4)
        for (int j0 = 0; j0 < NR; j0 += 8) {
            __m256i l0 = _mm256_setzero_si256(), l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0;
            const uint8_t *ap = ap0 + i0 * 4;
            const int8_t *bp = bp0 + j0 * 4;
            for (size_t p = 0; p < k4; p++, ap += PANEL_A, bp += PANEL_B) {
                __m128i bb0 = _mm_loadu_si128((const __m128i *)bp), bb1 = _mm_loadu_si128((const __m128i *)(bp + 16));
                __m256i blo = _mm256_cvtepi8_epi16(bb0), bhi = _mm256_cvtepi8_epi16(bb1), a;
#define AVX2_ROW(i)                                                                   \
    a = _mm256_cvtepu8_epi16(_mm_set1_epi32((int)load4(ap + (i) * 4)));               \
    l##i = _mm256_add_epi32(l##i, _mm256_madd_epi16(a, blo));                         \
    h##i = _mm256_add_epi32(h##i, _mm256_madd_epi16(a, bhi));
                AVX2_ROW(0) AVX2_ROW(1) AVX2_ROW(2) AVX2_ROW(3)
#undef AVX2_ROW
            }
            /* hadd: [c0 c1 c4 c5 | c2 c3 c6 c7]; the 64-bit permute puts them in order */
#define AVX2_STORE(i)                                                                                       \
    _mm256_storeu_si256((__m256i *)(t + (size_t)(i0 + (i)) * NR + j0),                                       \
                        _mm256_permute4x64_epi64(_mm256_hadd_epi32(l##i, h##i), _MM_SHUFFLE(3, 1, 2, 0)));
            AVX2_STORE(0) AVX2_STORE(1) AVX2_STORE(2) AVX2_STORE(3)
#undef AVX2_STORE
        }
}

/* AVX-512 VNNI: 16 accumulators (8 rows x 2 x 16 columns), one vpdpbusd
 * per row and 16 columns per k group (four u8 x s8 products and the sum,
 * wrapping). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void kern_vnni(size_t k4, const uint8_t *ap,
                                                                              const int8_t *bp, uint32_t *t) {
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
            c31 = c00;
    __m512i c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    for (size_t p = 0; p < k4; p++, ap += PANEL_A, bp += PANEL_B) {
        __m512i b0 = _mm512_load_si512((const void *)bp), b1 = _mm512_load_si512((const void *)(bp + 64)), a;
#define VNNI_ROW(i)                                         \
    a = _mm512_set1_epi32((int)load4(ap + (i) * 4));        \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, a, b0);          \
    c##i##1 = _mm512_dpbusd_epi32(c##i##1, a, b1);
        VNNI_ROW(0) VNNI_ROW(1) VNNI_ROW(2) VNNI_ROW(3) VNNI_ROW(4) VNNI_ROW(5) VNNI_ROW(6) VNNI_ROW(7)
#undef VNNI_ROW
    }
#define VNNI_STORE(i)                                                  \
    _mm512_storeu_si512((void *)(t + (i) * NR), c##i##0);              \
    _mm512_storeu_si512((void *)(t + (i) * NR + 16), c##i##1);
    VNNI_STORE(0) VNNI_STORE(1) VNNI_STORE(2) VNNI_STORE(3) VNNI_STORE(4) VNNI_STORE(5) VNNI_STORE(6) VNNI_STORE(7)
#undef VNNI_STORE
}
#endif

#if RLX_CPU_HAVE_AMX
/* Whether this process may use the tile registers: CPUID's AMX-TILE and
 * AMX-INT8 (leaf 7 EDX bits 24, 25), the OS's XCR0 tile bits (17, 18),
 * then Linux's permission (asked once per process; other systems: not
 * used). */
static bool amx_usable(void) {
    static atomic_int state = -1;
    int st = atomic_load(&state);
    if (st >= 0) return st;
    bool ok = false;
#if defined(__linux__)
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7u), "c"(0u));
    bool cpu = ((d >> 24) & 1) && ((d >> 25) & 1);
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1u), "c"(0u));
    if (cpu && ((c >> 27) & 1)) { /* OSXSAVE: xgetbv runs */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
        if (((lo >> 17) & 3) == 3) {
            /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18), then
             * ARCH_GET_XCOMP_PERM (0x1022) to see it granted */
            unsigned long long perm = 0;
            ok = syscall(SYS_arch_prctl, 0x1023, 18) == 0 && syscall(SYS_arch_prctl, 0x1022, &perm) == 0 &&
                 ((perm >> 18) & 1);
        }
    }
#endif
    atomic_store(&state, ok ? 1 : 0);
    return ok;
}
#endif

static atomic_int g_kernel = -1;
static atomic_size_t g_amx_min_k = 64;

static bool cpu_runs(rlx_cpu_qgemm_kernel k) {
    if (k == RLX_CPU_QGEMM_PORTABLE) return true;
#if QGEMM_HAVE_X86
    __builtin_cpu_init();
    if (k == RLX_CPU_QGEMM_AVX2) return __builtin_cpu_supports("avx2");
    if (k == RLX_CPU_QGEMM_VNNI)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
#if RLX_CPU_HAVE_AMX
    /* with VNNI too: the convolution's depthwise loop and fallbacks are AVX-512 */
    if (k == RLX_CPU_QGEMM_AMX) return cpu_runs(RLX_CPU_QGEMM_VNNI) && amx_usable();
#endif
#endif
    return false;
}

static rlx_cpu_qgemm_kernel default_kernel(void) {
    return cpu_runs(RLX_CPU_QGEMM_AMX)    ? RLX_CPU_QGEMM_AMX
           : cpu_runs(RLX_CPU_QGEMM_VNNI) ? RLX_CPU_QGEMM_VNNI
           : cpu_runs(RLX_CPU_QGEMM_AVX2) ? RLX_CPU_QGEMM_AVX2
                                          : RLX_CPU_QGEMM_PORTABLE;
}

rlx_cpu_qgemm_kernel rlx_cpu_qgemm_kernel_get(void) {
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k < 0) {
        k = (int)default_kernel();
        atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    }
    return (rlx_cpu_qgemm_kernel)k;
}

bool rlx_cpu_qgemm_kernel_set(rlx_cpu_qgemm_kernel kernel) {
    if (kernel < RLX_CPU_QGEMM_PORTABLE || kernel >= RLX_CPU_QGEMM_KERNELS || !cpu_runs(kernel)) return false;
    atomic_store_explicit(&g_kernel, (int)kernel, memory_order_relaxed);
    return true;
}

size_t rlx_cpu_qgemm_amx_min_k_set(size_t min_k) { return atomic_exchange(&g_amx_min_k, min_k); }

bool rlx_cpu_qgemm_amx_for(size_t k) {
    return rlx_cpu_qgemm_kernel_get() == RLX_CPU_QGEMM_AMX &&
           k >= atomic_load_explicit(&g_amx_min_k, memory_order_relaxed);
}

/* The kernel a session's option fixed (-1: none yet). cpu.qgemm_kernel is
 * per process: the first session's choice stays, and a later session
 * that names another kernel is refused (as cpu.gemm is), so no session
 * sees the packing of its int8 weights change under it. */
static atomic_int g_fixed = -1;

rlx_status rlx_cpu_qgemm_kernel_choose(const char *name) {
    static const char *const names[RLX_CPU_QGEMM_KERNELS] = { "portable", "avx2", "vnni", "amx" };
    bool is_auto = !name || strcmp(name, "auto") == 0;
    int want = is_auto ? (int)default_kernel() : -1;
    for (int k = 0; !is_auto && k < RLX_CPU_QGEMM_KERNELS; k++)
        if (strcmp(name, names[k]) == 0) want = k;
    if (want < 0)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "cpu.qgemm_kernel=%s: not a kernel (auto, portable, avx2, vnni, amx)",
                        name);
    if (!cpu_runs((rlx_cpu_qgemm_kernel)want))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "cpu.qgemm_kernel=%s: this CPU, OS or build cannot run it", name);
    int fixed = -1;
    if (atomic_compare_exchange_strong(&g_fixed, &fixed, want)) {
        atomic_store_explicit(&g_kernel, want, memory_order_relaxed);
        return RLX_OK;
    }
    if (is_auto || fixed == want) return RLX_OK; /* auto takes the process's kernel */
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                    "cpu.qgemm_kernel=%s: the int8 kernel is per process and already '%s' (by an earlier session or "
                    "RLX_CPU_QGEMM_KERNEL)",
                    name, names[fixed]);
}

static qgemm_kernel_fn *kernel_fn(void) {
#if QGEMM_HAVE_X86
    switch (rlx_cpu_qgemm_kernel_get()) {
    case RLX_CPU_QGEMM_VNNI:
    case RLX_CPU_QGEMM_AMX: return kern_vnni; /* AMX: the tiles go through tiles_amx_body */
    case RLX_CPU_QGEMM_AVX2: return kern_avx2;
    default: break;
    }
#endif
    return kern_portable;
}

/* ------------------------------------------------------------ packing */

/* Byte x of A as the kernels' unsigned value: int8 A shifted by +128. */
static inline uint8_t a_byte(const uint8_t *row, size_t k, bool a_unsigned) {
    return a_unsigned ? row[k] : (uint8_t)(row[k] ^ 0x80u);
}

/* Rows [r0, r0 + MR) of A (those below m; the rest zero) into one panel,
 * their sums into rowsum[r0 ..]. */
static void pack_a_panel(const uint8_t *a, size_t lda, bool a_unsigned, size_t m, size_t k, size_t r0, uint8_t *dst,
                         uint32_t *rowsum) {
    size_t k4 = ceil_div(k, 4);
    memset(dst, 0, k4 * PANEL_A);
    for (size_t i = 0; i < MR; i++) {
        uint32_t s = 0;
        if (r0 + i < m) {
            const uint8_t *row = a + (r0 + i) * lda;
            for (size_t kk = 0; kk < k; kk++) {
                uint8_t v = a_byte(row, kk, a_unsigned);
                dst[(kk / 4) * PANEL_A + i * 4 + kk % 4] = v;
                s += v;
            }
        }
        rowsum[r0 + i] = s;
    }
}

/* Columns [c0, c0 + NR) of B into one panel, their sums into colsum;
 * B[kk, j] at b[kk * sk + j * sn]. */
static void pack_b_panel(const uint8_t *b, size_t sk, size_t sn, bool b_unsigned, size_t n, size_t k, size_t c0,
                         int8_t *dst, int32_t *colsum) {
    size_t k4 = ceil_div(k, 4);
    memset(dst, 0, k4 * PANEL_B);
    int32_t s[NR] = { 0 };
    for (size_t kk = 0; kk < k; kk++) {
        const uint8_t *row = b + kk * sk;
        int8_t *d = dst + (kk / 4) * PANEL_B + kk % 4;
        for (size_t j = 0; j < NR && c0 + j < n; j++) {
            uint8_t raw = row[(c0 + j) * sn];
            int8_t v = (int8_t)(b_unsigned ? (uint8_t)(raw ^ 0x80u) : raw);
            d[j * 4] = v;
            s[j] += v;
        }
    }
    memcpy(colsum + c0, s, sizeof s);
}

static rlx_status pack_b_strided(bool b_unsigned, size_t k, size_t n, const void *b, size_t sk, size_t sn,
                                 rlx_cpu_qgemm_pack *out) {
    memset(out, 0, sizeof *out);
    size_t np = ceil_div(n, NR), k4 = ceil_div(k, 4);
    out->data = rlx_alloc_aligned(np * k4 * PANEL_B + B_SLACK);
    out->colsum = malloc(np * NR * sizeof(int32_t));
    if (!out->data || !out->colsum) {
        rlx_cpu_qgemm_pack_free(out);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory packing a %zu x %zu int8 matrix", k, n);
    }
    memset(out->data + np * k4 * PANEL_B, 0, B_SLACK);
    for (size_t p = 0; p < np; p++)
        pack_b_panel(b, sk, sn, b_unsigned, n, k, p * NR, out->data + p * k4 * PANEL_B, out->colsum);
    out->k = k, out->n = n, out->b_unsigned = b_unsigned;
    return RLX_OK;
}

rlx_status rlx_cpu_qgemm_pack_b(bool b_unsigned, size_t k, size_t n, const void *b, size_t ldb,
                                rlx_cpu_qgemm_pack *out) {
    return pack_b_strided(b_unsigned, k, n, b, ldb, 1, out);
}

rlx_status rlx_cpu_qgemm_pack_bt(bool b_unsigned, size_t k, size_t n, const void *b, size_t ldb,
                                 rlx_cpu_qgemm_pack *out) {
    return pack_b_strided(b_unsigned, k, n, b, 1, ldb, out);
}

void rlx_cpu_qgemm_pack_free(rlx_cpu_qgemm_pack *pack) {
    if (!pack) return;
    rlx_free_aligned(pack->data);
    free(pack->colsum);
    memset(pack, 0, sizeof *pack);
}

/* ------------------------------------------------------------ the product */

typedef struct qg_job {
    const rlx_cpu_qgemm_args *g;
    const rlx_cpu_qgemm_pack *bp;
    qgemm_kernel_fn *kern;
    uint8_t *apack;
    uint32_t *rowsum;
    const uint32_t *cterm, *zbe; /* per column: K za' zb' - za' colsum; zb' */
    size_t k4, n_rp;    /* n_rp: row panels of MR (of MRA under AMX) */
    bool amx;           /* AMX: A packed in panels of MRA rows of kpad bytes */
    size_t kpad;
    double lo, hi;
    bool avx2; /* store_tile's AVX2 requantization (not under the portable kernel: tests cover both) */
} qg_job;

/* Panels [p0, p1) of an A given transposed ([k, m], a_trans): k outer, so
 * each of A's rows is read once, contiguously, for all the panels (a
 * column walk of a convolution's [K, P] im2col would read one byte per
 * row of P bytes, often a multiple of 4 KiB apart: the same cache set). */
static void pack_at_panels(const qg_job *j, size_t p0, size_t p1) {
    const rlx_cpu_qgemm_args *g = j->g;
    const uint8_t *a = g->a;
    const uint8_t flip = g->a_unsigned ? 0 : 0x80u;
    const size_t pstride = j->k4 * PANEL_A, rb = p0 * MR, r1 = p1 * MR < g->m ? p1 * MR : g->m;
    uint8_t *restrict ap = j->apack;
    uint32_t *restrict rs = j->rowsum;
    memset(ap + p0 * pstride, 0, (p1 - p0) * pstride);
    memset(rs + rb, 0, (p1 - p0) * MR * sizeof(uint32_t));
    size_t kv = 0, rv = rb; /* [0, kv) x [rb, rv) go four rows by 16 columns at a time */
#if defined(__SSE2__)
    kv = g->k / 4 * 4;
    rv = rb + (r1 - rb) / 16 * 16;
    const __m128i vf = _mm_set1_epi8((char)flip);
    for (size_t kk = 0; kk < kv; kk += 4) {
        const uint8_t *s0 = a + kk * g->lda, *s1 = s0 + g->lda, *s2 = s1 + g->lda, *s3 = s2 + g->lda;
        for (size_t r = rb; r < rv; r += 16) {
            __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s0 + r)), vf);
            __m128i x1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s1 + r)), vf);
            __m128i x2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s2 + r)), vf);
            __m128i x3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s3 + r)), vf);
            __m128i l01 = _mm_unpacklo_epi8(x0, x1), l23 = _mm_unpacklo_epi8(x2, x3);
            __m128i h01 = _mm_unpackhi_epi8(x0, x1), h23 = _mm_unpackhi_epi8(x2, x3);
            uint8_t *d = ap + (r / MR) * pstride + (kk / 4) * PANEL_A; /* rows r .. r + 7, then the next panel */
            _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(l01, l23));
            _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(l01, l23));
            _mm_storeu_si128((__m128i *)(d + pstride), _mm_unpacklo_epi16(h01, h23));
            _mm_storeu_si128((__m128i *)(d + pstride + 16), _mm_unpackhi_epi16(h01, h23));
            /* the four rows' bytes summed per column in 16 bits (<= 1020), added to rowsum */
            const __m128i z = _mm_setzero_si128();
            __m128i slo = _mm_add_epi16(_mm_add_epi16(_mm_unpacklo_epi8(x0, z), _mm_unpacklo_epi8(x1, z)),
                                        _mm_add_epi16(_mm_unpacklo_epi8(x2, z), _mm_unpacklo_epi8(x3, z)));
            __m128i shi = _mm_add_epi16(_mm_add_epi16(_mm_unpackhi_epi8(x0, z), _mm_unpackhi_epi8(x1, z)),
                                        _mm_add_epi16(_mm_unpackhi_epi8(x2, z), _mm_unpackhi_epi8(x3, z)));
            __m128i *q = (__m128i *)(rs + r);
            _mm_storeu_si128(q, _mm_add_epi32(_mm_loadu_si128(q), _mm_unpacklo_epi16(slo, z)));
            _mm_storeu_si128(q + 1, _mm_add_epi32(_mm_loadu_si128(q + 1), _mm_unpackhi_epi16(slo, z)));
            _mm_storeu_si128(q + 2, _mm_add_epi32(_mm_loadu_si128(q + 2), _mm_unpacklo_epi16(shi, z)));
            _mm_storeu_si128(q + 3, _mm_add_epi32(_mm_loadu_si128(q + 3), _mm_unpackhi_epi16(shi, z)));
        }
    }
#endif
    for (size_t kk = 0; kk < g->k; kk++) {
        const uint8_t *restrict src = a + kk * g->lda;
        uint8_t *d = ap + (kk / 4) * PANEL_A + kk % 4;
        for (size_t r = kk < kv ? rv : rb; r < r1; r++) {
            uint8_t v = (uint8_t)(src[r] ^ flip);
            d[(r / MR) * pstride + (r % MR) * 4] = v;
            rs[r] += v;
        }
    }
}

/* Panels [p0, p1) of A for the AMX kernel: rows of kpad bytes (zero
 * padded; rows past m zero), MRA rows a panel, and their sums. */
static void pack_a_amx(const qg_job *j, size_t p0, size_t p1) {
    const rlx_cpu_qgemm_args *g = j->g;
    const uint8_t *a = g->a;
    const uint8_t flip = g->a_unsigned ? 0 : 0x80u;
    const size_t kp = j->kpad, k = g->k;
    uint8_t *ap = j->apack + p0 * MRA * kp;
    memset(ap, 0, (p1 - p0) * MRA * kp);
    memset(j->rowsum + p0 * MRA, 0, (p1 - p0) * MRA * sizeof(uint32_t));
    size_t r1 = p1 * MRA < g->m ? p1 * MRA : g->m;
    if (g->a_trans) { /* A[i, kk] at a[kk * lda + i]: k outer, rows read contiguously */
        for (size_t kk = 0; kk < k; kk++) {
            const uint8_t *src = a + kk * g->lda;
            for (size_t r = p0 * MRA; r < r1; r++) {
                uint8_t v = (uint8_t)(src[r] ^ flip);
                j->apack[r * kp + kk] = v;
                j->rowsum[r] += v;
            }
        }
        return;
    }
    for (size_t r = p0 * MRA; r < r1; r++) {
        const uint8_t *src = a + r * g->lda;
        uint8_t *d = j->apack + r * kp;
        uint32_t s = 0;
        for (size_t kk = 0; kk < k; kk++) {
            uint8_t v = (uint8_t)(src[kk] ^ flip);
            d[kk] = v;
            s += v;
        }
        j->rowsum[r] = s;
    }
}

static void pack_a_body(void *ctx, size_t p0, size_t p1) {
    const qg_job *j = ctx;
    const rlx_cpu_qgemm_args *g = j->g;
    if (j->amx) {
        pack_a_amx(j, p0, p1);
        return;
    }
    if (g->a_trans) {
        pack_at_panels(j, p0, p1);
        return;
    }
    for (size_t p = p0; p < p1; p++)
        pack_a_panel(g->a, g->lda, g->a_unsigned, g->m, g->k, p * MR, j->apack + p * j->k4 * PANEL_A, j->rowsum);
}

#if QGEMM_HAVE_X86
/* store_tile's requantization of 8 sums (one column of a tile) in AVX2, the
 * same bits as the scalar formula: the f32 product rounded half to even
 * (vroundps), NaN -> 0, zero point added, saturated, then narrowed
 * exactly. The sum with the zero point is in f32: exact below 2^24, and
 * larger values saturate either way. */
__attribute__((target("avx2"))) static void requant8_avx2(const int32_t *v, float mult, double zy, double lo,
                                                          double hi, int32_t *out) {
    __m256 vm = _mm256_set1_ps(mult), vz = _mm256_set1_ps((float)zy), vlo = _mm256_set1_ps((float)lo),
           vhi = _mm256_set1_ps((float)hi);
    __m256 d = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v)), vm);
    d = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d = _mm256_and_ps(d, _mm256_cmp_ps(d, d, _CMP_ORD_Q)); /* NaN -> 0 */
    d = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(d, vz), vlo), vhi);
    _mm256_storeu_si256((__m256i *)out, _mm256_cvtps_epi32(d));
}
#endif

/* The tile's sums corrected for the zero points, stored as int32 or
 * requantized (rows [i0, i0 + mr), columns [j0, j0 + nr)). */
static void store_tile(const qg_job *j, const uint32_t *t, size_t i0, size_t j0, size_t mr, size_t nr) {
    const rlx_cpu_qgemm_args *g = j->g;
    /* element [i, jj] of the tile goes to ci * i + cj * jj from the tile's corner */
    size_t ci = g->c_trans ? 1 : g->ldc, cj = g->c_trans ? g->ldc : 1;
    size_t corner = i0 * ci + j0 * cj;
    if (g->y && g->c_trans) { /* column by column: the rows of one column are contiguous */
        for (size_t jj = 0; jj < nr; jj++) {
            uint32_t ct = j->cterm[j0 + jj], zb = j->zbe[j0 + jj];
            float mult = g->mult[g->mult_per_col ? j0 + jj : 0];
            size_t yi = corner + jj * cj;
#if QGEMM_HAVE_X86
            if (j->avx2) {
                int32_t v[MR], q[MR];
                for (size_t i = 0; i < MR; i++) v[i] = rlx_cpu_wrap32(t[i * NR + jj] + ct - zb * j->rowsum[i0 + i]);
                requant8_avx2(v, mult, g->y_zp, j->lo, j->hi, q);
                for (size_t i = 0; i < mr; i++) {
                    if (g->y_unsigned) ((uint8_t *)g->y)[yi + i] = (uint8_t)q[i];
                    else ((int8_t *)g->y)[yi + i] = (int8_t)q[i];
                }
                continue;
            }
#endif
            for (size_t i = 0; i < mr; i++) {
                int32_t v = rlx_cpu_wrap32(t[i * NR + jj] + ct - zb * j->rowsum[i0 + i]);
                rlx_cpu_requant_store(v, mult, g->y_zp, j->lo, j->hi, g->y_unsigned, g->y, yi + i);
            }
        }
        return;
    }
    for (size_t i = 0; i < mr; i++) {
        uint32_t rs = j->rowsum[i0 + i];
        const uint32_t *ti = t + i * NR, *ct = j->cterm + j0, *zb = j->zbe + j0;
        if (!g->y) {
            int32_t *c = g->c + corner + i * ci;
            for (size_t jj = 0; jj < nr; jj++) c[jj * cj] = rlx_cpu_wrap32(ti[jj] + ct[jj] - zb[jj] * rs);
            continue;
        }
        for (size_t jj = 0; jj < nr; jj++) {
            int32_t v = rlx_cpu_wrap32(ti[jj] + ct[jj] - zb[jj] * rs);
            rlx_cpu_requant_store(v, g->mult[g->mult_per_col ? j0 + jj : 0], g->y_zp, j->lo, j->hi, g->y_unsigned,
                                  g->y, corner + i * ci + jj * cj);
        }
    }
}

/* Tiles [t0, t1): tile t is column panel t / n_rp, row panel t % n_rp
 * (consecutive tiles share B's panel). */
static void tiles_body(void *ctx, size_t t0, size_t t1) {
    const qg_job *j = ctx;
    const rlx_cpu_qgemm_args *g = j->g;
    uint32_t tile[MR * NR];
    for (size_t t = t0; t < t1; t++) {
        size_t cp = t / j->n_rp, rp = t % j->n_rp;
        j->kern(j->k4, j->apack + rp * j->k4 * PANEL_A, j->bp->data + cp * j->k4 * PANEL_B, tile);
        size_t i0 = rp * MR, c0 = cp * NR;
        store_tile(j, tile, i0, c0, g->m - i0 < MR ? g->m - i0 : MR, g->n - c0 < NR ? g->n - c0 : NR);
    }
}

#if RLX_CPU_HAVE_AMX
/* Tiles [t0, t1) of MRA x NR under AMX (as tiles_body). */
static void tiles_amx_body(void *ctx, size_t t0, size_t t1) {
    const qg_job *j = ctx;
    const rlx_cpu_qgemm_args *g = j->g;
    uint32_t tile[MRA * NR];
    rlx_cpu_amx_begin();
    for (size_t t = t0; t < t1; t++) {
        size_t cp = t / j->n_rp, rp = t % j->n_rp, i0 = rp * MRA, c0 = cp * NR;
        size_t mr = g->m - i0 < MRA ? g->m - i0 : MRA, nr = g->n - c0 < NR ? g->n - c0 : NR;
        rlx_cpu_amx_tile(j->kpad / 64, j->apack + rp * MRA * j->kpad, j->kpad, j->bp->data + cp * j->k4 * PANEL_B,
                         mr > 16, nr > 16, tile);
        for (size_t q = 0; q * MR < mr; q++)
            store_tile(j, tile + q * MR * NR, i0 + q * MR, c0, mr - q * MR < MR ? mr - q * MR : MR, nr);
    }
    rlx_cpu_amx_end();
}
#endif

rlx_status rlx_cpu_qgemm(const rlx_cpu_qgemm_args *g) {
    qg_job j = { .g = g, .kern = kernel_fn(), .k4 = ceil_div(g->k, 4), .n_rp = ceil_div(g->m, MR) };
#if RLX_CPU_HAVE_AMX
    if (rlx_cpu_qgemm_amx_for(g->k))
        j.amx = true, j.kpad = ceil_div(g->k, 64) * 64, j.n_rp = ceil_div(g->m, MRA);
#endif
    const size_t rows = j.amx ? MRA : MR, a_panel = j.amx ? MRA * j.kpad : j.k4 * PANEL_A;
    rlx_cpu_qgemm_pack own = { 0 };
    j.bp = g->bp;
    if (!j.bp || j.bp->k != g->k || j.bp->n != g->n || j.bp->b_unsigned != g->b_unsigned) {
        RLX_TRY(g->b_trans ? rlx_cpu_qgemm_pack_bt(g->b_unsigned, g->k, g->n, g->b, g->ldb, &own)
                           : rlx_cpu_qgemm_pack_b(g->b_unsigned, g->k, g->n, g->b, g->ldb, &own));
        j.bp = &own;
    }
    size_t np = ceil_div(g->n, NR);
    /* packed A, its row sums and the per-column terms in one buffer: the
     * calling thread's scratch (no allocation in steady runs) when it fits */
    size_t a_bytes = (j.n_rp * a_panel + 63) / 64 * 64, rs_bytes = (j.n_rp * rows * sizeof(uint32_t) + 63) / 64 * 64;
    size_t total = a_bytes + rs_bytes + 2 * np * NR * sizeof(uint32_t);
    uint8_t *buf = rlx_scratch_get(RLX_SCRATCH_SGEMM, total), *owned = NULL;
    if (!buf) buf = owned = malloc(total);
    if (!buf) {
        rlx_cpu_qgemm_pack_free(&own);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory for an int8 %zu x %zu x %zu product", g->m, g->n, g->k);
    }
    j.apack = buf;
    j.rowsum = (uint32_t *)(buf + a_bytes);
    uint32_t *cols = (uint32_t *)(buf + a_bytes + rs_bytes);
    /* zero points in the kernels' terms (see the header) */
    uint32_t za = (uint32_t)g->za + (g->a_unsigned ? 0u : 128u), K = (uint32_t)g->k;
    uint32_t *cterm = cols, *zbe = cols + np * NR;
    for (size_t c = 0; c < np * NR; c++) {
        int32_t zb = c < g->n && g->zb ? g->zb[g->zb_per_col ? c : 0] : 0;
        zbe[c] = (uint32_t)zb - (g->b_unsigned ? 128u : 0u);
        cterm[c] = K * za * zbe[c] - za * (uint32_t)j.bp->colsum[c] + (c < g->n && g->bias ? (uint32_t)g->bias[c] : 0u);
    }
    j.cterm = cterm, j.zbe = zbe;
    j.lo = g->y_unsigned ? 0 : -128, j.hi = g->y_unsigned ? 255 : 127;
#if QGEMM_HAVE_X86
    j.avx2 = j.kern != kern_portable && __builtin_cpu_supports("avx2");
#endif
    /* about 256 K multiply-adds per task at least */
    size_t per_panel = rows * j.k4 * 4;
    rlx_parallel_for(j.n_rp, ceil_div(1u << 16, per_panel), pack_a_body, &j);
    size_t per_tile = rows * NR * j.k4 * 4;
    void (*body)(void *, size_t, size_t) = tiles_body;
#if RLX_CPU_HAVE_AMX
    if (j.amx) body = tiles_amx_body;
#endif
    rlx_parallel_for(j.n_rp * np, ceil_div(1u << 18, per_tile), body, &j);
    free(owned);
    rlx_cpu_qgemm_pack_free(&own);
    return RLX_OK;
}
