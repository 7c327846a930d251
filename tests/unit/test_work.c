/* SPDX-License-Identifier: MIT */
/*
 * Work budgets (rp_work, include/repose/scene.h): the tree walks of
 * queries, checks, batches and motions count what they do and stop once
 * their meter's limit is reached, failing with RP_ERR_WORK and keeping no
 * result; a budget that covers the work changes nothing in the result.
 * The daemon's -32004 for walks that outgrow their estimate rests on this
 * (proto/PROTOCOL.md, the cost model).
 */
#include <stdio.h>
#include <stdlib.h>

#include "repose/scene.h"
#include "test_joints.h"
#include "test_shapes.h"
#include "test_util.h"

/* How far past its limit a stopped call may have gone: the tests of one
 * scene shape against every shape of a robot (a leaf), plus the visit. */
#define SLICE 128

/* A scene of n small random spheres and capsules in a 2 m cube. */
static rp_scene *random_scene(rp_store *st, const char *name, size_t n, uint64_t seed)
{
    test_rng r = {seed};
    rp_shape_put *puts = calloc(n, sizeof *puts);
    char(*ids)[24] = calloc(n, sizeof *ids);
    assert_non_null(puts);
    assert_non_null(ids);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "s%zu", i);
        double x = rng_uniform(&r, -1, 1), y = rng_uniform(&r, -1, 1), z = rng_uniform(&r, 0, 2);
        double rad = rng_uniform(&r, 0.005, 0.03);
        puts[i].id = ids[i];
        puts[i].shape = i % 2 ? sphere(x, y, z, rad)
                              : capsule(x, y, z, x + rng_uniform(&r, -0.1, 0.1),
                                        y + rng_uniform(&r, -0.1, 0.1), z, rad);
    }
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, name, puts, n, &sc), RP_OK);
    free(puts);
    free(ids);
    return sc;
}

/* A three-joint arm of nine shapes standing in the middle of the cube. */
static rp_model *arm(rp_store *st)
{
    static const rp_link shapes[] = {
        {"b0", 0, {RP_SHAPE_SPHERE, .sphere = {{0, 0, 0.1}, 0.1}}},
        {"u0", 0, {RP_SHAPE_CAPSULE, .capsule = {{0, 0, 0}, {0, 0, 0.5}, 0.05}}},
        {"u1", 0, {RP_SHAPE_SPHERE, .sphere = {{0, 0, 0.5}, 0.06}}},
        {"f0", 0, {RP_SHAPE_CAPSULE, .capsule = {{0, 0, 0}, {0.5, 0, 0}, 0.04}}},
        {"f1", 0, {RP_SHAPE_SPHERE, .sphere = {{0.5, 0, 0}, 0.05}}},
        {"f2", 0, {RP_SHAPE_SPHERE, .sphere = {{0.25, 0, 0}, 0.05}}},
        {"h0", 0, {RP_SHAPE_CAPSULE, .capsule = {{0, 0, 0}, {0.2, 0, 0}, 0.03}}},
        {"h1", 0, {RP_SHAPE_SPHERE, .sphere = {{0.2, 0, 0}, 0.04}}},
        {"h2", 0, {RP_SHAPE_SPHERE, .sphere = {{0.1, 0.05, 0}, 0.03}}}};
    static const char *const sl[] = {"base", "upper", "upper", "fore", "fore",
                                     "fore", "hand",  "hand",  "hand"};
    rp_joint_def j[] = {J("j0", RP_JOINT_REVOLUTE, "base", "upper", V(0, 0, 0.8), ZERO, AZ),
                        J("j1", RP_JOINT_REVOLUTE, "upper", "fore", V(0, 0, 0.5), ZERO, AY),
                        J("j2", RP_JOINT_REVOLUTE, "fore", "hand", V(0.5, 0, 0), ZERO, AY)};
    static const char *const pairs[] = {"base", "upper", "upper", "fore", "fore", "hand"};
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = shapes;
    d.n_links = 9;
    d.shape_links = sl;
    d.joints = j;
    d.n_joints = 3;
    d.allowed_pairs = pairs;
    d.n_allowed = 3;
    d.self_collision = true;
    d.safety_margin = 0.02;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "arm", &d, &m, NULL), RP_OK);
    return m;
}

/* A call that failed on its budget: it spent about its limit, no more
 * than a slice past it. */
static void assert_stopped(rp_status st, const rp_work *w)
{
    assert_int_equal(st, RP_ERR_WORK);
    if (w->spent + 3 < w->limit || w->spent > w->limit + SLICE)
        fail_msg("spent %llu of a limit of %llu", (unsigned long long)w->spent,
                 (unsigned long long)w->limit);
}

static void same_query(const rp_query_result *a, const rp_query_result *b)
{
    assert_int_equal(a->has_min, b->has_min);
    if (a->has_min) {
        assert_int_equal(a->nearest.query, b->nearest.query);
        assert_int_equal(a->nearest.shape, b->nearest.shape);
        assert_same_bits(a->nearest.distance, b->nearest.distance);
    }
    assert_int_equal(a->n_pairs, b->n_pairs);
    for (size_t i = 0; i < a->n_pairs; i++) {
        assert_int_equal(a->pairs[i].shape, b->pairs[i].shape);
        assert_same_bits(a->pairs[i].distance, b->pairs[i].distance);
    }
}

static void a_query_stops_within_a_slice_of_its_budget(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = random_scene(st, "cube", 4000, 11);
    test_rng r = {5};
    int walked = 0;
    for (int round = 0; round < 60; round++) {
        rp_shape qs[3];
        size_t nq = 1 + (size_t)round % 3;
        for (size_t k = 0; k < nq; k++) {
            double x = rng_uniform(&r, -1.5, 1.5), y = rng_uniform(&r, -1.5, 1.5);
            double z = rng_uniform(&r, -0.5, 2.5), len = rng_uniform(&r, 0, round % 4 ? 0.3 : 3);
            qs[k] = round % 2 ? sphere(x, y, z, rng_uniform(&r, 0, 0.4))
                              : capsule(x, y, z, x + len, y, z, rng_uniform(&r, 0, 0.1));
        }
        rp_work unlimited = {0, 0};
        rp_query q = {.shapes = qs, .n_shapes = nq, .work = &unlimited};
        q.collect = round % 3 == 0;
        q.threshold = 0.05;
        q.first_only = round % 6 == 3;
        q.no_nearest = q.collect && round % 5 == 0;
        rp_query_result full, again;
        assert_int_equal(rp_scene_query(sc, &q, &full), RP_OK);
        walked += unlimited.spent > 0; /* 0: the root's box is out of reach */

        /* Enough: the same result, the same count. */
        rp_work enough = {unlimited.spent + 2, 0};
        q.work = &enough;
        assert_int_equal(rp_scene_query(sc, &q, &again), RP_OK);
        same_query(&full, &again);
        assert_int_equal(enough.spent, unlimited.spent);
        rp_query_result_free(&again);

        /* Half: stopped near the limit, nothing reported. */
        if (unlimited.spent >= 16) {
            rp_work half = {unlimited.spent / 2, 0};
            q.work = &half;
            assert_stopped(rp_scene_query(sc, &q, &again), &half);
            assert_false(again.has_min);
            assert_int_equal(again.n_pairs, 0);
            assert_null(again.pairs);
        }
        rp_query_result_free(&full);
    }
    assert_true(walked > 40);
    rp_store_free(st);
}

/* A distance against a box costs what its kernel costs: a scan over 12
 * boxes (below the tree's scan size) charges 12 units for a sphere, 12 x 8
 * for a capsule; over 12 spheres, 12 for either. */
static void box_distances_are_charged_by_their_kernel(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put boxes[12], balls[12];
    char ids[12][8];
    for (int k = 0; k < 12; k++) {
        snprintf(ids[k], sizeof ids[k], "b%d", k);
        rp_box b;
        assert_int_equal(rp_box_new((rp_vec3){k, 0, 0}, (rp_vec3){0.2, 0.3, 0.4}, 1, 0.1, 0, 0, &b),
                         RP_OK);
        boxes[k] = (rp_shape_put){ids[k], rp_shape_from_box(b)};
        balls[k] = (rp_shape_put){ids[k], sphere(k, 0, 0, 0.3)};
    }
    rp_scene *sb, *ss;
    assert_int_equal(rp_store_create(st, "boxes", boxes, 12, &sb), RP_OK);
    assert_int_equal(rp_store_create(st, "balls", balls, 12, &ss), RP_OK);
    rp_shape qs[2] = {sphere(3, 2, 0, 0.1), capsule(0, 2, 0, 5, 2, 0, 0.1)};
    uint64_t want[2][2] = {{12, 12 * 8}, {12, 12}};
    const rp_scene *scenes[2] = {sb, ss};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 2; k++) {
            rp_work w = {0, 0};
            rp_query q = {.shapes = &qs[k], .n_shapes = 1, .work = &w};
            rp_query_result res;
            assert_int_equal(rp_scene_query(scenes[s], &q, &res), RP_OK);
            assert_int_equal(w.spent, want[s][k]);
            rp_query_result_free(&res);
        }
    rp_store_free(st);
}

static void a_meter_shared_by_calls_counts_them_together(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = random_scene(st, "cube", 3000, 12);
    rp_shape a = sphere(0.1, 0.2, 1.0, 0.2), b = capsule(-1, -1, 0, 1, 1, 2, 0.01);
    rp_work wa = {0, 0}, wb = {0, 0}, both = {0, 0};
    rp_query_result res;
    rp_query qa = {.shapes = &a, .n_shapes = 1, .work = &wa};
    rp_query qb = {.shapes = &b, .n_shapes = 1, .work = &wb};
    assert_int_equal(rp_scene_query(sc, &qa, &res), RP_OK);
    rp_query_result_free(&res);
    assert_int_equal(rp_scene_query(sc, &qb, &res), RP_OK);
    rp_query_result_free(&res);
    qa.work = qb.work = &both;
    assert_int_equal(rp_scene_query(sc, &qa, &res), RP_OK);
    rp_query_result_free(&res);
    assert_int_equal(rp_scene_query(sc, &qb, &res), RP_OK);
    rp_query_result_free(&res);
    assert_int_equal(both.spent, wa.spent + wb.spent);

    /* A meter already at its limit stops the next walk at its first step. */
    rp_work spent_out = {wa.spent, wa.spent};
    qa.work = &spent_out;
    assert_int_equal(rp_scene_query(sc, &qa, &res), RP_ERR_WORK);
    assert_int_equal(spent_out.spent, wa.spent);
    /* And the limit does not outlive the call: the next one without a
     * meter walks the whole tree. */
    qa.work = NULL;
    assert_int_equal(rp_scene_query(sc, &qa, &res), RP_OK);
    assert_true(res.has_min);
    rp_query_result_free(&res);
    rp_store_free(st);
}

static void same_check(const rp_check_result *a, const rp_check_result *b)
{
    assert_int_equal(a->collision, b->collision);
    assert_int_equal(a->has_min, b->has_min);
    if (a->has_min) {
        assert_int_equal(a->closest.link, b->closest.link);
        assert_int_equal(a->closest.kind, b->closest.kind);
        assert_int_equal(a->closest.other, b->closest.other);
        assert_same_bits(a->closest.distance, b->closest.distance);
    }
    assert_int_equal(a->n_violations, b->n_violations);
    for (size_t i = 0; i < a->n_violations; i++) {
        assert_int_equal(a->violations[i].other, b->violations[i].other);
        assert_same_bits(a->violations[i].distance, b->violations[i].distance);
    }
}

static void checks_in_every_report_mode_stop_within_a_slice(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = random_scene(st, "cube", 5000, 13);
    rp_model *m = arm(st);
    test_rng r = {6};
    int stopped = 0;
    for (int round = 0; round < 90; round++) {
        double q[3] = {rng_uniform(&r, -3, 3), rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2)};
        rp_transform base = rp_transform_identity();
        base.t = V(rng_uniform(&r, -0.5, 0.5), rng_uniform(&r, -0.5, 0.5), 0);
        rp_work unlimited = {0, 0};
        rp_check_opts o = {(rp_report)(round % 3), round % 2 == 0, 0.1, &unlimited, NULL, 0};
        rp_check_result full, again;
        assert_int_equal(rp_model_check_joints(m, sc, &base, q, &o, &full), RP_OK);

        rp_work enough = {unlimited.spent + 2, 0};
        o.work = &enough;
        assert_int_equal(rp_model_check_joints(m, sc, &base, q, &o, &again), RP_OK);
        same_check(&full, &again);
        assert_int_equal(enough.spent, unlimited.spent);
        rp_check_result_free(&again);

        if (unlimited.spent >= 16) {
            rp_work half = {unlimited.spent / 2, 0};
            o.work = &half;
            assert_stopped(rp_model_check_joints(m, sc, &base, q, &o, &again), &half);
            assert_false(again.collision);
            assert_int_equal(again.n_violations, 0);
            assert_null(again.violations);
            stopped++;
        }
        rp_check_result_free(&full);
    }
    assert_true(stopped > 60); /* the arm's walks do work in most rounds */
    rp_store_free(st);
}

static void a_batch_out_of_work_keeps_no_result(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = random_scene(st, "cube", 5000, 14);
    rp_model *m = arm(st);
    enum { N = 100 };
    double q[3 * N];
    test_rng r = {7};
    for (size_t i = 0; i < 3 * N; i++)
        q[i] = rng_uniform(&r, -3, 3);
    for (int rep = 0; rep < 3; rep++) {
        rp_work unlimited = {0, 0};
        rp_check_opts o = {(rp_report)rep, false, 0, &unlimited, NULL, 0};
        rp_check_result full[N], again[N];
        size_t failed = 7;
        assert_int_equal(rp_model_check_joints_batch(m, sc, NULL, q, N, &o, full, &failed), RP_OK);
        /* One vector at a time spends what the batch spent. */
        rp_work sum = {0, 0};
        o.work = &sum;
        for (size_t i = 0; i < N; i++) {
            rp_check_result one;
            assert_int_equal(rp_model_check_joints(m, sc, NULL, q + 3 * i, &o, &one), RP_OK);
            same_check(&full[i], &one);
            rp_check_result_free(&one);
        }
        if (rep != RP_REPORT_FIRST) /* FIRST shares walks among vectors */
            assert_int_equal(sum.spent, unlimited.spent);

        rp_work enough = {unlimited.spent + 2, 0};
        o.work = &enough;
        assert_int_equal(rp_model_check_joints_batch(m, sc, NULL, q, N, &o, again, &failed), RP_OK);
        for (size_t i = 0; i < N; i++) {
            same_check(&full[i], &again[i]);
            rp_check_result_free(&again[i]);
        }

        /* Out of work: no result to free (ASan and valgrind would see one
         * left behind), failed is 0. */
        rp_work half = {unlimited.spent / 2, 0};
        o.work = &half;
        assert_stopped(rp_model_check_joints_batch(m, sc, NULL, q, N, &o, again, &failed), &half);
        assert_int_equal(failed, 0);
        assert_int_equal(again[0].n_violations, 0);
        for (size_t i = 0; i < N; i++)
            rp_check_result_free(&full[i]);
    }
    rp_store_free(st);
}

static void motions_stop_on_their_budget(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = random_scene(st, "cube", 3000, 15);
    rp_model *m = arm(st);
    test_rng r = {8};
    int invalid = 0;
    for (int round = 0; round < 24; round++) {
        double path[9];
        for (size_t i = 0; i < 9; i++)
            path[i] = rng_uniform(&r, -1.5, 1.5);
        rp_work unlimited = {0, 0};
        rp_motion_opts o;
        memset(&o, 0, sizeof o);
        o.mode = round % 2 ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE;
        o.resolution = 0.05;
        o.has_margin = true;
        o.margin = round % 4 < 2 ? 0.0 : -0.5; /* some motions pass */
        o.work = &unlimited;
        rp_motion_result full, again;
        double at[3], at2[3];
        assert_int_equal(rp_model_check_motion(m, sc, NULL, path, 3, &o, &full, at), RP_OK);
        invalid += !full.valid;

        rp_work enough = {unlimited.spent + 2, 0};
        o.work = &enough;
        assert_int_equal(rp_model_check_motion(m, sc, NULL, path, 3, &o, &again, at2), RP_OK);
        assert_int_equal(again.valid, full.valid);
        assert_int_equal(again.states_checked, full.states_checked);
        assert_int_equal(enough.spent, unlimited.spent);
        if (!full.valid) {
            assert_int_equal(again.segment, full.segment);
            assert_same_bits(again.t, full.t);
        }

        if (unlimited.spent >= 16) {
            rp_work half = {unlimited.spent / 2, 0};
            o.work = &half;
            assert_stopped(rp_model_check_motion(m, sc, NULL, path, 3, &o, &again, at2), &half);
            assert_false(again.valid);
        }
    }
    assert_true(invalid > 0 && invalid < 24);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_query_stops_within_a_slice_of_its_budget),
        cmocka_unit_test(a_meter_shared_by_calls_counts_them_together),
        cmocka_unit_test(box_distances_are_charged_by_their_kernel),
        cmocka_unit_test(checks_in_every_report_mode_stop_within_a_slice),
        cmocka_unit_test(a_batch_out_of_work_keeps_no_result),
        cmocka_unit_test(motions_stop_on_their_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
