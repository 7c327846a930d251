/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests of the cell's shapes (proto/PROTOCOL.md, "Shapes"): boxes
 * and half-spaces stored, returned, queried and checked against, against
 * the real reposed over its real socket.
 *
 * Usage: test_daemon_cell PATH-TO-REPOSED
 *
 * Replies are compared with the library evaluated in this process on the
 * shapes scene.get returns (decoded with the daemon's own codec), bit for
 * bit: the daemon must compute exactly what the library does.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <setjmp.h>
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

/* ---- requests ------------------------------------------------------------------ */

static int next_id = 1;

/* Sends method(params) and returns the parsed reply (the caller deletes). */
static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    int n = vsnprintf(NULL, 0, params_fmt, ap);
    va_end(ap);
    char *params = malloc((size_t)n + 1);
    assert_non_null(params);
    va_start(ap, params_fmt);
    vsnprintf(params, (size_t)n + 1, params_fmt, ap);
    va_end(ap);
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", next_id++,
              method, params);
    cJSON *r = call_json(c, t.p);
    free(t.p);
    free(params);
    return r;
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

/* A shape as request text (the caller frees). */
static char *shape_text(const rp_shape *s)
{
    cJSON *j = shape_json(s);
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return t;
}

/* The scene's shapes as scene.get returns them, decoded: ids and shapes in
 * the reply's order; returns the count (the caller frees both arrays). */
static size_t scene_shapes(rh_conn *c, const char *scene, char ***ids, rp_shape **shapes)
{
    cJSON *r = rpc(c, "scene.get", "{\"scene\":\"%s\"}", scene);
    const cJSON *sh = at(result_of(r), "shapes");
    size_t n = (size_t)cJSON_GetArraySize(sh), k = 0;
    *ids = calloc(n + 1, sizeof **ids);
    *shapes = calloc(n + 1, sizeof **shapes);
    const cJSON *e;
    cJSON_ArrayForEach(e, sh)
    {
        rp_codec_err err;
        if (!rp_codec_shape(e, "shape", &(*shapes)[k], &err))
            fail_msg("scene.get returned a shape the codec refuses: %s at %s", err.reason,
                     err.path);
        (*ids)[k++] = strdup(e->string);
    }
    cJSON_Delete(r);
    return n;
}

static void free_shapes(char **ids, rp_shape *shapes, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(ids[k]);
    free(ids);
    free(shapes);
}

/* ---- tests ------------------------------------------------------------------------ */

/* Boxes and half-spaces come back as stored: the quaternion (unit within
 * 1e-6, as every rotation of the protocol) and the normal (any length)
 * normalised, the offset with the normal, a missing rotation as the
 * identity, zero extents kept; the bits survive a second put. */
static void boxes_and_half_spaces_come_back_normalised(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r =
        rpc(c, "scene.create",
            "{\"scene\":\"cell\",\"shapes\":{"
            "\"table\":{\"box\":{\"center\":[1,0,0.4],\"half_extents\":[0.5,0.25,0.02],"
            "\"rotation\":{\"w\":1.0000001,\"x\":0,\"y\":0,\"z\":0}}},"
            "\"sheet\":{\"box\":{\"center\":[0,0,0],\"half_extents\":[0.5,0,0.25]}},"
            "\"turned\":{\"box\":{\"center\":[0,2,0],\"half_extents\":[1,1,1],"
            "\"rotation\":{\"w\":0.70710678118654757,\"x\":0,\"y\":0,\"z\":0.70710678118654757}}},"
            "\"floor\":{\"halfspace\":{\"normal\":[0,0,-2],\"offset\":1}}}}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "scene.get", "{\"scene\":\"cell\",\"ids\":[\"table\",\"sheet\",\"floor\"]}");
    char *got = cJSON_PrintUnformatted(at(result_of(r), "shapes"));
    const char *want = "{\"floor\":{\"halfspace\":{\"normal\":[0,0,-1],\"offset\":0.5}},"
                       "\"sheet\":{\"box\":{\"center\":[0,0,0],\"half_extents\":[0.5,0,0.25],"
                       "\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0}}},"
                       "\"table\":{\"box\":{\"center\":[1,0,0.4],\"half_extents\":[0.5,0.25,0.02],"
                       "\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0}}}}";
    if (strcmp(got, want) != 0)
        fail_msg("scene.get: %s\n want %s", got, want);
    free(got);
    cJSON_Delete(r);

    /* The turned box, put again as returned, is the same bits. */
    char **ids;
    rp_shape *shapes;
    size_t n = scene_shapes(c, "cell", &ids, &shapes);
    assert_int_equal(n, 4);
    rp_shape before[4];
    memcpy(before, shapes, sizeof before);
    textbuf t = {0};
    tb_printf(&t, "{\"scene\":\"cell\",\"shapes\":{");
    for (size_t k = 0; k < n; k++) {
        char *s = shape_text(&shapes[k]);
        tb_printf(&t, "%s\"%s\":%s", k ? "," : "", ids[k], s);
        free(s);
    }
    tb_printf(&t, "}}");
    r = rpc(c, "scene.put", "%s", t.p);
    result_of(r);
    cJSON_Delete(r);
    free(t.p);
    free_shapes(ids, shapes, n);
    n = scene_shapes(c, "cell", &ids, &shapes);
    assert_int_equal(n, 4);
    for (size_t k = 0; k < n; k++)
        assert_memory_equal(&shapes[k], &before[k], sizeof(rp_shape));
    free_shapes(ids, shapes, n);
    rh_close(c);
    stop_ok(d);
}

/* scene.distance against scenes of spheres, capsules, boxes and
 * half-spaces (some scenes past the tree's scan size): the nearest shape,
 * its distance and every pair below max_distance, as brute force over the
 * stored shapes computes them. */
static void distances_equal_brute_force_over_the_stored_shapes(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    rng g = {0xce11};
    int rounds = rh_wrapped() ? 3 : 8;
    for (int round = 0; round < rounds; round++) {
        size_t want_n = 5 + rng_below(&g, 60);
        textbuf t = {0};
        tb_printf(&t, "{\"scene\":\"r%d\",\"shapes\":{", round);
        for (size_t k = 0; k < want_n; k++) {
            rp_shape s = rng_below(&g, 2) ? rng_solid(&g) : rng_shape(&g);
            char *txt = shape_text(&s);
            tb_printf(&t, "%s\"s%zu\":%s", k ? "," : "", k, txt);
            free(txt);
        }
        tb_printf(&t, "}}");
        cJSON *r = rpc(c, "scene.create", "%s", t.p);
        result_of(r);
        cJSON_Delete(r);
        free(t.p);
        char **ids;
        rp_shape *shapes;
        char scene[16];
        snprintf(scene, sizeof scene, "r%d", round);
        size_t n = scene_shapes(c, scene, &ids, &shapes);
        assert_int_equal(n, want_n);
        for (int q = 0; q < 25; q++) {
            rp_shape qs = rng_shape(&g);
            double max_d = rng_below(&g, 17) / 4.0;
            double best = INFINITY;
            size_t best_k = SIZE_MAX, below = 0;
            for (size_t k = 0; k < n; k++) {
                double dd = rp_shape_signed_distance(&qs, &shapes[k]);
                if (dd < best || (dd == best && strcmp(ids[k], ids[best_k]) < 0))
                    best = dd, best_k = k;
                below += dd < max_d;
            }
            char *qt = shape_text(&qs);
            r = rpc(c, "scene.distance", "{\"scene\":\"%s\",\"shape\":%s,\"max_distance\":%.17g}",
                    scene, qt, max_d);
            free(qt);
            const cJSON *res = result_of(r);
            double got = num_at(res, "distance");
            if (!(got == best) || strcmp(str_at(res, "nearest.shape"), ids[best_k]) != 0)
                fail_msg("round %d query %d: daemon %.17g (%s), library %.17g (%s)", round, q, got,
                         str_at(res, "nearest.shape"), best, ids[best_k]);
            const cJSON *pairs = at(res, "pairs");
            assert_int_equal((size_t)cJSON_GetArraySize(pairs), below);
            const cJSON *p;
            cJSON_ArrayForEach(p, pairs)
            {
                const char *id = str_at(p, "shape");
                size_t k = 0;
                while (k < n && strcmp(ids[k], id) != 0)
                    k++;
                assert_true(k < n);
                assert_true(num_at(p, "distance") == rp_shape_signed_distance(&qs, &shapes[k]));
            }
            cJSON_Delete(r);
        }
        free_shapes(ids, shapes, n);
    }
    rh_close(c);
    stop_ok(d);
}

/* A robot's check against a table (a box) and the floor (a half-space):
 * the closest pair and its distance as the library gives them. */
static void checks_see_the_table_and_the_floor(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = rpc(c, "model.put",
                   "{\"model\":\"hand\",\"links\":[{\"id\":\"palm\",\"frame\":0,\"shape\":"
                   "{\"box\":{\"center\":[0,0,0],\"half_extents\":[0.05,0.04,0.02]}}},"
                   "{\"id\":\"finger\",\"frame\":0,\"shape\":{\"capsule\":{\"a\":[0,0,-0.02],"
                   "\"b\":[0,0,-0.1],\"radius\":0.01}}}],\"safety_margin\":0}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(
        c, "scene.create",
        "{\"scene\":\"cell\",\"shapes\":{\"table\":{\"box\":{\"center\":[1,0,0.35],"
        "\"half_extents\":[0.4,0.6,0.35],\"rotation\":{\"w\":0.99500416527802582,\"x\":0,\"y\":0,"
        "\"z\":0.099833416646828155}}},"
        "\"floor\":{\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}}}");
    result_of(r);
    cJSON_Delete(r);
    char **ids;
    rp_shape *shapes;
    size_t n = scene_shapes(c, "cell", &ids, &shapes);
    rng g = {0x7ab1e};
    int hits_table = 0, hits_floor = 0, clear = 0;
    for (int i = 0; i < 60; i++) {
        rp_vec3 t = {1 + rng_coord(&g) / 4, rng_coord(&g) / 4, 0.72 + rng_coord(&g) / 32};
        rp_transform tf;
        double qz = rng_coord(&g) / 8, qw = sqrt(1 - qz * qz); /* unit: the protocol's rule */
        assert_int_equal(rp_transform_from_quaternion(t, qw, 0, 0, qz, &tf), RP_OK);
        /* The library's answer: both links placed by the frame. */
        rp_shape palm = rp_shape_from_box((rp_box){{0, 0, 0}, {0.05, 0.04, 0.02}, {1, 0, 0, 0}});
        rp_shape finger = rp_shape_from_capsule((rp_capsule){{0, 0, -0.02}, {0, 0, -0.1}, 0.01});
        rp_shape w[2] = {rp_transform_shape(&tf, &palm), rp_transform_shape(&tf, &finger)};
        double best = INFINITY;
        const char *best_link = NULL, *best_other = NULL;
        const char *links[2] = {"palm", "finger"};
        for (int l = 0; l < 2; l++)
            for (size_t k = 0; k < n; k++) {
                double dd = rp_shape_signed_distance(&w[l], &shapes[k]);
                if (dd < best)
                    best = dd, best_link = links[l], best_other = ids[k];
            }
        r = rpc(c, "check",
                "{\"model\":\"hand\",\"scene\":\"cell\",\"report\":\"closest\",\"frames\":"
                "[{\"translation\":[%.17g,%.17g,%.17g],\"rotation\":{\"w\":%.17g,\"x\":0,\"y\":0,"
                "\"z\":%.17g}}]}",
                t.x, t.y, t.z, qw, qz);
        const cJSON *res = result_of(r);
        if (!(num_at(res, "min_distance") == best) ||
            strcmp(str_at(res, "closest.link"), best_link) != 0 ||
            strcmp(str_at(res, "closest.other"), best_other) != 0) {
            char *s = show(r);
            fail_msg("frame %d: daemon %s, library %.17g %s-%s", i, s, best, best_link, best_other);
        }
        assert_int_equal(cJSON_IsTrue(at(res, "collision")), best < 0);
        hits_table += best < 0 && strcmp(best_other, "table") == 0;
        hits_floor += best < 0 && strcmp(best_other, "floor") == 0;
        clear += best >= 0;
        cJSON_Delete(r);
    }
    /* Both obstacles were met, and clear frames were seen. */
    if (!(hits_table > 5 && clear > 5))
        fail_msg("table %d, floor %d, clear %d of 60", hits_table, hits_floor, clear);
    (void)hits_floor;
    free_shapes(ids, shapes, n);
    rh_close(c);
    stop_ok(d);
}

/* check.motion of a box link swinging down onto the floor: both modes find
 * the floor, the certified one just where the box's lowest corner reaches
 * it; a swing that stays above is proven clear. */
static void motions_of_a_box_link_meet_the_floor(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    /* The arm turns about y at height 1: R_y(q) takes its x axis to
     * (cos q, 0, -sin q), so its far lower corner (1, 0, -0.05) is at
     * height 1 - sin q - 0.05 cos q. */
    cJSON *r =
        rpc(c, "model.put",
            "{\"model\":\"swing\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
            "\"parent\":\"base\",\"child\":\"arm\",\"origin\":{\"xyz\":[0,0,1]},\"axis\":[0,1,0],"
            "\"limits\":{\"lower\":-2,\"upper\":2}}],\"links\":[{\"id\":\"arm#0\",\"link\":"
            "\"arm\",\"shape\":{\"box\":{\"center\":[0.5,0,0],\"half_extents\":[0.5,0.05,"
            "0.05]}}}],\"safety_margin\":0}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "scene.create",
            "{\"scene\":\"cell\",\"shapes\":{\"floor\":{\"halfspace\":"
            "{\"normal\":[0,0,1],\"offset\":0}}}}");
    result_of(r);
    cJSON_Delete(r);
    const char *modes[] = {"discrete", "certified"};
    for (int m = 0; m < 2; m++) {
        r = rpc(c, "check.motion",
                "{\"model\":\"swing\",\"scene\":\"cell\",\"path\":[[0],[1.5]],\"mode\":\"%s\"}",
                modes[m]);
        const cJSON *res = result_of(r);
        if (cJSON_IsTrue(at(res, "valid")) ||
            strcmp(str_at(res, "first_invalid.other"), "floor") != 0 ||
            strcmp(str_at(res, "first_invalid.link"), "arm#0") != 0) {
            char *s = show(r);
            fail_msg("%s: %s", modes[m], s);
        }
        double q = num_at(res, "first_invalid.t") * 1.5;
        double low = 1 - sin(q) - 0.05 * cos(q);
        if (m == 1) /* certified: at the floor within its tolerance, never deep */
            assert_true(low < 2e-3 && low > -1e-9);
        else
            assert_true(low < 0); /* discrete: a state in the floor */
        cJSON_Delete(r);
        r = rpc(c, "check.motion",
                "{\"model\":\"swing\",\"scene\":\"cell\",\"path\":[[0],[0.6]],\"mode\":\"%s\"}",
                modes[m]);
        assert_true(cJSON_IsTrue(at(result_of(r), "valid")));
        cJSON_Delete(r);
    }
    rh_close(c);
    stop_ok(d);
}

/* A check of a model of boxes is priced at the box kernels' cost: the
 * largest that fits the budget runs while a second client is answered, and
 * one past it is refused before any work. */
static void box_models_are_priced_and_others_are_served_meanwhile(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *p = connect_ok(d, false);
    rng g = {0xb0b};
    /* n box links with self collision: about n^2 / 2 * 256 units, 400 of
     * them about 20 million (under the 50 million of a request line), 700
     * about 63 million. */
    const int sizes[2] = {400, 700};
    for (int s = 0; s < 2; s++) {
        textbuf t = {0};
        tb_printf(&t, "{\"model\":\"b%d\",\"links\":[", s);
        for (int k = 0; k < sizes[s]; k++)
            tb_printf(&t,
                      "%s{\"id\":\"l%d\",\"frame\":%d,\"shape\":{\"box\":{\"center\":[%g,%g,%g],"
                      "\"half_extents\":[0.05,0.05,0.05]}}}",
                      k ? "," : "", k, k % 8, rng_coord(&g) / 4, rng_coord(&g) / 4,
                      rng_coord(&g) / 4);
        tb_printf(&t, "],\"safety_margin\":0}");
        cJSON *r = rpc(c, "model.put", "%s", t.p);
        result_of(r);
        cJSON_Delete(r);
        free(t.p);
    }
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"check\",\"params\":{\"model\":"
                  "\"b0\",\"report\":\"all\",\"frames\":[");
    for (int f = 0; f < 8; f++)
        tb_printf(&t, "%s{\"translation\":[0,0,%d]}", f ? "," : "", f);
    tb_printf(&t, "]}}");
    assert_true(rh_send_line(c, t.p));
    expect_pong(p); /* the other client is answered meanwhile */
    cJSON *r = read_json(c);
    assert_non_null(at(result_of(r), "collision"));
    cJSON_Delete(r);
    free(t.p);
    r = rpc(c, "check", "{\"model\":\"b1\",\"frames\":[]}");
    assert_int_equal(num_at(r, "error.code"), -32004);
    assert_string_equal(str_at(r, "error.data.limit"), "max_request_work");
    cJSON_Delete(r);
    expect_pong(p);
    rh_close(p);
    rh_close(c);
    stop_ok(d);
}

/* Bad boxes and half-spaces: -32602 with the path of the bad field, the
 * connection stays up and the scene is unchanged. */
static void bad_boxes_and_half_spaces_are_refused_with_a_path(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = rpc(c, "scene.create",
                   "{\"scene\":\"cell\",\"shapes\":{\"b\":{\"box\":{\"center\":[0,0,0],"
                   "\"half_extents\":[1,1,1]}}}}");
    uint64_t rev = (uint64_t)num_at(result_of(r), "revision");
    cJSON_Delete(r);
    static const struct {
        const char *shape, *path;
    } bad[] = {
        {"{\"halfspace\":{\"normal\":[0,0,0],\"offset\":1}}", "params.shapes.x.halfspace.normal"},
        {"{\"halfspace\":{\"normal\":[0,0,1]}}", "params.shapes.x.halfspace.offset"},
        {"{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,-1,1]}}",
         "params.shapes.x.box.half_extents[1]"},
        {"{\"box\":{\"center\":[0,0,0]}}", "params.shapes.x.box.half_extents"},
        {"{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1],\"rotation\":[1,0,0,0]}}",
         "params.shapes.x.box.rotation"},
        {"{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1],\"size\":2}}",
         "params.shapes.x.box.size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = rpc(c, "scene.put",
                "{\"scene\":\"cell\",\"shapes\":{\"ok\":{\"sphere\":{\"center\":"
                "[0,0,0],\"radius\":1}},\"x\":%s}}",
                bad[i].shape);
        expect_error(r, -32602, bad[i].path);
    }
    /* A half-space is no link, and no query shape. */
    r = rpc(c, "model.put",
            "{\"model\":\"m\",\"links\":[{\"id\":\"l\",\"frame\":0,\"shape\":"
            "{\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}}]}");
    assert_int_equal(num_at(r, "error.code"), -32602);
    cJSON_Delete(r);
    r = rpc(c, "scene.distance",
            "{\"scene\":\"cell\",\"shape\":{\"box\":{\"center\":[0,0,0],"
            "\"half_extents\":[1,1,1]}}}");
    assert_int_equal(num_at(r, "error.code"), -32602);
    cJSON_Delete(r);
    /* 65 half-spaces: over the scene's limit, refused whole. */
    textbuf t = {0};
    tb_printf(&t, "{\"scene\":\"cell\",\"shapes\":{");
    for (int k = 0; k < 65; k++)
        tb_printf(&t, "%s\"h%d\":{\"halfspace\":{\"normal\":[0,0,1],\"offset\":%d}}", k ? "," : "",
                  k, -k);
    tb_printf(&t, "}}");
    r = rpc(c, "scene.put", "%s", t.p);
    assert_int_equal(num_at(r, "error.code"), -32004);
    assert_string_equal(str_at(r, "error.data.limit"), "max_halfspaces_per_scene");
    assert_int_equal(num_at(r, "error.data.max"), 64);
    cJSON_Delete(r);
    expect_pong(c);
    r = rpc(c, "scene.get", "{\"scene\":\"cell\"}");
    assert_int_equal((uint64_t)num_at(result_of(r), "revision"), rev);
    assert_int_equal(cJSON_GetArraySize(at(result_of(r), "shapes")), 1);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);

    /* --max-halfspaces raises it. */
    const char *more[] = {"--max-halfspaces", "100", NULL};
    d = start(more);
    c = connect_ok(d, false);
    r = rpc(c, "scene.create", "%s", t.p);
    result_of(r);
    cJSON_Delete(r);
    free(t.p);
    rh_close(c);
    stop_ok(d);
}

/* A watcher hears of boxes and half-spaces as they were stored. */
static void watchers_receive_boxes_and_half_spaces(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *w = connect_ok(d, false);
    cJSON *r = rpc(c, "scene.create", "{\"scene\":\"cell\"}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(w, "scene.watch", "{\"scene\":\"cell\"}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "scene.put",
            "{\"scene\":\"cell\",\"shapes\":{\"wall\":{\"halfspace\":{\"normal\":[3,4,0],"
            "\"offset\":10}},\"crate\":{\"box\":{\"center\":[1,2,3],\"half_extents\":[0.5,0.5,"
            "0.5],\"rotation\":{\"w\":0,\"x\":0,\"y\":0,\"z\":-1}}}}}");
    result_of(r);
    cJSON_Delete(r);
    cJSON *n = read_json(w);
    char *got = cJSON_PrintUnformatted(at(n, "params.put"));
    const char *want = "{\"crate\":{\"box\":{\"center\":[1,2,3],\"half_extents\":[0.5,0.5,0.5],"
                       "\"rotation\":{\"w\":0,\"x\":0,\"y\":0,\"z\":-1}}},"
                       "\"wall\":{\"halfspace\":{\"normal\":[0.6,0.8,0],\"offset\":2}}}";
    if (strcmp(str_at(n, "method"), "scene.changed") != 0 || strcmp(got, want) != 0)
        fail_msg("notification %s\n want put %s", got, want);
    free(got);
    cJSON_Delete(n);
    rh_close(w);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(boxes_and_half_spaces_come_back_normalised),
        DAEMON_TEST(distances_equal_brute_force_over_the_stored_shapes),
        DAEMON_TEST(checks_see_the_table_and_the_floor),
        DAEMON_TEST(motions_of_a_box_link_meet_the_floor),
        DAEMON_TEST(box_models_are_priced_and_others_are_served_meanwhile),
        DAEMON_TEST(bad_boxes_and_half_spaces_are_refused_with_a_path),
        DAEMON_TEST(watchers_receive_boxes_and_half_spaces),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
