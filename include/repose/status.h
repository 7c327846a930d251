/* SPDX-License-Identifier: MIT */
/*
 * repose — status codes shared by every module.
 *
 * One table, RP_STATUS_MAP, generates the enum, the symbolic name and the
 * human message.  Adding an error is adding one row here (and, for the
 * daemon, its JSON-RPC code in src/server: rpd_status_code).  The geometry
 * core only ever returns the first rows; the scene store and the daemon use
 * the rest.
 */
#ifndef REPOSE_STATUS_H
#define REPOSE_STATUS_H

#include "repose/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum constant, message) */
#define RP_STATUS_MAP(X)                                                                           \
    X(RP_OK, "ok")                                                                                 \
    X(RP_ERR_NONFINITE, "coordinate must be finite")                                               \
    X(RP_ERR_RADIUS_NONFINITE, "radius must be finite")                                            \
    X(RP_ERR_RADIUS_NEGATIVE, "radius must be >= 0")                                               \
    X(RP_ERR_SHAPE_KIND, "unknown shape kind")                                                     \
    X(RP_ERR_TRANSFORM, "rotation must be orthonormal with det +1")                                \
    X(RP_ERR_QUATERNION, "quaternion must be finite and non-zero")                                 \
    X(RP_ERR_INVALID_ARG, "invalid argument")                                                      \
    X(RP_ERR_NOMEM, "out of memory")                                                               \
    X(RP_ERR_NOT_FOUND, "not found")                                                               \
    X(RP_ERR_EXISTS, "already exists")                                                             \
    X(RP_ERR_REVISION, "revision conflict")                                                        \
    X(RP_ERR_LIMIT, "limit exceeded")                                                              \
    X(RP_ERR_ABORTED, "refused by the store's commit hook")                                        \
    X(RP_ERR_WORK, "work budget spent")                                                            \
    X(RP_ERR_EXTENT_NEGATIVE, "half extents must be >= 0")                                         \
    X(RP_ERR_NORMAL, "normal must be non-zero")                                                    \
    X(RP_ERR_HALFSPACES, "too many half-spaces in one scene")                                      \
    X(RP_ERR_IN_USE, "in use by a robot instance")

/// Result of every fallible repose call.  RP_OK is zero; errors are positive
/// so that `if (st) …` reads naturally.
typedef enum rp_status {
#define RP_STATUS_ENUM_(name, msg) name,
    RP_STATUS_MAP(RP_STATUS_ENUM_)
#undef RP_STATUS_ENUM_
        RP_STATUS_COUNT_ ///< Number of codes; not a status.
} rp_status;

/// Human-readable message for a status ("radius must be >= 0").  Never NULL:
/// an out-of-range value yields "unknown status".  Static storage.
RP_API const char *rp_status_str(rp_status st);

/// Symbolic name of a status ("RP_ERR_RADIUS_NEGATIVE").  Never NULL.
RP_API const char *rp_status_name(rp_status st);

#ifdef __cplusplus
}
#endif
#endif /* REPOSE_STATUS_H */
