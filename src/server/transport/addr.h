/* SPDX-License-Identifier: MIT */
/* TCP addresses given on the command line (--tcp, --http): "HOST:PORT". */
#ifndef REPOSE_SERVER_ADDR_H
#define REPOSE_SERVER_ADDR_H

#include <stdbool.h>
#include <sys/socket.h>

#include <uv.h>

/* Splits "HOST:PORT" ("[v6]:PORT" for IPv6) and resolves numeric hosts and
 * "localhost" into *addr; a libuv error code (< 0) when it cannot. */
int rpd_addr_parse(const char *spec, struct sockaddr_storage *addr);
/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
bool rpd_addr_is_loopback(const struct sockaddr_storage *addr);

#endif /* REPOSE_SERVER_ADDR_H */
