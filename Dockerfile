# reposed in a container: a multi-stage build on Debian 12.
#
#   docker build -t reposed .
#
# Unix socket only, in a volume shared with the clients (no network):
#   docker run -d --name reposed -v reposed-run:/run/reposed reposed \
#       --unix /run/reposed/reposed.sock --tcp none
#
# TCP on the container's network needs a token.  The file must be readable by
# uid 10001 and not by everyone (reposed refuses a world-readable token):
#   install -m 0400 -o 10001 -g 10001 /dev/stdin ./token <<< "$(openssl rand -hex 32)"
#   docker run -d --name reposed -p 127.0.0.1:7411:7411 \
#       -v "$PWD/token:/run/secrets/reposed_token:ro" reposed
# Clients then call `auth` with the token first (repose-cli --token-file).
#
# Health: `docker inspect --format '{{.State.Health.Status}}' reposed`
# (HEALTHCHECK runs `repose-cli ping` on the Unix socket inside the
# container).  `docker stop` sends SIGTERM: reposed flushes replies and exits 0.

# ---- build stage: compilers and -dev packages ------------------------------
FROM debian:12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        build-essential cmake pkg-config libuv1-dev libcjson-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the library, the daemon and the cli need (no tests, no benches).
COPY CMakeLists.txt ./
COPY cmake ./cmake
COPY include ./include
COPY src ./src
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
          -DREPOSE_BUILD_TESTS=OFF -DREPOSE_BUILD_BENCH=OFF \
 && cmake --build build -j"$(nproc)" \
 && cmake --install build --prefix /opt/repose --strip

# ---- runtime stage: only the shared libraries the binaries use -------------
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libuv1 libcjson1 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/reposed \
 && chown 10001:10001 /run/reposed \
 && chmod 0770 /run/reposed
COPY --from=build /opt/repose/bin/reposed /opt/repose/bin/repose-cli /usr/local/bin/
COPY --from=build /opt/repose/lib/ /usr/local/lib/
RUN ldconfig

# A fixed, unprivileged uid (no account needed); the socket directory is a
# volume so that clients in other containers can reach the Unix socket.
USER 10001:10001
VOLUME ["/run/reposed"]
EXPOSE 7411
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["repose-cli", "--unix", "/run/reposed/reposed.sock", "--timeout", "2000", "ping"]
ENTRYPOINT ["reposed"]
# Default: Unix socket in the volume, TCP on all container interfaces with the
# token from /run/secrets/reposed_token (mount it as shown above, or pass
# other flags, e.g. `--unix /run/reposed/reposed.sock --tcp none`).
CMD ["--unix", "/run/reposed/reposed.sock", "--tcp", "0.0.0.0:7411", \
     "--token-file", "/run/secrets/reposed_token"]
