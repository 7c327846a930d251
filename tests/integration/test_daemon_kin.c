/* SPDX-License-Identifier: MIT */
/*
 * Daemon tests for kinematic models: the real reposed over its real sockets.
 *
 * Usage: test_daemon_kin PATH-TO-REPOSED
 *
 * Each test starts its own daemon (tests/integration/harness.h), so tests
 * are independent and may use special flags.  Helpers shared with the
 * other daemon test programs are in daemon_util.h.
 *
 * What is covered, all through the protocol:
 *   - tests/data/arm7.urdf + arm7.srdf imported with model.put; checks with
 *     `joints` as an array, as an object (defaults fill the rest) and in
 *     check.batch agree field by field, distances bit for bit, with each
 *     other and with the JSON kinematic form built from model.get's
 *     joint_definitions and shapes; and with the same robot built as a
 *     frame-indexed model (one frame per link, frames = model.fk's link
 *     poses).  That last twin is equal up to rounding only: model.fk writes
 *     rotations as quaternions, and a quaternion turned back into a matrix
 *     is not the daemon's own rotation matrix to the last bit (about 1e-16
 *     apart), so its distances are compared to 1e-12 and everything else
 *     exactly.
 *   - URDF refusals (malformed XML, unknown links, cycles, two roots,
 *     non-finite numbers, reversed limits, meshes, floating joints, SRDF
 *     naming unknown links, entities), each with its code, data.path and a
 *     word of the reason; the connection goes on and model.list is
 *     unchanged.  A 1 MB URDF is accepted, one over max_model_links gets
 *     -32004.
 *   - JSON kinematic refusals, joint limits in results, allowed scene pairs
 *     (in the model and per request), attached shapes and their refusals,
 *     model.fk against poses computed by hand, check.motion discrete and
 *     certified against an analytically computed contact, motion refusals
 *     and the work limit, frame-indexed models given joints.
 *   - joints_f64 / path_f64 (binary joint arrays): random configurations
 *     of arm7, some in collision, answer check (with and without group),
 *     check.batch (both, each report), check.motion and model.fk with the
 *     same reply bytes as the JSON joints; each refusal at its path; rows
 *     limited and priced as JSON rows, a 64 KiB line on a worker.
 *   - Bad input of every kind against the new methods (wrong types, huge
 *     numbers, NaN-like strings, duplicate keys, empty arrays, deep
 *     nesting, 0-dof models, models with fixed joints only): a -32602 with
 *     a path, or a correct result, and the daemon stays up.
 *
 * Shape ids of a URDF model are "LINK#k".  The twins built here from
 * model.get rename them "LINK:k" (see map_ids), and results are compared
 * after the same mapping: the twins must not depend on how the URDF import
 * spells its ids.
 *
 * No test asserts a duration: every wait is a generous guard against hangs.
 * Under REPOSE_DAEMON_WRAPPER (valgrind) the workloads are smaller.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "codec/codec.h"

#include "daemon_util.h"
#include "harness.h"

#ifndef REPOSE_TEST_DATA
#error "REPOSE_TEST_DATA must name tests/data"
#endif

/* ---- requests ----------------------------------------------------------------------------- */

static int next_id = 1;

/* Sends method with params given as JSON text and returns the parsed reply
 * (the caller deletes it).  The id is checked. */
static cJSON *rpct(rh_conn *c, const char *method, const char *params)
{
    textbuf t = {0};
    int id = next_id++;
    tb_printf(&t, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"", id, method);
    if (params)
        tb_printf(&t, ",\"params\":%s", params);
    tb_printf(&t, "}");
    cJSON *r = call_json(c, t.p);
    free(t.p);
    const cJSON *rid = at(r, "id");
    if (!cJSON_IsNull(rid) && (!cJSON_IsNumber(rid) || rid->valueint != id)) {
        char *s = show(r);
        fail_msg("reply to %s has the wrong id: %.300s", method, s);
    }
    return r;
}

static cJSON *rpcf(rh_conn *c, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cJSON *rpcf(rh_conn *c, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    char *p = malloc((size_t)n + 1);
    assert_non_null(p);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cJSON *r = rpct(c, method, p);
    free(p);
    return r;
}

/* Prints a tree as JSON with every number as %.17g, so that it parses
 * back to the same double (cJSON_Print tries 15 digits first and accepts
 * them when they come back within DBL_EPSILON, which loses the last bit). */
static void print_exact(textbuf *t, const cJSON *j)
{
    switch (j->type & 0xFF) {
    case cJSON_NULL:
        tb_printf(t, "null");
        break;
    case cJSON_True:
        tb_printf(t, "true");
        break;
    case cJSON_False:
        tb_printf(t, "false");
        break;
    case cJSON_Number:
        tb_printf(t, "%.17g", j->valuedouble);
        break;
    case cJSON_String:
    case cJSON_Raw: {
        tb_printf(t, "\"");
        for (const unsigned char *p = (const unsigned char *)j->valuestring; *p; p++) {
            if (*p == '"' || *p == '\\')
                tb_printf(t, "\\%c", *p);
            else if (*p < 0x20)
                tb_printf(t, "\\u%04x", *p);
            else
                tb_printf(t, "%c", *p);
        }
        tb_printf(t, "\"");
        break;
    }
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = (j->type & 0xFF) == cJSON_Object;
        tb_printf(t, obj ? "{" : "[");
        for (const cJSON *c = j->child; c; c = c->next) {
            if (obj) {
                cJSON key = {.type = cJSON_String, .valuestring = c->string};
                print_exact(t, &key);
                tb_printf(t, ":");
            }
            print_exact(t, c);
            if (c->next)
                tb_printf(t, ",");
        }
        tb_printf(t, obj ? "}" : "]");
        break;
    }
    default:
        fail_msg("cannot print JSON type %d", j->type);
    }
}

/* The same with a tree for params (deleted here). */
static cJSON *rpcj(rh_conn *c, const char *method, cJSON *params)
{
    textbuf t = {0};
    print_exact(&t, params);
    cJSON_Delete(params);
    cJSON *r = rpct(c, method, t.p);
    free(t.p);
    return r;
}

/* The result member of a reply; fails the test on an error reply. */
static const cJSON *result_of(const cJSON *reply, const char *what)
{
    const cJSON *res = at(reply, "result");
    if (!res) {
        char *s = show(reply);
        fail_msg("%s: want a result, got %.600s", what, s);
    }
    return res;
}

/* Asserts an error reply with `code`, `path` (exact, or NULL for no
 * check) and a reason containing `word` (or NULL); deletes the reply. */
static void expect_error_word(cJSON *reply, int code, const char *path, const char *word,
                              const char *what)
{
    char *s = show(reply);
    const cJSON *e = at(reply, "error");
    if (!e || !cJSON_IsNumber(at(e, "code")) || at(e, "code")->valueint != code)
        fail_msg("%s: want error %d, got %.600s", what, code, s);
    if (path) {
        const cJSON *p = at(e, "data.path");
        if (!cJSON_IsString(p) || strcmp(p->valuestring, path) != 0)
            fail_msg("%s: want data.path %s, got %.600s", what, path, s);
    }
    if (word) {
        const cJSON *r = at(e, code == -32602 ? "data.reason" : "message");
        if (!cJSON_IsString(r) || !strstr(r->valuestring, word))
            fail_msg("%s: want a reason with \"%s\", got %.600s", what, word, s);
    }
    if (code == -32602) {
        /* The message says the same as path and reason. */
        const char *m = str_at(e, "message");
        if (!strstr(m, str_at(e, "data.path")) || !strstr(m, str_at(e, "data.reason")))
            fail_msg("%s: message does not carry path and reason: %.600s", what, s);
    }
    free(s);
    cJSON_Delete(reply);
}

static void expect_ok(cJSON *reply, const char *what)
{
    result_of(reply, what);
    cJSON_Delete(reply);
}

/* model.list's result as text. */
static char *model_list(rh_conn *c)
{
    cJSON *r = rpct(c, "model.list", "{}");
    char *s = show(result_of(r, "model.list"));
    cJSON_Delete(r);
    return s;
}

/* After a refusal: the connection answers and model.list is as before. */
static void still_same(rh_conn *c, const char *list_before, const char *what)
{
    expect_pong(c);
    char *now = model_list(c);
    if (strcmp(now, list_before) != 0)
        fail_msg("%s: model.list changed:\n  before %s\n  after  %s", what, list_before, now);
    free(now);
}

/* A whole file (tests/data) as a string. */
static char *read_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", REPOSE_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    textbuf t = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        tb_printf(&t, "%.*s", (int)n, buf);
    fclose(f);
    return t.p;
}

/* model.put {model, urdf, srdf?} plus more params as JSON text members
 * (`extra` is "" or starts with ","). */
static cJSON *put_urdf(rh_conn *c, const char *model, const char *urdf, const char *srdf,
                       const char *extra)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "model", model);
    cJSON_AddStringToObject(p, "urdf", urdf);
    if (srdf)
        cJSON_AddStringToObject(p, "srdf", srdf);
    textbuf text = {0};
    print_exact(&text, p);
    cJSON_Delete(p);
    textbuf t = {0};
    tb_printf(&t, "%.*s%s}", (int)text.len - 1, text.p, extra ? extra : "");
    free(text.p);
    cJSON *r = rpct(c, "model.put", t.p);
    free(t.p);
    return r;
}

/* Replaces '#' by ':' in every string and key of the tree: URDF shape ids
 * ("LINK#k") renamed for the twins. */
static void map_ids(cJSON *j)
{
    for (; j; j = j->next) {
        if (j->string)
            for (char *p = j->string; *p; p++)
                if (*p == '#')
                    *p = ':';
        if (cJSON_IsString(j))
            for (char *p = j->valuestring; *p; p++)
                if (*p == '#')
                    *p = ':';
        map_ids(j->child);
    }
}

static const char *mapped(const char *id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", id);
    for (char *p = buf; *p; p++)
        if (*p == '#')
            *p = ':';
    return buf;
}

/* Equal as json_same, except that numbers may differ by `tol` (relative
 * above 1) and members of a named `skip` are not looked at. */
static bool json_close(const cJSON *a, const cJSON *b, double tol, const char *const *skip)
{
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        return fabs(a->valuedouble - b->valuedouble) <= tol * fmax(1.0, fabs(a->valuedouble));
    case cJSON_String:
        return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        bool obj = (a->type & 0xFF) == cJSON_Object;
        for (;;) {
            if (obj && skip) {
                for (bool again = true; again;) {
                    again = false;
                    for (const char *const *s = skip; *s; s++) {
                        if (x && strcmp(x->string, *s) == 0) {
                            x = x->next;
                            again = true;
                        }
                        if (y && strcmp(y->string, *s) == 0) {
                            y = y->next;
                            again = true;
                        }
                    }
                }
            }
            if (!x || !y)
                break;
            if (obj && strcmp(x->string, y->string) != 0)
                return false;
            if (!json_close(x, y, tol, skip))
                return false;
            x = x->next;
            y = y->next;
        }
        return x == NULL && y == NULL;
    }
    default:
        return true;
    }
}

/* Writes where a and b first differ (a dotted path) into buf. */
static bool first_diff(const cJSON *a, const cJSON *b, char *buf, size_t cap)
{
    if ((a->type & 0xFF) != (b->type & 0xFF) || !json_same(a, b)) {
        if ((a->type & 0xFF) == (b->type & 0xFF) &&
            ((a->type & 0xFF) == cJSON_Array || (a->type & 0xFF) == cJSON_Object)) {
            const cJSON *x = a->child, *y = b->child;
            for (int i = 0; x && y; x = x->next, y = y->next, i++) {
                size_t n = strlen(buf);
                if (x->string)
                    snprintf(buf + n, cap - n, ".%s", x->string);
                else
                    snprintf(buf + n, cap - n, "[%d]", i);
                if ((x->string && y->string && strcmp(x->string, y->string) != 0) ||
                    first_diff(x, y, buf, cap))
                    return true;
                buf[n] = '\0';
            }
            size_t n = strlen(buf);
            snprintf(buf + n, cap - n, " (lengths differ)");
        }
        return true;
    }
    return false;
}

static void assert_same(const cJSON *a, const cJSON *b, const char *what, int k)
{
    if (!json_same(a, b)) {
        char *x = show(a), *y = show(b), where[512] = "";
        first_diff(a, b, where, sizeof where);
        fail_msg("%s (configuration %d) differ at %s:\n  %.1500s\n  %.1500s", what, k, where, x, y);
    }
}

/* ---- small geometry for expectations ------------------------------------------------------- */

typedef struct quat {
    double w, x, y, z;
} quat;

static quat qmul(quat a, quat b)
{
    quat r = {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
              a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
              a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
              a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
    return r;
}

static quat qaxis(double ax, double ay, double az, double angle)
{
    double s = sin(angle / 2);
    quat q = {cos(angle / 2), ax * s, ay * s, az * s};
    return q;
}

static rp_vec3 qrot(quat q, rp_vec3 v)
{
    quat p = {0, v.x, v.y, v.z}, c = {q.w, -q.x, -q.y, -q.z};
    quat r = qmul(qmul(q, p), c);
    rp_vec3 o = {r.x, r.y, r.z};
    return o;
}

/* Asserts that a pose of model.fk is (t, q) within 1e-14 (q up to sign;
 * the daemon writes w >= 0). */
static void expect_pose(const cJSON *pose, rp_vec3 t, quat q, const char *what)
{
    const cJSON *tr = at(pose, "translation");
    assert_non_null(tr);
    double got[3] = {cJSON_GetArrayItem(tr, 0)->valuedouble, cJSON_GetArrayItem(tr, 1)->valuedouble,
                     cJSON_GetArrayItem(tr, 2)->valuedouble};
    double want[3] = {t.x, t.y, t.z};
    for (int i = 0; i < 3; i++)
        if (fabs(got[i] - want[i]) > 1e-14)
            fail_msg("%s: translation[%d] %.17g, want %.17g", what, i, got[i], want[i]);
    if (q.w < 0) {
        q.w = -q.w;
        q.x = -q.x;
        q.y = -q.y;
        q.z = -q.z;
    }
    double gq[4] = {num_at(pose, "rotation.w"), num_at(pose, "rotation.x"),
                    num_at(pose, "rotation.y"), num_at(pose, "rotation.z")};
    double wq[4] = {q.w, q.x, q.y, q.z};
    assert_true(gq[0] >= 0);
    for (int i = 0; i < 4; i++)
        if (fabs(gq[i] - wq[i]) > 1e-14)
            fail_msg("%s: rotation[%d] %.17g, want %.17g", what, i, gq[i], wq[i]);
}

/* ---- the planar arm of most tests ---------------------------------------------------------- */

/* Links base, l1, l2, tool; j1 about z at the base, j2 about z 1 m out;
 * a fixed tool mount 1 m further, turned 90 degrees about z.  Shapes:
 * "bb" a 0.2 sphere on the base, "upper" and "fore" 1 m capsules of radius
 * 0.05 along each link's x axis. */
static const char planar_joints[] =
    "[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\",\"child\":\"l1\","
    "\"axis\":[0,0,1],\"limits\":{\"lower\":-3,\"upper\":3}},"
    "{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"l1\",\"child\":\"l2\","
    "\"origin\":{\"xyz\":[1,0,0]},\"axis\":[0,0,1],\"limits\":{\"lower\":-2,\"upper\":2}},"
    "{\"name\":\"mount\",\"type\":\"fixed\",\"parent\":\"l2\",\"child\":\"tool\","
    "\"origin\":{\"xyz\":[1,0,0],\"rpy\":[0,0,1.5707963267948966]}}]";

static const char planar_links[] =
    "[{\"id\":\"bb\",\"link\":\"base\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":0.2}}},"
    "{\"id\":\"upper\",\"link\":\"l1\",\"shape\":{\"capsule\":{\"a\":[0,0,0],\"b\":[1,0,0],"
    "\"radius\":0.05}}},"
    "{\"id\":\"fore\",\"link\":\"l2\",\"shape\":{\"capsule\":{\"a\":[0,0,0],\"b\":[1,0,0],"
    "\"radius\":0.05}}}]";

/* Puts the planar arm as `name` with more members (`extra`, "" or ",..."). */
static void put_planar(rh_conn *c, const char *name, const char *extra)
{
    expect_ok(rpcf(c, "model.put",
                   "{\"model\":\"%s\",\"joints\":%s,\"links\":%s,"
                   "\"allowed_pairs\":[[\"base\",\"l1\"],[\"l1\",\"l2\"]]%s}",
                   name, planar_joints, planar_links, extra),
              "model.put planar");
}

/* ---- URDF import against its twins ---------------------------------------------------------- */

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* Union-find over link indices (links joined by fixed joints). */
static size_t uf_find(size_t *parent, size_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static size_t name_index(const cJSON *names, const char *name)
{
    size_t i = 0;
    for (const cJSON *n = names->child; n; n = n->next, i++)
        if (strcmp(n->valuestring, name) == 0)
            return i;
    fail_msg("link %s not in model.get's links", name);
    return SIZE_MAX;
}

static void urdf_matches_link_by_link_and_json_twin(void **state)
{
    (void)state;
    int configs = rh_wrapped() ? 16 : 160;
    char *urdf = read_data("arm7.urdf"), *srdf = read_data("arm7.srdf");
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);

    /* The finger's default comes from default_positions; joint4's is 0
     * clamped into [-3.0718, -0.0698]. */
    expect_ok(
        put_urdf(c, "arm", urdf, srdf, ",\"default_positions\":{\"arm7_finger_joint1\":0.03}"),
        "model.put urdf");
    cJSON *gr = rpct(c, "model.get", "{\"model\":\"arm\"}");
    const cJSON *g = result_of(gr, "model.get");
    assert_true(cJSON_IsTrue(at(g, "kinematic")));
    assert_string_equal(str_at(g, "root"), "arm7_link0");
    const cJSON *jnames = at(g, "joints"), *lnames = at(g, "links"), *shapes = at(g, "shapes");
    const cJSON *limits = at(g, "limits"), *defaults = at(g, "default_positions");
    int dof = cJSON_GetArraySize(jnames), nl = cJSON_GetArraySize(lnames);
    assert_int_equal(dof, 8);
    assert_int_equal(nl, 12);
    assert_int_equal(cJSON_GetArraySize(shapes), 57);
    assert_true(num_at(defaults, "arm7_finger_joint1") == 0.03);
    assert_true(num_at(defaults, "arm7_joint4") == -0.0698);
    assert_true(num_at(defaults, "arm7_joint1") == 0.0);

    /* The JSON kinematic twin: joint_definitions as joints, shapes as links. */
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm_json");
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(at(g, "joint_definitions"), true));
        cJSON *ls = cJSON_Duplicate(shapes, true);
        map_ids(ls);
        cJSON_AddItemToObject(p, "links", ls);
        cJSON_AddItemToObject(p, "allowed_pairs", cJSON_Duplicate(at(g, "allowed_pairs"), true));
        cJSON_AddItemToObject(p, "default_positions", cJSON_Duplicate(defaults, true));
        /* What the SRDF adds, in model.get's form, which the JSON form takes. */
        static const char *const srdf_keys[] = {"groups", "states", "end_effectors",
                                                "passive_joints"};
        for (size_t k = 0; k < 4; k++)
            if (at(g, srdf_keys[k]))
                cJSON_AddItemToObject(p, srdf_keys[k], cJSON_Duplicate(at(g, srdf_keys[k]), true));
        assert_non_null(at(g, "groups"));
        assert_non_null(at(g, "states"));
        expect_ok(rpcj(c, "model.put", p), "model.put json twin");
        /* model.get of the twin says the same, but for the name and ids. */
        cJSON *g2r = rpct(c, "model.get", "{\"model\":\"arm_json\"}");
        cJSON *g2 = cJSON_Duplicate(result_of(g2r, "model.get twin"), true);
        cJSON *g1 = cJSON_Duplicate(g, true);
        map_ids(g1);
        cJSON_ReplaceItemInObject(g1, "model", cJSON_CreateString("arm_json"));
        cJSON_ReplaceItemInObject(g1, "revision", cJSON_Duplicate(at(g2, "revision"), true));
        assert_same(g1, g2, "model.get of the URDF model and of its JSON twin", -1);
        cJSON_Delete(g1);
        cJSON_Delete(g2);
        cJSON_Delete(g2r);
    }

    /* The frame-indexed twin: link i on frame i, its shapes as given in
     * the link frame; allowed: every shape pair of an allowed link pair or
     * of two links joined (through fixed joints) into one body. */
    {
        size_t *uf = malloc((size_t)nl * sizeof *uf);
        for (int i = 0; i < nl; i++)
            uf[i] = (size_t)i;
        for (const cJSON *j = at(g, "joint_definitions")->child; j; j = j->next)
            if (strcmp(str_at(j, "type"), "fixed") == 0)
                uf[uf_find(uf, name_index(lnames, str_at(j, "child")))] =
                    uf_find(uf, name_index(lnames, str_at(j, "parent")));
        bool *allowed = calloc((size_t)nl * (size_t)nl, sizeof *allowed);
        for (const cJSON *pr = at(g, "allowed_pairs")->child; pr; pr = pr->next) {
            size_t a = name_index(lnames, cJSON_GetArrayItem(pr, 0)->valuestring);
            size_t b = name_index(lnames, cJSON_GetArrayItem(pr, 1)->valuestring);
            allowed[a * (size_t)nl + b] = allowed[b * (size_t)nl + a] = true;
        }
        cJSON *p = cJSON_CreateObject(), *links = cJSON_CreateArray(), *pairs = cJSON_CreateArray();
        cJSON_AddStringToObject(p, "model", "arm_frames");
        char b1[300], b2[300];
        for (const cJSON *s = shapes->child; s; s = s->next) {
            cJSON *l = cJSON_CreateObject();
            cJSON_AddStringToObject(l, "id", mapped(str_at(s, "id"), b1, sizeof b1));
            cJSON_AddNumberToObject(l, "frame", (double)name_index(lnames, str_at(s, "link")));
            cJSON_AddItemToObject(l, "shape", cJSON_Duplicate(at(s, "shape"), true));
            cJSON_AddItemToArray(links, l);
            size_t la = name_index(lnames, str_at(s, "link"));
            for (const cJSON *t = s->next; t; t = t->next) {
                size_t lb = name_index(lnames, str_at(t, "link"));
                if (la == lb ||
                    !(allowed[la * (size_t)nl + lb] || uf_find(uf, la) == uf_find(uf, lb)))
                    continue;
                cJSON *pr = cJSON_CreateArray();
                cJSON_AddItemToArray(pr,
                                     cJSON_CreateString(mapped(str_at(s, "id"), b1, sizeof b1)));
                cJSON_AddItemToArray(pr,
                                     cJSON_CreateString(mapped(str_at(t, "id"), b2, sizeof b2)));
                cJSON_AddItemToArray(pairs, pr);
            }
        }
        cJSON_AddItemToObject(p, "links", links);
        cJSON_AddItemToObject(p, "allowed_pairs", pairs);
        expect_ok(rpcj(c, "model.put", p), "model.put frame twin");
        free(uf);
        free(allowed);
    }

    /* A scene around the arm: spheres and capsules in front of it. */
    uint64_t seed = 7;
    {
        textbuf t = {0};
        tb_printf(&t, "{\"scene\":\"cell\",\"shapes\":{");
        for (int i = 0; i < 60; i++) {
            double x = urand(&seed) * 1.6 - 0.8, y = urand(&seed) * 1.6 - 0.8,
                   z = urand(&seed) * 1.2, r = 0.02 + urand(&seed) * 0.06;
            if (i % 3)
                tb_printf(&t,
                          "%s\"o%d\":{\"sphere\":{\"center\":[%.17g,%.17g,%.17g],"
                          "\"radius\":%.17g}}",
                          i ? "," : "", i, x, y, z, r);
            else
                tb_printf(&t,
                          "%s\"o%d\":{\"capsule\":{\"a\":[%.17g,%.17g,%.17g],"
                          "\"b\":[%.17g,%.17g,%.17g],\"radius\":%.17g}}",
                          i ? "," : "", i, x, y, z, x + 0.2, y, z + 0.1, r);
        }
        tb_printf(&t, "}}");
        expect_ok(rpct(c, "scene.create", t.p), "scene.create");
        free(t.p);
    }

    /* Configurations: inside the limits, and every 7th one with joint4
     * beyond its upper limit.  The finger and (every other time) joint4
     * are at their defaults so that the object form can leave them out. */
    static const char *const reports[] = {"all", "closest", "first"};
    double *q = malloc((size_t)configs * (size_t)dof * sizeof *q);
    for (int k = 0; k < configs; k++) {
        int i = 0;
        for (const cJSON *jn = jnames->child; jn; jn = jn->next, i++) {
            const cJSON *lim = at(limits, jn->valuestring);
            double lo = num_at(lim, "lower"), hi = num_at(lim, "upper");
            q[k * dof + i] = lo + urand(&seed) * (hi - lo);
        }
        q[k * dof + 7] = 0.03;
        if (k % 2)
            q[k * dof + 3] = -0.0698;
        if (k % 7 == 3)
            q[k * dof + 3] = 0.5;
    }
    cJSON *batch_joints = cJSON_CreateArray();
    cJSON **singles = calloc((size_t)configs, sizeof *singles);
    int collisions = 0, out_of_limits = 0;
    for (int k = 0; k < configs; k++) {
        const char *report = reports[k % 3];
        /* joints as an array */
        cJSON *arr = cJSON_CreateDoubleArray(&q[k * dof], dof);
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", report);
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(arr, true));
        cJSON *ra = rpcj(c, "check", p);
        const cJSON *a = result_of(ra, "check joints array");
        collisions += cJSON_IsTrue(at(a, "collision"));
        out_of_limits += at(a, "limits") != NULL;
        assert_int_equal(cJSON_IsTrue(at(a, "valid")),
                         !cJSON_IsTrue(at(a, "collision")) && !at(a, "limits"));
        assert_int_equal(at(a, "limits") != NULL, k % 7 == 3);

        /* joints as an object without the joints at their defaults */
        cJSON *obj = cJSON_CreateObject();
        int i = 0;
        for (const cJSON *jn = jnames->child; jn; jn = jn->next, i++)
            if (i != 7 && !(i == 3 && k % 2 && k % 7 != 3))
                cJSON_AddNumberToObject(obj, jn->valuestring, q[k * dof + i]);
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", report);
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(obj, true));
        cJSON *ro = rpcj(c, "check", p);
        assert_same(a, result_of(ro, "check joints object"), "check with a joint array and object",
                    k);
        cJSON_Delete(ro);
        cJSON_AddItemToArray(batch_joints, k % 2 ? obj : cJSON_Duplicate(arr, true));
        if (!(k % 2))
            cJSON_Delete(obj);

        /* the JSON twin, bit for bit after the id mapping */
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm_json");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", report);
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(arr, true));
        cJSON *rj = rpcj(c, "check", p);
        cJSON *am = cJSON_Duplicate(a, true);
        map_ids(am);
        assert_same(am, result_of(rj, "check json twin"),
                    "check of the URDF model and its JSON twin", k);
        cJSON_Delete(rj);
        cJSON_Delete(am);

        /* the frame twin at model.fk's poses (report all: the first
         * violation found may depend on the order of the search) */
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm");
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(arr, true));
        cJSON *rf = rpcj(c, "model.fk", p);
        const cJSON *poses = at(result_of(rf, "model.fk"), "links");
        assert_int_equal(cJSON_GetArraySize(poses), nl);
        cJSON *frames = cJSON_CreateArray();
        for (const cJSON *ln = lnames->child; ln; ln = ln->next) {
            const cJSON *pose = at(poses, ln->valuestring);
            assert_non_null(pose);
            cJSON_AddItemToArray(frames, cJSON_Duplicate(pose, true));
        }
        cJSON_Delete(rf);
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", "all");
        cJSON_AddItemToObject(p, "joints", cJSON_Duplicate(arr, true));
        cJSON *rall = rpcj(c, "check", p);
        cJSON *all = cJSON_Duplicate(result_of(rall, "check report all"), true);
        cJSON_Delete(rall);
        map_ids(all);
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm_frames");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", "all");
        cJSON_AddItemToObject(p, "frames", frames);
        cJSON *rt = rpcj(c, "check", p);
        static const char *const skip[] = {"valid", "limits", NULL};
        if (!json_close(all, result_of(rt, "check frame twin"), 1e-12, skip)) {
            char *x = show(all), *y = show(at(rt, "result"));
            fail_msg("configuration %d: kinematic and frame-indexed checks differ:\n  %.2000s\n  "
                     "%.2000s",
                     k, x, y);
        }
        cJSON_Delete(rt);
        cJSON_Delete(all);
        cJSON_Delete(arr);

        cJSON_DeleteItemFromObject(ra, "id");
        singles[k] = ra;
    }
    /* Both outcomes occur, and some configurations are out of limits. */
    assert_true(collisions > 0 && collisions < configs);
    assert_true(out_of_limits > 0);

    /* check.batch with joints (arrays and objects), per report: result k
     * equals check k without its scene_revision. */
    for (int r = 0; r < 3; r++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "model", "arm");
        cJSON_AddStringToObject(p, "scene", "cell");
        cJSON_AddStringToObject(p, "report", reports[r]);
        cJSON *js = cJSON_CreateArray();
        int k = 0;
        for (const cJSON *j = batch_joints->child; j; j = j->next, k++)
            if (k % 3 == r)
                cJSON_AddItemToArray(js, cJSON_Duplicate(j, true));
        cJSON_AddItemToObject(p, "joints", js);
        cJSON *rb = rpcj(c, "check.batch", p);
        const cJSON *res = at(result_of(rb, "check.batch joints"), "results");
        assert_true(num_at(at(rb, "result"), "scene_revision") >= 1);
        const cJSON *one = res->child;
        for (k = r; k < configs; k += 3, one = one ? one->next : NULL) {
            assert_non_null(one);
            cJSON *want = cJSON_Duplicate(at(singles[k], "result"), true);
            cJSON_DeleteItemFromObject(want, "scene_revision");
            assert_same(want, one, "check.batch result and check", k);
            cJSON_Delete(want);
        }
        assert_null(one);
        cJSON_Delete(rb);
    }

    for (int k = 0; k < configs; k++)
        cJSON_Delete(singles[k]);
    free(singles);
    cJSON_Delete(batch_joints);
    free(q);
    cJSON_Delete(gr);
    free(urdf);
    free(srdf);
    rh_close(c);
    stop_ok(d);
}

/* ---- URDF refusals --------------------------------------------------------------------------- */

#define SPHERE "<collision><geometry><sphere radius=\"0.1\"/></geometry></collision>"
#define LIM "<limit lower=\"-1\" upper=\"1\"/>"
#define HEAD "<?xml version=\"1.0\"?>\n<robot name=\"r\">\n"
#define LINK(n) "<link name=\"" n "\">" SPHERE "</link>\n"
#define JOINT(n, type, p, ch, more)                                                                \
    "<joint name=\"" n "\" type=\"" type "\"><parent link=\"" p "\"/><child link=\"" ch            \
    "\"/>" more "</joint>\n"

typedef struct urdf_case {
    const char *name, *urdf, *srdf;
    int code;
    const char *path, *word;
} urdf_case;

static void urdf_refusals(void **state)
{
    (void)state;
    static const urdf_case cases[] = {
        {"malformed XML", HEAD LINK("a") "<link name=\"b\">\n</robot>\n", NULL, -32602,
         "params.urdf", "line 5"},
        {"malformed XML (what)", HEAD LINK("a") "<link name=\"b\">\n</robot>\n", NULL, -32602,
         "params.urdf", "malformed XML"},
        {"empty document", "", NULL, -32602, "params.urdf", "malformed XML"},
        {"not a robot", "<?xml version=\"1.0\"?>\n<robot name=\"r\"></robot>", NULL, -32602,
         "params.urdf", "no <link>"},
        {"joint naming a missing link",
         HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "c", LIM) "</robot>\n", NULL, -32602,
         "params.urdf", "child link 'c' is not defined"},
        {"missing link has a line",
         HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "c", LIM) "</robot>\n", NULL, -32602,
         "params.urdf", "(line 5)"},
        {"cycle",
         HEAD LINK("r") LINK("a") LINK("b") JOINT("j1", "revolute", "a", "b", LIM)
             JOINT("j2", "revolute", "b", "a", LIM) "</robot>\n",
         NULL, -32602, "params.urdf", "cycle"},
        {"no root",
         HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "b", LIM)
             JOINT("j2", "revolute", "b", "a", LIM) "</robot>\n",
         NULL, -32602, "params.urdf", "no root"},
        {"two parents",
         HEAD LINK("a") LINK("b") LINK("c") JOINT("j1", "revolute", "a", "b", LIM)
             JOINT("j2", "revolute", "c", "b", LIM) "</robot>\n",
         NULL, -32602, "params.urdf", "already the child"},
        {"two roots",
         HEAD LINK("a") LINK("b") LINK("c") JOINT("j1", "revolute", "a", "b", LIM) "</robot>\n",
         NULL, -32602, "params.urdf", "second root"},
        {"self joint", HEAD LINK("a") JOINT("j1", "revolute", "a", "a", LIM) "</robot>\n", NULL,
         -32602, "params.urdf", "to itself"},
        {"nan limit",
         HEAD LINK("a") LINK("b")
             JOINT("j1", "revolute", "a", "b", "<limit lower=\"nan\" upper=\"1\"/>") "</robot>\n",
         NULL, -32602, "params.urdf.joint[j1].limit", "finite"},
        {"1e999 origin",
         HEAD LINK("a") LINK("b")
             JOINT("j1", "revolute", "a", "b", "<origin xyz=\"1e999 0 0\"/>" LIM) "</robot>\n",
         NULL, -32602, "params.urdf.joint[j1].origin", "finite"},
        {"inf radius",
         HEAD LINK("a") "<link name=\"b\"><collision><geometry><sphere radius=\"inf\"/>"
                        "</geometry></collision></link>\n" JOINT("j1", "fixed", "a", "b",
                                                                 "") "</robot>\n",
         NULL, -32602, NULL, "finite"},
        {"lower > upper",
         HEAD LINK("a") LINK("b")
             JOINT("j1", "revolute", "a", "b", "<limit lower=\"2\" upper=\"1\"/>") "</robot>\n",
         NULL, -32602, "params.urdf.joint[j1].limit", "greater than upper"},
        {"mesh collision without its file",
         HEAD LINK("a") "<link name=\"forearm\"><collision><geometry><mesh filename=\"f.stl\"/>"
                        "</geometry></collision></link>\n" JOINT("j1", "revolute", "a", "forearm",
                                                                 LIM) "</robot>\n",
         NULL, -32602, "params.meshes", "f.stl"},
        {"floating joint",
         HEAD LINK("a") LINK("b") JOINT("j1", "floating", "a", "b", "") "</robot>\n", NULL, -32602,
         "params.urdf.joint[j1]", "floating"},
        {"planar joint", HEAD LINK("a") LINK("b") JOINT("j1", "planar", "a", "b", "") "</robot>\n",
         NULL, -32602, "params.urdf.joint[j1]", "planar"},
        {"revolute without limit",
         HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "b", "") "</robot>\n", NULL, -32602,
         "params.urdf.joint[j1]", "limit"},
        {"SRDF naming an unknown link",
         HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "b", LIM) "</robot>\n",
         "<robot name=\"r\"><disable_collisions link1=\"a\" link2=\"gripper\" "
         "reason=\"x\"/></robot>",
         -32602, "params.srdf.disable_collisions[0]", "gripper"},
        {"malformed SRDF", HEAD LINK("a") "</robot>\n", "<robot name=\"r\">", -32602, "params.srdf",
         "malformed XML"},
        {"billion laughs",
         "<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ENTITY a0 \"ha\">"
         "<!ENTITY a1 \"&a0;&a0;&a0;&a0;&a0;&a0;&a0;&a0;&a0;&a0;\">"
         "<!ENTITY a2 \"&a1;&a1;&a1;&a1;&a1;&a1;&a1;&a1;&a1;&a1;\">"
         "<!ENTITY a3 \"&a2;&a2;&a2;&a2;&a2;&a2;&a2;&a2;&a2;&a2;\">"
         "<!ENTITY a4 \"&a3;&a3;&a3;&a3;&a3;&a3;&a3;&a3;&a3;&a3;\">"
         "<!ENTITY a5 \"&a4;&a4;&a4;&a4;&a4;&a4;&a4;&a4;&a4;&a4;\">"
         "<!ENTITY a6 \"&a5;&a5;&a5;&a5;&a5;&a5;&a5;&a5;&a5;&a5;\">"
         "<!ENTITY a7 \"&a6;&a6;&a6;&a6;&a6;&a6;&a6;&a6;&a6;&a6;\">"
         "<!ENTITY a8 \"&a7;&a7;&a7;&a7;&a7;&a7;&a7;&a7;&a7;&a7;\">"
         "<!ENTITY a9 \"&a8;&a8;&a8;&a8;&a8;&a8;&a8;&a8;&a8;&a8;\">]>\n"
         "<robot name=\"r\"><link name=\"a\"><foo>&a9;&a9;&a9;</foo></link></robot>",
         NULL, -32602, "params.urdf", "entity"},
        {"external entity",
         "<?xml version=\"1.0\"?>\n<!DOCTYPE r SYSTEM \"file:///etc/passwd\">\n"
         "<robot name=\"r\"><link name=\"a\"><x>&ent;</x></link></robot>",
         NULL, -32602, "params.urdf.link[a]", "cannot be resolved"},
        {"bad link name", HEAD "<link name=\"a b\"/>\n</robot>\n", NULL, -32602,
         "params.urdf.link[#0]", "characters"},
        {"duplicate link", HEAD LINK("a") LINK("a") "</robot>\n", NULL, -32602, NULL, "twice"},
    };
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    /* Something in the store, so that "unchanged" means something. */
    put_planar(c, "planar", "");
    expect_ok(put_urdf(c, "mini",
                       HEAD LINK("a") LINK("b") JOINT("j1", "revolute", "a", "b", LIM) "</robot>\n",
                       NULL, ""),
              "model.put mini");
    char *before = model_list(c);
    long rss0 = rh_rss_kb(d);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const urdf_case *u = &cases[i];
        /* under the name of an existing model too: a refused put changes nothing */
        for (int existing = 0; existing < 2; existing++) {
            cJSON *r = put_urdf(c, existing ? "mini" : "newbie", u->urdf, u->srdf, "");
            expect_error_word(r, u->code, u->path, u->word, u->name);
            still_same(c, before, u->name);
        }
    }
    /* The entity expansion did not happen: memory stays where it was (an
     * expansion would take gigabytes).  Not under valgrind's own RSS. */
    if (!rh_wrapped() && rss0 > 0) {
        long rss1 = rh_rss_kb(d);
        assert_true(rss1 < rss0 + 64 * 1024);
    }
    free(before);
    rh_close(c);
    stop_ok(d);
}

/* A chain of n links with one sphere each (joint i fixed unless i % 50
 * == 0, revolute then), each link padded with a visual mesh and a comment
 * to about `link_bytes`. */
static char *chain_urdf(int n, size_t link_bytes)
{
    textbuf t = {0};
    tb_printf(&t, "<?xml version=\"1.0\"?>\n<robot name=\"chain\">\n");
    for (int i = 0; i < n; i++) {
        size_t start = t.len;
        tb_printf(&t,
                  "<link name=\"l%d\"><visual><geometry><mesh filename=\"package://c/l%d.dae\"/>"
                  "</geometry></visual><collision><origin xyz=\"0 0 %d.5e-2\"/><geometry>"
                  "<sphere radius=\"0.01\"/></geometry></collision>",
                  i, i, i);
        size_t used = t.len - start + 8;
        if (used < link_bytes) {
            tb_printf(&t, "<!--");
            for (size_t k = used; k < link_bytes; k++)
                tb_printf(&t, "x");
            tb_printf(&t, "-->");
        }
        tb_printf(&t, "</link>\n");
        if (i > 0) {
            if (i % 50 == 0)
                tb_printf(&t,
                          "<joint name=\"j%d\" type=\"revolute\"><parent link=\"l%d\"/>"
                          "<child link=\"l%d\"/><axis xyz=\"0 0 1\"/>"
                          "<limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint>\n",
                          i, i - 1, i);
            else
                tb_printf(&t,
                          "<joint name=\"j%d\" type=\"fixed\"><parent link=\"l%d\"/>"
                          "<child link=\"l%d\"/></joint>\n",
                          i, i - 1, i);
        }
    }
    tb_printf(&t, "</robot>\n");
    return t.p;
}

static void urdf_large_and_over_limit(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    /* 1 MB: 3000 links of about 400 bytes, within max_model_links 4096. */
    char *big = chain_urdf(3000, 300);
    assert_true(strlen(big) > 1000000);
    expect_ok(put_urdf(c, "big", big, NULL, ",\"self_collision\":false"), "1 MB urdf");
    free(big);
    cJSON *r = rpct(c, "model.list", "{}");
    assert_true(num_at(cJSON_GetArrayItem(at(result_of(r, "model.list"), "models"), 0), "links") ==
                3000);
    cJSON_Delete(r);
    r = rpct(c, "model.get", "{\"model\":\"big\"}");
    const cJSON *g = result_of(r, "model.get big");
    assert_int_equal(cJSON_GetArraySize(at(g, "links")), 3000);
    assert_int_equal(cJSON_GetArraySize(at(g, "joints")), 59);
    cJSON_Delete(r);
    /* It can be checked: the defaults (an empty object) and a batch. */
    r = rpct(c, "check", "{\"model\":\"big\",\"joints\":{}}");
    assert_true(cJSON_IsTrue(at(result_of(r, "check big"), "valid")));
    cJSON_Delete(r);
    char *before = model_list(c);
    /* 4097 links: over the limit. */
    char *over = chain_urdf(4097, 0);
    r = put_urdf(c, "over", over, NULL, "");
    free(over);
    assert_true(strcmp(str_at(r, "error.data.limit"), "max_model_links") == 0);
    assert_true(num_at(r, "error.data.max") == 4096);
    expect_error_word(r, -32004, NULL, "max_model_links", "urdf over max_model_links");
    still_same(c, before, "over max_model_links");
    /* Exactly at the limit is fine. */
    char *at_limit = chain_urdf(4096, 0);
    expect_ok(put_urdf(c, "at_limit", at_limit, NULL, ""), "4096 links");
    free(at_limit);
    free(before);
    rh_close(c);
    stop_ok(d);
}

/* ---- JSON kinematic refusals ---------------------------------------------------------------- */

typedef struct param_case {
    const char *method, *params;
    int code;
    const char *path, *word;
} param_case;

/* Runs each case: a result (code 0) or the error; after an error the
 * connection answers and model.list is unchanged. */
static void run_param_cases(rh_conn *c, const param_case *cases, size_t n)
{
    char *before = model_list(c);
    for (size_t i = 0; i < n; i++) {
        const param_case *p = &cases[i];
        char what[400];
        snprintf(what, sizeof what, "%s %.300s", p->method, p->params);
        cJSON *r = rpct(c, p->method, p->params);
        if (p->code == 0) {
            expect_ok(r, what);
            free(before);
            before = model_list(c);
        } else {
            expect_error_word(r, p->code, p->path, p->word, what);
            still_same(c, before, what);
        }
    }
    free(before);
}

#define TWO_JOINTS                                                                                 \
    "{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\",\"child\":\"l1\","                 \
    "\"limits\":{\"lower\":-1,\"upper\":1}},"                                                      \
    "{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"l1\",\"child\":\"l2\","                   \
    "\"limits\":{\"lower\":-1,\"upper\":1}}"
#define S01 "{\"sphere\":{\"center\":[0,0,0],\"radius\":0.1}}"

static void json_kinematic_refusals(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"ball\",\"parent\":\"a\","
         "\"child\":\"b\"}]}",
         -32602, "params.joints[0].type", "revolute"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS ",{\"name\":\"j3\",\"type\":\"revolute\","
         "\"parent\":\"l2\",\"child\":\"l3\",\"mimic\":{\"joint\":\"j9\"}}]}",
         -32602, "params.joints[2].mimic", "joint"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"default_positions\":{\"j9\":0.5}}", -32602,
         "params.default_positions.j9", "joint"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"links\":[{\"id\":\"s\",\"link\":\"l1\","
         "\"frame\":0,\"shape\":" S01 "}]}",
         -32602, "params.links[0].frame", "link"},
        /* a misspelt parent makes a second root: the path points at it */
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"base\","
         "\"child\":\"l1\"},{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"ll1\","
         "\"child\":\"l2\"}]}",
         -32602, "params.joints[1].parent", "ll1"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"a\","
         "\"child\":\"b\"},{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"b\","
         "\"child\":\"a\"}]}",
         -32602, "params.joints", "no root"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j0\",\"type\":\"fixed\",\"parent\":\"r\","
         "\"child\":\"x\"},{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"a\","
         "\"child\":\"b\"},{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"b\","
         "\"child\":\"a\"}]}",
         -32602, NULL, "cycle"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS ",{\"name\":\"j3\",\"type\":\"revolute\","
         "\"parent\":\"base\",\"child\":\"l2\"}]}",
         -32602, "params.joints[2].child", "already the child"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS ",{\"name\":\"j1\",\"type\":\"fixed\","
         "\"parent\":\"l2\",\"child\":\"l3\"}]}",
         -32602, "params.joints[2].name", "duplicate"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"a\","
         "\"child\":\"a\"}]}",
         -32602, "params.joints[0]", "itself"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"a\","
         "\"child\":\"b\",\"axis\":[0,0,0]}]}",
         -32602, "params.joints[0].axis", "non-zero"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j1\",\"type\":\"revolute\",\"parent\":\"a\","
         "\"child\":\"b\",\"limits\":{\"lower\":1,\"upper\":-1}}]}",
         -32602, "params.joints[0].limits", "lower <= upper"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS ",{\"name\":\"j3\",\"type\":\"revolute\","
         "\"parent\":\"l2\",\"child\":\"l3\",\"mimic\":{\"joint\":\"j3\"}}]}",
         -32602, "params.joints[2].mimic", NULL},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS ",{\"name\":\"j3\",\"type\":\"fixed\","
         "\"parent\":\"l2\",\"child\":\"l3\"},{\"name\":\"j4\",\"type\":\"revolute\","
         "\"parent\":\"l3\",\"child\":\"l4\",\"mimic\":{\"joint\":\"j3\"}}]}",
         -32602, "params.joints[3].mimic", NULL},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"allowed_pairs\":[[\"l1\",\"l7\"]]}",
         -32602, "params.allowed_pairs[0][1]", "names no link"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"allowed_scene\":[[\"l7\",\"table\"]]}",
         -32602, "params.allowed_scene[0][0]", "names no link"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"links\":[{\"id\":\"s\",\"link\":\"l1\","
         "\"shape\":" S01 "},{\"id\":\"s\",\"link\":\"l2\",\"shape\":" S01 "}]}",
         -32602, "params.links[1].id", "duplicate"},
        /* a shape on a link no joint names is a second root */
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"links\":[{\"id\":\"s\",\"link\":\"l9\","
         "\"shape\":" S01 "}]}",
         -32602, "params.links[0].link", "l9"},
        {"model.put", "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"srdf\":\"<robot/>\"}", -32602,
         "params.srdf", "urdf"},
        {"model.put", "{\"model\":\"k\",\"urdf\":\"<robot/>\",\"joints\":[]}", -32602,
         "params.joints", "urdf"},
        {"model.put",
         "{\"model\":\"k\",\"links\":[{\"id\":\"a\",\"frame\":0,\"shape\":" S01
         "}],\"default_positions\":{\"j\":1}}",
         -32602, "params.default_positions", "kinematic"},
        {"model.put",
         "{\"model\":\"k\",\"links\":[{\"id\":\"a\",\"frame\":0,\"shape\":" S01
         "}],\"allow_adjacent\":true}",
         -32602, "params.allow_adjacent", "kinematic"},
        {"model.put", "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"allow_adjacent\":1}", -32602,
         "params.allow_adjacent", "boolean"},
        /* allow_adjacent: each joint's parent and child may touch */
        {"model.put", "{\"model\":\"adj\",\"joints\":[" TWO_JOINTS "],\"allow_adjacent\":true}", 0,
         NULL, NULL},
        /* types */
        {"model.put", "{\"model\":\"k\",\"joints\":{}}", -32602, "params.joints", "array"},
        {"model.put", "{\"model\":\"k\",\"joints\":[7]}", -32602, "params.joints[0]", "object"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"type\":\"fixed\",\"parent\":\"a\","
         "\"child\":\"b\"}]}",
         -32602, "params.joints[0].name", "required"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":3,\"parent\":\"a\","
         "\"child\":\"b\"}]}",
         -32602, "params.joints[0].type", "string"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"fixed\","
         "\"parent\":\"a b\",\"child\":\"b\"}]}",
         -32602, "params.joints[0].parent", "characters"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"fixed\","
         "\"parent\":\"a\",\"child\":\"b\",\"origin\":{\"xyz\":[0,0,\"1\"]}}]}",
         -32602, "params.joints[0].origin.xyz[2]", "number"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"fixed\","
         "\"parent\":\"a\",\"child\":\"b\",\"origin\":{\"rpy\":[0,0]}}]}",
         -32602, "params.joints[0].origin.rpy", "3"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"fixed\","
         "\"parent\":\"a\",\"child\":\"b\",\"origin\":{\"quat\":[1,0,0,0]}}]}",
         -32602, "params.joints[0].origin.quat", "unknown key"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
         "\"parent\":\"a\",\"child\":\"b\",\"limits\":{\"lower\":\"nan\",\"upper\":1}}]}",
         -32602, "params.joints[0].limits.lower", "number"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
         "\"parent\":\"a\",\"child\":\"b\",\"limits\":{\"lower\":-1}}]}",
         -32602, "params.joints[0].limits.upper", "required"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
         "\"parent\":\"a\",\"child\":\"b\",\"mimic\":{\"joint\":\"x\","
         "\"multiplier\":\"2\"}}]}",
         -32602, "params.joints[0].mimic.multiplier", "number"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
         "\"parent\":\"a\",\"child\":\"b\",\"speed\":1}]}",
         -32602, "params.joints[0].speed", "unknown key"},
        {"model.put", "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"default_positions\":[1]}",
         -32602, "params.default_positions", "object"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"default_positions\":{\"j1\":\"1\"}}",
         -32602, "params.default_positions.j1", "number"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"default_positions\":{\"j1\":1,\"j1\":0}}",
         -32602, "params.default_positions.j1", "duplicate key"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"links\":[{\"id\":\"s\","
         "\"link\":\"l1\",\"shape\":" S01 ",\"link\":\"l2\"}]}",
         -32602, "params.links[0].link", "duplicate key"},
        {"model.put", "{\"model\":\"k\",\"urdf\":7}", -32602, "params.urdf", "string"},
        {"model.put",
         "{\"model\":\"k\",\"urdf\":\"<robot name='r'><link name='a'/></robot>\","
         "\"srdf\":[]}",
         -32602, "params.srdf", "string"},
        {"model.put",
         "{\"model\":\"k\",\"urdf\":\"<robot name='r'><link name='a'/></robot>\","
         "\"allow_adjacent\":\"no\"}",
         -32602, "params.allow_adjacent", "boolean"},
        {"model.put", "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"safety_margin\":-1}", -32602,
         "params.safety_margin", NULL},
        {"model.put", "{\"model\":\"k\",\"joints\":[" TWO_JOINTS "],\"self_collision\":\"yes\"}",
         -32602, "params.self_collision", "boolean"},
        /* the frame form names what it wants too */
        {"model.put", "{\"model\":\"k\",\"links\":[{\"id\":\"a\",\"shape\":" S01 "}]}", -32602,
         "params.links[0].frame", "required"},
    };
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_planar(c, "planar", "");
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    cJSON *r = rpct(c, "model.get", "{\"model\":\"adj\"}");
    char *pairs = show(at(result_of(r, "model.get adj"), "allowed_pairs"));
    assert_string_equal(pairs, "[[\"base\",\"l1\"],[\"l1\",\"l2\"]]");
    free(pairs);
    cJSON_Delete(r);
    r = rpct(c, "model.get", "{\"model\":\"planar\"}");
    pairs = show(at(result_of(r, "model.get planar"), "allowed_pairs"));
    assert_string_equal(pairs, "[[\"base\",\"l1\"],[\"l1\",\"l2\"]]");
    free(pairs);
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- limits, allowed scene pairs, attached shapes -------------------------------------------- */

static void joint_limits_in_results(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_planar(c, "planar", "");
    /* j2 = 2.5 > 2: invalid, the collision part computed all the same */
    cJSON *r = rpct(c, "check", "{\"model\":\"planar\",\"joints\":[0.5,2.5]}");
    const cJSON *res = result_of(r, "check out of limits");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_false(cJSON_IsTrue(at(res, "collision")));
    assert_non_null(at(res, "min_distance"));
    const cJSON *lims = at(res, "limits");
    assert_int_equal(cJSON_GetArraySize(lims), 1);
    assert_string_equal(str_at(lims->child, "joint"), "j2");
    assert_true(num_at(lims->child, "value") == 2.5);
    assert_true(num_at(lims->child, "lower") == -2);
    assert_true(num_at(lims->child, "upper") == 2);
    cJSON *strict = cJSON_Duplicate(res, true);
    cJSON_Delete(r);
    /* both joints out, the object form */
    r = rpct(c, "check", "{\"model\":\"planar\",\"joints\":{\"j2\":-2.0000001,\"j1\":-3.5}}");
    lims = at(result_of(r, "check two out"), "limits");
    assert_int_equal(cJSON_GetArraySize(lims), 2);
    assert_string_equal(str_at(lims->child, "joint"), "j1");
    assert_true(num_at(lims->child, "value") == -3.5);
    assert_string_equal(str_at(lims->child->next, "joint"), "j2");
    assert_true(num_at(lims->child->next, "value") == -2.0000001);
    cJSON_Delete(r);
    /* exactly at a limit is inside */
    r = rpct(c, "check", "{\"model\":\"planar\",\"joints\":[-3,2]}");
    assert_true(cJSON_IsTrue(at(result_of(r, "check at limits"), "valid")));
    assert_null(at(at(r, "result"), "limits"));
    cJSON_Delete(r);
    /* ignore_limits: no limits entry, valid by the collision alone, and
     * otherwise the same result */
    r = rpct(c, "check", "{\"model\":\"planar\",\"joints\":[0.5,2.5],\"ignore_limits\":true}");
    res = result_of(r, "check ignore_limits");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_null(at(res, "limits"));
    cJSON_DeleteItemFromObject(strict, "limits");
    cJSON_ReplaceItemInObject(strict, "valid", cJSON_CreateTrue());
    assert_same(strict, res, "check with and without ignore_limits", -1);
    cJSON_Delete(strict);
    cJSON_Delete(r);
    /* in a batch, per configuration */
    r = rpct(c, "check.batch",
             "{\"model\":\"planar\",\"joints\":[[0,0],[0,2.5],{\"j1\":4}],\"report\":\"first\"}");
    res = at(result_of(r, "batch limits"), "results");
    assert_int_equal(cJSON_GetArraySize(res), 3);
    assert_true(cJSON_IsTrue(at(cJSON_GetArrayItem(res, 0), "valid")));
    assert_null(at(cJSON_GetArrayItem(res, 0), "limits"));
    assert_false(cJSON_IsTrue(at(cJSON_GetArrayItem(res, 1), "valid")));
    assert_string_equal(str_at(at(cJSON_GetArrayItem(res, 1), "limits")->child, "joint"), "j2");
    assert_string_equal(str_at(at(cJSON_GetArrayItem(res, 2), "limits")->child, "joint"), "j1");
    cJSON_Delete(r);
    r = rpct(c, "check.batch",
             "{\"model\":\"planar\",\"joints\":[[0,2.5]],\"ignore_limits\":true}");
    res = at(result_of(r, "batch ignore_limits"), "results");
    assert_true(cJSON_IsTrue(at(res->child, "valid")));
    assert_null(at(res->child, "limits"));
    cJSON_Delete(r);
    /* a default at a limit is inside; a joint object leaving the joint
     * out uses it */
    r = rpcf(c, "model.put",
             "{\"model\":\"deflim\",\"joints\":%s,\"links\":%s,\"default_positions\":{\"j1\":3}}",
             planar_joints, planar_links);
    expect_ok(r, "default at a limit");
    r = rpct(c, "model.fk", "{\"model\":\"deflim\",\"joints\":{\"j2\":0}}");
    expect_pose(at(result_of(r, "fk deflim"), "links.l2"), (rp_vec3){cos(3.0), sin(3.0), 0},
                qaxis(0, 0, 1, 3.0), "default j1 = 3");
    cJSON_Delete(r);
    r = rpct(c, "check", "{\"model\":\"deflim\",\"joints\":{}}");
    assert_null(at(result_of(r, "check deflim"), "limits"));
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

static void allowed_scene_pairs(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    /* The base sphere (radius 0.2 at the origin) rests 1 cm deep in a
     * table (a 0.5 sphere whose top is at z = -0.19). */
    expect_ok(rpct(c, "scene.create",
                   "{\"scene\":\"cell\",\"shapes\":{\"table\":{\"sphere\":{\"center\":[0,0,-0.69],"
                   "\"radius\":0.5}},\"wall\":{\"sphere\":{\"center\":[0,5,0],\"radius\":1}}}}"),
              "scene.create");
    put_planar(c, "plain", "");
    put_planar(c, "standing", ",\"allowed_scene\":[[\"base\",\"table\"]]");
    /* without: the base collides with the table */
    cJSON *r = rpct(c, "check",
                    "{\"model\":\"plain\",\"scene\":\"cell\",\"joints\":[0,0],"
                    "\"report\":\"all\"}");
    const cJSON *res = result_of(r, "check plain");
    assert_true(cJSON_IsTrue(at(res, "collision")));
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_string_equal(str_at(res, "closest.link"), "bb");
    assert_string_equal(str_at(res, "closest.other"), "table");
    assert_string_equal(str_at(res, "closest.kind"), "scene");
    assert_true(fabs(num_at(res, "min_distance") + 0.01) < 1e-12);
    assert_int_equal(cJSON_GetArraySize(at(res, "violations")), 1);
    cJSON_Delete(r);
    /* with the pair in the model: no collision, and the table is no
     * longer the closest thing */
    r = rpct(c, "check",
             "{\"model\":\"standing\",\"scene\":\"cell\",\"joints\":[0,0],"
             "\"report\":\"all\"}");
    res = result_of(r, "check standing");
    assert_false(cJSON_IsTrue(at(res, "collision")));
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_int_equal(cJSON_GetArraySize(at(res, "violations")), 0);
    assert_string_equal(str_at(res, "closest.link"), "upper"); /* l1 still meets the table */
    assert_string_equal(str_at(res, "closest.other"), "table");
    assert_true(fabs(num_at(res, "min_distance") - 0.14) < 1e-12);
    cJSON *with_model = cJSON_Duplicate(res, true);
    cJSON_Delete(r);
    /* model.get lists it */
    r = rpct(c, "model.get", "{\"model\":\"standing\"}");
    res = result_of(r, "model.get standing");
    assert_int_equal(cJSON_GetArraySize(at(res, "allowed_scene")), 1);
    assert_string_equal(cJSON_GetArrayItem(at(res, "allowed_scene")->child, 0)->valuestring,
                        "base");
    assert_string_equal(cJSON_GetArrayItem(at(res, "allowed_scene")->child, 1)->valuestring,
                        "table");
    cJSON_Delete(r);
    /* per request: the same as in the model */
    r = rpct(c, "check",
             "{\"model\":\"plain\",\"scene\":\"cell\",\"joints\":[0,0],"
             "\"report\":\"all\",\"allowed_scene\":[[\"base\",\"table\"]]}");
    assert_same(with_model, result_of(r, "check per request"),
                "allowed_scene in the model and per request", -1);
    cJSON_Delete(r);
    /* also in check.batch and check.motion */
    r = rpct(c, "check.batch",
             "{\"model\":\"plain\",\"scene\":\"cell\",\"joints\":[[0,0]],"
             "\"allowed_scene\":[[\"base\",\"table\"]]}");
    assert_false(
        cJSON_IsTrue(at(at(result_of(r, "batch allowed"), "results")->child, "collision")));
    cJSON_Delete(r);
    r = rpct(c, "check.motion",
             "{\"model\":\"plain\",\"scene\":\"cell\",\"path\":[[0,0],[1,0]],"
             "\"allowed_scene\":[[\"base\",\"table\"]]}");
    assert_true(cJSON_IsTrue(at(result_of(r, "motion allowed"), "valid")));
    cJSON_Delete(r);
    r = rpct(c, "check.motion",
             "{\"model\":\"plain\",\"scene\":\"cell\",\"path\":[[0,0],[1,0]],"
             "\"mode\":\"certified\"}");
    res = result_of(r, "motion not allowed");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_string_equal(str_at(res, "first_invalid.other"), "table");
    assert_true(num_at(res, "first_invalid.t") == 0);
    cJSON_Delete(r);
    /* a pair naming a scene shape the scene lacks is fine; one naming a
     * link the model lacks is not */
    expect_ok(rpct(c, "check",
                   "{\"model\":\"plain\",\"scene\":\"cell\",\"joints\":[0,0],"
                   "\"allowed_scene\":[[\"base\",\"nothing\"]]}"),
              "unknown scene id");
    expect_error_word(rpct(c, "check",
                           "{\"model\":\"plain\",\"scene\":\"cell\",\"joints\":[0,0],"
                           "\"allowed_scene\":[[\"bb\",\"table\"]]}"),
                      -32602, "params.allowed_scene[0][0]", "names no link", "shape id as link");
    cJSON_Delete(with_model);
    rh_close(c);
    stop_ok(d);
}

static void attached_shapes(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    /* At joints [0,0] the arm lies along x from 0 to 2; "obstacle" (radius
     * 0.15) is centred 0.25 beyond the tip: the arm is 0.05 clear of it. */
    expect_ok(
        rpct(c, "scene.create",
             "{\"scene\":\"cell\",\"shapes\":{\"obstacle\":{\"sphere\":{\"center\":[2.25,0,0],"
             "\"radius\":0.15}}}}"),
        "scene.create");
    put_planar(c, "planar", "");
    cJSON *r = rpct(c, "check", "{\"model\":\"planar\",\"scene\":\"cell\",\"joints\":[0,0]}");
    assert_true(cJSON_IsTrue(at(result_of(r, "bare"), "valid")));
    cJSON_Delete(r);
    /* A grasped part at the tip, on l2 (radius 0.15 around (1,0,0) in l2's
     * frame): 0.05 deep in the obstacle, and deep in its own link "fore",
     * which is not reported. */
    r = rpct(c, "check",
             "{\"model\":\"planar\",\"scene\":\"cell\",\"joints\":[0,0],"
             "\"report\":\"all\",\"attached\":[{\"id\":\"part\",\"link\":\"l2\","
             "\"shape\":{\"sphere\":{\"center\":[1,0,0],\"radius\":0.15}}}]}");
    const cJSON *res = result_of(r, "attached part");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_true(cJSON_IsTrue(at(res, "collision")));
    const cJSON *v = at(res, "violations");
    assert_int_equal(cJSON_GetArraySize(v), 1);
    assert_string_equal(str_at(v->child, "link"), "part");
    assert_string_equal(str_at(v->child, "other"), "obstacle");
    assert_string_equal(str_at(v->child, "kind"), "attached");
    assert_string_equal(str_at(v->child, "with"), "scene");
    assert_true(fabs(num_at(v->child, "distance") + 0.05) < 1e-12);
    assert_string_equal(str_at(res, "closest.link"), "part");
    assert_string_equal(str_at(res, "closest.with"), "scene");
    cJSON_Delete(r);
    /* report first and check.batch say the same */
    r = rpct(c, "check.batch",
             "{\"model\":\"planar\",\"scene\":\"cell\",\"joints\":[[0,0],[1,0]],"
             "\"report\":\"first\",\"attached\":[{\"id\":\"part\",\"link\":\"l2\","
             "\"shape\":{\"sphere\":{\"center\":[1,0,0],\"radius\":0.15}}}]}");
    res = at(result_of(r, "attached batch"), "results");
    assert_string_equal(str_at(at(res->child, "violations")->child, "kind"), "attached");
    assert_true(cJSON_IsTrue(at(res->child->next, "valid")));
    cJSON_Delete(r);
    /* A part on l2 that reaches back to the base: it overlaps "fore" (own
     * link, not reported), "upper" (l1, allowed to touch l2) and "bb" on
     * the base (reported, with the robot).  touch_links ["base"] allows it. */
    static const char reach[] =
        "{\"id\":\"rod\",\"link\":\"l2\",\"shape\":{\"capsule\":{\"a\":[-1,0,0],\"b\":[0.5,0,0],"
        "\"radius\":0.05}}";
    r = rpcf(c, "check",
             "{\"model\":\"planar\",\"joints\":[0,0],\"report\":\"all\","
             "\"attached\":[%s}]}",
             reach);
    res = result_of(r, "rod");
    v = at(res, "violations");
    assert_int_equal(cJSON_GetArraySize(v), 1);
    assert_string_equal(str_at(v->child, "link"), "rod");
    assert_string_equal(str_at(v->child, "other"), "bb");
    assert_string_equal(str_at(v->child, "kind"), "attached");
    assert_string_equal(str_at(v->child, "with"), "robot");
    cJSON_Delete(r);
    r = rpcf(c, "check",
             "{\"model\":\"planar\",\"joints\":[0,0],\"report\":\"all\","
             "\"attached\":[%s,\"touch_links\":[\"base\"]}]}",
             reach);
    res = result_of(r, "rod touching base");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_int_equal(cJSON_GetArraySize(at(res, "violations")), 0);
    cJSON_Delete(r);
    /* two attached shapes are not checked against each other */
    r = rpct(c, "check",
             "{\"model\":\"planar\",\"joints\":[0,0],\"report\":\"all\",\"attached\":["
             "{\"id\":\"p1\",\"link\":\"l1\",\"shape\":{\"sphere\":{\"center\":[0.5,1,0],"
             "\"radius\":0.1}}},{\"id\":\"p2\",\"link\":\"l2\",\"shape\":{\"sphere\":"
             "{\"center\":[-0.5,1,0],\"radius\":0.1}}}]}");
    res = result_of(r, "two parts");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    cJSON_Delete(r);
    /* check.motion with the part: found against the obstacle */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":[[0.5,0],[0,0]],"
             "\"mode\":\"certified\",\"attached\":[{\"id\":\"part\",\"link\":\"l2\","
             "\"shape\":{\"sphere\":{\"center\":[1,0,0],\"radius\":0.15}}}]}");
    res = result_of(r, "motion with part");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_string_equal(str_at(res, "first_invalid.link"), "part");
    assert_string_equal(str_at(res, "first_invalid.kind"), "attached");
    assert_string_equal(str_at(res, "first_invalid.with"), "scene");
    cJSON_Delete(r);

    /* refusals, each with its path */
    static const param_case cases[] = {
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l7\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].link", "names no link"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"fore\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].link", "names no link"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":" S01 "},{\"id\":\"x\",\"link\":\"l2\",\"shape\":" S01 "}]}",
         -32602, "params.attached[1].id", "already"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"fore\",\"link\":"
         "\"l1\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].id", "already"},
        {"check.batch",
         "{\"model\":\"planar\",\"joints\":[[0,0]],\"attached\":[{\"id\":\"y\","
         "\"link\":\"l1\",\"shape\":" S01 "},{\"id\":\"y\",\"link\":\"l2\","
         "\"shape\":" S01 "}]}",
         -32602, "params.attached[1].id", "already"},
        {"check.motion",
         "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"attached\":[{\"id\":\"x\","
         "\"link\":\"nolink\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].link", "names no link"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":" S01 ",\"touch_links\":[\"l9\"]}]}",
         -32602, "params.attached[0].touch_links[0]", "names no link"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":" S01 ",\"touch_links\":\"base\"}]}",
         -32602, "params.attached[0].touch_links", "array"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":" S01 ",\"touch_links\":[1]}]}",
         -32602, "params.attached[0].touch_links[0]", "string"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":{}}", -32602,
         "params.attached", "array"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[[]]}", -32602,
         "params.attached[0]", "object"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\","
         "\"link\":\"l1\"}]}",
         -32602, "params.attached[0].shape", "required"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"link\":\"l1\","
         "\"shape\":" S01 "}]}",
         -32602, "params.attached[0].id", "required"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"a b\","
         "\"link\":\"l1\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].id", "characters"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":{\"sphere\":{\"center\":[0,0,0],\"radius\":-1}}}]}",
         -32602, "params.attached[0].shape.sphere.radius", NULL},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"link\":"
         "\"l1\",\"shape\":" S01 ",\"frame\":0}]}",
         -32602, "params.attached[0].frame", "unknown key"},
        {"check",
         "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\",\"id\":\"y\","
         "\"link\":\"l1\",\"shape\":" S01 "}]}",
         -32602, "params.attached[0].id", "duplicate key"},
    };
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    rh_close(c);
    stop_ok(d);
}

/* ---- model.fk by hand ------------------------------------------------------------------------ */

static void model_fk_by_hand(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_planar(c, "planar", "");
    static const double cases[][2] = {{0, 0}, {0.3, 0.5}, {-2.5, 1.75}, {3, -2}};
    /* base poses: identity; a translation with a turn about x */
    static const char *const bases[] = {
        NULL, "{\"translation\":[1,2,3],\"rotation\":{\"w\":0.7071067811865476,"
              "\"x\":0.7071067811865476,\"y\":0,\"z\":0}}"};
    for (size_t b = 0; b < 2; b++) {
        quat qb = {1, 0, 0, 0};
        rp_vec3 tb = {0, 0, 0};
        if (b == 1) {
            qb = (quat){0.7071067811865476, 0.7071067811865476, 0, 0};
            tb = (rp_vec3){1, 2, 3};
        }
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            double t1 = cases[k][0], t2 = cases[k][1];
            cJSON *r = b ? rpcf(c, "model.fk",
                                "{\"model\":\"planar\",\"joints\":[%.17g,%.17g],\"base\":%s}", t1,
                                t2, bases[b])
                         : rpcf(c, "model.fk",
                                "{\"model\":\"planar\",\"joints\":{\"j1\":%.17g,"
                                "\"j2\":%.17g}}",
                                t1, t2);
            const cJSON *res = result_of(r, "model.fk");
            assert_string_equal(str_at(res, "model"), "planar");
            assert_true(num_at(res, "revision") >= 1);
            const cJSON *links = at(res, "links");
            assert_int_equal(cJSON_GetArraySize(links), 4);
            /* in the arm's plane, then through the base pose */
            rp_vec3 p_l2 = {cos(t1), sin(t1), 0};
            rp_vec3 p_tool = {cos(t1) + cos(t1 + t2), sin(t1) + sin(t1 + t2), 0};
            rp_vec3 zero = {0, 0, 0};
            struct {
                const char *name;
                rp_vec3 t;
                quat q;
            } want[] = {
                {"base", zero, qb},
                {"l1", zero, qmul(qb, qaxis(0, 0, 1, t1))},
                {"l2", p_l2, qmul(qb, qaxis(0, 0, 1, t1 + t2))},
                {"tool", p_tool, qmul(qb, qaxis(0, 0, 1, t1 + t2 + 1.5707963267948966))},
            };
            for (size_t i = 0; i < 4; i++) {
                rp_vec3 w = qrot(qb, want[i].t);
                w = (rp_vec3){w.x + tb.x, w.y + tb.y, w.z + tb.z};
                char what[128];
                snprintf(what, sizeof what, "fk %s at [%g,%g] base %zu", want[i].name, t1, t2, b);
                const cJSON *pose = at(links, want[i].name);
                assert_non_null(pose);
                expect_pose(pose, w, want[i].q, what);
            }
            cJSON_Delete(r);
        }
    }
    /* link order: model.get's links */
    cJSON *r = rpct(c, "model.fk", "{\"model\":\"planar\",\"joints\":[0,0]}");
    const cJSON *l = at(result_of(r, "fk order"), "links")->child;
    assert_string_equal(l->string, "base");
    assert_string_equal(l->next->string, "l1");
    assert_string_equal(l->next->next->string, "l2");
    assert_string_equal(l->next->next->next->string, "tool");
    cJSON_Delete(r);
    /* values out of limits are used as given */
    r = rpct(c, "model.fk", "{\"model\":\"planar\",\"joints\":[0,3.14159]}");
    result_of(r, "fk out of limits");
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- check.motion ---------------------------------------------------------------------------- */

/* The arm sweeps j1 from 0 to 1 (t = j1) with j2 = 0, a straight 2 m arm of
 * radius 0.05.  The post, a vertical capsule of radius 0.005, stands at
 * distance R = 1.8 from the axis, at angle PHI = 0.75: on the forearm's
 * part of the arm.  The clearance is R |sin(PHI - t)| - 0.055, so the arm
 * touches it (clearance = margin) at t = PHI - asin((0.055 + margin) / R),
 * about 0.7194 for margin 0: the colliding window (0.7194, 0.7806) holds
 * none of the states at resolution 0.5 (0, 0.5, 1) and several at 0.01. */
#define POST_R 1.8
#define POST_PHI 0.75

static double contact_t(double margin)
{
    return POST_PHI - asin((0.055 + margin) / POST_R);
}

static void create_post_scene(rh_conn *c)
{
    double x = POST_R * cos(POST_PHI), y = POST_R * sin(POST_PHI);
    expect_ok(rpcf(c, "scene.create",
                   "{\"scene\":\"cell\",\"shapes\":{\"post\":{\"capsule\":{\"a\":[%.17g,%.17g,-1],"
                   "\"b\":[%.17g,%.17g,1],\"radius\":0.005}}}}",
                   x, y, x, y),
              "scene.create post");
}

/* Certified: the contact at t is within the documented relation. */
static void expect_certified_contact(rh_conn *c, const char *extra, double margin, double tol)
{
    cJSON *r = rpcf(c, "check.motion",
                    "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":[[0,0],[1,0]],"
                    "\"mode\":\"certified\"%s}",
                    extra);
    const cJSON *res = result_of(r, "certified");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    assert_true(num_at(res, "states_checked") > 0);
    const cJSON *fi = at(res, "first_invalid");
    assert_true(num_at(fi, "segment") == 0);
    assert_string_equal(str_at(fi, "link"), "fore");
    assert_string_equal(str_at(fi, "other"), "post");
    assert_string_equal(str_at(fi, "kind"), "scene");
    double t = num_at(fi, "t"), tc = contact_t(margin);
    /* every state before t is clear, so t is not after the contact; the
     * state at t is within tol of the margin, so not before the time the
     * clearance drops below margin + tol */
    double earliest = POST_PHI - asin((0.055 + margin + tol) / POST_R);
    if (!(t <= tc + 1e-12 && t >= earliest - 1e-12))
        fail_msg("certified t %.17g, want within [%.17g, %.17g] (%s)", t, earliest, tc, extra);
    const cJSON *jv = at(fi, "joints");
    assert_int_equal(cJSON_GetArraySize(jv), 2);
    assert_true(jv->child->valuedouble == t);
    assert_true(jv->child->next->valuedouble == 0);
    /* a check at the returned joints: the closest pair is the same, below
     * margin + tolerance */
    cJSON *rc = rpcf(c, "check",
                     "{\"model\":\"planar\",\"scene\":\"cell\",\"joints\":[%.17g,0],"
                     "\"report\":\"closest\"%s}",
                     t, margin > 0 ? ",\"margin\":0.01" : "");
    const cJSON *chk = result_of(rc, "check at first_invalid");
    double md = num_at(chk, "min_distance");
    if (!(md - margin < tol && md - margin > -tol))
        fail_msg("min_distance %.17g at t %.17g: want within %g of the margin %g", md, t, tol,
                 margin);
    assert_string_equal(str_at(chk, "closest.link"), "fore");
    assert_string_equal(str_at(chk, "closest.other"), "post");
    assert_true(fabs(num_at(fi, "distance") - md) < 1e-12);
    cJSON_Delete(rc);
    cJSON_Delete(r);
}

static void check_motion_discrete_and_certified(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    create_post_scene(c);
    put_planar(c, "planar", "");

    /* discrete, default resolution 0.01: found, at a state in the window */
    cJSON *r = rpct(c, "check.motion",
                    "{\"model\":\"planar\",\"scene\":\"cell\","
                    "\"path\":[[0,0],[1,0]]}");
    const cJSON *res = result_of(r, "discrete 0.01");
    assert_false(cJSON_IsTrue(at(res, "valid")));
    const cJSON *fi = at(res, "first_invalid");
    double t = num_at(fi, "t");
    assert_true(t > contact_t(0) && t < 2 * POST_PHI - contact_t(0));
    assert_true(num_at(fi, "distance") < 0);
    assert_string_equal(str_at(fi, "link"), "fore");
    assert_string_equal(str_at(fi, "other"), "post");
    assert_string_equal(str_at(fi, "kind"), "scene");
    assert_true(num_at(res, "states_checked") > 2);
    assert_true(num_at(res, "states_checked") <= 101);
    assert_true(num_at(res, "scene_revision") >= 1);
    cJSON_Delete(r);
    /* earliest: the first state k/100 past the contact, 0.72 */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[0,0],[1,0]],\"earliest\":true}");
    fi = at(result_of(r, "discrete earliest"), "first_invalid");
    assert_true(fabs(num_at(fi, "t") - 0.72) < 1e-12);
    assert_true(fabs(cJSON_GetArrayItem(at(fi, "joints"), 0)->valuedouble - 0.72) < 1e-12);
    cJSON_Delete(r);
    /* the other way round, through a middle waypoint: segment 1 */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[-0.5,0],[0.5,0],[1,0]],\"earliest\":true}");
    fi = at(result_of(r, "discrete two segments"), "first_invalid");
    assert_true(num_at(fi, "segment") == 1);
    assert_true(fabs(num_at(fi, "t") - 0.44) < 1e-12); /* 0.5 + 0.44 * 0.5 = 0.72 */
    cJSON_Delete(r);
    /* discrete at 0.5: the post slips between the states */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[0,0],[1,0]],\"resolution\":0.5}");
    res = result_of(r, "discrete 0.5");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_true(cJSON_IsNull(at(res, "first_invalid")));
    assert_true(num_at(res, "states_checked") == 3);
    cJSON_Delete(r);

    /* certified: the contact, within the tolerance relation */
    expect_certified_contact(c, "", 0, 1e-5);
    expect_certified_contact(c, ",\"tolerance\":0.001", 0, 1e-3);
    expect_certified_contact(c, ",\"margin\":0.01", 0.01, 1e-5);
    /* certified, clear the other way */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[0,0],[-1,0]],\"mode\":\"certified\"}");
    res = result_of(r, "certified clear");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_true(num_at(res, "states_checked") > 0);
    cJSON_Delete(r);
    /* a waypoint out of its limits */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[0,0],[-0.5,2.5]],\"mode\":\"certified\"}");
    fi = at(result_of(r, "motion limits"), "first_invalid");
    assert_string_equal(str_at(fi, "kind"), "limits");
    assert_true(num_at(fi, "t") == 1);
    assert_string_equal(str_at(at(fi, "limits")->child, "joint"), "j2");
    cJSON_Delete(r);
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\","
             "\"path\":[[0,0],[-0.5,2.5]],\"ignore_limits\":true}");
    assert_true(cJSON_IsTrue(at(result_of(r, "motion ignore_limits"), "valid")));
    cJSON_Delete(r);
    /* without a scene: self collision only; folding j2 to 2 is clear, the
     * path of a 0-length segment is one state */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"path\":[[0,0],[0,0]],"
             "\"mode\":\"certified\"}");
    res = result_of(r, "still motion");
    assert_true(cJSON_IsTrue(at(res, "valid")));
    assert_true(cJSON_IsNull(at(res, "scene_revision")));
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* A daemon with a work limit of 2000 per request, the post scene, the
 * planar arm and "flat" (frame-indexed); the caller closes c and stops
 * the daemon. */
static rh_daemon *start_motion_daemon(rh_conn **conn)
{
    static const char *const extra[] = {"--max-request-work", "2000", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    create_post_scene(c);
    put_planar(c, "planar", "");
    expect_ok(rpct(c, "model.put",
                   "{\"model\":\"flat\",\"links\":[{\"id\":\"a\",\"frame\":0,"
                   "\"shape\":" S01 "}]}"),
              "flat");
    *conn = c;
    return d;
}

/* Paths, modes, resolutions and tolerances out of place or range are
 * refused at their path; unknown scenes and models with -32001. */
static void check_motion_refuses_bad_params_at_their_path(void **state)
{
    (void)state;
    rh_conn *c;
    rh_daemon *d = start_motion_daemon(&c);
    static const param_case cases[] = {
        {"check.motion", "{\"model\":\"planar\",\"path\":[]}", -32602, "params.path",
         "two or more"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0]]}", -32602, "params.path",
         "two or more"},
        {"check.motion", "{\"model\":\"planar\"}", -32602, "params.path", "required"},
        {"check.motion", "{\"model\":\"planar\",\"path\":{\"j1\":0}}", -32602, "params.path",
         "array"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1]]}", -32602, "params.path[1]",
         "must hold 2 values"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0,0],[1,0]]}", -32602,
         "params.path[0]", "must hold 2 values"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,\"0\"]]}", -32602,
         "params.path[1][1]", "number"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],{\"j3\":1}]}", -32602,
         "params.path[1].j3", "no active joint"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],7]}", -32602, "params.path[1]",
         "array"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"mode\":\"fast\"}", -32602,
         "params.mode", "discrete"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"mode\":1}", -32602,
         "params.mode", "string"},
        {"check.motion",
         "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"mode\":\"certified\","
         "\"resolution\":0.1}",
         -32602, "params.resolution", "discrete"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"tolerance\":0.1}", -32602,
         "params.tolerance", "certified"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"resolution\":0}", -32602,
         "params.resolution", "> 0"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"resolution\":-1}", -32602,
         "params.resolution", "> 0"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"resolution\":\"0.1\"}",
         -32602, "params.resolution", NULL},
        {"check.motion",
         "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"mode\":\"certified\","
         "\"tolerance\":0}",
         -32602, "params.tolerance", "> 0"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"earliest\":1}", -32602,
         "params.earliest", "boolean"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"report\":\"all\"}", -32602,
         "params.report", "unknown key"},
        {"check.motion",
         "{\"model\":\"planar\",\"path\":[[0,0],[1,0]],\"base\":{\"rotation\":"
         "{\"w\":2,\"x\":0,\"y\":0,\"z\":0}}}",
         -32602, "params.base.rotation", "norm"},
        {"check.motion", "{\"model\":\"flat\",\"path\":[[],[]]}", -32602, "params.path",
         "kinematic"},
        {"check.motion", "{\"model\":\"planar\",\"scene\":\"nope\",\"path\":[[0,0],[1,0]]}", -32001,
         NULL, NULL},
        {"check.motion", "{\"model\":\"nope\",\"path\":[[0,0],[1,0]]}", -32001, NULL, NULL},
    };
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    rh_close(c);
    stop_ok(d);
}

/* A motion too long for the work budget is refused with -32004 naming
 * the limit; the same motion at a coarser resolution fits. */
static void check_motion_over_the_work_limit_refused(void **state)
{
    (void)state;
    rh_conn *c;
    rh_daemon *d = start_motion_daemon(&c);
    static const param_case cases[] = {
        /* too long for the work budget (about 5 pair tests a state): 3001
         * states at 0.001 over 3 rad */
        {"check.motion",
         "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":[[0,0],[-3,0]],"
         "\"resolution\":0.001}",
         -32004, NULL, "max_request_work"},
        {"check.motion",
         "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":[[0,0],[-1,0],[0,0],"
         "[-1,0],[0,0],[-1,0],[0,0],[-1,0]],\"resolution\":0.005}",
         -32004, NULL, "max_request_work"},
    };
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    /* the limit error names the limit */
    cJSON *r = rpct(c, "check.motion",
                    "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":"
                    "[[0,0],[-3,0]],\"resolution\":0.001}");
    assert_string_equal(str_at(r, "error.data.limit"), "max_request_work");
    assert_true(num_at(r, "error.data.max") == 2000);
    cJSON_Delete(r);
    /* the same motion at a coarser resolution fits */
    r = rpct(c, "check.motion",
             "{\"model\":\"planar\",\"scene\":\"cell\",\"path\":"
             "[[0,0],[-3,0]],\"resolution\":0.05}");
    assert_true(cJSON_IsTrue(at(result_of(r, "coarse motion"), "valid")));
    cJSON_Delete(r);
    rh_close(c);
    stop_ok(d);
}

/* ---- frame-indexed models given joints ------------------------------------------------------ */

static void frame_indexed_model_refuses_joints(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"check", "{\"model\":\"flat\",\"joints\":[0]}", -32602, "params.joints", "kinematic"},
        {"check", "{\"model\":\"flat\",\"joints\":{}}", -32602, "params.joints", "kinematic"},
        {"check", "{\"model\":\"flat\",\"joints\":[]}", -32602, "params.joints", "frames"},
        {"check.batch", "{\"model\":\"flat\",\"joints\":[[0]]}", -32602, "params.joints",
         "kinematic"},
        {"check.motion", "{\"model\":\"flat\",\"path\":[[0],[1]]}", -32602, "params.path",
         "kinematic"},
        {"model.fk", "{\"model\":\"flat\",\"joints\":[0]}", -32602, "params.model", "kinematic"},
        /* and frames stay what a frame-indexed model takes */
        {"check", "{\"model\":\"flat\",\"frames\":[{}]}", 0, NULL, NULL},
        {"check", "{\"model\":\"flat\",\"frames\":[{}],\"joints\":[0]}", -32602, "params.frames",
         "not both"},
        {"check.batch", "{\"model\":\"flat\",\"configurations\":[],\"joints\":[]}", -32602,
         "params.configurations", "not both"},
        {"check.batch", "{\"model\":\"flat\",\"configurations\":[],\"base\":{}}", -32602,
         "params.base", NULL},
    };
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    expect_ok(rpct(c, "model.put",
                   "{\"model\":\"flat\",\"links\":[{\"id\":\"a\",\"frame\":0,"
                   "\"shape\":" S01 "}]}"),
              "flat");
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    rh_close(c);
    stop_ok(d);
}

/* ---- check.batch's joint table read from the text ------------------------------------------- */

/* One check.batch line: `key` is how the joints member is spelled ("joints"
 * takes rpc.c's fast path for lines of 1 KiB and more; "joint\u0073" is the
 * same key to cJSON but not to the fast path, which then leaves the line to
 * cJSON); rows of `width` values printed by `fmt` from q, `sep` between
 * values. */
static char *batch_line(const char *key, const double *q, size_t rows, size_t width,
                        const char *sep, bool short_fmt)
{
    textbuf t = {0};
    tb_printf(&t,
              "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"check.batch\",\"params\":{"
              "\"model\":\"planar\",\"scene\":\"cell\",\"report\":\"closest\",\"%s\": [",
              key);
    for (size_t r = 0; r < rows; r++) {
        tb_printf(&t, "%s[", r ? ", " : "");
        for (size_t k = 0; k < width; k++)
            tb_printf(&t, short_fmt ? "%s%.6g" : "%s%.17g", k ? sep : "", q[r * width + k]);
        tb_printf(&t, "]");
    }
    tb_printf(&t, "]}}");
    return t.p;
}

/* The fast path (rp_json_batch_joints) must answer exactly as the general
 * path does: results, errors and their paths, byte for byte. */
static void batch_table_fast_path_equals_general_path(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_planar(c, "planar", "");
    create_post_scene(c);
    uint64_t seed = 0x7ab1e5ULL;
    enum { ROWS = 300 };
    double q[ROWS * 3];
    for (size_t i = 0; i < ROWS * 3; i++)
        q[i] = (urand(&seed) - 0.5) * 5.0; /* some outside the limits of +-2 */
    q[4] = -0.0;
    q[5] = 1e-300;
    struct {
        size_t width;
        const char *sep;
        bool short_fmt;
        size_t rows;
    } cases[] = {
        {2, ",", false, ROWS},  /* the table, exact doubles */
        {2, " , ", true, ROWS}, /* short numbers, spaces */
        {3, ",", false, ROWS},  /* one value too many: the error of row 0 */
        {1, ",", false, ROWS},  /* one too few */
        {2, ",", false, 2},     /* a short line: no fast path at all */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *fast = batch_line("joints", q, cases[k].rows, cases[k].width, cases[k].sep,
                                cases[k].short_fmt);
        char *general = batch_line("joint\\u0073", q, cases[k].rows, cases[k].width, cases[k].sep,
                                   cases[k].short_fmt);
        const char *r = rh_call(c, fast);
        assert_non_null(r);
        char *fast_reply = strdup(r);
        r = rh_call(c, general);
        assert_non_null(r);
        if (strcmp(fast_reply, r) != 0)
            fail_msg("case %zu: replies differ:\n  fast    %.300s\n  general %.300s", k, fast_reply,
                     r);
        cJSON *j = cJSON_Parse(fast_reply);
        assert_non_null(j);
        if (cases[k].width == 2) {
            const cJSON *results = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "result"), "results");
            assert_int_equal(cJSON_GetArraySize(results), cases[k].rows);
        } else {
            expect_error_word(j, -32602, "params.joints[0]", "must hold 2 values", "wrong width");
            j = NULL; /* expect_error took it */
        }
        cJSON_Delete(j);
        free(fast_reply);
        free(fast);
        free(general);
    }
    rh_close(c);
    stop_ok(d);
}

/* ---- an outsider's bad input ----------------------------------------------------------------- */

/* Deep nesting inside attached: `depth` brackets around a number where a
 * vec3 is expected. */
static char *deep_attached(int depth)
{
    textbuf t = {0};
    tb_printf(&t, "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[{\"id\":\"x\","
                  "\"link\":\"l1\",\"shape\":{\"sphere\":{\"center\":");
    for (int i = 0; i < depth; i++)
        tb_printf(&t, "[");
    tb_printf(&t, "0");
    for (int i = 0; i < depth; i++)
        tb_printf(&t, "]");
    tb_printf(&t, ",\"radius\":1}}}]}");
    return t.p;
}

/* The models the outsider's requests name: the planar arm, "rigid" (its
 * joints all fixed: 0 dof, one rigid body) and "nothing" (a tree with
 * nothing at all). */
static void put_outsider_models(rh_conn *c)
{
    put_planar(c, "planar", "");
    expect_ok(rpct(c, "model.put",
                   "{\"model\":\"rigid\",\"joints\":[{\"name\":\"j1\",\"type\":\"fixed\","
                   "\"parent\":\"base\",\"child\":\"l1\"},{\"name\":\"j2\",\"type\":\"fixed\","
                   "\"parent\":\"l1\",\"child\":\"l2\",\"origin\":{\"xyz\":[0.1,0,0]}}],"
                   "\"links\":[{\"id\":\"a\",\"link\":\"base\",\"shape\":" S01 "},{\"id\":\"b\","
                   "\"link\":\"l2\",\"shape\":" S01 "}]}"),
              "rigid");
    expect_ok(rpct(c, "model.put", "{\"model\":\"nothing\",\"joints\":[]}"), "nothing");
}

/* Starts a daemon with the outsider's models and runs the cases on it;
 * `then` (may be NULL) checks more on the same connection. */
static void outsider_cases(const param_case *cases, size_t n, void (*then)(rh_conn *c))
{
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_outsider_models(c);
    run_param_cases(c, cases, n);
    if (then)
        then(c);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

#define OUTSIDER_CASES(cases, then) outsider_cases(cases, sizeof cases / sizeof cases[0], then)

/* Joint vectors of the wrong type, length or names, and check's other
 * params, are refused at their path. */
static void check_refuses_bad_joints_and_params_at_their_path(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"check", "{\"model\":\"planar\",\"joints\":\"0,0\"}", -32602, "params.joints", "array"},
        {"check", "{\"model\":\"planar\",\"joints\":null}", -32602, "params.joints", "array"},
        {"check", "{\"model\":\"planar\",\"joints\":true}", -32602, "params.joints", "array"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,\"1\"]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,\"nan\"]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,\"Infinity\"]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,null]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,[1]]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,{\"v\":1}]}", -32602, "params.joints[1]",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[]}", -32602, "params.joints",
         "must hold 2 values"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0,0]}", -32602, "params.joints", "not 3"},
        {"check", "{\"model\":\"planar\",\"joints\":{\"j1\":\"nan\"}}", -32602, "params.joints.j1",
         "number"},
        {"check", "{\"model\":\"planar\",\"joints\":{\"j1\":1,\"j1\":2}}", -32602,
         "params.joints.j1", "duplicate key"},
        {"check", "{\"model\":\"planar\",\"joints\":{\"mount\":0}}", -32602, "params.joints.mount",
         "no active joint"},
        {"check", "{\"model\":\"planar\",\"joints\":{\"J1\":0}}", -32602, "params.joints.J1",
         "no active joint"},
        {"check", "{\"model\":\"planar\",\"joints\":{\"j1\":null}}", -32602, "params.joints.j1",
         "number"},
        {"check", "{\"model\":\"planar\"}", -32602, "params.joints", "required"},
        {"check", "{\"model\":\"planar\",\"frames\":[{}],\"joints\":[0,0]}", -32602,
         "params.frames", "not both"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"ignore_limits\":1}", -32602,
         "params.ignore_limits", "boolean"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"margin\":\"0.1\"}", -32602,
         "params.margin", "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"report\":\"some\"}", -32602,
         "params.report", "closest"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"base\":[0,0,0]}", -32602, "params.base",
         "object"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"base\":{\"translation\":[0,0,\"1\"]}}",
         -32602, "params.base.translation[2]", "number"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"allowed_scene\":\"x\"}", -32602,
         "params.allowed_scene", "array"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"allowed_scene\":[[\"l1\"]]}", -32602,
         "params.allowed_scene[0]", "pair"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"allowed_scene\":[[\"l1\",7]]}", -32602,
         "params.allowed_scene[0][1]", "string"},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"colour\":\"red\"}", -32602,
         "params.colour", "unknown key"},
        {"check", "{\"model\":\"planar\",\"model\":\"planar\",\"joints\":[0,0]}", -32602,
         "params.model", "duplicate key"},
    };
    OUTSIDER_CASES(cases, NULL);
}

static void huge_joints_with_ignore_limits_give_a_finite_result(rh_conn *c)
{
    /* huge joint values with ignore_limits: a finite result */
    cJSON *r =
        rpct(c, "check", "{\"model\":\"planar\",\"joints\":[1e308,-1e308],\"ignore_limits\":true}");
    assert_true(cJSON_IsNumber(at(result_of(r, "huge joints"), "min_distance")));
    cJSON_Delete(r);
}

/* Huge values, tiny ones and empty lists are used as given (limits report
 * them). */
static void check_takes_huge_and_empty_values_as_given(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"check", "{\"model\":\"planar\",\"joints\":[0,1e308]}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[1e308,-1e308],\"ignore_limits\":true}", 0,
         NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[5e-324,-0.0]}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"margin\":1e308}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"margin\":-1e308}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[]}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":[0,0],\"allowed_scene\":[]}", 0, NULL, NULL},
        {"check", "{\"model\":\"planar\",\"joints\":{}}", 0, NULL, NULL},
    };
    OUTSIDER_CASES(cases, huge_joints_with_ignore_limits_give_a_finite_result);
}

static void check_batch_refuses_bad_tables_at_their_path(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"check.batch", "{\"model\":\"planar\",\"joints\":{}}", -32602, "params.joints", "array"},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[[0,0],[0]]}", -32602, "params.joints[1]",
         "must hold 2 values"},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[[0,0],\"x\"]}", -32602,
         "params.joints[1]", "array"},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[[0,0],{\"j1\":1,\"j1\":1}]}", -32602,
         "params.joints[1].j1", "duplicate key"},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[[0,0]],\"configurations\":[]}", -32602,
         "params.configurations", "not both"},
        {"check.batch", "{\"model\":\"planar\"}", -32602, "params.joints", "required"},
        {"check.batch",
         "{\"model\":\"planar\",\"joints\":[[0,0]],\"base\":{\"rotation\":[1,0,0,0]}}", -32602,
         "params.base.rotation", NULL},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[]}", 0, NULL, NULL},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[{},[0,0]]}", 0, NULL, NULL},
    };
    OUTSIDER_CASES(cases, NULL);
}

static void model_fk_refuses_bad_params_at_their_path(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"model.fk", "{\"model\":\"planar\"}", -32602, "params.joints", "required"},
        {"model.fk", "{\"model\":\"planar\",\"joints\":[0]}", -32602, "params.joints",
         "must hold 2 values"},
        {"model.fk", "{\"model\":\"planar\",\"joints\":{\"j2\":1,\"j1\":0,\"j2\":2}}", -32602,
         "params.joints.j2", "duplicate key"},
        {"model.fk", "{\"model\":\"planar\",\"joints\":[0,0],\"base\":5}", -32602, "params.base",
         "object"},
        {"model.fk", "{\"model\":\"planar\",\"joints\":[0,0],\"scene\":\"x\"}", -32602,
         "params.scene", "unknown key"},
        {"model.fk", "{\"model\":7,\"joints\":[0,0]}", -32602, "params.model", "string"},
        {"model.fk", "{\"model\":\"nope\",\"joints\":[0,0]}", -32001, NULL, NULL},
        {"model.fk", "{\"joints\":[0,0]}", -32602, "params.model", "required"},
        {"model.fk", "{\"model\":\"planar\",\"joints\":[1e308,1e308]}", 0, NULL, NULL},
    };
    OUTSIDER_CASES(cases, NULL);
}

static void zero_dof_results_make_sense(rh_conn *c)
{
    cJSON *r = rpct(c, "model.get", "{\"model\":\"rigid\"}");
    const cJSON *g = result_of(r, "model.get rigid");
    assert_int_equal(cJSON_GetArraySize(at(g, "joints")), 0);
    assert_int_equal(cJSON_GetArraySize(at(g, "links")), 3);
    assert_true(num_at(g, "frames") == 0);
    cJSON_Delete(r);
    r = rpct(c, "check", "{\"model\":\"rigid\",\"joints\":[],\"report\":\"all\"}");
    g = result_of(r, "check rigid");
    assert_true(cJSON_IsTrue(at(g, "valid"))); /* one body: no pair at all */
    assert_true(cJSON_IsNull(at(g, "min_distance")));
    cJSON_Delete(r);
    r = rpct(c, "model.fk", "{\"model\":\"rigid\",\"joints\":[]}");
    expect_pose(at(result_of(r, "fk rigid"), "links.l2"), (rp_vec3){0.1, 0, 0}, (quat){1, 0, 0, 0},
                "fk rigid l2");
    cJSON_Delete(r);
    r = rpct(c, "model.get", "{\"model\":\"nothing\"}");
    g = result_of(r, "model.get nothing");
    assert_true(cJSON_IsTrue(at(g, "kinematic")));
    assert_true(cJSON_IsNull(at(g, "root")));
    cJSON_Delete(r);
}

/* 0-dof and fixed-only models take empty joint vectors in every method,
 * refuse non-empty ones, and answer what one rigid body (or none) does. */
static void zero_dof_models_take_empty_joint_vectors(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"check", "{\"model\":\"rigid\",\"joints\":[]}", 0, NULL, NULL},
        {"check", "{\"model\":\"rigid\",\"joints\":{}}", 0, NULL, NULL},
        {"check", "{\"model\":\"rigid\",\"joints\":[0]}", -32602, "params.joints",
         "must hold 0 values"},
        {"check", "{\"model\":\"rigid\",\"joints\":{\"j1\":0}}", -32602, "params.joints.j1",
         "no active joint"},
        {"check.batch", "{\"model\":\"rigid\",\"joints\":[[],{}]}", 0, NULL, NULL},
        {"model.fk", "{\"model\":\"rigid\",\"joints\":[]}", 0, NULL, NULL},
        {"check.motion", "{\"model\":\"rigid\",\"path\":[[],{}]}", 0, NULL, NULL},
        {"check.motion", "{\"model\":\"rigid\",\"path\":[[],[]],\"mode\":\"certified\"}", 0, NULL,
         NULL},
        {"check.motion", "{\"model\":\"rigid\",\"path\":[[],[0]]}", -32602, "params.path[1]",
         "must hold 0 values"},
        {"check", "{\"model\":\"nothing\",\"joints\":[]}", 0, NULL, NULL},
        {"model.fk", "{\"model\":\"nothing\",\"joints\":{}}", 0, NULL, NULL},
        {"check.motion", "{\"model\":\"nothing\",\"path\":[[],[]]}", 0, NULL, NULL},
    };
    OUTSIDER_CASES(cases, zero_dof_results_make_sense);
}

static void delete_k(rh_conn *c)
{
    expect_ok(rpct(c, "model.delete", "{\"model\":\"k\"}"), "delete k");
}

/* A second root is refused; an axis of huge components is accepted. */
static void model_put_of_odd_trees(void **state)
{
    (void)state;
    static const param_case cases[] = {
        {"model.put",
         "{\"model\":\"k\",\"joints\":[],\"links\":[{\"id\":\"s\",\"link\":\"a\","
         "\"shape\":" S01 "},{\"id\":\"t\",\"link\":\"b\",\"shape\":" S01 "}]}",
         -32602, "params.links[1].link", "second root"},
        {"model.put",
         "{\"model\":\"k\",\"joints\":[{\"name\":\"j\",\"type\":\"revolute\","
         "\"parent\":\"a\",\"child\":\"b\",\"axis\":[1e308,1e308,0]}]}",
         0, NULL, NULL},
    };
    OUTSIDER_CASES(cases, delete_k);
}

/* Deep nesting inside attached: a path while within the depth limit,
 * -32004 beyond it; many attached shapes with a bad one at the end: its
 * path. */
static void deep_and_many_attached_shapes_refused(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_outsider_models(c);
    char *deep = deep_attached(40);
    expect_error_word(rpct(c, "check", deep), -32602, "params.attached[0].shape.sphere.center",
                      NULL, "deep attached");
    free(deep);
    deep = deep_attached(80);
    cJSON *rd = rpct(c, "check", deep);
    free(deep);
    assert_string_equal(str_at(rd, "error.data.limit"), "max_json_depth");
    expect_error_word(rd, -32004, NULL, NULL, "too deep attached");
    /* many attached shapes, each a bad one at the end */
    textbuf t = {0};
    tb_printf(&t, "{\"model\":\"planar\",\"joints\":[0,0],\"attached\":[");
    for (int i = 0; i < 500; i++)
        tb_printf(&t, "{\"id\":\"a%d\",\"link\":\"l%d\",\"shape\":" S01 "},", i, 1 + i % 2);
    tb_printf(&t, "{\"id\":\"a0\",\"link\":\"l1\",\"shape\":" S01 "}]}");
    expect_error_word(rpct(c, "check", t.p), -32602, "params.attached[500].id", "already",
                      "500 attached");
    free(t.p);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* ---- motions through non-finite states ------------------------------------------------------- */

/* Model "slide": a prismatic joint of range +-1e308 and a revolute joint
 * 1e308 m out along x, one small shape on each link. */
static void slide_put(rh_conn *c)
{
    expect_ok(rpct(c, "model.put",
                   "{\"model\":\"slide\",\"joints\":[{\"name\":\"j1\",\"type\":\"prismatic\","
                   "\"parent\":\"base\",\"child\":\"l1\",\"limits\":{\"lower\":-1e308,"
                   "\"upper\":1e308}},{\"name\":\"j2\",\"type\":\"revolute\",\"parent\":\"l1\","
                   "\"child\":\"l2\",\"origin\":{\"xyz\":[1e308,0,0]},\"axis\":[0,0,1]}],"
                   "\"links\":[{\"id\":\"a\",\"link\":\"l1\",\"shape\":" S01 "},{\"id\":\"b\","
                   "\"link\":\"l2\",\"shape\":" S01 "}]}"),
              "slide");
}

/* Two motions whose states leave the range of doubles although every
 * waypoint is finite: a segment from -1e308 to 1e308 (its length, 2e308,
 * overflows), and a base 1e308 out with a link 1e308 further.  Discrete
 * mode answers -32602 ("moves a link beyond the largest double"); certified
 * mode fed the non-finite coordinates to the distance kernels (undefined
 * behaviour: UBSan stops the daemon at src/geometry/distance.c, release
 * builds answered "distance": null and "joints": [null, 0]).  Each motion
 * must get a finite result or a -32602, and the daemon must stay up.
 * (motion.c now interpolates without overflow and refuses, with
 * RP_ERR_NONFINITE, states or joint changes beyond the range of doubles.) */
static void motion_through_nonfinite_states(void **state)
{
    (void)state;
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    slide_put(c);
    static const char *const motions[] = {
        "{\"model\":\"slide\",\"path\":[[-1e308,0],[1e308,0]]",
        "{\"model\":\"slide\",\"path\":[[0,0],[1,0]],\"base\":{\"translation\":[1e308,0,0]}",
    };
    static const char *const modes[] = {"", ",\"mode\":\"certified\""};
    for (size_t m = 0; m < 2; m++)
        for (size_t k = 0; k < 2; k++) {
            char params[512];
            snprintf(params, sizeof params, "%s%s}", motions[m], modes[k]);
            cJSON *r = rpct(c, "check.motion", params);
            if (at(r, "error")) {
                expect_error_word(r, -32602, NULL, "largest double", params);
            } else {
                const cJSON *fi = at(at(r, "result"), "first_invalid");
                if (!cJSON_IsNull(fi)) {
                    assert_true(cJSON_IsNumber(at(fi, "distance")));
                    for (const cJSON *q = at(fi, "joints")->child; q; q = q->next)
                        assert_true(cJSON_IsNumber(q));
                }
                cJSON_Delete(r);
            }
            expect_pong(c);
        }
    rh_close(c);
    stop_ok(d);
}

/* ---- meshes over the work limit ------------------------------------------------- */

/* A URDF's meshes are priced before they are read and covered (bytes, then
 * triangles), by the worker that does it: over max_request_work the reply
 * names that limit, and the daemon answers the next request. */
static void meshes_over_the_work_limit_refused(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-request-work", "2000", NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    /* A binary STL of 20 triangles: 1084 bytes to read, 20 x 250 to cover. */
    unsigned char stl[84 + 50 * 20];
    memset(stl, 0, sizeof stl);
    stl[80] = 20;
    for (int t = 0; t < 20; t++) {
        float v[12] = {0, 0, 1, (float)t, 0, 0, (float)t + 1, 0, 0, (float)t, 1, 0};
        memcpy(stl + 84 + 50 * t, v, sizeof v);
    }
    char b64[2 * sizeof stl];
    rp_base64_encode(stl, sizeof stl, b64);
    b64[rp_base64_encoded_len(sizeof stl)] = '\0';
    cJSON *r = rpcf(c, "model.put",
                    "{\"model\":\"m\",\"urdf\":\"<robot name='r'><link name='a'><collision>"
                    "<geometry><mesh filename='m.stl'/></geometry></collision></link></robot>\","
                    "\"meshes\":{\"m.stl\":\"%s\"}}",
                    b64);
    expect_error_word(r, -32004, NULL, "max_request_work", "meshes over the work limit");
    expect_ok(rpct(c, "ping", NULL), "ping after the refusal");
    rh_close(c);
    stop_ok(d);
}

/* ---- SRDF groups and named states ----------------------------------------------- */

/* A check, a batch, a motion and a plan given through params.group (the
 * group's joints only) or a state's name answer exactly what the same
 * requests with full joint vectors answer: the other joints at their
 * defaults, the state's values over them. */
static void groups_and_states_equal_full_vectors(void **state)
{
    (void)state;
    char *urdf = read_data("arm7.urdf"), *srdf = read_data("arm7.srdf");
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    expect_ok(put_urdf(c, "arm", urdf, srdf, ""), "model.put urdf+srdf");
    expect_ok(rpct(c, "scene.create",
                   "{\"scene\":\"cell\",\"shapes\":{\"wall\":{\"box\":{\"center\":[0.45,0,0.5],"
                   "\"half_extents\":[0.05,0.5,0.5]}}}}"),
              "scene.create");
    cJSON *gr = rpct(c, "model.get", "{\"model\":\"arm\"}");
    const cJSON *g = result_of(gr, "model.get");
    const cJSON *arm = at(at(g, "groups"), "arm7_arm");
    assert_int_equal(cJSON_GetArraySize(arm), 8); /* seven revolute joints and a fixed one */
    const cJSON *ready = at(cJSON_GetArrayItem(at(g, "states"), 0), "joints");
    double finger = num_at(at(g, "default_positions"), "arm7_finger_joint1");
    /* The named state against its values. */
    textbuf full = {0};
    tb_printf(&full, "[");
    for (int i = 1; i <= 7; i++) {
        char key[32];
        snprintf(key, sizeof key, "arm7_joint%d", i);
        tb_printf(&full, "%.17g,", num_at(ready, key));
    }
    tb_printf(&full, "%.17g]", finger);
    cJSON *a = rpct(c, "check", "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":\"ready\"}");
    cJSON *b = rpcf(c, "check", "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":%s}", full.p);
    assert_same(result_of(a, "check ready"), result_of(b, "check full"), "state and vector", -1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* Group vectors against full ones, some in contact with the wall. */
    uint64_t seed = 7;
    textbuf gb = {0}, fb = {0}, gp = {0}, fp = {0};
    tb_printf(&gb, "[");
    tb_printf(&fb, "[");
    for (int k = 0; k < 24; k++) {
        double q[7];
        for (int i = 0; i < 7; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            q[i] = ((double)(seed >> 11) / 9007199254740992.0 - 0.5) * 2.5;
        }
        q[3] = -1.5 - fabs(q[3]) * 0.5; /* joint4 lies in [-3.07, -0.07] */
        textbuf gv = {0}, fv = {0};
        tb_printf(&gv, "[");
        tb_printf(&fv, "[");
        for (int i = 0; i < 7; i++) {
            tb_printf(&gv, "%s%.17g", i ? "," : "", q[i]);
            tb_printf(&fv, "%.17g,", q[i]);
        }
        tb_printf(&gv, "]");
        tb_printf(&fv, "%.17g]", finger);
        a = rpcf(c, "check",
                 "{\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",\"report\":"
                 "\"all\",\"joints\":%s}",
                 gv.p);
        b = rpcf(c, "check",
                 "{\"model\":\"arm\",\"scene\":\"cell\",\"report\":\"all\",\"joints\":%s}", fv.p);
        assert_same(result_of(a, "group check"), result_of(b, "full check"), "group and full", k);
        cJSON_Delete(a);
        cJSON_Delete(b);
        tb_printf(&gb, "%s%s", k ? "," : "", gv.p);
        tb_printf(&fb, "%s%s", k ? "," : "", fv.p);
        if (k < 4) {
            tb_printf(&gp, "%s%s", k ? "," : "[", gv.p);
            tb_printf(&fp, "%s%s", k ? "," : "[", fv.p);
        }
        free(gv.p);
        free(fv.p);
    }
    tb_printf(&gb, "]");
    tb_printf(&fb, "]");
    tb_printf(&gp, "]");
    tb_printf(&fp, "]");
    /* check.batch (the table read straight from the text, spread over the
     * defaults) and check.motion. */
    a = rpcf(c, "check.batch",
             "{\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",\"joints\":%s}", gb.p);
    b = rpcf(c, "check.batch", "{\"model\":\"arm\",\"scene\":\"cell\",\"joints\":%s}", fb.p);
    assert_same(result_of(a, "group batch"), result_of(b, "full batch"), "batches", -1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    a = rpcf(c, "check.motion",
             "{\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",\"mode\":"
             "\"discrete\",\"path\":%s}",
             gp.p);
    b = rpcf(c, "check.motion",
             "{\"model\":\"arm\",\"scene\":\"cell\",\"mode\":\"discrete\",\"path\":%s}", fp.p);
    assert_same(result_of(a, "group motion"), result_of(b, "full motion"), "motions", -1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* A plan for the group keeps the finger where the start has it. */
    a = rpct(c, "plan",
             "{\"model\":\"arm\",\"group\":\"arm7_arm\",\"start\":\"ready\",\"goal\":"
             "[0.5,0.2,0,-1.2,0,1.2,0],\"seed\":3}");
    const cJSON *path = at(result_of(a, "group plan"), "path");
    assert_true(cJSON_GetArraySize(path) >= 2);
    for (const cJSON *pt = path->child; pt; pt = pt->next)
        assert_true(cJSON_GetArrayItem(pt, 7)->valuedouble == finger);
    cJSON_Delete(a);
    /* Refusals, each at its path. */
    expect_error_word(rpct(c, "check", "{\"model\":\"arm\",\"group\":\"nope\",\"joints\":[0]}"),
                      -32602, "params.group", "no group", "unknown group");
    expect_error_word(
        rpct(c, "check",
             "{\"model\":\"arm\",\"group\":\"arm7_arm\",\"joints\":[0,0,0,-1,0,1,0,0]}"),
        -32602, "params.joints", "group arm7_arm", "a full vector with group");
    expect_error_word(rpct(c, "check", "{\"model\":\"arm\",\"joints\":\"steady\"}"), -32602,
                      "params.joints", "no named state", "unknown state");
    expect_error_word(
        rpct(c, "check.batch",
             "{\"model\":\"arm\",\"group\":\"arm7_arm\",\"joints\":[[0,0,0,-1,0,1]]}"),
        -32602, "params.joints[0]", "group arm7_arm", "a short table row");
    expect_error_word(rpct(c, "plan",
                           "{\"model\":\"arm\",\"group\":\"arm7_arm\",\"start\":\"ready\","
                           "\"goal\":{\"arm7_finger_joint1\":0.01}}"),
                      -32602, "params.goal", "does not hold", "a goal moving a frozen joint");
    expect_error_word(
        rpct(c, "model.fk", "{\"model\":\"arm\",\"joints\":\"ready\",\"group\":\"x\"}"), -32602,
        "params.group", NULL, "group on model.fk");
    cJSON_Delete(gr);
    free(gb.p);
    free(fb.p);
    free(gp.p);
    free(fp.p);
    free(full.p);
    free(urdf);
    free(srdf);
    rh_close(c);
    stop_ok(d);
}

/* ---- binary joint arrays: joints_f64 and path_f64 ----------------------------------- */

/* The base64 text of n doubles, little-endian (proto/PROTOCOL.md, "Binary
 * joint arrays"), whatever the host's byte order; the caller frees it. */
static char *f64_text(const double *v, size_t n)
{
    unsigned char *raw = malloc(n * 8 + 1);
    assert_non_null(raw);
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], sizeof u);
        for (int k = 0; k < 8; k++)
            raw[8 * i + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    size_t len = rp_base64_encoded_len(n * 8);
    char *s = malloc(len + 1);
    assert_non_null(s);
    rp_base64_encode(raw, n * 8, s);
    s[len] = '\0';
    free(raw);
    return s;
}

/* n doubles as a JSON array, each printed to read back to the same bits. */
static void json_row(textbuf *t, const double *v, size_t n)
{
    tb_printf(t, "[");
    for (size_t i = 0; i < n; i++)
        tb_printf(t, "%s%.17g", i ? "," : "", v[i]);
    tb_printf(t, "]");
}

/* `rows` rows of `width` as a JSON table. */
static void json_table(textbuf *t, const double *v, size_t rows, size_t width)
{
    tb_printf(t, "[");
    for (size_t r = 0; r < rows; r++) {
        tb_printf(t, "%s", r ? "," : "");
        json_row(t, &v[r * width], width);
    }
    tb_printf(t, "]");
}

/* Sends the request `method` with params "{<head>,KEY:VALUE<tail>}" twice,
 * once with the JSON form (json_key: json_value) and once with the binary
 * one (bin_key: "bin_value"), under the same id, and asserts that the two
 * reply lines are the same bytes; returns the reply (the caller deletes
 * it). */
static cJSON *same_reply(rh_conn *c, const char *method, const char *head, const char *json_key,
                         const char *json_value, const char *bin_key, const char *bin_value,
                         const char *tail, const char *what)
{
    textbuf a = {0}, b = {0};
    int id = next_id++;
    tb_printf(&a, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s\"%s\":%s%s}}",
              id, method, head, json_key, json_value, tail);
    tb_printf(&b,
              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s\"%s\":\"%s\"%s}}",
              id, method, head, bin_key, bin_value, tail);
    const char *r = rh_call(c, a.p);
    assert_non_null(r);
    char *json_reply = strdup(r);
    assert_non_null(json_reply);
    r = rh_call(c, b.p);
    assert_non_null(r);
    if (strcmp(json_reply, r) != 0)
        fail_msg("%s: the binary form answers otherwise:\n  json   %.600s\n  binary %.600s", what,
                 json_reply, r);
    cJSON *j = cJSON_Parse(r);
    assert_non_null(j);
    free(json_reply);
    free(a.p);
    free(b.p);
    return j;
}

/* Random configurations of the test arm (tests/data/arm7.urdf), some in
 * the wall, some outside the joint limits, given as JSON numbers and as
 * joints_f64 / path_f64: check (with and without params.group), check.batch
 * (with and without it, each report), check.motion (both modes) and
 * model.fk answer the same bytes. */
static void joints_f64_answers_as_json_joints(void **state)
{
    (void)state;
    enum { DOF = 8, ARM = 7 };
    int rows = rh_wrapped() ? 24 : 200;
    char *urdf = read_data("arm7.urdf"), *srdf = read_data("arm7.srdf");
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    expect_ok(put_urdf(c, "arm", urdf, srdf, ""), "model.put urdf+srdf");
    expect_ok(rpct(c, "scene.create",
                   "{\"scene\":\"cell\",\"shapes\":{\"wall\":{\"box\":{\"center\":[0.45,0,0.5],"
                   "\"half_extents\":[0.05,0.5,0.5]}},\"ball\":{\"sphere\":{\"center\":[0.3,0.3,"
                   "0.6],\"radius\":0.1}},\"rod\":{\"capsule\":{\"a\":[-0.4,0,0],\"b\":[-0.4,0,"
                   "1],\"radius\":0.05}}}}"),
              "scene.create");
    uint64_t seed = 0xf64f64ULL;
    double *q = malloc((size_t)rows * DOF * sizeof *q), *g = malloc((size_t)rows * ARM * sizeof *g);
    assert_non_null(q);
    assert_non_null(g);
    for (int k = 0; k < rows; k++) {
        for (int i = 0; i < ARM; i++)
            q[k * DOF + i] = (urand(&seed) - 0.5) * 3.0;
        q[k * DOF + 3] = -1.5 - urand(&seed) * (k % 5 == 0 ? 2.5 : 1.4); /* joint4; some below */
        q[k * DOF + ARM] = urand(&seed) * 0.04;                          /* the finger */
        memcpy(&g[k * ARM], &q[k * DOF], ARM * sizeof *g);
    }
    q[1] = -0.0;
    q[2] = 5e-324;
    /* check, one configuration at a time, every report. */
    static const char *const reports[] = {"first", "closest", "all"};
    int collisions = 0, clear = 0;
    for (int k = 0; k < (rh_wrapped() ? 6 : 40); k++) {
        textbuf jv = {0}, gv = {0};
        json_row(&jv, &q[k * DOF], DOF);
        json_row(&gv, &g[k * ARM], ARM);
        char *bin = f64_text(&q[k * DOF], DOF), *gbin = f64_text(&g[k * ARM], ARM);
        char tail[64];
        snprintf(tail, sizeof tail, ",\"report\":\"%s\"", reports[k % 3]);
        cJSON *r = same_reply(c, "check", "\"model\":\"arm\",\"scene\":\"cell\",", "joints", jv.p,
                              "joints_f64", bin, tail, "check");
        if (cJSON_IsTrue(at(result_of(r, "check"), "collision")))
            collisions++;
        else
            clear++;
        cJSON_Delete(r);
        cJSON_Delete(same_reply(c, "check",
                                "\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",",
                                "joints", gv.p, "joints_f64", gbin, tail, "check with group"));
        cJSON_Delete(same_reply(c, "model.fk", "\"model\":\"arm\",", "joints", jv.p, "joints_f64",
                                bin, ",\"base\":{\"translation\":[0.5,-0.25,1]}", "model.fk"));
        free(jv.p);
        free(gv.p);
        free(bin);
        free(gbin);
    }
    assert_true(collisions > 0 && clear > 0);

    /* check.batch: the whole table, and a short one (one slice). */
    size_t sizes[] = {(size_t)rows, 3};
    for (size_t s = 0; s < 2; s++) {
        size_t n = sizes[s];
        textbuf jt = {0}, gt = {0};
        json_table(&jt, q, n, DOF);
        json_table(&gt, g, n, ARM);
        char *bin = f64_text(q, n * DOF), *gbin = f64_text(g, n * ARM);
        for (int rep = 0; rep < 3; rep++) {
            char tail[64];
            snprintf(tail, sizeof tail, ",\"report\":\"%s\"", reports[rep]);
            cJSON *r = same_reply(c, "check.batch", "\"model\":\"arm\",\"scene\":\"cell\",",
                                  "joints", jt.p, "joints_f64", bin, tail, "check.batch");
            assert_int_equal(cJSON_GetArraySize(at(result_of(r, "check.batch"), "results")),
                             (int)n);
            cJSON_Delete(r);
            cJSON_Delete(same_reply(
                c, "check.batch", "\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",",
                "joints", gt.p, "joints_f64", gbin, tail, "check.batch with group"));
        }
        free(jt.p);
        free(gt.p);
        free(bin);
        free(gbin);
    }

    /* check.motion through the first waypoints, both modes, with group too. */
    static const char *const modes[] = {",\"mode\":\"discrete\",\"resolution\":0.05",
                                        ",\"mode\":\"certified\",\"tolerance\":0.001",
                                        ",\"mode\":\"discrete\",\"earliest\":true"};
    for (size_t m = 0; m < 3; m++) {
        size_t n = 2 + m * 2;
        textbuf jt = {0}, gt = {0};
        json_table(&jt, q, n, DOF);
        json_table(&gt, g, n, ARM);
        char *bin = f64_text(q, n * DOF), *gbin = f64_text(g, n * ARM);
        cJSON_Delete(same_reply(c, "check.motion", "\"model\":\"arm\",\"scene\":\"cell\",", "path",
                                jt.p, "path_f64", bin, modes[m], "check.motion"));
        cJSON_Delete(same_reply(c, "check.motion",
                                "\"model\":\"arm\",\"scene\":\"cell\",\"group\":\"arm7_arm\",",
                                "path", gt.p, "path_f64", gbin, modes[m], "check.motion group"));
        free(jt.p);
        free(gt.p);
        free(bin);
        free(gbin);
    }

    /* In a JSON-RPC batch (one line, one budget) as alone. */
    textbuf line = {0};
    char *bin = f64_text(q, 4 * DOF);
    tb_printf(&line,
              "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"check.batch\",\"params\":{\"model\":"
              "\"arm\",\"scene\":\"cell\",\"joints_f64\":\"%s\"}},{\"jsonrpc\":\"2.0\",\"id\":2,"
              "\"method\":\"ping\"}]",
              bin);
    cJSON *r = call_json(c, line.p);
    assert_true(cJSON_IsArray(r));
    assert_int_equal(cJSON_GetArraySize(at(cJSON_GetArrayItem(r, 0), "result.results")), 4);
    cJSON_Delete(r);
    free(line.p);
    free(bin);
    free(q);
    free(g);
    free(urdf);
    free(srdf);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* A request's params with `key` set to the base64 text of v[0..n). */
static char *with_f64(const char *head, const char *key, const double *v, size_t n,
                      const char *tail)
{
    char *bin = f64_text(v, n);
    textbuf t = {0};
    tb_printf(&t, "{%s\"%s\":\"%s\"%s}", head, key, bin, tail);
    free(bin);
    return t.p;
}

static void slide_model(rh_conn *c)
{
    slide_put(c);
    expect_ok(rpct(c, "model.put",
                   "{\"model\":\"flat\",\"links\":[{\"id\":\"a\",\"frame\":0,"
                   "\"shape\":" S01 "}]}"),
              "flat");
}

/* Every refusal of joints_f64 and path_f64, at the member's path, with
 * its reason; nothing changes and the daemon answers on. */
static void joints_f64_refused_at_their_path(void **state)
{
    (void)state;
    const double nan = NAN, inf = INFINITY;
    const double one[] = {0.5}, three[] = {0, 0, 0.5}, bad_row[] = {0, 0, nan, 0},
                 inf_vec[] = {0, inf}, bad_path[] = {0, 0, 1, 1, 0, -inf}, pair[] = {0.25, -0.5},
                 far[] = {0, 0, 1e308, 0}, nan_one[] = {nan, 0}, four[] = {0, 0, 0.5, 0.5};
    char *p[] = {
        with_f64("\"model\":\"planar\",", "joints_f64", one, 1, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", three, 3, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", bad_row, 4, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", inf_vec, 2, ""),
        with_f64("\"model\":\"planar\",", "path_f64", bad_path, 6, ""),
        with_f64("\"model\":\"planar\",", "path_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"joints\":[0.25,-0.5],", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"joints\":[[0.25,-0.5]],", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"joints\":[0.25,-0.5],", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"path\":[[0,0],[1,1]],", "path_f64", bad_path, 4, ""),
        with_f64("\"model\":\"planar\",\"configurations\":[],", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"frames\":[],", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", one, 1, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", nan_one, 2, ""),
        with_f64("\"model\":\"slide\",", "joints_f64", far, 4, ""),
        with_f64("\"model\":\"slide\",", "joints_f64", far + 2, 2, ""),
        with_f64("\"model\":\"flat\",", "joints_f64", one, 1, ""),
        with_f64("\"model\":\"flat\",", "path_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",\"scene\":\"nowhere\",", "joints_f64", pair, 2, ""),
        with_f64("\"model\":\"planar\",", "joints_f64", pair, 2, ",\"group\":\"arm\""),
        /* params.rows: the rows the client meant (4 values are 2 rows of
         * 2, not 1 or 3). */
        with_f64("\"model\":\"planar\",", "joints_f64", four, 4, ",\"rows\":1"),
        with_f64("\"model\":\"planar\",", "path_f64", four, 4, ",\"rows\":3"),
        with_f64("\"model\":\"planar\",", "joints_f64", four, 4, ",\"rows\":2"),
        with_f64("\"model\":\"planar\",", "path_f64", four, 4, ",\"rows\":2"),
        with_f64("\"model\":\"planar\",", "joints_f64", four, 4, ",\"rows\":1.5"),
    };
    const param_case cases[] = {
        {"check", "{\"model\":\"planar\",\"joints_f64\":5}", -32602, "params.joints_f64",
         "base64 string"},
        {"check.batch", "{\"model\":\"planar\",\"joints_f64\":null}", -32602, "params.joints_f64",
         "base64 string"},
        {"check", "{\"model\":\"planar\",\"joints_f64\":\"AAAA*AAAAAAAAAAAAAAAAA==\"}", -32602,
         "params.joints_f64", "must be base64 (A-Z"},
        {"check", "{\"model\":\"planar\",\"joints_f64\":\"AAAA=AAAAAAAAAAAAAAAAA==\"}", -32602,
         "params.joints_f64", "padding only at the end"},
        {"check.batch", "{\"model\":\"planar\",\"joints_f64\":\"AAAAAAAAAAAAAAAAAAAAAB==\"}",
         -32602, "params.joints_f64", "unused bits"},
        {"check.batch", "{\"model\":\"planar\",\"joints_f64\":\"AAAAA\"}", -32602,
         "params.joints_f64", "length is a multiple of 4"},
        {"check.batch", "{\"model\":\"planar\",\"joints_f64\":\"AAAAAAAAAAAAAAAA\"}", -32602,
         "params.joints_f64", "whole float64 values (8 bytes each), not 12 bytes"},
        {"check", p[0], -32602, "params.joints_f64", "must hold 2 values"},
        {"check.batch", p[1], -32602, "params.joints_f64",
         "holds 3 values, not a multiple of the row length 2"},
        {"check.batch", "{\"model\":\"planar\",\"joints_f64\":\"\"}", -32602, "params.joints_f64",
         "give at least 1"},
        {"check.batch", p[2], -32602, "params.joints_f64", "row 1 joint 0 is not finite"},
        {"check", p[3], -32602, "params.joints_f64", "joint 1 is not finite"},
        {"check.motion", p[4], -32602, "params.path_f64", "row 2 joint 1 is not finite"},
        {"check.motion", p[5], -32602, "params.path_f64", "give at least 2"},
        {"check", p[6], -32602, "params.joints_f64", "give either joints or joints_f64"},
        {"check.batch", p[7], -32602, "params.joints_f64", "give either joints or joints_f64"},
        {"model.fk", p[8], -32602, "params.joints_f64", "give either joints or joints_f64"},
        {"check.motion", p[9], -32602, "params.path_f64", "give either path or path_f64"},
        {"check.batch", p[10], -32602, "params.configurations", "joints_f64, not both"},
        {"check", p[11], -32602, "params.frames", "joints_f64, not both"},
        {"check", "{\"model\":\"planar\"}", -32602, "params.joints", "required"},
        {"check.batch", "{\"model\":\"planar\"}", -32602, "params.joints", "joints_f64"},
        {"check.motion", "{\"model\":\"planar\"}", -32602, "params.path", "required"},
        {"model.fk", "{\"model\":\"planar\"}", -32602, "params.joints", "required"},
        {"model.fk", p[12], -32602, "params.joints_f64", "must hold 2 values"},
        {"model.fk", p[13], -32602, "params.joints_f64", "joint 0 is not finite"},
        {"check.batch", p[14], -32602, "params.joints_f64",
         "row 1 moves a link beyond the largest double"},
        {"check", p[15], -32602, "params.joints_f64", "beyond the largest double"},
        {"check", p[16], -32602, "params.joints_f64", "needs a kinematic model"},
        {"check.motion", p[17], -32602, "params.path_f64", "needs a kinematic model"},
        {"check", p[18], -32001, NULL, NULL},
        {"check", p[19], -32602, "params.group", "no group"},
        {"check.batch", p[20], -32602, "params.rows", "is 1, but joints_f64 holds 4 values"},
        {"check.motion", p[21], -32602, "params.rows", "is 3, but path_f64 holds 4 values"},
        {"check.batch", p[22], 0, NULL, NULL},
        {"check.motion", p[23], 0, NULL, NULL},
        {"check.batch", p[24], -32602, "params.rows", "integer >= 1"},
        {"check.batch", "{\"model\":\"planar\",\"joints\":[[0,0]],\"rows\":1}", -32602,
         "params.rows", "only with joints_f64"},
        {"check.motion", "{\"model\":\"planar\",\"path\":[[0,0],[0,1]],\"rows\":2}", -32602,
         "params.rows", "only with path_f64"},
        /* A model without joints: one empty vector, but no rows of nothing. */
        {"check", "{\"model\":\"rigid\",\"joints_f64\":\"\"}", 0, NULL, NULL},
        {"model.fk", "{\"model\":\"rigid\",\"joints_f64\":\"\"}", 0, NULL, NULL},
        {"check.batch", "{\"model\":\"rigid\",\"joints_f64\":\"\"}", -32602, "params.joints_f64",
         "no active joints"},
        {"check.motion", "{\"model\":\"rigid\",\"path_f64\":\"\"}", -32602, "params.path_f64",
         "no active joints"},
    };
    rh_daemon *d = start(NULL);
    rh_conn *c = connect_ok(d, false);
    put_outsider_models(c);
    slide_model(c);
    run_param_cases(c, cases, sizeof cases / sizeof cases[0]);
    /* The JSON form of the slide's far row names its path. */
    expect_error_word(rpct(c, "check.batch", "{\"model\":\"slide\",\"joints\":[[0,0],[1e308,0]]}"),
                      -32602, "params.joints[1]", "beyond the largest double", "json far row");
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        free(p[k]);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

/* The rows of joints_f64 count and cost what the JSON rows do, refused
 * with the same reply before anything is decoded: max_batch_configurations,
 * max_request_work on a worker, max_loop_work in a line that runs on the
 * event loop; and a check.batch line of 64 KiB and more goes to a worker
 * (proto/PROTOCOL.md, "The event loop's budget") like its JSON twin. */
static void joints_f64_limited_and_priced_as_json_joints(void **state)
{
    (void)state;
    static const char *const extra[] = {"--max-batch-configurations",
                                        "3000",
                                        "--max-request-work",
                                        "10000",
                                        "--max-loop-work",
                                        "2000",
                                        "--threads",
                                        "2",
                                        NULL};
    rh_daemon *d = start(extra);
    rh_conn *c = connect_ok(d, false);
    put_planar(c, "planar", "");
    create_post_scene(c);
    enum { MAX_ROWS = 3001 };
    double *q = malloc(MAX_ROWS * 2 * sizeof *q);
    assert_non_null(q);
    uint64_t seed = 99;
    for (size_t i = 0; i < MAX_ROWS * 2; i++)
        q[i] = (urand(&seed) - 0.5) * 4.0;
    const size_t sizes[] = {1, 10, 100, 1000, 3000, 3001};
    bool accepted = false, priced_out = false, too_many = false;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        textbuf jt = {0};
        json_table(&jt, q, n, 2);
        char *bin = f64_text(q, n * 2);
        cJSON *r = same_reply(c, "check.batch", "\"model\":\"planar\",\"scene\":\"cell\",",
                              "joints", jt.p, "joints_f64", bin, "", "priced batch");
        const cJSON *lj = at(r, "error.data.limit");
        const char *limit = cJSON_IsString(lj) ? lj->valuestring : NULL;
        if (at(r, "result"))
            accepted = true;
        else if (limit && strcmp(limit, "max_request_work") == 0)
            priced_out = true;
        else if (limit && strcmp(limit, "max_batch_configurations") == 0)
            too_many = n == 3001;
        else
            fail_msg("%zu rows: %s", n, show(r));
        cJSON_Delete(r);
        /* The same waypoints in a motion: limited alike. */
        if (n == 3001 || n == 10) {
            r = same_reply(c, "check.motion", "\"model\":\"planar\",", "path", jt.p, "path_f64",
                           bin, ",\"resolution\":10", "limited motion");
            assert_true(
                n == 10 ? at(r, "result") != NULL
                        : strcmp(str_at(r, "error.data.limit"), "max_batch_configurations") == 0);
            cJSON_Delete(r);
        }
        free(jt.p);
        free(bin);
    }
    assert_true(accepted && priced_out && too_many);

    /* A line of more than 64 KiB (4500 rows of 2 values: 96 KB of base64,
     * priced at more than max_loop_work) runs on a worker, with
     * max_request_work, as its JSON twin does... */
    rh_close(c);
    stop_ok(d);
    static const char *const loop_extra[] = {"--max-loop-work", "2000", "--threads", "2", NULL};
    d = start(loop_extra);
    c = connect_ok(d, false);
    put_planar(c, "planar", "");
    enum { BIG = 4500 };
    double *bq = malloc(BIG * 2 * sizeof *bq);
    assert_non_null(bq);
    for (size_t i = 0; i < BIG * 2; i++)
        bq[i] = (urand(&seed) - 0.5) * 4.0;
    char *bbin = f64_text(bq, BIG * 2);
    assert_true(strlen(bbin) > ((size_t)64 << 10));
    textbuf jt = {0};
    json_table(&jt, bq, BIG, 2);
    cJSON *r = same_reply(c, "check.batch", "\"model\":\"planar\",", "joints", jt.p, "joints_f64",
                          bbin, "", "a big line");
    assert_int_equal(cJSON_GetArraySize(at(result_of(r, "big batch"), "results")), BIG);
    cJSON_Delete(r);
    /* ...while in a line that holds a mutation, which the event loop runs,
     * both are refused with max_loop_work before anything is decoded. */
    textbuf a = {0}, b = {0};
    tb_printf(&a,
              "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":"
              "\"s1\"}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"check.batch\",\"params\":{"
              "\"model\":\"planar\",\"joints\":%s}}]",
              jt.p);
    tb_printf(&b,
              "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":{\"scene\":"
              "\"s2\"}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"check.batch\",\"params\":{"
              "\"model\":\"planar\",\"joints_f64\":\"%s\"}}]",
              bbin);
    cJSON *ra = call_json(c, a.p), *rb = call_json(c, b.p);
    const cJSON *ea = at(cJSON_GetArrayItem(ra, 1), "error"),
                *eb = at(cJSON_GetArrayItem(rb, 1), "error");
    assert_non_null(ea);
    assert_non_null(eb);
    assert_string_equal(str_at(ea, "data.limit"), "max_loop_work");
    assert_true(json_same(ea, eb));
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    free(a.p);
    free(b.p);
    free(jt.p);
    free(bbin);
    free(bq);
    free(q);
    expect_pong(c);
    rh_close(c);
    stop_ok(d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        DAEMON_TEST(urdf_matches_link_by_link_and_json_twin),
        DAEMON_TEST(urdf_refusals),
        DAEMON_TEST(urdf_large_and_over_limit),
        DAEMON_TEST(json_kinematic_refusals),
        DAEMON_TEST(joint_limits_in_results),
        DAEMON_TEST(allowed_scene_pairs),
        DAEMON_TEST(attached_shapes),
        DAEMON_TEST(model_fk_by_hand),
        DAEMON_TEST(check_motion_discrete_and_certified),
        DAEMON_TEST(check_motion_refuses_bad_params_at_their_path),
        DAEMON_TEST(check_motion_over_the_work_limit_refused),
        DAEMON_TEST(frame_indexed_model_refuses_joints),
        DAEMON_TEST(check_refuses_bad_joints_and_params_at_their_path),
        DAEMON_TEST(check_takes_huge_and_empty_values_as_given),
        DAEMON_TEST(check_batch_refuses_bad_tables_at_their_path),
        DAEMON_TEST(model_fk_refuses_bad_params_at_their_path),
        DAEMON_TEST(zero_dof_models_take_empty_joint_vectors),
        DAEMON_TEST(model_put_of_odd_trees),
        DAEMON_TEST(deep_and_many_attached_shapes_refused),
        DAEMON_TEST(motion_through_nonfinite_states),
        DAEMON_TEST(batch_table_fast_path_equals_general_path),
        DAEMON_TEST(groups_and_states_equal_full_vectors),
        DAEMON_TEST(meshes_over_the_work_limit_refused),
        DAEMON_TEST(joints_f64_answers_as_json_joints),
        DAEMON_TEST(joints_f64_refused_at_their_path),
        DAEMON_TEST(joints_f64_limited_and_priced_as_json_joints),
    };
    return run_daemon_tests(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
