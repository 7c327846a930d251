/* SPDX-License-Identifier: MIT */
/*
 * The client's typed helpers for kinematic models (include/repose/client.h):
 * model.put with a URDF, model.fk, check, check.batch and check.motion in
 * joint space.  Each builds its params as JSON text, makes one
 * rp_client_call and reads the members it needs from the result.
 */
#define _POSIX_C_SOURCE 200809L
#include "client_int.h"
#include "util/utf8.h"

#include <math.h>

/* ---- params ------------------------------------------------------------------------ */

/* Appends `"key":"value"` to the open object in b (with a ',' unless it is
 * the first member): value must be a non-NULL string in UTF-8; the error
 * names it by its key (the server would refuse the whole line with a parse
 * error instead). */
static rp_client_error_kind put_string(rp_client_sb *b, const char *key, const char *value,
                                       rp_client_error *err)
{
    if (!value)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s is NULL", key);
    size_t n = strlen(value), bad = rp_utf8_invalid_at_((const unsigned char *)value, n);
    if (bad < n)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "%s is not valid UTF-8 (byte 0x%02x at byte %zu)", key,
                               (unsigned char)value[bad], bad);
    rp_client_sb_puts_(b, b->len > 1 ? ",\"" : "\"");
    rp_client_sb_puts_(b, key);
    rp_client_sb_puts_(b, "\":");
    rp_client_sb_json_string_(b, value);
    return RP_CLIENT_OK;
}

/* Appends v as a JSON number that reads back as exactly v.  "%.17g" is
 * enough digits for every double; its decimal point is LC_NUMERIC's, which
 * a program that called setlocale may have made ',' (or longer): whatever
 * %g writes that is not a digit, a sign or an exponent is that point, and
 * becomes JSON's '.'.  v must be finite.  (Shared with client_objects.c as
 * rp_client_sb_double_.) */
void rp_client_sb_double_(rp_client_sb *b, double v)
{
    char buf[64], out[64];
    int n = snprintf(buf, sizeof buf, "%.17g", v);
    if (n < 0 || n >= (int)sizeof buf) /* never: at most 24 bytes and a point */
        n = 0;
    size_t o = 0;
    for (int i = 0; i < n;) {
        char ch = buf[i];
        if ((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == 'e' || ch == 'E') {
            out[o++] = ch;
            i++;
            continue;
        }
        out[o++] = '.';
        while (i < n && !((buf[i] >= '0' && buf[i] <= '9') || buf[i] == 'e' || buf[i] == 'E'))
            i++;
    }
    rp_client_sb_add_(b, out, o);
}

/* Appends the JSON array of q[0..n); `name` and `row` (SIZE_MAX: none) name
 * an element that is not finite in the error ("q[3]", "path[1][3]"). */
static rp_client_error_kind put_vector(rp_client_sb *b, const double *q, size_t n, const char *name,
                                       size_t row, rp_client_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(q[i])) {
            char at[48] = "";
            if (row != SIZE_MAX)
                snprintf(at, sizeof at, "[%zu]", row);
            return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                                   "%s%s[%zu] is %s; JSON has no such number", name, at, i,
                                   isnan(q[i]) ? "NaN" : "infinite");
        }
    rp_client_sb_add_(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            rp_client_sb_add_(b, ",", 1);
        rp_client_sb_double_(b, q[i]);
    }
    rp_client_sb_add_(b, "]", 1);
    return RP_CLIENT_OK;
}

/* Appends `,"key":[[...],...]`: rows of `dof` values of q[0..rows*dof). */
static rp_client_error_kind put_rows(rp_client_sb *b, const char *key, const double *q, size_t rows,
                                     size_t dof, const char *name, rp_client_error *err)
{
    if (dof && rows > SIZE_MAX / dof)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%zu x %zu values overflow", rows, dof);
    if (!q && rows * dof > 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%s is NULL", name);
    rp_client_sb_puts_(b, ",\"");
    rp_client_sb_puts_(b, key);
    rp_client_sb_puts_(b, "\":[");
    for (size_t r = 0; r < rows; r++) {
        if (r)
            rp_client_sb_add_(b, ",", 1);
        rp_client_error_kind k = put_vector(b, q ? q + r * dof : NULL, dof, name, r, err);
        if (k != RP_CLIENT_OK)
            return k;
    }
    rp_client_sb_add_(b, "]", 1);
    return RP_CLIENT_OK;
}

/* Opens the params with {"model":model[,"scene":scene]}, without the
 * closing brace. */
static rp_client_error_kind put_model_scene(rp_client_sb *b, const char *model, const char *scene,
                                            rp_client_error *err)
{
    rp_client_sb_add_(b, "{", 1);
    rp_client_error_kind k = put_string(b, "model", model, err);
    if (k == RP_CLIENT_OK && scene)
        k = put_string(b, "scene", scene, err);
    return k;
}

/* Closes the params in b (unless k already failed), calls method, frees
 * b.p, and on success hands back the result: as text in *raw (when raw is
 * not NULL; the caller frees it), parsed in *result (when result is not
 * NULL; the caller deletes it). */
static rp_client_error_kind finish_call(rp_client *c, const char *method, rp_client_sb *b,
                                        rp_client_error_kind k, char **raw, cJSON **result,
                                        rp_client_error *err)
{
    if (k == RP_CLIENT_OK) {
        rp_client_sb_add_(b, "}", 1);
        if (b->oom)
            k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
    }
    char *text = NULL;
    if (k == RP_CLIENT_OK)
        k = rp_client_call(c, method, b->p, &text, err);
    free(b->p);
    b->p = NULL;
    if (k != RP_CLIENT_OK)
        return k;
    if (result) {
        /* The text is a value cJSON accepted within the reply line. */
        *result = cJSON_Parse(text);
        if (!*result) {
            free(text);
            return rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
        }
    }
    if (raw)
        *raw = text;
    else
        free(text);
    return RP_CLIENT_OK;
}

/* True when j is a number that is a whole count below 2^53 (so that it
 * converts exactly to uint64_t and size_t). */
static bool is_count(const cJSON *j)
{
    if (!cJSON_IsNumber(j))
        return false;
    double v = j->valuedouble;
    return v >= 0 && v <= 9007199254740992.0 && (double)(uint64_t)v == v && (uint64_t)v <= SIZE_MAX;
}

/* RP_CLIENT_PROTOCOL for a result without the member `what`. */
static rp_client_error_kind bad_result(rp_client_error *err, const char *method, const char *what)
{
    return rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0, "%s result lacks %s", method, what);
}

/* ---- the helpers ------------------------------------------------------------------- */

rp_client_error_kind rp_client_model_put_urdf(rp_client *c, const char *model, const char *urdf,
                                              const char *srdf, char **result_json,
                                              rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_sb_add_(&b, "{", 1);
    rp_client_error_kind k = put_string(&b, "model", model, err);
    if (k == RP_CLIENT_OK)
        k = put_string(&b, "urdf", urdf, err);
    if (k == RP_CLIENT_OK && srdf)
        k = put_string(&b, "srdf", srdf, err);
    return finish_call(c, "model.put", &b, k, result_json, NULL, err);
}

rp_client_error_kind rp_client_model_fk(rp_client *c, const char *model, const double *q, size_t n,
                                        char **result_json, rp_client_error *err)
{
    rp_client_error_free(err);
    if (result_json)
        *result_json = NULL;
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_error_kind k = put_model_scene(&b, model, NULL, err);
    if (k == RP_CLIENT_OK && !q && n > 0)
        k = rp_client_fail_(err, RP_CLIENT_ARG, 0, "q is NULL");
    if (k == RP_CLIENT_OK) {
        rp_client_sb_puts_(&b, ",\"joints\":");
        k = put_vector(&b, q, n, "q", SIZE_MAX, err);
    }
    return finish_call(c, "model.fk", &b, k, result_json, NULL, err);
}

/* check of one joint vector; `first`: report "first" (the verdict only). */
static rp_client_error_kind check_joints(rp_client *c, const char *model, const char *scene,
                                         const double *q, size_t n, bool first, bool *valid,
                                         double *min_distance, rp_client_error *err)
{
    rp_client_error_free(err);
    if (valid)
        *valid = false;
    if (min_distance)
        *min_distance = NAN;
    if (!valid)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "valid is NULL");
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_error_kind k = put_model_scene(&b, model, scene, err);
    if (k == RP_CLIENT_OK && !q && n > 0)
        k = rp_client_fail_(err, RP_CLIENT_ARG, 0, "q is NULL");
    if (k == RP_CLIENT_OK) {
        rp_client_sb_puts_(&b, ",\"joints\":");
        k = put_vector(&b, q, n, "q", SIZE_MAX, err);
    }
    if (k == RP_CLIENT_OK && first)
        rp_client_sb_puts_(&b, ",\"report\":\"first\"");
    cJSON *r = NULL;
    k = finish_call(c, "check", &b, k, NULL, &r, err);
    if (k != RP_CLIENT_OK)
        return k;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "valid");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "min_distance");
    if (!cJSON_IsBool(v))
        k = bad_result(err, "check", "a boolean \"valid\"");
    else if (!first && !cJSON_IsNumber(d) && !cJSON_IsNull(d))
        k = bad_result(err, "check", "\"min_distance\" (a number or null)");
    if (k == RP_CLIENT_OK) {
        *valid = cJSON_IsTrue(v);
        if (min_distance)
            *min_distance = cJSON_IsNumber(d) ? d->valuedouble : INFINITY;
    }
    cJSON_Delete(r);
    return k;
}

rp_client_error_kind rp_client_check_joints(rp_client *c, const char *model, const char *scene,
                                            const double *q, size_t n, bool *valid,
                                            double *min_distance, rp_client_error *err)
{
    return check_joints(c, model, scene, q, n, false, valid, min_distance, err);
}

rp_client_error_kind rp_client_check_joints_first(rp_client *c, const char *model,
                                                  const char *scene, const double *q, size_t n,
                                                  bool *valid, rp_client_error *err)
{
    return check_joints(c, model, scene, q, n, true, valid, NULL, err);
}

rp_client_error_kind rp_client_check_batch_joints(rp_client *c, const char *model,
                                                  const char *scene, const double *q,
                                                  size_t n_configs, size_t dof, bool *valid_out,
                                                  rp_client_error *err)
{
    rp_client_error_free(err);
    if (dof && n_configs > SIZE_MAX / dof) /* before valid_out[n_configs - 1] is touched */
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "%zu x %zu values overflow", n_configs, dof);
    if (valid_out)
        for (size_t i = 0; i < n_configs; i++)
            valid_out[i] = false;
    if (!valid_out && n_configs > 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "valid_out is NULL");
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_error_kind k = put_model_scene(&b, model, scene, err);
    if (k == RP_CLIENT_OK)
        k = put_rows(&b, "joints", q, n_configs, dof, "q", err);
    cJSON *r = NULL;
    k = finish_call(c, "check.batch", &b, k, NULL, &r, err);
    if (k != RP_CLIENT_OK)
        return k;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(r, "results");
    if (!cJSON_IsArray(results) || (size_t)cJSON_GetArraySize(results) != n_configs) {
        k = rp_client_fail_(err, RP_CLIENT_PROTOCOL, 0,
                            "check.batch result lacks \"results\" with %zu entries", n_configs);
    } else {
        size_t i = 0;
        for (const cJSON *e = results->child; e && k == RP_CLIENT_OK; e = e->next, i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "valid");
            if (cJSON_IsBool(v))
                valid_out[i] = cJSON_IsTrue(v);
            else
                k = bad_result(err, "check.batch", "a boolean \"valid\" in a result");
        }
    }
    cJSON_Delete(r);
    return k;
}

rp_client_error_kind rp_client_check_motion(rp_client *c, const char *model, const char *scene,
                                            const double *path, size_t n_points, size_t dof,
                                            const char *mode, double resolution,
                                            rp_client_motion_result *out, rp_client_error *err)
{
    rp_client_motion_opts o;
    memset(&o, 0, sizeof o);
    o.mode = mode;
    o.resolution = resolution;
    return rp_client_check_motion_opts(c, model, scene, path, n_points, dof, &o, out, err);
}

rp_client_error_kind rp_client_check_motion_opts(rp_client *c, const char *model, const char *scene,
                                                 const double *path, size_t n_points, size_t dof,
                                                 const rp_client_motion_opts *o,
                                                 rp_client_motion_result *out, rp_client_error *err)
{
    rp_client_motion_opts none;
    memset(&none, 0, sizeof none);
    if (!o)
        o = &none;
    const char *mode = o->mode;
    double resolution = o->resolution;
    rp_client_error_free(err);
    if (out) {
        memset(out, 0, sizeof *out);
        out->t = NAN;
    }
    if (!out)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "out is NULL");
    if (!(resolution >= 0) || isinf(resolution))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "resolution must be > 0, or 0 for the server's default");
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_error_kind k = put_model_scene(&b, model, scene, err);
    if (k == RP_CLIENT_OK)
        k = put_rows(&b, "path", path, n_points, dof, "path", err);
    if (k == RP_CLIENT_OK && mode)
        k = put_string(&b, "mode", mode, err);
    if (k == RP_CLIENT_OK && resolution > 0) {
        rp_client_sb_puts_(&b, ",\"resolution\":");
        rp_client_sb_double_(&b, resolution);
    }
    if (k == RP_CLIENT_OK && o->earliest != RP_CLIENT_DEFAULT)
        rp_client_sb_puts_(&b, o->earliest == RP_CLIENT_YES ? ",\"earliest\":true"
                                                            : ",\"earliest\":false");
    if (k == RP_CLIENT_OK && o->skip_ends)
        rp_client_sb_puts_(&b, ",\"skip_ends\":true");
    cJSON *r = NULL;
    k = finish_call(c, "check.motion", &b, k, NULL, &r, err);
    if (k != RP_CLIENT_OK)
        return k;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "valid");
    const cJSON *states = cJSON_GetObjectItemCaseSensitive(r, "states_checked");
    const cJSON *fi = cJSON_GetObjectItemCaseSensitive(r, "first_invalid");
    const cJSON *seg = cJSON_GetObjectItemCaseSensitive(fi, "segment");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(fi, "t");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(fi, "kind");
    if (!cJSON_IsBool(v))
        k = bad_result(err, "check.motion", "a boolean \"valid\"");
    else if (!is_count(states))
        k = bad_result(err, "check.motion", "a count \"states_checked\"");
    else if (cJSON_IsFalse(v) && (!is_count(seg) || !cJSON_IsNumber(t) || !cJSON_IsString(kind) ||
                                  strlen(kind->valuestring) >= sizeof out->kind))
        k = bad_result(err, "check.motion",
                       "\"first_invalid\" with \"segment\", \"t\" and \"kind\"");
    if (k == RP_CLIENT_OK) {
        out->valid = cJSON_IsTrue(v);
        out->states_checked = (uint64_t)states->valuedouble;
        if (!out->valid) {
            out->segment = (size_t)seg->valuedouble;
            out->t = t->valuedouble;
            memcpy(out->kind, kind->valuestring, strlen(kind->valuestring) + 1);
        }
    }
    cJSON_Delete(r);
    return k;
}

void rp_client_plan_result_free(rp_client_plan_result *r)
{
    if (!r)
        return;
    free(r->path);
    r->path = NULL;
    r->n_points = 0;
}

/* A stats member of a plan result as a count. */
static uint64_t plan_count(const cJSON *stats, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(stats, key);
    return is_count(j) ? (uint64_t)j->valuedouble : 0;
}

rp_client_error_kind rp_client_plan(rp_client *c, const char *model, const char *scene,
                                    const double *start, const double *goals, size_t n_goals,
                                    size_t dof, const rp_client_plan_opts *opts,
                                    rp_client_plan_result *out, rp_client_error *err)
{
    rp_client_error_free(err);
    if (out)
        memset(out, 0, sizeof *out);
    if (!out)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "out is NULL");
    if (!start && dof)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "start is NULL");
    if (n_goals == 0)
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "no goals");
    rp_client_plan_opts none;
    memset(&none, 0, sizeof none);
    if (!opts)
        opts = &none;
    if (!(opts->timeout_ms >= 0) || isinf(opts->timeout_ms) || !(opts->max_step >= 0) ||
        isinf(opts->max_step))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0,
                               "timeout_ms and max_step must be > 0, or 0 for the default");
    if (opts->seed > (1ull << 53))
        return rp_client_fail_(err, RP_CLIENT_ARG, 0, "seed must be at most 2^53");
    rp_client_sb b = {NULL, 0, 0, false};
    rp_client_error_kind k = put_model_scene(&b, model, scene, err);
    if (k == RP_CLIENT_OK) {
        rp_client_sb_puts_(&b, ",\"start\":");
        k = put_vector(&b, start, dof, "start", SIZE_MAX, err);
    }
    if (k == RP_CLIENT_OK)
        k = put_rows(&b, "goals", goals, n_goals, dof, "goals", err);
    if (k == RP_CLIENT_OK && opts->edges)
        k = put_string(&b, "edges", opts->edges, err);
    if (k == RP_CLIENT_OK) {
        char num[64];
        snprintf(num, sizeof num, ",\"seed\":%llu", (unsigned long long)opts->seed);
        rp_client_sb_puts_(&b, num);
        if (opts->timeout_ms > 0) {
            rp_client_sb_puts_(&b, ",\"timeout_ms\":");
            rp_client_sb_double_(&b, opts->timeout_ms);
        }
        if (opts->max_step > 0) {
            rp_client_sb_puts_(&b, ",\"max_step\":");
            rp_client_sb_double_(&b, opts->max_step);
        }
        if (opts->no_simplify)
            rp_client_sb_puts_(&b, ",\"simplify\":false");
    }
    cJSON *r = NULL;
    k = finish_call(c, "plan", &b, k, NULL, &r, err);
    if (k != RP_CLIENT_OK)
        return k;
    const cJSON *solved = cJSON_GetObjectItemCaseSensitive(r, "solved");
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(r, "path");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(r, "reason");
    const cJSON *goal = cJSON_GetObjectItemCaseSensitive(r, "goal_index");
    const cJSON *rev = cJSON_GetObjectItemCaseSensitive(r, "revision");
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(r, "stats");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(stats, "ms");
    if (!cJSON_IsBool(solved))
        k = bad_result(err, "plan", "a boolean \"solved\"");
    else if (cJSON_IsTrue(solved) && (!cJSON_IsArray(path) || !is_count(goal)))
        k = bad_result(err, "plan", "a \"path\" and a \"goal_index\"");
    else if (cJSON_IsFalse(solved) &&
             (!cJSON_IsString(reason) || strlen(reason->valuestring) >= sizeof out->reason))
        k = bad_result(err, "plan", "a \"reason\"");
    else if (!cJSON_IsNumber(ms))
        k = bad_result(err, "plan", "\"stats\"");
    size_t n = k == RP_CLIENT_OK && cJSON_IsTrue(solved) ? (size_t)cJSON_GetArraySize(path) : 0;
    if (n && dof && n > SIZE_MAX / sizeof(double) / dof)
        k = bad_result(err, "plan", "a path of a sane length");
    if (k == RP_CLIENT_OK && n) {
        out->path = malloc(n * (dof ? dof : 1) * sizeof *out->path);
        if (!out->path)
            k = rp_client_fail_(err, RP_CLIENT_NOMEM, 0, "out of memory");
        size_t i = 0;
        for (const cJSON *row = path->child; row && k == RP_CLIENT_OK; row = row->next, i++) {
            if (!cJSON_IsArray(row) || (size_t)cJSON_GetArraySize(row) != dof) {
                k = bad_result(err, "plan", "path rows of dof numbers");
                break;
            }
            size_t d = 0;
            for (const cJSON *v = row->child; v; v = v->next, d++) {
                if (!cJSON_IsNumber(v)) {
                    k = bad_result(err, "plan", "path rows of dof numbers");
                    break;
                }
                out->path[i * dof + d] = v->valuedouble;
            }
        }
        out->n_points = n;
    }
    if (k == RP_CLIENT_OK) {
        out->solved = cJSON_IsTrue(solved);
        out->goal_index = is_count(goal) ? (size_t)goal->valuedouble : 0;
        if (!out->solved)
            memcpy(out->reason, reason->valuestring, strlen(reason->valuestring) + 1);
        out->revision = is_count(rev) ? (uint64_t)rev->valuedouble : 0;
        out->ms = ms->valuedouble;
        out->iterations = plan_count(stats, "iterations");
        out->nodes = plan_count(stats, "nodes");
        out->states_checked = plan_count(stats, "states_checked");
        out->edges_checked = plan_count(stats, "edges_checked");
    } else {
        rp_client_plan_result_free(out);
    }
    cJSON_Delete(r);
    return k;
}
