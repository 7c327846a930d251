/* SPDX-License-Identifier: MIT */
/*
 * rp_store_model_put_urdf (include/repose/scene.h): a URDF (+ SRDF) document
 * read by urdf.c, put into the store as the daemon's model.put with "urdf"
 * puts it, so that a planner in another process builds the same model from
 * the same files without the daemon.
 */
#include <stdio.h>
#include <string.h>

#include "urdf/urdf.h"
#include "util/ids.h"

static rp_status refuse(rp_urdf_problem *err, bool in_srdf, unsigned long line, const char *where,
                        const char *reason)
{
    if (err) {
        err->in_srdf = in_srdf;
        err->line = line;
        snprintf(err->where, sizeof err->where, "%s", where);
        snprintf(err->reason, sizeof err->reason, "%s", reason);
    }
    return RP_ERR_INVALID_ARG;
}

rp_status rp_store_model_put_urdf(rp_store *st, const char *name, const char *urdf, size_t urdf_len,
                                  const char *srdf, size_t srdf_len, rp_model **out,
                                  rp_urdf_problem *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!st || !urdf)
        return RP_ERR_INVALID_ARG;
    if (!rp_codec_valid_name(name))
        return refuse(err, false, 0, "name",
                      "a model name is 1 to 128 characters of [A-Za-z0-9_.-], not starting "
                      "with '.'");
    rp_urdf_opts opts = {.allow_adjacent = srdf == NULL};
    rp_urdf *u = NULL;
    rp_urdf_error ue;
    switch (rp_urdf_parse(urdf, urdf_len, srdf, srdf ? srdf_len : 0, &opts, &u, &ue)) {
    case RP_URDF_OK:
        break;
    case RP_URDF_NOMEM:
        return RP_ERR_NOMEM;
    default: /* (no limits asked for: RP_URDF_LIMIT cannot happen) */
        return refuse(err, ue.in_srdf, ue.line, ue.where, ue.reason);
    }
    const rp_model_def *def = rp_urdf_def(u);
    rp_model_error me;
    rp_status s = rp_store_model_put(st, name, def, out, &me);
    if (s == RP_ERR_INVALID_ARG) {
        char reason[256];
        if (!rp_urdf_model_reason(u, def, &me, reason, sizeof reason))
            snprintf(reason, sizeof reason, "the model is refused (rp_model_problem %d, index %zu)",
                     (int)me.problem, me.index);
        s = refuse(err, false, 0, "", reason);
    }
    rp_urdf_free(u);
    return s;
}
