/* SPDX-License-Identifier: MIT */
/*
 * Replays the protocol transcripts in proto/examples/ against the real
 * daemon, so that the examples in the protocol document cannot rot.
 *
 * Usage: test_transcripts PATH-TO-REPOSED EXAMPLES-DIR
 *
 * Transcript format (also in proto/examples/README.md)
 * ----------------------------------------------------
 * A transcript is a file NAME.jsonl.  Each line is one JSON text, or a
 * deliberately malformed text.  A line is an EXPECTED reply if and only if
 * it parses as JSON and is
 *   - an object that has a "result" or an "error" member and no "method"
 *     member, or
 *   - a non-empty array whose elements are all such objects, or
 *   - a server notification: an object without "id" whose "method" is
 *     "scene.changed", "scene.deleted" or "scene.resync" (no request has
 *     those names);
 * every other line (requests, notifications, batches, garbage, blank lines)
 * is SENT to the daemon verbatim, followed by "\n".
 *
 * Lines are handled in order on one connection: a sent line is written, an
 * expected line is compared with the next line the server sends.  The
 * comparison is byte for byte, except that the JSON string "*" in an
 * expected line matches any single JSON value in the reply (a scalar, or
 * an object or array as a whole); it stands for values that change from
 * run to run (run_id, uptime, latency, memory, sampled timings).  After the last line the test
 * checks that no further line arrives (a short wait), which is how a
 * transcript shows that notifications get no reply.
 *
 * Each transcript runs against a fresh daemon (default limits), over the
 * Unix socket and again over TCP (Unix only under REPOSE_DAEMON_WRAPPER),
 * and the daemon must then exit 0 on SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "harness.h"

/* How long to wait for a reply that should not come, ms (before scaling). */
#define QUIET_MS 200

typedef struct transcript {
    char path[1024];
    char name[256 + 8]; /* a file name and " (tcp)" */
    bool tcp;
} transcript;

/* ---- classifying lines ------------------------------------------------------------- */

static bool is_reply_object(const cJSON *o)
{
    return cJSON_IsObject(o) && !cJSON_HasObjectItem(o, "method") &&
           (cJSON_HasObjectItem(o, "result") || cJSON_HasObjectItem(o, "error"));
}

/* A notification the server sends (watch notifications). */
static bool is_server_notification(const cJSON *o)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "method");
    return cJSON_IsObject(o) && !cJSON_HasObjectItem(o, "id") && cJSON_IsString(m) &&
           (strcmp(m->valuestring, "scene.changed") == 0 ||
            strcmp(m->valuestring, "scene.deleted") == 0 ||
            strcmp(m->valuestring, "scene.resync") == 0);
}

/* True when the line is an expected reply or server notification (see the
 * format above). */
static bool is_expected(const char *line, size_t len)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!j)
        return false;
    bool ok = true;
    for (const char *p = end; p < line + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            ok = false; /* trailing garbage: not JSON */
    if (ok) {
        if (cJSON_IsArray(j)) {
            ok = j->child != NULL;
            for (const cJSON *e = j->child; e && ok; e = e->next)
                ok = is_reply_object(e);
        } else {
            ok = is_reply_object(j) || is_server_notification(j);
        }
    }
    cJSON_Delete(j);
    return ok;
}

/* ---- comparing with wildcards --------------------------------------------------------- */

/* Length of the JSON scalar at the start of s[0..n), or 0 if there is none. */
static size_t scalar_len(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (s[0] == '"') {
        for (size_t i = 1; i < n; i++) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                return i + 1;
        }
        return 0;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t k = strlen(words[w]);
        if (n >= k && memcmp(s, words[w], k) == 0)
            return k;
    }
    size_t i = 0;
    while (i < n && strchr("-+.eE0123456789", s[i]) && s[i] != '\0')
        i++;
    return i;
}

/* The length of the object or array at s (s[0] is '{' or '['), brackets
 * balanced outside strings; 0 when it does not end within n. */
static size_t nested_len(const char *s, size_t n)
{
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            size_t k = scalar_len(s + i, n - i);
            if (k == 0)
                return 0;
            i += k - 1;
        } else if (s[i] == '{' || s[i] == '[') {
            depth++;
        } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return 0;
}

/* Compares an expected line with a received one; "*" (outside a string)
 * matches one value.  On mismatch *at is the offset in the received line. */
static bool matches(const char *exp, size_t en, const char *got, size_t gn, size_t *at)
{
    size_t i = 0, j = 0;
    bool in_str = false, esc = false;
    while (i < en) {
        if (!in_str && en - i >= 3 && memcmp(exp + i, "\"*\"", 3) == 0) {
            size_t k = j < gn && (got[j] == '{' || got[j] == '[') ? nested_len(got + j, gn - j)
                                                                  : scalar_len(got + j, gn - j);
            if (k == 0) {
                *at = j;
                return false;
            }
            i += 3;
            j += k;
            continue;
        }
        if (j >= gn || exp[i] != got[j]) {
            *at = j;
            return false;
        }
        char ch = exp[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == '"')
                in_str = false;
        } else if (ch == '"') {
            in_str = true;
        }
        i++;
        j++;
    }
    *at = j;
    return j == gn;
}

/* ---- the replay ----------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    *len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void replay(void **state)
{
    const transcript *t = *state;
    size_t flen = 0;
    char *text = read_file(t->path, &flen);
    assert_non_null(text);

    rh_daemon *d = rh_start(NULL);
    assert_non_null(d);
    if (!d->up)
        rh_dump_log(d);
    assert_true(d->up);
    rh_conn *c = rh_connect(d, t->tcp);
    assert_non_null(c);

    int lineno = 0, expected = 0;
    size_t pos = 0;
    while (pos < flen) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', flen - pos);
        size_t len = nl ? (size_t)(nl - line) : flen - pos;
        pos += len + (nl ? 1 : 0);
        lineno++;
        if (!is_expected(line, len)) {
            if (!rh_send(c, line, len) || !rh_send(c, "\n", 1))
                fail_msg("%s:%d: could not send the line", t->name, lineno);
            continue;
        }
        expected++;
        const char *got;
        size_t glen;
        rh_read_status st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &got, &glen);
        if (st != RH_LINE) {
            rh_dump_log(d);
            fail_msg("%s:%d: expected\n  %.*s\nbut the server %s", t->name, lineno, (int)len, line,
                     st == RH_TIMEOUT ? "sent nothing" : "closed the connection");
        }
        size_t at;
        if (!matches(line, len, got, glen, &at))
            fail_msg("%s:%d: expected\n  %.*s\ngot\n  %.*s\n(first difference at byte %zu)",
                     t->name, lineno, (int)len, line, (int)glen, got, at);
    }
    assert_true(expected > 0);

    /* Nothing more may arrive: notifications get no reply. */
    const char *extra;
    size_t elen;
    rh_read_status st = rh_read_line(c, rh_ms(QUIET_MS), &extra, &elen);
    if (st == RH_LINE)
        fail_msg("%s: unexpected extra line after the transcript:\n  %.*s", t->name, (int)elen,
                 extra);
    assert_int_equal(st, RH_TIMEOUT);

    rh_close(c);
    int code = rh_stop(d, rh_ms(RH_TIMEOUT_MS));
    if (code != 0)
        rh_dump_log(d);
    assert_int_equal(code, 0);
    rh_destroy(d);
    free(text);
}

/* ---- main ------------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const transcript *)a)->name, ((const transcript *)b)->name);
}

int main(int argc, char **argv)
{
    if (!rh_init(argc, argv) || argc < 3) {
        fprintf(stderr, "usage: %s PATH-TO-REPOSED EXAMPLES-DIR\n", argv[0]);
        return 2;
    }
    DIR *dp = opendir(argv[2]);
    if (!dp) {
        perror(argv[2]);
        return 2;
    }
    size_t n = 0, cap = 16;
    transcript *ts = malloc(cap * sizeof *ts);
    struct dirent *e;
    bool both = !rh_wrapped();
    while ((e = readdir(dp)) != NULL) {
        size_t k = strlen(e->d_name);
        if (k < 7 || strcmp(e->d_name + k - 6, ".jsonl") != 0 || e->d_name[0] == '.')
            continue;
        for (int tcp = 0; tcp <= (both ? 1 : 0); tcp++) {
            if (n == cap) {
                cap *= 2;
                ts = realloc(ts, cap * sizeof *ts);
            }
            transcript *t = &ts[n++];
            snprintf(t->path, sizeof t->path, "%s/%s", argv[2], e->d_name);
            snprintf(t->name, sizeof t->name, "%s%s", e->d_name, tcp ? " (tcp)" : "");
            t->tcp = tcp != 0;
        }
    }
    closedir(dp);
    if (n == 0) {
        fprintf(stderr, "no *.jsonl transcripts in %s\n", argv[2]);
        free(ts);
        return 2;
    }
    qsort(ts, n, sizeof *ts, by_name);
    struct CMUnitTest *tests = calloc(n, sizeof *tests);
    for (size_t i = 0; i < n; i++) {
        tests[i].name = ts[i].name;
        tests[i].test_func = replay;
        tests[i].teardown_func = rh_teardown;
        tests[i].initial_state = &ts[i];
    }
    int failed = _cmocka_run_group_tests("transcripts", tests, n, NULL, NULL);
    free(tests);
    free(ts);
    return failed;
}
