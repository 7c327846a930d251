/* SPDX-License-Identifier: MIT */
/*
 * Snapshot images (proto/PROTOCOL.md, Durability): the whole store in one file, written from a
 * consistent version (a store snapshot, rp_store_snapshot) and read back at
 * start before the journal's later records are replayed.  No file policy
 * here (temp file, fsync, rename: the durability layer's job): these
 * functions write an image to a file descriptor and read one from memory.
 *
 * Layout (little-endian):
 *
 *   file header, 80 bytes (format 5, and formats 4, 3 and 2 before it):
 *        0   8  magic "REPOSES\n"
 *        8   4  format version (RPS_FORMAT)
 *       12   4  reserved, zero
 *       16   8  store revision
 *       24   8  scene sections that follow
 *       32   8  model sections that follow
 *       40   8  snapshot id: random, new for every snapshot
 *       48   8  journal id: the journal written to continue this snapshot
 *                (journal.h); the one that must be found next to it
 *       56   8  previous journal id: the journal in use when it was
 *                written, which a crash between the two renames (or a
 *                journal that could not start again) leaves in place
 *       64  12  reserved, zero
 *       76   4  CRC-32C of bytes 0..76
 *     (format 1: 48 bytes, no ids, reserved at 40, CRC-32C of 0..44 at
 *     44; still read, with ids 0);
 *   sections, models first, then scenes (before format 4: scenes first),
 *   each:
 *        0   4  kind (1 scene, 2 model)
 *        4   4  reserved, zero
 *        8   8  payload length n
 *       16   4  CRC-32C of bytes 0..16
 *       20   n  payload
 *     20+n   4  CRC-32C of the payload
 *   scene payload: name (u32 length, bytes), revision (u64), shape count
 *     (u64), then per shape its id (u32 length, bytes), kind (u8: 0 sphere,
 *     1 capsule, 2 box, 3 half-space) and doubles as IEEE bit patterns
 *     (sphere: centre, radius; capsule: a, b, radius; box: centre, half
 *     extents, rotation w, x, y, z; half-space: normal, offset), in the
 *     scene's storage order, the shapes of its own only; then (format 4)
 *     its objects: a count (u64), and per object its name (u32 length,
 *     bytes), its kind (u8: 0 a group of shapes, 1 a robot instance, 2 a
 *     group attached to a robot's link, 3 (format 5) a point cloud),
 *     its pose (a robot's base; 12 doubles: the rotation row by row, then the
 *     translation), then for a group a shape count (u64) and its shapes in
 *     its own frame (id and shape as above) and, attached, the robot's and
 *     the link's names (u32 length, bytes) and its pose in the link's frame
 *     (12 doubles), for a robot its model's name
 *     (u32 length, bytes), a joint count (u32) and the joint values
 *     (doubles), for a cloud its radius (double), its sphere count n
 *     (u64) and the centres (3n IEEE float32 bit patterns, u32 each) in
 *     the cloud's order; objects and shapes sorted by name and id;
 *   model payload: name (u32 length, bytes), revision (u64), then the
 *     model.put params that made it, as JSON (u32 length, bytes): models
 *     are rebuilt by the same code path that built them;
 *   trailer, 16 bytes: magic "REPOSEZ\n", u32 zero, u32 CRC-32C of the
 *     magic and zero, so a file cut at a section boundary is caught too.
 *
 * Format 5 added the cloud kind of object; format 4 is format 5 without
 * it, and is still read.
 * Format 4 added the objects after each scene's shapes and put the models
 * before the scenes (robot instances in scenes will name models); formats
 * 2 and 3 hold no objects and are still read.
 * Format 3 added the box and half-space kinds and changed nothing else:
 * format 2 is format 3 with kinds 0 and 1 only, and is still read as it is
 * (no upgrade is needed; the next snapshot is written as format 3).  The
 * number changed so that a reposed that predates the new kinds refuses an
 * image holding them as "another format version" instead of calling it
 * corrupt (a bad shape) and pointing at a byte that is not damaged.
 */
#ifndef REPOSED_SNAPSHOT_H
#define REPOSED_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "repose/scene.h"

#define RPS_FORMAT 5u
#define RPS_FORMAT_V4 4u
#define RPS_FORMAT_V3 3u
#define RPS_FORMAT_V2 2u
#define RPS_FORMAT_V1 1u

/* The identities a snapshot carries (see above). */
typedef struct rps_ids {
    uint64_t snapshot_id;
    uint64_t journal_id;
    uint64_t prev_journal_id;
} rps_ids;

/* A model as the image keeps it. */
typedef struct rps_model {
    const char *name;
    uint64_t revision;
    const char *json; /* model.put params */
    size_t json_len;
} rps_model;

/* Writes the image of st's scenes and the models given, sorted by name
 * (their definitions are the caller's: the store does not keep the params)
 * to fd, at the store revision `revision`, with the ids given.  Streams
 * through a buffer; 0 or an errno (EIO for a short write).  *bytes (may be
 * NULL) receives the size. */
int rps_write(int fd, const rp_store *st, uint64_t revision, const rps_ids *ids,
              const rps_model *models, size_t n_models, uint64_t *bytes);

/* Called for each model of an image, in order; false stops the load (why
 * in the result's reason). */
typedef bool (*rps_model_fn)(void *ctx, const rps_model *m, const char **why);

typedef struct rps_load_result {
    bool ok;
    uint64_t revision; /* the image's store revision */
    uint32_t format;   /* the image's format version (when it got that far) */
    rps_ids ids;       /* formats 2 and 3 (format 1: zeros) */
    size_t scenes, models, shapes;
    size_t bad_offset;  /* !ok: where the image stops making sense */
    const char *reason; /* !ok: a short phrase for the log */
    bool bad_format;    /* !ok: not an image, or another format version */
} rps_load_result;

/* Loads an image into st, which must hold no scene: every scene with its
 * shapes and revision, each model through fn (with the store revision one
 * below the model's, so that a model.put takes it), then the store
 * revision.  Limits are the caller's (lift them for a load).  On failure
 * the store may hold part of the image: the caller discards it. */
bool rps_load(const uint8_t *buf, size_t n, rp_store *st, rps_model_fn fn, void *ctx,
              rps_load_result *out);

#endif /* REPOSED_SNAPSHOT_H */
