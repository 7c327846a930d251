/* SPDX-License-Identifier: MIT */
/*
 * The box kernels with the box's rotation given: axes as rp_box_axes
 * computes them for b (the same operations follow, so the same bits as
 * rp_sphere_box_signed_distance and rp_capsule_box_signed_distance), for
 * callers that keep a stored box's axes (a scene's boxes: scene_int.h,
 * rp_solid).  Private to the library.
 */
#ifndef REPOSE_GEOMETRY_BOX_INT_H
#define REPOSE_GEOMETRY_BOX_INT_H

#include "repose/geometry.h"

double rp_sphere_box_ax_(const rp_sphere *a, const rp_box *b, const rp_vec3 axes[3]);
double rp_capsule_box_ax_(const rp_capsule *a, const rp_box *b, const rp_vec3 axes[3]);

#endif
