/* SPDX-License-Identifier: MIT */
/*
 * The client's typed helpers for objects and robot instances
 * (include/repose/client.h): scene.move, poses in matrix form and joint
 * values with every digit of every double.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"
#include "util/utf8.h"

#include <inttypes.h>
#include <math.h>

/* RP_CLIENT_ARG unless s is a string in UTF-8; `what`, `index` (SIZE_MAX:
 * none) and `suffix` name it in the error ("robots", 1, ".name":
 * "robots[1].name"). */
static rp_client_error_kind check_string(const char *s, const char *what, size_t index,
                                         const char *suffix, rp_client_error *err)
{
    char at[48] = "";
    if (index != SIZE_MAX)
        snprintf(at, sizeof at, "[%zu]%s", index, suffix);
    if (!s)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s%s is NULL", what, at);
    size_t n = strlen(s), bad = rp_utf8_invalid_at_((const unsigned char *)s, n);
    if (bad < n)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%s%s is not valid UTF-8 (byte 0x%02x at byte %zu)", what, at,
                               (unsigned char)s[bad], bad);
    return RP_CLIENT_OK;
}

/* RP_CLIENT_ARG naming the first number of the pose that is not finite;
 * `what` and `index` name the pose ("poses", i: "poses[i]"; "robots", i,
 * suffix ".base": "robots[i].base"). */
static rp_client_error_kind check_pose(const rp_transform *tf, const char *what, size_t i,
                                       const char *suffix, rp_client_error *err)
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(tf->r[r][k]))
                return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                       "%s[%zu]%s.r[%d][%d] is %s; JSON has no such number", what,
                                       i, suffix, r, k, isnan(tf->r[r][k]) ? "NaN" : "infinite");
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    for (int k = 0; k < 3; k++)
        if (!isfinite(t[k]))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "%s[%zu]%s.t.%c is %s; JSON has no such number", what, i, suffix,
                                   "xyz"[k], isnan(t[k]) ? "NaN" : "infinite");
    return RP_CLIENT_OK;
}

/* Appends {"matrix":[[r00,r01,r02,tx],[...],[...]]}. */
static void put_matrix(rp_client_sb *b, const rp_transform *tf)
{
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    rp_client_sb_puts_(b, "{\"matrix\":[");
    for (int r = 0; r < 3; r++) {
        rp_client_sb_puts_(b, r ? ",[" : "[");
        for (int k = 0; k < 3; k++) {
            rp_client_sb_double_(b, tf->r[r][k]);
            rp_client_sb_add_(b, ",", 1);
        }
        rp_client_sb_double_(b, t[r]);
        rp_client_sb_add_(b, "]", 1);
    }
    rp_client_sb_puts_(b, "]}");
}

/* scene.move with n_objects object poses and n_robots robot moves (robots
 * NULL: no "robots" member, the objects always; else "objects" only when
 * there are some). */
static rp_client_error_kind move(rp_client *c, const char *scene, const char *const *names,
                                 const rp_transform *poses, size_t n_objects,
                                 const rp_client_robot_move *robots, size_t n_robots,
                                 const uint64_t *if_revision, uint64_t *revision,
                                 rp_client_error *err)
{
    rp_client_error_free(err);
    if (revision)
        *revision = 0;
    rp_client_error_kind k = check_string(scene, "scene", SIZE_MAX, "", err);
    if (k != RP_CLIENT_OK)
        return k;
    if (n_objects > 0 && !names)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "names is NULL");
    if (n_objects > 0 && !poses)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "poses is NULL");
    for (size_t i = 0; i < n_objects; i++) {
        k = check_string(names[i], "names", i, "", err);
        if (k == RP_CLIENT_OK)
            k = check_pose(&poses[i], "poses", i, "", err);
        if (k != RP_CLIENT_OK)
            return k;
    }
    for (size_t i = 0; i < n_robots; i++) {
        const rp_client_robot_move *r = &robots[i];
        k = check_string(r->name, "robots", i, ".name", err);
        if (k != RP_CLIENT_OK)
            return k;
        for (size_t j = 0; r->joints && j < r->dof; j++)
            if (!isfinite(r->joints[j]))
                return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                       "robots[%zu].joints[%zu] is %s; JSON has no such number", i,
                                       j, isnan(r->joints[j]) ? "NaN" : "infinite");
        if (r->base && (k = check_pose(r->base, "robots", i, ".base", err)) != RP_CLIENT_OK)
            return k;
    }
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_sb_puts_(&b, "{\"scene\":");
    rp_client_sb_json_string_(&b, scene);
    if (!robots || n_objects > 0) {
        rp_client_sb_puts_(&b, ",\"objects\":{");
        for (size_t i = 0; i < n_objects; i++) {
            if (i)
                rp_client_sb_add_(&b, ",", 1);
            rp_client_sb_json_string_(&b, names[i]);
            rp_client_sb_add_(&b, ":", 1);
            put_matrix(&b, &poses[i]);
        }
        rp_client_sb_add_(&b, "}", 1);
    }
    if (robots) {
        rp_client_sb_puts_(&b, ",\"robots\":{");
        for (size_t i = 0; i < n_robots; i++) {
            const rp_client_robot_move *r = &robots[i];
            if (i)
                rp_client_sb_add_(&b, ",", 1);
            rp_client_sb_json_string_(&b, r->name);
            rp_client_sb_add_(&b, ":{", 2);
            if (r->joints) {
                rp_client_sb_puts_(&b, "\"joints\":[");
                for (size_t j = 0; j < r->dof; j++) {
                    if (j)
                        rp_client_sb_add_(&b, ",", 1);
                    rp_client_sb_double_(&b, r->joints[j]);
                }
                rp_client_sb_add_(&b, "]", 1);
            }
            if (r->base) {
                rp_client_sb_puts_(&b, r->joints ? ",\"base\":" : "\"base\":");
                put_matrix(&b, r->base);
            }
            rp_client_sb_add_(&b, "}", 1);
        }
        rp_client_sb_add_(&b, "}", 1);
    }
    if (if_revision) {
        char num[32];
        snprintf(num, sizeof num, ",\"if_revision\":%" PRIu64, *if_revision);
        rp_client_sb_puts_(&b, num);
    }
    rp_client_sb_add_(&b, "}", 1);
    if (b.oom) {
        free(b.p);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *text = NULL;
    k = rp_client_call(c, "scene.move", b.p, &text, err);
    free(b.p);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *r = cJSON_Parse(text);
    free(text);
    if (!r)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "revision");
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        k = rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0,
                            "scene.move result lacks an integer \"revision\"");
    else if (revision)
        *revision = (uint64_t)d;
    cJSON_Delete(r);
    return k;
}

rp_client_error_kind rp_client_scene_move(rp_client *c, const char *scene, const char *const *names,
                                          const rp_transform *poses, size_t n,
                                          const uint64_t *if_revision, uint64_t *revision,
                                          rp_client_error *err)
{
    return move(c, scene, names, poses, n, NULL, 0, if_revision, revision, err);
}

rp_client_error_kind rp_client_scene_move_robots(rp_client *c, const char *scene,
                                                 const rp_client_robot_move *robots, size_t n,
                                                 const char *const *object_names,
                                                 const rp_transform *object_poses, size_t n_objects,
                                                 const uint64_t *if_revision, uint64_t *revision,
                                                 rp_client_error *err)
{
    static const rp_client_robot_move none = {NULL, NULL, 0, NULL};
    if (n > 0 && !robots) {
        rp_client_error_free(err);
        if (revision)
            *revision = 0;
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "robots is NULL");
    }
    return move(c, scene, object_names, object_poses, n_objects, robots ? robots : &none, n,
                if_revision, revision, err);
}
