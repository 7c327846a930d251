/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L /* strdup */
/*
 * JSON-RPC dispatch without sockets: request lines in, reply lines out.
 * Envelope validation, notifications, batches, error codes and data, and
 * that failed mutations leave scenes untouched.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "server/core/core.h"
#include "server/protocol/methods.h"
#include "server/protocol/req.h"
#include "server/protocol/rpc.h"

typedef struct fixture {
    rpd_core core;
    rpd_session session;
    rp_jw out;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !rpd_core_init(&f->core, NULL))
        return -1;
    rp_jw_init(&f->out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rp_jw_free(&f->out);
    rpd_core_free(&f->core);
    free(f);
    return 0;
}

/* Sends one line; returns everything the server wrote for it (static
 * buffer, "" when nothing). */
static const char *call(fixture *f, const char *line)
{
    static char reply[1 << 16];
    rp_jw_reset(&f->out);
    rpd_process_line(&f->core, &f->session, line, strlen(line), &f->out);
    assert_false(f->out.oom);
    assert_true(f->out.len < sizeof reply);
    memcpy(reply, f->out.buf ? f->out.buf : "", f->out.len);
    reply[f->out.len] = '\0';
    return reply;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

#define assert_reply(f, line, want) assert_string_equal(call(f, line), want "\n")

static void ping_answers_pong_with_the_same_id(void **state)
{
    fixture *f = *state;
    assert_reply(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"pong\":true}}");
    assert_reply(f, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\",\"params\":{}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"result\":{\"pong\":true}}");
    assert_reply(f, "{\"id\":null,\"method\":\"ping\",\"jsonrpc\":\"2.0\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"pong\":true}}");
}

static void unknown_method_is_32601_with_method_in_data(void **state)
{
    fixture *f = *state;
    assert_reply(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no.such.method\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":"
                 "\"Method not found: no.such.method\",\"data\":{\"method\":\"no.such.method\"}}}");
}

/* data.suggestion (proto/PROTOCOL.md, Errors): the nearest method when one
 * is near, nothing otherwise. */
static void unknown_method_suggests_the_nearest_method(void **state)
{
    fixture *f = *state;
    assert_reply(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.lst\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":"
                 "\"Method not found: scene.lst\",\"data\":{\"method\":\"scene.lst\","
                 "\"suggestion\":\"scene.list\"}}}");
    static const char *const cases[][2] = {
        {"PING", "ping"}, /* only the case differs */
        {"Scene.Create", "scene.create"},
        {"chek", "check"}, /* one edit */
        {"check.batsh", "check.batch"},
        {"model.gett", "model.get"},
        {"sceneput", "scene.put"}, /* the dot left out */
        {"list", "model.list"},    /* the part after the dot; a tie: the first */
        {"scene.unwach", "scene.unwatch"},
        {"violates-margin", "violates_margin"},
        {"scene.distanse", "scene.distance"},
    };
    char line[256], want[160];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"%s\"}",
                 cases[i][0]);
        snprintf(want, sizeof want, "\"data\":{\"method\":\"%s\",\"suggestion\":\"%s\"}}}",
                 cases[i][0], cases[i][1]);
        const char *r = call(f, line);
        if (!strstr(r, want))
            fail_msg("%s: got %s, want ...%s", cases[i][0], r, want);
        assert_string_equal(rpd_method_suggest(cases[i][0]), cases[i][1]);
    }
    /* Nothing near: no suggestion member. */
    static const char *const far[] = {"no.such", "nope", "x", "scene.subscribe",
                                      "a-method-name-much-longer-than-sixty-four-bytes-"
                                      "which-is-compared-with-nothing"};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\"}", far[i]);
        const char *r = call(f, line);
        assert_non_null(strstr(r, "\"code\":-32601"));
        if (strstr(r, "suggestion"))
            fail_msg("%s: unexpected suggestion in %s", far[i], r);
        assert_null(rpd_method_suggest(far[i]));
    }
    /* Every real method is its own nearest, so a near miss cannot point
     * past it. */
    for (size_t i = 0; i < rpd_method_count; i++)
        assert_string_equal(rpd_method_suggest(rpd_methods[i].name), rpd_methods[i].name);
}

static void bad_envelopes_are_invalid_requests(void **state)
{
    fixture *f = *state;
    const char *bad[] = {
        "{\"id\":1,\"method\":\"ping\"}",                              /* no jsonrpc */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",          /* wrong version */
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                              /* no method */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",                 /* method not string */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":1}",  /* unknown member */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", /* duplicate member */
        "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",        /* id not scalar */
        "42",
        "\"ping\"",
        "null",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *r = call(f, bad[i]);
        assert_non_null(strstr(r, "\"code\":-32600"));
        assert_true(r[strlen(r) - 1] == '\n');
    }
    /* The id is echoed when it can be read. */
    assert_non_null(
        strstr(call(f, "{\"jsonrpc\":\"1.0\",\"id\":9,\"method\":\"ping\"}"), "\"id\":9,"));
}

static void parse_errors_carry_the_offset(void **state)
{
    fixture *f = *state;
    const char *r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"");
    assert_non_null(strstr(r, "\"id\":null,\"error\":{\"code\":-32700"));
    assert_non_null(strstr(r, "\"data\":{\"offset\":"));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing");
    assert_non_null(strstr(r, "\"code\":-32700"));
    assert_non_null(strstr(r, "\"offset\":41"));
    r = call(f, "{\"a\":NaN}");
    assert_non_null(strstr(r, "\"code\":-32700"));
    r = call(f, "{\"s\":\"\xC0\x80\"}"); /* overlong UTF-8 */
    assert_non_null(strstr(r, "\"code\":-32700"));
    assert_non_null(strstr(r, "\"offset\":6"));
}

static void control_bytes_and_nul_escapes_are_refused(void **state)
{
    fixture *f = *state;
    /* cJSON would treat \x01 as whitespace and truncate "keep\u0000junk". */
    const char *r = call(f, "{\"jsonrpc\":\"2.0\",\x01\"id\":5,\"method\":\"ping\"}");
    assert_non_null(strstr(r, "\"code\":-32700"));
    assert_non_null(strstr(r, "\"offset\":17"));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.create\",\"params\":"
                "{\"scene\":\"keep\\u0000junk\"}}");
    assert_non_null(strstr(r, "\"code\":-32600"));
    assert_null(rp_store_find(f->core.store, "keep"));
}

/* Numbers are strict JSON (proto/PROTOCOL.md): every lenient form is a
 * -32700 whose offset is where the number starts, in a single request, in
 * a batch and in a check.batch joint table long enough for its fast path;
 * strict forms and digits inside strings are untouched. */
static void lenient_numbers_are_parse_errors_at_the_number(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"01",   "00",  "-01.50", "1.",    "-1.", ".5",   "-.5",
                                      "+1",   "1e",  "1E+",    "1e-",   "-",   "--1",  "0x10",
                                      "1.e5", "007", "1.5.5",  "1e5e5", "1-2", "0.5x", "+0"};
    static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"distance\","
                              "\"params\":{\"a\":{\"sphere\":{\"center\":[0,0,";
    static const char post[] = "],\"radius\":1}},\"b\":{\"sphere\":{\"center\":[3,0,0],"
                               "\"radius\":1}}}}";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512], want[160];
        snprintf(line, sizeof line, "%s%s%s", pre, bad[i], post);
        snprintf(want, sizeof want, "\"data\":{\"offset\":%zu}", strlen(pre));
        const char *r = call(f, line);
        if (!strstr(r, "\"id\":null,\"error\":{\"code\":-32700") || !strstr(r, want) ||
            !strstr(r, "not a JSON number"))
            fail_msg("%s: %s", bad[i], r);
        /* In a batch, the whole line is refused. */
        snprintf(line, sizeof line, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},%s]",
                 bad[i]);
        snprintf(want, sizeof want, "\"data\":{\"offset\":%zu}", strlen(line) - strlen(bad[i]) - 1);
        r = call(f, line);
        if (!strstr(r, "\"code\":-32700") || !strstr(r, want) || r[0] != '{')
            fail_msg("batch %s: %s", bad[i], r);
    }
    /* NaN and Infinity with a sign are found by the pre-scan now; the
     * message still says what they are. */
    const char *r = call(f, "[-Infinity]");
    assert_non_null(strstr(r, "NaN and Infinity are not JSON numbers"));
    assert_non_null(strstr(r, "\"offset\":1"));

    static const char *const good[] = {"0",    "-0",    "1.5",     "-0.25", "1e0",
                                       "1e05", "1E+05", "2.5e-01", "0.0",   "10"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s%s%s", pre, good[i], post);
        const char *got = call(f, line);
        if (!strstr(got, "\"id\":3,\"result\""))
            fail_msg("%s: %s", good[i], got);
    }
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":\"01 1. +1 .5\","
                                   "\"method\":\"ping\"}"),
                           "\"result\":{\"pong\":true}"));

    /* check.batch: a joint table long enough for the fast path reading
     * numbers from the text gives the same error as the general path. */
    char *line = malloc(8192);
    assert_non_null(line);
    for (int pass = 0; pass < 2; pass++) {
        size_t n = (size_t)snprintf(line, 8192,
                                    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"check.batch\","
                                    "\"params\":{\"model\":\"nope\",\"joints\":[");
        for (int i = 0; i < 300; i++)
            n += (size_t)snprintf(line + n, 8192 - n, "[0.5,1],");
        size_t at = n + 1;
        n += (size_t)snprintf(line + n, 8192 - n, "[%s,1]]}}", pass ? "0.5" : "00.5");
        char want[64];
        snprintf(want, sizeof want, "\"offset\":%zu}", at);
        const char *got = call(f, line);
        if (pass == 0 && (!strstr(got, "\"code\":-32700") || !strstr(got, want)))
            fail_msg("check.batch with 00.5: %s", got);
        if (pass == 1 && !strstr(got, "\"id\":4,\"error\":{\"code\":-32001"))
            fail_msg("check.batch with 0.5: %s", got);
    }
    free(line);
}

/* \u0000 stays refused (-32600), but as the error of the request that
 * holds it, with that request's id: other requests of a batch run. */
static void nul_escapes_are_refused_with_the_request_id(void **state)
{
    fixture *f = *state;
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.create\",\"params\":"
                 "{\"scene\":\"keep\\u0000junk\"}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"error\":{\"code\":-32600,\"message\":"
                 "\"Invalid Request: \\\\u0000 in a string is not supported (byte 71)\"}}");
    assert_null(rp_store_find(f->core.store, "keep"));
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\",\"params\":"
                 "{\"\\u0000\":1}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"error\":{\"code\":-32600,\"message\":"
                 "\"Invalid Request: \\\\u0000 in a string is not supported (byte 53)\"}}");
    /* An id that holds the escape itself cannot be echoed. */
    assert_reply(f, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000\",\"method\":\"ping\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                 "\"Invalid Request: \\\\u0000 in a string is not supported (byte 24)\"}}");
    /* A notification that holds one is answered, as every -32600. */
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"method\":\"\\u0000\"}"),
                           "\"id\":null,\"error\":{\"code\":-32600"));
    /* A batch: each element that holds one gets the error with its id and
     * the offset of its own first escape; the others run. */
    assert_reply(f,
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                 "{\"scene\":\"a\"}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":"
                 "\"\\u0000\\u0000\"}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":\"three\",\"method\":\"ping\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.create\",\"params\":"
                 "{\"scene\":\"b\\u0000\"}}]",
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"scene\":\"a\",\"revision\":1}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32600,\"message\":"
                 "\"Invalid Request: \\\\u0000 in a string is not supported (byte 128)\"}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":\"three\",\"result\":{\"pong\":true}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32600,\"message\":"
                 "\"Invalid Request: \\\\u0000 in a string is not supported (byte 259)\"}}]");
    assert_non_null(rp_store_find(f->core.store, "a"));
    assert_null(rp_store_find(f->core.store, "b"));
    /* A line that is not JSON is a parse error first, at its offset in the
     * line as sent. */
    const char *r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000\\u0000\",\"method\":x}");
    assert_non_null(strstr(r, "\"id\":null,\"error\":{\"code\":-32700"));
    assert_non_null(strstr(r, "\"offset\":46"));
    r = call(f, "[\"\\u0000\"] x");
    assert_non_null(strstr(r, "\"code\":-32700"));
    assert_non_null(strstr(r, "\"offset\":11"));
    /* An escaped backslash before u0000 is no NUL. */
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":\"\\\\u0000\",\"method\":"
                                   "\"ping\"}"),
                           "\"id\":\"\\\\u0000\",\"result\""));
}

static void nesting_beyond_the_limit_is_32004(void **state)
{
    fixture *f = *state;
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    const char *r = call(f, deep);
    assert_non_null(strstr(r, "\"code\":-32004"));
    assert_non_null(strstr(r, "\"limit\":\"max_json_depth\",\"max\":64"));
    deep[64] = '\0'; /* 64 '[' and no closers: depth ok, then a parse error */
    assert_non_null(strstr(call(f, deep), "\"code\":-32700"));
}

static void notifications_execute_without_reply(void **state)
{
    fixture *f = *state;
    assert_string_equal(call(f, "{\"jsonrpc\":\"2.0\",\"method\":\"scene.create\","
                                "\"params\":{\"scene\":\"n\"}}"),
                        "");
    assert_non_null(rp_store_find(f->core.store, "n"));
    /* Errors in notifications are not reported either. */
    assert_string_equal(call(f, "{\"jsonrpc\":\"2.0\",\"method\":\"nope\"}"), "");
}

static void batch_returns_array_without_notification_entries(void **state)
{
    fixture *f = *state;
    assert_reply(f,
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]",
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"pong\":true}}]");
    assert_string_equal(call(f, "[{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}]"), "");
    const char *r = call(f, "[]");
    assert_true(r[0] == '{');
    assert_non_null(strstr(r, "\"code\":-32600"));
    r = call(f, "[1,\"x\",{}]");
    assert_true(r[0] == '[');
    assert_int_equal(count_of(r, "\"code\":-32600"), 3);
}

static void replies_on_consecutive_lines_have_no_leading_comma(void **state)
{
    fixture *f = *state;
    rp_jw_reset(&f->out);
    const char *a = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    const char *b = "[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]";
    rpd_process_line(&f->core, &f->session, a, strlen(a), &f->out);
    rpd_process_line(&f->core, &f->session, b, strlen(b), &f->out);
    rpd_process_line(&f->core, &f->session, a, strlen(a), &f->out);
    assert_int_equal(f->out.len, strlen(f->out.buf));
    assert_string_equal(f->out.buf, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n"
                                    "[{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"pong\":true}}]\n"
                                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pong\":true}}\n");
}

static void invalid_params_name_the_path(void **state)
{
    fixture *f = *state;
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"distance\",\"params\":{\"a\":"
                 "{\"sphere\":{\"center\":[0,0,0],\"radius\":1}},\"b\":{\"capsule\":{\"a\":[0,0,0],"
                 "\"b\":[1,1e400,0],\"radius\":1}}}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":\"Invalid "
                 "params: params.b.capsule.b[1] must be finite\",\"data\":{\"path\":"
                 "\"params.b.capsule.b[1]\",\"reason\":\"must be finite\"}}}");
    const char *r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":[1]}");
    assert_non_null(strstr(r, "\"path\":\"params\""));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":1}}");
    assert_non_null(strstr(r, "\"path\":\"params.x\",\"reason\":\"unknown key\""));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"distance\",\"params\":{}}");
    assert_non_null(strstr(r, "\"path\":\"params.a\",\"reason\":\"is required\""));
}

static void failed_put_leaves_the_scene_unchanged(void **state)
{
    fixture *f = *state;
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":"
                 "\"s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":[1,2,3],\"radius\":0.5}}}}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"scene\":\"s\",\"revision\":1}}");
    /* Second shape invalid: nothing of the put may land. */
    const char *r =
        call(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.put\",\"params\":{"
                "\"scene\":\"s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":[9,9,9],"
                "\"radius\":1}},\"b\":{\"sphere\":{\"center\":[0,0,0],\"radius\":-1}}}}}");
    assert_non_null(strstr(r, "\"path\":\"params.shapes.b.sphere.radius\""));
    /* The same id twice: rejected, nothing applied. */
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.put\",\"params\":{"
                "\"scene\":\"s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":[9,9,9],"
                "\"radius\":1}},\"a\":{\"sphere\":{\"center\":[0,0,0],\"radius\":2}}}}}");
    assert_non_null(strstr(r, "\"path\":\"params.shapes.a\",\"reason\":\"duplicate key\""));
    /* Wrong revision: -32003 and nothing applied. */
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.put\",\"params\":{\"scene\":"
                 "\"s\",\"if_revision\":5,\"shapes\":{\"a\":{\"sphere\":{\"center\":[9,9,9],"
                 "\"radius\":1}}}}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32003,\"message\":\"Revision "
                 "conflict: expected 5, scene is at 1\",\"data\":{\"expected\":5,\"actual\":1}}}");
    assert_reply(
        f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.get\",\"params\":{\"scene\":\"s\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"scene\":\"s\",\"revision\":1,"
        "\"shapes\":{\"a\":{\"sphere\":{\"center\":[1,2,3],\"radius\":0.5}}}}}");
}

/* Boxes and half-spaces: scene shapes (written back as the server keeps
 * them: the rotation always, the normal unit with the offset divided by its
 * length) and free shapes of distance; not query, model or attached
 * shapes. */
static void boxes_and_halfspaces_are_scene_and_distance_shapes(void **state)
{
    fixture *f = *state;
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":"
                 "\"cell\",\"shapes\":{\"table\":{\"box\":{\"center\":[0,0,0.7],\"half_extents\":"
                 "[0.6,0.4,0.05]}},\"floor\":{\"halfspace\":{\"normal\":[0,0,2],\"offset\":-1}}}}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"scene\":\"cell\",\"revision\":1}}");
    assert_reply(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.get\",\"params\":{\"scene\":\"cell\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"scene\":\"cell\",\"revision\":1,\"shapes\":{"
        "\"floor\":{\"halfspace\":{\"normal\":[0,0,1],\"offset\":-0.5}},"
        "\"table\":{\"box\":{\"center\":[0,0,0.7],\"half_extents\":[0.6,0.4,0.05],"
        "\"rotation\":{\"w\":1,\"x\":0,\"y\":0,\"z\":0}}}}}}");
    /* A box's lowest corner above the plane z = 0; two half-spaces. */
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"distance\",\"params\":{\"a\":{\"box\":"
                 "{\"center\":[0,0,1],\"half_extents\":[0.5,0.5,0.25]}},\"b\":{\"halfspace\":{"
                 "\"normal\":[0,0,1],\"offset\":0}}}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"distance\":0.75}}");
    assert_reply(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"violates_margin\",\"params\":{\"a\":{"
        "\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}},\"b\":{\"halfspace\":{\"normal\":"
        "[0,0,-1],\"offset\":-1}},\"margin\":0}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"violates\":false,\"distance\":1}}");
    assert_reply(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"distance\",\"params\":{\"a\":{"
        "\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}},\"b\":{\"halfspace\":{\"normal\":"
        "[0,1,0],\"offset\":0}}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"distance\":-1.7976931348623157e+308}}");

    static const struct {
        const char *line, *path, *role;
    } refused[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.distance\",\"params\":{\"scene\":"
         "\"cell\",\"shape\":{\"box\":{\"center\":[0,0,0],\"half_extents\":[1,1,1]}}}}",
         "params.shape", "query"},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"scene.check\",\"params\":{\"scene\":\"cell\","
         "\"shapes\":{\"p\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}},\"q\":{\"halfspace\":"
         "{\"normal\":[0,0,1],\"offset\":0}}},\"margin\":0}}",
         "params.shapes.q", "query"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char want[400];
        snprintf(want, sizeof want,
                 "\"error\":{\"code\":-32602,\"message\":\"Invalid params: %s must be a sphere or "
                 "a capsule: boxes and half-spaces are not %s shapes\",\"data\":{\"path\":\"%s\"",
                 refused[i].path, refused[i].role, refused[i].path);
        const char *r = call(f, refused[i].line);
        if (!strstr(r, want))
            fail_msg("got %s, want ...%s", r, want);
    }
    /* Links and attached shapes may be boxes (a URDF <box>), never
     * half-spaces. */
    const char *r =
        call(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"model.put\",\"params\":{\"model\":"
                "\"arm\",\"links\":[{\"id\":\"base\",\"frame\":null,\"shape\":{\"halfspace\":{"
                "\"normal\":[0,0,1],\"offset\":0}}}]}}");
    assert_non_null(strstr(r, "\"path\":\"params.links[0].shape\",\"reason\":\"must be a sphere, a "
                              "capsule or a box: model shapes cannot be half-spaces\""));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"model.put\",\"params\":{\"model\":"
                "\"arm\",\"links\":[{\"id\":\"base\",\"frame\":null,\"shape\":{\"box\":{\"center\":"
                "[0,0,0],\"half_extents\":[0.5,0.5,0.5]}}}]}}");
    assert_non_null(strstr(r, "\"result\":{\"model\":\"arm\""));
    r = call(f,
             "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"check\",\"params\":{"
             "\"model\":\"arm\",\"frames\":[],\"attached\":[{\"id\":\"part\","
             "\"link\":\"base\",\"shape\":{\"halfspace\":{\"normal\":[0,0,1],\"offset\":0}}}]}}");
    assert_non_null(strstr(r,
                           "\"path\":\"params.attached[0].shape\",\"reason\":\"must be a sphere, "
                           "a capsule or a box: attached shapes cannot be half-spaces\""));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"check\",\"params\":{"
                "\"model\":\"arm\",\"frames\":[],\"attached\":[{\"id\":\"part\","
                "\"link\":\"base\",\"shape\":{\"box\":{\"center\":[1,0,0],"
                "\"half_extents\":[0.25,0.25,0.25]}}}]}}");
    assert_non_null(strstr(r, "\"result\":{\"collision\":false"));
}

static void scene_errors_have_kind_and_name(void **state)
{
    fixture *f = *state;
    assert_reply(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.delete\",\"params\":{\"scene\":\"ghost\"}"
        "}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001,\"message\":\"Not found: "
        "scene 'ghost'\",\"data\":{\"kind\":\"scene\",\"name\":\"ghost\"}}}");
    call(f,
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\",\"params\":{\"scene\":\"x\"}}");
    const char *r = call(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.create\",\"params\":{\"scene\":\"x\"}}");
    assert_non_null(strstr(r, "\"code\":-32002"));
    r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.create\",\"params\":{\"scene\":"
                "\".hidden\"}}");
    assert_non_null(strstr(r, "\"path\":\"params.scene\""));
}

static void scene_distance_on_empty_scene_is_null(void **state)
{
    fixture *f = *state;
    call(f,
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":\"e\"}}");
    assert_reply(
        f,
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.distance\",\"params\":{\"scene\":"
        "\"e\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1}},\"max_distance\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"revision\":1,\"distance\":null,"
        "\"nearest\":null,\"pairs\":[]}}");
}

static void stats_count_requests_by_method_and_errors(void **state)
{
    fixture *f = *state;
    call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    call(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    call(f, "not json");
    const char *r = call(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"stats\"}");
    assert_non_null(strstr(r, "\"by_method\":{\"ping\":2,\"stats\":1}"));
    assert_non_null(strstr(r, "\"errors_by_code\":{\"-32700\":1}"));
    assert_non_null(strstr(r, "\"total\":4"));
}

static void tcp_sessions_are_locked_until_auth_with_the_token(void **state)
{
    fixture *f = *state;
    f->core.token = strdup("k3y");
    f->core.token_len = 3;
    f->session.is_tcp = true;
    /* A notification before auth is not executed either. */
    assert_string_equal(call(f, "{\"jsonrpc\":\"2.0\",\"method\":\"scene.create\","
                                "\"params\":{\"scene\":\"n\"}}"),
                        "");
    assert_null(rp_store_find(f->core.store, "n"));
    const char *r =
        call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\",\"params\":[]}");
    assert_non_null(strstr(r, "\"code\":-32005")); /* auth is checked before params */
    assert_reply(f,
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"auth\",\"params\":{\"token\":\"k3\"}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32005,\"message\":"
                 "\"Unauthorized: wrong token\"}}");
    assert_reply(
        f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"auth\",\"params\":{\"token\":\"k3y\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}");
    assert_non_null(
        strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.list\"}"), "\"result\""));
    /* Unix sessions never need auth. */
    rpd_session unix_session = {.is_tcp = false};
    rp_jw_reset(&f->out);
    const char *line = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"scene.list\"}";
    rpd_process_line(&f->core, &unix_session, line, strlen(line), &f->out);
    assert_non_null(strstr(f->out.buf, "\"result\""));
}

/* Small flat lines take a fast parse (rpc.c, flat_parse) and everything
 * else the general one; the replies, errors included, must not tell them
 * apart.  A line padded with blanks past the fast parse's 256 bytes takes
 * the general path: each line's reply is compared with its padded twin's
 * (ids and members as the fast parse reads them, and what it must leave
 * to the general path: escapes, fractions, exponents, leading zeros,
 * 16-digit numbers, literals run on, trailing data, nesting; not errors
 * at the end of the line, whose offset the padding moves). */
static void fast_and_general_parses_answer_alike(void **state)
{
    fixture *f = *state;
    static const char *const lines[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        "{ \"jsonrpc\" : \"2.0\" , \"id\" : -0 , \"method\" : \"ping\" }",
        "{\"jsonrpc\":\"2.0\",\"id\":-123456789012345,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1234567890123456,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":2147483648,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"a b\",\"method\":\"ping\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0041\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":-,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":truex,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":7}",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pong\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\",\"extra\":false}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}",
        "{}",
        "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xc3\xa9ng\"}",
    };
    static char fast[1 << 16], padded[512];
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
        size_t n = strlen(lines[k]);
        assert_true(n < 200);
        snprintf(fast, sizeof fast, "%s", call(f, lines[k]));
        memcpy(padded, lines[k], n);
        memset(padded + n, ' ', 300 - n);
        padded[300] = '\0';
        const char *general = call(f, padded);
        if (strcmp(fast, general) != 0)
            fail_msg("line %zu: %s\n  fast:    %s  general: %s", k, lines[k], fast, general);
    }
}

static void method_table_is_sorted_for_binary_search(void **state)
{
    (void)state;
    for (size_t i = 1; i < rpd_method_count; i++)
        assert_true(strcmp(rpd_methods[i - 1].name, rpd_methods[i].name) < 0);
    size_t idx;
    for (size_t i = 0; i < rpd_method_count; i++) {
        assert_ptr_equal(rpd_method_find(rpd_methods[i].name, &idx), &rpd_methods[i]);
        assert_int_equal(idx, i);
    }
    assert_null(rpd_method_find("pin", &idx));
}

/* While the server stops, queries still run and mutations get -32006
 * (RPD_METHOD_MUTATES), as PROTOCOL.md says. */
static void only_mutations_are_refused_while_shutting_down(void **state)
{
    fixture *f = *state;
    f->core.shutting_down = true;
    assert_non_null(
        strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\"}"), "\"result\""));
    static const char *const mutations[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\",\"params\":{\"scene\":\"a\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.put\",\"params\":{\"scene\":\"a\","
        "\"create\":true,\"shapes\":{}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"model.put\",\"params\":{\"model\":\"m\","
        "\"links\":[]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.replace\",\"params\":{\"scene\":\"a\","
        "\"create\":true,\"shapes\":{}}}",
    };
    for (size_t i = 0; i < sizeof mutations / sizeof *mutations; i++) {
        const char *r = call(f, mutations[i]);
        assert_non_null(strstr(r, "\"code\":-32006"));
        assert_non_null(strstr(r, "not executed"));
    }
    assert_null(rp_store_find(f->core.store, "a"));
    assert_int_equal(rp_store_revision(f->core.store), 0);
    /* Exactly the methods that change the store are flagged (the list in
     * PROTOCOL.md, "Stopping"); everything else, watches included, runs. */
    static const char *const mutating[] = {
        "model.delete", "model.put",  "scene.attach", "scene.create", "scene.delete",
        "scene.detach", "scene.move", "scene.put",    "scene.remove", "scene.replace"};
    size_t n_mutating = sizeof mutating / sizeof *mutating, flagged = 0;
    for (size_t i = 0; i < rpd_method_count; i++) {
        const char *n = rpd_methods[i].name;
        bool mutates = (rpd_methods[i].flags & RPD_METHOD_MUTATES) != 0;
        bool listed = false;
        for (size_t k = 0; k < n_mutating; k++)
            listed = listed || strcmp(n, mutating[k]) == 0;
        if (mutates != listed)
            fail_msg("%s: RPD_METHOD_MUTATES is %s", n, mutates ? "set" : "not set");
        flagged += mutates;
    }
    assert_int_equal(flagged, n_mutating); /* every listed method exists */
    f->core.shutting_down = false;
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"scene.list\"}"),
                           "\"scenes\":[]"));
}

static void http_request_lines_and_host_headers_are_recognised(void **state)
{
    (void)state;
    static const char *const http[] = {
        "GET / HTTP/1.1", "POST /rpc HTTP/1.0", "PUT /x HTTP/2", "HEAD / HTTP/1.1",
        "OPTIONS * HTTP/1.1", "DELETE /a HTTP/1.1", "PATCH /a HTTP/1.1",
        "CONNECT 127.0.0.1:7411 HTTP/1.1", "TRACE / HTTP/1.1", "Host: 127.0.0.1:7411", "host:x",
        "HOST: a",
        /* Any case, any spaces or tabs between the words and before them. */
        "get / HTTP/1.1", "Post /rpc http/1.1", "GET  / HTTP/1.1", "GET /  HTTP/1.1",
        "GET\t/\tHTTP/1.1", " GET / HTTP/1.1", "\t\tpost \t/ \tHTTP/1.0\r", "  Host: a",
        "dElEtE /x HtTp/1.1", "trace / HTTP/1.1", "OPTIONS\t*  HTTP/1.1",
        /* The HTTP/2 connection preface. */
        "PRI * HTTP/2.0", "pri * http/2.0", "PRI  *  HTTP/2.0\r"};
    for (size_t i = 0; i < sizeof http / sizeof http[0]; i++)
        if (!rpd_line_is_http(http[i], strlen(http[i])))
            fail_msg("not taken for HTTP: \"%s\"", http[i]);
    static const char *const not_http[] = {"{\"jsonrpc\":\"2.0\",\"method\":\"GET / HTTP/1.1\"}",
                                           "[]",
                                           "",
                                           "GET",
                                           "GET /",
                                           "GET / HTTP",
                                           "POSTMAN / HTTP/1.1",
                                           "Hostname: x",
                                           "not json",
                                           "GET  /",
                                           "GET / ",
                                           "GET HTTP/1.1",
                                           "GET  HTTP/1.1",
                                           "PRI *",
                                           "PRIX * HTTP/2.0",
                                           "XGET / HTTP/1.1",
                                           "  {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                                           " [\"GET / HTTP/1.1\"]",
                                           "\"GET / HTTP/1.1\"",
                                           "get/ HTTP/1.1",
                                           "get / HTTPS/1.1",
                                           "host",
                                           " ho st: a",
                                           "SMTP / HTTP/1.1",
                                           "get\n/ HTTP/1.1"};
    for (size_t i = 0; i < sizeof not_http / sizeof not_http[0]; i++)
        if (rpd_line_is_http(not_http[i], strlen(not_http[i])))
            fail_msg("taken for HTTP: \"%s\"", not_http[i]);
    /* The 400 text is a complete HTTP response whose length is right. */
    const char *body = strstr(rpd_http_reply, "\r\n\r\n");
    assert_non_null(body);
    char want[64];
    snprintf(want, sizeof want, "Content-Length: %zu\r\n", strlen(body + 4));
    assert_non_null(strstr(rpd_http_reply, want));
}

/* A wrong token after a right one ends the authorisation. */
static void wrong_reauth_locks_the_session_again(void **state)
{
    fixture *f = *state;
    f->core.token = strdup("tok");
    f->core.token_len = 3;
    f->session.is_tcp = true;
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"auth\","
                                   "\"params\":{\"token\":\"tok\"}}"),
                           "\"ok\":true"));
    assert_non_null(strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"auth\","
                                   "\"params\":{\"token\":\"tok2\"}}"),
                           "-32005"));
    assert_non_null(
        strstr(call(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.list\"}"), "-32005"));
}

/* Error messages that quote input are cut between UTF-8 characters: every
 * multi-byte character in the reply is complete. */
static void quoted_input_is_cut_between_characters(void **state)
{
    fixture *f = *state;
    for (int pad = 0; pad < 600; pad += 1) {
        char line[2048];
        int n = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"");
        for (int i = 0; i < pad; i++)
            line[n++] = 'm';
        for (int i = 0; i < 100; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "\xe2\x82\xac");
        n += snprintf(line + n, sizeof line - (size_t)n, "\"}");
        const char *r = call(f, line);
        for (const unsigned char *p = (const unsigned char *)r; *p; p++) {
            if (*p == 0xE2) {
                assert_int_equal(p[1], 0x82);
                assert_int_equal(p[2], 0xAC);
                p += 2;
            } else {
                assert_true(*p < 0x80);
            }
        }
    }
}

/* max_request_work is shared by the requests of one line and renewed for
 * the next line. */
static void work_budget_is_per_line(void **state)
{
    (void)state;
    rpd_limits l = rpd_default_limits();
    l.max_request_work = 1000;
    fixture f;
    memset(&f, 0, sizeof f);
    assert_true(rpd_core_init(&f.core, &l));
    rp_jw_init(&f.out);
    call(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"model.put\",\"params\":{\"model\":\"m\","
             "\"links\":[{\"id\":\"a\",\"frame\":0,\"shape\":{\"sphere\":{\"center\":[0,0,0],"
             "\"radius\":1}}},{\"id\":\"b\",\"frame\":1,\"shape\":{\"sphere\":{\"center\":[0,0,0],"
             "\"radius\":1}}}]}}");
    /* One self pair per configuration, no scene: 1 unit each. */
    static char line[65536];
    int n = snprintf(line, sizeof line,
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"check.batch\","
                     "\"params\":{\"model\":\"m\",\"configurations\":[");
    for (int k = 0; k < 600; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s{\"frames\":[{},{}]}", k ? "," : "");
    snprintf(line + n, sizeof line - (size_t)n, "]}}");
    assert_non_null(strstr(call(&f, line), "\"results\""));
    assert_non_null(strstr(call(&f, line), "\"results\"")); /* a new line, a new budget */
    static char batch[2 * sizeof line + 8];
    snprintf(batch, sizeof batch, "[%s,%s]", line, line);
    const char *r = call(&f, batch);
    assert_int_equal(count_of(r, "\"results\""), 1);
    assert_int_equal(count_of(r, "\"limit\":\"max_request_work\""), 1);
    rp_jw_free(&f.out);
    rpd_core_free(&f.core);
}

/* The daemon's JSON-RPC code for each library status (rpd_status_code):
 * every status has one of protocol v1's codes, and only out-of-memory (or
 * a value out of range) is an internal error. */
static void every_status_maps_to_a_protocol_code(void **state)
{
    (void)state;
    static const int table[] = {
#define CODE_OF(name, code, text) code,
        RPD_ERROR_TABLE(CODE_OF)
#undef CODE_OF
    };
    assert_int_equal(rpd_status_code(RP_OK), 0);
    for (int i = 1; i < (int)RP_STATUS_COUNT_; i++) {
        int code = rpd_status_code((rp_status)i);
        bool known = false;
        for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
            known |= table[k] == code;
        assert_true(known);
        assert_true(code != RPD_PARSE_ERROR && code != RPD_INVALID_REQUEST &&
                    code != RPD_METHOD_NOT_FOUND);
        assert_int_equal(code == RPD_INTERNAL_ERROR, i == (int)RP_ERR_NOMEM);
    }
    assert_int_equal(rpd_status_code(RP_ERR_NONFINITE), -32602);
    assert_int_equal(rpd_status_code(RP_ERR_RADIUS_NEGATIVE), -32602);
    assert_int_equal(rpd_status_code(RP_ERR_INVALID_ARG), -32602);
    assert_int_equal(rpd_status_code(RP_ERR_NOMEM), -32603);
    assert_int_equal(rpd_status_code(RP_ERR_NOT_FOUND), -32001);
    assert_int_equal(rpd_status_code(RP_ERR_EXISTS), -32002);
    assert_int_equal(rpd_status_code(RP_ERR_REVISION), -32003);
    assert_int_equal(rpd_status_code(RP_ERR_LIMIT), -32004);
    assert_int_equal(rpd_status_code(RP_ERR_WORK), -32004);
    assert_int_equal(rpd_status_code(RP_ERR_ABORTED), -32007);
    assert_int_equal(rpd_status_code(RP_STATUS_COUNT_), -32603);
    assert_int_equal(rpd_status_code((rp_status)9999), -32603);
}

/* The shapes a put's change record writes (rpd_change_written): sorted by
 * id, each id once with the shape given last; ids that come sorted take
 * the path without a sort and give the same answer. */
static void a_change_writes_each_id_once_sorted_with_the_last_shape(void **state)
{
    (void)state;
    rp_shape s[5];
    for (int i = 0; i < 5; i++)
        s[i] = (rp_shape){.kind = RP_SHAPE_SPHERE, .sphere = {{i, 0, 0}, 1}};
    rp_shape_put given[] = {{"b", s[0]}, {"a", s[1]}, {"c", s[2]}, {"a", s[3]}, {"b", s[4]}};
    rp_change c = {.kind = RP_CHANGE_SCENE_PUT, .name = "x", .shapes = given, .n_shapes = 5};
    size_t n = 0;
    const rp_shape_put **w = rpd_change_written(&c, &n);
    assert_non_null(w);
    assert_int_equal(n, 3);
    assert_string_equal(w[0]->id, "a");
    assert_ptr_equal(w[0], &given[3]);
    assert_string_equal(w[1]->id, "b");
    assert_ptr_equal(w[1], &given[4]);
    assert_ptr_equal(w[2], &given[2]);
    free(w);
    rp_shape_put sorted[] = {{"a", s[0]}, {"aa", s[1]}, {"b", s[2]}};
    c.shapes = sorted;
    c.n_shapes = 3;
    w = rpd_change_written(&c, &n);
    assert_non_null(w);
    assert_int_equal(n, 3);
    for (size_t k = 0; k < 3; k++)
        assert_ptr_equal(w[k], &sorted[k]);
    free(w);
    c.n_shapes = 0;
    w = rpd_change_written(&c, &n);
    assert_non_null(w);
    assert_int_equal(n, 0);
    free(w);
}

/* rpd_line_min_revision: the text's bound skips the parse only when the
 * parse would find nothing beyond `have`; escaped keys, fractions and
 * exponents go to the parse; base64 and numbers cost one look. */
static uint64_t min_rev(const char *line, uint64_t have)
{
    return rpd_line_min_revision(line, strlen(line), have);
}

static void min_revision_is_read_from_the_text_or_the_parse(void **state)
{
    (void)state;
    const char *plain = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\","
                        "\"params\":{\"min_revision\" : 42}}";
    assert_int_equal(min_rev(plain, 0), 42);
    assert_int_equal(min_rev(plain, 41), 42);
    assert_int_equal(min_rev(plain, 42), 0);
    assert_int_equal(min_rev(plain, 1000), 0);
    /* A batch: the largest. */
    const char *batch = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
                        "{\"min_revision\":7}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\","
                        "\"params\":{\"min_revision\":\n9}}]";
    assert_int_equal(min_rev(batch, 0), 9);
    assert_int_equal(min_rev(batch, 8), 9);
    assert_int_equal(min_rev(batch, 9), 0);
    /* A key written with escapes is not looked for: such a line does not
     * wait, and its request answers -32004 itself if the store is behind
     * (PROTOCOL.md, max_wait_ms). */
    const char *escaped = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
                          "{\"min\\u005frevision\":5}}";
    assert_int_equal(min_rev(escaped, 0), 0);
    /* An escape elsewhere: the parse reads the key. */
    const char *other = "{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb\",\"method\":\"ping\",\"params\":"
                        "{\"min_revision\":6}}";
    assert_int_equal(min_rev(other, 0), 6);
    assert_int_equal(min_rev(other, 6), 0);
    /* An exponent or a fraction: the parse decides (5e2 is 500). */
    const char *expo = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
                       "{\"min_revision\":5e2}}";
    assert_int_equal(min_rev(expo, 10), 500);
    assert_int_equal(min_rev(expo, 500), 0);
    /* A nested key raises the text's bound but is not a request's: the
     * parse says 0. */
    const char *nested = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
                         "{\"x\":{\"min_revision\":77}}}";
    assert_int_equal(min_rev(nested, 3), 0);
    /* Inside a string (escaped quotes): not a member. */
    const char *in_string = "{\"jsonrpc\":\"2.0\",\"id\":\"\\\"min_revision\\\":8\","
                            "\"method\":\"ping\"}";
    assert_int_equal(min_rev(in_string, 0), 0);
    /* Not numbers, negatives, none. */
    assert_int_equal(min_rev("{\"params\":{\"min_revision\":\"9\"}}", 0), 0);
    assert_int_equal(min_rev("{\"params\":{\"min_revision\":-9}}", 0), 0);
    assert_int_equal(min_rev("{\"params\":{\"joints_f64\":\"mmmmAAAAmmmm\"}}", 0), 0);
    assert_int_equal(min_rev("", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ping_answers_pong_with_the_same_id, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_method_is_32601_with_method_in_data, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(unknown_method_suggests_the_nearest_method, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bad_envelopes_are_invalid_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(parse_errors_carry_the_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(nesting_beyond_the_limit_is_32004, setup, teardown),
        cmocka_unit_test_setup_teardown(control_bytes_and_nul_escapes_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(lenient_numbers_are_parse_errors_at_the_number, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nul_escapes_are_refused_with_the_request_id, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(notifications_execute_without_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(batch_returns_array_without_notification_entries, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(replies_on_consecutive_lines_have_no_leading_comma, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(invalid_params_name_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_put_leaves_the_scene_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(boxes_and_halfspaces_are_scene_and_distance_shapes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(scene_errors_have_kind_and_name, setup, teardown),
        cmocka_unit_test_setup_teardown(scene_distance_on_empty_scene_is_null, setup, teardown),
        cmocka_unit_test_setup_teardown(stats_count_requests_by_method_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(tcp_sessions_are_locked_until_auth_with_the_token, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(fast_and_general_parses_answer_alike, setup, teardown),
        cmocka_unit_test(method_table_is_sorted_for_binary_search),
        cmocka_unit_test_setup_teardown(only_mutations_are_refused_while_shutting_down, setup,
                                        teardown),
        cmocka_unit_test(http_request_lines_and_host_headers_are_recognised),
        cmocka_unit_test_setup_teardown(wrong_reauth_locks_the_session_again, setup, teardown),
        cmocka_unit_test_setup_teardown(quoted_input_is_cut_between_characters, setup, teardown),
        cmocka_unit_test(work_budget_is_per_line),
        cmocka_unit_test(every_status_maps_to_a_protocol_code),
        cmocka_unit_test(a_change_writes_each_id_once_sorted_with_the_last_shape),
        cmocka_unit_test(min_revision_is_read_from_the_text_or_the_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
