/* SPDX-License-Identifier: MIT */
/*
 * Kinematic models: forward kinematics against hand-computed poses and
 * against an independent long-double reference on random trees; joint
 * order, defaults and limits; every refusal of the kinematic form with its
 * problem and index (the store unchanged after each); checks of joint
 * vectors against checks of hand-computed frames and against an equivalent
 * frame-indexed model; allowed pairs and allowed scene pairs by link name;
 * per-request attached shapes (rp_model_extend); memory accounting.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"

#include "repose/scene.h"
#include "scene/scene_int.h" /* rp_simd_force_ */
#include "scene/model_int.h" /* rp_kin_frames_n_ */
#include "test_joints.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- helpers ------------------------------------------------------------------ */

static rp_joint_def mimic_of(rp_joint_def j, const char *of, double mult, double off)
{
    j.mimic = of;
    j.multiplier = mult;
    j.offset = off;
    return j;
}

static rp_transform pose(double tx, double ty, double tz, double w, double x, double y, double z)
{
    rp_transform tf;
    assert_int_equal(rp_transform_from_quaternion(V(tx, ty, tz), w, x, y, z, &tf), RP_OK);
    return tf;
}

static void rz(double a, double r[3][3])
{
    double c = cos(a), s = sin(a);
    double m[3][3] = {{c, -s, 0}, {s, c, 0}, {0, 0, 1}};
    memcpy(r, m, sizeof m);
}

static void rx(double a, double r[3][3])
{
    double c = cos(a), s = sin(a);
    double m[3][3] = {{1, 0, 0}, {0, c, -s}, {0, s, c}};
    memcpy(r, m, sizeof m);
}

static void ry(double a, double r[3][3])
{
    double c = cos(a), s = sin(a);
    double m[3][3] = {{c, 0, s}, {0, 1, 0}, {-s, 0, c}};
    memcpy(r, m, sizeof m);
}

static void mat_mul3(const double a[3][3], const double b[3][3], double out[3][3])
{
    double t[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
    memcpy(out, t, sizeof t);
}

static void assert_pose(const rp_transform *got, const double r[3][3], rp_vec3 t, double tol)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!(fabs(got->r[i][j] - r[i][j]) <= tol))
                fail_msg("r[%d][%d] = %.17g, want %.17g", i, j, got->r[i][j], r[i][j]);
    assert_near(got->t.x, t.x, tol);
    assert_near(got->t.y, t.y, tol);
    assert_near(got->t.z, t.z, tol);
}

/* FK into poses[], by link name. */
static const rp_transform *link_pose(const rp_model *m, const rp_transform *poses, const char *name)
{
    size_t i = rp_model_tree_link_find(m, name);
    if (i == SIZE_MAX)
        fail_msg("no link %s", name);
    return &poses[i];
}

static rp_check_result check_q(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                               const double *q, rp_report report, bool has_margin, double margin)
{
    rp_check_opts o = {report, has_margin, margin, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check_joints(m, sc, base, q, &o, &r), RP_OK);
    return r;
}

static void assert_pair(const rp_check_pair *p, size_t link, rp_pair_kind kind, size_t other)
{
    if (p->link != link || p->kind != kind || p->other != other)
        fail_msg("pair (%zu, %d, %zu), want (%zu, %d, %zu)", p->link, (int)p->kind, p->other, link,
                 (int)kind, other);
}

/* Two results agree: same flags, same pairs, distances within tol. */
static void assert_same_result(const rp_check_result *a, const rp_check_result *b, double tol)
{
    assert_int_equal(a->collision, b->collision);
    assert_int_equal(a->has_min, b->has_min);
    if (a->has_min) {
        assert_pair(&a->closest, b->closest.link, b->closest.kind, b->closest.other);
        assert_near(a->closest.distance, b->closest.distance, tol);
    }
    assert_int_equal(a->n_violations, b->n_violations);
    for (size_t i = 0; i < a->n_violations; i++) {
        assert_pair(&a->violations[i], b->violations[i].link, b->violations[i].kind,
                    b->violations[i].other);
        assert_near(a->violations[i].distance, b->violations[i].distance, tol);
    }
}

/* ---- forward kinematics by hand ---------------------------------------------------- */

/* base -(j1: z, at height h)-> l1 -(j2: z, at (L1,0,0))-> l2 -(fixed at (L2,0,0))-> tip */
#define ARM_H 0.2
#define ARM_L1 0.7
#define ARM_L2 0.4

static rp_model *planar_arm(rp_store *st, const char *name)
{
    static const char *const sl[] = {"base", "l1", "l2", "tip"};
    rp_link shapes[] = {
        S("base#0", sphere(0, 0, 0, 0.1)), S("l1#0", capsule(0, 0, 0, ARM_L1, 0, 0, 0.03)),
        /* a gap at the elbow: no exact ties between l1 and l2 */
        S("l2#0", capsule(0.05, 0, 0, ARM_L2, 0, 0, 0.03)), S("tip#0", sphere(0.05, 0, 0, 0.02))};
    rp_joint_def j[] = {J("j1", RP_JOINT_REVOLUTE, "base", "l1", V(0, 0, ARM_H), ZERO, AZ),
                        J("j2", RP_JOINT_REVOLUTE, "l1", "l2", V(ARM_L1, 0, 0), ZERO, AZ),
                        J("tipj", RP_JOINT_FIXED, "l2", "tip", V(ARM_L2, 0, 0), ZERO, ZERO)};
    static const char *const allowed[] = {"base", "l1", "l1", "l2"};
    rp_model_def d = kdef(shapes, sl, 4, j, 3);
    d.allowed_pairs = allowed;
    d.n_allowed = 2;
    return put_ok(st, name, &d);
}

static void planar_arm_poses_match_hand_computation(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = planar_arm(st, "arm");
    assert_int_equal(rp_model_dof(m), 2);
    assert_int_equal(rp_model_tree_link_count(m), 4);
    assert_int_equal(rp_model_frame_count(m), 2);
    assert_string_equal(rp_model_tree_link_name(m, rp_model_root(m)), "base");
    const double angles[][2] = {{0, 0},      {M_PI / 2, 0},     {0.3, -1.1},
                                {-2.5, 2.9}, {M_PI, -M_PI / 2}, {1e-9, -3.1}};
    for (size_t c = 0; c < sizeof angles / sizeof *angles; c++) {
        double a = angles[c][0], b = angles[c][1];
        rp_transform poses[4];
        assert_int_equal(rp_model_fk(m, NULL, angles[c], poses), RP_OK);
        double r[3][3], id[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        assert_pose(link_pose(m, poses, "base"), id, ZERO, 0);
        rz(a, r);
        assert_pose(link_pose(m, poses, "l1"), r, V(0, 0, ARM_H), 1e-15);
        rz(a + b, r);
        rp_vec3 elbow = V(ARM_L1 * cos(a), ARM_L1 * sin(a), ARM_H);
        assert_pose(link_pose(m, poses, "l2"), r, elbow, 1e-15);
        rp_vec3 tip = V(elbow.x + ARM_L2 * cos(a + b), elbow.y + ARM_L2 * sin(a + b), ARM_H);
        assert_pose(link_pose(m, poses, "tip"), r, tip, 1e-15);
    }
    rp_store_free(st);
}

static void prismatic_joint_translates_along_its_normalised_axis(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"slider"};
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    /* Origin turned a quarter about z: the joint's x axis is the world's y. */
    rp_joint_def j[] = {
        J("p", RP_JOINT_PRISMATIC, "base", "slider", V(1, 0, 0), V(0, 0, M_PI / 2), V(2, 0, 0)),
        J("p2", RP_JOINT_PRISMATIC, "slider", "s2", V(0, 0, 0), ZERO, V(0, 3, -4))};
    rp_model_def d = kdef(shapes, sl, 1, j, 2);
    rp_model *m = put_ok(st, "m", &d);
    assert_near(rp_model_joint_at(m, 0)->axis.x, 1, 0);
    assert_near(rp_model_joint_at(m, 1)->axis.y, 0.6, 1e-16);
    assert_near(rp_model_joint_at(m, 1)->axis.z, -0.8, 1e-16);
    const double vals[] = {0, 0.3, -1.5, 1e3};
    for (size_t c = 0; c < 4; c++) {
        double q[2] = {vals[c], 0.5 * vals[c] + 0.25};
        rp_transform poses[3];
        assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_OK);
        double r[3][3];
        rz(M_PI / 2, r);
        const rp_transform *s = link_pose(m, poses, "slider");
        assert_pose(s, r, V(1, q[0], 0), 1e-12);
        /* p2's axis (0, 0.6, -0.8) in the slider frame is (-0.6, 0, -0.8) in the world. */
        assert_pose(link_pose(m, poses, "s2"), r, V(1 - 0.6 * q[1], q[0], -0.8 * q[1]), 1e-12);
    }
    rp_store_free(st);
}

static void mimic_joints_follow_their_source_through_chains(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"a", "b", "c", "d"};
    rp_link shapes[] = {S("a#0", sphere(0, 0, 0, 0.1)), S("b#0", sphere(0, 0, 0, 0.1)),
                        S("c#0", sphere(0, 0, 0, 0.1)), S("d#0", sphere(0, 0, 0, 0.1))};
    /* jmm (defined first) follows jm, which follows j1; jp (prismatic) follows j1. */
    rp_joint_def j[] = {
        mimic_of(J("jmm", RP_JOINT_REVOLUTE, "b", "c", V(1, 0, 0), ZERO, AZ), "jm", -0.5, 0.3),
        J("j1", RP_JOINT_CONTINUOUS, "base", "a", ZERO, ZERO, AZ),
        mimic_of(J("jm", RP_JOINT_REVOLUTE, "a", "b", V(1, 0, 0), ZERO, AZ), "j1", 2, 0.1),
        mimic_of(J("jp", RP_JOINT_PRISMATIC, "base", "d", ZERO, ZERO, AX), "j1", 0.5, 0.2)};
    rp_model_def d = kdef(shapes, sl, 4, j, 4);
    rp_model *m = put_ok(st, "m", &d);
    assert_int_equal(rp_model_dof(m), 1);
    assert_string_equal(rp_model_dof_name(m, 0), "j1");
    assert_int_equal(rp_model_dof_find(m, "j1"), 0);
    assert_int_equal(rp_model_dof_find(m, "jm"), SIZE_MAX);
    assert_int_equal(rp_model_dof_find(m, "jmm"), SIZE_MAX);
    assert_int_equal(rp_model_joint_count(m), 4);
    assert_string_equal(rp_model_joint_at(m, 0)->mimic, "jm");
    assert_near(rp_model_joint_at(m, 0)->multiplier, -0.5, 0);
    assert_null(rp_model_joint_at(m, 1)->mimic);
    const double vals[] = {0, 0.7, -2.2, 4};
    for (size_t c = 0; c < 4; c++) {
        double qv = vals[c];
        rp_transform poses[5];
        assert_int_equal(rp_model_fk(m, NULL, &qv, poses), RP_OK);
        double r[3][3];
        rz(qv, r);
        assert_pose(link_pose(m, poses, "a"), r, ZERO, 1e-15);
        double vb = qv + (2 * qv + 0.1); /* accumulated angle at b */
        rz(vb, r);
        rp_vec3 pb = V(cos(qv), sin(qv), 0);
        assert_pose(link_pose(m, poses, "b"), r, pb, 1e-14);
        double vc = vb + (-0.5 * (2 * qv + 0.1) + 0.3); /* = 2q + 0.35 */
        rz(vc, r);
        assert_pose(link_pose(m, poses, "c"), r, V(pb.x + cos(vb), pb.y + sin(vb), 0), 1e-14);
        double id[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        assert_pose(link_pose(m, poses, "d"), id, V(0.5 * qv + 0.2, 0, 0), 1e-15);
    }
    rp_store_free(st);
}

/* base -(fixed mount)-> plate -(j1: z)-> a -(fixed f1)-> b -(fixed f2)-> c */
static rp_model *fixed_chain(rp_store *st)
{
    static const char *const sl[] = {"base", "plate", "a", "b", "c"};
    rp_link shapes[] = {S("base#0", sphere(0, 0, 0, 0.3)), S("plate#0", sphere(0, 0, 0, 0.3)),
                        S("a#0", capsule(0, 0, 0.3, 0, 0, 1, 0.1)),
                        S("b#0", capsule(0, 0, 0, 0.5, 0, 0, 0.1)),
                        S("c#0", sphere(0, 0, 0.1, 0.15))};
    rp_joint_def j[] = {J("mount", RP_JOINT_FIXED, "base", "plate", V(0, 0, 0.1), ZERO, ZERO),
                        J("j1", RP_JOINT_REVOLUTE, "plate", "a", V(0, 0, 0.2), ZERO, AZ),
                        J("f1", RP_JOINT_FIXED, "a", "b", V(0, 0, 1), V(0, 0, M_PI / 2), ZERO),
                        J("f2", RP_JOINT_FIXED, "b", "c", V(0.5, 0, 0), V(M_PI / 2, 0, 0), ZERO)};
    rp_model_def d = kdef(shapes, sl, 5, j, 4);
    return put_ok(st, "chain", &d);
}

static void fixed_joints_share_frames_and_offset_poses(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = fixed_chain(st);
    assert_int_equal(rp_model_dof(m), 1);
    assert_int_equal(rp_model_frame_count(m), 1);
    assert_int_equal(rp_model_link_at(m, 0)->frame, -1);
    assert_int_equal(rp_model_link_at(m, 1)->frame, -1);
    assert_int_equal(rp_model_link_at(m, 2)->frame, 0);
    assert_int_equal(rp_model_link_at(m, 3)->frame, 0);
    assert_int_equal(rp_model_link_at(m, 4)->frame, 0);
    for (size_t s = 0; s < 5; s++)
        assert_int_equal(
            rp_model_shape_link(m, s),
            rp_model_tree_link_find(m, (const char *[]){"base", "plate", "a", "b", "c"}[s]));

    rp_shape_put probe_put = {"probe", sphere(0, 0, 0, 0)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &probe_put, 1, &sc), RP_OK);
    const double vals[] = {0, 0.4, -2.0, M_PI};
    for (size_t c = 0; c < 4; c++) {
        double q = vals[c];
        rp_transform poses[5];
        assert_int_equal(rp_model_fk(m, NULL, &q, poses), RP_OK);
        double id[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, r[3][3], r2[3][3];
        assert_pose(link_pose(m, poses, "plate"), id, V(0, 0, 0.1), 0);
        rz(q, r);
        assert_pose(link_pose(m, poses, "a"), r, V(0, 0, 0.3), 1e-15);
        rz(q + M_PI / 2, r);
        assert_pose(link_pose(m, poses, "b"), r, V(0, 0, 1.3), 1e-15);
        rx(M_PI / 2, r2);
        mat_mul3(r, r2, r2);
        rp_vec3 pc = V(0.5 * cos(q + M_PI / 2), 0.5 * sin(q + M_PI / 2), 1.3);
        assert_pose(link_pose(m, poses, "c"), r2, pc, 1e-15);

        /* The shapes: nothing collides (shapes sharing a frame overlap but are
         * never paired), and the closest pair is plate vs a (0.5 - 0.4). */
        rp_check_result res = check_q(m, NULL, NULL, &q, RP_REPORT_ALL, false, 0);
        assert_false(res.collision);
        assert_int_equal(res.n_violations, 0);
        assert_pair(&res.closest, 1, RP_PAIR_SELF, 2);
        assert_near(res.closest.distance, 0.1, 1e-15);
        rp_check_result_free(&res);
        /* c's sphere centre: pc + Rz(q + pi/2) Rx(pi/2) (0, 0, 0.1); a probe
         * 0.5 above it is 0.35 from the sphere. */
        rp_vec3 cc = V(pc.x + 0.1 * sin(q + M_PI / 2), pc.y - 0.1 * cos(q + M_PI / 2), 1.3);
        rp_shape_put moved = {"probe", sphere(cc.x, cc.y, cc.z + 0.5, 0)};
        assert_int_equal(rp_scene_put(sc, &moved, 1, NULL, NULL), RP_OK);
        res = check_q(m, sc, NULL, &q, RP_REPORT_ALL, true, 10);
        bool seen = false;
        for (size_t v = 0; v < res.n_violations; v++)
            if (res.violations[v].link == 4 && res.violations[v].kind == RP_PAIR_SCENE) {
                assert_near(res.violations[v].distance, 0.35, 1e-14);
                seen = true;
            }
        assert_true(seen);
        rp_check_result_free(&res);
    }
    rp_store_free(st);
}

static void rpy_origins_compose_yaw_pitch_roll_including_gimbal_lock(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"base"};
    rp_link shapes[] = {S("b", sphere(0, 0, 0, 0.1))};
    const double r0 = 0.3, y0 = 0.2;
    rp_joint_def j[] = {
        J("up", RP_JOINT_FIXED, "base", "up", V(1, 2, 3), V(r0, M_PI / 2, y0), ZERO),
        J("down", RP_JOINT_FIXED, "base", "down", ZERO, V(r0, -M_PI / 2, y0), ZERO),
        J("gen", RP_JOINT_FIXED, "base", "gen", ZERO, V(0.4, -0.7, 2.1), ZERO),
        /* a moving joint after a general origin: R(origin) * Rz(q) */
        J("mov", RP_JOINT_REVOLUTE, "gen", "mov", V(0.5, 0, 0), V(-1.2, 0.3, 0.9), AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 4);
    rp_model *m = put_ok(st, "m", &d);
    double q = 0.77;
    rp_transform poses[5];
    assert_int_equal(rp_model_fk(m, NULL, &q, poses), RP_OK);
    /* Pitch +pi/2: only roll - yaw matters. */
    double s = sin(r0 - y0), c = cos(r0 - y0);
    double up[3][3] = {{0, s, c}, {0, c, -s}, {-1, 0, 0}};
    assert_pose(link_pose(m, poses, "up"), up, V(1, 2, 3), 1e-15);
    s = sin(r0 + y0), c = cos(r0 + y0);
    double down[3][3] = {{0, -s, -c}, {0, c, -s}, {1, 0, 0}};
    assert_pose(link_pose(m, poses, "down"), down, ZERO, 1e-15);
    double a[3][3], b[3][3], gen[3][3];
    rz(2.1, a);
    ry(-0.7, b);
    mat_mul3(a, b, gen);
    rx(0.4, b);
    mat_mul3(gen, b, gen);
    assert_pose(link_pose(m, poses, "gen"), gen, ZERO, 1e-15);
    double mov[3][3];
    rz(0.9, a);
    ry(0.3, b);
    mat_mul3(a, b, mov);
    rx(-1.2, b);
    mat_mul3(mov, b, mov);
    rz(q, b);
    mat_mul3(mov, b, mov);
    mat_mul3(gen, mov, mov);
    assert_pose(link_pose(m, poses, "mov"), mov,
                V(0.5 * gen[0][0], 0.5 * gen[1][0], 0.5 * gen[2][0]), 1e-15);
    rp_store_free(st);
}

static void arbitrary_axes_are_normalised_and_rotate_by_rodrigues(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"base"};
    rp_link shapes[] = {S("b", sphere(0, 0, 0, 0.1))};
    rp_joint_def j[] = {
        J("diag", RP_JOINT_REVOLUTE, "base", "diag", ZERO, ZERO, V(3, 3, 0)),
        J("neg", RP_JOINT_REVOLUTE, "base", "neg", ZERO, ZERO, V(0, 0, -4)),
        J("tiny", RP_JOINT_REVOLUTE, "base", "tiny", ZERO, ZERO, V(1e-300, 0, 0)),
        J("huge", RP_JOINT_CONTINUOUS, "base", "huge", ZERO, ZERO, V(1e300, 1e300, 0)),
        J("five", RP_JOINT_REVOLUTE, "base", "five", ZERO, ZERO, V(0, 0, 5))};
    rp_model_def d = kdef(shapes, sl, 1, j, 5);
    rp_model *m = put_ok(st, "m", &d);
    const double h = sqrt(0.5);
    assert_near(rp_model_joint_at(m, 0)->axis.x, h, 2e-16);
    assert_near(rp_model_joint_at(m, 0)->axis.y, h, 2e-16);
    assert_near(rp_model_joint_at(m, 2)->axis.x, 1, 0);
    assert_near(rp_model_joint_at(m, 3)->axis.x, h, 2e-16);
    assert_near(rp_model_joint_at(m, 4)->axis.z, 1, 0);
    rp_transform poses[6];
    double q[5] = {M_PI, 0.6, 0.6, M_PI / 2, 0.6};
    assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_OK);
    double half_turn[3][3] = {{0, 1, 0}, {1, 0, 0}, {0, 0, -1}};
    assert_pose(link_pose(m, poses, "diag"), half_turn, ZERO, 1e-15);
    double r[3][3];
    rz(-0.6, r);
    assert_pose(link_pose(m, poses, "neg"), r, ZERO, 1e-15);
    rx(0.6, r);
    assert_pose(link_pose(m, poses, "tiny"), r, ZERO, 1e-15);
    double quarter[3][3] = {{0.5, 0.5, h}, {0.5, 0.5, -h}, {-h, h, 0}};
    assert_pose(link_pose(m, poses, "huge"), quarter, ZERO, 1e-15);
    rz(0.6, r);
    assert_pose(link_pose(m, poses, "five"), r, ZERO, 1e-15);
    rp_store_free(st);
}

static void base_pose_moves_every_link(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = planar_arm(st, "arm");
    rp_transform base = pose(0.3, -1.2, 2.5, 0.9, 0.1, -0.3, 0.2);
    test_rng rng = {42};
    for (int c = 0; c < 20; c++) {
        double q[2] = {rng_uniform(&rng, -3, 3), rng_uniform(&rng, -3, 3)};
        rp_transform plain[4], moved[4];
        assert_int_equal(rp_model_fk(m, NULL, q, plain), RP_OK);
        assert_int_equal(rp_model_fk(m, &base, q, moved), RP_OK);
        for (size_t l = 0; l < 4; l++) {
            rp_transform want = rp_transform_compose(&base, &plain[l]);
            assert_pose(&moved[l], want.r, want.t, 1e-14);
        }
    }
    rp_store_free(st);
}

/* The planar arm, and "frames": a frame-indexed model with no joints. */
static rp_model *planar_and_frame_model(rp_store *st, rp_model **frame_model)
{
    rp_model *m = planar_arm(st, "arm");
    rp_link fl[] = {{"x", 0, sphere(0, 0, 0, 1)}};
    rp_model_def fd = {.links = fl, .n_links = 1};
    *frame_model = NULL;
    assert_int_equal(rp_store_model_put(st, "frames", &fd, frame_model, NULL), RP_OK);
    return m;
}

/* A frame-indexed model has no joints: no dof, no joint or shape link, and
 * fk and joint checks refuse it. */
static void fk_and_joint_checks_refuse_frame_models(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *frame_model;
    planar_and_frame_model(st, &frame_model);
    assert_false(rp_model_is_kinematic(frame_model));
    assert_int_equal(rp_model_dof(frame_model), 0);
    assert_int_equal(rp_model_dof_find(frame_model, "j1"), SIZE_MAX);
    assert_int_equal(rp_model_shape_link(frame_model, 0), SIZE_MAX);
    rp_transform poses[4];
    double q[2] = {0, 0};
    assert_int_equal(rp_model_fk(frame_model, NULL, q, poses), RP_ERR_INVALID_ARG);
    rp_check_result r;
    assert_int_equal(rp_model_check_joints(frame_model, NULL, NULL, q, NULL, &r),
                     RP_ERR_INVALID_ARG);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void fk_refuses_null_joint_and_pose_arrays(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *frame_model;
    rp_model *m = planar_and_frame_model(st, &frame_model);
    rp_transform poses[4];
    double q[2] = {0, 0};
    assert_int_equal(rp_model_fk(m, NULL, NULL, poses), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_fk(m, NULL, q, NULL), RP_ERR_INVALID_ARG);
    rp_store_free(st);
}

/* NaN and infinite joint values: RP_ERR_NONFINITE from fk and from joint
 * checks, whose result then names no pair. */
static void fk_and_joint_checks_refuse_nonfinite_values(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *frame_model;
    rp_model *m = planar_and_frame_model(st, &frame_model);
    rp_transform poses[4];
    double q[2] = {0, 0};
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        q[1] = bad[b];
        assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_ERR_NONFINITE);
        rp_check_result r;
        rp_check_opts o = {RP_REPORT_CLOSEST, false, 0, NULL, NULL, 0};
        assert_int_equal(rp_model_check_joints(m, NULL, NULL, q, &o, &r), RP_ERR_NONFINITE);
        assert_int_equal(r.closest.link, SIZE_MAX);
        assert_false(r.collision);
        rp_check_result_free(&r);
    }
    rp_store_free(st);
}

/* ---- joint order, defaults, limits --------------------------------------------------- */

static rp_model *mixed_model(rp_store *st, const char *const *dn, const double *dv, size_t nd,
                             rp_model_error *err, rp_status want)
{
    static const char *const sl[] = {"base"};
    rp_link shapes[] = {S("b", sphere(0, 0, 0, 0.1))};
    rp_joint_def j[] = {J("f0", RP_JOINT_FIXED, "base", "a", ZERO, ZERO, ZERO),
                        limited(J("jB", RP_JOINT_REVOLUTE, "a", "b", ZERO, ZERO, AZ), 0.5, 1.0),
                        mimic_of(J("jM", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ), "jB", 1, 0),
                        limited(J("jA", RP_JOINT_PRISMATIC, "base", "d", ZERO, ZERO, AX), -1, -0.3),
                        /* limits on a continuous joint are ignored, even reversed ones */
                        limited(J("jC", RP_JOINT_CONTINUOUS, "c", "e", ZERO, ZERO, AY), 5, -5),
                        J("jD", RP_JOINT_REVOLUTE, "e", "f", ZERO, ZERO, AZ),
                        limited(J("jE", RP_JOINT_REVOLUTE, "f", "g", ZERO, ZERO, AZ), -1, 2)};
    rp_model_def d = kdef(shapes, sl, 1, j, 7);
    d.default_names = dn;
    d.default_values = dv;
    d.n_defaults = nd;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "mixed", &d, &m, err), want);
    return m;
}

static void active_joints_are_moving_non_mimic_joints_in_definition_order(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model_error err;
    rp_model *m = mixed_model(st, NULL, NULL, 0, &err, RP_OK);
    const char *want[] = {"jB", "jA", "jC", "jD", "jE"};
    rp_joint_type types[] = {RP_JOINT_REVOLUTE, RP_JOINT_PRISMATIC, RP_JOINT_CONTINUOUS,
                             RP_JOINT_REVOLUTE, RP_JOINT_REVOLUTE};
    assert_int_equal(rp_model_dof(m), 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(rp_model_dof_name(m, i), want[i]);
        assert_int_equal(rp_model_dof_type(m, i), types[i]);
        assert_int_equal(rp_model_dof_find(m, want[i]), i);
    }
    assert_int_equal(rp_model_dof_find(m, "f0"), SIZE_MAX);
    assert_int_equal(rp_model_dof_find(m, "jM"), SIZE_MAX);
    assert_int_equal(rp_model_dof_find(m, "nope"), SIZE_MAX);
    assert_int_equal(rp_model_dof_find(m, "jb"), SIZE_MAX);
    assert_int_equal(rp_model_frame_count(m), 6); /* moving joints, the mimic included */

    double lo, hi;
    assert_true(rp_model_dof_limits(m, 0, &lo, &hi));
    assert_near(lo, 0.5, 0);
    assert_near(hi, 1.0, 0);
    assert_true(rp_model_dof_limits(m, 1, &lo, &hi));
    assert_near(lo, -1, 0);
    assert_near(hi, -0.3, 0);
    assert_false(rp_model_dof_limits(m, 2, &lo, &hi));
    assert_true(isinf(lo) && lo < 0 && isinf(hi) && hi > 0);
    assert_false(rp_model_dof_limits(m, 3, NULL, NULL));

    /* Defaults: 0 clamped into the limits. */
    double def[5];
    rp_model_default_joints(m, def);
    const double clamped[] = {0.5, -0.3, 0, 0, 0};
    for (size_t i = 0; i < 5; i++) {
        assert_same_bits(def[i], clamped[i]);
        assert_same_bits(rp_model_dof_default(m, i), clamped[i]);
    }
    assert_int_equal(rp_model_limit_violation(m, def, 0), SIZE_MAX);

    /* Given defaults win, the others stay clamped. */
    const char *dn[] = {"jE", "jD", "jB"};
    const double dv[] = {1.5, -7, 0.75};
    m = mixed_model(st, dn, dv, 3, &err, RP_OK);
    rp_model_default_joints(m, def);
    const double given[] = {0.75, -0.3, 0, -7, 1.5};
    for (size_t i = 0; i < 5; i++)
        assert_same_bits(def[i], given[i]);
    rp_store_free(st);
}

static void limit_violations_are_strict_and_skip_unbounded_joints(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model_error err;
    rp_model *m = mixed_model(st, NULL, NULL, 0, &err, RP_OK);
    double q[5] = {0.5, -0.3, 1e9, -1e9, 2}; /* exactly at limits; unbounded far out */
    assert_int_equal(rp_model_limit_violation(m, q, 0), SIZE_MAX);
    q[0] = 1.0;
    q[1] = -1;
    q[4] = -1;
    assert_int_equal(rp_model_limit_violation(m, q, 0), SIZE_MAX);
    q[0] = nextafter(1.0, 2);
    assert_int_equal(rp_model_limit_violation(m, q, 0), 0);
    q[4] = nextafter(-1.0, -2);
    assert_int_equal(rp_model_limit_violation(m, q, 0), 0);
    assert_int_equal(rp_model_limit_violation(m, q, 1), 4);
    assert_int_equal(rp_model_limit_violation(m, q, 4), 4);
    assert_int_equal(rp_model_limit_violation(m, q, 5), SIZE_MAX);
    q[0] = 0.7;
    q[4] = 0;
    q[1] = nextafter(-0.3, 0);
    assert_int_equal(rp_model_limit_violation(m, q, 0), 1);
    q[1] = -0.5;
    /* NaN is never inside limits; continuous and unlimited joints never violate. */
    q[2] = NAN;
    q[3] = INFINITY;
    assert_int_equal(rp_model_limit_violation(m, q, 0), SIZE_MAX);
    q[4] = NAN;
    assert_int_equal(rp_model_limit_violation(m, q, 0), 4);
    rp_store_free(st);
}

/* ---- refusals ------------------------------------------------------------------------ */

/* A store holding a valid kinematic model "m" and a scene; a put of d under
 * "m" must fail with problem/index/element and change nothing. */
static void assert_refused(const rp_model_def *d, rp_model_problem problem, size_t index,
                           size_t element)
{
    rp_store *st = rp_store_new(NULL);
    rp_model *old = planar_arm(st, "m");
    planar_arm(st, "other");
    rp_shape_put sp = {"table", sphere(0, 0, 0, 1)};
    assert_int_equal(rp_store_create(st, "sc", &sp, 1, NULL), RP_OK);
    size_t mem = rp_store_memory(st);
    rp_model_error err;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "m", d, &m, &err), RP_ERR_INVALID_ARG);
    assert_null(m);
    if (err.problem != problem || err.index != index || err.element != element)
        fail_msg("problem %d index %zu element %zu, want %d %zu %zu", (int)err.problem, err.index,
                 err.element, (int)problem, index, element);
    /* And as a new name. */
    assert_int_equal(rp_store_model_put(st, "new", d, &m, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(err.problem, problem);
    assert_int_equal(rp_store_model_count(st), 2);
    assert_null(rp_store_model_find(st, "new"));
    assert_ptr_equal(rp_store_model_find(st, "m"), old);
    assert_int_equal(rp_model_revision(old), 1);
    assert_string_equal(rp_model_dof_name(old, 1), "j2");
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

static const char *const two_links[] = {"base", "a"};
static const char *const three_links[] = {"base", "a", "b"};

static void joints_naming_unknown_links_are_refused_with_the_end(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    static const char *const sl[] = {"a"};
    rp_joint_def j[] = {J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ),
                        J("j1", RP_JOINT_REVOLUTE, "zz", "b", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 2);
    d.link_names = three_links;
    d.n_link_names = 3;
    assert_refused(&d, RP_MODEL_UNKNOWN_JOINT_LINK, 1, 0);
    j[1] = J("j1", RP_JOINT_REVOLUTE, "a", "zz", ZERO, ZERO, AZ);
    assert_refused(&d, RP_MODEL_UNKNOWN_JOINT_LINK, 1, 1);
    j[0] = J("j0", RP_JOINT_FIXED, "b", "base", ZERO, ZERO, ZERO);
    j[1] = J("j1", RP_JOINT_FIXED, "a", "base", ZERO, ZERO, ZERO);
    d.link_names = two_links; /* b is not a link now */
    d.n_link_names = 2;
    assert_refused(&d, RP_MODEL_UNKNOWN_JOINT_LINK, 0, 0);
}

static void two_parents_self_joints_and_duplicates_are_refused(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1)), S("t", sphere(0, 0, 0, 0.1))};
    static const char *const sl[] = {"a", "b"};
    rp_joint_def j[] = {J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ),
                        J("j1", RP_JOINT_REVOLUTE, "base", "b", ZERO, ZERO, AZ),
                        J("j2", RP_JOINT_FIXED, "a", "b", ZERO, ZERO, ZERO)};
    rp_model_def d = kdef(shapes, sl, 2, j, 3);
    assert_refused(&d, RP_MODEL_TWO_PARENTS, 2, 0);
    j[2] = J("j2", RP_JOINT_REVOLUTE, "a", "a", ZERO, ZERO, AZ);
    assert_refused(&d, RP_MODEL_SELF_JOINT, 2, 0);
    j[2] = J("j0", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ);
    assert_refused(&d, RP_MODEL_DUPLICATE_JOINT, 2, 0);
    /* Duplicate link names, and duplicate shape ids. */
    static const char *const names[] = {"base", "a", "b", "c", "a"};
    d = kdef(shapes, sl, 2, j, 2);
    d.link_names = names;
    d.n_link_names = 5;
    assert_refused(&d, RP_MODEL_DUPLICATE_LINK_NAME, 4, 0);
    rp_link dup[] = {S("s", sphere(0, 0, 0, 0.1)), S("s", sphere(0, 0, 0, 0.1))};
    d = kdef(dup, sl, 2, j, 2);
    assert_refused(&d, RP_MODEL_DUPLICATE_LINK, 1, 0);
    rp_link bad[] = {S("s", sphere(0, 0, 0, 0.1)), S("t", sphere(0, NAN, 0, 0.1))};
    d = kdef(bad, sl, 2, j, 2);
    assert_refused(&d, RP_MODEL_BAD_SHAPE, 1, 0);
}

static void cycles_roots_and_unreachable_links_are_refused(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    static const char *const sl[] = {"base"};
    /* A 2-link loop next to the tree: a and b are each one joint's child,
     * base is the only root, and the walk from it never reaches the loop. */
    rp_joint_def loop2[] = {J("j0", RP_JOINT_REVOLUTE, "base", "x", ZERO, ZERO, AZ),
                            J("j1", RP_JOINT_REVOLUTE, "a", "b", ZERO, ZERO, AZ),
                            J("j2", RP_JOINT_FIXED, "b", "a", ZERO, ZERO, ZERO)};
    rp_model_def d = kdef(shapes, sl, 1, loop2, 3);
    assert_refused(&d, RP_MODEL_CYCLE, 1, 0);
    /* A 3-link loop with a tail hanging off it, defined before the tree. */
    rp_joint_def loop3[] = {J("j0", RP_JOINT_REVOLUTE, "c", "a", ZERO, ZERO, AZ),
                            J("j1", RP_JOINT_REVOLUTE, "base", "x", ZERO, ZERO, AZ),
                            J("j2", RP_JOINT_REVOLUTE, "a", "b", ZERO, ZERO, AZ),
                            J("j3", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ),
                            J("j4", RP_JOINT_FIXED, "c", "d", ZERO, ZERO, ZERO)};
    d = kdef(shapes, sl, 1, loop3, 5);
    assert_refused(&d, RP_MODEL_CYCLE, 0, 0);
    /* The tail below the loop is missed too, and named when it comes first. */
    rp_joint_def tail[] = {J("j0", RP_JOINT_REVOLUTE, "base", "x", ZERO, ZERO, AZ),
                           J("j1", RP_JOINT_FIXED, "c", "d", ZERO, ZERO, ZERO),
                           J("j2", RP_JOINT_REVOLUTE, "a", "b", ZERO, ZERO, AZ),
                           J("j3", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ),
                           J("j4", RP_JOINT_REVOLUTE, "c", "a", ZERO, ZERO, AZ)};
    d = kdef(shapes, sl, 1, tail, 5);
    static const char *const loop_links[] = {"base", "a", "b", "c", "d", "x"};
    d.link_names = loop_links;
    d.n_link_names = 6;
    assert_refused(&d, RP_MODEL_CYCLE, 1, 0);

    /* A loop and nothing else: no root at all. */
    rp_joint_def noroot[] = {J("j0", RP_JOINT_REVOLUTE, "a", "b", ZERO, ZERO, AZ),
                             J("j1", RP_JOINT_REVOLUTE, "b", "a", ZERO, ZERO, AZ)};
    static const char *const sla[] = {"a"};
    d = kdef(shapes, sla, 1, noroot, 2);
    assert_refused(&d, RP_MODEL_NO_ROOT, 0, 0);

    /* Two roots: the second parentless link, in link order. */
    rp_joint_def two[] = {J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ),
                          J("j1", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ)};
    d = kdef(shapes, sl, 1, two, 2);
    assert_refused(&d, RP_MODEL_TWO_ROOTS, 2, 0); /* names: base, a, b, c */
    static const char *const names4[] = {"c", "a", "base", "b"};
    d.link_names = names4;
    d.n_link_names = 4;
    assert_refused(&d, RP_MODEL_TWO_ROOTS, 3, 0);
    static const char *const lonely[] = {"base", "lonely"};
    d = kdef(shapes, sl, 1, NULL, 0);
    d.link_names = lonely;
    d.n_link_names = 2;
    assert_refused(&d, RP_MODEL_TWO_ROOTS, 1, 0);
    /* A shape on a link no joint mentions is a second root too. */
    static const char *const sl2[] = {"elsewhere"};
    d = kdef(shapes, sl2, 1, two, 1);
    assert_refused(&d, RP_MODEL_TWO_ROOTS, 2, 0);
}

static void bad_origins_axes_limits_and_types_are_refused(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    static const char *const sl[] = {"base"};
    rp_joint_def j[3];
    j[0] = J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ);
    j[1] = J("j1", RP_JOINT_FIXED, "a", "b", ZERO, ZERO, ZERO); /* zero axis: fine when fixed */
    rp_model_def d = kdef(shapes, sl, 1, j, 3);

    const rp_vec3 bad[] = {V(NAN, 0, 0), V(0, INFINITY, 0), V(0, 0, -INFINITY)};
    for (int b = 0; b < 3; b++) {
        j[2] = J("j2", RP_JOINT_REVOLUTE, "b", "c", bad[b], ZERO, AZ);
        assert_refused(&d, RP_MODEL_BAD_ORIGIN, 2, 0);
        j[2] = J("j2", RP_JOINT_FIXED, "b", "c", ZERO, bad[b], ZERO);
        assert_refused(&d, RP_MODEL_BAD_ORIGIN, 2, 0);
        j[2] = J("j2", RP_JOINT_PRISMATIC, "b", "c", ZERO, ZERO, bad[b]);
        assert_refused(&d, RP_MODEL_BAD_AXIS, 2, 0);
    }
    rp_joint_type moving[] = {RP_JOINT_REVOLUTE, RP_JOINT_CONTINUOUS, RP_JOINT_PRISMATIC};
    for (int t = 0; t < 3; t++) {
        j[2] = J("j2", moving[t], "b", "c", ZERO, ZERO, ZERO);
        assert_refused(&d, RP_MODEL_BAD_AXIS, 2, 0);
    }
    j[2] = limited(J("j2", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ), 1, nextafter(1, 0));
    assert_refused(&d, RP_MODEL_BAD_LIMITS, 2, 0);
    j[2] = limited(J("j2", RP_JOINT_PRISMATIC, "b", "c", ZERO, ZERO, AZ), NAN, 1);
    assert_refused(&d, RP_MODEL_BAD_LIMITS, 2, 0);
    j[2] = limited(J("j2", RP_JOINT_PRISMATIC, "b", "c", ZERO, ZERO, AZ), 0, INFINITY);
    assert_refused(&d, RP_MODEL_BAD_LIMITS, 2, 0);
    j[2] = J("j2", (rp_joint_type)9, "b", "c", ZERO, ZERO, AZ);
    assert_refused(&d, RP_MODEL_BAD_TYPE, 2, 0);

    /* lower == upper is fine; so are ignored limits on a continuous joint. */
    rp_store *st = rp_store_new(NULL);
    j[2] = limited(J("j2", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ), 1, 1);
    rp_model *m = put_ok(st, "m", &d);
    assert_same_bits(rp_model_dof_default(m, 1), 1.0);
    j[2] = limited(J("j2", RP_JOINT_CONTINUOUS, "b", "c", ZERO, ZERO, AZ), NAN, NAN);
    put_ok(st, "m", &d);
    rp_store_free(st);
}

static void bad_mimics_and_defaults_are_refused(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    static const char *const sl[] = {"base"};
    rp_joint_def j[4];
    j[0] = J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ);
    j[1] = J("f", RP_JOINT_FIXED, "a", "b", ZERO, ZERO, ZERO);
    j[2] = J("j2", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ);
    j[3] = mimic_of(J("m3", RP_JOINT_REVOLUTE, "c", "d", ZERO, ZERO, AZ), "j0", 1, 0);
    rp_model_def d = kdef(shapes, sl, 1, j, 4);
    rp_store *st = rp_store_new(NULL);
    put_ok(st, "fine", &d);
    rp_store_free(st);

    j[2] = mimic_of(J("j2", RP_JOINT_REVOLUTE, "b", "c", ZERO, ZERO, AZ), "nope", 1, 0);
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 2, 0);
    j[2].mimic = "f";
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 2, 0);
    j[2].mimic = "j2";
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 2, 0);
    /* A cycle through two joints (j2 -> m3 -> j2), found at the one the walk meets first. */
    j[2].mimic = "m3";
    j[3].mimic = "j2";
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 2, 0);
    /* A mimic of a mimic of a fixed joint is refused at its own index too... */
    j[2].mimic = "m3";
    j[3].mimic = "f";
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 2, 0);
    /* ... and non-finite coefficients. */
    j[2].mimic = "j0";
    j[3].mimic = "j0";
    j[3].multiplier = INFINITY;
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 3, 0);
    j[3].multiplier = 1;
    j[3].offset = NAN;
    assert_refused(&d, RP_MODEL_BAD_MIMIC, 3, 0);
    j[3].offset = 0;

    const char *dn[] = {"j0", "zz"};
    const double dv[] = {0.1, 0.2};
    d.default_names = dn;
    d.default_values = dv;
    d.n_defaults = 2;
    assert_refused(&d, RP_MODEL_UNKNOWN_DEFAULT, 1, 0);
    dn[1] = "f"; /* fixed: not active */
    assert_refused(&d, RP_MODEL_UNKNOWN_DEFAULT, 1, 0);
    dn[1] = "m3"; /* mimic: not active */
    assert_refused(&d, RP_MODEL_UNKNOWN_DEFAULT, 1, 0);
    dn[1] = "j2"; /* a mimic of j0 now: not active either */
    assert_refused(&d, RP_MODEL_UNKNOWN_DEFAULT, 1, 0);
    const double nan_first[] = {NAN, 0.2}, inf_first[] = {-INFINITY, 0};
    dn[1] = "j0";
    d.default_values = nan_first;
    assert_refused(&d, RP_MODEL_BAD_DEFAULT, 0, 0);
    d.default_values = inf_first;
    assert_refused(&d, RP_MODEL_BAD_DEFAULT, 0, 0);
}

static void unknown_shape_pair_and_scene_links_are_refused(void **state)
{
    (void)state;
    rp_link shapes[] = {S("s0", sphere(0, 0, 0, 0.1)), S("s1", sphere(0, 0, 0, 0.1)),
                        S("s2", sphere(0, 0, 0, 0.1))};
    const char *sl[] = {"a", "base", "zz"};
    rp_joint_def j[] = {J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 3, j, 1);
    d.link_names = two_links;
    d.n_link_names = 2;
    assert_refused(&d, RP_MODEL_UNKNOWN_SHAPE_LINK, 2, 0);
    sl[2] = "a";
    const char *pairs[] = {"a", "base", "a", "zz"};
    d.allowed_pairs = pairs;
    d.n_allowed = 2;
    assert_refused(&d, RP_MODEL_UNKNOWN_PAIR_LINK, 1, 1);
    pairs[3] = "base";
    pairs[0] = "s0"; /* a shape id is no link name in a kinematic model */
    assert_refused(&d, RP_MODEL_UNKNOWN_PAIR_LINK, 0, 0);
    pairs[0] = "a";
    const char *as[] = {"a", "table", "base", "ghost", "s1", "table"};
    d.allowed_scene = as;
    d.n_allowed_scene = 3;
    assert_refused(&d, RP_MODEL_UNKNOWN_SCENE_LINK, 2, 0);
    as[4] = "zz";
    assert_refused(&d, RP_MODEL_UNKNOWN_SCENE_LINK, 2, 0);
    as[4] = "base"; /* now valid: scene ids are not checked against any scene */
    rp_store *st = rp_store_new(NULL);
    rp_model *m = put_ok(st, "m", &d);
    assert_int_equal(rp_model_allowed_scene_count(m), 3);
    const char *l, *s;
    rp_model_allowed_scene_at(m, 1, &l, &s);
    assert_string_equal(l, "base");
    assert_string_equal(s, "ghost");
    rp_store_free(st);
}

static void null_names_are_invalid_arguments_without_a_problem(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    size_t mem = rp_store_memory(st);
    rp_link shapes[] = {S("s", sphere(0, 0, 0, 0.1))};
    const char *sl[] = {"base"};
    rp_joint_def j[] = {J("j0", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 1);
    rp_model_error err;
    j[0].child = NULL;
    assert_int_equal(rp_store_model_put(st, "m", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(err.problem, RP_MODEL_OK);
    j[0].child = "a";
    sl[0] = NULL;
    assert_int_equal(rp_store_model_put(st, "m", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(err.problem, RP_MODEL_OK);
    sl[0] = "base";
    d.shape_links = NULL; /* joints but shapes without links */
    assert_int_equal(rp_store_model_put(st, "m", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_store_model_count(st), 0);
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

/* ---- memory accounting ------------------------------------------------------------------ */

static void kinematic_models_return_memory_to_baseline(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    size_t empty = rp_store_memory(st);
    planar_arm(st, "arm");
    size_t one = rp_store_memory(st);
    assert_true(one > empty);
    assert_int_equal(rp_store_model_delete(st, "arm"), RP_OK);
    assert_int_equal(rp_store_memory(st), empty);

    /* Many names (the model's string list grows), replaced back and forth. */
    enum { N = 40 };
    char names[N][16], sids[N][16];
    rp_joint_def j[N];
    rp_link shapes[N];
    const char *sl[N], *defaults[N];
    double dv[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        snprintf(sids[i], sizeof sids[i], "s%d", i);
    }
    for (int i = 0; i < N - 1; i++) {
        j[i] = J(names[i + 1], i % 3 ? RP_JOINT_REVOLUTE : RP_JOINT_FIXED, names[i], names[i + 1],
                 V(0.1, 0, 0), ZERO, AZ);
        shapes[i] = S(sids[i], sphere(0, 0, 0, 0.01));
        sl[i] = names[i];
        defaults[i] = names[3 * (i / 3) + 2];
        dv[i] = 0.1;
    }
    rp_model_def d = kdef(shapes, sl, N - 1, j, N - 1);
    d.default_names = defaults;
    d.default_values = dv;
    d.n_defaults = 12;
    const char *as[] = {"n3", "x", "n4", "y"};
    d.allowed_scene = as;
    d.n_allowed_scene = 2;
    const char *pairs[] = {"n1", "n2", "n5", "n9"};
    d.allowed_pairs = pairs;
    d.n_allowed = 2;
    put_ok(st, "big", &d);
    size_t big = rp_store_memory(st);
    planar_arm(st, "big");
    assert_int_equal(rp_store_memory(st), one);
    put_ok(st, "big", &d);
    assert_int_equal(rp_store_memory(st), big);
    planar_arm(st, "arm");
    assert_int_equal(rp_store_model_delete(st, "big"), RP_OK);
    assert_int_equal(rp_store_memory(st), one);
    assert_int_equal(rp_store_model_delete(st, "arm"), RP_OK);
    assert_int_equal(rp_store_memory(st), empty);
    rp_store_free(st);
}

/* ---- checks of joint vectors ------------------------------------------------------------ */

static void joint_checks_equal_checks_of_hand_computed_frames(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = planar_arm(st, "arm");
    rp_shape_put shapes[] = {
        P("ball", sphere(0.5, 0.5, ARM_H, 0.1)), P("bar", capsule(-1, -0.3, 0, -1, 0.3, 1, 0.05)),
        P("post", capsule(0.9, -0.4, 0, 0.9, -0.4, 1, 0.04)), P("far", sphere(5, 5, 5, 1))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 4, &sc), RP_OK);
    rp_transform base = pose(0.05, -0.02, 0.01, 1, 0, 0, 0.05);
    test_rng rng = {7};
    int collisions = 0;
    for (int c = 0; c < 300; c++) {
        double q[2] = {rng_uniform(&rng, -M_PI, M_PI), rng_uniform(&rng, -M_PI, M_PI)};
        const rp_transform *b = c % 2 ? &base : NULL;
        /* Frame 0 is l1, frame 1 is l2 (and tip, fixed to it). */
        double r1[3][3], r2[3][3];
        rz(q[0], r1);
        rz(q[0] + q[1], r2);
        rp_transform f[2];
        memcpy(f[0].r, r1, sizeof r1);
        f[0].t = V(0, 0, ARM_H);
        memcpy(f[1].r, r2, sizeof r2);
        f[1].t = V(ARM_L1 * cos(q[0]), ARM_L1 * sin(q[0]), ARM_H);
        if (b) {
            f[0] = rp_transform_compose(b, &f[0]);
            f[1] = rp_transform_compose(b, &f[1]);
        }
        for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
            rp_check_opts o = {(rp_report)rep, true, 0.05, NULL, NULL, 0};
            rp_check_result want, got;
            assert_int_equal(rp_model_check(m, sc, b, f, 2, &o, &want), RP_OK);
            assert_int_equal(rp_model_check_joints(m, sc, b, q, &o, &got), RP_OK);
            assert_same_result(&got, &want, 1e-13);
            collisions += rep == RP_REPORT_FIRST && got.collision;
            rp_check_result_free(&want);
            rp_check_result_free(&got);
        }
    }
    assert_true(collisions > 30 && collisions < 270);
    rp_store_free(st);
}

static void allowed_link_pairs_disable_every_shape_pair_of_the_two_links(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    /* Two links on different frames, 2 and 3 overlapping shapes each, and a
     * third link overlapping both. */
    static const char *const sl[] = {"a", "a", "b", "b", "b", "c"};
    rp_link shapes[] = {S("a0", sphere(0, 0, 0, 0.5)),
                        S("a1", sphere(0.1, 0, 0, 0.5)),
                        S("b0", sphere(0, 0.1, 0, 0.5)),
                        S("b1", sphere(0, 0, 0.1, 0.5)),
                        S("b2", capsule(0, 0, 0, 0.2, 0, 0, 0.5)),
                        S("c0", sphere(0, 0, 0, 0.5))};
    rp_joint_def j[] = {J("ja", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ),
                        J("jb", RP_JOINT_REVOLUTE, "base", "b", ZERO, ZERO, AX),
                        J("jc", RP_JOINT_PRISMATIC, "b", "c", ZERO, ZERO, AY)};
    rp_model_def d = kdef(shapes, sl, 6, j, 3);
    rp_model *all = put_ok(st, "all", &d);
    const char *pairs[] = {"b", "a"};
    d.allowed_pairs = pairs;
    d.n_allowed = 1;
    rp_model *ab = put_ok(st, "ab", &d);
    double q[3] = {0.1, 0.2, 0.05};
    rp_check_result r = check_q(all, NULL, NULL, q, RP_REPORT_ALL, false, 0);
    assert_int_equal(r.n_violations, 6 + 2 + 3); /* a-b, a-c, b-c */
    rp_check_result_free(&r);
    r = check_q(ab, NULL, NULL, q, RP_REPORT_ALL, false, 0);
    assert_int_equal(r.n_violations, 5);
    for (size_t v = 0; v < r.n_violations; v++) {
        assert_int_equal(r.violations[v].kind, RP_PAIR_SELF);
        assert_true(r.violations[v].other == 5); /* only pairs with c remain */
    }
    rp_check_result_free(&r);
    rp_store_free(st);
}

/* A robot base resting on a table (0.01 into it) and an arm passing 0.05
 * over a box; base and arm are allowed to touch. */
static rp_model *table_robot(rp_store *st, const char *name, const char *const *as, size_t nas)
{
    static const char *const sl[] = {"base", "arm"};
    rp_link shapes[] = {S("base#0", sphere(0, 0, 0.29, 0.3)),
                        S("arm#0", capsule(0, 0, 0, 1, 0, 0, 0.05))};
    rp_joint_def j[] = {J("j1", RP_JOINT_REVOLUTE, "base", "arm", V(0, 0, 0.6), ZERO, AZ)};
    static const char *const pairs[] = {"base", "arm"};
    rp_model_def d = kdef(shapes, sl, 2, j, 1);
    d.allowed_pairs = pairs;
    d.n_allowed = 1;
    d.safety_margin = 0.06;
    d.allowed_scene = as;
    d.n_allowed_scene = nas;
    return put_ok(st, name, &d);
}

static void allowed_scene_pairs_remove_exactly_that_pair_in_every_mode(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put shapes[] = {P("lamp", sphere(0, 0, 2, 0.1)), P("box", sphere(1, 0, 0.3, 0.2))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 2, &sc), RP_OK);
    static const char *const as_base[] = {"base", "table"};
    static const char *const as_ghost[] = {"base", "ghost", "arm", "ghost"};
    static const char *const as_arm[] = {"arm", "table"};
    rp_model *plain = table_robot(st, "plain", NULL, 0);
    rp_model *allowed = table_robot(st, "allowed", as_base, 1);
    rp_model *ghost = table_robot(st, "ghost", as_ghost, 2);
    rp_model *arm_only = table_robot(st, "arm_only", as_arm, 1);
    /* The table arrives after the models: pairs are resolved by id. */
    rp_shape_put table = {"table", capsule(-2, 0, -0.05, 2, 0, -0.05, 0.05)};
    assert_int_equal(rp_scene_put(sc, &table, 1, NULL, NULL), RP_OK);
    size_t t = rp_scene_find(sc, "table"), box = rp_scene_find(sc, "box");
    double q = 0;

    rp_model *with_table[] = {plain, ghost, arm_only};
    for (int k = 0; k < 3; k++) {
        rp_check_result r = check_q(with_table[k], sc, NULL, &q, RP_REPORT_ALL, false, 0);
        assert_true(r.collision);
        assert_pair(&r.closest, 0, RP_PAIR_SCENE, t);
        assert_near(r.closest.distance, -0.01, 1e-15);
        assert_int_equal(r.n_violations, 2);
        assert_pair(&r.violations[1], 1, RP_PAIR_SCENE, box);
        assert_near(r.violations[1].distance, 0.05, 1e-15);
        rp_check_result_free(&r);
        /* FIRST: one of the two (whichever the walk meets first). */
        r = check_q(with_table[k], sc, NULL, &q, RP_REPORT_FIRST, false, 0);
        assert_int_equal(r.n_violations, 1);
        const rp_check_pair *v = &r.violations[0];
        assert_int_equal(v->kind, RP_PAIR_SCENE);
        assert_true((v->link == 0 && v->other == t) || (v->link == 1 && v->other == box));
        rp_check_result_free(&r);
    }
    rp_check_result r = check_q(allowed, sc, NULL, &q, RP_REPORT_ALL, false, 0);
    assert_true(r.collision);
    assert_pair(&r.closest, 1, RP_PAIR_SCENE, box);
    assert_near(r.closest.distance, 0.05, 1e-15);
    assert_int_equal(r.n_violations, 1);
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, box);
    rp_check_result_free(&r);
    r = check_q(allowed, sc, NULL, &q, RP_REPORT_CLOSEST, false, 0);
    assert_pair(&r.closest, 1, RP_PAIR_SCENE, box);
    rp_check_result_free(&r);
    r = check_q(allowed, sc, NULL, &q, RP_REPORT_FIRST, false, 0);
    assert_true(r.collision);
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, box);
    rp_check_result_free(&r);
    /* Below the box's distance nothing is left at all. */
    for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
        r = check_q(allowed, sc, NULL, &q, (rp_report)rep, true, 0.04);
        assert_false(r.collision);
        assert_int_equal(r.n_violations, 0);
        rp_check_result_free(&r);
    }
    /* Every other pair of the base is still there: with a big margin ALL
     * lists base-lamp and base-box but never base-table. */
    r = check_q(allowed, sc, NULL, &q, RP_REPORT_ALL, true, 100);
    assert_int_equal(r.n_violations, 5); /* base: lamp, box; arm: lamp, box, table */
    for (size_t v = 0; v < r.n_violations; v++)
        assert_false(r.violations[v].link == 0 && r.violations[v].other == t);
    rp_check_result_free(&r);
    rp_store_free(st);
}

/* ---- the independent reference on random trees ------------------------------------------ */

typedef long double ld;
typedef struct mat4 {
    ld m[4][4];
} mat4;

static mat4 m4_identity(void)
{
    mat4 a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < 4; i++)
        a.m[i][i] = 1;
    return a;
}

static mat4 m4_mul(const mat4 *a, const mat4 *b)
{
    mat4 c;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            ld s = 0;
            for (int k = 0; k < 4; k++)
                s += a->m[i][k] * b->m[k][j];
            c.m[i][j] = s;
        }
    return c;
}

static mat4 m4_translate(ld x, ld y, ld z)
{
    mat4 a = m4_identity();
    a.m[0][3] = x;
    a.m[1][3] = y;
    a.m[2][3] = z;
    return a;
}

/* Elementary rotation about coordinate axis k (0 x, 1 y, 2 z). */
static mat4 m4_rot(int k, ld angle)
{
    mat4 a = m4_identity();
    ld c = cosl(angle), s = sinl(angle);
    int u = (k + 1) % 3, w = (k + 2) % 3;
    a.m[u][u] = c;
    a.m[u][w] = -s;
    a.m[w][u] = s;
    a.m[w][w] = c;
    return a;
}

/* Rodrigues: I + sin K + (1 - cos) K^2 for the unit axis n. */
static mat4 m4_axis_angle(const ld n[3], ld angle)
{
    ld K[3][3] = {{0, -n[2], n[1]}, {n[2], 0, -n[0]}, {-n[1], n[0], 0}};
    ld s = sinl(angle), c1 = 1 - cosl(angle);
    mat4 a = m4_identity();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            ld k2 = 0;
            for (int k = 0; k < 3; k++)
                k2 += K[i][k] * K[k][j];
            a.m[i][j] += s * K[i][j] + c1 * k2;
        }
    return a;
}

static mat4 m4_from(const rp_transform *t)
{
    mat4 a = m4_identity();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a.m[i][j] = t->r[i][j];
    a.m[0][3] = t->t.x;
    a.m[1][3] = t->t.y;
    a.m[2][3] = t->t.z;
    return a;
}

static rp_transform m4_to(const mat4 *a)
{
    rp_transform t;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t.r[i][j] = (double)a->m[i][j];
    t.t = V((double)a->m[0][3], (double)a->m[1][3], (double)a->m[2][3]);
    return t;
}

/* The joint origin, the long way: T(xyz) Rz(yaw) Ry(pitch) Rx(roll). */
static mat4 m4_origin(const rp_joint_def *j)
{
    mat4 a = m4_translate(j->xyz.x, j->xyz.y, j->xyz.z);
    mat4 r = m4_rot(2, j->rpy.z);
    a = m4_mul(&a, &r);
    r = m4_rot(1, j->rpy.y);
    a = m4_mul(&a, &r);
    r = m4_rot(0, j->rpy.x);
    return m4_mul(&a, &r);
}

#define MAXL 14
#define MAXS (2 * MAXL)

/* A random tree: link k > 0 is made by joint k (creation order, parents
 * first); definitions come in a shuffled order. */
typedef struct rtree {
    int n;
    char lname[MAXL][16], jname[MAXL][16];
    int parent[MAXL];
    rp_joint_def jd[MAXL]; /* by creation index, jd[0] unused */
    int mimic[MAXL];       /* creation index of the source, or -1 */
    int dof_of[MAXL];      /* dof index of an active joint, else -1 */
    int dof;
    rp_joint_def joints[MAXL]; /* in definition order */
    const char *link_names[MAXL];
    bool give_names;
    int n_shapes;
    char sid[MAXS][16];
    rp_link shapes[MAXS];
    const char *shape_links[MAXS];
    int shape_owner[MAXS];
    const char *pairs[8];
    int n_pairs;
    const char *as[10];
    int n_as;
} rtree;

static void shuffle(test_rng *r, int *v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int k = (int)(rng_next(r) % (uint64_t)(i + 1));
        int t = v[i];
        v[i] = v[k];
        v[k] = t;
    }
}

static rp_vec3 random_axis(test_rng *r)
{
    switch (rng_next(r) % 5) {
    case 0:
        return AX;
    case 1:
        return AY;
    case 2:
        return AZ;
    case 3: { /* a negative coordinate axis, scaled */
        rp_vec3 a = ZERO;
        double s = -rng_uniform(r, 0.01, 100);
        int k = (int)(rng_next(r) % 3);
        if (k == 0)
            a.x = s;
        else if (k == 1)
            a.y = s;
        else
            a.z = s;
        return a;
    }
    default: {
        double s = pow(10, rng_uniform(r, -3, 3));
        return V(s * rng_uniform(r, -1, 1), s * rng_uniform(r, -1, 1), s * rng_uniform(r, -1, 1));
    }
    }
}

static void random_tree(test_rng *r, rtree *t, int n_scene, bool extras)
{
    memset(t, 0, sizeof *t);
    t->n = 2 + (int)(rng_next(r) % (MAXL - 1));
    int perm[MAXL];
    for (int k = 0; k < t->n; k++)
        perm[k] = k;
    shuffle(r, perm, t->n);
    for (int k = 0; k < t->n; k++) {
        snprintf(t->lname[k], sizeof t->lname[k], "L%d", perm[k]);
        snprintf(t->jname[k], sizeof t->jname[k], "J%d", perm[k]);
        t->mimic[k] = -1;
        t->parent[k] = k ? (int)(rng_next(r) % (uint64_t)k) : -1;
    }
    for (int k = 1; k < t->n; k++) {
        static const rp_joint_type types[] = {RP_JOINT_FIXED, RP_JOINT_REVOLUTE, RP_JOINT_REVOLUTE,
                                              RP_JOINT_CONTINUOUS, RP_JOINT_PRISMATIC};
        rp_joint_type type = types[rng_next(r) % 5];
        rp_vec3 rpy = V(rng_uniform(r, -M_PI, M_PI), rng_uniform(r, -M_PI, M_PI),
                        rng_uniform(r, -M_PI, M_PI));
        if (rng_next(r) % 6 == 0)
            rpy.y = rng_next(r) % 2 ? M_PI / 2 : -M_PI / 2; /* gimbal lock */
        if (rng_next(r) % 6 == 0)
            rpy = ZERO;
        rp_joint_def j =
            J(t->jname[k], type, t->lname[t->parent[k]], t->lname[k],
              V(rng_uniform(r, -0.6, 0.6), rng_uniform(r, -0.6, 0.6), rng_uniform(r, -0.6, 0.6)),
              rpy, type == RP_JOINT_FIXED && rng_next(r) % 2 ? ZERO : random_axis(r));
        if (rng_next(r) % 2)
            j = limited(j, -1, 1);
        if (type != RP_JOINT_FIXED && rng_next(r) % 4 == 0) {
            int cand[MAXL], nc = 0;
            for (int i = 1; i < k; i++)
                if (t->jd[i].type != RP_JOINT_FIXED)
                    cand[nc++] = i;
            if (nc) {
                int src = cand[rng_next(r) % (uint64_t)nc];
                t->mimic[k] = src;
                j = mimic_of(j, t->jname[src], rng_uniform(r, -2, 2), rng_uniform(r, -1, 1));
            }
        }
        t->jd[k] = j;
    }
    /* Definition order: shuffled. */
    int order[MAXL];
    for (int k = 0; k < t->n - 1; k++)
        order[k] = k + 1;
    shuffle(r, order, t->n - 1);
    for (int k = 0; k < t->n; k++)
        t->dof_of[k] = -1;
    for (int i = 0; i < t->n - 1; i++) {
        int k = order[i];
        t->joints[i] = t->jd[k];
        if (t->jd[k].type != RP_JOINT_FIXED && t->mimic[k] < 0)
            t->dof_of[k] = t->dof++;
    }
    t->give_names = rng_next(r) % 2;
    int lo[MAXL];
    for (int k = 0; k < t->n; k++)
        lo[k] = k;
    shuffle(r, lo, t->n);
    for (int k = 0; k < t->n; k++)
        t->link_names[k] = t->lname[lo[k]];
    for (int k = 0; k < t->n; k++) {
        int ns = (int)(rng_next(r) % 3);
        for (int s = 0; s < ns; s++) {
            int i = t->n_shapes++;
            snprintf(t->sid[i], sizeof t->sid[i], "s%d", i);
            rp_vec3 a =
                V(rng_uniform(r, -0.3, 0.3), rng_uniform(r, -0.3, 0.3), rng_uniform(r, -0.3, 0.3));
            double rad = rng_uniform(r, 0.02, 0.15);
            rp_shape sh = rng_next(r) % 2 ? sphere(a.x, a.y, a.z, rad)
                                          : capsule(a.x, a.y, a.z, a.x + rng_uniform(r, -0.4, 0.4),
                                                    a.y + rng_uniform(r, -0.4, 0.4),
                                                    a.z + rng_uniform(r, -0.4, 0.4), rad);
            t->shapes[i] = S(t->sid[i], sh);
            t->shape_links[i] = t->lname[k];
            t->shape_owner[i] = k;
        }
    }
    if (!extras)
        return;
    t->n_pairs = (int)(rng_next(r) % 4);
    for (int p = 0; p < 2 * t->n_pairs; p++)
        t->pairs[p] = t->lname[rng_next(r) % (uint64_t)t->n];
    t->n_as = (int)(rng_next(r) % 5);
    static char scene_ids[400][16];
    for (int p = 0; p < t->n_as; p++) {
        int id = (int)(rng_next(r) % (uint64_t)(n_scene + 20)); /* some absent */
        snprintf(scene_ids[id], sizeof scene_ids[id], "o%03d", id);
        t->as[2 * p] = t->lname[rng_next(r) % (uint64_t)t->n];
        t->as[2 * p + 1] = scene_ids[id];
    }
}

static rp_model_def rtree_def(const rtree *t)
{
    rp_model_def d =
        kdef(t->shapes, t->shape_links, (size_t)t->n_shapes, t->joints, (size_t)t->n - 1);
    if (t->give_names) {
        d.link_names = t->link_names;
        d.n_link_names = (size_t)t->n;
    } else if (t->n_shapes == 0) {
        d.shape_links = NULL;
    }
    d.allowed_pairs = t->pairs;
    d.n_allowed = (size_t)t->n_pairs;
    d.allowed_scene = t->as;
    d.n_allowed_scene = (size_t)t->n_as;
    return d;
}

/* Joint values in long double, creation order (mimics follow sources). */
static void rtree_values(const rtree *t, const double *q, ld *v)
{
    v[0] = 0;
    for (int k = 1; k < t->n; k++) {
        if (t->jd[k].type == RP_JOINT_FIXED)
            v[k] = 0;
        else if (t->mimic[k] >= 0)
            v[k] = (ld)t->jd[k].multiplier * v[t->mimic[k]] + (ld)t->jd[k].offset;
        else
            v[k] = q[t->dof_of[k]];
    }
}

/* Reference link poses, creation order. */
static void rtree_fk(const rtree *t, const rp_transform *base, const double *q, mat4 *pose_out)
{
    ld v[MAXL];
    rtree_values(t, q, v);
    rp_transform id = rp_transform_identity();
    pose_out[0] = m4_from(base ? base : &id);
    for (int k = 1; k < t->n; k++) {
        const rp_joint_def *j = &t->jd[k];
        mat4 o = m4_origin(j);
        mat4 p = m4_mul(&pose_out[t->parent[k]], &o);
        if (j->type != RP_JOINT_FIXED) {
            ld ax[3] = {j->axis.x, j->axis.y, j->axis.z};
            ld n = sqrtl(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
            for (int i = 0; i < 3; i++)
                ax[i] /= n;
            mat4 mo = j->type == RP_JOINT_PRISMATIC
                          ? m4_translate(ax[0] * v[k], ax[1] * v[k], ax[2] * v[k])
                          : m4_axis_angle(ax, v[k]);
            p = m4_mul(&p, &mo);
        }
        pose_out[k] = p;
    }
}

static void random_q(test_rng *r, const rtree *t, double *q)
{
    for (int k = 1; k < t->n; k++)
        if (t->dof_of[k] >= 0)
            q[t->dof_of[k]] =
                t->jd[k].type == RP_JOINT_PRISMATIC ? rng_uniform(r, -1, 1) : rng_uniform(r, -4, 4);
}

static void fk_matches_long_double_reference_on_random_trees(void **state)
{
    (void)state;
    test_rng rng = {2024};
    rp_store *st = rp_store_new(NULL);
    int mimics = 0, prismatic = 0, fixed = 0, general_axis = 0;
    for (int tree = 0; tree < 300; tree++) {
        rtree t;
        random_tree(&rng, &t, 0, false);
        rp_model_def d = rtree_def(&t);
        rp_model *m = put_ok(st, "r", &d);
        assert_int_equal(rp_model_dof(m), t.dof);
        assert_int_equal(rp_model_tree_link_count(m), t.n);
        assert_int_equal(rp_model_root(m), rp_model_tree_link_find(m, t.lname[0]));
        /* Active joints in definition order. */
        for (int i = 0, dd = 0; i < t.n - 1; i++)
            if (t.joints[i].type != RP_JOINT_FIXED && !t.joints[i].mimic) {
                assert_string_equal(rp_model_dof_name(m, (size_t)dd), t.joints[i].name);
                assert_int_equal(rp_model_dof_find(m, t.joints[i].name), dd);
                dd++;
            }
        for (int k = 1; k < t.n; k++) {
            mimics += t.mimic[k] >= 0;
            prismatic += t.jd[k].type == RP_JOINT_PRISMATIC;
            fixed += t.jd[k].type == RP_JOINT_FIXED;
            general_axis +=
                t.jd[k].type != RP_JOINT_FIXED &&
                !(fabs(t.jd[k].axis.x) + fabs(t.jd[k].axis.y) + fabs(t.jd[k].axis.z) == 1.0);
        }
        for (int c = 0; c < 10; c++) {
            double q[MAXL];
            random_q(&rng, &t, q);
            rp_transform base = pose(rng_uniform(&rng, -3, 3), rng_uniform(&rng, -3, 3),
                                     rng_uniform(&rng, -3, 3), rng_uniform(&rng, -1, 1),
                                     rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1), 0.5);
            const rp_transform *b = c % 3 ? &base : NULL;
            mat4 want[MAXL];
            rtree_fk(&t, b, q, want);
            rp_transform got[MAXL];
            assert_int_equal(rp_model_fk(m, b, q, got), RP_OK);
            /* The same bits at every dispatch level (the vector sin/cos
             * lanes and the scalar one are one SLEEF family). */
            int was = rp_simd_level_();
            for (int lv = RP_SIMD_PORTABLE; lv <= RP_SIMD_AVX512; lv++) {
                rp_simd_force_level_(lv);
                rp_transform again[MAXL];
                assert_int_equal(rp_model_fk(m, b, q, again), RP_OK);
                for (int k = 0; k < t.n; k++)
                    if (memcmp(&again[k], &got[k], sizeof got[k]))
                        fail_msg("tree %d link %d: level %s differs", tree, k,
                                 rp_simd_level_name_(lv));
            }
            rp_simd_force_level_(was);
            /* Scale: the longest chain could reach this far. */
            double scale = 1 + (b ? fabs(b->t.x) + fabs(b->t.y) + fabs(b->t.z) : 0);
            for (int k = 1; k < t.n; k++)
                scale += fabs(t.jd[k].xyz.x) + fabs(t.jd[k].xyz.y) + fabs(t.jd[k].xyz.z) +
                         (t.jd[k].type == RP_JOINT_PRISMATIC ? 6 : 0);
            for (int k = 0; k < t.n; k++) {
                const rp_transform *g = link_pose(m, got, t.lname[k]);
                for (int i = 0; i < 3; i++) {
                    for (int jj = 0; jj < 3; jj++)
                        if (!(fabsl((ld)g->r[i][jj] - want[k].m[i][jj]) <= 1e-12L))
                            fail_msg("tree %d link %s r[%d][%d] = %.17g, want %.17Lg", tree,
                                     t.lname[k], i, jj, g->r[i][jj], want[k].m[i][jj]);
                }
                ld tv[3] = {g->t.x, g->t.y, g->t.z};
                for (int i = 0; i < 3; i++)
                    if (!(fabsl(tv[i] - want[k].m[i][3]) <= 1e-12L * scale))
                        fail_msg("tree %d link %s t[%d] = %.17g, want %.17Lg", tree, t.lname[k], i,
                                 (double)tv[i], want[k].m[i][3]);
            }
        }
    }
    /* The generator did make what it is meant to test. */
    assert_true(mimics > 50 && prismatic > 100 && fixed > 100 && general_axis > 100);
    rp_store_free(st);
}

/* rp_kin_frames_n_ (a batch's forward kinematics: four configurations per
 * AVX2 lane set, the rest one by one) gives rp_kin_frames_'s bits for every
 * configuration, at every level, for batches of 1 to 11 (lane groups and
 * tails), on random trees with prismatic, mimic and general-axis joints. */
static void batched_frames_equal_single_frames(void **state)
{
    (void)state;
    test_rng rng = {77};
    rp_store *st = rp_store_new(NULL);
    long compared = 0;
    int was = rp_simd_level_();
    for (int tree = 0; tree < 120; tree++) {
        rtree t;
        random_tree(&rng, &t, 0, false);
        rp_model_def d = rtree_def(&t);
        rp_model *m = put_ok(st, "r", &d);
        size_t nf = rp_model_frame_count(m), dof = rp_model_dof(m);
        enum { N = 11 };
        double q[N * MAXL];
        for (int c = 0; c < N; c++)
            random_q(&rng, &t, q + c * dof);
        rp_transform base =
            pose(rng_uniform(&rng, -3, 3), rng_uniform(&rng, -3, 3), rng_uniform(&rng, -3, 3),
                 rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1), 0.5);
        const rp_transform *b = tree % 2 ? &base : NULL;
        rp_transform want[N * MAXL], got[N * MAXL];
        rp_simd_force_level_(RP_SIMD_PORTABLE);
        for (int c = 0; c < N; c++)
            rp_kin_frames_(m, b, q + c * dof, want + c * nf);
        for (int lv = RP_SIMD_PORTABLE; lv <= RP_SIMD_AVX512; lv++) {
            rp_simd_force_level_(lv);
            for (size_t n = 1; n <= N; n++) {
                memset(got, 0xa5, sizeof got);
                rp_kin_frames_n_(m, b, q, n, got);
                for (size_t k = 0; k < n * nf; k++, compared++)
                    if (memcmp(&got[k], &want[k], sizeof got[k]))
                        fail_msg("tree %d level %s batch %zu: frame %zu of configuration %zu "
                                 "differs",
                                 tree, rp_simd_level_name_(lv), n, k % nf, k / nf);
            }
        }
    }
    rp_simd_force_level_(was);
    printf("%ld batched frames equal to single ones\n", compared);
    rp_store_free(st);
}

/* rp_model_check_joints_batch: every result equal, bit for bit, to what
 * rp_model_check_joints gives for that vector alone (FIRST's pair
 * included: configurations sharing a walk meet their pairs in the order
 * their own walks would), with SIMD off and on, in scenes of 5 (a scan),
 * 200 and 2000 shapes, for batches of 1 to 37 vectors; a non-finite vector
 * stops the batch there with the error of a lone check. */
static void assert_identical(const rp_check_result *a, const rp_check_result *b)
{
    assert_int_equal(a->collision, b->collision);
    assert_int_equal(a->has_min, b->has_min);
    if (a->has_min) {
        assert_pair(&a->closest, b->closest.link, b->closest.kind, b->closest.other);
        assert_true(same_bits(a->closest.distance, b->closest.distance));
    }
    assert_int_equal(a->n_violations, b->n_violations);
    for (size_t i = 0; i < a->n_violations; i++) {
        assert_pair(&a->violations[i], b->violations[i].link, b->violations[i].kind,
                    b->violations[i].other);
        assert_true(same_bits(a->violations[i].distance, b->violations[i].distance));
    }
}

static void batch_checks_equal_lone_checks(void **state)
{
    (void)state;
    static const int sizes[] = {5, 200, 2000};
    long checks = 0, collisions = 0, stopped = 0, nonfinite_other = 0;
    for (int simd = 0; simd <= RP_SIMD_AVX512; simd++) {
        /* portable, AVX2, AVX-512 (capped by the CPU: a level it lacks
         * runs the best one it has again) */
        rp_simd_force_level_(simd);
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            test_rng rng = {1234u + (uint64_t)z};
            rp_store *st = rp_store_new(NULL);
            int ns = sizes[z];
            rp_shape_put *sp = calloc((size_t)ns, sizeof *sp);
            char(*ids)[16] = calloc((size_t)ns, sizeof *ids);
            double reach = 2.5 * cbrt(ns / 200.0);
            for (int i = 0; i < ns; i++) {
                snprintf(ids[i], sizeof ids[i], "o%04d", i);
                double x = rng_uniform(&rng, -reach, reach), y = rng_uniform(&rng, -reach, reach),
                       zz = rng_uniform(&rng, -reach, reach), rad = rng_uniform(&rng, 0.02, 0.2);
                sp[i] = P(ids[i], i % 2 ? sphere(x, y, zz, rad)
                                        : capsule(x, y, zz, x + rng_uniform(&rng, -0.5, 0.5),
                                                  y + rng_uniform(&rng, -0.5, 0.5),
                                                  zz + rng_uniform(&rng, -0.5, 0.5), rad));
            }
            rp_scene *sc;
            assert_int_equal(rp_store_create(st, "sc", sp, (size_t)ns, &sc), RP_OK);
            for (int tree = 0; tree < 25; tree++) {
                rtree t;
                random_tree(&rng, &t, ns < 200 ? ns : 200, true);
                if (t.n_shapes == 0)
                    continue;
                rp_model_def d = rtree_def(&t);
                rp_model *m = put_ok(st, "kin", &d);
                size_t dof = rp_model_dof(m), n = 1 + (size_t)rng_uniform(&rng, 0, 37);
                double *q = calloc(n * (dof ? dof : 1), sizeof *q);
                for (size_t k = 0; k < n; k++) {
                    double qk[MAXL];
                    random_q(&rng, &t, qk);
                    memcpy(q + k * dof, qk, dof * sizeof *q);
                }
                if (dof && tree % 5 == 4) { /* a NaN somewhere in the batch */
                    size_t k = (size_t)rng_uniform(&rng, 0, (double)n);
                    q[k * dof + (size_t)rng_uniform(&rng, 0, (double)dof)] = NAN;
                }
                if (dof && tree % 5 == 2) {
                    /* Huge joint values (finite) in a few configurations:
                     * shapes beyond the broadphase's range, or beyond the
                     * double range, which a lone check refuses. */
                    for (int h = 0; h < 3; h++) {
                        size_t k = (size_t)rng_uniform(&rng, 0, (double)n);
                        for (size_t i = 0; i < dof; i++)
                            if (rng_next(&rng) % 2)
                                q[k * dof + i] = (rng_next(&rng) % 2 ? 1 : -1) * 1.5e308;
                    }
                }
                rp_transform base = pose(rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1),
                                         rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1),
                                         rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1), 1);
                const rp_transform *b = tree % 2 ? &base : NULL;
                double margin = tree % 7 == 3 ? -0.02 : rng_uniform(&rng, 0, 0.1);
                for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
                    rp_check_opts o = {(rp_report)rep, true, margin, NULL, NULL, 0};
                    rp_check_result *got = calloc(n, sizeof *got);
                    size_t failed = 12345;
                    rp_status st_b = rp_model_check_joints_batch(m, sc, b, q, n, &o, got, &failed);
                    /* The batch stops where a lone check first fails, with
                     * its error; every result before is the lone one. */
                    rp_check_result *want_all = calloc(n, sizeof *want_all);
                    rp_status want_st = RP_OK;
                    size_t upto = n;
                    for (size_t k = 0; k < n && upto == n; k++)
                        if ((want_st = rp_model_check_joints(m, sc, b, q + k * dof, &o,
                                                             &want_all[k])) != RP_OK)
                            upto = k;
                    assert_int_equal(st_b, want_st);
                    if (upto < n) {
                        assert_int_equal(failed, upto);
                        assert_int_equal(got[upto].closest.link, want_all[upto].closest.link);
                        stopped++;
                        nonfinite_other += !isnan(q[upto * dof]) && want_st == RP_ERR_NONFINITE;
                    }
                    for (size_t k = 0; k < upto; k++) {
                        rp_check_result want = want_all[k];
                        assert_identical(&got[k], &want);
                        collisions += want.collision;
                        checks++;
                        rp_check_result_free(&want);
                        rp_check_result_free(&got[k]);
                    }
                    free(got);
                    free(want_all);
                }
                free(q);
            }
            free(sp);
            free(ids);
            rp_store_free(st);
        }
    }
    rp_simd_force_(1);
    printf("%ld batch results equal to lone checks (%ld in collision), %ld batches stopped at "
           "a NaN or a shape beyond the double range (%ld probably the latter)\n",
           checks, collisions, stopped, nonfinite_other);
    assert_true(collisions > checks / 10 && collisions < checks * 9 / 10);
    assert_true(stopped > 0);
}

/* The random tree as a frame-indexed model: one frame per rigid body (the
 * root's body on the base), shapes moved into their body's frame by the
 * fixed joints' origins (long double), allowed pairs expanded to every
 * shape pair of the two links, allowed scene pairs to every shape of the
 * link. */
typedef struct frame_twin {
    int body[MAXL]; /* creation index of the body (nearest moving joint's child, or 0) */
    mat4 off[MAXL]; /* link pose in its body's frame */
    rp_link links[MAXS];
    const char *pairs[2 * 8 * MAXS * MAXS];
    const char *as[2 * 10 * MAXS];
    int n_frames;
} frame_twin;

static int frame_of_body(int body)
{
    return body == 0 ? -1 : body - 1;
}

static rp_model *frame_twin_put(rp_store *st, const rtree *t, frame_twin *w)
{
    for (int k = 0; k < t->n; k++) {
        if (k == 0 || t->jd[k].type != RP_JOINT_FIXED) {
            w->body[k] = k;
            w->off[k] = m4_identity();
        } else {
            w->body[k] = w->body[t->parent[k]];
            mat4 o = m4_origin(&t->jd[k]);
            w->off[k] = m4_mul(&w->off[t->parent[k]], &o);
        }
    }
    w->n_frames = 0;
    for (int s = 0; s < t->n_shapes; s++) {
        int k = t->shape_owner[s];
        rp_transform off = m4_to(&w->off[k]);
        w->links[s].id = t->sid[s];
        w->links[s].frame = frame_of_body(w->body[k]);
        w->links[s].shape = rp_transform_shape(&off, &t->shapes[s].shape);
        if (w->links[s].frame + 1 > w->n_frames)
            w->n_frames = w->links[s].frame + 1;
    }
    size_t np = 0;
    for (int p = 0; p < t->n_pairs; p++)
        for (int a = 0; a < t->n_shapes; a++)
            for (int b = 0; b < t->n_shapes; b++)
                if (strcmp(t->shape_links[a], t->pairs[2 * p]) == 0 &&
                    strcmp(t->shape_links[b], t->pairs[2 * p + 1]) == 0) {
                    w->pairs[2 * np] = t->sid[a];
                    w->pairs[2 * np + 1] = t->sid[b];
                    np++;
                }
    size_t na = 0;
    for (int p = 0; p < t->n_as; p++)
        for (int a = 0; a < t->n_shapes; a++)
            if (strcmp(t->shape_links[a], t->as[2 * p]) == 0) {
                w->as[2 * na] = t->sid[a];
                w->as[2 * na + 1] = t->as[2 * p + 1];
                na++;
            }
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = w->links;
    d.n_links = (size_t)t->n_shapes;
    d.allowed_pairs = w->pairs;
    d.n_allowed = np;
    d.allowed_scene = w->as;
    d.n_allowed_scene = na;
    d.self_collision = true;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "twin", &d, &m, NULL), RP_OK);
    assert_false(rp_model_is_kinematic(m));
    assert_int_equal(rp_model_frame_count(m), w->n_frames);
    return m;
}

static void kinematic_and_frame_indexed_twins_check_alike(void **state)
{
    (void)state;
    test_rng rng = {99};
    rp_store *st = rp_store_new(NULL);
    enum { NSCENE = 200 };
    rp_shape_put sp[NSCENE];
    char ids[NSCENE][16];
    for (int i = 0; i < NSCENE; i++) {
        snprintf(ids[i], sizeof ids[i], "o%03d", i);
        double x = rng_uniform(&rng, -2.5, 2.5), y = rng_uniform(&rng, -2.5, 2.5),
               z = rng_uniform(&rng, -2.5, 2.5), rad = rng_uniform(&rng, 0.02, 0.2);
        sp[i] = P(ids[i], i % 2 ? sphere(x, y, z, rad)
                                : capsule(x, y, z, x + rng_uniform(&rng, -0.5, 0.5),
                                          y + rng_uniform(&rng, -0.5, 0.5),
                                          z + rng_uniform(&rng, -0.5, 0.5), rad));
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", sp, NSCENE, &sc), RP_OK);
    assert_int_equal(rp_scene_prepare(sc), RP_OK);
    assert_true(rp_scene_index_bytes(sc) > 0); /* the tree is in use */
    long collisions = 0, clear = 0, self_hits = 0, checks = 0;
    for (int tree = 0; tree < 60; tree++) {
        rtree t;
        random_tree(&rng, &t, NSCENE, true);
        if (t.n_shapes == 0)
            continue;
        rp_model_def d = rtree_def(&t);
        rp_model *m = put_ok(st, "kin", &d);
        static frame_twin w;
        rp_model *f = frame_twin_put(st, &t, &w);
        for (int c = 0; c < 15; c++) {
            double q[MAXL];
            random_q(&rng, &t, q);
            rp_transform base = pose(rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1),
                                     rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1),
                                     rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1), 1);
            const rp_transform *b = c % 2 ? &base : NULL;
            mat4 ref[MAXL];
            rtree_fk(&t, b, q, ref);
            rp_transform frames[MAXL];
            for (int i = 0; i < w.n_frames; i++)
                frames[i] = m4_to(&ref[i + 1]);
            double margin = rng_uniform(&rng, 0, 0.1);
            for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
                rp_check_opts o = {(rp_report)rep, true, margin, NULL, NULL, 0};
                rp_check_result a, bres;
                assert_int_equal(rp_model_check_joints(m, sc, b, q, &o, &a), RP_OK);
                assert_int_equal(rp_model_check(f, sc, b, frames, (size_t)w.n_frames, &o, &bres),
                                 RP_OK);
                assert_same_result(&a, &bres, 1e-9);
                if (rep == RP_REPORT_ALL) {
                    checks++;
                    collisions += a.collision;
                    clear += !a.collision;
                    for (size_t v = 0; v < a.n_violations; v++)
                        self_hits += a.violations[v].kind == RP_PAIR_SELF;
                }
                rp_check_result_free(&a);
                rp_check_result_free(&bres);
            }
        }
    }
    assert_true(collisions > checks / 10 && clear > checks / 10);
    assert_true(self_hits > 50);
    rp_store_free(st);
}

/* ---- rp_model_extend ----------------------------------------------------------------------- */

/* base -(j1: z at height 0.5)-> upper -(j2: z)-> fore -(fixed)-> tool -(j3: x)-> finger;
 * allowed: base-upper, upper-fore, tool-finger. */
static rp_model *tool_arm(rp_store *st, const char *name, const char *const *as, size_t nas)
{
    static const char *const sl[] = {"base", "upper", "fore", "tool", "finger"};
    rp_link shapes[] = {
        S("base#0", sphere(0, 0, 0, 0.2)), S("upper#0", capsule(0, 0, 0, 1, 0, 0, 0.05)),
        S("fore#0", capsule(0, 0, 0, 1, 0, 0, 0.05)), S("tool#0", sphere(0, 0, 0, 0.05)),
        S("finger#0", capsule(0, 0, 0, 0.2, 0, 0, 0.02))};
    rp_joint_def j[] = {J("j1", RP_JOINT_REVOLUTE, "base", "upper", V(0, 0, 0.5), ZERO, AZ),
                        J("j2", RP_JOINT_REVOLUTE, "upper", "fore", V(1, 0, 0), ZERO, AZ),
                        J("ftool", RP_JOINT_FIXED, "fore", "tool", V(1, 0, 0), ZERO, ZERO),
                        J("j3", RP_JOINT_REVOLUTE, "tool", "finger", V(0.1, 0, 0), ZERO, AX)};
    static const char *const pairs[] = {"base", "upper", "upper", "fore", "tool", "finger"};
    rp_model_def d = kdef(shapes, sl, 5, j, 4);
    d.allowed_pairs = pairs;
    d.n_allowed = 3;
    d.allowed_scene = as;
    d.n_allowed_scene = nas;
    return put_ok(st, name, &d);
}

static rp_attached A(const char *id, const char *link, rp_shape shape, const char *const *touch,
                     size_t n_touch)
{
    rp_attached a = {id, link, shape, touch, n_touch};
    return a;
}

static void attached_shape_moves_with_its_link(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = tool_arm(st, "arm", NULL, 0);
    rp_shape_put probe = {"probe", sphere(9, 9, 9, 0.05)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &probe, 1, &sc), RP_OK);
    rp_attached at = A("part", "tool", sphere(0.3, 0, 0, 0.05), NULL, 0);
    rp_model *e = NULL;
    rp_extend_error err;
    assert_int_equal(rp_model_extend(m, &at, 1, NULL, 0, &e, &err), RP_OK);
    assert_int_equal(err.problem, RP_EXTEND_OK);
    assert_int_equal(rp_model_link_count(e), 6);
    assert_int_equal(rp_model_base_link_count(e), 5);
    assert_int_equal(rp_model_base_link_count(m), 5);
    assert_string_equal(rp_model_link_at(e, 5)->id, "part");
    assert_int_equal(rp_model_shape_link(e, 5), rp_model_tree_link_find(m, "tool"));
    assert_int_equal(rp_model_dof(e), 3);
    assert_true(rp_model_is_kinematic(e));

    test_rng rng = {5};
    for (int c = 0; c < 50; c++) {
        double q[3] = {rng_uniform(&rng, -3, 3), rng_uniform(&rng, -3, 3),
                       rng_uniform(&rng, -3, 3)};
        rp_transform poses[5];
        assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_OK);
        const rp_transform *tool = link_pose(m, poses, "tool");
        /* 0.12 off the part along the tool's z: 0.12 - 0.05 - 0.05 = 0.02. */
        rp_vec3 where = rp_transform_point(tool, V(0.3, 0, 0.12));
        rp_shape_put moved = {"probe", sphere(where.x, where.y, where.z, 0.05)};
        assert_int_equal(rp_scene_put(sc, &moved, 1, NULL, NULL), RP_OK);
        rp_check_result r = check_q(e, sc, NULL, q, RP_REPORT_ALL, true, 0.03);
        bool found = false;
        for (size_t v = 0; v < r.n_violations; v++) {
            const rp_check_pair *p = &r.violations[v];
            if (p->kind == RP_PAIR_SCENE && p->link == 5) {
                assert_near(p->distance, 0.02, 1e-13);
                found = true;
            }
        }
        assert_true(found);
        rp_check_result_free(&r);
        /* Without the part, fore, tool and finger keep the probe beyond the
         * margin (the finger's end is 0.12 - 0.07 = 0.05 from it). */
        r = check_q(m, sc, NULL, q, RP_REPORT_ALL, true, 0.03);
        for (size_t v = 0; v < r.n_violations; v++)
            assert_false(r.violations[v].kind == RP_PAIR_SCENE && r.violations[v].link >= 2);
        rp_check_result_free(&r);
    }
    rp_model_free(e);
    rp_store_free(st);
}

/* Self pairs of the extension that involve attached shapes (index >= nb),
 * as a bit set over the other shape. */
static unsigned attached_partners(const rp_model *e, const double *q, size_t att)
{
    rp_check_result r = check_q(e, NULL, NULL, q, RP_REPORT_ALL, false, 0);
    unsigned set = 0;
    for (size_t v = 0; v < r.n_violations; v++) {
        const rp_check_pair *p = &r.violations[v];
        assert_int_equal(p->kind, RP_PAIR_SELF);
        if (p->other == att)
            set |= 1u << p->link;
        else if (p->link == att)
            set |= 1u << p->other;
    }
    rp_check_result_free(&r);
    return set;
}

static void attached_shapes_skip_own_frame_allowed_and_touch_links(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = tool_arm(st, "arm", NULL, 0);
    double q[3] = {0.3, -0.4, 0.5};
    rp_shape blob = sphere(0, 0, 0, 5); /* overlaps everything */
    enum { BASE = 1u << 0, UPPER = 1u << 1, FORE = 1u << 2, TOOL = 1u << 3, FINGER = 1u << 4 };
    static const char *const t_base[] = {"base"};
    static const char *const t_both[] = {"upper", "base"};
    static const char *const t_finger[] = {"finger"};
    struct {
        const char *link;
        const char *const *touch;
        size_t n_touch;
        unsigned want;
    } cases[] = {
        /* on tool: not tool (own), fore (same frame), finger (allowed with tool) */
        {"tool", NULL, 0, BASE | UPPER},
        {"tool", t_base, 1, UPPER},
        {"tool", t_both, 2, 0},
        /* on fore: same frame as tool; allowed with upper */
        {"fore", NULL, 0, BASE | FINGER},
        {"fore", t_finger, 1, BASE},
        /* on upper: allowed with base and fore */
        {"upper", NULL, 0, TOOL | FINGER},
        /* on base */
        {"base", NULL, 0, FORE | TOOL | FINGER},
        /* on finger: allowed with tool */
        {"finger", NULL, 0, BASE | UPPER | FORE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rp_attached at = A("blob", cases[c].link, blob, cases[c].touch, cases[c].n_touch);
        rp_model *e;
        assert_int_equal(rp_model_extend(m, &at, 1, NULL, 0, &e, NULL), RP_OK);
        unsigned got = attached_partners(e, q, 5);
        if (got != cases[c].want)
            fail_msg("case %zu (%s): partners %#x, want %#x", c, cases[c].link, got, cases[c].want);
        rp_model_free(e);
    }
    /* Two attached shapes overlapping each other are never paired. */
    rp_attached two[] = {A("b1", "tool", blob, NULL, 0), A("b2", "upper", blob, NULL, 0)};
    rp_model *e;
    assert_int_equal(rp_model_extend(m, two, 2, NULL, 0, &e, NULL), RP_OK);
    assert_int_equal(attached_partners(e, q, 5), BASE | UPPER);
    assert_int_equal(attached_partners(e, q, 6), TOOL | FINGER);
    rp_model_free(e);

    /* Without self collision, attached shapes meet only the scene. */
    static const char *const sl[] = {"base", "arm"};
    rp_link shapes[] = {S("base#0", sphere(0, 0, 0, 0.2)), S("arm#0", sphere(0, 0, 0, 0.2))};
    rp_joint_def j[] = {J("j1", RP_JOINT_REVOLUTE, "base", "arm", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 2, j, 1);
    d.self_collision = false;
    rp_model *noself = put_ok(st, "noself", &d);
    rp_attached at = A("blob", "arm", blob, NULL, 0);
    assert_int_equal(rp_model_extend(noself, &at, 1, NULL, 0, &e, NULL), RP_OK);
    double q1 = 0;
    rp_check_result r = check_q(e, NULL, NULL, &q1, RP_REPORT_ALL, false, 0);
    assert_false(r.has_min);
    rp_check_result_free(&r);
    rp_model_free(e);
    rp_store_free(st);
}

static void extension_allowed_scene_pairs_add_to_the_models(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const own[] = {"base", "floor"};
    rp_model *m = tool_arm(st, "arm", own, 1);
    /* The floor touches the base; the wall touches the upper arm (q = 0:
     * upper runs along x at height 0.5). */
    rp_shape_put sp[] = {P("floor", capsule(-1, 0, -0.25, 1, 0, -0.25, 0.1)),
                         P("wall", sphere(0.5, 0, 0.5, 0.1))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", sp, 2, &sc), RP_OK);
    size_t wall = rp_scene_find(sc, "wall");
    double q[3] = {0, 0, 0};
    rp_check_result r = check_q(m, sc, NULL, q, RP_REPORT_ALL, false, 0);
    assert_int_equal(r.n_violations, 1); /* floor-base allowed by the model */
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, wall);
    rp_check_result_free(&r);
    const char *more[] = {"upper", "wall", "finger", "ghost"};
    rp_model *e;
    assert_int_equal(rp_model_extend(m, NULL, 0, more, 2, &e, NULL), RP_OK);
    assert_int_equal(rp_model_allowed_scene_count(e), 3);
    const char *l, *s;
    rp_model_allowed_scene_at(e, 0, &l, &s);
    assert_string_equal(l, "base");
    assert_string_equal(s, "floor");
    rp_model_allowed_scene_at(e, 2, &l, &s);
    assert_string_equal(l, "finger");
    assert_string_equal(s, "ghost");
    for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
        r = check_q(e, sc, NULL, q, (rp_report)rep, false, 0);
        assert_false(r.collision);
        assert_int_equal(r.n_violations, 0);
        rp_check_result_free(&r);
    }
    /* The original model is untouched. */
    r = check_q(m, sc, NULL, q, RP_REPORT_FIRST, false, 0);
    assert_true(r.collision);
    rp_check_result_free(&r);
    rp_model_free(e);
    rp_store_free(st);
}

static void extend_refusals_name_the_attached_shape_and_element(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const own[] = {"base", "floor", "tool", "x"};
    rp_model *m = tool_arm(st, "arm", own, 2);
    size_t mem = rp_store_memory(st);
    rp_shape ok = sphere(0, 0, 0, 0.1);
    static const char *const touch_bad[] = {"base", "zz"};
    struct {
        rp_attached at[2];
        size_t n;
        const char *const *as;
        size_t n_as;
        rp_extend_problem problem;
        size_t index, element;
    } cases[] = {
        {{A("upper#0", "tool", ok, NULL, 0)}, 1, NULL, 0, RP_EXTEND_DUPLICATE_ID, 0, 0},
        {{A("p", "tool", ok, NULL, 0), A("p", "base", ok, NULL, 0)},
         2,
         NULL,
         0,
         RP_EXTEND_DUPLICATE_ID,
         1,
         0},
        {{A("p", "tool", ok, NULL, 0), A("q", "zz", ok, NULL, 0)},
         2,
         NULL,
         0,
         RP_EXTEND_UNKNOWN_LINK,
         1,
         0},
        {{A("p", "tool#0", ok, NULL, 0)}, 1, NULL, 0, RP_EXTEND_UNKNOWN_LINK, 0, 0},
        {{A("p", "tool", sphere(0, 0, 0, -1), NULL, 0)}, 1, NULL, 0, RP_EXTEND_BAD_SHAPE, 0, 0},
        {{A("p", "tool", capsule(0, 0, NAN, 0, 0, 0, 1), NULL, 0)},
         1,
         NULL,
         0,
         RP_EXTEND_BAD_SHAPE,
         0,
         0},
        {{A("p", "tool", ok, NULL, 0), A("q", "base", ok, touch_bad, 2)},
         2,
         NULL,
         0,
         RP_EXTEND_UNKNOWN_TOUCH,
         1,
         1},
        {{A("p", "tool", ok, NULL, 0)},
         1,
         (const char *const[]){"upper", "a", "zz", "b"},
         2,
         RP_EXTEND_UNKNOWN_SCENE_LINK,
         1,
         0},
        {{A("p", "tool", ok, NULL, 0)},
         1,
         (const char *const[]){"nope", "a"},
         1,
         RP_EXTEND_UNKNOWN_SCENE_LINK,
         0,
         0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rp_model *e = m; /* must be overwritten */
        rp_extend_error err;
        assert_int_equal(
            rp_model_extend(m, cases[c].at, cases[c].n, cases[c].as, cases[c].n_as, &e, &err),
            RP_ERR_INVALID_ARG);
        assert_null(e);
        if (err.problem != cases[c].problem || err.index != cases[c].index ||
            err.element != cases[c].element)
            fail_msg("case %zu: problem %d index %zu element %zu, want %d %zu %zu", c,
                     (int)err.problem, err.index, err.element, (int)cases[c].problem,
                     cases[c].index, cases[c].element);
    }
    /* An extension cannot be extended. */
    rp_model *e, *e2 = NULL;
    rp_attached at = A("p", "tool", ok, NULL, 0);
    assert_int_equal(rp_model_extend(m, &at, 1, NULL, 0, &e, NULL), RP_OK);
    rp_attached at2 = A("q", "tool", ok, NULL, 0);
    assert_int_equal(rp_model_extend(e, &at2, 1, NULL, 0, &e2, NULL), RP_ERR_INVALID_ARG);
    assert_null(e2);
    rp_model_free(e);
    rp_model_free(NULL);
    rp_model_free(m); /* a store's model: not freed */
    assert_ptr_equal(rp_store_model_find(st, "arm"), m);
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

static void extensions_leave_store_memory_alone_and_outlive_their_model(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const own[] = {"base", "floor"};
    rp_model *m = tool_arm(st, "arm", own, 1);
    rp_shape_put sp[] = {P("floor", capsule(-1, 0, -0.25, 1, 0, -0.25, 0.1)),
                         P("ball", sphere(0.5, 0.3, 0.5, 0.1))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", sp, 2, &sc), RP_OK);
    size_t mem = rp_store_memory(st);
    static const char *const touch[] = {"upper"};
    rp_attached at[] = {A("part", "tool", sphere(0.3, 0, 0, 0.05), touch, 1),
                        A("cam", "upper", capsule(0.5, 0, 0.1, 0.5, 0, 0.3, 0.03), NULL, 0)};
    const char *more[] = {"fore", "ball"};
    rp_model *e;
    assert_int_equal(rp_model_extend(m, at, 2, more, 1, &e, NULL), RP_OK);
    assert_int_equal(rp_store_memory(st), mem);
    rp_model_free(e);
    assert_int_equal(rp_store_memory(st), mem);

    /* Results of the extension before and after the model goes away. */
    assert_int_equal(rp_model_extend(m, at, 2, more, 1, &e, NULL), RP_OK);
    double q[3] = {0.3, 0.2, 0.1};
    rp_check_result before = check_q(e, sc, NULL, q, RP_REPORT_ALL, true, 0.5);
    assert_int_equal(rp_store_model_delete(st, "arm"), RP_OK);
    /* Replace it under the same name too, so its memory is reused. */
    tool_arm(st, "arm", NULL, 0);
    tool_arm(st, "arm", NULL, 0);
    rp_check_result after = check_q(e, sc, NULL, q, RP_REPORT_ALL, true, 0.5);
    assert_same_result(&after, &before, 0);
    rp_check_result_free(&before);
    rp_check_result_free(&after);
    assert_int_equal(rp_model_dof(e), 3);
    assert_string_equal(rp_model_dof_name(e, 2), "j3");
    assert_int_equal(rp_model_dof_find(e, "j2"), 1);
    assert_string_equal(rp_model_tree_link_name(e, rp_model_root(e)), "base");
    assert_int_equal(rp_model_tree_link_find(e, "finger"), rp_model_shape_link(e, 4));
    assert_string_equal(rp_model_joint_at(e, 2)->name, "ftool");
    assert_string_equal(rp_model_joint_at(e, 2)->parent, "fore");
    assert_string_equal(rp_model_name(e), "arm");
    const char *l, *s;
    rp_model_allowed_scene_at(e, 1, &l, &s);
    assert_string_equal(l, "fore");
    assert_string_equal(s, "ball");
    rp_transform poses[5];
    assert_int_equal(rp_model_fk(e, NULL, q, poses), RP_OK);
    rp_model_free(e);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* forward kinematics by hand */
        cmocka_unit_test(planar_arm_poses_match_hand_computation),
        cmocka_unit_test(batched_frames_equal_single_frames),
        cmocka_unit_test(prismatic_joint_translates_along_its_normalised_axis),
        cmocka_unit_test(mimic_joints_follow_their_source_through_chains),
        cmocka_unit_test(fixed_joints_share_frames_and_offset_poses),
        cmocka_unit_test(rpy_origins_compose_yaw_pitch_roll_including_gimbal_lock),
        cmocka_unit_test(arbitrary_axes_are_normalised_and_rotate_by_rodrigues),
        cmocka_unit_test(base_pose_moves_every_link),
        /* what fk and joint checks refuse */
        cmocka_unit_test(fk_and_joint_checks_refuse_frame_models),
        cmocka_unit_test(fk_refuses_null_joint_and_pose_arrays),
        cmocka_unit_test(fk_and_joint_checks_refuse_nonfinite_values),
        /* joint order, defaults, limits */
        cmocka_unit_test(active_joints_are_moving_non_mimic_joints_in_definition_order),
        cmocka_unit_test(limit_violations_are_strict_and_skip_unbounded_joints),
        /* definitions refused, with the problem named */
        cmocka_unit_test(joints_naming_unknown_links_are_refused_with_the_end),
        cmocka_unit_test(two_parents_self_joints_and_duplicates_are_refused),
        cmocka_unit_test(cycles_roots_and_unreachable_links_are_refused),
        cmocka_unit_test(bad_origins_axes_limits_and_types_are_refused),
        cmocka_unit_test(bad_mimics_and_defaults_are_refused),
        cmocka_unit_test(unknown_shape_pair_and_scene_links_are_refused),
        cmocka_unit_test(null_names_are_invalid_arguments_without_a_problem),
        /* memory accounting */
        cmocka_unit_test(kinematic_models_return_memory_to_baseline),
        /* checks of joint vectors */
        cmocka_unit_test(joint_checks_equal_checks_of_hand_computed_frames),
        cmocka_unit_test(allowed_link_pairs_disable_every_shape_pair_of_the_two_links),
        cmocka_unit_test(allowed_scene_pairs_remove_exactly_that_pair_in_every_mode),
        /* against the independent reference on random trees */
        cmocka_unit_test(fk_matches_long_double_reference_on_random_trees),
        cmocka_unit_test(kinematic_and_frame_indexed_twins_check_alike),
        cmocka_unit_test(batch_checks_equal_lone_checks),
        /* rp_model_extend: attached shapes and allowed scene pairs */
        cmocka_unit_test(attached_shape_moves_with_its_link),
        cmocka_unit_test(attached_shapes_skip_own_frame_allowed_and_touch_links),
        cmocka_unit_test(extension_allowed_scene_pairs_add_to_the_models),
        cmocka_unit_test(extend_refusals_name_the_attached_shape_and_element),
        cmocka_unit_test(extensions_leave_store_memory_alone_and_outlive_their_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
