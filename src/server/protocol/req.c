/* SPDX-License-Identifier: MIT */
/*
 * Errors: the rpd_fail_* helpers that handlers call, and rpd_write_error,
 * the one place where an error reply is written and counted.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#include "server/persistence/durable.h"
#include "methods.h" /* rpd_method_suggest, for -32601 */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 0)))
#endif
static void
vformat(char *dst, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(dst, cap, fmt, ap);
    if (n < 0)
        dst[0] = '\0';
    else if ((size_t)n >= cap)
        dst[rp_utf8_trim(dst, cap - 1)] = '\0';
}

void rpd_format(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vformat(dst, cap, fmt, ap);
    va_end(ap);
}

static void set_error(rpd_error *e, int code, rpd_data_kind data)
{
    e->code = code;
    e->data = data;
}

void rpd_error_set(rpd_error *e, int code, const char *fmt, ...)
{
    set_error(e, code, RPD_DATA_NONE);
    va_list ap;
    va_start(ap, fmt);
    vformat(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

void rpd_error_limit(rpd_error *e, rpd_limit_id limit, uint64_t max, const char *what)
{
    set_error(e, RPD_LIMIT_EXCEEDED, RPD_DATA_LIMIT);
    e->limit = limit;
    e->max = max;
    rpd_format(e->message, sizeof e->message, "Limit exceeded: %s (%s %llu)", what,
               rpd_limit_name(limit), (unsigned long long)max);
}

bool rpd_fail(rpd_req *req, int code, const char *fmt, ...)
{
    set_error(&req->err, code, RPD_DATA_NONE);
    va_list ap;
    va_start(ap, fmt);
    vformat(req->err.message, sizeof req->err.message, fmt, ap);
    va_end(ap);
    return false;
}

bool rpd_fail_path(rpd_req *req, const char *path, const char *reason)
{
    set_error(&req->err, RPD_INVALID_PARAMS, RPD_DATA_PATH);
    rp_utf8_copy(req->err.text, sizeof req->err.text, path);
    rp_utf8_copy(req->err.reason, sizeof req->err.reason, reason);
    rpd_format(req->err.message, sizeof req->err.message, "Invalid params: %s %s", req->err.text,
               req->err.reason);
    return false;
}

bool rpd_fail_params(rpd_req *req, const rp_codec_err *ce)
{
    return rpd_fail_path(req, ce->path, ce->reason);
}

static bool fail_entity(rpd_req *req, int code, const char *what, const char *kind,
                        const char *name)
{
    set_error(&req->err, code, RPD_DATA_ENTITY);
    req->err.kind = kind;
    rp_utf8_copy(req->err.text, sizeof req->err.text, name);
    rpd_format(req->err.message, sizeof req->err.message, "%s: %s '%s'", what, kind, req->err.text);
    return false;
}

bool rpd_fail_not_found(rpd_req *req, const char *kind, const char *name)
{
    return fail_entity(req, RPD_NOT_FOUND, "Not found", kind, name);
}

bool rpd_fail_exists(rpd_req *req, const char *kind, const char *name)
{
    return fail_entity(req, RPD_ALREADY_EXISTS, "Already exists", kind, name);
}

bool rpd_fail_in_use(rpd_req *req, const char *name, const char *scene, const char *robot)
{
    set_error(&req->err, RPD_ALREADY_EXISTS, RPD_DATA_IN_USE);
    req->err.kind = "model";
    rp_utf8_copy(req->err.text, sizeof req->err.text, name);
    rp_utf8_copy(req->err.reason, sizeof req->err.reason, scene);
    rp_utf8_copy(req->err.robot, sizeof req->err.robot, robot);
    rpd_format(req->err.message, sizeof req->err.message,
               "In use: model '%s' is used by robot '%s' of scene '%s'", req->err.text,
               req->err.robot, req->err.reason);
    return false;
}

bool rpd_fail_revision(rpd_req *req, uint64_t expected, uint64_t actual)
{
    set_error(&req->err, RPD_REVISION_CONFLICT, RPD_DATA_REVISION);
    req->err.expected = expected;
    req->err.actual = actual;
    rpd_format(req->err.message, sizeof req->err.message,
               "Revision conflict: expected %llu, scene is at %llu", (unsigned long long)expected,
               (unsigned long long)actual);
    return false;
}

bool rpd_fail_limit(rpd_req *req, rpd_limit_id limit, uint64_t max)
{
    set_error(&req->err, RPD_LIMIT_EXCEEDED, RPD_DATA_LIMIT);
    req->err.limit = limit;
    req->err.max = max;
    rpd_format(req->err.message, sizeof req->err.message, "Limit exceeded: %s (max %llu)",
               rpd_limit_name(limit), (unsigned long long)max);
    return false;
}

int rpd_status_code(rp_status st)
{
    switch (st) { /* no default: -Wswitch names a status added without a code */
    case RP_OK:
        return 0;
    case RP_ERR_NONFINITE:
    case RP_ERR_RADIUS_NONFINITE:
    case RP_ERR_RADIUS_NEGATIVE:
    case RP_ERR_SHAPE_KIND:
    case RP_ERR_TRANSFORM:
    case RP_ERR_QUATERNION:
    case RP_ERR_INVALID_ARG:
    case RP_ERR_EXTENT_NEGATIVE:
    case RP_ERR_NORMAL:
        return RPD_INVALID_PARAMS;
    case RP_ERR_NOMEM:
        return RPD_INTERNAL_ERROR;
    case RP_ERR_NOT_FOUND:
        return RPD_NOT_FOUND;
    case RP_ERR_EXISTS:
    case RP_ERR_IN_USE:
        return RPD_ALREADY_EXISTS;
    case RP_ERR_REVISION:
        return RPD_REVISION_CONFLICT;
    case RP_ERR_LIMIT:
    case RP_ERR_WORK:
    case RP_ERR_HALFSPACES:
        return RPD_LIMIT_EXCEEDED;
    case RP_ERR_ABORTED:
        return RPD_STORAGE;
    case RP_STATUS_COUNT_:
        break;
    }
    return RPD_INTERNAL_ERROR;
}

bool rpd_fail_status(rpd_req *req, rp_status st)
{
    if (st == RP_ERR_NOMEM)
        return rpd_fail(req, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    if (st == RP_ERR_ABORTED) { /* the journal refused the record */
        char why[RP_CODEC_REASON_MAX];
        if (!req->core->durable)
            return rpd_fail_storage(req, "the store refused the change");
        rpd_durable_refusal(req->core->durable, why, sizeof why);
        return rpd_fail_storage(req, "%s", why);
    }
    return rpd_fail(req, rpd_status_code(st), "%s", rp_status_str(st));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void
storage_error(rpd_error *e, const char *fmt, va_list ap)
{
    set_error(e, RPD_STORAGE, RPD_DATA_REASON);
    vformat(e->reason, sizeof e->reason, fmt, ap);
    rpd_format(e->message, sizeof e->message, "Storage failure: %s; nothing was changed",
               e->reason);
}

bool rpd_fail_storage(rpd_req *req, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    storage_error(&req->err, fmt, ap);
    va_end(ap);
    return false;
}

void rpd_error_storage(rpd_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    storage_error(e, fmt, ap);
    va_end(ap);
}

/* Writes the "error" member's value. */
static void write_error_body(rp_jw *w, const rpd_error *e)
{
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "code");
    rp_jw_int(w, e->code);
    RP_JW_KEY(w, "message");
    rp_jw_string(w, e->message);
    if (e->data == RPD_DATA_NONE) {
        rp_jw_object_end(w);
        return;
    }
    RP_JW_KEY(w, "data");
    rp_jw_object_begin(w);
    switch (e->data) {
    case RPD_DATA_OFFSET:
        RP_JW_KEY(w, "offset");
        rp_jw_uint(w, e->offset);
        break;
    case RPD_DATA_METHOD: {
        RP_JW_KEY(w, "method");
        rp_jw_string(w, e->text);
        /* A near method name (proto/PROTOCOL.md, "Errors"), as repose-cli's
         * "did you mean". */
        const char *near = rpd_method_suggest(e->text);
        if (near) {
            RP_JW_KEY(w, "suggestion");
            rp_jw_string(w, near);
        }
        break;
    }
    case RPD_DATA_PATH:
        RP_JW_KEY(w, "path");
        rp_jw_string(w, e->text);
        RP_JW_KEY(w, "reason");
        rp_jw_string(w, e->reason);
        break;
    case RPD_DATA_ENTITY:
        RP_JW_KEY(w, "kind");
        rp_jw_string(w, e->kind);
        RP_JW_KEY(w, "name");
        rp_jw_string(w, e->text);
        break;
    case RPD_DATA_IN_USE:
        RP_JW_KEY(w, "kind");
        rp_jw_string(w, e->kind);
        RP_JW_KEY(w, "name");
        rp_jw_string(w, e->text);
        RP_JW_KEY(w, "scene");
        rp_jw_string(w, e->reason);
        RP_JW_KEY(w, "robot");
        rp_jw_string(w, e->robot);
        break;
    case RPD_DATA_REVISION:
        RP_JW_KEY(w, "expected");
        rp_jw_uint(w, e->expected);
        RP_JW_KEY(w, "actual");
        rp_jw_uint(w, e->actual);
        break;
    case RPD_DATA_LIMIT:
        RP_JW_KEY(w, "limit");
        rp_jw_string(w, rpd_limit_name(e->limit));
        RP_JW_KEY(w, "max");
        rp_jw_uint(w, e->max);
        break;
    case RPD_DATA_REASON:
        RP_JW_KEY(w, "reason");
        rp_jw_string(w, e->reason);
        break;
    case RPD_DATA_NONE:
        break;
    }
    rp_jw_object_end(w);
    rp_jw_object_end(w);
}

void rpd_count_error(rpd_core *core, const rpd_error *e)
{
    core->stats.errors++;
    core->stats.errors_by_code[rpd_stats_code_slot(e->code)]++;
    if (e->code == RPD_LIMIT_EXCEEDED && e->data == RPD_DATA_LIMIT &&
        (size_t)e->limit < RPD_LIMIT_COUNT)
        core->stats.limits_hit[e->limit]++;
}

void rpd_write_envelope(rp_jw *w, const cJSON *id, bool error)
{
    rp_jw_object_begin(w);
    /* Written as one pre-encoded key: "jsonrpc":"2.0","id": */
    RP_JW_KEY(w, "jsonrpc\":\"2.0\",\"id");
    if (id)
        rp_jw_cjson(w, id);
    else
        rp_jw_null(w);
    if (error)
        RP_JW_KEY(w, "error");
    else
        RP_JW_KEY(w, "result");
}

void rpd_write_error(rpd_core *core, rp_jw *w, const cJSON *id, const rpd_error *e)
{
    rpd_count_error(core, e);
    rpd_write_envelope(w, id, true);
    write_error_body(w, e);
    rp_jw_object_end(w);
}

void rpd_write_error_id_text(rpd_core *core, rp_jw *w, const char *id, size_t id_len,
                             const rpd_error *e)
{
    rpd_count_error(core, e);
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "jsonrpc\":\"2.0\",\"id");
    rp_jw_value_raw(w, id, id_len);
    RP_JW_KEY(w, "error");
    write_error_body(w, e);
    rp_jw_object_end(w);
}
