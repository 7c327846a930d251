/* SPDX-License-Identifier: MIT */
/*
 * Objects in scenes over the protocol (proto/PROTOCOL.md, Objects):
 * decoding `objects` for scene.put/create/replace, scene.move, `ignore` on
 * the queries, and the errors of the store's object mutations with the
 * path of the argument they concern.
 */
#include <stdlib.h>
#include <string.h>

#include "methods.h"

#define ID_MAX 128 /* rp_codec_valid_id's longest id */

void rpd_objects_free(rpd_objects *o)
{
    free(o->objects);
    free(o->shapes);
    memset(o, 0, sizeof *o);
}

size_t rpd_objects_shape_count(const cJSON *j)
{
    size_t n = 0;
    if (!cJSON_IsObject(j))
        return 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        const cJSON *s = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "shapes") : NULL;
        if (cJSON_IsObject(s))
            for (const cJSON *k = s->child; k; k = k->next)
                n++;
    }
    return n;
}

/* A valid object name: a shape id without '/' (its shapes' ids are
 * "name/id"). */
static bool object_name(rpd_req *req, const cJSON *c, const char *path)
{
    if (!rp_codec_valid_id(c->string) || strchr(c->string, '/'))
        return rpd_fail_path(req, path,
                             "object name must be 1-127 characters of [A-Za-z0-9_.:#-] (no '/')");
    return true;
}

bool rpd_decode_objects(rpd_req *req, const cJSON *j, const char *path, rpd_objects *out)
{
    static const char *const keys[] = {"pose", "shapes", NULL};
    rp_codec_err ce;
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(j))
        return rpd_fail_path(req, path, "must be an object of name: {pose, shapes}");
    rp_status dup = rp_codec_object_unique(j, path, &ce);
    if (dup == RP_ERR_NOMEM)
        return rpd_fail_status(req, dup);
    if (dup)
        return rpd_fail_params(req, &ce);
    size_t n = 0, total = rpd_objects_shape_count(j);
    for (const cJSON *c = j->child; c; c = c->next)
        n++;
    out->objects = malloc((n ? n : 1) * sizeof *out->objects);
    out->shapes = malloc((total ? total : 1) * sizeof *out->shapes);
    if (!out->objects || !out->shapes) {
        rpd_objects_free(out);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t used = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        char op[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX], sp[RP_CODEC_PATH_MAX];
        rp_codec_path_key(op, path, c->string);
        if (!object_name(req, c, op))
            goto fail;
        if (!cJSON_IsObject(c)) {
            rpd_fail_path(req, op, "must be an object {pose, shapes}");
            goto fail;
        }
        for (const cJSON *k = c->child; k; k = k->next) {
            bool known = false;
            for (size_t q = 0; keys[q]; q++)
                known |= strcmp(k->string, keys[q]) == 0;
            if (!known) {
                rpd_fail_path(req, rp_codec_path_key(sub, op, k->string),
                              "is not a member of an object (pose, shapes)");
                goto fail;
            }
        }
        rp_object_put *o = &out->objects[out->n];
        o->name = c->string;
        o->pose = rp_transform_identity();
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(c, "pose");
        if (pj && !rp_codec_pose(pj, rp_codec_path_key(sub, op, "pose"), &o->pose, &ce)) {
            rpd_fail_params(req, &ce);
            goto fail;
        }
        const cJSON *sj = cJSON_GetObjectItemCaseSensitive(c, "shapes");
        rp_codec_path_key(sp, op, "shapes");
        if (!cJSON_IsObject(sj)) {
            rpd_fail_path(req, sp, sj ? "must be an object of id: shape" : "is required");
            goto fail;
        }
        dup = rp_codec_object_unique(sj, sp, &ce);
        if (dup) {
            dup == RP_ERR_NOMEM ? rpd_fail_status(req, dup) : rpd_fail_params(req, &ce);
            goto fail;
        }
        o->shapes = &out->shapes[used];
        o->n_shapes = 0;
        for (const cJSON *k = sj->child; k; k = k->next) {
            rp_codec_path_key(sub, sp, k->string);
            if (!rp_codec_valid_id(k->string) ||
                strlen(c->string) + 1 + strlen(k->string) > ID_MAX) {
                rpd_fail_path(req, sub,
                              "shape id must be 1-128 characters of [A-Za-z0-9_.:/#-], "
                              "128 at most with the object's name and '/'");
                goto fail;
            }
            rp_shape_put *p = &out->shapes[used++];
            p->id = k->string;
            if (!rp_codec_shape(k, sub, &p->shape, &ce)) {
                rpd_fail_params(req, &ce);
                goto fail;
            }
            o->n_shapes++;
        }
        out->n++;
    }
    return true;
fail:
    rpd_objects_free(out);
    return false;
}

/* The path of an argument an object mutation refused. */
static void edit_path(char *path, const rp_edit_error *e, const cJSON *shapes_j,
                      const char *shapes_path, const cJSON *objects_j, const char *objects_path)
{
    const cJSON *base = e->what == RP_EDIT_SHAPE ? shapes_j : objects_j;
    const char *bp = e->what == RP_EDIT_SHAPE ? shapes_path : objects_path;
    const cJSON *c = base ? base->child : NULL;
    for (size_t k = 0; c && k < e->index; k++)
        c = c->next;
    if (!c) {
        snprintf(path, RP_CODEC_PATH_MAX, "%s", bp);
        return;
    }
    rp_codec_path_key(path, bp, c->string);
    if (e->what == RP_EDIT_OBJECT && e->shape != SIZE_MAX) {
        /* The object's shapes are its local shapes in request order. */
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "shapes");
        const cJSON *k = s ? s->child : NULL;
        for (size_t q = 0; k && q < e->shape; q++)
            k = k->next;
        if (k) {
            char op[RP_CODEC_PATH_MAX], sp[RP_CODEC_PATH_MAX];
            snprintf(op, sizeof op, "%s", path);
            rp_codec_path_key(sp, op, "shapes");
            rp_codec_path_key(path, sp, k->string);
        }
    }
}

bool rpd_edit_failed(rpd_req *req, rp_status st, const rp_edit_error *e, const cJSON *shapes_j,
                     const char *shapes_path, const cJSON *objects_j, const char *objects_path)
{
    if (e->what == RP_EDIT_NONE)
        return false;
    char path[RP_CODEC_PATH_MAX];
    edit_path(path, e, shapes_j, shapes_path, objects_j, objects_path);
    switch (st) {
    case RP_ERR_EXISTS:
        if (e->what == RP_EDIT_SHAPE)
            return !rpd_fail_path(req, path,
                                  "names an object of the scene or one of its shapes (an object "
                                  "\"o\" owns the ids \"o/…\"): move or put the object instead");
        return !rpd_fail_path(req, path,
                              "is taken by a shape of the scene's own (object names and their "
                              "\"name/id\" shape ids share the scene's ids)");
    case RP_ERR_NOT_FOUND:
        return !rpd_fail_path(req, path, "is no object of the scene");
    case RP_ERR_INVALID_ARG:
        return !rpd_fail_path(req, path, "names an object given twice");
    case RP_ERR_TRANSFORM:
        return !rpd_fail_path(req, path, "pose rotation must be orthonormal with det +1");
    default:
        break;
    }
    if (st >= RP_ERR_NONFINITE && st <= RP_ERR_RADIUS_NEGATIVE) {
        char reason[RP_CODEC_REASON_MAX];
        rpd_format(reason, sizeof reason, "moves a shape out of range (%s)", rp_status_str(st));
        return !rpd_fail_path(req, path, reason);
    }
    return false; /* the caller maps the rest */
}

bool rpd_decode_ignore(rpd_req *req, const cJSON *params, const rp_scene *sc, const char ***out,
                       size_t *n_out)
{
    char path[RP_CODEC_PATH_MAX];
    *out = NULL;
    *n_out = 0;
    const cJSON *j = rpd_param(params, "ignore", path);
    if (!j)
        return true;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of object names");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > RPD_MAX_IGNORE)
        return rpd_fail_path(req, path, "may name 64 objects at most");
    if (!sc)
        return n == 0 || rpd_fail_path(req, path, "needs a scene (params.scene)");
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_path_index(sub, path, k);
        if (!cJSON_IsString(c)) {
            free(names);
            return rpd_fail_path(req, sub, "must be an object name");
        }
        if (!rp_scene_object_find(sc, c->valuestring)) {
            free(names);
            return rpd_fail_not_found(req, "object", c->valuestring);
        }
        names[k] = c->valuestring;
    }
    *out = names;
    *n_out = n;
    return true;
}

/* ---- scene.move ------------------------------------------------------------------ */

bool rpd_m_scene_move(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "objects", "if_revision", NULL};
    char path[RP_CODEC_PATH_MAX], op[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rpd_check_keys(req, params, keys))
        return false;
    const char *name;
    if (!rp_codec_name(rpd_param(params, "scene", path), path, &name, &ce))
        return rpd_fail_params(req, &ce);
    rp_scene *sc = rp_store_find(req->core->store, name);
    if (!sc)
        return rpd_fail_not_found(req, "scene", name);
    uint64_t expected = 0, actual = 0;
    const cJSON *rj = rpd_param(params, "if_revision", path);
    if (rj && !rp_codec_uint(rj, path, &expected, &ce))
        return rpd_fail_params(req, &ce);
    const cJSON *oj = rpd_param(params, "objects", op);
    if (!cJSON_IsObject(oj))
        return rpd_fail_path(req, op, oj ? "must be an object of name: pose" : "is required");
    rp_status dup = rp_codec_object_unique(oj, op, &ce);
    if (dup)
        return dup == RP_ERR_NOMEM ? rpd_fail_status(req, dup) : rpd_fail_params(req, &ce);
    /* Priced by the shapes it moves (each an update of its entry and its
     * tree leaf), known before any pose is decoded. */
    size_t n = 0, moved = 0;
    for (const cJSON *c = oj->child; c; c = c->next, n++) {
        const rp_object *o = rp_scene_object_find(sc, c->string);
        moved += o ? rp_object_shape_count(o) : 0;
    }
    if (!rpd_charge_shapes(req, moved + n, rp_scene_shape_count(sc)))
        return false;
    rp_object_move *mv = malloc((n ? n : 1) * sizeof *mv);
    if (!mv)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = oj->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_path_key(sub, op, c->string);
        if (!object_name(req, c, sub) ||
            (!rp_codec_pose(c, sub, &mv[k].pose, &ce) && !rpd_fail_params(req, &ce))) {
            free(mv);
            return false;
        }
        mv[k].name = c->string;
    }
    rp_edit_error err;
    rp_status st =
        rp_store_move(req->core->store, name, mv, n, rj ? &expected : NULL, &sc, &actual, &err);
    free(mv);
    if (st == RP_ERR_NOT_FOUND && err.what == RP_EDIT_NONE)
        return rpd_fail_not_found(req, "scene", name);
    if (st == RP_ERR_NOT_FOUND) {
        const cJSON *c = oj->child;
        for (size_t q = 0; c && q < err.index; q++)
            c = c->next;
        return rpd_fail_not_found(req, "object", c ? c->string : "?");
    }
    if (st == RP_ERR_REVISION)
        return rpd_fail_revision(req, expected, actual);
    if (st && rpd_edit_failed(req, st, &err, NULL, "params.shapes", oj, op))
        return false;
    if (st)
        return rpd_fail_status(req, st);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "scene");
    rp_jw_string(w, rp_scene_name(sc));
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_scene_revision(sc));
    rp_jw_object_end(w);
    return true;
}
