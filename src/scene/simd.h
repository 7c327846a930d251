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

#include <stddef.h>

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

/* simd_avx2.c / simd_avx512.c: the vector loops of rp_sincos_n_ for n a
 * multiple of 4 / 8; fma selects the family. */
void rp_sincos_n_avx2_(const double *x, double *s, double *c, size_t n, int fma);
void rp_sincos_n_avx512_(const double *x, double *s, double *c, size_t n, int fma);

#endif
