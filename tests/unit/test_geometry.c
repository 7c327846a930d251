/* SPDX-License-Identifier: MIT */
/*
 * Geometry core: constructors and validation, hand-computed distances,
 * contacts and normals, and the invariance properties of the kernels.
 * (Accuracy against the high-precision reference lives in
 * test_geometry_accuracy.c.)
 */
#include <float.h>

#include "test_util.h"

#include "repose/geometry.h"

#define EPS DBL_EPSILON

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static rp_shape sphere(rp_vec3 c, double r)
{
    rp_sphere s;
    assert_int_equal(rp_sphere_new(c, r, &s), RP_OK);
    return rp_shape_from_sphere(s);
}

static rp_shape capsule(rp_vec3 a, rp_vec3 b, double r)
{
    rp_capsule c;
    assert_int_equal(rp_capsule_new(a, b, r, &c), RP_OK);
    return rp_shape_from_capsule(c);
}

static double max_abs_v(rp_vec3 v)
{
    return fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
}

/* S of the accuracy contract: the largest magnitude among the coordinates
 * and radii of a pair. */
static double shape_scale(const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE)
        return fmax(max_abs_v(s->sphere.center), s->sphere.radius);
    return fmax(fmax(max_abs_v(s->capsule.a), max_abs_v(s->capsule.b)), s->capsule.radius);
}

static double pair_scale(const rp_shape *a, const rp_shape *b)
{
    return fmax(shape_scale(a), shape_scale(b));
}

static rp_vec3 random_point(test_rng *r, double half)
{
    return V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
}

/* A random sphere or capsule within a 2 m cube; capsules up to ~0.5 m long. */
static rp_shape random_shape(test_rng *r)
{
    rp_vec3 a = random_point(r, 1.0);
    double radius = rng_uniform(r, 0.0, 0.2);
    if (rng_next(r) & 1)
        return sphere(a, radius);
    rp_vec3 d = random_point(r, 0.3);
    return capsule(a, V(a.x + d.x, a.y + d.y, a.z + d.z), radius);
}

/* ---- constructors and validation -------------------------------------- */

static const double bad_values[] = {NAN, INFINITY, -INFINITY};

static void sphere_new_rejects_nonfinite_center_in_every_coordinate(void **state)
{
    (void)state;
    for (int axis = 0; axis < 3; axis++) {
        for (size_t k = 0; k < sizeof bad_values / sizeof bad_values[0]; k++) {
            double c[3] = {0.1, 0.2, 0.3};
            c[axis] = bad_values[k];
            rp_sphere out = {{7, 7, 7}, 7};
            assert_int_equal(rp_sphere_new(V(c[0], c[1], c[2]), 0.5, &out), RP_ERR_NONFINITE);
            assert_true(out.radius == 7 && out.center.x == 7); /* untouched */
        }
    }
}

static void capsule_new_rejects_nonfinite_in_every_coordinate(void **state)
{
    (void)state;
    for (int coord = 0; coord < 6; coord++) {
        for (size_t k = 0; k < sizeof bad_values / sizeof bad_values[0]; k++) {
            double p[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
            p[coord] = bad_values[k];
            rp_capsule out;
            assert_int_equal(rp_capsule_new(V(p[0], p[1], p[2]), V(p[3], p[4], p[5]), 0.1, &out),
                             RP_ERR_NONFINITE);
        }
    }
}

static void constructors_reject_bad_radius_with_distinct_codes(void **state)
{
    (void)state;
    rp_sphere s;
    rp_capsule c;
    const double negative[] = {-1.0, -1e-300, -DBL_MIN, -5e-324};
    for (size_t i = 0; i < sizeof negative / sizeof negative[0]; i++) {
        assert_int_equal(rp_sphere_new(V(0, 0, 0), negative[i], &s), RP_ERR_RADIUS_NEGATIVE);
        assert_int_equal(rp_capsule_new(V(0, 0, 0), V(1, 0, 0), negative[i], &c),
                         RP_ERR_RADIUS_NEGATIVE);
    }
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(rp_sphere_new(V(0, 0, 0), bad_values[k], &s), RP_ERR_RADIUS_NONFINITE);
        assert_int_equal(rp_capsule_new(V(0, 0, 0), V(1, 0, 0), bad_values[k], &c),
                         RP_ERR_RADIUS_NONFINITE);
    }
    assert_int_not_equal(RP_ERR_RADIUS_NEGATIVE, RP_ERR_RADIUS_NONFINITE);
    assert_int_not_equal(RP_ERR_RADIUS_NEGATIVE, RP_ERR_NONFINITE);
    assert_int_equal(rp_sphere_new(V(0, 0, 0), 0.5, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_capsule_new(V(0, 0, 0), V(0, 0, 0), 0.5, NULL), RP_ERR_INVALID_ARG);
}

static void radius_zero_and_degenerate_capsule_are_valid(void **state)
{
    (void)state;
    rp_sphere s;
    rp_capsule c;
    assert_int_equal(rp_sphere_new(V(1, 2, 3), 0.0, &s), RP_OK);
    assert_true(s.radius == 0.0 && s.center.z == 3.0);
    assert_int_equal(rp_capsule_new(V(1, 2, 3), V(1, 2, 3), 0.0, &c), RP_OK);
    assert_int_equal(rp_capsule_new(V(1, 2, 3), V(1, 2, 3), -0.0, &c), RP_OK);
    rp_shape sh = rp_shape_from_capsule(c);
    assert_int_equal(sh.kind, RP_SHAPE_CAPSULE);
    assert_int_equal(rp_shape_validate(&sh), RP_OK);
}

static void validate_rejects_literals_with_bad_fields(void **state)
{
    (void)state;
    assert_int_equal(rp_shape_validate(NULL), RP_ERR_INVALID_ARG);
    for (int field = 0; field < 7; field++) {
        for (size_t k = 0; k < 3; k++) {
            double f[7] = {0, 0, 0, 1, 1, 1, 0.1};
            f[field] = bad_values[k];
            rp_shape s;
            s.kind = RP_SHAPE_CAPSULE;
            s.capsule.a = V(f[0], f[1], f[2]);
            s.capsule.b = V(f[3], f[4], f[5]);
            s.capsule.radius = f[6];
            assert_int_equal(rp_shape_validate(&s),
                             field == 6 ? RP_ERR_RADIUS_NONFINITE : RP_ERR_NONFINITE);
        }
    }
    for (int field = 0; field < 4; field++) {
        for (size_t k = 0; k < 3; k++) {
            double f[4] = {0, 0, 0, 0.1};
            f[field] = bad_values[k];
            rp_shape s;
            s.kind = RP_SHAPE_SPHERE;
            s.sphere.center = V(f[0], f[1], f[2]);
            s.sphere.radius = f[3];
            assert_int_equal(rp_shape_validate(&s),
                             field == 3 ? RP_ERR_RADIUS_NONFINITE : RP_ERR_NONFINITE);
        }
    }
    rp_shape neg = sphere(V(0, 0, 0), 1);
    neg.sphere.radius = -0.5;
    assert_int_equal(rp_shape_validate(&neg), RP_ERR_RADIUS_NEGATIVE);
    rp_shape bad_kind = sphere(V(0, 0, 0), 1);
    bad_kind.kind = (rp_shape_kind)42;
    assert_int_equal(rp_shape_validate(&bad_kind), RP_ERR_SHAPE_KIND);
}

/* ---- hand-computed distances ------------------------------------------- */

static void sphere_sphere_gap_touch_and_penetration(void **state)
{
    (void)state;
    rp_shape a = sphere(V(0, 0, 0), 0.5);
    rp_shape gap = sphere(V(3, 0, 0), 0.5);
    rp_shape touch = sphere(V(1, 0, 0), 0.5);
    rp_shape deep = sphere(V(0.25, 0, 0), 0.5);
    rp_shape concentric = sphere(V(0, 0, 0), 0.25);
    assert_true(rp_shape_signed_distance(&a, &gap) == 2.0);
    assert_true(rp_shape_signed_distance(&a, &touch) == 0.0);
    assert_true(rp_shape_signed_distance(&a, &deep) == -0.75);
    assert_true(rp_shape_signed_distance(&a, &concentric) == -0.75);
}

static void capsule_capsule_parallel_overlap_is_gap_between_axes(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(2, 0, 0), 0.25);
    rp_shape b = capsule(V(1, 1, 0), V(3, 1, 0), 0.25);
    assert_true(rp_shape_signed_distance(&a, &b) == 0.5);
    rp_shape anti = capsule(V(3, 1, 0), V(1, 1, 0), 0.25);
    assert_true(rp_shape_signed_distance(&a, &anti) == 0.5);
    rp_shape touching = capsule(V(-5, 0.5, 0), V(0.5, 0.5, 0), 0.25);
    assert_true(rp_shape_signed_distance(&a, &touching) == 0.0);
}

static void capsule_capsule_parallel_disjoint_is_endpoint_distance(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(1, 0, 0), 0.0);
    rp_shape b = capsule(V(4, 4, 0), V(9, 4, 0), 0.0);
    assert_true(rp_shape_signed_distance(&a, &b) == 5.0); /* (1,0,0) to (4,4,0) */
}

static void capsule_capsule_crossing_axes_penetrate_by_both_radii(void **state)
{
    (void)state;
    rp_shape a = capsule(V(-1, 0, 0), V(1, 0, 0), 0.25);
    rp_shape b = capsule(V(0, -1, 0), V(0, 1, 0), 0.5);
    assert_true(rp_shape_signed_distance(&a, &b) == -0.75);
    rp_shape over = capsule(V(0, -1, 2), V(0, 1, 2), 0.5);
    assert_true(rp_shape_signed_distance(&a, &over) == 1.25);
}

static void capsule_capsule_collinear_cases(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(1, 0, 0), 0.1);
    rp_shape sep = capsule(V(3, 0, 0), V(2, 0, 0), 0.1);
    rp_shape over = capsule(V(0.5, 0, 0), V(4, 0, 0), 0.1);
    assert_near(rp_shape_signed_distance(&a, &sep), 0.8, 4 * EPS * 3);
    assert_near(rp_shape_signed_distance(&a, &over), -0.2, 4 * EPS * 4);
}

static void capsule_sphere_closest_to_interior_and_beyond_ends(void **state)
{
    (void)state;
    rp_shape c = capsule(V(0, 0, 0), V(0, 0, 2), 0.5);
    rp_shape side = sphere(V(3, 0, 1), 0.5);
    rp_shape beyond = sphere(V(0, 3, 5), 1.0); /* from (0,0,2): 3,3 -> sqrt 18 */
    rp_shape on_axis = sphere(V(0, 0, 1.5), 0.25);
    assert_true(rp_shape_signed_distance(&c, &side) == 2.0);
    assert_near(rp_shape_signed_distance(&c, &beyond), sqrt(18.0) - 1.5, 4 * EPS * 5);
    assert_true(rp_shape_signed_distance(&c, &on_axis) == -0.75);
    /* Dispatcher accepts either order. */
    assert_same_bits(rp_shape_signed_distance(&side, &c), rp_shape_signed_distance(&c, &side));
}

static void capsule_with_equal_ends_equals_sphere(void **state)
{
    (void)state;
    test_rng r = {11};
    for (int i = 0; i < 2000; i++) {
        rp_vec3 p = random_point(&r, 1.0);
        double rad = rng_uniform(&r, 0, 0.3);
        rp_shape cap = capsule(p, p, rad);
        rp_shape sph = sphere(p, rad);
        rp_shape other = random_shape(&r);
        double dc = rp_shape_signed_distance(&cap, &other);
        double ds = rp_shape_signed_distance(&sph, &other);
        assert_near(dc, ds, 4 * EPS * pair_scale(&cap, &other));
        if (other.kind == RP_SHAPE_SPHERE)
            assert_same_bits(dc, ds); /* same point-point reduction */
    }
}

static void margin_predicate_is_strict_at_the_boundary(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(2, 0, 0), 0.25);
    rp_shape b = capsule(V(1, 1, 0), V(3, 1, 0), 0.25); /* distance exactly 0.5 */
    assert_true(rp_shape_signed_distance(&a, &b) == 0.5);
    assert_false(rp_shapes_violate_margin(&a, &b, 0.5));
    assert_true(rp_shapes_violate_margin(&a, &b, nextafter(0.5, 1.0)));
    assert_false(rp_shapes_violate_margin(&a, &b, nextafter(0.5, 0.0)));
    rp_shape t1 = sphere(V(0, 0, 0), 0.5), t2 = sphere(V(1, 0, 0), 0.5); /* touching */
    assert_false(rp_shapes_violate_margin(&t1, &t2, 0.0));
    assert_true(rp_shapes_violate_margin(&t1, &t2, DBL_TRUE_MIN));
    rp_shape deep = sphere(V(0.5, 0, 0), 0.5);
    assert_true(rp_shapes_violate_margin(&t1, &deep, 0.0));
    assert_false(rp_shapes_violate_margin(&t1, &deep, -0.5));
}

/* ---- properties --------------------------------------------------------- */

static void distance_is_bitwise_symmetric_for_random_pairs(void **state)
{
    (void)state;
    test_rng r = {12};
    for (int i = 0; i < 20000; i++) {
        rp_shape a = random_shape(&r), b = random_shape(&r);
        assert_same_bits(rp_shape_signed_distance(&a, &b), rp_shape_signed_distance(&b, &a));
    }
}

static rp_shape translate(const rp_shape *s, rp_vec3 t)
{
    rp_transform tf = rp_transform_identity();
    tf.t = t;
    return rp_transform_shape(&tf, s);
}

static void distance_is_invariant_under_translation(void **state)
{
    (void)state;
    test_rng r = {13};
    for (int i = 0; i < 20000; i++) {
        rp_shape a = random_shape(&r), b = random_shape(&r);
        rp_vec3 t = random_point(&r, 50.0);
        rp_shape ta = translate(&a, t), tb = translate(&b, t);
        double S = fmax(pair_scale(&a, &b), pair_scale(&ta, &tb));
        assert_near(rp_shape_signed_distance(&ta, &tb), rp_shape_signed_distance(&a, &b),
                    16 * EPS * S);
    }
}

static void distance_is_invariant_under_rotation(void **state)
{
    (void)state;
    test_rng r = {14};
    for (int i = 0; i < 20000; i++) {
        rp_shape a = random_shape(&r), b = random_shape(&r);
        rp_transform tf;
        assert_int_equal(rp_transform_from_quaternion(
                             random_point(&r, 5.0), rng_uniform(&r, -1, 1), rng_uniform(&r, -1, 1),
                             rng_uniform(&r, -1, 1), rng_uniform(&r, -1, 1), &tf),
                         RP_OK);
        rp_shape ta = rp_transform_shape(&tf, &a), tb = rp_transform_shape(&tf, &b);
        double S = fmax(pair_scale(&a, &b), pair_scale(&ta, &tb));
        assert_near(rp_shape_signed_distance(&ta, &tb), rp_shape_signed_distance(&a, &b),
                    16 * EPS * S);
    }
}

static void distance_is_zero_when_surfaces_touch(void **state)
{
    (void)state;
    /* Built so that every quantity is exact in binary: axis-aligned offsets
     * and dyadic radii. */
    test_rng r = {15};
    for (int i = 0; i < 2000; i++) {
        double x = ldexp((double)(rng_next(&r) % 1024), -4);
        double ra = ldexp((double)(1 + rng_next(&r) % 64), -6);
        double rb = ldexp((double)(1 + rng_next(&r) % 64), -6);
        double len = ldexp((double)(rng_next(&r) % 64), -3);
        rp_shape a = capsule(V(x, 0, 0), V(x + len, 0, 0), ra);
        rp_shape b = capsule(V(x, ra + rb, -len), V(x, ra + rb, len), rb);
        rp_shape s = sphere(V(x + len, 0, ra + rb), rb);
        assert_true(rp_shape_signed_distance(&a, &b) == 0.0);
        assert_true(rp_shape_signed_distance(&a, &s) == 0.0);
    }
}

static void penetration_is_negative_and_grows_with_overlap(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(1, 0, 0), 0.5);
    double prev = INFINITY;
    for (int k = 0; k <= 10; k++) {
        double y = 1.0 - 0.1 * k; /* axis gap shrinks from 1 to 0 */
        rp_shape b = capsule(V(0.5, y, -1), V(0.5, y, 1), 0.5);
        double d = rp_shape_signed_distance(&a, &b);
        assert_near(d, y - 1.0, 8 * EPS);
        assert_true(d < prev);
        prev = d;
        if (k > 0)
            assert_true(d < 0.0);
    }
}

/* ---- contacts ----------------------------------------------------------- */

static double norm(rp_vec3 v)
{
    return sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
}

static void check_contact(const rp_shape *a, const rp_shape *b)
{
    rp_contact c = rp_shape_contact(a, b);
    double S = pair_scale(a, b);
    assert_same_bits(c.distance, rp_shape_signed_distance(a, b));
    assert_near(norm(c.normal), 1.0, 4 * EPS);
    /* point_b - point_a = distance * normal */
    assert_near(c.point_b.x - c.point_a.x, c.distance * c.normal.x, 16 * EPS * S);
    assert_near(c.point_b.y - c.point_a.y, c.distance * c.normal.y, 16 * EPS * S);
    assert_near(c.point_b.z - c.point_a.z, c.distance * c.normal.z, 16 * EPS * S);
    rp_contact m = rp_shape_contact(b, a);
    assert_same_bits(m.distance, c.distance);
    assert_same_bits(m.normal.x, -c.normal.x);
    assert_same_bits(m.normal.y, -c.normal.y);
    assert_same_bits(m.normal.z, -c.normal.z);
    assert_same_bits(m.point_a.x, c.point_b.x);
    assert_same_bits(m.point_a.y, c.point_b.y);
    assert_same_bits(m.point_a.z, c.point_b.z);
    assert_same_bits(m.point_b.x, c.point_a.x);
    assert_same_bits(m.point_b.y, c.point_a.y);
    assert_same_bits(m.point_b.z, c.point_a.z);
}

static void contact_witnesses_and_normal_for_parallel_capsules(void **state)
{
    (void)state;
    rp_shape a = capsule(V(0, 0, 0), V(1, 0, 0), 0.25);
    rp_shape b = capsule(V(2, 1, 0), V(3, 1, 0), 0.25);
    rp_contact c = rp_shape_contact(&a, &b);
    /* Closest core points (1,0,0) and (2,1,0); normal (1,1,0)/sqrt2. */
    double h = sqrt(0.5);
    assert_near(c.normal.x, h, 2 * EPS);
    assert_near(c.normal.y, h, 2 * EPS);
    assert_near(c.normal.z, 0.0, 0.0);
    assert_near(c.point_a.x, 1 + 0.25 * h, 4 * EPS);
    assert_near(c.point_b.y, 1 - 0.25 * h, 4 * EPS);
    check_contact(&a, &b);
}

static void contact_normal_for_crossing_axes_is_axis_cross_product(void **state)
{
    (void)state;
    rp_shape a = capsule(V(-1, 0, 0), V(1, 0, 0), 0.25);
    rp_shape b = capsule(V(0, -1, 0), V(0, 1, 0), 0.5);
    rp_contact c = rp_shape_contact(&a, &b);
    assert_true(c.distance == -0.75);
    assert_true(fabs(c.normal.z) == 1.0 && c.normal.x == 0.0 && c.normal.y == 0.0);
    /* Penetration: point_b - point_a = -0.75 * n */
    assert_near(c.point_a.z, 0.25 * c.normal.z, 0.0);
    assert_near(c.point_b.z, -0.5 * c.normal.z, 0.0);
    check_contact(&a, &b);
}

static void contact_normal_is_unit_when_cores_coincide(void **state)
{
    (void)state;
    const rp_shape cases[][2] = {
        {sphere(V(1, 2, 3), 0.5), sphere(V(1, 2, 3), 0.25)}, /* concentric */
        {capsule(V(0, 0, 0), V(1, 0, 0), 0.1), capsule(V(0.5, 0, 0), V(2, 0, 0), 0.1)},
        {capsule(V(0, 0, 0), V(1, 1, 1), 0.1), capsule(V(0, 0, 0), V(1, 1, 1), 0.2)},
        {capsule(V(0, 0, 0), V(0, 0, 0), 0.1), capsule(V(0, 0, 0), V(0, 0, 0), 0.3)},
        {capsule(V(0, 0, 0), V(0, 0, 2), 0.1), sphere(V(0, 0, 1), 0.3)}, /* on axis */
        {capsule(V(-1, -1, 0), V(1, 1, 0), 0.1), capsule(V(-1, 1, 0), V(1, -1, 0), 0.1)},
        {capsule(V(5, 5, 5), V(5, 5, 5), 0.1), sphere(V(5, 5, 5), 0.0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rp_contact c = rp_shape_contact(&cases[i][0], &cases[i][1]);
        assert_near(norm(c.normal), 1.0, 4 * EPS);
        rp_contact again = rp_shape_contact(&cases[i][0], &cases[i][1]);
        assert_same_bits(again.normal.x, c.normal.x); /* deterministic */
        check_contact(&cases[i][0], &cases[i][1]);
    }
    /* A shape against an identical copy: swapping changes nothing, so the
     * normal cannot flip; it must still be unit and deterministic. */
    rp_shape same = capsule(V(0, 0, 0), V(1, 1, 1), 0.1);
    rp_contact c1 = rp_shape_contact(&same, &same), c2 = rp_shape_contact(&same, &same);
    assert_near(norm(c1.normal), 1.0, 4 * EPS);
    assert_same_bits(c1.normal.y, c2.normal.y);
    assert_true(c1.distance == -0.2);
}

static void contact_properties_hold_for_random_pairs(void **state)
{
    (void)state;
    test_rng r = {16};
    for (int i = 0; i < 5000; i++) {
        rp_shape a = random_shape(&r), b = random_shape(&r);
        check_contact(&a, &b);
    }
}

/* ---- extreme ranges ----------------------------------------------------- */

static void extreme_magnitudes_give_finite_correct_results(void **state)
{
    (void)state;
    /* Differences of coordinates near DBL_MAX overflow unless rescaled. */
    rp_shape a = sphere(V(DBL_MAX, 0, 0), 0.0), b = sphere(V(DBL_MAX / 2, 0, 0), 0.0);
    assert_true(rp_shape_signed_distance(&a, &b) == DBL_MAX / 2);
    rp_shape ca = capsule(V(-1e300, 0, 0), V(1e300, 0, 0), 0.0);
    rp_shape cb = capsule(V(-1e300, 1e300, 0), V(1e300, 1e300, 0), 0.0);
    assert_near(rp_shape_signed_distance(&ca, &cb), 1e300, 16 * EPS * 1e300);
    rp_shape cc = capsule(V(-DBL_MAX, 0, 0), V(DBL_MAX, 0, 0), 1.0);
    rp_shape cd = capsule(V(0, -DBL_MAX, 1e300), V(0, DBL_MAX, 1e300), 1.0);
    assert_near(rp_shape_signed_distance(&cc, &cd), 1e300, 16 * EPS * DBL_MAX);
    check_contact(&cc, &cd);

    /* Tiny pairs: squares would underflow without rescaling. */
    rp_shape ta = capsule(V(0, 0, 0), V(3e-300, 0, 0), 0.0);
    rp_shape tb = capsule(V(0, 4e-300, 1e-300), V(3e-300, 4e-300, 1e-300), 0.0);
    assert_near(rp_shape_signed_distance(&ta, &tb), sqrt(17.0) * 1e-300, 16 * EPS * 4e-300);
    rp_shape sa = sphere(V(5e-324, 0, 0), 0), sb = sphere(V(0, 0, 0), 0);
    assert_true(rp_shape_signed_distance(&sa, &sb) == 5e-324);
    check_contact(&ta, &tb);
    check_contact(&sa, &sb);
    rp_contact c = rp_shape_contact(&sa, &sb);
    assert_true(c.normal.x == -1.0);
}

/* Near the largest double the core length (centres 1e308 apart on two
 * axes), the sum of the radii (1.7e308 each) or both overflow, although the
 * distance itself is representable: it must come out right, not as NaN
 * (inf - inf) or as an infinity.  Expected values in long double, whose
 * range holds every intermediate (x86: 64-bit significand, 11 bits more
 * than the tolerance needs). */
static void huge_cores_and_radii_give_the_representable_distance(void **state)
{
    (void)state;
    const double r = 1.7e308;
    long double want_pp = 2.0L * (long double)1e308 - 2.0L * (long double)r; /* -1.4e308 */

    /* The example: centres +-1e308, radius 1.7e308. */
    rp_shape a = sphere(V(1e308, 0, 0), r), b = sphere(V(-1e308, 0, 0), r);
    assert_near(rp_shape_signed_distance(&a, &b), (double)want_pp, 16 * EPS * r);
    assert_near(rp_sphere_sphere_signed_distance(&a.sphere, &b.sphere), (double)want_pp,
                16 * EPS * r);
    assert_true(rp_shapes_violate_margin(&a, &b, 0.0));
    assert_false(rp_shapes_violate_margin(&a, &b, -1.5e308));

    /* Core length 2*sqrt(2)*1e308 > DBL_MAX, radii's sum 1.5e308. */
    rp_shape c = sphere(V(-1e308, -1e308, 0), 1e308), d = sphere(V(1e308, 1e308, 0), 0.5e308);
    long double want_far =
        2.0L * sqrtl(2.0L) * (long double)1e308 - ((long double)1e308 + (long double)0.5e308);
    assert_near(rp_shape_signed_distance(&c, &d), (double)want_far, 16 * EPS * 1e308);

    /* Capsule-sphere and capsule-capsule with the same overflowing parts. */
    rp_shape cs = capsule(V(-1e308, 1e308, 0), V(1e308, 1e308, 0), r);
    rp_shape s = sphere(V(0, -1e308, 0), r);
    assert_near(rp_shape_signed_distance(&cs, &s), (double)want_pp, 16 * EPS * r);
    assert_near(rp_capsule_sphere_signed_distance(&cs.capsule, &s.sphere), (double)want_pp,
                16 * EPS * r);
    rp_shape c1 = capsule(V(-1e308, 0, -1e308), V(1e308, 0, -1e308), r);
    rp_shape c2 = capsule(V(1e308, 0, 1e308), V(-1e308, 0, 1e308), r);
    assert_near(rp_capsule_capsule_signed_distance(&c1.capsule, &c2.capsule), (double)want_pp,
                16 * EPS * r);
    assert_same_bits(rp_capsule_capsule_signed_distance(&c1.capsule, &c2.capsule),
                     rp_capsule_capsule_signed_distance(&c2.capsule, &c1.capsule));
    /* Radii summing past DBL_MAX with an ordinary core distance. */
    rp_shape u = sphere(V(0, 0, 0), DBL_MAX), w = sphere(V(DBL_MAX, 0, 0), DBL_MAX / 2);
    long double want_u = (long double)DBL_MAX - 1.5L * (long double)DBL_MAX;
    assert_near(rp_shape_signed_distance(&u, &w), (double)want_u, 16 * EPS * DBL_MAX);

    /* Witness points of the first pair: representable, so exact-ish.  The
     * normal runs from a (x = 1e308) to b (x = -1e308). */
    rp_contact k = rp_shape_contact(&a, &b);
    assert_true(k.normal.x == -1.0 && k.normal.y == 0.0 && k.normal.z == 0.0);
    assert_near(k.point_a.x, 1e308 - r, 4 * EPS * r);
    assert_near(k.point_b.x, r - 1e308, 4 * EPS * r);
    check_contact(&a, &b);
    check_contact(&c, &d);
    check_contact(&cs, &s);
    check_contact(&c1, &c2);
}

/* Distances and witness coordinates whose exact values lie beyond the
 * double range saturate at +-DBL_MAX (geometry.h, "Range"): finite, with the
 * right sign, and compared as that value by the margin predicate. */
static void distances_beyond_the_double_range_saturate_with_their_sign(void **state)
{
    (void)state;
    /* Penetration 3.4e308. */
    rp_shape a = sphere(V(0, 0, 0), 1.7e308), b = sphere(V(1, 0, 0), 1.7e308);
    assert_true(rp_shape_signed_distance(&a, &b) == -DBL_MAX);
    assert_true(rp_shape_signed_distance(&b, &a) == -DBL_MAX);
    assert_true(rp_shapes_violate_margin(&a, &b, 0.0));
    assert_true(rp_shapes_violate_margin(&a, &b, -1e308));
    assert_false(rp_shapes_violate_margin(&a, &b, -DBL_MAX)); /* the saturated value */
    rp_shape ca = capsule(V(-1e308, 0, 0), V(1e308, 0, 0), 1.7e308);
    rp_shape cb = capsule(V(0, -1e308, 0), V(0, 1e308, 0), 1.7e308);
    assert_true(rp_shape_signed_distance(&ca, &cb) == -DBL_MAX);
    assert_true(rp_shape_signed_distance(&ca, &a) == -DBL_MAX);

    /* Gap 2*sqrt(3)*1e308. */
    rp_shape g1 = sphere(V(-1e308, -1e308, -1e308), 0), g2 = sphere(V(1e308, 1e308, 1e308), 0);
    assert_true(rp_shape_signed_distance(&g1, &g2) == DBL_MAX);
    assert_false(rp_shapes_violate_margin(&g1, &g2, 1e308));
    assert_true(rp_shapes_violate_margin(&g1, &g2, INFINITY));
    rp_shape g3 = capsule(V(1e308, 1e308, 1e308), V(1e308, 1e308, 0.5e308), 0);
    assert_true(rp_shape_signed_distance(&g1, &g3) == DBL_MAX);
    assert_true(rp_shape_signed_distance(&g3, &g1) == DBL_MAX);

    /* Contacts stay finite: unit normal, saturated distance. */
    rp_contact c = rp_shape_contact(&a, &b);
    assert_true(c.distance == -DBL_MAX);
    assert_near(norm(c.normal), 1.0, 4 * EPS);
    assert_true(c.point_a.x == 1.7e308 && c.point_b.x == 1 - 1.7e308);
    rp_contact cg = rp_shape_contact(&g1, &g2);
    assert_true(cg.distance == DBL_MAX);
    assert_near(cg.normal.x, sqrt(1.0 / 3.0), 4 * EPS);
    assert_true(cg.point_a.x == -1e308 && cg.point_b.z == 1e308);

    /* A representable distance whose witness point is not: a's far side
     * (1e308 + 1.7e308) faces b; it saturates, b's witness does not. */
    rp_shape w1 = sphere(V(1e308, 0, 0), 1.7e308), w2 = sphere(V(1.5e308, 0, 0), 0);
    rp_contact cw = rp_shape_contact(&w1, &w2);
    assert_near(cw.distance, (double)((long double)0.5e308 - (long double)1.7e308),
                16 * EPS * 1.7e308);
    assert_true(cw.normal.x == 1.0);
    assert_true(cw.point_a.x == DBL_MAX);
    assert_true(cw.point_b.x == 1.5e308);
    rp_contact cwm = rp_shape_contact(&w2, &w1);
    assert_true(cwm.point_b.x == DBL_MAX && cwm.normal.x == -1.0);
}

/* Uniform in [-h, h) for any finite h (h * u, never 2h). */
static double sym_uniform(test_rng *r, double h)
{
    return h * rng_uniform(r, -1.0, 1.0);
}

static rp_shape random_huge_shape(test_rng *r)
{
    rp_vec3 p = V(sym_uniform(r, 1e308), sym_uniform(r, 1e308), sym_uniform(r, 1e308));
    double rad = rng_uniform(r, 0, 1.7e308);
    if (rng_next(r) & 1)
        return sphere(p, rad);
    return capsule(p, V(sym_uniform(r, 1e308), sym_uniform(r, 1e308), sym_uniform(r, 1e308)), rad);
}

static bool finite_v(rp_vec3 v)
{
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

/* The property test, shortened (2M pairs gave 9,473 NaN before the
 * fix): random large-magnitude pairs give finite, symmetric distances that
 * agree with the margin predicate and with the contacts, whose points and
 * normals are finite (the accuracy suite's near_dbl_max family checks the
 * values against the reference). */
static void random_pairs_near_the_largest_double_are_finite_and_consistent(void **state)
{
    (void)state;
    test_rng r = {17};
    long negative = 0;
    for (int i = 0; i < 200000; i++) {
        rp_shape a = random_huge_shape(&r), b = random_huge_shape(&r);
        double d = rp_shape_signed_distance(&a, &b);
        if (!isfinite(d))
            fail_msg("pair %d: distance %a", i, d);
        assert_same_bits(d, rp_shape_signed_distance(&b, &a));
        assert_int_equal(rp_shapes_violate_margin(&a, &b, 0.0), d < 0.0);
        negative += d < 0.0;
        if (i % 8 == 0) { /* contacts cost more; a sample suffices */
            rp_contact c = rp_shape_contact(&a, &b);
            assert_same_bits(c.distance, d);
            assert_true(finite_v(c.point_a) && finite_v(c.point_b) && finite_v(c.normal));
            assert_near(norm(c.normal), 1.0, 4 * EPS);
        }
    }
    /* Both signs occur (the distribution is not degenerate). */
    assert_true(negative > 1000 && negative < 199000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sphere_new_rejects_nonfinite_center_in_every_coordinate),
        cmocka_unit_test(capsule_new_rejects_nonfinite_in_every_coordinate),
        cmocka_unit_test(constructors_reject_bad_radius_with_distinct_codes),
        cmocka_unit_test(radius_zero_and_degenerate_capsule_are_valid),
        cmocka_unit_test(validate_rejects_literals_with_bad_fields),
        cmocka_unit_test(sphere_sphere_gap_touch_and_penetration),
        cmocka_unit_test(capsule_capsule_parallel_overlap_is_gap_between_axes),
        cmocka_unit_test(capsule_capsule_parallel_disjoint_is_endpoint_distance),
        cmocka_unit_test(capsule_capsule_crossing_axes_penetrate_by_both_radii),
        cmocka_unit_test(capsule_capsule_collinear_cases),
        cmocka_unit_test(capsule_sphere_closest_to_interior_and_beyond_ends),
        cmocka_unit_test(capsule_with_equal_ends_equals_sphere),
        cmocka_unit_test(margin_predicate_is_strict_at_the_boundary),
        cmocka_unit_test(distance_is_bitwise_symmetric_for_random_pairs),
        cmocka_unit_test(distance_is_invariant_under_translation),
        cmocka_unit_test(distance_is_invariant_under_rotation),
        cmocka_unit_test(distance_is_zero_when_surfaces_touch),
        cmocka_unit_test(penetration_is_negative_and_grows_with_overlap),
        cmocka_unit_test(contact_witnesses_and_normal_for_parallel_capsules),
        cmocka_unit_test(contact_normal_for_crossing_axes_is_axis_cross_product),
        cmocka_unit_test(contact_normal_is_unit_when_cores_coincide),
        cmocka_unit_test(contact_properties_hold_for_random_pairs),
        cmocka_unit_test(extreme_magnitudes_give_finite_correct_results),
        cmocka_unit_test(huge_cores_and_radii_give_the_representable_distance),
        cmocka_unit_test(distances_beyond_the_double_range_saturate_with_their_sign),
        cmocka_unit_test(random_pairs_near_the_largest_double_are_finite_and_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
