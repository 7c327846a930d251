/* SPDX-License-Identifier: MIT */
/*
 * High-precision reference for the signed distance between spheres and
 * capsules, used by the accuracy tests.
 *
 * Everything is evaluated in ref_real: __float128 (113-bit significand) where
 * the compiler has it, long double otherwise.  Double inputs convert to
 * ref_real exactly.  The algorithm is deliberately the textbook one (Cramer's
 * rule on the 2x2 normal equations for the interior stationary point, plus
 * the four endpoint-to-segment distances) so that it shares nothing with the
 * production kernels.  Precision alone is not enough on nearly parallel axes
 * (a*c - b*b cancels to ~angle^2), so the determinant and the numerators are
 * evaluated through the Lagrange identity (det = |u x v|^2, see reference.c),
 * which keeps the relative error of the stationary point at ~2^-113 / angle.
 * A golden-section minimisation is provided as an independent cross-check.
 * No libquadmath: the square root is Newton's iteration seeded from the
 * double sqrt.
 *
 * Errors must be measured as computed - reference in ref_real, never after
 * rounding the reference to double: use ref_error_in_eps_S.
 */
#ifndef REPOSE_TEST_REFERENCE_H
#define REPOSE_TEST_REFERENCE_H

#include "repose/geometry.h"

/* The fallback is only a faithful reference where long double is IEEE quad
 * (113 significand bits, e.g. aarch64 Linux); with the x87 80-bit long double
 * the nearly parallel checks lose their meaning, and the golden-section
 * cross-check in the test fails to say so. */
#ifdef __SIZEOF_FLOAT128__
typedef __float128 ref_real;
#else
typedef long double ref_real;
#endif

/* Square root in ref_real (0 for x <= 0, NaN passes through). */
ref_real ref_sqrt(ref_real x);

/* Distance between the point p and the segment a-b (a == b allowed). */
ref_real ref_point_segment_distance(rp_vec3 p, rp_vec3 a, rp_vec3 b);

/* Distance between the segments p0-p1 and q0-q1 (degenerate ones allowed):
 * minimum of the interior stationary point (Cramer's rule, only when
 * det > 0 and both parameters lie in [0, 1]) and the four endpoint-to-segment
 * distances.  Absolute error a few 2^-113 times the largest coordinate. */
ref_real ref_segment_segment_distance(rp_vec3 p0, rp_vec3 p1, rp_vec3 q0, rp_vec3 q1);

/* Independent cross-check of ref_segment_segment_distance: golden-section
 * minimisation over the parameter of p0-p1 of the distance to q0-q1 (a convex
 * function), in ref_real.  Slow (a few hundred evaluations). */
ref_real ref_segment_segment_distance_golden(rp_vec3 p0, rp_vec3 p1, rp_vec3 q0, rp_vec3 q1);

/* Distance between the cores (centre point or axis segment) of two shapes. */
ref_real ref_shape_core_distance(const rp_shape *a, const rp_shape *b);

/* Signed distance between two shapes: core distance minus both radii. */
ref_real ref_shape_distance(const rp_shape *a, const rp_shape *b);

/* S of the accuracy contract: the largest magnitude among the pair's
 * coordinates and radii. */
double ref_scale_S(const rp_shape *a, const rp_shape *b);

/* |computed - reference| / (eps * S) with eps = 2^-52, evaluated in ref_real.
 * NaN when computed is NaN; when S == 0 it is 0 for an exact result and
 * +infinity otherwise. */
double ref_error_in_eps_S(double computed, ref_real reference, double S);

/* Splits x into hi = (double)x and lo = (double)(x - hi), for printing. */
void ref_split(ref_real x, double *hi, double *lo);

#endif /* REPOSE_TEST_REFERENCE_H */
