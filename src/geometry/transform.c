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
    /* Normalise with a scale first so that tiny or huge quaternions neither
     * underflow nor overflow when squared. */
    double m = fmax(fmax(fabs(w), fabs(x)), fmax(fabs(y), fabs(z)));
    if (m == 0.0)
        return RP_ERR_QUATERNION;
    w /= m, x /= m, y /= m, z /= m;
    double n = sqrt(w * w + x * x + y * y + z * z);
    w /= n, x /= n, y /= n, z /= n;

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

rp_shape rp_transform_shape(const rp_transform *frame, const rp_shape *local)
{
    rp_shape out = *local;
    if (local->kind == RP_SHAPE_CAPSULE) {
        out.capsule.a = rp_transform_point(frame, local->capsule.a);
        out.capsule.b = rp_transform_point(frame, local->capsule.b);
    } else {
        out.sphere.center = rp_transform_point(frame, local->sphere.center);
    }
    return out;
}

rp_shape rp_link_shape_transform_shape(const rp_link_shape *ls, const rp_transform *frame)
{
    return rp_transform_shape(frame, &ls->shape);
}
