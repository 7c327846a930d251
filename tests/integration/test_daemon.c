/*
 * Daemon tests: the real reposed over its real sockets.
 *
 * Usage: test_daemon PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Replies are checked by
 * parsing them with cJSON and comparing with an expected tree exactly
 * (numbers with ==, members in order), or byte for byte.  Distances are
 * computed with the public C API, which the daemon uses too, so they must
 * agree to the last bit.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "daemon_util.h"
#include "harness.h"
#include "repose/geometry.h"
#include "repose/scene.h"

/* ---- random shapes ----------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned rng_below(rng *r, unsigned n)
{
    return (unsigned)(rng_next(r) % n);
}

/* Multiples of 1/8 in [-4, 4]: exact in binary and short in decimal. */
static double rng_coord(rng *r)
{
    return ((int)rng_below(r, 65) - 32) / 8.0;
}

static rp_vec3 rng_vec(rng *r)
{
    rp_vec3 v = {rng_coord(r), rng_coord(r), rng_coord(r)};
    return v;
}

static rp_shape rng_shape(rng *r)
{
    double radius = rng_below(r, 17) / 8.0;
    rp_shape s;
    if (rng_below(r, 2) == 0) {
        rp_sphere sp;
        assert_int_equal(rp_sphere_new(rng_vec(r), radius, &sp), RP_OK);
        s = rp_shape_from_sphere(sp);
    } else {
        rp_capsule cp;
        rp_vec3 a = rng_vec(r), b = rng_vec(r);
        assert_int_equal(rp_capsule_new(a, b, radius, &cp), RP_OK);
        s = rp_shape_from_capsule(cp);
    }
    return s;
}

static cJSON *vec_json(rp_vec3 v)
{
    double xyz[3] = {v.x, v.y, v.z};
    return cJSON_CreateDoubleArray(xyz, 3);
}

/* The protocol's shape object, members in the order the server prints. */
static cJSON *shape_json(const rp_shape *s)
{
    cJSON *outer = cJSON_CreateObject(), *in = cJSON_CreateObject();
    if (s->kind == RP_SHAPE_SPHERE) {
        cJSON_AddItemToObject(in, "center", vec_json(s->sphere.center));
        cJSON_AddNumberToObject(in, "radius", s->sphere.radius);
        cJSON_AddItemToObject(outer, "sphere", in);
    } else {
        cJSON_AddItemToObject(in, "a", vec_json(s->capsule.a));
        cJSON_AddItemToObject(in, "b", vec_json(s->capsule.b));
        cJSON_AddNumberToObject(in, "radius", s->capsule.radius);
        cJSON_AddItemToObject(outer, "capsule", in);
    }
    return outer;
}

/* ---- envelopes ---------------------------------------------------------------------- */

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

/* ---- 1. many concurrent pipelining clients --------------------------------------- */

#define N_IDS 20

typedef struct client {
    rh_conn *conn;
    bool tcp;
    int index;
    char scene[32];
    rng r;
    /* the model of the client's scene */
    uint64_t revision;
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
    snprintf(out, 8, "s%02d", k);
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
    if (!first && rng_below(&cl->r, 3) == 0)
        cJSON_AddNumberToObject(params, "if_revision", (double)cl->revision);
    cJSON_AddBoolToObject(params, "create", true);
    cl->revision++;
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "scene", cl->scene);
    cJSON_AddNumberToObject(res, "revision", (double)cl->revision);
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
    cJSON_AddNumberToObject(res, "revision", (double)cl->revision);
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
    cJSON_AddNumberToObject(res, "revision", (double)cl->revision);
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
        uint64_t wrong = cl->revision + 5;
        cJSON_AddStringToObject(params, "scene", cl->scene);
        cJSON_AddItemToObject(params, "shapes", cJSON_CreateObject());
        cJSON_AddNumberToObject(params, "if_revision", (double)wrong);
        cJSON_AddNumberToObject(data, "expected", (double)wrong);
        cJSON_AddNumberToObject(data, "actual", (double)cl->revision);
        snprintf(msg, sizeof msg, "Revision conflict: expected %llu, scene is at %llu",
                 (unsigned long long)wrong, (unsigned long long)cl->revision);
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

static void check_reply(client *cl, const char *line, size_t len)
{
    if (cl->next >= cl->n_expect)
        fail_msg("client %d: extra reply %.*s", cl->index, (int)len, line);
    cJSON *want = cl->expect[cl->next];
    cJSON *got = cJSON_ParseWithLength(line, len);
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
    size_t total_errors = 0;
    for (int i = 0; i < n_clients; i++) {
        gen_client(&cls[i], i, n_requests);
        cls[i].conn = connect_ok(d, cls[i].tcp);
        total_errors += cls[i].n_errors;
    }

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

/* ---- 2. malformed input ----------------------------------------------------------- */

enum {
    EXPECT_OK = 0,       /* a result */
    EXPECT_NOTHING = 1,  /* no reply at all */
    EXPECT_BATCH3 = 2    /* an array of three -32600 errors */
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

static void add_case(case_list *l, const char *name, const char *line, int code,
                     const char *path, const char *id)
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
static void add_query(case_list *l, const char *name, const char *rest, int code,
                      const char *path)
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
    add_case(l, "single quotes", "{'jsonrpc':'2.0','id':1,'method':'ping'}", -32700, NULL,
             "null");
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
    add_case(l, "jsonrpc as number", "{\"jsonrpc\":2.0,\"id\":5,\"method\":\"ping\"}", -32600,
             NULL, "5");
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
    add_put(l, "duplicate shape id", "\"shapes\":{\"d\":" SPHERE ",\"e\":" SPHERE ",\"d\":" SPHERE "}",
            "params.shapes.d");

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
    add_query(l, "distance: shapes as array", "\"scene\":\"keep\",\"shapes\":[" SPHERE "]",
              -32602, "params.shapes");
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
    add_put(l, "if_revision fractional", "\"shapes\":{},\"if_revision\":1.5",
            "params.if_revision");
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

/* ---- 3. overlong lines ---------------------------------------------------------------- */

/* A ping padded with spaces to exactly `len` bytes (before the newline). */
static char *padded_ping(size_t len, const char *id)
{
    char *s = malloc(len + 1);
    int n = snprintf(s, len + 1, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}", id);
    memset(s + n, ' ', len - (size_t)n);
    s[len] = '\0';
    return s;
}

static void expect_line_limit_and_close(rh_conn *c)
{
    cJSON *r = read_json(c);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_true(cJSON_IsNull(at(r, "id")));
    assert_string_equal(str_at(r, "error.data.limit"), "max_request_bytes");
    assert_int_equal((int)num_at(r, "error.data.max"), 4096);
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(c, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
}

static void overlong_line_gets_limit_error_then_close(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-request-bytes", "4096", NULL};
    rh_daemon *d = start(extra);

    /* Exactly at the limit: fine, also with CRLF. */
    rh_conn *c = connect_ok(d, false);
    char *line = padded_ping(4096, "at-limit");
    cJSON *r = call_json(c, line);
    assert_string_equal(str_at(r, "id"), "at-limit");
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    send_raw(c, line, 4096);
    send_raw(c, "\r\n", 2);
    r = read_json(c);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    free(line);

    /* One byte over: -32004 with id null, then the server closes. */
    line = padded_ping(4097, "over");
    send_raw(c, line, 4097);
    send_raw(c, "\n", 1);
    free(line);
    expect_line_limit_and_close(c);
    rh_close(c);

    /* An endless line without a newline is cut off too. */
    c = connect_ok(d, true);
    expect_pong(c);
    char junk[8192];
    memset(junk, 'x', sizeof junk);
    send_raw(c, junk, sizeof junk);
    expect_line_limit_and_close(c);
    rh_close(c);

    /* Other clients are unaffected and the limit hits are counted. */
    c = connect_ok(d, false);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}");
    assert_int_equal((int)num_at(r, "result.limits_hit.max_request_bytes"), 2);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- 4. connection limit --------------------------------------------------------------- */

/* Connects one more client of the given kind and expects it to be turned
 * away with -32004 naming `limit`. */
static void expect_connection_refused(rh_daemon *d, bool tcp, const char *limit, int max)
{
    rh_conn *c = connect_ok(d, tcp);
    cJSON *r = read_json(c);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_true(cJSON_IsNull(at(r, "id")));
    assert_string_equal(str_at(r, "error.data.limit"), limit);
    assert_int_equal((int)num_at(r, "error.data.max"), max);
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(c, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
    rh_close(c);
}

/* TCP and Unix clients have limits of their own: remote clients holding
 * every TCP slot do not lock out local ones, and a freed slot is usable. */
static void connection_limit_rejects_then_recovers(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-tcp-connections", "2", "--max-unix-connections",
                                        "2", NULL};
    rh_daemon *d = start(extra);
    rh_conn *cs[4];
    for (int i = 0; i < 4; i++) {
        cs[i] = connect_ok(d, i % 2 == 0);
        expect_pong(cs[i]); /* accepted and served */
    }
    expect_connection_refused(d, true, "max_tcp_connections", 2);
    expect_connection_refused(d, false, "max_unix_connections", 2);
    int rejected = 2;

    /* Free a TCP slot.  The daemon notices the close asynchronously, so a
     * new client may still be turned away for a moment: retry until served. */
    rh_close(cs[2]);
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    rh_conn *fresh = NULL;
    while (!fresh) {
        rh_conn *c = connect_ok(d, true);
        cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}");
        if (at(r, "result")) {
            fresh = c;
            assert_int_equal((int)num_at(r, "result.connections.current"), 4);
            assert_int_equal((int)num_at(r, "result.connections.tcp"), 2);
            assert_int_equal((int)num_at(r, "result.connections.unix"), 2);
            assert_int_equal((int)num_at(r, "result.connections.rejected"), rejected);
            assert_int_equal((int)num_at(r, "result.limits_hit.max_tcp_connections"),
                             rejected - 1);
            assert_int_equal((int)num_at(r, "result.limits_hit.max_unix_connections"), 1);
        } else {
            assert_int_equal((int)num_at(r, "error.code"), -32004);
            rejected++;
            rh_close(c);
            assert_true(rh_now_ms() < deadline);
            rh_sleep_ms(10);
        }
        cJSON_Delete(r);
    }
    for (int i = 0; i < 4; i++)
        if (i != 2)
            expect_pong(cs[i]);
    expect_pong(fresh);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            rh_close(cs[i]);
    rh_close(fresh);
    stop_ok(d);
}

/* ---- 5. backpressure --------------------------------------------------------------------- */

static const char *const bp_flags[] = {"--write-pause-bytes", "65536", "--write-kill-bytes",
                                       "1048576", NULL};

/* A scene whose scene.get reply is about `shapes` * 60 bytes. */
static void create_big_scene(rh_conn *c, const char *name, int shapes)
{
    size_t cap = (size_t)shapes * 80 + 256, n = 0;
    char *buf = malloc(cap);
    n += (size_t)snprintf(buf, cap,
                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                          "{\"scene\":\"%s\",\"shapes\":{",
                          name);
    for (int i = 0; i < shapes; i++)
        n += (size_t)snprintf(buf + n, cap - n,
                              "%s\"s%05d\":{\"sphere\":{\"center\":[%d,%d.5,-%d],\"radius\":0.25}}",
                              i ? "," : "", i, i, i % 7, i % 13);
    snprintf(buf + n, cap - n, "}}}");
    cJSON *r = call_json(c, buf);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    free(buf);
}

static void client_that_does_not_read_cannot_exhaust_the_daemon(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *other = connect_ok(d, true);
    create_big_scene(other, "big", 400); /* ~25 kB per scene.get reply */

    /* The greedy client asks for far more reply bytes (> 1 GB) than a
     * daemon could buffer, and never reads. */
    rh_conn *greedy = connect_ok(d, false);
    static const char get[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\",\"params\":{\"scene\":\"big\"}}\n";
    const size_t n_requests = 50000, glen = sizeof get - 1;
    size_t sent = 0; /* bytes */
    const size_t total = n_requests * glen;
    long long stall_since = 0, deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    int pings = 0;
    long max_rss = 0;
    while (sent < total && rh_now_ms() < deadline) {
        size_t off = sent % glen;
        ssize_t w = send(rh_fd(greedy), get + off, glen - off, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
            stall_since = 0;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break; /* disconnected by the daemon: also acceptable */
        /* The daemon has stopped reading us (or is busy): meanwhile it must
         * keep serving everybody else. */
        expect_pong(other);
        pings++;
        long rss = rh_rss_kb(d);
        if (rss > max_rss)
            max_rss = rss;
        if (!stall_since)
            stall_since = rh_now_ms();
        else if (rh_now_ms() - stall_since > rh_ms(1000))
            break; /* stalled for good: the daemon applies backpressure */
        struct pollfd p = {rh_fd(greedy), POLLOUT, 0};
        poll(&p, 1, 20);
    }
    /* It could not push everything: the daemon stopped reading it. */
    assert_true(sent < total);
    assert_true(pings > 0);
    if (!rh_wrapped() && max_rss > 0 && max_rss > 768L * 1024)
        fail_msg("daemon RSS grew to %ld KiB", max_rss);

    /* Dropping the greedy client frees everything; the daemon carries on. */
    rh_close(greedy);
    expect_pong(other);
    assert_string_equal(call_line(other, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.list\"}"),
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"scenes\":[{\"scene\":\"big\","
                        "\"revision\":1,\"shapes\":400}]}}");
    rh_close(other);
    stop_ok(d);
}

static void slow_reader_gets_every_reply_in_order(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *c = connect_ok(d, false);
    const int n = rh_wrapped() ? 4000 : 20000;
    /* All requests, then read them back slowly (a little at a time) while
     * still writing. */
    size_t cap = (size_t)n * 64, len = 0;
    char *buf = malloc(cap);
    for (int i = 1; i <= n; i++)
        len += (size_t)snprintf(buf + len, cap - len,
                                "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
    size_t off = 0;
    int next = 1;
    long long deadline = rh_now_ms() + rh_ms(60000);
    char want[80];
    while (next <= n) {
        if (off < len) {
            ssize_t w = send(rh_fd(c), buf + off, len - off < 4096 ? len - off : 4096,
                             MSG_NOSIGNAL);
            if (w > 0)
                off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fail_msg("send: %s", strerror(errno));
        }
        /* Slow: at most 8 replies per round, then a short nap. */
        for (int k = 0; k < 8 && next <= n; k++) {
            const char *line;
            size_t llen;
            rh_read_status st = rh_read_line(c, 0, &line, &llen);
            if (st == RH_TIMEOUT)
                break;
            if (st != RH_LINE)
                fail_msg("connection closed after %d replies", next - 1);
            snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"pong\":true}}",
                     next);
            if (strcmp(line, want) != 0)
                fail_msg("reply %d: got %s", next, line);
            next++;
        }
        if (next % 512 == 0)
            rh_sleep_ms(1);
        if (rh_now_ms() > deadline)
            fail_msg("only %d of %d replies", next - 1, n);
        struct pollfd p = {rh_fd(c), POLLIN | (off < len ? POLLOUT : 0), 0};
        poll(&p, 1, 10);
    }
    free(buf);
    rh_close(c);
    stop_ok(d);
}

/* ---- 6. the Unix socket file ---------------------------------------------------------------- */

static void unix_socket_has_mode_0660(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    struct stat st;
    assert_int_equal(lstat(d->unix_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);
    stop_ok(d);
}

static void stale_socket_file_is_replaced(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/stale.sock", dir);
    /* Bind and close: the file stays, nobody listens. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    assert_true(strlen(path) < sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);

    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *d = start_with(&o);
    rh_conn *c = connect_ok(d, false);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
    assert_int_equal(lstat(path, &st), -1); /* removed at exit */
}

static void live_socket_is_refused(void **state)
{
    (void)state;
    rh_daemon *first = start(NULL);
    char path[256];
    snprintf(path, sizeof path, "%s", first->unix_path);
    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *second = rh_start(&o);
    assert_non_null(second);
    assert_false(second->up);
    int code = rh_wait_exit(second, rh_ms(RH_TIMEOUT_MS));
    assert_true(code > 0 && code < 128);
    rh_destroy(second);
    /* The first daemon still owns the path and answers. */
    rh_conn *c = connect_ok(first, false);
    expect_pong(c);
    rh_close(c);
    stop_ok(first);
}

static void regular_file_at_socket_path_is_left_alone(void **state)
{
    (void)state;
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/precious.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("do not delete\n", f);
    fclose(f);
    rh_opts o = {path, NULL, NULL, false};
    rh_daemon *d = rh_start(&o);
    assert_non_null(d);
    assert_false(d->up);
    int code = rh_wait_exit(d, rh_ms(RH_TIMEOUT_MS));
    assert_true(code > 0 && code < 128);
    rh_destroy(d);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    char buf[64] = "";
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "do not delete\n");
}

/* ---- 7. SIGTERM ------------------------------------------------------------------------------ */

/* A client pipelines scene.put requests without reading until the daemon
 * stops reading it (backpressure), so the daemon holds replies it could not
 * send yet.  A second client reads the scene's revision: every put up to it
 * has been executed, so its reply must reach the client after SIGTERM. */
static void sigterm_flushes_replies(bool tcp)
{
    rh_daemon *d = start(bp_flags);
    char sock[256];
    snprintf(sock, sizeof sock, "%s", d->unix_path);
    rh_conn *idle = connect_ok(d, !tcp);
    expect_pong(idle);
    rh_conn *c = rh_connect_rcvbuf(d, tcp, 65536);
    assert_non_null(c);
    expect_pong(c);
    cJSON *r = call_json(idle, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"scene.create\","
                               "\"params\":{\"scene\":\"t\"}}");
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);

    const int max_puts = 1000000;
    char req[160];
    int queued = 0;
    size_t part = 0;
    long long stall_since = 0, deadline = rh_now_ms() + rh_ms(30000);
    while (queued < max_puts && rh_now_ms() < deadline) {
        int n = snprintf(req, sizeof req,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":"
                         "{\"scene\":\"t\",\"shapes\":{}}}\n",
                         queued + 1);
        ssize_t w = send(rh_fd(c), req + part, (size_t)n - part, MSG_NOSIGNAL);
        if (w > 0) {
            part += (size_t)w;
            if (part == (size_t)n) {
                part = 0;
                queued++;
            }
            stall_since = 0;
            continue;
        }
        if (!stall_since)
            stall_since = rh_now_ms();
        else if (rh_now_ms() - stall_since > rh_ms(300))
            break;
        struct pollfd p = {rh_fd(c), POLLOUT, 0};
        poll(&p, 1, 10);
    }
    r = call_json(idle, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.get\","
                        "\"params\":{\"scene\":\"t\"}}");
    int executed = (int)num_at(r, "result.revision") - 1;
    cJSON_Delete(r);
    assert_true(executed >= 1);

    rh_signal(d, SIGTERM);

    /* Every reply the daemon made arrives, in order; requests that were
     * received but not yet executed when the signal came are answered with
     * -32006 (after which nothing else succeeds); then the connection ends
     * (a reset is tolerated only after the last whole reply). */
    int got = 0, refused = 0;
    char want[160], refusal[160];
    rh_read_status st;
    for (;;) {
        const char *line;
        size_t len;
        st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
        if (st != RH_LINE) {
            if (len != 0)
                fail_msg("after %d replies the stream ends inside a line: %.*s", got,
                         (int)(len > 80 ? 80 : len), line);
            break;
        }
        snprintf(want, sizeof want,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"scene\":\"t\",\"revision\":%d}}",
                 got + 1, got + 2);
        snprintf(refusal, sizeof refusal,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-32006,\"message\":"
                 "\"Shutting down: scene.put not executed\"}}",
                 got + refused + 1);
        if (refused == 0 && strcmp(line, want) == 0)
            got++;
        else if (strcmp(line, refusal) == 0)
            refused++;
        else
            fail_msg("reply %d: got %s", got + refused + 1, line);
    }
    if (st == RH_TIMEOUT)
        fail_msg("no end of stream after %d replies", got);
    if (got < executed)
        fail_msg("%d puts were executed before SIGTERM but only %d replies arrived (%s)",
                 executed, got, st == RH_EOF ? "then EOF" : "then a reset");
    assert_true(got + refused <= queued);
    st = rh_wait_close(idle, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);

    int code = rh_wait_exit(d, rh_ms(6000));
    if (code != 0)
        rh_dump_log(d);
    assert_int_equal(code, 0);
    struct stat sst;
    assert_int_equal(lstat(sock, &sst), -1);
    assert_int_equal(errno, ENOENT);
    rh_close(c);
    rh_close(idle);
    rh_destroy(d);
}

static void sigterm_flushes_replies_unix(void **state)
{
    (void)state;
    sigterm_flushes_replies(false);
}

/* Over TCP, closing a connection that still has unread requests in its
 * receive queue makes the kernel send a reset that destroys replies still
 * queued for sending; the daemon shuts down its write side and drains the
 * input first (conn.c, linger_close), so every executed request is
 * answered. */
static void sigterm_flushes_replies_tcp(void **state)
{
    (void)state;
    sigterm_flushes_replies(true);
}

/* ---- 8. framing ------------------------------------------------------------------------------ */

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
        assert_string_equal(line,
                            "{\"jsonrpc\":\"2.0\",\"id\":\"caf\xC3\xA9\",\"result\":{\"distance\":1.5}}");
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
    assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"scene\":\"w\",\"revision\":1}}");
    int revision = 1;
    for (int i = 1; i <= n; i++) {
        if (rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &llen) != RH_LINE)
            fail_msg("reply %d missing", i);
        if (i % 2)
            snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"pong\":true}}",
                     i);
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

/* ---- 9. command line ----------------------------------------------------------------------- */

/* Scripts find the daemon through the "listening" lines: they are printed
 * whatever the log level. */
static void listening_lines_survive_quiet_log_levels(void **state)
{
    (void)state;
    static const char *const quiet[] = {"--log-level", "error", NULL};
    rh_daemon *d = start(quiet);
    assert_true(d->tcp_port > 0);
    rh_conn *c = connect_ok(d, true);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* A single reply larger than --write-kill-bytes reaches a client that reads
 * it: the limit is for clients that let replies pile up. */
/* A reply is built only up to max_reply_bytes (here lowered to kill -
 * pause = 983,040 bytes): a larger one is answered with -32004
 * max_reply_bytes instead, the connection goes on, and a smaller request
 * for the same data works. */
static void reply_over_max_reply_bytes_is_refused_and_connection_goes_on(void **state)
{
    (void)state;
    rh_daemon *d = start(bp_flags);
    rh_conn *c = connect_ok(d, false);
    create_big_scene(c, "huge", 30000); /* scene.get reply ~1.8 MB */
    cJSON *r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"scene.get\","
                            "\"params\":{\"scene\":\"huge\"}}");
    assert_int_equal((int)num_at(r, "id"), 9);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_string_equal(str_at(r, "error.data.limit"), "max_reply_bytes");
    assert_int_equal((int)num_at(r, "error.data.max"), 1048576 - 65536);
    cJSON_Delete(r);
    expect_pong(c);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"scene.get\","
                     "\"params\":{\"scene\":\"huge\",\"ids\":[\"s00000\",\"s29999\"]}}");
    assert_int_equal(cJSON_GetArraySize(at(r, "result.shapes")), 2);
    cJSON_Delete(r);
    r = call_json(c, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"hello\"}");
    assert_int_equal((int)num_at(r, "result.limits.max_reply_bytes"), 1048576 - 65536);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

static void tcp_port_zero_picks_a_port(void **state)
{
    (void)state;
    rh_opts o = {"none", "127.0.0.1:0", NULL, false};
    rh_daemon *d = start_with(&o);
    assert_true(d->tcp_port > 0 && d->tcp_port < 65536);
    assert_string_equal(d->unix_path, "");
    rh_conn *c = connect_ok(d, true);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

static void help_and_version_exit_zero(void **state)
{
    (void)state;
    char out[8192];
    static const char *const help[] = {"--help", NULL};
    assert_int_equal(rh_run(help, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 0);
    assert_non_null(strstr(out, "usage: reposed"));
    assert_non_null(strstr(out, "--max-connections"));
    static const char *const version[] = {"--version", NULL};
    assert_int_equal(rh_run(version, out, sizeof out, rh_ms(RH_TIMEOUT_MS)), 0);
    assert_int_equal(strncmp(out, "reposed ", 8), 0);
}

/* ---- 9. robot checks ---------------------------------------------------------------------------- */

/* A growing text buffer for building large requests. */
typedef struct textbuf {
    char *p;
    size_t len, cap;
} textbuf;

static void tb_printf(textbuf *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 1;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* check.batch of 10,000 configurations of a 7-frame, 14-capsule arm
 * against a 600-shape scene, through the daemon; every result must equal
 * rp_model_check run in this process on the same model, scene and poses
 * (parsed back from the request text, so both sides see identical doubles). */
static void check_batch_of_ten_thousand_matches_in_process(void **state)
{
    (void)state;
    int configs = rh_wrapped() ? 400 : 10000;
    uint64_t seed = 42;
    rp_store *st = rp_store_new(NULL);
    textbuf t = {malloc(1 << 16), 0, 1 << 16};

    /* The scene: spheres and capsules in a 4 m cube. */
    enum { NS = 600 };
    rp_shape_put shapes[NS];
    char ids[NS][16];
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                  "{\"scene\":\"w\",\"shapes\":{");
    for (int i = 0; i < NS; i++) {
        snprintf(ids[i], sizeof ids[i], "o%d", i);
        shapes[i].id = ids[i];
        rp_vec3 c = {urand(&seed) * 4 - 2, urand(&seed) * 4 - 2, urand(&seed) * 4 - 2};
        double r = urand(&seed) * 0.05;
        if (i % 2) {
            shapes[i].shape = rp_shape_from_sphere((rp_sphere){c, r});
            tb_printf(&t, "%s\"%s\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
                      i ? "," : "", ids[i], c.x, c.y, c.z, r);
        } else {
            rp_vec3 b = {c.x + urand(&seed) * 0.3, c.y, c.z + urand(&seed) * 0.1};
            shapes[i].shape = rp_shape_from_capsule((rp_capsule){c, b, r});
            tb_printf(&t, "%s\"%s\":{\"capsule\":{\"a\":[%.17g,%.17g,%.17g],\"b\":[%.17g,%.17g,%.17g],"
                          "\"radius\":%.17g}}",
                      i ? "," : "", ids[i], c.x, c.y, c.z, b.x, b.y, b.z, r);
        }
    }
    tb_printf(&t, "}}}");
    rp_scene *sc;
    assert_int_equal(rp_store_create(st, "w", shapes, NS, &sc), RP_OK);

    /* The model: two capsules per frame, frames 0..6, adjacent pairs allowed. */
    rp_link links[14];
    char lids[14][8];
    const char *allowed[2 * 13];
    for (int i = 0; i < 14; i++) {
        snprintf(lids[i], sizeof lids[i], "l%d", i);
        links[i].id = lids[i];
        links[i].frame = i / 2;
        links[i].shape = rp_shape_from_capsule(
            (rp_capsule){{0, 0, 0.1 * (i % 2)}, {0.2, 0, 0.1 * (i % 2)}, 0.03});
        if (i > 0) {
            allowed[2 * (i - 1)] = lids[i - 1];
            allowed[2 * (i - 1) + 1] = lids[i];
        }
    }
    rp_model_def def = {links, 14, 0.01, allowed, 13, true};
    rp_model *m;
    rp_model_error me;
    assert_int_equal(rp_store_model_put(st, "arm", &def, &m, &me), RP_OK);

    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    t.len = 0;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"model.put\",\"params\":{\"model\":"
                  "\"arm\",\"safety_margin\":0.01,\"links\":[");
    for (int i = 0; i < 14; i++)
        tb_printf(&t, "%s{\"id\":\"%s\",\"frame\":%d,\"shape\":{\"capsule\":{\"a\":[0,0,%.17g],"
                      "\"b\":[0.2,0,%.17g],\"radius\":0.03}}}",
                  i ? "," : "", lids[i], i / 2, 0.1 * (i % 2), 0.1 * (i % 2));
    tb_printf(&t, "],\"allowed_pairs\":[");
    for (int i = 1; i < 14; i++)
        tb_printf(&t, "%s[\"%s\",\"%s\"]", i > 1 ? "," : "", lids[i - 1], lids[i]);
    tb_printf(&t, "]}}");
    r = call_json(c, t.p);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);

    /* The batch: random frame poses within 1.5 m of the origin. */
    t.len = 0;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"check.batch\",\"params\":{"
                  "\"model\":\"arm\",\"scene\":\"w\",\"report\":\"closest\",\"configurations\":[");
    for (int k = 0; k < configs; k++) {
        tb_printf(&t, "%s{\"frames\":[", k ? "," : "");
        for (int f = 0; f < 7; f++) {
            double q[4], n = 0;
            for (int i = 0; i < 4; i++) {
                q[i] = urand(&seed) * 2 - 1;
                n += q[i] * q[i];
            }
            n = sqrt(n);
            tb_printf(&t, "%s{\"translation\":[%.17g,%.17g,%.17g],\"rotation\":{\"w\":%.17g,"
                          "\"x\":%.17g,\"y\":%.17g,\"z\":%.17g}}",
                      f ? "," : "", urand(&seed) * 3 - 1.5, urand(&seed) * 3 - 1.5,
                      urand(&seed) * 3 - 1.5, q[0] / n, q[1] / n, q[2] / n, q[3] / n);
        }
        tb_printf(&t, "]}");
    }
    tb_printf(&t, "]}}");
    cJSON *req = cJSON_Parse(t.p);
    assert_non_null(req);
    r = call_json(c, t.p);
    const cJSON *results = at(r, "result.results");
    assert_non_null(results);
    assert_int_equal(cJSON_GetArraySize(results), configs);

    /* The same in process. */
    const cJSON *cj = cJSON_GetObjectItem(cJSON_GetObjectItem(req, "params"), "configurations");
    const cJSON *res = results->child;
    int collisions = 0;
    for (const cJSON *cfg = cj->child; cfg; cfg = cfg->next, res = res->next) {
        rp_transform frames[7];
        int f = 0;
        for (const cJSON *p = cJSON_GetObjectItem(cfg, "frames")->child; p; p = p->next, f++) {
            const cJSON *tr = cJSON_GetObjectItem(p, "translation");
            const cJSON *ro = cJSON_GetObjectItem(p, "rotation");
            rp_vec3 tv = {cJSON_GetArrayItem(tr, 0)->valuedouble, cJSON_GetArrayItem(tr, 1)->valuedouble,
                          cJSON_GetArrayItem(tr, 2)->valuedouble};
            assert_int_equal(rp_transform_from_quaternion(
                                 tv, cJSON_GetObjectItem(ro, "w")->valuedouble,
                                 cJSON_GetObjectItem(ro, "x")->valuedouble,
                                 cJSON_GetObjectItem(ro, "y")->valuedouble,
                                 cJSON_GetObjectItem(ro, "z")->valuedouble, &frames[f]),
                             RP_OK);
        }
        rp_check_opts opts = {RP_REPORT_CLOSEST, false, 0};
        rp_check_result want;
        assert_int_equal(rp_model_check(m, sc, NULL, frames, 7, &opts, &want), RP_OK);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(res, "collision")), want.collision);
        collisions += want.collision;
        assert_true(want.has_min);
        double got = cJSON_GetObjectItem(res, "min_distance")->valuedouble;
        if (got != want.closest.distance)
            fail_msg("min_distance %.17g, in process %.17g", got, want.closest.distance);
        const cJSON *cl = cJSON_GetObjectItem(res, "closest");
        assert_string_equal(cJSON_GetObjectItem(cl, "link")->valuestring,
                            rp_model_link_at(m, want.closest.link)->id);
        const char *other = want.closest.kind == RP_PAIR_SCENE
                                ? rp_scene_id_at(sc, want.closest.other)
                                : rp_model_link_at(m, want.closest.other)->id;
        assert_string_equal(cJSON_GetObjectItem(cl, "other")->valuestring, other);
        rp_check_result_free(&want);
    }
    /* The distribution must exercise both outcomes. */
    assert_true(collisions > 0 && collisions < configs);
    cJSON_Delete(r);
    cJSON_Delete(req);
    free(t.p);
    rh_close(c);
    stop_ok(d);
    rp_store_free(st);
}

/* ---- 10. auth ------------------------------------------------------------------------------------ */

/* Writes `token` into a fresh file of the given mode; returns its path. */
static const char *token_file(const char *token, mode_t mode)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/token-%o", rh_temp_dir(), (unsigned)mode);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(token, f);
    fputs("\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

/* With --token-file, TCP connections must auth before anything but ping,
 * hello and auth; a wrong token is refused; Unix connections need nothing;
 * before auth, lines are limited to 16 KiB. */
static void tcp_clients_must_auth_and_unix_clients_need_not(void **state)
{
    (void)state;
    const char *extra[] = {"--token-file", token_file("open sesame", 0600), NULL};
    rh_daemon *d = start(extra);
    rh_conn *t = connect_ok(d, true);
    expect_pong(t);
    cJSON *r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
                            "\"params\":{\"scene\":\"s\"}}");
    assert_int_equal((int)num_at(r, "error.code"), -32005);
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hello\"}");
    assert_non_null(at(r, "result.run_id"));
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"auth\",\"params\":"
                     "{\"token\":\"open sesamE\"}}");
    assert_int_equal((int)num_at(r, "error.code"), -32005);
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"auth\",\"params\":"
                     "{\"token\":\"open sesame\"}}");
    assert_true(cJSON_IsTrue(at(r, "result.ok")));
    cJSON_Delete(r);
    r = call_json(t, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"scene.create\","
                     "\"params\":{\"scene\":\"s\"}}");
    assert_true(num_at(r, "result.revision") == 1);
    cJSON_Delete(r);

    /* The Unix socket is governed by file permissions only. */
    rh_conn *u = connect_ok(d, false);
    r = call_json(u, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"scene.list\"}");
    assert_non_null(at(r, "result.scenes"));
    cJSON_Delete(r);

    /* Before auth, a line over 16 KiB: -32004 and the connection closes. */
    rh_conn *big = connect_ok(d, true);
    size_t n = 20 * 1024;
    char *line = malloc(n + 2);
    memset(line, ' ', n);
    line[n] = '\n';
    line[n + 1] = '\0';
    assert_true(rh_send(big, line, n + 1));
    free(line);
    r = read_json(big);
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_string_equal(at(r, "error.data.limit")->valuestring, "max_request_bytes_before_auth");
    cJSON_Delete(r);
    rh_read_status st = rh_wait_close(big, rh_ms(RH_TIMEOUT_MS), 0);
    assert_true(st == RH_EOF || st == RH_ERROR);
    rh_close(big);
    rh_close(u);
    rh_close(t);
    stop_ok(d);
}

/* A world-readable token file, and a non-loopback address without a token,
 * are refused at start with a message; --insecure-tcp overrides the latter. */
static void unsafe_configurations_are_refused_at_start(void **state)
{
    (void)state;
    char out[4096];
    const char *readable[] = {"--unix", "none", "--tcp", "127.0.0.1:0", "--token-file",
                              token_file("t", 0644), NULL};
    int code = rh_run(readable, out, sizeof out, rh_ms(10000));
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "readable by every user"));
    const char *open_tcp[] = {"--unix", "none", "--tcp", "0.0.0.0:0", NULL};
    code = rh_run(open_tcp, out, sizeof out, rh_ms(10000));
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "without --token-file"));
    rh_opts o = {"none", "0.0.0.0:0", (const char *const[]){"--insecure-tcp", NULL}, false};
    rh_daemon *d = start_with(&o);
    rh_conn *c = rh_connect_tcp(d->tcp_port);
    assert_non_null(c);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

static void bad_command_lines_exit_two(void **state)
{
    (void)state;
    static const char *const unknown[] = {"--bogus", NULL};
    static const char *const missing[] = {"--tcp", NULL};
    static const char *const zero[] = {"--max-connections", "0", NULL};
    static const char *const junk[] = {"--max-request-bytes", "12abc", NULL};
    static const char *const level[] = {"--log-level", "loud", NULL};
    static const char *const none[] = {"--unix", "none", "--tcp", "none", NULL};
    static const char *const order[] = {"--write-pause-bytes", "1000", "--write-kill-bytes", "10",
                                        NULL};
    static const char *const planned[] = {"--data-dir", "/tmp", NULL};
    const char *const *cases[] = {unknown, missing, zero, junk, level, none, order, planned};
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int code = rh_run(cases[i], out, sizeof out, rh_ms(RH_TIMEOUT_MS));
        if (code != 2)
            fail_msg("%s: exit %d, want 2 (%s)", cases[i][0], code, out);
        assert_non_null(strstr(out, "reposed: "));
    }
}

int main(int argc, char **argv)
{
    if (!rh_init(argc, argv))
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(concurrent_clients_pipeline_mixed_requests, rh_teardown),
        cmocka_unit_test_teardown(malformed_input_gets_errors_and_changes_nothing, rh_teardown),
        cmocka_unit_test_teardown(malformed_input_in_one_write_over_tcp, rh_teardown),
        cmocka_unit_test_teardown(overlong_line_gets_limit_error_then_close, rh_teardown),
        cmocka_unit_test_teardown(connection_limit_rejects_then_recovers, rh_teardown),
        cmocka_unit_test_teardown(client_that_does_not_read_cannot_exhaust_the_daemon,
                                  rh_teardown),
        cmocka_unit_test_teardown(slow_reader_gets_every_reply_in_order, rh_teardown),
        cmocka_unit_test_teardown(unix_socket_has_mode_0660, rh_teardown),
        cmocka_unit_test_teardown(stale_socket_file_is_replaced, rh_teardown),
        cmocka_unit_test_teardown(live_socket_is_refused, rh_teardown),
        cmocka_unit_test_teardown(regular_file_at_socket_path_is_left_alone, rh_teardown),
        cmocka_unit_test_teardown(sigterm_flushes_replies_unix, rh_teardown),
        cmocka_unit_test_teardown(sigterm_flushes_replies_tcp, rh_teardown),
        cmocka_unit_test_teardown(request_sent_one_byte_at_a_time, rh_teardown),
        cmocka_unit_test_teardown(many_requests_in_one_write, rh_teardown),
        cmocka_unit_test_teardown(tcp_port_zero_picks_a_port, rh_teardown),
        cmocka_unit_test_teardown(listening_lines_survive_quiet_log_levels, rh_teardown),
        cmocka_unit_test_teardown(reply_over_max_reply_bytes_is_refused_and_connection_goes_on,
                                  rh_teardown),
        cmocka_unit_test_teardown(help_and_version_exit_zero, rh_teardown),
        cmocka_unit_test_teardown(bad_command_lines_exit_two, rh_teardown),
        cmocka_unit_test_teardown(check_batch_of_ten_thousand_matches_in_process, rh_teardown),
        cmocka_unit_test_teardown(tcp_clients_must_auth_and_unix_clients_need_not, rh_teardown),
        cmocka_unit_test_teardown(unsafe_configurations_are_refused_at_start, rh_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
