/* The vectorised transcendental functions of the elementwise vocabulary
 * (backend/cpu/cpu_ew_vec.c) against their scalar twin (ir/ew_math.h, the
 * rows' f32 definitions) and against the double reference of each row;
 * QDQ (rlx.QuantizeDequantize's vector form) by bit identity only, and
 * Add / Sub / Mul / Div through rlx_cpu_ew_f32 likewise.
 *
 * 1. Bit identity: every instruction set this CPU has (AVX-512, AVX2,
 *    portable C; rlx_cpu_isa_cap) computes rlx_cpu_ew_unary_f32 over
 *    arrays of random inputs of every magnitude (random bit patterns) and
 *    edge values (+-0, +-inf, NaN, subnormals, +-FLT_MAX, the overflow,
 *    underflow and branch thresholds), at 17 start offsets and lengths so
 *    that each element lands in a vector and in the scalar tail; the output
 *    (poisoned first) must equal rlx_ew_f32 of each element bit for bit,
 *    also in place (d == x) and through the unary kernel's entry
 *    rlx_cpu_ew_f32.
 * 2. Accuracy: the maximum error in ulps of the f32 result against the
 *    row's float64 reference over dense sweeps where the reference is a
 *    normal float (printed); bounds stated in k_bound below. Where the
 *    reference is subnormal the error is at most 4 subnormal steps
 *    (2^-147) plus the stated relative bound. NaN in gives NaN out, and the
 *    special values of the reference (+-inf, +-0 signs, +-1) are exact.
 * 3. The Softmax / LogSoftmax rows (cpu_rows.c) give the same bits with
 *    AVX2 and with AVX-512 (the same exp, the same order of the double
 *    sums), rows of 1 to 40 and 4109 elements. */
#include <float.h>

#include "test.h"

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_rows.h"
#include "backend/cpu/cpu_vmath.h"
#include "ir/ew.h"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef struct fn_case {
    rlx_ew_fn fn;
    float p0, p1;
    double bound; /* max ulps where the reference is a normal float */
    float acc_lo; /* the bound holds for x >= acc_lo (below: printed) */
} fn_case;

/* The bounds are the measured maxima (printed by the test) rounded up. */
static const fn_case k_cases[] = {
    { RLX_EW_EXP, 0, 0, 1.0, -INFINITY },        { RLX_EW_LOG, 0, 0, 1.0, -INFINITY },
    { RLX_EW_SIGMOID, 0, 0, 2.5, -INFINITY },    { RLX_EW_SILU, 0, 0, 3.0, -INFINITY },
    { RLX_EW_SWISH, 1.702f, 0, 3.5, -INFINITY }, { RLX_EW_TANH, 0, 0, 2.5, -INFINITY },
    { RLX_EW_ERF, 0, 0, 2.0, -INFINITY },        { RLX_EW_GELU, 0, 0, 5.0, -INFINITY },
    /* the cubic in f32: its rounding times the condition number 2|y| */
    { RLX_EW_GELU_TANH, 0, 0, 17.0, -3.0f },      { RLX_EW_ELU, 0.7f, 0, 2.0, -INFINITY },
    { RLX_EW_SELU, 1.67326319f, 1.05070102f, 2.5, -INFINITY },
    { RLX_EW_SOFTPLUS, 0, 0, 2.0, -INFINITY },   { RLX_EW_MISH, 0, 0, 4.5, -INFINITY },
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

static const float k_edges[] = {
    0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.17549435e-38f,
    -1.17549435e-38f, FLT_MAX, -FLT_MAX, 88.7228f, 88.72284f, 88.7229f, 89.0f, 100.0f, -87.33655f,
    -88.0f, -103.97f, -103.98f, -104.0f, -105.0f, -150.0f, 0.921875f, -0.921875f, 0.92187494f, 2.2f, -2.2f,
    3.1112698f, -3.1112698f, 9.0f, -9.0f, 10.5f, -10.5f, 14.8f, -14.8f, 15.0f, -15.0f, 21.0f, -21.0f, 30.0f,
    -30.0f, 40.0f, -40.0f, 0.34657359f, -0.34657359f, 1.0f, -1.0f, 0.5f, -0.5f, 1e-30f, -1e-30f, 1e-8f,
    -1e-8f, 0.70710677f, 1.4142135f, 1e30f, -1e30f, 2e19f, -2e19f,
};
#define N_EDGES (sizeof k_edges / sizeof k_edges[0])

/* Random floats of every magnitude and sign, the edges mixed in. */
static void fill_inputs(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rand_u64();
        switch (r % 4) {
        case 0: x[i] = k_edges[(r >> 8) % N_EDGES]; break;
        case 1: x[i] = float_of((uint32_t)(r >> 16)); break;
        case 2: x[i] = test_rand_uniform(-20.0f, 20.0f); break;
        default: x[i] = test_rand_uniform(-2.0f, 2.0f); break;
        }
    }
}

static int same_bits(float a, float b) { return bits_of(a) == bits_of(b); }

/* 1. the vector forms give the scalar twin's bits */
static void check_identity(const fn_case *c, rlx_cpu_isa isa) {
    enum { N = 4099 };
    static float x[N + 32], y[N + 32], z[N + 32];
    fill_inputs(x, N + 32);
    int bad = 0;
    for (size_t off = 0; off < 17 && !bad; off++) {
        size_t n = N - off * 37;
        for (size_t i = 0; i < N + 32; i++) y[i] = float_of(0x7fc0deadu);
        rlx_cpu_ew_unary_f32(c->fn, y + off, x + off, c->p0, c->p1, n);
        memcpy(z, x, sizeof z);
        rlx_cpu_ew_unary_f32(c->fn, z + off, z + off, c->p0, c->p1, n); /* in place */
        for (size_t i = 0; i < n && bad < 5; i++) {
            float want = rlx_ew_f32(c->fn, x[off + i], 0, 0, c->p0, c->p1);
            if (!same_bits(y[off + i], want) || !same_bits(z[off + i], want)) {
                bad++;
                CHECK_MSG(0, "%s isa %d: x = %a (%.9g): vector %a, in place %a, scalar twin %a (offset %zu, i %zu)",
                          rlx_ew_short_name(c->fn), (int)isa, (double)x[off + i], (double)x[off + i],
                          (double)y[off + i], (double)z[off + i], (double)want, off, i);
            }
        }
        CHECK(same_bits(y[off + n], float_of(0x7fc0deadu))); /* nothing past the end */
    }
    /* the unary kernels' entry gives the same */
    for (size_t i = 0; i < N; i++) y[i] = float_of(0x7fc0deadu);
    rlx_cpu_ew_f32(c->fn, y, x, NULL, NULL, c->p0, c->p1, N);
    for (size_t i = 0; i < N && bad < 5; i++)
        if (!same_bits(y[i], rlx_ew_f32(c->fn, x[i], 0, 0, c->p0, c->p1))) {
            bad++;
            CHECK_MSG(0, "%s isa %d: rlx_cpu_ew_f32 differs at x = %a", rlx_ew_short_name(c->fn), (int)isa, (double)x[i]);
        }
    rlx_test_checks++;
}

/* ulps of y against the reference r (a normal float's spacing at r) */
static double ulp_err(float y, double r) {
    int e;
    frexp(r, &e); /* |r| in [2^(e-1), 2^e) */
    double ulp = ldexp(1.0, e - 24);
    if (ulp < 0x1p-149) ulp = 0x1p-149;
    return fabs((double)y - r) / ulp;
}

/* 2. accuracy against float64 */
static void check_accuracy(const fn_case *c) {
    enum { N = 1 << 16 };
    static float x[N], y[N];
    double worst = 0, worst_x = 0, worst_sub = 0, below = 0;
    size_t specials_bad = 0;
    for (int round = 0; round < 13; round++) {
        float lo = round < 4 ? -2.0f : round < 8 ? -25.0f : -120.0f;
        size_t n = round == 12 ? N_EDGES : N;
        for (size_t i = 0; i < n; i++) {
            if (round == 12) x[i] = k_edges[i]; /* the edges: specials exact */
            else if (round % 4 == 3) x[i] = float_of((uint32_t)(test_rand_u64() >> 16)); /* every magnitude */
            else x[i] = lo + (-2.0f * lo) * (float)i / (float)N + test_rand_uniform(0.0f, -2.0f * lo / N);
        }
        rlx_cpu_ew_unary_f32(c->fn, y, x, c->p0, c->p1, n);
        for (size_t i = 0; i < n; i++) {
            double r = rlx_ew_f64(c->fn, x[i], 0, 0, c->p0, c->p1);
            if (c->fn == RLX_EW_SWISH) /* against x sigmoid(fl(alpha x)): alpha x is an f32 product */
                r = (double)x[i] / (1.0 + exp(-(double)(c->p0 * x[i])));
            if (isnan(r) || isinf(r) || isnan((double)x[i])) {
                if (isnan(r) != isnan((double)y[i]) || (!isnan(r) && (double)y[i] != r)) {
                    if (specials_bad++ < 3)
                        fprintf(stderr, "  %s(%g) = %g, reference %g\n", rlx_ew_short_name(c->fn), (double)x[i],
                                (double)y[i], r);
                }
                continue;
            }
            if (fabs(r) > FLT_MAX) { /* the reference overflows f32 */
                if (!isinf(y[i]) && fabs((double)y[i]) < FLT_MAX * 0.999999) specials_bad++;
                continue;
            }
            /* SiLU, Swish, Mish are x f(x) in the bits of the unfused ops: where f(x) is
             * subnormal (x below about -87) the product has few significant bits */
            bool product = c->fn == RLX_EW_SILU || c->fn == RLX_EW_SWISH || c->fn == RLX_EW_MISH;
            if (product && x[i] != 0.0f && fabs(r / (double)x[i]) < FLT_MIN) continue;
            double e = ulp_err(y[i], r);
            if (fabs(r) < FLT_MIN && x[i] >= c->acc_lo) {
                if (fabs((double)y[i] - r) > 0x1p-147 + c->bound * 0x1p-23 * fabs(r))
                    worst_sub = fmax(worst_sub, fabs((double)y[i] - r) / 0x1p-149);
                continue;
            }
            if (x[i] < c->acc_lo) {
                below = fmax(below, e);
                continue;
            }
            if (e > worst) worst = e, worst_x = x[i];
        }
    }
    fprintf(stderr, "  %-10s max %.2f ulp (at x = %.9g) where the reference is normal\n", rlx_ew_short_name(c->fn),
            worst, worst_x);
    if (c->acc_lo > -INFINITY) fprintf(stderr, "  %-10s max %.2f ulp for x < %g\n", "", below, (double)c->acc_lo);
    CHECK_MSG(worst <= c->bound, "%s: %.2f ulp at x = %.9g > %.1f", rlx_ew_short_name(c->fn), worst, worst_x,
              c->bound);
    CHECK_MSG(worst_sub == 0, "%s: %.1f subnormal steps off", rlx_ew_short_name(c->fn), worst_sub);
    CHECK_MSG(specials_bad == 0, "%s: %zu special values differ from the reference", rlx_ew_short_name(c->fn),
              specials_bad);
}

/* 3. Softmax rows: AVX2 and AVX-512 agree bit for bit */
static void check_softmax_widths(void) {
    if (rlx_cpu_isa_get() < RLX_CPU_ISA_AVX512) return;
    enum { ROWS = 3, MAXLEN = 4109 };
    static float x[ROWS * MAXLEN], y8[ROWS * MAXLEN], y16[ROWS * MAXLEN];
    for (size_t len = 1; len <= MAXLEN; len = len < 40 ? len + 1 : MAXLEN + 1) {
        for (size_t i = 0; i < ROWS * len; i++) x[i] = test_rand_uniform(-30.0f, 30.0f);
        for (int lg = 0; lg < 2; lg++) {
            for (size_t i = 0; i < ROWS * len; i++) y8[i] = y16[i] = NAN;
            rlx_cpu_isa_cap(RLX_CPU_ISA_AVX2);
            CHECK(rlx_cpu_rows_softmax(x, y8, ROWS, len, lg));
            rlx_cpu_isa_cap(RLX_CPU_ISA_AVX512);
            CHECK(rlx_cpu_rows_softmax(x, y16, ROWS, len, lg));
            CHECK_MSG(memcmp(y8, y16, ROWS * len * sizeof(float)) == 0, "softmax (log %d) rows of %zu: AVX2 and AVX-512 differ",
                      lg, len);
        }
    }
}

/* Add, Sub, Mul, Div, Max, Min, and Relu, Neg, Abs, Clip (bounds ordered,
 * +0 and -0 crossed, a NaN bound), HardSigmoid, HardSwish, LeakyRelu (y unused)
 * through rlx_cpu_ew_f32 (AVX-512 loops under that instruction set): each
 * element the row's bits (NaN, -0, ties), poisoned outputs, nothing
 * written past n, lengths around the 16 lanes. */
static void check_binary(rlx_cpu_isa isa) {
    enum { N = 1031 };
    static float x[N], y[N], d[N + 1];
    static const struct {
        rlx_ew_fn fn;
        float p0, p1;
    } fns[] = { { RLX_EW_ADD, 0, 0 },         { RLX_EW_SUB, 0, 0 },          { RLX_EW_MUL, 0, 0 },
                { RLX_EW_DIV, 0, 0 },         { RLX_EW_RELU, 0, 0 },         { RLX_EW_NEG, 0, 0 },
                { RLX_EW_ABS, 0, 0 },         { RLX_EW_MAX, 0, 0 },          { RLX_EW_MIN, 0, 0 },
                { RLX_EW_CLIP, -0.5f, 0.75f }, { RLX_EW_CLIP, 0.0f, -0.0f },  { RLX_EW_CLIP, NAN, 2.0f },
                { RLX_EW_HARDSIGMOID, 0.2f, 0.5f }, { RLX_EW_HARDSWISH, 0, 0 }, { RLX_EW_LEAKYRELU, 0.1f, 0 },
                { RLX_EW_LEAKYRELU, -1.5f, 0 } };
    fill_inputs(x, N);
    fill_inputs(y, N);
    for (int i = 0; i < 8; i++) { /* ties of Max and Min: equal values, and +0 against -0 both ways */
        y[i * 97] = x[i * 97];
        x[i * 97 + 1] = i % 2 ? 0.0f : -0.0f;
        y[i * 97 + 1] = i % 2 ? -0.0f : 0.0f;
    }
    for (size_t f = 0; f < sizeof fns / sizeof *fns; f++)
        for (size_t n = N; n + 40 > N; n -= 3) {
            float p0 = fns[f].p0, p1 = fns[f].p1;
            for (size_t i = 0; i <= n; i++) d[i] = float_of(0x7fc0deadu);
            rlx_cpu_ew_f32(fns[f].fn, d, x, y, NULL, p0, p1, n);
            int bad = 0;
            for (size_t i = 0; i < n && !bad; i++)
                bad = !same_bits(d[i], rlx_ew_f32(fns[f].fn, x[i], y[i], 0, p0, p1));
            CHECK_MSG(!bad, "%s isa %d n %zu: differs from the row", rlx_ew_short_name(fns[f].fn), (int)isa, n);
            CHECK(same_bits(d[n], float_of(0x7fc0deadu)));
        }
}

/* QDQ near its levels' ties: x around (k + 1/2) * p0 and k * p0 (the
 * float product, its neighbours two ulps either way, the double product
 * rounded) for every level, scales whose reciprocal is inexact, tiny or
 * huge (the AVX-512 form multiplies by 1 / p0 and divides only near a tie:
 * it must give the division's bits everywhere), lows of the 8-bit types
 * and one out of their range. */
static void check_qdq_ties(rlx_cpu_isa isa) {
    static const float scales[] = { 0.0235f, 1.0f / 3.0f, 0.1f, 0.007f, 3.7e-3f, 1.9e-5f, 7.0f, 1e-39f, 3e38f };
    static const float lows[] = { -128.0f, 0.0f, -255.0f, -37.0f, -1000.0f };
    enum { M = 12 * 700 };
    static float x[M], y[M];
    for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
        for (size_t li = 0; li < sizeof lows / sizeof *lows; li++) {
            float p0 = scales[si], p1 = lows[li];
            size_t n = 0;
            for (int k = -350; k < 350; k++) {
                float t = (float)k + 0.5f, c[3] = { t * p0, (float)((double)t * (double)p0), (float)k * p0 };
                for (int j = 0; j < 3; j++) {
                    x[n++] = c[j];
                    x[n++] = nextafterf(c[j], INFINITY);
                    x[n++] = nextafterf(nextafterf(c[j], INFINITY), INFINITY);
                    x[n++] = nextafterf(c[j], -INFINITY);
                }
            }
            rlx_cpu_ew_unary_f32(RLX_EW_QDQ, y, x, p0, p1, n);
            int bad = 0;
            for (size_t i = 0; i < n && bad < 3; i++)
                if (!same_bits(y[i], rlx_ew_f32(RLX_EW_QDQ, x[i], 0, 0, p0, p1))) {
                    bad++;
                    CHECK_MSG(0, "QDQ isa %d scale %a low %g: x = %a gives %a, the scalar row %a", (int)isa, (double)p0,
                              (double)p1, (double)x[i], (double)y[i], (double)rlx_ew_f32(RLX_EW_QDQ, x[i], 0, 0, p0, p1));
                }
        }
    rlx_test_checks++;
}

int main(void) {
    test_seed_from_env();
    rlx_cpu_isa top = rlx_cpu_isa_get();
    for (size_t k = 0; k < N_CASES; k++) CHECK(rlx_cpu_ew_has_vec(k_cases[k].fn));
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        for (size_t k = 0; k < N_CASES; k++) check_identity(&k_cases[k], (rlx_cpu_isa)isa);
    }
    rlx_cpu_isa_cap(RLX_CPU_ISA_AVX512);
    fprintf(stderr, "accuracy against float64 (instruction set %d):\n", (int)top);
    for (size_t k = 0; k < N_CASES; k++) check_accuracy(&k_cases[k]);
    check_softmax_widths();
    /* QDQ (rlx.QuantizeDequantize): scales with inexact quotients and
     * levels' lower ends of uint8 / int8 zero points; the scalar twin's bits
     * (it has a vector form without rlx_cpu_ew_has_vec: conv_fast fuses no QDQ);
     * last, so the other checks' random inputs stay as they were */
    static const fn_case qdq[] = {
        { RLX_EW_QDQ, 0.0235f, -128.0f, 0, 0 }, { RLX_EW_QDQ, 1.0f / 3.0f, 0.0f, 0, 0 },
        { RLX_EW_QDQ, 0.001f, -37.0f, 0, 0 },  { RLX_EW_QDQ, 0.5f, -200.0f, 0, 0 },
    };
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        for (size_t k = 0; k < sizeof qdq / sizeof *qdq; k++) check_identity(&qdq[k], (rlx_cpu_isa)isa);
    }
    for (int isa = (int)top; isa >= (int)RLX_CPU_ISA_C; isa--) {
        rlx_cpu_isa_cap((rlx_cpu_isa)isa);
        check_binary((rlx_cpu_isa)isa);
        check_qdq_ties((rlx_cpu_isa)isa);
    }
    rlx_cpu_isa_cap(top);
    TEST_MAIN_END();
}
