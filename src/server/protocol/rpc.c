/* SPDX-License-Identifier: MIT */
/*
 * The JSON-RPC 2.0 envelope: pre-scan, parse, batch, validate, dispatch to
 * the method table, and write replies straight into the connection's output
 * buffer.  Every error reply goes through rpd_write_error (req.c), which
 * also counts it.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

#include "arena.h"
#include "server/persistence/durable.h"
#include "methods.h"
#include "methods_mesh.h"
#include "rpc.h"
#include "server/notify/watch.h"
#include "server/replica/replica.h"

/* When a line frees at least this much of the store (a scene of ~30,000
 * shapes or more deleted or replaced), free heap pages go back to the
 * system at once; less waits for rpd_core_trim. */
#define RPD_TRIM_BYTES ((size_t)4 << 20)

/* Returns free heap memory to the system.  glibc keeps freed memory for
 * reuse, so after a 1M-shape scene is deleted, or many small ones, or
 * connections holding large replies closed, the process would otherwise
 * stay at its peak size (glibc trims the top of the heap by itself, never
 * the free pages below live blocks). */
static void release_memory(rpd_core *core)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    core->freed_bytes = 0;
}

void rpd_core_freed(rpd_core *core, size_t bytes)
{
    core->freed_bytes = bytes > SIZE_MAX - core->freed_bytes ? SIZE_MAX : core->freed_bytes + bytes;
}

bool rpd_core_trim(rpd_core *core)
{
    if (core->freed_bytes < RPD_TRIM_AFTER_BYTES)
        return false;
    release_memory(core);
    return true;
}

bool rpd_core_init(rpd_core *core, const rpd_limits *limits)
{
    memset(core, 0, sizeof *core);
    core->limits = limits ? *limits : rpd_default_limits();
    rp_store_limits sl = {core->limits.max_shapes_per_scene, core->limits.max_halfspaces_per_scene};
    core->store = rp_store_new(&sl);
    core->start_ns = rpd_now_ns();
    strcpy(core->run_id, "00000000000000000000000000000000");
    core->watch = rpd_watch_hub_new(core);
    if (!core->store || !core->watch)
        return false;
    /* Watchers hear of every change the store commits. */
    rpd_changes_init(core);
    rpd_subscribe(core, rpd_watch_on_change, rpd_watch_on_undo, core->watch, false);
    return true;
}

bool rpd_core_reset_store(rpd_core *core)
{
    rp_store_limits sl = {core->limits.max_shapes_per_scene, core->limits.max_halfspaces_per_scene};
    rp_store *fresh = rp_store_new(&sl);
    if (!fresh)
        return false;
    rp_store_defer_rebuilds(fresh, core->has_workers); /* as server.c set the old one */
    rp_store_free(core->store);
    core->store = fresh;
    rpd_changes_init(core);
    return true;
}

void rpd_core_free(rpd_core *core)
{
    rp_store_free(core->store);
    core->store = NULL;
    rpd_watch_hub_free(core->watch);
    core->watch = NULL;
    if (core->token) {
        memset(core->token, 0, core->token_len); /* do not leave it in freed memory */
        free(core->token);
        core->token = NULL;
    }
}

void rpd_reply_error_line(rpd_core *core, rp_jw *out, const rpd_error *e)
{
    rpd_write_error(core, out, NULL, e);
    rp_jw_end_line(out);
}

void rpd_reply_undone(rpd_core *core, const char *held, size_t n, size_t base,
                      const rpd_outcomes *o, rp_jw *out, const char *reason)
{
    rpd_error e;
    memset(&e, 0, sizeof e);
    rpd_error_storage(&e, "%s", reason);
    size_t pos = 0; /* in held */
    for (size_t i = 0; i < o->n; i++) {
        const rpd_outcome *r = &o->v[i];
        if (r->begin < base + pos || r->end > base + n)
            continue; /* not in the held replies */
        rp_jw_raw(out, held + pos, r->begin - base - pos);
        rpd_write_error_id_text(core, out, held + (r->id_begin - base), r->id_len, &e);
        pos = r->end - base;
    }
    rp_jw_raw(out, held + pos, n - pos);
}

/* The envelope of a success reply, up to its id and after it. */
static const char reply_head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
static const char reply_result[] = ",\"result\":";

/* Records the success reply r wrote, which ends at w->len, in o. */
static void note_outcome(rpd_outcomes *o, const rp_jw *w, const rpd_req *r)
{
    size_t begin = r->reply_at;
    if (begin < w->len && w->buf[begin] == ',')
        begin++; /* the comma before a batch's later reply */
    size_t hn = sizeof reply_head - 1, rn = sizeof reply_result - 1;
    /* Our own writer wrote it; anything else is a bug, and the undo then
     * answers for the whole connection (lost). */
    if (r->reply_head_end < begin + hn + rn || memcmp(w->buf + begin, reply_head, hn) != 0 ||
        memcmp(w->buf + r->reply_head_end - rn, reply_result, rn) != 0) {
        o->lost = true;
        return;
    }
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        rpd_outcome *grown = realloc(o->v, cap * sizeof *grown);
        if (!grown) {
            o->lost = true;
            return;
        }
        o->v = grown;
        o->cap = cap;
    }
    o->v[o->n++] = (rpd_outcome){begin, begin + hn, r->reply_head_end - rn - (begin + hn), w->len};
}

/* Forgets the outcomes recorded at or after offset `at` (their replies
 * were rewound). */
static void forget_outcomes(rpd_outcomes *o, size_t at)
{
    while (o && o->n && o->v[o->n - 1].end > at)
        o->n--;
}

void rpd_reply_line_too_long(rpd_core *core, rp_jw *out, rpd_limit_id limit, size_t max)
{
    rpd_error e;
    memset(&e, 0, sizeof e);
    rpd_error_limit(&e, limit, max, "request line too long; closing the connection");
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

/* Longest piece of a member name quoted in an error message, bytes. */
#define QUOTE_MAX 64

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
        rpd_error_set(e, RPD_INVALID_REQUEST, "Invalid Request: must be a JSON object");
        return false;
    }
    const char *problem = NULL, *name = NULL;
    for (const cJSON *m = req->child; m; m = m->next) {
        const char *k = m->string;
        const cJSON **slot = NULL;
        switch (k[0]) {
        case 'j':
            slot = rpd_name_cmp(k, "jsonrpc") == 0 ? &env->jsonrpc : NULL;
            break;
        case 'i':
            slot = rpd_name_cmp(k, "id") == 0 ? &env->id : NULL;
            break;
        case 'm':
            slot = rpd_name_cmp(k, "method") == 0 ? &env->method : NULL;
            break;
        case 'p':
            slot = rpd_name_cmp(k, "params") == 0 ? &env->params : NULL;
            break;
        default:
            break;
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
        /* Quote at most QUOTE_MAX bytes of the name, cut between characters. */
        size_t n = strlen(name);
        bool cut = n > QUOTE_MAX;
        if (cut)
            n = rp_utf8_trim(name, QUOTE_MAX);
        rpd_error_set(e, RPD_INVALID_REQUEST, "Invalid Request: %s '%.*s%s'", problem, (int)n, name,
                      cut ? "…" : "");
        return false;
    }
    if (!cJSON_IsString(env->jsonrpc) || rpd_name_cmp(env->jsonrpc->valuestring, "2.0") != 0) {
        rpd_error_set(e, RPD_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
        return false;
    }
    if (env->id && !valid_id(env->id)) {
        rpd_error_set(e, RPD_INVALID_REQUEST,
                      "Invalid Request: id must be a string, a number or null");
        return false;
    }
    if (!cJSON_IsString(env->method)) {
        rpd_error_set(e, RPD_INVALID_REQUEST, "Invalid Request: method must be a string");
        return false;
    }
    *notify = env->id == NULL;
    return true;
}

/* Bytes the rest of a mutation's reply can take: the result object (a
 * scene or model name of at most RP_NAME_MAX characters that need no
 * escaping, a revision and a count), the response's '}', and the ']' and
 * '\n' that may end the line. */
#define RPD_MUTATION_REPLY_BYTES 512

void rpd_reply_proposal_failed(rpd_core *core, rp_jw *out, const char *id, bool conflict,
                               const char *reason)
{
    rpd_error e;
    rpd_req r;
    memset(&r, 0, sizeof r);
    r.core = core;
    if (conflict)
        rpd_fail(&r, RPD_REVISION_CONFLICT, "Revision conflict: %s", reason);
    else
        rpd_fail_storage(&r, "replication: %s", reason);
    e = r.err;
    if (!conflict) /* not "nothing was changed": a send may have been stored */
        rpd_format(e.message, sizeof e.message, "Storage failure: replication: %s", reason);
    rpd_write_error_id_text(core, out, id, strlen(id), &e);
    rp_jw_end_line(out);
}

/* --nats: publishes the mutation its handler validated (the commit hook
 * refused it, so nothing changed; docs/ARCHITECTURE.md, Replicas): its
 * params as sent, which every replica applies from the stream in order
 * (rpd_apply_message).  The reply is written then; the session waits for
 * it (r->deferred, session->repl_token). */
static bool propose(rpd_req *r, const rpd_method *m, const cJSON *id, const cJSON *params)
{
    rpd_core *core = r->core;
    r->err.code = 0;
    r->err.data = RPD_DATA_NONE;
    char *text = params ? cJSON_PrintUnformatted(params) : NULL;
    char *id_text = id ? cJSON_PrintUnformatted(id) : NULL;
    size_t id_len = id_text ? strlen(id_text) : 0;
    char *id_copy = id_text ? malloc(id_len + 1) : NULL;
    if (id_copy)
        memcpy(id_copy, id_text, id_len + 1);
    if ((params && !text) || (id && !id_copy)) {
        cJSON_free(text);
        cJSON_free(id_text);
        free(id_copy);
        return rpd_fail(r, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    }
    cJSON_free(id_text);
    char why[RP_CODEC_REASON_MAX];
    uint64_t token = 0;
    bool sent = rpd_replica_propose(core->replica, m->name, text ? text : "{}",
                                    text ? strlen(text) : 2, &token, why, sizeof why);
    cJSON_free(text);
    if (!sent) {
        free(id_copy);
        return rpd_fail_storage(r, "replication: %s", why);
    }
    r->session->repl_token = token;
    r->session->repl_id = id_copy;
    r->deferred = true;
    return true;
}

/* Runs the handler of method m (or fills r->err) and writes the response
 * object into w.  Returns false when the request failed. */
static bool dispatch(rpd_req *r, const rpd_method *m, size_t index, const cJSON *id,
                     const cJSON *params, rp_jw *w)
{
    rpd_core *core = r->core;
    core->stats.by_method[index]++;
    if (!(m->flags & RPD_METHOD_NOAUTH) && rpd_session_locked(core, r->session))
        return rpd_fail(r, RPD_UNAUTHORIZED,
                        "Unauthorized: this TCP connection must call auth with the server's "
                        "token first");
    if (params && !cJSON_IsObject(params))
        return rpd_fail_path(r, "params", "must be an object (parameters by name)");
    if (core->shutting_down && (m->flags & RPD_METHOD_MUTATES))
        return rpd_fail(r, RPD_SHUTTING_DOWN, "Shutting down: %s not executed", m->name);
    /* A worker runs only the line rpd_line_wants_worker picked, whose method
     * is a query; anything else here would mean the peek and the parse
     * disagreed, and must not touch the snapshot it holds. */
    if (core->worker && !(m->flags & RPD_METHOD_WORKER))
        return rpd_fail(r, RPD_INTERNAL_ERROR, "Internal error: %s cannot run on a worker thread",
                        m->name);
    r->query = !(m->flags & RPD_METHOD_MUTATES);
    /* min_revision (queries): the connection waited for the store to reach
     * it before the line ran (conn.c), up to max_wait_ms; still short of
     * it, the request is refused. */
    const cJSON *want =
        r->query && params ? cJSON_GetObjectItemCaseSensitive(params, "min_revision") : NULL;
    if (want) {
        double v = cJSON_IsNumber(want) ? want->valuedouble : -1.0;
        if (!(v >= 0 && v <= 9007199254740992.0 && v == (double)(uint64_t)v))
            return rpd_fail_path(r, "params.min_revision", "must be an integer from 0 to 2^53");
        uint64_t have = rp_store_revision(core->store);
        if ((uint64_t)v > have) {
            rpd_fail_limit(r, RPD_LIMIT_max_wait_ms, core->limits.max_wait_ms);
            rpd_format(r->err.message, sizeof r->err.message,
                       "Limit exceeded: max_wait_ms (max %llu): min_revision %llu not reached "
                       "(the store is at revision %llu)",
                       (unsigned long long)core->limits.max_wait_ms, (unsigned long long)v,
                       (unsigned long long)have);
            return false;
        }
    }
    r->reply_at = w->len;
    rpd_write_envelope(w, id, false);
    r->reply_head_end = w->len;
    /* A mutation's result is a name and a few numbers: with room for it
     * reserved first, writing it after the store changed cannot fail, so
     * an out-of-memory error always means nothing changed. */
    if ((m->flags & RPD_METHOD_MUTATES) && !rp_jw_reserve(w, RPD_MUTATION_REPLY_BYTES))
        return w->over ? rpd_fail_limit(r, RPD_LIMIT_max_reply_bytes, core->limits.max_reply_bytes)
                       : rpd_fail(r, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    /* With a journal, the store writes a mutation's record through its
     * commit hook, just before it changes anything (durable.h). */
    bool mutates = (m->flags & RPD_METHOD_MUTATES) && core->durable;
    if (mutates) {
        char why[RP_CODEC_REASON_MAX];
        int err = rpd_durable_begin(core->durable, why, sizeof why);
        if (err == ENOMEM)
            return rpd_fail(r, RPD_INTERNAL_ERROR, "Internal error: out of memory");
        if (err)
            return rpd_fail_storage(r, "%s", why);
    }
    /* Sampled like the lines' latency: one call of each method in
     * RPD_LATENCY_SAMPLE on each thread has its handler timed (counted per
     * method: with one count, a client alternating two methods would have
     * only one of them ever timed). */
    static _Thread_local unsigned tick[RPD_STATS_MAX_METHODS];
    bool timed = tick[index]++ % RPD_LATENCY_SAMPLE == 0;
    uint64_t t0 = timed ? rpd_now_ns() : 0;
    /* --nats: the mutation is validated here as it would run, up to its
     * commit, which refuses it; then it is published (propose). */
    bool proposing = (m->flags & RPD_METHOD_MUTATES) && core->replica && !core->applying;
    if (proposing && r->line->in_batch)
        return rpd_fail(r, RPD_INVALID_REQUEST,
                        "Invalid Request: with --nats a mutation may not share a batch with "
                        "an array (send it on a line of its own)");
    if (proposing) {
        core->proposing = true;
        core->proposal_seen = false;
    }
    bool ok = m->handler(r, params, w);
    if (proposing) {
        core->proposing = false;
        if (core->proposal_seen) {
            if (mutates)
                rpd_durable_end(core->durable, r->session);
            return propose(r, m, id, params);
        }
    }
    uint64_t ns = timed ? rpd_now_ns() - t0 : 0;
    if (timed) {
        core->stats.method_ns[index] += ns;
        core->stats.method_timed[index]++;
    }
    if (core->light) { /* noted, for taking a dropped try back (conn.c) */
        core->light_line.called = true;
        core->light_line.timed = timed;
        core->light_line.method = index;
        core->light_line.method_ns = ns;
    }
    if (mutates)
        rpd_durable_end(core->durable, r->session);
    if (!ok)
        return false;
    rp_jw_object_end(w);
    if (w->over)
        return rpd_fail_limit(r, RPD_LIMIT_max_reply_bytes, core->limits.max_reply_bytes);
    if (w->oom)
        return rpd_fail(r, RPD_INTERNAL_ERROR, "Internal error: out of memory writing the reply");
    return true;
}

/* Lowers w's limit by the bytes written since mark, which are about to be
 * discarded (never below what is written now). */
static void discard_room(rp_jw *w, const rp_jw *mark)
{
    size_t built = w->len - mark->len;
    if (w->limit == SIZE_MAX)
        return;
    /* Error objects may have taken the line past its limit already: then
     * there is no room left to take. */
    w->limit = w->limit > mark->len && w->limit - mark->len > built ? w->limit - built : mark->len;
}

/* A line with \u0000 escapes is parsed from a copy in which each escape is
 * the byte RP_JSON_NUL_MARK (rp_json_mark_nul_escapes), so that the
 * requests holding one can be told from the rest.  The marks are met in
 * the order of the text when the requests are taken in order. */
typedef struct nul_marks {
    const char *text; /* the copy */
    size_t len;
    size_t seen; /* marks in the requests handled so far */
} nul_marks;

/* How many marks the keys and strings of j hold. */
static size_t count_marks(const cJSON *j)
{
    size_t n = 0;
    for (const char *s = j->string; s && (s = strchr(s, RP_JSON_NUL_MARK)); s++)
        n++;
    if (cJSON_IsString(j))
        for (const char *s = j->valuestring; s && (s = strchr(s, RP_JSON_NUL_MARK)); s++)
            n++;
    for (const cJSON *c = j->child; c; c = c->next)
        n += count_marks(c);
    return n;
}

/* The offset in the line of byte `at` of the copy: each mark before it
 * stood for a whole escape. */
static size_t line_offset(const nul_marks *m, size_t at)
{
    size_t marks = 0;
    for (const char *s = m->text, *end = m->text + at;
         (s = memchr(s, RP_JSON_NUL_MARK, (size_t)(end - s))) != NULL; s++)
        marks++;
    return at + marks * (RP_JSON_NUL_ESCAPE_LEN - 1);
}

/* The offset in the line of the escape that mark number k (from 0) stands
 * for. */
static size_t mark_offset(const nul_marks *m, size_t k)
{
    const char *s = m->text, *end = m->text + m->len;
    for (;; s++) {
        s = memchr(s, RP_JSON_NUL_MARK, (size_t)(end - s));
        if (!s || k-- == 0)
            break;
    }
    return s ? line_offset(m, (size_t)(s - m->text)) : 0;
}

/* When req holds a \u0000 escape: the -32600 that refuses it in e, with
 * its id in *id when that is a valid id without an escape of its own
 * (proto/PROTOCOL.md, Errors).  Returns false for a request without one. */
static bool refuse_nul(nul_marks *m, const cJSON *req, const cJSON **id, rpd_error *e)
{
    size_t marks = count_marks(req);
    if (marks == 0)
        return false;
    size_t offset = mark_offset(m, m->seen);
    m->seen += marks;
    const cJSON *i = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
    *id = i && valid_id(i) && count_marks(i) == 0 ? i : NULL;
    rpd_error_set(e, RPD_INVALID_REQUEST,
                  "Invalid Request: \\u0000 in a string is not supported (byte %zu)", offset);
    return true;
}

/* Handles one request object; appends its response object to w unless it is
 * a notification.  Returns true when something was written.  nul is NULL
 * unless the line held \u0000 escapes. */
static bool handle_request(rpd_core *core, rpd_session *s, rpd_line *line, const cJSON *req,
                           rp_jw *w, nul_marks *nul)
{
    const cJSON *id;
    bool notify;
    envelope env;
    rpd_req r;
    /* Not memset: the error part is large and filled only on failure. */
    r.core = core;
    r.session = s;
    r.line = line;
    r.err.code = 0;
    r.err.data = RPD_DATA_NONE;
    r.reply_at = r.reply_head_end = 0;
    r.deferred = false;
    r.query = false;
    r.group_dofs = NULL;
    r.n_group_dofs = 0;
    r.group = NULL;
    core->stats.requests++;

    /* Before the envelope: its messages quote member names, which must not
     * quote a mark.  Answered even without an id, as every -32600. */
    if (nul && refuse_nul(nul, req, &id, &r.err)) {
        rpd_write_error(core, w, id, &r.err);
        return true;
    }
    if (!check_envelope(req, &env, &id, &notify, &r.err)) {
        rpd_write_error(core, w, id, &r.err);
        return true;
    }
    if (notify)
        core->stats.notifications++;

    const char *name = env.method->valuestring;
    size_t index;
    const rpd_method *m = rpd_method_find(name, &index);
    rp_jw mark = *w;
    bool ok;
    if (m) {
        ok = dispatch(&r, m, index, id, env.params, w);
    } else {
        r.err.code = RPD_METHOD_NOT_FOUND;
        r.err.data = RPD_DATA_METHOD;
        size_t n = strlen(name);
        if (n >= sizeof r.err.text)
            n = rp_utf8_trim(name, sizeof r.err.text - 1);
        memcpy(r.err.text, name, n);
        r.err.text[n] = '\0';
        rpd_format(r.err.message, sizeof r.err.message, "Method not found: %s", r.err.text);
        ok = false;
    }
    if (!ok) {
        if (m) {
            int slot = rpd_stats_code_slot(r.err.code);
            core->stats.method_errors[index][slot]++;
            if (core->light) { /* (taken back with a dropped try, conn.c) */
                core->light_line.erred = true;
                core->light_line.error_method = index;
                core->light_line.error_slot = slot;
            }
        }
        /* Discard whatever the handler wrote; the error object itself may
         * go past max_reply_bytes by its own few hundred bytes.  What was
         * discarded still counts against the line's room: so a batch of
         * requests that each build a reply too large to send stops after
         * max_reply_bytes built in all, not one such reply per request. */
        discard_room(w, &mark);
        rp_jw_rewind(w, &mark);
        rp_jw_clear_failure(w);
        size_t limit = w->limit;
        rp_jw_set_limit(w, SIZE_MAX);
        if (notify)
            rpd_count_error(core, &r.err);
        else
            rpd_write_error(core, w, id, &r.err);
        rp_jw_set_limit(w, limit);
        return !notify;
    }
    if (notify || r.deferred) {
        discard_room(w, &mark);
        rp_jw_rewind(w, &mark); /* executed (or published); no reply now */
        return false;
    }
    if (s->outcomes)
        note_outcome(s->outcomes, w, &r);
    return true;
}

/* ---- a line --------------------------------------------------------------- */

/* A parse error at offset; `what` says what is wrong there. */
static void parse_error(rpd_core *core, rp_jw *out, size_t offset, const char *what)
{
    rpd_error e;
    rpd_error_set(&e, RPD_PARSE_ERROR, "Parse error: %s at byte %zu", what, offset);
    e.data = RPD_DATA_OFFSET;
    e.offset = offset;
    rpd_reply_error_line(core, out, &e);
}

/* True when s[0..n) equals the lower-case ASCII word w, ignoring case. */
static bool strncasecmp_ascii(const char *s, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)w[i]))
            return false;
    return true;
}

/* Whether the text at `at` is one of the non-JSON number tokens that other
 * JSON encoders produce (Python's json.dumps writes NaN and Infinity),
 * with or without a sign. */
static bool names_non_finite(const char *at, size_t left)
{
    if (left > 0 && (*at == '-' || *at == '+')) {
        at++;
        left--;
    }
    static const char *const tokens[] = {"NaN", "Infinity", "inf", "nan"};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        size_t n = strlen(tokens[i]);
        if (left >= n && strncasecmp_ascii(at, tokens[i], n))
            return true;
    }
    return false;
}

#define NON_FINITE_WHY "NaN and Infinity are not JSON numbers (send finite numbers)"

/* Why cJSON stopped at `at`. */
static const char *explain_parse_error(const char *at, size_t left)
{
    return names_non_finite(at, left) ? NON_FINITE_WHY : "invalid JSON";
}

/* Why the number token at `at` is refused (RP_SCAN_BAD_NUMBER). */
static const char *explain_bad_number(const char *at, size_t left)
{
    return names_non_finite(at, left) ? NON_FINITE_WHY
                                      : "not a JSON number (no leading zeros or '+', digits "
                                        "before and after '.', digits after 'e')";
}

static bool is_blank(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

/* Checks the line before parsing: UTF-8, control bytes, depth, numbers.
 * Writes the error line and returns false when the line is refused;
 * *nul says whether the line holds \u0000 escapes, which are refused
 * request by request (refuse_nul). */
static bool prescan(rpd_core *core, const char *line, size_t len, rp_jw *out, bool *nul)
{
    size_t offset = 0;
    rpd_error e;
    *nul = false;
    switch (rp_json_prescan(line, len, (int)core->limits.max_json_depth, &offset)) {
    case RP_SCAN_OK:
        return true;
    case RP_SCAN_NUL_ESCAPE:
        *nul = true;
        return true;
    case RP_SCAN_TOO_DEEP:
        rpd_error_set(&e, RPD_LIMIT_EXCEEDED,
                      "Limit exceeded: JSON nested deeper than %zu levels at byte %zu",
                      core->limits.max_json_depth, offset);
        e.data = RPD_DATA_LIMIT;
        e.limit = RPD_LIMIT_max_json_depth;
        e.max = core->limits.max_json_depth;
        rpd_reply_error_line(core, out, &e);
        return false;
    case RP_SCAN_BAD_UTF8:
        parse_error(core, out, offset, "invalid UTF-8");
        return false;
    case RP_SCAN_CONTROL:
        parse_error(core, out, offset, "control character (escape it inside strings)");
        return false;
    case RP_SCAN_BAD_NUMBER:
        parse_error(core, out, offset, explain_bad_number(line + offset, len - offset));
        return false;
    }
    return true;
}

/* For when the writer failed outside any one request's reply (the '[' that
 * starts a batch: then nothing runs; its ']' or the final '\n': then the
 * batch's requests have run), or could not write a request's error: what
 * the line wrote becomes one out-of-memory error.  If that fails too the
 * writer stays failed, and the server closes the connection. */
static void reply_line_oom(rpd_core *core, rp_jw *out, const rp_jw *mark, const cJSON *root)
{
    const cJSON *id = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "id") : NULL;
    rpd_error e;
    rpd_error_set(&e, RPD_INTERNAL_ERROR, "Internal error: out of memory");
    rp_jw_rewind(out, mark);
    rp_jw_clear_failure(out);
    /* An id with a mark (a \u0000 escape, see nul_marks) is not echoed. */
    rpd_write_error(core, out, id && valid_id(id) && count_marks(id) == 0 ? id : NULL, &e);
    rp_jw_end_line(out);
}

/* Whether a batch holds a request for a method that runs on the event
 * loop only (a mutation, a watch, auth): a worker hands such a line back.
 * Members that are no valid request get their error wherever they run. */
static bool batch_needs_loop(const cJSON *root)
{
    for (const cJSON *r = root->child; r; r = r->next) {
        const cJSON *m = cJSON_IsObject(r) ? cJSON_GetObjectItemCaseSensitive(r, "method") : NULL;
        size_t index;
        const rpd_method *def = cJSON_IsString(m) ? rpd_method_find(m->valuestring, &index) : NULL;
        if (def && !(def->flags & RPD_METHOD_WORKER))
            return true;
    }
    return false;
}

/* Handles the parsed JSON text of a line (nul as for handle_request). */
static void handle_root(rpd_core *core, rpd_session *s, rpd_line *line, const cJSON *root,
                        rp_jw *out, nul_marks *nul)
{
    /* max_reply_bytes bounds what requests write; the few bytes that close
     * a line (']', '\n') are written whatever it says, since error objects
     * may already have taken the line past it. */
    if (!cJSON_IsArray(root)) {
        if (handle_request(core, s, line, root, out, nul)) {
            rp_jw_set_limit(out, SIZE_MAX);
            rp_jw_end_line(out);
        }
        return;
    }
    core->stats.batches++;
    if (!root->child) {
        rpd_error e;
        rpd_error_set(&e, RPD_INVALID_REQUEST, "Invalid Request: empty batch");
        core->stats.requests++;
        rpd_reply_error_line(core, out, &e);
        return;
    }
    rp_jw mark = *out;
    rp_jw_array_begin(out);
    line->in_batch = true;
    bool any = false;
    for (const cJSON *r = root->child; r && !out->oom; r = r->next)
        any |= handle_request(core, s, line, r, out, nul);
    rp_jw_set_limit(out, SIZE_MAX);
    rp_jw_array_end(out);
    if (any)
        rp_jw_end_line(out);
    else
        rp_jw_rewind(out, &mark); /* only notifications: no reply at all */
}

/* Lines shorter than this parse as they are: the fast path below pays for
 * itself on tables of many numbers only. */
#define JOINTS_FAST_MIN 1024

/* The fast path for check.batch's joint tables: cJSON would spend an
 * allocated node and a strtod call on every number.  When the line is a
 * check.batch request whose params.joints is an array of equally long
 * arrays of strict JSON numbers, the numbers are read straight from the
 * text into *rows (the same doubles, numbers.c) and cJSON parses the rest
 * of the line, with "[]" in the table's place (*rest, freed by the
 * caller); check.batch then takes the table from req->line->batch_joints.
 * Anything unusual, including a rest that does not parse, returns NULL:
 * the line then takes the general path, which gives every error exactly
 * as before. */
/* Whether the line holds the string "check.batch" anywhere: the cheap test
 * that keeps the fast path's full walk off every other long line (large
 * scene.create and scene.put lines run on the event loop).  memchr looks
 * for the 'k', which numbers and the protocol's shape keys never hold. */
static bool mentions_check_batch(const char *line, size_t len)
{
    static const char pat[] = "\"check.batch\"";
    const size_t plen = sizeof pat - 1, at_k = 5; /* pat[5] == 'k' */
    for (const char *p = line + at_k, *end = line + len; p < end;) {
        p = memchr(p, 'k', (size_t)(end - p));
        if (!p)
            return false;
        if ((size_t)(p - line) >= at_k && (size_t)(end - p) >= plen - at_k &&
            memcmp(p - at_k, pat, plen) == 0)
            return true;
        p++;
    }
    return false;
}

static cJSON *parse_without_joints(const char *line, size_t len, rp_num_rows *rows, char **rest)
{
    size_t a, b;
    *rest = NULL;
    if (len < JOINTS_FAST_MIN || !mentions_check_batch(line, len) ||
        !rp_json_batch_joints(line, len, &a, &b, rows))
        return NULL;
    size_t n = a + 2 + (len - b);
    char *text = malloc(n + 1);
    if (!text) {
        rp_num_rows_free(rows);
        return NULL;
    }
    memcpy(text, line, a);
    memcpy(text + a, "[]", 2);
    memcpy(text + a + 2, line + b, len - b);
    text[n] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, false);
    if (!root || !is_blank(end, n - (size_t)(end - text))) {
        cJSON_Delete(root);
        (void)rp_json_take_oom();
        rp_num_rows_free(rows);
        free(text);
        return NULL;
    }
    *rest = text;
    return root;
}

/* ---- the flat fast parse ---------------------------------------------------- */

/* Most lines of a busy client are small objects of plain scalars (ping,
 * hello, stats): for them the pre-scan, cJSON's parse and its allocations
 * cost more than the request itself.  flat_parse reads such a line into
 * nodes of its own, the very tree cJSON builds for it, and gives up on
 * anything else (nested values, escapes, bytes outside printable ASCII,
 * fractions, exponents and long numbers, other blanks): such a line takes
 * the general path.  So it accepts only lines that the pre-scan and cJSON
 * accept (one level of nesting, strict numbers), and every error reply
 * still comes from the general path. */
#define FLAT_MAX_BYTES 256
#define FLAT_MAX_MEMBERS 8

typedef struct flat_tree {
    cJSON root;
    cJSON member[FLAT_MAX_MEMBERS];
    char text[FLAT_MAX_BYTES]; /* the line, its strings ended in place */
} flat_tree;

/* The blanks is_blank allows around the value (cJSON skips them too). */
static bool flat_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static size_t flat_skip(const char *t, size_t i, size_t n)
{
    while (i < n && flat_blank(t[i]))
        i++;
    return i;
}

/* Whether a scalar may end before t[k]: the line ends, a blank, ',' or
 * '}'.  Anything else (1.5, 1e3, 01, true1) goes to the general path. */
static bool flat_delimited(const char *t, size_t k, size_t n)
{
    return k == n || flat_blank(t[k]) || t[k] == ',' || t[k] == '}';
}

/* The string at t[i] == '"', printable ASCII without escapes, ended in
 * place (its closing quote becomes '\0'): the index after it, or 0. */
static size_t flat_string(char *t, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '"') {
            t[i] = '\0';
            return i + 1;
        }
        if (c < 0x20 || c > 0x7e || c == '\\')
            return 0;
    }
    return 0;
}

/* A strict JSON integer of at most 15 digits at t[i], filled into j as
 * cJSON's parse_number fills it (such a double is exact, as strtod's is):
 * the index after it, or 0. */
static size_t flat_integer(const char *t, size_t i, size_t n, cJSON *j)
{
    size_t d = i + (t[i] == '-'), k = d;
    double v = 0;
    while (k < n && k - d <= 15 && t[k] >= '0' && t[k] <= '9')
        v = v * 10 + (t[k++] - '0');
    size_t digits = k - d;
    if (digits == 0 || digits > 15 || (t[d] == '0' && digits > 1) || !flat_delimited(t, k, n))
        return 0;
    v = t[i] == '-' ? -v : v; /* "-0" is -0.0, as strtod says */
    j->type = cJSON_Number;
    j->valuedouble = v;
    j->valueint = v >= INT_MAX ? INT_MAX : v <= (double)INT_MIN ? INT_MIN : (int)v;
    return k;
}

/* true, false or null at t[i], filled into j as cJSON does: the index
 * after it, or 0. */
static size_t flat_literal(const char *t, size_t i, size_t n, cJSON *j)
{
    static const struct {
        const char *word;
        size_t len;
        int type, valueint;
    } lits[] = {
        {"true", 4, cJSON_True, 1}, {"false", 5, cJSON_False, 0}, {"null", 4, cJSON_NULL, 0}};
    for (size_t k = 0; k < sizeof lits / sizeof lits[0]; k++)
        if (n - i >= lits[k].len && memcmp(t + i, lits[k].word, lits[k].len) == 0 &&
            flat_delimited(t, i + lits[k].len, n)) {
            j->type = lits[k].type;
            j->valueint = lits[k].valueint;
            return i + lits[k].len;
        }
    return 0;
}

/* One member's value at t[i] into m: the index after it, or 0. */
static size_t flat_value(char *t, size_t i, size_t n, cJSON *m)
{
    if (t[i] == '"') {
        m->type = cJSON_String;
        m->valuestring = t + i + 1;
        return flat_string(t, i, n);
    }
    if (t[i] == '-' || (t[i] >= '0' && t[i] <= '9'))
        return flat_integer(t, i, n, m);
    return flat_literal(t, i, n, m);
}

/* Parses a line that is one object of at most FLAT_MAX_MEMBERS plain
 * scalar members into f, linked as cJSON links them (the first member's
 * prev is the last); false leaves the line to the general path. */
static bool flat_parse(const char *line, size_t len, flat_tree *f)
{
    if (len > FLAT_MAX_BYTES)
        return false;
    char *t = f->text;
    memcpy(t, line, len);
    size_t n = len, i = flat_skip(t, 0, n), count = 0;
    if (i >= n || t[i] != '{')
        return false;
    memset(&f->root, 0, sizeof f->root);
    f->root.type = cJSON_Object;
    i = flat_skip(t, i + 1, n);
    bool more = i >= n || t[i] != '}';
    if (!more)
        i++;
    while (more) {
        if (count == FLAT_MAX_MEMBERS || i >= n || t[i] != '"')
            return false;
        cJSON *m = &f->member[count];
        memset(m, 0, sizeof *m);
        m->string = t + i + 1;
        i = flat_string(t, i, n);
        i = i ? flat_skip(t, i, n) : n;
        if (i >= n || t[i] != ':')
            return false;
        i = flat_skip(t, i + 1, n);
        if (i >= n || !(i = flat_value(t, i, n, m)))
            return false;
        if (count) {
            f->member[count - 1].next = m;
            m->prev = &f->member[count - 1];
        }
        count++;
        i = flat_skip(t, i, n);
        if (i >= n || (t[i] != ',' && t[i] != '}'))
            return false;
        more = t[i] == ',';
        i = flat_skip(t, i + 1, n);
    }
    if (flat_skip(t, i, n) != n)
        return false;
    if (count) {
        f->root.child = &f->member[0];
        f->member[0].prev = &f->member[count - 1];
    }
    return true;
}

bool rpd_parse_line(rpd_core *core, const char *line, size_t len, rpd_parsed *p, rp_jw *out)
{
    memset(p, 0, sizeof *p);
    if (is_blank(line, len))
        return false;
    bool has_nul;
    if (!prescan(core, line, len, out, &has_nul)) {
        core->stats.requests++;
        return false;
    }
    /* A line with \u0000 escapes is parsed from its marked copy (see
     * nul_marks); offsets into the copy are given as offsets into the
     * line. */
    nul_marks marks = {NULL, 0, 0};
    if (has_nul) {
        p->marked = malloc(len);
        if (!p->marked) {
            rpd_error e;
            rpd_error_set(&e, RPD_INTERNAL_ERROR,
                          "Internal error: out of memory parsing the request");
            core->stats.requests++;
            rpd_reply_error_line(core, out, &e);
            return false;
        }
        marks.text = p->marked;
        marks.len = p->marked_len = rp_json_mark_nul_escapes(line, len, p->marked);
    }
    const char *text = has_nul ? marks.text : line;
    size_t text_len = has_nul ? marks.len : len;
    const char *end = NULL;
    (void)rp_json_take_oom(); /* a stale flag must not blame this parse */
    cJSON *root = has_nul ? NULL : parse_without_joints(line, len, &p->rows, &p->rest);
    if (root)
        p->has_rows = true;
    else
        root = cJSON_ParseWithLengthOpts(text, text_len, &end, false);
    if (!root && rp_json_take_oom()) { /* memory ran out; the JSON may be fine */
        rpd_error e;
        rpd_error_set(&e, RPD_INTERNAL_ERROR, "Internal error: out of memory parsing the request");
        core->stats.requests++;
        rpd_reply_error_line(core, out, &e);
        rpd_parsed_free(p);
        return false;
    }
    if (!root) {
        /* A failed parse points `end` at the error.  Not cJSON_GetErrorPtr:
         * that reads a process-wide variable, which the event loop and the
         * workers' parses overwrite concurrently. */
        const char *at = end;
        size_t off = (at && at >= text && at <= text + text_len) ? (size_t)(at - text) : 0;
        core->stats.requests++;
        parse_error(core, out, has_nul ? line_offset(&marks, off) : off,
                    explain_parse_error(text + off, text_len - off));
        rpd_parsed_free(p);
        return false;
    }
    if (!p->rest && !is_blank(end, text_len - (size_t)(end - text))) {
        while (*end == ' ' || *end == '\t' || *end == '\r')
            end++; /* report where the garbage starts */
        size_t off = (size_t)(end - text);
        cJSON_Delete(root);
        core->stats.requests++;
        parse_error(core, out, has_nul ? line_offset(&marks, off) : off,
                    "trailing data after the JSON value");
        rpd_parsed_free(p);
        return false;
    }
    p->root = root;
    return true;
}

void rpd_parsed_free(rpd_parsed *p)
{
    /* A tree in an arena goes with its chunks (arena.h): its nodes need
     * no walk (millions for a large model.put). */
    if (!p->borrowed && !rpd_arena_owns_trees())
        cJSON_Delete(p->root);
    p->root = NULL;
    if (p->has_rows) {
        rp_num_rows_free(&p->rows);
        p->has_rows = false;
    }
    free(p->rest);
    p->rest = NULL;
    free(p->marked);
    p->marked = NULL;
    rpd_prebuilt_free(p->prebuilt);
    p->prebuilt = NULL;
    rpd_prebuilt_models_free(p->prebuilt_models);
    p->prebuilt_models = NULL;
}

/* Whether a parsed line holds a request that runs on the event loop only
 * (a mutation, a watch, auth, …). */
static bool parsed_needs_loop(const rpd_parsed *p)
{
    const cJSON *root = p->root;
    if (cJSON_IsArray(root))
        return batch_needs_loop(root);
    const cJSON *m = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "method") : NULL;
    size_t index;
    const rpd_method *def = cJSON_IsString(m) ? rpd_method_find(m->valuestring, &index) : NULL;
    return def && !(def->flags & RPD_METHOD_WORKER);
}

void rpd_run_parsed(rpd_core *core, rpd_session *s, rpd_parsed *p, rp_jw *out)
{
    /* The line's reply may grow to max_reply_bytes; its check work is
     * shared by the requests of a batch. */
    size_t limit = out->limit;
    rp_jw_set_limit(out, out->len + core->limits.max_reply_bytes);
    /* On the event loop, while workers take the queries, a line gets the
     * smaller max_loop_work: it holds every other client meanwhile. */
    rpd_line line = {core->limits.max_request_work, RPD_LIMIT_max_request_work,
                     p->has_rows ? &p->rows : NULL, false};
    if (!core->worker && core->has_workers && core->limits.max_loop_work < line.work_left) {
        line.work_left = core->limits.max_loop_work;
        line.work_limit = RPD_LIMIT_max_loop_work;
    }
    if (core->light && RPD_LIGHT_WORK < line.work_left)
        line.work_left = RPD_LIGHT_WORK; /* (an overrun goes to a worker: conn.c) */
    nul_marks marks = {p->marked, p->marked_len, 0};
    size_t store_before = rp_store_memory(core->store);
    rp_jw mark = *out;
    core->prebuilt = p->prebuilt;
    core->prebuilt_models = p->prebuilt_models;
    handle_root(core, s, &line, p->root, out, p->marked ? &marks : NULL);
    core->prebuilt = NULL;
    core->prebuilt_models = NULL;
    if (out->oom) {
        forget_outcomes(s->outcomes, mark.len);
        reply_line_oom(core, out, &mark, p->root);
    }
    rp_jw_set_limit(out, limit);
    rpd_parsed_free(p);
    size_t store_after = rp_store_memory(core->store);
    if (store_after < store_before) {
        rpd_core_freed(core, store_before - store_after);
        if (store_before - store_after >= RPD_TRIM_BYTES)
            release_memory(core);
    }
}

bool rpd_process_line_or_keep(rpd_core *core, rpd_session *s, const char *line, size_t len,
                              rp_jw *out, rpd_parsed *keep)
{
    /* Latency is sampled, one line in RPD_LATENCY_SAMPLE: reading the clock
     * twice per request is a measurable share of a ping on some VMs. */
    bool timed = !is_blank(line, len) && (core->lines++ % RPD_LATENCY_SAMPLE) == 0;
    uint64_t t0 = timed ? rpd_now_ns() : 0;
    rpd_parsed p;
    flat_tree flat;
    if (!keep && core->limits.max_json_depth >= 1 && flat_parse(line, len, &flat)) {
        /* (A worker's line, which may be kept, takes the general path.) */
        memset(&p, 0, sizeof p);
        p.root = &flat.root;
        p.borrowed = true;
        rpd_run_parsed(core, s, &p, out);
    } else if (rpd_parse_line(core, line, len, &p, out)) {
        if (keep && parsed_needs_loop(&p)) {
            rpd_prebuild_clouds(&p); /* (the loop would hold everyone while it builds) */
            rpd_prebuild_models(&p, &core->limits);
            *keep = p;
            return true; /* its time counts where it runs */
        }
        rpd_run_parsed(core, s, &p, out);
    }
    if (timed) {
        uint64_t ns = rpd_now_ns() - t0;
        rpd_stats_latency(&core->stats, ns);
        if (core->light) { /* noted, as in dispatch */
            core->light_line.sampled = true;
            core->light_line.latency_ns = ns;
        }
    }
    return false;
}

void rpd_process_line(rpd_core *core, rpd_session *s, const char *line, size_t len, rp_jw *out)
{
    (void)rpd_process_line_or_keep(core, s, line, len, out, NULL);
}

/* ---- --nats: batches that hold mutations ---------------------------------------- */

void rpd_batch_free(char **elems, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(elems[i]);
    free(elems);
}

bool rpd_batch_split(const char *line, size_t len, char ***elems_out, size_t *n_out)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i == len || line[i] != '[')
        return false;
    cJSON *root = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsArray(root) || !root->child) {
        cJSON_Delete(root);
        return false;
    }
    size_t n = 0;
    bool mutates = false;
    for (const cJSON *r = root->child; r; r = r->next, n++) {
        if (cJSON_IsArray(r)) {
            cJSON_Delete(root);
            return false; /* answered as a batch (a line of its own would be one) */
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        size_t index;
        const rpd_method *def = cJSON_IsString(m) ? rpd_method_find(m->valuestring, &index) : NULL;
        mutates |= def && (def->flags & RPD_METHOD_MUTATES);
    }
    char **elems = mutates ? calloc(n, sizeof *elems) : NULL;
    bool ok = elems != NULL;
    size_t k = 0;
    for (const cJSON *r = root->child; r && ok; r = r->next, k++) {
        char *text = cJSON_PrintUnformatted(r);
        size_t tl = text ? strlen(text) : 0;
        elems[k] = text ? malloc(tl + 1) : NULL;
        if (elems[k])
            memcpy(elems[k], text, tl + 1);
        ok = elems[k] != NULL;
        cJSON_free(text);
    }
    cJSON_Delete(root);
    if (!ok) {
        if (elems)
            rpd_batch_free(elems, n);
        return false;
    }
    *elems_out = elems;
    *n_out = n;
    return true;
}

/* ---- min_revision ------------------------------------------------------------ */

static uint64_t request_min_revision(const cJSON *req)
{
    const cJSON *p = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "params") : NULL;
    const cJSON *v = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "min_revision") : NULL;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 9007199254740992.0))
        return 0;
    return (uint64_t)v->valuedouble;
}

/* The next bare min_revision in line[from .. len), found by its '_'
 * (base64 and numbers never hold one, so a line of binary joints or of
 * numbers costs one memchr pass); NULL when there is none. */
static const char *next_key(const char *line, size_t len, const char *from)
{
    static const char key[] = "min_revision";
    const size_t klen = sizeof key - 1, under = 3; /* key[3] == '_' */
    const char *end = line + len;
    if ((size_t)(end - from) < klen)
        return NULL;
    for (const char *p = from + under; p < end && (p = memchr(p, '_', (size_t)(end - p))); p++)
        if ((size_t)(end - (p - under)) >= klen && memcmp(p - under, key, klen) == 0)
            return p - under;
    return NULL;
}

/* An upper bound of the min_revision members of a line without
 * backslashes (so without escaped keys, and without strings holding a
 * quote): the largest plain integer written after a quoted "min_revision"
 * key and its colon (every member is such a text; a key of a nested
 * object can only raise the bound), UINT64_MAX when a number there has a
 * fraction, an exponent or too many digits (cJSON decides those), 0 when
 * there is none. */
static uint64_t min_revision_bound(const char *line, size_t len)
{
    const size_t klen = sizeof "min_revision" - 1;
    const char *end = line + len;
    uint64_t most = 0;
    for (const char *k = next_key(line, len, line); k; k = next_key(line, len, k + 1)) {
        const char *q = k + klen;
        if (k == line || k[-1] != '"' || q == end || *q != '"')
            continue;
        for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n');)
            q++;
        if (q == end || *q != ':')
            continue; /* not a member's key */
        for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n');)
            q++;
        uint64_t v = 0;
        size_t digits = 0;
        for (; q < end && *q >= '0' && *q <= '9'; q++, digits++) {
            if (digits >= 18)
                return UINT64_MAX;
            v = v * 10 + (uint64_t)(*q - '0');
        }
        if (digits && q < end && (*q == '.' || *q == 'e' || *q == 'E'))
            return UINT64_MAX;
        /* Not a number, or negative: the member asks for nothing. */
        most = v > most ? v : most;
    }
    return most;
}

uint64_t rpd_line_min_revision(const char *line, size_t len, uint64_t have)
{
    /* Without backslashes the text tells the bound exactly enough: when it
     * is not beyond the store, nothing waits and nothing is parsed.  With
     * them, a line whose text names no min_revision is not parsed either
     * (a key written with escapes is not looked for). */
    if (memchr(line, '\\', len) ? !next_key(line, len, line)
                                : min_revision_bound(line, len) <= have)
        return 0;
    cJSON *root = cJSON_ParseWithLength(line, len);
    uint64_t most = 0;
    if (cJSON_IsArray(root)) {
        for (const cJSON *r = root->child; r; r = r->next) {
            uint64_t v = request_min_revision(r);
            most = v > most ? v : most;
        }
    } else {
        most = request_min_revision(root);
    }
    cJSON_Delete(root);
    return most > have ? most : 0;
}

/* ---- worker placement ------------------------------------------------------- */

/* How far into a line rpd_line_wants_worker looks for "method". */
#define PEEK_BYTES 512

static size_t skip_blanks(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return i;
}

/* The end of the string starting at p[i] == '"' (the index after its closing
 * quote), or 0 when it does not end within n; *plain says whether it had no
 * escapes. */
static size_t skip_string(const char *p, size_t i, size_t n, bool *plain)
{
    *plain = true;
    for (i++; i < n; i++) {
        if (p[i] == '\\') {
            *plain = false;
            i++;
        } else if (p[i] == '"') {
            return i + 1;
        }
    }
    return 0;
}

/* The method name of the line's (first) request, from a bounded look at
 * the top-level members before the first nested value: cheap whatever the
 * line's size, and only a placement decision (the line is parsed and
 * checked whole where it runs).  *batch says whether the line is an array.
 * False when the look does not find it. */
static bool peek_method(const char *line, size_t len, char name[64], bool *batch)
{
    size_t n = len < PEEK_BYTES ? len : PEEK_BYTES;
    size_t i = skip_blanks(line, 0, n);
    /* A batch goes by its first member: a worker hands back one that also
     * holds a request of the event loop (rpd_parsed_needs_loop), so a
     * batch of queries never holds the event loop. */
    *batch = i < n && line[i] == '[';
    if (*batch)
        i = skip_blanks(line, i + 1, n);
    if (i >= n || line[i] != '{')
        return false;
    for (i++;;) {
        bool plain;
        i = skip_blanks(line, i, n);
        if (i >= n || line[i] != '"')
            return false;
        size_t key = i + 1, end = skip_string(line, i, n, &plain);
        if (!end || !plain)
            return false;
        size_t key_len = end - 1 - key;
        i = skip_blanks(line, end, n);
        if (i >= n || line[i] != ':')
            return false;
        i = skip_blanks(line, i + 1, n);
        if (i >= n)
            return false;
        if (key_len == 6 && memcmp(line + key, "method", 6) == 0) {
            if (line[i] != '"')
                return false;
            size_t vend = skip_string(line, i, n, &plain);
            size_t vlen = vend ? vend - 2 - i : 0;
            if (!vend || !plain || vlen >= 64)
                return false;
            memcpy(name, line + i + 1, vlen);
            name[vlen] = '\0';
            return true;
        }
        /* Skip a scalar value; a nested one ends the look. */
        if (line[i] == '{' || line[i] == '[')
            return false;
        if (line[i] == '"') {
            i = skip_string(line, i, n, &plain);
            if (!i)
                return false;
        } else {
            while (i < n && line[i] != ',' && line[i] != '}')
                i++;
        }
        i = skip_blanks(line, i, n);
        if (i >= n || line[i] != ',')
            return false;
        i++;
    }
}

/* A single check, scene.distance or scene.check: one configuration or one
 * shape's worth, whose cost the request's own estimate and metered walks
 * bound (a plan is bounded by its time). */
static bool light_method(const char *name)
{
    return strcmp(name, "check") == 0 || strcmp(name, "scene.distance") == 0 ||
           strcmp(name, "scene.check") == 0;
}

/* Whether the line holds the text "meshes" in quotes (a look, not a
 * parse: a false hit only sends a line to a worker). */
static bool has_meshes_key(const char *line, size_t len)
{
    static const char key[] = "\"meshes\"";
    const size_t n = sizeof key - 1;
    for (const char *p = line; len >= n && (p = memchr(p, '"', len - n + 1 - (size_t)(p - line)));
         p++)
        if (memcmp(p, key, n) == 0)
            return true;
    return false;
}

rpd_place rpd_line_place(const char *line, size_t len)
{
    /* Parsing a large line takes milliseconds (about 8 ms a megabyte):
     * a worker does it whatever the line holds. */
    if (len >= RPD_PARSE_ON_WORKER_BYTES)
        return RPD_PLACE_WORKER;
    char name[64];
    bool batch;
    if (!peek_method(line, len, name, &batch))
        return RPD_PLACE_LOOP;
    size_t index;
    /* A model.put with meshes: a worker reads and covers them first
     * (methods_mesh.c), whatever the line's size. */
    if ((batch || strcmp(name, "model.put") == 0) && has_meshes_key(line, len))
        return RPD_PLACE_WORKER;
    const rpd_method *m = rpd_method_find(name, &index);
    if (!m || !(m->flags & RPD_METHOD_WORKER))
        return RPD_PLACE_LOOP;
    return !batch && len <= RPD_LIGHT_LINE_BYTES && light_method(name) ? RPD_PLACE_LIGHT
                                                                       : RPD_PLACE_WORKER;
}

bool rpd_line_wants_worker(const char *line, size_t len)
{
    return rpd_line_place(line, len) != RPD_PLACE_LOOP;
}

/* ---- HTTP ----------------------------------------------------------------- */

#define HTTP_BODY                                                                                  \
    "reposed speaks JSON-RPC 2.0 as newline-delimited JSON over a plain socket, not HTTP.\n"       \
    "Try: repose-cli ping   or   nc -N 127.0.0.1 7411\n"
#define HTTP_BODY_LENGTH "134"
_Static_assert(sizeof HTTP_BODY - 1 == 134, "HTTP_BODY_LENGTH must match HTTP_BODY");

const char rpd_http_reply[] = "HTTP/1.1 400 Bad Request\r\n"
                              "Content-Type: text/plain; charset=utf-8\r\n"
                              "Connection: close\r\n"
                              "Content-Length: " HTTP_BODY_LENGTH "\r\n"
                              "\r\n" HTTP_BODY;

static bool is_space_or_tab(char c)
{
    return c == ' ' || c == '\t';
}

/* The index of the first byte at or after i that is not a space or tab. */
static size_t skip_spaces(const char *line, size_t i, size_t len)
{
    while (i < len && is_space_or_tab(line[i]))
        i++;
    return i;
}

/* The index of the first space or tab at or after i (len when none). */
static size_t skip_word(const char *line, size_t i, size_t len)
{
    while (i < len && !is_space_or_tab(line[i]))
        i++;
    return i;
}

bool rpd_line_is_http(const char *line, size_t len)
{
    /* JSON texts start with '{' or '[' (after blanks): the fast path. */
    if (len == 0 || line[0] == '{' || line[0] == '[')
        return false;
    /* Clients are lenient about case and spacing, and so is this check:
     * "get  /  http/1.1" and a request line after blanks count too. */
    size_t i = skip_spaces(line, 0, len);
    static const char host[] = "host:";
    if (len - i >= sizeof host - 1 && strncasecmp_ascii(line + i, host, sizeof host - 1))
        return true;
    /* METHOD blanks target blanks HTTP/...; PRI is the method of the
     * HTTP/2 connection preface ("PRI * HTTP/2.0"). */
    static const char *const methods[] = {"get",     "post",  "put",     "head",  "delete",
                                          "options", "patch", "connect", "trace", "pri"};
    static const char version[] = "http/";
    size_t word_end = skip_word(line, i, len);
    for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++) {
        size_t n = strlen(methods[k]);
        if (word_end - i != n || !strncasecmp_ascii(line + i, methods[k], n))
            continue;
        size_t target = skip_spaces(line, word_end, len);
        size_t target_end = skip_word(line, target, len);
        size_t v = skip_spaces(line, target_end, len);
        return target_end > target && v > target_end && len - v >= sizeof version - 1 &&
               strncasecmp_ascii(line + v, version, sizeof version - 1);
    }
    return false;
}
