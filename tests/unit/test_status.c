/* SPDX-License-Identifier: MIT */
/* Status table: every code has a distinct name and a message.  (The
 * daemon's JSON-RPC code for each is tested in test_rpc.c.) */
#include "test_util.h"

#include "repose/status.h"

static void every_status_has_distinct_name_and_nonempty_message(void **state)
{
    (void)state;
    for (int i = 0; i < (int)RP_STATUS_COUNT_; i++) {
        const char *name = rp_status_name((rp_status)i);
        const char *msg = rp_status_str((rp_status)i);
        assert_non_null(name);
        assert_non_null(msg);
        assert_true(strncmp(name, "RP_", 3) == 0);
        assert_true(strlen(msg) > 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(name, rp_status_name((rp_status)j));
    }
}

static void ok_is_zero(void **state)
{
    (void)state;
    assert_int_equal(RP_OK, 0);
    assert_string_equal(rp_status_name(RP_OK), "RP_OK");
    assert_string_equal(rp_status_str(RP_ERR_RADIUS_NEGATIVE), "radius must be >= 0");
}

static void out_of_range_status_is_reported_not_indexed(void **state)
{
    (void)state;
    assert_string_equal(rp_status_str((rp_status)-1), "unknown status");
    assert_string_equal(rp_status_str(RP_STATUS_COUNT_), "unknown status");
    assert_string_equal(rp_status_name((rp_status)9999), "RP_ERR_UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_status_has_distinct_name_and_nonempty_message),
        cmocka_unit_test(ok_is_zero),
        cmocka_unit_test(out_of_range_status_is_reported_not_indexed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
