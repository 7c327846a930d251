/* SPDX-License-Identifier: MIT */
/*
 * Concurrency: queries on worker threads against store snapshots while
 * other clients mutate the scene they read (docs/ARCHITECTURE.md, Threads and versions; Revisions).
 *
 * Usage: test_daemon_concurrency PATH-TO-REPOSED
 *
 * reposed runs with --threads 2 (then 4).  A scene of random spheres and
 * capsules (2000 by default, fixed seed) and a frame-form robot model are
 * set up; then 8 client threads, each on its own connection (Unix and TCP
 * alternating), send for a few seconds a random mix, one request at a
 * time: scene.put of 1-3 shapes (new and existing ids), scene.remove,
 * puts into a second scene and its deletion, model.put of the same model
 * again (so the scene's revisions have gaps, and snapshots hold scenes and
 * models that are gone from the store), one scene.replace each for four of
 * them (small and large contents), and the
 * queries scene.distance (one `shape`, or `shapes` with `max_distance`),
 * scene.check, check and check.batch (1-6 configurations, now and then
 * 64-95, which the daemon splits across its threads).  Every request and
 * its reply line are recorded; nothing is checked while the clients run.
 *
 * Afterwards, in the main thread, one test per check below, each on the
 * run of its thread count (recorded by the first test that reads it):
 *   - every reply is a result with the request's id (a scene.delete of the
 *     second scene may find it gone);
 *   - mutation revisions are pairwise distinct, and strictly increase along
 *     each connection;
 *   - along each connection, the revisions its queries saw never go down
 *     and are at least that of its own last mutation of the scene (the
 *     snapshot is taken when the line is read, after the reply to the
 *     previous one);
 *   - every query names a revision that some mutation of the scene took
 *     (or its creation);
 *   - the scene's content is rebuilt at every revision by applying the
 *     mutations in revision order to an in-process store
 *     (include/repose/scene.h), a scene.remove's `removed` count checked on
 *     the way, and each query is evaluated against the content at the
 *     revision it names: scene.distance and scene.check by brute force over
 *     every shape with rp_shape_signed_distance; check and check.batch by
 *     brute force over every link/scene and link/link pair and with
 *     rp_model_check on the in-process store.  Distances must be equal
 *     bit for bit (the daemon prints shortest round-trip doubles, parsed
 *     back here), and the pairs it names must be the ones the tie rules of
 *     proto/PROTOCOL.md pick.
 *
 * Sizes: REPOSE_CONCURRENCY_SHAPES (scene size) and REPOSE_CONCURRENCY_MS
 * (how long the clients run) override the defaults, which are 2000 shapes
 * and 3000 ms, or 1000 shapes and 2000 ms under REPOSE_DAEMON_WRAPPER
 * (valgrind).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"
#include "repose/geometry.h"
#include "repose/scene.h"

/* A scene's shape as a pointer to a temporary (rp_scene_shape_at returns it
 * by value): valid to the end of the enclosing block. */
#define SCENE_SHAPE(sc, i) (&(rp_shape[1]){rp_scene_shape_at((sc), (i))}[0])

enum {
    N_CLIENTS = 8,
    N_FRAMES = 3,
    N_LINKS = 6,
    MAX_Q = 3,          /* query shapes per scene.distance / scene.check */
    MAX_CONFIGS = 6,    /* configurations per check.batch, mostly */
    BIG_BATCH = 64,     /* one batch in 64 has 64 .. 95: the daemon splits those
                         * across its threads (src/server/core/pool.c) */
    SCENE_HALF = 16,    /* shapes lie in [-16, 16]^3 (multiples of 1/8) */
    SMALL_REPLACE = 16, /* shapes of a small scene.replace */
};

/* ---- text (client threads use no cmocka call) -------------------------------------------- */

typedef struct sb {
    char *p;
    size_t len, cap;
} sb;

static void sb_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* ---- shapes and poses ---------------------------------------------------------------------- */

/* Multiples of 1/8 in [-half, half]: exact in binary, short in decimal. */
static double eighths(rng *r, int half)
{
    return ((int)rng_below(r, (unsigned)(16 * half + 1)) - 8 * half) / 8.0;
}

/* A sphere or a short capsule in the scene's cube, radius in [0, 1]. */
static rp_shape gen_shape(rng *r)
{
    double radius = rng_below(r, 17) / 16.0;
    rp_vec3 a = {eighths(r, SCENE_HALF), eighths(r, SCENE_HALF), eighths(r, SCENE_HALF)};
    rp_shape s;
    if (rng_below(r, 2) == 0) {
        rp_sphere sp;
        if (rp_sphere_new(a, radius, &sp) != RP_OK)
            abort();
        s = rp_shape_from_sphere(sp);
    } else {
        rp_vec3 b = {a.x + eighths(r, 2), a.y + eighths(r, 2), a.z + eighths(r, 2)};
        rp_capsule cp;
        if (rp_capsule_new(a, b, radius, &cp) != RP_OK)
            abort();
        s = rp_shape_from_capsule(cp);
    }
    return s;
}

static void vec_text(sb *b, rp_vec3 v)
{
    sb_printf(b, "[%.17g,%.17g,%.17g]", v.x, v.y, v.z);
}

static void shape_text(sb *b, const rp_shape *s)
{
    if (s->kind == RP_SHAPE_SPHERE) {
        sb_printf(b, "{\"sphere\":{\"center\":");
        vec_text(b, s->sphere.center);
        sb_printf(b, ",\"radius\":%.17g}}", s->sphere.radius);
    } else {
        sb_printf(b, "{\"capsule\":{\"a\":");
        vec_text(b, s->capsule.a);
        sb_printf(b, ",\"b\":");
        vec_text(b, s->capsule.b);
        sb_printf(b, ",\"radius\":%.17g}}", s->capsule.radius);
    }
}

/* The 24 unit quaternions whose components are 0, ±1/2 or ±1: their norm
 * is exactly 1, so normalising changes nothing, whoever does it. */
static void quat_of(int k, double q[4])
{
    if (k < 8) {
        q[0] = q[1] = q[2] = q[3] = 0;
        q[k / 2] = k % 2 ? -1 : 1;
    } else {
        for (int i = 0; i < 4; i++)
            q[i] = ((k - 8) >> i) & 1 ? -0.5 : 0.5;
    }
}

typedef struct pose {
    rp_vec3 t;
    int q; /* quat_of index */
} pose;

static void pose_text(sb *b, const pose *p)
{
    double q[4];
    quat_of(p->q, q);
    sb_printf(b, "{\"translation\":");
    vec_text(b, p->t);
    sb_printf(b, ",\"rotation\":{\"w\":%.17g,\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}", q[0], q[1],
              q[2], q[3]);
}

static rp_transform pose_tf(const pose *p)
{
    double q[4];
    quat_of(p->q, q);
    rp_transform tf;
    assert_int_equal(rp_transform_from_quaternion(p->t, q[0], q[1], q[2], q[3], &tf), RP_OK);
    return tf;
}

/* One configuration: the poses of the model's frames and maybe the base. */
typedef struct config {
    pose frames[N_FRAMES];
    bool has_base;
    pose base;
} config;

static rp_vec3 near(rng *r, rp_vec3 p)
{
    rp_vec3 v = {p.x + eighths(r, 1), p.y + eighths(r, 1), p.z + eighths(r, 1)};
    return v;
}

/* Frames close to each other somewhere in the scene, so that links touch
 * scene shapes and, now and then, each other. */
static void gen_config(rng *r, config *c)
{
    rp_vec3 p = {eighths(r, SCENE_HALF - 2), eighths(r, SCENE_HALF - 2),
                 eighths(r, SCENE_HALF - 2)};
    for (int f = 0; f < N_FRAMES; f++) {
        p = near(r, p);
        c->frames[f].t = p;
        c->frames[f].q = (int)rng_below(r, 24);
    }
    c->has_base = rng_below(r, 2) == 0;
    if (c->has_base) {
        c->base.t = near(r, c->frames[0].t);
        c->base.q = (int)rng_below(r, 24);
    }
}

static void config_text(sb *b, const config *c)
{
    sb_printf(b, "\"frames\":[");
    for (int f = 0; f < N_FRAMES; f++) {
        if (f)
            sb_printf(b, ",");
        pose_text(b, &c->frames[f]);
    }
    sb_printf(b, "]");
    if (c->has_base) {
        sb_printf(b, ",\"base\":");
        pose_text(b, &c->base);
    }
}

/* ---- the robot model (frame form) -------------------------------------------------------- */

typedef struct link_def {
    const char *id;
    int frame; /* -1: the base */
    bool capsule;
    rp_vec3 a, b;
    double radius;
} link_def;

static const link_def model_links[N_LINKS] = {
    {"base", -1, false, {0, 0, 0}, {0, 0, 0}, 0.5},
    {"upper", 0, true, {0, 0, 0}, {1, 0, 0}, 0.25},
    {"fore", 1, true, {0, 0, 0}, {1, 0, 0}, 0.25},
    {"pad", 1, false, {0.5, 0, 0}, {0, 0, 0}, 0.125},
    {"wrist", 2, false, {0, 0, 0}, {0, 0, 0}, 0.25},
    {"tool", 2, true, {0, 0, 0}, {0, 0, 0.5}, 0.125},
};
static const char *const model_allowed[] = {"upper", "fore", "fore", "wrist"};
#define N_ALLOWED 2
#define SAFETY_MARGIN 0.0625

static rp_shape link_shape(int i)
{
    const link_def *l = &model_links[i];
    rp_shape s;
    if (l->capsule) {
        rp_capsule c;
        assert_int_equal(rp_capsule_new(l->a, l->b, l->radius, &c), RP_OK);
        s = rp_shape_from_capsule(c);
    } else {
        rp_sphere sp;
        assert_int_equal(rp_sphere_new(l->a, l->radius, &sp), RP_OK);
        s = rp_shape_from_sphere(sp);
    }
    return s;
}

static bool allowed_pair(int i, int j)
{
    for (int k = 0; k < N_ALLOWED; k++) {
        const char *a = model_allowed[2 * k], *b = model_allowed[2 * k + 1];
        if ((!strcmp(a, model_links[i].id) && !strcmp(b, model_links[j].id)) ||
            (!strcmp(b, model_links[i].id) && !strcmp(a, model_links[j].id)))
            return true;
    }
    return false;
}

static char *model_put_request(int id)
{
    sb b = {0};
    sb_printf(&b,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"model.put\",\"params\":{"
              "\"model\":\"arm\",\"links\":[",
              id);
    for (int i = 0; i < N_LINKS; i++) {
        rp_shape s = link_shape(i);
        sb_printf(&b, "%s{\"id\":\"%s\",\"frame\":", i ? "," : "", model_links[i].id);
        if (model_links[i].frame < 0)
            sb_printf(&b, "null");
        else
            sb_printf(&b, "%d", model_links[i].frame);
        sb_printf(&b, ",\"shape\":");
        shape_text(&b, &s);
        sb_printf(&b, "}");
    }
    sb_printf(&b, "],\"allowed_pairs\":[");
    for (int k = 0; k < N_ALLOWED; k++)
        sb_printf(&b, "%s[\"%s\",\"%s\"]", k ? "," : "", model_allowed[2 * k],
                  model_allowed[2 * k + 1]);
    sb_printf(&b, "],\"safety_margin\":%.17g}}", SAFETY_MARGIN);
    return b.p;
}

static rp_model *put_local_model(rp_store *st)
{
    rp_link links[N_LINKS];
    for (int i = 0; i < N_LINKS; i++) {
        links[i].id = model_links[i].id;
        links[i].frame = model_links[i].frame;
        links[i].shape = link_shape(i);
    }
    rp_model_def def;
    memset(&def, 0, sizeof def);
    def.links = links;
    def.n_links = N_LINKS;
    def.safety_margin = SAFETY_MARGIN;
    def.allowed_pairs = model_allowed;
    def.n_allowed = N_ALLOWED;
    def.self_collision = true;
    rp_model *m = NULL;
    rp_model_error err;
    assert_int_equal(rp_store_model_put(st, "arm", &def, &m, &err), RP_OK);
    return m;
}

/* ---- recorded operations ------------------------------------------------------------------ */

typedef enum kind {
    K_CREATE,  /* the scene's creation (setup) */
    K_PUT,     /* scene.put into the scene */
    K_REMOVE,  /* scene.remove */
    K_REPLACE, /* scene.replace */
    K_AUX,     /* scene.put into another scene */
    K_AUX_DEL, /* scene.delete of that one (which may be gone: -32001) */
    K_MODEL,   /* model.put of the same model again: a new version */
    K_DIST,    /* scene.distance */
    K_SCHECK,  /* scene.check */
    K_CHECK,   /* check (n_cfg == 1) */
    K_BATCH    /* check.batch */
} kind;

static const char *const kind_names[] = {"scene.create",  "scene.put",       "scene.remove",
                                         "scene.replace", "scene.put (aux)", "scene.delete (aux)",
                                         "model.put",     "scene.distance",  "scene.check",
                                         "check",         "check.batch"};

static bool is_mutation(kind k)
{
    return k <= K_MODEL;
}

/* Mutations of the scene the queries read. */
static bool is_world_mutation(kind k)
{
    return k <= K_REPLACE;
}

typedef struct op {
    kind kind;
    int client, seq;
    /* mutations of the scene: shape ids (numbers, see shape_id) and, for
     * puts and replaces, their shapes */
    size_t n;
    int *ids;
    rp_shape *shapes;
    /* scene.distance / scene.check: one `shape` (nq == 0, in q[0]) or
     * `shapes` q0..q{nq-1} */
    int nq;
    rp_shape q[MAX_Q];
    bool has_max;
    double max_distance;
    double margin; /* scene.check; check with has_margin */
    bool first_only;
    /* check / check.batch */
    int n_cfg;
    config *cfg;
    rp_report report;
    bool has_margin;
    /* the reply */
    char *reply;
    cJSON *json;
    const cJSON *result;
    uint64_t revision;
} op;

static void shape_id(char out[16], int k)
{
    snprintf(out, 16, "s%05d", k);
}

static void op_free(op *o)
{
    free(o->ids);
    free(o->shapes);
    free(o->cfg);
    free(o->reply);
    cJSON_Delete(o->json);
}

/* ---- client threads ------------------------------------------------------------------------ */

typedef struct client {
    int index;
    rh_conn *conn;
    rng r;
    int id_space;         /* shape ids 0 .. id_space-1 */
    int big;              /* shapes of a large scene.replace */
    long long deadline;   /* ms */
    long long replace_at; /* ms; 0: no replace */
    bool replace_big;
    op *ops;
    size_t n_ops, cap;
    char err[512];
} client;

/* n distinct ids of the id space (n <= id_space), in random order. */
static int *distinct_ids(client *cl, size_t n)
{
    int *ids = xmalloc(n * sizeof *ids);
    if (n * 2 > (size_t)cl->id_space) {
        /* a large subset: shuffle the whole space, keep a prefix */
        int *all = xmalloc((size_t)cl->id_space * sizeof *all);
        for (int i = 0; i < cl->id_space; i++)
            all[i] = i;
        for (int i = cl->id_space - 1; i > 0; i--) {
            int j = (int)rng_below(&cl->r, (unsigned)i + 1), t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        memcpy(ids, all, n * sizeof *ids);
        free(all);
        return ids;
    }
    for (size_t i = 0; i < n; i++) {
        bool again;
        do {
            ids[i] = (int)rng_below(&cl->r, (unsigned)cl->id_space);
            again = false;
            for (size_t k = 0; k < i; k++)
                again |= ids[k] == ids[i];
        } while (again);
    }
    return ids;
}

static void head(sb *b, const op *o, const char *method)
{
    sb_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{", o->seq, method);
}

static void shapes_member(sb *b, const op *o)
{
    sb_printf(b, "\"shapes\":{");
    for (size_t i = 0; i < o->n; i++) {
        char sid[16];
        shape_id(sid, o->ids[i]);
        sb_printf(b, "%s\"%s\":", i ? "," : "", sid);
        shape_text(b, &o->shapes[i]);
    }
    sb_printf(b, "}");
}

static void gen_shapes(client *cl, op *o, size_t n)
{
    o->n = n;
    o->ids = distinct_ids(cl, n);
    o->shapes = xmalloc(n * sizeof *o->shapes);
    for (size_t i = 0; i < n; i++)
        o->shapes[i] = gen_shape(&cl->r);
}

static void query_shapes_member(sb *b, op *o, rng *r)
{
    if (rng_below(r, 2) == 0) {
        o->nq = 0;
        o->q[0] = gen_shape(r);
        sb_printf(b, ",\"shape\":");
        shape_text(b, &o->q[0]);
        return;
    }
    o->nq = 1 + (int)rng_below(r, MAX_Q);
    sb_printf(b, ",\"shapes\":{");
    /* ids written in a shuffled order: ties go by id, not by position */
    int order[MAX_Q] = {0, 1, 2};
    for (int i = o->nq - 1; i > 0; i--) {
        int j = (int)rng_below(r, (unsigned)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < o->nq; i++)
        o->q[i] = gen_shape(r);
    for (int i = 0; i < o->nq; i++) {
        sb_printf(b, "%s\"q%d\":", i ? "," : "", order[i]);
        shape_text(b, &o->q[order[i]]);
    }
    sb_printf(b, "}");
}

static const char *const report_names[] = {"first", "closest", "all"};

/* Picks the next operation of a client and writes its request line. */
static void gen_op(client *cl, op *o, sb *b)
{
    rng *r = &cl->r;
    o->client = cl->index;
    o->seq = (int)cl->n_ops + 1;
    if (cl->replace_at && rh_now_ms() >= cl->replace_at) {
        cl->replace_at = 0;
        o->kind = K_REPLACE;
        gen_shapes(cl, o, cl->replace_big ? (size_t)cl->big : SMALL_REPLACE);
        head(b, o, "scene.replace");
        sb_printf(b, "\"scene\":\"world\",");
        shapes_member(b, o);
        sb_printf(b, "}}");
        return;
    }
    /* The first two requests of each client are of given kinds, so that
     * every kind runs even when few requests do (valgrind); then a random
     * mix. */
    static const unsigned forced[N_CLIENTS][2] = {{0, 22}, {14, 23}, {21, 22}, {24, 23},
                                                  {50, 0}, {65, 14}, {84, 24}, {30, 50}};
    unsigned x = o->seq <= 2 ? forced[cl->index][o->seq - 1] : rng_below(r, 100);
    if (x < 14) {
        o->kind = K_PUT;
        gen_shapes(cl, o, 1 + rng_below(r, 3));
        head(b, o, "scene.put");
        sb_printf(b, "\"scene\":\"world\",");
        shapes_member(b, o);
        sb_printf(b, "}}");
    } else if (x < 21) {
        o->kind = K_REMOVE;
        o->n = 1 + rng_below(r, 3);
        o->ids = distinct_ids(cl, o->n);
        head(b, o, "scene.remove");
        sb_printf(b, "\"scene\":\"world\",\"ids\":[");
        for (size_t i = 0; i < o->n; i++) {
            char sid[16];
            shape_id(sid, o->ids[i]);
            sb_printf(b, "%s\"%s\"", i ? "," : "", sid);
        }
        sb_printf(b, "]}}");
    } else if (x == 22) {
        o->kind = K_AUX_DEL;
        head(b, o, "scene.delete");
        sb_printf(b, "\"scene\":\"aux\"}}");
    } else if (x == 23) {
        /* The same model again: checks running meanwhile keep the version
         * they hold, and a version no snapshot holds any more goes. */
        o->kind = K_MODEL;
        char *text = model_put_request(o->seq);
        sb_printf(b, "%s", text);
        free(text);
    } else if (x < 24) {
        o->kind = K_AUX;
        rp_shape s = gen_shape(r);
        head(b, o, "scene.put");
        sb_printf(b, "\"scene\":\"aux\",\"create\":true,\"shapes\":{\"c%d\":", cl->index);
        shape_text(b, &s);
        sb_printf(b, "}}}");
    } else if (x < 50) {
        o->kind = K_DIST;
        head(b, o, "scene.distance");
        sb_printf(b, "\"scene\":\"world\"");
        query_shapes_member(b, o, r);
        /* max_distance always with `shapes`, now and then with `shape` */
        o->has_max = o->nq > 0 || rng_below(r, 3) == 0;
        if (o->has_max) {
            o->max_distance = (4 + (int)rng_below(r, 21)) / 8.0; /* 0.5 .. 3 */
            sb_printf(b, ",\"max_distance\":%.17g", o->max_distance);
        }
        sb_printf(b, "}}");
    } else if (x < 65) {
        o->kind = K_SCHECK;
        head(b, o, "scene.check");
        sb_printf(b, "\"scene\":\"world\"");
        query_shapes_member(b, o, r);
        o->margin = (int)rng_below(r, 33) / 16.0; /* 0 .. 2 */
        o->first_only = rng_below(r, 4) == 0;
        sb_printf(b, ",\"margin\":%.17g", o->margin);
        if (o->first_only)
            sb_printf(b, ",\"first_only\":true");
        sb_printf(b, "}}");
    } else {
        bool batch = x >= 84;
        o->kind = batch ? K_BATCH : K_CHECK;
        o->n_cfg = !batch                                 ? 1
                   : rng_below(r, 64) == 0 || o->seq == 1 ? BIG_BATCH + (int)rng_below(r, 32)
                                                          : 1 + (int)rng_below(r, MAX_CONFIGS);
        o->cfg = xmalloc((size_t)o->n_cfg * sizeof *o->cfg);
        for (int k = 0; k < o->n_cfg; k++)
            gen_config(r, &o->cfg[k]);
        o->report = (rp_report)rng_below(r, 3);
        o->has_margin = rng_below(r, 2) == 0;
        o->margin = (int)rng_below(r, 17) / 16.0;
        head(b, o, batch ? "check.batch" : "check");
        sb_printf(b, "\"model\":\"arm\",\"scene\":\"world\",");
        if (batch) {
            sb_printf(b, "\"configurations\":[");
            for (int k = 0; k < o->n_cfg; k++) {
                sb_printf(b, "%s{", k ? "," : "");
                config_text(b, &o->cfg[k]);
                sb_printf(b, "}");
            }
            sb_printf(b, "]");
        } else {
            config_text(b, &o->cfg[0]);
        }
        sb_printf(b, ",\"report\":\"%s\"", report_names[o->report]);
        if (o->has_margin)
            sb_printf(b, ",\"margin\":%.17g", o->margin);
        sb_printf(b, "}}");
    }
}

static void *client_main(void *arg)
{
    client *cl = arg;
    sb req = {0};
    while (rh_now_ms() < cl->deadline) {
        if (cl->n_ops == cl->cap) {
            cl->cap = cl->cap ? cl->cap * 2 : 1024;
            cl->ops = realloc(cl->ops, cl->cap * sizeof *cl->ops);
            if (!cl->ops)
                abort();
        }
        op *o = &cl->ops[cl->n_ops];
        memset(o, 0, sizeof *o);
        req.len = 0;
        gen_op(cl, o, &req);
        const char *line;
        size_t len;
        rh_read_status st = RH_ERROR;
        if (rh_send_line(cl->conn, req.p))
            st = rh_read_line(cl->conn, rh_ms(RH_TIMEOUT_MS), &line, &len);
        if (st != RH_LINE) {
            snprintf(cl->err, sizeof cl->err, "client %d, request %d (%s): %s", cl->index, o->seq,
                     kind_names[o->kind],
                     st == RH_TIMEOUT ? "no reply in time"
                     : st == RH_EOF   ? "the daemon closed the connection"
                                      : "send or receive failed");
            op_free(o);
            break;
        }
        o->reply = xmalloc(len + 1);
        memcpy(o->reply, line, len);
        o->reply[len] = '\0';
        cl->n_ops++;
    }
    free(req.p);
    return NULL;
}

/* ---- checking one reply ------------------------------------------------------------------- */

/* The operation being checked, for failure messages. */
static const op *current;

static void fail_op(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail_op(const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (current)
        fail_msg("client %d, request %d (%s) at revision %llu: %s\n  reply: %.2000s",
                 current->client, current->seq, kind_names[current->kind],
                 (unsigned long long)current->revision, what,
                 current->reply ? current->reply : "-");
    fail_msg("%s", what);
    abort(); /* not reached */
}

static void want_number(const cJSON *v, double want, const char *what)
{
    if (!cJSON_IsNumber(v))
        fail_op("%s: not a number, want %.17g", what, want);
    if (!(v->valuedouble == want))
        fail_op("%s: %.17g, want %.17g (brute force)", what, v->valuedouble, want);
}

static void want_string(const cJSON *v, const char *want, const char *what)
{
    if (!cJSON_IsString(v))
        fail_op("%s: not a string, want \"%s\"", what, want);
    if (strcmp(v->valuestring, want) != 0)
        fail_op("%s: \"%s\", want \"%s\" (brute force)", what, v->valuestring, want);
}

static void want_bool(const cJSON *v, bool want, const char *what)
{
    if (!cJSON_IsBool(v) || cJSON_IsTrue(v) != want)
        fail_op("%s: want %s", what, want ? "true" : "false");
}

static uint64_t revision_of(const cJSON *v, const char *what)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        fail_op("%s is not a revision", what);
    return (uint64_t)v->valuedouble;
}

/* ---- brute force, with exact pruning ------------------------------------------------------- */

/* Every pair is looked at, but a pair whose bounding spheres are farther
 * apart than anything that could matter (the best so far, the threshold)
 * by more than PRUNE_SLACK skips the exact distance: its signed distance
 * is at least the spheres' gap, and the rounding of either computation is
 * below 1e-12 at these magnitudes (coordinates within 64 m). */
#define PRUNE_SLACK 1e-6

typedef struct bsphere {
    rp_vec3 c;
    double r;
} bsphere;

static bsphere bound_of(const rp_shape *s)
{
    bsphere b;
    if (s->kind == RP_SHAPE_SPHERE) {
        b.c = s->sphere.center;
        b.r = s->sphere.radius;
    } else {
        const rp_capsule *c = &s->capsule;
        b.c.x = (c->a.x + c->b.x) / 2;
        b.c.y = (c->a.y + c->b.y) / 2;
        b.c.z = (c->a.z + c->b.z) / 2;
        double dx = c->b.x - c->a.x, dy = c->b.y - c->a.y, dz = c->b.z - c->a.z;
        b.r = sqrt(dx * dx + dy * dy + dz * dz) / 2 + c->radius;
    }
    return b;
}

/* The gap between two bounding spheres: a lower bound of the distance. */
static double gap(const bsphere *a, const bsphere *b)
{
    double dx = a->c.x - b->c.x, dy = a->c.y - b->c.y, dz = a->c.z - b->c.z;
    return sqrt(dx * dx + dy * dy + dz * dz) - a->r - b->r;
}

/* The bounding spheres of the in-process scene's shapes, by storage index;
 * recomputed after every mutation that a query looks at. */
static bsphere *scene_bounds;
static size_t scene_bounds_cap;
static bool scene_bounds_stale = true;

static const bsphere *bounds_of_scene(const rp_scene *sc)
{
    size_t n = rp_scene_shape_count(sc);
    if (n > scene_bounds_cap) {
        scene_bounds_cap = 2 * n;
        free(scene_bounds);
        scene_bounds = xmalloc(scene_bounds_cap * sizeof *scene_bounds);
        scene_bounds_stale = true;
    }
    if (scene_bounds_stale) {
        for (size_t s = 0; s < n; s++)
            scene_bounds[s] = bound_of(SCENE_SHAPE(sc, s));
        scene_bounds_stale = false;
    }
    return scene_bounds;
}

/* ---- scene.distance and scene.check by brute force ---------------------------------------- */

typedef struct qpair {
    int q;    /* query index: q0, q1, q2 sort like their ids */
    size_t s; /* storage index in the in-process scene */
    double d;
} qpair;

static const rp_scene *cmp_scene; /* for the comparisons below */

/* Ties: the smaller query id, then the smaller shape id (byte order). */
static int qpair_cmp(const void *pa, const void *pb)
{
    const qpair *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    if (a->q != b->q)
        return a->q < b->q ? -1 : 1;
    return strcmp(rp_scene_id_at(cmp_scene, a->s), rp_scene_id_at(cmp_scene, b->s));
}

typedef struct qpairs {
    qpair *v;
    size_t n, cap;
} qpairs;

static void qpairs_push(qpairs *p, qpair x)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = realloc(p->v, p->cap * sizeof *p->v);
        assert_non_null(p->v);
    }
    p->v[p->n++] = x;
}

/* Every (query, scene shape) pair: the nearest (by the tie rules) in
 * *best (has = false when there is none), and those below `below`
 * (when collect) in *out, sorted. */
static void brute_pairs(const op *o, const rp_scene *sc, bool collect, double below, bool *has,
                        qpair *best, qpairs *out)
{
    size_t n = rp_scene_shape_count(sc);
    const bsphere *bounds = bounds_of_scene(sc);
    int nq = o->nq ? o->nq : 1;
    cmp_scene = sc;
    *has = false;
    for (int qi = 0; qi < nq; qi++) {
        bsphere qb = bound_of(&o->q[qi]);
        for (size_t s = 0; s < n; s++) {
            if (*has) {
                double limit = collect && below > best->d ? below : best->d;
                if (gap(&qb, &bounds[s]) > limit + PRUNE_SLACK)
                    continue;
            }
            qpair p = {qi, s, rp_shape_signed_distance(&o->q[qi], SCENE_SHAPE(sc, s))};
            if (!*has || qpair_cmp(&p, best) < 0) {
                *best = p;
                *has = true;
            }
            if (collect && p.d < below)
                qpairs_push(out, p);
        }
    }
    if (collect && out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, qpair_cmp);
}

static void expect_query_id(const cJSON *v, const op *o, int q, const char *what)
{
    if (o->nq == 0) {
        if (!cJSON_IsNull(v))
            fail_op("%s: want null (a single shape)", what);
        return;
    }
    char want[8];
    snprintf(want, sizeof want, "q%d", q);
    want_string(v, want, what);
}

/* pairs [{query, shape, distance}] equal to want, in order. */
static void expect_pairs(const cJSON *pairs, const op *o, const rp_scene *sc, const qpairs *want)
{
    if (!cJSON_IsArray(pairs))
        fail_op("pairs missing");
    size_t got = (size_t)cJSON_GetArraySize(pairs);
    if (got != want->n)
        fail_op("%zu pairs, want %zu (brute force)", got, want->n);
    size_t i = 0;
    for (const cJSON *p = pairs->child; p; p = p->next, i++) {
        char what[64];
        snprintf(what, sizeof what, "pairs[%zu].query", i);
        expect_query_id(at(p, "query"), o, want->v[i].q, what);
        snprintf(what, sizeof what, "pairs[%zu].shape", i);
        want_string(at(p, "shape"), rp_scene_id_at(sc, want->v[i].s), what);
        snprintf(what, sizeof what, "pairs[%zu].distance", i);
        want_number(at(p, "distance"), want->v[i].d, what);
    }
}

static void verify_distance(const op *o, const rp_scene *sc)
{
    bool has;
    qpair best = {0};
    qpairs below = {0};
    brute_pairs(o, sc, o->has_max, o->max_distance, &has, &best, &below);
    const cJSON *r = o->result;
    if (!has) {
        if (!cJSON_IsNull(at(r, "distance")) || !cJSON_IsNull(at(r, "nearest")))
            fail_op("distance and nearest must be null (no shape)");
    } else {
        want_number(at(r, "distance"), best.d, "distance");
        expect_query_id(at(r, "nearest.query"), o, best.q, "nearest.query");
        want_string(at(r, "nearest.shape"), rp_scene_id_at(sc, best.s), "nearest.shape");
    }
    if (o->has_max)
        expect_pairs(at(r, "pairs"), o, sc, &below);
    else if (at(r, "pairs"))
        fail_op("pairs without max_distance");
    free(below.v);
}

static void verify_scene_check(const op *o, const rp_scene *sc)
{
    bool has;
    qpair best = {0};
    qpairs below = {0};
    brute_pairs(o, sc, true, o->margin, &has, &best, &below);
    const cJSON *r = o->result;
    want_bool(at(r, "violates"), below.n > 0, "violates");
    const cJSON *pairs = at(r, "pairs");
    if (!o->first_only || below.n == 0) {
        expect_pairs(pairs, o, sc, &below);
    } else {
        /* The scan stops at the first violation it finds: any one will do,
         * but it must be one, with its exact distance. */
        if (!cJSON_IsArray(pairs) || cJSON_GetArraySize(pairs) != 1)
            fail_op("first_only: want exactly one pair");
        const cJSON *p = pairs->child;
        const cJSON *qid = at(p, "query"), *sid = at(p, "shape");
        bool found = false;
        for (size_t i = 0; i < below.n && !found; i++) {
            const qpair *w = &below.v[i];
            char qs[8];
            snprintf(qs, sizeof qs, "q%d", w->q);
            bool q_ok = o->nq == 0 ? cJSON_IsNull(qid)
                                   : cJSON_IsString(qid) && !strcmp(qid->valuestring, qs);
            if (q_ok && cJSON_IsString(sid) &&
                !strcmp(sid->valuestring, rp_scene_id_at(sc, w->s))) {
                want_number(at(p, "distance"), w->d, "pairs[0].distance");
                found = true;
            }
        }
        if (!found)
            fail_op("first_only: the pair named is not below the margin (brute force)");
    }
    free(below.v);
}

/* ---- check and check.batch by brute force --------------------------------------------------- */

typedef struct cpair {
    int link;
    bool self; /* other is a link index; else a scene storage index */
    size_t other;
    double d;
} cpair;

/* Ties: the first link in model order, scene pairs before self pairs, then
 * the smaller shape id or the other link that comes first. */
static int cpair_cmp(const void *pa, const void *pb)
{
    const cpair *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    if (a->self != b->self)
        return a->self ? 1 : -1;
    if (a->self)
        return a->other < b->other ? -1 : a->other > b->other;
    return strcmp(rp_scene_id_at(cmp_scene, a->other), rp_scene_id_at(cmp_scene, b->other));
}

typedef struct cpairs {
    cpair *v;
    size_t n, cap;
} cpairs;

static void cpairs_push(cpairs *p, cpair x)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = realloc(p->v, p->cap * sizeof *p->v);
        assert_non_null(p->v);
    }
    p->v[p->n++] = x;
}

static const char *other_id(const cpair *p, const rp_scene *sc)
{
    return p->self ? model_links[p->other].id : rp_scene_id_at(sc, p->other);
}

static void expect_cpair(const cJSON *v, const cpair *want, const rp_scene *sc, bool distance,
                         const char *what)
{
    char w[96];
    snprintf(w, sizeof w, "%s.link", what);
    want_string(at(v, "link"), model_links[want->link].id, w);
    snprintf(w, sizeof w, "%s.other", what);
    want_string(at(v, "other"), other_id(want, sc), w);
    snprintf(w, sizeof w, "%s.kind", what);
    want_string(at(v, "kind"), want->self ? "self" : "scene", w);
    if (distance) {
        snprintf(w, sizeof w, "%s.distance", what);
        want_number(at(v, "distance"), want->d, w);
    }
}

/* The library's own answer must be the brute force's too. */
static void compare_library(const rp_check_result *lib, bool has, const cpair *best,
                            const cpairs *viol, const op *o, int k)
{
    if (lib->collision != (viol->n > 0))
        fail_op("configuration %d: rp_model_check collision %d, brute force %d", k, lib->collision,
                viol->n > 0);
    if (o->report == RP_REPORT_FIRST)
        return;
    if (lib->has_min != has ||
        (has &&
         (lib->closest.distance != best->d || (int)lib->closest.link != best->link ||
          (lib->closest.kind == RP_PAIR_SELF) != best->self || lib->closest.other != best->other)))
        fail_op("configuration %d: rp_model_check's closest pair differs from the brute force's",
                k);
    if (o->report == RP_REPORT_ALL) {
        if (lib->n_violations != viol->n)
            fail_op("configuration %d: rp_model_check has %zu violations, brute force %zu", k,
                    lib->n_violations, viol->n);
        for (size_t i = 0; i < viol->n; i++)
            if (lib->violations[i].distance != viol->v[i].d ||
                (int)lib->violations[i].link != viol->v[i].link ||
                (lib->violations[i].kind == RP_PAIR_SELF) != viol->v[i].self ||
                lib->violations[i].other != viol->v[i].other)
                fail_op("configuration %d: rp_model_check's violation %zu differs", k, i);
    }
}

static void verify_config(const op *o, int k, const cJSON *r, const rp_scene *sc,
                          const rp_model *model)
{
    const config *c = &o->cfg[k];
    rp_transform frames[N_FRAMES], base = rp_transform_identity();
    for (int f = 0; f < N_FRAMES; f++)
        frames[f] = pose_tf(&c->frames[f]);
    if (c->has_base)
        base = pose_tf(&c->base);
    rp_shape w[N_LINKS];
    for (int i = 0; i < N_LINKS; i++) {
        rp_link_shape ls = {link_shape(i), model_links[i].frame};
        w[i] = rp_link_shape_transform_shape(&ls, ls.frame < 0 ? &base : &frames[ls.frame]);
    }
    double margin = o->has_margin ? o->margin : SAFETY_MARGIN;
    size_t n = rp_scene_shape_count(sc);
    const bsphere *bounds = bounds_of_scene(sc);
    cmp_scene = sc;
    bool has = false;
    cpair best = {0, false, 0, 0};
    cpairs viol = {0};
    for (int i = 0; i < N_LINKS; i++) {
        bsphere lb = bound_of(&w[i]);
        for (size_t s = 0; s < n; s++) {
            if (has && gap(&lb, &bounds[s]) > (margin > best.d ? margin : best.d) + PRUNE_SLACK)
                continue;
            cpair p = {i, false, s, rp_shape_signed_distance(&w[i], SCENE_SHAPE(sc, s))};
            if (!has || cpair_cmp(&p, &best) < 0) {
                best = p;
                has = true;
            }
            if (p.d < margin)
                cpairs_push(&viol, p);
        }
        for (int j = i + 1; j < N_LINKS; j++) {
            if (model_links[i].frame == model_links[j].frame || allowed_pair(i, j))
                continue;
            cpair p = {i, true, (size_t)j, rp_shape_signed_distance(&w[i], &w[j])};
            if (!has || cpair_cmp(&p, &best) < 0) {
                best = p;
                has = true;
            }
            if (p.d < margin)
                cpairs_push(&viol, p);
        }
    }
    if (viol.n > 1)
        qsort(viol.v, viol.n, sizeof *viol.v, cpair_cmp);

    /* The in-process API on the content at this revision. */
    rp_check_opts opts = {o->report, o->has_margin, o->margin, NULL, NULL, 0};
    rp_check_result lib;
    memset(&lib, 0, sizeof lib);
    assert_int_equal(
        rp_model_check(model, sc, c->has_base ? &base : NULL, frames, N_FRAMES, &opts, &lib),
        RP_OK);
    compare_library(&lib, has, &best, &viol, o, k);
    rp_check_result_free(&lib);

    char what[64];
    snprintf(what, sizeof what, "configuration %d: collision", k);
    want_bool(at(r, "collision"), viol.n > 0, what);
    const cJSON *v = at(r, "violations");
    if (o->report == RP_REPORT_FIRST) {
        if (at(r, "min_distance") || at(r, "closest"))
            fail_op("configuration %d: report first has no min_distance / closest", k);
        if (viol.n == 0) {
            if (v)
                fail_op("configuration %d: violations without a collision", k);
        } else {
            /* The fast path stops at the first violation found: any one,
             * with its exact distance. */
            if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 1)
                fail_op("configuration %d: report first wants one violation", k);
            bool found = false;
            for (size_t i = 0; i < viol.n && !found; i++) {
                const cpair *p = &viol.v[i];
                const cJSON *link = at(v->child, "link"), *other = at(v->child, "other"),
                            *kd = at(v->child, "kind");
                if (cJSON_IsString(link) && cJSON_IsString(other) && cJSON_IsString(kd) &&
                    !strcmp(link->valuestring, model_links[p->link].id) &&
                    !strcmp(other->valuestring, other_id(p, sc)) &&
                    !strcmp(kd->valuestring, p->self ? "self" : "scene")) {
                    snprintf(what, sizeof what, "configuration %d: violations[0]", k);
                    expect_cpair(v->child, p, sc, true, what);
                    found = true;
                }
            }
            if (!found)
                fail_op("configuration %d: the violation named is not one (brute force)", k);
        }
    } else {
        snprintf(what, sizeof what, "configuration %d: min_distance", k);
        want_number(at(r, "min_distance"), best.d, what);
        snprintf(what, sizeof what, "configuration %d: closest", k);
        expect_cpair(at(r, "closest"), &best, sc, false, what);
        if (o->report == RP_REPORT_ALL) {
            if (!cJSON_IsArray(v) || (size_t)cJSON_GetArraySize(v) != viol.n)
                fail_op("configuration %d: %d violations, want %zu (brute force)", k,
                        cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1, viol.n);
            size_t i = 0;
            for (const cJSON *p = v->child; p; p = p->next, i++) {
                snprintf(what, sizeof what, "configuration %d: violations[%zu]", k, i);
                expect_cpair(p, &viol.v[i], sc, true, what);
            }
        } else if (v) {
            fail_op("configuration %d: report closest has no violations", k);
        }
    }
    free(viol.v);
}

static void verify_check(const op *o, const rp_scene *sc, const rp_model *model)
{
    if (o->kind == K_CHECK) {
        verify_config(o, 0, o->result, sc, model);
        return;
    }
    const cJSON *results = at(o->result, "results");
    if (!cJSON_IsArray(results) || cJSON_GetArraySize(results) != o->n_cfg)
        fail_op("results: want %d", o->n_cfg);
    int k = 0;
    for (const cJSON *r = results->child; r; r = r->next, k++) {
        if (at(r, "scene_revision"))
            fail_op("results[%d] has a scene_revision", k);
        verify_config(o, k, r, sc, model);
    }
}

/* ---- the whole run ------------------------------------------------------------------------- */

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi)
        fail_msg("%s must be an integer from %d to %d", name, lo, hi);
    return (int)x;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_op_revision(const void *a, const void *b)
{
    const op *x = *(const op *const *)a, *y = *(const op *const *)b;
    if (x->revision != y->revision)
        return x->revision < y->revision ? -1 : 1;
    if (x->client != y->client)
        return x->client < y->client ? -1 : 1;
    return x->seq - y->seq;
}

/* Applies a mutation of the scene to the in-process store; checks
 * scene.remove's `removed` against it if check_removed. */
static void apply(rp_store *st, const op *o, bool check_removed)
{
    size_t n = o->n;
    rp_shape_put *puts = xmalloc(n * sizeof *puts);
    const char **ids = xmalloc(n * sizeof *ids);
    char(*names)[16] = xmalloc(n * sizeof *names);
    for (size_t i = 0; i < n; i++) {
        shape_id(names[i], o->ids[i]);
        ids[i] = names[i];
        if (o->shapes) {
            puts[i].id = names[i];
            puts[i].shape = o->shapes[i];
        }
    }
    switch (o->kind) {
    case K_CREATE:
        assert_int_equal(rp_store_create(st, "world", puts, n, NULL), RP_OK);
        break;
    case K_PUT:
        assert_int_equal(rp_store_put(st, "world", puts, n, NULL, false, NULL, NULL), RP_OK);
        break;
    case K_REPLACE:
        assert_int_equal(rp_store_replace(st, "world", puts, n, NULL, false, NULL, NULL), RP_OK);
        break;
    case K_REMOVE: {
        size_t removed = 0;
        assert_int_equal(rp_store_remove(st, "world", ids, n, NULL, NULL, &removed, NULL), RP_OK);
        if (check_removed)
            want_number(at(o->result, "removed"), (double)removed, "removed");
        break;
    }
    default:
        fail_msg("not a mutation of the scene");
    }
    free(puts);
    free(ids);
    free(names);
}

/* ---- one recorded run per thread count ------------------------------------------------------ */

/* A run of the clients against a daemon with `threads` worker threads, the
 * replies parsed: recorded once by the first test that asks for it, then
 * read by every test of that thread count. */
typedef struct recording {
    int threads, n_shapes, run_ms;
    enum { REC_NONE, REC_STARTED, REC_RECORDED, REC_PARSING, REC_PARSED } state;
    client cls[N_CLIENTS];
    op create;
    uint64_t model_rev;
    /* set by parsing: every op's result and revision, and */
    size_t n_ops, counts[K_BATCH + 1];
    uint64_t *mut_revs; /* the revisions mutations took (model, creation, clients'), */
    size_t n_mut;
    op **world; /* the mutations of the scene, the creation first, */
    size_t n_world;
    op **queries; /* and the queries */
    size_t n_query;
} recording;

static recording rec;

static void recording_free(void)
{
    free(rec.mut_revs);
    free(rec.world);
    free(rec.queries);
    for (int c = 0; c < N_CLIENTS; c++) {
        for (size_t i = 0; i < rec.cls[c].n_ops; i++)
            op_free(&rec.cls[c].ops[i]);
        free(rec.cls[c].ops);
    }
    op_free(&rec.create);
    free(scene_bounds);
    scene_bounds = NULL;
    scene_bounds_cap = 0;
    scene_bounds_stale = true;
    memset(&rec, 0, sizeof rec);
    current = NULL;
}

/* Starts reposed with `threads` worker threads, sets up the model and the
 * scene, lets the clients run, and stops the daemon: their requests and
 * reply lines are kept in rec. */
static void record(int threads)
{
    recording_free();
    rec.threads = threads;
    rec.state = REC_STARTED;
    const bool slow = rh_wrapped();
    const int n_shapes = env_int("REPOSE_CONCURRENCY_SHAPES", slow ? 1000 : 2000, 16, 1000000);
    const int run_ms = env_int("REPOSE_CONCURRENCY_MS", slow ? 2000 : 3000, 1, 600000);
    rec.n_shapes = n_shapes;
    rec.run_ms = run_ms;
    char tbuf[16];
    snprintf(tbuf, sizeof tbuf, "%d", threads);
    const char *const flags[] = {"--threads", tbuf, NULL};
    rh_daemon *d = start(flags);
    assert_true(rh_log_contains(d, threads == 1 ? "1 worker thread " : "worker threads"));
    rh_conn *setup = connect_ok(d, false);
    current = NULL;

    /* The model, then the scene. */
    char *text = model_put_request(1);
    cJSON *r = call_json(setup, text);
    free(text);
    if (!at(r, "result"))
        fail_msg("model.put failed: %s", show(r));
    rec.model_rev = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);

    op *create = &rec.create;
    create->kind = K_CREATE;
    create->client = -1;
    create->n = (size_t)n_shapes;
    create->ids = xmalloc(create->n * sizeof *create->ids);
    create->shapes = xmalloc(create->n * sizeof *create->shapes);
    rng seed = {20240601};
    sb b = {0};
    sb_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\",\"params\":{"
                  "\"scene\":\"world\",\"shapes\":{");
    for (int i = 0; i < n_shapes; i++) {
        char sid[16];
        create->ids[i] = i;
        create->shapes[i] = gen_shape(&seed);
        shape_id(sid, i);
        sb_printf(&b, "%s\"%s\":", i ? "," : "", sid);
        shape_text(&b, &create->shapes[i]);
    }
    sb_printf(&b, "}}}");
    create->json = call_json(setup, b.p);
    free(b.p);
    create->result = at(create->json, "result");
    if (!create->result)
        fail_msg("scene.create failed: %s", show(create->json));
    create->revision = revision_of(at(create->result, "revision"), "the creation's revision");
    assert_true(create->revision != rec.model_rev);

    /* The clients. */
    client *cls = rec.cls;
    pthread_t tids[N_CLIENTS];
    long long t0 = rh_now_ms();
    for (int c = 0; c < N_CLIENTS; c++) {
        client *cl = &cls[c];
        cl->index = c;
        cl->conn = connect_ok(d, c % 2 == 1);
        cl->r.s = 0x5eed0000u + (uint64_t)c * 7919u + (uint64_t)threads;
        cl->id_space = n_shapes + n_shapes / 2;
        cl->big = n_shapes;
        cl->deadline = t0 + run_ms;
        /* Clients 0, 2, 4, 6 replace the scene once, at 1/5 .. 4/5 of the
         * run: small, large, small, large. */
        if (c % 2 == 0) {
            cl->replace_at = t0 + (long long)run_ms * (c / 2 + 1) / 5;
            cl->replace_big = (c / 2) % 2 == 1;
        }
    }
    for (int c = 0; c < N_CLIENTS; c++)
        assert_int_equal(pthread_create(&tids[c], NULL, client_main, &cls[c]), 0);
    for (int c = 0; c < N_CLIENTS; c++)
        assert_int_equal(pthread_join(tids[c], NULL), 0);
    for (int c = 0; c < N_CLIENTS; c++)
        if (cls[c].err[0]) {
            rh_dump_log(d);
            fail_msg("%s", cls[c].err);
        }
    for (int c = 0; c < N_CLIENTS; c++) {
        rh_close(cls[c].conn);
        cls[c].conn = NULL;
    }
    rh_close(setup);
    stop_ok(d);
    rec.state = REC_RECORDED;
}

/* Every reply parsed: a result for the request's id that names its scene
 * (or model) and a revision.  Fills in rec's ops, counts and lists. */
static void parse_replies(void)
{
    rec.state = REC_PARSING;
    client *cls = rec.cls;
    size_t n_ops = 0;
    for (int c = 0; c < N_CLIENTS; c++)
        n_ops += cls[c].n_ops;
    rec.n_ops = n_ops;
    rec.mut_revs = xmalloc((n_ops + 2) * sizeof *rec.mut_revs);
    rec.world = xmalloc((n_ops + 1) * sizeof *rec.world);
    rec.queries = xmalloc((n_ops + 1) * sizeof *rec.queries);
    rec.mut_revs[rec.n_mut++] = rec.model_rev;
    rec.mut_revs[rec.n_mut++] = rec.create.revision;
    rec.world[rec.n_world++] = &rec.create;
    for (int c = 0; c < N_CLIENTS; c++) {
        for (size_t i = 0; i < cls[c].n_ops; i++) {
            op *o = &cls[c].ops[i];
            current = o;
            rec.counts[o->kind]++;
            o->json = cJSON_Parse(o->reply);
            if (!o->json)
                fail_op("the reply is not JSON");
            want_number(at(o->json, "id"), o->seq, "id");
            o->result = at(o->json, "result");
            if (o->kind == K_AUX_DEL && !o->result) {
                /* another client deleted it first: nothing changed */
                want_number(at(o->json, "error.code"), -32001, "error.code");
                continue;
            }
            if (!cJSON_IsObject(o->result))
                fail_op("the request failed");
            if (is_mutation(o->kind)) {
                if (o->kind == K_MODEL)
                    want_string(at(o->result, "model"), "arm", "model");
                else
                    want_string(at(o->result, "scene"),
                                is_world_mutation(o->kind) ? "world" : "aux", "scene");
                if (o->kind == K_AUX_DEL)
                    want_bool(at(o->result, "deleted"), true, "deleted");
                o->revision = revision_of(at(o->result, "revision"), "revision");
                rec.mut_revs[rec.n_mut++] = o->revision;
                if (is_world_mutation(o->kind))
                    rec.world[rec.n_world++] = o;
            } else {
                bool chk = o->kind == K_CHECK || o->kind == K_BATCH;
                o->revision = revision_of(at(o->result, chk ? "scene_revision" : "revision"),
                                          chk ? "scene_revision" : "revision");
                rec.queries[rec.n_query++] = o;
            }
        }
    }
    current = NULL;
    qsort(rec.world, rec.n_world, sizeof *rec.world, cmp_op_revision);
    qsort(rec.queries, rec.n_query, sizeof *rec.queries, cmp_op_revision);
    print_message("--threads %d, %d shapes, %d ms: %zu requests (%zu put, %zu remove, %zu replace, "
                  "%zu aux put, %zu aux delete, %zu model.put, %zu scene.distance, "
                  "%zu scene.check, %zu check, %zu check.batch)\n",
                  rec.threads, rec.n_shapes, rec.run_ms, n_ops, rec.counts[K_PUT],
                  rec.counts[K_REMOVE], rec.counts[K_REPLACE], rec.counts[K_AUX],
                  rec.counts[K_AUX_DEL], rec.counts[K_MODEL], rec.counts[K_DIST],
                  rec.counts[K_SCHECK], rec.counts[K_CHECK], rec.counts[K_BATCH]);
    rec.state = REC_PARSED;
}

/* The parsed run of the test's thread count (*state), recorded and parsed
 * now unless an earlier test did. */
static recording *run_of(void **state)
{
    int threads = *(const int *)*state;
    if (rec.threads == threads && (rec.state == REC_STARTED || rec.state == REC_PARSING))
        fail_msg("the run with --threads %d failed in an earlier test", threads);
    if (rec.threads != threads || rec.state == REC_NONE)
        record(threads);
    if (rec.state == REC_RECORDED)
        parse_replies();
    return &rec;
}

/* Does a reply of this kind get checked against the brute force? */
typedef bool (*query_filter)(kind k);

/* Replays the mutations of the scene in revision order into an in-process
 * store (checking scene.remove's `removed` if check_removed), and checks
 * each query that `verify` selects (none if NULL) against the content at
 * the revision it names, which must be one a mutation of the scene took. */
static void replay(const recording *rc, bool check_removed, query_filter verify)
{
    long long t0 = rh_now_ms();
    size_t verified = 0;
    rp_store *st = rp_store_new(NULL);
    assert_non_null(st);
    rp_model *model = put_local_model(st);
    size_t qi = 0;
    for (size_t m = 0; m < rc->n_world; m++) {
        current = rc->world[m];
        apply(st, rc->world[m], check_removed);
        scene_bounds_stale = true;
        const rp_scene *sc = rp_store_find(st, "world");
        assert_non_null(sc);
        for (; qi < rc->n_query && rc->queries[qi]->revision <= rc->world[m]->revision; qi++) {
            const op *o = current = rc->queries[qi];
            if (o->revision != rc->world[m]->revision)
                fail_op("no mutation of the scene took this revision");
            if (!verify || !verify(o->kind))
                continue;
            verified++;
            if (o->kind == K_DIST)
                verify_distance(o, sc);
            else if (o->kind == K_SCHECK)
                verify_scene_check(o, sc);
            else
                verify_check(o, sc, model);
        }
    }
    if (qi < rc->n_query) {
        current = rc->queries[qi];
        fail_op("no mutation of the scene took this revision");
    }
    current = NULL;
    if (verify)
        print_message("%zu replies equal to the brute force (checked in %lld ms)\n", verified,
                      rh_now_ms() - t0);
    rp_store_free(st);
}

static bool is_distance(kind k)
{
    return k == K_DIST;
}

static bool is_scene_check(kind k)
{
    return k == K_SCHECK;
}

static bool is_check(kind k)
{
    return k == K_CHECK;
}

static bool is_batch(kind k)
{
    return k == K_BATCH;
}

/* ---- the tests, each on the run of its thread count ------------------------------------------ */

/* -- the replies -- */

/* Every reply is a result for the request's id (a scene.delete of the
 * second scene may find it gone) naming its scene or model and a revision. */
static void every_reply_is_a_result_for_its_request_with_a_revision(void **state)
{
    run_of(state);
}

/* Something of each kind ran (and the replaces all did). */
static void every_kind_of_request_ran(void **state)
{
    const recording *rc = run_of(state);
    for (int k = K_PUT; k <= K_BATCH; k++)
        if (rc->counts[k] == 0)
            fail_msg("no %s ran in %d ms", kind_names[k], rc->run_ms);
}

/* -- revisions -- */

static void mutation_revisions_are_pairwise_distinct(void **state)
{
    recording *rc = run_of(state);
    uint64_t *revs = xmalloc(rc->n_mut * sizeof *revs);
    memcpy(revs, rc->mut_revs, rc->n_mut * sizeof *revs);
    qsort(revs, rc->n_mut, sizeof *revs, cmp_u64);
    for (size_t i = 1; i < rc->n_mut; i++)
        if (revs[i] == revs[i - 1]) {
            unsigned long long twice = revs[i];
            free(revs);
            fail_msg("two mutations took revision %llu", twice);
        }
    print_message("revisions %llu..%llu\n", (unsigned long long)revs[0],
                  (unsigned long long)revs[rc->n_mut - 1]);
    free(revs);
}

/* The ops of one connection in order, skipping a scene.delete that found
 * the second scene gone (it has no revision). */
static bool has_revision(const op *o)
{
    return o->kind != K_AUX_DEL || o->result;
}

static void mutation_revisions_strictly_increase_along_each_connection(void **state)
{
    const recording *rc = run_of(state);
    for (int c = 0; c < N_CLIENTS; c++) {
        uint64_t last_mut = 0;
        for (size_t i = 0; i < rc->cls[c].n_ops; i++) {
            const op *o = current = &rc->cls[c].ops[i];
            if (!has_revision(o) || !is_mutation(o->kind))
                continue;
            if (o->revision <= last_mut)
                fail_op("revision %llu after this connection's %llu",
                        (unsigned long long)o->revision, (unsigned long long)last_mut);
            last_mut = o->revision;
        }
    }
    current = NULL;
}

/* Along each connection, the revisions its queries saw never go down and
 * are at least that of its own last mutation of the scene (the snapshot is
 * taken when the line is read, after the reply to the previous one). */
static void queries_never_see_older_than_their_connection_saw_or_wrote(void **state)
{
    const recording *rc = run_of(state);
    for (int c = 0; c < N_CLIENTS; c++) {
        uint64_t last_world = rc->create.revision, last_query = 0;
        for (size_t i = 0; i < rc->cls[c].n_ops; i++) {
            const op *o = current = &rc->cls[c].ops[i];
            if (!has_revision(o))
                continue;
            if (is_mutation(o->kind)) {
                if (is_world_mutation(o->kind))
                    last_world = o->revision;
                continue;
            }
            if (o->revision < last_query || o->revision < last_world)
                fail_op("saw revision %llu after this connection saw %llu and wrote %llu",
                        (unsigned long long)o->revision, (unsigned long long)last_query,
                        (unsigned long long)last_world);
            last_query = o->revision;
        }
    }
    current = NULL;
}

/* Every query names a revision that some mutation of the scene took (or
 * its creation). */
static void every_query_names_a_revision_a_mutation_of_the_scene_took(void **state)
{
    replay(run_of(state), false, NULL);
}

/* -- the content at each revision, against the brute force -- */

/* Replaying the mutations in revision order, each scene.remove's `removed`
 * is the count of its ids the scene held. */
static void scene_remove_counts_the_shapes_the_scene_held(void **state)
{
    replay(run_of(state), true, NULL);
}

/* scene.distance (one `shape`, or `shapes` with `max_distance`) by brute
 * force over every shape: distances bit for bit, the pairs the tie rules
 * pick. */
static void scene_distance_equals_the_brute_force_at_its_revision(void **state)
{
    replay(run_of(state), false, is_distance);
}

static void scene_check_equals_the_brute_force_at_its_revision(void **state)
{
    replay(run_of(state), false, is_scene_check);
}

/* check by brute force over every link/scene and link/link pair, and with
 * rp_model_check on the in-process store. */
static void check_equals_the_brute_force_and_the_library_at_its_revision(void **state)
{
    replay(run_of(state), false, is_check);
}

/* check.batch (1-6 configurations, now and then 64-95, which the daemon
 * splits across its threads): each result as check's. */
static void check_batch_equals_the_brute_force_and_the_library_at_its_revision(void **state)
{
    replay(run_of(state), false, is_batch);
}

static int two = 2, four = 4;

/* Every test once on the run with --threads 2, then on the run with 4. */
#define ON_RUN(threads, f)                                                                         \
    {                                                                                              \
        "threads_" #threads ": " #f, f, NULL, rh_teardown, &threads                                \
    }
#define ON_RUNS(threads)                                                                           \
    ON_RUN(threads, every_reply_is_a_result_for_its_request_with_a_revision),                      \
        ON_RUN(threads, every_kind_of_request_ran),                                                \
        ON_RUN(threads, mutation_revisions_are_pairwise_distinct),                                 \
        ON_RUN(threads, mutation_revisions_strictly_increase_along_each_connection),               \
        ON_RUN(threads, queries_never_see_older_than_their_connection_saw_or_wrote),               \
        ON_RUN(threads, every_query_names_a_revision_a_mutation_of_the_scene_took),                \
        ON_RUN(threads, scene_remove_counts_the_shapes_the_scene_held),                            \
        ON_RUN(threads, scene_distance_equals_the_brute_force_at_its_revision),                    \
        ON_RUN(threads, scene_check_equals_the_brute_force_at_its_revision),                       \
        ON_RUN(threads, check_equals_the_brute_force_and_the_library_at_its_revision),             \
        ON_RUN(threads, check_batch_equals_the_brute_force_and_the_library_at_its_revision)

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {ON_RUNS(two), ON_RUNS(four)};
    int status = run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
    recording_free();
    return status;
}
