/* SPDX-License-Identifier: MIT */
/*
 * Point clouds (docs/ARCHITECTURE.md, Point clouds): spheres of one radius
 * built from a depth camera's points, one per point or per occupied voxel.
 *
 * A cloud is stored apart from the scene's entries, compactly: centres in
 * floats and a tree of its own (bvh.c builds it), about 56 bytes a sphere
 * against some 150 for a scene shape with its id.  Building one sorts the
 * points along a Morton curve (a radix sort of 63-bit keys: the voxel's
 * cell, or the point quantised over the cloud's box), merges a voxel's
 * points into their centroid, and splits the sorted run in halves for the
 * tree: O(n), deterministic, and independent of the store, so the daemon
 * builds it before the mutation that puts it in.  A cloud is immutable and
 * reference-counted; the scene holds it through an object (objects.c) of
 * no shapes, so names, `ignore`, removal and versions work as for objects.
 * Its spheres take the storage indices after the scene's entries, clouds
 * in name order; the tree walks (bvh.c) visit each cloud's tree after the
 * scene's own.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene_int.h"

/* ---- Morton keys and the radix sort --------------------------------------------- */

/* The 8 bits of a byte spread to every third bit (24 bits). */
#define S3(b)                                                                                      \
    ((((b)&1u) | ((b)&2u) << 2 | ((b)&4u) << 4 | ((b)&8u) << 6 | ((b)&16u) << 8 |                  \
      ((b)&32u) << 10 | ((b)&64u) << 12 | ((b)&128u) << 14))
#define S3_4(b) S3(b), S3((b) + 1u), S3((b) + 2u), S3((b) + 3u)
#define S3_16(b) S3_4(b), S3_4((b) + 4u), S3_4((b) + 8u), S3_4((b) + 12u)
#define S3_64(b) S3_16(b), S3_16((b) + 16u), S3_16((b) + 32u), S3_16((b) + 48u)
static const uint32_t spread8[256] = {S3_64(0u), S3_64(64u), S3_64(128u), S3_64(192u)};

/* The low 21 bits of x spread to every third bit. */
static inline uint64_t spread21(uint64_t x)
{
    return (uint64_t)spread8[x & 0xff] | (uint64_t)spread8[(x >> 8) & 0xff] << 24 |
           (uint64_t)spread8[(x >> 16) & 0x1f] << 48;
}

static inline uint64_t morton(uint64_t x, uint64_t y, uint64_t z)
{
    return spread21(x) | spread21(y) << 1 | spread21(z) << 2;
}

typedef struct keyed {
    uint64_t key;
    uint32_t index;
} keyed;

/* Sorts a[0..n) by key, stably (least significant byte first), with b as
 * scratch; the result ends in *out (a or b).  One pass counts every byte
 * position; a position where all keys agree moves nothing and is skipped
 * (a cloud a few metres wide in centimetre cells uses four of the eight). */
static void radix_sort(keyed *a, keyed *b, size_t n, keyed **out)
{
    size_t count[8][256]; /* (16 KiB of stack) */
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            count[d][(a[i].key >> (8 * d)) & 0xff]++;
    for (int d = 0; d < 8; d++) {
        size_t *c = count[d];
        if (n == 0 || c[(a[0].key >> (8 * d)) & 0xff] == n)
            continue; /* every key has this byte */
        size_t pos = 0;
        for (int v = 0; v < 256; v++) {
            size_t k = c[v];
            c[v] = pos;
            pos += k;
        }
        int shift = 8 * d;
        for (size_t i = 0; i < n; i++)
            b[c[(a[i].key >> shift) & 0xff]++] = a[i];
        keyed *t = a;
        a = b;
        b = t;
    }
    *out = a;
}

/* ---- building ----------------------------------------------------------------- */

static rp_cloud *cloud_alloc(size_t n)
{
    rp_cloud *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->refs = 1;
    rp_bvh_init_(&c->tree);
    if (n && !(c->xyz = malloc(n * 3 * sizeof *c->xyz))) {
        free(c);
        return NULL;
    }
    c->n = n;
    c->bytes = sizeof *c + n * 3 * sizeof *c->xyz;
    return c;
}

#define MAX2(a, b) ((a) > (b) ? (a) : (b))

/* floor(x) for |x| < 2^52 without a libm call. */
static inline double floor_small(double x)
{
    double t = (double)(int64_t)x;
    return t > x ? t - 1.0 : t;
}

/* Keys for the points: their voxel cells' Morton codes (relative to the
 * lowest cell), or with voxel 0 the points quantised to 2^21 steps over
 * the cloud's box.  RP_ERR_LIMIT when the cells span too far.  (Division
 * is correctly rounded, hence monotonic: the lowest and highest cells are
 * those of the lowest and highest coordinates.) */
static rp_status make_keys(const float *xyz, size_t n, double voxel, keyed *k)
{
    double lo[3], hi[3], scale[3];
    for (int a = 0; a < 3; a++)
        lo[a] = INFINITY, hi[a] = -INFINITY;
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            double v = xyz[3 * i + a];
            lo[a] = v < lo[a] ? v : lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
    bool small = true; /* every cell index below 2^52 in magnitude */
    for (int a = 0; a < 3 && n; a++) {
        if (voxel > 0.0) {
            lo[a] = floor(lo[a] / voxel);
            hi[a] = floor(hi[a] / voxel);
            /* (an infinite quotient fails here) */
            if (!(hi[a] - lo[a] < (double)RP_CLOUD_MAX_VOXELS))
                return RP_ERR_LIMIT;
            small = small && fabs(lo[a]) < 0x1p52 && fabs(hi[a]) < 0x1p52;
            scale[a] = 1.0;
        } else {
            double span = hi[a] - lo[a];
            scale[a] = span > 0.0 ? (double)(RP_CLOUD_MAX_VOXELS - 1) / span : 0.0;
        }
    }
    const double top = (double)(RP_CLOUD_MAX_VOXELS - 1);
    if (voxel > 0.0 && small) { /* the usual case: cells in a few metres */
        /* The cell less the lowest one, floor(p / voxel) - lo, through a
         * product with the reciprocal: p * inv - lo is within 4 eps M of
         * p / voxel - lo (M bounds |p / voxel| and |lo|), so where its
         * fraction is further than that from an integer, truncating it
         * gives the cell (it is >= 0 there); only the rare value closer
         * to a cell's edge divides. */
        double inv = 1.0 / voxel, tol[3];
        for (int a = 0; a < 3; a++)
            tol[a] = 16.0 * DBL_EPSILON * (2.0 * MAX2(fabs(lo[a]), fabs(hi[a])) + 4.0);
        for (size_t i = 0; i < n; i++) {
            uint64_t c[3];
            for (int a = 0; a < 3; a++) {
                double p = xyz[3 * i + a], q = p * inv - lo[a];
                double t = (double)(int64_t)q, frac = q - t;
                if (__builtin_expect(frac < tol[a] || frac > 1.0 - tol[a], 0))
                    t = floor_small(p / voxel) - lo[a];
                c[a] = (uint64_t)t;
            }
            k[i].key = morton(c[0], c[1], c[2]);
            k[i].index = (uint32_t)i;
        }
        return RP_OK;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t c[3];
        for (int a = 0; a < 3; a++) {
            double v = xyz[3 * i + a];
            v = voxel > 0.0 ? floor(v / voxel) - lo[a] : (v - lo[a]) * scale[a];
            v = v > 0.0 ? v : 0.0; /* (rounding may step past the ends) */
            c[a] = (uint64_t)(v < top ? v : top);
        }
        k[i].key = morton(c[0], c[1], c[2]);
        k[i].index = (uint32_t)i;
    }
    return RP_OK;
}

/* isfinite for a float, on its bits (no conversion to double). */
static inline bool finite_f(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x7f800000u) != 0x7f800000u;
}

rp_status rp_cloud_new(const float *xyz, size_t n, double radius, double voxel, rp_cloud **out,
                       size_t *bad)
{
    *out = NULL;
    if (bad)
        *bad = SIZE_MAX;
    if (!isfinite(radius))
        return RP_ERR_RADIUS_NONFINITE;
    if (radius < 0.0)
        return RP_ERR_RADIUS_NEGATIVE;
    if (!isfinite(voxel) || voxel < 0.0)
        return RP_ERR_INVALID_ARG;
    if (n > RP_CLOUD_MAX_POINTS)
        return RP_ERR_LIMIT;
    for (size_t i = 0; i < 3 * n; i++)
        if (!finite_f(xyz[i])) {
            if (bad)
                *bad = i / 3;
            return RP_ERR_NONFINITE;
        }
    keyed *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b), *sorted;
    float *merged = NULL;
    rp_cloud *c = NULL;
    rp_status st = RP_ERR_NOMEM;
    if (!a || !b)
        goto out;
    /* With a voxel: the points sorted by cell, each cell's run merged into
     * its centroid. */
    const float *pts = xyz;
    size_t m = n;
    if (voxel > 0.0) {
        if ((st = make_keys(xyz, n, voxel, a)) != RP_OK)
            goto out;
        radix_sort(a, b, n, &sorted);
        m = 0;
        for (size_t i = 0; i < n; i++)
            m += i == 0 || sorted[i].key != sorted[i - 1].key;
        st = RP_ERR_NOMEM;
        if (!(merged = malloc((m ? m : 1) * 3 * sizeof *merged)))
            goto out;
        size_t k = 0;
        for (size_t i = 0; i < n; k++) {
            size_t j = i;
            double sum[3] = {0, 0, 0};
            for (; j < n && sorted[j].key == sorted[i].key; j++)
                for (int d = 0; d < 3; d++)
                    sum[d] += xyz[3 * (size_t)sorted[j].index + (size_t)d];
            /* (The centroid lies within its points' range: a finite float.) */
            for (int d = 0; d < 3; d++)
                merged[3 * k + (size_t)d] = (float)(sum[d] / (double)(j - i));
            i = j;
        }
        pts = merged;
    }
    /* The spheres in the order of their centres quantised over their own
     * box, ties in the order they came: the same order whether they came
     * from a voxel grid or as points, so a cloud put again from its own
     * centres (a journal's replay) keeps every sphere's position. */
    make_keys(pts, m, 0.0, a); /* (cannot fail without a voxel) */
    radix_sort(a, b, m, &sorted);
    if (!(c = cloud_alloc(m)))
        goto out;
    c->n_input = n;
    c->radius = radius;
    c->voxel = voxel;
    for (size_t i = 0; i < m; i++)
        memcpy(c->xyz + 3 * i, pts + 3 * (size_t)sorted[i].index, 3 * sizeof(float));
    st = RP_OK;
out:
    free(a);
    free(b);
    free(merged);
    if (st) {
        rp_cloud_release(c);
        return st;
    }
    if (!rp_cloud_tree_build_(c)) {
        rp_cloud_release(c);
        return RP_ERR_NOMEM;
    }
    *out = c;
    return RP_OK;
}

void rp_cloud_release(rp_cloud *c)
{
    if (!c || --c->refs)
        return;
    size_t bytes = 0;
    rp_bvh_free_nodes_(&c->tree, &bytes);
    free(c->xyz);
    free(c);
}

void rp_cloud_retain_(rp_cloud *c)
{
    c->refs++;
}

size_t rp_cloud_size(const rp_cloud *c)
{
    return c->n;
}

double rp_cloud_radius(const rp_cloud *c)
{
    return c->radius;
}

double rp_cloud_voxel(const rp_cloud *c)
{
    return c->voxel;
}

size_t rp_cloud_input_points(const rp_cloud *c)
{
    return c->n_input;
}

const float *rp_cloud_centres(const rp_cloud *c)
{
    return c->xyz;
}

size_t rp_cloud_bytes(const rp_cloud *c)
{
    return c->bytes;
}

/* ---- clouds in scenes ---------------------------------------------------------- */

const rp_cloud *rp_object_cloud(const rp_object *o)
{
    return o->cloud;
}

size_t rp_scene_cloud_member(const rp_scene *sc, size_t index, const rp_object **cloud)
{
    if (index < sc->count || !sc->objects)
        return SIZE_MAX;
    size_t k = index - sc->count;
    for (size_t j = 0; j < sc->objects->n_clouds; j++) {
        const rp_object *o = sc->objects->clouds[j];
        if (k < o->cloud->n) {
            if (cloud)
                *cloud = o;
            return k;
        }
        k -= o->cloud->n;
    }
    return SIZE_MAX;
}

size_t rp_scene_cloud_spheres(const rp_scene *sc)
{
    return sc->objects ? sc->objects->cloud_spheres : 0;
}

const rp_shape *rp_scene_cloud_shape_(const rp_scene *sc, size_t e, rp_shape *buf)
{
    const rp_object *o = NULL;
    size_t k = rp_scene_cloud_member(sc, e, &o);
    *buf = rp_cloud_sphere_(o->cloud, k);
    return buf;
}

size_t rp_scene_id_format(const rp_scene *sc, size_t index, char *buf, size_t cap)
{
    const rp_object *o;
    size_t k = rp_scene_cloud_member(sc, index, &o);
    int len = k == SIZE_MAX ? snprintf(buf, cap, "%s", RP_ENTRY(sc, index)->id)
                            : snprintf(buf, cap, "%s/%zu", o->name, k);
    return len > 0 ? (size_t)len : 0;
}

/* The id of storage index e: an entry's own string, or made into buf (n
 * bytes), or into *heap when it does not fit (the caller frees it); NULL
 * when out of memory. */
static const char *index_id(const rp_scene *sc, size_t e, char *buf, size_t n, char **heap)
{
    if (e < sc->count)
        return RP_ENTRY(sc, e)->id;
    size_t need = rp_scene_id_format(sc, e, buf, n) + 1;
    if (need <= n)
        return buf;
    if (!(*heap = malloc(need)))
        return NULL;
    rp_scene_id_format(sc, e, *heap, need);
    return *heap;
}

int rp_scene_index_cmp_(const rp_scene *sc, size_t a, size_t b)
{
    if (a < sc->count && b < sc->count)
        return strcmp(RP_ENTRY(sc, a)->id, RP_ENTRY(sc, b)->id);
    /* A cloud's sphere k is "name/k": compare the strings (a tie between
     * distances, rare: made here rather than stored). */
    char sa[160], sb[160], *ha = NULL, *hb = NULL;
    const char *ia = index_id(sc, a, sa, sizeof sa, &ha), *ib = index_id(sc, b, sb, sizeof sb, &hb);
    /* (Out of memory: storage order, a total order all the same.) */
    int c = ia && ib ? strcmp(ia, ib) : (a > b) - (a < b);
    free(ha);
    free(hb);
    return c;
}

bool rp_cloud_index_ignored_(const rp_scene *sc, size_t e)
{
    const rp_object *o;
    return rp_scene_cloud_member(sc, e, &o) != SIZE_MAX && rp_tag_ignored_(o->tag);
}
