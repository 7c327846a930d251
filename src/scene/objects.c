/* SPDX-License-Identifier: MIT */
/*
 * Objects: rigid groups of scene shapes with a pose (docs/ARCHITECTURE.md,
 * Objects).
 *
 * An object's shapes are ordinary scene entries, ids "name/id", in world
 * coordinates, marked with the object's tag; the object itself (name,
 * pose, shapes in its own frame) sits in the scene's object table.  Every
 * object mutation is turned here into one rp_edit_ (scene.c): the world
 * shapes to write, the ids to drop and the table afterwards, applied all
 * or nothing under one revision.  A move writes only the moved objects'
 * shapes, each an in-place update of its entry and its tree leaf, so it
 * costs O(k log n) for k shapes in a scene of n.
 *
 * Objects and tables are immutable and reference-counted: a version made
 * for readers shares them, and a mutation builds a new table (a copy of
 * the pointers, O(objects)) and new objects for what it changes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

_Thread_local rp_ignore rp_ignore_ __attribute__((tls_model("initial-exec")));

/* ---- objects and tables ----------------------------------------------------- */

static void object_release(rp_object *o, rp_store *st)
{
    if (o && --o->refs == 0) {
        st->bytes -= o->bytes;
        if (o->model)
            rp_model_release_(o->model);
        rp_cloud_release(o->cloud);
        free(o->att_robot);
        free(o);
    }
}

void rp_objtab_retain_(rp_objtab *t)
{
    if (t)
        t->refs++;
}

static size_t objtab_bytes(size_t n)
{
    return sizeof(rp_objtab) + 2 * n * sizeof(rp_object *); /* objects, then clouds */
}

void rp_objtab_release_(rp_objtab *t, rp_store *st)
{
    if (!t || --t->refs)
        return;
    for (size_t i = 0; i < t->n; i++)
        object_release(t->obj[i], st);
    st->bytes -= objtab_bytes(t->n);
    free(t);
}

/* A table for n objects (pointers unset), or NULL. */
static rp_objtab *objtab_new(size_t n, rp_store *st)
{
    rp_objtab *t = malloc(objtab_bytes(n));
    if (!t)
        return NULL;
    t->refs = 1;
    t->n = n;
    t->n_clouds = t->cloud_spheres = 0;
    t->clouds = t->obj + n;
    st->bytes += objtab_bytes(n);
    return t;
}

/* Lists the table's clouds (once its objects are in). */
static void objtab_clouds(rp_objtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->obj[i]->cloud) {
            t->clouds[t->n_clouds++] = t->obj[i];
            t->cloud_spheres += t->obj[i]->cloud->n;
        }
}

/* Compares name (len bytes, no NUL needed) with s as strcmp would the
 * string of those bytes. */
static int cmp_prefix(const char *name, size_t len, const char *s)
{
    int c = strncmp(name, s, len);
    if (c)
        return c;
    return s[len] ? -1 : 0;
}

/* Position of the object named by name[0..len) in t, or where it goes. */
static size_t objtab_find(const rp_objtab *t, const char *name, size_t len, bool *found)
{
    size_t lo = 0, hi = t ? t->n : 0;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_prefix(name, len, t->obj[mid]->name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

rp_object *rp_scene_object_lookup_(const rp_scene *sc, const char *name, size_t *at)
{
    bool found;
    size_t i = objtab_find(sc->objects, name, strlen(name), &found);
    if (at)
        *at = i;
    return found ? sc->objects->obj[i] : NULL;
}

bool rp_scene_id_owned_(const rp_scene *sc, const char *id)
{
    if (!sc->objects)
        return false;
    const char *slash = strchr(id, '/');
    bool found;
    objtab_find(sc->objects, id, slash ? (size_t)(slash - id) : strlen(id), &found);
    return found;
}

static int cmp_put_id(const void *a, const void *b)
{
    return strcmp(((const rp_shape_put *)a)->id, ((const rp_shape_put *)b)->id);
}

/* A new object: p's name and shapes (copied, sorted by id) at `pose`, one
 * block.  NULL when out of memory. */
static rp_object *object_new(const char *name, const rp_transform *pose, const rp_shape_put *shapes,
                             size_t n, uint32_t tag, rp_store *st)
{
    size_t strings = strlen(name) + 1;
    for (size_t k = 0; k < n; k++)
        strings += strlen(shapes[k].id) + 1;
    size_t bytes = sizeof(rp_object) + n * sizeof(rp_shape_put) + strings;
    rp_object *o = malloc(bytes);
    if (!o)
        return NULL;
    memset(o, 0, sizeof *o);
    o->refs = 1;
    o->tag = tag;
    o->pose = *pose;
    o->n_shapes = n;
    o->shapes = (rp_shape_put *)(void *)(o + 1);
    o->bytes = bytes;
    char *pool = (char *)(o->shapes + n);
    size_t len = strlen(name) + 1;
    memcpy(pool, name, len);
    o->name = pool;
    pool += len;
    for (size_t k = 0; k < n; k++) {
        len = strlen(shapes[k].id) + 1;
        memcpy(pool, shapes[k].id, len);
        o->shapes[k].id = pool;
        o->shapes[k].shape = shapes[k].shape;
        pool += len;
    }
    if (n > 1)
        qsort(o->shapes, n, sizeof *o->shapes, cmp_put_id);
    st->bytes += bytes;
    return o;
}

/* Model shape k's id, for sorting. */
typedef struct link_shape {
    const char *id;
    size_t k;
} link_shape;

static int cmp_link_shape(const void *a, const void *b)
{
    return strcmp(((const link_shape *)a)->id, ((const link_shape *)b)->id);
}

/* A robot instance: model m (a reference taken) at joint vector q (NULL:
 * its defaults) on `base`: its shapes are the model's, sorted by id, and
 * their world shapes those forward kinematics gives.  NULL with *status
 * RP_ERR_NOMEM, or a shape status with *which the model shape a joint
 * vector or base moves out of range (RP_ERR_NONFINITE for a joint value
 * that is not finite, *which SIZE_MAX). */
static rp_object *robot_new(const char *name, rp_model *m, const double *q,
                            const rp_transform *base, uint32_t tag, rp_store *st, rp_status *status,
                            size_t *which)
{
    size_t n = rp_model_link_count(m), dof = rp_model_dof(m), nl = rp_model_tree_link_count(m);
    *which = SIZE_MAX;
    *status = RP_ERR_NOMEM;
    rp_transform *poses = malloc((nl ? nl : 1) * sizeof *poses);
    link_shape *order = malloc((n ? n : 1) * sizeof *order);
    double *qd = malloc((dof ? dof : 1) * sizeof *qd);
    rp_object *o = NULL;
    if (!poses || !order || !qd)
        goto out;
    if (q)
        memcpy(qd, q, dof * sizeof *qd);
    else
        rp_model_default_joints(m, qd);
    for (size_t j = 0; j < dof; j++)
        if (!isfinite(qd[j])) {
            *status = RP_ERR_NONFINITE;
            goto out;
        }
    rp_status fk = rp_model_fk(m, base, qd, poses);
    if (fk) {
        *status = fk;
        goto out;
    }
    size_t strings = strlen(name) + 1;
    for (size_t k = 0; k < n; k++) {
        order[k] = (link_shape){rp_model_link_at(m, k)->id, k};
        strings += strlen(order[k].id) + 1;
    }
    qsort(order, n, sizeof *order, cmp_link_shape);
    size_t bytes = sizeof(rp_object) + n * (sizeof(rp_shape_put) + sizeof(rp_shape)) +
                   dof * sizeof(double) + strings;
    o = malloc(bytes);
    if (!o)
        goto out;
    memset(o, 0, sizeof *o);
    o->refs = 1;
    o->tag = tag;
    o->pose = *base;
    o->n_shapes = n;
    o->shapes = (rp_shape_put *)(void *)(o + 1);
    o->world = (rp_shape *)(void *)(o->shapes + n);
    o->joints = (double *)(void *)(o->world + n);
    o->dof = dof;
    o->bytes = bytes;
    memcpy(o->joints, qd, dof * sizeof *qd);
    char *pool = (char *)(o->joints + dof);
    size_t len = strlen(name) + 1;
    memcpy(pool, name, len);
    o->name = pool;
    pool += len;
    for (size_t i = 0; i < n; i++) {
        size_t k = order[i].k;
        len = strlen(order[i].id) + 1;
        memcpy(pool, order[i].id, len);
        o->shapes[i].id = pool;
        pool += len;
        rp_model_shape_local(m, k, &o->shapes[i].shape);
        o->world[i] = rp_transform_shape(&poses[rp_model_shape_link(m, k)], &o->shapes[i].shape);
        rp_status v = rp_shape_validate(&o->world[i]);
        if (v) {
            *status = v;
            *which = k;
            free(o);
            o = NULL;
            goto out;
        }
    }
    rp_model_retain_(m);
    o->model = m;
    st->bytes += bytes;
    *status = RP_OK;
out:
    free(poses);
    free(order);
    free(qd);
    return o;
}

/* ---- reading ---------------------------------------------------------------- */

size_t rp_scene_object_count(const rp_scene *sc)
{
    return sc->objects ? sc->objects->n : 0;
}

const rp_object *rp_scene_object_at(const rp_scene *sc, size_t i)
{
    return sc->objects->obj[i];
}

const rp_object *rp_scene_object_find(const rp_scene *sc, const char *name)
{
    return rp_scene_object_lookup_(sc, name, NULL);
}

const rp_object *rp_scene_shape_object(const rp_scene *sc, size_t index)
{
    if (index >= sc->count) {
        const rp_object *o = NULL;
        rp_scene_cloud_member(sc, index, &o);
        return o;
    }
    uint32_t tag = RP_ENTRY(sc, index)->shape.tag;
    if (!tag)
        return NULL;
    const char *id = RP_ENTRY(sc, index)->id;
    const char *slash = strchr(id, '/');
    bool found;
    size_t i = objtab_find(sc->objects, id, (size_t)(slash - id), &found);
    return found ? sc->objects->obj[i] : NULL;
}

const char *rp_object_name(const rp_object *o)
{
    return o->name;
}

rp_transform rp_object_pose(const rp_object *o)
{
    return o->pose;
}

size_t rp_object_shape_count(const rp_object *o)
{
    return o->n_shapes;
}

const rp_shape_put *rp_object_shape_at(const rp_object *o, size_t i)
{
    return &o->shapes[i];
}

bool rp_object_is_robot(const rp_object *o)
{
    return o->model != NULL;
}

const rp_model *rp_object_model(const rp_object *o)
{
    return o->model;
}

const double *rp_object_joints(const rp_object *o)
{
    return o->joints;
}

bool rp_store_model_user(const rp_store *st, const char *model, const char **scene,
                         const char **robot)
{
    for (size_t i = 0; i < st->count; i++) {
        const rp_objtab *t = st->scenes[i]->objects;
        for (size_t j = 0; t && j < t->n; j++)
            if (t->obj[j]->model && strcmp(rp_model_name(t->obj[j]->model), model) == 0) {
                if (scene)
                    *scene = st->scenes[i]->name;
                if (robot)
                    *robot = t->obj[j]->name;
                return true;
            }
    }
    return false;
}

/* ---- ignore lists -------------------------------------------------------------- */

rp_status rp_ignore_open_(const rp_scene *sc, const char *const *names, size_t n, size_t *bad)
{
    if (rp_ignore_.depth) {
        rp_ignore_.depth++;
        return RP_OK;
    }
    if (n > RP_IGNORE_MAX)
        return RP_ERR_LIMIT;
    uint32_t m = 0;
    for (size_t k = 0; k < n; k++) {
        const rp_object *o = sc ? rp_scene_object_lookup_(sc, names[k], NULL) : NULL;
        if (!o) {
            if (bad)
                *bad = k;
            return RP_ERR_NOT_FOUND;
        }
        rp_ignore_.tags[m++] = o->tag;
    }
    rp_ignore_.n = m;
    rp_ignore_.depth = 1;
    return RP_OK;
}

void rp_ignore_close_(void)
{
    if (--rp_ignore_.depth == 0)
        rp_ignore_.n = 0;
}

/* ---- building an edit ------------------------------------------------------------ */

/* What an object mutation is turned into: the world shapes to write (ids
 * in `pool`) with their tags, the ids to drop, the new objects and the
 * table.  Freed by plan_free (what the scene took is NULL by then). */
typedef struct plan {
    rp_shape_put *world;
    uint32_t *tags;
    char **wid; /* blocks of ids of world[] this plan made (NULL: none there) */
    size_t n_world, cap_world;
    char **drop;
    size_t n_drop, cap_drop;
    rp_object **fresh; /* new objects, not yet in a table */
    size_t n_fresh;
    rp_objtab *table;
    rp_object_move *follow; /* a move's attached objects that follow their robots */
    size_t n_follow;
    const char **detached; /* objects freed (their robot goes or is put again) */
    size_t n_detached;
    rp_store *st;
    rp_edit_error *err;
} plan;

static void plan_free(plan *p)
{
    for (size_t k = 0; k < p->n_world; k++)
        free(p->wid[k]);
    for (size_t k = 0; k < p->n_drop; k++)
        free(p->drop[k]);
    for (size_t k = 0; k < p->n_fresh; k++)
        object_release(p->fresh[k], p->st);
    rp_objtab_release_(p->table, p->st);
    free(p->world);
    free(p->tags);
    free(p->wid);
    free(p->follow);
    free(p->detached);
    free(p->drop);
    free(p->fresh);
}

static void fail_at(plan *p, rp_edit_what what, size_t index, size_t shape)
{
    if (p->err)
        *p->err = (rp_edit_error){what, index, shape};
}

/* Writes "name/id" (a = strlen(name)) at dst; the bytes written, its NUL
 * included. */
static size_t write_member_id(char *dst, const char *name, size_t a, const char *id)
{
    size_t b = strlen(id);
    memcpy(dst, name, a);
    dst[a] = '/';
    memcpy(dst + a + 1, id, b + 1);
    return a + b + 2;
}

/* "name/id", or NULL. */
static char *member_id(const char *name, const char *id)
{
    size_t a = strlen(name);
    char *s = malloc(a + strlen(id) + 2);
    if (s)
        write_member_id(s, name, a, id);
    return s;
}

/* Appends the world shapes of object o (tag o->tag), their "name/id" ids
 * in one block (held by the first one's wid). */
static rp_status add_members(plan *p, const rp_object *o)
{
    if (o->n_shapes == 0)
        return RP_OK;
    size_t a = strlen(o->name), bytes = 0;
    for (size_t k = 0; k < o->n_shapes; k++)
        bytes += a + strlen(o->shapes[k].id) + 2;
    char *pool = malloc(bytes);
    if (!pool)
        return RP_ERR_NOMEM;
    for (size_t k = 0; k < o->n_shapes; k++) {
        char *id = pool;
        pool += write_member_id(pool, o->name, a, o->shapes[k].id);
        rp_shape w = o->world ? o->world[k] : rp_transform_shape(&o->pose, &o->shapes[k].shape);
        p->world[p->n_world] = (rp_shape_put){id, w};
        p->wid[p->n_world] = k == 0 ? id : NULL;
        p->tags[p->n_world++] = o->tag;
    }
    return RP_OK;
}

/* Whether every world shape of an object at `pose` is in range; else the
 * shape status, *which the local shape. */
static rp_status world_ok(const rp_transform *pose, const rp_shape_put *shapes, size_t n,
                          size_t *which)
{
    for (size_t k = 0; k < n; k++) {
        rp_shape w = rp_transform_shape(pose, &shapes[k].shape);
        rp_status s = rp_shape_validate(&w);
        if (s) {
            *which = k;
            return s;
        }
    }
    return RP_OK;
}

static bool valid_name(const char *name)
{
    return name && name[0] && !strchr(name, '/');
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether sorted names[0..n) holds s. */
static bool in_sorted(const char *const *names, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_prefix(s, len, names[mid]);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

/* Which argument of a put fresh object i came from (objects first, then
 * robots), and the request index of its local shape `id` (objects; for a
 * robot the model's shape). */
static void fail_fresh(plan *p, const rp_cell *c, size_t i, const char *id)
{
    if (i >= c->n_objects + c->n_robots) {
        fail_at(p, RP_EDIT_CLOUD, i - c->n_objects - c->n_robots, SIZE_MAX);
        return;
    }
    if (i < c->n_objects) {
        size_t which = SIZE_MAX;
        for (size_t k = 0; id && k < c->objects[i].n_shapes; k++)
            if (strcmp(c->objects[i].shapes[k].id, id) == 0)
                which = k;
        fail_at(p, RP_EDIT_OBJECT, i, which);
        return;
    }
    size_t which = SIZE_MAX;
    const rp_model *m = rp_store_model_find(p->st, c->robots[i - c->n_objects].model);
    for (size_t k = 0; id && m && k < rp_model_link_count(m); k++)
        if (strcmp(rp_model_link_at(m, k)->id, id) == 0)
            which = k;
    fail_at(p, RP_EDIT_ROBOT, i - c->n_objects, which);
}

/* The new object for objects[j] or robot instance robots[j] (fresh[i],
 * tag 0 for now), after checking its arguments. */
static rp_status plan_fresh(plan *p, const rp_cell *c, size_t i)
{
    if (i >= c->n_objects + c->n_robots) {
        size_t j = i - c->n_objects - c->n_robots;
        const rp_cloud_put *cp = &c->clouds[j];
        if (!valid_name(cp->name) || !cp->cloud) {
            fail_at(p, RP_EDIT_CLOUD, j, SIZE_MAX);
            return RP_ERR_INVALID_ARG;
        }
        rp_transform id = rp_transform_identity();
        rp_object *o = object_new(cp->name, &id, NULL, 0, 0, p->st);
        if (!o)
            return RP_ERR_NOMEM;
        rp_cloud_retain_(cp->cloud);
        o->cloud = cp->cloud;
        o->bytes += cp->cloud->bytes;
        p->st->bytes += cp->cloud->bytes;
        p->fresh[p->n_fresh++] = o;
        return RP_OK;
    }
    if (i < c->n_objects) {
        const rp_object_put *op = &c->objects[i];
        size_t which = SIZE_MAX;
        rp_status s = RP_OK;
        if (!valid_name(op->name))
            s = RP_ERR_INVALID_ARG;
        else if (rp_transform_validate(&op->pose) != RP_OK)
            s = RP_ERR_TRANSFORM;
        else
            for (size_t k = 0; k < op->n_shapes && !s; k++)
                if (!op->shapes[k].id || !op->shapes[k].id[0])
                    s = RP_ERR_INVALID_ARG, which = k;
                else if ((s = rp_shape_validate(&op->shapes[k].shape)) != RP_OK)
                    which = k;
        if (!s)
            s = world_ok(&op->pose, op->shapes, op->n_shapes, &which);
        if (s) {
            fail_at(p, RP_EDIT_OBJECT, i, which);
            return s;
        }
        rp_object *o = object_new(op->name, &op->pose, op->shapes, op->n_shapes, 0, p->st);
        if (!o)
            return RP_ERR_NOMEM;
        p->fresh[p->n_fresh++] = o;
        for (size_t k = 1; k < o->n_shapes; k++)
            if (strcmp(o->shapes[k - 1].id, o->shapes[k].id) == 0) {
                fail_at(p, RP_EDIT_OBJECT, i, SIZE_MAX);
                return RP_ERR_INVALID_ARG;
            }
        return RP_OK;
    }
    size_t j = i - c->n_objects;
    const rp_robot_put *rp = &c->robots[j];
    rp_model *m = rp->model ? rp_store_model_find(p->st, rp->model) : NULL;
    rp_status s = RP_OK;
    if (!valid_name(rp->name))
        s = RP_ERR_INVALID_ARG;
    else if (!m)
        s = RP_ERR_NOT_FOUND;
    else if (!rp_model_is_kinematic(m))
        s = RP_ERR_INVALID_ARG;
    else if (rp_transform_validate(&rp->base) != RP_OK)
        s = RP_ERR_TRANSFORM;
    size_t which = SIZE_MAX;
    rp_object *o = NULL;
    if (!s && !(o = robot_new(rp->name, m, rp->joints, &rp->base, 0, p->st, &s, &which)) &&
        s == RP_ERR_NOMEM)
        return s;
    if (s) {
        fail_at(p, RP_EDIT_ROBOT, j, which);
        return s;
    }
    p->fresh[p->n_fresh++] = o;
    return RP_OK;
}

/* The edit of a put (replace: onto an empty scene) of cell c into base
 * (NULL: an empty scene): the new objects and robot instances
 * (p->fresh, in argument order, objects first), the world shapes to
 * write and the shapes their namesakes no longer have. */
static rp_status plan_put(plan *p, const rp_scene *base, const rp_cell *c)
{
    size_t n_new = c->n_objects + c->n_robots + c->n_clouds;
    p->fresh = calloc(n_new ? n_new : 1, sizeof *p->fresh);
    const char **names = malloc((n_new ? n_new : 1) * sizeof *names);
    rp_status s = p->fresh && names ? RP_OK : RP_ERR_NOMEM;
    for (size_t i = 0; i < n_new && !s; i++)
        s = plan_fresh(p, c, i);
    /* Names once among objects and robots. */
    for (size_t i = 0; i < n_new && !s; i++)
        names[i] = p->fresh[i]->name;
    if (!s && n_new > 1) {
        qsort(names, n_new, sizeof *names, cmp_str_ptr);
        for (size_t i = 1; i < n_new && !s; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                s = RP_ERR_INVALID_ARG;
                for (size_t q = n_new; q-- > 0;) /* report the later of the two */
                    if (strcmp(p->fresh[q]->name, names[i]) == 0) {
                        fail_fresh(p, c, q, NULL);
                        break;
                    }
            }
    }
    /* The scene's own shapes: not named like an object, nor owned by one
     * (one that stays, or one of this put). */
    for (size_t k = 0; k < c->n_shapes && !s; k++) {
        const char *id = c->shapes[k].id;
        const char *slash = strchr(id, '/');
        size_t len = slash ? (size_t)(slash - id) : strlen(id);
        bool clash = in_sorted(names, n_new, id, len) || in_sorted(names, n_new, id, strlen(id));
        if (!clash && base && base->objects) {
            bool found;
            objtab_find(base->objects, id, len, &found);
            clash = found;
        }
        if (clash) {
            s = RP_ERR_EXISTS;
            fail_at(p, RP_EDIT_SHAPE, k, SIZE_MAX);
        }
    }
    /* A new object's name is no shape id of the scene's own, nor are its
     * shapes' ids. */
    for (size_t i = 0; i < n_new && !s && base; i++) {
        const rp_object *o = p->fresh[i];
        size_t e = rp_scene_find(base, o->name);
        bool clash = e != SIZE_MAX && RP_ENTRY(base, e)->shape.tag == 0;
        const char *bad = NULL;
        for (size_t k = 0; k < o->n_shapes && !clash; k++) {
            char *id = member_id(o->name, o->shapes[k].id);
            if (!id) {
                s = RP_ERR_NOMEM;
                break;
            }
            e = rp_scene_find(base, id);
            free(id);
            if (e != SIZE_MAX && RP_ENTRY(base, e)->shape.tag == 0)
                clash = true, bad = o->shapes[k].id;
        }
        if (clash) {
            s = RP_ERR_EXISTS;
            fail_fresh(p, c, i, bad);
        }
    }
    free(names);
    if (s)
        return s;

    /* Tags: a replaced object's, else new ones. */
    uint32_t next = base ? base->next_tag : 0;
    size_t total = c->n_shapes, dropping = 0;
    for (size_t i = 0; i < n_new; i++) {
        rp_object *o = p->fresh[i];
        rp_object *old = base ? rp_scene_object_lookup_(base, o->name, NULL) : NULL;
        if (old) {
            o->tag = old->tag;
        } else {
            if (next == UINT32_MAX)
                return RP_ERR_LIMIT;
            o->tag = ++next;
        }
        total += o->n_shapes;
        dropping += old ? old->n_shapes : 0;
    }
    p->world = malloc((total ? total : 1) * sizeof *p->world);
    p->tags = malloc((total ? total : 1) * sizeof *p->tags);
    p->wid = malloc((total ? total : 1) * sizeof *p->wid);
    p->drop = malloc((dropping ? dropping : 1) * sizeof *p->drop);
    if (!p->world || !p->tags || !p->wid || !p->drop)
        return RP_ERR_NOMEM;
    for (size_t k = 0; k < c->n_shapes; k++) {
        p->world[p->n_world] = c->shapes[k];
        p->wid[p->n_world] = NULL;
        p->tags[p->n_world++] = 0;
    }
    for (size_t i = 0; i < n_new; i++)
        if (add_members(p, p->fresh[i]))
            return RP_ERR_NOMEM;
    /* Shapes a replaced object no longer has go. */
    for (size_t i = 0; i < n_new; i++) {
        const rp_object *o = p->fresh[i];
        rp_object *old = base ? rp_scene_object_lookup_(base, o->name, NULL) : NULL;
        for (size_t k = 0, q = 0; old && k < old->n_shapes; k++) {
            while (q < o->n_shapes && strcmp(o->shapes[q].id, old->shapes[k].id) < 0)
                q++;
            if (q < o->n_shapes && strcmp(o->shapes[q].id, old->shapes[k].id) == 0)
                continue;
            if (!(p->drop[p->n_drop] = member_id(o->name, old->shapes[k].id)))
                return RP_ERR_NOMEM;
            p->n_drop++;
        }
    }
    return RP_OK;
}

static int cmp_object(const void *a, const void *b)
{
    return strcmp((*(rp_object *const *)a)->name, (*(rp_object *const *)b)->name);
}

/* The table after the edit: base's objects (none for a replace), less
 * those named in gone[0..n_gone) (sorted), the fresh ones replacing their
 * namesakes or joining.  The fresh objects move into it.  NULL in
 * p->table for an empty one. */
static rp_status plan_table(plan *p, const rp_objtab *base, const char *const *gone, size_t n_gone)
{
    if (p->n_fresh > 1)
        qsort(p->fresh, p->n_fresh, sizeof *p->fresh, cmp_object);
    size_t nb = base ? base->n : 0, n = 0;
    /* Count: a merge of two sorted lists, dropping gone and replaced ones. */
    for (int pass = 0; pass < 2; pass++) {
        size_t i = 0, j = 0;
        n = 0;
        while (i < nb || j < p->n_fresh) {
            int c = i == nb           ? 1
                    : j == p->n_fresh ? -1
                                      : strcmp(base->obj[i]->name, p->fresh[j]->name);
            rp_object *o;
            if (c < 0) {
                o = base->obj[i++];
                if (in_sorted(gone, n_gone, o->name, strlen(o->name)))
                    continue;
                if (pass)
                    o->refs++;
            } else {
                o = p->fresh[j++];
                i += c == 0;
            }
            if (pass)
                p->table->obj[n] = o;
            n++;
        }
        if (pass == 0) {
            if (n == 0)
                break;
            if (!(p->table = objtab_new(n, p->st)))
                return RP_ERR_NOMEM;
        }
    }
    p->n_fresh = 0; /* the table holds them now */
    if (p->table)
        objtab_clouds(p->table);
    return RP_OK;
}

/* ---- attachments ---------------------------------------------------------------- */

/* The world pose of tree link `link` of robot instance r. */
static rp_status robot_link_pose(const rp_object *r, size_t link, rp_transform *out)
{
    size_t nl = rp_model_tree_link_count(r->model);
    rp_transform *poses = malloc((nl ? nl : 1) * sizeof *poses);
    if (!poses)
        return RP_ERR_NOMEM;
    rp_status s = rp_model_fk(r->model, &r->pose, r->joints, poses);
    if (!s)
        *out = poses[link];
    free(poses);
    return s;
}

/* A copy of object o at `pose`, attached to link `link` of robot `robot`
 * at `rel` (robot NULL: free).  NULL when out of memory. */
static rp_object *object_placed(const rp_object *o, const rp_transform *pose, const char *robot,
                                size_t link, const rp_transform *rel, rp_store *st)
{
    rp_object *c = object_new(o->name, pose, o->shapes, o->n_shapes, o->tag, st);
    if (!c || !robot)
        return c;
    size_t len = strlen(robot) + 1;
    if (!(c->att_robot = malloc(len))) {
        object_release(c, st);
        return NULL;
    }
    memcpy(c->att_robot, robot, len);
    c->bytes += len; /* (object_release gives back what it holds) */
    st->bytes += len;
    c->att_link = link;
    c->rel = *rel;
    return c;
}

/* An attached object following its robot r (its new state): at link pose
 * ∘ rel.  The shape status when that moves a shape out of range. */
static rp_status follow(plan *p, const rp_object *o, const rp_object *r, rp_object **out)
{
    rp_transform link;
    rp_status s = robot_link_pose(r, o->att_link, &link);
    if (s)
        return s;
    rp_transform pose = rp_transform_compose(&link, &o->rel);
    size_t which;
    if ((s = world_ok(&pose, o->shapes, o->n_shapes, &which)) != RP_OK)
        return s;
    *out = object_placed(o, &pose, o->att_robot, o->att_link, &o->rel, p->st);
    return *out ? RP_OK : RP_ERR_NOMEM;
}

/* Objects attached to a robot in robots[0..n) (sorted) that are not in
 * skip[0..n_skip) (sorted) are freed where they are: fresh copies,
 * detached. */
static rp_status detach_from(plan *p, const rp_scene *base, const char *const *robots, size_t n,
                             const char *const *skip, size_t n_skip)
{
    size_t n_base = base && base->objects ? base->objects->n : 0;
    for (size_t i = 0; i < n_base; i++) {
        const rp_object *o = base->objects->obj[i];
        if (!o->att_robot || !in_sorted(robots, n, o->att_robot, strlen(o->att_robot)) ||
            in_sorted(skip, n_skip, o->name, strlen(o->name)))
            continue;
        rp_object **grown = realloc(p->fresh, (p->n_fresh + 1) * sizeof *grown);
        if (!grown)
            return RP_ERR_NOMEM;
        p->fresh = grown;
        const char **d = realloc(p->detached, (p->n_detached + 1) * sizeof *d);
        if (!d)
            return RP_ERR_NOMEM;
        p->detached = d;
        rp_object *c = object_placed(o, &o->pose, NULL, 0, NULL, p->st);
        if (!c)
            return RP_ERR_NOMEM;
        p->fresh[p->n_fresh++] = c;
        p->detached[p->n_detached++] = c->name;
    }
    return RP_OK;
}

/* The robot instance named `name` as it is after this plan (a fresh one
 * when it moves here, else base's), or NULL. */
static const rp_object *robot_now(const plan *p, const rp_scene *base, const char *name)
{
    for (size_t i = 0; i < p->n_fresh; i++)
        if (p->fresh[i]->model && strcmp(p->fresh[i]->name, name) == 0)
            return p->fresh[i];
    return rp_scene_object_lookup_(base, name, NULL);
}

/* The edit of moving objects and robot instances of base: the robots
 * first, then the objects (one attached stays attached at its new place),
 * then the objects attached to a robot that moved and were not moved
 * themselves, which follow their links (p->follow: their new poses). */
static rp_status plan_move(plan *p, const rp_scene *base, const rp_cell_moves *m)
{
    size_t n = m->n_objects + m->n_robots, n_base = base->objects ? base->objects->n : 0;
    p->fresh = calloc(n + n_base + 1, sizeof *p->fresh);
    p->follow = calloc(n_base + 1, sizeof *p->follow);
    if (!p->fresh || !p->follow)
        return RP_ERR_NOMEM;
    for (size_t step = 0; step < n; step++) {
        bool robot = step < m->n_robots;
        size_t at = robot ? step : step - m->n_robots;
        rp_edit_what what = robot ? RP_EDIT_ROBOT_MOVE : RP_EDIT_MOVE;
        const char *name = robot ? m->robots[at].name : m->objects[at].name;
        rp_object *old = name ? rp_scene_object_lookup_(base, name, NULL) : NULL;
        size_t which = SIZE_MAX;
        rp_status s = RP_OK;
        rp_object *o = NULL;
        if (!old)
            s = RP_ERR_NOT_FOUND;
        else if (old->cloud)
            s = RP_ERR_INVALID_ARG; /* clouds stay where they are (put them again) */
        else if ((old->model != NULL) != robot)
            s = RP_ERR_INVALID_ARG; /* a robot among the objects, or the other way round */
        else if (!robot) {
            rp_transform pose = m->objects[at].pose, rel, link;
            if (rp_transform_validate(&pose) != RP_OK) {
                s = RP_ERR_TRANSFORM;
            } else if (old->att_robot) {
                /* Attached: it stays so, at its new place in the link's frame. */
                const rp_object *r = robot_now(p, base, old->att_robot);
                if (!r || (s = robot_link_pose(r, old->att_link, &link)) != RP_OK) {
                    s = s ? s : RP_ERR_NOT_FOUND;
                } else {
                    rp_transform inv = rp_transform_inverse(&link);
                    rel = rp_transform_compose(&inv, &pose);
                    pose = rp_transform_compose(&link, &rel);
                }
            }
            if (!s && !(s = world_ok(&pose, old->shapes, old->n_shapes, &which)) &&
                !(o = object_placed(old, &pose, old->att_robot, old->att_link, &rel, p->st)))
                return RP_ERR_NOMEM;
        } else {
            const rp_robot_move *rm = &m->robots[at];
            const rp_transform *b = rm->base ? rm->base : &old->pose;
            if (rp_transform_validate(b) != RP_OK)
                s = RP_ERR_TRANSFORM;
            else if (!(o = robot_new(old->name, old->model, rm->joints ? rm->joints : old->joints,
                                     b, old->tag, p->st, &s, &which)) &&
                     s == RP_ERR_NOMEM)
                return s;
        }
        if (s) {
            fail_at(p, what, at, which);
            return s;
        }
        /* Each name once. */
        for (size_t q = 0; q < p->n_fresh; q++)
            if (strcmp(p->fresh[q]->name, o->name) == 0) {
                object_release(o, p->st);
                fail_at(p, what, at, SIZE_MAX);
                return RP_ERR_INVALID_ARG;
            }
        p->fresh[p->n_fresh++] = o;
    }
    /* The objects attached to a robot that moved follow it. */
    size_t moved_here = p->n_fresh;
    for (size_t i = 0; i < n_base; i++) {
        const rp_object *o = base->objects->obj[i];
        if (!o->att_robot)
            continue;
        const rp_object *r = NULL;
        bool moved = false;
        for (size_t q = 0; q < moved_here; q++) {
            if (strcmp(p->fresh[q]->name, o->name) == 0)
                moved = true; /* moved itself */
            else if (p->fresh[q]->model && strcmp(p->fresh[q]->name, o->att_robot) == 0)
                r = p->fresh[q];
        }
        if (moved || !r)
            continue;
        rp_object *f;
        rp_status s = follow(p, o, r, &f);
        if (s) {
            /* (a robot's move that takes its part out of range is the
             * robot's fault) */
            for (size_t q = 0; q < m->n_robots; q++)
                if (strcmp(m->robots[q].name, r->name) == 0)
                    fail_at(p, RP_EDIT_ROBOT_MOVE, q, SIZE_MAX);
            return s;
        }
        p->follow[p->n_follow++] = (rp_object_move){f->name, f->pose};
        p->fresh[p->n_fresh++] = f;
    }
    size_t total = 0;
    for (size_t j = 0; j < p->n_fresh; j++)
        total += p->fresh[j]->n_shapes;
    p->world = malloc((total ? total : 1) * sizeof *p->world);
    p->tags = malloc((total ? total : 1) * sizeof *p->tags);
    p->wid = malloc((total ? total : 1) * sizeof *p->wid);
    if (!p->world || !p->tags || !p->wid)
        return RP_ERR_NOMEM;
    for (size_t j = 0; j < p->n_fresh; j++)
        if (add_members(p, p->fresh[j]))
            return RP_ERR_NOMEM;
    return plan_table(p, base->objects, NULL, 0);
}

/* The edit of removing ids (shape ids of the scene's own, or object
 * names) from base; *removed how many of them were there. */
static rp_status plan_remove(plan *p, const rp_scene *base, const char *const *ids, size_t n,
                             size_t *removed)
{
    const char **gone = malloc((n ? n : 1) * sizeof *gone);
    if (!gone)
        return RP_ERR_NOMEM;
    size_t n_gone = 0, total = 0;
    for (size_t k = 0; k < n; k++) {
        rp_object *o = rp_scene_object_lookup_(base, ids[k], NULL);
        if (o) {
            gone[n_gone++] = o->name;
            total += o->n_shapes;
        } else if (rp_scene_id_owned_(base, ids[k])) {
            free(gone);
            fail_at(p, RP_EDIT_SHAPE, k, SIZE_MAX);
            return RP_ERR_EXISTS;
        } else {
            total++;
        }
    }
    qsort(gone, n_gone, sizeof *gone, cmp_str_ptr);
    size_t m = 0;
    for (size_t k = 0; k < n_gone; k++)
        if (m == 0 || strcmp(gone[m - 1], gone[k]) != 0)
            gone[m++] = gone[k];
    n_gone = m;
    p->drop = malloc((total ? total : 1) * sizeof *p->drop);
    if (!p->drop) {
        free(gone);
        return RP_ERR_NOMEM;
    }
    rp_status s = RP_OK;
    for (size_t k = 0; k < n && !s; k++) {
        if (rp_scene_object_lookup_(base, ids[k], NULL) || rp_scene_find(base, ids[k]) == SIZE_MAX)
            continue;
        size_t len = strlen(ids[k]) + 1;
        if (!(p->drop[p->n_drop] = malloc(len)))
            s = RP_ERR_NOMEM;
        else
            memcpy(p->drop[p->n_drop++], ids[k], len);
    }
    for (size_t j = 0; j < n_gone && !s; j++) {
        rp_object *o = rp_scene_object_lookup_(base, gone[j], NULL);
        for (size_t k = 0; k < o->n_shapes && !s; k++)
            if (!(p->drop[p->n_drop] = member_id(o->name, o->shapes[k].id)))
                s = RP_ERR_NOMEM;
            else
                p->n_drop++;
    }
    /* Each id once (the edit counts the entries that go). */
    if (!s && p->n_drop > 1) {
        qsort(p->drop, p->n_drop, sizeof *p->drop, cmp_str_ptr);
        m = 0;
        for (size_t k = 0; k < p->n_drop; k++) {
            if (m && strcmp(p->drop[m - 1], p->drop[k]) == 0)
                free(p->drop[k]);
            else
                p->drop[m++] = p->drop[k];
        }
        p->n_drop = m;
    }
    *removed = n_gone;
    for (size_t k = 0; k < p->n_drop; k++) {
        size_t e = rp_scene_find(base, p->drop[k]);
        *removed += e != SIZE_MAX && RP_ENTRY(base, e)->shape.tag == 0;
    }
    /* Objects attached to a robot that goes stay, free. */
    if (!s)
        s = detach_from(p, base, gone, n_gone, gone, n_gone);
    if (!s)
        s = plan_table(p, base->objects, gone, n_gone);
    free(gone);
    return s;
}

/* ---- the mutations ------------------------------------------------------------------ */

static rp_edit_ plan_edit(plan *p, rp_change *ch, bool set_objects, uint32_t next_tag)
{
    rp_edit_ ed = {.shapes = p->world,
                   .n = p->n_world,
                   .tags = p->tags,
                   .drop = (const char *const *)p->drop,
                   .n_drop = p->n_drop,
                   .set_objects = set_objects,
                   .objects = p->table,
                   .next_tag = next_tag,
                   .change = ch};
    return ed;
}

/* The tag after the plan's objects. */
static uint32_t plan_next_tag(const plan *p, const rp_scene *base)
{
    uint32_t next = base ? base->next_tag : 0;
    for (size_t i = 0; p->table && i < p->table->n; i++)
        if (p->table->obj[i]->tag > next)
            next = p->table->obj[i]->tag;
    return next;
}

/* The scene a mutation changes: RP_ERR_NOT_FOUND when missing (and not
 * `create`), RP_ERR_REVISION (with *actual) when if_revision is not its
 * revision (0 for a missing one); *cur NULL for a missing scene. */
static rp_status target_scene(rp_store *st, const char *name, bool create,
                              const uint64_t *if_revision, uint64_t *actual, rp_scene **cur)
{
    *cur = rp_store_find(st, name);
    if (!*cur && !create)
        return RP_ERR_NOT_FOUND;
    uint64_t current = *cur ? (*cur)->revision : 0;
    if (if_revision && *if_revision != current) {
        if (actual)
            *actual = current;
        return RP_ERR_REVISION;
    }
    return RP_OK;
}

static rp_status write_cell(rp_store *st, const char *name, const rp_cell *c,
                            const uint64_t *if_revision, bool create, rp_scene **out,
                            uint64_t *actual_revision, rp_edit_error *err, bool replace)
{
    if (err)
        *err = (rp_edit_error){RP_EDIT_NONE, 0, 0};
    rp_scene *cur;
    rp_status t = target_scene(st, name, create, if_revision, actual_revision, &cur);
    if (t)
        return t;
    const rp_scene *base = replace ? NULL : cur;
    plan p = {.st = st, .err = err};
    rp_status s = plan_put(&p, base, c);
    /* Objects attached to a robot put again are freed where they are. */
    const char **names = NULL, **robots = NULL;
    size_t n_names = p.n_fresh, n_robots = 0;
    if (!s && base && base->objects) {
        names = malloc((n_names ? n_names : 1) * sizeof *names);
        robots = malloc((n_names ? n_names : 1) * sizeof *robots);
        if (!names || !robots)
            s = RP_ERR_NOMEM;
        for (size_t i = 0; !s && i < n_names; i++) {
            names[i] = p.fresh[i]->name;
            if (p.fresh[i]->model)
                robots[n_robots++] = p.fresh[i]->name;
        }
        if (!s) {
            qsort(names, n_names, sizeof *names, cmp_str_ptr);
            qsort(robots, n_robots, sizeof *robots, cmp_str_ptr);
            s = detach_from(&p, base, robots, n_robots, names, n_names);
        }
    }
    free(names);
    free(robots);
    if (!s)
        s = plan_table(&p, base ? base->objects : NULL, NULL, 0);
    if (!s) {
        rp_change ch = {.kind = replace ? RP_CHANGE_SCENE_REPLACE : RP_CHANGE_SCENE_PUT,
                        .name = name,
                        .shapes = c->shapes,
                        .n_shapes = c->n_shapes,
                        .objects = c->objects,
                        .n_objects = c->n_objects,
                        .robots = c->robots,
                        .n_robots = c->n_robots,
                        .clouds = c->clouds,
                        .n_clouds = c->n_clouds,
                        .detached = p.detached,
                        .n_detached = p.n_detached};
        rp_edit_ ed = plan_edit(&p, &ch, true, plan_next_tag(&p, base));
        s = rp_store_apply_edit_(st, name, &ed, replace || !cur, out);
        if (!s)
            p.table = NULL; /* the scene holds it */
    }
    plan_free(&p);
    return s;
}

rp_status rp_store_put_cell(rp_store *st, const char *name, const rp_cell *c,
                            const uint64_t *if_revision, bool create, rp_scene **out,
                            uint64_t *actual_revision, rp_edit_error *err)
{
    return write_cell(st, name, c, if_revision, create, out, actual_revision, err, false);
}

rp_status rp_store_replace_cell(rp_store *st, const char *name, const rp_cell *c,
                                const uint64_t *if_revision, bool create, rp_scene **out,
                                uint64_t *actual_revision, rp_edit_error *err)
{
    return write_cell(st, name, c, if_revision, create, out, actual_revision, err, true);
}

rp_status rp_store_put_objects(rp_store *st, const char *name, const rp_shape_put *shapes, size_t n,
                               const rp_object_put *objects, size_t n_objects,
                               const uint64_t *if_revision, bool create, rp_scene **out,
                               uint64_t *actual_revision, rp_edit_error *err)
{
    rp_cell c = {.shapes = shapes, .n_shapes = n, .objects = objects, .n_objects = n_objects};
    return write_cell(st, name, &c, if_revision, create, out, actual_revision, err, false);
}

rp_status rp_store_replace_objects(rp_store *st, const char *name, const rp_shape_put *shapes,
                                   size_t n, const rp_object_put *objects, size_t n_objects,
                                   const uint64_t *if_revision, bool create, rp_scene **out,
                                   uint64_t *actual_revision, rp_edit_error *err)
{
    rp_cell c = {.shapes = shapes, .n_shapes = n, .objects = objects, .n_objects = n_objects};
    return write_cell(st, name, &c, if_revision, create, out, actual_revision, err, true);
}

rp_status rp_store_move_cell(rp_store *st, const char *name, const rp_cell_moves *m,
                             const uint64_t *if_revision, rp_scene **out, uint64_t *actual_revision,
                             rp_edit_error *err)
{
    if (err)
        *err = (rp_edit_error){RP_EDIT_NONE, 0, 0};
    rp_scene *cur;
    rp_status t = target_scene(st, name, false, if_revision, actual_revision, &cur);
    if (t)
        return t;
    plan p = {.st = st, .err = err};
    rp_status s = plan_move(&p, cur, m);
    if (!s) {
        rp_change ch = {.kind = RP_CHANGE_SCENE_MOVE,
                        .name = name,
                        .moves = m->objects,
                        .n_moves = m->n_objects,
                        .robot_moves = m->robots,
                        .n_robot_moves = m->n_robots,
                        .follow = p.follow,
                        .n_follow = p.n_follow};
        rp_edit_ ed = plan_edit(&p, &ch, true, cur->next_tag);
        s = rp_store_apply_edit_(st, name, &ed, false, out);
        if (!s)
            p.table = NULL;
    }
    plan_free(&p);
    return s;
}

rp_status rp_store_move(rp_store *st, const char *name, const rp_object_move *moves, size_t n,
                        const uint64_t *if_revision, rp_scene **out, uint64_t *actual_revision,
                        rp_edit_error *err)
{
    rp_cell_moves m = {.objects = moves, .n_objects = n};
    return rp_store_move_cell(st, name, &m, if_revision, out, actual_revision, err);
}

rp_status rp_store_remove_objects_(rp_store *st, const char *name, const char *const *ids, size_t n,
                                   rp_scene **out, size_t *removed)
{
    rp_scene *cur = rp_store_find(st, name);
    plan p = {.st = st};
    size_t count = 0;
    rp_status s = plan_remove(&p, cur, ids, n, &count);
    if (!s) {
        rp_change ch = {.kind = RP_CHANGE_SCENE_REMOVE,
                        .name = name,
                        .ids = ids,
                        .n_ids = n,
                        .detached = p.detached,
                        .n_detached = p.n_detached};
        rp_edit_ ed = plan_edit(&p, &ch, true, cur->next_tag);
        s = rp_store_apply_edit_(st, name, &ed, false, out);
        if (!s) {
            p.table = NULL;
            if (removed)
                *removed = count;
        }
    }
    plan_free(&p);
    return s;
}

/* ---- scene.attach, scene.detach ------------------------------------------------------ */

const char *rp_object_attached_robot(const rp_object *o)
{
    return o->att_robot;
}

const char *rp_object_attached_link(const rp_scene *sc, const rp_object *o)
{
    const rp_object *r = o->att_robot ? rp_scene_object_find(sc, o->att_robot) : NULL;
    return r ? rp_model_tree_link_name(r->model, o->att_link) : NULL;
}

rp_transform rp_object_attached_rel(const rp_object *o)
{
    return o->att_robot ? o->rel : rp_transform_identity();
}

/* The edit that swaps object `old` for `fresh` (same shapes, its new
 * pose): its shapes written where they now are. */
static rp_status plan_swap(plan *p, const rp_scene *base, rp_object *fresh)
{
    p->fresh = calloc(1, sizeof *p->fresh);
    p->world = malloc((fresh->n_shapes ? fresh->n_shapes : 1) * sizeof *p->world);
    p->tags = malloc((fresh->n_shapes ? fresh->n_shapes : 1) * sizeof *p->tags);
    p->wid = malloc((fresh->n_shapes ? fresh->n_shapes : 1) * sizeof *p->wid);
    if (!p->fresh || !p->world || !p->tags || !p->wid) {
        object_release(fresh, p->st);
        return RP_ERR_NOMEM;
    }
    p->fresh[p->n_fresh++] = fresh;
    if (add_members(p, fresh))
        return RP_ERR_NOMEM;
    return plan_table(p, base->objects, NULL, 0);
}

static rp_status apply_swap(rp_store *st, const char *scene, plan *p, rp_change *ch,
                            uint32_t next_tag, rp_scene **out)
{
    rp_edit_ ed = plan_edit(p, ch, true, next_tag);
    rp_status s = rp_store_apply_edit_(st, scene, &ed, false, out);
    if (!s)
        p->table = NULL;
    return s;
}

rp_status rp_store_attach(rp_store *st, const char *scene, const char *object, const char *robot,
                          const char *link, const rp_transform *rel, const uint64_t *if_revision,
                          rp_scene **out, uint64_t *actual_revision, rp_edit_error *err)
{
    if (err)
        *err = (rp_edit_error){RP_EDIT_NONE, 0, 0};
    rp_scene *cur;
    rp_status t = target_scene(st, scene, false, if_revision, actual_revision, &cur);
    if (t)
        return t;
    plan p = {.st = st, .err = err};
    rp_object *o = object ? rp_scene_object_lookup_(cur, object, NULL) : NULL;
    rp_object *r = robot ? rp_scene_object_lookup_(cur, robot, NULL) : NULL;
    size_t li = r && r->model && link ? rp_model_tree_link_find(r->model, link) : SIZE_MAX;
    rp_status s = RP_OK;
    rp_edit_what what = RP_EDIT_OBJECT;
    if (!o)
        s = RP_ERR_NOT_FOUND;
    else if (o->model || o->cloud)
        s = RP_ERR_INVALID_ARG; /* a robot or a cloud cannot be attached */
    else if ((what = RP_EDIT_ROBOT, !r))
        s = RP_ERR_NOT_FOUND;
    else if (!r->model)
        s = RP_ERR_INVALID_ARG; /* an object is no robot */
    else if (li == SIZE_MAX)
        s = RP_ERR_NOT_FOUND;
    else if (rel && rp_transform_validate(rel) != RP_OK)
        s = RP_ERR_TRANSFORM;
    rp_transform lp, r2, pose;
    if (!s && !(s = robot_link_pose(r, li, &lp))) {
        if (rel) {
            r2 = *rel;
        } else {
            rp_transform inv = rp_transform_inverse(&lp);
            r2 = rp_transform_compose(&inv, &o->pose);
        }
        pose = rp_transform_compose(&lp, &r2);
        size_t which;
        s = world_ok(&pose, o->shapes, o->n_shapes, &which);
    }
    if (s) {
        if (s != RP_ERR_NOMEM)
            fail_at(&p, what, 0, SIZE_MAX);
        return s;
    }
    rp_object *fresh = object_placed(o, &pose, r->name, li, &r2, st);
    s = fresh ? plan_swap(&p, cur, fresh) : RP_ERR_NOMEM;
    if (!s) {
        rp_object_move now = {o->name, pose};
        rp_change ch = {.kind = RP_CHANGE_SCENE_ATTACH,
                        .name = scene,
                        .moves = &now,
                        .n_moves = 1,
                        .object = o->name,
                        .robot = r->name,
                        .link = link,
                        .rel = &r2};
        s = apply_swap(st, scene, &p, &ch, cur->next_tag, out);
    }
    plan_free(&p);
    return s;
}

rp_status rp_store_detach(rp_store *st, const char *scene, const char *object,
                          const uint64_t *if_revision, rp_scene **out, uint64_t *actual_revision)
{
    rp_scene *cur;
    rp_status t = target_scene(st, scene, false, if_revision, actual_revision, &cur);
    if (t)
        return t;
    rp_object *o = object ? rp_scene_object_lookup_(cur, object, NULL) : NULL;
    if (!o)
        return RP_ERR_NOT_FOUND;
    if (!o->att_robot)
        return RP_ERR_INVALID_ARG;
    plan p = {.st = st};
    rp_object *fresh = object_placed(o, &o->pose, NULL, 0, NULL, st);
    rp_status s = fresh ? plan_swap(&p, cur, fresh) : RP_ERR_NOMEM;
    if (!s) {
        rp_change ch = {.kind = RP_CHANGE_SCENE_DETACH, .name = scene, .object = o->name};
        s = apply_swap(st, scene, &p, &ch, cur->next_tag, out);
    }
    plan_free(&p);
    return s;
}
