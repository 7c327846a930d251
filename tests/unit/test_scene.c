/* SPDX-License-Identifier: MIT */
/*
 * Scene store: scenes by name, shapes by id, store-wide revisions and
 * compare-and-set, whole-content replacement,
 * the per-scene shape limit, memory accounting, and the scene queries
 * (nearest pair, pairs strictly below a threshold, first-only, subsets),
 * checked against a simple reference model and brute force.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"

#include "repose/scene.h"

/* ---- helpers ------------------------------------------------------------ */

static rp_shape_put P(const char *id, rp_shape shape)
{
    rp_shape_put p = {id, shape};
    return p;
}

/* A random sphere or capsule in a 10 m cube, radius below 1 m. */
static rp_shape random_shape(test_rng *r)
{
    double x = rng_uniform(r, -5, 5), y = rng_uniform(r, -5, 5), z = rng_uniform(r, -5, 5);
    double rad = rng_uniform(r, 0, 1);
    if (rng_next(r) & 1)
        return sphere(x, y, z, rad);
    return capsule(x, y, z, x + rng_uniform(r, -1, 1), y + rng_uniform(r, -1, 1),
                   z + rng_uniform(r, -1, 1), rad);
}

/* A shape on an integer grid with radius 0, 0.5 or 1, so that many pairs of
 * a query end up at exactly the same distance (ties on purpose). */
static rp_shape grid_shape(test_rng *r)
{
    double c[6];
    for (int i = 0; i < 6; i++)
        c[i] = (double)(int)(rng_next(r) % 5) - 2.0;
    double rad = 0.5 * (double)(rng_next(r) % 3);
    if (rng_next(r) % 3)
        return sphere(c[0], c[1], c[2], rad);
    return capsule(c[0], c[1], c[2], c[3], c[4], c[5], rad);
}

static bool vec_same(rp_vec3 a, rp_vec3 b)
{
    return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z);
}

/* Field-wise bitwise equality (a memcmp would also compare padding). */
static bool shapes_equal(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == RP_SHAPE_SPHERE)
        return vec_same(a->sphere.center, b->sphere.center) &&
               same_bits(a->sphere.radius, b->sphere.radius);
    return vec_same(a->capsule.a, b->capsule.a) && vec_same(a->capsule.b, b->capsule.b) &&
           same_bits(a->capsule.radius, b->capsule.radius);
}

/* Asserts that scene `sc` holds shape `want` under `id`. */
static void assert_holds(const rp_scene *sc, const char *id, rp_shape want)
{
    size_t i = rp_scene_find(sc, id);
    if (i == SIZE_MAX)
        fail_msg("id \"%s\" missing from scene \"%s\"", id, rp_scene_name(sc));
    assert_true(i < rp_scene_shape_count(sc));
    assert_string_equal(rp_scene_id_at(sc, i), id);
    assert_true(shapes_equal(SCENE_SHAPE(sc, i), &want));
}

static void assert_absent(const rp_scene *sc, const char *id)
{
    if (rp_scene_find(sc, id) != SIZE_MAX)
        fail_msg("id \"%s\" unexpectedly in scene \"%s\"", id, rp_scene_name(sc));
}

/* A copy of everything observable about a scene, to prove that a failed
 * call changed nothing (storage order included: a failure is no mutation). */
typedef struct snapshot {
    uint64_t revision;
    size_t count;
    char **ids;
    rp_shape *shapes;
} snapshot;

static snapshot take_snapshot(const rp_scene *sc)
{
    snapshot s = {rp_scene_revision(sc), rp_scene_shape_count(sc), NULL, NULL};
    s.ids = calloc(s.count + 1, sizeof *s.ids);
    s.shapes = calloc(s.count + 1, sizeof *s.shapes);
    assert_non_null(s.ids);
    assert_non_null(s.shapes);
    for (size_t i = 0; i < s.count; i++) {
        const char *id = rp_scene_id_at(sc, i);
        s.ids[i] = malloc(strlen(id) + 1);
        assert_non_null(s.ids[i]);
        strcpy(s.ids[i], id);
        s.shapes[i] = rp_scene_shape_at(sc, i);
    }
    return s;
}

/* Asserts the scene still matches the snapshot, then frees the snapshot. */
static void assert_unchanged(const rp_scene *sc, snapshot *s)
{
    assert_int_equal(rp_scene_revision(sc), s->revision);
    assert_int_equal(rp_scene_shape_count(sc), s->count);
    for (size_t i = 0; i < s->count; i++) {
        assert_string_equal(rp_scene_id_at(sc, i), s->ids[i]);
        assert_true(shapes_equal(SCENE_SHAPE(sc, i), &s->shapes[i]));
        assert_int_equal(rp_scene_find(sc, s->ids[i]), i);
        free(s->ids[i]);
    }
    free(s->ids);
    free(s->shapes);
}

/* Asserts that rp_scene_sorted lists every storage index once, by id in
 * strcmp order. */
static void assert_sorted_view(const rp_scene *sc)
{
    size_t n = rp_scene_shape_count(sc);
    size_t *order = malloc((n + 1) * sizeof *order);
    bool *seen = calloc(n + 1, sizeof *seen);
    assert_non_null(order);
    assert_non_null(seen);
    assert_int_equal(rp_scene_sorted(sc, order), RP_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(order[i] < n);
        assert_false(seen[order[i]]);
        seen[order[i]] = true;
        if (i > 0)
            assert_true(strcmp(rp_scene_id_at(sc, order[i - 1]), rp_scene_id_at(sc, order[i])) < 0);
    }
    free(order);
    free(seen);
}

/* FNV-1a, the hash src/scene/scene.c uses for its id index.  Mirrored here
 * only to pick ids that land in the same buckets; if the store's hash
 * changes, the tests using it still check correctness, just with less
 * clustering. */
static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* Pairs of ids with the same full 32-bit FNV-1a hash (found offline by a
 * birthday search): the index must tell them apart by the string. */
static const char *const colliding_ids[] = {
    "m1sxs4cw", "wjte5sjl", "qwwatosc", "efngopnj", "bmniecto", "gpkovib1", "q2oveamg", "3nb3w3ou",
    "aets1zwm", "fcdybas2", "w3lyngya", "azmxwoag", "0w5kwueb", "x4rxumcs", "fbcgx1vw", "wfmxm3hf",
};
#define N_COLLIDING (sizeof colliding_ids / sizeof *colliding_ids)

/* ---- reference model for random puts and removes ------------------------ */

/* What a scene should hold: for each id of a fixed pool, whether it is live
 * and its shape. */
typedef struct model {
    size_t n;
    char (*ids)[24];
    bool *live;
    rp_shape *shapes;
    size_t count;
} model;

static model model_new(size_t n)
{
    model m = {n, calloc(n, sizeof *m.ids), calloc(n, sizeof *m.live), calloc(n, sizeof *m.shapes),
               0};
    assert_non_null(m.ids);
    assert_non_null(m.live);
    assert_non_null(m.shapes);
    return m;
}

static void model_free(model *m)
{
    free(m->ids);
    free(m->live);
    free(m->shapes);
}

/* Every pool id is found exactly when live, at an index whose id and shape
 * agree; live ids then cover the dense indices 0..count-1 one to one. */
static void assert_matches_model(const rp_scene *sc, const model *m)
{
    assert_int_equal(rp_scene_shape_count(sc), m->count);
    for (size_t j = 0; j < m->n; j++) {
        if (m->live[j])
            assert_holds(sc, m->ids[j], m->shapes[j]);
        else
            assert_absent(sc, m->ids[j]);
    }
}

/* Ids that are never put, mixed into removals. */
static const char *const absent_ids[] = {"absent", "absent:1", "zz/none", "-", "Q"};

/* Runs `ops` random operations on `sc`, mirrored in `m`: puts of 1..8 shapes
 * (duplicates possible), removes of 1..8 ids (unknown ids and duplicates
 * possible), and compare-and-set calls that must fail.  Phases alternate
 * between growing and shrinking so the index is rebuilt and emptied. */
static void run_random_ops(rp_scene *sc, model *m, test_rng *r, int ops, int check_every)
{
    rp_shape_put batch[8];
    const char *ids[8];
    size_t pick[8];
    for (int op = 0; op < ops; op++) {
        uint64_t rev = rp_scene_revision(sc);
        bool growing = (op / 400) % 2 == 0;
        unsigned dice = (unsigned)(rng_next(r) % 16);
        size_t k = 1 + (size_t)(rng_next(r) % 8);
        for (size_t b = 0; b < k; b++)
            pick[b] = (size_t)(rng_next(r) % m->n);
        if (dice == 15) {
            /* A stale compare-and-set: nothing may change. */
            uint64_t stale = rev + 1 + rng_next(r) % 3, actual = 0;
            for (size_t b = 0; b < k; b++)
                batch[b] = P(m->ids[pick[b]], random_shape(r));
            for (size_t b = 0; b < k; b++)
                ids[b] = m->ids[pick[b]];
            rp_status s = (rng_next(r) & 1) ? rp_scene_put(sc, batch, k, &stale, &actual)
                                            : rp_scene_remove(sc, ids, k, &stale, NULL, &actual);
            assert_int_equal(s, RP_ERR_REVISION);
            assert_int_equal(actual, rev);
            assert_int_equal(rp_scene_revision(sc), rev);
        } else if (dice < (growing ? 10u : 5u)) {
            for (size_t b = 0; b < k; b++)
                batch[b] = P(m->ids[pick[b]], random_shape(r));
            const uint64_t *cas = (rng_next(r) & 1) ? &rev : NULL;
            assert_int_equal(rp_scene_put(sc, batch, k, cas, NULL), RP_OK);
            for (size_t b = 0; b < k; b++) {
                if (!m->live[pick[b]])
                    m->count++;
                m->live[pick[b]] = true;
                m->shapes[pick[b]] = batch[b].shape;
            }
            assert_int_equal(rp_scene_revision(sc), rev + 1);
        } else {
            size_t want = 0;
            for (size_t b = 0; b < k; b++) {
                if (rng_next(r) % 6 == 0) {
                    ids[b] = absent_ids[rng_next(r) % (sizeof absent_ids / sizeof *absent_ids)];
                    continue;
                }
                ids[b] = m->ids[pick[b]];
                if (m->live[pick[b]]) {
                    m->live[pick[b]] = false;
                    want++;
                }
            }
            size_t removed = SIZE_MAX;
            const uint64_t *cas = (rng_next(r) & 1) ? &rev : NULL;
            assert_int_equal(rp_scene_remove(sc, ids, k, cas, &removed, NULL), RP_OK);
            assert_int_equal(removed, want);
            m->count -= want;
            assert_int_equal(rp_scene_revision(sc), rev + 1);
        }
        assert_int_equal(rp_scene_shape_count(sc), m->count);
        if (op % check_every == 0 || op == ops - 1)
            assert_matches_model(sc, m);
    }
}

/* ---- store: create, delete, list, find ---------------------------------- */

static void new_store_is_empty_and_fills_in_default_limits(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    assert_non_null(st);
    assert_int_equal(rp_store_get_limits(st).max_shapes_per_scene, RP_DEFAULT_MAX_SHAPES_PER_SCENE);
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_shape_count(st), 0);
    assert_null(rp_store_find(st, "anything"));
    assert_true(rp_store_memory(st) > 0);
    rp_store_free(st);

    rp_store_limits zero = {0, 0};
    st = rp_store_new(&zero);
    assert_int_equal(rp_store_get_limits(st).max_shapes_per_scene, RP_DEFAULT_MAX_SHAPES_PER_SCENE);
    rp_store_free(st);

    rp_store_limits ten = {10, 0};
    st = rp_store_new(&ten);
    assert_int_equal(rp_store_get_limits(st).max_shapes_per_scene, 10);
    rp_store_free(st);

    rp_store_free(NULL);
}

static void create_without_shapes_starts_empty_at_the_next_store_revision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    assert_int_equal(rp_store_revision(st), 0);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "empty", NULL, 0, &sc), RP_OK);
    assert_non_null(sc);
    assert_ptr_equal(rp_store_find(st, "empty"), sc);
    assert_string_equal(rp_scene_name(sc), "empty");
    /* The first mutation of a fresh store takes number 1. */
    assert_int_equal(rp_scene_revision(sc), 1);
    assert_int_equal(rp_store_revision(st), 1);
    assert_int_equal(rp_scene_shape_count(sc), 0);
    assert_absent(sc, "x");
    assert_int_equal(rp_store_scene_count(st), 1);
    assert_int_equal(rp_store_shape_count(st), 0);
    /* `out` may be NULL.  A second scene takes the next number: revisions
     * are store-wide, not per scene; the first scene keeps its own. */
    assert_int_equal(rp_store_create(st, "other", NULL, 0, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(rp_store_find(st, "other")), 2);
    assert_int_equal(rp_store_revision(st), 2);
    assert_int_equal(rp_scene_revision(sc), 1);
    rp_store_free(st);
}

static void create_with_shapes_holds_them_at_revision_one(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put shapes[] = {
        P("post", capsule(0, 0, 0, 0, 0, 2, 0.1)),
        P("ball", sphere(1, 2, 3, 0.5)),
        P("table/top", sphere(-1, 0, 0.75, 0)),
    };
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "lab", shapes, 3, &sc), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 1);
    assert_int_equal(rp_store_revision(st), 1); /* one mutation, however many shapes */
    assert_int_equal(rp_scene_shape_count(sc), 3);
    for (size_t i = 0; i < 3; i++)
        assert_holds(sc, shapes[i].id, shapes[i].shape);
    assert_int_equal(rp_store_shape_count(st), 3);
    rp_store_free(st);
}

static void create_with_duplicate_ids_keeps_the_last_shape_once(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put shapes[] = {
        P("a", sphere(0, 0, 0, 1)),
        P("b", sphere(1, 0, 0, 1)),
        P("a", sphere(2, 0, 0, 1)),
        P("a", sphere(3, 0, 0, 1)),
    };
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "dup", shapes, 4, &sc), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 1);
    assert_int_equal(rp_scene_shape_count(sc), 2);
    assert_holds(sc, "a", sphere(3, 0, 0, 1));
    assert_holds(sc, "b", sphere(1, 0, 0, 1));
    assert_int_equal(rp_store_shape_count(st), 2);
    rp_store_free(st);
}

static void create_of_existing_name_fails_with_exists_and_changes_nothing(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put first[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(5, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", first, 2, &sc), RP_OK);
    assert_int_equal(rp_scene_put(sc, NULL, 0, NULL, NULL), RP_OK); /* revision 2 */

    snapshot snap = take_snapshot(sc);
    size_t mem = rp_store_memory(st);
    rp_shape_put second[] = {P("a", sphere(9, 9, 9, 9)), P("c", sphere(1, 1, 1, 1))};
    assert_int_equal(rp_store_create(st, "s", second, 2, NULL), RP_ERR_EXISTS);
    assert_int_equal(rp_store_create(st, "s", NULL, 0, NULL), RP_ERR_EXISTS);
    assert_int_equal(rp_store_revision(st), 2); /* a failed create takes no number */
    assert_ptr_equal(rp_store_find(st, "s"), sc);
    assert_unchanged(sc, &snap);
    assert_int_equal(rp_store_scene_count(st), 1);
    assert_int_equal(rp_store_shape_count(st), 2);
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

static void store_copies_scene_names_and_shape_ids(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    char name[16], id[16];
    strcpy(name, "copied");
    strcpy(id, "shape");
    rp_shape_put p = P(id, sphere(0, 0, 0, 1));
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, name, &p, 1, &sc), RP_OK);
    strcpy(name, "XXXXXX");
    strcpy(id, "YYYYY");
    assert_string_equal(rp_scene_name(sc), "copied");
    assert_ptr_equal(rp_store_find(st, "copied"), sc);
    assert_null(rp_store_find(st, "XXXXXX"));
    assert_holds(sc, "shape", sphere(0, 0, 0, 1));
    assert_absent(sc, "YYYYY");
    rp_store_free(st);
}

static void delete_of_missing_scene_is_not_found(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    assert_int_equal(rp_store_delete(st, "ghost"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_revision(st), 0);
    assert_int_equal(rp_store_create(st, "real", NULL, 0, NULL), RP_OK);
    assert_int_equal(rp_store_delete(st, "rea"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_delete(st, "reall"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_scene_count(st), 1);
    assert_int_equal(rp_store_revision(st), 1); /* failed deletes take no number */
    assert_int_equal(rp_store_delete(st, "real"), RP_OK);
    assert_int_equal(rp_store_revision(st), 2); /* a deletion is a mutation */
    assert_int_equal(rp_store_delete(st, "real"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_revision(st), 2);
    rp_store_free(st);
}

static void deleted_scene_is_gone_and_recreating_it_starts_empty_at_a_fresh_revision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(1, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 2, &sc), RP_OK);
    assert_int_equal(rp_scene_put(sc, p, 1, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    assert_int_equal(rp_store_revision(st), 3); /* the deletion took 3 */
    assert_null(rp_store_find(st, "s"));
    assert_int_equal(rp_store_shape_count(st), 0);

    /* The new scene of the same name never reuses a number: a client that
     * saw revision 1 or 2 of the old one cannot mistake the new one for it
     * (nor for the deletion). */
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 4);
    assert_int_equal(rp_store_revision(st), 4);
    assert_int_equal(rp_scene_shape_count(sc), 0);
    assert_absent(sc, "a");
    /* Again, through rp_store_put with create and if_revision 0. */
    uint64_t zero = 0;
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    assert_int_equal(rp_store_put(st, "s", p, 1, &zero, true, &sc, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 6);
    assert_holds(sc, "a", p[0].shape);
    rp_store_free(st);
}

/* Scene names of a few shapes, so strcmp order differs from numeric order
 * and names share prefixes. */
static void scene_name(char *buf, size_t size, size_t i)
{
    static const char *const prefix[] = {"", "a", "a.", "B", "lab-", "z_"};
    snprintf(buf, size, "%s%zu", prefix[i % 6], i / 6);
}

static void store_list_stays_sorted_by_name_under_random_creates_and_deletes(void **state)
{
    (void)state;
    enum { NAMES = 150, OPS = 3000 };
    rp_store *st = rp_store_new(NULL);
    bool live[NAMES] = {false};
    size_t count = 0;
    char name[32];
    test_rng r = {42};
    for (int op = 0; op < OPS; op++) {
        size_t i = (size_t)(rng_next(&r) % NAMES);
        scene_name(name, sizeof name, i);
        /* Lean towards creating early, towards deleting late. */
        bool create = rng_next(&r) % 100 < (op < OPS / 2 ? 70u : 30u);
        if (create) {
            rp_status s = rp_store_create(st, name, NULL, 0, NULL);
            assert_int_equal(s, live[i] ? RP_ERR_EXISTS : RP_OK);
            if (!live[i])
                count++;
            live[i] = true;
        } else {
            rp_status s = rp_store_delete(st, name);
            assert_int_equal(s, live[i] ? RP_OK : RP_ERR_NOT_FOUND);
            if (live[i])
                count--;
            live[i] = false;
        }
        assert_int_equal(rp_store_scene_count(st), count);
        if (op % 10 != 0 && op != OPS - 1)
            continue;
        for (size_t k = 0; k < count; k++) {
            const rp_scene *sc = rp_store_scene_at(st, k);
            if (k > 0)
                assert_true(strcmp(rp_scene_name(rp_store_scene_at(st, k - 1)), rp_scene_name(sc)) <
                            0);
            assert_ptr_equal(rp_store_find(st, rp_scene_name(sc)), sc);
        }
        for (size_t k = 0; k < NAMES; k++) {
            scene_name(name, sizeof name, k);
            rp_scene *sc = rp_store_find(st, name);
            if (!live[k]) {
                assert_null(sc);
                continue;
            }
            assert_non_null(sc);
            assert_string_equal(rp_scene_name(sc), name);
        }
    }
    rp_store_free(st);
}

static void store_find_matches_whole_names_only(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    const char *names[] = {"ab", "a", "abc", "b", "A", "a.b", "a-b"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        assert_int_equal(rp_store_create(st, names[i], NULL, 0, NULL), RP_OK);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        rp_scene *sc = rp_store_find(st, names[i]);
        assert_non_null(sc);
        assert_string_equal(rp_scene_name(sc), names[i]);
    }
    assert_null(rp_store_find(st, ""));
    assert_null(rp_store_find(st, "abcd"));
    assert_null(rp_store_find(st, "B"));
    assert_null(rp_store_find(st, "c"));
    assert_null(rp_store_find(st, "0"));
    rp_store_free(st);
}

/* ---- put ---------------------------------------------------------------- */

static void put_inserts_new_ids_and_bumps_revision_once(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    rp_shape_put p[] = {P("x", sphere(1, 0, 0, 1)), P("y", capsule(0, 0, 0, 1, 1, 1, 0.2)),
                        P("z", sphere(0, 0, 1, 0))};
    assert_int_equal(rp_scene_put(sc, p, 3, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 3);
    for (size_t i = 0; i < 3; i++)
        assert_holds(sc, p[i].id, p[i].shape);
    rp_shape_put q = P("w", sphere(7, 7, 7, 7));
    assert_int_equal(rp_scene_put(sc, &q, 1, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 3);
    assert_int_equal(rp_scene_shape_count(sc), 4);
    assert_holds(sc, "w", q.shape);
    assert_int_equal(rp_store_shape_count(st), 4);
    rp_store_free(st);
}

static void put_of_existing_id_replaces_shape_and_bumps_revision_once(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(3, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 2, &sc), RP_OK);
    size_t mem = rp_store_memory(st);

    rp_shape_put q = P("a", capsule(0, 0, 0, 0, 1, 0, 0.25));
    assert_int_equal(rp_scene_put(sc, &q, 1, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 2);
    assert_holds(sc, "a", q.shape);
    assert_holds(sc, "b", p[1].shape);
    assert_int_equal(rp_store_shape_count(st), 2);
    assert_int_equal(rp_store_memory(st), mem); /* a replacement allocates nothing */
    rp_store_free(st);
}

static void empty_put_bumps_revision_and_changes_nothing_else(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1))};
    rp_scene *sc = NULL, *empty = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 1, &sc), RP_OK);       /* 1 */
    assert_int_equal(rp_store_create(st, "e", NULL, 0, &empty), RP_OK); /* 2 */
    size_t mem = rp_store_memory(st);
    /* The two scenes' puts interleave the store's numbers. */
    for (uint64_t k = 0; k < 3; k++) {
        assert_int_equal(rp_scene_put(sc, NULL, 0, NULL, NULL), RP_OK);
        assert_int_equal(rp_scene_revision(sc), 3 + 2 * k);
        assert_int_equal(rp_scene_put(empty, NULL, 0, NULL, NULL), RP_OK);
        assert_int_equal(rp_scene_revision(empty), 4 + 2 * k);
        assert_int_equal(rp_scene_revision(sc), 3 + 2 * k);
        assert_int_equal(rp_store_revision(st), 4 + 2 * k);
    }
    uint64_t rev = rp_scene_revision(sc);
    assert_int_equal(rp_scene_put(sc, p, 0, &rev, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), rp_store_revision(st));
    assert_int_equal(rp_scene_revision(sc), rp_scene_revision(empty) + 1);
    assert_int_equal(rp_scene_shape_count(sc), 1);
    assert_holds(sc, "a", p[0].shape);
    assert_int_equal(rp_scene_shape_count(empty), 0);
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

static void later_duplicate_ids_in_one_put_win_and_count_once(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put init[] = {P("old", sphere(0, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", init, 1, &sc), RP_OK);
    rp_shape_put p[] = {
        P("new", sphere(1, 0, 0, 1)),   P("old", sphere(2, 0, 0, 1)), P("new", sphere(3, 0, 0, 1)),
        P("other", sphere(4, 0, 0, 1)), P("old", sphere(5, 0, 0, 1)), P("new", sphere(6, 0, 0, 1)),
    };
    assert_int_equal(rp_scene_put(sc, p, 6, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 3);
    assert_int_equal(rp_store_shape_count(st), 3);
    assert_holds(sc, "old", sphere(5, 0, 0, 1));
    assert_holds(sc, "new", sphere(6, 0, 0, 1));
    assert_holds(sc, "other", sphere(4, 0, 0, 1));
    assert_sorted_view(sc);
    rp_store_free(st);
}

static void put_with_matching_if_revision_applies(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    for (uint64_t rev = 1; rev <= 4; rev++) {
        char id[8];
        snprintf(id, sizeof id, "i%u", (unsigned)rev);
        rp_shape_put p = P(id, sphere((double)rev, 0, 0, 1));
        uint64_t actual = 12345;
        assert_int_equal(rp_scene_put(sc, &p, 1, &rev, &actual), RP_OK);
        assert_int_equal(actual, 12345); /* only written on a conflict */
        assert_int_equal(rp_scene_revision(sc), rev + 1);
        assert_holds(sc, id, p.shape);
    }
    assert_int_equal(rp_scene_shape_count(sc), 4);
    rp_store_free(st);
}

static void put_with_stale_if_revision_fails_reports_actual_and_applies_nothing(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put init[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(2, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", init, 2, &sc), RP_OK);
    assert_int_equal(rp_scene_put(sc, NULL, 0, NULL, NULL), RP_OK); /* revision 2 */
    size_t mem = rp_store_memory(st);

    rp_shape_put p[] = {P("a", sphere(9, 9, 9, 1)), P("c", sphere(1, 1, 1, 1))};
    const uint64_t stale[] = {0, 1, 3, UINT64_MAX};
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
        snapshot snap = take_snapshot(sc);
        uint64_t actual = 0;
        assert_int_equal(rp_scene_put(sc, p, 2, &stale[i], &actual), RP_ERR_REVISION);
        assert_int_equal(actual, 2);
        assert_unchanged(sc, &snap);
        assert_absent(sc, "c");
        assert_int_equal(rp_store_shape_count(st), 2);
        assert_int_equal(rp_store_memory(st), mem);
    }
    /* actual_revision may be NULL. */
    uint64_t one = 1;
    assert_int_equal(rp_scene_put(sc, p, 2, &one, NULL), RP_ERR_REVISION);
    assert_int_equal(rp_scene_revision(sc), 2);
    /* An empty put is compared too. */
    assert_int_equal(rp_scene_put(sc, NULL, 0, &one, NULL), RP_ERR_REVISION);
    assert_int_equal(rp_scene_revision(sc), 2);
    rp_store_free(st);
}

static void store_put_creates_missing_scene_at_the_next_store_revision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(1, 0, 0, 1)),
                        P("a", sphere(2, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_put(st, "fresh", p, 3, NULL, true, &sc, NULL), RP_OK);
    assert_non_null(sc);
    assert_ptr_equal(rp_store_find(st, "fresh"), sc);
    assert_int_equal(rp_scene_revision(sc), 1);
    assert_int_equal(rp_scene_shape_count(sc), 2);
    assert_holds(sc, "a", sphere(2, 0, 0, 1));

    /* if_revision 0 means "must not exist yet". */
    uint64_t zero = 0;
    sc = NULL;
    assert_int_equal(rp_store_put(st, "zero", p, 1, &zero, true, &sc, NULL), RP_OK);
    assert_non_null(sc);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_holds(sc, "a", p[0].shape);

    /* An empty put creates an empty scene; `out` may be NULL. */
    assert_int_equal(rp_store_put(st, "bare", NULL, 0, NULL, true, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(rp_store_find(st, "bare")), 3);
    assert_int_equal(rp_store_revision(st), 3);
    assert_int_equal(rp_scene_shape_count(rp_store_find(st, "bare")), 0);
    assert_int_equal(rp_store_scene_count(st), 3);
    assert_int_equal(rp_store_shape_count(st), 3);
    rp_store_free(st);
}

static void
store_put_with_nonzero_if_revision_on_missing_scene_conflicts_with_actual_zero(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    assert_int_equal(rp_store_create(st, "other", NULL, 0, NULL), RP_OK);
    size_t mem = rp_store_memory(st);
    rp_shape_put p = P("a", sphere(0, 0, 0, 1));
    const uint64_t revs[] = {1, 2, UINT64_MAX};
    for (size_t i = 0; i < sizeof revs / sizeof *revs; i++) {
        uint64_t actual = 99;
        assert_int_equal(rp_store_put(st, "missing", &p, 1, &revs[i], true, NULL, &actual),
                         RP_ERR_REVISION);
        assert_int_equal(actual, 0);
        assert_int_equal(rp_store_revision(st), 1);
        assert_null(rp_store_find(st, "missing"));
        assert_int_equal(rp_store_scene_count(st), 1);
        assert_int_equal(rp_store_shape_count(st), 0);
        assert_int_equal(rp_store_memory(st), mem);
    }
    assert_int_equal(rp_store_put(st, "missing", &p, 1, &revs[0], true, NULL, NULL),
                     RP_ERR_REVISION);
    assert_null(rp_store_find(st, "missing"));
    rp_store_free(st);
}

static void store_put_without_create_on_missing_scene_is_not_found(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p = P("a", sphere(0, 0, 0, 1));
    uint64_t zero = 0;
    assert_int_equal(rp_store_put(st, "missing", &p, 1, NULL, false, NULL, NULL), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_put(st, "missing", &p, 1, &zero, false, NULL, NULL),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_put(st, "missing", NULL, 0, NULL, false, NULL, NULL),
                     RP_ERR_NOT_FOUND);
    assert_null(rp_store_find(st, "missing"));
    assert_int_equal(rp_store_revision(st), 0);
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_shape_count(st), 0);
    rp_store_free(st);
}

static void store_put_on_existing_scene_puts_into_it_with_compare_and_set(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL, *out = NULL;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    rp_shape_put p = P("a", sphere(0, 0, 0, 1));
    for (int create = 0; create < 2; create++) {
        uint64_t rev = rp_scene_revision(sc);
        out = NULL;
        assert_int_equal(rp_store_put(st, "s", &p, 1, &rev, create != 0, &out, NULL), RP_OK);
        assert_ptr_equal(out, sc);
        assert_int_equal(rp_scene_revision(sc), rev + 1);
    }
    assert_int_equal(rp_scene_shape_count(sc), 1);
    assert_holds(sc, "a", p.shape);

    /* "Must not exist yet" fails on an existing scene. */
    uint64_t zero = 0, actual = 0;
    rp_shape_put q = P("b", sphere(1, 1, 1, 1));
    assert_int_equal(rp_store_put(st, "s", &q, 1, &zero, true, NULL, &actual), RP_ERR_REVISION);
    assert_int_equal(actual, 3);
    assert_int_equal(rp_scene_revision(sc), 3);
    assert_absent(sc, "b");
    assert_int_equal(rp_store_scene_count(st), 1);
    rp_store_free(st);
}

/* ---- the per-scene shape limit ------------------------------------------ */

static rp_store *store_with_limit_ten(void)
{
    rp_store_limits lim = {10, 0};
    rp_store *st = rp_store_new(&lim);
    assert_non_null(st);
    return st;
}

/* Fills ids[i] with "s<i>" and puts[i] with a sphere at x = i. */
static void ten_shapes(char ids[][24], rp_shape_put *puts, size_t n, double radius)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 24, "s%zu", i);
        puts[i] = P(ids[i], sphere((double)i, 0, 0, radius));
    }
}

static void put_beyond_shape_limit_fails_and_leaves_scene_unchanged(void **state)
{
    (void)state;
    rp_store *st = store_with_limit_ten();
    char ids[12][24];
    rp_shape_put p[12];
    ten_shapes(ids, p, 12, 0.5);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 10, &sc), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    size_t mem = rp_store_memory(st);

    /* One new id, alone or alongside replacements, would make 11. */
    rp_shape_put extra[] = {P("s3", sphere(0, 9, 0, 1)), P("s10", sphere(0, 0, 9, 1))};
    snapshot snap = take_snapshot(sc);
    assert_int_equal(rp_scene_put(sc, &extra[1], 1, NULL, NULL), RP_ERR_LIMIT);
    assert_int_equal(rp_scene_put(sc, extra, 2, NULL, NULL), RP_ERR_LIMIT);
    uint64_t rev = 1;
    assert_int_equal(rp_scene_put(sc, extra, 2, &rev, NULL), RP_ERR_LIMIT);
    assert_int_equal(rp_store_put(st, "s", extra, 2, NULL, true, NULL, NULL), RP_ERR_LIMIT);
    assert_int_equal(rp_store_revision(st), 1); /* refused puts take no number */
    assert_unchanged(sc, &snap);
    assert_holds(sc, "s3", p[3].shape);
    assert_absent(sc, "s10");
    assert_int_equal(rp_store_shape_count(st), 10);
    assert_int_equal(rp_store_memory(st), mem);

    /* After a removal there is room for exactly one new id again. */
    const char *gone[] = {"s0"};
    assert_int_equal(rp_scene_remove(sc, gone, 1, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_put(sc, &p[10], 2, NULL, NULL), RP_ERR_LIMIT);
    assert_int_equal(rp_scene_put(sc, &p[10], 1, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    rp_store_free(st);
}

static void put_replacing_existing_ids_at_the_limit_succeeds(void **state)
{
    (void)state;
    rp_store *st = store_with_limit_ten();
    char ids[10][24];
    rp_shape_put p[10];
    ten_shapes(ids, p, 10, 0.5);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 10, &sc), RP_OK);

    char ids2[10][24];
    rp_shape_put q[10];
    ten_shapes(ids2, q, 10, 0.25);
    assert_int_equal(rp_scene_put(sc, q, 10, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    for (size_t i = 0; i < 10; i++)
        assert_holds(sc, q[i].id, q[i].shape);

    /* Many duplicates of existing ids are still no new shapes. */
    rp_shape_put dup[] = {P("s1", sphere(1, 1, 1, 1)), P("s1", sphere(2, 2, 2, 2)),
                          P("s9", sphere(3, 3, 3, 3)), P("s1", sphere(4, 4, 4, 4))};
    assert_int_equal(rp_scene_put(sc, dup, 4, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    assert_holds(sc, "s1", sphere(4, 4, 4, 4));
    assert_holds(sc, "s9", sphere(3, 3, 3, 3));
    rp_store_free(st);
}

static void duplicates_of_a_new_id_count_once_against_the_limit(void **state)
{
    (void)state;
    rp_store *st = store_with_limit_ten();
    char ids[9][24];
    rp_shape_put p[9];
    ten_shapes(ids, p, 9, 0.5);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 9, &sc), RP_OK);
    rp_shape_put q[] = {P("new", sphere(0, 1, 0, 1)), P("s0", sphere(0, 2, 0, 1)),
                        P("new", sphere(0, 3, 0, 1)), P("new", sphere(0, 4, 0, 1))};
    assert_int_equal(rp_scene_put(sc, q, 4, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    assert_holds(sc, "new", sphere(0, 4, 0, 1));
    rp_store_free(st);
}

static void create_beyond_shape_limit_fails_and_creates_nothing(void **state)
{
    (void)state;
    rp_store *st = store_with_limit_ten();
    char ids[11][24];
    rp_shape_put p[11];
    ten_shapes(ids, p, 11, 0.5);
    size_t memory_before = rp_store_memory(st);
    assert_int_equal(rp_store_create(st, "over", p, 11, NULL), RP_ERR_LIMIT);
    assert_null(rp_store_find(st, "over"));
    assert_int_equal(rp_store_memory(st), memory_before); /* nothing allocated is kept */
    assert_int_equal(rp_store_put(st, "over", p, 11, NULL, true, NULL, NULL), RP_ERR_LIMIT);
    assert_null(rp_store_find(st, "over"));
    assert_int_equal(rp_store_memory(st), memory_before);
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_shape_count(st), 0);
    assert_int_equal(rp_store_revision(st), 0);

    /* Eleven entries naming ten distinct ids fit. */
    p[10] = P("s0", sphere(5, 5, 5, 5));
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "fits", p, 11, &sc), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 1);
    assert_int_equal(rp_scene_shape_count(sc), 10);
    assert_holds(sc, "s0", sphere(5, 5, 5, 5));
    rp_store_free(st);
}

/* ---- remove ------------------------------------------------------------- */

static void remove_counts_removed_ids_ignoring_unknown_and_duplicates(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(1, 0, 0, 1)),
                        P("c", sphere(2, 0, 0, 1)), P("d", sphere(3, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 4, &sc), RP_OK);
    const char *ids[] = {"b", "nope", "d", "b", "d", "", "bb"};
    size_t removed = 0;
    assert_int_equal(rp_scene_remove(sc, ids, 7, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 2);
    assert_int_equal(rp_store_shape_count(st), 2);
    assert_absent(sc, "b");
    assert_absent(sc, "d");
    assert_holds(sc, "a", p[0].shape);
    assert_holds(sc, "c", p[2].shape);
    /* `removed` may be NULL. */
    assert_int_equal(rp_scene_remove(sc, ids, 1, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 3);
    rp_store_free(st);
}

static void remove_bumps_revision_even_when_nothing_matches(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p = P("a", sphere(0, 0, 0, 1));
    rp_scene *sc = NULL, *empty = NULL;
    assert_int_equal(rp_store_create(st, "s", &p, 1, &sc), RP_OK);      /* 1 */
    assert_int_equal(rp_store_create(st, "e", NULL, 0, &empty), RP_OK); /* 2 */
    const char *ids[] = {"x", "y"};
    size_t removed = 7;
    assert_int_equal(rp_scene_remove(sc, ids, 2, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(rp_scene_revision(sc), 3);
    removed = 7;
    assert_int_equal(rp_scene_remove(sc, NULL, 0, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(rp_scene_revision(sc), 4);
    assert_holds(sc, "a", p.shape);
    removed = 7;
    assert_int_equal(rp_scene_remove(empty, ids, 2, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(rp_scene_revision(empty), 5);
    assert_int_equal(rp_scene_revision(sc), 4);
    assert_int_equal(rp_store_revision(st), 5);
    rp_store_free(st);
}

static void remove_with_stale_if_revision_fails_and_removes_nothing(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(1, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 2, &sc), RP_OK);
    const char *ids[] = {"a", "b"};
    snapshot snap = take_snapshot(sc);
    uint64_t stale = 2, actual = 0;
    size_t removed = 77;
    assert_int_equal(rp_scene_remove(sc, ids, 2, &stale, &removed, &actual), RP_ERR_REVISION);
    assert_int_equal(actual, 1);
    assert_int_equal(rp_store_revision(st), 1);
    assert_unchanged(sc, &snap);
    assert_int_equal(rp_store_shape_count(st), 2);
    assert_int_equal(rp_scene_remove(sc, ids, 2, &stale, NULL, NULL), RP_ERR_REVISION);

    uint64_t current = 1;
    assert_int_equal(rp_scene_remove(sc, ids, 1, &current, &removed, &actual), RP_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_absent(sc, "a");
    assert_holds(sc, "b", p[1].shape);
    rp_store_free(st);
}

static void removing_every_shape_empties_the_scene_and_it_refills(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    enum { N = 40 };
    char ids[N][8];
    rp_shape_put p[N];
    const char *names[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "k%zu", i);
        p[i] = P(ids[i], sphere((double)i, 0, 0, 1));
        names[N - 1 - i] = ids[i];
    }
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, N, &sc), RP_OK);
    size_t removed = 0;
    assert_int_equal(rp_scene_remove(sc, names, N, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, N);
    assert_int_equal(rp_scene_shape_count(sc), 0);
    assert_int_equal(rp_store_shape_count(st), 0);
    for (size_t i = 0; i < N; i++)
        assert_absent(sc, ids[i]);
    assert_int_equal(rp_scene_put(sc, p, N / 2, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc), N / 2);
    for (size_t i = 0; i < N; i++) {
        if (i < N / 2)
            assert_holds(sc, ids[i], p[i].shape);
        else
            assert_absent(sc, ids[i]);
    }
    assert_int_equal(rp_scene_revision(sc), 3);
    rp_store_free(st);
}

/* ---- consistency under random mutations -------------------------------- */

static void find_id_at_and_shape_at_agree_with_a_model_under_random_puts_and_removes(void **state)
{
    (void)state;
    static const char *const prefix[] = {"a", "link/", "obj:", "x.y-", "A", ""};
    model m = model_new(1200);
    for (size_t j = 0; j < m.n; j++)
        snprintf(m.ids[j], sizeof m.ids[j], "%s%zu", prefix[j % 6], j * 7919 % 100003);
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "random", NULL, 0, &sc), RP_OK);
    test_rng r = {7};
    run_random_ops(sc, &m, &r, 4000, 4);
    assert_sorted_view(sc);
    assert_int_equal(rp_store_shape_count(st), m.count);
    rp_store_free(st);
    model_free(&m);
}

static void ids_sharing_hash_buckets_stay_findable_under_random_puts_and_removes(void **state)
{
    (void)state;
    /* Ids whose hash has its low ten bits in {1023, 0, 1, 2}: in every index
     * up to 1024 slots they share one probe run that wraps around the end
     * of the table.  Plus pairs with equal full hashes. */
    model m = model_new(160 + N_COLLIDING);
    size_t n = 0;
    char buf[24];
    for (unsigned i = 0; n < 160; i++) {
        snprintf(buf, sizeof buf, "c%u", i);
        uint32_t low = fnv1a(buf) & 1023u;
        if (low == 1023u || low <= 2u)
            strcpy(m.ids[n++], buf);
    }
    for (size_t i = 0; i < N_COLLIDING; i++)
        strcpy(m.ids[n++], colliding_ids[i]);
    for (size_t i = 0; i < N_COLLIDING; i += 2)
        assert_int_equal(fnv1a(colliding_ids[i]), fnv1a(colliding_ids[i + 1]));

    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "clustered", NULL, 0, &sc), RP_OK);
    test_rng r = {99};
    run_random_ops(sc, &m, &r, 3000, 1);
    assert_sorted_view(sc);

    /* Each member of a colliding pair can be removed without the other. */
    model_free(&m);
    rp_store_free(st);
    st = rp_store_new(NULL);
    rp_shape_put p[N_COLLIDING];
    for (size_t i = 0; i < N_COLLIDING; i++)
        p[i] = P(colliding_ids[i], sphere((double)i, 0, 0, 1));
    assert_int_equal(rp_store_create(st, "pairs", p, N_COLLIDING, &sc), RP_OK);
    for (size_t i = 0; i < N_COLLIDING; i += 2) {
        size_t removed = 0;
        assert_int_equal(rp_scene_remove(sc, &colliding_ids[i], 1, NULL, &removed, NULL), RP_OK);
        assert_int_equal(removed, 1);
        assert_absent(sc, colliding_ids[i]);
        assert_holds(sc, colliding_ids[i + 1], p[i + 1].shape);
    }
    assert_int_equal(rp_scene_shape_count(sc), N_COLLIDING / 2);
    rp_store_free(st);
}

static void sorted_view_lists_ids_in_strcmp_order(void **state)
{
    (void)state;
    /* Deliberately unsorted, with shared prefixes, case and punctuation. */
    const char *ids[] = {"b",  "a10", "A",   "a/b", "a", "a2", "a:1",
                         "a-", "ab",  "a.b", "_",   "9", "Z",  "a1"};
    const char *want[] = {"9",   "A",  "Z",   "_",  "a",   "a-", "a.b",
                          "a/b", "a1", "a10", "a2", "a:1", "ab", "b"};
    enum { N = sizeof ids / sizeof *ids };
    rp_shape_put p[N];
    for (size_t i = 0; i < N; i++)
        p[i] = P(ids[i], sphere((double)i, 0, 0, 1));
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, N, &sc), RP_OK);
    size_t order[N];
    assert_int_equal(rp_scene_sorted(sc, order), RP_OK);
    for (size_t i = 0; i < N; i++)
        assert_string_equal(rp_scene_id_at(sc, order[i]), want[i]);
    assert_sorted_view(sc);

    /* Still sorted after removals have moved storage indices around. */
    const char *gone[] = {"9", "a/b", "a2"};
    assert_int_equal(rp_scene_remove(sc, gone, 3, NULL, NULL, NULL), RP_OK);
    assert_sorted_view(sc);

    /* An empty scene writes nothing. */
    rp_scene *empty = NULL;
    assert_int_equal(rp_store_create(st, "e", NULL, 0, &empty), RP_OK);
    assert_int_equal(rp_scene_sorted(empty, order), RP_OK);
    rp_store_free(st);
}

/* ---- accounting ---------------------------------------------------------- */

static void memory_and_shape_count_return_to_baseline_after_everything_is_deleted(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    size_t fresh = rp_store_memory(st);
    assert_true(fresh > 0);
    /* The store keeps the capacity of its scene array (and counts it), so
     * the baseline is taken once that array exists and the test keeps to
     * fewer scenes than its first capacity. */
    assert_int_equal(rp_store_create(st, "warm-up", NULL, 0, NULL), RP_OK);
    assert_int_equal(rp_store_delete(st, "warm-up"), RP_OK);
    size_t base = rp_store_memory(st);
    assert_true(base >= fresh);
    assert_int_equal(rp_store_shape_count(st), 0);

    enum { SCENES = 4, IDS = 300 };
    static char ids[IDS][16];
    for (size_t j = 0; j < IDS; j++)
        snprintf(ids[j], sizeof ids[j], "shape-%zu", j * 31);
    test_rng r = {2024};
    rp_scene *sc[SCENES];
    uint64_t total = 0;
    for (size_t s = 0; s < SCENES; s++) {
        char name[24];
        snprintf(name, sizeof name, "s%zu", s);
        size_t before = rp_store_memory(st);
        assert_int_equal(rp_store_create(st, name, NULL, 0, &sc[s]), RP_OK);
        assert_true(rp_store_memory(st) > before);
    }
    for (int op = 0; op < 600; op++) {
        rp_scene *t = sc[rng_next(&r) % SCENES];
        rp_shape_put p[6];
        const char *rm[6];
        size_t k = 1 + (size_t)(rng_next(&r) % 6);
        size_t before = rp_scene_shape_count(t), removed = 0;
        if (rng_next(&r) % 3) {
            for (size_t b = 0; b < k; b++)
                p[b] = P(ids[rng_next(&r) % IDS], random_shape(&r));
            assert_int_equal(rp_scene_put(t, p, k, NULL, NULL), RP_OK);
            total += rp_scene_shape_count(t) - before;
        } else {
            for (size_t b = 0; b < k; b++)
                rm[b] = ids[rng_next(&r) % IDS];
            assert_int_equal(rp_scene_remove(t, rm, k, NULL, &removed, NULL), RP_OK);
            total -= removed;
        }
        assert_int_equal(rp_store_shape_count(st), total);
    }
    uint64_t sum = 0;
    for (size_t s = 0; s < SCENES; s++)
        sum += rp_scene_shape_count(sc[s]);
    assert_int_equal(sum, total);
    assert_true(total > 0);
    assert_true(rp_store_memory(st) > base);

    /* Empty one scene by removal, delete the rest outright. */
    const char *all[IDS];
    for (size_t j = 0; j < IDS; j++)
        all[j] = ids[j];
    assert_int_equal(rp_scene_remove(sc[0], all, IDS, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(sc[0]), 0);
    for (size_t s = SCENES; s-- > 0;) {
        char name[24];
        snprintf(name, sizeof name, "s%zu", s);
        assert_int_equal(rp_store_delete(st, name), RP_OK);
    }
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_shape_count(st), 0);
    assert_int_equal(rp_store_memory(st), base);
    rp_store_free(st);
}

static void repeated_put_and_remove_cycles_do_not_drift_memory(void **state)
{
    (void)state;
    enum { N = 200 };
    static char ids[N][16];
    rp_shape_put p[N];
    const char *rm[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "id-%zu", i);
        p[i] = P(ids[i], sphere((double)i, 0, 0, 1));
        rm[i] = ids[i];
    }
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    size_t full = 0, empty = 0;
    for (int cycle = 0; cycle < 5; cycle++) {
        assert_int_equal(rp_scene_put(sc, p, N, NULL, NULL), RP_OK);
        /* Replacing everything allocates nothing. */
        size_t m1 = rp_store_memory(st);
        assert_int_equal(rp_scene_put(sc, p, N, NULL, NULL), RP_OK);
        assert_int_equal(rp_store_memory(st), m1);
        size_t removed = 0;
        assert_int_equal(rp_scene_remove(sc, rm, N, NULL, &removed, NULL), RP_OK);
        assert_int_equal(removed, N);
        size_t m0 = rp_store_memory(st);
        assert_true(m0 < m1); /* the ids were released */
        if (cycle == 0) {
            full = m1;
            empty = m0;
        }
        assert_int_equal(m1, full);
        assert_int_equal(m0, empty);
    }
    assert_int_equal(rp_store_shape_count(st), 0);
    rp_store_free(st);
}

/* ---- queries -------------------------------------------------------------- */

/* One (query, shape) pair of a brute-force scan. */
typedef struct bf_pair {
    size_t query, shape;
    const char *id;
    double distance;
} bf_pair;

/* The documented order: distance, then query index, then shape id. */
static int bf_cmp(const void *pa, const void *pb)
{
    const bf_pair *a = pa, *b = pb;
    if (a->distance < b->distance)
        return -1;
    if (a->distance > b->distance)
        return 1;
    if (a->query != b->query)
        return a->query < b->query ? -1 : 1;
    return strcmp(a->id, b->id);
}

/* Every pair of query shapes and scene shapes (or the subset), sorted by
 * bf_cmp.  Returns the number of pairs; *out is malloc'd. */
static size_t brute_force(const rp_scene *sc, const rp_query *q, bf_pair **out)
{
    size_t n = q->subset ? q->n_subset : rp_scene_shape_count(sc);
    size_t total = q->n_shapes * n;
    bf_pair *v = malloc((total + 1) * sizeof *v);
    assert_non_null(v);
    size_t k = 0;
    for (size_t qi = 0; qi < q->n_shapes; qi++)
        for (size_t s = 0; s < n; s++) {
            size_t e = q->subset ? q->subset[s] : s;
            v[k].query = qi;
            v[k].shape = e;
            v[k].id = rp_scene_id_at(sc, e);
            v[k].distance = rp_shape_signed_distance(&q->shapes[qi], SCENE_SHAPE(sc, e));
            k++;
        }
    qsort(v, total, sizeof *v, bf_cmp);
    *out = v;
    return total;
}

static void assert_pair_is(const rp_scene *sc, const rp_pair *got, const bf_pair *want)
{
    assert_int_equal(got->query, want->query);
    assert_string_equal(rp_scene_id_at(sc, got->shape), want->id);
    assert_int_equal(got->shape, want->shape);
    assert_same_bits(got->distance, want->distance);
}

/* Runs q on sc and compares nearest and (when collecting without
 * first_only) the pairs with brute force. */
static void assert_query_matches_brute_force(const rp_scene *sc, const rp_query *q)
{
    bf_pair *v = NULL;
    size_t n = brute_force(sc, q, &v);
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, q, &res), RP_OK);
    assert_int_equal(res.has_min, n > 0);
    if (n > 0)
        assert_pair_is(sc, &res.nearest, &v[0]);
    if (q->collect && !q->first_only) {
        size_t below = 0;
        while (below < n && v[below].distance < q->threshold)
            below++;
        assert_int_equal(res.n_pairs, below);
        for (size_t i = 0; i < below; i++)
            assert_pair_is(sc, &res.pairs[i], &v[i]);
    } else if (!q->collect) {
        assert_int_equal(res.n_pairs, 0);
    }
    rp_query_result_free(&res);
    free(v);
}

static void query_on_empty_scene_or_subset_has_no_minimum(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "empty", NULL, 0, &sc), RP_OK);
    rp_shape qs[] = {sphere(0, 0, 0, 1), capsule(0, 0, 0, 1, 0, 0, 1)};
    rp_query q = {qs, 2, NULL, 0, true, INFINITY, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_false(res.has_min);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);

    /* A non-empty scene with an empty subset, or no query shapes. */
    rp_shape_put p = P("a", sphere(0, 0, 0, 1));
    assert_int_equal(rp_scene_put(sc, &p, 1, NULL, NULL), RP_OK);
    size_t none[1] = {0};
    rp_query qsub = {qs, 2, none, 0, true, INFINITY, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &qsub, &res), RP_OK);
    assert_false(res.has_min);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);
    rp_query qnone = {qs, 0, NULL, 0, true, INFINITY, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &qnone, &res), RP_OK);
    assert_false(res.has_min);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);
    rp_store_free(st);
}

static void query_with_single_shape_reports_that_pair(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put p = P("only", sphere(3, 0, 0, 1));
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", &p, 1, &sc), RP_OK);
    rp_shape qs = sphere(0, 0, 0, 0.5);
    rp_query q = {&qs, 1, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_true(res.has_min);
    assert_int_equal(res.nearest.query, 0);
    assert_int_equal(res.nearest.shape, 0);
    assert_true(res.nearest.distance == 1.5);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);

    q.collect = true;
    q.threshold = 2.0;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 1);
    assert_int_equal(res.pairs[0].query, 0);
    assert_int_equal(res.pairs[0].shape, 0);
    assert_true(res.pairs[0].distance == 1.5);
    rp_query_result_free(&res);

    /* Penetration is a negative distance. */
    rp_shape deep = sphere(3, 0, 0, 0.5);
    rp_query qd = {&deep, 1, NULL, 0, true, 0.0, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &qd, &res), RP_OK);
    assert_true(res.nearest.distance == -1.5);
    assert_int_equal(res.n_pairs, 1);
    rp_query_result_free(&res);
    rp_store_free(st);
}

/* Six unit spheres two metres out along the axes, all exactly 1 m from a
 * point at the origin, inserted with ids out of order; plus a far shape
 * whose id sorts first. */
static rp_scene *tie_scene(rp_store *st)
{
    rp_shape_put p[] = {
        P("m", sphere(2, 0, 0, 1)),     P("c", sphere(-2, 0, 0, 1)), P("x", sphere(0, 2, 0, 1)),
        P("a2", sphere(0, -2, 0, 1)),   P("b", sphere(0, 0, 2, 1)),  P("a10", sphere(0, 0, -2, 1)),
        P("0far", sphere(10, 0, 0, 1)),
    };
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "ties", p, 7, &sc), RP_OK);
    return sc;
}

static void nearest_ties_go_to_lowest_query_then_smallest_id(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = tie_scene(st);
    rp_query_result res;

    /* Two identical queries: query 0 and id "a10" (strcmp: "a10" < "a2"). */
    rp_shape twin[] = {sphere(0, 0, 0, 0), sphere(0, 0, 0, 0)};
    rp_query q = {twin, 2, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_true(res.has_min);
    assert_int_equal(res.nearest.query, 0);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "a10");
    assert_true(res.nearest.distance == 1.0);
    rp_query_result_free(&res);

    /* A strictly closer later query beats the query-index rule. */
    rp_shape closer[] = {sphere(0, 0, 0, 0), sphere(0, 0, 0, 0.25)};
    q.shapes = closer;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.nearest.query, 1);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "a10");
    assert_true(res.nearest.distance == 0.75);
    rp_query_result_free(&res);

    /* Without "a10" the tie goes to "a2", then to "b". */
    const char *gone[] = {"a10"};
    assert_int_equal(rp_scene_remove(sc, gone, 1, NULL, NULL, NULL), RP_OK);
    q.shapes = twin;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.nearest.query, 0);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "a2");
    rp_query_result_free(&res);
    gone[0] = "a2";
    assert_int_equal(rp_scene_remove(sc, gone, 1, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "b");
    rp_query_result_free(&res);
    assert_query_matches_brute_force(sc, &q);
    rp_store_free(st);
}

static void collect_orders_equal_distances_by_query_then_id(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = tie_scene(st);
    rp_shape qs[] = {sphere(0, 0, 0, 0), sphere(0, 0, 0, 0)};
    rp_query q = {qs, 2, NULL, 0, true, 5.0, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    static const char *const want[] = {"a10", "a2", "b", "c", "m", "x"};
    assert_int_equal(res.n_pairs, 12); /* "0far" is 9 m away */
    for (size_t i = 0; i < 12; i++) {
        assert_int_equal(res.pairs[i].query, i / 6);
        assert_string_equal(rp_scene_id_at(sc, res.pairs[i].shape), want[i % 6]);
        assert_true(res.pairs[i].distance == 1.0);
    }
    rp_query_result_free(&res);
    q.threshold = INFINITY;
    assert_query_matches_brute_force(sc, &q);
    rp_store_free(st);
}

/* max_pairs bounds the collection: exactly max_pairs qualifying pairs are
 * fine, one more fails with RP_ERR_LIMIT (tree and subset paths alike) and
 * leaves nothing allocated. */
static void collect_stops_with_limit_past_max_pairs(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = tie_scene(st); /* 7 shapes, all within 10 m of the origin */
    rp_shape origin = sphere(0, 0, 0, 0);
    size_t all[7];
    for (size_t i = 0; i < 7; i++)
        all[i] = i;
    for (int sub = 0; sub < 2; sub++) {
        rp_query q = {&origin, 1, sub ? all : NULL, sub ? 7 : 0, true, 100.0, false, false, 7, NULL,
                      NULL,    0};
        rp_query_result res;
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
        assert_int_equal(res.n_pairs, 7);
        rp_query_result_free(&res);
        q.max_pairs = 6;
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_ERR_LIMIT);
        assert_null(res.pairs);
        assert_int_equal(res.n_pairs, 0);
        q.max_pairs = 0; /* no limit */
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
        assert_int_equal(res.n_pairs, 7);
        rp_query_result_free(&res);
    }
    rp_store_free(st);
}

static void collect_excludes_a_pair_at_exactly_the_threshold(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = tie_scene(st);
    rp_shape origin = sphere(0, 0, 0, 0);
    rp_query q = {&origin, 1, NULL, 0, true, 1.0, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 0);
    assert_true(res.has_min); /* the minimum is still reported */
    assert_true(res.nearest.distance == 1.0);
    rp_query_result_free(&res);

    q.threshold = nextafter(1.0, 2.0);
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 6);
    rp_query_result_free(&res);

    /* The same at the far shape, 9 m away: 9 is out, just above 9 is in. */
    q.threshold = 9.0;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 6);
    rp_query_result_free(&res);
    q.threshold = nextafter(9.0, 10.0);
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 7);
    assert_string_equal(rp_scene_id_at(sc, res.pairs[6].shape), "0far");
    rp_query_result_free(&res);
    rp_store_free(st);
}

/* Random scenes, on a grid (many exact ties) and continuous, with random
 * thresholds, some equal to an actual pair distance. */
static void nearest_and_collected_pairs_equal_brute_force_on_random_scenes(void **state)
{
    (void)state;
    test_rng r = {1234};
    for (int trial = 0; trial < 60; trial++) {
        bool grid = trial % 2 == 0;
        rp_store *st = rp_store_new(NULL);
        rp_scene *sc = NULL;
        assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
        size_t n = 1 + (size_t)(rng_next(&r) % 60);
        char ids[60][12];
        rp_shape_put p[60];
        for (size_t i = 0; i < n; i++) {
            /* Ids put in an order unrelated to their strcmp order. */
            snprintf(ids[i], sizeof ids[i], "%c%u", (char)('a' + rng_next(&r) % 26),
                     (unsigned)(rng_next(&r) % 1000));
            p[i] = P(ids[i], grid ? grid_shape(&r) : random_shape(&r));
        }
        assert_int_equal(rp_scene_put(sc, p, n, NULL, NULL), RP_OK);
        /* Some removals so storage order is shuffled. */
        const char *rm[3] = {ids[0], ids[n / 2], ids[n - 1]};
        if (n > 4)
            assert_int_equal(rp_scene_remove(sc, rm, 3, NULL, NULL, NULL), RP_OK);

        rp_shape qs[5];
        size_t nq = 1 + (size_t)(rng_next(&r) % 5);
        for (size_t i = 0; i < nq; i++)
            qs[i] = grid ? grid_shape(&r) : random_shape(&r);
        rp_query q = {qs, nq, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
        assert_query_matches_brute_force(sc, &q);

        q.collect = true;
        for (int t = 0; t < 4; t++) {
            if (t == 0 && rp_scene_shape_count(sc) > 0) {
                size_t e = (size_t)(rng_next(&r) % rp_scene_shape_count(sc));
                q.threshold = rp_shape_signed_distance(&qs[rng_next(&r) % nq], SCENE_SHAPE(sc, e));
            } else {
                q.threshold = rng_uniform(&r, -1, 6);
            }
            assert_query_matches_brute_force(sc, &q);
        }
        rp_store_free(st);
    }
}

static void first_only_returns_exactly_one_qualifying_pair(void **state)
{
    (void)state;
    test_rng r = {555};
    for (int trial = 0; trial < 40; trial++) {
        rp_store *st = rp_store_new(NULL);
        rp_scene *sc = NULL;
        assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
        char ids[40][12];
        rp_shape_put p[40];
        for (size_t i = 0; i < 40; i++) {
            snprintf(ids[i], sizeof ids[i], "f%zu", (i * 17) % 40);
            p[i] = P(ids[i], random_shape(&r));
        }
        assert_int_equal(rp_scene_put(sc, p, 40, NULL, NULL), RP_OK);
        rp_shape qs[3] = {random_shape(&r), random_shape(&r), random_shape(&r)};
        rp_query q = {qs, 3, NULL, 0, true, rng_uniform(&r, 0, 4), true, false, 0, NULL, NULL, 0};

        bf_pair *v = NULL;
        size_t n = brute_force(sc, &q, &v);
        size_t qualifying = 0;
        while (qualifying < n && v[qualifying].distance < q.threshold)
            qualifying++;
        rp_query_result res;
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
        assert_int_equal(res.n_pairs, qualifying > 0 ? 1 : 0);
        assert_true(res.has_min);
        if (qualifying > 0) {
            const rp_pair *pr = &res.pairs[0];
            assert_true(pr->query < 3);
            assert_true(pr->shape < 40);
            assert_true(pr->distance < q.threshold);
            assert_same_bits(pr->distance,
                             rp_shape_signed_distance(&qs[pr->query], SCENE_SHAPE(sc, pr->shape)));
            /* nearest covers what was scanned, which includes that pair. */
            assert_true(res.nearest.distance <= pr->distance);
            assert_true(res.nearest.distance >= v[0].distance);
        } else {
            /* Nothing stopped the scan: nearest is the global minimum. */
            assert_pair_is(sc, &res.nearest, &v[0]);
        }
        rp_query_result_free(&res);
        free(v);
        rp_store_free(st);
    }
}

static void subset_restricts_the_scan_to_the_listed_shapes(void **state)
{
    (void)state;
    test_rng r = {8080};
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", NULL, 0, &sc), RP_OK);
    enum { N = 50 };
    char ids[N][12];
    rp_shape_put p[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "u%zu", (i * 7) % N);
        p[i] = P(ids[i], random_shape(&r));
    }
    assert_int_equal(rp_scene_put(sc, p, N, NULL, NULL), RP_OK);
    rp_shape qs[2] = {random_shape(&r), random_shape(&r)};

    for (int trial = 0; trial < 40; trial++) {
        /* A random subset of distinct storage indices, in random order. */
        size_t idx[N];
        for (size_t i = 0; i < N; i++)
            idx[i] = i;
        for (size_t i = N; i-- > 1;) {
            size_t j = (size_t)(rng_next(&r) % (i + 1));
            size_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        size_t k = 1 + (size_t)(rng_next(&r) % N);
        rp_query q = {qs, 2, idx, k, true, rng_uniform(&r, 0, 5), false, false, 0, NULL, NULL, 0};
        assert_query_matches_brute_force(sc, &q);
        q.collect = false;
        assert_query_matches_brute_force(sc, &q);

        rp_query_result res;
        q.collect = true;
        q.threshold = INFINITY;
        assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
        assert_int_equal(res.n_pairs, 2 * k);
        for (size_t i = 0; i < res.n_pairs; i++) {
            bool listed = false;
            for (size_t j = 0; j < k; j++)
                listed = listed || idx[j] == res.pairs[i].shape;
            assert_true(listed);
        }
        rp_query_result_free(&res);
    }

    /* The global nearest shape is not reported when left out. */
    rp_query all = {qs, 1, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &all, &res), RP_OK);
    size_t best = res.nearest.shape;
    rp_query_result_free(&res);
    size_t rest[N - 1], k = 0;
    for (size_t i = 0; i < N; i++)
        if (i != best)
            rest[k++] = i;
    rp_query sub = {qs, 1, rest, k, false, 0, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &sub, &res), RP_OK);
    assert_true(res.has_min);
    assert_true(res.nearest.shape != best);
    rp_query_result_free(&res);
    assert_query_matches_brute_force(sc, &sub);
    rp_store_free(st);
}

static void shapes_all_at_one_point_tie_by_id(void **state)
{
    (void)state;
    static const char *const ids[] = {"q", "d", "k", "b", "z", "a", "m", "c"};
    enum { N = sizeof ids / sizeof *ids };
    rp_shape_put p[N];
    for (size_t i = 0; i < N; i++)
        p[i] = P(ids[i], i % 2 ? sphere(1, 1, 1, 0.25) : capsule(1, 1, 1, 1, 1, 1, 0.25));
    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "pile", p, N, &sc), RP_OK);
    rp_shape qs[] = {sphere(1, 1, 1, 0.25), capsule(1, 1, 1, 1, 1, 1, 0.25)};
    rp_query q = {qs, 2, NULL, 0, true, 0.0, false, false, 0, NULL, NULL, 0};
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_true(res.has_min);
    assert_int_equal(res.nearest.query, 0);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "a");
    assert_true(res.nearest.distance == -0.5);
    static const char *const sorted[] = {"a", "b", "c", "d", "k", "m", "q", "z"};
    assert_int_equal(res.n_pairs, 2 * N);
    for (size_t i = 0; i < 2 * N; i++) {
        assert_int_equal(res.pairs[i].query, i / N);
        assert_string_equal(rp_scene_id_at(sc, res.pairs[i].shape), sorted[i % N]);
        assert_true(res.pairs[i].distance == -0.5);
    }
    rp_query_result_free(&res);
    assert_query_matches_brute_force(sc, &q);

    /* Point shapes at one point: distance 0 everywhere, none below 0. */
    rp_shape_put pts[N];
    for (size_t i = 0; i < N; i++)
        pts[i] = P(ids[i], sphere(-3, 2, 0.5, 0));
    assert_int_equal(rp_scene_put(sc, pts, N, NULL, NULL), RP_OK);
    rp_shape pt = sphere(-3, 2, 0.5, 0);
    rp_query qp = {&pt, 1, NULL, 0, true, 0.0, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &qp, &res), RP_OK);
    assert_true(res.nearest.distance == 0.0);
    assert_string_equal(rp_scene_id_at(sc, res.nearest.shape), "a");
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);
    rp_store_free(st);
}

static void query_result_free_is_safe_on_zeroed_and_freed_results(void **state)
{
    (void)state;
    rp_query_result res;
    memset(&res, 0, sizeof res);
    rp_query_result_free(&res);
    rp_query_result_free(NULL);

    rp_store *st = rp_store_new(NULL);
    rp_scene *sc = tie_scene(st);
    rp_shape origin = sphere(0, 0, 0, 0);
    rp_query q = {&origin, 1, NULL, 0, true, INFINITY, false, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_scene_query(sc, &q, &res), RP_OK);
    assert_int_equal(res.n_pairs, 7);
    rp_query_result_free(&res);
    assert_null(res.pairs);
    assert_int_equal(res.n_pairs, 0);
    rp_query_result_free(&res);
    rp_store_free(st);
}

/* ---- store-wide revisions ----------------------------------------------- */

/* Random creates, deletes, puts, removes and replaces on a few scenes,
 * some bound to fail (name taken or missing, stale if_revision, over the
 * shape limit): every success takes exactly the next store-wide number,
 * which becomes the scene's revision; a failure takes none and changes no
 * scene's revision; a name deleted and created again never gets back a
 * number it had. */
static void store_revision_counts_committed_mutations_of_every_scene_and_nothing_else(void **state)
{
    (void)state;
    enum { NAMES = 5, IDS = 12, OPS = 4000 };
    rp_store *st = store_with_limit_ten();
    static const char *const names[NAMES] = {"a", "b", "c", "d", "e"};
    char ids[IDS][8];
    for (size_t j = 0; j < IDS; j++)
        snprintf(ids[j], sizeof ids[j], "i%zu", j);
    uint64_t highest[NAMES] = {0}; /* highest revision each name ever had */
    test_rng r = {77};
    size_t failures = 0, deletions = 0, ok_by_kind[6] = {0};
    for (int op = 0; op < OPS; op++) {
        size_t i = (size_t)(rng_next(&r) % NAMES);
        rp_scene *sc = rp_store_find(st, names[i]);
        uint64_t before = rp_store_revision(st);
        uint64_t revs[NAMES];
        for (size_t k = 0; k < NAMES; k++) {
            const rp_scene *o = rp_store_find(st, names[k]);
            revs[k] = o ? rp_scene_revision(o) : 0;
        }
        rp_shape_put p[12];
        const char *rm[4];
        size_t k = (size_t)(rng_next(&r) % 12); /* up to 11 distinct ids: may pass the limit */
        for (size_t b = 0; b < k; b++)
            p[b] = P(ids[rng_next(&r) % IDS], random_shape(&r));
        for (size_t b = 0; b < 4; b++)
            rm[b] = ids[rng_next(&r) % IDS];
        uint64_t cur = sc ? rp_scene_revision(sc) : 0;
        uint64_t stale = cur + 1 + rng_next(&r) % 2, actual = 0;
        bool use_stale = rng_next(&r) % 5 == 0;
        const uint64_t *cas = use_stale ? &stale : (rng_next(&r) & 1) ? &cur : NULL;
        rp_status s;
        unsigned kind = (unsigned)(rng_next(&r) % 6);
        switch (kind) {
        case 0:
            s = rp_store_create(st, names[i], p, k, NULL);
            break;
        case 1:
            s = rp_store_delete(st, names[i]);
            deletions += s == RP_OK;
            break;
        case 2:
            s = rp_store_put(st, names[i], p, k, cas, rng_next(&r) & 1, NULL, &actual);
            break;
        case 3:
            s = sc ? rp_scene_remove(sc, rm, 4, cas, NULL, &actual) : RP_ERR_NOT_FOUND;
            break;
        default:
            s = rp_store_replace(st, names[i], p, k, cas, rng_next(&r) & 1, NULL, &actual);
            break;
        }
        if (s == RP_ERR_REVISION)
            assert_int_equal(actual, cur);
        if (kind >= 2 && use_stale && s == RP_OK)
            fail_msg("op %d: a stale if_revision was accepted", op);
        rp_scene *now = rp_store_find(st, names[i]);
        ok_by_kind[kind] += s == RP_OK;
        if (s != RP_OK) {
            failures++;
            assert_int_equal(rp_store_revision(st), before);
        } else {
            assert_int_equal(rp_store_revision(st), before + 1);
            if (now) {
                assert_int_equal(rp_scene_revision(now), before + 1);
                assert_true(rp_scene_revision(now) > highest[i]);
                highest[i] = rp_scene_revision(now);
            }
        }
        /* Only the scene the call named may have changed revision. */
        for (size_t o = 0; o < NAMES; o++) {
            const rp_scene *x = rp_store_find(st, names[o]);
            if (o != i || s != RP_OK)
                assert_int_equal(x ? rp_scene_revision(x) : 0, revs[o]);
            if (x)
                assert_true(rp_scene_revision(x) <= rp_store_revision(st));
        }
    }
    /* Failures and every kind of success happened often. */
    assert_true(failures > OPS / 10);
    assert_true(deletions > OPS / 50);
    for (size_t kind = 0; kind < 6; kind++)
        if (ok_by_kind[kind] < OPS / 100)
            fail_msg("kind %zu succeeded only %zu times", kind, ok_by_kind[kind]);
    rp_store_free(st);
}

/* ---- replace -------------------------------------------------------------- */

static void replace_swaps_the_whole_content_at_the_next_revision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put old[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(1, 0, 0, 1)),
                          P("c", sphere(2, 0, 0, 1))};
    rp_scene *sc = NULL, *other = NULL;
    assert_int_equal(rp_store_create(st, "s", old, 3, &sc), RP_OK);        /* 1 */
    assert_int_equal(rp_store_create(st, "other", old, 1, &other), RP_OK); /* 2 */
    rp_shape_put neu[] = {P("d", sphere(0, 5, 0, 1)), P("c", capsule(0, 0, 0, 0, 0, 1, 0.5)),
                          P("d", sphere(0, 6, 0, 2)), P("e/f#0", sphere(0, 7, 0, 0))};
    rp_scene *out = NULL;
    uint64_t actual = 4242;
    assert_int_equal(rp_store_replace(st, "s", neu, 4, NULL, false, &out, &actual), RP_OK);
    assert_int_equal(actual, 4242); /* only written on a conflict */
    assert_non_null(out);
    assert_ptr_equal(rp_store_find(st, "s"), out);
    sc = out; /* the old scene object is gone */
    assert_int_equal(rp_scene_revision(sc), 3);
    assert_int_equal(rp_store_revision(st), 3);
    assert_int_equal(rp_scene_revision(other), 2);
    assert_string_equal(rp_scene_name(sc), "s");
    /* Exactly the new content: old ids gone, a kept id with its new shape,
     * a repeated id once with its last shape. */
    assert_int_equal(rp_scene_shape_count(sc), 3);
    assert_absent(sc, "a");
    assert_absent(sc, "b");
    assert_holds(sc, "c", capsule(0, 0, 0, 0, 0, 1, 0.5));
    assert_holds(sc, "d", sphere(0, 6, 0, 2));
    assert_holds(sc, "e/f#0", sphere(0, 7, 0, 0));
    assert_sorted_view(sc);
    assert_int_equal(rp_store_shape_count(st), 4); /* 3 here, 1 in "other" */
    assert_int_equal(rp_store_scene_count(st), 2);
    /* Queries see the new content only. */
    rp_shape q[] = {sphere(0, 0, 0, 0), sphere(1, 0, 0, 0.25)};
    rp_query all = {q, 2, NULL, 0, true, INFINITY, false, false, 0, NULL, NULL, 0};
    assert_query_matches_brute_force(sc, &all);
    /* The scene takes puts and removes as before. */
    rp_shape_put more = P("a", sphere(9, 9, 9, 1));
    assert_int_equal(rp_scene_put(sc, &more, 1, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 4);
    const char *gone[] = {"d"};
    assert_int_equal(rp_scene_remove(sc, gone, 1, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 5);
    assert_int_equal(rp_scene_shape_count(sc), 3);

    /* An empty replacement empties the scene, which stays; `out` and
     * `actual_revision` may be NULL. */
    assert_int_equal(rp_store_replace(st, "s", NULL, 0, NULL, false, NULL, NULL), RP_OK);
    sc = rp_store_find(st, "s");
    assert_non_null(sc);
    assert_int_equal(rp_scene_shape_count(sc), 0);
    assert_int_equal(rp_scene_revision(sc), 6);
    assert_int_equal(rp_store_shape_count(st), 1);
    rp_query_result res;
    assert_int_equal(rp_scene_query(sc, &all, &res), RP_OK);
    assert_false(res.has_min);
    rp_query_result_free(&res);
    /* Replacing with the same content still takes a number. */
    assert_int_equal(rp_store_replace(st, "other", old, 1, NULL, false, &other, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(other), 7);
    assert_holds(other, "a", old[0].shape);
    rp_store_free(st);
}

static void replace_with_if_revision_applies_on_match_and_changes_nothing_on_mismatch(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape_put init[] = {P("a", sphere(0, 0, 0, 1)), P("b", sphere(2, 0, 0, 1))};
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", init, 2, &sc), RP_OK);  /* 1 */
    assert_int_equal(rp_store_create(st, "t", NULL, 0, NULL), RP_OK); /* 2 */
    assert_int_equal(rp_scene_put(sc, NULL, 0, NULL, NULL), RP_OK);   /* 3 */
    size_t mem = rp_store_memory(st);

    rp_shape_put p[] = {P("c", sphere(1, 1, 1, 1))};
    /* 2 is a revision the store had, but not this scene's. */
    const uint64_t stale[] = {0, 1, 2, 4, UINT64_MAX};
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
        snapshot snap = take_snapshot(sc);
        uint64_t actual = 0;
        rp_scene *out = NULL;
        assert_int_equal(rp_store_replace(st, "s", p, 1, &stale[i], false, &out, &actual),
                         RP_ERR_REVISION);
        assert_int_equal(actual, 3);
        assert_ptr_equal(rp_store_find(st, "s"), sc);
        assert_unchanged(sc, &snap);
        assert_absent(sc, "c");
        assert_int_equal(rp_store_revision(st), 3);
        assert_int_equal(rp_store_shape_count(st), 2);
        assert_int_equal(rp_store_memory(st), mem);
        /* With create: the scene exists, so the same conflict. */
        actual = 0;
        assert_int_equal(rp_store_replace(st, "s", p, 1, &stale[i], true, NULL, &actual),
                         RP_ERR_REVISION);
        assert_int_equal(actual, 3);
        assert_int_equal(rp_store_revision(st), 3);
    }
    /* actual_revision may be NULL. */
    uint64_t one = 1;
    assert_int_equal(rp_store_replace(st, "s", p, 1, &one, false, NULL, NULL), RP_ERR_REVISION);
    assert_int_equal(rp_scene_revision(sc), 3);

    uint64_t three = 3;
    rp_scene *out = NULL;
    assert_int_equal(rp_store_replace(st, "s", p, 1, &three, false, &out, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(out), 4);
    assert_int_equal(rp_scene_shape_count(out), 1);
    assert_holds(out, "c", p[0].shape);
    assert_absent(out, "a");
    /* The revision just read is the one to compare against next. */
    assert_int_equal(rp_store_replace(st, "s", init, 2, &three, false, NULL, NULL),
                     RP_ERR_REVISION);
    uint64_t four = 4;
    assert_int_equal(rp_store_replace(st, "s", init, 2, &four, false, &out, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(out), 5);
    assert_int_equal(rp_scene_shape_count(out), 2);
    rp_store_free(st);
}

static void replace_of_a_missing_scene_needs_create_and_counts_it_as_revision_zero(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    assert_int_equal(rp_store_create(st, "other", NULL, 0, NULL), RP_OK); /* 1 */
    size_t mem = rp_store_memory(st);
    rp_shape_put p[] = {P("a", sphere(0, 0, 0, 1)), P("a", sphere(3, 0, 0, 1)),
                        P("b", sphere(1, 0, 0, 1))};
    uint64_t zero = 0, one = 1, actual = 99;
    /* Without create: not found, whatever if_revision says. */
    assert_int_equal(rp_store_replace(st, "new", p, 3, NULL, false, NULL, NULL), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_replace(st, "new", p, 3, &zero, false, NULL, &actual),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_replace(st, "new", NULL, 0, NULL, false, NULL, NULL),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(actual, 99);
    /* With create and an if_revision other than 0: a conflict, actual 0. */
    assert_int_equal(rp_store_replace(st, "new", p, 3, &one, true, NULL, &actual), RP_ERR_REVISION);
    assert_int_equal(actual, 0);
    assert_null(rp_store_find(st, "new"));
    assert_int_equal(rp_store_scene_count(st), 1);
    assert_int_equal(rp_store_shape_count(st), 0);
    assert_int_equal(rp_store_revision(st), 1);
    assert_int_equal(rp_store_memory(st), mem);

    /* With create: made, holding the content (later duplicates win). */
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_replace(st, "new", p, 3, &zero, true, &sc, NULL), RP_OK);
    assert_non_null(sc);
    assert_ptr_equal(rp_store_find(st, "new"), sc);
    assert_int_equal(rp_scene_revision(sc), 2);
    assert_int_equal(rp_scene_shape_count(sc), 2);
    assert_holds(sc, "a", sphere(3, 0, 0, 1));
    assert_holds(sc, "b", p[2].shape);
    /* "Must not exist yet" now fails. */
    assert_int_equal(rp_store_replace(st, "new", NULL, 0, &zero, true, NULL, &actual),
                     RP_ERR_REVISION);
    assert_int_equal(actual, 2);
    /* Without if_revision, create on a missing scene; `out` may be NULL. */
    assert_int_equal(rp_store_replace(st, "bare", NULL, 0, NULL, true, NULL, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(rp_store_find(st, "bare")), 3);
    assert_int_equal(rp_scene_shape_count(rp_store_find(st, "bare")), 0);
    assert_int_equal(rp_store_scene_count(st), 3);
    /* The list stays sorted by name. */
    assert_string_equal(rp_scene_name(rp_store_scene_at(st, 0)), "bare");
    assert_string_equal(rp_scene_name(rp_store_scene_at(st, 1)), "new");
    assert_string_equal(rp_scene_name(rp_store_scene_at(st, 2)), "other");
    /* Deleted and replaced into existence again: a fresh, higher number. */
    assert_int_equal(rp_store_delete(st, "new"), RP_OK); /* 4 */
    assert_int_equal(rp_store_replace(st, "new", p, 1, &zero, true, &sc, NULL), RP_OK);
    assert_int_equal(rp_scene_revision(sc), 5);
    rp_store_free(st);
}

static void replace_beyond_the_shape_limit_keeps_the_old_content(void **state)
{
    (void)state;
    rp_store *st = store_with_limit_ten();
    char ids[12][24];
    rp_shape_put p[12];
    ten_shapes(ids, p, 12, 0.5);
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", p, 4, &sc), RP_OK); /* 1 */
    size_t mem = rp_store_memory(st);
    snapshot snap = take_snapshot(sc);
    /* The new content alone counts: eleven ids, however few the old. */
    assert_int_equal(rp_store_replace(st, "s", p, 11, NULL, false, NULL, NULL), RP_ERR_LIMIT);
    uint64_t one = 1;
    assert_int_equal(rp_store_replace(st, "s", &p[1], 11, &one, true, NULL, NULL), RP_ERR_LIMIT);
    assert_ptr_equal(rp_store_find(st, "s"), sc);
    assert_unchanged(sc, &snap);
    assert_int_equal(rp_store_memory(st), mem);
    assert_int_equal(rp_store_shape_count(st), 4);
    assert_int_equal(rp_store_revision(st), 1);
    /* Nor is a missing scene created. */
    assert_int_equal(rp_store_replace(st, "over", p, 11, NULL, true, NULL, NULL), RP_ERR_LIMIT);
    assert_null(rp_store_find(st, "over"));
    assert_int_equal(rp_store_memory(st), mem);
    assert_int_equal(rp_store_revision(st), 1);

    /* Ten fit, also when the old content had ten of other ids (the limit
     * is not applied to old plus new). */
    rp_scene *out = NULL;
    assert_int_equal(rp_store_replace(st, "s", &p[2], 10, &one, false, &out, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(out), 10);
    assert_int_equal(rp_scene_revision(out), 2);
    char ids2[10][24];
    rp_shape_put q[10];
    for (size_t i = 0; i < 10; i++) {
        snprintf(ids2[i], sizeof ids2[i], "other%zu", i);
        q[i] = P(ids2[i], sphere(0, (double)i, 0, 1));
    }
    assert_int_equal(rp_store_replace(st, "s", q, 10, NULL, false, &out, NULL), RP_OK);
    assert_int_equal(rp_scene_shape_count(out), 10);
    assert_absent(out, "s2");
    assert_holds(out, "other9", q[9].shape);
    assert_int_equal(rp_store_shape_count(st), 10);
    rp_store_free(st);
}

static void replace_and_delete_return_memory_and_shape_count_to_baseline(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    /* Baseline once the scene array exists (see the test above). */
    assert_int_equal(rp_store_create(st, "warm-up", NULL, 0, NULL), RP_OK);
    assert_int_equal(rp_store_delete(st, "warm-up"), RP_OK);
    size_t base = rp_store_memory(st);

    enum { N = 200 };
    static char ids[N][24];
    rp_shape_put small[3], big[N];
    test_rng r = {5};
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "shape/with/a/long/id%zu", i);
        big[i] = P(ids[i], random_shape(&r));
    }
    for (size_t i = 0; i < 3; i++)
        small[i] = big[i];
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "s", small, 3, &sc), RP_OK);
    size_t with_small = rp_store_memory(st);
    assert_true(with_small > base);
    for (int round = 0; round < 5; round++) {
        assert_int_equal(rp_store_replace(st, "s", big, N, NULL, false, &sc, NULL), RP_OK);
        assert_int_equal(rp_store_shape_count(st), N);
        assert_true(rp_store_memory(st) > with_small);
        /* The same content built again costs exactly the same. */
        assert_int_equal(rp_store_replace(st, "s", small, 3, NULL, false, &sc, NULL), RP_OK);
        assert_int_equal(rp_store_shape_count(st), 3);
        assert_int_equal(rp_store_memory(st), with_small);
        /* A query builds whatever the scene keeps for queries; a replacement
         * frees it with the old content. */
        rp_shape q = sphere(0, 0, 0, 1);
        rp_query one = {&q, 1, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
        assert_query_matches_brute_force(sc, &one);
    }
    assert_int_equal(rp_store_replace(st, "s", big, N, NULL, false, &sc, NULL), RP_OK);
    rp_shape q = sphere(0, 0, 0, 1);
    rp_query one = {&q, 1, NULL, 0, false, 0, false, false, 0, NULL, NULL, 0};
    assert_query_matches_brute_force(sc, &one);
    assert_int_equal(rp_store_delete(st, "s"), RP_OK);
    assert_int_equal(rp_store_memory(st), base);
    assert_int_equal(rp_store_shape_count(st), 0);
    assert_int_equal(rp_store_scene_count(st), 0);
    assert_int_equal(rp_store_revision(st), 2 + 1 + 11 + 1); /* warm-up, create, 11, delete */
    rp_store_free(st);
}

/* ---- per-scene overhead ------------------------------------------------------ */

/* What a small scene costs the store (rp_store_memory): its struct and
 * name, and for a shape a short entry chunk and a one-group id index
 * (chunks.h), not a full chunk of 32 entries and 256 index slots (about
 * 3.9 kB a one-shape scene before). */
#define EMPTY_SCENE_BUDGET 320
#define ONE_SHAPE_SCENE_BUDGET 640

static void empty_and_one_shape_scenes_stay_within_their_memory_budget(void **state)
{
    (void)state;
    enum { N = 1000 };
    rp_shape_put p[1] = {P("a", sphere(0, 0, 0, 1))};
    for (size_t shapes = 0; shapes <= 1; shapes++) {
        rp_store *st = rp_store_new(NULL);
        size_t before = rp_store_memory(st);
        char name[32];
        for (int i = 0; i < N; i++) {
            snprintf(name, sizeof name, "scene%d", i);
            assert_int_equal(rp_store_create(st, name, p, shapes, NULL), RP_OK);
        }
        size_t per = (rp_store_memory(st) - before) / N;
        print_message("%zu-shape scene: %zu bytes\n", shapes, per);
        assert_true(per <= (shapes ? ONE_SHAPE_SCENE_BUDGET : EMPTY_SCENE_BUDGET));
        rp_store_free(st);
    }
}

/* A scene that starts with one shape grows one shape at a time (its short
 * chunks lengthened, then more of them) while a snapshot holds every
 * version on the way: each version keeps what it had, the ids shared
 * between them are counted right (ASan: no leak, no double free), and
 * the memory count comes back to the empty store's. */
static void small_scene_grows_while_snapshots_hold_it(void **state)
{
    (void)state;
    enum { STEPS = 80 };
    rp_store *st = rp_store_new(NULL);
    /* The store's list of scenes keeps its room: measured with it. */
    assert_int_equal(rp_store_create(st, "grow", NULL, 0, NULL), RP_OK);
    assert_int_equal(rp_store_delete(st, "grow"), RP_OK);
    size_t empty = rp_store_memory(st);
    rp_store *snaps[STEPS];
    char ids[STEPS][16];
    for (int i = 0; i < STEPS; i++) {
        snprintf(ids[i], sizeof ids[i], "s%d", i);
        rp_shape_put p[1] = {P(ids[i], sphere(i, 0, 0, 0.25))};
        if (i == 0)
            assert_int_equal(rp_store_create(st, "grow", p, 1, NULL), RP_OK);
        else
            assert_int_equal(rp_store_put(st, "grow", p, 1, NULL, false, NULL, NULL), RP_OK);
        snaps[i] = rp_store_snapshot(st);
        assert_non_null(snaps[i]);
    }
    for (int i = 0; i < STEPS; i++) {
        const rp_scene *sc = rp_store_find(snaps[i], "grow");
        assert_int_equal(rp_scene_shape_count(sc), (size_t)i + 1);
        for (int k = 0; k <= i; k++) {
            size_t e = rp_scene_find(sc, ids[k]);
            assert_true(e != SIZE_MAX);
            assert_true(rp_scene_shape_at(sc, e).sphere.center.x == k);
        }
        assert_true(rp_scene_find(sc, "nope") == SIZE_MAX);
    }
    /* Removals from the store's version shrink it while the snapshots
     * keep theirs. */
    for (int i = 0; i < STEPS; i += 2) {
        const char *id = ids[i];
        assert_int_equal(rp_store_remove(st, "grow", &id, 1, NULL, NULL, NULL, NULL), RP_OK);
    }
    assert_int_equal(rp_scene_shape_count(rp_store_find(st, "grow")), STEPS / 2);
    assert_int_equal(rp_scene_shape_count(rp_store_find(snaps[STEPS - 1], "grow")), STEPS);
    for (int i = 0; i < STEPS; i++)
        rp_store_free(snaps[i]);
    assert_int_equal(rp_store_delete(st, "grow"), RP_OK);
    assert_int_equal(rp_store_memory(st), empty);
    rp_store_free(st);
}

/* The half-space limit: a put that would pass it is refused whole
 * (RP_ERR_HALFSPACES), the store as it was; the limit is the store's. */
static void half_spaces_are_limited_per_scene(void **state)
{
    (void)state;
    rp_store_limits lim = {0, 3};
    rp_store *st = rp_store_new(&lim);
    assert_int_equal(rp_store_get_limits(st).max_halfspaces_per_scene, 3);
    rp_shape_put p[4];
    char ids[4][8];
    for (int k = 0; k < 4; k++) {
        snprintf(ids[k], sizeof ids[k], "h%d", k);
        rp_halfspace h;
        assert_int_equal(rp_halfspace_new((rp_vec3){0, 0, 1}, -k, &h), RP_OK);
        p[k] = (rp_shape_put){ids[k], rp_shape_from_halfspace(h)};
    }
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "s", p, 3, &sc), RP_OK);
    size_t bytes = rp_store_memory(st);
    uint64_t rev = rp_scene_revision(sc);
    assert_int_equal(rp_store_put(st, "s", &p[3], 1, NULL, false, &sc, NULL), RP_ERR_HALFSPACES);
    assert_int_equal(rp_scene_revision(sc), rev);
    assert_int_equal(rp_scene_shape_count(sc), 3);
    assert_int_equal(rp_store_memory(st), bytes);
    /* A half-space that becomes a sphere makes room. */
    rp_shape_put ball = {"h0", rp_shape_from_sphere((rp_sphere){{0, 0, 0}, 1})};
    assert_int_equal(rp_store_put(st, "s", &ball, 1, NULL, false, &sc, NULL), RP_OK);
    assert_int_equal(rp_store_put(st, "s", &p[3], 1, NULL, false, &sc, NULL), RP_OK);
    /* Above the ceiling counts as the ceiling. */
    rp_store_limits huge = {0, 1u << 20};
    rp_store_set_limits(st, &huge);
    assert_int_equal(rp_store_get_limits(st).max_halfspaces_per_scene, RP_MAX_HALFSPACES_PER_SCENE);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(half_spaces_are_limited_per_scene),
        /* the store: create, delete, list, find */
        cmocka_unit_test(new_store_is_empty_and_fills_in_default_limits),
        cmocka_unit_test(create_without_shapes_starts_empty_at_the_next_store_revision),
        cmocka_unit_test(create_with_shapes_holds_them_at_revision_one),
        cmocka_unit_test(create_with_duplicate_ids_keeps_the_last_shape_once),
        cmocka_unit_test(create_of_existing_name_fails_with_exists_and_changes_nothing),
        cmocka_unit_test(store_copies_scene_names_and_shape_ids),
        cmocka_unit_test(delete_of_missing_scene_is_not_found),
        cmocka_unit_test(deleted_scene_is_gone_and_recreating_it_starts_empty_at_a_fresh_revision),
        cmocka_unit_test(store_list_stays_sorted_by_name_under_random_creates_and_deletes),
        cmocka_unit_test(store_find_matches_whole_names_only),
        /* put */
        cmocka_unit_test(put_inserts_new_ids_and_bumps_revision_once),
        cmocka_unit_test(put_of_existing_id_replaces_shape_and_bumps_revision_once),
        cmocka_unit_test(empty_put_bumps_revision_and_changes_nothing_else),
        cmocka_unit_test(later_duplicate_ids_in_one_put_win_and_count_once),
        cmocka_unit_test(put_with_matching_if_revision_applies),
        cmocka_unit_test(put_with_stale_if_revision_fails_reports_actual_and_applies_nothing),
        cmocka_unit_test(store_put_creates_missing_scene_at_the_next_store_revision),
        cmocka_unit_test(
            store_put_with_nonzero_if_revision_on_missing_scene_conflicts_with_actual_zero),
        cmocka_unit_test(store_put_without_create_on_missing_scene_is_not_found),
        cmocka_unit_test(store_put_on_existing_scene_puts_into_it_with_compare_and_set),
        /* the per-scene shape limit */
        cmocka_unit_test(put_beyond_shape_limit_fails_and_leaves_scene_unchanged),
        cmocka_unit_test(put_replacing_existing_ids_at_the_limit_succeeds),
        cmocka_unit_test(duplicates_of_a_new_id_count_once_against_the_limit),
        cmocka_unit_test(create_beyond_shape_limit_fails_and_creates_nothing),
        /* remove */
        cmocka_unit_test(remove_counts_removed_ids_ignoring_unknown_and_duplicates),
        cmocka_unit_test(remove_bumps_revision_even_when_nothing_matches),
        cmocka_unit_test(remove_with_stale_if_revision_fails_and_removes_nothing),
        cmocka_unit_test(removing_every_shape_empties_the_scene_and_it_refills),
        /* consistency under random mutations */
        cmocka_unit_test(find_id_at_and_shape_at_agree_with_a_model_under_random_puts_and_removes),
        cmocka_unit_test(ids_sharing_hash_buckets_stay_findable_under_random_puts_and_removes),
        cmocka_unit_test(sorted_view_lists_ids_in_strcmp_order),
        /* accounting */
        cmocka_unit_test(memory_and_shape_count_return_to_baseline_after_everything_is_deleted),
        cmocka_unit_test(repeated_put_and_remove_cycles_do_not_drift_memory),
        /* queries */
        cmocka_unit_test(query_on_empty_scene_or_subset_has_no_minimum),
        cmocka_unit_test(query_with_single_shape_reports_that_pair),
        cmocka_unit_test(nearest_ties_go_to_lowest_query_then_smallest_id),
        cmocka_unit_test(collect_orders_equal_distances_by_query_then_id),
        cmocka_unit_test(collect_excludes_a_pair_at_exactly_the_threshold),
        cmocka_unit_test(collect_stops_with_limit_past_max_pairs),
        cmocka_unit_test(nearest_and_collected_pairs_equal_brute_force_on_random_scenes),
        cmocka_unit_test(first_only_returns_exactly_one_qualifying_pair),
        cmocka_unit_test(subset_restricts_the_scan_to_the_listed_shapes),
        cmocka_unit_test(shapes_all_at_one_point_tie_by_id),
        cmocka_unit_test(query_result_free_is_safe_on_zeroed_and_freed_results),
        /* store-wide revisions */
        cmocka_unit_test(store_revision_counts_committed_mutations_of_every_scene_and_nothing_else),
        /* replace */
        cmocka_unit_test(replace_swaps_the_whole_content_at_the_next_revision),
        cmocka_unit_test(replace_with_if_revision_applies_on_match_and_changes_nothing_on_mismatch),
        cmocka_unit_test(replace_of_a_missing_scene_needs_create_and_counts_it_as_revision_zero),
        cmocka_unit_test(replace_beyond_the_shape_limit_keeps_the_old_content),
        cmocka_unit_test(replace_and_delete_return_memory_and_shape_count_to_baseline),
        /* per-scene overhead */
        cmocka_unit_test(empty_and_one_shape_scenes_stay_within_their_memory_budget),
        cmocka_unit_test(small_scene_grows_while_snapshots_hold_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
