/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the distance kernels (include/repose/geometry.h) on any
 * shapes the constructors accept.  The input is read as doubles, 8 bytes
 * each (missing bytes are zero); a leading byte picks, per value, whether it
 * is taken as it is or mapped to a small, a unit-scale or a huge magnitude,
 * so that ordinary pairs, tiny ones and pairs near DBL_MAX all come up.
 *
 * Invariants, for a sphere, a capsule, a box and a half-space built from
 * the input (a shape whose constructor refuses it is skipped):
 *   - every signed distance is finite (never NaN, at most DBL_MAX);
 *   - each contact's distance equals the signed distance bit for bit, its
 *     normal is finite and of unit length within 1e-12;
 *   - a capsule whose ends coincide gives the sphere's bits exactly;
 *   - sphere and capsule pairs are symmetric bit for bit (the dispatcher);
 *   - box-box too gives finite distances and unit normals;
 *   - a sphere's distance to a box lies between its distance to the box's
 *     bounding ball and to its centre (both within rounding).
 *
 * The dispatcher (rp_shape_signed_distance, rp_shape_contact,
 * rp_shapes_violate_margin) on every ordered pair, each shape with itself
 * included, of up to six shapes: the four above, a second box (from the
 * sphere's and capsule's numbers) and the half-space exactly opposite the
 * first (the next value its offset: a slab or a gap):
 *   - every shape a constructor builds passes rp_shape_validate;
 *   - d(a, b) is finite and equals d(b, a) bit for bit;
 *   - the contact carries d's bits and a unit normal, its witness points
 *     are finite (saturated, never NaN or infinite), and contact(b,
 *     a) is its exact mirror (points swapped, normal negated) unless a and
 *     b are the same shape;
 *   - rp_shapes_violate_margin is false at d and true one ulp above it.
 * Then a rigid transform read from the input (translation, quaternion) is
 * applied with rp_transform_shape: every moved shape whose coordinates
 * stayed finite passes rp_shape_validate, every pair of moved shapes meets
 * the invariants above, and where nothing is saturated and the pair's
 * magnitudes (with the translation's) lie in [1e-280, 1e100] the distance
 * is the unmoved pair's within 1024 eps*S (test_dispatch.c observes 4).
 *
 * Inputs are at most 240 bytes: 8 mode bytes and 29 doubles.
 */
#include <float.h>
#include <string.h>

#include "fuzz_util.h"
#include "repose/geometry.h"

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
    uint8_t modes[8];
    unsigned k;
} reader;

static double next(reader *r)
{
    uint8_t b[8] = {0};
    for (int i = 0; i < 8; i++)
        b[i] = r->at < r->n ? r->p[r->at++] : 0;
    double x;
    memcpy(&x, b, sizeof x);
    if (!isfinite(x))
        return x; /* the constructors must refuse it */
    unsigned mode = (r->modes[(r->k / 4) % 8] >> (2 * (r->k % 4))) & 3u;
    r->k++;
    /* 0: as read; 1: unit scale; 2: tiny; 3: huge (same sign). */
    double m = frexp(x, &(int){0});
    switch (mode) {
    case 1:
        return ldexp(m, 2);
    case 2:
        return ldexp(m, -1000 + (int)(r->k * 37 % 200));
    case 3:
        return ldexp(m, 1000 + (int)(r->k % 23));
    default:
        return x;
    }
}

static rp_vec3 next3(reader *r)
{
    rp_vec3 v;
    v.x = next(r);
    v.y = next(r);
    v.z = next(r);
    return v;
}

static void check_contact(rp_contact c, double d, const char *what)
{
    FUZZ_CHECK(isfinite(d) && fabs(d) <= DBL_MAX, "%s: distance %g", what, d);
    FUZZ_CHECK(memcmp(&c.distance, &d, sizeof d) == 0, "%s: contact %a, distance %a", what,
               c.distance, d);
    double n = sqrt(c.normal.x * c.normal.x + c.normal.y * c.normal.y + c.normal.z * c.normal.z);
    FUZZ_CHECK(fabs(n - 1.0) <= 1e-12, "%s: |normal| = %.17g", what, n);
}

static double maxabs(rp_vec3 v)
{
    return fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
}

/* |v|, scaled by its largest component so that no square underflows or
 * overflows. */
static double norm3(rp_vec3 v)
{
    double m = maxabs(v);
    if (!(m > 0.0) || !isfinite(m))
        return m;
    double x = v.x / m, y = v.y / m, z = v.z / m;
    return m * sqrt(x * x + y * y + z * z);
}

static const char *const kind_names[] = {"sphere", "capsule", "box", "halfspace"};

static bool finite3(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

static bool nan3(rp_vec3 v)
{
    return isnan(v.x) || isnan(v.y) || isnan(v.z);
}

static bool same3(rp_vec3 a, rp_vec3 b)
{
    return fuzz_same_bits(a.x, b.x) && fuzz_same_bits(a.y, b.y) && fuzz_same_bits(a.z, b.z);
}

/* Every field of the live member bit for bit. */
static bool same_shape(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case RP_SHAPE_SPHERE:
        return same3(a->sphere.center, b->sphere.center) &&
               fuzz_same_bits(a->sphere.radius, b->sphere.radius);
    case RP_SHAPE_CAPSULE:
        return same3(a->capsule.a, b->capsule.a) && same3(a->capsule.b, b->capsule.b) &&
               fuzz_same_bits(a->capsule.radius, b->capsule.radius);
    case RP_SHAPE_BOX: {
        rp_quat p = a->box.rotation, q = b->box.rotation;
        return same3(a->box.center, b->box.center) &&
               same3(a->box.half_extents, b->box.half_extents) && fuzz_same_bits(p.w, q.w) &&
               fuzz_same_bits(p.x, q.x) && fuzz_same_bits(p.y, q.y) && fuzz_same_bits(p.z, q.z);
    }
    default:
        return same3(a->halfspace.normal, b->halfspace.normal) &&
               fuzz_same_bits(a->halfspace.offset, b->halfspace.offset);
    }
}

/* The largest magnitude among a shape's coordinates, radii, extents and
 * offsets (S of geometry.h's contract). */
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

/* Whether a moved shape's coordinates stayed finite (r*p + t may
 * overflow; a half-space's offset saturates instead). */
static bool shape_finite(const rp_shape *s)
{
    return isfinite(shape_S(s));
}

/* The dispatcher's invariants for one ordered pair (see the top). */
static void check_dispatch(const rp_shape *a, const rp_shape *b, const char *when)
{
    const char *ka = kind_names[a->kind], *kb = kind_names[b->kind];
    double d = rp_shape_signed_distance(a, b), e = rp_shape_signed_distance(b, a);
    FUZZ_CHECK(fabs(d) <= DBL_MAX, "%s %s-%s: distance %a", when, ka, kb, d);
    FUZZ_CHECK(fuzz_same_bits(d, e), "%s %s-%s: d(a,b) %a, d(b,a) %a", when, ka, kb, d, e);
    rp_contact c = rp_shape_contact(a, b);
    FUZZ_CHECK(fuzz_same_bits(c.distance, d), "%s %s-%s: contact %a, distance %a", when, ka, kb,
               c.distance, d);
    double n = sqrt(c.normal.x * c.normal.x + c.normal.y * c.normal.y + c.normal.z * c.normal.z);
    FUZZ_CHECK(fabs(n - 1.0) <= 1e-12, "%s %s-%s: |normal| = %.17g", when, ka, kb, n);
    FUZZ_CHECK(!nan3(c.point_a) && !nan3(c.point_b), "%s %s-%s: NaN witness", when, ka, kb);
    FUZZ_CHECK(finite3(c.point_a) && finite3(c.point_b), "%s %s-%s: witness %g %g %g, %g %g %g",
               when, ka, kb, c.point_a.x, c.point_a.y, c.point_a.z, c.point_b.x, c.point_b.y,
               c.point_b.z);
    if (!same_shape(a, b)) {
        rp_contact m = rp_shape_contact(b, a);
        rp_vec3 neg = {-c.normal.x, -c.normal.y, -c.normal.z};
        FUZZ_CHECK(fuzz_same_bits(m.distance, d) && same3(m.point_a, c.point_b) &&
                       same3(m.point_b, c.point_a) && same3(m.normal, neg),
                   "%s %s-%s: contact(b, a) is not the mirror of contact(a, b)", when, ka, kb);
    }
    FUZZ_CHECK(!rp_shapes_violate_margin(a, b, d) &&
                   rp_shapes_violate_margin(b, a, nextafter(d, INFINITY)),
               "%s %s-%s: margin predicate at %a", when, ka, kb, d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size, 0, {0}, 0};
    for (int i = 0; i < 8; i++)
        r.modes[i] = r.at < r.n ? r.p[r.at++] : 0;
    rp_sphere s;
    rp_capsule k;
    rp_box b;
    rp_halfspace h;
    rp_vec3 c = next3(&r), a2 = next3(&r);
    double rad = fabs(next(&r));
    bool have_s = rp_sphere_new(c, rad, &s) == RP_OK;
    bool have_k = rp_capsule_new(c, a2, rad, &k) == RP_OK;
    rp_vec3 bc = next3(&r), he = next3(&r);
    he = (rp_vec3){fabs(he.x), fabs(he.y), fabs(he.z)};
    double qw = next(&r), qx = next(&r), qy = next(&r), qz = next(&r);
    bool have_b = rp_box_new(bc, he, qw, qx, qy, qz, &b) == RP_OK;
    rp_vec3 hn = next3(&r);
    bool have_h = rp_halfspace_new(hn, next(&r), &h) == RP_OK;

    if (have_s && have_b) {
        double d = rp_sphere_box_signed_distance(&s, &b);
        check_contact(rp_sphere_box_contact(&s, &b), d, "sphere-box");
        rp_capsule point = {s.center, s.center, s.radius};
        double dp = rp_capsule_box_signed_distance(&point, &b);
        FUZZ_CHECK(memcmp(&d, &dp, sizeof d) == 0, "sphere-box %a, point capsule %a", d, dp);
        /* Between the bounding ball and the centre, where nothing is huge. */
        double S =
            fmax(fmax(maxabs(s.center), maxabs(b.center)), fmax(maxabs(b.half_extents), s.radius));
        if (S < 1e150 && S > 1e-150) {
            rp_vec3 dc = {s.center.x - b.center.x, s.center.y - b.center.y,
                          s.center.z - b.center.z};
            /* (Scaled norms: a difference of 1e-163 has a square below the
             * smallest double, and an unscaled norm would come out 0.) */
            double to_c = norm3(dc), ball = norm3(b.half_extents);
            double slack = 64 * DBL_EPSILON * S;
            FUZZ_CHECK(d <= to_c - s.radius + slack, "sphere-box %g above the centre's %g", d,
                       to_c - s.radius);
            FUZZ_CHECK(d >= to_c - ball - s.radius - slack, "sphere-box %g below the ball's %g", d,
                       to_c - ball - s.radius);
        }
    }
    if (have_k && have_b) {
        double d = rp_capsule_box_signed_distance(&k, &b);
        check_contact(rp_capsule_box_contact(&k, &b), d, "capsule-box");
    }
    if (have_s && have_h) {
        double d = rp_sphere_halfspace_signed_distance(&s, &h);
        check_contact(rp_sphere_halfspace_contact(&s, &h), d, "sphere-halfspace");
        rp_capsule point = {s.center, s.center, s.radius};
        double dp = rp_capsule_halfspace_signed_distance(&point, &h);
        FUZZ_CHECK(memcmp(&d, &dp, sizeof d) == 0, "sphere-halfspace %a, point capsule %a", d, dp);
    }
    if (have_k && have_h) {
        double d = rp_capsule_halfspace_signed_distance(&k, &h);
        check_contact(rp_capsule_halfspace_contact(&k, &h), d, "capsule-halfspace");
    }
    if (have_b && have_h) {
        double d = rp_box_halfspace_signed_distance(&b, &h);
        check_contact(rp_box_halfspace_contact(&b, &h), d, "box-halfspace");
    }
    /* A second box from the sphere's and capsule's numbers. */
    rp_box b2;
    bool have_b2 = rp_box_new(c, a2, qx, qy, qz, qw, &b2) == RP_OK;
    if (have_b && have_b2) {
        double d = rp_box_box_signed_distance(&b, &b2);
        check_contact(rp_box_box_contact(&b, &b2), d, "box-box");
    }
    if (have_s && have_k) {
        rp_shape x = rp_shape_from_sphere(s), y = rp_shape_from_capsule(k);
        double d1 = rp_shape_signed_distance(&x, &y), d2 = rp_shape_signed_distance(&y, &x);
        FUZZ_CHECK(memcmp(&d1, &d2, sizeof d1) == 0, "sphere-capsule %a, capsule-sphere %a", d1,
                   d2);
        check_contact(rp_shape_contact(&x, &y), d1, "sphere-capsule");
    }

    /* ---- the dispatcher on every pair --------------------------------------------- */
    /* The half-space exactly opposite h (the same normal negated, so the
     * constructor negates the unit one exactly), its offset the next value. */
    rp_halfspace h2;
    rp_vec3 hn2 = {-hn.x, -hn.y, -hn.z};
    bool have_h2 = rp_halfspace_new(hn2, next(&r), &h2) == RP_OK;
    rp_shape shapes[6];
    int n = 0;
    if (have_s)
        shapes[n++] = rp_shape_from_sphere(s);
    if (have_k)
        shapes[n++] = rp_shape_from_capsule(k);
    if (have_b)
        shapes[n++] = rp_shape_from_box(b);
    if (have_b2)
        shapes[n++] = rp_shape_from_box(b2);
    if (have_h)
        shapes[n++] = rp_shape_from_halfspace(h);
    if (have_h2)
        shapes[n++] = rp_shape_from_halfspace(h2);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(rp_shape_validate(&shapes[i]) == RP_OK, "%s %d from its constructor: %d",
                   kind_names[shapes[i].kind], i, (int)rp_shape_validate(&shapes[i]));
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++)
            check_dispatch(&shapes[i], &shapes[j], "built");

    /* ---- moved by a rigid transform ------------------------------------------------ */
    rp_vec3 tt = next3(&r);
    double tw = next(&r), tx = next(&r), ty = next(&r), tz = next(&r);
    rp_transform tf;
    if (rp_transform_from_quaternion(tt, tw, tx, ty, tz, &tf) != RP_OK)
        return 0;
    rp_shape moved[6];
    bool finite[6];
    for (int i = 0; i < n; i++) {
        moved[i] = rp_transform_shape(&tf, &shapes[i]);
        FUZZ_CHECK(moved[i].kind == shapes[i].kind, "moved shape changed kind");
        finite[i] = shape_finite(&moved[i]);
        if (finite[i])
            FUZZ_CHECK(rp_shape_validate(&moved[i]) == RP_OK, "moved %s %d: %d",
                       kind_names[shapes[i].kind], i, (int)rp_shape_validate(&moved[i]));
    }
    for (int i = 0; i < n; i++) {
        for (int j = i; j < n; j++) {
            if (!finite[i] || !finite[j])
                continue;
            check_dispatch(&moved[i], &moved[j], "moved");
            double d0 = rp_shape_signed_distance(&shapes[i], &shapes[j]);
            double d1 = rp_shape_signed_distance(&moved[i], &moved[j]);
            double S = fmax(fmax(shape_S(&shapes[i]), shape_S(&shapes[j])),
                            fmax(fmax(shape_S(&moved[i]), shape_S(&moved[j])), maxabs(tf.t)));
            if (fabs(d0) == DBL_MAX || fabs(d1) == DBL_MAX || !(S >= 1e-280 && S <= 1e100))
                continue;
            FUZZ_CHECK(fabs(d1 - d0) <= 1024 * DBL_EPSILON * S,
                       "%s-%s: %.17g moved gives %.17g (off %g eps*S)", kind_names[shapes[i].kind],
                       kind_names[shapes[j].kind], d0, d1, fabs(d1 - d0) / (DBL_EPSILON * S));
        }
    }
    return 0;
}
