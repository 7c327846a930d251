/* SPDX-License-Identifier: MIT */
/* One line per event on stderr, as text ("reposed: [level: ]message") or
 * as one JSON object (--log-format json; the fields are listed in
 * docs/ARCHITECTURE.md, "Logs"). */
#ifndef REPOSE_SERVER_LOG_H
#define REPOSE_SERVER_LOG_H

/* RPD_LOG_ALWAYS is for lines that scripts rely on ("listening on ..."):
 * printed whatever the level, without a tag (level "info" in JSON). */
typedef enum rpd_log_level {
    RPD_LOG_ALWAYS = -1,
    RPD_LOG_ERROR,
    RPD_LOG_WARN,
    RPD_LOG_INFO,
    RPD_LOG_DEBUG
} rpd_log_level;

typedef enum rpd_log_format { RPD_LOG_TEXT, RPD_LOG_JSON } rpd_log_format;

void rpd_log_set_level(rpd_log_level level);
/* Whether a line of this level would be printed. */
int rpd_log_enabled(rpd_log_level level);
/* Parses "error", "warn", "info", "debug"; -1 when unknown. */
int rpd_log_parse_level(const char *s);
void rpd_log_set_format(rpd_log_format format);
/* Parses "text", "json"; -1 when unknown. */
int rpd_log_parse_format(const char *s);

/* A line naming its event (a dotted name such as "connection.open"), with
 * `fields` (NULL, or the members of a JSON object without its braces,
 * built by the caller from numbers and rpd_log_json_string) added to the
 * JSON form; the text form prints the message alone. */
void rpd_log_event(rpd_log_level level, const char *event, const char *fields, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* A line whose event is its source module ("durable", "conn", "server",
 * ...: the file's name without its directory and ".c"). */
#define rpd_log(level, ...) rpd_log_event((level), rpd_log_module_(__FILE__), NULL, __VA_ARGS__)
const char *rpd_log_module_(const char *file);

/* s (n bytes) as a JSON string with its quotes into out (size cap, always
 * terminated; cut short, still valid, when it does not fit): control
 * characters escaped, bytes that are not UTF-8 replaced by U+FFFD.
 * Returns out. */
char *rpd_log_json_string(const char *s, size_t n, char *out, size_t cap);

#endif /* REPOSE_SERVER_LOG_H */
