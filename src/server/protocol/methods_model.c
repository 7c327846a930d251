/* SPDX-License-Identifier: MIT */
/*
 * model.* and check handlers: robot models (link shapes on joint frames, a
 * safety margin, allowed pairs) and checks of configurations against a
 * scene.  Every parameter, every pose of every configuration included, is
 * decoded and validated before anything is stored or computed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urdf/urdf.h"
#include "server/persistence/durable.h"
#include "methods.h"
#include "methods_mesh.h"

/* Highest joint frame index a model may use: bounds the frames array. */
#define RPD_MAX_FRAME 1023

/* ---- models ------------------------------------------------------------------ */

static bool model_name(rpd_req *req, const cJSON *params, const char **name)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rp_codec_name(rpd_param(params, "model", path), path, name, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

rp_model *rpd_existing_model(rpd_req *req, const cJSON *params)
{
    const char *name;
    if (!model_name(req, params, &name))
        return NULL;
    rp_model *m = rp_store_model_find(req->core->store, name);
    if (!m)
        rpd_fail_not_found(req, "model", name);
    return m;
}

/* Writes the "model" and "revision" members. */
static void write_model_rev(rp_jw *w, const rp_model *m)
{
    RP_JW_KEY(w, "model");
    rp_jw_string(w, rp_model_name(m));
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, rp_model_revision(m));
}

/* Decodes params.links into links[] (malloc'ed; ids point into the tree). */
static bool decode_links(rpd_req *req, const cJSON *j, const char *path, rp_link **out,
                         size_t *n_out)
{
    static const char *const keys[] = {"id", "frame", "shape", NULL};
    *out = NULL;
    *n_out = 0;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, j ? "must be an array of links" : "is required");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    rp_link *links = malloc((n ? n : 1) * sizeof *links);
    if (!links)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char lp[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(lp, path, k);
        if (!rp_codec_object_keys(c, lp, keys, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "id"),
                         rp_codec_path_key(sub, lp, "id"), &links[k].id, &ce) ||
            !rp_codec_link_shape(cJSON_GetObjectItemCaseSensitive(c, "shape"),
                                 rp_codec_path_key(sub, lp, "shape"), "model", &links[k].shape,
                                 &ce)) {
            free(links);
            return rpd_fail_params(req, &ce);
        }
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "frame");
        rp_codec_path_key(sub, lp, "frame");
        uint64_t frame;
        if (!f) {
            free(links);
            return rpd_fail_path(req, sub,
                                 "is required (a joint frame index, or null for the base)");
        }
        if (cJSON_IsNull(f)) {
            links[k].frame = -1;
        } else if (!rp_codec_uint(f, sub, &frame, &ce) || frame > RPD_MAX_FRAME) {
            free(links);
            return rpd_fail_path(req, sub,
                                 "must be an integer from 0 to 1023, or null for the base");
        } else {
            links[k].frame = (int)frame;
        }
    }
    *out = links;
    *n_out = n;
    return true;
}

/* Decodes a list of id pairs at `path` into 2*n ids (malloc'ed, pointing
 * into the tree); `what` names a pair in messages ("link id, link id"). */
static bool decode_id_pairs(rpd_req *req, const cJSON *j, const char *path, const char *what,
                            uint64_t unit, const char ***out, size_t *n_out)
{
    char reason[RP_CODEC_REASON_MAX];
    *out = NULL;
    *n_out = 0;
    if (!j)
        return true;
    if (!cJSON_IsArray(j)) {
        rpd_format(reason, sizeof reason, "must be an array of [%s] pairs", what);
        return rpd_fail_path(req, path, reason);
    }
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_allowed_pairs)
        return rpd_fail_limit(req, RPD_LIMIT_max_allowed_pairs,
                              req->core->limits.max_allowed_pairs);
    /* The pairs' share of the request's estimate, before they are decoded. */
    if (!rpd_work_fits(req, (uint64_t)n * unit))
        return false;
    const char **ids = malloc((n ? 2 * n : 1) * sizeof *ids);
    if (!ids)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char pp[RP_CODEC_PATH_MAX], ep[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(pp, path, k);
        if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2) {
            free(ids);
            rpd_format(reason, sizeof reason, "must be a pair [%s]", what);
            return rpd_fail_path(req, pp, reason);
        }
        if (!rp_codec_id(c->child, rp_codec_path_index(ep, pp, 0), &ids[2 * k], &ce) ||
            !rp_codec_id(c->child->next, rp_codec_path_index(ep, pp, 1), &ids[2 * k + 1], &ce)) {
            free(ids);
            return rpd_fail_params(req, &ce);
        }
    }
    *out = ids;
    *n_out = n;
    return true;
}

/* params.allowed_pairs: [link id, link id] pairs. */
static bool decode_pairs(rpd_req *req, const cJSON *j, const char *path, const char ***out,
                         size_t *n_out)
{
    return decode_id_pairs(req, j, path, "link id, link id", 2, out, n_out);
}

/* Decodes the kinematic form's params.links: [{id, link, shape}]. */
static bool decode_kin_links(rpd_req *req, const cJSON *j, const char *path, rp_link **out,
                             const char ***link_of, size_t *n_out)
{
    static const char *const keys[] = {"id", "link", "shape", NULL};
    *out = NULL;
    *link_of = NULL;
    *n_out = 0;
    if (!j)
        return true; /* a tree without shapes */
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of link shapes");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    rp_link *links = calloc(n ? n : 1, sizeof *links);
    const char **names = calloc(n ? n : 1, sizeof *names);
    if (!links || !names) {
        free(links);
        free(names);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char lp[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(lp, path, k);
        if (cJSON_IsObject(c) && cJSON_GetObjectItemCaseSensitive(c, "frame")) {
            free(links);
            free(names);
            return rpd_fail_path(req, rp_codec_path_key(sub, lp, "frame"),
                                 "a kinematic model (one with joints) attaches shapes to links "
                                 "(\"link\"), not to frames");
        }
        if (!rp_codec_object_keys(c, lp, keys, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "id"),
                         rp_codec_path_key(sub, lp, "id"), &links[k].id, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "link"),
                         rp_codec_path_key(sub, lp, "link"), &names[k], &ce) ||
            !rp_codec_link_shape(cJSON_GetObjectItemCaseSensitive(c, "shape"),
                                 rp_codec_path_key(sub, lp, "shape"), "model", &links[k].shape,
                                 &ce)) {
            free(links);
            free(names);
            return rpd_fail_params(req, &ce);
        }
    }
    *out = links;
    *link_of = names;
    *n_out = n;
    return true;
}

/* {"xyz": vec3?, "rpy": vec3?} */
static bool decode_origin(const cJSON *j, const char *path, rp_joint_def *d, rp_codec_err *ce)
{
    static const char *const keys[] = {"xyz", "rpy", NULL};
    char sub[RP_CODEC_PATH_MAX];
    if (!j)
        return true;
    if (!rp_codec_object_keys(j, path, keys, ce))
        return false;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "xyz");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "rpy");
    return (!x || rp_codec_vec3(x, rp_codec_path_key(sub, path, "xyz"), &d->xyz, ce)) &&
           (!r || rp_codec_vec3(r, rp_codec_path_key(sub, path, "rpy"), &d->rpy, ce));
}

static const char *const joint_types[] = {"fixed", "revolute", "continuous", "prismatic"};

/* One element of params.joints. */
static bool decode_joint(rpd_req *req, const cJSON *c, const char *jp, rp_joint_def *d)
{
    static const char *const keys[] = {"name", "type",   "parent", "child", "origin",
                                       "axis", "limits", "mimic",  NULL};
    static const char *const limit_keys[] = {"lower", "upper", NULL};
    static const char *const mimic_keys[] = {"joint", "multiplier", "offset", NULL};
    char sub[RP_CODEC_PATH_MAX], sub2[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const char *type;
    memset(d, 0, sizeof *d);
    d->axis = (rp_vec3){1.0, 0.0, 0.0};
    if (!rp_codec_object_keys(c, jp, keys, &ce) ||
        !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "name"),
                     rp_codec_path_key(sub, jp, "name"), &d->name, &ce) ||
        !rp_codec_string(cJSON_GetObjectItemCaseSensitive(c, "type"),
                         rp_codec_path_key(sub, jp, "type"), &type, &ce))
        return rpd_fail_params(req, &ce);
    size_t t = 0;
    while (t < 4 && strcmp(type, joint_types[t]) != 0)
        t++;
    if (t == 4)
        return rpd_fail_path(req, sub,
                             "must be \"revolute\", \"continuous\", \"prismatic\" or \"fixed\"");
    d->type = (rp_joint_type)t;
    const cJSON *axis = cJSON_GetObjectItemCaseSensitive(c, "axis");
    if (!rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "parent"),
                     rp_codec_path_key(sub, jp, "parent"), &d->parent, &ce) ||
        !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "child"),
                     rp_codec_path_key(sub, jp, "child"), &d->child, &ce) ||
        !decode_origin(cJSON_GetObjectItemCaseSensitive(c, "origin"),
                       rp_codec_path_key(sub, jp, "origin"), d, &ce) ||
        (axis && !rp_codec_vec3(axis, rp_codec_path_key(sub, jp, "axis"), &d->axis, &ce)))
        return rpd_fail_params(req, &ce);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(c, "limits");
    if (lim) {
        rp_codec_path_key(sub, jp, "limits");
        if (!rp_codec_object_keys(lim, sub, limit_keys, &ce) ||
            !rp_codec_number(cJSON_GetObjectItemCaseSensitive(lim, "lower"),
                             rp_codec_path_key(sub2, sub, "lower"), &d->lower, &ce) ||
            !rp_codec_number(cJSON_GetObjectItemCaseSensitive(lim, "upper"),
                             rp_codec_path_key(sub2, sub, "upper"), &d->upper, &ce))
            return rpd_fail_params(req, &ce);
        d->has_limits = true;
    }
    const cJSON *mim = cJSON_GetObjectItemCaseSensitive(c, "mimic");
    if (mim) {
        rp_codec_path_key(sub, jp, "mimic");
        const cJSON *mu = cJSON_GetObjectItemCaseSensitive(mim, "multiplier");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(mim, "offset");
        d->multiplier = 1.0;
        if (!rp_codec_object_keys(mim, sub, mimic_keys, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(mim, "joint"),
                         rp_codec_path_key(sub2, sub, "joint"), &d->mimic, &ce) ||
            (mu && !rp_codec_number(mu, rp_codec_path_key(sub2, sub, "multiplier"), &d->multiplier,
                                    &ce)) ||
            (of && !rp_codec_number(of, rp_codec_path_key(sub2, sub, "offset"), &d->offset, &ce)))
            return rpd_fail_params(req, &ce);
    }
    return true;
}

static bool decode_joints(rpd_req *req, const cJSON *j, const char *path, rp_joint_def **out,
                          size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!j)
        return true;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of joints");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    rp_joint_def *joints = malloc((n ? n : 1) * sizeof *joints);
    if (!joints)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char jp[RP_CODEC_PATH_MAX];
        if (!decode_joint(req, c, rp_codec_path_index(jp, path, k), &joints[k])) {
            free(joints);
            return false;
        }
    }
    *out = joints;
    *n_out = n;
    return true;
}

/* Everything a put decodes into, freed in one place. */
typedef struct put_scratch {
    rp_model_def def;
    rp_link *links;
    const char **shape_links;
    rp_joint_def *joints;
    const char **pairs;
    const char **more_pairs; /* URDF: the document's pairs plus params.allowed_pairs */
    const char **scene_pairs;
    const char **default_names;
    double *default_values;
    const char **tree_links;
    rp_mesh_cover *covers;
    rp_group_def *groups;
    const char **group_joints; /* every group's, one array */
    rp_state_def *states;
    const char **state_joints;
    double *state_values;
    rp_end_effector_def *effs;
    const char **passive;
    rp_urdf *urdf;
} put_scratch;

/* params.default_positions: {joint name: value}. */
static bool decode_defaults(rpd_req *req, const cJSON *j, const char *path, put_scratch *s)
{
    rp_model_def *def = &s->def;
    if (!j)
        return true;
    rp_codec_err ce;
    rp_status st = rp_codec_object_unique(j, path, &ce);
    if (st == RP_ERR_NOMEM)
        return rpd_fail_status(req, st);
    if (st)
        return rpd_fail_params(req, &ce);
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    double *values = malloc((n ? n : 1) * sizeof *values);
    if (!names || !values) {
        free(names);
        free(values);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        names[k] = c->string;
        if (!rp_codec_number(c, rp_codec_path_key(sub, path, c->string), &values[k], &ce)) {
            free(names);
            free(values);
            return rpd_fail_params(req, &ce);
        }
    }
    s->default_names = names;
    s->default_values = values;
    def->default_names = names;
    def->default_values = values;
    def->n_defaults = n;
    return true;
}

bool rpd_decode_scene_pairs(rpd_req *req, const cJSON *j, const char *path, const char ***out,
                            size_t *n_out)
{
    return decode_id_pairs(req, j, path, "link, scene shape id", RP_WORK_SCENE_PAIR, out, n_out);
}

static void put_scratch_free(put_scratch *s)
{
    free(s->links);
    free(s->shape_links);
    free(s->joints);
    free(s->pairs);
    free(s->more_pairs);
    free(s->scene_pairs);
    free(s->default_names);
    free(s->default_values);
    free(s->tree_links);
    free(s->covers);
    free(s->groups);
    free(s->group_joints);
    free(s->states);
    free(s->state_joints);
    free(s->state_values);
    free(s->effs);
    free(s->passive);
    rp_urdf_free(s->urdf);
}

/* params.mesh_covers (JSON form): what model.get reports of a model whose
 * links were covered from meshes, given back as it was (a snapshot's
 * model.put).  Kept and reported only. */
static bool decode_mesh_covers(rpd_req *req, const cJSON *params, put_scratch *s)
{
    char path[RP_CODEC_PATH_MAX];
    const cJSON *j = rpd_param(params, "mesh_covers", path);
    if (!j)
        return true;
    static const char what[] = "must be an array of {link, spheres, triangles, overshoot}";
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, what);
    size_t n = (size_t)cJSON_GetArraySize(j), k = 0;
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    s->covers = calloc(n ? n : 1, sizeof *s->covers);
    if (!s->covers)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        rp_codec_path_index(sub, path, k);
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "link");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(c, "spheres");
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(c, "triangles");
        const cJSON *ov = cJSON_GetObjectItemCaseSensitive(c, "overshoot");
        if (!cJSON_IsObject(c) || cJSON_GetArraySize(c) != 4 || !cJSON_IsString(l) ||
            !cJSON_IsNumber(sp) || !cJSON_IsNumber(tr) || !cJSON_IsNumber(ov) ||
            !(sp->valuedouble >= 0 && sp->valuedouble <= 1e15) ||
            !(tr->valuedouble >= 0 && tr->valuedouble <= 1e15) ||
            !(ov->valuedouble >= 0 && ov->valuedouble <= 1e300))
            return rpd_fail_path(req, sub, what);
        s->covers[k] = (rp_mesh_cover){l->valuestring, (size_t)sp->valuedouble,
                                       (size_t)tr->valuedouble, ov->valuedouble};
    }
    s->def.mesh_covers = s->covers;
    s->def.n_mesh_covers = n;
    return true;
}

/* A string member `key` of object o at path (required unless optional;
 * absent optional: NULL, true). */
static bool string_member(rpd_req *req, const cJSON *o, const char *path, const char *key,
                          bool optional, const char **out)
{
    char sub[RP_CODEC_PATH_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v && optional)
        return true;
    if (!cJSON_IsString(v))
        return rpd_fail_path(req, rp_codec_path_key(sub, path, key),
                             v ? "must be a string" : "is required");
    *out = v->valuestring;
    return true;
}

/* The JSON form of what an SRDF adds (model.get writes it back the same
 * way): groups {name: [joint]}, states [{name, group, joints {joint:
 * value}}], end_effectors [{name, parent_link, group, parent_group?}],
 * passive_joints [joint].  Names are checked by the store. */
static bool decode_srdf_json(rpd_req *req, const cJSON *params, put_scratch *s)
{
    char path[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX], sub2[RP_CODEC_PATH_MAX];
    size_t cap = req->core->limits.max_model_links;
    const cJSON *j = rpd_param(params, "groups", path);
    if (j) {
        if (!cJSON_IsObject(j))
            return rpd_fail_path(req, path, "must be an object {group: [joint names]}");
        size_t ng = (size_t)cJSON_GetArraySize(j), nj = 0;
        for (const cJSON *g = j->child; g; g = g->next) {
            if (!cJSON_IsArray(g))
                return rpd_fail_path(req, rp_codec_path_key(sub, path, g->string),
                                     "must be an array of joint names");
            nj += (size_t)cJSON_GetArraySize(g);
        }
        if (ng > cap || nj > cap * 8)
            return rpd_fail_limit(req, RPD_LIMIT_max_model_links, cap);
        s->groups = calloc(ng ? ng : 1, sizeof *s->groups);
        s->group_joints = calloc(nj ? nj : 1, sizeof *s->group_joints);
        if (!s->groups || !s->group_joints)
            return rpd_fail_status(req, RP_ERR_NOMEM);
        size_t k = 0, at = 0;
        for (const cJSON *g = j->child; g; g = g->next, k++) {
            rp_codec_path_key(sub, path, g->string);
            s->groups[k] = (rp_group_def){g->string, s->group_joints + at, 0};
            size_t i = 0;
            for (const cJSON *n = g->child; n; n = n->next, i++) {
                if (!cJSON_IsString(n))
                    return rpd_fail_path(req, rp_codec_path_index(sub2, sub, i),
                                         "must be a joint name");
                s->group_joints[at++] = n->valuestring;
                s->groups[k].n_joints++;
            }
        }
        s->def.groups = s->groups;
        s->def.n_groups = ng;
    }
    if ((j = rpd_param(params, "states", path))) {
        if (!cJSON_IsArray(j))
            return rpd_fail_path(req, path, "must be an array of {name, group, joints}");
        size_t ns = (size_t)cJSON_GetArraySize(j), nj = 0;
        for (const cJSON *t = j->child; t; t = t->next)
            nj += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "joints"));
        if (ns > cap || nj > cap * 8)
            return rpd_fail_limit(req, RPD_LIMIT_max_model_links, cap);
        s->states = calloc(ns ? ns : 1, sizeof *s->states);
        s->state_joints = calloc(nj ? nj : 1, sizeof *s->state_joints);
        s->state_values = calloc(nj ? nj : 1, sizeof *s->state_values);
        if (!s->states || !s->state_joints || !s->state_values)
            return rpd_fail_status(req, RP_ERR_NOMEM);
        size_t k = 0, at = 0;
        for (const cJSON *t = j->child; t; t = t->next, k++) {
            rp_codec_path_index(sub, path, k);
            rp_state_def *d = &s->states[k];
            if (!cJSON_IsObject(t))
                return rpd_fail_path(req, sub, "must be an object {name, group, joints}");
            if (!string_member(req, t, sub, "name", false, &d->name) ||
                !string_member(req, t, sub, "group", false, &d->group))
                return false;
            const cJSON *jj = cJSON_GetObjectItemCaseSensitive(t, "joints");
            rp_codec_path_key(sub2, sub, "joints");
            if (!cJSON_IsObject(jj))
                return rpd_fail_path(req, sub2, "must be an object {joint: value}");
            d->joints = s->state_joints + at;
            d->values = s->state_values + at;
            for (const cJSON *v = jj->child; v; v = v->next) {
                char vp[RP_CODEC_PATH_MAX];
                rp_codec_err ce;
                if (!rp_codec_number(v, rp_codec_path_key(vp, sub2, v->string),
                                     &s->state_values[at], &ce))
                    return rpd_fail_params(req, &ce);
                s->state_joints[at++] = v->string;
                d->n_joints++;
            }
        }
        s->def.states = s->states;
        s->def.n_states = ns;
    }
    if ((j = rpd_param(params, "end_effectors", path))) {
        if (!cJSON_IsArray(j))
            return rpd_fail_path(req, path,
                                 "must be an array of {name, parent_link, group, parent_group?}");
        size_t ne = (size_t)cJSON_GetArraySize(j), k = 0;
        if (ne > cap)
            return rpd_fail_limit(req, RPD_LIMIT_max_model_links, cap);
        if (!(s->effs = calloc(ne ? ne : 1, sizeof *s->effs)))
            return rpd_fail_status(req, RP_ERR_NOMEM);
        for (const cJSON *e = j->child; e; e = e->next, k++) {
            rp_codec_path_index(sub, path, k);
            rp_end_effector_def *d = &s->effs[k];
            if (!cJSON_IsObject(e))
                return rpd_fail_path(req, sub, "must be an object");
            if (!string_member(req, e, sub, "name", false, &d->name) ||
                !string_member(req, e, sub, "parent_link", false, &d->parent_link) ||
                !string_member(req, e, sub, "group", false, &d->group) ||
                !string_member(req, e, sub, "parent_group", true, &d->parent_group))
                return false;
        }
        s->def.end_effectors = s->effs;
        s->def.n_end_effectors = ne;
    }
    if ((j = rpd_param(params, "passive_joints", path))) {
        if (!cJSON_IsArray(j))
            return rpd_fail_path(req, path, "must be an array of joint names");
        size_t np = (size_t)cJSON_GetArraySize(j), k = 0;
        if (np > cap)
            return rpd_fail_limit(req, RPD_LIMIT_max_model_links, cap);
        if (!(s->passive = calloc(np ? np : 1, sizeof *s->passive)))
            return rpd_fail_status(req, RP_ERR_NOMEM);
        for (const cJSON *n = j->child; n; n = n->next, k++) {
            if (!cJSON_IsString(n))
                return rpd_fail_path(req, rp_codec_path_index(sub, path, k),
                                     "must be a joint name");
            s->passive[k] = n->valuestring;
        }
        s->def.passive_joints = s->passive;
        s->def.n_passive = np;
    }
    return true;
}

/* params.tree_links: the links of the tree, in order (a definition
 * without it takes every name its joints and shapes mention, first
 * mention first).  The journal writes it, so that a model read back
 * has its links in the order it had (codec: rp_jw_model_def). */
static bool decode_tree_links(rpd_req *req, const cJSON *params, put_scratch *s)
{
    char path[RP_CODEC_PATH_MAX];
    const cJSON *j = rpd_param(params, "tree_links", path);
    if (!j)
        return true;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of link names");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    s->tree_links = malloc((n ? n : 1) * sizeof *s->tree_links);
    if (!s->tree_links)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t k = 0;
    rp_codec_err ce;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char sub[RP_CODEC_PATH_MAX];
        if (!rp_codec_id(c, rp_codec_path_index(sub, path, k), &s->tree_links[k], &ce))
            return rpd_fail_params(req, &ce);
    }
    s->def.link_names = s->tree_links;
    s->def.n_link_names = n;
    return true;
}

/* Link names of a JSON definition are derived (kin.c): every joint's
 * parent and child, then every shape's link, first mention first.  Names
 * the `index`-th such link where it is first mentioned: a second root is
 * usually a misspelt parent. */
static bool fail_second_root(rpd_req *req, const rp_model_def *def, size_t index)
{
    size_t seen = 0, n = 2 * def->n_joints + def->n_links;
    for (size_t k = 0; k < n; k++) {
        const char *name = k < 2 * def->n_joints
                               ? (k % 2 ? def->joints[k / 2].child : def->joints[k / 2].parent)
                               : def->shape_links[k - 2 * def->n_joints];
        bool earlier = false;
        for (size_t e = 0; e < k && !earlier; e++) {
            const char *o = e < 2 * def->n_joints
                                ? (e % 2 ? def->joints[e / 2].child : def->joints[e / 2].parent)
                                : def->shape_links[e - 2 * def->n_joints];
            earlier = strcmp(o, name) == 0;
        }
        if (earlier || seen++ != index)
            continue;
        char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
        if (k < 2 * def->n_joints)
            rp_codec_path_key(p2, rp_codec_path_index(p1, "params.joints", k / 2),
                              k % 2 ? "child" : "parent");
        else
            rp_codec_path_key(p2, rp_codec_path_index(p1, "params.links", k - 2 * def->n_joints),
                              "link");
        rpd_format(reason, sizeof reason,
                   "link '%s' is a second root: no joint has it as its child", name);
        return rpd_fail_path(req, p2, reason);
    }
    return rpd_fail_path(req, "params.joints", "the links form more than one tree");
}

/* Where a problem of rp_store_model_put points in a JSON definition. */
/* The store's refusal of what an SRDF adds: the JSON form's path into
 * path and a reason naming the group, state, end effector or joint; false
 * for other problems. */
static bool srdf_problem(const rp_model_def *def, const rp_model_error *me, char *path,
                         char *reason, size_t cap)
{
    char p1[RP_CODEC_PATH_MAX];
    switch (me->problem) {
    case RP_MODEL_BAD_GROUP: {
        const rp_group_def *g = &def->groups[me->index];
        rp_codec_path_key(p1, "params.groups", g->name ? g->name : "");
        if (me->element == SIZE_MAX) {
            snprintf(path, RP_CODEC_PATH_MAX, "%s", p1);
            snprintf(reason, cap, "group \"%s\" is defined twice", g->name ? g->name : "");
        } else {
            rp_codec_path_index(path, p1, me->element);
            snprintf(reason, cap, "group \"%s\": \"%s\" is no joint of the tree", g->name,
                     g->joints[me->element] ? g->joints[me->element] : "");
        }
        return true;
    }
    case RP_MODEL_BAD_STATE: {
        const rp_state_def *t = &def->states[me->index];
        rp_codec_path_index(p1, "params.states", me->index);
        if (me->element == SIZE_MAX) {
            rp_codec_path_key(path, p1, "group");
            snprintf(reason, cap,
                     "state \"%s\": group \"%s\" is no group of the model, or the state is "
                     "defined twice for it",
                     t->name ? t->name : "", t->group ? t->group : "");
        } else {
            char p2[RP_CODEC_PATH_MAX];
            rp_codec_path_key(p2, p1, "joints");
            rp_codec_path_key(path, p2, t->joints[me->element] ? t->joints[me->element] : "");
            snprintf(reason, cap,
                     "state \"%s\": joint \"%s\" is no joint of the tree, or its value is not "
                     "finite",
                     t->name, t->joints[me->element] ? t->joints[me->element] : "");
        }
        return true;
    }
    case RP_MODEL_BAD_END_EFFECTOR:
        rp_codec_path_index(path, "params.end_effectors", me->index);
        snprintf(reason, cap,
                 "end effector \"%s\": an unknown parent_link or group, or a name given twice",
                 def->end_effectors[me->index].name ? def->end_effectors[me->index].name : "");
        return true;
    case RP_MODEL_BAD_PASSIVE:
        rp_codec_path_index(path, "params.passive_joints", me->index);
        snprintf(reason, cap, "\"%s\" is no joint of the tree",
                 def->passive_joints[me->index] ? def->passive_joints[me->index] : "");
        return true;
    default:
        return false;
    }
}

static bool fail_model_json(rpd_req *req, const rp_model_def *def, const rp_model_error *me)
{
    {
        char path[RP_CODEC_PATH_MAX], why[RP_CODEC_REASON_MAX];
        if (srdf_problem(def, me, path, why, sizeof why))
            return rpd_fail_path(req, path, why);
    }
    char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
    const rp_joint_def *j = def->joints ? &def->joints[me->index] : NULL;
    rp_codec_path_index(p1, "params.joints", me->index);
    switch (me->problem) {
    case RP_MODEL_DUPLICATE_LINK:
        rp_codec_path_index(p1, "params.links", me->index);
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "id"), "duplicate link id");
    case RP_MODEL_UNKNOWN_PAIR_LINK:
        rp_codec_path_index(p1, "params.allowed_pairs", me->index);
        return rpd_fail_path(req, rp_codec_path_index(p2, p1, me->element),
                             "names no link of this model");
    case RP_MODEL_UNKNOWN_SCENE_LINK:
        rp_codec_path_index(p1, "params.allowed_scene", me->index);
        return rpd_fail_path(req, rp_codec_path_index(p2, p1, 0), "names no link of this model");
    case RP_MODEL_BAD_MARGIN:
        return rpd_fail_path(req, "params.safety_margin", "must be finite and >= 0");
    case RP_MODEL_DUPLICATE_JOINT:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "name"), "duplicate joint name");
    case RP_MODEL_TWO_PARENTS:
        rpd_format(reason, sizeof reason, "link '%s' is already the child of another joint",
                   j->child);
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "child"), reason);
    case RP_MODEL_SELF_JOINT:
        return rpd_fail_path(req, p1, "joins a link to itself");
    case RP_MODEL_CYCLE:
        return rpd_fail_path(req, p1, "closes a cycle: its child is not reachable from the root");
    case RP_MODEL_NO_ROOT:
        return rpd_fail_path(req, "params.joints", "every link is a child: there is no root");
    case RP_MODEL_TWO_ROOTS:
        if (def->link_names) {
            rp_codec_path_index(p1, "params.tree_links", me->index);
            return rpd_fail_path(req, p1, "is a second root: no joint has it as its child");
        }
        return fail_second_root(req, def, me->index);
    case RP_MODEL_DUPLICATE_LINK_NAME:
        rp_codec_path_index(p1, "params.tree_links", me->index);
        return rpd_fail_path(req, p1, "names a link twice");
    case RP_MODEL_UNKNOWN_SHAPE_LINK:
        rp_codec_path_index(p1, "params.links", me->index);
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "link"),
                             "names no link of params.tree_links");
    case RP_MODEL_UNKNOWN_JOINT_LINK:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, me->element ? "child" : "parent"),
                             "names no link of params.tree_links");
    case RP_MODEL_BAD_ORIGIN:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "origin"), "must be finite");
    case RP_MODEL_BAD_AXIS:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "axis"),
                             "must be a finite non-zero vector");
    case RP_MODEL_BAD_LIMITS:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "limits"),
                             "must be finite with lower <= upper");
    case RP_MODEL_BAD_MIMIC:
        return rpd_fail_path(req, rp_codec_path_key(p2, p1, "mimic"),
                             "must name another moving joint (no mimic cycles), with a finite "
                             "multiplier and offset");
    case RP_MODEL_UNKNOWN_DEFAULT:
    case RP_MODEL_BAD_DEFAULT:
        rp_codec_path_key(p2, "params.default_positions", def->default_names[me->index]);
        return rpd_fail_path(req, p2,
                             me->problem == RP_MODEL_BAD_DEFAULT
                                 ? "must be finite"
                                 : "names no active joint (moving, not a mimic)");
    default:
        rp_codec_path_index(p1, "params.links", me->index);
        return rpd_fail_path(req, p1, "invalid link");
    }
}

/* The same for a URDF definition: the path is the document, the reason
 * names the element and its line. */
static bool fail_model_urdf(rpd_req *req, const put_scratch *s, const rp_model_error *me)
{
    char reason[RP_CODEC_REASON_MAX];
    if (me->problem == RP_MODEL_UNKNOWN_PAIR_LINK)
        return rpd_fail_path(req, "params.allowed_pairs", "names a link the URDF does not define");
    char path[RP_CODEC_PATH_MAX];
    if (srdf_problem(&s->def, me, path, reason, sizeof reason))
        return rpd_fail_path(req, "params.srdf", reason);
    if (!rp_urdf_model_reason(s->urdf, &s->def, me, reason, sizeof reason))
        return fail_model_json(req, &s->def, me);
    return rpd_fail_path(req, "params.urdf", reason);
}

/* model.put with "urdf": the document (and "srdf") into s->def. */
static bool decode_urdf(rpd_req *req, const cJSON *params, put_scratch *s)
{
    char path[RP_CODEC_PATH_MAX], spath[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const char *urdf, *srdf = NULL;
    if (!rp_codec_string(rpd_param(params, "urdf", path), path, &urdf, &ce))
        return rpd_fail_params(req, &ce);
    const cJSON *sj = rpd_param(params, "srdf", spath);
    if (sj && !rp_codec_string(sj, spath, &srdf, &ce))
        return rpd_fail_params(req, &ce);
    bool adjacent = srdf == NULL;
    if (!rpd_optional_bool(req, params, "allow_adjacent", adjacent, &adjacent))
        return false;
    /* Parsed, and its meshes covered, by a worker ahead of the loop
     * (methods_mesh.c) or here. */
    rpd_urdf_outcome o;
    bool prebuilt = rpd_prebuilt_model_take(req->core->prebuilt_models, params, &o);
    if (!prebuilt) {
        rp_urdf_opts opts;
        rpd_urdf_opts(&req->core->limits, srdf,
                      cJSON_GetObjectItemCaseSensitive(params, "allow_adjacent"), &opts);
        rpd_urdf_build(params, urdf, srdf, &opts, req->core->limits.max_model_links,
                       req->line->work_left, &o);
        if (o.kind == RPD_URDF_OK && !rpd_charge_work(req, o.work)) {
            rpd_urdf_outcome_free(&o);
            return false;
        }
    }
    s->urdf = o.u;
    if (o.kind == RPD_URDF_NOMEM)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    if (o.kind == RPD_URDF_BAD_PARAM)
        return rpd_fail_path(req, o.path, o.reason);
    if (o.kind == RPD_URDF_WORK && prebuilt) {
        /* A worker priced it against max_request_work: that is the limit
         * to name (the loop's smaller budget never applied to it). */
        rpd_fail_limit(req, RPD_LIMIT_max_request_work, req->core->limits.max_request_work);
        rpd_format(req->err.message, sizeof req->err.message,
                   "Limit exceeded: max_request_work (max %llu work units per request line; "
                   "reading and covering these meshes needs more, priced by their bytes and "
                   "triangles): send smaller or fewer meshes, or raise --max-request-work",
                   (unsigned long long)req->core->limits.max_request_work);
        return false;
    }
    if (o.kind == RPD_URDF_WORK)
        return rpd_work_fits(req, o.work);
    rp_urdf_status us = o.us;
    rp_urdf_error ue = o.ue;
    if (us == RP_URDF_LIMIT) {
        rpd_limit_id id = ue.limit_name && strcmp(ue.limit_name, "max_allowed_pairs") == 0
                              ? RPD_LIMIT_max_allowed_pairs
                              : RPD_LIMIT_max_model_links;
        return rpd_fail_limit(req, id, ue.limit_max);
    }
    if (us != RP_URDF_OK) {
        char where[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
        rp_codec_path_key(where, ue.in_srdf ? "params.srdf" : "params.urdf", ue.where);
        /* The reason starts with the element, which the path already names. */
        const char *text = ue.reason;
        size_t wl = strlen(ue.where);
        if (wl && strncmp(text, ue.where, wl) == 0 && text[wl] == ':' && text[wl + 1] == ' ')
            text += wl + 2;
        if (ue.line)
            rpd_format(reason, sizeof reason, "line %lu: %s", ue.line, text);
        else
            rpd_format(reason, sizeof reason, "%s", text);
        return rpd_fail_path(req,
                             ue.where[0]  ? where
                             : ue.in_srdf ? "params.srdf"
                                          : "params.urdf",
                             reason);
    }
    s->def = *rp_urdf_def(s->urdf);
    /* params.allowed_pairs (link names) add to the document's pairs. */
    const char **extra;
    size_t n_extra;
    if (!decode_pairs(req, rpd_param(params, "allowed_pairs", path), path, &extra, &n_extra))
        return false;
    if (n_extra) {
        size_t n = s->def.n_allowed + n_extra;
        s->more_pairs = malloc(2 * n * sizeof *s->more_pairs);
        if (!s->more_pairs) {
            free(extra);
            return rpd_fail_status(req, RP_ERR_NOMEM);
        }
        memcpy(s->more_pairs, s->def.allowed_pairs, 2 * s->def.n_allowed * sizeof(char *));
        memcpy(s->more_pairs + 2 * s->def.n_allowed, extra, 2 * n_extra * sizeof(char *));
        s->def.allowed_pairs = s->more_pairs;
        s->def.n_allowed = n;
    }
    free(extra);
    return true;
}

/* JSON form: with allow_adjacent (default false), (parent, child) of every
 * joint joins the allowed pairs, as a URDF without an SRDF has them. */
static bool add_adjacent(rpd_req *req, const cJSON *params, put_scratch *s)
{
    bool adjacent;
    if (!rpd_optional_bool(req, params, "allow_adjacent", false, &adjacent))
        return false;
    if (!adjacent || s->def.n_joints == 0)
        return true;
    size_t n = s->def.n_allowed + s->def.n_joints;
    if (n > req->core->limits.max_allowed_pairs)
        return rpd_fail_limit(req, RPD_LIMIT_max_allowed_pairs,
                              req->core->limits.max_allowed_pairs);
    const char **pairs = malloc(2 * n * sizeof *pairs);
    if (!pairs)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    if (s->def.n_allowed) /* allowed_pairs is NULL without params.allowed_pairs */
        memcpy(pairs, s->def.allowed_pairs, 2 * s->def.n_allowed * sizeof *pairs);
    for (size_t i = 0; i < s->def.n_joints; i++) {
        pairs[2 * (s->def.n_allowed + i)] = s->def.joints[i].parent;
        pairs[2 * (s->def.n_allowed + i) + 1] = s->def.joints[i].child;
    }
    free(s->more_pairs);
    s->more_pairs = pairs;
    s->def.allowed_pairs = pairs;
    s->def.n_allowed = n;
    return true;
}

bool rpd_m_model_put(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {
        "model",         "links",         "joints",         "tree_links",        "urdf",
        "srdf",          "meshes",        "spherize",       "mesh_covers",       "groups",
        "states",        "end_effectors", "passive_joints", "allow_adjacent",    "safety_margin",
        "allowed_pairs", "allowed_scene", "self_collision", "default_positions", NULL};
    const char *name;
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    put_scratch s;
    memset(&s, 0, sizeof s);
    bool self = true;
    double margin = 0.0;
    if (!rpd_check_keys(req, params, keys) || !model_name(req, params, &name) ||
        !rpd_optional_bool(req, params, "self_collision", true, &self))
        return false;
    /* A new model must fit under max_models; replacing one always may.
     * Checked before the definition is decoded: nothing is built for a
     * put that cannot go in. */
    rp_store *store = req->core->store;
    if (!rp_store_model_find(store, name) &&
        rp_store_model_count(store) >= req->core->limits.max_models)
        return rpd_fail_limit(req, RPD_LIMIT_max_models, req->core->limits.max_models);
    const cJSON *mj = rpd_param(params, "safety_margin", path);
    if (mj && !rp_codec_nonneg(mj, path, &margin, &ce))
        return rpd_fail_params(req, &ce);
    const cJSON *links = rpd_param(params, "links", path);
    const cJSON *joints = rpd_param(params, "joints", path);
    bool urdf = rpd_param(params, "urdf", path) != NULL;
    bool kinematic = urdf || joints || rpd_param(params, "tree_links", path);
    for (const cJSON *c = cJSON_IsArray(links) ? links->child : NULL; c && !kinematic; c = c->next)
        kinematic = cJSON_GetObjectItemCaseSensitive(c, "link") != NULL;
    static const char *const only_kin[] = {
        "srdf",   "allow_adjacent", "default_positions", "groups",
        "states", "end_effectors",  "passive_joints",    NULL};
    static const char *const not_urdf[] = {"links",          "joints",      "tree_links",
                                           "groups",         "states",      "end_effectors",
                                           "passive_joints", "mesh_covers", NULL};
    for (const char *const *k = only_kin; *k; k++)
        if (!kinematic && rpd_param(params, *k, path))
            return rpd_fail_path(req, path, "only for kinematic models (with joints or a urdf)");
    static const char *const only_urdf[] = {"srdf", "meshes", "spherize", NULL};
    for (const char *const *k = only_urdf; *k; k++)
        if (!urdf && rpd_param(params, *k, path))
            return rpd_fail_path(req, path, "needs a urdf");
    for (const char *const *k = not_urdf; *k; k++)
        if (urdf && rpd_param(params, *k, path))
            return rpd_fail_path(req, path, "not with a urdf: the document defines them");

    bool ok;
    if (urdf) {
        ok = decode_urdf(req, params, &s);
    } else if (kinematic) {
        ok = decode_kin_links(req, links, "params.links", &s.links, &s.shape_links,
                              &s.def.n_links) &&
             decode_joints(req, joints, "params.joints", &s.joints, &s.def.n_joints) &&
             decode_pairs(req, rpd_param(params, "allowed_pairs", path), path, &s.pairs,
                          &s.def.n_allowed);
        s.def.links = s.links;
        s.def.shape_links = s.shape_links;
        s.def.joints = s.joints;
        s.def.allowed_pairs = s.pairs;
        ok = ok && add_adjacent(req, params, &s) && decode_tree_links(req, params, &s) &&
             decode_mesh_covers(req, params, &s) && decode_srdf_json(req, params, &s);
        /* A tree without joints or shapes is still kinematic. */
        static const char *const no_links[1] = {NULL};
        if (ok && !s.def.shape_links)
            s.def.shape_links = no_links; /* never read: n_links is 0 */
    } else {
        ok = decode_links(req, links, "params.links", &s.links, &s.def.n_links) &&
             decode_pairs(req, rpd_param(params, "allowed_pairs", path), path, &s.pairs,
                          &s.def.n_allowed);
        s.def.links = s.links;
        s.def.allowed_pairs = s.pairs;
    }
    ok = ok && decode_defaults(req, rpd_param(params, "default_positions", path), path, &s) &&
         rpd_decode_scene_pairs(req, rpd_param(params, "allowed_scene", path), path, &s.scene_pairs,
                                &s.def.n_allowed_scene);
    if (!ok) {
        put_scratch_free(&s);
        return false;
    }
    s.def.allowed_scene = s.scene_pairs;
    s.def.safety_margin = margin;
    s.def.self_collision = self;
    /* Priced before the build (proto/PROTOCOL.md, Limits): a model.put runs
     * on the event loop, and its pair tables grow with links^2 and with
     * allowed scene pairs x the shapes each names. */
    if (!rpd_charge_work(req, rp_model_def_work(&s.def))) {
        put_scratch_free(&s);
        return false;
    }
    rp_model *m;
    rp_model_error me;
    rp_status st = rp_store_model_put(req->core->store, name, &s.def, &m, &me);
    const char *scene = NULL, *robot = NULL;
    if (st == RP_ERR_INVALID_ARG)
        ok = urdf ? fail_model_urdf(req, &s, &me) : fail_model_json(req, &s.def, &me);
    else if (st == RP_ERR_IN_USE && rp_store_model_user(req->core->store, name, &scene, &robot))
        ok = rpd_fail_in_use(req, name, scene, robot);
    else if (st)
        ok = rpd_fail_status(req, st);
    put_scratch_free(&s);
    if (!ok)
        return false;
    rp_jw_object_begin(w);
    write_model_rev(w, m);
    rp_jw_object_end(w);
    return true;
}

static void write_allowed_scene(rp_jw *w, const rp_model *m)
{
    RP_JW_KEY(w, "allowed_scene");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_allowed_scene_count(m); i++) {
        const char *link, *id;
        rp_model_allowed_scene_at(m, i, &link, &id);
        rp_jw_array_begin(w);
        rp_jw_string(w, link);
        rp_jw_string(w, id);
        rp_jw_array_end(w);
    }
    rp_jw_array_end(w);
}

/* The kinematic members of model.get (see proto/PROTOCOL.md). */
static void write_kinematic(rp_jw *w, const rp_model *m)
{
    RP_JW_KEY(w, "root");
    if (rp_model_root(m) == SIZE_MAX)
        rp_jw_null(w);
    else
        rp_jw_string(w, rp_model_tree_link_name(m, rp_model_root(m)));
    RP_JW_KEY(w, "links");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_tree_link_count(m); i++)
        rp_jw_string(w, rp_model_tree_link_name(m, i));
    rp_jw_array_end(w);
    RP_JW_KEY(w, "joints");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_dof(m); i++)
        rp_jw_string(w, rp_model_dof_name(m, i));
    rp_jw_array_end(w);
    RP_JW_KEY(w, "limits");
    rp_jw_object_begin(w);
    for (size_t i = 0; i < rp_model_dof(m); i++) {
        double lo, hi;
        rp_jw_key(w, rp_model_dof_name(m, i));
        if (!rp_model_dof_limits(m, i, &lo, &hi)) {
            rp_jw_null(w);
            continue;
        }
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "lower");
        rp_jw_double(w, lo);
        RP_JW_KEY(w, "upper");
        rp_jw_double(w, hi);
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
    RP_JW_KEY(w, "default_positions");
    rp_jw_object_begin(w);
    for (size_t i = 0; i < rp_model_dof(m); i++) {
        rp_jw_key(w, rp_model_dof_name(m, i));
        rp_jw_double(w, rp_model_dof_default(m, i));
    }
    rp_jw_object_end(w);
    RP_JW_KEY(w, "joint_definitions");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_joint_count(m); i++)
        rp_jw_joint_def(w, rp_model_joint_at(m, i));
    rp_jw_array_end(w);
    RP_JW_KEY(w, "shapes");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_link_count(m); i++) {
        rp_link l = *rp_model_link_at(m, i);
        rp_model_shape_local(m, i, &l.shape); /* as given, in its link's frame */
        rp_jw_link(w, &l, rp_model_tree_link_name(m, rp_model_shape_link(m, i)));
    }
    rp_jw_array_end(w);
    RP_JW_KEY(w, "allowed_pairs");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_allowed_link_count(m); i++) {
        size_t a, b;
        rp_model_allowed_link_at(m, i, &a, &b);
        rp_jw_array_begin(w);
        rp_jw_string(w, rp_model_tree_link_name(m, a));
        rp_jw_string(w, rp_model_tree_link_name(m, b));
        rp_jw_array_end(w);
    }
    rp_jw_array_end(w);
}

bool rpd_m_model_get(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    const rp_model *m = rpd_existing_model(req, params);
    if (!m)
        return false;
    rp_jw_object_begin(w);
    write_model_rev(w, m);
    RP_JW_KEY(w, "kinematic");
    rp_jw_bool(w, rp_model_is_kinematic(m));
    if (rp_model_is_kinematic(m)) {
        write_kinematic(w, m);
    } else {
        RP_JW_KEY(w, "links");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < rp_model_link_count(m); i++)
            rp_jw_link(w, rp_model_link_at(m, i), NULL);
        rp_jw_array_end(w);
        RP_JW_KEY(w, "allowed_pairs");
        rp_jw_array_begin(w);
        for (size_t i = 0; i < rp_model_allowed_count(m); i++) {
            size_t a, b;
            rp_model_allowed_at(m, i, &a, &b);
            rp_jw_array_begin(w);
            rp_jw_string(w, rp_model_link_at(m, a)->id);
            rp_jw_string(w, rp_model_link_at(m, b)->id);
            rp_jw_array_end(w);
        }
        rp_jw_array_end(w);
    }
    write_allowed_scene(w, m);
    RP_JW_KEY(w, "safety_margin");
    rp_jw_double(w, rp_model_safety_margin(m));
    RP_JW_KEY(w, "self_collision");
    rp_jw_bool(w, rp_model_self_collision(m));
    RP_JW_KEY(w, "frames");
    rp_jw_uint(w, rp_model_frame_count(m));
    rp_jw_mesh_covers(w, rp_model_definition(m));
    rp_jw_model_srdf(w, rp_model_definition(m));
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_model_delete(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", NULL};
    const char *name;
    if (!rpd_check_keys(req, params, keys) || !model_name(req, params, &name))
        return false;
    rp_status st = rp_store_model_delete(req->core->store, name);
    const char *scene = NULL, *robot = NULL;
    if (st == RP_ERR_NOT_FOUND)
        return rpd_fail_not_found(req, "model", name);
    if (st == RP_ERR_IN_USE && rp_store_model_user(req->core->store, name, &scene, &robot))
        return rpd_fail_in_use(req, name, scene, robot);
    if (st)
        return rpd_fail_status(req, st);
    rpd_write_deleted(w, "model", name, rp_store_revision(req->core->store));
    return true;
}

bool rpd_m_model_list(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    const rp_store *st = req->core->store;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "models");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_store_model_count(st); i++) {
        const rp_model *m = rp_store_model_at(st, i);
        rp_jw_object_begin(w);
        write_model_rev(w, m);
        /* As model.get lists them (proto/PROTOCOL.md): a kinematic model's
         * links are its tree's, each holding any number of shapes; a
         * frame-indexed model's links are its shapes. */
        RP_JW_KEY(w, "links");
        rp_jw_uint(w,
                   rp_model_is_kinematic(m) ? rp_model_tree_link_count(m) : rp_model_link_count(m));
        RP_JW_KEY(w, "shapes");
        rp_jw_uint(w, rp_model_link_count(m));
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
    rp_jw_object_end(w);
    return true;
}
