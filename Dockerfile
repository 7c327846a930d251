# SPDX-License-Identifier: MIT
# reposed in a container: a multi-stage build on Debian 12.
#
#   docker build -t reposed .
#
# Listeners come from the environment (scripts/docker-entrypoint.sh), and the
# HEALTHCHECK probes the same ones:
#   REPOSED_UNIX        default /run/reposed/reposed.sock (in the volume), or none
#   REPOSED_TCP         default 0.0.0.0:7411, or none
#   REPOSED_TOKEN_FILE  default /run/secrets/reposed_token, used while TCP is on
#
# With no options TCP is on and needs a token file: without one the
# container stops at once, saying so (scripts/docker-entrypoint.sh).
# Unix socket only, in a volume shared with the clients (no network, no token):
#   docker run -d --name reposed -e REPOSED_TCP=none -v reposed-run:/run/reposed reposed
# examples/compose.yaml does the same with Compose, with two clients.
#
# The daemon runs as uid 10001, gid 10001; the socket is mode 0660 in a 0770
# directory, both owned by 10001:10001.  A client container that mounts the
# volume must run with gid 10001 (as its group or an extra one) or uid 10001:
#   docker run --rm --user 1000:1000 --group-add 10001 -v reposed-run:/run/reposed \
#       reposed repose-cli --unix /run/reposed/reposed.sock ping
#
# TCP on the container's network needs a token.  The file must be readable by
# uid 10001 and not by everyone (reposed refuses a world-readable token):
#   od -An -tx1 -N32 /dev/urandom | tr -d ' \n' | sudo install -m 0400 -o 10001 -g 10001 /dev/stdin ./token
#   docker run -d --name reposed -p 127.0.0.1:7411:7411 \
#       -v "$PWD/token:/run/secrets/reposed_token:ro" reposed
# Clients then call `auth` with the token first (repose-cli --token-file).
#
# HTTP (the viewer at /, /metrics for Prometheus, /healthz) is off unless REPOSED_HTTP names
# an address, e.g. -e REPOSED_HTTP=0.0.0.0:9464 -p 127.0.0.1:9464:9464: the
# entrypoint then passes --http and, for an address other than loopback
# (which a published port needs), --insecure-http.  No port is EXPOSEd for
# it: `-p` publishes it when it is on.  With a token file, /metrics wants
# "Authorization: Bearer TOKEN".
#
# Health: `docker inspect --format '{{.State.Health.Status}}' reposed`
# (`repose-cli ping` inside the container, on REPOSED_UNIX, or on REPOSED_TCP
# when the Unix socket is off).  `docker stop` sends SIGTERM: reposed flushes
# replies and exits 0.

# ---- build stage: compilers and -dev packages ------------------------------
FROM debian:12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        build-essential cmake pkg-config libuv1-dev libcjson-dev libexpat1-dev \
        libnats-dev libassimp-dev libsleef-dev libwebsockets-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the library, the daemon and the cli need (no tests, no benches).
COPY CMakeLists.txt ./
COPY cmake ./cmake
COPY include ./include
COPY src ./src
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
          -DREPOSE_BUILD_TESTS=OFF -DREPOSE_BUILD_BENCH=OFF -DREPOSE_BUILD_EXAMPLES=OFF \
 && cmake --build build -j"$(nproc)" \
 && cmake --install build --prefix /opt/repose --strip
# Stage the two programs and those of repose's own shared libraries they load
# (today none: reposed and repose-cli link repose statically).  System
# libraries come from Debian packages in the runtime stage.
RUN mkdir -p /stage/bin /stage/lib \
 && cp /opt/repose/bin/reposed /opt/repose/bin/repose-cli /stage/bin/ \
 && for lib in $(LD_LIBRARY_PATH=/opt/repose/lib ldd /stage/bin/* \
                 | awk '$3 ~ /^\/opt\/repose\// { print $3 }' | sort -u); do \
        cp -a "$lib" "$(readlink -f "$lib")" /stage/lib/; \
    done

# ---- runtime stage: the programs and the shared libraries they load --------
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libuv1 libcjson1 libexpat1 libnats3.4 libassimp5 \
        libsleef3 libwebsockets17 libwebsockets-evlib-uv \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/reposed /var/lib/reposed \
 && chown 10001:10001 /run/reposed /var/lib/reposed \
 && chmod 0770 /run/reposed \
 && chmod 0700 /var/lib/reposed
COPY --from=build /stage/bin/ /usr/local/bin/
COPY --from=build /stage/lib/ /usr/local/lib/
COPY scripts/docker-entrypoint.sh /usr/local/bin/docker-entrypoint
# The licence travels with the programs (MIT asks for the notice).
COPY LICENSE /usr/share/doc/repose/LICENSE
# Fail the build, not the first start, when a library is missing.
RUN ldconfig \
 && if ldd /usr/local/bin/reposed /usr/local/bin/repose-cli | grep 'not found'; then exit 1; fi

ENV REPOSED_UNIX=/run/reposed/reposed.sock \
    REPOSED_TCP=0.0.0.0:7411 \
    REPOSED_TOKEN_FILE=/run/secrets/reposed_token \
    REPOSED_DATA_DIR=/var/lib/reposed
# A fixed, unprivileged uid and gid (no account needed); the socket directory
# is a volume so that clients in other containers can reach the Unix socket;
# /var/lib/reposed holds the store's journal (REPOSED_DATA_DIR= empty keeps
# the store in memory only).
USER 10001:10001
VOLUME ["/run/reposed", "/var/lib/reposed"]
EXPOSE 7411
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["docker-entrypoint", "healthcheck"]
ENTRYPOINT ["docker-entrypoint"]
# Arguments after the image name go to reposed (e.g. --log-level debug);
# -e REPOSED_LOG_FORMAT=json makes every log line one JSON object.
CMD []
