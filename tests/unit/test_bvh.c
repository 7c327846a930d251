/*
 * The scene's bounding-volume hierarchy must give exactly what a brute-force
 * scan gives: the same nearest pair (distance bit for bit, tie rule on ids)
 * and the same set of pairs below a threshold, on random scenes, after
 * random interleavings of puts and removes, and in the degenerate cases
 * (empty scene, one shape, every shape at one point, deep penetrations).
 * It must also actually prune: a query on a large scene evaluates far fewer
 * shapes than the scene holds.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "scene/scene_int.h"

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
    rp_vec3 c = V(rng_uniform(r, -half, half), rng_uniform(r, -half, half),
                  rng_uniform(r, -half, half));
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

/* Brute-force nearest with the tie rule: smallest distance, then id. */
static bool brute_nearest(const rp_scene *sc, const rp_shape *q, double *d_out, size_t *idx)
{
    bool found = false;
    for (size_t i = 0; i < rp_scene_shape_count(sc); i++) {
        double d = rp_shape_signed_distance(q, rp_scene_shape_at(sc, i));
        if (!found || d < *d_out ||
            (d == *d_out && strcmp(rp_scene_id_at(sc, i), rp_scene_id_at(sc, *idx)) < 0)) {
            *d_out = d;
            *idx = i;
            found = true;
        }
    }
    return found;
}

typedef struct hits {
    unsigned char *seen;
    double *dist;
    size_t count;
} hits;

static bool record(void *ctx, size_t index, double distance)
{
    hits *h = ctx;
    assert_false(h->seen[index]); /* each shape at most once */
    h->seen[index] = 1;
    h->dist[index] = distance;
    h->count++;
    return true;
}

/* Checks nearest and below-threshold for one query against brute force. */
static void check_query(const rp_scene *sc, const rp_shape *q, double threshold)
{
    double bd = 0;
    size_t bi = 0;
    bool bf = brute_nearest(sc, q, &bd, &bi);
    double td = INFINITY;
    size_t ti = 0;
    bool found;
    rp_scene_nearest_(sc, q, &td, &ti, &found);
    assert_int_equal(found, bf);
    if (bf) {
        assert_same_bits(td, bd);
        assert_string_equal(rp_scene_id_at(sc, ti), rp_scene_id_at(sc, bi));
    }

    size_t n = rp_scene_shape_count(sc);
    hits h = {calloc(n + 1, 1), calloc(n + 1, sizeof(double)), 0};
    assert_true(rp_scene_below_(sc, q, threshold, record, &h));
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        double d = rp_shape_signed_distance(q, rp_scene_shape_at(sc, i));
        if (d < threshold) {
            want++;
            assert_true(h.seen[i]);
            assert_same_bits(h.dist[i], d);
        } else {
            assert_false(h.seen[i]);
        }
    }
    assert_int_equal(h.count, want);
    free(h.seen);
    free(h.dist);
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
        char (*ids)[16] = malloc((n ? n : 1) * 16);
        for (size_t i = 0; i < n; i++) {
            snprintf(ids[i], 16, "s%zu", (i * 7919) % (n + 1)); /* ids not in index order */
            p[i].id = ids[i];
            p[i].shape = random_shape(&r, half, 0.4, grid);
        }
        rp_scene *sc;
        assert_int_equal(rp_store_create(st, "x", p, n, &sc), RP_OK);
        for (int k = 0; k < 40; k++) {
            rp_shape q = random_shape(&r, half * 1.2, 0.5, grid);
            check_query(sc, &q, rng_uniform(&r, -0.5, 1.0));
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
            check_query(sc, &q, rng_uniform(&r, -0.3, 0.8));
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
    check_query(one, &q, 0.0);

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
    check_query(point, &far, 4.5);
    check_query(point, &p[0].shape, 0.0); /* deep penetration everywhere */
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
        p[i].shape.sphere.center = V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2),
                                     rng_uniform(&r, -2, 2));
        p[i].shape.sphere.radius = i == 399 ? 1.5 : rng_uniform(&r, 0, 0.05);
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "deep", p, 400, &sc), RP_OK);
    for (int k = 0; k < 200; k++) {
        rp_shape q = {.kind = RP_SHAPE_SPHERE,
                      .sphere = {V(rng_uniform(&r, -2, 2), rng_uniform(&r, -2, 2),
                                   rng_uniform(&r, -2, 2)),
                                 rng_uniform(&r, 0.5, 1.0)}};
        check_query(sc, &q, rng_uniform(&r, -1.5, 0.0));
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
    char (*ids)[16] = malloc(n * 16);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tree_equals_brute_force_on_random_scenes),
        cmocka_unit_test(tree_follows_interleaved_puts_and_removes),
        cmocka_unit_test(degenerate_scenes_agree_with_brute_force),
        cmocka_unit_test(deep_penetration_inside_overlapping_boxes_is_found),
        cmocka_unit_test(query_on_a_large_scene_evaluates_few_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
