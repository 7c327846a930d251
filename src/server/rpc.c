/*
 * The JSON-RPC 2.0 envelope: pre-scan, parse, batch, validate, dispatch to
 * the method table, and write replies straight into the connection's output
 * buffer.  Every error reply goes through write_error(), which also counts
 * it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "rpc.h"

rpd_limits rpd_default_limits(void)
{
    rpd_limits l = {
        .max_request_bytes = RPD_DEFAULT_MAX_REQUEST_BYTES,
        .max_json_depth = RPD_DEFAULT_MAX_JSON_DEPTH,
        .max_connections = RPD_DEFAULT_MAX_CONNECTIONS,
        .max_shapes_per_scene = RP_DEFAULT_MAX_SHAPES_PER_SCENE,
        .write_pause_bytes = RPD_DEFAULT_WRITE_PAUSE_BYTES,
        .write_kill_bytes = RPD_DEFAULT_WRITE_KILL_BYTES,
    };
    return l;
}

bool rpd_core_init(rpd_core *core, const rpd_limits *limits)
{
    memset(core, 0, sizeof *core);
    core->limits = limits ? *limits : rpd_default_limits();
    rp_store_limits sl = {core->limits.max_shapes_per_scene};
    core->store = rp_store_new(&sl);
    core->start_ns = rpd_now_ns();
    rpd_arena_install();
    strcpy(core->run_id, "00000000000000000000000000000000");
    return core->store != NULL;
}

void rpd_core_free(rpd_core *core)
{
    rp_store_free(core->store);
    core->store = NULL;
    if (core->token) {
        memset(core->token, 0, core->token_len); /* do not leave it in freed memory */
        free(core->token);
        core->token = NULL;
    }
    rpd_arena_free_all();
}

/* ---- errors --------------------------------------------------------------- */

static void set_error(rpd_error *e, int code, rpd_data_kind data)
{
    e->code = code;
    e->data = data;
}

bool rpd_fail(rpd_req *req, int code, const char *fmt, ...)
{
    set_error(&req->err, code, RPD_DATA_NONE);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->err.message, sizeof req->err.message, fmt, ap);
    va_end(ap);
    return false;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
        /* Do not cut a UTF-8 sequence in half. */
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

bool rpd_fail_path(rpd_req *req, const char *path, const char *reason)
{
    set_error(&req->err, RPD_INVALID_PARAMS, RPD_DATA_PATH);
    copy_text(req->err.text, sizeof req->err.text, path);
    copy_text(req->err.reason, sizeof req->err.reason, reason);
    snprintf(req->err.message, sizeof req->err.message, "Invalid params: %s %s",
             req->err.text, req->err.reason);
    return false;
}

bool rpd_fail_params(rpd_req *req, const rp_codec_err *ce)
{
    return rpd_fail_path(req, ce->path, ce->reason);
}

bool rpd_fail_not_found(rpd_req *req, const char *kind, const char *name)
{
    set_error(&req->err, RPD_NOT_FOUND, RPD_DATA_ENTITY);
    req->err.kind = kind;
    copy_text(req->err.text, sizeof req->err.text, name);
    snprintf(req->err.message, sizeof req->err.message, "Not found: %s '%s'", kind,
             req->err.text);
    return false;
}

bool rpd_fail_exists(rpd_req *req, const char *kind, const char *name)
{
    set_error(&req->err, RPD_ALREADY_EXISTS, RPD_DATA_ENTITY);
    req->err.kind = kind;
    copy_text(req->err.text, sizeof req->err.text, name);
    snprintf(req->err.message, sizeof req->err.message, "Already exists: %s '%s'", kind,
             req->err.text);
    return false;
}

bool rpd_fail_revision(rpd_req *req, uint64_t expected, uint64_t actual)
{
    set_error(&req->err, RPD_REVISION_CONFLICT, RPD_DATA_REVISION);
    req->err.expected = expected;
    req->err.actual = actual;
    snprintf(req->err.message, sizeof req->err.message,
             "Revision conflict: expected %llu, scene is at %llu",
             (unsigned long long)expected, (unsigned long long)actual);
    return false;
}

bool rpd_fail_limit(rpd_req *req, const char *limit, uint64_t max)
{
    set_error(&req->err, RPD_LIMIT_EXCEEDED, RPD_DATA_LIMIT);
    req->err.limit = limit;
    req->err.max = max;
    snprintf(req->err.message, sizeof req->err.message, "Limit exceeded: %s (max %llu)", limit,
             (unsigned long long)max);
    return false;
}

bool rpd_fail_status(rpd_req *req, rp_status st)
{
    if (st == RP_ERR_NOMEM)
        return rpd_fail(req, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    return rpd_fail(req, rp_status_rpc_code(st), "%s", rp_status_str(st));
}

/* Writes the "error" member's value and counts the error. */
static void write_error_body(rpd_core *core, rp_jw *w, const rpd_error *e)
{
    core->stats.errors++;
    core->stats.errors_by_code[rpd_stats_code_slot(e->code)]++;
    rp_jw_object_begin(w);
    RP_JW_KEY(w, "code");
    rp_jw_int(w, e->code);
    RP_JW_KEY(w, "message");
    rp_jw_string(w, e->message);
    if (e->data != RPD_DATA_NONE) {
        RP_JW_KEY(w, "data");
        rp_jw_object_begin(w);
        switch (e->data) {
        case RPD_DATA_OFFSET:
            RP_JW_KEY(w, "offset");
            rp_jw_uint(w, e->offset);
            break;
        case RPD_DATA_METHOD:
            RP_JW_KEY(w, "method");
            rp_jw_string(w, e->text);
            break;
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
        case RPD_DATA_REVISION:
            RP_JW_KEY(w, "expected");
            rp_jw_uint(w, e->expected);
            RP_JW_KEY(w, "actual");
            rp_jw_uint(w, e->actual);
            break;
        case RPD_DATA_LIMIT:
            RP_JW_KEY(w, "limit");
            rp_jw_string(w, e->limit);
            RP_JW_KEY(w, "max");
            rp_jw_uint(w, e->max);
            break;
        case RPD_DATA_NONE:
            break;
        }
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
}

/* The envelope prefix up to the result/error value.  id NULL = null. */
static void write_envelope(rp_jw *w, const cJSON *id, bool error)
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

/* A complete error response object. */
static void write_error(rpd_core *core, rp_jw *w, const cJSON *id, const rpd_error *e)
{
    write_envelope(w, id, true);
    write_error_body(core, w, e);
    rp_jw_object_end(w);
}

/* Ends a reply line.  Lines are separate JSON texts, so the writer's
 * top-level comma state is reset. */
static void end_line(rp_jw *out)
{
    rp_jw_raw(out, "\n", 1);
    out->need_comma[0] = false;
    out->after_key = false;
}

void rpd_reply_error_line(rpd_core *core, rp_jw *out, const rpd_error *e)
{
    write_error(core, out, NULL, e);
    end_line(out);
}

static void simple_error(rpd_error *e, int code, const char *message)
{
    memset(e, 0, sizeof *e);
    e->code = code;
    copy_text(e->message, sizeof e->message, message);
}

void rpd_reply_line_too_long(rpd_core *core, rp_jw *out, const char *limit, size_t max)
{
    rpd_error e;
    simple_error(&e, RPD_LIMIT_EXCEEDED, "");
    e.data = RPD_DATA_LIMIT;
    e.limit = limit;
    e.max = max;
    snprintf(e.message, sizeof e.message,
             "Limit exceeded: request line longer than %zu bytes; closing the connection", max);
    core->stats.limit_request_bytes++;
    rpd_reply_error_line(core, out, &e);
}

/* ---- one request object --------------------------------------------------- */

static bool valid_id(const cJSON *id)
{
    return cJSON_IsString(id) || (cJSON_IsNumber(id) && isfinite(id->valuedouble)) ||
           cJSON_IsNull(id);
}

/* The members of a request, found in one pass. */
typedef struct envelope {
    const cJSON *jsonrpc, *id, *method, *params;
} envelope;

/* Validates the envelope of one request.  Returns true when it is well
 * formed; otherwise fills e (invalid request).  *id is the id to echo (NULL
 * for null / unknown), *notify whether no reply is wanted. */
static bool check_envelope(const cJSON *req, envelope *env, const cJSON **id, bool *notify,
                           rpd_error *e)
{
    memset(env, 0, sizeof *env);
    *id = NULL;
    *notify = false;
    if (!cJSON_IsObject(req)) {
        simple_error(e, RPD_INVALID_REQUEST, "Invalid Request: must be a JSON object");
        return false;
    }
    const char *problem = NULL, *name = NULL;
    for (const cJSON *m = req->child; m; m = m->next) {
        const char *k = m->string;
        const cJSON **slot = NULL;
        switch (k[0]) {
        case 'j': slot = strcmp(k, "jsonrpc") == 0 ? &env->jsonrpc : NULL; break;
        case 'i': slot = strcmp(k, "id") == 0 ? &env->id : NULL; break;
        case 'm': slot = strcmp(k, "method") == 0 ? &env->method : NULL; break;
        case 'p': slot = strcmp(k, "params") == 0 ? &env->params : NULL; break;
        default: break;
        }
        if (!slot) {
            problem = problem ? problem : "unknown member";
            name = name ? name : k;
        } else if (*slot) {
            problem = problem ? problem : "duplicate member";
            name = name ? name : k;
        } else {
            *slot = m;
        }
    }
    if (env->id && valid_id(env->id))
        *id = env->id;
    if (problem) {
        simple_error(e, RPD_INVALID_REQUEST, "");
        snprintf(e->message, sizeof e->message, "Invalid Request: %s '%.64s'", problem, name);
        return false;
    }
    if (!cJSON_IsString(env->jsonrpc) || strcmp(env->jsonrpc->valuestring, "2.0") != 0) {
        simple_error(e, RPD_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
        return false;
    }
    if (env->id && !valid_id(env->id)) {
        simple_error(e, RPD_INVALID_REQUEST,
                     "Invalid Request: id must be a string, a number or null");
        return false;
    }
    if (!cJSON_IsString(env->method)) {
        simple_error(e, RPD_INVALID_REQUEST, "Invalid Request: method must be a string");
        return false;
    }
    *notify = env->id == NULL;
    return true;
}

/* Handles one request object; appends its response object to w unless it is
 * a notification.  Returns true when something was written. */
static bool handle_request(rpd_core *core, rpd_session *s, const cJSON *req, rp_jw *w)
{
    const cJSON *id;
    bool notify;
    envelope env;
    rpd_req r;
    /* Not memset: the error part is large and filled only on failure. */
    r.core = core;
    r.session = s;
    r.err.code = 0;
    r.err.data = RPD_DATA_NONE;
    core->stats.requests++;

    if (!check_envelope(req, &env, &id, &notify, &r.err)) {
        write_error(core, w, id, &r.err);
        return true;
    }
    if (notify)
        core->stats.notifications++;

    const char *name = env.method->valuestring;
    size_t index;
    const rpd_method *m = rpd_method_find(name, &index);
    const cJSON *params = env.params;
    bool ok;
    rp_jw mark = *w;
    if (!m) {
        set_error(&r.err, RPD_METHOD_NOT_FOUND, RPD_DATA_METHOD);
        copy_text(r.err.text, sizeof r.err.text, name);
        snprintf(r.err.message, sizeof r.err.message, "Method not found: %s", r.err.text);
        ok = false;
    } else if (!(m->flags & RPD_METHOD_NOAUTH) && rpd_session_locked(core, s)) {
        core->stats.by_method[index]++;
        ok = rpd_fail(&r, RPD_UNAUTHORIZED,
                      "Unauthorized: this TCP connection must call auth with the server's token "
                      "first");
    } else if (params && !cJSON_IsObject(params)) {
        core->stats.by_method[index]++;
        ok = rpd_fail_path(&r, "params", "must be an object (parameters by name)");
    } else if (core->shutting_down) {
        core->stats.by_method[index]++;
        ok = rpd_fail(&r, RPD_SHUTTING_DOWN, "Shutting down: request not executed");
    } else {
        core->stats.by_method[index]++;
        write_envelope(w, id, false);
        ok = m->handler(&r, params, w);
        if (ok)
            rp_jw_object_end(w);
    }
    if (!ok) {
        rp_jw_rewind(w, &mark); /* discard whatever the handler wrote */
        if (notify) {
            core->stats.errors++;
            return false;
        }
        write_error(core, w, id, &r.err);
        return true;
    }
    if (notify) {
        rp_jw_rewind(w, &mark); /* executed; the reply is dropped */
        return false;
    }
    return true;
}

/* ---- a line --------------------------------------------------------------- */

static void parse_error(rpd_core *core, rp_jw *out, size_t offset, const char *what)
{
    rpd_error e;
    simple_error(&e, RPD_PARSE_ERROR, "");
    snprintf(e.message, sizeof e.message, "Parse error: %s at byte %zu", what, offset);
    e.data = RPD_DATA_OFFSET;
    e.offset = offset;
    rpd_reply_error_line(core, out, &e);
}

static bool is_blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

void rpd_process_line(rpd_core *core, rpd_session *s, const char *line, size_t len, rp_jw *out)
{
    if (is_blank(line, len))
        return;
    /* Latency is sampled, one line in RPD_LATENCY_SAMPLE: reading the clock
     * twice per request is a measurable share of a ping on some VMs. */
    bool timed = (core->lines++ % RPD_LATENCY_SAMPLE) == 0;
    uint64_t t0 = timed ? rpd_now_ns() : 0;
    size_t offset = 0;
    switch (rp_json_prescan(line, len, core->limits.max_json_depth, &offset)) {
    case RP_SCAN_OK:
        break;
    case RP_SCAN_TOO_DEEP: {
        rpd_error e;
        simple_error(&e, RPD_LIMIT_EXCEEDED, "");
        snprintf(e.message, sizeof e.message,
                 "Limit exceeded: JSON nested deeper than %d levels at byte %zu",
                 core->limits.max_json_depth, offset);
        e.data = RPD_DATA_LIMIT;
        e.limit = "max_json_depth";
        e.max = (uint64_t)core->limits.max_json_depth;
        core->stats.limit_json_depth++;
        core->stats.requests++;
        rpd_reply_error_line(core, out, &e);
        return;
    }
    case RP_SCAN_BAD_UTF8:
        core->stats.requests++;
        parse_error(core, out, offset, "invalid UTF-8");
        return;
    case RP_SCAN_CONTROL:
        core->stats.requests++;
        parse_error(core, out, offset, "control character (escape it inside strings)");
        return;
    case RP_SCAN_NUL_ESCAPE: {
        rpd_error e;
        simple_error(&e, RPD_INVALID_REQUEST, "");
        snprintf(e.message, sizeof e.message,
                 "Invalid Request: \\u0000 in a string is not supported (byte %zu)", offset);
        core->stats.requests++;
        rpd_reply_error_line(core, out, &e);
        return;
    }
    }

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!root) {
        rpd_arena_reset(); /* a failed parse may leave partial allocations */
        const char *at = cJSON_GetErrorPtr();
        size_t off = (at && at >= line && at <= line + len) ? (size_t)(at - line) : 0;
        core->stats.requests++;
        parse_error(core, out, off, "invalid JSON");
        return;
    }
    if (!is_blank(end, len - (size_t)(end - line))) {
        while (*end == ' ' || *end == '\t' || *end == '\r')
            end++; /* report where the garbage starts */
        cJSON_Delete(root);
        rpd_arena_reset();
        core->stats.requests++;
        parse_error(core, out, (size_t)(end - line), "trailing data after the JSON value");
        return;
    }

    rp_jw mark = *out;
    if (cJSON_IsArray(root)) {
        core->stats.batches++;
        if (!root->child) {
            rpd_error e;
            simple_error(&e, RPD_INVALID_REQUEST, "Invalid Request: empty batch");
            core->stats.requests++;
            rpd_reply_error_line(core, out, &e);
        } else {
            rp_jw_array_begin(out);
            bool any = false;
            for (const cJSON *r = root->child; r; r = r->next)
                any |= handle_request(core, s, r, out);
            rp_jw_array_end(out);
            if (any) {
                end_line(out);
            } else {
                rp_jw_rewind(out, &mark); /* only notifications: no reply at all */
            }
        }
    } else if (handle_request(core, s, root, out)) {
        end_line(out);
    }
    cJSON_Delete(root);
    rpd_arena_reset();
    if (timed)
        rpd_stats_latency(&core->stats, rpd_now_ns() - t0);
}
