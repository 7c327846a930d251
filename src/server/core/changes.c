/* SPDX-License-Identifier: MIT */
/*
 * The store's change records and their subscribers (core.h): one commit
 * hook for the store, which hands each record to the journal (it may
 * refuse: nothing changes then), then to the others (the watch hub); and
 * tells them when changes they heard of were undone, and whether changes
 * are held (made, but not yet durable).  A
 * mutation method never tells the journal or the watchers itself, so one
 * that is added cannot forget either (docs/ARCHITECTURE.md, The way of a
 * mutation).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int dispatch(void *ctx, const rp_change *change)
{
    rpd_core *core = ctx;
    /* --nats: a mutation validated to be published stops here, before
     * anything changes; it is made when the stream brings it back
     * (docs/ARCHITECTURE.md, Replicas). */
    if (core->proposing) {
        core->proposal_seen = true;
        return -1;
    }
    for (size_t i = 0; i < core->n_subscribers; i++)
        if (core->subscribers[i].fn(core->subscribers[i].ctx, change) != 0)
            return -1; /* the first subscriber refused: no one else hears of it */
    return 0;
}

void rpd_changes_init(rpd_core *core)
{
    rp_store_set_commit_hook(core->store, dispatch, core);
}

bool rpd_subscribe(rpd_core *core, rpd_change_fn fn, rpd_undo_fn undone, void *ctx, bool first)
{
    if (core->n_subscribers == RPD_MAX_SUBSCRIBERS)
        return false;
    size_t at = first ? 0 : core->n_subscribers;
    memmove(&core->subscribers[at + 1], &core->subscribers[at],
            (core->n_subscribers - at) * sizeof core->subscribers[0]);
    core->subscribers[at].fn = fn;
    core->subscribers[at].undone = undone;
    core->subscribers[at].ctx = ctx;
    core->n_subscribers++;
    return true;
}

void rpd_unsubscribe(rpd_core *core, rpd_change_fn fn, void *ctx)
{
    for (size_t i = 0; i < core->n_subscribers; i++) {
        if (core->subscribers[i].fn == fn && core->subscribers[i].ctx == ctx) {
            memmove(&core->subscribers[i], &core->subscribers[i + 1],
                    (core->n_subscribers - i - 1) * sizeof core->subscribers[0]);
            core->n_subscribers--;
            return;
        }
    }
}

void rpd_changes_hold(rpd_core *core)
{
    core->changes_held = true;
}

void rpd_changes_settle(rpd_core *core)
{
    core->changes_held = false;
}

void rpd_changes_undo(rpd_core *core, uint64_t revision)
{
    core->changes_held = false;
    for (size_t i = 0; i < core->n_subscribers; i++)
        if (core->subscribers[i].undone)
            core->subscribers[i].undone(core->subscribers[i].ctx, revision);
}

/* An id of a record and where it stands in it, for sorting. */
typedef struct id_at {
    const char *id;
    size_t at;
} id_at;

static int cmp_id_at(const void *a, const void *b)
{
    const id_at *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

const rp_shape_put **rpd_change_written(const rp_change *c, size_t *n_out)
{
    size_t n = c->n_shapes;
    const rp_shape_put **out = malloc((n ? n : 1) * sizeof *out);
    /* Ids given in strictly ascending order (a client that sorts, a
     * replay): already sorted and each once, no sort on the loop. */
    size_t k0 = 1;
    while (k0 < n && strcmp(c->shapes[k0 - 1].id, c->shapes[k0].id) < 0)
        k0++;
    if (out && k0 >= n) {
        for (size_t k = 0; k < n; k++)
            out[k] = &c->shapes[k];
        *n_out = n;
        return out;
    }
    id_at *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || !out) {
        free(ids);
        free(out);
        return NULL;
    }
    for (size_t k = 0; k < n; k++)
        ids[k] = (id_at){c->shapes[k].id, k};
    qsort(ids, n, sizeof *ids, cmp_id_at);
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (k + 1 < n && strcmp(ids[k].id, ids[k + 1].id) == 0)
            continue; /* a later one of the same id wins */
        out[m++] = &c->shapes[ids[k].at];
    }
    free(ids);
    *n_out = m;
    return out;
}
