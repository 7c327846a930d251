/* SPDX-License-Identifier: MIT */
/*
 * scene.* handlers: decode parameters into store calls, write results.
 * Every parameter is decoded and validated before the store is touched, and
 * the store applies a mutation all or nothing, so a failed request leaves
 * nothing half-changed.
 */
#include <stdlib.h>
#include <string.h>

#include "server/persistence/durable.h"
#include "methods.h"

/* ---- parameter decoding ----------------------------------------------------- */

/* params.scene: a valid scene name. */
static bool scene_name(rpd_req *req, const cJSON *params, const char **name)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rp_codec_name(rpd_param(params, "scene", path), path, name, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

/* The scene named by params.scene, or a -32001 error. */
static rp_scene *existing_scene(rpd_req *req, const cJSON *params)
{
    const char *name;
    if (!scene_name(req, params, &name))
        return NULL;
    rp_scene *sc = rp_store_find(req->core->store, name);
    if (!sc)
        rpd_fail_not_found(req, "scene", name);
    return sc;
}

/* Decodes {id: shape, ...} at `path` into a malloc'ed array (caller frees;
 * NULL with *n == 0 for an empty object).  Ids point into the cJSON tree.
 * An id given twice is rejected: JSON parsers disagree on which one wins.
 * Query shapes (`query`) are spheres and capsules only. */
static bool shape_map(rpd_req *req, const cJSON *j, const char *path, bool query,
                      rp_shape_put **out, size_t *n)
{
    rp_codec_err ce;
    *out = NULL;
    *n = 0;
    if (!cJSON_IsObject(j))
        return rpd_fail_path(req, path, j ? "must be an object of id: shape" : "is required");
    rp_status dup = rp_codec_object_unique(j, path, &ce);
    if (dup == RP_ERR_NOMEM)
        return rpd_fail_status(req, dup);
    if (dup)
        return rpd_fail_params(req, &ce);
    size_t count = 0;
    for (const cJSON *c = j->child; c; c = c->next)
        count++;
    if (count == 0)
        return true;
    rp_shape_put *items = malloc(count * sizeof *items);
    if (!items)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_path_key(sub, path, c->string);
        if (!rp_codec_valid_id(c->string)) {
            free(items);
            return rpd_fail_path(req, sub,
                                 "shape id must be 1-128 characters of [A-Za-z0-9_.:/#-]");
        }
        if (!(query ? rp_codec_sphere_or_capsule(c, sub, "query", &items[k].shape, &ce)
                    : rp_codec_shape(c, sub, &items[k].shape, &ce))) {
            free(items);
            return rpd_fail_params(req, &ce);
        }
        items[k].id = c->string;
    }
    *out = items;
    *n = count;
    return true;
}

/* Optional params.if_revision. */
static bool if_revision(rpd_req *req, const cJSON *params, uint64_t *value, bool *present)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *j = rpd_param(params, "if_revision", path);
    *present = j != NULL;
    if (j && !rp_codec_uint(j, path, value, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

/* params.ids: an array of shape ids.  Gives the ids (pointing into the cJSON
 * tree) and, when idx_out is not NULL, their storage indices in request
 * order, duplicates kept (sort_indices sorts them); with `must_exist` an id
 * the scene lacks is a -32001 error. */
static bool id_list(rpd_req *req, const cJSON *j, const char *path, const rp_scene *sc,
                    bool must_exist, const char ***ids_out, size_t **idx_out, size_t *n_out)
{
    *ids_out = NULL;
    if (idx_out)
        *idx_out = NULL;
    *n_out = 0;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, j ? "must be an array of shape ids" : "is required");
    size_t n = (size_t)cJSON_GetArraySize(j);
    const char **ids = malloc((n ? n : 1) * sizeof *ids);
    size_t *idx = idx_out ? malloc((n ? n : 1) * sizeof *idx) : NULL;
    if (!ids || (idx_out && !idx)) {
        free(ids);
        free(idx);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(sub, path, k);
        if (!rp_codec_id(c, sub, &ids[k], &ce)) {
            free(ids);
            free(idx);
            return rpd_fail_params(req, &ce);
        }
        if (idx) {
            idx[k] = rp_scene_find(sc, ids[k]);
            if (idx[k] == SIZE_MAX && must_exist) {
                free(ids);
                free(idx);
                return rpd_fail_not_found(req, "shape", c->valuestring);
            }
        }
    }
    *ids_out = ids;
    if (idx_out)
        *idx_out = idx;
    *n_out = n;
    return true;
}

/* ---- results ------------------------------------------------------------------ */

static void write_scene_rev(rp_jw *w, const rp_scene *sc)
{
    RP_JW_KEY(w, "scene");
    rp_jw_string(w, rp_scene_name(sc));
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_scene_revision(sc));
}

/* Maps a store status to the protocol's error. */
static bool store_error(rpd_req *req, rp_status st, const char *name, uint64_t expected,
                        uint64_t actual)
{
    switch (st) {
    case RP_ERR_EXISTS:
        return rpd_fail_exists(req, "scene", name);
    case RP_ERR_NOT_FOUND:
        return rpd_fail_not_found(req, "scene", name);
    case RP_ERR_REVISION:
        return rpd_fail_revision(req, expected, actual);
    case RP_ERR_LIMIT:
        return rpd_fail_limit(req, RPD_LIMIT_max_shapes_per_scene,
                              rp_store_get_limits(req->core->store).max_shapes_per_scene);
    case RP_ERR_HALFSPACES:
        return rpd_fail_limit(req, RPD_LIMIT_max_halfspaces_per_scene,
                              rp_store_get_limits(req->core->store).max_halfspaces_per_scene);
    default:
        return rpd_fail_status(req, st);
    }
}

/* A request that would create scene `name` (it does not exist yet) must
 * fit under max_scenes; one that changes an existing scene always may.
 * False, with the -32004 error set, when it does not fit. */
static bool scene_fits(rpd_req *req, const char *name)
{
    const rp_store *store = req->core->store;
    size_t max = req->core->limits.max_scenes;
    if (rp_store_scene_count(store) < max || rp_store_find(store, name))
        return true;
    return rpd_fail_limit(req, RPD_LIMIT_max_scenes, max);
}

/* Work of writing n shapes into (or removing n from) a scene that will
 * hold up to `after`: each shape's decode, id index entry, tree insertion
 * or removal (refits up the tree, ceil(log2(after + 1)) levels) and its
 * watch and journal records, plus a term for the cache misses of a large
 * tree.  Measured on the event loop of a 2-core machine: 0.65 us a shape
 * creating 50,000, 2 us putting into 250,000, 2.4-3.2 us into 500,000 to
 * 1M; this prices them at 1.5, 2.2 and 3 us (proto/PROTOCOL.md, the cost
 * model).  Under the default max_loop_work a line then holds about 65,000
 * shapes into a small scene and 33,000 into one of a million. */
#define SHAPE_WRITE_BASE 8
#define SHAPE_WRITE_PER_LEVEL 4
#define SHAPE_WRITE_SCENE_DIV 16384

bool rpd_charge_shapes(rpd_req *req, size_t n, size_t after)
{
    uint64_t per = SHAPE_WRITE_BASE + SHAPE_WRITE_PER_LEVEL * rpd_tree_depth(after) +
                   after / SHAPE_WRITE_SCENE_DIV;
    return rpd_charge_work(req, (uint64_t)n * per);
}

/* Work of building a cloud, per point given: its key, the radix sort's
 * passes, the centroid and the tree over the spheres (about 0.1 us a point
 * on the event loop of a 2-core machine, bench/cloud_bench), and the
 * decoding before.  A request's points together are also held to
 * max_shapes_per_scene. */
#define CLOUD_POINT_UNITS 5

static bool charge_clouds(rpd_req *req, const cJSON *clouds)
{
    size_t points = rpd_clouds_point_count(clouds);
    size_t max = rp_store_get_limits(req->core->store).max_shapes_per_scene;
    if (points > max)
        return rpd_fail_limit(req, RPD_LIMIT_max_shapes_per_scene, max);
    return rpd_charge_work(req, (uint64_t)points * CLOUD_POINT_UNITS);
}

/* Members of a JSON object or elements of an array (0 for anything else),
 * counted without decoding them. */
static size_t members(const cJSON *j)
{
    size_t n = 0;
    if (cJSON_IsObject(j) || cJSON_IsArray(j))
        for (const cJSON *c = j->child; c; c = c->next)
            n++;
    return n;
}

/* ---- ids ---------------------------------------------------------------------- */

/* A shape id and its storage index (or its position in a request). */
typedef struct id_index {
    const char *id;
    size_t index;
} id_index;

static int cmp_id_index(const void *a, const void *b)
{
    return strcmp(((const id_index *)a)->id, ((const id_index *)b)->id);
}

/* ---- handlers ------------------------------------------------------------------- */

bool rpd_m_scene_create(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "shapes", "objects", "robots", "clouds", NULL};
    const char *name;
    rp_shape_put *items = NULL;
    size_t n = 0;
    char path[RP_CODEC_PATH_MAX], opath[RP_CODEC_PATH_MAX], rpath[RP_CODEC_PATH_MAX],
        cpath[RP_CODEC_PATH_MAX];
    if (!rpd_check_keys(req, params, keys) || !scene_name(req, params, &name) ||
        !scene_fits(req, name))
        return false;
    const cJSON *shapes = rpd_param(params, "shapes", path);
    const cJSON *objects = rpd_param(params, "objects", opath);
    const cJSON *robots = rpd_param(params, "robots", rpath);
    const cJSON *clouds = rpd_param(params, "clouds", cpath);
    size_t count =
        members(shapes) + rpd_objects_shape_count(objects) + rpd_robots_shape_count(req, robots);
    if (!rpd_charge_shapes(req, count, count) || !charge_clouds(req, clouds) ||
        (shapes && !shape_map(req, shapes, path, false, &items, &n)))
        return false;
    rpd_objects objs = {0};
    rpd_robots robs = {0};
    rpd_clouds cls = {0};
    if (rp_store_find(req->core->store, name)) {
        free(items);
        return store_error(req, RP_ERR_EXISTS, name, 0, 0);
    }
    if ((objects && !rpd_decode_objects(req, objects, opath, &objs)) ||
        (robots && !rpd_decode_robots(req, robots, rpath, &robs)) ||
        (clouds && !rpd_decode_clouds(req, clouds, cpath, &cls))) {
        free(items);
        rpd_objects_free(&objs);
        rpd_robots_free(&robs);
        return false;
    }
    rp_scene *sc;
    rp_edit_error err;
    rp_cell cell = {items, n, objs.objects, objs.n, robs.robots, robs.n, cls.clouds, cls.n};
    rp_status st = rp_store_put_cell(req->core->store, name, &cell, NULL, true, &sc, NULL, &err);
    free(items);
    rpd_objects_free(&objs);
    rpd_robots_free(&robs);
    rpd_clouds_free(&cls);
    if (st && (rpd_edit_failed(req, st, &err, shapes, path, objects, opath, robots, rpath) ||
               rpd_cloud_failed(req, st, &err, clouds, cpath)))
        return false;
    if (st)
        return store_error(req, st, name, 0, 0);
    rp_jw_object_begin(w);
    write_scene_rev(w, sc);
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_scene_delete(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", NULL};
    const char *name;
    if (!rpd_check_keys(req, params, keys) || !scene_name(req, params, &name))
        return false;
    rp_status st = rp_store_delete(req->core->store, name);
    if (st)
        return store_error(req, st, name, 0, 0);
    rpd_write_deleted(w, "scene", name, rp_store_revision(req->core->store));
    return true;
}

bool rpd_m_scene_list(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    const rp_store *store = req->core->store;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "scenes");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_store_scene_count(store); i++) {
        const rp_scene *sc = rp_store_scene_at(store, i);
        rp_jw_object_begin(w);
        write_scene_rev(w, sc);
        RP_JW_KEY(w, "shapes");
        rp_jw_uint(w, rp_scene_shape_count(sc));
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
    rp_jw_object_end(w);
    return true;
}

/* Sorts requested storage indices by id: O(n log n), so that a long ids
 * list cannot hold the event loop (it once took an insertion sort 36 s for
 * 240,000 ids).  False when out of memory. */
static bool sort_indices(size_t *idx, size_t n, const rp_scene *sc)
{
    id_index *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return false;
    for (size_t k = 0; k < n; k++)
        tmp[k] = (id_index){rp_scene_id_at(sc, idx[k]), idx[k]};
    qsort(tmp, n, sizeof *tmp, cmp_id_index);
    for (size_t k = 0; k < n; k++)
        idx[k] = tmp[k].index;
    free(tmp);
    return true;
}

/* The fewest bytes the shapes of scene.get can take: an entry
 * "ID":{"sphere":{"center":[x,y,z],"radius":r}} is at least 43 bytes plus
 * the id (every number takes a digit or more), and no other kind is
 * shorter (a half-space takes 46, a box 89).  idx NULL: every shape
 * (storage indices are dense); else idx[0..n), sorted, an index repeated
 * counting once. */
static uint64_t shapes_reply_bound(const rp_scene *sc, const size_t *idx, size_t n)
{
    uint64_t bytes = 0;
    for (size_t k = 0; k < n; k++) {
        if (idx && k > 0 && idx[k] == idx[k - 1])
            continue;
        bytes += 43 + strlen(rp_scene_id_at(sc, idx ? idx[k] : k));
    }
    return bytes;
}

/* 0 an object of shapes, 1 a robot instance, 2 a point cloud. */
static int object_kind(const rp_object *o)
{
    return rp_object_is_robot(o) ? 1 : rp_object_cloud(o) ? 2 : 0;
}

bool rpd_m_scene_get(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "ids", NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    rp_scene *sc = existing_scene(req, params);
    if (!sc)
        return false;
    char path[RP_CODEC_PATH_MAX];
    const cJSON *ids_j = rpd_param(params, "ids", path);
    const char **ids = NULL;
    size_t *idx = NULL, n;
    if (ids_j) {
        if (!id_list(req, ids_j, path, sc, true, &ids, &idx, &n))
            return false;
        if (!sort_indices(idx, n, sc)) {
            free(ids);
            free(idx);
            return rpd_fail_status(req, RP_ERR_NOMEM);
        }
        if (!rpd_reply_fits(req, w, shapes_reply_bound(sc, idx, n), 1)) {
            free(ids);
            free(idx);
            return false;
        }
    } else {
        /* Refused before the sort when it cannot fit. */
        n = rp_scene_shape_count(sc);
        uint64_t cloud_bytes = 0; /* 16 bytes of base64 a sphere */
        for (size_t k = 0; k < rp_scene_object_count(sc); k++) {
            const rp_cloud *c = rp_object_cloud(rp_scene_object_at(sc, k));
            cloud_bytes += c ? 16 * (uint64_t)rp_cloud_size(c) : 0;
        }
        if (!rpd_reply_fits(req, w, shapes_reply_bound(sc, NULL, n) + cloud_bytes, 1))
            return false;
        idx = malloc((n ? n : 1) * sizeof *idx);
        if (!idx || rp_scene_sorted(sc, idx)) {
            free(idx);
            return rpd_fail_status(req, RP_ERR_NOMEM);
        }
    }
    rp_jw_object_begin(w);
    write_scene_rev(w, sc);
    RP_JW_KEY(w, "shapes");
    rp_jw_object_begin(w);
    for (size_t k = 0; k < n && !rp_jw_failed(w); k++) {
        if (k > 0 && idx[k] == idx[k - 1])
            continue; /* an id asked for twice */
        /* The whole scene: its own shapes here, its objects' below. */
        if (!ids_j && rp_scene_shape_object(sc, idx[k]))
            continue;
        rp_jw_key(w, rp_scene_id_at(sc, idx[k]));
        rp_shape shape = rp_scene_shape_at(sc, idx[k]);
        rp_jw_shape(w, &shape);
    }
    rp_jw_object_end(w);
    /* Objects, robot instances and clouds, each kind under its key (left
     * out when there are none). */
    static const char *const kinds[] = {"objects", "robots", "clouds"};
    size_t n_kind[3] = {0, 0, 0}, n_obj = rp_scene_object_count(sc);
    for (size_t k = 0; k < n_obj; k++)
        n_kind[object_kind(rp_scene_object_at(sc, k))]++;
    for (int kind = 0; kind < 3 && !ids_j; kind++) {
        if (n_kind[kind] == 0)
            continue;
        rp_jw_key(w, kinds[kind]);
        rp_jw_object_begin(w);
        for (size_t k = 0; k < n_obj && !rp_jw_failed(w); k++) {
            const rp_object *o = rp_scene_object_at(sc, k);
            if (object_kind(o) != kind)
                continue;
            rp_jw_key(w, rp_object_name(o));
            if (kind == 1)
                rp_jw_robot(w, o);
            else if (kind == 2)
                rp_jw_cloud(w, rp_object_cloud(o));
            else
                rp_jw_object(w, sc, o);
        }
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
    free(ids);
    free(idx);
    return true;
}

/* scene.put and scene.replace: the same params, content merged or swapped. */
static bool scene_write(rpd_req *req, const cJSON *params, rp_jw *w, bool replace)
{
    static const char *const keys[] = {"scene",  "shapes",      "objects", "robots",
                                       "clouds", "if_revision", "create",  NULL};
    const char *name;
    uint64_t expected = 0, actual = 0;
    bool has_rev, create;
    char path[RP_CODEC_PATH_MAX], opath[RP_CODEC_PATH_MAX], rpath[RP_CODEC_PATH_MAX],
        cpath[RP_CODEC_PATH_MAX];
    rp_shape_put *items;
    size_t n;
    if (!rpd_check_keys(req, params, keys) || !scene_name(req, params, &name) ||
        !if_revision(req, params, &expected, &has_rev) ||
        !rpd_optional_bool(req, params, "create", false, &create) ||
        (create && !scene_fits(req, name)))
        return false;
    /* Priced before decoding: a put inserts into the scene as it is, a
     * replace builds the new content and frees the old. */
    const cJSON *shapes = rpd_param(params, "shapes", path);
    const cJSON *objects = rpd_param(params, "objects", opath);
    const cJSON *robots = rpd_param(params, "robots", rpath);
    const cJSON *clouds = rpd_param(params, "clouds", cpath);
    const rp_scene *cur = rp_store_find(req->core->store, name);
    size_t count =
        members(shapes) + rpd_objects_shape_count(objects) + rpd_robots_shape_count(req, robots);
    size_t now = cur ? rp_scene_shape_count(cur) : 0;
    if (!rpd_charge_shapes(req, count, replace ? count : now + count) ||
        (replace && !rpd_charge_work(req, now)) || !charge_clouds(req, clouds))
        return false;
    /* `shapes` may be left out when `objects`, `robots` or `clouds` is given. */
    if ((objects || robots || clouds) && !shapes) {
        items = NULL;
        n = 0;
    } else if (!shape_map(req, shapes, path, false, &items, &n)) {
        return false;
    }
    rpd_objects objs = {0};
    rpd_robots robs = {0};
    rpd_clouds cls = {0};
    if ((objects && !rpd_decode_objects(req, objects, opath, &objs)) ||
        (robots && !rpd_decode_robots(req, robots, rpath, &robs)) ||
        (clouds && !rpd_decode_clouds(req, clouds, cpath, &cls))) {
        free(items);
        rpd_objects_free(&objs);
        rpd_robots_free(&robs);
        return false;
    }
    rp_scene *sc;
    const uint64_t *expect = has_rev ? &expected : NULL;
    rp_edit_error err = {RP_EDIT_NONE, 0, 0};
    /* Watchers hear of it through the store's change record
     * (rpd_watch_on_change), as the journal does.  A scene with objects
     * takes the object-aware calls, which also refuse ids its objects own. */
    rp_store *store = req->core->store;
    rp_status st;
    rp_cell cell = {items, n, objs.objects, objs.n, robs.robots, robs.n, cls.clouds, cls.n};
    if (objects || robots || clouds || (cur && rp_scene_object_count(cur)))
        st = replace ? rp_store_replace_cell(store, name, &cell, expect, create, &sc, &actual, &err)
                     : rp_store_put_cell(store, name, &cell, expect, create, &sc, &actual, &err);
    else
        st = replace ? rp_store_replace(store, name, items, n, expect, create, &sc, &actual)
                     : rp_store_put(store, name, items, n, expect, create, &sc, &actual);
    free(items);
    rpd_objects_free(&objs);
    rpd_robots_free(&robs);
    rpd_clouds_free(&cls);
    if (st && (rpd_edit_failed(req, st, &err, shapes, path, objects, opath, robots, rpath) ||
               rpd_cloud_failed(req, st, &err, clouds, cpath)))
        return false;
    if (st)
        return store_error(req, st, name, expected, actual);
    rp_jw_object_begin(w);
    write_scene_rev(w, sc);
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_scene_put(rpd_req *req, const cJSON *params, rp_jw *w)
{
    return scene_write(req, params, w, false);
}

bool rpd_m_scene_replace(rpd_req *req, const cJSON *params, rp_jw *w)
{
    return scene_write(req, params, w, true);
}

bool rpd_m_scene_remove(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "ids", "if_revision", NULL};
    uint64_t expected = 0, actual = 0;
    bool has_rev;
    char path[RP_CODEC_PATH_MAX];
    if (!rpd_check_keys(req, params, keys))
        return false;
    rp_scene *sc = existing_scene(req, params);
    if (!sc || !if_revision(req, params, &expected, &has_rev))
        return false;
    const char **ids;
    size_t n, removed = 0;
    const cJSON *ids_j = rpd_param(params, "ids", path);
    if (!rpd_charge_shapes(req, members(ids_j), rp_scene_shape_count(sc)) ||
        !id_list(req, ids_j, path, sc, false, &ids, NULL, &n))
        return false;
    /* An object's shape goes with its object, not alone (an id names an
     * object or a shape of the scene's own). */
    for (size_t k = 0; k < n && rp_scene_object_count(sc); k++) {
        const char *slash = strchr(ids[k], '/');
        char owner[RP_CODEC_PATH_MAX];
        size_t len = slash ? (size_t)(slash - ids[k]) : 0;
        if (!slash || len >= sizeof owner)
            continue;
        memcpy(owner, ids[k], len);
        owner[len] = 0;
        const rp_object *o = rp_scene_object_find(sc, owner);
        if (o) {
            char sub[RP_CODEC_PATH_MAX];
            free(ids);
            return rpd_fail_path(req, rp_codec_path_index(sub, path, k),
                                 rp_object_cloud(o)
                                     ? "is a sphere of a point cloud: remove the cloud by its "
                                       "name, or put it again without the point"
                                     : "is a shape of an object: remove the object by its name, "
                                       "or put the object without that shape");
        }
    }
    rp_status st = rp_store_remove(req->core->store, rp_scene_name(sc), ids, n,
                                   has_rev ? &expected : NULL, &sc, &removed, &actual);
    free(ids);
    if (st)
        return store_error(req, st, rp_scene_name(sc), expected, actual);
    rp_jw_object_begin(w);
    write_scene_rev(w, sc);
    RP_JW_KEY(w, "removed");
    rp_jw_uint(w, removed);
    rp_jw_object_end(w);
    return true;
}

/* ---- queries --------------------------------------------------------------------- */

/* Query shapes: params.shape (one, query id null) or params.shapes
 * {qid: shape}, sorted by qid so that ties resolve deterministically. */
typedef struct query_set {
    rp_shape *shapes;
    const char **qids; /* NULL for a single `shape` */
    size_t n;
} query_set;

static int cmp_put_by_id(const void *a, const void *b)
{
    return strcmp(((const rp_shape_put *)a)->id, ((const rp_shape_put *)b)->id);
}

static bool query_shapes(rpd_req *req, const cJSON *params, query_set *qs)
{
    char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX];
    const cJSON *one = rpd_param(params, "shape", p1);
    const cJSON *many = rpd_param(params, "shapes", p2);
    memset(qs, 0, sizeof *qs);
    if ((one != NULL) == (many != NULL))
        return rpd_fail_path(req, "params", "must have exactly one of shape, shapes");
    qs->shapes = malloc(sizeof *qs->shapes);
    if (!qs->shapes)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    if (one) {
        rp_codec_err ce;
        qs->n = 1;
        if (!rp_codec_sphere_or_capsule(one, p1, "query", &qs->shapes[0], &ce))
            return rpd_fail_params(req, &ce);
        return true;
    }
    rp_shape_put *items;
    size_t n;
    if (!shape_map(req, many, p2, true, &items, &n))
        return false;
    if (n == 0)
        return rpd_fail_path(req, p2, "must hold at least one shape");
    qsort(items, n, sizeof *items, cmp_put_by_id);
    rp_shape *shapes = realloc(qs->shapes, n * sizeof *shapes);
    qs->qids = malloc(n * sizeof *qs->qids);
    if (!shapes || !qs->qids) {
        if (shapes)
            qs->shapes = shapes;
        free(items);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    qs->shapes = shapes;
    for (size_t k = 0; k < n; k++) {
        qs->shapes[k] = items[k].shape;
        qs->qids[k] = items[k].id;
    }
    qs->n = n;
    free(items);
    return true;
}

static void query_set_free(query_set *qs)
{
    free(qs->shapes);
    free(qs->qids);
}

static void write_query_id(rp_jw *w, const query_set *qs, size_t q)
{
    if (qs->qids)
        rp_jw_string(w, qs->qids[q]);
    else
        rp_jw_null(w);
}

static void write_pairs(rp_jw *w, const rp_scene *sc, const query_set *qs,
                        const rp_query_result *res)
{
    RP_JW_KEY(w, "pairs");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < res->n_pairs && !rp_jw_failed(w); i++) {
        const rp_pair *p = &res->pairs[i];
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "query");
        write_query_id(w, qs, p->query);
        RP_JW_KEY(w, "shape");
        rp_jw_scene_id(w, sc, p->shape);
        RP_JW_KEY(w, "distance");
        rp_jw_double(w, p->distance);
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
}

/* Shared by scene.distance and scene.check: decodes the scene, query shapes
 * and optional ids, runs the query.  On failure everything is released
 * (see run_query). */
static bool run_query_inner(rpd_req *req, const cJSON *params, const rp_jw *w, rp_scene **sc_out,
                            query_set *qs, rp_query *q, rp_query_result *res)
{
    char path[RP_CODEC_PATH_MAX];
    const char **ids = NULL;
    size_t *idx = NULL, n = 0;
    memset(qs, 0, sizeof *qs);
    rp_scene *sc = existing_scene(req, params);
    if (!sc)
        return false;
    const cJSON *ids_j = rpd_param(params, "ids", path);
    if (ids_j && !id_list(req, ids_j, path, sc, true, &ids, &idx, &n))
        return false;
    free(ids);
    if (!query_shapes(req, params, qs)) {
        free(idx);
        return false;
    }
    const char **ignore = NULL;
    size_t n_ignore = 0;
    if (!rpd_decode_ignore(req, params, sc, &ignore, &n_ignore)) {
        free(idx);
        return false;
    }
    q->ignore = ignore;
    q->n_ignore = n_ignore;
    q->shapes = qs->shapes;
    q->n_shapes = qs->n;
    q->subset = idx;
    q->n_subset = n;
    q->max_pairs = rpd_max_pairs(w);
    /* A subset is scanned pair by pair; the whole scene is searched through
     * its tree. */
    uint64_t per_query =
        idx ? n : rpd_tree_depth(rp_scene_shape_count(sc) + rp_scene_cloud_spheres(sc));
    uint64_t charged = (uint64_t)qs->n * (per_query ? per_query : 1);
    if (!rpd_charge_work(req, charged)) {
        free(idx);
        free(ignore);
        return false;
    }
    rp_work meter = rpd_walk_meter(req, charged, 1.0);
    q->work = &meter;
    rp_status st = rp_scene_query(sc, q, res);
    q->work = NULL;
    free(idx);
    free(ignore);
    q->ignore = NULL;
    if (st == RP_ERR_LIMIT)
        return rpd_fail_limit(req, RPD_LIMIT_max_reply_bytes, req->core->limits.max_reply_bytes);
    if (!rpd_walk_settle(req, &meter, charged, st))
        return false;
    *sc_out = sc;
    return true;
}

/* run_query_inner, releasing the query set when it fails, so handlers only
 * clean up after success. */
static bool run_query(rpd_req *req, const cJSON *params, const rp_jw *w, rp_scene **sc_out,
                      query_set *qs, rp_query *q, rp_query_result *res)
{
    if (run_query_inner(req, params, w, sc_out, qs, q, res))
        return true;
    query_set_free(qs);
    return false;
}

bool rpd_m_scene_distance(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene",  "shape",        "shapes", "ids",
                                       "ignore", "max_distance", NULL};
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    rp_query q;
    memset(&q, 0, sizeof q);
    if (!rpd_check_keys(req, params, keys))
        return false;
    const cJSON *md = rpd_param(params, "max_distance", path);
    if (md) {
        if (!rp_codec_number(md, path, &q.threshold, &ce))
            return rpd_fail_params(req, &ce);
        q.collect = true;
    }
    rp_scene *sc;
    query_set qs;
    rp_query_result res;
    if (!run_query(req, params, w, &sc, &qs, &q, &res))
        return false;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_scene_revision(sc));
    RP_JW_KEY(w, "distance");
    if (res.has_min)
        rp_jw_double(w, res.nearest.distance);
    else
        rp_jw_null(w);
    RP_JW_KEY(w, "nearest");
    if (res.has_min) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "query");
        write_query_id(w, &qs, res.nearest.query);
        RP_JW_KEY(w, "shape");
        rp_jw_scene_id(w, sc, res.nearest.shape);
        rp_jw_object_end(w);
    } else {
        rp_jw_null(w);
    }
    if (q.collect)
        write_pairs(w, sc, &qs, &res);
    rp_jw_object_end(w);
    rp_query_result_free(&res);
    query_set_free(&qs);
    return true;
}

bool rpd_m_scene_check(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene",  "shape",      "shapes", "ids",
                                       "margin", "first_only", "ignore", NULL};
    rp_query q;
    memset(&q, 0, sizeof q);
    if (!rpd_check_keys(req, params, keys) ||
        !rpd_number_param(req, params, "margin", &q.threshold) ||
        !rpd_optional_bool(req, params, "first_only", false, &q.first_only))
        return false;
    q.collect = true;
    q.no_nearest = true; /* scene.check reports violating pairs only */
    rp_scene *sc;
    query_set qs;
    rp_query_result res;
    if (!run_query(req, params, w, &sc, &qs, &q, &res))
        return false;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_scene_revision(sc));
    RP_JW_KEY(w, "violates");
    rp_jw_bool(w, res.n_pairs > 0);
    write_pairs(w, sc, &qs, &res);
    rp_jw_object_end(w);
    rp_query_result_free(&res);
    query_set_free(&qs);
    return true;
}
