/* SPDX-License-Identifier: MIT */
/*
 * Objects in scenes (src/scene/objects.c): rigid groups of shapes with a
 * pose, written, moved, replaced and removed as one mutation each.
 *
 *   - A random run of object puts (new, replacing with other shape sets),
 *     moves, removals by name, plain puts and removals and whole
 *     replacements is mirrored by a plain model of the scene; after every
 *     step the scene holds exactly the model's world shapes (an object's
 *     shape "o/id" is rp_transform_shape(pose, local), bit for bit), its
 *     objects with their poses and local shapes, every mutation took one
 *     revision, and the tree keeps its invariants (rp_bvh_check_).
 *   - Queries with `ignore` equal a brute-force evaluation over the world
 *     shapes of the objects not ignored, and a model check with `ignore`
 *     equals the same check against a scene that lacks those objects.
 *   - Name clashes, unknown objects, bad poses and names, world shapes out
 *     of range and a refusing commit hook change nothing: revision, memory
 *     and content stay as they were.
 *   - The commit hook hears each mutation once, with its objects or moves;
 *     a snapshot taken before a move keeps the old poses.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "repose/scene.h"
#include "scene/scene_int.h"

/* ---- helpers ------------------------------------------------------------- */

static rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

static rp_transform random_pose(test_rng *r, double half)
{
    rp_transform tf;
    double q[4];
    do {
        for (int i = 0; i < 4; i++)
            q[i] = rng_uniform(r, -1, 1);
    } while (fabs(q[0]) + fabs(q[1]) + fabs(q[2]) + fabs(q[3]) < 0.1);
    rp_vec3 t =
        V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
    assert_int_equal(rp_transform_from_quaternion(t, q[0], q[1], q[2], q[3], &tf), RP_OK);
    return tf;
}

/* A random sphere, capsule or box near the origin (an object's frame). */
static rp_shape random_local(test_rng *r, double half)
{
    rp_vec3 c =
        V(rng_uniform(r, -half, half), rng_uniform(r, -half, half), rng_uniform(r, -half, half));
    rp_shape s;
    switch (rng_next(r) % 3) {
    case 0:
        assert_int_equal(rp_sphere_new(c, rng_uniform(r, 0, 0.5), &s.sphere), RP_OK);
        s.kind = RP_SHAPE_SPHERE;
        break;
    case 1: {
        rp_vec3 b = V(c.x + rng_uniform(r, -1, 1), c.y, c.z + rng_uniform(r, -1, 1));
        assert_int_equal(rp_capsule_new(c, b, rng_uniform(r, 0, 0.3), &s.capsule), RP_OK);
        s.kind = RP_SHAPE_CAPSULE;
        break;
    }
    default: {
        rp_box b;
        assert_int_equal(rp_box_new(c, V(rng_uniform(r, 0, 0.5), rng_uniform(r, 0, 0.5), 0.1),
                                    rng_uniform(r, 0.1, 1), rng_uniform(r, -1, 1), 0, 0, &b),
                         RP_OK);
        s = rp_shape_from_box(b);
    }
    }
    return s;
}

/* Shapes equal field by field, bit for bit. */
static bool same_shape(const rp_shape *a, const rp_shape *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case RP_SHAPE_SPHERE:
        return memcmp(&a->sphere, &b->sphere, sizeof a->sphere) == 0;
    case RP_SHAPE_CAPSULE:
        return memcmp(&a->capsule, &b->capsule, sizeof a->capsule) == 0;
    case RP_SHAPE_BOX:
        return memcmp(&a->box, &b->box, sizeof a->box) == 0;
    default:
        return memcmp(&a->halfspace, &b->halfspace, sizeof a->halfspace) == 0;
    }
}

/* ---- the model of a scene -------------------------------------------------- */

#define MAX_OBJ 12
#define MAX_LOCAL 6
#define MAX_PLAIN 40

typedef struct mobj {
    bool live;
    char name[16];
    rp_transform pose;
    size_t n;
    char ids[MAX_LOCAL][8];
    rp_shape local[MAX_LOCAL];
} mobj;

typedef struct mscene {
    mobj obj[MAX_OBJ]; /* obj[i] is named "o<i>" */
    bool plain_live[MAX_PLAIN];
    rp_shape plain[MAX_PLAIN]; /* plain[i] has id "p<i>" */
} mscene;

static void fill_object(test_rng *r, mobj *o, int i)
{
    snprintf(o->name, sizeof o->name, "o%d", i);
    o->live = true;
    o->pose = random_pose(r, 5);
    o->n = 1 + rng_next(r) % MAX_LOCAL;
    /* Local ids drawn from a small set, so that a replacing put keeps
     * some, drops some and adds some. */
    bool used[MAX_LOCAL + 3] = {false};
    for (size_t k = 0; k < o->n; k++) {
        size_t id;
        do
            id = rng_next(r) % (MAX_LOCAL + 3);
        while (used[id]);
        used[id] = true;
        snprintf(o->ids[k], sizeof o->ids[k], "s%zu", id);
        o->local[k] = random_local(r, 1);
    }
}

static rp_object_put object_put_of(const mobj *o, rp_shape_put *buf)
{
    for (size_t k = 0; k < o->n; k++)
        buf[k] = (rp_shape_put){o->ids[k], o->local[k]};
    return (rp_object_put){o->name, o->pose, buf, o->n};
}

/* The scene holds exactly the model. */
static void assert_matches(const rp_scene *sc, const mscene *m)
{
    size_t want = 0, objects = 0;
    for (int i = 0; i < MAX_PLAIN; i++) {
        if (!m->plain_live[i])
            continue;
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        size_t e = rp_scene_find(sc, id);
        assert_true(e != SIZE_MAX);
        assert_true(same_shape(SCENE_SHAPE(sc, e), &m->plain[i]));
        assert_null(rp_scene_shape_object(sc, e));
        want++;
    }
    for (int i = 0; i < MAX_OBJ; i++) {
        const mobj *mo = &m->obj[i];
        const rp_object *o = rp_scene_object_find(sc, mo->name[0] ? mo->name : "none");
        if (!mo->live) {
            assert_null(o);
            continue;
        }
        assert_non_null(o);
        objects++;
        rp_transform pose = rp_object_pose(o);
        assert_memory_equal(&pose, &mo->pose, sizeof pose);
        assert_int_equal(rp_object_shape_count(o), mo->n);
        for (size_t k = 0; k < mo->n; k++) {
            char id[32];
            snprintf(id, sizeof id, "%s/%s", mo->name, mo->ids[k]);
            size_t e = rp_scene_find(sc, id);
            assert_true(e != SIZE_MAX);
            rp_shape w = rp_transform_shape(&mo->pose, &mo->local[k]);
            assert_true(same_shape(SCENE_SHAPE(sc, e), &w));
            assert_ptr_equal(rp_scene_shape_object(sc, e), o);
            /* The object keeps the local shape, sorted by id. */
            bool seen = false;
            for (size_t j = 0; j < rp_object_shape_count(o); j++) {
                const rp_shape_put *lp = rp_object_shape_at(o, j);
                if (j)
                    assert_true(strcmp(rp_object_shape_at(o, j - 1)->id, lp->id) < 0);
                if (strcmp(lp->id, mo->ids[k]) == 0) {
                    seen = true;
                    assert_true(same_shape(&lp->shape, &mo->local[k]));
                }
            }
            assert_true(seen);
        }
        want += mo->n;
    }
    assert_int_equal(rp_scene_shape_count(sc), want);
    assert_int_equal(rp_scene_object_count(sc), objects);
    for (size_t i = 1; i < objects; i++)
        assert_true(strcmp(rp_object_name(rp_scene_object_at(sc, i - 1)),
                           rp_object_name(rp_scene_object_at(sc, i))) < 0);
    assert_true(rp_bvh_check_(sc) >= 0);
}

/* Brute force: nearest distance from q over the world shapes, leaving out
 * the objects whose bit is set in `ignored`; and how many are below t. */
static double brute(const rp_scene *sc, const rp_shape *q, unsigned ignored, double t,
                    size_t *below)
{
    double best = INFINITY;
    *below = 0;
    for (size_t e = 0; e < rp_scene_shape_count(sc); e++) {
        const rp_object *o = rp_scene_shape_object(sc, e);
        if (o && (ignored >> atoi(rp_object_name(o) + 1) & 1))
            continue;
        double d = rp_shape_signed_distance(q, SCENE_SHAPE(sc, e));
        if (d < best)
            best = d;
        *below += d < t;
    }
    return best;
}

static void check_queries(test_rng *r, const rp_scene *sc, const mscene *m)
{
    for (int round = 0; round < 4; round++) {
        const char *names[MAX_OBJ];
        size_t n = 0;
        unsigned ignored = 0;
        for (int i = 0; i < MAX_OBJ; i++)
            if (m->obj[i].live && rng_next(r) % 2) {
                names[n++] = m->obj[i].name;
                ignored |= 1u << i;
            }
        rp_shape q = random_local(r, 6);
        double t = rng_uniform(r, 0, 3);
        rp_query qq = {.shapes = &q, .n_shapes = 1, .collect = true, .threshold = t};
        qq.ignore = names;
        qq.n_ignore = n;
        rp_query_result res;
        assert_int_equal(rp_scene_query(sc, &qq, &res), RP_OK);
        size_t below;
        double best = brute(sc, &q, ignored, t, &below);
        assert_int_equal(res.n_pairs, below);
        if (isinf(best)) {
            assert_false(res.has_min);
        } else {
            assert_true(res.has_min);
            assert_same_bits(res.nearest.distance, best);
            const rp_object *o = rp_scene_shape_object(sc, res.nearest.shape);
            assert_false(o && (ignored >> atoi(rp_object_name(o) + 1) & 1));
        }
        for (size_t k = 0; k < res.n_pairs; k++) {
            const rp_object *o = rp_scene_shape_object(sc, res.pairs[k].shape);
            assert_false(o && (ignored >> atoi(rp_object_name(o) + 1) & 1));
        }
        rp_query_result_free(&res);
    }
}

/* ---- tests ------------------------------------------------------------------------ */

static void random_runs_match_the_model(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        test_rng r = {seed * 7919};
        rp_store *st = rp_store_new(NULL);
        mscene m;
        memset(&m, 0, sizeof m);
        assert_int_equal(rp_store_create(st, "s", NULL, 0, NULL), RP_OK);
        for (int step = 0; step < 300; step++) {
            uint64_t rev = rp_store_revision(st);
            rp_status s = RP_OK;
            unsigned op = (unsigned)(rng_next(&r) % 10);
            if (op <= 2) { /* put objects (and some plain shapes) */
                rp_object_put puts[3];
                rp_shape_put bufs[3][MAX_LOCAL];
                rp_shape_put plain[2];
                char pid[2][8];
                size_t n = 1 + rng_next(&r) % 3, np = rng_next(&r) % 3;
                int chosen[3] = {-1, -1, -1};
                for (size_t j = 0; j < n; j++) {
                    int i;
                    bool again;
                    do {
                        i = (int)(rng_next(&r) % MAX_OBJ);
                        again = false;
                        for (size_t q = 0; q < j; q++)
                            again |= chosen[q] == i;
                    } while (again);
                    chosen[j] = i;
                    fill_object(&r, &m.obj[i], i);
                    puts[j] = object_put_of(&m.obj[i], bufs[j]);
                }
                for (size_t k = 0; k < np; k++) {
                    int i = (int)(rng_next(&r) % MAX_PLAIN);
                    if (k == 1 && strcmp(pid[0] + 1, "") != 0 && atoi(pid[0] + 1) == i)
                        i = (i + 1) % MAX_PLAIN;
                    snprintf(pid[k], sizeof pid[k], "p%d", i);
                    m.plain[i] = random_local(&r, 6);
                    m.plain_live[i] = true;
                    plain[k] = (rp_shape_put){pid[k], m.plain[i]};
                }
                if (op == 2 && rng_next(&r) % 3 == 0) { /* the whole content */
                    for (int i = 0; i < MAX_OBJ; i++) {
                        bool kept = false;
                        for (size_t j = 0; j < n; j++)
                            kept |= chosen[j] == i;
                        m.obj[i].live &= kept;
                    }
                    for (int i = 0; i < MAX_PLAIN; i++) {
                        bool kept = false;
                        for (size_t k = 0; k < np; k++)
                            kept |= atoi(pid[k] + 1) == i;
                        m.plain_live[i] &= kept;
                    }
                    s = rp_store_replace_objects(st, "s", plain, np, puts, n, NULL, false, NULL,
                                                 NULL, NULL);
                } else {
                    s = rp_store_put_objects(st, "s", plain, np, puts, n, NULL, false, NULL, NULL,
                                             NULL);
                }
            } else if (op <= 5) { /* move some objects */
                rp_object_move mv[MAX_OBJ];
                size_t n = 0;
                for (int i = 0; i < MAX_OBJ; i++)
                    if (m.obj[i].live && rng_next(&r) % 3 == 0) {
                        m.obj[i].pose = random_pose(&r, 5);
                        mv[n++] = (rp_object_move){m.obj[i].name, m.obj[i].pose};
                    }
                s = rp_store_move(st, "s", mv, n, NULL, NULL, NULL, NULL);
            } else if (op <= 7) { /* remove objects and plain shapes by name */
                const char *ids[6];
                char buf[6][8];
                size_t n = 1 + rng_next(&r) % 5;
                for (size_t k = 0; k < n; k++) {
                    int i = (int)(rng_next(&r) % MAX_PLAIN);
                    if (rng_next(&r) % 2) {
                        snprintf(buf[k], sizeof buf[k], "o%d", i % MAX_OBJ);
                        m.obj[i % MAX_OBJ].live = false;
                    } else {
                        snprintf(buf[k], sizeof buf[k], "p%d", i);
                        m.plain_live[i] = false;
                    }
                    ids[k] = buf[k];
                }
                size_t removed = 0;
                s = rp_store_remove(st, "s", ids, n, NULL, NULL, &removed, NULL);
            } else { /* a plain put */
                int i = (int)(rng_next(&r) % MAX_PLAIN);
                char id[8];
                snprintf(id, sizeof id, "p%d", i);
                m.plain[i] = random_local(&r, 6);
                m.plain_live[i] = true;
                rp_shape_put p = {id, m.plain[i]};
                s = rp_store_put(st, "s", &p, 1, NULL, false, NULL, NULL);
            }
            assert_int_equal(s, RP_OK);
            assert_int_equal(rp_store_revision(st), rev + 1);
            const rp_scene *sc = rp_store_find(st, "s");
            assert_int_equal(rp_scene_revision(sc), rev + 1);
            assert_matches(sc, &m);
            if (step % 5 == 0)
                check_queries(&r, sc, &m);
        }
        rp_store_free(st);
    }
}

static rp_shape sphere_at(double x, double y, double z, double rad)
{
    rp_shape s;
    assert_int_equal(rp_sphere_new(V(x, y, z), rad, &s.sphere), RP_OK);
    s.kind = RP_SHAPE_SPHERE;
    return s;
}

static rp_transform shift(double x, double y, double z)
{
    rp_transform tf = rp_transform_identity();
    tf.t = V(x, y, z);
    return tf;
}

/* A scene "s": plain shape "wall", object "box" of shapes a, b at x = 2. */
static rp_store *small_store(void)
{
    rp_store *st = rp_store_new(NULL);
    rp_shape_put wall = {"wall", sphere_at(0, 5, 0, 1)};
    rp_shape_put loc[2] = {{"a", sphere_at(0, 0, 0, 0.5)}, {"b", sphere_at(0, 0, 1, 0.5)}};
    rp_object_put o = {"box", shift(2, 0, 0), loc, 2};
    assert_int_equal(rp_store_put_objects(st, "s", &wall, 1, &o, 1, NULL, true, NULL, NULL, NULL),
                     RP_OK);
    return st;
}

/* Runs f on the store and asserts it failed with `want`, naming (what,
 * index), and left revision, memory and content as they were. */
#define ASSERT_REFUSED(st, call, want, what_, index_)                                              \
    do {                                                                                           \
        uint64_t rev_ = rp_store_revision(st);                                                     \
        size_t mem_ = rp_store_memory(st);                                                         \
        size_t n_ = rp_scene_shape_count(rp_store_find(st, "s"));                                  \
        rp_edit_error err = {RP_EDIT_NONE, 0, 0};                                                  \
        (void)err;                                                                                 \
        assert_int_equal((call), (want));                                                          \
        if ((what_) != RP_EDIT_NONE) {                                                             \
            assert_int_equal(err.what, (what_));                                                   \
            assert_int_equal(err.index, (index_));                                                 \
        }                                                                                          \
        assert_int_equal(rp_store_revision(st), rev_);                                             \
        assert_int_equal(rp_store_memory(st), mem_);                                               \
        assert_int_equal(rp_scene_shape_count(rp_store_find(st, "s")), n_);                        \
    } while (0)

static void clashes_and_bad_arguments_change_nothing(void **state)
{
    (void)state;
    rp_store *st = small_store();
    rp_shape_put loc[1] = {{"a", sphere_at(0, 0, 0, 0.5)}};
    /* The scene's own ids an object owns, or its name. */
    rp_shape_put owned = {"box/c", sphere_at(9, 9, 9, 1)};
    ASSERT_REFUSED(st, rp_store_put(st, "s", &owned, 1, NULL, false, NULL, NULL), RP_ERR_EXISTS,
                   RP_EDIT_NONE, 0);
    rp_shape_put named = {"box", sphere_at(9, 9, 9, 1)};
    ASSERT_REFUSED(st, rp_store_put(st, "s", &named, 1, NULL, false, NULL, NULL), RP_ERR_EXISTS,
                   RP_EDIT_NONE, 0);
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", &owned, 1, NULL, 0, NULL, false, NULL, NULL, &err),
                   RP_ERR_EXISTS, RP_EDIT_SHAPE, 0);
    /* An object named like a shape of the scene's own, or owning its id. */
    rp_object_put wall = {"wall", shift(0, 0, 0), loc, 1};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, &wall, 1, NULL, false, NULL, NULL, &err),
                   RP_ERR_EXISTS, RP_EDIT_OBJECT, 0);
    rp_shape_put plain_member = {"crate/a", sphere_at(7, 7, 7, 1)};
    assert_int_equal(rp_store_put(st, "s", &plain_member, 1, NULL, false, NULL, NULL), RP_OK);
    rp_object_put crate = {"crate", shift(0, 0, 0), loc, 1};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, &crate, 1, NULL, false, NULL, NULL, &err),
                   RP_ERR_EXISTS, RP_EDIT_OBJECT, 0);
    /* The same put naming a shape like one of its objects. */
    rp_object_put two[2] = {{"p", shift(0, 0, 0), loc, 1}, {"q", shift(0, 0, 0), loc, 1}};
    rp_shape_put q_own = {"q/z", sphere_at(1, 1, 1, 1)};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", &q_own, 1, two, 2, NULL, false, NULL, NULL, &err),
                   RP_ERR_EXISTS, RP_EDIT_SHAPE, 0);
    /* Bad names, a name twice, an id twice in one object, a bad pose. */
    rp_object_put slash = {"a/b", shift(0, 0, 0), loc, 1};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, &slash, 1, NULL, false, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_OBJECT, 0);
    rp_object_put twice[2] = {{"p", shift(0, 0, 0), loc, 1}, {"p", shift(1, 0, 0), loc, 1}};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, twice, 2, NULL, false, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_OBJECT, 1);
    rp_shape_put dup[2] = {{"a", sphere_at(0, 0, 0, 1)}, {"a", sphere_at(1, 0, 0, 1)}};
    rp_object_put dups = {"p", shift(0, 0, 0), dup, 2};
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, &dups, 1, NULL, false, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_OBJECT, 0);
    rp_transform bad = shift(0, 0, 0);
    bad.r[0][0] = 2;
    rp_object_put badpose = {"p", bad, loc, 1};
    ASSERT_REFUSED(
        st, rp_store_put_objects(st, "s", NULL, 0, &badpose, 1, NULL, false, NULL, NULL, &err),
        RP_ERR_TRANSFORM, RP_EDIT_OBJECT, 0);
    /* A pose that moves a shape past the range of doubles. */
    rp_object_put far = {"p", shift(DBL_MAX, 0, 0), loc, 1};
    rp_shape_put off[1] = {{"a", sphere_at(DBL_MAX, 0, 0, 0.5)}};
    far.shapes = off;
    ASSERT_REFUSED(st,
                   rp_store_put_objects(st, "s", NULL, 0, &far, 1, NULL, false, NULL, NULL, &err),
                   RP_ERR_NONFINITE, RP_EDIT_OBJECT, 0);
    /* Moves: unknown object, one named twice, a bad pose, out of range. */
    rp_object_move mv[2] = {{"box", shift(1, 1, 1)}, {"nothing", shift(0, 0, 0)}};
    ASSERT_REFUSED(st, rp_store_move(st, "s", mv, 2, NULL, NULL, NULL, &err), RP_ERR_NOT_FOUND,
                   RP_EDIT_MOVE, 1);
    rp_object_move mv2[2] = {{"box", shift(1, 1, 1)}, {"box", shift(0, 0, 0)}};
    ASSERT_REFUSED(st, rp_store_move(st, "s", mv2, 2, NULL, NULL, NULL, &err), RP_ERR_INVALID_ARG,
                   RP_EDIT_MOVE, 1);
    rp_object_move mv3 = {"box", bad};
    ASSERT_REFUSED(st, rp_store_move(st, "s", &mv3, 1, NULL, NULL, NULL, &err), RP_ERR_TRANSFORM,
                   RP_EDIT_MOVE, 0);
    rp_shape_put big[1] = {{"a", sphere_at(1e308, 0, 0, 0.5)}};
    rp_object_put huge = {"huge", shift(0, 0, 0), big, 1};
    assert_int_equal(
        rp_store_put_objects(st, "s", NULL, 0, &huge, 1, NULL, false, NULL, NULL, NULL), RP_OK);
    rp_object_move mv5[2] = {{"box", shift(1, 0, 0)}, {"huge", shift(DBL_MAX, 0, 0)}};
    ASSERT_REFUSED(st, rp_store_move(st, "s", mv5, 2, NULL, NULL, NULL, &err), RP_ERR_NONFINITE,
                   RP_EDIT_MOVE, 1);
    ASSERT_REFUSED(st, rp_store_move(st, "nowhere", &mv3, 1, NULL, NULL, NULL, &err),
                   RP_ERR_NOT_FOUND, RP_EDIT_NONE, 0);
    uint64_t wrong = 1;
    ASSERT_REFUSED(st, rp_store_move(st, "s", mv, 1, &wrong, NULL, NULL, &err), RP_ERR_REVISION,
                   RP_EDIT_NONE, 0);
    /* Removing an object's shape by its id. */
    const char *member[1] = {"box/a"};
    ASSERT_REFUSED(st, rp_store_remove(st, "s", member, 1, NULL, NULL, NULL, NULL), RP_ERR_EXISTS,
                   RP_EDIT_NONE, 0);
    /* Ignoring something that is no object. */
    rp_shape q = sphere_at(0, 0, 0, 0);
    const char *ign[1] = {"wall"};
    rp_query qq = {.shapes = &q, .n_shapes = 1, .ignore = ign, .n_ignore = 1};
    rp_query_result res;
    assert_int_equal(rp_scene_query(rp_store_find(st, "s"), &qq, &res), RP_ERR_NOT_FOUND);
    rp_store_free(st);
}

static int hook_calls;
static rp_change last_change;
static size_t last_objects, last_moves;
static bool hook_refuses;

static int hook(void *ctx, const rp_change *c)
{
    (void)ctx;
    hook_calls++;
    last_change = *c;
    last_objects = c->n_objects;
    last_moves = c->n_moves;
    return hook_refuses ? -1 : 0;
}

static void hook_hears_each_mutation_once_and_may_refuse(void **state)
{
    (void)state;
    rp_store *st = small_store();
    rp_store_set_commit_hook(st, hook, NULL);
    rp_object_move mv = {"box", shift(3, 0, 0)};
    hook_calls = 0;
    assert_int_equal(rp_store_move(st, "s", &mv, 1, NULL, NULL, NULL, NULL), RP_OK);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(last_change.kind, RP_CHANGE_SCENE_MOVE);
    assert_int_equal(last_moves, 1);
    assert_int_equal(last_change.revision, rp_store_revision(st));

    rp_shape_put loc[1] = {{"a", sphere_at(0, 0, 0, 0.5)}};
    rp_object_put o = {"crate", shift(0, 3, 0), loc, 1};
    hook_calls = 0;
    assert_int_equal(rp_store_put_objects(st, "s", NULL, 0, &o, 1, NULL, false, NULL, NULL, NULL),
                     RP_OK);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(last_change.kind, RP_CHANGE_SCENE_PUT);
    assert_int_equal(last_objects, 1);

    /* Refused: nothing changes. */
    hook_refuses = true;
    const rp_scene *before = rp_store_find(st, "s");
    rp_transform pose = rp_object_pose(rp_scene_object_find(before, "box"));
    ASSERT_REFUSED(st, rp_store_move(st, "s", &mv, 1, NULL, NULL, NULL, NULL), RP_ERR_ABORTED,
                   RP_EDIT_NONE, 0);
    const char *gone[1] = {"box"};
    ASSERT_REFUSED(st, rp_store_remove(st, "s", gone, 1, NULL, NULL, NULL, NULL), RP_ERR_ABORTED,
                   RP_EDIT_NONE, 0);
    ASSERT_REFUSED(st,
                   rp_store_replace_objects(st, "s", NULL, 0, &o, 1, NULL, false, NULL, NULL, NULL),
                   RP_ERR_ABORTED, RP_EDIT_NONE, 0);
    hook_refuses = false;
    rp_transform now = rp_object_pose(rp_scene_object_find(rp_store_find(st, "s"), "box"));
    assert_memory_equal(&now, &pose, sizeof now);
    assert_non_null(rp_scene_object_find(rp_store_find(st, "s"), "crate"));

    /* Removal by name: the object and its shapes go, counted once. */
    size_t removed = 0;
    const char *ids[3] = {"box", "wall", "missing"};
    assert_int_equal(rp_store_remove(st, "s", ids, 3, NULL, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(last_change.kind, RP_CHANGE_SCENE_REMOVE);
    const rp_scene *sc = rp_store_find(st, "s");
    assert_null(rp_scene_object_find(sc, "box"));
    assert_int_equal(rp_scene_find(sc, "box/a"), SIZE_MAX);
    assert_int_equal(rp_scene_shape_count(sc), 1); /* crate/a */
    rp_store_free(st);
}

static void snapshots_keep_the_old_poses(void **state)
{
    (void)state;
    rp_store *st = small_store();
    rp_store *snap = rp_store_snapshot(st);
    assert_non_null(snap);
    rp_object_move mv = {"box", shift(-4, 0, 0)};
    assert_int_equal(rp_store_move(st, "s", &mv, 1, NULL, NULL, NULL, NULL), RP_OK);
    const rp_scene *old = rp_store_find(snap, "s");
    const rp_scene *now = rp_store_find(st, "s");
    assert_true(rp_object_pose(rp_scene_object_find(old, "box")).t.x == 2);
    assert_true(rp_object_pose(rp_scene_object_find(now, "box")).t.x == -4);
    assert_true(SCENE_SHAPE(old, rp_scene_find(old, "box/a"))->sphere.center.x == 2);
    assert_true(SCENE_SHAPE(now, rp_scene_find(now, "box/a"))->sphere.center.x == -4);
    assert_true(rp_bvh_check_(old) >= 0);
    assert_true(rp_bvh_check_(now) >= 0);
    rp_store_free(snap);
    rp_store_free(st);
}

/* A model of three spheres on one frame, checked with `ignore` of an
 * object, equals the check against a scene built without it. */
static void checks_with_ignore_equal_checks_without_the_object(void **state)
{
    (void)state;
    test_rng r = {99};
    for (int round = 0; round < 40; round++) {
        rp_store *with = rp_store_new(NULL), *without = rp_store_new(NULL);
        /* Enough shapes that the checks walk the tree (small scenes are
         * scanned), in rounds of few and of many. */
        rp_shape_put plain[40];
        char pid[40][16];
        int n_plain = round % 2 ? 40 : 6;
        for (int k = 0; k < n_plain; k++) {
            snprintf(pid[k], sizeof pid[k], "p%d", k);
            plain[k] = (rp_shape_put){pid[k], random_local(&r, 4)};
        }
        rp_shape_put loc[4][3];
        rp_object_put objs[4];
        char names[4][4], lids[3][4];
        for (int k = 0; k < 3; k++)
            snprintf(lids[k], sizeof lids[k], "s%d", k);
        for (int j = 0; j < 4; j++) {
            snprintf(names[j], sizeof names[j], "o%d", j);
            for (int k = 0; k < 3; k++)
                loc[j][k] = (rp_shape_put){lids[k], random_local(&r, 1)};
            objs[j] = (rp_object_put){names[j], random_pose(&r, 3), loc[j], 3};
        }
        unsigned ignored = (unsigned)(rng_next(&r) % 16);
        const char *ign[4];
        size_t n_ign = 0;
        rp_object_put kept[4];
        size_t n_kept = 0;
        for (int j = 0; j < 4; j++) {
            if (ignored >> j & 1)
                ign[n_ign++] = names[j];
            else
                kept[n_kept++] = objs[j];
        }
        assert_int_equal(rp_store_put_objects(with, "s", plain, (size_t)n_plain, objs, 4, NULL,
                                              true, NULL, NULL, NULL),
                         RP_OK);
        assert_int_equal(rp_store_put_objects(without, "s", plain, (size_t)n_plain, kept, n_kept,
                                              NULL, true, NULL, NULL, NULL),
                         RP_OK);
        rp_link links[3];
        char lid[3][4];
        for (int k = 0; k < 3; k++) {
            snprintf(lid[k], sizeof lid[k], "l%d", k);
            links[k] = (rp_link){lid[k], 0, random_local(&r, 2)};
            if (links[k].shape.kind == RP_SHAPE_BOX)
                links[k].shape = sphere_at(k, 0, 0, 0.4);
        }
        rp_model_def def = {.links = links, .n_links = 3, .safety_margin = 0.05};
        rp_model *mw = NULL, *mo = NULL;
        assert_int_equal(rp_store_model_put(with, "m", &def, &mw, NULL), RP_OK);
        assert_int_equal(rp_store_model_put(without, "m", &def, &mo, NULL), RP_OK);
        rp_transform frame = random_pose(&r, 2);
        for (int rep = 0; rep < 3; rep++) {
            rp_check_opts ow = {.report = (rp_report)rep, .ignore = ign, .n_ignore = n_ign};
            rp_check_opts oo = {.report = (rp_report)rep};
            rp_check_result a, b;
            assert_int_equal(rp_model_check(mw, rp_store_find(with, "s"), NULL, &frame, 1, &ow, &a),
                             RP_OK);
            assert_int_equal(
                rp_model_check(mo, rp_store_find(without, "s"), NULL, &frame, 1, &oo, &b), RP_OK);
            assert_int_equal(a.collision, b.collision);
            assert_int_equal(a.n_violations, b.n_violations);
            if (rep) {
                assert_int_equal(a.has_min, b.has_min);
                assert_same_bits(a.closest.distance, b.closest.distance);
            }
            for (size_t k = 0; k < a.n_violations && rep == 2; k++) {
                assert_same_bits(a.violations[k].distance, b.violations[k].distance);
                assert_string_equal(
                    rp_scene_id_at(rp_store_find(with, "s"), a.violations[k].other),
                    rp_scene_id_at(rp_store_find(without, "s"), b.violations[k].other));
            }
            rp_check_result_free(&a);
            rp_check_result_free(&b);
        }
        rp_store_free(with);
        rp_store_free(without);
    }
}

/* ---- robot instances ------------------------------------------------------------ */

/* A planar arm: base -(j1: z at 0.2)-> l1 -(j2: z at (0.7,0,0))-> l2, a
 * sphere on the base, a capsule on each link, a box on l2's end. */
static rp_model *arm_model_want(rp_store *st, const char *name, rp_status want)
{
    static const char *const shape_links[] = {"base", "l1", "l2", "l2"};
    static const char *const links[] = {"base", "l1", "l2"};
    rp_box tool;
    assert_int_equal(rp_box_new(V(0.45, 0, 0), V(0.05, 0.05, 0.02), 1, 0, 0, 0, &tool), RP_OK);
    rp_link shapes[4] = {{"base#0", -1, sphere_at(0, 0, 0, 0.1)},
                         {"l1#0", -1, sphere_at(0, 0, 0, 0.03)},
                         {"l2#0", -1, sphere_at(0.2, 0, 0, 0.03)},
                         {"l2#1", -1, rp_shape_from_box(tool)}};
    assert_int_equal(rp_capsule_new(V(0, 0, 0), V(0.7, 0, 0), 0.03, &shapes[1].shape.capsule),
                     RP_OK);
    shapes[1].shape.kind = RP_SHAPE_CAPSULE;
    rp_joint_def j[2];
    memset(j, 0, sizeof j);
    j[0] = (rp_joint_def){.name = "j1",
                          .type = RP_JOINT_REVOLUTE,
                          .parent = "base",
                          .child = "l1",
                          .xyz = V(0, 0, 0.2),
                          .axis = V(0, 0, 1)};
    j[1] = (rp_joint_def){.name = "j2",
                          .type = RP_JOINT_REVOLUTE,
                          .parent = "l1",
                          .child = "l2",
                          .xyz = V(0.7, 0, 0),
                          .axis = V(0, 0, 1)};
    rp_model_def d = {.links = shapes,
                      .n_links = 4,
                      .shape_links = shape_links,
                      .link_names = links,
                      .n_link_names = 3,
                      .joints = j,
                      .n_joints = 2};
    rp_model *m = NULL;
    rp_model_error err;
    assert_int_equal(rp_store_model_put(st, name, &d, &m, &err), want);
    return m;
}

static rp_model *arm_model(rp_store *st, const char *name)
{
    return arm_model_want(st, name, RP_OK);
}

/* The robot's world shapes in the scene are forward kinematics applied
 * to the model's shapes, bit for bit. */
static void assert_robot_shapes(const rp_scene *sc, const char *robot, const rp_model *m,
                                const double *q, const rp_transform *base)
{
    rp_transform poses[8];
    assert_int_equal(rp_model_fk(m, base, q, poses), RP_OK);
    const rp_object *o = rp_scene_object_find(sc, robot);
    assert_non_null(o);
    assert_true(rp_object_is_robot(o));
    assert_ptr_equal(rp_object_model(o), m);
    assert_memory_equal(rp_object_joints(o), q, rp_model_dof(m) * sizeof *q);
    for (size_t k = 0; k < rp_model_link_count(m); k++) {
        char id[64];
        snprintf(id, sizeof id, "%s/%s", robot, rp_model_link_at(m, k)->id);
        size_t e = rp_scene_find(sc, id);
        assert_true(e != SIZE_MAX);
        rp_shape local;
        rp_model_shape_local(m, k, &local);
        rp_shape want = rp_transform_shape(&poses[rp_model_shape_link(m, k)], &local);
        assert_true(same_shape(SCENE_SHAPE(sc, e), &want));
        assert_ptr_equal(rp_scene_shape_object(sc, e), o);
    }
    assert_true(rp_bvh_check_(sc) >= 0);
}

static void robots_are_placed_moved_and_ignored(void **state)
{
    (void)state;
    rp_store *st = small_store();
    rp_model *m = arm_model(st, "arm");
    double q0[2] = {0.3, -0.4}, q1[2] = {1.2, 0.5};
    rp_transform base = shift(0, -1, 0);
    rp_robot_put rp[2] = {{"r1", "arm", q0, base}, {"r2", "arm", NULL, shift(3, 3, 0)}};
    rp_cell c = {.robots = rp, .n_robots = 2};
    uint64_t rev = rp_store_revision(st);
    assert_int_equal(rp_store_put_cell(st, "s", &c, NULL, false, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_store_revision(st), rev + 1);
    const rp_scene *sc = rp_store_find(st, "s");
    assert_robot_shapes(sc, "r1", m, q0, &base);
    double dflt[2];
    rp_model_default_joints(m, dflt);
    rp_transform b2 = shift(3, 3, 0);
    assert_robot_shapes(sc, "r2", m, dflt, &b2);
    assert_int_equal(rp_scene_shape_count(sc), 1 + 2 + 4 + 4);

    /* One move: a robot's joints, another's base, an object's pose. */
    rp_transform b3 = shift(2, 2, 0);
    rp_robot_move rm[2] = {{"r1", q1, NULL}, {"r2", NULL, &b3}};
    rp_object_move om = {"box", shift(-2, 0, 0)};
    rp_cell_moves mv = {&om, 1, rm, 2};
    assert_int_equal(rp_store_move_cell(st, "s", &mv, NULL, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_store_revision(st), rev + 2);
    sc = rp_store_find(st, "s");
    assert_robot_shapes(sc, "r1", m, q1, &base);
    assert_robot_shapes(sc, "r2", m, dflt, &b3);
    assert_true(rp_object_pose(rp_scene_object_find(sc, "box")).t.x == -2);

    /* A check of the model at r1's state, ignoring r1, sees r2 and the
     * rest but never r1's own shapes. */
    rp_check_opts all = {.report = RP_REPORT_ALL, .has_margin = true, .margin = 10};
    const char *self[1] = {"r1"};
    rp_check_opts ign = all;
    ign.ignore = self;
    ign.n_ignore = 1;
    rp_check_result a, b;
    assert_int_equal(rp_model_check_joints(m, sc, &base, q1, &all, &a), RP_OK);
    assert_int_equal(rp_model_check_joints(m, sc, &base, q1, &ign, &b), RP_OK);
    size_t own = 0;
    for (size_t k = 0; k < a.n_violations; k++)
        if (a.violations[k].kind == RP_PAIR_SCENE) {
            const rp_object *o = rp_scene_shape_object(sc, a.violations[k].other);
            own += o && strcmp(rp_object_name(o), "r1") == 0;
        }
    assert_true(own > 0); /* r1 overlaps itself without ignore */
    assert_int_equal(b.n_violations, a.n_violations - own);
    for (size_t k = 0; k < b.n_violations; k++)
        if (b.violations[k].kind == RP_PAIR_SCENE) {
            const rp_object *o = rp_scene_shape_object(sc, b.violations[k].other);
            assert_false(o && strcmp(rp_object_name(o), "r1") == 0);
        }
    rp_check_result_free(&a);
    rp_check_result_free(&b);

    /* An allowed scene pair may name an object or a robot instance: all
     * its shapes.  The model arm2 lets every link touch r2 and the box. */
    rp_link l2[4];
    const char *as[8] = {"base", "r2", "l1", "r2", "l2", "r2", "l2", "box"};
    for (size_t k = 0; k < 4; k++)
        l2[k] = *rp_model_link_at(m, k);
    static const char *const shape_links[] = {"base", "l1", "l2", "l2"};
    static const char *const links[] = {"base", "l1", "l2"};
    rp_joint_def j2[2];
    for (size_t k = 0; k < 2; k++)
        j2[k] = *rp_model_joint_at(m, k);
    rp_model_def d2 = {.links = l2,
                       .n_links = 4,
                       .shape_links = shape_links,
                       .link_names = links,
                       .n_link_names = 3,
                       .joints = j2,
                       .n_joints = 2,
                       .allowed_scene = as,
                       .n_allowed_scene = 4};
    for (size_t k = 0; k < 4; k++) /* the links' shapes in their own frames */
        rp_model_shape_local(m, k, &l2[k].shape);
    rp_model *m2 = NULL;
    assert_int_equal(rp_store_model_put(st, "arm2", &d2, &m2, NULL), RP_OK);
    size_t with_r2[2] = {0, 0};
    for (int allowed = 0; allowed < 2; allowed++) {
        assert_int_equal(rp_model_check_joints(allowed ? m2 : m, sc, &base, q1, &ign, &b), RP_OK);
        for (size_t k = 0; k < b.n_violations; k++) {
            const rp_check_pair *v = &b.violations[k];
            const rp_object *o =
                v->kind == RP_PAIR_SCENE ? rp_scene_shape_object(sc, v->other) : NULL;
            with_r2[allowed] += o && strcmp(rp_object_name(o), "r2") == 0;
            if (allowed && o && strcmp(rp_object_name(o), "box") == 0)
                assert_true(v->link < 2); /* l2's shapes (2, 3) may touch the box */
        }
        rp_check_result_free(&b);
    }
    assert_true(with_r2[0] > 0);
    assert_int_equal(with_r2[1], 0);
    assert_int_equal(rp_store_model_delete(st, "arm2"), RP_OK);

    /* The model is in use: neither replaced nor deleted until the robots
     * go; then it is. */
    assert_int_equal(rp_store_model_delete(st, "arm"), RP_ERR_IN_USE);
    const char *scene = NULL, *robot = NULL;
    assert_true(rp_store_model_user(st, "arm", &scene, &robot));
    assert_string_equal(scene, "s");
    assert_string_equal(robot, "r1");
    uint64_t before = rp_store_revision(st);
    arm_model_want(st, "arm", RP_ERR_IN_USE);
    assert_int_equal(rp_store_revision(st), before);
    assert_ptr_equal(rp_store_model_find(st, "arm"), m);
    const char *gone[2] = {"r1", "r2"};
    size_t removed = 0;
    assert_int_equal(rp_store_remove(st, "s", gone, 2, NULL, NULL, &removed, NULL), RP_OK);
    assert_int_equal(removed, 2);
    assert_false(rp_store_model_user(st, "arm", NULL, NULL));
    assert_int_equal(rp_store_model_delete(st, "arm"), RP_OK);
    rp_store_free(st);
}

static void bad_robots_change_nothing(void **state)
{
    (void)state;
    rp_store *st = small_store();
    arm_model(st, "arm");
    rp_link fl = {"f", 0, sphere_at(0, 0, 0, 1)};
    rp_model_def fd = {.links = &fl, .n_links = 1};
    assert_int_equal(rp_store_model_put(st, "frames", &fd, NULL, NULL), RP_OK);
    double nan_q[2] = {NAN, 0}, q[2] = {0, 0};
    rp_robot_put r = {"r", "arm", q, shift(0, 0, 0)};
    rp_cell c = {.robots = &r, .n_robots = 1};
    assert_int_equal(rp_store_put_cell(st, "s", &c, NULL, false, NULL, NULL, NULL), RP_OK);
    struct {
        rp_robot_put r;
        rp_status want;
    } bad[] = {
        {{"q", "nope", q, shift(0, 0, 0)}, RP_ERR_NOT_FOUND},
        {{"q", "frames", q, shift(0, 0, 0)}, RP_ERR_INVALID_ARG},
        {{"q", "arm", nan_q, shift(0, 0, 0)}, RP_ERR_NONFINITE},
        {{"q/x", "arm", q, shift(0, 0, 0)}, RP_ERR_INVALID_ARG},
        {{"wall", "arm", q, shift(0, 0, 0)}, RP_ERR_EXISTS},
        {{"q", "arm", q, shift(0, 0, 0)}, RP_ERR_TRANSFORM},
    };
    bad[5].r.base.r[1][1] = 2; /* not a rotation */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rp_cell bc = {.robots = &bad[i].r, .n_robots = 1};
        ASSERT_REFUSED(st, rp_store_put_cell(st, "s", &bc, NULL, false, NULL, NULL, &err),
                       bad[i].want, RP_EDIT_ROBOT, 0);
    }
    /* A robot and an object of one name in one put. */
    rp_shape_put loc = {"a", sphere_at(0, 0, 0, 1)};
    rp_object_put o = {"q", shift(0, 0, 0), &loc, 1};
    rp_robot_put rq = {"q", "arm", q, shift(0, 0, 0)};
    rp_cell both = {.objects = &o, .n_objects = 1, .robots = &rq, .n_robots = 1};
    ASSERT_REFUSED(st, rp_store_put_cell(st, "s", &both, NULL, false, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_ROBOT, 0);
    /* Moves: a robot among the objects, an object among the robots, a
     * joint value that is not finite. */
    rp_object_move om = {"r", shift(0, 0, 0)};
    rp_cell_moves m1 = {&om, 1, NULL, 0};
    ASSERT_REFUSED(st, rp_store_move_cell(st, "s", &m1, NULL, NULL, NULL, &err), RP_ERR_INVALID_ARG,
                   RP_EDIT_MOVE, 0);
    rp_robot_move rm = {"box", q, NULL};
    rp_cell_moves m2 = {NULL, 0, &rm, 1};
    ASSERT_REFUSED(st, rp_store_move_cell(st, "s", &m2, NULL, NULL, NULL, &err), RP_ERR_INVALID_ARG,
                   RP_EDIT_ROBOT_MOVE, 0);
    rp_robot_move rn = {"r", nan_q, NULL};
    rp_cell_moves m3 = {NULL, 0, &rn, 1};
    ASSERT_REFUSED(st, rp_store_move_cell(st, "s", &m3, NULL, NULL, NULL, &err), RP_ERR_NONFINITE,
                   RP_EDIT_ROBOT_MOVE, 0);
    rp_store_free(st);
}

/* ---- attached objects ------------------------------------------------------------ */

static void assert_pose_equal(rp_transform a, rp_transform b)
{
    assert_memory_equal(&a, &b, sizeof a);
}

/* An attached object's pose is its link's pose ∘ rel, bit for bit, and
 * its shapes are there. */
static void assert_follows(const rp_scene *sc, const char *object, const rp_model *m)
{
    const rp_object *o = rp_scene_object_find(sc, object);
    const rp_object *r = rp_scene_object_find(sc, rp_object_attached_robot(o));
    rp_transform poses[8];
    rp_transform base = rp_object_pose(r);
    assert_int_equal(rp_model_fk(m, &base, rp_object_joints(r), poses), RP_OK);
    size_t li = rp_model_tree_link_find(m, rp_object_attached_link(sc, o));
    rp_transform rel = rp_object_attached_rel(o);
    assert_pose_equal(rp_object_pose(o), rp_transform_compose(&poses[li], &rel));
    for (size_t k = 0; k < rp_object_shape_count(o); k++) {
        char id[64];
        snprintf(id, sizeof id, "%s/%s", object, rp_object_shape_at(o, k)->id);
        rp_transform pose = rp_object_pose(o);
        rp_shape want = rp_transform_shape(&pose, &rp_object_shape_at(o, k)->shape);
        assert_true(same_shape(SCENE_SHAPE(sc, rp_scene_find(sc, id)), &want));
    }
}

static void attached_objects_follow_their_links(void **state)
{
    (void)state;
    rp_store *st = small_store();
    rp_model *m = arm_model(st, "arm");
    double q0[2] = {0.3, -0.4};
    rp_robot_put rp = {"r1", "arm", q0, shift(0, -1, 0)};
    rp_cell c = {.robots = &rp, .n_robots = 1};
    assert_int_equal(rp_store_put_cell(st, "s", &c, NULL, false, NULL, NULL, NULL), RP_OK);
    const rp_scene *sc = rp_store_find(st, "s");
    rp_transform before = rp_object_pose(rp_scene_object_find(sc, "box"));
    uint64_t rev = rp_store_revision(st);
    assert_int_equal(rp_store_attach(st, "s", "box", "r1", "l2", NULL, NULL, NULL, NULL, NULL),
                     RP_OK);
    assert_int_equal(rp_store_revision(st), rev + 1);
    sc = rp_store_find(st, "s");
    const rp_object *o = rp_scene_object_find(sc, "box");
    assert_string_equal(rp_object_attached_robot(o), "r1");
    assert_string_equal(rp_object_attached_link(sc, o), "l2");
    assert_near(rp_object_pose(o).t.x, before.t.x, 1e-12); /* where it was, within rounding */
    assert_follows(sc, "box", m);
    assert_true(rp_bvh_check_(sc) >= 0);

    /* The robot moves: the box follows, in the same revision. */
    double q1[2] = {1.1, 0.7};
    rp_robot_move rm = {"r1", q1, NULL};
    rp_cell_moves mv = {NULL, 0, &rm, 1};
    assert_int_equal(rp_store_move_cell(st, "s", &mv, NULL, NULL, NULL, NULL), RP_OK);
    assert_int_equal(rp_store_revision(st), rev + 2);
    sc = rp_store_find(st, "s");
    assert_follows(sc, "box", m);
    assert_true(rp_object_pose(rp_scene_object_find(sc, "box")).t.x != before.t.x);

    /* Moved itself, it stays attached at its new place. */
    rp_object_move om = {"box", shift(2, 2, 2)};
    rp_cell_moves mv2 = {&om, 1, &rm, 1};
    assert_int_equal(rp_store_move_cell(st, "s", &mv2, NULL, NULL, NULL, NULL), RP_OK);
    sc = rp_store_find(st, "s");
    assert_follows(sc, "box", m);
    assert_near(rp_object_pose(rp_scene_object_find(sc, "box")).t.x, 2, 1e-12);

    /* With a rel given: there in the link's frame. */
    rp_transform rel = shift(0.1, 0, 0);
    assert_int_equal(rp_store_attach(st, "s", "box", "r1", "l1", &rel, NULL, NULL, NULL, NULL),
                     RP_OK);
    sc = rp_store_find(st, "s");
    assert_pose_equal(rp_object_attached_rel(rp_scene_object_find(sc, "box")), rel);
    assert_follows(sc, "box", m);

    /* Refusals change nothing. */
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "r1", "r1", "l1", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_OBJECT, 0);
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "box", "box", "l1", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_INVALID_ARG, RP_EDIT_ROBOT, 0);
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "box", "r1", "nope", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_NOT_FOUND, RP_EDIT_ROBOT, 0);
    ASSERT_REFUSED(st, rp_store_attach(st, "s", "nope", "r1", "l1", NULL, NULL, NULL, NULL, &err),
                   RP_ERR_NOT_FOUND, RP_EDIT_OBJECT, 0);
    ASSERT_REFUSED(st, rp_store_detach(st, "s", "wall", NULL, NULL, NULL), RP_ERR_NOT_FOUND,
                   RP_EDIT_NONE, 0);

    /* Detached, it stays where it is, and no longer follows. */
    rp_transform at = rp_object_pose(rp_scene_object_find(sc, "box"));
    assert_int_equal(rp_store_detach(st, "s", "box", NULL, NULL, NULL), RP_OK);
    ASSERT_REFUSED(st, rp_store_detach(st, "s", "box", NULL, NULL, NULL), RP_ERR_INVALID_ARG,
                   RP_EDIT_NONE, 0);
    double q2[2] = {-1, -1};
    rp_robot_move rm2 = {"r1", q2, NULL};
    rp_cell_moves mv3 = {NULL, 0, &rm2, 1};
    assert_int_equal(rp_store_move_cell(st, "s", &mv3, NULL, NULL, NULL, NULL), RP_OK);
    sc = rp_store_find(st, "s");
    assert_null(rp_object_attached_robot(rp_scene_object_find(sc, "box")));
    assert_pose_equal(rp_object_pose(rp_scene_object_find(sc, "box")), at);

    /* A robot that goes, or is put again, leaves its objects free. */
    assert_int_equal(rp_store_attach(st, "s", "box", "r1", "l2", NULL, NULL, NULL, NULL, NULL),
                     RP_OK);
    assert_int_equal(rp_store_put_cell(st, "s", &c, NULL, false, NULL, NULL, NULL), RP_OK);
    sc = rp_store_find(st, "s");
    assert_null(rp_object_attached_robot(rp_scene_object_find(sc, "box")));
    assert_int_equal(rp_store_attach(st, "s", "box", "r1", "l2", NULL, NULL, NULL, NULL, NULL),
                     RP_OK);
    const char *gone[1] = {"r1"};
    assert_int_equal(rp_store_remove(st, "s", gone, 1, NULL, NULL, NULL, NULL), RP_OK);
    sc = rp_store_find(st, "s");
    assert_null(rp_object_attached_robot(rp_scene_object_find(sc, "box")));
    assert_true(rp_bvh_check_(sc) >= 0);
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_runs_match_the_model),
        cmocka_unit_test(clashes_and_bad_arguments_change_nothing),
        cmocka_unit_test(hook_hears_each_mutation_once_and_may_refuse),
        cmocka_unit_test(snapshots_keep_the_old_poses),
        cmocka_unit_test(checks_with_ignore_equal_checks_without_the_object),
        cmocka_unit_test(robots_are_placed_moved_and_ignored),
        cmocka_unit_test(bad_robots_change_nothing),
        cmocka_unit_test(attached_objects_follow_their_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
