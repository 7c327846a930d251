/* SPDX-License-Identifier: MIT */
/*
 * Robot models and checks: model validation (each problem with its index),
 * replacement, deletion, listing, memory accounting and frame counts; then
 * checks against hand-computed configurations, and the three report modes
 * against a brute-force enumeration of every eligible pair on thousands of
 * random configurations built to contain exact ties.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"
#include "test_shapes.h"

#include "repose/scene.h"

/* ---- helpers ------------------------------------------------------------ */

static rp_link L(const char *id, int frame, rp_shape shape)
{
    rp_link l = {id, frame, shape};
    return l;
}

static rp_shape_put P(const char *id, rp_shape shape)
{
    rp_shape_put p = {id, shape};
    return p;
}

/* A pose from a translation and a Hamilton quaternion (normalised). */
static rp_transform pose(double tx, double ty, double tz, double w, double x, double y, double z)
{
    rp_transform tf;
    rp_vec3 t = {tx, ty, tz};
    assert_int_equal(rp_transform_from_quaternion(t, w, x, y, z, &tf), RP_OK);
    return tf;
}

static rp_transform shift(double x, double y, double z)
{
    return pose(x, y, z, 1, 0, 0, 0);
}

static rp_model_def def_of(const rp_link *links, size_t n, double margin, const char *const *pairs,
                           size_t n_pairs, bool self)
{
    rp_model_def d = {.links = links,
                      .n_links = n,
                      .safety_margin = margin,
                      .allowed_pairs = pairs,
                      .n_allowed = n_pairs,
                      .self_collision = self};
    return d;
}

/* Puts a model that must be valid. */
static rp_model *put_model(rp_store *st, const char *name, const rp_link *links, size_t n,
                           double margin, const char *const *pairs, size_t n_pairs, bool self)
{
    rp_model_def d = def_of(links, n, margin, pairs, n_pairs, self);
    rp_model *m = NULL;
    rp_model_error err;
    assert_int_equal(rp_store_model_put(st, name, &d, &m, &err), RP_OK);
    assert_int_equal(err.problem, RP_MODEL_OK);
    assert_non_null(m);
    return m;
}

/* Runs a check that must succeed; has_margin/margin as in rp_check_opts. */
static rp_check_result run(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                           const rp_transform *frames, size_t nf, rp_report report, bool has_margin,
                           double margin)
{
    rp_check_opts o = {report, has_margin, margin, NULL, NULL, 0};
    rp_check_result r;
    assert_int_equal(rp_model_check(m, sc, base, frames, nf, &o, &r), RP_OK);
    return r;
}

static void assert_pair(const rp_check_pair *p, size_t link, rp_pair_kind kind, size_t other)
{
    assert_int_equal(p->link, link);
    assert_int_equal(p->kind, kind);
    assert_int_equal(p->other, other);
}

/* Puts a definition that must fail with `problem` at index/element, and
 * proves the store did not change (no model, same memory, no revision
 * taken). */
static void assert_refused(const rp_model_def *d, rp_model_problem problem, size_t index,
                           size_t element)
{
    rp_store *st = rp_store_new(NULL);
    size_t mem = rp_store_memory(st);
    rp_model_error err;
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "bad", d, &m, &err), RP_ERR_INVALID_ARG);
    assert_null(m);
    assert_int_equal(err.problem, problem);
    assert_int_equal(err.index, index);
    assert_int_equal(err.element, element);
    assert_int_equal(rp_store_model_count(st), 0);
    assert_null(rp_store_model_find(st, "bad"));
    assert_int_equal(rp_store_memory(st), mem);
    assert_int_equal(rp_store_revision(st), 0);
    rp_store_free(st);
}

/* ---- validation ------------------------------------------------------------ */

static void duplicate_link_id_is_reported_at_the_later_duplicate(void **state)
{
    (void)state;
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link a[] = {L("a", 0, s), L("b", 0, s), L("a", 1, s)};
    rp_model_def d = def_of(a, 3, 0, NULL, 0, true);
    assert_refused(&d, RP_MODEL_DUPLICATE_LINK, 2, 0);
    rp_link b[] = {L("a", 0, s), L("b", 0, s), L("c", 0, s), L("b", 0, s), L("c", 0, s)};
    d = def_of(b, 5, 0, NULL, 0, true);
    assert_refused(&d, RP_MODEL_DUPLICATE_LINK, 3, 0);
}

static void frame_below_minus_one_is_a_bad_frame(void **state)
{
    (void)state;
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link a[] = {L("a", -1, s), L("b", -2, s), L("c", 0, s)};
    rp_model_def d = def_of(a, 3, 0, NULL, 0, true);
    assert_refused(&d, RP_MODEL_BAD_FRAME, 1, 0);
}

static void invalid_link_shapes_are_bad_shapes_at_their_index(void **state)
{
    (void)state;
    rp_shape ok = sphere(0, 0, 0, 0.1);
    rp_shape bad_kind = ok;
    bad_kind.kind = (rp_shape_kind)7;
    rp_shape cases[] = {sphere(0, 0, 0, -1), sphere(NAN, 0, 0, 1),
                        capsule(0, 0, 0, 0, INFINITY, 0, 1), capsule(0, 0, 0, 1, 0, 0, NAN),
                        bad_kind};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rp_link a[] = {L("a", 0, ok), L("b", 1, ok), L("c", 2, cases[c])};
        rp_model_def d = def_of(a, 3, 0, NULL, 0, true);
        assert_refused(&d, RP_MODEL_BAD_SHAPE, 2, 0);
    }
}

static void negative_or_nonfinite_safety_margin_is_a_bad_margin(void **state)
{
    (void)state;
    rp_link a[] = {L("a", 0, sphere(0, 0, 0, 0.1))};
    double bad[] = {-0.001, -INFINITY, INFINITY, NAN};
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        rp_model_def d = def_of(a, 1, bad[c], NULL, 0, true);
        assert_refused(&d, RP_MODEL_BAD_MARGIN, 0, 0);
    }
}

static void allowed_pair_naming_no_link_reports_pair_and_element(void **state)
{
    (void)state;
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link a[] = {L("a", 0, s), L("b", 1, s)};
    const char *p1[] = {"a", "b", "b", "zz"};
    rp_model_def d = def_of(a, 2, 0, p1, 2, true);
    assert_refused(&d, RP_MODEL_UNKNOWN_PAIR_LINK, 1, 1);
    const char *p2[] = {"zz", "a"};
    d = def_of(a, 2, 0, p2, 1, true);
    assert_refused(&d, RP_MODEL_UNKNOWN_PAIR_LINK, 0, 0);
    const char *p3[] = {"a", "b", "a", "b", "A", "b"}; /* case matters; repeats are fine */
    d = def_of(a, 2, 0, p3, 3, true);
    assert_refused(&d, RP_MODEL_UNKNOWN_PAIR_LINK, 2, 0);
}

static void links_are_checked_before_the_margin_and_the_margin_before_pairs(void **state)
{
    (void)state;
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link a[] = {L("a", 0, s), L("b", -3, s)};
    const char *p[] = {"a", "zz"};
    rp_model_def d = def_of(a, 2, -1, p, 1, true);
    assert_refused(&d, RP_MODEL_BAD_FRAME, 1, 0);
    a[1].frame = 0;
    d = def_of(a, 2, -1, p, 1, true);
    assert_refused(&d, RP_MODEL_BAD_MARGIN, 0, 0);
}

static void null_arguments_are_invalid_without_a_problem(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model_error err;
    rp_model_def d = def_of(NULL, 2, 0, NULL, 0, true);
    assert_int_equal(rp_store_model_put(st, "m", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(err.problem, RP_MODEL_OK);
    assert_int_equal(rp_store_model_put(st, "m", NULL, NULL, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_store_model_count(st), 0);
    rp_store_free(st);
}

/* ---- store operations ---------------------------------------------------------- */

static void put_copies_the_definition_and_accessors_return_it(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    char id0[] = "shoulder", id1[] = "elbow", name[] = "arm";
    rp_link a[] = {L(id0, 0, capsule(0, 0, 0, 0, 0, 1, 0.05)), L(id1, 3, sphere(1, 2, 3, 0.5)),
                   L("base", -1, sphere(0, 0, 0, 0.2))};
    const char *p[] = {"elbow", "shoulder", "base", "elbow"};
    rp_model *m = put_model(st, name, a, 3, 0.01, p, 2, false);
    id0[0] = id1[0] = name[0] = 'X'; /* the model holds copies */
    assert_string_equal(rp_model_name(m), "arm");
    assert_int_equal(rp_model_revision(m), 1);
    assert_int_equal(rp_model_link_count(m), 3);
    assert_string_equal(rp_model_link_at(m, 0)->id, "shoulder");
    assert_string_equal(rp_model_link_at(m, 1)->id, "elbow");
    assert_int_equal(rp_model_link_at(m, 1)->frame, 3);
    assert_near(rp_model_link_at(m, 1)->shape.sphere.center.y, 2, 0);
    assert_int_equal(rp_model_link_at(m, 2)->frame, -1);
    assert_near(rp_model_safety_margin(m), 0.01, 0);
    assert_false(rp_model_self_collision(m));
    assert_int_equal(rp_model_allowed_count(m), 2);
    size_t x, y;
    rp_model_allowed_at(m, 0, &x, &y);
    assert_int_equal(x, 1);
    assert_int_equal(y, 0);
    rp_model_allowed_at(m, 1, &x, &y);
    assert_int_equal(x, 2);
    assert_int_equal(y, 1);
    assert_int_equal(rp_model_frame_count(m), 4);
    assert_ptr_equal(rp_store_model_find(st, "arm"), m);
    assert_null(rp_store_model_find(st, "ar"));
    rp_store_free(st);
}

/* The store keeps the definition a model was put with (rp_model_definition):
 * every field, in its own memory (the caller's strings may change after
 * the put), and putting it again gives the same model. */
static void assert_same_def(const rp_model_def *a, const rp_model_def *b)
{
    assert_int_equal(a->n_links, b->n_links);
    for (size_t i = 0; i < a->n_links; i++) {
        assert_string_equal(a->links[i].id, b->links[i].id);
        assert_int_equal(a->links[i].frame, b->links[i].frame);
        assert_memory_equal(&a->links[i].shape, &b->links[i].shape, sizeof(rp_shape));
    }
    assert_true(a->safety_margin == b->safety_margin);
    assert_int_equal(a->self_collision, b->self_collision);
    assert_int_equal(a->n_allowed, b->n_allowed);
    for (size_t i = 0; i < 2 * a->n_allowed; i++)
        assert_string_equal(a->allowed_pairs[i], b->allowed_pairs[i]);
    assert_int_equal(a->shape_links == NULL, b->shape_links == NULL);
    for (size_t i = 0; a->shape_links && i < a->n_links; i++)
        assert_string_equal(a->shape_links[i], b->shape_links[i]);
    assert_int_equal(a->n_link_names, b->n_link_names);
    assert_int_equal(a->link_names == NULL, b->link_names == NULL);
    for (size_t i = 0; a->link_names && i < a->n_link_names; i++)
        assert_string_equal(a->link_names[i], b->link_names[i]);
    assert_int_equal(a->n_joints, b->n_joints);
    for (size_t i = 0; i < a->n_joints; i++) {
        const rp_joint_def *x = &a->joints[i], *y = &b->joints[i];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->parent, y->parent);
        assert_string_equal(x->child, y->child);
        assert_int_equal(x->type, y->type);
        assert_memory_equal(&x->xyz, &y->xyz, sizeof x->xyz);
        assert_memory_equal(&x->rpy, &y->rpy, sizeof x->rpy);
        assert_memory_equal(&x->axis, &y->axis, sizeof x->axis);
        assert_int_equal(x->has_limits, y->has_limits);
        assert_true(x->lower == y->lower && x->upper == y->upper);
        assert_int_equal(x->mimic == NULL, y->mimic == NULL);
        if (x->mimic)
            assert_string_equal(x->mimic, y->mimic);
        assert_true(x->multiplier == y->multiplier && x->offset == y->offset);
    }
    assert_int_equal(a->n_defaults, b->n_defaults);
    for (size_t i = 0; i < a->n_defaults; i++) {
        assert_string_equal(a->default_names[i], b->default_names[i]);
        assert_true(a->default_values[i] == b->default_values[i]);
    }
    assert_int_equal(a->n_allowed_scene, b->n_allowed_scene);
    for (size_t i = 0; i < 2 * a->n_allowed_scene; i++)
        assert_string_equal(a->allowed_scene[i], b->allowed_scene[i]);
}

static void the_store_keeps_every_field_of_the_definition(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    char base[] = "base", upper[] = "upper", j1[] = "j1", j2[] = "j2", s0[] = "s0";
    rp_link links[] = {L(s0, 0, sphere(0, 0, 0.1, 0.1)),
                       L("s1", 0, capsule(0, 0, 0, 0, 0, 1, 0.05)),
                       L("s2", 0, sphere(0, 0, 1, 0.08))};
    const char *shape_links[] = {base, upper, "tip"};
    const char *names[] = {base, upper, "tip"};
    rp_joint_def joints[] = {{.name = j1,
                              .type = RP_JOINT_REVOLUTE,
                              .parent = base,
                              .child = upper,
                              .xyz = {0, 0, 0.2},
                              .rpy = {0.1, -0.2, 0.3},
                              .axis = {0, 0, 2},
                              .has_limits = true,
                              .lower = -1.5,
                              .upper = 2.5},
                             {.name = j2,
                              .type = RP_JOINT_REVOLUTE,
                              .parent = upper,
                              .child = "tip",
                              .xyz = {0, 0, 1},
                              .axis = {0, 1, 0},
                              .mimic = j1,
                              .multiplier = -2,
                              .offset = 0.25}};
    const char *pairs[] = {base, upper};
    const char *dnames[] = {j1};
    double dvalues[] = {0.75};
    const char *scene[] = {"tip", "table"};
    rp_model_def def = {.links = links,
                        .n_links = 3,
                        .safety_margin = 0.02,
                        .allowed_pairs = pairs,
                        .n_allowed = 1,
                        .self_collision = true,
                        .shape_links = shape_links,
                        .link_names = names,
                        .n_link_names = 3,
                        .joints = joints,
                        .n_joints = 2,
                        .default_names = dnames,
                        .default_values = dvalues,
                        .n_defaults = 1,
                        .allowed_scene = scene,
                        .n_allowed_scene = 1};
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "arm", &def, &m, NULL), RP_OK);
    const rp_model_def *kept = rp_model_definition(m);
    assert_non_null(kept);
    assert_ptr_not_equal(kept, &def);
    assert_same_def(kept, &def);
    size_t bytes = rp_store_memory(st);
    /* The caller's memory changes; the kept definition does not. */
    base[0] = upper[0] = j1[0] = j2[0] = s0[0] = 'X';
    dvalues[0] = 9;
    assert_string_equal(kept->links[0].id, "s0");
    assert_string_equal(kept->joints[0].name, "j1");
    assert_string_equal(kept->joints[1].mimic, "j1");
    assert_string_equal(kept->allowed_pairs[0], "base");
    assert_true(kept->default_values[0] == 0.75);
    /* Put again from the kept definition: the same model. */
    rp_model *again = NULL;
    assert_int_equal(rp_store_model_put(st, "again", kept, &again, NULL), RP_OK);
    assert_same_def(rp_model_definition(again), rp_model_definition(m));
    assert_int_equal(rp_model_link_count(again), rp_model_link_count(m));
    assert_int_equal(rp_model_frame_count(again), rp_model_frame_count(m));
    assert_true(rp_store_memory(st) > bytes);
    /* A frame-form model too. */
    rp_model *f = put_model(st, "frames", links, 3, 0.5, NULL, 0, false);
    def = def_of(links, 3, 0.5, NULL, 0, false);
    assert_same_def(rp_model_definition(f), &def);
    assert_null(rp_model_definition(f)->shape_links);
    assert_null(rp_model_definition(NULL));
    rp_store_free(st);
}

static void frame_count_is_highest_frame_plus_one_and_zero_on_the_base(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link base_only[] = {L("a", -1, s), L("b", -1, s)};
    assert_int_equal(rp_model_frame_count(put_model(st, "b", base_only, 2, 0, NULL, 0, true)), 0);
    assert_int_equal(rp_model_frame_count(put_model(st, "e", NULL, 0, 0, NULL, 0, true)), 0);
    rp_link mixed[] = {L("a", 2, s), L("b", -1, s), L("c", 0, s)};
    assert_int_equal(rp_model_frame_count(put_model(st, "m", mixed, 3, 0, NULL, 0, true)), 3);
    rp_link zero[] = {L("a", 0, s)};
    assert_int_equal(rp_model_frame_count(put_model(st, "z", zero, 1, 0, NULL, 0, true)), 1);
    rp_store_free(st);
}

static void replacing_keeps_the_name_and_takes_the_next_store_revision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_shape s = sphere(0, 0, 0, 0.1);
    rp_link a[] = {L("a", 0, s)};
    rp_link b[] = {L("x", 0, s), L("y", 1, s)};
    assert_int_equal(rp_model_revision(put_model(st, "m", a, 1, 0, NULL, 0, true)), 1);
    rp_model *m = put_model(st, "m", b, 2, 0.5, NULL, 0, true);
    assert_int_equal(rp_model_revision(m), 2);
    assert_int_equal(rp_store_revision(st), 2);
    assert_string_equal(rp_model_name(m), "m");
    assert_int_equal(rp_model_link_count(m), 2);
    assert_string_equal(rp_model_link_at(m, 1)->id, "y");
    assert_ptr_equal(rp_store_model_find(st, "m"), m);
    assert_int_equal(rp_store_model_count(st), 1);
    /* Scene mutations and other models take numbers from the same
     * sequence: the next replacement skips them. */
    assert_int_equal(rp_store_create(st, "scene", NULL, 0, NULL), RP_OK); /* 3 */
    put_model(st, "other", a, 1, 0, NULL, 0, true);                       /* 4 */
    m = put_model(st, "m", a, 1, 0, NULL, 0, true);
    assert_int_equal(rp_model_revision(m), 5);
    assert_int_equal(rp_model_revision(rp_store_model_find(st, "other")), 4);
    assert_int_equal(rp_scene_revision(rp_store_find(st, "scene")), 3);

    /* A refused replacement changes nothing, not even the revision, and
     * takes no number. */
    size_t mem = rp_store_memory(st);
    rp_link bad[] = {L("a", 0, s), L("a", 0, s)};
    rp_model_def d = def_of(bad, 2, 0, NULL, 0, true);
    rp_model_error err;
    assert_int_equal(rp_store_model_put(st, "m", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_store_model_put(st, "new", &d, NULL, &err), RP_ERR_INVALID_ARG);
    assert_null(rp_store_model_find(st, "new"));
    assert_ptr_equal(rp_store_model_find(st, "m"), m);
    assert_int_equal(rp_model_revision(m), 5);
    assert_int_equal(rp_store_revision(st), 5);
    assert_string_equal(rp_model_link_at(m, 0)->id, "a");
    assert_int_equal(rp_store_memory(st), mem);
    rp_store_free(st);
}

static void models_list_in_name_order_and_delete_removes_them(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_link a[] = {L("a", 0, sphere(0, 0, 0, 0.1))};
    const char *names[] = {"m5", "b", "z", "a", "m1", "B", "aa", "m10"};
    const char *sorted[] = {"B", "a", "aa", "b", "m1", "m10", "m5", "z"};
    for (size_t i = 0; i < 8; i++)
        put_model(st, names[i], a, 1, 0, NULL, 0, true);
    assert_int_equal(rp_store_model_count(st), 8);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(rp_model_name(rp_store_model_at(st, i)), sorted[i]);
    assert_int_equal(rp_store_revision(st), 8);
    uint64_t aa = rp_model_revision(rp_store_model_find(st, "aa"));
    assert_int_equal(aa, 7);
    assert_int_equal(rp_store_model_delete(st, "nope"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_revision(st), 8); /* a failed delete takes no number */
    assert_int_equal(rp_store_model_delete(st, "aa"), RP_OK);
    assert_int_equal(rp_store_revision(st), 9); /* a deletion takes one */
    assert_int_equal(rp_store_model_delete(st, "aa"), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_store_revision(st), 9);
    assert_null(rp_store_model_find(st, "aa"));
    assert_int_equal(rp_store_model_count(st), 7);
    assert_string_equal(rp_model_name(rp_store_model_at(st, 2)), "b");
    /* A deleted model comes back at a fresh number, above every earlier one
     * (its old revision and the deletion's). */
    assert_int_equal(rp_model_revision(put_model(st, "aa", a, 1, 0, NULL, 0, true)), 10);
    rp_store_free(st);
}

static void creating_then_deleting_models_returns_memory_to_baseline(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    size_t empty = rp_store_memory(st);
    rp_shape s = capsule(0, 0, 0, 1, 0, 0, 0.1);
    rp_link a[70];
    char ids[70][16];
    for (int i = 0; i < 70; i++) {
        snprintf(ids[i], sizeof ids[i], "l%d", i);
        a[i] = L(ids[i], i % 7 - 1, s);
    }
    const char *p[] = {"l1", "l2", "l2", "l0"};
    put_model(st, "one", a, 3, 0, p, 1, true);
    size_t one = rp_store_memory(st);
    assert_true(one > empty);
    assert_int_equal(rp_store_model_delete(st, "one"), RP_OK);
    assert_int_equal(rp_store_memory(st), empty);

    /* Many models of different sizes, replaced and deleted in another order. */
    char name[16];
    for (int k = 0; k < 20; k++) {
        snprintf(name, sizeof name, "m%02d", (k * 7) % 20);
        put_model(st, name, a, (size_t)(k * 3 + 3), 0.1, p, 2, k % 2 == 0);
    }
    size_t full = rp_store_memory(st);
    put_model(st, "m05", a, 70, 0.1, p, 2, true);
    put_model(st, "m05", a, 48, 0.1, p, 2, false); /* what k = 15 put */
    assert_int_equal(rp_store_memory(st), full);
    for (int k = 19; k >= 0; k--) {
        snprintf(name, sizeof name, "m%02d", (k * 3) % 20);
        assert_int_equal(rp_store_model_delete(st, name), RP_OK);
    }
    assert_int_equal(rp_store_model_count(st), 0);
    assert_int_equal(rp_store_memory(st), empty);
    rp_store_free(st);
}

/* ---- checks by hand ------------------------------------------------------------- */

/* A two-link arm: upper arm on frame 0 along z, forearm on frame 1 along
 * local x; the joint pair is allowed (adjacent links always overlap). */
static rp_model *arm_model(rp_store *st, double margin)
{
    static const char *const joint[] = {"upper", "fore"};
    rp_link a[] = {L("upper", 0, capsule(0, 0, 0, 0, 0, 1, 0.05)),
                   L("fore", 1, capsule(0, 0, 0, 1, 0, 0, 0.04))};
    return put_model(st, "arm", a, 2, margin, joint, 1, true);
}

/* Frame 1 at the elbow (0, 0, 1), turned 90 degrees about z: the forearm
 * runs from (0, 0, 1) to (0, 1, 1). */
static void arm_frames(rp_transform f[2])
{
    f[0] = rp_transform_identity();
    f[1] = pose(0, 0, 1, 1, 0, 0, 1); /* quaternion normalised by pose() */
}

/* A check runs against the scene the store holds now: after a replacement
 * that is a new scene object with only the new content. */
static void check_sees_only_the_content_of_a_replaced_scene(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = arm_model(st, 0.02); /* 1 */
    rp_shape_put shapes[] = {P("lamp", sphere(3, 3, 3, 0.1)),
                             P("table", sphere(0, 0.8, 0.5, 0.45))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "room", shapes, 2, &sc), RP_OK); /* 2 */
    rp_transform f[2];
    arm_frames(f);
    rp_check_result r = run(m, sc, NULL, f, 2, RP_REPORT_CLOSEST, false, 0);
    assert_true(r.collision);
    rp_check_result_free(&r);

    /* The table goes, the lamp moves next to the upper arm. */
    rp_shape_put lamp = P("lamp", sphere(0.5, 0, 0.5, 0.25));
    uint64_t two = 2;
    assert_int_equal(rp_store_replace(st, "room", &lamp, 1, &two, false, &sc, NULL), RP_OK);
    assert_ptr_equal(rp_store_find(st, "room"), sc);
    assert_int_equal(rp_scene_revision(sc), 3);
    assert_int_equal(rp_model_revision(m), 1);
    r = run(m, sc, NULL, f, 2, RP_REPORT_ALL, false, 0);
    assert_false(r.collision);
    assert_int_equal(r.n_violations, 0);
    /* 0.5 - 0.25 - 0.05 from the upper arm; the forearm is further. */
    assert_near(r.closest.distance, 0.2, 1e-12);
    assert_pair(&r.closest, 0, RP_PAIR_SCENE, rp_scene_find(sc, "lamp"));
    assert_int_equal(rp_scene_find(sc, "table"), SIZE_MAX);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void arm_near_table_collides_with_hand_computed_distance(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = arm_model(st, 0.02);
    /* The table sphere's centre is 0.5 below the forearm: 0.5 - 0.45 - 0.04
     * = 0.01.  The upper arm is 0.8 from it: 0.8 - 0.45 - 0.05 = 0.30. */
    rp_shape_put shapes[] = {P("lamp", sphere(3, 3, 3, 0.1)),
                             P("table", sphere(0, 0.8, 0.5, 0.45))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "room", shapes, 2, &sc), RP_OK);
    size_t table = rp_scene_find(sc, "table");
    rp_transform f[2];
    arm_frames(f);

    rp_check_result r = run(m, sc, NULL, f, 2, RP_REPORT_CLOSEST, false, 0);
    assert_true(r.collision);
    assert_true(r.has_min);
    assert_near(r.closest.distance, 0.01, 1e-12);
    assert_pair(&r.closest, 1, RP_PAIR_SCENE, table);
    assert_string_equal(rp_model_link_at(m, r.closest.link)->id, "fore");
    assert_string_equal(rp_scene_id_at(sc, r.closest.other), "table");
    assert_int_equal(r.n_violations, 0);
    rp_check_result_free(&r);

    r = run(m, sc, NULL, f, 2, RP_REPORT_ALL, false, 0);
    assert_true(r.collision);
    assert_int_equal(r.n_violations, 1);
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, table);
    assert_same_bits(r.violations[0].distance, r.closest.distance);
    rp_check_result_free(&r);

    r = run(m, sc, NULL, f, 2, RP_REPORT_FIRST, false, 0);
    assert_true(r.collision);
    assert_false(r.has_min);
    assert_int_equal(r.n_violations, 1);
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, table);
    assert_near(r.violations[0].distance, 0.01, 1e-12);
    rp_check_result_free(&r);

    /* With a 0.31 margin the upper arm violates it too, and sorts after. */
    r = run(m, sc, NULL, f, 2, RP_REPORT_ALL, true, 0.31);
    assert_int_equal(r.n_violations, 2);
    assert_pair(&r.violations[0], 1, RP_PAIR_SCENE, table);
    assert_pair(&r.violations[1], 0, RP_PAIR_SCENE, table);
    assert_near(r.violations[1].distance, 0.30, 1e-12);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void margin_override_replaces_the_safety_margin_and_is_strict(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    /* Two spheres of radius 0.25 one metre apart: exactly 0.5. */
    rp_link a[] = {L("ball", -1, sphere(0, 0, 0, 0.25))};
    rp_shape_put shapes[] = {P("s", sphere(1, 0, 0, 0.25))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 1, &sc), RP_OK);
    rp_model *at = put_model(st, "at", a, 1, 0.5, NULL, 0, true);
    rp_model *over = put_model(st, "over", a, 1, 0.6, NULL, 0, true);
    for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
        rp_report report = (rp_report)rep;
        rp_check_result r = run(at, sc, NULL, NULL, 0, report, false, 0);
        assert_false(r.collision); /* exactly at the margin */
        assert_int_equal(r.n_violations, 0);
        rp_check_result_free(&r);
        r = run(at, sc, NULL, NULL, 0, report, true, nextafter(0.5, 1));
        assert_true(r.collision);
        rp_check_result_free(&r);
        r = run(over, sc, NULL, NULL, 0, report, false, 0);
        assert_true(r.collision);
        rp_check_result_free(&r);
        r = run(over, sc, NULL, NULL, 0, report, true, 0.4);
        assert_false(r.collision);
        if (report != RP_REPORT_FIRST)
            assert_same_bits(r.closest.distance, 0.5);
        rp_check_result_free(&r);
    }
    rp_store_free(st);
}

/* Three links on frames 0, 1, 2; joints (0,1) and (1,2) allowed.  Link 2
 * is turned back 180 degrees about z and runs 0.15 above link 0, parallel:
 * 0.15 - 0.1 - 0.1 = -0.05. */
static rp_model *chain_model(rp_store *st, const char *name, bool allow_fold)
{
    static const char *const joints[] = {"l0", "l1", "l1", "l2", "l2", "l0"};
    rp_link a[] = {L("l0", 0, capsule(0, 0, 0, 1, 0, 0, 0.1)),
                   L("l1", 1, capsule(0, 0, 0, 1, 0, 0, 0.1)),
                   L("l2", 2, capsule(0, 0, 0, 0.8, 0, 0, 0.1))};
    return put_model(st, name, a, 3, 0, joints, allow_fold ? 3 : 2, true);
}

static void chain_frames(rp_transform f[3])
{
    f[0] = rp_transform_identity();
    f[1] = pose(1, 0, 0, 1, 0, 0, 1);
    f[2] = pose(1, 0.15, 0, 0, 0, 0, 1);
}

static void folded_chain_collides_with_itself_between_non_adjacent_links(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = chain_model(st, "chain", false);
    rp_transform f[3];
    chain_frames(f);
    rp_check_result r = run(m, NULL, NULL, f, 3, RP_REPORT_ALL, false, 0);
    assert_true(r.collision);
    assert_true(r.has_min);
    assert_pair(&r.closest, 0, RP_PAIR_SELF, 2);
    assert_near(r.closest.distance, -0.05, 1e-15);
    assert_int_equal(r.n_violations, 1); /* the touching joints are allowed */
    assert_pair(&r.violations[0], 0, RP_PAIR_SELF, 2);
    rp_check_result_free(&r);
    r = run(m, NULL, NULL, f, 3, RP_REPORT_FIRST, false, 0);
    assert_true(r.collision);
    assert_pair(&r.violations[0], 0, RP_PAIR_SELF, 2);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void allowed_pair_that_touches_is_not_reported(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = chain_model(st, "chain", true);
    rp_transform f[3];
    chain_frames(f);
    for (int rep = RP_REPORT_FIRST; rep <= RP_REPORT_ALL; rep++) {
        rp_check_result r = run(m, NULL, NULL, f, 3, (rp_report)rep, true, 1.0);
        assert_false(r.collision);
        assert_false(r.has_min); /* every pair is allowed: none considered */
        assert_int_equal(r.n_violations, 0);
        assert_null(r.violations);
        rp_check_result_free(&r);
    }
    rp_store_free(st);
}

static void overlapping_links_on_one_frame_are_not_reported(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_link a[] = {L("a", 0, sphere(0, 0, 0, 0.5)), L("b", 0, sphere(0.1, 0, 0, 0.5)),
                   L("c", 1, sphere(0, 0, 0, 0.5))};
    rp_model *m = put_model(st, "m", a, 3, 0, NULL, 0, true);
    rp_transform f[2] = {rp_transform_identity(), shift(3, 0, 0)};
    rp_check_result r = run(m, NULL, NULL, f, 2, RP_REPORT_ALL, false, 0);
    assert_false(r.collision);
    assert_int_equal(r.n_violations, 0);
    assert_true(r.has_min);
    assert_pair(&r.closest, 1, RP_PAIR_SELF, 2); /* 2.9 - 1 */
    assert_near(r.closest.distance, 1.9, 1e-15);
    rp_check_result_free(&r);
    /* Without self collision nothing is considered at all. */
    m = put_model(st, "m", a, 3, 0, NULL, 0, false);
    r = run(m, NULL, NULL, f, 2, RP_REPORT_CLOSEST, true, 100);
    assert_false(r.has_min);
    assert_false(r.collision);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void base_links_move_with_the_base_pose(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_link a[] = {L("b", -1, sphere(0, 0, 0, 0.1)), L("h", 0, sphere(0, 0, 0, 0.1))};
    rp_model *m = put_model(st, "m", a, 2, 0, NULL, 0, true);
    rp_shape_put shapes[] = {P("wall", sphere(2, 0, 0, 0.5))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 1, &sc), RP_OK);
    rp_transform f[1] = {shift(0, 5, 0)};
    rp_transform base = pose(1, 0, 0, cos(0.3), sin(0.3), 0, 0); /* rotation moves no centre */

    rp_check_result r = run(m, sc, &base, f, 1, RP_REPORT_ALL, true, 10);
    assert_pair(&r.closest, 0, RP_PAIR_SCENE, 0);
    assert_near(r.closest.distance, 0.4, 1e-15);
    /* The base is its own frame: the base link pairs with the frame-0 link. */
    assert_int_equal(r.n_violations, 3);
    assert_pair(&r.violations[1], 1, RP_PAIR_SCENE, 0);
    assert_near(r.violations[1].distance, sqrt(29) - 0.6, 1e-14);
    assert_pair(&r.violations[2], 0, RP_PAIR_SELF, 1);
    assert_near(r.violations[2].distance, sqrt(26) - 0.2, 1e-14);
    rp_check_result_free(&r);

    r = run(m, sc, NULL, f, 1, RP_REPORT_CLOSEST, false, 0); /* base = identity */
    assert_pair(&r.closest, 0, RP_PAIR_SCENE, 0);
    assert_near(r.closest.distance, 1.4, 1e-15);
    rp_check_result_free(&r);

    /* A model on the base alone needs no frames. */
    rp_model *b = put_model(st, "b", a, 1, 0, NULL, 0, true);
    r = run(b, sc, &base, NULL, 0, RP_REPORT_CLOSEST, false, 0);
    assert_near(r.closest.distance, 0.4, 1e-15);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void wrong_frame_count_and_bad_arguments_are_invalid(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = arm_model(st, 0);
    rp_transform f[3] = {rp_transform_identity(), rp_transform_identity(), rp_transform_identity()};
    rp_check_opts o = {RP_REPORT_ALL, false, 0, NULL, NULL, 0};
    rp_check_result r;
    size_t counts[] = {0, 1, 3};
    for (size_t c = 0; c < 3; c++) {
        memset(&r, 0x5a, sizeof r);
        assert_int_equal(rp_model_check(m, NULL, NULL, f, counts[c], &o, &r), RP_ERR_INVALID_ARG);
        assert_false(r.collision);
        assert_null(r.violations);
        rp_check_result_free(&r);
    }
    assert_int_equal(rp_model_check(m, NULL, NULL, NULL, 2, &o, &r), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check(NULL, NULL, NULL, f, 2, &o, &r), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_model_check(m, NULL, NULL, f, 2, &o, NULL), RP_ERR_INVALID_ARG);
    rp_check_opts nan_margin = {RP_REPORT_FIRST, true, NAN, NULL, NULL, 0};
    assert_int_equal(rp_model_check(m, NULL, NULL, f, 2, &nan_margin, &r), RP_ERR_INVALID_ARG);
    rp_check_opts bad_report = {(rp_report)9, false, 0, NULL, NULL, 0};
    assert_int_equal(rp_model_check(m, NULL, NULL, f, 2, &bad_report, &r), RP_ERR_INVALID_ARG);
    /* NULL options mean closest with the model's margin. */
    assert_int_equal(rp_model_check(m, NULL, NULL, f, 2, NULL, &r), RP_OK);
    assert_false(r.has_min); /* the only self pair is allowed */
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void null_or_empty_scene_has_no_minimum_unless_self_pairs_exist(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_scene *empty;
    assert_int_equal(rp_store_create(st, "empty", NULL, 0, &empty), RP_OK);
    rp_link one_frame[] = {L("a", 0, sphere(0, 0, 0, 0.1)), L("b", 0, sphere(5, 0, 0, 0.1))};
    rp_link two_frames[] = {L("a", 0, sphere(0, 0, 0, 0.1)), L("b", 1, sphere(5, 0, 0, 0.1))};
    rp_model *m1 = put_model(st, "one", one_frame, 2, 0, NULL, 0, true);
    rp_model *m2 = put_model(st, "two", two_frames, 2, 0, NULL, 0, true);
    rp_transform f[2] = {rp_transform_identity(), rp_transform_identity()};
    const rp_scene *scenes[] = {NULL, empty};
    for (size_t s = 0; s < 2; s++) {
        rp_check_result r = run(m1, scenes[s], NULL, f, 1, RP_REPORT_ALL, true, 1e9);
        assert_false(r.has_min);
        assert_false(r.collision);
        rp_check_result_free(&r);
        r = run(m2, scenes[s], NULL, f, 2, RP_REPORT_CLOSEST, false, 0);
        assert_true(r.has_min);
        assert_false(r.collision);
        assert_pair(&r.closest, 0, RP_PAIR_SELF, 1);
        assert_near(r.closest.distance, 4.8, 1e-15);
        rp_check_result_free(&r);
    }
    rp_store_free(st);
}

static void ties_go_to_lowest_link_then_scene_then_smallest_id(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    /* Point links at x = 0 (frame 0) and x = 2 (frame 1); identical point
     * spheres "zeta" (stored first) and "alpha" at x = -2.  Link 0 is 2 from
     * both spheres and 2 from link 1. */
    rp_link a[] = {L("p", 0, sphere(0, 0, 0, 0)), L("q", 1, sphere(0, 0, 0, 0))};
    rp_model *m = put_model(st, "m", a, 2, 0, NULL, 0, true);
    rp_shape_put shapes[] = {P("zeta", sphere(-2, 0, 0, 0)), P("alpha", sphere(-2, 0, 0, 0))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 2, &sc), RP_OK);
    size_t zeta = rp_scene_find(sc, "zeta"), alpha = rp_scene_find(sc, "alpha");
    rp_transform f[2] = {rp_transform_identity(), shift(2, 0, 0)};

    rp_check_result r = run(m, sc, NULL, f, 2, RP_REPORT_ALL, true, 5);
    assert_pair(&r.closest, 0, RP_PAIR_SCENE, alpha);
    assert_int_equal(r.n_violations, 5);
    assert_pair(&r.violations[0], 0, RP_PAIR_SCENE, alpha);
    assert_pair(&r.violations[1], 0, RP_PAIR_SCENE, zeta);
    assert_pair(&r.violations[2], 0, RP_PAIR_SELF, 1);
    assert_pair(&r.violations[3], 1, RP_PAIR_SCENE, alpha);
    assert_pair(&r.violations[4], 1, RP_PAIR_SCENE, zeta);
    assert_same_bits(r.violations[2].distance, 2.0);
    assert_same_bits(r.violations[4].distance, 4.0);
    rp_check_result_free(&r);

    /* Symmetric links at the same place: the lower link index wins. */
    f[1] = rp_transform_identity();
    r = run(m, sc, NULL, f, 2, RP_REPORT_CLOSEST, false, 0);
    assert_pair(&r.closest, 0, RP_PAIR_SELF, 1); /* distance 0 beats 2 */
    f[1] = shift(-4, 0, 0);                      /* q also 2 from the spheres */
    rp_check_result_free(&r);
    r = run(m, sc, NULL, f, 2, RP_REPORT_CLOSEST, false, 0);
    assert_pair(&r.closest, 0, RP_PAIR_SCENE, alpha);
    rp_check_result_free(&r);
    rp_store_free(st);
}

static void first_report_allocates_nothing_without_a_collision(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_model *m = arm_model(st, 0);
    rp_shape_put shapes[] = {P("far", sphere(9, 9, 9, 1))};
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "sc", shapes, 1, &sc), RP_OK);
    rp_transform f[2];
    arm_frames(f);
    rp_check_result r = run(m, sc, NULL, f, 2, RP_REPORT_FIRST, false, 0);
    assert_false(r.collision);
    assert_false(r.has_min);
    assert_null(r.violations);
    assert_int_equal(r.cap_violations, 0);
    rp_check_result_free(&r);
    rp_check_result_free(&r);
    rp_check_result_free(NULL);
    rp_store_free(st);
}

/* ---- reports against brute force --------------------------------------------- */

/* Grid coordinates (multiples of 0.25) and radii 0, 0.25, 0.5: many pairs
 * land at exactly the same distance. */
static double grid(test_rng *r, int half_steps)
{
    return 0.25 * (double)((int)(rng_next(r) % (uint64_t)(2 * half_steps + 1)) - half_steps);
}

static rp_shape grid_shape(test_rng *r, int half_steps)
{
    double rad = 0.25 * (double)(rng_next(r) % 3);
    double x = grid(r, half_steps), y = grid(r, half_steps), z = grid(r, half_steps);
    if (rng_next(r) % 2)
        return sphere(x, y, z, rad);
    return capsule(x, y, z, x + grid(r, 4), y + grid(r, 4), z + grid(r, 4), rad);
}

/* Whether compare_on_random_model's scenes also hold boxes and half-spaces. */
static bool scene_solids;

/* A grid box (axis-aligned or turned a quarter about z, so that ties
 * survive) or a half-space with an axis normal and a grid offset; one in
 * eight shapes is a half-space. */
static rp_shape grid_solid(test_rng *r, int half_steps, bool planes)
{
    rp_vec3 c = {grid(r, half_steps), grid(r, half_steps), grid(r, half_steps)};
    if (planes && rng_next(r) % 8 == 0) {
        int axis = (int)(rng_next(r) % 3);
        double sign = rng_next(r) % 2 ? 1.0 : -1.0;
        rp_vec3 n = {axis == 0 ? sign : 0, axis == 1 ? sign : 0, axis == 2 ? sign : 0};
        rp_halfspace h;
        assert_int_equal(rp_halfspace_new(n, grid(r, half_steps) - 2.0, &h), RP_OK);
        return rp_shape_from_halfspace(h);
    }
    rp_vec3 e = {0.25 * (double)(rng_next(r) % 4), 0.25 * (double)(rng_next(r) % 4),
                 0.25 * (double)(rng_next(r) % 4)};
    rp_box b;
    bool turned = rng_next(r) % 2;
    assert_int_equal(rp_box_new(c, e, 1, 0, 0, turned ? 1 : 0, &b), RP_OK);
    return rp_shape_from_box(b);
}

/* Quarter turns keep grid shapes on the grid (ties survive the move). */
static rp_transform random_pose(test_rng *r)
{
    static const double q[][4] = {{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 1, 0, 0}, {0, 0, 1, 0},
                                  {1, 0, 0, 1}, {1, 1, 0, 0}, {1, 0, 1, 0}};
    if (rng_next(r) % 4 == 0)
        return pose(rng_uniform(r, -2, 2), rng_uniform(r, -2, 2), rng_uniform(r, -2, 2),
                    rng_uniform(r, -1, 1), rng_uniform(r, -1, 1), rng_uniform(r, -1, 1), 1);
    const double *k = q[rng_next(r) % 7];
    return pose(grid(r, 6), grid(r, 6), grid(r, 6), k[0], k[1], k[2], k[3]);
}

typedef struct bf_ctx {
    const rp_scene *sc;
} bf_ctx;

static bf_ctx g_bf; /* qsort has no context argument */

/* The order of scene.h, written independently of check.c. */
static int bf_cmp(const void *pa, const void *pb)
{
    const rp_check_pair *a = pa, *b = pb;
    if (a->distance < b->distance)
        return -1;
    if (a->distance > b->distance)
        return 1;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind == RP_PAIR_SCENE ? -1 : 1;
    if (a->kind == RP_PAIR_SCENE)
        return strcmp(rp_scene_id_at(g_bf.sc, a->other), rp_scene_id_at(g_bf.sc, b->other));
    return a->other < b->other ? -1 : a->other > b->other;
}

static bool pair_allowed(const rp_model *m, size_t i, size_t j)
{
    for (size_t p = 0; p < rp_model_allowed_count(m); p++) {
        size_t a, b;
        rp_model_allowed_at(m, p, &a, &b);
        if ((a == i && b == j) || (a == j && b == i))
            return true;
    }
    return false;
}

/* Every eligible pair of a configuration, sorted by bf_cmp; *n gets the
 * count.  Caller frees. */
static rp_check_pair *brute_force(const rp_model *m, const rp_scene *sc, const rp_transform *base,
                                  const rp_transform *frames, size_t *n)
{
    size_t nl = rp_model_link_count(m), ns = sc ? rp_scene_shape_count(sc) : 0;
    rp_check_pair *pairs = malloc((nl * ns + nl * nl + 1) * sizeof *pairs);
    rp_shape *w = malloc((nl + 1) * sizeof *w);
    assert_non_null(pairs);
    assert_non_null(w);
    rp_transform id = rp_transform_identity();
    for (size_t i = 0; i < nl; i++) {
        const rp_link *l = rp_model_link_at(m, i);
        rp_link_shape ls = {l->shape, l->frame};
        w[i] = rp_link_shape_transform_shape(&ls, l->frame < 0 ? (base ? base : &id)
                                                               : &frames[l->frame]);
    }
    size_t k = 0;
    for (size_t i = 0; i < nl; i++) {
        for (size_t e = 0; e < ns; e++) {
            rp_check_pair p = {i, RP_PAIR_SCENE, e,
                               rp_shape_signed_distance(&w[i], SCENE_SHAPE(sc, e))};
            pairs[k++] = p;
        }
        for (size_t j = i + 1; j < nl && rp_model_self_collision(m); j++) {
            if (rp_model_link_at(m, i)->frame == rp_model_link_at(m, j)->frame ||
                pair_allowed(m, i, j))
                continue;
            rp_check_pair p = {i, RP_PAIR_SELF, j, rp_shape_signed_distance(&w[i], &w[j])};
            pairs[k++] = p;
        }
    }
    g_bf.sc = sc;
    qsort(pairs, k, sizeof *pairs, bf_cmp);
    free(w);
    *n = k;
    return pairs;
}

static bool same_pair(const rp_check_pair *a, const rp_check_pair *b)
{
    return a->link == b->link && a->kind == b->kind && a->other == b->other &&
           same_bits(a->distance, b->distance);
}

/* Builds a random model and scene (with duplicated shapes under other ids
 * and links copied onto other frames) and compares the three reports with
 * brute force over `configs` random configurations.  Returns how many
 * configurations had an exact tie at the minimum. */
static size_t compare_on_random_model(test_rng *r, size_t n_links, size_t configs)
{
    rp_store *st = rp_store_new(NULL);
    int n_frames = 1 + (int)(rng_next(r) % 4);
    rp_link *links = calloc(n_links, sizeof *links);
    char(*ids)[32] = calloc(n_links, sizeof *ids);
    assert_non_null(links);
    assert_non_null(ids);
    for (size_t i = 0; i < n_links; i++) {
        snprintf(ids[i], sizeof ids[i], "link%zu", i);
        int frame = (int)(rng_next(r) % (uint64_t)(n_frames + 1)) - 1;
        rp_shape s = (i > 0 && rng_next(r) % 3 == 0)        ? links[i - 1].shape
                     : scene_solids && rng_next(r) % 3 == 0 ? grid_solid(r, 4, false)
                                                            : grid_shape(r, 4);
        links[i] = L(ids[i], frame, s);
    }
    size_t n_allowed = n_links > 1 ? rng_next(r) % (n_links + 1) : 0;
    const char **pairs = calloc(2 * n_allowed + 1, sizeof *pairs);
    assert_non_null(pairs);
    for (size_t p = 0; p < 2 * n_allowed; p++)
        pairs[p] = ids[rng_next(r) % n_links];
    double margin = 0.25 * (double)(rng_next(r) % 3);
    put_model(st, "m", links, n_links, margin, pairs, n_allowed, rng_next(r) % 5 != 0);
    const rp_model *m = rp_store_model_find(st, "m");

    /* 0 to 40 shapes: both the scan (<= 16) and the tree.  Random id
     * prefixes make id order differ from storage order. */
    size_t ns = rng_next(r) % 41;
    rp_shape_put *puts = calloc(ns + 1, sizeof *puts);
    char(*sids)[32] = calloc(ns + 1, sizeof *sids);
    assert_non_null(puts);
    assert_non_null(sids);
    for (size_t e = 0; e < ns; e++) {
        snprintf(sids[e], sizeof sids[e], "%c%zu", (char)('a' + rng_next(r) % 26), e);
        rp_shape s = (e > 0 && rng_next(r) % 4 == 0)   ? puts[rng_next(r) % e].shape
                     : scene_solids && rng_next(r) % 2 ? grid_solid(r, 8, true)
                                                       : grid_shape(r, 8);
        puts[e] = P(sids[e], s);
    }
    rp_scene *sc = NULL;
    assert_int_equal(rp_store_create(st, "sc", puts, ns, &sc), RP_OK);
    const rp_scene *use = (ns == 0 && rng_next(r) % 2) ? NULL : sc;

    size_t nf = rp_model_frame_count(m), ties = 0;
    rp_transform *frames = calloc(nf + 1, sizeof *frames);
    assert_non_null(frames);
    for (size_t c = 0; c < configs; c++) {
        for (size_t f = 0; f < nf; f++)
            frames[f] = (f > 0 && rng_next(r) % 3 == 0) ? frames[rng_next(r) % f] : random_pose(r);
        rp_transform base = random_pose(r);
        const rp_transform *bp = rng_next(r) % 2 ? &base : NULL;
        bool has_margin = rng_next(r) % 3 == 0;
        double om = 0.25 * (double)(rng_next(r) % 5) - 0.25; /* -0.25 .. 0.75 */
        double eff = has_margin ? om : margin;

        size_t nb;
        rp_check_pair *bf = brute_force(m, use, bp, frames, &nb);
        size_t nv = 0;
        while (nv < nb && bf[nv].distance < eff)
            nv++;
        if (nb > 1 && bf[0].distance == bf[1].distance)
            ties++;

        rp_check_result first = run(m, use, bp, frames, nf, RP_REPORT_FIRST, has_margin, om);
        rp_check_result closest = run(m, use, bp, frames, nf, RP_REPORT_CLOSEST, has_margin, om);
        rp_check_result all = run(m, use, bp, frames, nf, RP_REPORT_ALL, has_margin, om);
        assert_int_equal(first.collision, nv > 0);
        assert_int_equal(closest.collision, nv > 0);
        assert_int_equal(all.collision, nv > 0);
        assert_int_equal(closest.has_min, nb > 0);
        assert_int_equal(all.has_min, nb > 0);
        if (nb > 0) {
            if (!same_pair(&closest.closest, &bf[0]))
                fail_msg("closest (%zu,%d,%zu,%.17g), brute force (%zu,%d,%zu,%.17g)",
                         closest.closest.link, closest.closest.kind, closest.closest.other,
                         closest.closest.distance, bf[0].link, bf[0].kind, bf[0].other,
                         bf[0].distance);
            assert_true(same_pair(&all.closest, &bf[0]));
        }
        assert_int_equal(all.n_violations, nv);
        for (size_t v = 0; v < nv; v++)
            assert_true(same_pair(&all.violations[v], &bf[v]));
        assert_false(first.has_min);
        assert_int_equal(first.n_violations, first.collision ? 1 : 0);
        if (first.collision) {
            bool listed = false;
            for (size_t v = 0; v < nv && !listed; v++)
                listed = same_pair(&first.violations[0], &bf[v]);
            assert_true(listed);
        }
        rp_check_result_free(&first);
        rp_check_result_free(&closest);
        rp_check_result_free(&all);
        free(bf);
    }
    free(frames);
    free(puts);
    free(sids);
    free(pairs);
    free(links);
    free(ids);
    rp_store_free(st);
    return ties;
}

static void reports_agree_with_brute_force_on_random_configurations(void **state)
{
    (void)state;
    test_rng r = {20240611};
    size_t ties = 0;
    for (int k = 0; k < 60; k++)
        ties += compare_on_random_model(&r, 1 + rng_next(&r) % 10, 100);
    assert_true(ties > 100); /* the tie rule was exercised, not just present */
}

/* The same with boxes and half-spaces among the scene's shapes and boxes
 * among the links (URDF boxes): the whole-robot walks meet scene boxes in
 * the tree and half-spaces beside it (tested for every robot), and box
 * links meet everything, each other included. */
static void reports_agree_with_brute_force_with_boxes_and_half_spaces(void **state)
{
    (void)state;
    test_rng r = {20261205};
    scene_solids = true;
    size_t ties = 0;
    for (int k = 0; k < 60; k++)
        ties += compare_on_random_model(&r, 1 + rng_next(&r) % 10, 100);
    for (int k = 0; k < 3; k++)
        compare_on_random_model(&r, 65 + rng_next(&r) % 40, 15);
    scene_solids = false;
    assert_true(ties > 50);
}

static void reports_agree_with_brute_force_beyond_the_stack_buffer(void **state)
{
    (void)state;
    test_rng r = {77};
    for (int k = 0; k < 4; k++)
        compare_on_random_model(&r, 65 + rng_next(&r) % 40, 15);
}

/* Valid link shapes moved by valid poses can leave the range of doubles
 * (a link at 1e308 translated by another 1e308): the check refuses with
 * RP_ERR_NONFINITE and names the link, for every report and for links on
 * the base as on frames; just inside the range it runs. */
static void poses_that_move_links_past_dbl_max_are_refused(void **state)
{
    (void)state;
    rp_store *st = rp_store_new(NULL);
    rp_link links[] = {
        {"near", 0, sphere(0, 0, 0, 0.1)},
        {"far", 1, sphere(1e308, 0, 0, 0.1)},
        {"base", -1, sphere(0, -1e308, 0, 0.1)},
    };
    rp_model *m = put_model(st, "m", links, 3, 0.0, NULL, 0, true);
    rp_transform ok[2] = {shift(0, 0, 0), shift(7e307, 0, 0)};
    rp_transform far[2] = {shift(0, 0, 0), shift(1e308, 0, 0)};
    rp_transform low = shift(0, -1e308, 0);
    rp_report reports[] = {RP_REPORT_FIRST, RP_REPORT_CLOSEST, RP_REPORT_ALL};
    for (int i = 0; i < 3; i++) {
        rp_check_opts o = {reports[i], false, 0, NULL, NULL, 0};
        rp_check_result r;
        assert_int_equal(rp_model_check(m, NULL, NULL, ok, 2, &o, &r), RP_OK);
        rp_check_result_free(&r);
        assert_int_equal(rp_model_check(m, NULL, NULL, far, 2, &o, &r), RP_ERR_NONFINITE);
        assert_int_equal(r.closest.link, 1);
        assert_null(r.violations);
        assert_int_equal(rp_model_check(m, NULL, &low, ok, 2, &o, &r), RP_ERR_NONFINITE);
        assert_int_equal(r.closest.link, 2);
    }
    rp_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(duplicate_link_id_is_reported_at_the_later_duplicate),
        cmocka_unit_test(frame_below_minus_one_is_a_bad_frame),
        cmocka_unit_test(invalid_link_shapes_are_bad_shapes_at_their_index),
        cmocka_unit_test(negative_or_nonfinite_safety_margin_is_a_bad_margin),
        cmocka_unit_test(allowed_pair_naming_no_link_reports_pair_and_element),
        cmocka_unit_test(links_are_checked_before_the_margin_and_the_margin_before_pairs),
        cmocka_unit_test(null_arguments_are_invalid_without_a_problem),
        cmocka_unit_test(put_copies_the_definition_and_accessors_return_it),
        cmocka_unit_test(the_store_keeps_every_field_of_the_definition),
        cmocka_unit_test(frame_count_is_highest_frame_plus_one_and_zero_on_the_base),
        cmocka_unit_test(replacing_keeps_the_name_and_takes_the_next_store_revision),
        cmocka_unit_test(models_list_in_name_order_and_delete_removes_them),
        cmocka_unit_test(creating_then_deleting_models_returns_memory_to_baseline),
        cmocka_unit_test(arm_near_table_collides_with_hand_computed_distance),
        cmocka_unit_test(check_sees_only_the_content_of_a_replaced_scene),
        cmocka_unit_test(margin_override_replaces_the_safety_margin_and_is_strict),
        cmocka_unit_test(folded_chain_collides_with_itself_between_non_adjacent_links),
        cmocka_unit_test(allowed_pair_that_touches_is_not_reported),
        cmocka_unit_test(overlapping_links_on_one_frame_are_not_reported),
        cmocka_unit_test(base_links_move_with_the_base_pose),
        cmocka_unit_test(wrong_frame_count_and_bad_arguments_are_invalid),
        cmocka_unit_test(null_or_empty_scene_has_no_minimum_unless_self_pairs_exist),
        cmocka_unit_test(ties_go_to_lowest_link_then_scene_then_smallest_id),
        cmocka_unit_test(first_report_allocates_nothing_without_a_collision),
        cmocka_unit_test(reports_agree_with_brute_force_on_random_configurations),
        cmocka_unit_test(reports_agree_with_brute_force_beyond_the_stack_buffer),
        cmocka_unit_test(reports_agree_with_brute_force_with_boxes_and_half_spaces),
        cmocka_unit_test(poses_that_move_links_past_dbl_max_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
