/* The backend-ops harness: command line, case selection and seeding, the
 * GPU-against-CPU run of a case, the comparison, and the coverage check
 * (harness.h says what a run checks). */
#include "harness.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/half.h"
#include "rlx/inspect.h"
#include "rlx/session_ext.h"
#include "test.h"

/* The passes an oracle or an unfused run turns off (all optional ones;
 * widen_f16 too, so that the CPU oracle of f16 cases rounds each op to
 * binary16, the GPU's policy, on the reference kernels). */
static const char k_all_passes[] =
    "cse,fuse_qdq,fold_conv_affine,fuse_activation,fuse_conv_residual,fuse_attention,fuse_layernorm,fuse_add_layernorm,fuse_elementwise,widen_f16";

static const bo_family *const k_families[] = { &bo_family_elementwise, &bo_family_logic, &bo_family_tensor,
                                               &bo_family_index,       &bo_family_nn,    &bo_family_reduce,
                                               &bo_family_gemm,        &bo_family_attention, &bo_family_fusion,
                                               &bo_family_f16 };

struct bo_ctx {
    /* command line */
    const char *prog;
    const char *op_filter; /* names separated by commas, each exact or a prefix ending in '*' */
    long only_case;        /* -1: all */
    long every;            /* > 1: only the cases whose number is a multiple of it (--every) */
    uint64_t seed;
    uint32_t wg_storage; /* the adapter's workgroup memory in bytes (0: not known) */
    bool full, list, count, verbose, count_mode;
    /* the op being generated */
    const bo_op *op;
    long case_idx;  /* cases handed out so far for the op */
    long n_run;     /* cases run for the op */
    /* the case being built */
    bo_case cur;
    /* totals */
    long total, failed, xfailed, xpassed, op_failed;
    double op_seconds;
};

/* ------------------------------------------------------------ RNG */

/* The values come from tests/test_util.c's generator (test_rand_u64),
 * seeded per case by bo_next; splitmix mixes the seed, the op's name and
 * the case number into that seed. */
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t bo_rand_below(uint64_t n) { return n ? test_rand_u64() % n : 0; }

double bo_uniform(double lo, double hi) {
    double u = (double)(test_rand_u64() >> 11) / 9007199254740992.0;
    return lo + (hi - lo) * u;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* ------------------------------------------------------------ tensors */

rlx_tensor *bo_rand(rlx_dtype dt, int rank, const int64_t *dims, double lo, double hi) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        double v = bo_uniform(lo, hi);
        if (v == 0 && !(lo == 0 && hi == 0)) v = hi > 0 ? hi / 2 : lo / 2; /* non-zero */
        switch (dt) {
        case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
        case RLX_DTYPE_F64: ((double *)t->data)[i] = v; break;
        case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = rlx_f32_to_f16((float)v); break;
        default: fprintf(stderr, "bo_rand: dtype %s (integers: bo_rand_int)\n", rlx_dtype_name(dt)); exit(2);
        }
    }
    return t;
}

rlx_tensor *bo_rand_int(rlx_dtype dt, int rank, const int64_t *dims, int64_t lo, int64_t hi) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        int64_t v = lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1));
        switch (dt) {
        case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
        case RLX_DTYPE_I64: ((int64_t *)t->data)[i] = v; break;
        case RLX_DTYPE_U32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
        case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
        case RLX_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
        default: fprintf(stderr, "bo_rand_int: dtype %s\n", rlx_dtype_name(dt)); exit(2);
        }
    }
    return t;
}

rlx_tensor *bo_rand_any(rlx_dtype dt, const bo_shape *s, double lo, double hi) {
    if (dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F64 || dt == RLX_DTYPE_F16) return bo_rand(dt, s->rank, s->d, lo, hi);
    if (dt == RLX_DTYPE_BOOL) return bo_rand_int(dt, s->rank, s->d, 0, 1);
    return bo_rand_int(dt, s->rank, s->d, (int64_t)ceil(lo), (int64_t)floor(hi));
}

void bo_edges(rlx_tensor *t, int every) {
    static const float k_edge[] = { INFINITY, -INFINITY, NAN, -0.0f, 1e-40f, -1e-42f, 65504.0f, -65504.0f,
                                    65520.0f, 3.4e38f, -3.4e38f, 2147483648.0f, -2147483648.0f, 1.17549435e-38f };
    if (t->dtype != RLX_DTYPE_F32) return;
    size_t n = rlx_tensor_numel(t);
    if (!n) return;
    float *v = t->data;
    size_t k = every > 0 ? n / (size_t)every : 0;
    if (k == 0) k = 1;
    for (size_t j = 0; j < k; j++) v[bo_rand_below(n)] = k_edge[bo_rand_below(BO_LEN(k_edge))];
    /* in small tensors make sure each special shows at least once */
    if (n >= BO_LEN(k_edge) * 2 && k < BO_LEN(k_edge))
        for (size_t j = 0; j < BO_LEN(k_edge); j++) v[bo_rand_below(n)] = k_edge[j];
}

void bo_set(rlx_tensor *t, size_t i, double v) {
    if (i >= rlx_tensor_numel(t)) return;
    switch (t->dtype) {
    case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
    case RLX_DTYPE_F64: ((double *)t->data)[i] = v; break;
    case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = rlx_f32_to_f16((float)v); break;
    default: fprintf(stderr, "bo_set: dtype %s\n", rlx_dtype_name(t->dtype)); exit(2);
    }
}

void bo_specials(rlx_tensor *t, size_t block) {
    static const double k_mix[] = { NAN, -INFINITY, INFINITY, -0.0, 0.0, -1.0, 1.0 };
    size_t n = rlx_tensor_numel(t);
    if (block == 0) block = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        size_t r = (size_t)bo_rand_below(8);
        double v = NAN, z = bo_rand_below(2) ? -0.0 : 0.0;
        switch ((i / block) % 8) {
        case 0: /* a mix; the element keeps its value in one of eight */
            if (r == 7) continue;
            v = k_mix[r];
            break;
        case 1: v = -INFINITY; break;
        case 2: v = INFINITY; break;
        case 3: v = r < 4 ? z : r < 7 ? -1.0 : -INFINITY; break; /* the maximum a tie of zeros */
        case 4: v = r < 4 ? z : r < 7 ? 1.0 : INFINITY; break;   /* the minimum a tie of zeros */
        case 5: v = r < 2 ? NAN : -INFINITY; break;
        case 6: /* its values, NaN in four, zeros in eight */
            if (r >= 3) continue;
            v = r < 2 ? NAN : z;
            break;
        default: v = NAN; break;
        }
        bo_set(t, i, v);
    }
}

rlx_tensor *bo_tensor(rlx_dtype dt, int rank, const int64_t *dims, const void *values) {
    rlx_tensor *t = test_tensor(dt, rank, dims);
    if (t->nbytes) memcpy(t->data, values, t->nbytes);
    return t;
}

rlx_tensor *bo_i64s(int n, const int64_t *v) {
    int64_t d[1] = { n };
    return bo_tensor(RLX_DTYPE_I64, 1, d, v);
}

rlx_tensor *bo_scalar(rlx_dtype dt, double v) {
    rlx_tensor *t = test_tensor(dt, 0, NULL);
    switch (dt) {
    case RLX_DTYPE_F32: *(float *)t->data = (float)v; break;
    case RLX_DTYPE_F64: *(double *)t->data = v; break;
    case RLX_DTYPE_F16: *(uint16_t *)t->data = rlx_f32_to_f16((float)v); break;
    case RLX_DTYPE_I32: *(int32_t *)t->data = (int32_t)v; break;
    case RLX_DTYPE_I64: *(int64_t *)t->data = (int64_t)v; break;
    case RLX_DTYPE_U32: *(uint32_t *)t->data = (uint32_t)v; break;
    case RLX_DTYPE_BOOL: case RLX_DTYPE_U8: *(uint8_t *)t->data = (uint8_t)v; break;
    case RLX_DTYPE_I8: *(int8_t *)t->data = (int8_t)v; break;
    default: fprintf(stderr, "bo_scalar: dtype %s\n", rlx_dtype_name(dt)); exit(2);
    }
    return t;
}

const char *bo_shape_str(int rank, const int64_t *dims, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? "," : "", dims[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* ------------------------------------------------------------ building */

static char *keep(bo_case *c, char *s) {
    if (c->n_strs < (int)BO_LEN(c->strs)) c->strs[c->n_strs++] = s;
    return s;
}

/* "<prefix><a>" (b < 0) or "<prefix><a>_<b>", kept with the case. */
static char *fmt_name(bo_case *c, const char *prefix, int a, int b) {
    char buf[32];
    if (b < 0) snprintf(buf, sizeof buf, "%s%d", prefix, a);
    else snprintf(buf, sizeof buf, "%s%d_%d", prefix, a, b);
    char *s = malloc(strlen(buf) + 1);
    if (!s) exit(2);
    strcpy(s, buf);
    return keep(c, s);
}

void bo_desc(bo_case *c, const char *fmt, ...) {
    size_t o = strlen(c->desc);
    if (o + 1 >= sizeof c->desc) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->desc + o, sizeof c->desc - o, fmt, ap);
    va_end(ap);
}

void bo_opt(bo_case *c, const char *kv) {
    if (c->n_opts < BO_MAX_OPTS) c->opts[c->n_opts++] = kv;
}

void bo_variant(bo_case *c, const char *options) {
    if (c->n_variants < BO_MAX_VARIANTS) c->variants[c->n_variants++] = options;
}

void bo_xfail(bo_case *c, const char *why) {
    c->flags |= BO_XFAIL;
    c->xfail_why = why;
}

static void note_st(bo_case *c, rlx_status st, const char *what) {
    if (st && !c->st) {
        c->st = st;
        char msg[400];
        snprintf(msg, sizeof msg, "; building: %s: %s", what, rlx_last_error());
        bo_desc(c, "%s", msg);
    }
}

static bool is_subnormal(double x) { return x != 0 && fabs(x) < FLT_MIN; }

const char *bo_input(bo_case *c, rlx_tensor *t) {
    const char *name = fmt_name(c, "x", c->n_values++, -1);
    if (c->n_feed >= BO_MAX_IO) {
        note_st(c, RLX_ERR_INVALID_ARGUMENT, "too many inputs");
        rlx_tensor_destroy(t);
        return name;
    }
    note_st(c, rlx_model_add_input(c->m, name, t->dtype, t->rank, t->dims, NULL), name);
    note_st(c, rlx_model_add_input(c->mz, name, t->dtype, t->rank, t->dims, NULL), name);
    snprintf(c->feed_name[c->n_feed], sizeof c->feed_name[0], "%s", name);
    c->feed[c->n_feed++] = t;
    return name;
}

const char *bo_const(bo_case *c, rlx_tensor *t) {
    const char *name = fmt_name(c, "k", c->n_values++, -1);
    note_st(c, rlx_model_add_initializer(c->m, name, t), name);
    if (t->dtype == RLX_DTYPE_F32) {
        float *v = t->data;
        for (size_t i = 0; i < rlx_tensor_numel(t); i++)
            if (is_subnormal(v[i])) {
                v[i] = copysignf(0.0f, v[i]);
                c->konst_subnormal = true;
            }
    }
    note_st(c, rlx_model_add_initializer(c->mz, name, t), name);
    rlx_tensor_destroy(t);
    return name;
}

const char *bo_value(bo_case *c, rlx_tensor *t, bool konst) {
    if (!t) return "";
    return konst ? bo_const(c, t) : bo_input(c, t);
}

const char *bo_out_name(bo_case *c, int k) { return fmt_name(c, "n", c->n_nodes - 1, k); }

const char *bo_node(bo_case *c, const char *op, int n_in, const char *const *ins, int n_out, size_t n_attrs,
                    const rlx_attr *attrs) {
    const char *outs[BO_MAX_IO];
    int node = c->n_nodes++;
    for (int k = 0; k < n_out && k < BO_MAX_IO; k++) outs[k] = fmt_name(c, "n", node, k);
    char nm[24];
    snprintf(nm, sizeof nm, "node%d", node);
    note_st(c, rlx_model_add_node(c->m, op, nm, (size_t)n_in, ins, (size_t)n_out, outs, n_attrs, attrs), op);
    note_st(c, rlx_model_add_node(c->mz, op, nm, (size_t)n_in, ins, (size_t)n_out, outs, n_attrs, attrs), op);
    return outs[0];
}

const char *bo_transpose(bo_case *c, const char *x, int r, const int64_t *perm) {
    rlx_attr a = RLX_ATTR_IS("perm", (size_t)r, perm);
    return bo_node(c, "Transpose", 1, &x, 1, 1, &a);
}

static const int64_t k_p0213[4] = { 0, 2, 1, 3 }, k_p0231[4] = { 0, 2, 3, 1 };

void bo_heads_split(bo_case *c, rlx_dtype dt, const int64_t bhsd[5], int64_t Dv, const char **q, const char **kt,
                    const char **v) {
    int64_t B = bhsd[0], H = bhsd[1], Sq = bhsd[2], Sk = bhsd[3], D = bhsd[4];
    int64_t qd[4] = { B, Sq, H, D }, kd[4] = { B, Sk, H, D }, vd[4] = { B, Sk, H, Dv };
    *q = bo_transpose(c, bo_input(c, bo_rand(dt, 4, qd, -1, 1)), 4, k_p0213);
    *kt = bo_transpose(c, bo_input(c, bo_rand(dt, 4, kd, -1, 1)), 4, k_p0231);
    *v = bo_transpose(c, bo_input(c, bo_rand(dt, 4, vd, -1, 1)), 4, k_p0213);
}

void bo_attention_out(bo_case *c, const char *scores, const char *v, bool split) {
    rlx_attr ax = RLX_ATTR_I("axis", -1);
    const char *ins[2] = { bo_node(c, "Softmax", 1, &scores, 1, 1, &ax), v };
    const char *y = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
    bo_output(c, split ? bo_transpose(c, y, 4, k_p0213) : y);
}

void bo_output(bo_case *c, const char *name) {
    note_st(c, rlx_model_add_output(c->m, name), name);
    note_st(c, rlx_model_add_output(c->mz, name), name);
    c->n_outputs++;
}

void bo_single(bo_case *c, const char *op, int n_in, rlx_tensor *const *in, const bool *konst, int n_out,
               size_t n_attrs, const rlx_attr *attrs) {
    const char *names[BO_MAX_IO];
    for (int i = 0; i < n_in && i < BO_MAX_IO; i++) names[i] = bo_value(c, in[i], konst && konst[i]);
    bo_node(c, op, n_in, names, n_out, n_attrs, attrs);
    for (int k = 0; k < n_out; k++) bo_output(c, bo_out_name(c, k));
}

/* ------------------------------------------------------------ selection */

/* --op: names separated by commas, each exact or a prefix ending in '*'. */
static bool op_selected(const bo_ctx *ctx, const char *name) {
    const char *f = ctx->op_filter;
    if (!f) return true;
    for (const char *p = f; *p;) {
        size_t n = strcspn(p, ",");
        if (n && p[n - 1] == '*' ? strncmp(name, p, n - 1) == 0 : n && strlen(name) == n && strncmp(name, p, n) == 0)
            return true;
        p += n;
        if (*p == ',') p++;
    }
    return false;
}

bool bo_full(const bo_ctx *ctx) { return ctx->full; }
uint32_t bo_wg_storage(const bo_ctx *ctx) { return ctx->wg_storage; }

const char *bo_op_name(const bo_ctx *ctx) { return ctx->op->name; }

bo_case *bo_next(bo_ctx *ctx, int opset) {
    long k = ctx->case_idx++;
    if (ctx->count_mode) return NULL;
    if (ctx->only_case >= 0 && k != ctx->only_case) return NULL;
    if (ctx->every > 1 && k % ctx->every) return NULL;
    bo_case *c = &ctx->cur;
    memset(c, 0, sizeof *c);
    c->rtol = ctx->op->rtol;
    c->atol = ctx->op->atol;
    uint64_t s = ctx->seed ^ fnv1a(ctx->op->name) ^ ((uint64_t)k * 0xD1B54A32D192ED03ull);
    test_seed(splitmix(&s));
    rlx_status st = rlx_model_create(opset, &c->m);
    if (!st) st = rlx_model_create(opset, &c->mz);
    if (st) note_st(c, st, "rlx_model_create");
    return c;
}

/* ------------------------------------------------------------ comparing */

static double get_f(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_F16: return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    default: return NAN;
    }
}

static bool is_float(rlx_dtype dt) { return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F64 || dt == RLX_DTYPE_F16; }

/* Element index i of a tensor as "[a,b,c]". */
static const char *coords(const rlx_tensor *t, size_t i, char *buf, size_t cap) {
    int64_t idx[16] = { 0 };
    for (int d = t->rank - 1; d >= 0 && d < 16; d--) {
        idx[d] = t->dims[d] ? (int64_t)(i % (size_t)t->dims[d]) : 0;
        if (t->dims[d]) i /= (size_t)t->dims[d];
    }
    return bo_shape_str(t->rank, idx, buf, cap);
}

static void value_str(const rlx_tensor *t, size_t i, char *buf, size_t cap) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: case RLX_DTYPE_F64: case RLX_DTYPE_F16: snprintf(buf, cap, "%.9g", get_f(t, i)); break;
    case RLX_DTYPE_I32: snprintf(buf, cap, "%" PRId32, ((const int32_t *)t->data)[i]); break;
    case RLX_DTYPE_U32: snprintf(buf, cap, "%" PRIu32, ((const uint32_t *)t->data)[i]); break;
    case RLX_DTYPE_I64: snprintf(buf, cap, "%" PRId64, ((const int64_t *)t->data)[i]); break;
    case RLX_DTYPE_BOOL: case RLX_DTYPE_U8: snprintf(buf, cap, "%u", ((const uint8_t *)t->data)[i]); break;
    default: snprintf(buf, cap, "?"); break;
    }
}

static bool zero_or_subnormal(double x) { return fabs(x) < FLT_MIN; }

/* One float element of the GPU against the oracle's: NaN only where NaN, an
 * infinity only where the same infinity, else |a - b| <= atol + rtol |b|;
 * zeros and f32 subnormals count as equal (a flushed operand or result). */
static bool float_ok(double a, double b, double rtol, double atol, double *worst) {
    if (isnan(b) || isnan(a)) return isnan(a) && isnan(b);
    if (isinf(b) || isinf(a)) return a == b;
    if (zero_or_subnormal(a) && zero_or_subnormal(b)) return true;
    double e = fabs(a - b);
    if (e > *worst) *worst = e;
    return e <= atol + rtol * fabs(b);
}

/* BO_SAME_VALUE: both NaN (any payload), or equal with the same sign (-0
 * is not +0). */
static bool same_value(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* got against want; NULL when they agree, else a message in buf. Floats:
 * float_ok against want, or against alt (the oracle on subnormal-flushed
 * inputs; may be NULL); other dtypes: equal bytes to want or alt. WGSL lets
 * an implementation flush f32 subnormals to zero (the NVIDIA driver does,
 * lavapipe does not), so either oracle is a right answer. same (BO_SAME_VALUE):
 * floats by same_value, the tolerances unused. */
static const char *compare(const rlx_tensor *g, const rlx_tensor *w, const rlx_tensor *alt, double rtol, double atol,
                           bool same, char *buf, size_t cap) {
    char s1[64], s2[64];
    if (g->dtype != w->dtype || g->rank != w->rank || memcmp(g->dims, w->dims, sizeof(int64_t) * (size_t)g->rank)) {
        snprintf(buf, cap, "dtype/shape %s %s vs %s %s", rlx_dtype_name(g->dtype), bo_shape_str(g->rank, g->dims, s1, 64),
                 rlx_dtype_name(w->dtype), bo_shape_str(w->rank, w->dims, s2, 64));
        return buf;
    }
    size_t n = rlx_tensor_numel(g), bad = 0, first = 0;
    double worst = 0;
    size_t es = (size_t)rlx_dtype_size(g->dtype);
    for (size_t i = 0; i < n; i++) {
        bool ok;
        if (is_float(g->dtype) && same) {
            double a = get_f(g, i);
            ok = same_value(a, get_f(w, i)) || (alt && same_value(a, get_f(alt, i)));
        } else if (is_float(g->dtype)) {
            double a = get_f(g, i);
            ok = float_ok(a, get_f(w, i), rtol, atol, &worst);
            if (!ok && alt) ok = float_ok(a, get_f(alt, i), rtol, atol, &worst);
        } else {
            const char *ge = (const char *)g->data + i * es;
            ok = memcmp(ge, (const char *)w->data + i * es, es) == 0 ||
                 (alt && memcmp(ge, (const char *)alt->data + i * es, es) == 0);
        }
        if (!ok && bad++ == 0) first = i;
    }
    if (!bad) return NULL;
    char gv[48], wv[48], at[64];
    value_str(g, first, gv, sizeof gv);
    value_str(w, first, wv, sizeof wv);
    if (same && is_float(g->dtype))
        snprintf(buf, cap, "%zu of %zu elements differ (first %s: gpu %s vs cpu %s; the same value, NaN-ness and sign of "
                 "zero wanted)", bad, n, coords(g, first, at, sizeof at), gv, wv);
    else
        snprintf(buf, cap, "%zu of %zu elements differ (first %s: gpu %s vs cpu %s; max abs diff %.3g; rtol %g atol %g)",
                 bad, n, coords(g, first, at, sizeof at), gv, wv, worst, rtol, atol);
    return buf;
}

/* Two elements of dtype dt (es bytes each) are the same: equal bits, or
 * both NaN. IEEE 754 leaves the sign and payload of a NaN that an
 * operation makes open, and compilers keep or flip them: llvmpipe on an
 * Intel host gives nan and -nan for one kernel compiled with and without
 * runtime checks. Every other bit, -0 against +0 too, must match. */
static bool same_elem(rlx_dtype dt, size_t es, const void *pa, const void *pb) {
    if (memcmp(pa, pb, es) == 0) return true;
    if (dt == RLX_DTYPE_F32) {
        float x, y;
        memcpy(&x, pa, 4);
        memcpy(&y, pb, 4);
        return isnan(x) && isnan(y);
    }
    if (dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16) {
        uint16_t x, y, e = dt == RLX_DTYPE_F16 ? 0x7c00 : 0x7f80;
        memcpy(&x, pa, 2);
        memcpy(&y, pb, 2);
        return (x & e) == e && (x & (uint16_t)~e & 0x7fff) && (y & e) == e && (y & (uint16_t)~e & 0x7fff);
    }
    return false;
}

/* The outputs match element by element (same_elem). */
static bool same_bits(const rlx_tensor *a, const rlx_tensor *b) {
    if (a->nbytes != b->nbytes || a->dtype != b->dtype) return false;
    if (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0) return true;
    size_t es = rlx_dtype_size(a->dtype), n = es ? a->nbytes / es : 0;
    for (size_t i = 0; i < n; i++)
        if (!same_elem(a->dtype, es, (const char *)a->data + i * es, (const char *)b->data + i * es)) return false;
    return true;
}

/* ------------------------------------------------------------ running */

typedef struct outs_t {
    rlx_tensor **t;
    size_t n;
} outs_t;

static void outs_free(outs_t *o) {
    for (size_t i = 0; o->t && i < o->n; i++) rlx_tensor_destroy(o->t[i]);
    free(o->t);
    o->t = NULL;
    o->n = 0;
}

/* --checks MODE: gpu.runtime_checks of the GPU sessions (NULL: the
 * default or RLX_GPU_RUNTIME_CHECKS); each case then also runs on a GPU
 * session with every module checked, which must give the same bits. */
static const char *g_checks;

/* --variant OPTS (repeatable): every case also runs on a GPU session with
 * these options added (bo_variant), which must give the same bits. */
static const char *g_variants[BO_MAX_VARIANTS];
static int g_n_variants;

/* A session on device with the passes in `off` disabled (NULL: all on),
 * the case's GPU options, then `extra` ("key=value" separated by spaces;
 * NULL: none), and poison on the GPU; `checks` (NULL: g_checks) is its
 * gpu.runtime_checks. */
static rlx_status open_model_session_opts(const bo_case *c, rlx_model *m, const char *device, const char *off,
                                          const char *checks, const char *extra, rlx_session **s) {
    rlx_options *o = NULL;
    rlx_status st = rlx_options_create(&o);
    if (!st && off) st = rlx_options_set(o, "passes.disable", off);
    bool gpu = strncmp(device, "gpu", 3) == 0;
    if (!st && gpu) st = rlx_options_set(o, "gpu.poison", "1");
    /* the CPU sessions (the oracle, the fused CPU plan) keep 3x3 convolutions
     * off Winograd: its transforms round differently (F(4x4) up to ~2e-6 of
     * the sum of |products|, more than a GEMM's order) and have their own
     * tolerance tests (tests/test_cpu_conv_fast.c) */
    if (!st && !gpu) st = rlx_options_set(o, "cpu.winograd", "0");
    if (!checks) checks = g_checks;
    if (!st && gpu && checks) st = rlx_options_set(o, "gpu.runtime_checks", checks);
    for (int i = 0; !st && gpu && i < c->n_opts; i++) st = rlx_options_parse(o, c->opts[i]);
    for (const char *p = extra; !st && gpu && p && *p;) {
        char kv[128];
        size_t n = strcspn(p, " ");
        if (n >= sizeof kv) n = sizeof kv - 1;
        memcpy(kv, p, n);
        kv[n] = '\0';
        if (n) st = rlx_options_parse(o, kv);
        p += strcspn(p, " ");
        p += strspn(p, " ");
    }
    rlx_session_options so = { .device = device };
    if (!st) st = rlx_session_create_with_options(m, &so, o, s);
    rlx_options_destroy(o);
    return st;
}

static rlx_status open_model_session_checks(const bo_case *c, rlx_model *m, const char *device, const char *off,
                                            const char *checks, rlx_session **s) {
    return open_model_session_opts(c, m, device, off, checks, NULL, s);
}

static rlx_status open_model_session(const bo_case *c, rlx_model *m, const char *device, const char *off,
                                     rlx_session **s) {
    return open_model_session_checks(c, m, device, off, NULL, s);
}

static rlx_status open_session(const bo_case *c, const char *device, const char *off, rlx_session **s) {
    return open_model_session(c, c->m, device, off, s);
}


static rlx_status run_once(const bo_case *c, rlx_session *s, outs_t *o) {
    const char *names[BO_MAX_IO];
    const rlx_tensor *feeds[BO_MAX_IO];
    for (int i = 0; i < c->n_feed; i++) {
        names[i] = c->feed_name[i];
        feeds[i] = c->feed[i];
    }
    return rlx_session_run(s, (size_t)c->n_feed, names, feeds, &o->t, &o->n);
}

/* The plan ran every step on the GPU (views excepted) and `want` is one of
 * them; NULL, else why not in buf. */
static const char *check_plan(const rlx_session *s, const char *want, unsigned flags, char *buf, size_t cap) {
    bool fallback_ok = flags & BO_FALLBACK_OK, view_ok = flags & BO_VIEW_OK;
    rlx_plan_info pi;
    if (rlx_session_plan_info(s, &pi) != RLX_OK) {
        snprintf(buf, cap, "no static plan: %s", rlx_last_error());
        return buf;
    }
    bool found = want == NULL || !*want;
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < pi.n_steps; k++) {
        rlx_plan_step ps;
        if (rlx_session_plan_step(s, k, &ps) != RLX_OK) continue;
        char q[96];
        if (ps.domain && *ps.domain) snprintf(q, sizeof q, "%s.%s", ps.domain, ps.op);
        else snprintf(q, sizeof q, "%s", ps.op);
        bool on_gpu = ps.device == RLX_STEP_DEVICE_GPU || (view_ok && ps.device == RLX_STEP_DEVICE_VIEW);
        if (on_gpu && want && strcmp(q, want) == 0) found = true;
        if (ps.device == RLX_STEP_DEVICE_CPU && !fallback_ok && o < cap)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s fell back to the CPU", o ? "; " : "", q);
    }
    if (!found && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s did not run on the GPU (folded, fused or declined)", o ? "; " : "",
                              want);
    return o ? buf : NULL;
}

/* Steps of the last plan that do work (not views); -1 without a plan. */
static long work_steps(const rlx_session *s) {
    rlx_plan_info pi;
    if (rlx_session_plan_info(s, &pi) != RLX_OK) return -1;
    return (long)(pi.n_steps - pi.n_steps_view);
}

static void print_repro(const bo_ctx *ctx, long k) {
    fprintf(stderr, "  repro: %s --op %s --case %ld --seed %" PRIu64 "%s%s%s", ctx->prog, ctx->op->name, k,
            ctx->seed, ctx->full ? " --full" : "", g_checks ? " --checks " : "", g_checks ? g_checks : "");
    for (int i = 0; i < g_n_variants; i++) fprintf(stderr, " --variant '%s'", g_variants[i]);
    fprintf(stderr, " -v\n");
}

/* Records one problem of the case being run. */
typedef struct verdict {
    int n;
    char msg[2048];
} verdict;

static void fail(verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(verdict *v, const char *fmt, ...) {
    size_t o = strlen(v->msg);
    if (o + 4 < sizeof v->msg) {
        o += (size_t)snprintf(v->msg + o, sizeof v->msg - o, "\n    ");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg + o, sizeof v->msg - o, fmt, ap);
        va_end(ap);
    }
    v->n++;
}

/* Compares each output of a run with the oracle's (alt: the oracle on
 * subnormal-flushed inputs, or empty) as case c says (tolerances,
 * BO_SAME_VALUE). */
static void compare_all(verdict *v, const char *what, const outs_t *got, const outs_t *want, const outs_t *alt,
                        const bo_case *c) {
    char buf[512];
    if (got->n != want->n) {
        fail(v, "%s: %zu outputs, the oracle %zu", what, got->n, want->n);
        return;
    }
    for (size_t i = 0; i < got->n; i++) {
        const rlx_tensor *a = alt && i < alt->n ? alt->t[i] : NULL;
        const char *m = compare(got->t[i], want->t[i], a, c->rtol, c->atol, c->flags & BO_SAME_VALUE, buf, sizeof buf);
        if (m) fail(v, "%s: output %zu: %s", what, i, m);
    }
}

/* The oracle again with every f32 subnormal of the feeds and the
 * initializers flushed to a zero of its sign (WGSL lets an implementation
 * flush any subnormal operand, a constant's as a fed one's), into o; s is
 * the oracle's session, used when no initializer holds a subnormal. Leaves
 * o empty when neither holds one. */
static rlx_status run_flushed(bo_case *c, rlx_session *s, outs_t *o) {
    rlx_tensor *orig[BO_MAX_IO];
    bool any = false;
    rlx_status st = RLX_OK;
    for (int i = 0; i < c->n_feed; i++) {
        orig[i] = c->feed[i];
        if (orig[i]->dtype != RLX_DTYPE_F32) continue;
        float *v = orig[i]->data;
        size_t n = rlx_tensor_numel(orig[i]), k = 0;
        while (k < n && !is_subnormal(v[k])) k++;
        if (k == n) continue;
        rlx_tensor *t = bo_tensor(RLX_DTYPE_F32, orig[i]->rank, orig[i]->dims, orig[i]->data);
        float *f = t->data;
        for (size_t j = 0; j < n; j++)
            if (is_subnormal(f[j])) f[j] = copysignf(0.0f, f[j]);
        c->feed[i] = t;
        any = true;
    }
    rlx_session *sz = NULL;
    if (c->konst_subnormal) {
        st = rlx_model_finish(c->mz);
        if (!st) st = open_model_session(c, c->mz, "cpu", k_all_passes, &sz);
        if (!st) st = run_once(c, sz, o);
    } else if (any) {
        st = run_once(c, s, o);
    }
    rlx_session_destroy(sz);
    for (int i = 0; i < c->n_feed; i++) {
        if (c->feed[i] != orig[i]) rlx_tensor_destroy(c->feed[i]);
        c->feed[i] = orig[i];
    }
    return st;
}

static size_t count_nan(const rlx_tensor *t) {
    size_t k = 0, n = rlx_tensor_numel(t);
    if (t->dtype != RLX_DTYPE_F32) return 0;
    for (size_t i = 0; i < n; i++) k += isnan(((const float *)t->data)[i]) != 0;
    return k;
}

void bo_nan_windows(bo_case *c, int sr, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb) {
    c->nan_windows = true;
    c->nan_sr = sr;
    for (int j = 0; j < sr; j++)
        c->nan_k[j] = k[j], c->nan_s[j] = s[j], c->nan_d[j] = d ? d[j] : 1, c->nan_pb[j] = pb[j];
}

static bool elem_is_nan(const rlx_tensor *t, size_t i) {
    if (t->dtype == RLX_DTYPE_F16) return isnan(rlx_f16_to_f32(((const uint16_t *)t->data)[i]));
    return isnan(((const float *)t->data)[i]);
}

/* bo_nan_windows: the oracle's output 0 against its windows' NaNs. */
static void check_nan_windows(verdict *v, const bo_case *c, const outs_t *ref) {
    const rlx_tensor *x = c->feed[0], *y = ref->t[0];
    int sr = c->nan_sr;
    if (x->rank != 2 + sr || y->rank != 2 + sr || (y->dtype != RLX_DTYPE_F32 && y->dtype != RLX_DTYPE_F16)) {
        fail(v, "bo_nan_windows: ranks %d and %d for %d spatial axes (a generator bug)", x->rank, y->rank, sr);
        return;
    }
    int64_t in[3] = { 1, 1, 1 }, out[3] = { 1, 1, 1 }, k[3] = { 1, 1, 1 }, s[3] = { 1, 1, 1 }, d[3] = { 1, 1, 1 },
            pb[3] = { 0, 0, 0 };
    for (int j = 0; j < sr; j++) { /* the leading axes of a 1-D or 2-D pool of extent 1 */
        int a = 3 - sr + j;
        in[a] = x->dims[2 + j], out[a] = y->dims[2 + j];
        k[a] = c->nan_k[j], s[a] = c->nan_s[j], d[a] = c->nan_d[j], pb[a] = c->nan_pb[j];
    }
    int64_t planes = y->dims[0] * y->dims[1], isp = in[0] * in[1] * in[2], osp = out[0] * out[1] * out[2];
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t o = 0; o < osp; o++) {
            int64_t oc[3] = { o / (out[1] * out[2]), o / out[2] % out[1], o % out[2] };
            bool want = false;
            for (int64_t t = 0; t < k[0] * k[1] * k[2] && !want; t++) {
                int64_t tc[3] = { t / (k[1] * k[2]), t / k[2] % k[1], t % k[2] }, at = 0;
                bool inside = true;
                for (int a = 0; a < 3; a++) {
                    int64_t q = oc[a] * s[a] - pb[a] + tc[a] * d[a];
                    inside &= q >= 0 && q < in[a];
                    at = at * in[a] + q;
                }
                want = inside && elem_is_nan(x, (size_t)(pl * isp + at));
            }
            if (want != elem_is_nan(y, (size_t)(pl * osp + o))) {
                fail(v, "cpu: plane %" PRId64 ", output %" PRId64 ": %s (NaN propagates: NaN exactly where the window "
                     "holds one)", pl, o, want ? "the window holds a NaN, the output is not NaN" : "NaN without a NaN in the window");
                return;
            }
        }
}

/* The oracle's NaN positions against the case's BO_KEEPS_NAN and
 * BO_SPREADS_NAN (the GPU is compared with the oracle afterwards). */
static void check_nan_flags(verdict *v, const bo_case *c, const outs_t *ref) {
    if (c->nan_windows && c->n_feed >= 1 && ref->n >= 1) check_nan_windows(v, c, ref);
    if (!(c->flags & (BO_KEEPS_NAN | BO_SPREADS_NAN)) || c->n_feed < 1 || ref->n < 1) return;
    const rlx_tensor *x = c->feed[0], *y = ref->t[0];
    if (x->dtype != RLX_DTYPE_F32 || y->dtype != RLX_DTYPE_F32 || !count_nan(x)) return;
    if (c->flags & BO_SPREADS_NAN) {
        if (!count_nan(y)) fail(v, "cpu: feed 0 holds %zu NaN, the output none (NaN dropped)", count_nan(x));
        return;
    }
    size_t n = rlx_tensor_numel(x);
    if (rlx_tensor_numel(y) != n) {
        fail(v, "BO_KEEPS_NAN: the output has %zu elements, feed 0 %zu (a generator bug)", rlx_tensor_numel(y), n);
        return;
    }
    const float *a = x->data, *b = y->data;
    for (size_t i = 0; i < n; i++)
        if (isnan(a[i]) && !isnan(b[i])) {
            fail(v, "cpu: element %zu: NaN in, %g out (NaN dropped)", i, (double)b[i]);
            return;
        }
}

/* The first element at which two outputs differ in bits, as text. */
static void first_difference(const rlx_tensor *a, const rlx_tensor *b, char *buf, size_t cap) {
    if (a->nbytes != b->nbytes || a->dtype != b->dtype) {
        snprintf(buf, cap, "%zu bytes against %zu", a->nbytes, b->nbytes);
        return;
    }
    size_t es = rlx_dtype_size(a->dtype), n = es ? a->nbytes / es : 0;
    for (size_t i = 0; i < n; i++)
        if (!same_elem(a->dtype, es, (const char *)a->data + i * es, (const char *)b->data + i * es)) {
            if (a->dtype == RLX_DTYPE_F32)
                snprintf(buf, cap, "first at element %zu: %.9g against %.9g", i, (double)((const float *)a->data)[i],
                         (double)((const float *)b->data)[i]);
            else if (a->dtype == RLX_DTYPE_F16)
                snprintf(buf, cap, "first at element %zu: %.5g against %.5g", i,
                         (double)rlx_f16_to_f32(((const uint16_t *)a->data)[i]),
                         (double)rlx_f16_to_f32(((const uint16_t *)b->data)[i]));
            else snprintf(buf, cap, "first at element %zu", i);
            return;
        }
    snprintf(buf, cap, "no element differs");
}

/* --checks: the plan of sg took the shader path its mode asks for (off:
 * every pipeline unchecked, on: none, where the WebGPU library has the
 * trusted entry point), and a session with every module checked gives
 * the bits of g1. */
static void check_runtime_checks(verdict *v, const bo_case *c, rlx_session *sg, const outs_t *g1, bool unfused) {
    rlx_session_stats ss;
    if (rlx_session_get_stats(sg, &ss) == RLX_OK && ss.has_exe_stats && ss.runtime_checks_note &&
        !strstr(ss.runtime_checks_note, "has no wgpuDeviceCreateShaderModuleTrusted")) {
        size_t n = ss.n_pipelines_new + ss.n_pipelines_reused;
        if (strcmp(g_checks, "off") == 0 && ss.n_pipelines_unchecked != n)
            fail(v, "gpu.runtime_checks=off: %s", ss.runtime_checks_note);
        if (strcmp(g_checks, "on") == 0 && ss.n_pipelines_unchecked)
            fail(v, "gpu.runtime_checks=on: %s", ss.runtime_checks_note);
    }
    if (c->flags & BO_NO_BITS) return;
    rlx_session *sc = NULL;
    outs_t gc = { 0 };
    rlx_status st = open_model_session_checks(c, c->m, "gpu", unfused ? k_all_passes : NULL, "on", &sc);
    if (!st) st = run_once(c, sc, &gc);
    if (st) fail(v, "gpu, gpu.runtime_checks=on: %s", rlx_last_error());
    for (size_t i = 0; !st && i < g1->n && i < gc.n; i++)
        if (!same_bits(g1->t[i], gc.t[i])) {
            char buf[256];
            first_difference(g1->t[i], gc.t[i], buf, sizeof buf);
            fail(v, "output %zu: gpu.runtime_checks=%s and =on differ in bits (%s)", i, g_checks, buf);
        }
    outs_free(&gc);
    rlx_session_destroy(sc);
}

/* Each variant of the case (bo_variant, then --variant): a GPU session
 * with its options added runs every step on the GPU and gives the bits of
 * g1 (the case's GPU run; unfused: with the passes off, as g1 was). */
static void check_variants(verdict *v, const bo_case *c, const char *want_op, const outs_t *g1, bool unfused) {
    for (int k = 0; k < c->n_variants + g_n_variants; k++) {
        const char *var = k < c->n_variants ? c->variants[k] : g_variants[k - c->n_variants];
        rlx_session *sv = NULL;
        outs_t gv = { 0 };
        char buf[512];
        rlx_status st = open_model_session_opts(c, c->m, "gpu", unfused ? k_all_passes : NULL, NULL, var, &sv);
        if (!st) st = run_once(c, sv, &gv);
        if (st) {
            fail(v, "gpu, variant %s: %s", var, rlx_last_error());
        } else {
            const char *pm = check_plan(sv, want_op, c->flags, buf, sizeof buf);
            if (pm) fail(v, "gpu plan, variant %s: %s", var, pm);
            if (gv.n != g1->n) fail(v, "variant %s: %zu outputs, the case's GPU run %zu", var, gv.n, g1->n);
            for (size_t i = 0; i < g1->n && i < gv.n; i++)
                if (!same_bits(g1->t[i], gv.t[i])) {
                    first_difference(gv.t[i], g1->t[i], buf, sizeof buf);
                    fail(v, "output %zu: variant %s and the case's GPU run differ in bits (%s)", i, var, buf);
                }
        }
        outs_free(&gv);
        rlx_session_destroy(sv);
    }
}

void bo_run(bo_ctx *ctx, bo_case *c) {
    long k = ctx->case_idx - 1;
    verdict v = { 0, "" };
    char buf[512];
    const char *want_op = c->expect_op ? c->expect_op : c->fused ? c->fused : ctx->op->name;
    if (strncmp(want_op, "fuse:", 5) == 0) want_op = NULL;
    double t0 = rlx_now_seconds();
    outs_t ref = { 0 }, ftz = { 0 }, g1 = { 0 }, g2 = { 0 }, gu = { 0 }, cf = { 0 };
    rlx_session *sc = NULL, *sg = NULL;
    if (c->st) fail(&v, "the case could not be built (a generator bug)");
    else if (rlx_model_finish(c->m) != RLX_OK) fail(&v, "rlx_model_finish: %s (a generator bug)", rlx_last_error());
    bool expect_err = c->flags & BO_EXPECT_ERROR;
    if (!v.n) {
        /* the oracle: CPU, unfused */
        rlx_status st = open_session(c, "cpu", k_all_passes, &sc);
        if (!st) st = run_once(c, sc, &ref);
        if (!st && !expect_err && run_flushed(c, sc, &ftz)) fail(&v, "cpu, subnormals flushed: %s", rlx_last_error());
        if (expect_err && !st) fail(&v, "cpu: the run succeeded, an error was expected");
        else if (!expect_err && st) fail(&v, "cpu: %s", rlx_last_error());
        if (!expect_err && !st) check_nan_flags(&v, c, &ref);
        if (!expect_err && !st && c->fused) {
            /* the CPU with the passes on also meets the oracle */
            rlx_session *sf = NULL;
            st = open_session(c, "cpu", NULL, &sf);
            if (!st) st = run_once(c, sf, &cf);
            if (st) fail(&v, "cpu fused: %s", rlx_last_error());
            else compare_all(&v, "cpu fused vs cpu unfused", &cf, &ref, NULL, c);
            rlx_session_destroy(sf);
        }
    }
    if (!v.n) {
        rlx_status st = open_session(c, "gpu", c->fused ? NULL : k_all_passes, &sg);
        if (st) fail(&v, "gpu session: %s", rlx_last_error());
        if (!st) {
            st = run_once(c, sg, &g1);
            if (expect_err) {
                if (!st) fail(&v, "gpu: the run succeeded, an error was expected");
                else if (!strstr(rlx_last_error(), "node")) fail(&v, "gpu: the error names no node: %s", rlx_last_error());
            } else if (st) {
                fail(&v, "gpu: %s", rlx_last_error());
            }
        }
        if (!st && !expect_err) {
            const char *pm = check_plan(sg, want_op, c->flags, buf, sizeof buf);
            if (pm) fail(&v, "gpu plan: %s", pm);
            compare_all(&v, c->fused ? "gpu fused vs cpu" : "gpu vs cpu", &g1, &ref, &ftz, c);
            /* determinism: a second run gives the same bits */
            st = run_once(c, sg, &g2);
            if (st) fail(&v, "gpu second run: %s", rlx_last_error());
            else if (!(c->flags & BO_NO_BITS))
                for (size_t i = 0; i < g1.n && i < g2.n; i++)
                    if (!same_bits(g1.t[i], g2.t[i])) fail(&v, "output %zu: two gpu runs differ in bits", i);
            if (g_checks) check_runtime_checks(&v, c, sg, &g1, !c->fused);
            if (!(c->flags & BO_NO_BITS)) check_variants(&v, c, want_op, &g1, !c->fused);
        }
        if (!v.n && c->fused && !expect_err) {
            rlx_session *su = NULL;
            st = open_session(c, "gpu", k_all_passes, &su);
            if (!st) st = run_once(c, su, &gu);
            if (st) fail(&v, "gpu unfused: %s", rlx_last_error());
            else compare_all(&v, "gpu unfused vs cpu", &gu, &ref, &ftz, c);
            /* the passes fused something: fewer steps than the unfused plan */
            long nf = work_steps(sg), nu = work_steps(su);
            if (!st && !(nf >= 0 && nf < nu)) fail(&v, "the fused plan has %ld steps, the unfused one %ld: nothing fused", nf, nu);
            rlx_session_destroy(su);
        }
    }
    double dt = rlx_now_seconds() - t0;
    ctx->n_run++;
    ctx->total++;
    bool xf = (c->flags & BO_XFAIL) && !ctx->full;
    if (v.n && xf) {
        ctx->xfailed++;
        if (ctx->verbose)
            fprintf(stderr, "XFAIL %s case %ld (%s): %s%s\n", ctx->op->name, k, c->xfail_why, c->desc, v.msg);
    } else if (v.n) {
        ctx->failed++;
        ctx->op_failed++;
        fprintf(stderr, "FAIL %s case %ld: %s%s\n", ctx->op->name, k, c->desc, v.msg);
        print_repro(ctx, k);
    } else if (xf) {
        ctx->xpassed++;
        if (ctx->verbose)
            fprintf(stderr, "XPASS %s case %ld (marked: %s; remove the mark): %s\n", ctx->op->name, k, c->xfail_why,
                c->desc);
    } else if (ctx->verbose) {
        fprintf(stderr, "ok   %s case %ld (%.3f s): %s\n", ctx->op->name, k, dt, c->desc);
    }
    outs_free(&ref);
    outs_free(&ftz);
    outs_free(&g1);
    outs_free(&g2);
    outs_free(&gu);
    outs_free(&cf);
    rlx_session_destroy(sc);
    rlx_session_destroy(sg);
    rlx_model_destroy(c->m);
    rlx_model_destroy(c->mz);
    for (int i = 0; i < c->n_feed; i++) rlx_tensor_destroy(c->feed[i]);
    for (int i = 0; i < c->n_strs; i++) free(c->strs[i]);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ main */

static long count_cases(bo_ctx *ctx, const bo_op *op, bool full) {
    bool save_full = ctx->full, save_mode = ctx->count_mode;
    ctx->full = full;
    ctx->count_mode = true;
    ctx->op = op;
    ctx->case_idx = 0;
    op->gen(ctx, op->arg);
    ctx->full = save_full;
    ctx->count_mode = save_mode;
    return ctx->case_idx;
}

/* Whether some generator is registered under `name`. */
static bool has_generator(const char *name) {
    for (size_t f = 0; f < BO_LEN(k_families); f++)
        for (size_t i = 0; i < k_families[f]->n_ops; i++)
            if (strcmp(k_families[f]->ops[i].name, name) == 0) return true;
    return false;
}

/* Prints the lowered ops without a generator; their number. */
static int coverage_gaps(bool print) {
    int gaps = 0;
    for (size_t i = 0; i < rlx_op_catalog_count(); i++) {
        rlx_op_info info;
        if (rlx_op_catalog_get(i, &info) != RLX_OK || !info.webgpu) continue;
        char q[96];
        if (info.domain && *info.domain) snprintf(q, sizeof q, "%s.%s", info.domain, info.name);
        else snprintf(q, sizeof q, "%s", info.name);
        if (has_generator(q)) continue;
        if (print) fprintf(stderr, "%scoverage gap: %s has a WebGPU lowering but no generator", gaps ? "\n" : "", q);
        gaps++;
    }
    if (print && gaps) fputc('\n', stderr);
    return gaps;
}

static void usage(const char *prog) {
    printf("usage: %s [--op NAME] [--case K] [--every N] [--seed S] [--full] [--checks MODE] [--variant OPTS]...\n"
           "       [--list [--count]] [-v]\n"
           "Runs every op with a WebGPU lowering, and every fusion pattern, on the GPU and on the CPU\n"
           "(the oracle) over generated cases, and compares them (docs/backend-ops.md).\n"
           "  --op NAME   only this op (\"Pad\", \"rlx.Attention\", \"fuse:...\"); NAME* is a prefix;\n"
           "              several separated by commas (\"MatMul,Gemm,Conv\")\n"
           "  --checks M  GPU sessions with gpu.runtime_checks=M (auto, on, off); every case also runs\n"
           "              with every shader module checked and must give the same bits, and off (on)\n"
           "              must have created every (no) pipeline without runtime checks\n"
           "  --variant OPTS  every case also runs on a GPU session with these options added\n"
           "              (\"key=value\", several separated by spaces; repeatable) and must give the\n"
           "              same bits as its GPU run (e.g. --variant gpu.gemm_pipeline=double)\n"
           "  --case K    only case K of the op (the numbers a failure prints)\n"
           "  --every N   only the cases whose number is a multiple of N (a sample of each op)\n"
           "  --seed S    seed of the inputs (default 1); each case's inputs depend on S, the op and K\n"
           "  --full      the full sweep (thousands of cases) instead of the quick one\n"
           "  --list      list the generators (op, family, tolerance) and exit\n"
           "  --count     with --list: the number of cases, quick and full (a Markdown table)\n"
           "  -v          print every case and per-op times\n",
           prog);
}

int main(int argc, char **argv) {
    bo_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.prog = argv[0];
    ctx.only_case = -1;
    ctx.seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--op") == 0 && i + 1 < argc) ctx.op_filter = argv[++i];
        else if (strcmp(a, "--case") == 0 && i + 1 < argc) ctx.only_case = strtol(argv[++i], NULL, 10);
        else if (strcmp(a, "--seed") == 0 && i + 1 < argc) ctx.seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(a, "--full") == 0) ctx.full = true;
        else if (strcmp(a, "--every") == 0 && i + 1 < argc) ctx.every = strtol(argv[++i], NULL, 10);
        else if (strcmp(a, "--checks") == 0 && i + 1 < argc) {
            g_checks = argv[++i];
            if (strcmp(g_checks, "auto") && strcmp(g_checks, "on") && strcmp(g_checks, "off")) {
                fprintf(stderr, "%s: --checks takes auto, on or off, not '%s'\n", argv[0], g_checks);
                return 2;
            }
        }
        else if (strcmp(a, "--variant") == 0 && i + 1 < argc) {
            if (g_n_variants == BO_MAX_VARIANTS) {
                fprintf(stderr, "%s: at most %d --variant\n", argv[0], BO_MAX_VARIANTS);
                return 2;
            }
            g_variants[g_n_variants++] = argv[++i];
        }
        else if (strcmp(a, "--list") == 0) ctx.list = true;
        else if (strcmp(a, "--count") == 0) ctx.count = true;
        else if (strcmp(a, "-v") == 0) ctx.verbose = true;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (--help)\n", argv[0], a);
            return 2;
        }
    }
    if (ctx.only_case >= 0 && !ctx.op_filter) {
        fprintf(stderr, "%s: --case needs --op\n", argv[0]);
        return 2;
    }
    if (ctx.list) {
        long tq = 0, tf = 0;
        if (ctx.count) printf("| op | family | quick | full | rtol | atol | tolerance: why |\n|---|---|---:|---:|---:|---:|---|\n");
        for (size_t f = 0; f < BO_LEN(k_families); f++)
            for (size_t i = 0; i < k_families[f]->n_ops; i++) {
                const bo_op *op = &k_families[f]->ops[i];
                if (!op_selected(&ctx, op->name)) continue;
                if (ctx.count) {
                    long q = count_cases(&ctx, op, false), fu = count_cases(&ctx, op, true);
                    tq += q;
                    tf += fu;
                    printf("| %s | %s | %ld | %ld | %g | %g | %s |\n", op->name, k_families[f]->name, q, fu, op->rtol,
                           op->atol, op->tol_why ? op->tol_why : "");
                } else {
                    printf("%-36s %-12s rtol %-8g atol %-8g\n", op->name, k_families[f]->name, op->rtol, op->atol);
                }
            }
        if (ctx.count) printf("| **total** | | %ld | %ld | | | |\n", tq, tf);
        coverage_gaps(true);
        return 0;
    }

    fprintf(stderr, "test_backend_ops: seed %" PRIu64 " (--seed S to change), %s sweep\n", ctx.seed,
            ctx.full ? "full" : "quick");
    rlx_adapter_info *ad = NULL;
    size_t n_ad = 0;
    if (rlx_adapters_list(&ad, &n_ad) != RLX_OK) n_ad = 0;
    if (n_ad) fprintf(stderr, "GPU: %s\n", ad[0].name);
    if (n_ad) ctx.wg_storage = ad[0].max_compute_workgroup_storage_size;
    free(ad);
    if (!n_ad) {
        const char *req = getenv("RLX_TEST_REQUIRE_GPU");
        fprintf(stderr, "test_backend_ops: no GPU adapter%s\n", req && *req && strcmp(req, "0") ? " (required)" : "; skipped");
        return req && *req && strcmp(req, "0") ? 1 : 0;
    }
    double t_all = rlx_now_seconds();
    long n_ops = 0;
    for (size_t f = 0; f < BO_LEN(k_families); f++)
        for (size_t i = 0; i < k_families[f]->n_ops; i++) {
            const bo_op *op = &k_families[f]->ops[i];
            if (!op_selected(&ctx, op->name)) continue;
            ctx.op = op;
            ctx.case_idx = 0;
            ctx.n_run = 0;
            ctx.op_failed = 0;
            double t0 = rlx_now_seconds();
            op->gen(&ctx, op->arg);
            n_ops++;
            if (ctx.verbose || ctx.op_failed)
                fprintf(stderr, "%-36s %4ld cases %3ld failed %7.2f s\n", op->name, ctx.n_run, ctx.op_failed,
                        rlx_now_seconds() - t0);
        }
    int gaps = ctx.op_filter ? 0 : coverage_gaps(true);
    fprintf(stderr,
            "test_backend_ops: %ld ops, %ld cases, %ld failed, %ld expected failures, %ld marked cases passed, "
            "%d coverage gaps; %.1f s (seed %" PRIu64 ")\n",
            n_ops, ctx.total, ctx.failed, ctx.xfailed, ctx.xpassed, gaps, rlx_now_seconds() - t_all, ctx.seed);
    if (ctx.op_filter && n_ops == 0) {
        fprintf(stderr, "test_backend_ops: no generator matches --op %s (--list)\n", ctx.op_filter);
        return 1;
    }
    int faults = test_internal_faults();
    return ctx.failed || gaps || faults ? 1 : 0;
}

/* ------------------------------------------------------------ shapes */

#define S(r, ...) { r, { __VA_ARGS__ } }
static const bo_shape k_quick_shapes[] = {
    S(0, 0), S(1, 1), S(1, 7), S(2, 3, 5), S(1, 257), S(3, 2, 1, 13), S(6, 2, 1, 3, 1, 2, 3), S(1, 0), S(3, 2, 0, 3),
};
static const bo_shape k_full_shapes[] = {
    S(0, 0), S(1, 1), S(1, 2), S(1, 7), S(1, 64), S(1, 65), S(1, 257), S(1, 1031), S(2, 3, 5), S(2, 1, 1),
    S(2, 17, 19), S(3, 2, 1, 13), S(4, 1, 3, 8, 8), S(4, 2, 3, 7, 11), S(5, 2, 3, 1, 5, 7),
    S(6, 2, 1, 3, 1, 2, 3), S(6, 1, 1, 1, 1, 1, 1), S(1, 0), S(3, 2, 0, 3), S(2, 0, 0),
    S(1, 65535 * 64 + 67), /* more than 65,535 workgroups of 64 */
};
#undef S

size_t bo_std_shapes(const bo_ctx *ctx, const bo_shape **out) {
    *out = ctx->full ? k_full_shapes : k_quick_shapes;
    return ctx->full ? BO_LEN(k_full_shapes) : BO_LEN(k_quick_shapes);
}

int64_t bo_numel(const bo_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->d[i];
    return n;
}

void bo_broadcast(int rank, int n, bo_shape *out, bo_shape *ins) {
    static const int64_t k_dims[] = { 1, 2, 3, 5, 7 };
    out->rank = rank;
    for (int i = 0; i < rank; i++) out->d[i] = k_dims[bo_rand_below(BO_LEN(k_dims))];
    for (int j = 0; j < n; j++) {
        /* lower rank for some inputs (numpy aligns trailing dims) */
        int r = rank;
        if (j > 0 && rank > 0 && bo_rand_below(3) == 0) r = (int)bo_rand_below((uint64_t)rank + 1);
        ins[j].rank = r;
        for (int i = 0; i < r; i++) {
            int64_t full = out->d[rank - r + i];
            ins[j].d[i] = bo_rand_below(3) == 0 ? 1 : full;
        }
    }
    /* every output dim is some input's (else the result would be smaller) */
    for (int i = 0; i < rank; i++) {
        bool hit = false;
        for (int j = 0; j < n && !hit; j++) {
            int off = rank - ins[j].rank;
            hit = i >= off && ins[j].d[i - off] == out->d[i];
        }
        if (!hit && ins[0].rank == rank) ins[0].d[i] = out->d[i];
        else if (!hit) out->d[i] = 1;
    }
}
