/* SPDX-License-Identifier: MIT */
/* Helpers shared by the daemon test programs; see daemon_util.h. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_util.h"

int run_daemon_tests(int argc, char **argv, const struct CMUnitTest *tests, size_t n)
{
    if (!rh_init(argc, argv))
        return 2;
    return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}

/* Starts a daemon with extra flags and fails the test unless it comes up. */
rh_daemon *start_with(const rh_opts *o)
{
    rh_daemon *d = rh_start(o);
    assert_non_null(d);
    if (!d->up) {
        rh_dump_log(d);
        fail_msg("daemon did not start");
    }
    return d;
}

rh_daemon *start(const char *const *extra)
{
    rh_opts o = {NULL, NULL, extra, false};
    return start_with(&o);
}

/* SIGTERM, expect exit status 0 (under valgrind: no errors, no leaks), and
 * release the daemon. */
void stop_ok(rh_daemon *d)
{
    int code = rh_stop(d, rh_ms(RH_TIMEOUT_MS));
    if (code != 0) {
        rh_dump_log(d);
        fail_msg("daemon exit status %d, want 0", code);
    }
    rh_destroy(d);
}

rh_conn *connect_ok(const rh_daemon *d, bool tcp)
{
    rh_conn *c = rh_connect(d, tcp);
    if (!c)
        fail_msg("cannot connect over %s", tcp ? "tcp" : "unix");
    return c;
}

/* Reads one reply line (fails on timeout / EOF) and parses it.  The caller
 * deletes the tree. */
cJSON *read_json(rh_conn *c)
{
    const char *line;
    size_t len;
    rh_read_status st = rh_read_line(c, rh_ms(RH_TIMEOUT_MS), &line, &len);
    if (st != RH_LINE)
        fail_msg("no reply line (%s)", st == RH_TIMEOUT ? "timeout" : "connection closed");
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!j)
        fail_msg("reply is not JSON: %.*s", (int)len, line);
    return j;
}

cJSON *call_json(rh_conn *c, const char *request)
{
    if (!rh_send_line(c, request))
        fail_msg("cannot send %s", request);
    return read_json(c);
}

/* Sends a request and returns the reply line (valid until the next read). */
const char *call_line(rh_conn *c, const char *request)
{
    const char *line = rh_call(c, request);
    if (!line)
        fail_msg("no reply to %s", request);
    return line;
}

void expect_pong(rh_conn *c)
{
    assert_string_equal(call_line(c, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}"),
                        "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{\"pong\":true}}");
}

/* Value at a dotted path ("error.data.path"); NULL if missing. */
const cJSON *at(const cJSON *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = cJSON_GetObjectItemCaseSensitive(j, k);
    return j;
}

double num_at(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", path);
    return v->valuedouble;
}

const char *str_at(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);
    if (!cJSON_IsString(v))
        fail_msg("%s is not a string", path);
    return v->valuestring;
}

/* Exact structural equality: same types, numbers equal as doubles, strings
 * equal, array elements and object members equal and in the same order. */
bool json_same(const cJSON *a, const cJSON *b)
{
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
        return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            if ((a->type & 0xFF) == cJSON_Object && strcmp(x->string, y->string) != 0)
                return false;
            if (!json_same(x, y))
                return false;
        }
        return x == NULL && y == NULL;
    }
    default:
        return true; /* null, true, false: the type says it all */
    }
}

/* Prints a tree to a fresh string for messages (caller frees). */
char *show(const cJSON *j)
{
    return cJSON_PrintUnformatted(j);
}

/* Sends raw bytes (no newline added). */
void send_raw(rh_conn *c, const char *buf, size_t n)
{
    if (!rh_send(c, buf, n))
        fail_msg("cannot send %zu bytes", n);
}

/* ---- random shapes ---------------------------------------------------------------------- */

uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

unsigned rng_below(rng *r, unsigned n)
{
    return (unsigned)(rng_next(r) % n);
}

/* Multiples of 1/8 in [-4, 4]: exact in binary and short in decimal. */
double rng_coord(rng *r)
{
    return ((int)rng_below(r, 65) - 32) / 8.0;
}

rp_vec3 rng_vec(rng *r)
{
    rp_vec3 v = {rng_coord(r), rng_coord(r), rng_coord(r)};
    return v;
}

rp_shape rng_shape(rng *r)
{
    double radius = rng_below(r, 17) / 8.0;
    rp_shape s;
    if (rng_below(r, 2) == 0) {
        rp_sphere sp;
        assert_int_equal(rp_sphere_new(rng_vec(r), radius, &sp), RP_OK);
        s = rp_shape_from_sphere(sp);
    } else {
        rp_capsule cp;
        rp_vec3 a = rng_vec(r), b = rng_vec(r);
        assert_int_equal(rp_capsule_new(a, b, radius, &cp), RP_OK);
        s = rp_shape_from_capsule(cp);
    }
    return s;
}

cJSON *vec_json(rp_vec3 v)
{
    double xyz[3] = {v.x, v.y, v.z};
    return cJSON_CreateDoubleArray(xyz, 3);
}

void expect_error(cJSON *r, int code, const char *path)
{
    if (!at(r, "error") || num_at(r, "error.code") != code ||
        (path && (!cJSON_IsString(at(r, "error.data.path")) ||
                  strcmp(str_at(r, "error.data.path"), path) != 0))) {
        char *s = show(r);
        fail_msg("want error %d%s%s, got %s", code, path ? " at " : "", path ? path : "", s);
    }
    cJSON_Delete(r);
}

rp_shape rng_solid(rng *r)
{
    if (rng_below(r, 4) == 0) {
        rp_halfspace h;
        rp_vec3 n = rng_vec(r);
        if (n.x == 0 && n.y == 0 && n.z == 0)
            n.z = 1;
        assert_int_equal(rp_halfspace_new(n, rng_coord(r), &h), RP_OK);
        return rp_shape_from_halfspace(h);
    }
    rp_vec3 e = rng_vec(r);
    e = (rp_vec3){fabs(e.x) / 2, fabs(e.y) / 2, fabs(e.z) / 2};
    double q[4] = {1, 0, 0, 0};
    if (rng_below(r, 2))
        for (int i = 0; i < 4; i++)
            q[i] = rng_coord(r);
    rp_box b;
    if (rp_box_new(rng_vec(r), e, q[0], q[1], q[2], q[3], &b) != RP_OK)
        assert_int_equal(rp_box_new(rng_vec(r), e, 1, 0, 0, 0, &b), RP_OK);
    return rp_shape_from_box(b);
}

/* The protocol's shape object, members in the order the server prints. */
cJSON *shape_json(const rp_shape *s)
{
    cJSON *outer = cJSON_CreateObject(), *in = cJSON_CreateObject();
    if (s->kind == RP_SHAPE_BOX) {
        cJSON_AddItemToObject(in, "center", vec_json(s->box.center));
        cJSON_AddItemToObject(in, "half_extents", vec_json(s->box.half_extents));
        cJSON *q = cJSON_AddObjectToObject(in, "rotation");
        cJSON_AddNumberToObject(q, "w", s->box.rotation.w);
        cJSON_AddNumberToObject(q, "x", s->box.rotation.x);
        cJSON_AddNumberToObject(q, "y", s->box.rotation.y);
        cJSON_AddNumberToObject(q, "z", s->box.rotation.z);
        cJSON_AddItemToObject(outer, "box", in);
    } else if (s->kind == RP_SHAPE_HALFSPACE) {
        cJSON_AddItemToObject(in, "normal", vec_json(s->halfspace.normal));
        cJSON_AddNumberToObject(in, "offset", s->halfspace.offset);
        cJSON_AddItemToObject(outer, "halfspace", in);
    } else if (s->kind == RP_SHAPE_SPHERE) {
        cJSON_AddItemToObject(in, "center", vec_json(s->sphere.center));
        cJSON_AddNumberToObject(in, "radius", s->sphere.radius);
        cJSON_AddItemToObject(outer, "sphere", in);
    } else {
        cJSON_AddItemToObject(in, "a", vec_json(s->capsule.a));
        cJSON_AddItemToObject(in, "b", vec_json(s->capsule.b));
        cJSON_AddNumberToObject(in, "radius", s->capsule.radius);
        cJSON_AddItemToObject(outer, "capsule", in);
    }
    return outer;
}

/* ---- large requests ---------------------------------------------------------------------- */

/* Appends printf-style text, growing the buffer as needed. */
void tb_printf(textbuf *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if (t->p && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

const char *const bp_flags[] = {"--write-pause-bytes", "65536", "--write-kill-bytes", "1048576",
                                NULL};

/* A scene whose scene.get reply is about `shapes` * 60 bytes. */
void create_big_scene(rh_conn *c, const char *name, int shapes)
{
    size_t cap = (size_t)shapes * 80 + 256, n = 0;
    char *buf = malloc(cap);
    n += (size_t)snprintf(buf, cap,
                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"scene.create\",\"params\":"
                          "{\"scene\":\"%s\",\"shapes\":{",
                          name);
    for (int i = 0; i < shapes; i++)
        n += (size_t)snprintf(buf + n, cap - n,
                              "%s\"s%05d\":{\"sphere\":{\"center\":[%d,%d.5,-%d],\"radius\":0.25}}",
                              i ? "," : "", i, i, i % 7, i % 13);
    snprintf(buf + n, cap - n, "}}}");
    cJSON *r = call_json(c, buf);
    assert_non_null(at(r, "result"));
    cJSON_Delete(r);
    free(buf);
}

const char *temp_dir_ok(void)
{
    const char *dir = rh_temp_dir();
    assert_non_null(dir);
    return dir;
}

/* Writes `token` into a fresh file of the given mode; returns its path. */
const char *token_file(const char *token, mode_t mode)
{
    static char path[512];
    const char *dir = temp_dir_ok();
    snprintf(path, sizeof path, "%s/token-%o", dir, (unsigned)mode);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(token, f);
    fputs("\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}
