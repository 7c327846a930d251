/* SPDX-License-Identifier: MIT */
/*
 * The client's typed helper for objects (include/repose/client.h):
 * scene.move, its poses in matrix form with every digit of every double.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"
#include "util/utf8.h"

#include <inttypes.h>
#include <math.h>

/* RP_CLIENT_ARG unless s is a string in UTF-8; `what` and `index`
 * (SIZE_MAX: none) name it in the error. */
static rp_client_error_kind check_string(const char *s, const char *what, size_t index,
                                         rp_client_error *err)
{
    char at[32] = "";
    if (index != SIZE_MAX)
        snprintf(at, sizeof at, "[%zu]", index);
    if (!s)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s%s is NULL", what, at);
    size_t n = strlen(s), bad = rp_utf8_invalid_at_((const unsigned char *)s, n);
    if (bad < n)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%s%s is not valid UTF-8 (byte 0x%02x at byte %zu)", what, at,
                               (unsigned char)s[bad], bad);
    return RP_CLIENT_OK;
}

/* RP_CLIENT_ARG naming the first number of poses[i] that is not finite. */
static rp_client_error_kind check_pose(const rp_transform *tf, size_t i, rp_client_error *err)
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(tf->r[r][k]))
                return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                       "poses[%zu].r[%d][%d] is %s; JSON has no such number", i, r,
                                       k, isnan(tf->r[r][k]) ? "NaN" : "infinite");
    const double t[3] = {tf->t.x, tf->t.y, tf->t.z};
    for (int k = 0; k < 3; k++)
        if (!isfinite(t[k]))
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "poses[%zu].t.%c is %s; JSON has no such number", i, "xyz"[k],
                                   isnan(t[k]) ? "NaN" : "infinite");
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

rp_client_error_kind rp_client_scene_move(rp_client *c, const char *scene, const char *const *names,
                                          const rp_transform *poses, size_t n,
                                          const uint64_t *if_revision, uint64_t *revision,
                                          rp_client_error *err)
{
    rp_client_error_free(err);
    if (revision)
        *revision = 0;
    rp_client_error_kind k = check_string(scene, "scene", SIZE_MAX, err);
    if (k != RP_CLIENT_OK)
        return k;
    if (n > 0 && !names)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "names is NULL");
    if (n > 0 && !poses)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "poses is NULL");
    for (size_t i = 0; i < n; i++) {
        k = check_string(names[i], "names", i, err);
        if (k == RP_CLIENT_OK)
            k = check_pose(&poses[i], i, err);
        if (k != RP_CLIENT_OK)
            return k;
    }
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_sb_puts_(&b, "{\"scene\":");
    rp_client_sb_json_string_(&b, scene);
    rp_client_sb_puts_(&b, ",\"objects\":{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rp_client_sb_add_(&b, ",", 1);
        rp_client_sb_json_string_(&b, names[i]);
        rp_client_sb_add_(&b, ":", 1);
        put_matrix(&b, &poses[i]);
    }
    rp_client_sb_add_(&b, "}", 1);
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
