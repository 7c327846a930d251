/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/urdf/urdf.c and urdf_geom.c: the def a URDF (+ SRDF)
 * becomes, field by field; the capsules that stand in for cylinders; boxes
 * as exact boxes placed by their origin (vertex by vertex), zero edges
 * included, and a model of boxes checked against a scene; every refusal
 * with its `where`, line and reason; entity attacks; a 1 MB document; the
 * limits; and the arm7 test robot in tests/data.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "codec/codec.h"
#include "urdf/urdf.h"
#include "urdf/urdf_int.h"

#ifndef REPOSE_TEST_DATA
#error "REPOSE_TEST_DATA (tests/data) must be defined by the build"
#endif

/* ---- helpers --------------------------------------------------------------- */

static rp_urdf *parse_ok_opts(const char *urdf, const char *srdf, const rp_urdf_opts *opts)
{
    rp_urdf *u = NULL;
    rp_urdf_error err;
    rp_urdf_status st =
        rp_urdf_parse(urdf, strlen(urdf), srdf, srdf ? strlen(srdf) : 0, opts, &u, &err);
    if (st != RP_URDF_OK)
        fail_msg("refused (%d) at %s line %lu: %s", (int)st, err.where, err.line, err.reason);
    assert_non_null(u);
    return u;
}

static rp_urdf *parse_ok(const char *urdf)
{
    return parse_ok_opts(urdf, NULL, NULL);
}

static rp_urdf_status parse_err_opts(const char *urdf, const char *srdf, const rp_urdf_opts *opts,
                                     rp_urdf_error *err)
{
    rp_urdf *u = (rp_urdf *)&u; /* must come back NULL */
    rp_urdf_status st =
        rp_urdf_parse(urdf, strlen(urdf), srdf, srdf ? strlen(srdf) : 0, opts, &u, err);
    if (st == RP_URDF_OK)
        fail_msg("accepted %s%s%s", urdf, srdf ? " with SRDF " : "", srdf ? srdf : "");
    assert_null(u);
    return st;
}

/* A URDF of one link "a" whose single collision is `geometry_and_origin`. */
static rp_urdf *one_collision(const char *inner)
{
    char doc[2048];
    snprintf(doc, sizeof doc,
             "<robot name=\"r\"><link name=\"a\"><collision>%s</collision></link></robot>", inner);
    return parse_ok(doc);
}

static void assert_vec(rp_vec3 got, double x, double y, double z, double tol)
{
    assert_near(got.x, x, tol);
    assert_near(got.y, y, tol);
    assert_near(got.z, z, tol);
}

/* ---- the def ------------------------------------------------------------------ */

static const char small_urdf[] =
    "<?xml version=\"1.0\"?>\n"
    "<robot name=\"small\">\n" /* 2 */
    "  <link name=\"base\">\n" /* 3 */
    "    <visual><geometry><mesh filename=\"x.stl\"/></geometry></visual>\n"
    "    <collision><geometry><sphere radius=\"0.1\"/></geometry></collision>\n" /* 5 */
    "  </link>\n"
    "  <link name=\"upper/arm\">\n" /* 7 */
    "    <inertial><mass value=\"1\"/></inertial>\n"
    "    <collision name=\"c0\">\n" /* 9 */
    "      <origin xyz=\"0 0 0.2\"/>\n"
    "      <geometry><cylinder radius=\"0.05\" length=\"0.4\"/></geometry>\n"
    "    </collision>\n"
    "    <collision><geometry><capsule radius=\"0.02\" length=\"0.1\"/></geometry></collision>\n"
    "  </link>\n"
    "  <link name=\"tool\"/>\n"                       /* 15 */
    "  <joint name=\"shoulder\" type=\"revolute\">\n" /* 16 */
    "    <parent link=\"base\"/><child link=\"upper/arm\"/>\n"
    "    <origin xyz=\"0 0 0.5\" rpy=\"0.1 0.2 0.3\"/>\n"
    "    <axis xyz=\"0 1 0\"/>\n"
    "    <limit lower=\"-1.5\" upper=\"2\" effort=\"10\" velocity=\"1\"/>\n"
    "    <dynamics damping=\"1\"/>\n"
    "  </joint>\n"
    "  <joint name=\"wrist\" type=\"continuous\">\n" /* 23 */
    "    <parent link=\"upper/arm\"/><child link=\"tool\"/>\n"
    "    <limit lower=\"5\" upper=\"-5\"/>\n"
    "    <mimic joint=\"shoulder\" multiplier=\"-2\" offset=\"0.25\"/>\n"
    "  </joint>\n"
    "  <gazebo><joint name=\"ghost\" type=\"floating\"/><link name=\"ghost\"/></gazebo>\n"
    "  <transmission name=\"t\"><joint name=\"shoulder\"/></transmission>\n"
    "</robot>\n";

static void small_urdf_gives_the_exact_def(void **state)
{
    (void)state;
    rp_urdf *u = parse_ok(small_urdf);
    const rp_model_def *d = rp_urdf_def(u);

    assert_int_equal(d->n_link_names, 3);
    assert_string_equal(d->link_names[0], "base");
    assert_string_equal(d->link_names[1], "upper/arm");
    assert_string_equal(d->link_names[2], "tool");
    assert_int_equal(rp_urdf_link_line(u, 0), 3);
    assert_int_equal(rp_urdf_link_line(u, 1), 7);
    assert_int_equal(rp_urdf_link_line(u, 2), 15);
    assert_int_equal(rp_urdf_link_line(u, 3), 0);

    assert_int_equal(d->n_links, 3);
    assert_non_null(d->shape_links);
    const char *ids[] = {"base#0", "upper/arm#0", "upper/arm#1"};
    const char *owners[] = {"base", "upper/arm", "upper/arm"};
    unsigned long lines[] = {5, 9, 13};
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(d->links[i].id, ids[i]);
        assert_string_equal(d->shape_links[i], owners[i]);
        assert_int_equal(d->links[i].frame, -1);
        assert_int_equal(rp_shape_validate(&d->links[i].shape), RP_OK);
        assert_int_equal(rp_urdf_shape_line(u, i), lines[i]);
    }
    assert_int_equal(d->links[0].shape.kind, RP_SHAPE_SPHERE);
    assert_vec(d->links[0].shape.sphere.center, 0, 0, 0, 0);
    assert_near(d->links[0].shape.sphere.radius, 0.1, 0);
    assert_int_equal(d->links[1].shape.kind, RP_SHAPE_CAPSULE);
    assert_vec(d->links[1].shape.capsule.a, 0, 0, 0.0, 1e-15);
    assert_vec(d->links[1].shape.capsule.b, 0, 0, 0.4, 1e-15);
    assert_near(d->links[1].shape.capsule.radius, 0.05, 0);
    assert_vec(d->links[2].shape.capsule.a, 0, 0, -0.05, 0);
    assert_vec(d->links[2].shape.capsule.b, 0, 0, 0.05, 0);
    assert_near(d->links[2].shape.capsule.radius, 0.02, 0);

    assert_int_equal(d->n_joints, 2);
    const rp_joint_def *j = &d->joints[0];
    assert_string_equal(j->name, "shoulder");
    assert_int_equal(j->type, RP_JOINT_REVOLUTE);
    assert_string_equal(j->parent, "base");
    assert_string_equal(j->child, "upper/arm");
    assert_vec(j->xyz, 0, 0, 0.5, 0);
    assert_vec(j->rpy, 0.1, 0.2, 0.3, 0);
    assert_vec(j->axis, 0, 1, 0, 0);
    assert_true(j->has_limits);
    assert_near(j->lower, -1.5, 0);
    assert_near(j->upper, 2, 0);
    assert_null(j->mimic);
    assert_near(j->multiplier, 1, 0);
    assert_near(j->offset, 0, 0);
    assert_int_equal(rp_urdf_joint_line(u, 0), 16);

    j = &d->joints[1];
    assert_string_equal(j->name, "wrist");
    assert_int_equal(j->type, RP_JOINT_CONTINUOUS);
    assert_vec(j->xyz, 0, 0, 0, 0);
    assert_vec(j->rpy, 0, 0, 0, 0);
    assert_vec(j->axis, 1, 0, 0, 0); /* the URDF default */
    assert_false(j->has_limits);     /* continuous: <limit> ignored, even a bad one */
    assert_string_equal(j->mimic, "shoulder");
    assert_near(j->multiplier, -2, 0);
    assert_near(j->offset, 0.25, 0);
    assert_int_equal(rp_urdf_joint_line(u, 1), 23);
    assert_int_equal(rp_urdf_joint_line(u, 2), 0);

    assert_near(d->safety_margin, 0, 0);
    assert_true(d->self_collision);
    assert_int_equal(d->n_allowed, 0);
    assert_int_equal(d->n_defaults, 0);
    assert_int_equal(d->n_allowed_scene, 0);
    rp_urdf_free(u);
}

static void fixed_and_prismatic_joints_and_limit_defaults(void **state)
{
    (void)state;
    rp_urdf *u = parse_ok("<robot name='r'><link name='a'/><link name='b'/><link name='c'/>"
                          "<joint name='f' type='fixed'><parent link='a'/><child link='b'/>"
                          "<limit lower='nan'/></joint>"
                          "<joint name='p' type='prismatic'><parent link='b'/><child link='c'/>"
                          "<limit upper='0.3'/></joint></robot>");
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->joints[0].type, RP_JOINT_FIXED);
    assert_false(d->joints[0].has_limits);
    assert_int_equal(d->joints[1].type, RP_JOINT_PRISMATIC);
    assert_true(d->joints[1].has_limits);
    assert_near(d->joints[1].lower, 0, 0); /* URDF: lower defaults to 0 */
    assert_near(d->joints[1].upper, 0.3, 0);
    assert_int_equal(d->n_links, 0);
    assert_non_null(d->shape_links); /* still the kinematic form */
    rp_urdf_free(u);
}

/* ---- geometry ------------------------------------------------------------------ */

static void cylinder_becomes_capsule_of_its_length(void **state)
{
    (void)state;
    rp_urdf *u = one_collision("<geometry><cylinder radius='0.04' length='0.3'/></geometry>");
    const rp_capsule *c = &rp_urdf_def(u)->links[0].shape.capsule;
    assert_int_equal(rp_urdf_def(u)->links[0].shape.kind, RP_SHAPE_CAPSULE);
    assert_vec(c->a, 0, 0, -0.15, 0);
    assert_vec(c->b, 0, 0, 0.15, 0);
    assert_near(c->radius, 0.04, 0);
    assert_string_equal(rp_urdf_def(u)->links[0].id, "a#0");
    rp_urdf_free(u);
}

static void sphere_keeps_radius_and_moves_with_origin(void **state)
{
    (void)state;
    rp_urdf *u = one_collision("<origin xyz='1 -2 3' rpy='0.4 0.5 0.6'/>"
                               "<geometry><sphere radius='0.25'/></geometry>");
    const rp_sphere *s = &rp_urdf_def(u)->links[0].shape.sphere;
    assert_vec(s->center, 1, -2, 3, 0);
    assert_near(s->radius, 0.25, 0);
    rp_urdf_free(u);
}

/* Rz(yaw) * Ry(pitch) * Rx(roll) as three matrix products. */
static void rpy_by_hand(double r, double p, double y, double m[3][3])
{
    double rx[3][3] = {{1, 0, 0}, {0, cos(r), -sin(r)}, {0, sin(r), cos(r)}};
    double ry[3][3] = {{cos(p), 0, sin(p)}, {0, 1, 0}, {-sin(p), 0, cos(p)}};
    double rz[3][3] = {{cos(y), -sin(y), 0}, {sin(y), cos(y), 0}, {0, 0, 1}};
    double t[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            t[i][k] = 0;
            for (int l = 0; l < 3; l++)
                t[i][k] += ry[i][l] * rx[l][k];
        }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            m[i][k] = 0;
            for (int l = 0; l < 3; l++)
                m[i][k] += rz[i][l] * t[l][k];
        }
}

static void collision_origin_rpy_is_applied(void **state)
{
    (void)state;
    /* Roll a quarter turn: the cylinder's z axis becomes -y. */
    rp_urdf *u = one_collision("<origin xyz='0.1 0.2 0.3' rpy='1.5707963267948966 0 0'/>"
                               "<geometry><cylinder radius='0.01' length='0.2'/></geometry>");
    const rp_capsule *c = &rp_urdf_def(u)->links[0].shape.capsule;
    assert_vec(c->a, 0.1, 0.2 + 0.1, 0.3, 1e-15);
    assert_vec(c->b, 0.1, 0.2 - 0.1, 0.3, 1e-15);
    rp_urdf_free(u);

    /* Yaw a quarter turn after pitching a quarter turn: z -> x (pitch), x -> y (yaw). */
    u = one_collision("<origin rpy='0 1.5707963267948966 1.5707963267948966'/>"
                      "<geometry><cylinder radius='0.01' length='2'/></geometry>");
    c = &rp_urdf_def(u)->links[0].shape.capsule;
    assert_vec(c->b, 0, 1, 0, 1e-15);
    rp_urdf_free(u);

    /* A general rotation against the matrix products. */
    u = one_collision("<origin xyz='-0.3 0.7 1.1' rpy='0.3 -0.5 1.2'/>"
                      "<geometry><cylinder radius='0.01' length='2'/></geometry>");
    c = &rp_urdf_def(u)->links[0].shape.capsule;
    double m[3][3];
    rpy_by_hand(0.3, -0.5, 1.2, m);
    assert_vec(c->b, -0.3 + m[0][2], 0.7 + m[1][2], 1.1 + m[2][2], 1e-15);
    assert_vec(c->a, -0.3 - m[0][2], 0.7 - m[1][2], 1.1 - m[2][2], 1e-15);
    rp_transform t = rp_urdf_origin_((rp_vec3){0, 0, 0}, (rp_vec3){0.3, -0.5, 1.2});
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            assert_near(t.r[i][k], m[i][k], 1e-15);
    rp_urdf_free(u);
}

/* The box's 8 vertices as the kernels see them: centre + sum of +-h_i axis_i,
 * the sign of axis i taken from bit i of the vertex number. */
static void box_vertices(const rp_box *b, rp_vec3 out[8])
{
    rp_vec3 ax[3];
    rp_box_axes(b, ax);
    const double h[3] = {b->half_extents.x, b->half_extents.y, b->half_extents.z};
    for (int v = 0; v < 8; v++) {
        rp_vec3 p = b->center;
        for (int i = 0; i < 3; i++) {
            double u = v >> i & 1 ? h[i] : -h[i];
            p.x += u * ax[i].x;
            p.y += u * ax[i].y;
            p.z += u * ax[i].z;
        }
        out[v] = p;
    }
}

static void box_is_one_box_of_half_its_size(void **state)
{
    (void)state;
    rp_urdf *u = parse_ok("<robot name='r'><link name='a'>"
                          "<collision><geometry><sphere radius='0.1'/></geometry></collision>\n"
                          "<collision><geometry><box size='0.2 0.05 0.4'/></geometry></collision>"
                          "</link></robot>");
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_links, 2);
    assert_string_equal(d->links[1].id, "a#1");
    assert_string_equal(d->shape_links[1], "a");
    assert_int_equal(d->links[1].frame, -1);
    assert_int_equal(rp_urdf_shape_line(u, 1), 2);
    const rp_shape *s = &d->links[1].shape;
    assert_int_equal(s->kind, RP_SHAPE_BOX);
    assert_int_equal(rp_shape_validate(s), RP_OK);
    /* Without an origin: at the link frame's origin, unrotated, exactly. */
    assert_vec(s->box.center, 0, 0, 0, 0);
    assert_vec(s->box.half_extents, 0.1, 0.025, 0.2, 0);
    assert_near(s->box.rotation.w, 1, 0);
    assert_near(s->box.rotation.x, 0, 0);
    assert_near(s->box.rotation.y, 0, 0);
    assert_near(s->box.rotation.z, 0, 0);
    rp_urdf_free(u);
}

/* Places a box of edges size by <origin xyz rpy> and checks it against the
 * same origin applied by hand (rpy_by_hand) to the unrotated box's vertices. */
static void check_placed_box(const double size[3], rp_vec3 xyz, rp_vec3 rpy)
{
    char inner[512];
    snprintf(inner, sizeof inner,
             "<origin xyz='%.17g %.17g %.17g' rpy='%.17g %.17g %.17g'/>"
             "<geometry><box size='%.17g %.17g %.17g'/></geometry>",
             xyz.x, xyz.y, xyz.z, rpy.x, rpy.y, rpy.z, size[0], size[1], size[2]);
    rp_urdf *u = one_collision(inner);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_links, 1);
    assert_string_equal(d->links[0].id, "a#0");
    const rp_shape *s = &d->links[0].shape;
    assert_int_equal(s->kind, RP_SHAPE_BOX);
    assert_int_equal(rp_shape_validate(s), RP_OK);
    /* Half extents and centre are carried over exactly; only the rotation
     * is computed. */
    assert_vec(s->box.half_extents, size[0] / 2, size[1] / 2, size[2] / 2, 0);
    assert_vec(s->box.center, xyz.x, xyz.y, xyz.z, 0);
    double m[3][3];
    rpy_by_hand(rpy.x, rpy.y, rpy.z, m);
    rp_vec3 got[8];
    box_vertices(&s->box, got);
    for (int v = 0; v < 8; v++) {
        double p[3] = {v & 1 ? size[0] / 2 : -size[0] / 2, v & 2 ? size[1] / 2 : -size[1] / 2,
                       v & 4 ? size[2] / 2 : -size[2] / 2};
        rp_vec3 want = {xyz.x + m[0][0] * p[0] + m[0][1] * p[1] + m[0][2] * p[2],
                        xyz.y + m[1][0] * p[0] + m[1][1] * p[1] + m[1][2] * p[2],
                        xyz.z + m[2][0] * p[0] + m[2][1] * p[1] + m[2][2] * p[2]};
        if (fabs(got[v].x - want.x) > 1e-12 || fabs(got[v].y - want.y) > 1e-12 ||
            fabs(got[v].z - want.z) > 1e-12)
            fail_msg("size %g %g %g, rpy %.17g %.17g %.17g: vertex %d at (%.17g %.17g %.17g), "
                     "want (%.17g %.17g %.17g)",
                     size[0], size[1], size[2], rpy.x, rpy.y, rpy.z, v, got[v].x, got[v].y,
                     got[v].z, want.x, want.y, want.z);
    }
    rp_urdf_free(u);
}

/* Rotations of every kind (the quarter and half turns that make a rotation
 * matrix's trace -1 or its diagonal negative, gimbal lock at pitch +-pi/2)
 * and random ones, with edges of every proportion, zero ones included. */
static void box_vertices_move_with_the_origin(void **state)
{
    (void)state;
    const double pi = 3.14159265358979323846;
    static const double sizes[][3] = {{0.3, 0.12, 0.02}, {1, 1, 1}, {0.5, 0, 0.25}, {0, 0, 2}};
    const rp_vec3 rpys[] = {
        {0, 0, 0},           {pi, 0, 0},          {0, pi, 0},         {0, 0, pi},
        {pi / 2, 0, 0},      {0, pi / 2, 0},      {0, 0, -pi / 2},    {pi, pi / 2, -pi / 2},
        {0.3, -pi / 2, 1.2}, {pi, pi, pi},        {0.7, -0.2, 2.5},   {-3, 3, -3},
        {pi / 2, pi, 0},     {0, pi / 2, pi / 2}, {1e-17, 0, -1e-17}, {2 * pi, -2 * pi, 4 * pi},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t k = 0; k < sizeof rpys / sizeof rpys[0]; k++)
            check_placed_box(sizes[i], (rp_vec3){0.1, -0.2, 0.3}, rpys[k]);
    test_rng rng = {2024};
    for (int n = 0; n < 300; n++) {
        double size[3];
        for (int i = 0; i < 3; i++)
            size[i] = rng_uniform(&rng, 0, 1) < 0.1 ? 0 : exp(rng_uniform(&rng, log(1e-3), log(3)));
        rp_vec3 xyz = {rng_uniform(&rng, -2, 2), rng_uniform(&rng, -2, 2),
                       rng_uniform(&rng, -2, 2)};
        rp_vec3 rpy = {rng_uniform(&rng, -pi, pi), rng_uniform(&rng, -pi, pi),
                       rng_uniform(&rng, -pi, pi)};
        check_placed_box(size, xyz, rpy);
    }
}

/* A zero edge is a rectangle, two a segment, three a point; each is the
 * flat shape the kernels measure. */
static void zero_edges_are_accepted(void **state)
{
    (void)state;
    rp_urdf *u = one_collision("<geometry><box size='1 1 0'/></geometry>");
    const rp_shape *s = &rp_urdf_def(u)->links[0].shape;
    assert_int_equal(s->kind, RP_SHAPE_BOX);
    assert_int_equal(rp_shape_validate(s), RP_OK);
    assert_vec(s->box.half_extents, 0.5, 0.5, 0, 0);
    /* Above the square and beside it. */
    rp_shape above = rp_shape_from_sphere((rp_sphere){{0.25, -0.25, 1}, 0.5});
    rp_shape beside = rp_shape_from_sphere((rp_sphere){{2, 0, 0}, 0.5});
    rp_shape through = rp_shape_from_sphere((rp_sphere){{0.5, 0.5, 0.25}, 0.5});
    assert_near(rp_shape_signed_distance(s, &above), 0.5, 1e-15);
    assert_near(rp_shape_signed_distance(s, &beside), 1, 1e-15);
    assert_true(rp_shape_signed_distance(s, &through) < 0);
    rp_urdf_free(u);

    u = one_collision("<geometry><box size='0 0 0'/></geometry>");
    s = &rp_urdf_def(u)->links[0].shape;
    assert_int_equal(rp_shape_validate(s), RP_OK);
    assert_vec(s->box.half_extents, 0, 0, 0, 0);
    assert_near(rp_shape_signed_distance(s, &above), sqrt(0.25 * 0.25 * 2 + 1) - 0.5, 1e-15);
    rp_urdf_free(u);

    /* -0 is 0; its half extent is +0. */
    u = one_collision("<origin xyz='1 2 3'/><geometry><box size='-0 0.4 0'/></geometry>");
    s = &rp_urdf_def(u)->links[0].shape;
    assert_int_equal(rp_shape_validate(s), RP_OK);
    assert_vec(s->box.half_extents, 0, 0.2, 0, 0);
    assert_false(signbit(s->box.half_extents.x));
    assert_vec(s->box.center, 1, 2, 3, 0);
    rp_urdf_free(u);
}

/* A robot of boxes (a base plate, an arm box, a flat plate on the arm) and a
 * cylinder: the store takes it, and a check's distances between each link
 * and a scene sphere, and between links, are those of the shapes placed by
 * forward kinematics. */
static const char boxes_urdf[] =
    "<robot name='boxes'>\n"
    "  <link name='base'><collision><origin xyz='0 0 0.05'/>"
    "<geometry><box size='0.6 0.6 0.1'/></geometry></collision></link>\n"
    "  <link name='arm'>\n"
    "    <collision><origin xyz='0.25 0 0' rpy='0.3 0.2 0.1'/>"
    "<geometry><box size='0.5 0.08 0.06'/></geometry></collision>\n"
    "    <collision><origin xyz='0.5 0 0.05' rpy='0 0.4 0'/>"
    "<geometry><box size='0.1 0.2 0'/></geometry></collision>\n"
    "    <collision><origin xyz='0.5 0 -0.05'/>"
    "<geometry><cylinder radius='0.02' length='0.1'/></geometry></collision>\n"
    "  </link>\n"
    "  <joint name='j1' type='revolute'><parent link='base'/><child link='arm'/>"
    "<origin xyz='0 0 0.3' rpy='0 0.1 0'/><axis xyz='0 0 1'/><limit lower='-3' upper='3'/>"
    "</joint>\n"
    "</robot>\n";

/* Shape i of m placed by the link poses of configuration q. */
static rp_shape placed(const rp_model *m, const rp_transform *poses, size_t i)
{
    rp_shape local;
    rp_model_shape_local(m, i, &local);
    return rp_transform_shape(&poses[rp_model_shape_link(m, i)], &local);
}

static void model_of_boxes_checks_against_a_scene(void **state)
{
    (void)state;
    rp_urdf *u = parse_ok(boxes_urdf);
    rp_store *st = rp_store_new(NULL);
    rp_model *m = NULL;
    rp_model_error me;
    rp_status s = rp_store_model_put(st, "boxes", rp_urdf_def(u), &m, &me);
    if (s != RP_OK)
        fail_msg("put: %d, problem %d index %zu", (int)s, (int)me.problem, me.index);
    assert_int_equal(rp_model_dof(m), 1);
    assert_int_equal(rp_model_link_count(m), 4);
    const char *ids[] = {"base#0", "arm#0", "arm#1", "arm#2"};
    const rp_shape_kind kinds[] = {RP_SHAPE_BOX, RP_SHAPE_BOX, RP_SHAPE_BOX, RP_SHAPE_CAPSULE};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(rp_model_link_at(m, i)->id, ids[i]);
        rp_shape local;
        rp_model_shape_local(m, i, &local);
        assert_int_equal(local.kind, kinds[i]);
    }

    rp_shape_put ball = {"ball", rp_shape_from_sphere((rp_sphere){{0.4, 0.3, 0.35}, 0.05})};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "cell", &ball, 1, &sc), RP_OK);
    size_t ball_index = rp_scene_find(sc, "ball");
    for (int c = 0; c <= 12; c++) {
        double q = -3 + 0.5 * c;
        rp_transform poses[2];
        assert_int_equal(rp_model_fk(m, NULL, &q, poses), RP_OK);
        /* Every pair violates a 1 km margin: 4 link-ball pairs and the 3
         * base-arm pairs, each with its distance. */
        rp_check_opts opts = {.report = RP_REPORT_ALL, .has_margin = true, .margin = 1000};
        rp_check_result r = {0};
        assert_int_equal(rp_model_check_joints(m, sc, NULL, &q, &opts, &r), RP_OK);
        assert_int_equal(r.n_violations, 7);
        bool seen[4][2] = {{false}};
        for (size_t v = 0; v < r.n_violations; v++) {
            const rp_check_pair *p = &r.violations[v];
            rp_shape a = placed(m, poses, p->link), b;
            if (p->kind == RP_PAIR_SCENE) {
                assert_int_equal(p->other, ball_index);
                b = ball.shape;
            } else {
                assert_int_equal(p->link, 0); /* base#0 against an arm shape */
                b = placed(m, poses, p->other);
            }
            double want = rp_shape_signed_distance(&a, &b);
            if (fabs(p->distance - want) > 1e-12)
                fail_msg("q %g: pair (%zu, %d, %zu) at %.17g, placed shapes %.17g", q, p->link,
                         (int)p->kind, p->other, p->distance, want);
            seen[p->kind == RP_PAIR_SCENE ? p->link : p->other][p->kind == RP_PAIR_SCENE] = true;
        }
        for (size_t i = 0; i < 4; i++)
            assert_true(seen[i][1] && (i == 0 || seen[i][0]));
        rp_check_result_free(&r);
    }

    /* The ball inside the arm box at q = 0.5: a collision with arm#0 at the
     * placed box's depth. */
    double q = 0.5;
    rp_transform poses[2];
    assert_int_equal(rp_model_fk(m, NULL, &q, poses), RP_OK);
    rp_shape arm0 = placed(m, poses, 1);
    ball.shape = rp_shape_from_sphere((rp_sphere){arm0.box.center, 0.01});
    assert_int_equal(rp_scene_put(sc, &ball, 1, NULL, NULL), RP_OK);
    rp_check_opts opts = {.report = RP_REPORT_CLOSEST};
    rp_check_result r = {0};
    assert_int_equal(rp_model_check_joints(m, sc, NULL, &q, &opts, &r), RP_OK);
    assert_true(r.collision && r.has_min);
    assert_int_equal(r.closest.link, 1);
    assert_int_equal(r.closest.kind, RP_PAIR_SCENE);
    /* The box's smallest half extent is 0.03: the ball at its centre is
     * 0.03 + 0.01 deep. */
    assert_near(r.closest.distance, -0.04, 1e-12);
    assert_near(r.closest.distance, rp_shape_signed_distance(&arm0, &ball.shape), 1e-12);
    rp_check_result_free(&r);
    rp_store_free(st);
    rp_urdf_free(u);
}

static void numbers_are_plain_finite_decimals(void **state)
{
    (void)state;
    double v;
    const char *good[] = {"0", "-1.5", "+2", ".5", "5.", "1e-3", "1E+2", "1e-320"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(rp_urdf_number_(good[i], strlen(good[i]), &v));
    const char *bad[] = {"",    "nan", "inf", "-infinity", "1e999", "0x10",
                         "1,5", " 1",  "1 ",  "1e",        "--1",   "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (rp_urdf_number_(bad[i], strlen(bad[i]), &v))
            fail_msg("accepted \"%s\"", bad[i]);
    rp_vec3 x;
    assert_true(rp_urdf_vec3_("  1\t2\n3 ", &x));
    assert_vec(x, 1, 2, 3, 0);
    assert_false(rp_urdf_vec3_("1 2", &x));
    assert_false(rp_urdf_vec3_("1 2 3 4", &x));
    assert_false(rp_urdf_vec3_("1,2,3", &x));
    assert_false(rp_urdf_vec3_("", &x));
}

/* ---- refusals ---------------------------------------------------------------- */

typedef struct refusal {
    const char *urdf;
    const char *srdf;
    rp_urdf_status status;
    bool in_srdf;
    unsigned long line;
    const char *where;
    const char *reason; /* a substring of the reason */
} refusal;

#define LINK_A "<link name='a'/>"
#define ROBOT(body) "<robot name='r'>" body "</robot>"
#define JOINT(attrs, body)                                                                         \
    ROBOT("<link name='a'/><link name='b'/><joint " attrs ">" body "</joint>")
#define AB "<parent link='a'/><child link='b'/>"
/* Link a with one collision: a box with these attributes. */
#define BOX(attrs)                                                                                 \
    ROBOT("<link name='a'><collision><geometry><box " attrs "/></geometry></collision></link>")

static const refusal refusals[] = {
    {ROBOT("<link name='forearm'><collision><geometry><sphere radius='1'/></geometry></collision>"
           "<collision>\n<geometry>\n<mesh/></geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 3, "link[forearm].collision[1].geometry.mesh",
     "link[forearm].collision[1].geometry.mesh: the filename attribute is required"},
    {ROBOT("<link name='a'><collision><geometry><mesh filename=''/></geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.mesh",
     "filename=\"\" must be 1 to 1024 bytes"},
    {ROBOT("<link name='a'><collision><geometry><mesh filename='m.stl' scale='1 1'/></geometry>"
           "</collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.mesh",
     "scale=\"1 1\" must be three finite numbers"},
    {JOINT("name='j' type='floating'", AB), NULL, RP_URDF_INVALID, false, 1, "joint[j]",
     "joint[j]: type \"floating\" is not supported: use revolute, continuous, prismatic or fixed"},
    {JOINT("name='j' type='planar'", AB), NULL, RP_URDF_INVALID, false, 1, "joint[j]",
     "type \"planar\" is not supported"},
    {JOINT("name='j'", AB), NULL, RP_URDF_INVALID, false, 1, "joint[j]",
     "the type attribute is required"},
    {JOINT("name='j' type='fixed'", AB "<origin xyz='0 nan 0'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].origin", "joint[j].origin: xyz=\"0 nan 0\" must be three finite numbers"},
    {JOINT("name='j' type='revolute'", AB "<limit lower='1e999' upper='1'/>"), NULL,
     RP_URDF_INVALID, false, 1, "joint[j].limit",
     "joint[j].limit: lower=\"1e999\" is not a finite number"},
    {JOINT("name='j' type='revolute'", AB "<limit lower='-inf'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].limit", "lower=\"-inf\" is not a finite number"},
    {JOINT("name='j' type='revolute'", AB "<limit lower='1.1' upper='0.1'/>"), NULL,
     RP_URDF_INVALID, false, 1, "joint[j].limit",
     "joint[j].limit: lower 1.1 is greater than upper 0.1"},
    {JOINT("name='j' type='revolute'", AB), NULL, RP_URDF_INVALID, false, 1, "joint[j]",
     "joint[j]: a revolute joint needs <limit>"},
    {JOINT("name='j' type='fixed'", "<parent/><child link='b'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].parent", "joint[j].parent: the link attribute is required"},
    {JOINT("name='j' type='fixed'", "\n<child link='b'/>\n"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j]", "joint[j]: <parent link=...> is required"},
    {JOINT("name='j' type='fixed'", AB "<parent link='a'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].parent", "appears twice"},
    {JOINT("name='j' type='fixed'", AB "<axis/>"), NULL, RP_URDF_INVALID, false, 1, "joint[j].axis",
     "the xyz attribute is required"},
    {JOINT("name='j' type='fixed'", AB "<mimic multiplier='2'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].mimic", "the joint attribute is required"},
    {JOINT("name='j' type='fixed'", AB "<mimic joint='k' offset='x'/>"), NULL, RP_URDF_INVALID,
     false, 1, "joint[j].mimic", "offset=\"x\" is not a finite number"},
    {JOINT("type='fixed'", AB), NULL, RP_URDF_INVALID, false, 1, "joint[#0]",
     "joint[#0]: the name attribute is required"},
    {ROBOT("<link name='a'/><link name='b'/><joint name='j' type='fixed'>" AB "</joint>\n"
           "<joint name='j' type='fixed'>" AB "</joint>"),
     NULL, RP_URDF_INVALID, false, 2, "joint[j]", "joint \"j\" is defined twice (first at line 1)"},
    {"<robot name='r'>\n  <link name='a'>\n  </lnk>\n</robot>", NULL, RP_URDF_INVALID, false, 3, "",
     "malformed XML: mismatched tag (column 5)"},
    {"", NULL, RP_URDF_INVALID, false, 1, "", "malformed XML: no element found"},
    {"<robot name='r'><link name='a'/>", NULL, RP_URDF_INVALID, false, 1, "",
     "malformed XML: no element found"},
    {"<robot name='r'>\n<link name='a'/>\n<link name='a'/></robot>", NULL, RP_URDF_INVALID, false,
     3, "link[a]", "link[a]: link \"a\" is defined twice (first at line 2)"},
    {ROBOT(LINK_A "<link name='a b'/>"), NULL, RP_URDF_INVALID, false, 1, "link[#1]",
     "link[#1]: name=\"a b\" must be 1-128 characters of [A-Za-z0-9_.:/-]"},
    {ROBOT("<link name=''/>"), NULL, RP_URDF_INVALID, false, 1, "link[#0]", "name=\"\" must be"},
    {ROBOT("<link/>"), NULL, RP_URDF_INVALID, false, 1, "link[#0]",
     "the name attribute is required"},
    {ROBOT(LINK_A "<joint name='a#1' type='fixed'/>"), NULL, RP_URDF_INVALID, false, 1, "joint[#0]",
     "name=\"a#1\" must be"},
    {JOINT("name='j' type='fixed'", "<parent link='a b'/>"), NULL, RP_URDF_INVALID, false, 1,
     "joint[j].parent", "link=\"a b\" must be"},
    {ROBOT(LINK_A "<link name='b'/>"),
     ROBOT("<disable_collisions link1='a' link2='b'/>\n"
           "<disable_collisions link1='a' link2='c'/>"),
     RP_URDF_INVALID, true, 2, "disable_collisions[1]",
     "disable_collisions[1]: link2=\"c\" is not a link of the URDF"},
    {ROBOT(LINK_A), ROBOT("<disable_collisions link2='a'/>"), RP_URDF_INVALID, true, 1,
     "disable_collisions[0]", "the link1 attribute is required"},
    {ROBOT(LINK_A), "<srdf/>", RP_URDF_INVALID, true, 1, "",
     "the root element must be <robot>, not <srdf>"},
    {ROBOT(LINK_A), "<robot>", RP_URDF_INVALID, true, 1, "", "malformed XML"},
    {"<model><link name='a'/></model>", NULL, RP_URDF_INVALID, false, 1, "",
     "the root element must be <robot>, not <model>"},
    {ROBOT(""), NULL, RP_URDF_INVALID, false, 0, "", "the robot has no <link>"},
    {ROBOT(
         "<link name='a'><collision><geometry><sphere radius='0'/></geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.sphere",
     "radius=\"0\" must be greater than 0"},
    {ROBOT("<link name='a'><collision><geometry><sphere/></geometry></collision></link>"), NULL,
     RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.sphere",
     "link[a].collision[0].geometry.sphere: the radius attribute is required"},
    {ROBOT("<link name='a'><collision><geometry><cylinder radius='1' length='-2'/></geometry>"
           "</collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.cylinder",
     "length=\"-2\" must be greater than 0"},
    {ROBOT("<link name='a'><collision><geometry><capsule radius='nan' length='1'/></geometry>"
           "</collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.capsule",
     "radius=\"nan\" is not a finite number"},
    {BOX("size='1 -1 1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "link[a].collision[0].geometry.box: size=\"1 -1 1\": each edge must be 0 or greater"},
    {BOX("size='-1e-300 0 0'"), NULL, RP_URDF_INVALID, false, 1,
     "link[a].collision[0].geometry.box", "size=\"-1e-300 0 0\": each edge must be 0 or greater"},
    {BOX("size='1 1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "link[a].collision[0].geometry.box: size=\"1 1\" must be three finite numbers"},
    {BOX("size='1 1 1 1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"1 1 1 1\" must be three finite numbers"},
    {BOX("size='1 nan 1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"1 nan 1\" must be three finite numbers"},
    {BOX("size='inf 1 1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"inf 1 1\" must be three finite numbers"},
    {BOX("size='1 1 1e999'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"1 1 1e999\" must be three finite numbers"},
    {BOX("size='1,1,1'"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"1,1,1\" must be three finite numbers"},
    {BOX("size=''"), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "size=\"\" must be three finite numbers"},
    {BOX(""), NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.box",
     "link[a].collision[0].geometry.box: the size attribute is required"},
    {ROBOT("<link name='a'><collision><geometry><box size='1 1 1'/><sphere radius='1'/>"
           "</geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.sphere",
     "a <geometry> holds one shape, this is a second one"},
    {ROBOT("<link name='a'>\n<collision>\n<origin xyz='1 2 3'/></collision></link>"), NULL,
     RP_URDF_INVALID, false, 2, "link[a].collision[0]",
     "link[a].collision[0]: <geometry> is required"},
    {ROBOT("<link name='a'>\n<collision><geometry><cone/></geometry></collision></link>"), NULL,
     RP_URDF_INVALID, false, 2, "link[a].collision[0]",
     "<geometry> has no sphere, cylinder, capsule, box or mesh"},
    {ROBOT("<link name='a'><collision><geometry><sphere radius='1'/><sphere radius='2'/>"
           "</geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0].geometry.sphere",
     "a <geometry> holds one shape, this is a second one"},
    {ROBOT("<link name='a'><collision><origin/><origin/></collision></link>"), NULL,
     RP_URDF_INVALID, false, 1, "link[a].collision[0].origin", "<origin> appears twice"},
    {ROBOT("<link name='a'><collision><origin xyz='0 0 1e308'/><geometry>"
           "<cylinder radius='1' length='1.7e308'/></geometry></collision></link>"),
     NULL, RP_URDF_INVALID, false, 1, "link[a].collision[0]", "beyond the range of doubles"},
};

static void each_refusal_names_its_element(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const refusal *r = &refusals[i];
        rp_urdf_error err;
        rp_urdf_status st = parse_err_opts(r->urdf, r->srdf, NULL, &err);
        if (st != r->status || err.in_srdf != r->in_srdf || err.line != r->line ||
            strcmp(err.where, r->where) != 0 || !strstr(err.reason, r->reason))
            fail_msg("case %zu: got %d in_srdf=%d line %lu where \"%s\" reason \"%s\"\n"
                     "want %d in_srdf=%d line %lu where \"%s\" reason containing \"%s\"",
                     i, (int)st, err.in_srdf, err.line, err.where, err.reason, (int)r->status,
                     r->in_srdf, r->line, r->where, r->reason);
        assert_null(err.limit_name);
    }
}

/* A long non-ASCII name is quoted cut between characters; a control
 * character in it becomes '?'. */
static void quoted_text_stays_utf8(void **state)
{
    (void)state;
    char doc[1024] = "<robot name='r'><link name='\t";
    for (int i = 0; i < 100; i++)
        strcat(doc, "\xC3\xA9"); /* é */
    strcat(doc, "'/></robot>");
    rp_urdf_error err;
    assert_int_equal(parse_err_opts(doc, NULL, NULL, &err), RP_URDF_INVALID);
    assert_string_equal(err.where, "link[#0]");
    /* The tab became ' ' by XML attribute normalisation; é kept, 48 bytes, "...". */
    assert_non_null(strstr(err.reason, "name=\" \xC3\xA9\xC3\xA9"));
    assert_non_null(strstr(err.reason, "\xC3\xA9...\" must be"));

    /* A Latin-1 document: expat hands over UTF-8. */
    const char latin1[] = "<?xml version='1.0' encoding='ISO-8859-1'?>"
                          "<robot name='r'><link name='\xE9\x01'/></robot>";
    assert_int_equal(parse_err_opts(latin1, NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "malformed XML")); /* \x01 is not XML */
    const char latin1_ok[] = "<?xml version='1.0' encoding='ISO-8859-1'?>"
                             "<robot name='r'><link name='\xE9'/></robot>";
    assert_int_equal(parse_err_opts(latin1_ok, NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "name=\"\xC3\xA9\" must be"));
    /* Not UTF-8 at all: expat refuses. */
    assert_int_equal(parse_err_opts("<robot name='\xFF'/>", NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "malformed XML"));
}

/* ---- entities ---------------------------------------------------------------- */

static void billion_laughs_is_refused_at_the_first_entity(void **state)
{
    (void)state;
    char doc[4096] = "<?xml version='1.0'?>\n<!DOCTYPE robot [\n <!ENTITY lol 'lol'>\n";
    for (int i = 1; i <= 9; i++) {
        char prev[8], line[160];
        snprintf(prev, sizeof prev, i > 1 ? "lol%d" : "lol", i - 1);
        snprintf(line, sizeof line, " <!ENTITY lol%d '", i);
        for (int k = 0; k < 8; k++)
            snprintf(line + strlen(line), sizeof line - strlen(line), "&%s;", prev);
        strcat(line, "'>\n");
        strcat(doc, line);
    }
    strcat(doc, "]>\n<robot name='&lol9;'><link name='a'/></robot>\n");
    rp_urdf_error err;
    assert_int_equal(parse_err_opts(doc, NULL, NULL, &err), RP_URDF_INVALID);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.where, "");
    assert_string_equal(err.reason, "entity declarations are not allowed (<!ENTITY lol>)");
}

static void external_entities_are_refused(void **state)
{
    (void)state;
    rp_urdf_error err;
    const char ext[] = "<!DOCTYPE robot [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
                       "<robot name='r'><link name='a'>&x;</link></robot>";
    assert_int_equal(parse_err_opts(ext, NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "entity declarations are not allowed (<!ENTITY x>)"));
    const char param[] = "<!DOCTYPE robot [<!ENTITY % p SYSTEM 'http://example.com/p.dtd'> %p;]>"
                         "<robot name='r'><link name='a'/></robot>";
    assert_int_equal(parse_err_opts(param, NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "entity declarations are not allowed (<!ENTITY p>)"));
    /* An external DTD is never fetched, and a reference it might have
     * declared is refused rather than dropped. */
    const char dtd_ref[] = "<!DOCTYPE robot SYSTEM 'http://example.com/robot.dtd'>"
                           "<robot name='r'><link name='a'>&x;</link></robot>";
    assert_int_equal(parse_err_opts(dtd_ref, NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "entity reference &x; cannot be resolved"));
    rp_urdf *u = parse_ok("<!DOCTYPE robot SYSTEM 'http://example.com/robot.dtd'>"
                          "<robot name='r'><link name='a'/></robot>");
    rp_urdf_free(u);
    /* Undeclared without a DTD: expat's own error. */
    assert_int_equal(parse_err_opts("<robot name='&x;'/>", NULL, NULL, &err), RP_URDF_INVALID);
    assert_non_null(strstr(err.reason, "malformed XML: undefined entity"));
}

/* An <!ATTLIST> in the internal subset would have expat add default
 * attributes (or normalise declared ones) that the elements do not carry:
 * every such declaration is refused, in the URDF and in the SRDF. */
static void attribute_list_declarations_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *decl, *reason;
    } cases[] = {
        {"<!ATTLIST link name CDATA 'x'>", "(<!ATTLIST link name>)"},
        {"<!ATTLIST robot name CDATA #FIXED 'r'>", "(<!ATTLIST robot name>)"},
        {"<!ATTLIST link name NMTOKEN #IMPLIED>", "(<!ATTLIST link name>)"},
        {"<!ATTLIST sphere radius CDATA #REQUIRED>", "(<!ATTLIST sphere radius>)"},
        {"<!ELEMENT robot ANY><!ATTLIST box size CDATA '1 1 1'>", "(<!ATTLIST box size>)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char urdf[512], srdf[512];
        snprintf(urdf, sizeof urdf,
                 "<?xml version='1.0'?>\n<!DOCTYPE robot [\n%s\n]>\n"
                 "<robot name='r'><link name='a'/><link/></robot>",
                 cases[i].decl);
        rp_urdf_error err;
        assert_int_equal(parse_err_opts(urdf, NULL, NULL, &err), RP_URDF_INVALID);
        assert_false(err.in_srdf);
        assert_int_equal(err.line, 3);
        assert_string_equal(err.where, "");
        assert_non_null(strstr(err.reason, "attribute list declarations are not allowed"));
        assert_non_null(strstr(err.reason, cases[i].reason));
        snprintf(srdf, sizeof srdf,
                 "<!DOCTYPE robot [%s]><robot name='r'><disable_collisions link1='a' "
                 "link2='b'/></robot>",
                 cases[i].decl);
        assert_int_equal(parse_err_opts("<robot name='r'><link name='a'/><link name='b'/>"
                                        "</robot>",
                                        srdf, NULL, &err),
                         RP_URDF_INVALID);
        assert_true(err.in_srdf);
        assert_non_null(strstr(err.reason, cases[i].reason));
    }
    /* The tester's document: without the refusal the second link would be
     * named "x" by the default. */
    rp_urdf_error err;
    assert_int_equal(parse_err_opts("<!DOCTYPE robot [<!ATTLIST link name CDATA \"x\">]>"
                                    "<robot name='r'><link/></robot>",
                                    NULL, NULL, &err),
                     RP_URDF_INVALID);
    assert_string_equal(err.reason, "attribute list declarations are not allowed (<!ATTLIST "
                                    "link name>): they add or change attributes of <link>");
    /* A DOCTYPE with an element declaration only changes nothing. */
    rp_urdf *u = parse_ok("<!DOCTYPE robot [<!ELEMENT robot ANY>]>"
                          "<robot name='r'><link name='a'/></robot>");
    rp_urdf_free(u);
}

/* ---- size and limits ---------------------------------------------------------- */

/* A URDF of n links in a chain, each with two collisions (a sphere and a
 * box), and n - 1 revolute joints.  Caller frees. */
static char *chain_urdf(size_t n, size_t *len)
{
    size_t cap = 512 + n * 600, used = 0;
    char *doc = malloc(cap);
    assert_non_null(doc);
    used += (size_t)snprintf(doc, cap, "<?xml version='1.0'?>\n<robot name='chain'>\n");
    for (size_t i = 0; i < n; i++) {
        used += (size_t)snprintf(
            doc + used, cap - used,
            "  <link name='link_%zu'>\n"
            "    <visual><geometry><mesh filename='package://x/%zu.stl'/></geometry></visual>\n"
            "    <collision><origin xyz='0 0 0.05'/><geometry><sphere radius='0.04'/>"
            "</geometry></collision>\n"
            "    <collision><origin rpy='0 0 0.5'/><geometry><box size='0.1 0.05 0.2'/>"
            "</geometry></collision>\n"
            "  </link>\n",
            i, i);
        if (i > 0)
            used += (size_t)snprintf(
                doc + used, cap - used,
                "  <joint name='joint_%zu' type='revolute'><parent link='link_%zu'/>"
                "<child link='link_%zu'/><origin xyz='0 0 0.1' rpy='0 0.1 0'/>"
                "<axis xyz='0 1 0'/><limit lower='-1' upper='1' effort='1' velocity='1'/>"
                "</joint>\n",
                i, i - 1, i);
        assert_true(used < cap);
    }
    used += (size_t)snprintf(doc + used, cap - used, "</robot>\n");
    *len = used;
    return doc;
}

static void one_megabyte_urdf_parses(void **state)
{
    (void)state;
    size_t len;
    char *doc = chain_urdf(2500, &len);
    assert_true(len > 1000000);
    rp_urdf *u = NULL;
    rp_urdf_error err;
    rp_urdf_opts opts = {.allow_adjacent = true};
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &opts, &u, &err), RP_URDF_OK);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_link_names, 2500);
    assert_int_equal(d->n_joints, 2499);
    assert_int_equal(d->n_links, 2 * 2500);
    assert_int_equal(d->n_allowed, 2499);
    assert_string_equal(d->links[2 * 2499].id, "link_2499#0");
    assert_string_equal(d->links[2 * 2499 + 1].id, "link_2499#1");
    assert_int_equal(d->links[2 * 2499 + 1].shape.kind, RP_SHAPE_BOX);
    assert_string_equal(d->joints[2498].child, "link_2499");
    for (size_t i = 0; i < d->n_links; i++)
        assert_int_equal(rp_shape_validate(&d->links[i].shape), RP_OK);
    rp_urdf_free(u);
    free(doc);
}

static void limits_stop_the_parse(void **state)
{
    (void)state;
    size_t len;
    char *doc = chain_urdf(10, &len); /* 10 links, 9 joints, 20 shapes */
    rp_urdf *u = NULL;
    rp_urdf_error err;

    rp_urdf_opts exact = {
        .max_shapes = 20, .max_links = 10, .max_pairs = 9, .allow_adjacent = true};
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &exact, &u, &err), RP_URDF_OK);
    rp_urdf_free(u);

    rp_urdf_opts shapes = {.max_shapes = 19};
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &shapes, &u, &err), RP_URDF_LIMIT);
    assert_null(u);
    assert_int_equal(err.limit_max, 19);
    assert_string_equal(err.limit_name, "max_model_links");
    assert_string_equal(err.where, "link[link_9].collision[1]");
    assert_string_equal(err.reason, "link[link_9].collision[1]: more than 19 shapes");

    rp_urdf_opts links = {.max_links = 9};
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &links, &u, &err), RP_URDF_LIMIT);
    assert_int_equal(err.limit_max, 9);
    assert_string_equal(err.where, "link[link_9]");
    assert_string_equal(err.limit_name, "max_model_links");

    rp_urdf_opts joints = {.max_links = 10};
    free(doc);
    doc = chain_urdf(11, &len);
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &joints, &u, &err), RP_URDF_LIMIT);
    assert_string_equal(err.where, "link[link_10]");

    rp_urdf_opts pairs = {.max_pairs = 9, .allow_adjacent = true};
    assert_int_equal(rp_urdf_parse(doc, len, NULL, 0, &pairs, &u, &err), RP_URDF_LIMIT);
    assert_string_equal(err.limit_name, "max_allowed_pairs");
    assert_int_equal(err.limit_max, 9);
    assert_string_equal(err.where, "joint[joint_10]");
    assert_false(err.in_srdf);
    assert_true(err.line > 0);
    free(doc);
}

static void adjacent_pairs_follow_srdf_pairs(void **state)
{
    (void)state;
    const char *urdf = ROBOT("<link name='a'/><link name='b'/><link name='c'/>"
                             "<joint name='j1' type='fixed'><parent link='a'/><child link='b'/>"
                             "</joint><joint name='j2' type='fixed'><parent link='b'/>"
                             "<child link='nowhere'/></joint>"
                             "<joint name='j3' type='fixed'><parent link='b'/><child link='c'/>"
                             "</joint>");
    const char *srdf = "<robot name='r'>\n<group name='g'><link name='c'/></group>\n"
                       "<disable_collisions link1='c' link2='a' reason='Never'/></robot>";
    rp_urdf_opts opts = {.allow_adjacent = true};
    rp_urdf *u = parse_ok_opts(urdf, srdf, &opts);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_allowed, 3); /* j2 names a missing link: left to the store */
    const char *want[] = {"c", "a", "a", "b", "b", "c"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(d->allowed_pairs[i], want[i]);
    assert_int_equal(rp_urdf_pair_line(u, 0), 3);
    assert_int_equal(rp_urdf_pair_line(u, 1), 0);
    assert_int_equal(rp_urdf_pair_line(u, 2), 0);
    assert_int_equal(rp_urdf_pair_line(u, 3), 0);
    /* Graph problems are not this parser's: the missing link is kept. */
    assert_string_equal(d->joints[1].child, "nowhere");
    rp_urdf_free(u);

    u = parse_ok_opts(urdf, srdf, NULL);
    assert_int_equal(rp_urdf_def(u)->n_allowed, 1);
    rp_urdf_free(u);
}

static void null_arguments(void **state)
{
    (void)state;
    rp_urdf *u = (rp_urdf *)&u;
    assert_int_equal(rp_urdf_parse(NULL, 0, NULL, 0, NULL, &u, NULL), RP_URDF_INVALID);
    assert_null(u);
    rp_urdf_free(NULL);
}

/* ---- arm7 ---------------------------------------------------------------------- */

static void arm7_parses_with_its_srdf(void **state)
{
    (void)state;
    size_t ulen, slen;
    char *urdf = test_read_data("arm7.urdf", &ulen);
    char *srdf = test_read_data("arm7.srdf", &slen);
    rp_urdf *u = NULL;
    rp_urdf_error err;
    rp_urdf_status st = rp_urdf_parse(urdf, ulen, srdf, slen, NULL, &u, &err);
    if (st != RP_URDF_OK)
        fail_msg("%s line %lu: %s", err.where, err.line, err.reason);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_link_names, 12);
    assert_string_equal(d->link_names[0], "arm7_link0");
    assert_int_equal(d->n_joints, 11);
    size_t moving = 0, spheres = 0;
    for (size_t i = 0; i < d->n_joints; i++) {
        const rp_joint_def *j = &d->joints[i];
        if (j->type != RP_JOINT_FIXED && !j->mimic)
            moving++;
        if (j->type == RP_JOINT_REVOLUTE || j->type == RP_JOINT_PRISMATIC)
            assert_true(j->has_limits && j->lower <= j->upper);
        assert_true(rp_urdf_joint_line(u, i) > 0);
    }
    assert_int_equal(moving, 8); /* 7 arm joints and one finger */
    assert_string_equal(d->joints[10].name, "arm7_finger_joint2");
    assert_string_equal(d->joints[10].mimic, "arm7_finger_joint1");
    assert_int_equal(d->n_links, 57);
    for (size_t i = 0; i < d->n_links; i++) {
        assert_int_equal(rp_shape_validate(&d->links[i].shape), RP_OK);
        spheres += d->links[i].shape.kind == RP_SHAPE_SPHERE;
    }
    assert_int_equal(spheres, 53);
    assert_int_equal(d->n_allowed, 19);
    assert_true(rp_urdf_pair_line(u, 0) > 0);
    rp_urdf_free(u);

    rp_urdf_opts adj = {.allow_adjacent = true};
    assert_int_equal(rp_urdf_parse(urdf, ulen, srdf, slen, &adj, &u, &err), RP_URDF_OK);
    assert_int_equal(rp_urdf_def(u)->n_allowed, 19 + 11);
    rp_urdf_free(u);
    free(urdf);
    free(srdf);
}

/* The store takes arm7 as it is: 8 active joints; at the arm's "ready" pose
 * the flange sits where a Panda's does, and nothing but the SRDF's pairs
 * touches. */
static void arm7_is_a_valid_model_clear_at_ready(void **state)
{
    (void)state;
    size_t ulen, slen;
    char *urdf = test_read_data("arm7.urdf", &ulen);
    char *srdf = test_read_data("arm7.srdf", &slen);
    rp_urdf *u = NULL;
    assert_int_equal(rp_urdf_parse(urdf, ulen, srdf, slen, NULL, &u, NULL), RP_URDF_OK);
    rp_store *st = rp_store_new(NULL);
    rp_model *m = NULL;
    rp_model_error me;
    rp_status s = rp_store_model_put(st, "arm7", rp_urdf_def(u), &m, &me);
    if (s != RP_OK)
        fail_msg("put: %d, problem %d index %zu", (int)s, (int)me.problem, me.index);
    assert_int_equal(rp_model_dof(m), 8);
    const double pi = 3.14159265358979323846;
    double q[8] = {0, -pi / 4, 0, -3 * pi / 4, 0, pi / 2, pi / 4, 0.04};
    rp_transform poses[12];
    assert_int_equal(rp_model_tree_link_count(m), 12);
    assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_OK);
    size_t flange = rp_model_tree_link_find(m, "arm7_link8");
    assert_vec(poses[flange].t, 0.30689, 0, 0.59028, 1e-5);
    rp_check_opts opts = {.report = RP_REPORT_CLOSEST};
    rp_check_result r = {0};
    assert_int_equal(rp_model_check_joints(m, NULL, NULL, q, &opts, &r), RP_OK);
    assert_false(r.collision);
    assert_true(r.has_min && r.closest.distance > 0.02);
    rp_check_result_free(&r);
    rp_store_free(st);
    rp_urdf_free(u);
    free(urdf);
    free(srdf);
}

/* The store checks the tree; the line functions point back into the
 * document. */
static void store_errors_map_back_to_lines(void **state)
{
    (void)state;
    rp_urdf *u = parse_ok("<robot name='r'>\n<link name='a'/>\n<link name='b'/>\n"
                          "<joint name='j0' type='fixed'><parent link='a'/><child link='b'/>"
                          "</joint>\n"
                          "<joint name='j1' type='fixed'><parent link='b'/><child link='c'/>"
                          "</joint>\n</robot>");
    rp_store *st = rp_store_new(NULL);
    rp_model_error me;
    assert_int_equal(rp_store_model_put(st, "m", rp_urdf_def(u), NULL, &me), RP_ERR_INVALID_ARG);
    assert_int_equal(me.problem, RP_MODEL_UNKNOWN_JOINT_LINK);
    assert_int_equal(me.index, 1);
    assert_int_equal(rp_urdf_joint_line(u, me.index), 5);
    rp_store_free(st);
    rp_urdf_free(u);
}

/* rp_store_model_put_urdf, the library's import: the same model as the
 * parse and put above, with and without the SRDF (adjacent pairs then);
 * refusals say where and why and leave the store as it was. */
/* ---- SRDF groups, states, end effectors, passive joints -------------------------- */

/* A chain a-b-c-d (j1, j2 revolute; j3 fixed) with a branch b-e (j4). */
#define TREE4                                                                                      \
    ROBOT("<link name='a'/><link name='b'/><link name='c'/><link name='d'/><link name='e'/>"       \
          "<joint name='j1' type='revolute'><parent link='a'/><child link='b'/>"                   \
          "<limit lower='-1' upper='1'/></joint>"                                                  \
          "<joint name='j2' type='revolute'><parent link='b'/><child link='c'/>"                   \
          "<limit lower='-1' upper='1'/></joint>"                                                  \
          "<joint name='j3' type='fixed'><parent link='c'/><child link='d'/></joint>"              \
          "<joint name='j4' type='revolute'><parent link='b'/><child link='e'/>"                   \
          "<limit lower='-1' upper='1'/></joint>")

static const rp_group_def *group_named(const rp_model_def *d, const char *name)
{
    for (size_t g = 0; g < d->n_groups; g++)
        if (strcmp(d->groups[g].name, name) == 0)
            return &d->groups[g];
    fail_msg("no group %s", name);
    return NULL;
}

static void assert_group(const rp_model_def *d, const char *name, const char *joints)
{
    const rp_group_def *g = group_named(d, name);
    char got[256] = "";
    for (size_t i = 0; i < g->n_joints; i++) {
        strcat(got, i ? " " : "");
        strcat(got, g->joints[i]);
    }
    assert_string_equal(got, joints);
}

static void srdf_groups_states_and_end_effectors(void **state)
{
    (void)state;
    const char *srdf =
        "<robot name='r'>\n"
        "<group name='arm'><chain base_link='a' tip_link='d'/></group>\n"
        "<group name='side'><link name='e'/></group>\n"
        "<group name='both'><group name='arm'/><group name='side'/><joint name='j1'/></group>\n"
        "<group name='later'><group name='tail'/></group>\n"
        "<group name='tail'><joint name='j4'/></group>\n"
        "<group_state name='ready' group='arm'><joint name='j1' value='0.5'/>"
        "<joint name='j2' value='-0.25'/></group_state>\n"
        "<group_state name='ready' group='side'><joint name='j4' value='1'/></group_state>\n"
        "<end_effector name='tool' parent_link='d' group='side' parent_group='arm'/>\n"
        "<passive_joint name='j4'/>\n"
        "</robot>";
    rp_urdf *u = parse_ok_opts(TREE4, srdf, NULL);
    const rp_model_def *d = rp_urdf_def(u);
    assert_int_equal(d->n_groups, 5);
    assert_group(d, "arm", "j1 j2 j3"); /* a chain: every joint on the path, fixed ones too */
    assert_group(d, "side", "j4");      /* a link: the joint that moves it */
    assert_group(d, "both", "j1 j2 j3 j4");
    assert_group(d, "later", "j4"); /* a subgroup defined further on */
    assert_int_equal(d->n_states, 2);
    assert_string_equal(d->states[0].name, "ready");
    assert_string_equal(d->states[0].group, "arm");
    assert_int_equal(d->states[0].n_joints, 2);
    assert_string_equal(d->states[0].joints[1], "j2");
    assert_true(d->states[0].values[1] == -0.25);
    assert_string_equal(d->states[1].group, "side");
    assert_int_equal(d->n_end_effectors, 1);
    assert_string_equal(d->end_effectors[0].parent_link, "d");
    assert_string_equal(d->end_effectors[0].parent_group, "arm");
    assert_int_equal(d->n_passive, 1);
    assert_string_equal(d->passive_joints[0], "j4");
    /* The store takes it, and keeps it in the model's definition. */
    rp_store *st = rp_store_new(NULL);
    rp_model *m;
    rp_model_error me;
    assert_int_equal(rp_store_model_put(st, "r", d, &m, &me), RP_OK);
    const rp_model_def *kept = rp_model_definition(m);
    assert_int_equal(kept->n_groups, 5);
    assert_string_equal(kept->groups[2].joints[3], "j4");
    assert_true(kept->states[0].values[0] == 0.5);
    assert_string_equal(kept->end_effectors[0].name, "tool");
    /* A state naming no joint of the tree is the store's refusal; one naming
     * a joint that does not move (j3, fixed) is kept (and not applied). */
    rp_state_def fixed_state = {"s", "arm", (const char *const[]){"j3"}, (const double[]){0}, 1};
    rp_model_def d3 = *d;
    d3.states = &fixed_state;
    d3.n_states = 1;
    assert_int_equal(rp_store_model_put(st, "r3", &d3, &m, &me), RP_OK);
    rp_state_def bad_state = {"s", "arm", (const char *const[]){"jz"}, (const double[]){0}, 1};
    rp_model_def d2 = *d;
    d2.states = &bad_state;
    d2.n_states = 1;
    assert_int_equal(rp_store_model_put(st, "r2", &d2, &m, &me), RP_ERR_INVALID_ARG);
    assert_int_equal(me.problem, RP_MODEL_BAD_STATE);
    assert_int_equal(me.element, 0);
    rp_store_free(st);
    rp_urdf_free(u);
}

static void srdf_group_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *srdf, *where, *reason;
    } cases[] = {
        {"<group name='g'><chain base_link='d' tip_link='a'/></group>", "group[g]",
         "base_link \"d\" is not an ancestor of tip_link \"a\""},
        {"<group name='g'><chain base_link='e' tip_link='d'/></group>", "group[g]",
         "is not an ancestor"},
        {"<group name='g'><group name='nope'/></group>", "group[g]",
         "subgroup \"nope\" is no group of the SRDF"},
        {"<group name='g'><group name='h'/></group><group name='h'><group name='g'/></group>",
         "group[", "contains this group again"},
        {"<group name='g'><joint name='jx'/></group>", "group[g].joint",
         "name=\"jx\" is not a joint of the URDF"},
        {"<group name='g'/><group name='g'/>", "group[g]", "is defined twice"},
        {"<group name='g'/><group_state name='s' group='h'/>", "group_state[s]",
         "group \"h\" is no group of the SRDF"},
        {"<group name='g'/><group_state name='s' group='g'><joint name='j1' value='x'/>"
         "</group_state>",
         "group_state[s].joint", "is not a finite number"},
        {"<group name='g'/><group_state name='s' group='g'><joint name='j1' value='1'/>"
         "<joint name='j1' value='2'/></group_state>",
         "group_state[s].joint", "is given twice"},
        {"<group name='g'/><end_effector name='e' parent_link='zz' group='g'/>", "end_effector[e]",
         "parent_link=\"zz\" is not a link of the URDF"},
        {"<group name='g'/><end_effector name='e' parent_link='a' group='h'/>", "end_effector[e]",
         "group \"h\" is no group of the SRDF"},
        {"<passive_joint name='q'/>", "passive_joint[#0]", "is not a joint of the URDF"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char srdf[1024];
        snprintf(srdf, sizeof srdf, "<robot name='r'>%s</robot>", cases[i].srdf);
        rp_urdf *u = NULL;
        rp_urdf_error err;
        rp_urdf_status st = rp_urdf_parse(TREE4, strlen(TREE4), srdf, strlen(srdf), NULL, &u, &err);
        if (st != RP_URDF_INVALID || !err.in_srdf ||
            strncmp(err.where, cases[i].where, strlen(cases[i].where)) != 0 ||
            !strstr(err.reason, cases[i].reason) || err.line == 0)
            fail_msg("case %zu: status %d in_srdf %d line %lu where \"%s\" reason \"%s\"", i,
                     (int)st, err.in_srdf, err.line, err.where, err.reason);
        assert_null(u);
    }
}

/* SRDF elements count against max_links as links and joints do (their
 * resolution's work is bounded by it). */
static void srdf_elements_within_the_link_limit(void **state)
{
    (void)state;
    const char *six = "<robot name='r'><group name='g0'/><group name='g1'/><group name='g2'/>"
                      "<group name='g3'/><group name='g4'/><group name='g5'/></robot>";
    rp_urdf_opts opts = {.max_links = 5};
    rp_urdf *u = NULL;
    rp_urdf_error err;
    assert_int_equal(rp_urdf_parse(TREE4, strlen(TREE4), six, strlen(six), &opts, &u, &err),
                     RP_URDF_LIMIT);
    assert_null(u);
    assert_string_equal(err.limit_name, "max_model_links");
    assert_int_equal(err.limit_max, 5);
    assert_true(strstr(err.reason, "more than 5 groups") != NULL);
    opts.max_links = 6;
    assert_int_equal(rp_urdf_parse(TREE4, strlen(TREE4), six, strlen(six), &opts, &u, &err),
                     RP_URDF_OK);
    assert_int_equal(rp_urdf_def(u)->n_groups, 6);
    rp_urdf_free(u);
}

static void library_import_puts_the_same_model(void **state)
{
    (void)state;
    size_t ulen, slen;
    char *urdf = test_read_data("arm7.urdf", &ulen);
    char *srdf = test_read_data("arm7.srdf", &slen);
    rp_urdf *u = NULL;
    assert_int_equal(rp_urdf_parse(urdf, ulen, srdf, slen, NULL, &u, NULL), RP_URDF_OK);
    rp_store *st = rp_store_new(NULL);
    rp_model *ref = NULL, *m = NULL, *bare = NULL;
    assert_int_equal(rp_store_model_put(st, "ref", rp_urdf_def(u), &ref, NULL), RP_OK);
    rp_urdf_problem err;
    assert_int_equal(rp_store_model_put_urdf(st, "arm7", urdf, ulen, srdf, slen, &m, &err), RP_OK);
    assert_non_null(m);
    assert_ptr_equal(rp_store_model_find(st, "arm7"), m);
    assert_int_equal(rp_model_dof(m), rp_model_dof(ref));
    assert_int_equal(rp_model_link_count(m), rp_model_link_count(ref));
    assert_int_equal(rp_model_tree_link_count(m), rp_model_tree_link_count(ref));
    assert_int_equal(rp_model_allowed_count(m), rp_model_allowed_count(ref));
    for (size_t i = 0; i < rp_model_dof(m); i++)
        assert_string_equal(rp_model_dof_name(m, i), rp_model_dof_name(ref, i));
    /* The same verdict and distance at a configuration. */
    const double pi = 3.14159265358979323846;
    double q[8] = {0, -pi / 4, 0, -3 * pi / 4, 0, pi / 2, pi / 4, 0.04};
    rp_check_opts opts = {.report = RP_REPORT_CLOSEST};
    rp_check_result a = {0}, b = {0};
    assert_int_equal(rp_model_check_joints(m, NULL, NULL, q, &opts, &a), RP_OK);
    assert_int_equal(rp_model_check_joints(ref, NULL, NULL, q, &opts, &b), RP_OK);
    assert_true(a.has_min && b.has_min);
    assert_memory_equal(&a.closest.distance, &b.closest.distance, sizeof(double));
    rp_check_result_free(&a);
    rp_check_result_free(&b);
    /* Without the SRDF, every joint's (parent, child) pair is allowed. */
    assert_int_equal(rp_store_model_put_urdf(st, "bare", urdf, ulen, NULL, 0, &bare, &err), RP_OK);
    rp_urdf *au = NULL, *nu = NULL;
    rp_model *adj = NULL, *none = NULL;
    rp_urdf_opts with = {.allow_adjacent = true};
    assert_int_equal(rp_urdf_parse(urdf, ulen, NULL, 0, &with, &au, NULL), RP_URDF_OK);
    assert_int_equal(rp_urdf_parse(urdf, ulen, NULL, 0, NULL, &nu, NULL), RP_URDF_OK);
    assert_int_equal(rp_store_model_put(st, "adj", rp_urdf_def(au), &adj, NULL), RP_OK);
    assert_int_equal(rp_store_model_put(st, "none", rp_urdf_def(nu), &none, NULL), RP_OK);
    rp_check_opts all = {.report = RP_REPORT_ALL};
    rp_check_result c = {0};
    assert_int_equal(rp_model_check_joints(bare, NULL, NULL, q, &all, &a), RP_OK);
    assert_int_equal(rp_model_check_joints(adj, NULL, NULL, q, &all, &b), RP_OK);
    assert_int_equal(rp_model_check_joints(none, NULL, NULL, q, &all, &c), RP_OK);
    assert_int_equal(a.n_violations, b.n_violations);
    assert_true(c.n_violations > a.n_violations); /* the joints' own pairs count there */
    rp_check_result_free(&a);
    rp_check_result_free(&b);
    rp_check_result_free(&c);
    rp_urdf_free(au);
    rp_urdf_free(nu);

    /* Refusals: a malformed document, a model the store refuses, a bad
     * name; none changes the store. */
    uint64_t rev = rp_store_revision(st);
    const char *broken = "<robot name='r'>\n<link name='a'>\n<collision><geometry>"
                         "<sphere radius='-1'/></geometry></collision></link></robot>";
    assert_int_equal(rp_store_model_put_urdf(st, "x", broken, strlen(broken), NULL, 0, NULL, &err),
                     RP_ERR_INVALID_ARG);
    assert_false(err.in_srdf);
    assert_int_equal(err.line, 3);
    assert_true(strstr(err.where, "link[a]") == err.where);
    assert_true(strlen(err.reason) > 0);
    const char *orphan = "<robot name='r'>\n<link name='a'/>\n<joint name='j' type='fixed'>"
                         "<parent link='a'/><child link='c'/></joint>\n</robot>";
    assert_int_equal(rp_store_model_put_urdf(st, "x", orphan, strlen(orphan), NULL, 0, NULL, &err),
                     RP_ERR_INVALID_ARG);
    assert_string_equal(err.reason, "joint 'j' (line 3): child link 'c' is not defined");
    assert_int_equal(rp_store_model_put_urdf(st, ".x", urdf, ulen, NULL, 0, NULL, &err),
                     RP_ERR_INVALID_ARG);
    assert_string_equal(err.where, "name");
    const char *bad_srdf = "<robot name='r'><disable_collisions link1='nope' link2='arm7_link1'/>"
                           "</robot>";
    assert_int_equal(
        rp_store_model_put_urdf(st, "x", urdf, ulen, bad_srdf, strlen(bad_srdf), NULL, &err),
        RP_ERR_INVALID_ARG);
    assert_true(err.in_srdf);
    assert_null(rp_store_model_find(st, "x"));
    assert_int_equal(rp_store_revision(st), rev);
    assert_int_equal(rp_store_model_put_urdf(st, "y", NULL, 0, NULL, 0, NULL, NULL),
                     RP_ERR_INVALID_ARG);
    rp_store_free(st);
    rp_urdf_free(u);
    free(urdf);
    free(srdf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_urdf_gives_the_exact_def),
        cmocka_unit_test(fixed_and_prismatic_joints_and_limit_defaults),
        cmocka_unit_test(cylinder_becomes_capsule_of_its_length),
        cmocka_unit_test(sphere_keeps_radius_and_moves_with_origin),
        cmocka_unit_test(collision_origin_rpy_is_applied),
        cmocka_unit_test(box_is_one_box_of_half_its_size),
        cmocka_unit_test(box_vertices_move_with_the_origin),
        cmocka_unit_test(zero_edges_are_accepted),
        cmocka_unit_test(model_of_boxes_checks_against_a_scene),
        cmocka_unit_test(numbers_are_plain_finite_decimals),
        cmocka_unit_test(each_refusal_names_its_element),
        cmocka_unit_test(quoted_text_stays_utf8),
        cmocka_unit_test(billion_laughs_is_refused_at_the_first_entity),
        cmocka_unit_test(external_entities_are_refused),
        cmocka_unit_test(attribute_list_declarations_are_refused),
        cmocka_unit_test(one_megabyte_urdf_parses),
        cmocka_unit_test(limits_stop_the_parse),
        cmocka_unit_test(adjacent_pairs_follow_srdf_pairs),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(arm7_parses_with_its_srdf),
        cmocka_unit_test(arm7_is_a_valid_model_clear_at_ready),
        cmocka_unit_test(store_errors_map_back_to_lines),
        cmocka_unit_test(library_import_puts_the_same_model),
        cmocka_unit_test(srdf_groups_states_and_end_effectors),
        cmocka_unit_test(srdf_group_refusals),
        cmocka_unit_test(srdf_elements_within_the_link_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
