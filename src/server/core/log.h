/* SPDX-License-Identifier: MIT */
/* One line per event on stderr: "reposed: [level: ]message". */
#ifndef REPOSE_SERVER_LOG_H
#define REPOSE_SERVER_LOG_H

/* RPD_LOG_ALWAYS is for lines that scripts rely on ("listening on ..."):
 * printed whatever the level, without a tag. */
typedef enum rpd_log_level {
    RPD_LOG_ALWAYS = -1,
    RPD_LOG_ERROR,
    RPD_LOG_WARN,
    RPD_LOG_INFO,
    RPD_LOG_DEBUG
} rpd_log_level;

void rpd_log_set_level(rpd_log_level level);
/* Parses "error", "warn", "info", "debug"; -1 when unknown. */
int rpd_log_parse_level(const char *s);
void rpd_log(rpd_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* REPOSE_SERVER_LOG_H */
