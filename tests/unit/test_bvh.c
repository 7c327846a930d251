/* SPDX-License-Identifier: MIT */
/*
 * The scene's bounding-volume hierarchy must give exactly what a brute-force
 * scan gives: the same nearest pair (distance bit for bit, tie rule on ids)
 * and the same set of pairs below a threshold, on random scenes, after
 * random interleavings of puts and removes, and in the degenerate cases
 * (empty scene, one shape, every shape at one point, deep penetrations).
 * It must also actually prune: a query on a large scene evaluates far fewer
 * shapes than the scene holds.  Shapes near the largest double, whose boxes
 * overflow to infinity, must not break it either.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "scene/scene_int.h"
#include "test_bvh.h"

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

/* Random sphere or capsule centred in a cube of half-size `half`; radii and
 * lengths up to `size`.  Coordinates are sometimes snapped to a coarse grid
 * so that exact ties between pairs occur. */
static rp_shape random_shape(test_rng *r, double half, double size, bool grid)
{
    rp_vec3 c =
        V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
    double rad = rng_uniform(r, 0, size);
    if (grid) {
        c = V(round(c.x), round(c.y), round(c.z));
        rad = round(rad * 4) / 4;
    }
    rp_shape s;
    if (rng_next(r) & 1) {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = c;
        s.sphere.radius = rad;
    } else {
        rp_vec3 d = V(rng_uniform(r, -size, size), rng_uniform(r, -size, size),
                      rng_uniform(r, -size, size));
        if (grid)
            d = V(round(d.x), 0, 0);
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = c;
        s.capsule.b = V(c.x + d.x, c.y + d.y, c.z + d.z);
        s.capsule.radius = rad;
    }
    return s;
}

static void tree_equals_brute_force_on_random_scenes(void **state)
{
    (void)state;
    test_rng r = {101};
    for (int scene = 0; scene < 60; scene++) {
        rp_store *st = rp_store_new(NULL);
        size_t n = (size_t)(rng_next(&r) % 1500);
        bool grid = scene % 3 == 0;
        double half = scene % 2 ? 5.0 : 1.0;
        rp_shape_put *p = malloc((n ? n : 1) * sizeof *p);
        char(*ids)[16] = malloc((n ? n : 1) * 16);
        for (size_t i = 0; i < n; i++) {
            snprintf(ids[i], 16, "s%zu", (i * 7919) % (n + 1)); /* ids not in index order */
            p[i].id = ids[i];
            p[i].shape = random_shape(&r, half, 0.4, grid);
        }
        rp_scene *sc;
        assert_int_equal(rp_store_create(st, "x", p, n, &sc), RP_OK);
        for (int k = 0; k < 40; k++) {
            rp_shape q = random_shape(&r, half * 1.2, 0.5, grid);
            check_shape_query(sc, &q, rng_uniform(&r, -0.5, 1.0));
        }
        free(p);
        free(ids);
        rp_store_free(st);
    }
}

static void tree_follows_interleaved_puts_and_removes(void **state)
{
    (void)state;
    test_rng r = {102};
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "x", NULL, 0, &sc), RP_OK);
    char ids[64][16];
    for (int step = 0; step < 600; step++) {
        uint64_t op = rng_next(&r) % 3;
        size_t k = 1 + (size_t)(rng_next(&r) % 64);
        if (op < 2) { /* put: new ids and replacements */
            rp_shape_put p[64];
            for (size_t i = 0; i < k; i++) {
                snprintf(ids[i], sizeof ids[i], "id%llu",
                         (unsigned long long)(rng_next(&r) % 2000));
                p[i].id = ids[i];
                p[i].shape = random_shape(&r, 3.0, 0.3, step % 5 == 0);
            }
            assert_int_equal(rp_scene_put(sc, p, k, NULL, NULL), RP_OK);
        } else {
            const char *rm[64];
            for (size_t i = 0; i < k; i++) {
                snprintf(ids[i], sizeof ids[i], "id%llu",
                         (unsigned long long)(rng_next(&r) % 2000));
                rm[i] = ids[i];
            }
            assert_int_equal(rp_scene_remove(sc, rm, k, NULL, NULL, NULL), RP_OK);
        }
        /* Query after most mutations, so the tree is rebuilt often, but not
         * after every one (several mutations between rebuilds too). */
        if (step % 3 != 1) {
            rp_shape q = random_shape(&r, 3.5, 0.5, false);
            check_shape_query(sc, &q, rng_uniform(&r, -0.3, 0.8));
        }
    }
    rp_store_free(st);
}

static void degenerate_scenes_agree_with_brute_force(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *empty, *one, *point;
    assert_int_equal(rp_store_create(st, "empty", NULL, 0, &empty), RP_OK);
    rp_shape q = random_shape(&(test_rng){7}, 1, 0.3, false);
    double d = INFINITY;
    size_t idx = 0;
    bool found = true;
    rp_scene_nearest_(empty, &q, &d, &idx, &found);
    assert_false(found);

    rp_shape_put single = {"only", q};
    assert_int_equal(rp_store_create(st, "one", &single, 1, &one), RP_OK);
    check_shape_query(one, &q, 0.0);

    /* 200 shapes at the same point with the same radius: every distance
     * ties, the smallest id must win, all are below a positive threshold. */
    rp_shape_put p[200];
    char ids[200][16];
    for (int i = 0; i < 200; i++) {
        snprintf(ids[i], sizeof ids[i], "p%03d", 199 - i);
        p[i].id = ids[i];
        p[i].shape.kind = RP_SHAPE_SPHERE;
        p[i].shape.sphere.center = V(1, 2, 3);
        p[i].shape.sphere.radius = 0.5;
    }
    assert_int_equal(rp_store_create(st, "point", p, 200, &point), RP_OK);
    rp_shape far = {.kind = RP_SHAPE_SPHERE, .sphere = {{4, 6, 3}, 0.5}};
    d = INFINITY;
    rp_scene_nearest_(point, &far, &d, &idx, &found);
    assert_true(found);
    assert_true(d == 4.0);
    assert_string_equal(rp_scene_id_at(point, idx), "p000");
    check_shape_query(point, &far, 4.5);
    check_shape_query(point, &p[0].shape, 0.0); /* deep penetration everywhere */
    rp_store_free(st);
}

static void deep_penetration_inside_overlapping_boxes_is_found(void **state)
{
    (void)state;
    /* A big sphere whose box overlaps many small ones: the deepest
     * penetration is with a large shape far inside, which only the
     * radius part of the node bound keeps from being pruned. */
    test_rng r = {103};
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[400];
    char ids[400][16];
    for (int i = 0; i < 400; i++) {
        snprintf(ids[i], sizeof ids[i], "b%d", i);
        p[i].id = ids[i];
        p[i].shape.kind = RP_SHAPE_SPHERE;
        p[i].shape.sphere.center =
            V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2));
        p[i].shape.sphere.radius = i == 399 ? 1.5 : rng_uniform(&r, 0, 0.05);
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "deep", p, 400, &sc), RP_OK);
    for (int k = 0; k < 200; k++) {
        rp_shape q = {
            .kind = RP_SHAPE_SPHERE,
            .sphere = {V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2)),
                       rng_uniform(&r, 0.5, 1.0)}};
        check_shape_query(sc, &q, rng_uniform(&r, -1.5, 0.0));
    }
    rp_store_free(st);
}

static void query_on_a_large_scene_evaluates_few_shapes(void **state)
{
    (void)state;
    /* 20,000 small shapes in a 10 m cube; a query should look at a small
     * fraction of them (a brute-force scan evaluates all). */
    test_rng r = {104};
    size_t n = 20000;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[16] = malloc(n * 16);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 16, "s%zu", i);
        p[i].id = ids[i];
        p[i].shape = random_shape(&r, 5.0, 0.05, false);
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "big", p, n, &sc), RP_OK);
    size_t worst = 0;
    for (int k = 0; k < 100; k++) {
        rp_shape q = random_shape(&r, 5.0, 0.1, false);
        double d = INFINITY;
        size_t idx = 0, evaluated = 0;
        bool found;
        rp_scene_nearest_counted_(sc, &q, &d, &idx, &found, &evaluated);
        assert_true(found);
        if (evaluated > worst)
            worst = evaluated;
    }
    assert_true(worst < n / 20);
    assert_true(rp_scene_index_bytes(sc) > 0);
    assert_true(rp_scene_index_bytes(sc) < n * 64);
    free(p);
    free(ids);
    rp_store_free(st);
}

/* Uniform in [-h, h) for any finite h (h * u: 2h would overflow). */
static double sym_uniform(test_rng *r, double h)
{
    return h * rng_uniform(r, -1.0, 1.0);
}

/* A sphere or capsule at one of three scales: centres in +-1e308 with radii
 * up to 1.7e308 (boxes overflow; the issue's distribution), +-1e200 (boxes
 * beyond float range), or an ordinary few metres.  Capsules are short
 * relative to their scale half the time, so that the tree has structure. */
static rp_shape huge_or_not_shape(test_rng *r)
{
    static const double half[3] = {1e308, 1e200, 5.0};
    static const double rmax[3] = {1.7e308, 1e200, 0.4};
    int k = (int)(rng_next(r) % 3);
    rp_vec3 c = V(sym_uniform(r, half[k]), sym_uniform(r, half[k]), sym_uniform(r, half[k]));
    rp_shape s;
    double rad = rng_uniform(r, 0, 1) * (rng_next(r) & 1 ? rmax[k] : rmax[k] * 1e-3);
    if (rng_next(r) & 1) {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = c;
        s.sphere.radius = rad;
        return s;
    }
    double len = rng_next(r) & 1 ? half[k] : half[k] * 1e-3;
    s.kind = RP_SHAPE_CAPSULE;
    s.capsule.a = c;
    s.capsule.b = V(fmax(-half[k], fmin(half[k], c.x + sym_uniform(r, len))),
                    fmax(-half[k], fmin(half[k], c.y + sym_uniform(r, len))),
                    fmax(-half[k], fmin(half[k], c.z + sym_uniform(r, len))));
    s.capsule.radius = rad;
    return s;
}

/* The pairs below `threshold`, by brute force: their number and the
 * smallest distance over every pair, which must all be finite (a NaN
 * distance compares false with every margin: the pair would be missed by
 * the tree and brute force alike). */
static size_t brute_below(const rp_scene *sc, const rp_shape *q, size_t nq, double threshold,
                          double *min_d)
{
    size_t count = 0;
    *min_d = INFINITY;
    for (size_t i = 0; i < nq; i++)
        for (size_t e = 0; e < rp_scene_shape_count(sc); e++) {
            double d = rp_shape_signed_distance(&q[i], SCENE_SHAPE(sc, e));
            if (!isfinite(d))
                fail_msg("query %zu, shape %zu: distance %a", i, e, d);
            count += d < threshold;
            *min_d = fmin(*min_d, d);
        }
    return count;
}

/* Boxes of shapes near DBL_MAX overflow to infinity (centre 1e308 + radius
 * 1.7e308) and every box beyond float range is infinite; before the fix
 * their midpoints were NaN and the scene check missed pairs whose distance
 * was NaN.  Nearest, below-threshold, scene queries with a threshold (scene
 * check with a margin) and robot checks must still equal brute force. */
static void shapes_near_the_largest_double_agree_with_brute_force(void **state)
{
    (void)state;
    test_rng r = {105};
    rp_store *st = rp_store_new(NULL);
    size_t n = 300;
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[16] = malloc(n * 16);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 16, "h%zu", (i * 7919) % (n + 1));
        p[i].id = ids[i];
        p[i].shape = huge_or_not_shape(&r);
        assert_int_equal(rp_shape_validate(&p[i].shape), RP_OK);
    }
    /* The issue's pair: this shape and the query below penetrate by
     * 1.4e308 (centres +-1e308, radius 1.7e308); it was NaN and missed. */
    p[0].shape.kind = RP_SHAPE_SPHERE;
    p[0].shape.sphere.center = V(1e308, 0, 0);
    p[0].shape.sphere.radius = 1.7e308;
    /* Boxes infinite at both ends of an axis (their midpoints are NaN). */
    p[1].shape =
        (rp_shape){.kind = RP_SHAPE_CAPSULE, .capsule = {V(-1e308, 0, 0), V(1e308, 0, 0), 1.7e308}};
    p[2].shape = (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {V(0, 1e308, 0), DBL_MAX}};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "huge", p, n, &sc), RP_OK);
    assert_int_equal(rp_scene_prepare(sc), RP_OK);
    assert_true(rp_scene_index_bytes(sc) > 0); /* the tree, not a scan */

    rp_shape issue = {.kind = RP_SHAPE_SPHERE, .sphere = {V(-1e308, 0, 0), 1.7e308}};
    rp_query iq = {.shapes = &issue, .n_shapes = 1, .collect = true, .threshold = 0.0};
    rp_query_result ir;
    assert_int_equal(rp_scene_query(sc, &iq, &ir), RP_OK);
    bool seen = false;
    for (size_t i = 0; i < ir.n_pairs; i++)
        if (ir.pairs[i].shape == 0) {
            seen = true;
            assert_true(ir.pairs[i].distance < -1.39e308 && ir.pairs[i].distance > -1.41e308);
        }
    assert_true(seen);
    rp_query_result_free(&ir);

    static const double thresholds[] = {-DBL_MAX, -1e308, -1e200, -1.0,    0.0,
                                        1.0,      1e200,  1e308,  DBL_MAX, INFINITY};
    size_t nt = sizeof thresholds / sizeof thresholds[0];
    for (int k = 0; k < 300; k++) {
        rp_shape q = huge_or_not_shape(&r);
        check_shape_query(sc, &q, thresholds[(size_t)k % nt]);
    }

    /* rp_scene_query with a threshold (scene.check) over a few query shapes. */
    for (int k = 0; k < 40; k++) {
        rp_shape qs[3] = {huge_or_not_shape(&r), huge_or_not_shape(&r), huge_or_not_shape(&r)};
        double threshold = thresholds[(size_t)k % nt];
        rp_query q = {.shapes = qs, .n_shapes = 3, .collect = true, .threshold = threshold};
        rp_query_result res;
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
        double min_d;
        size_t want = brute_below(sc, qs, 3, threshold, &min_d);
        assert_int_equal(res.n_pairs, want);
        for (size_t i = 0; i < res.n_pairs; i++) {
            assert_true(res.pairs[i].distance < threshold);
            assert_same_bits(res.pairs[i].distance,
                             rp_shape_signed_distance(&qs[res.pairs[i].query],
                                                      SCENE_SHAPE(sc, res.pairs[i].shape)));
        }
        assert_true(res.has_min);
        assert_same_bits(res.nearest.distance, min_d);
        rp_query_result_free(&res);
    }

    /* A robot of such shapes on the base frame (identity pose: the world
     * shapes are the link shapes bit for bit). */
    rp_link links[6];
    char lids[6][8];
    rp_shape world[6];
    for (int i = 0; i < 6; i++) {
        snprintf(lids[i], sizeof lids[i], "l%d", i);
        world[i] = huge_or_not_shape(&r);
        links[i] = (rp_link){lids[i], -1, world[i]};
    }
    rp_model_def def = {.links = links, .n_links = 6};
    rp_model *m;
    rp_model_error err;
    assert_int_equal(rp_store_model_put(st, "bot", &def, &m, &err), RP_OK);
    for (size_t t = 0; t < nt; t++) {
        if (!isfinite(thresholds[t]))
            continue; /* margins are finite */
        rp_check_opts o = {RP_REPORT_ALL, true, thresholds[t], NULL, NULL, 0};
        rp_check_result res;
        assert_int_equal(rp_model_check(m, sc, NULL, NULL, 0, &o, &res), RP_OK);
        double min_d;
        size_t want = brute_below(sc, world, 6, thresholds[t], &min_d);
        assert_int_equal(res.n_violations, want);
        assert_int_equal(res.collision, want > 0);
        assert_true(res.has_min);
        assert_same_bits(res.closest.distance, min_d);
        rp_check_result_free(&res);
        o.report = RP_REPORT_FIRST;
        assert_int_equal(rp_model_check(m, sc, NULL, NULL, 0, &o, &res), RP_OK);
        assert_int_equal(res.collision, want > 0);
        rp_check_result_free(&res);
    }
    free(p);
    free(ids);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tree_equals_brute_force_on_random_scenes),
        cmocka_unit_test(tree_follows_interleaved_puts_and_removes),
        cmocka_unit_test(degenerate_scenes_agree_with_brute_force),
        cmocka_unit_test(deep_penetration_inside_overlapping_boxes_is_found),
        cmocka_unit_test(query_on_a_large_scene_evaluates_few_shapes),
        cmocka_unit_test(shapes_near_the_largest_double_agree_with_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
