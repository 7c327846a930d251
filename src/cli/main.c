/* SPDX-License-Identifier: MIT */
/*
 * repose-cli: a command-line client for reposed, in the spirit of redis-cli.
 *
 *   repose-cli [--unix PATH | --host H --port P] [--token-file F | --token T] [--raw]
 *              [--timeout MS] [METHOD [PARAMS-JSON | KEY=VALUE...]]
 *   repose-cli [OPTIONS] watch SCENE [--since R]
 *   repose-cli [OPTIONS] cloud put SCENE NAME FILE --radius R [--voxel V] [--create]
 *   repose-cli [OPTIONS] model.put [PARAMS-JSON | KEY=VALUE...] --urdf FILE [--srdf FILE]
 *              [--package-path DIR]... [--max-spheres N] [--max-overshoot M]
 *
 * Without --unix or --host, the Unix socket is $REPOSE_SOCKET, else
 * /tmp/reposed.sock (rp_client_default_unix_path, as the Python client).
 * Over TCP without --token-file or --token, the token file is
 * $REPOSE_TOKEN_FILE when set.
 *
 * One call: prints the result as pretty JSON (2-space indent, arrays of
 * numbers such as a vec3 on one line) on stdout and exits 0, or prints the
 * error on stderr and exits 1.  Usage errors (bad options, bad params, an
 * unreadable @file or token file) exit 2; failing to connect or losing the
 * connection exits 3.  An unknown method gets a "did you mean" from the
 * daemon's own method list (`hello`).
 *
 * Params are one JSON object, or KEY=VALUE words: VALUE is used as JSON when
 * it parses as JSON, as the JSON in a file with @FILE, as the text of a file
 * (a string) with @@FILE, else as a string (`scene.create scene=cell`,
 * `model.put model=arm urdf=@@arm.urdf`).
 *
 * Without METHOD it reads `METHOD [PARAMS]` lines from stdin (with a prompt
 * only on a terminal) and prints each reply; `help` lists the methods.  When
 * stdin is not a terminal, errors name the input line.  --raw instead passes
 * request lines through unchanged and prints the reply lines unchanged.
 *
 * In PARAMS-JSON, `@path` in place of a JSON value is replaced by the
 * contents of that file (which must be valid JSON), `@@path` by its text as
 * a JSON string (which must be UTF-8).
 *
 * `watch SCENE [--since R]` (scene.watch) prints every notification the
 * daemon sends for the scene as one line of compact JSON, as it arrives,
 * until SIGINT or SIGTERM (exit 0) or the scene is deleted (exit 0 after the
 * scene.deleted line); losing the connection exits 3.
 *
 * `cloud put SCENE NAME FILE --radius R [--voxel V] [--create]` puts the
 * point cloud NAME (proto/PROTOCOL.md, Point clouds) of the points in FILE
 * (`-`: stdin), lines of x y z (cli_parse_points), through
 * rp_client_scene_put_cloud (base64 float32 on the wire), and prints the
 * result as scene.put does.  A FILE that cannot be read or parsed is a
 * usage error (2), before any connection.
 *
 * `model.put ... --urdf FILE` sends a URDF file with the bytes of the mesh
 * files its collisions name (rp_client_urdf_params: package:// filenames
 * are looked for under each --package-path DIR, then $ROS_PACKAGE_PATH;
 * other paths relative to FILE's directory), its SRDF with --srdf, and
 * the spherize options; the other words are the params as usual (the
 * model's name, safety_margin, ...).  A file or mesh that cannot be found
 * or read is a usage error (2), before any connection.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "repose/client.h"

#include "params.h"
#include "util/names.h"

/* Exit codes. */
enum {
    EXIT_OK = 0,
    EXIT_RPC = 1,    /* the server answered with an error (or nonsense) */
    EXIT_USAGE = 2,  /* bad command line, params, @file or token file */
    EXIT_CONNECT = 3 /* could not connect, or the connection was lost */
};

/* Every call waits at most this long by default (--timeout 0: forever), ms. */
#define DEFAULT_TIMEOUT_MS 30000
/* Set by CMake from the project version. */
#ifndef REPOSE_CLI_VERSION
#define REPOSE_CLI_VERSION "unknown"
#endif
/* JSON-RPC "method not found": the reply that earns a "did you mean". */
#define RPC_METHOD_NOT_FOUND (-32601)

typedef struct options {
    const char *unix_path; /* NULL with host set */
    const char *host;      /* NULL: Unix socket */
    int port;
    const char *token_file;
    const char *token; /* --token: the token itself */
    bool raw;
    int timeout_ms;
    const char *method; /* NULL: read lines from stdin */
    char **params;      /* the words after METHOD (argv entries) */
    int nparams;
} options;

/* The input line being run in piped line mode, for error messages; 0 when
 * errors need no line number (one call, or a terminal). */
static long g_line;
/* True while reading lines from stdin, where `help` is typed bare. */
static bool g_lines_mode;

/* Prints "repose-cli: [line N: ]MESSAGE\n" on stderr. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    fputs("repose-cli: ", stderr);
    if (g_line > 0)
        fprintf(stderr, "line %ld: ", g_line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: repose-cli [--unix PATH | --host H [--port P]] [--token-file F | --token T]\n"
            "                  [--raw] [--timeout MS] [METHOD [PARAMS-JSON | KEY=VALUE...]]\n"
            "       repose-cli [OPTIONS] watch SCENE [--since R]\n"
            "       repose-cli [OPTIONS] cloud put SCENE NAME FILE --radius R [--voxel V] "
            "[--create]\n"
            "       repose-cli [OPTIONS] model.put [PARAMS-JSON | KEY=VALUE...] --urdf FILE\n"
            "                  [--srdf FILE] [--package-path DIR]... [--max-spheres N]\n"
            "                  [--max-overshoot M]\n"
            "\n"
            "  --unix PATH        Unix socket (default $REPOSE_SOCKET, else %s)\n"
            "  --host H           connect over TCP to H instead\n"
            "  --port P           TCP port (default %d)\n"
            "  --token-file F     authenticate with the token in F (must not be\n"
            "                     world-readable; default over TCP: $REPOSE_TOKEN_FILE)\n"
            "  --token T          authenticate with the token T (other users may see it\n"
            "                     in the process list: prefer --token-file)\n"
            "  --raw              pass NDJSON request lines from stdin through unchanged\n"
            "                     and print reply lines unchanged\n"
            "  --timeout MS       per-call timeout (default %d; 0 waits forever)\n"
            "  -h, --help         this text\n"
            "  --version          print the version\n"
            "\n"
            "With METHOD: prints the result as JSON and exits 0; prints the error to\n"
            "stderr and exits 1.  Usage errors exit 2, connection failures 3.\n"
            "Params are one JSON object or KEY=VALUE words; a VALUE is JSON if it\n"
            "parses as JSON, @FILE for the JSON in FILE, @@FILE for the text of FILE\n"
            "as a string (UTF-8), else a string:\n"
            "  repose-cli scene.create scene=cell\n"
            "  repose-cli distance a='{\"sphere\":{\"center\":[0,0,0],\"radius\":1}}' \\\n"
            "                      b='{\"sphere\":{\"center\":[3,0,0],\"radius\":1}}'\n"
            "  repose-cli scene.put scene=cell shapes=@shapes.json\n"
            "  repose-cli model.put model=arm urdf=@@arm.urdf srdf=@@arm.srdf\n"
            "  repose-cli model.get model=arm      # its joints, in joint-vector order\n"
            "  repose-cli check model=arm scene=cell \\\n"
            "                   joints='[0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0.02]'\n"
            "  repose-cli scene.put scene=cell \\\n"
            "             objects='{\"cart\":{\"shapes\":{\"s\":"
            "{\"sphere\":{\"center\":[0,0,0],\"radius\":0.1}}}}}'\n"
            "  repose-cli scene.move scene=cell objects='{\"cart\":{\"translation\":[1,0,0.5]}}'\n"
            "A robot instance: the model placed at joint values and a base pose, its\n"
            "link shapes scene shapes \"r1/<shape id>\"; moved by joints (by name or as\n"
            "model.get orders them) and/or base; the model is in use until it goes:\n"
            "  repose-cli scene.put scene=cell \\\n"
            "             robots='{\"r1\":{\"model\":\"arm\","
            "\"base\":{\"translation\":[2,0,0]}}}'\n"
            "  repose-cli scene.move scene=cell "
            "robots='{\"r1\":{\"joints\":{\"arm7_joint1\":0.5}}}'\n"
            "  repose-cli scene.get scene=cell ids='[\"r1/arm7_link1#0\"]'\n"
            "  repose-cli scene.remove scene=cell ids='[\"r1\"]'\n"
            "A point cloud: spheres of radius R, one per point of FILE (lines of x y z\n"
            "in metres; - reads stdin) or, with --voxel V, one per occupied cell of V\n"
            "metres; the scene shapes \"NAME/k\", replaced whole by the next put of\n"
            "NAME (sent as float32; --create makes a missing scene):\n"
            "  repose-cli cloud put cell cam points.xyz --radius 0.01 --voxel 0.02\n"
            "  repose-cli scene.remove scene=cell ids='[\"cam\"]'\n"
            "A URDF whose collisions are meshes (STL, OBJ, Collada): --urdf sends the\n"
            "file with the bytes of every mesh its <collision>s name, which the daemon\n"
            "covers with spheres (LINK#s0, LINK#s1, ...; model.get lists mesh_covers).\n"
            "package://PKG/PATH is PKG/PATH under a --package-path DIR (or DIR/PATH\n"
            "when DIR is named PKG), then under $ROS_PACKAGE_PATH's directories; a\n"
            "relative filename is relative to the URDF's directory.  --max-spheres N\n"
            "(1..1024, default 16) is the spheres per link, --max-overshoot M (metres)\n"
            "asks for the first of 1, 2, 4, ... spheres that stay within M of the mesh:\n"
            "  repose-cli model.put model=mesh_arm \\\n"
            "      --urdf tests/data/mesh_arm/mesh_arm_description/urdf/mesh_arm.urdf \\\n"
            "      --package-path tests/data/mesh_arm --max-spheres 24\n"
            "  repose-cli model.put '{\"model\":\"mesh_arm\",\"safety_margin\":0.01}' \\\n"
            "      --urdf tests/data/mesh_arm/mesh_arm_description/urdf/mesh_arm.urdf \\\n"
            "      --srdf tests/data/mesh_arm/mesh_arm_description/srdf/mesh_arm.srdf \\\n"
            "      --package-path tests/data/mesh_arm --max-overshoot 0.01\n"
            "In PARAMS-JSON, @FILE as a value is replaced by the JSON in FILE, @@FILE\n"
            "by the text of FILE as a string:\n"
            "  repose-cli scene.put '{\"scene\":\"cell\",\"shapes\":@shapes.json}'\n"
            "  repose-cli model.put '{\"model\":\"arm\",\"urdf\":@@arm.urdf}'\n"
            "Without METHOD: reads `METHOD [PARAMS]` lines from stdin; `help` lists\n"
            "the daemon's methods, `quit` leaves (on a terminal).\n"
            "`repose-cli help` lists the methods; `repose-cli ping` exits 0 only when\n"
            "the daemon answers.\n"
            "`repose-cli watch SCENE` prints each change notification of SCENE as one\n"
            "line of JSON (scene.changed, scene.resync, scene.deleted) until Ctrl-C\n"
            "(exit 0) or the scene is deleted (exit 0); --since R first replays the\n"
            "changes after revision R (or sends scene.resync when they are gone).\n",
            RP_CLIENT_DEFAULT_UNIX_PATH, RP_CLIENT_DEFAULT_PORT, DEFAULT_TIMEOUT_MS);
    fprintf(f, "\n"
               "Environment: REPOSE_SOCKET (the Unix socket when neither --unix nor --host\n"
               "is given), REPOSE_TOKEN_FILE (the token file over TCP when neither\n"
               "--token-file nor --token is given), ROS_PACKAGE_PATH (directories searched\n"
               "for package:// mesh filenames after --package-path).\n");
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
    /* Options come before METHOD; no method name starts with '-'. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--version") == 0) {
            printf("repose-cli %s\n", REPOSE_CLI_VERSION);
            return EXIT_OK;
        }
        if (strcmp(a, "--raw") == 0) {
            o->raw = true;
            continue;
        }
        bool takes = strcmp(a, "--unix") == 0 || strcmp(a, "--host") == 0 ||
                     strcmp(a, "--port") == 0 || strcmp(a, "--token-file") == 0 ||
                     strcmp(a, "--token") == 0 || strcmp(a, "--timeout") == 0;
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
        } else if (strcmp(a, "--token") == 0) {
            if (!*v) {
                fprintf(stderr, "repose-cli: --token needs a token, not ''\n");
                return EXIT_USAGE;
            }
            o->token = v;
        } else if (!parse_int(v, 0, 1 << 30, &o->timeout_ms)) {
            fprintf(stderr, "repose-cli: --timeout must be a number of ms >= 0, not '%s'\n", v);
            return EXIT_USAGE;
        }
    }
    if (o->unix_path && (o->host || port_set)) {
        fprintf(stderr, "repose-cli: --unix and --host/--port exclude each other\n");
        return EXIT_USAGE;
    }
    if (o->token && o->token_file) {
        fprintf(stderr, "repose-cli: --token and --token-file exclude each other\n");
        return EXIT_USAGE;
    }
    if (port_set && !o->host)
        o->host = "127.0.0.1";
    if (!o->host && !o->unix_path)
        o->unix_path = rp_client_default_unix_path();
    /* Unix sockets never need auth (proto/PROTOCOL.md, auth): the token
     * file of the environment is for TCP only. */
    const char *env_token = getenv("REPOSE_TOKEN_FILE");
    if (o->host && !o->token && !o->token_file && env_token && *env_token)
        o->token_file = env_token;
    if (i < argc)
        o->method = argv[i++];
    o->params = argv + i;
    o->nparams = argc - i;
    if (o->raw && o->method) {
        fprintf(stderr, "repose-cli: --raw reads requests from stdin; give no METHOD\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- files ----------------------------------------------------------------------- */

/* Reads all of f (NUL-terminated, malloc'ed: the caller frees it), its
 * length in *len; NULL with errno set. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, used = 0;
    errno = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - used < 2) {
            char *nb = cap < SIZE_MAX / 2 ? realloc(buf, 2 * cap) : NULL;
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used - 1, f);
        used += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno ? errno : EIO; /* EISDIR for a directory, ... */
                free(buf);
                errno = e;
                return NULL;
            }
            break;
        }
    }
    if (buf) {
        buf[used] = '\0';
        *len = used;
    }
    return buf;
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
        case '[': {
            /* An array of numbers only (a vec3, a matrix row, a joint
             * vector) stays on one line: [1, 2, 3]. */
            const char *q = p + 1;
            bool digit = false;
            for (; *q && strchr("0123456789+-.eE, \t\r\n", *q); q++)
                digit = digit || (*q >= '0' && *q <= '9');
            if (*q == ']' && digit) {
                fputc('[', f);
                for (const char *r = p + 1; r < q; r++)
                    if (*r == ',')
                        fputs(", ", f);
                    else if (!strchr(" \t\r\n", *r))
                        fputc(*r, f);
                fputc(']', f);
                p = q;
                break;
            }
        }
        /* fall through */
        case '{': {
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
        if (g_line > 0)
            fprintf(stderr, "repose-cli: line %ld: ", g_line);
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
        say("%s", err->message);
        return EXIT_CONNECT;
    case RP_CLIENT_ARG:
        say("%s", err->message);
        return EXIT_USAGE;
    default:
        say("%s error: %s", rp_client_error_kind_name(err->kind), err->message);
        return EXIT_RPC;
    }
}

/* ---- running -------------------------------------------------------------------------- */

/* Connects (and authenticates) as the options say; NULL after a message,
 * with *code set to the exit code: 2 for a token file that cannot be used
 * (rp_client_auth_file reads it), 3 when the daemon cannot be reached, 1
 * when it refuses the token. */
static rp_client *open_client(const options *o, int *code)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    rp_client *c = o->host ? rp_client_connect_tcp(o->host, o->port, o->timeout_ms, &err)
                           : rp_client_connect_unix(o->unix_path, o->timeout_ms, &err);
    if (!c) {
        *code = report(&err);
        if (*code != EXIT_USAGE)
            *code = EXIT_CONNECT;
        rp_client_error_free(&err);
        return NULL;
    }
    rp_client_error_kind k = RP_CLIENT_OK;
    if (o->token)
        k = rp_client_auth(c, o->token, &err);
    else if (o->token_file)
        k = rp_client_auth_file(c, o->token_file, &err);
    if (k != RP_CLIENT_OK) {
        if (k != RP_CLIENT_ARG)
            fputs("repose-cli: auth failed: ", stderr);
        *code = report(&err);
        rp_client_close(c);
        c = NULL;
    }
    rp_client_error_free(&err);
    return c;
}

/* Asks the daemon for its method list (`hello`).  On success *hello holds
 * the parsed result (the caller deletes it) and the list is returned; NULL
 * with err filled otherwise (RP_CLIENT_PROTOCOL when there is no list). */
static const cJSON *daemon_methods(rp_client *c, cJSON **hello, rp_client_error *err)
{
    char *result = NULL;
    *hello = NULL;
    if (rp_client_call(c, "hello", NULL, &result, err) != RP_CLIENT_OK)
        return NULL;
    *hello = cJSON_Parse(result);
    free(result);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(*hello, "methods");
    if (!cJSON_IsArray(m)) {
        rp_client_error_free(err);
        err->kind = RP_CLIENT_PROTOCOL;
        snprintf(err->message, sizeof err->message, "the hello reply has no methods list");
        return NULL;
    }
    return m;
}

/* After "method not found": prints the daemon's methods nearest to the one
 * asked for, when any is near (rp_name_is_near: at most 2 edits, or a third
 * of the name); the daemon's own data.suggestion names only the first. */
static void suggest_method(rp_client *c, const char *method)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *hello = NULL;
    const cJSON *methods = daemon_methods(c, &hello, &err);
    size_t best = SIZE_MAX;
    const cJSON *m;
    cJSON_ArrayForEach(m, methods)
    {
        if (cJSON_IsString(m)) {
            size_t d = rp_name_distance(method, m->valuestring);
            if (d < best)
                best = d;
        }
    }
    size_t len = strlen(method);
    if (methods && best > 0 && rp_name_is_near(best, len)) {
        /* At most three of the nearest, in the daemon's (sorted) order. */
        char list[256] = "";
        int shown = 0, ties = 0;
        cJSON_ArrayForEach(m, methods)
        {
            if (!cJSON_IsString(m) || rp_name_distance(method, m->valuestring) != best)
                continue;
            if (++ties > 3)
                continue;
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s'%s'", shown ? " or " : "",
                     m->valuestring);
            shown++;
        }
        say("did you mean %s?", list);
    } else if (methods && best == 0) {
        /* Only the case differs: method names are case-sensitive. */
        cJSON_ArrayForEach(m, methods)
        {
            if (cJSON_IsString(m) && rp_name_distance(method, m->valuestring) == 0) {
                say("did you mean '%s'? (method names are case-sensitive)", m->valuestring);
                break;
            }
        }
    } else {
        say("no method is near '%s'; `%s` lists them", method,
            g_lines_mode ? "help" : "repose-cli help");
    }
    cJSON_Delete(hello);
    rp_client_error_free(&err);
}

/* `help`: lists the daemon's methods on stdout.  Returns the exit code. */
static int print_methods(rp_client *c)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    cJSON *hello = NULL;
    const cJSON *methods = daemon_methods(c, &hello, &err);
    int code = EXIT_OK;
    if (!methods) {
        code = report(&err);
    } else {
        const cJSON *server = cJSON_GetObjectItemCaseSensitive(hello, "server");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(hello, "version");
        printf("methods of %s %s:\n", cJSON_IsString(server) ? server->valuestring : "the daemon",
               cJSON_IsString(version) ? version->valuestring : "");
        const cJSON *m;
        cJSON_ArrayForEach(m, methods)
        {
            if (cJSON_IsString(m))
                printf("  %s\n", m->valuestring);
        }
        printf("call one as METHOD [PARAMS-JSON | KEY=VALUE...], e.g. scene.create scene=cell\n"
               "(proto/PROTOCOL.md describes each method's params)\n");
        fflush(stdout);
    }
    cJSON_Delete(hello);
    rp_client_error_free(&err);
    return code;
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
        if (k == RP_CLIENT_RPC && err.code == RPC_METHOD_NOT_FOUND)
            suggest_method(c, method);
        /* A URDF with meshes sent as text (urdf=@@FILE): the daemon asks for
         * the files, which --urdf reads. */
        if (k == RP_CLIENT_RPC && strcmp(method, "model.put") == 0 && err.data &&
            strstr(err.data, "\"params.meshes\""))
            say("to send a URDF with its mesh files, give it as --urdf FILE "
                "[--package-path DIR] (see --help)");
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

/* Prints the notifications that have arrived (after a scene.watch in the
 * lines), one compact JSON line each, waiting at most wait_ms for each
 * next one.  Returns EXIT_CONNECT when the connection broke, else
 * EXIT_OK. */
static int print_arrived_notifications(rp_client *c, int wait_ms)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    int code = EXIT_OK;
    for (;;) {
        rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
        rp_client_error_kind k = rp_client_next_notification(c, wait_ms, &n, &err);
        if (k == RP_CLIENT_OK) {
            puts(n.line);
            rp_client_notification_free(&n);
            continue;
        }
        if (k != RP_CLIENT_TIMEOUT)
            code = report(&err) == EXIT_CONNECT ? EXIT_CONNECT : EXIT_OK;
        break;
    }
    fflush(stdout);
    rp_client_error_free(&err);
    return code;
}

/* Reads `METHOD [PARAMS]` lines from stdin; `help` lists the methods.
 * Errors name the line (when stdin is not a terminal).  Notifications of
 * watches opened in the lines are printed as they are found: before each
 * prompt, and once more at the end.  Exits with 3 when the connection is
 * lost, else 1 when any call failed, else 0. */
static int run_lines(rp_client *c)
{
    bool tty = isatty(STDIN_FILENO);
    int worst = EXIT_OK;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    bool watched = false; /* a scene.watch succeeded */
    g_lines_mode = true;
    for (;;) {
        if (print_arrived_notifications(c, 0) == EXIT_CONNECT) {
            worst = EXIT_CONNECT;
            break;
        }
        if (tty) {
            fputs("repose> ", stdout);
            fflush(stdout);
        }
        g_line = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0)
            break;
        lineno++;
        g_line = tty ? 0 : lineno;
        char *method, *p;
        if (!cli_split_line(line, &method, &p))
            continue;
        if (tty && (strcmp(method, "quit") == 0 || strcmp(method, "exit") == 0))
            break;
        int code;
        if (strcmp(method, "help") == 0 && !*p) {
            code = print_methods(c);
        } else {
            bool bad = false;
            char why[CLI_WHY_MAX];
            char *params = cli_line_params(p, &bad, why);
            if (bad) {
                say("%s", why);
                worst = worst == EXIT_OK ? EXIT_RPC : worst;
                continue;
            }
            code = run_call(c, method, params);
            free(params);
            watched |= code == EXIT_OK && strcmp(method, "scene.watch") == 0;
        }
        if (code == EXIT_CONNECT) {
            worst = EXIT_CONNECT;
            break;
        }
        if (code != EXIT_OK)
            worst = EXIT_RPC;
    }
    /* The daemon sends notifications a moment after the mutation's reply
     * (PROTOCOL.md): with a watch open, give the last ones time to come. */
    if (worst != EXIT_CONNECT)
        print_arrived_notifications(c, watched ? 200 : 0);
    g_line = 0;
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

/* ---- watch ------------------------------------------------------------------------------ */

/* Set by SIGINT / SIGTERM: `watch` ends cleanly. */
static volatile sig_atomic_t g_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* How long one wait for a notification lasts before the stop flag is
 * looked at again, ms (the client retries a poll() a signal interrupts). */
#define WATCH_POLL_MS 100

/* `watch SCENE [--since R]`: scene.watch, then every notification as one
 * line of compact JSON (the daemon's own line) until a signal or
 * scene.deleted.  Returns the exit code. */
static int run_watch(rp_client *c, const char *scene, const uint64_t *since)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    uint64_t watch = 0, revision = 0;
    if (rp_client_scene_watch(c, scene, since, &watch, &revision, &err) != RP_CLIENT_OK) {
        int code = report(&err);
        rp_client_error_free(&err);
        return code;
    }
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "repose-cli: watching scene '%s' at revision %llu (Ctrl-C ends)\n", scene,
                (unsigned long long)revision);
    int code = EXIT_OK;
    while (!g_stop) {
        rp_client_notification n = RP_CLIENT_NOTIFICATION_INIT;
        rp_client_error_kind k = rp_client_next_notification(c, WATCH_POLL_MS, &n, &err);
        if (k == RP_CLIENT_TIMEOUT)
            continue;
        if (k != RP_CLIENT_OK) {
            code = report(&err);
            break;
        }
        fputs(n.line, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        bool over = n.watch == watch && strcmp(n.method, "scene.deleted") == 0;
        rp_client_notification_free(&n);
        if (over)
            break;
    }
    rp_client_error_free(&err);
    return code;
}

/* Reads `SCENE [--since R]` from the words after `watch`.  Returns -1 to
 * go on, else the exit code after a message. */
static int watch_args(char **words, int n, const char **scene, uint64_t *since, bool *has_since)
{
    *scene = NULL;
    *has_since = false;
    for (int i = 0; i < n; i++) {
        if (strcmp(words[i], "--since") == 0) {
            char *end;
            errno = 0;
            unsigned long long v = i + 1 < n ? strtoull(words[i + 1], &end, 10) : 0;
            if (i + 1 >= n || errno || end == words[i + 1] || *end || words[i + 1][0] == '-') {
                say("watch: --since needs a revision (an integer >= 0)");
                return EXIT_USAGE;
            }
            *since = v;
            *has_since = true;
            i++;
        } else if (!*scene && words[i][0] != '-') {
            *scene = words[i];
        } else {
            say("watch: unexpected '%s' (usage: watch SCENE [--since R])", words[i]);
            return EXIT_USAGE;
        }
    }
    if (!*scene) {
        say("watch: which scene? (usage: watch SCENE [--since R])");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- cloud put ----------------------------------------------------------------------- */

/* What `cloud put` was given. */
typedef struct cloud_opts {
    const char *scene, *name, *file;
    double radius, voxel;
    bool create;
    float *xyz; /* the file's points, malloc'ed (cli_parse_points) */
    size_t n;
} cloud_opts;

/* A finite number for --radius or --voxel, else false. */
static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

#define CLOUD_USAGE "cloud put SCENE NAME FILE --radius R [--voxel V] [--create]"

/* Reads `put SCENE NAME FILE --radius R [--voxel V] [--create]` from the
 * words after `cloud`, then the points of FILE.  Returns -1 to go on, else
 * the exit code after a message. */
static int cloud_args(char **words, int n, cloud_opts *o)
{
    memset(o, 0, sizeof *o);
    if (n == 0 || strcmp(words[0], "put") != 0) {
        say("cloud: %s%s%s (usage: " CLOUD_USAGE ")", n ? "unknown command '" : "which command?",
            n ? words[0] : "", n ? "'" : "");
        return EXIT_USAGE;
    }
    const char *pos[3] = {NULL, NULL, NULL};
    int npos = 0;
    bool has_radius = false;
    for (int i = 1; i < n; i++) {
        const char *w = words[i];
        if (strcmp(w, "--create") == 0) {
            o->create = true;
        } else if (strcmp(w, "--radius") == 0 || strcmp(w, "--voxel") == 0) {
            bool radius = w[2] == 'r';
            if (i + 1 >= n || !parse_double(words[i + 1], radius ? &o->radius : &o->voxel)) {
                say("cloud put: %s needs a number of metres%s%s%s", w, i + 1 < n ? ", not '" : "",
                    i + 1 < n ? words[i + 1] : "", i + 1 < n ? "'" : "");
                return EXIT_USAGE;
            }
            has_radius |= radius;
            i++;
        } else if ((w[0] != '-' || strcmp(w, "-") == 0) && npos < 3) {
            pos[npos++] = w;
        } else {
            say("cloud put: unexpected '%s' (usage: " CLOUD_USAGE ")", w);
            return EXIT_USAGE;
        }
    }
    if (npos < 3 || !has_radius) {
        say("cloud put: %s (usage: " CLOUD_USAGE ")",
            npos < 3 ? "SCENE, NAME and FILE are needed" : "--radius is needed");
        return EXIT_USAGE;
    }
    o->scene = pos[0];
    o->name = pos[1];
    o->file = pos[2];
    bool in = strcmp(o->file, "-") == 0;
    FILE *f = in ? stdin : fopen(o->file, "rb");
    size_t len = 0;
    char *text = f ? read_all(f, &len) : NULL;
    int e = errno;
    if (f && !in)
        fclose(f);
    if (!text) {
        say("cloud put: cannot read %s: %s", in ? "stdin" : o->file, strerror(e));
        return EXIT_USAGE;
    }
    char why[CLI_WHY_MAX];
    o->xyz = cli_parse_points(text, len, &o->n, why);
    free(text);
    if (!o->xyz) {
        say("cloud put: %s: %s", in ? "stdin" : o->file, why);
        return EXIT_USAGE;
    }
    return -1;
}

/* `cloud put`: rp_client_scene_put_cloud, then the result as scene.put
 * prints it ({"scene", "revision"}).  Returns the exit code. */
static int run_cloud_put(rp_client *c, const cloud_opts *o)
{
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    uint64_t revision = 0;
    int code = EXIT_OK;
    if (rp_client_scene_put_cloud(c, o->scene, o->name, o->xyz, o->n, o->radius, o->voxel,
                                  o->create, NULL, &revision, &err) != RP_CLIENT_OK) {
        code = report(&err);
    } else {
        cJSON *r = cJSON_CreateObject();
        char *text = NULL;
        if (r && cJSON_AddStringToObject(r, "scene", o->scene) &&
            cJSON_AddNumberToObject(r, "revision", (double)revision))
            text = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
        if (!text) {
            say("out of memory");
            code = EXIT_RPC;
        } else {
            print_pretty(stdout, text);
            fflush(stdout);
            free(text);
        }
    }
    rp_client_error_free(&err);
    return code;
}

/* ---- model.put --urdf ------------------------------------------------------------ */

/* Replaces *params (the params JSON from the other words, or NULL) by the
 * same object with the URDF's files added (rp_client_urdf_params).
 * Returns -1 to go on, else the exit code after a message. */
static int urdf_params(const cli_urdf_flags *f, char **params)
{
    cJSON *obj = *params ? cJSON_Parse(*params) : cJSON_CreateObject();
    free(*params);
    *params = NULL;
    if (!obj) {
        say("out of memory");
        return EXIT_RPC;
    }
    rp_client_urdf_files src = {f->urdf,           f->srdf,        f->package_path,
                                f->n_package_path, f->max_spheres, f->max_overshoot};
    rp_client_error err = RP_CLIENT_ERROR_INIT;
    int code = -1;
    if (rp_client_urdf_params(&src, obj, &err) != RP_CLIENT_OK) {
        say("model.put: %s", err.message);
        code = err.kind == RP_CLIENT_ARG ? EXIT_USAGE : EXIT_RPC;
    } else {
        char *text = cJSON_PrintUnformatted(obj);
        if (!text) {
            say("out of memory");
            code = EXIT_RPC;
        } else {
            /* cJSON's allocator is malloc here (the library never changes
             * its hooks), and the caller frees params with free(). */
            *params = text;
        }
    }
    cJSON_Delete(obj);
    rp_client_error_free(&err);
    return code;
}

int main(int argc, char **argv)
{
    options o;
    int code = parse_args(argc, argv, &o);
    if (code >= 0)
        return code;
    /* `watch` is the CLI's own command (daemon methods have a dot). */
    bool watch = o.method && strcmp(o.method, "watch") == 0;
    const char *scene = NULL;
    uint64_t since = 0;
    bool has_since = false;
    if (watch && (code = watch_args(o.params, o.nparams, &scene, &since, &has_since)) >= 0)
        return code;
    /* So is `cloud`; its FILE is read before connecting. */
    bool cloud = o.method && strcmp(o.method, "cloud") == 0;
    cloud_opts co = {0};
    if (cloud && (code = cloud_args(o.params, o.nparams, &co)) >= 0)
        return code;
    /* Bad params are a usage error even when no daemon runs. */
    bool bad = false;
    char why[CLI_WHY_MAX];
    bool help = o.method && strcmp(o.method, "help") == 0 && o.nparams == 0;
    /* model.put --urdf FILE: its files are read before connecting too. */
    cli_urdf_flags uf = {0};
    if (o.method && strcmp(o.method, "model.put") == 0) {
        int left = cli_take_urdf_flags(o.params, o.nparams, &uf, why);
        if (left < 0) {
            say("model.put: %s", why);
            return EXIT_USAGE;
        }
        o.nparams = left;
    }
    char *params =
        o.method && !watch && !cloud ? cli_words_params(o.params, o.nparams, &bad, why) : NULL;
    if (bad) {
        say("%s", why);
        free(uf.package_path);
        return EXIT_USAGE;
    }
    if (uf.urdf && (code = urdf_params(&uf, &params)) >= 0) {
        free(uf.package_path);
        return code;
    }
    free(uf.package_path);
    rp_client *c = open_client(&o, &code);
    if (!c) {
        free(params);
        free(co.xyz);
        return code;
    }
    if (o.raw)
        code = run_raw(c);
    else if (help)
        code = print_methods(c);
    else if (watch)
        code = run_watch(c, scene, has_since ? &since : NULL);
    else if (cloud)
        code = run_cloud_put(c, &co);
    else if (o.method)
        code = run_call(c, o.method, params);
    else
        code = run_lines(c);
    free(params);
    free(co.xyz);
    rp_client_close(c);
    if (fflush(stdout) != 0 && code == EXIT_OK)
        code = EXIT_RPC;
    return code;
}
