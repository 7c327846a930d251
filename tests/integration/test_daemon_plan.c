/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests of `plan` (proto/PROTOCOL.md, Planning) against the real
 * reposed over its real socket: a puck (a sphere on two prismatic joints)
 * through a gap in a wall, in both edge modes, each edge of the path
 * confirmed by the daemon's own `check.motion` in certified mode and by a
 * dense `check.batch` at a 1e-3 step; the same seed against the same
 * revision giving the same bytes; invalid start and goal reported with the
 * violation as `check` reports it; a goal set; `ignore` and `attached`
 * honoured; the timeout; refusals with a path; the counters of `stats`;
 * a client that disconnects mid-plan: its plan stops (counted as stopped,
 * long before its timeout) and the worker serves the next client; and eight
 * clients planning at once get what each would alone.
 *
 * Usage: test_daemon_plan PATH-TO-REPOSED
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

static int next_id = 1;

static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cJSON *rpc(rh_conn *c, const char *method, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    char params[8192];
    int n = vsnprintf(params, sizeof params, params_fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof params);
    char line[8400];
    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
             next_id++, method, params);
    return call_json(c, line);
}

static const cJSON *result_of(const cJSON *r)
{
    const cJSON *res = at(r, "result");
    if (!res) {
        char *s = show(r);
        fail_msg("not a result: %s", s);
    }
    return res;
}

/* The puck and a wall along x = 0 with a gap for y in [0.5, 0.7]. */
static void put_puck_and_wall(rh_conn *c)
{
    cJSON *r = rpc(c, "model.put",
                   "{\"model\":\"puck\",\"joints\":["
                   "{\"name\":\"x\",\"type\":\"prismatic\",\"parent\":\"base\",\"child\":\"mx\","
                   "\"axis\":[1,0,0],\"limits\":{\"lower\":-1,\"upper\":1}},"
                   "{\"name\":\"y\",\"type\":\"prismatic\",\"parent\":\"mx\",\"child\":\"p\","
                   "\"axis\":[0,1,0],\"limits\":{\"lower\":-1,\"upper\":1}}],"
                   "\"links\":[{\"id\":\"ball\",\"link\":\"p\",\"shape\":{\"sphere\":"
                   "{\"center\":[0,0,0],\"radius\":0.05}}}]}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "scene.create",
            "{\"scene\":\"wall\",\"shapes\":{"
            "\"low\":{\"box\":{\"center\":[0,-0.35,0],\"half_extents\":[0.05,0.85,0.2]}},"
            "\"high\":{\"box\":{\"center\":[0,0.95,0],\"half_extents\":[0.05,0.25,0.2]}}}}");
    result_of(r);
    cJSON_Delete(r);
}

/* Every edge of `path` passes the daemon's certified check.motion, and a
 * dense check.batch of its states at a joint step of 1e-3. */
static void assert_edges_clear(rh_conn *c, const cJSON *path, const char *extra)
{
    int n = cJSON_GetArraySize(path);
    assert_true(n >= 2);
    for (int i = 0; i + 1 < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(path, i), *b = cJSON_GetArrayItem(path, i + 1);
        double ax = cJSON_GetArrayItem(a, 0)->valuedouble,
               ay = cJSON_GetArrayItem(a, 1)->valuedouble;
        double bx = cJSON_GetArrayItem(b, 0)->valuedouble,
               by = cJSON_GetArrayItem(b, 1)->valuedouble;
        cJSON *r = rpc(c, "check.motion",
                       "{\"model\":\"puck\",\"scene\":\"wall\",\"mode\":\"certified\",%s"
                       "\"path\":[[%.17g,%.17g],[%.17g,%.17g]]}",
                       extra, ax, ay, bx, by);
        if (!cJSON_IsTrue(at(result_of(r), "valid")))
            fail_msg("edge %d: %s", i, show(r));
        cJSON_Delete(r);
        int steps = (int)ceil(fmax(fabs(bx - ax), fabs(by - ay)) / 1e-3);
        steps = steps < 1 ? 1 : steps;
        for (int s0 = 0; s0 <= steps; s0 += 100) {
            char params[8192];
            size_t at_ = (size_t)snprintf(params, sizeof params,
                                          "{\"model\":\"puck\",\"scene\":\"wall\",%s"
                                          "\"report\":\"first\",\"joints\":[",
                                          extra);
            for (int s = s0; s <= steps && s < s0 + 100; s++) {
                double t = (double)s / steps;
                at_ += (size_t)snprintf(params + at_, sizeof params - at_, "%s[%.17g,%.17g]",
                                        s > s0 ? "," : "", ax + (bx - ax) * t, ay + (by - ay) * t);
                assert_true(at_ < sizeof params - 64);
            }
            snprintf(params + at_, sizeof params - at_, "]}");
            cJSON *br = rpc(c, "check.batch", "%s", params);
            const cJSON *results = at(result_of(br), "results");
            const cJSON *e;
            cJSON_ArrayForEach(e, results)
            {
                if (!cJSON_IsTrue(at(e, "valid")))
                    fail_msg("edge %d collides between samples: %s", i, show(e));
            }
            cJSON_Delete(br);
        }
    }
}

static void a_wall_with_a_gap_is_passed_and_every_edge_checks(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    for (int mode = 0; mode < 2; mode++) {
        cJSON *r =
            rpc(c, "plan",
                "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
                "\"goal\":{\"x\":0.8,\"y\":-0.8},\"edges\":\"%s\",\"seed\":%d%s}",
                mode ? "certified" : "discrete", 3 + mode, mode ? "" : ",\"resolution\":0.005");
        const cJSON *res = result_of(r);
        assert_true(cJSON_IsTrue(at(res, "solved")));
        assert_int_equal((int)num_at(res, "revision"), 2);
        assert_int_equal((int)num_at(res, "goal_index"), 0);
        const cJSON *path = at(res, "path");
        int n = cJSON_GetArraySize(path);
        assert_true(n >= 3);
        assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(path, 0), 0)->valuedouble == -0.8);
        assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(path, 0), 1)->valuedouble == -0.8);
        const cJSON *last = cJSON_GetArrayItem(path, n - 1);
        assert_true(cJSON_GetArrayItem(last, 0)->valuedouble == 0.8);
        assert_true(cJSON_GetArrayItem(last, 1)->valuedouble == -0.8);
        assert_true(num_at(res, "stats.edges_checked") >= n - 1);
        assert_true(num_at(res, "stats.states_checked") > 0);
        assert_edges_clear(c, path, "");
        cJSON_Delete(r);
    }
    cJSON *s = rpc(c, "stats", "{}");
    assert_int_equal((int)num_at(result_of(s), "plans.total"), 2);
    assert_int_equal((int)num_at(result_of(s), "plans.solved"), 2);
    assert_int_equal((int)num_at(result_of(s), "requests.by_method.plan"), 2);
    cJSON_Delete(s);
    rh_close(c);
    stop_ok(d);
}

static void the_same_seed_and_revision_give_the_same_bytes(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    char *first = NULL;
    for (int k = 0; k < 3; k++) {
        cJSON *r = rpc(c, "plan",
                       "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
                       "\"goal\":[0.8,-0.8],\"seed\":11,\"simplify\":false}");
        char *p = cJSON_PrintUnformatted(at(result_of(r), "path"));
        if (!first)
            first = p;
        else {
            assert_string_equal(p, first);
            free(p);
        }
        cJSON_Delete(r);
    }
    free(first);
    rh_close(c);
    stop_ok(d);
}

static void invalid_ends_goal_sets_ignore_and_attached(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    /* A goal in the wall: the violation as check reports it. */
    cJSON *r = rpc(c, "plan",
                   "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
                   "\"goal\":[0,-0.5]}");
    const cJSON *res = result_of(r);
    assert_false(cJSON_IsTrue(at(res, "solved")));
    assert_string_equal(str_at(res, "reason"), "goal_invalid");
    assert_string_equal(str_at(res, "violation.other"), "low");
    assert_string_equal(str_at(res, "violation.kind"), "scene");
    assert_string_equal(str_at(res, "violation.link"), "ball");
    assert_true(num_at(res, "violation.distance") < 0);
    assert_null(at(res, "path"));
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[0,0.95],\"goal\":[0.8,-0.8]}");
    assert_string_equal(str_at(result_of(r), "reason"), "start_invalid");
    assert_string_equal(str_at(result_of(r), "violation.other"), "high");
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],\"goal\":[1.5,0]}");
    assert_string_equal(str_at(result_of(r), "reason"), "goal_invalid");
    assert_string_equal(str_at(result_of(r), "violation.kind"), "limits");
    const cJSON *lim = cJSON_GetArrayItem(at(result_of(r), "violation.limits"), 0);
    assert_string_equal(str_at(lim, "joint"), "x");
    cJSON_Delete(r);
    /* A goal set whose first member is in the wall. */
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goals\":[[0,-0.5],[-0.8,0.8]]}");
    res = result_of(r);
    assert_true(cJSON_IsTrue(at(res, "solved")));
    assert_int_equal((int)num_at(res, "goal_index"), 1);
    cJSON_Delete(r);
    /* Ignoring an object that fills the gap; an attached shape too wide
     * for it. */
    r = rpc(c, "scene.put",
            "{\"scene\":\"wall\",\"objects\":{\"plug\":{\"shapes\":{\"p\":{\"box\":"
            "{\"center\":[0,0.6,0],\"half_extents\":[0.05,0.1,0.2]}}}}}}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"timeout_ms\":200}");
    assert_string_equal(str_at(result_of(r), "reason"), "timeout");
    assert_true(num_at(result_of(r), "stats.ms") >= 200);
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"ignore\":[\"plug\"]}");
    res = result_of(r);
    assert_true(cJSON_IsTrue(at(res, "solved")));
    assert_edges_clear(c, at(res, "path"), "\"ignore\":[\"plug\"],");
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"ignore\":[\"plug\"],\"timeout_ms\":200,\"attached\":["
            "{\"id\":\"bar\",\"link\":\"p\",\"shape\":{\"capsule\":{\"a\":[0,-0.15,0],"
            "\"b\":[0,0.15,0],\"radius\":0.02}}}]}");
    assert_string_equal(str_at(result_of(r), "reason"), "timeout");
    cJSON_Delete(r);
    /* An edge of 10^12 states (a resolution of 1e-12) still ends the plan
     * about its timeout: each edge gets the states the time left can pay. */
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"edges\":\"discrete\",\"resolution\":1e-12,"
            "\"timeout_ms\":300}");
    assert_string_equal(str_at(result_of(r), "reason"), "timeout");
    assert_true(num_at(result_of(r), "stats.ms") < 30000);
    cJSON_Delete(r);
    /* A densification into more than a million waypoints: refused. */
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"max_step\":1e-9,\"ignore\":[\"plug\"]}");
    expect_error(r, -32602, "params.max_step");
    cJSON *s = rpc(c, "stats", "{}");
    assert_int_equal((int)num_at(result_of(s), "plans.timeouts"), 3);
    cJSON_Delete(s);
    rh_close(c);
    stop_ok(d);
}

static void bad_plans_are_refused_with_a_path(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-plan-ms", "500", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    static const struct {
        const char *params;
        int code;
        const char *path;
    } bad[] = {
        {"{\"model\":\"puck\",\"start\":[0,0]}", -32602, "params.goal"},
        {"{\"model\":\"puck\",\"goal\":[0,0]}", -32602, "params.start"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"goals\":[[0,0]]}", -32602,
         "params.goals"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goals\":[]}", -32602, "params.goals"},
        {"{\"model\":\"puck\",\"start\":[0],\"goal\":[0,0]}", -32602, "params.start"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goals\":[[0,0],[0,\"x\"]]}", -32602,
         "params.goals[1][1]"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"timeout_ms\":501}", -32602,
         "params.timeout_ms"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"timeout_ms\":0}", -32602,
         "params.timeout_ms"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"edges\":\"fast\"}", -32602,
         "params.edges"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"resolution\":0.1}", -32602,
         "params.resolution"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"edges\":\"discrete\","
         "\"tolerance\":0.1}",
         -32602, "params.tolerance"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"seed\":-1}", -32602, "params.seed"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"seed\":1.5}", -32602, "params.seed"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"planner\":\"prm\"}", -32602,
         "params.planner"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"max_step\":0}", -32602,
         "params.max_step"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"range\":-1}", -32602,
         "params.range"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"simplify\":1}", -32602,
         "params.simplify"},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"nope\":1}", -32602, "params.nope"},
        {"{\"model\":\"nope\",\"start\":[0,0],\"goal\":[0,0]}", -32001, NULL},
        {"{\"model\":\"puck\",\"scene\":\"nope\",\"start\":[0,0],\"goal\":[0,0]}", -32001, NULL},
        {"{\"model\":\"puck\",\"start\":[0,0],\"goal\":[0,0],\"ignore\":[\"x\"]}", -32602,
         "params.ignore"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cJSON *r = rpc(c, "plan", "%s", bad[k].params);
        expect_error(r, bad[k].code, bad[k].path);
    }
    expect_pong(c);
    cJSON *s = rpc(c, "stats", "{}");
    assert_int_equal((int)num_at(result_of(s), "plans.total"), 0);
    cJSON_Delete(s);
    rh_close(c);
    stop_ok(d);
}

static void a_plan_stops_when_its_client_goes(void **state)
{
    (void)state;
    /* One worker: the next client's query waits for it. */
    static const char *const extra[] = {"--threads", "1", "--max-plan-ms", "60000", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    cJSON *r = rpc(c, "scene.put",
                   "{\"scene\":\"wall\",\"shapes\":{\"plug\":{\"box\":"
                   "{\"center\":[0,0.6,0],\"half_extents\":[0.05,0.1,0.2]}}}}");
    result_of(r);
    cJSON_Delete(r);
    /* Unsolvable (the gap is plugged): it would run its full minute. */
    assert_true(rh_send_line(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"plan\",\"params\":"
                                "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
                                "\"goal\":[0.8,-0.8],\"timeout_ms\":60000}}\n"));
    rh_sleep_ms(rh_ms(200));
    rh_close(c);
    rh_conn *c2 = connect_ok(d, false);
    r = rpc(c2, "check", "{\"model\":\"puck\",\"scene\":\"wall\",\"joints\":[0.5,0.5]}");
    assert_true(cJSON_IsTrue(at(result_of(r), "valid")));
    cJSON_Delete(r);
    r = rpc(c2, "stats", "{}");
    const cJSON *res = result_of(r);
    assert_int_equal((int)num_at(res, "plans.total"), 1);
    assert_int_equal((int)num_at(res, "plans.stopped"), 1);
    assert_int_equal((int)num_at(res, "plans.timeouts"), 0);
    assert_true(num_at(res, "plans.ms") < 60000);
    cJSON_Delete(r);
    rh_close(c2);
    stop_ok(d);
}

/* Without workers a plan runs on the event loop, which it holds: its
 * timeout is cut to a tenth of a second there (far below the 5 s asked). */
static void a_plan_on_the_event_loop_is_cut_short(void **state)
{
    (void)state;
    static const char *const extra[] = {"--threads", "0", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    cJSON *r = rpc(c, "scene.put",
                   "{\"scene\":\"wall\",\"shapes\":{\"plug\":{\"box\":"
                   "{\"center\":[0,0.6,0],\"half_extents\":[0.05,0.1,0.2]}}}}");
    result_of(r);
    cJSON_Delete(r);
    r = rpc(c, "plan",
            "{\"model\":\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],"
            "\"goal\":[0.8,-0.8],\"timeout_ms\":5000}");
    assert_string_equal(str_at(result_of(r), "reason"), "timeout");
    assert_true(num_at(result_of(r), "stats.ms") < 4000);
    cJSON_Delete(r);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* Eight clients plan at once, each with its own seed; then each seed is
 * planned again alone: the same bytes (every plan read one version, and no
 * plan disturbed another). */
enum { PLANNERS = 8 };

typedef struct planner_client {
    rh_conn *c; /* connected by the main thread (the harness's pool is not shared) */
    int seed;
    char *path; /* the reply's path, as printed by cJSON; NULL on any failure */
} planner_client;

static char *plan_line(int seed)
{
    char *line = malloc(512);
    assert_non_null(line);
    snprintf(line, 512,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"plan\",\"params\":{\"model\":"
             "\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],\"goal\":[0.8,-0.8],"
             "\"seed\":%d,\"simplify\":false}}",
             seed, seed);
    return line;
}

/* The path of a solved reply (the caller frees), or NULL. */
static char *path_of(const char *reply, size_t len)
{
    cJSON *r = cJSON_ParseWithLength(reply, len);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "result");
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(res, "path");
    char *p = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "solved")) && path
                  ? cJSON_PrintUnformatted(path)
                  : NULL;
    cJSON_Delete(r);
    return p;
}

/* A thread: no assertion here (cmocka's are not thread-safe); a failure
 * leaves path NULL. */
static void *planner_main(void *arg)
{
    planner_client *pc = arg;
    char *line = malloc(512);
    if (!line)
        return NULL;
    snprintf(line, 512,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"plan\",\"params\":{\"model\":"
             "\"puck\",\"scene\":\"wall\",\"start\":[-0.8,-0.8],\"goal\":[0.8,-0.8],"
             "\"seed\":%d,\"simplify\":false}}",
             pc->seed, pc->seed);
    const char *reply;
    size_t len;
    if (rh_send_line(pc->c, line) &&
        rh_read_line(pc->c, rh_ms(RH_TIMEOUT_MS), &reply, &len) == RH_LINE)
        pc->path = path_of(reply, len);
    free(line);
    return NULL;
}

static void concurrent_plans_equal_plans_alone(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_puck_and_wall(c);
    planner_client pcs[PLANNERS];
    pthread_t tids[PLANNERS];
    for (int i = 0; i < PLANNERS; i++)
        pcs[i] = (planner_client){connect_ok(d, i % 2 == 1), 100 + i, NULL};
    for (int i = 0; i < PLANNERS; i++)
        assert_int_equal(pthread_create(&tids[i], NULL, planner_main, &pcs[i]), 0);
    for (int i = 0; i < PLANNERS; i++)
        assert_int_equal(pthread_join(tids[i], NULL), 0);
    for (int i = 0; i < PLANNERS; i++) {
        rh_close(pcs[i].c);
        assert_non_null(pcs[i].path);
        char *line = plan_line(pcs[i].seed);
        const char *reply = call_line(c, line);
        char *alone = path_of(reply, strlen(reply));
        free(line);
        assert_non_null(alone);
        assert_string_equal(alone, pcs[i].path);
        free(alone);
        free(pcs[i].path);
    }
    cJSON *s = rpc(c, "stats", "{}");
    assert_int_equal((int)num_at(result_of(s), "plans.solved"), 2 * PLANNERS);
    cJSON_Delete(s);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(a_wall_with_a_gap_is_passed_and_every_edge_checks),
        DAEMON_TEST(the_same_seed_and_revision_give_the_same_bytes),
        DAEMON_TEST(invalid_ends_goal_sets_ignore_and_attached),
        DAEMON_TEST(bad_plans_are_refused_with_a_path),
        DAEMON_TEST(a_plan_stops_when_its_client_goes),
        DAEMON_TEST(concurrent_plans_equal_plans_alone),
        DAEMON_TEST(a_plan_on_the_event_loop_is_cut_short),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
