/* SPDX-License-Identifier: MIT */
/*
 * An open-addressing hash table from string keys to uint32 values, shared by
 * the library's id indexes (scene ids, a put's batch, model link ids) and
 * the codec's duplicate-key check.
 *
 * The table stores neither keys nor hashes: a slot is the 4-byte value,
 * which names an item of the caller's, and key_of(ctx, value) and
 * hash_of(ctx, value) give that item's key and its key's hash (the scene
 * caches the hash in its entries; small tables may recompute it).  Linear
 * probing over a power-of-two number of slots, kept at most 3/4 full;
 * deletion shifts later slots back, so lookups never meet tombstones.
 *
 * Library-internal (hidden in the shared library); nothing here is public.
 */
#ifndef REPOSE_UTIL_STRTAB_H
#define REPOSE_UTIL_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The value of a free slot; not a valid value. */
#define RP_STRTAB_EMPTY UINT32_MAX

/* The key of the item `value` names (valid as long as the item is), and
 * rp_strhash_ of that key. */
typedef const char *(*rp_strtab_key_fn)(const void *ctx, uint32_t value);
typedef uint32_t (*rp_strtab_hash_fn)(const void *ctx, uint32_t value);

typedef struct rp_strtab {
    uint32_t *slots; /* values, RP_STRTAB_EMPTY when free; NULL while nslots is 0 */
    size_t nslots;   /* 0, or a power of two >= 16 */
    size_t count;    /* values stored */
    rp_strtab_key_fn key_of;
    rp_strtab_hash_fn hash_of;
    const void *ctx;
} rp_strtab;

/* FNV-1a (32 bits) of a NUL-terminated string: ids are short, the spread is
 * good enough, and it allocates nothing.  Inline: every looked-up id is
 * hashed. */
static inline uint32_t rp_strhash_(const char *s)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* An empty table (no allocation) whose keys and hashes come from
 * key_of(ctx, value) and hash_of(ctx, value). */
void rp_strtab_init_(rp_strtab *t, rp_strtab_key_fn key_of, rp_strtab_hash_fn hash_of,
                     const void *ctx);

/* Frees the slots; the table is then empty again (same key_of and ctx).
 * NULL is a no-op. */
void rp_strtab_free_(rp_strtab *t);

/* Makes room for n values in all without passing 3/4 full: when needed, a
 * rebuild into the smallest power of two of slots (at least 16) that holds
 * them.  False when out of memory or n is too large; the table is then
 * unchanged.  n == 0 on an empty table allocates nothing. */
bool rp_strtab_reserve_(rp_strtab *t, size_t n);

/* Looks `key` (with hash == rp_strhash_(key)) up.  True when found, with
 * *slot holding it (its value is t->slots[*slot]); false when absent,
 * with *slot the free slot where it would go (meaningless while nslots is
 * 0: reserve first). */
bool rp_strtab_find_(const rp_strtab *t, const char *key, uint32_t hash, size_t *slot);

/* rp_strtab_find_ inline, with the caller's key_of and hash_of (those the
 * table was made with) given as constants, so that the compiler inlines
 * them: for hot lookups (the scene's id index), where an indirect call per
 * probe would show. */
static inline bool rp_strtab_probe_(const rp_strtab *t, const char *key, uint32_t hash,
                                    rp_strtab_key_fn key_of, rp_strtab_hash_fn hash_of,
                                    size_t *slot)
{
    *slot = 0;
    if (t->nslots == 0)
        return false;
    size_t mask = t->nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t v = t->slots[i];
        if (v == RP_STRTAB_EMPTY) {
            *slot = i;
            return false;
        }
        if (hash_of(t->ctx, v) == hash && strcmp(key_of(t->ctx, v), key) == 0) {
            *slot = i;
            return true;
        }
    }
}

/* Stores value at the free slot that rp_strtab_find_ gave, with no change
 * to the table in between; room must have been reserved. */
void rp_strtab_insert_at_(rp_strtab *t, size_t slot, uint32_t value);

/* Removes the value at `slot` (backward-shift deletion; the items of the
 * values still stored must still give their hashes). */
void rp_strtab_delete_at_(rp_strtab *t, size_t slot);

/* rp_strtab_delete_at_ inline with the caller's hash_of, as for
 * rp_strtab_probe_. */
static inline void rp_strtab_unlink_(rp_strtab *t, size_t i, rp_strtab_hash_fn hash_of)
{
    size_t mask = t->nslots - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint32_t v = t->slots[j];
        if (v == RP_STRTAB_EMPTY)
            break;
        size_t home = hash_of(t->ctx, v) & mask;
        /* Move v back into the hole at i unless its home lies cyclically
         * in (i, j]. */
        bool keep = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!keep) {
            t->slots[i] = v;
            i = j;
        }
    }
    t->slots[i] = RP_STRTAB_EMPTY;
    t->count--;
}

#endif /* REPOSE_UTIL_STRTAB_H */
