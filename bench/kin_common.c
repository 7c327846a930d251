/* SPDX-License-Identifier: MIT */
/* See kin_common.h. */
#define _POSIX_C_SOURCE 200809L

#include "kin_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ID_LEN 16
#define KB_PI 3.14159265358979323846

uint64_t kb_next(kb_rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double kb_unit(kb_rng *r)
{
    return (double)(kb_next(r) >> 11) * 0x1.0p-53;
}

double kb_uniform(kb_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * kb_unit(r);
}

double kb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kb_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void kb_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kin bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_FAILURE);
}

void *kb_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        kb_die("out of memory");
    return p;
}

char *kb_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        kb_die("cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = kb_alloc(cap, 1);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n + 1 < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
        if (!buf)
            kb_die("out of memory");
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- robot ------------------------------------------------------------------------ */

void kb_robot_load(kb_robot *r, const char *dir, rp_store *store, const char *name,
                   bool self_collision)
{
    memset(r, 0, sizeof *r);
    char path[4096];
    snprintf(path, sizeof path, "%s/arm7.urdf", dir);
    r->urdf = kb_read_file(path, &r->urdf_len);
    snprintf(path, sizeof path, "%s/arm7.srdf", dir);
    r->srdf = kb_read_file(path, &r->srdf_len);
    rp_urdf_error ue;
    /* As model.put with an srdf: no adjacency pairs (the SRDF lists them). */
    rp_urdf_opts opts = {0, 0, 0, false};
    if (rp_urdf_parse(r->urdf, r->urdf_len, r->srdf, r->srdf_len, &opts, &r->parsed, &ue) !=
        RP_URDF_OK)
        kb_die("arm7: %s line %lu: %s", ue.where, ue.line, ue.reason);
    rp_model_def def = *rp_urdf_def(r->parsed);
    def.self_collision = self_collision;
    rp_model_error me;
    if (rp_store_model_put(store, name, &def, &r->model, &me) != RP_OK)
        kb_die("arm7: model put: problem %d index %zu", (int)me.problem, me.index);
    r->dof = rp_model_dof(r->model);
    if (r->dof > KB_MAX_DOF)
        kb_die("arm7: %zu active joints, at most %d", r->dof, KB_MAX_DOF);
    for (size_t i = 0; i < r->dof; i++)
        if (!rp_model_dof_limits(r->model, i, &r->lo[i], &r->hi[i]))
            r->lo[i] = -KB_PI, r->hi[i] = KB_PI; /* continuous: one turn */
}

void kb_robot_free(kb_robot *r)
{
    rp_urdf_free(r->parsed);
    free(r->urdf);
    free(r->srdf);
    memset(r, 0, sizeof *r);
}

/* ---- scenes ----------------------------------------------------------------------- */

static void scene_reserve(kb_scene *s, size_t cap)
{
    s->puts = kb_alloc(cap, sizeof *s->puts);
    s->ids = kb_alloc(cap, ID_LEN);
    s->n = 0;
    s->cap = cap;
}

static void scene_add(kb_scene *s, char prefix, rp_shape shape)
{
    if (s->n == s->cap)
        kb_die("scene: more than %zu shapes", s->cap);
    if (rp_shape_validate(&shape) != RP_OK)
        kb_die("scene: shape %zu invalid", s->n);
    char *id = s->ids + s->n * ID_LEN;
    snprintf(id, ID_LEN, "%c%zu", prefix, s->n);
    s->puts[s->n].id = id;
    s->puts[s->n].shape = shape;
    s->n++;
}

static rp_shape capsule(double ax, double ay, double az, double bx, double by, double bz, double r)
{
    rp_capsule c = {{ax, ay, az}, {bx, by, bz}, r};
    return rp_shape_from_capsule(c);
}

static rp_shape sphere(double x, double y, double z, double r)
{
    rp_sphere sp = {{x, y, z}, r};
    return rp_shape_from_sphere(sp);
}

/* An axis-aligned box centred at c, turned about z by yaw, as capsules
 * whose union encloses it (the rule the URDF importer used for <box> before
 * it made exact boxes; kept so that the workload, and its numbers, stay the
 * same, and so that kin_socket_bench can send it as spheres and capsules).
 * Edges s1 >= s2 >= s3: the box is cut across s2 into n = min(ceil(s2 /
 * s3), 16) slabs, each a capsule along s1 through the slab's centre line
 * with radius half the diagonal of the slab's cross-section (enlarged by
 * 1e-12 of itself against rounding). */
static void add_box(kb_scene *s, double cx, double cy, double cz, double sx, double sy, double sz,
                    double yaw)
{
    const double size[3] = {sx, sy, sz};
    int ax[3] = {0, 1, 2};
    for (int i = 1; i < 3; i++) /* descending, stable */
        for (int k = i; k > 0 && size[ax[k]] > size[ax[k - 1]]; k--) {
            int tmp = ax[k];
            ax[k] = ax[k - 1];
            ax[k - 1] = tmp;
        }
    double s1 = size[ax[0]], s2 = size[ax[1]], s3 = size[ax[2]];
    double ratio = s2 / s3;
    size_t n = ratio >= 16 ? 16 : (size_t)ceil(ratio);
    double r = hypot(s2 / (double)n, s3) / 2 * (1 + 1e-12);
    double c = cos(yaw), sn = sin(yaw);
    for (size_t j = 0; j < n; j++) {
        double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
        a[ax[0]] = -s1 / 2;
        b[ax[0]] = s1 / 2;
        a[ax[1]] = b[ax[1]] = s2 * ((double)(2 * j + 1) - (double)n) / (double)(2 * n);
        scene_add(s, 't',
                  capsule(cx + c * a[0] - sn * a[1], cy + sn * a[0] + c * a[1], cz + a[2],
                          cx + c * b[0] - sn * b[1], cy + sn * b[0] + c * b[1], cz + b[2], r));
    }
}

/* The same box exact (rp_box, turned about z by yaw). */
static void add_exact_box(kb_scene *s, double cx, double cy, double cz, double sx, double sy,
                          double sz, double yaw)
{
    rp_box b;
    if (rp_box_new((rp_vec3){cx, cy, cz}, (rp_vec3){sx / 2, sy / 2, sz / 2}, cos(yaw / 2), 0, 0,
                   sin(yaw / 2), &b) != RP_OK)
        kb_die("scene: bad box");
    scene_add(s, 'c', rp_shape_from_box(b));
}

void kb_scene_cell(kb_scene *s, bool exact)
{
    void (*box)(kb_scene *, double, double, double, double, double, double, double) =
        exact ? add_exact_box : add_box;
    scene_reserve(s, 512);
    /* A table: top (surface at z = 0) and four legs. */
    box(s, 0.6, 0.0, -0.02, 0.9, 1.6, 0.04, 0.0);
    for (int k = 0; k < 4; k++)
        box(s, k & 1 ? 1.0 : 0.2, k & 2 ? 0.75 : -0.75, -0.42, 0.05, 0.05, 0.76, 0.0);
    /* Six boxes on it (crates, a tray, cartons), turned a little. */
    static const double on[6][5] = {
        {0.30, 0.20, 0.15, 0.55, -0.45}, {0.40, 0.30, 0.05, 0.75, 0.35},
        {0.20, 0.15, 0.10, 0.45, 0.25},  {0.10, 0.10, 0.25, 0.85, -0.10},
        {0.25, 0.25, 0.20, 0.95, -0.55}, {0.15, 0.30, 0.12, 0.40, -0.10},
    };
    for (int k = 0; k < 6; k++)
        box(s, on[k][3], on[k][4], on[k][2] / 2, on[k][0], on[k][1], on[k][2], 0.1 * (k - 2.5));
    /* A bookshelf beside the robot: two sides, back, top, bottom and four
     * shelves (0.8 m wide, 0.3 m deep, 1.5 m tall), its front at y = 0.45. */
    double x0 = -0.2, y0 = 0.6, w = 0.8, d = 0.3, h = 1.5, t = 0.02;
    box(s, x0 - w / 2, y0, h / 2 - 0.5, t, d, h, 0.0);
    box(s, x0 + w / 2, y0, h / 2 - 0.5, t, d, h, 0.0);
    box(s, x0, y0 + d / 2, h / 2 - 0.5, w, t, h, 0.0);
    for (int k = 0; k < 6; k++)
        box(s, x0, y0, -0.5 + h * k / 5.0, w, d, t, 0.0);
}

void kb_scene_cage(kb_scene *s)
{
    scene_reserve(s, 14);
    for (int ring = 0; ring < 2; ring++)
        for (int k = 0; k < 7; k++) {
            double a = 6.283185307179586 * (k + 0.5 * ring) / 7.0;
            scene_add(s, 'g', sphere(0.75 * cos(a), 0.75 * sin(a), ring ? 0.75 : 0.15, 0.05));
        }
}

void kb_scene_surfaces(kb_scene *s, size_t n)
{
    /* Axis-aligned boxes (centre, size) of kb_scene_cell, unturned: the
     * table top, the six boxes on it, the shelf's two sides, back and six
     * boards. */
    static const double box[][6] = {
        {0.6, 0.0, -0.02, 0.9, 1.6, 0.04},      {0.55, -0.45, 0.075, 0.30, 0.20, 0.15},
        {0.75, 0.35, 0.025, 0.40, 0.30, 0.05},  {0.45, 0.25, 0.05, 0.20, 0.15, 0.10},
        {0.85, -0.10, 0.125, 0.10, 0.10, 0.25}, {0.95, -0.55, 0.10, 0.25, 0.25, 0.20},
        {0.40, -0.10, 0.06, 0.15, 0.30, 0.12},  {-0.6, 0.6, 0.25, 0.02, 0.3, 1.5},
        {0.2, 0.6, 0.25, 0.02, 0.3, 1.5},       {-0.2, 0.75, 0.25, 0.8, 0.02, 1.5},
        {-0.2, 0.6, -0.5, 0.8, 0.3, 0.02},      {-0.2, 0.6, -0.2, 0.8, 0.3, 0.02},
        {-0.2, 0.6, 0.1, 0.8, 0.3, 0.02},       {-0.2, 0.6, 0.4, 0.8, 0.3, 0.02},
        {-0.2, 0.6, 0.7, 0.8, 0.3, 0.02},       {-0.2, 0.6, 1.0, 0.8, 0.3, 0.02},
    };
    size_t nb = sizeof box / sizeof box[0];
    double area[sizeof box / sizeof box[0]], total = 0.0;
    for (size_t b = 0; b < nb; b++) {
        const double *e = &box[b][3];
        area[b] = 2.0 * (e[0] * e[1] + e[1] * e[2] + e[0] * e[2]);
        total += area[b];
    }
    kb_rng rng = {KB_SEED_SURFACES};
    scene_reserve(s, n);
    for (size_t i = 0; i < n; i++) {
        /* A box by area, a face by area, a point on it. */
        double pick = kb_unit(&rng) * total;
        size_t b = 0;
        while (b + 1 < nb && pick >= area[b])
            pick -= area[b++];
        const double *c = box[b], *e = &box[b][3];
        double p[3];
        for (int a = 0; a < 3; a++)
            p[a] = c[a] + (kb_unit(&rng) - 0.5) * e[a];
        double fa[3] = {e[1] * e[2], e[0] * e[2], e[0] * e[1]};
        double f = kb_unit(&rng) * (fa[0] + fa[1] + fa[2]);
        int axis = f < fa[0] ? 0 : f < fa[0] + fa[1] ? 1 : 2;
        p[axis] = c[axis] + (kb_unit(&rng) < 0.5 ? -0.5 : 0.5) * e[axis];
        scene_add(s, 's', sphere(p[0], p[1], p[2], 0.01));
    }
}

void kb_scene_tabletop(kb_scene *s)
{
    kb_rng rng = {KB_SEED_TABLE};
    scene_reserve(s, 128);
    /* Table top: surface at z = 0. */
    add_box(s, 0.6, 0.0, -0.02, 0.9, 1.6, 0.04, 0.0);
    /* Legs and the robot's pedestal. */
    for (int k = 0; k < 4; k++) {
        double x = k & 1 ? 1.0 : 0.2, y = k & 2 ? 0.75 : -0.75;
        scene_add(s, 't', capsule(x, y, -0.75, x, y, -0.1, 0.03));
    }
    scene_add(s, 't', capsule(0, 0, -0.8, 0, 0, -0.22, 0.1));
    /* Boxes standing on the table: size, position. */
    static const double boxes[5][5] = {
        {0.30, 0.20, 0.15, 0.55, -0.45}, /* crate */
        {0.40, 0.30, 0.05, 0.75, 0.35},  /* tray */
        {0.20, 0.15, 0.10, 0.45, 0.25},  /* carton */
        {0.10, 0.10, 0.25, 0.85, -0.10}, /* block */
        {0.25, 0.25, 0.20, 0.95, -0.55}, /* bin */
    };
    for (int k = 0; k < 5; k++)
        add_box(s, boxes[k][3], boxes[k][4], boxes[k][2] / 2, boxes[k][0], boxes[k][1], boxes[k][2],
                kb_uniform(&rng, -0.5, 0.5));
    /* Upright cylinders (bottles, cans). */
    for (int k = 0; k < 6; k++) {
        double x = kb_uniform(&rng, 0.3, 1.0), y = kb_uniform(&rng, -0.7, 0.7);
        double r = kb_uniform(&rng, 0.03, 0.05), h = kb_uniform(&rng, 0.1, 0.3);
        scene_add(s, 't', capsule(x, y, r, x, y, h > 2 * r ? h - r : r, r));
    }
    /* Small objects lying on the table. */
    for (int k = 0; k < 40; k++) {
        double r = kb_uniform(&rng, 0.02, 0.05);
        scene_add(s, 't', sphere(kb_uniform(&rng, 0.3, 1.0), kb_uniform(&rng, -0.7, 0.7), r, r));
    }
    for (int k = 0; k < 20; k++) {
        double r = kb_uniform(&rng, 0.01, 0.02), len = kb_uniform(&rng, 0.1, 0.2);
        double x = kb_uniform(&rng, 0.3, 1.0), y = kb_uniform(&rng, -0.7, 0.7);
        double yaw = kb_uniform(&rng, 0, 2 * KB_PI), dx = cos(yaw) * len / 2,
               dy = sin(yaw) * len / 2;
        scene_add(s, 't', capsule(x - dx, y - dy, r, x + dx, y + dy, r, r));
    }
}

/* Uniform unit vector. */
static rp_vec3 direction(kb_rng *rng)
{
    for (;;) {
        double x = kb_uniform(rng, -1, 1), y = kb_uniform(rng, -1, 1), z = kb_uniform(rng, -1, 1);
        double n2 = x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1.0) {
            double k = 1.0 / sqrt(n2);
            rp_vec3 d = {x * k, y * k, z * k};
            return d;
        }
    }
}

void kb_scene_random(kb_scene *s, const rp_model *m, size_t n, double radius, double bubble)
{
    kb_rng rng = {KB_SEED_RANDOM};
    scene_reserve(s, n);
    /* The shapes fixed to the base (frame -1), in the world at base = identity. */
    size_t nl = rp_model_link_count(m), n_fixed = 0;
    rp_shape *fixed = kb_alloc(nl, sizeof *fixed);
    for (size_t i = 0; i < nl; i++) {
        const rp_link *l = rp_model_link_at(m, i);
        if (l->frame < 0)
            fixed[n_fixed++] = l->shape;
    }
    while (s->n < n) {
        double x = kb_uniform(&rng, -1, 1), y = kb_uniform(&rng, -1, 1),
               z = kb_uniform(&rng, -0.5, 1.5);
        double r = radius * kb_uniform(&rng, 0.5, 1.0);
        rp_shape sh;
        if (s->n % 2 == 0) {
            sh = sphere(x, y, z, r);
        } else {
            rp_vec3 d = direction(&rng);
            double h = kb_uniform(&rng, 0, 4 * radius) / 2;
            sh = capsule(x - d.x * h, y - d.y * h, z - d.z * h, x + d.x * h, y + d.y * h,
                         z + d.z * h, r);
        }
        /* The clear ball around the shoulder: no core point inside it. */
        double dz = z - KB_SHOULDER_Z, reach = sqrt(x * x + y * y + dz * dz);
        bool clear = reach >= bubble + (sh.kind == RP_SHAPE_CAPSULE ? 2 * radius : 0.0);
        for (size_t k = 0; k < n_fixed && clear; k++)
            clear = rp_shape_signed_distance(&sh, &fixed[k]) >= 0.02;
        if (clear)
            scene_add(s, 'r', sh);
    }
    free(fixed);
}

void kb_scene_free(kb_scene *s)
{
    free(s->puts);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

rp_scene *kb_scene_create(rp_store *st, const char *name, const kb_scene *s)
{
    rp_scene *sc = NULL;
    if (rp_store_create(st, name, s->puts, s->n, &sc) != RP_OK || rp_scene_prepare(sc) != RP_OK)
        kb_die("scene %s: create failed", name);
    return sc;
}

/* ---- configurations and edges ------------------------------------------------------- */

static void random_config(const kb_robot *r, kb_rng *rng, double *q)
{
    for (size_t i = 0; i < r->dof; i++)
        q[i] = kb_uniform(rng, r->lo[i], r->hi[i]);
}

double *kb_configs(const kb_robot *r, size_t n, uint64_t seed)
{
    kb_rng rng = {seed};
    double *q = kb_alloc(n * r->dof, sizeof *q);
    for (size_t k = 0; k < n; k++)
        random_config(r, &rng, &q[k * r->dof]);
    return q;
}

double *kb_edges(const kb_robot *r, const rp_scene *scene, size_t n, uint64_t seed)
{
    kb_rng rng = {seed};
    size_t dof = r->dof;
    double *e = kb_alloc(2 * n * dof, sizeof *e);
    rp_check_opts first = {RP_REPORT_FIRST, false, 0.0, NULL, NULL, 0};
    for (size_t k = 0; k < n; k++) {
        double *a = &e[2 * k * dof], *b = a + dof;
        for (int tries = 0;; tries++) {
            if (tries > 100000)
                kb_die("edges: no clear start configuration in 100000 tries");
            random_config(r, &rng, a);
            rp_check_result res;
            if (rp_model_check_joints(r->model, scene, NULL, a, &first, &res) != RP_OK)
                kb_die("edges: check failed");
            bool clear = !res.collision;
            rp_check_result_free(&res);
            if (clear)
                break;
        }
        random_config(r, &rng, b);
        double big = 0.0, len = kb_uniform(&rng, KB_EDGE_MIN, KB_EDGE_MAX);
        for (size_t i = 0; i < dof; i++)
            big = fmax(big, fabs(b[i] - a[i]));
        double s = big > len ? len / big : 1.0;
        for (size_t i = 0; i < dof; i++)
            b[i] = a[i] + s * (b[i] - a[i]);
    }
    return e;
}
