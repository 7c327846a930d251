/* SPDX-License-Identifier: MIT */
/*
 * Shape builders for the scene and model tests: spheres and capsules from
 * plain coordinates (struct literals, no validation).
 */
#ifndef REPOSE_TEST_SHAPES_H
#define REPOSE_TEST_SHAPES_H

#include "repose/geometry.h"

static inline rp_shape sphere(double x, double y, double z, double r)
{
    rp_sphere s = {{x, y, z}, r};
    return rp_shape_from_sphere(s);
}

static inline rp_shape capsule(double ax, double ay, double az, double bx, double by, double bz,
                               double r)
{
    rp_capsule c = {{ax, ay, az}, {bx, by, bz}, r};
    return rp_shape_from_capsule(c);
}

#endif /* REPOSE_TEST_SHAPES_H */
