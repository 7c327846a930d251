/* SPDX-License-Identifier: MIT */
/*
 * Light queries on the event loop (proto/PROTOCOL.md, "Queries run on
 * worker threads"): a single check, scene.distance or scene.check runs on
 * the loop while the workers are idle, within a small work budget, and
 * goes to a worker when it needs more.  Against the real reposed:
 *  - light and heavy requests pipelined on one connection, and on two
 *    connections at once, are answered in order with the bytes each gets
 *    alone;
 *  - a check that overruns the light budget (a model of 400 spheres with
 *    self collision) still gets the right answer, the one a daemon without
 *    workers gives, and is counted once in `stats`.
 *
 * Usage: test_daemon_light PATH-TO-REPOSED
 */
#define _POSIX_C_SOURCE 200809L
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

/* A growing string. */
typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    assert_true(n >= 0);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    t->len += (size_t)n;
    va_end(ap);
}

/* The setup: model "arm" (two capsules on two revolute joints), model
 * "blob" (400 spheres on one joint, self collision on: its checks cost far
 * more than the light budget) and scene "cell" of a few hundred spheres. */
static void setup(rh_conn *c)
{
    text t = {0};
    add(&t,
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"model.put\",\"params\":{\"model\":\"arm\","
        "\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\",\"child\":"
        "\"l1\",\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}},{\"name\":\"j2\","
        "\"type\":\"revolute\",\"parent\":\"l1\",\"child\":\"l2\",\"origin\":{\"xyz\":[1,0,0]},"
        "\"axis\":[0,0,1],\"limits\":{\"lower\":-2,\"upper\":2}}],\"links\":[{\"id\":\"upper\","
        "\"link\":\"l1\",\"shape\":{\"capsule\":{\"a\":[0,0,0],\"b\":[1,0,0],\"radius\":0.05}}},"
        "{\"id\":\"fore\",\"link\":\"l2\",\"shape\":{\"capsule\":{\"a\":[0,0,0],\"b\":[1,0,0],"
        "\"radius\":0.05}}}]}}");
    cJSON *r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    t.len = 0;
    add(&t, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"model.put\",\"params\":{\"model\":\"blob\","
            "\"self_collision\":true,\"joints\":[{\"name\":\"j\",\"type\":\"revolute\",\"parent\":"
            "\"base\",\"child\":\"b\",\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}}],"
            "\"links\":[");
    for (int k = 0; k < 400; k++)
        add(&t,
            "%s{\"id\":\"s%d\",\"link\":\"%s\",\"shape\":{\"sphere\":{\"center\":[%g,%g,0],"
            "\"radius\":0.01}}}",
            k ? "," : "", k, k % 2 ? "b" : "base", 0.03 * (k % 20), 0.03 * (k / 20));
    add(&t, "]}}");
    r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    t.len = 0;
    add(&t, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"scene.create\",\"params\":{\"scene\":"
            "\"cell\",\"shapes\":{");
    for (int k = 0; k < 300; k++)
        add(&t, "%s\"p%d\":{\"sphere\":{\"center\":[%g,%g,%g],\"radius\":0.02}}", k ? "," : "", k,
            -1.5 + 0.01 * k, 0.7 - 0.004 * k, 0.1 * (k % 3));
    add(&t, "}}}");
    r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    free(t.p);
}

/* Request k of the mix: light (check, scene.distance, scene.check) and
 * heavy (check.batch, plan, the blob's check) requests in turn. */
static void request(text *t, int k)
{
    double a = -1.0 + 0.1 * (k % 20), b = 0.5 - 0.05 * (k % 17);
    switch (k % 6) {
    case 0:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"check\",\"params\":{\"model\":\"arm\","
            "\"scene\":\"cell\",\"joints\":[%g,%g]}}",
            k, a, b);
        break;
    case 1:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"check.batch\",\"params\":{\"model\":"
            "\"arm\",\"scene\":\"cell\",\"joints\":[",
            k);
        for (int i = 0; i < 400; i++)
            add(t, "%s[%g,%g]", i ? "," : "", a + 0.001 * i, b - 0.002 * i);
        add(t, "]}}");
        break;
    case 2:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.distance\",\"params\":{\"scene\":"
            "\"cell\",\"shapes\":{\"q\":{\"sphere\":{\"center\":[%g,%g,0],\"radius\":0.05}}}}}",
            k, a, b);
        break;
    case 3:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"check\",\"params\":{\"model\":\"blob\","
            "\"scene\":\"cell\",\"joints\":[%g]}}",
            k, a);
        break;
    case 4:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.check\",\"params\":{\"scene\":"
            "\"cell\",\"shapes\":{\"q\":{\"capsule\":{\"a\":[%g,%g,0],\"b\":[%g,%g,0.2],"
            "\"radius\":0.03}}},\"margin\":0.05}}",
            k, a, b, b, a);
        break;
    default:
        add(t,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"plan\",\"params\":{\"model\":\"arm\","
            "\"scene\":\"cell\",\"start\":[0,0],\"goal\":[%g,%g],\"seed\":%d,"
            "\"timeout_ms\":2000}}",
            k, a, b, k);
        break;
    }
}

enum { MIX = 36 };

/* Each request of the mix alone, on a daemon with `flags`: its reply line
 * (with the plan's time blanked, which differs run to run). */
static char **replies_alone(const char *const *flags)
{
    rh_daemon *d = start(flags);
    rh_conn *c = connect_ok(d, false);
    setup(c);
    char **out = calloc(MIX, sizeof *out);
    assert_non_null(out);
    for (int k = 0; k < MIX; k++) {
        text t = {0};
        request(&t, k);
        out[k] = strdup(call_line(c, t.p));
        free(t.p);
    }
    rh_close(c);
    stop_ok(d);
    return out;
}

/* The reply with a plan's "ms" value replaced by 0. */
static char *blank_ms(const char *line)
{
    char *s = strdup(line);
    char *m = strstr(s, "\"stats\":{\"ms\":");
    if (m) {
        char *v = m + strlen("\"stats\":{\"ms\":");
        char *end = v;
        while (*end && *end != ',' && *end != '}')
            end++;
        memmove(v + 1, end, strlen(end) + 1);
        *v = '0';
    }
    return s;
}

static void assert_same_reply(const char *got, const char *want, int k)
{
    char *a = blank_ms(got), *b = blank_ms(want);
    if (strcmp(a, b) != 0)
        fail_msg("request %d:\n got %s\nwant %s", k, a, b);
    free(a);
    free(b);
}

static void pipelined_light_and_heavy_requests_keep_their_order(void **state)
{
    (void)state;
    static const char *const no_workers[] = {"--threads", "0", NULL};
    char **want = replies_alone(no_workers);
    rh_daemon *d = start(NULL);
    rh_conn *c[2] = {connect_ok(d, false), connect_ok(d, true)};
    setup(c[0]);
    /* Both connections send the whole mix in one write each, then read. */
    for (int i = 0; i < 2; i++) {
        text t = {0};
        for (int k = 0; k < MIX; k++) {
            request(&t, k);
            add(&t, "\n");
        }
        assert_true(rh_send(c[i], t.p, t.len));
        free(t.p);
    }
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < MIX; k++) {
            const char *line;
            size_t len;
            assert_int_equal(rh_read_line(c[i], rh_ms(RH_TIMEOUT_MS), &line, &len), RH_LINE);
            char *got = strndup(line, len);
            assert_same_reply(got, want[k], k);
            free(got);
        }
    }
    /* One at a time too (the workers idle: light ones on the loop). */
    for (int k = 0; k < MIX; k++) {
        text t = {0};
        request(&t, k);
        assert_same_reply(call_line(c[0], t.p), want[k], k);
        free(t.p);
    }
    for (int k = 0; k < MIX; k++)
        free(want[k]);
    free(want);
    rh_close(c[0]);
    rh_close(c[1]);
    stop_ok(d);
}

static void a_check_over_the_light_budget_is_answered_once_and_right(void **state)
{
    (void)state;
    static const char *const no_workers[] = {"--threads", "0", NULL};
    char **want = replies_alone(no_workers);
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    setup(c);
    text t = {0};
    request(&t, 3); /* the blob's check */
    assert_same_reply(call_line(c, t.p), want[3], 3);
    t.len = 0;
    request(&t, 0); /* a light one */
    assert_same_reply(call_line(c, t.p), want[0], 0);
    free(t.p);
    cJSON *s = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"stats\"}");
    assert_int_equal((int)num_at(s, "result.requests.by_method.check"), 2);
    assert_int_equal((int)num_at(s, "result.requests.errors"), 0);
    assert_int_equal((int)num_at(s, "result.limits_hit.max_loop_work"), 0);
    cJSON_Delete(s);
    for (int k = 0; k < MIX; k++)
        free(want[k]);
    free(want);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(pipelined_light_and_heavy_requests_keep_their_order),
        DAEMON_TEST(a_check_over_the_light_budget_is_answered_once_and_right),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
