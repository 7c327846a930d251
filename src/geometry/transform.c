/* SPDX-License-Identifier: MIT */
/* Rigid transforms: world = r*local + t. */
#include "repose/geometry.h"
#include "vec.h"

/* Orthonormality and determinant are checked to this absolute tolerance on
 * unit-scale quantities (entries of r*r^T - I, and det - 1).  1e-6 admits
 * matrices printed with 7+ significant digits and rejects real shears. */
#define RP_ROTATION_TOLERANCE 1e-6

rp_transform rp_transform_identity(void)
{
    rp_transform tf = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0, 0, 0}};
    return tf;
}

rp_status rp_transform_from_quaternion(rp_vec3 translation, double w, double x, double y, double z,
                                       rp_transform *out)
{
    if (!out)
        return RP_ERR_INVALID_ARG;
    if (!isfinite(w) || !isfinite(x) || !isfinite(y) || !isfinite(z))
        return RP_ERR_QUATERNION;
    if (!v3_isfinite(translation))
        return RP_ERR_NONFINITE;
    double q[4] = {w, x, y, z};
    if (!quat_unit(q))
        return RP_ERR_QUATERNION;
    w = q[0], x = q[1], y = q[2], z = q[3];

    out->r[0][0] = 1 - 2 * (y * y + z * z);
    out->r[0][1] = 2 * (x * y - w * z);
    out->r[0][2] = 2 * (x * z + w * y);
    out->r[1][0] = 2 * (x * y + w * z);
    out->r[1][1] = 1 - 2 * (x * x + z * z);
    out->r[1][2] = 2 * (y * z - w * x);
    out->r[2][0] = 2 * (x * z - w * y);
    out->r[2][1] = 2 * (y * z + w * x);
    out->r[2][2] = 1 - 2 * (x * x + y * y);
    out->t = translation;
    return RP_OK;
}

rp_transform rp_transform_compose(const rp_transform *a, const rp_transform *b)
{
    rp_transform out;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out.r[i][j] =
                a->r[i][0] * b->r[0][j] + a->r[i][1] * b->r[1][j] + a->r[i][2] * b->r[2][j];
    out.t = rp_transform_point(a, b->t);
    return out;
}

rp_transform rp_transform_inverse(const rp_transform *tf)
{
    rp_transform out;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out.r[i][j] = tf->r[j][i];
    /* t' = -r^T t */
    rp_vec3 t = tf->t;
    out.t = v3(-(out.r[0][0] * t.x + out.r[0][1] * t.y + out.r[0][2] * t.z),
               -(out.r[1][0] * t.x + out.r[1][1] * t.y + out.r[1][2] * t.z),
               -(out.r[2][0] * t.x + out.r[2][1] * t.y + out.r[2][2] * t.z));
    return out;
}

rp_status rp_transform_validate(const rp_transform *tf)
{
    if (!tf)
        return RP_ERR_INVALID_ARG;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!isfinite(tf->r[i][j]))
                return RP_ERR_NONFINITE;
    if (!v3_isfinite(tf->t))
        return RP_ERR_NONFINITE;
    /* r * r^T must be the identity. */
    for (int i = 0; i < 3; i++) {
        for (int j = i; j < 3; j++) {
            double dot =
                tf->r[i][0] * tf->r[j][0] + tf->r[i][1] * tf->r[j][1] + tf->r[i][2] * tf->r[j][2];
            double want = i == j ? 1.0 : 0.0;
            if (!(fabs(dot - want) <= RP_ROTATION_TOLERANCE))
                return RP_ERR_TRANSFORM;
        }
    }
    const double(*r)[3] = tf->r;
    double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) -
                 r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                 r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
    if (!(fabs(det - 1.0) <= RP_ROTATION_TOLERANCE))
        return RP_ERR_TRANSFORM;
    return RP_OK;
}

rp_vec3 rp_transform_point(const rp_transform *tf, rp_vec3 p)
{
    return v3(tf->r[0][0] * p.x + tf->r[0][1] * p.y + tf->r[0][2] * p.z + tf->t.x,
              tf->r[1][0] * p.x + tf->r[1][1] * p.y + tf->r[1][2] * p.z + tf->t.y,
              tf->r[2][0] * p.x + tf->r[2][1] * p.y + tf->r[2][2] * p.z + tf->t.z);
}

/* The unit quaternion of a rotation matrix (w >= 0 up to the branch
 * taken): the largest of the four squared components is taken from the
 * trace or a diagonal entry, where it is at least 1/4, and the others from
 * sums and differences of off-diagonal entries divided by it, so nothing
 * cancels badly.  Normalised at the end, as rp_box_new does. */
static rp_quat matrix_quat(const double r[3][3])
{
    double t = r[0][0] + r[1][1] + r[2][2];
    double w, x, y, z;
    if (t >= r[0][0] && t >= r[1][1] && t >= r[2][2]) {
        w = 0.5 * sqrt(fmax(1.0 + t, 0.0));
        double f = 0.25 / w;
        x = (r[2][1] - r[1][2]) * f, y = (r[0][2] - r[2][0]) * f, z = (r[1][0] - r[0][1]) * f;
    } else if (r[0][0] >= r[1][1] && r[0][0] >= r[2][2]) {
        x = 0.5 * sqrt(fmax(1.0 + r[0][0] - r[1][1] - r[2][2], 0.0));
        double f = 0.25 / x;
        w = (r[2][1] - r[1][2]) * f, y = (r[0][1] + r[1][0]) * f, z = (r[0][2] + r[2][0]) * f;
    } else if (r[1][1] >= r[2][2]) {
        y = 0.5 * sqrt(fmax(1.0 + r[1][1] - r[0][0] - r[2][2], 0.0));
        double f = 0.25 / y;
        w = (r[0][2] - r[2][0]) * f, x = (r[0][1] + r[1][0]) * f, z = (r[1][2] + r[2][1]) * f;
    } else {
        z = 0.5 * sqrt(fmax(1.0 + r[2][2] - r[0][0] - r[1][1], 0.0));
        double f = 0.25 / z;
        w = (r[1][0] - r[0][1]) * f, x = (r[0][2] + r[2][0]) * f, y = (r[1][2] + r[2][1]) * f;
    }
    double n = sqrt(w * w + x * x + y * y + z * z);
    return (rp_quat){w / n, x / n, y / n, z / n};
}

/* The Hamilton product p*q, normalised: the rotation q, then p. */
static rp_quat quat_mul(rp_quat p, rp_quat q)
{
    rp_quat m = {p.w * q.w - p.x * q.x - p.y * q.y - p.z * q.z,
                 p.w * q.x + p.x * q.w + p.y * q.z - p.z * q.y,
                 p.w * q.y - p.x * q.z + p.y * q.w + p.z * q.x,
                 p.w * q.z + p.x * q.y - p.y * q.x + p.z * q.w};
    double n = sqrt(m.w * m.w + m.x * m.x + m.y * m.y + m.z * m.z);
    return (rp_quat){m.w / n, m.x / n, m.y / n, m.z / n};
}

/* r*v, without the translation. */
static rp_vec3 rotate(const rp_transform *tf, rp_vec3 v)
{
    return v3(tf->r[0][0] * v.x + tf->r[0][1] * v.y + tf->r[0][2] * v.z,
              tf->r[1][0] * v.x + tf->r[1][1] * v.y + tf->r[1][2] * v.z,
              tf->r[2][0] * v.x + tf->r[2][1] * v.y + tf->r[2][2] * v.z);
}

rp_shape rp_transform_shape(const rp_transform *frame, const rp_shape *local)
{
    rp_shape out = *local;
    switch (local->kind) {
    case RP_SHAPE_CAPSULE:
        out.capsule.a = rp_transform_point(frame, local->capsule.a);
        out.capsule.b = rp_transform_point(frame, local->capsule.b);
        break;
    case RP_SHAPE_SPHERE:
        out.sphere.center = rp_transform_point(frame, local->sphere.center);
        break;
    case RP_SHAPE_BOX:
        out.box.center = rp_transform_point(frame, local->box.center);
        out.box.rotation = quat_mul(matrix_quat(frame->r), local->box.rotation);
        break;
    case RP_SHAPE_HALFSPACE: {
        /* n.p <= d for local p = R^T (world - t): (R n).world <= d + (R n).t */
        rp_vec3 n = v3_unit(rotate(frame, local->halfspace.normal));
        out.halfspace.normal = n;
        double d = local->halfspace.offset + v3_dot(n, frame->t);
        if (!isfinite(d)) /* n.t may overflow where the sum does not: quarter everything */
            d = saturate(4.0 *
                         (0.25 * local->halfspace.offset + v3_dot(n, v3_scale(frame->t, 0.25))));
        out.halfspace.offset = d;
        break;
    }
    }
    return out;
}

rp_shape rp_link_shape_transform_shape(const rp_link_shape *ls, const rp_transform *frame)
{
    return rp_transform_shape(frame, &ls->shape);
}
