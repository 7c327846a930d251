/* SPDX-License-Identifier: MIT */
/*
 * The store: scenes kept in an array sorted by name, so lookups are a binary
 * search and scene.list needs no sorting.
 */
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"
#include "util/grow.h"

/* Defaults for the zero fields, and the half-spaces' ceiling. */
static void fill_limits(rp_store_limits *l)
{
    if (l->max_shapes_per_scene == 0)
        l->max_shapes_per_scene = RP_DEFAULT_MAX_SHAPES_PER_SCENE;
    if (l->max_halfspaces_per_scene == 0)
        l->max_halfspaces_per_scene = RP_DEFAULT_MAX_HALFSPACES_PER_SCENE;
    if (l->max_halfspaces_per_scene > RP_MAX_HALFSPACES_PER_SCENE)
        l->max_halfspaces_per_scene = RP_MAX_HALFSPACES_PER_SCENE;
}

rp_store *rp_store_new(const rp_store_limits *limits)
{
    rp_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    if (limits)
        st->limits = *limits;
    fill_limits(&st->limits);
    st->bytes = sizeof *st;
    return st;
}

void rp_store_free(rp_store *st)
{
    if (!st)
        return;
    /* A snapshot drops its references; the store drops its own, which
     * frees what no snapshot holds (snapshots go before their store). */
    for (size_t i = 0; i < st->count; i++)
        rp_scene_release_(st->scenes[i]);
    for (size_t i = 0; i < st->model_count; i++)
        rp_model_release_(st->models[i]);
    free(st->scenes);
    free(st->models);
    free(st);
}

void rp_store_set_commit_hook(rp_store *st, rp_store_commit_fn fn, void *ctx)
{
    st->commit_hook = fn;
    st->commit_ctx = ctx;
}

rp_store_limits rp_store_get_limits(const rp_store *st)
{
    return st->limits;
}

void rp_store_set_revision(rp_store *st, uint64_t revision)
{
    st->revision = revision;
}

void rp_store_set_limits(rp_store *st, const rp_store_limits *limits)
{
    st->limits = *limits;
    fill_limits(&st->limits);
}
size_t rp_store_scene_count(const rp_store *st)
{
    return st->count;
}
const rp_scene *rp_store_scene_at(const rp_store *st, size_t i)
{
    return st->scenes[i];
}
uint64_t rp_store_shape_count(const rp_store *st)
{
    return st->shapes;
}
uint64_t rp_store_revision(const rp_store *st)
{
    return st->revision;
}

size_t rp_store_memory(const rp_store *st)
{
    return st->bytes + st->cap * sizeof *st->scenes + st->model_cap * sizeof *st->models;
}

static const char *scene_name_of(const void *item)
{
    return ((const rp_scene *)item)->name;
}

/* Position of `name` among the scenes, or where it would be inserted. */
static size_t lower_bound(const rp_store *st, const char *name, bool *found)
{
    return rp_name_lower_bound_((void *const *)st->scenes, st->count, scene_name_of, name, found);
}

rp_scene *rp_store_find(const rp_store *st, const char *name)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    return found ? st->scenes[i] : NULL;
}

/* Builds a scene named `name` holding `shapes`, not yet linked in and
 * without a revision: the caller gives it one (rp_store_take_revision_)
 * when it commits.  All or nothing. */
static rp_status build_scene(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                             rp_scene **out)
{
    rp_scene *sc = rp_scene_new_(st, name);
    if (!sc)
        return RP_ERR_NOMEM;
    rp_status status = rp_scene_fill_(sc, shapes, n);
    if (status) {
        rp_scene_free_(sc);
        return status;
    }
    *out = sc;
    return RP_OK;
}

/* Builds a scene holding `shapes` and links it in at position i.  All or
 * nothing. */
static rp_status insert_new(rp_store *st, size_t i, const char *name, const rp_shape_put *shapes,
                            size_t n, rp_change_kind kind, rp_scene **out)
{
    /* Build the scene first, then grow the list: a failure at either step
     * leaves the store as it was (memory accounting included), and the
     * revision is taken only once nothing can fail. */
    rp_scene *sc;
    rp_status status = build_scene(st, name, shapes, n, &sc);
    if (status)
        return status;
    if (st->count == st->cap) {
        rp_scene **grown = rp_grow_(st->scenes, &st->cap, st->count + 1, sizeof *grown, 8);
        if (!grown) {
            st->shapes -= sc->count; /* the put counted them */
            rp_scene_free_(sc);
            return RP_ERR_NOMEM;
        }
        st->scenes = grown;
    }
    rp_change ch = {.kind = kind, .name = name, .created = true, .shapes = shapes, .n_shapes = n};
    if (!rp_store_may_commit_(st, &ch)) {
        st->shapes -= sc->count;
        rp_scene_free_(sc);
        return RP_ERR_ABORTED;
    }
    sc->revision = rp_store_take_revision_(st);
    memmove(&st->scenes[i + 1], &st->scenes[i], (st->count - i) * sizeof *st->scenes);
    st->scenes[i] = sc;
    st->count++;
    if (out)
        *out = sc;
    return RP_OK;
}

rp_status rp_store_create(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                          rp_scene **out)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (found)
        return RP_ERR_EXISTS;
    return insert_new(st, i, name, shapes, n, RP_CHANGE_SCENE_PUT, out);
}

rp_status rp_store_delete(rp_store *st, const char *name)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (!found)
        return RP_ERR_NOT_FOUND;
    rp_change ch = {.kind = RP_CHANGE_SCENE_DELETE, .name = name, .before = st->scenes[i]};
    if (!rp_store_may_commit_(st, &ch))
        return RP_ERR_ABORTED;
    /* The store counts the shapes of its current scenes; a version a
     * snapshot still holds is not counted. */
    st->shapes -= st->scenes[i]->count;
    rp_scene_release_(st->scenes[i]);
    memmove(&st->scenes[i], &st->scenes[i + 1], (st->count - i - 1) * sizeof *st->scenes);
    st->count--;
    rp_store_take_revision_(st); /* a deletion is a committed mutation too */
    return RP_OK;
}

rp_status rp_store_put(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                       const uint64_t *if_revision, bool create, rp_scene **out,
                       uint64_t *actual_revision)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (found) {
        rp_scene *sc = rp_store_writable_(st, i);
        if (!sc)
            return RP_ERR_NOMEM;
        if (out)
            *out = sc;
        return rp_scene_put_(sc, shapes, n, if_revision, actual_revision);
    }
    if (!create)
        return RP_ERR_NOT_FOUND;
    /* A missing scene has revision 0 for compare-and-set purposes. */
    if (if_revision && *if_revision != 0) {
        if (actual_revision)
            *actual_revision = 0;
        return RP_ERR_REVISION;
    }
    return insert_new(st, i, name, shapes, n, RP_CHANGE_SCENE_PUT, out);
}

rp_status rp_store_replace(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                           const uint64_t *if_revision, bool create, rp_scene **out,
                           uint64_t *actual_revision)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    uint64_t current = found ? st->scenes[i]->revision : 0;
    if (!found && !create)
        return RP_ERR_NOT_FOUND;
    if (if_revision && *if_revision != current) {
        if (actual_revision)
            *actual_revision = current;
        return RP_ERR_REVISION;
    }
    if (!found)
        return insert_new(st, i, name, shapes, n, RP_CHANGE_SCENE_REPLACE, out);
    /* The new content is built beside the old, which goes only once the
     * new one stands: a failure leaves the scene untouched.  (Both count
     * against the store's memory meanwhile; max_shapes_per_scene applies
     * to the new content alone.) */
    rp_scene *sc;
    rp_status status = build_scene(st, name, shapes, n, &sc);
    if (status)
        return status;
    rp_change ch = {.kind = RP_CHANGE_SCENE_REPLACE,
                    .name = name,
                    .shapes = shapes,
                    .n_shapes = n,
                    .before = st->scenes[i]};
    if (!rp_store_may_commit_(st, &ch)) {
        st->shapes -= sc->count;
        rp_scene_free_(sc);
        return RP_ERR_ABORTED;
    }
    sc->revision = rp_store_take_revision_(st);
    st->shapes -= st->scenes[i]->count;
    rp_scene_release_(st->scenes[i]);
    st->scenes[i] = sc;
    if (out)
        *out = sc;
    return RP_OK;
}

rp_status rp_store_remove(rp_store *st, const char *name, const char *const *ids, size_t n,
                          const uint64_t *if_revision, rp_scene **out, size_t *removed,
                          uint64_t *actual_revision)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (!found)
        return RP_ERR_NOT_FOUND;
    if (if_revision && *if_revision != st->scenes[i]->revision) {
        if (actual_revision)
            *actual_revision = st->scenes[i]->revision;
        return RP_ERR_REVISION;
    }
    if (st->scenes[i]->objects)
        return rp_store_remove_objects_(st, name, ids, n, out, removed);
    rp_scene *sc = rp_store_writable_(st, i);
    if (!sc)
        return RP_ERR_NOMEM;
    if (out)
        *out = sc;
    return rp_scene_remove_(sc, ids, n, if_revision, removed, actual_revision);
}

rp_status rp_store_apply_edit_(rp_store *st, const char *name, rp_edit_ *ed, bool rebuild,
                               rp_scene **out)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (found && !rebuild) {
        rp_scene *sc = rp_store_writable_(st, i);
        if (!sc)
            return RP_ERR_NOMEM;
        if (out)
            *out = sc;
        return rp_scene_edit_(sc, ed, true);
    }
    /* Built beside the old content, as rp_store_replace does. */
    rp_scene *sc = rp_scene_new_(st, name);
    if (!sc)
        return RP_ERR_NOMEM;
    rp_status status = rp_scene_edit_(sc, ed, false);
    if (status) {
        rp_scene_free_(sc);
        return status;
    }
    if (!found && st->count == st->cap) {
        rp_scene **grown = rp_grow_(st->scenes, &st->cap, st->count + 1, sizeof *grown, 8);
        if (!grown) {
            st->shapes -= sc->count;
            sc->objects = NULL; /* the caller's still */
            rp_scene_free_(sc);
            return RP_ERR_NOMEM;
        }
        st->scenes = grown;
    }
    rp_change *ch = ed->change;
    ch->created = !found;
    ch->before = found ? st->scenes[i] : NULL;
    if (!rp_store_may_commit_(st, ch)) {
        st->shapes -= sc->count;
        sc->objects = NULL;
        rp_scene_free_(sc);
        return RP_ERR_ABORTED;
    }
    sc->revision = rp_store_take_revision_(st);
    if (found) {
        st->shapes -= st->scenes[i]->count;
        rp_scene_release_(st->scenes[i]);
    } else {
        memmove(&st->scenes[i + 1], &st->scenes[i], (st->count - i) * sizeof *st->scenes);
        st->count++;
    }
    st->scenes[i] = sc;
    if (out)
        *out = sc;
    return RP_OK;
}
