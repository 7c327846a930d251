/*
 * repose-cli: a command-line client for reposed, in the spirit of redis-cli.
 *
 *   repose-cli [--unix PATH | --host H --port P] [--token-file F] [--raw]
 *              [--timeout MS] [METHOD [PARAMS-JSON]]
 *
 * One call: prints the result as pretty JSON (2-space indent) on stdout and
 * exits 0, or prints the error on stderr and exits 1.  Usage errors (bad
 * options, bad params JSON, an unreadable @file or token file) exit 2;
 * failing to connect or losing the connection exits 3.
 *
 * Without METHOD it reads `METHOD [PARAMS-JSON]` lines from stdin (with a
 * prompt only on a terminal) and prints each reply; --raw instead passes
 * request lines through unchanged and prints the reply lines unchanged.
 *
 * In PARAMS-JSON, `@path` in place of a JSON value is replaced by the
 * contents of that file (which must be valid JSON).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "repose/client.h"

/* Exit codes. */
enum {
    EXIT_OK = 0,
    EXIT_RPC = 1,     /* the server answered with an error (or nonsense) */
    EXIT_USAGE = 2,   /* bad command line, params, @file or token file */
    EXIT_CONNECT = 3  /* could not connect, or the connection was lost */
};

/* Every call waits at most this long by default (--timeout 0: forever), ms. */
#define DEFAULT_TIMEOUT_MS 30000
/* The longest token file accepted, bytes. */
#define MAX_TOKEN_BYTES 4096

typedef struct options {
    const char *unix_path; /* NULL with host set */
    const char *host;      /* NULL: Unix socket */
    int port;
    const char *token_file;
    bool raw;
    int timeout_ms;
    const char *method; /* NULL: read lines from stdin */
    const char *params; /* NULL: no params */
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: repose-cli [--unix PATH | --host H [--port P]] [--token-file F] [--raw]\n"
            "                  [--timeout MS] [METHOD [PARAMS-JSON]]\n"
            "\n"
            "  --unix PATH        Unix socket (default %s)\n"
            "  --host H           connect over TCP to H instead\n"
            "  --port P           TCP port (default %d)\n"
            "  --token-file F     authenticate with the token in F (must not be\n"
            "                     world-readable)\n"
            "  --raw              pass NDJSON request lines from stdin through unchanged\n"
            "                     and print reply lines unchanged\n"
            "  --timeout MS       per-call timeout (default %d; 0 waits forever)\n"
            "\n"
            "With METHOD: prints the result as JSON and exits 0; prints the error to\n"
            "stderr and exits 1.  Usage errors exit 2, connection failures 3.\n"
            "Without METHOD: reads `METHOD [PARAMS-JSON]` lines from stdin.\n"
            "In PARAMS-JSON, @FILE as a value is replaced by the JSON in FILE:\n"
            "  repose-cli scene.put '{\"scene\":\"cell\",\"shapes\":@shapes.json}'\n"
            "`repose-cli ping` exits 0 only when the daemon answers.\n",
            RP_CLIENT_DEFAULT_UNIX_PATH, RP_CLIENT_DEFAULT_PORT, DEFAULT_TIMEOUT_MS);
}

/* Parses a decimal int in [lo, hi]; false when s is not one. */
static bool parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Fills o from argv; returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->port = RP_CLIENT_DEFAULT_PORT;
    o->timeout_ms = DEFAULT_TIMEOUT_MS;
    bool port_set = false;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--raw") == 0) {
            o->raw = true;
            continue;
        }
        bool takes = strcmp(a, "--unix") == 0 || strcmp(a, "--host") == 0 ||
                     strcmp(a, "--port") == 0 || strcmp(a, "--token-file") == 0 ||
                     strcmp(a, "--timeout") == 0;
        if (!takes) {
            fprintf(stderr, "repose-cli: unknown option '%s' (see --help)\n", a);
            return EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "repose-cli: %s needs a value (see --help)\n", a);
            return EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--unix") == 0) {
            o->unix_path = v;
        } else if (strcmp(a, "--host") == 0) {
            o->host = v;
        } else if (strcmp(a, "--port") == 0) {
            if (!parse_int(v, 1, 65535, &o->port)) {
                fprintf(stderr, "repose-cli: --port must be 1..65535, not '%s'\n", v);
                return EXIT_USAGE;
            }
            port_set = true;
        } else if (strcmp(a, "--token-file") == 0) {
            o->token_file = v;
        } else if (!parse_int(v, 0, 1 << 30, &o->timeout_ms)) {
            fprintf(stderr, "repose-cli: --timeout must be a number of ms >= 0, not '%s'\n", v);
            return EXIT_USAGE;
        }
    }
    if (o->unix_path && (o->host || port_set)) {
        fprintf(stderr, "repose-cli: --unix and --host/--port exclude each other\n");
        return EXIT_USAGE;
    }
    if (port_set && !o->host)
        o->host = "127.0.0.1";
    if (!o->host && !o->unix_path)
        o->unix_path = RP_CLIENT_DEFAULT_UNIX_PATH;
    if (i < argc)
        o->method = argv[i++];
    if (i < argc)
        o->params = argv[i++];
    if (i < argc) {
        fprintf(stderr, "repose-cli: too many arguments (quote PARAMS-JSON as one argument)\n");
        return EXIT_USAGE;
    }
    if (o->raw && o->method) {
        fprintf(stderr, "repose-cli: --raw reads requests from stdin; give no METHOD\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- files ----------------------------------------------------------------------- */

/* Reads a whole file (NUL-terminated, malloc'ed); NULL with errno set. */
static char *read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
                errno = EIO;
            }
            break;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
        if (len_out)
            *len_out = len;
    }
    return buf;
}

/* Reads the token from path into a malloc'ed string (trailing newline
 * stripped).  Refuses a world-readable file.  NULL after a message. */
static char *read_token(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "repose-cli: token file %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (st.st_mode & S_IROTH) {
        fprintf(stderr,
                "repose-cli: token file %s is world-readable (mode %04o); refusing to use it "
                "(chmod o-r %s)\n",
                path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return NULL;
    }
    char *tok = malloc(MAX_TOKEN_BYTES + 1);
    size_t len = 0;
    ssize_t r = 0;
    while (tok && len < MAX_TOKEN_BYTES &&
           ((r = read(fd, tok + len, MAX_TOKEN_BYTES - len)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0)
            len += (size_t)r;
    close(fd);
    if (!tok || r < 0) {
        fprintf(stderr, "repose-cli: token file %s: %s\n", path,
                tok ? strerror(errno) : "out of memory");
        free(tok);
        return NULL;
    }
    tok[len] = '\0';
    while (len > 0 && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
        tok[--len] = '\0';
    if (len == 0 || len == MAX_TOKEN_BYTES || strlen(tok) != len) {
        fprintf(stderr, "repose-cli: token file %s: %s\n", path,
                len == 0 ? "empty" : "not a token (too long or binary)");
        free(tok);
        return NULL;
    }
    return tok;
}

/* ---- params: @file substitution ---------------------------------------------------- */

typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

static bool sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return false;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* Replaces every `@path` outside JSON strings in text by the contents of the
 * file (checked to be JSON), then checks the whole result is JSON.  Returns a
 * malloc'ed string, or NULL after a message on stderr. */
static char *expand_params(const char *text)
{
    strbuf b = {NULL, 0, 0};
    bool in_str = false, ok = true;
    const char *run = text;
    for (const char *p = text; *p && ok; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p == '"') {
            in_str = true;
            continue;
        }
        if (*p != '@')
            continue;
        ok = sb_add(&b, run, (size_t)(p - run));
        const char *start = p + 1, *end = start;
        while (*end && !strchr(",}] \t\r\n", *end))
            end++;
        if (end == start) {
            fprintf(stderr, "repose-cli: '@' must be followed by a file name\n");
            free(b.p);
            return NULL;
        }
        char *path = strndup(start, (size_t)(end - start));
        size_t flen = 0;
        char *content = path ? read_file(path, &flen) : NULL;
        if (!content) {
            fprintf(stderr, "repose-cli: @%s: cannot read: %s\n", path ? path : "?",
                    strerror(errno));
            free(path);
            free(b.p);
            return NULL;
        }
        /* One JSON value, then only whitespace (cJSON stops at the value). */
        const char *after = NULL;
        cJSON *check = cJSON_ParseWithOpts(content, &after, 0);
        const char *ep = check ? after : cJSON_GetErrorPtr();
        bool valid = check != NULL && strlen(content) == flen;
        cJSON_Delete(check);
        while (valid && (*ep == ' ' || *ep == '\t' || *ep == '\r' || *ep == '\n'))
            ep++;
        valid = valid && *ep == '\0';
        if (!valid) {
            fprintf(stderr, "repose-cli: @%s: not valid JSON (near byte %zu)\n", path,
                    ep && ep >= content ? (size_t)(ep - content) : (size_t)0);
            free(content);
            free(path);
            free(b.p);
            return NULL;
        }
        ok = sb_add(&b, content, flen);
        free(content);
        free(path);
        run = end;
        p = end - 1;
    }
    if (ok)
        ok = sb_add(&b, run, strlen(run));
    if (!ok) {
        fprintf(stderr, "repose-cli: out of memory\n");
        free(b.p);
        return NULL;
    }
    const char *ep = NULL;
    cJSON *check = cJSON_ParseWithOpts(b.p, &ep, 1);
    if (!check) {
        ep = cJSON_GetErrorPtr();
        fprintf(stderr, "repose-cli: PARAMS-JSON is not valid JSON (near byte %zu)\n",
                ep && ep >= b.p ? (size_t)(ep - b.p) : (size_t)0);
        free(b.p);
        return NULL;
    }
    bool object = cJSON_IsObject(check);
    cJSON_Delete(check);
    if (!object) {
        fprintf(stderr, "repose-cli: PARAMS-JSON must be a JSON object\n");
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- output ------------------------------------------------------------------------- */

static void indent(FILE *f, int depth)
{
    fputc('\n', f);
    for (int i = 0; i < depth; i++)
        fputs("  ", f);
}

/* Prints valid JSON text with a 2-space indent, keeping every string and
 * number exactly as written (the server's shortest round-trip digits). */
static void print_pretty(FILE *f, const char *s)
{
    int depth = 0;
    bool in_str = false;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if (in_str) {
            fputc(ch, f);
            if (ch == '\\' && p[1])
                fputc(*++p, f);
            else if (ch == '"')
                in_str = false;
            continue;
        }
        switch (ch) {
        case ' ':
        case '\t':
        case '\r':
        case '\n':
            break;
        case '"':
            in_str = true;
            fputc(ch, f);
            break;
        case '{':
        case '[': {
            const char *q = p + 1;
            while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
                q++;
            fputc(ch, f);
            if (*q == '}' || *q == ']') {
                fputc(*q, f); /* {} and [] stay on one line */
                p = q;
            } else {
                indent(f, ++depth);
            }
            break;
        }
        case '}':
        case ']':
            indent(f, --depth);
            fputc(ch, f);
            break;
        case ',':
            fputc(ch, f);
            indent(f, depth);
            break;
        case ':':
            fputs(": ", f);
            break;
        default:
            fputc(ch, f);
        }
    }
    fputc('\n', f);
}

/* Prints a failure on stderr and returns the exit code it maps to. */
static int report(const rp_client_error *err)
{
    switch (err->kind) {
    case RP_CLIENT_RPC:
        fprintf(stderr, "error %d: %s\n", err->code, err->message);
        if (err->data) {
            fputs("data: ", stderr);
            print_pretty(stderr, err->data);
        }
        return EXIT_RPC;
    case RP_CLIENT_CONNECT:
    case RP_CLIENT_CLOSED:
    case RP_CLIENT_TIMEOUT:
    case RP_CLIENT_IO:
        fprintf(stderr, "repose-cli: %s\n", err->message);
        return EXIT_CONNECT;
    case RP_CLIENT_ARG:
        fprintf(stderr, "repose-cli: %s\n", err->message);
        return EXIT_USAGE;
    default:
        fprintf(stderr, "repose-cli: %s error: %s\n", rp_client_error_kind_name(err->kind),
                err->message);
        return EXIT_RPC;
    }
}

/* ---- running -------------------------------------------------------------------------- */

/* Connects (and authenticates) as the options say; NULL after a message,
 * with *code set to the exit code. */
static rp_client *open_client(const options *o, int *code)
{
    char *token = NULL;
    if (o->token_file) {
        token = read_token(o->token_file);
        if (!token) {
            *code = EXIT_USAGE;
            return NULL;
        }
    }
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = o->host ? rp_client_connect_tcp(o->host, o->port, o->timeout_ms, &err)
                           : rp_client_connect_unix(o->unix_path, o->timeout_ms, &err);
    if (!c) {
        *code = report(&err);
        if (*code != EXIT_USAGE)
            *code = EXIT_CONNECT;
    } else if (token && rp_client_auth(c, token, &err) != RP_CLIENT_OK) {
        fputs("repose-cli: auth failed: ", stderr);
        *code = report(&err);
        rp_client_close(c);
        c = NULL;
    }
    if (token) {
        volatile char *v = token;
        for (size_t i = 0; v[i]; i++)
            v[i] = 0;
        free(token);
    }
    rp_client_error_free(&err);
    return c;
}

/* One call with expanded params (or NULL): calls, prints.  Returns the
 * exit code. */
static int run_call(rp_client *c, const char *method, const char *params)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *result = NULL;
    rp_client_error_kind k = rp_client_call(c, method, params, &result, &err);
    int code = EXIT_OK;
    if (k != RP_CLIENT_OK) {
        code = report(&err);
    } else {
        print_pretty(stdout, result);
        fflush(stdout);
        if (strcmp(method, "ping") == 0) {
            /* The health check passes only on {"pong":true}. */
            cJSON *r = cJSON_Parse(result);
            if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "pong"))) {
                fprintf(stderr, "repose-cli: ping: the reply is not {\"pong\":true}\n");
                code = EXIT_RPC;
            }
            cJSON_Delete(r);
        }
    }
    free(result);
    rp_client_error_free(&err);
    return code;
}

/* Reads `METHOD [PARAMS-JSON]` lines from stdin.  Exits with 3 when the
 * connection is lost, else 1 when any call failed, else 0. */
static int run_lines(rp_client *c)
{
    bool tty = isatty(STDIN_FILENO);
    int worst = EXIT_OK;
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        if (tty) {
            fputs("repose> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0)
            break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        char *method = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (tty && (strcmp(method, "quit") == 0 || strcmp(method, "exit") == 0))
            break;
        char *params = NULL;
        if (*p && !(params = expand_params(p))) {
            worst = EXIT_RPC;
            continue;
        }
        int code = run_call(c, method, params);
        free(params);
        if (code == EXIT_CONNECT) {
            worst = EXIT_CONNECT;
            break;
        }
        if (code != EXIT_OK)
            worst = EXIT_RPC;
    }
    if (tty)
        fputc('\n', stdout);
    free(line);
    return worst;
}

/* --raw: sends every stdin line unchanged, then prints every reply line
 * unchanged until the server closes after answering all of them. */
static int run_raw(rp_client *c)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int code = EXIT_OK;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (rp_client_send_line(c, line, len, &err) != RP_CLIENT_OK) {
            code = report(&err);
            break;
        }
    }
    free(line);
    if (code == EXIT_OK && rp_client_shutdown_write(c, &err) != RP_CLIENT_OK)
        code = report(&err);
    /* Print what arrives; the server closes once it has answered everything
     * (also after a write error, whatever was answered is still shown). */
    for (;;) {
        char *reply = NULL;
        size_t rlen = 0;
        rp_client_error_kind k = rp_client_recv_line(c, &reply, &rlen, &err);
        if (k != RP_CLIENT_OK) {
            if (k != RP_CLIENT_CLOSED && code == EXIT_OK)
                code = report(&err);
            break;
        }
        fwrite(reply, 1, rlen, stdout);
        fputc('\n', stdout);
        free(reply);
    }
    fflush(stdout);
    rp_client_error_free(&err);
    return code;
}

int main(int argc, char **argv)
{
    options o;
    int code = parse_args(argc, argv, &o);
    if (code >= 0)
        return code;
    /* Bad params are a usage error even when no daemon runs. */
    char *params = NULL;
    if (o.method && o.params && !(params = expand_params(o.params)))
        return EXIT_USAGE;
    rp_client *c = open_client(&o, &code);
    if (!c) {
        free(params);
        return code;
    }
    if (o.raw)
        code = run_raw(c);
    else if (o.method)
        code = run_call(c, o.method, params);
    else
        code = run_lines(c);
    free(params);
    rp_client_close(c);
    if (fflush(stdout) != 0 && code == EXIT_OK)
        code = EXIT_RPC;
    return code;
}
