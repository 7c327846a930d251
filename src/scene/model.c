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

size_t rp_store_model_count(const rp_store *st) { return st->model_count; }
const rp_model *rp_store_model_at(const rp_store *st, size_t i) { return st->models[i]; }

/* ---- accessors ----------------------------------------------------------- */

const char *rp_model_name(const rp_model *m) { return m->name; }
uint64_t rp_model_revision(const rp_model *m) { return m->revision; }
size_t rp_model_link_count(const rp_model *m) { return m->n_links; }
const rp_link *rp_model_link_at(const rp_model *m, size_t i) { return &m->links[i]; }
double rp_model_safety_margin(const rp_model *m) { return m->safety_margin; }
bool rp_model_self_collision(const rp_model *m) { return m->self_collision; }
size_t rp_model_allowed_count(const rp_model *m) { return m->n_allowed; }
size_t rp_model_frame_count(const rp_model *m) { return m->frame_count; }

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
    free(m->links);
    free(m->id_chars);
    free(m->allowed);
    free(m->skip);
    free(m);
}

void rp_model_free_(rp_model *m)
{
    if (!m)
        return;
    m->store->bytes -= m->bytes;
    model_destroy(m);
}

/* malloc that counts what it got into m->bytes (never asks for 0 bytes, so
 * NULL always means out of memory). */
static void *model_alloc(rp_model *m, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p)
        m->bytes += size;
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

/* Checks everything but the allowed pairs, link by link in definition
 * order (each link: duplicate id, frame, shape), then the margin, and fills
 * the id table.  Returns false with *err set at the first problem. */
static bool validate_links(const rp_model_def *def, rp_strtab *t, rp_model_error *err)
{
    for (size_t k = 0; k < def->n_links; k++) {
        const rp_link *l = &def->links[k];
        size_t slot;
        uint32_t hash = rp_strhash_(l->id);
        rp_model_problem p = RP_MODEL_OK;
        if (rp_strtab_find_(t, l->id, hash, &slot))
            p = RP_MODEL_DUPLICATE_LINK;
        else if (l->frame < -1)
            p = RP_MODEL_BAD_FRAME;
        else if (rp_shape_validate(&l->shape) != RP_OK)
            p = RP_MODEL_BAD_SHAPE;
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

static void set_bit(uint64_t *row, size_t j) { row[j / 64] |= (uint64_t)1 << (j % 64); }

/* Builds the skip matrix of model_int.h: same-frame pairs and allowed
 * pairs, both orders, so a check can test either (i, j) or (j, i). */
static bool build_skip(rp_model *m)
{
    size_t n = m->n_links;
    m->row_words = (n + 63) / 64;
    if (m->row_words && n > SIZE_MAX / sizeof *m->skip / m->row_words)
        return false;
    m->skip = model_alloc(m, n * m->row_words * sizeof *m->skip);
    if (!m->skip)
        return false;
    memset(m->skip, 0, n * m->row_words * sizeof *m->skip);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (m->links[i].frame == m->links[j].frame)
                set_bit(&m->skip[i * m->row_words], j);
    for (size_t p = 0; p < m->n_allowed; p++) {
        size_t a = m->allowed[2 * p], b = m->allowed[2 * p + 1];
        set_bit(&m->skip[a * m->row_words], b);
        set_bit(&m->skip[b * m->row_words], a);
    }
    return true;
}

/* Copies a validated definition into a new model (not yet in the store;
 * its bytes not yet counted there).  `allowed` (2*n_allowed indices) is
 * taken over.  NULL when out of memory. */
static rp_model *model_build(rp_store *st, const char *name, const rp_model_def *def,
                             size_t *allowed)
{
    rp_model *m = calloc(1, sizeof *m);
    if (!m) {
        free(allowed);
        return NULL;
    }
    m->store = st;
    m->bytes = sizeof *m;
    m->allowed = allowed;
    m->n_allowed = def->n_allowed;
    m->bytes += 2 * def->n_allowed * sizeof *allowed;
    m->n_links = def->n_links;
    m->safety_margin = def->safety_margin;
    m->self_collision = def->self_collision;

    size_t name_len = strlen(name) + 1, id_len = 0;
    for (size_t k = 0; k < def->n_links; k++)
        id_len += strlen(def->links[k].id) + 1;
    m->name = model_alloc(m, name_len);
    m->id_chars = model_alloc(m, id_len);
    m->links = model_alloc(m, def->n_links * sizeof *m->links);
    if (!m->name || !m->id_chars || !m->links) {
        model_destroy(m);
        return NULL;
    }
    memcpy(m->name, name, name_len);
    char *p = m->id_chars;
    for (size_t k = 0; k < def->n_links; k++) {
        size_t len = strlen(def->links[k].id) + 1;
        memcpy(p, def->links[k].id, len);
        m->links[k] = def->links[k];
        m->links[k].id = p;
        p += len;
        if (m->links[k].frame >= 0 && (size_t)m->links[k].frame + 1 > m->frame_count)
            m->frame_count = (size_t)m->links[k].frame + 1;
    }
    if (m->self_collision && !build_skip(m)) {
        model_destroy(m);
        return NULL;
    }
    return m;
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
        (def->n_allowed && !def->allowed_pairs))
        return RP_ERR_INVALID_ARG;
    for (size_t k = 0; k < def->n_links; k++)
        if (!def->links[k].id)
            return RP_ERR_INVALID_ARG;
    for (size_t i = 0; i < 2 * def->n_allowed; i++)
        if (!def->allowed_pairs[i])
            return RP_ERR_INVALID_ARG;
    if (def->n_allowed > SIZE_MAX / 2 / sizeof(size_t) || def->n_links > SIZE_MAX / 4)
        return RP_ERR_NOMEM;

    rp_strtab t;
    rp_strtab_init_(&t, link_id, link_hash, def->links);
    if (!rp_strtab_reserve_(&t, def->n_links))
        return RP_ERR_NOMEM;
    size_t *allowed = malloc((def->n_allowed ? 2 * def->n_allowed : 1) * sizeof *allowed);
    if (!allowed) {
        rp_strtab_free_(&t);
        return RP_ERR_NOMEM;
    }
    bool ok = validate_links(def, &t, err) && resolve_pairs(def, &t, allowed, err);
    rp_strtab_free_(&t);
    if (!ok) {
        free(allowed);
        return RP_ERR_INVALID_ARG;
    }

    bool found;
    size_t i = lower_bound(st, name, &found);
    rp_model *m = model_build(st, name, def, allowed);
    if (!m)
        return RP_ERR_NOMEM;
    if (!found && !resize_array(st, st->model_count + 1)) {
        model_destroy(m);
        return RP_ERR_NOMEM;
    }
    /* Nothing below can fail. */
    st->bytes += m->bytes;
    if (found) {
        m->revision = st->models[i]->revision + 1;
        rp_model_free_(st->models[i]);
    } else {
        m->revision = 1;
        memmove(&st->models[i + 1], &st->models[i],
                (st->model_count - i) * sizeof *st->models);
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
    rp_model_free_(st->models[i]);
    memmove(&st->models[i], &st->models[i + 1], (st->model_count - i - 1) * sizeof *st->models);
    st->model_count--;
    resize_array(st, st->model_count);
    return RP_OK;
}
