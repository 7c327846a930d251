/*
 * Allocation-failure injection over the request path (SQLite's approach).
 *
 * For each request kind the test first runs the request once on a fresh
 * store and counts the allocations it makes (K), cJSON's parse tree, the
 * store's work, the handlers' scratch arrays and the reply writer all
 * included.  Then, for every N in 1..K, it rebuilds the same store, makes
 * the N-th allocation fail, sends the request, and checks that
 *
 *   - the reply is one valid JSON-RPC line: either the -32603 "out of
 *     memory" error with the request's id, or, when the code survives that
 *     allocation failing (a tree it can do without), exactly the reply of
 *     the clean run;
 *   - the store is byte-for-byte what it was before (on an error) or what
 *     the clean run left (on a success), and replies queued earlier in the
 *     same output buffer are untouched;
 *   - sending the same request again, with allocation working, gives the
 *     clean run's reply and store: nothing half-done is left behind;
 *   - once the store is freed every block allocated is freed (counted by
 *     the wrappers in both builds; LeakSanitizer watches too in the
 *     sanitizer build).
 *
 * A second sweep makes every allocation from the N-th on fail ("persistent"),
 * as a heap that stays exhausted would: then the error reply itself may not
 * fit, and the writer may be left failed (the daemon then closes that
 * connection), but the store must still be unchanged and nothing may leak.
 *
 * The replies come from rpd_process_line, in process, with the cJSON hooks
 * pointed at the counting allocator (not the daemon's arena).  The cases
 * cover scene.create/put/remove, model.put, check, check.batch, the reply
 * writer (a reply of several KB; a mutation's reply into an output buffer
 * that is full or not yet allocated) and a batch.  AF_TRACE=1 in the
 * environment prints every reply that is not the clean one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "alloc_fail.h"
#include "codec/urdf.h"
#include "server/rpc.h"

/* ---- building request text ------------------------------------------------- */

/* A request line under construction (static storage: no allocation). */
typedef struct text {
    char buf[1 << 15];
    size_t len;
} text;

static void add(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof t->buf - t->len);
    t->len += (size_t)n;
}

/* Shape i of a grid of spheres and vertical capsules, about 1 m across,
 * shifted by (dx, dy, dz) so that puts can move shapes. */
static void add_shape(text *t, int i, double dx, double dy, double dz)
{
    double x = (i % 5) * 0.25 - 0.5 + dx, y = ((i / 5) % 4) * 0.25 - 0.4 + dy;
    double z = (i / 20) * 0.3 + dz;
    if (i % 2 == 0)
        add(t, "{\"sphere\":{\"center\":[%.3f,%.3f,%.3f],\"radius\":0.05}}", x, y, z);
    else
        add(t, "{\"capsule\":{\"a\":[%.3f,%.3f,%.3f],\"b\":[%.3f,%.3f,%.3f],\"radius\":0.03}}",
            x, y, z, x, y, z + 0.2);
}

/* {"<prefix>NN": shape, ...} for NN in [from, to). */
static void add_shapes(text *t, const char *prefix, int from, int to, double dx)
{
    add(t, "{");
    for (int i = from; i < to; i++) {
        add(t, "%s\"%s%02d\":", i > from ? "," : "", prefix, i);
        add_shape(t, i, dx, 0.01 * i, 0.0);
    }
    add(t, "}");
}

/* A model of n links over 3 joint frames and the base, with the first
 * n_pairs neighbouring links allowed to touch. */
static void add_model(text *t, const char *name, int n, int n_pairs)
{
    add(t, "\"model\":\"%s\",\"safety_margin\":0.02,\"links\":[", name);
    for (int i = 0; i < n; i++) {
        int frame = i % 4 - 1; /* -1 = base */
        add(t, "%s{\"id\":\"l%d\",", i ? "," : "", i);
        if (frame < 0)
            add(t, "\"frame\":null,\"shape\":");
        else
            add(t, "\"frame\":%d,\"shape\":", frame);
        add(t, "{\"capsule\":{\"a\":[0,0,%.2f],\"b\":[%.2f,0,%.2f],\"radius\":0.04}}}",
            0.1 * i, 0.05 * (i % 3), 0.1 * i + 0.12);
    }
    add(t, "],\"allowed_pairs\":[");
    for (int i = 0; i < n_pairs; i++)
        add(t, "%s[\"l%d\",\"l%d\"]", i ? "," : "", i, i + 1);
    add(t, "]");
}

/* Three joint-frame poses (and a base pose when `base`), varied by k. */
static void add_config(text *t, int k, bool base)
{
    add(t, "{\"frames\":[{\"translation\":[%.2f,0,0.1]},"
           "{\"translation\":[0,%.2f,0.2],\"rotation\":{\"w\":0.8,\"x\":0.6,\"y\":0,\"z\":0}},"
           "{\"matrix\":[[0,-1,0,%.2f],[1,0,0,0],[0,0,1,0.3]]}]",
        -0.3 + 0.1 * k, -0.2 + 0.05 * k, 0.1 * k);
    if (base)
        add(t, ",\"base\":{\"translation\":[0,0,%.2f]}", 0.01 * k);
    add(t, "}");
}

/* ---- the store before each request ------------------------------------------ */

typedef struct server {
    rpd_core core;
    rpd_session session;
    rp_jw out;
} server;

static text setup_lines[4];
static size_t n_setup_lines;

static void build_setup(void)
{
    text *t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"cell\",\"shapes\":");
    add_shapes(t, "s", 0, 40, 0.0);
    add(t, "}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"aux\",\"shapes\":");
    add_shapes(t, "a", 0, 3, 0.0);
    add(t, "}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"scene.create\","
           "\"params\":{\"scene\":\"zeta\"}}");
    t = &setup_lines[n_setup_lines++];
    add(t, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"model.put\",\"params\":{");
    add_model(t, "arm", 8, 3);
    add(t, "}}");
}

/* Sends one line, appending its reply to s->out. */
static void send_line(server *s, const char *line, size_t len)
{
    rpd_process_line(&s->core, &s->session, line, len, &s->out);
}

/* A fresh core holding scenes cell (40 shapes, tree not yet built), aux and
 * zeta, and model arm. */
static void state_open(server *s)
{
    memset(s, 0, sizeof *s);
    assert_true(rpd_core_init(&s->core, NULL));
    af_install_json_hooks(); /* after init, which may install the arena */
    rp_jw_init(&s->out);
    for (size_t i = 0; i < n_setup_lines; i++) {
        rp_jw_reset(&s->out);
        send_line(s, setup_lines[i].buf, setup_lines[i].len);
        assert_false(s->out.oom);
        assert_non_null(strstr(s->out.buf, "\"result\""));
    }
    rp_jw_reset(&s->out);
}

static void state_close(server *s)
{
    rp_jw_free(&s->out);
    rpd_core_free(&s->core);
}

/* ---- a dump of the store ---------------------------------------------------- */

typedef struct dump {
    char buf[1 << 16];
    size_t len;
} dump;

static void dump_add(dump *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void dump_add(dump *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->buf + d->len, sizeof d->buf - d->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof d->buf - d->len);
    d->len += (size_t)n;
}

static void dump_shape(dump *d, const rp_shape *sh)
{
    if (sh->kind == RP_SHAPE_SPHERE)
        dump_add(d, "sphere %a %a %a r %a", sh->sphere.center.x, sh->sphere.center.y,
                 sh->sphere.center.z, sh->sphere.radius);
    else
        dump_add(d, "capsule %a %a %a  %a %a %a r %a", sh->capsule.a.x, sh->capsule.a.y,
                 sh->capsule.a.z, sh->capsule.b.x, sh->capsule.b.y, sh->capsule.b.z,
                 sh->capsule.radius);
}

/* Everything a client can observe of the store, in storage order (so a
 * reordering counts as a change too), doubles in hex.  Memory accounting is
 * left out: a failed mutation may keep a larger array it grew. */
static void dump_store(const rp_store *st, dump *d)
{
    d->len = 0;
    d->buf[0] = '\0';
    dump_add(d, "shapes %llu\n", (unsigned long long)rp_store_shape_count(st));
    for (size_t i = 0; i < rp_store_scene_count(st); i++) {
        const rp_scene *sc = rp_store_scene_at(st, i);
        dump_add(d, "scene %s rev %llu n %zu\n", rp_scene_name(sc),
                 (unsigned long long)rp_scene_revision(sc), rp_scene_shape_count(sc));
        for (size_t k = 0; k < rp_scene_shape_count(sc); k++) {
            const char *id = rp_scene_id_at(sc, k);
            dump_add(d, "  %s found %d ", id, rp_scene_find(sc, id) == k);
            dump_shape(d, rp_scene_shape_at(sc, k));
            dump_add(d, "\n");
        }
    }
    for (size_t i = 0; i < rp_store_model_count(st); i++) {
        const rp_model *m = rp_store_model_at(st, i);
        dump_add(d, "model %s rev %llu links %zu frames %zu margin %a self %d\n",
                 rp_model_name(m), (unsigned long long)rp_model_revision(m),
                 rp_model_link_count(m), rp_model_frame_count(m), rp_model_safety_margin(m),
                 rp_model_self_collision(m));
        for (size_t k = 0; k < rp_model_link_count(m); k++) {
            const rp_link *l = rp_model_link_at(m, k);
            dump_add(d, "  %s frame %d ", l->id, l->frame);
            dump_shape(d, &l->shape);
            dump_add(d, "\n");
        }
        for (size_t k = 0; k < rp_model_allowed_count(m); k++) {
            size_t a, b;
            rp_model_allowed_at(m, k, &a, &b);
            dump_add(d, "  allowed %zu %zu\n", a, b);
        }
    }
}

static void assert_same_dump(const dump *got, const dump *want, const char *what,
                             const char *kind, unsigned long n)
{
    if (got->len != want->len || memcmp(got->buf, want->buf, got->len) != 0)
        fail_msg("%s, failing allocation %lu: the store is not %s\n--- got\n%s--- want\n%s",
                 kind, n, what, got->buf, want->buf);
}

/* ---- the cases --------------------------------------------------------------- */

typedef struct req_case {
    const char *kind;
    text line;
    /* Bytes of earlier replies already in the output buffer (a pipelining
     * client): 0 = one ping reply; PREFILL_NONE = an empty buffer (a new
     * connection: the reply's first byte allocates); PREFILL_TIGHT = enough
     * that the envelope of the reply fits and its end does not. */
    size_t prefill;
    bool batch;
    int batch_mutation; /* index of the one mutating request in a batch */
} req_case;

#define PREFILL_NONE ((size_t)-1)
#define PREFILL_TIGHT ((size_t)-2)

enum { N_CASES = 16 };
static req_case cases[N_CASES];
static size_t n_cases;

static req_case *new_case(const char *kind)
{
    assert_true(n_cases < N_CASES);
    req_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->batch_mutation = -1;
    return c;
}

static void build_cases(void)
{
    req_case *c = new_case("scene.create");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.create\","
                  "\"params\":{\"scene\":\"new\",\"shapes\":");
    add_shapes(&c->line, "n", 0, 30, 0.1);
    add(&c->line, "}}");

    /* 12 replacements and 12 new ids: the entry array and the id index
     * both grow. */
    c = new_case("scene.put");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"cell\",\"if_revision\":1,\"shapes\":{");
    for (int i = 0; i < 24; i++) {
        add(&c->line, "%s\"%s%02d\":", i ? "," : "", i < 12 ? "s" : "t", i);
        add_shape(&c->line, i, 0.02, 0.0, 0.5);
    }
    add(&c->line, "}}}");

    c = new_case("scene.put create");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"bay\",\"create\":true,\"shapes\":");
    add_shapes(&c->line, "b", 0, 20, -0.1);
    add(&c->line, "}}");

    c = new_case("scene.remove");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.remove\","
                  "\"params\":{\"scene\":\"cell\",\"if_revision\":1,\"ids\":[");
    for (int i = 0; i < 12; i++)
        add(&c->line, "%s\"s%02d\"", i ? "," : "", 3 * i);
    add(&c->line, ",\"missing\"]}}");

    c = new_case("model.put replace");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":{");
    add_model(&c->line, "arm", 10, 4);
    add(&c->line, "}}");

    c = new_case("model.put new");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"model.put\",\"params\":{");
    add_model(&c->line, "bot", 9, 2);
    add(&c->line, "}}");

    /* Report all with a wide margin: many violations (the array grows),
     * sorted; the scene's tree is built on the way. */
    c = new_case("check");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"check\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"all\",\"margin\":0.15,");
    text cfg = {.len = 0};
    add_config(&cfg, 2, true);
    add(&c->line, "%.*s}}", (int)(cfg.len - 2), cfg.buf + 1); /* the config's members */

    c = new_case("check.batch");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"check.batch\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"all\",\"margin\":0.1,"
                  "\"configurations\":[");
    for (int k = 0; k < 6; k++) {
        if (k)
            add(&c->line, ",");
        add_config(&c->line, k, k % 2 == 1);
    }
    add(&c->line, "]}}");

    /* The writer: a reply of a few KB, so the output buffer doubles several
     * times while it is written. */
    c = new_case("writer: scene.get");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.get\","
                  "\"params\":{\"scene\":\"cell\"}}");

    /* The writer after a mutation: earlier replies fill the output buffer
     * so that the envelope still fits but the result does not; prefill is
     * set from the clean reply's length (see run_case). */
    c = new_case("writer: scene.put into a full buffer");
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"aux\",\"shapes\":");
    add_shapes(&c->line, "a", 1, 5, 0.2);
    add(&c->line, "}}");
    c->prefill = PREFILL_TIGHT;

    /* A batch: a check, a mutation and a ping; the check's tree build and
     * result come after the put has been applied. */
    c = new_case("batch");
    c->batch = true;
    c->batch_mutation = 1;
    add(&c->line, "[{\"jsonrpc\":\"2.0\",\"id\":\"b-1\",\"method\":\"check\",\"params\":"
                  "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"closest\",");
    text cfg2 = {.len = 0};
    add_config(&cfg2, 1, false);
    add(&c->line, "%.*s}},", (int)(cfg2.len - 2), cfg2.buf + 1);
    add(&c->line, "{\"jsonrpc\":\"2.0\",\"id\":\"b-2\",\"method\":\"scene.put\","
                  "\"params\":{\"scene\":\"cell\",\"shapes\":");
    add_shapes(&c->line, "u", 0, 10, 0.3);
    add(&c->line, "}},{\"jsonrpc\":\"2.0\",\"id\":\"b-3\",\"method\":\"scene.get\","
                  "\"params\":{\"scene\":\"aux\"}}]");

    /* The same batch, and a mutation, as the first reply of a connection:
     * the '[' or '{' that starts the reply allocates the buffer. */
    req_case *b = new_case("batch into an empty buffer");
    *b = *c;
    b->kind = "batch into an empty buffer";
    b->prefill = PREFILL_NONE;
    c = new_case("writer: scene.create into an empty buffer");
    *c = cases[0];
    c->kind = "writer: scene.create into an empty buffer";
    c->prefill = PREFILL_NONE;
}

/* ---- checking replies ----------------------------------------------------------- */

/* True when `j` is the -32603 out-of-memory error object for request id
 * `id` (a string; NULL = null id). */
static bool is_oom_error(const cJSON *j, const char *id)
{
    if (!cJSON_IsObject(j) || cJSON_GetArraySize(j) != 3)
        return false;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "jsonrpc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
        return false;
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (id ? !(cJSON_IsString(jid) && strcmp(jid->valuestring, id) == 0) : !cJSON_IsNull(jid))
        return false;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    return cJSON_IsNumber(code) && code->valuedouble == RPD_INTERNAL_ERROR &&
           cJSON_IsString(msg) && strstr(msg->valuestring, "out of memory") != NULL;
}

/* Where a batch's element i came out. */
typedef enum outcome { SAME_AS_CLEAN, OOM_ERROR, WRITER_FAILED } outcome;

/* The reply `got` (one line) compared with the clean run's `want`:
 * identical, or the out-of-memory error for the request.  For a batch,
 * element by element, *mutation_failed telling whether the mutating
 * request got the error; or one out-of-memory line with id null for the
 * whole batch (*whole_batch). */
static void check_reply(const req_case *c, unsigned long n, bool parse_failed,
                        const char *got, size_t got_len, const char *want, size_t want_len,
                        outcome *result, bool *mutation_failed, bool *whole_batch)
{
    *mutation_failed = false;
    *whole_batch = false;
    if (got_len == want_len && memcmp(got, want, got_len) == 0) {
        *result = SAME_AS_CLEAN;
        return;
    }
    *result = OOM_ERROR;
    if (got_len == 0 || got[got_len - 1] != '\n' || memchr(got, '\n', got_len - 1))
        fail_msg("%s, failing allocation %lu: not one reply line: %.*s", c->kind, n,
                 (int)got_len, got);
    /* The whole line, nothing after the value (cJSON_ParseWithLength
     * alone would accept trailing bytes). */
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(got, got_len - 1, &end, false);
    if (j && end != got + got_len - 1) {
        cJSON_Delete(j);
        j = NULL;
    }
    if (getenv("AF_TRACE"))
        fprintf(stderr, "%s %lu: %.*s", c->kind, n, (int)got_len, got);
    if (!j)
        fail_msg("%s, failing allocation %lu: reply is not JSON: %.*s", c->kind, n,
                 (int)got_len, got);
    if (parse_failed) {
        /* cJSON could not build the tree: no id is known. */
        bool ok = is_oom_error(j, NULL);
        cJSON_Delete(j);
        if (!ok)
            fail_msg("%s, failing allocation %lu (in the parser): not the out-of-memory error "
                     "with id null: %.*s", c->kind, n, (int)got_len, got);
        *mutation_failed = true;
        return;
    }
    if (!c->batch) {
        bool ok = is_oom_error(j, "r-7");
        cJSON_Delete(j);
        if (!ok)
            fail_msg("%s, failing allocation %lu: neither the clean reply nor the "
                     "out-of-memory error: %.*s", c->kind, n, (int)got_len, got);
        *mutation_failed = true;
        return;
    }
    if (is_oom_error(j, NULL)) {
        cJSON_Delete(j);
        *whole_batch = true;
        return;
    }
    cJSON *w = cJSON_ParseWithLength(want, want_len);
    assert_non_null(w);
    bool ok = cJSON_IsArray(j) && cJSON_GetArraySize(j) == cJSON_GetArraySize(w);
    int i = 0;
    for (cJSON *g = j->child, *e = w->child; ok && g && e; g = g->next, e = e->next, i++) {
        if (cJSON_Compare(g, e, true))
            continue;
        const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "id");
        ok = is_oom_error(g, eid->valuestring);
        if (i == c->batch_mutation)
            *mutation_failed = true;
    }
    cJSON_Delete(w);
    cJSON_Delete(j);
    if (!ok)
        fail_msg("%s, failing allocation %lu: batch elements are neither the clean ones nor "
                 "out-of-memory errors: %.*s", c->kind, n, (int)got_len, got);
}

/* ---- the sweep ------------------------------------------------------------------- */

static const char ping_line[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}";
static const char pong_reply[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"pong\":true}}\n";

/* Puts `bytes` of earlier replies into the output buffer: a ping's reply,
 * then a filler line of the remaining length. */
static void prefill(server *s, size_t bytes)
{
    if (bytes == PREFILL_NONE) {
        rp_jw_free(&s->out); /* not even an allocation left from the setup */
        rp_jw_init(&s->out);
        return;
    }
    send_line(s, ping_line, sizeof ping_line - 1);
    if (bytes > s->out.len + 2) {
        size_t fill = bytes - s->out.len - 1;
        char pad[4096];
        assert_true(fill < sizeof pad);
        memset(pad, ' ', fill);
        rp_jw_raw(&s->out, pad, fill);
        rp_jw_raw(&s->out, "\n", 1);
    }
    assert_false(s->out.oom);
}

static unsigned long total_points;

typedef struct clean_run {
    char reply[1 << 16];
    size_t reply_len;
    dump before, after;
    unsigned long allocations;
} clean_run;

static clean_run clean;
static dump before, after;
static char earlier[8192];

/* Runs case c once with allocation working: its reply, the store before and
 * after, and the number of allocations it makes. */
static void run_clean(req_case *c, size_t fill)
{
    server s;
    long live0 = af_live();
    state_open(&s);
    prefill(&s, fill);
    size_t mark = s.out.len;
    dump_store(s.core.store, &clean.before);
    af_arm(0, false);
    send_line(&s, c->line.buf, c->line.len);
    clean.allocations = af_calls();
    af_disarm();
    assert_false(s.out.oom);
    clean.reply_len = s.out.len - mark;
    assert_true(clean.reply_len < sizeof clean.reply);
    memcpy(clean.reply, s.out.buf + mark, clean.reply_len);
    if (strstr(clean.reply, "\"error\""))
        fail_msg("%s: the clean run fails: %.*s", c->kind, (int)clean.reply_len, clean.reply);
    dump_store(s.core.store, &clean.after);
    state_close(&s);
    assert_int_equal(af_live(), live0);
}

/* One request with the n-th allocation failing (and every later one when
 * `persistent`); checks the reply, the store, recovery and leaks. */
static void run_failing(req_case *c, size_t fill, unsigned long n, bool persistent,
                        unsigned long *errors, unsigned long *survived)
{
    server s;
    long live0 = af_live();
    state_open(&s);
    prefill(&s, fill);
    size_t mark = s.out.len;
    assert_true(mark < sizeof earlier);
    if (mark)
        memcpy(earlier, s.out.buf, mark);
    dump_store(s.core.store, &before);
    assert_true(before.len == clean.before.len &&
                memcmp(before.buf, clean.before.buf, before.len) == 0);

    af_arm(n, persistent);
    send_line(&s, c->line.buf, c->line.len);
    unsigned long failed = af_failures();
    bool parse_failed = af_json_failures() > 0;
    af_disarm();
    if (failed == 0)
        fail_msg("%s: allocation %lu was never made", c->kind, n);

    /* Earlier replies stay as they were. */
    assert_true(s.out.len >= mark);
    if (mark && memcmp(s.out.buf, earlier, mark) != 0)
        fail_msg("%s, failing allocation %lu: earlier replies in the buffer changed",
                 c->kind, n);
    dump_store(s.core.store, &after);
    outcome result;
    bool mutation_failed = false, whole_batch = false;
    if (persistent && s.out.oom) {
        /* Not even the error fitted: the server sends nothing more and
         * closes this connection (conn.c), so what the buffer holds after
         * the mark does not matter. */
        result = WRITER_FAILED;
    } else {
        assert_false(s.out.oom);
        check_reply(c, n, parse_failed, s.out.buf + mark, s.out.len - mark, clean.reply,
                    clean.reply_len, &result, &mutation_failed, &whole_batch);
    }
    if (result == SAME_AS_CLEAN) {
        assert_same_dump(&after, &clean.after, "what the clean run left", c->kind, n);
        ++*survived;
    } else if (whole_batch || result == WRITER_FAILED) {
        /* The replies were lost; a batch's mutation may have run before. */
        bool as_before = after.len == before.len && memcmp(after.buf, before.buf, after.len) == 0;
        if (!as_before)
            assert_same_dump(&after, &clean.after, "as before or as after the clean run",
                             c->kind, n);
        ++*errors;
    } else {
        if (!c->batch || mutation_failed)
            assert_same_dump(&after, &before, "unchanged", c->kind, n);
        else
            assert_same_dump(&after, &clean.after, "what the clean run left", c->kind, n);
        ++*errors;
    }

    /* The same session goes on: a ping answers, and when the request
     * failed, sending it again gives the clean outcome. */
    rp_jw_free(&s.out);
    rp_jw_init(&s.out);
    send_line(&s, ping_line, sizeof ping_line - 1);
    assert_string_equal(s.out.buf, pong_reply);
    if (result != SAME_AS_CLEAN && !c->batch) {
        rp_jw_reset(&s.out);
        prefill(&s, fill);
        send_line(&s, c->line.buf, c->line.len);
        assert_false(s.out.oom);
        if (s.out.len - mark != clean.reply_len ||
            memcmp(s.out.buf + mark, clean.reply, clean.reply_len) != 0)
            fail_msg("%s, failing allocation %lu: the retry's reply differs: %.*s", c->kind,
                     n, (int)(s.out.len - mark), s.out.buf + mark);
        dump_store(s.core.store, &after);
        assert_same_dump(&after, &clean.after, "what the clean run left, after a retry",
                         c->kind, n);
    }
    state_close(&s);
    if (af_live() != live0)
        fail_msg("%s, failing allocation %lu: %ld blocks leaked", c->kind, n,
                 af_live() - live0);
}

static void sweep(bool persistent)
{
    unsigned long points = 0;
    for (size_t i = 0; i < n_cases; i++) {
        req_case *c = &cases[i];
        size_t fill = c->prefill;
        if (c->prefill == PREFILL_TIGHT) {
            /* Fill the writer's first 256-byte buffer so that the envelope
             * of the reply fits and its end does not. */
            run_clean(c, 0);
            size_t ping_len = sizeof pong_reply - 1;
            assert_true(clean.reply_len < 200);
            fill = ping_len + (256 - ping_len) - clean.reply_len + 8;
        }
        run_clean(c, fill);
        unsigned long errors = 0, survived = 0;
        for (unsigned long n = 1; n <= clean.allocations; n++)
            run_failing(c, fill, n, persistent, &errors, &survived);
        print_message("%-40s %4lu allocations: %4lu errors, %3lu survived%s\n", c->kind,
                      clean.allocations, errors, survived, persistent ? " (persistent)" : "");
        points += clean.allocations;
    }
    print_message("%lu allocation-failure points%s\n", points,
                  persistent ? " (persistent)" : "");
    total_points += points;
}

static void every_allocation_failing_once_gives_an_error_and_no_change(void **state)
{
    (void)state;
    sweep(false);
}

static void every_allocation_failing_from_n_on_changes_nothing(void **state)
{
    (void)state;
    sweep(true);
}

/* ---- URDF import ------------------------------------------------------------ */

/* Every element the reader builds something from, and an SRDF. */
static const char urdf_doc[] =
    "<?xml version='1.0'?><robot name='r'>"
    "<link name='base'><visual><geometry><mesh filename='m'/></geometry></visual>"
    "<collision><origin xyz='0 0 0.1' rpy='0 0.2 0'/><geometry><box size='0.4 0.2 0.05'/>"
    "</geometry></collision><collision><geometry><sphere radius='0.1'/></geometry></collision>"
    "</link><link name='arm'><collision><geometry><cylinder radius='0.05' length='0.3'/>"
    "</geometry></collision></link><link name='finger'><collision><geometry>"
    "<capsule radius='0.01' length='0.02'/></geometry></collision></link>"
    "<joint name='j1' type='revolute'><parent link='base'/><child link='arm'/>"
    "<origin xyz='0 0 0.2'/><axis xyz='0 1 0'/><limit lower='-1' upper='1'/></joint>"
    "<joint name='j2' type='prismatic'><parent link='arm'/><child link='finger'/>"
    "<limit upper='0.04'/><mimic joint='j1' multiplier='0.1'/></joint></robot>";
static const char srdf_doc[] =
    "<robot name='r'><group name='g'/><disable_collisions link1='base' link2='finger'/></robot>";

/* rp_urdf_parse (expat's allocations included: urdf.c gives expat the
 * wrapped functions) with the n-th allocation failing, once or from then
 * on, for every n: RP_URDF_NOMEM, or the clean run's def when the parse
 * survives the failure; nothing leaks either way. */
static void urdf_parse_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    rp_urdf_opts opts = {.allow_adjacent = true};
    rp_urdf *u = NULL;
    rp_urdf_error err;
    long live0 = af_live();
    af_arm(0, false);
    assert_int_equal(rp_urdf_parse(urdf_doc, strlen(urdf_doc), srdf_doc, strlen(srdf_doc), &opts,
                                   &u, &err),
                     RP_URDF_OK);
    unsigned long k = af_calls();
    af_disarm();
    rp_model_def want = *rp_urdf_def(u);
    assert_int_equal(want.n_links, 7);
    rp_urdf_free(u);
    for (int persistent = 0; persistent <= 1; persistent++) {
        unsigned long errors = 0;
        for (unsigned long n = 1; n <= k; n++) {
            u = NULL;
            af_arm(n, persistent);
            rp_urdf_status st = rp_urdf_parse(urdf_doc, strlen(urdf_doc), srdf_doc,
                                              strlen(srdf_doc), &opts, &u, &err);
            af_disarm();
            if (st == RP_URDF_OK) {
                const rp_model_def *d = rp_urdf_def(u);
                assert_true(d->n_links == want.n_links && d->n_joints == want.n_joints &&
                            d->n_link_names == want.n_link_names &&
                            d->n_allowed == want.n_allowed);
                rp_urdf_free(u);
            } else {
                if (st != RP_URDF_NOMEM)
                    fail_msg("allocation %lu failing: status %d, %s", n, (int)st, err.reason);
                assert_null(u);
                assert_string_equal(err.reason, "out of memory");
                errors++;
            }
            if (af_live() != live0)
                fail_msg("allocation %lu failing%s: %ld blocks leaked", n,
                         persistent ? " (persistent)" : "", af_live() - live0);
        }
        print_message("%-40s %4lu allocations: %4lu errors%s\n", "rp_urdf_parse", k, errors,
                      persistent ? " (persistent)" : "");
        total_points += k;
    }
}

/* The wrappers themselves: a test that the harness can fail. */
static void the_nth_allocation_fails_and_only_that_one(void **state)
{
    (void)state;
    af_arm(2, false);
    void *a = malloc(16), *b = malloc(16), *c = calloc(1, 16);
    assert_int_equal(af_calls(), 3);
    af_disarm();
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    free(a);
    free(c);
    af_arm(1, true);
    void *d = realloc(NULL, 8), *e = malloc(8);
    af_disarm();
    assert_null(d);
    assert_null(e);
    assert_int_equal(af_failures(), 2);
}

static int group_setup(void **state)
{
    (void)state;
    build_setup();
    build_cases();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    print_message("%lu allocation-failure points in all\n", total_points);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_nth_allocation_fails_and_only_that_one),
        cmocka_unit_test(urdf_parse_fails_cleanly_at_every_allocation),
        cmocka_unit_test(every_allocation_failing_once_gives_an_error_and_no_change),
        cmocka_unit_test(every_allocation_failing_from_n_on_changes_nothing),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
