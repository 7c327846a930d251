/* SPDX-License-Identifier: MIT */
/*
 * Durability: the journal of committed mutations; see durable.h and, for
 * the file format, journal.h.
 *
 * A record's payload is the mutation as a request: the method name, a
 * newline, and the params object as JSON (cJSON prints numbers so that
 * they read back to the same doubles).  Replaying it runs the same handler
 * on the same store content, so it makes the same change and takes the
 * same revision, which the replay checks.
 */
#define _GNU_SOURCE /* fdatasync, flock, openat */

#include "durable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "server/core/limits.h"
#include "snapshot.h"
#include "image.h"
#include "server/core/log.h"
#include "server/core/stats.h"

#define RPD_FSYNC_SAMPLES 1024
/* Permission bits that let others than the owner change a file. */
#define RPD_OTHERS_WRITE (S_IWGRP | S_IWOTH)
/* Group outcomes kept: more than the groups one loop iteration can end
 * (one per save a connection sends, plus the iteration's own). */
#define RPD_GROUP_EPOCHS 4096

struct rpd_durable {
    char *dir;
    int dir_fd, lock_fd, journal_fd;
    rpd_fsync policy;
    uint64_t journal_bytes; /* the journal's length: whole records only */
    /* What a snapshot worker may copy of the journal (next_journal): whole
     * records no group undo can take back.  Written on the loop, read by
     * the worker, atomically. */
    uint64_t published;
    bool dir_unsynced; /* a rename in the directory waits for the everysec fsync */
    int retired_fd;    /* the old journal's, for a worker to close (-1: none) */
    bool sync_dir_now; /* the running everysec fsync does the directory too */
    uint64_t journal_records;
    /* The journal's id and the last snapshot's (journal.h, snapshot.h):
     * a snapshot names the journal that continues it and the journal the
     * snapshot it continues, so that the start can tell a journal that
     * belongs to another snapshot.  0 in files of the previous format. */
    uint64_t journal_id, snap_id;
    /* The rest of the journal's header (the revision and snapshot it
     * continues) and its synced length: synced_upto is what the last
     * fsync covered, header_synced what the header says now.  The header
     * is rewritten through header_fd (which, unlike journal_fd, does not
     * append) before the next fsync (write_synced_len).  -1: a journal of
     * the previous format, whose header has no such field. */
    uint64_t journal_base, journal_snap_id;
    uint64_t synced_upto, header_synced;
    int header_fd;
    /* everysec: what the running fsync covers, and of which journal (a
     * switch may come while it runs). */
    uint64_t sync_target, sync_journal_id;
    bool resave; /* the start repaired or upgraded the directory: save at once */
    bool replaying;
    /* A mutation is in progress (begin .. end). */
    bool in_mutation;
    rpd_apply_fn apply; /* replays a record (rpd_durable_open) */
    int refused_err;    /* why the commit hook refused it */
    rp_jw text;         /* the record's params, written out */
    /* --fsync always: the group, records written since the last fsync
     * whose replies wait for the next one (rpd_durable_group_sync). */
    uint64_t group_records, group_from, group_seq;
    uint64_t seq0;                   /* group_seq when the mutation in progress began */
    uint64_t group_epoch;            /* the open group's number; rises at each group fsync */
    int epoch_err[RPD_GROUP_EPOCHS]; /* how the last groups ended (0 or an errno) */
    rpd_core *core;
    rp_store *group_undo; /* the store before the group */

    /* Fsync state.  unsynced: records written since the last fsync began;
     * syncing: an everysec fsync is running; sync_failed: the last fsync
     * failed (mutations are refused until one succeeds). */
    bool unsynced, syncing, sync_failed, failing;
    int sync_fd; /* the worker's own descriptor of the journal (save may swap the file) */
    bool ragged; /* a partial record could not be cut off: no appends until it is */
    uint64_t fsyncs, write_errors;
    uint32_t samples[RPD_FSYNC_SAMPLES]; /* fsync durations, microseconds */
    size_t n_samples, next_sample;
    /* The last snapshot: its store revision (0: none), size, when. */
    uint64_t snap_revision, snap_bytes, snap_unix_ms, snap_ms;
    uint64_t snapshot_after; /* journal bytes that make a background snapshot due */
    bool bg_running;         /* a background snapshot is being written */
};

struct rpd_snap_job {
    rpd_durable *d;
    rp_store *snap;    /* the store as it was (freed on the loop) */
    rps_model *models; /* sorted by name */
    char **jsons;      /* their params, owned */
    size_t n_models;
    uint64_t revision;     /* the store revision the snapshot holds */
    rps_ids ids;           /* its id, the next journal's, the one in use now */
    uint64_t tail_from;    /* journal bytes then: later records go on */
    uint64_t records_then; /* journal records then */
    uint64_t t0, bytes;
    uint64_t begin_us; /* the loop's share at the start (store snapshot, models) */
    int err;
    char why[300];
    /* The next journal, written by the worker after the snapshot:
     * journal.tmp, its header at `revision`, then the old journal's
     * records from tail_from up to `copied`, synced.  The loop adds the
     * few records after that and renames it in (job_finish).  -1: none
     * (the old journal goes on). */
    int jfd;
    uint64_t copied, jbytes;
};

const char *rpd_fsync_name(rpd_fsync f)
{
    return f == RPD_FSYNC_ALWAYS ? "always" : f == RPD_FSYNC_NO ? "no" : "everysec";
}

bool rpd_fsync_parse(const char *s, rpd_fsync *out)
{
    if (strcmp(s, "always") == 0)
        *out = RPD_FSYNC_ALWAYS;
    else if (strcmp(s, "everysec") == 0)
        *out = RPD_FSYNC_EVERYSEC;
    else if (strcmp(s, "no") == 0)
        *out = RPD_FSYNC_NO;
    else
        return false;
    return true;
}

const char *rpd_durable_dir(const rpd_durable *d)
{
    return d->dir;
}
rpd_fsync rpd_durable_policy(const rpd_durable *d)
{
    return d->policy;
}

/* ---- fsync timing -------------------------------------------------------------------- */

static void publish(rpd_durable *d)
{
    __atomic_store_n(&d->published, d->journal_bytes, __ATOMIC_RELEASE);
}

/* A random id for a journal or snapshot, never 0 (which marks the
 * previous format's files). */
static uint64_t new_id(void)
{
    uint64_t id = 0;
    while (id == 0) /* 0 means none in the file headers */
        rpd_random_bytes(&id, sizeof id);
    return id;
}

static void add_sample(rpd_durable *d, uint64_t ns)
{
    uint64_t us = ns / 1000;
    d->samples[d->next_sample] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    d->next_sample = (d->next_sample + 1) % RPD_FSYNC_SAMPLES;
    if (d->n_samples < RPD_FSYNC_SAMPLES)
        d->n_samples++;
    d->fsyncs++;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void rpd_durable_stats_get(const rpd_durable *d, rpd_durable_stats *out)
{
    memset(out, 0, sizeof *out);
    out->journal_bytes = d->journal_bytes;
    out->journal_records = d->journal_records;
    out->fsyncs = d->fsyncs;
    out->write_errors = d->write_errors;
    out->failing = d->failing || d->sync_failed;
    out->snapshot_revision = d->snap_revision;
    out->snapshot_bytes = d->snap_bytes;
    out->snapshot_unix_ms = d->snap_unix_ms;
    out->snapshot_ms = d->snap_ms;
    if (d->n_samples) {
        uint32_t s[RPD_FSYNC_SAMPLES];
        memcpy(s, d->samples, d->n_samples * sizeof *s);
        qsort(s, d->n_samples, sizeof *s, cmp_u32);
        out->fsync_p50_us = s[(d->n_samples - 1) / 2];
        out->fsync_p99_us = s[(d->n_samples - 1) * 99 / 100];
    }
}

/* fdatasync, timed; 0 or an errno. */
static int timed_sync(int fd, uint64_t *ns)
{
    uint64_t t0 = rpd_now_ns();
    int r = fdatasync(fd) == 0 ? 0 : errno;
    *ns = rpd_now_ns() - t0;
    return r;
}

/* Before an fsync: the journal's header is rewritten to say what the
 * last fsync covered, so that a start that finds the file shorter knows it
 * was cut, not torn by a crash (journal.h, proto/PROTOCOL.md Durability).
 * It claims only what is on the disk already, one fsync behind: this
 * write reaches the disk with the coming fsync, or before it, together
 * with records that fsync may not finish.  It costs no fsync of its own,
 * only the header's block written with each fsync.  A failed write only
 * leaves the claim lower. */
static void write_synced_len(rpd_durable *d)
{
    if (d->header_fd < 0 || d->synced_upto <= d->header_synced)
        return;
    uint8_t h[RPJ_FILE_HEADER];
    rpj_file_header(
        h, &(rpj_header){d->journal_base, d->journal_id, d->journal_snap_id, d->synced_upto});
    if (pwrite(d->header_fd, h, sizeof h, 0) == (ssize_t)sizeof h)
        d->header_synced = d->synced_upto;
}

bool rpd_durable_sync_due(rpd_durable *d)
{
    if (!d || d->syncing || !(d->unsynced || d->sync_failed))
        return false;
    /* The worker gets a descriptor of its own: a save on the loop may close
     * journal_fd meanwhile (a sync of the old file is then harmless). */
    d->sync_fd = dup(d->journal_fd);
    if (d->sync_fd < 0)
        return false;
    d->syncing = true;
    d->unsynced = false; /* records written from now on wait for the next one */
    write_synced_len(d);
    d->sync_target = d->journal_bytes;
    d->sync_journal_id = d->journal_id;
    d->sync_dir_now = d->dir_unsynced;
    d->dir_unsynced = false;
    return true;
}

int rpd_durable_sync_run(rpd_durable *d, uint64_t *ns)
{
    int err = timed_sync(d->sync_fd, ns);
    if (!err && d->sync_dir_now && fsync(d->dir_fd) != 0)
        err = errno;
    return err;
}

void rpd_durable_sync_done(rpd_durable *d, int err, uint64_t ns)
{
    d->syncing = false;
    if (d->sync_fd >= 0)
        close(d->sync_fd);
    d->sync_fd = -1;
    if (err) {
        if (!d->sync_failed)
            rpd_log(RPD_LOG_ERROR,
                    "%s/journal: fsync failed: %s; mutations are refused until "
                    "it succeeds",
                    d->dir, strerror(err));
        d->sync_failed = true;
        d->unsynced = true; /* retried at the next tick */
        d->dir_unsynced |= d->sync_dir_now;
        return;
    }
    if (d->sync_failed)
        rpd_log(RPD_LOG_WARN, "%s/journal: fsync works again; mutations accepted", d->dir);
    d->sync_failed = false;
    if (d->journal_id == d->sync_journal_id && d->sync_target > d->synced_upto)
        d->synced_upto = d->sync_target;
    add_sample(d, ns);
}

/* ---- writing -------------------------------------------------------------------------- */

/* Cuts the journal back to its last whole record (after a failed or
 * unwanted write); false when even that fails. */
static bool cut_back(rpd_durable *d)
{
    d->ragged = true;
    if (ftruncate(d->journal_fd, (off_t)d->journal_bytes) == 0) {
        d->ragged = false;
        return true;
    }
    rpd_log(RPD_LOG_ERROR, "%s/journal: cannot cut a partial record off: %s", d->dir,
            strerror(errno));
    return false;
}

/* Appends one record, `method` newline `json`, from its pieces (no copy);
 * 0 or an errno (the journal then ends as before). */
static int append(rpd_durable *d, uint64_t revision, const char *method, const char *json,
                  size_t json_len)
{
    size_t mlen = strlen(method);
    size_t n = mlen + 1 + json_len;
    if (n > RPJ_MAX_PAYLOAD)
        return EFBIG;
    uint32_t crc = rpj_crc32c(rpj_crc32c(rpj_crc32c(0, method, mlen), "\n", 1), json, json_len);
    uint8_t h[RPJ_RECORD_HEADER];
    rpj_record_header_crc(h, revision, crc, (uint32_t)n);
    struct iovec iov[4] = {{h, sizeof h},
                           {(void *)(uintptr_t)method, mlen},
                           {(void *)(uintptr_t) "\n", 1},
                           {(void *)(uintptr_t)json, json_len}};
    struct iovec *v = iov;
    int nv = 4, err = 0;
    while (nv > 0) {
        ssize_t w = writev(d->journal_fd, v, nv);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? errno : EIO;
            break;
        }
        /* Skip what was written. */
        size_t k = (size_t)w;
        while (nv > 0 && k >= v->iov_len) {
            k -= v->iov_len;
            v++;
            nv--;
        }
        if (nv > 0) {
            v->iov_base = (uint8_t *)v->iov_base + k;
            v->iov_len -= k;
        }
    }
    if (err) {
        cut_back(d);
        return err;
    }
    d->journal_bytes += sizeof h + n;
    d->journal_records++;
    d->unsynced = true;
    if (d->policy != RPD_FSYNC_ALWAYS) /* with always, once its group's fsync is done */
        publish(d);
    return 0;
}

/* Writes {id: shape, ...} of a put or replace, each id once with the shape
 * given last, in id order (a JSON object must not repeat a key); false
 * when out of memory. */
static bool write_shapes(rp_jw *w, const rp_change *c)
{
    size_t n;
    const rp_shape_put **put = rpd_change_written(c, &n);
    if (!put)
        return false;
    rp_jw_object_begin(w);
    for (size_t k = 0; k < n; k++) {
        rp_jw_key(w, put[k]->id);
        rp_jw_shape(w, &put[k]->shape);
    }
    rp_jw_object_end(w);
    free(put);
    return true;
}

/* Writes {name: {"pose": pose, "shapes": {id: shape}}} of the objects a
 * put or replace writes (names once each: the store refuses repeats). */
static void write_objects(rp_jw *w, const rp_change *c)
{
    rp_jw_object_begin(w);
    for (size_t j = 0; j < c->n_objects; j++) {
        const rp_object_put *o = &c->objects[j];
        rp_jw_key(w, o->name);
        rp_jw_object_begin(w);
        RP_JW_KEY(w, "pose");
        rp_jw_pose(w, &o->pose);
        RP_JW_KEY(w, "shapes");
        rp_jw_object_begin(w);
        for (size_t k = 0; k < o->n_shapes; k++) {
            rp_jw_key(w, o->shapes[k].id);
            rp_jw_shape(w, &o->shapes[k].shape);
        }
        rp_jw_object_end(w);
        rp_jw_object_end(w);
    }
    rp_jw_object_end(w);
}

/* A robot instance's joints (NULL: none written) and base. */
/* The journal's record of a change, into d->text: the method and params of
 * the request that makes exactly this change again when the journal is
 * replayed (no if_revision: it was checked; a scene the change created is
 * put with "create"), written from the change record, not from the
 * request that made it, so every mutation is journaled the same way
 * whatever method made it.  Numbers go through the codec's writer, which
 * reads back to the same doubles.  A model's record is its definition in
 * model.put's JSON form (rp_jw_model_def), also for a model sent as
 * URDF: the replay needs no URDF parser and gives the same model. */
static const char *encode_change(rpd_durable *d, const rp_change *c)
{
    rp_jw *w = &d->text;
    rp_jw_reset(w);
    if (c->kind == RP_CHANGE_MODEL_PUT) {
        rp_jw_model_def(w, c->name, c->model);
        return "model.put";
    }
    rp_jw_object_begin(w);
    bool model = c->kind == RP_CHANGE_MODEL_DELETE;
    if (model)
        RP_JW_KEY(w, "model");
    else
        RP_JW_KEY(w, "scene");
    rp_jw_string(w, c->name);
    const char *method = "scene.delete";
    switch (c->kind) {
    case RP_CHANGE_SCENE_PUT:
    case RP_CHANGE_SCENE_REPLACE:
        method = c->kind == RP_CHANGE_SCENE_PUT ? "scene.put" : "scene.replace";
        if (c->created) {
            RP_JW_KEY(w, "create");
            rp_jw_bool(w, true);
        }
        RP_JW_KEY(w, "shapes");
        if (!write_shapes(w, c))
            w->oom = true;
        if (c->n_objects || (c->kind == RP_CHANGE_SCENE_REPLACE && c->objects)) {
            RP_JW_KEY(w, "objects");
            write_objects(w, c);
        }
        if (c->n_robots) {
            RP_JW_KEY(w, "robots");
            rp_jw_object_begin(w);
            for (size_t k = 0; k < c->n_robots; k++) {
                rp_jw_key(w, c->robots[k].name);
                const char *mn = c->robots[k].model;
                rp_jw_robot_state(w, mn, rp_store_model_find(d->core->store, mn),
                                  c->robots[k].joints, &c->robots[k].base);
            }
            rp_jw_object_end(w);
        }
        if (c->n_clouds) { /* the spheres as built: replayed as they are */
            RP_JW_KEY(w, "clouds");
            rp_jw_object_begin(w);
            for (size_t k = 0; k < c->n_clouds; k++) {
                rp_jw_key(w, c->clouds[k].name);
                rp_jw_cloud(w, c->clouds[k].cloud);
            }
            rp_jw_object_end(w);
        }
        break;
    case RP_CHANGE_SCENE_MOVE:
        method = "scene.move";
        RP_JW_KEY(w, "objects");
        rp_jw_object_begin(w);
        for (size_t k = 0; k < c->n_moves; k++) {
            rp_jw_key(w, c->moves[k].name);
            rp_jw_pose(w, &c->moves[k].pose);
        }
        rp_jw_object_end(w);
        if (c->n_robot_moves) {
            const rp_scene *sc = c->before;
            RP_JW_KEY(w, "robots");
            rp_jw_object_begin(w);
            for (size_t k = 0; k < c->n_robot_moves; k++) {
                const rp_robot_move *m = &c->robot_moves[k];
                const rp_object *o = sc ? rp_scene_object_find(sc, m->name) : NULL;
                rp_jw_key(w, m->name);
                rp_jw_robot_state(w, NULL, o ? rp_object_model(o) : NULL, m->joints, m->base);
            }
            rp_jw_object_end(w);
        }
        break;
    case RP_CHANGE_SCENE_REMOVE:
        method = "scene.remove";
        RP_JW_KEY(w, "ids");
        rp_jw_array_begin(w);
        for (size_t k = 0; k < c->n_ids; k++)
            rp_jw_string(w, c->ids[k]);
        rp_jw_array_end(w);
        break;
    case RP_CHANGE_SCENE_ATTACH:
        /* With the pose in the link's frame the attach computed: the
         * replay gets the same bits without recomputing it. */
        method = "scene.attach";
        RP_JW_KEY(w, "object");
        rp_jw_string(w, c->object);
        RP_JW_KEY(w, "robot");
        rp_jw_string(w, c->robot);
        RP_JW_KEY(w, "link");
        rp_jw_string(w, c->link);
        RP_JW_KEY(w, "rel");
        rp_jw_pose(w, c->rel);
        break;
    case RP_CHANGE_SCENE_DETACH:
        method = "scene.detach";
        RP_JW_KEY(w, "object");
        rp_jw_string(w, c->object);
        break;
    case RP_CHANGE_MODEL_DELETE:
        method = "model.delete";
        break;
    default:
        break;
    }
    rp_jw_object_end(w);
    return method;
}

/* The store's commit hook: a mutation has checked everything and is about
 * to change the store, taking `revision`.  Its record goes into the journal
 * now; when that fails the mutation is aborted (RP_ERR_ABORTED, nothing
 * changed) and the mutation is answered -32007 with rpd_durable_refusal's reason. */
static int on_commit(void *ctx, const rp_change *change)
{
    rpd_durable *d = ctx;
    uint64_t revision = change->revision;
    if (d->replaying)
        return 0;
    if (!d->in_mutation) {
        /* Every mutation comes through dispatch (begin .. end); one that
         * did not would change what the journal cannot bring back. */
        rpd_log(RPD_LOG_ERROR, "journal: a store mutation outside a request; refused");
        d->refused_err = EINVAL;
        return -1;
    }
    const char *method = encode_change(d, change);
    int err = rp_jw_failed(&d->text) ? ENOMEM : 0;
    uint64_t at = d->journal_bytes;
    if (!err)
        err = append(d, revision, method, d->text.buf, d->text.len);
    if (err) {
        d->refused_err = err;
        d->failing = true;
        return -1;
    }
    if (d->failing)
        rpd_log(RPD_LOG_WARN, "%s/journal: writes work again", d->dir);
    d->failing = false;
    if (d->policy == RPD_FSYNC_ALWAYS) {
        if (d->group_records == 0)
            d->group_from = at;
        d->group_records++;
        d->group_seq++;
        rpd_changes_hold(d->core); /* until the group's fsync */
    }
    return 0;
}

void rpd_durable_refusal(rpd_durable *d, char *why, size_t cap)
{
    int err = d->refused_err ? d->refused_err : EIO;
    d->refused_err = 0;
    d->write_errors++;
    snprintf(why, cap, "could not write the journal: %s", strerror(err));
}

int rpd_durable_begin(rpd_durable *d, char *why, size_t cap)
{
    if (!d || d->replaying)
        return 0;
    if (d->sync_failed) {
        d->write_errors++;
        snprintf(why, cap,
                 "the journal's last fsync failed; mutations are refused until it "
                 "succeeds");
        return EIO;
    }
    /* A record after a partial one would be lost behind it at the next
     * start: the partial one goes first. */
    if (d->ragged && !cut_back(d)) {
        int err = errno;
        d->write_errors++;
        snprintf(why, cap, "the journal ends in a partial record that cannot be cut off: %s",
                 strerror(err));
        return err ? err : EIO;
    }
    /* --fsync always: the store as it was before the group's first
     * mutation, to put back if the group's fsync fails. */
    if (d->policy == RPD_FSYNC_ALWAYS && d->group_records == 0 && !d->group_undo &&
        !(d->group_undo = rp_store_snapshot(d->core->store)))
        return ENOMEM;
    d->in_mutation = true;
    d->refused_err = 0;
    d->seq0 = d->group_seq;
    return 0;
}

void rpd_durable_end(rpd_durable *d, rpd_session *s)
{
    if (!d || d->replaying)
        return;
    if (d->group_records == 0 && d->group_undo) {
        rp_store_free(d->group_undo); /* nothing committed: no group to undo */
        d->group_undo = NULL;
    }
    if (d->group_seq != d->seq0 && s)
        s->group_epoch1 = d->group_epoch + 1;
    d->in_mutation = false;
}

/* ---- group commit (--fsync always) ---------------------------------------------------- */

static void group_clear(rpd_durable *d)
{
    d->group_records = 0;
    rp_store_free(d->group_undo);
    d->group_undo = NULL;
}

bool rpd_durable_group_open(const rpd_durable *d)
{
    return d && d->group_records > 0;
}

uint64_t rpd_durable_group_seq(const rpd_durable *d)
{
    return d ? d->group_seq : 0;
}

uint64_t rpd_durable_group_epoch(const rpd_durable *d)
{
    return d ? d->group_epoch : 0;
}

int rpd_durable_group_result(const rpd_durable *d, uint64_t first, uint64_t last)
{
    if (!d || last >= d->group_epoch)
        return -1;
    if (d->group_epoch - first > RPD_GROUP_EPOCHS)
        return EIO; /* cannot happen: a connection waits one loop iteration */
    for (uint64_t e = first; e <= last; e++)
        if (d->epoch_err[e % RPD_GROUP_EPOCHS])
            return d->epoch_err[e % RPD_GROUP_EPOCHS];
    return 0;
}

int rpd_durable_group_sync(rpd_durable *d)
{
    if (!d || d->group_records == 0)
        return 0;
    rp_store *st = d->core->store;
    uint64_t ns;
    write_synced_len(d);
    int err = timed_sync(d->journal_fd, &ns);
    if (!err && d->dir_unsynced)
        err = fsync(d->dir_fd) == 0 ? 0 : errno;
    if (!err)
        d->dir_unsynced = false;
    d->epoch_err[d->group_epoch % RPD_GROUP_EPOCHS] = err;
    d->group_epoch++;
    if (!err) {
        add_sample(d, ns);
        d->unsynced = false;
        d->synced_upto = d->journal_bytes;
        if (d->failing)
            rpd_log(RPD_LOG_WARN, "%s/journal: fsync works again", d->dir);
        d->failing = false;
        group_clear(d);
        rpd_changes_settle(d->core);
        publish(d);
        return 0;
    }
    /* After a failed fsync nothing tells which of the group's records are
     * on the disk: all of them go, from the journal and from memory. */
    rpd_log(RPD_LOG_ERROR,
            "%s/journal: fsync failed: %s; %llu mutation%s waiting on it undone "
            "and answered with -32007",
            d->dir, strerror(err), (unsigned long long)d->group_records,
            d->group_records == 1 ? "" : "s");
    d->journal_bytes = d->group_from;
    d->journal_records -= d->group_records;
    d->write_errors += d->group_records;
    d->failing = true;
    if (cut_back(d)) {
        uint64_t ns2;
        timed_sync(d->journal_fd, &ns2);
    }
    if (d->group_undo)
        rp_store_restore(st, d->group_undo); /* frees it */
    d->group_undo = NULL;
    rpd_changes_undo(d->core, rp_store_revision(st)); /* the watchers forget them */
    group_clear(d);
    return err;
}

/* ---- snapshots ------------------------------------------------------------------------ */

static void sync_dir(rpd_durable *d);
static void next_journal(rpd_snap_job *j);

void rpd_durable_set_snapshot_after(rpd_durable *d, uint64_t bytes)
{
    d->snapshot_after = bytes;
}

static void snap_job_free(rpd_snap_job *j)
{
    if (!j)
        return;
    rpd_image_models_free(j->models, j->jsons, j->n_models);
    rp_store_free(j->snap);
    if (j->jfd >= 0) {
        close(j->jfd);
        unlinkat(j->d->dir_fd, "journal.tmp", 0);
    }
    free(j);
}

/* A snapshot job for the store as it is now (NULL with why when memory
 * is short).  The models' definitions are written out by the worker, from
 * the store snapshot (rp_model_definition). */
static rpd_snap_job *job_new(rpd_durable *d, rp_store *st, char *why, size_t cap)
{
    uint64_t t0 = rpd_now_ns();
    rpd_snap_job *j = calloc(1, sizeof *j);
    if (j)
        j->jfd = -1;
    if (!j || !(j->snap = rp_store_snapshot(st))) {
        snap_job_free(j);
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    j->d = d;
    j->t0 = t0;
    j->revision = rp_store_revision(st);
    j->ids = (rps_ids){new_id(), new_id(), d->journal_id};
    j->tail_from = d->journal_bytes;
    j->records_then = d->journal_records;
    j->begin_us = (rpd_now_ns() - t0) / 1000;
    return j;
}

rpd_snap_job *rpd_durable_snapshot_begin(rpd_durable *d, rp_store *st)
{
    if (!d || d->bg_running || d->failing || d->ragged || d->group_records ||
        d->journal_bytes < RPJ_FILE_HEADER + d->snapshot_after || d->journal_bytes < d->snap_bytes)
        return NULL;
    char why[200];
    rpd_snap_job *j = job_new(d, st, why, sizeof why);
    if (j)
        d->bg_running = true;
    return j;
}

/* Every model of the snapshot as the model.put params that make it
 * (image.h); 0 or ENOMEM. */
static int job_models(rpd_snap_job *j)
{
    return rpd_image_models(j->snap, &j->models, &j->jsons, &j->n_models);
}

void rpd_durable_snapshot_run(rpd_snap_job *j)
{
    rpd_durable *d = j->d;
    int fd = openat(d->dir_fd, "snapshot.tmp",
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int err = fd < 0 ? errno : 0;
    if (!err)
        err = job_models(j);
    if (!err)
        err = rps_write(fd, j->snap, j->revision, &j->ids, j->models, j->n_models, &j->bytes);
    if (!err && fdatasync(fd) != 0)
        err = errno;
    if (fd >= 0)
        close(fd);
    if (!err && renameat(d->dir_fd, "snapshot.tmp", d->dir_fd, "snapshot") != 0)
        err = errno;
    if (err) {
        unlinkat(d->dir_fd, "snapshot.tmp", 0);
        snprintf(j->why, sizeof j->why, "%s", strerror(err));
    } else if (fsync(d->dir_fd) != 0) {
        snprintf(j->why, sizeof j->why, "fsync of the directory: %s", strerror(errno));
    }
    j->err = err;
    if (!err)
        next_journal(j);
}

/* Appends bytes [from, to) of file `in` to `out`; 0 or an errno. */
static int copy_range(int in, int out, uint64_t from, uint64_t to)
{
    uint8_t buf[1 << 16];
    for (uint64_t at = from; at < to;) {
        size_t want = to - at < sizeof buf ? (size_t)(to - at) : sizeof buf;
        ssize_t r = pread(in, buf, want, (off_t)at);
        if (r <= 0)
            return r < 0 ? errno : EIO;
        for (ssize_t done = 0; done < r;) {
            ssize_t w = write(out, buf + done, (size_t)(r - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? errno : EIO;
            done += w;
        }
        at += (uint64_t)r;
    }
    return 0;
}

/* Rewrites the file header of journal.tmp (whose descriptor appends) with
 * its synced length; 0 or an errno.  The caller syncs. */
static int set_synced_len(rpd_durable *d, const rpd_snap_job *j, uint64_t synced_len)
{
    int fd = openat(d->dir_fd, "journal.tmp", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno;
    uint8_t h[RPJ_FILE_HEADER];
    rpj_file_header(h,
                    &(rpj_header){j->revision, j->ids.journal_id, j->ids.snapshot_id, synced_len});
    int err = pwrite(fd, h, sizeof h, 0) == (ssize_t)sizeof h ? 0 : errno ? errno : EIO;
    close(fd);
    return err;
}

/* On the worker, after the snapshot: journal.tmp with the header at the
 * snapshot's revision and the records the loop has published since the
 * job began, synced; twice, so that the loop is left only the records of
 * the last moment (job_finish).  Its header then says how long it is (its
 * synced length, journal.h): whatever happens later, the file never gets
 * shorter than that, and a start that finds it shorter refuses.  That
 * costs one more fsync here, on the worker, when records were copied.  A
 * failure leaves no next journal: the old one goes on growing, which
 * loses nothing. */
static void next_journal(rpd_snap_job *j)
{
    rpd_durable *d = j->d;
    int in = openat(d->dir_fd, "journal", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int out = openat(d->dir_fd, "journal.tmp",
                     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    uint8_t h[RPJ_FILE_HEADER];
    rpj_file_header(
        h, &(rpj_header){j->revision, j->ids.journal_id, j->ids.snapshot_id, RPJ_FILE_HEADER});
    int err = in < 0 || out < 0 ? errno : 0;
    if (!err && write(out, h, sizeof h) != (ssize_t)sizeof h)
        err = errno ? errno : EIO;
    uint64_t at = j->tail_from;
    for (int round = 0; round < 2 && !err; round++) {
        uint64_t upto = __atomic_load_n(&d->published, __ATOMIC_ACQUIRE);
        if (upto > at)
            err = copy_range(in, out, at, upto);
        if (!err && fdatasync(out) != 0)
            err = errno;
        if (!err && upto > at)
            at = upto;
    }
    if (!err && at > j->tail_from) {
        err = set_synced_len(d, j, RPJ_FILE_HEADER + (at - j->tail_from));
        if (!err && fdatasync(out) != 0)
            err = errno;
    }
    if (in >= 0)
        close(in);
    if (err) {
        if (out >= 0)
            close(out);
        unlinkat(d->dir_fd, "journal.tmp", 0);
        rpd_log(RPD_LOG_WARN, "%s/journal.tmp: %s; the journal goes on growing", d->dir,
                strerror(err));
        return;
    }
    j->jfd = out;
    j->copied = at;
    j->jbytes = RPJ_FILE_HEADER + (at - j->tail_from);
}

/* The next journal takes over: the records written since the worker's
 * copy are added (a few; in the page cache), then it is renamed over the
 * journal and appended to from now on.  With sync_now (save, --fsync
 * always) it and the directory are synced here; otherwise the everysec
 * fsync does it within a second (the old journal had every record synced
 * as its policy says, and until the rename is on the disk a crash finds
 * the old journal, which has them all). */
static bool switch_journal(rpd_durable *d, rpd_snap_job *j, bool sync_now, bool background)
{
    if (j->jfd < 0)
        return false;
    int in = openat(d->dir_fd, "journal", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int err = in < 0 ? errno : copy_range(in, j->jfd, j->copied, d->journal_bytes);
    if (in >= 0)
        close(in);
    if (!err && sync_now && fdatasync(j->jfd) != 0)
        err = errno;
    if (!err && renameat(d->dir_fd, "journal.tmp", d->dir_fd, "journal") != 0)
        err = errno;
    if (err) {
        rpd_log(RPD_LOG_WARN, "%s/journal.tmp: %s", d->dir, strerror(err));
        return false; /* snap_job_free removes it */
    }
    /* The rename must be on the disk before a record acknowledged from
     * the new file counts: when this fsync fails, the next one retries
     * (the group's fsync or the timer's, which fail until it works). */
    if (!sync_now || fsync(d->dir_fd) != 0)
        d->dir_unsynced = true;
    /* The old journal is unlinked now: the last close frees its blocks,
     * which takes long for a big file; a background job leaves that to a
     * worker (rpd_durable_retired_fd). */
    if (!background || d->retired_fd >= 0)
        close(d->journal_fd);
    else
        d->retired_fd = d->journal_fd;
    d->journal_fd = j->jfd;
    d->journal_id = j->ids.journal_id;
    d->journal_base = j->revision;
    d->journal_snap_id = j->ids.snapshot_id;
    j->jfd = -1;
    if (d->header_fd >= 0)
        close(d->header_fd);
    d->header_fd = openat(d->dir_fd, "journal", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    d->journal_bytes = j->jbytes + (d->journal_bytes - j->copied);
    d->journal_records -= j->records_then;
    d->unsynced = !sync_now;
    d->header_synced = j->jbytes; /* as next_journal wrote it */
    d->synced_upto = sync_now ? d->journal_bytes : j->jbytes;
    d->ragged = false; /* a partial record in the old journal was not copied */
    publish(d);
    return true;
}

/* After a snapshot was written: the stats, and the journal starts again
 * from it with the records that came since the job began (none for save).
 * A journal that cannot start again is no loss: the old one goes on, and
 * the next start skips what the snapshot holds. */
static void job_finish(rpd_durable *d, rpd_snap_job *j, bool background)
{
    d->snap_revision = j->revision;
    d->snap_id = j->ids.snapshot_id;
    d->snap_bytes = j->bytes;
    d->snap_unix_ms = (uint64_t)time(NULL) * 1000;
    if (!switch_journal(d, j, !background || d->policy == RPD_FSYNC_ALWAYS, background)) {
        rpd_log(RPD_LOG_WARN,
                "%s: the snapshot is written but the journal could not start "
                "again; it goes on growing",
                d->dir);
    }
    d->snap_ms = (rpd_now_ns() - j->t0) / 1000000;
    if (!background) /* snapshot_end logs a background one */
        rpd_log(RPD_LOG_INFO, "%s/snapshot: revision %llu, %llu bytes in %llu ms", d->dir,
                (unsigned long long)j->revision, (unsigned long long)j->bytes,
                (unsigned long long)d->snap_ms);
}

void rpd_durable_snapshot_fail(rpd_snap_job *j, const char *why)
{
    j->err = EAGAIN;
    snprintf(j->why, sizeof j->why, "%s", why);
}

int rpd_durable_retired_fd(rpd_durable *d)
{
    int fd = d ? d->retired_fd : -1;
    if (d)
        d->retired_fd = -1;
    return fd;
}

void rpd_durable_snapshot_end(rpd_durable *d, rpd_snap_job *j)
{
    uint64_t t_end = rpd_now_ns();
    d->bg_running = false;
    /* The journal starts again from the snapshot with the records after
     * it: those waiting for the group's fsync get it first (their replies
     * go at the end of this loop iteration, server.c). */
    rpd_durable_group_sync(d);
    if (j->err)
        rpd_log(RPD_LOG_WARN, "%s/snapshot: background write failed: %s (the journal goes on)",
                d->dir, j->why);
    else
        job_finish(d, j, true);
    bool ok = !j->err;
    uint64_t revision = j->revision, bytes = j->bytes, begin_us = j->begin_us;
    snap_job_free(j); /* drops the store version it held: counted too */
    if (ok)           /* what the event loop spent on it: at the start and at the end */
        rpd_log(RPD_LOG_INFO,
                "%s/snapshot: revision %llu, %llu bytes in %llu ms (background; "
                "the loop spent %llu us at the start, %llu us at the end)",
                d->dir, (unsigned long long)revision, (unsigned long long)bytes,
                (unsigned long long)d->snap_ms, (unsigned long long)begin_us,
                (unsigned long long)((rpd_now_ns() - t_end) / 1000));
}

bool rpd_durable_session_waits(const rpd_durable *d, const rpd_session *s)
{
    return d && s && d->group_records && s->group_epoch1 == d->group_epoch + 1;
}

/* save: the same job, run here and now. */
int rpd_durable_save(rpd_durable *d, rp_store *st, char *why, size_t cap)
{
    if (d->bg_running) {
        snprintf(why, cap,
                 "a snapshot is being written in the background; try again when it "
                 "is done (stats.durability.snapshot)");
        return EBUSY;
    }
    /* A snapshot must not hold a mutation whose fsync may yet fail (and
     * be undone): the group waiting for one gets it now. */
    int gerr = rpd_durable_group_sync(d);
    if (gerr) {
        snprintf(why, cap, "the journal's fsync failed: %s", strerror(gerr));
        return gerr;
    }
    rpd_snap_job *j = job_new(d, st, why, cap);
    if (!j)
        return ENOMEM;
    rpd_durable_snapshot_run(j);
    int err = j->err;
    if (err)
        snprintf(why, cap, "writing %s/snapshot: %s", d->dir, j->why);
    else
        job_finish(d, j, false);
    snap_job_free(j);
    return err;
}

/* ---- opening and replay ---------------------------------------------------------------- */

/* Reads a whole file into memory (NULL with errno on failure). */
static uint8_t *slurp(int fd, size_t *n)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return NULL;
    size_t size = (size_t)sb.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return NULL;
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            free(buf);
            return NULL;
        }
        got += (size_t)r;
    }
    *n = size;
    return buf;
}

typedef struct replay {
    rpd_durable *d;
    rpd_core *core;
    uint64_t skip_upto; /* records at or below the snapshot's revision are in it */
    size_t bad_offset;  /* a record that did not apply */
    char why[600];
} replay;

/* Runs one mutation (method, params as JSON) that must take `revision`;
 * false (with r->why) when it does not apply. */
static bool apply(replay *r, const char *method, const char *json, size_t len, uint64_t revision)
{
    /* A replica's journal (--nats) skips the stream sequences that changed
     * nothing: its revisions only rise. */
    if (r->core->revision_gaps && revision > rp_store_revision(r->core->store) + 1)
        rp_store_set_revision(r->core->store, revision - 1);
    if (rp_store_revision(r->core->store) + 1 != revision) {
        snprintf(r->why, sizeof r->why, "revision %llu follows %llu", (unsigned long long)revision,
                 (unsigned long long)rp_store_revision(r->core->store));
        return false;
    }
    char why[400];
    if (!r->d->apply(r->core, method, json, len, why, sizeof why)) {
        snprintf(r->why, sizeof r->why, "%s", why);
        return false;
    }
    if (rp_store_revision(r->core->store) == revision)
        return true;
    snprintf(r->why, sizeof r->why, "%s took revision %llu, not %llu", method,
             (unsigned long long)rp_store_revision(r->core->store), (unsigned long long)revision);
    return false;
}

/* rpj_scan visitor: one journal record. */
static bool replay_record(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n,
                          size_t offset)
{
    replay *r = ctx;
    if (revision <= r->skip_upto)
        return true; /* already in the snapshot */
    const uint8_t *nl = memchr(payload, '\n', n);
    char method[64];
    size_t mlen = nl ? (size_t)(nl - payload) : 0;
    if (!nl || mlen >= sizeof method) {
        snprintf(r->why, sizeof r->why, "not a mutation");
        r->bad_offset = offset;
        return false;
    }
    memcpy(method, payload, mlen);
    method[mlen] = '\0';
    if (!apply(r, method, (const char *)payload + mlen + 1, n - mlen - 1, revision)) {
        r->bad_offset = offset;
        return false;
    }
    r->d->journal_records++;
    return true;
}

/* rps_load's model callback: the model.put that made it. */
static bool snapshot_model(void *ctx, const rps_model *m, const char **why)
{
    replay *r = ctx;
    if (!apply(r, "model.put", m->json, m->json_len, m->revision)) {
        *why = r->why;
        return false;
    }
    return true;
}

/* fsync of the directory, after a file in it was created or renamed. */
static void sync_dir(rpd_durable *d)
{
    if (fsync(d->dir_fd) != 0)
        rpd_log(RPD_LOG_WARN, "%s: fsync of the directory failed: %s", d->dir, strerror(errno));
}

/* DIR/journal, empty, whole before anyone sees it: written as journal.tmp
 * (header, fsync), renamed over DIR/journal, the directory synced.  So a
 * journal never has a partial header, and a start that finds one knows
 * it was cut after it was written, not torn by a crash. */
static bool create_journal(rpd_durable *d, uint64_t base, uint64_t snapshot_id, uint64_t journal_id)
{
    int fd = openat(d->dir_fd, "journal.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    if (fd < 0) {
        rpd_log(RPD_LOG_ERROR, "%s/journal.tmp: cannot create: %s", d->dir, strerror(errno));
        return false;
    }
    uint8_t h[RPJ_FILE_HEADER];
    rpj_file_header(h, &(rpj_header){base, journal_id, snapshot_id, RPJ_FILE_HEADER});
    bool ok = write(fd, h, sizeof h) == (ssize_t)sizeof h && fdatasync(fd) == 0;
    close(fd);
    ok = ok && renameat(d->dir_fd, "journal.tmp", d->dir_fd, "journal") == 0 &&
         fsync(d->dir_fd) == 0;
    if (!ok) {
        rpd_log(RPD_LOG_ERROR, "%s/journal: cannot create: %s", d->dir, strerror(errno));
        unlinkat(d->dir_fd, "journal.tmp", 0);
        return false;
    }
    d->journal_id = journal_id;
    return true;
}

/* Every limit at its maximum, for the replay. */
static rpd_limits lifted_limits(void)
{
    rpd_limits l;
#define RPD_LIMIT_LIFT(name, dflt, lo, hi, flag, help) l.name = (size_t)(hi);
    RPD_LIMIT_TABLE(RPD_LIMIT_LIFT)
#undef RPD_LIMIT_LIFT
    return l;
}

/* What the start found of DIR/snapshot. */
typedef struct snapinfo {
    bool present;
    uint32_t format;
    uint64_t revision;
    rps_ids ids; /* zeros for the previous format */
} snapinfo;

/* Loads DIR/snapshot into the store when there is one (the replay
 * environment is set up by the caller); false stops the start. */
static bool load_snapshot(rpd_durable *d, replay *r, snapinfo *si)
{
    int fd = openat(d->dir_fd, "snapshot", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return true;
        rpd_log(RPD_LOG_ERROR, "%s/snapshot: cannot open: %s", d->dir, strerror(errno));
        return false;
    }
    size_t n = 0;
    uint8_t *buf = slurp(fd, &n);
    struct stat sb;
    bool have_time = fstat(fd, &sb) == 0;
    close(fd);
    if (!buf) {
        rpd_log(RPD_LOG_ERROR, "%s/snapshot: cannot read: %s", d->dir, strerror(errno));
        return false;
    }
    rps_load_result res;
    bool ok = rps_load(buf, n, r->core->store, snapshot_model, r, &res);
    free(buf);
    if (!ok) {
        rpd_log(RPD_LOG_ERROR, "%s/snapshot: %s at offset %zu (%s); refusing to start", d->dir,
                res.bad_format ? "unreadable" : "corrupt", res.bad_offset, res.reason);
        return false;
    }
    *si = (snapinfo){true, res.format, res.revision, res.ids};
    d->snap_revision = res.revision;
    d->snap_id = res.ids.snapshot_id;
    d->snap_bytes = n;
    if (have_time)
        d->snap_unix_ms =
            (uint64_t)sb.st_mtim.tv_sec * 1000 + (uint64_t)sb.st_mtim.tv_nsec / 1000000;
    r->skip_upto = res.revision;
    rpd_log(RPD_LOG_INFO, "%s/snapshot: %zu scenes, %zu shapes, %zu models at revision %llu",
            d->dir, res.scenes, res.shapes, res.models, (unsigned long long)res.revision);
    return true;
}

/* Whether the journal whose header `j` describes continues the snapshot:
 * it is the journal written for it (its id, the snapshot's id, its
 * revision), or the journal that was in use when the snapshot was written
 * (a crash between the snapshot's rename and the new journal's, or a
 * journal that could not start again), whose records up to the snapshot's
 * revision the replay skips.  Without a snapshot the journal must continue
 * none.  Files of the previous format carry ids 0, so an old snapshot and
 * journal still match by revision, and so does an old journal with the
 * first new snapshot written while it was in use. */
static bool continues(const rpj_scan_result *j, const snapinfo *si)
{
    if (!si->present)
        return j->base_revision == 0 && j->snapshot_id == 0;
    if (j->journal_id == si->ids.journal_id && j->snapshot_id == si->ids.snapshot_id &&
        j->base_revision == si->revision)
        return true;
    return j->journal_id == si->ids.prev_journal_id && j->base_revision <= si->revision;
}

/* What a start from the snapshot alone holds, for the messages. */
static void snapshot_alone(const rpd_durable *d, const snapinfo *si, char *out, size_t cap)
{
    if (si->present)
        snprintf(out, cap, "%s/snapshot alone (revision %llu)", d->dir,
                 (unsigned long long)si->revision);
    else
        snprintf(out, cap, "an empty store (there is no %s/snapshot)", d->dir);
}

/* rpj_scan visitor that stops at the first record: the file header only. */
static bool header_only(void *ctx, uint64_t revision, const uint8_t *payload, uint32_t n,
                        size_t offset)
{
    (void)ctx;
    (void)revision;
    (void)payload;
    (void)n;
    (void)offset;
    return false;
}

/* The journal the snapshot expects, started again empty (--repair). */
static bool restart_journal(rpd_durable *d, const snapinfo *si)
{
    return create_journal(d, si->present ? si->revision : 0, si->ids.snapshot_id,
                          si->present ? si->ids.journal_id : new_id());
}

/* Opens DIR/journal and reads it whole, after checking that it is the
 * journal the snapshot expects and as long as it must be.  Refuses
 * (false, the reason logged with what --repair would drop) when it is
 * missing while a snapshot is there, ends inside its header, belongs to
 * another snapshot, or is shorter than its synced length; --repair
 * starts it again empty in the first three cases (a journal of another
 * snapshot is kept aside as DIR/journal.rejected) and lets the caller cut
 * it to its whole records in the last.  *short_by: the bytes missing
 * below the synced length (0: none). */
static bool open_journal(rpd_durable *d, const snapinfo *si, bool repair, int *fdp, uint8_t **bufp,
                         size_t *np, rpj_scan_result *head, size_t *short_by)
{
    char alone[600];
    snapshot_alone(d, si, alone, sizeof alone);
    *short_by = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = openat(d->dir_fd, "journal", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && !si->present) {
            /* A new data directory. */
            if (!create_journal(d, 0, 0, new_id()))
                return false;
            continue;
        }
        if (fd < 0 && errno == ENOENT) {
            /* The snapshot cannot know how many records came after it, so
             * a missing journal may have held any number of them. */
            if (!repair) {
                rpd_log(RPD_LOG_ERROR,
                        "%s/journal is missing: %s/snapshot (revision %llu) "
                        "expects a journal with every mutation acknowledged after it; "
                        "refusing to start (--repair starts from %s, dropping whatever that "
                        "journal held)",
                        d->dir, d->dir, (unsigned long long)si->revision, alone);
                return false;
            }
            rpd_log(RPD_LOG_WARN,
                    "%s/journal is missing; --repair: starting from %s with an "
                    "empty journal (whatever the missing journal held after revision %llu is "
                    "dropped)",
                    d->dir, alone, (unsigned long long)si->revision);
            if (!restart_journal(d, si))
                return false;
            continue;
        }
        if (fd < 0) {
            rpd_log(RPD_LOG_ERROR, "%s/journal: cannot open: %s", d->dir, strerror(errno));
            return false;
        }
        size_t n = 0;
        uint8_t *buf = slurp(fd, &n);
        if (!buf) {
            rpd_log(RPD_LOG_ERROR, "%s/journal: cannot read: %s", d->dir, strerror(errno));
            close(fd);
            return false;
        }
        rpj_scan(buf, n, header_only, NULL, head);
        char why[900] = "";
        bool set_aside = false;
        if (head->end == RPJ_BAD_FORMAT) {
            rpd_log(RPD_LOG_ERROR,
                    "%s/journal: %s (this reposed reads journal formats %u and "
                    "%u); refusing to start",
                    d->dir, head->reason, RPJ_FORMAT_V1, RPJ_FORMAT);
            free(buf);
            close(fd);
            return false;
        } else if (head->good == 0 && head->end == RPJ_TORN) {
            /* Journals are renamed into place with their header synced. */
            snprintf(why, sizeof why,
                     "%s/journal is %zu bytes, shorter than its header: it was "
                     "cut or emptied after it was written (a crash cannot leave that), and the "
                     "mutations it held are gone",
                     d->dir, n);
        } else if (head->good == 0) {
            snprintf(why, sizeof why, "%s/journal: corrupt at offset %zu (%s)", d->dir,
                     head->bad_offset, head->reason);
        } else if (!continues(head, si)) {
            rpj_scan_result all;
            rpj_scan(buf, n, NULL, NULL, &all);
            int len = snprintf(why, sizeof why,
                               "%s/journal (id %016llx, after revision %llu, "
                               "%zu records) does not continue ",
                               d->dir, (unsigned long long)head->journal_id,
                               (unsigned long long)head->base_revision, all.records);
            if (si->present)
                snprintf(why + len, sizeof why - (size_t)len,
                         "%s/snapshot (id %016llx at "
                         "revision %llu, which expects journal %016llx): it belongs to another "
                         "snapshot or data directory",
                         d->dir, (unsigned long long)si->ids.snapshot_id,
                         (unsigned long long)si->revision, (unsigned long long)si->ids.journal_id);
            else
                snprintf(why + len, sizeof why - (size_t)len,
                         "an empty store: it continues "
                         "from revision %llu, but there is no %s/snapshot",
                         (unsigned long long)head->base_revision, d->dir);
            set_aside = true;
        } else if (n < head->synced_len) {
            *short_by = (size_t)(head->synced_len - n);
            if (!repair) {
                rpd_log(RPD_LOG_ERROR,
                        "%s/journal is %zu bytes, but %llu bytes of it were "
                        "synced: it was cut afterwards (not a torn write), and mutations "
                        "acknowledged before the cut are gone; refusing to start (--repair "
                        "keeps its whole records before the cut and drops the rest)",
                        d->dir, n, (unsigned long long)head->synced_len);
                free(buf);
                close(fd);
                return false;
            }
        }
        if (why[0]) {
            free(buf);
            close(fd);
            if (!repair) {
                rpd_log(RPD_LOG_ERROR, "%s; refusing to start (--repair starts from %s%s)", why,
                        alone,
                        set_aside ? ", keeping this journal aside as journal.rejected"
                                  : ", dropping this journal");
                return false;
            }
            rpd_log(RPD_LOG_WARN, "%s; --repair: starting from %s%s", why, alone,
                    set_aside ? ", the journal kept aside as journal.rejected" : "");
            if (set_aside && renameat(d->dir_fd, "journal", d->dir_fd, "journal.rejected") != 0) {
                rpd_log(RPD_LOG_ERROR, "%s/journal: cannot rename it to journal.rejected: %s",
                        d->dir, strerror(errno));
                return false;
            }
            if (!restart_journal(d, si))
                return false;
            continue;
        }
        *fdp = fd;
        *bufp = buf;
        *np = n;
        return true;
    }
    rpd_log(RPD_LOG_ERROR, "%s/journal: still not usable after it was made again", d->dir);
    return false;
}

void rpd_durable_set_loading(rpd_durable *d, bool on)
{
    if (d)
        d->replaying = on;
}

/* The end of the replay environment load_journal sets up. */
static void replay_done(rpd_durable *d, rpd_core *core, const rpd_core *saved,
                        const rp_store_limits *store_limits)
{
    d->replaying = false;
    rp_store_set_limits(core->store, store_limits);
    core->limits = saved->limits;
    core->watch = saved->watch;
    core->stats = saved->stats; /* the replay's handlers counted nothing real */
}

/* Loads the snapshot and the journal into the store; false stops the
 * start. */
static bool load_journal(rpd_durable *d, rpd_core *core, bool repair)
{
    /* Leftovers of a snapshot or journal restart a crash interrupted: the
     * renames had not happened, so the files in use are the old ones. */
    unlinkat(d->dir_fd, "snapshot.tmp", 0);
    unlinkat(d->dir_fd, "journal.tmp", 0);
    /* Load with every limit lifted: what was acknowledged is restored
     * whatever the limits are now. */
    rpd_core saved = *core;
    rp_store_limits store_limits = rp_store_get_limits(core->store),
                    none = {SIZE_MAX, RP_MAX_HALFSPACES_PER_SCENE};
    rp_store_set_limits(core->store, &none);
    core->limits = lifted_limits();
    core->watch = NULL;
    d->replaying = true;
    replay r = {d, core, 0, 0, ""};
    snapinfo si = {0};
    int fd = -1;
    uint8_t *buf = NULL;
    size_t n = 0, short_by = 0;
    rpj_scan_result head;
    if (!load_snapshot(d, &r, &si) ||
        !open_journal(d, &si, repair, &fd, &buf, &n, &head, &short_by)) {
        replay_done(d, core, &saved, &store_limits);
        return false;
    }
    d->journal_id = head.journal_id;
    d->journal_base = head.base_revision;
    d->journal_snap_id = head.snapshot_id;
    d->synced_upto = d->header_synced = head.synced_len;
    if (head.format == RPJ_FORMAT_V1 || si.format == RPS_FORMAT_V1) {
        /* The previous format: read as it is, then written anew.  (A
         * format-2 snapshot needs no upgrade: format 3 only added shape
         * kinds.) */
        rpd_log(RPD_LOG_INFO,
                "%s: files of the previous format; upgrading (a snapshot and a "
                "new journal are written after the replay)",
                d->dir);
        d->resave = true;
    }
    rpj_scan_result res;
    /* The trees are built once at the end, not updated by each record. */
    rp_store_bulk_load(core->store, true);
    bool stopped = !rpj_scan(buf, n, replay_record, &r, &res);
    free(buf);
    if (rp_store_bulk_load(core->store, false) != RP_OK) {
        rpd_log(RPD_LOG_ERROR, "%s: out of memory building the scenes' trees after the replay",
                d->dir);
        replay_done(d, core, &saved, &store_limits);
        close(fd);
        return false;
    }
    replay_done(d, core, &saved, &store_limits);

    size_t cut = SIZE_MAX;
    if (stopped || res.end == RPJ_CORRUPT) {
        size_t at = stopped ? r.bad_offset : res.bad_offset;
        const char *why = stopped ? r.why : res.reason;
        if (!repair) {
            rpd_log(RPD_LOG_ERROR,
                    "%s/journal: corrupt at offset %zu (%s); refusing to start "
                    "(--repair cuts the journal there, losing what follows)",
                    d->dir, at, why);
            close(fd);
            return false;
        }
        rpd_log(RPD_LOG_WARN,
                "%s/journal: corrupt at offset %zu (%s); --repair: cutting the "
                "journal there (%zu bytes dropped)",
                d->dir, at, why, n - at);
        cut = at;
    } else if (short_by) {
        /* Only with --repair (open_journal refused otherwise). */
        rpd_log(RPD_LOG_WARN,
                "%s/journal: %zu bytes short of what was synced; --repair: "
                "keeping its %zu whole records (up to revision %llu), the mutations after them "
                "are dropped",
                d->dir, short_by, res.records, (unsigned long long)res.last_revision);
        cut = res.good;
    } else if (res.end == RPJ_TORN) {
        rpd_log(RPD_LOG_WARN,
                "%s/journal: torn tail at offset %zu (%s): a write did not "
                "complete; cutting %zu bytes",
                d->dir, res.bad_offset, res.reason, n - res.good);
        cut = res.good;
    }
    /* The file header was checked whole by open_journal: a cut is always
     * after it. */
    if (cut != SIZE_MAX && (ftruncate(fd, (off_t)cut) != 0 || fdatasync(fd) != 0)) {
        rpd_log(RPD_LOG_ERROR, "%s/journal: cannot cut it at %zu: %s", d->dir, cut,
                strerror(errno));
        close(fd);
        return false;
    }
    /* A repaired journal may now be shorter than its header's synced
     * length: the directory is written anew once the start is done. */
    if (repair && cut != SIZE_MAX && (stopped || res.end == RPJ_CORRUPT || short_by))
        d->resave = true;
    d->journal_bytes = cut != SIZE_MAX ? cut : res.good;
    close(fd);
    d->journal_fd = openat(d->dir_fd, "journal", O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (head.format == RPJ_FORMAT)
        d->header_fd = openat(d->dir_fd, "journal", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (d->journal_fd < 0) {
        rpd_log(RPD_LOG_ERROR, "%s/journal: cannot open for appending: %s", d->dir,
                strerror(errno));
        return false;
    }
    rpd_log(RPD_LOG_INFO,
            "%s: %llu mutations replayed from the journal (%llu bytes); store "
            "revision %llu",
            d->dir, (unsigned long long)d->journal_records, (unsigned long long)d->journal_bytes,
            (unsigned long long)rp_store_revision(core->store));
    return true;
}

/* Refuses (false, logged with the fix) a data directory, or a file in it,
 * that another user could change under the daemon: a symbolic link (its
 * target could be anything, anywhere), not owned by the daemon's
 * effective user, or writable by its group or others.  sb is from lstat
 * (fstatat without following); name is NULL for the directory itself. */
static bool private_enough(const char *dir, const char *name, const struct stat *sb)
{
    char path[1200];
    snprintf(path, sizeof path, "%s%s%s", dir, name ? "/" : "", name ? name : "");
    uid_t me = geteuid();
    if (S_ISLNK(sb->st_mode)) {
        if (name)
            rpd_log(RPD_LOG_ERROR,
                    "%s is a symbolic link: reposed follows no links in its "
                    "data directory; refusing to start (fix: replace it with the file itself, "
                    "or remove it: rm '%s')",
                    path, path);
        else
            rpd_log(RPD_LOG_ERROR,
                    "%s is a symbolic link: reposed takes the data directory "
                    "only by its own path; refusing to start (fix: --data-dir \"$(readlink -f "
                    "'%s')\")",
                    path, path);
        return false;
    }
    if (name ? !S_ISREG(sb->st_mode) : !S_ISDIR(sb->st_mode)) {
        rpd_log(RPD_LOG_ERROR, "%s is not a %s; refusing to start", path,
                name ? "regular file" : "directory");
        return false;
    }
    if (sb->st_uid != me) {
        rpd_log(RPD_LOG_ERROR,
                "%s is owned by uid %u, but reposed runs as uid %u: another "
                "user could change the store under it; refusing to start (fix: chown %u '%s', "
                "or run reposed as uid %u)",
                path, (unsigned)sb->st_uid, (unsigned)me, (unsigned)me, path, (unsigned)sb->st_uid);
        return false;
    }
    if (sb->st_mode & RPD_OTHERS_WRITE) {
        rpd_log(RPD_LOG_ERROR,
                "%s is writable by its group or others (mode %04o): they could "
                "change the store under reposed; refusing to start (fix: chmod go-w '%s')",
                path, (unsigned)(sb->st_mode & 07777), path);
        return false;
    }
    return true;
}

/* Creates DIR (mode 0700, one level) when missing, checks it, opens it
 * and takes its lock; false (logged) otherwise. */
static bool open_dir(rpd_durable *d)
{
    const char *dir = d->dir;
    struct stat sb;
    if (lstat(dir, &sb) != 0 && errno == ENOENT) {
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            rpd_log(RPD_LOG_ERROR, "%s: cannot create the data directory: %s", dir,
                    strerror(errno));
            return false;
        }
    }
    if (lstat(dir, &sb) != 0) {
        rpd_log(RPD_LOG_ERROR, "%s: cannot use the data directory: %s", dir, strerror(errno));
        return false;
    }
    if (!private_enough(dir, NULL, &sb))
        return false;
    /* O_NOFOLLOW: the path checked above cannot have become a link since. */
    d->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->dir_fd < 0 || fstat(d->dir_fd, &sb) != 0) {
        rpd_log(RPD_LOG_ERROR, "%s: cannot open the data directory: %s", dir, strerror(errno));
        return false;
    }
    if (!private_enough(dir, NULL, &sb))
        return false;
    /* The lock is the directory's own: a file in it can be deleted, and
     * then a second daemon would lock a new file of the same name. */
    if (flock(d->dir_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            rpd_log(RPD_LOG_ERROR,
                    "%s: another reposed is using this data directory (the "
                    "directory is locked); refusing to start",
                    dir);
        else
            rpd_log(RPD_LOG_ERROR, "%s: cannot lock the data directory: %s", dir, strerror(errno));
        return false;
    }
    static const char *const files[] = {"lock", "journal", "snapshot"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (fstatat(d->dir_fd, files[i], &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            rpd_log(RPD_LOG_ERROR, "%s/%s: %s", dir, files[i], strerror(errno));
            return false;
        }
        if (!private_enough(dir, files[i], &sb))
            return false;
    }
    d->lock_fd = openat(d->dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (d->lock_fd < 0) {
        rpd_log(RPD_LOG_ERROR, "%s/lock: cannot open: %s", dir, strerror(errno));
        return false;
    }
    /* The file is locked too, for a reposed of the previous version, which
     * locks only the file. */
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            rpd_log(RPD_LOG_ERROR,
                    "%s: another reposed is using this data directory (%s/lock "
                    "is locked); refusing to start",
                    dir, dir);
        else
            rpd_log(RPD_LOG_ERROR, "%s/lock: cannot lock: %s", dir, strerror(errno));
        return false;
    }
    /* The holder's pid, for people looking. */
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(d->lock_fd, 0) != 0 || pwrite(d->lock_fd, pid, (size_t)len, 0) != len)
        rpd_log(RPD_LOG_DEBUG, "%s/lock: could not write the pid", dir);
    return true;
}

rpd_durable *rpd_durable_open(const char *dir, rpd_fsync policy, bool repair, rpd_core *core,
                              rpd_apply_fn apply_record)
{
    rpd_durable *d = calloc(1, sizeof *d);
    if (!d || !(d->dir = strdup(dir))) {
        free(d);
        rpd_log(RPD_LOG_ERROR, "out of memory");
        return NULL;
    }
    d->dir_fd = d->lock_fd = d->journal_fd = d->sync_fd = d->retired_fd = d->header_fd = -1;
    rp_jw_init(&d->text);
    d->policy = policy;
    d->apply = apply_record;
    d->snapshot_after = RPD_SNAPSHOT_AFTER_DEFAULT;
    if (!open_dir(d))
        goto fail;
    core->durable = d;
    if (!load_journal(d, core, repair)) {
        core->durable = NULL;
        goto fail;
    }
    d->core = core; /* we are its store's commit hook */
    publish(d);
    rpd_subscribe(core, on_commit, NULL, d, true); /* before the watchers: it may refuse */
    if (d->resave) {
        /* After a repair (the journal's header may promise more than it
         * now holds) or in files of the previous format: a snapshot and a
         * new journal that say what the directory holds.  When that
         * fails, the files as they are still hold everything (records
         * appended now go after the whole ones), so the daemon starts; the
         * next start tries again, or asks for --repair again. */
        char why[400];
        if (rpd_durable_save(d, core->store, why, sizeof why) != 0)
            rpd_log(RPD_LOG_ERROR,
                    "%s: could not write the directory anew (%s); it is used "
                    "as it is, and the next start may need --repair again",
                    dir, why);
    }
    return d;
fail:
    rpd_durable_close(d);
    return NULL;
}

void rpd_durable_close(rpd_durable *d)
{
    if (!d)
        return;
    if (d->dir_unsynced && d->dir_fd >= 0)
        sync_dir(d);
    if (d->journal_fd >= 0 && d->ragged)
        cut_back(d); /* undone or partial records must not be synced in */
    if (d->journal_fd >= 0) {
        if (d->unsynced || d->sync_failed) {
            uint64_t ns;
            int err = timed_sync(d->journal_fd, &ns);
            if (err)
                rpd_log(RPD_LOG_ERROR, "%s/journal: final fsync failed: %s", d->dir, strerror(err));
        }
        close(d->journal_fd);
    }
    if (d->retired_fd >= 0)
        close(d->retired_fd);
    if (d->header_fd >= 0)
        close(d->header_fd);
    if (d->lock_fd >= 0)
        close(d->lock_fd); /* releases the lock */
    if (d->dir_fd >= 0)
        close(d->dir_fd);
    if (d->core)
        rpd_unsubscribe(d->core, on_commit, d);
    group_clear(d);
    rp_jw_free(&d->text);
    free(d->dir);
    free(d);
}
