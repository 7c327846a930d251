/*
 * Private layout of robot models, shared by model.c (the store side) and
 * check.c (the checks).  Nothing outside src/scene includes this.
 */
#ifndef REPOSE_MODEL_INT_H
#define REPOSE_MODEL_INT_H

#include <stdint.h>

#include "scene_int.h"

struct rp_model {
    char *name;
    uint64_t revision;
    rp_link *links;       /* n_links, definition order; ids point into id_chars */
    size_t n_links;
    char *id_chars;       /* every link id, NUL-terminated, back to back */
    size_t *allowed;      /* 2 * n_allowed link indices, definition order */
    size_t n_allowed;
    double safety_margin;
    bool self_collision;
    size_t frame_count;   /* highest frame index + 1; 0 when every link is on the base */
    /* Self pairs a check skips, as an n_links x n_links bit matrix of
     * row_words 64-bit words per row: bit j of row i is set when links i and
     * j share a frame (the base counts as its own frame) or form an allowed
     * pair.  NULL when self_collision is off, since no check reads it then. */
    uint64_t *skip;
    size_t row_words;
    rp_store *store;      /* owner, for memory accounting */
    size_t bytes;         /* heap bytes of this model, as added to store->bytes */
};

/* True when a check must consider the self pair (i, j): self collision is
 * on, the links sit on different frames and the pair is not allowed. */
static inline bool rp_model_self_pair_(const rp_model *m, size_t i, size_t j)
{
    return m->skip && !((m->skip[i * m->row_words + j / 64] >> (j % 64)) & 1u);
}

#endif /* REPOSE_MODEL_INT_H */
