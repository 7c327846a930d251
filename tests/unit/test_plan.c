/* SPDX-License-Identifier: MIT */
/*
 * Planning (rp_model_plan, include/repose/plan.h) on problems with known
 * answers: a free straight line (one edge), a wall with a gap (solved in
 * both edge modes, every edge confirmed by an independent dense check at a
 * 1e-4 joint step), a goal inside an obstacle and a start in collision
 * (reported with the pair), an enclosed goal (timeout, then max_states), a
 * goal set with an invalid member, a continuous joint (the path wraps the
 * short way, or goes the long way round when the short one is blocked),
 * `ignore` honoured, the same seed giving the same path bit for bit, and
 * the stop callback.  The nearest-neighbour forest against brute force,
 * wrapped coordinates and ties included.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"

#include "repose/plan.h"
#include "test_joints.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- nearest neighbours ------------------------------------------------------------ */

static double wrapped(double a, double b)
{
    double d = fmod(fabs(b - a), 2 * M_PI);
    return d > M_PI ? 2 * M_PI - d : d;
}

static void nearest_neighbours_equal_brute_force(void **state)
{
    (void)state;
    test_rng r = {99};
    enum { DIM = 5, N = 3000 };
    bool wraps[DIM] = {false, true, false, true, false};
    rp_nn *nn = rp_nn_new(DIM, wraps);
    assert_non_null(nn);
    static double pts[N][DIM];
    double d2;
    assert_int_equal(rp_nn_nearest(nn, pts[0], &d2), SIZE_MAX);
    for (size_t i = 0; i < N; i++) {
        for (int d = 0; d < DIM; d++) {
            /* A coarse grid: many ties.  Wrapped values anywhere, even past
             * pi (they are compared modulo 2 pi). */
            double v = (double)(rng_next(&r) % 9) * 0.25;
            pts[i][d] = wraps[d] ? v * 3.0 - 6.0 : v;
        }
        assert_true(rp_nn_add(nn, pts[i]));
        if (i % 97 != 0 && i + 1 != N)
            continue;
        for (int k = 0; k < 40; k++) {
            double q[DIM];
            for (int d = 0; d < DIM; d++)
                q[d] = rng_uniform(&r, -7.0, 7.0);
            size_t best = SIZE_MAX;
            double bd = INFINITY;
            for (size_t j = 0; j <= i; j++) {
                double s = 0.0;
                for (int d = 0; d < DIM; d++) {
                    double g = wraps[d] ? wrapped(q[d], pts[j][d]) : q[d] - pts[j][d];
                    s += g * g;
                }
                if (s < bd - 1e-12) {
                    bd = s;
                    best = j;
                }
            }
            size_t got = rp_nn_nearest(nn, q, &d2);
            assert_true(fabs(d2 - bd) <= 1e-9);
            /* Ties within rounding: the lowest index among the equals. */
            if (got != best) {
                double s = 0.0;
                for (int d = 0; d < DIM; d++) {
                    double g = wraps[d] ? wrapped(q[d], pts[got][d]) : q[d] - pts[got][d];
                    s += g * g;
                }
                assert_true(fabs(s - bd) <= 1e-9);
            }
        }
    }
    rp_nn_free(nn);
}

/* ---- models and scenes --------------------------------------------------------------- */

/* A puck: a sphere of radius 0.05 moved in the plane by two prismatic
 * joints, x and y, each within [-1, 1]. */
static rp_model *puck(rp_store *st)
{
    static const char *const sl[] = {"p"};
    rp_link shapes[] = {S("p#0", sphere(0, 0, 0, 0.05))};
    rp_joint_def j[] = {limited(J("x", RP_JOINT_PRISMATIC, "base", "mx", ZERO, ZERO, AX), -1, 1),
                        limited(J("y", RP_JOINT_PRISMATIC, "mx", "p", ZERO, ZERO, AY), -1, 1)};
    rp_model_def d = kdef(shapes, sl, 1, j, 2);
    return put_ok(st, "puck", &d);
}

static rp_shape box(double cx, double cy, double hx, double hy)
{
    rp_box b;
    assert_int_equal(rp_box_new((rp_vec3){cx, cy, 0}, (rp_vec3){hx, hy, 0.2}, 1, 0, 0, 0, &b),
                     RP_OK);
    return rp_shape_from_box(b);
}

/* A wall along x = 0 from y = -1.2 to 1.2 with a gap for y in [0.5, 0.7]. */
static void wall_with_gap(rp_store *st, const char *name)
{
    rp_shape_put p[] = {P("low", box(0, -0.35, 0.05, 0.85)), P("high", box(0, 0.95, 0.05, 0.25))};
    assert_int_equal(rp_store_create(st, name, p, 2, NULL), RP_OK);
}

/* The independent check: every edge sampled at a joint step of at most
 * 1e-4 (max-norm) is clear of the margin, each sample checked on its own. */
static void assert_path_clear(const rp_model *m, const rp_scene *sc, const rp_plan_result *r,
                              const char *const *ignore, size_t n_ignore)
{
    size_t dof = rp_model_dof(m);
    rp_check_opts co;
    memset(&co, 0, sizeof co);
    co.report = RP_REPORT_FIRST;
    co.ignore = ignore;
    co.n_ignore = n_ignore;
    assert_true(r->n_points >= 2);
    for (size_t i = 0; i + 1 < r->n_points; i++) {
        const double *a = r->path + i * dof, *b = a + dof;
        double big = 0.0;
        for (size_t d = 0; d < dof; d++)
            big = fmax(big, fabs(b[d] - a[d]));
        size_t n = (size_t)ceil(big / 1e-4);
        n = n < 1 ? 1 : n;
        double q[8];
        for (size_t k = 0; k <= n; k++) {
            for (size_t d = 0; d < dof; d++)
                q[d] = a[d] + (b[d] - a[d]) * ((double)k / (double)n);
            assert_int_equal(rp_model_limit_violation(m, q, 0), SIZE_MAX);
            rp_check_result cr;
            memset(&cr, 0, sizeof cr);
            assert_int_equal(rp_model_check_joints(m, sc, NULL, q, &co, &cr), RP_OK);
            if (cr.collision)
                fail_msg("edge %zu collides at %zu/%zu", i, k, n);
            rp_check_result_free(&cr);
        }
    }
}

static rp_plan_opts opts_with(rp_motion_mode edges, uint64_t seed)
{
    rp_plan_opts o;
    rp_plan_opts_init(&o);
    o.edges = edges;
    o.seed = seed;
    o.timeout_ms = 20000; /* a bound for a broken planner, not a measure */
    return o;
}

/* ---- known answers --------------------------------------------------------------------- */

static void a_free_straight_line_is_one_edge(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    assert_int_equal(rp_store_create(st, "empty", NULL, 0, NULL), RP_OK);
    double start[2] = {-0.8, -0.3}, goal[2] = {0.7, 0.6};
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 1);
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, rp_store_find(st, "empty"), NULL, start, goal, 1, &o, &r),
                     RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_SOLVED);
    assert_int_equal(r.n_points, 2);
    assert_memory_equal(r.path, start, sizeof start);
    assert_memory_equal(r.path + 2, goal, sizeof goal);
    assert_int_equal(r.goal, 0);
    assert_true(r.edges_checked >= 1 && r.states_checked >= 2 && r.nodes >= 2);
    rp_plan_result_free(&r);
    rp_store_free(st);
}

static void a_wall_with_a_gap_is_passed_in_both_modes(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    wall_with_gap(st, "wall");
    const rp_scene *sc = rp_store_find(st, "wall");
    double start[2] = {-0.8, -0.8}, goal[2] = {0.8, -0.8};
    for (int mode = 0; mode < 2; mode++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            rp_plan_opts o = opts_with(mode ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE, seed);
            o.resolution = 0.005; /* finer than the puck's 0.1 m: the wall is 0.1 thick */
            o.simplify = seed % 2 == 0;
            o.max_step = seed == 3 ? 0.1 : 0.0;
            rp_plan_result r;
            assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &r), RP_OK);
            assert_int_equal(r.outcome, RP_PLAN_SOLVED);
            assert_true(r.n_points >= 3); /* through the gap: not one edge */
            assert_memory_equal(r.path, start, sizeof start);
            assert_memory_equal(r.path + 2 * (r.n_points - 1), goal, sizeof goal);
            if (o.max_step > 0)
                for (size_t i = 0; i + 1 < r.n_points; i++)
                    for (int d = 0; d < 2; d++)
                        assert_true(fabs(r.path[2 * (i + 1) + d] - r.path[2 * i + d]) <=
                                    0.1 * (1 + 1e-12));
            assert_path_clear(m, sc, &r, NULL, 0);
            rp_plan_result_free(&r);
        }
    }
    rp_store_free(st);
}

static void invalid_ends_are_reported_with_their_pair(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    wall_with_gap(st, "wall");
    const rp_scene *sc = rp_store_find(st, "wall");
    double free_q[2] = {-0.8, -0.8}, in_wall[2] = {0.0, -0.5}, out_of_limits[2] = {1.5, 0};
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 1);
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, sc, NULL, free_q, in_wall, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_GOAL_INVALID);
    assert_false(r.limits);
    assert_int_equal(r.pair.kind, RP_PAIR_SCENE);
    assert_string_equal(rp_scene_id_at(sc, r.pair.other), "low");
    assert_true(r.pair.distance < 0);
    assert_null(r.path);
    assert_int_equal(rp_model_plan(m, sc, NULL, in_wall, free_q, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_START_INVALID);
    assert_string_equal(rp_scene_id_at(sc, r.pair.other), "low");
    assert_int_equal(rp_model_plan(m, sc, NULL, free_q, out_of_limits, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_GOAL_INVALID);
    assert_true(r.limits);
    assert_int_equal(r.limit_joint, 0);
    /* A goal set: the invalid member is passed over. */
    double goals[6] = {0.0, -0.5, 1.5, 0.0, 0.8, 0.8};
    assert_int_equal(rp_model_plan(m, sc, NULL, free_q, goals, 3, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_SOLVED);
    assert_int_equal(r.goal, 2);
    assert_memory_equal(r.path + 2 * (r.n_points - 1), goals + 4, 2 * sizeof(double));
    assert_path_clear(m, sc, &r, NULL, 0);
    rp_plan_result_free(&r);
    rp_store_free(st);
}

static void an_enclosed_goal_times_out_or_runs_out_of_states(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    /* A closed pen around (0.6, 0.6). */
    rp_shape_put p[] = {P("w", box(0.35, 0.6, 0.05, 0.35)), P("e", box(0.85, 0.6, 0.05, 0.35)),
                        P("s", box(0.6, 0.35, 0.35, 0.05)), P("n", box(0.6, 0.85, 0.35, 0.05))};
    assert_int_equal(rp_store_create(st, "pen", p, 4, NULL), RP_OK);
    const rp_scene *sc = rp_store_find(st, "pen");
    double start[2] = {-0.8, -0.8}, goal[2] = {0.6, 0.6};
    rp_plan_opts o = opts_with(RP_MOTION_DISCRETE, 7);
    o.timeout_ms = 150;
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_TIMEOUT);
    assert_null(r.path);
    assert_true(r.ms >= 150);
    assert_true(r.iterations > 0);
    o.timeout_ms = 0;
    o.max_states = 5000;
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_MAX_STATES);
    assert_true(r.states_checked >= 5000);
    rp_store_free(st);
}

/* One continuous joint turning a capsule arm from radius 0.5 to 1. */
static rp_model *wand(rp_store *st)
{
    static const char *const sl[] = {"arm"};
    rp_link shapes[] = {S("arm#0", capsule(0.5, 0, 0, 1, 0, 0, 0.02))};
    rp_joint_def j[] = {J("j", RP_JOINT_CONTINUOUS, "base", "arm", ZERO, ZERO, AZ)};
    rp_model_def d = kdef(shapes, sl, 1, j, 1);
    return put_ok(st, "wand", &d);
}

static double travel(const rp_plan_result *r)
{
    double s = 0.0;
    for (size_t i = 0; i + 1 < r->n_points; i++)
        s += fabs(r->path[i + 1] - r->path[i]);
    return s;
}

static void a_continuous_joint_wraps_the_short_way_unless_blocked(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = wand(st);
    assert_int_equal(rp_store_create(st, "open", NULL, 0, NULL), RP_OK);
    double start = 3.0, goal = -3.0;
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 3);
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, rp_store_find(st, "open"), NULL, &start, &goal, 1, &o, &r),
                     RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_SOLVED);
    assert_true(r.path[0] == 3.0);
    /* Through pi: 2 pi - 6 = 0.283 rad, ending at the goal plus 2 pi. */
    assert_true(fabs(travel(&r) - (2 * M_PI - 6.0)) < 1e-9);
    assert_true(fabs(r.path[r.n_points - 1] - (goal + 2 * M_PI)) < 1e-9);
    rp_plan_result_free(&r);
    /* A post at angle pi blocks the short way: the long way round. */
    rp_shape_put post = P("post", sphere(-0.75, 0, 0, 0.05));
    assert_int_equal(rp_store_create(st, "post", &post, 1, NULL), RP_OK);
    const rp_scene *sc = rp_store_find(st, "post");
    assert_int_equal(rp_model_plan(m, sc, NULL, &start, &goal, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_SOLVED);
    assert_true(fabs(travel(&r) - 6.0) < 1e-9);
    assert_true(fabs(r.path[r.n_points - 1] - goal) < 1e-9);
    assert_path_clear(m, sc, &r, NULL, 0);
    rp_plan_result_free(&r);
    rp_store_free(st);
}

static void ignore_is_honoured(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    assert_int_equal(rp_store_create(st, "cell", NULL, 0, NULL), RP_OK);
    rp_shape_put part = P("slab", box(0, 0, 0.05, 1.5));
    rp_object_put obj = {"crate", rp_transform_identity(), &part, 1};
    assert_int_equal(
        rp_store_put_objects(st, "cell", NULL, 0, &obj, 1, NULL, false, NULL, NULL, NULL), RP_OK);
    const rp_scene *sc = rp_store_find(st, "cell");
    double start[2] = {-0.8, 0}, goal[2] = {0.8, 0};
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 5);
    o.timeout_ms = 100;
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_TIMEOUT); /* the slab spans the whole space */
    static const char *const ignore[] = {"crate"};
    o.ignore = ignore;
    o.n_ignore = 1;
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &r), RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_SOLVED);
    assert_int_equal(r.n_points, 2);
    assert_path_clear(m, sc, &r, ignore, 1);
    rp_plan_result_free(&r);
    rp_store_free(st);
}

static void the_same_seed_gives_the_same_path(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    wall_with_gap(st, "wall");
    const rp_scene *sc = rp_store_find(st, "wall");
    double start[2] = {-0.8, -0.8}, goal[2] = {0.8, -0.8};
    rp_plan_result a, b;
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 42);
    o.simplify = false; /* the raw tree path: seeds show more */
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &a), RP_OK);
    assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &b), RP_OK);
    assert_int_equal(a.outcome, RP_PLAN_SOLVED);
    assert_int_equal(a.n_points, b.n_points);
    assert_memory_equal(a.path, b.path, 2 * a.n_points * sizeof(double));
    assert_int_equal(a.iterations, b.iterations);
    assert_int_equal(a.states_checked, b.states_checked);
    bool differs = false;
    for (uint64_t seed = 43; seed < 48 && !differs; seed++) {
        rp_plan_result c;
        o.seed = seed;
        assert_int_equal(rp_model_plan(m, sc, NULL, start, goal, 1, &o, &c), RP_OK);
        differs = c.n_points != a.n_points ||
                  memcmp(c.path, a.path, 2 * a.n_points * sizeof(double)) != 0;
        rp_plan_result_free(&c);
    }
    assert_true(differs);
    rp_plan_result_free(&a);
    rp_plan_result_free(&b);
    rp_store_free(st);
}

static int stop_after(void *ctx)
{
    int *left = ctx;
    return --*left < 0;
}

static void the_stop_callback_ends_the_plan(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    wall_with_gap(st, "wall");
    double start[2] = {-0.8, -0.8}, goal[2] = {0.6, 0.6};
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 1);
    int left = 3;
    o.stop = stop_after;
    o.stop_ctx = &left;
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, rp_store_find(st, "wall"), NULL, start, goal, 1, &o, &r),
                     RP_OK);
    assert_int_equal(r.outcome, RP_PLAN_STOPPED);
    assert_null(r.path);
    rp_store_free(st);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = puck(st);
    double start[2] = {0, 0}, goal[2] = {0.5, 0.5}, bad[2] = {NAN, 0};
    rp_plan_opts o = opts_with(RP_MOTION_CERTIFIED, 1);
    rp_plan_result r;
    assert_int_equal(rp_model_plan(m, NULL, NULL, start, goal, 0, &o, &r), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_plan(m, NULL, NULL, bad, goal, 1, &o, &r), RP_ERR_NONFINITE);
    assert_int_equal(rp_model_plan(m, NULL, NULL, start, bad, 1, &o, &r), RP_ERR_NONFINITE);
    o.range = -1;
    assert_int_equal(rp_model_plan(m, NULL, NULL, start, goal, 1, &o, &r), RP_ERR_INVALID_ARG);
    o.range = 0;
    o.max_step = INFINITY;
    assert_int_equal(rp_model_plan(m, NULL, NULL, start, goal, 1, &o, &r), RP_ERR_INVALID_ARG);
    /* A prismatic joint without limits: nowhere to sample it. */
    static const char *const sl[] = {"p"};
    rp_link shapes[] = {S("p#0", sphere(0, 0, 0, 0.05))};
    rp_joint_def j[] = {J("x", RP_JOINT_PRISMATIC, "base", "p", ZERO, ZERO, AX)};
    rp_model_def d = kdef(shapes, sl, 1, j, 1);
    rp_model *slide = put_ok(st, "slide", &d);
    rp_plan_opts_init(&o);
    assert_int_equal(rp_model_plan(slide, NULL, NULL, start, goal, 1, &o, &r), RP_ERR_INVALID_ARG);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nearest_neighbours_equal_brute_force),
        cmocka_unit_test(a_free_straight_line_is_one_edge),
        cmocka_unit_test(a_wall_with_a_gap_is_passed_in_both_modes),
        cmocka_unit_test(invalid_ends_are_reported_with_their_pair),
        cmocka_unit_test(an_enclosed_goal_times_out_or_runs_out_of_states),
        cmocka_unit_test(a_continuous_joint_wraps_the_short_way_unless_blocked),
        cmocka_unit_test(ignore_is_honoured),
        cmocka_unit_test(the_same_seed_gives_the_same_path),
        cmocka_unit_test(the_stop_callback_ends_the_plan),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
