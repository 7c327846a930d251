/* SPDX-License-Identifier: MIT */
/*
 * Small inline vector helpers for the geometry kernels.  Private: the public
 * API exposes rp_vec3 only as plain data.
 */
#ifndef REPOSE_GEOMETRY_VEC_H
#define REPOSE_GEOMETRY_VEC_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "repose/geometry.h"

static inline rp_vec3 v3(double x, double y, double z)
{
    rp_vec3 r = {x, y, z};
    return r;
}

static inline rp_vec3 v3_sub(rp_vec3 a, rp_vec3 b)
{
    return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline rp_vec3 v3_scale(rp_vec3 a, double s)
{
    return v3(a.x * s, a.y * s, a.z * s);
}
static inline rp_vec3 v3_neg(rp_vec3 a)
{
    return v3(-a.x, -a.y, -a.z);
}
static inline double v3_dot(rp_vec3 a, rp_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static inline rp_vec3 v3_cross(rp_vec3 a, rp_vec3 b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

/* a + s*b, written out so the compiler may contract it consistently. */
static inline rp_vec3 v3_madd(rp_vec3 a, rp_vec3 b, double s)
{
    return v3(a.x + s * b.x, a.y + s * b.y, a.z + s * b.z);
}

static inline double v3_maxabs(rp_vec3 a)
{
    return fmax(fabs(a.x), fmax(fabs(a.y), fabs(a.z)));
}

static inline int v3_isfinite(rp_vec3 a)
{
    return isfinite(a.x) && isfinite(a.y) && isfinite(a.z);
}

static inline double max2(double a, double b)
{
    /* Not fmax: that is a libm call here, and the inputs are never NaN. */
    return a > b ? a : b;
}

static inline double max3(double a, double b, double c)
{
    return max2(a, max2(b, c));
}

static inline double maxabs3(rp_vec3 a)
{
    return max3(fabs(a.x), fabs(a.y), fabs(a.z));
}

/* p * 2^e, exactly (ldexp per coordinate: 2^e itself may not be finite). */
static inline rp_vec3 scale_vec(rp_vec3 p, int e)
{
    return v3(ldexp(p.x, e), ldexp(p.y, e), ldexp(p.z, e));
}

/* +-DBL_MAX for +-infinity (geometry.h, "Range"); x is never NaN here. */
static inline double saturate(double x)
{
    return x > DBL_MAX ? DBL_MAX : x < -DBL_MAX ? -DBL_MAX : x;
}

/* The point at s in [0, 1] of the segment p0-p1: the ends exactly, else
 * (1-s)*p0 + s*p1, which cannot overflow for finite ends (except by a
 * rounding step at +-DBL_MAX, which the contacts saturate), even when
 * p1 - p0 does. */
static inline rp_vec3 v3_lerp(rp_vec3 p0, rp_vec3 p1, double s)
{
    if (s == 0.0)
        return p0;
    if (s == 1.0)
        return p1;
    return v3((1.0 - s) * p0.x + s * p1.x, (1.0 - s) * p0.y + s * p1.y,
              (1.0 - s) * p0.z + s * p1.z);
}

/* Normalises the quaternion q[0..3] (finite) in place: divided by its
 * largest component first, so that squaring neither overflows nor
 * underflows, then by its length.  False for a zero quaternion. */
static inline bool quat_unit(double q[4])
{
    double m = max2(max2(fabs(q[0]), fabs(q[1])), max2(fabs(q[2]), fabs(q[3])));
    if (m == 0.0)
        return false;
    for (int i = 0; i < 4; i++)
        q[i] /= m;
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; i++)
        q[i] /= n;
    return true;
}

/* A point with every coordinate saturated (a witness beyond the double
 * range, geometry.h "Range"); never NaN in, never infinite out. */
static inline rp_vec3 saturate3(rp_vec3 p)
{
    return v3(saturate(p.x), saturate(p.y), saturate(p.z));
}

/* Unit vector along x, computed without overflow or underflow; x != 0. */
static inline rp_vec3 v3_unit(rp_vec3 x)
{
    double m = v3_maxabs(x);
    /* Divide rather than multiply by 1/m, which overflows for subnormal m. */
    rp_vec3 y = v3(x.x / m, x.y / m, x.z / m);
    return v3_scale(y, 1.0 / sqrt(v3_dot(y, y)));
}

/* ---- canonical order for bitwise symmetry ------------------------------ */

static inline uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Lexicographic order on bit patterns: true when fa sorts after fb.  Pairs
 * of one kind are solved in this order (and the result mirrored), so that
 * d(a, b) and d(b, a) are the same computation. */
static inline bool fields_after(const double *fa, const double *fb, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t ua = bits_of(fa[i]), ub = bits_of(fb[i]);
        if (ua != ub)
            return ua > ub;
    }
    return false;
}

/* The contact seen from the other shape: points swapped, normal negated. */
static inline rp_contact mirror(rp_contact c)
{
    rp_vec3 p = c.point_a;
    c.point_a = c.point_b;
    c.point_b = p;
    c.normal = v3_neg(c.normal);
    return c;
}

/* dispatch.c: the dispatcher for pairs with a box or a half-space. */
double rp_solid_signed_distance_(const rp_shape *a, const rp_shape *b);
rp_contact rp_solid_contact_(const rp_shape *a, const rp_shape *b);

#endif /* REPOSE_GEOMETRY_VEC_H */
