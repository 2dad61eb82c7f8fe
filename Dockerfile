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
# The build stage makes the Debian package (scripts/package: the release
# build, scripts/build-release, packaged with debhelper) and the runtime stage
# installs it with apt, so that the image and the package cannot disagree
# about the libraries the relay needs: they are the package's Depends,
# computed from the binary. CI builds the same package and checks it
# (scripts/check-image); the build stage's package list is checked by
# scripts/check-build-deps. Keep that list a plain package list.

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
      build-essential cmake ninja-build pkg-config debhelper \
      libboost-dev libmysqlcppconn-dev librdkafka-dev libyaml-cpp-dev \
      prometheus-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev \
      libfmt-dev libsystemd-dev libmariadb-dev libavro-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# Tests and tools (mock broker, benchmarks) are not part of the package. No
# lintian here (CI runs it on the same package); debhelper strips the binary.
RUN deb=$(OUTBOX_REVISION="${REVISION}" OUTBOX_NO_LINTIAN=1 scripts/package) \
 && cp "$deb" /outbox-relay.deb

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

# The package and what its Depends name (the libraries the binary links,
# ca-certificates, adduser for its postinst), from Debian's archive. Its
# systemd unit, conffiles and system user outbox-relay go unused here: the
# image runs the relay as its own user `outbox` and reads a mounted config.
COPY --from=build /outbox-relay.deb /tmp/outbox-relay.deb
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/outbox-relay.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/outbox-relay.deb \
 && groupadd --system --gid 10001 outbox \
 && useradd --system --uid 10001 --gid outbox --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin outbox

# debian:12-slim leaves out /usr/share/doc but its copyright files: the
# licence text beside the package's copyright.
COPY LICENSE /usr/share/doc/outbox-relay/LICENSE

# Fail the image build, not the first start, if a shared library the binary
# links is missing (the package's Depends are checked by CI:
# scripts/check-runtime-libs).
RUN if ldd /usr/bin/outbox-relay | grep -q 'not found'; then \
      echo 'missing runtime libraries:' >&2; \
      ldd /usr/bin/outbox-relay | grep 'not found' >&2; exit 1; \
    fi \
 && /usr/bin/outbox-relay version

USER 10001:10001
EXPOSE 9464
STOPSIGNAL SIGTERM

# `outbox-relay health` GETs /healthz on the config's http.listen (no curl in
# the image); exit 0 on 200. A config elsewhere: set OUTBOX_RELAY_CONFIG.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/bin/outbox-relay", "health"]

ENTRYPOINT ["/usr/bin/outbox-relay"]
CMD ["run", "--config", "/etc/outbox-relay/config.yaml"]
