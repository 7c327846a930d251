/* SPDX-License-Identifier: MIT */
/* TCP addresses given on the command line (--tcp, --http): "HOST:PORT". */
#include "addr.h"

#include <arpa/inet.h>
#include <string.h>
#include <stdlib.h>

/* Splits "HOST:PORT" ("[v6]:PORT" for IPv6) and resolves numeric hosts and
 * "localhost". */
int rpd_addr_parse(const char *spec, struct sockaddr_storage *addr)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host)
        return UV_EINVAL;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || colon[1] == '\0' || port < 0 || port > 65535)
        return UV_EINVAL;
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    size_t n = strlen(host);
    if (host[0] == '[' && host[n - 1] == ']') {
        host[n - 1] = '\0';
        return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)addr);
    }
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr);
}

/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 (an IPv4 loopback address on an
 * IPv6 socket, as a passed socket may be bound). */
bool rpd_addr_is_loopback(const struct sockaddr_storage *addr)
{
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v4mapped_127[13] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127};
    return memcmp(&a->sin6_addr, one, 16) == 0 || memcmp(&a->sin6_addr, v4mapped_127, 13) == 0;
}
