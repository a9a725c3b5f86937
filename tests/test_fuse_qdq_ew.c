#define _POSIX_C_SOURCE 200809L
/* 8-bit elementwise chains on the CPU (passes/fuse_qdq_ew.c, the qin / qout
 * operands and the byte tables of src/backend/cpu/cpu_fused_ew.c).
 *
 * - QDQ chains as quantize_static writes them (PP-OCRv4's learnable affine
 *   blocks and HardSwish, its SE products and residuals, a sigmoid head):
 *   DequantizeLinear -> ops with QuantizeLinear/DequantizeLinear pairs ->
 *   QuantizeLinear, u8 and i8, fresh random bytes and parameters, a
 *   nearest Resize of a DequantizeLinear (resized as bytes); the fused
 *   plan against the same plan with fuse_qdq_ew off (the DequantizeLinear,
 *   f32 chain and QuantizeLinear kernels apart): bit for bit, on the
 *   shapes of the model (128x128 .. 8x8 planes) and odd sizes, with the
 *   AVX-512 paths and capped to AVX2 (the scalar loops), at the thread
 *   count of the run (ctest runs it at 1 and 3);
 * - the fused node run by its kernel with the reference flag (no tables)
 *   against the fast kernel (tables per call or per row): bit for bit;
 * - divisions by zero (inf and NaN before a QuantizeLinear: the type's
 *   bounds and minimum);
 * - what is fused: the DequantizeLinear and QuantizeLinear steps are gone;
 *   what is not: a chain output that is also read as f32, QuantizeLinear
 *   users with different scales, a per-axis DequantizeLinear;
 * - DequantizeLinear -> Resize -> QuantizeLinear: one step (the 8-bit
 *   Resize) or two (and a requantization) on CPU and GPU plans, the bytes
 *   of the plan without the pass (test_dq_resize_q). */
#include "test.h"

#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_vmath.h"
#include "ir/graph.h"
#include "ir/ops/internal_ops.h"
#include "runtime/session.h"
#include "fusion_util.h"

#define PASS "fuse_qdq_ew"

static void add(rlx_model *m, const char *op, const char *ins, const char *outs) {
    add_node(m, op, outs, ins, outs, 0, NULL);
}

static void scalar_f(rlx_model *m, const char *name, float v) {
    konst(m, name, test_tensor_f32(0, NULL, &v));
}

static void zero_point(rlx_model *m, const char *name, rlx_dtype dt, int v) {
    rlx_tensor *t = test_tensor(dt, 0, NULL);
    if (dt == RLX_DTYPE_U8) *(uint8_t *)t->data = (uint8_t)v;
    else *(int8_t *)t->data = (int8_t)v;
    konst(m, name, t);
}

/* Quantization parameters "<p>_s", "<p>_z" of a random scale in [lo, hi). */
static void qparams(rlx_model *m, const char *p, rlx_dtype dt, float lo, float hi) {
    char s[64], z[64];
    snprintf(s, sizeof s, "%s_s", p);
    snprintf(z, sizeof z, "%s_z", p);
    scalar_f(m, s, test_rand_uniform(lo, hi));
    int zl = dt == RLX_DTYPE_U8 ? 0 : -128;
    zero_point(m, z, dt, zl + (int)(test_rand_u64() % 256));
}

/* y = DQ(Q(x)) with parameters p (a QuantizeLinear/DequantizeLinear pair) */
static void qdq(rlx_model *m, const char *x, const char *p, const char *y) {
    char ins[160], q[80];
    snprintf(q, sizeof q, "%s_q", y);
    snprintf(ins, sizeof ins, "%s,%s_s,%s_z", x, p, p);
    add(m, "QuantizeLinear", ins, q);
    snprintf(ins, sizeof ins, "%s,%s_s,%s_z", q, p, p);
    add(m, "DequantizeLinear", ins, y);
}

static void dq(rlx_model *m, const char *x, const char *p, const char *y) {
    char ins[160];
    snprintf(ins, sizeof ins, "%s,%s_s,%s_z", x, p, p);
    add(m, "DequantizeLinear", ins, y);
}

static void q(rlx_model *m, const char *x, const char *p, const char *y) {
    char ins[160];
    snprintf(ins, sizeof ins, "%s,%s_s,%s_z", x, p, p);
    add(m, "QuantizeLinear", ins, y);
}

static rlx_tensor *bytes(rlx_dtype dt, int rank, const int64_t *dims) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    for (size_t i = 0; i < t->nbytes; i++) ((uint8_t *)t->data)[i] = (uint8_t)test_rand_u64();
    return t;
}

enum { M_LAB_HSWISH, M_SE, M_SE_RESIDUAL, M_SIGMOID_HEAD, M_DIV, M_RESIDUAL_ADD, M_COUNT };
static const char *const k_names[M_COUNT] = { "lab_hardswish", "se", "se_residual", "sigmoid_head", "div",
                                              "residual_add" };

/* The model of kind `kind` over x [1, C, H, W] of dtype dt (and its other
 * inputs), its inputs in *in / names (n returned). */
static rlx_model *build(int kind, rlx_dtype dt, int64_t C, int64_t H, int64_t W, rlx_tensor **in, const char **names,
                        size_t *n_in) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d[4] = { 1, C, H, W }, dc[4] = { 1, C, 1, 1 };
    input(m, "x", dt, 4, d);
    in[0] = bytes(dt, 4, d);
    names[0] = "x";
    *n_in = 1;
    const char *pn[] = { "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7" };
    for (int i = 0; i < 8; i++) qparams(m, pn[i], dt, 0.002f, 0.2f);
    dq(m, "x", "p0", "xf");
    switch (kind) {
    case M_LAB_HSWISH: /* (x * a) + b, HardSwish as Add 3, Clip 0..6, Mul, Div 6, each step quantized */
        scalar_f(m, "a", test_rand_uniform(0.3f, 2.5f));
        scalar_f(m, "b", test_rand_uniform(-1.0f, 1.0f));
        scalar_f(m, "three", 3.0f);
        scalar_f(m, "six", 6.0f);
        scalar_f(m, "zero", 0.0f);
        add(m, "Mul", "xf,a", "t0");
        qdq(m, "t0", "p1", "t1");
        add(m, "Add", "t1,b", "t2");
        qdq(m, "t2", "p2", "t3");
        add(m, "Add", "t3,three", "t4");
        add(m, "Clip", "t4,zero,six", "t5");
        qdq(m, "t5", "p3", "t6");
        add(m, "Mul", "t3,t6", "t7");
        qdq(m, "t7", "p4", "t8");
        add(m, "Div", "t8,six", "t9");
        q(m, "t9", "p5", "y");
        break;
    case M_SE: /* x * se (per channel, runtime) + x: tables per row */
        input(m, "se", RLX_DTYPE_F32, 4, dc);
        in[1] = test_tensor_random(RLX_DTYPE_F32, 4, dc, 0.0f, 1.0f);
        names[1] = "se";
        *n_in = 2;
        add(m, "Mul", "xf,se", "t0");
        qdq(m, "t0", "p1", "t1");
        add(m, "Add", "xf,t1", "t2");
        q(m, "t2", "p2", "y");
        break;
    case M_SE_RESIDUAL: { /* x * se (per channel, runtime) + x, + Resize(DQ(r)) (nearest, to x's size): the neck */
        int64_t dh[4] = { 1, C, (H + 1) / 2, (W + 1) / 2 };
        input(m, "se", RLX_DTYPE_F32, 4, dc);
        input(m, "r", dt, 4, dh);
        in[1] = test_tensor_random(RLX_DTYPE_F32, 4, dc, 0.0f, 1.0f);
        in[2] = bytes(dt, 4, dh);
        names[1] = "se", names[2] = "r";
        *n_in = 3;
        int64_t four = 4;
        konst(m, "sizes", test_tensor_i64(1, &four, d));
        add(m, "Mul", "xf,se", "t0");
        qdq(m, "t0", "p1", "t1");
        add(m, "Add", "xf,t1", "t2");
        qdq(m, "t2", "p2", "t3");
        dq(m, "r", "p3", "rh");
        rlx_attr ra[3] = { RLX_ATTR_S("mode", "nearest"), RLX_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                           RLX_ATTR_S("nearest_mode", "floor") };
        add_node(m, "Resize", "rf", "rh,,,sizes", "rf", 3, ra);
        add(m, "Add", "t3,rf", "t4");
        q(m, "t4", "p4", "y");
        break;
    }
    case M_SIGMOID_HEAD: { /* Add a per-channel constant bias, quantize, Sigmoid: an f32 output */
        rlx_tensor *bias = test_tensor_random(RLX_DTYPE_F32, 4, dc, -1.0f, 1.0f);
        konst(m, "bias", bias);
        add(m, "Add", "xf,bias", "t0");
        qdq(m, "t0", "p1", "t1");
        add(m, "Sigmoid", "t1", "y");
        break;
    }
    case M_DIV: /* DQ(x) / DQ(r): zeros of r give inf and NaN before the QuantizeLinear */
        input(m, "r", dt, 4, d);
        in[1] = bytes(dt, 4, d);
        names[1] = "r";
        *n_in = 2;
    {   /* many exact zeros: every third byte of r and every fifth of x at
         * its zero point (x / 0: inf; 0 / 0: NaN) */
        int lo = dt == RLX_DTYPE_U8 ? 0 : -128, zx = lo + (int)(test_rand_u64() % 256), zr = lo + (int)(test_rand_u64() % 256);
        scalar_f(m, "dx_s", 0.03f);
        zero_point(m, "dx_z", dt, zx);
        scalar_f(m, "dr_s", 0.07f);
        zero_point(m, "dr_z", dt, zr);
        dq(m, "x", "dx", "xd");
        dq(m, "r", "dr", "rf");
        add(m, "Div", "xd,rf", "t0");
        scalar_f(m, "one", 1.0f);
        add(m, "Add", "t0,one", "t1");
        q(m, "t1", "p2", "y");
        for (size_t i = 0; i < in[1]->nbytes; i += 3) ((uint8_t *)in[1]->data)[i] = (uint8_t)zr;
        for (size_t i = 0; i < in[0]->nbytes; i += 5) ((uint8_t *)in[0]->data)[i] = (uint8_t)zx;
        break;
    }
    case M_RESIDUAL_ADD: /* DQ(x) + DQ(r) -> Q, one op alone: a QDQ ResNet's residual Add (its Relu in the Q) */
        input(m, "r", dt, 4, d);
        in[1] = bytes(dt, 4, d);
        names[1] = "r";
        *n_in = 2;
        dq(m, "r", "p1", "rf");
        add(m, "Add", "xf,rf", "t0");
        q(m, "t0", "p2", "y");
        break;
    }
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* The fused FusedElementwise node of a program (with qin or qout), or NULL. */
static const rlx_node *fused_node(const rlx_program *p) {
    for (size_t i = 0; p && i < p->n_steps; i++) {
        const rlx_node *n = &p->g->nodes[p->steps[i]];
        size_t c = 0;
        if (strcmp(n->op_type, "FusedElementwise") == 0 &&
            (rlx_param_floats(n, RLX_A_qin, &c) || rlx_param_floats(n, RLX_A_qout, &c)))
            return n;
    }
    return NULL;
}

/* The fused node again by its kernel, reference (no tables) and fast, on
 * the run's inputs: the same bytes as the session's output. */
static void kernel_pair(const char *label, const rlx_program *p, const rlx_tensor *const *in, size_t n_in,
                        const char *const *names, const rlx_tensor *want, bool inputs_only) {
    const rlx_node *n = fused_node(p);
    CHECK_MSG(n != NULL, "%s: no fused node", label);
    if (!n) return;
    const rlx_tensor *args[RLX_EW_MAX_IN] = { NULL };
    for (int i = 0; i < n->n_in; i++) {
        const rlx_value *v = &p->g->values[n->in[i]];
        for (size_t j = 0; j < n_in; j++)
            if (strcmp(v->name, names[j]) == 0) args[i] = in[j];
        if (!args[i] && v->konst) args[i] = v->konst;
        if (!args[i] && !inputs_only) return; /* computed by an earlier step (the Resize) */
        CHECK_MSG(args[i] != NULL, "%s: input %d (%s) of the fused node is not a model input", label, i, v->name);
        if (!args[i]) return;
    }
    for (int ref = 0; ref < 2; ref++) {
        rlx_tensor *o = test_tensor(want->dtype, want->rank, want->dims);
        memset(o->data, 0xA5, o->nbytes);
        rlx_tensor *outs[1] = { o };
        CHECK_OK(rlx_cpu_run_node(p->g, n, args, outs, ref != 0));
        CHECK_MSG(memcmp(o->data, want->data, o->nbytes) == 0, "%s: the kernel (%s) differs from the run", label,
                  ref ? "reference" : "fast");
        rlx_tensor_destroy(o);
    }
}

static void case_run(int kind, rlx_dtype dt, int64_t C, int64_t H, int64_t W) {
    rlx_tensor *in[4] = { NULL };
    const char *names[4];
    size_t n_in = 0;
    rlx_model *m = build(kind, dt, C, H, W, in, names, &n_in);
    char label[160];
    for (int cap = 0; cap < 2; cap++) {
        rlx_cpu_isa_cap(cap ? RLX_CPU_ISA_AVX2 : RLX_CPU_ISA_AVX512);
        snprintf(label, sizeof label, "%s %s [1,%lld,%lld,%lld] %s", k_names[kind], rlx_dtype_name(dt),
                 (long long)C, (long long)H, (long long)W, cap ? "avx2" : "avx512");
        run_t a = run(m, "cpu", NULL, n_in, names, (const rlx_tensor *const *)in);
        run_t b = run(m, "cpu", PASS, n_in, names, (const rlx_tensor *const *)in);
        CHECK_MSG(a.n == 1 && b.n == 1, "%s: outputs", label);
        if (a.n == 1 && b.n == 1) {
            CHECK_MSG(a.out[0]->dtype == b.out[0]->dtype && a.out[0]->nbytes == b.out[0]->nbytes &&
                          memcmp(a.out[0]->data, b.out[0]->data, a.out[0]->nbytes) == 0,
                      "%s: fused and unfused differ", label);
            CHECK_MSG(count(a.p, "DequantizeLinear") == 0 && count(a.p, "QuantizeLinear") == 0,
                      "%s: DequantizeLinear / QuantizeLinear left in the fused plan", label);
            CHECK_MSG(count(b.p, "DequantizeLinear") > 0, "%s: the unfused plan has no DequantizeLinear", label);
            kernel_pair(label, a.p, (const rlx_tensor *const *)in, n_in, names, a.out[0], kind != M_SE_RESIDUAL);
        }
        run_free(&a);
        run_free(&b);
    }
    rlx_cpu_isa_cap(RLX_CPU_ISA_AVX512);
    for (size_t i = 0; i < n_in; i++) rlx_tensor_destroy(in[i]);
    rlx_model_destroy(m);
}

static void test_chains(void) {
    static const int64_t shapes[][3] = { { 16, 128, 128 }, { 48, 64, 64 }, { 96, 32, 32 }, { 192, 16, 16 },
                                         { 384, 8, 8 },    { 3, 7, 9 },     { 5, 23, 29 }, { 2, 1, 1 },
                                         { 1, 33, 17 } };
    for (int kind = 0; kind < M_COUNT; kind++)
        for (int t = 0; t < 2; t++)
            for (size_t s = 0; s < RLX_ARRAY_LEN(shapes); s++)
                case_run(kind, t ? RLX_DTYPE_I8 : RLX_DTYPE_U8, shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* What must stay apart: a chain output also read as f32 keeps its f32
 * output (its DequantizeLinear input is still taken); QuantizeLinear users
 * with two scales; a per-axis DequantizeLinear. The results stay those of
 * the unfused plan. */
static void test_preconditions(void) {
    for (int v = 0; v < 3; v++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        int64_t d[4] = { 1, 4, 8, 8 }, d4[1] = { 4 };
        input(m, "x", RLX_DTYPE_U8, 4, d);
        for (int i = 0; i < 4; i++) {
            char p[8];
            snprintf(p, sizeof p, "p%d", i);
            qparams(m, p, RLX_DTYPE_U8, 0.01f, 0.1f);
        }
        scalar_f(m, "c", 0.75f);
        if (v == 2) { /* per-axis scale and zero point */
            rlx_tensor *s = test_tensor_random(RLX_DTYPE_F32, 1, d4, 0.01f, 0.1f), *z = test_tensor(RLX_DTYPE_U8, 1, d4);
            konst(m, "pa_s", s);
            konst(m, "pa_z", z);
            rlx_attr ax = RLX_ATTR_I("axis", 1);
            add_node(m, "DequantizeLinear", "xf", "x,pa_s,pa_z", "xf", 1, &ax);
        } else {
            dq(m, "x", "p0", "xf");
        }
        add(m, "Mul", "xf,c", "t0");
        qdq(m, "t0", "p1", "t1");
        add(m, "Add", "t1,c", "t2");
        q(m, "t2", "p2", "y");
        if (v == 0) add(m, "Sigmoid", "t2", "y2"); /* t2 read as f32 too */
        else if (v == 1) q(m, "t2", "p3", "y2");  /* a second QuantizeLinear, other parameters */
        else add(m, "Identity", "y", "y2");
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_add_output(m, "y2"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = bytes(RLX_DTYPE_U8, 4, d);
        const char *names[1] = { "x" };
        const rlx_tensor *in[1] = { x };
        run_t a = run(m, "cpu", NULL, 1, names, in), b = run(m, "cpu", PASS, 1, names, in);
        CHECK(a.n == 2 && b.n == 2);
        for (size_t i = 0; i < a.n && i < b.n; i++)
            CHECK_MSG(memcmp(a.out[i]->data, b.out[i]->data, a.out[i]->nbytes) == 0, "precondition %d: output %zu", v, i);
        const rlx_node *f = fused_node(a.p);
        size_t c = 0;
        if (v == 0 || v == 1) {
            CHECK_MSG(f && rlx_param_floats(f, RLX_A_qin, &c) && !rlx_param_floats(f, RLX_A_qout, &c),
                      "precondition %d: the input only", v);
            CHECK_MSG(count(a.p, "QuantizeLinear") == 1 + v, "precondition %d: QuantizeLinear kept", v);
        } else {
            CHECK_MSG(f && !rlx_param_floats(f, RLX_A_qin, &c) && rlx_param_floats(f, RLX_A_qout, &c),
                      "precondition %d: the output only", v);
            CHECK_MSG(count(a.p, "DequantizeLinear") == 1, "precondition %d: per-axis DequantizeLinear kept", v);
        }
        run_free(&a);
        run_free(&b);
        rlx_tensor_destroy(x);
        rlx_model_destroy(m);
    }
}

/* DequantizeLinear -> nearest Resize -> QuantizeLinear: fuse_qdq_ew commutes the Resize before the
 * DequantizeLinear, and the DequantizeLinear -> QuantizeLinear pair left then goes where it gives every level
 * back (the 8-bit Resize alone, one step) or becomes one requantizing FusedElementwise (two steps).
 * Parameters: equal (u8 and i8, a random scale; a subnormal one, 1e-40, whose products are exact), the zero
 * point or both different, and equal with a scale whose products overflow (3e37: levels 12 away from the
 * zero point saturate, so the pair requantizes), and a QuantizeLinear to the other 8-bit type (the same
 * scale, the zero point moved by 128: one requantization between the types). y a graph output, or read by a Flatten (then the Resize's
 * bytes are read directly). Bytes against the plan with fuse_qdq_ew off, on the CPU and the GPU. */
static void test_dq_resize_q(void) {
    bool gpu = test_have_gpu();
    for (int c = 0; c < 24; c++) {
        rlx_dtype dt = c % 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        /* params: 0 equal, 1 1e-40, 2 zero point differs, 3 differ, 4 3e37, 5 the other type */
        int params = c / 2 % 6, tail = c >= 12;
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        int64_t C = 1 + (int64_t)(test_rand_u64() % 5), H = 2 + (int64_t)(test_rand_u64() % 9),
                W = 2 + (int64_t)(test_rand_u64() % 9), d[4] = { 1, C, H, W }, four = 4;
        input(m, "x", dt, 4, d);
        int lo = dt == RLX_DTYPE_U8 ? 0 : -128, z0 = lo + (int)(test_rand_u64() % 256);
        float s0 = params == 4 ? 3e37f : params == 1 ? 1e-40f : test_rand_uniform(0.002f, 0.2f);
        scalar_f(m, "dp_s", s0);
        zero_point(m, "dp_z", dt, z0);
        rlx_dtype qt = dt == RLX_DTYPE_U8 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        if (params == 3) qparams(m, "qp", dt, 0.002f, 0.2f);
        else if (params == 5) scalar_f(m, "qp_s", s0), zero_point(m, "qp_z", qt, dt == RLX_DTYPE_U8 ? z0 - 128 : z0 + 128);
        else scalar_f(m, "qp_s", s0), zero_point(m, "qp_z", dt, params == 2 ? lo + (z0 - lo + 1) % 256 : z0);
        float sc[4] = { 1, 1, c % 3 ? 2.0f : 3.0f, c % 3 == 2 ? 0.5f : 2.0f };
        konst(m, "scales", test_tensor_f32(1, &four, sc));
        rlx_attr ra[2] = { RLX_ATTR_S("mode", "nearest"),
                           RLX_ATTR_S("coordinate_transformation_mode", c % 2 ? "asymmetric" : "half_pixel") };
        dq(m, "x", "dp", "xf");
        add_node(m, "Resize", "rs", "xf,,scales", "r", 2, ra);
        q(m, "r", "qp", tail ? "yq" : "y");
        if (tail) add(m, "Flatten", "yq", "y");
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = bytes(dt, 4, d);
        const char *names[1] = { "x" };
        const rlx_tensor *in[1] = { x };
        char label[160];
        snprintf(label, sizeof label, "DQ -> Resize -> Q %s %s%s [1,%lld,%lld,%lld]", rlx_dtype_name(dt),
                 (const char *[]){ "equal", "equal 1e-40", "zero point differs", "different", "equal 3e37",
                                   "to the other type" }[params],
                 tail ? " -> Flatten" : "", (long long)C, (long long)H, (long long)W);
        bool cancels = params <= 1; /* what the pass must make of it */
        run_t b = run(m, "cpu", PASS, 1, names, in);
        for (int dev = 0; dev < (gpu ? 2 : 1); dev++) {
            run_t a = run(m, dev ? "gpu" : "cpu", NULL, 1, names, in);
            CHECK_MSG(a.n == 1 && b.n == 1, "%s: outputs", label);
            if (a.n == 1 && b.n == 1)
                CHECK_MSG(a.out[0]->dtype == b.out[0]->dtype && a.out[0]->nbytes == b.out[0]->nbytes &&
                              memcmp(a.out[0]->data, b.out[0]->data, a.out[0]->nbytes) == 0,
                          "%s %s: differs from the plan without %s", label, dev ? "gpu" : "cpu", PASS);
            int want = cancels ? 1 : 2, fe = count(a.p, "FusedElementwise");
            CHECK_MSG(count(a.p, "DequantizeLinear") == 0 && count(a.p, "QuantizeLinear") == 0 &&
                          count(a.p, "Resize") == 1 && fe == want - 1,
                      "%s %s: %d DequantizeLinear, %d QuantizeLinear, %d FusedElementwise steps, want 0, 0, %d", label,
                      dev ? "gpu" : "cpu", count(a.p, "DequantizeLinear"), count(a.p, "QuantizeLinear"), fe,
                      want - 1);
            if (dev) {
                long nd = dispatches(a.s);
                CHECK_MSG(nd == want, "%s gpu: %ld dispatches, want %d", label, nd, want);
            }
            run_free(&a);
        }
        run_free(&b);
        rlx_tensor_destroy(x);
        rlx_model_destroy(m);
    }
}

int main(void) {
    test_seed_from_env();
    /* nodes of compiled plans run again below on the plans' constants: keep
     * their plain copies (cpu.release_packed frees those read through packs) */
    setenv("RLX_CPU_RELEASE_PACKED", "0", 1);
    if (rlx_cpu_isa_get() < RLX_CPU_ISA_AVX512) fprintf(stderr, "note: no AVX-512 here: the scalar loops only\n");
    test_chains();
    test_preconditions();
    test_dq_resize_q();
    TEST_MAIN_END();
}
