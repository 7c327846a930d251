/* SPDX-License-Identifier: MIT */
/*
 * The store's change records and their subscribers (core.h): one commit
 * hook for the store, which hands each record to the journal (it may
 * refuse: nothing changes then), then to the others (the watch hub).  A
 * mutation method never tells the journal or the watchers itself, so one
 * that is added cannot forget either (docs/ARCHITECTURE.md, The way of a
 * mutation).
 */
#include <string.h>

#include "core.h"

static int dispatch(void *ctx, const rp_change *change)
{
    rpd_core *core = ctx;
    for (size_t i = 0; i < core->n_subscribers; i++)
        if (core->subscribers[i].fn(core->subscribers[i].ctx, change) != 0)
            return -1; /* the first subscriber refused: no one else hears of it */
    return 0;
}

void rpd_changes_init(rpd_core *core)
{
    rp_store_set_commit_hook(core->store, dispatch, core);
}

bool rpd_subscribe(rpd_core *core, rpd_change_fn fn, void *ctx, bool first)
{
    if (core->n_subscribers == RPD_MAX_SUBSCRIBERS)
        return false;
    size_t at = first ? 0 : core->n_subscribers;
    memmove(&core->subscribers[at + 1], &core->subscribers[at],
            (core->n_subscribers - at) * sizeof core->subscribers[0]);
    core->subscribers[at].fn = fn;
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
