/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the whole request path, without sockets.  Request lines go
 * into rpd_process_line (src/server/protocol/rpc.h) with a fresh core per input;
 * reply bytes come out and are checked against the protocol.
 *
 * Per input: a new rpd_core whose store holds one scene ("cell") and one
 * model ("arm"), put there by fixed setup requests, so fuzzed lines find
 * things to read, change and delete.  The input is split at '\n' (one '\r'
 * before it dropped, as the framer does) and each piece is one request
 * line, so sequences of requests run against the state earlier ones left.
 * One input in eight (by a hash of its bytes, so runs are reproducible)
 * runs on a TCP session that must `auth` with the token "fuzz-token"
 * first, and one in eight on a core that is shutting down.
 *
 * For every line:
 *  - the reply is empty or exactly one line ending in its only '\n', of
 *    valid UTF-8, that parses as JSON;
 *  - it is a JSON-RPC 2.0 response object, or a non-empty array of them
 *    for a batch: "jsonrpc": "2.0", an "id", exactly one of "result" and
 *    "error", nothing else; an error has an integer "code" and a string
 *    "message" (and optionally "data");
 *  - replies come exactly for the requests that need one, in order, each
 *    with the request's id (null where the request had none or an invalid
 *    one; an invalid request may also answer null); a line that does not
 *    parse, is blank, or is an empty batch gets the protocol's single
 *    error line (or nothing for a blank line); a request that holds a
 *    \u0000 escape gets -32600, even as a notification, with its id unless
 *    the id holds the escape;
 *  - when every request in the line was answered with an error, the store
 *    is byte-identical afterwards (a failed mutation changes nothing);
 *  - a line the daemon would hand to a worker thread (rpd_line_wants_worker,
 *    itself a small parser run here on every line) gets the same reply
 *    bytes from a worker's core over a snapshot of the store as from the
 *    core itself, and leaves the store unchanged.
 */
#define _GNU_SOURCE /* strdup, memmem */
#include "fuzz_util.h"

#include "server/protocol/rpc.h"

/* A scene's shape as a pointer to a temporary (rp_scene_shape_at returns it
 * by value): valid to the end of the enclosing block. */
#define SCENE_SHAPE(sc, i) (&(rp_shape[1]){rp_scene_shape_at((sc), (i))}[0])

#define TOKEN "fuzz-token"

static const char *const setup_lines[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":\"cell\","
    "\"shapes\":{\"post\":{\"capsule\":{\"a\":[0.5,0,0],\"b\":[0.5,0,1],\"radius\":0.25}},"
    "\"ball\":{\"sphere\":{\"center\":[0,0,-1],\"radius\":0.25}}}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"model.put\",\"params\":{\"model\":\"arm\","
    "\"links\":[{\"id\":\"upper\",\"frame\":0,\"shape\":{\"capsule\":{\"a\":[0,0,0],"
    "\"b\":[1,0,0],\"radius\":0.25}}},{\"id\":\"fore\",\"frame\":1,\"shape\":{\"capsule\":"
    "{\"a\":[0,0,0],\"b\":[1,0,0],\"radius\":0.25}}},{\"id\":\"base\",\"frame\":null,"
    "\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.5}}}],\"safety_margin\":0.125,"
    "\"allowed_pairs\":[[\"upper\",\"fore\"]]}}",
};

/* ---- the store, dumped to bytes ------------------------------------------ */

static void dump_u64(rp_jw *d, uint64_t x)
{
    rp_jw_raw(d, (const char *)&x, sizeof x);
}

static void dump_double(rp_jw *d, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    dump_u64(d, u);
}

static void dump_str(rp_jw *d, const char *s)
{
    size_t n = strlen(s);
    dump_u64(d, n);
    rp_jw_raw(d, s, n);
}

static void dump_vec3(rp_jw *d, rp_vec3 v)
{
    dump_double(d, v.x);
    dump_double(d, v.y);
    dump_double(d, v.z);
}

static void dump_shape(rp_jw *d, const rp_shape *s)
{
    dump_u64(d, (uint64_t)s->kind);
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        dump_vec3(d, s->sphere.center);
        dump_double(d, s->sphere.radius);
        break;
    case RP_SHAPE_CAPSULE:
        dump_vec3(d, s->capsule.a);
        dump_vec3(d, s->capsule.b);
        dump_double(d, s->capsule.radius);
        break;
    case RP_SHAPE_BOX:
        dump_vec3(d, s->box.center);
        dump_vec3(d, s->box.half_extents);
        dump_double(d, s->box.rotation.w);
        dump_double(d, s->box.rotation.x);
        dump_double(d, s->box.rotation.y);
        dump_double(d, s->box.rotation.z);
        break;
    case RP_SHAPE_HALFSPACE:
        dump_vec3(d, s->halfspace.normal);
        dump_double(d, s->halfspace.offset);
        break;
    }
}

/* Everything a client can observe about the store's contents, in store
 * order: scenes with revisions, ids and shapes; models with revisions,
 * links, margin, self-collision flag, allowed pairs and frame count. */
static void dump_store(const rp_store *st, rp_jw *d)
{
    rp_jw_reset(d);
    size_t ns = rp_store_scene_count(st);
    dump_u64(d, ns);
    for (size_t i = 0; i < ns; i++) {
        const rp_scene *sc = rp_store_scene_at(st, i);
        dump_str(d, rp_scene_name(sc));
        dump_u64(d, rp_scene_revision(sc));
        size_t n = rp_scene_shape_count(sc);
        dump_u64(d, n);
        for (size_t k = 0; k < n; k++) {
            dump_str(d, rp_scene_id_at(sc, k));
            dump_shape(d, SCENE_SHAPE(sc, k));
        }
    }
    size_t nm = rp_store_model_count(st);
    dump_u64(d, nm);
    for (size_t i = 0; i < nm; i++) {
        const rp_model *m = rp_store_model_at(st, i);
        dump_str(d, rp_model_name(m));
        dump_u64(d, rp_model_revision(m));
        size_t nl = rp_model_link_count(m);
        dump_u64(d, nl);
        for (size_t k = 0; k < nl; k++) {
            const rp_link *l = rp_model_link_at(m, k);
            dump_str(d, l->id);
            dump_u64(d, (uint64_t)(int64_t)l->frame);
            dump_shape(d, &l->shape);
        }
        dump_double(d, rp_model_safety_margin(m));
        dump_u64(d, rp_model_self_collision(m));
        size_t na = rp_model_allowed_count(m);
        dump_u64(d, na);
        for (size_t k = 0; k < na; k++) {
            size_t a, b;
            rp_model_allowed_at(m, k, &a, &b);
            dump_u64(d, a);
            dump_u64(d, b);
        }
        dump_u64(d, rp_model_frame_count(m));
    }
    FUZZ_CHECK(!d->oom, "out of memory dumping the store");
}

/* ---- what the reply must be ---------------------------------------------- */

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static bool valid_id(const cJSON *id)
{
    return cJSON_IsString(id) || cJSON_IsNull(id) ||
           (cJSON_IsNumber(id) && isfinite(id->valuedouble));
}

/* What one request object (or non-object element) must get back. */
typedef struct expect {
    bool reply;      /* a response is due (false: a notification) */
    const cJSON *id; /* the id to echo; NULL: null */
    bool null_ok;    /* an invalid request: null is accepted too */
    int code;        /* the error due, or 0: any reply */
} expect;

/* Whether j's keys or strings hold the byte that stands for a \u0000
 * escape in rp_json_mark_nul_escapes' copy. */
static bool has_mark(const cJSON *j)
{
    if (j->string && strchr(j->string, RP_JSON_NUL_MARK))
        return true;
    if (cJSON_IsString(j) && strchr(j->valuestring, RP_JSON_NUL_MARK))
        return true;
    for (const cJSON *c = j->child; c; c = c->next)
        if (has_mark(c))
            return true;
    return false;
}

/* From the JSON-RPC 2.0 specification and PROTOCOL.md: a request is an
 * object with only jsonrpc "2.0", method (a string), params and id (a
 * string, a number or null), none twice.  A valid request without id is a
 * notification and gets no reply; anything else gets one. */
static expect expect_for(const cJSON *req)
{
    expect e = {true, NULL, false, 0};
    /* A request that held \u0000 (PROTOCOL.md): -32600, answered even
     * without an id, echoing an id that is valid and holds no \u0000. */
    if (has_mark(req)) {
        const cJSON *id = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
        e.id = id && valid_id(id) && !has_mark(id) ? id : NULL;
        e.code = RPD_INVALID_REQUEST;
        return e;
    }
    if (!cJSON_IsObject(req))
        return e;
    const cJSON *jsonrpc = NULL, *id = NULL, *method = NULL, *params = NULL;
    bool valid = true;
    for (const cJSON *m = req->child; m; m = m->next) {
        const cJSON **slot = strcmp(m->string, "jsonrpc") == 0  ? &jsonrpc
                             : strcmp(m->string, "id") == 0     ? &id
                             : strcmp(m->string, "method") == 0 ? &method
                             : strcmp(m->string, "params") == 0 ? &params
                                                                : NULL;
        if (!slot || *slot)
            valid = false;
        else
            *slot = m;
    }
    valid = valid && cJSON_IsString(jsonrpc) && strcmp(jsonrpc->valuestring, "2.0") == 0 &&
            cJSON_IsString(method) && (!id || valid_id(id));
    if (!id) {
        e.reply = !valid;
        return e;
    }
    if (valid_id(id))
        e.id = id;
    e.null_ok = !valid;
    return e;
}

static bool same_id(const cJSON *want, const cJSON *got)
{
    if (!want || cJSON_IsNull(want))
        return cJSON_IsNull(got);
    if (cJSON_IsString(want))
        return cJSON_IsString(got) && strcmp(want->valuestring, got->valuestring) == 0;
    return cJSON_IsNumber(got) && got->valuedouble == want->valuedouble;
}

/* Checks one response object; returns true when it is an error. */
static bool check_response(const cJSON *r, const expect *e, int want_code)
{
    FUZZ_CHECK(cJSON_IsObject(r), "a response that is not an object");
    const cJSON *jsonrpc = NULL, *id = NULL, *result = NULL, *error = NULL;
    for (const cJSON *m = r->child; m; m = m->next) {
        const cJSON **slot = strcmp(m->string, "jsonrpc") == 0  ? &jsonrpc
                             : strcmp(m->string, "id") == 0     ? &id
                             : strcmp(m->string, "result") == 0 ? &result
                             : strcmp(m->string, "error") == 0  ? &error
                                                                : NULL;
        FUZZ_CHECK(slot, "response member '%s'", m->string);
        FUZZ_CHECK(!*slot, "response member '%s' twice", m->string);
        *slot = m;
    }
    FUZZ_CHECK(cJSON_IsString(jsonrpc) && strcmp(jsonrpc->valuestring, "2.0") == 0,
               "response without \"jsonrpc\":\"2.0\"");
    FUZZ_CHECK(id, "response without id");
    FUZZ_CHECK(same_id(e->id, id) || (e->null_ok && cJSON_IsNull(id)),
               "response id is not the request's");
    FUZZ_CHECK((result != NULL) != (error != NULL), "response needs exactly one of result, error");
    if (result) {
        FUZZ_CHECK(want_code == 0, "a result where error %d is due", want_code);
        return false;
    }
    FUZZ_CHECK(cJSON_IsObject(error), "error is not an object");
    const cJSON *code = NULL, *message = NULL;
    for (const cJSON *m = error->child; m; m = m->next) {
        if (strcmp(m->string, "code") == 0 && !code)
            code = m;
        else if (strcmp(m->string, "message") == 0 && !message)
            message = m;
        else
            FUZZ_CHECK(strcmp(m->string, "data") == 0 && m == cJSON_GetObjectItem(error, "data"),
                       "error member '%s'", m->string);
    }
    FUZZ_CHECK(cJSON_IsNumber(code) && code->valuedouble == floor(code->valuedouble) &&
                   fabs(code->valuedouble) < 2147483648.0,
               "error code is not an integer");
    FUZZ_CHECK(cJSON_IsString(message) && message->valuestring[0], "error message missing");
    FUZZ_CHECK(want_code == 0 || code->valuedouble == want_code, "error %g where %d is due",
               code->valuedouble, want_code);
    return true;
}

/* What a line may have done to the store. */
typedef enum outcome {
    NOT_RUN,    /* blank, or refused as a whole: no method ran */
    ALL_FAILED, /* every request ran and failed: the store must be as it was */
    MAY_CHANGE  /* something succeeded, or a notification ran unseen */
} outcome;

/* Runs one line and checks its reply. */
static outcome run_line(rpd_core *core, rpd_session *s, const char *line, size_t len, rp_jw *out)
{
    rp_jw_reset(out);
    rpd_process_line(core, s, line, len, out);
    FUZZ_CHECK(!out->oom, "reply writer out of memory");
    const char *reply = out->buf;
    size_t n = out->len;

    if (n > 0) {
        FUZZ_CHECK(reply[n - 1] == '\n', "reply does not end in a newline");
        FUZZ_CHECK(memchr(reply, '\n', n - 1) == NULL, "reply is more than one line");
        FUZZ_CHECK(fuzz_utf8_valid(reply, n), "reply is not UTF-8 (byte %zu): %.*s",
                   fuzz_utf8_invalid_at((const unsigned char *)reply, n), (int)n, reply);
    }
    if (blank(line, len)) {
        FUZZ_CHECK(n == 0, "a reply to a blank line");
        return NOT_RUN;
    }
    const char *end = NULL;
    cJSON *got = NULL;
    if (n > 0) {
        got = cJSON_ParseWithLengthOpts(reply, n - 1, &end, false);
        FUZZ_CHECK(got && end == reply + n - 1, "reply is not one JSON text: %.*s", (int)n, reply);
    }

    /* Lines the server must reject as a whole, with one error and id null. */
    expect line_err = {true, NULL, false, 0};
    size_t off;
    rp_scan_result scan = rp_json_prescan(line, len, core->limits.max_json_depth, &off);
    cJSON *req = NULL;
    int want_code = 0;
    /* A line with \u0000 escapes is judged by its marked copy, in which
     * the requests that held one can be told apart. */
    char *marked = NULL;
    const char *text = line;
    size_t text_len = len;
    if (scan == RP_SCAN_NUL_ESCAPE) {
        marked = malloc(len);
        FUZZ_CHECK(marked, "out of memory");
        text_len = rp_json_mark_nul_escapes(line, len, marked);
        FUZZ_CHECK(text_len < len, "a NUL escape, but nothing marked");
        text = marked;
    }
    if (scan == RP_SCAN_TOO_DEEP)
        want_code = RPD_LIMIT_EXCEEDED;
    else if (scan != RP_SCAN_OK && scan != RP_SCAN_NUL_ESCAPE)
        want_code = RPD_PARSE_ERROR;
    else if (!(req = cJSON_ParseWithLengthOpts(text, text_len, &end, false)) ||
             !blank(end, text_len - (size_t)(end - text)))
        want_code = RPD_PARSE_ERROR;
    else if (cJSON_IsArray(req) && !req->child)
        want_code = RPD_INVALID_REQUEST;
    if (want_code) {
        FUZZ_CHECK(got, "no reply to a line that must get error %d", want_code);
        check_response(got, &line_err, want_code);
        cJSON_Delete(got);
        cJSON_Delete(req);
        free(marked);
        return NOT_RUN;
    }

    /* One request, or a batch: replies for exactly the requests that need
     * one, in order. */
    bool batch = cJSON_IsArray(req);
    const cJSON *first = batch ? req->child : req;
    size_t due = 0, sent = 0, errors = 0;
    for (const cJSON *r = first; r; r = batch ? r->next : NULL)
        due += expect_for(r).reply;
    if (due == 0) {
        FUZZ_CHECK(!got, "a reply where only notifications were sent");
    } else {
        FUZZ_CHECK(got, "no reply where %zu responses are due", due);
        FUZZ_CHECK(batch == cJSON_IsArray(got), "batch and reply shapes differ");
        const cJSON *g = batch ? got->child : got;
        for (const cJSON *r = first; r; r = batch ? r->next : NULL) {
            expect e = expect_for(r);
            if (!e.reply)
                continue;
            FUZZ_CHECK(g, "batch reply has %zu responses, %zu due", sent, due);
            errors += check_response(g, &e, e.code);
            sent++;
            g = batch ? g->next : NULL;
        }
        FUZZ_CHECK(!g, "more responses than requests that need one");
    }
    size_t requests = batch ? (size_t)cJSON_GetArraySize(req) : 1;
    cJSON_Delete(got);
    cJSON_Delete(req);
    free(marked);
    /* A request without a reply (a notification) may have run. */
    return sent == requests && errors == sent ? ALL_FAILED : MAY_CHANGE;
}

/* FNV-1a over the input, to pick a session mode reproducibly. */
static uint32_t hash(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rpd_limits limits = rpd_default_limits();
    /* Small enough that a fuzzed put can reach it. */
    limits.max_shapes_per_scene = 16;
    /* plan runs until its timeout when it finds nothing: a short one. */
    limits.max_plan_ms = 5;
    rpd_core core;
    FUZZ_CHECK(rpd_core_init(&core, &limits), "rpd_core_init failed");
    rpd_session session = {0};
    rp_jw out, before, after, wout;
    rp_jw_init(&out);
    rp_jw_init(&wout);
    rp_jw_init(&before);
    rp_jw_init(&after);

    for (size_t i = 0; i < sizeof setup_lines / sizeof setup_lines[0]; i++) {
        rp_jw_reset(&out);
        rpd_process_line(&core, &session, setup_lines[i], strlen(setup_lines[i]), &out);
        FUZZ_CHECK(out.len > 0 && strstr(out.buf, "\"result\""), "setup line %zu: %.*s", i,
                   (int)out.len, out.buf ? out.buf : "");
    }
    uint32_t mode = hash(data, size) % 8;
    if (mode == 0) {
        core.token = strdup(TOKEN);
        FUZZ_CHECK(core.token, "out of memory");
        core.token_len = strlen(TOKEN);
        session.is_tcp = true;
    } else if (mode == 1) {
        core.shutting_down = true;
    }

    /* `before` is dumped again only after a line that may have changed
     * the store: most fuzzed lines fail, and dumping is half the cost of
     * an input otherwise. */
    bool before_current = false;
    const char *p = (const char *)data, *stop = p + size;
    while (p < stop) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        const char *end = nl ? nl : stop;
        size_t len = (size_t)(end - p);
        if (nl && len > 0 && end[-1] == '\r')
            len--;
        if (!before_current)
            dump_store(core.store, &before);
        before_current = true;
        /* The connection's own looks at a line (conn.c): min_revision, and
         * (--nats) a batch holding a mutation split into its requests,
         * each of which must be one request (an object or a scalar, never
         * a batch). */
        /* The text's bound may only skip the parse when the parse would
         * find nothing beyond `have`: asked at 0 the line's largest
         * min_revision comes back (parsed); asked at it, 0; asked just
         * below it, it again. */
        uint64_t want = rpd_line_min_revision(p, len, 0);
        if (want) {
            FUZZ_CHECK(rpd_line_min_revision(p, len, want) == 0,
                       "min_revision %llu not reached by have = itself", (unsigned long long)want);
            FUZZ_CHECK(rpd_line_min_revision(p, len, want - 1) == want,
                       "min_revision %llu lost at have = %llu", (unsigned long long)want,
                       (unsigned long long)(want - 1));
        }
        char **elems;
        size_t n_elems;
        if (rpd_batch_split(p, len, &elems, &n_elems)) {
            FUZZ_CHECK(n_elems > 0, "a batch split into nothing");
            for (size_t k = 0; k < n_elems; k++)
                FUZZ_CHECK(elems[k][0] != '[', "a batch split into a batch: %s", elems[k]);
            rpd_batch_free(elems, n_elems);
        }
        bool on_worker = rpd_line_wants_worker(p, len) && !rpd_session_locked(&core, &session);
        if (on_worker) {
            /* What the daemon's worker would do (conn.c start_job). */
            rpd_core wcore = core;
            wcore.worker = true;
            wcore.watch = NULL;
            wcore.store = rp_store_snapshot(core.store);
            FUZZ_CHECK(wcore.store, "out of memory");
            rpd_session wsession = session;
            wsession.watches = NULL;
            rp_jw_reset(&wout);
            /* A line holding a request of the event loop is only parsed
             * there and handed back (conn.c job_run): the loop's run below
             * is then its only run. */
            rpd_parsed kept;
            if (rpd_process_line_or_keep(&wcore, &wsession, p, len, &wout, &kept)) {
                rpd_parsed_free(&kept);
                on_worker = false;
            }
            rp_store_free(wcore.store);
            dump_store(core.store, &after);
            FUZZ_CHECK(before.len == after.len && memcmp(before.buf, after.buf, before.len) == 0,
                       "a worker's line changed the store: %.*s", (int)len, p);
        }
        switch (run_line(&core, &session, p, len, &out)) {
        case NOT_RUN:
            break;
        case ALL_FAILED:
            dump_store(core.store, &after);
            FUZZ_CHECK(before.len == after.len && memcmp(before.buf, after.buf, before.len) == 0,
                       "the store changed on a line whose every request failed: %.*s", (int)len, p);
            break;
        case MAY_CHANGE:
            before_current = false;
            break;
        }
        /* (A plan's reply holds its time, and may end at its timeout: the
         * same line need not give the same bytes twice.) */
        bool timed = (out.buf && memmem(out.buf, out.len, "\"stats\":{\"ms\":", 14)) ||
                     (wout.buf && memmem(wout.buf, wout.len, "\"stats\":{\"ms\":", 14));
        if (on_worker && !timed)
            FUZZ_CHECK(wout.len == out.len && memcmp(wout.buf, out.buf, out.len) == 0,
                       "worker and loop replies differ for %.*s:\n%.*s\n%.*s", (int)len, p,
                       (int)wout.len, wout.buf ? wout.buf : "", (int)out.len,
                       out.buf ? out.buf : "");
        p = nl ? nl + 1 : stop;
    }

    rp_jw_free(&out);
    rp_jw_free(&wout);
    rp_jw_free(&before);
    rp_jw_free(&after);
    rpd_core_free(&core);
    return 0;
}
