/* SPDX-License-Identifier: MIT */
/*
 * Small inline vector helpers for the geometry kernels.  Private: the public
 * API exposes rp_vec3 only as plain data.
 */
#ifndef REPOSE_GEOMETRY_VEC_H
#define REPOSE_GEOMETRY_VEC_H

#include <math.h>

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

#endif /* REPOSE_GEOMETRY_VEC_H */
