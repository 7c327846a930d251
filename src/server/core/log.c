/* SPDX-License-Identifier: MIT */
/* stderr logging for reposed.  Info lines have no level tag, so the startup
 * lines read "reposed: listening on tcp 127.0.0.1:7411" as scripts expect. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static rpd_log_level current = RPD_LOG_INFO;

void rpd_log_set_level(rpd_log_level level)
{
    current = level;
}

int rpd_log_parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void rpd_log(rpd_log_level level, const char *fmt, ...)
{
    static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
    if (level > current)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line so concurrent writers do not interleave. */
    fprintf(stderr, "reposed: %s%s\n", level == RPD_LOG_ALWAYS ? "" : tags[level], line);
}
