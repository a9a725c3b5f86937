/* int8 convolution on AVX-512 VNNI: weight packing, the fused im2col and
 * activation packing per pixel block, the 8 x 32 vpdpbusd tile and its
 * vectorised zero-point correction and requantization (see cpu_qconv.h
 * for the contract and the layout). */
#include "backend/cpu/cpu_qconv.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_amx.h"
#include "backend/cpu/cpu_qgemm.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define QCONV_HAVE_X86 1
#include <immintrin.h>
#else
#define QCONV_HAVE_X86 0
#endif

#define TM 8      /* output channels per tile */
#define TMA 32    /* output channels per tile under AMX */
#define TP 32     /* pixels per tile */
#define NBMAX 256 /* pixels per block at most */

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

rlx_status rlx_cpu_qconv_pack_w(bool w_unsigned, size_t groups, size_t cout_g, size_t k, const void *w,
                                rlx_cpu_qconv_pack *out) {
    memset(out, 0, sizeof *out);
    bool amx = rlx_cpu_qgemm_amx_for(k);
    /* a panel: TM rows by k4 groups of 4 bytes, or (AMX) TMA rows of kpad bytes */
    size_t k4 = ceil_div(k, 4), kpad = ceil_div(k, 64) * 64, rows = amx ? TMA : TM;
    size_t mt = ceil_div(cout_g, rows), bytes = groups * mt * (amx ? TMA * kpad : k4 * TM * 4);
    out->data = rlx_alloc_aligned(bytes);
    out->wsum = malloc(groups * cout_g * sizeof(int32_t));
    if (!out->data || !out->wsum) {
        rlx_cpu_qconv_pack_free(out);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory packing int8 convolution weights (%zu x %zu)",
                        groups * cout_g, k);
    }
    memset(out->data, 0, bytes);
    const uint8_t *src = w, flip = w_unsigned ? 0 : 0x80u;
    for (size_t g = 0; g < groups; g++)
        for (size_t m = 0; m < cout_g; m++) {
            const uint8_t *row = src + (g * cout_g + m) * k;
            uint8_t *d = amx ? out->data + (g * mt * TMA + m) * kpad
                             : out->data + ((g * mt + m / TM) * k4) * TM * 4 + (m % TM) * 4;
            int32_t s = 0;
            for (size_t kk = 0; kk < k; kk++) {
                uint8_t v = (uint8_t)(row[kk] ^ flip);
                d[amx ? kk : (kk / 4) * TM * 4 + kk % 4] = v;
                s += v;
            }
            out->wsum[g * cout_g + m] = s;
        }
    out->groups = groups, out->cout_g = cout_g, out->k = k, out->w_unsigned = w_unsigned, out->amx = amx;
    return RLX_OK;
}

void rlx_cpu_qconv_pack_free(rlx_cpu_qconv_pack *pack) {
    if (!pack) return;
    rlx_free_aligned(pack->data);
    free(pack->wsum);
    memset(pack, 0, sizeof *pack);
}

bool rlx_cpu_qconv_available(void) {
#if QCONV_HAVE_X86
    rlx_cpu_qgemm_kernel k = rlx_cpu_qgemm_kernel_get();
    return k == RLX_CPU_QGEMM_VNNI || k == RLX_CPU_QGEMM_AMX;
#else
    return false;
#endif
}

#if QCONV_HAVE_X86

/* One group of one image. */
typedef struct qc_job {
    const rlx_cpu_qconv_args *a;
    const uint8_t *x;          /* the group's first input channel */
    const uint8_t *w;          /* the group's first weight tile */
    const uint32_t *rc, *zwq;  /* per output channel of the group: the row constant, zw' */
    const float *mult;         /* the group's multipliers, or NULL (int32 output) */
    uint8_t *y;                /* the group's first output channel */
    /* pixels: P of them, output row by output row of wp each (wp > ow: the
     * padded input's width, columns [ow, wp) computed and dropped) */
    size_t K, k4, P, wp, nb, n_blocks, mt, mt_per_task, n_mchunks;
    bool amx;                  /* the weights in AMX panels (TMA rows of kpad bytes) */
    size_t tm, kpad;           /* output channels per tile: TM, or TMA under AMX */
    const uint8_t *xpad;       /* stride 1: x padded to [cin_g, hp, wp], else NULL */
    size_t hp;
    bool direct;               /* 1x1, stride 1, no padding: im2col row r is x's channel r */
    uint8_t flip, pad;         /* x's bytes to signed (xor); the padding byte (zx as stored) */
    double lo, hi;
    atomic_int failed;
} qc_job;

/* n <= 64 bytes from src to d, or (src NULL) n bytes of `fill` (masked
 * AVX-512 moves: no byte outside [0, n) is touched on either side). */
__attribute__((target("avx512f,avx512bw"))) static inline void move64(uint8_t *d, const uint8_t *src, size_t n,
                                                                       uint8_t fill) {
    __mmask64 k = n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    __m512i v = src ? _mm512_maskz_loadu_epi8(k, src) : _mm512_set1_epi8((char)fill);
    _mm512_mask_storeu_epi8(d, k, v);
}

__attribute__((target("avx512f,avx512bw"))) static void move_n(uint8_t *d, const uint8_t *src, size_t n, uint8_t fill) {
    for (size_t i = 0; i < n; i += 64) move64(d + i, src ? src + i : NULL, n - i, fill);
}

/* Pixels [p0, p0 + n) of im2col row r (ci, ky, kx) into d, as stored in x
 * (padding taps: zx's byte), one output row's run at a time. */
__attribute__((target("avx512f,avx512bw"))) static void im2col_seg(const qc_job *j, size_t r, size_t p0, size_t n,
                                                                    uint8_t *d) {
    const rlx_cpu_qconv_args *a = j->a;
    int64_t kx = (int64_t)r % a->kw, ky = (int64_t)r / a->kw % a->kh, ci = (int64_t)r / (a->kw * a->kh);
    const uint8_t *xc = j->x + (size_t)(ci * a->ih * a->iw);
    /* the output columns whose input column lies inside: [ox0, ox1) */
    int64_t off = kx * a->dw - a->pw;
    int64_t ox0 = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
    int64_t ox1 = a->iw - 1 - off < 0 ? 0 : (a->iw - 1 - off) / a->sw + 1;
    if (ox1 > a->ow) ox1 = a->ow;
    if (ox0 > ox1) ox0 = ox1;
    int64_t oy = (int64_t)(p0 / (size_t)a->ow), s = (int64_t)(p0 % (size_t)a->ow), left = (int64_t)n;
    uint8_t *dd = d - s; /* dd[ox] for ox in [s, e) of output row oy */
    for (; left > 0; oy++, dd += a->ow) {
        int64_t e = s + left < a->ow ? s + left : a->ow;
        int64_t iy = oy * a->sh + ky * a->dh - a->ph;
        if (iy < 0 || iy >= a->ih) {
            move_n(dd + s, NULL, (size_t)(e - s), j->pad);
        } else {
            const uint8_t *src = xc + iy * a->iw + off;
            int64_t b0 = s > ox0 ? s : ox0, b1 = e < ox1 ? e : ox1;
            if (b1 < b0) b1 = b0 = e;
            if (b0 > s) move_n(dd + s, NULL, (size_t)(b0 - s), j->pad);
            if (a->sw == 1) move_n(dd + b0, src + b0, (size_t)(b1 - b0), 0);
            else
                for (int64_t ox = b0; ox < b1; ox++) dd[ox] = src[ox * a->sw];
            if (e > b1) move_n(dd + b1, NULL, (size_t)(e - b1), j->pad);
        }
        left -= e - s;
        s = 0;
    }
}

/* Pixels [p0, p0 + nb) of all K rows packed into xp: per 32 pixels,
 * k4 groups of 32 x 4 signed bytes (pixels past nb and k past K zero),
 * and their column sums into colsum. tmp: 4 rows of NBMAX bytes; padrow:
 * NBMAX bytes of `flip` (k past K: 0 once flipped). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void pack_block(const qc_job *j, size_t p0,
                                                                               size_t nb, uint8_t *xp,
                                                                               int32_t *colsum, uint8_t *tmp,
                                                                               const uint8_t *padrow) {
    size_t nbp = ceil_div(nb, TP) * TP, k4 = j->k4;
    memset(colsum, 0, nbp * sizeof *colsum);
    const __m128i vf = _mm_set1_epi8((char)j->flip);
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t kq = 0; kq < k4; kq++) {
        const uint8_t *rows[4];
        for (size_t t = 0; t < 4; t++) {
            size_t r = kq * 4 + t;
            if (r >= j->K) {
                rows[t] = padrow;
            } else if (j->direct) {
                rows[t] = j->x + r * j->P + p0;
            } else if (j->xpad) { /* row (ci, ky, kx) of the padded input, shifted */
                const rlx_cpu_qconv_args *a = j->a;
                size_t kx = r % (size_t)a->kw, ky = r / (size_t)a->kw % (size_t)a->kh, ci = r / (size_t)(a->kw * a->kh);
                rows[t] = j->xpad + (ci * j->hp + ky * (size_t)a->dh) * j->wp + kx * (size_t)a->dw + p0;
            } else {
                im2col_seg(j, r, p0, nb, tmp + t * NBMAX);
                rows[t] = tmp + t * NBMAX;
            }
        }
        size_t i = 0;
        for (; i + 16 <= nb; i += 16) {
            __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(rows[0] + i)), vf);
            __m128i x1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(rows[1] + i)), vf);
            __m128i x2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(rows[2] + i)), vf);
            __m128i x3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(rows[3] + i)), vf);
            __m128i l01 = _mm_unpacklo_epi8(x0, x1), l23 = _mm_unpacklo_epi8(x2, x3);
            __m128i h01 = _mm_unpackhi_epi8(x0, x1), h23 = _mm_unpackhi_epi8(x2, x3);
            __m512i v = _mm512_castsi128_si512(_mm_unpacklo_epi16(l01, l23));
            v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(l01, l23), 1);
            v = _mm512_inserti32x4(v, _mm_unpacklo_epi16(h01, h23), 2);
            v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(h01, h23), 3);
            _mm512_store_si512((void *)(xp + ((i / TP) * k4 + kq) * TP * 4 + (i % TP) * 4), v);
            __m512i *cs = (__m512i *)(colsum + i);
            _mm512_storeu_si512(cs, _mm512_dpbusd_epi32(_mm512_loadu_si512(cs), ones, v));
        }
        for (; i < nbp; i++) {
            uint8_t *d = xp + ((i / TP) * k4 + kq) * TP * 4 + (i % TP) * 4;
            int32_t s = 0;
            for (size_t t = 0; t < 4; t++) {
                uint8_t v = i < nb ? (uint8_t)(rows[t][i] ^ j->flip) : 0;
                d[t] = v;
                s += (int8_t)v;
            }
            colsum[i] += s;
        }
    }
}

/* 16 sums requantized as rlx_cpu_requant_store: the f32 product rounded
 * half to even, NaN -> 0, zero point added (in f32: exact below 2^24,
 * larger values saturate either way), saturated to [lo, hi]; the result
 * integral and in range, so the conversion is exact. */
__attribute__((target("avx512f"))) static inline __m512i requant16(__m512i v, float mult, double zy, double lo,
                                                                   double hi) {
    __m512 vm = _mm512_set1_ps(mult), vzy = _mm512_set1_ps((float)zy), vlo = _mm512_set1_ps((float)lo),
           vhi = _mm512_set1_ps((float)hi);
    __m512 d = _mm512_mul_ps(_mm512_cvtepi32_ps(v), vm);
    d = _mm512_roundscale_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, d, _CMP_ORD_Q), d);
    d = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(d, vzy), vlo), vhi);
    return _mm512_cvtps_epi32(d);
}

/* Where a strip of pixels [p, p + np) (np <= TP) goes, the same for every
 * tile of output channels: per 16 lanes h, the runs of outputs inside a
 * row, lanes [l, l + len) to output pixels [dst, dst + len) (mask: those
 * lanes); columns [ow, wp) of the padded width are dropped. */
typedef struct qc_runs {
    size_t np;
    int n[2];
    size_t dst[2][17], l[2][17], len[2][17];
    __mmask16 mask[2][17];
} qc_runs;

static void strip_runs(const qc_job *j, size_t p, size_t np, qc_runs *r) {
    const size_t ow = (size_t)j->a->ow;
    r->np = np;
    r->n[0] = r->n[1] = 0;
    for (size_t h = 0; h < 2 && h * 16 < np; h++) {
        size_t nv = np - h * 16 < 16 ? np - h * 16 : 16, pp = p + h * 16;
        if (j->wp == ow) {
            r->dst[h][0] = pp, r->l[h][0] = 0, r->len[h][0] = nv, r->mask[h][0] = (__mmask16)((1u << nv) - 1u);
            r->n[h] = 1;
            continue;
        }
        for (size_t l = 0; l < nv;) {
            size_t oy = (pp + l) / j->wp, ox = (pp + l) % j->wp, run = j->wp - ox < nv - l ? j->wp - ox : nv - l;
            size_t valid = ox >= ow ? 0 : ow - ox < run ? ow - ox : run;
            if (valid) {
                int i = r->n[h]++;
                r->dst[h][i] = oy * ow + ox, r->l[h][i] = l, r->len[h][i] = valid;
                r->mask[h][i] = (__mmask16)(((1u << valid) - 1u) << l);
            }
            l += run;
        }
    }
}

/* The sums of output channels [m0, m0 + mr) by the strip of pixels ru
 * (acc[2 i + h]: channel m0 + i, the strip's pixels 16 h ..), corrected
 * with the column sums cs and stored or requantized. Always inlined: in
 * tile the accumulators stay in registers. */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void tile_store(
    const qc_job *j, const __m512i *acc, const int32_t *cs, size_t m0, size_t mr, const qc_runs *ru) {
    const __m512i cs0 = _mm512_loadu_si512((const void *)cs), cs1 = _mm512_loadu_si512((const void *)(cs + 16));
    const size_t ysp = (size_t)(j->a->oh * j->a->ow), np = ru->np;
    for (size_t i = 0; i < mr; i++) {
        size_t m = m0 + i;
        __m512i vrc = _mm512_set1_epi32((int)j->rc[m]), vzw = _mm512_set1_epi32((int)j->zwq[m]);
        for (size_t h = 0; h < 2 && h * 16 < np; h++) {
            __m512i v = _mm512_sub_epi32(_mm512_add_epi32(acc[2 * i + h], vrc),
                                         _mm512_mullo_epi32(vzw, h ? cs1 : cs0));
            if (!j->mult) {
                for (int r = 0; r < ru->n[h]; r++)
                    _mm512_mask_storeu_epi32((int32_t *)(void *)j->y + m * ysp + ru->dst[h][r],
                                             (__mmask16)((1u << ru->len[h][r]) - 1u),
                                             ru->l[h][r] ? _mm512_maskz_compress_epi32(ru->mask[h][r], v) : v);
                continue;
            }
            __m512i qv = requant16(v, j->mult[m], j->a->zy, j->lo, j->hi); /* the narrowing keeps the byte */
            for (int r = 0; r < ru->n[h]; r++) {
                __m512i qr = ru->l[h][r] ? _mm512_maskz_compress_epi32(ru->mask[h][r], qv) : qv;
                _mm512_mask_storeu_epi8(j->y + m * ysp + ru->dst[h][r], (__mmask64)((1u << ru->len[h][r]) - 1u),
                                        _mm512_castsi128_si512(_mm512_cvtepi32_epi8(qr)));
            }
        }
    }
}

/* Output channels [m0, m0 + mr) (mr <= TM; weights wt, one tile) by the
 * strip of pixels ru (packed xs, their column sums cs): the vpdpbusd
 * sums, corrected and stored or requantized. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void tile(const qc_job *j, const uint8_t *wt,
                                                                         const uint8_t *xs, const int32_t *cs,
                                                                         size_t m0, size_t mr, const qc_runs *ru) {
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
            c31 = c00;
    __m512i c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    for (size_t q = 0; q < j->k4; q++, wt += TM * 4, xs += TP * 4) {
        __m512i b0 = _mm512_load_si512((const void *)xs), b1 = _mm512_load_si512((const void *)(xs + 64)), a;
        uint32_t w4[TM];
        memcpy(w4, wt, sizeof w4);
#define QC_ROW(i)                                    \
    a = _mm512_set1_epi32((int)w4[i]);               \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, a, b0);   \
    c##i##1 = _mm512_dpbusd_epi32(c##i##1, a, b1);
        QC_ROW(0) QC_ROW(1) QC_ROW(2) QC_ROW(3) QC_ROW(4) QC_ROW(5) QC_ROW(6) QC_ROW(7)
#undef QC_ROW
    }
    const __m512i acc[2 * TM] = { c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71 };
    tile_store(j, acc, cs, m0, mr, ru);
}

#if RLX_CPU_HAVE_AMX
/* As tile, under AMX: mr <= TMA channels (weights wt: TMA rows of kpad
 * bytes) by the strip ru (at most TP pixels). The k tail's B tile reads up to 15 groups
 * of 128 bytes past the strip (the next strip, or the buffers after xp in
 * the task's scratch) against the weights' zero padding: it adds 0. */
_Static_assert(NBMAX * sizeof(int32_t) + 5 * NBMAX >= 16 * TP * 4, "AMX k tail: the scratch after xp too short");
__attribute__((target("avx512f,avx512bw,avx512vnni,amx-tile,amx-int8"))) static void tile_amx(
    const qc_job *j, const uint8_t *wt, const uint8_t *xs, const int32_t *cs, size_t m0, size_t mr,
    const qc_runs *ru) {
    __m512i acc[2 * TMA];
    rlx_cpu_amx_tile(j->kpad / 64, wt, j->kpad, (const int8_t *)xs, mr > 16, ru->np > 16, (uint32_t *)(void *)acc);
    tile_store(j, acc, cs, m0, mr, ru);
}
#endif

/* Channels [c0, c1) of the group's input padded into xpad [cin_g, hp, wp]
 * (the padding: zx's byte). */
static void pad_body(void *ctx, size_t c0, size_t c1) {
    const qc_job *j = ctx;
    const rlx_cpu_qconv_args *a = j->a;
    uint8_t *xpad = (uint8_t *)(uintptr_t)j->xpad;
    size_t iw = (size_t)a->iw, pw = (size_t)a->pw < j->wp ? (size_t)a->pw : j->wp;
    size_t ncopy = iw < j->wp - pw ? iw : j->wp - pw;
    for (size_t c = c0; c < c1; c++)
        for (size_t py = 0; py < j->hp; py++) {
            uint8_t *d = xpad + (c * j->hp + py) * j->wp;
            int64_t iy = (int64_t)py - a->ph;
            if (iy < 0 || iy >= a->ih) {
                memset(d, j->pad, j->wp);
                continue;
            }
            memset(d, j->pad, pw);
            memcpy(d + pw, j->x + (c * (size_t)a->ih + (size_t)iy) * iw, ncopy);
            memset(d + pw + ncopy, j->pad, j->wp - pw - ncopy);
        }
}

/* Tasks [t0, t1): task t is pixel block t / n_mchunks, output channel
 * tiles chunk t % n_mchunks (a block is packed once for its run of tasks). */
static void task_body(void *ctx, size_t t0, size_t t1) {
    qc_job *j = ctx;
    size_t xp_bytes = j->k4 * NBMAX * 4;
    uint8_t *buf = rlx_scratch_get(RLX_SCRATCH_TASK, xp_bytes + NBMAX * sizeof(int32_t) + 5 * NBMAX);
    if (!buf) {
        atomic_store(&j->failed, 1);
        return;
    }
    uint8_t *xp = buf, *tmp = buf + xp_bytes + NBMAX * sizeof(int32_t), *padrow = tmp + 4 * NBMAX;
    int32_t *colsum = (int32_t *)(void *)(buf + xp_bytes);
    memset(padrow, j->flip, NBMAX);
#if RLX_CPU_HAVE_AMX
    if (j->amx) rlx_cpu_amx_begin();
#endif
    size_t cur = (size_t)-1, nb = 0, p0 = 0;
    for (size_t t = t0; t < t1; t++) {
        size_t blk = t / j->n_mchunks, mc = t % j->n_mchunks;
        if (blk != cur) {
            p0 = blk * j->nb;
            nb = j->P - p0 < j->nb ? j->P - p0 : j->nb;
            pack_block(j, p0, nb, xp, colsum, tmp, padrow);
            cur = blk;
        }
        size_t tb = mc * j->mt_per_task, te = tb + j->mt_per_task < j->mt ? tb + j->mt_per_task : j->mt;
        size_t cout_g = j->a->cout_g;
        for (size_t s = 0; s * TP < nb; s++) {
            const uint8_t *xs = xp + s * j->k4 * TP * 4;
            qc_runs ru;
            strip_runs(j, p0 + s * TP, nb - s * TP < TP ? nb - s * TP : TP, &ru);
            for (size_t ti = tb; ti < te; ti++) {
                size_t m0 = ti * j->tm, mr = cout_g - m0 < j->tm ? cout_g - m0 : j->tm;
#if RLX_CPU_HAVE_AMX
                if (j->amx) {
                    tile_amx(j, j->w + ti * TMA * j->kpad, xs, colsum + s * TP, m0, mr, &ru);
                    continue;
                }
#endif
                tile(j, j->w + ti * j->k4 * TM * 4, xs, colsum + s * TP, m0, mr, &ru);
            }
        }
    }
#if RLX_CPU_HAVE_AMX
    if (j->amx) rlx_cpu_amx_end();
#endif
}
#endif

rlx_status rlx_cpu_qconv(const rlx_cpu_qconv_args *a) {
#if QCONV_HAVE_X86
    const rlx_cpu_qconv_pack *wp = a->wp;
    size_t K = a->cin_g * (size_t)(a->kh * a->kw), P = (size_t)(a->oh * a->ow), M = a->groups * a->cout_g;
    if (!wp || wp->groups != a->groups || wp->cout_g != a->cout_g || wp->k != K)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "int8 convolution: weights packed for another shape");
    qc_job j = { .a = a, .K = K, .k4 = ceil_div(K, 4), .P = P, .amx = wp->amx, .tm = wp->amx ? TMA : TM,
                 .kpad = ceil_div(K, 64) * 64, .flip = a->x_unsigned ? 0x80u : 0, .pad = (uint8_t)a->zx };
#if !RLX_CPU_HAVE_AMX
    if (j.amx) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "int8 convolution: weights packed for AMX");
#endif
    j.mt = ceil_div(a->cout_g, j.tm);
    j.direct = a->kh == 1 && a->kw == 1 && a->sh == 1 && a->sw == 1 && a->ph == 0 && a->pw == 0 &&
               a->oh == a->ih && a->ow == a->iw;
    j.lo = a->y_unsigned ? 0 : -128, j.hi = a->y_unsigned ? 255 : 127;
    /* stride 1 (not direct): the pixels run over the padded input's width,
     * so im2col row (ci, ky, kx) is the padded plane read from ky * dh *
     * wp + kx * dw on, with nothing copied (cpu_qconv.h) */
    bool padded = !j.direct && a->sh == 1 && a->sw == 1;
    j.wp = (size_t)a->ow, j.hp = (size_t)a->oh;
    size_t plane_bytes = 0, pad_bytes = 0;
    if (padded) {
        j.wp = (size_t)(a->ow + (a->kw - 1) * a->dw), j.hp = (size_t)(a->oh + (a->kh - 1) * a->dh);
        j.P = (size_t)a->oh * j.wp;
        /* the last row (ci, kh - 1, kw - 1) is read (kw - 1) * dw bytes past
         * the planes (into columns the output drops): zeroed slack. Pads and
         * dilations far beyond the input (planes over 4x its bytes, or sizes
         * that overflow) take the unpadded im2col instead. */
        size_t in_bytes = a->cin_g * (size_t)(a->ih * a->iw), hw;
        if (!rlx_mul_ok(j.hp, j.wp, &hw) || !rlx_mul_ok(hw, a->cin_g, &plane_bytes) ||
            plane_bytes > 4 * in_bytes + 4096) {
            padded = false;
            j.wp = (size_t)a->ow, j.hp = (size_t)a->oh, j.P = P, plane_bytes = 0;
        } else {
            pad_bytes = (plane_bytes + (size_t)((a->kw - 1) * a->dw) + 64 + 63) / 64 * 64;
        }
    }
    /* per output channel: the row constant bias - zx' wsum + K zw' zx' and
     * zw' (cpu_qconv.h); then the padded input */
    size_t call_bytes = pad_bytes + 2 * M * sizeof(uint32_t);
    uint8_t *cbuf = rlx_scratch_get(RLX_SCRATCH_CALL, call_bytes), *owned = NULL;
    if (!cbuf) cbuf = owned = malloc(call_bytes);
    if (!cbuf) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory for an int8 convolution");
    if (padded) {
        j.xpad = cbuf;
        memset(cbuf + plane_bytes, 0, pad_bytes - plane_bytes);
    }
    uint32_t *rc = (uint32_t *)(void *)(cbuf + pad_bytes);
    uint32_t *zwq = rc + M, zxq = (uint32_t)a->zx - (a->x_unsigned ? 128u : 0u);
    for (size_t m = 0; m < M; m++) {
        zwq[m] = (uint32_t)a->zw[m] + (wp->w_unsigned ? 0u : 128u);
        rc[m] = (a->bias ? (uint32_t)a->bias[m] : 0u) - zxq * (uint32_t)wp->wsum[m] + (uint32_t)K * zwq[m] * zxq;
    }
    /* blocks of at most NBMAX pixels whose packed bytes stay near 256 KiB (L2) */
    size_t nb = (262144 / (j.k4 * 4)) / TP * TP;
    nb = nb < TP ? TP : nb > NBMAX ? NBMAX : nb;
    j.nb = nb < ceil_div(j.P, TP) * TP ? nb : ceil_div(j.P, TP) * TP;
    j.n_blocks = ceil_div(j.P, j.nb);
    size_t threads = (size_t)rlx_parallel_threads();
    j.n_mchunks = 1;
    if (threads > 1 && j.n_blocks < 2 * threads) j.n_mchunks = ceil_div(2 * threads, j.n_blocks);
    if (j.n_mchunks > j.mt) j.n_mchunks = j.mt;
    j.mt_per_task = ceil_div(j.mt, j.n_mchunks);
    j.n_mchunks = ceil_div(j.mt, j.mt_per_task);
    size_t macs = j.nb * K * j.mt_per_task * j.tm, grain = macs >= (1u << 17) ? 1 : ceil_div(1u << 17, macs);
    size_t ysz = a->mult ? 1 : 4;
    for (size_t gi = 0; gi < a->groups; gi++) {
        j.x = (const uint8_t *)a->x + gi * a->cin_g * (size_t)(a->ih * a->iw);
        j.w = wp->data + gi * j.mt * (j.amx ? TMA * j.kpad : j.k4 * TM * 4);
        j.rc = rc + gi * a->cout_g, j.zwq = zwq + gi * a->cout_g;
        j.mult = a->mult ? a->mult + gi * a->cout_g : NULL;
        j.y = (uint8_t *)a->y + gi * a->cout_g * P * ysz;
        if (padded) rlx_parallel_for(a->cin_g, ceil_div(1u << 15, j.hp * j.wp), pad_body, &j);
        rlx_parallel_for(j.n_blocks * j.n_mchunks, grain, task_body, &j);
    }
    free(owned);
    if (atomic_load(&j.failed))
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory for an int8 convolution's packed block");
    return RLX_OK;
#else
    (void)a;
    return rlx_fail(RLX_ERR_UNSUPPORTED, "int8 convolution: this build has no AVX-512 VNNI kernel");
#endif
}

#if QCONV_HAVE_X86
/* Depthwise (rlx_cpu_qdw): one image. */
typedef struct qdw_job {
    const rlx_cpu_qconv_args *a;
    size_t ow_v;      /* ow rounded up to 16 */
    size_t hp, w16;   /* the padded int16 plane [hp, w16] */
    size_t wpr;       /* stride 1: the pair plane's width (dwords) */
    size_t scratch;   /* bytes per task */
    double lo, hi;
    atomic_int failed;
} qdw_job;

/* Planes of at most 8 output columns: two output rows per vector (lanes
 * [0, 8) row oy, [8, 16) row oy + 1; the odd last row in both halves, its
 * second copy not stored), the same sums per output as the loop by rows. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qdw_rows2(const qdw_job *j, size_t m,
                                                                           const int16_t *r16, const uint32_t *pr,
                                                                           const __m512i *wp, __m512i vb) {
    const rlx_cpu_qconv_args *a = j->a;
    const size_t kh = (size_t)a->kh, npair = ((size_t)a->kw + 1) / 2, oh = (size_t)a->oh, ow = (size_t)a->ow;
    const size_t P = oh * ow, step = a->sh == 1 ? 2 : 1;
    const __mmask8 k8 = (__mmask8)((1u << ow) - 1u);
    for (size_t oy = 0; oy < oh; oy += 2) {
        size_t oy2 = oy + 1 < oh ? oy + 1 : oy;
        __m512i acc = vb;
        for (size_t ky = 0; ky < kh; ky++) {
            size_t py0 = oy * (size_t)a->sh + ky, py1 = oy2 * (size_t)a->sh + ky;
            const uint32_t *row0 = a->sh == 1 ? pr + py0 * j->wpr : (const uint32_t *)(const void *)(r16 + py0 * j->w16);
            const uint32_t *row1 = a->sh == 1 ? pr + py1 * j->wpr : (const uint32_t *)(const void *)(r16 + py1 * j->w16);
            for (size_t q = 0; q < npair; q++) {
                __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(row0 + q * step))),
                                               _mm256_loadu_si256((const __m256i *)(row1 + q * step)), 1);
                acc = _mm512_add_epi32(acc, _mm512_madd_epi16(v, wp[ky * npair + q]));
            }
        }
        size_t y0 = m * P + oy * ow, y1 = m * P + oy2 * ow;
        if (!a->mult) {
            _mm256_mask_storeu_epi32((int32_t *)a->y + y0, k8, _mm512_castsi512_si256(acc));
            if (oy2 != oy) _mm256_mask_storeu_epi32((int32_t *)a->y + y1, k8, _mm512_extracti64x4_epi64(acc, 1));
            continue;
        }
        __m128i b = _mm512_cvtepi32_epi8(requant16(acc, a->mult[m], a->zy, j->lo, j->hi));
        _mm_mask_storeu_epi8((uint8_t *)a->y + y0, (__mmask16)k8, b);
        if (oy2 != oy) _mm_mask_storeu_epi8((uint8_t *)a->y + y1, (__mmask16)k8, _mm_srli_si128(b, 8));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qdw_body(void *ctx, size_t m0, size_t m1) {
    qdw_job *j = ctx;
    const rlx_cpu_qconv_args *a = j->a;
    uint8_t *buf = rlx_scratch_get(RLX_SCRATCH_TASK, j->scratch);
    if (!buf) {
        atomic_store(&j->failed, 1);
        return;
    }
    int16_t *r16 = (int16_t *)(void *)buf;
    uint32_t *pr = (uint32_t *)(void *)(buf + (j->hp * j->w16 * 2 + 63) / 64 * 64);
    const size_t cout_g = a->cout_g, kh = (size_t)a->kh, kw = (size_t)a->kw, npair = (kw + 1) / 2;
    const size_t ih = (size_t)a->ih, iw = (size_t)a->iw, ow = (size_t)a->ow, P = (size_t)(a->oh * a->ow);
    size_t built = (size_t)-1; /* the input channel in r16 / pr */
    /* the padding stays 0 from here on: each channel writes only its
     * input's rows and columns (and pr's rows from those) */
    memset(buf, 0, j->scratch);
    for (size_t m = m0; m < m1; m++) {
        size_t c = m / cout_g;
        if (c != built) {
            /* r16[py][px] = x[py - ph][px - pw] - zx inside the input, else 0 */
            const uint8_t *xc = (const uint8_t *)a->x + c * ih * iw;
            __m512i vzx = _mm512_set1_epi16((short)a->zx);
            for (size_t iy = 0; iy < ih; iy++) {
                int16_t *d = r16 + (iy + (size_t)a->ph) * j->w16 + (size_t)a->pw;
                const uint8_t *s = xc + iy * iw;
                for (size_t i = 0; i < iw; i += 32) {
                    size_t n = iw - i < 32 ? iw - i : 32;
                    __m256i b = _mm512_castsi512_si256(_mm512_maskz_loadu_epi8((__mmask64)((1ull << n) - 1), s + i));
                    __m512i v = a->x_unsigned ? _mm512_cvtepu8_epi16(b) : _mm512_cvtepi8_epi16(b);
                    _mm512_mask_storeu_epi16(d + i, (__mmask32)((1ull << n) - 1), _mm512_sub_epi16(v, vzx));
                }
            }
            if (a->sh == 1) /* pr[py][i] = r16[py][i] | r16[py][i + 1] << 16 (other rows: 0) */
                for (size_t py = (size_t)a->ph; py < (size_t)a->ph + ih; py++) {
                    const int16_t *s = r16 + py * j->w16;
                    uint32_t *d = pr + py * j->wpr;
                    for (size_t i = 0; i < j->wpr; i += 16) {
                        __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i)));
                        __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i + 1)));
                        _mm512_storeu_si512(d + i, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                    }
                }
            built = c;
        }
        /* the weights (w - zw) as int16 pairs (taps 2q, 2q + 1; the odd last with 0) */
        __m512i wp[64];
        const uint8_t *wm = (const uint8_t *)a->w + m * kh * kw;
        for (size_t ky = 0; ky < kh; ky++)
            for (size_t q = 0; q < npair; q++) {
                int32_t w0 = (a->w_unsigned ? (int32_t)wm[ky * kw + 2 * q] : (int32_t)(int8_t)wm[ky * kw + 2 * q]) - a->zw[m];
                int32_t w1 = 0;
                if (2 * q + 1 < kw)
                    w1 = (a->w_unsigned ? (int32_t)wm[ky * kw + 2 * q + 1] : (int32_t)(int8_t)wm[ky * kw + 2 * q + 1]) -
                         a->zw[m];
                wp[ky * npair + q] = _mm512_set1_epi32((int)(((uint32_t)w0 & 0xFFFFu) | ((uint32_t)w1 << 16)));
            }
        __m512i vb = _mm512_set1_epi32(a->bias ? a->bias[m] : 0);
        if (ow <= 8) {
            qdw_rows2(j, m, r16, pr, wp, vb);
            continue;
        }
        for (size_t oy = 0; oy < (size_t)a->oh; oy++)
            for (size_t ox = 0; ox < ow; ox += 16) {
                __m512i acc = vb;
                for (size_t ky = 0; ky < kh; ky++) {
                    size_t py = oy * (size_t)a->sh + ky;
                    /* stride 1: pair dwords of pr from ox + 2q; stride 2: r16's own dwords from ox + q */
                    const uint32_t *row = a->sh == 1 ? pr + py * j->wpr + ox
                                                         : (const uint32_t *)(const void *)(r16 + py * j->w16) + ox;
                    size_t step = a->sh == 1 ? 2 : 1;
                    for (size_t q = 0; q < npair; q++)
                        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_loadu_si512(row + q * step),
                                                                      wp[ky * npair + q]));
                }
                size_t nv = ow - ox < 16 ? ow - ox : 16, yi = m * P + oy * ow + ox;
                __mmask16 k = (__mmask16)((1u << nv) - 1u);
                if (!a->mult) {
                    _mm512_mask_storeu_epi32((int32_t *)a->y + yi, k, acc);
                    continue;
                }
                __m512i qv = requant16(acc, a->mult[m], a->zy, j->lo, j->hi);
                _mm512_mask_storeu_epi8((uint8_t *)a->y + yi, (__mmask64)k, _mm512_castsi128_si512(_mm512_cvtepi32_epi8(qv)));
            }
    }
}
#endif

#if QCONV_HAVE_X86
/* The padded planes' sizes of a depthwise call into j; false when the
 * geometry is not the loop's or its scratch would exceed the slot's. */
static bool qdw_geom(const rlx_cpu_qconv_args *a, qdw_job *j) {
    if (a->groups < 1 || a->cin_g != 1 || a->cout_g < 1 || a->dh != 1 || a->dw != 1 || a->sh != a->sw ||
        (a->sh != 1 && a->sh != 2) || a->kw > 16 || a->kh * a->kw > 64 || a->oh < 1 || a->ow < 1)
        return false;
    j->ow_v = ceil_div((size_t)a->ow, 16) * 16;
    size_t kw = (size_t)a->kw, s = (size_t)a->sh;
    j->hp = (size_t)(a->oh - 1) * s + (size_t)a->kh;
    if (j->hp < (size_t)(a->ih + a->ph)) j->hp = (size_t)(a->ih + a->ph);
    /* the reads: stride 1, pr up to ow_v + kw (and r16 one further, 16 wide);
     * stride 2, r16's dwords up to ow_v + kw / 2 + 1 */
    j->wpr = s == 1 ? ceil_div(j->ow_v + kw + 1, 16) * 16 : 0;
    size_t need = s == 1 ? j->wpr + 17 : 2 * (j->ow_v + kw / 2 + 2);
    if (need < (size_t)(a->iw + a->pw)) need = (size_t)(a->iw + a->pw);
    j->w16 = ceil_div(need, 32) * 32;
    j->scratch = (j->hp * j->w16 * 2 + 63) / 64 * 64 + j->hp * j->wpr * 4;
    return j->scratch <= RLX_SCRATCH_MAX_BYTES;
}
#endif

bool rlx_cpu_qdw_fits(const rlx_cpu_qconv_args *a) {
#if QCONV_HAVE_X86
    qdw_job j;
    return qdw_geom(a, &j);
#else
    (void)a;
    return false;
#endif
}

bool rlx_cpu_qconv_fits(size_t k) {
    return ceil_div(k, 4) * NBMAX * 4 + NBMAX * sizeof(int32_t) + 5 * NBMAX <= RLX_SCRATCH_MAX_BYTES;
}

rlx_status rlx_cpu_qdw(const rlx_cpu_qconv_args *a) {
#if QCONV_HAVE_X86
    qdw_job j = { .a = a, .lo = a->y_unsigned ? 0 : -128, .hi = a->y_unsigned ? 255 : 127 };
    if (!qdw_geom(a, &j))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "depthwise int8 convolution: geometry or plane size not supported");
    size_t per = (size_t)(a->oh * a->ow * a->kh * a->kw);
    rlx_parallel_for(a->groups * a->cout_g, per >= (1u << 15) ? 1 : ceil_div(1u << 15, per), qdw_body, &j);
    if (atomic_load(&j.failed))
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory for a depthwise int8 convolution's plane");
    return RLX_OK;
#else
    (void)a;
    return rlx_fail(RLX_ERR_UNSUPPORTED, "depthwise int8 convolution: this build has no AVX-512 kernel");
#endif
}
