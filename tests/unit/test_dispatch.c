/* SPDX-License-Identifier: MIT */
/*
 * The shape dispatcher (src/geometry/distance.c, dispatch.c) on every
 * ordered pair of the four kinds, and rp_transform_shape on boxes and
 * half-spaces (src/geometry/transform.c).  The kernels' accuracy is
 * test_box.c's and test_geometry_accuracy.c's business; here the question
 * is whether the layer above them routes, orders, mirrors and moves shapes
 * correctly:
 *
 *   - rp_shape_signed_distance(a, b) is the direct kernel's result bit for
 *     bit (the kernel for the lower kind first, arguments swapped when the
 *     caller gave them the other way round), and equals (b, a) bit for bit;
 *     rp_shape_contact(a, b) is the kernel's contact (mirrored when
 *     swapped), carries the same distance bits and a unit normal, and
 *     (b, a) is its exact mirror; rp_shapes_violate_margin is `<` at the
 *     distance and one ulp either side;
 *   - the contact means what geometry.h says: point_b - point_a is
 *     distance * normal, a separated pair's witnesses lie on their shapes,
 *     and moving b by -distance * normal (half of it) leaves the pair
 *     touching (at half the distance), for gaps and penetrations alike, so
 *     a normal that points the wrong way or points swapped by a mirror fail;
 *   - distances are invariant under rigid motions applied with
 *     rp_transform_shape, which moves box vertices and half-space points as
 *     rp_transform_point moves points, and leaves shapes that validate;
 *   - two half-spaces: -(d_a + d_b) exactly for exactly opposite normals,
 *     -DBL_MAX otherwise, saturated, witnesses on their planes;
 *   - box-box in canonical order: boxes equal but for one bit, or sharing
 *     a prefix of their fields, give the same bits both ways round;
 *   - boxes with zero extents behave like the point (a zero-radius sphere),
 *     the segment (a zero-radius capsule) or the rectangle they are.
 *
 * Pairs come at unit scale, 1e6 m from the origin, scaled by 2^-664
 * (about 1e-200) and by 2^664 (about 1e200).  Tolerances are in eps*S,
 * eps = 2^-52 and S the largest magnitude among the pair's coordinates,
 * extents, radii and offsets (geometry.h's accuracy contract).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "repose/geometry.h"

#define EPS 0x1p-52
#define NKIND 4

static const char *const kind_names[NKIND] = {"sphere", "capsule", "box", "halfspace"};

/* ---- vectors --------------------------------------------------------------------- */

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static rp_vec3 vadd(rp_vec3 a, rp_vec3 b)
{
    return V(a.x + b.x, a.y + b.y, a.z + b.z);
}

static rp_vec3 vsub(rp_vec3 a, rp_vec3 b)
{
    return V(a.x - b.x, a.y - b.y, a.z - b.z);
}

static rp_vec3 vscale(rp_vec3 a, double s)
{
    return V(a.x * s, a.y * s, a.z * s);
}

static rp_vec3 vneg(rp_vec3 a)
{
    return V(-a.x, -a.y, -a.z);
}

static double vdot(rp_vec3 a, rp_vec3 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

static double vnorm(rp_vec3 a)
{
    return sqrt(vdot(a, a));
}

static double maxabs(rp_vec3 v)
{
    return fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
}

static bool finite3(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static rp_vec3 ldexp3(rp_vec3 v, int e)
{
    return V(ldexp(v.x, e), ldexp(v.y, e), ldexp(v.z, e));
}

static bool same3(rp_vec3 a, rp_vec3 b)
{
    return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z);
}

/* ---- shapes ---------------------------------------------------------------------- */

/* S of the accuracy contract for one shape (a half-space's normal is a
 * direction, not a length). */
static double shape_S(const rp_shape *s)
{
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        return fmax(maxabs(s->sphere.center), s->sphere.radius);
    case RP_SHAPE_CAPSULE:
        return fmax(fmax(maxabs(s->capsule.a), maxabs(s->capsule.b)), s->capsule.radius);
    case RP_SHAPE_BOX:
        return fmax(maxabs(s->box.center), maxabs(s->box.half_extents));
    default:
        return fabs(s->halfspace.offset);
    }
}

static double pair_S(const rp_shape *a, const rp_shape *b)
{
    return fmax(shape_S(a), shape_S(b));
}

/* Every field bit for bit (not memcmp: the union's unused bytes). */
static bool same_shape(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case RP_SHAPE_SPHERE:
        return same3(a->sphere.center, b->sphere.center) &&
               same_bits(a->sphere.radius, b->sphere.radius);
    case RP_SHAPE_CAPSULE:
        return same3(a->capsule.a, b->capsule.a) && same3(a->capsule.b, b->capsule.b) &&
               same_bits(a->capsule.radius, b->capsule.radius);
    case RP_SHAPE_BOX: {
        rp_quat p = a->box.rotation, q = b->box.rotation;
        return same3(a->box.center, b->box.center) &&
               same3(a->box.half_extents, b->box.half_extents) && same_bits(p.w, q.w) &&
               same_bits(p.x, q.x) && same_bits(p.y, q.y) && same_bits(p.z, q.z);
    }
    default:
        return same3(a->halfspace.normal, b->halfspace.normal) &&
               same_bits(a->halfspace.offset, b->halfspace.offset);
    }
}

static void print_shape(const char *label, const rp_shape *s)
{
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        fprintf(stderr, "  %s: sphere c %a %a %a r %a\n", label, s->sphere.center.x,
                s->sphere.center.y, s->sphere.center.z, s->sphere.radius);
        break;
    case RP_SHAPE_CAPSULE:
        fprintf(stderr, "  %s: capsule %a %a %a -> %a %a %a r %a\n", label, s->capsule.a.x,
                s->capsule.a.y, s->capsule.a.z, s->capsule.b.x, s->capsule.b.y, s->capsule.b.z,
                s->capsule.radius);
        break;
    case RP_SHAPE_BOX:
        fprintf(stderr, "  %s: box c %a %a %a h %a %a %a q %a %a %a %a\n", label, s->box.center.x,
                s->box.center.y, s->box.center.z, s->box.half_extents.x, s->box.half_extents.y,
                s->box.half_extents.z, s->box.rotation.w, s->box.rotation.x, s->box.rotation.y,
                s->box.rotation.z);
        break;
    default:
        fprintf(stderr, "  %s: halfspace n %a %a %a d %a\n", label, s->halfspace.normal.x,
                s->halfspace.normal.y, s->halfspace.normal.z, s->halfspace.offset);
        break;
    }
}

/* Fails with both shapes printed. */
#define pair_fail(a, b, ...)                                                                       \
    do {                                                                                           \
        print_shape("a", a);                                                                       \
        print_shape("b", b);                                                                       \
        fail_msg(__VA_ARGS__);                                                                     \
    } while (0)

static rp_shape mk_sphere(rp_vec3 c, double r)
{
    rp_sphere s;
    assert_int_equal(rp_sphere_new(c, r, &s), RP_OK);
    return rp_shape_from_sphere(s);
}

static rp_shape mk_capsule(rp_vec3 a, rp_vec3 b, double r)
{
    rp_capsule k;
    assert_int_equal(rp_capsule_new(a, b, r, &k), RP_OK);
    return rp_shape_from_capsule(k);
}

static rp_shape mk_box(rp_vec3 c, rp_vec3 h, rp_quat q)
{
    rp_box b;
    assert_int_equal(rp_box_new(c, h, q.w, q.x, q.y, q.z, &b), RP_OK);
    return rp_shape_from_box(b);
}

static rp_shape mk_halfspace(rp_vec3 n, double d)
{
    rp_halfspace h;
    assert_int_equal(rp_halfspace_new(n, d, &h), RP_OK);
    return rp_shape_from_halfspace(h);
}

/* ---- random input ------------------------------------------------------------------ */

static rp_vec3 rnd3(test_rng *g, double lo, double hi)
{
    return V(rng_uniform(g, lo, hi), rng_uniform(g, lo, hi), rng_uniform(g, lo, hi));
}

static bool chance(test_rng *g, double p)
{
    return rng_uniform(g, 0, 1) < p;
}

/* A uniformly distributed unit vector (rejection from the cube). */
static rp_vec3 random_unit(test_rng *g)
{
    for (;;) {
        rp_vec3 v = rnd3(g, -1, 1);
        double n = vnorm(v);
        if (n > 0.1 && n <= 1.0)
            return vscale(v, 1.0 / n);
    }
}

enum { ROT_ANY, ROT_NEAR_IDENTITY, ROT_NEAR_HALF_TURN, ROT_MODES };

/* A rotation quaternion, not normalised (the constructors do that): any
 * rotation, one within 1e-9 rad of the identity, or one within 1e-9 rad of
 * a half turn (exactly a half turn one time in four). */
static rp_quat random_quat(test_rng *g, int mode)
{
    rp_vec3 u = random_unit(g);
    double e = ldexp(rng_uniform(g, -1, 1), -30 - (int)(rng_next(g) % 20));
    switch (mode) {
    case ROT_NEAR_IDENTITY:
        return (rp_quat){1.0, e * u.x, e * u.y, e * u.z};
    case ROT_NEAR_HALF_TURN:
        return (rp_quat){rng_next(g) % 4 == 0 ? 0.0 : e, u.x, u.y, u.z};
    default:
        for (;;) {
            rp_quat q = {rng_uniform(g, -1, 1), rng_uniform(g, -1, 1), rng_uniform(g, -1, 1),
                         rng_uniform(g, -1, 1)};
            double n2 = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z;
            if (n2 > 0.01 && n2 <= 1.0)
                return q;
        }
    }
}

/* Half extents with, one time in five, one, two or three of them zero. */
static rp_vec3 random_extents(test_rng *g)
{
    rp_vec3 h = rnd3(g, 0, 1.2);
    if (chance(g, 0.2)) {
        int zeros = 1 + (int)(rng_next(g) % 3), first = (int)(rng_next(g) % 3);
        for (int k = 0; k < zeros; k++) {
            int i = (first + k) % 3;
            if (i == 0)
                h.x = 0.0;
            else if (i == 1)
                h.y = 0.0;
            else
                h.z = 0.0;
        }
    }
    return h;
}

/* A normal: random, or along a coordinate axis (signed zeros included). */
static rp_vec3 random_normal(test_rng *g)
{
    if (chance(g, 0.8))
        return random_unit(g);
    int i = (int)(rng_next(g) % 3);
    double s = chance(g, 0.5) ? 1.0 : -1.0, z = chance(g, 0.5) ? 0.0 : -0.0;
    return V(i == 0 ? s : z, i == 1 ? s : z, i == 2 ? s : z);
}

/* A shape of the given kind at unit scale, within a few metres of the
 * origin, so that pairs both meet and miss. */
static rp_shape random_shape(test_rng *g, int kind)
{
    switch (kind) {
    case RP_SHAPE_SPHERE:
        return mk_sphere(rnd3(g, -2, 2), chance(g, 0.1) ? 0.0 : rng_uniform(g, 0, 1));
    case RP_SHAPE_CAPSULE: {
        rp_vec3 a = rnd3(g, -2, 2);
        rp_vec3 b = chance(g, 0.1) ? a : vadd(a, rnd3(g, -1.5, 1.5));
        return mk_capsule(a, b, chance(g, 0.1) ? 0.0 : rng_uniform(g, 0, 0.8));
    }
    case RP_SHAPE_BOX:
        return mk_box(rnd3(g, -2, 2), random_extents(g),
                      random_quat(g, chance(g, 0.8) ? ROT_ANY : (int)(rng_next(g) % ROT_MODES)));
    default:
        return mk_halfspace(random_normal(g), rng_uniform(g, -2, 2));
    }
}

/* A pair of the given kinds; two half-spaces are exactly opposite (a slab
 * or a gap) half of the time. */
static void random_pair(test_rng *g, int ka, int kb, rp_shape *a, rp_shape *b)
{
    *a = random_shape(g, ka);
    *b = random_shape(g, kb);
    if (ka == RP_SHAPE_HALFSPACE && kb == RP_SHAPE_HALFSPACE && chance(g, 0.5))
        b->halfspace.normal = vneg(a->halfspace.normal);
}

/* The families: where a unit-scale pair is placed. */
typedef struct family {
    const char *name;
    int scale;    /* the pair is scaled by 2^scale (exact) */
    double reach; /* then moved by up to this much along each axis */
} family;

static const family families[] = {
    {"unit", 0, 0.0},
    {"far", 0, 4e6},
    {"tiny", -664, 0.0},
    {"huge", 664, 0.0},
};
#define NFAM (int)(sizeof families / sizeof families[0])

/* A random offset for the family: each coordinate 1e6 to 4e6 m either way. */
static rp_vec3 family_offset(test_rng *g, const family *f)
{
    if (f->reach == 0.0)
        return V(0, 0, 0);
    rp_vec3 o = rnd3(g, 0.25 * f->reach, f->reach);
    return V(chance(g, 0.5) ? o.x : -o.x, chance(g, 0.5) ? o.y : -o.y, chance(g, 0.5) ? o.z : -o.z);
}

/* s scaled by 2^e, then moved by off (a half-space's offset moves by n.off). */
static rp_shape place(const rp_shape *s, int e, rp_vec3 off)
{
    rp_shape o = *s;
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        o.sphere.center = vadd(ldexp3(s->sphere.center, e), off);
        o.sphere.radius = ldexp(s->sphere.radius, e);
        break;
    case RP_SHAPE_CAPSULE:
        o.capsule.a = vadd(ldexp3(s->capsule.a, e), off);
        o.capsule.b = vadd(ldexp3(s->capsule.b, e), off);
        o.capsule.radius = ldexp(s->capsule.radius, e);
        break;
    case RP_SHAPE_BOX:
        o.box.center = vadd(ldexp3(s->box.center, e), off);
        o.box.half_extents = ldexp3(s->box.half_extents, e);
        break;
    default:
        o.halfspace.offset = ldexp(s->halfspace.offset, e) + vdot(s->halfspace.normal, off);
        break;
    }
    return o;
}

static void family_pair(test_rng *g, const family *f, int ka, int kb, rp_shape *a, rp_shape *b)
{
    rp_shape ua, ub;
    random_pair(g, ka, kb, &ua, &ub);
    rp_vec3 off = family_offset(g, f);
    *a = place(&ua, f->scale, off);
    *b = place(&ub, f->scale, off);
    assert_int_equal(rp_shape_validate(a), RP_OK);
    assert_int_equal(rp_shape_validate(b), RP_OK);
}

/* s moved by t (no rotation), computed here rather than by
 * rp_transform_shape so that the contact checks do not lean on it. */
static rp_shape translated(const rp_shape *s, rp_vec3 t)
{
    rp_shape o = *s;
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        o.sphere.center = vadd(s->sphere.center, t);
        break;
    case RP_SHAPE_CAPSULE:
        o.capsule.a = vadd(s->capsule.a, t);
        o.capsule.b = vadd(s->capsule.b, t);
        break;
    case RP_SHAPE_BOX:
        o.box.center = vadd(s->box.center, t);
        break;
    default:
        o.halfspace.offset = s->halfspace.offset + vdot(s->halfspace.normal, t);
        break;
    }
    return o;
}

/* ---- the kernels, called directly ------------------------------------------------- */

static bool exactly_opposite(const rp_halfspace *a, const rp_halfspace *b)
{
    return a->normal.x == -b->normal.x && a->normal.y == -b->normal.y &&
           a->normal.z == -b->normal.z;
}

/* Two half-spaces as geometry.h specifies them. */
static double halfspace_pair_expected(const rp_halfspace *a, const rp_halfspace *b)
{
    if (!exactly_opposite(a, b))
        return -DBL_MAX;
    double d = -(a->offset + b->offset);
    return d > DBL_MAX ? DBL_MAX : d < -DBL_MAX ? -DBL_MAX : d;
}

static int pair_code(const rp_shape *a, const rp_shape *b)
{
    return (int)a->kind * NKIND + (int)b->kind;
}

#define PAIR(ka, kb) ((int)RP_SHAPE_##ka * NKIND + (int)RP_SHAPE_##kb)

/* The kernel rp_shape_signed_distance(a, b) must give: the lower kind
 * first (geometry.h lists one kernel per unordered pair). */
static double kernel_distance(const rp_shape *a, const rp_shape *b)
{
    switch (pair_code(a, b)) {
    case PAIR(SPHERE, SPHERE):
        return rp_sphere_sphere_signed_distance(&a->sphere, &b->sphere);
    case PAIR(SPHERE, CAPSULE):
        return rp_capsule_sphere_signed_distance(&b->capsule, &a->sphere);
    case PAIR(SPHERE, BOX):
        return rp_sphere_box_signed_distance(&a->sphere, &b->box);
    case PAIR(SPHERE, HALFSPACE):
        return rp_sphere_halfspace_signed_distance(&a->sphere, &b->halfspace);
    case PAIR(CAPSULE, SPHERE):
        return rp_capsule_sphere_signed_distance(&a->capsule, &b->sphere);
    case PAIR(CAPSULE, CAPSULE):
        return rp_capsule_capsule_signed_distance(&a->capsule, &b->capsule);
    case PAIR(CAPSULE, BOX):
        return rp_capsule_box_signed_distance(&a->capsule, &b->box);
    case PAIR(CAPSULE, HALFSPACE):
        return rp_capsule_halfspace_signed_distance(&a->capsule, &b->halfspace);
    case PAIR(BOX, SPHERE):
        return rp_sphere_box_signed_distance(&b->sphere, &a->box);
    case PAIR(BOX, CAPSULE):
        return rp_capsule_box_signed_distance(&b->capsule, &a->box);
    case PAIR(BOX, BOX):
        return rp_box_box_signed_distance(&a->box, &b->box);
    case PAIR(BOX, HALFSPACE):
        return rp_box_halfspace_signed_distance(&a->box, &b->halfspace);
    case PAIR(HALFSPACE, SPHERE):
        return rp_sphere_halfspace_signed_distance(&b->sphere, &a->halfspace);
    case PAIR(HALFSPACE, CAPSULE):
        return rp_capsule_halfspace_signed_distance(&b->capsule, &a->halfspace);
    case PAIR(HALFSPACE, BOX):
        return rp_box_halfspace_signed_distance(&b->box, &a->halfspace);
    default:
        return halfspace_pair_expected(&a->halfspace, &b->halfspace);
    }
}

static rp_contact mirrored(rp_contact c)
{
    rp_contact m = c;
    m.point_a = c.point_b;
    m.point_b = c.point_a;
    m.normal = vneg(c.normal);
    return m;
}

/* The contact kernel rp_shape_contact(a, b) must give, where geometry.h
 * has one (not for sphere and capsule pairs, nor two half-spaces). */
static bool kernel_contact(const rp_shape *a, const rp_shape *b, rp_contact *out)
{
    switch (pair_code(a, b)) {
    case PAIR(SPHERE, BOX):
        *out = rp_sphere_box_contact(&a->sphere, &b->box);
        return true;
    case PAIR(SPHERE, HALFSPACE):
        *out = rp_sphere_halfspace_contact(&a->sphere, &b->halfspace);
        return true;
    case PAIR(CAPSULE, BOX):
        *out = rp_capsule_box_contact(&a->capsule, &b->box);
        return true;
    case PAIR(CAPSULE, HALFSPACE):
        *out = rp_capsule_halfspace_contact(&a->capsule, &b->halfspace);
        return true;
    case PAIR(BOX, SPHERE):
        *out = mirrored(rp_sphere_box_contact(&b->sphere, &a->box));
        return true;
    case PAIR(BOX, CAPSULE):
        *out = mirrored(rp_capsule_box_contact(&b->capsule, &a->box));
        return true;
    case PAIR(BOX, BOX):
        *out = rp_box_box_contact(&a->box, &b->box);
        return true;
    case PAIR(BOX, HALFSPACE):
        *out = rp_box_halfspace_contact(&a->box, &b->halfspace);
        return true;
    case PAIR(HALFSPACE, SPHERE):
        *out = mirrored(rp_sphere_halfspace_contact(&b->sphere, &a->halfspace));
        return true;
    case PAIR(HALFSPACE, CAPSULE):
        *out = mirrored(rp_capsule_halfspace_contact(&b->capsule, &a->halfspace));
        return true;
    case PAIR(HALFSPACE, BOX):
        *out = mirrored(rp_box_halfspace_contact(&b->box, &a->halfspace));
        return true;
    default:
        return false;
    }
}

static bool same_contact(rp_contact x, rp_contact y)
{
    return same_bits(x.distance, y.distance) && same3(x.point_a, y.point_a) &&
           same3(x.point_b, y.point_b) && same3(x.normal, y.normal);
}

static void print_contact(const char *label, rp_contact c)
{
    fprintf(stderr, "  %s: d %a a %a %a %a b %a %a %a n %a %a %a\n", label, c.distance, c.point_a.x,
            c.point_a.y, c.point_a.z, c.point_b.x, c.point_b.y, c.point_b.z, c.normal.x, c.normal.y,
            c.normal.z);
}

/* ---- the dispatcher's own properties -------------------------------------------- */

/* Worst errors seen, in eps*S, for the report printed by each test. */
typedef struct geo_stats {
    double residual; /* point_b - point_a - d*n */
    double surface;  /* a separated pair's witnesses off their shapes */
    double touch;    /* b moved by -d*n: distance off 0 */
    double half;     /* b moved by -d*n/2: distance off d/2 */
    long separated, penetrating;
} geo_stats;

/* Bit-level properties: the kernel's bits, symmetry, contact distance and
 * mirror, unit normal, the margin predicate at and around d. */
static double check_bits(const rp_shape *a, const rp_shape *b)
{
    double d = rp_shape_signed_distance(a, b);
    double k = kernel_distance(a, b);
    if (!same_bits(d, k))
        pair_fail(a, b, "%s-%s: dispatcher %a, kernel %a", kind_names[a->kind], kind_names[b->kind],
                  d, k);
    if (!(fabs(d) <= DBL_MAX))
        pair_fail(a, b, "distance %a not finite", d);
    double r = rp_shape_signed_distance(b, a);
    if (!same_bits(d, r))
        pair_fail(a, b, "%s-%s: d(a,b) %a, d(b,a) %a", kind_names[a->kind], kind_names[b->kind], d,
                  r);

    rp_contact c = rp_shape_contact(a, b), m = rp_shape_contact(b, a), kc;
    if (!same_bits(c.distance, d))
        pair_fail(a, b, "contact distance %a, distance %a", c.distance, d);
    if (kernel_contact(a, b, &kc) && !same_contact(c, kc)) {
        print_contact("dispatcher", c);
        print_contact("kernel", kc);
        pair_fail(a, b, "%s-%s: contact is not the kernel's", kind_names[a->kind],
                  kind_names[b->kind]);
    }
    if (!(fabs(vnorm(c.normal) - 1.0) <= 4 * EPS))
        pair_fail(a, b, "|normal| = %.17g", vnorm(c.normal));
    if (!same_shape(a, b) && !same_contact(m, mirrored(c))) {
        print_contact("c(a,b)", c);
        print_contact("c(b,a)", m);
        pair_fail(a, b, "%s-%s: c(b,a) is not the mirror of c(a,b)", kind_names[a->kind],
                  kind_names[b->kind]);
    }

    double below = nextafter(d, -INFINITY), above = nextafter(d, INFINITY);
    for (int swap = 0; swap < 2; swap++) {
        const rp_shape *x = swap ? b : a, *y = swap ? a : b;
        if (rp_shapes_violate_margin(x, y, below) || rp_shapes_violate_margin(x, y, d) ||
            !rp_shapes_violate_margin(x, y, above))
            pair_fail(a, b, "margin predicate is not d < margin at d = %a", d);
    }
    return d;
}

/* The distance of point p to shape s (a zero-radius sphere through the
 * dispatcher). */
static double point_distance(rp_vec3 p, const rp_shape *s)
{
    rp_shape q = mk_sphere(p, 0.0);
    return rp_shape_signed_distance(&q, s);
}

/* Geometric meaning of the contact (see the top of the file).  Skipped
 * for saturated distances and two half-spaces that are not opposite,
 * where no finite translation separates.  Bounds: the residual as
 * test_geometry.c's check_contact (the witnesses round by a few eps*S);
 * a witness's distance to its shape, the witness's rounding plus the
 * kernel's 16; after a move, the moved shape's rounding (eps*S per
 * coordinate), the normal's and the kernel's 16 on a distance that is
 * exactly 0 or d/2: 64, about six times what is observed. */
static void check_geometry(const rp_shape *a, const rp_shape *b, double d, geo_stats *w)
{
    if (fabs(d) == DBL_MAX)
        return;
    rp_contact c = rp_shape_contact(a, b);
    double S = pair_S(a, b), unit = EPS * S;
    /* point_b - point_a = d * n, coordinate by coordinate. */
    rp_vec3 res = vsub(vsub(c.point_b, c.point_a), vscale(c.normal, d));
    double e = maxabs(res) / unit;
    w->residual = fmax(w->residual, e);
    if (!(e <= 16))
        pair_fail(a, b, "point_b - point_a - d*n off by %g eps*S (d = %.17g)", e, d);

    if (d > 0) { /* witnesses on their own shapes: catches points a mirror swapped */
        w->separated++;
        double ea = fabs(point_distance(c.point_a, a)) / unit;
        double eb = fabs(point_distance(c.point_b, b)) / unit;
        w->surface = fmax(w->surface, fmax(ea, eb));
        if (!(ea <= 32 && eb <= 32))
            pair_fail(a, b, "witnesses off their shapes by %g and %g eps*S (d = %.17g)", ea, eb, d);
    } else {
        w->penetrating++;
    }
    /* b moved by -d*n touches a; by -d*n/2 it is d/2 away.  A gap closes
     * along the normal, a penetration opens along it. */
    rp_shape b1 = translated(b, vscale(c.normal, -d));
    rp_shape b2 = translated(b, vscale(c.normal, -0.5 * d));
    double S1 = fmax(S, fmax(shape_S(&b1), shape_S(&b2)));
    double d1 = rp_shape_signed_distance(a, &b1), d2 = rp_shape_signed_distance(a, &b2);
    double e1 = fabs(d1) / (EPS * S1), e2 = fabs(d2 - 0.5 * d) / (EPS * S1);
    w->touch = fmax(w->touch, e1);
    w->half = fmax(w->half, e2);
    if (!(e1 <= 64 && e2 <= 64))
        pair_fail(a, b,
                  "moving b by -d*n gives %.17g (off %g eps*S), by -d*n/2 %.17g for %.17g "
                  "(off %g eps*S); d = %.17g, n = %.17g %.17g %.17g",
                  d1, e1, d2, 0.5 * d, e2, d, c.normal.x, c.normal.y, c.normal.z);
}

#define DISPATCH_PAIRS 250

static void dispatcher_is_the_kernels_symmetric_and_mirrored_for_every_kind_pair(void **state)
{
    (void)state;
    for (int f = 0; f < NFAM; f++) {
        test_rng g = {(uint64_t)(100 + f)};
        geo_stats w = {0};
        for (int ka = 0; ka < NKIND; ka++) {
            for (int kb = 0; kb < NKIND; kb++) {
                for (int n = 0; n < DISPATCH_PAIRS; n++) {
                    rp_shape a, b;
                    family_pair(&g, &families[f], ka, kb, &a, &b);
                    double d = check_bits(&a, &b);
                    if (ka == RP_SHAPE_HALFSPACE && kb == RP_SHAPE_HALFSPACE &&
                        !exactly_opposite(&a.halfspace, &b.halfspace))
                        continue;
                    check_geometry(&a, &b, d, &w);
                }
            }
        }
        printf("family %s: %d pairs (%ld separated, %ld meeting): worst residual %.3g, "
               "witness off surface %.3g, touch %.3g, half-way %.3g eps*S\n",
               families[f].name, NKIND * NKIND * DISPATCH_PAIRS, w.separated, w.penetrating,
               w.residual, w.surface, w.touch, w.half);
        assert_true(w.separated > 500 && w.penetrating > 500);
    }
}

/* ---- rigid motions -------------------------------------------------------------- */

/* A rigid transform: a rotation of the given mode (or the product of two
 * random ones, a matrix no quaternion was built for), and a translation
 * of up to `reach` along each axis. */
static rp_transform random_transform(test_rng *g, int mode, double reach)
{
    rp_transform tf;
    rp_vec3 t = rnd3(g, -reach, reach);
    int m = mode % (ROT_MODES + 1);
    rp_quat q = random_quat(g, m == ROT_MODES ? ROT_ANY : m);
    assert_int_equal(rp_transform_from_quaternion(t, q.w, q.x, q.y, q.z, &tf), RP_OK);
    if (m == ROT_MODES) {
        rp_transform r2;
        rp_quat q2 = random_quat(g, ROT_ANY);
        assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), q2.w, q2.x, q2.y, q2.z, &r2),
                         RP_OK);
        tf = rp_transform_compose(&tf, &r2);
    }
    assert_int_equal(rp_transform_validate(&tf), RP_OK);
    return tf;
}

/* The translation reach for a family: 10 m at unit scale, scaled with the
 * pair, 4e6 m for pairs that are that far out already. */
static double family_reach(const family *f)
{
    return f->reach > 0 ? f->reach : ldexp(10.0, f->scale);
}

#define MOTION_PAIRS 120
/* Each distance is within 16 eps*S of its exact value (geometry.h); the
 * moved pair differs from an exact rigid motion of the original by the
 * transform's rounding: a moved point by a few eps*(|p| + |t|) (the matrix
 * from the quaternion is orthonormal within a few eps and r*p + t rounds
 * three times), a box's axes by the quaternion product's and
 * normalisation's few eps times its extents, a half-space's normal by its
 * renormalisation and its offset by the rounding of n.t.  A signed
 * distance moves no more than its shapes do, so 2*16 for the kernels plus
 * 2*16 for the two moved shapes: 64 eps*S, S over both pairs and |t|. */
#define MOTION_BOUND 64.0

static void distances_are_invariant_under_rigid_motions(void **state)
{
    (void)state;
    for (int f = 0; f < NFAM; f++) {
        test_rng g = {(uint64_t)(200 + f)};
        double worst_all = 0;
        int worst_ka = 0, worst_kb = 0;
        for (int ka = 0; ka < NKIND; ka++) {
            for (int kb = 0; kb < NKIND; kb++) {
                double worst = 0;
                for (int n = 0; n < MOTION_PAIRS; n++) {
                    rp_shape a, b;
                    family_pair(&g, &families[f], ka, kb, &a, &b);
                    rp_transform tf = random_transform(&g, n, family_reach(&families[f]));
                    rp_shape ta = rp_transform_shape(&tf, &a), tb = rp_transform_shape(&tf, &b);
                    assert_int_equal(rp_shape_validate(&ta), RP_OK);
                    assert_int_equal(rp_shape_validate(&tb), RP_OK);
                    double d0 = rp_shape_signed_distance(&a, &b);
                    double d1 = rp_shape_signed_distance(&ta, &tb);
                    double S = fmax(fmax(pair_S(&a, &b), pair_S(&ta, &tb)), maxabs(tf.t));
                    double e = fabs(d1 - d0) / (EPS * S);
                    if (fabs(d0) == DBL_MAX || fabs(d1) == DBL_MAX)
                        e = same_bits(d0, d1) ? 0.0 : INFINITY;
                    worst = fmax(worst, e);
                    if (!(e <= MOTION_BOUND))
                        pair_fail(&a, &b,
                                  "%s %s-%s pair %d (rotation mode %d): %.17g moved gives "
                                  "%.17g, off %g eps*S",
                                  families[f].name, kind_names[ka], kind_names[kb], n,
                                  n % (ROT_MODES + 1), d0, d1, e);
                }
                if (worst > worst_all) {
                    worst_all = worst;
                    worst_ka = ka, worst_kb = kb;
                }
            }
        }
        printf("family %s: rigid motions, worst %.3g eps*S (%s-%s; bound %g)\n", families[f].name,
               worst_all, kind_names[worst_ka], kind_names[worst_kb], MOTION_BOUND);
    }
}

/* ---- rp_transform_shape on boxes and half-spaces ------------------------------------ */

static void box_vertices(const rp_box *b, rp_vec3 v[8])
{
    rp_vec3 ax[3];
    rp_box_axes(b, ax);
    rp_vec3 h = b->half_extents;
    for (int k = 0; k < 8; k++) {
        rp_vec3 p = b->center;
        p = vadd(p, vscale(ax[0], (k & 1) ? h.x : -h.x));
        p = vadd(p, vscale(ax[1], (k & 2) ? h.y : -h.y));
        p = vadd(p, vscale(ax[2], (k & 4) ? h.z : -h.z));
        v[k] = p;
    }
}

/* The vertices of the moved box against the moved vertices.  Both sides
 * round: the vertex sums a few eps*S each, r*p + t a few more, and the
 * moved box's axes differ from r times the old ones by the quaternion
 * product and renormalisation, a few eps times the extents; 16 eps*S
 * (S: the centre, the extents and the translation) is several times what
 * is observed. */
#define VERTEX_BOUND 16.0

static void transform_shape_moves_box_vertices(void **state)
{
    (void)state;
    for (int f = 0; f < NFAM; f++) {
        test_rng g = {(uint64_t)(300 + f)};
        double worst = 0, worst_back = 0;
        for (int n = 0; n < 4000; n++) {
            rp_shape s = random_shape(&g, RP_SHAPE_BOX);
            s = place(&s, families[f].scale, family_offset(&g, &families[f]));
            rp_transform tf = random_transform(&g, n, family_reach(&families[f]));
            rp_shape t = rp_transform_shape(&tf, &s);
            assert_int_equal(t.kind, RP_SHAPE_BOX);
            assert_int_equal(rp_shape_validate(&t), RP_OK);
            /* The centre moves as a point; the extents stay, bit for bit. */
            assert_true(same3(t.box.center, rp_transform_point(&tf, s.box.center)));
            assert_true(same3(t.box.half_extents, s.box.half_extents));
            rp_vec3 v0[8], v1[8];
            box_vertices(&s.box, v0);
            box_vertices(&t.box, v1);
            double S = fmax(shape_S(&s), fmax(shape_S(&t), maxabs(tf.t)));
            for (int k = 0; k < 8; k++) {
                double e = maxabs(vsub(v1[k], rp_transform_point(&tf, v0[k]))) / (EPS * S);
                worst = fmax(worst, e);
                if (!(e <= VERTEX_BOUND)) {
                    print_shape("box", &s);
                    fail_msg("%s box %d, vertex %d: off by %g eps*S", families[f].name, n, k, e);
                }
            }
            /* And back with the inverse: the same box, within rounding. */
            rp_transform inv = rp_transform_inverse(&tf);
            rp_shape back = rp_transform_shape(&inv, &t);
            assert_int_equal(rp_shape_validate(&back), RP_OK);
            rp_vec3 v2[8];
            box_vertices(&back.box, v2);
            for (int k = 0; k < 8; k++) {
                double e = maxabs(vsub(v2[k], v0[k])) / (EPS * S);
                worst_back = fmax(worst_back, e);
                if (!(e <= 2 * VERTEX_BOUND)) {
                    print_shape("box", &s);
                    fail_msg("%s box %d, vertex %d: there and back off by %g eps*S",
                             families[f].name, n, k, e);
                }
            }
        }
        printf("family %s: box vertices worst %.3g eps*S, there and back %.3g\n", families[f].name,
               worst, worst_back);
    }
}

/* A point's height above a half-space's plane, n.p - d, is what a rigid
 * motion preserves; inside points stay inside.  The heights round by a
 * few eps*S on each side, the moved normal and offset by a few more. */
#define HEIGHT_BOUND 16.0

static void transform_shape_moves_halfspaces_with_their_points(void **state)
{
    (void)state;
    for (int f = 0; f < NFAM; f++) {
        test_rng g = {(uint64_t)(400 + f)};
        double worst = 0, worst_back = 0;
        long deep = 0;
        for (int n = 0; n < 4000; n++) {
            rp_shape s = random_shape(&g, RP_SHAPE_HALFSPACE);
            rp_vec3 off = family_offset(&g, &families[f]);
            s = place(&s, families[f].scale, off);
            rp_halfspace h = s.halfspace;
            rp_transform tf = random_transform(&g, n, family_reach(&families[f]));
            rp_shape t = rp_transform_shape(&tf, &s);
            assert_int_equal(t.kind, RP_SHAPE_HALFSPACE);
            assert_int_equal(rp_shape_validate(&t), RP_OK);
            /* The normal is r*n (renormalised). */
            rp_vec3 rn = V(vdot(V(tf.r[0][0], tf.r[0][1], tf.r[0][2]), h.normal),
                           vdot(V(tf.r[1][0], tf.r[1][1], tf.r[1][2]), h.normal),
                           vdot(V(tf.r[2][0], tf.r[2][1], tf.r[2][2]), h.normal));
            assert_true(maxabs(vsub(t.halfspace.normal, rn)) <= 8 * EPS);
            for (int k = 0; k < 8; k++) {
                /* A point inside (below the plane by up to 3 units), or on it. */
                rp_vec3 p = vadd(ldexp3(rnd3(&g, -3, 3), families[f].scale), off);
                double up = vdot(h.normal, p) - h.offset;
                double depth = k == 0 ? 0.0 : ldexp(rng_uniform(&g, 0, 3), families[f].scale);
                p = vsub(p, vscale(h.normal, up + depth));
                double h0 = vdot(h.normal, p) - h.offset;
                rp_vec3 q = rp_transform_point(&tf, p);
                double h1 = vdot(t.halfspace.normal, q) - t.halfspace.offset;
                double S = fmax(fmax(maxabs(p), maxabs(q)),
                                fmax(fmax(fabs(h.offset), fabs(t.halfspace.offset)), maxabs(tf.t)));
                double e = fabs(h1 - h0) / (EPS * S);
                worst = fmax(worst, e);
                if (!(e <= HEIGHT_BOUND) || !(h1 <= HEIGHT_BOUND * EPS * S)) {
                    print_shape("halfspace", &s);
                    fail_msg("%s half-space %d: height %.17g moved to %.17g (off %g eps*S)",
                             families[f].name, n, h0, h1, e);
                }
                if (h0 < -2 * HEIGHT_BOUND * EPS * S) {
                    deep++;
                    assert_true(h1 < 0.0); /* strictly inside stays strictly inside */
                }
            }
            /* There and back: the same plane within rounding. */
            rp_transform inv = rp_transform_inverse(&tf);
            rp_shape back = rp_transform_shape(&inv, &t);
            assert_int_equal(rp_shape_validate(&back), RP_OK);
            double S = fmax(fabs(h.offset), fmax(fabs(t.halfspace.offset), maxabs(tf.t)));
            double e = fabs(back.halfspace.offset - h.offset) / (EPS * S);
            worst_back = fmax(worst_back, e);
            assert_true(e <= 2 * HEIGHT_BOUND);
            assert_true(maxabs(vsub(back.halfspace.normal, h.normal)) <= 16 * EPS);
        }
        printf("family %s: half-space heights worst %.3g eps*S, offset there and back %.3g\n",
               families[f].name, worst, worst_back);
        assert_true(deep > 20000);
    }
}

/* ---- two half-spaces -------------------------------------------------------------- */

static double hs_distance(rp_vec3 na, double da, rp_vec3 nb, double db, rp_contact *c)
{
    rp_shape a = rp_shape_from_halfspace((rp_halfspace){na, da});
    rp_shape b = rp_shape_from_halfspace((rp_halfspace){nb, db});
    assert_int_equal(rp_shape_validate(&a), RP_OK);
    assert_int_equal(rp_shape_validate(&b), RP_OK);
    double d = check_bits(&a, &b);
    rp_contact k = rp_shape_contact(&a, &b);
    /* Each witness is its plane's point nearest the origin, n*d, bit for
     * bit whichever way round; the normal is a's or minus b's (the pair's
     * canonical order decides: they differ only in signed zeros when
     * opposite). */
    assert_true(same3(k.point_a, vscale(na, da)));
    assert_true(same3(k.point_b, vscale(nb, db)));
    assert_true(same3(k.normal, na) || same3(k.normal, vneg(nb)));
    assert_true(fabs(vdot(na, k.point_a) - da) <= 4 * EPS * fabs(da));
    assert_true(fabs(vdot(nb, k.point_b) - db) <= 4 * EPS * fabs(db));
    if (c)
        *c = k;
    return d;
}

static void halfspace_pairs_are_a_slab_when_opposite_and_unbounded_otherwise(void **state)
{
    (void)state;
    rp_vec3 z = V(0, 0, 1), mz = V(0, 0, -1), mz0 = V(-0.0, -0.0, -1);
    rp_contact c;
    /* Opposite along z: a = {z <= da}, b = {z >= -db}. */
    assert_true(same_bits(hs_distance(z, 1.0, mz, -3.0, &c), 2.0)); /* gap 1..3 */
    assert_true(c.normal.z == 1.0);
    assert_true(same_bits(hs_distance(z, 1.0, mz, -1.0, NULL), -0.0)); /* touching at z = 1 */
    assert_true(same_bits(hs_distance(z, 1.0, mz0, -1.0, NULL), -0.0));
    assert_true(same_bits(hs_distance(z, 1.0, mz, 2.0, NULL), -3.0)); /* slab -2..1 */
    assert_true(same_bits(hs_distance(mz, 2.0, z, 1.0, NULL), -3.0));
    /* Touching means touching: a margin of 0 is not violated. */
    rp_shape ta = rp_shape_from_halfspace((rp_halfspace){z, 1.0});
    rp_shape tb = rp_shape_from_halfspace((rp_halfspace){mz, -1.0});
    assert_false(rp_shapes_violate_margin(&ta, &tb, 0.0));
    assert_true(rp_shapes_violate_margin(&ta, &tb, DBL_TRUE_MIN));

    /* Random opposite pairs, the second built by negating the first's
     * normal, or by the constructor from the negated raw normal: -(da + db)
     * exactly. */
    test_rng g = {500};
    for (int n = 0; n < 5000; n++) {
        rp_vec3 raw = rnd3(&g, -3, 3);
        rp_shape a = mk_halfspace(raw, rng_uniform(&g, -5, 5));
        rp_vec3 nb = vneg(a.halfspace.normal);
        double db = rng_uniform(&g, -5, 5);
        if (n % 2) {
            rp_shape b = mk_halfspace(vneg(raw), db * vnorm(raw));
            nb = b.halfspace.normal;
            db = b.halfspace.offset;
            assert_true(exactly_opposite(&a.halfspace, &b.halfspace));
        }
        double d = hs_distance(a.halfspace.normal, a.halfspace.offset, nb, db, &c);
        assert_true(same_bits(d, -(a.halfspace.offset + db)));
        /* point_b - point_a = d * n (the gap or the slab across). */
        rp_vec3 res = vsub(vsub(c.point_b, c.point_a), vscale(c.normal, d));
        assert_true(maxabs(res) <= 8 * EPS * 5);
    }

    /* Not opposite: unbounded overlap, -DBL_MAX whatever the offsets. */
    rp_vec3 ob = random_unit(&g);
    assert_true(hs_distance(z, 1.0, z, -5.0, NULL) == -DBL_MAX); /* same direction */
    assert_true(hs_distance(z, -1e300, z, -1e300, NULL) == -DBL_MAX);
    assert_true(hs_distance(ob, 1.0, z, -3.0, NULL) == -DBL_MAX); /* oblique */
    assert_true(hs_distance(V(1, 0, 0), -7.0, z, -7.0, NULL) == -DBL_MAX);
    for (int n = 0; n < 2000; n++) { /* one ulp away from opposite, in one component */
        rp_vec3 na = random_unit(&g), nb = vneg(na);
        int i = n % 3;
        double *p = i == 0 ? &nb.x : i == 1 ? &nb.y : &nb.z;
        *p = nextafter(*p, n % 2 ? INFINITY : -INFINITY);
        double da = rng_uniform(&g, -2, 2), db = -da - 1.0; /* a gap of 1, were they opposite */
        assert_true(hs_distance(na, da, nb, db, NULL) == -DBL_MAX);
    }

    /* Offsets near DBL_MAX: the sum saturates, never inf or NaN. */
    const double big[] = {0.75 * DBL_MAX, DBL_MAX, 0x1p1023};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        double gap = hs_distance(z, -big[i], mz, -big[i], &c); /* planes 2*big apart */
        assert_true(gap == DBL_MAX);
        assert_true(c.distance == DBL_MAX && finite3(c.point_a) && finite3(c.point_b));
        double slab = hs_distance(z, big[i], mz, big[i], &c);
        assert_true(slab == -DBL_MAX);
        assert_true(finite3(c.point_a) && finite3(c.point_b));
        assert_true(hs_distance(z, big[i], mz, -big[i], NULL) == -0.0); /* touching */
        assert_true(hs_distance(z, -big[i], z, big[i], NULL) == -DBL_MAX);
        rp_shape x = rp_shape_from_halfspace((rp_halfspace){z, big[i]});
        rp_shape y = rp_shape_from_halfspace((rp_halfspace){mz, big[i]});
        assert_true(rp_shapes_violate_margin(&x, &y, -1e308));
        assert_false(rp_shapes_violate_margin(&x, &y, -DBL_MAX));
    }
}

/* ---- box against box: canonical order -------------------------------------------- */

static double *box_field(rp_box *b, int i)
{
    double *f[10] = {&b->center.x,       &b->center.y,       &b->center.z,   &b->half_extents.x,
                     &b->half_extents.y, &b->half_extents.z, &b->rotation.w, &b->rotation.x,
                     &b->rotation.y,     &b->rotation.z};
    return f[i];
}

/* Both ways round, the same bits and mirrored contacts; returns d. */
static double box_pair(const rp_box *a, const rp_box *b)
{
    rp_shape x = rp_shape_from_box(*a), y = rp_shape_from_box(*b);
    assert_int_equal(rp_shape_validate(&x), RP_OK);
    assert_int_equal(rp_shape_validate(&y), RP_OK);
    assert_true(same_bits(rp_box_box_signed_distance(a, b), rp_box_box_signed_distance(b, a)));
    return check_bits(&x, &y);
}

static void box_box_is_the_same_both_ways_round_for_nearly_equal_boxes(void **state)
{
    (void)state;
    test_rng g = {600};
    double worst = 0;
    for (int n = 0; n < 300; n++) {
        rp_shape s = random_shape(&g, RP_SHAPE_BOX);
        rp_box a = s.box, copy = s.box;
        rp_vec3 h = a.half_extents;
        double S = shape_S(&s);
        /* An identical box overlaps it by its thinnest width. */
        double want = -2.0 * fmin(h.x, fmin(h.y, h.z));
        double d = box_pair(&a, &copy);
        worst = fmax(worst, fabs(d - want) / (EPS * S));
        assert_true(fabs(d - want) <= 16 * EPS * S);
        /* One bit away, in every field, either way (a zero becomes -0.0). */
        for (int i = 0; i < 10; i++) {
            for (int dir = 0; dir < 2; dir++) {
                rp_box b = a;
                double *p = box_field(&b, i);
                if (*p == 0.0)
                    *p = dir ? -0.0 : DBL_TRUE_MIN;
                else
                    *p = nextafter(*p, dir ? INFINITY : -INFINITY);
                d = box_pair(&a, &b);
                worst = fmax(worst, fabs(d - want) / (EPS * S));
                if (!(fabs(d - want) <= 16 * EPS * S))
                    fail_msg("box %d, field %d: %.17g for %.17g", n, i, d, want);
            }
        }
        /* Sharing the first k fields, different after: the order is
         * decided by field k.  The quaternion's tail is permuted or
         * negated (the same norm, exactly), so the box stays valid. */
        for (int k = 0; k < 10; k++) {
            rp_box b = random_shape(&g, RP_SHAPE_BOX).box;
            for (int i = 0; i < k && i < 6; i++)
                *box_field(&b, i) = *box_field(&a, i);
            rp_quat q = a.rotation;
            if (k == 7)
                b.rotation = (rp_quat){q.w, q.y, q.z, q.x};
            else if (k == 8)
                b.rotation = (rp_quat){q.w, q.x, q.z, q.y};
            else if (k == 9)
                b.rotation = (rp_quat){q.w, q.x, q.y, -q.z};
            box_pair(&a, &b);
        }
    }
    printf("nearly equal boxes: worst %.3g eps*S from minus the thinnest width\n", worst);
}

/* ---- boxes with zero extents ------------------------------------------------------- */

/* A box and the shape it degenerates to. */
static rp_shape random_degenerate_box(test_rng *g, int nonzero)
{
    rp_vec3 h = rnd3(g, 0.1, 1.2);
    int keep = (int)(rng_next(g) % 3);
    /* nonzero = 0: a point; 1: a segment along axis `keep`; 2: a
     * rectangle without axis `keep`. */
    double e[3] = {h.x, h.y, h.z};
    for (int i = 0; i < 3; i++)
        if ((nonzero == 0) || (nonzero == 1 && i != keep) || (nonzero == 2 && i == keep))
            e[i] = 0.0;
    return mk_box(rnd3(g, -2, 2), V(e[0], e[1], e[2]),
                  random_quat(g, (int)(rng_next(g) % ROT_MODES)));
}

/* The zero-radius sphere or capsule a point or segment box is. */
static rp_shape core_of(const rp_box *b)
{
    rp_vec3 ax[3];
    rp_box_axes(b, ax);
    rp_vec3 h = b->half_extents, c = b->center;
    double e[3] = {h.x, h.y, h.z};
    for (int i = 0; i < 3; i++)
        if (e[i] > 0.0)
            return mk_capsule(vsub(c, vscale(ax[i], e[i])), vadd(c, vscale(ax[i], e[i])), 0.0);
    return mk_sphere(c, 0.0);
}

#define THICK 0x1p-20

/* A point box is a zero-radius sphere, a segment box a zero-radius
 * capsule, against every kind (also against degenerate boxes): the same
 * exact distance, computed by different kernels (the box's run in its
 * frame), each within 16 eps*S of it, so within 32 of each other (up to
 * 15 is observed, for segment boxes against boxes).  Every degenerate box
 * also lies between itself and itself thickened by THICK along its zero
 * extents: with A inside A' inside A grown by r, the signed distances
 * satisfy d(A) - r <= d(A') <= d(A) for gaps and penetrations alike, here
 * with r = THICK*sqrt(3), within the kernels' rounding (64 eps*S). */
#define CORE_BOUND 32.0

static void zero_extent_boxes_are_points_segments_and_rectangles(void **state)
{
    (void)state;
    static const char *const what[] = {"point", "segment", "rectangle"};
    for (int f = 0; f < NFAM; f++) {
        const family *fam = &families[f];
        test_rng g = {(uint64_t)(700 + f)};
        for (int nz = 0; nz < 3; nz++) {
            double worst[NKIND] = {0}, lo = INFINITY, hi = -INFINITY;
            for (int n = 0; n < 1600; n++) {
                int kind = n % NKIND;
                rp_vec3 off = family_offset(&g, fam);
                rp_shape db = random_degenerate_box(&g, nz);
                rp_shape other = kind == RP_SHAPE_BOX && n % 8 == 2
                                     ? random_degenerate_box(&g, (int)(rng_next(&g) % 3))
                                     : random_shape(&g, kind);
                rp_shape thick = db;
                rp_vec3 *h = &thick.box.half_extents;
                h->x = h->x > 0 ? h->x : THICK, h->y = h->y > 0 ? h->y : THICK;
                h->z = h->z > 0 ? h->z : THICK;
                double r = THICK * sqrt(3.0);

                db = place(&db, fam->scale, off);
                thick = place(&thick, fam->scale, off);
                other = place(&other, fam->scale, off);
                r = ldexp(r, fam->scale);
                double S = pair_S(&db, &other);
                double d = check_bits(&db, &other);
                if (nz < 2) {
                    rp_shape core = core_of(&db.box);
                    double want = rp_shape_signed_distance(&core, &other);
                    double e = fabs(d - want) / (EPS * fmax(S, shape_S(&core)));
                    worst[kind] = fmax(worst[kind], e);
                    if (!(e <= CORE_BOUND)) {
                        print_shape("core", &core);
                        pair_fail(&db, &other, "%s %s box against %s: %.17g, as a %s %.17g",
                                  fam->name, what[nz], kind_names[kind], d,
                                  nz ? "capsule" : "sphere", want);
                    }
                }
                double dt = rp_shape_signed_distance(&thick, &other);
                double tol = 64 * EPS * fmax(S, shape_S(&thick));
                lo = fmin(lo, (d - dt) / (EPS * S));
                hi = fmax(hi, (d - dt - r) / (EPS * S));
                if (!(d - dt >= -tol && d - dt <= r + tol))
                    pair_fail(&db, &other, "%s %s box %.17g, thickened %.17g (by up to %g)",
                              fam->name, what[nz], d, dt, r);
            }
            printf("family %s %s boxes:", fam->name, what[nz]);
            if (nz < 2)
                for (int k = 0; k < NKIND; k++)
                    printf(" vs %s %.3g", kind_names[k], worst[k]);
            printf("%s thickened: d - d' >= %.3g, d - d' - r <= %.3g eps*S (bounds -64, 64)\n",
                   nz < 2 ? " eps*S;" : "", lo, hi);
        }
    }
}

/* ---- near the largest double ---------------------------------------------------- */

/* A unit-scale shape scaled by 2^1020 to 2^1022 (coordinates up to about
 * 1.6e308), half the time with a radius, an extent or an offset anywhere
 * up to DBL_MAX, so that differences, sums of radii and witness points
 * overflow unless the kernels take care. */
static rp_shape random_huge_shape(test_rng *g, int kind)
{
    rp_shape s = random_shape(g, kind);
    s = place(&s, 1020 + (int)(rng_next(g) % 3), V(0, 0, 0));
    if (chance(g, 0.5)) {
        double big = rng_uniform(g, 0, DBL_MAX);
        if (kind == RP_SHAPE_SPHERE)
            s.sphere.radius = big;
        else if (kind == RP_SHAPE_CAPSULE)
            s.capsule.radius = big;
        else if (kind == RP_SHAPE_BOX)
            s.box.half_extents.z = big;
        else
            s.halfspace.offset = chance(g, 0.5) ? big : -big;
    }
    return s;
}

static bool nan3(rp_vec3 v)
{
    return isnan(v.x) || isnan(v.y) || isnan(v.z);
}

/* Every kind pair near DBL_MAX: finite distances (saturated where the
 * exact value is beyond the double range), the kernels' bits, symmetric,
 * mirrored, the margin predicate, and witness points that are never NaN. */
static void every_kind_pair_near_the_largest_double_is_finite_and_consistent(void **state)
{
    (void)state;
    test_rng g = {800};
    long saturated = 0;
    for (int n = 0; n < 16 * 1000; n++) {
        int ka = n % NKIND, kb = (n / NKIND) % NKIND;
        rp_shape a = random_huge_shape(&g, ka), b = random_huge_shape(&g, kb);
        if (ka == RP_SHAPE_HALFSPACE && kb == RP_SHAPE_HALFSPACE && n % 3 == 0)
            b.halfspace.normal = vneg(a.halfspace.normal);
        double d = check_bits(&a, &b);
        saturated += fabs(d) == DBL_MAX;
        rp_contact c = rp_shape_contact(&a, &b);
        if (nan3(c.point_a) || nan3(c.point_b) || !finite3(c.normal))
            pair_fail(&a, &b, "%s-%s: NaN in the contact", kind_names[ka], kind_names[kb]);
    }
    printf("near DBL_MAX: %ld of %d distances saturated\n", saturated, 16 * 1000);
    assert_true(saturated > 100);
}

/* geometry.h: "Witness point coordinates saturate the same way" (as the
 * distances: +-DBL_MAX, never an infinity), and the sphere and capsule
 * kernels do (test_geometry.c checks them near DBL_MAX).  The box and
 * half-space contacts (core_box_contact, core_halfspace_contact,
 * rp_box_halfspace_contact, rp_box_box_contact in src/geometry/box.c) add
 * a radius or the saturated distance to a point without saturating, and
 * give infinite witnesses for valid shapes near DBL_MAX. */
static void box_and_halfspace_contacts_saturate_their_witness_points(void **state)
{
    (void)state;
    /* A sphere reaching past DBL_MAX above a floor {z >= 0}: its lowest
     * point is at z = 0.4e308, but the witness faces the solid's side. */
    rp_shape s = mk_sphere(V(0, 0, 0.9 * DBL_MAX), 0.5 * DBL_MAX);
    rp_shape floor_ = mk_halfspace(V(0, 0, -1), 0.0);
    rp_shape box = mk_box(V(0, 0, 0.9 * DBL_MAX), V(1, 1, 0.5 * DBL_MAX), (rp_quat){1, 0, 0, 0});
    const rp_shape *pairs[][2] = {{&s, &floor_}, {&box, &floor_}, {&s, &box}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        rp_contact c = rp_shape_contact(pairs[i][0], pairs[i][1]);
        if (!finite3(c.point_a) || !finite3(c.point_b)) {
            print_contact("contact", c);
            pair_fail(pairs[i][0], pairs[i][1], "witness point not finite");
        }
    }
    /* And the random pairs of the test above (1 to 3 % of those with a
     * box or a half-space have an infinite witness; none of the sphere and
     * capsule pairs). */
    test_rng g = {800};
    for (int n = 0; n < 16 * 1000; n++) {
        int ka = n % NKIND, kb = (n / NKIND) % NKIND;
        rp_shape a = random_huge_shape(&g, ka), b = random_huge_shape(&g, kb);
        if (ka == RP_SHAPE_HALFSPACE && kb == RP_SHAPE_HALFSPACE && n % 3 == 0)
            b.halfspace.normal = vneg(a.halfspace.normal);
        rp_contact c = rp_shape_contact(&a, &b);
        if (!finite3(c.point_a) || !finite3(c.point_b)) {
            print_contact("contact", c);
            pair_fail(&a, &b, "%s-%s pair %d: witness point not finite", kind_names[ka],
                      kind_names[kb], n);
        }
    }
}

/* rp_halfspace_new divides the offset by the normal's largest component
 * and length: a tiny normal with an ordinary offset gives an infinite
 * offset, returned with RP_OK although rp_shape_validate refuses it; two
 * such half-spaces with opposite normals and offsets of opposite signs
 * then give a NaN distance (-(inf + -inf)). */
static void halfspace_new_never_builds_what_validate_refuses(void **state)
{
    (void)state;
    rp_halfspace h, k;
    rp_status st = rp_halfspace_new(V(0, 0, 1e-300), 1e10, &h); /* z <= 1e310 */
    if (st == RP_OK) {
        rp_shape s = rp_shape_from_halfspace(h);
        assert_int_equal(rp_shape_validate(&s), RP_OK);
        assert_true(isfinite(h.offset));
    }
    st = rp_halfspace_new(V(0, 0, -1e-300), -1e10, &h); /* z >= -1e310... */
    rp_status st2 = rp_halfspace_new(V(0, 0, 1e-300), 1e10, &k);
    if (st == RP_OK && st2 == RP_OK) {
        rp_shape a = rp_shape_from_halfspace(h), b = rp_shape_from_halfspace(k);
        double d = rp_shape_signed_distance(&a, &b);
        if (isnan(d))
            fail_msg("opposite half-spaces from rp_halfspace_new: distance %a", d);
    }
}

/* The moved offset d + n'.t is summed in doubles: n'.t overflows for
 * translations near DBL_MAX although d + n'.t may be representable, and
 * the offset saturates to DBL_MAX instead (here 1.65e308 becomes
 * 1.80e308: the plane moves by 1.5e307). */
static void transform_shape_keeps_a_representable_halfspace_offset(void **state)
{
    (void)state;
    rp_shape s = mk_halfspace(V(1, 1, 0), -0.5 * DBL_MAX); /* offset -0.5 DBL_MAX/sqrt(2) */
    rp_transform tf = rp_transform_identity();
    tf.t = V(0.9 * DBL_MAX, 0.9 * DBL_MAX, 0);
    rp_shape t = rp_transform_shape(&tf, &s);
    /* Exact: d + n.t = d + sqrt(2)*0.9 DBL_MAX, about 1.65e308. */
    long double want = (long double)s.halfspace.offset +
                       (long double)s.halfspace.normal.x * (long double)tf.t.x +
                       (long double)s.halfspace.normal.y * (long double)tf.t.y;
    assert_true(want < (long double)DBL_MAX);
    if (!(fabsl((long double)t.halfspace.offset - want) <= 16 * EPS * (long double)DBL_MAX))
        fail_msg("moved offset %.17g, want %.17Lg", t.halfspace.offset, want);
}

/* core_box_contact (src/geometry/box.c) takes the separated core point as
 * seg_at(p0, p1, p1 - p0, t) in metres: for a valid capsule whose axis
 * spans more than DBL_MAX along a coordinate, p1 - p0 is infinite and the
 * witness is NaN at t = 0 (inf * 0) and infinite elsewhere, although the
 * distance is right.  geometry.h: results are never NaN for valid input.
 * Found by fuzz_geometry. */
static void capsule_box_contact_is_never_nan_for_long_capsules(void **state)
{
    (void)state;
    rp_shape k = mk_capsule(V(0, -1e308, 0), V(0, 1e308, 0), 0.0);
    /* A box beyond the capsule's first end: the closest core point is p0. */
    rp_shape b = mk_box(V(0, -1.5e308, 0), V(1, 1, 1), (rp_quat){1, 0, 0, 0});
    double d = check_bits(&k, &b); /* the distance and its bits are fine */
    assert_true(fabs(d - 0.5e308) <= 16 * EPS * 1.5e308);
    rp_contact c = rp_shape_contact(&k, &b);
    if (nan3(c.point_a) || nan3(c.point_b) || !finite3(c.point_a) || !finite3(c.point_b)) {
        print_contact("contact", c);
        pair_fail(&k, &b, "capsule-box witness not finite");
    }
    /* The witness on the capsule is its end p0, the box's its face. */
    assert_true(c.point_a.y == -1e308 && fabs(c.point_b.y + 1.5e308) <= 16 * EPS * 1.5e308);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dispatcher_is_the_kernels_symmetric_and_mirrored_for_every_kind_pair),
        cmocka_unit_test(distances_are_invariant_under_rigid_motions),
        cmocka_unit_test(transform_shape_moves_box_vertices),
        cmocka_unit_test(transform_shape_moves_halfspaces_with_their_points),
        cmocka_unit_test(halfspace_pairs_are_a_slab_when_opposite_and_unbounded_otherwise),
        cmocka_unit_test(box_box_is_the_same_both_ways_round_for_nearly_equal_boxes),
        cmocka_unit_test(zero_extent_boxes_are_points_segments_and_rectangles),
        cmocka_unit_test(every_kind_pair_near_the_largest_double_is_finite_and_consistent),
        cmocka_unit_test(box_and_halfspace_contacts_saturate_their_witness_points),
        cmocka_unit_test(halfspace_new_never_builds_what_validate_refuses),
        cmocka_unit_test(transform_shape_keeps_a_representable_halfspace_offset),
        cmocka_unit_test(capsule_box_contact_is_never_nan_for_long_capsules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
