/* SPDX-License-Identifier: MIT */
/*
 * check, check.batch, check.motion and model.fk: configurations of a model
 * (joint-frame poses, or joint values of a kinematic model) and motions
 * against a scene.  Every parameter, every configuration included, is
 * decoded and validated before anything is computed.  Per-request attached
 * shapes and allowed scene pairs make a temporary extension of the model
 * (rp_model_extend) that lives for the request.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_setup.h"
#include "methods.h"
#include "server/core/pool.h"

void rpd_check_setup_free(check_setup *cs)
{
    free(cs->group_dofs);
    cs->group_dofs = NULL;
    rp_model_free(cs->ext);
    cs->ext = NULL;
    free(cs->ignore);
    cs->ignore = NULL;
    for (size_t k = 0; k < cs->n_held; k++)
        free(cs->held[k]);
    free(cs->held);
    cs->held = NULL;
    cs->n_held = 0;
    cs->opts.ignore = NULL;
    cs->opts.n_ignore = 0;
}

/* params.attached: [{id, link, shape, touch_links?}] into a (malloc'ed)
 * array whose strings point into the tree. */
static bool decode_attached(rpd_req *req, const cJSON *j, const char *path, rp_attached **out,
                            size_t *n_out, const char ***touch_out)
{
    static const char *const keys[] = {"id", "link", "shape", "touch_links", NULL};
    *out = NULL;
    *n_out = 0;
    *touch_out = NULL;
    if (!j)
        return true;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of attached shapes");
    size_t n = (size_t)cJSON_GetArraySize(j), total_touch = 0;
    if (n > req->core->limits.max_model_links)
        return rpd_fail_limit(req, RPD_LIMIT_max_model_links, req->core->limits.max_model_links);
    for (const cJSON *c = j->child; c; c = c->next) {
        const cJSON *t =
            cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "touch_links") : NULL;
        if (cJSON_IsArray(t))
            total_touch += (size_t)cJSON_GetArraySize(t);
    }
    if (total_touch > req->core->limits.max_allowed_pairs)
        return rpd_fail_limit(req, RPD_LIMIT_max_allowed_pairs,
                              req->core->limits.max_allowed_pairs);
    rp_attached *a = calloc(n ? n : 1, sizeof *a);
    const char **touch = malloc((total_touch ? total_touch : 1) * sizeof *touch);
    if (!a || !touch) {
        free(a);
        free(touch);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    size_t k = 0, used = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        char ap[RP_CODEC_PATH_MAX], sub[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(ap, path, k);
        if (!rp_codec_object_keys(c, ap, keys, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "id"),
                         rp_codec_path_key(sub, ap, "id"), &a[k].id, &ce) ||
            !rp_codec_id(cJSON_GetObjectItemCaseSensitive(c, "link"),
                         rp_codec_path_key(sub, ap, "link"), &a[k].link, &ce) ||
            !rp_codec_link_shape(cJSON_GetObjectItemCaseSensitive(c, "shape"),
                                 rp_codec_path_key(sub, ap, "shape"), "attached", &a[k].shape,
                                 &ce)) {
            free(a);
            free(touch);
            return rpd_fail_params(req, &ce);
        }
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "touch_links");
        if (!t)
            continue;
        rp_codec_path_key(sub, ap, "touch_links");
        if (!cJSON_IsArray(t)) {
            free(a);
            free(touch);
            return rpd_fail_path(req, sub, "must be an array of link names");
        }
        a[k].touch_links = touch + used;
        size_t e = 0;
        for (const cJSON *x = t->child; x; x = x->next, e++) {
            char tp[RP_CODEC_PATH_MAX];
            if (!rp_codec_id(x, rp_codec_path_index(tp, sub, e), &touch[used++], &ce)) {
                free(a);
                free(touch);
                return rpd_fail_params(req, &ce);
            }
        }
        a[k].n_touch = e;
    }
    *out = a;
    *n_out = n;
    *touch_out = touch; /* every touch_links points into it */
    return true;
}

/* The objects attached (scene.attach) to a robot instance of this model
 * that the check ignores (unless it ignores them too): a robot process
 * checking its own motions sees what it holds attached to the link being
 * checked, not where the shared scene has it (proto/PROTOCOL.md, Attached
 * objects).  Appends their
 * shapes, in their links' frames, to *att (grown), and their names to the
 * ignore list; false with the request failed. */
static bool scene_attached(rpd_req *req, check_setup *cs, rp_attached **att, size_t *n_att)
{
    const rp_scene *sc = cs->scene;
    size_t n_ign = cs->opts.n_ignore, n_obj = sc ? rp_scene_object_count(sc) : 0;
    for (size_t i = 0; i < n_ign; i++) {
        const rp_object *r = rp_scene_object_find(sc, cs->ignore[i]);
        if (!r || !rp_object_is_robot(r) || rp_object_model(r) != cs->model)
            continue;
        for (size_t j = 0; j < n_obj; j++) {
            const rp_object *o = rp_scene_object_at(sc, j);
            const char *to = rp_object_attached_robot(o);
            if (!to || strcmp(to, cs->ignore[i]) != 0)
                continue;
            /* An object the request ignores itself is left out whole. */
            bool listed = false;
            for (size_t q = 0; q < n_ign && !listed; q++)
                listed = strcmp(cs->ignore[q], rp_object_name(o)) == 0;
            if (listed)
                continue;
            size_t ns = rp_object_shape_count(o);
            rp_attached *grown = realloc(*att, (*n_att + ns + 1) * sizeof *grown);
            char **held = realloc(cs->held, (cs->n_held + ns + 1) * sizeof *held);
            const char **ign = realloc(cs->ignore, (cs->opts.n_ignore + 1) * sizeof *ign);
            if (grown)
                *att = grown;
            if (held)
                cs->held = held;
            if (ign)
                cs->ignore = ign;
            if (!grown || !held || !ign)
                return rpd_fail_status(req, RP_ERR_NOMEM);
            cs->ignore[cs->opts.n_ignore++] = rp_object_name(o);
            cs->opts.ignore = cs->ignore;
            rp_transform rel = rp_object_attached_rel(o);
            for (size_t k = 0; k < ns; k++) {
                const rp_shape_put *p = rp_object_shape_at(o, k);
                size_t len = strlen(rp_object_name(o)) + strlen(p->id) + 2;
                char *id = malloc(len);
                if (!id)
                    return rpd_fail_status(req, RP_ERR_NOMEM);
                snprintf(id, len, "%s/%s", rp_object_name(o), p->id);
                cs->held[cs->n_held++] = id;
                (*att)[(*n_att)++] = (rp_attached){.id = id,
                                                   .link = rp_object_attached_link(sc, o),
                                                   .shape = rp_transform_shape(&rel, &p->shape)};
            }
        }
    }
    return true;
}

/* Builds the extension for params.attached and params.allowed_scene, and
 * for the objects attached to the ignored instance of the model. */
static bool decode_extension(rpd_req *req, const cJSON *params, check_setup *cs)
{
    char apath[RP_CODEC_PATH_MAX], spath[RP_CODEC_PATH_MAX];
    const cJSON *aj = rpd_param(params, "attached", apath);
    const cJSON *sj = rpd_param(params, "allowed_scene", spath);
    rp_attached *att = NULL;
    size_t n_att = 0, n_as = 0;
    const char **as = NULL, **touch = NULL;
    if (!decode_attached(req, aj, apath, &att, &n_att, &touch))
        return false;
    size_t n_request = n_att;
    if (!scene_attached(req, cs, &att, &n_att)) {
        free(att);
        free(touch);
        return false;
    }
    if (!aj && !sj && n_att == 0)
        return true;
    if (!rpd_decode_scene_pairs(req, sj, spath, &as, &n_as)) {
        free(att);
        free(touch);
        return false;
    }
    /* Priced before anything is built: attached shapes, their touch links
     * and the allowed pairs make pair tables that grow with their product. */
    rp_extend_error ee;
    bool ok = rpd_charge_work(req, rp_model_extend_work(cs->model, att, n_att, n_as));
    rp_status st = ok ? rp_model_extend(cs->model, att, n_att, as, n_as, &cs->ext, &ee) : RP_OK;
    if (st == RP_ERR_INVALID_ARG && ee.problem != RP_EXTEND_UNKNOWN_SCENE_LINK &&
        ee.index >= n_request) {
        ok = rpd_fail_path(req, "params.ignore",
                           "names a robot instance holding an attached object whose shape ids "
                           "clash with the model's");
    } else if (st == RP_ERR_INVALID_ARG) {
        char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX];
        rp_codec_path_index(p1, ee.problem == RP_EXTEND_UNKNOWN_SCENE_LINK ? spath : apath,
                            ee.index);
        switch (ee.problem) {
        case RP_EXTEND_DUPLICATE_ID:
            ok = rpd_fail_path(req, rp_codec_path_key(p2, p1, "id"),
                               "is already a shape id of the model or of another attached shape");
            break;
        case RP_EXTEND_UNKNOWN_LINK:
            ok =
                rpd_fail_path(req, rp_codec_path_key(p2, p1, "link"), "names no link of the model");
            break;
        case RP_EXTEND_UNKNOWN_TOUCH:
            rp_codec_path_key(p2, p1, "touch_links");
            ok = rpd_fail_path(req, rp_codec_path_index(p1, p2, ee.element),
                               "names no link of the model");
            break;
        case RP_EXTEND_UNKNOWN_SCENE_LINK:
            ok = rpd_fail_path(req, rp_codec_path_index(p2, p1, 0), "names no link of the model");
            break;
        default:
            ok = rpd_fail_path(req, rp_codec_path_key(p2, p1, "shape"), "invalid shape");
        }
    } else if (st) {
        ok = rpd_fail_status(req, st);
    }
    free(att);
    free(touch);
    free(as);
    if (ok)
        cs->model = cs->ext;
    return ok;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* params.group (proto/PROTOCOL.md, "Groups and named states"): a group of
 * the model; its active joints, less the passive ones, in model order,
 * become req->group_dofs. */
static bool decode_group(rpd_req *req, const cJSON *params, const char *joints, check_setup *cs)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *gj = rpd_param(params, "group", path);
    if (!gj)
        return true;
    const char *name;
    if (!rp_codec_name(gj, path, &name, &ce))
        return rpd_fail_params(req, &ce);
    if (!joints)
        return rpd_fail_path(req, path, "takes joint vectors (a kinematic model's \"joints\")");
    const rp_model_def *def = rp_model_definition(cs->model);
    const rp_group_def *g = NULL;
    for (size_t i = 0; def && i < def->n_groups && !g; i++)
        if (strcmp(def->groups[i].name, name) == 0)
            g = &def->groups[i];
    if (!g)
        return rpd_fail_path(req, path, "is no group of the model (model.get lists its groups)");
    cs->group_dofs = malloc((g->n_joints ? g->n_joints : 1) * sizeof *cs->group_dofs);
    if (!cs->group_dofs)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    size_t n = 0;
    for (size_t i = 0; i < g->n_joints; i++) {
        size_t d = rp_model_dof_find(cs->model, g->joints[i]);
        bool passive = false;
        for (size_t p = 0; p < def->n_passive && !passive; p++)
            passive = strcmp(def->passive_joints[p], g->joints[i]) == 0;
        if (d != SIZE_MAX && !passive)
            cs->group_dofs[n++] = d;
    }
    qsort(cs->group_dofs, n, sizeof *cs->group_dofs, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || cs->group_dofs[u - 1] != cs->group_dofs[i])
            cs->group_dofs[u++] = cs->group_dofs[i];
    if (!u)
        return rpd_fail_path(req, path,
                             "the group moves no active joint (its joints are fixed, mimic or "
                             "passive)");
    req->group_dofs = cs->group_dofs;
    req->n_group_dofs = u;
    req->group = g->name;
    return true;
}

/* model, scene, margin, report, ignore_limits, attached, allowed_scene;
 * `joints` (non-NULL: the parameter, e.g. "params.joints"): the request is
 * in joint space, so the model must be kinematic. */
bool rpd_check_setup(rpd_req *req, const cJSON *params, const char *joints, check_setup *cs)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    memset(cs, 0, sizeof *cs);
    cs->model = rpd_existing_model(req, params);
    if (!cs->model)
        return false;
    if (joints && !rp_model_is_kinematic(cs->model))
        return rpd_fail_path(req, joints,
                             "needs a kinematic model (one defined by joints or a URDF); this "
                             "model takes frame poses (\"frames\")");
    if (!decode_group(req, params, joints, cs))
        return false;
    cs->n_base = rp_model_link_count(cs->model);
    cs->n_frames = rp_model_frame_count(cs->model);
    const cJSON *sj = rpd_param(params, "scene", path);
    if (sj) {
        const char *name;
        if (!rp_codec_name(sj, path, &name, &ce))
            return rpd_fail_params(req, &ce);
        cs->scene = rp_store_find(req->core->store, name);
        if (!cs->scene)
            return rpd_fail_not_found(req, "scene", name);
    }
    const cJSON *mj = rpd_param(params, "margin", path);
    if (mj) {
        if (!rp_codec_number(mj, path, &cs->opts.margin, &ce))
            return rpd_fail_params(req, &ce);
        cs->opts.has_margin = true;
    }
    cs->opts.report = RP_REPORT_CLOSEST;
    const cJSON *rj = rpd_param(params, "report", path);
    if (rj) {
        const char *r;
        if (!rp_codec_string(rj, path, &r, &ce))
            return rpd_fail_params(req, &ce);
        if (strcmp(r, "first") == 0)
            cs->opts.report = RP_REPORT_FIRST;
        else if (strcmp(r, "closest") == 0)
            cs->opts.report = RP_REPORT_CLOSEST;
        else if (strcmp(r, "all") == 0)
            cs->opts.report = RP_REPORT_ALL;
        else
            return rpd_fail_path(req, path, "must be \"first\", \"closest\" or \"all\"");
    }
    if (!rpd_optional_bool(req, params, "ignore_limits", false, &cs->ignore_limits))
        return false;
    if (!rpd_decode_ignore(req, params, cs->scene, &cs->ignore, &cs->opts.n_ignore))
        return false;
    cs->opts.ignore = cs->ignore;
    return decode_extension(req, params, cs);
}

/* What a joint vector holds, for reasons: the model's joints or
 * params.group's. */
static const char *row_what(const rpd_req *req, char *buf, size_t cap)
{
    if (req->group_dofs)
        rpd_format(buf, cap, "the active joints of group %.60s, in the model's order", req->group);
    else
        rpd_format(buf, cap, "the model's joints, as model.get lists them");
    return buf;
}

/* Why an array of n joint values is not a joint vector of a model with
 * dof active joints (or of params.group's joints) into reason; true. */
static bool joint_count_reason(const rpd_req *req, size_t dof, size_t n, char *reason)
{
    char what[RP_CODEC_REASON_MAX / 2];
    rpd_format(reason, RP_CODEC_REASON_MAX, "must hold %zu values (%s), not %zu",
               req->group_dofs ? req->n_group_dofs : dof, row_what(req, what, sizeof what), n);
    return true;
}

/* A named state of m (a string where a joint vector goes): its values
 * over the defaults.  With params.group the group's state of that name;
 * else the one state of that name. */
static bool decode_state(rpd_req *req, const rp_model *m, const char *name, const char *path,
                         double *q)
{
    const rp_model_def *def = rp_model_definition(m);
    const rp_state_def *found = NULL;
    size_t count = 0;
    for (size_t i = 0; def && i < def->n_states; i++) {
        const rp_state_def *t = &def->states[i];
        if (strcmp(t->name, name) != 0 || (req->group && strcmp(t->group, req->group) != 0))
            continue;
        found = t;
        count++;
    }
    char reason[RP_CODEC_REASON_MAX];
    if (!found) {
        rpd_format(reason, sizeof reason,
                   "\"%.40s\" is no named state of the model%s%.40s (model.get lists them); a "
                   "joint vector is an array of values, an object {joint: value} or a state's "
                   "name",
                   name, req->group ? " for group " : "", req->group ? req->group : "");
        return rpd_fail_path(req, path, reason);
    }
    if (count > 1) {
        rpd_format(reason, sizeof reason,
                   "state \"%.60s\" is defined for several groups: give params.group", name);
        return rpd_fail_path(req, path, reason);
    }
    rp_model_default_joints(m, q);
    for (size_t k = 0; k < found->n_joints; k++) {
        size_t d = rp_model_dof_find(m, found->joints[k]);
        if (d != SIZE_MAX) /* (the store checked: always) */
            q[d] = found->values[k];
    }
    return true;
}

/* A joint vector at `path`: an array of the active joints' values in the
 * model's order (with params.group: of the group's joints, the others at
 * their defaults), an object {joint: value} (others: defaults), or the
 * name of a state. */
bool rpd_decode_joint_vector(rpd_req *req, const rp_model *m, const cJSON *j, const char *path,
                             double *q)
{
    size_t dof = rp_model_dof(m);
    rp_codec_err ce;
    char sub[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
    if (cJSON_IsString(j))
        return decode_state(req, m, j->valuestring, path, q);
    if (cJSON_IsArray(j)) {
        size_t n = (size_t)cJSON_GetArraySize(j);
        size_t want = req->group_dofs ? req->n_group_dofs : dof;
        if (n != want && joint_count_reason(req, dof, n, reason))
            return rpd_fail_path(req, path, reason);
        if (req->group_dofs)
            rp_model_default_joints(m, q);
        size_t k = 0;
        for (const cJSON *c = j->child; c; c = c->next, k++) {
            size_t at = req->group_dofs ? req->group_dofs[k] : k;
            if (!rp_codec_number(c, rp_codec_path_index(sub, path, k), &q[at], &ce))
                return rpd_fail_params(req, &ce);
        }
        return true;
    }
    if (!cJSON_IsObject(j))
        return rpd_fail_path(req, path,
                             j ? "must be an array of joint values, an object "
                                 "{joint name: value} or the name of a state"
                               : "is required");
    rp_status st = rp_codec_object_unique(j, path, &ce);
    if (st == RP_ERR_NOMEM)
        return rpd_fail_status(req, st);
    if (st)
        return rpd_fail_params(req, &ce);
    rp_model_default_joints(m, q);
    for (const cJSON *c = j->child; c; c = c->next) {
        rp_codec_path_key(sub, path, c->string);
        size_t i = rp_model_dof_find(m, c->string);
        if (i == SIZE_MAX)
            return rpd_fail_path(req, sub, "is no active joint of the model (see model.get)");
        if (!rp_codec_number(c, sub, &q[i], &ce))
            return rpd_fail_params(req, &ce);
    }
    return true;
}

/* ---- binary joint arrays: joints_f64, path_f64 -------------------------------------- */

/* proto/PROTOCOL.md, "Binary joint arrays": base64 (RFC 4648, '='
 * padding) of little-endian float64 values, row after row, each row a
 * joint vector as an array gives it (with params.group, the group's
 * joints).  How many values the text holds follows from its length, so a
 * request is counted, limited and priced as its JSON twin would be before
 * a byte of it is decoded. */

/* The float64 values base64 string j at `path` holds, from its length
 * alone, into *values; false with the request failed when j is no string,
 * or its length is no base64 length or no whole number of float64s. */
static bool f64_count(rpd_req *req, const cJSON *j, const char *path, size_t *values)
{
    if (!cJSON_IsString(j) || !j->valuestring)
        return rpd_fail_path(req, path,
                             "must be a base64 string (RFC 4648, '=' padding) of little-endian "
                             "float64 values");
    const char *s = j->valuestring;
    size_t len = strlen(s);
    if (len % 4)
        return rpd_fail_path(req, path, "must be base64 whose length is a multiple of 4");
    size_t pad = len && s[len - 1] == '=' ? 1 + (len > 1 && s[len - 2] == '=') : 0;
    size_t bytes = len / 4 * 3 - pad;
    if (bytes % 8) {
        char reason[RP_CODEC_REASON_MAX];
        rpd_format(reason, sizeof reason,
                   "must decode to whole float64 values (8 bytes each), not %zu bytes", bytes);
        return rpd_fail_path(req, path, reason);
    }
    *values = bytes / 8;
    return true;
}

/* `values` (f64_count) as rows of `width` into *rows: false with the
 * request failed unless they make a whole number of at least `min_rows`
 * rows (`what` names a row in the reason: "configuration", "waypoint"),
 * and as many as params.rows says when it is given. */
static bool f64_rows(rpd_req *req, const cJSON *params, const char *path, size_t values,
                     size_t width, size_t min_rows, const char *what, size_t *rows)
{
    char reason[RP_CODEC_REASON_MAX], row[RP_CODEC_REASON_MAX / 2];
    /* params.rows: the rows the client meant.  Without it, a table whose
     * rows have the wrong length can still hold a whole number of rows of
     * the right one (8 rows of 7 values are 7 rows of 8) and be read as
     * other configurations; with it, that is an error. */
    char rpath[RP_CODEC_PATH_MAX];
    const cJSON *rj = rpd_param(params, "rows", rpath);
    if (rj) {
        double d = cJSON_IsNumber(rj) ? rj->valuedouble : -1.0;
        if (!(d >= 1 && d <= 9007199254740992.0 && d == (double)(uint64_t)d))
            return rpd_fail_path(req, rpath,
                                 "must be an integer >= 1 (the rows of the binary table)");
        if (width && (uint64_t)d * width != values) {
            rpd_format(reason, sizeof reason,
                       "is %.0f, but %s holds %zu values: %.0f rows of %zu (%s) are %.0f values", d,
                       path + strlen("params."), values, d, width, row_what(req, row, sizeof row),
                       d * (double)width);
            return rpd_fail_path(req, rpath, reason);
        }
    }
    if (width == 0)
        return rpd_fail_path(req, path,
                             "cannot hold rows of no values (the model has no active joints): "
                             "give the JSON form");
    if (values % width) {
        rpd_format(reason, sizeof reason,
                   "holds %zu value%s, not a multiple of the row length %zu (%s)", values,
                   values == 1 ? "" : "s", width, row_what(req, row, sizeof row));
        return rpd_fail_path(req, path, reason);
    }
    if (values / width < min_rows) {
        rpd_format(reason, sizeof reason,
                   "holds %zu row%s of %zu values; give at least %zu (one %s a row)",
                   values / width, values / width == 1 ? "" : "s", width, min_rows, what);
        return rpd_fail_path(req, path, reason);
    }
    *rows = values / width;
    return true;
}

/* Decodes base64 string j, counted by f64_count (`values` of them), into a
 * malloc'ed array, rows of `width`; NULL with the request failed for text
 * that is not base64 or a value that is not finite (named by its row and
 * joint, both from 0, or by its joint alone when `single`). */
static double *f64_decode(rpd_req *req, const cJSON *j, const char *path, size_t values,
                          size_t width, bool single)
{
    const char *s = j->valuestring, *why = NULL;
    size_t len = strlen(s), room = rp_base64_decoded_max(len), got = 0;
    size_t n = (room > values * 8 ? room : values * 8) / 8 + 1;
    double *v = malloc(n * sizeof *v);
    if (!v) {
        rpd_fail_status(req, RP_ERR_NOMEM);
        return NULL;
    }
    /* The bytes land in v itself; each value is then read from its own
     * eight bytes, little-endian, whatever the host's order. */
    unsigned char *raw = (unsigned char *)v;
    if (!rp_base64_decode(s, len, raw, &got, &why) || got != values * 8) {
        free(v);
        rpd_fail_path(req, path, why ? why : "must be base64");
        return NULL;
    }
    for (size_t i = 0; i < values; i++) {
        const unsigned char *b = raw + 8 * i;
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--)
            u = u << 8 | b[k];
        memcpy(&v[i], &u, sizeof u);
        if (!isfinite(v[i])) {
            char reason[RP_CODEC_REASON_MAX];
            if (single)
                rpd_format(reason, sizeof reason, "joint %zu is not finite", i);
            else
                rpd_format(reason, sizeof reason, "row %zu joint %zu is not finite", i / width,
                           i % width);
            free(v);
            rpd_fail_path(req, path, reason);
            return NULL;
        }
    }
    return v;
}

/* `rows` rows of values v into joint vectors q (each rp_model_dof values,
 * at least one): whole vectors as they are, or params.group's values over
 * the defaults, as rpd_decode_joint_vector places an array. */
static void place_rows(const rpd_req *req, const rp_model *m, const double *v, size_t rows,
                       double *q)
{
    size_t dof = rp_model_dof(m), d1 = dof ? dof : 1;
    for (size_t k = 0; k < rows; k++) {
        if (!req->group_dofs) {
            memcpy(&q[k * d1], &v[k * dof], dof * sizeof *q);
            continue;
        }
        rp_model_default_joints(m, &q[k * d1]);
        for (size_t i = 0; i < req->n_group_dofs; i++)
            q[k * d1 + req->group_dofs[i]] = v[k * req->n_group_dofs + i];
    }
}

/* joints_f64 of check and model.fk at `path`: one joint vector into q. */
static bool decode_f64_vector(rpd_req *req, const rp_model *m, const cJSON *j, const char *path,
                              double *q)
{
    size_t dof = rp_model_dof(m), want = req->group_dofs ? req->n_group_dofs : dof, n;
    char reason[RP_CODEC_REASON_MAX];
    if (!f64_count(req, j, path, &n))
        return false;
    if (n != want && joint_count_reason(req, dof, n, reason))
        return rpd_fail_path(req, path, reason);
    double *v = f64_decode(req, j, path, n, want, true);
    if (!v)
        return false;
    place_rows(req, m, v, 1, q);
    free(v);
    return true;
}

/* The members of a request that give its joints in two forms: both is an
 * error at the binary one's path; *bin (and *json) the one given, or NULL. */
static bool one_of(rpd_req *req, const cJSON *params, const char *key, const char *key_f64,
                   const cJSON **json, const cJSON **bin)
{
    char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
    *json = rpd_param(params, key, p1);
    *bin = rpd_param(params, key_f64, p2);
    if (*json && *bin) {
        rpd_format(reason, sizeof reason, "give either %s or %s, not both", key, key_f64);
        return rpd_fail_path(req, p2, reason);
    }
    return true;
}

/* The error for a pose that moved a link beyond the range of doubles
 * (RP_ERR_NONFINITE from rp_model_check): the path names the pose that
 * did it, under `config_path` ("params" or "params.configurations[k]"). */
static bool fail_out_of_range(rpd_req *req, const check_setup *cs, const char *config_path,
                              size_t link)
{
    char path[RP_CODEC_PATH_MAX], reason[RP_CODEC_REASON_MAX];
    const rp_link *l = rp_model_link_at(cs->model, link);
    if (l->frame < 0) {
        rp_codec_path_key(path, config_path, "base");
    } else {
        char frames[RP_CODEC_PATH_MAX];
        rp_codec_path_index(path, rp_codec_path_key(frames, config_path, "frames"),
                            (size_t)l->frame);
    }
    rpd_format(reason, sizeof reason,
               "moves link '%s' beyond the largest double (a coordinate past 1.8e308 m)", l->id);
    return rpd_fail_path(req, path, reason);
}

/* Work one configuration may need (rp_model_check_work): each shape
 * against the scene (a tree walk), every self pair when checked, and the
 * allowed scene exclusions. */
uint64_t rpd_check_cost(const check_setup *cs)
{
    /* (a cloud's spheres are walked like the scene's shapes) */
    size_t n = cs->scene ? rp_scene_shape_count(cs->scene) + rp_scene_cloud_spheres(cs->scene) : 0;
    uint64_t w = rp_model_check_work(cs->model, n);
    return w < UINT64_MAX / 4 ? w : UINT64_MAX / 4; /* room to add to it */
}

/* Decodes frames (exactly cs->n_frames poses) and an optional base pose at
 * `path` (".frames", ".base" are appended). */
static bool decode_config(rpd_req *req, const check_setup *cs, const cJSON *frames,
                          const cJSON *base, const char *frames_path, const char *base_path,
                          rp_transform *out_frames, rp_transform *out_base, bool *has_base)
{
    rp_codec_err ce;
    if (!cJSON_IsArray(frames))
        return rpd_fail_path(req, frames_path,
                             frames ? "must be an array of poses" : "is required");
    size_t n = (size_t)cJSON_GetArraySize(frames);
    if (n != cs->n_frames) {
        char reason[RP_CODEC_REASON_MAX];
        snprintf(reason, sizeof reason, "must hold %zu poses (the model's frames), not %zu",
                 cs->n_frames, n);
        return rpd_fail_path(req, frames_path, reason);
    }
    size_t k = 0;
    for (const cJSON *f = frames->child; f; f = f->next, k++) {
        char fp[RP_CODEC_PATH_MAX];
        if (!rp_codec_pose(f, rp_codec_path_index(fp, frames_path, k), &out_frames[k], &ce))
            return rpd_fail_params(req, &ce);
    }
    *has_base = base != NULL;
    if (base && !rp_codec_pose(base, base_path, out_base, &ce))
        return rpd_fail_params(req, &ce);
    return true;
}

/* The members of a pair: link, other, kind ("with" for attached shapes),
 * and the distance when asked. */
void rpd_write_pair_members(rp_jw *w, const check_setup *cs, const rp_check_pair *p, bool distance)
{
    const rp_model *m = cs->model;
    size_t link = p->link, other = p->other;
    bool self = p->kind == RP_PAIR_SELF;
    /* An attached shape is reported as the link, whatever the order. */
    bool attached = link >= cs->n_base || (self && other >= cs->n_base);
    if (self && other >= cs->n_base && link < cs->n_base) {
        size_t t = link;
        link = other;
        other = t;
    }
    RP_JW_KEY(w, "link");
    rp_jw_string(w, rp_model_link_at(m, link)->id);
    RP_JW_KEY(w, "other");
    if (self)
        rp_jw_string(w, rp_model_link_at(m, other)->id);
    else
        rp_jw_scene_id(w, cs->scene, other);
    RP_JW_KEY(w, "kind");
    rp_jw_string(w, attached ? "attached" : self ? "self" : "scene");
    if (attached) {
        RP_JW_KEY(w, "with");
        rp_jw_string(w, self ? "robot" : "scene");
    }
    if (distance) {
        RP_JW_KEY(w, "distance");
        rp_jw_double(w, p->distance);
    }
}

static void write_pair(rp_jw *w, const check_setup *cs, const rp_check_pair *p, bool distance)
{
    rp_jw_object_begin(w);
    rpd_write_pair_members(w, cs, p, distance);
    rp_jw_object_end(w);
}

/* Writes the members of one check result (which ones depends on the
 * report, see proto/PROTOCOL.md) into an open object. */
static void write_result_members(rp_jw *w, const check_setup *cs, const rp_check_result *r)
{
    RP_JW_KEY(w, "collision");
    rp_jw_bool(w, r->collision);
    if (cs->opts.report == RP_REPORT_FIRST) {
        if (r->collision) {
            RP_JW_KEY(w, "violations");
            rp_jw_array_begin(w);
            for (size_t i = 0; i < r->n_violations; i++)
                write_pair(w, cs, &r->violations[i], true);
            rp_jw_array_end(w);
        }
    } else {
        RP_JW_KEY(w, "min_distance");
        if (r->has_min)
            rp_jw_double(w, r->closest.distance);
        else
            rp_jw_null(w);
        RP_JW_KEY(w, "closest");
        if (r->has_min)
            write_pair(w, cs, &r->closest, false);
        else
            rp_jw_null(w);
        if (cs->opts.report == RP_REPORT_ALL) {
            RP_JW_KEY(w, "violations");
            rp_jw_array_begin(w);
            for (size_t i = 0; i < r->n_violations; i++)
                write_pair(w, cs, &r->violations[i], true);
            rp_jw_array_end(w);
        }
    }
}

void rpd_write_scene_revision(rp_jw *w, const check_setup *cs)
{
    RP_JW_KEY(w, "scene_revision");
    if (cs->scene)
        rp_jw_uint(w, rp_scene_revision(cs->scene));
    else
        rp_jw_null(w);
}

/* Writes "limits": the active joints of q outside their limits; false
 * (nothing written) when there are none. */
bool rpd_write_limits(rp_jw *w, const rp_model *m, const double *q)
{
    size_t i = rp_model_limit_violation(m, q, 0);
    if (i == SIZE_MAX)
        return false;
    RP_JW_KEY(w, "limits");
    rp_jw_array_begin(w);
    for (; i != SIZE_MAX; i = rp_model_limit_violation(m, q, i + 1)) {
        double lo, hi;
        rp_model_dof_limits(m, i, &lo, &hi);
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "joint");
        rp_jw_string(w, rp_model_dof_name(m, i));
        RP_JW_KEY(w, "value");
        rp_jw_double(w, q[i]);
        RP_JW_KEY(w, "lower");
        rp_jw_double(w, lo);
        RP_JW_KEY(w, "upper");
        rp_jw_double(w, hi);
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
    return true;
}

/* One joint-space result: "valid" (no collision, and inside the limits
 * unless ignored), the check's members, and "limits" when violated. */
static void write_joint_result(rp_jw *w, const check_setup *cs, const rp_check_result *r,
                               const double *q)
{
    bool in_limits = cs->ignore_limits || rp_model_limit_violation(cs->model, q, 0) == SIZE_MAX;
    RP_JW_KEY(w, "valid");
    rp_jw_bool(w, in_limits && !r->collision);
    write_result_members(w, cs, r);
    if (!cs->ignore_limits)
        rpd_write_limits(w, cs->model, q);
}

/* The error for a non-finite result of FK (values so large that a link
 * leaves the range of doubles). */
bool rpd_fail_joint_range(rpd_req *req, const char *path)
{
    return rpd_fail_path(req, path,
                         "moves a link beyond the largest double (a coordinate past 1.8e308 m)");
}

/* rpd_fail_joint_range for row k of params.joints_f64 (at `path`). */
static bool fail_row_range(rpd_req *req, const char *path, size_t k)
{
    char reason[RP_CODEC_REASON_MAX];
    rpd_format(reason, sizeof reason,
               "row %zu moves a link beyond the largest double (a coordinate past 1.8e308 m)", k);
    return rpd_fail_path(req, path, reason);
}

/* check in joint space: params.joints, or params.joints_f64. */
static bool check_joints(rpd_req *req, const cJSON *params, check_setup *cs, rp_jw *w)
{
    char jpath[RP_CODEC_PATH_MAX], bpath[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *jf = rpd_param(params, "joints_f64", jpath);
    const cJSON *jj = jf ? NULL : rpd_param(params, "joints", jpath);
    const cJSON *bj = rpd_param(params, "base", bpath);
    size_t dof = rp_model_dof(cs->model);
    if (!rpd_charge_work(req, rpd_check_cost(cs) + dof))
        return false;
    double *q = malloc((dof ? dof : 1) * sizeof *q);
    if (!q)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    uint64_t charged = rpd_check_cost(cs) + dof;
    rp_work meter = rpd_walk_meter(req, charged, 1.0);
    rp_check_opts opts = cs->opts;
    opts.work = &meter;
    rp_transform base;
    bool ok = jf ? decode_f64_vector(req, cs->model, jf, jpath, q)
                 : rpd_decode_joint_vector(req, cs->model, jj, jpath, q);
    if (ok && bj && !rp_codec_pose(bj, bpath, &base, &ce))
        ok = rpd_fail_params(req, &ce);
    rp_check_result res;
    memset(&res, 0, sizeof res);
    if (ok) {
        rp_status st =
            rp_model_check_joints(cs->model, cs->scene, bj ? &base : NULL, q, &opts, &res);
        if (st == RP_ERR_NONFINITE)
            ok = rpd_fail_joint_range(req, jpath);
        else
            ok = rpd_walk_settle(req, &meter, charged, st);
    }
    if (ok) {
        rp_jw_object_begin(w);
        write_joint_result(w, cs, &res, q);
        rpd_write_scene_revision(w, cs);
        rp_jw_object_end(w);
    }
    rp_check_result_free(&res);
    free(q);
    return ok;
}

bool rpd_m_check(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {
        "model",  "scene",         "base",     "frames",        "joints", "joints_f64", "margin",
        "report", "ignore_limits", "attached", "allowed_scene", "ignore", "group",      NULL};
    check_setup cs;
    char fpath[RP_CODEC_PATH_MAX], bpath[RP_CODEC_PATH_MAX];
    const cJSON *jj, *jf;
    if (!rpd_check_keys(req, params, keys) ||
        !one_of(req, params, "joints", "joints_f64", &jj, &jf))
        return false;
    bool joints = jj || jf;
    const cJSON *frames = rpd_param(params, "frames", fpath);
    if (joints && frames)
        return rpd_fail_path(req, fpath,
                             jf ? "give either frames or joints_f64, not both"
                                : "give either frames or joints, not both");
    if (!rpd_check_setup(req, params,
                         jf       ? "params.joints_f64"
                         : joints ? "params.joints"
                                  : NULL,
                         &cs)) {
        rpd_check_setup_free(&cs);
        return false;
    }
    if (joints) {
        bool ok = check_joints(req, params, &cs, w);
        rpd_check_setup_free(&cs);
        return ok;
    }
    const cJSON *base = rpd_param(params, "base", bpath);
    rp_transform *tf = NULL, btf;
    bool has_base, ok = rpd_charge_work(req, rpd_check_cost(&cs));
    if (ok && !(tf = malloc((cs.n_frames ? cs.n_frames : 1) * sizeof *tf)))
        ok = rpd_fail_status(req, RP_ERR_NOMEM);
    if (ok && rp_model_is_kinematic(cs.model))
        ok = frames
                 ? rpd_fail_path(req, fpath, "a kinematic model takes \"joints\", not frame poses")
                 : rpd_fail_path(req, "params.joints",
                                 "is required (a joint vector, or joints_f64 in binary)");
    ok = ok && decode_config(req, &cs, frames, base, fpath, bpath, tf, &btf, &has_base);
    rp_check_result res;
    memset(&res, 0, sizeof res);
    if (ok) {
        uint64_t charged = rpd_check_cost(&cs);
        rp_work meter = rpd_walk_meter(req, charged, 1.0);
        rp_check_opts opts = cs.opts;
        opts.work = &meter;
        rp_status st = rp_model_check(cs.model, cs.scene, has_base ? &btf : NULL, tf, cs.n_frames,
                                      &opts, &res);
        if (st == RP_ERR_NONFINITE)
            ok = fail_out_of_range(req, &cs, "params", res.closest.link);
        else
            ok = rpd_walk_settle(req, &meter, charged, st);
    }
    if (ok) {
        rp_jw_object_begin(w);
        write_result_members(w, &cs, &res);
        rpd_write_scene_revision(w, &cs);
        rp_jw_object_end(w);
    }
    rp_check_result_free(&res);
    free(tf);
    rpd_check_setup_free(&cs);
    return ok;
}

/* ---- check.batch, in slices ------------------------------------------------------ */

/* A batch's configurations are checked in slices that may run at the same
 * time (pool.h): each slice writes its results into its own writer, and
 * the slices are then joined in order, so the reply is the same bytes
 * whatever ran where.  A slice stops at its first failing configuration;
 * the reply names the first failure in configuration order, as a
 * one-by-one run would. */
#define SLICE_MIN 32 /* configurations per slice, at least */
#define SLICES_PER_THREAD 4

typedef struct batch_slice {
    rp_jw w;
    size_t fail_k; /* first failing configuration, SIZE_MAX: none */
    rp_status fail_st;
    size_t fail_link; /* frame form, RP_ERR_NONFINITE: the link out of range */
    rp_work work;     /* its share of the line's budget for tree walks */
} batch_slice;

typedef struct batch_run {
    const check_setup *cs;
    bool joints;
    bool binary;     /* joints from params.joints_f64: errors name rows, not paths */
    const double *q; /* joints: n vectors of d1 */
    size_t d1;
    const rp_transform *base;   /* joints: one base for all, or NULL */
    const rp_transform *frames; /* frames: n configurations of nf */
    size_t nf;
    const rp_transform *bases;
    const bool *has_base;
    size_t n, per;
    uint64_t charged; /* work units charged for the batch before it ran */
    size_t room;      /* reply bytes left: each slice stops past it */
    batch_slice *slices;
} batch_run;

/* Joint vectors checked per call of rp_model_check_joints_batch. */
#define JOINT_CHUNK 32

static void run_slice(void *ctx, size_t s)
{
    batch_run *b = ctx;
    batch_slice *sl = &b->slices[s];
    const check_setup *cs = b->cs;
    size_t lo = s * b->per, hi = lo + b->per < b->n ? lo + b->per : b->n;
    rp_jw *w = &sl->w;
    rp_jw_set_limit(w, b->room);
    rp_jw_array_begin(w);
    rp_check_opts opts = cs->opts;
    opts.work = &sl->work;
    if (b->joints) {
        /* Joint vectors a chunk at a time through the batch API (several
         * configurations share a walk of the scene). */
        rp_check_result res[JOINT_CHUNK];
        for (size_t k0 = lo; k0 < hi && !rp_jw_failed(w); k0 += JOINT_CHUNK) {
            size_t n = hi - k0 < JOINT_CHUNK ? hi - k0 : JOINT_CHUNK, failed = n;
            rp_status st = rp_model_check_joints_batch(cs->model, cs->scene, b->base,
                                                       &b->q[k0 * b->d1], n, &opts, res, &failed);
            size_t done = st ? failed : n;
            for (size_t j = 0; j < done; j++) {
                if (!rp_jw_failed(w)) {
                    rp_jw_object_begin(w);
                    write_joint_result(w, cs, &res[j], &b->q[(k0 + j) * b->d1]);
                    rp_jw_object_end(w);
                }
                rp_check_result_free(&res[j]);
            }
            if (st) {
                sl->fail_k = k0 + failed;
                sl->fail_st = st;
                sl->fail_link = res[failed].closest.link;
                break;
            }
        }
        rp_jw_array_end(w);
        return;
    }
    for (size_t k = lo; k < hi && !rp_jw_failed(w); k++) {
        rp_check_result res;
        rp_status st = rp_model_check(cs->model, cs->scene, b->has_base[k] ? &b->bases[k] : NULL,
                                      &b->frames[k * b->nf], cs->n_frames, &opts, &res);
        if (st) {
            sl->fail_k = k;
            sl->fail_st = st;
            sl->fail_link = res.closest.link;
            break;
        }
        rp_jw_object_begin(w);
        write_result_members(w, cs, &res);
        rp_jw_object_end(w);
        rp_check_result_free(&res);
    }
    rp_jw_array_end(w);
}

/* Checks every configuration of b and writes the reply's "results" array
 * and scene_revision into w; false with the request failed.  `path` names
 * the configurations (for errors). */
static bool run_batch(rpd_req *req, batch_run *b, rp_jw *w, const char *path)
{
    const check_setup *cs = b->cs;
    size_t threads = req->core->worker ? (size_t)rpd_pool_helpers() + 1 : 1;
    size_t n_slices = b->n / SLICE_MIN;
    if (n_slices > threads * SLICES_PER_THREAD)
        n_slices = threads * SLICES_PER_THREAD;
    if (n_slices < 1 || threads == 1)
        n_slices = 1;
    b->per = n_slices ? (b->n + n_slices - 1) / n_slices : 0;
    if (b->per == 0)
        b->per = 1;
    n_slices = b->n ? (b->n + b->per - 1) / b->per : 0;
    b->room = w->limit > w->len ? w->limit - w->len : 0;
    b->slices = calloc(n_slices ? n_slices : 1, sizeof *b->slices);
    if (!b->slices)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    for (size_t s = 0; s < n_slices; s++) {
        rp_jw_init(&b->slices[s].w);
        b->slices[s].fail_k = SIZE_MAX;
        /* Each slice walks on its share of the budget (slices run on
         * different threads; a meter is one thread's). */
        size_t lo = s * b->per, hi = lo + b->per < b->n ? lo + b->per : b->n;
        b->slices[s].work = rpd_walk_meter(req, b->charged, (double)(hi - lo) / (double)b->n);
    }
    rpd_parallel_for(n_slices, run_slice, b);
    rp_work spent = {0, 0};
    for (size_t s = 0; s < n_slices; s++)
        spent.spent += b->slices[s].work.spent;
    bool ok = rpd_walk_settle(req, &spent, b->charged, RP_OK); /* charges the walks */
    for (size_t s = 0; s < n_slices && ok; s++) {
        batch_slice *sl = &b->slices[s];
        char cp[RP_CODEC_PATH_MAX];
        if (sl->fail_k == SIZE_MAX)
            continue;
        rp_codec_path_index(cp, path, sl->fail_k);
        if (sl->fail_st == RP_ERR_WORK)
            ok = rpd_walk_stopped(req, &spent, b->charged);
        else if (sl->fail_st != RP_ERR_NONFINITE)
            ok = rpd_fail_status(req, sl->fail_st);
        else if (b->binary)
            ok = fail_row_range(req, path, sl->fail_k);
        else if (b->joints)
            ok = rpd_fail_joint_range(req, cp);
        else
            ok = fail_out_of_range(req, cs, cp, sl->fail_link);
    }
    if (ok) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "results");
        rp_jw_array_begin(w);
        for (size_t s = 0; s < n_slices && !rp_jw_failed(w); s++) {
            rp_jw *sw = &b->slices[s].w;
            if (rp_jw_failed(sw)) { /* past the reply limit (or out of memory) */
                w->over |= sw->over;
                w->oom |= sw->oom;
                break;
            }
            if (sw->len > 2) /* "[...]" without the brackets */
                rp_jw_value_raw(w, sw->buf + 1, sw->len - 2);
        }
        rp_jw_array_end(w);
        rpd_write_scene_revision(w, cs);
        rp_jw_object_end(w);
    }
    for (size_t s = 0; s < n_slices; s++)
        rp_jw_free(&b->slices[s].w);
    free(b->slices);
    return ok;
}

/* check.batch in joint space: params.joints, an array of joint vectors,
 * or params.joints_f64, rows of joint values in binary.  Every form ends
 * in one table of joint vectors and one batch_run. */
static bool batch_joints(rpd_req *req, const cJSON *params, check_setup *cs, rp_jw *w)
{
    char path[RP_CODEC_PATH_MAX], bpath[RP_CODEC_PATH_MAX], cp[RP_CODEC_PATH_MAX];
    char reason[RP_CODEC_REASON_MAX];
    rp_codec_err ce;
    const cJSON *fj = rpd_param(params, "joints_f64", path);
    const cJSON *jj = fj ? NULL : rpd_param(params, "joints", path);
    const cJSON *bj = rpd_param(params, "base", bpath);
    size_t dof = rp_model_dof(cs->model), want = req->group_dofs ? req->n_group_dofs : dof;
    /* The table rpc.c read straight from the text, when it did ("[]" in
     * its place here); or the rows of joints_f64, counted from the text's
     * length here and decoded once they are priced. */
    const rp_num_rows *table = req->line->batch_joints;
    rp_num_rows bin = {0};
    if (fj) {
        if (!f64_count(req, fj, path, &bin.n) ||
            !f64_rows(req, params, path, bin.n, want, 1, "configuration", &bin.rows))
            return false;
        bin.width = want;
        table = &bin;
    } else if (!cJSON_IsArray(jj)) {
        return rpd_fail_path(req, path, "must be an array of joint vectors");
    }
    size_t n = table ? table->rows : (size_t)cJSON_GetArraySize(jj);
    if (n > req->core->limits.max_batch_configurations)
        return rpd_fail_limit(req, RPD_LIMIT_max_batch_configurations,
                              req->core->limits.max_batch_configurations);
    uint64_t cost = rpd_check_cost(cs) + dof;
    if (n && cost > UINT64_MAX / n)
        cost = UINT64_MAX / n;
    if (!rpd_reply_fits(req, w, n, RPD_MIN_RESULT_BYTES) || !rpd_charge_work(req, cost * n))
        return false;
    size_t d1 = dof ? dof : 1;
    rp_transform base;
    bool ok = !bj || rp_codec_pose(bj, bpath, &base, &ce) || rpd_fail_params(req, &ce);
    if (ok && fj)
        ok = (bin.v = f64_decode(req, fj, path, bin.n, want, false)) != NULL;
    /* What decode_joint_vector says of the first vector (all are as long). */
    if (ok && table && n && table->width != want &&
        joint_count_reason(req, dof, table->width, reason))
        ok = rpd_fail_path(req, rp_codec_path_index(cp, path, 0), reason);
    /* The table as it is when its rows are whole vectors; else rows of the
     * group's joints spread over the defaults, or the vectors of the tree. */
    double *q = NULL;
    const double *vectors = NULL;
    if (ok && table && dof && !req->group_dofs) {
        vectors = table->v;
    } else if (ok && !(q = malloc((n ? n : 1) * d1 * sizeof *q))) {
        ok = rpd_fail_status(req, RP_ERR_NOMEM);
    } else if (ok && table) {
        place_rows(req, cs->model, table->v, n, q);
        vectors = q;
    } else if (ok) {
        size_t k = 0;
        for (const cJSON *c = jj->child; c && ok; c = c->next, k++)
            ok = rpd_decode_joint_vector(req, cs->model, c, rp_codec_path_index(cp, path, k),
                                         &q[k * d1]);
        vectors = q;
    }
    if (ok) {
        batch_run b = {.cs = cs,
                       .joints = true,
                       .binary = fj != NULL,
                       .q = vectors,
                       .d1 = d1,
                       .base = bj ? &base : NULL,
                       .n = n,
                       .charged = cost * n};
        ok = run_batch(req, &b, w, path);
    }
    free(q);
    free(bin.v);
    return ok;
}

/* check.batch with frame poses: params.configurations. */
static bool batch_frames(rpd_req *req, const cJSON *params, check_setup *cs, rp_jw *w)
{
    static const char *const config_keys[] = {"frames", "base", NULL};
    char path[RP_CODEC_PATH_MAX];
    const cJSON *configs = rpd_param(params, "configurations", path);
    if (configs && rp_model_is_kinematic(cs->model))
        return rpd_fail_path(
            req, path, "a kinematic model takes \"joints\", not configurations of frame poses");
    if (!configs && rp_model_is_kinematic(cs->model))
        return rpd_fail_path(req, "params.joints",
                             "is required (joint vectors, or joints_f64 in binary)");
    if (!cJSON_IsArray(configs))
        return rpd_fail_path(req, path,
                             configs ? "must be an array of configurations" : "is required");
    size_t n = (size_t)cJSON_GetArraySize(configs);
    if (n > req->core->limits.max_batch_configurations)
        return rpd_fail_limit(req, RPD_LIMIT_max_batch_configurations,
                              req->core->limits.max_batch_configurations);
    uint64_t cost = rpd_check_cost(cs);
    if (n && cost > UINT64_MAX / n)
        cost = UINT64_MAX / n;
    if (!rpd_reply_fits(req, w, n, RPD_MIN_RESULT_BYTES) || !rpd_charge_work(req, cost * n))
        return false;
    size_t nf = cs->n_frames ? cs->n_frames : 1;
    rp_transform *frames = malloc((n ? n : 1) * nf * sizeof *frames);
    rp_transform *bases = malloc((n ? n : 1) * sizeof *bases);
    bool *has_base = malloc((n ? n : 1) * sizeof *has_base);
    if (!frames || !bases || !has_base) {
        free(frames);
        free(bases);
        free(has_base);
        return rpd_fail_status(req, RP_ERR_NOMEM);
    }
    /* Decode and validate everything first: a bad pose anywhere means
     * nothing is computed. */
    bool ok = true;
    size_t k = 0;
    for (const cJSON *c = configs->child; c && ok; c = c->next, k++) {
        char cp[RP_CODEC_PATH_MAX], fp[RP_CODEC_PATH_MAX], bp[RP_CODEC_PATH_MAX];
        rp_codec_err ce;
        rp_codec_path_index(cp, path, k);
        if (!rp_codec_object_keys(c, cp, config_keys, &ce)) {
            ok = rpd_fail_params(req, &ce);
            break;
        }
        ok = decode_config(req, cs, cJSON_GetObjectItemCaseSensitive(c, "frames"),
                           cJSON_GetObjectItemCaseSensitive(c, "base"),
                           rp_codec_path_key(fp, cp, "frames"), rp_codec_path_key(bp, cp, "base"),
                           &frames[k * nf], &bases[k], &has_base[k]);
    }
    if (ok) {
        batch_run b = {.cs = cs,
                       .frames = frames,
                       .nf = nf,
                       .bases = bases,
                       .has_base = has_base,
                       .n = n,
                       .charged = cost * n};
        ok = run_batch(req, &b, w, path);
    }
    free(frames);
    free(bases);
    free(has_base);
    return ok;
}

bool rpd_m_check_batch(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {
        "model",         "scene",  "configurations", "joints",        "joints_f64",
        "base",          "margin", "report",         "ignore_limits", "attached",
        "allowed_scene", "ignore", "group",          "rows",          NULL};
    check_setup cs;
    char path[RP_CODEC_PATH_MAX];
    const cJSON *jj, *jf;
    if (!rpd_check_keys(req, params, keys) ||
        !one_of(req, params, "joints", "joints_f64", &jj, &jf))
        return false;
    bool joints = jj || jf;
    if (!jf && rpd_param(params, "rows", path))
        return rpd_fail_path(req, path, "only with joints_f64 (a JSON table shows its rows)");
    if (joints && rpd_param(params, "configurations", path))
        return rpd_fail_path(req, path,
                             jf ? "give either configurations or joints_f64, not both"
                                : "give either configurations or joints, not both");
    if (!joints && rpd_param(params, "base", path))
        return rpd_fail_path(req, path, "with configurations, each one carries its own base");
    if (!rpd_check_setup(req, params,
                         jf       ? "params.joints_f64"
                         : joints ? "params.joints"
                                  : NULL,
                         &cs)) {
        rpd_check_setup_free(&cs);
        return false;
    }
    bool ok = joints ? batch_joints(req, params, &cs, w) : batch_frames(req, params, &cs, w);
    rpd_check_setup_free(&cs);
    return ok;
}

/* ---- model.fk ------------------------------------------------------------------------ */

/* A rotation matrix as a unit quaternion (w >= 0), by the largest of the
 * four candidate pivots so that no division is by a small number. */
static void matrix_quat(const double r[3][3], double q[4])
{
    double tr = r[0][0] + r[1][1] + r[2][2];
    if (tr > 0) {
        double s = sqrt(tr + 1.0) * 2;
        q[0] = 0.25 * s;
        q[1] = (r[2][1] - r[1][2]) / s;
        q[2] = (r[0][2] - r[2][0]) / s;
        q[3] = (r[1][0] - r[0][1]) / s;
    } else if (r[0][0] > r[1][1] && r[0][0] > r[2][2]) {
        double s = sqrt(1.0 + r[0][0] - r[1][1] - r[2][2]) * 2;
        q[0] = (r[2][1] - r[1][2]) / s;
        q[1] = 0.25 * s;
        q[2] = (r[0][1] + r[1][0]) / s;
        q[3] = (r[0][2] + r[2][0]) / s;
    } else if (r[1][1] > r[2][2]) {
        double s = sqrt(1.0 + r[1][1] - r[0][0] - r[2][2]) * 2;
        q[0] = (r[0][2] - r[2][0]) / s;
        q[1] = (r[0][1] + r[1][0]) / s;
        q[2] = 0.25 * s;
        q[3] = (r[1][2] + r[2][1]) / s;
    } else {
        double s = sqrt(1.0 + r[2][2] - r[0][0] - r[1][1]) * 2;
        q[0] = (r[1][0] - r[0][1]) / s;
        q[1] = (r[0][2] + r[2][0]) / s;
        q[2] = (r[1][2] + r[2][1]) / s;
        q[3] = 0.25 * s;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double sign = q[0] < 0 ? -1.0 : 1.0;
    for (int i = 0; i < 4; i++)
        q[i] = sign * q[i] / n;
}

static void write_pose(rp_jw *w, const rp_transform *t)
{
    double q[4];
    matrix_quat(t->r, q);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "translation");
    rp_jw_vec3(w, t->t);
    RP_JW_KEY(w, "rotation");
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "w");
    rp_jw_double(w, q[0]);
    RP_JW_KEY(w, "x");
    rp_jw_double(w, q[1]);
    RP_JW_KEY(w, "y");
    rp_jw_double(w, q[2]);
    RP_JW_KEY(w, "z");
    rp_jw_double(w, q[3]);
    rp_jw_object_end(w);
    rp_jw_object_end(w);
}

bool rpd_m_model_fk(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", "joints", "joints_f64", "base", NULL};
    char jpath[RP_CODEC_PATH_MAX], bpath[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    const cJSON *jj, *jf;
    if (!rpd_check_keys(req, params, keys) ||
        !one_of(req, params, "joints", "joints_f64", &jj, &jf))
        return false;
    const rp_model *m = rpd_existing_model(req, params);
    if (!m)
        return false;
    if (!rp_model_is_kinematic(m))
        return rpd_fail_path(req, "params.model",
                             "needs a kinematic model (one defined by joints or a URDF)");
    rpd_param(params, jf ? "joints_f64" : "joints", jpath);
    const cJSON *bj = rpd_param(params, "base", bpath);
    size_t dof = rp_model_dof(m), nl = rp_model_tree_link_count(m);
    if (!rpd_charge_work(req, dof + nl) || !rpd_reply_fits(req, w, nl, RPD_MIN_PAIR_BYTES))
        return false;
    double *q = malloc((dof ? dof : 1) * sizeof *q);
    rp_transform *poses = malloc((nl ? nl : 1) * sizeof *poses), base;
    bool ok = q && poses;
    if (!ok)
        ok = rpd_fail_status(req, RP_ERR_NOMEM);
    ok = ok && (jf ? decode_f64_vector(req, m, jf, jpath, q)
                   : rpd_decode_joint_vector(req, m, jj, jpath, q));
    if (ok && bj && !rp_codec_pose(bj, bpath, &base, &ce))
        ok = rpd_fail_params(req, &ce);
    if (ok) {
        rp_status st = rp_model_fk(m, bj ? &base : NULL, q, poses);
        for (size_t l = 0; st == RP_OK && l < nl; l++) {
            double probe = poses[l].t.x - poses[l].t.x + poses[l].t.y - poses[l].t.y +
                           poses[l].t.z - poses[l].t.z;
            if (probe != 0.0)
                st = RP_ERR_NONFINITE;
        }
        if (st == RP_ERR_NONFINITE)
            ok = rpd_fail_joint_range(req, jpath);
        else if (st)
            ok = rpd_fail_status(req, st);
    }
    if (ok) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "model");
        rp_jw_string(w, rp_model_name(m));
        RP_JW_KEY(w, "revision");
        rp_jw_uint(w, rp_model_revision(m));
        RP_JW_KEY(w, "links");
        rp_jw_object_begin(w);
        for (size_t l = 0; l < nl; l++) {
            rp_jw_key(w, rp_model_tree_link_name(m, l));
            write_pose(w, &poses[l]);
        }
        rp_jw_object_end(w);
        rp_jw_object_end(w);
    }
    free(q);
    free(poses);
    return ok;
}

/* ---- check.motion ------------------------------------------------------------------ */

bool rpd_m_check_motion(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model",  "scene",         "path",
                                       "mode",   "resolution",    "tolerance",
                                       "margin", "attached",      "allowed_scene",
                                       "base",   "ignore_limits", "earliest",
                                       "ignore", "skip_ends",     "resolution_norm",
                                       "group",  "path_f64",      "rows",
                                       NULL};
    char path[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    check_setup cs;
    const cJSON *pj, *pf;
    if (!rpd_check_keys(req, params, keys) || !one_of(req, params, "path", "path_f64", &pj, &pf))
        return false;
    if (!pf && rpd_param(params, "rows", path))
        return rpd_fail_path(req, path, "only with path_f64 (a JSON path shows its waypoints)");
    rp_motion_opts mo;
    memset(&mo, 0, sizeof mo);
    const cJSON *modej = rpd_param(params, "mode", path);
    if (modej) {
        const char *mode;
        if (!rp_codec_string(modej, path, &mode, &ce))
            return rpd_fail_params(req, &ce);
        if (strcmp(mode, "certified") == 0)
            mo.mode = RP_MOTION_CERTIFIED;
        else if (strcmp(mode, "discrete") != 0)
            return rpd_fail_path(req, path, "must be \"discrete\" or \"certified\"");
    }
    const cJSON *rj = rpd_param(params, "resolution", path);
    if (rj && (!rp_codec_number(rj, path, &mo.resolution, &ce) || !(mo.resolution > 0)))
        return rpd_fail_path(req, path, "must be a number > 0 (radians or metres)");
    const cJSON *tj = rpd_param(params, "tolerance", p2);
    if (tj && (!rp_codec_number(tj, p2, &mo.tolerance, &ce) || !(mo.tolerance > 0)))
        return rpd_fail_path(req, p2, "must be a number > 0 (metres)");
    if (rj && mo.mode != RP_MOTION_DISCRETE)
        return rpd_fail_path(req, path, "only for mode \"discrete\"");
    char npath[RP_CODEC_PATH_MAX];
    const cJSON *nj = rpd_param(params, "resolution_norm", npath);
    if (nj) {
        const char *norm;
        if (!rp_codec_string(nj, npath, &norm, &ce))
            return rpd_fail_params(req, &ce);
        if (strcmp(norm, "l2") == 0)
            mo.resolution_l2 = true;
        else if (strcmp(norm, "max") != 0)
            return rpd_fail_path(req, npath, "must be \"max\" or \"l2\"");
        if (mo.mode != RP_MOTION_DISCRETE)
            return rpd_fail_path(req, npath, "only for mode \"discrete\"");
    }
    if (tj && mo.mode != RP_MOTION_CERTIFIED)
        return rpd_fail_path(req, p2, "only for mode \"certified\"");
    /* Discrete reports what its coarse-to-fine order finds unless asked;
     * certified reports the first contact unless asked not to. */
    if (!rpd_optional_bool(req, params, "earliest", mo.mode == RP_MOTION_CERTIFIED, &mo.earliest))
        return false;
    mo.fast_reject = mo.mode == RP_MOTION_CERTIFIED && !mo.earliest;
    if (!rpd_optional_bool(req, params, "skip_ends", false, &mo.skip_ends))
        return false;
    if (!rpd_check_setup(req, params, pf ? "params.path_f64" : "params.path", &cs)) {
        rpd_check_setup_free(&cs);
        return false;
    }
    mo.has_margin = cs.opts.has_margin;
    mo.margin = cs.opts.margin;
    mo.ignore_limits = cs.ignore_limits;
    mo.ignore = cs.opts.ignore;
    mo.n_ignore = cs.opts.n_ignore;
    const rp_model *m = cs.model;
    size_t dof = rp_model_dof(m), d1 = dof ? dof : 1;
    rpd_param(params, pf ? "path_f64" : "path", path);
    const cJSON *bj = rpd_param(params, "base", p2);
    bool ok = true;
    /* path_f64: its waypoints counted from the text's length, decoded once
     * limited, as path's are (proto/PROTOCOL.md, "Binary joint arrays"). */
    size_t n = cJSON_IsArray(pj) ? (size_t)cJSON_GetArraySize(pj) : 0, values = 0;
    size_t want = req->group_dofs ? req->n_group_dofs : dof;
    if (pf)
        ok = f64_count(req, pf, path, &values) &&
             f64_rows(req, params, path, values, want, 2, "waypoint", &n);
    else if (!cJSON_IsArray(pj) || n < 2)
        ok = rpd_fail_path(req, path,
                           pj ? "must be an array of two or more joint vectors" : "is required");
    if (ok && n > req->core->limits.max_batch_configurations)
        ok = rpd_fail_limit(req, RPD_LIMIT_max_batch_configurations,
                            req->core->limits.max_batch_configurations);
    double *q = ok ? malloc(n * d1 * sizeof *q) : NULL;
    double *first = ok ? malloc(d1 * sizeof *first) : NULL;
    if (ok && (!q || !first))
        ok = rpd_fail_status(req, RP_ERR_NOMEM);
    double *v = ok && pf ? f64_decode(req, pf, path, values, want, false) : NULL;
    if (ok && pf && !v)
        ok = false;
    else if (ok && pf)
        place_rows(req, m, v, n, q);
    free(v);
    size_t k = 0;
    for (const cJSON *c = ok && !pf ? pj->child : NULL; c && ok; c = c->next, k++) {
        char cp[RP_CODEC_PATH_MAX];
        ok = rpd_decode_joint_vector(req, m, c, rp_codec_path_index(cp, path, k), &q[k * d1]);
    }
    rp_transform base;
    if (ok && bj && !rp_codec_pose(bj, p2, &base, &ce))
        ok = rpd_fail_params(req, &ce);
    /* Each state costs a check, FK and a fixed share (RPD_STATE_WORK).  A
     * discrete motion's states follow from the path and the resolution, so
     * one that needs more than the budget left is refused before any state
     * is checked; a certified one cannot know its states in advance and is
     * stopped when the budget is spent (rp_motion_opts.max_states). */
    uint64_t per_state = rpd_check_cost(&cs) + dof + RPD_STATE_WORK;
    if (ok) {
        mo.max_states = req->line->work_left / per_state;
        uint64_t bound = rp_motion_states_bound(m, q, n, &mo);
        if (mo.max_states == 0 || (mo.mode == RP_MOTION_DISCRETE && bound > mo.max_states)) {
            ok = rpd_fail_work(req);
            rpd_format(req->err.message, sizeof req->err.message,
                       "Limit exceeded: %s (%llu work units left on this line): the motion "
                       "needs %llu states of %llu units; split the path or coarsen it",
                       rpd_limit_name(req->line->work_limit),
                       (unsigned long long)req->line->work_left, (unsigned long long)bound,
                       (unsigned long long)per_state);
        }
    }
    rp_motion_result r;
    memset(&r, 0, sizeof r);
    if (ok) {
        if (dof == 0) /* the path is n empty vectors */
            q[0] = 0.0;
        /* The states' walks share what the line has left (rp_work). */
        rp_work meter = rpd_walk_meter(req, 0, 1.0);
        mo.work = &meter;
        rp_status st = rp_model_check_motion(m, cs.scene, bj ? &base : NULL, q, n, &mo, &r, first);
        if (st == RP_ERR_WORK) {
            ok = rpd_walk_settle(req, &meter, 0, st);
        } else if (st == RP_ERR_LIMIT) {
            ok = rpd_fail_work(req);
            rpd_format(req->err.message, sizeof req->err.message,
                       "Limit exceeded: %s: the certified motion needed more than the %llu "
                       "states its work budget allows; split the path or raise the tolerance",
                       rpd_limit_name(req->line->work_limit), (unsigned long long)mo.max_states);
        } else if (st == RP_ERR_NONFINITE) {
            ok = rpd_fail_joint_range(req, path);
        } else if (st == RP_ERR_INVALID_ARG) {
            ok = rpd_fail_path(req, path,
                               "moves too far for a certified check at this tolerance (a step "
                               "would round to nothing in double precision): split the path or "
                               "raise the tolerance");
        } else if (st) {
            ok = rpd_fail_status(req, st);
        } else {
            /* What the states cost, or what their walks spent if more. */
            uint64_t units = r.states_checked * per_state;
            units = units > meter.spent ? units : meter.spent;
            rpd_line *line = req->line;
            line->work_left = units < line->work_left ? line->work_left - units : 0;
        }
    }
    if (ok) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "valid");
        rp_jw_bool(w, r.valid);
        RP_JW_KEY(w, "first_invalid");
        if (r.valid) {
            rp_jw_null(w);
        } else {
            rp_jw_object_begin(w);
            RP_JW_KEY(w, "segment");
            rp_jw_uint(w, r.segment);
            RP_JW_KEY(w, "t");
            rp_jw_double(w, r.t);
            RP_JW_KEY(w, "joints");
            rp_jw_array_begin(w);
            for (size_t i = 0; i < dof; i++)
                rp_jw_double(w, first[i]);
            rp_jw_array_end(w);
            if (r.limits) {
                RP_JW_KEY(w, "kind");
                rp_jw_string(w, "limits");
                rpd_write_limits(w, m, first);
                rp_jw_object_end(w);
            } else {
                rpd_write_pair_members(w, &cs, &r.pair, true);
                rp_jw_object_end(w);
            }
        }
        RP_JW_KEY(w, "states_checked");
        rp_jw_uint(w, r.states_checked);
        rpd_write_scene_revision(w, &cs);
        rp_jw_object_end(w);
    }
    free(q);
    free(first);
    rpd_check_setup_free(&cs);
    return ok;
}
