/* SPDX-License-Identifier: MIT */
/*
 * Durability (proto/PROTOCOL.md, Durability): with --data-dir, every committed mutation is
 * appended to the journal (journal.h: one record per mutation, its method
 * and params) before its reply goes out, and replayed at the next start.
 *
 * A mutation runs on the event loop between rpd_durable_begin and
 * rpd_durable_end (rpc.c's dispatch).  Its record is written by the
 * store's commit hook (rp_store_set_commit_hook): once the mutation has
 * checked everything and just before it changes anything.  A record that
 * cannot be written aborts the mutation, which then changed nothing, and
 * the handler answers -32007 with the reason rpd_durable_refusal gives.
 *
 * This layer knows no request and no method handler (docs/ARCHITECTURE.md,
 * Layers): the protocol layer turns its outcomes into JSON-RPC errors, and
 * the journal is replayed through the function the daemon passes to
 * rpd_durable_open.
 *
 * --fsync always: group commit.  Records written while the loop runs its
 * lines wait for one fsync at the end of the loop iteration
 * (rpd_durable_group_sync, server.c), and their connections' replies wait
 * with them (conn.c).  When that fsync fails, the whole group is undone:
 * the journal is cut back to before it, the store put back from a
 * snapshot taken before the group's first mutation, and every mutation of
 * the group is answered with -32007.
 *
 * everysec fsyncs at most a second later on a worker thread (a failed
 * fsync fails mutations with -32007 until one succeeds); no leaves it to
 * the kernel.
 *
 * Files in the directory: `lock` (the holder's pid; one daemon per
 * directory is the directory's own flock, which deleting the file cannot
 * undo), `journal`, `snapshot`, while one is written `snapshot.tmp` and
 * `journal.tmp` (removed at start: only a rename makes them count), and
 * `journal.rejected` (a journal --repair set aside).  The snapshot and the
 * journal name each other by id (journal.h, snapshot.h), so that the start
 * can tell a journal that is missing, cut or not this snapshot's from one
 * torn by a crash.
 */
#ifndef REPOSE_SERVER_DURABLE_H
#define REPOSE_SERVER_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/core/core.h"

typedef enum rpd_fsync {
    RPD_FSYNC_EVERYSEC, /* the default, as Redis's appendfsync */
    RPD_FSYNC_ALWAYS,
    RPD_FSYNC_NO
} rpd_fsync;

/* "always", "everysec", "no". */
const char *rpd_fsync_name(rpd_fsync f);
/* Parses one of those names; false when it is none. */
bool rpd_fsync_parse(const char *s, rpd_fsync *out);

typedef struct rpd_durable rpd_durable;

/* Opens DIR (created when missing, one level, mode 0700), checks that no
 * one else can change it (no symbolic links, owned by the effective user,
 * not writable by group or others), takes its lock, loads the snapshot and
 * the journal into core->store (replaying it with every limit lifted: what
 * was acknowledged once is restored whatever the limits now), and keeps
 * the journal open for appending.  A torn tail is cut off with a warning.
 * NULL (the reason logged, with what --repair would drop) when the lock is
 * held, on I/O errors, and, unless repair, for a corrupt record or one
 * that does not apply (repair cuts the journal there), a journal that is
 * missing next to a snapshot, ends inside its header, belongs to another
 * snapshot (repair starts from the snapshot alone) or is shorter than
 * its synced length (repair keeps its whole records).  After a repair that
 * cut the journal, or in files of the previous format, a snapshot and a
 * new journal are written before it returns. */
/* Applies one journal record to core->store: the mutation `method` with
 * its params (JSON text of len bytes), as the protocol layer runs it; false
 * with why when it does not apply. */
typedef bool (*rpd_apply_fn)(rpd_core *core, const char *method, const char *json, size_t len,
                             char *why, size_t cap);
rpd_durable *rpd_durable_open(const char *dir, rpd_fsync policy, bool repair, rpd_core *core,
                              rpd_apply_fn apply);

/* Fsyncs what is unsynced (at shutdown, whatever the policy) and closes
 * everything.  NULL is a no-op. */
void rpd_durable_close(rpd_durable *d);

/* For everysec (the event loop's timer and libuv's thread pool live in
 * server.c): sync_due says whether records were written since the last
 * fsync and none is running, and marks one as running; sync_run is the
 * fsync itself, on a worker thread (returns 0 or an errno, and its
 * duration); sync_done, back on the loop, records the outcome. */
bool rpd_durable_sync_due(rpd_durable *d);
int rpd_durable_sync_run(rpd_durable *d, uint64_t *ns);
void rpd_durable_sync_done(rpd_durable *d, int err, uint64_t ns);

/* Around a mutation's handler (see above; d may be NULL).  begin returns 0,
 * or ENOMEM (memory is short), or another errno with why filled when the
 * journal is failed and cannot be repaired yet: the handler must then not
 * run, and the mutation is answered -32603 or -32007.  end says which
 * group the mutation's record joined in session s. */
int rpd_durable_begin(rpd_durable *d, char *why, size_t cap);
void rpd_durable_end(rpd_durable *d, rpd_session *s);
/* Why the commit hook refused the last mutation (the store returned
 * RP_ERR_ABORTED), for its -32007 answer; counted as a write error. */
void rpd_durable_refusal(rpd_durable *d, char *why, size_t cap);

/* Group commit (--fsync always).  group_seq rises with every record that
 * waits for the group's fsync, so the connection code can tell whether a
 * line joined the group, and group_epoch numbers the open group (it rises
 * at each group fsync); group_open says whether records wait.  group_sync
 * fsyncs them: 0, or the errno after which the group was undone (journal,
 * store, model definitions; the watchers of the scenes it touched get
 * scene.resync, or scene.deleted for a scene it created).  save and the
 * end of a background snapshot run it too.  group_result says how groups
 * first..last ended: 0, the first errno, or -1 while last is still open. */
bool rpd_durable_group_open(const rpd_durable *d);
uint64_t rpd_durable_group_seq(const rpd_durable *d);
uint64_t rpd_durable_group_epoch(const rpd_durable *d);
int rpd_durable_group_sync(rpd_durable *d);
int rpd_durable_group_result(const rpd_durable *d, uint64_t first, uint64_t last);

/* Writes DIR/snapshot from the store as it is now (temp file, fsync,
 * rename, directory fsync) and starts the journal again from it.  Runs on
 * the calling thread, blocking it for the write.  0 or an errno, with why
 * (for the log or a -32007 reason). */
int rpd_durable_save(rpd_durable *d, rp_store *st, char *why, size_t cap);
/* While on, the store's changes are not journalled: the store is being
 * filled from a whole image (a replica's published snapshot, server.c)
 * that an rpd_durable_save writes afterwards. */
void rpd_durable_set_loading(rpd_durable *d, bool on);
/* Whether session s has records in the group waiting for its fsync: its
 * replies are held, and a save now (which fsyncs that group first) would
 * split them between two groups; m_save refuses instead. */
bool rpd_durable_session_waits(const rpd_durable *d, const rpd_session *s);

/* Background snapshots: taken when the journal has grown past
 * `snapshot_after` bytes and past the size of the last snapshot (as
 * Redis's auto-aof-rewrite with 100%), written on a worker from a store
 * snapshot, then the journal starts again from it with the records that
 * came meanwhile.  The event loop (server.c) calls begin after each line
 * (NULL: not due, or one is running), run on a worker, end back on the
 * loop. */
#define RPD_SNAPSHOT_AFTER_DEFAULT (64u << 20)
void rpd_durable_set_snapshot_after(rpd_durable *d, uint64_t bytes);
typedef struct rpd_snap_job rpd_snap_job;
rpd_snap_job *rpd_durable_snapshot_begin(rpd_durable *d, rp_store *st);
void rpd_durable_snapshot_run(rpd_snap_job *j);
void rpd_durable_snapshot_end(rpd_durable *d, rpd_snap_job *j);
/* After end: the old journal's descriptor, whose close (freeing the
 * unlinked file's blocks) belongs on a worker; -1 when there is none. */
int rpd_durable_retired_fd(rpd_durable *d);
/* Marks a job that never ran as failed (end then reports it). */
void rpd_durable_snapshot_fail(rpd_snap_job *j, const char *why);

/* For hello and stats. */
const char *rpd_durable_dir(const rpd_durable *d);
rpd_fsync rpd_durable_policy(const rpd_durable *d);
typedef struct rpd_durable_stats {
    uint64_t journal_bytes;
    uint64_t journal_records; /* records in the journal file now */
    uint64_t fsyncs;
    uint64_t fsync_p50_us, fsync_p99_us;                    /* over the last RPD_FSYNC_SAMPLES */
    uint64_t write_errors;                                  /* mutations failed with -32007 */
    bool failing;                                           /* the last write or fsync failed */
    uint64_t snapshot_revision;                             /* the last snapshot's (0: none) */
    uint64_t snapshot_bytes, snapshot_unix_ms, snapshot_ms; /* its size, when, how long */
} rpd_durable_stats;
void rpd_durable_stats_get(const rpd_durable *d, rpd_durable_stats *out);

#endif /* REPOSE_SERVER_DURABLE_H */
