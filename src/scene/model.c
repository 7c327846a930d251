/* SPDX-License-Identifier: MIT */
/*
 * Robot models in the store: named sets of link shapes on joint frames, kept
 * in an array sorted by name (binary search, model.list needs no sorting).
 *
 * A put validates the whole definition and builds the new model aside before
 * it touches the store, so an error changes nothing; a replacement then
 * swaps the pointer and frees the old model.  Every byte a model holds is
 * counted in model->bytes and added to store->bytes while the model exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "simd.h"
#include "util/grow.h"

_Thread_local uint64_t rp_build_steps_;

/* Steps of a name lookup or of a shape it names (rp_build_steps_). */
#define LOOKUP_STEPS 16

/* ---- the store's model array ---------------------------------------------- */

/* Capacity of the model array for `count` models: none when empty, else the
 * next power of two >= count, at least 4.  A function of the count alone, so
 * that creating and then deleting a model returns rp_store_memory exactly to
 * where it was. */
static size_t array_cap_for(size_t count)
{
    if (count == 0)
        return 0;
    size_t cap = 4;
    while (cap < count)
        cap *= 2;
    return cap;
}

static const char *model_name_of(const void *item)
{
    return ((const rp_model *)item)->name;
}

/* Position of `name` among the models, or where it would be inserted. */
static size_t lower_bound(const rp_store *st, const char *name, bool *found)
{
    return rp_name_lower_bound_((void *const *)st->models, st->model_count, model_name_of, name,
                                found);
}

rp_model *rp_store_model_find(const rp_store *st, const char *name)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    return found ? st->models[i] : NULL;
}

size_t rp_store_model_count(const rp_store *st)
{
    return st->model_count;
}
const rp_model *rp_store_model_at(const rp_store *st, size_t i)
{
    return st->models[i];
}

/* ---- accessors ----------------------------------------------------------- */

const char *rp_model_name(const rp_model *m)
{
    return m->name;
}
uint64_t rp_model_revision(const rp_model *m)
{
    return m->revision;
}
size_t rp_model_link_count(const rp_model *m)
{
    return m->n_links;
}
const rp_link *rp_model_link_at(const rp_model *m, size_t i)
{
    return &m->links[i];
}
double rp_model_safety_margin(const rp_model *m)
{
    return m->safety_margin;
}
bool rp_model_self_collision(const rp_model *m)
{
    return m->self_collision;
}
size_t rp_model_allowed_count(const rp_model *m)
{
    return m->n_allowed;
}
size_t rp_model_frame_count(const rp_model *m)
{
    return m->frame_count;
}

void rp_model_allowed_at(const rp_model *m, size_t i, size_t *link_a, size_t *link_b)
{
    *link_a = m->allowed[2 * i];
    *link_b = m->allowed[2 * i + 1];
}

/* ---- building -------------------------------------------------------------- */

/* Frees a model's memory without touching the store's accounting: for a
 * model that never reached the store, and as the second half of
 * rp_model_free_. */
static void model_destroy(rp_model *m)
{
    if (!m)
        return;
    free(m->name);
    free(m->def);
    free(m->links);
    free(m->id_chars);
    free(m->allowed);
    free(m->skip);
    free(m->as_pairs);
    free(m->as_first);
    free(m->as_ids);
    free(m->shape_link);
    free(m->shape_local);
    free(m->bounds);
    free(m->balls);
    free(m->slot_first);
    free(m->slot_shapes);
    free(m->slot_ball_r);
    free(m->blocks);
    free(m->block_masks);
    free(m->pair_a);
    free(m->pair_b);
    free(m->pair_r);
    free(m->block_pair_first);
    free(m->gate_a);
    free(m->gate_b);
    free(m->gate_r);
    for (size_t i = 0; i < m->n_strs; i++)
        free(m->strs[i]);
    free(m->strs);
    rp_kin_release_(m->kin);
    free(m);
}

void rp_model_free_(rp_model *m)
{
    if (!m)
        return;
    m->store->bytes -= m->bytes;
    model_destroy(m);
}

void rp_model_free(rp_model *m)
{
    if (m && !m->store)
        model_destroy(m);
}

/* malloc that counts what it got into m->bytes (never asks for 0 bytes, so
 * NULL always means out of memory). */
void *rp_model_alloc_(rp_model *m, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p)
        m->bytes += size;
    return p;
}

#define model_alloc rp_model_alloc_

char *rp_model_strdup_(rp_model *m, const char *s)
{
    if (m->n_strs == m->cap_strs) {
        size_t old = m->cap_strs;
        char **grown = rp_grow_(m->strs, &m->cap_strs, m->n_strs + 1, sizeof *grown, 16);
        if (!grown)
            return NULL;
        m->bytes += (m->cap_strs - old) * sizeof *grown;
        m->strs = grown;
    }
    size_t len = strlen(s) + 1;
    char *p = model_alloc(m, len);
    if (p) {
        memcpy(p, s, len);
        m->strs[m->n_strs++] = p;
    }
    return p;
}

/* Link ids by name during validation (util/strtab.h): values are link
 * indices into def->links.  Lives only for one put; model puts are rare and
 * ids short, so hashes are recomputed rather than stored. */
static const char *link_id(const void *ctx, uint32_t k)
{
    return ((const rp_link *)ctx)[k].id;
}

static uint32_t link_hash(const void *ctx, uint32_t k)
{
    return rp_strhash_(((const rp_link *)ctx)[k].id);
}

static bool kinematic_def(const rp_model_def *def)
{
    return def->n_joints || def->shape_links || def->link_names;
}

/* Checks everything but the allowed pairs, link by link in definition
 * order (each link: duplicate id, frame, shape), then the margin, and fills
 * the id table.  Returns false with *err set at the first problem. */
static bool validate_links(const rp_model_def *def, rp_strtab *t, rp_model_error *err)
{
    bool kinematic = kinematic_def(def);
    for (size_t k = 0; k < def->n_links; k++) {
        const rp_link *l = &def->links[k];
        size_t slot;
        uint32_t hash = rp_strhash_(l->id);
        rp_model_problem p = RP_MODEL_OK;
        if (rp_strtab_find_(t, l->id, hash, &slot))
            p = RP_MODEL_DUPLICATE_LINK;
        else if (!kinematic && l->frame < -1)
            p = RP_MODEL_BAD_FRAME;
        else if (rp_shape_validate(&l->shape) != RP_OK || l->shape.kind == RP_SHAPE_HALFSPACE)
            p = RP_MODEL_BAD_SHAPE; /* (a half-space is the world's, never a link) */
        if (p != RP_MODEL_OK) {
            err->problem = p;
            err->index = k;
            return false;
        }
        rp_strtab_insert_at_(t, slot, (uint32_t)k);
    }
    if (!isfinite(def->safety_margin) || def->safety_margin < 0) {
        err->problem = RP_MODEL_BAD_MARGIN;
        return false;
    }
    return true;
}

/* Resolves the allowed pairs to link indices in allowed[0 .. 2*n_allowed).
 * Returns false with *err set at the first name that is no link. */
static bool resolve_pairs(const rp_model_def *def, const rp_strtab *t, size_t *allowed,
                          rp_model_error *err)
{
    for (size_t i = 0; i < 2 * def->n_allowed; i++) {
        const char *id = def->allowed_pairs[i];
        size_t slot;
        if (!rp_strtab_find_(t, id, rp_strhash_(id), &slot)) {
            err->problem = RP_MODEL_UNKNOWN_PAIR_LINK;
            err->index = i / 2;
            err->element = i % 2;
            return false;
        }
        allowed[i] = t->slots[slot];
    }
    return true;
}

static void set_bit(uint64_t *row, size_t j)
{
    row[j / 64] |= (uint64_t)1 << (j % 64);
}

static void set_pair(rp_model *m, size_t a, size_t b)
{
    set_bit(&m->skip[a * m->row_words], b);
    set_bit(&m->skip[b * m->row_words], a);
}

/* Shapes by tree link (kinematic models): shapes of link l are
 * list[first[l] .. first[l+1]).  Both arrays malloc'ed, or false. */
static bool shapes_by_link(const rp_model *m, size_t **first_out, size_t **list_out)
{
    size_t nl = m->kin->n_tree, n = m->n_links;
    size_t *first = calloc(nl + 1, sizeof *first);
    size_t *list = malloc((n ? n : 1) * sizeof *list);
    size_t *cur = malloc((nl ? nl : 1) * sizeof *cur);
    if (!first || !list || !cur) {
        free(first);
        free(list);
        free(cur);
        return false;
    }
    for (size_t s = 0; s < n; s++)
        first[m->shape_link[s] + 1]++;
    for (size_t l = 0; l < nl; l++)
        first[l + 1] += first[l];
    memcpy(cur, first, nl * sizeof *cur);
    for (size_t s = 0; s < n; s++)
        list[cur[m->shape_link[s]]++] = s;
    free(cur);
    *first_out = first;
    *list_out = list;
    return true;
}

static int cmp_pair(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* Builds the skip matrix of model_int.h: same-frame pairs, allowed pairs
 * (of shapes, or in a kinematic model of links: every shape of one with
 * every shape of the other), both orders, so a check can test either (i,
 * j) or (j, i).  Shapes from n_base_links on (attached ones) also skip each
 * other, and in the frame form attached shape a skips what base shape
 * inherit[a - n_base_links] skips (its link's row).  The work is at most
 * about n_links^2 bit operations whatever the allowed pairs repeat: the
 * kinematic link pairs are made unique first (a million copies of one pair
 * of big links would otherwise set the same bits a million times). */
static bool build_skip(rp_model *m, const size_t *inherit)
{
    size_t n = m->n_links, nb = m->n_base_links;
    m->row_words = (n + 63) / 64;
    if (m->row_words && n > SIZE_MAX / sizeof *m->skip / m->row_words)
        return false;
    m->skip = model_alloc(m, n * m->row_words * sizeof *m->skip);
    if (!m->skip)
        return false;
    memset(m->skip, 0, n * m->row_words * sizeof *m->skip);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (m->links[i].frame == m->links[j].frame || (i >= nb && j >= nb))
                set_bit(&m->skip[i * m->row_words], j);
    rp_build_steps_ += (uint64_t)n * n + 2 * (uint64_t)m->n_allowed;
    for (size_t p = 0; p < m->n_allowed; p++)
        set_pair(m, m->allowed[2 * p], m->allowed[2 * p + 1]);
    if (m->kin && m->kin->n_allowed_links) {
        size_t np = m->kin->n_allowed_links;
        size_t *pairs = malloc(2 * np * sizeof *pairs);
        size_t *first = NULL, *list = NULL;
        if (!pairs || !shapes_by_link(m, &first, &list)) {
            free(pairs);
            return false;
        }
        for (size_t p = 0; p < np; p++) {
            size_t a = m->kin->allowed_links[2 * p], b = m->kin->allowed_links[2 * p + 1];
            pairs[2 * p] = a < b ? a : b;
            pairs[2 * p + 1] = a < b ? b : a;
        }
        qsort(pairs, np, 2 * sizeof *pairs, cmp_pair);
        for (size_t p = 0; p < np; p++) {
            if (p > 0 && pairs[2 * p] == pairs[2 * p - 2] && pairs[2 * p + 1] == pairs[2 * p - 1])
                continue;
            size_t a = pairs[2 * p], b = pairs[2 * p + 1];
            rp_build_steps_ += 2 * (uint64_t)(first[a + 1] - first[a]) * (first[b + 1] - first[b]);
            for (size_t x = first[a]; x < first[a + 1]; x++)
                for (size_t y = first[b]; y < first[b + 1]; y++)
                    set_pair(m, list[x], list[y]);
        }
        free(pairs);
        free(first);
        free(list);
    }
    for (size_t a = nb; inherit && a < n; a++) {
        const uint64_t *row = &m->skip[inherit[a - nb] * m->row_words];
        rp_build_steps_ += 3 * (uint64_t)nb; /* a test, and two bits when set */
        for (size_t x = 0; x < nb; x++)
            if ((row[x / 64] >> (x % 64)) & 1u)
                set_pair(m, a, x);
    }
    return true;
}

/* Largest distance from c of a shape's core points, plus its radius. */
static double reach_from(rp_vec3 c, const rp_shape *s)
{
    rp_vec3 p[8];
    double r;
    int n = rp_link_points_(s, p, &r);
    double best = 0.0;
    for (int k = 0; k < n; k++) {
        double x = p[k].x - c.x, y = p[k].y - c.y, z = p[k].z - c.z;
        best = fmax(best, sqrt(x * x + y * y + z * z));
    }
    return best + r;
}

/* Whether some shape's core points or radius reach 1e100 (or are NaN):
 * sums of them could overflow, and the broadphase is not built. */
static bool too_large_for_bounds(const rp_model *m)
{
    for (size_t k = 0; k < m->n_links; k++) {
        rp_vec3 p[8];
        double r;
        int n = rp_link_points_(&m->links[k].shape, p, &r);
        double big = r;
        for (int i = 0; i < n; i++)
            big = fmax(big, fmax(fmax(fabs(p[i].x), fabs(p[i].y)), fabs(p[i].z)));
        if (!(big < 1e100))
            return true;
    }
    return false;
}

/* A bounding sphere per slot (m->bounds): centre the mean of its shapes'
 * core points, radius the farthest reach, rounded up so that it encloses
 * the shapes as computed.  False when out of memory. */
static bool build_slot_bounds(rp_model *m, size_t slots)
{
    size_t n = m->n_links;
    rp_bound *b = model_alloc(m, slots * sizeof *b);
    if (!b)
        return false;
    memset(b, 0, slots * sizeof *b);
    double *count = calloc(slots, sizeof *count);
    if (!count) {
        free(b);
        m->bytes -= slots * sizeof *b;
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        const rp_shape *s = &m->links[k].shape;
        rp_bound *f = &b[m->links[k].frame + 1];
        f->any = true;
        if (m->as_first && m->as_first[k] != m->as_first[k + 1])
            f->excl = true;
        rp_vec3 p[8];
        double r;
        int np = rp_link_points_(s, p, &r);
        for (int i = 0; i < np; i++) {
            f->c.x += p[i].x;
            f->c.y += p[i].y;
            f->c.z += p[i].z;
        }
        count[m->links[k].frame + 1] += np;
    }
    for (size_t f = 0; f < slots; f++)
        if (count[f] > 0) {
            b[f].c.x /= count[f];
            b[f].c.y /= count[f];
            b[f].c.z /= count[f];
        }
    free(count);
    for (size_t k = 0; k < n; k++) {
        rp_bound *f = &b[m->links[k].frame + 1];
        f->r = fmax(f->r, reach_from(f->c, &m->links[k].shape));
    }
    for (size_t f = 0; f < slots; f++)
        b[f].r = b[f].r * (1.0 + 1e-12) + 1e-300;
    m->bounds = b;
    return true;
}

/* A bounding sphere per shape (m->balls), and the shapes listed slot by
 * slot (slot_first, slot_shapes) with their spheres' radii in that order
 * (slot_ball_r).  False when out of memory. */
static bool build_shape_balls(rp_model *m, size_t slots)
{
    size_t n = m->n_links;
    m->balls = model_alloc(m, n * sizeof *m->balls);
    m->slot_first = model_alloc(m, (slots + 1) * sizeof *m->slot_first);
    m->slot_shapes = model_alloc(m, n * sizeof *m->slot_shapes);
    m->slot_ball_r = model_alloc(m, n * sizeof *m->slot_ball_r);
    if (!m->balls || !m->slot_first || !m->slot_shapes || !m->slot_ball_r)
        return false;
    for (size_t k = 0; k < n; k++) {
        const rp_shape *s = &m->links[k].shape;
        rp_ball *ball = &m->balls[k];
        if (s->kind == RP_SHAPE_CAPSULE) {
            ball->c = (rp_vec3){0.5 * (s->capsule.a.x + s->capsule.b.x),
                                0.5 * (s->capsule.a.y + s->capsule.b.y),
                                0.5 * (s->capsule.a.z + s->capsule.b.z)};
        } else if (s->kind == RP_SHAPE_BOX) {
            ball->c = s->box.center;
        } else {
            ball->c = s->sphere.center;
        }
        ball->r = reach_from(ball->c, s) * (1.0 + 1e-12) + 1e-300;
    }
    size_t at = 0;
    for (size_t f = 0; f < slots; f++) {
        m->slot_first[f] = (uint32_t)at;
        for (size_t k = 0; k < n; k++)
            if ((size_t)(m->links[k].frame + 1) == f)
                m->slot_shapes[at++] = (uint32_t)k;
    }
    m->slot_first[slots] = (uint32_t)at;
    for (size_t p = 0; p < n; p++)
        m->slot_ball_r[p] = m->balls[m->slot_shapes[p]].r;
    return true;
}

/* Frees the spheres of build_slot_bounds and build_shape_balls: checks
 * take the plain path. */
static void drop_bounds(rp_model *m, size_t slots)
{
    size_t n = m->n_links;
    m->bytes -= slots * sizeof *m->bounds + n * sizeof *m->balls +
                (slots + 1) * sizeof *m->slot_first + n * sizeof *m->slot_shapes +
                n * sizeof *m->slot_ball_r;
    free(m->bounds);
    free(m->balls);
    free(m->slot_first);
    free(m->slot_shapes);
    free(m->slot_ball_r);
    m->bounds = NULL;
    m->balls = NULL;
    m->slot_first = m->slot_shapes = NULL;
    m->slot_ball_r = NULL;
}

/* The eligible pairs of each block as lists (pair_a, pair_b, pair_r,
 * block_pair_first), in the blocks' row order, and the blocks' slot sphere
 * pairs (gate_a, gate_b, gate_r).  False when out of memory. */
static bool build_pair_lists(rp_model *m)
{
    size_t np = 0;
    for (size_t k = 0; k < m->n_blocks; k++) {
        const rp_pair_block *blk = &m->blocks[k];
        size_t rows = m->slot_first[blk->u + 1] - m->slot_first[blk->u];
        for (size_t w = 0; w < rows * blk->words; w++)
            np += (size_t)__builtin_popcountll(m->block_masks[blk->masks + w]);
    }
    m->block_pair_first = model_alloc(m, (m->n_blocks + 1) * sizeof *m->block_pair_first);
    m->pair_a = model_alloc(m, (np ? np : 1) * sizeof *m->pair_a);
    m->pair_b = model_alloc(m, (np ? np : 1) * sizeof *m->pair_b);
    m->pair_r = model_alloc(m, (np ? np : 1) * sizeof *m->pair_r);
    size_t nb = m->n_blocks ? m->n_blocks : 1;
    m->gate_a = model_alloc(m, nb * sizeof *m->gate_a);
    m->gate_b = model_alloc(m, nb * sizeof *m->gate_b);
    m->gate_r = model_alloc(m, nb * sizeof *m->gate_r);
    if (!m->block_pair_first || !m->pair_a || !m->pair_b || !m->pair_r || !m->gate_a ||
        !m->gate_b || !m->gate_r)
        return false;
    size_t at = 0;
    for (size_t k = 0; k < m->n_blocks; k++) {
        const rp_pair_block *blk = &m->blocks[k];
        m->block_pair_first[k] = (uint32_t)at;
        m->gate_a[k] = (uint16_t)(m->n_links + blk->u);
        m->gate_b[k] = (uint16_t)(m->n_links + blk->v);
        m->gate_r[k] = rp_f32_up_((m->bounds[blk->u].r + m->bounds[blk->v].r) * (1.0 + 0x1p-50));
        const uint64_t *masks = &m->block_masks[blk->masks];
        for (uint32_t a = m->slot_first[blk->u]; a < m->slot_first[blk->u + 1];
             a++, masks += blk->words)
            for (uint32_t w = 0; w < blk->words; w++)
                for (uint64_t bits = masks[w]; bits; bits &= bits - 1) {
                    uint32_t p = m->slot_first[blk->v] + 64 * w + (uint32_t)__builtin_ctzll(bits);
                    m->pair_a[at] = (uint16_t)a;
                    m->pair_b[at] = (uint16_t)p;
                    /* The sum, nudged past its own rounding, then rounded up. */
                    m->pair_r[at++] =
                        rp_f32_up_((m->slot_ball_r[a] + m->slot_ball_r[p]) * (1.0 + 0x1p-50));
                }
    }
    m->block_pair_first[m->n_blocks] = (uint32_t)at;
    return true;
}

/* The self pairs in blocks, one per slot pair with at least one eligible
 * pair (cell[u * slots + v], u <= v, set), each a bit matrix of its slots'
 * shapes (m->blocks, m->block_masks).  False when out of memory. */
static bool build_pair_blocks(rp_model *m, size_t slots, const unsigned char *cell, size_t nb)
{
    if (nb) {
        m->blocks = model_alloc(m, nb * sizeof *m->blocks);
        if (!m->blocks)
            return false;
    }
    size_t words = 0;
    for (size_t c = 0; c < slots * slots; c++) {
        if (!cell[c])
            continue;
        uint32_t u = (uint32_t)(c / slots), v = (uint32_t)(c % slots);
        uint32_t nu = m->slot_first[u + 1] - m->slot_first[u];
        uint32_t nv = m->slot_first[v + 1] - m->slot_first[v];
        uint32_t w = (nv + 63) / 64;
        m->blocks[m->n_blocks++] = (rp_pair_block){u, v, (uint32_t)words, w};
        words += (size_t)nu * w;
    }
    m->block_masks = model_alloc(m, words * sizeof *m->block_masks);
    if (!m->block_masks)
        return false;
    memset(m->block_masks, 0, words * sizeof *m->block_masks);
    for (size_t k = 0; k < m->n_blocks; k++) {
        const rp_pair_block *blk = &m->blocks[k];
        for (uint32_t a = m->slot_first[blk->u]; a < m->slot_first[blk->u + 1]; a++)
            for (uint32_t p = m->slot_first[blk->v]; p < m->slot_first[blk->v + 1]; p++) {
                size_t i = m->slot_shapes[a], j = m->slot_shapes[p];
                if (!rp_model_self_pair_(m, i < j ? i : j, i < j ? j : i))
                    continue;
                size_t row = a - m->slot_first[blk->u], col = p - m->slot_first[blk->v];
                m->block_masks[blk->masks + row * blk->words + col / 64] |= (uint64_t)1
                                                                            << (col % 64);
            }
    }
    return build_pair_lists(m);
}

/* The broadphase of model_int.h: a bounding sphere per slot and per shape,
 * and the self pairs in blocks by slot pair.  Skipped (bounds NULL: checks
 * take the plain path) for models past RP_BOUND_SLOTS slots,
 * RP_BOUND_LINKS shapes or RP_BOUND_PAIRS self pairs, or whose coordinates
 * are so large that sums could overflow.  False when out of memory. */
static bool build_broadphase(rp_model *m)
{
    size_t slots = m->frame_count + 1, n = m->n_links;
    if (slots > RP_BOUND_SLOTS || n > RP_BOUND_LINKS || too_large_for_bounds(m))
        return true;
    if (!build_slot_bounds(m, slots) || !build_shape_balls(m, slots))
        return false;
    if (!m->skip)
        return true;
    /* The slot pairs with at least one eligible pair. */
    unsigned char *cell = calloc(slots * slots, 1);
    if (!cell)
        return false;
    size_t np = 0, nb = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (rp_model_self_pair_(m, i, j)) {
                size_t u = (size_t)(m->links[i].frame + 1), v = (size_t)(m->links[j].frame + 1);
                size_t c = u < v ? u * slots + v : v * slots + u;
                nb += !cell[c];
                cell[c] = 1;
                np++;
            }
    bool ok = true;
    if (np > RP_BOUND_PAIRS) /* too many pairs: the plain path */
        drop_bounds(m, slots);
    else
        ok = build_pair_blocks(m, slots, cell, nb);
    free(cell);
    return ok;
}

/* ---- shapes by name ------------------------------------------------------------ */

/* What a link name or shape id stands for, found in constant time: the
 * builders below look up every allowed scene pair, attached shape and
 * touch link, and a scan of the links per name made a model with a million
 * allowed pairs cost pairs x links string comparisons (tens of seconds).
 * Built over `links` (the model's shapes, then any attached ones), for the
 * model `m` whose tree and base shapes they extend; lives for one build. */
typedef struct name_index {
    const rp_model *m;
    const rp_link *links;
    size_t n_links; /* shapes indexed in ids so far */
    rp_strtab ids;  /* shape ids -> shape index */
    rp_strtab tree; /* kinematic: tree link names -> tree link */
    size_t *first;  /* kinematic: the base shapes of tree link l are */
    size_t *list;   /* list[first[l] .. first[l + 1]) */
} name_index;

static const char *tree_name(const void *ctx, uint32_t k)
{
    return ((const rp_kin *)ctx)->tree_names[k];
}

static uint32_t tree_hash(const void *ctx, uint32_t k)
{
    return rp_strhash_(((const rp_kin *)ctx)->tree_names[k]);
}

static void name_index_free(name_index *ni)
{
    rp_strtab_free_(&ni->ids);
    rp_strtab_free_(&ni->tree);
    free(ni->first);
    free(ni->list);
}

/* Adds shape links[ni->n_links] to the id index.  False when its id is
 * already there (*nomem false) or memory ran out (*nomem true). */
static bool name_index_add(name_index *ni, bool *nomem)
{
    rp_build_steps_ += LOOKUP_STEPS;
    const char *id = ni->links[ni->n_links].id;
    uint32_t h = rp_strhash_(id);
    size_t slot;
    *nomem = false;
    if (!rp_strtab_reserve_(&ni->ids, ni->n_links + 1)) {
        *nomem = true;
        return false;
    }
    if (rp_strtab_find_(&ni->ids, id, h, &slot))
        return false;
    rp_strtab_insert_at_(&ni->ids, slot, (uint32_t)ni->n_links);
    ni->n_links++;
    return true;
}

/* Indexes m's tree and its n_base shapes links[0 .. n_base) (ids unique:
 * validated when m was put).  `links` may go on with attached shapes, which
 * name_index_add indexes one at a time.  False when out of memory. */
static bool name_index_init(name_index *ni, const rp_model *m, const rp_link *links, size_t n_base,
                            size_t n_total)
{
    memset(ni, 0, sizeof *ni);
    ni->m = m;
    ni->links = links;
    rp_strtab_init_(&ni->ids, link_id, link_hash, links);
    rp_strtab_init_(&ni->tree, tree_name, tree_hash, m->kin);
    bool nomem = false;
    if (!rp_strtab_reserve_(&ni->ids, n_total))
        return false;
    while (ni->n_links < n_base)
        if (!name_index_add(ni, &nomem) && nomem)
            return false;
    if (!m->kin)
        return true;
    if (!rp_strtab_reserve_(&ni->tree, m->kin->n_tree) || !shapes_by_link(m, &ni->first, &ni->list))
        return false;
    rp_build_steps_ += LOOKUP_STEPS * (uint64_t)m->kin->n_tree;
    for (size_t l = 0; l < m->kin->n_tree; l++) {
        const char *name = m->kin->tree_names[l];
        size_t slot;
        if (!rp_strtab_find_(&ni->tree, name, rp_strhash_(name), &slot))
            rp_strtab_insert_at_(&ni->tree, slot, (uint32_t)l);
    }
    return true;
}

/* The shape with id `id` among those indexed, or SIZE_MAX. */
static size_t name_index_id(const name_index *ni, const char *id)
{
    size_t slot;
    if (ni->ids.nslots == 0 || !rp_strtab_find_(&ni->ids, id, rp_strhash_(id), &slot))
        return SIZE_MAX;
    return ni->ids.slots[slot];
}

/* Kinematic: the tree link named `name`, or SIZE_MAX. */
static size_t name_index_tree(const name_index *ni, const char *name)
{
    rp_build_steps_ += LOOKUP_STEPS;
    size_t slot;
    if (!ni->m->kin || ni->tree.nslots == 0 ||
        !rp_strtab_find_(&ni->tree, name, rp_strhash_(name), &slot))
        return SIZE_MAX;
    return ni->tree.slots[slot];
}

/* Calls fn for each shape that `name` stands for and returns whether it
 * names anything: in a kinematic model a tree link (its own shapes) or
 * else an attached shape's id; in the frame form a shape's id. */
static bool name_index_each(const name_index *ni, const char *name, void (*fn)(void *, size_t),
                            void *ctx)
{
    rp_build_steps_ += LOOKUP_STEPS;
    if (ni->m->kin) {
        size_t l = name_index_tree(ni, name);
        if (l != SIZE_MAX) {
            for (size_t x = ni->first[l]; x < ni->first[l + 1]; x++)
                fn(ctx, ni->list[x]);
            return true;
        }
        size_t s = name_index_id(ni, name);
        if (s == SIZE_MAX || s < ni->m->n_links)
            return false; /* only attached shapes are named by id */
        fn(ctx, s);
        return true;
    }
    size_t s = name_index_id(ni, name);
    if (s == SIZE_MAX)
        return false;
    fn(ctx, s);
    return true;
}

/* The most shapes one name stands for: a tree link's shapes, else 1. */
static size_t name_index_max_shapes(const name_index *ni)
{
    size_t most = 1;
    for (size_t l = 0; ni->m->kin && l < ni->m->kin->n_tree; l++)
        if (ni->first[l + 1] - ni->first[l] > most)
            most = ni->first[l + 1] - ni->first[l];
    return most;
}

static void count_shape(void *ctx, size_t s)
{
    rp_build_steps_ += LOOKUP_STEPS;
    ((size_t *)ctx)[s]++;
}

typedef struct as_fill {
    size_t *cur;
    const char **ids;
    const char *id;
} as_fill;

static void fill_shape(void *ctx, size_t s)
{
    rp_build_steps_ += LOOKUP_STEPS;
    as_fill *f = ctx;
    f->ids[f->cur[s]++] = f->id;
}

/* Keeps the allowed (link, scene id) pairs (both lists, the model's own and
 * more) and indexes them by shape.  Returns RP_ERR_INVALID_ARG with
 * *bad_pair set (an index over both lists) for a link that names nothing. */
static rp_status build_allowed_scene(rp_model *m, const name_index *ni, const char *const *a,
                                     size_t na, const char *const *b, size_t nb, size_t *bad_pair)
{
    size_t n = na + nb;
    if (n == 0)
        return RP_OK;
    m->as_pairs = model_alloc(m, 2 * n * sizeof *m->as_pairs);
    m->as_first = model_alloc(m, (m->n_links + 1) * sizeof *m->as_first);
    if (!m->as_pairs || !m->as_first)
        return RP_ERR_NOMEM;
    bool ok = true;
    for (size_t i = 0; i < 2 * n; i++) {
        const char *s = i < 2 * na ? a[i] : b[i - 2 * na];
        if (!(m->as_pairs[i] = rp_model_strdup_(m, s)))
            ok = false;
    }
    if (!ok)
        return RP_ERR_NOMEM;
    m->n_as_pairs = n;
    /* Count per shape, then fill (CSR). */
    size_t *count = calloc(m->n_links + 1, sizeof *count);
    if (!count)
        return RP_ERR_NOMEM;
    for (size_t p = 0; p < n; p++)
        if (!name_index_each(ni, m->as_pairs[2 * p], count_shape, count)) {
            free(count);
            *bad_pair = p;
            return RP_ERR_INVALID_ARG;
        }
    m->as_first[0] = 0;
    for (size_t s = 0; s < m->n_links; s++)
        m->as_first[s + 1] = m->as_first[s] + count[s];
    size_t total = m->as_first[m->n_links];
    m->n_as_ids = total;
    m->as_ids = model_alloc(m, total * sizeof *m->as_ids);
    if (!m->as_ids) {
        free(count);
        return RP_ERR_NOMEM;
    }
    memcpy(count, m->as_first, m->n_links * sizeof *count);
    for (size_t p = 0; p < n; p++) {
        as_fill f = {count, m->as_ids, m->as_pairs[2 * p + 1]};
        name_index_each(ni, m->as_pairs[2 * p], fill_shape, &f);
    }
    free(count);
    return RP_OK;
}

/* Copies the shapes of a validated definition into a new model (not yet
 * in the store; its bytes not yet counted there).  NULL when out of memory. */
static rp_model *model_start(rp_store *st, const char *name, const rp_link *links, size_t n)
{
    rp_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->store = st;
    m->refs = 1;
    m->bytes = sizeof *m;
    m->n_links = m->n_base_links = n;
    size_t name_len = strlen(name) + 1, id_len = 0;
    for (size_t k = 0; k < n; k++)
        id_len += strlen(links[k].id) + 1;
    m->name = model_alloc(m, name_len);
    m->id_chars = model_alloc(m, id_len);
    m->links = model_alloc(m, n * sizeof *m->links);
    if (!m->name || !m->id_chars || !m->links) {
        model_destroy(m);
        return NULL;
    }
    memcpy(m->name, name, name_len);
    char *p = m->id_chars;
    for (size_t k = 0; k < n; k++) {
        size_t len = strlen(links[k].id) + 1;
        memcpy(p, links[k].id, len);
        m->links[k] = links[k];
        m->links[k].id = p;
        p += len;
    }
    return m;
}

/* Builds a validated definition into a new model; `allowed` (2*n_allowed
 * shape indices, frame form) is taken over.  RP_ERR_INVALID_ARG with *err
 * for what only compilation finds (the tree, allowed scene links). */
static rp_status model_build(rp_store *st, const char *name, const rp_model_def *def,
                             size_t *allowed, rp_model **out, rp_model_error *err)
{
    rp_model *m = model_start(st, name, def->links, def->n_links);
    if (!m) {
        free(allowed);
        return RP_ERR_NOMEM;
    }
    m->allowed = allowed;
    m->bytes += 2 * def->n_allowed * sizeof *allowed;
    size_t def_bytes = 0;
    if (!(m->def = rp_model_def_copy_(def, &def_bytes))) {
        model_destroy(m);
        return RP_ERR_NOMEM;
    }
    m->bytes += def_bytes;
    m->safety_margin = def->safety_margin;
    m->self_collision = def->self_collision;
    rp_status s = RP_OK;
    if (kinematic_def(def)) {
        s = rp_kin_compile_(m, def, err);
    } else {
        m->n_allowed = def->n_allowed;
        for (size_t k = 0; k < def->n_links; k++)
            if (m->links[k].frame >= 0 && (size_t)m->links[k].frame + 1 > m->frame_count)
                m->frame_count = (size_t)m->links[k].frame + 1;
    }
    name_index ni;
    memset(&ni, 0, sizeof ni);
    if (s == RP_OK && !name_index_init(&ni, m, m->links, m->n_links, m->n_links))
        s = RP_ERR_NOMEM;
    else if (s == RP_OK) {
        size_t bad = 0;
        m->max_name_shapes = name_index_max_shapes(&ni);
        s = build_allowed_scene(m, &ni, def->allowed_scene, def->n_allowed_scene, NULL, 0, &bad);
        if (s == RP_ERR_INVALID_ARG) {
            err->problem = RP_MODEL_UNKNOWN_SCENE_LINK;
            err->index = bad;
        }
    }
    name_index_free(&ni);
    if (s == RP_OK && m->self_collision && !build_skip(m, NULL))
        s = RP_ERR_NOMEM;
    if (s == RP_OK && !build_broadphase(m))
        s = RP_ERR_NOMEM;
    if (s) {
        model_destroy(m);
        return s;
    }
    *out = m;
    return RP_OK;
}

/* ---- store operations -------------------------------------------------------- */

/* Resizes the model array to array_cap_for(count).  Growing can fail
 * (false, nothing changed); a failed shrink keeps the larger array. */
static bool resize_array(rp_store *st, size_t count)
{
    size_t cap = array_cap_for(count);
    if (cap == st->model_cap)
        return true;
    if (cap == 0) {
        free(st->models);
        st->models = NULL;
        st->model_cap = 0;
        return true;
    }
    rp_model **a = realloc(st->models, cap * sizeof *a);
    if (!a)
        return cap < st->model_cap;
    st->models = a;
    st->model_cap = cap;
    return true;
}

rp_status rp_store_model_put(rp_store *st, const char *name, const rp_model_def *def,
                             rp_model **out, rp_model_error *err)
{
    rp_model_error scratch;
    if (!err)
        err = &scratch;
    memset(err, 0, sizeof *err);
    /* NULL arrays are caller bugs, not definition problems: no *err. */
    if (!st || !name || !def || (def->n_links && !def->links) ||
        (def->n_allowed && !def->allowed_pairs) || (def->n_joints && !def->joints) ||
        (def->n_defaults && (!def->default_names || !def->default_values)) ||
        (def->n_allowed_scene && !def->allowed_scene))
        return RP_ERR_INVALID_ARG;
    for (size_t k = 0; k < def->n_links; k++)
        if (!def->links[k].id)
            return RP_ERR_INVALID_ARG;
    for (size_t i = 0; i < 2 * def->n_allowed; i++)
        if (!def->allowed_pairs[i])
            return RP_ERR_INVALID_ARG;
    for (size_t i = 0; i < 2 * def->n_allowed_scene; i++)
        if (!def->allowed_scene[i])
            return RP_ERR_INVALID_ARG;
    if (def->n_allowed > SIZE_MAX / 2 / sizeof(size_t) || def->n_links > SIZE_MAX / 4 ||
        def->n_allowed_scene > SIZE_MAX / 4)
        return RP_ERR_NOMEM;

    rp_strtab t;
    rp_strtab_init_(&t, link_id, link_hash, def->links);
    if (!rp_strtab_reserve_(&t, def->n_links))
        return RP_ERR_NOMEM;
    bool kinematic = kinematic_def(def);
    size_t *allowed =
        malloc((def->n_allowed && !kinematic ? 2 * def->n_allowed : 1) * sizeof *allowed);
    if (!allowed) {
        rp_strtab_free_(&t);
        return RP_ERR_NOMEM;
    }
    bool ok = validate_links(def, &t, err) && (kinematic || resolve_pairs(def, &t, allowed, err));
    rp_strtab_free_(&t);
    if (!ok) {
        free(allowed);
        return RP_ERR_INVALID_ARG;
    }

    bool found;
    size_t i = lower_bound(st, name, &found);
    if (found && rp_store_model_user(st, name, NULL, NULL)) {
        free(allowed);
        return RP_ERR_IN_USE; /* a robot instance holds it (objects.c) */
    }
    rp_model *m = NULL;
    rp_status s = model_build(st, name, def, allowed, &m, err);
    if (s)
        return s;
    if (!found && !resize_array(st, st->model_count + 1)) {
        model_destroy(m);
        return RP_ERR_NOMEM;
    }
    rp_change ch = {.kind = RP_CHANGE_MODEL_PUT, .name = name, .model = m->def};
    if (!rp_store_may_commit_(st, &ch)) {
        model_destroy(m);
        return RP_ERR_ABORTED;
    }
    /* Nothing below can fail. */
    st->bytes += m->bytes;
    m->revision = rp_store_take_revision_(st);
    if (found) {
        rp_model_release_(st->models[i]);
    } else {
        memmove(&st->models[i + 1], &st->models[i], (st->model_count - i) * sizeof *st->models);
        st->model_count++;
    }
    st->models[i] = m;
    if (out)
        *out = m;
    return RP_OK;
}

rp_status rp_store_model_delete(rp_store *st, const char *name)
{
    bool found;
    size_t i = lower_bound(st, name, &found);
    if (!found)
        return RP_ERR_NOT_FOUND;
    if (rp_store_model_user(st, name, NULL, NULL))
        return RP_ERR_IN_USE;
    rp_change ch = {.kind = RP_CHANGE_MODEL_DELETE, .name = name};
    if (!rp_store_may_commit_(st, &ch))
        return RP_ERR_ABORTED;
    rp_model_release_(st->models[i]);
    memmove(&st->models[i], &st->models[i + 1], (st->model_count - i - 1) * sizeof *st->models);
    st->model_count--;
    resize_array(st, st->model_count);
    rp_store_take_revision_(st); /* a deletion is a committed mutation too */
    return RP_OK;
}

/* ---- allowed scene pairs, per-request extensions ------------------------------- */

size_t rp_model_allowed_scene_count(const rp_model *m)
{
    return m->n_as_pairs;
}
size_t rp_model_base_link_count(const rp_model *m)
{
    return m->n_base_links;
}

void rp_model_allowed_scene_at(const rp_model *m, size_t i, const char **link,
                               const char **scene_id)
{
    *link = m->as_pairs[2 * i];
    *scene_id = m->as_pairs[2 * i + 1];
}

static rp_status extend_fail(rp_extend_error *err, rp_extend_problem p, size_t index,
                             size_t element)
{
    err->problem = p;
    err->index = index;
    err->element = element;
    return RP_ERR_INVALID_ARG;
}

/* Sets the skip pair (attached shape a, s) while the touch links are
 * walked (name_index_each callback). */
typedef struct touch_pair {
    rp_model *e;
    size_t a;
} touch_pair;

static void set_touch_pair(void *ctx, size_t s)
{
    rp_build_steps_ += 2;
    touch_pair *t = ctx;
    set_pair(t->e, t->a, s);
}

static void ignore_shape(void *ctx, size_t s)
{
    rp_build_steps_ += LOOKUP_STEPS;
    (void)ctx;
    (void)s;
}

/* The frame and shape an attached shape gets (in its link's frame), and
 * in the frame form the link whose skip row it takes (*inherit).  False
 * when its link names nothing. */
static bool place_attached(const name_index *ni, const rp_attached *a, rp_link *out,
                           size_t *inherit)
{
    const rp_model *m = ni->m;
    out->id = a->id;
    if (m->kin) {
        size_t l = name_index_tree(ni, a->link);
        if (l == SIZE_MAX)
            return false;
        out->frame = m->kin->link_frame[l];
        out->shape = rp_transform_shape(&m->kin->link_offset[l], &a->shape);
        *inherit = l;
        return true;
    }
    size_t s = name_index_id(ni, a->link);
    if (s == SIZE_MAX || s >= m->n_links)
        return false;
    out->frame = m->links[s].frame;
    out->shape = a->shape;
    *inherit = s;
    return true;
}

rp_status rp_model_extend(const rp_model *m, const rp_attached *attached, size_t n_attached,
                          const char *const *allowed_scene, size_t n_allowed_scene, rp_model **out,
                          rp_extend_error *err)
{
    rp_extend_error scratch;
    if (!err)
        err = &scratch;
    memset(err, 0, sizeof *err);
    if (!m || !out || (n_attached && !attached) || (n_allowed_scene && !allowed_scene) ||
        m->n_base_links != m->n_links || n_attached > SIZE_MAX / 4 - m->n_links)
        return RP_ERR_INVALID_ARG;
    *out = NULL;
    size_t n = m->n_links + n_attached;
    rp_link *links = malloc((n ? n : 1) * sizeof *links);
    /* Per attached shape: its tree link (kinematic) or the base shape whose
     * skip row it takes (frame form). */
    size_t *inherit = malloc((n_attached ? n_attached : 1) * sizeof *inherit);
    name_index ni;
    memset(&ni, 0, sizeof ni);
    rp_model *e = NULL;
    rp_status st = RP_ERR_NOMEM;
    if (!links || !inherit)
        goto fail;
    memcpy(links, m->links, m->n_links * sizeof *links);
    if (!name_index_init(&ni, m, links, m->n_links, n))
        goto fail;
    st = RP_OK;
    for (size_t i = 0; i < n_attached && st == RP_OK; i++) {
        const rp_attached *a = &attached[i];
        if (!a->id || !a->link || (a->n_touch && !a->touch_links)) {
            st = RP_ERR_INVALID_ARG;
            break;
        }
        links[m->n_links + i].id = a->id;
        bool nomem;
        if (!name_index_add(&ni, &nomem))
            st = nomem ? RP_ERR_NOMEM : extend_fail(err, RP_EXTEND_DUPLICATE_ID, i, 0);
        else if (rp_shape_validate(&a->shape) != RP_OK || a->shape.kind == RP_SHAPE_HALFSPACE)
            st = extend_fail(err, RP_EXTEND_BAD_SHAPE, i, 0);
        else if (!place_attached(&ni, a, &links[m->n_links + i], &inherit[i]))
            st = extend_fail(err, RP_EXTEND_UNKNOWN_LINK, i, 0);
        for (size_t t = 0; st == RP_OK && t < a->n_touch; t++)
            if (!a->touch_links[t] || !name_index_each(&ni, a->touch_links[t], ignore_shape, NULL))
                st = extend_fail(err, RP_EXTEND_UNKNOWN_TOUCH, i, t);
    }
    if (st)
        goto fail;
    st = RP_ERR_NOMEM;
    if (!(e = model_start(NULL, m->name, links, n)))
        goto fail;
    e->n_base_links = m->n_links;
    e->revision = m->revision;
    e->safety_margin = m->safety_margin;
    e->self_collision = m->self_collision;
    e->frame_count = m->frame_count;
    e->max_name_shapes = m->max_name_shapes;
    if (m->kin) {
        e->kin = m->kin;
        atomic_fetch_add(&e->kin->refs, 1);
        e->shape_link = model_alloc(e, n * sizeof *e->shape_link);
        e->shape_local = model_alloc(e, n * sizeof *e->shape_local);
        if (!e->shape_link || !e->shape_local)
            goto fail;
        memcpy(e->shape_link, m->shape_link, m->n_links * sizeof *e->shape_link);
        memcpy(e->shape_local, m->shape_local, m->n_links * sizeof *e->shape_local);
        for (size_t i = 0; i < n_attached; i++) {
            e->shape_link[m->n_links + i] = inherit[i];
            e->shape_local[m->n_links + i] = attached[i].shape;
        }
    } else {
        e->allowed = model_alloc(e, 2 * m->n_allowed * sizeof *e->allowed);
        if (!e->allowed)
            goto fail;
        memcpy(e->allowed, m->allowed, 2 * m->n_allowed * sizeof *e->allowed);
        e->n_allowed = m->n_allowed;
    }
    size_t bad = 0;
    const char *const *own = (const char *const *)m->as_pairs;
    st = build_allowed_scene(e, &ni, own, m->n_as_pairs, allowed_scene, n_allowed_scene, &bad);
    if (st == RP_ERR_INVALID_ARG) {
        st = extend_fail(err, RP_EXTEND_UNKNOWN_SCENE_LINK, bad - m->n_as_pairs, 0);
        goto fail;
    }
    if (st)
        goto fail;
    st = RP_ERR_NOMEM;
    /* Frame form: an attached shape inherits its link's allowed pairs (its
     * skip row); kinematic models pair links, which build_skip reads from
     * shape_link.  Then the touch links, set straight into the matrix. */
    if (e->self_collision) {
        if (!build_skip(e, m->kin ? NULL : inherit))
            goto fail;
        for (size_t i = 0; i < n_attached; i++) {
            touch_pair tp = {e, m->n_links + i};
            for (size_t t = 0; t < attached[i].n_touch; t++)
                name_index_each(&ni, attached[i].touch_links[t], set_touch_pair, &tp);
        }
    }
    if (!build_broadphase(e))
        goto fail;
    name_index_free(&ni);
    free(links);
    free(inherit);
    *out = e;
    return RP_OK;
fail:
    name_index_free(&ni);
    free(links);
    free(inherit);
    model_destroy(e);
    return st;
}

/* ---- work estimates ------------------------------------------------------------ */

/* a * b, or UINT64_MAX when that overflows: estimates saturate. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* ceil(log2(n + 1)): the passes of a sort of n items. */
static uint64_t log2_up(uint64_t n)
{
    uint64_t d = 0;
    while (n) {
        d++;
        n >>= 1;
    }
    return d;
}

/* A step that sets or tests one bit of a pair table costs about a
 * sixteenth of a pair test (a compare and an or, against a distance
 * kernel): the estimates count such steps sixteen to a unit. */
#define BIT_STEPS_PER_UNIT 16

/* The pair tables of n shapes (the broadphase blocks and, with self
 * collision, the skip matrix: its frame pass, the link pairs and inherited
 * rows, each at most n^2 bit steps) and the sort of the allowed pairs. */
static uint64_t table_work(uint64_t n, uint64_t pairs, bool self)
{
    uint64_t bits = n <= RP_BOUND_LINKS ? mul_sat(n, n) : 0;
    uint64_t w = 0;
    if (self) {
        bits = add_sat(bits, mul_sat(3 * n, n));
        w = mul_sat(pairs, log2_up(pairs) + 1);
    }
    return add_sat(w, bits / BIT_STEPS_PER_UNIT + 1);
}

/* Most shapes one tree link holds in def (kinematic), 1 for the frame form;
 * n_links when memory runs out counting them. */
static const char *def_shape_link(const void *ctx, uint32_t k)
{
    return ((const char *const *)ctx)[k];
}

static uint32_t def_shape_hash(const void *ctx, uint32_t k)
{
    return rp_strhash_(((const char *const *)ctx)[k]);
}

static size_t def_max_name_shapes(const rp_model_def *def)
{
    if (!kinematic_def(def) || def->n_links == 0 || !def->shape_links)
        return 1;
    rp_strtab t;
    rp_strtab_init_(&t, def_shape_link, def_shape_hash, def->shape_links);
    size_t *count = calloc(def->n_links, sizeof *count), most = 1;
    if (!count || !rp_strtab_reserve_(&t, def->n_links)) {
        free(count);
        rp_strtab_free_(&t);
        return def->n_links; /* no room to count: the bound that needs none */
    }
    for (size_t s = 0; s < def->n_links; s++) {
        const char *name = def->shape_links[s];
        size_t slot, first = s;
        if (!name)
            continue;
        if (rp_strtab_find_(&t, name, rp_strhash_(name), &slot))
            first = t.slots[slot];
        else
            rp_strtab_insert_at_(&t, slot, (uint32_t)s);
        if (++count[first] > most)
            most = count[first];
    }
    free(count);
    rp_strtab_free_(&t);
    return most;
}

uint64_t rp_model_def_work(const rp_model_def *def)
{
    if (!def)
        return 0;
    uint64_t n = def->n_links, most = def_max_name_shapes(def);
    uint64_t w = add_sat(add_sat(n, def->n_link_names), def->n_joints + def->n_defaults);
    w = add_sat(w, mul_sat(2, def->n_allowed));
    /* Each allowed scene pair: RP_WORK_SCENE_PAIR, and the shapes its name
     * stands for, met twice (counted, then filled in). */
    w = add_sat(w, mul_sat(def->n_allowed_scene, add_sat(RP_WORK_SCENE_PAIR, 2 * most)));
    return add_sat(w, table_work(n, def->n_allowed, def->self_collision));
}

uint64_t rp_model_extend_work(const rp_model *m, const rp_attached *attached, size_t n_attached,
                              size_t n_allowed_scene)
{
    if (!m)
        return 0;
    uint64_t touch = 0;
    for (size_t i = 0; attached && i < n_attached; i++)
        touch = add_sat(touch, attached[i].n_touch);
    uint64_t n = add_sat(m->n_links, n_attached),
             most = m->max_name_shapes ? m->max_name_shapes : 1;
    /* The index of the model's names, then two lookups an attached shape
     * (its id, its link). */
    uint64_t w = add_sat(add_sat(n, n_attached), m->kin ? m->kin->n_tree : 0);
    /* Touch links: a lookup to validate and one to pair (two each in a
     * kinematic model: tree link, then attached id), each meeting the
     * shapes the name stands for. */
    w = add_sat(w, mul_sat(touch, add_sat(4, 2 * most)));
    /* The model's own allowed scene pairs are copied with the request's. */
    w = add_sat(w, add_sat(mul_sat(RP_WORK_SCENE_PAIR, m->n_as_pairs), 2 * m->n_as_ids));
    w = add_sat(w, mul_sat(n_allowed_scene, add_sat(RP_WORK_SCENE_PAIR, 2 * most)));
    uint64_t pairs = m->kin ? m->kin->n_allowed_links : m->n_allowed;
    return add_sat(w, table_work(n, pairs, m->self_collision));
}

uint64_t rp_model_check_work(const rp_model *m, size_t scene_shapes)
{
    if (!m)
        return 0;
    uint64_t links = m->n_links;
    uint64_t w = mul_sat(links, log2_up(scene_shapes));
    if (m->self_collision) {
        /* Every pair, priced by its kernel (rp_pair_units_): box pairs cost
         * more than sphere and capsule pairs. */
        uint64_t boxes = 0, capsules = 0;
        for (size_t k = 0; k < m->n_links; k++) {
            boxes += m->links[k].shape.kind == RP_SHAPE_BOX;
            capsules += m->links[k].shape.kind == RP_SHAPE_CAPSULE;
        }
        w = add_sat(w, links * (links - (links > 0)) / 2);
        w = add_sat(w, mul_sat(RP_UNITS_CAPSULE_BOX - 1, mul_sat(boxes, capsules)));
        w = add_sat(w, mul_sat(RP_UNITS_BOX_BOX - 1, boxes * (boxes - (boxes > 0)) / 2));
    }
    /* Every exclusion of an allowed scene pair is looked up in the scene. */
    w = add_sat(w, m->n_as_ids);
    return w ? w : 1;
}
