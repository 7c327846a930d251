/* SPDX-License-Identifier: MIT */
/*
 * The client's JSON-RPC side: building requests, matching replies to ids,
 * the public call functions and raw line passthrough.  Connections and
 * socket I/O are in client.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"

#include <limits.h>
#include <sys/stat.h>

/* ---- JSON text helpers --------------------------------------------------------------- */

/* Appends to a growable string (rp_client_sb, shared with client_kin.c). */
typedef rp_client_sb strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Appends s as a JSON string literal. */
static void sb_json_string(strbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            sb_add(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            sb_add(b, esc, 6);
        } else {
            sb_add(b, (const char *)p, 1);
        }
    }
    sb_add(b, "\"", 1);
}

void rp_client_sb_add_(rp_client_sb *b, const char *s, size_t n)
{
    sb_add(b, s, n);
}

void rp_client_sb_puts_(rp_client_sb *b, const char *s)
{
    sb_puts(b, s);
}

void rp_client_sb_json_string_(rp_client_sb *b, const char *s)
{
    sb_json_string(b, s);
}

/* Appends JSON text s that cJSON accepted as one request line: without
 * whitespace outside strings (cJSON takes every byte 0x01..0x20 there for
 * whitespace), and with control characters inside strings, which cJSON
 * also accepts raw, escaped as \u00XX.  A raw '\n' in a string would
 * otherwise end the request line early, and the server's replies to the
 * two halves would be taken for the replies to this call and the next. */
static void sb_minified(strbuf *b, const char *s)
{
    bool in_str = false;
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (in_str && c == '\\' && (unsigned char)p[1] >= 0x20) {
            p++; /* an escape: the escaped byte cannot end the string */
        } else if (in_str && c == '"') {
            in_str = false;
        } else if (!in_str && c == '"') {
            in_str = true;
        } else if (c <= 0x20 && (c < 0x20 || !in_str)) {
            sb_add(b, run, (size_t)(p - run));
            run = p + 1;
            if (in_str) {
                char esc[8];
                snprintf(esc, sizeof esc, "\\u%04x", c);
                sb_add(b, esc, 6);
            }
        }
    }
    sb_add(b, run, strlen(run));
}

/* A skipper over JSON text that cJSON has already accepted, to find the
 * raw text of a member (the result keeps the server's digits exactly, which
 * re-printing the cJSON tree would not).  It must see the text exactly as
 * cJSON did, including cJSON's leniencies: every byte 0x01..0x20 counts as
 * whitespace (cJSON's buffer_skip_whitespace; NUL bytes are refused before
 * any of this runs), and a UTF-8 byte order mark may open the text.
 * tests/fuzz/fuzz_client_reply.c checks the two agree. */
static const char *skip_ws(const char *p)
{
    while ((unsigned char)*p - 1u < 0x20u) /* 0x01..0x20; NUL ends the text */
        p++;
    return p;
}

/* p at an opening '"'; returns the byte after the closing one. */
static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

/* Skips one JSON value starting at p (leading whitespace tolerated);
 * returns the byte after it. */
static const char *skip_value(const char *p)
{
    p = skip_ws(p);
    if (*p == '"')
        return skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '"') {
                p = skip_string(p) - 1;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return p;
    }
    /* A number or a literal ends at a delimiter or at whitespace. */
    while (*p && *p != ',' && *p != '}' && *p != ']' && (unsigned char)*p > 0x20u)
        p++;
    return p;
}

/* In the object text obj (accepted by cJSON, no NUL bytes), the raw text of
 * the value of the index-th member (0-based, in text order, which is the
 * order of cJSON's children).  Members are found by position, not by name:
 * cJSON decodes escapes in keys ("res\u0075lt" is "result") and takes the
 * first of duplicate keys, and matching its choice by position needs no
 * second decoder.  Returns a malloc'ed copy, or NULL when out of memory (or
 * when the text is not what cJSON accepted, which the caller treats alike). */
static char *raw_member_at(const char *obj, int index)
{
    const char *p = obj;
    if (strncmp(p, "\xEF\xBB\xBF", 3) == 0) /* cJSON skips a UTF-8 BOM first */
        p += 3;
    p = skip_ws(p);
    if (*p != '{')
        return NULL;
    p = skip_ws(p + 1);
    for (int i = 0; *p == '"'; i++) {
        p = skip_ws(skip_string(p));
        if (*p != ':')
            return NULL;
        const char *v = skip_ws(p + 1);
        const char *vend = skip_value(v);
        if (i == index) {
            size_t n = (size_t)(vend - v);
            char *out = malloc(n + 1);
            if (out) {
                memcpy(out, v, n);
                out[n] = '\0';
            }
            return out;
        }
        p = skip_ws(vend);
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1);
    }
    return NULL;
}

/* The position among obj's members of the one cJSON_GetObjectItemCaseSensitive
 * returns for key (the first with that name), or -1. */
static int member_index(const cJSON *obj, const char *key)
{
    int i = 0;
    for (const cJSON *m = obj ? obj->child : NULL; m; m = m->next, i++)
        if (m->string && strcmp(m->string, key) == 0)
            return i;
    return -1;
}

/* ---- requests and replies -------------------------------------------------------------- */

static bool pending_push(rp_client *c, uint64_t id)
{
    if (c->pending_count == c->pending_cap) {
        size_t cap = c->pending_cap ? c->pending_cap * 2 : 16;
        uint64_t *np = malloc(cap * sizeof *np);
        if (!np)
            return false;
        for (size_t i = 0; i < c->pending_count; i++)
            np[i] = c->pending[(c->pending_head + i) % c->pending_cap];
        free(c->pending);
        c->pending = np;
        c->pending_cap = cap;
        c->pending_head = 0;
    }
    c->pending[(c->pending_head + c->pending_count) % c->pending_cap] = id;
    c->pending_count++;
    return true;
}

static uint64_t pending_pop(rp_client *c)
{
    uint64_t id = c->pending[c->pending_head];
    c->pending_head = (c->pending_head + 1) % c->pending_cap;
    c->pending_count--;
    return id;
}

/* Builds the request line for method/params_json with the given id. */
static rp_client_error_kind build_request(strbuf *b, const char *method, const char *params_json,
                                          uint64_t id, rp_client_error *err)
{
    if (!method || !*method)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "method is %s", method ? "empty" : "NULL");
    if (params_json) {
        cJSON *check = cJSON_ParseWithOpts(params_json, NULL, 1);
        if (!check)
            return rp_client_fail_(
                err, RP_CLIENT_ARG, 0, "params are not valid JSON (near byte %zu)",
                (size_t)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - params_json : 0));
        cJSON_Delete(check);
    }
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)id);
    sb_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    sb_puts(b, idtext);
    sb_puts(b, ",\"method\":");
    sb_json_string(b, method);
    if (params_json) {
        sb_puts(b, ",\"params\":");
        sb_minified(b, params_json);
    }
    sb_puts(b, "}\n");
    if (b->oom)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    return RP_CLIENT_OK;
}

/* Sends a request and queues its id; the shared part of send and call. */
static rp_client_error_kind send_request(rp_client *c, const char *method, const char *params_json,
                                         uint64_t *id_out, long long deadline, rp_client_error *err)
{
    strbuf b = {NULL, 0, 0, false};
    uint64_t id = c->next_id;
    rp_client_error_kind k = build_request(&b, method, params_json, id, err);
    if (k == RP_CLIENT_OK && !pending_push(c, id))
        k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    if (k != RP_CLIENT_OK) {
        free(b.p);
        return k; /* nothing sent: the stream is still in step */
    }
    c->next_id++;
    k = rp_client_write_all_(c, b.p, b.len, deadline, err);
    free(b.p);
    if (k != RP_CLIENT_OK)
        return rp_client_breaks_(c, k);
    if (id_out)
        *id_out = id;
    return RP_CLIENT_OK;
}

/* Fails with RP_CLIENT_PROTOCOL, quoting the start of the line. */
static rp_client_error_kind bad_reply(rp_client_error *err, const char *why, const char *line,
                                      size_t len)
{
    size_t shown = len > 80 ? rp_client_utf8_cut_(line, 80) : len;
    return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0, "%s: %.*s%s", why, (int)shown, line,
                           len > 80 ? "..." : "");
}

/* Checks an error object's members: a code that is an integer in int's
 * range (JSON-RPC 2.0 says "MUST be an integer"; a fraction or 1e300 would
 * not convert) and a string message. */
static bool valid_error_object(const cJSON *e)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (!cJSON_IsObject(e) || !cJSON_IsNumber(code) || !cJSON_IsString(msg))
        return false;
    double v = code->valuedouble;
    return v >= (double)INT_MIN && v <= (double)INT_MAX && v == (double)(int)v;
}

/* The reply tree r (owned: freed or handed back in *reply) of line as the
 * answer to want: the second half of rp_client_parse_reply_. */
static rp_client_error_kind reply_from_tree(cJSON *r, const char *line, size_t len, uint64_t want,
                                            cJSON **reply, char **result_raw, rp_client_error *err)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(r, "jsonrpc");
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "result");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
    const char *bad = NULL;
    if (!cJSON_IsObject(r))
        bad = "reply is not a JSON object";
    else if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
        bad = "reply lacks \"jsonrpc\":\"2.0\"";
    else if (!rid)
        bad = "reply has no id";
    else if ((res != NULL) == (e != NULL))
        bad = "reply must have exactly one of result and error";
    else if (e && !valid_error_object(e))
        bad = "reply error lacks an integer code or a string message";
    /* The server answers with id null when it could not read the request (a
     * parse error, an overlong line); that is the reply to our request. */
    bool null_id_error = e && cJSON_IsNull(rid);
    if (!bad && !null_id_error && (!cJSON_IsNumber(rid) || rid->valuedouble != (double)want))
        bad = "reply id does not match the request id";
    if (bad) {
        cJSON_Delete(r);
        return bad_reply(err, bad, line, len);
    }
    if (e) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        rp_client_fail_(err, RP_CLIENT_RPC, (int)code->valuedouble, "%s", msg->valuestring);
        int data_at = member_index(e, "data");
        if (err && data_at >= 0) {
            char *etext = raw_member_at(line, member_index(r, "error"));
            err->data = etext ? raw_member_at(etext, data_at) : NULL;
            free(etext);
        }
        cJSON_Delete(r);
        return RP_CLIENT_RPC;
    }
    if (result_raw) {
        *result_raw = raw_member_at(line, member_index(r, "result"));
        if (!*result_raw) {
            cJSON_Delete(r);
            return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
        }
    }
    if (reply)
        *reply = r;
    else
        cJSON_Delete(r);
    return RP_CLIENT_OK;
}

/* Parses line[0..len) with cJSON; NULL (and *why) when it is not JSON or
 * holds a NUL byte, which cJSON given a length would take for whitespace
 * (the raw member copies stop at it; no JSON text holds one). */
static cJSON *parse_tree(const char *line, size_t len, const char **why)
{
    if (memchr(line, '\0', len)) {
        *why = "reply contains a NUL byte";
        return NULL;
    }
    cJSON *r = cJSON_ParseWithLengthOpts(line, len + 1, NULL, 1); /* len + 1: the NUL counts */
    if (!r)
        *why = "reply is not JSON";
    return r;
}

rp_client_error_kind rp_client_parse_reply_(const char *line, size_t len, uint64_t want,
                                            cJSON **reply, char **result_raw, rp_client_error *err)
{
    if (reply)
        *reply = NULL;
    if (result_raw)
        *result_raw = NULL;
    const char *why = NULL;
    cJSON *r = parse_tree(line, len, &why);
    if (!r)
        return bad_reply(err, why, line, len);
    return reply_from_tree(r, line, len, want, reply, result_raw, err);
}

/* ---- notifications ----------------------------------------------------------------------- */

/* A server notification, as cJSON reads the line: an object with a method
 * and without an id. */
static bool is_notification(const cJSON *r)
{
    return cJSON_IsObject(r) && cJSON_GetObjectItemCaseSensitive(r, "method") &&
           !cJSON_GetObjectItemCaseSensitive(r, "id");
}

/* An integer 0..2^53 (exact in a double, as watch ids and revisions are). */
static bool json_count(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void rp_client_notification_free(rp_client_notification *n)
{
    if (!n)
        return;
    free(n->method);
    free(n->scene);
    free(n->put);
    free(n->removed);
    free(n->params);
    free(n->line);
    memset(n, 0, sizeof *n);
}

/* Fills *n from the notification tree r of line (r stays the caller's). */
static rp_client_error_kind note_from_tree(const cJSON *r, const char *line, size_t len,
                                           rp_client_notification *n, rp_client_error *err)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(r, "jsonrpc");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(r, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(r, "params");
    if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
        return bad_reply(err, "notification lacks \"jsonrpc\":\"2.0\"", line, len);
    if (!cJSON_IsString(method))
        return bad_reply(err, "notification method is not a string", line, len);
    if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params))
        return bad_reply(err, "notification params are neither an object nor an array", line, len);
    const char *m = method->valuestring;
    bool changed = strcmp(m, "scene.changed") == 0;
    bool scene_note = changed || strcmp(m, "scene.deleted") == 0 || strcmp(m, "scene.resync") == 0;
    const cJSON *obj = cJSON_IsObject(params) ? params : NULL;
    const cJSON *scene = cJSON_GetObjectItemCaseSensitive(obj, "scene");
    const cJSON *put = cJSON_GetObjectItemCaseSensitive(obj, "put");
    const cJSON *removed = cJSON_GetObjectItemCaseSensitive(obj, "removed");
    uint64_t watch = 0, revision = 0;
    bool has_watch = json_count(cJSON_GetObjectItemCaseSensitive(obj, "watch"), &watch);
    bool has_revision = json_count(cJSON_GetObjectItemCaseSensitive(obj, "revision"), &revision);
    if (scene_note && (!has_watch || !has_revision || !cJSON_IsString(scene) ||
                       (changed && (!cJSON_IsObject(put) || !cJSON_IsArray(removed)))))
        return bad_reply(err,
                         changed ? "scene.changed lacks an integer watch and revision, a string "
                                   "scene, an object put or an array removed"
                                 : "notification lacks an integer watch and revision or a "
                                   "string scene",
                         line, len);
    rp_client_notification out = RP_CLIENT_NOTIFICATION_INIT;
    out.watch = watch;
    out.revision = revision;
    bool oom = !(out.method = copy_string(m));
    if (cJSON_IsString(scene))
        oom |= !(out.scene = copy_string(scene->valuestring));
    if (params) {
        out.params = raw_member_at(line, member_index(r, "params"));
        oom |= !out.params;
    }
    if (changed) {
        out.put = raw_member_at(out.params ? out.params : "", member_index(params, "put"));
        out.removed = raw_member_at(out.params ? out.params : "", member_index(params, "removed"));
        oom |= !out.put || !out.removed;
    }
    out.line = malloc(len + 1);
    if (out.line)
        memcpy(out.line, line, len + 1);
    oom |= !out.line;
    if (oom) {
        rp_client_notification_free(&out);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    *n = out;
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_parse_line_(const char *line, size_t len, uint64_t want,
                                           bool *is_note, rp_client_notification *note,
                                           cJSON **reply, char **result_raw, rp_client_error *err)
{
    *is_note = false;
    if (note)
        memset(note, 0, sizeof *note);
    if (reply)
        *reply = NULL;
    if (result_raw)
        *result_raw = NULL;
    const char *why = NULL;
    cJSON *r = parse_tree(line, len, &why);
    if (!r)
        return bad_reply(err, why, line, len);
    if (!is_notification(r))
        return reply_from_tree(r, line, len, want, reply, result_raw, err);
    *is_note = true;
    rp_client_notification scratch;
    rp_client_error_kind k = note_from_tree(r, line, len, note ? note : &scratch, err);
    cJSON_Delete(r);
    if (k == RP_CLIENT_OK && !note)
        rp_client_notification_free(&scratch);
    return k;
}

/* Reads the reply to the oldest pending request.  On success (OK or RPC) the
 * id is popped and *id set; *reply receives the parsed reply when reply is
 * not NULL (caller deletes), *result_raw the raw result text when not NULL.
 * A reply that is not the answer to that request breaks the stream. */
static rp_client_error_kind receive_reply(rp_client *c, long long deadline, uint64_t *id,
                                          cJSON **reply, char **result_raw, rp_client_error *err)
{
    uint64_t want = c->pending[c->pending_head];
    rp_client_error_kind k;
    for (;;) {
        char *line;
        size_t len;
        k = rp_client_next_line_(c, deadline, &line, &len, err);
        if (k != RP_CLIENT_OK)
            return rp_client_breaks_(c, k);
        bool is_note;
        rp_client_notification note;
        k = rp_client_parse_line_(line, len, want, &is_note, &note, reply, result_raw, err);
        if (!is_note)
            break;
        /* A notification before the reply: kept for
         * rp_client_next_notification.  Losing one would leave a watcher
         * silently out of date, so failing to keep it breaks the stream. */
        if (k == RP_CLIENT_OK && (k = rp_client_queue_note_(c, &note, err)) != RP_CLIENT_OK)
            rp_client_notification_free(&note);
        if (k != RP_CLIENT_OK)
            return rp_client_breaks_(c, k);
    }
    if (k == RP_CLIENT_PROTOCOL)
        return rp_client_breaks_(c, k);
    /* OK, RPC, or NOMEM for the result's copy: the reply was ours. */
    pending_pop(c);
    if (id)
        *id = want;
    return k;
}

/* ---- the public calls ------------------------------------------------------------------ */

rp_client_error_kind rp_client_send(rp_client *c, const char *method, const char *params_json,
                                    uint64_t *id_out, rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    return send_request(c, method, params_json, id_out, rp_client_deadline_after_(c->timeout_ms),
                        err);
}

rp_client_error_kind rp_client_recv(rp_client *c, uint64_t *id, char **result_json,
                                    rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count == 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "no reply outstanding");
    return receive_reply(c, rp_client_deadline_after_(c->timeout_ms), id, NULL, result_json, err);
}

/* What a synchronous call needs first: a fresh error, a usable stream, and
 * no pipelined replies still unread (they would be taken for its reply). */
static rp_client_error_kind call_ready(rp_client *c, rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count > 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%zu pipelined replies outstanding; recv them first",
                               c->pending_count);
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_call(rp_client *c, const char *method, const char *params_json,
                                    char **result_json, rp_client_error *err)
{
    if (result_json)
        *result_json = NULL;
    rp_client_error_kind k = call_ready(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    long long deadline = rp_client_deadline_after_(c->timeout_ms);
    k = send_request(c, method, params_json, NULL, deadline, err);
    if (k != RP_CLIENT_OK)
        return k;
    return receive_reply(c, deadline, NULL, NULL, result_json, err);
}

rp_client_error_kind rp_client_call_cjson(rp_client *c, const char *method, const cJSON *params,
                                          cJSON **result, rp_client_error *err)
{
    if (result)
        *result = NULL;
    rp_client_error_kind k = call_ready(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    char *text = NULL;
    if (params) {
        text = cJSON_PrintUnformatted(params);
        if (!text)
            return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    long long deadline = rp_client_deadline_after_(c->timeout_ms);
    k = send_request(c, method, text, NULL, deadline, err);
    cJSON_free(text);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *reply = NULL;
    k = receive_reply(c, deadline, NULL, &reply, NULL, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (result)
        *result = cJSON_DetachItemFromObjectCaseSensitive(reply, "result");
    cJSON_Delete(reply);
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_auth(rp_client *c, const char *token, rp_client_error *err)
{
    rp_client_error_free(err);
    if (!token)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "token is NULL");
    strbuf b = {NULL, 0, 0, false};
    sb_puts(&b, "{\"token\":");
    sb_json_string(&b, token);
    sb_puts(&b, "}");
    if (b.oom) {
        free(b.p);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, "auth", b.p, &result, err);
    /* The token is a secret: do not leave it in freed heap memory. */
    volatile char *v = b.p;
    for (size_t i = 0; i < b.len; i++)
        v[i] = 0;
    free(b.p);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *r = cJSON_Parse(result);
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"));
    cJSON_Delete(r);
    free(result);
    if (!ok)
        return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0, "auth reply lacks \"ok\":true");
    return RP_CLIENT_OK;
}

/* ---- raw lines ------------------------------------------------------------------------- */

rp_client_error_kind rp_client_send_line(rp_client *c, const char *line, size_t len,
                                         rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (!line && len > 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "line is NULL");
    long long deadline = rp_client_deadline_after_(c->timeout_ms);
    k = rp_client_write_all_(c, line, len, deadline, err);
    if (k == RP_CLIENT_OK)
        k = rp_client_write_all_(c, "\n", 1, deadline, err);
    return k == RP_CLIENT_OK ? k : rp_client_breaks_(c, k);
}

rp_client_error_kind rp_client_recv_line(rp_client *c, char **line, size_t *len,
                                         rp_client_error *err)
{
    rp_client_error_free(err);
    if (line)
        *line = NULL;
    if (!line)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "line is NULL");
    /* Lines already received stay readable after the server closed. */
    if (!c || c->broken != RP_CLIENT_OK || (c->fd < 0 && c->in_len == c->in_start))
        return rp_client_usable_(c, err);
    char *l;
    size_t n;
    rp_client_error_kind k =
        rp_client_next_line_(c, rp_client_deadline_after_(c->timeout_ms), &l, &n, err);
    if (k == RP_CLIENT_CLOSED && c->eof) {
        /* The clean end of a raw session: report it, keep the state. */
        return k;
    }
    if (k != RP_CLIENT_OK)
        return rp_client_breaks_(c, k);
    *line = malloc(n + 1);
    if (!*line)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    memcpy(*line, l, n + 1);
    if (len)
        *len = n;
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_shutdown_write(rp_client *c, rp_client_error *err)
{
    rp_client_error_free(err);
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (shutdown(c->fd, SHUT_WR) != 0 && errno != ENOTCONN)
        return rp_client_fail_(err, RP_CLIENT_IO, errno, "shutdown: %s", strerror(errno));
    return RP_CLIENT_OK;
}

/* Reads the token in path (its first line) into tok (RP_CLIENT_MAX_TOKEN_BYTES
 * + 1 bytes).  The rules are the daemon's for its own --token-file: not
 * readable by everyone, one line of text. */
static rp_client_error_kind read_token_file(const char *path, char *tok, rp_client_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return rp_client_fail_(err, RP_CLIENT_ARG, e, "token file %s: %s", path, strerror(e));
    }
    if (st.st_mode & S_IROTH) {
        close(fd);
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "token file %s is world-readable (mode %04o); refusing to use it "
                               "(chmod o-r %s)",
                               path, (unsigned)(st.st_mode & 07777), path);
    }
    size_t len = 0;
    ssize_t r = 0;
    while (len < RP_CLIENT_MAX_TOKEN_BYTES &&
           ((r = read(fd, tok + len, RP_CLIENT_MAX_TOKEN_BYTES - len)) > 0 ||
            (r < 0 && errno == EINTR)))
        if (r > 0)
            len += (size_t)r;
    int e = errno;
    close(fd);
    tok[len] = '\0';
    if (r < 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, e, "token file %s: %s", path, strerror(e));
    /* The first line; what follows a newline is not part of the token. */
    char *nl = memchr(tok, '\n', len);
    if (nl) {
        len = (size_t)(nl - tok);
        tok[len] = '\0';
    }
    while (len > 0 && tok[len - 1] == '\r')
        tok[--len] = '\0';
    if (len == 0 || (!nl && len == RP_CLIENT_MAX_TOKEN_BYTES) || strlen(tok) != len)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "token file %s: %s", path,
                               len == 0 ? "empty" : "not a token (too long or binary)");
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_auth_file(rp_client *c, const char *path, rp_client_error *err)
{
    rp_client_error_free(err);
    if (!path) {
        path = getenv("REPOSE_TOKEN_FILE");
        if (!path || !*path)
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "no token file given and REPOSE_TOKEN_FILE is not set");
    }
    char *tok = malloc(RP_CLIENT_MAX_TOKEN_BYTES + 1);
    if (!tok)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    rp_client_error_kind k = read_token_file(path, tok, err);
    if (k == RP_CLIENT_OK)
        k = rp_client_auth(c, tok, err);
    /* The token is a secret: do not leave it in freed heap memory. */
    volatile char *v = tok;
    for (size_t i = 0; i <= RP_CLIENT_MAX_TOKEN_BYTES; i++)
        v[i] = 0;
    free(tok);
    return k;
}
