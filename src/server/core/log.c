/* SPDX-License-Identifier: MIT */
/* stderr logging for reposed.  Text lines have no level tag at level info,
 * so the startup lines read "reposed: listening on tcp 127.0.0.1:7411" as
 * scripts expect; JSON lines carry time, level, event, message and the
 * event's fields (docs/ARCHITECTURE.md, "Logs"). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, gmtime_r under -std=c11 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static rpd_log_level current = RPD_LOG_INFO;
static rpd_log_format format = RPD_LOG_TEXT;

void rpd_log_set_level(rpd_log_level level)
{
    current = level;
}

int rpd_log_enabled(rpd_log_level level)
{
    return level <= current;
}

int rpd_log_parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void rpd_log_set_format(rpd_log_format f)
{
    format = f;
}

int rpd_log_parse_format(const char *s)
{
    return strcmp(s, "text") == 0 ? RPD_LOG_TEXT : strcmp(s, "json") == 0 ? RPD_LOG_JSON : -1;
}

const char *rpd_log_module_(const char *file)
{
    /* "src/server/persistence/durable.c" -> "durable" (a static buffer
     * per thread: the name lives until the next line of that thread) */
    static _Thread_local char name[64];
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strcspn(base, ".");
    n = n < sizeof name - 1 ? n : sizeof name - 1;
    memcpy(name, base, n);
    name[n] = '\0';
    return name;
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 when it is not
 * one (overlong forms, surrogates and values past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F))
        return 0;
    return len;
}

char *rpd_log_json_string(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (cap < 3) {
        if (cap)
            out[0] = '\0';
        return out;
    }
    out[o++] = '"';
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        char esc[8];
        const char *piece = esc;
        size_t len, take;
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            len = 2;
            take = 1;
        } else if (c < 0x20 || c == 0x7F) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            len = 6;
            take = 1;
        } else if ((take = utf8_len(p + i, n - i)) != 0) {
            piece = (const char *)p + i;
            len = take;
        } else {
            piece = "\\ufffd";
            len = 6;
            take = 1;
        }
        if (o + len + 2 > cap)
            break; /* room for the closing quote and the NUL */
        memcpy(out + o, piece, len);
        o += len;
        i += take;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

void rpd_log_event(rpd_log_level level, const char *event, const char *fields, const char *fmt, ...)
{
    static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level > current)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line so concurrent writers do not interleave. */
    if (format == RPD_LOG_TEXT) {
        fprintf(stderr, "reposed: %s%s\n", level == RPD_LOG_ALWAYS ? "" : tags[level], line);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t w = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + w, sizeof when - w, ".%03ldZ", ts.tv_nsec / 1000000);
    char msg[6 * sizeof line + 3], ev[200];
    rpd_log_json_string(line, strlen(line), msg, sizeof msg);
    rpd_log_json_string(event, strlen(event), ev, sizeof ev);
    fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":%s,\"message\":%s%s%s}\n", when,
            names[level == RPD_LOG_ALWAYS ? RPD_LOG_INFO : level], ev, msg, fields ? "," : "",
            fields ? fields : "");
}
