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

rp_shape rp_shape_from_box(rp_box b)
{
    rp_shape shape;
    shape.kind = RP_SHAPE_BOX;
    shape.box = b;
    return shape;
}

rp_shape rp_shape_from_halfspace(rp_halfspace h)
{
    rp_shape shape;
    shape.kind = RP_SHAPE_HALFSPACE;
    shape.halfspace = h;
    return shape;
}

/* A squared length as the constructors leave it: within 16 eps of 1 (their
 * normalisation rounds by a few eps; anything farther is a literal that
 * skipped them, and the kernels would measure a skewed box). */
static bool unit_length(double n2)
{
    return fabs(n2 - 1.0) <= 16.0 * DBL_EPSILON;
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
    case RP_SHAPE_BOX: {
        const rp_box *b = &s->box;
        if (!v3_isfinite(b->center) || !v3_isfinite(b->half_extents))
            return RP_ERR_NONFINITE;
        if (!(b->half_extents.x >= 0.0 && b->half_extents.y >= 0.0 && b->half_extents.z >= 0.0))
            return RP_ERR_EXTENT_NEGATIVE;
        rp_quat q = b->rotation;
        double n2 = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z; /* NaN fails too */
        return unit_length(n2) ? RP_OK : RP_ERR_QUATERNION;
    }
    case RP_SHAPE_HALFSPACE: {
        const rp_halfspace *h = &s->halfspace;
        if (!v3_isfinite(h->normal) || !isfinite(h->offset))
            return RP_ERR_NONFINITE;
        return unit_length(v3_dot(h->normal, h->normal)) ? RP_OK : RP_ERR_NORMAL;
    }
    }
    return RP_ERR_SHAPE_KIND;
}
