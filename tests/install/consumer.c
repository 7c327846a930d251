/* SPDX-License-Identifier: MIT */
/*
 * Install-test consumer: built against an installed repose (through
 * pkg-config and through find_package) to prove the installed headers,
 * library and package files work.  Exits non-zero on any wrong answer.
 */
#include <stdio.h>
#include <string.h>

#include <repose/geometry.h>
#include <repose/scene.h>
#include <repose/status.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("  %-52s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok)
        failures++;
}

int main(void)
{
    rp_capsule a, b, bad;
    rp_vec3 a0 = {0.0, 0.0, 0.0}, a1 = {1.0, 0.0, 0.0};
    rp_vec3 b0 = {0.5, 2.0, 0.0}, b1 = {1.5, 2.0, 0.0};

    /* Two parallel capsules 2 m apart (axis to axis) with radii 0.125 and
     * 0.25: the signed distance is exactly 2 - 0.375 = 1.625 (all dyadic). */
    check(rp_capsule_new(a0, a1, 0.125, &a) == RP_OK, "rp_capsule_new(a) == RP_OK");
    check(rp_capsule_new(b0, b1, 0.25, &b) == RP_OK, "rp_capsule_new(b) == RP_OK");

    const double want = 1.625;
    /* Contract: |error| <= 16 * 2^-52 * S, S = 2 (largest magnitude). */
    const double tol = 16.0 * 0x1.0p-52 * 2.0;
    double dab = rp_capsule_capsule_signed_distance(&a, &b);
    double dba = rp_capsule_capsule_signed_distance(&b, &a);
    printf("  capsule-capsule distance = %.17g (want %.17g)\n", dab, want);
    check(dab - want <= tol && want - dab <= tol, "capsule-capsule distance == 1.625");
    check(memcmp(&dab, &dba, sizeof dab) == 0, "d(a,b) == d(b,a) bit for bit");

    rp_shape sa = rp_shape_from_capsule(a), sb = rp_shape_from_capsule(b);
    double ds = rp_shape_signed_distance(&sa, &sb);
    check(ds - want <= tol && want - ds <= tol, "rp_shape_signed_distance == 1.625");

    /* Error path and status strings. */
    rp_status st = rp_capsule_new(a0, a1, -1.0, &bad);
    check(st == RP_ERR_RADIUS_NEGATIVE, "negative radius -> RP_ERR_RADIUS_NEGATIVE");
    const char *msg = rp_status_str(st);
    printf("  rp_status_str(%d) = \"%s\"\n", (int)st, msg ? msg : "(null)");
    check(msg != NULL && msg[0] != '\0', "rp_status_str(error) is non-empty");

    /* A robot from URDF text through the installed library (libexpat
     * behind it): one revolute joint, a sphere on each link. */
    static const char urdf[] =
        "<robot name='r'><link name='a'><collision><geometry><sphere radius='0.1'/></geometry>"
        "</collision></link><link name='b'><collision><origin xyz='0.5 0 0'/><geometry>"
        "<sphere radius='0.1'/></geometry></collision></link><joint name='j' type='revolute'>"
        "<parent link='a'/><child link='b'/><axis xyz='0 0 1'/>"
        "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>";
    rp_store *store = rp_store_new(NULL);
    rp_model *m = NULL;
    rp_urdf_problem why;
    st = rp_store_model_put_urdf(store, "r", urdf, sizeof urdf - 1, NULL, 0, &m, &why);
    check(st == RP_OK && m != NULL, "rp_store_model_put_urdf == RP_OK");
    check(m && rp_model_dof(m) == 1, "the URDF's robot has one joint");
    st = rp_store_model_put_urdf(store, "bad", "<robot", 6, NULL, 0, NULL, &why);
    check(st == RP_ERR_INVALID_ARG && why.reason[0] != '\0', "a broken URDF is refused");
    rp_store_free(store);

    if (failures) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer: all checks passed\n");
    return 0;
}
