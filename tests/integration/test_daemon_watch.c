/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests of watch notifications (docs/ARCHITECTURE.md, Live scenes and watches; proto/PROTOCOL.md "Watch
 * notifications"): scene.watch / scene.unwatch and the scene.changed,
 * scene.deleted and scene.resync notifications, against the real reposed
 * over its real sockets.
 *
 * Usage: test_daemon_watch PATH-TO-REPOSED
 *
 * Content is checked against a model: the test keeps each watched scene as
 * a cJSON object {id: shape}, applies every acknowledged mutation to it in
 * revision order, and derives the notification each mutation must bring
 * (put: the shapes it wrote, ids sorted; removed: the ids that went,
 * sorted).  Notifications are compared with that exactly, member order
 * included.  Shapes come from rng_shape (coordinates in multiples of 1/8),
 * so the numbers print and parse back exactly.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller and the
 * memory bound is not checked (valgrind's RSS says nothing about ours).
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

/* WT_ASAN: a sanitizer's allocator whose RSS says nothing about the
 * daemon's (ASan's quarantine; TSan's shadow memory). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WT_ASAN 1
#endif
#endif

/* The daemon's history bound (src/server/notify/watch.h), which the protocol
 * documents. */
#define HISTORY_CHANGES 4096
#define HISTORY_BYTES (4u << 20)

/* ---- requests ------------------------------------------------------------------------------ */

static int next_id = 1;

/* Request text with a fresh numeric id (returned in *id); params is JSON
 * text or NULL.  The caller frees the text. */
static char *request_text(const char *method, const char *params, int *id)
{
    textbuf t = {0};
    *id = next_id++;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"", *id, method);
    if (params)
        tb_printf(&t, ",\"params\":%s", params);
    tb_printf(&t, "}");
    return t.p;
}

/* ---- notifications ------------------------------------------------------------------------- */

/* Notifications received on one connection, in order. */
typedef struct notes {
    cJSON **v;
    size_t n, cap;
} notes;

static void notes_push(notes *l, cJSON *j)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = j;
}

static void notes_clear(notes *l)
{
    for (size_t k = 0; k < l->n; k++)
        cJSON_Delete(l->v[k]);
    l->n = 0;
}

static void notes_free(notes *l)
{
    notes_clear(l);
    free(l->v);
    l->v = NULL;
    l->cap = 0;
}

/* A server notification: an object with a method and no id. */
static bool is_notification(const cJSON *j)
{
    return cJSON_IsObject(j) && !cJSON_GetObjectItemCaseSensitive(j, "id") &&
           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "method"));
}

/* Reads lines until a reply (anything but a notification) and returns it;
 * notifications before it go to l, and fail the test when l is NULL. */
static cJSON *read_reply(rh_conn *c, notes *l)
{
    for (;;) {
        cJSON *j = read_json(c);
        if (!is_notification(j))
            return j;
        if (!l) {
            char *s = show(j);
            fail_msg("a notification where a reply was due: %s", s);
        }
        notes_push(l, j);
    }
}

/* Sends method(params) on c and returns the reply, whose id is checked;
 * notifications that come first go to l (NULL: none may come). */
static cJSON *rpcn(rh_conn *c, notes *l, const char *method, const char *params_fmt, ...)
    __attribute__((format(printf, 4, 5)));

static cJSON *rpcn(rh_conn *c, notes *l, const char *method, const char *params_fmt, ...)
{
    char *params = NULL;
    if (params_fmt) {
        va_list ap;
        va_start(ap, params_fmt);
        int n = vsnprintf(NULL, 0, params_fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        params = malloc((size_t)n + 1);
        assert_non_null(params);
        va_start(ap, params_fmt);
        vsnprintf(params, (size_t)n + 1, params_fmt, ap);
        va_end(ap);
    }
    int id;
    char *text = request_text(method, params, &id);
    free(params);
    if (!rh_send_line(c, text))
        fail_msg("cannot send %s", text);
    cJSON *r = read_reply(c, l);
    if (!cJSON_IsNumber(at(r, "id")) || num_at(r, "id") != id) {
        char *s = show(r);
        fail_msg("%s: reply to another id: %s", text, s);
    }
    free(text);
    return r;
}

/* The reply must be a result; returns its `revision` and frees it. */
static uint64_t ok_revision(cJSON *r)
{
    if (!at(r, "result")) {
        char *s = show(r);
        fail_msg("want a result, got %s", s);
    }
    uint64_t rev = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);
    return rev;
}

/* A -32001 for a watch: data {kind: "watch", name: the id}. */
static void expect_no_watch(cJSON *r, uint64_t watch)
{
    char name[32];
    snprintf(name, sizeof name, "%llu", (unsigned long long)watch);
    if (num_at(r, "error.code") != -32001 || strcmp(str_at(r, "error.data.kind"), "watch") != 0 ||
        strcmp(str_at(r, "error.data.name"), name) != 0) {
        char *s = show(r);
        fail_msg("want -32001 for watch %s, got %s", name, s);
    }
    cJSON_Delete(r);
}

/* scene.watch; returns the watch id and stores the reply's revision. */
static uint64_t watch(rh_conn *c, notes *l, const char *scene, const char *since,
                      uint64_t *revision)
{
    cJSON *r = since ? rpcn(c, l, "scene.watch", "{\"scene\":\"%s\",\"since\":%s}", scene, since)
                     : rpcn(c, l, "scene.watch", "{\"scene\":\"%s\"}", scene);
    if (!at(r, "result") || strcmp(str_at(r, "result.scene"), scene) != 0) {
        char *s = show(r);
        fail_msg("scene.watch %s: %s", scene, s);
    }
    uint64_t id = (uint64_t)num_at(r, "result.watch");
    if (revision)
        *revision = (uint64_t)num_at(r, "result.revision");
    cJSON_Delete(r);
    return id;
}

/* scene.unwatch must succeed with {watch, unwatched: true}. */
static void unwatch_ok(rh_conn *c, notes *l, uint64_t id)
{
    cJSON *r = rpcn(c, l, "scene.unwatch", "{\"watch\":%llu}", (unsigned long long)id);
    char want[96];
    snprintf(want, sizeof want, "{\"watch\":%llu,\"unwatched\":true}", (unsigned long long)id);
    char *got = at(r, "result") ? cJSON_PrintUnformatted(at(r, "result")) : show(r);
    if (strcmp(got, want) != 0)
        fail_msg("scene.unwatch %llu: %s", (unsigned long long)id, got);
    free(got);
    cJSON_Delete(r);
}

/* Takes whatever notifications have arrived already, without waiting. */
static void poll_notes(rh_conn *c, notes *l)
{
    for (;;) {
        const char *line;
        size_t len;
        rh_read_status st = rh_read_line(c, 0, &line, &len);
        if (st == RH_TIMEOUT)
            return;
        if (st != RH_LINE)
            fail_msg("watcher connection closed");
        cJSON *j = cJSON_ParseWithLength(line, len);
        if (!is_notification(j))
            fail_msg("not a notification: %.*s", (int)len, line);
        notes_push(l, j);
    }
}

/* Reads notifications into l until one has this method (and returns it);
 * fails on a reply or when none comes within the guard. */
static const cJSON *await_note(rh_conn *c, notes *l, const char *method)
{
    for (;;) {
        cJSON *j = read_json(c);
        if (!is_notification(j)) {
            char *s = show(j);
            fail_msg("waiting for %s, got %s", method, s);
        }
        notes_push(l, j);
        if (strcmp(str_at(j, "method"), method) == 0)
            return j;
    }
}

/* Reads notifications into l until the last one has at least this
 * revision. */
static void await_revision(rh_conn *c, notes *l, uint64_t revision)
{
    while (l->n == 0 || num_at(l->v[l->n - 1], "params.revision") < (double)revision) {
        cJSON *j = read_json(c);
        if (!is_notification(j)) {
            char *s = show(j);
            fail_msg("waiting for revision %llu, got %s", (unsigned long long)revision, s);
        }
        notes_push(l, j);
    }
}

/* Pings c and keeps the notifications that come before the pong.  Every
 * notification of a mutation acknowledged (to any client) before the ping
 * is queued for c by then, so it comes first. */
static void sync_notes(rh_conn *c, notes *l)
{
    cJSON *r = rpcn(c, l, "ping", NULL);
    assert_true(cJSON_IsTrue(at(r, "result.pong")));
    cJSON_Delete(r);
}

/* The notification {jsonrpc, method, params}, exactly (member order too). */
static void expect_note(const cJSON *got, const char *method, const cJSON *params)
{
    cJSON *want = cJSON_CreateObject();
    cJSON_AddStringToObject(want, "jsonrpc", "2.0");
    cJSON_AddStringToObject(want, "method", method);
    cJSON_AddItemToObject(want, "params", cJSON_Duplicate(params, true));
    if (!json_same(got, want)) {
        char *g = show(got), *w = show(want);
        fail_msg("notification\n got %s\nwant %s", g, w);
    }
    cJSON_Delete(want);
}

/* params of scene.deleted / scene.resync. */
static cJSON *plain_params(uint64_t watch, const char *scene, uint64_t revision)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "watch", (double)watch);
    cJSON_AddStringToObject(p, "scene", scene);
    cJSON_AddNumberToObject(p, "revision", (double)revision);
    return p;
}

static void expect_plain(const cJSON *got, const char *method, uint64_t watch, const char *scene,
                         uint64_t revision)
{
    cJSON *p = plain_params(watch, scene, revision);
    expect_note(got, method, p);
    cJSON_Delete(p);
}

static uint64_t note_revision(const cJSON *n)
{
    return (uint64_t)num_at(n, "params.revision");
}

static const char *note_method(const cJSON *n)
{
    return str_at(n, "method");
}

/* ---- the scene model -------------------------------------------------------------------- */

typedef enum mkind { M_PUT, M_REMOVE, M_REPLACE } mkind;

/* One mutation of a watched scene: put / replace carry the shapes object
 * sent, remove the ids array sent. */
typedef struct mut {
    uint64_t rev;
    mkind kind;
    cJSON *arg;
} mut;

static const char *const method_of[] = {"scene.put", "scene.remove", "scene.replace"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_mut(const void *a, const void *b)
{
    const mut *x = a, *y = b;
    return x->rev < y->rev ? -1 : x->rev > y->rev;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The member names of an object (or the strings of an array), sorted and
 * without repeats.  Returns how many; *out is malloc'ed (pointers into j). */
static size_t sorted_names(const cJSON *j, const char ***out)
{
    size_t n = (size_t)cJSON_GetArraySize(j), m = 0;
    const char **v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (const cJSON *e = j->child; e; e = e->next)
        v[m++] = cJSON_IsObject(j) ? e->string : e->valuestring;
    qsort(v, m, sizeof *v, cmp_str);
    size_t u = 0;
    for (size_t k = 0; k < m; k++)
        if (u == 0 || strcmp(v[u - 1], v[k]) != 0)
            v[u++] = v[k];
    *out = v;
    return u;
}

/* Applies m to the model and returns the scene.changed params it must
 * bring. */
static cJSON *apply(cJSON *model, const mut *m, uint64_t watch, const char *scene)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "watch", (double)watch);
    cJSON_AddStringToObject(p, "scene", scene);
    cJSON_AddNumberToObject(p, "revision", (double)m->rev);
    cJSON *put = cJSON_AddObjectToObject(p, "put");
    cJSON *removed = cJSON_AddArrayToObject(p, "removed");
    const char **ids;
    size_t n = sorted_names(m->arg, &ids);
    if (m->kind == M_REPLACE) {
        const char **old;
        size_t n_old = sorted_names(model, &old);
        for (size_t k = 0; k < n_old; k++)
            if (!cJSON_GetObjectItemCaseSensitive(m->arg, old[k]))
                cJSON_AddItemToArray(removed, cJSON_CreateString(old[k]));
        free(old);
        while (model->child)
            cJSON_Delete(cJSON_DetachItemViaPointer(model, model->child));
    }
    for (size_t k = 0; k < n; k++) {
        if (m->kind == M_REMOVE) {
            if (cJSON_GetObjectItemCaseSensitive(model, ids[k])) {
                cJSON_AddItemToArray(removed, cJSON_CreateString(ids[k]));
                cJSON_DeleteItemFromObjectCaseSensitive(model, ids[k]);
            }
            continue;
        }
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(m->arg, ids[k]);
        cJSON_AddItemToObject(put, ids[k], cJSON_Duplicate(shape, true));
        cJSON_DeleteItemFromObjectCaseSensitive(model, ids[k]);
        cJSON_AddItemToObject(model, ids[k], cJSON_Duplicate(shape, true));
    }
    free(ids);
    return p;
}

/* Checks that got[0..n) are exactly the scene.changed notifications of
 * muts[0..n) (sorted by revision) for watch `watch`, applying them to the
 * model. */
static void expect_changes(notes *got, size_t from, cJSON *model, const mut *muts, size_t n,
                           uint64_t watch, const char *scene)
{
    if (got->n - from < n)
        fail_msg("watch %llu: %zu notifications, want %zu", (unsigned long long)watch,
                 got->n - from, n);
    for (size_t k = 0; k < n; k++) {
        cJSON *want = apply(model, &muts[k], watch, scene);
        expect_note(got->v[from + k], "scene.changed", want);
        cJSON_Delete(want);
    }
}

/* Shape ids w00..w29: a small pool, so that puts overwrite, removes hit and
 * replaces drop ids. */
#define POOL 30

static void pool_id(char out[8], unsigned k)
{
    snprintf(out, 8, "w%02u", k % 100u);
}

/* n distinct random ids from the pool, with random shapes. */
static cJSON *random_shapes(rng *r, unsigned n)
{
    unsigned perm[POOL];
    for (unsigned k = 0; k < POOL; k++)
        perm[k] = k;
    cJSON *shapes = cJSON_CreateObject();
    for (unsigned k = 0; k < n && k < POOL; k++) {
        unsigned j = k + rng_below(r, POOL - k), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
        char id[8];
        pool_id(id, perm[k]);
        rp_shape s = rng_shape(r);
        cJSON_AddItemToObject(shapes, id, shape_json(&s));
    }
    return shapes;
}

/* A random put (1-4 shapes), remove (1-3 ids, repeats and missing ones
 * allowed) or replace (0-6 shapes) of `scene`; its request line (with a
 * newline) is appended to out. */
static mut random_mut(rng *r, const char *scene, textbuf *out)
{
    mut m = {0, (mkind)rng_below(r, 3), NULL};
    if (m.kind == M_REMOVE) {
        m.arg = cJSON_CreateArray();
        unsigned n = 1 + rng_below(r, 3);
        for (unsigned k = 0; k < n; k++) {
            char id[8];
            pool_id(id, rng_below(r, POOL));
            cJSON_AddItemToArray(m.arg, cJSON_CreateString(id));
        }
    } else {
        m.arg = random_shapes(r, m.kind == M_PUT ? 1 + rng_below(r, 4) : rng_below(r, 7));
    }
    char *arg = cJSON_PrintUnformatted(m.arg);
    textbuf params = {0};
    tb_printf(&params, "{\"scene\":\"%s\",\"%s\":%s}", scene, m.kind == M_REMOVE ? "ids" : "shapes",
              arg);
    int id;
    char *text = request_text(method_of[m.kind], params.p, &id);
    tb_printf(out, "%s\n", text);
    free(text);
    free(params.p);
    free(arg);
    return m;
}

/* A growing list of mutations / revisions. */
typedef struct muts {
    mut *v;
    size_t n, cap;
} muts;

static void muts_push(muts *l, mut m)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = m;
}

static void muts_free(muts *l)
{
    for (size_t k = 0; k < l->n; k++)
        cJSON_Delete(l->v[k].arg);
    free(l->v);
}

typedef struct revs {
    uint64_t *v;
    size_t n, cap;
} revs;

static void revs_push(revs *l, uint64_t r)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = r;
}

/* The scene as scene.get has it, for the model. */
static cJSON *scene_shapes(rh_conn *c, notes *l, const char *scene, uint64_t *revision)
{
    cJSON *r = rpcn(c, l, "scene.get", "{\"scene\":\"%s\"}", scene);
    if (revision)
        *revision = (uint64_t)num_at(r, "result.revision");
    cJSON *shapes = cJSON_Duplicate(at(r, "result.shapes"), true);
    assert_non_null(shapes);
    cJSON_Delete(r);
    return shapes;
}

static uint64_t stats_watches(rh_conn *c)
{
    cJSON *r = rpcn(c, NULL, "stats", NULL);
    uint64_t n = (uint64_t)num_at(r, "result.watches");
    cJSON_Delete(r);
    return n;
}

/* Polls stats until it reports `want` watches (closing a connection ends
 * its watches when the daemon sees the close). */
static void await_watches(rh_conn *c, uint64_t want)
{
    long long deadline = rh_now_ms() + rh_ms(RH_TIMEOUT_MS);
    uint64_t n;
    while ((n = stats_watches(c)) != want) {
        if (rh_now_ms() > deadline)
            fail_msg("stats.watches stays %llu, want %llu", (unsigned long long)n,
                     (unsigned long long)want);
        rh_sleep_ms(5);
    }
}

/* ---- every change, once, in order ------------------------------------------------------- */

/* Two clients pipeline random puts, removes and replaces of one scene at
 * once (the daemon decides their order), a third mutates other things;
 * two watchers, one per transport, follow the scene, which is deleted at
 * the end.  The run is recorded once (by the first test that reads it),
 * then checked by the tests below: every mutation reply of every client
 * takes the next store-wide number (together one run of consecutive
 * revisions, each client's rising); each watcher gets exactly one
 * scene.changed per committed mutation of the scene, in revision order,
 * with what the mutation did; then scene.deleted, and the watch is over. */
typedef struct run {
    enum { RUN_NONE, RUN_STARTED, RUN_RECORDED } state;
    cJSON *initial;         /* the scene as created */
    muts all;               /* the two clients' mutations of the scene, by revision */
    revs every;             /* every revision a mutation took, in no order */
    revs client[3];         /* the revisions each client's replies named, in order */
    uint64_t wid[2];        /* the watches, one per transport */
    notes got[2];           /* what each watcher heard, up to scene.deleted */
    uint64_t deleted;       /* the deletion's revision */
    cJSON *unwatched[2];    /* each watcher's scene.unwatch reply after it */
    uint64_t watches_after; /* stats.watches then */
} run;

static run the_run;

static void run_free(void)
{
    run *rn = &the_run;
    cJSON_Delete(rn->initial);
    muts_free(&rn->all);
    free(rn->every.v);
    for (int k = 0; k < 3; k++)
        free(rn->client[k].v);
    for (int k = 0; k < 2; k++) {
        notes_free(&rn->got[k]);
        cJSON_Delete(rn->unwatched[k]);
    }
    memset(rn, 0, sizeof *rn);
}

static void record_run(void)
{
    run *rn = &the_run;
    run_free();
    rn->state = RUN_STARTED;
    const int rounds = rh_wrapped() ? 30 : 300;
    rng r = {20240611};
    rh_daemon *d = start(NULL);
    rh_conn *mc[2] = {connect_ok(d, false), connect_ok(d, true)};
    rh_conn *other = connect_ok(d, false);
    rh_conn *wc[2] = {connect_ok(d, false), connect_ok(d, true)};
    notes *got = rn->got;
    muts *all = &rn->all;
    revs *every = &rn->every;

    rn->initial = random_shapes(&r, 5);
    char *text = cJSON_PrintUnformatted(rn->initial);
    uint64_t created =
        ok_revision(rpcn(mc[0], NULL, "scene.create", "{\"scene\":\"s\",\"shapes\":%s}", text));
    free(text);
    revs_push(every, created);
    uint64_t *wid = rn->wid;
    for (int k = 0; k < 2; k++) {
        uint64_t rev;
        wid[k] = watch(wc[k], &got[k], "s", NULL, &rev);
        assert_int_equal(rev, created);
    }
    assert_true(wid[1] > wid[0]);

    for (int round = 0; round < rounds; round++) {
        textbuf out[2] = {{0}, {0}};
        size_t first[2], count[2];
        for (int k = 0; k < 2; k++) {
            first[k] = all->n;
            count[k] = 1 + rng_below(&r, 4);
            for (size_t i = 0; i < count[k]; i++)
                muts_push(all, random_mut(&r, "s", &out[k]));
        }
        /* The third client: another scene, a model, a scene that comes and
         * goes, and a put that fails (no number taken). */
        int id;
        char *o;
        bool fails = false;
        switch (round % 5) {
        case 0:
            o = request_text("scene.put",
                             "{\"scene\":\"o\",\"create\":true,\"shapes\":{\"x\":{\"sphere\":"
                             "{\"center\":[1,2,3],\"radius\":0.5}}}}",
                             &id);
            break;
        case 1:
            o = request_text("model.put",
                             "{\"model\":\"m\",\"links\":[{\"id\":\"l\",\"frame\":0,\"shape\":"
                             "{\"sphere\":{\"center\":[0,0,0],\"radius\":0.25}}}]}",
                             &id);
            break;
        case 2:
            o = request_text("scene.create", "{\"scene\":\"t\"}", &id);
            break;
        case 3:
            o = request_text("scene.delete", "{\"scene\":\"t\"}", &id);
            break;
        default:
            o = request_text("scene.put",
                             "{\"scene\":\"o\",\"if_revision\":1,\"shapes\":{\"y\":{\"sphere\":"
                             "{\"center\":[0,0,0],\"radius\":1}}}}",
                             &id);
            fails = true;
            break;
        }
        send_raw(mc[0], out[0].p, out[0].len);
        send_raw(mc[1], out[1].p, out[1].len);
        assert_true(rh_send_line(other, o));
        free(o);
        for (int k = 0; k < 2; k++) {
            for (size_t i = 0; i < count[k]; i++) {
                uint64_t rev = ok_revision(read_reply(mc[k], NULL));
                revs_push(&rn->client[k], rev);
                all->v[first[k] + i].rev = rev;
                revs_push(every, rev);
            }
            free(out[k].p);
        }
        cJSON *reply = read_reply(other, NULL);
        if (fails) {
            assert_int_equal((int)num_at(reply, "error.code"), -32003);
            cJSON_Delete(reply);
        } else {
            uint64_t rev = ok_revision(reply);
            revs_push(&rn->client[2], rev);
            revs_push(every, rev);
        }
        for (int k = 0; k < 2; k++)
            poll_notes(wc[k], &got[k]);
    }
    cJSON *del = rpcn(mc[0], NULL, "scene.delete", "{\"scene\":\"s\"}");
    assert_true(cJSON_IsTrue(at(del, "result.deleted")));
    rn->deleted = (uint64_t)num_at(del, "result.revision");
    cJSON_Delete(del);
    revs_push(every, rn->deleted);

    qsort(all->v, all->n, sizeof *all->v, cmp_mut);
    for (int k = 0; k < 2; k++) {
        await_note(wc[k], &got[k], "scene.deleted");
        rn->unwatched[k] =
            rpcn(wc[k], NULL, "scene.unwatch", "{\"watch\":%llu}", (unsigned long long)wid[k]);
    }
    rn->watches_after = stats_watches(other);
    for (int k = 0; k < 2; k++) {
        rh_close(mc[k]);
        rh_close(wc[k]);
    }
    rh_close(other);
    stop_ok(d);
    rn->state = RUN_RECORDED;
}

/* The recorded run, recorded now unless an earlier test did. */
static run *the_recorded_run(void)
{
    if (the_run.state == RUN_STARTED)
        fail_msg("the run failed in an earlier test");
    if (the_run.state == RUN_NONE)
        record_run();
    return &the_run;
}

/* What watcher k heard: one notification per mutation and the deletion. */
static notes *heard_by(run *rn, int k)
{
    if (rn->got[k].n != rn->all.n + 1)
        fail_msg("watcher %d: %zu notifications for %zu mutations and a deletion", k, rn->got[k].n,
                 rn->all.n);
    return &rn->got[k];
}

/* -- the revisions -- */

/* Every mutation reply of every client takes the next store-wide number:
 * together they are one run of consecutive revisions (no gaps, no repeats;
 * a put that fails takes none), each client's rising. */
static void mutation_replies_take_consecutive_store_wide_revisions(void **state)
{
    (void)state;
    run *rn = the_recorded_run();
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < rn->client[k].n; i++) {
            uint64_t last = i ? rn->client[k].v[i - 1] : 0;
            if (rn->client[k].v[i] <= last)
                fail_msg("client %d: revision %llu after %llu", k,
                         (unsigned long long)rn->client[k].v[i], (unsigned long long)last);
        }
    for (size_t i = 0; i < rn->client[2].n; i++)
        assert_true(rn->client[2].v[i] > (i ? rn->client[2].v[i - 1] : 0));
    /* Store-wide numbers: one run, no gaps, no repeats. */
    revs *every = &rn->every;
    qsort(every->v, every->n, sizeof *every->v, cmp_u64);
    for (size_t k = 1; k < every->n; k++)
        if (every->v[k] != every->v[0] + k)
            fail_msg("revisions %llu then %llu", (unsigned long long)every->v[k - 1],
                     (unsigned long long)every->v[k]);
}

/* -- what the watchers heard -- */

/* Each watcher, one per transport, gets exactly one scene.changed per
 * committed mutation of the scene, in revision order, with what the
 * mutation did (against the model). */
static void every_change_reaches_every_watcher_once_in_revision_order(void **state)
{
    (void)state;
    run *rn = the_recorded_run();
    for (int k = 0; k < 2; k++) {
        notes *got = heard_by(rn, k);
        cJSON *model = cJSON_Duplicate(rn->initial, true);
        expect_changes(got, 0, model, rn->all.v, rn->all.n, rn->wid[k], "s");
        cJSON_Delete(model);
    }
}

/* Then scene.deleted with the deletion's revision; the watch is over (its
 * scene.unwatch is -32001 kind watch), and no watch is left. */
static void scene_deleted_comes_last_and_ends_the_watch(void **state)
{
    (void)state;
    run *rn = the_recorded_run();
    for (int k = 0; k < 2; k++) {
        notes *got = heard_by(rn, k);
        expect_plain(got->v[rn->all.n], "scene.deleted", rn->wid[k], "s", rn->deleted);
        /* The watch is over, and nothing more comes. */
        cJSON *unwatched = rn->unwatched[k];
        rn->unwatched[k] = NULL;
        expect_no_watch(unwatched, rn->wid[k]);
    }
    assert_int_equal(rn->watches_after, 0);
}

/* ---- a watcher's own mutations ------------------------------------------------------------ */

/* Scene s created and watched on c, then a put from c: its reply first,
 * then the notification.  Returns the watch. */
static uint64_t watch_and_put(rh_conn *c, notes *got)
{
    ok_revision(rpcn(c, NULL, "scene.create", "{\"scene\":\"s\"}"));
    uint64_t w = watch(c, NULL, "s", NULL, NULL);

    /* read_reply(…, NULL) fails on a notification before the reply. */
    uint64_t rev = ok_revision(rpcn(c, NULL, "scene.put",
                                    "{\"scene\":\"s\",\"shapes\":{\"a\":{\"sphere\":{\"center\":"
                                    "[0,0,0],\"radius\":1}}}}"));
    await_revision(c, got, rev);
    assert_int_equal(got->n, 1);
    assert_string_equal(note_method(got->v[0]), "scene.changed");
    assert_int_equal(note_revision(got->v[0]), rev);
    notes_clear(got);
    return w;
}

/* A watcher's own mutation: its reply first, then the notification.  A
 * batch: the batch's reply, then one notification per mutation in it. */
static void own_mutations_notify_after_the_reply(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    notes got = {0};
    uint64_t w = watch_and_put(c, &got);

    assert_true(rh_send_line(
        c, "[{\"jsonrpc\":\"2.0\",\"id\":\"b1\",\"method\":\"scene.put\",\"params\":{\"scene\":"
           "\"s\",\"shapes\":{\"b\":{\"sphere\":{\"center\":[1,0,0],\"radius\":1}}}}},"
           "{\"jsonrpc\":\"2.0\",\"id\":\"b2\",\"method\":\"scene.remove\",\"params\":{\"scene\":"
           "\"s\",\"ids\":[\"a\"]}}]"));
    cJSON *batch = read_reply(c, NULL);
    assert_true(cJSON_IsArray(batch));
    assert_int_equal(cJSON_GetArraySize(batch), 2);
    uint64_t r1 = (uint64_t)num_at(cJSON_GetArrayItem(batch, 0), "result.revision");
    uint64_t r2 = (uint64_t)num_at(cJSON_GetArrayItem(batch, 1), "result.revision");
    cJSON_Delete(batch);
    assert_int_equal(r2, r1 + 1);
    await_revision(c, &got, r2);
    assert_int_equal(got.n, 2);
    cJSON *p = cJSON_Parse("{\"watch\":0,\"scene\":\"s\",\"revision\":0,\"put\":{\"b\":"
                           "{\"sphere\":{\"center\":[1,0,0],\"radius\":1}}},\"removed\":[]}");
    cJSON_SetNumberValue(cJSON_GetObjectItem(p, "watch"), (double)w);
    cJSON_SetNumberValue(cJSON_GetObjectItem(p, "revision"), (double)r1);
    expect_note(got.v[0], "scene.changed", p);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"watch\":0,\"scene\":\"s\",\"revision\":0,\"put\":{},\"removed\":[\"a\"]}");
    cJSON_SetNumberValue(cJSON_GetObjectItem(p, "watch"), (double)w);
    cJSON_SetNumberValue(cJSON_GetObjectItem(p, "revision"), (double)r2);
    expect_note(got.v[1], "scene.changed", p);
    cJSON_Delete(p);
    notes_free(&got);
    rh_close(c);
    stop_ok(d);
}

/* A mutation of a watched scene that fails (here a put whose if_revision is
 * not the scene's) brings nothing, to its own connection's watch too. */
static void a_failed_mutation_notifies_nothing(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    notes got = {0};
    watch_and_put(c, &got);
    expect_error(rpcn(c, NULL, "scene.put",
                      "{\"scene\":\"s\",\"if_revision\":1,\"shapes\":{\"c\":{\"sphere\":"
                      "{\"center\":[0,0,0],\"radius\":1}}}}"),
                 -32003, NULL);
    sync_notes(c, &got);
    assert_int_equal(got.n, 0);
    notes_free(&got);
    rh_close(c);
    stop_ok(d);
}

/* ---- since -------------------------------------------------------------------------------- */

/* n random mutations of `scene` from c, one at a time, into l. */
static void mutate(rh_conn *c, rng *r, const char *scene, int n, muts *l)
{
    for (int k = 0; k < n; k++) {
        textbuf t = {0};
        mut m = random_mut(r, scene, &t);
        assert_true(rh_send(c, t.p, t.len));
        free(t.p);
        m.rev = ok_revision(read_reply(c, NULL));
        muts_push(l, m);
    }
}

/* A client that watched, went away and comes back with `since` gets exactly
 * what it missed, then live changes.  `since` at the current revision
 * brings nothing; before the first watch, or in the future: scene.resync
 * with the current revision.  The history is kept from the first watch for
 * as long as the scene exists, watched or not. */
static void since_replays_what_was_missed(void **state)
{
    (void)state;
    rng r = {77};
    rh_daemon *d = start(NULL);
    rh_conn *m = connect_ok(d, false);
    rh_conn *w = connect_ok(d, true);
    notes got = {0};
    muts before = {0}, missed = {0}, live = {0};

    uint64_t created = ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    mutate(m, &r, "s", 5, &before); /* before any watch: not in the history */
    cJSON *model = scene_shapes(m, NULL, "s", NULL);
    uint64_t first;
    uint64_t wid = watch(w, &got, "s", NULL, &first);
    assert_int_equal(first, before.v[4].rev);
    mutate(m, &r, "s", 3, &live);
    sync_notes(w, &got);
    expect_changes(&got, 0, model, live.v, live.n, wid, "s");
    assert_int_equal(got.n, 3);
    uint64_t seen = note_revision(got.v[2]);
    notes_clear(&got);
    rh_close(w);
    await_watches(m, 0);

    /* Missed while away, with other scenes and models moving too. */
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"other\"}"));
    mutate(m, &r, "s", 20, &missed);
    ok_revision(rpcn(m, NULL, "scene.put",
                     "{\"scene\":\"other\",\"shapes\":{\"q\":{\"sphere\":{\"center\":[0,0,0],"
                     "\"radius\":1}}}}"));
    mutate(m, &r, "s", 7, &missed);
    uint64_t current = missed.v[missed.n - 1].rev;

    w = connect_ok(d, false);
    char since[32];
    snprintf(since, sizeof since, "%llu", (unsigned long long)seen);
    uint64_t rev;
    uint64_t wid2 = watch(w, &got, "s", since, &rev);
    assert_true(wid2 > wid);
    assert_int_equal(rev, current); /* the reply tells the current revision */
    sync_notes(w, &got);
    assert_int_equal(got.n, missed.n);
    expect_changes(&got, 0, model, missed.v, missed.n, wid2, "s");
    notes_clear(&got);
    /* Then live. */
    muts more = {0};
    mutate(m, &r, "s", 2, &more);
    sync_notes(w, &got);
    assert_int_equal(got.n, 2);
    expect_changes(&got, 0, model, more.v, more.n, wid2, "s");
    notes_clear(&got);
    current = more.v[1].rev;

    /* since = the current revision: nothing to replay. */
    snprintf(since, sizeof since, "%llu", (unsigned long long)current);
    uint64_t w3 = watch(w, &got, "s", since, &rev);
    assert_int_equal(rev, current);
    sync_notes(w, &got);
    assert_int_equal(got.n, 0);
    /* since = the first watch's revision (the oldest the history holds):
     * everything since then. */
    snprintf(since, sizeof since, "%llu", (unsigned long long)first);
    uint64_t w4 = watch(w, &got, "s", since, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, live.n + missed.n + more.n);
    for (size_t k = 0; k < got.n; k++) {
        assert_int_equal((uint64_t)num_at(got.v[k], "params.watch"), w4);
        uint64_t want = k < live.n              ? live.v[k].rev
                        : k < live.n + missed.n ? missed.v[k - live.n].rev
                                                : more.v[k - live.n - missed.n].rev;
        assert_int_equal(note_revision(got.v[k]), want);
    }
    notes_clear(&got);
    /* Older than the history (before the first watch), 0, or in the
     * future: scene.resync with the current revision, then live. */
    const uint64_t resyncing[] = {first - 1, created, 0, current + 1, current + 1000000};
    for (size_t k = 0; k < sizeof resyncing / sizeof resyncing[0]; k++) {
        snprintf(since, sizeof since, "%llu", (unsigned long long)resyncing[k]);
        uint64_t wk = watch(w, &got, "s", since, &rev);
        assert_int_equal(rev, current);
        sync_notes(w, &got);
        if (got.n != 1)
            fail_msg("since %s: %zu notifications, want one scene.resync", since, got.n);
        expect_plain(got.v[0], "scene.resync", wk, "s", current);
        notes_clear(&got);
        unwatch_ok(w, NULL, wk);
    }
    /* The others are still there: one more change reaches each once. */
    muts last = {0};
    mutate(m, &r, "s", 1, &last);
    sync_notes(w, &got);
    assert_int_equal(got.n, 3);
    const uint64_t ids[] = {wid2, w3, w4};
    for (size_t k = 0; k < 3; k++) {
        bool found = false;
        for (size_t i = 0; i < got.n; i++)
            found |= (uint64_t)num_at(got.v[i], "params.watch") == ids[k] &&
                     note_revision(got.v[i]) == last.v[0].rev;
        assert_true(found);
    }
    notes_free(&got);
    cJSON_Delete(model);
    muts_free(&before);
    muts_free(&missed);
    muts_free(&live);
    muts_free(&more);
    muts_free(&last);
    rh_close(w);
    rh_close(m);
    stop_ok(d);
}

/* The history holds the last 4096 changes: `since` at the newest change it
 * dropped replays all 4096, one revision older resyncs.  By bytes it holds
 * at most 4 MiB of encoded changes (stats.memory.watch_history_bytes), and
 * a since before what it still holds resyncs. */
static void since_older_than_the_history_resyncs(void **state)
{
    (void)state;
    const int n = HISTORY_CHANGES + 10;
    rh_daemon *d = start(NULL);
    rh_conn *m = connect_ok(d, false), *w = connect_ok(d, false);
    notes got = {0};
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    /* Watched once, then not: the history is kept all the same. */
    unwatch_ok(w, NULL, watch(w, NULL, "s", NULL, NULL));
    uint64_t *rev = malloc((size_t)n * sizeof *rev);
    assert_non_null(rev);
    for (int k = 0; k < n;) {
        textbuf t = {0};
        int chunk = n - k < 500 ? n - k : 500;
        for (int i = 0; i < chunk; i++)
            tb_printf(&t,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
                      "\"scene\":\"s\",\"shapes\":{\"p%d\":{\"sphere\":{\"center\":[%d,0,0],"
                      "\"radius\":1}}}}}\n",
                      k + i, (k + i) % 50, k + i);
        send_raw(m, t.p, t.len);
        free(t.p);
        for (int i = 0; i < chunk; i++)
            rev[k + i] = ok_revision(read_reply(m, NULL));
        k += chunk;
    }
    int dropped = n - HISTORY_CHANGES - 1; /* the newest change no longer kept */
    char since[32];
    snprintf(since, sizeof since, "%llu", (unsigned long long)rev[dropped]);
    uint64_t wid = watch(w, &got, "s", since, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, HISTORY_CHANGES);
    for (size_t k = 0; k < got.n; k++) {
        if (note_revision(got.v[k]) != rev[dropped + 1 + (int)k] ||
            strcmp(note_method(got.v[k]), "scene.changed") != 0)
            fail_msg("replayed notification %zu: %s", k, show(got.v[k]));
    }
    notes_clear(&got);
    unwatch_ok(w, NULL, wid);
    snprintf(since, sizeof since, "%llu", (unsigned long long)(rev[dropped] - 1));
    wid = watch(w, &got, "s", since, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, 1);
    expect_plain(got.v[0], "scene.resync", wid, "s", rev[n - 1]);
    notes_clear(&got);
    unwatch_ok(w, NULL, wid);

    /* By bytes: puts of ~60 KB each, 6 MB in all. */
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"h\"}"));
    unwatch_ok(w, NULL, watch(w, NULL, "h", NULL, NULL));
    const int big = 100;
    uint64_t hrev[100];
    for (int k = 0; k < big; k++) {
        textbuf t = {0};
        tb_printf(&t, "{\"scene\":\"h\",\"shapes\":{");
        for (int i = 0; i < 1000; i++)
            tb_printf(&t, "%s\"b%04d\":{\"sphere\":{\"center\":[%d,%d,0],\"radius\":0.5}}",
                      i ? "," : "", i, k, i);
        tb_printf(&t, "}}");
        hrev[k] = ok_revision(rpcn(m, NULL, "scene.put", "%s", t.p));
        free(t.p);
    }
    cJSON *st = rpcn(m, NULL, "stats", NULL);
    double history = num_at(st, "result.memory.watch_history_bytes");
    cJSON_Delete(st);
    /* Both scenes' histories, each at most 4 MiB. */
    if (history > 2.0 * HISTORY_BYTES || history < 3.0 * (1 << 20))
        fail_msg("watch_history_bytes %.0f", history);
    snprintf(since, sizeof since, "%llu", (unsigned long long)hrev[0]);
    wid = watch(w, &got, "h", since, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, 1);
    expect_plain(got.v[0], "scene.resync", wid, "h", hrev[big - 1]);
    notes_clear(&got);
    snprintf(since, sizeof since, "%llu", (unsigned long long)hrev[big - 11]);
    watch(w, &got, "h", since, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, 10);
    for (int k = 0; k < 10; k++)
        assert_int_equal(note_revision(got.v[k]), hrev[big - 10 + k]);
    notes_free(&got);
    free(rev);
    rh_close(w);
    rh_close(m);
    stop_ok(d);
}

/* ---- slow and overrun watchers ----------------------------------------------------------- */

/* A put of six capsules with 120-character ids: about 1 KB of request and
 * of notification.  The same ids every time, so the scene stays small. */
static void kb_put(textbuf *t, int id, int k)
{
    tb_printf(t,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"scene.put\",\"params\":{"
              "\"scene\":\"s\",\"shapes\":{",
              id);
    for (int i = 0; i < 6; i++)
        tb_printf(t,
                  "%s\"%c%0119d\":{\"capsule\":{\"a\":[%d.125,%d.25,-0.5],\"b\":[%d.5,1.75,"
                  "-%d.375],\"radius\":0.125}}",
                  i ? "," : "", 'a' + i, i, k % 1000, i, k % 7, i);
    tb_printf(t, "}}}\n");
}

/* Sends count ~1 KB puts in chunks of 100 and reads their revisions into
 * rev[from..).  Between chunks `other` must get its pong, and the daemon's
 * RSS is sampled into *peak (when peak is not NULL). */
static size_t kb_puts(rh_daemon *d, rh_conn *m, rh_conn *other, int count, uint64_t *rev,
                      size_t from, long *peak)
{
    size_t bytes = 0;
    for (int k = 0; k < count;) {
        textbuf t = {0};
        int chunk = count - k < 100 ? count - k : 100;
        for (int i = 0; i < chunk; i++)
            kb_put(&t, k + i, k + i);
        bytes += t.len;
        send_raw(m, t.p, t.len);
        free(t.p);
        for (int i = 0; i < chunk; i++)
            rev[from + (size_t)(k + i)] = ok_revision(read_reply(m, NULL));
        k += chunk;
        if (other)
            expect_pong(other);
        if (peak) {
            long rss = rh_rss_kb(d);
            if (rss > *peak)
                *peak = rss;
        }
    }
    return bytes;
}

/* Checks what a watcher got for changes rev[0..n) of scene "s":
 * scene.changed for some of them in revision order and scene.resync in
 * place of the others.  A resync carries the revision of one of them (the
 * scene's at the time) and stands for every change up to it; what follows
 * it comes after it.  Every change must be covered, by its own
 * notification or a resync.  Returns the number of resyncs. */
static size_t expect_changes_and_resyncs(const notes *got, uint64_t wid, const uint64_t *rev,
                                         size_t n)
{
    size_t j = 0, resyncs = 0;
    for (size_t k = 0; k < got->n; k++) {
        const cJSON *note = got->v[k];
        uint64_t r = note_revision(note);
        assert_int_equal((uint64_t)num_at(note, "params.watch"), wid);
        if (strcmp(note_method(note), "scene.changed") == 0) {
            if (j >= n || r != rev[j])
                fail_msg("notification %zu: %s, want revision %llu", k, show(note),
                         j < n ? (unsigned long long)rev[j] : 0ull);
            j++;
            continue;
        }
        expect_plain(note, "scene.resync", wid, "s", r);
        resyncs++;
        size_t i = j;
        while (i < n && rev[i] < r)
            i++;
        if (i == n || rev[i] != r)
            fail_msg("notification %zu: %s, not at a later change", k, show(note));
        j = i + 1;
    }
    if (j != n)
        fail_msg("%zu of %zu changes covered", j, n);
    return resyncs;
}

/* A watcher that stops reading (64 KiB --watch-buffer-bytes) while 20,000
 * puts of ~1 KB go by: the daemon keeps at most its buffer for it plus the
 * history, so its memory stays bounded; the writer and a third client keep
 * getting their replies; once the watcher reads again it gets the changes
 * that fit, one scene.resync with the scene's revision, then live changes
 * again.  Over TCP the watcher's receive buffer is 4 KiB (SO_RCVBUF), but
 * the kernel may still take up to 4 MB from the daemon (tcp_wmem), more
 * than a valgrind run's 3,000 puts: there the watcher stalls on the Unix
 * socket only, whose kernel buffer is ~200 KB. */
static void stalled_watcher(bool tcp)
{
    const int count = rh_wrapped() ? 3000 : 20000;
    const char *const flags[] = {"--watch-buffer-bytes", "65536", NULL};
    rh_daemon *d = start(flags);
    rh_conn *m = connect_ok(d, false), *other = connect_ok(d, true);
    rh_conn *w = rh_connect_rcvbuf(d, tcp, 4096);
    assert_non_null(w);
    notes got = {0};
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    uint64_t wid = watch(w, NULL, "s", NULL, NULL);
    uint64_t *rev = malloc(((size_t)count + 1) * sizeof *rev);
    assert_non_null(rev);
    /* Warm up: the scene's shapes and the daemon's buffers exist before the
     * baseline (these 30 KB of changes fit the buffer and reach the
     * watcher, which still reads). */
    kb_puts(d, m, NULL, 30, rev, 0, NULL);
    await_revision(w, &got, rev[29]);
    notes_clear(&got);

    long base = rh_rss_kb(d), peak = base;
    size_t bytes = kb_puts(d, m, other, count, rev, 0, &peak);
    cJSON *st = rpcn(other, NULL, "stats", NULL);
    assert_int_equal((int)num_at(st, "result.watches"), 1);
    assert_true(num_at(st, "result.memory.watch_history_bytes") <= HISTORY_BYTES);
    cJSON_Delete(st);
#ifndef WT_ASAN
    /* The bound: the history (4 MiB) and the watcher's buffer (64 KiB),
     * plus 8 MiB for everything else (allocator slack, input buffers).  The
     * notifications the watcher missed take half as much again (measured:
     * +7 MiB, and ~24 MB of notifications). */
    const long bound_kb = (HISTORY_BYTES >> 10) + 64 + 8 * 1024;
    if (!rh_wrapped()) {
        assert_true(base > 0);
        assert_true(bytes / 1024 > 3 * (size_t)bound_kb / 2);
        print_message("daemon RSS %ld KiB before the stall, peak %ld KiB (bound +%ld KiB)\n", base,
                      peak, bound_kb);
        if (peak - base > bound_kb)
            fail_msg("daemon RSS grew by %ld KiB while a watcher stalled (bound %ld)", peak - base,
                     bound_kb);
    }
#else
    (void)bytes;
    (void)base;
    (void)peak;
#endif
    /* Reading again: what fit (with a resync wherever it fell behind while
     * the kernel still took bytes), and once its output drained, one
     * scene.resync with the scene's revision. */
    sync_notes(w, &got);
    await_revision(w, &got, rev[count - 1]);
    assert_true(expect_changes_and_resyncs(&got, wid, rev, (size_t)count) > 0);
    assert_true(got.n < (size_t)count); /* it did miss changes */
    /* The last: the resync it got once it read again. */
    expect_plain(got.v[got.n - 1], "scene.resync", wid, "s", rev[count - 1]);
    notes_clear(&got);
    /* Counted as a limit hit. */
    cJSON *hits = rpcn(other, NULL, "stats", NULL);
    assert_true(num_at(hits, "result.limits_hit.watch_buffer_bytes") >= 1);
    cJSON_Delete(hits);
    /* Then live again. */
    sync_notes(w, &got);
    assert_int_equal(got.n, 0);
    kb_puts(d, m, NULL, 1, rev, 0, NULL);
    sync_notes(w, &got);
    assert_int_equal(got.n, 1);
    assert_string_equal(note_method(got.v[0]), "scene.changed");
    assert_int_equal(note_revision(got.v[0]), rev[0]);
    notes_free(&got);
    free(rev);
    rh_close(w);
    rh_close(other);
    rh_close(m);
    stop_ok(d);
}

static void a_stalled_unix_watcher_costs_its_buffer_then_resyncs(void **state)
{
    (void)state;
    stalled_watcher(false);
}

static void a_stalled_tcp_watcher_costs_its_buffer_then_resyncs(void **state)
{
    (void)state;
    if (rh_wrapped())
        skip();
    stalled_watcher(true);
}

/* A watcher that reads as fast as it can but is sent more than its buffer
 * at once (64 KiB): one change larger than the buffer, or a burst of
 * pipelined changes handled in one go.  It gets scene.resync in place of
 * what did not fit, and live changes after it; it must not be left waiting
 * for a resync that never comes (its output was written at once, so no
 * write completion ever told the daemon that it drained). */
static void a_burst_larger_than_the_buffer_resyncs_a_reading_watcher(void **state)
{
    (void)state;
    const char *const flags[] = {"--watch-buffer-bytes", "65536", NULL};
    rh_daemon *d = start(flags);
    rh_conn *m = connect_ok(d, false), *w = connect_ok(d, false);
    notes got = {0};
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    uint64_t wid = watch(w, NULL, "s", NULL, NULL);

    /* One change of ~100 KB. */
    textbuf t = {0};
    tb_printf(&t, "{\"scene\":\"s\",\"shapes\":{");
    for (int i = 0; i < 2000; i++)
        tb_printf(&t, "%s\"big%04d\":{\"sphere\":{\"center\":[%d,0,0],\"radius\":0.5}}",
                  i ? "," : "", i, i);
    tb_printf(&t, "}}");
    uint64_t big = ok_revision(rpcn(m, NULL, "scene.put", "%s", t.p));
    free(t.p);
    uint64_t small = ok_revision(rpcn(m, NULL, "scene.remove",
                                      "{\"scene\":\"s\",\"ids\":"
                                      "[\"big0000\"]}"));
    await_revision(w, &got, small);
    uint64_t revs1[2] = {big, small};
    assert_int_equal(expect_changes_and_resyncs(&got, wid, revs1, 2), 1);
    expect_plain(got.v[0], "scene.resync", wid, "s", big);
    notes_clear(&got);

    /* 300 pipelined puts of ~1 KB in one write: about 300 KB at once. */
    uint64_t rev[301];
    t = (textbuf){0};
    for (int i = 0; i < 300; i++)
        kb_put(&t, i, i);
    send_raw(m, t.p, t.len);
    free(t.p);
    for (int i = 0; i < 300; i++)
        rev[i] = ok_revision(read_reply(m, NULL));
    kb_puts(d, m, NULL, 1, rev, 300, NULL);
    await_revision(w, &got, rev[300]);
    assert_true(expect_changes_and_resyncs(&got, wid, rev, 301) > 0);
    notes_free(&got);
    rh_close(w);
    rh_close(m);
    stop_ok(d);
}

/* ---- the end of a watch ------------------------------------------------------------------ */

/* Scenes a and b, watched three times from one connection and once from
 * another; closing the first (with a notification unread) ends its
 * watches (stats.watches) and the other goes on; then the other closes
 * too.  Returns the connection that created the scenes. */
static rh_conn *watch_and_close(rh_daemon *d)
{
    rh_conn *m = connect_ok(d, false);
    rh_conn *w1 = connect_ok(d, false), *w2 = connect_ok(d, true);
    notes got = {0};
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"a\"}"));
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"b\"}"));
    uint64_t ids[3] = {watch(w1, NULL, "a", NULL, NULL), watch(w1, NULL, "a", NULL, NULL),
                       watch(w1, NULL, "b", NULL, NULL)};
    assert_true(ids[0] < ids[1] && ids[1] < ids[2]);
    uint64_t wid = watch(w2, NULL, "a", NULL, NULL);
    assert_int_equal(stats_watches(m), 4);
    uint64_t r1 = ok_revision(rpcn(m, NULL, "scene.put",
                                   "{\"scene\":\"a\",\"shapes\":{\"x\":{\"sphere\":{\"center\":"
                                   "[0,0,0],\"radius\":1}}}}"));
    rh_close(w1); /* with that notification unread */
    await_watches(m, 1);
    uint64_t r2 = ok_revision(rpcn(m, NULL, "scene.put",
                                   "{\"scene\":\"a\",\"shapes\":{\"y\":{\"sphere\":{\"center\":"
                                   "[0,0,0],\"radius\":1}}}}"));
    await_revision(w2, &got, r2);
    assert_int_equal(got.n, 2);
    assert_int_equal(note_revision(got.v[0]), r1);
    assert_int_equal((uint64_t)num_at(got.v[1], "params.watch"), wid);
    notes_free(&got);
    rh_close(w2);
    await_watches(m, 0);
    return m;
}

/* Closing a connection ends its watches (stats.watches), also with
 * notifications still unsent; other connections' watches go on. */
static void watches_end_with_their_connection(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *m = watch_and_close(d);
    rh_close(m);
    stop_ok(d);
}

/* The history outlives the watches; it goes with the scenes. */
static void the_history_outlives_the_watches_and_goes_with_the_scenes(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *m = watch_and_close(d);
    cJSON *st = rpcn(m, NULL, "stats", NULL);
    assert_true(num_at(st, "result.memory.watch_history_bytes") > 0);
    cJSON_Delete(st);
    ok_revision(rpcn(m, NULL, "scene.delete", "{\"scene\":\"a\"}"));
    ok_revision(rpcn(m, NULL, "scene.delete", "{\"scene\":\"b\"}"));
    st = rpcn(m, NULL, "stats", NULL);
    assert_int_equal((int)num_at(st, "result.memory.watch_history_bytes"), 0);
    cJSON_Delete(st);
    rh_close(m);
    stop_ok(d);
}

/* Scenes s and keep, s watched twice and keep once from connection w;
 * a put of s and its deletion in one write from connection m. */
typedef struct deletion {
    rh_conn *m, *w;
    uint64_t put, wk; /* the put's revision; the watch of keep */
} deletion;

/* scene.delete brings each watch of the scene what it had not seen, then
 * scene.deleted with the deletion's revision, and ends it (unwatch: -32001
 * kind watch). */
static deletion delete_a_watched_scene(rh_daemon *d)
{
    rh_conn *m = connect_ok(d, false), *w = connect_ok(d, false);
    notes got = {0};
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"keep\"}"));
    uint64_t w1 = watch(w, NULL, "s", NULL, NULL), w2 = watch(w, NULL, "s", NULL, NULL);
    uint64_t wk = watch(w, NULL, "keep", NULL, NULL);
    /* A put and the deletion in one write: handled in one go. */
    assert_true(rh_send_line(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.put\","
                                "\"params\":{\"scene\":\"s\",\"shapes\":{\"x\":{\"sphere\":{"
                                "\"center\":[0,0,0],\"radius\":1}}}}}\n"
                                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.delete\","
                                "\"params\":{\"scene\":\"s\"}}"));
    uint64_t put = ok_revision(read_reply(m, NULL));
    cJSON *del = read_reply(m, NULL);
    char *text = cJSON_PrintUnformatted(at(del, "result"));
    uint64_t deleted = (uint64_t)num_at(del, "result.revision");
    char want[128];
    snprintf(want, sizeof want, "{\"scene\":\"s\",\"deleted\":true,\"revision\":%llu}",
             (unsigned long long)deleted);
    assert_string_equal(text, want);
    free(text);
    cJSON_Delete(del);
    assert_int_equal(deleted, put + 1);
    sync_notes(w, &got);
    assert_int_equal(got.n, 4);
    /* Per watch: the change, then scene.deleted. */
    for (int k = 0; k < 2; k++) {
        uint64_t id = k ? w2 : w1;
        size_t seen = 0;
        for (size_t i = 0; i < got.n; i++) {
            if ((uint64_t)num_at(got.v[i], "params.watch") != id)
                continue;
            if (seen == 0) {
                assert_string_equal(note_method(got.v[i]), "scene.changed");
                assert_int_equal(note_revision(got.v[i]), put);
            } else {
                expect_plain(got.v[i], "scene.deleted", id, "s", deleted);
            }
            seen++;
        }
        assert_int_equal(seen, 2);
    }
    notes_free(&got);
    assert_int_equal(stats_watches(m), 1);
    expect_no_watch(rpcn(w, NULL, "scene.unwatch", "{\"watch\":%llu}", (unsigned long long)w1), w1);
    return (deletion){m, w, put, wk};
}

static void a_deleted_scene_ends_its_watches(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    deletion del = delete_a_watched_scene(d);
    rh_close(del.w);
    rh_close(del.m);
    stop_ok(d);
}

/* A scene created again under a deleted one's name is new: old watches
 * hear nothing of it, and a since from before resyncs.  A batch that
 * deletes and recreates a watched scene brings scene.deleted, and nothing
 * of the new scene. */
static void a_scene_created_again_under_the_name_is_new_to_old_watches(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    deletion del = delete_a_watched_scene(d);
    rh_conn *m = del.m, *w = del.w;
    uint64_t put = del.put, wk = del.wk;
    notes got = {0};

    /* The name again: a new scene, and old watches are over. */
    uint64_t created = ok_revision(rpcn(m, NULL, "scene.create", "{\"scene\":\"s\"}"));
    ok_revision(rpcn(m, NULL, "scene.put",
                     "{\"scene\":\"s\",\"shapes\":{\"y\":{\"sphere\":{"
                     "\"center\":[0,0,0],\"radius\":1}}}}"));
    sync_notes(w, &got);
    assert_int_equal(got.n, 0);
    char since[32];
    snprintf(since, sizeof since, "%llu", (unsigned long long)put);
    uint64_t rev;
    uint64_t w3 = watch(w, &got, "s", since, &rev);
    assert_true(w3 > wk);
    assert_true(rev > created);
    sync_notes(w, &got);
    assert_int_equal(got.n, 1);
    expect_plain(got.v[0], "scene.resync", w3, "s", rev);
    notes_clear(&got);

    /* A batch that deletes and recreates `keep`: scene.deleted, and nothing
     * of the new scene. */
    assert_true(rh_send_line(
        m, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.delete\",\"params\":{\"scene\":"
           "\"keep\"}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\",\"params\":{"
           "\"scene\":\"keep\"}},{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.put\","
           "\"params\":{\"scene\":\"keep\",\"shapes\":{\"z\":{\"sphere\":{\"center\":[0,0,0],"
           "\"radius\":1}}}}}]"));
    cJSON *batch = read_reply(m, NULL);
    uint64_t kdel = (uint64_t)num_at(cJSON_GetArrayItem(batch, 0), "result.revision");
    cJSON_Delete(batch);
    sync_notes(w, &got);
    assert_int_equal(got.n, 1);
    expect_plain(got.v[0], "scene.deleted", wk, "keep", kdel);
    notes_free(&got);
    assert_int_equal(stats_watches(m), 1); /* w3 */
    rh_close(w);
    rh_close(m);
    stop_ok(d);
}

/* ---- limits, bad requests and whose watch it is --------------------------------------------- */

static const char *const three_watches[] = {"--max-watches", "3", "--watch-buffer-bytes", "100000",
                                            NULL};

/* hello reports both watch limits: the defaults, and what the flags set. */
static void hello_reports_the_watch_limits(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    cJSON *h = rpcn(c, NULL, "hello", NULL);
    assert_int_equal((int)num_at(h, "result.limits.max_watches"), 256);
    assert_int_equal((long)num_at(h, "result.limits.watch_buffer_bytes"), 8L << 20);
    cJSON_Delete(h);
    rh_close(c);
    stop_ok(d);

    d = start(three_watches);
    c = connect_ok(d, false);
    h = rpcn(c, NULL, "hello", NULL);
    assert_int_equal((int)num_at(h, "result.limits.max_watches"), 3);
    assert_int_equal((int)num_at(h, "result.limits.watch_buffer_bytes"), 100000);
    cJSON_Delete(h);
    rh_close(c);
    stop_ok(d);
}

/* --max-watches per connection: the next one is -32004 {limit, max} and
 * counted in stats; unwatching frees a slot; other connections have their
 * own. */
static void max_watches_is_per_connection(void **state)
{
    (void)state;
    rh_daemon *d = start(three_watches);
    rh_conn *c = connect_ok(d, false);
    rh_conn *c2 = connect_ok(d, true);
    ok_revision(rpcn(c, NULL, "scene.create", "{\"scene\":\"s\"}"));
    uint64_t ids[3];
    for (int k = 0; k < 3; k++)
        ids[k] = watch(c, NULL, "s", NULL, NULL);
    cJSON *r = rpcn(c, NULL, "scene.watch", "{\"scene\":\"s\"}");
    char *text = cJSON_PrintUnformatted(at(r, "error.data"));
    assert_int_equal((int)num_at(r, "error.code"), -32004);
    assert_string_equal(text, "{\"limit\":\"max_watches\",\"max\":3}");
    free(text);
    cJSON_Delete(r);
    for (int k = 0; k < 3; k++)
        watch(c2, NULL, "s", NULL, NULL);
    unwatch_ok(c, NULL, ids[1]);
    watch(c, NULL, "s", NULL, NULL);
    cJSON *st = rpcn(c2, NULL, "stats", NULL);
    assert_int_equal((int)num_at(st, "result.watches"), 6);
    assert_int_equal((int)num_at(st, "result.limits_hit.max_watches"), 1);
    cJSON_Delete(st);
    rh_close(c);
    rh_close(c2);
    stop_ok(d);
}

/* Bad params of scene.watch / scene.unwatch name the offending path; a
 * missing scene or watch is -32001; none of it watches anything. */
static void bad_params_name_their_path(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    ok_revision(rpcn(c, NULL, "scene.create", "{\"scene\":\"s\"}"));
    static const char *const watch_cases[][2] = {
        {"{}", "params.scene"},
        {"{\"scene\":5}", "params.scene"},
        {"{\"scene\":\"bad name!\"}", "params.scene"},
        {"{\"scene\":\"s\",\"since\":-1}", "params.since"},
        {"{\"scene\":\"s\",\"since\":\"3\"}", "params.since"},
        {"{\"scene\":\"s\",\"since\":1.5}", "params.since"},
        {"{\"scene\":\"s\",\"since\":null}", "params.since"},
        {"{\"scene\":\"s\",\"since\":1e300}", "params.since"},
        {"{\"scene\":\"s\",\"from\":1}", "params.from"},
        {"[\"s\"]", "params"},
    };
    for (size_t k = 0; k < sizeof watch_cases / sizeof watch_cases[0]; k++)
        expect_error(rpcn(c, NULL, "scene.watch", "%s", watch_cases[k][0]), -32602,
                     watch_cases[k][1]);
    cJSON *r = rpcn(c, NULL, "scene.watch", "{\"scene\":\"nope\"}");
    char *text = cJSON_PrintUnformatted(at(r, "error.data"));
    assert_int_equal((int)num_at(r, "error.code"), -32001);
    assert_string_equal(text, "{\"kind\":\"scene\",\"name\":\"nope\"}");
    free(text);
    cJSON_Delete(r);
    static const char *const unwatch_cases[][2] = {
        {"{}", "params.watch"},
        {"{\"watch\":\"1\"}", "params.watch"},
        {"{\"watch\":-1}", "params.watch"},
        {"{\"watch\":1.5}", "params.watch"},
        {"{\"watch\":null}", "params.watch"},
        {"{\"watch\":1,\"scene\":\"s\"}", "params.scene"},
    };
    for (size_t k = 0; k < sizeof unwatch_cases / sizeof unwatch_cases[0]; k++)
        expect_error(rpcn(c, NULL, "scene.unwatch", "%s", unwatch_cases[k][0]), -32602,
                     unwatch_cases[k][1]);
    expect_no_watch(rpcn(c, NULL, "scene.unwatch", "{\"watch\":999}"), 999);
    /* Nothing was watched by any of that. */
    assert_int_equal(stats_watches(c), 0);
    rh_close(c);
    stop_ok(d);
}

/* Another connection's watch is not yours to end (-32001 kind watch), and
 * after its own unwatch nothing more comes for it. */
static void only_its_own_connection_ends_a_watch(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false), *c2 = connect_ok(d, true);
    notes got = {0};
    ok_revision(rpcn(c, NULL, "scene.create", "{\"scene\":\"s\"}"));

    /* Another connection's watch is not yours to end. */
    uint64_t theirs = watch(c2, NULL, "s", NULL, NULL);
    expect_no_watch(rpcn(c, NULL, "scene.unwatch", "{\"watch\":%llu}", (unsigned long long)theirs),
                    theirs);
    assert_int_equal(stats_watches(c), 1);
    uint64_t rev = ok_revision(rpcn(c, NULL, "scene.put",
                                    "{\"scene\":\"s\",\"shapes\":{\"x\":{\"sphere\":{\"center\":"
                                    "[0,0,0],\"radius\":1}}}}"));
    await_revision(c2, &got, rev);
    assert_int_equal(got.n, 1);
    notes_free(&got);
    unwatch_ok(c2, NULL, theirs);
    expect_no_watch(rpcn(c2, NULL, "scene.unwatch", "{\"watch\":%llu}", (unsigned long long)theirs),
                    theirs);
    /* After unwatch, nothing more for it. */
    ok_revision(rpcn(c, NULL, "scene.put",
                     "{\"scene\":\"s\",\"shapes\":{\"y\":{\"sphere\":{"
                     "\"center\":[0,0,0],\"radius\":1}}}}"));
    sync_notes(c2, &got);
    assert_int_equal(got.n, 0);
    notes_free(&got);
    rh_close(c);
    rh_close(c2);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        /* every change, once, in order: one recorded run */
        DAEMON_TEST(mutation_replies_take_consecutive_store_wide_revisions),
        DAEMON_TEST(every_change_reaches_every_watcher_once_in_revision_order),
        DAEMON_TEST(scene_deleted_comes_last_and_ends_the_watch),
        /* a watcher's own mutations */
        DAEMON_TEST(own_mutations_notify_after_the_reply),
        DAEMON_TEST(a_failed_mutation_notifies_nothing),
        /* since */
        DAEMON_TEST(since_replays_what_was_missed),
        DAEMON_TEST(since_older_than_the_history_resyncs),
        /* slow and overrun watchers */
        DAEMON_TEST(a_stalled_unix_watcher_costs_its_buffer_then_resyncs),
        DAEMON_TEST(a_stalled_tcp_watcher_costs_its_buffer_then_resyncs),
        DAEMON_TEST(a_burst_larger_than_the_buffer_resyncs_a_reading_watcher),
        /* the end of a watch */
        DAEMON_TEST(watches_end_with_their_connection),
        DAEMON_TEST(the_history_outlives_the_watches_and_goes_with_the_scenes),
        DAEMON_TEST(a_deleted_scene_ends_its_watches),
        DAEMON_TEST(a_scene_created_again_under_the_name_is_new_to_old_watches),
        /* limits, bad requests and whose watch it is */
        DAEMON_TEST(hello_reports_the_watch_limits),
        DAEMON_TEST(max_watches_is_per_connection),
        DAEMON_TEST(bad_params_name_their_path),
        DAEMON_TEST(only_its_own_connection_ends_a_watch),
    };
    int status = run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
    run_free();
    return status;
}
