/* Helpers shared by the daemon test programs; see daemon_util.h. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_util.h"

/* Starts a daemon with extra flags and fails the test unless it comes up. */
rh_daemon *start_with(const rh_opts *o)
{
    rh_daemon *d = rh_start(o);
    assert_non_null(d);
    if (!d->up) {
        rh_dump_log(d);
        fail_msg("daemon did not start");
    }
    return d;
}

rh_daemon *start(const char *const *extra)
{
    rh_opts o = {NULL, NULL, extra, false};
    return start_with(&o);
}

/* SIGTERM, expect exit status 0 (under valgrind: no errors, no leaks), and
 * release the daemon. */
void stop_ok(rh_daemon *d)
{
    int code = rh_stop(d, rh_ms(RH_TIMEOUT_MS));
    if (code != 0) {
        rh_dump_log(d);
        fail_msg("daemon exit status %d, want 0", code);
    }
    rh_destroy(d);
}

rh_conn *connect_ok(const rh_daemon *d, bool tcp)
{
    rh_conn *c = rh_connect(d, tcp);
    if (!c)
        fail_msg("cannot connect over %s", tcp ? "tcp" : "unix");
    return c;
}

/* Reads one reply line (fails on timeout / EOF) and parses it.  The caller
 * deletes the tree. */
cJSON *read_json(rh_conn *c)
{
    const char *line;
    size_t len;
    rh_read_status st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
    if (st != RH_LINE)
        fail_msg("no reply line (%s)", st == RH_TIMEOUT ? "timeout" : "connection closed");
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!j)
        fail_msg("reply is not JSON: %.*s", (int)len, line);
    return j;
}

cJSON *call_json(rh_conn *c, const char *request)
{
    if (!rh_send_line(c, request))
        fail_msg("cannot send %s", request);
    return read_json(c);
}

/* Sends a request and returns the reply line (valid until the next read). */
const char *call_line(rh_conn *c, const char *request)
{
    const char *line = rh_call(c, request);
    if (!line)
        fail_msg("no reply to %s", request);
    return line;
}

void expect_pong(rh_conn *c)
{
    assert_string_equal(call_line(c, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}"),
                        "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{\"pong\":true}}");
}

/* Value at a dotted path ("error.data.path"); NULL if missing. */
const cJSON *at(const cJSON *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = cJSON_GetObjectItemCaseSensitive(j, k);
    return j;
}

double num_at(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", path);
    return v->valuedouble;
}

const char *str_at(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);
    if (!cJSON_IsString(v))
        fail_msg("%s is not a string", path);
    return v->valuestring;
}

/* Exact structural equality: same types, numbers equal as doubles, strings
 * equal, array elements and object members equal and in the same order. */
bool json_same(const cJSON *a, const cJSON *b)
{
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
        return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            if ((a->type & 0xFF) == cJSON_Object && strcmp(x->string, y->string) != 0)
                return false;
            if (!json_same(x, y))
                return false;
        }
        return x == NULL && y == NULL;
    }
    default:
        return true; /* null, true, false: the type says it all */
    }
}

/* Prints a tree to a fresh string for messages (caller frees). */
char *show(const cJSON *j)
{
    return cJSON_PrintUnformatted(j);
}

/* Sends raw bytes (no newline added). */
void send_raw(rh_conn *c, const char *buf, size_t n)
{
    if (!rh_send(c, buf, n))
        fail_msg("cannot send %zu bytes", n);
}

