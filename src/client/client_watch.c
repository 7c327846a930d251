/* SPDX-License-Identifier: MIT */
/*
 * Watch notifications in the client (include/repose/client.h): scene.watch
 * and scene.unwatch, and the queue of notifications that arrive between
 * replies.  Lines are told apart and parsed in client_rpc.c
 * (rp_client_parse_line_); a call that meets a notification before its
 * reply queues it here, and rp_client_next_notification hands the queue out
 * in order before it reads more from the socket.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"
#include "util/utf8.h"

/* ---- the queue ---------------------------------------------------------------------- */

rp_client_error_kind rp_client_queue_note_(rp_client *c, rp_client_notification *n,
                                           rp_client_error *err)
{
    if (c->notes_count == c->notes_cap) {
        size_t cap = c->notes_cap ? c->notes_cap * 2 : 16;
        rp_client_notification *np = malloc(cap * sizeof *np);
        if (!np)
            return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
        for (size_t i = 0; i < c->notes_count; i++)
            np[i] = c->notes[(c->notes_head + i) % c->notes_cap];
        free(c->notes);
        c->notes = np;
        c->notes_cap = cap;
        c->notes_head = 0;
    }
    c->notes[(c->notes_head + c->notes_count) % c->notes_cap] = *n;
    c->notes_count++;
    memset(n, 0, sizeof *n);
    return RP_CLIENT_OK;
}

void rp_client_free_notes_(rp_client *c)
{
    while (c->notes_count > 0) {
        rp_client_notification_free(&c->notes[c->notes_head]);
        c->notes_head = (c->notes_head + 1) % c->notes_cap;
        c->notes_count--;
    }
    free(c->notes);
    c->notes = NULL;
    c->notes_cap = c->notes_head = 0;
}

size_t rp_client_notifications_queued(const rp_client *c)
{
    return c ? c->notes_count : 0;
}

/* ---- scene.watch / scene.unwatch ------------------------------------------------------ */

/* Reads the integer member `key` (0..2^53) of the result text into *out;
 * RP_CLIENT_PROTOCOL when it is missing. */
static rp_client_error_kind result_count(const cJSON *res, const char *method, const char *key,
                                         uint64_t *out, rp_client_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0, "%s result lacks an integer \"%s\"",
                               method, key);
    *out = (uint64_t)d;
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_scene_watch(rp_client *c, const char *scene, const uint64_t *since,
                                           uint64_t *watch_id, uint64_t *revision,
                                           rp_client_error *err)
{
    rp_client_error_free(err);
    if (watch_id)
        *watch_id = 0;
    if (revision)
        *revision = 0;
    if (!scene)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "scene is NULL");
    size_t n = strlen(scene), bad = rp_utf8_invalid_at_((const unsigned char *)scene, n);
    if (bad < n)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "scene is not valid UTF-8 (byte 0x%02x at byte %zu)",
                               (unsigned char)scene[bad], bad);
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_sb_puts_(&b, "{\"scene\":");
    rp_client_sb_json_string_(&b, scene);
    if (since) {
        char num[32];
        snprintf(num, sizeof num, ",\"since\":%llu", (unsigned long long)*since);
        rp_client_sb_puts_(&b, num);
    }
    rp_client_sb_puts_(&b, "}");
    if (b.oom) {
        free(b.p);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, "scene.watch", b.p, &result, err);
    free(b.p);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *res = cJSON_Parse(result);
    free(result);
    if (!res)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    uint64_t id = 0, rev = 0;
    k = result_count(res, "scene.watch", "watch", &id, err);
    if (k == RP_CLIENT_OK)
        k = result_count(res, "scene.watch", "revision", &rev, err);
    cJSON_Delete(res);
    if (k != RP_CLIENT_OK)
        return k;
    if (watch_id)
        *watch_id = id;
    if (revision)
        *revision = rev;
    return RP_CLIENT_OK;
}

rp_client_error_kind rp_client_scene_unwatch(rp_client *c, uint64_t watch_id, rp_client_error *err)
{
    char params[48];
    snprintf(params, sizeof params, "{\"watch\":%llu}", (unsigned long long)watch_id);
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, "scene.unwatch", params, &result, err);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *res = cJSON_Parse(result);
    free(result);
    if (!res)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "unwatched"));
    cJSON_Delete(res);
    if (!ok)
        return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0,
                               "scene.unwatch result lacks \"unwatched\":true");
    return RP_CLIENT_OK;
}

/* ---- receiving ------------------------------------------------------------------------- */

rp_client_error_kind rp_client_next_notification(rp_client *c, int timeout_ms,
                                                 rp_client_notification *n, rp_client_error *err)
{
    rp_client_error_free(err);
    if (n)
        memset(n, 0, sizeof *n);
    if (!c || !n)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s is NULL", c ? "notification" : "client");
    /* Queued ones first, also after the connection closed. */
    if (c->notes_count > 0) {
        *n = c->notes[c->notes_head];
        c->notes_head = (c->notes_head + 1) % c->notes_cap;
        c->notes_count--;
        return RP_CLIENT_OK;
    }
    rp_client_error_kind k = rp_client_usable_(c, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (c->pending_count > 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%zu pipelined replies outstanding; recv them first",
                               c->pending_count);
    long long deadline = timeout_ms < 0 ? -1 : rp_client_now_ms_() + timeout_ms;
    char *line;
    size_t len;
    k = rp_client_next_line_(c, deadline, &line, &len, err);
    if (k == RP_CLIENT_TIMEOUT)
        /* Only whole lines are taken: a partial one waits in the buffer, and
         * the stream is still in step. */
        return rp_client_fail_(err, RP_CLIENT_TIMEOUT, 0, "no notification within %d ms",
                               timeout_ms);
    if (k != RP_CLIENT_OK)
        return rp_client_breaks_(c, k);
    bool is_note;
    k = rp_client_parse_line_(line, len, 0, &is_note, n, NULL, NULL, err);
    if (!is_note) {
        size_t shown = len > 80 ? rp_client_utf8_cut_(line, 80) : len;
        k = rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0,
                            "a line that is not a notification, with no request outstanding: "
                            "%.*s%s",
                            (int)shown, line, len > 80 ? "..." : "");
    }
    return k == RP_CLIENT_OK ? k : rp_client_breaks_(c, k);
}
