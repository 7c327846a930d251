/* SPDX-License-Identifier: MIT */
/*
 * scene.watch and scene.unwatch (proto/PROTOCOL.md, scene.watch): the
 * params are checked here; the watch hub (notify/watch.h) keeps the
 * watches and sends the notifications.
 */
#include <stdio.h>

#include "methods.h"
#include "server/notify/watch.h"

bool rpd_m_scene_watch(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"scene", "since", NULL};
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    rpd_core *core = req->core;
    if (!rpd_check_keys(req, params, keys))
        return false;
    const char *name;
    if (!rp_codec_name(rpd_param(params, "scene", path), path, &name, &ce))
        return rpd_fail_params(req, &ce);
    uint64_t since = 0;
    const cJSON *since_j = rpd_param(params, "since", path);
    if (since_j && !rp_codec_uint(since_j, path, &since, &ce))
        return rpd_fail_params(req, &ce);
    const rp_scene *sc = rp_store_find(core->store, name);
    if (!sc)
        return rpd_fail_not_found(req, "scene", name);
    if (rpd_watch_session_count(req->session) >= core->limits.max_watches)
        return rpd_fail_limit(req, RPD_LIMIT_max_watches, core->limits.max_watches);
    uint64_t id, revision;
    rp_status st =
        rpd_watch_add(core->watch, req->session, sc, since_j ? &since : NULL, &id, &revision);
    if (st)
        return rpd_fail_status(req, st);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "scene");
    rp_jw_string(w, name);
    RP_JW_KEY(w, "revision");
    rp_jw_uint(w, revision);
    RP_JW_KEY(w, "watch");
    rp_jw_uint(w, id);
    rp_jw_object_end(w);
    return true;
}

bool rpd_m_scene_unwatch(rpd_req *req, const cJSON *params, rp_jw *w)
{
    static const char *const keys[] = {"watch", NULL};
    char path[RP_CODEC_PATH_MAX];
    rp_codec_err ce;
    if (!rpd_check_keys(req, params, keys))
        return false;
    const cJSON *id_j = rpd_param(params, "watch", path);
    uint64_t id;
    if (!id_j)
        return rpd_fail_path(req, path, "is required");
    if (!rp_codec_uint(id_j, path, &id, &ce))
        return rpd_fail_params(req, &ce);
    if (!rpd_watch_remove(req->core->watch, req->session, id)) {
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)id);
        return rpd_fail_not_found(req, "watch", text);
    }
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "watch");
    rp_jw_uint(w, id);
    RP_JW_KEY(w, "unwatched");
    rp_jw_bool(w, true);
    rp_jw_object_end(w);
    return true;
}
