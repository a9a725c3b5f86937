/* The one-row product of cpu_sgemm.c (M = 1: a GEMV), one vector width
 * per inclusion. The includer defines GV_SFX (the kernels are then
 * gemv8_<SFX> and gemv1_<SFX>), GV_ATTR (the target) and RLX_VBITS (256
 * or 512, cpu_vec_tmpl.h). Each column's sum is the micro-kernels' (one
 * chain of fused multiply-adds in k order from 0, then the same update),
 * so a row computed here has the bits of the same row in any tile. */
#include "backend/cpu/cpu_vec_tmpl.h"

#define GV_GLUE2(a, b) a##_##b
#define GV_GLUE(a, b) GV_GLUE2(a, b)

/* The update of one vector of C (cpu_sgemm_kern.h's). */
GV_ATTR static inline void GV_GLUE(gv_upd, GV_SFX)(float *dst, RLX_VT acc, float alpha, float beta, int upd) {
    RLX_VT va = RLX_VSET1(alpha);
    if (upd == UPD_SET) acc = RLX_VMUL(va, acc);
    else if (upd == UPD_BETA) acc = RLX_VFMA(RLX_VSET1(beta), RLX_VLOADU(dst), RLX_VMUL(va, acc));
    else acc = RLX_VFMA(va, acc, RLX_VLOADU(dst));
    RLX_VSTOREU(dst, acc);
}

/* Eight vectors of C (c[v * W ...], v < 8) over kc steps: column vector
 * v's B values of step p at b[v] + p * bs; a[p] the row's value. Eight
 * independent chains keep the fused multiply-adds' latency covered. */
GV_ATTR static void GV_GLUE(gemv8, GV_SFX)(size_t kc, const float *a, const float *const *b, size_t bs, float *c,
                                           float alpha, float beta, int upd) {
    const float *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3], *b4 = b[4], *b5 = b[5], *b6 = b[6], *b7 = b[7];
    RLX_VT c0 = RLX_VZERO(), c1 = RLX_VZERO(), c2 = RLX_VZERO(), c3 = RLX_VZERO();
    RLX_VT c4 = RLX_VZERO(), c5 = RLX_VZERO(), c6 = RLX_VZERO(), c7 = RLX_VZERO();
#pragma GCC unroll 2
    for (size_t p = 0; p < kc; p++) {
        RLX_VT av = RLX_VSET1(a[p]);
        size_t o = p * bs;
        c0 = RLX_VFMA(av, RLX_VLOADU(b0 + o), c0);
        c1 = RLX_VFMA(av, RLX_VLOADU(b1 + o), c1);
        c2 = RLX_VFMA(av, RLX_VLOADU(b2 + o), c2);
        c3 = RLX_VFMA(av, RLX_VLOADU(b3 + o), c3);
        c4 = RLX_VFMA(av, RLX_VLOADU(b4 + o), c4);
        c5 = RLX_VFMA(av, RLX_VLOADU(b5 + o), c5);
        c6 = RLX_VFMA(av, RLX_VLOADU(b6 + o), c6);
        c7 = RLX_VFMA(av, RLX_VLOADU(b7 + o), c7);
    }
    GV_GLUE(gv_upd, GV_SFX)(c, c0, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + RLX_VW, c1, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 2 * RLX_VW, c2, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 3 * RLX_VW, c3, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 4 * RLX_VW, c4, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 5 * RLX_VW, c5, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 6 * RLX_VW, c6, alpha, beta, upd);
    GV_GLUE(gv_upd, GV_SFX)(c + 7 * RLX_VW, c7, alpha, beta, upd);
}

/* One vector of C, the same chain (the columns left after groups of 8). */
GV_ATTR static void GV_GLUE(gemv1, GV_SFX)(size_t kc, const float *a, const float *b, size_t bs, float *c, float alpha,
                                           float beta, int upd) {
    RLX_VT c0 = RLX_VZERO();
    for (size_t p = 0; p < kc; p++) c0 = RLX_VFMA(RLX_VSET1(a[p]), RLX_VLOADU(b + p * bs), c0);
    GV_GLUE(gv_upd, GV_SFX)(c, c0, alpha, beta, upd);
}

#undef GV_GLUE2
#undef GV_GLUE
#undef GV_SFX
#undef GV_ATTR
#undef RLX_VBITS
