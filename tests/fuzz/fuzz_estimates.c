/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the work estimates of include/repose/scene.h, which the
 * daemon charges before it runs a request (proto/PROTOCOL.md, the cost
 * model): the input is read as a random model (frame-indexed or a chain of
 * revolute joints), allowed pairs and scene pairs that may repeat or name
 * nothing, attached shapes with touch links, and a motion.  Invariants:
 *
 *  - building the model spends at most rp_model_def_work (the builders
 *    count their steps in rp_build_steps_, model_int.h);
 *  - extending it spends at most rp_model_extend_work, also when the
 *    extension is refused;
 *  - a discrete motion checks at most rp_motion_states_bound states, and
 *    a certified one stops at its max_states;
 *  - the tree walks of a query and a check, whose cost no estimate bounds,
 *    either finish on a meter (rp_work) having spent what they spend
 *    unmetered, or stop with RP_ERR_WORK within a slice of its limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_util.h"
#include "repose/scene.h"
#include "scene/model_int.h"

#define MAX_SHAPES 40
#define MAX_TREE 6
#define MAX_PAIRS 64
#define MAX_ATTACHED 24
#define MAX_TOUCH 6
#define NAME_BYTES 8

/* The input as a stream of bytes; zeros once it runs out. */
typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static unsigned next(input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static double coord(input *in)
{
    return ((int)next(in) - 128) / 32.0;
}

static rp_shape shape(input *in)
{
    rp_shape s;
    memset(&s, 0, sizeof s);
    if (next(in) & 1) {
        s.kind = RP_SHAPE_CAPSULE;
        s.capsule.a = (rp_vec3){coord(in), coord(in), coord(in)};
        s.capsule.b = (rp_vec3){coord(in), coord(in), coord(in)};
        s.capsule.radius = next(in) / 64.0;
    } else {
        s.kind = RP_SHAPE_SPHERE;
        s.sphere.center = (rp_vec3){coord(in), coord(in), coord(in)};
        s.sphere.radius = next(in) / 64.0;
    }
    return s;
}

/* Names: shapes "s<k>", tree links "t<k>", attached "a<k>", scene "o<k>";
 * a name index one past the last names nothing. */
static char shape_ids[MAX_SHAPES + 1][NAME_BYTES], tree_names[MAX_TREE + 1][NAME_BYTES];
static char attached_ids[MAX_ATTACHED][NAME_BYTES], scene_ids[MAX_PAIRS][NAME_BYTES];

static void names(void)
{
    static bool done;
    if (done)
        return;
    for (int k = 0; k <= MAX_SHAPES; k++)
        snprintf(shape_ids[k], NAME_BYTES, "s%d", k);
    for (int k = 0; k <= MAX_TREE; k++)
        snprintf(tree_names[k], NAME_BYTES, "t%d", k);
    for (int k = 0; k < MAX_ATTACHED; k++)
        snprintf(attached_ids[k], NAME_BYTES, "a%d", k);
    for (int k = 0; k < MAX_PAIRS; k++)
        snprintf(scene_ids[k], NAME_BYTES, "o%d", k);
    done = true;
}

/* A link name of the model: a tree link (kinematic) or a shape id, now
 * and then one that names nothing or an attached shape. */
static const char *link_name(input *in, bool kin, size_t n_shapes, size_t n_tree, size_t n_att)
{
    unsigned b = next(in);
    if (n_att && b % 8 == 7)
        return attached_ids[(b / 8) % n_att];
    if (kin)
        return tree_names[b % (n_tree + 1)];
    return shape_ids[b % (n_shapes + 1)];
}

static uint64_t steps_as_units(void)
{
    return (rp_build_steps_ + 15) / 16;
}

/* A meter stopped a call: it spent about its limit, at most a slice past
 * it (one scene shape against every query shape, and the visit). */
#define WALK_SLICE 70

/* The call on meter w gave st; `full` units is what it spends unmetered.
 * Either it finished, having spent exactly that, or it stopped near its
 * limit. */
static void check_meter(const char *what, rp_status st, const rp_work *w, uint64_t full)
{
    if (st == RP_ERR_WORK) {
        FUZZ_CHECK(w->spent <= w->limit + WALK_SLICE && w->limit < full + 3,
                   "%s: stopped after %llu units on a limit of %llu (%llu unmetered)", what,
                   (unsigned long long)w->spent, (unsigned long long)w->limit,
                   (unsigned long long)full);
        return;
    }
    FUZZ_CHECK(w->spent == full, "%s: spent %llu metered, %llu unmetered", what,
               (unsigned long long)w->spent, (unsigned long long)full);
}

/* The tree walks' meter (rp_work): a random scene, now and then with its
 * shapes piled on one point (every one ties for nearest), then a query and
 * a check of the model, each unmetered and on a random limit. */
static void walks_are_metered(input *in, rp_store *st, const rp_model *m, bool kin)
{
    enum { MAX_SCENE = 300 };
    static rp_shape_put puts[MAX_SCENE];
    static char ids[MAX_SCENE][24];
    unsigned mode = next(in);
    size_t n = (size_t)next(in) + (size_t)(next(in) % 2) * 44; /* up to 299 */
    rp_shape pile = shape(in);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "w%zu", i);
        puts[i].id = ids[i];
        puts[i].shape = mode & 1 ? pile : shape(in);
    }
    rp_scene *sc = NULL;
    if (rp_store_create(st, "walk", puts, n, &sc) != RP_OK)
        return;
    rp_shape qs[4];
    size_t nq = 1 + next(in) % 4;
    for (size_t k = 0; k < nq; k++)
        qs[k] = shape(in);
    rp_query q;
    memset(&q, 0, sizeof q);
    q.shapes = qs;
    q.n_shapes = nq;
    q.collect = mode & 2;
    q.threshold = next(in) / 32.0;
    q.first_only = mode & 4;
    rp_work full = {0, 0};
    q.work = &full;
    rp_query_result r;
    if (rp_scene_query(sc, &q, &r) != RP_OK)
        return;
    rp_query_result_free(&r);
    rp_work cut = {1 + (full.spent * next(in)) / 200, 0};
    q.work = &cut;
    rp_status s = rp_scene_query(sc, &q, &r);
    check_meter("query", s, &cut, full.spent);
    rp_query_result_free(&r);

    /* A check of the model at a random configuration. */
    rp_check_opts o;
    memset(&o, 0, sizeof o);
    o.report = (rp_report)(next(in) % 3);
    rp_check_result cr;
    rp_transform frames[4];
    for (size_t f = 0; f < 4; f++)
        frames[f] = rp_transform_identity();
    double qj[MAX_TREE] = {0};
    size_t dof = rp_model_dof(m);
    for (size_t i = 0; i < dof && i < MAX_TREE; i++)
        qj[i] = ((int)next(in) - 128) / 40.0;
    size_t nf = rp_model_frame_count(m);
    if (!kin && nf > 4)
        return;
    full.spent = 0;
    o.work = &full;
    s = kin ? rp_model_check_joints(m, sc, NULL, qj, &o, &cr)
            : rp_model_check(m, sc, NULL, frames, nf, &o, &cr);
    rp_check_result_free(&cr);
    if (s != RP_OK)
        return;
    cut.limit = 1 + (full.spent * next(in)) / 200;
    cut.spent = 0;
    o.work = &cut;
    s = kin ? rp_model_check_joints(m, sc, NULL, qj, &o, &cr)
            : rp_model_check(m, sc, NULL, frames, nf, &o, &cr);
    check_meter("check", s, &cut, full.spent);
    rp_check_result_free(&cr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    names();
    input in = {data, size};
    unsigned flags = next(&in);
    bool kin = flags & 1, self = flags & 2;
    size_t n_shapes = 1 + next(&in) % MAX_SHAPES, n_tree = 1 + next(&in) % MAX_TREE;

    rp_link links[MAX_SHAPES];
    const char *shape_links[MAX_SHAPES];
    for (size_t k = 0; k < n_shapes; k++) {
        links[k].id = shape_ids[k];
        links[k].frame = (int)(next(&in) % 4) - 1;
        links[k].shape = shape(&in);
        shape_links[k] = tree_names[next(&in) % n_tree];
    }
    rp_joint_def joints[MAX_TREE];
    memset(joints, 0, sizeof joints);
    const char *link_names[MAX_TREE];
    for (size_t k = 0; k < n_tree; k++)
        link_names[k] = tree_names[k];
    for (size_t k = 0; k + 1 < n_tree; k++) {
        joints[k].name = shape_ids[k]; /* any distinct names */
        joints[k].type = RP_JOINT_REVOLUTE;
        joints[k].parent = tree_names[k];
        joints[k].child = tree_names[k + 1];
        joints[k].axis = (rp_vec3){0, 0, 1};
        joints[k].has_limits = true;
        joints[k].lower = -3;
        joints[k].upper = 3;
    }
    const char *pairs[2 * MAX_PAIRS], *scene_pairs[2 * MAX_PAIRS];
    size_t n_pairs = next(&in) % MAX_PAIRS, n_scene = next(&in) % MAX_PAIRS;
    for (size_t i = 0; i < 2 * n_pairs; i++)
        pairs[i] = link_name(&in, kin, n_shapes, n_tree, 0);
    for (size_t i = 0; i < n_scene; i++) {
        scene_pairs[2 * i] = link_name(&in, kin, n_shapes, n_tree, 0);
        scene_pairs[2 * i + 1] = scene_ids[next(&in) % MAX_PAIRS];
    }
    rp_model_def def;
    memset(&def, 0, sizeof def);
    def.links = links;
    def.n_links = n_shapes;
    def.allowed_pairs = pairs;
    def.n_allowed = n_pairs;
    def.self_collision = self;
    def.allowed_scene = scene_pairs;
    def.n_allowed_scene = n_scene;
    if (kin) {
        def.shape_links = shape_links;
        def.link_names = link_names;
        def.n_link_names = n_tree;
        def.joints = joints;
        def.n_joints = n_tree - 1;
    }

    rp_store *st = rp_store_new(NULL);
    FUZZ_CHECK(st != NULL, "out of memory");
    uint64_t est = rp_model_def_work(&def);
    rp_build_steps_ = 0;
    rp_model *m = NULL;
    rp_status s = rp_store_model_put(st, "m", &def, &m, NULL);
    FUZZ_CHECK(steps_as_units() <= est, "model.put: %llu units spent, estimate %llu",
               (unsigned long long)steps_as_units(), (unsigned long long)est);
    if (s != RP_OK) {
        rp_store_free(st);
        return 0;
    }

    /* The request's extension. */
    rp_attached att[MAX_ATTACHED];
    const char *touch[MAX_ATTACHED][MAX_TOUCH];
    size_t n_att = next(&in) % MAX_ATTACHED;
    for (size_t i = 0; i < n_att; i++) {
        att[i].id = next(&in) % 16 ? attached_ids[i] : shape_ids[0]; /* now and then a duplicate */
        att[i].link = link_name(&in, kin, n_shapes, n_tree, 0);
        att[i].shape = shape(&in);
        att[i].n_touch = next(&in) % MAX_TOUCH;
        for (size_t t = 0; t < att[i].n_touch; t++)
            touch[i][t] = link_name(&in, kin, n_shapes, n_tree, 0);
        att[i].touch_links = touch[i];
    }
    size_t n_req = next(&in) % MAX_PAIRS;
    const char *req_pairs[2 * MAX_PAIRS];
    for (size_t i = 0; i < n_req; i++) {
        req_pairs[2 * i] = link_name(&in, kin, n_shapes, n_tree, n_att);
        req_pairs[2 * i + 1] = scene_ids[next(&in) % MAX_PAIRS];
    }
    est = rp_model_extend_work(m, att, n_att, n_req);
    rp_build_steps_ = 0;
    rp_model *e = NULL;
    rp_extend_error ee;
    s = rp_model_extend(m, att, n_att, req_pairs, n_req, &e, &ee);
    FUZZ_CHECK(steps_as_units() <= est, "extend: %llu units spent, estimate %llu",
               (unsigned long long)steps_as_units(), (unsigned long long)est);
    const rp_model *checked = s == RP_OK ? e : m;
    FUZZ_CHECK(rp_model_check_work(checked, 1000) >= rp_model_link_count(checked),
               "a check costs at least a unit a shape");

    /* A motion of the chain. */
    if (kin && n_tree > 1) {
        size_t dof = rp_model_dof(checked), points = 2 + next(&in) % 3;
        double path[4 * MAX_TREE];
        for (size_t i = 0; i < points * dof; i++)
            path[i] = ((int)next(&in) - 128) / 40.0;
        rp_motion_opts o;
        memset(&o, 0, sizeof o);
        unsigned mode = next(&in);
        o.mode = mode & 1 ? RP_MOTION_CERTIFIED : RP_MOTION_DISCRETE;
        o.earliest = mode & 2;
        o.fast_reject = mode & 4;
        o.ignore_limits = true;
        o.resolution = (1 + next(&in)) / 256.0;
        o.max_states = mode & 8 ? 1 + next(&in) : 0;
        uint64_t bound = rp_motion_states_bound(checked, path, points, &o);
        rp_motion_result r;
        if (o.mode == RP_MOTION_DISCRETE || o.max_states) {
            s = rp_model_check_motion(checked, NULL, NULL, path, points, &o, &r, NULL);
            if (s == RP_OK || s == RP_ERR_LIMIT)
                FUZZ_CHECK(r.states_checked <= bound, "motion: %llu states, bound %llu",
                           (unsigned long long)r.states_checked, (unsigned long long)bound);
        }
    }
    walks_are_metered(&in, st, checked, kin);
    rp_model_free(e);
    rp_store_free(st);
    return 0;
}
