/* SPDX-License-Identifier: MIT */
/*
 * Objects in scenes over the protocol (proto/PROTOCOL.md, Objects):
 * decoding `objects` for scene.put/create/replace, scene.move, `ignore` on
 * the queries, and the errors of the store's object mutations with the
 * path of the argument they concern.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"
#include "rpc.h"

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

/* A map of names (objects, robots, moves) at `path`: a JSON object, each
 * name once; `what` says what its members are, for the error. */
static bool name_map(rpd_req *req, const cJSON *j, const char *path, const char *what)
{
    rp_codec_err ce;
    if (!cJSON_IsObject(j)) {
        char reason[RP_CODEC_REASON_MAX];
        rpd_format(reason, sizeof reason, "must be an object of name: %s", what);
        return rpd_fail_path(req, path, reason);
    }
    rp_status dup = rp_codec_object_unique(j, path, &ce);
    if (dup)
        return dup == RP_ERR_NOMEM ? rpd_fail_status(req, dup) : rpd_fail_params(req, &ce);
    return true;
}

/* One member c of such a map, at `path`: a good name, and an object with
 * only the members `keys` (`what` lists them). */
static bool name_member(rpd_req *req, const cJSON *c, const char *path, const char *const *keys,
                        const char *what)
{
    rp_codec_err ce;
    if (!object_name(req, c, path))
        return false;
    if (!cJSON_IsObject(c)) {
        char reason[RP_CODEC_REASON_MAX];
        rpd_format(reason, sizeof reason, "must be an object %s", what);
        return rpd_fail_path(req, path, reason);
    }
    return rp_codec_object_keys(c, path, keys, &ce) || rpd_fail_params(req, &ce);
}

bool rpd_decode_objects(rpd_req *req, const cJSON *j, const char *path, rpd_objects *out)
{
    static const char *const keys[] = {"pose", "shapes", NULL};
    rp_codec_err ce;
    memset(out, 0, sizeof *out);
    if (!name_map(req, j, path, "{pose, shapes}"))
        return false;
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
        if (!name_member(req, c, op, keys, "{pose, shapes}"))
            goto fail;
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
        rp_status dup = rp_codec_object_unique(sj, sp, &ce);
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

/* ---- robot instances ------------------------------------------------------------ */

void rpd_robots_free(rpd_robots *r)
{
    free(r->robots);
    free(r->joints);
    memset(r, 0, sizeof *r);
}

/* The model named by a robot's "model" member, or NULL. */
static const rp_model *robot_model(const rpd_req *req, const cJSON *c)
{
    const cJSON *m = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "model") : NULL;
    return cJSON_IsString(m) ? rp_store_model_find(req->core->store, m->valuestring) : NULL;
}

size_t rpd_robots_shape_count(const rpd_req *req, const cJSON *j)
{
    size_t n = 0;
    if (!cJSON_IsObject(j))
        return 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        const rp_model *m = robot_model(req, c);
        n += m ? rp_model_link_count(m) : 0;
    }
    return n;
}

bool rpd_decode_robots(rpd_req *req, const cJSON *j, const char *path, rpd_robots *out)
{
    static const char *const keys[] = {"model", "joints", "base", NULL};
    rp_codec_err ce;
    memset(out, 0, sizeof *out);
    if (!name_map(req, j, path, "{model, joints, base}"))
        return false;
    size_t n = 0, dofs = 0;
    for (const cJSON *c = j->child; c; c = c->next, n++) {
        const rp_model *m = robot_model(req, c);
        dofs += m ? rp_model_dof(m) : 0;
    }
    out->robots = calloc(n ? n : 1, sizeof *out->robots);
    out->joints = malloc((dofs ? dofs : 1) * sizeof *out->joints);
    if (!out->robots || !out->joints) {
        rpd_robots_free(out);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t used = 0;
    for (const cJSON *c = j->child; c; c = c->next) {
        char rp[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX];
        rp_codec_path_key(rp, path, c->string);
        if (!name_member(req, c, rp, keys, "{model, joints, base}"))
            goto fail;
        const cJSON *mj = cJSON_GetObjectItemCaseSensitive(c, "model");
        const char *model;
        if (!rp_codec_name(mj, rp_codec_path_key(sub, rp, "model"), &model, &ce)) {
            rpd_fail_params(req, &ce);
            goto fail;
        }
        const rp_model *m = rp_store_model_find(req->core->store, model);
        if (!m) {
            rpd_fail_not_found(req, "model", model);
            goto fail;
        }
        if (!rp_model_is_kinematic(m)) {
            rpd_fail_path(req, sub,
                          "must name a kinematic model (one defined by joints or a URDF): a "
                          "robot instance is placed by its joints");
            goto fail;
        }
        rp_robot_put *r = &out->robots[out->n];
        r->name = c->string;
        r->model = model;
        r->base = rp_transform_identity();
        const cJSON *bj = cJSON_GetObjectItemCaseSensitive(c, "base");
        if (bj && !rp_codec_pose(bj, rp_codec_path_key(sub, rp, "base"), &r->base, &ce)) {
            rpd_fail_params(req, &ce);
            goto fail;
        }
        const cJSON *jj = cJSON_GetObjectItemCaseSensitive(c, "joints");
        r->joints = NULL; /* the model's defaults */
        if (jj) {
            if (!rpd_decode_joint_vector(req, m, jj, rp_codec_path_key(sub, rp, "joints"),
                                         &out->joints[used]))
                goto fail;
            r->joints = &out->joints[used];
            used += rp_model_dof(m);
        }
        out->n++;
    }
    return true;
fail:
    rpd_robots_free(out);
    return false;
}

/* The path of an argument an object mutation refused. */
static void edit_path(char *path, const rp_edit_error *e, const cJSON *shapes_j,
                      const char *shapes_path, const cJSON *objects_j, const char *objects_path,
                      const cJSON *robots_j, const char *robots_path)
{
    bool robot = e->what == RP_EDIT_ROBOT || e->what == RP_EDIT_ROBOT_MOVE;
    const cJSON *base = e->what == RP_EDIT_SHAPE ? shapes_j : robot ? robots_j : objects_j;
    const char *bp = e->what == RP_EDIT_SHAPE ? shapes_path : robot ? robots_path : objects_path;
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
                     const char *shapes_path, const cJSON *objects_j, const char *objects_path,
                     const cJSON *robots_j, const char *robots_path)
{
    if (e->what == RP_EDIT_NONE || e->what == RP_EDIT_CLOUD)
        return false; /* (a cloud's: rpd_cloud_failed) */
    char path[RP_CODEC_PATH_MAX];
    edit_path(path, e, shapes_j, shapes_path, objects_j, objects_path, robots_j, robots_path);
    bool robot = e->what == RP_EDIT_ROBOT || e->what == RP_EDIT_ROBOT_MOVE;
    if (robot && st == RP_ERR_INVALID_ARG)
        return !rpd_fail_path(req, path,
                              e->what == RP_EDIT_ROBOT
                                  ? "names an object or robot given twice"
                                  : "names no robot instance (an object moves by params.objects), "
                                    "or one given twice");
    if (e->what == RP_EDIT_MOVE && st == RP_ERR_INVALID_ARG)
        return !rpd_fail_path(req, path,
                              "names a robot instance (robots move by params.robots) or a "
                              "point cloud (put it again), or an object given twice");
    if (robot && st == RP_ERR_NONFINITE && e->shape == SIZE_MAX)
        return !rpd_fail_path(req, path, "joint values must be finite");
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
    static const char *const keys[] = {"scene", "objects", "robots", "if_revision", NULL};
    static const char *const robot_keys[] = {"joints", "base", NULL};
    char path[RP_CODEC_PATH_MAX], op[RP_CODEC_PATH_MAX], rp[RP_CODEC_PATH_MAX];
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
    const cJSON *vj = rpd_param(params, "if_revision", path);
    if (vj && !rp_codec_uint(vj, path, &expected, &ce))
        return rpd_fail_params(req, &ce);
    const cJSON *oj = rpd_param(params, "objects", op), *rj = rpd_param(params, "robots", rp);
    if (!oj && !rj)
        return rpd_fail_path(req, "params", "must have objects or robots (or both) to move");
    if ((oj && !name_map(req, oj, op, "pose")) || (rj && !name_map(req, rj, rp, "{joints, base}")))
        return false;
    /* Priced by the shapes it moves (each an update of its entry and its
     * tree leaf; a robot's also its forward kinematics), known before any
     * pose is decoded. */
    size_t n_obj = 0, n_rob = 0, moved = 0, dofs = 0;
    for (int pass = 0; pass < 2; pass++)
        for (const cJSON *c = (pass ? rj : oj) ? (pass ? rj : oj)->child : NULL; c; c = c->next) {
            const rp_object *o = rp_scene_object_find(sc, c->string);
            moved += o ? rp_object_shape_count(o) + 1 : 1;
            if (o && rp_object_is_robot(o))
                dofs += rp_model_dof(rp_object_model(o));
            pass ? n_rob++ : n_obj++;
        }
    if (!rpd_charge_shapes(req, moved + dofs, rp_scene_shape_count(sc)))
        return false;
    rp_object_move *mv = malloc((n_obj ? n_obj : 1) * sizeof *mv);
    rp_robot_move *rm = malloc((n_rob ? n_rob : 1) * sizeof *rm);
    rp_transform *bases = malloc((n_rob ? n_rob : 1) * sizeof *bases);
    double *q = malloc((dofs ? dofs : 1) * sizeof *q);
    bool ok = mv && rm && bases && q;
    if (!ok)
        rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = oj && ok ? oj->child : NULL; c && ok; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_path_key(sub, op, c->string);
        ok = object_name(req, c, sub) &&
             (rp_codec_pose(c, sub, &mv[k].pose, &ce) || rpd_fail_params(req, &ce));
        mv[k].name = c->string;
    }
    size_t used = 0;
    k = 0;
    for (const cJSON *c = rj && ok ? rj->child : NULL; c && ok; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX], mem[RP_CODEC_PATH_MAX];
        rp_codec_path_key(sub, rp, c->string);
        rm[k] = (rp_robot_move){c->string, NULL, NULL};
        ok = object_name(req, c, sub);
        const rp_object *o = ok ? rp_scene_object_find(sc, c->string) : NULL;
        if (ok && !o)
            ok = rpd_fail_not_found(req, "robot", c->string);
        else if (ok && rp_object_cloud(o))
            ok = rpd_fail_path(req, sub, "is a point cloud, not a robot instance: put it again");
        else if (ok && !rp_object_is_robot(o))
            ok = rpd_fail_path(req, sub,
                               "is an object, not a robot instance: move it by "
                               "params.objects");
        else if (ok)
            ok = name_member(req, c, sub, robot_keys, "{joints, base}");
        const cJSON *jj = ok ? cJSON_GetObjectItemCaseSensitive(c, "joints") : NULL;
        const cJSON *bj = ok ? cJSON_GetObjectItemCaseSensitive(c, "base") : NULL;
        if (jj) {
            const rp_model *m = rp_object_model(o);
            ok = rpd_decode_joint_vector(req, m, jj, rp_codec_path_key(mem, sub, "joints"),
                                         &q[used]);
            rm[k].joints = &q[used];
            used += rp_model_dof(m);
        }
        if (bj && ok) {
            ok = rp_codec_pose(bj, rp_codec_path_key(mem, sub, "base"), &bases[k], &ce) ||
                 rpd_fail_params(req, &ce);
            rm[k].base = &bases[k];
        }
    }
    rp_status st = RP_OK;
    rp_edit_error err = {RP_EDIT_NONE, 0, 0};
    if (ok) {
        rp_cell_moves m = {mv, n_obj, rm, n_rob};
        st = rp_store_move_cell(req->core->store, name, &m, vj ? &expected : NULL, &sc, &actual,
                                &err);
    }
    free(mv);
    free(rm);
    free(bases);
    free(q);
    if (!ok)
        return false;
    if (st == RP_ERR_NOT_FOUND && err.what == RP_EDIT_NONE)
        return rpd_fail_not_found(req, "scene", name);
    if (st == RP_ERR_NOT_FOUND) {
        const cJSON *c = err.what == RP_EDIT_MOVE ? oj->child : rj->child;
        for (size_t i = 0; c && i < err.index; i++)
            c = c->next;
        return rpd_fail_not_found(req, err.what == RP_EDIT_MOVE ? "object" : "robot",
                                  c ? c->string : "?");
    }
    if (st == RP_ERR_REVISION)
        return rpd_fail_revision(req, expected, actual);
    if (st && rpd_edit_failed(req, st, &err, NULL, "params.shapes", oj, op, rj, rp))
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

/* ---- scene.attach, scene.detach ---------------------------------------------------- */

/* params.scene, the scene and an optional if_revision; false with the
 * error set. */
static bool mutation_target(rpd_req *req, const cJSON *params, const char **name,
                            uint64_t *expected, bool *has_rev)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rp_codec_name(rpd_param(params, "scene", path), path, name, &ce))
        return rpd_fail_params(req, &ce);
    if (!rp_store_find(req->core->store, *name))
        return rpd_fail_not_found(req, "scene", *name);
    const cJSON *vj = rpd_param(params, "if_revision", path);
    *has_rev = vj != NULL;
    if (vj && !rp_codec_uint(vj, path, expected, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

static void write_scene_revision_of(rp_jw *w, const rp_scene *sc)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "scene");
    rp_jw_string(w, rp_scene_name(sc));
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_scene_revision(sc));
    rp_jw_object_end(w);
}

/* A name parameter: a string (its syntax is checked by the store's
 * lookups: a name that is no object is not found). */
static bool name_param(rpd_req *req, const cJSON *params, const char *key, const char **out)
{
    char path[RP_CODEC_PATH_MAX];
    const cJSON *j = rpd_param(params, key, path);
    if (!cJSON_IsString(j))
        return rpd_fail_path(req, path, j ? "must be a string" : "is required");
    *out = j->valuestring;
    return true;
}

bool rpd_m_scene_attach(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "object",      "robot", "link",
                                       "rel",   "if_revision", NULL};
    const char *name = NULL, *object = NULL, *robot = NULL, *link = NULL;
    uint64_t expected = 0, actual = 0;
    bool has_rev;
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rpd_check_keys(req, params, keys) ||
        !mutation_target(req, params, &name, &expected, &has_rev) ||
        !name_param(req, params, "object", &object) || !name_param(req, params, "robot", &robot) ||
        !name_param(req, params, "link", &link))
        return false;
    rp_transform rel;
    const cJSON *rj = rpd_param(params, "rel", path);
    if (rj && !rp_codec_pose(rj, path, &rel, &ce))
        return rpd_fail_params(req, &ce);
    const rp_scene *cur = rp_store_find(req->core->store, name);
    const rp_object *o = rp_scene_object_find(cur, object);
    if (!rpd_charge_shapes(req, (o ? rp_object_shape_count(o) : 0) + 1, rp_scene_shape_count(cur)))
        return false;
    rp_scene *sc;
    rp_edit_error err;
    rp_status st = rp_store_attach(req->core->store, name, object, robot, link, rj ? &rel : NULL,
                                   has_rev ? &expected : NULL, &sc, &actual, &err);
    if (st == RP_ERR_REVISION)
        return rpd_fail_revision(req, expected, actual);
    const rp_object *r = rp_scene_object_find(cur, robot);
    if (st == RP_ERR_NOT_FOUND && err.what == RP_EDIT_OBJECT)
        return rpd_fail_not_found(req, "object", object);
    if (st == RP_ERR_NOT_FOUND && !r)
        return rpd_fail_not_found(req, "robot", robot);
    if (st == RP_ERR_NOT_FOUND)
        return rpd_fail_path(req, "params.link", "is no link of the robot's model (see model.get)");
    if (st == RP_ERR_INVALID_ARG && err.what == RP_EDIT_OBJECT && o && rp_object_cloud(o))
        return rpd_fail_path(req, "params.object",
                             "is a point cloud: only objects of shapes are attached");
    if (st == RP_ERR_INVALID_ARG)
        return rpd_fail_path(req, err.what == RP_EDIT_OBJECT ? "params.object" : "params.robot",
                             err.what == RP_EDIT_OBJECT
                                 ? "is a robot instance: only objects are attached"
                                 : "is an object, not a robot instance");
    if (st == RP_ERR_TRANSFORM)
        return rpd_fail_path(req, "params.rel", "rotation must be orthonormal with det +1");
    if (st >= RP_ERR_NONFINITE && st <= RP_ERR_RADIUS_NEGATIVE)
        return rpd_fail_path(req, rj ? "params.rel" : "params.object",
                             "moves a shape of the object out of range");
    if (st)
        return rpd_fail_status(req, st);
    write_scene_revision_of(w, sc);
    return true;
}

bool rpd_m_scene_detach(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "object", "if_revision", NULL};
    const char *name = NULL, *object = NULL;
    uint64_t expected = 0, actual = 0;
    bool has_rev;
    if (!rpd_check_keys(req, params, keys) ||
        !mutation_target(req, params, &name, &expected, &has_rev) ||
        !name_param(req, params, "object", &object))
        return false;
    const rp_scene *cur = rp_store_find(req->core->store, name);
    const rp_object *o = rp_scene_object_find(cur, object);
    if (!rpd_charge_shapes(req, (o ? rp_object_shape_count(o) : 0) + 1, rp_scene_shape_count(cur)))
        return false;
    rp_scene *sc;
    rp_status st =
        rp_store_detach(req->core->store, name, object, has_rev ? &expected : NULL, &sc, &actual);
    if (st == RP_ERR_REVISION)
        return rpd_fail_revision(req, expected, actual);
    if (st == RP_ERR_NOT_FOUND)
        return rpd_fail_not_found(req, "object", object);
    if (st == RP_ERR_INVALID_ARG)
        return rpd_fail_path(req, "params.object", "is not attached");
    if (st)
        return rpd_fail_status(req, st);
    write_scene_revision_of(w, sc);
    return true;
}

/* ---- point clouds ------------------------------------------------------------------ */

void rpd_clouds_free(rpd_clouds *c)
{
    for (size_t k = 0; k < c->n; k++)
        rp_cloud_release(c->clouds[k].cloud);
    free(c->clouds);
    memset(c, 0, sizeof *c);
}

/* The points of one cloud member, counted without decoding. */
static size_t cloud_points(const cJSON *c)
{
    const cJSON *p = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "points") : NULL;
    if (cJSON_IsArray(p))
        return (size_t)cJSON_GetArraySize(p);
    p = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "points_f32") : NULL;
    if (cJSON_IsString(p) && p->valuestring)
        return rp_base64_decoded_max(strlen(p->valuestring)) / 12;
    return 0;
}

size_t rpd_clouds_point_count(const cJSON *j)
{
    size_t n = 0;
    if (!cJSON_IsObject(j))
        return 0;
    for (const cJSON *c = j->child; c; c = c->next)
        n += cloud_points(c);
    return n;
}

/* points: [[x, y, z], ...] into xyz (room for the array's length), *n of
 * them; else the reason, with the point (*bad_k) and the coordinate
 * (*bad_a, -1 for the point itself) it concerns. */
static const char *points_of_array(const cJSON *pj, float *xyz, size_t *n, size_t *bad_k,
                                   int *bad_a)
{
    size_t k = 0;
    for (const cJSON *p = pj->child; p; p = p->next, k++) {
        *bad_k = k;
        *bad_a = -1;
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 3)
            return "must be a point [x, y, z]";
        int a = 0;
        for (const cJSON *v = p->child; v; v = v->next, a++) {
            *bad_a = a;
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > FLT_MAX)
                return "must be a finite number within single precision range";
            xyz[3 * k + (size_t)a] = (float)v->valuedouble;
        }
    }
    *n = k;
    return NULL;
}

/* points_f32: base64 of little-endian float32 triples into xyz, *n of
 * them; else the reason (written into why, RP_CODEC_REASON_MAX bytes, when
 * it names a point), or NULL with *nomem. */
static const char *points_of_f32(const cJSON *pj, float *xyz, size_t *n, char *why, bool *nomem)
{
    *nomem = false;
    if (!cJSON_IsString(pj) || !pj->valuestring)
        return "must be a base64 string of little-endian float32 x,y,z";
    size_t len = strlen(pj->valuestring), bytes;
    const char *reason = NULL;
    unsigned char *raw = malloc(rp_base64_decoded_max(len) + 1);
    if (!raw) {
        *nomem = true;
        return NULL;
    }
    if (!rp_base64_decode(pj->valuestring, len, raw, &bytes, &reason)) {
        free(raw);
        return reason;
    }
    if (bytes % 12) {
        free(raw);
        return "must decode to whole points: 12 bytes (three float32) each";
    }
    for (size_t i = 0; i < bytes / 4; i++) {
        uint32_t u = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                     (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
        memcpy(&xyz[i], &u, sizeof u);
        if (!isfinite(xyz[i])) {
            free(raw);
            rpd_format(why, RP_CODEC_REASON_MAX, "point %zu has a coordinate that is not finite",
                       i / 3);
            return why;
        }
    }
    free(raw);
    *n = bytes / 12;
    return NULL;
}

/* points, its error at the path of the point or coordinate. */
static bool cloud_points_array(rpd_req *req, const cJSON *pj, const char *path, float *xyz,
                               size_t *n)
{
    size_t k = 0;
    int a = -1;
    const char *why = points_of_array(pj, xyz, n, &k, &a);
    if (!why)
        return true;
    char sub[RP_CODEC_PATH_MAX], el[RP_CODEC_PATH_MAX];
    rp_codec_path_index(sub, path, k);
    return rpd_fail_path(req, a < 0 ? sub : rp_codec_path_index(el, sub, (size_t)a), why);
}

/* points_f32, its error at its path. */
static bool cloud_points_f32(rpd_req *req, const cJSON *pj, const char *path, float *xyz, size_t *n)
{
    char buf[RP_CODEC_REASON_MAX];
    bool nomem;
    const char *why = points_of_f32(pj, xyz, n, buf, &nomem);
    if (nomem)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    return !why || rpd_fail_path(req, path, why);
}

/* ---- clouds built ahead, on the worker that parsed the line -------------------------- */

typedef struct prebuilt_cloud {
    const cJSON *member; /* the cloud's member of params.clouds */
    rp_cloud *cloud;     /* NULL once taken */
    size_t points;
    double radius, voxel;
} prebuilt_cloud;

struct rpd_prebuilt {
    size_t n, cap;
    prebuilt_cloud c[];
};

void rpd_prebuilt_free(struct rpd_prebuilt *pb)
{
    for (size_t k = 0; pb && k < pb->n; k++)
        rp_cloud_release(pb->c[k].cloud);
    free(pb);
}

/* Member `key` of c: a finite number >= 0 (absent: fine unless required,
 * *out untouched). */
static bool nonneg_member(const cJSON *c, const char *key, bool required, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!v)
        return !required;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return false;
    *out = v->valuedouble;
    return true;
}

/* Builds the cloud of member c when it decodes; what does not is left for
 * the loop's decode to report. */
static void prebuild_one(struct rpd_prebuilt **pb, const cJSON *c)
{
    if (!cJSON_IsObject(c))
        return;
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(c, "points");
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(c, "points_f32");
    double radius = 0.0, voxel = 0.0;
    if (!pa == !pf || (pa && !cJSON_IsArray(pa)) || !nonneg_member(c, "radius", true, &radius) ||
        !nonneg_member(c, "voxel", false, &voxel))
        return;
    size_t cap = cloud_points(c), n = 0, k;
    int a;
    char buf[RP_CODEC_REASON_MAX];
    bool nomem = false;
    float *xyz = malloc((cap ? cap : 1) * 3 * sizeof *xyz);
    if (!xyz)
        return;
    const char *why =
        pa ? points_of_array(pa, xyz, &n, &k, &a) : points_of_f32(pf, xyz, &n, buf, &nomem);
    rp_cloud *cloud = NULL;
    if (!why && !nomem && rp_cloud_new(xyz, n, radius, voxel, &cloud, NULL) != RP_OK)
        cloud = NULL;
    free(xyz);
    if (!cloud)
        return;
    if (!*pb || (*pb)->n == (*pb)->cap) {
        size_t ncap = *pb ? 2 * (*pb)->cap : 4;
        struct rpd_prebuilt *g = realloc(*pb, sizeof **pb + ncap * sizeof g->c[0]);
        if (!g) {
            rp_cloud_release(cloud);
            return;
        }
        if (!*pb)
            g->n = 0;
        g->cap = ncap;
        *pb = g;
    }
    (*pb)->c[(*pb)->n++] = (prebuilt_cloud){c, cloud, n, radius, voxel};
}

/* The clouds of one request object r, when it is a scene write. */
static void prebuild_request(struct rpd_prebuilt **pb, const cJSON *r)
{
    const cJSON *m = cJSON_IsObject(r) ? cJSON_GetObjectItemCaseSensitive(r, "method") : NULL;
    if (!cJSON_IsString(m) || !m->valuestring ||
        (strcmp(m->valuestring, "scene.put") != 0 && strcmp(m->valuestring, "scene.create") != 0 &&
         strcmp(m->valuestring, "scene.replace") != 0))
        return;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(r, "params");
    const cJSON *clouds =
        cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, "clouds") : NULL;
    for (const cJSON *c = cJSON_IsObject(clouds) ? clouds->child : NULL; c; c = c->next)
        prebuild_one(pb, c);
}

void rpd_prebuild_clouds(struct rpd_parsed *p)
{
    const cJSON *root = p->root;
    if (cJSON_IsArray(root))
        for (const cJSON *r = root->child; r; r = r->next)
            prebuild_request(&p->prebuilt, r);
    else
        prebuild_request(&p->prebuilt, root);
}

/* The cloud built ahead for member c with these arguments (taken: the
 * caller owns it), or NULL; *points its point count. */
static rp_cloud *take_prebuilt(rpd_req *req, const cJSON *c, double radius, double voxel,
                               size_t *points)
{
    struct rpd_prebuilt *pb = req->core->prebuilt;
    for (size_t k = 0; pb && k < pb->n; k++) {
        prebuilt_cloud *e = &pb->c[k];
        if (e->member != c || !e->cloud || e->radius != radius || e->voxel != voxel)
            continue;
        rp_cloud *cloud = e->cloud;
        e->cloud = NULL;
        *points = e->points;
        return cloud;
    }
    return NULL;
}

bool rpd_decode_clouds(rpd_req *req, const cJSON *j, const char *path, rpd_clouds *out)
{
    static const char *const keys[] = {"points", "points_f32", "radius", "voxel", "count", NULL};
    static const char what[] = "{points or points_f32, radius, voxel?, count?}";
    rp_codec_err ce;
    memset(out, 0, sizeof *out);
    if (!name_map(req, j, path, what))
        return false;
    size_t n = 0;
    for (const cJSON *c = j->child; c; c = c->next)
        n++;
    out->clouds = calloc(n ? n : 1, sizeof *out->clouds);
    if (!out->clouds)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    for (const cJSON *c = j->child; c; c = c->next) {
        char cp[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX];
        rp_codec_path_key(cp, path, c->string);
        if (!name_member(req, c, cp, keys, what))
            goto fail;
        const cJSON *pa = cJSON_GetObjectItemCaseSensitive(c, "points");
        const cJSON *pf = cJSON_GetObjectItemCaseSensitive(c, "points_f32");
        if (!pa == !pf) {
            rpd_fail_path(req, cp,
                          pa ? "takes points or points_f32, not both"
                             : "needs points or points_f32");
            goto fail;
        }
        if (pa && !cJSON_IsArray(pa)) {
            rpd_fail_path(req, rp_codec_path_key(sub, cp, "points"),
                          "must be an array of points [x, y, z]");
            goto fail;
        }
        double radius, voxel = 0.0;
        const cJSON *rj = cJSON_GetObjectItemCaseSensitive(c, "radius");
        rp_codec_path_key(sub, cp, "radius");
        if (!rj) {
            rpd_fail_path(req, sub, "is required");
            goto fail;
        }
        if (!rp_codec_nonneg(rj, sub, &radius, &ce)) {
            rpd_fail_params(req, &ce);
            goto fail;
        }
        const cJSON *vj = cJSON_GetObjectItemCaseSensitive(c, "voxel");
        if (vj && !rp_codec_nonneg(vj, rp_codec_path_key(sub, cp, "voxel"), &voxel, &ce)) {
            rpd_fail_params(req, &ce);
            goto fail;
        }
        size_t got = 0;
        rp_cloud *cloud = take_prebuilt(req, c, radius, voxel, &got);
        float *xyz = NULL;
        if (!cloud) {
            size_t cap = cloud_points(c);
            if (!(xyz = malloc((cap ? cap : 1) * 3 * sizeof *xyz))) {
                rpd_fail_status(req, RP_ERR_NOMEM);
                goto fail;
            }
            bool ok =
                pa ? cloud_points_array(req, pa, rp_codec_path_key(sub, cp, "points"), xyz, &got)
                   : cloud_points_f32(req, pf, rp_codec_path_key(sub, cp, "points_f32"), xyz, &got);
            if (!ok) {
                free(xyz);
                goto fail;
            }
        }
        /* count (as scene.get writes it): the points, when given. */
        const cJSON *nj = cJSON_GetObjectItemCaseSensitive(c, "count");
        uint64_t count;
        if (nj && !rp_codec_uint(nj, rp_codec_path_key(sub, cp, "count"), &count, &ce)) {
            free(xyz);
            rp_cloud_release(cloud);
            rpd_fail_params(req, &ce);
            goto fail;
        }
        if (nj && count != got) {
            free(xyz);
            rp_cloud_release(cloud);
            rpd_fail_path(req, sub, "must be the number of points given");
            goto fail;
        }
        rp_status st = cloud ? RP_OK : rp_cloud_new(xyz, got, radius, voxel, &cloud, NULL);
        free(xyz);
        if (st == RP_ERR_LIMIT) {
            char reason[RP_CODEC_REASON_MAX];
            rpd_format(reason, sizeof reason,
                       "spans more than %u voxels along an axis: use a larger voxel or split "
                       "the cloud",
                       RP_CLOUD_MAX_VOXELS);
            char vp[RP_CODEC_PATH_MAX];
            rpd_fail_path(req, vj ? rp_codec_path_key(vp, cp, "voxel") : cp, reason);
            goto fail;
        }
        if (st) {
            rpd_fail_status(req, st);
            goto fail;
        }
        out->clouds[out->n].name = c->string;
        out->clouds[out->n++].cloud = cloud;
    }
    return true;
fail:
    rpd_clouds_free(out);
    return false;
}

bool rpd_cloud_failed(rpd_req *req, rp_status st, const rp_edit_error *e, const cJSON *clouds_j,
                      const char *clouds_path)
{
    if (e->what != RP_EDIT_CLOUD)
        return false;
    char path[RP_CODEC_PATH_MAX];
    const cJSON *c = clouds_j ? clouds_j->child : NULL;
    for (size_t k = 0; c && k < e->index; k++)
        c = c->next;
    if (c)
        rp_codec_path_key(path, clouds_path, c->string);
    else
        snprintf(path, sizeof path, "%s", clouds_path);
    if (st == RP_ERR_EXISTS)
        return !rpd_fail_path(req, path,
                              "is taken by a shape of the scene's own (object, robot and cloud "
                              "names share the scene's ids)");
    if (st == RP_ERR_INVALID_ARG)
        return !rpd_fail_path(req, path, "names an object, robot or cloud given twice");
    return false;
}
