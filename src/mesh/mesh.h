/* SPDX-License-Identifier: MIT */
/*
 * Mesh files (STL, OBJ, Collada) read into triangle soups, with assimp
 * (Debian libassimp-dev).  URDF <mesh> collision geometry reaches
 * repose as the bytes of such files (proto/URDF.md, "Meshes"): the
 * daemon never reads a client's file system, so the parse is from memory,
 * with the file's name only as the hint for its format.
 *
 * What is read: every triangle of every mesh of the file's node tree, each
 * node's transform applied (a Collada file's <unit> scale too; its
 * up_axis is ignored, as ROS's tools ignore it).  Polygons are
 * triangulated; points and lines are dropped (no URDF reader takes them
 * as collision geometry).
 */
#ifndef REPOSE_MESH_MESH_H
#define REPOSE_MESH_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "repose/status.h"

/* A triangle soup in the file's own units (metres by URDF convention). */
typedef struct rp_mesh_data {
    double *vertices; /* 3 * n_vertices */
    size_t n_vertices;
    uint32_t *triangles; /* 3 * n_triangles indices into vertices */
    size_t n_triangles;
} rp_mesh_data;

/* The format a mesh file's name says (by its extension, any case): "stl",
 * "obj", "dae", or NULL for anything else. */
const char *rp_mesh_format(const char *uri);

/* Parses the file bytes[0..n), named `uri` (for its format), into *out.
 * The library runs in a child process (fork): a file that crashes it,
 * loops (60 s of CPU) or balloons (8 GiB) is refused, and the caller
 * (the daemon, or a planner using the library) stays up; the soup comes
 * back through a pipe, three vertices a triangle.  rp_mesh_parse_direct is
 * the same reader in the calling process, with shared vertices.
 * Refuses (RP_ERR_INVALID_ARG, with a sentence in why) an unknown format,
 * a file the library cannot read, one without triangles, and non-finite
 * coordinates; RP_ERR_LIMIT a file with more than max_triangles triangles
 * (0: no limit); RP_ERR_NOMEM when out of memory.  Thread-safe (the library's calls are
 * serialised: its C interface keeps the last error in a global). */
rp_status rp_mesh_parse(const void *bytes, size_t n, const char *uri, size_t max_triangles,
                        rp_mesh_data *out, char *why, size_t cap);

rp_status rp_mesh_parse_direct(const void *bytes, size_t n, const char *uri, size_t max_triangles,
                               rp_mesh_data *out, char *why, size_t cap);

void rp_mesh_data_free(rp_mesh_data *m);

#endif /* REPOSE_MESH_MESH_H */
