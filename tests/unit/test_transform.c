/* SPDX-License-Identifier: MIT */
/* Rigid transforms: construction, composition, inversion, validation, and
 * moving shapes and link shapes into the world. */
#include <float.h>

#include "test_util.h"

#include "repose/geometry.h"

#define EPS DBL_EPSILON

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static void assert_vec_near(rp_vec3 got, rp_vec3 want, double tol)
{
    assert_near(got.x, want.x, tol);
    assert_near(got.y, want.y, tol);
    assert_near(got.z, want.z, tol);
}

static rp_transform random_transform(test_rng *r)
{
    rp_transform tf;
    assert_int_equal(rp_transform_from_quaternion(
                         V(rng_uniform(r, -3, 3), rng_uniform(r, -3, 3), rng_uniform(r, -3, 3)),
                         rng_uniform(r, -1, 1), rng_uniform(r, -1, 1), rng_uniform(r, -1, 1),
                         rng_uniform(r, -1, 1), &tf),
                     RP_OK);
    return tf;
}

static void identity_leaves_points_unchanged(void **state)
{
    (void)state;
    rp_transform id = rp_transform_identity();
    rp_vec3 p = rp_transform_point(&id, V(1.5, -2.25, 1e5));
    assert_true(p.x == 1.5 && p.y == -2.25 && p.z == 1e5);
    assert_int_equal(rp_transform_validate(&id), RP_OK);
}

static void quaternion_quarter_turn_about_z_maps_x_to_y(void **state)
{
    (void)state;
    rp_transform tf;
    double h = sqrt(0.5);
    assert_int_equal(rp_transform_from_quaternion(V(1, 2, 3), h, 0, 0, h, &tf), RP_OK);
    assert_vec_near(rp_transform_point(&tf, V(1, 0, 0)), V(1, 3, 3), 4 * EPS * 4);
    assert_vec_near(rp_transform_point(&tf, V(0, 1, 0)), V(0, 2, 3), 4 * EPS * 4);
    assert_vec_near(rp_transform_point(&tf, V(0, 0, 1)), V(1, 2, 4), 4 * EPS * 4);
    assert_int_equal(rp_transform_validate(&tf), RP_OK);
}

static void quaternion_is_normalised_and_sign_does_not_matter(void **state)
{
    (void)state;
    rp_transform a, b, c;
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), 2, 0, 0, 0, &a), RP_OK);
    rp_transform id = rp_transform_identity();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            assert_true(a.r[i][j] == id.r[i][j]);
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), 1e-200, 1e-200, 0, 0, &b), RP_OK);
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), -1e200, -1e200, 0, 0, &c), RP_OK);
    assert_int_equal(rp_transform_validate(&b), RP_OK);
    /* Both are a half-turn... a quarter-turn about x: y -> z. */
    assert_vec_near(rp_transform_point(&b, V(0, 1, 0)), V(0, 0, 1), 4 * EPS);
    assert_vec_near(rp_transform_point(&c, V(0, 1, 0)), V(0, 0, 1), 4 * EPS);
}

static void quaternion_rejects_zero_and_nonfinite(void **state)
{
    (void)state;
    rp_transform tf = rp_transform_identity();
    tf.t.x = 42;
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), 0, 0, 0, 0, &tf), RP_ERR_QUATERNION);
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), NAN, 0, 0, 0, &tf),
                     RP_ERR_QUATERNION);
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), 1, 0, INFINITY, 0, &tf),
                     RP_ERR_QUATERNION);
    assert_int_equal(rp_transform_from_quaternion(V(0, NAN, 0), 1, 0, 0, 0, &tf), RP_ERR_NONFINITE);
    assert_int_equal(rp_transform_from_quaternion(V(0, 0, 0), 1, 0, 0, 0, NULL),
                     RP_ERR_INVALID_ARG);
    assert_true(tf.t.x == 42); /* untouched on failure */
}

static void compose_applies_right_then_left(void **state)
{
    (void)state;
    test_rng r = {21};
    for (int i = 0; i < 1000; i++) {
        rp_transform a = random_transform(&r), b = random_transform(&r);
        rp_transform ab = rp_transform_compose(&a, &b);
        rp_vec3 p = V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2));
        rp_vec3 want = rp_transform_point(&a, rp_transform_point(&b, p));
        assert_vec_near(rp_transform_point(&ab, p), want, 64 * EPS);
        assert_int_equal(rp_transform_validate(&ab), RP_OK);
    }
}

static void inverse_undoes_the_transform(void **state)
{
    (void)state;
    test_rng r = {22};
    for (int i = 0; i < 1000; i++) {
        rp_transform a = random_transform(&r);
        rp_transform inv = rp_transform_inverse(&a);
        rp_vec3 p = V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2));
        assert_vec_near(rp_transform_point(&inv, rp_transform_point(&a, p)), p, 64 * EPS);
        rp_transform id = rp_transform_compose(&a, &inv);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 3; j++)
                assert_near(id.r[k][j], k == j ? 1.0 : 0.0, 8 * EPS);
        assert_vec_near(id.t, V(0, 0, 0), 64 * EPS);
    }
}

static void validate_rejects_scale_shear_reflection_and_nonfinite(void **state)
{
    (void)state;
    rp_transform scaled = rp_transform_identity();
    scaled.r[0][0] = 1.01;
    assert_int_equal(rp_transform_validate(&scaled), RP_ERR_TRANSFORM);
    rp_transform shear = rp_transform_identity();
    shear.r[0][1] = 0.1;
    assert_int_equal(rp_transform_validate(&shear), RP_ERR_TRANSFORM);
    rp_transform mirror = rp_transform_identity();
    mirror.r[2][2] = -1;
    assert_int_equal(rp_transform_validate(&mirror), RP_ERR_TRANSFORM);
    rp_transform nan = rp_transform_identity();
    nan.r[1][2] = NAN;
    assert_int_equal(rp_transform_validate(&nan), RP_ERR_NONFINITE);
    rp_transform inf = rp_transform_identity();
    inf.t.z = -INFINITY;
    assert_int_equal(rp_transform_validate(&inf), RP_ERR_NONFINITE);
    assert_int_equal(rp_transform_validate(NULL), RP_ERR_INVALID_ARG);
    /* Within 1e-6 passes (printed matrices carry rounding). */
    rp_transform nearly = rp_transform_identity();
    nearly.r[0][0] = 1 + 1e-8;
    nearly.r[0][1] = 1e-8;
    assert_int_equal(rp_transform_validate(&nearly), RP_OK);
    rp_transform off = rp_transform_identity();
    off.r[0][0] = 1 + 1e-5;
    assert_int_equal(rp_transform_validate(&off), RP_ERR_TRANSFORM);
}

static void transform_shape_moves_points_and_keeps_radius(void **state)
{
    (void)state;
    rp_transform tf;
    double h = sqrt(0.5);
    assert_int_equal(rp_transform_from_quaternion(V(10, 0, 0), h, 0, 0, h, &tf), RP_OK);
    rp_capsule c;
    assert_int_equal(rp_capsule_new(V(0, 0, 0), V(1, 0, 0), 0.125, &c), RP_OK);
    rp_shape local = rp_shape_from_capsule(c);
    rp_shape world = rp_transform_shape(&tf, &local);
    assert_int_equal(world.kind, RP_SHAPE_CAPSULE);
    assert_vec_near(world.capsule.a, V(10, 0, 0), 0);
    assert_vec_near(world.capsule.b, V(10, 1, 0), 32 * EPS);
    assert_true(world.capsule.radius == 0.125);

    rp_sphere s;
    assert_int_equal(rp_sphere_new(V(0, 2, 0), 0.5, &s), RP_OK);
    rp_shape ls = rp_shape_from_sphere(s);
    rp_shape ws = rp_transform_shape(&tf, &ls);
    assert_vec_near(ws.sphere.center, V(8, 0, 0), 32 * EPS);
    assert_true(ws.sphere.radius == 0.5);
}

static void link_shape_uses_the_frame_it_is_given(void **state)
{
    (void)state;
    rp_sphere s;
    assert_int_equal(rp_sphere_new(V(1, 0, 0), 0.25, &s), RP_OK);
    rp_link_shape base = {rp_shape_from_sphere(s), -1};
    rp_transform tf = rp_transform_identity();
    tf.t = V(0, 0, 5);
    rp_shape w = rp_link_shape_transform_shape(&base, &tf);
    assert_vec_near(w.sphere.center, V(1, 0, 5), 0);
    rp_link_shape on3 = {rp_shape_from_sphere(s), 3};
    rp_shape w3 = rp_link_shape_transform_shape(&on3, &tf);
    assert_vec_near(w3.sphere.center, V(1, 0, 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity_leaves_points_unchanged),
        cmocka_unit_test(quaternion_quarter_turn_about_z_maps_x_to_y),
        cmocka_unit_test(quaternion_is_normalised_and_sign_does_not_matter),
        cmocka_unit_test(quaternion_rejects_zero_and_nonfinite),
        cmocka_unit_test(compose_applies_right_then_left),
        cmocka_unit_test(inverse_undoes_the_transform),
        cmocka_unit_test(validate_rejects_scale_shear_reflection_and_nonfinite),
        cmocka_unit_test(transform_shape_moves_points_and_keeps_radius),
        cmocka_unit_test(link_shape_uses_the_frame_it_is_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
