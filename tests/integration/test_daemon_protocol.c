/* SPDX-License-Identifier: MIT */
/*
 * Daemon protocol tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon_protocol PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * Many clients pipeline mixed requests at once, and requests arrive split
 * byte by byte or many to a write.  Revisions are store-wide (docs/ARCHITECTURE.md, Revisions),
 * so a pipelining client cannot know its scene's revision in advance: its
 * expected replies hold placeholders that the replies fill in, and the test
 * checks that each client sees its revisions rise and that the puts of all
 * clients together took the numbers 1..N, each once.  Replies are checked by parsing them
 * with cJSON and comparing with an expected tree exactly (numbers with ==,
 * members in order), or byte for byte.  Distances are computed with the
 * public C API, which the daemon uses too, so they must agree to the last
 * bit.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
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
#include "repose/geometry.h"

/* ---- envelopes --------------------------------------------------------------------------- */

static cJSON *request(cJSON *id, const char *method, cJSON *params)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", id);
    cJSON_AddStringToObject(r, "method", method);
    if (params)
        cJSON_AddItemToObject(r, "params", params);
    return r;
}

static cJSON *result_reply(const cJSON *id, cJSON *result)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, true));
    cJSON_AddItemToObject(r, "result", result);
    return r;
}

static cJSON *error_reply(const cJSON *id, int code, const char *message, cJSON *data)
{
    cJSON *r = cJSON_CreateObject(), *e = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, true));
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    if (data)
        cJSON_AddItemToObject(e, "data", data);
    cJSON_AddItemToObject(r, "error", e);
    return r;
}

/* ---- many concurrent pipelining clients -------------------------------------------------- */

#define N_IDS 20

/* Placeholders in expected replies (see resolve_revisions). */
#define REV_NEW "$NEW" /* a put's reply: a revision above the client's last */
#define REV_CUR "$REV" /* the client's last revision, also inside a message */

/* An if_revision that no scene reaches: a sure conflict. */
#define REV_NEVER 1000000000000000.0

typedef struct client {
    rh_conn *conn;
    bool tcp;
    int index;
    char scene[32];
    rng r;
    /* the model of the client's scene */
    uint64_t revision; /* the revision of its last put, from the replies */
    size_t n_puts;
    bool present[N_IDS];
    rp_shape shapes[N_IDS];
    /* requests (all of them, sent as the socket accepts) and replies */
    char *out;
    size_t out_len, out_cap, out_off;
    cJSON **expect;
    size_t n_expect, next;
    size_t n_errors;
    bool done;
} client;

static void shape_id(char out[8], int k)
{
    snprintf(out, 8, "s%02u", (unsigned)k % 1000000u); /* k < 10^6: fits in 8 bytes */
}

static void append_request(client *cl, cJSON *req, cJSON *reply)
{
    char *text = cJSON_PrintUnformatted(req);
    size_t n = strlen(text);
    if (cl->out_len + n + 1 > cl->out_cap) {
        cl->out_cap = (cl->out_len + n + 1) * 2;
        cl->out = realloc(cl->out, cl->out_cap);
    }
    memcpy(cl->out + cl->out_len, text, n);
    cl->out[cl->out_len + n] = '\n';
    cl->out_len += n + 1;
    free(text);
    cJSON_Delete(req);
    cl->expect[cl->n_expect++] = reply;
}

/* scene.put of 1..3 random shapes with distinct ids (a repeated id is
 * rejected). */
static void gen_put(client *cl, cJSON *id, bool first)
{
    cJSON *params = cJSON_CreateObject(), *shapes = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "scene", cl->scene);
    int n = first ? 3 : 1 + (int)rng_below(&cl->r, 3);
    int base = (int)rng_below(&cl->r, N_IDS), step = 1 + (int)rng_below(&cl->r, 6);
    for (int i = 0; i < n; i++) {
        int k = first ? i : (base + i * step) % N_IDS;
        char sid[8];
        shape_id(sid, k);
        cl->shapes[k] = rng_shape(&cl->r);
        cl->present[k] = true;
        cJSON_AddItemToObject(shapes, sid, shape_json(&cl->shapes[k]));
    }
    cJSON_AddItemToObject(params, "shapes", shapes);
    /* Compare-and-set: the first put creates the scene, which must not
     * exist yet (revision 0).  Later revisions are not known when the
     * request is written (other clients take numbers meanwhile). */
    if (first && rng_below(&cl->r, 2) == 0)
        cJSON_AddNumberToObject(params, "if_revision", 0);
    cJSON_AddBoolToObject(params, "create", true);
    cl->n_puts++;
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "scene", cl->scene);
    cJSON_AddStringToObject(res, "revision", REV_NEW);
    append_request(cl, request(id, "scene.put", params), result_reply(id, res));
}

typedef struct hit {
    int k;
    double d;
} hit;

static int hit_cmp(const void *a, const void *b)
{
    const hit *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->k - y->k; /* ids s00..s19 sort like their numbers */
}

static void gen_scene_distance(client *cl, cJSON *id)
{
    rp_shape q = rng_shape(&cl->r);
    bool pairs = rng_below(&cl->r, 3) == 0;
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "scene", cl->scene);
    cJSON_AddItemToObject(params, "shape", shape_json(&q));
    if (pairs)
        cJSON_AddNumberToObject(params, "max_distance", 1.5);
    hit hits[N_IDS];
    int n = 0;
    for (int k = 0; k < N_IDS; k++) {
        if (cl->present[k]) {
            hits[n].k = k;
            hits[n].d = rp_shape_signed_distance(&q, &cl->shapes[k]);
            n++;
        }
    }
    qsort(hits, (size_t)n, sizeof *hits, hit_cmp);
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "revision", REV_CUR);
    char sid[8];
    if (n > 0) {
        cJSON_AddNumberToObject(res, "distance", hits[0].d);
        cJSON *nearest = cJSON_AddObjectToObject(res, "nearest");
        cJSON_AddNullToObject(nearest, "query");
        shape_id(sid, hits[0].k);
        cJSON_AddStringToObject(nearest, "shape", sid);
    } else {
        cJSON_AddNullToObject(res, "distance");
        cJSON_AddNullToObject(res, "nearest");
    }
    if (pairs) {
        cJSON *arr = cJSON_AddArrayToObject(res, "pairs");
        for (int i = 0; i < n && hits[i].d < 1.5; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNullToObject(p, "query");
            shape_id(sid, hits[i].k);
            cJSON_AddStringToObject(p, "shape", sid);
            cJSON_AddNumberToObject(p, "distance", hits[i].d);
            cJSON_AddItemToArray(arr, p);
        }
    }
    append_request(cl, request(id, "scene.distance", params), result_reply(id, res));
}

static void gen_scene_get(client *cl, cJSON *id)
{
    int k1 = (int)rng_below(&cl->r, N_IDS), k2 = (int)rng_below(&cl->r, N_IDS);
    while (!cl->present[k1])
        k1 = (k1 + 1) % N_IDS;
    while (!cl->present[k2])
        k2 = (k2 + 1) % N_IDS;
    char a[8], b[8];
    shape_id(a, k1);
    shape_id(b, k2);
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "scene", cl->scene);
    const char *ids[2] = {a, b};
    cJSON_AddItemToObject(params, "ids", cJSON_CreateStringArray(ids, 2));
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "scene", cl->scene);
    cJSON_AddStringToObject(res, "revision", REV_CUR);
    cJSON *shapes = cJSON_AddObjectToObject(res, "shapes");
    int lo = k1 < k2 ? k1 : k2, hi = k1 < k2 ? k2 : k1;
    shape_id(a, lo);
    cJSON_AddItemToObject(shapes, a, shape_json(&cl->shapes[lo]));
    if (hi != lo) {
        shape_id(b, hi);
        cJSON_AddItemToObject(shapes, b, shape_json(&cl->shapes[hi]));
    }
    append_request(cl, request(id, "scene.get", params), result_reply(id, res));
}

static void gen_distance(client *cl, cJSON *id)
{
    rp_shape a = rng_shape(&cl->r), b = rng_shape(&cl->r);
    bool witness = rng_below(&cl->r, 4) == 0;
    cJSON *params = cJSON_CreateObject();
    cJSON_AddItemToObject(params, "a", shape_json(&a));
    cJSON_AddItemToObject(params, "b", shape_json(&b));
    if (witness)
        cJSON_AddBoolToObject(params, "witness", true);
    cJSON *res = cJSON_CreateObject();
    if (witness) {
        rp_contact c = rp_shape_contact(&a, &b);
        cJSON_AddNumberToObject(res, "distance", c.distance);
        cJSON_AddItemToObject(res, "point_a", vec_json(c.point_a));
        cJSON_AddItemToObject(res, "point_b", vec_json(c.point_b));
        cJSON_AddItemToObject(res, "normal", vec_json(c.normal));
    } else {
        cJSON_AddNumberToObject(res, "distance", rp_shape_signed_distance(&a, &b));
    }
    append_request(cl, request(id, "distance", params), result_reply(id, res));
}

/* A deliberate error of one of four kinds. */
static void gen_error(client *cl, cJSON *id)
{
    char msg[160];
    cJSON *params = cJSON_CreateObject(), *data = cJSON_CreateObject(), *reply;
    cl->n_errors++;
    switch (rng_below(&cl->r, 4)) {
    case 0:
        cJSON_Delete(params);
        cJSON_AddStringToObject(data, "method", "no.such");
        reply = error_reply(id, -32601, "Method not found: no.such", data);
        append_request(cl, request(id, "no.such", NULL), reply);
        return;
    case 1: {
        rp_shape a = rng_shape(&cl->r);
        cJSON *b = cJSON_CreateObject(), *sp = cJSON_AddObjectToObject(b, "sphere");
        cJSON_AddItemToObject(sp, "center", vec_json(rng_vec(&cl->r)));
        cJSON_AddNumberToObject(sp, "radius", -0.125);
        cJSON_AddItemToObject(params, "a", shape_json(&a));
        cJSON_AddItemToObject(params, "b", b);
        cJSON_AddStringToObject(data, "path", "params.b.sphere.radius");
        cJSON_AddStringToObject(data, "reason", "must be finite and >= 0");
        reply = error_reply(id, -32602,
                            "Invalid params: params.b.sphere.radius must be finite and >= 0", data);
        append_request(cl, request(id, "distance", params), reply);
        return;
    }
    case 2: {
        char name[40];
        snprintf(name, sizeof name, "missing-%d", cl->index);
        cJSON_AddStringToObject(params, "scene", name);
        cJSON_AddStringToObject(data, "kind", "scene");
        cJSON_AddStringToObject(data, "name", name);
        snprintf(msg, sizeof msg, "Not found: scene '%s'", name);
        reply = error_reply(id, -32001, msg, data);
        append_request(cl, request(id, "scene.get", params), reply);
        return;
    }
    default: {
        cJSON_AddStringToObject(params, "scene", cl->scene);
        cJSON_AddItemToObject(params, "shapes", cJSON_CreateObject());
        cJSON_AddNumberToObject(params, "if_revision", REV_NEVER);
        cJSON_AddNumberToObject(data, "expected", REV_NEVER);
        cJSON_AddStringToObject(data, "actual", REV_CUR);
        snprintf(msg, sizeof msg, "Revision conflict: expected %.0f, scene is at " REV_CUR,
                 REV_NEVER);
        reply = error_reply(id, -32003, msg, data);
        append_request(cl, request(id, "scene.put", params), reply);
        return;
    }
    }
}

static void gen_ping(client *cl, cJSON *id)
{
    cJSON *res = cJSON_CreateObject();
    cJSON_AddTrueToObject(res, "pong");
    append_request(cl, request(id, "ping", NULL), result_reply(id, res));
}

static void gen_client(client *cl, int index, size_t n)
{
    memset(cl, 0, sizeof *cl);
    cl->index = index;
    cl->tcp = index % 2 == 1;
    cl->r.s = 0x5eed0000u + (uint64_t)index;
    snprintf(cl->scene, sizeof cl->scene, "client-%d", index);
    cl->expect = calloc(n, sizeof *cl->expect);
    for (size_t i = 0; i < n; i++) {
        cJSON *id;
        if (i % 7 == 3) {
            char s[40];
            snprintf(s, sizeof s, "c%d-r%zu", index, i);
            id = cJSON_CreateString(s);
        } else {
            id = cJSON_CreateNumber((double)(i + 1));
        }
        unsigned roll = rng_below(&cl->r, 100);
        if (i == 0)
            gen_put(cl, id, true);
        else if (roll < 15)
            gen_ping(cl, id);
        else if (roll < 40)
            gen_distance(cl, id);
        else if (roll < 55)
            gen_put(cl, id, false);
        else if (roll < 75)
            gen_scene_distance(cl, id);
        else if (roll < 92)
            gen_scene_get(cl, id);
        else
            gen_error(cl, id);
    }
}

/* The revisions every put reply of every client carried. */
static uint64_t *put_revisions;
static size_t n_put_revisions;

/* Replaces member w of object o by v, under w's key. */
static void replace_member(cJSON *o, cJSON *w, cJSON *v)
{
    char key[64];
    snprintf(key, sizeof key, "%s", w->string);
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
}

/* Fills the placeholders of an expected reply: REV_NEW takes the number at
 * the same place in the reply, which must be above the client's last
 * revision (it becomes the client's revision); REV_CUR, alone or inside a
 * string, is the client's revision.  A reply of another shape is left to
 * json_same to report. */
static void resolve_revisions(client *cl, cJSON *want, const cJSON *got)
{
    for (cJSON *w = want->child; w; w = w->next) {
        const cJSON *g = got && w->string && cJSON_IsObject(got)
                             ? cJSON_GetObjectItemCaseSensitive(got, w->string)
                             : NULL;
        if (cJSON_IsString(w) && strcmp(w->valuestring, REV_NEW) == 0) {
            if (!cJSON_IsNumber(g))
                return; /* not a put's result: json_same shows it */
            if (g->valuedouble <= (double)cl->revision)
                fail_msg("client %d: a put's revision %.17g is not above %llu", cl->index,
                         g->valuedouble, (unsigned long long)cl->revision);
            cl->revision = (uint64_t)g->valuedouble;
            put_revisions[n_put_revisions++] = cl->revision;
            replace_member(want, w, cJSON_CreateNumber(g->valuedouble));
            return; /* one placeholder per reply */
        }
        if (cJSON_IsString(w) && strstr(w->valuestring, REV_CUR)) {
            char text[256], num[24];
            snprintf(num, sizeof num, "%llu", (unsigned long long)cl->revision);
            const char *at_rev = strstr(w->valuestring, REV_CUR);
            if (strcmp(w->valuestring, REV_CUR) == 0) {
                replace_member(want, w, cJSON_CreateNumber((double)cl->revision));
                resolve_revisions(cl, want, got); /* w is gone: start over */
                return;
            }
            snprintf(text, sizeof text, "%.*s%s%s", (int)(at_rev - w->valuestring), w->valuestring,
                     num, at_rev + strlen(REV_CUR));
            replace_member(want, w, cJSON_CreateString(text));
            resolve_revisions(cl, want, got);
            return;
        }
        if (cJSON_IsObject(w))
            resolve_revisions(cl, w, g);
    }
}

static void check_reply(client *cl, const char *line, size_t len)
{
    if (cl->next >= cl->n_expect)
        fail_msg("client %d: extra reply %.*s", cl->index, (int)len, line);
    cJSON *want = cl->expect[cl->next];
    cJSON *got = cJSON_ParseWithLength(line, len);
    resolve_revisions(cl, want, got);
    if (!got || !json_same(want, got)) {
        char *w = show(want);
        fail_msg("client %d (%s), reply %zu:\n  want %s\n  got  %.*s", cl->index,
                 cl->tcp ? "tcp" : "unix", cl->next, w, (int)len, line);
    }
    cJSON_Delete(got);
    cJSON_Delete(want);
    cl->expect[cl->next++] = NULL;
}

static void concurrent_clients_pipeline_mixed_requests(void **state)
{
    (void)state;
    const int n_clients = rh_wrapped() ? 4 : 16;
    const size_t n_requests = rh_wrapped() ? 150 : 1000;
    rh_daemon *d = start(NULL);
    client *cls = calloc((size_t)n_clients, sizeof *cls);
    size_t total_errors = 0, total_puts = 0;
    for (int i = 0; i < n_clients; i++) {
        gen_client(&cls[i], i, n_requests);
        cls[i].conn = connect_ok(d, cls[i].tcp);
        total_errors += cls[i].n_errors;
        total_puts += cls[i].n_puts;
    }
    put_revisions = calloc(total_puts + 1, sizeof *put_revisions);
    n_put_revisions = 0;

    /* One poll loop drives every client: write what the socket takes, read
     * and check every complete reply. */
    long long deadline = rh_now_ms() + rh_ms(60000);
    int remaining = n_clients;
    struct pollfd *pfds = calloc((size_t)n_clients, sizeof *pfds);
    while (remaining > 0) {
        for (int i = 0; i < n_clients; i++) {
            pfds[i].fd = cls[i].done ? -1 : rh_fd(cls[i].conn);
            pfds[i].events = (short)(POLLIN | (cls[i].out_off < cls[i].out_len ? POLLOUT : 0));
            pfds[i].revents = 0;
        }
        if (poll(pfds, (nfds_t)n_clients, 100) < 0 && errno != EINTR)
            fail_msg("poll: %s", strerror(errno));
        for (int i = 0; i < n_clients; i++) {
            client *cl = &cls[i];
            if (cl->done)
                continue;
            if (pfds[i].revents & POLLOUT) {
                size_t left = cl->out_len - cl->out_off;
                ssize_t w = send(rh_fd(cl->conn), cl->out + cl->out_off,
                                 left < 65536 ? left : 65536, MSG_NOSIGNAL);
                if (w > 0)
                    cl->out_off += (size_t)w;
                else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    fail_msg("client %d: send: %s", i, strerror(errno));
            }
            if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                for (;;) {
                    const char *line;
                    size_t len;
                    rh_read_status st = rh_read_line(cl->conn, 0, &line, &len);
                    if (st == RH_TIMEOUT)
                        break;
                    if (st != RH_LINE)
                        fail_msg("client %d: connection closed after %zu replies", i, cl->next);
                    check_reply(cl, line, len);
                }
            }
            if (cl->next == cl->n_expect) {
                cl->done = true;
                remaining--;
            }
        }
        if (rh_now_ms() > deadline)
            fail_msg("clients did not finish (%d left)", remaining);
    }
    free(pfds);

    /* The daemon's counters agree with what was sent. */
    rh_conn *c = connect_ok(d, false);
    cJSON *stats = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}");
    assert_int_equal((long long)num_at(stats, "result.requests.total"),
                     (long long)n_clients * (long long)n_requests + 1);
    assert_int_equal((long long)num_at(stats, "result.requests.errors"), (long long)total_errors);
    assert_int_equal((long long)num_at(stats, "result.connections.total"), n_clients + 1);
    assert_int_equal((long long)num_at(stats, "result.scenes"), n_clients);
    /* The puts were the only mutations (the conflicts took no number): they
     * took 1..N, each exactly once, and the store is at N. */
    assert_int_equal(n_put_revisions, total_puts);
    assert_int_equal((long long)num_at(stats, "result.revision"), (long long)total_puts);
    bool *taken = calloc(total_puts + 1, sizeof *taken);
    for (size_t i = 0; i < n_put_revisions; i++) {
        uint64_t r = put_revisions[i];
        if (r < 1 || r > total_puts || taken[r])
            fail_msg("revision %llu given twice or out of 1..%zu", (unsigned long long)r,
                     total_puts);
        taken[r] = true;
    }
    free(taken);
    free(put_revisions);
    put_revisions = NULL;
    cJSON_Delete(stats);
    rh_close(c);

    for (int i = 0; i < n_clients; i++) {
        rh_close(cls[i].conn);
        free(cls[i].out);
        free(cls[i].expect);
    }
    free(cls);
    stop_ok(d);
}

/* ---- framing ----------------------------------------------------------------------------- */

static void request_sent_one_byte_at_a_time(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    for (int tcp = 0; tcp <= 1; tcp++) {
        rh_conn *c = connect_ok(d, tcp != 0);
        /* A multi-byte character and the CRLF are split too. */
        static const char req[] =
            "{\"jsonrpc\":\"2.0\",\"id\":\"caf\xC3\xA9\",\"method\":\"distance\",\"params\":{\"a\":"
            "{\"sphere\":{\"center\":[0,0,0],\"radius\":1}},\"b\":{\"sphere\":{\"center\":[0,0,3],"
            "\"radius\":0.5}}}}\r\n";
        for (size_t i = 0; i < sizeof req - 1; i++) {
            send_raw(c, req + i, 1);
            if (i % 16 == 0)
                rh_sleep_ms(1); /* let the daemon see the pieces separately */
        }
        const char *line;
        size_t len;
        assert_int_equal(rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len), RH_LINE);
        assert_string_equal(
            line, "{\"jsonrpc\":\"2.0\",\"id\":\"caf\xC3\xA9\",\"result\":{\"distance\":1.5}}");
        rh_close(c);
    }
    stop_ok(d);
}

static void many_requests_in_one_write(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, true);
    const int n = rh_wrapped() ? 200 : 2000;
    size_t cap = (size_t)n * 200, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf, cap,
                            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"scene.create\",\"params\":"
                            "{\"scene\":\"w\"}}\n");
    for (int i = 1; i <= n; i++) {
        if (i % 2)
            len += (size_t)snprintf(buf + len, cap - len,
                                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
        else
            len += (size_t)snprintf(buf + len, cap - len,
                                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\","
                                    "\"params\":{\"scene\":\"w\",\"shapes\":{\"s%d\":{\"sphere\":"
                                    "{\"center\":[%d,0,0],\"radius\":0.5}}}}}\n",
                                    i, i, i);
    }
    /* The last line has no newline: end of stream still delivers it. */
    len += (size_t)snprintf(buf + len, cap - len,
                            "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"scene.list\"}");
    send_raw(c, buf, len);
    shutdown(rh_fd(c), SHUT_WR);
    char want[160];
    const char *line;
    size_t llen;
    assert_int_equal(rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &llen), RH_LINE);
    assert_string_equal(
        line, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"scene\":\"w\",\"revision\":1}}");
    int revision = 1;
    for (int i = 1; i <= n; i++) {
        if (rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &llen) != RH_LINE)
            fail_msg("reply %d missing", i);
        if (i % 2)
            snprintf(want, sizeof want,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"pong\":true}}", i);
        else
            snprintf(want, sizeof want,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"scene\":\"w\",\"revision\":%d}}",
                     i, ++revision);
        if (strcmp(line, want) != 0)
            fail_msg("reply %d: got %s", i, line);
    }
    snprintf(want, sizeof want,
             "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"result\":{\"scenes\":[{\"scene\":\"w\","
             "\"revision\":%d,\"shapes\":%d}]}}",
             revision, n / 2);
    assert_int_equal(rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &llen), RH_LINE);
    assert_string_equal(line, want);
    /* Then the daemon closes its side. */
    rh_read_status st = rh_wait_close(c, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF);
    free(buf);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(concurrent_clients_pipeline_mixed_requests),
        DAEMON_TEST(request_sent_one_byte_at_a_time),
        DAEMON_TEST(many_requests_in_one_write),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
