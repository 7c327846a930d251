/* SPDX-License-Identifier: MIT */
/*
 * Builders for kinematic model definitions in tests (test_kin, test_motion,
 * test_alloc_fail): vectors, axes, link shapes, scene puts, joints, model
 * definitions and their put.  Include after cmocka (test_util.h).
 */
#ifndef REPOSE_TEST_JOINTS_H
#define REPOSE_TEST_JOINTS_H

#include <string.h>

#include "repose/scene.h"
#include "test_util.h"

static const rp_vec3 ZERO = {0, 0, 0};
static const rp_vec3 AX = {1, 0, 0};
static const rp_vec3 AY = {0, 1, 0};
static const rp_vec3 AZ = {0, 0, 1};

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

/* A kinematic definition: shapes with their links, joints; self collision on. */
static inline rp_model_def kdef(const rp_link *shapes, const char *const *shape_links, size_t n,
                                const rp_joint_def *joints, size_t nj)
{
    rp_model_def d;
    memset(&d, 0, sizeof d);
    d.links = shapes;
    d.n_links = n;
    d.shape_links = shape_links;
    d.joints = joints;
    d.n_joints = nj;
    d.self_collision = true;
    return d;
}

/* Puts a kinematic model and fails the test unless it is accepted. */
static inline rp_model *put_ok(rp_store *st, const char *name, const rp_model_def *d)
{
    rp_model *m = NULL;
    rp_model_error err;
    rp_status s = rp_store_model_put(st, name, d, &m, &err);
    if (s != RP_OK)
        fail_msg("put %s: %s, problem %d index %zu element %zu", name, rp_status_name(s),
                 (int)err.problem, err.index, err.element);
    assert_int_equal(err.problem, RP_MODEL_OK);
    assert_non_null(m);
    assert_true(rp_model_is_kinematic(m));
    return m;
}

#endif /* REPOSE_TEST_JOINTS_H */
