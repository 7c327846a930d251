/* SPDX-License-Identifier: MIT */
/*
 * Point clouds (src/scene/clouds.c): spheres of one radius, one per point
 * or per occupied voxel, held by shapeless objects of a scene.
 *
 *   - Building: voxel 0 keeps every point once; a voxel keeps one sphere
 *     per cell floor(p / voxel) at the centroid of its points (summed in
 *     doubles in input order: recomputed here, compared bit for bit); the
 *     same input gives the same bytes; at most 60 bytes a sphere.
 *   - Bad input is refused with nothing allocated; empty and one-point
 *     clouds work.
 *   - Queries (nearest pair, pairs below a threshold, `ignore`) equal a
 *     brute force over every storage index, cloud spheres included, in
 *     scenes small enough to be scanned and large enough to be walked.
 *   - Robot checks (FIRST alone and batched, CLOSEST, ALL) equal a brute
 *     force over the links' world shapes, with `ignore` and with allowed
 *     scene pairs naming a cloud; motions through a cloud collide, motions
 *     clear of it, ignoring it or allowed to touch it do not.
 *   - The store: put, replace and remove by name, replace_cell, snapshots,
 *     name clashes, move and attach refused, the commit hook, memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "repose/scene.h"

/* ---- helpers ------------------------------------------------------------- */

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static rp_shape sphere_at(double x, double y, double z, double rad)
{
    rp_shape s = {.kind = RP_SHAPE_SPHERE};
    assert_int_equal(rp_sphere_new(V(x, y, z), rad, &s.sphere), RP_OK);
    return s;
}

static rp_transform shift(double x, double y, double z)
{
    rp_transform tf = rp_transform_identity();
    tf.t = V(x, y, z);
    return tf;
}

/* A random sphere, capsule or box in [-half, half]^3, or with `floor` a
 * half-space below it. */
static rp_shape random_shape(test_rng *r, double half, bool floor)
{
    rp_vec3 c =
        V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
    rp_shape s;
    if (floor) {
        rp_halfspace h;
        assert_int_equal(rp_halfspace_new(V(rng_uniform(r, -0.2, 0.2), 0, 1), -half - 1, &h),
                         RP_OK);
        return rp_shape_from_halfspace(h);
    }
    switch (rng_next(r) % 3) {
    case 0:
        return sphere_at(c.x, c.y, c.z, rng_uniform(r, 0, 0.3));
    case 1:
        s.kind = RP_SHAPE_CAPSULE;
        assert_int_equal(rp_capsule_new(c, V(c.x + rng_uniform(r, -0.6, 0.6), c.y, c.z + 0.2),
                                        rng_uniform(r, 0, 0.2), &s.capsule),
                         RP_OK);
        return s;
    default: {
        rp_box b;
        assert_int_equal(rp_box_new(c, V(rng_uniform(r, 0, 0.3), rng_uniform(r, 0, 0.3), 0.1),
                                    rng_uniform(r, 0.1, 1), rng_uniform(r, -1, 1), 0, 0, &b),
                         RP_OK);
        return rp_shape_from_box(b);
    }
    }
}

/* n points (3n floats, caller frees), a third each: uniform in
 * [-half, half]^3, in small clusters, and exact copies of earlier points
 * (their spheres tie: the id rule decides). */
static float *random_points(test_rng *r, size_t n, double half)
{
    float *p = malloc((3 * n + 3) * sizeof *p);
    assert_non_null(p);
    double c[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        unsigned kind = (unsigned)(rng_next(r) % 3);
        if (kind == 2 && i > 0) {
            memcpy(p + 3 * i, p + 3 * (rng_next(r) % i), 3 * sizeof *p);
            continue;
        }
        bool move = kind == 0 || i == 0 || rng_next(r) % 16 == 0;
        for (int a = 0; a < 3; a++) {
            if (move)
                c[a] = rng_uniform(r, -half, half);
            p[3 * i + a] = (float)(c[a] + (kind == 1 ? rng_uniform(r, -0.05, 0.05) : 0));
        }
    }
    return p;
}

static rp_cloud *cloud_ok(const float *xyz, size_t n, double radius, double voxel)
{
    rp_cloud *c = NULL;
    assert_int_equal(rp_cloud_new(xyz, n, radius, voxel, &c, NULL), RP_OK);
    assert_non_null(c);
    return c;
}

/* Float triples equal as multisets (both arrays get sorted). */
static int cmp_triple(const void *a, const void *b)
{
    return memcmp(a, b, 3 * sizeof(float));
}

static void assert_same_triples(float *a, float *b, size_t n)
{
    qsort(a, n, 3 * sizeof *a, cmp_triple);
    qsort(b, n, 3 * sizeof *b, cmp_triple);
    assert_memory_equal(a, b, 3 * n * sizeof *a);
}

/* Every storage index: the scene's own shapes, then the clouds' spheres. */
static size_t total_shapes(const rp_scene *sc)
{
    size_t n = rp_scene_shape_count(sc);
    for (size_t i = 0; i < rp_scene_object_count(sc); i++) {
        const rp_cloud *c = rp_object_cloud(rp_scene_object_at(sc, i));
        n += c ? rp_cloud_size(c) : 0;
    }
    return n;
}

/* The id the tie rules compare: "cloud/k" for a cloud's sphere k. */
static void id_of(const rp_scene *sc, size_t e, char *buf, size_t cap)
{
    const rp_object *o = NULL;
    size_t k = rp_scene_cloud_member(sc, e, &o);
    if (k == SIZE_MAX)
        snprintf(buf, cap, "%s", rp_scene_id_at(sc, e));
    else
        snprintf(buf, cap, "%s/%zu", rp_object_name(o), k);
}

static const rp_scene *g_sc; /* qsort has no context argument */

static int id_cmp(size_t a, size_t b)
{
    char x[96], y[96];
    id_of(g_sc, a, x, sizeof x);
    id_of(g_sc, b, y, sizeof y);
    return strcmp(x, y);
}

/* Whether storage index e is a sphere of a cloud named in ign[0..n). */
static bool in_ignored_cloud(const rp_scene *sc, size_t e, const char *const *ign, size_t n)
{
    const rp_object *o = NULL;
    if (rp_scene_cloud_member(sc, e, &o) == SIZE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(rp_object_name(o), ign[i]) == 0)
            return true;
    return false;
}

/* Puts clouds into scene "s" (created when missing). */
static void put_clouds(rp_store *st, const rp_cloud_put *cp, size_t n)
{
    rp_cell cell = {.clouds = cp, .n_clouds = n};
    assert_int_equal(rp_store_put_cell(st, "s", &cell, NULL, true, NULL, NULL, NULL), RP_OK);
}

/* ---- 1. building ------------------------------------------------------------ */

typedef struct cell_point {
    int64_t cell[3];
    size_t index;
} cell_point;

static int cmp_cell_point(const void *pa, const void *pb)
{
    const cell_point *a = pa, *b = pb;
    for (int k = 0; k < 3; k++)
        if (a->cell[k] != b->cell[k])
            return a->cell[k] < b->cell[k] ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index; /* input order within a cell */
}

/* The voxel centroids, computed independently: cells floor(p / v), sums
 * in doubles in input order, rounded to float.  Returns their count and
 * the centres in *out (caller frees). */
static size_t expected_voxels(const float *xyz, size_t n, double v, float **out)
{
    cell_point *cp = malloc((n + 1) * sizeof *cp);
    float *c = malloc((3 * n + 3) * sizeof *c);
    assert_non_null(cp);
    assert_non_null(c);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++)
            cp[i].cell[k] = (int64_t)floor((double)xyz[3 * i + k] / v);
        cp[i].index = i;
    }
    qsort(cp, n, sizeof *cp, cmp_cell_point);
    size_t m = 0;
    for (size_t i = 0, j; i < n; i = j, m++) {
        double sum[3] = {0, 0, 0};
        for (j = i; j < n && memcmp(cp[j].cell, cp[i].cell, sizeof cp[i].cell) == 0; j++)
            for (int k = 0; k < 3; k++)
                sum[k] += xyz[3 * cp[j].index + k];
        for (int k = 0; k < 3; k++)
            c[3 * m + k] = (float)(sum[k] / (double)(j - i));
    }
    free(cp);
    *out = c;
    return m;
}

static void building_keeps_points_and_voxel_centroids(void **state)
{
    (void)state;
    test_rng r = {2024};
    for (int round = 0; round < 8; round++) {
        size_t n = 1 + rng_next(&r) % 6000;
        float *xyz = random_points(&r, n, round % 2 ? 3.0 : 0.4);
        float *got = malloc(3 * n * sizeof *got), *want = NULL;
        assert_non_null(got);
        /* voxel 0: every input point once (a multiset; the order is Morton). */
        rp_cloud *c = cloud_ok(xyz, n, 0.02, 0.0), *again = cloud_ok(xyz, n, 0.02, 0.0);
        assert_int_equal(rp_cloud_size(c), n);
        assert_int_equal(rp_cloud_input_points(c), n);
        assert_true(rp_cloud_radius(c) == 0.02 && rp_cloud_voxel(c) == 0.0);
        assert_memory_equal(rp_cloud_centres(c), rp_cloud_centres(again), 3 * n * sizeof *got);
        memcpy(got, rp_cloud_centres(c), 3 * n * sizeof *got);
        want = malloc(3 * n * sizeof *want);
        assert_non_null(want);
        memcpy(want, xyz, 3 * n * sizeof *want);
        assert_same_triples(got, want, n);
        rp_cloud_release(c);
        rp_cloud_release(again);
        free(want);

        /* A voxel: one sphere per cell, at its centroid, bit for bit (the
         * points straddle the origin: negative cells floor). */
        double v = (double[]){0.05, 0.1, 0.013, 1.0}[round % 4];
        size_t m = expected_voxels(xyz, n, v, &want);
        c = cloud_ok(xyz, n, 0.03, v);
        again = cloud_ok(xyz, n, 0.03, v);
        assert_int_equal(rp_cloud_size(c), m);
        assert_int_equal(rp_cloud_input_points(c), n);
        assert_true(rp_cloud_radius(c) == 0.03 && rp_cloud_voxel(c) == v);
        assert_memory_equal(rp_cloud_centres(c), rp_cloud_centres(again), 3 * m * sizeof *got);
        memcpy(got, rp_cloud_centres(c), 3 * m * sizeof *got);
        assert_same_triples(got, want, m);
        rp_cloud_release(c);
        rp_cloud_release(again);
        free(want);
        free(got);
        free(xyz);
    }
    /* Points on the cells' edges and a float either side of them, where a
     * product with the voxel's reciprocal and the quotient the spec names
     * may floor differently: the cells are floor(p / v) all the same. */
    static const double voxels[] = {0.1, 0.01, 0.03, 0.7, 1e-3};
    for (size_t vi = 0; vi < sizeof voxels / sizeof voxels[0]; vi++) {
        double v = voxels[vi];
        size_t n = 0, cap = 3 * 3 * 401 * 3;
        float *xyz = malloc(cap * sizeof *xyz);
        assert_non_null(xyz);
        for (int k = -200; k <= 200; k++) {
            float edge = (float)(k * v);
            float near[3] = {nextafterf(edge, -INFINITY), edge, nextafterf(edge, INFINITY)};
            for (int j = 0; j < 3; j++) {
                /* each axis in turn on the edge, the others inside cells */
                for (int a = 0; a < 3; a++) {
                    xyz[3 * n + a] = (float)(0.5 * v);
                    xyz[3 * n + (size_t)((a + j) % 3)] = near[j];
                }
                n++;
            }
        }
        float *want = NULL, *got = malloc(3 * n * sizeof *got);
        assert_non_null(got);
        size_t m = expected_voxels(xyz, n, v, &want);
        rp_cloud *c = cloud_ok(xyz, n, 0.01, v);
        assert_int_equal(rp_cloud_size(c), m);
        memcpy(got, rp_cloud_centres(c), 3 * m * sizeof *got);
        assert_same_triples(got, want, m);
        rp_cloud_release(c);
        free(got);
        free(want);
        free(xyz);
    }
    /* Memory: at most 60 bytes a sphere for 100k random points. */
    size_t n = 100000;
    float *xyz = random_points(&r, n, 5.0);
    rp_cloud *c = cloud_ok(xyz, n, 0.01, 0.0);
    if (rp_cloud_bytes(c) > 60 * n || rp_cloud_bytes(c) < 12 * n)
        fail_msg("%zu bytes for %zu spheres", rp_cloud_bytes(c), rp_cloud_size(c));
    rp_cloud_release(c);
    free(xyz);
}

/* ---- 2. bad input, empty and one-point clouds ------------------------------------ */

/* rp_cloud_new fails with `want`, *bad = want_bad, *out NULL. */
static void refused(const float *xyz, size_t n, double radius, double voxel, rp_status want,
                    size_t want_bad)
{
    rp_cloud *c = (rp_cloud *)&c; /* not NULL: the call must clear it */
    size_t bad = 12345;
    assert_int_equal(rp_cloud_new(xyz, n, radius, voxel, &c, &bad), want);
    assert_null(c);
    assert_int_equal(bad, want_bad);
}

static void bad_input_is_refused_empty_and_single_clouds_work(void **state)
{
    (void)state;
    float p[30], q[30];
    for (int i = 0; i < 30; i++)
        p[i] = (float)i * 0.1f;
    for (size_t at = 0; at < 10; at++) { /* NaN, +inf, -inf in x, y, z */
        memcpy(q, p, sizeof q);
        q[3 * at + at % 3] = (float[]){NAN, INFINITY, -INFINITY}[at % 3];
        refused(q, 10, 0.1, 0.0, RP_ERR_NONFINITE, at);
        refused(q, 10, 0.1, 0.5, RP_ERR_NONFINITE, at);
    }
    /* Radii and voxels: the statuses scene.h names. */
    refused(p, 10, -0.1, 0.0, RP_ERR_RADIUS_NEGATIVE, SIZE_MAX);
    refused(p, 10, NAN, 0.0, RP_ERR_RADIUS_NONFINITE, SIZE_MAX);
    refused(p, 10, INFINITY, 0.0, RP_ERR_RADIUS_NONFINITE, SIZE_MAX);
    refused(p, 10, 0.1, -0.5, RP_ERR_INVALID_ARG, SIZE_MAX);
    refused(p, 10, 0.1, NAN, RP_ERR_INVALID_ARG, SIZE_MAX);
    refused(p, 10, 0.1, INFINITY, RP_ERR_INVALID_ARG, SIZE_MAX);
    /* A span beyond 2^21 voxels along an axis; exactly 2^21 is fine, and
     * without a voxel there is no limit. */
    float wide[6] = {0, 0, 0, 1e6f, 0, -1e6f};
    refused(wide, 2, 0.1, 1e-3, RP_ERR_LIMIT, SIZE_MAX);
    rp_cloud_release(cloud_ok(wide, 2, 0.1, 0.0));
    float edge[6] = {0.5f, 0, 0, 2097151.5f, 0, 0};
    rp_cloud_release(cloud_ok(edge, 2, 0.1, 1.0));
    edge[3] = 2097152.5f;
    refused(edge, 2, 0.1, 1.0, RP_ERR_LIMIT, SIZE_MAX);

    /* Empty clouds (with and without a voxel) hold nothing: a scene of
     * nothing else has no nearest pair. */
    rp_cloud *e0 = cloud_ok(p, 0, 0.1, 0.0), *e1 = cloud_ok(p, 0, 0.1, 0.25);
    assert_int_equal(rp_cloud_size(e0) + rp_cloud_size(e1) + rp_cloud_input_points(e1), 0);
    rp_store *st = rp_store_new(NULL);
    rp_cloud_put two[2] = {{"e0", e0}, {"e1", e1}};
    put_clouds(st, two, 2);
    rp_cloud_release(e0);
    rp_cloud_release(e1);
    const rp_scene *sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_object_count(sc), 2);
    assert_int_equal(total_shapes(sc), 0);
    assert_int_equal(rp_scene_cloud_member(sc, 0, NULL), SIZE_MAX);
    rp_shape qs = sphere_at(0, 0, 0, 1);
    rp_query qq = {.shapes = &qs, .n_shapes = 1, .collect = true, .threshold = 100};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &qq, &res), RP_OK);
    assert_false(res.has_min);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);
    rp_store_free(st);
    /* A one-point cloud (its tree a single leaf: "lone" below is queried). */
    float one[3] = {2.0f, 0.5f, -1.0f};
    rp_cloud *c1 = cloud_ok(one, 1, 0.25, 0.0);
    assert_int_equal(rp_cloud_size(c1), 1);
    assert_memory_equal(rp_cloud_centres(c1), one, sizeof one);
    rp_cloud_release(c1);
}

/* ---- 3. queries against brute force ------------------------------------------------ */

/* Scene "s": n_own shapes of its own ("s<k>", s0 a floor when n_own > 2)
 * and clouds "pts" (points, ties included), "dense" (a voxel), "lone"
 * (one point) and "empty", put in that order and stored in name order. */
static rp_store *cloud_scene(test_rng *r, size_t n_own, double half)
{
    rp_store *st = rp_store_new(NULL);
    rp_shape_put *own = calloc(n_own + 1, sizeof *own);
    char(*ids)[24] = calloc(n_own + 1, sizeof *ids);
    assert_non_null(own);
    assert_non_null(ids);
    for (size_t k = 0; k < n_own; k++) {
        snprintf(ids[k], sizeof ids[k], "s%zu", k);
        own[k] = (rp_shape_put){ids[k], random_shape(r, half, k == 0 && n_own > 2)};
    }
    float *a = random_points(r, 2500, half), *b = random_points(r, 4000, half * 0.7);
    float lone[3] = {(float)rng_uniform(r, -half, half), 0.5f, -0.25f};
    rp_cloud_put cp[4] = {{"pts", cloud_ok(a, 2500, 0.02, 0.0)},
                          {"dense", cloud_ok(b, 4000, 0.05, 0.1)},
                          {"lone", cloud_ok(lone, 1, 0.1, 0.0)},
                          {"empty", cloud_ok(lone, 0, 0.1, 0.0)}};
    rp_cell cell = {.shapes = own, .n_shapes = n_own, .clouds = cp, .n_clouds = 4};
    assert_int_equal(rp_store_put_cell(st, "s", &cell, NULL, true, NULL, NULL, NULL), RP_OK);
    for (int k = 0; k < 4; k++)
        rp_cloud_release(cp[k].cloud);
    free(a);
    free(b);
    free(own);
    free(ids);
    return st;
}

/* Storage indices past the scene's own shapes are the clouds' spheres,
 * clouds in name order, spheres in cloud order. */
static void assert_storage_layout(const rp_scene *sc)
{
    size_t e = rp_scene_shape_count(sc);
    for (size_t i = 0; i < e; i++)
        assert_int_equal(rp_scene_cloud_member(sc, i, NULL), SIZE_MAX);
    const char *prev = "";
    for (size_t i = 0; i < rp_scene_object_count(sc); i++) {
        const rp_object *o = rp_scene_object_at(sc, i);
        const rp_cloud *c = rp_object_cloud(o);
        if (!c)
            continue;
        assert_true(strcmp(prev, rp_object_name(o)) < 0);
        prev = rp_object_name(o);
        assert_int_equal(rp_object_shape_count(o), 0);
        for (size_t k = 0; k < rp_cloud_size(c); k++, e++) {
            const rp_object *got = NULL;
            assert_int_equal(rp_scene_cloud_member(sc, e, &got), k);
            assert_ptr_equal(got, o);
            assert_ptr_equal(rp_scene_shape_object(sc, e), o);
            assert_string_equal(rp_scene_id_at(sc, e), rp_object_name(o));
            rp_shape s = rp_scene_shape_at(sc, e);
            const float *p = rp_cloud_centres(c) + 3 * k;
            assert_true(s.kind == RP_SHAPE_SPHERE && s.sphere.center.x == p[0] &&
                        s.sphere.center.y == p[1] && s.sphere.center.z == p[2] &&
                        s.sphere.radius == rp_cloud_radius(c));
        }
    }
    assert_int_equal(e, total_shapes(sc));
    assert_int_equal(rp_scene_cloud_member(sc, e, NULL), SIZE_MAX);
}

/* scene.h's order of pairs: distance, query index, id (strcmp). */
static int cmp_pair(const void *pa, const void *pb)
{
    const rp_pair *a = pa, *b = pb;
    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    if (a->query != b->query)
        return a->query < b->query ? -1 : 1;
    return id_cmp(a->shape, b->shape);
}

/* Brute force over every storage index outside the ignored clouds: the
 * nearest pair (*has) and the pairs below t, sorted (caller frees). */
static rp_pair *brute_query(const rp_scene *sc, const rp_shape *q, size_t nq,
                            const char *const *ign, size_t n_ign, double t, rp_pair *nearest,
                            bool *has, size_t *n_pairs)
{
    size_t total = total_shapes(sc), n = 0, cap = 64;
    rp_pair *pairs = malloc(cap * sizeof *pairs);
    assert_non_null(pairs);
    g_sc = sc;
    *has = false;
    for (size_t e = 0; e < total; e++) {
        if (in_ignored_cloud(sc, e, ign, n_ign))
            continue;
        rp_shape s = rp_scene_shape_at(sc, e);
        for (size_t j = 0; j < nq; j++) {
            rp_pair p = {j, e, rp_shape_signed_distance(&q[j], &s)};
            if (!*has || cmp_pair(&p, nearest) < 0)
                *nearest = p;
            *has = true;
            if (p.distance < t) {
                if (n == cap)
                    assert_non_null(pairs = realloc(pairs, (cap *= 2) * sizeof *pairs));
                pairs[n++] = p;
            }
        }
    }
    qsort(pairs, n, sizeof *pairs, cmp_pair);
    *n_pairs = n;
    return pairs;
}

static bool same_pair(const rp_pair *a, const rp_pair *b)
{
    return a->query == b->query && a->shape == b->shape && same_bits(a->distance, b->distance);
}

static void assert_same_pair(const rp_scene *sc, const rp_pair *got, const rp_pair *want)
{
    if (!same_pair(got, want)) {
        char a[96], b[96];
        id_of(sc, got->shape, a, sizeof a);
        id_of(sc, want->shape, b, sizeof b);
        fail_msg("pair (%zu, %s, %.17g), brute force (%zu, %s, %.17g)", got->query, a,
                 got->distance, want->query, b, want->distance);
    }
}

static void queries_equal_brute_force(void **state)
{
    (void)state;
    static const char *const ignores[4][3] = {
        {NULL}, {"pts"}, {"dense", "lone"}, {"pts", "dense", "lone"}};
    static const size_t owns[] = {0, 3, 16, 17, 300}; /* <= 16: scanned */
    test_rng r = {77};
    size_t seen_cloud = 0, seen_own = 0, seen_pairs = 0;
    for (size_t s = 0; s < sizeof owns / sizeof owns[0]; s++) {
        rp_store *st = cloud_scene(&r, owns[s], 3.0);
        const rp_scene *sc = rp_store_find(st, "s");
        assert_int_equal(rp_scene_shape_count(sc), owns[s]);
        assert_storage_layout(sc);
        for (int round = 0; round < 40; round++) {
            rp_shape q[3];
            size_t nq = 1 + rng_next(&r) % 3, w = (size_t)round % 4, nb;
            for (size_t j = 0; j < nq; j++)
                do
                    q[j] = random_shape(&r, 3.5, false);
                while (q[j].kind == RP_SHAPE_BOX);
            double t = rng_uniform(&r, 0, 0.4);
            rp_query qq = {.shapes = q,
                           .n_shapes = nq,
                           .collect = true,
                           .threshold = t,
                           .ignore = ignores[w],
                           .n_ignore = w};
            rp_query_result res;
            assert_int_equal(rp_scene_query(sc, &qq, &res), RP_OK);
            rp_pair best;
            bool has;
            rp_pair *bf = brute_query(sc, q, nq, ignores[w], qq.n_ignore, t, &best, &has, &nb);
            assert_int_equal(res.has_min, has);
            if (has) {
                assert_same_pair(sc, &res.nearest, &best);
                seen_cloud += best.shape >= owns[s];
                seen_own += best.shape < owns[s];
            }
            assert_int_equal(res.n_pairs, nb);
            for (size_t k = 0; k < nb; k++)
                assert_same_pair(sc, &res.pairs[k], &bf[k]);
            seen_pairs += nb;
            rp_query_result_free(&res);
            /* first_only: one of those pairs. */
            qq.first_only = true;
            assert_int_equal(rp_scene_query(sc, &qq, &res), RP_OK);
            assert_int_equal(res.n_pairs, nb ? 1 : 0);
            bool listed = nb == 0;
            for (size_t k = 0; k < nb && !listed; k++)
                listed = same_pair(&res.pairs[0], &bf[k]);
            assert_true(listed);
            rp_query_result_free(&res);
            free(bf);
        }
        rp_store_free(st);
    }
    /* The data made both kinds the nearest, and pairs qualify. */
    assert_true(seen_cloud > 20 && seen_own > 10 && seen_pairs > 100);
}

/* ---- 4. robot checks and motions ------------------------------------------------- */

/* A planar arm (as test_objects.c's): base -(j1: z at 0.2)-> l1 -(j2: z
 * at (0.7,0,0))-> l2; a sphere on the base, a capsule on l1, a capsule
 * and a sphere on l2.  No fixed joints: each link's pose is its frame's. */
static rp_model *arm_model(rp_store *st, const char *name, const char *const *allowed_scene,
                           size_t n_allowed_scene)
{
    static const char *const shape_links[] = {"base", "l1", "l2", "l2"};
    static const char *const links[] = {"base", "l1", "l2"};
    rp_link shapes[4] = {{"base#0", -1, sphere_at(0, 0, 0, 0.1)},
                         {"l1#0", -1, {.kind = RP_SHAPE_CAPSULE}},
                         {"l2#0", -1, {.kind = RP_SHAPE_CAPSULE}},
                         {"l2#1", -1, sphere_at(0.5, 0, 0, 0.05)}};
    for (int k = 1; k <= 2; k++)
        assert_int_equal(rp_capsule_new(V(0, 0, 0), V(k == 1 ? 0.7 : 0.45, 0, 0), 0.03,
                                        &shapes[k].shape.capsule),
                         RP_OK);
    rp_joint_def j[2] = {{0}};
    for (int k = 0; k < 2; k++)
        j[k] = (rp_joint_def){.name = k ? "j2" : "j1",
                              .type = RP_JOINT_REVOLUTE,
                              .parent = links[k],
                              .child = links[k + 1],
                              .xyz = V(k ? 0.7 : 0, 0, k ? 0 : 0.2),
                              .axis = V(0, 0, 1)};
    rp_model_def d = {.links = shapes, .n_links = 4, .shape_links = shape_links, .joints = j};
    d.link_names = links, d.n_link_names = 3, d.n_joints = 2;
    d.allowed_scene = allowed_scene, d.n_allowed_scene = n_allowed_scene;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, name, &d, &m, NULL), RP_OK);
    return m;
}

/* Whether shape i of m may touch storage index e: an allowed scene pair
 * names i's link and e's own id or its cloud. */
static bool allowed_pair(const rp_model *m, const rp_scene *sc, size_t i, size_t e)
{
    const char *link = rp_model_tree_link_name(m, rp_model_shape_link(m, i));
    const rp_object *o = NULL;
    bool cloud = rp_scene_cloud_member(sc, e, &o) != SIZE_MAX;
    for (size_t a = 0; a < rp_model_allowed_scene_count(m); a++) {
        const char *l, *id;
        rp_model_allowed_scene_at(m, a, &l, &id);
        if (strcmp(l, link) == 0 &&
            strcmp(id, cloud ? rp_object_name(o) : rp_scene_id_at(sc, e)) == 0)
            return true;
    }
    return false;
}

/* scene.h's order of check pairs (scene pairs only): distance, link, id. */
static int check_order(const void *pa, const void *pb)
{
    const rp_check_pair *a = pa, *b = pb;
    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    return id_cmp(a->other, b->other);
}

/* Every eligible (link shape, storage index) pair at joints q, sorted;
 * the link shapes placed at rp_model_fk's link poses. */
static rp_check_pair *brute_check(const rp_model *m, const rp_scene *sc, const double *q,
                                  const char *const *ign, size_t n_ign, size_t *n)
{
    rp_transform poses[3];
    assert_int_equal(rp_model_fk(m, NULL, q, poses), RP_OK);
    size_t nl = rp_model_link_count(m), total = total_shapes(sc), k = 0;
    rp_check_pair *pairs = malloc((nl * total + 1) * sizeof *pairs);
    assert_non_null(pairs);
    for (size_t i = 0; i < nl; i++) {
        const rp_link *l = rp_model_link_at(m, i);
        rp_link_shape ls = {l->shape, l->frame};
        rp_shape w = rp_link_shape_transform_shape(&ls, &poses[rp_model_shape_link(m, i)]);
        for (size_t e = 0; e < total; e++) {
            if (in_ignored_cloud(sc, e, ign, n_ign) || allowed_pair(m, sc, i, e))
                continue;
            rp_shape s = rp_scene_shape_at(sc, e);
            pairs[k++] = (rp_check_pair){i, RP_PAIR_SCENE, e, rp_shape_signed_distance(&w, &s)};
        }
    }
    g_sc = sc;
    qsort(pairs, k, sizeof *pairs, check_order);
    *n = k;
    return pairs;
}

static bool same_check_pair(const rp_check_pair *a, const rp_check_pair *b)
{
    return a->link == b->link && a->kind == b->kind && a->other == b->other &&
           same_bits(a->distance, b->distance);
}

#define MARGIN 0.02

/* FIRST, CLOSEST and ALL at joints q (and `batch`, a FIRST result of
 * rp_model_check_joints_batch, when not NULL) equal the brute force.
 * Returns the sorted pairs, the first *nv of them violations (caller
 * frees). */
static rp_check_pair *compare_check(const rp_model *m, const rp_scene *sc, const double *q,
                                    const char *const *ign, size_t n_ign,
                                    const rp_check_result *batch, size_t *nv)
{
    size_t nb;
    rp_check_pair *bf = brute_check(m, sc, q, ign, n_ign, &nb);
    for (*nv = 0; *nv < nb && bf[*nv].distance < MARGIN;)
        ++*nv;
    rp_check_opts o = {.has_margin = true, .margin = MARGIN, .ignore = ign, .n_ignore = n_ign};
    rp_check_result res[4];
    for (int rep = 0; rep < 3; rep++) {
        o.report = (rp_report)rep;
        assert_int_equal(rp_model_check_joints(m, sc, NULL, q, &o, &res[rep]), RP_OK);
        if (res[rep].collision != (*nv > 0))
            fail_msg("report %d: collision %d; brute force: %zu violations (link %zu, index "
                     "%zu, %.17g)",
                     rep, res[rep].collision, *nv, bf[0].link, bf[0].other, bf[0].distance);
    }
    res[3] = batch ? *batch : res[0];
    for (int k = 0; k < 4; k += 3) { /* FIRST: one of the violations */
        assert_int_equal(res[k].collision, *nv > 0);
        assert_int_equal(res[k].n_violations, *nv ? 1 : 0);
        bool listed = *nv == 0;
        for (size_t v = 0; v < *nv && !listed; v++)
            listed = same_check_pair(&res[k].violations[0], &bf[v]);
        assert_true(listed);
    }
    for (int rep = 1; rep < 3; rep++) { /* CLOSEST and ALL: the minimum */
        assert_true(res[rep].has_min);
        if (!same_check_pair(&res[rep].closest, &bf[0]))
            fail_msg("closest (%zu, %zu, %.17g), brute force (%zu, %zu, %.17g)",
                     res[rep].closest.link, res[rep].closest.other, res[rep].closest.distance,
                     bf[0].link, bf[0].other, bf[0].distance);
    }
    assert_int_equal(res[2].n_violations, *nv); /* ALL: every violation, in order */
    for (size_t v = 0; v < *nv; v++)
        assert_true(same_check_pair(&res[2].violations[v], &bf[v]));
    for (int rep = 0; rep < 3; rep++)
        rp_check_result_free(&res[rep]);
    return bf;
}

/* Random configurations against own shapes (3: scanned; 40: walked) and
 * clouds "pts" and "vox" near the arm's plane, with `ignore` of either,
 * and a model whose l2 may touch "pts". */
static void checks_equal_brute_force(void **state)
{
    (void)state;
    test_rng r = {4242};
    static const char *const as[2] = {"l2", "pts"};
    static const char *const ignores[3][1] = {{NULL}, {"pts"}, {"vox"}};
    size_t cloud_hits = 0;
    for (int big = 0; big < 2; big++) {
        rp_store *st = rp_store_new(NULL);
        rp_model *models[2] = {arm_model(st, "arm", NULL, 0), arm_model(st, "arm_as", as, 1)};
        size_t n_own = big ? 40 : 3;
        rp_shape_put own[40];
        char ids[40][24];
        rp_transform up = shift(0, 0, big ? 1.0 : 0.6);
        for (size_t k = 0; k < n_own; k++) {
            snprintf(ids[k], sizeof ids[k], "o%zu", k);
            rp_shape s = random_shape(&r, 1.5, false);
            own[k] = (rp_shape_put){ids[k], rp_transform_shape(&up, &s)};
        }
        size_t np[2] = {300, 3000};
        rp_cloud_put cp[2] = {{"pts", NULL}, {"vox", NULL}};
        for (int c = 0; c < 2; c++) { /* x, y in [-1.4, 1.4], z in 0.2 +- 0.15 */
            float *p = random_points(&r, np[c], 1.4);
            for (size_t i = 0; i < np[c]; i++)
                p[3 * i + 2] = (float)(0.2 + p[3 * i + 2] * (0.15 / 1.4));
            cp[c].cloud = cloud_ok(p, np[c], c ? 0.02 : 0.01, c ? 0.08 : 0.0);
            free(p);
        }
        rp_cell cell = {.shapes = own, .n_shapes = n_own, .clouds = cp, .n_clouds = 2};
        assert_int_equal(rp_store_put_cell(st, "s", &cell, NULL, true, NULL, NULL, NULL), RP_OK);
        rp_cloud_release(cp[0].cloud);
        rp_cloud_release(cp[1].cloud);
        const rp_scene *sc = rp_store_find(st, "s");
        double qs[2 * 24];
        for (int c = 0; c < 2 * 24; c++)
            qs[c] = rng_uniform(&r, -3.2, 3.2);
        for (int mi = 0; mi < 2; mi++) {
            for (size_t w = 0; w < 3; w++) {
                rp_check_opts o = {.report = RP_REPORT_FIRST,
                                   .has_margin = true,
                                   .margin = MARGIN,
                                   .ignore = ignores[w],
                                   .n_ignore = w ? 1 : 0};
                rp_check_result batch[24];
                size_t failed = 0, nv;
                assert_int_equal(
                    rp_model_check_joints_batch(models[mi], sc, NULL, qs, 24, &o, batch, &failed),
                    RP_OK);
                for (int c = 0; c < 24; c++) {
                    rp_check_pair *bf = compare_check(models[mi], sc, qs + 2 * c, ignores[w],
                                                      o.n_ignore, &batch[c], &nv);
                    for (size_t v = 0; v < nv; v++)
                        cloud_hits += bf[v].other >= n_own;
                    rp_check_result_free(&batch[c]);
                    free(bf);
                }
            }
        }
        rp_store_free(st);
    }
    assert_true(cloud_hits > 50);
}

/* n points in a ball of radius 0.1 around (0, 1, 0.2) (caller frees). */
static float *ball_points(test_rng *r, size_t n)
{
    float *p = malloc(3 * n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        double d[3];
        do
            for (int a = 0; a < 3; a++)
                d[a] = rng_uniform(r, -0.1, 0.1);
        while (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > 0.01);
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = (float)(d[a] + (a == 1 ? 1.0 : a == 2 ? 0.2 : 0.0));
    }
    return p;
}

/* A scene of clouds alone (no shape of its own): checks in every report
 * and motions in both modes see them. */
static void scenes_of_clouds_alone_are_checked(void **state)
{
    (void)state;
    test_rng r = {99};
    rp_store *st = rp_store_new(NULL);
    rp_model *m = arm_model(st, "arm", NULL, 0);
    float *ball = ball_points(&r, 400), *flat = random_points(&r, 300, 1.4);
    for (size_t i = 0; i < 300; i++)
        flat[3 * i + 2] = (float)(0.2 + flat[3 * i + 2] * (0.15 / 1.4));
    rp_cloud_put cp[2] = {{"z", cloud_ok(ball, 400, 0.01, 0.0)},
                          {"pts", cloud_ok(flat, 300, 0.01, 0.0)}};
    put_clouds(st, cp, 2);
    rp_cloud_release(cp[0].cloud);
    rp_cloud_release(cp[1].cloud);
    free(ball);
    free(flat);
    const rp_scene *sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_shape_count(sc), 0);
    double qs[2 * 16];
    for (int c = 0; c < 2 * 16; c++)
        qs[c] = rng_uniform(&r, -3.2, 3.2);
    rp_check_opts o = {.report = RP_REPORT_FIRST, .has_margin = true, .margin = MARGIN};
    rp_check_result batch[16];
    size_t failed = 0, nv, hits = 0;
    assert_int_equal(rp_model_check_joints_batch(m, sc, NULL, qs, 16, &o, batch, &failed), RP_OK);
    for (int c = 0; c < 16; c++) {
        free(compare_check(m, sc, qs + 2 * c, NULL, 0, &batch[c], &nv));
        hits += nv > 0;
        rp_check_result_free(&batch[c]);
    }
    assert_true(hits > 0);
    double through[4] = {-0.5, 0, 2.5, 0};
    for (int mode = 0; mode < 2; mode++) {
        rp_motion_opts mo = {.mode = mode ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE,
                             .has_margin = true,
                             .margin = MARGIN,
                             .ignore_limits = true};
        rp_motion_result res;
        assert_int_equal(rp_model_check_motion(m, sc, NULL, through, 2, &mo, &res, NULL), RP_OK);
        assert_false(res.valid);
    }
    rp_store_free(st);
}

/* Clouds "a", "b", "c" (storage ranges side by side) lie along l2 at
 * joints (pi, 0); "z", a ball of points around (0, 1, 0.2), is in l2's
 * way when j1 turns from -0.5 to 2.5.  A model whose l2 may touch "b"
 * and "z" leaves out exactly their spheres, in checks and motions. */
static void allowed_and_ignored_clouds_in_checks_and_motions(void **state)
{
    (void)state;
    test_rng r = {31337};
    rp_store *st = rp_store_new(NULL);
    static const char *const as[4] = {"l2", "b", "l2", "z"};
    rp_model *m = arm_model(st, "arm", NULL, 0), *mas = arm_model(st, "arm_as", as, 2);
    float line[3][9], *ball = ball_points(&r, 400);
    for (int i = 0; i < 9; i++) /* x from -0.75 to -1.15, the clouds interleaved */
        for (int a = 0; a < 3; a++)
            line[i % 3][3 * (i / 3) + a] = (float[]){(float)(-0.75 - 0.05 * i), 0.01f, 0.2f}[a];
    rp_shape_put far[20];
    char ids[20][24];
    for (int k = 0; k < 20; k++) { /* enough own shapes for the tree */
        snprintf(ids[k], sizeof ids[k], "f%d", k);
        far[k] = (rp_shape_put){ids[k], sphere_at(k, 0, 10, 0.5)};
    }
    for (int vox = 0; vox < 2; vox++) {
        rp_cloud_put cp[4] = {{"z", cloud_ok(ball, 400, 0.01, vox ? 0.03 : 0.0)},
                              {"c", cloud_ok(line[2], 3, 0.01, 0)},
                              {"a", cloud_ok(line[0], 3, 0.01, 0)},
                              {"b", cloud_ok(line[1], 3, 0.01, 0)}};
        rp_cell cell = {.shapes = far, .n_shapes = 20, .clouds = cp, .n_clouds = 4};
        assert_int_equal(rp_store_replace_cell(st, "s", &cell, NULL, true, NULL, NULL, NULL),
                         RP_OK);
        for (int k = 0; k < 4; k++)
            rp_cloud_release(cp[k].cloud);
        const rp_scene *sc = rp_store_find(st, "s");

        /* At (pi, 0) l2 violates every sphere of a and c, none of b. */
        double q0[2] = {3.14159265358979, 0};
        size_t nv;
        unsigned hit[3] = {0, 0, 0}; /* spheres k of a, b, c: bit k */
        free(compare_check(m, sc, q0, NULL, 0, NULL, &nv));
        rp_check_pair *bf = compare_check(mas, sc, q0, NULL, 0, NULL, &nv);
        for (size_t v = 0; v < nv; v++)
            if (bf[v].link >= 2 && bf[v].other >= 20)
                hit[rp_scene_id_at(sc, bf[v].other)[0] - 'a'] |=
                    1u << rp_scene_cloud_member(sc, bf[v].other, NULL);
        assert_true(hit[0] == 7 && hit[1] == 0 && hit[2] == 7);
        free(bf);
        const char *ign_ac[2] = {"a", "c"}, *ign_z[1] = {"z"};
        free(compare_check(mas, sc, q0, ign_ac, 2, NULL, &nv));
        assert_int_equal(nv, 0);

        /* Motions: through z, past it (folded, or turned less), and across
         * a, b and c. */
        double through[4] = {-0.5, 0, 2.5, 0}, folded[4] = {-0.5, 3, 2.5, 3};
        double clear[4] = {-0.5, 0, 0.5, 0}, across[4] = {3.1, 0, 3.2, 0};
        for (int mode = 0; mode < 2; mode++) {
            rp_motion_opts o = {.mode = mode ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE,
                                .has_margin = true,
                                .margin = MARGIN,
                                .ignore_limits = true};
            rp_motion_result res;
            double at[2];
            assert_int_equal(rp_model_check_motion(m, sc, NULL, through, 2, &o, &res, at), RP_OK);
            assert_true(!res.valid && !res.limits && res.pair.kind == RP_PAIR_SCENE);
            assert_true(res.pair.link >= 2); /* l2 reaches z, l1 does not */
            assert_true(res.pair.other >= rp_scene_shape_count(sc));
            assert_string_equal(rp_scene_id_at(sc, res.pair.other), "z");
            assert_true(res.t > 0.5 && res.t < 0.8);
            size_t n0;
            bf = brute_check(m, sc, at, NULL, 0, &n0); /* the state it reports */
            assert_true(bf[0].distance < MARGIN + 1e-5);
            free(bf);
            rp_motion_opts oi = o;
            oi.ignore = ign_z;
            oi.n_ignore = 1;
            const struct {
                const rp_model *m;
                const double *path;
                const rp_motion_opts *o;
            } valid[] = {{m, folded, &o}, {m, clear, &o}, {m, through, &oi}, {mas, through, &o}};
            for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++) {
                assert_int_equal(rp_model_check_motion(valid[k].m, sc, NULL, valid[k].path, 2,
                                                       valid[k].o, &res, NULL),
                                 RP_OK);
                assert_true(res.valid);
            }
            /* Across a, b and c: a or c, never b; clear without them. */
            assert_int_equal(rp_model_check_motion(mas, sc, NULL, across, 2, &o, &res, NULL),
                             RP_OK);
            assert_false(res.valid);
            assert_true(rp_scene_id_at(sc, res.pair.other)[0] != 'b');
            oi.ignore = ign_ac;
            oi.n_ignore = 2;
            assert_int_equal(rp_model_check_motion(mas, sc, NULL, across, 2, &oi, &res, NULL),
                             RP_OK);
            assert_true(res.valid);
        }
    }
    free(ball);
    rp_store_free(st);
}

/* ---- 5. store semantics ------------------------------------------------------------- */

/* A cloud of n points on a line from (x, 0, 0), 0.1 apart. */
static rp_cloud *line_cloud(double x, size_t n)
{
    float p[3 * 16] = {0};
    for (size_t i = 0; i < n && i < 16; i++)
        p[3 * i] = (float)(x + 0.1 * (double)i);
    return cloud_ok(p, n, 0.05, 0.0);
}

/* The storage index nearest to a small sphere at (x, 0, 0). */
static size_t nearest_at(const rp_scene *sc, double x)
{
    rp_shape q = sphere_at(x, 0, 0, 0.01);
    rp_query qq = {.shapes = &q, .n_shapes = 1};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &qq, &res), RP_OK);
    assert_true(res.has_min);
    return res.nearest.shape; /* (no pairs to free) */
}

/* `call` fails with `want` and leaves the store as it was: revisions,
 * memory, the scene's shapes (cloud spheres included) and objects. */
#define ASSERT_REFUSED(st, call, want)                                                             \
    do {                                                                                           \
        const rp_scene *sc_ = rp_store_find(st, "s");                                              \
        uint64_t rev_ = rp_store_revision(st), srev_ = rp_scene_revision(sc_);                     \
        size_t mem_ = rp_store_memory(st), n_ = total_shapes(sc_);                                 \
        size_t o_ = rp_scene_object_count(sc_);                                                    \
        assert_int_equal((call), (want));                                                          \
        sc_ = rp_store_find(st, "s");                                                              \
        assert_int_equal(rp_store_revision(st), rev_);                                             \
        assert_int_equal(rp_scene_revision(sc_), srev_);                                           \
        assert_int_equal(rp_store_memory(st), mem_);                                               \
        assert_int_equal(total_shapes(sc_), n_);                                                   \
        assert_int_equal(rp_scene_object_count(sc_), o_);                                          \
    } while (0)

static rp_change hooked; /* the last change the commit hook heard */
static rp_cloud_put hooked_cloud;
static int hook_calls;

static int hook(void *ctx, const rp_change *c)
{
    (void)ctx;
    hook_calls++;
    hooked = *c;
    hooked_cloud = c->n_clouds ? c->clouds[0] : (rp_cloud_put){NULL, NULL};
    return 0;
}

static void store_puts_replaces_and_removes_clouds(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_store_set_commit_hook(st, hook, NULL);
    /* Scene "s": own shape "wall", object "box", robot instance "r". */
    arm_model(st, "arm", NULL, 0);
    rp_shape_put wall = {"wall", sphere_at(0, 5, 0, 1)}, loc = {"a", sphere_at(0, 0, 0, 0.5)};
    rp_object_put box = {"box", shift(0, -5, 0), &loc, 1};
    rp_robot_put robot = {"r", "arm", NULL, shift(0, 0, -5)};
    rp_cell base = {.shapes = &wall,
                    .n_shapes = 1,
                    .objects = &box,
                    .n_objects = 1,
                    .robots = &robot,
                    .n_robots = 1};
    assert_int_equal(rp_store_put_cell(st, "s", &base, NULL, true, NULL, NULL, NULL), RP_OK);
    size_t own = rp_scene_shape_count(rp_store_find(st, "s"));

    /* Put: one revision, the hook hears the cloud, and the scene keeps its
     * reference past the caller's release. */
    rp_cloud *c1 = line_cloud(10, 4), *c2 = line_cloud(20, 3);
    rp_cloud_put p1 = {"c1", c1}, p2 = {"c1", c2};
    uint64_t rev = rp_store_revision(st);
    hook_calls = 0;
    put_clouds(st, &p1, 1);
    rp_cloud_release(c1);
    assert_int_equal(rp_store_revision(st), rev + 1);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(hooked.kind, RP_CHANGE_SCENE_PUT);
    assert_int_equal(hooked.n_clouds, 1);
    assert_string_equal(hooked_cloud.name, "c1");
    assert_ptr_equal(hooked_cloud.cloud, c1);
    const rp_scene *sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_revision(sc), rev + 1);
    assert_ptr_equal(rp_object_cloud(rp_scene_object_find(sc, "c1")), c1);
    assert_null(rp_object_cloud(rp_scene_object_find(sc, "box")));
    assert_int_equal(total_shapes(sc), own + 4);
    assert_int_equal(nearest_at(sc, 10.2), own + 2);

    /* Replaced by name: the new spheres, the old gone, one revision; a
     * snapshot taken before keeps the old cloud. */
    rp_store *snap = rp_store_snapshot(st);
    assert_non_null(snap);
    put_clouds(st, &p2, 1);
    assert_int_equal(rp_store_revision(st), rev + 2);
    assert_ptr_equal(hooked_cloud.cloud, c2);
    sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_object_count(sc), 3);
    assert_ptr_equal(rp_object_cloud(rp_scene_object_find(sc, "c1")), c2);
    assert_int_equal(total_shapes(sc), own + 3);
    assert_int_equal(nearest_at(sc, 20.1), own + 1);
    assert_int_equal(nearest_at(sc, 10.2), own + 0);
    const rp_scene *old = rp_store_find(snap, "s");
    assert_int_equal(rp_scene_revision(old), rev + 1);
    assert_int_equal(total_shapes(old), own + 4);
    assert_int_equal(nearest_at(old, 10.2), own + 2);
    assert_ptr_equal(rp_object_cloud(rp_scene_object_find(old, "c1")), c1);
    rp_store_free(snap);

    /* Refused, changing nothing: a cloud named like an own shape, a bad
     * name, no cloud; a cloud and an object of one name in one put. */
    rp_edit_error err;
    rp_cloud_put bad[] = {{"wall", c2}, {"a/b", c2}, {"", c2}, {"c9", NULL}};
    for (size_t k = 0; k < 4; k++) {
        rp_cell cc = {.clouds = &bad[k], .n_clouds = 1};
        ASSERT_REFUSED(st, rp_store_put_cell(st, "s", &cc, NULL, false, NULL, NULL, &err),
                       k ? RP_ERR_INVALID_ARG : RP_ERR_EXISTS);
        assert_true(err.what == RP_EDIT_CLOUD && err.index == 0);
    }
    rp_object_put same = {"c7", shift(0, 0, 0), &loc, 1};
    rp_cloud_put c7 = {"c7", c2};
    rp_cell both = {.objects = &same, .n_objects = 1, .clouds = &c7, .n_clouds = 1};
    ASSERT_REFUSED(st, rp_store_put_cell(st, "s", &both, NULL, false, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG);
    /* Own shapes named like the cloud, or like one of its spheres. */
    rp_shape_put as_cloud = {"c1", sphere_at(0, 0, 0, 1)}, owned = {"c1/0", sphere_at(0, 0, 0, 1)};
    ASSERT_REFUSED(st, rp_store_put(st, "s", &as_cloud, 1, NULL, false, NULL, NULL), RP_ERR_EXISTS);
    ASSERT_REFUSED(st, rp_store_put(st, "s", &owned, 1, NULL, false, NULL, NULL), RP_ERR_EXISTS);
    /* Moved, attached, or attached to. */
    rp_object_move mv = {"c1", shift(1, 0, 0)};
    ASSERT_REFUSED(st, rp_store_move(st, "s", &mv, 1, NULL, NULL, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(err.what, RP_EDIT_MOVE);
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "c1", "r", "l1", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG);
    assert_int_equal(err.what, RP_EDIT_OBJECT);
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "box", "c1", "l1", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG);
    assert_int_equal(err.what, RP_EDIT_ROBOT);

    /* Removed by name: counted once, one revision, its spheres gone. */
    rev = rp_store_revision(st);
    const char *gone[1] = {"c1"};
    size_t removed = 0;
    assert_int_equal(rp_store_remove(st, "s", gone, 1, NULL, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(rp_store_revision(st), rev + 1);
    assert_int_equal(hooked.kind, RP_CHANGE_SCENE_REMOVE);
    sc = rp_store_find(st, "s");
    assert_null(rp_scene_object_find(sc, "c1"));
    assert_int_equal(total_shapes(sc), own);
    assert_true(nearest_at(sc, 20.1) < own);

    /* Names are shared with objects and robot instances, and a put
     * replaces its namesake whole whatever its kind (as an object put
     * replaces a robot instance): a cloud "box" replaces the object. */
    rp_cloud_put as_box = {"box", c2};
    put_clouds(st, &as_box, 1);
    sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_find(sc, "box/a"), SIZE_MAX);
    assert_ptr_equal(rp_object_cloud(rp_scene_object_find(sc, "box")), c2);
    assert_int_equal(total_shapes(sc), own - 1 + 3);

    /* replace_cell keeps only the clouds it lists (the hook hears them). */
    rev = rp_store_revision(st);
    rp_cell only_wall = {.shapes = &wall, .n_shapes = 1, .clouds = &p2, .n_clouds = 1};
    assert_int_equal(rp_store_replace_cell(st, "s", &only_wall, NULL, false, NULL, NULL, NULL),
                     RP_OK);
    assert_int_equal(hooked.kind, RP_CHANGE_SCENE_REPLACE);
    assert_int_equal(hooked.n_clouds, 1);
    sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_object_count(sc), 1); /* "box" and "r" went */
    assert_int_equal(total_shapes(sc), 1 + 3);
    only_wall.n_clouds = 0;
    assert_int_equal(rp_store_replace_cell(st, "s", &only_wall, NULL, false, NULL, NULL, NULL),
                     RP_OK);
    assert_int_equal(rp_store_revision(st), rev + 2);
    assert_int_equal(hooked.n_clouds, 0);
    sc = rp_store_find(st, "s");
    assert_int_equal(rp_scene_object_count(sc), 0);
    assert_int_equal(total_shapes(sc), 1);
    assert_int_equal(nearest_at(sc, 20.1), 0);
    rp_cloud_release(c2);
    rp_store_free(st);
}

/* ---- 6. memory accounting ----------------------------------------------------------- */

static void memory_returns_after_put_and_remove(void **state)
{
    (void)state;
    test_rng r = {5};
    rp_store *st = rp_store_new(NULL);
    rp_shape_put wall = {"wall", sphere_at(0, 5, 0, 1)};
    assert_int_equal(rp_store_put(st, "s", &wall, 1, NULL, true, NULL, NULL), RP_OK);
    assert_int_equal(rp_store_put(st, "t", &wall, 1, NULL, true, NULL, NULL), RP_OK);
    float *xyz = random_points(&r, 5000, 2);
    rp_cloud_put p = {"pc", cloud_ok(xyz, 5000, 0.01, 0.0)};
    free(xyz);
    rp_cell cell = {.clouds = &p, .n_clouds = 1};
    const char *gone[1] = {"pc"};
    for (int round = 0; round < 3; round++) {
        size_t m0 = rp_store_memory(st), cb = rp_cloud_bytes(p.cloud);
        assert_int_equal(rp_store_put_cell(st, "s", &cell, NULL, false, NULL, NULL, NULL), RP_OK);
        assert_true(rp_store_memory(st) >= m0 + cb);
        if (round == 1) /* in two scenes: each holds it */
            assert_int_equal(rp_store_put_cell(st, "t", &cell, NULL, false, NULL, NULL, NULL),
                             RP_OK);
        size_t m1 = rp_store_memory(st); /* replaced by itself: the same */
        assert_int_equal(rp_store_put_cell(st, "s", &cell, NULL, false, NULL, NULL, NULL), RP_OK);
        assert_int_equal(rp_store_memory(st), m1);
        rp_store *snap = round == 2 ? rp_store_snapshot(st) : NULL;
        assert_int_equal(rp_store_remove(st, "s", gone, 1, NULL, NULL, NULL, NULL), RP_OK);
        if (round == 1)
            assert_int_equal(rp_store_remove(st, "t", gone, 1, NULL, NULL, NULL, NULL), RP_OK);
        if (!snap) {
            assert_int_equal(rp_store_memory(st), m0);
            continue;
        }
        /* A snapshot holds the cloud until it is freed.  (The copy of the
         * scene the removal made may keep a few bytes more than the
         * scene it replaced: not compared.) */
        assert_true(rp_store_memory(st) >= m0 + cb);
        rp_store_free(snap);
        assert_true(rp_store_memory(st) < m0 + cb);
    }
    rp_cloud_release(p.cloud);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(building_keeps_points_and_voxel_centroids),
        cmocka_unit_test(bad_input_is_refused_empty_and_single_clouds_work),
        cmocka_unit_test(queries_equal_brute_force),
        cmocka_unit_test(checks_equal_brute_force),
        cmocka_unit_test(scenes_of_clouds_alone_are_checked),
        cmocka_unit_test(allowed_and_ignored_clouds_in_checks_and_motions),
        cmocka_unit_test(store_puts_replaces_and_removes_clouds),
        cmocka_unit_test(memory_returns_after_put_and_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
