/* SPDX-License-Identifier: MIT */
/* Status names and messages, generated from RP_STATUS_MAP.  (Their JSON-RPC
 * codes belong to the daemon: src/server/req.c, rpd_status_code.) */
#include "repose/status.h"

static const struct {
    const char *name;
    const char *message;
} status_table[] = {
#define RP_STATUS_ROW_(name, msg) {#name, msg},
    RP_STATUS_MAP(RP_STATUS_ROW_)
#undef RP_STATUS_ROW_
};

static int in_range(rp_status st)
{
    return (int)st >= 0 && (int)st < (int)RP_STATUS_COUNT_;
}

const char *rp_status_str(rp_status st)
{
    return in_range(st) ? status_table[st].message : "unknown status";
}

const char *rp_status_name(rp_status st)
{
    return in_range(st) ? status_table[st].name : "RP_ERR_UNKNOWN";
}
