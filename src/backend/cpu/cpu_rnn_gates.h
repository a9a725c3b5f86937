/* The vector gate updates of the recurrent fast path (cpu_rnn.c), one
 * width per inclusion: GV_W lanes (8: AVX2 + FMA, __m256; 16: AVX-512F,
 * __m512). The includer defines GV_SFX (the function is then
 * gates_<SFX>), GV_ATTR (the target) and GV_W. Units run GV_W at a time;
 * the last, partial group is loaded and stored under a lane mask, so every
 * unit takes the same instructions wherever a slice of units starts or
 * ends: the bits of a unit do not depend on the split (lanes never mix).
 * Sigmoid and Tanh are the vocabulary's vector forms (cpu_ew_vec.h), Relu
 * a max, other activations the vocabulary's f32 function lane by lane. The
 * arithmetic is gates_scalar's with the multiply-adds fused where written
 * so below. */
#if GV_W == 8
#define GV_V __m256
#define GV_MASK __m256i
#define GV_MASK_N(n) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define GV_LD(m, ptr) _mm256_maskload_ps(ptr, m)
#define GV_ST(m, ptr, v) _mm256_maskstore_ps(ptr, m, v)
#define GV_SET1 _mm256_set1_ps
#define GV_ADD _mm256_add_ps
#define GV_SUB _mm256_sub_ps
#define GV_MUL _mm256_mul_ps
#define GV_FMA _mm256_fmadd_ps
#define GV_MIN _mm256_min_ps
#define GV_MAX _mm256_max_ps
#define GV_STOREU _mm256_storeu_ps
#define GV_LOADU _mm256_loadu_ps
#define GV_SIGMOID rlx_ewm_sigmoid_v8
#define GV_TANH rlx_ewm_tanh_v8
#else
#define GV_V __m512
#define GV_MASK __mmask16
#define GV_MASK_N(n) ((__mmask16)((n) >= 16 ? 0xffffu : (1u << (n)) - 1u))
#define GV_LD(m, ptr) _mm512_maskz_loadu_ps(m, ptr)
#define GV_ST(m, ptr, v) _mm512_mask_storeu_ps(ptr, m, v)
#define GV_SET1 _mm512_set1_ps
#define GV_ADD _mm512_add_ps
#define GV_SUB _mm512_sub_ps
#define GV_MUL _mm512_mul_ps
#define GV_FMA _mm512_fmadd_ps
#define GV_MIN _mm512_min_ps
#define GV_MAX _mm512_max_ps
#define GV_STOREU _mm512_storeu_ps
#define GV_LOADU _mm512_loadu_ps
#define GV_SIGMOID rlx_ewm_sigmoid_v16
#define GV_TANH rlx_ewm_tanh_v16
#endif
#define GV_GLUE2(a, b) a##_##b
#define GV_GLUE(a, b) GV_GLUE2(a, b)

GV_ATTR __attribute__((always_inline)) static inline GV_V GV_GLUE(gate_act, GV_SFX)(const rlx_rnn_act *a, GV_V x) {
    switch (a->kind) {
    case RLX_EW_SIGMOID: return GV_SIGMOID(x);
    case RLX_EW_TANH: return GV_TANH(x);
    case RLX_EW_RELU: return GV_MAX(GV_SET1(0.0f), x);
    default: {
        float t[GV_W];
        GV_STOREU(t, x);
        for (int i = 0; i < GV_W; i++) t[i] = f_act(a, t[i]);
        return GV_LOADU(t);
    }
    }
}

/* The gates of units [0, n) of one batch row (gate_row); `phase` as in
 * gates_scalar. */
GV_ATTR static void GV_GLUE(gates, GV_SFX)(const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, int64_t n,
                                           const gate_row *g, int phase) {
    const float *gx = g->gx, *bs = g->bs, *gh = g->gh;
    const int64_t xs = g->xs;
    GV_V lo = GV_SET1(p->has_clip ? -p->clip : -INFINITY), hi = GV_SET1(p->has_clip ? p->clip : INFINITY);
    GV_V one = GV_SET1(1.0f);
#define V(ptr) GV_LD(m, ptr)
#define PRE(o, j) GV_ADD(GV_ADD(V(gx + (o) * xs + (j)), V(gh + (o) * n + (j))), V(bs + (o) * H + (j)))
#define CLIPV(v) (p->has_clip ? GV_MIN(hi, GV_MAX(lo, v)) : (v))
    if (p->kind == RLX_RNN_LSTM) {
        /* chunks of 4 groups in two passes: first the gates that need no
         * new cell state (independent chains: the core overlaps them),
         * then the cell state, o under peepholes and h. The same
         * operations per unit as one pass: the chunks change no bit. */
        enum { CH = 4 * GV_W };
        _Alignas(64) float tg[4][CH]; /* i, f, c; o (with peepholes its input before the cell term) */
        for (int64_t j0 = 0; j0 < n; j0 += CH) {
            int64_t e = n - j0 < CH ? n : j0 + CH;
            for (int64_t j = j0; j < e; j += GV_W) {
                GV_MASK m = GV_MASK_N(n - j);
                GV_V c = V(g->c + j), xi = PRE(0, j), xf = PRE(2, j), xo = PRE(1, j);
                if (g->pp) {
                    xi = GV_FMA(V(g->pp + j), c, xi);
                    xf = GV_FMA(V(g->pp + 2 * H + j), c, xf);
                }
                GV_V gi = GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(xi));
                GV_STOREU(tg[0] + (j - j0), gi);
                GV_STOREU(tg[1] + (j - j0), p->input_forget ? GV_SUB(one, gi)
                                                            : GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(xf)));
                GV_STOREU(tg[2] + (j - j0), GV_GLUE(gate_act, GV_SFX)(&act[1], CLIPV(PRE(3, j))));
                GV_STOREU(tg[3] + (j - j0), g->pp ? xo : GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(xo)));
            }
            for (int64_t j = j0; j < e; j += GV_W) {
                GV_MASK m = GV_MASK_N(n - j);
                GV_V c = V(g->c + j), gi = GV_LOADU(tg[0] + (j - j0)), gf = GV_LOADU(tg[1] + (j - j0));
                GV_V cn = GV_FMA(gf, c, GV_MUL(gi, GV_LOADU(tg[2] + (j - j0)))), go = GV_LOADU(tg[3] + (j - j0));
                if (g->pp) go = GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(GV_FMA(V(g->pp + H + j), cn, go)));
                GV_ST(m, g->c + j, cn);
                GV_ST(m, g->hn + j, GV_MUL(go, GV_GLUE(gate_act, GV_SFX)(&act[2], cn)));
            }
        }
        return;
    }
    for (int64_t j = 0; j < n; j += GV_W) {
        GV_MASK m = GV_MASK_N(n - j);
        switch (p->kind) {
        case RLX_RNN_SIMPLE: GV_ST(m, g->hn + j, GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(PRE(0, j)))); break;
        case RLX_RNN_GRU:
            if (phase == 0) {
                GV_V z = GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(PRE(0, j)));
                GV_V r = GV_GLUE(gate_act, GV_SFX)(&act[0], CLIPV(PRE(1, j)));
                GV_ST(m, g->z + j, z);
                GV_ST(m, g->z + n + j, r);
                GV_ST(m, g->rh + j, GV_MUL(r, V(g->hp + j)));
            } else {
                GV_V z = V(g->z + j), r = V(g->z + n + j), pre = GV_ADD(V(g->gxh + j), V(bs + 2 * H + j));
                if (p->linear_before_reset) pre = GV_FMA(r, GV_ADD(V(gh + 2 * n + j), V(g->rbh + j)), pre);
                else pre = GV_ADD(pre, GV_ADD(V(g->ghb + j), V(g->rbh + j)));
                GV_V nn = GV_GLUE(gate_act, GV_SFX)(&act[1], CLIPV(pre));
                /* (1 - z) n + z h */
                GV_ST(m, g->hn + j, GV_FMA(z, V(g->hp + j), GV_MUL(GV_SUB(one, z), nn)));
            }
            break;
        case RLX_RNN_LSTM: break; /* above */
        }
    }
#undef V
#undef PRE
#undef CLIPV
}

#undef GV_V
#undef GV_MASK
#undef GV_MASK_N
#undef GV_LD
#undef GV_ST
#undef GV_SET1
#undef GV_ADD
#undef GV_SUB
#undef GV_MUL
#undef GV_FMA
#undef GV_MIN
#undef GV_MAX
#undef GV_STOREU
#undef GV_LOADU
#undef GV_SIGMOID
#undef GV_TANH
#undef GV_GLUE2
#undef GV_GLUE
#undef GV_SFX
#undef GV_ATTR
#undef GV_W
