/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests of objects in scenes (proto/PROTOCOL.md, "Objects"): rigid
 * groups of shapes with a pose, put, moved, queried with `ignore`,
 * watched, removed by name and kept across a kill -9, against the real
 * reposed over its real socket.
 *
 * Usage: test_daemon_objects PATH-TO-REPOSED
 *
 * World shapes are checked against the library evaluated in this process:
 * an object's shape "o/id" is rp_transform_shape(pose, local) for the
 * pose and local shape scene.get returns (decoded with the daemon's own
 * codec), bit for bit, and every distance equals a brute-force evaluation
 * over the world shapes at the revision the reply reports.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "codec/codec.h"
#include "daemon_util.h"
#include "harness.h"

static int next_id = 1;

/* Writes method(params) as one request line (the caller frees). */
static char *request(const char *method, const char *params_fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, params_fmt, ap2);
    va_end(ap2);
    char *params = malloc((size_t)n + 1);
    assert_non_null(params);
    vsnprintf(params, (size_t)n + 1, params_fmt, ap);
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", next_id++,
              method, params);
    free(params);
    return t.p;
}

static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    char *line = request(method, params_fmt, ap);
    va_end(ap);
    cJSON *r = call_json(c, line);
    free(line);
    return r;
}

/* Sends a request without reading its reply. */
static void post(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    char *line = request(method, params_fmt, ap);
    va_end(ap);
    size_t n = strlen(line);
    line[n] = '\n'; /* (tb_printf leaves room for the NUL) */
    send_raw(c, line, n + 1);
    free(line);
}

static const cJSON *result_of(const cJSON *r)
{
    const cJSON *res = at(r, "result");
    if (!res) {
        char *s = show(r);
        fail_msg("want a result, got %s", s);
    }
    return res;
}

static void ok(rh_conn *c, const char *method, const char *params)
{
    cJSON *r = rpc(c, method, "%s", params);
    result_of(r);
    cJSON_Delete(r);
}

static uint64_t revision_of(rh_conn *c, const char *scene)
{
    cJSON *r = rpc(c, "scene.get", "{\"scene\":\"%s\",\"ids\":[]}", scene);
    uint64_t rev = (uint64_t)num_at(result_of(r), "revision");
    cJSON_Delete(r);
    return rev;
}

static rp_transform pose_of(const cJSON *j)
{
    rp_transform tf;
    rp_codec_err err;
    if (!rp_codec_pose(j, "pose", &tf, &err))
        fail_msg("a pose the codec refuses: %s at %s", err.reason, err.path);
    return tf;
}

static rp_shape shape_of(const cJSON *j)
{
    rp_shape s;
    rp_codec_err err;
    if (!rp_codec_shape(j, "shape", &s, &err))
        fail_msg("a shape the codec refuses: %s at %s", err.reason, err.path);
    return s;
}

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

#define CRATE                                                                                      \
    "{\"pose\":{\"translation\":[1,0,0.5],\"rotation\":{\"w\":0.8,\"x\":0,\"y\":0,\"z\":0.6}},"    \
    "\"shapes\":{\"lid\":{\"box\":{\"center\":[0,0,0.3],\"half_extents\":[0.3,0.2,0.02]}},"        \
    "\"ball\":{\"sphere\":{\"center\":[0.1,0,0],\"radius\":0.1}},"                                 \
    "\"rod\":{\"capsule\":{\"a\":[0,0,0],\"b\":[0,0.4,0],\"radius\":0.05}}}}"

/* Every world shape of every object equals rp_transform_shape(pose,
 * local) of what scene.get returns, bit for bit; the scene's own shapes
 * are listed apart from them.  Returns the number of world shapes. */
static size_t check_world_shapes(rh_conn *c, const char *scene)
{
    cJSON *g = rpc(c, "scene.get", "{\"scene\":\"%s\"}", scene);
    const cJSON *objs = at(result_of(g), "objects"), *o;
    size_t n = (size_t)cJSON_GetArraySize(at(result_of(g), "shapes"));
    cJSON_ArrayForEach(o, objs)
    {
        rp_transform pose = pose_of(at(o, "pose"));
        const cJSON *s;
        cJSON_ArrayForEach(s, at(o, "shapes"))
        {
            rp_shape local = shape_of(s), want = rp_transform_shape(&pose, &local);
            cJSON *w = rpc(c, "scene.get", "{\"scene\":\"%s\",\"ids\":[\"%s/%s\"]}", scene,
                           o->string, s->string);
            const cJSON *ws = at(result_of(w), "shapes")->child;
            assert_non_null(ws);
            rp_shape got = shape_of(ws);
            if (!same_shape(&got, &want)) {
                char *t = show(w);
                fail_msg("world shape of %s/%s differs: %s", o->string, s->string, t);
            }
            cJSON_Delete(w);
            n++;
        }
    }
    cJSON_Delete(g);
    return n;
}

/* Objects come back with their pose in matrix form and their shapes in
 * their own frame; their world shapes are the library's; a scene.get
 * reply put back changes nothing (same bits). */
static void objects_come_back_and_their_world_shapes_are_exact(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"floor\":{\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}"
       "},"
       "\"objects\":{\"crate\":" CRATE "}}");
    assert_int_equal(check_world_shapes(c, "cell"), 4);
    cJSON *g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    const cJSON *crate = at(result_of(g), "objects.crate");
    assert_non_null(at(crate, "pose.matrix"));
    assert_int_equal(cJSON_GetArraySize(at(result_of(g), "shapes")), 1); /* the floor */
    /* Put back as read (the reply's own text: cJSON would print the
     * numbers shorter than they are): the same bits, one more revision. */
    const char *raw = call_line(
        c,
        "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"scene.get\",\"params\":{\"scene\":\"cell\"}}");
    const char *from = strstr(raw, "\"crate\":");
    assert_non_null(from);
    from += strlen("\"crate\":");
    size_t len = 0;
    for (int depth = 0; from[len]; len++) {
        depth += (from[len] == '{') - (from[len] == '}');
        if (depth == 0)
            break;
    }
    char *text = strndup(from, len + 1);
    uint64_t rev = revision_of(c, "cell");
    cJSON *r = rpc(c, "scene.put", "{\"scene\":\"cell\",\"objects\":{\"crate\":%s}}", text);
    assert_int_equal((uint64_t)num_at(result_of(r), "revision"), rev + 1);
    cJSON_Delete(r);
    free(text);
    cJSON *g2 = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    if (!json_same(at(result_of(g), "objects"), at(result_of(g2), "objects"))) {
        char *x = show(g), *y = show(g2);
        fail_msg("put back as read, objects changed:\n%s\n%s", x, y);
    }
    cJSON_Delete(g);
    cJSON_Delete(g2);
    /* A put with fewer shapes drops the others. */
    ok(c, "scene.put",
       "{\"scene\":\"cell\",\"objects\":{\"crate\":{\"shapes\":{\"ball\":{\"sphere\":{\"center\":"
       "[0,0,0],\"radius\":0.2}}}}}}");
    cJSON *gone = rpc(c, "scene.get", "{\"scene\":\"cell\",\"ids\":[\"crate/lid\"]}");
    expect_error(gone, -32001, NULL); /* (frees it) */
    assert_int_equal(check_world_shapes(c, "cell"), 2);
    rh_close(c);
    stop_ok(d);
}

/* Brute force over the world shapes: the nearest distance from a sphere
 * at p, leaving out ignored objects' shapes (id prefix "name/"). */
static double brute_distance(rh_conn *c, const char *scene, rp_vec3 p, const char *ignored)
{
    cJSON *g = rpc(c, "scene.get", "{\"scene\":\"%s\"}", scene);
    double best = INFINITY;
    rp_shape q;
    q.kind = RP_SHAPE_SPHERE;
    q.sphere.center = p;
    q.sphere.radius = 0.05;
    const cJSON *s, *o;
    cJSON_ArrayForEach(s, at(result_of(g), "shapes"))
    {
        rp_shape sh = shape_of(s);
        best = fmin(best, rp_shape_signed_distance(&q, &sh));
    }
    cJSON_ArrayForEach(o, at(result_of(g), "objects"))
    {
        if (ignored && strcmp(o->string, ignored) == 0)
            continue;
        rp_transform pose = pose_of(at(o, "pose"));
        cJSON_ArrayForEach(s, at(o, "shapes"))
        {
            rp_shape local = shape_of(s), w = rp_transform_shape(&pose, &local);
            best = fmin(best, rp_shape_signed_distance(&q, &w));
        }
    }
    cJSON_Delete(g);
    return best;
}

/* A move takes one revision whatever it moves, watchers hear `moved`
 * (poses, no shapes), and queries see the new places; `ignore` leaves an
 * object out. */
static void moves_take_one_revision_and_queries_follow(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *w = connect_ok(d, false);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[0,3,0],\"b\":[0,3,1],"
       "\"radius\":0.1}}},\"objects\":{\"crate\":" CRATE ",\"tray\":" CRATE "}}");
    ok(w, "scene.watch", "{\"scene\":\"cell\"}");
    uint64_t rev = revision_of(c, "cell");
    cJSON *r = rpc(c, "scene.move",
                   "{\"scene\":\"cell\",\"objects\":{\"crate\":{\"translation\":[2,2,0]},"
                   "\"tray\":{\"matrix\":[[0,-1,0,-1],[1,0,0,0],[0,0,1,0.25]]}}}");
    assert_int_equal((uint64_t)num_at(result_of(r), "revision"), rev + 1);
    cJSON_Delete(r);
    cJSON *n = read_json(w);
    assert_string_equal(str_at(n, "method"), "scene.changed");
    assert_int_equal((uint64_t)num_at(n, "params.revision"), rev + 1);
    assert_int_equal(cJSON_GetArraySize(at(n, "params.put")), 0);
    assert_non_null(at(n, "params.moved.crate.matrix"));
    rp_transform tray = pose_of(at(n, "params.moved.tray"));
    assert_true(tray.r[0][1] == -1 && tray.t.z == 0.25);
    cJSON_Delete(n);
    check_world_shapes(c, "cell");
    for (int k = 0; k < 12; k++) {
        rp_vec3 p = {k % 4 - 1.5, (k * 7) % 5 - 2.0, (k % 3) * 0.4};
        const char *ign = k % 3 == 0 ? NULL : k % 3 == 1 ? "crate" : "tray";
        char ignore[64] = "";
        if (ign)
            snprintf(ignore, sizeof ignore, ",\"ignore\":[\"%s\"]", ign);
        r = rpc(c, "scene.distance",
                "{\"scene\":\"cell\",\"shape\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],"
                "\"radius\":0.05}}%s}",
                p.x, p.y, p.z, ignore);
        double got = num_at(result_of(r), "distance");
        const char *nearest = str_at(result_of(r), "nearest.shape");
        if (ign)
            assert_true(strncmp(nearest, ign, strlen(ign)) != 0);
        assert_true(got == brute_distance(c, "cell", p, ign));
        cJSON_Delete(r);
    }
    /* Removal by name: the object goes, counted once, watchers told. */
    r = rpc(c, "scene.remove", "{\"scene\":\"cell\",\"ids\":[\"tray\",\"post\",\"nope\"]}");
    assert_int_equal(num_at(result_of(r), "removed"), 2);
    cJSON_Delete(r);
    n = read_json(w);
    char *removed = cJSON_PrintUnformatted(at(n, "params.removed"));
    assert_string_equal(removed, "[\"post\",\"tray\"]");
    free(removed);
    cJSON_Delete(n);
    assert_int_equal(check_world_shapes(c, "cell"), 3);
    /* A replace with objects, the old objects gone first (a scene without
     * objects before it: the watcher's record once dereferenced NULL). */
    r = rpc(c, "scene.remove", "{\"scene\":\"cell\",\"ids\":[\"crate\"]}");
    cJSON_Delete(r);
    cJSON_Delete(read_json(w));
    ok(c, "scene.replace",
       "{\"scene\":\"cell\",\"shapes\":{\"b\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}},"
       "\"objects\":{\"lamp\":" CRATE "}}");
    n = read_json(w);
    assert_non_null(at(n, "params.objects.lamp.pose.matrix"));
    assert_non_null(at(n, "params.put.b"));
    cJSON_Delete(n);
    ok(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{}}");
    n = read_json(w);
    removed = cJSON_PrintUnformatted(at(n, "params.removed"));
    assert_string_equal(removed, "[\"b\",\"lamp\"]");
    free(removed);
    cJSON_Delete(n);
    rh_close(w);
    rh_close(c);
    stop_ok(d);
}

/* Bad input: a clear error with the path, nothing changed. */
static void bad_objects_are_refused_with_a_path(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"wall\":{\"sphere\":{\"center\":[0,5,0],\"radius\":1}}},"
       "\"objects\":{\"crate\":" CRATE "}}");
    uint64_t rev = revision_of(c, "cell");
    static const struct {
        const char *method, *params, *path;
        int code;
    } bad[] = {
        {"scene.move", "{\"scene\":\"cell\",\"objects\":{\"nope\":{}}}", NULL, -32001},
        {"scene.move", "{\"scene\":\"cell\",\"objects\":{\"crate\":{\"translation\":[0,0]}}}",
         "params.objects.crate.translation", -32602},
        {"scene.move",
         "{\"scene\":\"cell\",\"objects\":{\"crate\":{\"rotation\":{\"w\":2,\"x\":0,\"y\":0,"
         "\"z\":0}}}}",
         "params.objects.crate.rotation", -32602},
        {"scene.move", "{\"scene\":\"cell\",\"objects\":[]}", "params.objects", -32602},
        {"scene.move", "{\"scene\":\"cell\"}", "params", -32602},
        {"scene.move", "{\"scene\":\"cell\",\"objects\":{},\"if_revision\":999}", NULL, -32003},
        {"scene.put", "{\"scene\":\"cell\",\"objects\":{\"a/b\":{\"shapes\":{}}}}",
         "params.objects.a/b", -32602},
        {"scene.put", "{\"scene\":\"cell\",\"objects\":{\"wall\":{\"shapes\":{}}}}",
         "params.objects.wall", -32602},
        {"scene.put",
         "{\"scene\":\"cell\",\"shapes\":{\"crate/x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":"
         "1}}}}",
         "params.shapes.crate/x", -32602},
        {"scene.put", "{\"scene\":\"cell\",\"objects\":{\"o\":{\"pose\":{},\"shape\":{}}}}",
         "params.objects.o.shape", -32602},
        {"scene.put", "{\"scene\":\"cell\",\"objects\":{\"o\":{}}}", "params.objects.o.shapes",
         -32602},
        {"scene.put",
         "{\"scene\":\"cell\",\"objects\":{\"o\":{\"shapes\":{\"s\":{\"sphere\":{\"center\":[0,0,"
         "0],\"radius\":-1}}}}}}",
         "params.objects.o.shapes.s.sphere.radius", -32602},
        {"scene.put",
         "{\"scene\":\"cell\",\"objects\":{\"o\":{\"pose\":{\"translation\":[1e308,0,0]},"
         "\"shapes\":{\"s\":{\"sphere\":{\"center\":[1e308,0,0],\"radius\":1}}}}}}",
         "params.objects.o.shapes.s", -32602},
        {"scene.remove", "{\"scene\":\"cell\",\"ids\":[\"crate/lid\"]}", "params.ids[0]", -32602},
        {"scene.distance",
         "{\"scene\":\"cell\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0}},"
         "\"ignore\":[\"wall\"]}",
         NULL, -32001},
        {"scene.distance",
         "{\"scene\":\"cell\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0}},"
         "\"ignore\":\"crate\"}",
         "params.ignore", -32602},
        {"scene.check",
         "{\"scene\":\"cell\",\"margin\":0,\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":"
         "0}},\"ignore\":[1]}",
         "params.ignore[0]", -32602},
    };
    rh_conn *pinger = connect_ok(d, true);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *r = rpc(c, bad[i].method, "%s", bad[i].params);
        if (!at(r, "error")) {
            char *s = show(r);
            fail_msg("%s %s: want an error, got %s", bad[i].method, bad[i].params, s);
        }
        expect_error(r, bad[i].code, bad[i].path); /* (frees r) */
        expect_pong(pinger);
    }
    assert_int_equal(revision_of(c, "cell"), rev);
    assert_int_equal(check_world_shapes(c, "cell"), 4);
    rh_close(pinger);
    rh_close(c);
    stop_ok(d);
}

/* Two clients, each owning an object, move it and ask for distances
 * leaving it out, their requests pipelined so that they interleave in
 * the daemon; every reply equals a brute-force evaluation over the world
 * at the revision it reports (the table and the other object's shapes at
 * its pose then, known from a watcher's log of the moves). */
static void two_clients_moving_their_objects_get_consistent_replies(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *w = connect_ok(d, false);
    rh_conn *a = connect_ok(d, false), *b = connect_ok(d, true);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"table\":{\"box\":{\"center\":[0,0,0.7],"
       "\"half_extents\":[0.6,0.4,0.05]}}},\"objects\":{\"arm1\":" CRATE ",\"arm2\":" CRATE "}}");
    ok(w, "scene.watch", "{\"scene\":\"cell\"}");
    /* The world's pieces, as stored. */
    cJSON *g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rp_shape table = shape_of(at(result_of(g), "shapes.table")), local[8];
    rp_transform start_pose = pose_of(at(result_of(g), "objects.arm1.pose"));
    size_t n_local = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, at(result_of(g), "objects.arm1.shapes")) local[n_local++] = shape_of(s);
    cJSON_Delete(g);
    enum { ROUNDS = 20 };
    uint64_t rev0 = revision_of(c, "cell");
    for (int r = 0; r < ROUNDS; r++) {
        post(a, "scene.move",
             "{\"scene\":\"cell\",\"objects\":{\"arm1\":{\"translation\":[%d,0,0.5]}}}", r % 5 - 2);
        post(a, "scene.distance",
             "{\"scene\":\"cell\",\"shape\":{\"sphere\":{\"center\":[0,0,0.5],\"radius\":0.1}},"
             "\"ignore\":[\"arm1\"]}");
        post(b, "scene.move",
             "{\"scene\":\"cell\",\"objects\":{\"arm2\":{\"translation\":[0,%d,0.5]}}}",
             (r * 3) % 5 - 2);
        post(b, "scene.distance",
             "{\"scene\":\"cell\",\"shape\":{\"sphere\":{\"center\":[0,0,0.5],\"radius\":0.1}},"
             "\"ignore\":[\"arm2\"]}");
    }
    /* The watcher's log: 2 * ROUNDS moves, in revision order; pose[i][k]
     * is arm i+1's pose after the k-th. */
    static rp_transform pose[2][2 * ROUNDS + 1];
    pose[0][0] = pose[1][0] = start_pose;
    for (int k = 1; k <= 2 * ROUNDS; k++) {
        cJSON *n = read_json(w);
        assert_int_equal((uint64_t)num_at(n, "params.revision"), rev0 + (uint64_t)k);
        const cJSON *m[2] = {at(n, "params.moved.arm1"), at(n, "params.moved.arm2")};
        for (int i = 0; i < 2; i++)
            pose[i][k] = m[i] ? pose_of(m[i]) : pose[i][k - 1];
        cJSON_Delete(n);
    }
    rp_shape q;
    q.kind = RP_SHAPE_SPHERE;
    q.sphere.center = (rp_vec3){0, 0, 0.5};
    q.sphere.radius = 0.1;
    rh_conn *who[2] = {a, b};
    int seen = 0;
    for (int side = 0; side < 2; side++) {
        for (int r = 0; r < 2 * ROUNDS; r++) {
            cJSON *rep = read_json(who[side]);
            const cJSON *res = result_of(rep);
            if (!at(res, "distance")) {
                cJSON_Delete(rep);
                continue; /* a move's reply */
            }
            uint64_t rv = (uint64_t)num_at(res, "revision");
            assert_true(rv >= rev0 && rv <= rev0 + 2 * ROUNDS);
            const rp_transform *other = &pose[1 - side][rv - rev0];
            double want = rp_shape_signed_distance(&q, &table);
            for (size_t k = 0; k < n_local; k++) {
                rp_shape wsh = rp_transform_shape(other, &local[k]);
                want = fmin(want, rp_shape_signed_distance(&q, &wsh));
            }
            double got = num_at(res, "distance");
            if (got != want)
                fail_msg("side %d at revision %llu: distance %.17g, brute force %.17g", side,
                         (unsigned long long)rv, got, want);
            assert_true(strncmp(str_at(res, "nearest.shape"), side == 0 ? "arm1/" : "arm2/", 5) !=
                        0);
            seen++;
            cJSON_Delete(rep);
        }
    }
    assert_int_equal(seen, 2 * ROUNDS);
    rh_close(a);
    rh_close(b);
    rh_close(w);
    rh_close(c);
    stop_ok(d);
}

/* Objects and their moves survive kill -9: the journal replays them to
 * the same bits. */
static void objects_survive_kill_9(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    const char *extra[] = {"--data-dir", dir, "--fsync", "always", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    ok(c, "scene.create", "{\"scene\":\"cell\",\"objects\":{\"crate\":" CRATE "}}");
    ok(c, "scene.move",
       "{\"scene\":\"cell\",\"objects\":{\"crate\":{\"translation\":[0.1,0.2,0.3],\"rotation\":"
       "{\"w\":0.36,\"x\":0.48,\"y\":0.64,\"z\":0.48}}}}");
    ok(c, "scene.put", "{\"scene\":\"cell\",\"objects\":{\"tray\":" CRATE "}}");
    ok(c, "scene.remove", "{\"scene\":\"cell\",\"ids\":[\"tray\"]}");
    ok(c, "scene.put", "{\"scene\":\"cell\",\"objects\":{\"lamp\":" CRATE "}}");
    cJSON *before = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rh_close(c);
    rh_signal(d, SIGKILL);
    rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    rh_destroy(d);
    d = start(extra);
    c = connect_ok(d, false);
    cJSON *after = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    if (!json_same(at(before, "result"), at(after, "result"))) {
        char *x = show(before), *y = show(after);
        fail_msg("before %s\nafter %s", x, y);
    }
    assert_int_equal(check_world_shapes(c, "cell"), 6);
    /* And once more through a snapshot. */
    ok(c, "save", "{}");
    rh_close(c);
    stop_ok(d);
    d = start(extra);
    c = connect_ok(d, false);
    cJSON *again = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    assert_true(json_same(at(before, "result"), at(again, "result")));
    cJSON_Delete(before);
    cJSON_Delete(after);
    cJSON_Delete(again);
    rh_close(c);
    stop_ok(d);
}

/* ---- robot instances ------------------------------------------------------------ */

/* A planar arm (the same model over the wire and in this process): base
 * -(j1: z at 0.2)-> l1 -(j2: z at (0.7,0,0))-> l2. */
#define ARM_JSON                                                                                   \
    "{\"model\":\"arm\",\"self_collision\":false,\"joints\":[{\"name\":\"j1\",\"type\":"           \
    "\"revolute\",\"parent\":\"base\","                                                            \
    "\"child\":\"l1\",\"origin\":{\"xyz\":[0,0,0.2]},\"axis\":[0,0,1]},{\"name\":\"j2\","          \
    "\"type\":\"revolute\",\"parent\":\"l1\",\"child\":\"l2\",\"origin\":{\"xyz\":[0.7,0,0]},"     \
    "\"axis\":[0,0,1]}],\"links\":[{\"id\":\"base#0\",\"link\":\"base\",\"shape\":{\"sphere\":"    \
    "{\"center\":[0,0,0],\"radius\":0.1}}},{\"id\":\"l1#0\",\"link\":\"l1\",\"shape\":{"           \
    "\"capsule\":{\"a\":[0,0,0],\"b\":[0.7,0,0],\"radius\":0.03}}},{\"id\":\"l2#0\",\"link\":"     \
    "\"l2\",\"shape\":{\"capsule\":{\"a\":[0.05,0,0],\"b\":[0.4,0,0],\"radius\":0.03}}}]}"

static rp_model *arm_in_process(rp_store *st)
{
    static const char *const shape_links[] = {"base", "l1", "l2"};
    rp_link shapes[3] = {{"base#0", -1, {.kind = RP_SHAPE_SPHERE}},
                         {"l1#0", -1, {.kind = RP_SHAPE_CAPSULE}},
                         {"l2#0", -1, {.kind = RP_SHAPE_CAPSULE}}};
    shapes[0].shape.sphere = (rp_sphere){{0, 0, 0}, 0.1};
    shapes[1].shape.capsule = (rp_capsule){{0, 0, 0}, {0.7, 0, 0}, 0.03};
    shapes[2].shape.capsule = (rp_capsule){{0.05, 0, 0}, {0.4, 0, 0}, 0.03};
    rp_joint_def j[2];
    memset(j, 0, sizeof j);
    j[0] = (rp_joint_def){.name = "j1",
                          .type = RP_JOINT_REVOLUTE,
                          .parent = "base",
                          .child = "l1",
                          .xyz = {0, 0, 0.2},
                          .axis = {0, 0, 1}};
    j[1] = (rp_joint_def){.name = "j2",
                          .type = RP_JOINT_REVOLUTE,
                          .parent = "l1",
                          .child = "l2",
                          .xyz = {0.7, 0, 0},
                          .axis = {0, 0, 1}};
    rp_model_def d = {
        .links = shapes, .n_links = 3, .shape_links = shape_links, .joints = j, .n_joints = 2};
    rp_model *m = NULL;
    assert_int_equal(rp_store_model_put(st, "arm", &d, &m, NULL), RP_OK);
    return m;
}

/* Two robot processes share a cell: each moves its own instance and
 * checks its model at its new joints with `ignore` of itself, requests
 * pipelined so that they interleave.  Every check equals the library's
 * check, in this process, against the cell as it was at the revision the
 * reply reports (rebuilt from a watcher's log of the moves): same
 * distance bits, same verdict, never a pair with its own instance.  The
 * model cannot be deleted meanwhile. */
static void two_robot_processes_share_a_cell(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *w = connect_ok(d, false);
    rh_conn *a = connect_ok(d, false), *b = connect_ok(d, true);
    ok(c, "model.put", ARM_JSON);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[0.6,0,0],\"b\":[0.6,0,1],"
       "\"radius\":0.05}}},\"robots\":{\"r1\":{\"model\":\"arm\",\"joints\":[0,0],\"base\":{"
       "\"translation\":[0,-0.6,0]}},\"r2\":{\"model\":\"arm\",\"base\":{\"translation\":[0,0.6,"
       "0]}}}}");
    cJSON *r = rpc(c, "model.delete", "{\"model\":\"arm\"}");
    expect_error(r, -32002, NULL);
    r = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    assert_string_equal(str_at(result_of(r), "robots.r2.model"), "arm");
    assert_non_null(at(result_of(r), "robots.r1.base.matrix"));
    assert_int_equal(cJSON_GetArraySize(at(result_of(r), "robots.r1.joints")), 2);
    cJSON_Delete(r);
    ok(w, "scene.watch", "{\"scene\":\"cell\"}");

    rp_store *mirror = rp_store_new(NULL);
    rp_model *m = arm_in_process(mirror);
    rp_transform base[2] = {rp_transform_identity(), rp_transform_identity()};
    base[0].t.y = -0.6;
    base[1].t.y = 0.6;

    enum { ROUNDS = 15 };
    uint64_t rev0 = revision_of(c, "cell");
    double qs[2][ROUNDS][2];
    for (int k = 0; k < ROUNDS; k++)
        for (int i = 0; i < 2; i++) {
            qs[i][k][0] = 0.4 * k - 2.5 + i;
            qs[i][k][1] = 1.5 - 0.2 * k - i;
        }
    rh_conn *who[2] = {a, b};
    for (int k = 0; k < ROUNDS; k++)
        for (int i = 0; i < 2; i++) {
            post(who[i], "scene.move",
                 "{\"scene\":\"cell\",\"robots\":{\"r%d\":{\"joints\":[%.17g,%.17g]}}}", i + 1,
                 qs[i][k][0], qs[i][k][1]);
            post(who[i], "check",
                 "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":[%.17g,%.17g],\"base\":{"
                 "\"translation\":[0,%g,0]},\"ignore\":[\"r%d\"],\"margin\":0.05}",
                 qs[i][k][0], qs[i][k][1], i ? 0.6 : -0.6, i + 1);
        }
    /* The joints of each robot after each revision, from the watcher. */
    static double at_rev[2 * ROUNDS + 1][2][2];
    memset(at_rev[0], 0, sizeof at_rev[0]); /* both start at 0 (r2: its defaults, 0) */
    for (int k = 1; k <= 2 * ROUNDS; k++) {
        cJSON *n = read_json(w);
        assert_int_equal((uint64_t)num_at(n, "params.revision"), rev0 + (uint64_t)k);
        memcpy(at_rev[k], at_rev[k - 1], sizeof at_rev[k]);
        for (int i = 0; i < 2; i++) {
            char key[32];
            snprintf(key, sizeof key, "params.moved.r%d.joints", i + 1);
            const cJSON *jj = at(n, key);
            if (jj) {
                at_rev[k][i][0] = cJSON_GetArrayItem(jj, 0)->valuedouble;
                at_rev[k][i][1] = cJSON_GetArrayItem(jj, 1)->valuedouble;
            }
        }
        cJSON_Delete(n);
    }
    int checked = 0;
    for (int i = 0; i < 2; i++) {
        int k = 0;
        for (int reply = 0; reply < 2 * ROUNDS; reply++) {
            cJSON *rep = read_json(who[i]);
            const cJSON *res = result_of(rep);
            if (!at(res, "collision")) {
                cJSON_Delete(rep);
                continue; /* the move's reply */
            }
            uint64_t rv = (uint64_t)num_at(res, "scene_revision");
            assert_true(rv >= rev0 && rv <= rev0 + 2 * ROUNDS);
            /* The cell at rv, in this process. */
            rp_robot_put rob[2] = {{"r1", "arm", at_rev[rv - rev0][0], base[0]},
                                   {"r2", "arm", at_rev[rv - rev0][1], base[1]}};
            rp_shape post_shape = {.kind = RP_SHAPE_CAPSULE};
            post_shape.capsule = (rp_capsule){{0.6, 0, 0}, {0.6, 0, 1}, 0.05};
            rp_shape_put own = {"post", post_shape};
            rp_cell cell = {.shapes = &own, .n_shapes = 1, .robots = rob, .n_robots = 2};
            assert_int_equal(
                rp_store_replace_cell(mirror, "cell", &cell, NULL, true, NULL, NULL, NULL), RP_OK);
            const char *self[1] = {i ? "r2" : "r1"};
            rp_check_opts o = {.report = RP_REPORT_CLOSEST,
                               .has_margin = true,
                               .margin = 0.05,
                               .ignore = self,
                               .n_ignore = 1};
            rp_check_result want;
            assert_int_equal(rp_model_check_joints(m, rp_store_find(mirror, "cell"), &base[i],
                                                   qs[i][k], &o, &want),
                             RP_OK);
            assert_int_equal(cJSON_IsTrue(at(res, "collision")), want.collision);
            double got = num_at(res, "min_distance");
            if (got != want.closest.distance)
                fail_msg("robot %d check %d at revision %llu: distance %.17g, library %.17g", i + 1,
                         k, (unsigned long long)rv, got, want.closest.distance);
            const cJSON *other = at(res, "closest.other");
            if (cJSON_IsString(other))
                assert_true(strncmp(other->valuestring, self[0], 2) != 0);
            rp_check_result_free(&want);
            k++;
            checked++;
            cJSON_Delete(rep);
        }
    }
    assert_int_equal(checked, 2 * ROUNDS);
    /* Removed, the model can go. */
    ok(c, "scene.remove", "{\"scene\":\"cell\",\"ids\":[\"r1\",\"r2\"]}");
    ok(c, "model.delete", "{\"model\":\"arm\"}");
    rp_store_free(mirror);
    rh_close(a);
    rh_close(b);
    rh_close(w);
    rh_close(c);
    stop_ok(d);
}

/* Robot instances survive kill -9 and a snapshot, bit for bit. */
static void robots_survive_kill_9(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    const char *extra[] = {"--data-dir", dir, "--fsync", "always", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    ok(c, "model.put", ARM_JSON);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"objects\":{\"crate\":" CRATE "},\"robots\":{\"r1\":{\"model\":"
       "\"arm\",\"joints\":[0.1,0.2]}}}");
    ok(c, "scene.move",
       "{\"scene\":\"cell\",\"robots\":{\"r1\":{\"joints\":[0.30000000000000004,-1e-300],"
       "\"base\":{\"translation\":[0.1,0.2,0.3]}}},\"objects\":{\"crate\":{\"translation\":[1,1,"
       "1]}}}");
    cJSON *before = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rh_close(c);
    rh_signal(d, SIGKILL);
    rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    rh_destroy(d);
    for (int round = 0; round < 2; round++) {
        d = start(extra);
        c = connect_ok(d, false);
        cJSON *after = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
        if (!json_same(at(before, "result"), at(after, "result"))) {
            char *x = show(before), *y = show(after);
            fail_msg("before %s\nafter %s", x, y);
        }
        cJSON_Delete(after);
        cJSON *r = rpc(c, "model.put", ARM_JSON);
        expect_error(r, -32002, NULL);
        if (round == 0)
            ok(c, "save", "{}");
        rh_close(c);
        stop_ok(d);
    }
    cJSON_Delete(before);
}

/* ---- attached objects ------------------------------------------------------------ */

/* A part attached to a robot's link follows the robot's moves (watchers
 * hear its new pose), survives kill -9 and a snapshot with its pose in the
 * link's frame bit for bit, and a check of the robot's model with `ignore`
 * of the instance sees it held on the link being checked: the same reply
 * as the request's own `attached` with that shape there and the part
 * ignored. */
static void attached_parts_follow_and_are_held_in_checks(void **state)
{
    (void)state;
    const char *dir = temp_dir_ok();
    const char *extra[] = {"--data-dir", dir, "--fsync", "always", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false), *w = connect_ok(d, false);
    ok(c, "model.put", ARM_JSON);
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[0.9,0.5,0],\"b\":[0.9,0.5,"
       "1],\"radius\":0.05}}},\"robots\":{\"r1\":{\"model\":\"arm\",\"joints\":[0,0]}},"
       "\"objects\":{\"part\":{\"pose\":{\"translation\":[1.0,0,0.2]},\"shapes\":{\"p\":{"
       "\"sphere\":{\"center\":[0,0,0],\"radius\":0.08}}}}}}");
    ok(w, "scene.watch", "{\"scene\":\"cell\"}");
    ok(c, "scene.attach",
       "{\"scene\":\"cell\",\"object\":\"part\",\"robot\":\"r1\",\"link\":\"l2\"}");
    cJSON *n = read_json(w);
    assert_string_equal(str_at(n, "params.attached.part.robot"), "r1");
    assert_string_equal(str_at(n, "params.attached.part.link"), "l2");
    assert_non_null(at(n, "params.moved.part.matrix"));
    cJSON_Delete(n);
    cJSON *g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    assert_string_equal(str_at(result_of(g), "objects.part.attached.link"), "l2");
    cJSON_Delete(g);
    check_world_shapes(c, "cell");

    /* The robot turns: the part follows, in the move's revision. */
    ok(c, "scene.move", "{\"scene\":\"cell\",\"robots\":{\"r1\":{\"joints\":[0.5,0.3]}}}");
    n = read_json(w);
    assert_non_null(at(n, "params.moved.r1.joints"));
    rp_transform moved = pose_of(at(n, "params.moved.part"));
    cJSON_Delete(n);
    g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rp_transform now = pose_of(at(result_of(g), "objects.part.pose"));
    assert_memory_equal(&moved, &now, sizeof now);
    assert_true(fabs(now.t.y) > 0.1); /* it went round with the arm */
    cJSON_Delete(g);
    check_world_shapes(c, "cell");

    /* A check ignoring r1 holds the part on l2: as if the request had
     * attached it there itself, with the part left out of the scene. */
    g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rp_transform rel = pose_of(at(result_of(g), "objects.part.attached.rel"));
    cJSON_Delete(g);
    rp_shape local = {.kind = RP_SHAPE_SPHERE};
    local.sphere = (rp_sphere){{0, 0, 0}, 0.08};
    rp_shape held = rp_transform_shape(&rel, &local);
    /* Written by the daemon's own writer: cJSON prints some doubles short. */
    rp_jw jw;
    rp_jw_init(&jw);
    rp_jw_shape(&jw, &held);
    size_t held_len;
    char *held_json = rp_jw_detach(&jw, &held_len);
    assert_non_null(held_json);
    char *held_text = strndup(held_json, held_len);
    free(held_json);
    for (int k = 0; k < 6; k++) {
        double q0 = 0.2 * k, q1 = 0.5 - 0.15 * k;
        cJSON *a = rpc(c, "check",
                       "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":[%.17g,%.17g],"
                       "\"ignore\":[\"r1\"],\"report\":\"all\",\"margin\":0.3}",
                       q0, q1);
        cJSON *b = rpc(c, "check",
                       "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":[%.17g,%.17g],"
                       "\"ignore\":[\"r1\",\"part\"],\"report\":\"all\",\"margin\":0.3,"
                       "\"attached\":[{\"id\":\"part/p\",\"link\":\"l2\",\"shape\":%s}]}",
                       q0, q1, held_text);
        if (!json_same(result_of(a), result_of(b))) {
            char *x = show(a), *y = show(b);
            fail_msg("held part: %s\nexplicit attached: %s", x, y);
        }
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    free(held_text);

    /* Kept across kill -9 and a snapshot. */
    cJSON *before = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rh_close(w);
    rh_close(c);
    rh_signal(d, SIGKILL);
    rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    rh_destroy(d);
    for (int round = 0; round < 2; round++) {
        d = start(extra);
        c = connect_ok(d, false);
        cJSON *after = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
        if (!json_same(at(before, "result"), at(after, "result"))) {
            char *x = show(before), *y = show(after);
            fail_msg("before %s\nafter %s", x, y);
        }
        cJSON_Delete(after);
        if (round == 0)
            ok(c, "save", "{}");
        rh_close(c);
        stop_ok(d);
    }
    cJSON_Delete(before);

    /* Detached, it stays; the robot's next move leaves it. */
    d = start(extra);
    c = connect_ok(d, false);
    cJSON *r = rpc(c, "scene.detach", "{\"scene\":\"cell\",\"object\":\"r1\"}");
    expect_error(r, -32602, "params.object");
    ok(c, "scene.detach", "{\"scene\":\"cell\",\"object\":\"part\"}");
    g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    assert_null(at(result_of(g), "objects.part.attached"));
    rp_transform free_pose = pose_of(at(result_of(g), "objects.part.pose"));
    cJSON_Delete(g);
    ok(c, "scene.move", "{\"scene\":\"cell\",\"robots\":{\"r1\":{\"joints\":[-1,0]}}}");
    g = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    rp_transform still = pose_of(at(result_of(g), "objects.part.pose"));
    assert_memory_equal(&still, &free_pose, sizeof still);
    cJSON_Delete(g);
    /* Bad attaches. */
    r = rpc(c, "scene.attach",
            "{\"scene\":\"cell\",\"object\":\"part\",\"robot\":\"r1\",\"link\":\"nope\"}");
    expect_error(r, -32602, "params.link");
    r = rpc(c, "scene.attach",
            "{\"scene\":\"cell\",\"object\":\"part\",\"robot\":\"zz\",\"link\":\"l1\"}");
    expect_error(r, -32001, NULL);
    r = rpc(c, "scene.attach",
            "{\"scene\":\"cell\",\"object\":\"part\",\"robot\":\"part\",\"link\":\"l1\"}");
    expect_error(r, -32602, "params.robot");
    r = rpc(c, "scene.attach",
            "{\"scene\":\"cell\",\"object\":\"part\",\"robot\":\"r1\",\"link\":\"l1\",\"rel\":{"
            "\"rotation\":{\"w\":3,\"x\":0,\"y\":0,\"z\":0}}}");
    expect_error(r, -32602, "params.rel.rotation");
    rh_close(c);
    stop_ok(d);
}

/* allowed_scene pairs (the model's and the request's) may name an object
 * or a robot instance: the link may touch every shape of it. */
static void allowed_scene_pairs_name_objects_and_robots(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    ok(c, "model.put", ARM_JSON);
    /* A part on the arm's first link, and another arm's base on it too. */
    ok(c, "scene.create",
       "{\"scene\":\"cell\",\"objects\":{\"part\":{\"pose\":{\"translation\":[0.4,0,0.2]},"
       "\"shapes\":{\"a\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.05}},\"b\":{\"sphere\":"
       "{\"center\":[0.1,0,0],\"radius\":0.05}}}}},\"robots\":{\"other\":{\"model\":\"arm\","
       "\"base\":{\"translation\":[0.6,0,0]}}}}");
    char params[512];
    int seen[3] = {0, 0, 0}; /* part, other, total */
    for (int allowed = 0; allowed < 2; allowed++) {
        snprintf(params, sizeof params,
                 "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":[0,0],\"report\":\"all\"%s}",
                 allowed ? ",\"allowed_scene\":[[\"l1\",\"part\"],[\"l1\",\"other\"],[\"base\","
                           "\"other\"],[\"l2\",\"other\"],[\"l2\",\"part\"],[\"base\",\"part\"]]"
                         : "");
        cJSON *r = rpc(c, "check", "%s", params);
        const cJSON *v;
        int part = 0, other = 0, total = 0;
        cJSON_ArrayForEach(v, at(result_of(r), "violations"))
        {
            const char *o = str_at(v, "other");
            part += strncmp(o, "part/", 5) == 0;
            other += strncmp(o, "other/", 6) == 0;
            total++;
        }
        if (!allowed) {
            assert_true(part > 0 && other > 0);
            seen[0] = part, seen[1] = other, seen[2] = total;
        } else {
            assert_int_equal(part, 0);
            assert_int_equal(other, 0);
            assert_int_equal(total, seen[2] - seen[0] - seen[1]);
        }
        cJSON_Delete(r);
    }
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(objects_come_back_and_their_world_shapes_are_exact),
        DAEMON_TEST(moves_take_one_revision_and_queries_follow),
        DAEMON_TEST(bad_objects_are_refused_with_a_path),
        DAEMON_TEST(two_clients_moving_their_objects_get_consistent_replies),
        DAEMON_TEST(objects_survive_kill_9),
        DAEMON_TEST(two_robot_processes_share_a_cell),
        DAEMON_TEST(robots_survive_kill_9),
        DAEMON_TEST(attached_parts_follow_and_are_held_in_checks),
        DAEMON_TEST(allowed_scene_pairs_name_objects_and_robots),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
