/* SPDX-License-Identifier: MIT */
/*
 * Snapshot images: see snapshot.h.
 */
#define _POSIX_C_SOURCE 200809L /* write under -std=c11 */

#include "snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "journal.h" /* rpj_crc32c */

#define FILE_HEADER 80u
#define FILE_HEADER_V1 48u
#define SECTION_HEADER 20u
#define TRAILER 16u
enum { SECTION_SCENE = 1, SECTION_MODEL = 2 };
static const char MAGIC[8] = {'R', 'E', 'P', 'O', 'S', 'E', 'S', '\n'};
static const char END_MAGIC[8] = {'R', 'E', 'P', 'O', 'S', 'E', 'Z', '\n'};

/* ---- writing --------------------------------------------------------------------------- */

/* A buffered writer with a running CRC (reset per section). */
typedef struct sink {
    int fd;
    uint8_t buf[1 << 16];
    size_t len;
    uint64_t total;
    uint32_t crc;
    int err;
} sink;

static void flush_out(sink *o)
{
    size_t done = 0;
    while (!o->err && done < o->len) {
        ssize_t w = write(o->fd, o->buf + done, o->len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->err = w < 0 ? errno : EIO;
        else
            done += (size_t)w;
    }
    o->len = 0;
}

static void emit(sink *o, const void *p, size_t n)
{
    const uint8_t *b = p;
    o->crc = rpj_crc32c(o->crc, b, n);
    o->total += n;
    while (n && !o->err) {
        size_t room = sizeof o->buf - o->len, k = n < room ? n : room;
        memcpy(o->buf + o->len, b, k);
        o->len += k;
        b += k;
        n -= k;
        if (o->len == sizeof o->buf)
            flush_out(o);
    }
}

static void emit32(sink *o, uint32_t v)
{
    uint8_t b[4];
    rpj_put32(b, v);
    emit(o, b, 4);
}

static void emit64(sink *o, uint64_t v)
{
    uint8_t b[8];
    rpj_put64(b, v);
    emit(o, b, 8);
}

static void emit_double(sink *o, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    emit64(o, u);
}

static void emit_str(sink *o, const char *s, size_t n)
{
    emit32(o, (uint32_t)n);
    emit(o, s, n);
}

static void section_begin(sink *o, uint32_t kind, uint64_t len)
{
    uint8_t h[SECTION_HEADER];
    rpj_put32(h, kind);
    rpj_put32(h + 4, 0);
    rpj_put64(h + 8, len);
    rpj_put32(h + 16, rpj_crc32c(0, h, 16));
    emit(o, h, sizeof h);
    o->crc = 0; /* the payload's own CRC starts here */
}

static void section_end(sink *o)
{
    uint32_t c = o->crc;
    emit32(o, c);
}

/* A shape in a scene payload: its kind byte, then its doubles (snapshot.h).
 * The kind byte is rp_shape_kind's value. */
_Static_assert(RP_SHAPE_SPHERE == 0 && RP_SHAPE_CAPSULE == 1 && RP_SHAPE_BOX == 2 &&
                   RP_SHAPE_HALFSPACE == 3,
               "a snapshot's shape kind bytes are rp_shape_kind's values");
/* The doubles of each kind, by kind byte. */
static const size_t KIND_DOUBLES[] = {4, 7, 10, 4};

static size_t shape_bytes(rp_shape_kind kind)
{
    return 1 + 8 * KIND_DOUBLES[kind];
}

static void emit_vec3(sink *o, rp_vec3 v)
{
    emit_double(o, v.x);
    emit_double(o, v.y);
    emit_double(o, v.z);
}

static void emit_shape(sink *o, const rp_shape *s)
{
    uint8_t kind = (uint8_t)s->kind;
    emit(o, &kind, 1);
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        emit_vec3(o, s->sphere.center);
        emit_double(o, s->sphere.radius);
        break;
    case RP_SHAPE_CAPSULE:
        emit_vec3(o, s->capsule.a);
        emit_vec3(o, s->capsule.b);
        emit_double(o, s->capsule.radius);
        break;
    case RP_SHAPE_BOX:
        emit_vec3(o, s->box.center);
        emit_vec3(o, s->box.half_extents);
        emit_double(o, s->box.rotation.w);
        emit_double(o, s->box.rotation.x);
        emit_double(o, s->box.rotation.y);
        emit_double(o, s->box.rotation.z);
        break;
    case RP_SHAPE_HALFSPACE:
        emit_vec3(o, s->halfspace.normal);
        emit_double(o, s->halfspace.offset);
        break;
    }
}

int rps_write(int fd, const rp_store *st, uint64_t revision, const rps_ids *ids,
              const rps_model *models, size_t n_models, uint64_t *bytes)
{
    sink *o = malloc(sizeof *o);
    if (!o)
        return ENOMEM;
    o->fd = fd;
    o->len = 0;
    o->total = 0;
    o->crc = 0;
    o->err = 0;
    size_t n_scenes = rp_store_scene_count(st);
    uint8_t h[FILE_HEADER];
    memset(h, 0, sizeof h);
    memcpy(h, MAGIC, sizeof MAGIC);
    rpj_put32(h + 8, RPS_FORMAT);
    rpj_put64(h + 16, revision);
    rpj_put64(h + 24, n_scenes);
    rpj_put64(h + 32, n_models);
    rpj_put64(h + 40, ids->snapshot_id);
    rpj_put64(h + 48, ids->journal_id);
    rpj_put64(h + 56, ids->prev_journal_id);
    rpj_put32(h + 76, rpj_crc32c(0, h, 76));
    emit(o, h, sizeof h);
    /* Models first (format 4): a scene's robot instances will name them. */
    for (size_t i = 0; i < n_models && !o->err; i++) {
        const rps_model *m = &models[i];
        size_t nl = strlen(m->name);
        section_begin(o, SECTION_MODEL, 4 + nl + 8 + 4 + m->json_len);
        emit_str(o, m->name, nl);
        emit64(o, m->revision);
        emit_str(o, m->json, m->json_len);
        section_end(o);
    }
    for (size_t i = 0; i < n_scenes && !o->err; i++) {
        const rp_scene *sc = rp_store_scene_at(st, i);
        const char *name = rp_scene_name(sc);
        size_t count = rp_scene_shape_count(sc), own = 0, n_obj = rp_scene_object_count(sc);
        uint64_t len = 4 + strlen(name) + 8 + 8 + 8;
        for (size_t k = 0; k < count; k++) {
            if (rp_scene_shape_object(sc, k))
                continue; /* written with its object */
            own++;
            len += 4 + strlen(rp_scene_id_at(sc, k)) + shape_bytes(rp_scene_shape_at(sc, k).kind);
        }
        for (size_t j = 0; j < n_obj; j++) {
            const rp_object *ob = rp_scene_object_at(sc, j);
            len += 4 + strlen(rp_object_name(ob)) + 1 + 12 * 8;
            if (rp_object_cloud(ob)) {
                len += 8 + 8 + 12 * (uint64_t)rp_cloud_size(rp_object_cloud(ob));
                continue;
            }
            if (rp_object_is_robot(ob)) {
                const rp_model *m = rp_object_model(ob);
                len += 4 + strlen(rp_model_name(m)) + 4 + 8 * rp_model_dof(m);
                continue;
            }
            len += 8;
            if (rp_object_attached_robot(ob))
                len += 4 + strlen(rp_object_attached_robot(ob)) + 4 +
                       strlen(rp_object_attached_link(sc, ob)) + 12 * 8;
            for (size_t k = 0; k < rp_object_shape_count(ob); k++) {
                const rp_shape_put *p = rp_object_shape_at(ob, k);
                len += 4 + strlen(p->id) + shape_bytes(p->shape.kind);
            }
        }
        section_begin(o, SECTION_SCENE, len);
        emit_str(o, name, strlen(name));
        emit64(o, rp_scene_revision(sc));
        emit64(o, own);
        for (size_t k = 0; k < count && !o->err; k++) {
            if (rp_scene_shape_object(sc, k))
                continue;
            const char *id = rp_scene_id_at(sc, k);
            rp_shape shape = rp_scene_shape_at(sc, k);
            emit_str(o, id, strlen(id));
            emit_shape(o, &shape);
        }
        emit64(o, n_obj);
        for (size_t j = 0; j < n_obj && !o->err; j++) {
            const rp_object *ob = rp_scene_object_at(sc, j);
            emit_str(o, rp_object_name(ob), strlen(rp_object_name(ob)));
            uint8_t kind = rp_object_is_robot(ob)         ? 1
                           : rp_object_attached_robot(ob) ? 2
                           : rp_object_cloud(ob)          ? 3
                                                          : 0;
            emit(o, &kind, 1);
            rp_transform pose = rp_object_pose(ob);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    emit_double(o, pose.r[r][c]);
            emit_vec3(o, pose.t);
            if (kind == 3) { /* a cloud: radius and centres */
                const rp_cloud *cl = rp_object_cloud(ob);
                const float *xyz = rp_cloud_centres(cl);
                emit_double(o, rp_cloud_radius(cl));
                emit64(o, rp_cloud_size(cl));
                for (size_t k = 0; k < 3 * rp_cloud_size(cl) && !o->err; k++) {
                    uint32_t u;
                    memcpy(&u, &xyz[k], sizeof u);
                    emit32(o, u);
                }
                continue;
            }
            if (kind == 1) { /* a robot: its model and joints; its shapes are the model's */
                const rp_model *m = rp_object_model(ob);
                emit_str(o, rp_model_name(m), strlen(rp_model_name(m)));
                emit32(o, (uint32_t)rp_model_dof(m));
                for (size_t k = 0; k < rp_model_dof(m); k++)
                    emit_double(o, rp_object_joints(ob)[k]);
                continue;
            }
            emit64(o, rp_object_shape_count(ob));
            for (size_t k = 0; k < rp_object_shape_count(ob); k++) {
                const rp_shape_put *p = rp_object_shape_at(ob, k);
                emit_str(o, p->id, strlen(p->id));
                emit_shape(o, &p->shape);
            }
            if (kind == 2) { /* attached: the robot, the link, the pose in its frame */
                const char *robot = rp_object_attached_robot(ob);
                const char *link = rp_object_attached_link(sc, ob);
                emit_str(o, robot, strlen(robot));
                emit_str(o, link, strlen(link));
                rp_transform rel = rp_object_attached_rel(ob);
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++)
                        emit_double(o, rel.r[r][c]);
                emit_vec3(o, rel.t);
            }
        }
        section_end(o);
    }
    uint8_t t[TRAILER];
    memcpy(t, END_MAGIC, sizeof END_MAGIC);
    rpj_put32(t + 8, 0);
    rpj_put32(t + 12, rpj_crc32c(0, t, 12));
    emit(o, t, sizeof t);
    flush_out(o);
    int err = o->err;
    if (bytes)
        *bytes = o->total;
    free(o);
    return err;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct in {
    const uint8_t *p, *end;
    bool bad;
} in;

static const uint8_t *take(in *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static uint32_t take32(in *r)
{
    const uint8_t *q = take(r, 4);
    return q ? rpj_get32(q) : 0;
}

static uint64_t take64(in *r)
{
    const uint8_t *q = take(r, 8);
    return q ? rpj_get64(q) : 0;
}

static double take_double(in *r)
{
    uint64_t u = take64(r);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* A string of at most `max` bytes, copied NUL-terminated into dst (which
 * holds max + 1); false when it does not fit or holds a NUL. */
static bool take_str(in *r, char *dst, size_t max)
{
    uint32_t n = take32(r);
    const uint8_t *q = n <= max ? take(r, n) : NULL;
    if (!q) {
        r->bad = true;
        return false;
    }
    if (memchr(q, '\0', n)) {
        r->bad = true;
        return false;
    }
    memcpy(dst, q, n);
    dst[n] = '\0';
    return true;
}

static rp_vec3 take_vec3(in *r)
{
    rp_vec3 v;
    v.x = take_double(r);
    v.y = take_double(r);
    v.z = take_double(r);
    return v;
}

/* One shape (a kind byte, then its doubles); false when the payload ends
 * first, the kind is not one the image's format has (`kinds` of them), or
 * the shape is not valid. */
static bool take_shape(in *r, uint8_t kinds, rp_shape *s)
{
    const uint8_t *kind = take(r, 1);
    if (!kind || *kind >= kinds)
        return false;
    memset(s, 0, sizeof *s);
    s->kind = (rp_shape_kind)*kind;
    switch (s->kind) {
    case RP_SHAPE_SPHERE:
        s->sphere.center = take_vec3(r);
        s->sphere.radius = take_double(r);
        break;
    case RP_SHAPE_CAPSULE:
        s->capsule.a = take_vec3(r);
        s->capsule.b = take_vec3(r);
        s->capsule.radius = take_double(r);
        break;
    case RP_SHAPE_BOX:
        s->box.center = take_vec3(r);
        s->box.half_extents = take_vec3(r);
        s->box.rotation.w = take_double(r);
        s->box.rotation.x = take_double(r);
        s->box.rotation.y = take_double(r);
        s->box.rotation.z = take_double(r);
        break;
    case RP_SHAPE_HALFSPACE:
        s->halfspace.normal = take_vec3(r);
        s->halfspace.offset = take_double(r);
        break;
    }
    return !r->bad && rp_shape_validate(s) == RP_OK;
}

static bool fail(rps_load_result *res, size_t at, const char *why)
{
    res->ok = false;
    res->bad_offset = at;
    res->reason = why;
    return false;
}

/* An attached object of an image, fixed again after its scene's put. */
typedef struct attach_at {
    const char *object, *robot, *link;
    rp_transform rel, pose;
} attach_at;

/* One scene section's payload into the store, its shapes of the first
 * `kinds` kinds.  Names rise (last: the previous one's), as the writer puts
 * them: the store keeps scenes sorted, and anything else is not an image it
 * wrote. */
static bool load_scene(const uint8_t *p, size_t n, uint8_t kinds, uint8_t objects, rp_store *st,
                       char *last, const char **why)
{
    in r = {p, p + n, false};
    char name[RP_NAME_MAX + 1];
    if (!take_str(&r, name, RP_NAME_MAX) || !rp_codec_valid_name(name)) {
        *why = "bad scene name";
        return false;
    }
    if (strcmp(name, last) <= 0) {
        *why = "scenes out of order";
        return false;
    }
    memcpy(last, name, strlen(name) + 1);
    uint64_t rev = take64(&r), count = take64(&r);
    /* Each shape takes at least 4 + 1 + 1 + 32 bytes: a count the payload
     * cannot hold is damage, not a reason to allocate. */
    if (r.bad || count > n / 38 || rev == 0) {
        *why = "bad scene header";
        return false;
    }
    rp_shape_put *puts = malloc((count ? count : 1) * sizeof *puts);
    char *ids = malloc(count ? n : 1); /* every id fits in the payload's size */
    if (!puts || !ids) {
        free(puts);
        free(ids);
        *why = "out of memory";
        return false;
    }
    size_t used = 0;
    bool ok = true;
    for (uint64_t k = 0; k < count; k++) {
        char id[RP_NAME_MAX + 1];
        rp_shape s;
        ok = take_str(&r, id, RP_NAME_MAX) && rp_codec_valid_id(id) && take_shape(&r, kinds, &s);
        if (!ok)
            break;
        size_t len = strlen(id) + 1;
        memcpy(ids + used, id, len);
        puts[k].id = ids + used;
        puts[k].shape = s;
        used += len;
    }
    /* The objects (format 4): their shapes are read after the scene's
     * own, into the same id space (a valid image fits it). */
    uint64_t n_obj = objects && ok ? take64(&r) : 0;
    rp_object_put *objs = NULL;
    attach_at *att = NULL;
    size_t n_att = 0;
    rp_robot_put *robots = NULL;
    size_t n_objs = 0, n_robots = 0, n_clouds = 0;
    rp_cloud_put *clouds = NULL;
    double *joints = NULL;
    rp_shape_put *local = NULL;
    char *lids = NULL;
    if (ok && (r.bad || n_obj > n / 110)) /* an object takes 110 bytes or more */
        ok = false;
    if (ok && n_obj) {
        objs = malloc(n_obj * sizeof *objs);
        robots = malloc(n_obj * sizeof *robots);
        att = malloc(n_obj * sizeof *att);
        clouds = malloc(n_obj * sizeof *clouds);
        ok = att != NULL && clouds != NULL;
        joints = malloc(n); /* every joint value fits in the payload's size */
        local = malloc((n / 38 + 1) * sizeof *local);
        lids = malloc(n);
        if (!objs || !robots || !joints || !local || !lids)
            ok = false;
    }
    size_t n_local = 0, lused = 0;
    size_t n_joints = 0;
    for (uint64_t j = 0; ok && j < n_obj; j++) {
        char oname[RP_NAME_MAX + 1];
        const uint8_t *kind = NULL;
        ok = take_str(&r, oname, RP_NAME_MAX) && rp_codec_valid_id(oname) &&
             (kind = take(&r, 1)) != NULL && *kind < objects;
        if (!ok)
            break;
        size_t ol = strlen(oname) + 1;
        memcpy(lids + lused, oname, ol);
        const char *saved = lids + lused;
        lused += ol;
        rp_transform pose;
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                pose.r[a][c] = take_double(&r);
        pose.t = take_vec3(&r);
        if (*kind == 3) {
            /* A cloud: its spheres as they were built (their order kept:
             * rp_cloud_new orders centres by themselves). */
            double radius = take_double(&r);
            uint64_t m = take64(&r);
            if (r.bad || m > (uint64_t)(r.end - r.p) / 12) {
                ok = false;
                break;
            }
            float *xyz = malloc(m ? 12 * (size_t)m : 1);
            if (!xyz) {
                ok = false;
                break;
            }
            for (uint64_t k = 0; k < 3 * m; k++) {
                uint32_t u = take32(&r);
                memcpy(&xyz[k], &u, sizeof u);
            }
            rp_cloud *cl = NULL;
            ok = rp_cloud_new(xyz, (size_t)m, radius, 0.0, &cl, NULL) == RP_OK;
            free(xyz);
            if (!ok)
                break;
            clouds[n_clouds].name = saved;
            clouds[n_clouds++].cloud = cl;
            continue;
        }
        if (*kind == 1) {
            /* A robot instance: its model (loaded before the scenes) and
             * joint vector. */
            char model[RP_NAME_MAX + 1];
            ok = take_str(&r, model, RP_NAME_MAX) && rp_codec_valid_name(model);
            uint32_t dof = ok ? take32(&r) : 0;
            const rp_model *m = ok ? rp_store_model_find(st, model) : NULL;
            if (!ok || r.bad || !m || dof != rp_model_dof(m) || n_joints + dof > n / 8) {
                ok = false;
                break;
            }
            size_t ml = strlen(model) + 1;
            memcpy(lids + lused, model, ml);
            robots[n_robots] = (rp_robot_put){saved, lids + lused, &joints[n_joints], pose};
            lused += ml;
            for (uint32_t k = 0; k < dof; k++)
                joints[n_joints++] = take_double(&r);
            n_robots++;
            continue;
        }
        objs[n_objs].name = saved;
        objs[n_objs].pose = pose;
        uint64_t ns = take64(&r);
        if (r.bad || ns > n / 38 - n_local) {
            ok = false;
            break;
        }
        objs[n_objs].shapes = &local[n_local];
        objs[n_objs].n_shapes = ns;
        n_objs++;
        for (uint64_t k = 0; ok && k < ns; k++) {
            char id[RP_NAME_MAX + 1];
            ok = take_str(&r, id, RP_NAME_MAX) && rp_codec_valid_id(id) &&
                 take_shape(&r, kinds, &local[n_local].shape);
            if (!ok)
                break;
            size_t len = strlen(id) + 1;
            memcpy(lids + lused, id, len);
            local[n_local++].id = lids + lused;
            lused += len;
        }
        if (ok && *kind == 2) {
            /* Attached: fixed again once the robots stand (below). */
            char robot[RP_NAME_MAX + 1], link[RP_NAME_MAX + 1];
            ok = take_str(&r, robot, RP_NAME_MAX) && take_str(&r, link, RP_NAME_MAX);
            if (!ok)
                break;
            attach_at *a = &att[n_att++];
            a->object = saved;
            a->pose = pose;
            size_t rl = strlen(robot) + 1, ll = strlen(link) + 1;
            memcpy(lids + lused, robot, rl);
            a->robot = lids + lused;
            lused += rl;
            memcpy(lids + lused, link, ll);
            a->link = lids + lused;
            lused += ll;
            for (int x = 0; x < 3; x++)
                for (int c = 0; c < 3; c++)
                    a->rel.r[x][c] = take_double(&r);
            a->rel.t = take_vec3(&r);
        }
    }
    /* The put and each attach take a revision: the last is the scene's. */
    if (ok && rev <= n_att)
        ok = false;
    if (!ok || r.p != r.end) {
        for (size_t k = 0; k < n_clouds; k++)
            rp_cloud_release(clouds[k].cloud);
        free(clouds);
        free(att);
        free(puts);
        free(ids);
        free(objs);
        free(robots);
        free(joints);
        free(local);
        free(lids);
        *why = "bad shape";
        return false;
    }
    rp_store_set_revision(st, rev - 1 - n_att);
    rp_cell cell = {puts, count, objs, n_objs, robots, n_robots, clouds, n_clouds};
    rp_status status = n_obj ? rp_store_put_cell(st, name, &cell, NULL, true, NULL, NULL, NULL)
                             : rp_store_create(st, name, puts, count, NULL);
    for (size_t a = 0; a < n_att && status == RP_OK; a++) {
        status = rp_store_attach(st, name, att[a].object, att[a].robot, att[a].link, &att[a].rel,
                                 NULL, NULL, NULL, NULL);
        /* Attached, its pose is its link's ∘ rel: an image whose pose is
         * not was not written by a daemon. */
        const rp_object *ob =
            status ? NULL : rp_scene_object_find(rp_store_find(st, name), att[a].object);
        rp_transform now = ob ? rp_object_pose(ob) : att[a].pose;
        if (!status && memcmp(&now, &att[a].pose, sizeof now) != 0)
            status = RP_ERR_INVALID_ARG;
    }
    for (size_t k = 0; k < n_clouds; k++)
        rp_cloud_release(clouds[k].cloud);
    free(clouds);
    free(att);
    free(puts);
    free(ids);
    free(objs);
    free(robots);
    free(joints);
    free(local);
    free(lids);
    if (status != RP_OK) {
        *why = status == RP_ERR_EXISTS ? "a scene twice, or a shape id twice" : "scene refused";
        return false;
    }
    return true;
}

bool rps_load(const uint8_t *buf, size_t n, rp_store *st, rps_model_fn fn, void *ctx,
              rps_load_result *out)
{
    memset(out, 0, sizeof *out);
    if (n < FILE_HEADER_V1 || memcmp(buf, MAGIC, sizeof MAGIC) != 0) {
        out->bad_format = n >= sizeof MAGIC && memcmp(buf, MAGIC, sizeof MAGIC) != 0;
        return fail(out, 0,
                    out->bad_format ? "not a repose snapshot (bad magic)"
                                    : "file shorter than its header");
    }
    /* The version comes before the checksum, whose place it decides. */
    uint32_t format = rpj_get32(buf + 8);
    size_t hlen = format == RPS_FORMAT || format == RPS_FORMAT_V4 || format == RPS_FORMAT_V3 ||
                          format == RPS_FORMAT_V2
                      ? FILE_HEADER
                  : format == RPS_FORMAT_V1 ? FILE_HEADER_V1
                                            : 0;
    /* Boxes and half-spaces came with format 3. */
    uint8_t kinds = format >= RPS_FORMAT_V3 ? 4 : 2;
    /* Objects came with format 4 (kinds 0-2), clouds (kind 3) with 5. */
    uint8_t objects = format == RPS_FORMAT ? 4 : format == RPS_FORMAT_V4 ? 3 : 0;
    if (!hlen) {
        out->bad_format = true;
        return fail(out, 8, "snapshot of another format version");
    }
    out->format = format;
    if (n < hlen)
        return fail(out, 0, "file shorter than its header");
    if (rpj_crc32c(0, buf, hlen - 4) != rpj_get32(buf + hlen - 4))
        return fail(out, 0, "file header checksum mismatch");
    bool reserved_set = hlen == FILE_HEADER
                            ? rpj_get32(buf + 12) || rpj_get64(buf + 64) || rpj_get32(buf + 72)
                            : rpj_get32(buf + 12) || rpj_get32(buf + 40);
    if (reserved_set) {
        out->bad_format = true;
        return fail(out, 12, "file header with unknown fields set");
    }
    if (hlen == FILE_HEADER)
        out->ids = (rps_ids){rpj_get64(buf + 40), rpj_get64(buf + 48), rpj_get64(buf + 56)};
    if (rp_store_scene_count(st) != 0)
        return fail(out, 0, "the store is not empty");
    uint64_t revision = rpj_get64(buf + 16), n_scenes = rpj_get64(buf + 24),
             n_models = rpj_get64(buf + 32);
    size_t at = hlen;
    char last_model[RP_NAME_MAX + 1] = "", last_scene[RP_NAME_MAX + 1] = "";
    for (uint64_t i = 0; i < n_scenes + n_models; i++) {
        if (n - at < SECTION_HEADER)
            return fail(out, at, "file ends inside a section header");
        const uint8_t *h = buf + at;
        if (rpj_crc32c(0, h, 16) != rpj_get32(h + 16))
            return fail(out, at, "section header checksum mismatch");
        uint32_t kind = rpj_get32(h);
        uint64_t len = rpj_get64(h + 8);
        /* Format 4 puts the models first, the formats before it the scenes. */
        bool model_now = format >= RPS_FORMAT_V4 ? i < n_models : i >= n_scenes;
        if (kind != (model_now ? SECTION_MODEL : SECTION_SCENE) || rpj_get32(h + 4))
            return fail(out, at, "unexpected section");
        if (n - at - SECTION_HEADER < 4 || len > n - at - SECTION_HEADER - 4)
            return fail(out, at, "file ends inside a section");
        const uint8_t *p = h + SECTION_HEADER;
        if (rpj_crc32c(0, p, (size_t)len) != rpj_get32(p + len))
            return fail(out, at, "section checksum mismatch");
        const char *why = NULL;
        if (kind == SECTION_SCENE) {
            if (!load_scene(p, (size_t)len, kinds, objects, st, last_scene, &why))
                return fail(out, at, why);
            out->scenes++;
            out->shapes +=
                rp_scene_shape_count(rp_store_scene_at(st, rp_store_scene_count(st) - 1));
        } else {
            in r = {p, p + len, false};
            char name[RP_NAME_MAX + 1];
            rps_model m;
            if (!take_str(&r, name, RP_NAME_MAX) || !rp_codec_valid_name(name))
                return fail(out, at, "bad model name");
            m.name = name;
            m.revision = take64(&r);
            uint32_t jl = take32(&r);
            const uint8_t *j = take(&r, jl);
            if (!j || r.p != r.end || m.revision == 0)
                return fail(out, at, "bad model section");
            m.json = (const char *)j;
            m.json_len = jl;
            if (strcmp(name, last_model) <= 0)
                return fail(out, at, "models out of order");
            memcpy(last_model, name, strlen(name) + 1);
            rp_store_set_revision(st, m.revision - 1);
            if (!fn || !fn(ctx, &m, &why))
                return fail(out, at, why ? why : "model refused");
            out->models++;
        }
        at += SECTION_HEADER + (size_t)len + 4;
    }
    if (n - at != TRAILER || memcmp(buf + at, END_MAGIC, sizeof END_MAGIC) != 0 ||
        rpj_get32(buf + at + 8) || rpj_crc32c(0, buf + at, 12) != rpj_get32(buf + at + 12))
        return fail(out, at, n - at < TRAILER ? "file ends before its trailer" : "bad trailer");
    rp_store_set_revision(st, revision);
    out->ok = true;
    out->revision = revision;
    return true;
}
