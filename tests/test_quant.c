/* Quantization ops: QuantizeLinear / DequantizeLinear (per tensor, per
 * axis, blocked; versions 10, 13, 19, 21, 23), DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv — against explicit
 * formulas evaluated here on random inputs, hand-picked rounding ties, the
 * ONNX operator examples, int32 wrap-around of the accumulation, and errors
 * that name the node and the type. Integer results must match exactly. */
#include "test.h"

#include "rlx/half.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ helpers */

/* Round half to even, written out (not nearbyint). */
static double rhe(double v) {
    double f = floor(v), d = v - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return fmod(f, 2.0) == 0 ? f : f + 1;
}

static double sat(double v, rlx_dtype dt) {
    double lo = 0, hi = 255;
    if (dt == RLX_DTYPE_I8) lo = -128, hi = 127;
    if (dt == RLX_DTYPE_U16) lo = 0, hi = 65535;
    if (dt == RLX_DTYPE_I16) lo = -32768, hi = 32767;
    return v < lo ? lo : v > hi ? hi : v;
}

static int64_t iget(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case RLX_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case RLX_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    default: fprintf(stderr, "iget: dtype %d\n", (int)t->dtype); exit(2);
    }
}

static void iset(rlx_tensor *t, size_t i, int64_t v) {
    switch (t->dtype) {
    case RLX_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case RLX_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case RLX_DTYPE_U16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case RLX_DTYPE_I16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    default: fprintf(stderr, "iset: dtype %d\n", (int)t->dtype); exit(2);
    }
}

/* Uniform integers in [lo, hi]. */
static rlx_tensor *rand_int(rlx_dtype dt, int rank, const int64_t *dims, int64_t lo, int64_t hi) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) iset(t, i, lo + (int64_t)(test_rand_u64() % (uint64_t)(hi - lo + 1)));
    return t;
}

static int64_t dt_lo(rlx_dtype dt) { return dt == RLX_DTYPE_I8 ? -128 : dt == RLX_DTYPE_I16 ? -32768 : 0; }
static int64_t dt_hi(rlx_dtype dt) {
    return dt == RLX_DTYPE_I8 ? 127 : dt == RLX_DTYPE_I16 ? 32767 : dt == RLX_DTYPE_U16 ? 65535 : 255;
}

static rlx_tensor *scalar_f32(float v) { return test_tensor_f32(0, NULL, &v); }

static rlx_tensor *scalar_int(rlx_dtype dt, int64_t v) {
    rlx_tensor *t = test_tensor(dt, 0, NULL);
    iset(t, 0, v);
    return t;
}

/* Counts integer elements that differ; prints the first few. */
static int int_mismatches(const rlx_tensor *got, const int64_t *want, size_t n, const char *what) {
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (iget(got, i) != want[i]) {
            if (bad < 4) fprintf(stderr, "  %s[%zu]: got %lld want %lld\n", what, i, (long long)iget(got, i), (long long)want[i]);
            bad++;
        }
    return bad;
}

/* Index of the parameter for element i: per tensor (axis < 0), per axis, or
 * blocked (block > 0) — written from the spec's shape rules. */
static size_t param_index(const int64_t *dims, int rank, int axis, int64_t block, size_t i) {
    if (axis < 0) return 0;
    int64_t coord[8];
    size_t rem = i;
    for (int d = rank - 1; d >= 0; d--) {
        coord[d] = (int64_t)(rem % (size_t)dims[d]);
        rem /= (size_t)dims[d];
    }
    if (block <= 0) return (size_t)coord[axis];
    size_t idx = 0;
    for (int d = 0; d < rank; d++) {
        int64_t sd = d == axis ? (dims[d] + block - 1) / block : dims[d];
        int64_t c = d == axis ? coord[d] / block : coord[d];
        idx = idx * (size_t)sd + (size_t)c;
    }
    return idx;
}

/* ------------------------------------------------------------ QuantizeLinear */

typedef struct q_case {
    int64_t opset;
    int rank;
    int64_t dims[4];
    int axis;      /* -1: per tensor */
    int64_t block; /* > 0: blocked */
    rlx_dtype zdt; /* zero point / output dtype; UNDEFINED: no zero point (u8) */
    bool output_dtype_attr;
    const char *label;
} q_case;

static void run_quantize_case(const q_case *c) {
    size_t n = 1;
    for (int i = 0; i < c->rank; i++) n *= (size_t)c->dims[i];
    int64_t sdims[4];
    int srank;
    if (c->axis < 0) {
        srank = 0;
    } else if (c->block > 0) {
        srank = c->rank;
        for (int i = 0; i < c->rank; i++) sdims[i] = i == c->axis ? (c->dims[i] + c->block - 1) / c->block : c->dims[i];
    } else {
        srank = 1;
        sdims[0] = c->dims[c->axis];
    }
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, c->rank, c->dims, -40, 40);
    rlx_tensor *s = test_tensor_random(RLX_DTYPE_F32, srank, sdims, 0.05f, 0.5f);
    rlx_dtype out_dt = c->zdt == RLX_DTYPE_UNDEFINED ? RLX_DTYPE_U8 : c->zdt;
    rlx_tensor *z = c->zdt == RLX_DTYPE_UNDEFINED
                        ? NULL
                        : rand_int(c->zdt, srank, sdims, dt_lo(c->zdt) / 2, dt_hi(c->zdt) / 2);
    /* a few exact ties: x = (k + 0.5) * s with s a power of two */
    float *px = x->data, *ps = s->data;
    ps[0] = 0.25f;
    for (size_t i = 0; i < n; i += 7)
        if (param_index(c->dims, c->rank, c->axis, c->block, i) == 0) px[i] = ((float)(int)(i % 11) - 5.5f) * 0.25f;
    int64_t *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        size_t p = param_index(c->dims, c->rank, c->axis, c->block, i);
        float q = px[i] / ps[p]; /* f32 division: the scale's precision */
        double zp = z ? (double)iget(z, p) : 0;
        want[i] = (int64_t)sat(rhe(q) + zp, out_dt);
    }
    const rlx_tensor *in[3] = { x, s, z };
    int konst[3] = { 0, 1, 1 };
    rlx_attr at[3];
    size_t na = 0;
    if (c->axis >= 0) at[na++] = RLX_ATTR_I("axis", c->axis);
    if (c->block > 0) at[na++] = RLX_ATTR_I("block_size", c->block);
    if (c->output_dtype_attr) at[na++] = RLX_ATTR_I("output_dtype", out_dt);
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("QuantizeLinear", c->opset, "cpu", z ? 3 : 2, in, konst, 1, na, at, &out));
    if (out) {
        CHECK_MSG(out[0]->dtype == out_dt, "%s: dtype %s", c->label, rlx_dtype_name(out[0]->dtype));
        if (out[0]->dtype == out_dt) {
            int bad = int_mismatches(out[0], want, n, c->label);
            CHECK_MSG(bad == 0, "%s: %d elements differ (exact match expected)", c->label, bad);
        }
    }
    test_free_outputs(out, 1);
    free(want);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(z);
}

static void test_quantize_random(void) {
    const q_case cases[] = {
        { 10, 2, { 5, 7 }, -1, 0, RLX_DTYPE_U8, false, "Q10 per tensor u8" },
        { 10, 1, { 33 }, -1, 0, RLX_DTYPE_UNDEFINED, false, "Q10 no zero point" },
        { 13, 3, { 2, 3, 4 }, 1, 0, RLX_DTYPE_I8, false, "Q13 per axis 1 i8" },
        { 13, 3, { 2, 3, 4 }, 2, 0, RLX_DTYPE_U8, false, "Q13 per axis 2 u8" },
        { 19, 4, { 2, 3, 2, 2 }, 0, 0, RLX_DTYPE_I8, false, "Q19 per axis 0 i8" },
        { 21, 2, { 4, 6 }, 1, 4, RLX_DTYPE_U8, false, "Q21 blocked axis 1 block 4" },
        { 21, 3, { 5, 2, 3 }, 0, 2, RLX_DTYPE_I8, false, "Q21 blocked axis 0 block 2" },
        { 21, 2, { 3, 8 }, 1, 0, RLX_DTYPE_U16, false, "Q21 per axis u16" },
        { 21, 2, { 3, 8 }, -1, 0, RLX_DTYPE_I16, true, "Q21 per tensor i16 output_dtype" },
        { 23, 2, { 6, 4 }, 0, 3, RLX_DTYPE_I16, false, "Q23 blocked i16" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_quantize_case(&cases[i]);
}

/* Hand-picked rounding cases: exact ties go to even, f32 quotients that
 * land on a tie (0.7f / 0.2f == 3.5f) round as ties, saturation. */
static void test_quantize_ties(void) {
    float xs[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 1000.0f, -1000.0f, 0.7f, 0.9f, 0.3f };
    float scale_unit = 1.0f;
    int64_t dx[1] = { 12 };
    rlx_tensor *x = test_tensor_f32(1, dx, xs);
    /* scale 1: ties; the last three use scale 0.2 in a second run */
    rlx_tensor *s = scalar_f32(scale_unit), *z = scalar_int(RLX_DTYPE_I8, 0);
    const rlx_tensor *in[3] = { x, s, z };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("QuantizeLinear", 13, "cpu", 3, in, NULL, 1, 0, NULL, &out));
    static const int64_t want_i8[9] = { 0, 2, 2, 0, -2, -2, 4, 127, -128 };
    if (out) CHECK(int_mismatches(out[0], want_i8, 9, "ties i8") == 0);
    test_free_outputs(out, 1);
    /* u8 with zero point 128: 0.5 -> 128, 1.5 -> 130, -2.5 -> 126 */
    rlx_tensor *zu = scalar_int(RLX_DTYPE_U8, 128);
    const rlx_tensor *inu[3] = { x, s, zu };
    CHECK_OK(test_run_op("QuantizeLinear", 10, "cpu", 3, inu, NULL, 1, 0, NULL, &out));
    static const int64_t want_u8[9] = { 128, 130, 130, 128, 126, 126, 132, 255, 0 };
    if (out) CHECK(int_mismatches(out[0], want_u8, 9, "ties u8 zp 128") == 0);
    test_free_outputs(out, 1);
    /* scale 0.2f: 0.7f/0.2f is 3.5f in f32 (-> 4), 0.9f/0.2f 4.5f (-> 4),
     * 0.3f/0.2f 1.5f (-> 2). In f64 (precision attribute, version 23)
     * 0.7f/0.2f is 3.4999999 -> 3. */
    rlx_tensor *s2 = scalar_f32(0.2f);
    const rlx_tensor *in2[3] = { x, s2, z };
    CHECK_OK(test_run_op("QuantizeLinear", 21, "cpu", 3, in2, NULL, 1, 0, NULL, &out));
    if (out) {
        static const int64_t want_tail[3] = { 4, 4, 2 };
        rlx_tensor tail = *out[0];
        tail.data = (int8_t *)out[0]->data + 9;
        CHECK(int_mismatches(&tail, want_tail, 3, "f32 quotient ties") == 0);
    }
    test_free_outputs(out, 1);
    rlx_attr prec[1] = { RLX_ATTR_I("precision", RLX_DTYPE_F64) };
    CHECK_OK(test_run_op("QuantizeLinear", 23, "cpu", 3, in2, NULL, 1, 1, prec, &out));
    if (out) {
        static const int64_t want_tail64[3] = { 3, 4, 2 };
        rlx_tensor tail = *out[0];
        tail.data = (int8_t *)out[0]->data + 9;
        CHECK(int_mismatches(&tail, want_tail64, 3, "f64 quotient") == 0);
    }
    test_free_outputs(out, 1);
    /* the ONNX operator example: x / 2 + 128 saturated */
    float ex[6] = { 0, 2, 3, 1000, -254, -1000 };
    int64_t d6[1] = { 6 };
    rlx_tensor *xe = test_tensor_f32(1, d6, ex), *se = scalar_f32(2.0f);
    const rlx_tensor *ine[3] = { xe, se, zu };
    CHECK_OK(test_run_op("QuantizeLinear", 21, "cpu", 3, ine, NULL, 1, 0, NULL, &out));
    static const int64_t want_ex[6] = { 128, 129, 130, 255, 1, 0 };
    if (out) CHECK(int_mismatches(out[0], want_ex, 6, "onnx example") == 0);
    test_free_outputs(out, 1);
    /* int32 input (versions 10+): -7/2 = -3.5 -> -4, 3/2 = 1.5 -> 2, saturation */
    int64_t d3[1] = { 3 };
    rlx_tensor *xi = test_tensor(RLX_DTYPE_I32, 1, d3);
    const int32_t xiv[3] = { -7, 3, 100000 };
    memcpy(xi->data, xiv, sizeof xiv);
    const rlx_tensor *ini[3] = { xi, se, z };
    CHECK_OK(test_run_op("QuantizeLinear", 10, "cpu", 3, ini, NULL, 1, 0, NULL, &out));
    static const int64_t want_i32[3] = { -4, 2, 127 };
    if (out) CHECK(int_mismatches(out[0], want_i32, 3, "int32 input") == 0);
    test_free_outputs(out, 1);
    rlx_tensor_destroy(xi);
    rlx_tensor *all[] = { x, s, z, zu, s2, xe, se };
    for (size_t i = 0; i < ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* f16 input and scale (version 19): the quotient is rounded to f16 before
 * rounding to an integer. */
/* NaN quantizes to the type's minimum whatever the zero point (the ONNX
 * reference: rint(NaN) -> INT32_MIN, then clip; onnxruntime the same);
 * +-inf saturate. */
static void test_quantize_nan(void) {
    const float xs[3] = { NAN, INFINITY, -INFINITY };
    int64_t dx[1] = { 3 };
    const struct { rlx_dtype dt; int64_t zp, lo, hi; } cs[] = {
        { RLX_DTYPE_U8, 255, 0, 255 }, { RLX_DTYPE_U8, 0, 0, 255 }, { RLX_DTYPE_I8, 127, -128, 127 },
        { RLX_DTYPE_I8, -128, -128, 127 }, { RLX_DTYPE_I16, 5, -32768, 32767 },
    };
    for (size_t i = 0; i < ARRAY_LEN(cs); i++) {
        rlx_tensor *x = test_tensor_f32(1, dx, xs), *s = scalar_f32(0.5f), *z = scalar_int(cs[i].dt, cs[i].zp);
        const rlx_tensor *in[3] = { x, s, z };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("QuantizeLinear", 21, "cpu", 3, in, NULL, 1, 0, NULL, &out));
        const int64_t want[3] = { cs[i].lo, cs[i].hi, cs[i].lo };
        char label[64];
        snprintf(label, sizeof label, "NaN %s zp %lld", rlx_dtype_name(cs[i].dt), (long long)cs[i].zp);
        if (out) CHECK_MSG(int_mismatches(out[0], want, 3, label) == 0, "%s: NaN is not the type's minimum", label);
        test_free_outputs(out, 1);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(z);
    }
}

static void test_quantize_f16(void) {
    int64_t d[1] = { 40 };
    rlx_tensor *x = test_tensor(RLX_DTYPE_F16, 1, d), *s = test_tensor(RLX_DTYPE_F16, 0, NULL);
    uint16_t *px = x->data;
    for (int i = 0; i < 40; i++) px[i] = rlx_f32_to_f16(test_rand_uniform(-20, 20));
    ((uint16_t *)s->data)[0] = rlx_f32_to_f16(0.3f);
    rlx_tensor *z = scalar_int(RLX_DTYPE_I8, 3);
    const rlx_tensor *in[3] = { x, s, z };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("QuantizeLinear", 19, "cpu", 3, in, NULL, 1, 0, NULL, &out));
    if (out) {
        int64_t want[40];
        float sv = rlx_f16_to_f32(((uint16_t *)s->data)[0]);
        for (int i = 0; i < 40; i++) {
            float q = rlx_f16_to_f32(rlx_f32_to_f16(rlx_f16_to_f32(px[i]) / sv));
            want[i] = (int64_t)sat(rhe(q) + 3, RLX_DTYPE_I8);
        }
        CHECK(int_mismatches(out[0], want, 40, "f16 quantize") == 0);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(z);
}

/* ------------------------------------------------------------ DequantizeLinear */

typedef struct dq_case {
    int64_t opset;
    int rank;
    int64_t dims[4];
    int axis;
    int64_t block;
    rlx_dtype xdt;
    bool zero_point;
    const char *label;
} dq_case;

static void run_dequantize_case(const dq_case *c) {
    size_t n = 1;
    for (int i = 0; i < c->rank; i++) n *= (size_t)c->dims[i];
    int64_t sdims[4];
    int srank = 0;
    if (c->block > 0) {
        srank = c->rank;
        for (int i = 0; i < c->rank; i++) sdims[i] = i == c->axis ? (c->dims[i] + c->block - 1) / c->block : c->dims[i];
    } else if (c->axis >= 0) {
        srank = 1;
        sdims[0] = c->dims[c->axis];
    }
    int64_t lo = c->xdt == RLX_DTYPE_I32 ? -100000 : dt_lo(c->xdt), hi = c->xdt == RLX_DTYPE_I32 ? 100000 : dt_hi(c->xdt);
    rlx_tensor *x = rand_int(c->xdt, c->rank, c->dims, lo, hi);
    rlx_tensor *s = test_tensor_random(RLX_DTYPE_F32, srank, sdims, 0.01f, 2.0f);
    rlx_tensor *z = c->zero_point ? rand_int(c->xdt, srank, sdims, lo / 2, hi / 2) : NULL;
    const rlx_tensor *in[3] = { x, s, z };
    int konst[3] = { 0, 1, 1 };
    rlx_attr at[2];
    size_t na = 0;
    if (c->axis >= 0) at[na++] = RLX_ATTR_I("axis", c->axis);
    if (c->block > 0) at[na++] = RLX_ATTR_I("block_size", c->block);
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("DequantizeLinear", c->opset, "cpu", z ? 3 : 2, in, konst, 1, na, at, &out));
    if (out) {
        CHECK(out[0]->dtype == RLX_DTYPE_F32);
        int bad = 0;
        const float *py = out[0]->data, *ps = s->data;
        for (size_t i = 0; i < n; i++) {
            size_t p = param_index(c->dims, c->rank, srank ? c->axis : -1, c->block, i);
            float want = (float)(iget(x, i) - (z ? iget(z, p) : 0)) * ps[p]; /* one f32 product */
            if (py[i] != want) bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d elements differ (exact f32 product expected)", c->label, bad);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(z);
}

static void test_dequantize_random(void) {
    const dq_case cases[] = {
        { 10, 2, { 4, 5 }, -1, 0, RLX_DTYPE_U8, true, "DQ10 per tensor u8" },
        { 10, 1, { 17 }, -1, 0, RLX_DTYPE_I32, false, "DQ10 i32 without zero point" },
        { 13, 3, { 2, 3, 4 }, 1, 0, RLX_DTYPE_I8, true, "DQ13 per axis i8" },
        { 19, 3, { 2, 3, 4 }, 2, 0, RLX_DTYPE_U8, false, "DQ19 per axis no zero point" },
        { 21, 2, { 4, 7 }, 1, 3, RLX_DTYPE_I16, true, "DQ21 blocked i16" },
        { 21, 3, { 6, 2, 2 }, 0, 4, RLX_DTYPE_U16, true, "DQ21 blocked u16" },
        { 23, 2, { 3, 5 }, 0, 0, RLX_DTYPE_U8, true, "DQ23 per axis" },
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) run_dequantize_case(&cases[i]);
}

/* f16 scale (19+): the output is f16, the f32 product rounded once; from 23
 * output_dtype chooses the type. */
static void test_dequantize_types(void) {
    int64_t d[1] = { 30 };
    rlx_tensor *x = rand_int(RLX_DTYPE_U8, 1, d, 0, 255), *s = test_tensor(RLX_DTYPE_F16, 0, NULL);
    ((uint16_t *)s->data)[0] = rlx_f32_to_f16(0.0137f);
    rlx_tensor *z = scalar_int(RLX_DTYPE_U8, 100);
    const rlx_tensor *in[3] = { x, s, z };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("DequantizeLinear", 19, "cpu", 3, in, NULL, 1, 0, NULL, &out));
    float sv = rlx_f16_to_f32(((uint16_t *)s->data)[0]);
    if (out) {
        CHECK(out[0]->dtype == RLX_DTYPE_F16);
        int bad = 0;
        for (int i = 0; i < 30; i++) {
            uint16_t want = rlx_f32_to_f16((float)(iget(x, (size_t)i) - 100) * sv);
            if (((uint16_t *)out[0]->data)[i] != want) bad++;
        }
        CHECK_MSG(bad == 0, "f16 dequantize: %d elements differ (exact)", bad);
    }
    test_free_outputs(out, 1);
    rlx_attr od[1] = { RLX_ATTR_I("output_dtype", RLX_DTYPE_F32) };
    CHECK_OK(test_run_op("DequantizeLinear", 23, "cpu", 3, in, NULL, 1, 1, od, &out));
    if (out) {
        CHECK(out[0]->dtype == RLX_DTYPE_F32);
        int bad = 0;
        for (int i = 0; i < 30; i++)
            if (((float *)out[0]->data)[i] != (float)(iget(x, (size_t)i) - 100) * sv) bad++;
        CHECK_MSG(bad == 0, "output_dtype f32: %d elements differ (exact)", bad);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(s);
    rlx_tensor_destroy(z);
}

/* ------------------------------------------------------------ DynamicQuantizeLinear */

static void check_dynamic(const float *xs, int64_t n, const int64_t *want_y, float want_scale, int64_t want_zp,
                          const char *label) {
    int64_t d[1] = { n };
    rlx_tensor *x = test_tensor_f32(1, d, xs);
    const rlx_tensor *in[1] = { x };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("DynamicQuantizeLinear", 11, "cpu", 1, in, NULL, 3, 0, NULL, &out));
    if (out) {
        CHECK_MSG(((float *)out[1]->data)[0] == want_scale, "%s: scale %.9g want %.9g", label,
                  (double)((float *)out[1]->data)[0], (double)want_scale);
        CHECK_MSG(iget(out[2], 0) == want_zp, "%s: zero point %lld want %lld", label, (long long)iget(out[2], 0),
                  (long long)want_zp);
        CHECK_MSG(out[1]->rank == 0 && out[2]->rank == 0, "%s: scale and zero point must be scalars", label);
        CHECK_MSG(int_mismatches(out[0], want_y, (size_t)n, label) == 0, "%s: y differs", label);
    }
    test_free_outputs(out, 3);
    rlx_tensor_destroy(x);
}

static void test_dynamic_quantize(void) {
    /* the ONNX operator examples */
    const float a[6] = { 0, 2, -3, -2.5f, 1.34f, 0.5f };
    const int64_t ya[6] = { 153, 255, 0, 26, 221, 179 };
    check_dynamic(a, 6, ya, 0.019607843831181526f, 153, "onnx example");
    const float b[6] = { -1, -2.1f, -1.3f, -2.5f, -3.34f, -4 };
    const int64_t yb[6] = { 191, 121, 172, 96, 42, 0 };
    check_dynamic(b, 6, yb, 0.01568627543747425f, 255, "onnx example, max adjusted");
    /* random, computed here from the formulas in f32 */
    float r[50];
    int64_t yr[50];
    for (int i = 0; i < 50; i++) r[i] = test_rand_uniform(-3, 7);
    float mx = 0, mn = 0;
    for (int i = 0; i < 50; i++) {
        mx = r[i] > mx ? r[i] : mx;
        mn = r[i] < mn ? r[i] : mn;
    }
    float scale = (mx - mn) / 255.0f;
    float izp = -mn / scale;
    double zp = rhe(izp < 0 ? 0 : izp > 255 ? 255 : izp);
    for (int i = 0; i < 50; i++) {
        float q = r[i] / scale;
        yr[i] = (int64_t)sat(rhe(q) + zp, RLX_DTYPE_U8);
    }
    check_dynamic(r, 50, yr, scale, (int64_t)zp, "random");
    /* all zero: scale 1/255 as the ONNX reference does */
    const float zeros[3] = { 0, 0, 0 };
    const int64_t yz[3] = { 0, 0, 0 };
    check_dynamic(zeros, 3, yz, 1.0f / 255.0f, 0, "all zero");
    /* NaN elements: left out of min / max, and quantized to 0 (the type's minimum, not the zero point) */
    const float wn[4] = { 1, NAN, -2, 1 };
    const int64_t ywn[4] = { 255, 0, 0, 255 };
    check_dynamic(wn, 4, ywn, 3.0f / 255.0f, 170, "one NaN");
}

/* ------------------------------------------------------------ matmul */

/* Reference of MatMulInteger / QLinearMatMul for a [B?, M, K] x b [K, N]
 * style shapes given explicitly: each operand is (batch, M, K) or (batch,
 * K, N) with batch strides 0 for broadcast. acc in int64, wrapped to int32
 * at the end (the same value as wrapping int32 accumulation). */
static int32_t wrap_i64(int64_t v) {
    uint32_t u = (uint32_t)((uint64_t)v & 0xffffffffu);
    return u <= 0x7fffffffu ? (int32_t)u : (int32_t)((int64_t)u - 4294967296LL);
}

static void test_matmul_integer(void) {
    /* ONNX example: a_zero_point 12 */
    {
        int64_t da[2] = { 4, 3 }, db[2] = { 3, 2 };
        rlx_tensor *a = test_tensor(RLX_DTYPE_U8, 2, da), *b = test_tensor(RLX_DTYPE_U8, 2, db);
        const uint8_t av[12] = { 11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0 }, bv[6] = { 1, 4, 2, 5, 3, 6 };
        memcpy(a->data, av, 12);
        memcpy(b->data, bv, 6);
        rlx_tensor *za = scalar_int(RLX_DTYPE_U8, 12), *zb = scalar_int(RLX_DTYPE_U8, 0);
        const rlx_tensor *in[4] = { a, b, za, zb };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("MatMulInteger", 10, "cpu", 4, in, NULL, 1, 0, NULL, &out));
        const int64_t want[8] = { -38, -83, -44, -98, -50, -113, -56, -128 };
        if (out) CHECK(out[0]->dtype == RLX_DTYPE_I32 && int_mismatches(out[0], want, 8, "onnx example") == 0);
        test_free_outputs(out, 1);
        rlx_tensor *all[] = { a, b, za, zb };
        for (int i = 0; i < 4; i++) rlx_tensor_destroy(all[i]);
    }
    /* random: batched a [2, 3, M, K] x b [3, K, N] (batch broadcast), per-row
     * a zero point [2, 3, M, 1], per-column b zero point [N], i8 x u8 */
    {
        const int64_t M = 4, K = 5, N = 3;
        int64_t da[4] = { 2, 3, M, K }, db[3] = { 3, K, N }, dza[4] = { 2, 3, M, 1 }, dzb[1] = { N };
        rlx_tensor *a = rand_int(RLX_DTYPE_I8, 4, da, -128, 127), *b = rand_int(RLX_DTYPE_U8, 3, db, 0, 255);
        rlx_tensor *za = rand_int(RLX_DTYPE_I8, 4, dza, -20, 20), *zb = rand_int(RLX_DTYPE_U8, 1, dzb, 100, 150);
        const rlx_tensor *in[4] = { a, b, za, zb };
        int konst[4] = { 0, 1, 1, 1 };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("MatMulInteger", 10, "cpu", 4, in, konst, 1, 0, NULL, &out));
        if (out) {
            CHECK(out[0]->rank == 4 && out[0]->dims[0] == 2 && out[0]->dims[1] == 3 && out[0]->dims[2] == M &&
                  out[0]->dims[3] == N);
            int64_t want[2 * 3 * 4 * 3];
            for (int64_t p = 0; p < 2; p++)
                for (int64_t q = 0; q < 3; q++)
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t n = 0; n < N; n++) {
                            int64_t s = 0, zav = iget(za, (size_t)((p * 3 + q) * M + m)), zbv = iget(zb, (size_t)n);
                            for (int64_t k = 0; k < K; k++)
                                s += (iget(a, (size_t)(((p * 3 + q) * M + m) * K + k)) - zav) *
                                     (iget(b, (size_t)((q * K + k) * N + n)) - zbv);
                            want[((p * 3 + q) * M + m) * N + n] = s;
                        }
            CHECK(int_mismatches(out[0], want, 2 * 3 * 4 * 3, "batched per-row/col") == 0);
        }
        test_free_outputs(out, 1);
        rlx_tensor *all[] = { a, b, za, zb };
        for (int i = 0; i < 4; i++) rlx_tensor_destroy(all[i]);
    }
    /* 1-D operands and no zero points: [K] x [K, N] -> [N]; [M, K] x [K] -> [M] */
    {
        int64_t dk[1] = { 6 }, dkn[2] = { 6, 2 }, dmk[2] = { 3, 6 };
        rlx_tensor *v = rand_int(RLX_DTYPE_U8, 1, dk, 0, 255), *b = rand_int(RLX_DTYPE_I8, 2, dkn, -128, 127),
                   *a = rand_int(RLX_DTYPE_I8, 2, dmk, -128, 127);
        const rlx_tensor *in1[2] = { v, b }, *in2[2] = { a, v };
        rlx_tensor **o1 = NULL, **o2 = NULL;
        CHECK_OK(test_run_op("MatMulInteger", 10, "cpu", 2, in1, NULL, 1, 0, NULL, &o1));
        CHECK_OK(test_run_op("MatMulInteger", 10, "cpu", 2, in2, NULL, 1, 0, NULL, &o2));
        if (o1 && o2) {
            CHECK(o1[0]->rank == 1 && o1[0]->dims[0] == 2 && o2[0]->rank == 1 && o2[0]->dims[0] == 3);
            int64_t w1[2] = { 0, 0 }, w2[3] = { 0, 0, 0 };
            for (int k = 0; k < 6; k++) {
                for (int n = 0; n < 2; n++) w1[n] += iget(v, (size_t)k) * iget(b, (size_t)(k * 2 + n));
                for (int m = 0; m < 3; m++) w2[m] += iget(a, (size_t)(m * 6 + k)) * iget(v, (size_t)k);
            }
            CHECK(int_mismatches(o1[0], w1, 2, "vector x matrix") == 0);
            CHECK(int_mismatches(o2[0], w2, 3, "matrix x vector") == 0);
        }
        test_free_outputs(o1, 1);
        test_free_outputs(o2, 1);
        rlx_tensor_destroy(v);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(a);
    }
    /* int32 wrap-around: 40000 products of 255 * 255 overflow int32 */
    {
        int64_t da[2] = { 1, 40000 }, db[2] = { 40000, 1 };
        rlx_tensor *a = test_tensor(RLX_DTYPE_U8, 2, da), *b = test_tensor(RLX_DTYPE_U8, 2, db);
        memset(a->data, 255, 40000);
        memset(b->data, 255, 40000);
        const rlx_tensor *in[2] = { a, b };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("MatMulInteger", 10, "cpu", 2, in, NULL, 1, 0, NULL, &out));
        int64_t want[1] = { wrap_i64(40000LL * 255 * 255) };
        if (out) CHECK_MSG(int_mismatches(out[0], want, 1, "int32 wrap") == 0, "sum %lld wraps to %lld",
                           40000LL * 255 * 255, (long long)want[0]);
        test_free_outputs(out, 1);
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
    }
}

/* QLinearMatMul: y = sat(rhe(acc * (sa * sb / sy)) + zy), acc = sum (a -
 * za)(b - zb); multiplier and product in double. */
static void test_qlinear_matmul(void) {
    /* ONNX example (2-D u8, opset 10 and 21) */
    {
        int64_t da[2] = { 2, 4 }, db[2] = { 4, 3 }, d1[1] = { 1 };
        rlx_tensor *a = test_tensor(RLX_DTYPE_U8, 2, da), *b = test_tensor(RLX_DTYPE_U8, 2, db);
        const uint8_t av[8] = { 208, 236, 0, 238, 3, 214, 255, 29 },
                      bv[12] = { 152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247 };
        memcpy(a->data, av, 8);
        memcpy(b->data, bv, 12);
        float f[3] = { 0.0066f, 0.00705f, 0.0107f };
        rlx_tensor *as = test_tensor_f32(1, d1, &f[0]), *bs = test_tensor_f32(1, d1, &f[1]),
                   *ys = test_tensor_f32(1, d1, &f[2]);
        rlx_tensor *za = rand_int(RLX_DTYPE_U8, 1, d1, 113, 113), *zb = rand_int(RLX_DTYPE_U8, 1, d1, 114, 114),
                   *zy = rand_int(RLX_DTYPE_U8, 1, d1, 118, 118);
        const rlx_tensor *in[8] = { a, as, za, b, bs, zb, ys, zy };
        const int64_t want[6] = { 168, 115, 255, 1, 66, 151 };
        for (int opset = 10; opset <= 21; opset += 11) {
            rlx_tensor **out = NULL;
            CHECK_OK(test_run_op("QLinearMatMul", opset, "cpu", 8, in, NULL, 1, 0, NULL, &out));
            if (out) CHECK_MSG(int_mismatches(out[0], want, 6, "onnx example") == 0, "opset %d", opset);
            test_free_outputs(out, 1);
        }
        rlx_tensor *all[] = { a, b, as, bs, ys, za, zb, zy };
        for (int i = 0; i < 8; i++) rlx_tensor_destroy(all[i]);
    }
    /* random: 3-D a [2, M, K] i8 with per-row scale/zero point [2, M, 1],
     * b [K, N] u8 with per-column [N], y i8 */
    {
        const int64_t M = 3, K = 6, N = 4;
        int64_t da[3] = { 2, M, K }, db[2] = { K, N }, dra[3] = { 2, M, 1 }, dcb[1] = { N };
        rlx_tensor *a = rand_int(RLX_DTYPE_I8, 3, da, -128, 127), *b = rand_int(RLX_DTYPE_U8, 2, db, 0, 255);
        rlx_tensor *as = test_tensor_random(RLX_DTYPE_F32, 3, dra, 0.001f, 0.02f),
                   *za = rand_int(RLX_DTYPE_I8, 3, dra, -10, 10);
        rlx_tensor *bs = test_tensor_random(RLX_DTYPE_F32, 1, dcb, 0.001f, 0.02f),
                   *zb = rand_int(RLX_DTYPE_U8, 1, dcb, 120, 136);
        rlx_tensor *ys = scalar_f32(0.05f), *zy = scalar_int(RLX_DTYPE_I8, -7);
        const rlx_tensor *in[8] = { a, as, za, b, bs, zb, ys, zy };
        int konst[8] = { 0, 1, 1, 1, 1, 1, 1, 1 };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("QLinearMatMul", 21, "cpu", 8, in, konst, 1, 0, NULL, &out));
        if (out) {
            CHECK(out[0]->dtype == RLX_DTYPE_I8);
            int64_t want[2 * 3 * 4];
            for (int64_t p = 0; p < 2; p++)
                for (int64_t m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        int64_t acc = 0, zav = iget(za, (size_t)(p * M + m)), zbv = iget(zb, (size_t)n);
                        for (int64_t k = 0; k < K; k++)
                            acc += (iget(a, (size_t)((p * M + m) * K + k)) - zav) * (iget(b, (size_t)(k * N + n)) - zbv);
                        double mult = (double)((float *)as->data)[p * M + m] * (double)((float *)bs->data)[n] / 0.05f;
                        want[(p * M + m) * N + n] = (int64_t)sat(rhe((double)acc * mult) - 7, RLX_DTYPE_I8);
                    }
            CHECK(int_mismatches(out[0], want, 24, "per-row/column") == 0);
        }
        test_free_outputs(out, 1);
        rlx_tensor *all[] = { a, b, as, za, bs, zb, ys, zy };
        for (int i = 0; i < 8; i++) rlx_tensor_destroy(all[i]);
    }
    /* ties of the requantization: multiplier 0.5 exactly, acc 1, 3, 5, -3 ->
     * 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -1.5 -> -2 */
    {
        int64_t da[2] = { 4, 1 }, db[2] = { 1, 1 };
        rlx_tensor *a = test_tensor(RLX_DTYPE_I8, 2, da), *b = test_tensor(RLX_DTYPE_I8, 2, db);
        const int8_t av[4] = { 1, 3, 5, -3 };
        memcpy(a->data, av, 4);
        ((int8_t *)b->data)[0] = 1;
        rlx_tensor *sa = scalar_f32(0.5f), *sb = scalar_f32(1.0f), *sy = scalar_f32(1.0f), *z = scalar_int(RLX_DTYPE_I8, 0);
        const rlx_tensor *in[8] = { a, sa, z, b, sb, z, sy, z };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("QLinearMatMul", 10, "cpu", 8, in, NULL, 1, 0, NULL, &out));
        const int64_t want[4] = { 0, 2, 2, -2 };
        if (out) CHECK(int_mismatches(out[0], want, 4, "requantization ties") == 0);
        test_free_outputs(out, 1);
        rlx_tensor *all[] = { a, b, sa, sb, sy, z };
        for (int i = 0; i < 6; i++) rlx_tensor_destroy(all[i]);
    }
}

/* ------------------------------------------------------------ convolution */

/* Reference 2-D integer convolution on an explicitly zero-point-padded
 * input: x [N, C, H, W], w [M, C/group, KH, KW]. */
static void ref_conv2d(const rlx_tensor *x, const rlx_tensor *w, int64_t zx, const int64_t *zw, int group,
                       const int64_t *pads, const int64_t *strides, const int64_t *dil, const int32_t *bias,
                       int64_t *out, int64_t OH, int64_t OW) {
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t M = w->dims[0], CG = w->dims[1], KH = w->dims[2], KW = w->dims[3];
    int64_t PH = H + pads[0] + pads[2], PW = W + pads[1] + pads[3];
    int64_t *xp = malloc(sizeof(int64_t) * (size_t)(N * C * PH * PW));
    for (int64_t i = 0; i < N * C * PH * PW; i++) xp[i] = zx;
    for (int64_t nc = 0; nc < N * C; nc++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t ww = 0; ww < W; ww++)
                xp[(nc * PH + h + pads[0]) * PW + ww + pads[1]] = iget(x, (size_t)((nc * H + h) * W + ww));
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t g = m / (M / group);
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t s = bias ? bias[m] : 0;
                    for (int64_t cg = 0; cg < CG; cg++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t xv = xp[((n * C + g * CG + cg) * PH + oh * strides[0] + kh * dil[0]) * PW +
                                                ow * strides[1] + kw * dil[1]];
                                int64_t wv = iget(w, (size_t)(((m * CG + cg) * KH + kh) * KW + kw));
                                s += (xv - zx) * (wv - zw[m]);
                            }
                    out[((n * M + m) * OH + oh) * OW + ow] = s;
                }
        }
    free(xp);
}

static void test_conv_integer(void) {
    /* ONNX example with padding: w_zero_point [0, 1] zeroes channel 1 */
    {
        int64_t dx[4] = { 1, 1, 3, 3 }, dw[4] = { 2, 1, 2, 2 }, dz[1] = { 2 };
        rlx_tensor *x = test_tensor(RLX_DTYPE_U8, 4, dx), *w = test_tensor(RLX_DTYPE_U8, 4, dw);
        for (int i = 0; i < 9; i++) ((uint8_t *)x->data)[i] = (uint8_t)(2 + i);
        memset(w->data, 1, 8);
        rlx_tensor *zx = scalar_int(RLX_DTYPE_U8, 1), *zw = test_tensor(RLX_DTYPE_U8, 1, dz);
        ((uint8_t *)zw->data)[1] = 1;
        const rlx_tensor *in[4] = { x, w, zx, zw };
        int64_t pads[4] = { 1, 1, 1, 1 };
        rlx_attr at[1] = { RLX_ATTR_IS("pads", 4, pads) };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("ConvInteger", 10, "cpu", 4, in, NULL, 1, 1, at, &out));
        int64_t want[32] = { 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9 };
        if (out) CHECK(out[0]->rank == 4 && out[0]->dims[2] == 4 && int_mismatches(out[0], want, 32, "onnx example") == 0);
        test_free_outputs(out, 1);
        rlx_tensor *all[] = { x, w, zx, zw };
        for (int i = 0; i < 4; i++) rlx_tensor_destroy(all[i]);
    }
    /* random: groups 2, strides, dilations, asymmetric pads, per-channel
     * weight zero point; i8 x and u8 w */
    {
        int64_t dx[4] = { 2, 4, 7, 6 }, dw[4] = { 6, 2, 3, 2 }, dz[1] = { 6 };
        rlx_tensor *x = rand_int(RLX_DTYPE_I8, 4, dx, -128, 127), *w = rand_int(RLX_DTYPE_U8, 4, dw, 0, 255);
        rlx_tensor *zx = scalar_int(RLX_DTYPE_I8, -5), *zw = rand_int(RLX_DTYPE_U8, 1, dz, 120, 135);
        int64_t pads[4] = { 1, 0, 2, 1 }, strides[2] = { 2, 1 }, dil[2] = { 1, 2 };
        rlx_attr at[4] = { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_IS("strides", 2, strides),
                           RLX_ATTR_IS("dilations", 2, dil), RLX_ATTR_I("group", 2) };
        const rlx_tensor *in[4] = { x, w, zx, zw };
        int konst[4] = { 0, 1, 1, 1 };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("ConvInteger", 10, "cpu", 4, in, konst, 1, 4, at, &out));
        /* OH = (7 + 3 - 3) / 2 + 1 = 4, OW = (6 + 1 - 3) / 1 + 1 = 5 */
        int64_t OH = 4, OW = 5, zwv[6];
        for (int i = 0; i < 6; i++) zwv[i] = iget(zw, (size_t)i);
        int64_t *want = malloc(sizeof(int64_t) * 2 * 6 * 4 * 5);
        ref_conv2d(x, w, -5, zwv, 2, pads, strides, dil, NULL, want, OH, OW);
        if (out) {
            CHECK(out[0]->dims[1] == 6 && out[0]->dims[2] == OH && out[0]->dims[3] == OW);
            CHECK(int_mismatches(out[0], want, 2 * 6 * 4 * 5, "grouped conv") == 0);
        }
        test_free_outputs(out, 1);
        free(want);
        rlx_tensor *all[] = { x, w, zx, zw };
        for (int i = 0; i < 4; i++) rlx_tensor_destroy(all[i]);
    }
    /* no zero points, auto_pad SAME_UPPER, 1-D: a 2-D conv with H = 1 */
    {
        int64_t dx[3] = { 1, 3, 9 }, dw[3] = { 2, 3, 4 };
        rlx_tensor *x = rand_int(RLX_DTYPE_U8, 3, dx, 0, 255), *w = rand_int(RLX_DTYPE_I8, 3, dw, -128, 127);
        rlx_attr at[2] = { RLX_ATTR_S("auto_pad", "SAME_UPPER"), RLX_ATTR_IS("strides", 1, (int64_t[]){ 2 }) };
        const rlx_tensor *in[2] = { x, w };
        rlx_tensor **out = NULL;
        CHECK_OK(test_run_op("ConvInteger", 10, "cpu", 2, in, NULL, 1, 2, at, &out));
        /* out = ceil(9 / 2) = 5, total pad (5 - 1) * 2 + 4 - 9 = 3: begin 1, end 2 */
        int64_t want[10];
        int64_t dx4[4] = { 1, 3, 1, 9 }, dw4[4] = { 2, 3, 1, 4 };
        rlx_tensor x4 = *x, w4 = *w;
        x4.rank = 4, w4.rank = 4;
        memcpy(x4.dims, dx4, sizeof dx4);
        memcpy(w4.dims, dw4, sizeof dw4);
        int64_t pads[4] = { 0, 1, 0, 2 }, st[2] = { 1, 2 }, dl[2] = { 1, 1 }, zw0[2] = { 0, 0 };
        ref_conv2d(&x4, &w4, 0, zw0, 1, pads, st, dl, NULL, want, 1, 5);
        if (out) CHECK(out[0]->rank == 3 && out[0]->dims[2] == 5 && int_mismatches(out[0], want, 10, "1-D same_upper") == 0);
        test_free_outputs(out, 1);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(w);
    }
}

static void test_qlinear_conv(void) {
    /* u8 x, i8 w with per-channel scales and zero points, bias, u8 y */
    int64_t dx[4] = { 1, 3, 6, 5 }, dw[4] = { 4, 3, 3, 3 }, dm[1] = { 4 };
    rlx_tensor *x = rand_int(RLX_DTYPE_U8, 4, dx, 0, 255), *w = rand_int(RLX_DTYPE_I8, 4, dw, -128, 127);
    rlx_tensor *xs = scalar_f32(0.02f), *xz = scalar_int(RLX_DTYPE_U8, 131);
    rlx_tensor *ws = test_tensor_random(RLX_DTYPE_F32, 1, dm, 0.001f, 0.01f), *wz = rand_int(RLX_DTYPE_I8, 1, dm, -3, 3);
    rlx_tensor *ys = scalar_f32(0.3f), *yz = scalar_int(RLX_DTYPE_U8, 120);
    rlx_tensor *bias = test_tensor(RLX_DTYPE_I32, 1, dm);
    for (int i = 0; i < 4; i++) ((int32_t *)bias->data)[i] = (int32_t)(test_rand_u64() % 4001) - 2000;
    int64_t pads[4] = { 1, 1, 1, 1 }, st[2] = { 1, 2 }, dl[2] = { 1, 1 };
    rlx_attr at[2] = { RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_IS("strides", 2, st) };
    const rlx_tensor *in[9] = { x, xs, xz, w, ws, wz, ys, yz, bias };
    int konst[9] = { 0, 1, 1, 1, 1, 1, 1, 1, 1 };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("QLinearConv", 10, "cpu", 9, in, konst, 1, 2, at, &out));
    int64_t OH = 6, OW = 3, zwv[4];
    for (int i = 0; i < 4; i++) zwv[i] = iget(wz, (size_t)i);
    int64_t acc[4 * 6 * 3], want[4 * 6 * 3];
    ref_conv2d(x, w, 131, zwv, 1, pads, st, dl, bias->data, acc, OH, OW);
    for (int m = 0; m < 4; m++)
        for (int i = 0; i < OH * OW; i++) {
            double mult = (double)0.02f * (double)((float *)ws->data)[m] / (double)0.3f;
            want[m * OH * OW + i] = (int64_t)sat(rhe((double)acc[m * OH * OW + i] * mult) + 120, RLX_DTYPE_U8);
        }
    if (out) {
        CHECK(out[0]->dtype == RLX_DTYPE_U8 && out[0]->dims[2] == OH && out[0]->dims[3] == OW);
        CHECK(int_mismatches(out[0], want, 72, "qlinearconv") == 0);
        /* the outputs should not all saturate, or the test proves little */
        int mid = 0;
        for (int i = 0; i < 72; i++) mid += iget(out[0], (size_t)i) > 0 && iget(out[0], (size_t)i) < 255;
        CHECK_MSG(mid > 36, "only %d of 72 outputs inside the range", mid);
    }
    test_free_outputs(out, 1);
    rlx_tensor *all[] = { x, w, xs, xz, ws, wz, ys, yz, bias };
    for (int i = 0; i < 9; i++) rlx_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ errors */

static void test_errors(void) {
    int64_t d2[2] = { 3, 4 }, d1[1] = { 5 }, d3[1] = { 3 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d2, -1, 1), *s5 = test_tensor_random(RLX_DTYPE_F32, 1, d1, 0.1f, 1);
    rlx_tensor *s = scalar_f32(0.1f), *s3 = test_tensor_random(RLX_DTYPE_F32, 1, d3, 0.1f, 1);
    rlx_tensor *z3 = rand_int(RLX_DTYPE_U8, 1, d1, 0, 10);
    rlx_tensor **out = NULL;
    /* float8 / int4 outputs are unsupported, named */
    {
        const rlx_tensor *in[2] = { x, s };
        rlx_attr f8[1] = { RLX_ATTR_I("output_dtype", 17) };
        CHECK_FAILS(test_run_op("QuantizeLinear", 21, "cpu", 2, in, NULL, 1, 1, f8, &out), RLX_ERR_UNSUPPORTED,
                    "node 'node0' (QuantizeLinear): output_dtype has type float8e4m3fn");
        rlx_attr i4[1] = { RLX_ATTR_I("output_dtype", 22) };
        CHECK_FAILS(test_run_op("QuantizeLinear", 21, "cpu", 2, in, NULL, 1, 1, i4, &out), RLX_ERR_UNSUPPORTED,
                    "has type int4, which rlx does not support");
        rlx_attr e5[1] = { RLX_ATTR_I("output_dtype", 19) };
        CHECK_FAILS(test_run_op("DequantizeLinear", 23, "cpu", 2, (const rlx_tensor *[]){ z3, s }, NULL, 1, 1, e5, &out),
                    RLX_ERR_UNSUPPORTED, "node 'node0' (DequantizeLinear): output_dtype has type float8e5m2");
        rlx_attr i32[1] = { RLX_ATTR_I("output_dtype", RLX_DTYPE_I32) };
        CHECK_FAILS(test_run_op("DequantizeLinear", 23, "cpu", 2, (const rlx_tensor *[]){ z3, s }, NULL, 1, 1, i32, &out),
                    RLX_ERR_INVALID_MODEL, "output_dtype has dtype i32 (6), expected one of f32, f16, bf16");
    }
    /* per-axis scale of the wrong length (axis 1 has 4) */
    {
        const rlx_tensor *in[2] = { x, s5 };
        CHECK_FAILS(test_run_op("QuantizeLinear", 13, "cpu", 2, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "node 'node0' (QuantizeLinear): scale has 5 elements, x has 4 along axis 1");
        CHECK_FAILS(test_run_op("QuantizeLinear", 10, "cpu", 2, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "version 10 needs a scalar");
    }
    /* zero point and scale of different shapes */
    {
        const rlx_tensor *in[3] = { x, s3, z3 };
        rlx_attr ax[1] = { RLX_ATTR_I("axis", 0) };
        CHECK_FAILS(test_run_op("QuantizeLinear", 13, "cpu", 3, in, NULL, 1, 1, ax, &out), RLX_ERR_INVALID_MODEL,
                    "zero point has shape [5], scale has [3]");
    }
    /* blocked: scale dims must be ceil(D / block) */
    {
        int64_t dsb[2] = { 3, 3 };
        rlx_tensor *sb = test_tensor_random(RLX_DTYPE_F32, 2, dsb, 0.1f, 1);
        const rlx_tensor *in[2] = { x, sb };
        rlx_attr at[2] = { RLX_ATTR_I("axis", 1), RLX_ATTR_I("block_size", 2) };
        CHECK_FAILS(test_run_op("QuantizeLinear", 21, "cpu", 2, in, NULL, 1, 2, at, &out), RLX_ERR_INVALID_MODEL,
                    "block_size 2 along axis 1 needs dim 1 = 2");
        rlx_tensor_destroy(sb);
    }
    /* zero point of another type than x (DequantizeLinear) */
    {
        rlx_tensor *xi = rand_int(RLX_DTYPE_I8, 2, d2, -5, 5), *zu = scalar_int(RLX_DTYPE_U8, 1);
        const rlx_tensor *in[3] = { xi, s, zu };
        CHECK_FAILS(test_run_op("DequantizeLinear", 13, "cpu", 3, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "x_zero_point has dtype u8, x has i8");
        rlx_tensor_destroy(xi);
        rlx_tensor_destroy(zu);
    }
    /* an int32 x has no zero point (ONNX DequantizeLinear; onnxruntime refuses a nonzero one): a constant
     * one fails the load, a fed one the run, naming the node; zeros run (both plans: the GPU declines int32
     * levels, the CPU kernel checks) */
    {
        int64_t dz[1] = { 3 }, dq3[2] = { 2, 3 };
        rlx_tensor *xi = rand_int(RLX_DTYPE_I32, 2, dq3, -1000, 1000), *zs = scalar_int(RLX_DTYPE_I32, 5);
        rlx_tensor *z0 = scalar_int(RLX_DTYPE_I32, 0), *sa = test_tensor_random(RLX_DTYPE_F32, 1, dz, 0.1f, 1);
        rlx_tensor *za = rand_int(RLX_DTYPE_I32, 1, dz, 0, 0);
        ((int32_t *)za->data)[2] = -7; /* the last element only */
        rlx_attr ax[1] = { RLX_ATTR_I("axis", 1) };
        const char *devs[2] = { "cpu", "gpu" };
        for (int di = 0; di < (test_have_gpu() ? 2 : 1); di++) {
            const rlx_tensor *in[3] = { xi, s, zs };
            const int konst[3] = { 0, 1, 1 }, fed[3] = { 0, 1, 0 };
            CHECK_FAILS(test_run_op("DequantizeLinear", 13, devs[di], 3, in, konst, 1, 0, NULL, &out),
                        RLX_ERR_INVALID_MODEL, "node 'node0' (DequantizeLinear): x_zero_point element 0 is 5");
            CHECK_FAILS(test_run_op("DequantizeLinear", 21, devs[di], 3, in, konst, 1, 0, NULL, &out),
                        RLX_ERR_INVALID_MODEL, "an int32 x has no zero point");
            CHECK_FAILS(test_run_op("DequantizeLinear", 13, devs[di], 3, in, fed, 1, 0, NULL, &out),
                        RLX_ERR_INVALID_ARGUMENT, "node 'node0' (DequantizeLinear): x_zero_point element 0 is 5");
            const rlx_tensor *inp[3] = { xi, sa, za };
            CHECK_FAILS(test_run_op("DequantizeLinear", 13, devs[di], 3, inp, konst, 1, 1, ax, &out),
                        RLX_ERR_INVALID_MODEL, "x_zero_point element 2 is -7");
            CHECK_FAILS(test_run_op("DequantizeLinear", 13, devs[di], 3, inp, fed, 1, 1, ax, &out),
                        RLX_ERR_INVALID_ARGUMENT, "x_zero_point element 2 is -7");
            for (int f = 0; f < 2; f++) { /* zero: runs, y = x * s */
                const rlx_tensor *in0[3] = { xi, s, z0 };
                CHECK(test_run_op("DequantizeLinear", 13, devs[di], 3, in0, f ? fed : konst, 1, 0, NULL, &out) ==
                      RLX_OK);
                if (!out) continue;
                for (size_t i = 0; i < 6; i++)
                    CHECK_MSG(((float *)out[0]->data)[i] == (float)((int32_t *)xi->data)[i] * 0.1f,
                              "%s int32 DQ with a zero zero point: element %zu", devs[di], i);
                test_free_outputs(out, 1);
                out = NULL;
            }
        }
        rlx_tensor *t[] = { xi, zs, z0, sa, za };
        for (size_t i = 0; i < ARRAY_LEN(t); i++) rlx_tensor_destroy(t[i]);
    }
    /* matmul shapes */
    {
        int64_t da[2] = { 2, 3 }, db[2] = { 4, 2 }, dzb[1] = { 3 };
        rlx_tensor *a = rand_int(RLX_DTYPE_U8, 2, da, 0, 9), *b = rand_int(RLX_DTYPE_U8, 2, db, 0, 9);
        const rlx_tensor *in[2] = { a, b };
        CHECK_FAILS(test_run_op("MatMulInteger", 10, "cpu", 2, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "node 'node0' (MatMulInteger): shapes [2,3] and [4,2] do not multiply");
        int64_t db2[2] = { 3, 2 };
        rlx_tensor *b2 = rand_int(RLX_DTYPE_U8, 2, db2, 0, 9), *zb = rand_int(RLX_DTYPE_U8, 1, dzb, 0, 9);
        const rlx_tensor *in4[4] = { a, b2, NULL, zb };
        CHECK_FAILS(test_run_op("MatMulInteger", 10, "cpu", 4, in4, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "b_zero_point has shape [3]");
        rlx_tensor_destroy(a);
        rlx_tensor_destroy(b);
        rlx_tensor_destroy(b2);
        rlx_tensor_destroy(zb);
    }
    /* ConvInteger weight zero point of the wrong length */
    {
        int64_t dx[4] = { 1, 2, 4, 4 }, dw[4] = { 3, 2, 2, 2 }, dz[1] = { 2 };
        rlx_tensor *cx = rand_int(RLX_DTYPE_U8, 4, dx, 0, 9), *cw = rand_int(RLX_DTYPE_U8, 4, dw, 0, 9),
                   *cz = rand_int(RLX_DTYPE_U8, 1, dz, 0, 9);
        const rlx_tensor *in[4] = { cx, cw, NULL, cz };
        CHECK_FAILS(test_run_op("ConvInteger", 10, "cpu", 4, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                    "node 'node0' (ConvInteger): w_zero_point has shape [2]; it must have one element or 3");
        rlx_tensor_destroy(cx);
        rlx_tensor_destroy(cw);
        rlx_tensor_destroy(cz);
    }
    rlx_tensor *all[] = { x, s5, s, s3, z3 };
    for (size_t i = 0; i < ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

int main(void) {
    test_seed_from_env();
    test_quantize_random();
    test_quantize_ties();
    test_quantize_nan();
    test_quantize_f16();
    test_dequantize_random();
    test_dequantize_types();
    test_dynamic_quantize();
    test_matmul_integer();
    test_qlinear_matmul();
    test_conv_integer();
    test_qlinear_conv();
    test_errors();
    TEST_MAIN_END();
}
