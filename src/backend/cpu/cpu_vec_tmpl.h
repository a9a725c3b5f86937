/* The f32 intrinsics of one vector width, for kernels written once for
 * 256- and 512-bit vectors (cpu_sgemm_kern.h, cpu_nn_pw_kern.h): their
 * includer defines RLX_VBITS (256 or 512) before each inclusion; RLX_VW
 * is its lanes, RLX_VT the vector type (__m256, __m512), RLX_VOP(op) the
 * intrinsic _mm<RLX_VBITS>_<op>_ps, and the names below those the
 * kernels use (RLX_VFMA(a, b, c) = a * b + c, one rounding; RLX_VMAX(a,
 * b) = a > b ? a : b, RLX_VMIN(a, b) = a < b ? a : b). */
#ifndef RLX_BACKEND_CPU_CPU_VEC_TMPL_H
#define RLX_BACKEND_CPU_CPU_VEC_TMPL_H

#define RLX_VCAT2(a, b, c) a##b##c
#define RLX_VCAT(a, b, c) RLX_VCAT2(a, b, c)
#define RLX_VW (RLX_VBITS / 32)
#define RLX_VT RLX_VCAT(__m, RLX_VBITS, )
#define RLX_VOP(op) RLX_VCAT(_mm, RLX_VBITS, _##op##_ps)
#define RLX_VZERO RLX_VOP(setzero)
#define RLX_VSET1 RLX_VOP(set1)
#define RLX_VLOADU RLX_VOP(loadu)
#define RLX_VSTOREU RLX_VOP(storeu)
#define RLX_VADD RLX_VOP(add)
#define RLX_VMUL RLX_VOP(mul)
#define RLX_VFMA RLX_VOP(fmadd)
#define RLX_VMAX RLX_VOP(max)
#define RLX_VMIN RLX_VOP(min)

#endif
