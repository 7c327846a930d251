/* SPDX-License-Identifier: MIT */
/**
 * @file tessellate.h
 * @brief The one tessellation of the shapes, as unit templates: what the
 * viewer draws and the Python glTF export writes (both take it from the
 * daemon's `tessellation` method, proto/PROTOCOL.md).
 *
 * A template is placed, not recomputed, per shape:
 *  - **round** (spheres and capsules): vertex k has a unit direction d_k in
 *    a local frame (u, v, w) and an end e_k (0 or 1).  A capsule of radius r
 *    around the segment a-b puts it at (e_k ? b : a) + r (d_x u + d_y v +
 *    d_z w), its normal d_x u + d_y v + d_z w, for any right-handed
 *    orthonormal frame with w along b - a (a sphere: a = b, any frame).
 *    Rows of `segments` vertices run from the pole below a (latitude -90
 *    degrees) to a's equator, then from b's equator to the pole above b:
 *    2 (rings + 1) rows, the two equators forming the cylinder.
 *  - **box**: 24 corners with coordinates +-1 and the unit normal of their
 *    face (four per face): a box puts corner c at center + R (c * h), h the
 *    half extents, R its rotation; the normal turns with R.
 *  - **square** (a half-space's boundary drawn as a square of side s): 8
 *    corners (+-1/2, +-1/2, 0), the first four with normal +z, the other
 *    four at the same places with -z; placed at a point p0 of the plane with
 *    a frame (u, v, n), n the outward normal: p0 + s (c_x u + c_y v).
 *
 * Triangles are counter-clockwise seen from the side their normals face.
 * Pure, libm only.
 */
#ifndef REPOSE_TESSELLATE_H
#define REPOSE_TESSELLATE_H

#include <stddef.h>
#include <stdint.h>

#include "repose/export.h"

#ifdef __cplusplus
extern "C" {
#endif /* REPOSE_TESSELLATE_H */

/// Defaults and bounds of the round template's resolution.
#define RP_TESS_SEGMENTS 24
#define RP_TESS_RINGS 8
#define RP_TESS_SEGMENTS_MIN 3
#define RP_TESS_SEGMENTS_MAX 128
#define RP_TESS_RINGS_MIN 1
#define RP_TESS_RINGS_MAX 64

/// Vertices of the round template: segments * 2 (rings + 1).
RP_API size_t rp_tess_round_vertices(int segments, int rings);
/// Triangles of the round template: segments * 2 (2 rings + 1).
RP_API size_t rp_tess_round_triangles(int segments, int rings);

/**
 * The round template at this resolution (segments and rings within the
 * bounds above; 0 and nothing written otherwise): dir[3 k .. 3 k + 2] the
 * unit direction of vertex k, end[k] its end, tri[3 t .. 3 t + 2] the
 * vertices of triangle t.  Returns the number of vertices.
 */
RP_API size_t rp_tess_round(int segments, int rings, double *dir, uint8_t *end, uint32_t *tri);

#define RP_TESS_BOX_VERTICES 24
#define RP_TESS_BOX_TRIANGLES 12
/// The box template: corners and normals, 3 numbers each, and triangles.
RP_API void rp_tess_box(double corner[RP_TESS_BOX_VERTICES * 3],
                        double normal[RP_TESS_BOX_VERTICES * 3],
                        uint32_t tri[RP_TESS_BOX_TRIANGLES * 3]);

#define RP_TESS_SQUARE_VERTICES 8
#define RP_TESS_SQUARE_TRIANGLES 4
/// The square template (a half-space's boundary, two-sided).
RP_API void rp_tess_square(double corner[RP_TESS_SQUARE_VERTICES * 3],
                           double normal[RP_TESS_SQUARE_VERTICES * 3],
                           uint32_t tri[RP_TESS_SQUARE_TRIANGLES * 3]);

#ifdef __cplusplus
}
#endif

#endif /* REPOSE_TESSELLATE_H */
