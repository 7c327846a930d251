/* SPDX-License-Identifier: MIT */
/*
 * Store images in memory (snapshot.h's format), for what does not keep
 * them in the data directory: the snapshots a replica publishes to its
 * store's snapshot stream, and the one a replica joining a trimmed stream
 * loads (docs/ARCHITECTURE.md, Replicas).
 */
#ifndef REPOSED_IMAGE_H
#define REPOSED_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "durable.h"
#include "snapshot.h"

/* Every model of store st as the model.put params that make it (the
 * journal's record of a model.put): *models and *jsons malloc'ed, n
 * each; 0 or ENOMEM (everything freed).  Free with rpd_image_models_free. */
int rpd_image_models(const rp_store *st, rps_model **models, char ***jsons, size_t *n);
void rpd_image_models_free(rps_model *models, char **jsons, size_t n);

/* The image of store st (a store snapshot, rp_store_snapshot) at
 * `revision`, malloc'ed in *buf, *n bytes; 0 or an errno. */
int rpd_image_build(const rp_store *st, uint64_t revision, uint8_t **buf, size_t *n);

/* Loads an image into core->store, which must hold no scene and no
 * model; models are rebuilt through apply (their model.put), every limit
 * lifted.  False with why (the store may then hold part of it). */
bool rpd_image_load(rpd_core *core, const uint8_t *buf, size_t n, rpd_apply_fn apply,
                    uint64_t *revision, char *why, size_t cap);

#endif
