/* SPDX-License-Identifier: MIT */
/*
 * model.put's URDF with meshes (methods_mesh.c): the document parsed and
 * its meshes covered, on a worker ahead of the event loop or by the
 * handler itself.
 */
#ifndef REPOSE_SERVER_METHODS_MESH_H
#define REPOSE_SERVER_METHODS_MESH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/core/limits.h"
#include "urdf/urdf.h"

struct rpd_parsed;

typedef enum rpd_urdf_kind {
    RPD_URDF_OK,
    RPD_URDF_DOCUMENT,  /* the URDF/SRDF or a mesh: us and ue say why */
    RPD_URDF_BAD_PARAM, /* params.meshes or params.spherize: path, reason */
    RPD_URDF_WORK,      /* it needs `work` units, more than the budget */
    RPD_URDF_NOMEM
} rpd_urdf_kind;

typedef struct rpd_urdf_outcome {
    rpd_urdf_kind kind;
    rp_urdf *u; /* RPD_URDF_OK: the document, meshes covered */
    rp_urdf_status us;
    rp_urdf_error ue;
    char path[256], reason[256];
    uint64_t work; /* units spent (OK) or needed (WORK) */
    bool taken;
} rpd_urdf_outcome;

/* The rp_urdf_opts of a model.put: limits, and adjacency pairs unless an
 * SRDF is given or allow_adjacent (a JSON bool, or NULL) says otherwise. */
void rpd_urdf_opts(const rpd_limits *lim, const char *srdf, const cJSON *adjacent,
                   rp_urdf_opts *opts);

/* Parses urdf (+ srdf) and covers its meshes from params.meshes with
 * params.spherize, spending at most `budget` work units. */
void rpd_urdf_build(const cJSON *params, const char *urdf, const char *srdf,
                    const rp_urdf_opts *opts, size_t max_shapes, uint64_t budget,
                    rpd_urdf_outcome *o);
void rpd_urdf_outcome_free(rpd_urdf_outcome *o);

/* On a worker: builds every model.put with meshes of a kept line. */
void rpd_prebuild_models(struct rpd_parsed *p, const rpd_limits *lim);
/* The handler's look for its params' prebuilt outcome (taken: the caller
 * frees it); false when there is none. */
struct rpd_prebuilt_models;
bool rpd_prebuilt_model_take(struct rpd_prebuilt_models *pb, const cJSON *params,
                             rpd_urdf_outcome *o);
void rpd_prebuilt_models_free(struct rpd_prebuilt_models *pb);

#endif /* REPOSE_SERVER_METHODS_MESH_H */
