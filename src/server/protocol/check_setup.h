/* SPDX-License-Identifier: MIT */
/*
 * What the methods on a model share (methods_check.c, methods_plan.c): the
 * decoded model, scene and options of a request, and the writers of what
 * its results report (pairs, joint limits, the scene's revision).
 */
#ifndef REPOSE_SERVER_CHECK_SETUP_H
#define REPOSE_SERVER_CHECK_SETUP_H

#include "methods.h"

/* What the checks share: the model (extended by the request's attached
 * shapes when there are any), the optional scene, options. */
typedef struct check_setup {
    const rp_model *model;
    rp_model *ext; /* owned extension, or NULL */
    size_t n_base; /* shapes of the model itself; the rest are attached */
    const rp_scene *scene;
    rp_check_opts opts;
    const char **ignore; /* params.ignore (opts.ignore), owned */
    char **held;         /* strings the extension's attached shapes point at */
    size_t n_held;
    size_t n_frames;
    bool ignore_limits;
    size_t *group_dofs; /* params.group's active joints (req->group_dofs), owned */
} check_setup;

/* model, scene, margin, report, ignore_limits, ignore, attached,
 * allowed_scene; `joints` (non-NULL: the parameter, e.g. "params.joints"):
 * the request is in joint space, so the model must be kinematic.  The
 * caller frees cs (rpd_check_setup_free) whatever the outcome. */
bool rpd_check_setup(rpd_req *req, const cJSON *params, const char *joints, check_setup *cs);
void rpd_check_setup_free(check_setup *cs);
/* Work one configuration may need (rp_model_check_work). */
uint64_t rpd_check_cost(const check_setup *cs);
/* The members of a pair: link, other, kind ("with" for attached shapes),
 * and the distance when asked. */
void rpd_write_pair_members(rp_jw *w, const check_setup *cs, const rp_check_pair *p, bool distance);
/* Writes "limits": the active joints of q outside their limits; false
 * (nothing written) when there are none. */
bool rpd_write_limits(rp_jw *w, const rp_model *m, const double *q);
/* "scene_revision": the scene's, or null. */
void rpd_write_scene_revision(rp_jw *w, const check_setup *cs);
/* The error for joint values so large that a link leaves doubles. */
bool rpd_fail_joint_range(rpd_req *req, const char *path);

#endif
