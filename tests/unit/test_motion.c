/* SPDX-License-Identifier: MIT */
/*
 * Motion checks (rp_model_check_motion): argument errors, waypoint limits,
 * the discrete mode's sampling (a thin obstacle between samples, state
 * counts, coarse-to-fine order, the earliest invalid state), hand-computed
 * first contacts in certified mode (self collision, attached shapes,
 * several segments), max_states, and the certified mode's guarantee checked
 * against fine sampling on thousands of random motions of a small arm with a
 * prismatic and a mimic joint among random obstacles.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"

#include "repose/scene.h"
#include "test_joints.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- helpers ------------------------------------------------------------------ */

static rp_motion_opts discrete(double resolution)
{
    rp_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = RP_MOTION_DISCRETE;
    o.resolution = resolution;
    return o;
}

static rp_motion_opts certified(double tolerance)
{
    rp_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = RP_MOTION_CERTIFIED;
    o.tolerance = tolerance;
    return o;
}

/* Runs a motion check that must succeed. */
static rp_motion_result run(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                            const double *path, size_t n, rp_motion_opts o, double *first)
{
    rp_motion_result r;
    rp_status s = rp_model_check_motion(m, sc, base, path, n, &o, &r, first);
    if (s != RP_OK)
        fail_msg("check_motion: %s", rp_status_name(s));
    return r;
}

/* first_joints is the path's state at (segment, t). */
static void assert_state_at(const double *path, size_t dof, size_t seg, double t,
                            const double *first)
{
    for (size_t i = 0; i < dof; i++) {
        double a = path[seg * dof + i], b = path[(seg + 1) * dof + i];
        assert_near(first[i], a + t * (b - a), 1e-12 * (1 + fabs(a) + fabs(b)));
    }
}

/* The state of the path at (segment, t). */
static void state_at(const double *path, size_t dof, size_t seg, double t, double *q)
{
    for (size_t i = 0; i < dof; i++) {
        double a = path[seg * dof + i], b = path[(seg + 1) * dof + i];
        q[i] = a + t * (b - a);
    }
}

static bool collides(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                     const double *q, double margin)
{
    rp_check_opts o = {RP_REPORT_FIRST, true, margin, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check_joints(m, sc, base, q, &o, &r), RP_OK);
    bool c = r.collision;
    rp_check_result_free(&r);
    return c;
}

static double closest(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                      const double *q, rp_check_pair *pair)
{
    rp_check_opts o = {RP_REPORT_CLOSEST, true, 0, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check_joints(m, sc, base, q, &o, &r), RP_OK);
    assert_true(r.has_min);
    if (pair)
        *pair = r.closest;
    double d = r.closest.distance;
    rp_check_result_free(&r);
    return d;
}

/* ---- models ------------------------------------------------------------------------- */

/* One revolute joint about z at the origin; the arm is a thin capsule from
 * radius 0.5 to 1 (radius 0.005).  A point sphere of radius 0.005 at angle
 * a on the unit circle is then sin|theta - a| - 0.01 from it (|theta - a| <
 * pi/3): the arm hits it only within asin(0.01) ~ 0.0100002 rad. */
static rp_model *wand(rp_store *st)
{
    static const char *const sl[] = {"arm"};
    rp_link shapes[] = {S("arm#0", capsule(0.5, 0, 0, 1, 0, 0, 0.005))};
    rp_joint_def j[] = {J("j", RP_JOINT_CONTINUOUS, "base", "arm", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 1);
    return put_ok(st, "wand", &d);
}

static rp_shape_put pin(const char *id, double angle)
{
    return P(id, sphere(cos(angle), sin(angle), 0, 0.005));
}

/* States a discrete check evaluates for a valid path (the documented count:
 * every waypoint, and n - 1 interior states per segment, n = ceil(max |dq| /
 * resolution), at least 1). */
static uint64_t discrete_count(const double *path, size_t n_points, size_t dof, double res)
{
    uint64_t total = n_points;
    for (size_t s = 0; s + 1 < n_points; s++) {
        double big = 0;
        for (size_t i = 0; i < dof; i++)
            big = fmax(big, fabs(path[(s + 1) * dof + i] - path[s * dof + i]));
        double n = ceil(big / res);
        total += n >= 1 ? (uint64_t)n - 1 : 0;
    }
    return total;
}

/* ---- argument errors and limits -------------------------------------------------------- */

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_link fl[] = {{"x", 0, sphere(0, 0, 0, 1)}};
    rp_model_def fd = {.links = fl, .n_links = 1};
    rp_model *frames = NULL;
    assert_int_equal(rp_store_model_put(st, "frames", &fd, &frames, NULL), RP_OK);
    double path[3] = {0, 1, 2};
    rp_motion_result r;
    rp_motion_opts o = discrete(0);
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 0, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 1, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, NULL, 2, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check_motion(frames, NULL, NULL, path, 2, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check_motion(NULL, NULL, NULL, path, 2, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, &o, NULL, NULL),
                     RP_ERR_INVALID_ARG);
    const double bad_res[] = {-0.1, -1e-300, NAN, INFINITY};
    for (int b = 0; b < 4; b++) {
        o = discrete(bad_res[b]);
        assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, &o, &r, NULL),
                         RP_ERR_INVALID_ARG);
        o = certified(bad_res[b]);
        assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, &o, &r, NULL),
                         RP_ERR_INVALID_ARG);
    }
    o = discrete(0);
    o.mode = (rp_motion_mode)7;
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    o = certified(0);
    o.has_margin = true;
    o.margin = NAN;
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, &o, &r, NULL),
                     RP_ERR_INVALID_ARG);
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++)
        for (int at = 0; at < 3; at++) {
            double p[3] = {0, 1, 2};
            p[at] = bad[b];
            o = discrete(0);
            assert_int_equal(rp_model_check_motion(m, NULL, NULL, p, 3, &o, &r, NULL),
                             RP_ERR_NONFINITE);
            o = certified(0);
            assert_int_equal(rp_model_check_motion(m, NULL, NULL, p, 3, &o, &r, NULL),
                             RP_ERR_NONFINITE);
        }
    /* NULL options: discrete at the defaults. */
    assert_int_equal(rp_model_check_motion(m, NULL, NULL, path, 2, NULL, &r, NULL), RP_OK);
    assert_true(r.valid);
    assert_int_equal(r.states_checked, discrete_count(path, 2, 1, 0.01));
    rp_store_free(st);
}

/* Two revolute joints with limits [-2, 2] and [-1, 1]. */
static rp_model *limited_arm(rp_store *st)
{
    static const char *const sl[] = {"a", "b"};
    rp_link shapes[] = {S("a#0", capsule(0, 0, 0, 1, 0, 0, 0.05)),
                        S("b#0", capsule(0.15, 0, 0, 1, 0, 0, 0.05))};
    rp_joint_def j[] = {limited(J("j1", RP_JOINT_REVOLUTE, "base", "a", ZERO, ZERO, AZ), -2, 2),
                        limited(J("j2", RP_JOINT_REVOLUTE, "a", "b", V(1, 0, 0), ZERO, AZ), -1, 1)};
    rp_model_def d = kdef(shapes, sl, 2, j, 2);
    return put_ok(st, "lim", &d);
}

/* skip_ends: the first and last waypoints are the caller's (known valid):
 * a pin at the end waypoint (and within the arm's 0.01 rad of nothing
 * else) is then not seen, in either mode's sampling, and the states
 * checked are the interior ones only. */
/* resolution_l2: steps measured by the Euclidean joint distance: a
 * diagonal step of (0.3, 0.4) is 0.5 long, 0.4 by the max-norm. */
static void the_l2_resolution_counts_the_euclidean_joint_step(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = limited_arm(st);
    double path[4] = {0.0, 0.0, 0.3, 0.4};
    rp_motion_opts o = discrete(0.01);
    assert_int_equal(rp_motion_states_bound(m, path, 2, &o), 2 + 40 - 1);
    assert_int_equal(run(m, NULL, NULL, path, 2, o, NULL).states_checked, 2 + 40 - 1);
    o.resolution_l2 = true;
    assert_int_equal(rp_motion_states_bound(m, path, 2, &o), 2 + 50 - 1);
    assert_int_equal(run(m, NULL, NULL, path, 2, o, NULL).states_checked, 2 + 50 - 1);
    rp_store_free(st);
}

static void skip_ends_leaves_the_end_waypoints_unchecked(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_shape_put p = pin("pin", 1.0);
    assert_int_equal(rp_store_create(st, "s", &p, 1, NULL), RP_OK);
    rp_scene *sc = rp_store_find(st, "s");
    double path[2] = {0.0, 1.0};
    rp_motion_opts o = discrete(0.3);
    rp_motion_result r = run(m, sc, NULL, path, 2, o, NULL);
    assert_false(r.valid);
    assert_int_equal(r.segment, 0);
    assert_true(r.t == 1.0);
    o.skip_ends = true;
    r = run(m, sc, NULL, path, 2, o, NULL);
    assert_true(r.valid);
    assert_int_equal(r.states_checked, discrete_count(path, 2, 1, 0.3) - 2);
    assert_int_equal(rp_motion_states_bound(m, path, 2, &o), r.states_checked);
    /* Out of limits at an end: not looked at either. */
    rp_model *lim = limited_arm(st);
    double far[4] = {2.5, 0.0, 1.5, 0.0};
    o = discrete(0.05);
    assert_true(run(lim, NULL, NULL, far, 2, o, NULL).limits);
    o.skip_ends = true;
    assert_false(run(lim, NULL, NULL, far, 2, o, NULL).limits);
    /* Certified: its prescreen skips them too; the certificate itself
     * starts at the first waypoint (whose distance it needs). */
    double back[2] = {1.0, 0.5};
    rp_motion_opts c = certified(1e-5);
    c.fast_reject = true;
    assert_false(run(m, sc, NULL, back, 2, c, NULL).valid);
    rp_store_free(st);
}

static void waypoints_out_of_limits_make_the_motion_invalid(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = limited_arm(st);
    rp_motion_opts modes[] = {discrete(0.1), certified(0)};
    for (int md = 0; md < 2; md++) {
        /* Waypoint 1 has joint 1 out: segment 1, t 0. */
        double p1[] = {0, 0, 0.5, 1.5, 1, 0, 1.5, 0.5};
        double first[2];
        rp_motion_result r = run(m, NULL, NULL, p1, 4, modes[md], first);
        assert_false(r.valid);
        assert_true(r.limits);
        assert_int_equal(r.limit_joint, 1);
        assert_int_equal(r.segment, 1);
        assert_same_bits(r.t, 0.0);
        assert_int_equal(r.states_checked, 0);
        assert_same_bits(first[0], 0.5);
        assert_same_bits(first[1], 1.5);
        /* The last waypoint out: the end of the last segment. */
        double p2[] = {0, 0, 0, 0.3, nextafter(-2, -3), 0.3};
        r = run(m, NULL, NULL, p2, 3, modes[md], first);
        assert_false(r.valid);
        assert_true(r.limits);
        assert_int_equal(r.limit_joint, 0);
        assert_int_equal(r.segment, 1);
        assert_same_bits(r.t, 1.0);
        assert_same_bits(first[0], nextafter(-2, -3));
        /* The first waypoint out, both joints: joint 0 first. */
        double p3[] = {3, 3, 0, 0};
        r = run(m, NULL, NULL, p3, 2, modes[md], first);
        assert_true(r.limits);
        assert_int_equal(r.limit_joint, 0);
        assert_int_equal(r.segment, 0);
        assert_same_bits(r.t, 0.0);
        /* Exactly at the limits is inside, and ignore_limits skips the test
         * (the states between may leave the limits: not looked at). */
        double p4[] = {-2, -1, 2, 1};
        r = run(m, NULL, NULL, p4, 2, modes[md], NULL);
        assert_true(r.valid);
        assert_false(r.limits);
        rp_motion_opts o = modes[md];
        o.ignore_limits = true;
        r = run(m, NULL, NULL, p1, 4, o, NULL);
        assert_true(r.valid);
        assert_false(r.limits);
        assert_true(r.states_checked > 0);
    }
    rp_store_free(st);
}

/* ---- discrete ------------------------------------------------------------------------ */

static void discrete_finds_a_thin_obstacle_only_at_a_fine_enough_resolution(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_shape_put p = pin("pin", 0.55);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &p, 1, &sc), RP_OK);
    double path[] = {0, 1};
    /* The samples 0.5 and 0.6 straddle the pin, 0.05 rad from it. */
    rp_motion_result r = run(m, sc, NULL, path, 2, discrete(0.1), NULL);
    assert_true(r.valid);
    assert_int_equal(r.states_checked, 11);
    assert_int_equal(r.states_checked, discrete_count(path, 2, 1, 0.1));
    /* Yet the motion does pass through the pin. */
    double q = 0.55;
    assert_true(collides(m, sc, NULL, &q, 0));
    double first;
    r = run(m, sc, NULL, path, 2, discrete(0.01), &first);
    assert_false(r.valid);
    assert_false(r.limits);
    assert_int_equal(r.segment, 0);
    assert_true(fabs(first - 0.55) < asin(0.01));
    assert_state_at(path, 1, 0, r.t, &first);
    assert_int_equal(r.pair.link, 0);
    assert_int_equal(r.pair.kind, RP_PAIR_SCENE);
    assert_int_equal(r.pair.other, 0);
    assert_true(r.pair.distance < 0);
    assert_true(r.states_checked < discrete_count(path, 2, 1, 0.01));
    /* Certified mode needs no resolution to see it. */
    r = run(m, sc, NULL, path, 2, certified(0), &first);
    assert_false(r.valid);
    assert_near(first, 0.55 - asin(0.01), 1e-4);
    assert_true(first <= 0.55 - asin(0.01));
    rp_store_free(st);
}

static void discrete_counts_every_state_of_a_valid_path(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = limited_arm(st);
    rp_shape_put far = {"far", sphere(50, 0, 0, 1)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &far, 1, &sc), RP_OK);
    /* Segments of max-norm 1, 0.5 (joint 1), 0 (a repeated waypoint), 0.8. */
    double path[] = {0, 0, 1, 0.25, 1, 0.75, 1, 0.75, 0.2, 0.5};
    const double res[] = {0.125, 0.01, 0.3, 2};
    const uint64_t want[] = {5 + 7 + 3 + 0 + 6, 0, 5 + 3 + 1 + 0 + 2, 5};
    for (int k = 0; k < 4; k++) {
        rp_motion_result r = run(m, sc, NULL, path, 5, discrete(res[k]), NULL);
        assert_true(r.valid);
        assert_int_equal(r.states_checked, discrete_count(path, 5, 2, res[k]));
        if (want[k])
            assert_int_equal(r.states_checked, want[k]);
    }
    rp_store_free(st);
}

static void coarse_to_fine_finds_a_middle_obstacle_after_three_states(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_shape_put p = pin("mid", 0.5);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &p, 1, &sc), RP_OK);
    double path[] = {0, 1};
    double first;
    rp_motion_result r = run(m, sc, NULL, path, 2, discrete(1e-4), &first);
    assert_false(r.valid);
    assert_int_equal(r.states_checked, 3); /* two waypoints, then the midpoint */
    assert_same_bits(r.t, 0.5);
    assert_same_bits(first, 0.5);

    /* At 1/128 three samples fall within the pin's window (71, 72, 73 of
     * 128); the coarser one, 72 = 9 * 8, comes first. */
    p = pin("mid", 0.5625);
    assert_int_equal(rp_scene_put(sc, &p, 1, NULL, NULL), RP_OK);
    for (int k = 70; k <= 74; k++) {
        double q = k / 128.0;
        assert_int_equal(collides(m, sc, NULL, &q, 0), k >= 71 && k <= 73);
    }
    r = run(m, sc, NULL, path, 2, discrete(1.0 / 128), &first);
    assert_false(r.valid);
    assert_same_bits(r.t, 0.5625);
    assert_true(r.states_checked < 20);
    rp_motion_opts o = discrete(1.0 / 128);
    o.earliest = true;
    r = run(m, sc, NULL, path, 2, o, &first);
    assert_false(r.valid);
    assert_same_bits(r.t, 71 / 128.0);
    assert_same_bits(first, 71 / 128.0);
    rp_store_free(st);
}

/* The first invalid sample in path order, by scanning with single checks. */
static bool scan_first(const rp_model *m, const rp_scene *sc, const double *path, size_t n_points,
                       size_t dof, double res, size_t *seg, double *t)
{
    double q[8];
    for (size_t s = 0; s + 1 < n_points; s++) {
        double big = 0;
        for (size_t i = 0; i < dof; i++)
            big = fmax(big, fabs(path[(s + 1) * dof + i] - path[s * dof + i]));
        uint64_t n = (uint64_t)fmax(1, ceil(big / res));
        for (uint64_t k = 0; k <= n; k++) {
            double tt = (double)k / (double)n;
            state_at(path, dof, s, tt, q);
            if (collides(m, sc, NULL, q, 0)) {
                *seg = s;
                *t = tt;
                return true;
            }
        }
    }
    return false;
}

static void earliest_reports_the_first_invalid_state_along_the_path(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_shape_put pins[] = {pin("late", 0.5), pin("early", 0.25), pin("end", 1.2)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", pins, 2, &sc), RP_OK);
    double path[] = {0, 1};
    const double res = 1.0 / 64;
    rp_motion_result r = run(m, sc, NULL, path, 2, discrete(res), NULL);
    assert_false(r.valid);
    assert_same_bits(r.t, 0.5); /* the midpoint comes first */
    assert_int_equal(r.pair.other, rp_scene_find(sc, "late"));
    rp_motion_opts o = discrete(res);
    o.earliest = true;
    double first;
    r = run(m, sc, NULL, path, 2, o, &first);
    size_t seg = SIZE_MAX;
    double t = -1;
    assert_true(scan_first(m, sc, path, 2, 1, res, &seg, &t));
    assert_false(r.valid);
    assert_int_equal(r.segment, seg);
    assert_same_bits(r.t, t);
    assert_same_bits(r.t, 0.25);
    assert_int_equal(r.pair.other, rp_scene_find(sc, "early"));
    assert_state_at(path, 1, 0, r.t, &first);

    /* Three segments; the last waypoint collides (found before any interior
     * state), yet the earliest is in segment 1. */
    assert_int_equal(rp_scene_put(sc, &pins[2], 1, NULL, NULL), RP_OK);
    double p3[] = {-0.5, 0.1, 0.6, 1.2};
    r = run(m, sc, NULL, p3, 4, discrete(res), &first);
    assert_false(r.valid);
    assert_int_equal(r.segment, 2);
    assert_same_bits(r.t, 1.0);
    assert_same_bits(first, 1.2);
    r = run(m, sc, NULL, p3, 4, o, &first);
    assert_true(scan_first(m, sc, p3, 4, 1, res, &seg, &t));
    assert_int_equal(seg, 1);
    assert_int_equal(r.segment, seg);
    assert_same_bits(r.t, t);
    assert_state_at(p3, 1, r.segment, r.t, &first);
    assert_int_equal(r.pair.other, rp_scene_find(sc, "early"));
    /* The first waypoint itself: t 0 of segment 0, earliest or not. */
    double p4[] = {0.25, 1.2};
    r = run(m, sc, NULL, p4, 2, o, &first);
    assert_int_equal(r.segment, 0);
    assert_same_bits(r.t, 0.0);
    rp_store_free(st);
}

/* ---- certified, hand-computed contacts ---------------------------------------------------- */

/* Two blades on joints about the same axis: l1 on j0, l2 on j1 (child of
 * l1, same origin), each a capsule from radius 0.3 to 1 (radius 0.05), and
 * not allowed to touch.  At relative angle phi their inner ends are
 * 0.6 sin(phi/2) apart: distance 0.6 sin(phi/2) - 0.1.  `swap` lists l2's
 * shape first (the moving side of the pair is then its first shape). */
static rp_model *scissors(rp_store *st, bool swap)
{
    static const char *const sl[] = {"l1", "l2"}, *const sl_swapped[] = {"l2", "l1"};
    rp_link shapes[] = {S("a", capsule(0.3, 0, 0, 1, 0, 0, 0.05)),
                        S("b", capsule(0.3, 0, 0, 1, 0, 0, 0.05))};
    rp_joint_def j[] = {J("j0", RP_JOINT_CONTINUOUS, "base", "l1", ZERO, ZERO, AZ),
                        J("j1", RP_JOINT_CONTINUOUS, "l1", "l2", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, swap ? sl_swapped : sl, 2, j, 2);
    return put_ok(st, swap ? "swapped" : "scissors", &d);
}

static void certified_finds_the_first_self_contact_of_folding_links(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    for (int swap = 0; swap < 2; swap++) {
        rp_model *m = scissors(st, swap);
        const double margin = 0.02;
        /* j0 sweeps 2 rad (moving both blades alike), j1 closes from 1.2 to 0. */
        double path[] = {0, 1.2, 2.0, 0};
        double phi_star = 2 * asin((0.1 + margin) / 0.6); /* contact with the margin */
        double t_star = 1 - phi_star / 1.2;
        const double tols[] = {0, 1e-4, 1e-3};
        for (int k = 0; k < 3; k++) {
            double tol = tols[k] ? tols[k] : 1e-5;
            rp_motion_opts o = certified(tols[k]);
            o.has_margin = true;
            o.margin = margin;
            double first[2];
            rp_motion_result r = run(m, NULL, NULL, path, 2, o, first);
            assert_false(r.valid);
            assert_false(r.limits);
            assert_int_equal(r.segment, 0);
            assert_int_equal(r.pair.link, 0);
            assert_int_equal(r.pair.kind, RP_PAIR_SELF);
            assert_int_equal(r.pair.other, 1);
            assert_state_at(path, 2, 0, r.t, first);
            /* Before the contact, within what the tolerance allows: clearance
             * 0.6 sin(phi/2) - 0.12 < tol there. */
            assert_true(r.t <= t_star);
            double phi = 1.2 * (1 - r.t);
            double clearance = 0.6 * sin(phi / 2) - 0.1 - margin;
            assert_true(clearance < tol);
            assert_true(clearance >= tol / 2 - 1e-12);
            assert_near(r.pair.distance - margin, clearance, 1e-12);
            /* A sweep that stops 2 tol clear of the margin is valid; one that
             * stops tol/4 clear must not be (tol/2 is promised). */
            double short_path[] = {0, 1.2, 2.0, 2 * asin((0.1 + margin + 2 * tol) / 0.6)};
            r = run(m, NULL, NULL, short_path, 2, o, NULL);
            assert_true(r.valid);
            double just_in[] = {0, 1.2, 2.0, 2 * asin((0.1 + margin + tol / 4) / 0.6)};
            r = run(m, NULL, NULL, just_in, 2, o, NULL);
            assert_false(r.valid);
            assert_true(r.t > 0.9);
        }
        /* Discrete (earliest) agrees: the first sample past the contact. */
        rp_motion_opts o = discrete(1e-3);
        o.has_margin = true;
        o.margin = margin;
        o.earliest = true;
        rp_motion_result r = run(m, NULL, NULL, path, 2, o, NULL);
        assert_false(r.valid);
        assert_true(r.t >= t_star && r.t < t_star + 1.0 / 2000 + 1e-12);
        assert_int_equal(r.pair.kind, RP_PAIR_SELF);
    }
    rp_store_free(st);
}

static void assert_segment_clear(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                                 const double *path, size_t dof, size_t s, double t_end,
                                 double margin, double step);

/* A slider (radius 0.05) on a prismatic joint extending from 0.1 to 1 along
 * an arm that turns 1.5 rad meanwhile: near the end the slider moves at
 * 1.75 per unit of t, far more than its reach at the start (0.1) would
 * allow; the obstacle sits where the slider ends. */
static void certified_accounts_for_prismatic_extension_under_rotation(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"s"};
    rp_link shapes[] = {S("s#0", sphere(0, 0, 0, 0.05))};
    rp_joint_def j[] = {J("turn", RP_JOINT_CONTINUOUS, "base", "a", ZERO, ZERO, AZ),
                        J("reach", RP_JOINT_PRISMATIC, "a", "s", ZERO, ZERO, AX)};
    rp_model_def d = kdef(shapes, sl, 1, j, 2);
    rp_model *m = put_ok(st, "reacher", &d);
    double path[] = {0, 0.1, 1.5, 1.0};
    rp_shape_put ob = {"ob", sphere(cos(1.5), sin(1.5), 0, 0.05)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &ob, 1, &sc), RP_OK);
    const double tols[] = {1e-5, 1e-4, 1e-3};
    for (int k = 0; k < 3; k++) {
        double tol = tols[k], first[2];
        rp_motion_result r = run(m, sc, NULL, path, 2, certified(tol), first);
        assert_false(r.valid);
        assert_state_at(path, 2, 0, r.t, first);
        double dmin = closest(m, sc, NULL, first, NULL);
        assert_true(dmin < tol && dmin >= tol / 2 - 1e-12);
        assert_segment_clear(m, sc, NULL, path, 2, 0, r.t, tol / 2 - 1e-12, 1e-4);
    }
    rp_store_free(st);
}

/* A slider along x and a mimic slider along y (value 2 v - 0.5), spheres of
 * radius 0.1, walls of radius 0.1 at x = 1 and y = 1: the distances fall at
 * exactly the rates the bound uses (1 and 2 per unit of t). */
static void certified_bounds_are_tight_for_prismatic_and_mimic_joints(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"s", "s2"};
    rp_link shapes[] = {S("s#0", sphere(0, 0, 0, 0.1)), S("s2#0", sphere(0, 0, 0, 0.1))};
    rp_joint_def j[] = {J("v", RP_JOINT_PRISMATIC, "base", "s", ZERO, ZERO, V(3, 0, 0)),
                        J("vm", RP_JOINT_PRISMATIC, "base", "s2", ZERO, ZERO, AY)};
    j[1].mimic = "v";
    j[1].multiplier = 2;
    j[1].offset = -0.5;
    rp_model_def d = kdef(shapes, sl, 2, j, 2);
    rp_model *m = put_ok(st, "sliders", &d);
    rp_shape_put walls[] = {P("wall", sphere(1, 0, 0, 0.1)), P("wall2", sphere(0, 1, 0, 0.1))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", walls, 2, &sc), RP_OK);
    double path[] = {0, 1};
    const double tols[] = {1e-5, 1e-4, 1e-3};
    for (int k = 0; k < 3; k++) {
        double tol = tols[k], first;
        /* s2 meets wall2 first: clearance 1.3 - 2 t. */
        rp_motion_result r = run(m, sc, NULL, path, 2, certified(tol), &first);
        assert_false(r.valid);
        assert_int_equal(r.pair.link, 1);
        assert_int_equal(r.pair.other, rp_scene_find(sc, "wall2"));
        double clear = 1.3 - 2 * r.t;
        assert_true(clear < tol && clear >= tol / 2 - 1e-12);
        assert_near(r.pair.distance, clear, 1e-12);
        assert_state_at(path, 1, 0, r.t, &first);
    }
    /* Without wall2, s meets wall: clearance 0.8 - t. */
    const char *gone[] = {"wall2"};
    assert_int_equal(rp_scene_remove(sc, gone, 1, NULL, NULL, NULL), RP_OK);
    for (int k = 0; k < 3; k++) {
        double tol = tols[k];
        rp_motion_result r = run(m, sc, NULL, path, 2, certified(tol), NULL);
        assert_false(r.valid);
        assert_int_equal(r.pair.link, 0);
        double clear = 0.8 - r.t;
        assert_true(clear < tol && clear >= tol / 2 - 1e-12);
    }
    rp_store_free(st);
}

/* A sphere on a mimic joint turning three times as fast as its source
 * (angle 3 q + 0.1, radius 1) towards a sphere at angle 1.2 on the same
 * circle: the chord falls at nearly the bound's rate. */
static void certified_follows_mimic_joints_at_their_multiplier(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"b"};
    rp_link shapes[] = {S("b#0", sphere(1, 0, 0, 0.1))};
    rp_joint_def j[] = {J("j0", RP_JOINT_CONTINUOUS, "base", "a", ZERO, ZERO, AZ),
                        J("jm", RP_JOINT_REVOLUTE, "base", "b", ZERO, ZERO, AZ)};
    j[1].mimic = "j0";
    j[1].multiplier = 3;
    j[1].offset = 0.1;
    rp_model_def d = kdef(shapes, sl, 1, j, 2);
    rp_model *m = put_ok(st, "mimic", &d);
    rp_shape_put ob = {"ob", sphere(cos(1.2), sin(1.2), 0, 0.1)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &ob, 1, &sc), RP_OK);
    double path[] = {0, 0.5};
    double t_star = 2 * (1.1 - 2 * asin(0.1)) / 3;
    const double tols[] = {1e-5, 1e-3};
    for (int k = 0; k < 2; k++) {
        double first;
        rp_motion_result r = run(m, sc, NULL, path, 2, certified(tols[k]), &first);
        assert_false(r.valid);
        assert_true(r.t <= t_star);
        double ang = 3 * first + 0.1;
        double clear = 2 * sin((1.2 - ang) / 2) - 0.2;
        assert_true(clear < tols[k] && clear >= tols[k] / 2 - 1e-12);
        assert_state_at(path, 1, 0, r.t, &first);
    }
    rp_store_free(st);
}

static void attached_shapes_move_along_the_motion(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    static const char *const sl[] = {"arm"};
    rp_link shapes[] = {S("arm#0", capsule(0, 0, 0, 0.5, 0, 0, 0.02))};
    rp_joint_def j[] = {J("j", RP_JOINT_REVOLUTE, "base", "arm", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 1);
    rp_model *m = put_ok(st, "m", &d);
    rp_shape_put ob = {"ob", sphere(0, 1, 0, 0.1)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &ob, 1, &sc), RP_OK);
    double path[] = {0, M_PI / 2};
    /* The part, 1 from the axis, meets the obstacle (also 1 from it) when the
     * chord between them is 0.2. */
    double t_star = (M_PI / 2 - 2 * asin(0.1)) / (M_PI / 2);
    rp_motion_opts modes[] = {discrete(1e-3), certified(0)};
    for (int md = 0; md < 2; md++) {
        rp_motion_opts o = modes[md];
        o.earliest = true;
        rp_motion_result r = run(m, sc, NULL, path, 2, o, NULL);
        assert_true(r.valid);
        rp_attached at = {"part", "arm", sphere(1, 0, 0, 0.1), NULL, 0};
        rp_model *e;
        assert_int_equal(rp_model_extend(m, &at, 1, NULL, 0, &e, NULL), RP_OK);
        double first;
        r = run(e, sc, NULL, path, 2, o, &first);
        assert_false(r.valid);
        assert_int_equal(r.pair.link, 1);
        assert_int_equal(r.pair.kind, RP_PAIR_SCENE);
        assert_int_equal(r.pair.other, 0);
        assert_state_at(path, 1, 0, r.t, &first);
        if (md == 0)
            assert_true(r.t >= t_star && r.t <= t_star + 1e-3 / (M_PI / 2) + 1e-12);
        else
            assert_true(r.t <= t_star && r.t > t_star - 1e-4);
        /* Allowed to touch that obstacle: valid again. */
        rp_model_free(e);
        const char *as[] = {"part", "ob"};
        assert_int_equal(rp_model_extend(m, &at, 1, as, 1, &e, NULL), RP_OK);
        r = run(e, sc, NULL, path, 2, o, NULL);
        assert_true(r.valid);
        rp_model_free(e);
    }
    rp_store_free(st);
}

static void multi_segment_paths_report_the_segment(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    rp_shape_put p = pin("pin", 2.5);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &p, 1, &sc), RP_OK);
    double path[] = {0, 1, 2, 3, 0};
    double t_star = 0.5 - asin(0.01); /* in segment 2: 2 + t */
    double first;
    rp_motion_result r = run(m, sc, NULL, path, 5, certified(0), &first);
    assert_false(r.valid);
    assert_int_equal(r.segment, 2);
    assert_true(r.t <= t_star && r.t > t_star - 1e-4);
    assert_state_at(path, 1, 2, r.t, &first);
    r = run(m, sc, NULL, path, 5, discrete(0.01), &first);
    assert_false(r.valid);
    assert_int_equal(r.segment, 2);
    assert_true(fabs(first - 2.5) < asin(0.01));
    assert_state_at(path, 1, 2, r.t, &first);
    /* Backwards: segment 0 now runs 3 -> 2. */
    double back[] = {3, 2, 1};
    r = run(m, sc, NULL, back, 3, certified(0), &first);
    assert_int_equal(r.segment, 0);
    assert_true(r.t <= t_star && r.t > t_star - 1e-4);
    assert_state_at(back, 1, 0, r.t, &first);
    /* Past the pin on both sides but not through it: valid. */
    double around[] = {0, 2.4, 0, -3, 2.6 - 2 * M_PI};
    r = run(m, sc, NULL, around, 5, certified(0), NULL);
    assert_true(r.valid);
    r = run(m, sc, NULL, around, 5, discrete(1e-3), NULL);
    assert_true(r.valid);
    rp_store_free(st);
}

static void max_states_bounds_the_work(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    /* A pin just off the plane: the wand grazes it (0.02 - 0.01 apart at best). */
    rp_shape_put p = {"pin", sphere(cos(0.55), sin(0.55), 0.02, 0.005)};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", &p, 1, &sc), RP_OK);
    double path[] = {0, 1, -0.5};
    rp_motion_opts modes[] = {discrete(1e-3), certified(0)};
    for (int md = 0; md < 2; md++) {
        rp_motion_opts o = modes[md];
        rp_motion_result r = run(m, sc, NULL, path, 3, o, NULL);
        assert_true(r.valid);
        uint64_t n = r.states_checked;
        assert_true(n > 10);
        o.max_states = n;
        r = run(m, sc, NULL, path, 3, o, NULL);
        assert_true(r.valid);
        assert_int_equal(r.states_checked, n);
        o.max_states = n - 1;
        assert_int_equal(rp_model_check_motion(m, sc, NULL, path, 3, &o, &r, NULL), RP_ERR_LIMIT);
        o.max_states = 1;
        assert_int_equal(rp_model_check_motion(m, sc, NULL, path, 3, &o, &r, NULL), RP_ERR_LIMIT);
    }
    rp_store_free(st);
}

/* ---- certified against fine sampling on random motions ------------------------------------- */

/* base -(j0: z)-> l1 -(j1: y)-> l2 -(j2: prismatic x, [0, 0.25])-> l3
 *   -(j3: axis (0,1,1))-> l4 -(jm: x, mimic of j3)-> fing; cam fixed to l2. */
/* Whether small_arm's l4#0 is a box (a URDF <box>) instead of a sphere,
 * and the random scenes hold boxes and a floor. */
static bool with_solids;

static rp_shape box_shape(double x, double y, double z, double hx, double hy, double hz, double qw,
                          double qx, double qy, double qz)
{
    rp_box b;
    assert_int_equal(rp_box_new(V(x, y, z), V(hx, hy, hz), qw, qx, qy, qz, &b), RP_OK);
    return rp_shape_from_box(b);
}

static rp_model *small_arm(rp_store *st)
{
    static const char *const sl[] = {"base", "l1", "l2", "l3", "l4", "l4", "fing", "cam"};
    rp_shape l4 = with_solids ? box_shape(0.1, 0, 0, 0.05, 0.03, 0.04, 1, 0.2, 0.1, 0)
                              : sphere(0.1, 0, 0, 0.05);
    rp_link shapes[] = {S("base#0", sphere(0, 0, 0.1, 0.12)),
                        S("l1#0", capsule(0, 0, 0, 0, 0, 0.3, 0.05)),
                        S("l2#0", capsule(0, 0, 0, 0.4, 0, 0, 0.04)),
                        S("l3#0", capsule(0, 0, 0, 0.2, 0, 0, 0.03)),
                        S("l4#0", l4),
                        S("l4#1", capsule(0, 0, 0, 0.15, 0, 0, 0.02)),
                        S("fing#0", capsule(0, 0, 0, 0.12, 0.05, 0, 0.02)),
                        S("cam#0", sphere(0, 0, 0, 0.03))};
    rp_joint_def j[] = {
        J("j0", RP_JOINT_CONTINUOUS, "base", "l1", V(0, 0, 0.2), ZERO, AZ),
        J("j1", RP_JOINT_REVOLUTE, "l1", "l2", V(0, 0, 0.3), ZERO, AY),
        limited(J("j2", RP_JOINT_PRISMATIC, "l2", "l3", V(0.4, 0, 0), ZERO, AX), 0, 0.25),
        J("j3", RP_JOINT_REVOLUTE, "l3", "l4", V(0.2, 0, 0), V(0.3, 0, 0), V(0, 1, 1)),
        J("jm", RP_JOINT_REVOLUTE, "l4", "fing", V(0.15, 0, 0), ZERO, AX),
        J("cam", RP_JOINT_FIXED, "l2", "cam", V(0.2, 0, 0.06), ZERO, ZERO)};
    j[4].mimic = "j3";
    j[4].multiplier = -1.5;
    j[4].offset = 0.2;
    static const char *const pairs[] = {"base", "l1", "l1", "l2", "l2",
                                        "l3",   "l3", "l4", "l4", "fing"};
    rp_model_def d = kdef(shapes, sl, 8, j, 6);
    d.allowed_pairs = pairs;
    d.n_allowed = 5;
    rp_model *m = put_ok(st, "small", &d);
    assert_int_equal(rp_model_dof(m), 4);
    return m;
}

static void random_small_arm_state(test_rng *r, double *q)
{
    q[0] = rng_uniform(r, -M_PI, M_PI);
    q[1] = rng_uniform(r, -1.4, 1.4);
    q[2] = rng_uniform(r, 0, 0.25);
    q[3] = rng_uniform(r, -M_PI, M_PI);
}

static rp_transform pose(double tx, double ty, double tz, double w, double x, double y, double z)
{
    rp_transform tf;
    assert_int_equal(rp_transform_from_quaternion(V(tx, ty, tz), w, x, y, z, &tf), RP_OK);
    return tf;
}

/* Grid states of segment s (t = k/n, n from the joint step), those with
 * t < t_end; each must be clear of `margin` (FIRST report). */
static void assert_segment_clear(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                                 const double *path, size_t dof, size_t s, double t_end,
                                 double margin, double step)
{
    const double *a = path + dof * s, *b = a + dof;
    double big = 0;
    for (size_t i = 0; i < dof; i++)
        big = fmax(big, fabs(b[i] - a[i]));
    uint64_t n = (uint64_t)fmax(1, ceil(big / step));
    double q[8];
    for (uint64_t k = 0; k <= n; k++) {
        double t = (double)k / (double)n;
        if (!(t < t_end))
            break;
        state_at(path, dof, s, t, q);
        if (collides(m, sc, base, q, margin))
            fail_msg("segment %zu, t %.9g (< %.9g) within %.9g", s, t, t_end, margin);
    }
}

static void fooled_run(uint64_t seed)
{
    test_rng rng = {seed};
    rp_store *st = rp_store_new(NULL);
    rp_model *m = small_arm(st);
    enum { NOB = 90, SCENES = 10, MOTIONS = 120 };
    rp_transform base_pose = pose(0.1, -0.2, 0.05, 1, 0.05, -0.03, 0.4);
    long valid = 0, invalid_later = 0, invalid_at_start = 0, self_hits = 0, total = 0;
    long floor_hits = 0, box_link_hits = 0;
    for (int scene = 0; scene < SCENES; scene++) {
        rp_shape_put ob[NOB];
        char ids[NOB][16];
        /* Obstacles keep off the column the base and l1 occupy in every
         * state (at both base poses), so that clear states exist. */
        rp_shape column = capsule(0, 0, 0, 0, 0, 0.6, 0.15);
        rp_shape column_moved = rp_transform_shape(&base_pose, &column);
        for (int i = 0; i < NOB; i++) {
            snprintf(ids[i], sizeof ids[i], "o%d", i);
            do {
                double x = rng_uniform(&rng, -0.9, 0.9), y = rng_uniform(&rng, -0.9, 0.9),
                       z = rng_uniform(&rng, 0, 1.0), rad = rng_uniform(&rng, 0.02, 0.07);
                if (with_solids && i == 0) { /* a floor the arm can reach */
                    rp_halfspace h;
                    assert_int_equal(rp_halfspace_new(V(0, 0.05, 1), -0.25, &h), RP_OK);
                    ob[i] = P(ids[i], rp_shape_from_halfspace(h));
                } else if (with_solids && i % 3 == 0) {
                    ob[i] = P(ids[i], box_shape(x, y, z, rad, 1.5 * rad, 0.5 * rad,
                                                rng_uniform(&rng, -1, 1), rng_uniform(&rng, -1, 1),
                                                rng_uniform(&rng, -1, 1), 0.5));
                } else {
                    ob[i] = P(ids[i], i % 2 ? sphere(x, y, z, rad)
                                            : capsule(x, y, z, x + rng_uniform(&rng, -0.2, 0.2),
                                                      y + rng_uniform(&rng, -0.2, 0.2),
                                                      z + rng_uniform(&rng, -0.2, 0.2), rad));
                }
            } while (rp_shape_signed_distance(&ob[i].shape, &column) < 0.05 ||
                     rp_shape_signed_distance(&ob[i].shape, &column_moved) < 0.05);
        }
        rp_scene *sc;
        char name[16];
        snprintf(name, sizeof name, "sc%d", scene);
        assert_int_equal(rp_store_create(st, name, ob, NOB, &sc), RP_OK);
        for (int mo = 0; mo < MOTIONS; mo++) {
            size_t n_points = rng_next(&rng) % 4 == 0 ? 3 : 2;
            double path[12];
            const double tols[] = {0, 1e-4, 1e-3};
            double tol_opt = tols[rng_next(&rng) % 3], tol = tol_opt ? tol_opt : 1e-5;
            double margin = rng_uniform(&rng, 0, 0.03);
            const rp_transform *base = mo % 2 ? &base_pose : NULL;
            /* A start clear of the margin (else most motions fail at once). */
            int tries = 0;
            do {
                random_small_arm_state(&rng, path);
                if (++tries > 10000)
                    fail_msg("scene %d: no clear start", scene);
            } while (collides(m, sc, base, path, margin + tol));
            /* Every joint at once, or the prismatic joint alone over most of
             * its range, or j3 alone (with its mimic): one kind of motion
             * dominating the bound. */
            int kind = (int)(rng_next(&rng) % 4);
            for (size_t k = 1; k < n_points; k++) {
                double *q = path + 4 * k, *p = q - 4;
                memcpy(q, p, 4 * sizeof *q);
                if (kind < 2) {
                    q[0] += rng_uniform(&rng, -0.45, 0.45);
                    q[1] += rng_uniform(&rng, -0.45, 0.45);
                    q[2] = fmin(0.25, fmax(0, p[2] + rng_uniform(&rng, -0.08, 0.08)));
                    q[3] += rng_uniform(&rng, -0.45, 0.45);
                } else if (kind == 2) {
                    q[2] = p[2] < 0.125 ? rng_uniform(&rng, 0.15, 0.25) : rng_uniform(&rng, 0, 0.1);
                } else {
                    q[3] += (rng_next(&rng) % 2 ? 1 : -1) * rng_uniform(&rng, 0.3, 1.0);
                }
            }
            rp_motion_opts o = certified(tol_opt);
            o.has_margin = true;
            o.margin = margin;
            o.ignore_limits = true;
            double first[4];
            rp_motion_result c = run(m, sc, base, path, n_points, o, first);
            total++;
            if (c.valid) {
                valid++;
                /* A fine discrete check agrees... */
                rp_motion_opts d = discrete(1e-4);
                d.has_margin = true;
                d.margin = margin;
                d.ignore_limits = true;
                rp_motion_result r = run(m, sc, base, path, n_points, d, NULL);
                if (!r.valid)
                    fail_msg("scene %d motion %d: certified valid, discrete finds segment %zu t "
                             "%.9g (pair %zu-%zu, %.9g, margin %.9g)",
                             scene, mo, r.segment, r.t, r.pair.link, r.pair.other, r.pair.distance,
                             margin);
                /* ... and the clearance holds by tolerance/2 along a grid. */
                for (size_t s = 0; s + 1 < n_points; s++)
                    assert_segment_clear(m, sc, base, path, 4, s, 2, margin + tol / 2 - 1e-9, 2e-3);
                continue;
            }
            assert_false(c.limits);
            assert_state_at(path, 4, c.segment, c.t, first);
            /* Every earlier state is clear by tolerance/2 on a fine grid. */
            for (size_t s = 0; s < c.segment; s++)
                assert_segment_clear(m, sc, base, path, 4, s, 2, margin + tol / 2 - 1e-9, 2e-4);
            assert_segment_clear(m, sc, base, path, 4, c.segment, c.t, margin + tol / 2 - 1e-9,
                                 2e-4);
            /* At t some pair is within the tolerance of the margin (the reported
             * one), and after a proved stretch none is below tolerance/2. */
            rp_check_pair cp;
            double dmin = closest(m, sc, base, first, &cp);
            assert_true(dmin - margin < tol);
            assert_true(c.pair.distance - margin < tol);
            if (!(c.pair.distance >= dmin))
                fail_msg("scene %d motion %d: reported pair (%zu %d %zu) at %.17g, closest (%zu %d "
                         "%zu) at %.17g; seg %zu t %.17g",
                         scene, mo, c.pair.link, (int)c.pair.kind, c.pair.other, c.pair.distance,
                         cp.link, (int)cp.kind, cp.other, dmin, c.segment, c.t);
            if (c.segment > 0 || c.t > 0) {
                invalid_later++;
                if (!(dmin - margin >= tol / 2 - 1e-9))
                    fail_msg(
                        "scene %d motion %d: at segment %zu t %.9g clearance %.3g < tol/2 %.3g",
                        scene, mo, c.segment, c.t, dmin - margin, tol / 2);
            } else {
                invalid_at_start++;
            }
            self_hits += c.pair.kind == RP_PAIR_SELF;
            floor_hits += with_solids && c.pair.kind == RP_PAIR_SCENE &&
                          c.pair.other == rp_scene_find(sc, "o0");
            box_link_hits += with_solids && c.pair.link == 4; /* l4#0 */
            /* The reported pair is a real pair at that state. */
            rp_check_opts all = {RP_REPORT_ALL, true, margin + tol, NULL, NULL, 0};
            rp_check_result ar;
            assert_int_equal(rp_model_check_joints(m, sc, base, first, &all, &ar), RP_OK);
            bool seen = false;
            for (size_t v = 0; v < ar.n_violations; v++)
                if (ar.violations[v].link == c.pair.link && ar.violations[v].kind == c.pair.kind &&
                    ar.violations[v].other == c.pair.other) {
                    assert_near(ar.violations[v].distance, c.pair.distance, 1e-12);
                    seen = true;
                }
            assert_true(seen);
            rp_check_result_free(&ar);
        }
    }
    printf("certified: %ld motions, %ld valid, %ld invalid later, %ld at the start, %ld self, "
           "%ld floor, %ld box link\n",
           total, valid, invalid_later, invalid_at_start, self_hits, floor_hits, box_link_hits);
    if (with_solids) /* the floor and the box link were met, not just present */
        assert_true(floor_hits > 5 && box_link_hits > 5);
    /* Meaningful only when both outcomes are common. */
    assert_true(valid > total / 5);
    assert_true(invalid_later > total / 5);
    assert_true(self_hits > 10);
    rp_store_free(st);
}

static void certified_is_never_fooled_by_random_motions(void **state)
{
    (void)state;
    fooled_run(31337);
}

/* The same with a box link and scenes of boxes above a floor. */
static void certified_is_never_fooled_among_boxes_above_a_floor(void **state)
{
    (void)state;
    with_solids = true;
    fooled_run(4242);
    with_solids = false;
}

/* ---- discrete checks in lanes against one state at a time ------------------------------ */

/* The discrete mode as documented, one state at a time with
 * rp_model_check_joints (the library checks up to four states in one walk
 * of the scene): waypoints, then each segment coarse to fine, then with
 * `earliest` the scan in path order; max_states counted per state. */
typedef struct ref_motion {
    const rp_model *m;
    const rp_scene *sc;
    const rp_transform *base;
    const double *path;
    size_t dof;
    double margin;
    uint64_t max;
    rp_motion_result r;
    double q[8];
} ref_motion;

/* 1: the state violates the margin (the result says where), 0: clear,
 * -1: over max_states. */
static int ref_state(ref_motion *c, size_t seg, uint64_t idx, uint64_t n)
{
    if (c->max && c->r.states_checked >= c->max)
        return -1;
    c->r.states_checked++;
    double t = (double)idx / (double)n, q[8];
    const double *a = c->path + seg * c->dof, *b = a + c->dof;
    for (size_t i = 0; i < c->dof; i++)
        q[i] = t == 1.0 ? b[i] : a[i] + t * (b[i] - a[i]);
    rp_check_opts o = {RP_REPORT_FIRST, true, c->margin, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check_joints(c->m, c->sc, c->base, q, &o, &r), RP_OK);
    int bad = r.collision;
    if (bad) {
        c->r.valid = false;
        c->r.segment = seg;
        c->r.t = t;
        c->r.pair = r.violations[0];
        memcpy(c->q, q, sizeof q);
    }
    rp_check_result_free(&r);
    return bad;
}

static uint64_t ref_steps(const ref_motion *c, size_t seg, double res)
{
    double big = 0;
    for (size_t i = 0; i < c->dof; i++)
        big = fmax(big, fabs(c->path[(seg + 1) * c->dof + i] - c->path[seg * c->dof + i]));
    return (uint64_t)fmax(1, ceil(big / res));
}

/* Returns the status rp_model_check_motion must return. */
static rp_status ref_discrete(ref_motion *c, size_t n_points, double res, bool earliest)
{
    memset(&c->r, 0, sizeof c->r);
    c->r.valid = true;
    int bad = 0;
    size_t seg = 0;
    uint64_t idx = 0;
    for (size_t k = 0; k < n_points && !bad; k++) {
        bool last = k == n_points - 1;
        seg = last ? k - 1 : k;
        bad = ref_state(c, seg, last, 1);
        idx = last ? ref_steps(c, seg, res) : 0;
    }
    for (size_t s = 0; s + 1 < n_points && !bad; s++) {
        uint64_t n = ref_steps(c, s, res);
        unsigned level = 0;
        while (!bad && ((uint64_t)1 << (level + 1)) <= n) {
            level++;
            for (uint64_t j = 1; j < ((uint64_t)1 << level) && !bad; j += 2)
                bad = ref_state(c, s, idx = j * n >> level, n);
        }
        for (uint64_t j = 0; j < ((uint64_t)1 << level) && !bad; j++)
            for (uint64_t k = (j * n >> level) + 1; k < ((j + 1) * n >> level) && !bad; k++)
                bad = ref_state(c, s, idx = k, n);
        seg = s;
    }
    if (bad < 0)
        return RP_ERR_LIMIT;
    if (bad && earliest) {
        rp_motion_result found = c->r;
        double q[8];
        memcpy(q, c->q, sizeof q);
        int again = 0;
        for (size_t s = 0; s <= seg && !again; s++) {
            uint64_t n = ref_steps(c, s, res), end = s == seg ? idx : n;
            for (uint64_t k = 1; k < end && !again; k++)
                again = ref_state(c, s, k, n);
        }
        if (again < 0)
            return RP_ERR_LIMIT;
        if (!again) {
            found.states_checked = c->r.states_checked;
            c->r = found;
            memcpy(c->q, q, sizeof q);
        }
    }
    return RP_OK;
}

static void discrete_checks_in_lanes_equal_one_state_at_a_time(void **state)
{
    (void)state;
    test_rng rng = {4242};
    rp_store *st = rp_store_new(NULL);
    rp_model *m = small_arm(st);
    rp_transform base_pose = pose(0.1, -0.2, 0.05, 1, 0.05, -0.03, 0.4);
    const int sizes[] = {3, 40, 400};
    long compared = 0, invalid = 0, limited = 0, self_pairs = 0, prescreened = 0;
    for (int scene = 0; scene < 3; scene++) {
        int nob = sizes[scene];
        rp_shape_put *ob = calloc((size_t)nob, sizeof *ob);
        char(*ids)[16] = calloc((size_t)nob, sizeof *ids);
        assert_non_null(ob);
        assert_non_null(ids);
        for (int i = 0; i < nob; i++) {
            snprintf(ids[i], sizeof ids[i], "o%d", i);
            double x = rng_uniform(&rng, -0.9, 0.9), y = rng_uniform(&rng, -0.9, 0.9),
                   z = rng_uniform(&rng, -0.3, 1.0), rad = rng_uniform(&rng, 0.005, 0.04);
            ob[i] = P(ids[i], i % 2 ? sphere(x, y, z, rad)
                                    : capsule(x, y, z, x + rng_uniform(&rng, -0.1, 0.1),
                                              y + rng_uniform(&rng, -0.1, 0.1),
                                              z + rng_uniform(&rng, -0.1, 0.1), rad));
        }
        rp_scene *sc;
        char name[16];
        snprintf(name, sizeof name, "lanes%d", scene);
        assert_int_equal(rp_store_create(st, name, ob, (size_t)nob, &sc), RP_OK);
        for (int mo = 0; mo < 400; mo++) {
            size_t n_points = 2 + rng_next(&rng) % 3;
            double path[16];
            random_small_arm_state(&rng, path);
            for (size_t k = 1; k < n_points; k++)
                for (size_t i = 0; i < 4; i++)
                    path[4 * k + i] = path[4 * (k - 1) + i] + rng_uniform(&rng, -0.6, 0.6);
            rp_motion_opts o = discrete(rng_uniform(&rng, 0.01, 0.2));
            o.has_margin = true;
            o.margin = rng_next(&rng) % 5 == 0 ? 0.0 : rng_uniform(&rng, 0, 0.04);
            o.ignore_limits = true;
            o.earliest = rng_next(&rng) % 2;
            o.max_states = rng_next(&rng) % 3 == 0 ? 1 + rng_next(&rng) % 40 : 0;
            const rp_transform *base = mo % 2 ? &base_pose : NULL;
            ref_motion c = {m, sc, base, path, 4, o.margin, o.max_states, {0}, {0}};
            rp_status want = ref_discrete(&c, n_points, o.resolution, o.earliest);
            rp_motion_result r;
            double first[4] = {0};
            rp_status got = rp_model_check_motion(m, sc, base, path, n_points, &o, &r, first);
            assert_int_equal(got, want);
            compared++;
            if (got != RP_OK) {
                limited++;
                continue;
            }
            assert_int_equal(r.valid, c.r.valid);
            assert_int_equal(r.states_checked, c.r.states_checked);
            if (r.valid)
                continue;
            invalid++;
            self_pairs += r.pair.kind == RP_PAIR_SELF;
            assert_int_equal(r.segment, c.r.segment);
            assert_true(r.t == c.r.t);
            assert_int_equal(r.pair.link, c.r.pair.link);
            assert_int_equal(r.pair.kind, c.r.pair.kind);
            assert_int_equal(r.pair.other, c.r.pair.other);
            assert_memory_equal(&r.pair.distance, &c.r.pair.distance, sizeof(double));
            assert_memory_equal(first, c.q, sizeof first);

            /* Certified with fast_reject: the waypoints, then the
             * segments' midpoints, as discrete states; a violation among
             * them is the result. */
            rp_motion_opts oc = certified(0);
            oc.has_margin = true;
            oc.margin = o.margin;
            oc.ignore_limits = true;
            oc.fast_reject = true;
            memset(&c.r, 0, sizeof c.r);
            c.r.valid = true;
            int pre = 0;
            for (size_t k = 0; k < n_points && !pre; k++)
                pre = ref_state(&c, k == n_points - 1 ? k - 1 : k, k == n_points - 1, 1);
            for (size_t s = 0; s + 1 < n_points && !pre; s++)
                pre = ref_state(&c, s, 1, 2);
            assert_int_equal(rp_model_check_motion(m, sc, base, path, n_points, &oc, &r, first),
                             RP_OK);
            if (!pre) {
                assert_true(r.states_checked > c.r.states_checked);
                continue;
            }
            prescreened++;
            assert_false(r.valid);
            assert_int_equal(r.states_checked, c.r.states_checked);
            assert_int_equal(r.segment, c.r.segment);
            assert_true(r.t == c.r.t);
            assert_int_equal(r.pair.link, c.r.pair.link);
            assert_int_equal(r.pair.other, c.r.pair.other);
            assert_memory_equal(&r.pair.distance, &c.r.pair.distance, sizeof(double));
            assert_memory_equal(first, c.q, sizeof first);
        }
        free(ob);
        free(ids);
    }
    /* Every kind of outcome came up. */
    assert_true(invalid > 100);
    assert_true(compared - invalid - limited > 100);
    assert_true(limited > 20);
    assert_true(self_pairs > 0);
    assert_true(prescreened > 100);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(waypoints_out_of_limits_make_the_motion_invalid),
        cmocka_unit_test(skip_ends_leaves_the_end_waypoints_unchecked),
        cmocka_unit_test(the_l2_resolution_counts_the_euclidean_joint_step),
        cmocka_unit_test(discrete_finds_a_thin_obstacle_only_at_a_fine_enough_resolution),
        cmocka_unit_test(discrete_counts_every_state_of_a_valid_path),
        cmocka_unit_test(coarse_to_fine_finds_a_middle_obstacle_after_three_states),
        cmocka_unit_test(earliest_reports_the_first_invalid_state_along_the_path),
        cmocka_unit_test(certified_finds_the_first_self_contact_of_folding_links),
        cmocka_unit_test(certified_bounds_are_tight_for_prismatic_and_mimic_joints),
        cmocka_unit_test(certified_follows_mimic_joints_at_their_multiplier),
        cmocka_unit_test(certified_accounts_for_prismatic_extension_under_rotation),
        cmocka_unit_test(attached_shapes_move_along_the_motion),
        cmocka_unit_test(multi_segment_paths_report_the_segment),
        cmocka_unit_test(max_states_bounds_the_work),
        cmocka_unit_test(certified_is_never_fooled_by_random_motions),
        cmocka_unit_test(certified_is_never_fooled_among_boxes_above_a_floor),
        cmocka_unit_test(discrete_checks_in_lanes_equal_one_state_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
