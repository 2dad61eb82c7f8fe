# syntax=docker/dockerfile:1
#
# outbox-relay container image: multi-stage build on Debian 12, runs as the
# unprivileged user `outbox` (uid 10001). docs/DEPLOY.md describes it.
#
#   docker build --build-arg REVISION=$(git rev-parse --short HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t outbox-relay .
#   docker run --rm -v "$PWD/config.yaml:/etc/outbox-relay/config.yaml:ro" \
#     -e ORDER_DB_PASSWORD=... -p 127.0.0.1:9464:9464 outbox-relay
#
# In a container the relay's `http.listen` must be 0.0.0.0:9464 for anything
# outside the container (Prometheus, kubelet probes) to reach it; the
# HEALTHCHECK below works with either address.
#
# CI builds what this file builds and checks its runtime package list
# (scripts/check-image): the build command is scripts/build-release, and the
# runtime stage's `apt-get install` line below is parsed by
# scripts/check-runtime-libs. Keep that line a plain package list.

# The version of the OCI label; tests/ops/check_image.sh checks it equals
# project(VERSION) in CMakeLists.txt. The binary takes its version from CMake.
ARG VERSION=0.1.0
# `.git` is not in the build context (.dockerignore): pass the revision, e.g.
# --build-arg REVISION=$(git rev-parse --short HEAD). Without it: "unknown".
ARG REVISION=""
# The org.opencontainers.image.created label: when the image was built, RFC
# 3339, e.g. --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ). A build
# argument, not computed here, so that a rebuild of the same sources with the
# same arguments gives the same image (and its cache).
ARG CREATED=""

############################## build ##############################
FROM debian:12 AS build
ARG REVISION

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libboost-dev libmysqlcppconn-dev librdkafka-dev libyaml-cpp-dev \
      prometheus-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev \
      libfmt-dev libsystemd-dev libmariadb-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# Tests and tools (mock broker, benchmarks) are not part of the image.
RUN OUTBOX_REVISION="${REVISION}" scripts/build-release \
 && strip build-release/outbox-relay

############################## runtime ##############################
FROM debian:12-slim
ARG VERSION
ARG REVISION
ARG CREATED

LABEL org.opencontainers.image.title="outbox-relay" \
      org.opencontainers.image.description="Relays events from services' MySQL/MariaDB outbox tables to Kafka, in order per aggregate, at least once" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/outbox-relay/outbox-relay" \
      org.opencontainers.image.documentation="https://github.com/outbox-relay/outbox-relay/blob/main/docs/DEPLOY.md" \
      org.opencontainers.image.licenses="Apache-2.0"

# Exactly the libraries the binary links (scripts/check-runtime-libs maps
# `ldd` to these packages), plus ca-certificates for `tls: mode: verify_ca`
# against a public CA. libsystemd0: sd_notify. libmariadb3: the binlog stream
# (src/binlog/ links MariaDB Connector/C directly).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmysqlcppconn7v5 librdkafka1 libyaml-cpp0.7 libprometheus-cpp-core1.0 \
      libspdlog1.10 libfmt9 libsystemd0 libmariadb3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 outbox \
 && useradd --system --uid 10001 --gid outbox --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin outbox \
 && install -d -m 0755 /etc/outbox-relay

COPY --from=build /src/build-release/outbox-relay /usr/local/bin/outbox-relay
COPY LICENSE /usr/share/doc/outbox-relay/LICENSE

# Fail the image build, not the first start, if a shared library the binary
# links is missing from the runtime packages above.
RUN if ldd /usr/local/bin/outbox-relay | grep -q 'not found'; then \
      echo 'missing runtime libraries:' >&2; \
      ldd /usr/local/bin/outbox-relay | grep 'not found' >&2; exit 1; \
    fi \
 && /usr/local/bin/outbox-relay version

USER 10001:10001
EXPOSE 9464
STOPSIGNAL SIGTERM

# `outbox-relay health` GETs /healthz on the config's http.listen (no curl in
# the image); exit 0 on 200. A config elsewhere: set OUTBOX_RELAY_CONFIG.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/outbox-relay", "health"]

ENTRYPOINT ["/usr/local/bin/outbox-relay"]
CMD ["run", "--config", "/etc/outbox-relay/config.yaml"]
