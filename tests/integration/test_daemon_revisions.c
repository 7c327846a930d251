/* SPDX-License-Identifier: MIT */
/*
 * Daemon revision tests: store-wide revisions and scene.replace, on the real
 * reposed over its real sockets.
 *
 * Usage: test_daemon_revisions PATH-TO-REPOSED
 *
 * Revisions are store-wide sequence numbers (docs/ARCHITECTURE.md, Revisions): every committed
 * mutation (scene.create, put, remove, replace, delete; model.put, delete)
 * takes the next number, a scene's or model's revision is the number of its
 * last change, numbers never repeat (also across delete + create), and a
 * failed mutation takes none.  stats reports the store's last revision;
 * scene.delete and model.delete report the number the deletion took.
 *
 * Each test starts its own daemon (tests/integration/harness.h).  Helpers
 * shared with the other daemon test programs are in daemon_util.h.  No test
 * asserts a duration; under REPOSE_DAEMON_WRAPPER (valgrind) the workloads
 * are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"

/* ---- helpers ------------------------------------------------------------------------------ */

#define SPHERE(x) "{\"sphere\":{\"center\":[" #x ",0,0],\"radius\":0.5}}"
#define LINKS "[{\"id\":\"l\",\"frame\":0,\"shape\":" SPHERE(0) "}]"

/* Sends method with params (printf-style JSON text, may be NULL) and
 * returns the parsed reply, whose id is checked. */
static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
    __attribute__((format(printf, 3, 4)));

static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    static int next_id = 1;
    int id = next_id++;
    textbuf t = {0};
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"", id, method);
    if (params_fmt) {
        char params[8192];
        va_list ap;
        va_start(ap, params_fmt);
        int n = vsnprintf(params, sizeof params, params_fmt, ap);
        va_end(ap);
        assert_true(n >= 0 && (size_t)n < sizeof params);
        tb_printf(&t, ",\"params\":%s", params);
    }
    tb_printf(&t, "}");
    cJSON *r = call_json(c, t.p);
    if (num_at(r, "id") != id) {
        char *s = show(r);
        fail_msg("%s: reply to another id: %s", t.p, s);
    }
    free(t.p);
    return r;
}

/* The reply must be a result; returns its `revision` and frees the reply. */
static uint64_t ok_revision(cJSON *r)
{
    if (!at(r, "result")) {
        char *s = show(r);
        fail_msg("want a result, got %s", s);
    }
    uint64_t rev = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);
    return rev;
}

/* The store's last revision, from stats. */
static uint64_t store_revision(rh_conn *c)
{
    cJSON *r = rpc(c, "stats", NULL);
    uint64_t rev = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);
    return rev;
}

/* A reply printed without the id (compared as text: member order counts). */
static char *result_text(cJSON *r)
{
    const cJSON *res = at(r, "result");
    if (!res) {
        char *s = show(r);
        fail_msg("want a result, got %s", s);
    }
    char *s = cJSON_PrintUnformatted(res);
    cJSON_Delete(r);
    return s;
}

static void expect_result(cJSON *r, const char *want)
{
    char *got = result_text(r);
    if (strcmp(got, want) != 0)
        fail_msg("want result %s\n got %s", want, got);
    free(got);
}

/* ---- scene.replace ------------------------------------------------------------------------ */

static void scene_replace_swaps_the_whole_content_and_refuses_bad_requests_whole(void **state)
{
    (void)state;
    static const char *const flags[] = {"--max-shapes", "4", NULL};
    rh_daemon *d = start(flags);
    rh_conn *c = connect_ok(d, false);
    assert_int_equal(store_revision(c), 0);
    expect_result(rpc(c, "scene.create", "{\"scene\":\"cell\",\"shapes\":{\"a\":%s,\"b\":%s}}",
                      SPHERE(0), SPHERE(1)),
                  "{\"scene\":\"cell\",\"revision\":1}");
    expect_result(rpc(c, "scene.replace",
                      "{\"scene\":\"cell\",\"if_revision\":1,\"shapes\":{\"c\":%s,\"b\":%s}}",
                      SPHERE(3), SPHERE(2)),
                  "{\"scene\":\"cell\",\"revision\":2}");
    static const char get_want[] =
        "{\"scene\":\"cell\",\"revision\":2,\"shapes\":{\"b\":" SPHERE(2) ",\"c\":" SPHERE(3) "}}";
    expect_result(rpc(c, "scene.get", "{\"scene\":\"cell\"}"), get_want);
    expect_result(rpc(c, "scene.list", NULL),
                  "{\"scenes\":[{\"scene\":\"cell\",\"revision\":2,\"shapes\":2}]}");
    /* Queries see the new content only: "a" at x = 0 is gone. */
    expect_result(rpc(c, "scene.distance", "{\"scene\":\"cell\",\"shape\":%s}", SPHERE(0)),
                  "{\"revision\":2,\"distance\":1,\"nearest\":{\"query\":null,\"shape\":\"b\"}}");

    /* Each refused request names what is wrong, changes nothing and takes
     * no revision. */
    expect_error(rpc(c, "scene.replace",
                     "{\"scene\":\"cell\",\"shapes\":{\"d\":%s,\"e\":{\"sphere\":{\"center\":"
                     "[0,0,0],\"radius\":-1}}}}",
                     SPHERE(5)),
                 -32602, "params.shapes.e.sphere.radius");
    cJSON *r = rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{\"a b\":%s}}", SPHERE(5));
    assert_string_equal(str_at(r, "error.data.reason"),
                        "shape id must be 1-128 characters of [A-Za-z0-9_.:/#-]");
    expect_error(r, -32602, "params.shapes.a b");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\"}"), -32602, "params.shapes");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":[]}"), -32602,
                 "params.shapes");
    expect_error(rpc(c, "scene.replace", "{\"shapes\":{}}"), -32602, "params.scene");
    expect_error(
        rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{},\"if_revision\":\"2\"}"), -32602,
        "params.if_revision");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{},\"if_revision\":-2}"),
                 -32602, "params.if_revision");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{},\"if_revision\":2.5}"),
                 -32602, "params.if_revision");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{},\"create\":1}"), -32602,
                 "params.create");
    expect_error(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{},\"merge\":true}"),
                 -32602, "params.merge");
    r = rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{\"d\":%s,\"d\":%s}}", SPHERE(5),
            SPHERE(6));
    assert_string_equal(str_at(r, "error.data.reason"), "duplicate key");
    expect_error(r, -32602, NULL);
    /* A missing scene without create. */
    r = rpc(c, "scene.replace", "{\"scene\":\"nope\",\"shapes\":{}}");
    assert_string_equal(str_at(r, "error.data.kind"), "scene");
    assert_string_equal(str_at(r, "error.data.name"), "nope");
    expect_error(r, -32001, NULL);
    r = rpc(c, "scene.replace", "{\"scene\":\"nope\",\"shapes\":{},\"if_revision\":0}");
    expect_error(r, -32001, NULL);
    /* Conflicts report what was expected and the actual revision. */
    static const struct {
        const char *if_revision;
        const char *scene;
        bool create;
        double actual;
    } conflicts[] = {{"1", "cell", false, 2},
                     {"0", "cell", true, 2},
                     {"3", "cell", false, 2},
                     {"5", "nope", true, 0}};
    for (size_t i = 0; i < sizeof conflicts / sizeof *conflicts; i++) {
        r = rpc(c, "scene.replace", "{\"scene\":\"%s\",\"shapes\":{},\"if_revision\":%s%s}",
                conflicts[i].scene, conflicts[i].if_revision,
                conflicts[i].create ? ",\"create\":true" : "");
        assert_true(num_at(r, "error.data.expected") == atof(conflicts[i].if_revision));
        assert_true(num_at(r, "error.data.actual") == conflicts[i].actual);
        expect_error(r, -32003, NULL);
    }
    /* Five shapes where a scene may hold four: the old content stays. */
    r = rpc(c, "scene.replace",
            "{\"scene\":\"cell\",\"shapes\":{\"p\":%s,\"q\":%s,\"r\":%s,"
            "\"s\":%s,\"t\":%s}}",
            SPHERE(1), SPHERE(2), SPHERE(3), SPHERE(4), SPHERE(5));
    assert_string_equal(str_at(r, "error.data.limit"), "max_shapes_per_scene");
    assert_true(num_at(r, "error.data.max") == 4);
    expect_error(r, -32004, NULL);
    expect_error(rpc(c, "scene.replace",
                     "{\"scene\":\"big\",\"create\":true,\"shapes\":{\"p\":%s,\"q\":%s,\"r\":%s,"
                     "\"s\":%s,\"t\":%s}}",
                     SPHERE(1), SPHERE(2), SPHERE(3), SPHERE(4), SPHERE(5)),
                 -32004, NULL);
    expect_result(rpc(c, "scene.get", "{\"scene\":\"cell\"}"), get_want);
    expect_result(rpc(c, "scene.list", NULL),
                  "{\"scenes\":[{\"scene\":\"cell\",\"revision\":2,\"shapes\":2}]}");
    assert_int_equal(store_revision(c), 2);

    /* Four fit, whatever the old content held; ids may hold '#'. */
    expect_result(rpc(c, "scene.replace",
                      "{\"scene\":\"cell\",\"if_revision\":2,\"shapes\":{\"arm#0\":%s,"
                      "\"arm#1\":%s,\"b\":%s,\"z\":%s}}",
                      SPHERE(1), SPHERE(2), SPHERE(3), SPHERE(4)),
                  "{\"scene\":\"cell\",\"revision\":3}");
    /* Create: a missing scene is made (if_revision 0: it must not exist). */
    expect_result(rpc(c, "scene.replace",
                      "{\"scene\":\"new\",\"create\":true,\"if_revision\":0,\"shapes\":{\"x\":%s}}",
                      SPHERE(7)),
                  "{\"scene\":\"new\",\"revision\":4}");
    expect_result(rpc(c, "scene.get", "{\"scene\":\"new\"}"),
                  "{\"scene\":\"new\",\"revision\":4,\"shapes\":{\"x\":" SPHERE(7) "}}");
    /* An empty replacement empties the scene, which stays. */
    expect_result(rpc(c, "scene.replace", "{\"scene\":\"cell\",\"shapes\":{}}"),
                  "{\"scene\":\"cell\",\"revision\":5}");
    expect_result(rpc(c, "scene.list", NULL),
                  "{\"scenes\":[{\"scene\":\"cell\",\"revision\":5,\"shapes\":0},"
                  "{\"scene\":\"new\",\"revision\":4,\"shapes\":1}]}");
    r = rpc(c, "stats", NULL);
    assert_true(num_at(r, "result.revision") == 5);
    assert_true(num_at(r, "result.shapes") == 1);
    assert_true(num_at(r, "result.scenes") == 2);
    /* by_method's keys hold dots: no dotted path to them. */
    const cJSON *by =
        cJSON_GetObjectItemCaseSensitive(at(r, "result.requests.by_method"), "scene.replace");
    if (!cJSON_IsNumber(by) || by->valuedouble != 23 || num_at(r, "result.requests.errors") != 19) {
        char *text = show(r);
        fail_msg("want 23 scene.replace requests, 19 refused, in %s", text);
    }
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- numbering across scenes, models and connections ------------------------------------------ */

/* One client mutation after another on two connections: each success takes
 * exactly the next number (nothing else mutates), reported by every kind of
 * reply, and every failure takes none. */
static void every_committed_mutation_takes_the_next_number_and_failures_take_none(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *u = connect_ok(d, false), *t = connect_ok(d, true);
    uint64_t last = 0;
#define NEXT(conn, reply)                                                                          \
    do {                                                                                           \
        uint64_t got_ = ok_revision(reply);                                                        \
        if (got_ != last + 1)                                                                      \
            fail_msg("line %d: revision %llu, want %llu", __LINE__, (unsigned long long)got_,      \
                     (unsigned long long)(last + 1));                                              \
        last = got_;                                                                               \
        assert_int_equal(store_revision((conn) == u ? t : u), last);                               \
    } while (0)
#define NONE(reply, code)                                                                          \
    do {                                                                                           \
        expect_error(reply, code, NULL);                                                           \
        assert_int_equal(store_revision(u), last);                                                 \
    } while (0)

    NEXT(u, rpc(u, "scene.create", "{\"scene\":\"a\",\"shapes\":{\"s\":%s}}", SPHERE(0)));
    NEXT(t, rpc(t, "scene.create", "{\"scene\":\"b\"}"));
    NONE(rpc(t, "scene.create", "{\"scene\":\"a\"}"), -32002);
    NEXT(t, rpc(t, "scene.put", "{\"scene\":\"a\",\"shapes\":{\"s2\":%s}}", SPHERE(1)));
    uint64_t a_rev = last;
    NEXT(u, rpc(u, "model.put", "{\"model\":\"m\",\"links\":" LINKS "}"));
    uint64_t m_rev = last;
    NONE(rpc(u, "model.put",
             "{\"model\":\"m\",\"links\":[{\"id\":\"l\",\"frame\":-3,\"shape\":" SPHERE(0) "}]}"),
         -32602);
    NONE(rpc(u, "scene.put", "{\"scene\":\"missing\",\"shapes\":{}}"), -32001);
    NONE(rpc(t, "scene.remove", "{\"scene\":\"a\",\"ids\":[\"s\"],\"if_revision\":1}"), -32003);
    NEXT(u, rpc(u, "scene.remove", "{\"scene\":\"b\",\"ids\":[\"nothing\"]}"));
    NEXT(t, rpc(t, "model.put", "{\"model\":\"n\",\"links\":" LINKS "}"));
    /* Queries take no number. */
    cJSON_Delete(rpc(u, "scene.get", "{\"scene\":\"a\"}"));
    cJSON_Delete(rpc(t, "scene.distance", "{\"scene\":\"a\",\"shape\":%s}", SPHERE(9)));
    cJSON_Delete(rpc(u, "check", "{\"model\":\"m\",\"scene\":\"a\",\"frames\":[{}]}"));
    cJSON_Delete(rpc(t, "model.get", "{\"model\":\"m\"}"));
    assert_int_equal(store_revision(t), last);
    /* The lists show each object's last change. */
    cJSON *r = rpc(u, "scene.list", NULL);
    assert_true(num_at(cJSON_GetArrayItem(at(r, "result.scenes"), 0), "revision") == a_rev);
    assert_true(num_at(cJSON_GetArrayItem(at(r, "result.scenes"), 1), "revision") == a_rev + 2);
    cJSON_Delete(r);
    r = rpc(t, "model.list", NULL);
    assert_true(num_at(cJSON_GetArrayItem(at(r, "result.models"), 0), "revision") == m_rev);
    assert_true(num_at(cJSON_GetArrayItem(at(r, "result.models"), 1), "revision") == last);
    cJSON_Delete(r);
    /* check reports the scene's revision, not the store's. */
    r = rpc(u, "check", "{\"model\":\"m\",\"scene\":\"a\",\"frames\":[{}]}");
    assert_true(num_at(r, "result.scene_revision") == a_rev);
    cJSON_Delete(r);

    NEXT(t, rpc(t, "scene.replace", "{\"scene\":\"a\",\"if_revision\":%llu,\"shapes\":{}}",
                (unsigned long long)a_rev));
    NEXT(u, rpc(u, "model.put", "{\"model\":\"m\",\"links\":" LINKS ",\"safety_margin\":0.5}"));
    NONE(rpc(t, "model.delete", "{\"model\":\"zzz\"}"), -32001);
    NEXT(u, rpc(u, "model.delete", "{\"model\":\"m\"}"));
    NONE(rpc(t, "scene.delete", "{\"scene\":\"zzz\"}"), -32001);
    NEXT(t, rpc(t, "scene.delete", "{\"scene\":\"b\"}"));
    NONE(rpc(u, "scene.replace", "{\"scene\":\"b\",\"shapes\":{}}"), -32001);
    NEXT(u, rpc(u, "scene.put", "{\"scene\":\"b\",\"create\":true,\"shapes\":{}}"));
    NEXT(t, rpc(t, "scene.replace", "{\"scene\":\"c\",\"create\":true,\"shapes\":{}}"));
    NONE(rpc(t, "scene.put", "{\"scene\":\"c\",\"shapes\":{\"bad\":{\"box\":{}}}}"), -32602);
    assert_int_equal(last, 12);
#undef NEXT
#undef NONE
    rh_close(u);
    rh_close(t);
    stop_ok(d);
}

static void delete_and_create_again_never_reuse_a_number(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, true);
    expect_result(rpc(c, "scene.create", "{\"scene\":\"s\",\"shapes\":{\"x\":%s}}", SPHERE(0)),
                  "{\"scene\":\"s\",\"revision\":1}");
    expect_result(rpc(c, "scene.put", "{\"scene\":\"s\",\"shapes\":{}}"),
                  "{\"scene\":\"s\",\"revision\":2}");
    /* The deletion reports the number it took. */
    expect_result(rpc(c, "scene.delete", "{\"scene\":\"s\"}"),
                  "{\"scene\":\"s\",\"deleted\":true,\"revision\":3}");
    assert_int_equal(store_revision(c), 3);
    expect_result(rpc(c, "scene.create", "{\"scene\":\"s\"}"), "{\"scene\":\"s\",\"revision\":4}");
    /* A client that still holds revision 1 or 2 of the old scene cannot
     * write into the new one by mistake. */
    for (int old = 1; old <= 3; old++)
        expect_error(rpc(c, "scene.put", "{\"scene\":\"s\",\"shapes\":{},\"if_revision\":%d}", old),
                     -32003, NULL);
    expect_result(rpc(c, "scene.delete", "{\"scene\":\"s\"}"),
                  "{\"scene\":\"s\",\"deleted\":true,\"revision\":5}");
    expect_result(
        rpc(c, "scene.put", "{\"scene\":\"s\",\"create\":true,\"if_revision\":0,\"shapes\":{}}"),
        "{\"scene\":\"s\",\"revision\":6}");
    expect_result(rpc(c, "scene.delete", "{\"scene\":\"s\"}"),
                  "{\"scene\":\"s\",\"deleted\":true,\"revision\":7}");
    expect_result(rpc(c, "scene.replace", "{\"scene\":\"s\",\"create\":true,\"shapes\":{}}"),
                  "{\"scene\":\"s\",\"revision\":8}");
    /* Models the same way, from the same sequence. */
    expect_result(rpc(c, "model.put", "{\"model\":\"m\",\"links\":" LINKS "}"),
                  "{\"model\":\"m\",\"revision\":9}");
    expect_result(rpc(c, "model.delete", "{\"model\":\"m\"}"),
                  "{\"model\":\"m\",\"deleted\":true,\"revision\":10}");
    expect_result(rpc(c, "model.put", "{\"model\":\"m\",\"links\":" LINKS "}"),
                  "{\"model\":\"m\",\"revision\":11}");
    cJSON *r = rpc(c, "model.get", "{\"model\":\"m\"}");
    assert_true(num_at(r, "result.revision") == 11);
    cJSON_Delete(r);
    expect_result(rpc(c, "scene.list", NULL),
                  "{\"scenes\":[{\"scene\":\"s\",\"revision\":8,\"shapes\":0}]}");
    rh_close(c);
    stop_ok(d);
}

/* Two connections pipeline mutations of every kind at once: each
 * connection sees its numbers rise, and together they took 1..N once each. */
static void pipelined_mutations_on_two_connections_take_every_number_once(void **state)
{
    (void)state;
    const int rounds = rh_wrapped() ? 20 : 200;
    rh_daemon *d = start(NULL);
    rh_conn *conns[2] = {connect_ok(d, false), connect_ok(d, true)};
    int sent[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        textbuf t = {0};
        const char *sc = k ? "tcp-scene" : "unix-scene", *m = k ? "tcp-model" : "unix-model";
        for (int i = 0; i < rounds; i++) {
            /* create, put, remove, replace, model.put, delete, model.delete */
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.create\","
                      "\"params\":{\"scene\":\"%s\",\"shapes\":{\"a\":%s}}}\n",
                      sent[k]++, sc, SPHERE(1));
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\","
                      "\"params\":{\"scene\":\"%s\",\"shapes\":{\"b%d\":%s}}}\n",
                      sent[k]++, sc, i, SPHERE(2));
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.remove\","
                      "\"params\":{\"scene\":\"%s\",\"ids\":[\"a\"]}}\n",
                      sent[k]++, sc);
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.replace\","
                      "\"params\":{\"scene\":\"%s\",\"shapes\":{\"c\":%s}}}\n",
                      sent[k]++, sc, SPHERE(3));
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"model.put\","
                      "\"params\":{\"model\":\"%s\",\"links\":" LINKS "}}\n",
                      sent[k]++, m);
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.delete\","
                      "\"params\":{\"scene\":\"%s\"}}\n",
                      sent[k]++, sc);
            if (i % 2)
                tb_printf(&t,
                          "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"model.delete\","
                          "\"params\":{\"model\":\"%s\"}}\n",
                          sent[k]++, m);
            /* A conflict now and then: takes nothing. */
            if (i % 5 == 0)
                tb_printf(&t,
                          "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\","
                          "\"params\":{\"scene\":\"%s\",\"shapes\":{},\"if_revision\":7,"
                          "\"create\":true}}\n",
                          sent[k]++, sc);
        }
        send_raw(conns[k], t.p, t.len);
        free(t.p);
    }
    int total = sent[0] + sent[1];
    uint64_t *all = calloc((size_t)total, sizeof *all);
    int n_all = 0, conflicts = 0;
    for (int k = 0; k < 2; k++) {
        uint64_t last = 0;
        for (int i = 0; i < sent[k]; i++) {
            cJSON *r = read_json(conns[k]);
            assert_true(num_at(r, "id") == i);
            if (at(r, "error")) {
                assert_true(num_at(r, "error.code") == -32003);
                assert_true(num_at(r, "error.data.actual") == 0);
                conflicts++;
                cJSON_Delete(r);
                continue;
            }
            uint64_t rev = (uint64_t)num_at(r, "result.revision");
            if (rev <= last)
                fail_msg("connection %d, reply %d: revision %llu after %llu", k, i,
                         (unsigned long long)rev, (unsigned long long)last);
            last = rev;
            all[n_all++] = rev;
            cJSON_Delete(r);
        }
    }
    assert_int_equal(conflicts, 2 * ((rounds + 4) / 5));
    bool *seen = calloc((size_t)n_all + 1, sizeof *seen);
    for (int i = 0; i < n_all; i++) {
        if (all[i] < 1 || all[i] > (uint64_t)n_all || seen[all[i]])
            fail_msg("revision %llu twice or outside 1..%d", (unsigned long long)all[i], n_all);
        seen[all[i]] = true;
    }
    assert_int_equal(store_revision(conns[0]), n_all);
    free(seen);
    free(all);
    rh_close(conns[0]);
    rh_close(conns[1]);
    stop_ok(d);
}

/* ---- tree rebuilds ------------------------------------------------------------------------ */

/* Moving many shapes far apart degrades a scene's tree until it asks for a
 * rebuild, which runs on a worker (stats.tree_rebuilds): it takes no
 * revision and changes no result.  Distances are compared with a brute
 * force over the shapes as this test put them. */
static void a_degraded_tree_is_rebuilt_on_a_worker_without_a_revision(void **state)
{
    (void)state;
    enum { N = 1000 };
    const int moves = rh_wrapped() ? 400 : 700;
    const char *args[] = {"--threads", "2", NULL};
    rh_daemon *d = start(args);
    rh_conn *c = connect_ok(d, false);
    create_big_scene(c, "big", N); /* s%05d: sphere at (i, i%7 + .5, -(i%13)), r .25 */
    static rp_shape shapes[N];
    for (int i = 0; i < N; i++)
        shapes[i] = (rp_shape){.kind = RP_SHAPE_SPHERE,
                               .sphere = {{i, i % 7 + 0.5, -(double)(i % 13)}, 0.25}};
    textbuf t = {0};
    for (int k = 0; k < moves; k++) {
        int i = (k * 7) % N;
        rp_vec3 at = {5000.0 + (k * 97) % 3000, -3000.0 + (k * 389) % 6000, (k * 61) % 4000};
        shapes[i].sphere.center = at;
        tb_printf(&t,
                  "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{\"scene\":"
                  "\"big\",\"shapes\":{\"s%05d\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],"
                  "\"radius\":0.25}}}}}\n",
                  k, i, at.x, at.y, at.z);
    }
    send_raw(c, t.p, t.len);
    free(t.p);
    uint64_t last = 0;
    for (int k = 0; k < moves; k++) {
        cJSON *r = read_json(c);
        assert_true(num_at(r, "id") == k);
        last = ok_revision(r);
    }
    /* The rebuild finishes some time after the put that asked for it. */
    double installed = 0;
    for (int tries = 0; tries < 400 && installed < 1; tries++) {
        cJSON *r = rpc(c, "stats", NULL);
        installed = num_at(r, "result.tree_rebuilds.installed");
        cJSON_Delete(r);
        if (installed < 1)
            rh_sleep_ms(25);
    }
    if (installed < 1)
        fail_msg("no tree rebuild installed after %d moves", moves);
    assert_int_equal(store_revision(c), last);
    for (int q = 0; q < 40; q++) {
        rp_shape qs = {.kind = RP_SHAPE_SPHERE, .sphere = {{q * 25.0 - 5.0, q % 3, 0.0}, 0.1}};
        if (q >= 30)
            qs.sphere.center = (rp_vec3){5000.0 + q * 100.0, -3000.0 + q * 150.0, q * 90.0};
        double best = INFINITY;
        int bi = -1;
        for (int i = 0; i < N; i++) {
            double x = rp_shape_signed_distance(&qs, &shapes[i]);
            if (x < best) { /* ids ascend with i: the first of equals wins */
                best = x;
                bi = i;
            }
        }
        cJSON *r = rpc(c, "scene.distance",
                       "{\"scene\":\"big\",\"shape\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],"
                       "\"radius\":0.1}}}",
                       qs.sphere.center.x, qs.sphere.center.y, qs.sphere.center.z);
        char want[16];
        snprintf(want, sizeof want, "s%05d", bi);
        if (num_at(r, "result.distance") != best || strcmp(str_at(r, "result.nearest.shape"), want))
            fail_msg("query %d: %s, want %.17g to %s", q, show(r), best, want);
        assert_true(num_at(r, "result.revision") == (double)last);
        cJSON_Delete(r);
    }
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(scene_replace_swaps_the_whole_content_and_refuses_bad_requests_whole),
        DAEMON_TEST(every_committed_mutation_takes_the_next_number_and_failures_take_none),
        DAEMON_TEST(delete_and_create_again_never_reuse_a_number),
        DAEMON_TEST(pipelined_mutations_on_two_connections_take_every_number_once),
        DAEMON_TEST(a_degraded_tree_is_rebuilt_on_a_worker_without_a_revision),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
