/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the client library's reply parsing (rp_client_parse_reply_,
 * src/client/client_rpc.c), the step from one reply line to a result's raw
 * text or an error's code, message and data.
 *
 * The input is one reply line (without its '\n').  The reference is the
 * tree cJSON builds from the same line (cJSON_ParseWithOpts, which stops at
 * a NUL byte where the client is given a length).  The line is parsed as the
 * reply to request id 1 and, when its id is an integer 0..2^53, as the reply
 * to that id, once asking for the result's text and the tree and once for
 * neither.  Invariants:
 *
 *  - a line with a NUL byte, a line cJSON rejects, and a line that is not a
 *    JSON-RPC 2.0 response to the id asked for is RP_CLIENT_PROTOCOL, with
 *    a NUL-terminated message and no result;
 *  - a response with a result is RP_CLIENT_OK, and its raw text occurs
 *    verbatim in the line, has no whitespace around it, parses with cJSON,
 *    and equals cJSON's `result` member node by node (types, keys and their
 *    order, strings, numbers bit for bit: stricter than cJSON_Compare, which
 *    also calls infinity unequal to itself); the tree handed back equals
 *    cJSON's whole reply;
 *  - an error response is RP_CLIENT_RPC with cJSON's code and message (the
 *    message cut to the 255 bytes rp_client_error holds), and error.data's
 *    raw text, when there is one, likewise equal to cJSON's `data`.
 *
 * What counts as a response is restated here from JSON-RPC 2.0 and the
 * comment on rp_client_parse_reply_: an object; "jsonrpc" the string
 * "2.0"; an id; exactly one of result and error; an error an object with an
 * integer code in int's range and a string message; the id a number equal
 * to the one asked for, or null on an error reply.  Members are the ones
 * cJSON_GetObjectItemCaseSensitive finds (the first of duplicates, keys
 * with escapes decoded).  The only place the client is stricter than cJSON
 * is the NUL byte, which cJSON given a length treats as whitespace.
 *
 * The same line also goes through rp_client_parse_line_, which first tells
 * a server notification (an object with a method and no id, as cJSON reads
 * it) from a reply:
 *
 *  - a line that is not a notification gives exactly what
 *    rp_client_parse_reply_ gives (kind, code, message, data, result text);
 *  - a notification is RP_CLIENT_OK when "jsonrpc" is "2.0", the method a
 *    string, params absent, an object or an array, and (for scene.changed,
 *    scene.deleted and scene.resync) watch and revision integers 0..2^53,
 *    scene a string and, for scene.changed, put an object and removed an
 *    array; else RP_CLIENT_PROTOCOL with nothing filled.  On OK every field
 *    is cJSON's value, the raw params / put / removed texts are cJSON's
 *    values (as check_raw_value says), and line is the line.
 */
#include "fuzz_util.h"

#include <limits.h>

#include "client_int.h"

/* Checks that raw is the text of the value ref: found verbatim in line,
 * without surrounding whitespace, parsing to the same tree. */
static void check_raw_value(const char *what, const char *raw, const cJSON *ref, const char *line)
{
    FUZZ_CHECK(raw != NULL, "%s: no raw text", what);
    size_t n = strlen(raw);
    FUZZ_CHECK(n > 0 && (unsigned char)raw[0] > 0x20 && (unsigned char)raw[n - 1] > 0x20,
               "%s: raw text '%s' is empty or has whitespace around it", what, raw);
    FUZZ_CHECK(strstr(line, raw) != NULL, "%s: raw text '%s' is not in the line", what, raw);
    cJSON *parsed = cJSON_ParseWithOpts(raw, NULL, 1);
    FUZZ_CHECK(parsed != NULL, "%s: raw text '%s' does not parse", what, raw);
    FUZZ_CHECK(fuzz_same_json(parsed, ref), "%s: raw text '%s' is not the value cJSON found", what,
               raw);
    cJSON_Delete(parsed);
}

/* The kind the client must return for the reply tree r (NULL: cJSON
 * rejected the line) as the answer to want. */
static rp_client_error_kind expected_kind(const cJSON *r, uint64_t want)
{
    if (!cJSON_IsObject(r))
        return RP_CLIENT_PROTOCOL;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(r, "jsonrpc");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "result");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
    if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0 || !id)
        return RP_CLIENT_PROTOCOL;
    if ((res == NULL) == (e == NULL))
        return RP_CLIENT_PROTOCOL;
    if (e) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (!cJSON_IsObject(e) || !cJSON_IsNumber(code) || !cJSON_IsString(msg))
            return RP_CLIENT_PROTOCOL;
        double c = code->valuedouble;
        if (!(c >= INT_MIN && c <= INT_MAX) || floor(c) != c)
            return RP_CLIENT_PROTOCOL;
        if (cJSON_IsNull(id))
            return RP_CLIENT_RPC;
    }
    if (!cJSON_IsNumber(id) || id->valuedouble != (double)want)
        return RP_CLIENT_PROTOCOL;
    return e ? RP_CLIENT_RPC : RP_CLIENT_OK;
}

/* Parses line as the reply to want and checks the outcome against ref. */
static void check_parse(const char *line, size_t len, bool has_nul, const cJSON *ref, uint64_t want,
                        bool outputs)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *reply = NULL;
    char *raw = NULL;
    rp_client_error_kind k = rp_client_parse_reply_(line, len, want, outputs ? &reply : NULL,
                                                    outputs ? &raw : NULL, &err);
    rp_client_error_kind want_k = has_nul ? RP_CLIENT_PROTOCOL : expected_kind(ref, want);
    FUZZ_CHECK(k == want_k, "id %llu: kind %s, expected %s", (unsigned long long)want,
               rp_client_error_kind_name(k), rp_client_error_kind_name(want_k));
    FUZZ_CHECK(memchr(err.message, '\0', sizeof err.message) != NULL, "message not terminated");
    if (k != RP_CLIENT_OK)
        FUZZ_CHECK(!reply && !raw, "a result besides a failure");
    if (k == RP_CLIENT_PROTOCOL) {
        FUZZ_CHECK(err.kind == k && err.message[0] && !err.data, "protocol error not described");
    } else if (k == RP_CLIENT_OK) {
        FUZZ_CHECK(err.kind == RP_CLIENT_OK && !err.data, "error filled on success");
        if (outputs) {
            check_raw_value("result", raw, cJSON_GetObjectItemCaseSensitive(ref, "result"), line);
            FUZZ_CHECK(fuzz_same_json(reply, ref), "the reply tree is not cJSON's");
        }
    } else {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(ref, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
        FUZZ_CHECK(err.kind == RP_CLIENT_RPC && err.code == (int)code->valuedouble,
                   "code %d, cJSON sees %.17g", err.code, code->valuedouble);
        size_t mlen = strlen(msg->valuestring);
        /* A message that fits err.message is kept whole, even if it ends in
         * a broken UTF-8 sequence; a longer one is cut between characters. */
        size_t keep = mlen <= sizeof err.message - 1
                          ? mlen
                          : rp_client_utf8_cut_(msg->valuestring, sizeof err.message - 1);
        FUZZ_CHECK(strlen(err.message) == keep && memcmp(err.message, msg->valuestring, keep) == 0,
                   "message '%s', cJSON sees '%s'", err.message, msg->valuestring);
        if (data)
            check_raw_value("error.data", err.data, data, line);
        else
            FUZZ_CHECK(err.data == NULL, "data '%s' where cJSON sees none", err.data);
    }
    free(raw);
    cJSON_Delete(reply);
    rp_client_error_free(&err);
}

/* An integer 0..2^53, as the client takes watch ids and revisions. */
static bool ref_count(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0) ||
        floor(v->valuedouble) != v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

/* The kind rp_client_parse_line_ must return for the notification tree r. */
static rp_client_error_kind expected_note_kind(const cJSON *r)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(r, "jsonrpc");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "params");
    if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0 || !cJSON_IsString(m))
        return RP_CLIENT_PROTOCOL;
    if (p && !cJSON_IsObject(p) && !cJSON_IsArray(p))
        return RP_CLIENT_PROTOCOL;
    bool changed = strcmp(m->valuestring, "scene.changed") == 0;
    if (!changed && strcmp(m->valuestring, "scene.deleted") != 0 &&
        strcmp(m->valuestring, "scene.resync") != 0)
        return RP_CLIENT_OK;
    const cJSON *o = cJSON_IsObject(p) ? p : NULL;
    uint64_t x;
    if (!ref_count(cJSON_GetObjectItemCaseSensitive(o, "watch"), &x) ||
        !ref_count(cJSON_GetObjectItemCaseSensitive(o, "revision"), &x) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "scene")))
        return RP_CLIENT_PROTOCOL;
    if (changed && (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "put")) ||
                    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "removed"))))
        return RP_CLIENT_PROTOCOL;
    return RP_CLIENT_OK;
}

/* Parses line with rp_client_parse_line_ as the reply to want (or as a
 * notification) and checks the outcome against ref and against
 * rp_client_parse_reply_. */
static void check_line(const char *line, size_t len, bool has_nul, const cJSON *ref, uint64_t want)
{
    bool ref_note = !has_nul && cJSON_IsObject(ref) &&
                    cJSON_GetObjectItemCaseSensitive(ref, "method") &&
                    !cJSON_GetObjectItemCaseSensitive(ref, "id");
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
    char *raw = NULL;
    bool is_note = !ref_note;
    rp_client_error_kind k = rp_client_parse_line_(line, len, want, &is_note, &n, NULL, &raw, &err);
    FUZZ_CHECK(is_note == ref_note, "notification %d, cJSON says %d", is_note, ref_note);
    FUZZ_CHECK(memchr(err.message, '\0', sizeof err.message) != NULL, "message not terminated");
    if (!is_note) {
        FUZZ_CHECK(!n.method && !n.line, "a notification filled for a reply");
        rp_client_error e2 = RP_CLIENT_ERROR_INIT;
        char *raw2 = NULL;
        rp_client_error_kind k2 = rp_client_parse_reply_(line, len, want, NULL, &raw2, &e2);
        FUZZ_CHECK(k == k2, "kind %s, parse_reply_ says %s", rp_client_error_kind_name(k),
                   rp_client_error_kind_name(k2));
        FUZZ_CHECK(err.code == e2.code && strcmp(err.message, e2.message) == 0,
                   "error differs from parse_reply_'s");
        FUZZ_CHECK((!err.data && !e2.data) || (err.data && e2.data && !strcmp(err.data, e2.data)),
                   "error data differs from parse_reply_'s");
        FUZZ_CHECK((!raw && !raw2) || (raw && raw2 && !strcmp(raw, raw2)),
                   "result differs from parse_reply_'s");
        free(raw2);
        rp_client_error_free(&e2);
        free(raw);
        rp_client_error_free(&err);
        return;
    }
    FUZZ_CHECK(!raw, "a result for a notification");
    rp_client_error_kind want_k = expected_note_kind(ref);
    FUZZ_CHECK(k == want_k, "notification kind %s, expected %s", rp_client_error_kind_name(k),
               rp_client_error_kind_name(want_k));
    if (k != RP_CLIENT_OK) {
        FUZZ_CHECK(!n.method && !n.line && !n.params && !n.scene, "fields filled on failure");
        FUZZ_CHECK(err.kind == k && err.message[0] && !err.data, "protocol error not described");
        rp_client_error_free(&err);
        return;
    }
    FUZZ_CHECK(err.kind == RP_CLIENT_OK, "error filled on success");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(ref, "method");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(ref, "params");
    const cJSON *o = cJSON_IsObject(p) ? p : NULL;
    FUZZ_CHECK(n.method && strcmp(n.method, m->valuestring) == 0, "method differs");
    FUZZ_CHECK(n.line && strlen(n.line) == len && memcmp(n.line, line, len) == 0, "line differs");
    if (p)
        check_raw_value("params", n.params, p, line);
    else
        FUZZ_CHECK(!n.params, "params where cJSON sees none");
    uint64_t x = 0;
    FUZZ_CHECK(n.watch == (ref_count(cJSON_GetObjectItemCaseSensitive(o, "watch"), &x) ? x : 0),
               "watch %llu differs", (unsigned long long)n.watch);
    x = 0;
    FUZZ_CHECK(n.revision ==
                   (ref_count(cJSON_GetObjectItemCaseSensitive(o, "revision"), &x) ? x : 0),
               "revision %llu differs", (unsigned long long)n.revision);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "scene");
    if (cJSON_IsString(sc))
        FUZZ_CHECK(n.scene && strcmp(n.scene, sc->valuestring) == 0, "scene differs");
    else
        FUZZ_CHECK(!n.scene, "a scene where cJSON sees none");
    if (strcmp(m->valuestring, "scene.changed") == 0) {
        check_raw_value("put", n.put, cJSON_GetObjectItemCaseSensitive(o, "put"), line);
        check_raw_value("removed", n.removed, cJSON_GetObjectItemCaseSensitive(o, "removed"), line);
    } else {
        FUZZ_CHECK(!n.put && !n.removed, "put or removed outside scene.changed");
    }
    rp_client_notification_free(&n);
    FUZZ_CHECK(!n.method && !n.line, "notification_free left fields");
    rp_client_error_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The client hands the parser its buffer with a NUL over the '\n'. */
    char *line = malloc(size + 1);
    FUZZ_CHECK(line, "out of memory");
    memcpy(line, data, size);
    line[size] = '\0';
    bool has_nul = memchr(line, '\0', size) != NULL;
    cJSON *ref = has_nul ? NULL : cJSON_ParseWithOpts(line, NULL, 1);

    check_parse(line, size, has_nul, ref, 1, true);
    check_parse(line, size, has_nul, ref, 1, false);
    check_line(line, size, has_nul, ref, 1);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ref, "id");
    if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble <= 9007199254740992.0 &&
        floor(id->valuedouble) == id->valuedouble && id->valuedouble != 1) {
        check_parse(line, size, has_nul, ref, (uint64_t)id->valuedouble, true);
        check_parse(line, size, has_nul, ref, (uint64_t)id->valuedouble, false);
    }
    cJSON_Delete(ref);
    free(line);
    return 0;
}
