/* SPDX-License-Identifier: MIT */
/*
 * Instruction-set dispatch and the deterministic sin/cos of forward
 * kinematics (simd.c; the vector bodies are in simd_avx2.c and
 * simd_avx512.c, compiled for those instruction sets).
 *
 * Every vector path computes the same bits as the portable one: the
 * kernels behind it are written so (no reassociation, no contraction:
 * the build passes -ffp-contract=off), and sin/cos come from one SLEEF
 * family whose scalar and 2/4/8-lane functions agree bit for bit.  So the
 * level only decides speed; tests force each level in turn and compare
 * (docs/ARCHITECTURE.md, "Exact and fast").
 */
#ifndef REPOSE_SCENE_SIMD_H
#define REPOSE_SCENE_SIMD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The vector bodies exist: x86-64 with GCC or clang (CMakeLists.txt
 * compiles simd_avx2.c, simd_avx512.c and kin_avx2.c there). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RP_SIMD_X86 1
#endif

/* Dispatch levels, best last. */
enum { RP_SIMD_PORTABLE = 0, RP_SIMD_AVX2 = 1, RP_SIMD_AVX512 = 2 };

/* The level in force: AVX2 when the CPU has it (simd.c says why not
 * AVX-512), unless the environment variable REPOSE_SIMD (read once) says
 * portable (or 0), avx2 or avx512, or a test forced one; always capped by
 * what the CPU has. */
int rp_simd_level_(void);
/* Forces a level (capped by what the CPU has); returns the level set.  For
 * tests and benchmarks; not to be called while checks run on other
 * threads. */
int rp_simd_force_level_(int level);
/* The best level this CPU has. */
int rp_simd_best_level_(void);
/* The name of a level: "portable", "avx2", "avx512". */
const char *rp_simd_level_name_(int level);

/* The older switch of the box tests: 1 for the best level, 0 for portable. */
void rp_simd_force_(int on);
/* Whether the box tests run with AVX2 (level >= RP_SIMD_AVX2). */
int rp_simd_enabled_(void);

/* The SLEEF family behind rp_sincos_ and rp_sincos_n_: "sleef-finz-u10"
 * (deterministic, with FMA) or "sleef-cinz-u10" (deterministic, without),
 * fixed for the life of the process (see simd.c). */
const char *rp_sincos_family_(void);
/* sin and cos of x, within 1 ulp, the same bits for x wherever it is
 * computed (one value or many, any level). */
void rp_sincos_(double x, double *s, double *c);
/* s[i], c[i] = sin, cos of x[i] for i < n; the same bits as rp_sincos_. */
void rp_sincos_n_(const double *x, double *s, double *c, size_t n);

/* ---- the float32 pair filter (simd.c: the bound and its derivation) ----
 *
 * A batch of up to RP_LANES configurations of one robot, its balls' centres
 * in float relative to an origin, lane c of ball p at x[p * RP_LANES + c]
 * (and y, z).  For each pair i (balls a[i], b[i], radii summing to at most
 * r[i], a float rounded up), keep[i] gets the lanes where the pair may
 * come within `at` of touching: a lane is dropped only when the float
 * computation proves the exact distance between the balls' double centres
 * exceeds at + r[i].  at_up is `at` rounded up to a float, err is
 * rp_f32_filter_err_(R, at) for R bounding every relative coordinate and
 * every r[i].  Every level computes the same float operations in the same
 * order, so the masks are the same bits. */
#define RP_LANES 16
void rp_pairs_near_f32_(const float *x, const float *y, const float *z, const uint16_t *a,
                        const uint16_t *b, const float *r, size_t n, float at_up, float err,
                        uint32_t *keep);

/* x rounded up to a float (x finite, |x| < FLT_MAX): the conversion
 * rounds to nearest, and one step up the float line fixes a conversion
 * that went down. */
static inline float rp_f32_up_(double x)
{
    float f = (float)x;
    if (!((double)f < x))
        return f;
    if (f == 0.0f)
        return 0x1p-149f; /* the least positive float */
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits += f > 0.0f ? 1u : (uint32_t)-1; /* away from zero when positive, toward it when not */
    memcpy(&f, &bits, sizeof f);
    return f;
}
/* The largest R and |at| the bound is derived for. */
#define RP_F32_RANGE 1e15
/* The squares' allowance: 1 + 2^-21 (simd.c). */
#define RP_F32_K 1.000000476837158203125f
/* Tests only: the factor the allowance is multiplied by (1; tests set 0.5
 * and -1 to show that a smaller one drops pairs it must keep). */
extern double rp_f32_bound_scale_;
/* The filter's error allowance for coordinates and radii within R and a
 * threshold `at` (simd.c derives it), rounded up to a float.  Valid for
 * R, |at| <= RP_F32_RANGE; beyond, callers take the double filters. */
static inline float rp_f32_filter_err_(double R, double at)
{
    double e = (5.47 * R + 2.01 * fabs(at)) * 0x1p-24 * (1.0 + 0x1p-20) + 1e-20;
    return rp_f32_up_(e * rp_f32_bound_scale_);
}
/* The pair's threshold as every level computes it: keep a lane when
 * t >= 0 and its d2 <= fl(fl(t * t) * K), t = fl(fl(at_up + r) + err);
 * -1 when t < 0 (no lane is kept). */
static inline float rp_f32_pair_limit_(float at_up, float r, float err)
{
    float t = (at_up + r) + err;
    return t >= 0.0f ? (t * t) * RP_F32_K : -1.0f;
}

/* simd_avx2.c / simd_avx512.c: the vector loops of rp_sincos_n_ for n a
 * multiple of 4 / 8; fma selects the family. */
void rp_sincos_n_avx2_(const double *x, double *s, double *c, size_t n, int fma);
void rp_sincos_n_avx512_(const double *x, double *s, double *c, size_t n, int fma);
/* ... and of rp_pairs_near_f32_ (8 / 16 lanes at a time). */
void rp_pairs_near_f32_avx2_(const float *x, const float *y, const float *z, const uint16_t *a,
                             const uint16_t *b, const float *r, size_t n, float at_up, float err,
                             uint32_t *keep);
void rp_pairs_near_f32_avx512_(const float *x, const float *y, const float *z, const uint16_t *a,
                               const uint16_t *b, const float *r, size_t n, float at_up, float err,
                               uint32_t *keep);

#endif
