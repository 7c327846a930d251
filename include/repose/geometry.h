/* SPDX-License-Identifier: MIT */
/*
 * repose — collision geometry core: spheres, capsules, oriented boxes and
 * half-spaces, exact signed distance, witness points, rigid transforms.
 *
 * Units are metres throughout.  A signed distance is positive for a gap of
 * that size, zero when the surfaces touch and negative for a penetration of
 * that depth.
 *
 * Accuracy contract: for any valid pair, |computed - exact| <= 16*eps*S, where
 * eps = 2^-52 and S is the largest magnitude among the pair's coordinates and
 * radii.  d(a, b) == d(b, a) bit for bit.  Results are never NaN for valid
 * input.  The kernels use no tolerances.
 *
 * Range: any finite coordinates and radii are valid, up to DBL_MAX (about
 * 1.8e308 m).  The kernels rescale by powers of two internally, so results
 * meet the contract wherever the exact value is representable, even when
 * intermediate quantities (differences of coordinates, the sum of the radii)
 * are not.  A signed distance whose exact value lies beyond the double range
 * (a gap or penetration deeper than DBL_MAX, e.g. two spheres of radius
 * 1.7e308 with nearby centres) is returned as +DBL_MAX or -DBL_MAX: always
 * finite, with the right sign, and compared as that value by
 * rp_shapes_violate_margin.  Witness point coordinates saturate the same way.
 *
 * Everything here is pure: no allocation, no I/O, no global state, so every
 * function is safe to call from any number of threads at once.  The kernels
 * assume valid input (see rp_shape_validate); validation happens at the
 * boundary (constructors, validate, the JSON codec), never inside a kernel.
 *
 * Only libm is needed.
 */
#ifndef REPOSE_GEOMETRY_H
#define REPOSE_GEOMETRY_H

#include <stdbool.h>

#include "repose/export.h"
#include "repose/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A point or direction in metres.
typedef struct rp_vec3 {
    double x; ///< x coordinate, metres.
    double y; ///< y coordinate, metres.
    double z; ///< z coordinate, metres.
} rp_vec3;

/// A ball.
typedef struct rp_sphere {
    rp_vec3 center; ///< Centre, metres.
    double radius;  ///< Radius, metres, finite and >= 0 (0 is a point).
} rp_sphere;

/// A sphere swept along the segment a->b: a cylinder with hemispherical caps.
/// A capsule with a == b is a sphere.
typedef struct rp_capsule {
    rp_vec3 a;     ///< First end of the axis segment, metres.
    rp_vec3 b;     ///< Second end of the axis segment, metres.
    double radius; ///< Radius, metres, finite and >= 0.
} rp_capsule;

/// A rotation as a Hamilton quaternion (w, x, y, z).
typedef struct rp_quat {
    double w, x, y, z;
} rp_quat;

/// An oriented box: the points center + sum_i u_i * axis_i with |u_i| <=
/// half_extents_i, where axis_i are the columns of the rotation matrix
/// rp_box_axes computes from `rotation`.  A zero extent is a rectangle, all
/// three zero a point.
typedef struct rp_box {
    rp_vec3 center;       ///< Centre, metres.
    rp_vec3 half_extents; ///< Half the side lengths, metres, finite and >= 0.
    rp_quat rotation;     ///< Unit quaternion (rp_box_new normalises it).
} rp_box;

/// The solid half-space {p : normal . p <= offset}: the floor, a wall.
typedef struct rp_halfspace {
    rp_vec3 normal; ///< Unit outward normal (rp_halfspace_new normalises it).
    double offset;  ///< Metres along the normal.
} rp_halfspace;

/// Which member of rp_shape is live.
typedef enum rp_shape_kind {
    RP_SHAPE_SPHERE,   ///< rp_shape.sphere is live.
    RP_SHAPE_CAPSULE,  ///< rp_shape.capsule is live.
    RP_SHAPE_BOX,      ///< rp_shape.box is live.
    RP_SHAPE_HALFSPACE ///< rp_shape.halfspace is live (unbounded: scenes keep it out of their tree).
} rp_shape_kind;

/// A tagged shape, passed and stored by value (88 bytes on LP64).
typedef struct rp_shape {
    rp_shape_kind kind; ///< Selects the union member.
    union {
        rp_sphere sphere;       ///< Valid when kind == RP_SHAPE_SPHERE.
        rp_capsule capsule;     ///< Valid when kind == RP_SHAPE_CAPSULE.
        rp_box box;             ///< Valid when kind == RP_SHAPE_BOX.
        rp_halfspace halfspace; ///< Valid when kind == RP_SHAPE_HALFSPACE.
    };
} rp_shape;

/// Closest-point information between two shapes.
typedef struct rp_contact {
    double distance; ///< Signed distance, metres (as rp_shape_signed_distance).
    rp_vec3 point_a; ///< Witness on a's surface: closest core point of a + r_a*normal.
    rp_vec3 point_b; ///< Witness on b's surface: closest core point of b - r_b*normal.
    rp_vec3 normal;  ///< Unit vector from a towards b; point_b - point_a = distance*normal
                     ///< (within the accuracy contract, where nothing saturates).
} rp_contact;

/// A rigid transform: world = r*local + t.
typedef struct rp_transform {
    double r[3][3]; ///< Rotation matrix, row-major: r[row][column].
    rp_vec3 t;      ///< Translation, metres.
} rp_transform;

/// A shape attached to a robot frame.
typedef struct rp_link_shape {
    rp_shape shape; ///< Shape in the frame's local coordinates, metres.
    int frame;      ///< Joint frame index >= 0, or -1 for the robot base.
} rp_link_shape;

/* ---- construction and validation ------------------------------------- */

/// Builds a sphere.  Returns RP_ERR_NONFINITE for a non-finite centre
/// coordinate, RP_ERR_RADIUS_NONFINITE / RP_ERR_RADIUS_NEGATIVE for a bad
/// radius, RP_ERR_INVALID_ARG when out is NULL; *out is written only on RP_OK.
RP_API rp_status rp_sphere_new(rp_vec3 center, double radius, rp_sphere *out);

/// Builds a capsule; a == b is allowed (it is a sphere).  Same status codes
/// as rp_sphere_new; *out is written only on RP_OK.
RP_API rp_status rp_capsule_new(rp_vec3 a, rp_vec3 b, double radius, rp_capsule *out);

/// Wraps a sphere in a tagged shape.  Does not validate.
RP_API rp_shape rp_shape_from_sphere(rp_sphere s);

/// Wraps a capsule in a tagged shape.  Does not validate.
RP_API rp_shape rp_shape_from_capsule(rp_capsule c);

/// Wraps a box in a tagged shape.  Does not validate.
RP_API rp_shape rp_shape_from_box(rp_box b);

/// Wraps a half-space in a tagged shape.  Does not validate.
RP_API rp_shape rp_shape_from_halfspace(rp_halfspace h);

/// Checks a shape built as a literal or decoded from outside: known kind,
/// finite coordinates, finite radius >= 0; for a box finite half extents
/// >= 0 (RP_ERR_EXTENT_NEGATIVE) and a unit quaternion, for a half-space a
/// unit normal (RP_ERR_NORMAL) and a finite offset.  "Unit" means as
/// rp_box_new and rp_halfspace_new leave them: a squared length within
/// 16 eps of 1 (build boxes and half-spaces with those constructors; the
/// kernels' accuracy assumes it).  Checks the kind first, then the fields
/// in declaration order; returns the first failure.  NULL gives
/// RP_ERR_INVALID_ARG.
RP_API rp_status rp_shape_validate(const rp_shape *s);

/* ---- signed distance -------------------------------------------------- */

/// Signed distance between two spheres, metres.
RP_API double rp_sphere_sphere_signed_distance(const rp_sphere *a, const rp_sphere *b);

/// Signed distance between a capsule and a sphere, metres.
RP_API double rp_capsule_sphere_signed_distance(const rp_capsule *a, const rp_sphere *b);

/// Signed distance between two capsules: the distance between the axis
/// segments minus both radii, metres.  Exact (see the contract above) for
/// parallel, nearly parallel, collinear, crossing and degenerate axes.
RP_API double rp_capsule_capsule_signed_distance(const rp_capsule *a, const rp_capsule *b);

/// Signed distance between any two shapes; dispatches on the kinds.  Like
/// every signed distance here: finite, saturated to ±DBL_MAX when the exact
/// value is beyond the double range (see "Range" above).  Two half-spaces
/// overlap without end unless their normals are exactly opposite: -DBL_MAX;
/// with opposite normals the result is -(offset_a + offset_b), the gap
/// between the planes or minus the thickness of their common slab.
RP_API double rp_shape_signed_distance(const rp_shape *a, const rp_shape *b);

/// True when rp_shape_signed_distance(a, b) < margin, strictly: a pair at
/// exactly the margin does not violate it.  No hidden epsilon.
RP_API bool rp_shapes_violate_margin(const rp_shape *a, const rp_shape *b, double margin);

/// Distance, witness points and normal.  When the closest core points
/// coincide (crossing axes, coincident centres) the normal is still unit
/// length and deterministic: the normalised cross product of the capsule
/// axes when they are not parallel, otherwise a fixed perpendicular to the
/// axis (or +z when there is no axis).  Swapping a and b swaps the points
/// and negates the normal, bit for bit.
RP_API rp_contact rp_shape_contact(const rp_shape *a, const rp_shape *b);

/* ---- boxes and half-spaces -------------------------------------------- */

/// Builds a box from its centre, half extents and a rotation quaternion
/// (w, x, y, z; normalised here, unless its squared length is already
/// within 4 eps of 1: then kept bit for bit, so a box read back from its
/// printed form is the same box).  RP_ERR_NONFINITE for a non-finite centre
/// or extent, RP_ERR_RADIUS_NEGATIVE for a negative extent,
/// RP_ERR_QUATERNION for a zero or non-finite quaternion, RP_ERR_INVALID_ARG
/// when out is NULL; *out is written only on RP_OK.
RP_API rp_status rp_box_new(rp_vec3 center, rp_vec3 half_extents, double w, double x, double y,
                            double z, rp_box *out);

/// Builds the half-space {p : normal . p <= offset}, stored with a unit
/// normal (the offset divided by the normal's length: the same solid; a
/// normal whose squared length is within 4 eps of 1 is kept as it is).
/// RP_ERR_NONFINITE for a non-finite normal or offset, or when the offset
/// divided by a tiny normal's length leaves the double range (the plane
/// lies beyond it); RP_ERR_NORMAL for a zero normal; RP_ERR_INVALID_ARG
/// for a NULL out.
RP_API rp_status rp_halfspace_new(rp_vec3 normal, double offset, rp_halfspace *out);

/// The box's axes: the columns of its rotation matrix, as every box kernel
/// uses them (the box the kernels measure is exactly this one).
RP_API void rp_box_axes(const rp_box *b, rp_vec3 axes[3]);

/// Signed distance between a sphere or capsule and a box: the gap, or minus
/// the penetration depth (the shortest translation that separates them).
/// Same accuracy contract as the other kernels, with S also covering the
/// box's centre and half extents.
RP_API double rp_sphere_box_signed_distance(const rp_sphere *a, const rp_box *b);
RP_API double rp_capsule_box_signed_distance(const rp_capsule *a, const rp_box *b);

/// Signed distance between a sphere or capsule and a half-space: the height
/// of its lowest point above the boundary plane (negative below).
RP_API double rp_sphere_halfspace_signed_distance(const rp_sphere *a, const rp_halfspace *b);
RP_API double rp_capsule_halfspace_signed_distance(const rp_capsule *a, const rp_halfspace *b);

/// Signed distance between a box and a half-space: the height of the box's
/// lowest vertex above the boundary plane (negative below).
RP_API double rp_box_halfspace_signed_distance(const rp_box *a, const rp_halfspace *b);

/// Signed distance between two boxes: the gap (the closest of every vertex
/// against the other box and every pair of edges), or minus the depth (the
/// smallest overlap over the fifteen separating-axis candidates).
RP_API double rp_box_box_signed_distance(const rp_box *a, const rp_box *b);

/// Witness points and the unit normal from a towards b, as rp_shape_contact
/// gives them: point_b - point_a = distance * normal.
RP_API rp_contact rp_sphere_box_contact(const rp_sphere *a, const rp_box *b);
RP_API rp_contact rp_capsule_box_contact(const rp_capsule *a, const rp_box *b);
RP_API rp_contact rp_sphere_halfspace_contact(const rp_sphere *a, const rp_halfspace *b);
RP_API rp_contact rp_capsule_halfspace_contact(const rp_capsule *a, const rp_halfspace *b);
RP_API rp_contact rp_box_halfspace_contact(const rp_box *a, const rp_halfspace *b);
RP_API rp_contact rp_box_box_contact(const rp_box *a, const rp_box *b);

/* ---- transforms ------------------------------------------------------- */

/// The identity transform.
RP_API rp_transform rp_transform_identity(void);

/// Builds a transform from a translation and a Hamilton quaternion (w, x, y,
/// z), active: world = R(q)*local + t.  The quaternion is normalised first.
/// Returns RP_ERR_QUATERNION when it is non-finite or zero, RP_ERR_NONFINITE
/// for a non-finite translation; *out is written only on RP_OK.
RP_API rp_status rp_transform_from_quaternion(rp_vec3 translation, double w, double x, double y,
                                              double z, rp_transform *out);

/// Returns a∘b: applying the result equals applying b, then a.
RP_API rp_transform rp_transform_compose(const rp_transform *a, const rp_transform *b);

/// Returns the inverse of a rigid transform (transpose rotation).
RP_API rp_transform rp_transform_inverse(const rp_transform *tf);

/// Checks that every entry is finite and that r is orthonormal with
/// determinant +1, each within 1e-6 (absolute, on unit-scale quantities).
/// Returns RP_ERR_NONFINITE or RP_ERR_TRANSFORM on failure.
RP_API rp_status rp_transform_validate(const rp_transform *tf);

/// Applies a transform to a point: r*p + t.
RP_API rp_vec3 rp_transform_point(const rp_transform *tf, rp_vec3 p);

/// Moves a shape given in a frame's local coordinates into world
/// coordinates.  Radii and half extents are unchanged (the transform must
/// be rigid); a box's rotation becomes the frame's rotation times its own
/// (as a unit quaternion), a half-space's normal is rotated and
/// renormalised and its offset moved with the translation.
RP_API rp_shape rp_transform_shape(const rp_transform *frame, const rp_shape *local);

/// Moves a link shape into the world.  `frame` is the world pose of the
/// link's frame (the base pose when ls->frame == -1); the caller picks it.
RP_API rp_shape rp_link_shape_transform_shape(const rp_link_shape *ls, const rp_transform *frame);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_GEOMETRY_H */
