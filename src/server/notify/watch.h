/* SPDX-License-Identifier: MIT */
/*
 * Watch notifications (docs/ARCHITECTURE.md, Live scenes and watches): scene.watch / scene.unwatch, and the
 * scene.changed, scene.deleted and scene.resync notifications they bring.
 *
 * The hub subscribes to the store's change records (rpd_watch_on_change),
 * so every committed change of a watched scene is recorded, whatever
 * method made it.  Nothing is sent while a request line is being handled,
 * because a watcher may be the connection whose reply is being written,
 * nor while changes are held (--fsync always, until the group's fsync):
 * a watcher hears only of changes that stand, never of one a failed fsync
 * undoes.  rpd_watch_flush, called by the connection code once it has
 * run the lines it had, sends what each watcher has not seen yet, in
 * revision order.
 *
 * History.  A scene that has been watched once keeps its last changes
 * (RPD_WATCH_HISTORY_CHANGES, at most RPD_WATCH_HISTORY_BYTES of encoded
 * text) for as long as it exists, so that scene.watch with `since` can
 * replay what a reconnecting client missed.  A scene never watched records
 * nothing and costs nothing.
 *
 * Buffers.  A watcher whose connection holds more than watch_buffer_bytes
 * of unsent output when a notification is due stops receiving them; once
 * its output has drained to half of that it gets one scene.resync with the
 * scene's current revision, and notifications resume after it.  So a
 * stalled watcher costs at most its buffer, and the others never wait.  A
 * change that does not fit while the output is at most half full (one
 * change larger than the buffer) brings that scene.resync at once: there
 * is no backlog whose draining would bring it later.  The connection code
 * must call rpd_watch_drained whenever a lagging session's output went
 * down, also when a write completed at once (no write callback).
 *
 * This file knows nothing of libuv: the server installs rpd_watch_io to
 * reach a session's connection.
 */
#ifndef REPOSE_SERVER_WATCH_H
#define REPOSE_SERVER_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/core/core.h"

#define RPD_WATCH_HISTORY_CHANGES 4096
#define RPD_WATCH_HISTORY_BYTES (4u << 20)

/* How notifications reach a session's connection (conn.c). */
typedef struct rpd_watch_io {
    /* Appends bytes to the session's output (not yet written). */
    void (*send)(rpd_session *s, const char *bytes, size_t len);
    /* Starts writing what send appended. */
    void (*commit)(rpd_session *s);
    /* Bytes of output the session's peer has not received yet. */
    size_t (*backlog)(const rpd_session *s);
} rpd_watch_io;

typedef struct rpd_watch_hub rpd_watch_hub;

/* A hub for core's store: it reads whether changes are held
 * (rpd_changes_held) and, after an undo, the store as it is again. */
rpd_watch_hub *rpd_watch_hub_new(const rpd_core *core);
void rpd_watch_hub_free(rpd_watch_hub *hub);
void rpd_watch_set_io(rpd_watch_hub *hub, const rpd_watch_io *io);

/* Watches open, bytes of history kept, and times a watcher fell more than
 * its buffer behind (stats: limits_hit.watch_buffer_bytes). */
size_t rpd_watch_count(const rpd_watch_hub *hub);
uint64_t rpd_watch_overruns(const rpd_watch_hub *hub);
size_t rpd_watch_history_bytes(const rpd_watch_hub *hub);

/* Whether scene `name` records its changes (it has been watched). */
bool rpd_watch_tracked(const rpd_watch_hub *hub, const char *name);

/* The hub as a subscriber of the store's change records (core.h,
 * rpd_subscribe; ctx is the hub): a change of a scene that has been
 * watched goes into its history, at the revision it takes, with the ids
 * and shapes it writes and the ids it removes (for a replace, those of
 * the old content the new one lacks); a deleted scene's watchers get
 * scene.deleted.  Called at the commit point, before the store changes;
 * it never refuses a change.  A change it cannot encode (out of memory)
 * sends the scene's watchers scene.resync instead. */
int rpd_watch_on_change(void *ctx, const rp_change *change);

/* The hub as an undo subscriber (core.h, rpd_changes_undo; ctx is the
 * hub): the store is back at `revision`.  Nothing was sent of the undone
 * changes (notifications wait while changes are held), so watchers do not
 * hear of them at all: their history goes, a scene whose deletion was
 * undone keeps its watches, and a scene whose creation was undone ends
 * them (scene.deleted).  Only a watcher that began during the undone
 * changes, at a revision that no longer stands, gets scene.resync. */
void rpd_watch_on_undo(void *ctx, uint64_t revision);

/* Changes one rpd_watch_flush sends at most (each a copy into a watcher's
 * output, a few microseconds with its write): a mutation of a scene with
 * 65,536 watches must not hold the event loop for the whole fan-out. */
#define RPD_WATCH_FLUSH_SENDS 8192

/* Sends pending notifications to the watchers, at most
 * RPD_WATCH_FLUSH_SENDS changes a call.  Returns true when some are left:
 * the caller calls it again on a later turn of the event loop (what each
 * watcher has seen is kept, so nothing is sent twice). */
bool rpd_watch_flush(rpd_watch_hub *hub, const rpd_limits *limits);

/* Whether the session has watches waiting for their output to drain, and
 * the call the connection makes when its output went down. */
bool rpd_watch_session_lagging(const rpd_session *s);
void rpd_watch_drained(rpd_watch_hub *hub, rpd_session *s, const rpd_limits *limits);

/* Ends every watch of a session (its connection is closing). */
void rpd_watch_session_end(rpd_watch_hub *hub, rpd_session *s);

/* scene.watch and scene.unwatch (protocol/methods_watch.c checks their
 * params).  add starts a watch of scene sc for session s, replaying from
 * *since when given (a revision the history cannot reach brings
 * scene.resync): its id and the revision it starts at; RP_ERR_NOMEM.
 * remove ends watch `id` of session s; false when s has none by that id.
 * session_count: the watches s has open. */
rp_status rpd_watch_add(rpd_watch_hub *hub, rpd_session *s, const rp_scene *sc,
                        const uint64_t *since, uint64_t *id, uint64_t *revision);
bool rpd_watch_remove(rpd_watch_hub *hub, rpd_session *s, uint64_t id);
size_t rpd_watch_session_count(const rpd_session *s);

#endif /* REPOSE_SERVER_WATCH_H */
