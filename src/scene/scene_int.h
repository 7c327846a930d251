/*
 * Private layout of scenes and the store, shared by store.c, scene.c and
 * query.c.  Nothing outside src/scene includes this.
 */
#ifndef REPOSE_SCENE_INT_H
#define REPOSE_SCENE_INT_H

#include <stdint.h>

#include "repose/scene.h"

/* One stored shape.  The id is a separate heap string owned by the entry;
 * hash caches its hash for the id index. */
typedef struct scene_entry {
    rp_shape shape;
    char *id;
    uint32_t hash;
} scene_entry;

/* Empty slot marker in the id index. */
#define SLOT_EMPTY UINT32_MAX

struct rp_scene {
    char *name;
    uint64_t revision;
    scene_entry *entries; /* dense, count used, cap allocated */
    size_t count, cap;
    /* Id index: open addressing with linear probing over entry indices;
     * nslots is a power of two kept at least twice count. */
    uint32_t *slots;
    size_t nslots;
    rp_store *store; /* owner, for limits and memory accounting */
};

struct rp_store {
    rp_scene **scenes; /* sorted by name */
    size_t count, cap;
    rp_store_limits limits;
    uint64_t shapes;   /* across all scenes */
    size_t bytes;      /* heap bytes held, as accounted by scene.c/store.c */
};

uint32_t rp_scene_hash(const char *s);

/* Creates an empty scene (revision 0, not yet in the store's list). */
rp_scene *rp_scene_new_(rp_store *st, const char *name);
void rp_scene_free_(rp_scene *sc);

#endif /* REPOSE_SCENE_INT_H */
