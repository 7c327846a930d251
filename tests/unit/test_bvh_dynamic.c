/* SPDX-License-Identifier: MIT */
/*
 * The scene's tree is maintained by the mutations (bvh.c): after any
 * interleaving of puts (new ids, small and large moves, bulk puts), removes
 * and whole-content replacements, queries must still equal a brute-force
 * scan bit for bit (distance, chosen id, tie rule), and the tree must keep
 * its invariants (rp_bvh_check_).  Its height must stay logarithmic under
 * adversarial insertion orders (sorted along an axis, clustered, every
 * shape at one point, one at a time), queries must not write to the scene,
 * and the store must stay within its memory budget of 150 bytes per shape
 * at 100k shapes, tree included.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "scene/scene_int.h"
#include "test_bvh.h"

/* The height bound asserted: 2 log2(n) (the AVL invariant gives 1.44). */
#define HEIGHT_FACTOR 2.0

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

/* Whether random_shape also makes boxes (a quarter of its shapes), for the
 * runs with solids; half-spaces come from random_plane. */
static bool mix_boxes;

/* A random box: centre in the cube of half-size `half`, half extents up to
 * size/2 (one of them zero now and then: a rectangle), any rotation or,
 * on the grid, none. */
static rp_shape random_box(test_rng *r, double half, double size, bool grid)
{
    rp_vec3 c =
        V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
    rp_vec3 h = V(rng_uniform(r, 0, size / 2), rng_uniform(r, 0, size / 2),
                  rng_next(r) % 8 ? rng_uniform(r, 0, size / 2) : 0.0);
    double q[4] = {1, 0, 0, 0};
    if (grid) {
        c = V(round(c.x), round(c.y), round(c.z));
        h = V(round(h.x * 4) / 4, round(h.y * 4) / 4, round(h.z * 4) / 4);
    } else {
        for (int i = 0; i < 4; i++)
            q[i] = rng_uniform(r, -1, 1);
    }
    rp_box b;
    if (rp_box_new(c, h, q[0], q[1], q[2], q[3], &b) != RP_OK)
        rp_box_new(c, h, 1, 0, 0, 0, &b); /* (a zero quaternion drawn) */
    return rp_shape_from_box(b);
}

/* A random half-space: a floor or wall (axis normal) or an oblique plane,
 * its boundary inside the cube of half-size `half`. */
static rp_shape random_plane(test_rng *r, double half)
{
    rp_vec3 n;
    if (rng_next(r) & 1) {
        int axis = (int)(rng_next(r) % 3);
        double sign = rng_next(r) & 1 ? 1.0 : -1.0;
        n = V(axis == 0 ? sign : 0, axis == 1 ? sign : 0, axis == 2 ? sign : 0);
    } else {
        n = V(rng_uniform(r, -1, 1), rng_uniform(r, -1, 1), rng_uniform(r, -1, 1) + 0.01);
    }
    rp_halfspace h;
    assert_int_equal(rp_halfspace_new(n, rng_uniform(r, -half, -half / 2), &h), RP_OK);
    return rp_shape_from_halfspace(h);
}

/* A random sphere or capsule (or box, with mix_boxes) in a cube of
 * half-size `half`, radii and lengths up to `size`; with `grid`,
 * coordinates on a coarse grid so that exact ties between pairs occur. */
static rp_shape random_shape(test_rng *r, double half, double size, bool grid)
{
    if (mix_boxes && rng_next(r) % 4 == 0)
        return random_box(r, half, size, grid);
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

/* The shape moved by up to `step` along each axis, its radius scaled by a
 * factor in [0.5, 1.5): small steps mostly stay inside the parent's box,
 * large ones leave it. */
static rp_shape moved_shape(test_rng *r, const rp_shape *s, double step)
{
    rp_vec3 d =
        V(rng_uniform(r, -step, step), rng_uniform(r, -step, step), rng_uniform(r, -step, step));
    double f = rng_uniform(r, 0.5, 1.5);
    rp_shape m = *s;
    if (m.kind == RP_SHAPE_BOX) {
        m.box.center = V(m.box.center.x + d.x, m.box.center.y + d.y, m.box.center.z + d.z);
        m.box.half_extents =
            V(m.box.half_extents.x * f, m.box.half_extents.y * f, m.box.half_extents.z * f);
    } else if (m.kind == RP_SHAPE_HALFSPACE) {
        m.halfspace.offset += d.x;
    } else if (m.kind == RP_SHAPE_SPHERE) {
        m.sphere.center =
            V(m.sphere.center.x + d.x, m.sphere.center.y + d.y, m.sphere.center.z + d.z);
        m.sphere.radius *= f;
    } else {
        m.capsule.a = V(m.capsule.a.x + d.x, m.capsule.a.y + d.y, m.capsule.a.z + d.z);
        m.capsule.b = V(m.capsule.b.x + d.x, m.capsule.b.y + d.y, m.capsule.b.z + d.z);
        m.capsule.radius *= f;
    }
    return m;
}

static void assert_tree_ok(const rp_scene *sc)
{
    int h = rp_bvh_check_(sc);
    if (h < 0)
        fail_msg("tree invariants broken (%zu shapes), see stderr", rp_scene_shape_count(sc));
}

/* Asserts the tree's height is at most HEIGHT_FACTOR log2(n). */
static void assert_height_logarithmic(const rp_scene *sc)
{
    int h = rp_bvh_check_(sc);
    size_t n = rp_scene_shape_count(sc);
    if (h < 0)
        fail_msg("tree invariants broken (%zu shapes), see stderr", n);
    if (n >= 2 && (double)h > HEIGHT_FACTOR * log2((double)n))
        fail_msg("height %d for %zu shapes: above %.1f log2(n) = %.1f", h, n, HEIGHT_FACTOR,
                 HEIGHT_FACTOR * log2((double)n));
}

/* ---- brute force ---------------------------------------------------------- */

/* The order of rp_scene_query's pairs: distance, query index, id. */
static int pair_order(const rp_scene *sc, const rp_pair *a, const rp_pair *b)
{
    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    if (a->query != b->query)
        return a->query < b->query ? -1 : 1;
    return strcmp(rp_scene_id_at(sc, a->shape), rp_scene_id_at(sc, b->shape));
}

/* rp_scene_query over nq shapes (nearest pair and the pairs below the
 * threshold) against brute force. */
static void check_scene_query(const rp_scene *sc, const rp_shape *qs, size_t nq, double threshold)
{
    rp_query q = {.shapes = qs, .n_shapes = nq, .collect = true, .threshold = threshold};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    size_t n = rp_scene_shape_count(sc);
    rp_pair best = {0, 0, 0};
    bool has = false;
    size_t want = 0;
    for (size_t qi = 0; qi < nq; qi++)
        for (size_t e = 0; e < n; e++) {
            rp_pair p = {qi, e, rp_shape_signed_distance(&qs[qi], SCENE_SHAPE(sc, e))};
            if (!has || pair_order(sc, &p, &best) < 0) {
                best = p;
                has = true;
            }
            want += p.distance < threshold;
        }
    assert_int_equal(res.has_min, has);
    if (has) {
        assert_int_equal(res.nearest.query, best.query);
        assert_int_equal(res.nearest.shape, best.shape);
        assert_same_bits(res.nearest.distance, best.distance);
    }
    assert_int_equal(res.n_pairs, want);
    for (size_t i = 0; i < res.n_pairs; i++) {
        const rp_pair *p = &res.pairs[i];
        assert_true(p->query < nq && p->shape < n);
        assert_same_bits(p->distance,
                         rp_shape_signed_distance(&qs[p->query], SCENE_SHAPE(sc, p->shape)));
        assert_true(p->distance < threshold);
        if (i > 0)
            assert_true(pair_order(sc, &res.pairs[i - 1], p) < 0); /* sorted, no duplicates */
    }
    rp_query_result_free(&res);
}

/* A few queries of each kind, some on the grid (ties). */
static void check_queries(const rp_scene *sc, test_rng *r, double half)
{
    for (int k = 0; k < 4; k++) {
        bool grid = k % 2 == 1;
        rp_shape q = random_shape(r, half * 1.2, 0.6, grid);
        check_shape_query(sc, &q, grid ? 1.0 : rng_uniform(r, -0.4, 1.0));
    }
    rp_shape qs[3] = {random_shape(r, half, 0.5, false), random_shape(r, half, 0.5, true),
                      random_shape(r, half, 0.5, false)};
    check_scene_query(sc, qs, 3, rng_uniform(r, -0.2, 0.8));
}

/* ---- random interleavings ---------------------------------------------------- */

#define ID_LEN 16

/* Ids "k<n>" for n in [0, space). */
static void id_of(char *buf, size_t n)
{
    snprintf(buf, ID_LEN, "k%zu", n);
}

/* One seeded run: puts, moves, removes and replacements over an id space of
 * `space` ids, growing the scene towards `space` and shrinking it again,
 * with queries after every few steps and the invariants after every step. */
static void interleaving_run(uint64_t seed, size_t space, int steps)
{
    test_rng r = {seed};
    /* With solids, the ids k<n> for n a multiple of plane_every hold
     * half-spaces (at most 32 of them: the scene's limit is 64). */
    size_t plane_every = mix_boxes ? space / 32 + 1 : 0; /* 0: none */
    double half = 2.0 + (double)space / 400.0;           /* density roughly constant */
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    size_t max_batch = space / 8 + 2;
    rp_shape_put *p = malloc(max_batch * 2 * sizeof *p);
    char(*ids)[ID_LEN] = malloc(max_batch * 2 * ID_LEN);
    const char **rm = malloc(max_batch * sizeof *rm);
    size_t peak = 0;
    for (int step = 0; step < steps; step++) {
        size_t n = rp_scene_shape_count(sc);
        /* First half grows, second half shrinks (more removes). */
        bool growing = step < steps / 2;
        unsigned op = (unsigned)(rng_next(&r) % 100);
        if (op < (growing ? 45u : 25u)) {
            /* Put new ids (and existing ones: moves by a new shape). */
            size_t k = 1 + (size_t)(rng_next(&r) % max_batch);
            for (size_t i = 0; i < k; i++) {
                size_t n_id = (size_t)(rng_next(&r) % space);
                id_of(ids[i], n_id);
                p[i].id = ids[i];
                p[i].shape = plane_every && n_id % plane_every == 0
                                 ? random_plane(&r, half)
                                 : random_shape(&r, half, 0.3, step % 7 == 0);
            }
            assert_int_equal(rp_scene_put(sc, p, k, NULL, NULL), RP_OK);
        } else if (op < 70) {
            /* Moves of existing shapes: small (mostly inside the parent's
             * box or an ancestor's: their refits wait for the end of the
             * put), large, or both in one put (a large one flushes the
             * waiting refits before it moves nodes). */
            size_t most = n < 2 * max_batch ? n : 2 * max_batch;
            size_t k = n ? 1 + (size_t)(rng_next(&r) % most) : 0;
            unsigned mode = (unsigned)(rng_next(&r) % 3);
            for (size_t i = 0; i < k; i++) {
                size_t e = (size_t)(rng_next(&r) % n);
                double step_size = mode == 0                 ? 1e-3
                                   : mode == 1               ? 0.5
                                   : (rng_next(&r) % 4 == 0) ? 0.5
                                                             : 0.02;
                snprintf(ids[i], ID_LEN, "%s", rp_scene_id_at(sc, e));
                p[i].id = ids[i];
                p[i].shape = moved_shape(&r, SCENE_SHAPE(sc, e), step_size);
            }
            assert_int_equal(rp_scene_put(sc, p, k, NULL, NULL), RP_OK);
        } else if (op < (growing ? 90u : 97u)) {
            size_t k = 1 + (size_t)(rng_next(&r) % max_batch);
            for (size_t i = 0; i < k; i++) {
                id_of(ids[i], (size_t)(rng_next(&r) % space));
                rm[i] = ids[i];
            }
            assert_int_equal(rp_scene_remove(sc, rm, k, NULL, NULL, NULL), RP_OK);
        } else if (op < 98) {
            /* A bulk put: more new shapes than count/4 + 64 at once (the
             * tree is rebuilt from scratch), with a few moves in it. */
            size_t k = n / 4 + 65 + (size_t)(rng_next(&r) % 32);
            if (k > 2 * max_batch)
                k = 2 * max_batch;
            for (size_t i = 0; i < k; i++) {
                size_t n_id = (size_t)(rng_next(&r) % (space * 2));
                id_of(ids[i], n_id);
                p[i].id = ids[i];
                p[i].shape = plane_every && n_id % plane_every == 0 && n_id < space
                                 ? random_plane(&r, half)
                                 : random_shape(&r, half, 0.3, false);
            }
            assert_int_equal(rp_scene_put(sc, p, k, NULL, NULL), RP_OK);
        } else {
            /* Replace the whole content (the scene object changes). */
            size_t k = (size_t)(rng_next(&r) % max_batch);
            for (size_t i = 0; i < k; i++) {
                size_t n_id = (size_t)(rng_next(&r) % space);
                id_of(ids[i], n_id);
                p[i].id = ids[i];
                p[i].shape = plane_every && n_id % plane_every == 0
                                 ? random_plane(&r, half)
                                 : random_shape(&r, half, 0.3, step % 3 == 0);
            }
            assert_int_equal(rp_store_replace(st, "s", p, k, NULL, false, &sc, NULL), RP_OK);
        }
        assert_tree_ok(sc);
        if (rp_scene_shape_count(sc) > peak)
            peak = rp_scene_shape_count(sc);
        if (step % 3 == 0)
            check_queries(sc, &r, half);
    }
    /* The run really crossed the small-scene size and grew large. */
    assert_true(peak > space / 2 && peak > 16);
    free(p);
    free(ids);
    free(rm);
    rp_store_free(st);
}

static void random_interleavings_equal_brute_force_small(void **state)
{
    (void)state;
    /* Sizes around the scan threshold (16): the tree must be up to date
     * when the scene grows past it. */
    for (uint64_t seed = 1; seed <= 6; seed++)
        interleaving_run(0x5eed0000 + seed, 40, 300);
}

static void random_interleavings_equal_brute_force_medium(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++)
        interleaving_run(0x5eed1000 + seed, 400, 300);
}

static void random_interleavings_equal_brute_force_large(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 2; seed++)
        interleaving_run(0x5eed2000 + seed, 4000, 240);
}

/* The same with boxes among the shapes (and the queries) and half-spaces,
 * which stay out of the tree: a shape that turns into a half-space leaves
 * it, one that turns back joins it, removals renumber the list. */
static void random_interleavings_with_boxes_and_half_spaces_equal_brute_force(void **state)
{
    (void)state;
    mix_boxes = true;
    for (uint64_t seed = 1; seed <= 4; seed++)
        interleaving_run(0x5eed3000 + seed, 40, 300);
    for (uint64_t seed = 1; seed <= 2; seed++)
        interleaving_run(0x5eed4000 + seed, 400, 300);
    interleaving_run(0x5eed5000, 3000, 200);
    mix_boxes = false;
}

/* Shapes near the largest double (boxes overflow to infinity) moved,
 * removed and put one at a time: the incremental paths (areas of infinite
 * boxes, containment, rotations) must stay exact too. */
static void huge_shapes_maintained_one_at_a_time_stay_exact(void **state)
{
    (void)state;
    test_rng r = {0x4a11};
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "h", NULL, 0, &sc), RP_OK);
    static const double scale[3] = {1e308, 1e200, 5.0};
    char id[ID_LEN];
    for (int step = 0; step < 600; step++) {
        double s = scale[rng_next(&r) % 3];
        rp_vec3 c =
            V(s * rng_uniform(&r, -1, 1), s * rng_uniform(&r, -1, 1), s * rng_uniform(&r, -1, 1));
        double rad = s == 1e308 ? rng_uniform(&r, 0, 1.7) * 1e308 : rng_uniform(&r, 0, 1) * s;
        rp_shape shape = {.kind = RP_SHAPE_SPHERE, .sphere = {c, rad}};
        assert_int_equal(rp_shape_validate(&shape), RP_OK);
        id_of(id, (size_t)(rng_next(&r) % 120));
        if (rng_next(&r) % 4 == 0) {
            const char *rm = id;
            assert_int_equal(rp_scene_remove(sc, &rm, 1, NULL, NULL, NULL), RP_OK);
        } else {
            rp_shape_put p = {id, shape};
            assert_int_equal(rp_scene_put(sc, &p, 1, NULL, NULL), RP_OK);
        }
        assert_tree_ok(sc);
        if (step % 5 == 0) {
            static const double thresholds[] = {-DBL_MAX, -1e200, 0.0, 1.0, 1e308, INFINITY};
            rp_shape q = {.kind = RP_SHAPE_SPHERE,
                          .sphere = {V(s * rng_uniform(&r, -1, 1), 0, 0), 0.5 * rad}};
            check_shape_query(sc, &q, thresholds[(size_t)step / 5 % 6]);
        }
    }
    rp_store_free(st);
}

/* A diagonal capsule that becomes a sphere at its midpoint with a larger
 * radius keeps its box inside the old one (so its leaf stays put), but can now
 * penetrate deeper: the ancestors' radius bounds must follow, or the
 * deep-penetration queries below would prune it. */
static void radius_growth_inside_the_box_raises_the_bounds(void **state)
{
    (void)state;
    test_rng r = {0x4ad};
    size_t n = 600;
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[ID_LEN] = malloc(n * ID_LEN);
    for (size_t i = 0; i < n; i++) {
        id_of(ids[i], i);
        p[i].id = ids[i];
        rp_vec3 c = V(rng_uniform(&r, -3, 3), rng_uniform(&r, -3, 3), rng_uniform(&r, -3, 3));
        p[i].shape = i % 2 ? (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {c, 0.01}}
                           : (rp_shape){.kind = RP_SHAPE_CAPSULE,
                                        .capsule = {V(c.x - 0.4, c.y - 0.4, c.z - 0.4),
                                                    V(c.x + 0.4, c.y + 0.4, c.z + 0.4), 0.01}};
    }
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "g", p, n, &sc), RP_OK);
    size_t moved = 0;
    for (size_t i = 0; i < n; i += 2) {
        const rp_capsule *k = &p[i].shape.capsule;
        rp_vec3 mid = V(0.5 * (k->a.x + k->b.x), 0.5 * (k->a.y + k->b.y), 0.5 * (k->a.z + k->b.z));
        p[moved].id = ids[i];
        p[moved++].shape = (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {mid, 0.3}};
    }
    assert_int_equal(rp_scene_put(sc, p, moved, NULL, NULL), RP_OK);
    assert_tree_ok(sc);
    for (size_t i = 0; i < moved; i += 7) {
        rp_shape q = {.kind = RP_SHAPE_SPHERE, .sphere = {p[i].shape.sphere.center, 0.02}};
        /* Only a grown sphere penetrates it by more than 0.3. */
        check_shape_query(sc, &q, -0.3);
    }
    free(p);
    free(ids);
    rp_store_free(st);
}

/* ---- heights under adversarial insertion orders --------------------------------- */

/* Puts shapes[0..n) one put per shape, checking the invariants and the
 * height bound every `every` puts and at the end. */
static void insert_one_at_a_time(rp_scene *sc, const rp_shape *shapes, size_t n, size_t every)
{
    char id[ID_LEN];
    for (size_t i = 0; i < n; i++) {
        id_of(id, i);
        rp_shape_put p = {id, shapes[i]};
        assert_int_equal(rp_scene_put(sc, &p, 1, NULL, NULL), RP_OK);
        if (i % every == every - 1 || i + 1 == n)
            assert_height_logarithmic(sc);
    }
}

static void sorted_insertion_along_x_keeps_height_logarithmic(void **state)
{
    (void)state;
    size_t n = 5000;
    rp_shape *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++)
        s[i] = (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {V(0.1 * (double)i, 0, 0), 0.04}};
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "x", NULL, 0, &sc), RP_OK);
    insert_one_at_a_time(sc, s, n, 97);
    /* And removing them in the same order. */
    char id[ID_LEN];
    for (size_t i = 0; i + 1 < n; i++) {
        id_of(id, i);
        const char *rm = id;
        assert_int_equal(rp_scene_remove(sc, &rm, 1, NULL, NULL, NULL), RP_OK);
        if (i % 97 == 0)
            assert_height_logarithmic(sc);
    }
    assert_height_logarithmic(sc);
    free(s);
    rp_store_free(st);
}

static void clustered_insertion_keeps_height_logarithmic(void **state)
{
    (void)state;
    /* 40 tight clusters far apart, each inserted in full before the next. */
    test_rng r = {0xc1u};
    size_t per = 100, clusters = 40, n = per * clusters;
    rp_shape *s = malloc(n * sizeof *s);
    for (size_t c = 0; c < clusters; c++) {
        rp_vec3 at =
            V(rng_uniform(&r, -100, 100), rng_uniform(&r, -100, 100), rng_uniform(&r, -100, 100));
        for (size_t i = 0; i < per; i++) {
            rp_shape k = random_shape(&r, 0.01, 0.005, false);
            if (k.kind == RP_SHAPE_SPHERE) {
                k.sphere.center =
                    V(k.sphere.center.x + at.x, k.sphere.center.y + at.y, k.sphere.center.z + at.z);
            } else {
                k.capsule.a = V(k.capsule.a.x + at.x, k.capsule.a.y + at.y, k.capsule.a.z + at.z);
                k.capsule.b = V(k.capsule.b.x + at.x, k.capsule.b.y + at.y, k.capsule.b.z + at.z);
            }
            s[c * per + i] = k;
        }
    }
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "c", NULL, 0, &sc), RP_OK);
    insert_one_at_a_time(sc, s, n, 89);
    for (int k = 0; k < 50; k++) {
        rp_shape q = random_shape(&r, 100, 1.0, false);
        check_shape_query(sc, &q, rng_uniform(&r, 0, 30));
    }
    free(s);
    rp_store_free(st);
}

static void shapes_all_at_one_point_keep_height_logarithmic(void **state)
{
    (void)state;
    size_t n = 3000;
    rp_shape *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++)
        s[i] = (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {V(1, 2, 3), 0.5}};
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "p", NULL, 0, &sc), RP_OK);
    insert_one_at_a_time(sc, s, n, 101);
    /* Every distance ties: the smallest id ("k0") must win. */
    rp_shape far = {.kind = RP_SHAPE_SPHERE, .sphere = {V(4, 6, 3), 0.5}};
    double d = INFINITY;
    size_t idx = 0;
    bool found;
    rp_scene_nearest_(sc, &far, &d, &idx, &found);
    assert_true(found && d == 4.0);
    assert_string_equal(rp_scene_id_at(sc, idx), "k0");
    check_shape_query(sc, &far, 4.5);
    free(s);
    rp_store_free(st);
}

static void one_at_a_time_insertion_of_10k_keeps_height_logarithmic(void **state)
{
    (void)state;
    test_rng r = {0x10c};
    size_t n = 10000;
    rp_shape *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++)
        s[i] = random_shape(&r, 5.0, 0.05, false);
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "r", NULL, 0, &sc), RP_OK);
    insert_one_at_a_time(sc, s, n, 499);
    for (int k = 0; k < 40; k++) {
        rp_shape q = random_shape(&r, 5.0, 0.1, false);
        check_shape_query(sc, &q, 0.05);
    }
    /* Then every shape moved far (each leaves its parent's box). */
    char id[ID_LEN];
    for (size_t i = 0; i < n; i++) {
        id_of(id, i);
        rp_shape_put p = {id, moved_shape(&r, &s[i], 2.0)};
        assert_int_equal(rp_scene_put(sc, &p, 1, NULL, NULL), RP_OK);
    }
    assert_height_logarithmic(sc);
    for (int k = 0; k < 40; k++) {
        rp_shape q = random_shape(&r, 5.0, 0.1, false);
        check_shape_query(sc, &q, 0.05);
    }
    free(s);
    rp_store_free(st);
}

/* ---- queries are read-only ----------------------------------------------------- */

static void queries_do_not_write_to_the_scene(void **state)
{
    (void)state;
    test_rng r = {0x5ead};
    size_t n = 3000;
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[ID_LEN] = malloc(n * ID_LEN);
    for (size_t i = 0; i < n; i++) {
        id_of(ids[i], i);
        p[i].id = ids[i];
        p[i].shape = random_shape(&r, 5.0, 0.2, false);
    }
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "q", p, n, &sc), RP_OK);
    /* Some mutations after the build, so the tree is not fresh. */
    for (size_t i = 0; i < 200; i++)
        p[i].shape = random_shape(&r, 5.0, 0.2, false);
    assert_int_equal(rp_scene_put(sc, p, 200, NULL, NULL), RP_OK);

    /* Element by element through the chunk tables (chunks.h). */
    size_t nn = sc->tree.n_nodes;
    rp_bvh_node *nodes = malloc(nn * sizeof *nodes);
    scene_entry *entries = malloc(n * sizeof *entries);
    for (size_t i = 0; i < nn; i++)
        nodes[i] = *(const rp_bvh_node *)rp_chunks_at(&sc->tree.nodes, sizeof *nodes, i);
    for (size_t i = 0; i < n; i++)
        entries[i] = *RP_ENTRY(sc, i);
    rp_bvh tree = sc->tree;
    size_t memory = rp_store_memory(st);
    assert_int_equal(rp_scene_prepare(sc), RP_OK);
    check_queries(sc, &r, 5.0);
    assert_true(memcmp(&tree, &sc->tree, sizeof tree) == 0);
    for (size_t i = 0; i < nn; i++)
        assert_true(
            memcmp(&nodes[i], rp_chunks_at(&sc->tree.nodes, sizeof *nodes, i), sizeof *nodes) == 0);
    for (size_t i = 0; i < n; i++)
        assert_true(memcmp(&entries[i], RP_ENTRY(sc, i), sizeof *entries) == 0);
    assert_int_equal(rp_store_memory(st), memory);
    free(nodes);
    free(entries);
    free(p);
    free(ids);
    rp_store_free(st);
}

/* ---- memory budget --------------------------------------------------------------- */

static void store_stays_within_150_bytes_per_shape_at_100k(void **state)
{
    (void)state;
    test_rng r = {0x100c};
    size_t n = 100000;
    rp_shape_put *p = malloc(n * sizeof *p);
    char(*ids)[ID_LEN] = malloc(n * ID_LEN);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], ID_LEN, "s%zu", i);
        p[i].id = ids[i];
        p[i].shape = random_shape(&r, 5.0, 0.05, false);
    }
    rp_store *st = rp_store_new(NULL);
    size_t empty = rp_store_memory(st);
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "big", p, n, &sc), RP_OK);
    size_t per_shape = rp_store_memory(st) / n;
    print_message("store: %zu bytes/shape (%zu total, tree %zu bytes/shape)\n", per_shape,
                  rp_store_memory(st) - empty, rp_scene_index_bytes(sc) / n);
    assert_true(per_shape <= 150);
    /* 44-byte nodes, n - 1 of them, in chunks of RP_CHUNK_LEN (the last one
     * partly used). */
    assert_true(rp_scene_index_bytes(sc) <= 44 * (n + RP_CHUNK_LEN));
    assert_height_logarithmic(sc);

    /* Moves and a few new shapes change neither (no reallocation while the
     * count stays), and the tree stays valid. */
    for (size_t i = 0; i < 1000; i++) {
        size_t e = (size_t)(rng_next(&r) % n);
        p[i].id = ids[e];
        p[i].shape = random_shape(&r, 5.0, 0.05, false);
    }
    assert_int_equal(rp_scene_put(sc, p, 1000, NULL, NULL), RP_OK);
    assert_true(rp_store_memory(st) / n <= 150);
    assert_tree_ok(sc);
    free(p);
    free(ids);
    rp_store_free(st);
}

/* Boxes are rounded outwards to floats without a branch (bvh.c): a float
 * at or below x and one at or above, the floats next to x, for doubles
 * of every size, just off floats, zero, subnormals, the ends of the float
 * range and the infinities. */
static void box_rounding_is_outward_and_tight(void **state)
{
    (void)state;
    uint64_t seed = 7;
    for (int i = 0; i < 400000; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        double x;
        switch (i % 5) {
        case 0: { /* any finite double's bits */
            uint64_t b = seed;
            memcpy(&x, &b, sizeof x);
            if (!isfinite(x))
                x = (double)(int64_t)seed;
            break;
        }
        case 1: /* a float plus or minus a little */
        case 2: {
            float f;
            uint32_t b = (uint32_t)(seed >> 32);
            memcpy(&f, &b, sizeof f);
            if (!isfinite(f))
                f = 1.0f;
            double tweak = ldexp((double)(seed & 0xffff) / 65536.0, -30);
            x = (double)f * (1.0 + (i % 5 == 1 ? tweak : -tweak));
            break;
        }
        case 3: /* around the ends of the float range */
            x = (seed & 1 ? 1 : -1) * (double)FLT_MAX * (1.0 + ldexp((double)(seed >> 40), -48));
            break;
        default: /* tiny: subnormal floats and below */
            x = (seed & 1 ? 1 : -1) * ldexp((double)(seed >> 12), -52 - 150 + (int)(seed % 20));
            break;
        }
        float d, u;
        rp_bvh_round_(x, &d, &u);
        assert_true((double)d <= x && x <= (double)u);
        /* (the floats next to x: one step further is past it) */
        assert_true((double)d == x || (double)nextafterf(d, INFINITY) > x);
        assert_true((double)u == x || (double)nextafterf(u, -INFINITY) < x);
        if ((double)(float)x == x)
            assert_true(d == (float)x && u == (float)x);
    }
    static const double edges[] = {0.0,      -0.0,      INFINITY, -INFINITY, FLT_MAX, -FLT_MAX,
                                   0x1p-149, -0x1p-149, 0x1p-150, -0x1p-150, 1e300,   -1e300};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
        float d, u;
        rp_bvh_round_(edges[k], &d, &u);
        assert_true((double)d <= edges[k] && edges[k] <= (double)u);
        assert_false(isnan(d) || isnan(u));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(box_rounding_is_outward_and_tight),
        cmocka_unit_test(random_interleavings_equal_brute_force_small),
        cmocka_unit_test(random_interleavings_equal_brute_force_medium),
        cmocka_unit_test(random_interleavings_equal_brute_force_large),
        cmocka_unit_test(random_interleavings_with_boxes_and_half_spaces_equal_brute_force),
        cmocka_unit_test(huge_shapes_maintained_one_at_a_time_stay_exact),
        cmocka_unit_test(radius_growth_inside_the_box_raises_the_bounds),
        cmocka_unit_test(sorted_insertion_along_x_keeps_height_logarithmic),
        cmocka_unit_test(clustered_insertion_keeps_height_logarithmic),
        cmocka_unit_test(shapes_all_at_one_point_keep_height_logarithmic),
        cmocka_unit_test(one_at_a_time_insertion_of_10k_keeps_height_logarithmic),
        cmocka_unit_test(queries_do_not_write_to_the_scene),
        cmocka_unit_test(store_stays_within_150_bytes_per_shape_at_100k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
