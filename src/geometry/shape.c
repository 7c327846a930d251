/* SPDX-License-Identifier: MIT */
/* Shape constructors and validation: the boundary where bad input is refused. */
#include "repose/geometry.h"
#include "vec.h"

static rp_status check_radius(double radius)
{
    if (!isfinite(radius))
        return RP_ERR_RADIUS_NONFINITE;
    if (radius < 0.0)
        return RP_ERR_RADIUS_NEGATIVE;
    return RP_OK;
}

rp_status rp_sphere_new(rp_vec3 center, double radius, rp_sphere *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    if (!v3_isfinite(center))
        return RP_ERR_NONFINITE;
    rp_status st = check_radius(radius);
    if (st)
        return st;
    out->center = center;
    out->radius = radius;
    return RP_OK;
}

rp_status rp_capsule_new(rp_vec3 a, rp_vec3 b, double radius, rp_capsule *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    if (!v3_isfinite(a) || !v3_isfinite(b))
        return RP_ERR_NONFINITE;
    rp_status st = check_radius(radius);
    if (st)
        return st;
    out->a = a;
    out->b = b;
    out->radius = radius;
    return RP_OK;
}

rp_shape rp_shape_from_sphere(rp_sphere s)
{
    rp_shape shape;
    shape.kind = RP_SHAPE_SPHERE;
    shape.sphere = s;
    return shape;
}

rp_shape rp_shape_from_capsule(rp_capsule c)
{
    rp_shape shape;
    shape.kind = RP_SHAPE_CAPSULE;
    shape.capsule = c;
    return shape;
}

rp_status rp_shape_validate(const rp_shape *s)
{
    if (!s)
        return RP_ERR_INVALID_ARG;
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        if (!v3_isfinite(s->sphere.center))
            return RP_ERR_NONFINITE;
        return check_radius(s->sphere.radius);
    case RP_SHAPE_CAPSULE:
        if (!v3_isfinite(s->capsule.a) || !v3_isfinite(s->capsule.b))
            return RP_ERR_NONFINITE;
        return check_radius(s->capsule.radius);
    }
    return RP_ERR_SHAPE_KIND;
}
