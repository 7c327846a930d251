/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests for malformed input: the real reposed over its real sockets.
 *
 * Usage: test_daemon_malformed PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * A table of damaged lines (broken JSON, bad envelopes, bad params, invalid
 * UTF-8, deep nesting, odd line endings) each gets the right error with the
 * right id and path, the connection goes on, and the scene is unchanged.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
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

/* ---- malformed input --------------------------------------------------------------------- */

enum {
    EXPECT_OK = 0,      /* a result */
    EXPECT_NOTHING = 1, /* no reply at all */
    EXPECT_BATCH3 = 2   /* an array of three -32600 errors */
};

typedef struct bad_case {
    const char *name;
    char *line; /* owned */
    size_t len;
    int code;         /* an error code, or EXPECT_* */
    const char *path; /* expected error.data.path, or NULL */
    const char *id;   /* expected id as printed ("null", "7", "\"x\"") */
    long offset;      /* expected error.data.offset for -32700, or -1 */
} bad_case;

typedef struct case_list {
    bad_case *v;
    size_t n, cap;
} case_list;

static void add_case_n(case_list *l, const char *name, const char *line, size_t len, int code,
                       const char *path, const char *id, long offset)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    bad_case *c = &l->v[l->n++];
    c->name = name;
    c->line = malloc(len + 1);
    memcpy(c->line, line, len);
    c->line[len] = '\0';
    c->len = len;
    c->code = code;
    c->path = path;
    c->id = id;
    c->offset = offset;
}

static void add_case(case_list *l, const char *name, const char *line, int code, const char *path,
                     const char *id)
{
    add_case_n(l, name, line, strlen(line), code, path, id, -1);
}

/* A scene.put to the scene "keep" with the given params body (after
 * "params":{"scene":"keep",). */
static void add_put(case_list *l, const char *name, const char *rest, const char *path)
{
    char line[1024];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"scene.put\",\"params\":"
             "{\"scene\":\"keep\",%s}}",
             rest);
    add_case(l, name, line, -32602, path, "7");
}

/* A scene.distance on "keep" with the given params body. */
static void add_query(case_list *l, const char *name, const char *rest, int code, const char *path)
{
    char line[1024];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"scene.distance\",\"params\":{%s}}", rest);
    add_case(l, name, line, code, path, "8");
}

/* A request whose scene name is `name` (raw JSON string contents). */
static void add_scene_name(case_list *l, const char *label, const char *name)
{
    char line[1024];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"scene.put\",\"params\":"
             "{\"scene\":\"%s\",\"shapes\":{},\"create\":true}}",
             name);
    add_case(l, label, line, -32602, "params.scene", "9");
}

/* An id string holding `bytes` (possibly invalid UTF-8) at a known offset. */
static void add_utf8(case_list *l, const char *name, const char *bytes)
{
    char line[256];
    const char *pre = "{\"jsonrpc\":\"2.0\",\"id\":\"ab";
    int n = snprintf(line, sizeof line, "%s%s\",\"method\":\"ping\"}", pre, bytes);
    add_case_n(l, name, line, (size_t)n, -32700, NULL, "null", (long)strlen(pre));
}

/* A ping whose params.x holds `levels` nested arrays: 2 + levels deep. */
static void add_nested_params(case_list *l, const char *name, int levels, int code)
{
    char line[600];
    int n = snprintf(line, sizeof line,
                     "{\"jsonrpc\":\"2.0\",\"id\":\"deep\",\"method\":\"ping\","
                     "\"params\":{\"x\":");
    for (int i = 0; i < levels; i++)
        line[n++] = '[';
    for (int i = 0; i < levels; i++)
        line[n++] = ']';
    line[n++] = '}';
    line[n++] = '}';
    add_case_n(l, name, line, (size_t)n, code, code == -32602 ? "params.x" : NULL,
               code == -32602 ? "\"deep\"" : "null", -1);
}

#define SPHERE "{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}"
#define Q_SHAPE "\"shape\":" SPHERE

static void build_cases(case_list *l)
{
    /* Not JSON at all, or broken JSON. */
    add_case(l, "not JSON", "hello world", -32700, NULL, "null");
    add_case(l, "truncated JSON",
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"keep\",\"shapes\":{}",
             -32700, NULL, "null");
    add_case(l, "trailing garbage", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}", -32700,
             NULL, "null");
    add_case(l, "single quotes", "{'jsonrpc':'2.0','id':1,'method':'ping'}", -32700, NULL, "null");
    add_case(l, "NaN literal",
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"keep\",\"shapes\":{\"x\":{\"sphere\":{\"center\":[NaN,0,0],\"radius\":1}}}}}",
             -32700, NULL, "null");
    add_case(l, "Infinity literal",
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"keep\",\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":Infinity}}}}}",
             -32700, NULL, "null");
    add_case(l, "-Infinity literal",
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"distance\",\"params\":{\"a\":" SPHERE
             ",\"b\":{\"sphere\":{\"center\":[0,-Infinity,0],\"radius\":1}}}}",
             -32700, NULL, "null");
    /* Numbers that are not strict JSON: -32700 at the number. */
    {
        static const char *const lenient[][2] = {
            {"number 01", "01"},     {"number 1.", "1."},     {"number -01.50", "-01.50"},
            {"number +1", "+1"},     {"number .5", ".5"},     {"number 1e", "1e"},
            {"number 0x10", "0x10"}, {"number 1.e5", "1.e5"}, {"number -", "-"}};
        const char *pre = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"distance\",\"params\":"
                          "{\"a\":{\"sphere\":{\"center\":[0,";
        for (size_t i = 0; i < sizeof lenient / sizeof lenient[0]; i++) {
            char line[512];
            int n = snprintf(line, sizeof line, "%s%s,0],\"radius\":1}},\"b\":" SPHERE "}}", pre,
                             lenient[i][1]);
            add_case_n(l, lenient[i][0], line, (size_t)n, -32700, NULL, "null", (long)strlen(pre));
        }
        /* A leading zero in an exponent is strict JSON. */
        add_case(l, "number 1e05",
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"distance\",\"params\":{\"a\":"
                 "{\"sphere\":{\"center\":[0,1e05,0],\"radius\":1}},\"b\":" SPHERE "}}",
                 EXPECT_OK, NULL, "2");
    }
    /* \u0000 is refused as an invalid request that keeps its id. */
    add_case(l, "NUL escape with an id",
             "{\"jsonrpc\":\"2.0\",\"id\":\"nul\",\"method\":\"scene.put\",\"params\":{"
             "\"scene\":\"keep\",\"shapes\":{\"a\\u0000\":" SPHERE "}}}",
             -32600, NULL, "\"nul\"");
    add_case(l, "NUL escape in the id",
             "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000\",\"method\":\"ping\"}", -32600, NULL, "null");

    /* Numbers that overflow a double. */
    add_put(l, "1e400 radius",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1e400}}}",
            "params.shapes.x.sphere.radius");
    add_put(l, "-1e400 coordinate",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,-1e400,0],\"radius\":1}}}",
            "params.shapes.x.sphere.center[1]");
    add_query(l, "1e400 max_distance", "\"scene\":\"keep\"," Q_SHAPE ",\"max_distance\":1e400",
              -32602, "params.max_distance");

    /* Nesting. */
    {
        static char deep[2100];
        memset(deep, '[', 65);
        memset(deep + 65, ']', 65);
        add_case_n(l, "nesting 65", deep, 130, -32004, NULL, "null", -1);
        memset(deep, '[', 1000);
        memset(deep + 1000, ']', 1000);
        add_case_n(l, "nesting 1000", deep, 2000, -32004, NULL, "null", -1);
        /* Depth inside a request: 64 levels reach the params check, 65
         * hit the limit. */
        add_nested_params(l, "nesting 64 inside params", 62, -32602);
        add_nested_params(l, "nesting 65 inside params", 63, -32004);
        /* Brackets inside strings do not count. */
        char *str = malloc(1100);
        int k = snprintf(str, 1100, "{\"jsonrpc\":\"2.0\",\"id\":\"");
        memset(str + k, '[', 1000);
        k += 1000;
        k += snprintf(str + k, 1100 - (size_t)k, "\",\"method\":\"ping\"}");
        add_case_n(l, "1000 brackets inside a string", str, (size_t)k, EXPECT_OK, NULL, NULL, -1);
        free(str);
    }

    /* Envelope. */
    add_case(l, "unknown method", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.save\"}",
             -32601, NULL, "3");
    add_case(l, "missing params", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.put\"}", -32602,
             "params.scene", "4");
    add_case(l, "params as array",
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.put\",\"params\":[\"keep\",{}]}",
             -32602, "params", "4");
    add_case(l, "params as string",
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"scene.get\",\"params\":\"keep\"}", -32602,
             "params", "4");
    add_case(l, "empty batch", "[]", -32600, NULL, "null");
    add_case(l, "batch of garbage", "[1,\"x\",null]", EXPECT_BATCH3, NULL, NULL);
    add_case(l, "jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}", -32600, NULL,
             "5");
    add_case(l, "jsonrpc as number", "{\"jsonrpc\":2.0,\"id\":5,\"method\":\"ping\"}", -32600, NULL,
             "5");
    add_case(l, "id as object", "{\"jsonrpc\":\"2.0\",\"id\":{\"n\":1},\"method\":\"ping\"}",
             -32600, NULL, "null");
    add_case(l, "id as bool", "{\"jsonrpc\":\"2.0\",\"id\":false,\"method\":\"ping\"}", -32600,
             NULL, "null");
    add_case(l, "unknown envelope member",
             "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"auth\":\"x\"}", -32600, NULL,
             "6");
    add_case(l, "duplicate params member",
             "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"keep\",\"shapes\":{}},\"params\":{\"scene\":\"keep\",\"shapes\":{}}}",
             -32600, NULL, "6");
    add_case(l, "method as number", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":1}", -32600, NULL,
             "6");
    add_case(l, "top-level string", "\"ping\"", -32600, NULL, "null");

    /* Invalid UTF-8 inside a string: -32700 at the offending byte. */
    add_utf8(l, "UTF-8 overlong", "\xC0\xAF");
    add_utf8(l, "UTF-8 overlong 3-byte", "\xE0\x80\xAF");
    add_utf8(l, "UTF-8 surrogate", "\xED\xA0\x80");
    add_utf8(l, "UTF-8 truncated", "\xE2\x82");
    add_utf8(l, "UTF-8 lone continuation", "\x80");
    add_utf8(l, "UTF-8 above U+10FFFF", "\xF4\x90\x80\x80");
    add_utf8(l, "UTF-8 byte 0xFF", "\xFF");

    /* Shapes in scene.put (nothing may be applied). */
    add_put(l, "negative radius",
            "\"shapes\":{\"ok\":" SPHERE ",\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":-1}}}",
            "params.shapes.x.sphere.radius");
    add_put(l, "unknown shape key", "\"shapes\":{\"x\":{\"cube\":{\"size\":1}}}",
            "params.shapes.x.cube");
    add_put(l, "unknown sphere key",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1,\"color\":1}}}",
            "params.shapes.x.sphere.color");
    add_put(l, "both sphere and capsule",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":1},\"capsule\":{\"a\":"
            "[0,0,0],\"b\":[0,0,1],\"radius\":1}}}",
            "params.shapes.x");
    add_put(l, "empty shape", "\"shapes\":{\"x\":{}}", "params.shapes.x");
    add_put(l, "vec3 of 2", "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0],\"radius\":1}}}",
            "params.shapes.x.sphere.center");
    add_put(l, "vec3 of 4", "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0,0],\"radius\":1}}}",
            "params.shapes.x.sphere.center");
    add_put(l, "bad shape id", "\"shapes\":{\"a b\":" SPHERE "}", "params.shapes.a b");
    add_put(l, "empty shape id", "\"shapes\":{\"\":" SPHERE "}", "params.shapes.");
    add_put(l, "duplicate shape id",
            "\"shapes\":{\"d\":" SPHERE ",\"e\":" SPHERE ",\"d\":" SPHERE "}", "params.shapes.d");

    /* Wrong types for every parameter of scene.put. */
    add_case(l, "put: scene as number",
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"scene.put\",\"params\":{\"scene\":7,"
             "\"shapes\":{}}}",
             -32602, "params.scene", "7");
    add_put(l, "put: shapes as string", "\"shapes\":\"x\"", "params.shapes");
    add_put(l, "put: shapes as array", "\"shapes\":[" SPHERE "]", "params.shapes");
    add_put(l, "put: if_revision as string", "\"shapes\":{},\"if_revision\":\"1\"",
            "params.if_revision");
    add_put(l, "put: create as number", "\"shapes\":{},\"create\":1", "params.create");
    add_put(l, "put: shape as array", "\"shapes\":{\"x\":[1,2,3]}", "params.shapes.x");
    add_put(l, "put: sphere as number", "\"shapes\":{\"x\":{\"sphere\":1}}",
            "params.shapes.x.sphere");
    add_put(l, "put: center as string",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":\"origin\",\"radius\":1}}}",
            "params.shapes.x.sphere.center");
    add_put(l, "put: coordinate as string",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,\"1\"],\"radius\":1}}}",
            "params.shapes.x.sphere.center[2]");
    add_put(l, "put: radius as string",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":\"1\"}}}",
            "params.shapes.x.sphere.radius");
    add_put(l, "put: radius null",
            "\"shapes\":{\"x\":{\"sphere\":{\"center\":[0,0,0],\"radius\":null}}}",
            "params.shapes.x.sphere.radius");
    add_put(l, "put: capsule end as object",
            "\"shapes\":{\"x\":{\"capsule\":{\"a\":{\"x\":0},\"b\":[0,0,1],\"radius\":1}}}",
            "params.shapes.x.capsule.a");
    add_put(l, "put: capsule end missing",
            "\"shapes\":{\"x\":{\"capsule\":{\"a\":[0,0,0],\"radius\":1}}}",
            "params.shapes.x.capsule.b");
    add_put(l, "put: unknown parameter", "\"shapes\":{},\"mode\":\"merge\"", "params.mode");

    /* Wrong types for every parameter of scene.distance. */
    add_query(l, "distance: scene null", "\"scene\":null," Q_SHAPE, -32602, "params.scene");
    add_query(l, "distance: shape as string", "\"scene\":\"keep\",\"shape\":\"ball\"", -32602,
              "params.shape");
    add_query(l, "distance: shapes as array", "\"scene\":\"keep\",\"shapes\":[" SPHERE "]", -32602,
              "params.shapes");
    add_query(l, "distance: ids as object", "\"scene\":\"keep\"," Q_SHAPE ",\"ids\":{}", -32602,
              "params.ids");
    add_query(l, "distance: id as number", "\"scene\":\"keep\"," Q_SHAPE ",\"ids\":[1]", -32602,
              "params.ids[0]");
    add_query(l, "distance: max_distance as bool",
              "\"scene\":\"keep\"," Q_SHAPE ",\"max_distance\":true", -32602,
              "params.max_distance");
    add_query(l, "distance: max_distance as string",
              "\"scene\":\"keep\"," Q_SHAPE ",\"max_distance\":\"1\"", -32602,
              "params.max_distance");
    add_query(l, "distance: unknown parameter", "\"scene\":\"keep\"," Q_SHAPE ",\"margin\":1",
              -32602, "params.margin");
    add_query(l, "distance: valid query", "\"scene\":\"keep\"," Q_SHAPE, EXPECT_OK, NULL);

    /* Scene names. */
    add_scene_name(l, "scene name empty", "");
    add_scene_name(l, "scene name leading dot", ".keep");
    add_scene_name(l, "scene name with space", "a b");
    add_scene_name(l, "scene name with slash", "a/b");
    add_scene_name(l, "scene name non-ASCII", "caf\xC3\xA9");
    {
        char name[130];
        memset(name, 'n', 129);
        name[129] = '\0';
        add_scene_name(l, "scene name 129 characters", name);
    }
    add_case(l, "unknown scene",
             "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"ghost\",\"shapes\":{}}}",
             -32001, NULL, "10");
    add_put(l, "if_revision negative", "\"shapes\":{},\"if_revision\":-1", "params.if_revision");
    add_put(l, "if_revision fractional", "\"shapes\":{},\"if_revision\":1.5", "params.if_revision");
    add_put(l, "if_revision above 2^53", "\"shapes\":{},\"if_revision\":18014398509481984",
            "params.if_revision");
    add_case(l, "if_revision conflict",
             "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"scene.put\",\"params\":{\"scene\":"
             "\"keep\",\"shapes\":{},\"if_revision\":1}}",
             -32003, NULL, "11");
    add_case(l, "remove with bad id",
             "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"scene.remove\",\"params\":{\"scene\":"
             "\"keep\",\"ids\":[\"a\",\"b c\"]}}",
             -32602, "params.ids[1]", "12");

    /* Line endings and blank lines. */
    add_case(l, "CRLF line ending", "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}\r",
             EXPECT_OK, NULL, "13");
    add_case(l, "blank line", "", EXPECT_NOTHING, NULL, NULL);
    add_case(l, "whitespace-only line", "  \t  ", EXPECT_NOTHING, NULL, NULL);
    add_case(l, "CR-only line", "\r", EXPECT_NOTHING, NULL, NULL);
}

static void check_case(rh_conn *c, const bad_case *bc)
{
    send_raw(c, bc->line, bc->len);
    send_raw(c, "\n", 1);
    if (bc->code == EXPECT_NOTHING) {
        /* The next line must be the answer to the ping sent below. */
        expect_pong(c);
        return;
    }
    cJSON *r = read_json(c);
    char *text = show(r);
    if (bc->code == EXPECT_BATCH3) {
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 3)
            fail_msg("%s: want an array of 3 errors, got %s", bc->name, text);
        for (const cJSON *e = r->child; e; e = e->next)
            if (num_at(e, "error.code") != -32600 || !cJSON_IsNull(at(e, "id")))
                fail_msg("%s: got %s", bc->name, text);
    } else if (bc->code == EXPECT_OK) {
        if (!at(r, "result"))
            fail_msg("%s: want a result, got %s", bc->name, text);
    } else {
        if (!at(r, "error") || num_at(r, "error.code") != bc->code)
            fail_msg("%s: want error %d, got %s", bc->name, bc->code, text);
        if (bc->path && (!cJSON_IsString(at(r, "error.data.path")) ||
                         strcmp(str_at(r, "error.data.path"), bc->path) != 0))
            fail_msg("%s: want data.path %s, got %s", bc->name, bc->path, text);
        if (bc->offset >= 0 && num_at(r, "error.data.offset") != (double)bc->offset)
            fail_msg("%s: want data.offset %ld, got %s", bc->name, bc->offset, text);
    }
    if (bc->id) {
        char *id = show(at(r, "id"));
        if (!id || strcmp(id, bc->id) != 0)
            fail_msg("%s: want id %s, got %s", bc->name, bc->id, text);
        free(id);
    }
    free(text);
    cJSON_Delete(r);
    /* The connection still works. */
    expect_pong(c);
}

static void malformed_input_gets_errors_and_changes_nothing(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                            "{\"scene\":\"keep\",\"shapes\":{\"a\":" SPHERE
                            ",\"b\":{\"capsule\":{\"a\":[1,2,3],\"b\":[4,5,6],\"radius\":0.5}}}}}");
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    /* Revision 2, so that if_revision 1 conflicts. */
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.put\",\"params\":"
                     "{\"scene\":\"keep\",\"shapes\":{}}}");
    assert_int_equal((int)num_at(r, "result.revision"), 2);
    cJSON_Delete(r);
    static const char get[] =
        "{\"jsonrpc\":\"2.0\",\"id\":\"get\",\"method\":\"scene.get\",\"params\":{\"scene\":"
        "\"keep\"}}";
    char *before = strdup(call_line(c, get));

    case_list l = {NULL, 0, 0};
    build_cases(&l);
    assert_true(l.n >= 30);
    for (size_t i = 0; i < l.n; i++)
        check_case(c, &l.v[i]);

    assert_string_equal(call_line(c, get), before);
    free(before);
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i].line);
    free(l.v);
    rh_close(c);
    stop_ok(d);
}

/* The same kinds of damage over TCP, in one write: every reply still comes
 * back in order. */
static void malformed_input_in_one_write_over_tcp(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, true);
    case_list l = {NULL, 0, 0};
    build_cases(&l);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t replies = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n";
        size_t need = l.v[i].len + 1 + strlen(ping);
        if (n + need > cap) {
            cap = (n + need) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + n, l.v[i].line, l.v[i].len);
        n += l.v[i].len;
        buf[n++] = '\n';
        memcpy(buf + n, ping, strlen(ping));
        n += strlen(ping);
        replies += (l.v[i].code == EXPECT_NOTHING ? 0 : 1) + 1;
    }
    send_raw(c, buf, n);
    size_t pongs = 0;
    for (size_t i = 0; i < replies; i++) {
        cJSON *r = read_json(c);
        const cJSON *id = at(r, "id");
        if (cJSON_IsString(id) && strcmp(id->valuestring, "p") == 0)
            pongs++;
        cJSON_Delete(r);
    }
    assert_int_equal(pongs, l.n);
    const char *line;
    size_t len;
    assert_int_equal(rh_read_line(c, rh_ms(200), &line, &len), RH_TIMEOUT);
    free(buf);
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i].line);
    free(l.v);
    rh_close(c);
    stop_ok(d);
}

/* HTTP request lines in any case and spacing, and the HTTP/2 preface: each
 * gets the plain-text 400 and the connection closes before the request
 * line behind it runs.  A line of garbage that is not HTTP stays a -32700
 * and the connection goes on. */
static void http_in_any_case_and_spacing_is_refused(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    static const char *const openers[] = {"get / HTTP/1.1\r\n", "GET  /  HTTP/1.1\r\n",
                                          "post\t/rpc HTTP/1.0\r\n", "PRI * HTTP/2.0\r\n"};
    size_t n_openers = sizeof openers / sizeof openers[0];
    for (size_t i = 0; i < n_openers; i++) {
        rh_conn *c = connect_ok(d, i % 2 == 0);
        textbuf b = {0};
        tb_printf(&b,
                  "%s\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                  "\"params\":{\"scene\":\"evil\"}}\n",
                  openers[i]);
        send_raw(c, b.p, b.len);
        free(b.p);
        const char *line;
        size_t len;
        assert_int_equal(rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len), RH_LINE);
        if (len < 12 || memcmp(line, "HTTP/1.1 400", 12) != 0)
            fail_msg("%s: want HTTP/1.1 400, got %.*s", openers[i], (int)len, line);
        rh_read_status st;
        while ((st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len)) == RH_LINE)
            assert_null(memchr(line, '{', len));
        assert_true(st == RH_EOF || st == RH_ERROR);
        rh_close(c);
    }
    rh_conn *c = connect_ok(d, true);
    cJSON *r = call_json(c, "GET HTTP/1.1");
    assert_int_equal((int)num_at(r, "error.code"), -32700);
    assert_int_equal((int)num_at(r, "error.data.offset"), 0);
    cJSON_Delete(r);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.list\"}");
    assert_int_equal(cJSON_GetArraySize(at(r, "result.scenes")), 0);
    cJSON_Delete(r);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}");
    assert_int_equal((int)num_at(r, "result.connections.http_rejected"), (int)n_openers);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(malformed_input_gets_errors_and_changes_nothing),
        DAEMON_TEST(malformed_input_in_one_write_over_tcp),
        DAEMON_TEST(http_in_any_case_and_spacing_is_refused),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
