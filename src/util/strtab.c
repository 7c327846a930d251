/* SPDX-License-Identifier: MIT */
/* The string hash table; see strtab.h. */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

void rp_strtab_init_(rp_strtab *t, rp_strtab_key_fn key_of, rp_strtab_hash_fn hash_of,
                     const void *ctx)
{
    t->slots = NULL;
    t->nslots = 0;
    t->count = 0;
    t->key_of = key_of;
    t->hash_of = hash_of;
    t->ctx = ctx;
}

void rp_strtab_free_(rp_strtab *t)
{
    if (!t)
        return;
    free(t->slots);
    t->slots = NULL;
    t->nslots = 0;
    t->count = 0;
}

bool rp_strtab_reserve_(rp_strtab *t, size_t n)
{
    if (n * 4 <= t->nslots * 3)
        return true;
    if (n >= RP_STRTAB_EMPTY || n > SIZE_MAX / 8)
        return false;
    size_t want = n * 4 / 3 + 1, nslots = 16;
    while (nslots < want)
        nslots *= 2;
    uint32_t *slots = malloc(nslots * sizeof *slots);
    if (!slots)
        return false;
    memset(slots, 0xff, nslots * sizeof *slots); /* RP_STRTAB_EMPTY */
    size_t mask = nslots - 1;
    for (size_t k = 0; k < t->nslots; k++) {
        uint32_t v = t->slots[k];
        if (v == RP_STRTAB_EMPTY)
            continue;
        size_t i = t->hash_of(t->ctx, v) & mask;
        while (slots[i] != RP_STRTAB_EMPTY)
            i = (i + 1) & mask;
        slots[i] = v;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return true;
}

bool rp_strtab_find_(const rp_strtab *t, const char *key, uint32_t hash, size_t *slot)
{
    return rp_strtab_probe_(t, key, hash, t->key_of, t->hash_of, slot);
}

void rp_strtab_insert_at_(rp_strtab *t, size_t slot, uint32_t value)
{
    t->slots[slot] = value;
    t->count++;
}

void rp_strtab_delete_at_(rp_strtab *t, size_t slot)
{
    rp_strtab_unlink_(t, slot, t->hash_of);
}
