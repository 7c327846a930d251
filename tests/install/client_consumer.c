/* SPDX-License-Identifier: MIT */
/* Builds against the installed repose-client: connecting to a socket path
 * that does not exist must fail cleanly with RP_CLIENT_CONNECT. */
#include <stdio.h>

#include <repose/client.h>

int main(void)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = rp_client_connect_unix("/nonexistent/reposed.sock", 500, &err);
    if (c || err.kind != RP_CLIENT_CONNECT) {
        fprintf(stderr, "client consumer: expected a connect error, got kind %d\n", (int)err.kind);
        rp_client_close(c);
        return 1;
    }
    printf("client consumer: %s: %s\n", rp_client_error_kind_name(err.kind), err.message);
    rp_client_error_free(&err);
    return 0;
}
