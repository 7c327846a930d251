/* SPDX-License-Identifier: MIT */
/*
 * Copy-on-write chunked arrays (chunks.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunks.h"

void rp_chunks_init(rp_chunks *v)
{
    memset(v, 0, sizeof *v);
}

/* Bytes of a chunk of `len` elements of `size` bytes. */
static size_t chunk_bytes(size_t size, size_t len)
{
    return sizeof(rp_chunk) + len * size;
}

static rp_chunk *chunk_new(size_t size, size_t len, size_t *bytes)
{
    /* Zeroed: elements never written read as zero (scene entries rely on
     * a NULL id in slots no entry holds, see scene.c). */
    rp_chunk *c = calloc(1, chunk_bytes(size, len));
    if (c) {
        c->refs = 1;
        c->len = (uint32_t)len;
        *bytes += chunk_bytes(size, len);
    }
    return c;
}

static void chunk_drop(rp_chunk *c, size_t size, rp_chunk_fn drop, void *ctx, size_t *bytes)
{
    if (--c->refs > 0)
        return;
    if (drop)
        drop(ctx, c->data, c->len);
    *bytes -= chunk_bytes(size, c->len);
    free(c);
}

/* The length of a table's only chunk for `elems` elements: the next power
 * of two, so that an array grown one element at a time is copied
 * log2(RP_CHUNK_LEN) times before its chunk is full. */
static size_t short_len(size_t elems)
{
    size_t len = 1;
    while (len < elems)
        len *= 2;
    return len;
}

/* Table room for n chunks. */
static bool table_room(rp_chunk ***table, uint32_t *cap, size_t n, size_t *bytes)
{
    if (n <= *cap)
        return true;
    if (n > UINT32_MAX / 2)
        return false;
    /* A first table is exact: most scenes are small and keep one or two
     * chunks for good. */
    size_t grown = *cap ? *cap + *cap / 2 : n;
    if (grown < n)
        grown = n;
    rp_chunk **t = realloc(*table, grown * sizeof *t);
    if (!t)
        return false;
    *bytes += (grown - *cap) * sizeof *t;
    *table = t;
    *cap = (uint32_t)grown;
    return true;
}

bool rp_chunks_grow(rp_chunks *v, size_t size, size_t elems, rp_chunk_fn copied, void *ctx,
                    size_t *bytes)
{
    if (elems <= rp_chunks_cap(v))
        return true;
    size_t need = (elems + RP_CHUNK_LEN - 1) >> RP_CHUNK_SHIFT;
    /* A short only chunk gets a longer replacement: full when more chunks
     * follow it, else just long enough.  Made first, installed last, so
     * that a failure on the way changes nothing. */
    rp_chunk *longer = NULL;
    if (v->n == 1 && v->table[0]->len < RP_CHUNK_LEN) {
        longer = chunk_new(size, need > 1 ? RP_CHUNK_LEN : short_len(elems), bytes);
        if (!longer)
            return false;
    }
    size_t first = v->n;
    if (need > first) {
        if (!table_room(&v->table, &v->table_cap, need, bytes)) {
            if (longer)
                chunk_drop(longer, size, NULL, NULL, bytes);
            return false;
        }
        for (size_t k = first; k < need; k++) {
            v->table[k] = chunk_new(size, need > 1 ? RP_CHUNK_LEN : short_len(elems), bytes);
            if (!v->table[k]) {
                while (k-- > first)
                    chunk_drop(v->table[k], size, NULL, NULL, bytes);
                if (longer)
                    chunk_drop(longer, size, NULL, NULL, bytes);
                return false;
            }
        }
    }
    if (longer) {
        rp_chunk *old = v->table[0];
        memcpy(longer->data, old->data, (size_t)old->len * size);
        if (old->refs > 1) {
            /* Another table keeps the old one: the copy's elements take
             * their own references. */
            if (copied)
                copied(ctx, longer->data, old->len);
            old->refs--;
        } else {
            /* The elements moved: freed without dropping them. */
            *bytes -= chunk_bytes(size, old->len);
            free(old);
        }
        v->table[0] = longer;
    }
    v->n = (uint32_t)need;
    return true;
}

bool rp_chunks_stock(rp_chunks *v, size_t size, size_t want, size_t *bytes)
{
    if (!v->shared)
        return true; /* every chunk is this table's own */
    /* Spares must be as long as the chunks they may replace: a short only
     * chunk may have been lengthened since they were made. */
    uint32_t len = v->n == 1 ? v->table[0]->len : RP_CHUNK_LEN;
    bool enough = v->n_spare >= want;
    for (uint32_t k = 0; enough && k < v->n_spare; k++)
        enough = v->spare[k]->len >= len;
    if (enough)
        return true; /* (no need to look at every chunk: a cache miss each) */
    size_t shared = 0;
    for (uint32_t k = 0; k < v->n; k++)
        shared += v->table[k]->refs > 1;
    if (shared == 0)
        v->shared = false; /* the other versions are gone */
    if (want > shared)
        want = shared;
    for (uint32_t k = 0; k < v->n_spare;) {
        if (v->spare[k]->len < len) {
            chunk_drop(v->spare[k], size, NULL, NULL, bytes);
            v->spare[k] = v->spare[--v->n_spare];
        } else {
            k++;
        }
    }
    if (v->n_spare >= want)
        return true;
    if (!table_room(&v->spare, &v->spare_cap, want, bytes))
        return false;
    uint32_t had = v->n_spare;
    while (v->n_spare < want) {
        rp_chunk *c = chunk_new(size, len, bytes);
        if (!c) {
            while (v->n_spare > had)
                chunk_drop(v->spare[--v->n_spare], size, NULL, NULL, bytes);
            return false;
        }
        v->spare[v->n_spare++] = c;
    }
    return true;
}

size_t rp_chunks_unstocked_;

void *rp_chunks_own(rp_chunks *v, size_t size, size_t i, rp_chunk_fn copied, void *ctx)
{
    size_t k = i >> RP_CHUNK_SHIFT;
    rp_chunk *c = v->table[k];
    if (c->refs > 1) {
        /* Stocked: see chunks.h.  Running out would be a bug in a bound;
         * rather than write through a shared chunk, try to allocate, and
         * stop if even that fails. */
        bool stocked = v->n_spare && v->spare[v->n_spare - 1]->len >= c->len;
        rp_chunk *mine = stocked ? v->spare[--v->n_spare] : calloc(1, chunk_bytes(size, c->len));
        rp_chunks_unstocked_ += !stocked;
        if (!mine) {
            fprintf(stderr, "repose: copy-on-write stock exhausted and out of memory\n");
            abort();
        }
        if (!mine->len)
            mine->len = c->len; /* the fallback's, which the store's count misses */
        /* A spare may be longer than c (made for a full chunk): its tail
         * stays zero, as in any new chunk. */
        memcpy(mine->data, c->data, (size_t)c->len * size);
        mine->refs = 1;
        if (copied)
            copied(ctx, mine->data, c->len);
        c->refs--; /* still held elsewhere: never the last */
        v->table[k] = c = mine;
    }
    return c->data + (i & RP_CHUNK_MASK) * size;
}

bool rp_chunks_share(rp_chunks *dst, const rp_chunks *src, size_t *bytes)
{
    rp_chunks_init(dst);
    if (!table_room(&dst->table, &dst->table_cap, src->n ? src->n : 1, bytes))
        return false;
    for (uint32_t k = 0; k < src->n; k++) {
        dst->table[k] = src->table[k];
        dst->table[k]->refs++;
    }
    dst->n = src->n;
    dst->shared = src->n > 0;
    return true;
}

void rp_chunks_trim(rp_chunks *v, size_t size, size_t keep, size_t *bytes)
{
    while (v->n_spare > keep)
        chunk_drop(v->spare[--v->n_spare], size, NULL, NULL, bytes);
}

void rp_chunks_pass_spares(rp_chunks *dst, rp_chunks *src)
{
    /* Swap the stocks: dst is new (no spares), src keeps an empty list. */
    rp_chunk **s = dst->spare;
    uint32_t n = dst->n_spare, cap = dst->spare_cap;
    dst->spare = src->spare;
    dst->n_spare = src->n_spare;
    dst->spare_cap = src->spare_cap;
    src->spare = s;
    src->n_spare = n;
    src->spare_cap = cap;
}

void rp_chunks_free(rp_chunks *v, size_t size, rp_chunk_fn drop, void *ctx, size_t *bytes)
{
    for (uint32_t k = 0; k < v->n; k++)
        chunk_drop(v->table[k], size, drop, ctx, bytes);
    while (v->n_spare)
        chunk_drop(v->spare[--v->n_spare], size, NULL, NULL, bytes);
    *bytes -= (size_t)v->table_cap * sizeof *v->table + (size_t)v->spare_cap * sizeof *v->spare;
    free(v->table);
    free(v->spare);
    rp_chunks_init(v);
}
