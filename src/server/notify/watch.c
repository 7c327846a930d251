/* SPDX-License-Identifier: MIT */
/*
 * Watch notifications: per-scene change history, watchers, delivery.  See
 * watch.h for the rules; the protocol is in proto/PROTOCOL.md.
 *
 * A change is encoded once, when it is recorded, as the tail of its
 * notification:
 *
 *   "scene":S,"revision":R,"put":{…},"removed":[…]}}\n
 *
 * and each watcher gets its own head in front of it
 *
 *   {"jsonrpc":"2.0","method":"scene.changed","params":{"watch":W,
 *
 * so that fanning one change out to many watchers copies bytes and formats
 * one number per watcher.
 *
 * Every watch remembers the last revision it was sent (`seen`).  Live
 * delivery, `since` replay and catching up after a flush are then the same
 * walk: send the kept changes newer than `seen`.  When `seen` is older than
 * the history (`base`), the watcher cannot be caught up and gets
 * scene.resync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch.h"

typedef struct change {
    uint64_t revision;
    char *tail; /* see the top; len bytes */
    size_t len;
} change;

typedef struct wscene wscene;

struct rpd_watch {
    uint64_t id;
    wscene *ws;
    rpd_session *session;
    struct rpd_watch *prev, *next;  /* in ws->watches */
    struct rpd_watch *session_next; /* in session->watches */
    uint64_t seen;                  /* last revision sent (or replayed from) */
    char head[96];                  /* its scene.changed head (see the top) */
    unsigned head_len;
    bool lagging; /* output over the buffer: waits to drain */
    bool resync;  /* owes a scene.resync */
};
typedef struct rpd_watch rpd_watch;

struct wscene {
    wscene *next; /* in hub->scenes or hub->dying */
    char *name;
    uint64_t base;      /* history holds the changes after this revision */
    uint64_t current;   /* the scene's revision as last recorded */
    uint64_t deleted;   /* dying: the revision of the deletion */
    change *ring;       /* RPD_WATCH_HISTORY_CHANGES slots */
    size_t head, count; /* oldest slot, changes kept */
    size_t bytes;       /* their tails */
    rpd_watch *watches;
    bool dirty; /* something to send */
};

struct rpd_watch_hub {
    wscene *scenes; /* existing scenes that record changes */
    wscene *dying;  /* deleted: their watchers are told once, then freed */
    uint64_t next_id;
    size_t watches;
    size_t history_bytes;
    uint64_t overruns;
    bool dirty;
    size_t sends; /* changes and notices the current flush sent */
    rpd_watch_io io;
    const rpd_core *core; /* whether changes are held; the store after an undo */
};

static const char changed_head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"scene.changed\","
                                   "\"params\":{\"watch\":";

rpd_watch_hub *rpd_watch_hub_new(const rpd_core *core)
{
    rpd_watch_hub *hub = calloc(1, sizeof(rpd_watch_hub));
    if (hub)
        hub->core = core;
    return hub;
}

void rpd_watch_set_io(rpd_watch_hub *hub, const rpd_watch_io *io)
{
    hub->io = *io;
}

size_t rpd_watch_count(const rpd_watch_hub *hub)
{
    return hub->watches;
}
uint64_t rpd_watch_overruns(const rpd_watch_hub *hub)
{
    return hub->overruns;
}
size_t rpd_watch_history_bytes(const rpd_watch_hub *hub)
{
    return hub->history_bytes;
}

/* ---- history -------------------------------------------------------------- */

static change *ring_at(wscene *ws, size_t k)
{
    return &ws->ring[(ws->head + k) % RPD_WATCH_HISTORY_CHANGES];
}

static void drop_oldest(rpd_watch_hub *hub, wscene *ws)
{
    change *c = ring_at(ws, 0);
    ws->base = c->revision;
    ws->bytes -= c->len;
    hub->history_bytes -= c->len;
    free(c->tail);
    c->tail = NULL;
    ws->head = (ws->head + 1) % RPD_WATCH_HISTORY_CHANGES;
    ws->count--;
}

/* Forgets every kept change: history now starts at `revision`, and every
 * watcher that had not reached it owes a resync. */
static void drop_history(rpd_watch_hub *hub, wscene *ws, uint64_t revision)
{
    while (ws->count)
        drop_oldest(hub, ws);
    ws->base = revision;
    for (rpd_watch *w = ws->watches; w; w = w->next)
        if (w->seen < revision)
            w->resync = true;
}

static void drop_newest(rpd_watch_hub *hub, wscene *ws)
{
    change *c = ring_at(ws, ws->count - 1);
    ws->bytes -= c->len;
    hub->history_bytes -= c->len;
    free(c->tail);
    c->tail = NULL;
    ws->count--;
}

static void free_wscene(rpd_watch_hub *hub, wscene *ws)
{
    while (ws->count)
        drop_oldest(hub, ws);
    free(ws->ring);
    free(ws->name);
    free(ws);
}

static wscene *find_scene(const rpd_watch_hub *hub, const char *name)
{
    for (wscene *ws = hub->scenes; ws; ws = ws->next)
        if (strcmp(ws->name, name) == 0)
            return ws;
    return NULL;
}

bool rpd_watch_tracked(const rpd_watch_hub *hub, const char *name)
{
    return hub && find_scene(hub, name) != NULL;
}

static void mark_dirty(rpd_watch_hub *hub, wscene *ws)
{
    ws->dirty = true;
    hub->dirty = true;
}

/* The tail of a change notification (see the top), NULL when it would pass
 * the history's byte bound or memory ran out. */
static int cmp_put_ptr(const void *a, const void *b)
{
    return strcmp((*(const rp_shape_put *const *)a)->id, (*(const rp_shape_put *const *)b)->id);
}

static int cmp_object_put(const void *a, const void *b)
{
    return strcmp((*(const rp_object_put *const *)a)->name,
                  (*(const rp_object_put *const *)b)->name);
}

static int cmp_move(const void *a, const void *b)
{
    return strcmp((*(const rp_object_move *const *)a)->name,
                  (*(const rp_object_move *const *)b)->name);
}

/* "objects" (the objects a put or replace writes, whole) and "moved" (the
 * poses a move gives), each sorted by name; false when out of memory. */
/* {"model"?: name, "joints": [values of m], "base": pose} (q NULL: m's
 * defaults); false when out of memory. */
static bool robot_state(rp_jw *w, const char *model, const rp_model *m, const double *q,
                        const rp_transform *base)
{
    double *dflt = NULL;
    if (m && !q) {
        size_t dof = rp_model_dof(m);
        if (!(dflt = malloc((dof ? dof : 1) * sizeof *dflt)))
            return false;
        rp_model_default_joints(m, dflt);
        q = dflt;
    }
    rp_jw_robot_state(w, model, m, q, base);
    free(dflt);
    return true;
}

static bool encode_objects(rp_jw *w, const rp_change *c, const rp_store *st)
{
    if (c->n_objects || (c->kind == RP_CHANGE_SCENE_REPLACE && c->objects)) {
        const rp_object_put **o = malloc((c->n_objects ? c->n_objects : 1) * sizeof *o);
        if (!o)
            return false;
        for (size_t j = 0; j < c->n_objects; j++)
            o[j] = &c->objects[j];
        qsort(o, c->n_objects, sizeof *o, cmp_object_put);
        RP_JW_KEY(w, "objects");
        rp_jw_object_begin(w);
        for (size_t j = 0; j < c->n_objects && !rp_jw_failed(w); j++) {
            rp_jw_key(w, o[j]->name);
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "pose");
            rp_jw_pose(w, &o[j]->pose);
            RP_JW_KEY(w, "shapes");
            /* In id order, as scene.get gives them. */
            rp_jw_object_begin(w);
            const rp_shape_put **sh = malloc((o[j]->n_shapes ? o[j]->n_shapes : 1) * sizeof *sh);
            if (!sh) {
                free(o);
                return false;
            }
            for (size_t k = 0; k < o[j]->n_shapes; k++)
                sh[k] = &o[j]->shapes[k];
            qsort(sh, o[j]->n_shapes, sizeof *sh, cmp_put_ptr);
            for (size_t k = 0; k < o[j]->n_shapes; k++) {
                rp_jw_key(w, sh[k]->id);
                rp_jw_shape(w, &sh[k]->shape);
            }
            free(sh);
            rp_jw_object_end(w);
            rp_jw_object_end(w);
        }
        rp_jw_object_end(w);
        free(o);
    }
    /* Robot instances: those written ("robots", beside "objects") and
     * those moved (in "moved", beside the objects' poses), each with its
     * whole state (a move that left joints or base as they were repeats
     * them from the scene as it was).  Object poses sorted by name, then
     * the robots in the change's order. */
    if (c->n_robots) {
        RP_JW_KEY(w, "robots");
        rp_jw_object_begin(w);
        for (size_t j = 0; j < c->n_robots && !rp_jw_failed(w); j++) {
            const rp_robot_put *r = &c->robots[j];
            rp_jw_key(w, r->name);
            if (!robot_state(w, r->model, rp_store_model_find(st, r->model), r->joints, &r->base))
                return false;
        }
        rp_jw_object_end(w);
    }
    /* Clouds written: their size, not their points (scene.get has those). */
    if (c->n_clouds) {
        RP_JW_KEY(w, "clouds");
        rp_jw_object_begin(w);
        for (size_t j = 0; j < c->n_clouds && !rp_jw_failed(w); j++) {
            rp_jw_key(w, c->clouds[j].name);
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "radius");
            rp_jw_double(w, rp_cloud_radius(c->clouds[j].cloud));
            RP_JW_KEY(w, "count");
            rp_jw_uint(w, rp_cloud_size(c->clouds[j].cloud));
            rp_jw_object_end(w);
        }
        rp_jw_object_end(w);
    }
    if (c->kind == RP_CHANGE_SCENE_MOVE) {
        const rp_object_move **m = malloc((c->n_moves ? c->n_moves : 1) * sizeof *m);
        if (!m)
            return false;
        for (size_t j = 0; j < c->n_moves; j++)
            m[j] = &c->moves[j];
        qsort(m, c->n_moves, sizeof *m, cmp_move);
        RP_JW_KEY(w, "moved");
        rp_jw_object_begin(w);
        for (size_t j = 0; j < c->n_moves && !rp_jw_failed(w); j++) {
            rp_jw_key(w, m[j]->name);
            rp_jw_pose(w, &m[j]->pose);
        }
        free(m);
        /* Attached objects that followed their robots. */
        for (size_t j = 0; j < c->n_follow && !rp_jw_failed(w); j++) {
            rp_jw_key(w, c->follow[j].name);
            rp_jw_pose(w, &c->follow[j].pose);
        }
        for (size_t j = 0; j < c->n_robot_moves && !rp_jw_failed(w); j++) {
            const rp_robot_move *r = &c->robot_moves[j];
            const rp_object *old = c->before ? rp_scene_object_find(c->before, r->name) : NULL;
            if (!old)
                continue; /* (the move was refused: no notification) */
            rp_transform base = r->base ? *r->base : rp_object_pose(old);
            rp_jw_key(w, r->name);
            if (!robot_state(w, NULL, rp_object_model(old),
                             r->joints ? r->joints : rp_object_joints(old), &base))
                return false;
        }
        rp_jw_object_end(w);
    }
    if (c->kind == RP_CHANGE_SCENE_ATTACH) {
        RP_JW_KEY(w, "moved");
        rp_jw_object_begin(w);
        rp_jw_key(w, c->object);
        rp_jw_pose(w, &c->moves[0].pose);
        rp_jw_object_end(w);
        RP_JW_KEY(w, "attached");
        rp_jw_object_begin(w);
        rp_jw_key(w, c->object);
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "robot");
        rp_jw_string(w, c->robot);
        RP_JW_KEY(w, "link");
        rp_jw_string(w, c->link);
        RP_JW_KEY(w, "rel");
        rp_jw_pose(w, c->rel);
        rp_jw_object_end(w);
        rp_jw_object_end(w);
    }
    if (c->kind == RP_CHANGE_SCENE_DETACH || c->n_detached) {
        RP_JW_KEY(w, "detached");
        rp_jw_array_begin(w);
        if (c->kind == RP_CHANGE_SCENE_DETACH)
            rp_jw_string(w, c->object);
        for (size_t j = 0; j < c->n_detached; j++)
            rp_jw_string(w, c->detached[j]);
        rp_jw_array_end(w);
    }
    return true;
}

static char *encode_tail(const rp_change *c, const rp_store *st, const char *name,
                         uint64_t revision, const rp_shape_put *const *put, size_t n_put,
                         const char *const *removed, size_t n_removed, size_t *len)
{
    rp_jw w;
    rp_jw_init(&w);
    rp_jw_set_limit(&w, RPD_WATCH_HISTORY_BYTES);
    rp_jw_object_begin(&w);
    RP_JW_KEY(&w, "scene");
    rp_jw_string(&w, name);
    RP_JW_KEY(&w, "revision");
    rp_jw_uint(&w, revision);
    RP_JW_KEY(&w, "put");
    rp_jw_object_begin(&w);
    for (size_t k = 0; k < n_put && !rp_jw_failed(&w); k++) {
        rp_jw_key(&w, put[k]->id);
        rp_jw_shape(&w, &put[k]->shape);
    }
    rp_jw_object_end(&w);
    RP_JW_KEY(&w, "removed");
    rp_jw_array_begin(&w);
    for (size_t k = 0; k < n_removed && !rp_jw_failed(&w); k++)
        rp_jw_string(&w, removed[k]);
    rp_jw_array_end(&w);
    if (c && !encode_objects(&w, c, st)) {
        rp_jw_free(&w);
        return NULL;
    }
    rp_jw_object_end(&w);
    rp_jw_raw(&w, "}\n", 2);
    if (rp_jw_failed(&w)) {
        rp_jw_free(&w);
        return NULL;
    }
    size_t n;
    char *json = rp_jw_detach(&w, &n);
    if (!json)
        return NULL;
    /* Drop the leading '{': the head supplies it. */
    memmove(json, json + 1, n - 1);
    *len = n - 1;
    return json;
}

/* Records a committed change of a tracked scene at `revision`: `put`
 * shapes (sorted by id, each id once) and `removed` ids (sorted, each
 * once).  A change that cannot be kept (too large, out of memory) drops
 * the history and sends every watcher of the scene a scene.resync
 * instead. */
static void record(rpd_watch_hub *hub, const rp_change *ch, const char *name, uint64_t revision,
                   const rp_shape_put *const *put, size_t n_put, const char *const *removed,
                   size_t n_removed)
{
    wscene *ws = hub ? find_scene(hub, name) : NULL;
    if (!ws)
        return;
    ws->current = revision;
    mark_dirty(hub, ws);
    size_t len;
    char *tail =
        encode_tail(ch, hub->core->store, name, revision, put, n_put, removed, n_removed, &len);
    if (!tail) {
        drop_history(hub, ws, revision);
        return;
    }
    while (ws->count &&
           (ws->count == RPD_WATCH_HISTORY_CHANGES || ws->bytes + len > RPD_WATCH_HISTORY_BYTES))
        drop_oldest(hub, ws);
    change *c = ring_at(ws, ws->count);
    c->revision = revision;
    c->tail = tail;
    c->len = len;
    ws->count++;
    ws->bytes += len;
    hub->history_bytes += len;
}

/* ---- the store's change records (docs/ARCHITECTURE.md, The way of a mutation) ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The ids a change removes from c->before, sorted, each once: for a
 * replace, those the new content lacks (put: its sorted shapes); for a
 * remove, the ids asked for that the scene holds.  NULL when out of
 * memory. */
static const char **dropped(const rp_change *c, const rp_shape_put *const *put, size_t n_put,
                            size_t *n_out)
{
    const rp_scene *before = c->before;
    size_t count = before ? rp_scene_shape_count(before) : 0;
    *n_out = 0;
    if (c->kind == RP_CHANGE_SCENE_REMOVE) {
        const char **out = malloc((c->n_ids ? c->n_ids : 1) * sizeof *out);
        if (!out)
            return NULL;
        size_t n = 0;
        /* Shapes of the scene's own, and objects, by name. */
        for (size_t k = 0; k < c->n_ids; k++) {
            size_t e = before ? rp_scene_find(before, c->ids[k]) : SIZE_MAX;
            if ((e != SIZE_MAX && !rp_scene_shape_object(before, e)) ||
                (before && rp_scene_object_find(before, c->ids[k])))
                out[n++] = c->ids[k];
        }
        qsort(out, n, sizeof *out, cmp_str);
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (m == 0 || strcmp(out[m - 1], out[k]) != 0)
                out[m++] = out[k];
        *n_out = m;
        return out;
    }
    /* A replace: the old shapes of the scene's own the new content lacks,
     * and the old objects it lacks, by name. */
    size_t n_obj = before ? rp_scene_object_count(before) : 0;
    size_t *order = malloc((count ? count : 1) * sizeof *order);
    const char **out = malloc((count + n_obj ? count + n_obj : 1) * sizeof *out);
    if (!order || !out || (count && rp_scene_sorted(before, order))) {
        free(order);
        free(out);
        return NULL;
    }
    size_t m = 0, j = 0;
    for (size_t k = 0; k < count; k++) {
        if (rp_scene_shape_object(before, order[k]))
            continue;
        const char *id = rp_scene_id_at(before, order[k]);
        while (j < n_put && strcmp(put[j]->id, id) < 0)
            j++;
        if (j == n_put || strcmp(put[j]->id, id) != 0)
            out[m++] = id;
    }
    free(order);
    /* The old objects the new content lacks: a search in its sorted names. */
    size_t n_new = c->n_objects + c->n_robots + c->n_clouds;
    if (n_obj == 0) {
        *n_out = m;
        return out;
    }
    const char **names = malloc((n_new ? n_new : 1) * sizeof *names);
    if (!names) {
        free(out);
        return NULL;
    }
    for (size_t q = 0; q < c->n_objects; q++)
        names[q] = c->objects[q].name;
    for (size_t q = 0; q < c->n_robots; q++)
        names[c->n_objects + q] = c->robots[q].name;
    for (size_t q = 0; q < c->n_clouds; q++)
        names[c->n_objects + c->n_robots + q] = c->clouds[q].name;
    qsort(names, n_new, sizeof *names, cmp_str);
    for (size_t i = 0; i < n_obj; i++) {
        const char *name = rp_object_name(rp_scene_object_at(before, i));
        if (!bsearch(&name, names, n_new, sizeof *names, cmp_str))
            out[m++] = name;
    }
    free(names);
    qsort(out, m, sizeof *out, cmp_str);
    *n_out = m;
    return out;
}

static void record_lost(rpd_watch_hub *hub, const char *name, uint64_t revision)
{
    wscene *ws = hub ? find_scene(hub, name) : NULL;
    if (!ws)
        return;
    ws->current = revision;
    mark_dirty(hub, ws);
    drop_history(hub, ws, revision);
}

static void record_deleted(rpd_watch_hub *hub, const char *name, uint64_t revision)
{
    if (!hub)
        return;
    for (wscene **p = &hub->scenes; *p; p = &(*p)->next) {
        wscene *ws = *p;
        if (strcmp(ws->name, name) != 0)
            continue;
        *p = ws->next;
        ws->deleted = revision;
        ws->next = hub->dying;
        hub->dying = ws;
        mark_dirty(hub, ws);
        return;
    }
}

int rpd_watch_on_change(void *ctx, const rp_change *c)
{
    rpd_watch_hub *hub = ctx;
    if (c->kind == RP_CHANGE_SCENE_DELETE) {
        record_deleted(hub, c->name, c->revision);
        return 0;
    }
    if (c->kind == RP_CHANGE_MODEL_PUT || c->kind == RP_CHANGE_MODEL_DELETE ||
        !rpd_watch_tracked(hub, c->name))
        return 0;
    size_t n_put = 0, n_removed = 0;
    const rp_shape_put **put = NULL;
    const char **removed = NULL;
    bool ok = true;
    if (c->kind != RP_CHANGE_SCENE_REMOVE && c->kind != RP_CHANGE_SCENE_MOVE)
        ok = (put = rpd_change_written(c, &n_put)) != NULL;
    if (ok &&
        (c->kind == RP_CHANGE_SCENE_REMOVE || (c->kind == RP_CHANGE_SCENE_REPLACE && c->before)))
        ok = (removed = dropped(c, put, n_put, &n_removed)) != NULL;
    if (ok)
        record(hub, c, c->name, c->revision, put, n_put, removed, n_removed);
    else
        record_lost(hub, c->name, c->revision);
    free(put);
    free(removed);
    return 0; /* a watcher never stops a change */
}

/* ---- undo (docs/ARCHITECTURE.md, Durability) ---------------------------------- */

/* A scene that stands again at `revision` (rp_scene_revision): the changes
 * after it leave the history, and a watcher that began after it gets
 * scene.resync. */
static void undo_scene(rpd_watch_hub *hub, wscene *ws, uint64_t revision)
{
    while (ws->count && ring_at(ws, ws->count - 1)->revision > revision)
        drop_newest(hub, ws);
    if (ws->base > revision) /* a change that could not be kept was undone */
        drop_history(hub, ws, revision);
    ws->current = revision;
    for (rpd_watch *w = ws->watches; w; w = w->next)
        if (w->seen > revision) {
            w->seen = revision;
            w->resync = true;
            mark_dirty(hub, ws);
        }
}

/* Moves the watches of `from` (same scene name) to `to` and frees `from`. */
static void merge_scene(rpd_watch_hub *hub, wscene *to, wscene *from)
{
    while (from->watches) {
        rpd_watch *w = from->watches;
        from->watches = w->next;
        w->ws = to;
        w->prev = NULL;
        w->next = to->watches;
        if (to->watches)
            to->watches->prev = w;
        to->watches = w;
    }
    free_wscene(hub, from);
}

void rpd_watch_on_undo(void *ctx, uint64_t revision)
{
    rpd_watch_hub *hub = ctx;
    const rp_store *st = hub->core->store;
    /* A scene whose deletion was undone is back: its watches go on. */
    for (wscene **p = &hub->dying; *p;) {
        wscene *ws = *p;
        const rp_scene *sc = ws->deleted > revision ? rp_store_find(st, ws->name) : NULL;
        if (!sc) {
            p = &ws->next;
            continue;
        }
        *p = ws->next;
        ws->deleted = 0;
        wscene *again = find_scene(hub, ws->name); /* watched since its undone deletion */
        if (again) {
            merge_scene(hub, again, ws);
        } else {
            ws->next = hub->scenes;
            hub->scenes = ws;
        }
    }
    /* Every scene: back to what stands; one whose creation was undone is
     * gone, and its watches end as at a deletion. */
    for (wscene **p = &hub->scenes; *p;) {
        wscene *ws = *p;
        const rp_scene *sc = rp_store_find(st, ws->name);
        if (sc) {
            undo_scene(hub, ws, rp_scene_revision(sc));
            p = &ws->next;
            continue;
        }
        *p = ws->next;
        ws->deleted = revision;
        ws->next = hub->dying;
        hub->dying = ws;
        mark_dirty(hub, ws);
    }
}

/* ---- watches ---------------------------------------------------------------- */

static void unlink_watch(rpd_watch_hub *hub, rpd_watch *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        w->ws->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    /* Out of the session's list. */
    for (rpd_watch **p = &w->session->watches; *p; p = &(*p)->session_next)
        if (*p == w) {
            *p = w->session_next;
            break;
        }
    if (w->lagging)
        w->session->lagging--;
    hub->watches--;
    free(w);
}

void rpd_watch_session_end(rpd_watch_hub *hub, rpd_session *s)
{
    while (s->watches)
        unlink_watch(hub, s->watches);
}

bool rpd_watch_session_lagging(const rpd_session *s)
{
    return s->lagging > 0;
}

/* ---- delivery ---------------------------------------------------------------- */

/* A notification without changes: scene.resync or scene.deleted. */
static void send_plain(rpd_watch_hub *hub, rpd_watch *w, const char *method, uint64_t revision)
{
    rp_jw line;
    hub->sends++;
    rp_jw_init(&line);
    rp_jw_object_begin(&line);
    RP_JW_KEY(&line, "jsonrpc");
    rp_jw_string(&line, "2.0");
    RP_JW_KEY(&line, "method");
    rp_jw_string(&line, method);
    RP_JW_KEY(&line, "params");
    rp_jw_object_begin(&line);
    RP_JW_KEY(&line, "watch");
    rp_jw_uint(&line, w->id);
    RP_JW_KEY(&line, "scene");
    rp_jw_string(&line, w->ws->name);
    RP_JW_KEY(&line, "revision");
    rp_jw_uint(&line, revision);
    rp_jw_object_end(&line);
    rp_jw_object_end(&line);
    rp_jw_end_line(&line);
    /* Out of memory for a line of ~100 bytes: the watcher misses this one
     * notification; there is nothing better to do for it. */
    if (!rp_jw_failed(&line) && hub->io.send)
        hub->io.send(w->session, line.buf, line.len);
    rp_jw_free(&line);
}

static size_t backlog(const rpd_watch_hub *hub, const rpd_session *s)
{
    return hub->io.backlog ? hub->io.backlog(s) : 0;
}

/* Index of the first kept change newer than `seen` (count when none). */
static size_t first_after(wscene *ws, uint64_t seen)
{
    size_t lo = 0, hi = ws->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring_at(ws, mid)->revision <= seen)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sends one watcher what it has not seen.  Returns whether it sent
 * anything. */
static bool deliver(rpd_watch_hub *hub, rpd_watch *w, size_t buffer)
{
    wscene *ws = w->ws;
    if (w->lagging)
        return false;
    if (w->seen < ws->base)
        w->resync = true;
    if (w->resync) {
        w->resync = false;
        w->seen = ws->current;
        send_plain(hub, w, "scene.resync", ws->current);
        return true;
    }
    bool sent = false;
    size_t hn = w->head_len;
    size_t queued = backlog(hub, w->session); /* grows by what this call sends */
    for (size_t k = first_after(ws, w->seen); k < ws->count; k++) {
        const change *c = ring_at(ws, k);
        if (queued + hn + c->len > buffer && queued <= buffer / 2) {
            /* Not behind, but this change does not fit: no drain is
             * coming to bring the resync later, so it comes now. */
            hub->overruns++;
            w->seen = ws->current;
            send_plain(hub, w, "scene.resync", ws->current);
            return true;
        }
        if (queued + hn + c->len > buffer) {
            /* Behind by more than its buffer: nothing more until the
             * output drains, then a resync (rpd_watch_drained). */
            hub->overruns++;
            w->lagging = true;
            w->session->lagging++;
            break;
        }
        if (hub->io.send) {
            hub->io.send(w->session, w->head, hn);
            hub->io.send(w->session, c->tail, c->len);
        }
        queued += hn + c->len;
        w->seen = c->revision;
        hub->sends++;
        sent = true;
    }
    return sent;
}

bool rpd_watch_flush(rpd_watch_hub *hub, const rpd_limits *limits)
{
    /* Held changes may yet be undone: they go out once they stand (the
     * server flushes again after the group's fsync). */
    if (!hub || (!hub->dirty && !hub->dying) || rpd_changes_held(hub->core))
        return false;
    hub->dirty = false;
    hub->sends = 0;
    for (wscene *ws = hub->scenes; ws; ws = ws->next) {
        if (!ws->dirty)
            continue;
        for (rpd_watch *w = ws->watches; w; w = w->next) {
            if (hub->sends >= RPD_WATCH_FLUSH_SENDS) {
                hub->dirty = true; /* this scene and those after wait a turn */
                return true;
            }
            if (deliver(hub, w, limits->watch_buffer_bytes) && hub->io.commit)
                hub->io.commit(w->session);
        }
        ws->dirty = false;
    }
    /* Deleted scenes: the last changes, then scene.deleted, then the watch
     * ends. */
    while (hub->dying) {
        wscene *ws = hub->dying;
        while (ws->watches) {
            if (hub->sends >= RPD_WATCH_FLUSH_SENDS)
                return true;
            rpd_watch *w = ws->watches;
            deliver(hub, w, limits->watch_buffer_bytes);
            send_plain(hub, w, "scene.deleted", ws->deleted);
            if (hub->io.commit)
                hub->io.commit(w->session);
            unlink_watch(hub, w);
        }
        hub->dying = ws->next;
        free_wscene(hub, ws);
    }
    return false;
}

void rpd_watch_drained(rpd_watch_hub *hub, rpd_session *s, const rpd_limits *limits)
{
    if (!s->lagging || backlog(hub, s) > limits->watch_buffer_bytes / 2)
        return;
    if (rpd_changes_held(hub->core)) {
        /* The resync waits for the next flush, after the hold. */
        for (rpd_watch *w = s->watches; w; w = w->session_next)
            if (w->lagging) {
                w->lagging = false;
                s->lagging--;
                w->resync = true;
                mark_dirty(hub, w->ws);
            }
        return;
    }
    bool sent = false;
    for (rpd_watch *w = s->watches; w; w = w->session_next) {
        if (!w->lagging)
            continue;
        w->lagging = false;
        s->lagging--;
        w->resync = true;
        sent |= deliver(hub, w, limits->watch_buffer_bytes);
    }
    if (sent && hub->io.commit)
        hub->io.commit(s);
}

void rpd_watch_hub_free(rpd_watch_hub *hub)
{
    if (!hub)
        return;
    /* Sessions are gone by now (their watches ended with them); free what
     * is left regardless. */
    for (wscene *lists[2] = {hub->scenes, hub->dying}, **l = lists; l < lists + 2; l++)
        while (*l) {
            wscene *ws = *l;
            *l = ws->next;
            while (ws->watches) {
                rpd_watch *w = ws->watches;
                ws->watches = w->next;
                free(w);
            }
            free_wscene(hub, ws);
        }
    free(hub);
}

/* ---- watches: start and end ------------------------------------------------------- */

/* The scene's recorder, created on its first watch. */
static wscene *track(rpd_watch_hub *hub, const rp_scene *sc)
{
    wscene *ws = find_scene(hub, rp_scene_name(sc));
    if (ws)
        return ws;
    ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->ring = calloc(RPD_WATCH_HISTORY_CHANGES, sizeof *ws->ring);
    size_t n = strlen(rp_scene_name(sc)) + 1;
    ws->name = malloc(n);
    if (!ws->ring || !ws->name) {
        free(ws->ring);
        free(ws->name);
        free(ws);
        return NULL;
    }
    memcpy(ws->name, rp_scene_name(sc), n);
    ws->base = ws->current = rp_scene_revision(sc);
    ws->next = hub->scenes;
    hub->scenes = ws;
    return ws;
}

size_t rpd_watch_session_count(const rpd_session *s)
{
    size_t n = 0;
    for (const rpd_watch *w = s->watches; w; w = w->session_next)
        n++;
    return n;
}

rp_status rpd_watch_add(rpd_watch_hub *hub, rpd_session *s, const rp_scene *sc,
                        const uint64_t *since, uint64_t *id, uint64_t *revision)
{
    rpd_watch *wt = calloc(1, sizeof *wt);
    wscene *ws = wt ? track(hub, sc) : NULL;
    if (!ws) {
        free(wt);
        return RP_ERR_NOMEM;
    }
    wt->id = ++hub->next_id;
    wt->head_len = (unsigned)snprintf(wt->head, sizeof wt->head, "%s%llu,", changed_head,
                                      (unsigned long long)wt->id);
    wt->ws = ws;
    wt->session = s;
    wt->seen = ws->current;
    if (since) {
        /* Replay from `since` when the history reaches back to it; a
         * revision outside (base, current] cannot be caught up. */
        if (*since >= ws->base && *since <= ws->current)
            wt->seen = *since;
        else
            wt->resync = true;
        if (wt->seen < ws->current || wt->resync)
            mark_dirty(hub, ws);
    }
    wt->next = ws->watches;
    if (ws->watches)
        ws->watches->prev = wt;
    ws->watches = wt;
    wt->session_next = s->watches;
    s->watches = wt;
    hub->watches++;
    *id = wt->id;
    *revision = ws->current;
    return RP_OK;
}

bool rpd_watch_remove(rpd_watch_hub *hub, rpd_session *s, uint64_t id)
{
    rpd_watch *wt = s->watches;
    while (wt && wt->id != id)
        wt = wt->session_next;
    if (!wt)
        return false;
    unlink_watch(hub, wt);
    return true;
}
