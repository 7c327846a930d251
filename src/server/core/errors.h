/* SPDX-License-Identifier: MIT */
/*
 * The JSON-RPC error codes of protocol v1, in one table: the enum, the
 * names used in logs and the stats slots are generated from it.
 */
#ifndef REPOSE_SERVER_ERRORS_H
#define REPOSE_SERVER_ERRORS_H

/* X(constant suffix, code, short name) */
#define RPD_ERROR_TABLE(X)                                                                         \
    X(PARSE_ERROR, -32700, "parse error")                                                          \
    X(INVALID_REQUEST, -32600, "invalid request")                                                  \
    X(METHOD_NOT_FOUND, -32601, "method not found")                                                \
    X(INVALID_PARAMS, -32602, "invalid params")                                                    \
    X(INTERNAL_ERROR, -32603, "internal error")                                                    \
    X(NOT_FOUND, -32001, "not found")                                                              \
    X(ALREADY_EXISTS, -32002, "already exists")                                                    \
    X(REVISION_CONFLICT, -32003, "revision conflict")                                              \
    X(LIMIT_EXCEEDED, -32004, "limit exceeded")                                                    \
    X(UNAUTHORIZED, -32005, "unauthorized")                                                        \
    X(SHUTTING_DOWN, -32006, "shutting down")                                                      \
    X(STORAGE, -32007, "storage")

enum {
#define RPD_ERROR_ENUM(name, code, text) RPD_##name = code,
    RPD_ERROR_TABLE(RPD_ERROR_ENUM)
#undef RPD_ERROR_ENUM
};

/* How many codes the table has. */
enum {
#define RPD_ERROR_ONE(name, code, text) +1
    RPD_ERROR_CODE_COUNT = 0 RPD_ERROR_TABLE(RPD_ERROR_ONE)
#undef RPD_ERROR_ONE
};

#endif /* REPOSE_SERVER_ERRORS_H */
