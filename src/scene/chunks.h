/* SPDX-License-Identifier: MIT */
/*
 * Copy-on-write chunked arrays: the storage that lets scene versions share
 * their entries and tree nodes (version.c).
 *
 * An array of fixed-size elements is cut into chunks of RP_CHUNK_LEN; a
 * table points at them.  Two versions of a scene have their own tables but
 * may point at the same chunks, each of which counts the tables that hold
 * it.  Reading goes through the table; writing element i first makes i's
 * chunk private to the table (rp_chunks_own), copying it when another
 * table holds it too.  So a version made from another copies its table
 * (n / RP_CHUNK_LEN pointers), and a change of one element copies one
 * chunk, not the array.
 *
 * Small arrays: a table whose elements all fit in one chunk holds a short
 * one (rp_chunk.len elements, a power of two), grown as the array grows
 * (rp_chunks_grow), so that a scene of one shape does not pay for 32 of
 * each.  Only a table's only chunk is ever short; indexing is the same.
 *
 * Copies need memory, and mutations must not fail half-way: a mutation
 * first stocks spare chunks (rp_chunks_stock) for as many copies as it can
 * need, and rp_chunks_own takes from them.  Unused spares stay for the
 * next mutation (and move to the next version, rp_chunks_pass_spares), so
 * a scene changed while readers hold it keeps one mutation's worth.
 *
 * Counts are plain integers: tables are made, changed and freed by the one
 * thread that mutates the store (see version.c); readers on other threads
 * only read chunks that no table will write while they are shared.
 */
#ifndef REPOSE_SCENE_CHUNKS_H
#define REPOSE_SCENE_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 32 elements a chunk: a change of one element copies 2.5 KiB of scene
 * entries or 1.4 KiB of tree nodes, and a new version's tables take
 * 8 / 32 bytes per element. */
#define RP_CHUNK_SHIFT 5
#define RP_CHUNK_LEN (1u << RP_CHUNK_SHIFT)
#define RP_CHUNK_MASK (RP_CHUNK_LEN - 1u)

typedef struct rp_chunk {
    uint32_t refs; /* tables holding it */
    uint32_t len;  /* elements it holds: RP_CHUNK_LEN, or fewer in a table's only chunk */
    _Alignas(16) unsigned char data[];
} rp_chunk;

typedef struct rp_chunks {
    rp_chunk **table;
    uint32_t n, table_cap; /* chunks in the table; its allocated length */
    rp_chunk **spare;      /* private chunks ready for copies */
    uint32_t n_spare, spare_cap;
    bool shared; /* some chunk may be held by another table too (set by
                              * rp_chunks_share; cleared when a stock finds none) */
} rp_chunks;

/* Frees what a chunk's elements own before the chunk goes (e.g. the ids of
 * scene entries), and takes references for a copy's elements. */
typedef void (*rp_chunk_fn)(void *ctx, void *data, size_t count);

/* Bytes of one full chunk of elements of `size` bytes. */
static inline size_t rp_chunk_bytes(size_t size)
{
    return sizeof(rp_chunk) + RP_CHUNK_LEN * size;
}

static inline void *rp_chunks_at(const rp_chunks *v, size_t size, size_t i)
{
    return v->table[i >> RP_CHUNK_SHIFT]->data + (i & RP_CHUNK_MASK) * size;
}

/* Elements the table has room for (only the last chunk may be short). */
static inline size_t rp_chunks_cap(const rp_chunks *v)
{
    return v->n ? ((size_t)(v->n - 1) << RP_CHUNK_SHIFT) + v->table[v->n - 1]->len : 0;
}

void rp_chunks_init(rp_chunks *v);

/* Room for `elems` elements: a short only chunk is replaced by a longer
 * copy (`copied` called on the copy's elements when another table holds
 * the old one too, as for rp_chunks_own), new (private) chunks go at the
 * end.  All or nothing; *bytes (the store's count) follows. */
bool rp_chunks_grow(rp_chunks *v, size_t size, size_t elems, rp_chunk_fn copied, void *ctx,
                    size_t *bytes);

/* Copies rp_chunks_own made without a stocked spare: a bound that fell
 * short (tests assert it stays 0; only the mutating thread writes it). */
extern size_t rp_chunks_unstocked_;

/* At least min(want, shared chunks) spares in stock.  All or nothing. */
bool rp_chunks_stock(rp_chunks *v, size_t size, size_t want, size_t *bytes);

/* Makes element i's chunk private (a copy from the stock when shared;
 * `copied`, when not NULL, is called on the copy's elements) and returns
 * the element for writing.  The stock must hold a spare when the chunk is
 * shared: callers stock first. */
void *rp_chunks_own(rp_chunks *v, size_t size, size_t i, rp_chunk_fn copied, void *ctx);

/* dst (empty) shares every chunk of src.  False when out of memory (dst
 * stays empty).  *bytes follows (the table). */
bool rp_chunks_share(rp_chunks *dst, const rp_chunks *src, size_t *bytes);

/* Frees spares beyond `keep` (a large mutation on a shared table may have
 * stocked many; one change's worth is enough to keep).  *bytes follows. */
void rp_chunks_trim(rp_chunks *v, size_t size, size_t keep, size_t *bytes);

/* Moves src's spares to dst (which takes them for its own copies). */
void rp_chunks_pass_spares(rp_chunks *dst, rp_chunks *src);

/* Drops the table: chunks no other table holds are freed, `drop` (when not
 * NULL) called on all their RP_CHUNK_LEN elements first; spares are freed.
 * *bytes follows. */
void rp_chunks_free(rp_chunks *v, size_t size, rp_chunk_fn drop, void *ctx, size_t *bytes);

#endif /* REPOSE_SCENE_CHUNKS_H */
