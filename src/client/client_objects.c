/* SPDX-License-Identifier: MIT */
/*
 * The client's typed helpers for objects, robot instances and point clouds
 * (include/repose/client.h): scene.move, poses in matrix form and joint
 * values with every digit of every double; scene.put of a cloud, its
 * points as base64 float32 (proto/PROTOCOL.md, Point clouds).
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

/* Calls `method` with the params in b (freed here) and reads the result's
 * "revision" into *revision (when not NULL): RP_CLIENT_PROTOCOL when the
 * result has no integer revision (the connection stays usable). */
static rp_client_error_kind call_for_revision(rp_client *c, const char *method, rp_client_sb *b,
                                              uint64_t *revision, rp_client_error *err)
{
    if (b->oom) {
        free(b->p);
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *text = NULL;
    rp_client_error_kind k = rp_client_call(c, method, b->p, &text, err);
    free(b->p);
    if (k != RP_CLIENT_OK)
        return k;
    cJSON *r = cJSON_Parse(text);
    free(text);
    if (!r)
        return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "revision");
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        k = rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0, "%s result lacks an integer \"revision\"",
                            method);
    else if (revision)
        *revision = (uint64_t)d;
    cJSON_Delete(r);
    return k;
}

/* Appends ,"if_revision":N when if_revision is not NULL. */
static void put_if_revision(rp_client_sb *b, const uint64_t *if_revision)
{
    if (if_revision) {
        char num[32];
        snprintf(num, sizeof num, ",\"if_revision\":%" PRIu64, *if_revision);
        rp_client_sb_puts_(b, num);
    }
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
    put_if_revision(&b, if_revision);
    rp_client_sb_add_(&b, "}", 1);
    return call_for_revision(c, "scene.move", &b, revision, err);
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

/* ---- point clouds ------------------------------------------------------------------- */

/* Points base64-encoded per chunk before they are appended. */
#define CLOUD_CHUNK_POINTS 256

/* Appends the base64 (RFC 4648) of the n points xyz[0..3n) as
 * little-endian float32 x, y, z: 12 bytes a point, so 16 characters a
 * point and never any '=' padding.  The bytes are taken from each float's
 * bits, so the text is the same whatever the host's byte order. */
static void put_points_f32(rp_client_sb *b, const float *xyz, size_t n)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[CLOUD_CHUNK_POINTS * 16];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char bytes[12];
        for (int k = 0; k < 3; k++) {
            uint32_t u;
            memcpy(&u, &xyz[3 * i + (size_t)k], sizeof u);
            for (int j = 0; j < 4; j++)
                bytes[4 * k + j] = (unsigned char)(u >> (8 * j));
        }
        for (int g = 0; g < 12; g += 3) {
            uint32_t v = (uint32_t)bytes[g] << 16 | (uint32_t)bytes[g + 1] << 8 | bytes[g + 2];
            out[used++] = alphabet[v >> 18];
            out[used++] = alphabet[(v >> 12) & 63];
            out[used++] = alphabet[(v >> 6) & 63];
            out[used++] = alphabet[v & 63];
        }
        if (used == sizeof out) {
            rp_client_sb_add_(b, out, used);
            used = 0;
        }
    }
    rp_client_sb_add_(b, out, used);
}

/* RP_CLIENT_ARG unless v is finite; `what` names it. */
static rp_client_error_kind check_number(double v, const char *what, rp_client_error *err)
{
    if (isfinite(v))
        return RP_CLIENT_OK;
    return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s is %s; JSON has no such number", what,
                           isnan(v) ? "NaN" : "infinite");
}

rp_client_error_kind rp_client_scene_put_cloud(rp_client *c, const char *scene, const char *name,
                                               const float *xyz, size_t n, double radius,
                                               double voxel, bool create,
                                               const uint64_t *if_revision, uint64_t *revision,
                                               rp_client_error *err)
{
    rp_client_error_free(err);
    if (revision)
        *revision = 0;
    rp_client_error_kind k = check_string(scene, "scene", SIZE_MAX, "", err);
    if (k == RP_CLIENT_OK)
        k = check_string(name, "name", SIZE_MAX, "", err);
    if (k == RP_CLIENT_OK)
        k = check_number(radius, "radius", err);
    if (k == RP_CLIENT_OK)
        k = check_number(voxel, "voxel", err);
    if (k != RP_CLIENT_OK)
        return k;
    if (n > 0 && !xyz)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "xyz is NULL");
    /* 16 characters a point, with room to spare for the rest of the
     * request: no size computed below can overflow. */
    if (n > SIZE_MAX / 32)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%zu points are too many", n);
    /* The daemon refuses a coordinate that is not finite (-32602); here
     * the error names the point and nothing is sent. */
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(xyz[i]))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "xyz[%zu] (point %zu, %c) is %s; a cloud's points are finite", i,
                                   i / 3, "xyz"[i % 3], isnan(xyz[i]) ? "NaN" : "infinite");
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_sb_puts_(&b, "{\"scene\":");
    rp_client_sb_json_string_(&b, scene);
    rp_client_sb_puts_(&b, ",\"clouds\":{");
    rp_client_sb_json_string_(&b, name);
    rp_client_sb_puts_(&b, ":{\"radius\":");
    rp_client_sb_double_(&b, radius);
    if (voxel != 0) {
        rp_client_sb_puts_(&b, ",\"voxel\":");
        rp_client_sb_double_(&b, voxel);
    }
    /* count: the daemon checks it against the points it decodes. */
    char num[48];
    snprintf(num, sizeof num, ",\"count\":%zu,\"points_f32\":\"", n);
    rp_client_sb_puts_(&b, num);
    put_points_f32(&b, xyz, n);
    rp_client_sb_puts_(&b, "\"}}");
    if (create)
        rp_client_sb_puts_(&b, ",\"create\":true");
    put_if_revision(&b, if_revision);
    rp_client_sb_add_(&b, "}", 1);
    return call_for_revision(c, "scene.put", &b, revision, err);
}
