/*
 * model.* and check handlers: robot models (link shapes on joint frames, a
 * safety margin, allowed pairs) and checks of configurations against a
 * scene.  Every parameter, every pose of every configuration included, is
 * decoded and validated before anything is stored or computed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"

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

static rp_model *existing_model(rpd_req *req, const cJSON *params)
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
            !rp_codec_shape(cJSON_GetObjectItemCaseSensitive(c, "shape"),
                            rp_codec_path_key(sub, lp, "shape"), &links[k].shape, &ce)) {
            free(links);
            return rpd_fail_params(req, &ce);
        }
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "frame");
        rp_codec_path_key(sub, lp, "frame");
        uint64_t frame;
        if (!f) {
            free(links);
            return rpd_fail_path(req, sub, "is required (a joint frame index, or null for the base)");
        }
        if (cJSON_IsNull(f)) {
            links[k].frame = -1;
        } else if (!rp_codec_uint(f, sub, &frame, &ce) || frame > RPD_MAX_FRAME) {
            free(links);
            return rpd_fail_path(req, sub, "must be an integer from 0 to 1023, or null for the base");
        } else {
            links[k].frame = (int)frame;
        }
    }
    *out = links;
    *n_out = n;
    return true;
}

/* Decodes params.allowed_pairs into 2*n ids (malloc'ed). */
static bool decode_pairs(rpd_req *req, const cJSON *j, const char *path, const char ***out,
                         size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!j)
        return true;
    if (!cJSON_IsArray(j))
        return rpd_fail_path(req, path, "must be an array of [link id, link id] pairs");
    size_t n = (size_t)cJSON_GetArraySize(j);
    if (n > req->core->limits.max_allowed_pairs)
        return rpd_fail_limit(req, RPD_LIMIT_max_allowed_pairs,
                              req->core->limits.max_allowed_pairs);
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
            return rpd_fail_path(req, pp, "must be a pair [link id, link id]");
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

bool rpd_m_model_put(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", "links", "safety_margin", "allowed_pairs",
                                       "self_collision", NULL};
    const char *name;
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    rp_model_def def;
    memset(&def, 0, sizeof def);
    if (!rpd_check_keys(req, params, keys) || !model_name(req, params, &name) ||
        !rpd_optional_bool(req, params, "self_collision", true, &def.self_collision))
        return false;
    const cJSON *margin = rpd_param(params, "safety_margin", path);
    if (margin && !rp_codec_nonneg(margin, path, &def.safety_margin, &ce))
        return rpd_fail_params(req, &ce);
    rp_link *links = NULL;
    const char **pairs = NULL;
    if (!decode_links(req, rpd_param(params, "links", path), path, &links, &def.n_links))
        return false;
    if (!decode_pairs(req, rpd_param(params, "allowed_pairs", path), path, &pairs,
                      &def.n_allowed)) {
        free(links);
        return false;
    }
    def.links = links;
    def.allowed_pairs = pairs;
    rp_model *m;
    rp_model_error me;
    rp_status st = rp_store_model_put(req->core->store, name, &def, &m, &me);
    free(links);
    free(pairs);
    if (st == RP_ERR_INVALID_ARG) {
        char p1[RP_CODEC_PATH_MAX], p2[RP_CODEC_PATH_MAX];
        switch (me.problem) {
        case RP_MODEL_DUPLICATE_LINK:
            rp_codec_path_index(p1, "params.links", me.index);
            return rpd_fail_path(req, rp_codec_path_key(p2, p1, "id"), "duplicate link id");
        case RP_MODEL_UNKNOWN_PAIR_LINK:
            rp_codec_path_index(p1, "params.allowed_pairs", me.index);
            return rpd_fail_path(req, rp_codec_path_index(p2, p1, me.element),
                                 "names no link of this model");
        case RP_MODEL_BAD_MARGIN:
            return rpd_fail_path(req, "params.safety_margin", "must be finite and >= 0");
        default:
            rp_codec_path_index(p1, "params.links", me.index);
            return rpd_fail_path(req, p1, "invalid link");
        }
    }
    if (st)
        return rpd_fail_status(req, st);
    rp_jw_object_begin(w);
    write_model_rev(w, m);
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_model_get(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", NULL};
    if (!rpd_check_keys(req, params, keys))
        return false;
    const rp_model *m = existing_model(req, params);
    if (!m)
        return false;
    rp_jw_object_begin(w);
    write_model_rev(w, m);
    RP_JW_KEY(w, "links");
    rp_jw_array_begin(w);
    for (size_t i = 0; i < rp_model_link_count(m); i++) {
        const rp_link *l = rp_model_link_at(m, i);
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "id");
        rp_jw_string(w, l->id);
        RP_JW_KEY(w, "frame");
        if (l->frame < 0)
            rp_jw_null(w);
        else
            rp_jw_int(w, l->frame);
        RP_JW_KEY(w, "shape");
        rp_jw_shape(w, &l->shape);
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
    RP_JW_KEY(w, "safety_margin");
    rp_jw_double(w, rp_model_safety_margin(m));
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
    RP_JW_KEY(w, "self_collision");
    rp_jw_bool(w, rp_model_self_collision(m));
    RP_JW_KEY(w, "frames");
    rp_jw_uint(w, rp_model_frame_count(m));
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_model_delete(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", NULL};
    const char *name;
    if (!rpd_check_keys(req, params, keys) || !model_name(req, params, &name))
        return false;
    if (rp_store_model_delete(req->core->store, name))
        return rpd_fail_not_found(req, "model", name);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "model");
    rp_jw_string(w, name);
    RP_JW_KEY(w, "deleted");
    rp_jw_bool(w, true);
    rp_jw_object_end(w);
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
        RP_JW_KEY(w, "links");
        rp_jw_uint(w, rp_model_link_count(m));
        rp_jw_object_end(w);
    }
    rp_jw_array_end(w);
    rp_jw_object_end(w);
    return true;
}

/* ---- checks -------------------------------------------------------------------- */

/* What check and check.batch share: the model, the optional scene, options. */
typedef struct check_setup {
    const rp_model *model;
    const rp_scene *scene;
    rp_check_opts opts;
    size_t n_frames;
} check_setup;

static bool decode_setup(rpd_req *req, const cJSON *params, check_setup *cs)
{
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    memset(cs, 0, sizeof *cs);
    cs->model = existing_model(req, params);
    if (!cs->model)
        return false;
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

/* Pair tests one configuration may need: each link against the scene
 * (a tree walk) and, with self collision, every pair of links. */
static uint64_t check_cost(const check_setup *cs)
{
    uint64_t links = rp_model_link_count(cs->model);
    uint64_t scene = cs->scene ? rpd_tree_depth(rp_scene_shape_count(cs->scene)) : 0;
    uint64_t self = rp_model_self_collision(cs->model) ? links * (links - (links > 0)) / 2 : 0;
    uint64_t cost = links * scene + self;
    return cost ? cost : 1;
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

static void write_pair(rp_jw *w, const check_setup *cs, const rp_check_pair *p, bool distance)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "link");
    rp_jw_string(w, rp_model_link_at(cs->model, p->link)->id);
    RP_JW_KEY(w, "other");
    rp_jw_string(w, p->kind == RP_PAIR_SCENE ? rp_scene_id_at(cs->scene, p->other)
                                             : rp_model_link_at(cs->model, p->other)->id);
    RP_JW_KEY(w, "kind");
    rp_jw_string(w, p->kind == RP_PAIR_SCENE ? "scene" : "self");
    if (distance) {
        RP_JW_KEY(w, "distance");
        rp_jw_double(w, p->distance);
    }
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

static void write_result(rp_jw *w, const check_setup *cs, const rp_check_result *r)
{
    rp_jw_object_begin(w);
    write_result_members(w, cs, r);
    rp_jw_object_end(w);
}

static void write_scene_revision(rp_jw *w, const check_setup *cs)
{
    RP_JW_KEY(w, "scene_revision");
    if (cs->scene)
        rp_jw_uint(w, rp_scene_revision(cs->scene));
    else
        rp_jw_null(w);
}

bool rpd_m_check(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", "scene", "base", "frames", "margin", "report",
                                       NULL};
    check_setup cs;
    if (!rpd_check_keys(req, params, keys) || !decode_setup(req, params, &cs))
        return false;
    char fpath[RP_CODEC_PATH_MAX], bpath[RP_CODEC_PATH_MAX];
    const cJSON *frames = rpd_param(params, "frames", fpath);
    const cJSON *base = rpd_param(params, "base", bpath);
    if (!rpd_charge_work(req, check_cost(&cs)))
        return false;
    rp_transform *tf = malloc((cs.n_frames ? cs.n_frames : 1) * sizeof *tf), btf;
    bool has_base;
    if (!tf)
        return rpd_fail_status(req, RP_ERR_NOMEM);
    if (!decode_config(req, &cs, frames, base, fpath, bpath, tf, &btf, &has_base)) {
        free(tf);
        return false;
    }
    rp_check_result res;
    rp_status st = rp_model_check(cs.model, cs.scene, has_base ? &btf : NULL, tf, cs.n_frames,
                                  &cs.opts, &res);
    free(tf);
    if (st == RP_ERR_NONFINITE)
        return fail_out_of_range(req, &cs, "params", res.closest.link);
    if (st)
        return rpd_fail_status(req, st);
    rp_jw_object_begin(w);
    write_result_members(w, &cs, &res);
    write_scene_revision(w, &cs);
    rp_jw_object_end(w);
    rp_check_result_free(&res);
    return true;
}

bool rpd_m_check_batch(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"model", "scene", "configurations", "margin", "report",
                                       NULL};
    static const char *const config_keys[] = {"frames", "base", NULL};
    check_setup cs;
    char path[RP_CODEC_PATH_MAX];
    if (!rpd_check_keys(req, params, keys) || !decode_setup(req, params, &cs))
        return false;
    const cJSON *configs = rpd_param(params, "configurations", path);
    if (!cJSON_IsArray(configs))
        return rpd_fail_path(req, path,
                             configs ? "must be an array of configurations" : "is required");
    size_t n = (size_t)cJSON_GetArraySize(configs);
    if (n > req->core->limits.max_batch_configurations)
        return rpd_fail_limit(req, RPD_LIMIT_max_batch_configurations,
                              req->core->limits.max_batch_configurations);
    uint64_t cost = check_cost(&cs);
    if (n && cost > UINT64_MAX / n)
        cost = UINT64_MAX / n;
    if (!rpd_reply_fits(req, w, n, RPD_MIN_RESULT_BYTES) || !rpd_charge_work(req, cost * n))
        return false;
    size_t nf = cs.n_frames ? cs.n_frames : 1;
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
        ok = decode_config(req, &cs, cJSON_GetObjectItemCaseSensitive(c, "frames"),
                           cJSON_GetObjectItemCaseSensitive(c, "base"),
                           rp_codec_path_key(fp, cp, "frames"), rp_codec_path_key(bp, cp, "base"),
                           &frames[k * nf], &bases[k], &has_base[k]);
    }
    if (ok) {
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "results");
        rp_jw_array_begin(w);
        for (k = 0; k < n && ok && !rp_jw_failed(w); k++) {
            rp_check_result res;
            rp_status st = rp_model_check(cs.model, cs.scene, has_base[k] ? &bases[k] : NULL,
                                          &frames[k * nf], cs.n_frames, &cs.opts, &res);
            if (st == RP_ERR_NONFINITE) {
                char cp[RP_CODEC_PATH_MAX];
                ok = fail_out_of_range(req, &cs, rp_codec_path_index(cp, path, k),
                                       res.closest.link);
                break;
            }
            if (st) {
                ok = rpd_fail_status(req, st);
                break;
            }
            write_result(w, &cs, &res);
            rp_check_result_free(&res);
        }
        rp_jw_array_end(w);
        write_scene_revision(w, &cs);
        rp_jw_object_end(w);
    }
    free(frames);
    free(bases);
    free(has_base);
    return ok;
}
