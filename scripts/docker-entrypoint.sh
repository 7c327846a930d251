#!/bin/sh
# SPDX-License-Identifier: MIT
# The container's entrypoint (see Dockerfile).  reposed's listeners come from
# the environment, so that the HEALTHCHECK (this script with the argument
# `healthcheck`) probes the socket or port the daemon really listens on:
#
#   REPOSED_UNIX        Unix socket path, or none  (default /run/reposed/reposed.sock)
#   REPOSED_TCP         HOST:PORT, or none         (default 0.0.0.0:7411)
#   REPOSED_TOKEN_FILE  token file for TCP clients, passed as --token-file
#                       when REPOSED_TCP is not none (default
#                       /run/secrets/reposed_token; empty: no token).  When
#                       it is missing the container stops at once (exit 2)
#                       with a message saying that REPOSED_TCP=none runs
#                       Unix-only, with no token.
#   REPOSED_DATA_DIR    where the store is kept, passed as --data-dir
#                       (default /var/lib/reposed, a volume; empty: memory only)
#   REPOSED_NATS        NATS URLs: run as a replica of a store shared through
#                       NATS JetStream, passed as --nats with
#   REPOSED_STORE       the store's name (--store; required with REPOSED_NATS).
#                       REPOSED_DATA_DIR is its cache of the stream: a
#                       restart reads only what it missed.
#   REPOSED_HTTP        HOST:PORT for --http (the viewer, /metrics, /healthz; default:
#                       off); a host other than loopback adds --insecure-http
#                       (a published port needs 0.0.0.0: publish it on the
#                       host's loopback, -p 127.0.0.1:PORT:PORT, or set a token)
#   REPOSED_LOG_FORMAT  text or json, passed as --log-format (default: not
#                       passed, text): json writes one object a line for
#                       log collectors (docs/ARCHITECTURE.md, "Logs").
#
# Other reposed flags follow the image name: docker run ... reposed --log-level debug.
# --unix and --tcp there are refused: the health check could not follow them.
# A command instead of flags is run as is (docker run ... reposed repose-cli ping).
set -eu

unix=${REPOSED_UNIX:-/run/reposed/reposed.sock}
tcp=${REPOSED_TCP:-0.0.0.0:7411}
token=${REPOSED_TOKEN_FILE-/run/secrets/reposed_token}
data=${REPOSED_DATA_DIR-/var/lib/reposed}
nats=${REPOSED_NATS:-}
store=${REPOSED_STORE:-}

if [ "${1:-}" = healthcheck ]; then
  # Prefer the Unix socket; ping needs no token on either listener.  Docker
  # reads exit 1 as unhealthy (2 is reserved), so every failure is 1.
  if [ "$unix" != none ]; then
    repose-cli --unix "$unix" --timeout 2000 ping >/dev/null || exit 1
    exit 0
  fi
  port=${tcp##*:}
  host=${tcp%:*}
  case $host in
    '' | 0.0.0.0) host=127.0.0.1 ;; # any IPv4 address: loopback answers
    '[::]') host=::1 ;;
    '['*']') host=${host#[}; host=${host%]} ;;
  esac
  repose-cli --host "$host" --port "$port" --timeout 2000 ping >/dev/null || exit 1
  exit 0
fi

case ${1:-} in
  '' | -*) ;;
  *) exec "$@" ;;
esac

for a in "$@"; do
  case $a in
    --unix | --unix=* | --tcp | --tcp=*)
      echo "docker-entrypoint: set REPOSED_UNIX / REPOSED_TCP (docker run -e) instead of $a:" \
        "the HEALTHCHECK reads them" >&2
      exit 2
      ;;
    --token-file | --token-file=*) token= ;; # given explicitly: do not add ours
    --data-dir | --data-dir=*) data= ;;
  esac
done
if [ -n "$nats" ]; then
  if [ -z "$store" ]; then
    echo "docker-entrypoint: REPOSED_NATS is set: set REPOSED_STORE to the store's name too" >&2
    exit 2
  fi
  set -- --nats "$nats" --store "$store" "$@"
fi
if [ -n "$data" ]; then
  set -- --data-dir "$data" "$@"
fi
if [ "$tcp" != none ] && [ -n "$token" ]; then
  # Say what to do instead of letting reposed fail on a file that is not
  # there: `docker run IMAGE` with no options lands here.
  if [ ! -e "$token" ] || [ ! -r "$token" ]; then
    if [ -e "$token" ]; then why="is not readable by uid $(id -u)"; else why="does not exist"; fi
    cat >&2 <<MSG
docker-entrypoint: TCP is on (REPOSED_TCP=$tcp) and needs a token file, but
  $token $why.  Either:
  - run Unix-only, with no token: docker run -e REPOSED_TCP=none -v reposed-run:/run/reposed ...
    (clients mount the same volume and connect to ${unix});
  - or mount a token file (one line, readable by uid 10001, not world-readable):
    docker run -v "\$PWD/token:$token:ro" -p 127.0.0.1:7411:7411 ...
    (or name another path with -e REPOSED_TOKEN_FILE=...).
See README.md, "In a container", and examples/compose.yaml.
MSG
    exit 2
  fi
  set -- --token-file "$token" "$@"
fi
if [ -n "${REPOSED_HTTP:-}" ]; then
  case ${REPOSED_HTTP%:*} in
    127.* | localhost | '[::1]') set -- --http "$REPOSED_HTTP" "$@" ;;
    *) set -- --http "$REPOSED_HTTP" --insecure-http "$@" ;;
  esac
fi
if [ -n "${REPOSED_LOG_FORMAT:-}" ]; then
  set -- --log-format "$REPOSED_LOG_FORMAT" "$@"
fi
exec reposed --unix "$unix" --tcp "$tcp" "$@"
