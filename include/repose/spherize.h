/* SPDX-License-Identifier: MIT */
/**
 * @file spherize.h
 * @brief Conservative sphere covers of triangle meshes (URDF collision
 * meshes), for the checks that work on spheres.
 *
 * rp_spherize covers every point of every triangle of a mesh with the union
 * of at most max_spheres spheres: a check on the spheres can never miss a
 * contact with the mesh.  The cover is proven, not sampled: each triangle is
 * split into pieces, each piece is given wholly to one sphere, and a ball
 * that holds the three corners of a piece holds the piece (a ball is
 * convex); radii are rounded up by a bound on the floating-point error of
 * computing them (src/mesh/spherize.c states it).  Within that guarantee it
 * keeps the overshoot (how far the spheres reach beyond the mesh) small.
 *
 * Pure: no global state, no threads, the same input gives bit-identical
 * output.  Callers transform the vertices into the frame they want first.
 * Only libm is needed.
 */
#ifndef REPOSE_SPHERIZE_H
#define REPOSE_SPHERIZE_H

#include <stddef.h>
#include <stdint.h>

#include "repose/export.h"
#include "repose/geometry.h"
#include "repose/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Coordinates of a mesh to spherize must lie in [-RP_SPHERIZE_MAX_COORD,
/// RP_SPHERIZE_MAX_COORD] (2^500, some 3e150 m): the error bound on the radii
/// needs squared distances that neither overflow nor lose everything to
/// underflow.
#define RP_SPHERIZE_MAX_COORD 0x1p500

/// Default sphere budget (rp_spherize_opts.max_spheres == 0).
#define RP_SPHERIZE_DEFAULT_SPHERES 16

/// A triangle mesh, borrowed: nothing is copied or kept.
typedef struct rp_trimesh {
    const double *vertices;    ///< 3 * n_vertices coordinates (x, y, z per vertex), metres.
    size_t n_vertices;         ///< Number of vertices.
    const uint32_t *triangles; ///< 3 * n_triangles vertex indices, each < n_vertices.
    size_t n_triangles;        ///< Number of triangles, >= 1.
} rp_trimesh;

/// What rp_spherize aims for.
typedef struct rp_spherize_opts {
    size_t max_spheres;   ///< Budget, >= 1 (0: RP_SPHERIZE_DEFAULT_SPHERES).
    double max_overshoot; ///< Metres, finite and >= 0.  A goal: the first cover of 1, 2,
                          ///< 4, ... spheres (and the budget) whose estimated overshoot
                          ///< is at most this (0: the best cover within the budget).
} rp_spherize_opts;

/// A sphere cover; free it with rp_spherize_result_free.
typedef struct rp_spherize_result {
    rp_sphere *spheres; ///< malloc'ed array of n_spheres spheres.
    size_t n_spheres;   ///< 1 <= n_spheres <= the budget.
    double overshoot;   ///< Estimated overshoot, metres (see rp_spherize).
} rp_spherize_result;

/// Covers the triangles of `mesh` with at most opts->max_spheres spheres:
/// every point of every triangle (degenerate and repeated triangles
/// included) lies inside at least one sphere, in exact arithmetic on the
/// returned doubles.  `opts` may be NULL for the defaults (budget 16, whole
/// budget used).
///
/// The overshoot is the largest distance from a point of the cover's
/// boundary (a point of a sphere's surface inside no other sphere) to the
/// nearest triangle.  It is estimated, not bounded: the surface of each
/// sphere is sampled at 192 points of a Fibonacci lattice, points inside
/// another sphere are dropped and the exact distance from each remaining
/// point to the mesh is taken; the estimate can fall short of the true
/// maximum by up to about the lattice spacing (some 0.26 radii).  For a
/// closed mesh (every edge on an even number of triangles) only points
/// outside the solid it bounds count: a point of the cover's boundary
/// inside the link reaches no further than the link.
///
/// With max_overshoot 0 the cover with the smallest estimated overshoot
/// among 1, 2, 4, ... spheres and the budget is returned (it may use fewer
/// spheres than the budget): raising the budget from a power of two never
/// raises the overshoot.  With max_overshoot > 0 the same candidates are
/// tried in order and the first whose overshoot meets the goal is
/// returned; when none does, the best of them.
///
/// Cost, on one core: some 110 ms for a mesh of 20,000 triangles and 16
/// spheres, 60 ms with 4, 190 ms with 32 (at most 6,100 sampled points are
/// clustered; every triangle is covered).
///
/// Returns RP_ERR_INVALID_ARG when mesh or out is NULL, when a non-empty
/// vertex or triangle array is NULL, when a vertex index is >= n_vertices,
/// when there are no triangles, or when max_overshoot is negative or not a
/// number; RP_ERR_NONFINITE for a non-finite coordinate (of any vertex, used
/// or not); RP_ERR_LIMIT for a coordinate beyond RP_SPHERIZE_MAX_COORD;
/// RP_ERR_NOMEM when memory runs out.  *out is written only on RP_OK.
RP_API rp_status rp_spherize(const rp_trimesh *mesh, const rp_spherize_opts *opts,
                             rp_spherize_result *out);

/// Frees the spheres of a result and empties it.  NULL and an emptied
/// result are fine.
RP_API void rp_spherize_result_free(rp_spherize_result *r);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_SPHERIZE_H */
