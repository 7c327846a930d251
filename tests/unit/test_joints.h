/*
 * Builders for kinematic model definitions in tests (test_kin, test_motion,
 * test_alloc_fail): vectors, link shapes, scene puts and joints.
 */
#ifndef REPOSE_TEST_JOINTS_H
#define REPOSE_TEST_JOINTS_H

#include <string.h>

#include "repose/scene.h"

static inline rp_vec3 V(double x, double y, double z)
{
    rp_vec3 v = {x, y, z};
    return v;
}

/* A shape of a kinematic model (its frame is ignored there). */
static inline rp_link S(const char *id, rp_shape shape)
{
    rp_link l = {id, 0, shape};
    return l;
}

static inline rp_shape_put P(const char *id, rp_shape shape)
{
    rp_shape_put p = {id, shape};
    return p;
}

/* A joint without limits or mimic. */
static inline rp_joint_def J(const char *name, rp_joint_type type, const char *parent,
                             const char *child, rp_vec3 xyz, rp_vec3 rpy, rp_vec3 axis)
{
    rp_joint_def j;
    memset(&j, 0, sizeof j);
    j.name = name;
    j.type = type;
    j.parent = parent;
    j.child = child;
    j.xyz = xyz;
    j.rpy = rpy;
    j.axis = axis;
    return j;
}

static inline rp_joint_def limited(rp_joint_def j, double lower, double upper)
{
    j.has_limits = true;
    j.lower = lower;
    j.upper = upper;
    return j;
}

#endif /* REPOSE_TEST_JOINTS_H */
