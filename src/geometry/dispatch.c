/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher for pairs with a box or a half-space (distance.c handles
 * sphere and capsule pairs inline and calls here for the rest).
 *
 * Mixed pairs always run their kernel in one order (sphere or capsule
 * first, then box, then half-space) and mirror the contact when the caller
 * gave them the other way round, so d(a, b) == d(b, a) bit for bit.  Two
 * boxes are put in canonical order by box.c itself.
 *
 * Two half-spaces.  Unless their normals are exactly opposite they overlap
 * in an unbounded region that no finite translation separates: the signed
 * distance is -DBL_MAX (the saturated value, geometry.h "Range").  With
 * n_b == -n_a the intersection is the slab -d_b <= n_a.p <= d_a, and the
 * signed distance is -(d_a + d_b): the gap between the planes when it is
 * positive, minus the slab's thickness (the shortest separating
 * translation) otherwise.
 */
#include "repose/geometry.h"
#include "vec.h"

/* Two half-spaces: the signed distance, and whether they are opposite. */
static double halfspaces(const rp_halfspace *a, const rp_halfspace *b)
{
    if (a->normal.x == -b->normal.x && a->normal.y == -b->normal.y && a->normal.z == -b->normal.z)
        return saturate(-(a->offset + b->offset));
    return -DBL_MAX;
}

static bool halfspace_after(const rp_halfspace *a, const rp_halfspace *b)
{
    const double fa[4] = {a->normal.x, a->normal.y, a->normal.z, a->offset};
    const double fb[4] = {b->normal.x, b->normal.y, b->normal.z, b->offset};
    return fields_after(fa, fb, 4);
}

/* Witnesses on each boundary plane (the points of each plane nearest the
 * origin) and a's normal: for opposite normals, point_b - point_a is the
 * distance times the normal (within rounding); otherwise no finite
 * translation separates them and the points only name the planes. */
static rp_contact halfspaces_contact(const rp_halfspace *a, const rp_halfspace *b)
{
    if (halfspace_after(a, b))
        return mirror(halfspaces_contact(b, a));
    rp_contact c;
    c.distance = halfspaces(a, b);
    c.normal = a->normal;
    c.point_a = v3_scale(a->normal, a->offset);
    c.point_b = v3_scale(b->normal, b->offset);
    return c;
}

double rp_solid_signed_distance_(const rp_shape *a, const rp_shape *b)
{
    if (a->kind > b->kind) { /* kernels take the lower kind first */
        const rp_shape *t = a;
        a = b;
        b = t;
    }
    switch (b->kind) {
    case RP_SHAPE_BOX:
        switch (a->kind) {
        case RP_SHAPE_SPHERE:
            return rp_sphere_box_signed_distance(&a->sphere, &b->box);
        case RP_SHAPE_CAPSULE:
            return rp_capsule_box_signed_distance(&a->capsule, &b->box);
        default:
            return rp_box_box_signed_distance(&a->box, &b->box);
        }
    case RP_SHAPE_HALFSPACE:
        switch (a->kind) {
        case RP_SHAPE_SPHERE:
            return rp_sphere_halfspace_signed_distance(&a->sphere, &b->halfspace);
        case RP_SHAPE_CAPSULE:
            return rp_capsule_halfspace_signed_distance(&a->capsule, &b->halfspace);
        case RP_SHAPE_BOX:
            return rp_box_halfspace_signed_distance(&a->box, &b->halfspace);
        default:
            return halfspaces(&a->halfspace, &b->halfspace);
        }
    default: /* both spheres or capsules: not sent here */
        return rp_shape_signed_distance(a, b);
    }
}

rp_contact rp_solid_contact_(const rp_shape *a, const rp_shape *b)
{
    if (a->kind > b->kind)
        return mirror(rp_solid_contact_(b, a));
    switch (b->kind) {
    case RP_SHAPE_BOX:
        switch (a->kind) {
        case RP_SHAPE_SPHERE:
            return rp_sphere_box_contact(&a->sphere, &b->box);
        case RP_SHAPE_CAPSULE:
            return rp_capsule_box_contact(&a->capsule, &b->box);
        default:
            return rp_box_box_contact(&a->box, &b->box);
        }
    case RP_SHAPE_HALFSPACE:
        switch (a->kind) {
        case RP_SHAPE_SPHERE:
            return rp_sphere_halfspace_contact(&a->sphere, &b->halfspace);
        case RP_SHAPE_CAPSULE:
            return rp_capsule_halfspace_contact(&a->capsule, &b->halfspace);
        case RP_SHAPE_BOX:
            return rp_box_halfspace_contact(&a->box, &b->halfspace);
        default:
            return halfspaces_contact(&a->halfspace, &b->halfspace);
        }
    default:
        return rp_shape_contact(a, b);
    }
}
